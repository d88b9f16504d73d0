"""Codex CLI rollouts against the shapes the real clients write: one scenario per way a rollout
can differ from the tidy case, each with the rows it must give.

The rollouts are written here, modelled on codex-rs ``RolloutLine`` / ``ResponseItem`` /
``EventMsg`` (``codex-rs/protocol/src/protocol.rs``, ``models.rs``; 0.39 – 0.150):
``function_call.arguments`` is a JSON *string*; ``function_call_output.output`` a string, a
list of content items, or (before 0.3x) ``{"content", "success"}``; MCP tools are
``mcp__<server>__<tool>``, ``<server>__<tool>`` (before mid-2025) or, since 2026, a bare name
with ``namespace: "mcp__<server>"``; a resumed thread goes on in ``rollout-<time>-<thread>_<segment>.jsonl``
(0.150+).  ``../shared/real/codex`` shows the envelope (``tests/real/test_agents_real.py``).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest
from _jsonl_fixture import write_jsonl as write

from replaybook._text import TEXT_LIMIT
from replaybook.canonical import canonical_args
from replaybook.frames import QUARANTINE, STEPS
from replaybook.loading import load_frame
from replaybook.sources.codex import load_codex
from replaybook.sources.door import load_door

SID = "019a0000-0000-7000-8000-0000000000aa"
COLS = ["seq", "line_no", "kind", "line_type", "tool_raw", "server", "tool", "call_id", "args_key"]


def env(ts, typ, payload) -> dict:
    return {"timestamp": ts, "type": typ, "payload": payload}


def meta(sid=SID, ts="2026-03-01T10:00:00.000Z", **extra) -> dict:
    return env(ts, "session_meta", {"id": sid, "timestamp": ts, "cwd": "/w", "originator": "codex_cli_rs",
                                    "cli_version": "0.63.0", "source": "cli", **extra})


def fc(ts, name, arguments, call_id, **extra) -> dict:
    return env(ts, "response_item", {"type": "function_call", "name": name, "arguments": arguments,
                                     "call_id": call_id, **extra})


def out(ts, call_id, output) -> dict:
    return env(ts, "response_item", {"type": "function_call_output", "call_id": call_id, "output": output})


def rollout(tmp_path: Path, lines: list, tail: str = "", sid: str = SID) -> Path:
    return write(tmp_path / f"rollout-2026-03-01T10-00-00-{sid}.jsonl", lines, tail)


def rows(frame: pd.DataFrame, cols=COLS) -> list[list]:
    return [[None if pd.isna(v) else v for v in r] for r in frame[cols].itertuples(index=False)]


def door_key(tmp_path: Path, tool: str, arguments: dict) -> str:
    """The ``args_key`` the door's own loader gives a call it logged with ``arguments``."""
    p = tmp_path / "door" / "analyst" / "s.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps({"ts": "2026-03-01T10:00:00.500Z", "seq": 1, "session": "s", "agent": "analyst",
                             "tool": tool, "arguments": arguments, "decision": "allow", "rule": "r"}) + "\n")
    return load_door(p).frame["args_key"].iloc[0]


# ---------------------------------------------------------------------------------------------

def test_arguments_string_and_object_give_the_doors_key(tmp_path):
    """The arguments string (keys unordered, spaces, 10.0, a decomposed é as a \\u escape) and an
    arguments object (hostile or hand-edited rollouts) both canonicalise to the key the door
    gives the arguments it received."""
    args_text = '{ "limit": 10.0, "path": "demo/cafe\\u0301.csv" }'
    res = load_codex(rollout(tmp_path, [
        meta(),
        fc("2026-03-01T10:00:01.000Z", "mcp__door__read_object", args_text, "c1"),
        fc("2026-03-01T10:00:02.000Z", "mcp__door__read_object", {"path": "demo/café.csv", "limit": 10}, "c2"),
    ]))
    key = door_key(tmp_path, "read_object", {"path": "demo/café.csv", "limit": 10})
    assert key == '{"limit":10,"path":"demo/café.csv"}'
    assert rows(res.frame) == [
        [0, 1, "system", "session_meta", None, None, None, None, None],
        [1, 2, "tool_call", "response_item/function_call", "mcp__door__read_object", "door", "read_object", "c1", key],
        [2, 3, "tool_call", "response_item/function_call", "mcp__door__read_object", "door", "read_object", "c2", key],
    ]
    assert res.frame["arguments"].iloc[1] == {"limit": 10.0, "path": "demo/cafe\u0301.csv"}  # as sent
    assert res.quarantine.empty and res.inputs[0]["notes"] == []


# ---------------------------------------------------------------------------------------------

def test_arguments_that_are_not_json_are_kept_as_text_not_quarantined(tmp_path):
    res = load_codex(rollout(tmp_path, [
        meta(),
        fc("2026-03-01T10:00:01.000Z", "mcp__door__read_object", '{"path": demo/a.csv', "c1"),
        out("2026-03-01T10:00:01.100Z", "c1", "failed to parse function arguments: expected value at line 1"),
    ]))
    f = res.frame
    assert rows(f) == [
        [0, 1, "system", "session_meta", None, None, None, None, None],
        [1, 2, "tool_call", "response_item/function_call", "mcp__door__read_object", "door", "read_object", "c1", None],
        [2, 3, "tool_result", "response_item/function_call_output", "mcp__door__read_object", "door", "read_object",
         "c1", None],
    ]
    call = f.iloc[1]
    assert call["arguments"] is None and call["text"] == '{"path": demo/a.csv'
    assert call["result_text"].startswith("failed to parse function arguments")
    assert res.quarantine.empty
    assert res.inputs[0]["notes"] == ["line 2: function_call arguments are not JSON (or nest too deep); kept as "
                                      "text, args_key left NA: the call cannot agree by arguments"]


# ---------------------------------------------------------------------------------------------

def test_an_output_written_before_its_call_still_pairs(tmp_path):
    res = load_codex(rollout(tmp_path, [
        meta(),
        out("2026-03-01T10:00:02.000Z", "c1", "region,revenue\nEU,100\n"),
        fc("2026-03-01T10:00:01.000Z", "mcp__door__read_object", '{"path":"a"}', "c1"),
    ]))
    f = res.frame
    assert rows(f, ["seq", "line_no", "kind", "tool", "call_id", "args_key", "result_text"]) == [
        [0, 1, "system", None, None, None, None],
        [1, 2, "tool_result", "read_object", "c1", None, None],
        [2, 3, "tool_call", "read_object", "c1", '{"path":"a"}', "region,revenue\nEU,100\n"],
    ]
    assert str(f.iloc[2]["result_ts"]) == "2026-03-01 10:00:02+00:00"


# ---------------------------------------------------------------------------------------------

def test_parallel_calls_pair_by_call_id_whatever_the_order_of_outputs(tmp_path):
    res = load_codex(rollout(tmp_path, [
        meta(),
        fc("2026-03-01T10:00:01.000Z", "mcp__door__list", '{"path":"a"}', "p1"),
        fc("2026-03-01T10:00:01.001Z", "mcp__door__list", '{"path":"b"}', "p2"),
        fc("2026-03-01T10:00:01.002Z", "shell", '{"command":["ls"]}', "p3"),
        out("2026-03-01T10:00:01.500Z", "p3", [{"type": "input_text", "text": "x"}, {"type": "input_image",
                                                                                   "image_url": "data:,"}]),
        out("2026-03-01T10:00:01.600Z", "p2", "B"),
        out("2026-03-01T10:00:01.700Z", "p1", {"content": "denied", "success": False}),  # pre-0.3x output
        env("2026-03-01T10:00:01.003Z", "response_item", {
            "type": "local_shell_call", "call_id": "p4", "status": "completed",
            "action": {"type": "exec", "command": ["cat", "a"], "timeout_ms": None, "working_directory": None,
                       "env": None, "user": None}}),
        out("2026-03-01T10:00:01.800Z", "p4", "a-content"),
    ]))
    calls = res.frame[res.frame["kind"] == "tool_call"]
    assert rows(calls, ["call_id", "tool", "server", "result_text", "is_error", "images"]) == [
        ["p1", "list", "door", "denied", True, 0],
        ["p2", "list", "door", "B", None, 0],
        ["p3", "shell", None, "x", None, 1],
        ["p4", "local_shell", None, "a-content", None, 0],
    ]
    assert calls["args_key"].iloc[3] == ('{"command":["cat","a"],"env":null,"timeout_ms":null,"type":"exec",'
                                         '"user":null,"working_directory":null}')
    assert [str(t) for t in calls["result_ts"]] == ["2026-03-01 10:00:01.700000+00:00",
                                                    "2026-03-01 10:00:01.600000+00:00",
                                                    "2026-03-01 10:00:01.500000+00:00",
                                                    "2026-03-01 10:00:01.800000+00:00"]
    results = res.frame[res.frame["kind"] == "tool_result"]
    assert results["call_id"].tolist() == ["p3", "p2", "p1", "p4"]
    assert results["tool"].tolist() == ["shell", "list", "list", "local_shell"]


