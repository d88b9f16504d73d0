"""Google Cloud Audit Logs → the ``access`` frame (source ``gcp.audit``).

Format origin
-------------
Cloud Logging ``LogEntry`` (logging/v2) whose ``protoPayload`` is a
``type.googleapis.com/google.cloud.audit.AuditLog`` ("Understanding audit logs"; the AuditLog
reference), as written by ``gcloud logging read --format=json`` (a JSON array), Logging sinks
to Cloud Storage / Pub/Sub (JSON Lines), or the ``entries.list`` API (``{"entries": [...]}``).
Cloud Storage specifics from "Cloud Audit Logs with Cloud Storage": Data Access entries
(``cloudaudit.googleapis.com%2Fdata_access``) with ``methodName`` ``storage.objects.get`` /
``storage.objects.list`` / ``storage.objects.create`` / ``storage.objects.delete`` … and
``resourceName`` ``projects/_/buckets/<bucket>[/objects/<object>]``; custom audit information
sent as ``x-goog-custom-audit-<key>`` request headers.

Shapes and quirks handled
-------------------------
* proto3 JSON omits default values: ``status`` may be absent or ``{}`` (code 0 = OK), and
  ``authorizationInfo[].granted`` is absent when false — the outcome therefore comes from
  ``status.code``, never from ``granted``;
* ``timestamp`` with 0 – 9 fractional digits (nanoseconds kept);
* entries that are not audit logs (``jsonPayload`` / ``textPayload``, or a ``protoPayload`` of
  another ``@type``) are valid but are not access records: counted per file as
  ``inputs[i]["ignored_lines"]``, not quarantined; an entry of an audit log (its ``logName`` is
  ``…/logs/cloudaudit.googleapis.com…``) with no ``protoPayload`` object is damaged — the
  request it records is lost — and is quarantined with its line;
* an audit log's entry whose ``protoPayload`` names no ``@type`` (and no ``serviceName``, which
  with ``methodName`` marks an AuditLog anywhere) is read as an AuditLog when it names a
  ``methodName`` — a row, and a note (``entry <line_no>: protoPayload has no @type …: read as an
  AuditLog …``) — and is quarantined with its line when it names none: the request it records
  cannot be read.  Only a ``protoPayload`` that names another ``@type`` is ignored;
* numbers as strings (``"numResponseItems": "3"``; proto3 JSON writes int64 as strings).

The rows
--------
==============  =============================================================================
column          from
==============  =============================================================================
ts              ``timestamp`` — when the event happened (``time_kind = event``), UTC; an entry
                without one takes its ``receiveTimestamp``, as Cloud Logging does (a note says so)
principal       ``authenticationInfo.principalEmail`` (else ``principalSubject``)
principal_type  ``…gserviceaccount.com`` → service_account; other e-mail → user; none → anonymous
action          :data:`METHODS` for Cloud Storage; other methods by their last verb
                (``….networks.insert`` → write)
action_raw      ``methodName``
resource_uri    ``projects/_/buckets/B/objects/K`` → ``gs://B/K``; ``…/buckets/B`` → ``gs://B/``;
                other services: ``resourceName`` as given
outcome         ``status.code`` 0/absent → allowed; 7 PERMISSION_DENIED and 16 UNAUTHENTICATED →
                denied; any other code → error.  A code written as a decimal string (``"7"``)
                or a ``google.rpc.Code`` name (``"PERMISSION_DENIED"``) is read as that code; a
                status that says no code (not an object; a code that is a fraction, a boolean,
                an object, an unknown name) → error, never allowed, with a note
error_code      the status code as text (``"7"``) when not 0; an unread or named code as
                written (``"PERMISSION_DENIED"``, ``7.5``, ``{"x": 1}``)
rows            ``numResponseItems`` (AuditLog field, or inside ``metadata``)
request_id      ``insertId`` (the log entry's unique id; audit entries carry no request id)
user_agent      ``requestMetadata.callerSuppliedUserAgent``
correlation     the first ``x-goog-custom-audit-<key>`` value found under ``protoPayload.metadata``
                whose key is in :data:`CORRELATION_KEYS`
raw             the LogEntry, strings surrogate-safe, URL signatures redacted
==============  =============================================================================

Errors
------
A path that does not exist or cannot be opened raises :class:`~replaybook.errors.InputError`.
A line that is not JSON or not an object, an audit entry without ``timestamp`` (and
``receiveTimestamp``) or with a time
that is not a date-time → quarantine row with file and line; truncated/corrupt gzip and binary
data → a file-level quarantine row.  An entry whose ``status`` code cannot be read keeps its row
(outcome ``error``) and adds a note to its file's ``inputs`` entry (``notes``: ``entry <line_no>:
protoPayload.status.code … is not a google.rpc.Code …``).  Files are opened read-only and never modified.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

from .._jsonl import quarantine_row, sample_objects
from ..frames import LoadResult
from ._cloud import (
    clean,
    json_preview,
    json_records,
    record_error,
    load_each,
    new_row,
    path_uri,
    damaged_json_lines,
    line_share,
    sniff_lines,
    to_int,
    count_or_note,
    verb_action,
)
from .registry import Source, register

__all__ = ["load_gcp_audit", "sniff", "METHODS", "CORRELATION_KEYS", "DENIED_CODES", "LOADER", "SOURCE"]

#: Registry name, quarantine ``loader`` and ``access.source`` value.
LOADER = SOURCE = "gcp.audit"
TIME_KIND = "event"

AUDIT_TYPE = "type.googleapis.com/google.cloud.audit.AuditLog"

#: ``google.rpc.Code`` values that mean the caller was refused: 7 PERMISSION_DENIED,
#: 16 UNAUTHENTICATED.
DENIED_CODES = frozenset({7, 16})

#: ``google.rpc.Code`` names (google/rpc/code.proto) → their numbers: a status whose ``code``
#: is written as the name is read as that code.
RPC_CODES = {
    "OK": 0, "CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4,
    "NOT_FOUND": 5, "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8,
    "FAILED_PRECONDITION": 9, "ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12,
    "INTERNAL": 13, "UNAVAILABLE": 14, "DATA_LOSS": 15, "UNAUTHENTICATED": 16,
}

#: Cloud Storage ``methodName`` → ACCESS action (others: by verb, see the module docstring).
METHODS = {
    "storage.objects.get": "read",
    "storage.objects.list": "list",
    "storage.buckets.list": "list",
    "storage.managedFolders.list": "list",
    "storage.folders.list": "list",
    "storage.objects.create": "write",
    "storage.objects.insert": "write",
    "storage.objects.update": "write",
    "storage.objects.patch": "write",
    "storage.objects.compose": "write",
    "storage.objects.copy": "write",
    "storage.objects.rewrite": "write",
    "storage.objects.restore": "write",
    "storage.objects.move": "write",
    "storage.objects.delete": "delete",
    "storage.buckets.get": "other",
    "storage.buckets.getIamPolicy": "other",
    "storage.getIamPermissions": "other",
}

#: ``x-goog-custom-audit-<key>`` header names read as ``correlation`` (first found wins).
CORRELATION_KEYS = (
    "x-goog-custom-audit-correlation-id",
    "x-goog-custom-audit-correlation",
    "x-goog-custom-audit-door-call",
    "x-goog-custom-audit-request-id",
    "x-goog-custom-audit-door-session",
)

_GCS = re.compile(r"^projects/[^/]+/buckets/([^/]+)(?:/objects/(.*))?$", re.S)
_WRAPPERS = ("entries",)


def _resource_uri(name: Any) -> str | None:
    if not isinstance(name, str) or not name:
        return None
    m = _GCS.match(name)
    if m:
        return path_uri("gs", m.group(1), m.group(2))
    return name


def _action(method: str | None) -> str:
    if not method:
        return "other"
    if method in METHODS:
        return METHODS[method]
    last = method.rsplit(".", 1)[-1]
    return verb_action(last[:1].upper() + last[1:])


def _custom_audit(meta: Any, depth: int = 0) -> dict[str, str]:
    """Every ``x-goog-custom-audit-*`` key/value under ``meta`` (nested dicts searched)."""
    found: dict[str, str] = {}
    if depth > 6 or not isinstance(meta, dict):
        return found
    for k, v in meta.items():
        if isinstance(k, str) and k.lower().startswith("x-goog-custom-audit-") and isinstance(v, str):
            found.setdefault(k.lower(), v)
        elif isinstance(v, dict):
            for kk, vv in _custom_audit(v, depth + 1).items():
                found.setdefault(kk, vv)
    return found


def _principal(auth: Any) -> tuple[str | None, str]:
    auth = auth if isinstance(auth, dict) else {}
    p = auth.get("principalEmail") or auth.get("principalSubject")
    if not isinstance(p, str) or not p:
        return None, "anonymous"
    if p.endswith(".gserviceaccount.com") or p.startswith("serviceAccount:"):
        return p, "service_account"
    if "@" in p or p.startswith("user:"):
        return p, "user"
    return p, "unknown"


def _status_code(status: Any) -> tuple[int | None, str | None, str | None]:
    """``(code, as written, unread)`` of ``protoPayload.status`` (a ``google.rpc.Status``).

    No status, ``null``, ``{}`` or a status without ``code`` (proto3 JSON leaves out the
    default, 0 OK): ``(0, None, None)``.  A code written as an integer, an integral number
    (``7.0``) or a decimal string (``"7"``, as proto3 JSON may write numbers) is read; so is a
    ``google.rpc.Code`` name (``"PERMISSION_DENIED"`` → 7), kept as written.  Anything else — a
    status that is not an object, a code that is a boolean, a fraction, a number outside
    google.rpc.Code's 0–16, an object, an unknown name — is ``(None, <the value as text>, <what was unread>)``
    (``"protoPayload.status"`` or ``"protoPayload.status.code"``): the request's outcome is not
    known, which is not success."""
    if status is None:
        return 0, None, None
    if not isinstance(status, dict):
        return None, _as_text(status), "protoPayload.status"
    raw = status.get("code")
    if raw is None:
        return 0, None, None
    if isinstance(raw, str) and raw.strip() in RPC_CODES:
        return RPC_CODES[raw.strip()], raw, None
    code = None if isinstance(raw, bool) else raw if isinstance(raw, int) else to_int(raw)
    if code is None or not 0 <= code <= 16:  # (google.rpc.Code defines 0 OK … 16 UNAUTHENTICATED)
        return None, _as_text(raw), "protoPayload.status.code"
    return code, str(code), None


def _as_text(v: Any) -> str:
    """A value as the error code's text: a string as it is, anything else as JSON (200 chars)."""
    if isinstance(v, str):
        return clean(v)[:200]
    return clean(json_preview(v).decode("utf-8", "replace"))[:200]


