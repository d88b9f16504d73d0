"""GCP Cloud Audit Logs: the gcloud JSON array, the entries.list wrapper, custom audit headers
as correlation, status codes, non-audit entries counted (not quarantined)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

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
    assert q.loc[4, "error"] == "audit log entry without a timestamp"
    assert q.loc[5, "error"].startswith("invalid JSON")


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