# ---------------------------------------------------------------------------------------------

def test_a_line_written_twice_counts_once_and_a_reused_call_id_is_a_conflict(tmp_path):
    """A duplicated last line had given two tool_call rows for one call: the join then needed two
    door calls and showed the second as a door-bound call the door never saw.  Another call under
    the id while the first is not answered yet is two calls open under one id: a conflict."""
    call = fc("2026-03-01T10:00:01.000Z", "mcp__door__read_object", '{"path":"a"}', "c1")
    other = fc("2026-03-01T10:00:01.200Z", "mcp__door__read_object", '{"path":"secrets"}', "c1")
    result = out("2026-03-01T10:00:01.500Z", "c1", "A")
    restamped = fc("2026-03-01T11:00:00.000Z", "mcp__door__read_object", '{"path":"a"}', "c1")
    p = rollout(tmp_path, [meta(), call, other, result, result, restamped, call])
    res = load_codex(p)
    f = res.frame
    assert rows(f, ["seq", "line_no", "kind", "call_id", "args_key", "result_text"]) == [
        [0, 1, "system", None, None, None],
        [1, 2, "tool_call", "c1", '{"path":"a"}', "A"],
        [2, 4, "tool_result", "c1", None, None],
    ]
    assert res.inputs[0]["duplicates"] == 3          # line 5 (the result again), 6 (re-stamped), 7 (copied)
    q = res.quarantine
    QUARANTINE.validate(q)
    assert q[["line_no", "kind", "loader"]].values.tolist() == [[3, "conflict", "codex"]]
    assert q.iloc[0]["byte_offset"] == sum(len(x) for x in p.read_bytes().split(b"\n")[:2]) + 2
    assert q.iloc[0]["error"] == ("repeats the call_id 'c1' of line 2, not answered yet, with different content "
                                  "(arguments differs); the first is kept, this one set aside")


def test_a_call_id_a_provider_numbers_per_answer_is_a_call_in_each_turn(tmp_path):
    """Providers that number each answer's calls from call_0 (OpenAI-compatible layers over local
    models): the turn-2 read had been set aside as a conflict with the turn-1 list, and its output
    (the secret) shown as a second output of the list.  A call under an id whose earlier call was
    answered is a call of its own, and each output answers the call before it."""
    p = rollout(tmp_path, [
        meta(),
        env("2026-03-01T10:00:01Z", "event_msg", {"type": "user_message", "message": "look around"}),
        fc("2026-03-01T10:00:02Z", "mcp__door__list", '{"path":"/"}', "call_0"),
        out("2026-03-01T10:00:03Z", "call_0", "a.txt"),
        env("2026-03-01T10:00:04Z", "event_msg", {"type": "user_message", "message": "read it"}),
        fc("2026-03-01T10:00:05Z", "mcp__door__read", '{"path":"a.txt"}', "call_0"),
        out("2026-03-01T10:00:06Z", "call_0", "SECRET"),
        fc("2026-03-01T10:00:07Z", "mcp__door__write", '{"path":"b.txt"}', "call_0"),
        out("2026-03-01T10:00:08Z", "call_0", "ok"),
        fc("2026-03-01T10:00:09Z", "mcp__door__write", '{"path":"c.txt"}', "call_0"),
        out("2026-03-01T10:00:10Z", "call_0", "ok"),         # the same output, for another call
    ])
    res = load_codex(p)
    f = res.frame
    assert rows(f[f["call_id"].notna()], ["line_no", "kind", "tool", "args_key", "result_text", "text"]) == [
        [3, "tool_call", "list", '{"path":"/"}', "a.txt", None],
        [4, "tool_result", "list", None, None, "a.txt"],
        [6, "tool_call", "read", '{"path":"a.txt"}', "SECRET", None],
        [7, "tool_result", "read", None, None, "SECRET"],
        [8, "tool_call", "write", '{"path":"b.txt"}', "ok", None],
        [9, "tool_result", "write", None, None, "ok"],
        [10, "tool_call", "write", '{"path":"c.txt"}', "ok", None],
        [11, "tool_result", "write", None, None, "ok"],
    ]
    assert f.loc[f["kind"] == "tool_call", "result_ts"].astype(str).tolist() == [
        "2026-03-01 10:00:03+00:00", "2026-03-01 10:00:06+00:00", "2026-03-01 10:00:08+00:00",
        "2026-03-01 10:00:10+00:00"]
    assert res.inputs[0]["duplicates"] == 0 and len(res.quarantine) == 0


def test_a_history_re_appended_under_new_times_counts_once_with_call_ids_numbered_per_answer(tmp_path):
    """A resumed session re-appends its history with new timestamps: each call and output of it
    is the call and output read before (counted once), not a new call, even where one id named
    two calls; the call left without an output when the session stopped gets the next output."""
    turn1 = [fc("2026-03-01T10:00:02Z", "mcp__door__list", '{"path":"/"}', "call_0"),
             out("2026-03-01T10:00:03Z", "call_0", "a.txt")]
    read = fc("2026-03-01T10:00:05Z", "mcp__door__read", '{"path":"a.txt"}', "call_0")
    again = [{**x, "timestamp": "2026-03-01T11:00:00Z"} for x in [*turn1, read]]
    res = load_codex(rollout(tmp_path, [
        meta(), *turn1, read,                                  # stopped before the read's output
        *again,
        out("2026-03-01T11:00:01Z", "call_0", "SECRET"),
    ]))
    f = res.frame
    assert rows(f[f["call_id"].notna()], ["line_no", "kind", "tool", "args_key", "result_text", "text"]) == [
        [2, "tool_call", "list", '{"path":"/"}', "a.txt", None],
        [3, "tool_result", "list", None, None, "a.txt"],
        [4, "tool_call", "read", '{"path":"a.txt"}', "SECRET", None],
        [8, "tool_result", "read", None, None, "SECRET"],
    ]
    assert str(f.loc[f["line_no"] == 4, "result_ts"].iloc[0]) == "2026-03-01 11:00:01+00:00"
    assert res.inputs[0]["duplicates"] == 3 and len(res.quarantine) == 0


