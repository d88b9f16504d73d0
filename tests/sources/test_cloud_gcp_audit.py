"""GCP Cloud Audit Logs: the gcloud JSON array, the entries.list wrapper, custom audit headers
as correlation, status codes, non-audit entries counted (not quarantined)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from _jsonl_fixture import counts_by_id, write_jsonl
from replaybook.sources.gcp_audit import load_gcp_audit, sniff

SA = "door-reader@acme.iam.gserviceaccount.com"


def _entry(ts, method, resource, code=None, insert="i", **pp):
    p = {"@type": "type.googleapis.com/google.cloud.audit.AuditLog", "serviceName": "storage.googleapis.com",
         "methodName": method, "resourceName": resource, "authenticationInfo": {"principalEmail": SA},
         "requestMetadata": {"callerIp": "198.51.100.7", "callerSuppliedUserAgent": "door/1.2 gcloud-python"}}
    if code is not None:
        p["status"] = {"code": code, "message": "x"}
    p.update(pp)
    return {"protoPayload": p, "insertId": insert, "timestamp": ts, "severity": "INFO",
            "resource": {"type": "gcs_bucket", "labels": {"bucket_name": "acme-data"}},
            "logName": "projects/acme/logs/cloudaudit.googleapis.com%2Fdata_access"}


def test_array_wrapper_custom_audit_and_codes(tmp_path):
    entries = [
        _entry("2026-09-13T10:00:00Z", "storage.objects.get", "projects/_/buckets/acme-data/objects/demo/a b.csv",
               insert="g1", metadata={"audit_context": {"app_context": "EXTERNAL", "audit_info": {
                   "x-goog-custom-audit-job": "nightly", "x-goog-custom-audit-door-call": "door-sess-a/7"}}}),
        _entry("2026-09-13T10:00:01.5Z", "storage.objects.create", "projects/_/buckets/acme-data/objects/out/x",
               code=16, insert="g2"),
        _entry("2026-09-13T10:00:02Z", "storage.objects.delete", "projects/_/buckets/acme-data/objects/out/x",
               code=5, insert="g3"),
        _entry("2026-09-13T10:00:03.000001Z", "storage.objects.list", "projects/_/buckets/acme-data",
               insert="g4", numResponseItems="12"),
        {"insertId": "t1", "textPayload": "hello", "timestamp": "2026-09-13T10:00:04Z", "logName": "projects/acme/logs/app"},
    ]
    (tmp_path / "read.json").write_text(json.dumps(entries, indent=2))
    (tmp_path / "api.json").write_text(json.dumps({"entries": entries[:1], "nextPageToken": "t"}))
    res = load_gcp_audit(tmp_path)
    assert res.quarantine.empty
    arr = res.frame[res.frame["source_file"].str.endswith("read.json")].set_index("request_id")
    assert arr.loc["g1", "correlation"] == "door-sess-a/7"
    assert arr.loc["g1", "resource_uri"] == "gs://acme-data/demo/a b.csv"
    assert arr.loc["g1", "user_agent"] == "door/1.2 gcloud-python"
    assert arr.loc["g2", "outcome"] == "denied" and arr.loc["g2", "error_code"] == "16"  # UNAUTHENTICATED
    assert arr.loc["g3", "outcome"] == "error" and arr.loc["g3", "action"] == "delete"  # NOT_FOUND
    assert arr.loc["g4", "rows"] == 12 and arr.loc["g4", "action"] == "list"
    assert arr.loc["g4", "ts"] == pd.Timestamp("2026-09-13T10:00:03.000001Z")
    assert list(arr["line_no"]) == [1, 2, 3, 4]  # record index inside the array
    info = {i["path"].rsplit("/", 1)[-1]: i for i in res.inputs}
    assert info["read.json"]["ignored_lines"] == 1 and info["read.json"]["records"] == 4
    assert info["api.json"]["records"] == 1


def test_a_status_whose_code_cannot_be_read_is_not_success(tmp_path):
    """A status is there but its code is no number (a fraction, an object, a boolean, an unknown
    name, a status that is not an object): the request did not surely succeed, so the row is
    kept as ``error`` with the code as written, and the file's inputs entry says why.  A code
    written as a decimal string or a ``google.rpc.Code`` name is read as that code."""
    obj = "projects/_/buckets/acme-data/objects/demo/cars.csv"
    statuses = [
        ("s1", {"code": "7", "message": "PERMISSION_DENIED"}),   # proto3 JSON: numbers as strings
        ("s2", {"code": "PERMISSION_DENIED"}),                   # the code's name
        ("s3", {"code": "NOT_FOUND"}),
        ("s4", {"code": 7.5}),
        ("s5", {"code": {"value": 7}}),
        ("s6", {"code": True}),
        ("s7", {"code": "DENIED"}),
        ("s8", "PERMISSION_DENIED"),                             # not a google.rpc.Status
        ("s9", {"code": 7.0}),
        ("s10", {}),                                             # proto3: code 0 left out
        ("s11", {"code": "0"}),
        ("s12", {"code": None, "message": ""}),
        ("s13", {"code": -1}),                                   # google.rpc.Code has 0–16 only
        ("s14", {"code": 17}),
        ("s15", {"code": 16}),
    ]
    lines = []
    for insert, status in statuses:
        e = _entry("2026-09-13T10:00:00Z", "storage.objects.get", obj, insert=insert)
        e["protoPayload"]["status"] = status
        lines.append(json.dumps(e))
    p = tmp_path / "data_access.jsonl"
    p.write_text("\n".join(lines) + "\n")
    res = load_gcp_audit(p)
    assert res.quarantine.empty and len(res.frame) == len(statuses)
    f = res.frame.set_index("request_id")
    got = {i: (f.loc[i, "outcome"], None if pd.isna(f.loc[i, "error_code"]) else f.loc[i, "error_code"])
           for i, _ in statuses}
    assert got == {
        "s1": ("denied", "7"), "s2": ("denied", "PERMISSION_DENIED"), "s3": ("error", "NOT_FOUND"),
        "s4": ("error", "7.5"), "s5": ("error", '{"value":7}'), "s6": ("error", "true"),
        "s7": ("error", "DENIED"), "s8": ("error", "PERMISSION_DENIED"), "s9": ("denied", "7"),
        "s10": ("allowed", None), "s11": ("allowed", None), "s12": ("allowed", None),
        "s13": ("error", "-1"), "s14": ("error", "17"), "s15": ("denied", "16")}
    notes = res.inputs[0]["notes"]
    assert [n.split(":", 1)[0] for n in notes] == ["entry 4", "entry 5", "entry 6", "entry 7", "entry 8", "entry 13",
                                                   "entry 14"]
    assert notes[0] == ("entry 4: protoPayload.status.code 7.5 is not a google.rpc.Code; outcome error "
                        "(the request's outcome is unknown), error_code as written")
    assert notes[4].startswith("entry 8: protoPayload.status PERMISSION_DENIED is not a google.rpc.Code")


def test_bad_lines_quarantined(tmp_path):
    lines = [json.dumps(_entry("2026-09-13T10:00:00Z", "storage.objects.get", "projects/_/buckets/b/objects/k")),
             json.dumps({"hello": "world"}),
             json.dumps(_entry("yesterday", "storage.objects.get", "projects/_/buckets/b/objects/k")),
             json.dumps({k: v for k, v in _entry("x", "storage.objects.get", "r").items() if k != "timestamp"}),
             "[1, 2"]
    p = tmp_path / "d.jsonl"
    p.write_text("\n".join(lines) + "\n")
    res = load_gcp_audit(p)
    assert len(res.frame) == 1
    q = res.quarantine.set_index("line_no")
    assert q.loc[2, "error"] == "not a Cloud Logging LogEntry (no logName / payload)"
    assert q.loc[3, "error"] == "time 'yesterday' is not a date-time"
    assert q.loc[4, "error"] == "audit log entry without a timestamp or receiveTimestamp"
    assert q.loc[5, "error"].startswith("invalid JSON")


def test_an_audit_log_entry_without_its_proto_payload_is_quarantined_with_its_line(tmp_path):
    """An entry of an audit log (``logName`` …/cloudaudit.googleapis.com…) whose ``protoPayload``
    is missing or not an object has lost the request it records: quarantined with its line, not
    counted with the valid entries of other logs (a ``textPayload`` of an application log)."""
    good = _entry("2026-09-13T10:00:00Z", "storage.objects.get", "projects/_/buckets/b/objects/k")
    bare = {k: v for k, v in good.items() if k != "protoPayload"}
    lines = [json.dumps(good), json.dumps(bare), json.dumps({**bare, "protoPayload": "storage.objects.get"}),
             json.dumps({**bare, "logName": "projects/acme/logs/cloudaudit.googleapis.com/activity"}),
             json.dumps({"insertId": "t1", "textPayload": "hello", "timestamp": "2026-09-13T10:00:04Z",
                         "logName": "projects/acme/logs/app"})]
    p = tmp_path / "d.jsonl"
    p.write_text("\n".join(lines) + "\n")
    res = load_gcp_audit(p)
    assert list(res.frame["line_no"]) == [1]
    q = res.quarantine.set_index("line_no")
    assert list(q.index) == [2, 3, 4]
    assert q.loc[2, "error"] == ("an audit log entry (logName cloudaudit.googleapis.com…) without a protoPayload "
                                 "object: the request it records cannot be read")
    assert "without a protoPayload object (it is str)" in q.loc[3, "error"]
    assert res.inputs[0]["ignored_lines"] == 1
    # one such entry as the whole file is that entry, damaged — not a document to skip
    one = tmp_path / "one.json"
    one.write_text(json.dumps(bare, indent=2))
    res = load_gcp_audit(one)
    assert res.frame.empty and list(res.quarantine["line_no"]) == [1] and not res.inputs[0].get("skipped")


def test_anonymous_and_user_principals(tmp_path):
    e1 = _entry("2026-09-13T10:00:00Z", "storage.objects.get", "projects/_/buckets/b/objects/k")
    e1["protoPayload"]["authenticationInfo"] = {}
    e2 = _entry("2026-09-13T10:00:01Z", "storage.objects.get", "projects/_/buckets/b/objects/k")
    e2["protoPayload"]["authenticationInfo"] = {"principalEmail": "alice@acme.example"}
    p = tmp_path / "p.jsonl"
    p.write_text(json.dumps(e1) + "\n" + json.dumps(e2) + "\n")
    f = load_gcp_audit(p).frame
    assert list(f["principal_type"]) == ["anonymous", "user"]
    assert pd.isna(f.iloc[0]["principal"]) and f.iloc[1]["principal"] == "alice@acme.example"


def test_sniff():
    line = json.dumps(_entry("2026-09-13T10:00:00Z", "storage.objects.get", "r")).encode()
    assert sniff(line + b"\n") == pytest.approx(0.95)
    assert sniff(b'{"insertId": "t", "textPayload": "x", "logName": "l"}\n') == pytest.approx(0.5)
    assert sniff(json.dumps([json.loads(line)]).encode()) == 0.9
    assert sniff(b'{"ts": "2026-09-13T10:00:00Z", "session": "s", "tool": "t", "decision": "allow"}\n') == 0.0


def test_pretty_printed_entries_one_after_another(tmp_path):
    """``gcloud logging read --format=json | jq '.[]'`` writes entries pretty-printed one after
    another, no line JSON by itself: each entry is read, and the file is recognised."""
    entries = [_entry("2026-09-13T10:00:00Z", "storage.objects.get",
                      "projects/_/buckets/acme-data/objects/demo/a.csv", insert="p1"),
               _entry("2026-09-13T10:00:01Z", "storage.objects.delete",
                      "projects/_/buckets/acme-data/objects/demo/b.csv", code=7, insert="p2")]
    p = tmp_path / "entries.json"
    p.write_text("\n".join(json.dumps(e, indent=2) for e in entries) + "\n")
    res = load_gcp_audit(p)
    assert res.quarantine.empty
    assert list(res.frame["request_id"]) == ["p1", "p2"]
    assert list(res.frame["outcome"]) == ["allowed", "denied"]
    assert list(res.frame["line_no"]) == [1, 2]
    assert sniff(p.read_bytes()) > 0.9


def test_an_entry_without_timestamp_takes_its_receive_timestamp_as_logging_does(tmp_path):
    """Cloud Logging gives an entry written without ``timestamp`` its ``receiveTimestamp``; such
    an entry was quarantined, and the request it records was in no count.  It keeps its row at
    the receive time, and its file's notes say so."""
    e = {k: v for k, v in _entry("x", "storage.objects.get", "projects/_/buckets/acme-data/objects/demo/a.csv").items()
         if k != "timestamp"}
    e["receiveTimestamp"] = "2026-09-13T10:00:02.123456789Z"
    p = tmp_path / "d.jsonl"
    p.write_text(json.dumps(_entry("2026-09-13T10:00:00Z", "storage.objects.get", "projects/_/buckets/b/objects/k"))
                 + "\n" + json.dumps(e) + "\n")
    res = load_gcp_audit(p)
    assert res.quarantine.empty
    assert [str(t) for t in res.frame["ts"]] == ["2026-09-13 10:00:00+00:00", "2026-09-13 10:00:02.123456789+00:00"]
    assert res.frame["resource_uri"].tolist()[1] == "gs://acme-data/demo/a.csv"
    assert res.inputs[0]["notes"] == ["entry 2: no timestamp; its receiveTimestamp (when Cloud Logging received it, "
                                      "as Logging itself assigns it) is used"]


