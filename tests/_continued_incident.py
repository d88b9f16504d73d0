"""An incident whose one conversation reaches the door in two sessions, with a sub-agent.

A reviewer's Claude Code session (2.1.x layout) calls the door's ``read_config`` (door session
``door-r1``, call #1), starts a sub-agent whose ``list_history`` call is #2 of the same door
session, calls ``diff_rule`` while the door restarts (no door line: the one transcript tool call
with no door call), and calls ``diff_rule`` and ``read_config`` again after the restart (door
session ``door-r2``, #1 and #2).  The door logs each client's tool-use id (``meta``), so the join links both sessions to the
transcript by id: ``door-r2`` continues ``door-r1``.  The sub-agent's ``agent-<id>.jsonl`` has
its ``agent-<id>.meta.json`` beside it, as Claude Code writes it.

Counts a report of it must give: 2 transcripts (the main one assigned to a door session, the
sub-agent's counted with it), 4 door calls in 2 door sessions, 1 door-bound tool call with no
door call — once, though both sessions carry their transcript's count.
"""

from __future__ import annotations

import json
from pathlib import Path

SID = "5a0c1e2d-3b4f-4a5b-8c6d-7e8f9a0b1c2d"
AGENT = "a1b2c3d4e5f6a7b8c"
SUB_TRANSCRIPT = f"agent-{AGENT}"
S1, S2 = "door-r1", "door-r2"
LOST_CALL = "toolu_01DiffLost00000000000001"
META = {"agentType": "general-purpose", "description": "Check the rule's history"}
CFG = "rules/payments.yaml"


def _ts(sec: float) -> str:
    m, s = divmod(sec, 60)
    return f"2026-11-20T14:{int(m):02d}:{s:06.3f}Z"


class _Writer:
    def __init__(self, side: bool):
        self.side, self.lines, self.parent, self.n = side, [], None, 0

    def add(self, typ: str, sec: float, message: dict, **extra) -> None:
        self.n += 1
        uuid = f"00000000-0000-4000-8000-{(1000 if self.side else 0) + self.n:012d}"
        d = {"parentUuid": self.parent, "isSidechain": self.side}
        if self.side:
            d["agentId"] = AGENT
        d.update(type=typ, message=message, uuid=uuid, timestamp=_ts(sec), userType="external", cwd="/home/r",
                 sessionId=SID, version="2.1.40")
        d.update(extra)
        self.lines.append(json.dumps(d))
        self.parent = uuid

    def call(self, sec: float, tid: str, tool: str, args: dict, result: str, error: bool = False) -> None:
        self.add("assistant", sec, {"model": "claude-opus-4-5", "id": f"msg_{tid}", "type": "message",
                                    "role": "assistant", "stop_reason": "tool_use",
                                    "content": [{"type": "tool_use", "id": tid, "name": f"mcp__door__{tool}",
                                                 "input": args}],
                                    "usage": {"input_tokens": 5, "output_tokens": 9}})
        self.add("user", sec + 0.5, {"role": "user", "content": [{"tool_use_id": tid, "type": "tool_result",
                                                                  "content": result, "is_error": error}]})

    def text(self, sec: float, text: str) -> None:
        self.add("assistant", sec, {"model": "claude-opus-4-5", "id": f"msg_t{sec:g}", "type": "message",
                                    "role": "assistant", "stop_reason": "end_turn",
                                    "content": [{"type": "text", "text": text}],
                                    "usage": {"input_tokens": 5, "output_tokens": 9}})


def _door(session: str, seq: int, sec: float, tool: str, args: dict, tid: str) -> str:
    return json.dumps({"ts": _ts(sec + 0.3).replace("Z", "000Z"), "ts_end": _ts(sec + 0.4).replace("Z", "000Z"),
                       "seq": seq, "session": session, "agent": "reviewer", "server": "rules", "tool": tool,
                       "arguments": args, "object": args.get("path"), "decision": "allow", "rule": "allow-read",
                       "rows": 3, "bytes": 40, "duration_ms": 100.0, "error": None,
                       "meta": {"claudecode/toolUseId": tid}})


def write_continued_incident(root: Path) -> Path:
    """Write the incident under ``root`` (created) and return its ``incident.yaml``."""
    main, sub = _Writer(False), _Writer(True)
    main.add("user", 0, {"role": "user", "content": "Is the payments rule change safe to ship?"})
    main.call(5, "toolu_01Read000000000000000001", "read_config", {"path": CFG}, "max_surge: 1")
    main.add("assistant", 20, {"model": "claude-opus-4-5", "id": "msg_task", "type": "message", "role": "assistant",
                               "stop_reason": "tool_use",
                               "content": [{"type": "tool_use", "id": "toolu_01Task000000000000000001",
                                            "name": "Task", "input": {"description": META["description"],
                                                                      "prompt": "List the rule's history"}}],
                               "usage": {"input_tokens": 5, "output_tokens": 9}})
    sub.add("user", 21, {"role": "user", "content": "List the rule's history"})
    sub.call(30, "toolu_01Hist000000000000000001", "list_history", {"service": "payments"}, "rev 42: max_surge 1")
    sub.text(35, "Revision 42 raised max_surge to 1.")
    main.add("user", 36, {"role": "user", "content": [{"tool_use_id": "toolu_01Task000000000000000001",
                                                       "type": "tool_result", "content": "Revision 42 raised it."}]})
    main.call(60, LOST_CALL, "diff_rule", {"path": CFG, "from": 41, "to": 42}, "MCP error -32000: Connection closed",
              error=True)
    main.call(120, "toolu_01Diff000000000000000002", "diff_rule", {"path": CFG, "from": 41, "to": 42}, "+max_surge: 1")
    main.call(125, "toolu_01Read000000000000000002", "read_config", {"path": CFG}, "max_surge: 1")
    main.text(130, "Safe to ship.")
    inc = Path(root)
    sub_dir = inc / "transcripts" / SID / "subagents"
    sub_dir.mkdir(parents=True)
    (inc / "transcripts" / f"{SID}.jsonl").write_text("\n".join(main.lines) + "\n")
    (sub_dir / f"{SUB_TRANSCRIPT}.jsonl").write_text("\n".join(sub.lines) + "\n")
    (sub_dir / f"{SUB_TRANSCRIPT}.meta.json").write_text(json.dumps(META))
    door = inc / "door" / "reviewer"
    door.mkdir(parents=True)
    (door / f"{S1}.jsonl").write_text(
        _door(S1, 1, 5, "read_config", {"path": CFG}, "toolu_01Read000000000000000001") + "\n"
        + _door(S1, 2, 30, "list_history", {"service": "payments"}, "toolu_01Hist000000000000000001") + "\n")
    (door / f"{S2}.jsonl").write_text(
        _door(S2, 1, 120, "diff_rule", {"path": CFG, "from": 41, "to": 42}, "toolu_01Diff000000000000000002") + "\n"
        + _door(S2, 2, 125, "read_config", {"path": CFG}, "toolu_01Read000000000000000002") + "\n")
    (inc / "incident.yaml").write_text("title: A reviewer's conversation across a door restart\n"
                                       "transcripts: [transcripts/]\ndoor: [door/]\n")
    return inc / "incident.yaml"


def meta_path(manifest: Path) -> str:
    """The sub-agent's ``.meta.json``, relative to the manifest's folder (as Inputs writes it)."""
    return f"transcripts/{SID}/subagents/{SUB_TRANSCRIPT}.meta.json"
