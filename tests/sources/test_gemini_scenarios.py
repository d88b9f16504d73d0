"""Gemini CLI chat recordings against the shapes the real client writes: one scenario per way a
recording can differ from the tidy case, each with the rows it must give.

The recordings are written here, modelled on gemini-cli ``chatRecordingService.ts`` /
``chatRecordingTypes.ts`` (2025–2026): append-only JSONL under ``~/.gemini/tmp/<hash>/chats/``
where a message is re-appended whole each time it changes (the last version wins), ``$set`` and
``$rewindTo`` records, a ``.json`` ConversationRecord migrated to ``.jsonl`` on resume, sub-agent
recordings in ``chats/<parent sessionId>/<sessionId>.jsonl``, and MCP tools named
``mcp_<server>_<tool>`` with ``displayName`` ``"<tool> (<server> MCP Server)"``.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
from _jsonl_fixture import write_jsonl as write

from replaybook._text import TEXT_LIMIT
from replaybook.canonical import canonical_args
from replaybook.frames import STEPS
from replaybook.join import join_sessions
from replaybook.sources.door import load_door
from replaybook.sources.gemini import load_gemini

S = "5a1b2c3d-0000-4000-8000-0000000000aa"
T0 = datetime(2026, 3, 1, 10, 0, tzinfo=timezone.utc)


def at(sec: float) -> str:
    return (T0 + timedelta(seconds=sec)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def meta(sid=S, kind="main") -> dict:
    return {"sessionId": sid, "projectHash": "9b2f", "startTime": at(0), "lastUpdated": at(0), "kind": kind}


def user(mid, sec, text) -> dict:
    return {"id": mid, "timestamp": at(sec), "type": "user", "content": [{"text": text}]}


def gemini(mid, sec, text="", calls=None, **extra) -> dict:
    m = {"id": mid, "timestamp": at(sec), "type": "gemini", "content": [{"text": text}] if text else [],
         "model": "gemini-2.5-pro", **extra}
    if calls is not None:
        m["toolCalls"] = calls
    return m


def call(cid, name, args, sec, status="success", output=None, server=None, tool=None, **extra) -> dict:
    tc = {"id": cid, "name": name, "args": args, "status": status, "timestamp": at(sec), **extra}
    if server:
        tc["displayName"] = f"{tool} ({server} MCP Server)"
    if output is not None:
        tc["result"] = [{"functionResponse": {"id": cid, "name": name, "response": {"output": output}}}]
    return tc


def recording(tmp_path: Path, lines: list, tail: str = "", sid: str = S) -> Path:
    return write(tmp_path / "chats" / f"session-2026-03-01T10-00-{sid[:8]}.jsonl", lines, tail)


def rows(frame: pd.DataFrame, cols) -> list[list]:
    return [[None if pd.isna(v) else v for v in r] for r in frame[cols].itertuples(index=False)]


def calls_of(res) -> pd.DataFrame:
    return res.frame[res.frame["kind"] == "tool_call"]


# ---------------------------------------------------------------------------------------------

def test_args_object_text_and_missing_give_the_doors_key(tmp_path):
    """Gemini CLI writes ``args`` as an object; JSON text (a record another program wrote) had
    loaded with args_key NA and nothing said, so the call could not agree by arguments."""
    res = load_gemini(recording(tmp_path, [meta(), user("u1", 1, "go"), gemini("g1", 2, calls=[
        call("c1", "mcp_door_read_object", {"path": "demo/café.csv", "limit": 10.0}, 3, server="door",
             tool="read_object"),
        call("c2", "mcp_door_read_object", '{"limit": 10, "path": "demo/cafe\\u0301.csv"}', 4, server="door",
             tool="read_object"),
        call("c3", "mcp_door_list", None, 5, server="door", tool="list"),
        call("c4", "mcp_door_list", "{path: demo", 6, server="door", tool="list")])]))
    key = canonical_args({"path": "demo/café.csv", "limit": 10})
    assert rows(calls_of(res), ["call_id", "server", "tool", "args_key", "text"]) == [
        ["c1", "door", "read_object", key, None], ["c2", "door", "read_object", key, None],
        ["c3", "door", "list", "{}", None], ["c4", "door", "list", None, "{path: demo"]]
    assert res.inputs[0]["notes"] == ["line 3: tool call args are not a JSON object or JSON text; kept as text, "
                                      "args_key left NA"]
    assert res.quarantine.empty


# ---------------------------------------------------------------------------------------------

def test_a_message_appended_again_as_its_calls_progress_keeps_its_last_version(tmp_path):
    running = call("c1", "mcp_door_read_object", {"path": "a"}, 3, status="executing", server="door",
                   tool="read_object")
    done = call("c1", "mcp_door_read_object", {"path": "a"}, 3, output="region,revenue", server="door",
                tool="read_object")
    res = load_gemini(recording(tmp_path, [
        meta(), user("u1", 1, "go"), gemini("g1", 2, "reading"), gemini("g1", 2, "reading", [running]),
        gemini("g1", 2, "reading", [done], tokens={"input": 900, "output": 40}),
        {"$set": {"lastUpdated": at(4)}}]))
    f = res.frame
    assert rows(f, ["seq", "line_no", "kind", "call_id", "result_text", "is_error", "input_tokens"]) == [
        [0, 1, "system", None, None, None, None], [1, 2, "user_prompt", None, None, None, None],
        [2, 5, "model_request", None, None, None, 900], [3, 5, "tool_call", "c1", "region,revenue", False, None]]
    assert res.inputs[0]["superseded"] == 2 and res.inputs[0]["metadata_updates"] == 1


# ---------------------------------------------------------------------------------------------

def test_parallel_calls_in_one_message_each_keep_their_own_result(tmp_path):
    res = load_gemini(recording(tmp_path, [meta(), gemini("g1", 2, calls=[
        call("p1", "mcp_door_list", {"path": "a"}, 3.0, output="A", server="door", tool="list"),
        call("p2", "mcp_door_list", {"path": "b"}, 3.0, status="error", server="door", tool="list",
             result=[{"functionResponse": {"id": "p2", "name": "mcp_door_list", "response": {"error": "denied"}}}]),
        call("p3", "read_file", {"absolute_path": "/w/x"}, 3.1, status="cancelled")])]))
    assert rows(calls_of(res), ["call_id", "server", "tool", "result_text", "is_error"]) == [
        ["p1", "door", "list", "A", False], ["p2", "door", "list", "denied", True],
        ["p3", None, "read_file", None, True]]
    assert [str(t) for t in calls_of(res)["result_ts"]] == ["2026-03-01 10:00:03+00:00", "2026-03-01 10:00:03+00:00",
                                                          "2026-03-01 10:00:03.100000+00:00"]


# ---------------------------------------------------------------------------------------------

def test_a_duplicated_last_line_gives_no_second_row(tmp_path):
    g = gemini("g1", 2, calls=[call("c1", "mcp_door_list", {"path": "a"}, 3, output="A", server="door", tool="list")])
    res = load_gemini(recording(tmp_path, [meta(), g, g]))
    assert rows(res.frame, ["line_no", "kind", "call_id"]) == [[1, "system", None], [3, "model_request", None],
                                                              [3, "tool_call", "c1"]]
    assert res.inputs[0]["superseded"] == 1


# ---------------------------------------------------------------------------------------------

def test_a_cut_last_line_is_pending_and_the_rest_loads(tmp_path):
    p = recording(tmp_path, [meta(), user("u1", 1, "go")], tail='{"id":"g1","timestamp":"2026-03-01T10:00:0')
    res = load_gemini(p)
    assert rows(res.frame, ["line_no", "kind"]) == [[1, "system"], [2, "user_prompt"]]
    assert res.quarantine[["line_no", "kind", "byte_offset"]].values.tolist() == [
        [3, "pending", p.read_bytes().rindex(b"\n") + 1]]


# ---------------------------------------------------------------------------------------------

def test_a_huge_result_is_cut(tmp_path):
    big = "é" * 100_000
    res = load_gemini(recording(tmp_path, [meta(), gemini("g1", 2, calls=[
        call("c1", "mcp_door_read_object", {"path": "a"}, 3, output=big, server="door", tool="read_object")])]))
    assert calls_of(res).iloc[0]["result_text"] == "é" * TEXT_LIMIT + f" …[+{100_000 - TEXT_LIMIT} chars]"


# ---------------------------------------------------------------------------------------------

def test_lone_surrogates_are_replaced(tmp_path):
    lines = [json.dumps(meta()),
             '{"id":"u1","timestamp":"2026-03-01T10:00:01Z","type":"user","content":[{"text":"go \\udc80"}]}',
             '{"id":"g1","timestamp":"2026-03-01T10:00:02Z","type":"gemini","content":[],"toolCalls":[{"id":"c1",'
             '"name":"mcp_door_list","args":{"p\\ud800":"\\udfff"},"status":"success",'
             '"timestamp":"2026-03-01T10:00:03Z"},{"id":"c2","name":"mcp_door_list",'
             '"args":"{\\"p\\":\\"\\\\udc80\\"}","status":"success","timestamp":"2026-03-01T10:00:03Z"}]}']
    res = load_gemini(recording(tmp_path, lines))
    f = res.frame
    assert f.iloc[1]["text"] == "go \ufffd"
    assert calls_of(res)["args_key"].tolist() == ['{"p\ufffd":"\ufffd"}', '{"p":"\ufffd"}']
    assert calls_of(res)["arguments"].tolist() == [{"p\ufffd": "\ufffd"}, {"p": "\ufffd"}]
    f.to_json(date_format="iso")                         # every cell encodes as UTF-8


# ---------------------------------------------------------------------------------------------

def test_records_of_unknown_types_are_kept(tmp_path):
    res = load_gemini(recording(tmp_path, [
        meta(), {"type": "checkpoint_marker", "at": at(1)},                 # a record of no known shape
        {"id": "x1", "timestamp": at(2), "type": "compression", "content": "summary"},   # a new message type
        {"$set": {"memoryScratchpad": {"k": "v"}}}, {"$rewindTo": "x1"},
        {"id": "i1", "timestamp": at(3), "type": "info", "content": "Request cancelled."}]))
    assert rows(res.frame, ["line_no", "kind", "line_type", "text"]) == [
        [1, "system", "session", None], [2, "other", "checkpoint_marker", None],
        [3, "other", "compression", "summary"], [6, "system", "info", "Request cancelled."]]
    assert res.inputs[0]["metadata_updates"] == 1 and res.inputs[0]["rewinds"] == ["x1"]


# ---------------------------------------------------------------------------------------------

def test_json_record_resumed_as_jsonl_and_a_checkpoint_in_one_folder(tmp_path):
    """``/resume`` of a ``.json`` ConversationRecord re-appends every message to ``<name>.jsonl``
    (same ids); ``/chat save`` checkpoints hold Content parts without timestamps."""
    c1 = call("c1", "mcp_door_list", {"path": "a"}, 3, status="executing", server="door", tool="list")
    doc = {**meta(), "messages": [user("u1", 1, "go"), gemini("g1", 2, calls=[c1])]}
    chats = tmp_path / "chats"
    chats.mkdir()
    (chats / f"session-2026-03-01T10-00-{S[:8]}.json").write_text(json.dumps(doc, indent=2))
    write(chats / f"session-2026-03-01T10-00-{S[:8]}.jsonl", [
        meta(), user("u1", 1, "go"), gemini("g1", 2, calls=[c1]), {"$set": {"sessionId": S}},
        gemini("g1", 2, calls=[{**c1, "status": "success", "result": "a.csv"}])])
    (tmp_path / "checkpoint-q3.json").write_text(json.dumps([
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "mcp_door_list", "args": {"path": "a"}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "mcp_door_list", "response": {"output": "a.csv"}}}]}]))
    res = load_gemini(tmp_path)
    assert [i["layout"] for i in res.inputs] == ["json", "jsonl", "json"]
    calls = calls_of(res)
    assert rows(calls, ["transcript_id", "server", "tool", "args_key", "result_text"]) == [
        [S, "door", "list", '{"path":"a"}', "a.csv"], ["checkpoint-q3", "door", "list", '{"path":"a"}', "a.csv"]]
    assert calls["source_file"].iloc[0].endswith(".jsonl") and res.inputs[1]["superseded"] == 1
    STEPS.validate(res.frame)


# ---------------------------------------------------------------------------------------------

def test_a_sub_agent_is_part_of_its_parents_conversation_in_the_join(tmp_path):
    """A Gemini CLI sub-agent calls MCP tools through its parent's connections, so its calls are
    in the parent's door session.  Its recording (``chats/<parent>/<sub>.jsonl``) had named
    itself as its session: the join saw two transcripts for one door session, could assign only
    one, and listed the sub-agent's calls as calls no step claims."""
    sub = "9e8d7c6b-0000-4000-8000-0000000000bb"
    recording(tmp_path, [meta(), user("u1", 1, "go"), gemini("g1", 2, calls=[
        call("c1", "mcp_door_list", {"path": "demo/"}, 3, output="a", server="door", tool="list"),
        call("c2", "codebase_investigator", {"objective": "x"}, 4, output="done")])])
    write(tmp_path / "chats" / S / f"{sub}.jsonl", [meta(sub, kind="subagent"), user("s-u1", 4.1, "x"), gemini(
        "s-g1", 5, calls=[call("s-c1", "mcp_door_read_object", {"path": "demo/a.csv"}, 6, output="r",
                               server="door", tool="read_object"),
                          call("s-c2", "mcp_door_read_object", {"path": "demo/b.csv"}, 7, output="r",
                               server="door", tool="read_object")])])
    steps = load_gemini(tmp_path).frame
    assert rows(steps.drop_duplicates("transcript_id").sort_values("agent_id", na_position="first"),
                ["transcript_id", "client_session_id", "agent_id"]) == [[S, S, None], [sub, S, sub]]
    door = tmp_path / "door" / "analyst" / "door-1.jsonl"
    door.parent.mkdir(parents=True)
    door.write_text("".join(json.dumps({"ts": at(sec + 0.2), "seq": i + 1, "session": "door-1", "agent": "analyst",
                                        "tool": tool, "arguments": args, "decision": "allow", "rule": "r"}) + "\n"
                            for i, (sec, tool, args) in enumerate([(3, "list", {"path": "demo/"}),
                                                                   (6, "read_object", {"path": "demo/a.csv"}),
                                                                   (7, "read_object", {"path": "demo/b.csv"})])))
    res = join_sessions(steps, load_door(door).frame)
    s = res.sessions.iloc[0]
    assert (s["transcript_id"], s["agreed"], s["status"], s["unclaimed_calls"]) == (S, 3, "matched", 0)
    assert res.sub_agents == {sub: S} and res.unmatched_transcripts == []
    assert sorted(res.pairs["transcript_id"].tolist()) == [S, sub, sub]