def test_mcp_events_of_a_call_id_numbered_per_answer_belong_to_the_call_before_them(tmp_path):
    """The begin and end events of each turn's call_0 name that turn's call: the turn-2 call had
    been set aside and the events of both turns folded into the turn-1 call.  A call recorded
    only by its events (begin and end, or the end alone) is likewise a call each turn."""
    def begin(ts, cid, tool, args):
        return env(ts, "event_msg", {"type": "mcp_tool_call_begin", "call_id": cid,
                                     "invocation": {"server": "door", "tool": tool, "arguments": args}})

    def end(ts, cid, tool, args, result):
        return env(ts, "event_msg", {"type": "mcp_tool_call_end", "call_id": cid, "duration": "1s",
                                     "invocation": {"server": "door", "tool": tool, "arguments": args},
                                     "result": result})

    ok = lambda text, err=False: {"Ok": {"content": [{"type": "text", "text": text}], "isError": err}}  # noqa: E731
    res = load_codex(rollout(tmp_path, [
        meta(),
        fc("2026-03-01T10:00:01Z", "list_h1", '{"path":"/"}', "call_0", namespace="mcp__door"),
        begin("2026-03-01T10:00:01.1Z", "call_0", "list", {"path": "/"}),
        end("2026-03-01T10:00:01.2Z", "call_0", "list", {"path": "/"}, ok("a.txt")),
        out("2026-03-01T10:00:01.3Z", "call_0", json.dumps([{"type": "text", "text": "a.txt"}])),
        fc("2026-03-01T10:00:02Z", "read_h2", '{"path":"a.txt"}', "call_0", namespace="mcp__door"),
        begin("2026-03-01T10:00:02.1Z", "call_0", "read", {"path": "a.txt"}),
        end("2026-03-01T10:00:02.2Z", "call_0", "read", {"path": "a.txt"}, ok("denied", True)),
        out("2026-03-01T10:00:02.3Z", "call_0", json.dumps([{"type": "text", "text": "denied"}])),
        begin("2026-03-01T10:00:03.1Z", "call_1", "list", {"path": "/"}),
        end("2026-03-01T10:00:03.2Z", "call_1", "list", {"path": "/"}, ok("a.txt")),
        begin("2026-03-01T10:00:04.1Z", "call_1", "read", {"path": "b.txt"}),
        end("2026-03-01T10:00:04.2Z", "call_1", "read", {"path": "b.txt"}, ok("B")),
        end("2026-03-01T10:00:06Z", "call_2", "list", {"path": "/"}, ok("a.txt")),
        end("2026-03-01T10:00:08Z", "call_2", "read", {"path": "c.txt"}, {"Err": "no such file"}),
    ]))
    f = res.frame
    calls = f[f["kind"] == "tool_call"]
    assert rows(calls, ["line_no", "call_id", "tool", "args_key", "result_text", "is_error"]) == [
        [2, "call_0", "list", '{"path":"/"}', "a.txt", False],
        [6, "call_0", "read", '{"path":"a.txt"}', "denied", True],
        [10, "call_1", "list", '{"path":"/"}', "a.txt", False],
        [12, "call_1", "read", '{"path":"b.txt"}', "B", False],
        [14, "call_2", "list", '{"path":"/"}', "a.txt", False],
        [15, "call_2", "read", '{"path":"c.txt"}', "no such file", True],
    ]
    assert [str(t) for t in calls["result_ts"]] == [
        "2026-03-01 10:00:01.300000+00:00", "2026-03-01 10:00:02.300000+00:00", "2026-03-01 10:00:03.200000+00:00",
        "2026-03-01 10:00:04.200000+00:00", "2026-03-01 10:00:06+00:00", "2026-03-01 10:00:08+00:00"]
    assert rows(f[f["kind"] == "tool_result"], ["line_no", "call_id", "tool", "text"]) == [
        [5, "call_0", "list", "a.txt"], [9, "call_0", "read", "denied"], [11, "call_1", "list", "a.txt"],
        [13, "call_1", "read", "B"]]
    assert len(res.quarantine) == 0 and res.inputs[0]["duplicates"] == 0


# ---------------------------------------------------------------------------------------------

def test_a_cut_last_line_is_pending_and_the_rest_loads(tmp_path):
    p = rollout(tmp_path, [meta(), fc("2026-03-01T10:00:01.000Z", "mcp__door__list", '{"path":"a"}', "c1")],
                tail='{"timestamp":"2026-03-01T10:00:02.000Z","type":"response_item","payload":{"type":"func')
    res = load_codex(p)
    assert rows(res.frame, ["line_no", "kind", "call_id"]) == [[1, "system", None], [2, "tool_call", "c1"]]
    assert res.quarantine[["line_no", "kind", "byte_offset"]].values.tolist() == [
        [3, "pending", p.read_bytes().rindex(b"\n") + 1]]


# ---------------------------------------------------------------------------------------------

def test_a_huge_output_is_cut_and_its_size_kept(tmp_path):
    big = "é" * 300_000                                   # 600,000 bytes of UTF-8
    res = load_codex(rollout(tmp_path, [
        meta(), fc("2026-03-01T10:00:01.000Z", "exec_command", '{"cmd":"cat big"}', "c1"),
        out("2026-03-01T10:00:02.000Z", "c1", big)]))
    f = res.frame
    call, result = f.iloc[1], f.iloc[2]
    expected = "é" * TEXT_LIMIT + f" …[+{300_000 - TEXT_LIMIT} chars]"
    assert result["text"] == expected and result["text_bytes"] == 600_000
    assert call["result_text"] == expected


# ---------------------------------------------------------------------------------------------

def test_lone_surrogates_are_replaced_everywhere(tmp_path):
    # the arguments string holds a \udc80 escape; so do the output and the user's message
    lines = [json.dumps(meta()),
             '{"timestamp":"2026-03-01T10:00:01Z","type":"event_msg","payload":{"type":"user_message",'
             '"message":"read \\udc80 now"}}',
             '{"timestamp":"2026-03-01T10:00:02Z","type":"response_item","payload":{"type":"function_call",'
             '"name":"mcp__door__read_object","arguments":"{\\"path\\":\\"a\\\\udc80b\\"}","call_id":"c1"}}',
             '{"timestamp":"2026-03-01T10:00:03Z","type":"response_item","payload":{"type":'
             '"function_call_output","call_id":"c1","output":"bad \\ud800 byte"}}']
    res = load_codex(rollout(tmp_path, lines))
    f = res.frame
    assert f.iloc[1]["text"] == "read \ufffd now"
    assert f.iloc[2]["args_key"] == '{"path":"a\ufffdb"}'
    assert f.iloc[2]["result_text"] == "bad \ufffd byte"
    f.to_json(date_format="iso")                         # every cell encodes as UTF-8
    assert res.quarantine.empty


# ---------------------------------------------------------------------------------------------

def test_records_of_unknown_types_are_kept_as_other(tmp_path):
    res = load_codex(rollout(tmp_path, [
        meta(),
        env("2026-03-01T10:00:01Z", "rollout_reference", {"segment_id": "s"}),          # an envelope type
        env("2026-03-01T10:00:02Z", "response_item", {"type": "agent_message", "author": "a", "recipient": "b",
                                                      "content": []}),               # an item type
        env("2026-03-01T10:00:03Z", "event_msg", {"type": "exec_command_end", "exit_code": 0}),  # an event
        env("2026-03-01T10:00:04Z", "response_item", {"type": "ghost_snapshot", "ghost_commit": {}}),
        {"type": "mystery", "x": 1},                                                 # no envelope at all
    ]))
    assert rows(res.frame, ["line_no", "kind", "line_type"]) == [
        [1, "system", "session_meta"], [2, "other", "rollout_reference"],
        [3, "other", "response_item/agent_message"], [4, "other", "event_msg/exec_command_end"],
        [5, "other", "response_item/ghost_snapshot"], [6, "other", "mystery"]]
    assert res.quarantine.empty


# ---------------------------------------------------------------------------------------------

def test_mcp_names_of_every_generation(tmp_path):
    res = load_codex(rollout(tmp_path, [
        meta(),
        fc("2026-03-01T10:00:01Z", "door__read_object", "{}", "n1"),                  # before mid-2025
        fc("2026-03-01T10:00:02Z", "mcp__door__read_object", "{}", "n2"),             # 0.3x – 0.1xx
        fc("2026-03-01T10:00:03Z", "read_object", "{}", "n3", namespace="mcp__door"),  # 2026
        fc("2026-03-01T10:00:04Z", "read_object", "{}", "n4", namespace="mcp__door__"),
        fc("2026-03-01T10:00:05Z", "export__csv", "{}", "n5", namespace="mcp__door"),  # a tool name with __
        # a name Codex sanitised and hashed: its MCP events say what it was
        fc("2026-03-01T10:00:06Z", "mcp__my_srv__read_object_1a2b3c4d5e6f", "{}", "n6"),
        env("2026-03-01T10:00:06.001Z", "event_msg", {"type": "mcp_tool_call_begin", "call_id": "n6",
                                                      "invocation": {"server": "my.srv", "tool": "read.object",
                                                                     "arguments": {}}}),
    ]))
    calls = res.frame[res.frame["kind"] == "tool_call"]
    assert rows(calls, ["call_id", "tool_raw", "server", "tool"]) == [
        ["n1", "door__read_object", "door", "read_object"],
        ["n2", "mcp__door__read_object", "door", "read_object"],
        ["n3", "mcp__door__read_object", "door", "read_object"],
        ["n4", "mcp__door__read_object", "door", "read_object"],
        ["n5", "mcp__door__export__csv", "door", "export__csv"],
        ["n6", "mcp__my_srv__read_object_1a2b3c4d5e6f", "my.srv", "read.object"],
    ]


# ---------------------------------------------------------------------------------------------

