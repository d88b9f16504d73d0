"""The door's call log → the ``calls`` frame.

The *door* is the MCP gateway that decides each ``tools/call`` (and ``resources/read``) and,
before answering, appends one JSON line to ``<log-root>/<agent>/<session>.jsonl``: time, tool,
arguments, object, decision, rule, rows, bytes — never the data.  The format is replaybook's own,
version 1, shipped as a JSON Schema: ``replaybook/schemas/door-call-log.v1.json``
(:func:`door_schema`).  Every line is validated against it; a line that fails goes to the
quarantine with its file, line number and the schema's complaint, and the rest of the file loads.

Client tool-use ids: Claude Code sends its tool-use id in the MCP request's
``params._meta["claudecode/toolUseId"]``; a door that logs ``_meta`` as ``meta`` lets the join
match exactly.  Keys recognised for ``meta_call_id``: :data:`META_CALL_ID_KEYS`.  A tool-use id
is text (Claude Code's ``toolu_…``, Codex's ``call_…``): a value of another type under one of
those keys (``12345``, ``true``, an object) is not read as an id — no transcript's id could equal
it — and the file's ``inputs`` entry gets a note naming the line, the key and the value ("line 9:
meta 'claudecode/toolUseId' is not text (12345): the call cannot be joined by tool-use id").

Unknown keys: the schema allows keys it does not name (a newer door's stay readable), so a line
with one is loaded, without it; the file's ``inputs`` entry gets a note naming each such key,
its lines and the known key it is probably a misspelling of ("unknown keys not read: 'objet'
(did you mean 'object'?) on line 3").  A misspelt key is otherwise silent: ``objet`` leaves
``object`` empty.

Times without a time zone: ``ts`` and ``ts_end`` are RFC 3339 date-times, which carry an offset
(``Z`` or ``±HH:MM``).  A value without one (``2026-10-05T11:00:08.300``) is read as UTC, as
before, and the line loads — but the file's ``inputs`` entry gets a note naming its lines and a
value ("ts without a time zone on line 2 ('2026-10-05T11:00:08.300'): read as UTC; RFC 3339
requires an offset — if the door wrote local time its calls are off by the zone's offset"), so a
door that wrote local time is seen before its calls are joined hours off.  Quarantining them
would drop calls that are there; the note keeps them and says what was assumed.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any, Iterable

from .._schema import first_error, package_schema
from ..door.calllog import META_CALL_ID_KEYS as _META_CALL_ID_KEYS
from ..canonical import canonical_args
from .._jsonl import (_count_lines, expand_paths, iter_objects, lines_words, quarantine_row, read_source,
                      sample_objects, zoneless_at)
from ..frames import QUARANTINE, LoadResult
from . import _parallel
from .registry import Source, register

__all__ = ["load_door", "door_schema", "sniff", "META_CALL_ID_KEYS", "meta_call_id", "zoneless_notes"]

#: ``meta`` keys holding a client's tool-use id, in order of preference (the door keeps them
#: when the rest of a ``_meta`` is too large to log).
META_CALL_ID_KEYS = _META_CALL_ID_KEYS

LOADER = "door"


def door_schema() -> dict:
    """The door call log's JSON Schema (draft 2020-12) as a dict."""
    return package_schema("door-call-log.v1.json")


_INT64 = 2**63
_STR_OR_NONE = (str, type(None))
_INT_OR_NONE = (int, type(None))
_KNOWN_FAST = frozenset({"ts", "ts_end", "seq", "session", "agent", "server", "tool", "arguments",
                         "object", "decision", "rule", "rows", "bytes", "meta", "error", "v",
                         "duration_ms", "response_digest", "object_digest", "correlation", "method",
                         "approval", "objects", "arguments_bytes", "arguments_digest", "arguments_invalid",
                         "message_bytes", "meta_bytes", "meta_digest"})
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_APPROVALS = frozenset({None, "approved", "declined", "cancelled", "timed_out", "unavailable", "failed"})