def _row(entry: dict, path: str, line_no: int | None,
         notes: list[str] | None = None) -> tuple[dict | None, str | None]:
    """The access row of one audit entry, or ``(None, why)``; what the row could not say goes
    to ``notes`` (the file's ``inputs`` notes)."""
    pp = entry["protoPayload"]
    ts = entry.get("timestamp")
    received = None
    if not isinstance(ts, str) or not ts:
        # (LogEntry.timestamp: "If omitted, Logging assigns it the receiveTimestamp")
        received = entry.get("receiveTimestamp")
        if not isinstance(received, str) or not received:
            return None, "audit log entry without a timestamp or receiveTimestamp"
        ts = received
    row = new_row(SOURCE, TIME_KIND, path, line_no)
    row["ts"] = ts
    if received is not None and notes is not None:
        notes.append(f"entry {line_no}: no timestamp; its receiveTimestamp (when Cloud Logging received it, "
                     "as Logging itself assigns it) is used")
    row["principal"], row["principal_type"] = _principal(pp.get("authenticationInfo"))
    method = pp.get("methodName") if isinstance(pp.get("methodName"), str) else None
    row["action"] = _action(method)
    row["action_raw"] = method
    row["resource_uri"] = _resource_uri(pp.get("resourceName"))
    code, written, unread = _status_code(pp.get("status"))
    if unread:  # a status is there, but says no code: never taken as success
        row["outcome"] = "error"
        row["error_code"] = written
        if notes is not None:
            notes.append(f"entry {line_no}: {unread} {written} is not a google.rpc.Code; "
                         "outcome error (the request's outcome is unknown), error_code as written")
    elif not code:
        row["outcome"] = "allowed"
    else:
        row["outcome"] = "denied" if code in DENIED_CODES else "error"
        row["error_code"] = written
    meta = pp.get("metadata") if isinstance(pp.get("metadata"), dict) else {}
    n = pp.get("numResponseItems", meta.get("numResponseItems"))
    row["rows"] = count_or_note(n, "numResponseItems", f"entry {line_no}", notes)
    rid = entry.get("insertId")
    row["request_id"] = rid if isinstance(rid, str) and rid else None
    rm = pp.get("requestMetadata") if isinstance(pp.get("requestMetadata"), dict) else {}
    ua = rm.get("callerSuppliedUserAgent")
    row["user_agent"] = ua if isinstance(ua, str) and ua else None
    custom = _custom_audit(meta)
    row["correlation"] = next((custom[k] for k in CORRELATION_KEYS if k in custom), None)
    row["raw"] = clean(entry)
    for k in ("principal", "action_raw", "resource_uri", "request_id", "user_agent", "correlation"):
        if isinstance(row[k], str):
            row[k] = clean(row[k])
    return row, None


