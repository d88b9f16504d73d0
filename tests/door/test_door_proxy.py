"""The door in front of the SDK fixture server, driven by the SDK client: log lines, refusals,
evidence digests, resources, upstream errors — and a capsule replay of that run."""

from __future__ import annotations

import sys

import mcp_types as types
import orjson
import pytest
import yaml
from mcp.shared.exceptions import MCPError

from replaybook.capsule import Capture, EvidenceStore, build_capsule, load_run
from replaybook.door import DOOR_REFUSED
from replaybook.door.results import measure
from replaybook.sources.door import load_door

from .conftest import door_cmd, fixture_server_cmd, log_files, run_session, validate_lines

CALLS = [
    ("list_folder", {"path": "demo"}),
    ("query", {"path": "demo/cars.csv", "column": "mpg"}),
    ("read_object", {"path": "reference/.env"}),
    ("read_object", {"path": "elsewhere/x.txt"}),
    ("read_object", {"path": "demo/missing.csv"}),
]


def _dump(r) -> dict:
    return r.model_dump(by_alias=True, exclude_none=True, mode="json")


@pytest.fixture(scope="module")
def fixture_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("door-proxy")
    data = base / "data"
    (data / "demo").mkdir(parents=True)
    (data / "reference").mkdir()
    (data / "demo" / "cars.csv").write_text("name,mpg,cyl\nmazda,21,6\ndatsun,22.8,4\nhornet,21.4,6\n")
    (data / "demo" / "notes.txt").write_text("cars from 1974\n")
    (data / "reference" / ".env").write_text("API_KEY=do-not-read\n")
    from .conftest import RULES_YAML

    rules = base / "rules.yaml"
    rules.write_text(RULES_YAML)
    log_root, evidence = base / "incident" / "door", base / "evidence"
    log = log_root / "analyst" / "sess-1.jsonl"

    async def agent(s):
        out, seen_lines = [], []
        listed = await s.list_tools()
        for i, (name, args) in enumerate(CALLS):
            out.append(await s.call_tool(name, args, meta={"claudecode/toolUseId": f"toolu_{i}"}))
            seen_lines.append(len(log.read_bytes().splitlines()))  # logged before we got the answer
        res = await s.read_resource("data://demo/notes.txt")
        seen_lines.append(len(log.read_bytes().splitlines()))
        try:
            await s.read_resource("data://reference/.env")
            refused = None
        except MCPError as exc:
            refused = exc
        return listed, out, res, refused, seen_lines

    listed, out, res, refused, seen = run_session(
        door_cmd(rules, log_root, fixture_server_cmd(data), evidence=evidence, session="sess-1"), agent)
    return {"base": base, "data": data, "rules": rules, "log_root": log_root, "log": log, "evidence": evidence,
            "listed": listed, "results": [_dump(r) for r in out], "resource": _dump(res), "refused": refused,
            "seen": seen}


