"""Secret redaction: environment values by name, token formats, restoring commands."""

from __future__ import annotations

import pytest

from replaybook.packet.redact import Redactor, is_secret_name, redact_command, secret_advice

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


# ----- passwords of known programs (SECRET_ARGS) ------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("sshpass -p hunter22 ssh deploy@web1", "sshpass -p [REDACTED:password_flag] ssh deploy@web1"),
    ("sshpass -phunter22 scp a.txt web1:", "sshpass -p[REDACTED:password_flag] scp a.txt web1:"),
    ("sshpass -p 'correct horse' ssh web1", "sshpass -p '[REDACTED:password_flag]' ssh web1"),
    ("mysql -u root -pTr0ub4dor app", "mysql -u root -p[REDACTED:password_flag] app"),
    ("mysql -u root --password=Tr0ub4dor app", "mysql -u root --password=[REDACTED:password_flag] app"),
    ("mariadb-dump -uroot -pTr0ub4dor shop > shop.sql",
     "mariadb-dump -uroot -p[REDACTED:password_flag] shop > shop.sql"),
    ("redis-cli -h cache -a Sup3rRedis ping", "redis-cli -h cache -a [REDACTED:password_flag] ping"),
    ("redis-cli --pass Sup3rRedis info", "redis-cli --pass [REDACTED:password_flag] info"),
    ("PGPASSWORD=pg-s3cret psql -h db -U app -c 'select 1'",
     "PGPASSWORD=[REDACTED:secret_assignment] psql -h db -U app -c 'select 1'"),
    ("env PGPASSWORD=pg-s3cret pg_dump -h db app", "env PGPASSWORD=[REDACTED:secret_assignment] pg_dump -h db app"),
    ("curl -u alice:wonderland42 https://api.example.com/v1",
     "curl -u alice:[REDACTED:password_flag] https://api.example.com/v1"),
    ("curl --user=alice:wonderland42 -s https://x", "curl --user=alice:[REDACTED:password_flag] -s https://x"),
    ("htpasswd -b /etc/nginx/.htpasswd alice wonderland42",
     "htpasswd -b /etc/nginx/.htpasswd alice [REDACTED:password_arg]"),
    ("htpasswd -nbB -C 10 alice wonderland42", "htpasswd -nbB -C 10 alice [REDACTED:password_arg]"),
    ("docker login -u bot -p dckr-s3cret registry.example.com",
     "docker login -u bot -p [REDACTED:password_flag] registry.example.com"),
    ("podman login --password=dckr-s3cret quay.io", "podman login --password=[REDACTED:password_flag] quay.io"),
    ("git clone https://ci-bot:glpat-x7Yq2Lm9Pz@gitlab.example.com/team/app.git",
     "git clone https://ci-bot:[REDACTED:url_password]@gitlab.example.com/team/app.git"),
    ("git clone https://x7Yq2Lm9Pz4Rt8Wk1Np@git.example.com/team/app.git",
     "git clone https://[REDACTED:url_token]@git.example.com/team/app.git"),
    ("MYSQL_PWD=Tr0ub4dor mysql -u root", "MYSQL_PWD=[REDACTED:secret_assignment] mysql -u root"),
    ("SSHPASS=hunter22 sshpass -e ssh web1", "SSHPASS=[REDACTED:secret_assignment] sshpass -e ssh web1"),
    ("REDISCLI_AUTH=Sup3rRedis redis-cli ping", "REDISCLI_AUTH=[REDACTED:secret_assignment] redis-cli ping"),
    ("7z x -pArch1ve! backup.7z", "7z x -p[REDACTED:password_flag] backup.7z"),
    ("zip -P zipp3rpw out.zip a.txt", "zip -P [REDACTED:password_flag] out.zip a.txt"),
    ("openssl pkcs12 -in k.p12 -passin pass:p12-s3cret -nodes",
     "openssl pkcs12 -in k.p12 -passin pass:[REDACTED:password_flag] -nodes"),
    ("keytool -list -keystore ks.jks -storepass st0repass",
     "keytool -list -keystore ks.jks -storepass [REDACTED:password_flag]"),
    ("ldapsearch -x -D cn=admin -w ldap-s3cret -b dc=x",
     "ldapsearch -x -D cn=admin -w [REDACTED:password_flag] -b dc=x"),
    ("mc alias set minio http://minio:9000 minioadmin m1n10-s3cret-key",
     "mc alias set minio http://minio:9000 minioadmin [REDACTED:password_arg]"),
    ("sudo -u app timeout 30 sshpass -p hunter22 ssh web1",
     "sudo -u app timeout 30 sshpass -p [REDACTED:password_flag] ssh web1"),
    ("cd db && mysql -pTr0ub4dor app < seed.sql", "cd db && mysql -p[REDACTED:password_flag] app < seed.sql"),
    ("bash -c 'sshpass -p hunter22 ssh web1 uptime'", "bash -c 'sshpass -p [REDACTED:password_flag] ssh web1 uptime'"),
])
def test_passwords_of_known_programs_are_redacted(text: str, expected: str):
    r = Redactor().learn(text)
    assert r.redact(text).text == expected
    assert Redactor().redact(text).text == expected  # found in the text itself, without learning first


