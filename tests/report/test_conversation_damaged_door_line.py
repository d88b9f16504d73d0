"""A door-bound call whose door log line is damaged is not "a call the door never saw".

An SRE's incident: line 2 of the door's log (the agent's allowed read of a deployment rule) was
cut.  The conversation's row for that read said "the door never saw this call" — false: the door
logged it, on a line now damaged.
"""

from __future__ import annotations

import html
import json
import re

from replaybook.join import join_sessions
from replaybook.report import sections as S
from replaybook.sources.door import load_door
from replaybook.sources.otel import load_otel

from conftest import otel_tool_span as _span


def _door_line(seq: int, sec: int, tool: str, path: str, decision: str = "allow") -> str:
    return json.dumps({"ts": f"2026-11-30T14:00:{sec:02d}.050Z", "seq": seq, "session": "d1", "agent": "deployer",
                       "tool": tool, "arguments": {"path": path}, "object": path, "decision": decision,
                       "rule": "r"}) + "\n"


def _conversation(tmp_path, door_lines: list[str]) -> str:
    (tmp_path / "t.json").write_text(json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [
        _span("b000000000000001", 10, "read_file", {"path": "a.yaml"}),
        _span("b000000000000002", 20, "read_file", {"path": "b.yaml"}),
        _span("b000000000000003", 30, "update_rule", {"path": "b.yaml"})]}]}]}))
    (tmp_path / "door").mkdir()
    (tmp_path / "door" / "d1.jsonl").write_text("".join(door_lines))
    door = load_door(tmp_path / "door")
    steps, calls = load_otel(tmp_path / "t.json").frame, door.frame
    res = join_sessions(steps, calls)
    h = S.conversations(steps, calls, res, quarantine=door.quarantine)
    return html.unescape(re.sub(r"\s+", " ", re.sub("<[^>]+>", " ", h)))


def test_a_call_on_a_damaged_door_line_is_said_so(tmp_path):
    cut = _door_line(2, 20, "read_file", "b.yaml")
    text = _conversation(tmp_path, [_door_line(1, 10, "read_file", "a.yaml"), cut[: len(cut) // 2] + "\n",
                                    _door_line(3, 30, "update_rule", "b.yaml", "deny")])
    assert "the door never saw this call" not in text
    assert ("the door logged a call here on a damaged line (d1.jsonl:2, set aside: see Quarantine) — likely this "
            "one; door call #2 is missing from the session's calls: what the door decided for it cannot be read") in text


def test_without_a_damaged_line_the_door_never_saw_it(tmp_path):
    text = _conversation(tmp_path, [_door_line(1, 10, "read_file", "a.yaml"),
                                    _door_line(3, 30, "update_rule", "b.yaml", "deny")])
    assert "the door never saw this call" in text and "damaged line" not in text
