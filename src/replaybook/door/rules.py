"""The door's rules: decide each ``tools/call`` and ``resources/read`` (first match, default deny).

A rules file is YAML (or JSON) matching the JSON Schema ``replaybook/door/door-rules.v1.json``
(:func:`rules_schema`); see ``docs/door.md``.  Example::

    version: 1
    roots: [/srv/data]                 # absolute paths under a root are matched relative to it
    rules:
      - id: deny-dotenv
        decision: deny
        paths: ["**/.env", "**/.env.*"]
      - id: allow-demo
        decision: allow
        tools: ["list_*", "read_*", query]
        paths: ["demo", "demo/**"]
      - id: office-hours-query
        decision: allow
        tools: query
        windows: [{days: [mon, tue, wed, thu, fri], start: "08:00", end: "18:00", tz: Europe/Paris}]

Before the rules, built-in checks refuse what no rule should ever see (ids ``door:…``):
``door:invalid-arguments`` (arguments not an object), ``door:arguments-too-large``,
``door:invalid-utf8`` (the request had bytes that are not UTF-8, or lone surrogates),
``door:invalid-path`` (an object with a NUL), ``door:path-traversal`` (an object with a ``..``
segment, in any spelling) and ``door:outside-roots`` (also a symlink out of every root).
A call no rule matches is refused by ``default-deny``.
"""

from __future__ import annotations

import fnmatch
import json
import os
import posixpath
import re
import stat
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable
from urllib.parse import unquote, urlsplit

import yaml

from .. import _yaml
from ..errors import InputError

__all__ = [
    "Rules", "Rule", "Window", "Decision", "load_rules", "rules_from_dict", "rules_schema", "glob_regex", "glob_match",
    "DEFAULT_PATH_ARGUMENTS", "DEFAULT_MAX_ARGUMENT_BYTES", "DEFAULT_DENY", "BUILTIN_RULES", "refusal_text",
]

#: Argument names that hold the object a call reaches, unless the rules file says otherwise.
DEFAULT_PATH_ARGUMENTS = ("path", "paths", "uri", "url", "file", "file_path", "filepath", "filename", "source",
                          "destination", "src", "dst", "dir", "directory", "folder", "object", "key", "table")
#: Largest arguments object (compact JSON bytes) the door lets through, unless the rules file says otherwise.
DEFAULT_MAX_ARGUMENT_BYTES = 1 << 20
#: The rule id of the fallback refusal.
DEFAULT_DENY = "default-deny"

#: Built-in refusals and what the agent is told (deterministic from the id, so a replay answers the same).
BUILTIN_RULES = {
    DEFAULT_DENY: "no rule allows it",
    "door:invalid-arguments": "the arguments are not a JSON object",
    "door:arguments-too-large": "the arguments are larger than the door accepts",
    "door:invalid-utf8": "the request contains bytes that are not valid UTF-8",
    "door:path-traversal": "a path argument contains a '..' segment",
    "door:invalid-path": "a path argument contains a NUL character, which no file name can hold",
    "door:outside-roots": "a path argument is outside the door's data roots",
    "door:hard-link-unresolved": "a path argument names a file with other hard links the door could not all look for",
    "door:invalid-request": "the request is not a valid MCP request",
    "door:method-not-allowed": "the door does not forward this method",
    "door:message-too-large": "the message is larger than the door accepts",
    "door:nested-too-deep": "the message is nested deeper than the MCP SDK reads",
    "door:not-a-request": "a request method was sent as a notification (no id, or an id JSON-RPC does not allow)",
    "door:number-out-of-range": "an argument is a number beyond the double range (or NaN), which the MCP SDK "
                                "would pass on as null",
    "door:log-failed": "the door could not write its call log",
    "door:evidence-failed": "the door could not keep the answer as evidence",
}

_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


#: what each answer to an ``ask`` rule means, in a refusal's words (see :mod:`.proxy`)
APPROVALS = {"approved": "the user approved it", "declined": "the user declined it",
             "cancelled": "the user dismissed the question", "timed_out": "no answer came in time",
             "unavailable": "the client cannot ask its user (no elicitation support)",
             "failed": "asking the user failed (the client answered with an error)"}


def refusal_text(tool: str, rule: str | None, approval: str | None = None) -> str:
    """What a refused call answers (the same for the door and for ``serve-capsule``); with
    ``approval``, the answer to the rule's question that refused it (:data:`APPROVALS`)."""
    if approval is not None:
        return (f"refused by the door: rule {rule!r} asks the user before this {tool} call, and "
                f"{APPROVALS.get(approval, approval)}")
    text = f"refused by the door: rule {rule!r} denies this {tool} call"
    why = BUILTIN_RULES.get(rule or "")
    return f"{text} ({why})" if why else text


