"""A Codex rollout whose function_call line is damaged: only the function_call_output remains.
Codex sends the door no tool-use id, so the result claims the door call it answers by what the
door logged of the answer — its refusal text, the tool, or the answer's size — at that time; the
residuals stay honest and the conversation says what tied them, or why nothing did."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pandas as pd

from replaybook.frames import STEPS
from replaybook.join import join_sessions
from replaybook.report import sections as S
from replaybook.sources.codex import load_codex
from replaybook.sources.door import load_door
from replaybook.views.session import conversation

SID = "019a7c3e-0000-7000-8000-00000000c0de"
REFUSAL = "refused by the door: rule 'deny-secrets' denies this get_object call"
RULE = "service: payments-api\ncanary:\n  weight: 5\n"


def _env(ts: str, payload: dict) -> str:
    return json.dumps({"timestamp": f"2026-11-30T23:10:{ts}Z", "type": "response_item", "payload": payload})


def _ctr(text: str, error: bool) -> str:
    """A function_call_output of an MCP tool: the CallToolResult as JSON text (codex-rs 0.63)."""
    return json.dumps({"content": [{"type": "text", "text": text}], "isError": error})


def incident(tmp_path: Path, *, damaged: set[str], refusal_text: str = REFUSAL):
    """Rollout: list, get the rule, get a secret (refused), get the rule again; the function_call
    lines of ``damaged`` call ids cut in half.  Door clock 4 s ahead; each call ends 0.3 s later."""
    calls = [("c0", "list_objects", {"prefix": "deploy/"}, "deploy/a.yaml", False, "06.000"),
             ("c1", "get_object", {"key": "deploy/rules/p.yaml"}, RULE, False, "08.000"),
             ("c2", "get_object", {"key": "secrets/prod.env"}, refusal_text, True, "15.000"),
             ("c3", "get_object", {"key": "deploy/runbook.md"}, "# runbook\n", False, "18.000")]
    lines = [json.dumps({"timestamp": "2026-11-30T23:10:00.000Z", "type": "session_meta",
                         "payload": {"id": SID, "timestamp": "2026-11-30T23:10:00.000Z", "cli_version": "0.63.0"}})]
    door = []
    for n, (cid, tool, args, text, err, at) in enumerate(calls, 1):
        fc = _env(at, {"type": "function_call", "name": f"mcp__door__{tool}", "arguments": json.dumps(args),
                       "call_id": cid})
        lines.append(fc[: len(fc) // 2] if cid in damaged else fc)
        lines.append(_env(f"{float(at) + 0.4:06.3f}", {"type": "function_call_output", "call_id": cid,
                                                       "output": _ctr(text, err)}))
        t0 = float(at) + 4.0
        door.append(json.dumps({
            "ts": f"2026-11-30T23:10:{t0:06.3f}Z", "ts_end": f"2026-11-30T23:10:{t0 + 0.3:06.3f}Z", "seq": n,
            "session": "door-d1", "agent": "deployer", "server": "s3-config", "tool": tool, "arguments": args,
            "object": next(iter(args.values())), "decision": "deny" if err else "allow",
            "rule": "deny-secrets" if err else "allow-deploy-read", "rows": 1,
            "bytes": len((REFUSAL if err else text).encode()),
            "error": f"tool error: {REFUSAL}" if err else None}))
    (tmp_path / "codex").mkdir()
    (tmp_path / "codex" / f"rollout-2026-11-30T23-10-00-{SID}.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "door" / "deployer").mkdir(parents=True)
    (tmp_path / "door" / "deployer" / "door-d1.jsonl").write_text("\n".join(door) + "\n")
    st, cl = load_codex(tmp_path / "codex"), load_door(tmp_path / "door")
    return st.frame, cl.frame, st.quarantine


def text_of(h: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", h)))


def test_a_refusal_whose_call_line_is_damaged_claims_its_door_call_by_the_refusal_text(tmp_path):
    steps, calls, quarantine = incident(tmp_path, damaged={"c2"})
    assert list(quarantine.line_no) == [6] and list(quarantine.kind) == ["invalid"]
    res = join_sessions(steps, calls)
    s = res.sessions.set_index("door_session").loc["door-d1"]
    assert (s.transcript_id, s.status, s.method) == (SID, "matched", "content+result_text")
    assert (s.calls, s.agreed, s.by_result_id, s.unclaimed_calls, s.unmatched_steps) == (4, 4, 1, 0, 0)
    assert s.transcript_tool_steps == 3
    # the clock offset is read from the tool calls alone (the result was written as the call ended)
    assert s.offset_ms == 4000.0
    p = res.pairs.set_index("call_seq").loc[3]
    assert (p.step_kind, p.how, p.call_id, p.step_seq) == ("tool_result", "result_text", "c2", 5)
    assert pd.isna(p.tool) and pd.isna(p.args_key)
    assert res.n_unclaimed_calls == 0
    # the conversation and the report: the door's record, and what tied the result to it
    conv = conversation(steps, calls, res, "door-d1")
    row = conv[conv.call_missing].iloc[0]
    assert (row.status, row.tool, row.call_seq, row.tied_by, row.result) == (
        "refused", "get_object", 3, "result_text", REFUSAL)
    t = text_of(S.conversations(steps, calls, res, quarantine=quarantine))
    assert ('get_object {"key":"secrets/prod.env"} — as the door logged it: the tool call\'s line is damaged: '
            f"rollout-2026-11-30T23-10-00-{SID}.jsonl:6 (set aside: see Quarantine); its result's text is the error "
            "the door logged for this call, at that time") in t
    # the refused-calls table shows what the agent was shown
    d = text_of(S.session_calls(calls, res.pairs, "door-d1", steps=steps))
    assert re.search(r"secrets/prod\.env deny deny-secrets .*? 5 error: " + re.escape(REFUSAL), d), d
    sentence = S.confidence_sentence(res.sessions.iloc[0].to_dict())
    assert ("1 of them is claimed by a tool result (by the error text the door logged, at that time: its client "
            "sends the door no tool-use id) whose tool call's own line is missing") in sentence


def test_an_allowed_call_is_claimed_by_the_size_of_its_answer(tmp_path):
    steps, calls, _ = incident(tmp_path, damaged={"c1"})
    res = join_sessions(steps, calls)
    s = res.sessions.iloc[0]
    assert (s.agreed, s.by_result_id, s.unclaimed_calls, s.method) == (4, 1, 0, "content+result_size")
    p = res.pairs.set_index("call_seq").loc[2]
    assert (p.step_kind, p.how, p.call_id) == ("tool_result", "result_size", "c1")


def test_a_result_whose_text_is_not_the_refusal_claims_nothing(tmp_path):
    """The door refused call #3 with one text; the result says something else (another door, an
    edited rollout): nothing ties them, the call stays unclaimed and the conversation says why in
    Codex's terms, not as a tool-use id the door never logged."""
    steps, calls, _ = incident(tmp_path, damaged={"c2"}, refusal_text="permission denied by upstream")
    res = join_sessions(steps, calls)
    s = res.sessions.iloc[0]
    assert (s.agreed, s.by_result_id, s.unclaimed_calls) == (3, 0, 1)
    assert list(res.unclaimed_calls.seq) == [3]
    conv = conversation(steps, calls, res, "door-d1")
    row = conv[conv.call_missing].iloc[0]
    assert row.status == "call line missing" and row.tied_by is None
    assert row.reach == ("no door call of this session answers it by error text, tool or size at that time "
                         "(codex sends the door no tool-use id)")


def test_a_result_that_names_its_tool_claims_the_call_of_that_tool_nearest_in_time(tmp_path):
    """A client that writes the tool's name on its result rows: the result claims a free call of
    that tool at its time, never one of another tool."""
    steps, calls, _ = incident(tmp_path, damaged={"c3"})
    st = steps.copy()
    orphan = (st["kind"] == "tool_result") & (st["call_id"] == "c3")
    st.loc[orphan, "tool"] = "get_object"
    st.loc[orphan, "text_bytes"] = 1  # (not the size the door logged: the tool ties it)
    res = join_sessions(STEPS.build(st), calls)
    p = res.pairs.set_index("call_seq").loc[4]
    assert (p.step_kind, p.how, p.call_id) == ("tool_result", "result_tool", "c3")
    st.loc[orphan, "tool"] = "put_object"
    res = join_sessions(STEPS.build(st), calls)
    assert res.sessions.iloc[0].unclaimed_calls == 1 and list(res.unclaimed_calls.seq) == [4]
