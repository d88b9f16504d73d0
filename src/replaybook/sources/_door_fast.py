"""The fast path of :mod:`replaybook.sources.door` (private).

Same rows, values, dtypes, order and quarantine as the per-line path in ``door.py``
(``tests/sources/test_door_fast.py`` loads every fixture, the hostile corpus and a set of tricky
files both ways, and with a verbatim copy of the loader as it was before this module, and
asserts equal frames), cheaper:

* a file is decoded in one call by msgspec into typed records (:class:`Rec`) whose types and
  constraints are exactly what ``door._quick_ok`` accepts; a line any of them rejects sends the
  whole file the per-line way, which then gives the schema's complaint (:func:`decode_file`);
* ``arguments`` is kept as its raw JSON bytes by the decoder and parsed with orjson (and
  canonicalised) once per distinct spelling (:class:`ArgsTable`);
* rows are collected per column (:class:`Columns`): text columns as integer codes into a table
  of distinct values, numbers as Python numbers, so the frame is built with numpy ``take``\\ s
  instead of one Python object per row and column;
* the sort is one ``numpy.lexsort`` over session ranks, timestamps and ``seq``.

When :func:`decode_file` takes a file, what it collects equals, row for row, what the per-line
path collects for that file.  It only takes a file whose bytes show one JSON object per line and
nothing else: the file starts with ``{`` and ends with ``}\\n``, and every other newline stands
between ``}`` and ``{`` (so no blank line, no CR, no pending last line, and no JSON value can
span a newline: ``}`` is never followed by ``{`` inside a value); the decoder finds exactly as
many values as there are newlines; the text is valid UTF-8 (msgspec does not check the bytes of
values it skips or keeps raw); every ``arguments`` value parses with orjson (the parser the
per-line path reads the line with) to an object, or is ``null``; every ``ts`` passes
``_quick_ok``'s check.  msgspec refuses lone-surrogate escapes, control characters, NaN and
numbers out of range, so no line orjson would refuse (and ``json`` read differently) gets
through; both keep the last of duplicate keys.  Anything else — unknown keys, a wrong type, a
value out of range — sends the file the per-line way.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Sequence, Union

import msgspec
import numpy as np
import orjson
import pandas as pd
from msgspec import Meta, Raw, Struct, field
from msgspec.structs import astuple

from .._jsonl import quarantine_row
from ..canonical import canonical_args
from ..frames import CALLS

__all__ = ["Rec", "ArgsTable", "Columns", "decode_file", "frame", "utc_ns"]

_U63 = Annotated[int, Meta(ge=0, le=2**63 - 1)]
_NONEMPTY = Annotated[str, Meta(min_length=1)]
_DIGEST = Annotated[str, Meta(pattern=r"^sha256:[0-9a-f]{64}\Z")]
#: orjson reads integers past 64 bits as floats: beyond 2**53 leave the conversion to the per-line path
_NONNEG = Union[Annotated[int, Meta(ge=0, le=2**53)], Annotated[float, Meta(ge=0)], None]
_NULL = b"null"
_NAT = np.iinfo(np.int64).min


class _MetaIds(Struct, gc=False):
    """The keys of ``meta`` that ``door.meta_call_id`` reads, in its order of preference
    (``door.META_CALL_ID_KEYS``); other keys are skipped.  A non-string value under one of them
    is a decode error (the per-line path decides)."""

    k0: Union[str, None] = field(name="claudecode/toolUseId", default=None)
    k1: Union[str, None] = field(name="toolUseId", default=None)
    k2: Union[str, None] = field(name="tool_use_id", default=None)
    k3: Union[str, None] = field(name="call_id", default=None)
    k4: Union[str, None] = field(name="openai/callId", default=None)


class Rec(Struct, kw_only=True, forbid_unknown_fields=True, gc=False):
    """One door log line as ``door._quick_ok`` accepts it (``ts`` is checked afterwards).

    Fields with a default of ``None`` whose type does not admit ``null`` (``seq``, ``method``,
    ``v``) may be absent but not ``null``, as in ``_quick_ok``.  The field order is the order
    :func:`decode_file` reads them in.
    """

    session: _NONEMPTY
    agent: Union[str, None] = None
    seq: _U63 = None  # type: ignore[assignment]
    ts: str
    ts_end: Union[str, None] = None
    duration_ms: _NONNEG = None
    server: Union[str, None] = None
    tool: _NONEMPTY
    arguments: Raw = Raw(_NULL)
    object: Union[str, None] = None
    decision: Literal["allow", "deny", "ask"]
    rule: Union[str, None] = None
    rows: Union[_U63, None] = None
    bytes: Union[_U63, None] = None
    meta: Union[_MetaIds, None] = None
    correlation: Union[str, None] = None
    error: Union[str, None] = None
    response_digest: Union[_DIGEST, None] = None
    object_digest: Union[_DIGEST, None] = None
    method: str = None  # type: ignore[assignment]
    v: Literal[1] = None  # type: ignore[assignment]


_DECODER = msgspec.json.Decoder(Rec)
(_SESSION, _AGENT, _SEQ, _TS, _TS_END, _DURATION, _SERVER, _TOOL, _ARGS, _OBJECT, _DECISION, _RULE,
 _ROWS, _BYTES, _META, _CORRELATION, _ERROR, _RESPONSE_DIGEST, _OBJECT_DIGEST) = range(19)


class _Unusable(Exception):
    """An ``arguments`` spelling the fast path cannot take (the file goes the per-line way)."""


class _Codes(dict):
    """value → code (0, 1, … in order of first sight; ``None`` → -1); ``values`` by code."""

    def __init__(self) -> None:
        super().__init__({None: -1})
        self.values: list = []

    def __missing__(self, value: Any) -> int:
        code = self[value] = len(self.values)
        self.values.append(value)
        return code


class ArgsTable:
    """``arguments`` values and their canonical keys, by code.

    The per-line path adds one entry per row (:meth:`add`); the fast path one per distinct raw
    JSON spelling (:attr:`by_raw`: spelling → code).  Canonical keys are cached by the value's
    compact JSON (:meth:`key_for`) for both, first come first kept, as the loader always did.
    """

    def __init__(self) -> None:
        self.objs: list = []
        self.keys: list[str] = []
        self.key_cache: dict[bytes, str] = {}
        table = self

        class _ByRaw(dict):
            def __missing__(self, raw: bytes) -> int:
                if raw != _NULL and raw[:1] != b"{":
                    raise _Unusable
                try:
                    obj = {} if raw == _NULL else orjson.loads(raw)  # null or absent: {}
                    key = table.key_for(obj)
                except (orjson.JSONDecodeError, TypeError, RecursionError):
                    raise _Unusable from None  # the per-line path quarantines it or takes it as it is
                code = self[raw] = table.add(obj, key)
                return code

        self.by_raw: dict[bytes, int] = _ByRaw()

    def key_for(self, obj: Any) -> str:
        """``canonical_args(obj)``, cached by ``obj``'s compact JSON.

        Raises:
            TypeError, RecursionError: ``obj`` is nested too deep, or holds an int past 64 bits.
        """
        kb = orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS)
        key = self.key_cache.get(kb)
        if key is None:
            key = self.key_cache[kb] = canonical_args(obj)
        return key

    def add(self, obj: Any, key: str) -> int:
        """A new entry; its code."""
        self.objs.append(obj)
        self.keys.append(key)
        return len(self.objs) - 1


#: CALLS columns kept as codes into a table of distinct strings
CODED = ("door_session", "agent", "server", "tool", "object", "decision", "rule", "correlation", "error")
#: CALLS columns kept as Python values (mostly distinct per row, or numbers)
PLAIN = ("seq", "ts", "ts_end", "duration_ms", "rows", "bytes", "meta_call_id", "response_digest",
         "object_digest", "line_no")


class Columns:
    """The rows of one load, per column, in file order (see the module docstring)."""

    def __init__(self) -> None:
        self.codes = {c: _Codes() for c in CODED}
        self.coded: dict[str, list[int]] = {c: [] for c in CODED}
        self.plain: dict[str, list] = {c: [] for c in PLAIN}
        self.args = ArgsTable()
        self.arg_codes: list[int] = []
        self.files: list[str] = []
        self.counts: list[int] = []

    def __len__(self) -> int:
        return len(self.arg_codes)

    def add(self, spath: str, values: dict[str, Sequence], arg_codes: Sequence[int]) -> None:
        """Append one file's rows: ``values`` maps every CODED and PLAIN column to a sequence of
        its rows' values; ``arg_codes`` are the rows' :class:`ArgsTable` codes."""
        n = len(arg_codes)
        for c in CODED:
            col, codes = values[c], self.codes[c]
            if n and col.count(col[0]) == n:  # the same in every row (session, agent …): one look-up
                self.coded[c].extend([codes[col[0]]] * n)
            else:
                self.coded[c].extend(map(codes.__getitem__, col))
        for c in PLAIN:
            self.plain[c].extend(values[c])
        self.arg_codes.extend(arg_codes)
        self.files.append(spath)
        self.counts.append(n)


def _meta_id(m: _MetaIds | None) -> str | None:
    if m is None:
        return None
    return m.k0 or m.k1 or m.k2 or m.k3 or m.k4 or None


def _ts_quick_ok(ts: Sequence[str]) -> bool:
    """``len(t) >= 20 and t[4] == "-" and t[10] == "T"`` for every ``t`` (door._quick_ok)."""
    n = len(ts)
    width = len(ts[0])
    if width >= 20 and min(map(len, ts)) == width == max(map(len, ts)):
        joined = "".join(ts)
        return joined[4::width].count("-") == n and joined[10::width].count("T") == n
    return all(len(t) >= 20 and t[4] == "-" and t[10] == "T" for t in ts)


def decode_file(data: bytes, n_lines: int, spath: str, default_agent: str | None, out: Columns) -> bool:
    """Collect a door log file's rows into ``out`` when every line is one the per-line path
    would take without the schema; False (nothing collected) when the file must go the
    per-line way (see the module docstring)."""
    n = n_lines
    if not n or data[:1] != b"{" or data[-2:] != b"}\n" or data.count(b"}\n{") != n - 1:
        return False
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
    try:
        recs = _DECODER.decode_lines(data)
    except msgspec.DecodeError:  # ValidationError is a DecodeError
        return False
    if len(recs) != n:
        return False
    c = list(zip(*map(astuple, recs)))
    del recs
    if not _ts_quick_ok(c[_TS]):
        return False
    try:
        arg_codes = list(map(out.args.by_raw.__getitem__, map(bytes, c[_ARGS])))
    except _Unusable:
        return False
    agent = c[_AGENT]
    if None in agent or "" in agent:
        agent = [a or default_agent for a in agent]
    meta = c[_META]
    out.add(spath, {
        "door_session": c[_SESSION], "agent": agent, "server": c[_SERVER], "tool": c[_TOOL],
        "object": c[_OBJECT], "decision": c[_DECISION], "rule": c[_RULE], "correlation": c[_CORRELATION],
        "error": c[_ERROR], "seq": c[_SEQ], "ts": c[_TS], "ts_end": c[_TS_END], "duration_ms": c[_DURATION],
        "rows": c[_ROWS], "bytes": c[_BYTES],
        "meta_call_id": [None] * n if meta.count(None) == n else list(map(_meta_id, meta)),
        "response_digest": c[_RESPONSE_DIGEST], "object_digest": c[_OBJECT_DIGEST], "line_no": range(1, n + 1),
    }, arg_codes)
    return True


# -- the frame ---------------------------------------------------------------------------------

def utc_ns(values: list) -> tuple[np.ndarray, np.ndarray]:
    """``(ns, given)``: ``_text.to_utc(values)`` as int64 nanoseconds since the epoch (``NaT``'s
    value where missing, not a date-time or outside the nanosecond range), and where a value
    was given (not ``None``).
    """
    from .._text import to_utc

    obj = np.fromiter(values, dtype=object, count=len(values))
    given = obj.astype(bool)  # text is truthy unless empty; None is not
    for i in np.flatnonzero(~given):
        given[i] = obj[i] is not None
    ns = to_utc(obj).to_numpy(dtype="datetime64[ns]").view(np.int64)
    return ns, given


def _utc_series(ns: np.ndarray) -> pd.Series:
    return pd.Series(ns.view("datetime64[ns]")).dt.tz_localize("UTC")


def _strings(values: Sequence) -> pd.api.extensions.ExtensionArray:
    """A ``string`` (python storage) array of ``str``/``None`` values."""
    if not isinstance(values, np.ndarray):
        values = np.fromiter(values, dtype=object, count=len(values))
    return pd.array(values, dtype=pd.StringDtype("python"))


def _ints(values: list) -> tuple[np.ndarray, np.ndarray]:
    """``(int64 values, missing)`` of Python ints and ``None``s (ints within int64)."""
    try:
        return np.fromiter(values, dtype=np.int64, count=len(values)), np.zeros(len(values), dtype=bool)
    except TypeError:  # None among them
        obj = np.fromiter(values, dtype=object, count=len(values))
        missing = pd.isna(obj)
        obj[missing] = 0
        return obj.astype(np.int64), missing


def frame(cols: Columns, quarantine: list[dict], loader: str) -> pd.DataFrame:
    """The CALLS frame of the collected rows, as ``door.load_door`` documents it: lines with a
    ``ts``/``ts_end`` that is not a date-time appended to ``quarantine`` (in file order, after
    the others), ``duration_ms`` from ``ts_end − ts`` where not logged, a missing ``seq``
    numbered in file order within its session, rows sorted by (``door_session``, ``ts``,
    ``seq``), stable."""
    n = len(cols)
    plain = cols.plain
    ts_ns, _ = utc_ns(plain["ts"])
    te_ns, te_given = utc_ns(plain["ts_end"])
    file_idx = np.repeat(np.arange(len(cols.files)), cols.counts)
    line_no = np.fromiter(plain["line_no"], dtype=np.int64, count=n)
    bad = (ts_ns == _NAT) | ((te_ns == _NAT) & te_given)
    keep = None
    if bad.any():
        for i in np.flatnonzero(bad):
            quarantine.append(quarantine_row(cols.files[file_idx[i]], None, loader,
                                             "ts or ts_end is not an RFC 3339 date-time", line_no=int(line_no[i])))
        keep = ~bad

    def kept(a: np.ndarray) -> np.ndarray:
        return a if keep is None else a[keep]

    ts_ns, te_ns, file_idx, line_no = kept(ts_ns), kept(te_ns), kept(file_idx), kept(line_no)
    codes = {c: kept(np.fromiter(cols.coded[c], dtype=np.int64, count=n)) for c in CODED}
    arg_codes = kept(np.fromiter(cols.arg_codes, dtype=np.int64, count=n))
    seq, seq_missing = (kept(a) for a in _ints(plain["seq"]))
    m = len(ts_ns)
    duration = kept(np.fromiter(plain["duration_ms"], dtype=object, count=n).astype(np.float64))
    fill = np.isnan(duration) & (te_ns != _NAT)
    if fill.any():
        span = pd.Series((te_ns[fill] - ts_ns[fill]).view("timedelta64[ns]"))
        duration[fill] = (span.dt.total_seconds() * 1000.0).to_numpy()
    session = codes["door_session"]
    if seq_missing.any():
        # seq missing: number calls in file order within the session
        nth = pd.Series(session).groupby(session).cumcount().to_numpy() + 1
        seq = np.where(seq_missing, nth, seq)
        seq_missing = np.zeros(m, dtype=bool)
    # sort by (door_session, ts, seq), stable: sessions by their text's order
    names = np.fromiter(cols.codes["door_session"].values, dtype=object, count=len(cols.codes["door_session"].values))
    rank = np.empty(len(names), dtype=np.int64)
    rank[np.argsort(names, kind="stable")] = np.arange(len(names))
    order = np.lexsort((seq, ts_ns, rank[session])) if m else np.zeros(0, dtype=np.int64)

    out: dict[str, Any] = {}
    for c in CODED:
        table = _strings(cols.codes[c].values)
        out[c] = table.take(codes[c][order], allow_fill=True)
    out["seq"] = pd.arrays.IntegerArray(seq[order], seq_missing[order])
    out["ts"] = _utc_series(ts_ns[order])
    out["ts_end"] = _utc_series(te_ns[order])
    out["duration_ms"] = duration[order]
    args = np.fromiter(cols.args.objs, dtype=object, count=len(cols.args.objs))
    out["arguments"] = args.take(arg_codes[order])
    out["args_key"] = _strings(cols.args.keys).take(arg_codes[order])
    for c in ("rows", "bytes"):
        v, missing = _ints(plain[c])
        v, missing = kept(v), kept(missing)
        out[c] = pd.arrays.IntegerArray(v[order], missing[order])
    for c in ("meta_call_id", "response_digest", "object_digest"):
        out[c] = _strings(kept(np.fromiter(plain[c], dtype=object, count=n))[order])
    out["source_file"] = _strings(cols.files).take(file_idx[order])
    out["line_no"] = pd.arrays.IntegerArray(line_no[order], np.zeros(m, dtype=bool))
    return CALLS.build({c: pd.Series(out[c], copy=False) for c in CALLS.names})