def test_calls_are_decided_logged_before_the_answer_and_refusals_name_the_rule(fixture_run):
    assert [t.name for t in fixture_run["listed"].tools] == ["list_folder", "read_object", "query", "crash"]
    assert fixture_run["seen"] == [1, 2, 3, 4, 5, 6]
    r = fixture_run["results"]
    assert r[0]["content"][0]["text"] == "cars.csv\nnotes.txt\n"
    assert r[1]["structuredContent"] == {"rows": [{"mpg": "21"}, {"mpg": "22.8"}, {"mpg": "21.4"}]}
    assert r[2]["isError"] and "rule 'deny-dotenv'" in r[2]["content"][0]["text"]
    assert r[3]["isError"] and "rule 'default-deny'" in r[3]["content"][0]["text"]
    assert r[4]["isError"] and "read_object" in r[4]["content"][0]["text"]  # the server's own error
    assert fixture_run["resource"]["contents"][0]["text"] == "cars from 1974\n"
    assert fixture_run["refused"].code == DOOR_REFUSED and "deny-dotenv" in fixture_run["refused"].message

    lines = validate_lines(fixture_run["log"])
    assert [(o["seq"], o["tool"], o.get("method", "tools/call"), o["object"], o["decision"], o["rule"])
            for o in lines] == [
        (1, "list_folder", "tools/call", "demo", "allow", "allow-demo"),
        (2, "query", "tools/call", "demo/cars.csv", "allow", "allow-demo"),
        (3, "read_object", "tools/call", "reference/.env", "deny", "deny-dotenv"),
        (4, "read_object", "tools/call", "elsewhere/x.txt", "deny", "default-deny"),
        (5, "read_object", "tools/call", "demo/missing.csv", "allow", "allow-demo"),
        (6, "resources/read", "resources/read", "data://demo/notes.txt", "allow", "allow-demo"),
        (7, "resources/read", "resources/read", "data://reference/.env", "deny", "deny-dotenv"),
    ]
    assert all(o["session"] == "sess-1" and o["agent"] == "analyst" and o["server"] == "door-fixture"
               for o in lines)
    assert [o["meta"] for o in lines[:5]] == [{"claudecode/toolUseId": f"toolu_{i}"} for i in range(5)]
    assert lines[1]["arguments"] == {"column": "mpg", "path": "demo/cars.csv"}  # canonical: sorted keys
    assert (lines[0]["rows"], lines[0]["bytes"]) == (2, len("cars.csv\nnotes.txt\n"))
    assert lines[1]["rows"] == 3
    assert (lines[5]["rows"], lines[5]["bytes"]) == (1, len("cars from 1974\n"))
    assert lines[4]["error"].startswith("tool error:") and lines[0]["error"] is None
    assert all(o["rows"] is None and o["bytes"] is None for o in lines if o["decision"] == "deny")
    for o in lines:
        assert o["ts"] <= o["ts_end"] and o["duration_ms"] >= 0

    loaded = load_door(fixture_run["log_root"])
    assert loaded.quarantine.empty and len(loaded.frame) == 7
    assert list(loaded.frame["meta_call_id"][:5]) == [f"toolu_{i}" for i in range(5)]


def test_full_responses_go_to_the_evidence_store_only(fixture_run):
    lines = validate_lines(fixture_run["log"])
    store = EvidenceStore(fixture_run["evidence"])
    allowed = [o for o in lines if o["decision"] == "allow"]
    assert all(o["response_digest"] for o in allowed) and not any("response_digest" in o for o in lines
                                                                  if o["decision"] == "deny")
    for o, res in zip(allowed[:2], fixture_run["results"][:2]):
        kept = orjson.loads(store.get(o["response_digest"]))
        assert _dump(types.CallToolResult.model_validate(kept)) == res
        assert measure("tools/call", kept) == (o["rows"], o["bytes"])
    kept = orjson.loads(store.get(lines[5]["response_digest"]))
    assert _dump(types.ReadResourceResult.model_validate(kept)) == fixture_run["resource"]
    text = fixture_run["log"].read_text()
    # (the data's own words: "1974" alone also turns up among a timestamp's microseconds)
    assert "mazda" not in text and "cars from" not in text and "API_KEY" not in text
    assert store.digests() == sorted({o["response_digest"] for o in allowed})


def test_a_capsule_of_the_run_is_served_from_evidence_only(fixture_run, tmp_path):
    inc = fixture_run["base"] / "incident"
    (inc / "transcripts").mkdir(exist_ok=True)
    (inc / "transcripts" / "none.jsonl").write_text("")
    (inc / "incident.yaml").write_text(yaml.safe_dump({"title": "fixture", "transcripts": ["transcripts/*.jsonl"],
                                                      "door": ["door/"]}))
    build_capsule(inc, fixture_run["evidence"], tmp_path / "capsule",
                  capture=Capture(principal="analyst", scopes=["read"], policy_version="v1"))
    cmd = [sys.executable, "-m", "replaybook.door", "serve-capsule", str(tmp_path / "capsule"),
           "--log-root", str(tmp_path / "replay"), "--agent", "analyst", "--session", "r1"]

    async def agent(s):
        tools = [t.name for t in (await s.list_tools()).tools]
        out = [await s.call_tool(n, a) for n, a in CALLS]
        res = await s.read_resource("data://demo/notes.txt")
        try:
            await s.read_resource("data://reference/.env")
        except MCPError as exc:
            refused = exc
        try:
            await s.read_resource("data://demo/cars.csv")  # never captured
        except MCPError as exc:
            missing = exc
        return tools, out, res, refused, missing

    tools, out, res, refused, missing = run_session(cmd, agent)
    assert tools == ["list_folder", "query", "read_object"]
    assert [_dump(r) for r in out] == fixture_run["results"]
    assert _dump(res) == fixture_run["resource"]
    assert (refused.code, refused.message) == (fixture_run["refused"].code, fixture_run["refused"].message)
    assert missing.message.startswith("replay_incomplete:")
    rec = load_run(tmp_path / "replay" / "analyst" / "r1.run.json")
    assert rec.status == "replay_incomplete" and rec.network_attempts == []
    lines = validate_lines(tmp_path / "replay" / "analyst" / "r1.jsonl")
    orig = validate_lines(fixture_run["log"])
    keys = ("tool", "arguments", "decision", "rule", "rows", "bytes", "response_digest")
    assert [[o.get(k) for k in keys] for o in lines[:7]] == [[o.get(k) for k in keys] for o in orig]
    assert (lines[7]["decision"], lines[7]["rule"]) == ("deny", "replay:incomplete")


