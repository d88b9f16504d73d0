"""Azure Storage resource logs → the ``access`` frame (source ``azure.storage``).

Format origin
-------------
Azure Monitor resource logs of a storage account's blob / file / dfs service, categories
``StorageRead``, ``StorageWrite``, ``StorageDelete`` — the Microsoft Learn pages "Azure Blob
Storage monitoring data reference" (section "Resource logs": fields that describe the operation,
how it was authenticated, and the service; ``schemaVersion`` 1.0) and the Azure Monitor table
reference "StorageBlobLogs".  Shapes read, by content:

* JSON Lines, one record per line — what a diagnostic setting archives to a storage account
  (``insights-logs-storageread/…/PT1H.json``);
* ``{"records": [ … ]}`` — what it streams to Event Hubs; a JSON array of records;
* Log Analytics exports of the ``StorageBlobLogs`` table (``TimeGenerated``, ``OperationName``,
  ``Uri``, ``RequesterObjectId`` …), mapped onto the same fields.

Records of other Azure resource-log categories in the same file are valid but not storage
access: counted as ``inputs[i]["ignored_lines"]``.

The rows
--------
==============  ============================================================================
column          from
==============  ============================================================================
ts              ``time`` — when storage **received** the request (``time_kind = received``,
                per the docs), UTC; ``2018/11/08 21:09:36.6900118`` (the docs' own example
                shape) is read as UTC as well
principal       ``identity.requester.objectId``, else ``upn``, else ``appId``; NA for SAS /
                account-key / anonymous requests (which carry no identity)
principal_name  ``identity.requester.upn`` where ``principal`` is the object id (the name a reviewer
                knows the requester by); NA otherwise
principal_type  ``identity.type``: OAuth → from ``identity.authorization[].principals[].type``
                (User → user, ServicePrincipal / ManagedIdentity → service_account), else user
                when a ``upn`` is present; SAS → sas; AccountKey → shared_key; Anonymous →
                anonymous; Kerberos → user
action          :data:`OPERATIONS` (GetBlob → read, ListBlobs → list, GetBlobProperties → head,
                PutBlob → write, DeleteBlob → delete …); unknown operations → other, or delete
                in category StorageDelete
resource_uri    ``uri`` (else ``properties.requestUrl``, else ``properties.objectKey``) →
                ``az://<account>/<container>/<blob>`` (percent-decoded); a listing's ``prefix``
                query parameter is appended to the container
outcome         ``statusText`` ending in ``Success`` and 1xx–3xx → allowed; 401/403,
                ``AuthorizationFailure``, ``AuthorizationPermissionMismatch``,
                ``SASAuthorizationError``, ``AuthenticationFailed`` or an
                ``identity.authorization[].result`` of ``Denied`` → denied; else error.  A
                ``statusCode`` that is not an HTTP status (an integer 100–599, RFC 9110 §15, or
                its decimal text) — ``"Unknown"`` (the docs: the request was interrupted), a
                boolean, a fraction, an object, ``0`` — is never allowed: error (denied when
                ``statusText`` or the authorization says so), with a note unless ``Unknown``
error_code      ``statusText`` when it is not a success; else an unread ``statusCode`` as
                written (``"Unknown"``, ``true``, ``{"value":403}``)
bytes           ``properties.responseBodySize`` (bytes)
request_id      ``correlationId`` (the storage request id, ``x-ms-request-id``)
user_agent      ``properties.userAgentHeader`` (surrounding quotes removed)
correlation     ``properties.clientRequestId`` (the ``x-ms-client-request-id`` header)
raw             the record; every URL's SAS token is redacted (:func:`redact_sas`)
==============  ============================================================================

SAS tokens
----------
A SAS URL carries its credential in the query string (``sig=`` is the signature; ``sv``, ``se``,
``sp``, ``skoid`` … describe and scope it).  In ``resource_uri`` the query is dropped; in ``raw``
every URL-valued string keeps only the query parameters in :data:`KEEP_PARAMS` (operation
parameters such as ``restype``, ``comp``, ``prefix``) and has every other value replaced by
``REDACTED``; ``sig=…`` anywhere else in a string is redacted too.

Errors
------
A path that does not exist or cannot be opened raises :class:`~replaybook.errors.InputError`;
a line that is not JSON / not an object / has no ``time``, a time that is not a date-time →
quarantine row with file and line; truncated/corrupt gzip and binary data → a file-level
quarantine row.  A field of another JSON type than the format's (``identity.authorization`` or
its ``principals`` not a list, ``identity`` or ``properties`` not an object, a number where text
belongs) is left out of the columns it feeds — the row is kept, the value stays in ``raw``.
A record whose ``statusCode`` is not an HTTP status (other than the documented ``Unknown``)
keeps its row and adds a note to its file's ``inputs`` entry (``notes``: ``line 3: statusCode
true is not an HTTP status code …``; ``record 3`` in a ``{"records": [...]}`` document or an array,
whose rows' ``line_no`` is the record number).  So does a record whose ``identity`` is not an
object (``"OAuth"``: principal empty), one with no ``operationName`` (action ``other``), and one
with no ``uri``, ``requestUrl`` or ``objectKey`` (``resource_uri`` the whole account,
``az://<account>/``).  A quarantine row of such a document's record says ``record 3: …`` in
its error, and a ``time`` that is not a date-time is quoted as logged.  Files are opened
read-only and never modified.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import parse_qs, unquote, urlsplit

from .._jsonl import quarantine_row, sample_objects
from .._text import safe_str
from ..frames import LoadResult
from ._cloud import (
    http_outcome,
    json_preview,
    at_words,
    json_records,
    record_error,
    load_each,
    new_row,
    redact_text,
    redact_url,
    damaged_json_lines,
    line_share,
    sniff_lines,
    to_int,
    count_or_note,
)
from .registry import Source, register

__all__ = ["load_azure_storage", "sniff", "redact_sas", "OPERATIONS", "KEEP_PARAMS", "LOADER", "SOURCE"]

#: Registry name, quarantine ``loader`` and ``access.source`` value.
LOADER = SOURCE = "azure.storage"
TIME_KIND = "received"

#: Query parameters kept (lower-case) in URLs of ``raw``; every other value is redacted.
KEEP_PARAMS = frozenset({
    "restype", "comp", "prefix", "delimiter", "marker", "maxresults", "include", "timeout",
    "snapshot", "versionid", "blockid", "blocklisttype", "resource", "recursive", "directory",
    "continuation", "action", "position", "mode", "upn", "showonly", "where", "_",
})

#: Storage ``operationName`` → ACCESS action.
OPERATIONS = {
    **dict.fromkeys(("GetBlob", "GetFile", "ReadFile", "QueryBlobContents", "ReadPath"), "read"),
    **dict.fromkeys(("ListBlobs", "ListContainers", "ListFilesystems", "ListFileSystems", "ListPaths",
                     "ListShares", "ListFilesAndDirectories", "ListFiles", "FindBlobsByTags",
                     "GetBlockList", "GetPageRegions"), "list"),
    **dict.fromkeys(("GetBlobProperties", "GetBlobMetadata", "GetContainerProperties",
                     "GetContainerMetadata", "GetFileProperties", "GetFileMetadata",
                     "GetPathProperties", "GetPathStatus", "GetDirectoryProperties",
                     "GetShareProperties", "GetBlobTags"), "head"),
    **dict.fromkeys(("PutBlob", "PutBlock", "PutBlockList", "PutBlockFromURL", "PutBlobFromURL",
                     "PutPage", "PutPageFromURL", "AppendBlock", "AppendBlockFromURL", "CopyBlob",
                     "CopyBlobFromURL", "SetBlobProperties", "SetBlobMetadata", "SetBlobTier",
                     "SnapshotBlob", "UndeleteBlob", "CreateContainer", "CreateFile", "PutRange",
                     "CreatePathFile", "CreatePathDir", "AppendFile", "FlushFile", "RenamePathFile",
                     "RenamePathDir", "CreateDirectory", "SetFileProperties", "SetBlobTags"), "write"),
    **dict.fromkeys(("DeleteBlob", "DeleteContainer", "DeleteFile", "DeleteDirectory",
                     "DeleteFilesystem", "DeleteFileSystem", "DeletePath", "DeleteShare"), "delete"),
}

_AUTH_TYPES = {
    "sas": "sas", "saskey": "sas", "sas key": "sas",
    "accountkey": "shared_key", "account key": "shared_key", "key": "shared_key",
    "anonymous": "anonymous",
    "kerberos": "user",
}
_PRINCIPAL_TYPES = {"user": "user", "serviceprincipal": "service_account",
                    "managedidentity": "service_account", "group": "user"}
_DENIED_TEXT = re.compile(r"(?i)^(authorizationfailure|authorizationpermissionmismatch|"
                          r"sasauthorizationerror|authenticationfailed|authorizationerror|"
                          r"authorizationresourcetypemismatch|authorizationsourceipmismatch|"
                          r"authorizationprotocolmismatch|insufficientaccountpermissions)")
# (RFC 3339 §5.6: "T" and "Z" may be written in lower case)
_SLASH_TIME = re.compile(r"^(\d{4})/(\d{2})/(\d{2})[ Tt](\d{2}:\d{2}:\d{2}(?:\.\d+)?)([Zz]|[+-]\d{2}:?\d{2})?$")
_HAS_TZ = re.compile(r"([Zz]|[+-]\d{2}:?\d{2})$")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}")
_WRAPPERS = ("records", "value")

# Log Analytics (StorageBlobLogs) column → resource-log path
_LA_MAP = {
    "TimeGenerated": ("time",), "OperationName": ("operationName",), "Category": ("category",),
    "StatusCode": ("statusCode",), "StatusText": ("statusText",), "CallerIpAddress": ("callerIpAddress",),
    "CorrelationId": ("correlationId",), "Uri": ("uri",), "AuthenticationType": ("identity", "type"),
    "RequesterObjectId": ("identity", "requester", "objectId"), "RequesterUpn": ("identity", "requester", "upn"),
    "RequesterAppId": ("identity", "requester", "appId"), "AccountName": ("properties", "accountName"),
    "ClientRequestId": ("properties", "clientRequestId"), "UserAgentHeader": ("properties", "userAgentHeader"),
    "ResponseBodySize": ("properties", "responseBodySize"), "ObjectKey": ("properties", "objectKey"),
    "_ResourceId": ("resourceId",),
}


def redact_sas(obj: Any, _depth: int = 0) -> Any:
    """A copy of a parsed record with every URL's non-operation query values replaced by
    ``REDACTED`` (see :data:`KEEP_PARAMS`), ``sig=…`` redacted in any other string, and
    every string made surrogate-safe."""
    if isinstance(obj, str):
        s = safe_str(obj)
        if "?" in s and re.match(r"(?i)^(https?://|/)", s):
            s = redact_url(s, keep=KEEP_PARAMS)
        return redact_text(s)
    if _depth > 200:
        return "…nested too deeply"
    if isinstance(obj, dict):
        return {(safe_str(k) if isinstance(k, str) else k): redact_sas(v, _depth + 1) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact_sas(v, _depth + 1) for v in obj]
    return obj


def _from_log_analytics(o: dict) -> dict:
    rec: dict = {}
    for col, pathk in _LA_MAP.items():
        if col in o and o[col] not in (None, ""):
            d = rec
            for k in pathk[:-1]:
                d = d.setdefault(k, {})
            d[pathk[-1]] = o[col]
    rec["_log_analytics"] = o
    return rec


def _time(v: Any) -> str | None:
    if not isinstance(v, str) or not v:
        return None
    m = _SLASH_TIME.match(v.strip())
    if m:
        y, mo, d, t, tz = m.groups()
        v = f"{y}-{mo}-{d}T{t}{tz or 'Z'}"
    elif not _HAS_TZ.search(v.strip()) and _DATE_TIME.match(v.strip()):
        v = v.strip() + "Z"  # the docs: resource-log times are UTC
    return v  # (anything else as logged: a quarantine row quotes what the file holds)


def _resource_uri(rec: dict, props: dict) -> str | None:
    url = rec.get("uri") if isinstance(rec.get("uri"), str) else props.get("requestUrl")
    account = props.get("accountName") if isinstance(props.get("accountName"), str) else None
    if isinstance(url, str) and url:
        try:
            parts = urlsplit(url)
        except ValueError:
            parts = None
        if parts is not None and parts.hostname:
            host = parts.hostname
            segs = [unquote(s) for s in parts.path.split("/")[1:]]
            if re.match(r"^[a-z0-9]+\.(blob|dfs|file|queue|table|web)\.", host):
                account = host.split(".")[0]
            elif segs and account and segs[0] == account:  # path-style (Azurite, IP endpoints)
                segs = segs[1:]
            elif segs and not account:
                account, segs = segs[0], segs[1:]
            if account:
                path = "/".join(segs)
                query = parse_qs(parts.query, keep_blank_values=True)
                prefix = (query.get("prefix") or [None])[0]
                if prefix and (query.get("comp") == ["list"] or query.get("resource") == ["filesystem"]):
                    path = path.rstrip("/") + "/" + prefix if path else prefix
                elif segs and len(segs) == 1 and path and not path.endswith("/"):
                    path += "/"  # a container on its own
                return f"az://{account}/{path}"
    key = props.get("objectKey")
    if isinstance(key, str) and key.strip("/"):
        return "az://" + unquote(key.lstrip("/"))
    return f"az://{account}/" if account else None


def _preview(v: Any) -> str:
    """A logged value as JSON text for a note (SAS tokens redacted), cut at 60 characters."""
    text = redact_sas(json_preview(v).decode("utf-8", "replace"))
    return text if len(text) <= 60 else text[:59] + "…"


def _listed(v: Any) -> list:
    """``v`` when it is a list, else no items: ``identity.authorization`` and its
    ``principals`` are lists in the format; any other value (a number, a string, an object) is
    left out of the row's derivation — the row is kept, the value stays in ``raw``."""
    return v if isinstance(v, list) else []