# ---------------------------------------------------------------------------------------------

def test_timestamps_with_offsets_missing_or_unreadable(tmp_path):
    res = load_gemini(recording(tmp_path, [meta(), gemini("g1", 2, calls=[
        {**call("t1", "mcp_door_list", {}, 0), "timestamp": "2026-03-01T12:00:03.500+02:00"},
        {k: v for k, v in call("t2", "mcp_door_list", {}, 0).items() if k != "timestamp"},
        {**call("t3", "mcp_door_list", {}, 0), "timestamp": "soon"}])]))
    # t1 completed at 10:00:03.5 UTC; it started after its message was recorded (10:00:02)
    assert [str(t) for t in calls_of(res)["result_ts"]] == ["2026-03-01 10:00:03.500000+00:00",
                                                            "2026-03-01 10:00:02+00:00", "NaT"]
    assert [str(t) for t in calls_of(res)["ts"]] == ["2026-03-01 10:00:02+00:00", "2026-03-01 10:00:02+00:00", "NaT"]
    assert any("soon" in n for n in res.inputs[0]["notes"])


# ---------------------------------------------------------------------------------------------

def test_a_server_name_with_an_underscore_is_told_by_a_display_name(tmp_path):
    """``mcp_my_srv_list`` splits as server ``my``, tool ``srv_list`` (Gemini CLI's own parse);
    a record that carries ``"list (my_srv MCP Server)"`` says what it is, for the records and
    checkpoint parts of the load that do not."""
    recording(tmp_path, [meta(), gemini("g1", 2, calls=[
        call("c1", "mcp_my_srv_list", {"p": 1}, 3, server="my_srv", tool="list"),
        call("c2", "mcp_my_srv_list", {"p": 2}, 4)])])
    (tmp_path / "checkpoint-x.json").write_text(json.dumps([
        {"role": "model", "parts": [{"functionCall": {"name": "mcp_my_srv_list", "args": {"p": 3}}}]}]))
    res = load_gemini(tmp_path)
    assert rows(calls_of(res), ["call_id", "server", "tool"]) == [["c1", "my_srv", "list"], ["c2", "my_srv", "list"],
                                                                 [None, "my_srv", "list"]]