@lru_cache(maxsize=1)
def rules_schema() -> dict:
    """The rules file's JSON Schema (draft 2020-12) as a dict."""
    return json.loads(resources.files("replaybook.door").joinpath("door-rules.v1.json").read_text("utf-8"))


def _glob_tokens(pattern: str) -> list[tuple[str, str]]:
    """A path glob as tokens: ``("lit", c)``, ``("one", "")`` (``?``), ``("class", regex body)``
    (``[…]``), ``("star", "")`` (``*``), ``("any", "")`` (``**``), ``("dirs", "")`` (``**/``: empty or
    any text ending in ``/``)."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                if pattern.startswith("**/", i):
                    out.append(("dirs", ""))
                    i += 3
                else:
                    out.append(("any", ""))
                    i += 2
                continue
            out.append(("star", ""))
        elif c == "?":
            out.append(("one", ""))
        elif c == "[":
            j = pattern.find("]", i + 2 if pattern.startswith("[!", i) or pattern.startswith("[]", i) else i + 1)
            if j < 0:
                out.append(("lit", c))
            else:
                body = pattern[i + 1:j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(("class", "[" + body.replace("\\", "\\\\") + "]"))
                i = j + 1
                continue
        else:
            out.append(("lit", c))
        i += 1
    return out


_TOKEN_REGEX = {"one": "[^/]", "star": "[^/]*", "any": ".*", "dirs": "(?:.*/)?"}


@lru_cache(maxsize=4096)
def glob_regex(pattern: str) -> re.Pattern:
    """Compile a path glob: ``*``/``?`` stay in one segment, ``**`` crosses segments, ``**/`` may be empty.

    Matching it with :meth:`re.Pattern.match` backtracks: a glob with two or more stars takes time
    polynomial in the text's length.  :func:`glob_match` does not."""
    out = [re.escape(v) if k == "lit" else v if k == "class" else _TOKEN_REGEX[k] for k, v in _glob_tokens(pattern)]
    return re.compile("(?s:" + "".join(out) + r")\Z")


class _GlobAutomaton:
    """A glob run as a lazily built DFA: time linear in the text, whatever the pattern."""

    _MAX_CACHED = 50_000

    def __init__(self, tokens: list[tuple[str, str]]):
        self.tokens = tokens
        self.accept = len(tokens)
        self.classes = {i: re.compile(v) for i, (k, v) in enumerate(tokens) if k == "class"}
        self.start = self._closure({0})
        self._next: dict[tuple[frozenset, str], frozenset] = {}

    def _closure(self, states) -> frozenset:
        out, todo = set(states), list(states)
        while todo:
            i = todo.pop()
            if 0 <= i < self.accept and self.tokens[i][0] in ("star", "any", "dirs") and i + 1 not in out:
                out.add(i + 1)
                todo.append(i + 1)
        return frozenset(out)

    def _step(self, states: frozenset, ch: str) -> frozenset:
        # state i: before token i; state -1 - i: inside the text of a "dirs" token i, which may
        # end only with a "/" (no step past it without one)
        nxt = set()
        for i in states:
            if i < 0:
                nxt.add(i)
                if ch == "/":
                    nxt.add(-1 - i + 1)
                continue
            if i == self.accept:
                continue
            kind, v = self.tokens[i]
            if kind == "lit":
                if ch == v:
                    nxt.add(i + 1)
            elif kind == "one":
                if ch != "/":
                    nxt.add(i + 1)
            elif kind == "class":
                if self.classes[i].fullmatch(ch):
                    nxt.add(i + 1)
            elif kind == "star":
                if ch != "/":
                    nxt.add(i)
            elif kind == "any":
                nxt.add(i)
            else:  # dirs: (?:.*/)?
                nxt.add(-1 - i)
                if ch == "/":
                    nxt.add(i + 1)
        return self._closure(nxt)

    def match(self, text: str) -> bool:
        states, cache = self.start, self._next
        for ch in text:
            key = (states, ch)
            got = cache.get(key)
            if got is None:
                if len(cache) > self._MAX_CACHED:
                    cache.clear()
                got = cache[key] = self._step(states, ch)
            states = got
            if not states:
                return False
        return self.accept in states


