"""Output normalization: documented, versioned rules that remove run-to-run noise.

A command's merged output is decoded (:func:`decode_output`: UTF-8, each byte that is not
UTF-8 kept as itself) and normalized before it is hashed (``out_sha``) and stored, on record
and on replay alike.  The rules remove what moves on every run — addresses, timestamps,
temporary paths, durations, random local ports, process ids — and leave the structural text.
Every rule has a name; :meth:`RuleSet.normalize` says which rules changed the text.

Built-in rules, version :data:`BUILTIN_VERSION`, applied in this order (:data:`BUILTIN_RULES`):

================  =====================================================  ====================
name              matches                                                becomes
================  =====================================================  ====================
ansi              ANSI escape sequences (colours, cursor moves)          (removed)
carriage_return   ``\\r\\n`` line ends; text before a bare ``\\r``       ``\\n``; last non-empty
                  followed by more text (a redraw)                       redraw
root              the repository root's absolute path (recorded tree     ``<ROOT>``
                  or replay worktree), and its resolved form
tmp_path          ``/tmp/…``, ``/var/tmp/…``, ``/var/folders/…``,        ``<TMP>``; from a
                  ``/private/var/folders/…``, ``$TMPDIR/…`` where a path     ``..`` step on, kept
                  starts (not ``data/tmp/…``, ``https://host/tmp/…``)    if the path leaves
                                                                         them (``<TMP>/../etc/x``)
iso_timestamp     ``2024-05-01T12:34:56.789Z``, ``2024-05-01 12:34:56``  ``<TS>``
                  (optional fraction and offset)
hex_address       ``0x`` and 6 or more hex digits (``0x7f3a2c1b4d90``)   ``0xADDR``
pytest_duration   ``in 0.12s``, ``in 75.01s (0:01:15)``                  ``in <DUR>``
duration          ``12ms``, ``0.5s``, ``3 seconds``, ``150us``, ``2 min``  ``<DUR>``
local_port        ``127.0.0.1:54321``, ``localhost:8000``,               ``host:<PORT>``
                  ``0.0.0.0:5000``, ``[::1]:8080``
pid               ``pid 1234``, ``PID=1234``, ``pid: 1234``              ``pid <PID>``
(project rules)   ``[tool.replaybook.normalize]`` in pyproject.toml      as configured
whitespace        trailing whitespace; blank lines                       (removed)
================  =====================================================  ====================

Project rules come from the repository root's ``pyproject.toml``::

    [tool.replaybook.normalize]
    rules = [
      { name = "request_id", pattern = "req-[0-9a-f]{8}", replace = "req-<ID>" },
    ]

``pattern`` is a Python regular expression (inline flags such as ``(?i)`` allowed) and
``replace`` a :func:`re.sub` replacement.  They run after the built-in rules, before
``whitespace``.  The version recorded with each step is ``BUILTIN_VERSION`` alone, or
``BUILTIN_VERSION + "+project." + <first 12 hex of the SHA-256 of the rules>`` when project
rules exist, so a replay knows whether it normalizes as the recording did.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


from .._schema import first_error_at
from .errors import RulesError

__all__ = [
    "BUILTIN_VERSION",
    "BUILTIN_RULES",
    "PROJECT_RULES_SCHEMA",
    "Rule",
    "RuleSet",
    "Normalized",
    "load_rules",
    "normalize",
    "decode_output",
    "out_sha",
]

#: Version of the built-in rules.  Bump it whenever a built-in rule's behaviour changes (a log
#: recorded with another version is UNRUNNABLE: its hashes were made by other rules).
#: 2: ``carriage_return`` keeps the text before a trailing bare ``\\r`` (1 dropped the line).
#: 3: ``tmp_path`` rewrites only a path that starts with the temporary folder (2 rewrote any
#: ``/tmp/`` in the text, inside relative paths and URLs too).
#: 4: bytes of the output that are not UTF-8 are kept (:func:`decode_output`) and hashed as
#: themselves; 3 replaced each with U+FFFD, so outputs differing only in them hashed the same.
BUILTIN_VERSION = "2"


@dataclass(frozen=True)
class Normalized:
    """A normalized output.

    Attributes:
        text: the normalized text (``\\n`` line ends, no trailing newline).
        fired: names of the rules that changed the text, in rule order.
        swallowed: names of the project rules that replaced all or most of a non-empty text
            (more than :data:`ALTERED_LIMIT` of its non-blank characters were inside their
            matches, one rule alone or the project rules together): what is left says almost
            nothing, and a comparison of it proves almost nothing (:meth:`Rule.coverage`).
    """

    text: str
    fired: tuple[str, ...]
    swallowed: tuple[str, ...] = ()

    @property
    def sha256(self) -> str:
        """SHA-256 hex digest of ``text`` encoded as UTF-8 (the step's ``out_sha``)."""
        return out_sha(self.text)


@dataclass(frozen=True)
class Rule:
    """One normalization rule.

    Attributes:
        name: unique rule name (reported when the rule fires).
        doc: what it matches, for the docs table.
        pattern: a regular expression, or ``None`` for a rule implemented by ``func``.
        replace: the :func:`re.sub` replacement for ``pattern``.
        source: ``builtin`` or ``project``.
        func: ``(text, root_paths) -> (new_text, changed)`` for rules that are not one regex.
    """

    name: str
    doc: str
    pattern: str | None = None
    replace: str = ""
    source: str = "builtin"
    func: Callable[[str, tuple[str, ...]], tuple[str, bool]] | None = field(default=None, compare=False)

    def apply(self, text: str, roots: tuple[str, ...] = ()) -> tuple[str, bool]:
        """Apply the rule; returns ``(text, changed)``."""
        if self.func is not None:
            return self.func(text, roots)
        new, n = _compiled(self.pattern)[0].subn(self.replace, text)  # type: ignore[arg-type]
        return (new, True) if n and new != text else (text, False)


    def coverage(self, text: str) -> float:
        """The share (0 to 1) of the non-blank characters of ``text`` that this regex rule's
        matches cover: what applying it removes or replaces.  0 for an empty text or a rule
        that is not one regex."""
        if self.pattern is None:
            return 0.0
        total = sum(1 for ch in text if not ch.isspace())
        if not total:
            return 0.0
        covered = sum(1 for m in _compiled(self.pattern)[0].finditer(text)
                      for ch in m.group(0) if not ch.isspace())
        return min(1.0, covered / total)

    def covers_all(self, text: str) -> bool:
        """True when this regex rule's matches cover every non-blank character of ``text``
        (non-empty): applying it replaces the whole output, whatever the output was."""
        return self.coverage(text) >= 1.0

    def matches_anything(self) -> bool:
        """True when the rule replaces the whole of ordinary outputs (probed with a few)."""
        return all(self.covers_all(probe) for probe in _PROBES)


#: A project rule (or the project rules together) that removes or replaces more than this share of
#: an output's non-blank characters leaves too little to compare: the step is not compared.
ALTERED_LIMIT = 0.8

#: Outputs a rule that "matches anything" swallows whole (see :meth:`Rule.matches_anything`).
_PROBES = ("1 passed in 0.01s", "FAILED tests/test_x.py::test_y - assert 41 == 42\nexit 1",
           "Traceback (most recent call last):\n  File \"x.py\", line 3\nValueError: bad")

_CACHE: dict[str, tuple[re.Pattern[str]]] = {}


def _compiled(pattern: str) -> tuple[re.Pattern[str]]:
    c = _CACHE.get(pattern)
    if c is None:
        c = _CACHE[pattern] = (re.compile(pattern),)
    return c


_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def _ansi(text: str, roots: tuple[str, ...]) -> tuple[str, bool]:
    new = _ANSI.sub("", text)
    return new, new != text


def _last_redraw(line: str) -> str:
    """What a line holding bare ``\\r`` shows last: its last non-empty ``\\r``-separated segment.
    A ``\\r`` with nothing after it (``FAILED 3 tests\\r``, ``ok\\r\\r``) is no redraw, so the
    text before it stays; a segment of spaces is one (a line cleared by overwriting)."""
    return next((seg for seg in reversed(line.split("\r")) if seg), "")


def _carriage_return(text: str, roots: tuple[str, ...]) -> tuple[str, bool]:
    if "\r" not in text:
        return text, False
    text = text.replace("\r\n", "\n")
    return "\n".join(_last_redraw(line) if "\r" in line else line for line in text.split("\n")), True


def _root(text: str, roots: tuple[str, ...]) -> tuple[str, bool]:
    changed = False
    for r in sorted({r.rstrip("/") for r in roots if r and r.rstrip("/")}, key=len, reverse=True):
        if r in text:
            text = text.replace(r, "<ROOT>")
            changed = True
    return text, changed


def _tmp(text: str, roots: tuple[str, ...]) -> tuple[str, bool]:
    prefixes = ["/tmp/", "/var/tmp/", "/private/var/folders/", "/var/folders/", "/private/tmp/"]
    tmpdir = os.environ.get("TMPDIR", "").rstrip("/")
    if tmpdir and len(tmpdir) > 1:
        prefixes.append(tmpdir + "/")
    alt = "|".join(re.escape(p) for p in sorted(set(prefixes), key=len, reverse=True))
    new = re.sub(_TMP_START + r"(?:" + alt + r")[^\s:'\"`,;()\[\]<>]*", lambda m: _tmp_part(m, prefixes), text)
    return new, new != text


def _tmp_part(m: re.Match[str], prefixes: list[str]) -> str:
    """``<TMP>`` for a temporary path, keeping from its first ``..`` step on when its ``..`` steps
    lead out of the temporary folders (``prefixes``): ``/tmp/../etc/passwd`` leaves them, and where
    it went is compared (``<TMP>/../etc/passwd``).  One that stays in them (``/tmp/pytest-7/w/../x``
    is ``/tmp/pytest-7/x``) is a temporary path like any other: ``<TMP>``."""
    path = m.group(0)
    up = _UP_STEP.search(path)
    if up is None or any((posixpath.normpath(path) + "/").startswith(p) for p in prefixes):
        return "<TMP>"
    return "<TMP>" + path[up.start():]


_UP_STEP = re.compile(r"/\.\.(?=/|$)")


#: A temporary path is rewritten only where a path starts: at the start of the text or a line, after
#: whitespace, a quote, ``=``, ``:`` (``PATH=/a:/tmp/x``), an opening bracket, ``,``, ``;``, ``|``,
#: or in a ``file://`` URL.  ``data/tmp/x.db`` (relative), ``<ROOT>/tmp/x`` (a folder of the
#: repository) and ``https://host/tmp/x`` (a URL path) are not temporary paths, and what follows
#: their ``/tmp/`` is compared.
_TMP_START = r"(?:(?<![^\s'\"`=:(\[{<,;|])|(?<=file://))"


def _whitespace(text: str, roots: tuple[str, ...]) -> tuple[str, bool]:
    new = "\n".join(line.rstrip() for line in text.split("\n") if line.strip())
    return new, new != text


#: The built-in rules in order; project rules are inserted before ``whitespace``.
BUILTIN_RULES: tuple[Rule, ...] = (
    Rule("ansi", "ANSI escape sequences (colours, cursor moves) → removed", func=_ansi),
    Rule("carriage_return", "\\r\\n → \\n; a line's text before its last redraw (a bare \\r followed by "
         "text) → removed",
         func=_carriage_return),
    Rule("root", "the repository root's absolute path (recorded tree or replay worktree) → <ROOT>",
         func=_root),
    Rule("tmp_path", "/tmp/…, /var/tmp/…, /var/folders/…, /private/var/folders/…, $TMPDIR/… where a path starts "
         "(not data/tmp/… or https://host/tmp/…) → <TMP>, keeping the first .. step and what follows it of a "
         "path that leads out of the temporary folders",
         func=_tmp),
    Rule("iso_timestamp", "ISO 8601 date-times with optional fraction and offset → <TS>",
         r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?(?![\d:])",
         "<TS>"),
    Rule("hex_address", "0x followed by 6 or more hex digits → 0xADDR",
         r"\b0x[0-9a-fA-F]{6,}\b", "0xADDR"),
    Rule("pytest_duration", "pytest/unittest 'in 0.12s' and 'in 75.01s (0:01:15)' → in <DUR>",
         r"\bin \d+(?:\.\d+)?s\b(?: \(\d+:\d{2}:\d{2}\))?", "in <DUR>"),
    Rule("duration", "12ms, 0.5s, 3 seconds, 150us, 2 min → <DUR>",
         r"(?<![\w.])\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s|secs?|seconds?|mins?|minutes?)\b", "<DUR>"),
    Rule("local_port", "127.0.0.1:54321, localhost:8000, 0.0.0.0:5000, [::1]:8080 → host:<PORT>",
         r"(\b127\.0\.0\.1|\blocalhost|\b0\.0\.0\.0|\[::1?\]):\d{1,5}\b", r"\1:<PORT>"),
    Rule("pid", "pid 1234, PID=1234, pid: 1234 → pid <PID> (separator kept)",
         r"(?i)\b(pid)(\s*[=:]?\s*)\d+\b", r"\1\2<PID>"),
    Rule("whitespace", "trailing whitespace and blank lines → removed", func=_whitespace),
)

_BUILTIN_NAMES = frozenset(r.name for r in BUILTIN_RULES)

#: JSON Schema of ``[tool.replaybook.normalize]``.
PROJECT_RULES_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "rules": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "pattern", "replace"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$"},
                    "pattern": {"type": "string", "minLength": 1},
                    "replace": {"type": "string"},
                },
            },
        },
    },
    "additionalProperties": False,
}


