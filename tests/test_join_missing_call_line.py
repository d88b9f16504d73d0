"""A tool result whose tool call's own line is missing from the transcript (the line damaged and
set aside, the file cut before it, a resumed copy that dropped it) still proves, by its tool-use
id, which door call it answers: the join pairs the two, the residuals stay honest, and the
report's conversation shows the call with what the agent got back and where the line went."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pandas as pd

from replaybook.join import join_sessions, orphan_results
from replaybook.report import sections as S
from replaybook.sources.claude_code import load_claude_code
from replaybook.sources.door import load_door
from replaybook.views.session import conversation

T1 = "11111111-1111-4111-8111-111111111111"
T2 = "22222222-2222-4222-8222-222222222222"
PAYROLL = "employee,salary\nJ. Doe,91000"


def _line(tid: str, n: int, kind: str, ts: str, content, parent: str | None) -> dict:
    msg = ({"role": "user", "content": content} if kind == "user" else
           {"model": "claude-sonnet-4-5", "id": f"msg_{tid[:4]}{n:03d}", "type": "message", "role": "assistant",
            "content": content, "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 5}})
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/fin/agent",
            "sessionId": tid, "version": "2.1.40", "type": kind, "uuid": f"{tid[:8]}-0000-4000-8000-{n:012d}",
            "timestamp": f"2026-10-02T09:{ts}Z", "message": msg}


def _transcript(tid: str, calls: list[tuple[str, str, dict, str, str]], damaged: set[str]) -> str:
    """A Claude Code transcript: a prompt, then per (id, tool, arguments, result, mm:ss.fff) a
    tool_use line and its tool_result line; the tool_use lines of ``damaged`` ids cut in half."""
    lines = [_line(tid, 1, "user", "00:00.000", "Sum up the quarter's reports.", None)]
    for cid, tool, args, result, at in calls:
        n = len(lines) + 1
        use = _line(tid, n, "assistant", at, [{"type": "tool_use", "id": cid, "name": f"mcp__door__{tool}",
                                                "input": args}], lines[-1]["uuid"])
        mm, ss = at.split(":")
        res = _line(tid, n + 1, "user", f"{mm}:{float(ss) + 0.6:06.3f}",
                    [{"tool_use_id": cid, "type": "tool_result", "content": result, "is_error": False}], use["uuid"])
        lines += [use, res]
    out = []
    for d in lines:
        text = json.dumps(d)
        uses = [b.get("id") for b in d["message"]["content"] if isinstance(b, dict)] if d["type"] == "assistant" else []
        out.append(text[: len(text) // 2] if set(uses) & damaged else text)
    return "\n".join(out) + "\n"


def _door(session: str, calls: list[tuple[int, str, str, dict, str | None]]) -> str:
    """A door log: per (seq, mm:ss.fff, tool, arguments, logged tool-use id) one line."""
    return "\n".join(json.dumps({
        "ts": f"2026-10-02T09:{at}Z", "seq": seq, "session": session, "agent": "finance", "server": "files",
        "tool": tool, "arguments": args, "object": args["path"], "decision": "allow", "rule": "allow-finance",
        "rows": 2, "bytes": 30, **({"meta": {"claudecode/toolUseId": meta}} if meta else {})})
        for seq, at, tool, args, meta in calls) + "\n"


Q3, PAY, LS = {"path": "reports/q3.csv"}, {"path": "payroll/2026-10.csv"}, {"path": "reports/"}
Q4, Q2 = {"path": "reports/q4.csv"}, {"path": "reports/q2.csv"}


def incident(tmp_path: Path, *, s1_logs_payroll: bool = True, second: bool = False):
    """Transcript T1 read a quarter's report, then payroll (that tool_use line damaged: only its
    result remains), then listed the folder; door session door-s1 (its clock 0.3 s ahead) logged
    T1's tool-use ids.  With ``second``, transcript T2 and door session door-s2 too, and the
    payroll call's id is logged by door-s2, not door-s1."""
    (tmp_path / "t").mkdir()
    (tmp_path / "door" / "finance").mkdir(parents=True)
    (tmp_path / "t" / f"{T1}.jsonl").write_text(_transcript(T1, [
        ("toolu_01A1", "read_file", Q3, "region,total\nnorth,10", "00:02.000"),
        ("toolu_01A2", "read_file", PAY, PAYROLL, "00:05.000"),
        ("toolu_01A3", "list_folder", LS, "q3.csv\nq4.csv", "00:08.000")], damaged={"toolu_01A2"}))
    (tmp_path / "door" / "finance" / "door-s1.jsonl").write_text(_door("door-s1", [
        (1, "00:02.300", "read_file", Q3, "toolu_01A1")]
        + ([(2, "00:05.300", "read_file", PAY, "toolu_01A2")] if s1_logs_payroll else [])
        + [(3, "00:08.300", "list_folder", LS, "toolu_01A3")]))
    if second:
        (tmp_path / "t" / f"{T2}.jsonl").write_text(_transcript(T2, [
            ("toolu_01B1", "read_file", Q4, "region,total\nsouth,7", "20:02.000"),
            ("toolu_01B2", "read_file", Q2, "region,total\neast,3", "20:05.000")], damaged=set()))
        (tmp_path / "door" / "finance" / "door-s2.jsonl").write_text(_door("door-s2", [
            (1, "20:02.300", "read_file", Q4, "toolu_01B1"), (2, "20:03.300", "read_file", PAY, "toolu_01A2"),
            (3, "20:05.300", "read_file", Q2, "toolu_01B2")]))
    st, ca = load_claude_code(tmp_path / "t"), load_door(tmp_path / "door")
    return st.frame, ca.frame, st.quarantine


