"""Fields of a shape the formats do not give them, in the transcript and gateway loaders: each
had stopped the whole load with an internal error (exit 1), or lost the file.

Every input is one of this project's fixtures with one value replaced."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

import replaybook
from replaybook.sources.registry import sniff_file

FIX = Path(__file__).resolve().parents[1] / "fixtures"


def _edit(tmp_path: Path, fixture: str, old: str, new: str, *, count: int = 1, name: str | None = None) -> Path:
    src = FIX / fixture
    text = src.read_text(encoding="utf-8")
    assert old in text, (fixture, old)
    p = tmp_path / (name or src.name)
    p.write_text(text.replace(old, new, count), encoding="utf-8")
    return p


def test_a_line_whose_type_is_an_object_does_not_stop_any_load(tmp_path):
    """Every file is sniffed by every source: one line with ``"type": {…}`` in a Codex rollout
    failed the load of any file, whatever its format (``unhashable type: 'dict'``)."""
    codex = FIX / "codex" / "envelope" / "rollout-2025-09-13T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl"
    lines = codex.read_text().splitlines(keepends=True)
    p = tmp_path / codex.name
    p.write_text(lines[0] + '{"timestamp":"2025-09-13T10:00:00.001Z","type":{"x":1},"payload":{}}\n'
                 + "".join(lines[1:]))
    before = replaybook.load(codex)["steps"]
    after = replaybook.load(p)["steps"]
    assert len(after) == len(before) + 1  # the odd line is kept, as an event of no known type
    assert sniff_file(p)[0].name == "codex"
    # gatekit's event_type, MCPJungle's tool_name as objects: the other calls of the file load
    gk = _edit(tmp_path, "gateways/gatekit/gatekit_audit.jsonl", '"event_type":"REQUEST"', '"event_type":{"x":1}')
    assert len(replaybook.load(gk)["calls"]) == len(replaybook.load(FIX / "gateways/gatekit/gatekit_audit.jsonl")["calls"])
    mj = _edit(tmp_path, "gateways/mcpjungle/audit.log", '"tool_name":"read_object"', '"tool_name":{"n":"read_object"}',
               count=2)
    calls = replaybook.load(mj)["calls"]
    assert len(calls) == len(replaybook.load(FIX / "gateways/mcpjungle/audit.log")["calls"])
    assert calls["tool"].isna().sum() == 1  # the call whose name is not text: kept, its tool unknown


@pytest.mark.parametrize("fixture", ["gateways/mxcp/audit.jsonl", "gateways/obot/mcp-audit-logs.json",
                                     "gateways/invariant/traces.jsonl"])
def test_a_byte_order_mark_does_not_hide_a_file(tmp_path, fixture):
    src = FIX / fixture
    p = tmp_path / src.name
    p.write_bytes(b"\xef\xbb\xbf" + src.read_bytes())
    assert sniff_file(p)[0].name == sniff_file(src)[0].name
    pd.testing.assert_frame_equal(replaybook.load(p)["calls"].drop(columns="source_file"),
                                  replaybook.load(src)["calls"].drop(columns="source_file"))


@pytest.mark.parametrize("duration", ["1e300", "-5000", str(2**70)])
def test_a_duration_no_time_can_take_keeps_the_call(tmp_path, duration):
    """1e300 ms had stopped the load (OutOfBoundsTimedelta); a negative one put the start after
    the end.  The duration is kept as logged; no time is derived from it."""
    p = _edit(tmp_path, "gateways/mxcp/audit.jsonl", '"duration_ms":12', f'"duration_ms":{duration}')
    calls = replaybook.load(p)["calls"]
    row = calls[calls["tool"] == "query"].iloc[0]
    assert row["duration_ms"] == float(duration)
    assert pd.isna(row["ts_end"]) or row["ts_end"] >= row["ts"]
    mj = tmp_path / "audit.log"  # every call's duration, those with no start line too
    mj.write_text(re.sub(r'"duration_ms":\s*\d+', f'"duration_ms": {duration}',
                         (FIX / "gateways/mcpjungle/audit.log").read_text()))
    mc = replaybook.load(mj)["calls"]
    assert len(mc) == len(replaybook.load(FIX / "gateways/mcpjungle/audit.log")["calls"])
    assert (mc["ts_end"].isna() | (mc["ts_end"] >= mc["ts"])).all()


def test_lower_case_rfc3339_times_are_read(tmp_path):
    """RFC 3339 §5.6 allows "t" and "z": the gateway loads had failed whole ("calls.ts: cannot
    convert to datetime64")."""
    p = _edit(tmp_path, "gateways/mxcp/audit.jsonl", '"2026-09-13T10:00:00.000Z"', '"2026-09-13t10:00:00.000z"')
    calls = replaybook.load(p)["calls"]
    assert calls["ts"].iloc[0] == pd.Timestamp("2026-09-13T10:00:00Z")


def test_lists_that_are_numbers_are_said_not_crashed_on(tmp_path):
    gem = next((FIX / "gemini").rglob("*.json"))
    doc = json.loads(gem.read_text())
    msgs = doc["messages"]  # (a Gemini chat recording: {"sessionId", "messages": [...]})
    i = next(i for i, m in enumerate(msgs) if m.get("toolCalls"))
    msgs[i]["toolCalls"] = 5
    p = tmp_path / gem.name
    p.write_text(json.dumps(doc, indent=2))
    res = replaybook.load(p)
    assert res.quarantine["error"].str.startswith("toolCalls is not a list (int)").sum() == 1
    assert (res["steps"]["kind"] == "model_request").sum() == (replaybook.load(gem)["steps"]["kind"] == "model_request").sum()
    ob = _edit(tmp_path, "gateways/obot/mcp-audit-logs.json", '"webhookStatuses": []', '"webhookStatuses": 5')
    res = replaybook.load(ob)
    assert len(res["calls"]) == len(replaybook.load(FIX / "gateways/obot/mcp-audit-logs.json")["calls"])
    notes = [n for i in res.results["calls"].inputs for n in (i.get("notes") or [])]
    assert any("webhookStatuses is not a list (int)" in n for n in notes)


def test_a_time_that_is_not_a_date_time_is_named_not_silently_unknown(tmp_path):
    """"yesterday" or year 9999 had become NaT with no word in the Codex, Gemini and Invariant
    loaders; the event stays (in file order), and the input's note names the line and text."""
    codex = FIX / "codex" / "envelope" / "rollout-2025-09-13T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl"
    p = _edit(tmp_path, str(codex.relative_to(FIX)), '"timestamp":"2025-09-13T10:00:00.005Z"',
              '"timestamp":"yesterday"')
    res = replaybook.load(p)
    steps = res["steps"]
    assert len(steps) == len(replaybook.load(codex)["steps"])
    assert steps.loc[steps["line_no"] == 2, "ts"].isna().all()
    assert res.files["note"].iloc[0].endswith("; 1 event with a time that is not a date-time, kept with the time "
                                              "unknown: line 2 ('yesterday')")
    gem = _edit(tmp_path, "gemini/chats/session-2025-10-01T12-00-5a1b2c3d.jsonl", '"timestamp":"2025-10-01T12:00:02.000Z"',
                '"timestamp":"9999-12-31T23:59:59Z"', count=-1)  # (every copy of the re-appended message)
    # (a valid date-time a frame cannot hold is said as such, not as "not a date-time")
    assert ("with a date-time beyond the times a frame holds (1677-09-21 to 2262-04-11 UTC), kept with the time "
            "unknown: line 8 ('9999-12-31T23:59:59Z')") in replaybook.load(gem).files["note"].iloc[0]
    inv = _edit(tmp_path, "gateways/invariant/traces.jsonl", '"timestamp":"2026-09-13T10:00:01.000"',
                '"timestamp":"yesterday"')
    res = replaybook.load(inv)
    assert len(res["calls"]) == len(replaybook.load(FIX / "gateways/invariant/traces.jsonl")["calls"])
    assert "line 1: message time 'yesterday' is not a date-time: its call is kept with the time unknown" in \
        res.files["note"].iloc[0]


def test_a_lone_surrogate_escape_in_a_document_keeps_the_document(tmp_path):
    """Valid JSON (RFC 8259 allows the escape) that orjson refuses: a context-forge export whose
    first line is not "{" alone had been read as JSON Lines, every line set aside with wrong
    reasons ("Expecting property name …")."""
    src = FIX / "gateways/context_forge/export.json"
    p = _edit(tmp_path, "gateways/context_forge/export.json", '"error_message":null}', '"error_message":"x\\ud800"}')
    res = replaybook.load(p)
    assert res.quarantine.empty
    assert len(res["calls"]) == len(replaybook.load(src)["calls"])


def test_an_agentgateway_line_cut_before_its_mcp_fields_is_pending(tmp_path):
    """A half-written last line had been counted among "valid lines of other kinds"."""
    src = FIX / "gateways/agentgateway/access.log"
    lines = src.read_text().splitlines(keepends=True)
    last = next(i for i in range(len(lines) - 1, -1, -1) if "mcp.method.name=tools/call" in lines[i])
    cut = lines[last][:lines[last].index("mcp.")]
    p = tmp_path / "access.log"
    p.write_text("".join(lines[:last]) + cut)
    res = replaybook.load(p)
    q = res.quarantine
    assert q[["line_no", "kind"]].values.tolist() == [[last + 1, "pending"]]


def test_a_pomerium_log_mostly_of_its_own_proxy_lines_is_recognised(tmp_path):
    """Pomerium's http-request lines outnumber the MCP authorize lines in a real log: such a
    file (or the part of a rotated log holding one refusal) had been "no source recognised"."""
    src = FIX / "gateways/pomerium/authorize.jsonl"
    mcp = next(ln for ln in src.read_text().splitlines() if '"mcp-method":"tools/call"' in ln)
    proxy = ('{"level":"info","service":"proxy","method":"POST","path":"/mcp","status":200,'
             '"time":"2025-10-01T08:00:05-04:00","message":"http-request"}')
    p = tmp_path / "authorize.jsonl"
    p.write_text("\n".join([mcp] + [proxy] * 6) + "\n")
    res = replaybook.load(p)
    assert res.files["source"].tolist() == ["pomerium"]
    assert len(res["calls"]) == 1
    q = tmp_path / "proxy-only.jsonl"
    q.write_text("\n".join([proxy] * 3) + "\n")  # (no MCP line at all: not a Pomerium MCP log)
    assert replaybook.load(q).files["note"].tolist() == ["no source recognised this content"]


@pytest.mark.parametrize("fixture", ["gateways/gatekit/gatekit_audit.jsonl", "gateways/mcp_http/exchange.jsonl"])
def test_a_rotated_log_split_anywhere_reads_as_it_does_whole(tmp_path, fixture):
    """A request and its response (Gatekit), a session's initialize and its calls (MCP HTTP)
    split over two files of a rotated log had lost the end time and duration, or the agent and
    server.  The files are also named so that name order is not time order (app.log.1 is older)."""
    src = FIX / fixture
    lines = src.read_bytes().splitlines(keepends=True)
    keep = ["source_file", "line_no"]
    whole = replaybook.load(src)["calls"].drop(columns=keep)
    compared = 0
    for at in range(1, len(lines)):
        d = tmp_path / f"split{at}"
        d.mkdir()
        (d / "b-older.jsonl").write_bytes(b"".join(lines[:at]))
        (d / "a-newer.jsonl").write_bytes(b"".join(lines[at:]))
        got = replaybook.load(d)
        if "calls" not in got.results:  # (a part holding no record of the format is not recognised)
            continue
        pd.testing.assert_frame_equal(got["calls"].drop(columns=keep), whole, obj=f"split at line {at}")
        compared += 1
    assert compared >= len(lines) - 2


def test_digits_int_cannot_read_in_a_count_or_status_do_not_stop_a_load(tmp_path):
    """``"²00"``, ``"²048"`` and ``"³"`` are digits to ``str.isdigit`` and not to ``int()``: an
    Azure status, a CloudTrail byte count, a GCP item count, an S3 byte count or a PR body's
    ``[seq:²]`` so written had stopped the whole load (or the claims lint) with an internal
    error.  Each is now a value not read — the status an error outcome, a count NA — and the
    rest of the file is read."""
    from replaybook.packet.claims import lint_claims_text

    az = _edit(tmp_path, "cloud/azure/PT1H.json", '"statusCode": 200', '"statusCode": "\u00b200"')
    rows = replaybook.load(az)["access"]
    assert len(rows) == len(replaybook.load(FIX / "cloud/azure/PT1H.json")["access"])
    assert rows["outcome"].iloc[0] == "error" and rows["error_code"].iloc[0] == "\u00b200"
    ct = _edit(tmp_path, "cloud/join/cloudtrail.json", '"bytesTransferredOut": 2048', '"bytesTransferredOut": "\u00b2048"')
    rows = replaybook.load(ct)["access"]
    assert len(rows) == len(replaybook.load(FIX / "cloud/join/cloudtrail.json")["access"]) and rows["bytes"].isna().any()
    gcp = _edit(tmp_path, "cloud/gcp-audit-denied/data_access.jsonl", '"numResponseItems": "3"',
                '"numResponseItems": "\u00b3"')
    rows = replaybook.load(gcp)["access"]
    assert len(rows) == 3 and rows["rows"].isna().all()
    s3 = _edit(tmp_path, "cloud/s3-access-quotes/acme-data-2026-09-13-10-10-00-0123456789ABCDEF",
               "200 - 2048 2048", "200 - \u00b2048 2048")
    res = replaybook.load(s3)
    assert len(res["access"]) == 3 and res.quarantine["line_no"].tolist() == [1]  # (the line set aside, not the file)
    report = lint_claims_text("It passes [seq:\u00b2].", {1: 0})
    assert [f.kind for f in report.findings] == ["malformed_marker"]


def _door_properties() -> list[str]:
    schema = json.loads((Path(replaybook.__file__).parent / "schemas" / "door-call-log.v1.json").read_text())
    return sorted(schema["properties"])


@pytest.mark.parametrize("key", _door_properties())
@pytest.mark.parametrize("value", [[1], {"a": 1}])
def test_a_door_field_holding_a_list_or_an_object_is_quarantined_not_crashed_on(tmp_path, key, value):
    """Every field the door's schema names, given a list or an object where the schema has a
    value of another type (``approval: [1]`` had stopped the load: a list is unhashable)."""
    from replaybook.sources.door import load_door
    good = {"ts": "2026-09-13T10:00:05.750Z", "seq": 1, "session": "s1", "agent": "analyst",
            "server": "files", "tool": "list_folder", "arguments": {"path": "demo/"}, "object": "demo/",
            "decision": "allow", "rule": "allow-demo", "rows": 3, "bytes": 412}
    p = tmp_path / "door.jsonl"
    p.write_text(json.dumps({**good, key: value}) + "\n" + json.dumps({**good, "seq": 2}) + "\n")
    res = load_door(p)
    # (arguments_invalid holds whatever the client sent as arguments that was no object: a list too)
    allowed = (key in ("arguments", "meta") and isinstance(value, dict) or key == "objects" and isinstance(value, list)
               or key == "arguments_invalid")
    assert len(res.frame) + len(res.quarantine) == 2
    if not allowed:
        assert res.quarantine["line_no"].tolist() == [1] and res.frame["seq"].tolist() == [2]
        assert key in res.quarantine["error"].iat[0]
