"""Secret redaction: environment values by name, token formats, restoring commands."""

from __future__ import annotations

import pytest

from replaybook.packet.redact import Redactor, is_secret_name

KEY_BLOCK = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


@pytest.mark.parametrize("name,secret", [
    ("AWS_SECRET_ACCESS_KEY", True), ("GITHUB_TOKEN", True), ("DB_PASSWORD", True), ("my_api_key", True),
    ("NPM_AUTH", True), ("PWD", False), ("OLDPWD", False), ("HOME", False), ("PATH", False),
])
def test_secret_names(name: str, secret: bool):
    assert is_secret_name(name) is secret


def test_environment_values_are_replaced_by_name():
    r = Redactor.from_env({"MY_API_TOKEN": "s3cr3t-value-123", "SHORT_KEY": "abc", "HOME": "/home/me"})
    got = r.redact("token=s3cr3t-value-123 home=/home/me abc")
    assert got.text == "token=[REDACTED:env:MY_API_TOKEN] home=/home/me abc"
    assert got.kinds == ("env:MY_API_TOKEN",)


@pytest.mark.parametrize("text,expected,kind", [
    ("key AKIAIOSFODNN7EXAMPLE used", "key [REDACTED:aws_access_key_id] used", "aws_access_key_id"),
    ("ghp_" + "a" * 36, "[REDACTED:github_token]", "github_token"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[REDACTED:github_token]", "github_token"),
    ("xoxb-123456789012-abcdefABCDEF", "[REDACTED:slack_token]", "slack_token"),
    (f"before\n{KEY_BLOCK}\nafter", "before\n[REDACTED:private_key]\nafter", "private_key"),
    (f"jwt {JWT} end", "jwt [REDACTED:jwt] end", "jwt"),
    ("Authorization: Bearer abc.def-ghi_123", "Authorization: Bearer [REDACTED:bearer]", "bearer"),
    ("postgres://app:hunter2@db:5432/x", "postgres://app:[REDACTED:url_password]@db:5432/x", "url_password"),
    ('{"password": "correct-horse"}', '{"password": "[REDACTED:secret_assignment]"}', "secret_assignment"),
    ("deploy --api-key abcdef123456", "deploy --api-key [REDACTED:secret_flag]", "secret_flag"),
])
def test_token_formats(text: str, expected: str, kind: str):
    got = Redactor().redact(text)
    assert got.text == expected and kind in got.kinds


def test_ordinary_text_is_untouched():
    text = "3 passed in 0.12s; password reset works; token count 12; see https://example.com/a"
    assert Redactor().redact(text).text == text


def test_restore_puts_env_secrets_back_and_names_what_cannot_be():
    r = Redactor.from_env({"MY_API_TOKEN": "s3cr3t-value-123"})
    assert r.restore("curl -H '[REDACTED:env:MY_API_TOKEN]'") == ("curl -H 's3cr3t-value-123'", [])
    text, missing = Redactor().restore("x [REDACTED:env:MY_API_TOKEN] [REDACTED:github_token]")
    assert missing == ["env:MY_API_TOKEN", "github_token"] and "[REDACTED:env:MY_API_TOKEN]" in text


def test_a_value_found_once_is_removed_everywhere_it_appears():
    r = Redactor().learn("API_TOKEN=s3cretvalue42 sh -c 'echo $API_TOKEN'", "using s3cretvalue42\n")
    assert r.redact("API_TOKEN=s3cretvalue42 x; echo s3cretvalue42").text == \
        "API_TOKEN=[REDACTED:secret_assignment] x; echo [REDACTED:secret_assignment]"
    got = r.redact("using s3cretvalue42\nagain s3cretvalue42\n")
    assert got.text == "using [REDACTED:secret_assignment]\nagain [REDACTED:secret_assignment]\n"
    assert got.kinds == ("secret_assignment",)
    # a secret found in the output itself is removed where it appears without its label too
    r = Redactor().learn("password: opensesame99\nlogin with opensesame99\n")
    assert r.redact("password: opensesame99\nlogin with opensesame99\n").text == \
        "password: [REDACTED:secret_assignment]\nlogin with [REDACTED:secret_assignment]\n"
    # a short value is only replaced where its format is found, never as a bare word
    r = Redactor().learn("postgres://u:pw1@db/x")
    assert r.redact("postgres://u:pw1@db/x pw1").text == "postgres://u:[REDACTED:url_password]@db/x pw1"


@pytest.mark.parametrize("text,expected", [
    ("mysql -u root -ps3cr3tValue42 app", "mysql -u root -p[REDACTED:password_flag] app"),
    ("mysqldump -u root -p s3cr3tValue42 app", "mysqldump -u root -p [REDACTED:password_flag] app"),
    ("sshpass -p s3cr3tValue42 ssh host", "sshpass -p [REDACTED:password_flag] ssh host"),
    ("deploy --key s3cr3tValue42", "deploy --key [REDACTED:secret_flag]"),
    ("deploy --key=s3cr3tValue42", "deploy --key=[REDACTED:secret_flag]"),
    ("gh auth --pat s3cr3tValue42", "gh auth --pat [REDACTED:secret_flag]"),
    ("curl -H 'Authorization: token s3cr3tValue42' https://api",
     "curl -H 'Authorization: token [REDACTED:authorization]' https://api"),
    ("curl -H 'Authorization: s3cr3tValue42' https://api", "curl -H 'Authorization: [REDACTED:authorization]' https://api"),
    ("export DB_PASS=s3cr3tValue42; ./migrate", "export DB_PASS=[REDACTED:secret_assignment]; ./migrate"),
    ("GH_PAT=s3cr3tValue42 ./release", "GH_PAT=[REDACTED:secret_assignment] ./release"),
    ("SIGNING_KEY='s3cr3tValue42' make", "SIGNING_KEY='[REDACTED:secret_assignment]' make"),
])
def test_more_command_line_secret_forms(text: str, expected: str):
    r = Redactor().learn(text)
    assert r.redact(text).text == expected
    assert r.redact("echo s3cr3tValue42").text.startswith("echo [REDACTED:")  # removed everywhere


@pytest.mark.parametrize("text", [
    "deploy --token-file /home/me/.config/token.txt",
    "deploy --token-file=/home/me/.config/token.txt",
    "deploy --api-key-file secrets/key.txt",
    "TOKEN_FILE=/run/secrets/token KEY_PATH=/etc/ssl/server.key ./serve",
    "pytest -p no:cacheprovider -q",
    "mkdir -p /tmp/somewhere && PATH=/usr/local/bin:/usr/bin BYPASS_CACHE=always make",
    'gh release --pat "$GH_PAT"',
])
def test_paths_to_secrets_and_ordinary_flags_are_not_redacted(text: str):
    assert Redactor().learn(text).redact(text).text == text


@pytest.mark.parametrize("name,secret", [("DB_PASS", True), ("GH_PAT", True), ("BYPASS", False), ("PATH", False)])
def test_pass_and_pat_name_parts_are_secret_names(name: str, secret: bool):
    assert is_secret_name(name) is secret
