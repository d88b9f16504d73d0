"""Azure Storage Analytics logs (the classic ``$logs`` container, log format 1.0 and 2.0): the
fixture is written from the format's documentation (field order, HTML-encoded quoted fields),
one line per authentication kind; damaged lines are quarantined with their line; the rows join
door calls as the resource logs' rows do."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from replaybook.access_join import join_access, source_ip
from replaybook.frames import CALLS
from replaybook.loading import load
from replaybook.sources import registry
from replaybook.sources.azure_analytics import FIELDS_1_0, FIELDS_2_0, load_azure_analytics, sniff

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "cloud" / "azure-analytics" / "000000.log"
OID = "6d2c1a8e-0f3b-4c55-9e7a-2b1f0c9d8e7a"


def test_the_fields_are_the_documented_ones():
    assert len(FIELDS_1_0) == 30 and len(FIELDS_1_0 + FIELDS_2_0) == 38
    assert FIELDS_1_0[:4] == ("version-number", "request-start-time", "operation-type", "request-status")
    assert FIELDS_1_0[-1] == "client-request-id" and FIELDS_2_0[0] == "user-object-id"


def test_each_authentication_kind_reads_onto_the_access_row():
    res = load_azure_analytics(LOG)
    assert res.quarantine.empty and res.inputs[0]["records"] == 4
    f = res.frame.set_index("line_no")
    assert set(f["source"]) == {"azure.storage"} and set(f["time_kind"]) == {"received"}
    assert f.loc[1, "ts"] == pd.Timestamp("2026-09-13T10:00:05.1234567Z")
    # 1.0, authenticated: the account key or OAuth, which 1.0 does not tell apart
    assert f.loc[1, ["principal_type", "action", "resource_uri", "outcome", "bytes"]].tolist() == [
        "unknown", "read", "az://acmedata/demo/cars.csv", "allowed", 2048]
    assert pd.isna(f.loc[1, "principal"])
    assert (f.loc[1, "user_agent"], f.loc[1, "correlation"]) == ("azsdk-python-storage-blob/12.19.0 door/1.2",
                                                                  "door-sess-a/3")
    assert f.loc[1, "request_id"] == "a84aa705-8a85-48c5-b064-b43bd22979c1"
    # a SAS listing: the prefix is the listed folder; the signature never reaches the frame
    assert f.loc[2, ["principal_type", "action", "resource_uri", "outcome"]].tolist() == [
        "sas", "list", "az://acmedata/demo/reports/", "allowed"]
    raw = f.loc[2, "raw"]
    assert "sig=REDACTED" in raw["request-url"] and "c2VjcmV0" not in str(raw)
    assert raw["request-url"].count("&") == 4  # (&amp; decoded)
    # 2.0, OAuth: the object id is the principal, the UPN its name; refused by storage
    assert f.loc[3, ["principal", "principal_name", "principal_type", "outcome", "error_code"]].tolist() == [
        OID, "door-reader@acme.example", "user", "denied", "AuthorizationError"]
    assert f.loc[3, "raw"]["authorization-detail"] == (
        '{"action":"Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read"}')
    # 2.0, authenticated without OAuth's ids: the account key
    assert f.loc[4, ["principal_type", "action", "resource_uri"]].tolist() == [
        "shared_key", "delete", "az://acmedata/demo/tmp/a b.csv"]
    assert source_ip(f.loc[1, "raw"]) == "198.51.100.7:50312"


def test_damaged_lines_are_quarantined_with_their_line(tmp_path):
    good = LOG.read_bytes().split(b"\n")[0]
    lines = [good,
             good.replace(b';"door-sess-a/3"', b""),                  # a field short
             b"3.0" + good[3:],                                        # a version no one wrote
             good.replace(b'"/acmedata/demo/cars.csv"', b'"/acmedata/demo'),  # a quote that does not close
             good.replace(b"2026-09-13T10:00:05.1234567Z", b"yesterday"),
             good[:10] + b"\x00" + good[11:],
             good[:80]]                                                # the last line, cut (no newline)
    p = tmp_path / "000001.log"
    p.write_bytes(b"\n".join(lines))
    res = load_azure_analytics(p)
    assert list(res.frame["line_no"]) == [1]
    q = res.quarantine.set_index("line_no")
    assert q.loc[2, "error"] == "29 fields where a version 1.0 entry has 30"
    assert q.loc[3, "error"].startswith("version '3.0': not a Storage Analytics log version")
    assert q.loc[4, "error"].startswith("not a Storage Analytics log line")
    assert "yesterday" in q.loc[5, "error"]
    assert q.loc[6, "error"].startswith("NUL bytes in the line")
    assert (q.loc[7, "kind"], q.loc[7, "error"]) == ("pending", "unterminated last line (still being written?)")


def test_the_format_is_recognised_by_its_content(tmp_path):
    assert sniff(LOG.read_bytes()) == 0.95
    assert sniff(b'{"time": "2026-09-13T10:00:21Z", "operationName": "GetBlob"}\n') == 0.0
    p = tmp_path / "$logs" / "blob" / "2026" / "09" / "13" / "1000" / "000000.log"
    p.parent.mkdir(parents=True)
    p.write_bytes(LOG.read_bytes())
    src, score = registry.sniff_file(p)
    assert (src.name, score) == ("azure.storage_analytics", 0.95)
    got = load([tmp_path])
    assert got.files["source"].tolist() == ["azure.storage_analytics"] and len(got["access"]) == 4


def test_a_line_joins_the_door_call_it_served():
    access = load_azure_analytics(LOG).frame
    calls = CALLS.build([
        {"door_session": "door-sess-a", "agent": "analyst", "seq": 3, "ts": "2026-09-13T10:00:04.9Z",
         "ts_end": "2026-09-13T10:00:05.4Z", "tool": "read_object", "object": "demo/cars.csv", "decision": "allow"},
        {"door_session": "door-sess-a", "agent": "analyst", "seq": 4, "ts": "2026-09-13T10:00:09.4Z",
         "ts_end": "2026-09-13T10:00:09.45Z", "tool": "read_object", "object": "reference/.env", "decision": "deny"},
    ])
    res = join_access(calls, access, storage_map={"demo/": "az://acmedata/demo/", "reference/": "az://acmedata/reference/"},
                      offset_s=0)
    assert list(zip(res.links["request_id"], res.links["call_seq"].astype(int))) == [
        ("a84aa705-8a85-48c5-b064-b43bd22979c1", 3)]
    un = res.unexplained.set_index("request_id")
    env = un.loc["7f3c1b20-0001-0000-0000-000000000002"]
    assert (env["outcome"], int(env["refused_seq"])) == ("denied", 4)


def test_a_byte_order_mark_does_not_lose_the_first_line(tmp_path):
    # a log saved by a Windows editor starts with a UTF-8 BOM: its version is still 1.0
    p = tmp_path / "000000.log"
    p.write_bytes(b"\xef\xbb\xbf" + LOG.read_bytes())
    res = load_azure_analytics(p)
    assert res.quarantine.empty and res.inputs[0]["records"] == 4
    want = load_azure_analytics(LOG).frame
    assert res.frame["line_no"].tolist() == want["line_no"].tolist() and 1 in res.frame["line_no"].tolist()
    assert res.frame["request_id"].tolist() == want["request_id"].tolist()