def _classify(obj: Any) -> tuple[str, str | None]:
    """``("audit" | "ignored" | "invalid", why)`` for one JSON value: for ``"invalid"`` why it
    cannot be read, for ``"audit"`` what the file's notes should say of it (or None)."""
    if not isinstance(obj, dict):
        return "invalid", f"not a JSON object ({type(obj).__name__})"
    pp = obj.get("protoPayload")
    if isinstance(pp, dict):
        kind = pp.get("@type")
        if "AuditLog" in str(kind or "") or ("methodName" in pp and "serviceName" in pp):
            return "audit", None
        if isinstance(kind, str) and kind.strip() or not _audit_log(obj):
            return "ignored", None  # a payload of another @type, or of a log that is not an audit log
        # an audit log's entry whose protoPayload names no @type (and no serviceName)
        method = pp.get("methodName")
        if isinstance(method, str) and method.strip():
            return "audit", ("protoPayload has no @type and no serviceName: read as an AuditLog, as its logName "
                             f"is a Cloud Audit Log and it names methodName {clean(method)[:200]!r}")
        return "invalid", ("an audit log entry (logName " + _AUDIT_LOG + "…) whose protoPayload has no @type and no "
                           "methodName: the request it records cannot be read")
    if _audit_log(obj):  # an audit entry whose record of the request is missing: damaged, not ignored
        return "invalid", ("an audit log entry (logName " + _AUDIT_LOG + "…) without a protoPayload object"
                           + ("" if pp is None else f" (it is {type(pp).__name__})")
                           + ": the request it records cannot be read")
    if any(k in obj for k in ("jsonPayload", "textPayload", "protoPayload")) or \
            ("logName" in obj and ("insertId" in obj or "timestamp" in obj)):
        return "ignored", None
    return "invalid", "not a Cloud Logging LogEntry (no logName / payload)"