def test_a_row_count_that_is_no_count_is_noted(tmp_path):
    """``numResponseItems`` of -3 or ``"many"`` had left ``rows`` empty with nothing said."""
    obj = "projects/_/buckets/acme-data/objects/demo/a.csv"
    items = [("n1", "12", 12), ("n2", -3, None), ("n3", "many", None), ("n4", None, None), ("n5", 2**64, None)]
    lines = []
    for insert, n, _ in items:
        e = _entry("2026-09-13T10:00:00Z", "storage.objects.list", obj, insert=insert)
        if n is not None:
            e["protoPayload"]["metadata"] = {"numResponseItems": n}
        lines.append(e)
    res = load_gcp_audit(write_jsonl(tmp_path / "data_access.jsonl", lines))
    assert res.quarantine.empty
    assert counts_by_id(res.frame, "request_id", "rows") == {i: want for i, _, want in items}
    notes = res.inputs[0]["notes"]
    assert [n.split(":", 1)[0] for n in notes] == ["entry 2", "entry 3", "entry 5"]
    assert notes[0] == ("entry 2: numResponseItems -3 is not a count (a whole number from 0 to 2**63-1): "
                        "left empty, the count is not known")


SINK = "logs-bucket/cloudaudit.googleapis.com/data_access/2026/09/13/10:00:00_10:59:59_S0.json"