def test_mcp_results_written_as_json_text_are_read_like_tool_result_blocks(tmp_path):
    """An MCP tool's ``function_call_output.output`` is the result as JSON text: the whole
    ``CallToolResult`` (codex-rs from May 2025), its ``content`` list (since autumn 2025), or
    ``err: "…"`` for a failed call; each gives the text blocks, the image count and the error flag."""
    ctr = {"content": [{"type": "text", "text": "region,revenue"}, {"type": "text", "text": "EU,100"},
                       {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}], "isError": False}
    denied = {"content": [{"type": "text", "text": "access denied by rule no-secrets"}], "isError": True}
    big = "é" * (TEXT_LIMIT + 10)
    res = load_codex(rollout(tmp_path, [
        meta(),
        fc("2026-03-01T10:00:01Z", "mcp__door__read_object", '{"path":"a"}', "m1"),
        out("2026-03-01T10:00:02Z", "m1", json.dumps(ctr)),
        fc("2026-03-01T10:00:03Z", "mcp__door__read_object", '{"path":"secret"}', "m2"),
        out("2026-03-01T10:00:04Z", "m2", json.dumps(denied)),
        fc("2026-03-01T10:00:05Z", "read_object", '{"path":"b"}', "m3", namespace="mcp__door"),
        out("2026-03-01T10:00:06Z", "m3", json.dumps([{"type": "text", "text": big}])),
        fc("2026-03-01T10:00:07Z", "mcp__door__list", '{"path":"c"}', "m4"),
        out("2026-03-01T10:00:08Z", "m4", 'err: "tool call failed: timed out after 60s \\"c\\""'),
        fc("2026-03-01T10:00:09Z", "mcp__door__stat", '{"path":"d"}', "m5"),
        out("2026-03-01T10:00:10Z", "m5", '{"status":"ok"}'),                 # structuredContent: as written
        fc("2026-03-01T10:00:11Z", "exec_command", '{"cmd":"cat r.json"}', "m6"),
        out("2026-03-01T10:00:12Z", "m6", json.dumps(denied)),                # a shell printing JSON
    ]))
    f = res.frame
    results = f[f["kind"] == "tool_result"]
    assert rows(results, ["call_id", "text", "images", "is_error", "text_bytes"]) == [
        ["m1", "region,revenue\nEU,100", 1, False, 21],
        ["m2", "access denied by rule no-secrets", 0, True, 32],
        ["m3", big[:TEXT_LIMIT] + " …[+10 chars]", 0, None, 2 * (TEXT_LIMIT + 10)],
        ["m4", 'tool call failed: timed out after 60s "c"', 0, True, 41],
        ["m5", '{"status":"ok"}', 0, None, 15],
        ["m6", json.dumps(denied), 0, None, len(json.dumps(denied))],
    ]
    calls = f[f["kind"] == "tool_call"]
    assert rows(calls, ["call_id", "server", "tool", "result_text", "images", "is_error"]) == [
        ["m1", "door", "read_object", "region,revenue\nEU,100", 1, False],
        ["m2", "door", "read_object", "access denied by rule no-secrets", 0, True],
        ["m3", "door", "read_object", big[:TEXT_LIMIT] + " …[+10 chars]", 0, None],
        ["m4", "door", "list", 'tool call failed: timed out after 60s "c"', 0, True],
        ["m5", "door", "stat", '{"status":"ok"}', 0, None],
        ["m6", None, "exec_command", json.dumps(denied), 0, None],
    ]
    assert [str(t) for t in calls["result_ts"]] == [f"2026-03-01 10:00:{s:02d}+00:00" for s in (2, 4, 6, 8, 10, 12)]
    assert res.quarantine.empty


def test_mcp_results_holding_resources_keep_them_as_text(tmp_path):
    """An MCP result with an embedded resource, a resource link or audio beside (or instead of)
    its text: the resource's text and a line naming each block are in the step's text — the
    text blocks alone left out what the agent read from the resource, and a result of links
    alone was kept as raw JSON."""
    mixed = {"content": [{"type": "text", "text": "found 1"},
                         {"type": "resource", "resource": {"uri": "s3://acme-data/demo/cars.csv",
                                                           "mimeType": "text/csv", "text": "mpg,cyl\n21,6"}},
                         {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}], "isError": False}
    links = [{"type": "resource_link", "uri": "s3://acme-data/demo/big.parquet", "name": "big.parquet"}]
    f = load_codex(rollout(tmp_path, [
        meta(),
        fc("2026-03-01T10:00:01Z", "mcp__door__search", '{"q":"cars"}', "r1"),
        out("2026-03-01T10:00:02Z", "r1", json.dumps(mixed)),
        fc("2026-03-01T10:00:03Z", "mcp__door__list", '{"path":"demo"}', "r2"),
        out("2026-03-01T10:00:04Z", "r2", json.dumps(links)),
    ])).frame
    results = f[f["kind"] == "tool_result"]
    assert rows(results, ["call_id", "text", "images", "is_error"]) == [
        ["r1", "found 1\n[resource: s3://acme-data/demo/cars.csv, text/csv]\nmpg,cyl\n21,6\n[audio: audio/wav]", 0,
         False],
        ["r2", "[resource_link: s3://acme-data/demo/big.parquet, big.parquet]", 0, None],
    ]


def test_an_mcp_end_event_gives_the_flag_and_images_the_output_text_lacks(tmp_path):
    """Since autumn 2025 the output text is the ``content`` list alone (no ``isError``): the
    ``mcp_tool_call_end`` event's ``{"Ok": CallToolResult}`` says whether it failed.  A call
    recorded only by its end event takes its text, images and flag from it; ``Err`` is an error."""
    end = lambda ts, cid, tool, result: env(ts, "event_msg", {  # noqa: E731
        "type": "mcp_tool_call_end", "call_id": cid, "duration": {"secs": 1, "nanos": 0},
        "invocation": {"server": "door", "tool": tool, "arguments": {"path": "a"}}, "result": result})
    res = load_codex(rollout(tmp_path, [
        meta(),
        fc("2026-03-01T10:00:01Z", "mcp__door__read_object", '{"path":"a"}', "e1"),
        end("2026-03-01T10:00:02Z", "e1", "read_object",
            {"Ok": {"content": [{"type": "text", "text": "no such key"}], "isError": True}}),
        out("2026-03-01T10:00:02.001Z", "e1", json.dumps([{"type": "text", "text": "no such key"}])),
        end("2026-03-01T10:00:05Z", "e2", "render",
            {"Ok": {"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"},
                                {"type": "image", "data": "AA==", "mimeType": "image/png"}]}}),
        end("2026-03-01T10:00:07Z", "e3", "list", {"Err": "server door is not running"}),
    ]))
    calls = res.frame[res.frame["kind"] == "tool_call"]
    assert rows(calls, ["call_id", "tool", "result_text", "images", "is_error"]) == [
        ["e1", "read_object", "no such key", 0, True],
        ["e2", "render", None, 2, False],
        ["e3", "list", "server door is not running", 0, True],
    ]
    assert [str(t) for t in calls["ts"]] == ["2026-03-01 10:00:01+00:00", "2026-03-01 10:00:04+00:00",
                                             "2026-03-01 10:00:06+00:00"]
    r = res.frame[res.frame["kind"] == "tool_result"]
    assert rows(r, ["call_id", "text", "is_error"]) == [["e1", "no such key", None]]


# ---------------------------------------------------------------------------------------------

def test_timestamps_with_offsets_missing_or_unreadable(tmp_path):
    res = load_codex(rollout(tmp_path, [
        meta(),
        fc("2026-03-01T15:30:01.250+05:30", "mcp__door__list", "{}", "t1"),
        fc("2026-03-01t10:00:02z", "mcp__door__list", "{}", "t2"),
        {"type": "response_item", "payload": {"type": "function_call", "name": "mcp__door__list",
                                              "arguments": "{}", "call_id": "t3"}},
        fc("yesterday", "mcp__door__list", "{}", "t4"),
    ]))
    calls = res.frame[res.frame["kind"] == "tool_call"]
    assert [str(t) for t in calls["ts"]] == ["2026-03-01 10:00:01.250000+00:00", "2026-03-01 10:00:02+00:00",
                                             "NaT", "NaT"]
    assert str(calls["ts"].dtype) == "datetime64[ns, UTC]"
    assert any("line 5" in n and "yesterday" in n for n in res.inputs[0]["notes"])