def _principal(identity: Any) -> tuple[str | None, str]:
    identity = identity if isinstance(identity, dict) else {}
    req = identity.get("requester") if isinstance(identity.get("requester"), dict) else {}
    principal = next((req[k] for k in ("objectId", "upn", "appId")
                      if isinstance(req.get(k), str) and req[k]), None)
    typ = str(identity.get("type") or "").strip().lower()
    if typ in _AUTH_TYPES and principal is None:
        return None, _AUTH_TYPES[typ]
    ptype = None
    for a in _listed(identity.get("authorization")):
        if isinstance(a, dict):
            for p in _listed(a.get("principals")):
                if isinstance(p, dict) and isinstance(p.get("type"), str):
                    ptype = _PRINCIPAL_TYPES.get(p["type"].lower())
                    if ptype:
                        break
        if ptype:
            break
    if ptype is None:
        if typ == "kerberos" or req.get("upn"):
            ptype = "user"
        elif req.get("appId") or req.get("objectId"):
            ptype = "service_account" if not req.get("upn") and req.get("appId") else "unknown"
        else:
            ptype = _AUTH_TYPES.get(typ, "unknown")
    return principal, ptype


def _status(code: Any) -> tuple[int | None, str | None]:
    """``(HTTP status, None)`` of a record's ``statusCode`` — an integer 100–599 (RFC 9110 §15:
    every valid status code is in that range), an integral number or its decimal text —
    ``(None, None)`` when there is none (absent, ``null``, ``""``), and ``(None, <the value as
    written>)`` for anything else: ``"Unknown"``, a boolean, a fraction, an object, ``0``."""
    if code is None or code == "":
        return None, None
    status = None if isinstance(code, bool) else to_int(code)
    if status is not None and 100 <= status <= 599:
        return status, None
    written = code if isinstance(code, str) else json_preview(code).decode("utf-8", "replace")
    return None, redact_sas(written)[:200]