@dataclass(frozen=True)
class RuleSet:
    """The rules in force: the built-ins plus a project's own.

    Attributes:
        project_rules: rules from ``[tool.replaybook.normalize]`` (``source == "project"``).
        origin: the pyproject.toml they came from, if any.
    """

    project_rules: tuple[Rule, ...] = ()
    origin: str | None = None

    @property
    def rules(self) -> tuple[Rule, ...]:
        """Every rule in application order (project rules just before ``whitespace``)."""
        return BUILTIN_RULES[:-1] + self.project_rules + BUILTIN_RULES[-1:]

    @property
    def version(self) -> str:
        """:data:`BUILTIN_VERSION`, or ``BUILTIN_VERSION + "+project.<sha12>"`` when project rules
        exist (see module doc)."""
        if not self.project_rules:
            return BUILTIN_VERSION
        spec = [{"name": r.name, "pattern": r.pattern, "replace": r.replace} for r in self.project_rules]
        digest = hashlib.sha256(json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
        return f"{BUILTIN_VERSION}+project.{digest[:12]}"

    def normalize(self, text: str, root: str | os.PathLike | None = None) -> Normalized:
        """Normalize ``text`` (a decoded output).

        Args:
            text: the output, already redacted.
            root: the repository root (record) or worktree (replay) whose absolute path the
                ``root`` rule replaces; ``None`` disables that rule.

        Returns:
            :class:`Normalized` with the text and the names of the rules that fired.
        """
        roots: tuple[str, ...] = ()
        if root is not None:
            roots = (str(root), os.path.realpath(root))
        fired = []
        swallowed = []
        project_fired = []
        kept = 1.0  # share of the output the project rules left as it was, roughly
        for rule in self.rules:
            share = rule.coverage(text) if rule.source == "project" else 0.0
            text, changed = rule.apply(text, roots)
            if changed:
                fired.append(rule.name)
                if rule.source == "project":
                    project_fired.append(rule.name)
                    kept *= 1.0 - share
                    if share > ALTERED_LIMIT:
                        swallowed.append(rule.name)
        if not swallowed and project_fired and 1.0 - kept > ALTERED_LIMIT:
            swallowed = project_fired  # no rule alone, but together they leave too little
        return Normalized(text, tuple(fired), tuple(swallowed))


def normalize(text: str, root: str | os.PathLike | None = None) -> Normalized:
    """Normalize ``text`` with the built-in rules only (see :meth:`RuleSet.normalize`)."""
    return RuleSet().normalize(text, root)


def decode_output(data: bytes) -> str:
    """A command's merged output as text, for redaction, normalization and hashing, on record and
    on replay alike: UTF-8, each byte that is not part of valid UTF-8 kept as the lone surrogate
    U+DC80+byte (``surrogateescape``) rather than replaced by U+FFFD, so two outputs that differ
    only in such bytes (``\\xff``, ``\\xfe``) normalize and hash differently (:func:`out_sha`
    encodes the surrogates with ``surrogatepass``, as stored outputs are written)."""
    return data.decode("utf-8", "surrogateescape")


def out_sha(normalized_text: str) -> str:
    """SHA-256 hex digest of a normalized text encoded as UTF-8."""
    return hashlib.sha256(normalized_text.encode("utf-8", "surrogatepass")).hexdigest()


def _line_of(text: str, needle: str) -> int | None:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    return None


def load_rules(root: str | os.PathLike | None, *, label: str | None = None) -> RuleSet:
    """Read the project's rules from ``<root>/pyproject.toml`` (tomllib).

    A missing root, file or ``[tool.replaybook.normalize]`` table gives the built-ins only.
    ``label`` names the file in errors and in ``origin`` instead of its path (the replayer
    passes ``pyproject.toml at commit <sha12>``: its worktree is deleted afterwards).

    Raises:
        RulesError: the file is not valid TOML, the table does not match
            :data:`PROJECT_RULES_SCHEMA`, a name is duplicated or shadows a built-in, or a
            pattern does not compile — naming the file and, where found, the line.
    """
    if root is None:
        return RuleSet()
    real = Path(root) / "pyproject.toml"
    if not real.is_file():
        return RuleSet()
    path = label or str(real)
    try:
        raw = real.read_text(encoding="utf-8")
        data = tomllib.loads(raw)
    except (OSError, UnicodeDecodeError) as exc:
        raise RulesError(f"cannot read: {exc}", path) from exc
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise RulesError(f"not valid TOML: {exc}", path, int(m.group(1)) if m else None) from exc
    table = data.get("tool", {}).get("replaybook", {}).get("normalize")
    if table is None:
        return RuleSet()
    where = "[tool.replaybook.normalize]"
    err = first_error_at(PROJECT_RULES_SCHEMA, table)
    if err is not None:
        loc = where + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err[0])
        raise RulesError(f"{loc}: {err[1]}", path, _line_of(raw, "replaybook.normalize"))
    rules: list[Rule] = []
    seen: set[str] = set()
    for i, spec in enumerate(table.get("rules", [])):
        name = spec["name"]
        line = _line_of(raw, name)
        if name in _BUILTIN_NAMES or name in seen:
            raise RulesError(f"{where}.rules[{i}]: rule name {name!r} is already used"
                             + (" by a built-in rule" if name in _BUILTIN_NAMES else ""), path, line)
        seen.add(name)
        try:
            re.compile(spec["pattern"]).sub(spec["replace"], "")
        except (re.error, IndexError) as exc:
            raise RulesError(f"{where}.rules[{i}] ({name}): bad pattern or replacement: {exc}", path, line) from exc
        rules.append(Rule(name, "project rule from pyproject.toml", spec["pattern"], spec["replace"], "project"))
    return RuleSet(tuple(rules), str(path))