# ---------------------------------------------------------------------------------------------

def test_a_sub_agent_rollout_skips_its_replayed_history(tmp_path):
    parent = "019a0000-0000-7000-8000-0000000000b1"
    child = "019a0000-0000-7000-8000-0000000000b2"
    p_lines = [meta(parent), env("2026-03-01T10:00:00.005Z", "turn_context", {"model": "gpt-5"}),
               fc("2026-03-01T10:00:01Z", "mcp__door__list", '{"path":"a"}', "pc1")]
    source = {"subagent": {"thread_spawn": {"parent_thread_id": parent, "depth": 1, "agent_nickname": "Bernoulli"}}}
    c_lines = [meta(child, "2026-03-01T10:00:05Z", source=source, forked_from_id=parent),
               # the parent's history, replayed under the time of the spawn
               env("2026-03-01T10:00:05.001Z", "session_meta", p_lines[0]["payload"]),
               env("2026-03-01T10:00:05.002Z", "turn_context", {"model": "gpt-5"}),
               fc("2026-03-01T10:00:05.003Z", "mcp__door__list", '{"path":"a"}', "pc1"),
               fc("2026-03-01T10:00:06Z", "mcp__door__list", '{"path":"b"}', "cc1")]
    write(tmp_path / f"rollout-2026-03-01T10-00-00-{parent}.jsonl", p_lines)
    write(tmp_path / f"rollout-2026-03-01T10-00-05-{child}.jsonl", c_lines)
    res = load_codex(tmp_path)
    f = res.frame
    assert [i["replayed"] for i in res.inputs] == [0, 3] and res.inputs[1]["parent"] == parent
    sub = f[f["transcript_id"] == child]
    assert rows(sub, ["line_no", "kind", "agent_id", "call_id"]) == [[1, "system", "Bernoulli", None],
                                                                    [5, "tool_call", "Bernoulli", "cc1"]]
    assert (f["call_id"] == "pc1").sum() == 1


# ---------------------------------------------------------------------------------------------

def test_paginated_segments_are_one_transcript(tmp_path):
    """codex 0.150+ goes on with a resumed thread in ``rollout-<time>-<thread>_<segment>.jsonl``;
    a segment whose meta line is lost was named after the segment, a transcript of its own."""
    thread = "019a0000-0000-7000-8000-0000000000c1"
    seg1 = "019a0000-0000-7000-8000-0000000000c2"
    seg2 = "019a0000-0000-7000-8000-0000000000c3"
    write(tmp_path / f"rollout-2026-03-01T10-00-00-{thread}.jsonl",
          [meta(thread), fc("2026-03-01T10:00:01Z", "mcp__door__list", '{"path":"a"}', "s1")])
    write(tmp_path / f"rollout-2026-03-01T11-00-00-{thread}_{seg1}.jsonl",
          [meta(thread, "2026-03-01T11:00:00Z", history_base={"thread_id": thread}),
           fc("2026-03-01T11:00:01Z", "mcp__door__list", '{"path":"b"}', "s2")])
    write(tmp_path / f"rollout-2026-03-01T12-00-00-{thread}_{seg2}.jsonl",
          ['{"timestamp":"2026-03-01T12:00:00Z","type":"session_meta","payload":',       # meta line damaged
           fc("2026-03-01T12:00:01Z", "mcp__door__list", '{"path":"c"}', "s3")])
    res = load_codex(tmp_path)
    f = res.frame
    assert f["transcript_id"].eq(thread).all()
    assert rows(f, ["seq", "kind", "call_id"]) == [[0, "system", None], [1, "tool_call", "s1"], [2, "system", None],
                                                  [3, "tool_call", "s2"], [4, "tool_call", "s3"]]
    assert res.quarantine[["line_no", "kind"]].values.tolist() == [[1, "invalid"]]


# ---------------------------------------------------------------------------------------------

def test_a_fork_of_a_paginated_thread_skips_history_from_every_segment(tmp_path):
    """A fork replays its parent's whole history; the parent's history was looked up in its
    first file only, so lines replayed from a later segment gave rows a second time."""
    thread = "019a0000-0000-7000-8000-0000000000d1"
    seg = "019a0000-0000-7000-8000-0000000000d2"
    fork = "019a0000-0000-7000-8000-0000000000d3"
    a = fc("2026-03-01T10:00:01Z", "mcp__door__list", '{"path":"a"}', "f1")
    b = fc("2026-03-01T11:00:01Z", "mcp__door__list", '{"path":"b"}', "f2")
    write(tmp_path / f"rollout-2026-03-01T10-00-00-{thread}.jsonl", [meta(thread), a])
    write(tmp_path / f"rollout-2026-03-01T11-00-00-{thread}_{seg}.jsonl", [meta(thread, "2026-03-01T11:00:00Z"), b])
    replay = [{**x, "timestamp": "2026-03-01T12:00:00.001Z"} for x in (a, b)]
    write(tmp_path / f"rollout-2026-03-01T12-00-00-{fork}.jsonl",
          [meta(fork, "2026-03-01T12:00:00Z", forked_from_id=thread), *replay,
           fc("2026-03-01T12:00:01Z", "mcp__door__list", '{"path":"c"}', "f3")])
    res = load_codex(tmp_path)
    assert [i["replayed"] for i in res.inputs] == [0, 0, 2]
    calls = res.frame[res.frame["kind"] == "tool_call"]
    assert rows(calls, ["transcript_id", "call_id"]) == [[thread, "f1"], [thread, "f2"], [fork, "f3"]]


# ---------------------------------------------------------------------------------------------

def test_every_generation_in_one_folder(tmp_path):
    """A ``~/.codex/sessions`` tree holds rollouts of every client version the user ran."""
    ts_doc = {"session": {"timestamp": "2025-04-20T10:00:00Z", "id": "bbbbbbbb-0000-4000-8000-000000000001",
                          "instructions": ""},
              "items": [{"type": "function_call", "id": "fc_1", "name": "shell", "arguments": '{"command":["ls"]}',
                         "call_id": "t1"}]}
    (tmp_path / "2025" / "04").mkdir(parents=True)
    (tmp_path / "2025" / "04" / "rollout-2025-04-20-bbbbbbbb-0000-4000-8000-000000000001.json").write_text(
        json.dumps(ts_doc, indent=2))
    write(tmp_path / "2025" / "05" / "rollout-2025-05-20T10-00-00-aaaaaaaa-0000-4000-8000-000000000001.jsonl", [
        {"id": "aaaaaaaa-0000-4000-8000-000000000001", "timestamp": "2025-05-20T10:00:00Z", "instructions": ""},
        {"type": "function_call", "id": "fc_2", "name": "door__list", "arguments": '{"path":"a"}', "call_id": "l1"},
        {"record_type": "state"}])
    rollout(tmp_path / "2026" / "03", [meta(), fc("2026-03-01T10:00:01Z", "mcp__door__list", '{"path":"a"}', "e1")])
    load = load_frame([tmp_path], "steps")
    res = load.result
    assert [(Path(i["path"]).name[:18], i["format"], i["generation"]) for i in res.inputs] == [
        ("rollout-2025-04-20", "codex", "typescript-json"), ("rollout-2025-05-20", "codex", "legacy-jsonl"),
        ("rollout-2026-03-01", "codex", "envelope-jsonl")]
    calls = res.frame[res.frame["kind"] == "tool_call"]
    assert rows(calls, ["call_id", "server", "tool", "args_key"]) == [
        ["t1", None, "shell", '{"command":["ls"]}'], ["l1", "door", "list", '{"path":"a"}'],
        ["e1", "door", "list", '{"path":"a"}']]
    assert calls["transcript_id"].nunique() == 3
    STEPS.validate(res.frame)