#: the log name every Cloud Audit Log has (``projects/P/logs/cloudaudit.googleapis.com%2Fdata_access`` …)
_AUDIT_LOG = "cloudaudit.googleapis.com"


def _audit_log(obj: dict) -> bool:
    """``obj`` names a Cloud Audit Log as its ``logName`` (URL-encoded ``%2F`` or not)."""
    name = obj.get("logName")
    return isinstance(name, str) and ("/logs/" + _AUDIT_LOG) in name


def _skip_document(doc: dict) -> str | None:
    kind, _ = _classify(doc)
    return "JSON object that is not a LogEntry" if kind == "invalid" and not _audit_log(doc) else None


def _read_file(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict]) -> None:
    """The access rows of one file's text (see :func:`load_gcp_audit`)."""
    spath = str(path)
    ignored = 0
    notes: list[str] = []
    for it in json_records(path, data, info, _WRAPPERS, LOADER, quarantine, _skip_document):
        kind, why = _classify(it.obj)
        if kind == "ignored":
            ignored += 1
            continue
        row = None
        if kind == "audit":
            note = why
            row, why = _row(it.obj, spath, it.line_no, notes)
            if row is not None and note:
                notes.append(f"entry {it.line_no}: {note}")
        if row is None:
            quarantine.append(quarantine_row(path, None, LOADER, record_error(info, it.line_no, why),
                                             line_no=it.line_no, offset=it.offset,
                                             raw=it.raw if it.raw is not None else json_preview(it.obj)[:400]))
            continue
        rows.append(row)
    if ignored:
        info["ignored_lines"] = ignored
    if notes:
        info.setdefault("notes", []).extend(notes)