@lru_cache(maxsize=4096)
def _glob_matcher(pattern: str) -> Callable[[str], bool]:
    tokens = _glob_tokens(pattern)
    if sum(k in ("star", "any", "dirs") for k, _ in tokens) <= 1:
        rx = glob_regex(pattern)  # one star backtracks at most once over the text: linear
        return lambda text: rx.match(text) is not None
    return _GlobAutomaton(tokens).match


def glob_match(pattern: str, text: str) -> bool:
    """``text`` matches the path glob ``pattern`` (the syntax of :func:`glob_regex`), in time
    linear in ``len(text)`` for any pattern (an object is the agent's to choose: a backtracking
    match of ``**/a/**/b`` on a 64 KiB path takes minutes)."""
    return _glob_matcher(pattern)(text)


def _globs(v: str | list[str] | None) -> tuple[str, ...] | None:
    if v is None:
        return None
    return (v,) if isinstance(v, str) else tuple(v)


def _hhmm(s: str) -> int:
    h, m = s.split(":")
    return int(h) * 60 + int(m)


@dataclass(frozen=True)
class Window:
    """A time window a rule applies in (see the schema's ``window``)."""

    days: tuple[int, ...] | None = None
    start_min: int = 0
    end_min: int = 24 * 60
    tz: str = "UTC"
    not_before: datetime | None = None
    until: datetime | None = None

    def contains(self, now: datetime) -> bool:
        """True when ``now`` (tz-aware) is inside the window."""
        if self.not_before is not None and now < self.not_before:
            return False
        if self.until is not None and now >= self.until:
            return False
        from zoneinfo import ZoneInfo

        local = now.astimezone(ZoneInfo(self.tz))
        if self.days is not None and local.weekday() not in self.days:
            return False
        m = local.hour * 60 + local.minute
        if self.start_min <= self.end_min:
            return self.start_min <= m < self.end_min
        return m >= self.start_min or m < self.end_min


@dataclass(frozen=True)
class Rule:
    """One rule (see the schema's ``rule``)."""

    id: str
    decision: str
    methods: tuple[str, ...] | None = None
    tools: tuple[str, ...] | None = None
    paths: tuple[str, ...] | None = None
    arguments: dict[str, tuple[str, ...]] = field(default_factory=dict)
    windows: tuple[Window, ...] | None = None
    description: str | None = None

    def matches_call(self, method: str, tool: str, arguments: dict, now: datetime) -> bool:
        """The rule's conditions other than ``paths`` hold for this call.

        An ``arguments`` condition looks at every spelling of the name a server may read as it
        (Go's ``encoding/json`` folds case and takes the last): for an ``allow`` rule every
        spelling given must match (``{"limit": 5, "LIMIT": 99999}`` is not allowed by a small
        limit), for a ``deny`` or ``ask`` rule any one that matches is enough (``{"limit": 150,
        "LIMIT": 1}`` is refused by a big limit).  Either way the argument must be present."""
        if self.methods is not None and method not in self.methods:
            return False
        if self.tools is not None and not any(fnmatch.fnmatchcase(tool, g) for g in self.tools):
            return False
        every = self.decision == "allow"  # (the safe reading: the one that refuses when in doubt)
        for name, globs in self.arguments.items():
            values = [v for k, v in arguments.items() if k == name or _fold_name(k) == _fold_name(name)]
            if not values:
                return False
            held = (any(fnmatch.fnmatchcase(_argument_text(v), g) for g in globs) for v in values)
            if not (all(held) if every else any(held)):
                return False
        if self.windows is not None and not any(w.contains(now) for w in self.windows):
            return False
        return True

    def matches_object(self, obj: str | None) -> bool:
        """The rule's ``paths`` condition holds for one object (``None``: the call reaches none)."""
        if self.paths is None:
            return True
        if obj is None:
            return False
        return any(glob_match(g, obj) for g in self.paths)

    def matches_folded(self, folded: str) -> bool:
        """The ``paths`` condition holds for an object's folded spelling (:func:`_fold`),
        each glob folded alike (:func:`_fold_glob`): whatever the spelling of either side."""
        if self.paths is None:
            return True
        return any(glob_match(_fold_glob(g), folded) for g in self.paths)


@dataclass(frozen=True)
class Decision:
    """The door's decision for one call.

    Attributes:
        decision: ``allow``, ``deny`` or ``ask`` (a rule that asks the user: the door turns it
            into ``allow`` or ``deny`` by the answer, :mod:`.proxy`).
        rule: the deciding rule's id (``default-deny`` or ``door:…`` for built-in refusals).
        object: the object logged for the call (the refused one when a call reaches several).
        objects: every object the call reaches, as matched (normalised, relative to a root).
    """

    decision: str
    rule: str
    object: str | None = None
    objects: tuple[str, ...] = ()

    @property
    def allowed(self) -> bool:
        """The call may pass the door."""
        return self.decision == "allow"