@pytest.mark.parametrize("generation", ["legacy", "typescript"])
def test_a_reused_call_id_in_older_generations(tmp_path, generation):
    """The same rule in the generations without timestamps: the copy of an item counts once."""
    item = {"type": "function_call", "id": "fc_1", "name": "door__list", "arguments": '{"path":"a"}', "call_id": "c1"}
    if generation == "legacy":
        p = write(tmp_path / "rollout-2025-05-20T10-00-00-aaaaaaaa-0000-4000-8000-000000000001.jsonl",
                  [{"id": "aaaaaaaa-0000-4000-8000-000000000001", "timestamp": "2025-05-20T10:00:00Z"}, item, item])
    else:
        p = tmp_path / "rollout-2025-04-20-bbbbbbbb-0000-4000-8000-000000000001.json"
        p.write_text(json.dumps({"session": {"id": "b", "timestamp": "2025-04-20T10:00:00Z"}, "items": [item, item]}))
    res = load_codex(p)
    assert (res.frame["kind"] == "tool_call").sum() == 1 and res.inputs[0]["duplicates"] == 1
    assert canonical_args({"path": "a"}) == res.frame.loc[res.frame["kind"] == "tool_call", "args_key"].iloc[0]


def test_command_output_gives_its_text_and_exit_code_in_every_shape(tmp_path):
    """A command tool's output: the ``{"output", "metadata"}`` JSON text (TypeScript CLI, codex-rs
    until autumn 2025), the same object unencoded, the freeform ``Exit code: / Wall time: /
    Output:`` text (codex-rs since), unified exec's ``Process exited with code`` header, and a
    plain string (no exit code recorded).  Text is the output; a non-zero exit code is an error
    and stays as the text's first line."""
    structured = lambda o, code: json.dumps({"output": o, "metadata": {"exit_code": code,  # noqa: E731
                                                                       "duration_seconds": 1.1}})
    res = load_codex(rollout(tmp_path, [
        meta(),
        fc("2026-03-01T10:00:01Z", "exec_command", '{"cmd":"kubectl get rollout"}', "e1"),
        out("2026-03-01T10:00:02Z", "e1", structured("Status: Paused\n", 0)),
        fc("2026-03-01T10:00:03Z", "shell", '{"command":["false"]}', "e2"),
        out("2026-03-01T10:00:04Z", "e2", structured("boom\n", 2)),
        fc("2026-03-01T10:00:05Z", "shell", '{"command":["ls"]}', "e3"),
        out("2026-03-01T10:00:06Z", "e3", {"output": "a.txt\n", "metadata": {"exit_code": 0}}),
        fc("2026-03-01T10:00:07Z", "shell", '{"command":["grep","x","f"]}', "e4"),
        out("2026-03-01T10:00:08Z", "e4", "Exit code: 1\nWall time: 0.2 seconds\nOutput:\nno match"),
        fc("2026-03-01T10:00:09Z", "exec_command", '{"cmd":"make"}', "e5"),
        out("2026-03-01T10:00:10Z", "e5", "Chunk ID: 1a2b\nWall time: 3.0012 seconds\nProcess exited with "
                                          "code 0\nOriginal token count: 2\nOutput:\nbuilt ok"),
        fc("2026-03-01T10:00:11Z", "exec_command", '{"cmd":"find . -type f"}', "e6"),
        out("2026-03-01T10:00:12Z", "e6", "./alpha.txt\n./beta.txt"),
        fc("2026-03-01T10:00:13Z", "exec_command", '{"cmd":"tail -f log"}', "e7"),
        out("2026-03-01T10:00:14Z", "e7", "Chunk ID: 9\nWall time: 1.0 seconds\nProcess running with session "
                                          "ID 73\nOriginal token count: 1\nOutput:\nline"),
    ]))
    f = res.frame
    calls = f[f["kind"] == "tool_call"]
    assert rows(calls, ["call_id", "result_text", "is_error"]) == [
        ["e1", "Status: Paused\n", False],
        ["e2", "Exit code: 2\nboom\n", True],
        ["e3", "a.txt\n", False],
        ["e4", "Exit code: 1\nno match", True],
        ["e5", "built ok", False],
        ["e6", "./alpha.txt\n./beta.txt", None],     # a plain string records no exit code
        ["e7", "line", None],                         # still running: no exit code yet
    ]
    results = f[f["kind"] == "tool_result"]
    assert rows(results, ["call_id", "text", "is_error", "text_bytes"])[:2] == [
        ["e1", "Status: Paused\n", False, 15], ["e2", "Exit code: 2\nboom\n", True, 18]]
    assert res.quarantine.empty


def test_apply_patch_output_gives_its_text_and_exit_code(tmp_path):
    """``apply_patch`` (a freeform ``custom_tool_call``) answers in the command tools'
    ``{"output", "metadata": {"exit_code"}}`` shape: a patch that does not apply is exit code 1."""
    def patch(ts, cid, body):
        return env(ts, "response_item", {"type": "custom_tool_call", "status": "completed", "call_id": cid,
                                         "name": "apply_patch", "input": body})

    def patch_out(ts, cid, output):
        return env(ts, "response_item", {"type": "custom_tool_call_output", "call_id": cid, "output": output})
    body = "*** Begin Patch\n*** Update File: deploy/rules.yaml\n@@\n-mode: off\n+mode: on\n*** End Patch"
    res = load_codex(rollout(tmp_path, [
        meta(),
        patch("2026-03-01T10:00:01Z", "p1", body),
        patch_out("2026-03-01T10:00:02Z", "p1", json.dumps({
            "output": "Success. Updated the following files:\nM deploy/rules.yaml\n",
            "metadata": {"exit_code": 0, "duration_seconds": 0.0}})),
        patch("2026-03-01T10:00:03Z", "p2", body),
        patch_out("2026-03-01T10:00:04Z", "p2", json.dumps({
            "output": "error: deploy/rules.yaml: no match for hunk\n", "metadata": {"exit_code": 1}})),
        patch("2026-03-01T10:00:05Z", "p3", body),
        patch_out("2026-03-01T10:00:06Z", "p3", "a reply of another shape"),
    ]))
    f = res.frame
    assert rows(f[f["kind"] == "tool_call"], ["call_id", "tool", "result_text", "is_error"]) == [
        ["p1", "apply_patch", "Success. Updated the following files:\nM deploy/rules.yaml\n", False],
        ["p2", "apply_patch", "Exit code: 1\nerror: deploy/rules.yaml: no match for hunk\n", True],
        ["p3", "apply_patch", "a reply of another shape", None]]
    assert res.quarantine.empty


def test_a_content_block_of_no_known_type_leaves_the_mcp_result_as_written(tmp_path):
    """A block whose ``type`` is not a string (a damaged or hand-edited rollout) is no MCP content
    block: the output stays the text it was written as, and the load goes on."""
    res = load_codex(rollout(tmp_path, [
        meta(),
        fc("2026-03-01T10:00:01Z", "mcp__files__read_object", '{"path":"a"}', "m1"),
        out("2026-03-01T10:00:02Z", "m1", json.dumps([{"type": ["text"], "text": "x"}])),
        fc("2026-03-01T10:00:03Z", "mcp__files__read_object", '{"path":"b"}', "m2"),
        out("2026-03-01T10:00:04Z", "m2", json.dumps([{"type": "text", "text": "rows: 3"}])),
    ]))
    calls = res.frame[res.frame["kind"] == "tool_call"]
    assert rows(calls, ["call_id", "server", "result_text"]) == [
        ["m1", "files", '[{"type": ["text"], "text": "x"}]'], ["m2", "files", "rows: 3"]]


def test_a_result_whose_call_line_is_damaged_is_read_by_its_shape(tmp_path):
    """The function_call line cut in half (set aside with its line number); its result keeps its
    call_id and no tool, and its MCP ``CallToolResult`` JSON gives the text the agent was shown
    and ``isError``; a command payload gives its output and exit code; other text stays as it is."""
    refusal = {"content": [{"type": "text", "text": "refused by the door: rule 'deny-secrets' denies this "
                                                    "get_object call"}], "isError": True}
    p = rollout(tmp_path, [
        meta(),
        fc("2026-03-01T10:00:01Z", "mcp__door__list_objects", '{"prefix":"a/"}', "c0"),
        out("2026-03-01T10:00:02Z", "c0", json.dumps({"content": [{"type": "text", "text": "a/x"}],
                                                      "isError": False})),
        '{"timestamp":"2026-03-01T10:00:03Z","type":"response_item","payload":{"type":"function_call","name":"',
        out("2026-03-01T10:00:04Z", "c1", json.dumps(refusal)),
        '{"timestamp":"2026-03-01T10:00:05Z","type":"response_item","payload":{"type":"function_call","na',
        out("2026-03-01T10:00:06Z", "c2", json.dumps({"output": "oops\n", "metadata": {"exit_code": 3}})),
        out("2026-03-01T10:00:07Z", "c3", '[{"type": "text", "text": "x"}]'),
    ])
    res = load_codex(p)
    q = res.quarantine
    assert q["line_no"].tolist() == [4, 6] and (q["kind"] == "invalid").all()
    f = res.frame
    results = f[f["kind"] == "tool_result"]
    assert rows(results, ["line_no", "call_id", "tool", "text", "is_error", "text_bytes"]) == [
        [3, "c0", "list_objects", "a/x", False, 3],
        [5, "c1", None, "refused by the door: rule 'deny-secrets' denies this get_object call", True, 68],
        [7, "c2", None, "Exit code: 3\noops\n", True, 18],
        [8, "c3", None, '[{"type": "text", "text": "x"}]', None, 31],
    ]


