"""A Claude Code conversation resumed in a new file, with a sub-agent, reaching the door in two
sessions: the resumed file continues the first file's session, and a sub-agent file whose parent
transcript is not given joins the transcript that carries its parent's conversation.

The files are written here as Claude Code 2.0.x writes them: transcript A asks a sub-agent (flat
``agent-<id>.jsonl``, rows under A's ``sessionId``) through a ``Task`` call; transcript B resumes
A (copies of A's lines, same uuids, B's ``sessionId``) and makes one call of its own.  The door
logged every call's tool-use id; its session a1 holds A's two calls and the sub-agent's two, b2
holds B's one call, twenty minutes later.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from replaybook.join import join_sessions, resumptions, sub_agent_parents
from replaybook.sources.claude_code import load_claude_code
from replaybook.sources.door import load_door

A = "5c1f0e2a-0000-4000-8000-0000000000aa"
B = "5c1f0e2a-0000-4000-8000-0000000000bb"
SUB = "5eb4a6e1"
PROMPT = "Compute the average of the amount column in data/sales.csv and the row count."
S1, S2 = "door-a1", "door-b2"


def _lines(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _conversation():
    """(A's lines, the sub-agent's lines, B's lines)."""
    n = iter(range(1, 100))

    def line(t, sid, parent, body, agent=None):
        d = {"parentUuid": parent, "isSidechain": agent is not None, "userType": "external", "cwd": "/w",
             "sessionId": sid, "version": "2.0.55", "uuid": f"0000aaaa-0000-4000-8000-{next(n):012d}",
             "timestamp": f"2026-11-20T{t}Z", **body}
        if agent:
            d["agentId"] = agent
        return d

    def prompt(text):
        return {"type": "user", "message": {"role": "user", "content": text}}

    def call(cid, name, args, mid):
        return {"type": "assistant", "requestId": "req_" + mid, "message": {
            "id": mid, "role": "assistant", "model": "m", "type": "message",
            "content": [{"type": "tool_use", "id": cid, "name": name, "input": args}]}}

    def result(cid, text, extra=None):
        d = {"type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": cid, "content": text, "is_error": False}]}}
        if extra:
            d["toolUseResult"] = extra
        return d

    a = [line("10:00:00.000", A, None, prompt("What is the average order amount?"))]
    for t, body in (("10:00:03.000", call("toolu_A1", "mcp__door__list_folder", {"path": "data/"}, "m1")),
                    ("10:00:03.600", result("toolu_A1", "data/sales.csv")),
                    ("10:00:08.000", call("toolu_A2", "mcp__door__describe", {"path": "data/sales.csv"}, "m2")),
                    ("10:00:08.700", result("toolu_A2", "40 rows")),
                    ("10:00:12.000", call("toolu_A3", "Task", {"description": "average", "prompt": PROMPT}, "m3"))):
        a.append(line(t, A, a[-1]["uuid"], body))
    task = a[-1]["uuid"]
    s = [line("10:00:12.500", A, None, prompt(PROMPT), agent=SUB)]
    for t, body in (("10:00:15.000", call("toolu_S1", "mcp__door__summarise", {"path": "data/sales.csv"}, "s1")),
                    ("10:00:15.800", result("toolu_S1", "rows: 36")),
                    ("10:00:17.000", call("toolu_S2", "mcp__door__read_file", {"path": "data/x.env"}, "s2")),
                    ("10:00:17.100", result("toolu_S2", "refused by the door"))):
        s.append(line(t, A, s[-1]["uuid"], body, agent=SUB))
    a.append(line("10:00:21.000", A, task, result("toolu_A3", "36 rows", {"status": "completed", "agentId": SUB})))
    b = [dict(x, sessionId=B) for x in a]
    for t, body in (("10:20:00.000", prompt("Also confirm the row count.")),
                    ("10:20:03.000", call("toolu_B1", "mcp__door__query", {"path": "data/sales.csv"}, "m4")),
                    ("10:20:03.900", result("toolu_B1", "36"))):
        b.append(line(t, B, b[-1]["uuid"], body))
    return a, s, b


def _door(path: Path) -> None:
    def dc(t, seq, sess, tool, args, cid):
        return {"ts": f"2026-11-20T{t}Z", "seq": seq, "session": sess, "agent": "analyst", "server": "files",
                "tool": tool, "arguments": args, "object": args["path"], "decision": "allow", "rule": "r",
                "meta": {"claudecode/toolUseId": cid}}
    _lines(path / f"{S1}.jsonl", [
        dc("10:00:03.200", 1, S1, "list_folder", {"path": "data/"}, "toolu_A1"),
        dc("10:00:08.200", 2, S1, "describe", {"path": "data/sales.csv"}, "toolu_A2"),
        dc("10:00:15.200", 3, S1, "summarise", {"path": "data/sales.csv"}, "toolu_S1"),
        dc("10:00:17.200", 4, S1, "read_file", {"path": "data/x.env"}, "toolu_S2")])
    _lines(path / f"{S2}.jsonl", [dc("10:20:03.200", 1, S2, "query", {"path": "data/sales.csv"}, "toolu_B1")])