def _is_call_record(o: dict) -> bool:
    """Is ``o`` a call log line (``session``, ``tool`` and ``ts``), not an object nested in one
    (``arguments``, ``meta``)?  Decides where a line glued to a torn one begins
    (:func:`replaybook._jsonl.split_torn`)."""
    return "session" in o and "tool" in o and "ts" in o


def _quick_ok(o: dict) -> bool:
    """Fast path: True when a line is certainly valid (the common shape); else run the schema."""
    if not _KNOWN_FAST.issuperset(o):
        return False
    t = o.get("ts")
    if type(t) is not str or len(t) < 20 or t[4] != "-" or t[10] != "T":
        return False
    if o.get("decision") not in ("allow", "deny", "ask"):
        return False
    s, tool = o.get("session"), o.get("tool")
    if type(s) is not str or not s or type(tool) is not str or not tool:
        return False
    q = o.get("seq", 0)
    if type(q) is not int or not 0 <= q < _INT64 or type(o.get("arguments") or {}) is not dict:
        return False
    if type(o.get("meta") or {}) is not dict:
        return False
    r, b = o.get("rows"), o.get("bytes")
    if type(r) not in _INT_OR_NONE or type(b) not in _INT_OR_NONE or not (0 <= (r or 0) < _INT64) \
            or not (0 <= (b or 0) < _INT64):
        return False
    for k in ("agent", "server", "object", "rule", "error", "ts_end", "correlation"):
        if type(o.get(k)) not in _STR_OR_NONE:
            return False
    a = o.get("approval")
    if type(a) not in _STR_OR_NONE or a not in _APPROVALS:  # (a list or an object is no answer, and unhashable)
        return False
    objs = o.get("objects")
    if objs is not None and (type(objs) is not list or not all(type(x) is str for x in objs)):
        return False
    if "v" in o and (o["v"] != 1 or type(o["v"]) is not int):
        return False
    if "method" in o and type(o["method"]) is not str:
        return False
    d = o.get("duration_ms")
    if d is not None and (type(d) not in (int, float) or not d >= 0):
        return False
    for k in ("response_digest", "object_digest", "arguments_digest", "meta_digest"):
        v = o.get(k)
        if v is not None and (type(v) is not str or not _DIGEST.fullmatch(v)):
            return False
    for k in ("arguments_bytes", "message_bytes", "meta_bytes"):
        v = o.get(k)
        if v is not None and (type(v) is not int or not 0 <= v < _INT64):
            return False
    return True  # (arguments_invalid: any JSON value)


def _schema_error(o: object) -> str | None:
    err = first_error(door_schema(), o)
    if err is not None and isinstance(o, dict):
        # a ts / ts_end without a time zone is read as UTC and noted (zoneless_notes), whether or
        # not it has a fraction of a second: the schema's date-time wants the zone
        zoned = {k: v + "Z" for k in ("ts", "ts_end") if isinstance(v := o.get(k), str) and _zoneless_at([v])}
        if zoned and first_error(door_schema(), {**o, **zoned}) is None:
            return None
    return None if err is None else f"does not match door-call-log v1 {err}"


def meta_call_id(meta: Any) -> str | None:
    """The client tool-use id in a request's ``_meta`` object: the first non-empty string under
    one of :data:`META_CALL_ID_KEYS`; ``None`` when there is none or ``meta`` is not an object."""
    if not isinstance(meta, dict):
        return None
    for k in META_CALL_ID_KEYS:
        v = meta.get(k)
        if isinstance(v, str) and v:
            return v
    return None


def _log_name(path: Path) -> bool:
    """Folder walks read ``*.jsonl`` and gzip'd ``*.jsonl.gz`` files only (any case: ``S.JSONL.GZ``)."""
    return path.name.lower().endswith((".jsonl", ".jsonl.gz"))


