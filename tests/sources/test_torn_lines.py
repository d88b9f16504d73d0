"""A record glued to the torn start of another: the torn part set aside, the record read.

A writer killed mid-line leaves the start of a record without its newline; the next write (the
same client resumed on the same file, a restarted door, a second writer appending) goes on right
after it, so one physical line holds a torn record and then a whole one.  The whole line was
quarantined — the whole record with it: a tool call the agent made, or a call the door decided,
missing from the frame with nothing but a quarantine row to say it had been there.  Now the torn
start is the quarantine row (line number, byte offset, the parser's complaint) and the record
after it is read, at the same line.  What is *not* a torn write stays quarantined as before: two
whole records on one line (``}{``, case ``claude-damaged-lines`` line 6), a record cut off with
nothing whole after it (line 4 of that case), and an object nested in the torn part.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_claude_fast_equiv import asst, assert_same, tr, tu, user

from replaybook._jsonl import split_torn
from replaybook.sources import codex
from replaybook.sources._claude_ref import is_record
from replaybook.sources.claude_code import load_claude_code
from replaybook.sources.door import load_door


def _write(path: Path, lines: list[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(x + b"\n" for x in lines))
    return path


# --------------------------------------------------------------------------- the splitter

def test_the_record_after_a_torn_start_is_found_where_it_begins():
    whole = b'{"type":"user","uuid":"u2","message":{"role":"user","content":"x"}}'
    torn = b'{"type":"assistant","uuid":"u1","message":{"id":"m1","content":[{"type":"te'
    p, obj = split_torn(torn + whole, is_record)
    assert p == len(torn) and obj["uuid"] == "u2"


def test_a_nested_object_at_the_end_of_a_torn_record_is_not_a_record():
    # cut off just before its last brace: the inner message object parses, but it is not a line
    torn = b'{"type":"assistant","uuid":"u1","message":{"id":"m1","type":"message","role":"assistant"}'
    assert split_torn(torn, is_record) is None
    # a progress line nests whole messages, uuid and all: cut off after one, it is no torn write
    # followed by that message (the message would be read twice, as a made-up sub-agent step)
    progress = (b'{"type":"progress","uuid":"p1","data":{"message":{"type":"assistant","uuid":"sub-a1",'
                b'"message":{"content":[{"type":"tool_use","id":"toolu_sub","name":"Read","input":{}}]}}')
    assert split_torn(progress, is_record) is None
    # the price: a record torn right after ':' / ',' / '[' with a whole one glued on stays one
    # quarantine row (set aside with its text, never a record made up)
    whole = b'{"type":"user","uuid":"u2","message":{"role":"user","content":"x"}}'
    assert split_torn(b'{"type":"assistant","uuid":' + whole, is_record) is None
    assert split_torn(b'{"type":"assistant","uuid":"u' + whole, is_record) == (29, json.loads(whole))


def test_two_whole_records_on_one_line_are_not_a_torn_write():
    a = b'{"type":"user","uuid":"u1","message":{"role":"user","content":"a"}}'
    b = b'{"type":"user","uuid":"u2","message":{"role":"user","content":"b"}}'
    assert split_torn(a + b, is_record) is None


# --------------------------------------------------------------------------- Claude Code

def test_a_claude_code_tool_call_after_a_torn_line_is_read(tmp_path, monkeypatch):
    first = user("u1", "What is the mean mpg?")
    call = asst("a1", "m1", "r1", [tu("toolu_1", "mcp__door__query", {"sql": "select avg(mpg)"})], parentUuid="u1")
    result = user("u2", [tr("toolu_1", "avg 19.9")], parentUuid="a1")
    torn = asst("a0", "m0", "r0", [{"type": "text", "text": "Let me look"}])[:57]
    path = _write(tmp_path / "ffffffff-0000-4000-8000-ffffffffffff.jsonl", [first, torn + call, result])
    frame = assert_same([path], monkeypatch)
    res = load_claude_code(path)
    calls = frame[frame["kind"] == "tool_call"]
    assert list(calls["call_id"]) == ["toolu_1"] and list(calls["line_no"]) == [2]
    assert calls["result_text"].iloc[0] == "avg 19.9"
    q = res.quarantine
    assert list(zip(q["line_no"], q["byte_offset"], q["kind"])) == [(2, len(first) + 1, "invalid")]
    assert q["error"].iloc[0].startswith(f"a record cut off mid-write, then a whole record glued to it at column "
                                         f"{len(torn) + 1} (read as this line's record; the torn part set aside): ")
    assert q["raw"].iloc[0] == torn.decode()


def test_a_torn_line_whose_record_is_then_copied_by_a_resume_is_one_line(tmp_path, monkeypatch):
    # the resume copies the record the loader read from the torn line: a copy, not a conflict
    sid2 = "eeeeeeee-0000-4000-8000-eeeeeeeeeeee"
    call = asst("a1", "m1", "r1", [tu("toolu_1", "mcp__door__query", {"sql": "select 1"})])
    a = _write(tmp_path / "aaaa.jsonl", [user("u0", "hi"), b'{"type":"user","uuid":"zz","mess' + call])
    o = json.loads(call)
    o["sessionId"] = sid2
    b = _write(tmp_path / "bbbb.jsonl", [user("u0", "hi", sessionId=sid2),
                                         json.dumps(o, separators=(",", ":")).encode(), user("u9", "more", sessionId=sid2)])
    frame = assert_same([a, b], monkeypatch)
    res = load_claude_code([a, b])
    assert list(res.quarantine["kind"]) == ["invalid"]
    assert list(frame.loc[frame["kind"] == "tool_call", "transcript_id"]) == ["aaaa"]
    assert [i["duplicates"] for i in res.inputs] == [0, 2]


def test_a_progress_line_cut_after_its_nested_message_makes_up_no_step(tmp_path, monkeypatch):
    nested = json.loads(asst("sub-a1", "m5", "r5", [tu("toolu_sub", "Read", {"file_path": "/etc/hosts"})]))
    progress = json.dumps({"type": "progress", "uuid": "p1", "sessionId": "s", "data": {"message": nested}},
                          separators=(",", ":")).encode()[:-2]   # its last two closing braces never written
    path = _write(tmp_path / "ffffffff-0000-4000-8000-ffffffffffff.jsonl", [user("u1", "hi"), progress, user("u2", "bye")])
    frame = assert_same([path], monkeypatch)
    assert list(frame["kind"]) == ["user_prompt", "user_prompt"]
    q = load_claude_code(path).quarantine
    assert list(zip(q["line_no"], q["kind"])) == [(2, "invalid")] and q["raw"].iloc[0].startswith('{"type":"progress"')


def test_the_damaged_lines_case_keeps_its_answer(cases_dir):
    res = load_claude_code(cases_dir / "claude-damaged-lines")
    want = json.loads((cases_dir / "claude-damaged-lines" / "expected.json").read_text())
    assert (res.frame["kind"] == "tool_call").sum() == want["tool_calls"]
    assert sorted(res.quarantine.loc[res.quarantine["kind"] == "invalid", "line_no"]) == want["quarantined_line_numbers"]


# --------------------------------------------------------------------------- door and Codex

GOOD = {"ts": "2026-09-13T10:00:05.600Z", "seq": 1, "session": "s1", "agent": "analyst",
        "tool": "list_folder", "arguments": {"path": "demo/"}, "object": "demo/",
        "decision": "allow", "rule": "allow-demo", "rows": 3, "bytes": 412}


def test_a_door_call_logged_after_a_torn_line_is_a_call(tmp_path):
    a = json.dumps(GOOD).encode()
    b = json.dumps({**GOOD, "seq": 2, "tool": "read_object", "arguments": {"path": "demo/cars.csv"},
                    "object": "demo/cars.csv", "ts": "2026-09-13T10:00:07.000Z"}).encode()
    c = json.dumps({**GOOD, "seq": 3, "decision": "deny", "rule": "no-dotenv", "object": "reference/.env",
                    "tool": "read_object", "arguments": {"path": "reference/.env"},
                    "ts": "2026-09-13T10:00:09.000Z"}).encode()
    torn = b[:b.index(b'"read_object"') + 5]   # cut inside the tool's name
    _write(tmp_path / "analyst" / "s1.jsonl", [a, torn + c])
    res = load_door(tmp_path)
    assert list(res.frame["seq"]) == [1, 3] and list(res.frame["decision"]) == ["allow", "deny"]
    assert res.frame["line_no"].tolist() == [1, 2]
    q = res.quarantine
    assert list(zip(q["line_no"], q["byte_offset"], q["kind"])) == [(2, len(a) + 1, "invalid")]
    assert f"whole record glued to it at column {len(torn) + 1}" in q["error"].iloc[0]


@pytest.mark.parametrize("glue", [b'{"arguments": {"path": "x"}}', json.dumps({**GOOD, "seq": 9}).encode()[:-1],
                                  json.dumps({**GOOD, "seq": 9}).encode() + b"{"])
def test_a_door_line_that_is_not_a_torn_write_stays_quarantined_whole(tmp_path, glue):
    torn = json.dumps(GOOD).encode()[:40]
    _write(tmp_path / "analyst" / "s1.jsonl", [torn + glue])
    res = load_door(tmp_path)
    assert res.frame.empty and list(res.quarantine["kind"]) == ["invalid"]
    assert not res.quarantine["error"].iloc[0].startswith("a record cut off")


def test_a_codex_rollout_resumed_after_a_torn_line_keeps_the_next_record(tmp_path):
    meta = {"timestamp": "2025-09-13T10:00:00.000Z", "type": "session_meta",
            "payload": {"id": "0199aaaa-0000-7000-8000-00000000000a", "timestamp": "2025-09-13T10:00:00.000Z",
                        "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.39.0"}}
    call = {"timestamp": "2025-09-13T10:00:02.000Z", "type": "response_item",
            "payload": {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}",
                        "call_id": "call_1"}}
    torn = json.dumps({"timestamp": "2025-09-13T10:00:01.000Z", "type": "response_item",
                       "payload": {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": "Listing"}]}}).encode()[:90]
    path = _write(tmp_path / "rollout-2025-09-13T10-00-00-0199aaaa-0000-7000-8000-00000000000a.jsonl",
                  [json.dumps(meta).encode(), torn + json.dumps(call).encode()])
    res = codex.load_codex(path)
    calls = res.frame[res.frame["kind"] == "tool_call"]
    assert list(calls["call_id"]) == ["call_1"] and list(calls["line_no"]) == [2]
    assert list(zip(res.quarantine["line_no"], res.quarantine["kind"])) == [(2, "invalid")]


def test_a_gemini_message_after_a_torn_line_is_read(tmp_path):
    from replaybook.sources.gemini import load_gemini

    meta = {"sessionId": "9e8d7c6b-1111-4222-8333-444455556666", "projectHash": "9b2f", "startTime":
            "2025-10-01T12:00:05.000Z", "lastUpdated": "2025-10-01T12:00:05.000Z"}
    call = {"id": "g1", "timestamp": "2025-10-01T12:00:06.000Z", "type": "gemini", "content": [{"text": "Listing."}],
            "toolCalls": [{"id": "c1", "name": "mcp_door_list_objects", "args": {"prefix": "2025/"},
                           "status": "success", "timestamp": "2025-10-01T12:00:06.300Z"}]}
    torn = json.dumps({"id": "u1", "timestamp": "2025-10-01T12:00:05.100Z", "type": "user",
                       "content": [{"text": "List 2025 objects."}]}).encode()[:60]
    path = _write(tmp_path / "session-2025-10-01T12-00-9e8d7c6b.jsonl",
                  [json.dumps(meta).encode(), torn + json.dumps(call).encode()])
    res = load_gemini(path)
    calls = res.frame[res.frame["kind"] == "tool_call"]
    assert list(calls["call_id"]) == ["c1"] and list(calls["line_no"]) == [2]
    assert list(zip(res.quarantine["line_no"], res.quarantine["kind"])) == [(2, "invalid")]
    assert res.quarantine["error"].iloc[0].startswith("a record cut off mid-write, then a whole record glued to it")


def test_an_otel_export_after_a_torn_line_is_read(tmp_path):
    from replaybook.sources.otel import load_otel

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "otel" / "jsonl" / "collector_traces.jsonl"
    lines = fixture.read_bytes().splitlines()   # 1: spans, 2: metrics, 3 and 4: spans, 5: not JSON, 6: spans
    assert b"resourceSpans" in lines[2] and b"resourceMetrics" in lines[1]
    control = load_otel(_write(tmp_path / "a" / "traces.jsonl", lines[2:]))
    res = load_otel(_write(tmp_path / "b" / "traces.jsonl", [lines[0][:150] + lines[2]] + lines[3:]))
    # the export request glued to the torn one is read as if it stood on its own line
    assert len(control.frame) >= 1
    cols = ["line_no", "kind", "tool", "ts", "call_id", "args_key"]
    assert res.frame[cols].equals(control.frame[cols])
    torn = res.quarantine[res.quarantine["error"].str.startswith("a record cut off mid-write")]
    assert list(zip(torn["line_no"], torn["byte_offset"], torn["raw"].str.len())) == [(1, 0, 150)]
    assert len(res.quarantine) == len(control.quarantine) + 1
    # glued to a line of another signal (metrics), the line stays one quarantine row
    res = load_otel(_write(tmp_path / "c" / "traces.jsonl", [lines[0][:150] + lines[1]]))
    assert list(res.quarantine["kind"]) == ["invalid"] and not res.quarantine["error"].iloc[0].startswith("a record")


GATEWAY_LOGS = [("docker/policy-audit.jsonl", "load_docker_gateway"), ("gatekit/gatekit_audit.jsonl", "load_gatekit"),
                ("pomerium/authorize.jsonl", "load_pomerium"), ("invariant/traces.jsonl", "load_invariant"),
                ("mxcp/audit.jsonl", "load_mxcp"), ("mcp_http/exchange.jsonl", "load_mcp_http"),
                ("mcpjungle/audit.log", "load_mcpjungle"),  # (zap JSON, then console lines)
                ("agentgateway/access.log", "load_agentgateway")]  # (its lines written as JSON: _as_json)


def _as_json(line: bytes) -> bytes:
    """An agentgateway text access log line as its JSON log writes the same fields."""
    import shlex

    ts, level, rest = line.decode().split("\t", 2)
    msg, _, kv = rest.partition(" ")
    return json.dumps({"level": level, "time": ts, "scope": msg,
                       **dict(tok.split("=", 1) for tok in shlex.split(kv))}).encode()


@pytest.mark.parametrize("name,loader", GATEWAY_LOGS)
def test_a_gateway_record_after_a_torn_line_is_read(tmp_path, name, loader):
    from replaybook.sources import gateways, gateways_more

    load = getattr(gateways, loader, None) or getattr(gateways_more, loader)
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "gateways" / name
    lines = [ln for ln in fixture.read_bytes().splitlines() if ln.strip()]
    if loader == "load_agentgateway":
        lines = [_as_json(ln) for ln in lines]
    fname = fixture.name
    control = load(_write(tmp_path / "a" / fname, lines[1:]))
    res = load(_write(tmp_path / "b" / fname, [lines[0][:4] + lines[1]] + lines[2:]))
    assert len(control.frame) >= 1
    cols = [c for c in control.frame.columns if c not in ("source_file",)]
    assert res.frame[cols].astype(str).equals(control.frame[cols].astype(str))
    torn = res.quarantine[res.quarantine["error"].fillna("").str.startswith("a record cut off mid-write")]
    assert list(zip(torn["line_no"], torn["byte_offset"], torn["raw"])) == [(1, 0, lines[0][:4].decode())]
