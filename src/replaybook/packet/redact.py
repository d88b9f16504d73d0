"""Secret redaction at record time (never at publish time).

The recorder redacts the command line, the output it hashes and the output it stores, so a
secret never reaches ``session.jsonl`` or its side folder.  Two kinds of secret are replaced by
a placeholder that says what was removed, never the value:

* **environment values** — the value of every environment variable whose *name* looks secret
  (:data:`SECRET_NAME`: ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*PASSWD*``,
  ``*PASSPHRASE*``, ``*KEY*``, ``*CREDENTIAL*``, ``*AUTH*``, ``*COOKIE*``, a part ``PASS`` or
  ``PAT``; e.g.
  ``AWS_SECRET_ACCESS_KEY``, ``GITHUB_TOKEN``) becomes ``[REDACTED:env:NAME]``.  Values shorter
  than :data:`MIN_SECRET_LEN` characters are left alone (they would match everywhere);
  ``PWD`` and ``OLDPWD`` are never secrets.
* **token formats** (:data:`TOKEN_RULES`) — AWS access key ids (``AKIA…``/``ASIA…``), GitHub
  tokens (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``, ``github_pat_``), Slack tokens
  (``xoxb-`` …), PEM private key blocks, JWTs, ``Bearer``/``Basic`` credentials and
  ``Authorization:`` headers of any scheme, passwords in URLs (``https://user:pw@host``),
  ``name=value`` assignments and ``export NAME=value`` whose name says secret (``DB_PASS``,
  ``GH_PAT``), ``--token``/``--key``/``--pat`` flags and ``-p`` after ``mysql``/``sshpass``.
  A name that says where a secret is kept (``--token-file PATH``, ``KEY_PATH=…``) is not one.
  A value that is only a shell variable reference in capitals (``--token "$MY_TOKEN"``) is
  not a secret: it names one.

A value a token format finds anywhere — the command line, one argument, the output — is then
removed from all of them, every occurrence (:meth:`Redactor.learn`).

Replay applies the same redaction (with the replayer's environment) before hashing, so a
redacted secret hashes the same on both sides.  A command whose *line* held an environment
secret can be restored at replay from the same variable (:meth:`Redactor.restore`); a token
found by format cannot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

__all__ = [
    "SECRET_NAME",
    "MIN_SECRET_LEN",
    "NEVER_SECRET",
    "TOKEN_RULES",
    "PLACEHOLDER",
    "Redacted",
    "Redactor",
    "is_secret_name",
]

#: Environment variable names whose values are secrets (case-insensitive search).
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|KEY|CREDENTIAL|AUTH|COOKIE"
                         r"|(?<![A-Za-z])PASS(?![A-Za-z])|(?<![A-Za-z])PAT(?![A-Za-z])", re.I)

#: Environment values shorter than this are not redacted: they would match everywhere.
MIN_SECRET_LEN = 6

#: Names that match :data:`SECRET_NAME` or look like it but are never secrets.
NEVER_SECRET = frozenset({"PWD", "OLDPWD"})

#: ``[REDACTED:<what>]`` — what was removed (``env:NAME`` or a token kind), never the value.
PLACEHOLDER = "[REDACTED:{}]"

_ENV_PLACEHOLDER = re.compile(r"\[REDACTED:env:([A-Za-z_][A-Za-z0-9_]*)\]")
_ANY_PLACEHOLDER = re.compile(r"\[REDACTED:([^\]\s]+)\]")

_SECRET_WORD = (r"(?:token|secret|password|passwd|passphrase|api[_-]?key|access[_-]?key|"
                r"private[_-]?key|secret[_-]?key|client[_-]?secret)")

# A shell variable reference ("$MY_TOKEN", "${MY_TOKEN}") as the whole value is not a secret: it
# names one, and the replay restores nothing for it (the shell expands it from the environment).
_VAR_REF = r"(?!(?-i:\$\{?[A-Z_][A-Z0-9_]*\}?)(?:[\s\"',;]|$))"

# A name that says it holds where a secret is, not the secret (``--token-file PATH``, ``KEY_PATH=…``).
_NOT_A_PATH_NAME = r"(?i:(?<![-_.]file)(?<![-_.]path)(?<![-_.]dir)(?<![-_.]env)(?<![-_.]var)(?<![-_.]name)(?<![-_.]id))"

# An environment variable name in capitals that says secret: a part PASS, PASSWORD, PASSWD, SECRET,
# TOKEN, KEY or PAT (``DB_PASS``, ``GH_PAT``, ``SIGNING_KEY``; not ``PATH`` or ``BYPASS``).
_SECRET_VAR = (r"(?-i:[A-Z0-9_]*(?:(?<![A-Z])PASS(?:WORD|WD)?(?![A-Z])|SECRET|TOKEN|KEY|(?<![A-Z])PAT(?![A-Z]))"
               r"[A-Z0-9_]*)")

#: ``(kind, pattern, replacement)`` in the order they are applied; ``{P}`` in a replacement is
#: the placeholder for ``kind``.  The group named ``s`` (the whole match when there is none) is
#: the secret value itself, which :meth:`Redactor.learn` then removes everywhere else.
TOKEN_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("private_key", re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?"
        r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S), "{P}"),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), "{P}"),
    ("aws_access_key_id", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b"), "{P}"),
    ("github_token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), "{P}"),
    ("github_token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), "{P}"),
    ("slack_token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}"), "{P}"),
    ("bearer", re.compile(r"\b(Bearer)\s+(?P<s>[A-Za-z0-9._~+/-]{8,}=*)", re.I), r"\1 {P}"),
    ("basic_auth", re.compile(r"\b(Authorization:\s*Basic)\s+(?P<s>[A-Za-z0-9+/]{8,}=*)", re.I), r"\1 {P}"),
    ("url_password", re.compile(r"\b([a-z][a-z0-9+.-]*://[^/\s:@\[\]]+):(?P<s>[^@\s/\[\]]+)@", re.I), r"\1:{P}@"),
    ("authorization", re.compile(
        r"\b(Authorization:\s*[A-Za-z][A-Za-z0-9_-]*\s+)(?!\[REDACTED:)" + _VAR_REF + r"(?P<s>[^\s\"']{6,})", re.I),
     r"\1{P}"),
    ("authorization", re.compile(
        r"\b(Authorization:\s*)(?!\[REDACTED:)" + _VAR_REF + r"(?P<s>[^\s\"']{6,})(?=\s*(?:[\"']|$))", re.I | re.M),
     r"\1{P}"),
    ("secret_assignment", re.compile(
        r"(\b[A-Za-z0-9_.-]*" + _SECRET_WORD + r"[A-Za-z0-9_.-]*" + _NOT_A_PATH_NAME + r"[\"']?\s*[:=]\s*)([\"']?)"
        r"(?!\[REDACTED:)" + _VAR_REF + r"(?P<s>[^\s\"',;]{6,})", re.I), r"\1\2{P}"),
    ("secret_assignment", re.compile(
        r"(\b(?:export\s+)?" + _SECRET_VAR + _NOT_A_PATH_NAME + r"=)([\"']?)(?!\[REDACTED:)" + _VAR_REF +
        r"(?P<s>[^\s\"';]{6,})"), r"\1\2{P}"),
    ("secret_flag", re.compile(
        r"(--[A-Za-z0-9_.-]*" + _SECRET_WORD + r"[A-Za-z0-9_.-]*" + _NOT_A_PATH_NAME + r"\s+)([\"']?)(?!\[REDACTED:)"
        + _VAR_REF + r"(?P<s>[^\s\"',;-][^\s\"',;]{5,})", re.I), r"\1\2{P}"),
    ("secret_flag", re.compile(
        r"(--(?:[A-Za-z0-9_.-]*[-_])?(?:key|pat|pass)(?:\s+|=))([\"']?)(?!\[REDACTED:)"
        + _VAR_REF + r"(?P<s>[^\s\"',;-][^\s\"',;]{5,})", re.I), r"\1\2{P}"),
    ("password_flag", re.compile(
        r"(\b(?:mysql[a-z]*|mariadb[a-z-]*|sshpass)\b[^\n;|&]*?\s-p\s*)([\"']?)(?!\[REDACTED:)" + _VAR_REF +
        r"(?P<s>[^\s\"';|&]{6,})"), r"\1\2{P}"),
)


def is_secret_name(name: str) -> bool:
    """True when an environment variable named ``name`` holds a secret by its name."""
    return name not in NEVER_SECRET and bool(SECRET_NAME.search(name))


@dataclass(frozen=True)
class Redacted:
    """A redacted text and what was removed from it.

    Attributes:
        text: the text with every secret replaced by ``[REDACTED:<what>]``.
        kinds: sorted unique ``<what>`` values: ``env:NAME`` or a :data:`TOKEN_RULES` kind.
    """

    text: str
    kinds: tuple[str, ...] = ()


@dataclass
class Redactor:
    """Redacts secrets from text, given the environment whose secret values to look for.

    Build one with :meth:`from_env`.  ``secrets`` maps variable name → value for the variables
    :func:`is_secret_name` accepts with a value of at least :data:`MIN_SECRET_LEN` characters.
    ``literals`` maps secret values found by their format (:data:`TOKEN_RULES`) to their kind;
    :meth:`learn` fills it so a value found once is removed wherever else it appears.
    """

    secrets: dict[str, str] = field(default_factory=dict)
    literals: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "Redactor":
        """A redactor for the secret-named variables of ``env`` (e.g. ``os.environ``)."""
        return cls({k: v for k, v in env.items()
                    if is_secret_name(k) and len(v.strip()) >= MIN_SECRET_LEN})

    def learn(self, *texts: str) -> "Redactor":
        """A redactor that also removes every secret value :data:`TOKEN_RULES` find in ``texts``.

        The recorder learns from the command line, each argument and the output before it
        redacts any of them, so a value recognised in one place (``API_TOKEN=v …``,
        ``--token v``, ``password: v``) is replaced in all of them, every occurrence.  Values
        shorter than :data:`MIN_SECRET_LEN` are only replaced where their format is found.
        """
        literals = dict(self.literals)
        for text in texts:
            text = self._replace_known(text, set())
            for kind, pattern, _repl in TOKEN_RULES:
                for m in pattern.finditer(text):
                    value = m.group("s") if "s" in pattern.groupindex else m.group(0)
                    if len(value.strip()) >= MIN_SECRET_LEN:
                        literals.setdefault(value, kind)
        return Redactor(dict(self.secrets), literals)

    def _replace_known(self, text: str, kinds: set[str]) -> str:
        """Environment values (longest first), then learned literals (longest first)."""
        for name, value in sorted(self.secrets.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            if value in text:
                text = text.replace(value, PLACEHOLDER.format("env:" + name))
                kinds.add("env:" + name)
        for value, kind in sorted(self.literals.items(), key=lambda kv: (-len(kv[0]), kv[0])):
            if value in text:
                text = text.replace(value, PLACEHOLDER.format(kind))
                kinds.add(kind)
        return text

    def redact(self, text: str) -> Redacted:
        """Replace every secret in ``text``: environment values first, longest value first, then
        learned literals (:meth:`learn`), then the token formats."""
        kinds: set[str] = set()
        text = self._replace_known(text, kinds)
        for kind, pattern, repl in TOKEN_RULES:
            new, n = pattern.subn(repl.replace("{P}", PLACEHOLDER.format(kind)), text)
            if n:
                text = new
                kinds.add(kind)
        return Redacted(text, tuple(sorted(kinds)))

    def restore(self, text: str) -> tuple[str, list[str]]:
        """Put environment secrets back into a redacted command line for a replay.

        Returns ``(text, missing)``: ``missing`` lists the placeholders that could not be
        restored — ``env:NAME`` when ``NAME`` is not set (or not secret-named) in this
        environment, or a token kind (those are never restorable).  Empty when all were.
        """
        missing: list[str] = []

        def env_sub(m: re.Match[str]) -> str:
            name = m.group(1)
            if name in self.secrets:
                return self.secrets[name]
            missing.append("env:" + name)
            return m.group(0)

        text = _ENV_PLACEHOLDER.sub(env_sub, text)
        for m in _ANY_PLACEHOLDER.finditer(text):
            if not m.group(1).startswith("env:"):
                missing.append(m.group(1))
        return text, sorted(set(missing))
