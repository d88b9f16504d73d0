"""Azure Storage resource logs (fixtures written from the Microsoft Learn "Azure Blob Storage
monitoring data reference" / StorageBlobLogs schema; no public sample exists)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from _jsonl_fixture import counts_by_id, write_jsonl
from replaybook.frames import ACCESS
from replaybook.sources.azure_storage import load_azure_storage, redact_sas, sniff

AZ = Path(__file__).resolve().parents[1] / "fixtures" / "cloud" / "azure"
SP = "5f0c7e9a-1111-4a2b-9c3d-0123456789ab"
SIG = "Zm9vYmFyU0lHTkFUVVJFc2VjcmV0JTNE"


def test_resource_log_lines_and_records_wrapper():
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in AZ.iterdir()}
    res = load_azure_storage(AZ)
    ACCESS.validate(res.frame)
    assert res.quarantine.empty
    f = res.frame.set_index("request_id")
    assert len(f) == 8
    assert list(res.frame["action_raw"]) == ["ListBlobs", "GetBlob", "GetBlob", "DeleteBlob", "PutBlob", "GetBlob",
                                             "GetBlobProperties", "ListContainers"]
    assert set(res.frame["source"]) == {"azure.storage"} and set(res.frame["time_kind"]) == {"received"}

    lst = f.loc["3f1a0000-401e-0053-6c1d-e6a2b8000000"]
    assert lst["action"] == "list" and lst["resource_uri"] == "az://acmedata/demo-data/demo/"
    assert lst["principal"] == SP and lst["principal_type"] == "service_account"
    assert lst["correlation"] == "door-sess-a/1" and lst["bytes"] == 412
    assert lst["ts"] == pd.Timestamp("2026-09-13T10:00:05.1234567Z")

    get = f.loc["3f1a0001-401e-0053-6c1d-e6a2b8000000"]
    assert get["resource_uri"] == "az://acmedata/demo-data/demo/cars v2.csv" and get["bytes"] == 2048
    assert get["user_agent"] == "door/1.2 azsdk-python-storage-blob/12.19.0"

    sas = f.loc["3f1a0002-401e-0053-6c1d-e6a2b8000000"]
    assert sas["outcome"] == "denied" and sas["error_code"] == "SASAuthorizationError"
    assert pd.isna(sas["principal"]) and sas["principal_type"] == "sas"
    assert sas["resource_uri"] == "az://acmedata/reference/.env"
    assert pd.isna(sas["correlation"])  # empty clientRequestId
    assert sas["user_agent"] == "curl/8.5.0"  # the header's quotes removed
    text = json.dumps(sas["raw"])
    assert SIG not in text and "sig=REDACTED" in text and "se=REDACTED" in text
    assert sas["raw"]["properties"]["referrerHeader"] == "https://evil.example/?leak=REDACTED"

    dele = f.loc["3f1a0003-401e-0053-6c1d-e6a2b8000000"]
    assert dele["action"] == "delete" and dele["principal_type"] == "user"
    assert dele["principal"] == "fde5ba15-4355-4223-b811-cccccccccccc"

    put = f.loc["3f1a0004-401e-0053-6c1d-e6a2b8000000"]
    assert put["ts"] == pd.Timestamp("2026-09-13T10:03:00.1Z")  # "2026/09/13 10:03:00.1000000", UTC
    assert put["principal_type"] == "shared_key" and put["action"] == "write"
    assert put["raw"]["uri"].endswith("?timeout=30")  # operation parameters stay

    unknown = f.loc["3f1a0005-401e-0053-6c1d-e6a2b8000000"]
    assert unknown["outcome"] == "error" and unknown["error_code"] == "NetworkError"

    assert f.loc["3f1a0010-401e-0053-6c1d-e6a2b8000000", "action"] == "head"
    assert f.loc["3f1a0011-401e-0053-6c1d-e6a2b8000000", "resource_uri"] == "az://acmedata/"
    info = {Path(i["path"]).name: i for i in res.inputs}
    assert info["PT1H.json"]["ignored_lines"] == 1 and info["PT1H.json"]["records"] == 6
    assert info["eventhub-records.json"]["records"] == 2
    assert list(f.loc[["3f1a0010-401e-0053-6c1d-e6a2b8000000"], "line_no"]) == [1]
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in AZ.iterdir()} == before


def test_log_analytics_rows(tmp_path):
    row = {"TimeGenerated": "2026-09-13T10:00:21.5Z", "AccountName": "acmedata", "OperationName": "GetBlob",
           "Category": "StorageRead", "StatusCode": "403", "StatusText": "AuthorizationPermissionMismatch",
           "Uri": "https://acmedata.blob.core.windows.net/demo-data/demo/x.csv", "RequesterObjectId": SP,
           "AuthenticationType": "OAuth", "ClientRequestId": "door-sess-a/9", "CorrelationId": "la-1",
           "ResponseBodySize": 0, "CallerIpAddress": "198.51.100.7:1"}
    p = tmp_path / "StorageBlobLogs.json"
    p.write_text(json.dumps([row]))
    f = load_azure_storage(p).frame
    r = f.iloc[0]
    assert r["outcome"] == "denied" and r["error_code"] == "AuthorizationPermissionMismatch"
    assert r["resource_uri"] == "az://acmedata/demo-data/demo/x.csv" and r["principal"] == SP
    assert r["correlation"] == "door-sess-a/9" and r["request_id"] == "la-1"
    assert r["raw"]["_log_analytics"]["AccountName"] == "acmedata"


def test_redact_sas_keeps_operation_parameters():
    url = f"https://a.blob.core.windows.net/c?restype=container&comp=list&prefix=x/&sv=2022&sig={SIG}&skoid=abc"
    assert redact_sas(url) == ("https://a.blob.core.windows.net/c?restype=container&comp=list&prefix=x/"
                               "&sv=REDACTED&sig=REDACTED&skoid=REDACTED")
    assert redact_sas({"note": f"see sig={SIG} here"}) == {"note": "see sig=REDACTED here"}


def test_sniff():
    assert sniff((AZ / "PT1H.json").read_bytes()) == pytest.approx(0.95 * 6 / 7)
    assert sniff((AZ / "eventhub-records.json").read_bytes()) == 0.9


def _oauth_record(authorization) -> dict:
    return {"time": "2026-09-13T10:00:05Z", "category": "StorageRead", "operationName": "GetBlob",
            "statusCode": 200, "statusText": "Success", "correlationId": "r-1",
            "uri": "https://acmedata.blob.core.windows.net/demo-data/x.csv",
            "identity": {"type": "OAuth", "authorization": authorization,
                         "requester": {"objectId": SP}}}


def test_authorization_lists_read_for_principal_type_and_denial(tmp_path):
    p = tmp_path / "PT1H.json"
    granted = [{"principals": [{"id": SP, "type": "User"}], "result": "Granted"}]
    denied = [{"principals": [{"id": SP, "type": "ServicePrincipal"}], "result": "Denied"}]
    p.write_text(json.dumps(_oauth_record(granted)) + "\n" + json.dumps(_oauth_record(denied)) + "\n")
    res = load_azure_storage(p)
    assert res.quarantine.empty
    assert list(res.frame["principal_type"]) == ["user", "service_account"]
    assert list(res.frame["outcome"]) == ["allowed", "denied"]


@pytest.mark.parametrize("authorization", [
    5, 2.5, True, "Granted", {"result": "Denied"},                     # not a list
    [{"principals": 7, "result": "Granted"}],                          # principals not a list
    [{"principals": True}], [{"principals": {"type": "User"}}], [3, None, "x"],
])
def test_authorization_of_another_type_is_left_out_and_the_row_kept(tmp_path, authorization):
    # the format's identity.authorization and its principals are lists; a number there crashed
    # the whole load ("'int' object is not iterable")
    p = tmp_path / "PT1H.json"
    p.write_text(json.dumps(_oauth_record(authorization)) + "\n")
    res = load_azure_storage(p)
    assert res.quarantine.empty
    assert len(res.frame) == 1
    r = res.frame.iloc[0]
    assert r["principal"] == SP and r["principal_type"] == "unknown"  # no principals read: objectId alone
    assert r["outcome"] == "allowed" and r["action"] == "read"
    assert r["raw"]["identity"]["authorization"] == authorization  # kept as logged


@pytest.mark.parametrize("time, expected", [
    ("2025-10-01t12:00:03.101z", "2025-10-01T12:00:03.101Z"),
    ("2025-10-01T12:00:03.101z", "2025-10-01T12:00:03.101Z"),
    ("2025-10-01t12:00:03.101Z", "2025-10-01T12:00:03.101Z"),
    ("2025-10-01t14:00:03+02:00", "2025-10-01T12:00:03Z"),
    ("2025-10-01t12:00:03", "2025-10-01T12:00:03Z"),              # no zone: UTC, as the docs say
    ("2025/10/01 12:00:03.5z", "2025-10-01T12:00:03.5Z"),
    ("2025/10/01t12:00:03.5", "2025-10-01T12:00:03.5Z"),
])
def test_lower_case_t_and_z_are_read(tmp_path, time, expected):
    # RFC 3339 §5.6 allows "t" and "z"; a lower-case "z" was taken for a missing zone and a
    # second "Z" appended, so the record was quarantined as "…03.101zZ is not a date-time"
    p = tmp_path / "PT1H.json"
    p.write_text(json.dumps(dict(_oauth_record([]), time=time)) + "\n")
    res = load_azure_storage(p)
    assert res.quarantine.empty
    assert list(res.frame["ts"]) == [pd.Timestamp(expected)]
    assert res.frame["raw"].iloc[0]["time"] == time  # as logged


def test_a_status_code_that_is_not_an_http_status_is_not_success(tmp_path):
    """``statusCode`` ``true`` had been read as the number 1, ``false`` and ``0`` as 0, ``-1``
    as itself: each gave outcome ``allowed``, a request that did not surely succeed shown as
    one that did.  A code outside 100–599 (RFC 9110 §15) is not an HTTP status: the row is
    ``error`` (``denied`` when the status text says so) with the code as written, and the
    file's inputs entry says why; the documented ``Unknown`` gets no note."""
    cases = [  # (correlationId, statusCode, statusText, outcome, error_code)
        ("a1", True, "Success", "error", "true"),
        ("a2", False, "Success", "error", "false"),
        ("a3", 0, "Success", "error", "0"),
        ("a4", -1, None, "error", "-1"),
        ("a5", 42, "Success", "error", "42"),
        ("a6", 7.5, "Success", "error", "7.5"),
        ("a7", {"value": 403}, "Success", "error", '{"value":403}'),
        ("a8", True, "AuthorizationPermissionMismatch", "denied", "AuthorizationPermissionMismatch"),
        ("a9", "Unknown", None, "error", "Unknown"),
        ("a10", "Unknown", "NetworkError", "error", "NetworkError"),
        ("a11", "200", "Success", "allowed", None),
        ("a12", 200.0, "Success", "allowed", None),
        ("a13", 403, None, "denied", None),
        ("a14", 599, "ServerBusy", "error", "ServerBusy"),
    ]
    lines = []
    for rid, code, text, _, _ in cases:
        r = _oauth_record([])
        r["correlationId"], r["statusCode"] = rid, code
        if text is None:
            del r["statusText"]
        else:
            r["statusText"] = text
        lines.append(json.dumps(r))
    p = tmp_path / "PT1H.json"
    p.write_text("\n".join(lines) + "\n")
    res = load_azure_storage(p)
    assert res.quarantine.empty and len(res.frame) == len(cases)
    f = res.frame.set_index("request_id")
    got = {rid: (f.loc[rid, "outcome"], None if pd.isna(f.loc[rid, "error_code"]) else f.loc[rid, "error_code"])
           for rid, *_ in cases}
    assert got == {rid: (outcome, code) for rid, _, _, outcome, code in cases}
    notes = res.inputs[0]["notes"]
    # (JSON Lines: a note places its record by line)
    assert [n.split(":", 1)[0] for n in notes] == [f"line {i}" for i in range(1, 9)]
    assert notes[0] == ("line 1: statusCode true is not an HTTP status code (100–599); outcome error, "
                        "not taken as success, error_code as written")
    assert notes[7] == ("line 8: statusCode true is not an HTTP status code (100–599); outcome denied, "
                        "not taken as success")