@pytest.mark.parametrize("text,expected", [
    # shorter than 6 characters: replaced where the table finds it, as a whole word
    ("sshpass -p abc ssh web1", "sshpass -p [REDACTED:password_flag] ssh web1"),
    ("mysql -pabc app", "mysql -p[REDACTED:password_flag] app"),
    ("PGPASSWORD=pw1 psql", "PGPASSWORD=[REDACTED:secret_assignment] psql"),
    ("curl -u bob:pw1 https://x", "curl -u bob:[REDACTED:password_flag] https://x"),
    ("redis-cli -a pw1 ping", "redis-cli -a [REDACTED:password_flag] ping"),
])
def test_short_passwords_of_known_programs_are_redacted_in_place(text: str, expected: str):
    r = Redactor().learn(text)
    assert r.redact(text).text == expected
    # ... and where they stand as a word elsewhere, but never inside another word
    assert r.redact("login failed for abc / pw1; abcdef pw12").text.split() == [
        "login", "failed", "for",
        "[REDACTED:password_flag]" if "abc" in text else "abc", "/",
        ("[REDACTED:secret_assignment];" if "PGPASSWORD" in text else "[REDACTED:password_flag];")
        if "pw1" in text else "pw1;", "abcdef", "pw12"]


@pytest.mark.parametrize("text", [
    "mkdir -p build/out && cp -p a b",
    "ssh -p 2222 deploy@web1 uptime",
    "pytest -p no:cacheprovider -q",
    "docker run -p 8080:80 -e MODE=dev nginx",
    "docker push -q registry.example.com/app:1.2",
    "redis-cli -h cache -p 6380 ping",             # redis-cli's -p is the port
    "mysql -h db -P 3306 -u app -e 'select 1'",     # mysql's -P is the port
    "docker login -u bot --password-stdin registry.example.com",
    "sshpass -e ssh web1",                         # reads SSHPASS from the environment
    'sshpass -p "$SSH_PASSWORD" ssh web1',          # names the secret; the shell expands it
    "curl -u alice https://api.example.com",        # a user name only: curl asks
    "curl -sSL -o out.tgz https://example.com/x.tgz",
    "htpasswd -c /etc/nginx/.htpasswd alice",       # without -b the password is asked for
    "openssl pkcs12 -in k.p12 -passin env:P12_PASS -nodes",
    "openssl pkcs12 -in k.p12 -passin file:/run/secrets/p12 -nodes",
    "git clone https://github.com/team/app.git && git -C app log -p -1",
    "git clone ssh://git@github.com/team/app.git",
    "git clone https://alice@git.example.com/team/app.git",  # a user name, not a token
    "PGHOST=db PGUSER=app psql -c 'select 1'",
    "grep -p mysql notes.txt",
    "7z x -p backup.7z",                            # -p alone: 7z asks
    "az group list -p 5",
    "zip -r out.zip src",
])
def test_options_that_are_not_passwords_are_left_alone(text: str):
    assert Redactor().learn(text).redact(text).text == text


