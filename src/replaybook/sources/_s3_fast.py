"""Fast path of the S3 server access log loader (:func:`~.s3_access.load_s3_access`).

One compiled pattern splits a whole file's text (``re.findall``), one tuple per line, holding
only the fields the frame needs, adjacent ones in one group (operation + key + request-URI;
status + error code; referer + user agent).  The ``raw`` cell is a
:class:`~.s3_access.LogLine` of the line's bytes, parsed by the reference parser on first use
(the reference path makes the same cells).  Every derived value (bucket, ISO time and then UTC
time, principal type and role session, action, ``s3://`` URI, outcome, redacted user agent) is
computed once per distinct group value over the whole load (distinct values found with
Arrow's hash table) and spread to the rows with integer codes; the frame is built at its final
dtypes and sorted as :func:`~._cloud.finish` sorts.  Files are read ahead and hashed by the
shared reader (:func:`~._cloud_fast.prefetched_files`); each file's bytes are scanned once with
numpy (lines, quotes, ASCII, stray whitespace: :func:`_scan`) before the pattern runs.  The result is the reference path's
(:func:`~.s3_access._read_file` through :func:`~._cloud.finish`) row for row.

Which lines the pattern takes
-----------------------------
The pattern is the reference's first pattern narrowed so that every field is determined
without backtracking: unquoted fields ``[^ ]+``; a quoted request-URI / referer / user agent
ends at its first closing quote and is not empty; the time starts with a digit; everything
after the user agent is taken as one string.  A line is read the fast way when it matches and
that rest is empty or is tokens each after one space (no empty token, no trailing space), and
every count (bytes sent, object size, the two times) has at most 18 digits: a longer one may be
2**63 or more, which the reference quarantines (its line is read the reference way).
Under the file-level guards below this gives exactly the fields the reference pattern gives
(a quoted operation or key is unquoted as the reference unquotes it).  Any other line (blank,
a short or damaged line, a trailing-space or double-space tail, an empty quoted field …) is
read by the reference per-line code, with its own line number, byte offset and quarantine row.

The whole file goes the reference way when the text is not ASCII, holds a tab / vertical tab /
form feed / ``\\x1c``–``\\x1f`` (whitespace to the reference's ``\\S`` but not to ``[^ ]``) or a
NUL (the reference quarantines its line),
a carriage return other than one ending a line, any ``"`` outside the operation, key and the
three quoted fields of the lines taken, or when a match would have run over a line end (count
of matches ≠ count of lines).

Shortcuts with their own guard: a requester's principal type and role session name are read
off the ARN when it is ``arn:aws…:sts::<acct>:assumed-role/<role>/<session>`` with no ``/`` in
the session (else the reference functions); the sort is one ``argsort`` of a packed (time rank,
file, line) key when the rows are in file/line order and the key fits 63 bits (else
``np.lexsort`` with the reference's tie order).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from itertools import compress, repeat
from operator import is_, not_
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._jsonl import quarantine_row
from .._text import time_words, to_utc
from ..frames import ACCESS, LoadResult
from . import s3_access as s3
from ._cloud import json_preview, path_uri, redact_text, role_session_name
from ._cloud_fast import RemoteReader, finish_result, load_files
from ._record import as_dict

__all__ = ["load", "LINE"]

_Q = r'(?:-|"[^"]+")'
#: a count of at most 18 digits (below 2**63 whatever its digits): a longer one — 2**63 or more is
#: no count, and the reference quarantines its line — is read by the reference per-line code
_N = r"(?:[0-9]{1,18}|-)"
#: One line of the fast shape — groups: bucket, time, requester, request id,
#: operation + key + request-URI, status + error code, bytes sent, referer + user agent, the
#: rest of the line — or any other line (all groups empty).  Every match ends at a newline, so
#: matches and lines correspond one to one.  (The reference's first pattern, narrowed; the
#: owner, IP, object size and the two times are matched but not captured.)
LINE = re.compile(
    r"(?:[^ \n][^ ]* ([^ ]+) \[([0-9][^\]]*)\] [^ ]+ ([^ ]+) ([^ ]+) ([^ ]+ [^ ]+ " + _Q + r") "
    r"((?:[0-9]{3}|-) [^ ]+) ([0-9]{1,18}|-) " + " ".join([_N] * 3) + " (" + _Q + " " + _Q + r")"
    r"((?: [^\n]*)?)\n|[^\n]*\n)"
)
_GROUPS = ("A", "T", "R", "D", "E", "F", "B", "H")  # the block keys of groups 1-8
_STRAY_WS = (b"\t", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\x1f")
#: Bytes that send a whole file the reference way: the stray whitespace, and NUL (the
#: reference quarantines a line holding one, whose fields the pattern would take).
_DECLINE = _STRAY_WS + (b"\x00",)
_MAX_TAIL = len(s3.FIELDS) - 17  # tail fields with a name; more are raw["extra_fields"]
_SAFE_INT = 2 ** 53


def _read_fast(path: Path, data: bytes, info: dict, quarantine: list[dict],
               scan: tuple | None = None, cells: bool = True) -> dict | None:
    """One file's lines split into group columns (see :data:`LINE`; lines the pattern does not
    take are read the reference way, quarantine rows included), or ``None`` when the whole file
    must be read by the reference path.

    Returns a block: the group columns ``A`` … ``H`` (one entry per line taken), ``raw`` (those
    lines' :class:`~.s3_access.LogLine`), ``fast_no`` (their line numbers, ``None`` for 1…n), ``rows`` (reference row
    dicts of the other lines) and ``line_no`` (every row's line number, ascending).
    ``scan``: what :func:`_scan` found in ``data`` (computed here when not given).  Without
    ``cells`` (a load's helper process) ``raw`` is left out and ``source`` holds the file's
    text and each line's place in it instead (``None`` is returned for a file of 2 GiB).
    """
    ascii_, stray, quotes_in_file, nl = scan if scan is not None else (data.isascii(), None, None, None)
    if not ascii_ or (stray if stray is not None else any(c in data for c in _DECLINE)):
        return None
    text = data.decode("ascii")
    norm = data
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if "\r" in text:
            return None
        norm = text.encode("ascii")  # the lines without their CR, as the reference reads them
        nl = None
    if not text.endswith("\n"):
        text += "\n"
    matches = LINE.findall(text)
    lines = info.get("lines")  # lines of data = newlines of text (it ends with one)
    if len(matches) != (lines if lines is not None else text.count("\n")):
        return None  # a match ran over a line end
    cols = list(zip(*matches))
    del matches
    n = len(cols[0])
    rest = cols[8]
    # lines taken: matched (group 1 set) and a tail of tokens each after one space (the
    # pattern makes it start with one; here: no empty token, no trailing space)
    take = cols[0]
    tail_spaces, odd = _tail_spaces(rest)
    if odd:
        take = list(take)
        for i, r in enumerate(rest):
            if r and ("  " in r or r[-1] == " "):
                take[i] = ""
    other_no = [i + 1 for i in compress(range(n), map(not_, take))] if "" in take else []
    # each line's place in the bytes: start << 32 | length
    if nl is None:
        nl = np.flatnonzero(np.frombuffer(norm, dtype=np.uint8) == 10)
    ends = nl[:n] if len(nl) >= n else np.append(nl, len(norm))
    starts = np.empty(n, dtype=np.int64)
    starts[:1] = 0
    starts[1:] = ends[:-1] + 1
    if len(norm) < 2**31:
        spans = (starts << 32) | (ends - starts)
    else:  # pragma: no cover - a log file of 2 GiB: copy the lines out
        spans = None
    if other_no:
        keep = list(compress(range(n), take))
        cols = [[c[i] for i in keep] for c in cols]
        other_text = [norm[starts[i - 1]:ends[i - 1]] for i in other_no]
        fast_no = [i + 1 for i in keep]
        if spans is not None:
            spans = spans[keep]
    else:
        other_text = []
        fast_no = None
        keep = None
    # no '"' outside the operation, key, request-URI, referer and user agent of the lines
    # taken (the three quoted fields hold none inside; operation and key are unquoted as the
    # reference unquotes them)
    quotes = "".join(cols[4]).count('"') + "".join(cols[7]).count('"')
    if quotes_in_file is None:
        quotes_in_file = data.count(b'"')
    if quotes_in_file != quotes + sum(t.count(b'"') for t in other_text):
        return None
    block: dict = dict(zip(_GROUPS, cols))
    if not cells:
        if spans is None:  # pragma: no cover - see above
            return None
        block["source"] = (norm, spans)
    elif spans is not None:
        block["raw"] = s3.LogLine.lines(norm, spans.tolist())
    else:  # pragma: no cover - see above
        texts = norm.split(b"\n")[:n]
        block["raw"] = s3.LogLine.many(texts if keep is None else [texts[i] for i in keep])
    block["fast_no"] = fast_no
    block["rows"] = _other_rows(path, data, other_no, quarantine) if other_no else []
    too_many = tail_spaces > _MAX_TAIL  # a space before each tail field
    extra = int(np.count_nonzero(too_many if keep is None else too_many[keep]))
    extra += sum(1 for r in block["rows"] if "extra_fields" in r["raw"])
    if extra:
        info["extra_fields"] = extra
    nf = len(cols[0])
    if block["rows"]:
        block["line_no"] = sorted((fast_no or []) + [r["line_no"] for r in block["rows"]])
    else:
        block["line_no"] = fast_no if fast_no is not None else list(range(1, nf + 1))
    return block


def _tail_spaces(tails: tuple[str, ...]) -> tuple[np.ndarray, bool]:
    """``(spaces in each tail, whether any tail holds two spaces in a row or ends with one)``
    for the ASCII tails of a file's lines: one numpy pass over their bytes instead of a search
    and a count per line."""
    buf = np.frombuffer("\n".join(tails).encode("ascii"), dtype=np.uint8)
    sp = buf == 32
    nl = np.flatnonzero(buf == 10)  # one between each two tails
    odd = bool(len(buf)) and (bool(sp[-1]) or bool(np.any(sp[1:] & sp[:-1]))
                              or bool(np.any(sp[nl[nl > 0] - 1])))
    # spaces per tail: the spaces' positions counted up to each tail's end
    at = np.searchsorted(np.flatnonzero(sp), nl)  # spaces before each separator
    counts = np.empty(len(tails), dtype=np.int64)
    counts[:-1] = at
    counts[-1:] = np.count_nonzero(sp)
    counts[1:] -= at
    return counts, odd


def _other_rows(path: Path, data: bytes, other_no: list[int], quarantine: list[dict]) -> list[dict]:
    """The reference rows of the lines numbered ``other_no`` (same line numbers, byte offsets,
    quarantine rows as the per-line path)."""
    nl = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    spath = str(path)
    rows = []
    for line_no in other_no:
        start = 0 if line_no == 1 else int(nl[line_no - 2]) + 1
        pending = line_no > len(nl)
        end = len(data) if pending else int(nl[line_no - 1])
        raw = data[start:end]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw.strip():
            continue
        row = s3._line_row(path, spath, line_no, start, raw, pending, quarantine)
        if row is not None:
            rows.append(row)
    return rows


# -- the frame -------------------------------------------------------------------------------

def _factorize(values) -> tuple[np.ndarray, list]:
    """``(codes, distinct)``: the distinct values (first-seen order) and each value's index
    among them (``intp`` array).  Arrow's hash table: ~2x a dict's speed on fresh strings."""
    return _factorize_many([values])[0]


def _factorize_many(columns: list) -> list[tuple[np.ndarray, list]]:
    """:func:`_factorize` of each of ``columns``.  Arrow's hash tables run on a second thread
    (they release the GIL) while this one turns the next column into an Arrow array."""
    out: list = [None] * len(columns)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="replaybook-s3") as pool:
        pending = []
        for i, values in enumerate(columns):
            if not len(values):
                out[i] = (np.zeros(0, dtype=np.intp), [])
                continue
            pending.append((i, pool.submit(pc.dictionary_encode, pa.array(values, type=pa.large_string()))))
        for i, fut in pending:
            enc = fut.result()
            out[i] = (enc.indices.to_numpy().astype(np.intp, copy=False), enc.dictionary.to_pylist())
    return out


def _bucket_codes(fast: list[dict]) -> tuple[np.ndarray, list]:
    """:func:`_factorize` of the blocks' bucket column, per block when a block (a log file)
    names one bucket, as S3 writes them (no hashing of a million equal strings)."""
    per_block = []
    for b in fast:
        a = b["A"]
        if a[0] != a[-1] or a.count(a[0]) != len(a):
            return _factorize(_cat(fast, "A"))
        per_block.append(a[0])
    firsts, distinct = _factorize(per_block)
    return np.repeat(firsts, [len(b["A"]) for b in fast]), distinct


def _objects(values) -> np.ndarray:
    """An ``object`` array of ``values`` (never nested: records are mappings numpy must not
    unpack)."""
    return np.fromiter(values, dtype=object, count=len(values))


def _cat(blocks: list[dict], key: str) -> list:
    if len(blocks) == 1:
        return blocks[0][key]
    out: list = []
    for b in blocks:
        out.extend(b[key])
    return out


def _na(v: str) -> str | None:
    return None if v == "-" else v


def _quoted(v: str) -> str | None:
    """A quoted field as the reference unquotes it (``-`` or ``"-"`` → ``None``)."""
    return None if v == "-" or v == '"-"' else v[1:-1]


def _op_key_uri(e: str) -> tuple:
    """``operation key request-URI`` → ``(action_raw, action, what follows the bucket in the
    resource URI)`` as :func:`~.s3_access._line_row` derives them (operation and key unquoted
    as :func:`~.s3_access._unquote_field` does; the request-URI redacted before its ``prefix``
    is read)."""
    op, key, uri = e.split(" ", 2)
    if '"' in op or '"' in key:
        op, key = s3._unquote_field(op) or "", s3._unquote_field(key)
    else:
        op = "" if op == "-" else op
        key = None if key == "-" else key
    if key is not None:
        suffix = s3.object_key(op, key, redact_text(_quoted(uri) or "") or None) if "%" in key or "+" in key else key
    elif op in s3._LIST_OPS:
        uri = _quoted(uri)
        suffix = s3._list_prefix(redact_text(uri) if uri else uri)
    else:
        suffix = None
    return op, s3.OPERATIONS.get(op, "other"), suffix


#: ``arn:aws…:sts::<acct>:assumed-role/<role>``: an assumed-role ARN (as
#: :data:`~._cloud._ASSUMED_ROLE` reads it) before the ``/`` that starts its session name.
_ROLE_HEAD = re.compile(r"arn:aws[\w-]*:sts::\d*:assumed-role/[^/\n]+")


def _requesters(values: list) -> tuple[list, list, list]:
    """``(principal, principal type, role session name)`` for each requester (``-`` → ``None``).

    An assumed-role ARN whose session name holds no ``/`` (cut at its last ``/``: what is
    before matches :data:`_ROLE_HEAD`, what is after is not empty) is of type ``role`` and its session
    name is that rest, exactly as :func:`~.s3_access._principal_type` and
    :func:`~._cloud.role_session_name` say; those are the bulk, split with C-level calls.
    Every other requester goes through those two functions.
    """
    principal = list(values)
    if "-" in principal:
        for i in compress(range(len(principal)), map("-".__eq__, principal)):
            principal[i] = None
    heads, _sep, tails = zip(*map(str.rpartition, values, repeat("/"))) if values else ((), (), ())
    ok = {h: _ROLE_HEAD.fullmatch(h) is not None for h in set(heads)}
    role = list(map(ok.__getitem__, heads))
    rsn = [t if r and t else None for r, t in zip(role, tails)]
    ptype = ["role" if r else None for r in rsn]
    others: dict = {}
    for i in compress(range(len(rsn)), map(is_, rsn, repeat(None))):
        p = principal[i]
        if p not in others:
            others[p] = (s3._principal_type(p), role_session_name(p))
        ptype[i], rsn[i] = others[p]
    return principal, ptype, rsn


def _user_agent(h: str) -> str | None:
    """``referer user-agent`` (each ``-`` or quoted) → the redacted user agent."""
    ua = _quoted(h[h.index('"', 1) + 2:] if h[0] == '"' else h[2:])
    return redact_text(ua) if ua else ua


def _outcome(f: str) -> tuple:
    """``status error-code`` → ``(error_code, outcome)``."""
    status, err = f.split(" ", 1)
    err = _na(err)
    return err, s3._outcome_of(s3._int(_na(status)), err)


def _bytes(values: list) -> np.ndarray | list:
    """Bytes sent as the reference counts them (``-`` → 0; not a count → ``None``): an
    ``int64`` array when every value has fewer than 19 digits, else a list."""
    if not values:
        return np.zeros(0, dtype=np.int64)
    digits = pa.array(values, type=pa.large_string())
    if pc.max(pc.binary_length(digits)).as_py() < 19:  # decimal digits or '-' (the pattern's)
        if "-" in values:
            digits = pc.if_else(pc.equal(digits, "-"), pa.scalar("0", pa.large_string()), digits)
        return pc.cast(digits, pa.int64()).to_numpy()
    return [0 if v == "-" else s3._int(v) for v in values]


def _int_array(values: list):
    """Int64 column as the reference builds it from ``values`` (ints / ``None``); values
    outside ``[0, 2**53]`` take the frame coercer's route from an ``object`` column."""
    n = len(values)
    if isinstance(values, np.ndarray):
        values = values.tolist()
    if None in values:
        obj = _objects(values)
        mask = np.fromiter(map(is_, values, repeat(None)), dtype=bool, count=n)
        obj[mask] = 0
        try:
            data = obj.astype(np.int64)
        except OverflowError:
            data = None
    else:
        mask = np.zeros(n, dtype=bool)
        try:
            data = np.asarray(values, dtype=np.int64) if n else np.zeros(0, dtype=np.int64)
        except OverflowError:
            data = None
    if data is not None and (not n or (data.min() >= 0 and data.max() <= _SAFE_INT)):
        return pd.arrays.IntegerArray(data, mask)
    return pd.Series(values, dtype="object")


def _finish(blocks: list[dict], quarantine: list[dict], inputs: list[dict]) -> LoadResult:
    """:func:`~._cloud.finish` for the blocks of a load (fast blocks and reference rows):
    same frame, quarantine (rows whose time is not a date-time, in row order, after what the
    files themselves quarantined) and ``inputs`` record counts."""
    fast = [b for b in blocks if b.get("A")]
    rows = [r for b in blocks for r in b["rows"]]
    counts = [len(b["A"]) for b in fast]
    nf, nr = sum(counts), len(rows)
    n = nf + nr
    if not n:
        return finish_result(ACCESS.empty(), quarantine, inputs)
    # where each row stands in the reference's row order (block, then line) and its file
    blk = np.concatenate([np.repeat(np.array([b["k"] for b in fast], dtype=np.int64), counts),
                          np.fromiter((b["k"] for b in blocks for _ in b["rows"]), dtype=np.int64, count=nr)])
    line_no = np.concatenate(
        [np.asarray(b["fast_no"], dtype=np.int64) if b["fast_no"] is not None else np.arange(1, len(b["A"]) + 1)
         for b in fast] + [np.fromiter((r["line_no"] for r in rows), dtype=np.int64, count=nr)])
    spaths = [b["path"] for b in blocks]
    names = sorted(set(spaths))
    rank = {f: i for i, f in enumerate(names)}
    file_of_block = np.array([rank[p] for p in spaths], dtype=np.int64)
    fcode = file_of_block[blk]

    g = {k: _cat(fast, k) if fast else [] for k in _GROUPS if k != "A"}
    uniq: dict[str, list] = {}
    codes: dict[str, np.ndarray] = {}
    codes["A"], uniq["A"] = _bucket_codes(fast)
    keys = ("T", "R", "E", "F", "H")
    for k, (c, u) in zip(keys, _factorize_many([g[k] for k in keys])):
        codes[k], uniq[k] = c, u
    ref_idx = np.arange(nr)

    def row_codes(key: str) -> np.ndarray:
        """Codes of group ``key`` for every row: the fast rows' distinct-value codes, then one
        code per reference row (after the distinct values)."""
        return np.concatenate([codes[key], len(uniq[key]) + ref_idx]) if nr else codes[key]

    # times: one to_utc call over the distinct ISO strings and the reference rows' strings
    iso_u = list(map(s3._iso_time, uniq["T"]))
    ts_all = to_utc(iso_u + [r["ts"] for r in rows]).array
    t_codes = row_codes("T")
    bad = np.asarray(ts_all.isna())[t_codes]
    raw = _objects(_cat(fast, "raw") + [r["raw"] for r in rows] if fast else [r["raw"] for r in rows])
    if bad.any():
        ts_text = _objects(iso_u + [r["ts"] for r in rows])[t_codes]
        bad_idx = np.flatnonzero(bad)
        for i in bad_idx[np.lexsort((line_no[bad_idx], blk[bad_idx]))].tolist():
            rec = raw[i]
            quarantine.append(quarantine_row(
                spaths[blk[i]], None, s3.LOADER, f"time {ts_text[i]!r} {time_words(ts_text[i])}",
                line_no=int(line_no[i]), raw=json_preview(as_dict(rec))[:400] if rec is not None else None))
        keep = np.flatnonzero(~bad)
        if not len(keep):
            return finish_result(ACCESS.empty(), quarantine, inputs)
        blk, line_no, fcode, kept_t = blk[keep], line_no[keep], fcode[keep], t_codes[keep]
    else:
        keep = None
        kept_t = t_codes
    # the reference's frame.sort_values(["ts", "source_file", "line_no"], kind="stable"),
    # its ties in the reference's row order (block, then line)
    order = _sort_order(np.asarray(ts_all.asi8), kept_t, fcode, line_no, blk, in_row_order=not nr)
    final = keep if order is None else (order if keep is None else keep[order])

    def put(a):
        return a if final is None else a.take(final)

    def text(values: list, key: str, ref_col: str):
        """A string column: ``values`` per distinct value of group ``key`` for the fast rows,
        the reference rows' ``ref_col``; validated once per distinct value, then taken."""
        arr = pd.array(values + [r[ref_col] for r in rows], dtype=pd.StringDtype("python"))
        return arr.take(put(row_codes(key)))

    m = len(final) if final is not None else n
    cols: dict = {"ts": ts_all.take(put(t_codes))}
    zeros = np.zeros(m, dtype=np.intp)
    cols["time_kind"] = pd.array([s3.TIME_KIND], dtype=pd.StringDtype("python")).take(zeros)
    cols["source"] = pd.array([s3.SOURCE], dtype=pd.StringDtype("python")).take(zeros)
    principal_u, ptype_u, rsn_u = _requesters(uniq["R"])
    cols["principal"] = text(principal_u, "R", "principal")
    cols["principal_type"] = text(ptype_u, "R", "principal_type")
    cols["correlation"] = text(rsn_u, "R", "correlation")
    e_u = list(map(_op_key_uri, uniq["E"]))
    cols["action"] = text([e[1] for e in e_u], "E", "action")
    cols["action_raw"] = text([e[0] for e in e_u], "E", "action_raw")
    # resource URI: once per distinct (bucket, operation + key + URI) pair
    bucket_u = list(map(_na, uniq["A"]))
    ne = max(len(e_u), 1)
    if len(bucket_u) == 1:
        pair_codes, pairs = codes["E"], np.arange(len(e_u))
    else:
        pair_codes, pairs = (pd.factorize(codes["A"].astype(np.int64) * ne + codes["E"]) if nf
                             else (np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.int64)))
    res_u = [path_uri("s3", bucket_u[p // ne], e_u[p % ne][2]) if bucket_u[p // ne] else None
             for p in pairs.tolist()]
    codes["P"], uniq["P"] = pair_codes, res_u
    cols["resource_uri"] = text(res_u, "P", "resource_uri")
    f_u = list(map(_outcome, uniq["F"]))
    cols["outcome"] = text([f[1] for f in f_u], "F", "outcome")
    cols["error_code"] = text([f[0] for f in f_u], "F", "error_code")
    h_u = list(map(_user_agent, uniq["H"]))
    cols["user_agent"] = text(h_u, "H", "user_agent")
    rid = _objects(list(g["D"]) + [r["request_id"] for r in rows])
    if "-" in g["D"]:
        rid[:nf][rid[:nf] == "-"] = None
    cols["request_id"] = pd.array(put(rid), dtype=pd.StringDtype("python"))
    cols["raw"] = put(raw)
    cols["source_file"] = pd.array(names, dtype=pd.StringDtype("python")).take(
        fcode if order is None else fcode[order])
    cols["line_no"] = pd.arrays.IntegerArray(line_no if order is None else line_no[order], np.zeros(m, dtype=bool))
    b = _bytes(g["B"])
    if isinstance(b, np.ndarray) and not nr:
        if final is not None:
            b = b[final]
        cols["bytes"] = _int_array(b) if len(b) and b.max() > _SAFE_INT else pd.arrays.IntegerArray(
            b, np.zeros(len(b), dtype=bool))
    else:
        b = (b.tolist() if isinstance(b, np.ndarray) else b) + [r["bytes"] for r in rows]
        cols["bytes"] = _int_array(b if final is None else list(map(b.__getitem__, final.tolist())))
    cols["rows"] = pd.arrays.IntegerArray(np.zeros(m, dtype=np.int64), np.ones(m, dtype=bool))
    return finish_result(ACCESS.build(cols), quarantine, inputs, fcode, names)


def _sort_order(ts_u: np.ndarray, t_codes: np.ndarray, fcode: np.ndarray, line_no: np.ndarray,
                blk: np.ndarray, in_row_order: bool) -> np.ndarray | None:
    """The stable order of rows by (time, ``fcode``, ``line_no``), ties by (``blk``,
    ``line_no``); ``None`` when the rows are in that order already.  Row ``i``'s time is
    ``ts_u[t_codes[i]]`` (``int64`` ns).  ``in_row_order``: the rows stand in (``blk``,
    ``line_no``) order, so a stable sort needs no ``blk`` key.

    When the time's rank among the distinct times, the file code and the line number fit in
    63 bits together, one stable ``argsort`` of that packed key; else ``np.lexsort``."""
    n = len(t_codes)
    if not n:
        return None
    if in_row_order:
        bits_line = int(line_no.max()).bit_length()
        bits_file = int(fcode.max()).bit_length()
        if len(ts_u).bit_length() + bits_file + bits_line <= 63:
            rank_u = np.empty(len(ts_u), dtype=np.int64)
            uniq_sorted, first = np.unique(ts_u, return_inverse=True)
            rank_u[:] = first
            key = (rank_u[t_codes] << (bits_file + bits_line)) | (fcode << bits_line) | line_no
            if (key[1:] >= key[:-1]).all():
                return None
            return np.argsort(key, kind="stable")
    ts = ts_u[t_codes]
    order = np.lexsort((blk, line_no, fcode, ts))
    return None if (order == np.arange(n)).all() else order


# -- reading ---------------------------------------------------------------------------------

def _scan(data: bytes) -> tuple[int, tuple | None]:
    """``(lines, scan)`` of a file's (decompressed) bytes: ``scan`` is ``(ASCII?, stray
    whitespace? (``None``: not known), count of '"', newline offsets)`` (``None`` for no
    bytes)."""
    if not data:
        return 0, None
    buf = np.frombuffer(data, dtype=np.uint8)
    nl = np.flatnonzero(buf == 10)
    ascii_ = int(buf.max()) < 128
    # control bytes other than the newlines: only then look for the stray whitespace ones
    stray = None if int(np.count_nonzero(buf < 32)) != len(nl) else False
    return len(nl) + (data[-1:] != b"\n"), (ascii_, stray, int(np.count_nonzero(buf == 34)), nl)


def _read_file(path: Path, data: bytes, info: dict, quarantine: list[dict], scan) -> dict:
    """One log file's block: the fast path's, else the reference rows (``{"rows": …}``)."""
    block = _read_fast(path, data, info, quarantine, scan)
    if block is None:
        rows: list[dict] = []
        s3._read_file(path, data, info, rows, quarantine)
        block = {"rows": rows}
    block["path"] = str(path)
    return block


def _finish_blocks(blocks: list[dict], quarantine: list[dict], inputs: list[dict]) -> LoadResult:
    for k, block in enumerate(blocks):
        block["k"] = k  # the block's place: ties keep the reference's row order
    return _finish(blocks, quarantine, inputs)


def _pack(path: Path, data: bytes, info: dict, scan, shipped) -> tuple | None:
    """In a load's helper: a file every line of which the fast path takes, as ``(group
    columns, (text, line places, fast_no, line_no))``; ``None`` for anything else."""
    put_aside: list[dict] = []
    block = _read_fast(path, data, info, put_aside, scan, cells=False)
    if block is None or put_aside or block["rows"]:
        return None
    norm, spans = block["source"]
    text = shipped if norm is data else norm  # CRLF lines: the text without the CRs
    return {k: block[k] for k in _GROUPS}, (text, spans, block["fast_no"], block["line_no"])


def _unpack(path: Path, columns: dict[str, list], source: tuple) -> dict:
    norm, spans, fast_no, line_no = source
    block = dict(columns)
    block["raw"] = s3.LogLine.lines(norm, spans.tolist())
    block["fast_no"] = fast_no
    block["rows"] = []
    block["line_no"] = line_no
    block["path"] = str(path)
    return block


#: how a load's helper processes read the log files the fast path takes whole
REMOTE = RemoteReader(pack=_pack, unpack=_unpack, strings=_GROUPS)


def load(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """:func:`~.s3_access.load_s3_access` (same arguments, result and errors).

    Raises:
        InputError: a path does not exist, or a file cannot be opened or read.
    """
    return load_files(paths, s3.LOADER, _read_file, _finish_blocks, REMOTE, prepare=_scan)