def _argument_text(v: Any) -> str:
    """An argument's value as an ``arguments`` glob reads it: a string as is, else compact JSON."""
    return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"), sort_keys=True)


def _fold_name(name: str) -> str:
    """An argument name as a reader that ignores case compares it (NFKC, case-folded: Go's
    encoding/json takes ``PATH``, ``Path`` and ``\u017fource`` for ``path`` and ``source``)."""
    return name.lower() if name.isascii() else unicodedata.normalize("NFKC", name).casefold()


@lru_cache(maxsize=4096)
def _fold_glob(pattern: str) -> str:
    """A path glob folded as an object is (:func:`_fold`: percent-decoded, NFKC, case-folded,
    ``\\`` as ``/``, trailing dots and spaces of a segment dropped, normalised): ``Private/**``,
    ``cafe\u0301/**`` (NFD) and ``Logs\\**`` match the folded ``private/key``, ``caf\u00e9/x`` and
    ``logs/a``.  The wildcards keep their meaning (``*``, ``?``, ``[``, ``]`` fold to themselves);
    a percent-encoded one (``%2A``) becomes one, as the object's ``%2A`` becomes a ``*``."""
    return _fold(pattern)


def _decode(s: str) -> str:
    """``s`` percent-decoded until it stops changing (at most three rounds: ``%252F`` → ``/``)."""
    for _ in range(3):
        t = unquote(s)
        if t == s:
            break
        s = t
    return s


def _fold(obj: str) -> str:
    """One spelling for the many a server may read as the same object: percent-decoded, NFKC,
    case-folded, ``\\`` as ``/``, each segment's trailing dots and spaces dropped (Windows drops
    them; a segment of dots only is ``.`` or ``..``).  Paths are normalised (``//``, ``./``);
    URIs (``scheme://…``) are not."""
    t = unicodedata.normalize("NFKC", _decode(obj)).casefold().replace("\\", "/")
    segs = []
    for seg in t.split("/"):
        if seg and not seg.strip(". "):
            seg = ".." if seg.count(".") >= 2 else "."
        elif seg not in (".", ".."):
            seg = seg.rstrip(". ")
        segs.append(seg)
    t = "/".join(segs)
    if "://" in obj or ".." in segs:
        return t
    return posixpath.normpath(t) if t else t


def _home() -> str:
    return os.path.expanduser("~")


def _has_bad_text(v: Any) -> bool:
    """True when a string anywhere in ``v`` holds U+FFFD (undecodable bytes) or a lone surrogate."""
    if isinstance(v, str):
        if v.isascii():
            return False
        return "\ufffd" in v or any("\ud800" <= ch <= "\udfff" for ch in v)
    if isinstance(v, dict):
        return any(_has_bad_text(k) or _has_bad_text(x) for k, x in v.items())
    if isinstance(v, list):
        return any(_has_bad_text(x) for x in v)
    return False


#: The most entries of the roots looked through for the other names of one hard-linked file; a
#: walk cut short there refuses the call (``door:hard-link-unresolved``) rather than guess.
HARD_LINK_WALK_LIMIT = 200_000
#: Hard-linked files whose names are remembered (by device, inode, link count and change time).
_HARD_LINK_CACHE = 4096


def _hard_link_names(target: os.stat_result, roots: tuple[str, ...], limit: int) -> tuple[list[str], bool]:
    """The names under ``roots`` (relative to the root, ``/``-separated, sorted) of the regular
    file ``target`` describes — its hard links — found by walking the roots (symlinks not followed:
    a name through one is decided as the symlink's own object), and whether the walk ended
    before looking at every entry (``limit`` entries looked at in all).  Unreadable folders are
    passed by."""
    found: list[str] = []
    seen = 0
    for root in roots:
        stack = [("", root)]
        while stack:
            rel, folder = stack.pop()
            try:
                it = os.scandir(folder)
            except OSError:
                continue
            with it:
                for entry in it:
                    seen += 1
                    if seen > limit:
                        return sorted(found), True
                    name = f"{rel}{entry.name}"
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append((name + "/", entry.path))
                        elif entry.inode() == target.st_ino and entry.is_file(follow_symlinks=False):
                            if entry.stat(follow_symlinks=False).st_dev == target.st_dev:
                                found.append(name)
                    except OSError:
                        continue
            if len(found) >= target.st_nlink:
                return sorted(found), False
    return sorted(found), False


