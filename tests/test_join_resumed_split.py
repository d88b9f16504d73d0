"""A door session whose calls come from one streamed response that a session file collected
mid-write cut and the file resuming it finished: the join sees one transcript holding both
calls (``sources/_resume_split.py``), on the fast and the reference load path."""

from __future__ import annotations

import json

import pytest

from replaybook.join import join_sessions
from replaybook.sources._claude_ref import load_reference
from replaybook.sources._resume_split import merge_split_responses
from replaybook.sources.claude_code import _mark_resumes, load_claude_code
from replaybook.sources.door import load_door

ORIG, RESUMED = "aaaa1111-0000-4000-8000-00000000000a", "bbbb1111-0000-4000-8000-00000000000b"


def _line(session: str, kind: str, uuid: str, parent: str | None, ts: str, message: dict, **kw) -> dict:
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/analyst/project",
            "sessionId": session, "version": "2.0.55", "type": kind, "uuid": uuid, "timestamp": ts,
            "message": message, **kw}


def _chunk(session, uuid, parent, content, out_tokens) -> dict:
    return _line(session, "assistant", uuid, parent, "2026-09-13T10:00:02.000Z",
                 {"model": "claude-sonnet-4-5", "id": "msg_CUT", "type": "message", "role": "assistant",
                  "content": content, "stop_reason": None, "usage": {"input_tokens": 5, "output_tokens": out_tokens}},
                 requestId="req_CUT")


def _describe(cid: str, path: str) -> dict:
    return {"type": "tool_use", "id": cid, "name": "mcp__door__describe", "input": {"path": path}}


def _session_lines(session: str) -> list[dict]:
    return [_line(session, "user", "u1", None, "2026-09-13T10:00:00.000Z", {"role": "user", "content": "Check two files"}),
            _chunk(session, "a1", "u1", [{"type": "text", "text": "Looking"}], 10),
            _chunk(session, "a2", "a1", [_describe("toolu_cut_1", "demo/a.parquet")], 40)]


def _write(tmp_path):
    t = tmp_path / "transcripts"
    t.mkdir()
    rest = [_chunk(RESUMED, "a3", "a2", [_describe("toolu_cut_2", "demo/b.parquet")], 70),
            _line(RESUMED, "user", "u2", "a3", "2026-09-13T10:05:03.000Z",
                  {"role": "user", "content": [{"tool_use_id": "toolu_cut_1", "type": "tool_result",
                                                "content": "a: 12 rows", "is_error": False}]}),
            _line(RESUMED, "user", "u3", "u2", "2026-09-13T10:05:03.100Z",
                  {"role": "user", "content": [{"tool_use_id": "toolu_cut_2", "type": "tool_result",
                                                "content": "b: 10 rows", "is_error": False}]})]
    (t / f"{ORIG}.jsonl").write_text("".join(json.dumps(o) + "\n" for o in _session_lines(ORIG)))
    (t / f"{RESUMED}.jsonl").write_text("".join(json.dumps(o) + "\n" for o in _session_lines(RESUMED) + rest))
    d = tmp_path / "door" / "analyst"
    d.mkdir(parents=True)
    calls = [{"ts": f"2026-09-13T10:00:02.3{i}0Z", "seq": i + 1, "session": "door-cut", "agent": "analyst",
              "tool": "describe", "arguments": {"path": p}, "object": p, "decision": "allow", "rule": "r"}
             for i, p in enumerate(("demo/a.parquet", "demo/b.parquet"))]
    (d / "door-cut.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calls))
    return t, tmp_path / "door"


def _reference(paths):
    res = load_reference(paths)
    _mark_resumes(res)
    merge_split_responses(res)
    return res


@pytest.mark.parametrize("load", [load_claude_code, _reference], ids=["fast", "reference"])
def test_the_door_session_agrees_with_the_conversation_in_full(tmp_path, load):
    """It had been ``ambiguous``, 1 of 2 calls agreed, the runner-up the resumed file's
    transcript holding the other call."""
    t, d = _write(tmp_path)
    steps = load(t).frame
    s = join_sessions(steps, load_door(d).frame).sessions.set_index("door_session")
    assert s.loc["door-cut", ["transcript_id", "calls", "agreed", "status"]].tolist() == [ORIG, 2, 2, "matched"]
    mr = steps[steps["kind"] == "model_request"]
    assert mr["output_tokens"].tolist() == [70] and int(mr["output_tokens"].sum()) == 70


def test_unrelated_files_sharing_message_ids_are_not_read_again(tmp_path, monkeypatch):
    """Tools that write fixed message ids give unrelated transcripts the same (message.id,
    requestId): none copies another's lines, so none can continue another's response.  Each
    shared id had read both files again — a 3.8 MB folder took 42 s.  Now no file is read again,
    and the frame keeps both requests; a resumed file is read again once, whatever the ids."""
    from replaybook.sources import _resume_split

    t = tmp_path / "transcripts"
    t.mkdir()
    for n, sid in enumerate(("cccc0000-0000-4000-8000-00000000000c", "dddd0000-0000-4000-8000-00000000000d")):
        lines = [_line(sid, "user", f"{sid}-u", None, "2026-09-13T10:00:00.000Z", {"role": "user", "content": "go"})]
        for k in range(20):
            lines.append(_line(sid, "assistant", f"{sid}-a{k}", lines[-1]["uuid"], "2026-09-13T10:00:01.000Z",
                               {"model": "m", "id": f"msg_{k}", "type": "message", "role": "assistant",
                                "content": [{"type": "text", "text": f"{n}-{k}"}],
                                "usage": {"input_tokens": 1, "output_tokens": 2}}, requestId=f"req_{k}"))
        (t / f"{sid}.jsonl").write_text("".join(json.dumps(o) + "\n" for o in lines))
    read: list = []
    real = _resume_split._lines
    monkeypatch.setattr(_resume_split, "_lines", lambda p: read.append(p) or real(p))
    res = load_claude_code([t])
    assert read == []
    assert int((res.frame["kind"] == "model_request").sum()) == 40
    (tmp_path / "resumed").mkdir()
    _write(tmp_path / "resumed")
    res = load_claude_code([tmp_path / "resumed" / "transcripts"])
    assert sorted(read) == sorted(str(p) for p in (tmp_path / "resumed" / "transcripts").iterdir())
    assert int((res.frame["kind"] == "model_request").sum()) == 1
