"""Codex CLI rollout loader → ``steps`` frame.

Fixtures under ``tests/fixtures/codex`` are ours, modelled on codex-rs ``RolloutLine`` /
``ResponseItem`` / ``EventMsg`` and on the TypeScript CLI's ``save-rollout.ts``:

* ``envelope/`` — a parent session (P …0001) with MCP events, a fork (F …0002,
  ``forked_from_id`` P, replaying 9 parent lines with new timestamps, MCP events left out), a
  sub-agent (S …0003, ``thread_spawn`` of P, replaying P's session_meta + turn_context) and an
  undeclared copy (U …0004, first 4 parent lines byte-identical);
* ``legacy/`` — un-enveloped JSONL; ``typescript/`` — the single-document generation;
* ``damaged/`` — non-object, bad payload, offset timestamp, lone surrogate, pending last line.

Counts below were checked by hand (``grep -c ''``, ``jq``) against the fixture files.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from replaybook._jsonl import json_doc_items
from replaybook.errors import InputError
from replaybook.frames import QUARANTINE, STEPS
from replaybook.sources import codex
from replaybook.sources.codex import load_codex, sniff, split_codex_name

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "codex"
P = "0199aaaa-0000-7000-8000-000000000001"
F = "0199aaaa-0000-7000-8000-000000000002"
S = "0199aaaa-0000-7000-8000-000000000003"
U = "0199aaaa-0000-7000-8000-000000000004"
D = "0199aaaa-0000-7000-8000-000000000005"


def _file(sub: str, sid: str) -> Path:
    return next((FIX / sub).glob(f"*{sid}*"))


@pytest.fixture(scope="module")
def env():
    return load_codex(FIX / "envelope")


def _t(frame: pd.DataFrame, tid: str) -> pd.DataFrame:
    return frame[frame["transcript_id"] == tid].reset_index(drop=True)


def test_parent_rows_kinds_and_counts(env):
    STEPS.validate(env.frame)
    f = _t(env.frame, P)
    # 23 lines, one row each
    assert len(f) == 23 and f["line_no"].tolist() == list(range(1, 24))
    assert f["seq"].tolist() == list(range(23))
    k = f["kind"].value_counts().to_dict()
    # user_prompt: the 2 event_msg/user_message lines (4, 15); other: the 3 role=user items (3, 5, 16),
    # reasoning (6), 2 MCP events folded into call_A (8, 9), 2 token_count (11, 14), agent_message (13)
    assert k == {"other": 9, "tool_call": 4, "user_prompt": 2, "system": 2, "model_request": 2,
                 "tool_result": 3, "summary": 1}
    assert f.loc[f["kind"] == "other", "line_no"].tolist() == [3, 5, 6, 8, 9, 11, 13, 14, 16]
    assert f.loc[f["kind"] == "user_prompt", "line_no"].tolist() == [4, 15]
    assert f["client"].eq("codex").all() and f["client_version"].eq("0.39.0").all()
    assert f["client_session_id"].eq(P).all() and f["agent_id"].isna().all()


def test_function_call_paired_with_output_and_mcp_events(env):
    f = _t(env.frame, P)
    a = f[(f["kind"] == "tool_call") & (f["call_id"] == "call_A")].iloc[0]
    assert (a["line_no"], a["tool_raw"], a["server"], a["tool"]) == (7, "mcp__door__read_object", "door", "read_object")
    # the arguments string '{"key": …, "bucket": …}' is parsed and canonicalised (keys sorted)
    assert a["arguments"] == {"key": "2025/q3 summary.csv", "bucket": "reports"}
    assert a["args_key"] == '{"bucket":"reports","key":"2025/q3 summary.csv"}'
    assert str(a["ts"]) == "2025-09-13 10:00:03+00:00"
    assert str(a["result_ts"]) == "2025-09-13 10:00:03.416000+00:00"    # function_call_output line 10
    assert a["result_text"] == "region,revenue\nEU,100\n"
    assert a["is_error"] == False  # noqa: E712 — from mcp_tool_call_end result.Ok.isError
    # the begin/end events of a call that has a function_call are folded in: kind other
    ev = f[f["line_no"].isin([8, 9])]
    assert ev["kind"].tolist() == ["other", "other"]
    assert ev["line_type"].tolist() == ["event_msg/mcp_tool_call_begin", "event_msg/mcp_tool_call_end"]
    res = f[(f["kind"] == "tool_result") & (f["call_id"] == "call_A")].iloc[0]
    assert (res["line_no"], res["server"], res["tool"]) == (10, "door", "read_object")


def test_event_only_mcp_calls(env):
    f = _t(env.frame, P)
    # call_B: begin (line 17) is the tool_call, end (line 18) its tool_result; result Err → error
    b = f[f["call_id"] == "call_B"]
    assert b["kind"].tolist() == ["tool_call", "tool_result"] and b["line_no"].tolist() == [17, 18]
    call = b.iloc[0]
    assert call["args_key"] == '{"bucket":"secrets","key":"keys.txt"}'
    assert call["is_error"] == True  # noqa: E712
    assert call["result_text"] == "tool call failed: access denied by rule no-secrets"
    assert str(call["result_ts"]) == "2025-09-13 10:01:01.003000+00:00"
    # call_C: only an end event (line 19) — the call; ts = end − duration {secs:1, nanos:5e8}
    c = f[f["call_id"] == "call_C"]
    assert c["kind"].tolist() == ["tool_call"]
    c = c.iloc[0]
    assert str(c["ts"]) == "2025-09-13 10:01:02+00:00" and str(c["result_ts"]) == "2025-09-13 10:01:03.500000+00:00"
    assert (c["server"], c["tool"], c["args_key"]) == ("door", "list_objects", '{"bucket":"reports"}')
    assert c["is_error"] == True and c["result_text"] == "listing failed: bucket busy"  # noqa: E712


def test_unparsable_arguments_and_legacy_name(env):
    f = _t(env.frame, P)
    d = f[(f["call_id"] == "call_D") & (f["kind"] == "tool_call")].iloc[0]
    # legacy <server>__<tool> name, arguments not JSON: no quarantine, args_key NA, raw text kept
    assert (d["server"], d["tool"], d["tool_raw"]) == ("door", "list_objects", "door__list_objects")
    assert pd.isna(d["args_key"]) and d["arguments"] is None
    assert d["text"] == '{"bucket": "reports", "prefix": 2025/'
    assert d["is_error"] == True and d["result_text"] == "failed to parse function arguments"  # noqa: E712
    info = next(i for i in env.inputs if P in i["path"])
    assert info["notes"] == ["line 21: function_call arguments are not JSON (or nest too deep); kept as text, "
                             "args_key left NA: the call cannot agree by arguments"]
    assert len(env.quarantine) == 0


def test_tokens_model_reasoning_summary(env):
    f = _t(env.frame, P)
    mr = f[f["kind"] == "model_request"]
    assert mr["line_no"].tolist() == [12, 23]
    assert mr["model"].tolist() == ["gpt-5-codex", "gpt-5-codex"]       # from turn_context line 2
    # the token_count after line 12 (line 14: last_token_usage 1300/20) — line 11 came before it
    assert mr.iloc[0]["input_tokens"] == 1300 and mr.iloc[0]["output_tokens"] == 20
    assert pd.isna(mr.iloc[1]["input_tokens"])
    r = f[f["line_type"] == "response_item/reasoning"].iloc[0]
    assert r["text"] == "**Reading the object**" and "gAAAA" not in str(r["text"])
    s = f[f["kind"] == "summary"].iloc[0]
    assert s["text"].startswith("Read reports/2025/q3 summary.csv") and s["line_type"] == "compacted"


def test_fork_replay_is_counted_once(env):
    info = {i["path"]: i for i in env.inputs}
    fi = info[str(_file("envelope", F))]
    # rule A: 9 replayed lines (parent lines 2–7, 10–12 re-stamped at 10:05:00.1xx), parent named
    assert fi["replayed"] == 9 and fi["parent"] == P
    f = _t(env.frame, F)
    assert len(f) == 16 - 9 and f["line_no"].tolist() == [1, 11, 12, 13, 14, 15, 16]
    assert f[f["kind"] == "tool_call"]["call_id"].tolist() == ["call_F1"]
    assert (env.frame["call_id"] == "call_A").sum() == 4     # parent's call, result and 2 events only
    # sub-agent: own meta + replayed parent session_meta and turn_context skipped
    si = info[str(_file("envelope", S))]
    assert si["replayed"] == 2 and si["parent"] == P
    s = _t(env.frame, S)
    assert s["line_no"].tolist() == [1, 4, 5, 6, 7] and s["agent_id"].eq("scout").all()
    assert s[s["kind"] == "tool_call"].iloc[0]["args_key"] == '{"bucket":"reports","prefix":"2025/"}'
    # rule B: undeclared copy of the parent's first 4 lines (same timestamps and payloads)
    ui = info[str(_file("envelope", U))]
    assert ui["replayed"] == 4 and "parent" not in ui
    u = _t(env.frame, U)
    assert u["line_no"].tolist() == [1, 6, 7]
    # its own user message is the prompt (the replayed user_message event does not demote it)
    assert u["kind"].tolist() == ["system", "user_prompt", "model_request"]


def test_fork_rule_does_not_depend_on_load_order():
    res = load_codex([_file("envelope", F), _file("envelope", P)])
    assert res.inputs[0]["replayed"] == 9
    assert len(_t(res.frame, F)) == 7 and len(_t(res.frame, P)) == 23


def test_fork_without_parent_loaded_keeps_everything():
    res = load_codex(_file("envelope", F))
    assert res.inputs[0]["replayed"] == 0 and res.inputs[0]["parent"] == P
    assert len(res.frame) == 16


def test_legacy_generation():
    res = load_codex(FIX / "legacy")
    f = res.frame
    STEPS.validate(f)
    assert res.inputs[0]["generation"] == "legacy-jsonl" and res.inputs[0]["lines"] == 11
    assert len(f) == 11 and f["transcript_id"].eq("aaaaaaaa-1111-4111-8111-aaaaaaaaaaaa").all()
    assert f["kind"].tolist() == ["system", "other", "user_prompt", "user_prompt", "other", "tool_call", "other",
                                  "tool_result", "tool_call", "tool_result", "model_request"]
    assert f.loc[f["kind"] == "other", "line_type"].tolist() == ["state", "reasoning", "state"]
    # only the meta line carries a time
    assert str(f.iloc[0]["ts"]) == "2025-05-20 10:00:00+00:00" and f["ts"].iloc[1:].isna().all()
    calls = f[f["kind"] == "tool_call"]
    assert calls["message_id"].tolist() == ["fc_1", "fc_2"]
    assert calls.iloc[0][["server", "tool"]].tolist() == ["door", "read_object"]
    # 1e4 in the arguments canonicalises to 10000
    assert calls.iloc[1]["args_key"] == '{"command":["ls","-la"],"timeout":10000}'
    # {"content", "success": false} output → is_error
    assert pd.isna(calls.iloc[0]["is_error"])          # a plain string output says nothing either way
    assert calls.iloc[1]["is_error"] == True  # noqa: E712
    assert calls.iloc[1]["result_text"] == "permission denied"
    assert f.iloc[0]["text"] == "Be careful with data."


def test_typescript_generation():
    res = load_codex(FIX / "typescript")
    f = res.frame
    assert res.inputs[0]["generation"] == "typescript-json"
    # line numbers of the items in the pretty-printed document (grep -n)
    assert f["line_no"].tolist() == [2, 8, 19, 27, 32]
    assert f["kind"].tolist() == ["system", "user_prompt", "tool_call", "tool_result", "model_request"]
    assert f["transcript_id"].eq("bbbbbbbb-2222-4222-8222-bbbbbbbbbbbb").all()
    call = f.iloc[2]
    assert call["args_key"] == '{"command":["ls"]}' and call["call_id"] == "call_T1"
    # the TypeScript CLI's {"output", "metadata": {"exit_code": 0}} text: the output, no error
    assert call["result_text"] == "a.txt\n" and call["is_error"] == False  # noqa: E712
    assert f["ts"].iloc[1:].isna().all()


def test_damaged_lines_are_quarantined_with_line_numbers():
    res = load_codex(FIX / "damaged")
    q = res.quarantine
    QUARANTINE.validate(q)
    assert q["line_no"].tolist() == [2, 3, 5, 7]
    assert q["kind"].tolist() == ["invalid", "invalid", "invalid", "pending"]
    assert q.iloc[0]["error"] == "not a JSON object (list)"
    assert q.iloc[1]["error"] == "response_item payload is not an object (str)"
    assert q.iloc[3]["byte_offset"] == _file("damaged", D).read_bytes().rindex(b"\n") + 1
    f = res.frame
    assert f["line_no"].tolist() == [1, 4, 6]
    # +02:00 offset converted to UTC; lone surrogate replaced
    p = f.iloc[1]
    assert str(p["ts"]) == "2025-09-13 10:00:03.250000+00:00"
    assert p["text"] == "café \ufffd broken"
    assert f.iloc[2]["args_key"] == '{"bucket":"reports","n":1}'
    assert str(f["ts"].dtype) == "datetime64[ns, UTC]"


def test_real_shaped_edge_cases(tmp_path):
    p = tmp_path / "rollout-x.jsonl.gz"
    lines = [
        {"timestamp": "2025-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "s-1", "cli_version": "1"}},
        {"timestamp": "2025-01-01T00:00:01Z", "type": "response_item",
         "payload": {"type": "function_call", "name": "lookup", "namespace": "mcp__kb__", "arguments": "",
                     "call_id": "c1"}},
        {"timestamp": "2025-01-01T00:00:02Z", "type": "response_item",
         "payload": {"type": "function_call_output", "call_id": "c1",
                     "output": [{"type": "input_text", "text": "a"}, {"type": "input_image", "image_url": "x"}]}},
    ]
    p.write_bytes(gzip.compress("\n".join(json.dumps(x) for x in lines).encode() + b"\n"))
    before = p.read_bytes()
    f = load_codex(p).frame
    call = f[f["kind"] == "tool_call"].iloc[0]
    # namespace + bare name; empty arguments string means {}
    assert (call["server"], call["tool"], call["tool_raw"]) == ("kb", "lookup", "mcp__kb__lookup")
    assert call["args_key"] == "{}" and call["images"] == 1 and call["result_text"] == "a"
    assert p.read_bytes() == before


def test_missing_path_and_unreadable(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_codex(tmp_path / "nope")
    bad = tmp_path / "rollout-bad.jsonl"
    bad.write_bytes(b"\x1f\x8b\x08garbage")
    with pytest.raises(InputError, match="cannot read Codex rollout"):
        load_codex(bad)


def test_split_and_sniff():
    assert split_codex_name("mcp__door__read_object") == ("door", "read_object")
    assert split_codex_name("door__read__object") == ("door", "read__object")
    assert split_codex_name("shell") == (None, "shell")
    for sub, sid in (("envelope", P), ("legacy", "aaaaaaaa"), ("typescript", "bbbbbbbb"), ("damaged", D)):
        assert sniff(_file(sub, sid).read_bytes()) >= 0.75, sub
    # a TypeScript document cut by the sample still sniffs by its keys
    doc = _file("typescript", "bbbbbbbb").read_bytes()
    assert sniff(doc[:300]) >= 0.75
    assert sniff(b'{"type":"user","message":{"role":"user"},"uuid":"u","sessionId":"s"}\n') == 0.0
    assert sniff(b"") == 0.0


def test_json_doc_items_lines():
    text = '{\n  "a": 1,\n  "items": [\n    {"x": "]"},\n\n    [2, {"y": "\\"}"}]\n  ]\n}'
    got = list(json_doc_items(text, ("items", "*")))
    assert [(ln, v) for ln, _o, v in got] == [(4, {"x": "]"}), (6, [2, {"y": '"}'}])]
    assert list(json_doc_items('{"b": 2}', ("items", "*"))) == []
    with pytest.raises(ValueError):
        list(json_doc_items('{"items": [1,', ("items", "*")))
    assert codex.LOADER == "codex"


def test_folder_walk_reads_rollouts_only(tmp_path):
    """~/.codex holds auth.json and history.jsonl beside sessions/: a folder walk must skip them."""
    (tmp_path / "auth.json").write_text('{"OPENAI_API_KEY": "sk-not-a-real-key"}')
    (tmp_path / "history.jsonl").write_text('{"session_id": "s", "ts": 1, "text": "hi"}\n')
    day = tmp_path / "sessions" / "2025" / "09" / "13"
    day.mkdir(parents=True)
    src = _file("legacy", "aaaaaaaa")
    (day / src.name).write_bytes(src.read_bytes())
    res = load_codex(tmp_path)
    assert [Path(i["path"]).name for i in res.inputs] == [src.name]
    assert len(load_codex(tmp_path / "history.jsonl").inputs) == 1      # named explicitly: read


def test_odd_function_call_arguments_and_names_are_noted_not_silent(tmp_path):
    """Arguments given as a number, nested past any parser, or a call with no name had loaded
    as an empty or NA value with nothing said."""
    p = tmp_path / "rollout-y.jsonl"
    deep = "[" * 3000 + "]" * 3000
    calls = [{"name": "lookup", "arguments": 5, "call_id": "c1"},
             {"name": "lookup", "arguments": deep, "call_id": "c2"},
             {"name": None, "arguments": "{}", "call_id": "c3"}]
    lines = [{"timestamp": "2025-01-01T00:00:00Z", "type": "session_meta", "payload": {"id": "s-2", "cli_version": "1"}}]
    lines += [{"timestamp": f"2025-01-01T00:00:0{i + 1}Z", "type": "response_item",
               "payload": {"type": "function_call", **c}} for i, c in enumerate(calls)]
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    res = load_codex(p)
    tc = res.frame[res.frame["kind"] == "tool_call"]
    assert len(tc) == 3 and tc["args_key"].isna().tolist() == [True, True, False]
    assert tc["text"].iloc[0] == "5"
    assert res.inputs[0]["notes"] == [
        "line 2: function_call arguments are a number, not JSON text; kept as text, args_key left NA",
        "line 3: function_call arguments are not JSON (or nest too deep); kept as text, args_key left NA: "
        "the call cannot agree by arguments",
        "line 4: function_call has no name (tool left NA)"]