def test_a_record_with_no_status_at_all_is_not_success(tmp_path):
    """A storage log record always has a ``statusCode`` (``Unknown`` when the request was cut
    off): one with neither it nor a ``statusText`` had been read as ``allowed``.  Its outcome
    is not known: ``error``, and the file's notes say so; ``null`` alone is the same."""
    lines = []
    for rid, drop in (("n1", ("statusCode", "statusText")), ("n2", ("statusText",))):
        r = _oauth_record([])
        r["correlationId"] = rid
        for k in drop:
            r.pop(k, None)
        if rid == "n2":
            r["statusCode"] = None
        lines.append(json.dumps(r))
    r = _oauth_record([])
    r["correlationId"] = "n3"
    lines.append(json.dumps(r))
    p = tmp_path / "PT1H.json"
    p.write_text("\n".join(lines) + "\n")
    res = load_azure_storage(p)
    f = res.frame.set_index("request_id")
    assert f["outcome"].to_dict() == {"n1": "error", "n2": "error", "n3": "allowed"}
    assert res.inputs[0]["notes"] == [
        f"line {i}: no statusCode or statusText: the request's outcome is not known; outcome error, not taken as "
        "success" for i in (1, 2)]


def _odd_document(tmp_path, *, pretty: bool) -> Path:
    """{"records": [...]} of: a good record, one with no time, one whose time is "yesterday",
    identity a string, no operationName, no uri / requestUrl / objectKey."""
    recs = []
    for rid in ("ok", "no-time", "yesterday", "identity", "no-op", "no-uri"):
        r = _oauth_record([])
        r["correlationId"] = rid
        recs.append(r)
    del recs[1]["time"]
    recs[2]["time"] = "yesterday"
    recs[3]["identity"] = "OAuth"
    del recs[4]["operationName"]
    del recs[5]["uri"]
    recs[5]["properties"] = {"accountName": "acmedata"}
    p = tmp_path / "odd.json"
    p.write_text(json.dumps({"records": recs}, indent=2 if pretty else None))
    return p


