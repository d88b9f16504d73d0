"""Azure Storage Analytics logs (the classic ``$logs`` container) → the ``access`` frame.

Format origin
-------------
The Microsoft Learn page "Storage Analytics log format" (REST API reference): one request per
line, ``\\n`` between entries, every field — filled or empty — separated by ``;``, the last one
not followed by one; the first field is the format's version.  Version 1.0 has the 30 fields of
:data:`FIELDS_1_0`; version 2.0 (blob and queue services, requests authorized with OAuth 2.0)
adds the 8 of :data:`FIELDS_2_0`.  A field that may hold a quote, a semicolon or a line break
is HTML-encoded and quoted.  Storage writes these files as
``$logs/<service>/YYYY/MM/DD/hhmm/NNNNNN.log``.

The Azure Monitor resource logs that replace this format are read by
:mod:`.azure_storage`; rows of both formats have the source ``azure.storage`` (one service,
so a request both logs hold is one request), and each line is read onto the same row as the
resource log's record would be (:func:`.azure_storage._row`):

==============  =============================================================================
column          from
==============  =============================================================================
ts              ``request-start-time`` — when storage received the request, UTC
                (``time_kind = received``)
principal       2.0: ``user-object-id`` (OAuth); NA otherwise (account key, SAS, anonymous)
principal_name  2.0: ``user-principal-name`` beside an object id
principal_type  ``authentication-type``: ``sas`` → sas, ``anonymous`` → anonymous,
                ``authenticated`` → user / service_account with an OAuth object id (2.0),
                shared_key without one in a 2.0 line (2.0 logs OAuth's ids, so an
                authenticated request without them used the account key), unknown in a 1.0
                line (1.0 cannot say whether it was the key or OAuth)
action          ``operation-type`` (:data:`.azure_storage.OPERATIONS`)
resource_uri    ``request-url`` (else ``requested-object-key``) → ``az://<account>/<container>/<blob>``
outcome         ``request-status`` (``Success``, ``AnonymousSuccess``, ``SASSuccess`` → allowed;
                ``…AuthorizationError`` → denied) with ``http-status-code``
error_code      ``request-status`` when it is not a success
bytes           ``response-packet-size`` (bytes)
request_id      ``request-id-header`` (``x-ms-request-id``)
user_agent      ``user-agent-header``
correlation     ``client-request-id`` (``x-ms-client-request-id``)
raw             the line's fields by name (a dict); every URL's SAS token redacted
==============  =============================================================================

Errors
------
A path that does not exist or cannot be opened raises :class:`~replaybook.errors.InputError`.
A line of another version, with another number of fields than its version has, with a quote
that does not close, holding NUL bytes, or with a time that is not a date-time → quarantine
row with file and line; an unterminated last line that does not read → ``pending``.  Files are
opened read-only and never modified.
"""

from __future__ import annotations

import csv
import html
import re
from pathlib import Path
from typing import Iterable

from .._jsonl import ZERO_FILL, is_zero_fill, iter_text_lines, quarantine_row
from .._text import safe_str
from ..frames import LoadResult
from . import azure_storage as _az
from ._cloud import NUL_IN_LINE, line_share, load_each, sniff_lines
from .registry import Source, register

__all__ = ["load_azure_analytics", "sniff", "FIELDS_1_0", "FIELDS_2_0", "LOADER"]

#: Registry name and quarantine ``loader``; the rows' ``source`` is ``azure.storage``.
LOADER = "azure.storage_analytics"

#: The fields of a version 1.0 entry, in order.
FIELDS_1_0 = (
    "version-number", "request-start-time", "operation-type", "request-status", "http-status-code",
    "end-to-end-latency-in-ms", "server-latency-in-ms", "authentication-type", "requester-account-name",
    "owner-account-name", "service-type", "request-url", "requested-object-key", "request-id-header",
    "operation-count", "requester-ip-address", "request-version-header", "request-header-size",
    "request-packet-size", "response-header-size", "response-packet-size", "request-content-length",
    "request-md5", "server-md5", "etag-identifier", "last-modified-time", "conditions-used",
    "user-agent-header", "referrer-header", "client-request-id",
)
#: The fields version 2.0 adds after those of 1.0.
FIELDS_2_0 = ("user-object-id", "tenant-id", "application-id", "audience", "issuer", "user-principal-name",
              "reserved-field", "authorization-detail")
_FIELDS = {"1.0": FIELDS_1_0, "2.0": FIELDS_1_0 + FIELDS_2_0}

_SNIFF = re.compile(rb"^[12]\.0;\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z;[A-Za-z]+;[A-Za-z]*;\d*;")
_START = re.compile(rb"^[12]\.0;\d{4}-")


def _fields(text: str) -> tuple[list[str] | None, str | None]:
    """The fields of one line, quoted ones unquoted and HTML-decoded, or ``(None, why)``."""
    try:
        got = next(csv.reader([text], delimiter=";", quotechar='"', strict=True))
    except (csv.Error, StopIteration) as exc:
        return None, f"not a Storage Analytics log line ({exc})"
    version = got[0] if got else ""
    names = _FIELDS.get(version)
    if names is None:
        return None, (f"version {version[:20]!r}: not a Storage Analytics log version this reader knows "
                      "(1.0, 2.0)")
    if len(got) != len(names):
        return None, f"{len(got)} fields where a version {version} entry has {len(names)}"
    return [html.unescape(v) if "&" in v else v for v in got], None