@pytest.mark.parametrize("body, why", [
    (b"garbage, not JSON\x00\x01\n", "NUL bytes in the line (binary data: the file is damaged here)"),
    (b"<html>an error page</html>\n", "invalid JSON")])
def test_a_file_at_a_sink_path_that_cannot_be_read_is_damaged_gcp_evidence(tmp_path, body, why):
    """A file a Cloud Logging sink wrote whose content no source recognises had been "not
    evidence" (no source recognised it); by its path it is GCP audit evidence, quarantined."""
    from replaybook.loading import load_frame
    from replaybook.report.sections import cloud_log_losses
    from replaybook.sources import registry
    from replaybook.sources.gcp_audit import sink_path

    f = tmp_path / SINK
    f.parent.mkdir(parents=True)
    f.write_bytes(body)
    assert registry.sniff_file(f)[0].name == "gcp.audit"
    got = load_frame([tmp_path / "logs-bucket"], "access")
    q = got.result.quarantine
    assert list(q["loader"]) == ["gcp.audit"] and q["error"].iloc[0].startswith(why), q
    assert got.sources == {str(f): "gcp.audit"}
    assert [x["unread"] for x in cloud_log_losses(q, got.result.inputs)] == [True]
    other = tmp_path / "elsewhere" / "10:00:00_10:59:59_S0.json"  # the name alone claims nothing
    other.parent.mkdir()
    other.write_bytes(body)
    assert registry.sniff_file(other)[0] is None
    assert sink_path(SINK.replace("_S0", "_A3")) and sink_path("x/cloudaudit.googleapis.com/activity/2026/01/02/"
                                                               "00:00:00_00:59:59_S1.json")
    assert not sink_path(SINK.replace("data_access", "request_log"))
    assert not sink_path(SINK.replace("2026/09/13", "2026/9/13"))
    assert not sink_path("cloudaudit.googleapis.com/data_access/2026/09/13/notes.json")


