"""Secret redaction at record time (never at publish time).

The recorder redacts the command line, the output it hashes and the output it stores, so a
secret never reaches ``session.jsonl`` or its side folder.  Three kinds of secret are replaced
by a placeholder that says what was removed, never the value:

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
  ``GH_PAT``), ``--token``/``--key``/``--pat`` flags.
  A name that says where a secret is kept (``--token-file PATH``, ``KEY_PATH=…``) is not one.
* **passwords of known programs** (:data:`SECRET_ARGS`, a declarative table like the runner
  registry of :mod:`.runners`) — the options, positional arguments and environment variables
  through which a program takes a password: ``sshpass -p PW``, ``mysql -pPW`` /
  ``--password=PW``, ``redis-cli -a PW``, ``PGPASSWORD=PW psql``, ``curl -u user:PW``,
  ``htpasswd -b FILE USER PW``, ``docker login -p PW``, a token as the user of a ``git`` URL …
  A command line is split into simple commands with the project's shell-line scanner and each
  into words with :mod:`shlex`; ``-p`` of any other program (``mkdir -p``, ``ssh -p 22``,
  ``pytest -p plugin``, ``docker run -p 80:80``) is left alone.
  A value that is only a shell variable reference in capitals (``--token "$MY_TOKEN"``) is
  not a secret: it names one.

A value a token format or the table finds anywhere — the command line, one argument, the
output (a ``set -x`` trace) — is then removed from all of them, every occurrence
(:meth:`Redactor.learn`); a password of a known program shorter than :data:`MIN_SECRET_LEN` only
where it stands as a whole word or right after its option.

Replay applies the same redaction (with the replayer's environment) before hashing, so a
redacted secret hashes the same on both sides.  A command whose *line* held an environment
secret can be restored at replay from the same variable (:meth:`Redactor.restore`); a token
found by format or a password found by the table cannot; for the latter, :func:`secret_advice`
says how to record the command again the program's way (its password from an environment variable).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Mapping, Sequence

__all__ = [
    "SECRET_NAME",
    "MIN_SECRET_LEN",
    "NEVER_SECRET",
    "TOKEN_RULES",
    "PLACEHOLDER",
    "Redacted",
    "Redactor",
    "is_secret_name",
    "SecretArgs",
    "SECRET_ARGS",
    "SECRET_ENV",
    "NEXT",
    "ATTACHED",
    "EQUALS",
    "command_secrets",
    "redact_command",
    "secret_advice",
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

# A name that says where a secret is, not the secret (``--token-file PATH``, ``KEY_PATH=…``,
# ``--password-stdin``).
_NOT_A_PATH_NAME = (r"(?i:(?<![-_.]file)(?<![-_.]path)(?<![-_.]dir)(?<![-_.]env)(?<![-_.]var)(?<![-_.]name)(?<![-_.]id)"
                    r"(?<![-_.]stdin))")

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
)


# ----- secrets in the arguments of known programs -----------------------------------------------

#: How an option takes its value: the next word (``-p PASS``), the same word (``-pPASS``), or
#: after ``=`` (``--password=PASS``).
NEXT, ATTACHED, EQUALS = "next", "attached", "equals"
_ANY = frozenset({NEXT, ATTACHED, EQUALS})
_SEP = frozenset({NEXT, EQUALS})


def _forms(*forms: str) -> frozenset[str]:
    return frozenset(forms)


@dataclass(frozen=True)
class SecretArgs:
    """Where one program takes a secret among its arguments (an entry of :data:`SECRET_ARGS`).

    Attributes:
        name: how the docs name it (``"mysql"``, ``"docker login"``).
        programs: the executable's names, as a word of the command ends (``mysql`` matches
            ``mysql`` and ``/usr/bin/mysql``).
        sub: the subcommands that take the secret, any one of them, each one or more words
            (``("login",)`` for ``docker login``); empty: the program itself.  The subcommand is
            the first word after the program's leading options.
        options: option → the ways it takes a password (:data:`NEXT`, :data:`ATTACHED`,
            :data:`EQUALS`): ``{"-p": {ATTACHED}}`` for ``7z -pPASS``.
        userinfo: option → separator, for options whose value is ``user<sep>password`` (``curl -u
            user:pass``, ``smbclient -U user%pass``): only the part after the separator is secret,
            and a value without it names only a user.
        prefix: a value is a literal secret only after this prefix (``openssl -passin pass:PW``;
            ``env:VAR`` and ``file:PATH`` name where a secret is kept).
        positional: indexes of the positional arguments (after the subcommand) that are secrets;
            negative ones count from the end (``htpasswd -b FILE USER PASS``: ``-1``).
        when: a short option letter that must be given for ``positional`` to hold a secret
            (``htpasswd`` takes the password from its arguments only with ``-b``).
        value_options: options that take the next word as their value, so that it is not
            counted as a positional argument (``htpasswd -C 12``).
        env: environment variables through which the program takes its secret (``PGPASSWORD``):
            ``NAME=value`` anywhere on a command line is redacted, and they count as secret names
            for the environment (:func:`is_secret_name`).
        url_tokens: the user part of an ``http(s)://`` URL argument with no password, 16
            characters or longer, is a token (``git clone https://<token>@host/…``).
    """

    name: str
    programs: tuple[str, ...]
    sub: tuple[str, ...] = ()
    options: Mapping[str, frozenset[str]] = field(default_factory=dict)
    userinfo: Mapping[str, str] = field(default_factory=dict)
    prefix: str = ""
    positional: tuple[int, ...] = ()
    when: str = ""
    value_options: frozenset[str] = frozenset()
    env: tuple[str, ...] = ()
    url_tokens: bool = False


_MYSQL = ("mysql", "mysqldump", "mysqladmin", "mysqlimport", "mysqlcheck", "mysqlshow", "mysqlpump", "mysqlsh",
          "mysqlslap", "mariadb", "mariadb-dump", "mariadb-admin", "mariadb-import", "mariadb-check",
          "mariadb-show", "mariadb-slap")
_POSTGRES = ("psql", "pg_dump", "pg_dumpall", "pg_restore", "pg_basebackup", "pg_isready", "pgbench", "createdb",
             "dropdb", "createuser", "dropuser", "vacuumdb", "reindexdb", "clusterdb")
_MONGO = ("mongosh", "mongo", "mongodump", "mongorestore", "mongoexport", "mongoimport", "mongostat", "mongotop",
          "mongofiles")
_LDAP = ("ldapsearch", "ldapadd", "ldapmodify", "ldapdelete", "ldapmodrdn", "ldapwhoami", "ldapcompare",
         "ldapexop", "ldappasswd")
_KEYTOOL_OPTS = ("-storepass", "-keypass", "-srcstorepass", "-deststorepass", "-srckeypass", "-destkeypass",
                 "-new")

#: Programs that take a secret among their arguments.  ``-p`` of a program not listed here
#: (``mkdir -p``, ``ssh -p 22``, ``pytest -p plugin``, ``docker run -p 80:80``) is left alone.
SECRET_ARGS: tuple[SecretArgs, ...] = (
    SecretArgs("sshpass", ("sshpass",), options={"-p": _ANY}, env=("SSHPASS",)),
    SecretArgs("mysql", _MYSQL, options={"-p": _ANY, "--password": _ANY}, env=("MYSQL_PWD",),
               value_options=frozenset({"-u", "--user", "-h", "--host", "-P", "--port", "-D", "--database", "-e",
                                        "--execute", "-S", "--socket"})),
    SecretArgs("mysqladmin password", ("mysqladmin", "mariadb-admin"), sub=("password",), positional=(0,),
               value_options=frozenset({"-u", "--user", "-h", "--host", "-P", "--port", "-S", "--socket"})),
    SecretArgs("redis-cli", ("redis-cli", "valkey-cli", "keydb-cli"), options={"-a": _SEP, "--pass": _SEP},
               env=("REDISCLI_AUTH",)),
    SecretArgs("psql", _POSTGRES, env=("PGPASSWORD",)),
    SecretArgs("mongosh", _MONGO, options={"-p": _SEP, "--password": _SEP}),
    SecretArgs("sqlcmd", ("sqlcmd", "bcp", "osql", "isql"), options={"-P": _ANY}),
    SecretArgs("ldapsearch", _LDAP, options={"-w": _ANY}),
    SecretArgs("ldappasswd", ("ldappasswd",), options={"-s": _ANY, "-a": _ANY}),
    SecretArgs("curl", ("curl",), userinfo={"-u": ":", "--user": ":", "-U": ":", "--proxy-user": ":"},
               options={"--oauth2-bearer": _SEP}),
    SecretArgs("smbclient", ("smbclient", "rpcclient", "smbcacls", "smbget"), userinfo={"-U": "%", "--user": "%"}),
    SecretArgs("htpasswd", ("htpasswd", "mosquitto_passwd"), positional=(-1,), when="b",
               value_options=frozenset({"-C", "-r"})),
    SecretArgs("docker login", ("docker", "podman", "nerdctl", "buildah", "skopeo", "oras", "crane"),
               sub=("login",), options={"-p": _ANY, "--password": _ANY},
               value_options=frozenset({"-u", "--username", "--config", "-H", "--host", "--context"})),
    SecretArgs("helm registry login", ("helm",), sub=("registry login",), options={"-p": _ANY, "--password": _ANY},
               value_options=frozenset({"-u", "--username"})),
    SecretArgs("az login", ("az",), sub=("login",), options={"-p": _ANY, "--password": _ANY},
               value_options=frozenset({"-u", "--username", "-t", "--tenant"})),
    SecretArgs("security unlock-keychain", ("security",), sub=("unlock-keychain", "create-keychain"),
               options={"-p": _ANY}),
    SecretArgs("ipmitool", ("ipmitool",), options={"-P": _ANY}),
    SecretArgs("zip", ("zip", "unzip", "zipcloak", "funzip"), options={"-P": _ANY, "--password": _ANY}),
    SecretArgs("7z", ("7z", "7za", "7zr", "7zz", "rar", "unrar"), options={"-p": frozenset({ATTACHED})}),
    SecretArgs("ssh-keygen", ("ssh-keygen",), options={"-N": _ANY, "-P": _ANY}),
    SecretArgs("openssl", ("openssl",), prefix="pass:",
               options={o: frozenset({NEXT}) for o in ("-passin", "-passout", "-pass", "-password")}),
    SecretArgs("openssl enc -k", ("openssl",), options={"-k": frozenset({NEXT})}),
    SecretArgs("openssl passwd", ("openssl",), sub=("passwd",), positional=(-1,),
               value_options=frozenset({"-salt", "-in"})),
    SecretArgs("keytool", ("keytool", "jarsigner"), options={o: frozenset({NEXT}) for o in _KEYTOOL_OPTS}),
    SecretArgs("mc alias set", ("mc", "mcli"), sub=("alias set", "config host add"), positional=(3,)),
    SecretArgs("rabbitmqctl add_user", ("rabbitmqctl",), sub=("add_user", "change_password"), positional=(1,)),
    SecretArgs("wpa_passphrase", ("wpa_passphrase",), positional=(1,)),
    SecretArgs("git", ("git",), url_tokens=True,
               value_options=frozenset({"-C", "-c", "--git-dir", "--work-tree", "-b", "--branch", "--depth",
                                        "-o", "--origin"})),
)

#: Environment variables that hold a secret because a program of :data:`SECRET_ARGS` reads one there.
SECRET_ENV = frozenset(n for e in SECRET_ARGS for n in e.env)

_BY_PROGRAM: dict[str, tuple[SecretArgs, ...]] = {}
for _e in SECRET_ARGS:
    for _p in _e.programs:
        _BY_PROGRAM[_p] = _BY_PROGRAM.get(_p, ()) + (_e,)
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)
_SHELL_VAR = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")
_URL_TOKEN = re.compile(r"https?://([^/@:\s]{16,})@", re.I)
_URL_PLACEHOLDER = re.compile(r"https?://(\[REDACTED:[^\]\s]+\])@", re.I)  # a token the recorder removed
# a line worth reading as a command: it names a program of the table or one of its variables
_TRIGGER = re.compile(r"(?<![\w.-])(?:" + "|".join(sorted(map(re.escape, {*_BY_PROGRAM, *SECRET_ENV}),
                                                       key=lambda n: (-len(n), n))) + r")(?![\w-])")
_MAX_NESTING = 3


@dataclass(frozen=True)
class _Found:
    value: str
    kind: str
    context: str  # what stands right before the value in its word ("-p", "--password=", "user:")
    entry: SecretArgs | None = field(default=None, compare=False)  # the program of the table
    words: tuple[str, ...] = field(default=(), compare=False)  # the simple command it was found in


def _basename(word: str) -> str:
    return word.rstrip("/").rsplit("/", 1)[-1]


def _placeholder_value(value: str) -> bool:
    """A value the recorder replaced by a placeholder that a replay cannot restore (a literal
    password of a known program), for :func:`secret_advice`."""
    return value.startswith("[REDACTED:") and not value.startswith("[REDACTED:env:")


def _plain_value(value: str) -> bool:
    """A value worth redacting: not empty, not a shell variable reference (``"$DB_PASS"``: the
    shell expands it from the environment, and it names the secret), not already a placeholder."""
    return bool(value) and not _SHELL_VAR.fullmatch(value) and not value.startswith("[REDACTED:")


def _after_sub(entry: SecretArgs, args: list[str]) -> list[str] | None:
    """The words after ``entry``'s subcommand (all of ``args`` when it has none); None when the
    command is not that subcommand."""
    if not entry.sub:
        return args
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        i += 2 if args[i] in entry.value_options else 1
    for sub in entry.sub:
        words = sub.split()
        if args[i:i + len(words)] == words:
            return args[i + len(words):]
    return None


def _option_value(entry: SecretArgs, word: str, nxt: str | None) -> tuple[str, str, str, bool] | None:
    """``(option, value, context, takes_next)`` when ``word`` is one of ``entry``'s secret options."""
    opts = [(o, f) for o, f in entry.options.items()] + [(o, _ANY) for o in entry.userinfo]
    for opt, forms in sorted(opts, key=lambda of: -len(of[0])):  # -passin before -p
        if word == opt:
            if NEXT in forms and nxt is not None and not nxt.startswith("-"):
                return opt, nxt, "", True
            return None
        if EQUALS in forms and word.startswith(opt + "=") and opt.startswith("--"):
            return opt, word[len(opt) + 1:], opt + "=", False
        if ATTACHED in forms and not opt.startswith("--") and word.startswith(opt) and len(word) > len(opt):
            return opt, word[len(opt):], opt, False
    return None


def _entry_secrets(entry: SecretArgs, args: list[str], accept=_plain_value) -> list[_Found]:
    """The secrets ``entry``'s program takes among ``args`` (the words after the program);
    ``accept`` says which values count (:func:`_plain_value`: a literal secret)."""
    rest = _after_sub(entry, args)
    if rest is None:
        return []
    found: list[_Found] = []
    positionals: list[str] = []
    letters: set[str] = set()
    i = 0
    while i < len(rest):
        w = rest[i]
        if w == "--":
            positionals.extend(rest[i + 1:])
            break
        hit = _option_value(entry, w, rest[i + 1] if i + 1 < len(rest) else None)
        if hit is not None:
            opt, value, context, takes_next = hit
            i += 2 if takes_next else 1
            sep = entry.userinfo.get(opt)
            if sep is not None:
                user, has_sep, value = value.partition(sep)
                if not has_sep:
                    continue  # `curl -u user`: a user name, the password is asked for
                context += user + sep
            if entry.prefix and opt in entry.options:
                if not value.startswith(entry.prefix):
                    continue  # `-passin env:VAR`, `file:PATH`: where a secret is kept
                value, context = value[len(entry.prefix):], context + entry.prefix
            if accept(value):
                found.append(_Found(value, "password_flag", context, entry))
            continue
        if w.startswith("-") and w != "-":
            if not w.startswith("--"):
                letters.update(w[1:])
            i += 2 if w in entry.value_options else 1
            continue
        positionals.append(w)
        i += 1
    if entry.positional and (not entry.when or entry.when in letters):
        for k in entry.positional:
            if -len(positionals) <= k < len(positionals) and accept(positionals[k]):
                found.append(_Found(positionals[k], "password_arg", "", entry))
    if entry.url_tokens:
        for w in positionals:
            m = (_URL_TOKEN if accept is _plain_value else _URL_PLACEHOLDER).match(w)
            if m and accept(m.group(1)):
                found.append(_Found(m.group(1), "url_token", w[:m.start(1)], entry))
    return found


def _words_secrets(words: list[str], depth: int, accept=_plain_value) -> list[_Found]:
    """The secrets in one simple command's words: variables of :data:`SECRET_ENV` assigned
    anywhere (``PGPASSWORD=… psql``, ``env SSHPASS=… sshpass -e``, ``export MYSQL_PWD=…``), and
    the arguments of every program of :data:`SECRET_ARGS` among the words (so ``sudo mysql -p…``
    and ``timeout 9 sshpass -p …`` are read too).  A word holding a command line of its own
    (``bash -c '…'``, ``ssh host 'mysql -p…'``) is read as one."""
    found: list[_Found] = []
    for i, w in enumerate(words):
        m = _ASSIGNMENT.fullmatch(w)
        if m and m.group(1) in SECRET_ENV and accept(m.group(2)):
            entry = next(e for e in SECRET_ARGS if m.group(1) in e.env)
            found.append(_Found(m.group(2), "secret_assignment", m.group(1) + "=", entry, tuple(words)))
        for entry in _BY_PROGRAM.get(_basename(w), ()):
            found.extend(_Found(f.value, f.kind, f.context, f.entry, tuple(words))
                         for f in _entry_secrets(entry, words[i + 1:], accept))
        if depth < _MAX_NESTING and i > 0 and re.search(r"\s", w) and _TRIGGER.search(w):
            found.extend(_command_secrets(w, depth + 1, accept))
    return found


def _command_secrets(line: str, depth: int = 0, accept=_plain_value) -> list[_Found]:
    """The secrets :data:`SECRET_ARGS` finds in a command line: split into simple commands with
    the shell-line scanner of :mod:`.runners`, each into words with :mod:`shlex`."""
    from .runners import _scan  # the project's shell-line scanner (see its docstring for why)

    try:
        parts = [text for kind, text in _scan(line) if kind == "word"]
    except ValueError:
        parts = [line]  # an unclosed quote: read the line as one command
    found: list[_Found] = []
    for text in parts:
        if not _TRIGGER.search(text):
            continue
        try:
            words = shlex.split(text)
        except ValueError:
            words = text.split()
        found.extend(_words_secrets(words, depth, accept))
    return found


def command_secrets(text: str) -> list[tuple[str, str]]:
    """The secrets :data:`SECRET_ARGS` finds in ``text``, read as command lines (one per line,
    as a command line or a ``set -x`` trace shows them): ``[(value, kind)]`` in the order found,
    ``kind`` one of ``password_flag``, ``password_arg``, ``secret_assignment`` or ``url_token``.

    Never raises: a line that cannot be split into words (an unclosed quote) is split at
    whitespace.
    """
    out: list[tuple[str, str]] = []
    for f in _text_secrets(text):
        if (f.value, f.kind) not in out:
            out.append((f.value, f.kind))
    return out


def redact_command(cmd: str, argv: Sequence[str] | None = None) -> tuple[str, list[str] | None]:
    """A recorded command as it may be shown: ``(cmd, argv)`` with every secret the token formats
    (:data:`TOKEN_RULES`) and the table of known programs (:data:`SECRET_ARGS`) find replaced.

    The recorder redacts before it writes, but a log written by an older recorder, by another
    tool or by hand may hold a password in plain text; every place that shows a recorded command
    (the replay's lines, JSON and JUnit report, the claims linter's messages, the packet summary
    and the review report built from it) shows it through this.  No environment is read, so the
    result depends on the text alone.  ``argv`` (the recorded arguments, or None) is redacted item
    by item with what the whole command line taught.  Never raises.
    """
    redactor = Redactor().learn(cmd, *(argv or ()))
    return redactor.redact(cmd).text, (None if argv is None else [redactor.redact(a).text for a in argv])


def _advice_variable(entry: SecretArgs, kind: str) -> str:
    """The environment variable to keep ``entry``'s secret in: the one the program reads its
    password from (``PGPASSWORD``, ``SSHPASS``), else ``<PROGRAM>_PASSWORD`` (``_TOKEN`` for a
    token in a URL) — a name :func:`is_secret_name` accepts, so its value is redacted."""
    if entry.env:
        return entry.env[0]
    return re.sub(r"[^A-Z0-9]+", "_", entry.programs[0].upper()) + ("_TOKEN" if kind == "url_token" else "_PASSWORD")


def _shell_word(word: str) -> str:
    """``word`` quoted for a shell line, a ``$NAME`` in it left to expand."""
    if "$" not in word:
        return shlex.quote(word)
    return '"' + re.sub(r'(["\\`])', r"\\\1", word) + '"'


def secret_advice(cmd: str) -> list[str]:
    """How to record a command again whose password of a known program (:data:`SECRET_ARGS`)
    the recorder redacted from ``cmd`` (the recorded, redacted command line): one text per
    password, in the program's own way — the command with the password taken from an
    environment variable (``curl -u "bob:$CURL_PASSWORD" https://…``, ``sshpass -p "$SSHPASS" ssh
    web1``, ``openssl … -passin env:OPENSSL_PASSWORD``), or, for a variable the program reads
    itself, ``export PGPASSWORD`` and the command without it.  Empty when the table finds no
    such password (a token found by its format).  Never raises."""
    out: list[str] = []
    for f in _command_secrets(cmd, accept=_placeholder_value) if _TRIGGER.search(cmd) else ():
        if f.entry is None or not f.words:
            continue
        var = _advice_variable(f.entry, f.kind)
        if f.kind == "secret_assignment":
            rest = [w for w in f.words if w != f.context + f.value]
            text = (f"export {var} (6 characters or more) and write `{' '.join(map(_shell_word, rest))}` in the "
                    f"step: {f.entry.name} reads it from the environment")
        else:
            placed = (f.entry.prefix and f.context.endswith(f.entry.prefix)
                      and f.context[:-len(f.entry.prefix)] + f"env:{var}")
            words = [(placed or w.replace(f.value, "$" + var)) if f.value in w and w.endswith(f.value)
                     or (f.kind == "url_token" and f.value in w) else w for w in f.words]
            text = f"export {var} (6 characters or more) and write `{' '.join(map(_shell_word, words))}` in the step"
        if text not in out:
            out.append(text)
    return out


def _text_secrets(text: str) -> list[_Found]:
    if not _TRIGGER.search(text):
        return []
    if "\n" not in text:
        return _command_secrets(text)
    found: list[_Found] = []
    for line in text.splitlines():
        if _TRIGGER.search(line):
            found.extend(_command_secrets(line))
    return found


def is_secret_name(name: str) -> bool:
    """True when an environment variable named ``name`` holds a secret by its name
    (:data:`SECRET_NAME`, or a variable a program of :data:`SECRET_ARGS` reads its password from,
    such as ``MYSQL_PWD`` or ``SSHPASS``)."""
    return name not in NEVER_SECRET and (bool(SECRET_NAME.search(name)) or name in SECRET_ENV)


@dataclass(frozen=True)
class Redacted:
    """A redacted text and what was removed from it.

    Attributes:
        text: the text with every secret replaced by ``[REDACTED:<what>]``.
        kinds: sorted unique ``<what>`` values: ``env:NAME``, a :data:`TOKEN_RULES` kind, or a kind
            :func:`command_secrets` gives.
    """

    text: str
    kinds: tuple[str, ...] = ()


@dataclass
class Redactor:
    """Redacts secrets from text, given the environment whose secret values to look for.

    Build one with :meth:`from_env`.  ``secrets`` maps variable name → value for the variables
    :func:`is_secret_name` accepts with a value of at least :data:`MIN_SECRET_LEN` characters.
    ``literals`` maps secret values found by their format (:data:`TOKEN_RULES`) or as the
    password of a known program (:data:`SECRET_ARGS`) to their kind; :meth:`learn` fills it so a
    value found once is removed wherever else it appears.  ``words`` holds the values of that
    second kind shorter than :data:`MIN_SECRET_LEN`, with what stood before them (``-p``,
    ``user:``): they are replaced only as a whole word or right after that.
    """

    secrets: dict[str, str] = field(default_factory=dict)
    literals: dict[str, str] = field(default_factory=dict, repr=False)
    words: dict[str, tuple[str, frozenset[str]]] = field(default_factory=dict, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> "Redactor":
        """A redactor for the secret-named variables of ``env`` (e.g. ``os.environ``)."""
        return cls({k: v for k, v in env.items()
                    if is_secret_name(k) and len(v.strip()) >= MIN_SECRET_LEN})

    def learn(self, *texts: str) -> "Redactor":
        """A redactor that also removes every secret value found in ``texts``: by the token
        formats (:data:`TOKEN_RULES`), and as the password of a known program
        (:data:`SECRET_ARGS`, :func:`command_secrets`: ``sshpass -p v``, ``curl -u user:v``).

        The recorder learns from the command line, each argument and the output before it
        redacts any of them, so a value recognised in one place (``API_TOKEN=v …``,
        ``--token v``, ``password: v``) is replaced in all of them, every occurrence.  Values
        shorter than :data:`MIN_SECRET_LEN` are only replaced where their format is found, or,
        for a known program's password, as a whole word or right after its option.
        """
        literals = dict(self.literals)
        words = dict(self.words)
        for text in texts:
            text = self._replace_known(text, set())
            for f in _text_secrets(text):  # first: a known program's password is named as such
                if len(f.value.strip()) >= MIN_SECRET_LEN:
                    literals.setdefault(f.value, f.kind)
                else:
                    kind, contexts = words.get(f.value, (f.kind, frozenset()))
                    words[f.value] = (kind, contexts | {f.context})
            for kind, pattern, _repl in TOKEN_RULES:
                for m in pattern.finditer(text):
                    value = m.group("s") if "s" in pattern.groupindex else m.group(0)
                    if len(value.strip()) >= MIN_SECRET_LEN:
                        literals.setdefault(value, kind)
        return Redactor(dict(self.secrets), literals, words)

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

    def _with_own(self, text: str) -> "Redactor":
        """This redactor plus the passwords of known programs in ``text`` itself."""
        if not _TRIGGER.search(text):
            return self
        literals, words = dict(self.literals), dict(self.words)
        for f in _text_secrets(self._replace_known(text, set())):
            if len(f.value.strip()) >= MIN_SECRET_LEN:
                literals.setdefault(f.value, f.kind)
            else:
                kind, contexts = words.get(f.value, (f.kind, frozenset()))
                words[f.value] = (kind, contexts | {f.context})
        return Redactor(self.secrets, literals, words)

    def _replace_words(self, text: str, kinds: set[str]) -> str:
        """Short passwords of known programs (:attr:`words`), where they stand as a whole word
        (between blanks, quotes, ``=``, ``:`` …) or right after what preceded them when found."""
        for value, (kind, contexts) in sorted(self.words.items(), key=lambda kv: (-len(kv[0]), kv[0])):
            if value not in text:
                continue
            before = "|".join([r"^", r"(?<=[\s'\"=:%,])"]
                              + [f"(?<={re.escape(c)})" for c in sorted(contexts) if c])
            pattern = re.compile(f"(?:{before}){re.escape(value)}(?=$|[\\s'\"@;|&)\\],])", re.M)
            text, n = pattern.subn(lambda _m: PLACEHOLDER.format(kind), text)
            if n:
                kinds.add(kind)
        return text

    def redact(self, text: str) -> Redacted:
        """Replace every secret in ``text``: environment values first, longest value first, then
        learned literals (:meth:`learn`) and the passwords of known programs in ``text`` itself
        (:data:`SECRET_ARGS`), then the token formats."""
        kinds: set[str] = set()
        own = self._with_own(text)
        text = own._replace_known(text, kinds)
        text = own._replace_words(text, kinds)
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