def test_a_password_found_by_the_table_is_removed_from_the_output_too():
    cmd = "sshpass -p hunter22 ssh web1 'echo ok'"
    out = "Warning: Permanently added 'web1'.\nlogin with hunter22 ok\n"
    r = Redactor().learn(cmd, out)
    assert r.redact(out).text == "Warning: Permanently added 'web1'.\nlogin with [REDACTED:password_flag] ok\n"
    # a `set -x` trace in an output is read as a command line
    trace = "+ mysql -u root -pTr0ub4dor app\nERROR 1045 (28000): Access denied\n"
    assert Redactor().learn(trace).redact(trace).text == (
        "+ mysql -u root -p[REDACTED:password_flag] app\nERROR 1045 (28000): Access denied\n")


def test_variables_programs_read_their_password_from_are_secret_names():
    assert is_secret_name("MYSQL_PWD") and is_secret_name("SSHPASS") and is_secret_name("PGPASSWORD")
    assert not is_secret_name("PGHOST") and not is_secret_name("PWD")
    r = Redactor.from_env({"MYSQL_PWD": "Tr0ub4dor", "SSHPASS": "hunter22"})
    assert r.redact("pw Tr0ub4dor and hunter22").text == "pw [REDACTED:env:MYSQL_PWD] and [REDACTED:env:SSHPASS]"


def test_the_word_after_mysql_p_is_redacted_though_mysql_would_read_it_as_the_database():
    """`mysql -p VALUE` asks for the password and reads VALUE as the database name, but it is where
    people put the password by mistake: a redacted database name costs less than a leaked one."""
    assert Redactor().redact("mysql -u root -p app").text == "mysql -u root -p [REDACTED:password_flag]"
    assert Redactor().redact("mysql -u root -p -e 'show databases'").text == "mysql -u root -p -e 'show databases'"


def test_command_secrets_lists_what_the_table_finds():
    from replaybook.packet.redact import command_secrets

    assert command_secrets("PGPASSWORD=pg-s3cret psql; curl -u a:b1 x; htpasswd -bn u hunter22") == [
        ("pg-s3cret", "secret_assignment"), ("b1", "password_flag"), ("hunter22", "password_arg")]
    assert command_secrets("mkdir -p x; ssh -p 22 h") == []
    assert command_secrets("sshpass -p 'unclosed") == [("'unclosed", "password_flag")]


@pytest.mark.parametrize("line, advice", [
    ("sshpass -p hunter22 ssh web1",
     'export SSHPASS (6 characters or more) and write `sshpass -p "$SSHPASS" ssh web1` in the step'),
    ("mysql -uroot -pTr0ub4dor app",
     'export MYSQL_PWD (6 characters or more) and write `mysql -uroot "-p$MYSQL_PWD" app` in the step'),
    ("cd x && redis-cli -a s3cretpw ping",
     'export REDISCLI_AUTH (6 characters or more) and write `redis-cli -a "$REDISCLI_AUTH" ping` in the step'),
    ("openssl enc -aes256 -passin pass:s3cr3tpw -in a",
     "export OPENSSL_PASSWORD (6 characters or more) and write `openssl enc -aes256 -passin env:OPENSSL_PASSWORD "
     "-in a` in the step"),
    ("git clone https://abcdefghijklmnopqrstuvwxyz@github.com/o/r",
     'export GIT_TOKEN (6 characters or more) and write `git clone "https://$GIT_TOKEN@github.com/o/r"` in the step'),
    ("htpasswd -b f alice wonderland42",
     'export HTPASSWD_PASSWORD (6 characters or more) and write `htpasswd -b f alice "$HTPASSWD_PASSWORD"` in the '
     'step'),
])
def test_advice_for_a_redacted_password_is_the_programs_own(line: str, advice: str):
    redacted = redact_command(line)[0]
    assert "[REDACTED:" in redacted and secret_advice(redacted) == [advice]
    assert is_secret_name(advice.split()[1])  # its value is redacted from what the step prints
    assert secret_advice(line) == [] and secret_advice("echo --token [REDACTED:secret_flag]") == []
