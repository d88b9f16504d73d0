"""Fast path of the CloudTrail loader (:func:`~.cloudtrail.load_cloudtrail`).

Two tiers, both giving the reference path's (:func:`~.cloudtrail._read_file` through
:func:`~._cloud.finish`) rows, row for row; a file that neither tier takes is read by that
reference path.

**Tier 1 (compact delivery files, no dicts built).**  A delivery file exactly as AWS writes it —
``{"Records":[<record>,<record>,…]}`` with no whitespace between the records — is split by
msgspec into the records' exact source bytes (:class:`msgspec.Raw`), and each record is decoded
into small structs holding only the fields the columns are read from (unknown keys skipped).  Each
``raw`` cell is a :class:`~._record.SliceRecord` over the record's place in the document's text
(no copy per record), parsed on first use
into exactly what the reference puts in ``raw`` (:class:`_RecordParser`: surrogate-cleaned,
redacted, nesting cut as the reference's :func:`~._cloud.clean` does).  The derived values
(verb → action, error code → outcome, S3 ARN → URI) are computed once per distinct string,
assumed-role session names by plain string operations equal to the reference pattern.  Tier 1
declines a file (it goes to tier 2) when:

* the text after a BOM / leading whitespace is not ``{"Records":[`` … ``]}`` with the records
  separated by single commas (checked by length: nothing else fits in the bytes left over), or
  msgspec refuses it (malformed JSON, lone-surrogate escapes, nesting deeper than ~790 levels —
  it reads the document inside 200 extra list levels — so that the stdlib parser the reference
  falls back to when orjson refuses a number beyond the double range can always read it);
* the text is not valid UTF-8, or holds a run of 512+ digits (an integer the stdlib parser may
  refuse), found by sampling every 64th byte;
* any record does not fit the field structs: a field of another JSON type than the reference
  reads without a fallback (``eventTime`` not a string, ``userIdentity`` not an object,
  ``resources`` not a list of objects, an S3 byte count that is an object …);
* any record lacks a string ``eventTime`` / non-empty ``eventName``, or has a
  ``CloudTrailEvent``, ``EventTime``, ``detail`` or ``Records`` key;
* any record's ``errorCode`` is not text or ``null`` (the struct refuses it);
* any S3 record's ``bytesTransferredOut`` is there but no count (the reference notes it);
* a string in the file could hold a credential the reference redacts (:func:`may_hold_secret`).

**Tier 2 (any other delivery document).**  The file is parsed once with orjson; the records
themselves become the ``raw`` cells and the columns are read from them in one pass.  It goes to
the reference path instead when:

* the file is not one JSON object with a ``Records`` list that orjson parses (JSON Lines,
  arrays, LookupEvents exports, EventBridge envelopes, digest files, damaged JSON …);
* any record is not an object, has no string ``eventTime`` / non-empty ``eventName``, or looks
  like a LookupEvents / EventBridge / nested delivery document (``CloudTrailEvent``,
  ``EventTime``, ``detail``, ``Records`` keys);
* any record's ``errorCode`` is neither text nor ``null`` (``403``, ``true``, an object): the
  reference reads it as an error and notes it on the file's ``inputs`` entry;
* any S3 record's ``bytesTransferredOut`` is there but no count (``-1``, past 64 bits, ``"n/a"``):
  the reference notes it on the file's ``inputs`` entry;
* a string in the file could hold a credential the reference path redacts (an ``=`` after
  ``sig``/``signature``/``credential``/``token``, any ``\\u`` escape in a file holding ``=``, non-ASCII text
  that case-folds to those names) — the reference's :func:`~._cloud.clean` would change it;
* a record nesting containers more than 200 deep (the reference cuts nesting there in ``raw``).

Strings orjson returns never hold lone surrogates (it refuses them), so the reference's
surrogate cleaning cannot change anything on these paths.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

import msgspec
import numpy as np
import orjson

from .. import _json
from .._text import deep_safe
from ..frames import LoadResult
from . import cloudtrail as ct
from ._cloud import clean, http_outcome, role_session_name, to_int, verb_action
from ._cloud_fast import Chunks, RemoteReader, finish_columns, load_files
from ._record import MAX_SPAN_SOURCE, SliceRecord

__all__ = ["load", "read_fast", "read_compact", "compact_columns", "compact_block", "REMOTE", "shallow",
           "may_hold_secret"]

# Any "=" that the reference's redaction could act on is preceded by one of these (superset of
# _cloud._SECRET_IN_TEXT's names: every name there ends with one of them).
_EQ_SECRET = r"=(?:(?<=sig=)|(?<=signature=)|(?<=credential=)|(?<=token=))"
_EQ_SECRET_B = re.compile(_EQ_SECRET.encode(), re.I)
_EQ_SECRET_S = re.compile(_EQ_SECRET, re.I)
_BOM = b"\xef\xbb\xbf"
_WS = b" \t\n\r\x0b\x0c"
_EMPTY: dict = {}


def may_hold_secret(data: bytes) -> bool:
    """False only when no string decoded from the JSON text ``data`` can hold a credential that
    :func:`~._cloud.redact_text` would replace (cheap: a byte search, a regex only where ``=``
    occurs)."""
    escapes = b"\\" in data
    if b"=" not in data and not (escapes and (b"\\u003d" in data or b"\\u003D" in data)):
        return False
    if escapes and b"\\u" in data:
        return True  # escapes could spell a name or "="
    if data.isascii():
        return _EQ_SECRET_B.search(data) is not None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return _EQ_SECRET_S.search(text) is not None  # str pattern: same case folding as the reference


def shallow(recs: list) -> bool:
    """True when no record of ``recs`` nests containers more than 200 deep (the reference's
    :func:`~._cloud.clean` cuts nesting below that).  orjson's encoder refuses more than 254
    nested containers: wrapped in 53 lists plus ``recs`` itself, a record may hold at most 200
    before it refuses — at about 1.3 GB/s of JSON, in C, without walking the records in Python."""
    v: list = recs
    for _ in range(_WRAPS):
        v = [v]
    try:
        orjson.dumps(v)
    except orjson.JSONEncodeError:
        return False
    return True


_WRAPS = 53


_RSN: dict[str, str | None] = {}
_ARN_URI: dict[str, str | None] = {}
_VERB: dict[str, str] = {}


def _verb(en: str) -> str:
    """:func:`~._cloud.verb_action` of a non-S3 event name, once per name."""
    action = _VERB.get(en)
    if action is None:
        action = _VERB[en] = verb_action(en)
    return action


def _bytes_out(v) -> int | None:
    """``additionalEventData.bytesTransferredOut`` as the reference reads it (``to_int``; a
    plain non-negative int64 as it is)."""
    return v if (v.__class__ is int and 0 <= v < 2**63) else to_int(v)
_OUTCOME: dict[str, str] = {}


def _fields(r, _rsn=_RSN, _arn_uri=_ARN_URI, _types=ct._TYPES, _s3_actions=ct.S3_ACTIONS,
            _empty=_EMPTY) -> tuple | None:
    """The reference ``_row``'s column values for one record, or ``None`` when the record must
    go the reference way (see the module docstring)."""
    if r.__class__ is not dict or "CloudTrailEvent" in r or "EventTime" in r or "detail" in r \
            or "Records" in r:
        return None
    et = r.get("eventTime")
    en = r.get("eventName")
    if et.__class__ is not str or en.__class__ is not str or not en:
        return None
    ui = r.get("userIdentity")
    if ui.__class__ is not dict:
        ui = _empty
    arn = ui.get("arn")
    typ = ui.get("type")
    if arn.__class__ is str and arn and typ.__class__ is str:
        principal = arn
        ptype = "anonymous" if (ui.get("accountId") == "anonymous" or arn == "anonymous") \
            else _types.get(typ, "unknown")
    else:
        principal, ptype = ct._principal(ui)
    corr = None
    ctx = ui.get("sessionContext")
    if ctx.__class__ is dict:
        corr = ctx.get("sourceIdentity")
        if corr.__class__ is not str or not corr:
            corr = None
    if corr is None:
        corr = ui.get("sourceIdentity")
        if corr.__class__ is not str or not corr:
            if arn.__class__ is str:
                corr = _rsn.get(arn, _rsn)
                if corr is _rsn:
                    corr = _rsn[arn] = role_session_name(arn)
            else:
                corr = None
    nbytes = None
    es = r.get("eventSource")
    if ct.is_storage_event(es, en):
        action = _s3_actions.get(en, "other")
        uri = None
        res = r.get("resources")
        if res.__class__ is list and res:
            x = res[0]
            if x.__class__ is dict and x.get("type") == "AWS::S3::Object":
                a = x.get("ARN") or x.get("ARNPrefix")
                if a.__class__ is str:
                    uri = _arn_uri.get(a)
                    if uri is None:
                        uri = ct._s3_arn_uri(a)
                        if uri:
                            _arn_uri[a] = uri
        if not uri:
            uri = ct._s3_uri(r)  # not the common shape: the reference walk, in full
        extra = r.get("additionalEventData")
        if extra.__class__ is dict:
            v = extra.get("bytesTransferredOut")
            nbytes = _bytes_out(v)
            if nbytes is None and v is not None:
                return None  # no byte count: the reference notes it on the file
    else:
        action = _verb(en)
        uri = None
        for x in ct._resources(r):
            if isinstance(x, dict) and isinstance(x.get("ARN"), str):
                uri = x["ARN"]
                break
    code = r.get("errorCode")
    if code.__class__ is not str or not code:
        if code is not None and code.__class__ is not str:
            return None  # an error code that is not text: the reference notes it on the file
        code = None
        if en == "ConsoleLogin" and isinstance(r.get("responseElements"), dict) \
                and r["responseElements"].get("ConsoleLogin") == "Failure":
            outcome = "denied"
        else:
            outcome = "allowed"
    else:
        outcome = _OUTCOME.get(code)
        if outcome is None:
            outcome = _OUTCOME[code] = http_outcome(None, code)
    rid = r.get("requestID") or r.get("requestId")
    if rid.__class__ is not str or not rid:
        rid = r.get("eventID")  # an event without a request id: CloudTrail's own id of it
        if rid.__class__ is not str or not rid:
            rid = None
    ua = r.get("userAgent")
    if ua.__class__ is not str or not ua:
        ua = None
    return et, principal, ptype, action, en, uri, code, outcome, nbytes, rid, ua, corr


_FIELD_NAMES = ("ts", "principal", "principal_type", "action", "action_raw", "resource_uri",
                "error_code", "outcome", "bytes", "request_id", "user_agent", "correlation")


def _delivery_records(data: bytes) -> list | None:
    """The ``Records`` list of a delivery document exactly as the reference's
    :func:`~._cloud.json_items` would take it, or ``None`` for any other shape."""
    body = data[3:] if data[:3] == _BOM else data
    if body[:1] != b"{":
        body = body.lstrip(_WS)
        if body[:1] != b"{":
            return None
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if doc.__class__ is not dict:
        return None
    recs = doc.get("Records")
    return recs if recs.__class__ is list else None


# -- tier 1: compact delivery files, decoded by msgspec into the fields the columns need ------

class _Ctx(msgspec.Struct, gc=False):
    sourceIdentity: str | None = None


class _UI(msgspec.Struct, gc=False):
    type: str | None = None
    arn: str | None = None
    accountId: str | None = None
    invokedBy: str | None = None
    userName: str | None = None
    principalId: str | None = None
    sourceIdentity: str | None = None
    sessionContext: _Ctx | None = None


class _Res(msgspec.Struct, gc=False):
    type: str | None = None
    ARN: str | None = None
    ARNPrefix: str | None = None


class _Extra(msgspec.Struct, gc=False):
    bytesTransferredOut: int | float | str | bool | None = None


class _Params(msgspec.Struct, gc=False):
    bucketName: Any = None
    key: Any = None
    prefix: Any = None


class _Resp(msgspec.Struct, gc=False):
    ConsoleLogin: Any = None


_UNSET = msgspec.UNSET


class _Rec(msgspec.Struct, gc=False):
    """The keys of one record that the columns are read from (the reference's ``rec.get``:
    a missing key and ``null`` are both ``None``; a JSON type the reference reads differently
    from these makes the decode fail, and the file goes to tier 2)."""

    eventTime: str | None = None
    eventName: str | None = None
    eventSource: str | None = None
    userIdentity: _UI | None = None
    resources: list[_Res] | None = None
    additionalEventData: _Extra | list | str | int | float | bool | None = None
    errorCode: str | None = None
    requestID: str | None = None
    requestId: str | None = None
    eventID: str | None = None
    userAgent: str | None = None
    # requestParameters (read only when the resources give no S3 URI) and responseElements
    # (only for a ConsoleLogin without errorCode) are decoded from the record's text on demand
    CloudTrailEvent: msgspec.Raw = _UNSET     # presence alone sends the file to tier 2
    EventTime: msgspec.Raw = _UNSET
    detail: msgspec.Raw = _UNSET
    Records: msgspec.Raw = _UNSET


_ANY_BUT_OBJECT = list | str | int | float | bool | None


class _WithParams(msgspec.Struct, gc=False):
    requestParameters: _Params | _ANY_BUT_OBJECT = None


class _WithResp(msgspec.Struct, gc=False):
    responseElements: _Resp | _ANY_BUT_OBJECT = None


class _Texts(msgspec.Struct):
    Records: list[msgspec.Raw]


def _wrapped(t, k: int):
    for _ in range(k):
        t = list[t]
    return t


_WRAP = 200  # extra list levels around the document: msgspec (≈ 995 levels) then refuses
             # records nesting deeper than ≈ 790, which the stdlib parser reads at any stack depth
_TEXTS = msgspec.json.Decoder(_wrapped(_Texts, _WRAP))
_REC = msgspec.json.Decoder(_Rec)
_PARAMS = msgspec.json.Decoder(_WithParams)
_RESP = msgspec.json.Decoder(_WithResp)
_OPEN = b"[" * _WRAP
_CLOSE = b"]" * _WRAP
_HEAD = b'{"Records":['
_RUN = 512            # digit runs this long may be integers the stdlib refuses (limit ≥ 640)
_DIGIT_STRIDE = 64
_LONG_DIGITS = re.compile(rb"[0-9]{19}")  # an integer orjson may read as a float, json as an int


def _digit_run(body: bytes, _st=_DIGIT_STRIDE) -> bool:
    """True when ``body`` may hold a run of 512 or more ASCII digits: every sample taken every
    64 bytes across some 512-byte stretch is a digit, and the stretch is all digits.  False
    means it holds none (such a run covers 8 consecutive samples)."""
    d = (np.frombuffer(body, dtype=np.uint8)[::_st] - np.uint8(48)) < 10
    k = _RUN // _st
    if len(d) < k or not d.any():
        return False
    c = np.concatenate(([0], np.cumsum(d, dtype=np.int64)))
    for i in np.flatnonzero(c[k:] - c[:-k] == k).tolist():  # samples i .. i+k-1 are digits
        if body[i * _st:(i + k - 1) * _st + 1].isdigit():
            return True
    return False


def _orjson_ok(text: bytes) -> bool:
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return False
    return True


class _RecordParser:
    """``parse`` of the tier-1 :class:`~._record.SliceRecord` cells of one file: a record's
    text → what the reference path puts in ``raw`` for it.

    The reference parses the whole document with orjson, or — when orjson refuses it (a number
    beyond the double range somewhere) — with the stdlib :mod:`json`; then :func:`~._cloud.clean`.
    Tier 1 has proven the document is nothing but its records (so orjson accepts it exactly
    when it accepts every record), valid UTF-8, free of lone surrogates and of integers the
    stdlib refuses, and not nested deeper than the stdlib reads.  The two parsers agree on
    everything else but integers beyond 64 bits, so the document-wide question is asked only
    for a record that holds a 19-digit run, or that orjson refuses itself.
    """

    __slots__ = ("src", "spans", "_native")

    def __init__(self, src: bytes, spans: np.ndarray):
        self.src = src
        self.spans = spans
        self._native: bool | None = None

    def _file_native(self) -> bool:
        if self._native is None:
            src = self.src
            self._native = all(_orjson_ok(src[start:start + size])
                               for start, size in zip((self.spans >> 32).tolist(),
                                                      (self.spans & 0xFFFFFFFF).tolist()))
        return self._native

    def __call__(self, text: bytes) -> dict:
        """The ``raw`` value of one record of the file, from its text."""
        try:
            v = orjson.loads(text)
            native = _LONG_DIGITS.search(text) is None or self._file_native()
        except orjson.JSONDecodeError:
            native = False
        if not native:
            v = deep_safe(json.loads(text.decode("utf-8"), parse_int=_json.parse_int))
        if may_hold_secret(text) or not shallow([v]):
            v = clean(v)
        return v


def _compact_records(data: bytes) -> tuple[np.ndarray, list, list[_Rec]] | None:
    """``(spans, raws, structs)`` of the records of a compact delivery document: each
    record's place in ``data`` (``start << 32 | length``), its exact bytes
    (:class:`msgspec.Raw`) and its :class:`_Rec` (see the module docstring); or ``None`` when
    tier 1 does not take the text."""
    body = data[3:] if data[:3] == _BOM else data
    if body[:12] != _HEAD:
        body = body.lstrip(_WS)
        if body[:12] != _HEAD:
            return None
    end = len(body.rstrip(b" \t\n\r"))
    if body[end - 2:end] != b"]}" or end < 14 or len(data) >= MAX_SPAN_SOURCE:
        return None
    if not body.isascii():
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if _digit_run(body):
        return None
    try:  # inside _WRAP list levels, so that deep nesting is refused
        v = _TEXTS.decode(b"".join((_OPEN, body, _CLOSE)))
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    for _ in range(_WRAP):
        v = v[0]
    raws = v.Records
    n = len(raws)
    sizes = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    if end != 14 + int(sizes.sum()) + max(n - 1, 0):
        return None  # whitespace between the records, other keys, a repeated "Records" …
    recs = _typed_records(raws)
    if recs is None:
        return None
    # compact: record i starts after the 12-byte head and the records (and commas) before it,
    # the document after what came before it in the file (a BOM, whitespace)
    head = len(data) - len(body) + 12
    starts = np.empty(n, dtype=np.int64)
    if n:
        starts[0] = head
        np.cumsum(sizes[:-1] + 1, out=starts[1:])
        starts[1:] += head
    return (starts << 32) | sizes, raws, recs


def _typed_records(texts: list) -> list | None:
    """The records as :class:`_Rec` structs (one decode per record text: faster than one
    decode of the whole document), or ``None`` when any does not fit."""
    try:
        return list(map(_REC.decode, texts))
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def _params(text) -> Any:
    """The record's ``requestParameters`` as the reference reads it (a dict of the three keys,
    or the non-object value); raises ``msgspec.DecodeError`` for what msgspec cannot take."""
    v = _PARAMS.decode(text).requestParameters
    if v.__class__ is _Params:
        return {"bucketName": v.bucketName, "key": v.key, "prefix": v.prefix}
    return v


_RSN_CACHE: dict[str, str | None] = {}
_CACHE_MAX = 200_000  # distinct values remembered between files (then forgotten at once)


def _session_name(arn: str) -> str | None:
    """:func:`~._cloud.role_session_name` (same result for every string): plain string
    operations for an ``arn:aws:sts::<digits>:assumed-role/<role>/<session>`` without line
    breaks, the reference pattern for anything else; remembered per ARN."""
    name = _RSN_CACHE.get(arn, _RSN_CACHE)
    if name is not _RSN_CACHE:
        return name
    if arn.startswith("arn:aws:sts::") and "\n" not in arn:
        i = arn.find(":assumed-role/", 13)
        if i < 0 or (i > 13 and not arn[13:i].isdecimal()):  # the pattern's \d*: Unicode digits
            name = None
        else:
            j = arn.find("/", i + 14)
            name = arn[j + 1:] or None if j > i + 14 else None
    else:
        name = role_session_name(arn)
    if len(_RSN_CACHE) >= _CACHE_MAX:
        _RSN_CACHE.clear()
    _RSN_CACHE[arn] = name
    return name


_URI_CACHE: dict[str, str | None] = {}


def _s3_uri_of(arn: str) -> str | None:
    """``cloudtrail._s3_arn_uri`` (same result for every string): plain string operations for
    an ``arn:aws:s3:::`` ARN, the reference pattern for anything else; remembered per ARN."""
    uri = _URI_CACHE.get(arn, _URI_CACHE)
    if uri is not _URI_CACHE:
        return uri
    if arn.startswith("arn:aws:s3:::"):
        j = arn.find("/", 13)
        if j < 0:
            uri = "s3://" + arn[13:] + "/" if len(arn) > 13 else None
        else:
            uri = "s3://" + arn[13:] if j > 13 else None
    else:
        uri = ct._s3_arn_uri(arn)
    if len(_URI_CACHE) >= _CACHE_MAX:
        _URI_CACHE.clear()
    _URI_CACHE[arn] = uri
    return uri


def _tfields(r: _Rec, text, _types=ct._TYPES, _s3_actions=ct.S3_ACTIONS,
             _outcome=_OUTCOME, _U=_UNSET, _rsn=_RSN_CACHE.get, _uri=_URI_CACHE.get) -> tuple | None:
    """:func:`_fields` for a tier-1 record struct (``text``: the record's source text)."""
    if r.CloudTrailEvent is not _U or r.EventTime is not _U or r.detail is not _U or r.Records is not _U:
        return None
    et = r.eventTime
    en = r.eventName
    if et is None or not en:
        return None
    ui = r.userIdentity
    if ui is None:
        ui = _NO_UI
    arn = ui.arn
    typ = ui.type
    if arn and typ is not None:
        principal = arn
        ptype = "anonymous" if (ui.accountId == "anonymous" or arn == "anonymous") \
            else _types.get(typ, "unknown")
    else:
        principal, ptype = ct._principal(_ui_dict(ui))
    ctx = ui.sessionContext
    corr = (ctx.sourceIdentity if ctx is not None else None) or ui.sourceIdentity
    if not corr:
        if arn:
            corr = _rsn(arn, _U)
            if corr is _U:
                corr = _session_name(arn)
        else:
            corr = None
    nbytes = None
    res = r.resources
    if ct.is_storage_event(r.eventSource, en):
        action = _s3_actions.get(en, "other")
        uri = None
        if res:
            x = res[0]
            if x.type == "AWS::S3::Object":
                a = x.ARN or x.ARNPrefix
                if a is not None:
                    uri = _uri(a, _U)
                    if uri is _U:
                        uri = _s3_uri_of(a)
        if not uri:  # not the common shape: the reference walk, in full
            uri = ct._s3_uri({"resources": [_res_dict(x) for x in res] if res else None,
                              "requestParameters": _params(text)})
        extra = r.additionalEventData
        if extra.__class__ is _Extra:
            v = extra.bytesTransferredOut
            nbytes = _bytes_out(v)
            if nbytes is None and v is not None:
                return None  # no byte count: the reference notes it on the file
    else:
        action = _verb(en)
        uri = None
        if res:
            for x in res:
                if x.ARN is not None:
                    uri = x.ARN
                    break
    code = r.errorCode
    if not code:
        code = None
        outcome = "allowed"
        if en == "ConsoleLogin":
            resp = _RESP.decode(text).responseElements
            if resp.__class__ is _Resp and resp.ConsoleLogin == "Failure":
                outcome = "denied"
    else:
        outcome = _outcome.get(code)
        if outcome is None:
            outcome = _outcome[code] = http_outcome(None, code)
    return (et, principal, ptype, action, en, uri, code, outcome, nbytes,
            r.requestID or r.requestId or r.eventID or None, r.userAgent or None, corr)


_NO_UI = _UI()
_UI_KEYS = ("type", "arn", "accountId", "invokedBy", "userName", "principalId", "sourceIdentity")


def _ui_dict(ui: _UI) -> dict:
    return {k: getattr(ui, k) for k in _UI_KEYS}


def _res_dict(x: _Res) -> dict:
    return {"type": x.type, "ARN": x.ARN, "ARNPrefix": x.ARNPrefix}


def compact_columns(path: Path, data: bytes, text: Any = None) -> tuple[dict[str, list], tuple[Any, np.ndarray]] | None:
    """Tier 1's reading of one compact delivery file: ``(columns, (text, spans))`` — the
    :data:`_FIELD_NAMES` columns as lists, the file's text (``text`` when given: anything
    that slices as ``data`` does, e.g. :class:`~._cloud_fast.Gunzipped`; else ``data``) and
    each record's place in it (``start << 32 | length``) — or ``None`` when tier 1 does not
    take the file.  (Runs in a load's helper processes too: see :data:`REMOTE`.)"""
    found = None if may_hold_secret(data) else _compact_records(data)
    if found is None:
        return None
    spans, raws, recs = found
    try:
        out = list(map(_tfields, recs, raws))
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    if None in out:
        return None
    columns: dict[str, list] = dict(zip(_FIELD_NAMES, map(list, zip(*out)))) if out else \
        {k: [] for k in _FIELD_NAMES}
    return columns, (data if text is None else text, spans)


def compact_block(path: Path, columns: dict[str, list], source: tuple[Any, np.ndarray]) -> dict[str, list]:
    """The ACCESS column block of a file read by :func:`compact_columns` (``raw`` as
    :class:`~._record.SliceRecord` cells over the file's text)."""
    text, spans = source
    n = len(spans)
    block = columns
    spath = str(path)
    block["time_kind"] = [ct.TIME_KIND] * n
    block["source"] = [ct.SOURCE] * n
    block["rows"] = [None] * n
    block["raw"] = SliceRecord.slices(text, spans.tolist(), _RecordParser(text, spans))
    block["source_file"] = [spath] * n
    block["line_no"] = list(range(1, n + 1))
    return block


def read_compact(path: Path, data: bytes) -> dict[str, list] | None:
    """Tier 1: one compact delivery file's rows as ACCESS column lists (``raw`` as
    :class:`~._record.SliceRecord` cells), or ``None`` when tier 1 does not take the file."""
    found = compact_columns(path, data)
    return None if found is None else compact_block(path, *found)


def _pack(path: Path, data: bytes, info: dict, _extra, shipped) -> tuple | None:
    found = compact_columns(path, data, shipped)
    if found is not None:
        info["numbered"] = "record"  # (a delivery document: line_no is the record's index, as json_records says)
    return found


#: how a load's helper processes read compact delivery files (tier 1); the rest is read in the
#: calling process (see :func:`~._cloud_fast.load_files`)
REMOTE = RemoteReader(pack=_pack, unpack=compact_block,
                      strings=tuple(k for k in _FIELD_NAMES if k != "bytes"))


def read_fast(path: Path, data: bytes) -> dict[str, list] | None:
    """One delivery file's rows as ACCESS column lists (tier 1, else tier 2), or ``None`` when
    the file must be read by the reference path."""
    block = read_compact(path, data)
    if block is not None:
        return block
    recs = _delivery_records(data)
    if recs is None or may_hold_secret(data) or not shallow(recs):
        return None
    out = [_fields(r) for r in recs]
    if None in out:
        return None
    n = len(out)
    block: dict[str, list] = dict(zip(_FIELD_NAMES, map(list, zip(*out)))) if n else \
        {k: [] for k in _FIELD_NAMES}
    spath = str(path)
    block["time_kind"] = [ct.TIME_KIND] * n
    block["source"] = [ct.SOURCE] * n
    block["rows"] = [None] * n
    block["raw"] = recs
    block["source_file"] = [spath] * n
    block["line_no"] = list(range(1, n + 1))
    return block


def _read_file(path: Path, data: bytes, info: dict, quarantine: list[dict], _extra) -> dict | None:
    """One delivery file's block: the fast tiers' columns, else the reference rows as columns."""
    block = read_fast(path, data)
    if block is not None:
        info["numbered"] = "record"  # (a delivery document: line_no is the record's index, as json_records says)
        return block
    rows: list[dict] = []
    ct._read_file(path, data, info, rows, quarantine)
    return Chunks.block_of_rows(rows)


def _finish(blocks: list[dict], quarantine: list[dict], inputs: list[dict]) -> LoadResult:
    chunks = Chunks()
    for block in blocks:
        chunks.add(block)
    return finish_columns(chunks, quarantine, inputs, ct.LOADER)


def load(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """:func:`~.cloudtrail.load_cloudtrail` (same arguments, result and errors)."""
    return load_files(paths, ct.LOADER, _read_file, _finish, REMOTE)