# ---------------------------------------------------------------------------------------------

def test_a_message_without_a_string_id_is_quarantined_in_jsonl_as_in_a_conversation_record(tmp_path):
    """A JSONL message whose ``id`` is a number, or absent, had become an ``other`` row with no
    text and no tool call row, and no quarantine row; the ``.json`` reader quarantines it."""
    numeric = {**user("m2", 2, "numeric id prompt"), "id": 2}
    no_id = {k: v for k, v in gemini("g3", 3, "no id", calls=[call("t1", "mcp_door_read", {"p": 1}, 3)]).items()
             if k != "id"}
    path = recording(tmp_path, [meta(), user("m1", 1, "hello"), numeric, no_id,
                                {"$set": {"messages": [user("m1", 1, "hello"), {**user("m5", 5, "x"), "id": None}]}},
                                gemini("g4", 4, "done")])
    res = load_gemini(path)
    f = res.frame
    assert rows(f, ["kind", "message_id", "text"]) == [["system", None, None], ["user_prompt", "m1", "hello"],
                                                       ["model_request", "g4", "done"]]
    assert not f["kind"].eq("other").any() and calls_of(res).empty
    q = res.quarantine
    assert q["source_file"].eq(str(path)).all()
    assert list(zip(q["line_no"], q["error"])) == [(3, "message without a string id"),
                                                   (4, "message without a string id"),
                                                   (5, "message without a string id ($set.messages[1])")]
    assert json.loads(q["raw"].iloc[0])["content"] == [{"text": "numeric id prompt"}]
    assert "mcp_door_read" in q["raw"].iloc[1]
    # the same messages in a ConversationRecord document: the same rows, the same reason
    doc = tmp_path / "session-2026-03-01T10-00-5a1b2c3d.json"
    doc.write_text(json.dumps({**meta(), "messages": [user("m1", 1, "hello"), numeric, no_id, gemini("g4", 4, "done")]},
                              indent=1))
    res2 = load_gemini(doc)
    assert rows(res2.frame, ["kind", "message_id"]) == [["system", None], ["user_prompt", "m1"],
                                                        ["model_request", "g4"]]
    assert res2.quarantine["error"].tolist() == ["message without a string id"] * 2


