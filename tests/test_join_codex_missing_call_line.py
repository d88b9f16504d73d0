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


# --- a call another transcript's pair holds is still this one's to claim ----------------------------

T0 = pd.Timestamp("2026-12-01T09:00:00Z")
SECRET = {"key": "secrets/prod.env"}


def _step(t: str, seq: int, s: float, key: str | None = None, cid: str = "", result: str | None = None) -> dict:
    """A Codex tool call (``get_object`` of ``key``) of transcript ``t`` at ``s`` seconds, or, with
    ``result``, a function_call_output whose call's line is missing (a refusal: ``is_error``)."""
    from replaybook.canonical import canonical_args

    ts = T0 + pd.Timedelta(seconds=s)
    if result is not None:
        return dict(transcript_id=t, client="codex", seq=seq, ts=ts, kind="tool_result", call_id=cid, text=result,
                    text_bytes=len(result.encode()), is_error=True)
    args = {"key": key}
    return dict(transcript_id=t, client="codex", seq=seq, ts=ts, kind="tool_call", tool_raw="mcp__door__get_object",
                server="door", tool="get_object", call_id=cid, arguments=args, args_key=canonical_args(args))


def _call(session: str, seq: int, s: float, key: str, refused: bool = False, logged_args: bool = True) -> dict:
    """A door call of ``get_object`` at ``s`` seconds, answered 0.3 s later (a refusal with ``refused``;
    ``arguments: null`` without ``logged_args``)."""
    from replaybook.canonical import canonical_args

    args = {"key": key}
    return dict(door_session=session, agent="deployer", seq=seq, ts=T0 + pd.Timedelta(seconds=s),
                ts_end=T0 + pd.Timedelta(seconds=s + 0.3), tool="get_object",
                arguments=args if logged_args else None, args_key=canonical_args(args) if logged_args else None,
                decision="deny" if refused else "allow", bytes=len(REFUSAL.encode()) if refused else 30,
                error=f"tool error: {REFUSAL}" if refused else None)


def two_agents(t2_step: dict, *, s1_logs_args: bool = True):
    """T1 read deploy/a and deploy/b, then was refused secrets/prod.env — that call's line damaged,
    only its refusal (10.4 s) remains; door session s1 logged all three (refused #3 at 10 s).  T2
    read deploy/c and deploy/d (door session s2), and ``t2_step`` near s1's #3; s2 logged no call
    for it.  One clock."""
    from replaybook.frames import CALLS

    steps = STEPS.build([
        _step("T1", 0, 2, "deploy/a", "c1"), _step("T1", 1, 5, "deploy/b", "c2"),
        _step("T1", 2, 10.4, cid="c3", result=REFUSAL),
        _step("T2", 0, 3, "deploy/c", "d1"), _step("T2", 1, 6, "deploy/d", "d2"), t2_step])
    calls = CALLS.build([
        _call("s1", 1, 2, "deploy/a"), _call("s1", 2, 5, "deploy/b"),
        _call("s1", 3, 10, SECRET["key"], refused=True, logged_args=s1_logs_args),
        _call("s2", 1, 3, "deploy/c"), _call("s2", 2, 6, "deploy/d")])
    return steps, calls