def test_a_bad_rules_file_is_refused_before_anything_starts(tmp_path, data_root):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - id: x\n    decision: maybe\n")
    import subprocess

    r = subprocess.run(door_cmd(bad, tmp_path / "logs", fixture_server_cmd(data_root)), capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and "rules/0/decision" in r.stderr
    assert not (tmp_path / "logs").exists()


def test_the_2026_per_request_protocol_passes_through_too(tmp_path, data_root, rules_file):
    """The SDK's high-level Client negotiates 2026-07-28 (server/discover, per-request _meta)."""
    import os

    import anyio
    from mcp import Client, StdioServerParameters

    cmd = door_cmd(rules_file, tmp_path / "logs", fixture_server_cmd(data_root), session="modern")

    async def go():
        params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
        async with Client(params) as c:
            return (c.session.protocol_version, await c.call_tool("list_folder", {"path": "demo"}),
                    await c.call_tool("read_object", {"path": "reference/.env"}))

    version, listing, refused = anyio.run(go)
    assert version == "2026-07-28"
    assert listing.content[0].text == "cars.csv\nnotes.txt\n"
    assert refused.is_error and "deny-dotenv" in refused.content[0].text
    lines = validate_lines(tmp_path / "logs" / "analyst" / "modern.jsonl")
    assert [(o["decision"], o["rule"], o["server"]) for o in lines] == [("allow", "allow-demo", "door-fixture"),
                                                                       ("deny", "deny-dotenv", "door-fixture")]
    assert lines[0]["meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"


@pytest.mark.parametrize("stdin_kind", ["pipe", "file"])
def test_replies_go_to_stdout_when_stdout_is_a_regular_file(tmp_path, data_root, rules_file, stdin_kind):
    # someone trying the door by hand redirects its output to a file: the replies (with the data)
    # must land there, and the call log must hold call lines only — never the data
    import json
    import subprocess
    import time

    msgs = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "read_object", "arguments": {"path": "demo/cars.csv"}}},
    ]
    text = "".join(json.dumps(m) + "\n" for m in msgs)
    log_root, out = tmp_path / "door", tmp_path / "out.jsonl"
    cmd = door_cmd(rules_file, log_root, fixture_server_cmd(data_root), session="s-file")
    with open(out, "wb") as fh:
        if stdin_kind == "file":
            (tmp_path / "in.jsonl").write_text(text)
            with open(tmp_path / "in.jsonl", "rb") as fin:
                subprocess.run(cmd, stdin=fin, stdout=fh, timeout=60, check=True)
        else:
            p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=fh)
            p.stdin.write(text.encode())
            p.stdin.flush()
            deadline = time.time() + 30
            while time.time() < deadline and b'"id":2' not in out.read_bytes().replace(b" ", b""):
                time.sleep(0.1)
            p.stdin.close()
            assert p.wait(timeout=30) == 0
    replies = [json.loads(x) for x in out.read_bytes().splitlines()]
    assert [r.get("id") for r in replies] == [1, 2]
    assert "mazda" in json.dumps(replies[1])
    (log,) = log_files(log_root)
    lines = validate_lines(log)
    assert [(o["tool"], o["decision"]) for o in lines] == [("read_object", "allow")]
    assert b"mazda" not in log.read_bytes()