@pytest.mark.parametrize("pretty", [False, True])
def test_a_records_document_names_records_not_lines_and_quotes_the_time_as_logged(tmp_path, pretty):
    res = load_azure_storage(_odd_document(tmp_path, pretty=pretty))
    assert res.inputs[0]["numbered"] == "record"
    q = res.quarantine.set_index("line_no")
    assert q["error"].to_dict() == {2: "record 2: storage log record without a time",
                                    3: "record 3: time 'yesterday' is not a date-time"}


def test_odd_fields_of_a_record_are_named_in_the_files_notes(tmp_path):
    res = load_azure_storage(_odd_document(tmp_path, pretty=False))
    f = res.frame.set_index("request_id")
    assert pd.isna(f.loc["identity", "principal"]) and f.loc["no-op", "action"] == "other"
    assert f.loc["no-uri", "resource_uri"] == "az://acmedata/"
    notes = res.inputs[0]["notes"]
    assert notes == [
        'record 4: identity is not an object ("OAuth"): who made the request is not read (principal empty, '
        "principal_type unknown)",
        "record 5: no operationName: action other, not known",
        "record 6: no uri, requestUrl or objectKey: the request is taken to be on the whole account "
        "(az://acmedata/), its object not known"]


def test_a_well_formed_record_has_no_note(tmp_path):
    p = tmp_path / "PT1H.json"
    p.write_text(json.dumps(_oauth_record([])) + "\n")
    res = load_azure_storage(p)
    assert len(res.frame) == 1 and "notes" not in res.inputs[0]