def _outcome(rec: dict, notes: list[str] | None = None,
             at: str | None = None) -> tuple[str, str | None]:
    """``(outcome, error_code)`` of a record (see the module docstring); a ``statusCode`` that
    is not an HTTP status adds a note to ``notes`` (unless ``Unknown``, which the format
    documents)."""
    status, unread = _status(rec.get("statusCode"))
    text = rec.get("statusText") if isinstance(rec.get("statusText"), str) else None
    err = text if text and not text.lower().endswith("success") else None
    identity = rec.get("identity") if isinstance(rec.get("identity"), dict) else {}
    denied_by_auth = any(isinstance(a, dict) and str(a.get("result", "")).lower() == "denied"
                         for a in _listed(identity.get("authorization")))
    if denied_by_auth or (err and _DENIED_TEXT.match(err)):
        outcome, code = "denied", err or "Denied"
    elif unread is not None:
        # not an HTTP status: the request's outcome is not known, which is not success
        outcome, code = ("error", err or unread)
    elif status is None and text is None:
        # neither a statusCode (which every storage log record has) nor a statusText: not known
        outcome, code = "error", None
        if notes is not None:
            notes.append(f"{at}: no statusCode or statusText: the request's outcome is not known; "
                         "outcome error, not taken as success")
    else:
        outcome, code = http_outcome(status, err), err
    if unread is not None and unread.strip().lower() != "unknown" and notes is not None:
        notes.append(f"{at}: statusCode {unread} is not an HTTP status code (100–599); "
                     f"outcome {outcome}, not taken as success"
                     + ("" if code == err else ", error_code as written"))
    return outcome, code