@pytest.fixture
def incident(tmp_path):
    a, s, b = _conversation()
    _lines(tmp_path / "t" / f"{A}.jsonl", a)
    _lines(tmp_path / "t" / f"agent-{SUB}.jsonl", s)
    _lines(tmp_path / "t" / f"{B}.jsonl", b)
    _door(tmp_path / "door")
    return tmp_path


def _join(paths, door):
    steps = load_claude_code(paths).frame
    return steps, join_sessions(steps, load_door(door).frame)


def test_the_resumed_file_alone_carries_the_sub_agent_and_both_door_sessions(incident):
    # the first file is not given: B's copy of its history holds A's two calls and the Task call
    # that started the sub-agent, whose own rows still name A's session
    steps, res = _join([incident / "t" / f"{B}.jsonl", incident / "t" / f"agent-{SUB}.jsonl"], incident / "door")
    assert sub_agent_parents(steps) == {f"agent-{SUB}": B}
    assert res.sub_agents == {f"agent-{SUB}": B}
    s = res.sessions.set_index("door_session")
    assert res.assignments() == {S1: B, S2: B}
    assert s.loc[S1, "agreed"] == 4 and pd.isna(s.loc[S1, "continues"])
    # one call, agreeing by the client's own tool-use id: the id proves the conversation
    assert s.loc[S2, "agreed"] == 1 and s.loc[S2, "continues"] == S1 and s.loc[S2, "status"] == "matched"
    assert set(res.pairs.how) == {"meta_id"}
    assert sorted(zip(res.pairs.transcript_id, res.pairs.call_id)) == [
        (B, "toolu_A1"), (B, "toolu_A2"), (B, "toolu_B1"), (f"agent-{SUB}", "toolu_S1"), (f"agent-{SUB}", "toolu_S2")]
    # nothing left over on either side
    assert res.n_unclaimed_calls == 0 and res.n_unmatched_steps == 0
    assert res.unmatched_transcripts == []


def test_a_resumed_files_session_continues_the_first_files_session(incident):
    steps, res = _join(incident / "t", incident / "door")
    assert resumptions(steps) == {B: A}
    assert res.sub_agents == {f"agent-{SUB}": A}
    s = res.sessions.set_index("door_session")
    # each file keeps its own session (B's copies of A's lines are A's), and B's continues A's
    assert res.assignments() == {S1: A, S2: B}
    assert pd.isna(s.loc[S1, "continues"]) and s.loc[S2, "continues"] == S1
    assert s.loc[S1, "agreed"] == 4 and s.loc[S2, "agreed"] == 1
    assert list(s.status) == ["matched", "matched"]
    assert res.n_unclaimed_calls == 0 and res.n_unmatched_steps == 0


def test_only_claude_codes_parent_lines_say_a_file_was_resumed(incident):
    # (an OTel span's parent_uuid is its parent span, which may be another trace's)
    steps = load_claude_code(incident / "t").frame
    assert resumptions(steps) == {B: A}
    assert resumptions(steps.assign(client="otel")) == {}


def test_a_resumed_files_session_running_at_the_same_time_continues_nothing(incident):
    # B's session logged before A's last call: two conversations at once, not one resumed
    rows = [json.loads(x) for x in (incident / "door" / f"{S2}.jsonl").read_text().splitlines()]
    rows[0]["ts"] = "2026-11-20T10:00:16.000Z"
    _lines(incident / "door" / f"{S2}.jsonl", rows)
    _, res = _join(incident / "t", incident / "door")
    assert res.assignments() == {S1: A, S2: B}
    assert res.sessions["continues"].isna().all()


def test_a_sub_agent_whose_task_call_two_transcripts_hold_stays_a_transcript_of_its_own(incident):
    steps = load_claude_code([incident / "t" / f"{B}.jsonl", incident / "t" / f"agent-{SUB}.jsonl"]).frame
    assert sub_agent_parents(steps) == {f"agent-{SUB}": B}
    # two main-agent transcripts holding the Task call (copies the loader could not tell apart):
    # which of the two the sub-agent's conversation went on in is not known
    other = steps[steps["tool"].eq("Task").fillna(False).to_numpy(bool)].assign(transcript_id="other")
    assert sub_agent_parents(pd.concat([steps, other], ignore_index=True)) == {}


