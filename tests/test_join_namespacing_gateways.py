"""A client behind a gateway that namespaces its upstream servers' tools joins that gateway's session.

Gatekit and MCPJungle show their clients the tools of every upstream server as ``<server>__<tool>``
under the one MCP server the client configured for the gateway (here ``gatekit``): Claude Code and
Codex write ``mcp__gatekit__files__list_folder``, legacy Codex ``gatekit__files__list_folder``.  The
gateway logs the upstream server apart (``server_name: files``) and the tool namespaced
(``files__list_folder``, older Gatekit) or clean (``list_folder``, the routed request; MCPJungle).
Every pairing must agree on the tool the join compares.  Files are written here, modelled on the
shapes in ``replaybook.sources.gateways`` and ``tests/fixtures``.
"""

from __future__ import annotations

import json

import pytest

from replaybook.join import join_sessions
from replaybook.sources import gateways as gw
from replaybook.sources.claude_code import load_claude_code
from replaybook.sources.codex import load_codex

CALLS = [("09:58:05.000", "list_folder", {"path": "data/"}),
         ("09:58:10.000", "describe", {"path": "data/sales.parquet"}),
         ("09:58:13.000", "describe", {"path": "secrets/warehouse.env"})]


def _ts(hms: str) -> str:
    return f"2026-11-20T{hms}Z"


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _codex(tmp_path, name_of):
    rows = [{"timestamp": _ts("09:58:00.000"), "type": "session_meta",
             "payload": {"id": "0199a3f2-7c1e-7d40-9a55-2b6f1c0de001", "timestamp": _ts("09:58:00.000"),
                         "cwd": "/home/prep", "originator": "codex_cli_rs", "cli_version": "0.63.0"}}]
    for i, (t, tool, args) in enumerate(CALLS, 1):
        rows.append({"timestamp": _ts(t), "type": "response_item",
                     "payload": {"type": "function_call", "name": name_of(tool), "arguments": json.dumps(args),
                                 "call_id": f"call_{i}"}})
        rows.append({"timestamp": _ts(t[:-3] + "500"), "type": "response_item",
                     "payload": {"type": "function_call_output", "call_id": f"call_{i}", "output": "ok"}})
    return load_codex(_jsonl(tmp_path / "rollout.jsonl", rows)).frame


def _claude(tmp_path):
    sid = "5c1f0e2a-8b7d-4c3e-9f10-aa0000000009"
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/prep", "sessionId": sid,
            "version": "2.0.55"}
    rows, parent = [], None
    for i, (t, tool, args) in enumerate(CALLS, 1):
        a = dict(base, parentUuid=parent, type="assistant", uuid=f"a{i}", timestamp=_ts(t),
                 message={"model": "claude-sonnet-4-5", "id": f"msg_{i}", "type": "message", "role": "assistant",
                          "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": f"mcp__gatekit__files__{tool}",
                                       "input": args}]})
        r = dict(base, parentUuid=f"a{i}", type="user", uuid=f"u{i}", timestamp=_ts(t[:-3] + "500"),
                 message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}",
                                                       "content": "ok"}]})
        rows += [a, r]
        parent = f"u{i}"
    return load_claude_code(_jsonl(tmp_path / f"{sid}.jsonl", rows)).frame


def _gatekit(tmp_path, namespaced: bool):
    rows = []
    for i, (t, tool, args) in enumerate(CALLS, 1):
        name = f"files__{tool}" if namespaced else tool
        rows.append({"timestamp": _ts(t[:-3] + "101"), "event_type": "REQUEST", "request_id": i,
                     "server_name": "files", "method": "tools/call", "pipeline_outcome": "allowed",
                     "security_evaluated": True, "pipeline": {"pipeline_outcome": "allowed"}, "reason": "",
                     "tool": name, "request_body": {"name": name, "arguments": args}})
        rows.append({"timestamp": _ts(t[:-3] + "400"), "event_type": "RESPONSE", "request_id": i,
                     "server_name": "files", "method": "tools/call", "pipeline_outcome": "allowed",
                     "security_evaluated": True, "pipeline": {"pipeline_outcome": "allowed"}, "reason": "",
                     "response_status": "success", "tool": name, "duration_ms": 299})
    return gw.load_gatekit(_jsonl(tmp_path / "gatekit_audit.jsonl", rows)).frame


