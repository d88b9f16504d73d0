"""The fast path of :mod:`replaybook.sources.claude_code` (private).

Same results as the reference loader kept in :mod:`._claude_ref` (``tests/sources/
test_claude_fast_equiv.py`` asserts equal frames, quarantine, inputs — and equal exceptions — on
every fixture, the hostile corpus, the real files and cases, generated transcripts and tricky
lines, with and without the msgspec decoder), cheaper:

* a well-formed file is decoded in one call by msgspec into records holding only the keys the
  frame reads (:mod:`._claude_ms`; ``toolUseResult`` copies, ``thinking`` text, snapshots … are
  skipped, never built as Python objects) and turned into rows by :meth:`Load._records`; any
  other file — or one whose records cannot be shown to equal orjson's reading — is parsed line by
  line with orjson by :meth:`Load._lines`, the reference's per-line code with the same results;
* both inline ``str_or_none``/``int_or_none``/``truncate`` (parsed values are exact
  ``str``/``int``/``bool``, so class checks equal the ``isinstance`` checks), cache
  ``split_mcp_name`` per name and ``canonical_args`` per argument spelling, and note tool-call and
  result row numbers as rows are added (no pass over the rows to pair them);
* rows are transposed per file while in cache and copied into one growing numpy object array
  per column (:class:`Load`); string columns carry ``pd.NA`` already, so ``claude_code._build``
  wraps them without a pass over the values.

Semantics are those of the reference, line for line (see its docstring).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
from msgspec import Raw

from .. import _json
from .._jsonl import Line, name_stem, parse_json, quarantine_row, read_source, set_aside_line
from .._text import TEXT_LIMIT
from ..canonical import canonical_args_cached
from . import _claude_ms as M
from ._claude_ms import decode_file
from ._claude_ref import is_record
from ._claude_ref import read_side_files as _read_side_files  # (one reading of side files for both)
# (one reading of the document and search-result blocks, of is_error and of the notes, for both)
from ._claude_ref import document_text as _document_text, search_result_text as _search_result_text
from ._claude_ref import content_items as _content_items
from ._mcp_blocks import other_block_text as _other_block_text
from ._claude_ref import is_error_of as _is_error_of, note_odd_values as _note_odd_values
from ._claude_ref import note_repeated_calls as _note_repeated_calls
from ._claude_ref import same_input as _same_input
from ._resume import conflict_row, fork_sessions, line_key, note_alias

NCOLS = 30
# column positions (STEPS order)
(C_TID, C_CLIENT, C_VER, C_SESS, C_AGENT, C_SEQ, C_TS, C_KIND, C_LT, C_TOOL_RAW, C_SERVER,
 C_TOOL, C_CALL_ID, C_ARGS, C_ARGS_KEY, C_RESULT_TS, C_IS_ERROR, C_RESULT_TEXT, C_IMAGES,
 C_TEXT, C_TEXT_BYTES, C_MODEL, C_MSG_ID, C_REQ_ID, C_IN_TOK, C_OUT_TOK, C_UUID, C_PARENT,
 C_SOURCE, C_LINE_NO) = range(NCOLS)

NAN = float("nan")   # ``arguments`` of rows that are not tool calls (from_records: missing → NaN)
#: missing value of the string columns in the rows (so they become StringArrays without a pass)
NA = pd.NA
_I64 = 2**63  # token counts must fit Int64; larger ones are NA, as int_or_none gives
#: the string columns (missing: NA in the rows); other columns use None
STR_COLS = (C_VER, C_SESS, C_AGENT, C_KIND, C_LT, C_TOOL_RAW, C_SERVER, C_TOOL, C_CALL_ID,
            C_ARGS_KEY, C_RESULT_TEXT, C_TEXT, C_MODEL, C_MSG_ID, C_REQ_ID, C_UUID, C_PARENT)

LOADER = "claude-code"
CLIENT = "claude-code"


def _trunc(s: str) -> tuple[str, int]:
    """``truncate`` for strings known to be surrogate-free."""
    n = len(s)
    size = n if s.isascii() else len(s.encode("utf-8"))
    if n > TEXT_LIMIT:
        return s[:TEXT_LIMIT] + f" …[+{n - TEXT_LIMIT} chars]", size
    return s, size


def _trunc_parts(texts: list) -> tuple[str, int | None]:
    """``_trunc("\\n".join(texts))``, NA for no text."""
    if not texts:
        return NA, None
    if len(texts) == 1:
        return _trunc(texts[0])
    return _trunc("\n".join(texts))


_canonical = canonical_args_cached


_SPLIT: dict[str, tuple] = {}


def _split(name: Any) -> tuple:
    """``split_mcp_name`` with NA for None, cached per name."""
    out = _SPLIT.get(name) if name.__class__ is str else None
    if out is None:
        out = tuple(NA if v is None else v for v in split_mcp_name(name))
        if name.__class__ is str:
            if len(_SPLIT) >= 65536:
                _SPLIT.clear()
            _SPLIT[name] = out
    return out


def _blocks_text(content: Any, texts: list) -> int:
    """Append the text parts of ``content`` to ``texts``; return the number of image blocks."""
    if content.__class__ is not list and content.__class__ is not str:
        content = _content_items(content)
    if content.__class__ is str:
        texts.append(content)
        return 0
    if content.__class__ is not list:
        return 0
    images = 0
    for b in content:
        if b.__class__ is str:
            texts.append(b)
            continue
        if b.__class__ is not dict:
            continue
        bt = b.get("type")
        if bt == "text":
            t = b.get("text")
            if t.__class__ is str:
                texts.append(t)
        elif bt == "image":
            images += 1
        elif bt == "tool_reference":
            texts.append(f"[tool_reference: {b.get('tool_name')}]")
        elif bt == "document":
            images += _document_text(b.get("source"), b.get("title"), texts)
        elif bt == "search_result":
            images += _search_result_text(b.get("title"), b.get("source"), b.get("content"), texts)
        else:
            _other_block_text(b, texts)
    return images


def max_open() -> int:
    """The opening-bracket count from which a line is checked with orjson before msgspec's
    records of its file are used: below half the recursion room left at the caller (the
    reference's ``deep_safe`` recurses two frames a level), less a margin, and below the 1,024
    levels orjson reads (past them the reference's standard-library reading stops near 1,100,
    whatever the recursion limit); 0 when that leaves too little room (the msgspec decoder is
    then not used)."""
    f = sys._getframe(1)
    depth = 0
    while f is not None:
        depth += 1
        f = f.f_back
    room = min((sys.getrecursionlimit() - depth - 64) // 2, 1000)
    return room if room >= 16 else 0


class _Fallback(Exception):
    """The msgspec records of a file cannot be used: parse it line by line."""


_CANON_RAW: dict[bytes, str] = {}   # canonical_args per raw JSON spelling of a tool input


def _items_text(content: Any, texts: list, line_ok, line_no: int) -> int:
    """``_blocks_text`` of a msgspec-decoded content: None or a list of str / Block / Sub
    (``line_ok(line_no)`` when a raw ``tool_name`` holds a long run of digits)."""
    if content is None:
        return 0
    images = 0
    for b in content:
        if b.__class__ is str:
            texts.append(b)
            continue
        bt = b.type
        if bt == "text":
            if b.text is not None:
                texts.append(b.text)
        elif bt == "image":
            images += 1
        elif bt == "tool_reference":
            name = orjson.loads(memoryview(b.tool_name))
            if name.__class__ is not str and _LONG_DIGITS.search(b.tool_name) is not None:
                line_ok(line_no)
            texts.append(f"[tool_reference: {name}]")
        elif bt == "document":
            images += _document_text(_raw_value(b.source), _raw_value(b.title), texts)
        elif bt == "search_result":
            c = b.content
            if c.__class__ is Raw:  # (an item of a tool_result's content: kept raw)
                c = _raw_value(c)
            elif c.__class__ is list:  # (a block of a message's content: decoded as items)
                c = [x if x.__class__ is str else {"type": x.type, "text": x.text} for x in c]
            images += _search_result_text(_raw_value(b.title), _raw_value(b.source), c, texts)
        elif bt.__class__ is str and bt:
            raise _Fallback   # (an MCP or newer item: the fields it is read by are not decoded)
    return images


def _raw_value(raw: Raw) -> Any:
    """A value msgspec kept raw, read with orjson (as the reference reads the line; only
    strings are used from it, which read alike whichever way the reference parsed the line)."""
    return orjson.loads(memoryview(raw))


#: an integer literal this long may lie beyond 64 bits, where orjson reads a float, json an int
_LONG_DIGITS = re.compile(rb"[0-9]{19}")


def _line_ok_checker(dec):
    """``line_ok(line_no)``: raise _Fallback unless orjson parses that line (1-based) of ``dec``."""
    def line_ok(line_no: int) -> None:
        try:
            orjson.loads(dec.line(line_no - 1))
        except orjson.JSONDecodeError:
            raise _Fallback from None
    return line_ok


def read_file(path: Path) -> tuple[bytes, dict]:
    """One transcript read once, with its ``inputs`` entry (``lines`` is counted by :class:`Load`)."""
    return read_source(path, LOADER, "Claude Code transcript", count_lines=False)


class Load:
    """The state of one load: the columns of every file's rows, pairing, quarantine, inputs.

    Rows are made per file as lists (STEPS order), transposed while still in cache and copied
    into one growing numpy object array per column (:data:`JOINED`; :meth:`column` gives the
    first ``n`` values); ``transcript_id``, ``client``, ``source_file`` and ``seq`` are made from
    ``per_file`` and ``result_ts`` from the pairing.  String columns hold ``NA`` for missing
    values, the others ``None``.  ``expect_rows`` only sizes the first arrays; ``max_open`` is
    what :func:`max_open` gives at the caller.
    """

    def __init__(self, expect_rows: int = 0, max_open: int = 0) -> None:
        import numpy as np

        #: lines with this many opening brackets are checked with orjson before the msgspec
        #: records of their file are used (0: no msgspec decoding); see decode_file
        self.max_open = max_open

        self.n = 0                                       # rows so far
        self.cap = max(int(expect_rows), 1024)
        self.arrs: dict[int, Any] = {k: np.empty(self.cap, dtype=object) for k in JOINED}
        self.quarantine: list[dict] = []
        self.inputs: list[dict] = []
        #: line key (uuid, or the line a fork's copy stands for: :func:`._resume.line_key`) →
        #: (file, line) where it was met first
        self.seen: dict[str, tuple[str, int]] = {}
        self.per_file: list[tuple[str, str, int]] = []   # (transcript_id, source_file, rows)
        self.calls: dict[str, list[int]] = {}            # call_id → tool_call row numbers
        self.results: list[int] = []                     # tool_result row numbers (with a call_id)

    def file(self, path: Path, read: tuple[bytes, dict]) -> None:
        """Parse one transcript into the load (rows appended in file order)."""
        data, info = read
        self.inputs.append(info)
        stem = name_stem(path, (".jsonl.gz", ".jsonl", ".gz", ".json"))
        file_agent = stem[6:] if stem.startswith("agent-") and len(stem) > 6 else None
        _read_side_files(path, stem, file_agent, info)
        dec = decode_file(data, self.max_open) if self.max_open > 0 else None
        if dec is not None:
            try:
                for i in dec.deep.tolist():
                    orjson.loads(dec.line(i))   # the reference reads it with orjson too
                rows, dups, conflicts, bad_ts, repeated, forks = self._records(dec, file_agent, path)
            except (_Fallback, orjson.JSONDecodeError):
                rows = None
            if rows is not None:
                info["lines"] = len(dec.recs)
                info["duplicates"] = dups
                if forks:
                    fork_sessions(info, forks)
                _note_odd_values(info, bad_ts, [])   # (an is_error of another type: not decoded)
                _note_repeated_calls(info, repeated)
                self.quarantine.extend(conflicts)
                self._commit(stem, path, rows)
                return
        self._lines(path, data, info, stem, file_agent)

    def state(self) -> tuple:
        """This load as a picklable tuple, for :meth:`absorb` in another process: its rows'
        columns (each pickled on its own: one pickle of them all keeps a memo of every object
        of every column, and costs about half again as much both ways), per-file counts, calls
        and results (row numbers from 0), the uuids it saw, inputs and quarantine."""
        import pickle

        return (self.n, {k: pickle.dumps(self.arrs[k][:self.n], protocol=5) for k in JOINED}, self.per_file,
                self.calls, self.results, self.seen, self.inputs, self.quarantine)

    @staticmethod
    def unpack(state: tuple) -> tuple:
        """:meth:`state` with its columns unpickled (done as soon as a helper's state arrives,
        while this process still parses: :meth:`absorb` then only copies them)."""
        import pickle

        n, cols, *rest = state
        return (n, {k: pickle.loads(v) if v.__class__ is bytes else v for k, v in cols.items()}, *rest)

    def absorb(self, state: tuple) -> bool:
        """Append a load of the files that come next (:meth:`state` of it) as if they had been
        parsed here — or return False, taking nothing, when one of its lines repeats a uuid
        seen here (a resumed session's copy: those files must be parsed here, where the copy
        is recognised)."""
        import pickle

        n, cols, per_file, calls, results, seen, inputs, quarantine = state
        if not self.seen.keys().isdisjoint(seen):
            return False
        base = self.n
        if base + n > self.cap:
            self._grow(base + n)
        for k in JOINED:
            col = cols[k]
            self.arrs[k][base:base + n] = pickle.loads(col) if col.__class__ is bytes else col
        self.n = base + n
        self.per_file.extend(per_file)
        mine = self.calls
        for cid, rows in calls.items():
            shifted = [r + base for r in rows]
            have = mine.get(cid)
            if have is None:
                mine[cid] = shifted
            else:
                have.extend(shifted)
        self.results.extend(r + base for r in results)
        self.seen.update(seen)
        self.inputs.extend(inputs)
        self.quarantine.extend(quarantine)
        return True

    def _commit(self, stem: str, path: Path, rows: list[list]) -> None:
        import numpy as np

        m = len(rows)
        if not m:
            return
        self.per_file.append((stem, str(path), m))
        n = self.n
        if n + m > self.cap:
            self._grow(n + m)
        cols = tuple(zip(*rows))   # transposed while the rows are in cache
        arrs = self.arrs
        for k in JOINED:
            arrs[k][n:n + m] = np.fromiter(cols[k], dtype=object, count=m)
        self.n = n + m

    def _grow(self, need: int) -> None:
        import numpy as np

        cap = max(need, 2 * self.cap)
        for k in JOINED:
            new = np.empty(cap, dtype=object)
            new[:self.n] = self.arrs[k][:self.n]
            self.arrs[k] = new
        self.cap = cap

    def column(self, k: int):
        """Column ``k`` (one of :data:`JOINED`) of every row of the load: a numpy object array
        (a copy when the array has much spare room, else a view)."""
        arr = self.arrs[k]
        if self.cap > self.n + (self.n >> 2) + 1024:
            return arr[:self.n].copy()
        return arr[:self.n]

    def _lines(self, path: Path, data: bytes, info: dict, stem: str, file_agent: str | None) -> None:
        """The file parsed line by line with orjson (the reference's way)."""
        seen = self.seen
        spath = str(path)
        rows: list[list] = []
        row0 = self.n        # global number of this file's first row
        calls = self.calls
        results = self.results
        quarantine = self.quarantine
        add = rows.append
        groups: dict[tuple, list] = {}   # key → [row, texts, tool-use ids]
        dups = 0
        forks: list = []     # the forkedFrom values of the file's lines
        repeated = 0  # (tool_use blocks repeating an id within one response)
        bad_ts: list = []    # (line, timestamp) empty or not text
        bad_err: list = []   # (line, is_error) neither true nor false
        bad_id: list = []    # (line, tool-use id) that is not text
        loads = _json.loads
        JDE = orjson.JSONDecodeError
        split = _split
        canon = _canonical
        trunc = _trunc
        trunc_parts = _trunc_parts
        blocks_text = _blocks_text

        mv = memoryview(data)
        find = data.find
        n = len(data)
        pos = 0
        line_no = 0
        newlines = 0
        while pos < n:
            end = find(b"\n", pos)
            if end < 0:
                pending = True
                end = n
            else:
                pending = False
                newlines += 1
            line_no += 1
            start = pos
            pos = end + 1
            stop = end - 1 if end > start and data[end - 1] == 13 else end   # drop a trailing \r
            try:
                o = loads(mv[start:stop])
            except JDE:
                raw = data[start:stop]
                if not raw.strip():
                    continue
                o, err = parse_json(raw)
                if err is not None:
                    torn = set_aside_line(path, line_no, start, raw, err, pending, LOADER, quarantine, is_record)
                    if torn is None:
                        continue
                    start += torn[0]   # a record glued to the torn start of another: read it
                    o = torn[1]
            if o.__class__ is not dict:
                raw = data[start:stop]
                quarantine.append(quarantine_row(path, Line(line_no, start, raw, o, None, False), LOADER,
                                                 f"not a JSON object ({type(o).__name__})"))
                continue
            uuid = o.get("uuid")
            if uuid.__class__ is not str or uuid == "":
                uuid = NA
            ff = o.get("forkedFrom")
            if ff is None:
                key = uuid
            else:
                key = line_key(uuid, ff)
                forks.append(ff)
            if key is not NA and key is not None:
                first = seen.get(key)
                if first is not None:  # a resume or fork copy, or a conflict set aside
                    if ff is not None:
                        note_alias(seen, key, uuid, first)
                    row = conflict_row(first, path, line_no, start, data[start:stop], LOADER)
                    if row is None:
                        dups += 1
                    else:
                        quarantine.append(row)
                    continue
                seen[key] = (spath, line_no)
                if ff is not None:
                    note_alias(seen, key, uuid, (spath, line_no))

            # ---- one line (the reference's per-line code, inlined)
            g = o.get
            t = g("type")
            if g("isSidechain") is True or file_agent is not None:
                agent = g("agentId")
                if agent.__class__ is not str or not agent:
                    agent = file_agent or "sidechain"
            else:
                agent = NA
            ts = g("timestamp")
            if ts.__class__ is not str:
                if ts is not None or "timestamp" in o:
                    bad_ts.append((line_no, ts))
                ts = None
            elif not ts:
                bad_ts.append((line_no, ts))
            ver = g("version")
            sess = g("sessionId")
            par = g("parentUuid")
            base = [None, None, ver if ver.__class__ is str and ver else NA,
                    sess if sess.__class__ is str and sess else NA, agent, None, ts, NA, NA,
                    NA, NA, NA, NA, NAN, NA, None, None, NA, None, NA, None, NA, NA,
                    NA, None, None, uuid, par if par.__class__ is str and par else NA, None,
                    line_no]
            msg = g("message")
            if t == "user" and msg.__class__ is dict:
                content = msg.get("content")
                if content.__class__ is list:
                    other: list = []
                    n_results = 0
                    for b in content:
                        if b.__class__ is dict and b.get("type") == "tool_result":
                            n_results += 1
                            c = b.get("content")
                            if c.__class__ is str:
                                text, nb = trunc(c)
                                images = 0
                            else:
                                texts: list = []
                                images = blocks_text(c, texts)
                                text, nb = trunc_parts(texts)
                            r = base.copy()
                            r[C_KIND] = "tool_result"
                            r[C_LT] = "user"
                            cid = b.get("tool_use_id")
                            if cid.__class__ is str and cid:
                                r[C_CALL_ID] = cid
                                results.append(row0 + len(rows))
                            elif cid is not None and cid.__class__ is not str:
                                bad_id.append((line_no, cid))
                            e = b.get("is_error")
                            if e is True or e is False or e is None:
                                r[C_IS_ERROR] = e is True
                            else:
                                r[C_IS_ERROR] = _is_error_of(e)
                                if r[C_IS_ERROR] is None:
                                    bad_err.append((line_no, e))
                            r[C_TEXT] = text
                            r[C_TEXT_BYTES] = nb
                            r[C_IMAGES] = images
                            add(r)
                        else:
                            other.append(b)
                    if n_results and not other:
                        continue
                    content = other
                if content.__class__ is str:
                    text, nb = trunc(content)
                    images = 0
                else:
                    texts = []
                    images = blocks_text(content, texts)
                    text, nb = trunc_parts(texts)
                base[C_KIND] = "user_prompt"
                base[C_LT] = "user"
                base[C_TEXT] = text
                base[C_TEXT_BYTES] = nb
                base[C_IMAGES] = images
                add(base)
            elif t == "assistant" and msg.__class__ is dict:
                mg = msg.get
                mid = mg("id")
                if mid.__class__ is not str or not mid:
                    mid = None
                rid = g("requestId")
                if rid.__class__ is not str or not rid:
                    rid = None
                usage = mg("usage")
                grp = groups.get((mid, rid)) if mid is not None else None
                if grp is None:
                    model = mg("model")
                    base[C_KIND] = "model_request"
                    base[C_LT] = "assistant"
                    base[C_MODEL] = model if model.__class__ is str and model else NA
                    base[C_MSG_ID] = NA if mid is None else mid
                    base[C_REQ_ID] = NA if rid is None else rid
                    add(base)
                    grp = [base, [], {}]
                    groups[(mid, rid) if mid is not None else ("line", line_no)] = grp
                row = grp[0]
                if usage.__class__ is dict:  # (the final count: see _claude_ref)
                    v = usage.get("output_tokens")
                    out = v if v.__class__ is int and -_I64 <= v < _I64 else None
                    had = row[C_OUT_TOK]
                    if had is None or (out is not None and out >= had):
                        v = usage.get("input_tokens")
                        row[C_IN_TOK] = v if v.__class__ is int and -_I64 <= v < _I64 else None
                        row[C_OUT_TOK] = out
                if row[C_MODEL] is NA:
                    model = mg("model")
                    if model.__class__ is str and model:
                        row[C_MODEL] = model
                content = mg("content")
                if content.__class__ is str:
                    grp[1].append(content)
                    continue
                if content.__class__ is dict:  # (a lone block: see _claude_ref)
                    content = [content]
                if content.__class__ is not list:
                    continue
                for b in content:
                    if b.__class__ is not dict:
                        continue
                    bt = b.get("type")
                    if bt == "text":
                        tx = b.get("text")
                        if tx.__class__ is str:
                            grp[1].append(tx)
                    elif bt == "tool_use":
                        cid = b.get("id")
                        if cid.__class__ is str and cid:
                            met = grp[2].setdefault(cid, [])
                            if met and any(_same_input(x, b.get("input")) for x in met):
                                repeated += 1  # (the same block again within one response: see _claude_ref)
                                continue
                            met.append(b.get("input"))
                        name = b.get("name")
                        name = name if name.__class__ is str else None
                        server, tool = split(name)
                        args = b.get("input")
                        r = base.copy()
                        r[C_KIND] = "tool_call"
                        r[C_LT] = "assistant"
                        r[C_TOOL_RAW] = NA if name is None else name
                        r[C_SERVER] = server
                        r[C_TOOL] = tool
                        cid = b.get("id")
                        if cid is not None and cid.__class__ is not str:
                            bad_id.append((line_no, cid))
                        if cid.__class__ is str and cid:
                            r[C_CALL_ID] = cid
                            lst = calls.get(cid)
                            if lst is None:
                                calls[cid] = [row0 + len(rows)]
                            else:
                                lst.append(row0 + len(rows))
                        r[C_ARGS] = args
                        r[C_ARGS_KEY] = canon(args)
                        r[C_MODEL] = NA
                        r[C_TEXT] = NA
                        r[C_TEXT_BYTES] = None
                        r[C_IN_TOK] = None
                        r[C_OUT_TOK] = None
                        r[C_MSG_ID] = NA if mid is None else mid
                        r[C_REQ_ID] = NA if rid is None else rid
                        add(r)
            elif t == "summary":
                base[C_KIND] = "summary"
                base[C_LT] = "summary"
                s = g("summary")
                if s.__class__ is str and s:
                    base[C_TEXT], base[C_TEXT_BYTES] = trunc(s)
                add(base)
            else:
                lt = t if t.__class__ is str else (NA if t is None else str(t))
                sub = g("subtype")
                if lt is not NA and sub.__class__ is str and sub:
                    lt = f"{lt}/{sub}"
                base[C_LT] = lt
                if t == "system":
                    base[C_KIND] = "system"
                    s = g("content")
                    if s.__class__ is str and s:
                        base[C_TEXT], base[C_TEXT_BYTES] = trunc(s)
                else:
                    base[C_KIND] = "other"
                add(base)
        for row, texts, _ in groups.values():
            row[C_TEXT], row[C_TEXT_BYTES] = trunc_parts(texts)
        info["lines"] = newlines + (0 if data.endswith(b"\n") or not data else 1)
        info["duplicates"] = dups
        if forks:
            fork_sessions(info, forks)
        _note_odd_values(info, bad_ts, bad_err, bad_id)
        _note_repeated_calls(info, repeated)
        self._commit(stem, path, rows)

    def _records(self, dec, file_agent: str | None, path: Path) -> tuple[list[list], int, list[dict], list, int, list]:
        """The rows of a file decoded by msgspec (:func:`._claude_ms.decode_file`): the same
        rows, line for line, as :meth:`_lines`.  Raises _Fallback (with the load unchanged) when
        a raw value does not parse with orjson, or holds a long run of digits (an integer orjson
        and ``json`` may read differently) in a line orjson refuses.

        Raw values (tool ``input``, ``tool_name``, a system line's ``content``) are parsed with
        orjson, as the reference parses the line; where orjson would refuse the line, the
        reference reads it with ``json`` instead, which reads the same value unless it holds an
        integer beyond 64 bits (orjson: a float) — hence the digit check where such a value is
        used whole (a string reads the same either way).

        Returns the rows, the number of resume or fork copies skipped, the ``conflict``
        quarantine rows of lines repeating a line with other content (:mod:`._resume`), the
        ``(line, timestamp)`` of lines whose timestamp is empty or null
        (:func:`._claude_ref.note_odd_values`), the number of tool_use blocks repeating an id
        within one response (:func:`._claude_ref.note_repeated_calls`) and the lines'
        ``forkedFrom`` values (:func:`._resume.fork_sessions`)."""
        recs = dec.recs
        line_ok = _line_ok_checker(dec)
        seen = self.seen
        spath = str(path)
        conflicts: list[dict] = []
        added: list[str] = []
        rows: list[list] = []
        row0 = self.n
        fcalls: list[tuple[str, int]] = []
        fresults: list[int] = []
        add = rows.append
        groups: dict[tuple, list] = {}
        dups = 0
        forks: list = []     # the forkedFrom values of the file's lines
        repeated = 0  # (tool_use blocks repeating an id within one response)
        bad_ts: list = []    # (line, timestamp) empty or null
        UNSET = M.UNSET
        RAW_NULL = M.RAW_NULL
        split = _split
        trunc = _trunc
        trunc_parts = _trunc_parts
        Block = M.Block
        try:
            line_no = 0
            for rec in recs:
                line_no += 1
                uuid = rec.uuid
                if not uuid:
                    uuid = NA
                ff = rec.forkedFrom
                if ff is RAW_NULL:
                    key = uuid
                else:
                    ff = orjson.loads(memoryview(ff))
                    key = uuid if ff is None else line_key(uuid, ff)
                    if ff is not None:
                        forks.append(ff)
                if key is not NA and key is not None:
                    first = seen.get(key)
                    if first is not None:  # a resume or fork copy, or a conflict set aside
                        if ff is not RAW_NULL and note_alias(seen, key, uuid, first):
                            added.append(uuid)
                        start = int(dec.ends[line_no - 2]) + 1 if line_no > 1 else 0
                        row = conflict_row(first, path, line_no, start, dec.line(line_no - 1), LOADER)
                        if row is None:
                            dups += 1
                        else:
                            conflicts.append(row)
                        continue
                    seen[key] = (spath, line_no)
                    added.append(key)
                    if ff is not RAW_NULL and note_alias(seen, key, uuid, (spath, line_no)):
                        added.append(uuid)
                t = rec.type
                if rec.isSidechain is True or file_agent is not None:
                    agent = rec.agentId or file_agent or "sidechain"
                else:
                    agent = NA
                ts = rec.timestamp
                if ts.__class__ is not str:
                    if ts is UNSET:
                        ts = None
                    else:   # null
                        bad_ts.append((line_no, None))
                elif not ts:
                    bad_ts.append((line_no, ts))
                base = [None, None, rec.version or NA, rec.sessionId or NA, agent, None,
                        ts, NA, NA, NA, NA, NA, NA, NAN, NA, None, None, NA, None, NA,
                        None, NA, NA, NA, None, None, uuid, rec.parentUuid or NA, None, line_no]
                msg = rec.message
                if t == "user" and msg is not None:
                    content = msg.content
                    if content.__class__ is list:
                        other: list = []
                        n_results = 0
                        for b in content:
                            if b.__class__ is Block and b.type == "tool_result":
                                n_results += 1
                                c = b.content
                                if c.__class__ is str:
                                    text, nb = trunc(c)
                                    images = 0
                                else:
                                    texts: list = []
                                    images = _items_text(c, texts, line_ok, line_no)
                                    text, nb = trunc_parts(texts)
                                r = base.copy()
                                r[C_KIND] = "tool_result"
                                r[C_LT] = "user"
                                cid = b.tool_use_id
                                if cid:
                                    r[C_CALL_ID] = cid
                                    fresults.append(row0 + len(rows))
                                r[C_IS_ERROR] = b.is_error is True
                                r[C_TEXT] = text
                                r[C_TEXT_BYTES] = nb
                                r[C_IMAGES] = images
                                add(r)
                            else:
                                other.append(b)
                        if n_results and not other:
                            continue
                        content = other
                    if content.__class__ is str:
                        text, nb = trunc(content)
                        images = 0
                    else:
                        texts = []
                        images = _items_text(content, texts, line_ok, line_no)
                        text, nb = trunc_parts(texts)
                    base[C_KIND] = "user_prompt"
                    base[C_LT] = "user"
                    base[C_TEXT] = text
                    base[C_TEXT_BYTES] = nb
                    base[C_IMAGES] = images
                    add(base)
                elif t == "assistant" and msg is not None:
                    mid = msg.id or None
                    rid = rec.requestId or None
                    grp = groups.get((mid, rid)) if mid is not None else None
                    if grp is None:
                        base[C_KIND] = "model_request"
                        base[C_LT] = "assistant"
                        base[C_MODEL] = msg.model or NA
                        base[C_MSG_ID] = NA if mid is None else mid
                        base[C_REQ_ID] = NA if rid is None else rid
                        add(base)
                        grp = [base, [], {}]
                        groups[(mid, rid) if mid is not None else ("line", line_no)] = grp
                    row = grp[0]
                    usage = msg.usage
                    if usage is not None:  # (the final count: see _claude_ref)
                        out, had = usage.output_tokens, row[C_OUT_TOK]
                        if had is None or (out is not None and out >= had):
                            row[C_IN_TOK] = usage.input_tokens
                            row[C_OUT_TOK] = out
                    if row[C_MODEL] is NA and msg.model:
                        row[C_MODEL] = msg.model
                    content = msg.content
                    if content.__class__ is str:
                        grp[1].append(content)
                        continue
                    if content is None:
                        continue
                    for b in content:
                        if b.__class__ is not Block:
                            continue
                        bt = b.type
                        if bt == "text":
                            if b.text is not None:
                                grp[1].append(b.text)
                        elif bt == "tool_use":
                            cid = b.id
                            if cid:
                                met = grp[2].setdefault(cid, [])  # (the inputs met: Raw, not copied)
                                if met and any(bytes(x) == bytes(b.input) or _same_input(
                                        _json.loads(bytes(x)), _json.loads(bytes(b.input))) for x in met):
                                    repeated += 1  # (the same block again within one response: see _claude_ref)
                                    continue
                                met.append(b.input)
                            name = b.name
                            server, tool = split(name)
                            raw = bytes(b.input)
                            args = _json.loads(raw)
                            if _LONG_DIGITS.search(raw) is not None:
                                line_ok(line_no)
                            r = base.copy()
                            r[C_KIND] = "tool_call"
                            r[C_LT] = "assistant"
                            r[C_TOOL_RAW] = NA if name is None else name
                            r[C_SERVER] = server
                            r[C_TOOL] = tool
                            cid = b.id
                            if cid:
                                r[C_CALL_ID] = cid
                                fcalls.append((cid, row0 + len(rows)))
                            r[C_ARGS] = args
                            key = _CANON_RAW.get(raw)
                            if key is None:
                                key = _canonical(args)
                                if len(_CANON_RAW) >= 65536:
                                    _CANON_RAW.clear()
                                _CANON_RAW[raw] = key
                            r[C_ARGS_KEY] = key
                            r[C_MODEL] = NA
                            r[C_TEXT] = NA
                            r[C_TEXT_BYTES] = None
                            r[C_IN_TOK] = None
                            r[C_OUT_TOK] = None
                            r[C_MSG_ID] = NA if mid is None else mid
                            r[C_REQ_ID] = NA if rid is None else rid
                            add(r)
                elif t == "summary":
                    base[C_KIND] = "summary"
                    base[C_LT] = "summary"
                    if rec.summary:
                        base[C_TEXT], base[C_TEXT_BYTES] = trunc(rec.summary)
                    add(base)
                else:
                    lt = NA if t is None else t
                    sub = rec.subtype
                    if t is not None and sub:
                        lt = f"{lt}/{sub}"
                    base[C_LT] = lt
                    if t == "system":
                        base[C_KIND] = "system"
                        s = orjson.loads(memoryview(rec.content))   # (only a str is used: as json)
                        if s.__class__ is str and s:
                            base[C_TEXT], base[C_TEXT_BYTES] = trunc(s)
                    else:
                        base[C_KIND] = "other"
                    add(base)
        except (orjson.JSONDecodeError, _Fallback):
            for u in added:
                del seen[u]
            raise _Fallback from None
        for row, texts, _ in groups.values():
            row[C_TEXT], row[C_TEXT_BYTES] = trunc_parts(texts)
        calls = self.calls
        for cid, i in fcalls:
            lst = calls.get(cid)
            if lst is None:
                calls[cid] = [i]
            else:
                lst.append(i)
        self.results.extend(fresults)
        return rows, dups, conflicts, bad_ts, repeated, forks


#: the columns gathered from the rows (the others are made from per-file counts and the pairing)
JOINED = tuple(k for k in range(NCOLS) if k not in (C_TID, C_CLIENT, C_SOURCE, C_SEQ, C_RESULT_TS))


from .claude_code import split_mcp_name  # noqa: E402  (circular: claude_code imports us lazily)