def test_a_file_made_of_the_first_lines_of_the_resumed_one_carries_the_sub_agent(incident):
    # the first file given in part (cut after the Task call's result): the loader reads it as the
    # file B resumes, so B's copies are its lines, the Task call among them
    _, _, b = _conversation()
    _lines(incident / "c" / "cut.jsonl", [dict(x, sessionId="cut") for x in b[:-3]])
    steps, res = _join([incident / "t" / f"{B}.jsonl", incident / "c" / "cut.jsonl",
                        incident / "t" / f"agent-{SUB}.jsonl"], incident / "door")
    assert resumptions(steps) == {B: "cut"} and res.sub_agents == {f"agent-{SUB}": "cut"}
    assert res.assignments() == {S1: "cut", S2: B}
    assert res.sessions.set_index("door_session")["continues"].fillna("-").to_dict() == {S1: "-", S2: S1}


def test_a_call_and_a_step_one_tool_use_id_ties_are_named_when_left_in_no_link(incident, capsys):
    # b2 made two more calls no transcript has: one agreeing call of three is not taken as
    # continuing the conversation, so B's call and b2's stay residuals — named as one call
    rows = [json.loads(x) for x in (incident / "door" / f"{S2}.jsonl").read_text().splitlines()]
    for seq in (2, 3):
        rows.append(dict(rows[0], seq=seq, tool=f"other{seq}", meta={}))
    _lines(incident / "door" / f"{S2}.jsonl", rows)
    steps, res = _join([incident / "t" / f"{B}.jsonl", incident / "t" / f"agent-{SUB}.jsonl"], incident / "door")
    s = res.sessions.set_index("door_session")
    assert res.assignments() == {S1: B, S2: None} and pd.isna(s.loc[S2, "continues"])
    assert res.split_ids.to_dict("records") == [dict(
        door_session=S2, call_seq=1, call_row=4, call_id="toolu_B1", transcript_id=B, step_seq=12, conversation=B,
        conversation_session=S1)]
    assert list(res.unclaimed_calls.meta_call_id[:1]) == ["toolu_B1"]
    assert list(res.unmatched_steps.call_id) == ["toolu_B1"]
    assert res.to_dict()["split_ids"][0]["call_id"] == "toolu_B1"
    # the report's residuals and `replaybook join` name them together
    from replaybook.report.sections import residuals

    html = residuals(unclaimed_calls=res.unclaimed_calls, unmatched_steps=res.unmatched_steps,
                     unmatched_transcripts=res.unmatched_transcripts, sessions=res.sessions, split_ids=res.split_ids)
    assert "carry the tool-use id of a transcript step" in html and "that conversation&#x27;s door session" in html
    from replaybook.cli import main

    assert main(["join", "--transcripts", str(incident / "t" / f"{B}.jsonl"), "--transcripts",
                 str(incident / "t" / f"agent-{SUB}.jsonl"), "--calls", str(incident / "door")]) == 0
    out = capsys.readouterr().out
    assert (f"tool-use id toolu_B1: door session {S2} #1 and step 12 of transcript {B} are one call, yet in no "
            f"link: the call is listed as unclaimed, and its conversation is door session {S1}'s") in out


def test_the_report_and_the_workbook_say_the_resumed_files_session_continues_the_first(incident):
    from replaybook.report import sections as S
    from replaybook.views.session import session_caveats

    steps = load_claude_code(incident / "t").frame
    calls = load_door(incident / "door").frame
    res = join_sessions(steps, calls)
    assert S.resumed_from(res.sessions) == {S2: A}
    rows = S.with_resumed(res.sessions).set_index("door_session")
    assert rows.loc[S2, "resumes_transcript"] == A and pd.isna(rows.loc[S1, "resumes_transcript"])
    assert S.confidence_sentence(rows.loc[S2].to_dict() | {"door_session": S2}) == (
        f"Door session {S2}: continues door session {S1}'s conversation: its transcript {B} resumes transcript "
        f"{A}, door session {S1}'s (a conversation resumed in a new file), and 1 of 1 call agree with it (by the "
        "client's own tool-use ids); the two sessions ran one after the other.")
    assert session_caveats(res, S2, 60, calls)[0] == (
        f"Continues door session {S1}: the same conversation, resumed in a new file — transcript {B} resumes "
        f"transcript {A}, door session {S1}'s.")
    # each file's part of the conversation under its own session, each naming the other
    conv = S.conversations(steps, calls, res)
    assert f"Door session {S1} · transcript {A}" in conv and f"Door session {S2} · transcript {B}" in conv
    assert f"it resumes transcript {A}: the conversation&#x27;s earlier part is door session {S1}&#x27;s" in conv
    assert f"its later part door session {S2}&#x27;s" in conv
    # and what the resumed file was asked is not folded away under the first session
    asked = S.asked_and_answered(steps, res.sessions)
    assert "Also confirm the row count." in asked and "What is the average order amount?" in asked