def load_door(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load door call logs into the ``calls`` frame.

    Args:
        paths: log files and/or log roots (folders are walked for ``*.jsonl`` and ``*.jsonl.gz``,
            in any case, as ``replaybook load calls`` takes them; gzip recognised by magic bytes).

    Returns:
        :class:`~replaybook.frames.LoadResult` with ``frame`` shaped by
        :data:`~replaybook.frames.CALLS` (one row per valid line, sorted by ``door_session``,
        ``ts``, ``seq``; ``ts``/``ts_end`` UTC, ``duration_ms`` in milliseconds, ``arguments``
        the parsed dict and ``args_key`` its :func:`~replaybook.canonical.canonical_args` text —
        ``{}`` when the line has no ``arguments``, but ``None`` and NA when they are ``null``: the
        door did not log them, and says what instead in ``arguments_bytes`` + ``arguments_digest``
        (too large), ``arguments_invalid`` (not an object; read as canonical JSON text) or
        ``message_bytes`` (a line it could not read as a call), so the join never agrees on them),
        ``quarantine`` rows for lines that are not JSON objects or fail the schema (file, line
        number, the schema's complaint), and one ``inputs`` entry per file (with its SHA-256).
        ``agent`` falls back to the parent folder's name (``<agent>/<session>.jsonl``) when a
        line has none; a ``ts``/``ts_end`` without a time zone is read as UTC and its file's
        ``inputs`` entry gets a note naming those lines (:func:`zoneless_notes`); a line whose ``ts`` is not a real date-time (or lies outside 1677–2262)
        is quarantined, and so is one whose ``arguments`` cannot be canonicalised (nested deeper
        than the JSON parsers' 1,024 levels: "nested too deeply").

    Files whose every line has the common, certainly valid shape are decoded in one call
    (:mod:`._door_fast`, msgspec); any other file is read line by line; both give the same rows.

    Raises:
        InputError: a path does not exist or a file cannot be read (gzip corrupt, permission).
    """
    return _load(paths, fast=True)


def _load(paths: str | Path | Iterable[str | Path], *, fast: bool) -> LoadResult:
    """:func:`load_door`; with ``fast=False`` every file is read line by line (the reference the
    fast path is tested against)."""
    import gc

    from . import _door_fast

    files = expand_paths(paths, accept=_log_name)
    quarantine: list[dict] = []
    inputs: list[dict] = []
    blocks = []

    def read_group(group: list[Path]) -> tuple[list[dict], list[dict], Any]:
        found: list[dict] = []
        put_aside: list[dict] = []
        cols = _door_fast.Columns()
        for path in group:
            _load_file(path, fast, cols, put_aside, found)
        return found, put_aside, cols.finish()

    # a large load is shared with helper processes, each group read whole on one side (the
    # per-line path included: its quarantine rows travel with the group's rows)
    workers = _parallel.helpers() if fast else 0
    # millions of short-lived containers: the cyclic GC's passes over them find nothing
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _kind, (found, put_aside, block) in _parallel.front_back(
                _parallel.groups(files, workers), read_group, read_group, workers,
                lambda delivered: delivered):  # unpickled as soon as found, between groups read here
            inputs.extend(found)
            quarantine.extend(put_aside)
            blocks.append(block)
        frame = _door_fast.frame(_door_fast.merge(blocks), quarantine, LOADER)
    finally:
        if gc_was_enabled:
            gc.enable()
    frame = _drop_repeated_calls(frame, quarantine, inputs)
    _note_ends_before_start(frame, inputs)
    return LoadResult(frame=frame, quarantine=QUARANTINE.build(quarantine), inputs=inputs)


def _note_ends_before_start(frame: Any, inputs: list[dict]) -> None:
    """A note in each file's ``inputs`` entry naming the lines whose ``ts_end`` is before their
    ``ts`` and that logged no ``duration_ms``: the call is kept (it was decided and logged), but no
    duration is derived from the two — a negative one would be a wrong number, not a measurement."""
    back = ((frame["ts_end"] < frame["ts"]).fillna(False) & frame["duration_ms"].isna()).to_numpy(bool)
    if not back.any():
        return
    lines: dict[str, list[int]] = {}
    for f, n in zip(frame["source_file"].to_numpy(object)[back], frame["line_no"].to_numpy(object)[back]):
        lines.setdefault(str(f), []).append(int(n))
    for info in inputs:
        at = lines.get(str(info.get("path")))
        if at:
            info.setdefault("notes", []).append(
                f"ts_end before ts on {lines_words(sorted(at))} (a clock set back during the call?): "
                "duration_ms left NA")


#: the columns of a call that do not say where it was read from: two rows equal on all of them
#: are one call logged twice
_WHERE = frozenset({"source_file", "line_no"})


def _same(a: Any, b: Any) -> bool:
    import pandas as pd

    a_na = a is None or (not isinstance(a, (dict, list, tuple)) and pd.isna(a))
    b_na = b is None or (not isinstance(b, (dict, list, tuple)) and pd.isna(b))
    return a_na and b_na if a_na or b_na else bool(a == b)


def _drop_repeated_calls(frame: Any, quarantine: list[dict], inputs: list[dict]) -> Any:
    """``frame`` (sorted by door session, time, seq) without the rows that repeat an earlier row
    in every column but where it was read — a line a log shipper delivered twice, or two copies
    of one log merged: one call, not two.  Each dropped row becomes a ``duplicate`` quarantine
    row naming its file and line and the place of the row it repeats, and counts in its file's
    ``inputs`` entry as ``duplicates``.  Such rows are adjacent in that order, so only runs of
    equal (door session, time, seq) are compared field by field."""
    import numpy as np
    import pandas as pd

    if len(frame) < 2:
        return frame
    sess = frame["door_session"].to_numpy(dtype=object, na_value=None)
    ts = frame["ts"].to_numpy(dtype="datetime64[ns]").view("int64")
    seq = frame["seq"].to_numpy(dtype="float64", na_value=np.nan)
    same_seq = (seq[1:] == seq[:-1]) | (np.isnan(seq[1:]) & np.isnan(seq[:-1]))
    run = np.flatnonzero((sess[1:] == sess[:-1]) & (ts[1:] == ts[:-1]) & same_seq) + 1
    if not len(run):
        return frame
    cols = [c for c in frame.columns if c not in _WHERE]
    drop: list[int] = []
    kept_of: dict[int, list[int]] = {}
    rows = set(run.tolist())
    for i in run.tolist():
        first = i - 1
        while first in rows:  # the run's first row
            first -= 1
        candidates = [first] + [k for k in kept_of.get(first, [])]
        match = next((k for k in candidates
                      if all(_same(frame[c].iat[i], frame[c].iat[k]) for c in cols)), None)
        if match is None:
            kept_of.setdefault(first, []).append(i)
            continue
        drop.append(i)
        where = (f"{frame['source_file'].iat[match]}:{frame['line_no'].iat[match]}"
                 if frame["source_file"].iat[i] != frame["source_file"].iat[match]
                 else f"line {frame['line_no'].iat[match]}")
        quarantine.append({"source_file": frame["source_file"].iat[i], "line_no": frame["line_no"].iat[i],
                           "byte_offset": pd.NA, "kind": "duplicate", "loader": LOADER,
                           "error": f"repeats the call logged at {where} in every field (door session, seq, "
                                    "time, tool, arguments, decision …): one call logged twice, counted once"})
    if not drop:
        return frame
    per_file: dict[str, int] = {}
    for i in drop:
        f = str(frame["source_file"].iat[i])
        per_file[f] = per_file.get(f, 0) + 1
    for info in inputs:
        n = per_file.get(str(info.get("path")))
        if n:
            info["duplicates"] = info.get("duplicates", 0) + n
    keep = np.ones(len(frame), bool)
    keep[drop] = False
    return frame[keep].reset_index(drop=True)


#: the ``format`` of a legal hold's file beside its session (``replaybook hold``)
HOLD_FORMAT = "door legal hold"


def _list_hold(path: Path, info: dict) -> None:
    """A legal hold beside the session file ``path`` (``<session>.hold``, written by
    ``replaybook hold``; :func:`replaybook.door.retention.hold_path`), listed in
    ``info["side_files"]`` (format :data:`HOLD_FORMAT`) so the incident's inputs name it and its
    ``.sha256`` file checks it: the walk had passed it over as a side file, and nothing listed it.
    It holds no calls and is not read as any."""
    from .._jsonl import read_side_file

    if not path.name.endswith(".jsonl"):
        return
    hold = path.with_name(path.name[: -len(".jsonl")] + ".hold")
    if not hold.is_file():
        return
    _, entry = read_side_file(hold, path, HOLD_FORMAT)
    if entry["note"] is None:
        entry["note"] = "a legal hold on this session (replaybook hold): not a call log, holds no calls"
    info.setdefault("side_files", []).append(entry)


def _load_file(path: Path, fast: bool, cols: Any, quarantine: list[dict], inputs: list[dict]) -> None:
    """Read one file into ``cols`` (a ``_door_fast.Columns``): the fast way when ``fast`` and
    it can, else line by line; its ``inputs`` entry appended to ``inputs``."""
    from . import _door_fast

    data, info = read_source(path, LOADER, "door log", count_lines=False, holds="call's arguments or object")
    inputs.append(info)
    _list_hold(path, info)
    default_agent = path.parent.name or None
    spath = str(path)
    if not (fast and _door_fast.decode_file(data, info, spath, default_agent, cols)):
        # (the fast path takes no file with an unknown key or a meta id that is not text: the
        # notes on those come from here alone)
        if info["lines"] is None:
            info["lines"] = _count_lines(data)
        notes = _read_lines(path, data, spath, default_agent, quarantine, cols)
        if notes:
            info.setdefault("notes", []).extend(notes)


def _value_words(v: Any) -> str:
    """A logged value as JSON text, cut at 60 characters."""
    import json

    try:
        text = json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(v)
    return text if len(text) <= 60 else text[:59] + "…"


def _file_notes(unknown: dict[str, list[int]], bad_ids: dict[str, list[tuple[int, Any, bool]]]) -> list[str]:
    """The notes :func:`_read_lines` gives a file: the unknown keys (each with its lines and the
    known key it is closest to, :func:`difflib.get_close_matches`), then the ``meta`` id keys
    whose value is not text."""
    notes = []
    if unknown:
        parts = []
        for key, lines in unknown.items():
            close = difflib.get_close_matches(key, sorted(_KNOWN_FAST), n=1, cutoff=0.75)
            parts.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else "") + f" on {lines_words(lines)}")
        notes.append("unknown keys not read: " + "; ".join(parts) + " — the schema allows keys it does not name "
                     "(a newer door's), so those lines are loaded without them")
    for key, seen in bad_ids.items():
        lines = [ln for ln, _, _ in seen]
        values = list(dict.fromkeys(_value_words(v) for _, v, _ in seen))
        shown = ", ".join(values[:3]) + (", …" if len(values) > 3 else "")
        unjoined = sum(1 for _, _, other in seen if not other)
        if unjoined == len(seen):
            why = f"the call{'' if len(seen) == 1 else 's'} cannot be joined by tool-use id"
        elif not unjoined:
            why = "the tool-use id is read from another meta key"
        else:
            why = f"{unjoined:,} of those calls cannot be joined by tool-use id (the others' id is read from another key)"
        notes.append(f"{lines_words(lines)}: meta {key!r} is not text ({shown}): {why}")
    return notes


def _zoneless_at(values: Any, fixed: tuple[int, str] | None = None) -> list[int]:
    """Positions of ``values`` (text or ``None``) that are text without a time zone at the end
    (:func:`~replaybook._jsonl.zoneless_at`).  ``fixed`` (``(width, joined text)`` of the same
    values, when they all have one width) lets the common column — every value ending in ``Z`` —
    be passed over in one count."""
    if fixed is not None and fixed[0] and fixed[1][fixed[0] - 1::fixed[0]].count("Z") * fixed[0] == len(fixed[1]):
        return []
    return zoneless_at(values).tolist()


def zoneless_notes(ts: Any, ts_end: Any, line_nos: Any, *, ts_fixed: tuple[int, str] | None = None,
                   te_fixed: tuple[int, str] | None = None) -> list[str]:
    """The notes on one file's ``ts``/``ts_end`` values (parallel sequences, ``line_nos`` their
    lines) that have no time zone but are read (as UTC): one note per key naming its lines and up
    to three of the values ("ts without a time zone on line 2 ('2026-10-05T11:00:08.300'): read
    as UTC; RFC 3339 requires an offset — if the door wrote local time its calls are off by the
    zone's offset").  Lines whose ``ts`` or ``ts_end`` is not a date-time at all are left out
    (they are quarantined).  ``ts_fixed``/``te_fixed``: see :func:`_zoneless_at`."""
    from .._text import to_utc

    at_ts = _zoneless_at(ts, ts_fixed)
    at_te = [] if te_fixed is None and ts_end.count(None) == len(ts_end) else _zoneless_at(ts_end, te_fixed)
    if not at_ts and not at_te:
        return []
    rows = sorted(set(at_ts) | set(at_te))
    ok_ts = to_utc([ts[i] for i in rows]).notna().tolist()
    ok_te = to_utc([ts_end[i] for i in rows]).notna().tolist()
    loaded = {i for i, a, b in zip(rows, ok_ts, ok_te) if a and (b or ts_end[i] is None)}
    notes = []
    for key, values, at in (("ts", ts, at_ts), ("ts_end", ts_end, at_te)):
        at = [i for i in at if i in loaded]
        if not at:
            continue
        shown = list(dict.fromkeys(values[i] for i in at))
        words = ", ".join(repr(v) for v in shown[:3]) + (", …" if len(shown) > 3 else "")
        notes.append(f"{key} without a time zone on {lines_words([int(line_nos[i]) for i in at])} ({words}): "
                     "read as UTC; RFC 3339 requires an offset — if the door wrote local time its calls are off "
                     "by the zone's offset")
    return notes


def _bad_meta_id(meta: Any) -> tuple[str, Any] | None:
    """The first :data:`META_CALL_ID_KEYS` key of ``meta`` whose value is neither text nor null,
    with that value; ``None`` when there is none."""
    if not isinstance(meta, dict):
        return None
    for k in META_CALL_ID_KEYS:
        v = meta.get(k)
        if v is not None and not isinstance(v, str):
            return k, v
    return None


def _read_lines(path: Path, data: bytes, spath: str, default_agent: str | None, quarantine: list[dict],
                out: Any) -> list[str]:
    """The per-line path: every line of one file parsed and validated on its own, its rows
    added to ``out`` (a ``_door_fast.Columns``), bad lines appended to ``quarantine``.  Returns
    the file's notes: keys the schema does not name, and ``meta`` ids that are not text, on
    lines that were loaded (:func:`_file_notes`)."""
    from ._door_fast import CODED, LISTED, PLAIN

    cols: dict[str, list] = {c: [] for c in CODED + LISTED + PLAIN}
    arg_codes: list[int] = []
    table = out.args
    unknown: dict[str, list[int]] = {}
    bad_ids: dict[str, list[tuple[int, Any, bool]]] = {}
    for line in iter_objects(path, data, LOADER, quarantine, accept=_is_call_record):
        o = line.obj
        quick = _quick_ok(o)
        if not quick:
            err = _schema_error(o)
            if err is not None:
                quarantine.append(quarantine_row(path, line, LOADER, err))
                continue
        args = o.get("arguments", {})  # (absent: a call without arguments; null: not logged, NA)
        which = "arguments"
        try:
            # canonical keys are cached by the arguments' compact JSON: logs repeat arguments a lot
            key = None if args is None else table.key_for(args)
            which = "arguments_invalid"
            invalid = o.get("arguments_invalid")
            if invalid is not None:
                invalid = canonical_args(invalid)
        except (TypeError, RecursionError, ValueError) as exc:  # not JSON-writable, or nested past canonical_args
            quarantine.append(quarantine_row(path, line, LOADER, f"{which} cannot be canonicalised: {exc}"))
            continue
        arg_codes.append(table.add(args, key))
        if not quick:  # (a line _quick_ok takes has only known keys)
            for k in o:  # (in the line's order: a set's would change from run to run)
                if k in _KNOWN_FAST:
                    continue
                unknown.setdefault(k, []).append(line.line_no)
        meta = o.get("meta")
        call_id = meta_call_id(meta)
        bad = _bad_meta_id(meta)
        if bad is not None:
            bad_ids.setdefault(bad[0], []).append((line.line_no, bad[1], call_id is not None))
        cols["door_session"].append(o["session"])
        cols["agent"].append(o.get("agent") or default_agent)
        cols["seq"].append(o.get("seq"))
        cols["ts"].append(o["ts"])
        cols["ts_end"].append(o.get("ts_end"))
        cols["duration_ms"].append(o.get("duration_ms"))
        cols["server"].append(o.get("server"))
        cols["tool"].append(o["tool"])
        cols["object"].append(o.get("object"))
        objs = o.get("objects")
        cols["objects"].append(None if objs is None else tuple(objs))
        cols["decision"].append(o["decision"])
        cols["approval"].append(o.get("approval"))
        cols["rule"].append(o.get("rule"))
        cols["rows"].append(o.get("rows"))
        cols["bytes"].append(o.get("bytes"))
        cols["meta_call_id"].append(call_id)
        cols["correlation"].append(o.get("correlation"))
        cols["error"].append(o.get("error"))
        cols["response_digest"].append(o.get("response_digest"))
        cols["object_digest"].append(o.get("object_digest"))
        cols["arguments_bytes"].append(o.get("arguments_bytes"))
        cols["arguments_digest"].append(o.get("arguments_digest"))
        cols["arguments_invalid"].append(invalid)
        cols["message_bytes"].append(o.get("message_bytes"))
        cols["line_no"].append(line.line_no)
    out.add(spath, cols, arg_codes)
    return _file_notes(unknown, bad_ids) + zoneless_notes(cols["ts"], cols["ts_end"], cols["line_no"])


def sniff(sample: bytes) -> float:
    """Confidence that ``sample`` (a file's first bytes) is a door call log (v1).

    The share of JSON-object lines carrying the door's required keys, lowered when many lines
    are not JSON at all (a damaged log is still a log; junk with one matching line is not).
    """
    seen, objects = sample_objects(sample)
    ok = sum(1 for o in objects if {"ts", "session", "tool", "decision"} <= o.keys())
    if not ok:
        return 0.0
    return 0.95 * (ok / len(objects)) * (0.5 + 0.5 * len(objects) / seen)


register(Source(
    name=LOADER,
    frame="calls",
    sniff=sniff,
    load=load_door,
    doc="replaybook door call log v1 (schemas/door-call-log.v1.json); one file per agent per session",
    # a legal hold beside its session (`replaybook hold`: door/retention.py), not a log of its own
    side_file=lambda p: p.name.endswith(".hold"),
))