def _assert_t1_claims_its_refusal(res, *, t2_unmatched: int):
    assert res.assignments() == {"s1": "T1", "s2": "T2"}
    s = res.sessions.set_index("door_session")
    assert (s.loc["s1", "agreed"], s.loc["s1", "by_result_id"], s.loc["s1", "unclaimed_calls"],
            s.loc["s1", "unmatched_steps"], s.loc["s1", "method"]) == (3, 1, 0, 0, "content+result_text")
    # the other transcript's claim counts in the scores and as the runner-up, never in the result
    assert (s.loc["s1", "runner_up"], s.loc["s1", "runner_up_agreed"], s.loc["s1", "margin"]) == ("T2", 1, 3.0)
    assert (s.loc["s2", "agreed"], s.loc["s2", "unmatched_steps"], s.loc["s2", "margin"]) == (2, t2_unmatched, 2.0)
    sc = res.scores.set_index(["door_session", "transcript_id"])
    assert {k: int(v) for k, v in sc.agreed.items()} == {("s1", "T1"): 3, ("s1", "T2"): 1, ("s2", "T2"): 2}
    assert sorted(zip(res.pairs.door_session, res.pairs.transcript_id, res.pairs.step_seq, res.pairs.call_seq,
                      res.pairs.how)) == [
        ("s1", "T1", 0, 1, "content"), ("s1", "T1", 1, 2, "content"), ("s1", "T1", 2, 3, "result_text"),
        ("s2", "T2", 0, 1, "content"), ("s2", "T2", 1, 2, "content")]
    assert res.n_unclaimed_calls == 0 and not res.pairs.call_row.duplicated().any()


def test_a_call_whose_arguments_agree_with_another_transcripts_step_is_still_claimed_by_its_refusal():
    """T2 asked for the same secret at the same moment; its arguments agree with s1's #3, but T2 is
    s2's: the refusal T1 was shown still claims s1's #3 (set aside for T2's content pair, #3 was
    reported as a call no step claims and T1's refusal as answering nothing)."""
    res = join_sessions(*two_agents(_step("T2", 2, 10, SECRET["key"], "d3")))
    _assert_t1_claims_its_refusal(res, t2_unmatched=1)


def test_a_call_logged_without_arguments_that_agrees_by_tool_and_time_with_another_transcript_is_still_claimed():
    """s1 logged #3 without its arguments: T2's get_object at that time agrees by tool and time in
    (T2, s1) — a pair the assignment discards, which must not hold #3 from T1's refusal."""
    res = join_sessions(*two_agents(_step("T2", 2, 10, SECRET["key"], "d3"), s1_logs_args=False))
    _assert_t1_claims_its_refusal(res, t2_unmatched=1)
    sc = res.scores.set_index(["door_session", "transcript_id"])
    assert sc.loc[("s1", "T2"), "agreed"] == 1


def test_another_transcripts_nearer_refusal_does_not_take_the_call_from_this_ones():
    """T2 was shown the same refusal text, nearer s1's #3 in time (10.3 s: as the door answered):
    its claim lies in (T2, s1), which the assignment discards; T1's own claim stands."""
    res = join_sessions(*two_agents(_step("T2", 2, 10.3, cid="d3", result=REFUSAL)))
    _assert_t1_claims_its_refusal(res, t2_unmatched=0)
    sc = res.scores.set_index(["door_session", "transcript_id"])
    assert (sc.loc[("s1", "T2"), "agreed"], sc.loc[("s1", "T2"), "median_abs_delta_ms"]) == (1, 300.0)


def test_a_call_a_step_of_the_same_transcript_holds_is_not_claimed_again_by_a_result():
    """T1 itself also has a get_object of the secret at 10 s agreeing with s1's #3: that pair holds
    #3 within (T1, s1), so T1's refusal claims nothing — no call is counted twice."""
    from replaybook.frames import CALLS

    steps, calls = two_agents(_step("T2", 2, 30, "deploy/e", "d3"))
    steps = STEPS.build(pd.concat([steps, STEPS.build([_step("T1", 3, 10, SECRET["key"], "c4")])],
                                  ignore_index=True))
    res = join_sessions(steps, CALLS.build(calls))
    s = res.sessions.set_index("door_session")
    assert (s.loc["s1", "transcript_id"], s.loc["s1", "agreed"], s.loc["s1", "by_result_id"],
            s.loc["s1", "unclaimed_calls"]) == ("T1", 3, 0, 0)
    assert sorted(zip(res.pairs.step_seq[res.pairs.door_session == "s1"],
                      res.pairs.call_seq[res.pairs.door_session == "s1"],
                      res.pairs.how[res.pairs.door_session == "s1"])) == [
        (0, 1, "content"), (1, 2, "content"), (3, 3, "content")]