def test_a_log_analytics_array_and_a_records_document_per_line_are_read(tmp_path):
    # a Log Analytics export as a JSON array was "not recognised"; a file of one
    # {"records": [...]} document per line loaded nothing ("not an Azure resource log record")
    from replaybook.sources import registry

    row = {"TimeGenerated": "2026-09-13T10:00:21.5Z", "AccountName": "acmedata", "OperationName": "GetBlob",
           "StatusCode": "200", "StatusText": "Success", "CorrelationId": "la-1",
           "Uri": "https://acmedata.blob.core.windows.net/demo-data/x.csv", "RequesterObjectId": SP,
           "RequesterUpn": "bob@acme.example", "AuthenticationType": "OAuth"}
    p = tmp_path / "export.json"
    p.write_text(json.dumps([row, dict(row, CorrelationId="la-2")]))
    src, conf = registry.sniff_file(p)
    assert src.name == "azure.storage" and conf >= 0.5
    f = load_azure_storage(p).frame
    assert f["request_id"].tolist() == ["la-1", "la-2"] and f["principal_name"].tolist() == ["bob@acme.example"] * 2
    rec = {"time": "2026-09-13T10:00:05Z", "category": "StorageRead", "operationName": "GetBlob",
           "statusCode": 200, "statusText": "Success", "uri": "https://acmedata.blob.core.windows.net/demo-data/a.csv"}
    q = tmp_path / "PT1H.json"
    q.write_text(json.dumps({"records": [dict(rec, correlationId="r-1"), "junk", dict(rec, correlationId="r-2")]})
                 + "\n" + json.dumps({"records": [dict(rec, correlationId="r-3")]}) + "\n")
    res = load_azure_storage(q)
    assert sorted(res.frame["request_id"]) == ["r-1", "r-2", "r-3"]
    assert res.frame.set_index("request_id")["line_no"].to_dict() == {"r-1": 1, "r-2": 1, "r-3": 2}
    assert res.quarantine["error"].tolist() == ["line 1 record 2: not a JSON object (str)"]
    assert res.quarantine["line_no"].tolist() == [1]


