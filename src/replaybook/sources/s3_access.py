"""Amazon S3 server access logs → the ``access`` frame (source ``aws.s3_access``).

Format origin
-------------
Amazon S3 User Guide, "Amazon S3 server access log format" (the space-delimited text S3 delivers
to a target bucket, one request per line; files named ``<prefix>YYYY-mm-DD-HH-MM-SS-<unique>``
with no extension).  Fields, in order (:data:`FIELDS`): bucket owner, bucket, ``[time]``, remote
IP, requester, request ID, operation, key, ``"request-URI"``, HTTP status, error code, bytes sent,
object size, total time, turn-around time, ``"referer"``, ``"user-agent"``, version ID, host ID,
signature version, cipher suite, authentication type, host header, TLS version, access point
ARN, aclRequired, source region.

What the parser copes with
--------------------------
* ``-`` for "unknown / not applicable" in any field (``bytes sent`` ``-`` means zero, as the
  format says);
* quoted fields that **contain quotes** (``"door/1.2 (say "hi")"``): S3 does not escape them, so
  a quoted referer / user agent ends at the quote after which only unquoted fields remain;
* **CR line ends**: a file whose lines end in CR only (an old Mac editor's) is read with each CR
  as a line end (:func:`~._cloud.cr_line_ends`); a lone CR inside a line of any other file ends
  a record too (no field can hold one), each record read numbered with the line it stands in;
* **lines shorter** than :data:`FIELDS` (older log lines end after the user agent or the TLS
  version) and **fields AWS appends later**: kept in ``raw["extra_fields"]`` (a list), never
  rejected, and counted per file as ``inputs[i]["extra_fields"]`` (lines carrying them);
* URL-encoded keys decoded into ``resource_uri`` (:func:`object_key`: twice for requests, once
  for S3's own lifecycle and batch-delete records, the request-URI deciding where it can); the
  key as logged stays in ``raw["key"]``;
* presigned-URL signatures (``X-Amz-Signature``, ``X-Amz-Security-Token``, ``X-Amz-Credential``)
  in the request-URI / referer are redacted.

The rows
--------
``ts`` is the time S3 **received** the request (``time_kind = received``), converted to UTC.
``action`` from :data:`OPERATIONS` (``REST.GET.OBJECT`` → read, ``REST.GET.BUCKET`` → list,
``REST.HEAD.OBJECT`` → head, ``REST.PUT.OBJECT`` → write, ``REST.DELETE.OBJECT`` /
``BATCH.DELETE.OBJECT`` → delete …; bucket-configuration operations such as
``REST.GET.VERSIONING`` → other).  ``resource_uri`` is ``s3://bucket/key``; for a listing without a
key, ``s3://bucket/<prefix>`` from the request-URI's ``prefix`` parameter (else ``s3://bucket/``).
``outcome`` from HTTP status and error code (403 / ``AccessDenied`` → denied, other 4xx/5xx →
error; a status logged as ``-`` with no error code → NA: the log does not say whether the request
got anything, and NA is how the report says "no outcome logged").  ``bytes`` = bytes sent.  ``principal`` = requester (``-`` → NA, ``principal_type``
anonymous; assumed-role ARN → role; ``svc:…`` → service; a canonical user id → account).
``correlation`` = the role session name of an assumed-role requester.  ``raw`` = the named fields
(``-`` → ``None``, quotes removed) as a :class:`LogLine`: a
:class:`~replaybook.sources._record.SourceRecord` holding the line's bytes (``raw.text``) and
parsed on first use.  ``line_no`` = the 1-based line.

Errors
------
A path that does not exist or cannot be opened raises :class:`~replaybook.errors.InputError`.
A line that does not have the format's shape, or whose time is not a date-time, or a count of
which (bytes sent, object size, total time, turn-around time) is 2**63 or more — not a count S3
logs, and no column could hold it (a negative one, ``-5``, does not have the shape) — is quarantined
with file, line and byte offset (an unterminated unparsable last line as ``pending``), and so is
a line holding NUL bytes (:data:`NUL_IN_LINE`; S3 writes none, so the line is damaged even when
its fields still match); a truncated/corrupt gzip or a file that is not text at all
(:func:`~._cloud.looks_binary`) → a file-level quarantine row.  Files are opened
read-only and never modified.
"""

