"""The session log (``session.jsonl``): one JSON object per recorded command.

Each line is declared field by field in :data:`LOG_FIELDS` (name, JSON type, meaning with
units); :data:`LOG_SCHEMA` (JSON Schema 2020-12) is built from it.  The first five fields are
the seed article's format and the only ones the claims linter needs (``seq``, ``cmd``,
``exit``); a replay needs them all.  Unknown fields are allowed (newer recorders).

Appending is safe under concurrent writers: :func:`append_step` takes an exclusive
``fcntl.flock`` on the log, assigns ``seq`` = highest seq in the file + 1 *under the lock*,
writes the line with one ``write`` on an ``O_APPEND`` descriptor, fsyncs, and unlocks.
"""

from __future__ import annotations

import fcntl
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import orjson

from .. import _json
from .._schema import first_error_at

from .._jsonl import iter_lines, read_bytes
from .errors import PacketLogError

__all__ = [
    "FORMAT_VERSION",
    "LogField",
    "LOG_FIELDS",
    "LOG_SCHEMA",
    "MINIMAL_FIELDS",
    "REPLAY_FIELDS",
    "LogStep",
    "SessionLog",
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
    LogField("excluded", "array", "root-relative paths left out of `tree`: the log and its output folder"),
    LogField("norm", "string", "normalization rules version: `1`, or `1+project.<sha12>` with project rules"),
    LogField("norm_fired", "array", "names of the normalization rules that changed this output"),
    LogField("redacted", "array", "what was redacted from cmd or output: `env:NAME` or a token kind (never values)"),
    LogField("out_bytes", "integer", "size of the raw merged output in bytes"),
    LogField("stored", "boolean", "the normalized output is in the output folder as `<out_sha>.txt`"),
    LogField("recorder", "string", "the replaybook version that wrote the line"),
)

#: Fields every line must have (the claims linter needs no more).
MINIMAL_FIELDS = ("seq", "cmd", "exit")
#: Fields a replay needs.
REPLAY_FIELDS = ("seq", "cmd", "exit", "out_sha", "v", "argv", "shell", "cwd", "commit", "tree", "dirty",
                 "excluded", "norm")

_EXTRA: dict[str, dict] = {
    "seq": {"minimum": 1},
    "out_sha": {"pattern": _HEX64},
    "commit": {"pattern": "^[0-9a-f]{40}([0-9a-f]{24})?$"},
    "tree": {"pattern": "^sha256:[0-9a-f]{64}$"},
    "argv": {"items": {"type": "string"}, "minItems": 1},
    "excluded": {"items": {"type": "string"}},
    "norm_fired": {"items": {"type": "string"}},
    "redacted": {"items": {"type": "string"}},
    "duration_ms": {"minimum": 0},
    "out_bytes": {"minimum": 0},
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
    """A read session log: its path and its steps in ``seq`` order."""

    path: Path
    steps: tuple[LogStep, ...]

    def by_seq(self) -> dict[int, LogStep]:
        """``{seq: step}``."""
        return {s.seq: s for s in self.steps}

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
        """One message per gap in seq (see :meth:`gaps`), naming the file and line."""
        msgs = []
        for a, b, s in self.gaps():
            which = f"seq {a}" if a == b else f"seq {a} to {b}"
            msgs.append(f"{self.path}:{s.line_no}: {which} missing before step {s.seq}: the recorder numbers "
                        f"steps without gaps, so {'a line was' if a == b else 'lines were'} removed from the log")
        return msgs


def read_log(path: str | os.PathLike, *, for_replay: bool = False) -> SessionLog:
    """Read and validate a session log.

    Blank lines are skipped.  With ``for_replay`` every line must carry the fields a replay
    needs (``LOG_SCHEMA``); otherwise only ``seq``, ``cmd`` and ``exit`` (seed-format logs
    are fine for the claims linter).  An empty log gives no steps (the caller decides).

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
    for line in iter_lines(data):
        if line.error:
            raise PacketLogError(line.error, path, line.line_no)
        obj = line.obj
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
    steps.sort(key=lambda s: s.seq)
    return SessionLog(path, tuple(steps))


def _line_problem(raw: bytes, obj: dict) -> str | None:
    """What the schema lets through but a log line must not hold: a non-integer number for an
    integer field (``5.0``), another format version, text that was not valid UTF-8."""
    for name in ("seq", "exit", "v"):
        if name in obj and type(obj[name]) is float:
            return f"field {name!r}: {obj[name]!r} is not an integer (write it without a decimal point)"
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
    return None


_NAMED_ESCAPES = {"\r": "\\r", "\n": "\\n", "\t": "\\t"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text: str) -> str:
    """``text`` as one line of plain characters, for showing a recorded command to a person.

    Control characters (C0 including CR, LF and tab, DEL, C1 (0x80-0x9f), and the
    Unicode line and paragraph separators) become escapes: ``\\r``, ``\\n``, ``\\t``, else
    ``\\xNN`` / ``\\uNNNN``.  A terminal would act on them (a CR returns to the start of the
    line, ESC starts a colour or cursor sequence), so a command shown raw could draw text that
    looks like the replay's own lines.  Everything else is kept as it is.
    """
    def esc(m: re.Match[str]) -> str:
        ch = m.group(0)
        return _NAMED_ESCAPES.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")
    return _CONTROL.sub(esc, text)


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


def append_step(log_path: str | os.PathLike, fields: Mapping[str, Any]) -> int:
    """Append one step to the log, assigning its ``seq`` under an exclusive lock.

    Args:
        log_path: the session log (created, with its folder, if missing).
        fields: the line's fields except ``seq`` (any ``seq`` given is replaced).

    Returns:
        the assigned ``seq`` (highest in the file + 1; 1 for a new log).

    Raises:
        PacketLogError: the log cannot be created, locked or written.
    """
    path = Path(log_path)
    line = {"seq": 0, **{k: v for k, v in fields.items() if k != "seq"}}
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
        blob = _json.dumps(line) + b"\n"
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