@dataclass
class Rules:
    """A loaded rules file.  :meth:`decide` is the whole policy."""

    rules: list[Rule]
    roots: tuple[str, ...] = ()
    path_arguments: tuple[str, ...] = DEFAULT_PATH_ARGUMENTS
    max_argument_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES
    pass_methods: tuple[str, ...] = ()
    path: Path | None = None
    #: entries of the roots looked through for a hard-linked file's other names, at most
    hard_link_walk_limit: int = HARD_LINK_WALK_LIMIT
    _links: dict = field(default_factory=dict, repr=False, compare=False)

    # -- objects -------------------------------------------------------------------------------
    def raw_objects(self, method: str, arguments: dict) -> list[str]:
        """The object strings a call names, as given: ``uri`` for resources/read; for a tool call
        every argument named in :attr:`path_arguments` — in any case or Unicode spelling of the
        name (some servers read JSON keys case-insensitively) and at any depth (``files[].path``)
        — that is a string, a number (as its JSON text) or a list of them.  Top-level arguments
        come first, in :attr:`path_arguments` order."""
        if method == "resources/read":
            uri = arguments.get("uri")
            return [uri] if isinstance(uri, str) else []
        order: dict[str, int] = {}
        for i, n in enumerate(self.path_arguments):
            order.setdefault(_fold_name(n), i)
        exact = set(self.path_arguments)
        top = [k for k in arguments if isinstance(k, str) and _fold_name(k) in order]
        top.sort(key=lambda k: (order[_fold_name(k)], k not in exact))  # (stable: then as sent)
        out: list[str] = []
        for k in top:
            _collect(arguments[k], order, out)
        for k, v in arguments.items():
            if isinstance(v, (dict, list)) and not (isinstance(k, str) and _fold_name(k) in order):
                _walk(v, order, out)
        return out

    def normalise(self, raw: str) -> tuple[str, str | None]:
        """``(object, refusal)`` for one raw object: normalised and made relative to a root, or a
        built-in refusal id (``door:invalid-path`` / ``door:path-traversal`` / ``door:outside-roots``)."""
        obj, refusal, _ = self._normalise(raw)
        return obj, refusal

    def _normalise(self, raw: str) -> tuple[str, str | None, str | None]:
        """:meth:`normalise` plus the object's absolute path on the server's filesystem, when the
        rules' roots tell it (``None`` for a URI, or a relative path without roots)."""
        if "\x00" in raw or "\x00" in _decode(raw):
            return raw, "door:invalid-path", None
        s = raw
        if raw[:5].lower() == "file:":  # (a scheme is case-insensitive: FILE:///etc/passwd is a path)
            s = unquote(urlsplit(raw).path) or "/"
        elif "://" in raw:
            # another URI: no '..' anywhere after the scheme (a template's {+path} may start at the
            # host: data://../x), in any spelling; the URI is the object as written
            rest = raw.split("://", 1)[1]
            if ".." in re.split(r"[/\\]", _decode(rest)) or ".." in _fold(rest).split("/"):
                return raw, "door:path-traversal", None
            return raw, None, None
        elif raw == "~" or raw.startswith("~/"):
            s = _home() + raw[1:]  # as the reference filesystem server (and a shell) reads it
        if ".." in re.split(r"[/\\]", s) or ".." in _fold(s).split("/"):
            return s, "door:path-traversal", None
        norm = posixpath.normpath(s) if s else s
        if norm.startswith("./"):
            norm = norm[2:]
        if not self.roots:
            return norm, None, None
        if norm.startswith("/"):
            for root in self.roots:
                r = posixpath.normpath(root)
                if norm == r:
                    return ".", None, norm
                prefix = r if r.endswith("/") else r + "/"
                if norm.startswith(prefix):
                    return norm[len(prefix):], None, norm
            return norm, "door:outside-roots", None
        first = posixpath.normpath(self.roots[0])  # where a server resolves a relative path
        return norm, None, (first if norm in ("", ".") else posixpath.join(first, norm))

    def _on_disk(self, absolute: str) -> tuple[str | None, str | None]:
        """``(object, refusal)`` for what ``absolute`` reaches on this machine's filesystem —
        symlinks followed in every component that exists, as a server opening it does — made
        relative to a root (the root as written or as resolved); ``(None, None)`` when that is
        ``absolute`` itself; ``door:outside-roots`` when it leaves every root."""
        try:
            real = os.path.realpath(absolute)
        except (OSError, ValueError):
            return None, None
        if real == absolute:
            return None, None
        for root in self.roots:
            for r in dict.fromkeys((posixpath.normpath(root), os.path.realpath(root))):
                if real == r:
                    return ".", None
                prefix = r.rstrip("/") + "/"
                if real.startswith(prefix):
                    return real[len(prefix):], None
        return real, "door:outside-roots"

    def _hard_links(self, absolute: str) -> tuple[list[str], str | None]:
        """``(names, refusal)``: the other names under the roots of the file ``absolute`` reaches
        when it is a regular file with more than one hard link (a second name for a file is a
        second object: ``demo/notes.txt`` may be ``reference/.env`` by another name, and no
        path shows it), relative to their root; ``door:hard-link-unresolved`` when the walk for
        them stopped at :attr:`hard_link_walk_limit` entries.  Names outside every root are no
        object the rules decide.  Remembered per (device, inode, link count, change time): a
        link made or removed changes the file's change time."""
        try:
            st = os.stat(absolute)
        except (OSError, ValueError):
            return [], None
        if st.st_nlink < 2 or not stat.S_ISREG(st.st_mode) or not self.roots:
            return [], None
        key = (st.st_dev, st.st_ino, st.st_nlink, st.st_ctime_ns)
        hit = self._links.get(key)
        if hit is None:
            roots = tuple(dict.fromkeys(os.path.realpath(r) for r in self.roots))
            hit = _hard_link_names(st, roots, self.hard_link_walk_limit)
            if len(self._links) >= _HARD_LINK_CACHE:
                self._links.clear()
            self._links[key] = hit
        names, cut = hit
        return list(names), ("door:hard-link-unresolved" if cut else None)

    # -- the decision ----------------------------------------------------------------------------
    def decide(self, method: str, tool: str, arguments: Any, *, now: datetime | None = None,
               argument_bytes: int | None = None, on_disk: bool = False) -> Decision:
        """Decide one call.

        Every object the call names is decided on its own (first match; any refusal refuses the
        call), and with it the objects the server may read for it: a URI percent-decoded (the
        MCP SDK's resource templates decode), and with ``on_disk`` the object a path reaches
        through symlinks and the file's other names under the roots when it has several hard
        links (:meth:`_hard_links`).  An explicit ``deny`` (or ``ask``) rule also catches an
        object's other spellings (:func:`_fold`: case, Unicode form, percent-encoding, ``\\``,
        trailing dots), its globs folded alike: first match between the folded object and the
        rules — a deny or ask rule's globs folded, whichever way either is written, an allow
        rule's as written (folding never widens what an allow rule allows).

        Args:
            method: ``tools/call`` or ``resources/read``.
            tool: the tool name (``resources/read`` for a resource read).
            arguments: the call's arguments (``{"uri": …}`` for a resource read).
            now: the door's clock (tz-aware; default: now, UTC).
            argument_bytes: size of the arguments' compact JSON, when the caller knows it.
            on_disk: the server reads this machine's filesystem (a server the door started):
                resolve symlinks under the roots, and find a hard-linked file's other names.
        """
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return Decision("deny", "door:invalid-arguments")
        if argument_bytes is not None and argument_bytes > self.max_argument_bytes:
            return Decision("deny", "door:arguments-too-large")
        if _has_bad_text(tool) or _has_bad_text(arguments):
            raw = self.raw_objects(method, arguments)
            return Decision("deny", "door:invalid-utf8", raw[0] if raw else None)
        now = now or datetime.now(timezone.utc)
        objects: list[str] = []
        for raw in self.raw_objects(method, arguments):
            obj, refusal, absolute = self._normalise(raw)
            if refusal is not None:
                return Decision("deny", refusal, obj, (obj,))
            objects.append(obj)
            if absolute is None and "://" in raw and _decode(raw) != raw:
                objects.append(_decode(raw))
            elif on_disk and absolute is not None:
                reached, refusal = self._on_disk(absolute)
                if refusal is not None:
                    return Decision("deny", refusal, reached, tuple(dict.fromkeys([*objects, reached])))
                if reached is not None:
                    objects.append(reached)
                links, refusal = self._hard_links(absolute)
                if refusal is not None:
                    return Decision("deny", refusal, reached or obj, tuple(dict.fromkeys([*objects, *links])))
                objects.extend(links)
        objects = list(dict.fromkeys(objects))
        candidates = [r for r in self.rules if r.matches_call(method, tool, arguments, now)]
        if not objects:
            for r in candidates:
                if r.paths is None:
                    return Decision(r.decision, r.id)
            return Decision("deny", DEFAULT_DENY)
        first: Decision | None = None
        ask: Decision | None = None
        both = tuple(objects)
        for obj in objects:
            d = next((Decision(r.decision, r.id, obj, both) for r in candidates if r.matches_object(obj)),
                     Decision("deny", DEFAULT_DENY, obj, both))
            if d.decision == "deny":  # a refusal of any object refuses the call, asked or not
                return d
            if d.decision == "ask":
                ask = ask or d
            first = first or d
        for obj in objects:
            # every object, already folded or not: a deny or ask rule's globs are folded too, so a
            # deny glob written `Private/**` or in NFD catches `private/key` and the NFC spelling.
            # An allow rule's globs are matched as written: folding them would widen what it
            # allows (`./reports/**` matches nothing as written, `reports/**` folded), and an
            # allow met first here would cancel a later deny's catch
            folded = _fold(obj)
            r = next((r for r in candidates if (r.matches_folded(folded) if r.decision in ("deny", "ask")
                                                else r.matches_object(folded))), None)
            if r is not None and r.decision == "deny":
                return Decision("deny", r.id, obj, both)
            if r is not None and r.decision == "ask":
                ask = ask or Decision("ask", r.id, obj, both)
        assert first is not None
        return ask or first