def test_a_timestamp_written_null_or_as_a_number_is_noted_as_claude_codes_is(tmp_path):
    """A ``timestamp`` of ``null``, a number or ``""`` had given NaT with no note (it was made
    None before the unreadable-time check); one not written at all is no note."""
    no_ts = {k: v for k, v in user("m5", 5, "e").items() if k != "timestamp"}
    path = recording(tmp_path, [meta(), {**user("m1", 1, "a"), "timestamp": None},
                                {**user("m2", 2, "b"), "timestamp": 1772359200000}, {**user("m3", 3, "c"), "timestamp": ""},
                                user("m4", 4, "d"), no_ts])
    res = load_gemini(path)
    f = res.frame[res.frame["kind"] == "user_prompt"]
    assert f["message_id"].tolist() == ["m1", "m2", "m3", "m4", "m5"]
    assert [str(t) for t in f["ts"]] == ["NaT", "NaT", "NaT", "2026-03-01 10:00:04+00:00", "NaT"]
    assert res.inputs[0]["notes"] == ["3 lines with a timestamp that is empty or not text, kept with the time "
                                      "unknown: line 2 (null), line 3 (1772359200000), line 4 ('')"]


def test_token_counts_written_as_digits_are_read_and_others_are_noted(tmp_path):
    """``tokens: {"input": "10", "output": 5.5}`` had given NA for both with nothing said."""
    path = recording(tmp_path, [meta(), user("u1", 1, "go"),
                                gemini("g1", 2, "a", tokens={"input": "10", "output": 5.5}),
                                gemini("g2", 3, "b", tokens={"input": 40.0, "output": " 7 "}),
                                gemini("g3", 4, "c", tokens={"input": True, "output": "99999999999999999999"}),
                                gemini("g4", 5, "d", tokens={"input": None, "cached": "x"}),
                                gemini("g5", 6, "e", tokens=12)])
    res = load_gemini(path)
    f = res.frame[res.frame["kind"] == "model_request"]
    assert rows(f, ["message_id", "input_tokens", "output_tokens"]) == [
        ["g1", 10, None], ["g2", 40, 7], ["g3", None, None], ["g4", None, None], ["g5", None, None]]
    assert res.inputs[0]["notes"] == [
        "line 3: message g1 tokens.output is not a whole number (5.5): output_tokens left NA",
        "line 5: message g3 tokens.input is not a whole number (true): input_tokens left NA",
        "line 5: message g3 tokens.output is beyond what a 64-bit integer holds ('99999999999999999999'): "
        "output_tokens left NA",
        "line 7: message g5 tokens is not an object (12): input_tokens and output_tokens left NA"]
    assert res.quarantine.empty