def test_a_log_analytics_array_without_account_name_is_recognised_by_its_type(tmp_path):
    from replaybook.sources import registry

    row = {"TimeGenerated": "2026-09-13T10:00:21.5Z", "OperationName": "GetBlob", "Type": "StorageBlobLogs",
           "Category": "StorageRead", "StatusCode": "200", "StatusText": "Success", "CorrelationId": "la-1",
           "Uri": "https://acmedata.blob.core.windows.net/demo-data/x.csv"}
    p = tmp_path / "export.json"
    p.write_text(json.dumps([row]))
    src, conf = registry.sniff_file(p)
    assert src.name == "azure.storage" and conf >= 0.5


def test_a_response_size_that_is_no_count_is_noted(tmp_path):
    """``responseBodySize`` of -1 or ``"big"`` had left ``bytes`` empty with nothing said."""
    sizes = [("z1", 512, 512), ("z2", -1, None), ("z3", "big", None), ("z4", None, None)]
    lines = []
    for rid, n, _ in sizes:
        r = _oauth_record([])
        r["correlationId"] = rid
        if n is not None:
            r["properties"] = {"responseBodySize": n}
        lines.append(r)
    res = load_azure_storage(write_jsonl(tmp_path / "PT1H.json", lines))
    assert res.quarantine.empty
    assert counts_by_id(res.frame, "request_id", "bytes") == {i: want for i, _, want in sizes}
    notes = [n for n in res.inputs[0]["notes"] if "responseBodySize" in n]
    assert notes == ["line 2: responseBodySize -1 is not a count (a whole number from 0 to 2**63-1): "
                     "left empty, the count is not known",
                     'line 3: responseBodySize "big" is not a count (a whole number from 0 to 2**63-1): '
                     "left empty, the count is not known"]


ARCHIVE = ("insights-logs-storageread/resourceId=/SUBSCRIPTIONS/S/RESOURCEGROUPS/G/PROVIDERS/MICROSOFT.STORAGE/"
           "STORAGEACCOUNTS/A/BLOBSERVICES/DEFAULT/y=2026/m=09/d=13/h=10/m=00/PT1H.json")


def test_a_pt1h_file_in_a_storage_log_archive_that_cannot_be_read_is_damaged_azure_evidence(tmp_path):
    """A ``PT1H.json`` Azure Monitor archived whose content no source recognises had been "not
    evidence"; by its path it is Azure Storage evidence, quarantined by line."""
    from replaybook.loading import load_frame
    from replaybook.sources import registry
    from replaybook.sources.azure_storage import archive_path

    f = tmp_path / ARCHIVE
    f.parent.mkdir(parents=True)
    f.write_bytes(b"<html>an error page</html>\n")
    assert registry.sniff_file(f)[0].name == "azure.storage"
    got = load_frame([tmp_path / "insights-logs-storageread"], "access")
    q = got.result.quarantine
    assert list(q["loader"]) == ["azure.storage"] and list(q["line_no"]) == [1]
    assert q["error"].iloc[0].startswith("invalid JSON") and got.sources == {str(f): "azure.storage"}
    other = tmp_path / "elsewhere" / "PT1H.json"  # the name alone claims nothing
    other.parent.mkdir()
    other.write_bytes(b"<html>an error page</html>\n")
    assert registry.sniff_file(other)[0] is None
    assert archive_path(ARCHIVE.replace("storageread", "StorageWrite"))
    assert not archive_path(ARCHIVE.replace("storageread", "auditevent"))
    assert not archive_path(ARCHIVE.replace("PT1H.json", "PT1H.json.bak"))


@pytest.mark.parametrize("time", ["2025-10-01", "2025", "2025/10/01", "2025-10-01T12:00", "2025-10-01T12Z"])
def test_a_date_alone_is_no_time_of_a_storage_request(tmp_path, time):
    # "time": "2025-10-01" had been read as that day's midnight UTC, with no note
    p = tmp_path / "PT1H.json"
    p.write_text(json.dumps(dict(_oauth_record([]), time=time)) + "\n" + json.dumps(_oauth_record([])) + "\n")
    res = load_azure_storage(p)
    assert res.frame["line_no"].tolist() == [2]
    assert list(res.frame["ts"]) == [pd.Timestamp("2026-09-13T10:00:05Z")]
    assert res.quarantine["line_no"].tolist() == [1]
    assert res.quarantine["error"].iloc[0].endswith("is not a date-time")