from __future__ import annotations

import re
from collections import deque
from itertools import repeat
from pathlib import Path
from typing import Iterable
from urllib.parse import parse_qs, unquote, unquote_plus

from .._jsonl import ZERO_FILL, is_zero_fill, iter_text_lines, quarantine_row
from .._text import safe_str
from ..frames import LoadResult
from ._cloud import (
    NUL_IN_LINE,
    http_outcome,
    line_share,
    load_each,
    new_row,
    path_uri,
    redact_text,
    role_session_name,
    sniff_lines,
)
from ._record import SliceRecord, SourceRecord
from .registry import Source, register

__all__ = ["load_s3_access", "parse_line", "object_key", "sniff", "LogLine", "FIELDS", "OPERATIONS",
           "KEYLESS_BATCH_ACTIONS", "LOADER", "SOURCE"]

#: Registry name, quarantine ``loader`` and ``access.source`` value.
LOADER = SOURCE = "aws.s3_access"
TIME_KIND = "received"

#: Field names in log order (S3 User Guide, "Amazon S3 server access log format").
FIELDS = (
    "bucket_owner", "bucket", "time", "remote_ip", "requester", "request_id", "operation", "key",
    "request_uri", "http_status", "error_code", "bytes_sent", "object_size", "total_time",
    "turn_around_time", "referer", "user_agent", "version_id", "host_id", "signature_version",
    "cipher_suite", "authentication_type", "host_header", "tls_version", "access_point_arn",
    "acl_required", "source_region",
)
_TAIL = FIELDS[17:]

#: S3 access-log ``operation`` → ACCESS action; anything else is ``other``.
OPERATIONS = {
    **dict.fromkeys(("REST.GET.OBJECT", "WEBSITE.GET.OBJECT", "REST.COPY.OBJECT_GET",
                     "REST.COPY.PART_GET", "REST.POST.SELECT"), "read"),
    **dict.fromkeys(("REST.GET.BUCKET", "REST.GET.BUCKETVERSIONS", "REST.GET.UPLOADS",
                     "REST.GET.UPLOAD", "REST.GET.SERVICE"), "list"),
    **dict.fromkeys(("REST.HEAD.OBJECT", "WEBSITE.HEAD.OBJECT", "REST.HEAD.BUCKET",
                     "REST.GET.OBJECT_ATTRIBUTES"), "head"),
    **dict.fromkeys(("REST.PUT.OBJECT", "REST.POST.OBJECT", "REST.COPY.OBJECT", "REST.PUT.PART",
                     "REST.COPY.PART", "REST.POST.UPLOADS", "REST.POST.UPLOAD", "REST.POST.RESTORE",
                     "REST.PUT.BUCKET"), "write"),
    **dict.fromkeys(("REST.DELETE.OBJECT", "BATCH.DELETE.OBJECT", "REST.POST.MULTI_OBJECT_DELETE",
                     "REST.DELETE.UPLOAD", "REST.DELETE.BUCKET", "S3.EXPIRE.OBJECT",
                     "S3.CREATE.DELETEMARKER"), "delete"),
}
_LIST_OPS = frozenset(k for k, v in OPERATIONS.items() if v == "list")

