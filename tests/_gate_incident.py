"""An incident whose sub-agent calls a second door-fronted server, through a door on another clock.

A deployer's Claude Code session (2.1.x layout) calls the deploy door's ``read_config`` and
``list_rules`` (door session ``door-d1``, which logs the client's tool-use ids), then starts a reviewer sub-agent that
calls the ``gate`` MCP server: ``get_change`` fails before gate's door sees it (``MCP error
-32000: Connection closed``), its retry and ``approve_change`` reach it.  Gate's door (session
``gate-g1``) runs 40.2 s ahead of the transcripts' clock and logs no tool-use ids, so at
``max_offset_s: 0`` its session is unmatched: ``replaybook join`` names the sub-agent's
transcript and the ``clock_offsets`` entry that joins it.

Counts: at max_offset_s 0, 3 door-bound tool calls with no door call (the sub-agent's three);
with the sub-agent's clock given, 1 (the attempt that failed).
"""

from __future__ import annotations

import json
from pathlib import Path

from _continued_incident import AGENT, SID, _ts, _Writer  # (_Writer writes that session and agent id)

SUB_TRANSCRIPT = f"agent-{AGENT}"
AHEAD_S = 40.2


def _call(w: _Writer, sec: float, tid: str, server: str, tool: str, args: dict, result: str,
          error: bool = False) -> None:
    w.add("assistant", sec, {"model": "claude-opus-4-5", "id": f"msg_{tid}", "type": "message", "role": "assistant",
                             "stop_reason": "tool_use",
                             "content": [{"type": "tool_use", "id": tid, "name": f"mcp__{server}__{tool}",
                                          "input": args}],
                             "usage": {"input_tokens": 5, "output_tokens": 9}})
    w.add("user", sec + 0.5, {"role": "user", "content": [{"tool_use_id": tid, "type": "tool_result",
                                                           "content": result, "is_error": error}]})


def _door(session: str, agent: str, server: str, seq: int, sec: float, tool: str, args: dict,
          tid: str | None) -> str:
    d = {"ts": _ts(sec), "ts_end": _ts(sec + 0.1), "seq": seq, "session": session, "agent": agent, "server": server,
         "tool": tool, "arguments": args, "object": f"changes/{args.get('id', 'x')}.json", "decision": "allow",
         "rule": "allow", "bytes": 40}
    if tid:
        d["meta"] = {"claudecode/toolUseId": tid}
    return json.dumps(d)


def write_gate_incident(root: Path, manifest_extra: str = "") -> Path:
    """Write the incident under ``root`` (created) and return its ``incident.yaml`` (window_s 10,
    max_offset_s 0, then ``manifest_extra``)."""
    main, sub = _Writer(False), _Writer(True)
    main.add("user", 0, {"role": "user", "content": "Move payments to fast-track and have it reviewed."})
    _call(main, 5, "toolu_01Read00000000000000001", "deploy", "read_config", {"path": "rules/payments.yaml"},
          "rule: standard")
    _call(main, 10, "toolu_01List00000000000000001", "deploy", "list_rules", {"path": "rules/"}, "payments.yaml")
    main.add("assistant", 20, {"model": "claude-opus-4-5", "id": "msg_task", "type": "message", "role": "assistant",
                               "stop_reason": "tool_use",
                               "content": [{"type": "tool_use", "id": "toolu_01Task00000000000000001", "name": "Task",
                                            "input": {"description": "Review", "prompt": "Review CHG-1"}}],
                               "usage": {"input_tokens": 5, "output_tokens": 9}})
    sub.add("user", 21, {"role": "user", "content": "Review CHG-1"})
    _call(sub, 30, "toolu_01Get000000000000000001", "gate", "get_change", {"id": "CHG-1"},
          "MCP error -32000: Connection closed", error=True)
    _call(sub, 35, "toolu_01Get000000000000000002", "gate", "get_change", {"id": "CHG-1"}, "{\"to\": \"fast-track\"}")
    _call(sub, 50, "toolu_01Appr00000000000000001", "gate", "approve_change", {"id": "CHG-1", "verdict": "approve"},
          "approved")
    main.add("user", 56, {"role": "user", "content": [{"tool_use_id": "toolu_01Task00000000000000001",
                                                       "type": "tool_result", "content": "Approved."}]})
    inc = Path(root)
    sub_dir = inc / "transcripts" / SID / "subagents"
    sub_dir.mkdir(parents=True)
    (inc / "transcripts" / f"{SID}.jsonl").write_text("\n".join(main.lines) + "\n")
    (sub_dir / f"{SUB_TRANSCRIPT}.jsonl").write_text("\n".join(sub.lines) + "\n")
    (inc / "door" / "deployer").mkdir(parents=True)
    (inc / "door" / "deployer" / "door-d1.jsonl").write_text(
        _door("door-d1", "deployer", "deploy", 1, 5.15, "read_config", {"path": "rules/payments.yaml"},
              "toolu_01Read00000000000000001") + "\n"
        + _door("door-d1", "deployer", "deploy", 2, 10.15, "list_rules", {"path": "rules/"},
                "toolu_01List00000000000000001") + "\n")
    (inc / "door" / "reviewer").mkdir(parents=True)
    (inc / "door" / "reviewer" / "gate-g1.jsonl").write_text(
        _door("gate-g1", "reviewer", "gate", 1, 35 + AHEAD_S, "get_change", {"id": "CHG-1"}, None) + "\n"
        + _door("gate-g1", "reviewer", "gate", 2, 50 + AHEAD_S, "approve_change",
                {"id": "CHG-1", "verdict": "approve"}, None) + "\n")
    (inc / "incident.yaml").write_text("title: A reviewer sub-agent behind a second door\n"
                                       "transcripts: [transcripts/]\ndoor: [door/]\nwindow_s: 10\nmax_offset_s: 0\n"
                                       + manifest_extra)
    return inc / "incident.yaml"

