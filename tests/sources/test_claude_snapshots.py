"""An earlier copy of a Claude Code transcript — a backup or snapshot of the same session file,
taken while the conversation went on — is not read as a transcript of its own.

Read too, its lines (the later file's first lines) had been the snapshot's: the later file was
taken for a session resuming it, the door session was joined to the snapshot and the calls after
it were reported as calls no step claims."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

from replaybook.join import join_sessions
from replaybook.loading import copy_words
from replaybook.sources.claude_code import load_claude_code
from replaybook.sources.door import load_door

SID = "11111111-1111-4111-8111-111111111111"


def _lines() -> list[str]:
    out = []
    for i in range(3):
        base = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/p", "sessionId": SID,
                "version": "2.1.42"}
        out.append(json.dumps(dict(base, type="assistant", uuid=f"a{i}", timestamp=f"2026-09-13T10:00:{10 * i:02d}.000Z",
                                   requestId=f"req_{i}", message={
                                       "id": f"msg_{i}", "type": "message", "role": "assistant", "model": "m",
                                       "content": [{"type": "tool_use", "id": f"toolu_{i}",
                                                    "name": "mcp__door__read_object",
                                                    "input": {"path": f"demo/{i}.csv"}}],
                                       "usage": {"input_tokens": 1, "output_tokens": 2}})))
        out.append(json.dumps(dict(base, type="user", uuid=f"r{i}", timestamp=f"2026-09-13T10:00:{10 * i + 1:02d}.000Z",
                                   message={"role": "user", "content": [
                                       {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "ok"}]})))
    return out


def _door(tmp_path: Path) -> Path:
    d = tmp_path / "door" / "analyst"
    d.mkdir(parents=True)
    (d / "door-A.jsonl").write_text("".join(json.dumps({
        "ts": f"2026-09-13T10:00:{10 * i:02d}.500Z", "seq": i + 1, "session": "door-A", "agent": "analyst",
        "server": "door", "tool": "read_object", "arguments": {"path": f"demo/{i}.csv"}, "object": f"demo/{i}.csv",
        "decision": "allow", "rule": "r", "rows": 1, "bytes": 2}) + "\n" for i in range(3)))
    return tmp_path / "door"


def test_an_earlier_copy_of_the_same_session_file_is_not_a_transcript_of_its_own(tmp_path):
    lines = _lines()
    full = tmp_path / "t" / f"{SID}.jsonl"
    full.parent.mkdir()
    full.write_text("\n".join(lines) + "\n")
    (tmp_path / "t" / "old").mkdir()
    snap = tmp_path / "t" / "old" / f"{SID}.jsonl"
    snap.write_text("\n".join(lines[:4]) + "\n")
    gz = tmp_path / "t" / "old" / f"{SID}.jsonl.gz"  # (a gzipped backup taken even earlier)
    gz.write_bytes(gzip.compress(("\n".join(lines[:2]) + "\n").encode()))
    res = load_claude_code(tmp_path / "t")
    f = res.frame
    assert f["transcript_id"].unique().tolist() == [SID]
    assert f.loc[f["kind"] == "tool_call", "call_id"].tolist() == ["toolu_0", "toolu_1", "toolu_2"]
    by_path = {Path(i["path"]).relative_to(tmp_path).as_posix(): i for i in res.inputs}
    assert [k for k, i in by_path.items() if not i.get("skipped")] == [f"t/{SID}.jsonl"]
    assert by_path[f"t/old/{SID}.jsonl"]["copy_of"] == str(full) and by_path[f"t/old/{SID}.jsonl"]["lines"] == 4
    assert by_path[f"t/old/{SID}.jsonl.gz"]["copy_of"] == str(full)
    assert copy_words(by_path[f"t/old/{SID}.jsonl"]) == (f"an earlier copy of {full}: its 4 lines begin that "
                                                        "file, and are read there")
    assert not any(i.get("resumes") for i in res.inputs)
    calls = load_door(_door(tmp_path)).frame
    j = join_sessions(f, calls)
    s = j.sessions.set_index("door_session")
    assert (s.loc["door-A", "transcript_id"], s.loc["door-A", "agreed"], s.loc["door-A", "status"]) == (SID, 3, "matched")
    assert j.n_unclaimed_calls == 0


def test_files_that_are_not_earlier_copies_are_all_read(tmp_path):
    """A file of another name that starts with the same lines (a resumed session's own file), and
    a file of the same name that does not begin the other one, are each read."""
    lines = _lines()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / f"{SID}.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "b" / f"{SID}.jsonl").write_text("\n".join(lines[2:4]) + "\n")  # (same name, other lines)
    other = "22222222-2222-4222-8222-222222222222"
    (tmp_path / "a" / f"{other}.jsonl").write_text("\n".join(lines[:2]) + "\n")  # (a prefix, other name)
    res = load_claude_code(tmp_path)
    assert not any(i.get("skipped") for i in res.inputs) and len(res.inputs) == 3


def test_the_meta_file_beside_an_earlier_copy_of_a_sub_agent_is_listed_with_it(tmp_path):
    """A snapshot folder of a sub-agent holds its ``agent-<id>.meta.json`` too: the earlier copy
    is not read, but that file is evidence, and had been listed nowhere (neither as read nor as
    skipped) — the checksum file and the Inputs section left it out."""
    lines = [json.dumps({"type": "user", "uuid": f"u{i}", "sessionId": "s1", "agentId": "x", "isSidechain": True,
                         "timestamp": f"2026-01-01T00:00:0{i}Z", "message": {"role": "user", "content": f"hi {i}"}})
             + "\n" for i in range(4)]
    (tmp_path / "old").mkdir()
    (tmp_path / "agent-x.jsonl").write_text("".join(lines))
    (tmp_path / "old" / "agent-x.jsonl").write_text("".join(lines[:2]))
    (tmp_path / "agent-x.meta.json").write_text('{"agentType": "general-purpose"}')
    old_meta = tmp_path / "old" / "agent-x.meta.json"
    old_meta.write_text('{"agentType": "general-purpose", "description": "before"}')
    res = load_claude_code(tmp_path)
    assert len(res.frame) == 4
    by_path = {Path(i["path"]).relative_to(tmp_path).as_posix(): i for i in res.inputs}
    old = by_path["old/agent-x.jsonl"]
    assert old["skipped"] is True and old["copy_of"] == str(tmp_path / "agent-x.jsonl")
    assert [(s["path"], s["format"], s["sha256"]) for s in old["side_files"]] == [
        (str(old_meta), "claude-code sub-agent meta", hashlib.sha256(old_meta.read_bytes()).hexdigest())]
    assert [s["path"] for s in by_path["agent-x.jsonl"]["side_files"]] == [str(tmp_path / "agent-x.meta.json")]