def test_a_tool_call_timestamp_written_null_or_as_a_number_is_noted_and_the_messages_time_used(tmp_path):
    """A tool call's ``timestamp`` of ``null``, a number or ``""`` had silently become the
    message's time; one not written at all takes it with no note, as the docstring says."""
    no_ts = {k: v for k, v in call("c5", "read_file", {}, 0).items() if k != "timestamp"}
    path = recording(tmp_path, [meta(), user("u1", 1, "go"), gemini("g1", 2, "reading", [
        {**call("c1", "read_file", {}, 0), "timestamp": None},
        {**call("c2", "read_file", {}, 0), "timestamp": 1772359200000},
        {**call("c3", "read_file", {}, 0), "timestamp": ""},
        call("c4", "read_file", {}, 5), no_ts])])
    res = load_gemini(path)
    t = calls_of(res)
    assert t["call_id"].tolist() == ["c1", "c2", "c3", "c4", "c5"]
    assert [str(x) for x in t["ts"]] == ["2026-03-01 10:00:02+00:00"] * 5  # (c4 started after its message)
    assert [str(x) for x in t["result_ts"]] == ["2026-03-01 10:00:02+00:00"] * 3 + ["2026-03-01 10:00:05+00:00",
                                                                                     "2026-03-01 10:00:02+00:00"]
    assert res.inputs[0]["notes"] == [
        "3 tool calls with a timestamp that is empty or not text, read as the message's time: "
        "line 3 (null), line 3 (1772359200000), line 3 ('')"]