_HEAD = (r"^(?P<bucket_owner>\S+) (?P<bucket>\S+) \[(?P<time>[^\]]*)\] (?P<remote_ip>\S+) "
         r"(?P<requester>\S+) (?P<request_id>\S+) (?P<operation>\S+) (?P<key>\S+) "
         r"(?P<request_uri>-|\".*?\") (?P<http_status>\d{3}|-) (?P<error_code>\S+) "
         r"(?P<bytes_sent>\d+|-) (?P<object_size>\d+|-) (?P<total_time>\d+|-) "
         r"(?P<turn_around_time>\d+|-) ")
# Three patterns, tried in order: quotes inside quoted fields are rare, and the stricter the
# pattern the less backtracking.  Tail fields never contain spaces, and the ten the format names
# (version id … source region) are never quoted: a quoted token may only follow all ten, as a
# field of a later version of the format.  (A user agent written ``x" "y z`` is one field, not a
# user agent ``x`` and a version id ``y z``: the second pattern reads it.)
_LINES = (
    re.compile(_HEAD + r"(?P<referer>-|\"[^\"]*\") (?P<user_agent>-|\"[^\"]*\")"
               r"(?P<tail>(?: [^ \"]+){%d}(?: (?:\"[^\"]*\"|[^ \"]+))*|(?: [^ \"]+){0,%d}) ?$"
               % (len(_TAIL), len(_TAIL) - 1), re.S),
    re.compile(_HEAD + r"(?P<referer>-|\"[^\"]*\") (?P<user_agent>-|\".*\")"
               r"(?P<tail>(?: [^ \"]+)*) ?$", re.S),
    re.compile(_HEAD + r"(?P<referer>-|\".*?\") (?P<user_agent>-|\".*\")"
               r"(?P<tail>(?: [^ \"]+)*) ?$", re.S),
)
#: Lines longer than this (characters) are only tried with the two linear-time patterns.
_MAX_BACKTRACK_LINE = 4096

_TIME = re.compile(r"^(\d{1,2})/([A-Za-z]{3})/(\d{4}):(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))? ([+-])(\d{2}):?(\d{2})$")
#: Operations of a batch whose line names the bucket, not the objects: a multi-object delete is
#: one ``REST.POST.MULTI_OBJECT_DELETE`` line (key ``-``) besides a ``BATCH.DELETE.OBJECT`` line
#: per key; the access join reads it so (:data:`replaybook.access_join.KEYLESS_BATCHES`).
KEYLESS_BATCH_ACTIONS = frozenset({"REST.POST.MULTI_OBJECT_DELETE"})

_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1)}
_SNIFF = re.compile(rb"^\S+ \S+ \[\d{1,2}/[A-Za-z]{3}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}\] \S+ \S+ \S+ "
                    rb"[A-Z0-9_]+\.[A-Z0-9_]+(?:\.[A-Z0-9_]+)* \S+ (?:-|\")")
#: the start of a line that a cut or damage left short of :data:`_SNIFF`: a canonical owner id
#: (an owner id and a bucket name — S3's rules: 3–63 of a-z 0-9 . - — and what follows; a line of
#: a hash alone counts only last, where a cut leaves one: sha256sum's "<hex>  name" / "<hex> *name"
#: and numbers are lines of another kind)
_OWNER_START = re.compile(rb"^[0-9a-f]{64} [a-z0-9][a-z0-9.\-]{1,62}(?: .*)?$")
_OWNER_CUT = re.compile(rb"^[0-9a-f]{8,64}$")
_TAIL_TOKEN = re.compile(r'"[^"]*"|[^ "]+')
_CANONICAL_ID = re.compile(r"^[0-9a-f]{64}$")


def _outcome_of(status: int | None, error_code: str | None) -> str | None:
    """``access.outcome`` of an S3 server access log line: :func:`http_outcome` of its HTTP
    status and error code, but ``None`` (NA) where the status field is ``-`` and no error code is
    logged — a line that does not say how the request ended is not read as allowed."""
    if status is None and not error_code:
        return None
    return http_outcome(status, error_code)


