"""The session log (``session.jsonl``): one JSON object per recorded command.

Each line is declared field by field in :data:`LOG_FIELDS` (name, JSON type, meaning with
units); :data:`LOG_SCHEMA` (JSON Schema 2020-12) is built from it.  The first five fields are
the seed article's format and the only ones the claims linter needs (``seq``, ``cmd``,
``exit``); a replay needs them all.  Unknown fields are allowed (newer recorders).

Appending is safe under concurrent writers: :func:`append_step` takes an exclusive
``fcntl.flock`` on the log, assigns ``seq`` = highest seq in the file + 1 *under the lock*,
writes the line with one ``write`` on an ``O_APPEND`` descriptor, fsyncs, and unlocks.

The lines form a chain, so that a log with lines removed, renumbered or cut off shows it: each
line's ``prev`` is the digest (:func:`entry_digest`) of the line before it (``null`` for the
first), and the last line of the file is a trailer, ``{"trailer": {"v": 1, "lines": N, "last":
"sha256:…"}}``, holding how many step lines the log has and the digest of the last one; each
append replaces it.  :func:`read_log` verifies both (:class:`ChainFinding`); a log written before
the chain, or by another tool, still reads, as ``unchained``.  The chain is no signature: anyone
who edits a log can recompute it.  It shows damage done by hand or by tools that know nothing of
it, as the seq gaps did for removed lines, and now renumbering and truncation too.
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import orjson

from .. import _json
from .._schema import first_error_at

from .._jsonl import iter_lines, iter_text_lines, read_bytes
from .._text import one_line
from .errors import PacketLogError

__all__ = [
    "FORMAT_VERSION",
    "RAW_DIR",
    "LogField",
    "LOG_FIELDS",
    "LOG_SCHEMA",
    "MINIMAL_FIELDS",
    "REPLAY_FIELDS",
    "LogStep",
    "SessionLog",
    "ChainFinding",
    "CHAIN_KINDS",
    "entry_digest",
    "line_digest",
    "trailer_line",
    "append_step",
    "read_log",
    "outputs_dir_for",
    "printable",
]

#: Value of ``v`` written by this recorder.
FORMAT_VERSION = 1


@dataclass(frozen=True)
class LogField:
    """One field of a session-log line: name, JSON Schema type(s), meaning with units."""

    name: str
    type: str | tuple[str, ...]
    doc: str


_HEX64 = "^[0-9a-f]{64}$"

#: Every field a recorder writes, in the order it writes them.
LOG_FIELDS: tuple[LogField, ...] = (
    LogField("seq", "integer", "1-based step number, unique in the log; assigned under the log's lock at append time"),
    LogField("cmd", "string", "the command line (redacted): one recorded argument verbatim (a shell line), "
                              "several joined with shlex.join"),
    LogField("exit", "integer", "exit code; 128+N when killed by signal N"),
    LogField("out_sha", "string", "SHA-256 hex of the normalized, redacted merged stdout+stderr (UTF-8)"),
    LogField("duration_ms", "integer", "wall-clock run time in milliseconds (for people; never compared)"),
    LogField("v", "integer", "format version of the line (1)"),
    LogField("ts", "string", "when the command started, UTC, RFC 3339 with milliseconds"),
    LogField("argv", ("array", "null"), "the arguments (each redacted) when several were recorded: run without a "
                                        "shell; null when `cmd` is a shell line"),
    LogField("shell", ("string", "null"), "`bash` or `sh`: the shell a shell line ran in; null for argv"),
    LogField("pipefail", ("boolean", "null"), "true: the bash shell line ran with `-o pipefail` (a pipeline fails "
                                              "when any of its commands fails); null or absent: without it"),
    LogField("cwd", ("string", "null"), "working directory relative to the repository root, POSIX, `.` for the root; "
                                        "null outside a repository"),
    LogField("commit", ("string", "null"), "HEAD commit (40 hex) when the command started; null outside a repository "
                                           "or on an unborn branch"),
    LogField("tree", ("string", "null"), "`sha256:<hex>` digest of the working tree's files when the command started "
                                         "(replaybook.packet.gitstate)"),
    LogField("dirty", ("boolean", "null"), "the working tree had uncommitted changes when the command started"),
    LogField("dirty_files", ("integer", "null"), "how many paths differed from `commit` then"),
    LogField("dirty_paths", ("array", "null"), "those paths (root-relative, POSIX, sorted; names only, never "
                                               "content), so a replay can tell which files differ; null when "
                                               "more than 1000, or outside a repository"),
    LogField("excluded", "array", "root-relative paths left out of `tree`: the log and its output folder"),
    LogField("norm", "string", "normalization rules version: the built-in rules' version (`2`), or "
             "`2+project.<sha12>` with project rules"),
    LogField("norm_fired", "array", "names of the normalization rules that changed this output"),
    LogField("redacted", "array", "what was redacted from cmd or output: `env:NAME` or a token kind (never values)"),
    LogField("out_bytes", "integer", "size of the raw merged output in bytes"),
    LogField("stored", "boolean", "the normalized output is in the output folder as `<out_sha>.txt`"),
    LogField("raw_sha", "string", "only with a stored output: SHA-256 hex of the redacted merged output before "
                                  "normalization, stored as `raw/<raw_sha>.txt` in the output folder (what "
                                  "claims quoting figures are checked against)"),
    LogField("recorder", "string", "the replaybook version that wrote the line"),
    LogField("prev", ("string", "null"), "`sha256:<hex>` digest (canonical JSON) of the line before it in the file; "
                                         "null for the first line: the chain that shows lines removed, renumbered "
                                         "or edited"),
)

#: Fields every line must have (the claims linter needs no more).
MINIMAL_FIELDS = ("seq", "cmd", "exit")
#: Fields a replay needs.
REPLAY_FIELDS = ("seq", "cmd", "exit", "out_sha", "v", "argv", "shell", "cwd", "commit", "tree", "dirty",
                 "excluded", "norm")

_EXTRA: dict[str, dict] = {
    "seq": {"minimum": 1},
    "out_sha": {"pattern": _HEX64},
    "raw_sha": {"pattern": _HEX64},
    "commit": {"pattern": "^[0-9a-f]{40}([0-9a-f]{24})?$"},
    "tree": {"pattern": "^sha256:[0-9a-f]{64}$"},
    "argv": {"items": {"type": "string"}, "minItems": 1},
    "excluded": {"items": {"type": "string"}},
    "dirty_paths": {"items": {"type": "string"}},
    "norm_fired": {"items": {"type": "string"}},
    "redacted": {"items": {"type": "string"}},
    "duration_ms": {"minimum": 0},
    "out_bytes": {"minimum": 0},
    "prev": {"pattern": "^sha256:[0-9a-f]{64}$"},
}


def _schema(required: tuple[str, ...]) -> dict:
    props = {}
    for f in LOG_FIELDS:
        t = list(f.type) if isinstance(f.type, tuple) else f.type
        props[f.name] = {"type": t, "description": f.doc, **_EXTRA.get(f.name, {})}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "replaybook session log line",
        "type": "object",
        "required": list(required),
        "properties": props,
    }


#: JSON Schema of a line a replay can use.
LOG_SCHEMA = _schema(REPLAY_FIELDS)
_MINIMAL_SCHEMA = _schema(MINIMAL_FIELDS)
_SCHEMAS = {True: LOG_SCHEMA, False: _MINIMAL_SCHEMA}


@dataclass(frozen=True)
class LogStep:
    """One parsed log line.  Fields as in :data:`LOG_FIELDS` (absent ones are ``None``).

    ``line_no`` is the 1-based line in the log; ``raw`` the parsed dict.
    """

    seq: int
    cmd: str
    exit: int
    line_no: int
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)

    def get(self, name: str, default: Any = None) -> Any:
        """The value of field ``name`` (``default`` when absent)."""
        return self.raw.get(name, default)


@dataclass(frozen=True)
class SessionLog:
    """A read session log: its path and its steps in ``seq`` order.

    Attributes:
        path: the log.
        steps: its steps, in ``seq`` order.
        chain: ``chained`` (every line from ``chained_from`` on carries the digest of the line
            before it, and the trailer seals the last one), ``unchained`` (no line carries one:
            written before the chain, or by another tool) or ``damaged`` (``chain_findings``).
        chained_from: the first line of the chain (1 unless older lines were recorded before
            it), or ``None``.
        chain_findings: the damage found, each naming a line (:class:`ChainFinding`).
    """

    path: Path
    steps: tuple[LogStep, ...]
    chain: str = "unchained"
    chained_from: int | None = None
    chain_findings: tuple["ChainFinding", ...] = ()

    def by_seq(self) -> dict[int, LogStep]:
        """``{seq: step}``."""
        return {s.seq: s for s in self.steps}

    def chain_messages(self) -> list[str]:
        """One message per :attr:`chain_findings` entry, naming the file and line."""
        return [f.where(self.path) for f in self.chain_findings]

    def gaps(self) -> list[tuple[int, int, LogStep]]:
        """``(first_missing, last_missing, step_after)`` for every run of seqs missing before a
        step (from 1).  The recorder assigns seq = highest + 1 under the log's lock, so a gap
        means lines were removed."""
        out = []
        expected = 1
        for s in self.steps:
            if s.seq > expected:
                out.append((expected, s.seq - 1, s))
            expected = s.seq + 1
        return out

    def gap_warnings(self) -> list[str]:
        """One message per gap in seq (see :meth:`gaps`), naming the file and line; not for a gap
        the chain already reports at that line (:attr:`chain_findings`)."""
        msgs = []
        named = {f.line_no for f in self.chain_findings}
        for a, b, s in self.gaps():
            if s.line_no in named:
                continue
            which = f"seq {a}" if a == b else f"seq {a} to {b}"
            msgs.append(f"{self.path}:{s.line_no}: {which} missing before step {s.seq}: the recorder numbers "
                        f"steps without gaps, so {'a line was' if a == b else 'lines were'} removed from the log")
        return msgs


def read_log(path: str | os.PathLike, *, for_replay: bool = False) -> SessionLog:
    """Read and validate a session log.

    Blank lines are skipped.  With ``for_replay`` every line must carry the fields a replay
    needs (``LOG_SCHEMA``); otherwise only ``seq``, ``cmd`` and ``exit`` (seed-format logs
    are fine for the claims linter).  An empty log gives no steps (the caller decides).

    The trailer line is not a step.  The chain (``prev`` and the trailer) is verified: damage
    does not make the log unreadable, it is in :attr:`SessionLog.chain_findings`.

    Raises:
        PacketLogError: the file cannot be read, a line is not JSON, not valid UTF-8 or not an
            object, a field is missing or mistyped (``5.0`` is not an integer), ``v`` is not
            :data:`FORMAT_VERSION`, or a ``seq`` repeats — naming the file and line.
    """
    path = Path(path)
    try:
        data = read_bytes(path)
    except FileNotFoundError as exc:
        raise PacketLogError("no such session log", path) from exc
    except (OSError, EOFError) as exc:
        raise PacketLogError(f"cannot read session log: {exc}", path) from exc
    schema = _SCHEMAS[for_replay]
    steps: list[LogStep] = []
    seen: dict[int, int] = {}
    entries: list[_Entry] = []
    trailers: list[tuple[int, Any]] = []
    last_line = 0
    for line in iter_lines(data):
        if line.error:
            raise PacketLogError(line.error, path, line.line_no)
        obj = line.obj
        last_line = line.line_no
        if _is_trailer(obj):
            trailers.append((line.line_no, obj))
            continue
        if not isinstance(obj, dict):
            raise PacketLogError(f"expected a JSON object, got {type(obj).__name__}", path, line.line_no)
        err = first_error_at(schema, obj)
        if err is not None:
            where = ".".join(str(p) for p in err[0])
            raise PacketLogError((f"field {where!r}: " if where else "") + err[1], path, line.line_no)
        if isinstance(obj["seq"], bool) or isinstance(obj["exit"], bool):
            raise PacketLogError("seq and exit must be integers, not booleans", path, line.line_no)
        bad = _line_problem(line.raw, obj)
        if bad:
            raise PacketLogError(bad, path, line.line_no)
        if obj["seq"] in seen:
            raise PacketLogError(f"seq {obj['seq']} repeats (first on line {seen[obj['seq']]})", path, line.line_no)
        seen[obj["seq"]] = line.line_no
        steps.append(LogStep(obj["seq"], obj["cmd"], obj["exit"], line.line_no, obj))
        entries.append(_Entry(line.line_no, obj, entry_digest(obj)))
    steps.sort(key=lambda s: s.seq)
    chain, chained_from, findings = _verify_chain(entries, trailers, last_line)
    return SessionLog(path, tuple(steps), chain, chained_from, findings)


def _line_problem(raw: bytes, obj: dict) -> str | None:
    """What the schema lets through but a log line must not hold: a non-integer number for an
    integer field (``5.0``) or one beyond 64 bits, another format version, text that was not valid UTF-8, a command
    (or its ``cwd``) holding a lone surrogate or a NUL character."""
    for name in ("seq", "exit", "v"):
        if name in obj and type(obj[name]) is float:
            return f"field {name!r}: {obj[name]!r} is not an integer (write it without a decimal point)"
    for name in ("seq", "exit", "duration_ms", "dirty_files", "out_bytes"):
        v = obj.get(name)
        if type(v) is int and not -(2**63) <= v < 2**63:  # (no recorder writes one; a frame cannot hold it)
            return f"field {name!r}: {v} is out of range (a 64-bit integer)"
    if "v" in obj and obj["v"] != FORMAT_VERSION:
        return (f"field 'v': line format version {obj['v']!r} is not supported; this replaybook reads "
                f"version {FORMAT_VERSION}")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"the line is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
    texts = [obj["cmd"], *(a for a in obj.get("argv") or () if isinstance(a, str))]
    if any("\ufffd" in t for t in texts) and b"\xef\xbf\xbd" not in raw and b"\\ufffd" not in raw.lower():
        return "the command holds a lone surrogate escape (not a character); it cannot be run as recorded"
    cwd = obj.get("cwd")
    if any("\x00" in t for t in texts) or (isinstance(cwd, str) and "\x00" in cwd):
        # (no program can be started with one: the recorder could not have run it)
        return "the command or its folder holds a NUL character (\\u0000); it cannot have been run as recorded"
    return None


def printable(text: str) -> str:
    """``text`` as one line of plain characters, for showing a recorded command to a person.

    Control characters (C0 including CR, LF and tab, DEL, C1 (0x80-0x9f), and the
    Unicode line and paragraph separators) become escapes: ``\\r``, ``\\n``, ``\\t``, else
    ``\\xNN`` / ``\\uNNNN`` (:func:`replaybook._text.one_line`, which also writes out the
    bidirectional controls and zero-width spaces).  A terminal would act on them (a CR returns to
    the start of the line, ESC starts a colour or cursor sequence), so a command shown raw could
    draw text that looks like the replay's own lines.  Everything else is kept as it is.
    """
    return one_line(text)


#: Sub-folder of the output folder holding the redacted outputs before normalization, each as
#: ``<raw_sha>.txt`` (the step's ``raw_sha``); a sub-folder, so the replay's check that every
#: ``*.txt`` of the output folder hashes to its name as a normalized output does not read them.
RAW_DIR = "raw"


def outputs_dir_for(log_path: str | os.PathLike) -> Path:
    """The default side folder for stored outputs: ``session.jsonl`` → ``session.outputs/``."""
    p = Path(log_path)
    return p.with_name(p.stem + ".outputs") if p.suffix else p.with_name(p.name + ".outputs")


def _max_seq(data: bytes) -> int:
    top = 0
    for raw in data.split(b"\n"):
        if b'"seq"' not in raw:
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        seq = obj.get("seq") if isinstance(obj, dict) else None
        if isinstance(seq, int) and not isinstance(seq, bool) and seq > top:
            top = seq
    return top


def _tail(data: bytes) -> tuple[int, int, bytes | None]:
    """``(cut, lines, last)`` of a log's bytes: where its trailer starts (``len(data)`` when its
    last line is no trailer), how many step lines come before that, and the last of them."""
    cut, lines, last = len(data), 0, None
    for _no, start, raw, _pending in iter_text_lines(data):
        if raw.startswith(b'{"trailer"') or b'"trailer"' in raw[:40]:
            try:
                obj = orjson.loads(raw)
            except orjson.JSONDecodeError:
                obj = None
            if _is_trailer(obj):
                cut = start
                continue
        cut, lines, last = len(data), lines + 1, raw
    return cut, lines, last


def append_step(log_path: str | os.PathLike, fields: Mapping[str, Any]) -> int:
    """Append one step to the log, assigning its ``seq`` under an exclusive lock.

    The line gets ``prev``, the digest of the log's last step line (``null`` in a new log), and
    the log's trailer is replaced by one that counts and seals the new line (see the module
    docstring).  Interrupted between the two, the log is left without a trailer, which the next
    append writes again.

    Args:
        log_path: the session log (created, with its folder, if missing).
        fields: the line's fields except ``seq`` and ``prev`` (any given are replaced).

    Returns:
        the assigned ``seq`` (highest in the file + 1; 1 for a new log).

    Raises:
        PacketLogError: the log cannot be created, locked or written.
    """
    path = Path(log_path)
    line = {"seq": 0, **{k: v for k, v in fields.items() if k not in ("seq", "prev")}}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError as exc:
        raise PacketLogError(f"cannot open session log for appending: {exc}", path) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        data = os.pread(fd, size, 0) if size else b""
        while len(data) < size:  # pread may return short reads
            more = os.pread(fd, size - len(data), len(data))
            if not more:
                break
            data += more
        seq = _max_seq(data) + 1
        line["seq"] = seq
        cut, lines, last = _tail(data)
        line["prev"] = line_digest(last) if last is not None else None
        written = _json.dumps(line)
        blob = written + b"\n" + _json.dumps(trailer_line(lines + 1, line_digest(written))) + b"\n"
        if cut < len(data):
            os.ftruncate(fd, cut)  # the old trailer: the new one replaces it
            data = data[:cut]
        if data and not data.endswith(b"\n"):
            blob = b"\n" + blob  # never glue onto an unterminated line
        view = memoryview(blob)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
        return seq
    except OSError as exc:
        raise PacketLogError(f"cannot append to session log: {exc}", path) from exc
    finally:
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


# ----- the digest chain -------------------------------------------------------------------------

#: Kinds of damage :func:`read_log` finds in a chained log (:class:`ChainFinding`).
CHAIN_KINDS = ("lines_removed", "renumbered", "line_edited", "missing_trailer", "truncated", "not_recorded")

_TRAILER_VERSION = 1
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def entry_digest(obj: Any) -> str:
    """The chain digest of one parsed log line: ``sha256:<hex>`` of its canonical JSON — keys
    sorted, no whitespace, non-ASCII characters escaped (Python's ``json.dumps(obj,
    sort_keys=True, separators=(",", ":"))``).  Formatting (spaces, key order) does not change it;
    any value does.  The next line's ``prev`` and the trailer's ``last`` hold it."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def line_digest(raw: bytes) -> str:
    """:func:`entry_digest` of a raw log line, or ``sha256:<hex>`` of its bytes when it is not
    JSON (such a line makes the log unreadable anyway)."""
    try:
        return entry_digest(_json.loads(raw))
    except (ValueError, UnicodeDecodeError):
        return "sha256:" + hashlib.sha256(raw).hexdigest()