@pytest.mark.parametrize("ts", ["2021-10-19", "2021-10-19T02Z", "2021", "2021-10-19T02:03Z"])
def test_a_date_alone_is_no_time_of_an_audit_entry(tmp_path, ts):
    # "timestamp": "2021-10-19" had been read as that day's midnight UTC, with no note
    p = tmp_path / "a.jsonl"
    p.write_text(json.dumps(_entry(ts, "storage.objects.get", "projects/_/buckets/acme-data/objects/x", insert="a"))
                 + "\n" + json.dumps(_entry("2021-10-19T02:03:04Z", "storage.objects.get",
                                           "projects/_/buckets/acme-data/objects/y", insert="b")) + "\n")
    res = load_gcp_audit(p)
    assert res.frame["line_no"].tolist() == [2]
    assert str(res.frame["ts"].iloc[0]) == "2021-10-19 02:03:04+00:00"
    assert res.quarantine[["line_no", "error"]].values.tolist() == [[1, f"time {ts!r} is not a date-time"]]


def test_an_audit_log_entry_whose_proto_payload_names_no_type_is_read_or_quarantined(tmp_path):
    # an entry of cloudaudit.googleapis.com%2Fdata_access whose protoPayload lacked @type and
    # serviceName had been counted as ignored: a denied read of secret.txt gone without a trace
    def bare(method=None, **pp):
        e = _entry("2026-09-13T10:00:03Z", method, "projects/_/buckets/b/objects/secret.txt", code=7, insert="i2")
        del e["protoPayload"]["@type"], e["protoPayload"]["serviceName"]
        if method is None:
            del e["protoPayload"]["methodName"]
        e["protoPayload"].update(pp)
        return e

    other = _entry("2026-09-13T10:00:05Z", "x", "r", **{"@type": "type.googleapis.com/google.appengine.logging.v1.RequestLog"})
    del other["protoPayload"]["serviceName"]
    lines = [bare("storage.objects.get"), bare(), bare(methodName=5), other,
             {**bare("storage.objects.get"), "logName": "projects/acme/logs/app"}]
    p = tmp_path / "d.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in lines))
    res = load_gcp_audit(p)
    r = res.frame.iloc[0]
    assert len(res.frame) == 1 and r["line_no"] == 1
    assert (r["principal"], r["action"], r["action_raw"], r["resource_uri"], r["outcome"], r["error_code"]) == (
        SA, "read", "storage.objects.get", "gs://b/secret.txt", "denied", "7")
    assert res.inputs[0]["notes"] == [
        "entry 1: protoPayload has no @type and no serviceName: read as an AuditLog, as its logName is a Cloud "
        "Audit Log and it names methodName 'storage.objects.get'"]
    why = ("an audit log entry (logName cloudaudit.googleapis.com…) whose protoPayload has no @type and no methodName: "
           "the request it records cannot be read")
    assert res.quarantine[["line_no", "error"]].values.tolist() == [[2, why], [3, why]]
    assert res.inputs[0]["ignored_lines"] == 2  # another @type; not an audit log