def _iso_time(s: str) -> str:
    """``13/Sep/2026:10:00:21 +0000`` → ``2026-09-13T10:00:21+00:00`` (returned unchanged when
    it does not have that shape, so that :func:`~._cloud.finish` quarantines it)."""
    m = _TIME.match(s)
    if not m:
        return s
    d, mon, y, hh, mm, ss, frac, sign, tzh, tzm = m.groups()
    month = _MONTHS.get(mon.lower())
    if month is None:
        return s
    f = f".{frac}" if frac else ""
    return f"{y}-{month:02d}-{int(d):02d}T{hh}:{mm}:{ss}{f}{sign}{tzh}:{tzm}"


def _unquote_field(v: str) -> str | None:
    if v == "-":
        return None
    if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
        v = v[1:-1]
        return v if v != "-" else None
    return v


def parse_line(line: str) -> dict | None:
    """Split one access-log line into ``{field: value}`` (``-`` → ``None``, quotes removed,
    extra trailing fields under ``extra_fields`` as a list); ``None`` when the line does not
    have the format's shape."""
    m = None
    for i, pat in enumerate(_LINES):
        if i == 2 and len(line) > _MAX_BACKTRACK_LINE:
            break
        m = pat.match(line)
        if m:
            break
    if not m:
        return None
    g = m.groupdict()
    tail = _TAIL_TOKEN.findall(g.pop("tail") or "")
    out: dict = {}
    for k in FIELDS[:17]:
        out[k] = _unquote_field(g[k]) if k != "time" else g[k]
    for k, v in zip(_TAIL, tail):
        out[k] = _unquote_field(v)
    extra = tail[len(_TAIL):]
    if extra:
        out["extra_fields"] = [_unquote_field(v) for v in extra]
    return out


def _principal_type(requester: str | None) -> str:
    if requester is None:
        return "anonymous"
    if requester.startswith("svc:"):
        return "service"
    if ":assumed-role/" in requester:
        return "role"
    if ":federated-user/" in requester:
        return "federated"
    if requester.endswith(":root"):
        return "root"
    if ":user/" in requester:
        return "user"
    if _CANONICAL_ID.match(requester):
        return "account"
    return "unknown"


def _list_prefix(request_uri: str | None) -> str | None:
    if not request_uri:
        return None
    parts = request_uri.split(" ")
    target = parts[1] if len(parts) >= 2 else parts[0]
    q = target.find("?")
    if q < 0:
        return None
    vals = parse_qs(target[q + 1:], keep_blank_values=True).get("prefix")
    return vals[0] if vals else None


#: Operations whose access-log ``key`` is URL-encoded once, a space as ``+``: the records S3
#: writes for its own work (lifecycle ``S3.EXPIRE.OBJECT``, ``S3.CREATE.DELETEMARKER``,
#: ``S3.TRANSITION…``) and the per-object records of a multi-object delete.  Every other
#: operation's key is encoded twice (``a b`` → ``a%2520b``).
ENCODED_ONCE_PREFIXES = ("S3.", "BATCH.DELETE.")


def object_key(operation: str | None, key: str, request_uri: str | None) -> str:
    """The object key an access-log record names, from its ``key`` field as S3 writes it.

    The format says the key is URL-encoded; in practice S3 encodes it **twice** for requests
    (``REST.GET.OBJECT``: ``demo/a b.csv`` → ``demo/a%2520b.csv``) and once for the records of
    its own lifecycle and batch deletes (:data:`ENCODED_ONCE_PREFIXES`; ``demo/old+file.csv``
    for ``demo/old file.csv``).  Decoded once, a key holding a ``%`` of its own — or one encoded
    once where twice was expected — is ambiguous (``e%2541`` is ``e%41`` or ``eA``), so the
    record's ``Request-URI`` decides when it has one: the path the client sent, percent-decoded
    (``/bucket/key`` path-style, ``/key`` virtual-hosted), is the key, and the decoding that
    gives it wins.  Without a request-URI (``-``), the operation decides as above.
    """
    if "%" not in key and "+" not in key:
        return key
    once = unquote_plus(key)
    if operation and operation.startswith(ENCODED_ONCE_PREFIXES):
        return once
    twice = unquote(once)
    paths = _request_paths(request_uri)
    if paths:
        for cand in (twice, unquote_plus(once), once):
            for path in paths:
                if path == "/" + cand or (path.endswith("/" + cand) and path.startswith("/")
                                          and "/" not in path[1:len(path) - len(cand) - 1]):
                    return cand
    return twice


