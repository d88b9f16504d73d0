"""Fast path of the S3 server access log loader (:func:`~.s3_access.load_s3_access`).

One compiled pattern splits a whole file's text (``re.findall``), one tuple per line; columns
are then built with C-level ``map``/``zip`` and the derived values (time → ISO text, requester
→ principal type / role session, status + error code → outcome, URL-decoded keys — only for
keys holding ``%`` or ``+``) are computed once per distinct value.  The result is the reference
path's (:func:`~.s3_access._read_file` through :func:`~._cloud.finish`) row for row.

Which lines the pattern takes
-----------------------------
The pattern is the reference's first pattern narrowed so that every field is determined
without backtracking: unquoted fields ``[^ ]+``; a quoted request-URI / referer / user agent
ends at its first closing quote and is not empty; the time starts with a digit; everything
after the user agent is taken as one string and split on spaces.  Under the file-level guards
below this gives exactly the fields the reference pattern gives.  Any other line (blank, a
short or damaged line, a trailing-space or double-space tail, an empty quoted field …) is
read by the reference per-line code, with its own line number, byte offset and quarantine
row; its row is merged back in line order.

The whole file goes the reference way when the text is not ASCII, holds a tab / vertical tab /
form feed / ``\\x1c``–``\\x1f`` (whitespace to the reference's ``\\S`` but not to ``[^ ]``), a
carriage return other than one ending a line, any ``"`` outside the three quoted fields, or
when a match would have run over a line end (count of matches ≠ count of lines).
"""

from __future__ import annotations

import re
from itertools import repeat
from pathlib import Path
from typing import Iterable
from urllib.parse import unquote_plus

import numpy as np

from ..frames import LoadResult
from . import s3_access as s3
from ._cloud import http_outcome, redact_text, role_session_name
from ._cloud_fast import load_files

__all__ = ["load", "LINE"]

_F = r"([^ ]+)"
_N = r"([0-9]+|-)"
_Q = r'(?:-|"([^"]+)")'
#: One line of the fast shape (17 fields, then the rest of the line) — or, as group 19, any
#: other line.  Every match ends at a newline, so matches and lines correspond one to one.
LINE = re.compile(
    r"(?:([^ \n][^ ]*) " + _F + r" \[([0-9][^\]]*)\] " + " ".join([_F] * 5) + " " + _Q
    + r" ([0-9]{3}|-) " + _F + " " + " ".join([_N] * 4) + " " + _Q + " " + _Q
    + r"([^\n]*)\n|([^\n]*)\n)"
)
_HEAD = s3.FIELDS[:17]
_TAIL = s3.FIELDS[17:]
_NA = {"-": None, "": None}
_NA_GET = _NA.get
_STRAY_WS = (b"\t", b"\x0b", b"\x0c", b"\x1c", b"\x1d", b"\x1e", b"\x1f")
_EQ_SECRET = re.compile(r"=(?:(?<=sig=)|(?<=signature=)|(?<=credential=)|(?<=token=))", re.I)
_URI = "s3://{}/{}".format

_CACHE_MAX = 1_000_000  # distinct values kept between files (times, requesters, outcomes)
_PTYPE: dict = {}
_RSN: dict = {}
_ISO: dict = {}


def _mapped(values: list, cache: dict, fn) -> list:
    """``[fn(v) for v in values]`` with ``fn`` called once per distinct value (``cache`` keeps
    them across files; ``fn`` never returns ``None``).  Filling ``_PTYPE`` (requesters) fills
    ``_RSN`` with their role session names too."""
    if len(cache) > _CACHE_MAX:
        cache.clear()
        if cache is _PTYPE:
            _RSN.clear()
    new = [v for v in dict.fromkeys(values) if v not in cache]
    for v in new:
        cache[v] = fn(v)
    if cache is _PTYPE:
        for v in new:
            _RSN[v] = role_session_name(v)
    return list(map(cache.__getitem__, values))


def _na(col) -> list | tuple:
    """``col`` with ``-`` and empty strings (an absent quoted field) as ``None``."""
    k = col.count("-") + col.count("")
    if not k:
        return col
    if k * 8 > len(col):
        return list(map(_NA_GET, col, col))
    out = list(col)
    for marker in ("-", ""):
        i = -1
        while True:
            try:
                i = out.index(marker, i + 1)
            except ValueError:
                break
            out[i] = None
    return out