def text_of(h: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", h)))


def test_a_result_whose_call_line_is_damaged_claims_its_door_call_by_id(tmp_path):
    steps, calls, quarantine = incident(tmp_path)
    # the loader set the damaged line aside (line 4: prompt, A1's call and result, then A2's call)
    assert [(Path(f).name, int(n), k) for f, n, k in
            zip(quarantine.source_file, quarantine.line_no, quarantine.kind)] == [(f"{T1}.jsonl", 4, "invalid")]
    res_row = steps[(steps.kind == "tool_result") & (steps.call_id == "toolu_01A2")]
    assert res_row.tool.isna().all() and list(res_row.line_no) == [5]
    assert list(steps.index[orphan_results(steps)]) == list(res_row.index)
    res = join_sessions(steps, calls)
    s = res.sessions.set_index("door_session").loc["door-s1"]
    assert s.transcript_id == T1 and s.status == "matched" and s.method == "meta_id"
    # every door call is claimed: two by their tool calls' ids, one by the result's id
    assert (s.calls, s.agreed, s.by_result_id, s.unclaimed_calls) == (3, 3, 1, 0)
    # the transcript's own tool steps and residuals are its tool calls' (the result is none)
    assert (s.transcript_tool_steps, s.unmatched_steps) == (2, 0)
    # no tool or arguments to contradict: not a mismatch, and no id conflict or unknown id either
    assert (s.id_mismatches, s.id_conflicts, s.unknown_ids) == (0, 0, 0)
    # the clock offset is read from the tool calls (the result was written 0.6 s after its call)
    assert s.offset_ms == 300.0 and res.offset_ms == 300.0
    assert res.n_unclaimed_calls == 0 and res.n_unmatched_steps == 0
    p = res.pairs.set_index("call_seq")
    assert list(p.step_kind) == ["tool_call", "tool_result", "tool_call"]
    r = p.loc[2]
    assert (r.transcript_id, r.step_seq, r.call_id, r.how) == (T1, int(res_row.seq.iloc[0]), "toolu_01A2", "meta_id")
    assert pd.isna(r.tool) and pd.isna(r.args_key) and r.delta_ms == -300.0  # (door 05.300, result 05.600)
    assert r.step_ts == pd.Timestamp("2026-10-02T09:00:05.600Z")
    # the far-pairs list reads the tool calls' pairs only (a result's time is when its call ended)
    from replaybook.join import far_pairs
    assert far_pairs(res.pairs, res.sessions, far_ms=100).empty


def test_the_conversation_shows_the_call_with_what_the_agent_got_back_and_where_its_line_went(tmp_path):
    steps, calls, quarantine = incident(tmp_path)
    res = join_sessions(steps, calls)
    conv = conversation(steps, calls, res, "door-s1")
    row = conv[conv.call_missing].iloc[0]
    assert (row.kind, row.lane, row.status, row.tool, row.call_seq) == ("tool_result", "tool call", "reached",
                                                                         "read_file", 2)
    assert row.text == '{"path":"payroll/2026-10.csv"}' and row.result.startswith("employee,salary")
    assert not (conv.status == "unclaimed").any()  # no "door (no step)" row any more
    h = S.conversations(steps, calls, res, quarantine=quarantine)
    t = text_of(h)
    assert ('read_file {"path":"payroll/2026-10.csv"} — as the door logged it: the tool call\'s line is damaged: '
            f"{T1}.jsonl:4 (set aside: see Quarantine); its result's tool-use id names this door call") in t
    assert "J. Doe,91000" in t and "door (no step)" not in t
    # the set-aside line still shows where it stood, before the call's row
    assert t.index(f"line 4 of {T1}.jsonl was set aside") < t.index("as the door logged it")
    # the door's table: what the agent got back beside call #2
    d = text_of(S.session_calls(calls, res.pairs, "door-s1", steps=steps))
    assert re.search(r"payroll/2026-10\.csv allow .*? 4 employee,salary J\. Doe,91000", d)
    sentence = S.confidence_sentence(res.sessions.iloc[0].to_dict())
    assert "3 of 3 calls (100%) agree" in sentence
    assert ("agree (the door logged the client's own tool-use ids, and they match the transcript's); 1 of them is "
            "claimed by the tool-use id of a tool result whose tool call's own line is missing from the transcript "
            "(damaged, cut or dropped: the conversation shows where)") in sentence
    assert "claimed by a result by_ result_ id" in text_of(S.join_summary(res.sessions))
    assert ("Spread over 2 pairs: min 300 ms, median 300 ms, max 300 ms (not counted: 1 tool result standing in "
            "for its missing tool call, written when the call ended).") in text_of(
        S.clock_offset(res.offset_ms, res.sessions, res.pairs))
    # the table under it counts the same pairs (3 agreed, 1 of them by a result's id: 2 timed)
    off = S.clock_offset(res.offset_ms, res.sessions, res.pairs)
    assert re.search(r"<td><code>door-s1</code></td><td><code>[^<]*</code></td><td[^>]*>[^<]*</td>"
                     r"<td[^>]*>2</td>", off.replace("<wbr/>", "")), off
    assert ("1 door call claimed by a tool result (its tool call's line missing) count among a session's "
            "agreed calls, not here") in text_of(off)


def test_without_the_damaged_line_set_aside_the_conversation_says_the_line_is_missing(tmp_path):
    steps, calls, _ = incident(tmp_path)
    res = join_sessions(steps, calls)
    t = text_of(S.conversations(steps, calls, res, quarantine=None))
    assert ("the tool call's line is missing from the transcript (no line before its result was set aside: the "
            "file was cut before it, or a resumed copy dropped it); its result's tool-use id names this door call") in t


def test_a_result_whose_id_no_door_log_has_stays_a_transcript_side_fact(tmp_path):
    steps, calls, quarantine = incident(tmp_path, s1_logs_payroll=False)
    res = join_sessions(steps, calls)
    s = res.sessions.set_index("door_session").loc["door-s1"]
    assert (s.transcript_id, s.calls, s.agreed, s.by_result_id, s.unclaimed_calls) == (T1, 2, 2, 0, 0)
    assert (s.transcript_tool_steps, s.unmatched_steps, s.unknown_ids) == (2, 0, 0)
    assert list(res.pairs.step_kind) == ["tool_call", "tool_call"]
    conv = conversation(steps, calls, res, "door-s1")
    row = conv[conv.call_missing].iloc[0]
    assert (row.status, row.reach) == ("call line missing", "no door call logged its tool-use id")
    assert pd.isna(row.call_seq) and row.result.startswith("employee,salary")
    t = text_of(S.conversations(steps, calls, res, quarantine=quarantine))
    assert (f"(a tool call only its result shows) — the tool call's line is damaged: {T1}.jsonl:4 (set aside: see "
            "Quarantine) no door call logged its tool-use id employee,salary J. Doe,91000") in t


def test_an_orphan_result_whose_id_another_session_logged_claims_nothing_there(tmp_path):
    steps, calls, quarantine = incident(tmp_path, s1_logs_payroll=False, second=True)
    res = join_sessions(steps, calls)
    assert res.assignments() == {"door-s1": T1, "door-s2": T2}
    s = res.sessions.set_index("door_session")
    # the id ties door-s2 #2 to T1, which is door-s1's: it counts in the scores, not in door-s2
    sc = res.scores.set_index(["door_session", "transcript_id"])
    assert (sc.loc[("door-s2", T1), "agreed"], sc.loc[("door-s2", T1), "exact"]) == (1, 1)
    assert (s.loc["door-s2", "agreed"], s.loc["door-s2", "by_result_id"], s.loc["door-s2", "unclaimed_calls"]) == (2, 0, 1)
    assert s.loc["door-s2", "runner_up"] == T1 and s.loc["door-s2", "runner_up_agreed"] == 1
    assert (s.loc["door-s1", "agreed"], s.loc["door-s1", "by_result_id"], s.loc["door-s1", "unclaimed_calls"]) == (2, 0, 0)
    assert list(res.unclaimed_calls.seq) == [2] and list(res.unclaimed_calls.door_session) == ["door-s2"]
    assert not ((res.pairs.door_session == "door-s2") & (res.pairs.transcript_id == T1)).any()
    assert (s.unmatched_steps == 0).all() and (s.id_mismatches == 0).all()
    # T1's conversation names the door call that logged the id, in the session it is not in
    conv = conversation(steps, calls, res, "door-s1")
    row = conv[conv.call_missing].iloc[0]
    assert row.status == "call line missing"
    assert row.reach == "its tool-use id was logged by door session door-s2 #2, a door session not assigned to this transcript"
    # door-s2's shows that call as a door call no step of its transcript claims
    conv2 = conversation(steps, calls, res, "door-s2")
    assert list(conv2.loc[conv2.status == "unclaimed", "call_seq"]) == [2]


def test_replaybook_join_notes_the_call_claimed_by_a_result(tmp_path, capsys):
    from replaybook.cli import main

    incident(tmp_path)
    args = ["join", "--transcripts", str(tmp_path / "t"), "--calls", str(tmp_path / "door")]
    assert main(args) == 0
    assert ("note: door session door-s1: 1 door call claimed by the tool-use id of a tool result whose tool call's "
            "own line is missing from the transcript") in capsys.readouterr().err
    assert main(args + ["--format", "json"]) == 0
    s = json.loads(capsys.readouterr().out)["sessions"][0]
    assert (s["agreed"], s["by_result_id"], s["unclaimed_calls"], s["unmatched_steps"]) == (3, 1, 0, 0)