def _request_paths(request_uri: str | None) -> tuple[str, ...]:
    """The path of a ``Request-URI`` field (``GET /bucket/a%20b HTTP/1.1``) percent-decoded, as
    S3 reads it (``+`` as a space, and as itself); ``()`` when there is none."""
    if not request_uri:
        return ()
    parts = request_uri.split(" ")
    target = parts[1] if len(parts) >= 2 else parts[0]
    if target.startswith(("http://", "https://")):
        target = "/" + target.split("://", 1)[1].partition("/")[2]
    target = target.partition("?")[0]
    if not target.startswith("/"):
        return ()
    return (unquote(target), unquote_plus(target)) if "+" in target else (unquote(target),)


def _int(v: str | None) -> int | None:
    """A decimal count; ``None`` for ``-``, anything else, or 2**63 and more (not a count: a
    line holding one is quarantined, :func:`_beyond_64_bits`).  Leading zeros are read past."""
    if v is None or not (v.isascii() and v.isdigit()) or len(v.lstrip("0")) > 19:  # ("²" is a digit int() refuses)
        return None
    n = int(v)
    return n if n < 2**63 else None


#: The fields the format logs as decimal counts, by the User Guide's names (the HTTP status is
#: three digits by the pattern)
_COUNTS = {"bytes_sent": "bytes sent", "object_size": "object size", "total_time": "total time",
           "turn_around_time": "turn-around time"}


def _beyond_64_bits(rec: dict) -> str | None:
    """Why a parsed line's counts cannot be read (:data:`_COUNTS`): the first one of 2**63 or
    more — no byte count or time S3 logs is that large, so the line is damaged there, as one
    holding ``-5`` is (which the pattern already refuses); ``None`` when every count fits."""
    for k, name in _COUNTS.items():
        v = rec.get(k)
        if v is not None and _int(v) is None:
            shown = v if len(v) <= 40 else v[:40] + "…"
            return (f"not an S3 server access log line: {name} {shown} is beyond 64 bits (no count "
                    "the format logs is): the line is damaged there")
    return None


def _record_of(line: bytes | str) -> dict:
    """The ``raw`` dict of one access-log line as the loader builds it: :func:`parse_line` of
    the line (bytes decoded as UTF-8, undecodable bytes replaced, surrogate-safe) with
    credentials redacted in the request-URI, referer and user agent.

    Raises:
        ValueError: the line does not have the format's shape (the loader quarantines such
            lines and never makes a :class:`LogLine` of them).
    """
    text = safe_str(line.decode("utf-8", "replace")) if isinstance(line, bytes) else line
    rec = parse_line(text)
    if rec is None:
        raise ValueError("not an S3 server access log line")
    for k in ("request_uri", "referer", "user_agent"):
        if rec.get(k):
            rec[k] = redact_text(rec[k])
    return rec


_VALUE_SET = SourceRecord._value.__set__  # the per-instance slots of the base class
_TEXT_SET = SourceRecord.text.__set__
_NEW = object.__new__


