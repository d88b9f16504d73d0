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
``door:path-traversal`` (an object with a ``..`` segment) and ``door:outside-roots``.
A call no rule matches is refused by ``default-deny``.
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
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
    "door:outside-roots": "a path argument is outside the door's data roots",
    "door:invalid-request": "the request is not a valid MCP request",
    "door:method-not-allowed": "the door does not forward this method",
    "door:message-too-large": "the message is larger than the door accepts",
    "door:nested-too-deep": "the message is nested deeper than the MCP SDK reads",
    "door:not-a-request": "a request method was sent as a notification (no id, or an id JSON-RPC does not allow)",
    "door:number-out-of-range": "an argument is a number beyond the double range (or NaN), which the MCP SDK "
                                "would pass on as null",
    "door:log-failed": "the door could not write its call log",
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
        """The rule's conditions other than ``paths`` hold for this call."""
        if self.methods is not None and method not in self.methods:
            return False
        if self.tools is not None and not any(fnmatch.fnmatchcase(tool, g) for g in self.tools):
            return False
        for name, globs in self.arguments.items():
            if name not in arguments:
                return False
            v = arguments[name]
            text = v if isinstance(v, str) else json.dumps(v, separators=(",", ":"), sort_keys=True)
            if not any(fnmatch.fnmatchcase(text, g) for g in globs):
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


@dataclass
class Rules:
    """A loaded rules file.  :meth:`decide` is the whole policy."""

    rules: list[Rule]
    roots: tuple[str, ...] = ()
    path_arguments: tuple[str, ...] = DEFAULT_PATH_ARGUMENTS
    max_argument_bytes: int = DEFAULT_MAX_ARGUMENT_BYTES
    pass_methods: tuple[str, ...] = ()
    path: Path | None = None

    # -- objects -------------------------------------------------------------------------------
    def raw_objects(self, method: str, arguments: dict) -> list[str]:
        """The object strings a call names, as given (``uri`` for resources/read)."""
        if method == "resources/read":
            uri = arguments.get("uri")
            return [uri] if isinstance(uri, str) else []
        out: list[str] = []
        for name in self.path_arguments:
            v = arguments.get(name)
            if isinstance(v, str):
                out.append(v)
            elif isinstance(v, list):
                out.extend(x for x in v if isinstance(x, str))
        return out

    def normalise(self, raw: str) -> tuple[str, str | None]:
        """``(object, refusal)`` for one raw object: normalised and made relative to a root, or a
        built-in refusal id (``door:path-traversal`` / ``door:outside-roots``)."""
        s = raw
        is_file_uri = raw.startswith("file:")
        if is_file_uri:
            s = unquote(urlsplit(raw).path) or "/"
        elif "://" in raw:
            # a non-file URI: check its path part for traversal, keep the URI as the object
            part = unquote(urlsplit(raw).path)
            if ".." in re.split(r"[/\\]", part):
                return raw, "door:path-traversal"
            return raw, None
        if ".." in re.split(r"[/\\]", s) or ".." in re.split(r"[/\\]", unquote(s)):
            return s, "door:path-traversal"
        norm = posixpath.normpath(s) if s else s
        if norm.startswith("./"):
            norm = norm[2:]
        if self.roots and norm.startswith("/"):
            for root in self.roots:
                r = posixpath.normpath(root)
                if norm == r:
                    return ".", None
                prefix = r if r.endswith("/") else r + "/"
                if norm.startswith(prefix):
                    return norm[len(prefix):], None
            return norm, "door:outside-roots"
        return norm, None

    # -- the decision ----------------------------------------------------------------------------
    def decide(self, method: str, tool: str, arguments: Any, *, now: datetime | None = None,
               argument_bytes: int | None = None) -> Decision:
        """Decide one call.

        Args:
            method: ``tools/call`` or ``resources/read``.
            tool: the tool name (``resources/read`` for a resource read).
            arguments: the call's arguments (``{"uri": …}`` for a resource read).
            now: the door's clock (tz-aware; default: now, UTC).
            argument_bytes: size of the arguments' compact JSON, when the caller knows it.
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
            obj, refusal = self.normalise(raw)
            if refusal is not None:
                return Decision("deny", refusal, obj, (obj,))
            objects.append(obj)
        candidates = [r for r in self.rules if r.matches_call(method, tool, arguments, now)]
        if not objects:
            for r in candidates:
                if r.paths is None:
                    return Decision(r.decision, r.id)
            return Decision("deny", DEFAULT_DENY)
        first: Decision | None = None
        ask: Decision | None = None
        for obj in objects:
            d = next((Decision(r.decision, r.id, obj, tuple(objects)) for r in candidates if r.matches_object(obj)),
                     Decision("deny", DEFAULT_DENY, obj, tuple(objects)))
            if d.decision == "deny":  # a refusal of any object refuses the call, asked or not
                return d
            if d.decision == "ask":
                ask = ask or d
            first = first or d
        assert first is not None
        return ask or first


def _window(d: dict) -> Window:
    def inst(s: str | None) -> datetime | None:
        if s is None:
            return None
        t = datetime.fromisoformat(s.replace("Z", "+00:00"))
        return t if t.tzinfo else t.replace(tzinfo=timezone.utc)

    days = d.get("days")
    return Window(days=None if days is None else tuple(sorted({_DAYS.index(x) for x in days})),
                  start_min=_hhmm(d.get("start", "00:00")), end_min=_hhmm(d.get("end", "24:00")),
                  tz=d.get("tz", "UTC"), not_before=inst(d.get("from")), until=inst(d.get("until")))


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
            or a time zone is unknown.
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
        windows = None
        if "windows" in r:
            windows = tuple(_window(w) for w in r["windows"])
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
        raise InputError(f"door rules are not valid YAML: {exc}", p, None if mark is None else mark.line + 1) from exc
    except RecursionError:
        raise InputError("door rules are nested too deeply to read", p) from None
    try:
        return rules_from_dict(data, p)
    except RecursionError:
        raise InputError("door rules are nested too deeply to read", p) from None