# ---------------------------------------------------------------------------------------------

def test_a_call_longer_than_the_join_window_is_timed_from_its_start_and_meets_its_door_call(tmp_path):
    """A ``ToolCallRecord.timestamp`` is written when the call completed (gemini-cli
    ``recordCompletedToolCalls``); the door logs when the call started.  A 93-s read had its
    ``ts`` at its end and met no door call within the 60-s window.  The record has no start
    time; the latest time its message recorded before it is the nearest one before its start:

    * c1, c2 (one batch, 1 ms apart) — asked for in g1's answer, recorded at 2 s: from 2 s;
    * c3 — a later batch appended to g1 (a tool-only answer without thoughts): from the end of
      the batch before it (c2's record, 95.001 s);
    * c4 — a new message gemini-cli wrote as it recorded the call (a tool-only answer with
      thoughts; the message's time is after the call's): from its last thought, 300.5 s;
    * c5 — a new message without thoughts after a prompt: nothing before it, its own time.

    ``result_ts`` stays when each call completed."""
    long_read = dict(server="door", tool="read_object", output="r")
    recording(tmp_path, [meta(), user("u1", 1, "go"), gemini("g1", 2, "reading", [
        call("c1", "mcp_door_read_object", {"path": "demo/big.csv"}, 95.0, **long_read),
        call("c2", "mcp_door_read_object", {"path": "demo/small.csv"}, 95.001, **long_read),
        call("c3", "mcp_door_read_object", {"path": "demo/huge.csv"}, 200.0, **long_read)],
        thoughts=[{"subject": "Plan", "description": "read both", "timestamp": at(1.5)}]),
        gemini("g2", 400.001, calls=[call("c4", "mcp_door_read_object", {"path": "demo/x.csv"}, 400.0, **long_read)],
               thoughts=[{"subject": "Next", "description": "x", "timestamp": at(300.2)},
                         {"subject": "Next", "description": "x", "timestamp": at(300.5)}]),
        user("u2", 450, "and y"),
        gemini("g3", 520.001, calls=[call("c5", "mcp_door_read_object", {"path": "demo/y.csv"}, 520.0, **long_read)])])
    steps = load_gemini(tmp_path).frame
    t = steps[steps["kind"] == "tool_call"]
    assert [str(x) for x in t["ts"]] == ["2026-03-01 10:00:02+00:00", "2026-03-01 10:00:02+00:00",
                                         "2026-03-01 10:01:35.001000+00:00", "2026-03-01 10:05:00.500000+00:00",
                                         "2026-03-01 10:08:40+00:00"]
    assert [str(x) for x in t["result_ts"]] == ["2026-03-01 10:01:35+00:00", "2026-03-01 10:01:35.001000+00:00",
                                                "2026-03-01 10:03:20+00:00", "2026-03-01 10:06:40+00:00",
                                                "2026-03-01 10:08:40+00:00"]
    door = tmp_path / "door" / "analyst" / "door-1.jsonl"
    door.parent.mkdir(parents=True)
    door.write_text("".join(json.dumps({"ts": at(sec), "seq": i + 1, "session": "door-1", "agent": "analyst",
                                        "tool": "read_object", "arguments": {"path": p}, "decision": "allow",
                                        "rule": "r"}) + "\n"
                            for i, (sec, p) in enumerate([(2.4, "demo/big.csv"), (2.4, "demo/small.csv"),
                                                          (97.0, "demo/huge.csv"), (301.0, "demo/x.csv"),
                                                          (519.0, "demo/y.csv")])))
    res = join_sessions(steps, load_door(door).frame)
    s = res.sessions.iloc[0]
    assert (s["transcript_id"], s["agreed"], s["status"], s["unclaimed_calls"]) == (S, 5, "matched", 0)