class LogLine(SliceRecord):
    """The ``raw`` cell of an S3 access row: a :class:`~._record.SourceRecord` whose text is the
    line's bytes as they stand in the file (without the line end) and whose parser is
    :func:`_record_of` (shared by every line).

    A line is held either as its bytes (``LogLine(text)``) or, for the lines of a whole file
    (:meth:`lines`), as a reference to the file's bytes and the line's place in them
    (:class:`~._record.SliceRecord`): :attr:`text` slices it on use, so a million lines need
    not be copied out one by one.

    Both ways of reading a file (the per-line reference and :mod:`._s3_fast`) make these, so
    the two frames' ``raw`` cells are of one type and compare equal as dicts.
    """

    __slots__ = ()
    _parse = staticmethod(_record_of)  # one parser for all lines (shadows the base's slot)

    def __init__(self, text: bytes | str, value: dict | None = None):
        _TEXT_SET(self, text)
        if value is not None:
            _VALUE_SET(self, value)

    @classmethod
    def many(cls, texts: list) -> list:
        """``[LogLine(t) for t in texts]`` without a Python-level call per line (C-level
        allocation and slot stores)."""
        out = list(map(_NEW, repeat(cls, len(texts))))
        deque(map(_TEXT_SET, out, texts), 0)
        return out

    @classmethod
    def lines(cls, src: bytes, spans: list[int]) -> list:
        """One line of ``src`` per span, a span being ``start << 32 | length`` (byte offsets;
        lines shorter than 4 GiB), made without a Python-level call per line."""
        return cls.slices(src, spans)


def _line_row(path: Path, spath: str, line_no: int, offset: int, raw: bytes, pending: bool,
              quarantine: list[dict]) -> dict | None:
    """The access row of one non-blank line (``raw`` without its newline), or ``None`` after
    adding a quarantine row for a line that does not have the format's shape."""
    if b"\x00" in raw:  # (S3 writes none: the file is damaged here, whatever the fields say)
        quarantine.append(quarantine_row(path, None, LOADER, ZERO_FILL if pending and is_zero_fill(raw) else NUL_IN_LINE,
                                         line_no=line_no, offset=offset, raw=raw))
        return None
    text = safe_str(raw.decode("utf-8", "replace"))
    rec = parse_line(text)
    if rec is None:
        quarantine.append(quarantine_row(
            path, None, LOADER,
            "unterminated last line (still being written?)" if pending
            else "not an S3 server access log line (fields do not match the format)",
            kind="pending" if pending else "invalid", line_no=line_no, offset=offset, raw=raw))
        return None
    bad = _beyond_64_bits(rec)
    if bad is not None:  # (a silent NA had hidden the damage: the line is set aside, as "-5" is)
        quarantine.append(quarantine_row(path, None, LOADER, bad, line_no=line_no, offset=offset, raw=raw))
        return None
    for k in ("request_uri", "referer", "user_agent"):
        if rec.get(k):
            rec[k] = redact_text(rec[k])
    op = rec["operation"] or ""
    row = new_row(SOURCE, TIME_KIND, spath, line_no)
    row["ts"] = _iso_time(rec["time"])
    row["principal"] = rec["requester"]
    row["principal_type"] = _principal_type(rec["requester"])
    row["action"] = OPERATIONS.get(op, "other")
    row["action_raw"] = op
    bucket = rec["bucket"]
    if bucket:
        if rec["key"] is not None:
            row["resource_uri"] = path_uri("s3", bucket, object_key(op, rec["key"], rec["request_uri"]))
        elif op in _LIST_OPS:
            row["resource_uri"] = path_uri("s3", bucket, _list_prefix(rec["request_uri"]))
        else:
            row["resource_uri"] = path_uri("s3", bucket, None)
    status = _int(rec["http_status"])
    row["error_code"] = rec["error_code"]
    row["outcome"] = _outcome_of(status, rec["error_code"])
    row["bytes"] = 0 if rec["bytes_sent"] is None else _int(rec["bytes_sent"])
    row["request_id"] = rec["request_id"]
    row["user_agent"] = rec["user_agent"]
    row["correlation"] = role_session_name(rec["requester"])
    row["raw"] = LogLine(raw, rec)
    return row