def _row(rec: dict, path: str, line_no: int | None,
         notes: list[str] | None = None, at: str | None = None) -> tuple[dict | None, str | None]:
    """The access row of one record, or ``(None, why)``; what the row could not say goes to
    ``notes`` (the file's ``inputs`` notes), each placed by ``at`` (``record 3`` in a
    whole-file JSON document, ``line 3`` in JSON Lines: :func:`._cloud.at_words`)."""
    at = at or f"line {line_no}"
    ts = _time(rec.get("time"))
    if ts is None:
        return None, "storage log record without a time"
    props = rec.get("properties") if isinstance(rec.get("properties"), dict) else {}
    row = new_row(SOURCE, TIME_KIND, path, line_no)
    row["ts"] = ts
    identity = rec.get("identity")
    row["principal"], row["principal_type"] = _principal(identity)
    upn = identity.get("requester", {}).get("upn") if isinstance(identity, dict) and isinstance(
        identity.get("requester"), dict) else None
    if isinstance(upn, str) and upn and upn != row["principal"]:
        row["principal_name"] = upn  # (who the object id is: what a reviewer reads)
    if identity is not None and not isinstance(identity, dict) and notes is not None:
        notes.append(f"{at}: identity is not an object ({_preview(identity)}): who made the request is not "
                     "read (principal empty, principal_type unknown)")
    op = rec.get("operationName") if isinstance(rec.get("operationName"), str) else None
    row["action_raw"] = op
    action = OPERATIONS.get(op or "")
    if action is None:
        action = "delete" if rec.get("category") == "StorageDelete" else "other"
        if not op and notes is not None:
            what = "no operationName" if rec.get("operationName") in (None, "") else \
                f"operationName is not text ({_preview(rec.get('operationName'))})"
            notes.append(f"{at}: {what}: action {action}" + (" (from category StorageDelete)" if action == "delete"
                                                              else ", not known"))
    row["action"] = action
    row["resource_uri"] = _resource_uri(rec, props)
    if notes is not None and not any(isinstance(v, str) and v.strip("/") for v in
                                     (rec.get("uri"), props.get("requestUrl"), props.get("objectKey"))):
        notes.append(f"{at}: no uri, requestUrl or objectKey: "
                     + (f"the request is taken to be on the whole account ({row['resource_uri']}), its object "
                        "not known" if row["resource_uri"] else "the object of the request is not known"))
    row["outcome"], row["error_code"] = _outcome(rec, notes, at)
    row["bytes"] = count_or_note(props.get("responseBodySize"), "responseBodySize", at, notes)
    rid = rec.get("correlationId")
    row["request_id"] = rid if isinstance(rid, str) and rid else None
    ua = props.get("userAgentHeader")
    if isinstance(ua, str) and len(ua) >= 2 and ua[0] == ua[-1] == '"':
        ua = ua[1:-1]
    row["user_agent"] = ua if isinstance(ua, str) and ua else None
    crid = props.get("clientRequestId")
    row["correlation"] = crid if isinstance(crid, str) and crid else None
    row["raw"] = redact_sas(rec)
    for k in ("principal", "action_raw", "resource_uri", "error_code", "request_id", "user_agent", "correlation"):
        if isinstance(row[k], str):
            row[k] = redact_sas(row[k])
    return row, None


