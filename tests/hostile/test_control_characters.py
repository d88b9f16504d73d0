"""A raw control character (U+0000–U+001F: a NUL byte, an unescaped tab or line break inside a
string — JSON allows them only escaped, so no JSON writer leaves one: the file is damaged there)
sets aside the record that holds it, never the file, never the load.

* A line of JSON Lines (every line-based loader): that line is a quarantine row with file, line,
  byte offset and ``raw control character U+0000 at column C``; the other lines are read.
* A record of a whole-file document (CloudTrail's ``{"Records": [...]}``, GCP's array or
  ``entries``, Azure's ``records``, OTLP JSON, a Codex TypeScript rollout, a Gemini CLI
  recording, the gateways' JSON exports): that record is a quarantine row naming the file, the
  line and byte offset where the record starts, which record it is (its index and, when it can
  be read, its id) and the character's byte offset in the file; every other record is read
  exactly as from an undamaged file.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from replaybook.loading import MIN_CONFIDENCE
from replaybook.sources import cloudtrail, registry

FIX = Path(__file__).resolve().parents[1] / "fixtures"
WORDS = "(JSON allows it only escaped, as \\u{:04x})"


def _q(res) -> list[tuple]:
    return [(Path(r.source_file).name, r.line_no, r.byte_offset, r.kind, r.error)
            for r in res.quarantine.itertuples()]


def _record_words(what: str, name: str, ch: int, at: int) -> str:
    return (f"{what} ({name}): raw control character U+{ch:04X} at byte {at} {WORDS.format(ch)}; "
            "set aside, the others are read")


def _event(i: int) -> dict:
    return {"eventVersion": "1.09", "eventTime": f"2026-09-13T10:00:0{i}Z", "eventSource": "s3.amazonaws.com",
            "eventName": "GetObject", "userIdentity": {"type": "AssumedRole", "arn": "arn:aws:sts::1:assumed-role/r/s"},
            "requestParameters": {"bucketName": "b", "key": f"k{i}"}, "requestID": f"R{i}", "eventID": f"E{i}"}


# -- whole-file documents ----------------------------------------------------------------------

@pytest.mark.parametrize("gz", [False, True], ids=["json", "json.gz"])
@pytest.mark.parametrize("ch", [0x00, 0x01, 0x09, 0x0A, 0x1F])
def test_cloudtrail_delivery_file_keeps_every_record_but_the_damaged_one(tmp_path, gz, ch):
    # was: the document did not parse, and the records from the damaged one on were lost
    body = json.dumps({"Records": [_event(i) for i in range(5)]}, separators=(",", ":")).encode()
    body = body.replace(b'"k2"', b'"k' + bytes([ch]) + b'2"')
    path = tmp_path / "ct.json"
    path.write_bytes(gzip.compress(body) if gz else body)
    start = body.index(b'{"eventVersion"', body.index(b'"R1"'))
    at = body.index(bytes([ch]))
    for load in (cloudtrail.load_cloudtrail, cloudtrail._load_reference):
        res = load(path)
        assert res.frame["request_id"].tolist() == ["R0", "R1", "R3", "R4"]
        assert res.frame["line_no"].tolist() == [1, 2, 4, 5]
        assert _q(res) == [("ct.json", 1, start, "invalid",
                            _record_words('record 3 of "Records"', 'eventID "E2"', ch, at))]
        assert res.inputs[0]["records"] == 4


def test_cloudtrail_damage_in_two_records_and_between_tokens(tmp_path):
    body = json.dumps({"Records": [_event(i) for i in range(5)]}, separators=(",", ":")).encode()
    body = body.replace(b',"requestID":"R1"', b',\x00"requestID":"R1"').replace(b'"E3"', b'"E\x003"')
    path = tmp_path / "ct.json"
    path.write_bytes(body)
    nuls = [m.start() for m in re.finditer(b"\x00", body)]
    starts = [body.index(b'{"eventVersion"', body.index(b'"R0"' if k == 1 else b'"R2"')) for k in (1, 3)]
    res = cloudtrail.load_cloudtrail(path)
    assert res.frame["request_id"].tolist() == ["R0", "R2", "R4"]
    assert _q(res) == [
        ("ct.json", 1, starts[0], "invalid", _record_words('record 2 of "Records"', 'eventID "E1"', 0, nuls[0])),
        ("ct.json", 1, starts[1], "invalid", _record_words('record 4 of "Records"', 'eventID "E\\u00003"', 0, nuls[1])),
    ]


def test_cloudtrail_pretty_and_concatenated_documents(tmp_path):
    pretty = json.dumps({"Records": [_event(i) for i in range(3)]}, indent=2).encode().replace(b'"k1"', b'"k\x001"')
    (tmp_path / "pretty.json").write_bytes(pretty)
    one = json.dumps({"Records": [_event(0), _event(1)]}).encode()
    two = json.dumps({"Records": [_event(2), _event(3)]}).encode().replace(b'"k3"', b'"k\x003"')
    (tmp_path / "cat.json").write_bytes(one + two)  # `cat` of two delivery files
    res = cloudtrail.load_cloudtrail(tmp_path)
    rows = res.frame.sort_values(["source_file", "line_no"])
    assert list(zip(rows["source_file"].map(lambda s: Path(s).name), rows["request_id"], rows["line_no"])) == [
        ("cat.json", "R0", 1), ("cat.json", "R1", 2), ("cat.json", "R2", 3),
        ("pretty.json", "R0", 1), ("pretty.json", "R2", 3)]
    record_line = pretty[:pretty.index(b'"eventVersion"', pretty.index(b'"E0"'))].count(b"\n")  # its "{" line
    record_start = pretty.rindex(b"{", 0, pretty.index(b'"eventVersion"', pretty.index(b'"E0"')))
    assert _q(res) == [
        ("cat.json", 1, len(one) + two.index(b'{"eventVersion"', two.index(b'"R2"')), "invalid",
         _record_words('record 2 of "Records" in document 2', 'eventID "E3"', 0, len(one) + two.index(b"\x00"))),
        ("pretty.json", record_line, record_start, "invalid",
         _record_words('record 2 of "Records"', 'eventID "E1"', 0, pretty.index(b"\x00"))),
    ]


def test_damage_outside_the_records_is_named_and_every_record_read(tmp_path):
    body = json.dumps({"Records": [_event(i) for i in range(2)]}, separators=(",", ":")).encode()
    body = body[:-1] + b',"note":"a\x00b"}'
    (tmp_path / "ct.json").write_bytes(body)
    res = cloudtrail.load_cloudtrail(tmp_path / "ct.json")
    at = body.index(b"\x00")
    assert res.frame["request_id"].tolist() == ["R0", "R1"]
    assert _q(res) == [("ct.json", 1, at, "invalid",
                        f"raw control character U+0000 at byte {at} {WORDS.format(0)}, outside the 2 records, in the "
                        "document's own fields: those are read with it in place (one other than tab, LF or CR as a space)")]


GCP = {"protoPayload": {"@type": "type.googleapis.com/google.cloud.audit.AuditLog",
                        "methodName": "storage.objects.get", "serviceName": "storage.googleapis.com",
                        "resourceName": "projects/_/buckets/b/objects/k",
                        "authenticationInfo": {"principalEmail": "a@x.iam.gserviceaccount.com"}},
       "timestamp": "2026-09-13T10:00:05Z", "logName": "projects/p/logs/cloudaudit.googleapis.com%2Fdata_access",
       "resource": {"type": "gcs_bucket"}}


@pytest.mark.parametrize("shape", ["array", "entries"])
def test_gcp_array_and_entries(tmp_path, shape):
    entries = [{**GCP, "insertId": f"i{i}"} for i in range(3)]
    body = json.dumps(entries if shape == "array" else {"entries": entries}).encode()
    at = body.rindex(b"objects/k", 0, body.index(b'"i1"')) + len(b"objects/")
    body = body[:at] + b"\x00" + body[at + 1:]
    assert body.count(b"\x00") == 1
    (tmp_path / "g.json").write_bytes(body)
    res = registry.get("gcp.audit").load(tmp_path / "g.json")
    start = body.index(b'{"protoPayload"', body.index(b'"i0"'))
    what = "element 2 of the array" if shape == "array" else 'record 2 of "entries"'
    assert res.frame["line_no"].tolist() == [1, 3]
    assert _q(res) == [("g.json", 1, start, "invalid", _record_words(what, 'insertId "i1"', 0, body.index(b"\x00")))]


def test_azure_records_pretty(tmp_path):
    data = (FIX / "cloud" / "azure" / "eventhub-records.json").read_bytes()
    clean = registry.get("azure.storage").load(FIX / "cloud" / "azure" / "eventhub-records.json")
    second = data.index(b'"time"', data.index(b'"time"') + 1)
    bad = data[:second] + data[second:].replace(b'"StorageRead"', b'"Storage\x00Read"', 1)
    (tmp_path / "eh.json").write_bytes(bad)
    res = registry.get("azure.storage").load(tmp_path / "eh.json")
    start = bad.rindex(b"{", 0, second)
    assert len(clean.frame) == 2 and clean.quarantine.empty
    assert res.frame["line_no"].tolist() == [1]
    row = _q(res)
    assert len(row) == 1 and row[0][:4] == ("eh.json", bad[:start].count(b"\n") + 1, start, "invalid")
    assert row[0][4].startswith('record 2 of "records" (correlationId ') and row[0][4].endswith(
        f": raw control character U+0000 at byte {bad.index(bytes(1))} {WORDS.format(0)}; set aside, the others are read")


# the other loaders' whole-file documents: (source, fixture, text to damage, rows clean → damaged, what)
DOCUMENTS = [
    ("otel", "otel/document/agent_trace.json", b'"e000000000000002"', (11, 10), 'span 5 of the file (spanId "e'),
    ("codex", "codex/typescript/rollout-2025-04-20-bbbbbbbb-2222-4222-8222-bbbbbbbbbbbb.json", b'"shell"', (5, 4),
     'item 2 (id "fc_a")'),
    ("gemini", "gemini/resumed/session-2025-09-30T08-00-7f00aa11.json", None, (4, 2), "item 2 (id "),
    ("obot", "gateways/obot/mcp-audit-logs.json", b'"e-2"', (3, 2), 'element 2 of "items" (eventID "e'),
    ("lasso", "gateways/lasso/xetrack-events.json", b'"c2"', (2, 1), "element 2 of the array (call_id"),
    ("context-forge", "gateways/context_forge/export.json", None, (3, 2), 'element 2 of "observability_spans"'),
]


@pytest.mark.parametrize("source,fixture,mark,rows,what", DOCUMENTS, ids=[d[0] for d in DOCUMENTS])
def test_other_whole_file_documents(tmp_path, source, fixture, mark, rows, what):
    # was: "JSON document is not valid JSON", and no record of the file was read
    data = (FIX / fixture).read_bytes()
    at = data.index(mark) + 2 if mark else _second_value(data)
    bad = data[:at] + b"\x00" + data[at + 1:]  # one character replaced: every offset stays
    path = tmp_path / Path(fixture).name
    path.write_bytes(bad)
    load = registry.get(source).load
    clean, res = load(FIX / fixture), load(path)
    assert (len(clean.frame), len(res.frame)) == rows
    new = [r for r in _q(res) if r not in [(path.name,) + r2[1:] for r2 in _q(clean)]]
    assert len(new) == 1
    name, line_no, offset, kind, error = new[0]
    assert (name, kind) == (path.name, "invalid") and error.startswith(what)
    assert error.endswith(f"raw control character U+0000 at byte {at} {WORDS.format(0)}; set aside, the others are read")
    assert line_no == bad[:offset].count(b"\n") + 1 and bad[offset:offset + 1] == b"{"
    found, score = registry.sniff_file(path)
    assert found.name == source and score >= MIN_CONFIDENCE


def _second_value(data: bytes) -> int:
    """Where the text of a string value in the middle of a document starts (+1: not its quote)."""
    m = re.compile(rb'": ?"([ -!#-\[\]-~]{3,})"').search(data, len(data) // 2)
    return m.start(1) + 1


# -- JSON Lines --------------------------------------------------------------------------------

LINES = [
    ("door", "join_trap/door/analyst/door-sess-a.jsonl", 3),
    ("claude-code", "join_trap/transcripts/11111111-aaaa-4aaa-8aaa-111111111111.jsonl", 1),
    ("codex", "codex/envelope/rollout-2025-09-13T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl", 1),
    ("gemini", "gemini/chats/session-2025-10-01T12-00-5a1b2c3d.jsonl", 1),
    ("otel", "otel/jsonl/collector_traces.jsonl", 1),
    ("aws.cloudtrail", "cloud/lookup/lookup_events.jsonl", 2),
    ("aws.cloudtrail", "cloud/eventbridge/events.jsonl", 1),
    ("gcp.audit", "cloud/gcp-audit-denied/data_access.jsonl", 2),
    ("azure.storage", "cloud/azure/PT1H.json", 4),
    ("gatekit", "gateways/gatekit/gatekit_audit.jsonl", 2),
    ("mxcp", "gateways/mxcp/audit.jsonl", 1),
    ("pomerium", "gateways/pomerium/authorize.jsonl", 1),
    ("invariant", "gateways/invariant/traces.jsonl", 2),
    ("mcp-http", "gateways/mcp_http/exchange.jsonl", 2),
    ("docker-mcp-gateway", "gateways/docker/policy-audit.jsonl", 1),
    ("mcpjungle", "gateways/mcpjungle/audit.log", 1),
]


@pytest.mark.parametrize("ch", [0x00, 0x1F, 0x09])
@pytest.mark.parametrize("source,fixture,k", LINES, ids=[f"{s}:{Path(f).name}" for s, f, _k in LINES])
def test_a_line_holding_one_sets_aside_that_line_only(tmp_path, source, fixture, k, ch):
    data = (FIX / fixture).read_bytes()
    lines = data.split(b"\n")
    m = re.compile(rb'":"([ -!#-\[\]-~]{3,})"').search(lines[k - 1]) or re.compile(
        rb'": "([ -!#-\[\]-~]{3,})"').search(lines[k - 1])
    col = m.start(1) + 1  # 0-based place of the character replaced in its line
    lines[k - 1] = lines[k - 1][:col] + bytes([ch]) + lines[k - 1][col + 1:]
    bad = b"\n".join(lines)
    sub = tmp_path / "analyst"  # (the door reads the agent from the folder)
    sub.mkdir()
    path = sub / Path(fixture).name
    path.write_bytes(bad)
    load = registry.get(source).load
    clean, res = load(FIX / fixture), load(path)
    offset = len(b"\n".join(lines[:k - 1])) + (1 if k > 1 else 0)
    new = [r for r in _q(res) if r[1] != k]
    assert new == [(path.name,) + r[1:] for r in _q(clean) if r[1] != k]  # the other lines' rows as before
    mine = [r for r in _q(res) if r[1] == k]
    assert len(mine) == 1 and mine[0][:4] == (path.name, k, offset, "invalid"), mine
    assert f"invalid JSON: raw control character U+{ch:04X} at column {col + 1} {WORDS.format(ch)}" in mine[0][4]
    kept = res.frame["line_no"].tolist()
    assert k not in kept and set(kept) <= set(clean.frame["line_no"])
    # the damaged line is not counted as a line of another format: the file is still recognised
    found, score = registry.sniff_file(path)
    assert found.name == source and score >= MIN_CONFIDENCE