def _cr_parts(offset: int, raw: bytes, pending: bool) -> list[tuple[int, bytes, bool]]:
    """``(offset, text, unterminated)`` of each line a line holds: itself, or — when it holds a
    lone CR, which no field can (S3 writes none, and an HTTP request line or header cannot carry
    one) — each non-blank part between its CRs, lines joined by an editor that wrote CR line
    ends.  Only the last part of an unterminated last line is unterminated."""
    if b"\r" not in raw:
        return [(offset, raw, pending)]
    out = []
    at = offset
    pieces = raw.split(b"\r")
    for k, piece in enumerate(pieces):
        if piece.strip():
            out.append((at, piece, pending and k == len(pieces) - 1))
        at += len(piece) + 1
    return out


def _read_file(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict]) -> None:
    """The access rows of one log file's text, line by line (see :func:`load_s3_access`)."""
    spath = str(path)
    extra_lines = 0
    for line_no, offset, raw, pending in iter_text_lines(data):
        for at, part, cut in _cr_parts(offset, raw, pending):
            row = _line_row(path, spath, line_no, at, part, cut, quarantine)
            if row is None:
                continue
            if "extra_fields" in row["raw"]:
                extra_lines += 1
            rows.append(row)
    if extra_lines:
        info["extra_fields"] = extra_lines


def load_s3_access(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load S3 server access log files into the ``access`` frame.

    Args:
        paths: files and/or folders (walked recursively, every regular file, sorted; gzip
            recognised by magic bytes).

    Returns:
        :class:`~replaybook.frames.LoadResult` with ``frame`` shaped by
        :data:`~replaybook.frames.ACCESS` (sorted by ``ts``), ``quarantine`` for lines that do
        not parse, and one ``inputs`` entry per file (``sha256``, ``records``, ``extra_fields``:
        lines carrying fields newer than :data:`FIELDS`; ``skipped``/``reason`` for an empty
        file).

    Raises:
        InputError: a path does not exist or a file cannot be opened.

    Lines are split by a whole-file pattern (:mod:`._s3_fast`) that gives exactly
    :func:`_load_reference`'s result; lines it does not take, and files where it could differ,
    are read line by line by that reference path.
    """
    from ._s3_fast import load

    return load(paths)


def _load_reference(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """:func:`load_s3_access` line by line: the definition of its result (tests compare the
    fast path against it).  Same arguments, result and errors."""
    return load_each(paths, LOADER, _read_file)


def sniff(sample: bytes) -> float:
    """Confidence that ``sample`` is an S3 server access log: the share of the first 50
    non-blank lines that start like one (owner, bucket, ``[dd/Mon/yyyy:HH:MM:SS +zzzz]``, IP,
    requester, request id, ``KIND.METHOD.RESOURCE`` operation, key, request-URI) × 0.95; a last
    line the sample cut off is not counted (:func:`~._cloud.sniff_lines`).  A line that starts
    with a bucket owner's canonical id but stops short of the rest (cut, damaged) is neither
    for nor against (:func:`~._cloud.line_share`): one record and a cut line is still a log."""
    seen = ok = cut = 0
    lines = [raw.rstrip(b"\r") for raw in sniff_lines(sample).split(b"\n")[:50]]
    lines = [raw for raw in lines if raw.strip()]
    for i, raw in enumerate(lines):
        seen += 1
        if _SNIFF.match(raw):
            ok += 1
        elif _OWNER_START.match(raw) or (i == len(lines) - 1 and _OWNER_CUT.match(raw)):
            cut += 1
    return 0.95 * line_share(ok, ok, seen, cut)


register(Source(
    name=LOADER,
    frame="access",
    sniff=sniff,
    load=load_s3_access,
    doc="Amazon S3 server access logs (space-delimited; S3 User Guide 'Amazon S3 server access log format')",
))