def _classify(obj: Any) -> tuple[str, dict | None, str | None]:
    if not isinstance(obj, dict):
        return "invalid", None, f"not a JSON object ({type(obj).__name__})"
    # a Log Analytics StorageBlobLogs row: its AccountName says it is storage's, Category or not
    la_account = "TimeGenerated" in obj and "OperationName" in obj and bool(obj.get("AccountName"))
    if "TimeGenerated" in obj and "OperationName" in obj:
        obj = _from_log_analytics(obj)
    cat = str(obj.get("category") or "")
    rid = str(obj.get("resourceId") or "").lower()
    storage = cat.startswith("Storage") or "/microsoft.storage/" in rid or (la_account and not cat)
    if "operationName" in obj or "category" in obj:
        if storage:
            return "storage", obj, None
        return "ignored", None, None
    return "invalid", None, "not an Azure resource log record (no operationName / category)"


def _skip_document(doc: dict) -> str | None:
    kind, _, _ = _classify(doc)
    return "JSON object without records: not a resource log" if kind == "invalid" else None


def _read_file(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict]) -> None:
    """The access rows of one file's text (see :func:`load_azure_storage`)."""
    spath = str(path)
    ignored = 0
    notes: list[str] = []
    for it in json_records(path, data, info, _WRAPPERS, LOADER, quarantine, _skip_document):
        # a line holding a whole {"records": [...]} document (one delivery per line, as an
        # export that writes each blob's content as a line gives): each of its records, at
        # that line ("line 4 record 2" where one is named)
        inner = it.obj.get("records") if isinstance(it.obj, dict) and info.get("numbered") != "record" else None
        parts = [(r, f"line {it.line_no} record {k}") for k, r in enumerate(inner, 1)] if isinstance(inner, list) \
            else [(it.obj, None)]
        for obj, where in parts:
            kind, rec, why = _classify(obj)
            if kind == "ignored":
                ignored += 1
                continue
            row = None
            if kind == "storage":
                row, why = _row(rec, spath, it.line_no, notes, where or at_words(info, it.line_no))
            if row is None:
                preview = it.raw if it.raw is not None and where is None else json_preview(obj)[:400]
                quarantine.append(quarantine_row(path, None, LOADER,
                                                 f"{where}: {why}" if where else record_error(info, it.line_no, why),
                                                 line_no=it.line_no, offset=it.offset,
                                                 raw=redact_sas(preview.decode("utf-8", "replace")).encode("utf-8")))
                continue
            rows.append(row)
    if ignored:
        info["ignored_lines"] = ignored
    if notes:
        info.setdefault("notes", []).extend(notes)