def _record(f: dict[str, str]) -> dict:
    """The line's fields as the Azure Monitor resource-log record :func:`.azure_storage._row` reads."""
    def given(name: str) -> str | None:
        v = f.get(name)
        return v if v else None

    oid = given("user-object-id")
    auth = (given("authentication-type") or "").lower()
    if oid:
        requester = {k: v for k, v in (("objectId", oid), ("upn", given("user-principal-name")),
                                       ("appId", given("application-id")), ("tenantId", given("tenant-id")))
                     if v}
        identity: dict = {"type": "OAuth", "requester": requester}
    elif auth == "authenticated":
        # 2.0 logs OAuth's ids: without them the request used the account key; 1.0 cannot say
        identity = {"type": "AccountKey" if f["version-number"] == "2.0" else "authenticated"}
    else:
        identity = {"type": {"sas": "SAS", "anonymous": "Anonymous"}.get(auth, auth)}
    return {
        "time": given("request-start-time"), "operationName": given("operation-type"),
        "statusText": given("request-status"), "statusCode": given("http-status-code"),
        "callerIpAddress": given("requester-ip-address"), "correlationId": given("request-id-header"),
        "uri": given("request-url"), "identity": identity,
        "properties": {k: v for k, v in (
            ("accountName", given("owner-account-name")), ("objectKey", given("requested-object-key")),
            ("responseBodySize", given("response-packet-size")), ("userAgentHeader", given("user-agent-header")),
            ("clientRequestId", given("client-request-id"))) if v is not None},
    }


def _line_row(path: Path, spath: str, line_no: int, offset: int, raw: bytes, pending: bool,
              info: dict, quarantine: list[dict]) -> dict | None:
    def refuse(why: str, kind: str = "invalid") -> None:
        quarantine.append(quarantine_row(path, None, LOADER, why, kind=kind, line_no=line_no, offset=offset,
                                         raw=raw))

    if b"\x00" in raw:  # (storage writes none: the file is damaged here)
        refuse(ZERO_FILL if pending and is_zero_fill(raw) else NUL_IN_LINE)
        return None
    text = safe_str(raw.decode("utf-8", "replace"))
    fields, why = _fields(text)
    if fields is None:
        if pending:
            refuse("unterminated last line (still being written?)", "pending")
        else:
            refuse(why)
        return None
    named = dict(zip(_FIELDS[fields[0]], fields))
    notes: list[str] = []
    row, why = _az._row(_record(named), spath, line_no, notes, f"line {line_no}")
    if row is None:
        refuse(why)
        return None
    row["raw"] = _az.redact_sas(named)
    if notes:
        info.setdefault("notes", []).extend(notes)
    return row


def _read_file(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict]) -> None:
    spath = str(path)
    for line_no, offset, raw, pending in iter_text_lines(data):
        row = _line_row(path, spath, line_no, offset, raw, pending, info, quarantine)
        if row is not None:
            rows.append(row)


def load_azure_analytics(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load Storage Analytics log files (``$logs/…/NNNNNN.log``, versions 1.0 and 2.0) into the
    ``access`` frame.

    Args:
        paths: files and/or folders (walked recursively, every regular file, sorted; gzip
            recognised by magic bytes).

    Returns:
        :class:`~replaybook.frames.LoadResult` with ``frame`` shaped by
        :data:`~replaybook.frames.ACCESS` (``source`` ``azure.storage``; sorted by ``ts``),
        ``quarantine`` for lines that do not read, and one ``inputs`` entry per file
        (``sha256``, ``records``, ``notes``; ``skipped``/``reason`` for an empty file).

    Raises:
        InputError: a path does not exist or a file cannot be opened.
    """
    return load_each(paths, LOADER, _read_file)


def sniff(sample: bytes) -> float:
    """Confidence that ``sample`` is a Storage Analytics log: the share of the first 50
    non-blank lines that start like an entry (``1.0;`` or ``2.0;``, a UTC time, an operation, a
    status, an HTTP status) × 0.95; a line that starts with the version and a date but stops
    short (cut, damaged) is neither for nor against (:func:`~._cloud.line_share`)."""
    lines = [raw.rstrip(b"\r") for raw in sniff_lines(sample).split(b"\n")[:50]]
    lines = [raw for raw in lines if raw.strip()]
    ok = sum(1 for raw in lines if _SNIFF.match(raw))
    cut = sum(1 for raw in lines if not _SNIFF.match(raw) and _START.match(raw))
    return 0.95 * line_share(ok, ok, len(lines), cut)


register(Source(
    name=LOADER,
    frame="access",
    sniff=sniff,
    load=load_azure_analytics,
    doc="Azure Storage Analytics logs (classic $logs container; log format versions 1.0 and 2.0, "
        "semicolon-separated)",
))