def _collect(v: Any, names: dict[str, int], out: list[str]) -> None:
    """The objects in the value of a path argument."""
    if isinstance(v, str):
        out.append(v)
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        out.append(json.dumps(v))
    elif isinstance(v, list):
        for x in v:
            _collect(x, names, out)
    elif isinstance(v, dict):
        _walk(v, names, out)


def _walk(v: Any, names: dict[str, int], out: list[str]) -> None:
    """The objects of the path arguments nested anywhere in ``v``."""
    if isinstance(v, dict):
        for k, x in v.items():
            if isinstance(k, str) and _fold_name(k) in names:
                _collect(x, names, out)
            elif isinstance(x, (dict, list)):
                _walk(x, names, out)
    elif isinstance(v, list):
        for x in v:
            if isinstance(x, (dict, list)):
                _walk(x, names, out)


_RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"
                      r"(?:([Zz])|([+-])(\d{2}):(\d{2}))", re.ASCII)


def _instant(s: str) -> datetime:
    """An RFC 3339 ``date-time`` as an aware datetime: ``T``/``t`` and ``Z``/``z`` in either case,
    any number of fraction digits (kept to the microsecond), a leap second (``23:59:60``) as the
    second after ``:59``.

    Raises:
        ValueError: ``s`` is no RFC 3339 instant (says why); the schema's ``format`` check may
            not have caught it (it needs an optional package), so this one must."""
    m = _RFC3339.fullmatch(s)
    if m is None:
        raise ValueError("not an RFC 3339 instant (YYYY-MM-DDTHH:MM:SS[.fraction] and Z or ±HH:MM, "
                         "e.g. 2026-01-01T00:00:00Z)")
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    fraction, sign, off_h, off_m = m.group(7), m.group(9), m.group(10), m.group(11)
    if sign is None:
        tz = timezone.utc
    else:
        if int(off_h) > 23 or int(off_m) > 59:
            raise ValueError(f"not an RFC 3339 instant (offset {sign}{off_h}:{off_m} is out of range)")
        offset = timedelta(hours=int(off_h), minutes=int(off_m))
        tz = timezone(-offset if sign == "-" else offset)
    leap = second == 60
    try:
        t = datetime(year, month, day, hour, minute, 59 if leap else second,
                     int((fraction or "0")[:6].ljust(6, "0")), tzinfo=tz)
    except ValueError as exc:  # (month 13, 30 February, 24:00:00, …)
        raise ValueError(f"not an RFC 3339 instant ({exc})") from None
    return t + timedelta(seconds=1) if leap else t


