"""Gemini CLI chat recordings → ``steps`` frame.

Fixtures under ``tests/fixtures/gemini`` are ours, modelled on gemini-cli's
``chatRecordingService.ts`` / ``chatRecordingTypes.ts``:

* ``chats/session-…-5a1b2c3d.jsonl`` — 16 lines: metadata, messages, ``$set`` ×2, gemini message
  ``g1`` re-appended 4 times (tokens, then one, then two tool calls), ``$rewindTo u2``, an info
  message, a non-object line (15) and a cut last line (16);
* ``chats/<parent>/<sub>.jsonl`` — a ``kind: subagent`` recording;
* ``resumed/`` — a ConversationRecord ``.json`` and the ``.jsonl`` it was migrated to (same ids;
  the tool call finished after the migration);
* ``checkpoint/checkpoint-q3.json`` — a ``/chat save`` Content list (functionCall /
  functionResponse parts, with and without ids).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from replaybook.errors import InputError
from replaybook.frames import STEPS
from replaybook.sources.gemini import load_gemini, sniff, split_gemini_name

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "gemini"
MAIN = FIX / "chats" / "session-2025-10-01T12-00-5a1b2c3d.jsonl"
S1 = "5a1b2c3d-aaaa-4bbb-8ccc-000000000001"
SUB = "9e8d7c6b-1111-4222-8333-444455556666"
S2 = "7f00aa11-2222-4333-8444-555566667777"


@pytest.fixture(scope="module")
def main():
    return load_gemini(MAIN)


def test_jsonl_upserts_last_version_wins(main):
    f = main.frame
    STEPS.validate(f)
    assert f["transcript_id"].eq(S1).all() and f["client"].eq("gemini").all()
    assert f["kind"].tolist() == ["system", "user_prompt", "model_request", "tool_call", "tool_call", "user_prompt",
                                  "model_request", "tool_call", "user_prompt", "system", "model_request"]
    # g1 sits where it first appeared (after u1) with the content of its last version (line 8)
    g1 = f[f["message_id"] == "g1"]
    assert g1["line_no"].tolist() == [8, 8, 8]
    assert g1.iloc[0]["input_tokens"] == 900 and g1.iloc[0]["output_tokens"] == 40
    assert g1.iloc[0]["model"] == "gemini-2.5-pro" and str(g1.iloc[0]["ts"]) == "2025-10-01 12:00:02+00:00"
    info = main.inputs[0]
    assert info["superseded"] == 3 and info["metadata_updates"] == 2 and info["rewinds"] == ["u2"]


def test_tool_calls_fields(main):
    f = main.frame.set_index("call_id")
    a = f.loc["mcp_door_read_object-1759320003000-0"]
    assert (a["server"], a["tool"], a["tool_raw"]) == ("door", "read_object", "mcp_door_read_object")
    assert a["args_key"] == '{"bucket":"reports","key":"2025/q3 summary.csv"}'
    assert a["is_error"] == False and a["result_text"] == "region,revenue\nEU,100\n"  # noqa: E712
    # asked for in g1's answer (recorded 12:00:02), completed at 12:00:03.5
    assert str(a["ts"]) == "2025-10-01 12:00:02+00:00" and str(a["result_ts"]) == "2025-10-01 12:00:03.500000+00:00"
    b = f.loc["read_file-1759320004000-1"]                        # built-in, status error
    assert pd.isna(b["server"]) and b["is_error"] == True  # noqa: E712
    assert b["result_text"] == "File not found: /work/notes.md"
    c = f.loc["c3"]                                               # cancelled, kept although rewound
    assert c["is_error"] == True and c["result_text"] == "User cancelled the tool call."  # noqa: E712


def test_rewound_messages_stay_and_text_rules(main):
    f = main.frame
    assert {"u2", "g2"} <= set(f["message_id"].dropna())
    g3 = f[f["message_id"] == "g3"].iloc[0]
    assert g3["text"] == "Q3 EU revenue was 100."                # the thought part is left out
    i1 = f[f["message_id"] == "i1"].iloc[0]
    assert (i1["kind"], i1["line_type"], i1["text"]) == ("system", "info", "Request cancelled.")


def test_quarantine(main):
    q = main.quarantine
    assert q["line_no"].tolist() == [15, 16] and q["kind"].tolist() == ["invalid", "pending"]
    assert q.iloc[0]["error"] == "not a JSON object (str)"


def test_subagent_recording():
    res = load_gemini(FIX / "chats")
    f = res.frame
    sub = f[f["transcript_id"] == SUB]
    assert len(sub) == 4 and sub["agent_id"].eq(SUB).all()
    assert f[f["transcript_id"] == S1]["agent_id"].isna().all()
    call = sub[sub["kind"] == "tool_call"].iloc[0]
    assert (call["server"], call["tool"]) == ("door", "list_objects")    # mcp_<server>_<tool>


def test_resumed_json_then_jsonl_counts_once():
    res = load_gemini(FIX / "resumed")
    f = res.frame
    assert f["transcript_id"].eq(S2).all()
    assert f["kind"].tolist() == ["system", "user_prompt", "model_request", "tool_call", "user_prompt"]
    assert f["message_id"].dropna().tolist() == ["m1", "m2", "m2", "m3"]
    # the system row comes from the .json header; messages carry the .jsonl's last versions
    assert f.iloc[0]["source_file"].endswith(".json") and f.iloc[0]["line_no"] == 1
    assert f.iloc[1:]["source_file"].str.endswith(".jsonl").all()
    assert f["line_no"].tolist()[1:] == [2, 5, 5, 6]
    call = f.iloc[3]
    assert (call["server"], call["tool"]) == ("door", "list_objects")    # older <server>__<tool>
    assert call["is_error"] == False and call["result_text"] == "2025/\nREADME.md"  # noqa: E712
    assert [i["superseded"] for i in res.inputs] == [2, 1]


def test_checkpoint_content_list():
    res = load_gemini(FIX / "checkpoint")
    f = res.frame
    assert f["transcript_id"].eq("checkpoint-q3").all() and f["ts"].isna().all()
    assert f["kind"].tolist() == ["user_prompt", "model_request", "tool_call", "tool_result", "model_request",
                                  "tool_call", "tool_call", "tool_result", "tool_result", "model_request"]
    assert f["line_no"].tolist() == [2, 10, 10, 27, 40, 40, 40, 63, 63, 86]
    calls = f[f["kind"] == "tool_call"].set_index("tool")
    # paired by name (no ids) and by id (results in another order)
    assert calls.loc["read_object", "result_text"] == "region,revenue\nEU,100\n"
    assert calls.loc["read_file", "is_error"] == True and calls.loc["read_file", "result_text"] == "not found"  # noqa
    assert calls.loc["list_objects", "server"] == "door" and calls.loc["list_objects", "result_text"] == "a\nb"
    assert pd.isna(calls.loc["read_object", "server"])           # unprefixed MCP name: indistinguishable


def test_split_names():
    assert split_gemini_name("read_object", "read_object (files MCP Server)") == ("files", "read_object")
    assert split_gemini_name("mcp_files_read_object") == ("files", "read_object")
    assert split_gemini_name("files__read_object") == ("files", "read_object")
    assert split_gemini_name("run_shell_command", "Shell") == (None, "run_shell_command")


def test_a_checkpoint_whose_first_message_fills_the_sniffed_sample_is_still_gemini(tmp_path):
    """A /chat save checkpoint whose first user message is longer than the 256 KB sniffed (a file
    pasted with @) shows no model turn in the sample: no source had recognised it, so the
    conversation and its tool calls were never loaded."""
    import json

    from replaybook.sources.registry import SNIFF_BYTES, sniff_file

    big = "x" * (SNIFF_BYTES + 10)
    content = [{"role": "user", "parts": [{"text": big}]},
               {"role": "model", "parts": [{"functionCall": {"name": "mcp_door_read", "args": {"path": "a"}}}]}]
    p = tmp_path / "checkpoint-big.json"
    p.write_text(json.dumps(content, indent=2))
    src, score = sniff_file(p)
    assert src is not None and (src.name, score) == ("gemini", 0.6)
    h = tmp_path / "checkpoint-history.json"
    h.write_text(json.dumps({"history": content}))
    assert sniff_file(h)[0].name == "gemini"
    calls = load_gemini(p).frame.query("kind == 'tool_call'")
    assert calls[["server", "tool", "args_key"]].values.tolist() == [["door", "read", '{"path":"a"}']]
    # a request body of the Gemini API cut the same way is not a recording
    assert sniff(json.dumps({"contents": content}, indent=2).encode()[:SNIFF_BYTES]) == 0.0


def test_sniff_and_errors(tmp_path):
    assert sniff(MAIN.read_bytes()) >= 0.9
    assert sniff((FIX / "resumed" / "session-2025-09-30T08-00-7f00aa11.json").read_bytes()) >= 0.85
    assert sniff((FIX / "checkpoint" / "checkpoint-q3.json").read_bytes()) >= 0.6
    # a message-only tail of a JSONL (no metadata line in the sample)
    tail = b"\n".join(MAIN.read_bytes().split(b"\n")[1:10]) + b"\n"
    assert 0.5 <= sniff(tail) < 0.9
    assert sniff(b'{"type":"user","uuid":"u","sessionId":"s","message":{"role":"user"}}\n') == 0.0
    with pytest.raises(InputError, match="no such file"):
        load_gemini(tmp_path / "missing")
    bad = tmp_path / "session-bad.json"
    bad.write_text('{\n  "sessionId": "x",\n  "messages": [\n')
    res = load_gemini(bad)
    assert res.frame.empty and res.quarantine.iloc[0]["line_no"] == 4
    before = MAIN.stat().st_mtime_ns
    load_gemini(MAIN)
    assert MAIN.stat().st_mtime_ns == before


def test_folder_walk_reads_recordings_only(tmp_path):
    """~/.gemini holds settings.json and oauth_creds.json; tmp/<hash>/ holds logs.json: skipped."""
    (tmp_path / "oauth_creds.json").write_text('{"access_token": "not-a-real-token"}')
    (tmp_path / "settings.json").write_text('{"theme": "x"}')
    proj = tmp_path / "tmp" / "abc123"
    (proj / "chats" / S1).mkdir(parents=True)
    (proj / "logs.json").write_text('[{"sessionId": "x", "messageId": 0, "type": "user", "message": "hi"}]')
    (proj / "chats" / MAIN.name).write_bytes(MAIN.read_bytes())
    sub = FIX / "chats" / S1 / f"{SUB}.jsonl"
    (proj / "chats" / S1 / sub.name).write_bytes(sub.read_bytes())
    res = load_gemini(tmp_path)
    assert sorted(Path(i["path"]).name for i in res.inputs) == sorted([MAIN.name, sub.name])


def test_a_byte_for_byte_copy_of_a_recording_leaves_the_session_whole(tmp_path, main):
    # a copy read as a later version superseded every message of the first file, and was then
    # left out as a copy: 1 row of 9 were left, and the session joined nothing
    import shutil

    from replaybook.loading import load

    src = Path(main.inputs[0]["path"])
    a, b = tmp_path / "a" / src.name, tmp_path / "b" / src.name
    for p in (a, b):
        p.parent.mkdir()
        shutil.copy(src, p)
    whole = load_gemini(src).frame
    for paths in ([a, b], [b, a]):
        res = load_gemini(paths)
        assert len(res.frame) == len(whole) > 1
        assert res.frame["source_file"].eq(str(paths[0])).all()
        assert [(i.get("skipped"), i.get("same_as")) for i in res.inputs] == [(None, None), (True, str(paths[0]))]
    got = load([a, b])
    assert len(got.results["steps"].frame) == len(whole)