def test_a_call_sent_before_the_initialize_answer_names_the_server(tmp_path, data_root, rules_file):
    # a client that does not wait for the initialize answer (MCP says it should): the door's own
    # line for a refusal named the command ("python3") as server, the lines after it the server
    import json
    import subprocess

    msgs = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "read_object", "arguments": {"path": "reference/.env"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "read_object", "arguments": {"path": "demo/cars.csv"}}},
    ]
    log_root = tmp_path / "door"
    cmd = door_cmd(rules_file, log_root, fixture_server_cmd(data_root), session="eager")
    p = subprocess.run(cmd, input="".join(json.dumps(m) + "\n" for m in msgs).encode(), capture_output=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    replies = {r.get("id"): r for r in map(json.loads, p.stdout.splitlines())}
    assert replies[2]["result"]["isError"] is True
    (log,) = log_files(log_root)
    lines = validate_lines(log)
    assert [(o["tool"], o["decision"], o["server"]) for o in lines] == [
        ("read_object", "deny", "door-fixture"), ("read_object", "allow", "door-fixture")]


@pytest.mark.parametrize("evidence, problem", [
    (b'{"a": NaN}', "is not JSON an MCP client can read"),
    # JSON, but no answer a client takes: it had been logged allowed while the client got a
    # protocol error
    (b"[1, 2]", "is not an MCP CallToolResult"),
    (b'{"content": "text"}', "is not an MCP CallToolResult"),
    (b'{"error": {"code": "abc", "message": "x"}}', "is an error without an integer code and a message text"),
])
def test_a_captured_response_that_is_not_json_stops_the_replay_and_is_logged(tmp_path, evidence, problem):
    """serve-capsule on a capsule whose evidence object is not an answer an MCP client can read
    (hand-made, or written by another tool): the call is answered replay_incomplete and logged,
    never dropped from the log, and the replay stops there."""
    import shutil
    from pathlib import Path

    from replaybook.capsule import load_capsule
    from replaybook.capsule.digest import request_digest
    from replaybook.door.calllog import CallLog
    from replaybook.door.replay import CapsuleServer

    demo = Path(__file__).resolve().parents[2] / "data" / "capsule-demo" / "capsule"
    cap_dir = tmp_path / "capsule"
    shutil.copytree(demo, cap_dir)
    for p in cap_dir.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    d = yaml.safe_load((cap_dir / "capsule.yaml").read_text())
    ev = d["tool_evidence"][0]
    ev.update(server="srv", method="get_x", request_digest=request_digest("srv", "get_x", {"a": 1}),
              response_digest=EvidenceStore(cap_dir / "evidence").put(evidence))
    d["tool_evidence"] = [ev, {**ev, "call_id": "second"}]
    (cap_dir / "capsule.yaml").write_text(yaml.safe_dump(d))
    server = CapsuleServer(load_capsule(cap_dir), CallLog(tmp_path / "logs", "analyst", "r1"))
    with server.harness.guard():
        server.begin()
        kind, text = server.call("tools/call", "get_x", {"a": 1}, None)
        assert kind == "incomplete" and text.startswith("replay_incomplete: captured response sha256:")
        assert problem in text
        assert server.call("tools/call", "get_x", {"a": 1}, None)[0] == "incomplete"  # stopped
    server.end()
    server.log.close()
    lines = validate_lines(tmp_path / "logs" / "analyst" / "r1.jsonl")
    assert [(o["decision"], o["rule"]) for o in lines] == [("deny", "replay:incomplete")] * 2
    assert load_run(tmp_path / "logs" / "analyst" / "r1.run.json").status == "replay_incomplete"


def test_a_door_whose_stdin_is_dev_null_ends_at_once(tmp_path, data_root, rules_file):
    """Started by cron or a harness with stdin=DEVNULL, the door waited for input forever: the
    event loop cannot wait on /dev/null, and asyncio said so only in a logged callback."""
    import subprocess

    r = subprocess.run(door_cmd(rules_file, tmp_path / "logs", fixture_server_cmd(data_root)), capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "Exception in callback" not in r.stderr
    assert r.stdout == ""