def _window(d: dict) -> Window:
    """A window as the schema reads it.

    Raises:
        ValueError: ``from`` or ``until`` is no RFC 3339 instant; ``args`` is ``(key, why)``."""
    def inst(key: str) -> datetime | None:
        s = d.get(key)
        if s is None:
            return None
        try:
            return _instant(s)
        except ValueError as exc:
            raise ValueError(key, str(exc)) from None

    days = d.get("days")
    return Window(days=None if days is None else tuple(sorted({_DAYS.index(x) for x in days})),
                  start_min=_hhmm(d.get("start", "00:00")), end_min=_hhmm(d.get("end", "24:00")),
                  tz=d.get("tz", "UTC"), not_before=inst("from"), until=inst("until"))


def _yaml_times(data: Any) -> Any:
    """YAML 1.1 reads an unquoted ``18:00`` as the base-60 integer 1080: turn window times back."""
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        return data
    for r in data["rules"]:
        for w in (r.get("windows") or []) if isinstance(r, dict) else []:
            for k in ("start", "end"):
                if isinstance(w, dict) and isinstance(w.get(k), int) and not isinstance(w.get(k), bool):
                    w[k] = f"{w[k] // 60:02d}:{w[k] % 60:02d}"
    return data


def rules_from_dict(data: Any, path: str | Path | None = None) -> Rules:
    """Validate a rules mapping and build :class:`Rules`.

    Raises:
        InputError: the mapping does not match the schema (names the field), a rule id repeats,
            a time zone is unknown, a window's ``from``/``until`` is no RFC 3339 instant, or an
            argument name is no string (YAML reads an unquoted ``on:`` as ``True``).
    """
    from .._schema import first_error

    data = _yaml_times(data)
    for i, r in enumerate(data.get("rules") or [] if isinstance(data, dict) else []):
        rid = r.get("id") if isinstance(r, dict) else None
        if isinstance(rid, str) and (rid == "default-deny" or rid.startswith("door:")):
            # (the schema says this with a `not anyOf`, which reads as a riddle)
            raise InputError(f"invalid door rules at rules/{i}/id: {rid!r} is reserved for the door's own "
                             "decisions (default-deny, door:…); give the rule another id", path)
    err = first_error(rules_schema(), data)
    if err is not None:
        raise InputError(f"invalid door rules {err}", path)
    seen: set[str] = set()
    rules = []
    for i, r in enumerate(data["rules"]):
        if r["id"] in seen:
            raise InputError(f"invalid door rules at rules/{i}/id: rule id {r['id']!r} is used twice", path)
        seen.add(r["id"])
        for k in r.get("arguments") or {}:
            if not isinstance(k, str):
                # (YAML reads `on:` as True, `5:` as 5, `null:` as None: no call's argument has
                # that name, and the JSON schema does not see a mapping key's type)
                raise InputError(f"invalid door rules at rules/{i}/arguments: rule {r['id']!r} has the argument "
                                 f"name {k!r}, which YAML reads as no text (an unquoted on, off, yes, no, true, "
                                 "false, null, ~ or number); quote it as the call spells it (e.g. 'on': …)", path)
        windows = None
        if "windows" in r:
            built = []
            for j, w in enumerate(r["windows"]):
                try:
                    built.append(_window(w))
                except ValueError as exc:
                    key, why = exc.args
                    raise InputError(f"invalid door rules at rules/{i}/windows/{j}/{key}: {w[key]!r} is {why}",
                                     path) from None
            windows = tuple(built)
            for w in windows:
                try:
                    from zoneinfo import ZoneInfo

                    ZoneInfo(w.tz)
                except Exception:  # noqa: BLE001 - ZoneInfoNotFoundError, ValueError
                    raise InputError(f"invalid door rules at rules/{i}/windows: unknown time zone {w.tz!r}",
                                     path) from None
        rules.append(Rule(id=r["id"], decision=r["decision"],
                          methods=None if "methods" not in r else tuple(r["methods"]),
                          tools=_globs(r.get("tools")), paths=_globs(r.get("paths")),
                          arguments={k: _globs(v) for k, v in (r.get("arguments") or {}).items()},
                          windows=windows, description=r.get("description")))
    return Rules(rules=rules, roots=tuple(data.get("roots") or ()),
                 path_arguments=tuple(data.get("path_arguments") or DEFAULT_PATH_ARGUMENTS),
                 max_argument_bytes=int(data.get("max_argument_bytes", DEFAULT_MAX_ARGUMENT_BYTES)),
                 pass_methods=tuple(data.get("pass_methods") or ()),
                 path=None if path is None else Path(path))


def load_rules(path: str | Path) -> Rules:
    """Read a rules file (YAML or JSON).

    Raises:
        InputError: unreadable, not YAML (or nested too deeply to read), a mapping with the same
            key twice (names the line), or not matching ``door-rules.v1`` (names the field).
    """
    p = Path(path)
    try:
        text = p.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read door rules: {exc}", p) from exc
    try:
        data = _yaml.load(text)
    except _yaml.DuplicateKeyError as exc:
        raise InputError(f"door rules: {exc.problem}", p, exc.problem_mark.line + 1) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(f"door rules are not valid YAML: {_yaml.describe(exc)}", p, None if mark is None else mark.line + 1) from exc
    except RecursionError:
        raise InputError("door rules are nested too deeply to read", p) from None
    try:
        return rules_from_dict(data, p)
    except RecursionError:
        raise InputError("door rules are nested too deeply to read", p) from None