def _tail_columns(rests: tuple) -> list[list] | None:
    """The tail fields of every line as columns, when every line has the same number (≤ 10)
    of tail fields, each a non-empty space-free token after one space; else ``None``."""
    if sum(map(str.startswith, rests, repeat(" "))) != len(rests):
        return None
    counts = set(map(str.count, rests, repeat(" ")))
    if len(counts) != 1:
        return None
    k = counts.pop()
    if k > len(_TAIL):
        return None
    tokens = "".join(rests).split(" ")
    if len(tokens) != 1 + k * len(rests) or tokens.count("") != 1:
        return None
    return [tokens[1 + j::k] for j in range(k)]


def _raw_per_line(head_rows, rests) -> tuple[list[dict] | None, int]:
    """Raw dicts for lines whose tails are not uniform; ``None`` entries for tails the
    reference pattern would not split this way (those lines go the per-line way)."""
    out: list = []
    extra = 0
    for t, rest in zip(head_rows, rests):
        if rest:
            if rest[0] != " ":
                out.append(None)
                continue
            parts = rest.split(" ")
            del parts[0]
            if parts and parts[-1] == "" and len(rest) > 1:
                parts.pop()
            elif rest == " ":
                parts = []
            if "" in parts:
                out.append(None)
                continue
        else:
            parts = []
        d = dict(zip(_HEAD, map(_NA_GET, t, t)))
        d.update(zip(_TAIL, map(_NA_GET, parts, parts)))
        if len(parts) > len(_TAIL):
            more = parts[len(_TAIL):]
            d["extra_fields"] = list(map(_NA_GET, more, more))
            extra += 1
        out.append(d)
    return out, extra


def _read_fast(path: Path, data: bytes, info: dict, quarantine: list[dict]) -> dict | None:
    """One file's rows as ACCESS column lists (lines the pattern does not take are read the
    reference way, quarantine rows included), or ``None`` when the whole file must be read by
    the reference path."""
    if not data.isascii() or any(c in data for c in _STRAY_WS):
        return None
    text = data.decode("ascii")
    if not text.endswith("\n"):
        text += "\n"
    if "\r" in text:
        text = text.replace("\r\n", "\n")
        if "\r" in text:
            return None
    matches = LINE.findall(text)
    lines = info.get("lines")  # lines of data = newlines of text (it ends with one)
    if len(matches) != (lines if lines is not None else text.count("\n")):
        return None  # a match ran over a line end
    cols = list(zip(*matches))
    others = cols[0].count("")
    if others:
        fast_no = [i + 1 for i, f in enumerate(cols[0]) if f]
        other_no = [i + 1 for i, f in enumerate(cols[0]) if not f]
        other_text = [matches[i - 1][18] for i in other_no]
        matches = [m for m in matches if m[0]]
        cols = list(zip(*matches)) if matches else [()] * 19
    else:
        fast_no = None
        other_no, other_text = [], []
    del matches
    # no '"' may stand anywhere but around the three quoted fields of the lines taken
    quoted = sum(len(c) - c.count("") for c in (cols[8], cols[15], cols[16]))
    if text.count('"') != 2 * quoted + sum(t.count('"') for t in other_text):
        return None
    n = len(cols[0])
    raws: list = []
    extra_lines = 0
    if n:
        head = [_na(c) if i != 2 else c for i, c in enumerate(cols[:17])]
        if _EQ_SECRET.search(text):
            for i in (8, 15, 16):  # request_uri, referer, user_agent as the reference redacts them
                head[i] = [redact_text(v) if v else v for v in head[i]]
        tails = _tail_columns(cols[17])
        if tails is not None:
            tails = [_na(c) for c in tails]
            keys = _HEAD + _TAIL[:len(tails)]
            raws = list(map(dict, map(zip, repeat(keys), zip(*head, *tails))))
        else:
            raws, extra_lines = _raw_per_line(zip(*head), cols[17])
            if None in raws:  # tails the pattern cannot split: those lines go the per-line way
                keep = [i for i, r in enumerate(raws) if r is not None]
                line_nos = fast_no if fast_no is not None else list(range(1, n + 1))
                other_no = sorted(other_no + [line_nos[i] for i in range(n) if raws[i] is None])
                fast_no = [line_nos[i] for i in keep]
                head = [[c[i] for i in keep] for c in head]
                raws = [raws[i] for i in keep]
                n = len(raws)
    block = _columns(path, head, raws, n, fast_no) if n else None
    if other_no:
        block = _merge_others(path, data, block, other_no, quarantine)
        extra_lines = sum(1 for r in block["raw"] if "extra_fields" in r) if block else 0
    if extra_lines:
        info["extra_fields"] = extra_lines
    return block if block is not None else {"ts": []}