def _mcpjungle(tmp_path):
    rows = []
    for i, (t, tool, _args) in enumerate(CALLS, 1):
        for et, ms in (("mcp_tool_call_start", "101"), ("mcp_tool_call", "400")):
            rows.append({"level": "info", "timestamp": _ts(t[:-3] + ms), "caller": "mcp/proxy.go:210",
                         "msg": "MCP tool call", "service": "mcpjungle", "component": "audit", "event_type": et,
                         "request_id": f"r-{i}", "client_name": "codex", "server_name": "files", "tool_name": tool,
                         **({"success": True, "duration_ms": 299} if et == "mcp_tool_call" else {})})
    return gw.load_mcpjungle(_jsonl(tmp_path / "audit.log", rows)).frame


CLIENTS = {
    "codex": lambda tmp: _codex(tmp, lambda t: f"mcp__gatekit__files__{t}"),
    "legacy codex": lambda tmp: _codex(tmp, lambda t: f"gatekit__files__{t}"),
    "claude code": _claude,
}


@pytest.mark.parametrize("client", sorted(CLIENTS))
@pytest.mark.parametrize("namespaced", [True, False], ids=["tool logged namespaced", "tool logged clean"])
def test_a_client_of_gatekit_joins_its_gatekit_session(tmp_path, client, namespaced):
    steps = CLIENTS[client](tmp_path)
    calls = _gatekit(tmp_path, namespaced)
    assert steps[steps["kind"] == "tool_call"]["tool"].tolist() == [
        "files__list_folder", "files__describe", "files__describe"]
    assert calls["tool"].tolist() == ["files__list_folder", "files__describe", "files__describe"]
    assert calls["server"].eq("files").all()
    s = join_sessions(steps, calls).sessions.iloc[0]
    assert (s["status"], s["agreed"], s["unclaimed_calls"], s["unmatched_steps"]) == ("matched", 3, 0, 0)
    assert s["transcript_id"] == steps["transcript_id"].iloc[0]


def test_a_client_of_mcpjungle_joins_its_calls_by_tool_and_time(tmp_path):
    steps = CLIENTS["codex"](tmp_path)
    calls = _mcpjungle(tmp_path)
    assert calls["tool"].tolist() == ["files__list_folder", "files__describe", "files__describe"]
    s = join_sessions(steps, calls).sessions.iloc[0]
    assert (s["door_session"], s["status"], s["agreed"]) == ("mcpjungle:codex:2026-11-20", "matched", 3)


# -- a gateway that logs the routed tool but shows its clients ``<server><sep><tool>`` -----------
# agentgateway multiplexing targets shows ``files_list_folder`` (crates/agentgateway/src/mcp/
# routing.rs: ``{target}_{name}``); a door behind it, or the gateway's own log, holds server
# ``files`` and tool ``list_folder``.

def _claude_named(tmp_path, name_of):
    sid = "5c1f0e2a-8b7d-4c3e-9f10-aa00000000a1"
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/prep", "sessionId": sid, "version": "2.0.55"}
    rows, parent = [], None
    for i, (t, tool, args) in enumerate(CALLS, 1):
        rows.append(dict(base, parentUuid=parent, type="assistant", uuid=f"a{i}", timestamp=_ts(t),
                         message={"model": "claude-sonnet-4-5", "id": f"msg_{i}", "type": "message",
                                  "role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{i}",
                                                                    "name": name_of(tool), "input": args}]}))
        rows.append(dict(base, parentUuid=f"a{i}", type="user", uuid=f"u{i}", timestamp=_ts(t[:-3] + "500"),
                         message={"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}",
                                                               "content": "ok"}]}))
        parent = f"u{i}"
    return load_claude_code(_jsonl(tmp_path / f"{sid}.jsonl", rows)).frame


def _door(tmp_path, server="files"):
    from replaybook.sources.door import load_door

    rows = [{"session": "door-7", "agent": "prep", "seq": i, "ts": _ts(t[:-3] + "200"), "server": server,
             "tool": tool, "arguments": args, "decision": "allow"} for i, (t, tool, args) in enumerate(CALLS, 1)]
    return load_door(_jsonl(tmp_path / "door.jsonl", rows)).frame


