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
* the line count and the one-object-per-line check are one numpy pass over the bytes
  (:func:`scan`);
* rows are collected per column (:class:`Columns`): text columns as integer codes into a table
  of distinct values (per file one code when every row has the same value), numbers as Python
  numbers; :meth:`Columns.finish` turns them into numpy
  arrays (a :class:`Block`), so the frame is built with numpy ``take``\\ s instead of one Python
  object per row and column;
* timestamps of the common shape ``YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z`` (same width within a file,
  ASCII, years 1900–2199, a real date, hours < 24, minutes and seconds < 60) are converted
  arithmetically on the whole column (:func:`._times.iso_ns`); every other text (offsets, leap seconds,
  other widths, impossible dates …) goes through ``_text.to_utc`` as before;
* the sort (:func:`sort_order`) is the files in session order when every file holds one
  session no other file has, in (``ts``, ``seq``) order — what a door writes; otherwise one
  ``numpy.lexsort`` over session ranks, timestamps and ``seq``.

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
value out of range — sends the file the per-line way, and so does ``arguments_invalid`` (any JSON
value, canonicalised there: :class:`Rec` does not name it, though ``door._quick_ok`` takes it).
``arguments`` ``null`` (the door did not log them) is ``None`` with an NA key; absent, ``{}``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Sequence, Union

import msgspec
import numpy as np
import orjson
from msgspec import Meta, Raw, Struct, field
from msgspec.structs import astuple

from .. import _json
from .._jsonl import quarantine_row
from .._text import TIME_RANGE
from ..canonical import canonical_args
from ._times import _ISO_WIDTHS, parse_parts

# pandas (and frames, which imports it) is imported where the frame is built

__all__ = ["Rec", "ArgsTable", "Columns", "Block", "merge", "decode_file", "frame", "CODED", "LISTED", "PLAIN"]

_U63 = Annotated[int, Meta(ge=0, le=2**63 - 1)]
_NONEMPTY = Annotated[str, Meta(min_length=1)]
_DIGEST = Annotated[str, Meta(pattern=r"^sha256:[0-9a-f]{64}\Z")]
#: orjson reads integers past 64 bits as floats: beyond 2**53 leave the conversion to the per-line path
_NONNEG = Union[Annotated[int, Meta(ge=0, le=2**53)], Annotated[float, Meta(ge=0)], None]
_NULL = b"null"
_EMPTY = b"{}"
_NAT = np.iinfo(np.int64).min
#: a door line whose ``ts`` or ``ts_end`` cannot be held: not a date-time (the schema checks its
#: shape, not the calendar: ``2026-02-30``), or one out of a frame's range (``9999-12-31``)
DOOR_TIME_ERROR = f"ts or ts_end is not an RFC 3339 date-time, or is one beyond the times a frame holds ({TIME_RANGE})"


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
    arguments: Raw = Raw(_EMPTY)  # (absent: a call without arguments; null: not logged)
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
    approval: Union[Literal["approved", "declined", "cancelled", "timed_out", "unavailable", "failed"], None] = None
    method: str = None  # type: ignore[assignment]
    v: Literal[1] = None  # type: ignore[assignment]
    objects: Union[list[str], None] = None
    arguments_bytes: Union[_U63, None] = None
    arguments_digest: Union[_DIGEST, None] = None
    message_bytes: Union[_U63, None] = None
    meta_bytes: Union[_U63, None] = None  # (a _meta too large to log: checked, not read)
    meta_digest: Union[_DIGEST, None] = None


_DECODER = msgspec.json.Decoder(Rec)
(_SESSION, _AGENT, _SEQ, _TS, _TS_END, _DURATION, _SERVER, _TOOL, _ARGS, _OBJECT, _DECISION, _RULE,
 _ROWS, _BYTES, _META, _CORRELATION, _ERROR, _RESPONSE_DIGEST, _OBJECT_DIGEST, _APPROVAL) = range(20)
_OBJECTS, _ARGUMENTS_BYTES, _ARGUMENTS_DIGEST, _MESSAGE_BYTES = 22, 23, 24, 25  # (after method and v)


class _Unusable(Exception):
    """An ``arguments`` spelling the fast path cannot take (the file goes the per-line way)."""


