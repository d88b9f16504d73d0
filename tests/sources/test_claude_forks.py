"""Forked Claude Code sessions: each line counted once, in the session it was first written in.

A fork copies a session's lines into a new file and marks each copy with
``forkedFrom: {sessionId, messageUuid}``.  ``/branch`` keeps each line's ``uuid``; the Agent SDK's
``forkSession()`` gives every copy a fresh ``uuid`` (``messageUuid`` keeps the original's),
rebuilds ``parentUuid`` through the new ids, may stop mid-session (``upToMessageId``) and
re-stamps the last copy's ``timestamp`` with the time of the fork.  Counted by ``uuid`` alone,
an SDK fork's copies were new lines: every tool call the agent made before the fork was in the
frame twice — two steps for one door call, and the fork's transcript agreeing with the first
session's door log as well as the original did.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_claude_fast_equiv import asst, assert_same, j, tr, tu, user

from replaybook.sources.claude_code import load_claude_code

ORIG = "aaaaaaaa-0000-4000-8000-aaaaaaaaaaaa"
FORK = "bbbbbbbb-0000-4000-8000-bbbbbbbbbbbb"
T0 = "2026-09-13T10:00:0{}.000Z"


def _session() -> list[bytes]:
    """The first session: two questions, one door call each."""
    return [user("u1", "What is the mean mpg?", sessionId=ORIG, timestamp=T0.format(1)),
            asst("a1", "m1", "r1", [tu("toolu_1", "mcp__door__query", {"sql": "select avg(mpg)"})],
                 sessionId=ORIG, parentUuid="u1", timestamp=T0.format(2)),
            user("u2", [tr("toolu_1", "avg 19.9")], sessionId=ORIG, parentUuid="a1", timestamp=T0.format(3)),
            user("u3", "and the median?", sessionId=ORIG, parentUuid="u2", timestamp=T0.format(4)),
            asst("a3", "m3", "r3", [tu("toolu_2", "mcp__door__query", {"sql": "select median(mpg)"})],
                 sessionId=ORIG, parentUuid="u3", timestamp=T0.format(5)),
            user("u4", [tr("toolu_2", "19.2")], sessionId=ORIG, parentUuid="a3", timestamp=T0.format(6))]


def _sdk_fork(lines: list[bytes], upto: int) -> list[bytes]:
    """``forkSession(ORIG, upToMessageId=lines[upto-1])``: fresh uuids, the chain remapped, the
    last copy re-stamped, a ``forkedFrom`` on each."""
    out, new = [], {}
    for i, raw in enumerate(lines[:upto]):
        o = json.loads(raw)
        new[o["uuid"]] = f"f{o['uuid']}"
        o.update(forkedFrom={"sessionId": ORIG, "messageUuid": o["uuid"]}, uuid=new[o["uuid"]],
                 parentUuid=new.get(o["parentUuid"]), sessionId=FORK, isSidechain=False)
        if i == upto - 1:
            o["timestamp"] = "2026-09-13T11:30:00.000Z"
        out.append(j(o))
    last = json.loads(out[-1])["uuid"]
    return out + [
        user("n1", "count the cars instead", sessionId=FORK, parentUuid=last, timestamp="2026-09-13T11:31:00.000Z"),
        asst("n2", "m9", "r9", [tu("toolu_9", "mcp__door__query", {"sql": "select count(*)"})],
             sessionId=FORK, parentUuid="n1", timestamp="2026-09-13T11:31:01.000Z")]


def _branch(lines: list[bytes]) -> list[bytes]:
    """``/branch``: the uuids kept, ``sessionId`` re-stamped, the chain rebuilt, ``forkedFrom``."""
    out, parent = [], None
    for raw in lines:
        o = json.loads(raw)
        o.update(forkedFrom={"sessionId": ORIG, "messageUuid": o["uuid"]}, sessionId=FORK,
                 parentUuid=parent, isSidechain=False)
        parent = o["uuid"]
        out.append(j(o))
    return out + [user("n1", "now per cylinder count", sessionId=FORK, parentUuid=parent,
                       timestamp="2026-09-13T11:00:00.000Z")]


def _write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(x + b"\n" for x in lines))
    return path


def _calls(frame) -> list[tuple[str, str]]:
    calls = frame[frame["kind"] == "tool_call"]
    return sorted(zip(calls["call_id"], calls["transcript_id"]))


@pytest.mark.parametrize("fork_first", [False, True])
def test_an_sdk_fork_counts_the_copied_calls_once_in_the_session_they_were_made_in(tmp_path, monkeypatch, fork_first):
    orig = _write(tmp_path / f"{ORIG}.jsonl", _session())
    fork = _write(tmp_path / f"{FORK}.jsonl", _sdk_fork(_session(), upto=3))  # stops before the second question
    paths = [fork, orig] if fork_first else [orig, fork]
    frame = assert_same(paths, monkeypatch)
    res = load_claude_code(paths)
    assert res.quarantine.empty
    assert _calls(frame) == [("toolu_1", ORIG), ("toolu_2", ORIG), ("toolu_9", FORK)]
    assert frame.groupby(frame["transcript_id"].astype(str)).size().to_dict() == {ORIG: 8, FORK: 3}
    info = {Path(i["path"]).stem: i for i in res.inputs}
    assert info[FORK]["duplicates"] == 3 and info[ORIG]["duplicates"] == 0
    assert info[FORK]["forked_from"] == [ORIG] and "forked_from" not in info[ORIG]
    assert info[FORK]["resumes"] == ORIG
    # the result row of the copied call is the original's, at its own time
    call = frame[frame["call_id"] == "toolu_1"].iloc[0]
    assert str(call["result_ts"]) == "2026-09-13 10:00:03+00:00" and call["result_text"] == "avg 19.9"


def test_an_sdk_fork_alone_keeps_every_line(tmp_path, monkeypatch):
    # the first session's file was not collected: the fork's copies are the only record of them
    fork = _write(tmp_path / f"{FORK}.jsonl", _sdk_fork(_session(), upto=6))
    frame = assert_same([fork], monkeypatch)
    assert _calls(frame) == [("toolu_1", FORK), ("toolu_2", FORK), ("toolu_9", FORK)]
    assert list(frame["uuid"][:2]) == ["fu1", "fa1"]


@pytest.mark.parametrize("fork_first", [False, True])
def test_a_branch_keeps_its_copies_as_copies_not_conflicts(tmp_path, monkeypatch, fork_first):
    # /branch keeps the uuids but rebuilds parentUuid and adds forkedFrom: compared as a resume's
    # copy, every line was set aside as a conflict
    orig = _write(tmp_path / f"{ORIG}.jsonl", _session())
    fork = _write(tmp_path / f"{FORK}.jsonl", _branch(_session()[:3]))
    paths = [fork, orig] if fork_first else [orig, fork]
    frame = assert_same(paths, monkeypatch)
    res = load_claude_code(paths)
    assert res.quarantine.empty
    assert _calls(frame) == [("toolu_1", ORIG), ("toolu_2", ORIG)]
    assert frame.groupby(frame["transcript_id"].astype(str)).size().to_dict() == {ORIG: 8, FORK: 1}
    assert {Path(i["path"]).stem: i["duplicates"] for i in res.inputs} == {ORIG: 0, FORK: 3}


def test_a_fork_copy_that_says_something_else_is_a_conflict(tmp_path, monkeypatch):
    lines = _sdk_fork(_session(), upto=3)
    o = json.loads(lines[1])
    o["message"]["content"][0]["input"] = {"sql": "select max(mpg)"}
    lines[1] = j(o)
    orig = _write(tmp_path / f"{ORIG}.jsonl", _session())
    fork = _write(tmp_path / f"{FORK}.jsonl", lines)
    assert_same([orig, fork], monkeypatch)
    q = load_claude_code([orig, fork]).quarantine
    assert list(zip(q["line_no"], q["kind"])) == [(2, "conflict")]
    assert q["error"].iloc[0] == (f"stands for the same line as {orig}:2 with different content (message "
                                  "differs); the first is kept, this one set aside")


def test_a_fork_copy_dated_before_the_line_it_copies_is_a_conflict(tmp_path):
    # the SDK re-stamps a copy with the later time of the fork, never an earlier one
    lines = _sdk_fork(_session(), upto=3)
    o = json.loads(lines[0])
    o["timestamp"] = "2026-09-13T09:00:00.000Z"
    lines[0] = j(o)
    orig = _write(tmp_path / f"{ORIG}.jsonl", _session())
    fork = _write(tmp_path / f"{FORK}.jsonl", lines)
    q = load_claude_code([orig, fork]).quarantine
    assert list(zip(q["line_no"], q["kind"])) == [(1, "conflict")] and "(timestamp differs)" in q["error"].iloc[0]


def test_a_resume_by_another_entry_point_is_still_a_copy(tmp_path, monkeypatch):
    # a resume re-stamps userType and entrypoint (cli / sdk-cli) along with sessionId and version
    first = [user("u1", "What is the mean mpg?", sessionId=ORIG, entrypoint="cli"),
             asst("a1", "m1", "r1", [tu("toolu_1", "mcp__door__query", {"sql": "select avg(mpg)"})],
                  sessionId=ORIG, entrypoint="cli")]

    def copy(raw: bytes) -> bytes:
        o = json.loads(raw)
        o.update(sessionId=FORK, entrypoint="sdk-cli", userType="internal")
        return j(o)

    orig = _write(tmp_path / f"{ORIG}.jsonl", first)
    resumed = _write(tmp_path / f"{FORK}.jsonl", [copy(x) for x in first] + [user("n1", "thanks", sessionId=FORK)])
    frame = assert_same([resumed, orig], monkeypatch)
    res = load_claude_code([resumed, orig])
    assert res.quarantine.empty
    assert _calls(frame) == [("toolu_1", ORIG)]
    assert {Path(i["path"]).stem: i["duplicates"] for i in res.inputs} == {ORIG: 0, FORK: 2}


def test_persisted_tool_results_are_listed_beside_their_session_and_never_read_as_transcripts(tmp_path, monkeypatch):
    # Claude Code 2.1.2+: a result over the size limit goes to <session>/tool-results/<id>.txt and
    # the model gets a <persisted-output> preview; the preview is the step's result, the file evidence
    preview = ("<persisted-output>\nOutput too large (61.2KB). Full output saved to: /home/a/.claude/projects/p/"
               f"{ORIG}/tool-results/toolu_1.txt\n\nPreview (first 2KB):\nmpg,cyl\n21.0,6\n</persisted-output>")
    lines = _session()
    o = json.loads(lines[2])
    o["message"]["content"][0]["content"] = preview
    lines[2] = j(o)
    path = _write(tmp_path / f"{ORIG}.jsonl", lines)
    (tmp_path / ORIG / "tool-results").mkdir(parents=True)
    full = b"mpg,cyl\n" + b"21.0,6\n" * 9000
    (tmp_path / ORIG / "tool-results" / "toolu_1.txt").write_bytes(full)
    (tmp_path / ORIG / "tool-results" / "toolu_1.jsonl").write_bytes(b'{"not": "a transcript"}\n')
    frame = assert_same(tmp_path, monkeypatch)
    res = load_claude_code(tmp_path)
    assert [Path(i["path"]).name for i in res.inputs] == [f"{ORIG}.jsonl"]  # the folder's own .jsonl is not one
    assert frame.loc[frame["call_id"].eq("toolu_1") & frame["kind"].eq("tool_call"), "result_text"].iloc[0] == preview
    import hashlib

    sides = res.inputs[0]["side_files"]
    assert [(Path(s["path"]).name, s["format"], s["sha256"], s["side_of"]) for s in sides] == [
        ("toolu_1.jsonl", "claude-code persisted tool result",
         hashlib.sha256(b'{"not": "a transcript"}\n').hexdigest(), str(path)),
        ("toolu_1.txt", "claude-code persisted tool result", hashlib.sha256(full).hexdigest(), str(path))]


THIRD = "cccccccc-0000-4000-8000-cccccccccccc"


def _refork(lines: list[bytes], session: str, new_session: str, prefix: str, stamp: str) -> list[bytes]:
    """An SDK fork of ``lines`` (themselves a fork's, or a session's): fresh uuids, ``forkedFrom``
    naming each line by its own uuid, the last copy re-stamped with ``stamp``."""
    out, new = [], {}
    for i, raw in enumerate(lines):
        o = json.loads(raw)
        new[o["uuid"]] = prefix + o["uuid"]
        o.update(forkedFrom={"sessionId": session, "messageUuid": o["uuid"]}, uuid=new[o["uuid"]],
                 parentUuid=new.get(o.get("parentUuid")), sessionId=new_session)
        if i == len(lines) - 1:
            o["timestamp"] = stamp
        out.append(j(o))
    return out


@pytest.mark.parametrize("order", ["oab", "bao", "aob"])
def test_a_fork_of_a_fork_counts_each_line_once(tmp_path, monkeypatch, order):
    # O ← A (forkSession of O) ← B (forkSession of A): B names A's copies by A's fresh uuids
    a_lines = _sdk_fork(_session(), upto=3)
    b_lines = _refork(a_lines[:3], FORK, THIRD, "g", "2026-09-13T12:00:00.000Z") + [
        user("x1", "and the max?", sessionId=THIRD, parentUuid="gfu2", timestamp="2026-09-13T12:00:01.000Z")]
    files = {"o": _write(tmp_path / f"{ORIG}.jsonl", _session()), "a": _write(tmp_path / f"{FORK}.jsonl", a_lines),
             "b": _write(tmp_path / f"{THIRD}.jsonl", b_lines)}
    paths = [files[k] for k in order]
    frame = assert_same(paths, monkeypatch)
    res = load_claude_code(paths)
    assert res.quarantine.empty
    assert _calls(frame) == [("toolu_1", ORIG), ("toolu_2", ORIG), ("toolu_9", FORK)]
    assert frame.groupby(frame["transcript_id"].astype(str)).size().to_dict() == {ORIG: 8, FORK: 3, THIRD: 1}
    info = {Path(i["path"]).stem: i for i in res.inputs}
    assert info[THIRD]["forked_from"] == [FORK] and info[THIRD]["duplicates"] == 3


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_two_forks_of_one_session_agree_whatever_their_fork_times(tmp_path, monkeypatch, order):
    # the first session's file is gone; each fork re-stamped its last copy with its own time
    a = _write(tmp_path / f"{FORK}.jsonl", _refork(_session()[:3], ORIG, FORK, "f", "2026-09-13T11:00:00.000Z"))
    b = _write(tmp_path / f"{THIRD}.jsonl", _refork(_session()[:3], ORIG, THIRD, "g", "2026-09-13T12:00:00.000Z"))
    paths = [a, b] if order == "ab" else [b, a]
    frame = assert_same(paths, monkeypatch)
    res = load_claude_code(paths)
    assert res.quarantine.empty
    assert [c for c, _ in _calls(frame)] == ["toolu_1"]
    assert sorted(i["duplicates"] for i in res.inputs) == [0, 3]