def _is_trailer(obj: Any) -> bool:
    return isinstance(obj, dict) and "trailer" in obj and "seq" not in obj


def trailer_line(lines: int, last: str) -> dict:
    """The trailer the recorder keeps as the log's last line: ``{"trailer": {"v": 1, "lines": N,
    "last": "sha256:…"}}`` — how many step lines the log holds and the :func:`entry_digest` of the
    last one.  Each append replaces it."""
    return {"trailer": {"v": _TRAILER_VERSION, "lines": lines, "last": last}}


@dataclass(frozen=True)
class ChainFinding:
    """Damage to a chained log: lines removed, renumbered or edited, its end cut off.

    Attributes:
        kind: one of :data:`CHAIN_KINDS`.
        line_no: the 1-based line of the log where it shows.
        message: what happened, in words (without the file and line; :meth:`where` adds them).
    """

    kind: str
    line_no: int
    message: str

    def where(self, path: str | os.PathLike) -> str:
        """``<path>:<line>: <message>``."""
        return f"{path}:{self.line_no}: {self.message}"


@dataclass(frozen=True)
class _Entry:
    line_no: int
    obj: dict
    digest: str


#: How many digests the search for renumbered lines may compute in one log, in all.
_RENUMBER_BUDGET = 200_000


def _renumbered_from(entry: _Entry, digest: str, top: int, hint: int, budget: list[int]) -> int | None:
    """The seq ``entry`` had when the recorder wrote it, when only its seq changed since: the seq
    ``s`` (1..``top``) for which the line with ``seq`` = ``s`` has ``digest``.  Tried first: the
    shift ``hint`` its neighbour had, then seqs outward from its own; ``budget[0]`` digests at
    most (spent here), so a long renumbered log stays quick to read."""
    seq = entry.obj.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or budget[0] <= 0:
        return None
    sentinel = -918273645
    text = json.dumps({**entry.obj, "seq": sentinel}, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    mark = f'"seq":{sentinel}'
    if text.count(mark) != 1:
        return None
    head, tail = (part.encode("ascii") for part in text.split(mark))
    want = digest.removeprefix("sha256:")
    tried: set[int] = set()
    outward = itertools.chain.from_iterable((seq + d, seq - d) for d in range(1, top + 1))
    for s in itertools.chain([seq + hint] if hint else [], outward):
        if not 1 <= s <= top or s == seq or s in tried:
            if s > top and seq - (s - seq) < 1:
                break
            continue
        tried.add(s)
        budget[0] -= 1
        if hashlib.sha256(head + f'"seq":{s}'.encode() + tail).hexdigest() == want:
            return s
        if budget[0] <= 0:
            return None
    return None


def _seq_text(a: int, b: int) -> str:
    return f"seq {a}" if a == b else f"seq {a} to {b}"


def _verify_chain(entries: list[_Entry], trailers: list[tuple[int, Any]],
                  last_line: int) -> tuple[str, int | None, tuple[ChainFinding, ...]]:
    """``(status, chained_from, findings)`` for a log's step lines (file order) and trailers."""
    start = next((i for i, e in enumerate(entries) if "prev" in e.obj), None)
    if start is None and not trailers:
        return "unchained", None, ()
    found: list[ChainFinding] = []
    seqs = [e.obj.get("seq") if isinstance(e.obj.get("seq"), int) else 0 for e in entries]
    final = trailers[-1] if trailers and trailers[-1][0] == last_line else None
    body = final[1].get("trailer") if final else None
    ok_trailer = (isinstance(body, dict) and body.get("v") == _TRAILER_VERSION
                  and isinstance(body.get("lines"), int) and not isinstance(body.get("lines"), bool)
                  and isinstance(body.get("last"), str) and _DIGEST.fullmatch(body["last"]) is not None)
    sealed = body["lines"] if ok_trailer else len(entries)
    top = min(max(seqs + [0]) + max(0, sealed - len(entries)) + 1024, 200_000)
    # the seq each line had when written, where a successor's prev (or the trailer) tells it
    breaks: list[int] = []
    original: dict[int, int] = {}
    budget, shift = [_RENUMBER_BUDGET], 0
    for i in range(start or 0, len(entries)):
        e = entries[i]
        if "prev" not in e.obj:
            if start is not None:
                found.append(ChainFinding("not_recorded", e.line_no, f"line {e.line_no} (step {seqs[i]}) has no "
                                          f"prev, though the log is chained from line {entries[start].line_no}: "
                                          f"the recorder did not write it, or its prev was removed"))
            else:  # no line has a prev, yet a trailer is there: only the recorder writes one
                found.append(ChainFinding("not_recorded", e.line_no, f"line {e.line_no} (step {seqs[i]}) has no "
                                          f"prev, though the log holds a trailer (line {trailers[-1][0]}), which "
                                          f"only the recorder writes, and it writes a prev on every line: the "
                                          f"prevs were removed, or the trailer was added"))
            continue
        prev = e.obj["prev"]
        if prev == (entries[i - 1].digest if i else None):
            continue
        if prev is None:
            found.append(ChainFinding("not_recorded", e.line_no, f"line {e.line_no} (step {seqs[i]}) starts a chain "
                                      f"of its own (prev null) after line {entries[i - 1].line_no}: two logs were "
                                      f"joined, or the lines before it were added"))
        elif i == 0:
            what = f"{_seq_text(1, seqs[0] - 1)} missing: " if seqs[0] > 1 else ""
            found.append(ChainFinding("lines_removed", e.line_no, f"line {e.line_no} (step {seqs[0]}) is chained to "
                                      f"a line before it, and there is none: {what}the first line(s) of the log "
                                      f"were removed"))
        else:
            breaks.append(i)
            was = _renumbered_from(entries[i - 1], prev, top, shift, budget) if isinstance(prev, str) else None
            if was is not None:
                original[i - 1], shift = was, was - seqs[i - 1]
    last_digest = entries[-1].digest if entries else None
    if ok_trailer and entries and body["last"] != last_digest:
        was = _renumbered_from(entries[-1], body["last"], top, shift, budget)
        if was is not None:
            original[len(entries) - 1] = was
    for i, was in sorted(original.items()):
        e = entries[i]
        by = (f"line {entries[i + 1].line_no}'s prev" if i + 1 < len(entries) else f"the trailer on line {final[0]}")
        found.append(ChainFinding("renumbered", e.line_no, f"line {e.line_no} holds step {seqs[i]}, but the recorder "
                                  f"wrote it as step {was} ({by} says so): the log was renumbered, so [seq:N] "
                                  f"markers may name other steps than were recorded"))
    for i in breaks:
        if i - 1 in original:
            continue  # explained: the line before was renumbered, nothing else changed
        e, before = entries[i], entries[i - 1]
        was_before, was_here = original.get(i - 1, seqs[i - 1]), original.get(i, seqs[i])
        if was_here - was_before > 1:
            found.append(ChainFinding("lines_removed", e.line_no, f"{_seq_text(was_before + 1, was_here - 1)} "
                                      f"missing before line {e.line_no} (step {seqs[i]}): its prev is not the digest "
                                      f"of line {before.line_no}, so the line(s) recorded between them were removed"))
        else:
            found.append(ChainFinding("line_edited", before.line_no, f"line {before.line_no} (step {seqs[i - 1]}) is "
                                      f"not the line the recorder wrote before line {e.line_no} (whose prev is not "
                                      f"its digest): it was edited, or lines between them were removed and the "
                                      f"rest renumbered"))
    for line_no, obj in trailers:
        if final is None or line_no != final[0]:
            after = [e.line_no for e in entries if e.line_no > line_no]
            if after:
                found.append(ChainFinding("not_recorded", after[0], f"line {after[0]} comes after the trailer on "
                                          f"line {line_no}: the recorder did not append it (two logs joined?)"))
    if entries and start is not None and final is None and not any(f.kind == "not_recorded" and "trailer" in
                                                                    f.message for f in found):
        found.append(ChainFinding("missing_trailer", entries[-1].line_no, f"the log ends at line "
                                  f"{entries[-1].line_no} without the recorder's trailer: the lines after it were cut "
                                  f"off, or its last recording was interrupted (recording a step writes one)"))
    elif final is not None and not ok_trailer:
        found.append(ChainFinding("truncated", final[0], f"the trailer on line {final[0]} is not one the recorder "
                                  f"writes ({{\"trailer\": {{\"v\": 1, \"lines\": N, \"last\": \"sha256:…\"}}}})"))
    elif final is not None and entries:
        n, last = body["lines"], body["last"]
        if n > len(entries) and last != last_digest and len(entries) - 1 not in original:
            found.append(ChainFinding("truncated", final[0], f"the trailer on line {final[0]} seals {n} lines and "
                                      f"the log holds {len(entries)}: the last {n - len(entries)} line(s) were cut "
                                      f"from its end (line {entries[-1].line_no} is not the last one recorded)"))
        elif n != len(entries):
            lost = "removed" if n > len(entries) else "added"
            found.append(ChainFinding("lines_removed" if n > len(entries) else "not_recorded", final[0],
                                      f"the trailer on line {final[0]} counts {n} lines and the log holds "
                                      f"{len(entries)}: {abs(n - len(entries))} line(s) were {lost}"))
        elif last != last_digest and len(entries) - 1 not in original:
            found.append(ChainFinding("line_edited", entries[-1].line_no, f"line {entries[-1].line_no} (step "
                                      f"{seqs[-1]}) is not the last line the recorder wrote (the trailer on line "
                                      f"{final[0]} seals another digest): it was edited"))
    elif final is not None and body["lines"]:  # (a trailer and no step: every line it seals was removed)
        found.append(ChainFinding("lines_removed", final[0], f"the trailer on line {final[0]} counts "
                                  f"{body['lines']} lines and the log holds none: every recorded step was removed"))
    found.sort(key=lambda f: (f.line_no, CHAIN_KINDS.index(f.kind)))
    chained_from = entries[start].line_no if start is not None else None
    return ("damaged" if found else "chained"), chained_from, tuple(found)