def load_azure_storage(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load Azure Storage resource logs (StorageRead / StorageWrite / StorageDelete).

    Args:
        paths: files and/or folders (walked recursively, every regular file, sorted; gzip
            recognised by magic bytes).

    Returns:
        :class:`~replaybook.frames.LoadResult` with ``frame`` shaped by
        :data:`~replaybook.frames.ACCESS` (sorted by ``ts``), ``quarantine`` for unusable
        lines, and one ``inputs`` entry per file (``sha256``, ``records``, ``ignored_lines``:
        records of other categories; ``skipped``/``reason`` for empty files and JSON documents
        holding no records).

    Raises:
        InputError: a path does not exist or a file cannot be opened.
    """
    res = load_each(paths, LOADER, _read_file)
    if len(res.quarantine):
        res.quarantine["raw"] = res.quarantine["raw"].map(
            lambda s: redact_sas(s) if isinstance(s, str) else s).astype(res.quarantine["raw"].dtype)
    return res


def sniff(sample: bytes) -> float:
    """Confidence that ``sample`` holds Azure Storage resource logs.

    JSON Lines: the share of the first 50 non-blank lines (a last line the sample cut off not
    counted, :func:`~._cloud.sniff_lines`) that are records with ``time``,
    ``operationName`` and a ``Storage*`` category or a ``Microsoft.Storage`` resource id (or
    ``StorageBlobLogs`` rows with ``TimeGenerated``/``OperationName``/``AccountName``), × 0.95.
    ``{"records": [`` with a ``Storage…`` category: 0.9.
    """
    s = sample.lstrip(b"\xef\xbb\xbf \t\r\n")
    if re.match(rb'^\{\s*"records"\s*:\s*\[', s) and re.search(rb'"category"\s*:\s*"Storage(Read|Write|Delete)"', s):
        return 0.9
    if s[:1] == b"[" and re.search(rb'"category"\s*:\s*"Storage(Read|Write|Delete)"', s) and b'"operationName"' in s:
        return 0.9
    if s[:1] == b"[" and b'"TimeGenerated"' in s and b'"OperationName"' in s and (
            b'"AccountName"' in s or re.search(rb'"Type"\s*:\s*"StorageBlobLogs"', s)):
        return 0.9  # a Log Analytics export of StorageBlobLogs rows, as a JSON array
    seen, objects = sample_objects(sniff_lines(s))
    ok = sum(1 for o in objects
             if ("time" in o and "operationName" in o and (
                 str(o.get("category", "")).startswith("Storage")
                 or "/microsoft.storage/" in str(o.get("resourceId", "")).lower()))
             or {"TimeGenerated", "OperationName", "AccountName"} <= o.keys())
    return 0.95 * line_share(ok, len(objects), seen, damaged_json_lines(sniff_lines(s), len(objects), seen))


#: The containers Azure Monitor's diagnostic settings archive Storage resource logs into
#: (Azure Monitor, "Azure resource logs: send to Azure Storage"): ``insights-logs-<category>``,
#: each hour's records in ``…/resourceId=/SUBSCRIPTIONS/…/y=YYYY/m=MM/d=DD/h=HH/m=00/PT1H.json``.
_ARCHIVE_CONTAINERS = frozenset({"insights-logs-storageread", "insights-logs-storagewrite",
                                 "insights-logs-storagedelete"})


def archive_path(path: str | Path) -> bool:
    """Whether ``path`` is a ``PT1H.json`` under a Storage resource-log container
    (:data:`_ARCHIVE_CONTAINERS`): a file there is Azure Storage evidence whatever its bytes
    hold, so one whose content no source recognises is read by this loader and quarantined as
    damaged — never listed as "not evidence"."""
    p = Path(path)
    return p.name == "PT1H.json" and any(part.lower() in _ARCHIVE_CONTAINERS for part in p.parts[:-1])


register(Source(
    name=LOADER,
    frame="access",
    sniff=sniff,
    load=load_azure_storage,
    claims_name=archive_path,
    doc="Azure Storage resource logs (StorageRead/StorageWrite/StorageDelete, schemaVersion 1.0; "
        "JSON Lines, {\"records\": [...]}, StorageBlobLogs exports)",
))