class _Codes(dict):
    """value → code (0, 1, … in order of first sight; ``None`` → -1); ``values`` by code
    (``values`` may also hold entries added without a code here: see :data:`_MOSTLY_DISTINCT`)."""

    def __init__(self) -> None:
        super().__init__({None: -1})
        self.values: list = []

    def __missing__(self, value: Any) -> int:
        code = self[value] = len(self.values)
        self.values.append(value)
        return code


class ArgsTable:
    """``arguments`` values and their canonical keys, by code (``None`` and ``None`` for
    arguments logged as ``null``: not logged, so unknown — a call without arguments is ``{}``).

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
                if raw == _NULL:  # not logged (too large, not an object …): unknown, not {}
                    code = self[raw] = table.add(None, None)
                    return code
                if raw[:1] != b"{":
                    raise _Unusable
                try:
                    obj = _json.loads(raw)
                    key = table.key_for(obj)
                except (orjson.JSONDecodeError, TypeError, RecursionError):
                    raise _Unusable from None  # the per-line path quarantines it or takes it as it is
                code = self[raw] = table.add(obj, key)
                return code

        self.by_raw: dict[bytes, int] = _ByRaw()

    def key_for(self, obj: Any) -> str:
        """``canonical_args(obj)``, cached by ``obj``'s compact JSON.

        Raises:
            TypeError, ValueError: ``obj`` cannot be written as JSON, or is nested deeper than
                canonical_args goes (~5,000 levels; parsers stop at 1,024).
        """
        kb = _json.dumps(obj, option=orjson.OPT_NON_STR_KEYS)
        key = self.key_cache.get(kb)
        if key is None:
            key = self.key_cache[kb] = canonical_args(obj)
        return key

    def add(self, obj: Any, key: str) -> int:
        """A new entry; its code."""
        self.objs.append(obj)
        self.keys.append(key)
        return len(self.objs) - 1


#: CALLS columns kept as codes into a table of distinct strings (the last three are mostly
#: missing: a table of the given values is cheaper to make a ``string`` array of than every row)
CODED = ("door_session", "agent", "server", "tool", "object", "decision", "approval", "rule", "correlation",
         "error", "meta_call_id", "response_digest", "object_digest", "arguments_digest", "arguments_invalid")
#: CALLS columns kept as Python values (mostly distinct per row, or numbers)
PLAIN = ("seq", "ts", "ts_end", "duration_ms", "rows", "bytes", "arguments_bytes", "message_bytes", "line_no")
#: CALLS columns of tuples (rarely given: a call on several objects), kept as codes like CODED
#: but made an object column of tuples (``None`` where not logged)
LISTED = ("objects",)
_LISTS = ("seq", "duration_ms", "rows", "bytes", "arguments_bytes", "message_bytes")
#: integer CALLS columns other than ``seq`` (NA where not logged), in the frame as ``Int64``
_COUNTS = ("rows", "bytes", "arguments_bytes", "message_bytes")
_VARYING = -2  # not a code (codes are -1 for None, else 0, 1, …)
#: CODED columns whose values are mostly distinct where given: a file whose rows differ adds
#: every row to the table as it is (a table may then hold a value, or None, more than once)
_MOSTLY_DISTINCT = frozenset({"meta_call_id", "response_digest", "object_digest", "arguments_digest"})


class Block:
    """The finished rows of consecutive files, as arrays (:meth:`Columns.finish`).

    ``coded[c]`` is ``(values, codes)`` for every CODED column: a table of values and an int32
    index into it per row (-1 for ``None``); the ``door_session`` table is distinct (the sort
    ranks sessions by it), others may hold a value twice (:data:`_MOSTLY_DISTINCT`).  ``arg_objs``/``arg_keys`` are the ``arguments`` table and ``arg_codes``
    its codes; ``ts``/``te`` int64 nanoseconds since the epoch (``NaT``'s value where missing or
    not a date-time) and ``te_given`` where ``ts_end`` was given; integer columns come with a
    ``*_missing`` mask; ``duration`` is float64 (NaN where not logged); ``line_no`` int64;
    ``counts[i]`` rows of ``files[i]``, in file order.
    """

    __slots__ = ("files", "counts", "coded", "arg_objs", "arg_keys", "arg_codes", "seq", "seq_missing",
                 "ts", "te", "te_given", "duration", "rows", "rows_missing", "bytes", "bytes_missing",
                 "arguments_bytes", "arguments_bytes_missing", "message_bytes", "message_bytes_missing", "line_no")

    def __init__(self, **kw: Any) -> None:
        for k in self.__slots__:
            setattr(self, k, kw[k])

    def __len__(self) -> int:
        return len(self.arg_codes)

class Columns:
    """The rows of one load (or one part of it), per column, in file order (see the module
    docstring); :meth:`finish` makes a :class:`Block` of them."""

    def __init__(self) -> None:
        self.codes = {c: _Codes() for c in CODED + LISTED}
        #: per column: per file its code, or _VARYING (the codes are then in ``varying``)
        self.coded: dict[str, list[int]] = {c: [] for c in CODED + LISTED}
        self.varying: dict[str, list[int]] = {c: [] for c in CODED + LISTED}
        self.plain: dict[str, list] = {c: [] for c in _LISTS}
        #: per file: ``(width, text)`` (every value ``width`` ASCII characters, joined) or a list
        self.ts_parts: list = []
        self.te_parts: list = []
        #: per file: its rows' line numbers, or None for 1 … n
        self.line_nos: list = []
        self.args = ArgsTable()
        self.arg_codes: list[int] = []
        self.files: list[str] = []
        self.counts: list[int] = []

    def __len__(self) -> int:
        return len(self.arg_codes)

    def add(self, spath: str, values: dict[str, Sequence], arg_codes: Sequence[int]) -> None:
        """Append one file's rows: ``values`` maps every CODED, LISTED and PLAIN column to a sequence of
        its rows' values; ``arg_codes`` are the rows' :class:`ArgsTable` codes."""
        n = len(arg_codes)
        self._add_coded(values, n)
        for c in _LISTS:
            if c != "line_no":
                self.plain[c].extend(values[c])
        self.line_nos.append(list(values["line_no"]))
        self.ts_parts.append(list(values["ts"]))
        self.te_parts.append(list(values["ts_end"]))
        self.arg_codes.extend(arg_codes)
        self.files.append(spath)
        self.counts.append(n)

    def _add_coded(self, values: dict[str, Sequence], n: int) -> None:
        # per column and file: the code when every row has the same value (one look-up), else
        # _VARYING and the rows' codes appended to ``varying``
        for c in CODED + LISTED:
            col, codes = values[c], self.codes[c]
            first = col[0] if n else None
            if n and col[-1] == first and col.count(first) == n:
                self.coded[c].append(codes[first])
            elif c in _MOSTLY_DISTINCT:  # a new table entry per row (None included): no look-ups
                self.coded[c].append(_VARYING)
                base = len(codes.values)
                codes.values.extend(col)
                self.varying[c].extend(range(base, base + n))
            else:
                self.coded[c].append(_VARYING)
                self.varying[c].extend(map(codes.__getitem__, col))

    def finish(self) -> Block:
        """The collected rows as a :class:`Block` (timestamps parsed, see :func:`parse_parts`)."""
        n = len(self.arg_codes)
        plain = self.plain
        coded = {}
        counts = np.asarray(self.counts, dtype=np.int64)
        for c in CODED + LISTED:
            codes = np.repeat(np.asarray(self.coded[c], dtype=np.int32), counts)
            varying = self.varying[c]
            if varying:
                codes[codes == _VARYING] = np.fromiter(varying, dtype=np.int32, count=len(varying))
            coded[c] = (self.codes[c].values, codes)
        ts, _ = parse_parts(self.ts_parts, self.counts)
        te, te_given = parse_parts(self.te_parts, self.counts)
        seq, seq_missing = _ints(plain["seq"])
        ints = {}
        for c in _COUNTS:
            ints[c], ints[c + "_missing"] = _ints(plain[c])
        duration = np.fromiter(plain["duration_ms"], dtype=object, count=n).astype(np.float64)
        return Block(files=list(self.files), counts=list(self.counts), coded=coded, arg_objs=self.args.objs,
                     arg_keys=self.args.keys, arg_codes=np.fromiter(self.arg_codes, dtype=np.int64, count=n),
                     seq=seq, seq_missing=seq_missing, ts=ts, te=te, te_given=te_given, duration=duration,
                     line_no=self._line_no(counts), **ints)

    def _line_no(self, counts: np.ndarray) -> np.ndarray:
        n = int(counts.sum())
        starts = np.cumsum(counts) - counts
        line_no = np.arange(1, n + 1, dtype=np.int64) - np.repeat(starts, counts)
        for start, k, given in zip(starts.tolist(), counts.tolist(), self.line_nos):
            if given is not None:
                line_no[start:start + k] = np.asarray(given, dtype=np.int64).reshape(k)
        return line_no


def merge(blocks: Sequence[Block]) -> Block:
    """One :class:`Block` of ``blocks`` (each the rows of consecutive files, in file order):
    the same rows, values and order as one :class:`Columns` over all their files would give.
    Tables are laid end to end and codes shifted; the ``door_session`` table is made distinct
    again (:func:`frame` ranks sessions by it)."""
    if len(blocks) == 1:
        return blocks[0]
    coded = {}
    for c in CODED + LISTED:
        tables = [b.coded[c][0] for b in blocks]
        shifted = []
        at = 0
        for b, table in zip(blocks, tables):
            codes = b.coded[c][1].astype(np.int32, copy=True)
            codes[codes >= 0] += at
            shifted.append(codes)
            at += len(table)
        codes = np.concatenate(shifted)
        values = [v for table in tables for v in table]
        if c == "door_session":
            first: dict = {}
            new = np.fromiter((first.setdefault(v, len(first)) for v in values), dtype=np.int32,
                              count=len(values))
            codes = np.where(codes >= 0, new[np.maximum(codes, 0)], codes).astype(np.int32)
            values = list(first)
        coded[c] = (values, codes)
    arg_at = np.cumsum([0] + [len(b.arg_objs) for b in blocks[:-1]])
    arg_codes = np.concatenate([b.arg_codes + shift for b, shift in zip(blocks, arg_at.tolist())])

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(b, name) for b in blocks])

    return Block(files=[f for b in blocks for f in b.files], counts=[k for b in blocks for k in b.counts],
                 coded=coded, arg_objs=[o for b in blocks for o in b.arg_objs],
                 arg_keys=[k for b in blocks for k in b.arg_keys], arg_codes=arg_codes,
                 **{name: cat(name) for name in ("seq", "seq_missing", "ts", "te", "te_given", "duration", "line_no",
                                                 *(c + m for c in _COUNTS for m in ("", "_missing")))})


def _meta_id(m: _MetaIds | None) -> str | None:
    if m is None:
        return None
    return m.k0 or m.k1 or m.k2 or m.k3 or m.k4 or None


def _fixed(ts: Sequence) -> tuple[int, str] | None:
    """``(width, joined text)`` when every value is a str of one width, else None (also when
    a value is ``None``)."""
    try:
        lengths = set(map(len, ts))
    except TypeError:  # None among them
        return None
    if len(lengths) == 1:
        return lengths.pop(), "".join(ts)
    return None


def _ts_quick_ok(ts: Sequence[str], fixed: tuple[int, str] | None) -> bool:
    """``len(t) >= 20 and t[4] == "-" and t[10] == "T"`` for every ``t`` (door._quick_ok)."""
    n = len(ts)
    if fixed is not None and fixed[0] >= 20:
        width, joined = fixed
        return joined[4::width].count("-") == n and joined[10::width].count("T") == n
    return all(len(t) >= 20 and t[4] == "-" and t[10] == "T" for t in ts)


def _ts_part(values: Sequence, fixed: tuple[int, str] | None) -> Any:
    """A file's ``ts`` or ``ts_end`` values for :func:`parse_parts`: joined when they have one
    width :func:`._times.iso_ns` reads and are ASCII, else as a list."""
    if fixed is not None and fixed[0] in _ISO_WIDTHS and fixed[1].isascii():
        return fixed
    return list(values)


def scan(data: bytes) -> tuple[int, bool]:
    """``(lines, shaped)``: the number of lines of ``data`` (as ``_jsonl`` counts them: a last
    line without a newline counts) and whether the bytes show one JSON object per line and
    nothing else (starts with ``{``, ends with ``}\\n``, every newline between ``}`` and ``{``).
    One pass over the bytes (numpy, which does not hold the GIL)."""
    if not data:
        return 0, False
    a = np.frombuffer(data, dtype=np.uint8)
    nl = np.flatnonzero(a == 10)
    n = len(nl)
    if a[-1] != 10:
        return n + 1, False
    shaped = bool(a[0] == 123 and (a[nl - 1] == 125).all() and (a[nl[:-1] + 1] == 123).all())
    return n, shaped


def decode_file(data: bytes, info: dict, spath: str, default_agent: str | None, out: Columns) -> bool:
    """Collect a door log file's rows into ``out`` when every line is one the per-line path
    would take without the schema; False (nothing collected) when the file must go the
    per-line way (see the module docstring).  Sets ``info["lines"]`` when it is ``None``."""
    lines, shaped = scan(data)
    if info.get("lines") is None:
        info["lines"] = lines
    n = lines
    if not (n and shaped):
        return False
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
    try:
        recs = _DECODER.decode_lines(data)
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError; nesting too deep
        return False
    if len(recs) != n:
        return False
    c = list(zip(*map(astuple, recs)))
    del recs
    ts = c[_TS]
    ts_fixed = _fixed(ts)
    if not _ts_quick_ok(ts, ts_fixed):
        return False
    try:
        # the raw spellings as bytes: joined and split at newlines (none inside a line here)
        arg_codes = list(map(out.args.by_raw.__getitem__, b"\n".join(c[_ARGS]).split(b"\n")))
    except _Unusable:
        return False
    agent = c[_AGENT]
    if not all(agent):  # None or "": the folder's name
        agent = [a or default_agent for a in agent]
    meta = c[_META]
    objs = c[_OBJECTS]
    te = c[_TS_END]
    te_fixed = _fixed(te)
    out._add_coded({"door_session": c[_SESSION], "agent": agent, "server": c[_SERVER], "tool": c[_TOOL],
                    "object": c[_OBJECT], "decision": c[_DECISION], "approval": c[_APPROVAL], "rule": c[_RULE],
                    "correlation": c[_CORRELATION], "error": c[_ERROR],
                    "meta_call_id": meta if meta.count(None) == n else list(map(_meta_id, meta)),
                    "response_digest": c[_RESPONSE_DIGEST], "object_digest": c[_OBJECT_DIGEST],
                    "arguments_digest": c[_ARGUMENTS_DIGEST], "arguments_invalid": (None,) * n,
                    "objects": objs if objs.count(None) == n else [None if o is None else tuple(o) for o in objs]}, n)
    plain = out.plain
    plain["seq"].extend(c[_SEQ])
    plain["duration_ms"].extend(c[_DURATION])
    plain["rows"].extend(c[_ROWS])
    plain["bytes"].extend(c[_BYTES])
    plain["arguments_bytes"].extend(c[_ARGUMENTS_BYTES])
    plain["message_bytes"].extend(c[_MESSAGE_BYTES])
    from .door import zoneless_notes  # (door imports this module where it loads)

    notes = zoneless_notes(ts, te, range(1, n + 1), ts_fixed=ts_fixed, te_fixed=te_fixed)
    if notes:
        info.setdefault("notes", []).extend(notes)
    out.line_nos.append(None)  # 1 … n
    out.ts_parts.append(_ts_part(ts, ts_fixed))
    out.te_parts.append(_ts_part(te, te_fixed))
    out.arg_codes.extend(arg_codes)
    out.files.append(spath)
    out.counts.append(n)
    return True


# -- the frame ---------------------------------------------------------------------------------

def _utc_series(ns: np.ndarray):
    import pandas as pd

    return pd.Series(ns.view("datetime64[ns]")).dt.tz_localize("UTC")


def _strings(values: Sequence):
    """A ``string`` (python storage) array of ``str``/``None`` values."""
    import pandas as pd

    if not isinstance(values, np.ndarray):
        values = np.fromiter(values, dtype=object, count=len(values))
    return pd.array(values, dtype=pd.StringDtype("python"))


def _ints(values: list) -> tuple[np.ndarray, np.ndarray]:
    """``(int64 values, missing)`` of Python ints and ``None``s (ints within int64)."""
    try:
        return np.fromiter(values, dtype=np.int64, count=len(values)), np.zeros(len(values), dtype=bool)
    except TypeError:  # None among them
        obj = np.fromiter(values, dtype=object, count=len(values))
        missing = obj == None  # noqa: E711 - elementwise
        obj[missing] = 0
        return obj.astype(np.int64), missing


def sort_order(key: np.ndarray, ts: np.ndarray, seq: np.ndarray, file_idx: np.ndarray) -> np.ndarray:
    """``numpy.lexsort((seq, ts, key))`` (stable) of rows grouped by file (``file_idx``
    non-decreasing).  When every file's rows share one ``key`` that no other file has and are
    already in (``ts``, ``seq``) order — a door writes one file per session, in time order —
    that is the files in ``key`` order, which costs no row sort."""
    m = len(key)
    if m < 2:
        return np.arange(m, dtype=np.int64)
    same = file_idx[1:] == file_idx[:-1]
    first = np.flatnonzero(np.concatenate(([True], ~same)))  # each file's first row
    seg_keys = key[first]
    if (np.all((key[1:] == key[:-1]) | ~same)
            and np.all((ts[1:] > ts[:-1]) | ((ts[1:] == ts[:-1]) & (seq[1:] >= seq[:-1])) | ~same)
            and len(np.unique(seg_keys)) == len(first)):
        lens = np.diff(np.append(first, m))
        by_key = np.argsort(seg_keys, kind="stable")
        lens_sorted = lens[by_key]
        return np.repeat(first[by_key] - (np.cumsum(lens_sorted) - lens_sorted), lens_sorted) + np.arange(m)
    return np.lexsort((seq, ts, key))


def frame(block: Block | Columns, quarantine: list[dict], loader: str):
    """The CALLS frame of the collected rows, as ``door.load_door`` documents it: lines with a
    ``ts``/``ts_end`` that is not a date-time appended to ``quarantine`` (in file order, after
    the others), ``duration_ms`` from ``ts_end − ts`` where not logged (and ``ts_end`` is not
    before ``ts``: NaN then, which ``door._note_ends_before_start`` says), a missing ``seq``
    numbered in file order within its session, rows sorted by (``door_session``, ``ts``,
    ``seq``), stable."""
    import pandas as pd

    from ..frames import CALLS

    if isinstance(block, Columns):
        block = block.finish()
    b = block
    ts_ns, te_ns = b.ts, b.te
    file_idx = np.repeat(np.arange(len(b.files)), b.counts)
    line_no = b.line_no
    bad = (ts_ns == _NAT) | ((te_ns == _NAT) & b.te_given)
    keep = None
    if bad.any():
        for i in np.flatnonzero(bad):
            quarantine.append(quarantine_row(b.files[file_idx[i]], None, loader,
                                             DOOR_TIME_ERROR, line_no=int(line_no[i])))
        keep = ~bad

    def kept(a: np.ndarray) -> np.ndarray:
        return a if keep is None else a[keep]

    ts_ns, te_ns, file_idx, line_no = kept(ts_ns), kept(te_ns), kept(file_idx), kept(line_no)
    codes = {c: kept(b.coded[c][1]) for c in CODED + LISTED}
    arg_codes = kept(b.arg_codes)
    seq, seq_missing = kept(b.seq), kept(b.seq_missing)
    m = len(ts_ns)
    duration = kept(b.duration)
    if keep is None:
        duration = duration.copy()
    fill = np.isnan(duration) & (te_ns != _NAT) & (te_ns >= ts_ns)  # (an end before the start: no duration)
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
    names_list = b.coded["door_session"][0]
    names = np.fromiter(names_list, dtype=object, count=len(names_list))
    rank = np.empty(len(names), dtype=np.int64)
    rank[np.argsort(names, kind="stable")] = np.arange(len(names))
    order = sort_order(rank[session], ts_ns, seq, file_idx)

    out: dict[str, Any] = {}
    for c in CODED:
        table = _strings(b.coded[c][0])
        out[c] = table.take(codes[c][order], allow_fill=True)
    for c in LISTED:  # tuples: an object array, None where not logged (code -1: the table's last entry)
        values = b.coded[c][0]
        table = np.empty(len(values) + 1, dtype=object)
        for k, v in enumerate(values):  # (element by element: numpy would unpack the tuples)
            table[k] = v
        out[c] = table[codes[c][order]]
    out["seq"] = pd.arrays.IntegerArray(seq[order], seq_missing[order])
    out["ts"] = _utc_series(ts_ns[order])
    out["ts_end"] = _utc_series(te_ns[order])
    out["duration_ms"] = duration[order]
    args = np.fromiter(b.arg_objs, dtype=object, count=len(b.arg_objs))
    out["arguments"] = args.take(arg_codes[order])
    out["args_key"] = _strings(b.arg_keys).take(arg_codes[order])
    for c in _COUNTS:
        v, missing = getattr(b, c), getattr(b, c + "_missing")
        out[c] = pd.arrays.IntegerArray(kept(v)[order], kept(missing)[order])
    out["source_file"] = _strings(b.files).take(file_idx[order])
    out["line_no"] = pd.arrays.IntegerArray(line_no[order], np.zeros(m, dtype=bool))
    return CALLS.build({c: pd.Series(out[c], copy=False) for c in CALLS.names})

