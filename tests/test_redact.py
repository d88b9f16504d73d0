import pandas as pd

from replaybook.redact import MASK, is_secret_name, redact_frame, redact_text


def test_key_names_and_formats():
    assert is_secret_name("AWS_SECRET_ACCESS_KEY") and is_secret_name("githubToken") and not is_secret_name("path")
    text = ("user=bob\nPASSWORD=hunter2\n\"api_key\": \"abc123\"\nurl=postgres://app:pw123@db:5432/x\n"
            "Authorization: Bearer abcdefghijklmnop\nghp_abcdefghijklmnopqrstuvwxyz0123\n"
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n")
    out, fired = redact_text(text)
    for secret in ("hunter2", "abc123", "pw123", "abcdefghijklmnop", "ghp_abc", "MIIE"):
        assert secret not in out
    assert "user=bob" in out and f'"api_key": "{MASK}"' in out
    assert set(fired) >= {"secret_name", "url_password", "bearer", "github_token", "pem_private_key"}


def test_key_value_tables_mask_the_value_of_secret_rows():
    df = pd.DataFrame({"key": ["HOST", "DB_PASSWORD"], "value": ["db.local", "hunter2"]})
    out = redact_frame(df)
    assert list(out["value"]) == ["db.local", MASK]
    assert list(df["value"]) == ["db.local", "hunter2"]  # the input is not modified