def _columns(path: Path, head: list[list], raws: list[dict], n: int, line_nos: list[int] | None) -> dict:
    (_owner, bucket, time, _ip, requester, request_id, op, key, request_uri, status, error_code,
     bytes_sent, _size, _total, _turn, _referer, user_agent) = head
    action_raw = [v if v is not None else "" for v in op] if None in op else op  # `op or ""`
    ptype = _mapped(requester, _PTYPE, s3._principal_type)  # also fills _RSN for these values
    block = {
        "ts": _mapped(time, _ISO, s3._iso_time),
        "time_kind": [s3.TIME_KIND] * n,
        "source": [s3.SOURCE] * n,
        "principal": requester,
        "principal_type": ptype,
        "action": list(map(s3.OPERATIONS.get, action_raw, repeat("other"))),
        "action_raw": action_raw,
        "resource_uri": _uris(bucket, key, action_raw, request_uri),
        "outcome": _outcomes(status, error_code),
        "error_code": error_code,
        "bytes": list(map(int, bytes_sent)) if None not in bytes_sent and max(map(len, bytes_sent), default=0) < 19
        else [0 if v is None else s3._int(v) for v in bytes_sent],
        "rows": [None] * n,
        "request_id": request_id,
        "user_agent": user_agent,
        "correlation": list(map(_RSN.__getitem__, requester)),
        "raw": raws,
        "source_file": [str(path)] * n,
        "line_no": line_nos if line_nos is not None else list(range(1, n + 1)),
    }
    return block


def _uris(bucket: list, key: list, op: list, request_uri: list) -> list:
    decode = {k: unquote_plus(k) for k in set(key) if k is not None and ("%" in k or "+" in k)}
    keys = list(map(decode.get, key, key)) if decode else key
    out = list(map(_URI, bucket, keys))
    for i in _nones(keys):
        out[i] = _URI(bucket[i], _prefix(request_uri[i]) or "") if op[i] in s3._LIST_OPS \
            else _URI(bucket[i], "")
    for i in _nones(bucket):  # no bucket: no URI
        out[i] = None
    return out


def _nones(values: list) -> Iterable[int]:
    """Indexes of ``None`` in ``values`` (C-level search between them)."""
    i = -1
    index = values.index
    while True:
        try:
            i = index(None, i + 1)
        except ValueError:
            return
        yield i


_OUTCOME: dict = {}
_PREFIX: dict = {}


def _prefix(request_uri: str | None) -> str | None:
    """:func:`~.s3_access._list_prefix`, once per distinct request-URI."""
    v = _PREFIX.get(request_uri, _PREFIX)
    if v is _PREFIX:
        if len(_PREFIX) > _CACHE_MAX:
            _PREFIX.clear()
        v = _PREFIX[request_uri] = s3._list_prefix(request_uri)
    return v


def _outcomes(status: list, error_code: list) -> list:
    pairs = list(zip(status, error_code))
    if len(_OUTCOME) > _CACHE_MAX:
        _OUTCOME.clear()
    for p in set(pairs).difference(_OUTCOME):
        _OUTCOME[p] = http_outcome(s3._int(p[0]), p[1])
    return list(map(_OUTCOME.__getitem__, pairs))


def _merge_others(path: Path, data: bytes, block: dict | None, other_no: list[int],
                  quarantine: list[dict]) -> dict | None:
    """Read the lines numbered ``other_no`` the reference way (same line numbers, byte offsets,
    quarantine rows) and merge their rows into ``block`` in line order."""
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
    if not rows:
        return block
    names = list(block) if block is not None else list(rows[0])
    extra = {c: [r[c] for r in rows] for c in names}
    if block is None:
        return extra
    merged = {c: list(block[c]) + extra[c] for c in names}
    order = sorted(range(len(merged["line_no"])), key=merged["line_no"].__getitem__)
    return {c: [v[i] for i in order] for c, v in merged.items()}


def load(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """:func:`~.s3_access.load_s3_access` (same arguments, result and errors)."""
    return load_files(paths, s3.LOADER, _read_fast, s3._read_file)
