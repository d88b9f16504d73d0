"""Secret redaction: one place that decides what looks like a secret.

Used wherever replaybook shows or stores text that may hold credentials: object previews in the
workbook and Replay, recorded command output in replay packets.  Two kinds of evidence:

* **key names** — a value whose key (``KEY=value``, ``"key": "value"``, ``key: value``, a
  DataFrame column) looks secret: contains ``password``, ``passwd``, ``secret``, ``token``,
  ``api_key``/``apikey``, ``private_key``, ``credential``, ``session_key``, ``access_key``,
  ``auth`` (case-insensitive), e.g. ``AWS_SECRET_ACCESS_KEY``, ``GITHUB_TOKEN``;
* **known formats** — AWS access key ids (``AKIA…``/``ASIA…``), GitHub tokens (``ghp_``,
  ``gho_``, ``ghs_``, ``ghu_``, ``github_pat_``), Slack tokens (``xox?-``), OpenAI/Anthropic
  style keys (``sk-…``), JWTs, ``Bearer`` tokens, PEM private-key blocks, and passwords in URLs
  (``scheme://user:password@host``).

Redacted values become :data:`MASK`.  Redaction is deliberately over-eager: a preview that
hides a harmless value costs less than one that shows a key.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

__all__ = ["MASK", "is_secret_name", "redact_text", "redact_value", "redact_frame", "RULES_VERSION"]

#: What a redacted value is replaced with.
MASK = "«redacted»"
#: Bumped when a rule changes (recorded by replay packets so hashes stay comparable).
RULES_VERSION = 1

_SECRET_NAME = re.compile(
    r"(pass(word|wd)?|secret|token|api[_-]?key|apikey|private[_-]?key|credential|session[_-]?key|"
    r"access[_-]?key|auth|signature|\bsig\b|cookie)",
    re.IGNORECASE,
)

_FORMATS: list[tuple[str, re.Pattern[str]]] = [
    ("pem_private_key", re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.DOTALL)),
    ("aws_access_key_id", re.compile(r"\b(AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    ("github_token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})\b")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{8,}\b")),
    ("api_key", re.compile(r"\bsk-(ant-)?[A-Za-z0-9_-]{16,}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b")),
    ("bearer", re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]{8,}")),
    ("url_password", re.compile(r"(?<=://)([^\s:/@]+):([^\s@/]+)@")),
]

# KEY=value / KEY: value / "key": "value" assignments whose key looks secret.
_ASSIGN = re.compile(
    r"""(?P<key>["']?[A-Za-z_][A-Za-z0-9_.-]*["']?)(?P<sep>\s*[:=]\s*)(?P<val>"[^"\n]*"|'[^'\n]*'|[^\s,;}\]]+)"""
)


def is_secret_name(name: Any) -> bool:
    """True when a key or column name looks like it holds a secret (see module doc)."""
    return isinstance(name, str) and bool(_SECRET_NAME.search(name))


def _mask_assign(m: re.Match[str]) -> str:
    key = m.group("key")
    if not is_secret_name(key.strip("\"'")):
        return m.group(0)
    val = m.group("val")
    q = val[0] if val[:1] in "\"'" and len(val) >= 2 and val[-1] == val[0] else ""
    return f"{key}{m.group('sep')}{q}{MASK}{q}"


def redact_text(text: str) -> tuple[str, list[str]]:
    """Redact secrets in free text.

    Returns:
        ``(redacted text, names of the rules that fired)`` — rule names are the format names
        above plus ``secret_name`` for key-name matches.
    """
    fired: list[str] = []
    out = text
    for name, pat in _FORMATS:
        if name == "url_password":
            new = pat.sub(lambda m: f"{m.group(1)}:{MASK}@", out)
        elif name == "bearer":
            new = pat.sub(lambda m: f"{m.group(1)} {MASK}", out)
        else:
            new = pat.sub(MASK, out)
        if new != out:
            fired.append(name)
            out = new
    new = _ASSIGN.sub(_mask_assign, out)
    if new != out:
        fired.append("secret_name")
        out = new
    return out, fired


def redact_value(key: Any, value: Any) -> Any:
    """Redact one value: masked entirely when ``key`` looks secret, else text-redacted if a str."""
    if value is None:
        return None
    if is_secret_name(key):
        return MASK
    if isinstance(value, str):
        return redact_text(value)[0]
    if isinstance(value, dict):
        return {k: redact_value(k, v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_value(key, v) for v in value]
    return value


def redact_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` with secret-named columns masked and text cells redacted.

    Also masks a value column of key/value-shaped tables (a column named like ``key``/``name``/
    ``variable`` whose row names a secret masks that row's other text cells).
    """
    out = df.copy()
    for col in out.columns:
        if is_secret_name(str(col)):
            out[col] = out[col].map(lambda v: None if pd.isna(v) else MASK)
        elif out[col].dtype == object or pd.api.types.is_string_dtype(out[col].dtype):
            out[col] = out[col].map(lambda v: redact_text(v)[0] if isinstance(v, str) else v)
    key_cols = [c for c in out.columns if str(c).lower() in ("key", "name", "variable", "setting", "env")]
    for kc in key_cols:
        secret_rows = out[kc].map(is_secret_name).astype(bool)
        for col in out.columns:
            if col != kc and secret_rows.any():
                out.loc[secret_rows, col] = MASK
    return out