def test_a_refusal_a_file_and_a_newer_item_in_a_message_are_kept(tmp_path):
    """An assistant message whose content is a ``refusal`` (the model declined) read as an empty
    answer: the item's text is under ``refusal``, not ``text``.  A file the user attached and an
    item of a type newer than the loader were dropped the same way."""
    f = load_codex(rollout(tmp_path, [
        meta(),
        env("2026-03-01T10:00:01Z", "response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "summarise this"},
            {"type": "input_file", "filename": "q3.pdf", "file_data": "JVBERi0="},
            {"type": "input_audio_v9", "data": "AAAA"}]}),
        env("2026-03-01T10:00:02Z", "response_item", {"type": "message", "role": "assistant", "content": [
            {"type": "refusal", "refusal": "I can't share patient records."}]}),
    ])).frame
    texts = f.loc[f["line_no"].isin([2, 3]), ["line_no", "text"]].values.tolist()
    assert texts == [[2, "summarise this\n[input_file: q3.pdf]\n[input_audio_v9]"],
                     [3, "[refusal] I can't share patient records."]]


# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("second_args", ['{"command":["ls"]}', '{"command":["ls","-la"]}'])
def test_call_ids_pair_within_their_session(tmp_path, second_args):
    """Local models and providers number call ids per session (``call_0`` …): the second session's
    call had been dropped as a duplicate of the first's (or set aside as a conflict), its output
    left unpaired, and the first call shown with only its own output."""
    s1 = "11111111-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
    s2 = "22222222-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
    cmd = '{{"output":"{}","metadata":{{"exit_code":0,"duration_seconds":0.1}}}}'
    write(tmp_path / f"rollout-2025-01-01T00-00-00-{s1}.jsonl",
          [meta(s1, "2025-01-01T00:00:00Z"), fc("2025-01-01T00:00:03Z", "shell", '{"command":["ls"]}', "call_0"),
           out("2025-01-01T00:00:04Z", "call_0", cmd.format("out-01"))])
    write(tmp_path / f"rollout-2025-01-02T00-00-00-{s2}.jsonl",
          [meta(s2, "2025-01-02T00:00:00Z"), fc("2025-01-02T00:00:03Z", "shell", second_args, "call_0"),
           out("2025-01-02T00:00:04Z", "call_0", cmd.format("out-02"))])
    res = load_codex(tmp_path)
    f = res.frame
    assert rows(f[f["kind"] != "system"], ["transcript_id", "line_no", "kind", "call_id", "tool", "args_key",
                                          "result_text", "text"]) == [
        [s1, 2, "tool_call", "call_0", "shell", '{"command":["ls"]}', "out-01", None],
        [s1, 3, "tool_result", "call_0", "shell", None, None, "out-01"],
        [s2, 2, "tool_call", "call_0", "shell", canonical_args(json.loads(second_args)), "out-02", None],
        [s2, 3, "tool_result", "call_0", "shell", None, None, "out-02"],
    ]
    assert f.loc[f["kind"] == "tool_call", "result_ts"].astype(str).tolist() == [
        "2025-01-01 00:00:04+00:00", "2025-01-02 00:00:04+00:00"]
    assert [i["duplicates"] for i in res.inputs] == [0, 0]
    assert len(res.quarantine) == 0


# ---------------------------------------------------------------------------------------------

def _fork_case(tmp_path, parent_lines, child_lines):
    parent = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
    child = "cccccccc-cccc-4ccc-8ccc-cccccccccccc"
    write(tmp_path / f"rollout-2025-01-01T00-00-00-{parent}.jsonl", [meta(parent, "2025-01-01T00:00:00Z"),
                                                                     *parent_lines])
    write(tmp_path / f"rollout-2025-01-01T00-00-05-{child}.jsonl",
          [meta(child, "2025-01-01T00:00:05Z", forked_from_id=parent), *child_lines])
    res = load_codex(tmp_path)
    assert res.inputs[1]["parent"] == parent
    f = res.frame
    return res, f[f["transcript_id"] == child]


def test_a_forks_own_lines_after_its_replay_are_kept_though_the_parent_wrote_the_same(tmp_path):
    """The fork replays three lines under the time of the fork, then its user asks the question
    the parent was asked after the fork: its own turn_context and question had matched the
    parent's later lines and were dropped as replay (5 lines counted instead of 3)."""
    tc = {"cwd": "/w", "model": "gpt-5", "approval_policy": "never"}
    ask = {"type": "user_message", "message": "now run the tests"}
    first = [env("2025-01-01T00:00:01Z", "turn_context", tc),
             env("2025-01-01T00:00:02Z", "event_msg", {"type": "user_message", "message": "first question"}),
             env("2025-01-01T00:00:03Z", "response_item", {"type": "message", "role": "assistant",
                                                           "content": [{"type": "output_text", "text": "one"}]})]
    res, c = _fork_case(
        tmp_path,
        [*first, env("2025-01-01T00:00:10Z", "turn_context", tc), env("2025-01-01T00:00:11Z", "event_msg", ask)],
        [*[{**x, "timestamp": "2025-01-01T00:00:05Z"} for x in first],
         env("2025-01-01T00:00:06Z", "turn_context", tc), env("2025-01-01T00:00:07Z", "event_msg", ask)])
    assert res.inputs[1]["replayed"] == 3
    assert rows(c, ["line_no", "kind", "line_type", "text"]) == [
        [1, "system", "session_meta", None], [5, "system", "turn_context", None],
        [6, "user_prompt", "event_msg/user_message", "now run the tests"]]


def test_a_fork_that_copied_part_of_the_history_keeps_its_own_next_turn(tmp_path):
    """A fork from an earlier point (the parent's whole history is older than the fork): the
    child's own turn, seconds after its replay, repeats the parent's second turn_context and
    question; they are the child's, not replay."""
    tc = {"cwd": "/w", "model": "gpt-5"}
    q1 = env("2025-01-01T00:00:01Z", "event_msg", {"type": "user_message", "message": "q1"})
    q2 = {"type": "user_message", "message": "q2"}
    res, c = _fork_case(
        tmp_path,
        [env("2025-01-01T00:00:00.5Z", "turn_context", tc), q1, env("2025-01-01T00:00:02Z", "turn_context", tc),
         env("2025-01-01T00:00:02.5Z", "event_msg", q2)],
        [env("2025-01-01T00:00:05.001Z", "turn_context", tc), {**q1, "timestamp": "2025-01-01T00:00:05.002Z"},
         env("2025-01-01T00:00:09Z", "turn_context", tc), env("2025-01-01T00:00:09.5Z", "event_msg", q2)])
    assert res.inputs[1]["replayed"] == 2
    assert rows(c, ["line_no", "kind", "text"]) == [[1, "system", None], [4, "system", None],
                                                   [5, "user_prompt", "q2"]]


def test_a_sub_agents_first_turn_is_not_matched_to_parent_lines_written_after_the_spawn(tmp_path):
    """A sub-agent starts its own turn milliseconds after its replay; its turn_context equals the
    one the parent wrote after the spawn, which the replay cannot hold."""
    tc = {"cwd": "/w", "model": "gpt-5"}
    res, c = _fork_case(
        tmp_path,
        [env("2025-01-01T00:00:01Z", "turn_context", tc), fc("2025-01-01T00:00:02Z", "spawn_agent", "{}", "p1"),
         env("2025-01-01T00:00:07Z", "turn_context", tc)],
        [env("2025-01-01T00:00:05.001Z", "turn_context", tc), fc("2025-01-01T00:00:05.002Z", "spawn_agent", "{}", "p1"),
         env("2025-01-01T00:00:05.010Z", "turn_context", tc)])
    assert res.inputs[1]["replayed"] == 2
    assert rows(c, ["line_no", "kind", "line_type"]) == [[1, "system", "session_meta"], [4, "system", "turn_context"]]