def test_a_call_timed_from_its_message_still_has_its_own_zoneless_time_noted(tmp_path):
    """A call's own ``timestamp`` without a time zone, read as UTC, was said in the file's notes
    while it was the call's ``ts``; timed from its message (a time with a zone) it stayed the
    call's ``result_ts`` with no word of the zone it lacked.  It is noted, its line once."""
    lr = dict(server="door", tool="read_object", output="r")
    own = "2026-03-01T10:00:05.000"
    path = recording(tmp_path, [meta(), user("u1", 1, "go"), gemini("g1", 2, "reading", [
        {**call("c1", "mcp_door_read_object", {"path": "demo/a.csv"}, 0, **lr), "timestamp": own}]),
        gemini("g2", 9, "next", [call("c2", "mcp_door_read_object", {"path": "demo/b.csv"}, 12, **lr)])])
    res = load_gemini(path)
    t = calls_of(res)
    assert [str(x) for x in t["ts"]] == ["2026-03-01 10:00:02+00:00", "2026-03-01 10:00:09+00:00"]
    assert [str(x) for x in t["result_ts"]] == ["2026-03-01 10:00:05+00:00", "2026-03-01 10:00:12+00:00"]
    assert res.inputs[0]["notes"] == [
        f"a time without a time zone on line 3 ('{own}'): read as UTC; RFC 3339 requires an offset — "
        "if Gemini CLI wrote local time, these lines are off by the zone's offset"]
