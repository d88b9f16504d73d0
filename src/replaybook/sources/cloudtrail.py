"""AWS CloudTrail logs → the ``access`` frame (source ``aws.cloudtrail``).

Format origin
-------------
AWS CloudTrail User Guide, "CloudTrail record contents" (``eventVersion`` 1.0 – 1.11) and
"CloudTrail log file examples"; "Validating CloudTrail log file integrity" for digest files;
the ``LookupEvents`` API reference (``Event`` with ``CloudTrailEvent`` as a JSON *string*); the
Amazon EventBridge User Guide, "AWS API Call via CloudTrail" events.  Shapes read, decided by
content, gzip recognised by magic bytes — the file name only decides for a file whose content no
source recognises, at a delivery path (:func:`delivery_path`): damaged CloudTrail evidence, read
here and quarantined:

* a **delivery file** ``{"Records": [ … ]}`` (``.json`` or ``.json.gz``), alone or as a whole
  ``AWSLogs/<account>/CloudTrail/<region>/YYYY/MM/DD/`` tree;
* **digest files** (``AWSLogs/<account>/CloudTrail-Digest/…``: a JSON object with
  ``digestStartTime``/``logFiles`` and no ``Records``) — valid, but hold no events: **skipped and
  counted**, each as an ``inputs`` entry with ``skipped: True`` and a ``reason``; any other JSON
  object without ``Records`` is skipped the same way;
* **LookupEvents exports**: JSON Lines (or the CLI's ``{"Events": [ … ]}``) whose
  ``CloudTrailEvent`` holds the record as a JSON string; the record's ``eventTime`` is used, the
  export's own ``EventTime`` (local offset, e.g. ``+11:00``) only when the record lacks one;
* **EventBridge envelopes** (``{"detail-type": "AWS API Call via CloudTrail", "detail": {…}}``)
  one per line; envelopes whose ``detail`` is not a CloudTrail record (S3 ``Object Created``
  notifications …) are valid but not ours: counted as ``ignored_lines`` on the ``inputs`` entry;
* **CloudTrail Insights** files (``AWSLogs/<account>/CloudTrail-Insight/…``, records with
  ``eventType: AwsCloudTrailInsight`` / ``eventCategory: Insight``): summaries of unusual API
  activity CloudTrail computed, not requests — a file of them alone is skipped and counted (as a
  digest file is), one among other records counted as ``ignored_lines``;
* plain JSON Lines of records (CloudTrail Lake / CloudWatch Logs exports) and JSON arrays.

The rows
--------
One row per CloudTrail record — storage events and all others (``DescribeInstances``,
``AssumeRole`` …), so nothing is dropped; only S3 events get storage URIs: those of
``eventSource`` ``s3.amazonaws.com`` and, for directory buckets (S3 Express One Zone),
``s3express.amazonaws.com`` (:data:`S3_EVENT_SOURCES`; a directory bucket's object ARN
``arn:aws:s3express:<region>:<account>:bucket/<name>/<key>`` is ``s3://<name>/<key>``) — but
not a directory bucket's ``CreateSession``, the session credentials its SDK asks for before
its reads and writes (:data:`NOT_STORAGE`: another cloud event, with the bucket's ARN).

===============  ==========================================================================
column           from
===============  ==========================================================================
ts               ``eventTime`` — when the request **completed** (``time_kind = completed``), UTC
principal        ``userIdentity.arn``; without an ARN: ``invokedBy`` (AWS service),
                 ``accountId`` (``AWSAccount``), else ``userName`` / ``principalId``
principal_type   ``userIdentity.type`` normalised (:data:`PRINCIPAL_TYPES`): AssumedRole → role,
                 IAMUser → user, AWSService (or no type but ``invokedBy``) → service,
                 ``accountId: "anonymous"`` → anonymous …
action           S3 data/bucket events from :data:`S3_ACTIONS`; other S3 events ``other``;
                 other services by the name's verb (:func:`~._cloud.verb_action`)
resource_uri     S3: ``resources[]`` of type ``AWS::S3::Object`` (``ARN`` or ``ARNPrefix`` for a
                 listed prefix) → ``s3://bucket/key``, else ``requestParameters.bucketName`` +
                 ``key`` / ``prefix``, else the bucket ARN → ``s3://bucket/``, else (a request that
                 names no bucket: ``ListBuckets``) ``s3://``; other services: the first
                 ``resources[].ARN`` as given, else NA
outcome          no ``errorCode`` (absent, ``null``, ``""``) → allowed; ``AccessDenied``-like codes →
                 denied; other codes → error.  An ``errorCode`` that is not text (``403``, ``true``,
                 an object) says an error without saying which: error, never allowed, with a note
error_code       ``errorCode``; one that is not text as written in JSON (``403``, ``{"code":"x"}``)
bytes            ``additionalEventData.bytesTransferredOut`` (bytes, S3 data events)
request_id       ``requestID``; for an event without one (a console sign-in, an event an AWS
                 service emits: ``requestID`` is optional) its ``eventID``, the id CloudTrail gives
                 each event — so that an event delivered twice (CloudTrail delivers at least once,
                 in one file or two) is one event to the access join, its copy listed in
                 ``duplicates`` as a requestID copy is
correlation      ``userIdentity.sessionContext.sourceIdentity`` (or ``userIdentity.sourceIdentity``),
                 else the role session name of an assumed-role ARN
raw              the CloudTrail record (envelopes kept under ``_envelope``), strings made
                 surrogate-safe, presigned-URL signatures redacted; for compact delivery files
                 a :class:`~._record.SourceRecord` that keeps the record's source bytes and
                 parses them into that dict on first use (it compares equal to it)
line_no          the 1-based record index in a delivery file / array, the line in JSON Lines
===============  ==========================================================================

Errors
------
A path that does not exist or cannot be opened raises :class:`~replaybook.errors.InputError`.
Everything else is per file or per record: a record that is not a JSON object or has no
``eventTime``/``eventName``, a line that is not JSON, a time that is not a date-time → a
quarantine row with file and line/record index; a record of a delivery document (or array)
holding a raw control character (a NUL byte, an unescaped tab in a string: JSON allows them
only escaped) → a quarantine row with the line and byte offset where the record starts, its
index in ``Records``, its ``eventID`` and the character's byte offset, the other records read
(:func:`~._cloud.json_items`); a truncated or corrupt gzip → a file-level
quarantine row (plus whatever could be read before the damage); binary data → one file-level
quarantine row; a delivery document whose ``Records`` is not a list, or a JSON object without
``Records`` at a delivery path (:func:`delivery_path`; not a digest) → one file-level
quarantine row (``damaged CloudTrail delivery file: …``), never skipped as not CloudTrail.  A file
at a delivery path is this loader's even when no source recognises its content (a gzip stream
corrupt from its start, text that is not JSON): its problem is quarantined, and the file counts
as a CloudTrail delivery file nothing was read from.  A record whose ``errorCode`` is not text keeps its row (outcome ``error``) and
adds a note to its file's ``inputs`` entry (``notes``: ``record <line_no>: errorCode 403 is not
a CloudTrail error code …``).  Files are opened read-only and never modified.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

from .._jsonl import parse_json, quarantine_row, sample_objects
from ..frames import LoadResult
from ._cloud import (
    clean,
    http_outcome,
    json_preview,
    json_records,
    record_error,
    load_each,
    new_row,
    path_uri,
    role_session_name,
    damaged_json_lines,
    line_share,
    sniff_lines,
    count_or_note,
    verb_action,
)
from .registry import Source, register

__all__ = ["load_cloudtrail", "sniff", "S3_ACTIONS", "S3_EVENT_SOURCES", "NOT_STORAGE", "is_storage_event", "KEYLESS_BATCH_ACTIONS", "LOADER", "SOURCE"]

#: Registry name, quarantine ``loader`` and ``access.source`` value.
LOADER = SOURCE = "aws.cloudtrail"
TIME_KIND = "completed"

#: CloudTrail ``eventName`` of S3 (``eventSource`` ``s3.amazonaws.com``) → ACCESS action.
#: S3 events not listed (bucket configuration: GetBucketAcl, PutBucketPolicy …) are ``other``.
S3_ACTIONS = {
    **dict.fromkeys(("GetObject", "SelectObjectContent", "GetObjectTorrent"), "read"),
    **dict.fromkeys(("ListObjects", "ListObjectsV2", "ListObjectVersions", "ListBuckets",
                     "ListMultipartUploads", "ListParts", "ListDirectoryBuckets"), "list"),
    **dict.fromkeys(("HeadObject", "HeadBucket", "GetObjectAttributes"), "head"),
    **dict.fromkeys(("PutObject", "CopyObject", "UploadPart", "UploadPartCopy",
                     "CreateMultipartUpload", "CompleteMultipartUpload", "PostObject",
                     "RestoreObject", "WriteGetObjectResponse", "CreateBucket",
                     "RenameObject", "AppendObject"), "write"),
    **dict.fromkeys(("DeleteObject", "DeleteObjects", "DeleteObjectVersion",
                     "AbortMultipartUpload", "DeleteBucket"), "delete"),
}

#: ``eventName`` of S3 batches whose record names the bucket but never the objects: a
#: multi-object delete's keys (up to 1,000) are not logged, as they would not fit an event (S3
#: User Guide, "Logging options for Amazon S3"); the access join reads them so
#: (:data:`replaybook.access_join.KEYLESS_BATCHES`).
KEYLESS_BATCH_ACTIONS = frozenset({"DeleteObjects"})

_TYPES = {
    "AssumedRole": "role",
    "IAMUser": "user",
    "IdentityCenterUser": "user",
    "Directory": "user",
    "Root": "root",
    "FederatedUser": "federated",
    "WebIdentityUser": "federated",
    "SAMLUser": "federated",
    "AWSService": "service",
    "AWSAccount": "account",
    "Unknown": "unknown",
}

_S3_ARN = re.compile(r"^arn:aws[\w-]*:s3:::([^/]+)(?:/(.*))?$", re.S)
#: a directory bucket's (S3 Express One Zone) ARN: ``arn:aws:s3express:<region>:<account>:bucket/<name>[/<key>]``
_S3_EXPRESS_ARN = re.compile(r"^arn:aws[\w-]*:s3express:[^:/]*:[^:/]*:bucket/([^/]+)(?:/(.*))?$", re.S)
#: ``eventSource`` of S3's requests: general purpose buckets, and directory buckets (S3 Express
#: One Zone), whose data events CloudTrail logs from ``s3express.amazonaws.com``
S3_EVENT_SOURCES = frozenset({"s3.amazonaws.com", "s3express.amazonaws.com"})
#: ``(eventSource, eventName)`` of S3 events that are no storage request: a directory bucket's
#: ``CreateSession`` hands out the session credentials its SDK asks for before its reads and
#: writes (as STS's ``AssumeRole`` does) — no door call makes it, and it reaches no object
NOT_STORAGE = frozenset({("s3express.amazonaws.com", "CreateSession")})


def is_storage_event(source: object, name: object) -> bool:
    """A record of ``eventSource`` ``source`` and ``eventName`` ``name`` is a storage request:
    an S3 event (:data:`S3_EVENT_SOURCES`) other than those of :data:`NOT_STORAGE`."""
    return source.__class__ is str and source in S3_EVENT_SOURCES and (source, name) not in NOT_STORAGE
_OBJECT_TYPES = ("AWS::S3::Object", "AWS::S3Express::Object")
_DIGEST_KEYS = ("digestStartTime", "digestEndTime", "logFiles", "digestSignatureAlgorithm")
_WRAPPERS = ("Records", "Events")


def _s3_arn_uri(arn: Any) -> str | None:
    if not isinstance(arn, str):
        return None
    m = _S3_ARN.match(arn) or _S3_EXPRESS_ARN.match(arn)
    if not m:
        return None
    return path_uri("s3", m.group(1), m.group(2))


def _resources(rec: dict) -> list | tuple | dict | str:
    """``rec["resources"]`` when it can be walked (a list, or a dict/string whose items are
    never resource objects); anything else (a number, ``true``) walks as empty instead of
    crashing the load."""
    res = rec.get("resources") or []
    return res if isinstance(res, (list, dict, str)) else []


def _s3_uri(rec: dict) -> str | None:
    resources = [r for r in _resources(rec) if isinstance(r, dict)]
    for r in resources:
        if r.get("type") in _OBJECT_TYPES:
            u = _s3_arn_uri(r.get("ARN") or r.get("ARNPrefix"))
            if u:
                return u
    rp = rec.get("requestParameters")
    if isinstance(rp, dict):
        bucket = rp.get("bucketName")
        if isinstance(bucket, str) and bucket:
            for k in ("key", "prefix"):
                v = rp.get(k)
                if isinstance(v, str):
                    return path_uri("s3", bucket, v)
            return path_uri("s3", bucket, None)
    for r in resources:
        u = _s3_arn_uri(r.get("ARN") or r.get("ARNPrefix"))
        if u:
            return u
    # an S3 request that names no bucket (ListBuckets): all of the account's S3, still storage
    return "s3://"


def _principal(ui: dict) -> tuple[str | None, str]:
    typ = ui.get("type")
    arn = ui.get("arn")
    invoked = ui.get("invokedBy")
    if isinstance(arn, str) and arn:
        principal = arn
    elif typ == "AWSService" or (typ is None and invoked):
        principal = invoked or ui.get("principalId")
    elif typ == "AWSAccount":
        principal = ui.get("accountId") or ui.get("principalId")
    else:
        principal = ui.get("userName") or ui.get("principalId") or ui.get("accountId")
    if ui.get("accountId") == "anonymous" or principal == "anonymous":
        ptype = "anonymous"
    elif isinstance(typ, str) and typ in _TYPES:  # a list/dict type must not crash the load
        ptype = _TYPES[typ]
    elif invoked and not arn:
        ptype = "service"
    else:
        ptype = "unknown"
    return (principal if isinstance(principal, str) and principal else None), ptype


def _correlation(ui: dict) -> str | None:
    ctx = ui.get("sessionContext") if isinstance(ui.get("sessionContext"), dict) else {}
    for v in (ctx.get("sourceIdentity"), ui.get("sourceIdentity")):
        if isinstance(v, str) and v:
            return v
    return role_session_name(ui.get("arn") if isinstance(ui.get("arn"), str) else None)


_INSIGHT = "CloudTrail Insights event: a summary of unusual activity, not a request"


def _unwrap(obj: Any) -> tuple[str, dict | None, dict | None, str | None]:
    """Classify one JSON value: ``(kind, record, envelope, problem)``.

    kind: ``record`` (record set), ``ignored`` (valid, not a CloudTrail record), ``invalid``.
    """
    if not isinstance(obj, dict):
        return "invalid", None, None, f"not a JSON object ({type(obj).__name__})"
    if "CloudTrailEvent" in obj or ("EventTime" in obj and "EventName" in obj):  # LookupEvents
        inner = obj.get("CloudTrailEvent")
        if isinstance(inner, str):
            inner, err = parse_json(inner.encode("utf-8", "surrogatepass"), exact=False)
            if err is not None:
                inner = None
        env = {k: v for k, v in obj.items() if k != "CloudTrailEvent"}
        rec = dict(inner) if isinstance(inner, dict) else {}
        # the export's own fields fill what the embedded record lacks
        for mine, theirs in (("eventTime", "EventTime"), ("eventName", "EventName"),
                             ("eventSource", "EventSource"), ("eventID", "EventId")):
            if not rec.get(mine) and obj.get(theirs):
                rec[mine] = obj[theirs]
        if not isinstance(rec.get("userIdentity"), dict) and obj.get("Username"):
            rec["userIdentity"] = {"userName": obj["Username"]}
        if not isinstance(inner, dict):
            env["_note"] = "CloudTrailEvent missing or not a JSON object; fields from the export"
        return "record", rec, env, None
    detail = obj.get("detail")
    if isinstance(detail, dict) and ("detail-type" in obj or "source" in obj and "time" in obj):
        env = {k: v for k, v in obj.items() if k != "detail"}
        if "eventName" in detail and "eventTime" in detail:
            return "record", detail, env, None
        return "ignored", None, None, f"EventBridge event {obj.get('detail-type')!r} is not a CloudTrail record"
    if obj.get("eventType") == "AwsCloudTrailInsight" or obj.get("eventCategory") == "Insight":
        # CloudTrail Insights (AWSLogs/<account>/CloudTrail-Insight/…): an unusual-activity summary
        # CloudTrail computed, naming the API in insightDetails — no request anyone made
        return "ignored", None, None, _INSIGHT
    return "record", obj, None, None


def _error_code(rec: dict) -> tuple[str | None, str | None]:
    """``(code, unread)`` of a record's ``errorCode``: ``(None, None)`` when it names no error
    (absent, ``null``, ``""`` — exports that write every column leave it empty); ``(code,
    None)`` for a code (text, as CloudTrail writes every code); ``(<the value as JSON>,
    <a note>)`` for any other value (a number, a boolean, an object, a list): the record says
    the request failed without saying how, which is not success."""
    code = rec.get("errorCode")
    if code is None or code == "":
        return None, None
    if isinstance(code, str):
        return code, None
    written = clean(json_preview(code).decode("utf-8", "replace"))[:200]
    return written, (f"errorCode {written} is not a CloudTrail error code (text); outcome error "
                     "(the request's outcome is unknown), error_code as written")


def _row(rec: dict, env: dict | None, path: str, line_no: int | None,
         notes: list[str] | None = None) -> tuple[dict | None, str | None]:
    """The access row of one record, or ``(None, why)``; what the row could not say goes to
    ``notes`` (the file's ``inputs`` notes)."""
    et, en = rec.get("eventTime"), rec.get("eventName")
    if not isinstance(et, str) or not isinstance(en, str) or not en:
        return None, "not a CloudTrail record (no eventTime / eventName)"
    ui = rec.get("userIdentity") if isinstance(rec.get("userIdentity"), dict) else {}
    row = new_row(SOURCE, TIME_KIND, path, line_no)
    row["ts"] = et
    row["principal"], row["principal_type"] = _principal(ui)
    row["action_raw"] = en
    source = rec.get("eventSource")
    is_s3 = is_storage_event(source, en)  # (a list or object must not crash the load)
    if is_s3:
        row["action"] = S3_ACTIONS.get(en, "other")
        row["resource_uri"] = _s3_uri(rec)
        extra = rec.get("additionalEventData")
        if isinstance(extra, dict):
            row["bytes"] = count_or_note(extra.get("bytesTransferredOut"), "additionalEventData.bytesTransferredOut",
                                         f"record {line_no}", notes)
    else:
        row["action"] = verb_action(en)
        for r in _resources(rec):
            if isinstance(r, dict) and isinstance(r.get("ARN"), str):
                row["resource_uri"] = r["ARN"]
                break
    code, unread = _error_code(rec)
    if env and env.get("_note") and code is None and not unread:
        # a LookupEvents event whose CloudTrailEvent is missing or unreadable: its errorCode —
        # the request's outcome — is in the part that is missing
        unread = ("CloudTrailEvent missing or not a JSON object: the request's outcome (its errorCode) is "
                  "unknown; outcome error, the other fields from the export's own")
    row["error_code"] = code
    if unread:  # an error without a readable code: never taken as success
        row["outcome"] = "error"
        if notes is not None:
            notes.append(f"record {line_no}: {unread}")
    elif code:
        row["outcome"] = http_outcome(None, code)
    elif en == "ConsoleLogin" and isinstance(rec.get("responseElements"), dict) \
            and rec["responseElements"].get("ConsoleLogin") == "Failure":
        row["outcome"] = "denied"
    else:
        row["outcome"] = "allowed"
    rid = rec.get("requestID") or rec.get("requestId")
    if not isinstance(rid, str) or not rid:
        rid = rec.get("eventID")  # an event without a request id: CloudTrail's own id of it
    row["request_id"] = rid if isinstance(rid, str) and rid else None
    ua = rec.get("userAgent")
    row["user_agent"] = ua if isinstance(ua, str) and ua else None
    row["correlation"] = _correlation(ui)
    raw = clean(rec)
    if env:
        raw["_envelope"] = clean(env)
    row["raw"] = raw
    for k in ("principal", "principal_type", "action_raw", "resource_uri", "error_code",
              "request_id", "user_agent", "correlation"):
        if isinstance(row[k], str):
            row[k] = clean(row[k])
    return row, None


#: A CloudTrail delivery file's name (AWS CloudTrail User Guide, "Finding your CloudTrail log
#: files"): ``<account>_CloudTrail_<region>_<YYYYMMDDTHHmmZ>_<unique>.json.gz`` (``.json`` once
#: unpacked), under ``AWSLogs/[<org-id>/]<account>/CloudTrail/<region>/YYYY/MM/DD/``; digest and
#: Insights files are ``…_CloudTrail-Digest_…`` / ``…_CloudTrail-Insight_…``, not this.
_DELIVERY_NAME = re.compile(r"^\d{12}_CloudTrail_[a-z0-9-]+_[^/]*\.json(?:\.gz)?$")


def delivery_path(path: str | Path) -> bool:
    """Whether ``path`` is named as a CloudTrail delivery file (:data:`_DELIVERY_NAME`): a file
    there is CloudTrail evidence whatever its bytes hold, so one whose content no source
    recognises (a corrupt gzip stream, text that is not JSON, ``Records`` that is not a list)
    is read by this loader and quarantined as damaged — never listed as "not evidence"."""
    return bool(_DELIVERY_NAME.match(Path(path).name))


_DAMAGED = "damaged CloudTrail delivery file: "


def _not_a_delivery(doc: dict) -> str | None:
    """Why a JSON object read from a file at a delivery path (:func:`delivery_path`) holds no
    delivery it could be read as: ``Records`` that is not a list, or no ``Records`` at all;
    ``None`` for a delivery document (its ``Records`` a list)."""
    if "Records" in doc:
        v = doc["Records"]
        if isinstance(v, list):
            return None
        kind = ("null" if v is None else "a boolean" if isinstance(v, bool) else "a number" if isinstance(v, (int, float))
                else "a string" if isinstance(v, str) else "an object")
        shown = clean(json_preview(v)[:80].decode("utf-8", "replace"))
        return f"{_DAMAGED}Records is not a list ({kind}: {shown}): the requests it holds cannot be read"
    return f"{_DAMAGED}a JSON object without Records: the requests it held cannot be read"


def _skip_document(doc: dict) -> str | None:
    if any(k in doc for k in _DIGEST_KEYS):
        return "CloudTrail digest file (no Records)"
    kind, _, _, _ = _unwrap(doc)
    if kind != "record" or not ("eventTime" in doc or "CloudTrailEvent" in doc or "detail" in doc):
        return "JSON object without Records: not a CloudTrail log file"
    return None


def _read_file(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict]) -> None:
    """The access rows of one file's text (see :func:`load_cloudtrail`)."""
    spath = str(path)
    ignored = insights = 0
    rows_before, q_before = len(rows), len(quarantine)
    notes: list[str] = []
    at_delivery = delivery_path(path)

    def skip(doc: dict) -> str | None:
        # a lone JSON object whose Records is not a list (a list is read as the delivery) — or,
        # at a delivery path, one that is neither a record nor a digest — is a damaged delivery
        # file: quarantined below, never skipped as "not a CloudTrail log file"
        if "Records" in doc:
            return _not_a_delivery(doc)
        why = _skip_document(doc)
        if why is not None and at_delivery and not any(k in doc for k in _DIGEST_KEYS):
            return _not_a_delivery(doc)
        return why

    for it in json_records(path, data, info, _WRAPPERS, LOADER, quarantine, skip):
        objs = [it.obj]
        if isinstance(it.obj, dict) and isinstance(it.obj.get("Records"), list):
            objs = it.obj["Records"]  # a whole delivery document on one JSON Lines line
        for obj in objs:
            kind, rec, env, why = _unwrap(obj)
            if kind == "ignored":
                ignored += 1
                insights += why == _INSIGHT
                continue
            row, why = (None, why) if kind == "invalid" else _row(rec, env, spath, it.line_no, notes)
            if row is None:
                quarantine.append(quarantine_row(path, None, LOADER, record_error(info, it.line_no, why),
                                                 line_no=it.line_no,
                                                 offset=it.offset,
                                                 raw=it.raw if it.raw is not None else json_preview(obj)[:400]))
                continue
            rows.append(row)
    added = quarantine[q_before:]
    if (at_delivery and added and len(rows) == rows_before and not ignored and not info.get("damaged_gzip")
            and data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] not in (b"{", b"[")):
        # a delivery file is one JSON document: text that is not JSON at all is the file damaged
        # whole (one file-level row, as a corrupt gzip stream is), not lines of some other log
        first = added[0]
        where = f" on line {first['line_no']}" if first.get("line_no") is not None else ""
        del quarantine[q_before:]
        quarantine.append(quarantine_row(path, None, LOADER, f"{_DAMAGED}not JSON ({first['error']}{where}): the "
                                         "requests it holds cannot be read", offset=0, raw=data[:400]))
        return
    if info.get("skipped") and str(info.get("reason") or "").startswith(_DAMAGED):
        why = info.pop("reason")
        del info["skipped"]
        quarantine.append(quarantine_row(path, None, LOADER, why, offset=0, raw=data[:400]))
        return
    if ignored and insights == ignored and len(rows) == rows_before and len(quarantine) == q_before:
        # a file of Insights events only: skipped whole, as a digest file is
        info["skipped"], info["reason"] = True, "CloudTrail Insights file (summaries of unusual activity, not requests)"
    elif ignored:
        info["ignored_lines"] = ignored
    if notes:
        info.setdefault("notes", []).extend(notes)