@pytest.mark.parametrize("sep", ["_", "__", "-", "."])
def test_calls_logged_unprefixed_join_steps_that_called_the_prefixed_name(tmp_path, sep):
    steps = _claude_named(tmp_path, lambda tool: f"mcp__agw__files{sep}{tool}")
    res = join_sessions(steps, _door(tmp_path))
    row = res.sessions.set_index("door_session").loc["door-7"]
    assert row["status"] == "matched" and int(row["agreed"]) == 3
    assert res.n_unclaimed_calls == 0 and res.n_unmatched_steps == 0
    assert sorted(res.pairs["tool"]) == sorted(f"files{sep}{t}" for _, t, _ in CALLS)
    assert res.notes == [f"door calls of server 'files' logged as tool {t!r} were compared as 'files{sep}{t}', "
                         "the name the transcripts call it by (a gateway that shows each server's tools prefixed "
                         "with the server's name)" for t in ("describe", "list_folder")]
    assert res.to_dict()["notes"] == res.notes


def test_a_tool_some_step_calls_bare_or_two_prefixed_spellings_are_compared_as_logged(tmp_path):
    door = _door(tmp_path)
    bare = _claude_named(tmp_path, lambda tool: f"mcp__files__{tool}")  # no gateway: names as logged
    res = join_sessions(bare, door)
    assert res.notes == [] and int(res.sessions.set_index("door_session").loc["door-7", "agreed"]) == 3
    # steps calling files_describe and files-describe: which one the door's describe was cannot be told
    both = _claude_named(tmp_path, lambda tool: f"mcp__agw__files{'_' if tool != 'list_folder' else '-'}{tool}")
    both2 = both.copy()
    both2["tool"] = both2["tool"].str.replace("files_", "files-", regex=False)
    both2["transcript_id"] = both2["transcript_id"] + "-b"
    import pandas as pd

    res = join_sessions(pd.concat([both, both2], ignore_index=True), door)
    assert not any("'describe'" in n for n in res.notes)
    assert any("'list_folder' were compared as 'files-list_folder'" in n for n in res.notes)
    # a call of another server is not renamed by a step of this one
    res = join_sessions(_claude_named(tmp_path, lambda tool: f"mcp__agw__files_{tool}"), _door(tmp_path, "tickets"))
    assert res.notes == [] and res.n_unclaimed_calls == 3


def test_join_and_report_say_which_tools_were_read_under_the_prefixed_name(tmp_path, capsys):
    import html as html_lib
    import re

    from replaybook.cli import main

    inc = tmp_path / "inc"
    (inc / "transcripts").mkdir(parents=True)
    (inc / "door").mkdir()
    _claude_named(inc / "transcripts", lambda tool: f"mcp__agw__files_{tool}")
    _door(inc / "door")
    (inc / "incident.yaml").write_text("title: prefixed gateway\ntranscripts: [transcripts/]\ndoor: [door/]\n")
    said = ("door calls of server 'files' logged as tool 'list_folder' were compared as 'files_list_folder', "
            "the name the transcripts call it by (a gateway that shows each server's tools prefixed with the "
            "server's name)")
    assert main(["join", "--transcripts", str(inc / "transcripts"), "--calls", str(inc / "door"),
                 "--format", "json"]) == 0
    out = capsys.readouterr()
    assert f"replaybook: note: {said}\n" in out.err
    assert said in json.loads(out.out)["notes"]
    assert main(["report", str(inc / "incident.yaml"), "--out", str(tmp_path / "out")]) == 0
    assert f"replaybook: note: {said}\n" in capsys.readouterr().err
    page = next((tmp_path / "out").glob("*.html")).read_text(encoding="utf-8")
    text = html_lib.unescape(re.sub("<[^>]+>", "", page.replace("<wbr/>", "").replace("<wbr>", "")))
    assert f"Read as: {said}." in text


def test_prefixed_alike_is_the_joins_separator_rule():
    from replaybook.join import prefixed_alike

    assert all(prefixed_alike(f"files{sep}read_file", "read_file") for sep in ("_", "__", "-", "."))
    assert prefixed_alike("read_file", "files__read_file") and prefixed_alike("read_file", "read_file")
    assert not prefixed_alike("unread_file", "read_file")  # (part of a name is no prefix)
    assert not prefixed_alike("_read_file", "read_file") and not prefixed_alike("read", "read_file")
