"""Fast path of the CloudTrail loader (:func:`~.cloudtrail.load_cloudtrail`).

A CloudTrail delivery file (``{"Records": [...]}``) is parsed once with orjson; the records
themselves become the ``raw`` cells (no copy) and the other columns are read from them in one
pass, with the derived values (assumed-role session names, S3 ARN → URI, verb → action, error
code → outcome) computed once per distinct string.  The result is the reference path's
(:func:`~.cloudtrail._read_file` through :func:`~._cloud.finish`) row for row; a file is read
by that reference path instead whenever the shortcut could differ:

* the file is not one JSON object with a ``Records`` list that orjson parses (JSON Lines,
  arrays, LookupEvents exports, EventBridge envelopes, digest files, damaged JSON …);
* any record is not an object, has no string ``eventTime`` / non-empty ``eventName``, or looks
  like a LookupEvents / EventBridge / nested delivery document (``CloudTrailEvent``,
  ``EventTime``, ``detail``, ``Records`` keys);
* a string in the file could hold a credential the reference path redacts (an ``=`` after
  ``sig``/``signature``/``credential``/``token``, any ``\\u`` escape in a file holding ``=``, non-ASCII text
  that case-folds to those names) — the reference's :func:`~._cloud.clean` would change it;
* a record nesting containers more than 200 deep (the reference cuts nesting there in ``raw``).

Strings orjson returns never hold lone surrogates (it refuses them), so the reference's
surrogate cleaning cannot change anything on this path.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

import orjson

from ..frames import LoadResult
from . import cloudtrail as ct
from ._cloud import http_outcome, role_session_name, to_int, verb_action
from ._cloud_fast import load_files

__all__ = ["load", "read_fast", "shallow", "may_hold_secret"]

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
    if r.get("eventSource") == "s3.amazonaws.com":
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
            nbytes = v if (v.__class__ is int and 0 <= v < 2**63) else to_int(v)
    else:
        action = _VERB.get(en)
        if action is None:
            action = _VERB[en] = verb_action(en)
        uri = None
        for x in ct._resources(r):
            if isinstance(x, dict) and isinstance(x.get("ARN"), str):
                uri = x["ARN"]
                break
    code = r.get("errorCode")
    if code.__class__ is not str or not code:
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


def read_fast(path: Path, data: bytes) -> dict[str, list] | None:
    """One delivery file's rows as ACCESS column lists, or ``None`` when the file must be read
    by the reference path."""
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


def load(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """:func:`~.cloudtrail.load_cloudtrail` (same arguments, result and errors)."""
    return load_files(paths, ct.LOADER, lambda path, data, info, quarantine: read_fast(path, data),
                      ct._read_file)