def load_cloudtrail(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load CloudTrail logs (files and/or folders such as a whole ``AWSLogs/`` tree).

    Args:
        paths: files and/or folders; folders are walked recursively (every regular file, sorted;
            dot-files and symlinks skipped).  Format and gzip are decided by content.

    Returns:
        :class:`~replaybook.frames.LoadResult`: ``frame`` shaped by
        :data:`~replaybook.frames.ACCESS` (sorted by ``ts``), ``quarantine`` for unusable
        records/lines/files, and one ``inputs`` entry per file (``sha256``; ``records``;
        ``skipped``/``reason`` for digest and other non-CloudTrail JSON files;
        ``ignored_lines``; ``damaged_gzip``/``problem``).

    Raises:
        InputError: a path does not exist or a file cannot be opened.

    Delivery files are read by a column-wise fast path (:mod:`._ct_fast`) that gives exactly
    :func:`_load_reference`'s result; every other shape, and any file where the shortcut could
    differ, is read record by record by that reference path.
    """
    from ._ct_fast import load

    return load(paths)


def _load_reference(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """:func:`load_cloudtrail` record by record: the definition of its result (tests compare
    the fast path against it).  Same arguments, result and errors."""
    return load_each(paths, LOADER, _read_file)


_DELIVERY = re.compile(rb'^\s*\{\s*"Records"\s*:\s*\[')
_DIGEST = re.compile(rb'^\s*\{[^\n]{0,2000}?"digest(Start|End)Time"')
#: a delivery document's opening whose ``Records`` is not a list (``{"Records": {…}``, a string,
#: ``null``): damaged, not another format
_RECORDS_NOT_A_LIST = re.compile(rb'^\{\s*"Records"\s*:\s*[^\s\[]')
#: ``aws cloudtrail lookup-events`` as the CLI prints it: ``{"Events": [ … ], "NextToken": …}``,
#: indented by 4 or on one line (``NextToken`` first too, as a tool that sorts keys writes it)
_LOOKUP = re.compile(rb'^\{\s*(?:"NextToken"\s*:\s*(?:"(?:[^"\\]|\\.)*"|null)\s*,\s*)?"Events"\s*:\s*\[\s*(\]|\{)')
_LOOKUP_EVENT = re.compile(rb'"(CloudTrailEvent|EventName|EventId)"\s*:')


def sniff(sample: bytes) -> float:
    """Confidence that ``sample`` (a file's first bytes, decompressed) is a CloudTrail log.

    A delivery file starts with ``{"Records": [`` and names ``eventVersion``/``eventTime``
    (0.95); one whose ``Records`` is not a list (``{"Records": {…``) is a damaged delivery
    file (0.6: read, and quarantined whole); a digest file is claimed at 0.8 so that it reaches this loader and is counted as
    skipped; the CLI's LookupEvents answer ``{"Events": [{…`` naming ``CloudTrailEvent``,
    ``EventName`` or ``EventId`` 0.95 (``{"Events": []}``, a lookup that matched nothing, 0.6);
    JSON Lines score the share of the first 50 non-blank lines (a last line the sample
    cut off not counted, :func:`~._cloud.sniff_lines`) that are CloudTrail
    records, LookupEvents or EventBridge "via CloudTrail" envelopes (× 0.95); a JSON array of
    records 0.9.
    """
    s = sample.lstrip(b"\xef\xbb\xbf \t\r\n")
    if _DELIVERY.match(s):
        return 0.95 if (b'"eventTime"' in s or b'"eventVersion"' in s or b'"Records":[]' in s.replace(b" ", b"")) else 0.6
    if _RECORDS_NOT_A_LIST.match(s):  # a delivery document whose Records is damaged: read, and quarantined
        return 0.6
    if _DIGEST.match(s) and b'"logFiles"' in s:
        return 0.8
    m = _LOOKUP.match(s)
    if m:
        if m.group(1) == b"]":  # no event matched the lookup: still the CLI's answer
            return 0.6
        return 0.95 if _LOOKUP_EVENT.search(s, m.end(1) - 1) else 0.0
    if s[:1] == b"[" and b'"eventVersion"' in s and b'"eventSource"' in s and b'"protoPayload"' not in s:
        return 0.9
    seen, objects = sample_objects(sniff_lines(s))
    ok = sum(1 for o in objects
             if ("CloudTrailEvent" in o and ("EventName" in o or "EventId" in o))
             or {"EventName", "EventTime", "EventSource"} <= o.keys()
             or (isinstance(o.get("detail"), dict) and "eventName" in o["detail"] and "detail-type" in o)
             or {"eventTime", "eventName", "eventSource"} <= o.keys())
    return 0.95 * line_share(ok, len(objects), seen, damaged_json_lines(sniff_lines(s), len(objects), seen))


register(Source(
    name=LOADER,
    frame="access",
    sniff=sniff,
    load=load_cloudtrail,
    claims_name=delivery_path,
    doc="AWS CloudTrail: delivery files ({\"Records\": [...]}, .json.gz, AWSLogs/ trees with digest "
        "files skipped), LookupEvents exports, EventBridge 'AWS API Call via CloudTrail' envelopes",
))