def test_a_fork_whose_own_meta_line_is_damaged_is_not_merged_into_its_parent(tmp_path):
    """The fork's first line (its own session_meta) is damaged: the parent's session_meta at the
    head of its replayed history had been taken for the file's own, so the fork became part of
    the parent's transcript — the replayed question a second prompt, the fork's own call set aside
    as a conflict with the parent's call_1 and its result paired with the parent's call."""
    parent = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
    child = "cccccccc-cccc-4ccc-8ccc-cccccccccccc"
    ask = env("2025-01-01T00:00:01Z", "event_msg", {"type": "user_message", "message": "hi"})
    c0 = fc("2025-01-01T00:00:02Z", "mcp__door__get", '{"k":1}', "call_0")
    o0 = out("2025-01-01T00:00:03Z", "call_0", "v1")
    write(tmp_path / f"rollout-2025-01-01T00-00-00-{parent}.jsonl", [
        meta(parent, "2025-01-01T00:00:00Z"), ask, c0, o0,
        fc("2025-01-01T00:00:10Z", "mcp__door__get", '{"k":3}', "call_1"), out("2025-01-01T00:00:11Z", "call_1", "p")])
    own = json.dumps(meta(child, "2025-01-01T00:00:05Z", forked_from_id=parent))
    replay = [{**x, "timestamp": f"2025-01-01T00:00:05.00{i}Z"}
              for i, x in enumerate([meta(parent, "2025-01-01T00:00:00Z"), ask, c0, o0], 1)]
    write(tmp_path / f"rollout-2025-01-01T00-00-05-{child}.jsonl", [
        own[:40] + "\x00" + own[41:], *replay,
        env("2025-01-01T00:00:07Z", "event_msg", {"type": "user_message", "message": "more"}),
        fc("2025-01-01T00:00:08Z", "mcp__door__get", '{"k":2}', "call_1"), out("2025-01-01T00:00:09Z", "call_1", "c")])
    res = load_codex(tmp_path)
    f = res.frame
    assert f["transcript_id"].value_counts().to_dict() == {parent: 6, child: 3}
    c = f[f["transcript_id"] == child]
    assert rows(c, ["line_no", "kind", "call_id", "args_key", "result_text"]) == [
        [6, "user_prompt", None, None, None], [7, "tool_call", "call_1", '{"k":2}', "c"], [8, "tool_result", "call_1",
                                                                                           None, None]]
    assert res.quarantine["kind"].tolist() == ["invalid"] and res.quarantine["line_no"].tolist() == [1]
    assert (res.inputs[1]["parent"], res.inputs[1]["replayed"]) == (parent, 4)
    assert "line 2: a session_meta of session " + parent in res.inputs[1]["notes"][0]


# ---------------------------------------------------------------------------------------------

def test_a_copy_of_a_typescript_rollout_counts_once(tmp_path):
    """A gzipped backup of a TypeScript rollout gave a second session_meta row and a second
    model_request (its items carry no timestamps, its messages no ids); an envelope copy gives
    none."""
    doc = {"session": {"timestamp": "2025-04-20T10:00:00.000Z", "id": "ts-session-1", "instructions": ""},
           "items": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                     {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "shell",
                      "arguments": '{"command":["ls"]}'},
                     {"type": "function_call_output", "call_id": "call_a",
                      "output": '{"output":"x","metadata":{"exit_code":1,"duration_seconds":0}}'},
                     {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}]}
    text = json.dumps(doc, indent=2)
    (tmp_path / "backup").mkdir()
    (tmp_path / "backup" / "rollout-2025-04-20-ts.json.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "rollout-2025-04-20-ts.json").write_text(text)
    res = load_codex(tmp_path)
    assert [(Path(i["path"]).name, i["replayed"], i["duplicates"]) for i in res.inputs] == [
        ("rollout-2025-04-20-ts.json.gz", 0, 0), ("rollout-2025-04-20-ts.json", 4, 1)]
    f = res.frame
    assert f["source_file"].eq(str(tmp_path / "backup" / "rollout-2025-04-20-ts.json.gz")).all()
    assert rows(f, ["seq", "kind", "call_id", "result_text"]) == [
        [0, "system", None, None], [1, "user_prompt", None, None], [2, "tool_call", "call_a", "Exit code: 1\nx"],
        [3, "tool_result", "call_a", None], [4, "model_request", None, None]]


def test_a_copy_of_a_legacy_rollout_counts_once_and_a_copy_that_went_on_keeps_the_rest(tmp_path):
    """A byte-identical copy of a legacy rollout in another folder gave a second meta row and a
    second state row; a copy holding one more line keeps that line, in the same transcript.
    Another session with the same lines (no timestamps, no ids) is not a copy."""
    lines = [{"id": "legacy-1", "timestamp": "2025-05-01T00:00:00Z", "instructions": "x"}, {"record_type": "state"},
             {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
             {"type": "function_call", "id": "fc_1", "call_id": "call_b", "name": "shell",
              "arguments": '{"command":["ls"]}'},
             {"type": "function_call_output", "call_id": "call_b", "output": '{"output":"y","metadata":{"exit_code":0}}'},
             {"record_type": "state"}]
    more = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "later"}]}
    a = write(tmp_path / "a" / "rollout-legacy.jsonl", lines)
    b = write(tmp_path / "b" / "rollout-legacy.jsonl", lines)
    c = write(tmp_path / "c" / "rollout-legacy.jsonl", [*lines, more])
    other = write(tmp_path / "d" / "rollout-legacy.jsonl", [{**lines[0], "id": "legacy-2"}, *lines[1:3]])
    res = load_codex([a, b, c, other])
    assert [(i["replayed"], i["duplicates"]) for i in res.inputs] == [(0, 0), (5, 1), (5, 1), (0, 0)]
    f = res.frame
    assert rows(f, ["transcript_id", "seq", "line_no", "kind", "line_type", "text"]) == [
        ["legacy-1", 0, 1, "system", "session_meta", "x"], ["legacy-1", 1, 2, "other", "state", None],
        ["legacy-1", 2, 3, "user_prompt", "message/user", "hello"], ["legacy-1", 3, 4, "tool_call", "function_call", None],
        ["legacy-1", 4, 5, "tool_result", "function_call_output", "y"], ["legacy-1", 5, 6, "other", "state", None],
        ["legacy-1", 6, 7, "model_request", "message/assistant", "later"],
        ["legacy-2", 0, 1, "system", "session_meta", "x"], ["legacy-2", 1, 2, "other", "state", None],
        ["legacy-2", 2, 3, "user_prompt", "message/user", "hello"]]
    assert f.loc[3, "source_file"] == str(a) and f.loc[6, "source_file"] == str(c)


def test_a_call_id_written_as_a_number_is_noted_by_line(tmp_path):
    """A ``call_id`` written as a number had left the call and its output unpaired (``call_id`` NA)
    without a word; Claude Code's loader notes the same case."""
    sid = "0199aaaa-0000-7000-8000-00000000000f"
    path = tmp_path / f"rollout-2025-09-13T10-00-00-{sid}.jsonl"
    write(path, [
        {"timestamp": "2025-09-13T10:00:00.000Z", "type": "session_meta",
         "payload": {"id": sid, "timestamp": "2025-09-13T10:00:00.000Z", "cwd": "/w", "cli_version": "0.40.0"}},
        {"timestamp": "2025-09-13T10:00:01.000Z", "type": "response_item",
         "payload": {"type": "function_call", "name": "shell", "arguments": '{"command":["ls"]}', "call_id": 7}},
        {"timestamp": "2025-09-13T10:00:02.000Z", "type": "response_item",
         "payload": {"type": "function_call_output", "call_id": 7, "output": "a\n"}},
    ])
    res = load_codex(path)
    tools = res.frame[res.frame["kind"].isin(["tool_call", "tool_result"])]
    assert tools["kind"].tolist() == ["tool_call", "tool_result"] and tools["call_id"].isna().all()
    assert res.inputs[0]["notes"] == ["2 lines with a call_id that is not text, kept with no call id, so call and "
                                      "result are not paired: line 2 (7), line 3 (7)"]
