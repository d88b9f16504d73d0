"""End to end with a server nobody here wrote: the npm reference filesystem MCP server.

The SDK client lists a folder, reads a file and is refused a ``.env`` through ``replaybook door``;
the door log plus a Claude Code transcript of those calls is loaded, joined and rendered as the
review report.  Then a capsule is built from that run and served with ``serve-capsule``: the same
calls get identical answers, a call with new arguments gets ``replay_incomplete``, and the
replay's own door log is an incident that diffs against the original.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import mcp_types as types
import orjson
import pytest
import yaml

from replaybook.capsule import Capture, EvidenceStore, build_capsule, diff_runs, incident_run, load_run
from replaybook.incident import Incident
from replaybook.sources.door import load_door

from .conftest import door_cmd, run_session, validate_lines

TOOL_USE = ("toolu_01door0001", "toolu_01door0002", "toolu_01door0003")


def _calls(data: Path) -> list[tuple[str, dict]]:
    return [("list_directory", {"path": str(data / "demo")}),
            ("read_text_file", {"path": str(data / "demo" / "cars.csv")}),
            ("read_text_file", {"path": str(data / "reference" / ".env")})]


def _dump(result) -> dict:
    return result.model_dump(by_alias=True, exclude_none=True, mode="json")


def _iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _transcript(path: Path, calls: list[tuple[str, dict]], lines: list[dict], results: list[dict]) -> None:
    """A Claude Code JSONL transcript of the calls (tool names ``mcp__door__<tool>``)."""
    sid = "9d1f0e2a-1111-4aaa-8aaa-000000000001"
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/analyst/project", "sessionId": sid,
            "version": "2.0.55", "gitBranch": "main"}
    first = datetime.fromisoformat(lines[0]["ts"].replace("Z", "+00:00"))
    out, parent, n = [], None, 0

    def add(kind: str, ts: datetime, message: dict, **extra) -> None:
        nonlocal parent, n
        n += 1
        uid = f"00000000-0000-4000-8000-{n:012d}"
        out.append({"parentUuid": parent, **base, "type": kind, "uuid": uid, "timestamp": _iso(ts),
                    "message": message, **extra})
        parent = uid

    add("user", first - timedelta(seconds=2), {"role": "user", "content": "What is in demo/, and what is the key?"})
    for i, ((tool, args), line, res) in enumerate(zip(calls, lines, results)):
        ts = datetime.fromisoformat(line["ts"].replace("Z", "+00:00"))
        te = datetime.fromisoformat(line["ts_end"].replace("Z", "+00:00"))
        add("assistant", ts - timedelta(milliseconds=150),
            {"model": "claude-sonnet-4-5", "id": f"msg_{i:017d}", "type": "message", "role": "assistant",
             "content": [{"type": "tool_use", "id": TOOL_USE[i], "name": f"mcp__door__{tool}", "input": args}],
             "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": 12}}, requestId=f"req_{i:017d}")
        add("user", te + timedelta(milliseconds=80),
            {"role": "user", "content": [{"tool_use_id": TOOL_USE[i], "type": "tool_result",
                                          "content": res["content"][0]["text"], "is_error": res["isError"]}]})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in out))


@pytest.fixture(scope="module")
def npm_run(npm_fs_server, tmp_path_factory):
    """One door session in front of the npm filesystem server, as an incident folder."""
    base = tmp_path_factory.mktemp("npm-e2e")
    data = (base / "data").resolve()
    (data / "demo").mkdir(parents=True)
    (data / "reference").mkdir()
    (data / "demo" / "cars.csv").write_text("name,mpg,cyl\nmazda,21,6\ndatsun,22.8,4\n")
    (data / "demo" / "notes.txt").write_text("1974\n")
    (data / "reference" / ".env").write_text("API_KEY=do-not-read\n")
    rules = base / "rules.yaml"
    rules.write_text(yaml.safe_dump({"version": 1, "roots": [str(data)], "rules": [
        {"id": "deny-dotenv", "decision": "deny", "paths": ["**/.env", "**/.env.*"]},
        {"id": "allow-demo", "decision": "allow",
         "tools": ["list_directory", "read_text_file", "read_file", "get_file_info"], "paths": ["demo", "demo/**"]},
    ]}))
    inc = base / "incident"
    log_root, evidence = inc / "door", base / "door-evidence"
    calls = _calls(data)

    async def agent(s):
        tools = {t.name for t in (await s.list_tools()).tools}
        out = [await s.call_tool(name, args, meta={"claudecode/toolUseId": TOOL_USE[i]})
               for i, (name, args) in enumerate(calls)]
        return tools, out

    cmd = door_cmd(rules, log_root, ["node", str(npm_fs_server), str(data)], evidence=evidence,
                   agent="analyst", session="door-npm-1")
    tools, results = run_session(cmd, agent)
    results = [_dump(r) for r in results]
    lines = validate_lines(log_root / "analyst" / "door-npm-1.jsonl")
    _transcript(inc / "transcripts" / "9d1f0e2a-1111-4aaa-8aaa-000000000001.jsonl", calls, lines, results)
    (inc / "incident.yaml").write_text(yaml.safe_dump({
        "title": "door in front of the npm filesystem server", "transcripts": ["transcripts/*.jsonl"],
        "door": ["door/"], "data_root": str(data), "window_s": 60}))
    return {"base": base, "data": data, "rules": rules, "incident": inc, "log_root": log_root,
            "evidence": evidence, "calls": calls, "tools": tools, "results": results, "lines": lines}


def test_door_logs_allows_and_refuses_in_front_of_the_npm_server(npm_run):
    assert {"list_directory", "read_text_file"} <= npm_run["tools"]  # tools/list passed through untouched
    listing, cars, env = npm_run["results"]
    assert not listing["isError"] and "[FILE] cars.csv" in listing["content"][0]["text"]
    assert cars["content"][0]["text"].startswith("name,mpg,cyl")
    assert env["isError"] and "deny-dotenv" in env["content"][0]["text"] and "API_KEY" not in str(env)

    lines = npm_run["lines"]
    assert [(o["seq"], o["tool"], o["object"], o["decision"], o["rule"]) for o in lines] == [
        (1, "list_directory", "demo", "allow", "allow-demo"),
        (2, "read_text_file", "demo/cars.csv", "allow", "allow-demo"),
        (3, "read_text_file", "reference/.env", "deny", "deny-dotenv")]
    assert all(o["server"] == "secure-filesystem-server" and o["agent"] == "analyst" for o in lines)
    assert [o["meta"]["claudecode/toolUseId"] for o in lines] == list(TOOL_USE)
    assert lines[1]["bytes"] == len("name,mpg,cyl\nmazda,21,6\ndatsun,22.8,4\n") and lines[1]["rows"] == 3
    # the data itself never reaches the log; the evidence store has it, by digest
    raw = (npm_run["log_root"] / "analyst" / "door-npm-1.jsonl").read_text()
    assert "mazda" not in raw and "API_KEY" not in raw
    store = EvidenceStore(npm_run["evidence"])
    for o, res in zip(lines[:2], npm_run["results"][:2]):
        kept = types.CallToolResult.model_validate(orjson.loads(store.get(o["response_digest"])))
        assert _dump(kept) == res
    assert "response_digest" not in lines[2]

    loaded = load_door(npm_run["log_root"])
    assert loaded.quarantine.empty and len(loaded.frame) == 3
    assert list(loaded.frame["meta_call_id"]) == list(TOOL_USE)


def test_the_transcript_joins_the_door_session_and_the_report_renders(npm_run, tmp_path):
    inc = Incident.load(npm_run["incident"])
    j = inc.join
    assert j.assignments() == {"door-npm-1": "9d1f0e2a-1111-4aaa-8aaa-000000000001"}
    assert len(j.pairs) == 3 and j.unclaimed_calls.empty

    from replaybook.report.render import render_report

    out = render_report(npm_run["incident"] / "incident.yaml", tmp_path / "report", timeout=120)
    html = out.html.read_text("utf-8")
    assert "door-npm-1" in html and "deny-dotenv" in html


def test_serve_capsule_replays_identically_and_stops_on_new_arguments(npm_run, tmp_path):
    capsule = build_capsule(npm_run["incident"], npm_run["evidence"], tmp_path / "capsule",
                            capture=Capture(principal="analyst", scopes=["fs_read"], policy_version="rules-v1",
                                            repository_commit="7f2c" * 10, repository_dirty_tree=b""))
    assert [e.call_id for e in capsule.tool_evidence] == list(TOOL_USE)
    calls = npm_run["calls"]
    replay_root = tmp_path / "replay"

    def serve(session: str) -> list[str]:
        return [sys.executable, "-m", "replaybook.door", "serve-capsule", str(tmp_path / "capsule"),
                "--log-root", str(replay_root), "--agent", "analyst", "--session", session,
                "--rules", str(npm_run["rules"])]

    async def faithful(s):
        tools = [t.name for t in (await s.list_tools()).tools]
        return tools, [await s.call_tool(n, a, meta={"claudecode/toolUseId": TOOL_USE[i]})
                       for i, (n, a) in enumerate(calls)]

    tools, replayed = run_session(serve("replay-1"), faithful)
    assert tools == ["list_directory", "read_text_file"]
    assert [_dump(r) for r in replayed] == npm_run["results"]  # identical answers, the refusal included

    # the replay's door-format log: same calls, same decisions, same response digests
    orig = load_door(npm_run["log_root"]).frame
    rep = load_door(replay_root / "analyst" / "replay-1.jsonl").frame
    validate_lines(replay_root / "analyst" / "replay-1.jsonl")
    cols = ["tool", "args_key", "object", "decision", "rule", "rows", "bytes", "response_digest", "meta_call_id"]
    assert rep[cols].astype(str).values.tolist() == orig[cols].astype(str).values.tolist()
    rec = load_run(replay_root / "analyst" / "replay-1.run.json")
    assert rec.status == "completed" and rec.captured_responses_used == 2 and rec.external_calls == "blocked"
    # … and it diffs against the original incident: reproduced
    diff = diff_runs(incident_run(capsule, npm_run["incident"]), rec)
    assert diff.verdict == "reproduced", (diff.checkpoint, diff.divergence, diff.notes)

    async def drifting(s):
        same = await s.call_tool(*calls[0])
        new = await s.call_tool("read_text_file", {"path": str(npm_run["data"] / "demo" / "notes.txt")})
        after = await s.call_tool(*calls[1])
        return same, new, after

    same, new, after = run_session(serve("replay-2"), drifting)
    assert _dump(same) == npm_run["results"][0]
    assert new.is_error and new.content[0].text.startswith("replay_incomplete:")
    assert after.is_error and after.content[0].text.startswith("replay_incomplete:")  # the replay stopped
    rec2 = load_run(replay_root / "analyst" / "replay-2.run.json")
    assert rec2.status == "replay_incomplete" and rec2.stop_reason.startswith("missing_evidence")
    lines = validate_lines(replay_root / "analyst" / "replay-2.jsonl")
    assert [(o["decision"], o["rule"]) for o in lines] == [("allow", "allow-demo"), ("deny", "replay:incomplete"),
                                                           ("deny", "replay:incomplete")]
    assert lines[1]["error"].startswith("replay_incomplete:")