def load_gcp_audit(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load Cloud Audit Logs LogEntries (JSON Lines, a JSON array, or ``{"entries": [...]}``).

    Args:
        paths: files and/or folders (walked recursively, every regular file, sorted; gzip
            recognised by magic bytes).

    Returns:
        :class:`~replaybook.frames.LoadResult` with ``frame`` shaped by
        :data:`~replaybook.frames.ACCESS` (sorted by ``ts``), ``quarantine`` for unusable
        lines, and one ``inputs`` entry per file (``sha256``, ``records``, ``ignored_lines``:
        valid non-audit entries; ``skipped``/``reason`` for empty files and JSON documents
        that hold no entries).

    Raises:
        InputError: a path does not exist or a file cannot be opened.
    """
    return load_each(paths, LOADER, _read_file)


def sniff(sample: bytes) -> float:
    """Confidence that ``sample`` holds Cloud Audit Logs entries.

    JSON Lines: the share of the first 50 non-blank lines (a last line the sample cut off not
    counted, :func:`~._cloud.sniff_lines`) that are LogEntries (``logName`` or
    ``insertId`` with a ``protoPayload``/``jsonPayload``/``textPayload``), × 0.95 when at least
    one is an AuditLog, × 0.5 otherwise (plain application logs are not access records).  A JSON
    array or ``{"entries": [`` document naming ``protoPayload`` and ``AuditLog``: 0.9.
    """
    s = sample.lstrip(b"\xef\xbb\xbf \t\r\n")
    if s[:1] in (b"[", b"{") and b'"protoPayload"' in s and b"google.cloud.audit.AuditLog" in s \
            and (s[:1] == b"[" or re.match(rb'^\{\s*"entries"\s*:', s)):
        return 0.9
    seen, objects = sample_objects(sniff_lines(s))
    ok = audit = 0
    for o in objects:
        payload = any(k in o for k in ("protoPayload", "jsonPayload", "textPayload"))
        if payload and ("logName" in o or "insertId" in o):
            ok += 1
            if isinstance(o.get("protoPayload"), dict) and "AuditLog" in str(o["protoPayload"].get("@type", "")):
                audit += 1
    return (0.95 if audit else 0.5) * line_share(ok, len(objects), seen,
                                                 damaged_json_lines(sniff_lines(s), len(objects), seen))


#: A Cloud Logging sink's file in Cloud Storage (Cloud Logging, "View logs routed to Cloud
#: Storage"): ``<LOG_ID>/YYYY/MM/DD/<HH:MM:SS>_<HH:MM:SS>_<S|A><n>.json``, one hour's entries per
#: shard; the audit logs' LOG_IDs are ``cloudaudit.googleapis.com/<activity|data_access|
#: system_event|policy>``.
_SINK_NAME = re.compile(r"^\d\d:\d\d:\d\d_\d\d:\d\d:\d\d_[SA]\d+\.json$")
_AUDIT_LOG_IDS = frozenset({"activity", "data_access", "system_event", "policy"})


def sink_path(path: str | Path) -> bool:
    """Whether ``path`` is where a Cloud Logging sink writes audit log entries to Cloud Storage
    (:data:`_SINK_NAME` under ``cloudaudit.googleapis.com/<log>/YYYY/MM/DD/``): a file there is
    GCP audit evidence whatever its bytes hold, so one whose content no source recognises (text
    that is not JSON, binary bytes) is read by this loader and quarantined as damaged — never
    listed as "not evidence"."""
    p = Path(path)
    parts = p.parts
    if not _SINK_NAME.match(p.name) or len(parts) < 6:
        return False
    service, log_id, year, month, day = parts[-6:-1]
    return (service == "cloudaudit.googleapis.com" and log_id in _AUDIT_LOG_IDS
            and len(year) == 4 and len(month) == len(day) == 2 and (year + month + day).isdigit())


register(Source(
    name=LOADER,
    frame="access",
    sniff=sniff,
    load=load_gcp_audit,
    claims_name=sink_path,
    doc="Google Cloud Audit Logs (LogEntry with protoPayload google.cloud.audit.AuditLog), "
        "JSON Lines / JSON array / entries.list",
))
