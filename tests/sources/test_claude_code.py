"""Claude Code transcript loader → ``steps`` frame.

Case fixtures under ``tests/fixtures/claude_code/claude-*`` are copies of ``../shared/cases``
(with their ``expected.json``); the other fixture folders are ours, modelled on real shapes.
Edge cases that need big or binary inputs are written to ``tmp_path``.
"""

from __future__ import annotations

import gzip
import hashlib
import inspect
import json
import os
import stat
from pathlib import Path

import pandas as pd
import pytest

from replaybook._text import TEXT_LIMIT
from replaybook.errors import InputError
from replaybook.frames import QUARANTINE, STEPS, STEP_KINDS
from replaybook.sources import claude_code as cc
from replaybook.sources.claude_code import load_claude_code, sniff, split_mcp_name

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code"
CASES = sorted(p.name for p in FIX.glob("claude-*"))


def expected(case: str) -> dict:
    return json.loads((FIX / case / "expected.json").read_text("utf-8"))


def kinds(frame: pd.DataFrame, kind: str) -> pd.DataFrame:
    return frame[frame["kind"] == kind]


def line(**kw) -> dict:
    """A user/assistant line with the usual envelope."""
    d = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/p",
         "sessionId": "ffffffff-0000-4000-8000-ffffffffffff", "version": "2.0.55",
         "timestamp": "2026-09-13T10:00:00.000Z"}
    d.update(kw)
    return d


def user(uuid: str, content, **kw) -> dict:
    return line(type="user", uuid=uuid, message={"role": "user", "content": content}, **kw)


def assistant(uuid: str, mid: str, rid: str, content: list, usage: dict | None = None, **kw) -> dict:
    msg = {"model": "claude-sonnet-4-5", "id": mid, "type": "message", "role": "assistant",
           "content": content}
    if usage is not None:
        msg["usage"] = usage
    return line(type="assistant", uuid=uuid, requestId=rid, message=msg, **kw)


def write_jsonl(path: Path, items: list) -> Path:
    """Write items (dicts → JSON, bytes/str verbatim) one per line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        for it in items:
            if isinstance(it, bytes):
                fh.write(it)
            elif isinstance(it, str):
                fh.write(it.encode("utf-8"))
            else:
                fh.write(json.dumps(it).encode("utf-8"))
            fh.write(b"\n")
    return path


# --------------------------------------------------------------------------- the five cases

def test_case_fixtures_are_all_here():
    assert CASES == ["claude-damaged-lines", "claude-resumed-session", "claude-streaming-split",
                     "claude-tool-result-shapes", "claude-unknown-line-types"]


def test_case_damaged_lines(tmp_path):
    exp = expected("claude-damaged-lines")
    res = load_claude_code(FIX / "claude-damaged-lines")
    f, q = res.frame, res.quarantine
    assert len(kinds(f, "tool_call")) == exp["tool_calls"] == 2
    assert res.invalid["line_no"].tolist() == exp["quarantined_line_numbers"] == [4, 5, 6]
    assert (len(res.pending) == 1) is exp["pending_last_line"] is True
    assert res.pending["line_no"].tolist() == [9]
    assert q["loader"].eq("claude-code").all()
    assert q["source_file"].str.endswith("77777777-1111-4111-8111-777777777777.jsonl").all()
    assert res.invalid["error"].tolist() == [
        # the column within the line; the file line is the row's line_no (the parser's own
        # "line 1 column 702" read as a file line)
        "invalid JSON: Expecting ',' delimiter at column 702", "not a JSON object (str)",
        "invalid JSON: Extra data at column 62"]
    assert res.invalid["byte_offset"].tolist() == [1562, 2304, 2320]
    # the damaged line 4 is re-written intact as line 7 (same uuid): counted once
    assert kinds(f, "model_request")["line_no"].tolist() == [2, 7]
    assert f.loc[f["kind"] != "tool_call", "uuid"].dropna().is_unique  # tool_call rows share their line's uuid
    # lone surrogates (\udcb2\udcb3) become U+FFFD; the frame writes to Parquet and HTML
    first = f[(f["kind"] == "tool_call") & (f["call_id"] == "toolu_9419e057c57a528c8ff")].iloc[0]
    assert first["result_text"] == "bytes: \ufffd\ufffd end"
    assert kinds(f, "tool_call")["result_text"].tolist()[1] == "fine"
    f.to_parquet(tmp_path / "steps.parquet")
    assert len(pd.read_parquet(tmp_path / "steps.parquet")) == len(f)
    f.to_html().encode("utf-8")
    q.to_parquet(tmp_path / "q.parquet")
    q.to_html().encode("utf-8")


def test_case_resumed_session():
    exp = expected("claude-resumed-session")
    res = load_claude_code(FIX / "claude-resumed-session")
    f = res.frame
    calls = kinds(f, "tool_call")
    assert calls["call_id"].nunique() == len(calls) == exp["distinct_tool_calls"] == 2
    assert len(kinds(f, "user_prompt")) == exp["user_prompts"] == 2
    assert len(kinds(f, "tool_result")) == 2
    assert f.loc[f["kind"] != "tool_call", "uuid"].is_unique
    # the first file keeps its three lines; the resumed file's three copies are skipped
    assert [i["duplicates"] for i in res.inputs] == [0, 3]
    assert calls["transcript_id"].tolist() == ["88888888-2222-4222-8222-888888888888",
                                               "99999999-3333-4333-8333-999999999999"]
    # seq restarts per transcript and is 0-based
    assert f.groupby("transcript_id")["seq"].min().tolist() == [0, 0]
    # whichever order the files are given in, the copies count once, and once for the session
    # that first wrote them: named first, the resumed file had taken them all, and the first
    # session's transcript had vanished (its door session left with no transcript to join)
    files = sorted((FIX / "claude-resumed-session").glob("*.jsonl"), reverse=True)
    rev = load_claude_code(files)
    pd.testing.assert_frame_equal(rev.frame, f)
    assert [(Path(i["path"]).name[:8], i["duplicates"]) for i in rev.inputs] == [("88888888", 0), ("99999999", 3)]
    # the resumed file names the transcript it resumes, and the report's inputs say so
    from replaybook.loading import _input_note

    for r in (res, rev):
        assert [i.get("resumes") for i in r.inputs] == [None, "88888888-2222-4222-8222-888888888888"]
    assert _input_note(res.inputs[1]) == ("resumes transcript 88888888-2222-4222-8222-888888888888: starts with "
                                          "copies of its lines (3 lines, counted once)")
    # with the first file gone, nothing is named: the copies are the resumed file's own rows
    alone = load_claude_code(files[0])
    assert [i.get("resumes") for i in alone.inputs] == [None] and alone.inputs[0]["duplicates"] == 0


def test_case_streaming_split():
    exp = expected("claude-streaming-split")
    f = load_claude_code(FIX / "claude-streaming-split").frame
    calls = kinds(f, "tool_call")
    reqs = kinds(f, "model_request")
    assert len(calls) == exp["tool_calls"] == 3
    assert len(reqs) == exp["model_requests"] == 2
    assert calls["call_id"].tolist() == exp["tool_call_ids_in_order"]
    by_call = dict(zip(calls["call_id"], calls["result_text"]))
    for cid, text in exp["result_text_by_call"].items():
        assert by_call[cid] == text
    split = reqs[reqs["message_id"] == "msg_01SPLITSPLITSPLIT"].iloc[0]
    assert split["output_tokens"] == exp["output_tokens_of_split_request"] == 88  # last copy, not 2+40+61+88
    assert split["input_tokens"] == 5
    assert split["request_id"] == "req_01SPLITSPLIT"
    assert split["text"] == "I'll look at two files."
    assert split["line_no"] == 2 and split["uuid"] == "a661e187-9b09-5c8c-a7c9-fec59f285e5c"
    assert split["model"] == "claude-sonnet-4-5"
    # results arrive out of order (split_2 first) and still pair by id
    assert kinds(f, "tool_result")["call_id"].tolist()[:2] == ["toolu_split_2", "toolu_split_1"]
    rts = dict(zip(calls["call_id"], calls["result_ts"]))
    assert rts["toolu_split_1"] == pd.Timestamp("2026-09-13T10:00:03.200Z")
    assert rts["toolu_split_2"] == pd.Timestamp("2026-09-13T10:00:03.000Z")
    assert calls["server"].tolist() == ["door"] * 3
    assert calls["tool"].tolist() == ["describe", "describe", "query"]
    assert calls["args_key"].tolist()[2] == '{"path":"demo/a.parquet","sql":"SELECT 1"}'
    assert f["seq"].tolist() == list(range(len(f)))


def test_case_tool_result_shapes():
    exp = expected("claude-tool-result-shapes")
    f = load_claude_code(FIX / "claude-tool-result-shapes").frame
    calls = kinds(f, "tool_call").set_index("call_id")
    results = kinds(f, "tool_result").set_index("call_id")
    for cid, want in exp["results"].items():
        assert calls.loc[cid, "result_text"] == want["text"]
        assert bool(calls.loc[cid, "is_error"]) is want["is_error"]
        assert results.loc[cid, "text"] == want["text"]
        assert bool(results.loc[cid, "is_error"]) is want["is_error"]
        if "images" in want:
            assert calls.loc[cid, "images"] == want["images"] == 1
            assert results.loc[cid, "images"] == 1
    assert calls.loc["toolu_e54eaee5f6785e1da8c", "images"] == 0
    assert results.loc["toolu_9e95163677405609b51", "tool_raw"] == "mcp__door__render_chart"


def test_document_and_search_result_blocks_keep_what_the_model_received(tmp_path):
    """A tool may answer with ``document`` and ``search_result`` blocks (Anthropic Messages API):
    their text is the result's text, and a PDF, URL or uploaded file is named where its bytes
    stood — never dropped as if the tool had answered nothing."""
    from replaybook.sources._claude_ref import load_reference

    calls = assistant("a1", "msg_1", "req_1", [
        {"type": "tool_use", "id": f"toolu_{i}", "name": "mcp__door__read_object", "input": {"path": f"p{i}"}}
        for i in range(1, 5)])
    results = user("u1", [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
            {"type": "document", "title": "readme.txt",
             "source": {"type": "text", "media_type": "text/plain", "data": "The secret is 42"}}]},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": [
            {"type": "search_result", "source": "https://example.invalid/a", "title": "A",
             "content": [{"type": "text", "text": "mpg is 21"}, {"type": "text", "text": "hp is 110"}]}]},
        {"type": "tool_result", "tool_use_id": "toolu_3", "content": [
            {"type": "text", "text": "two files:"},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"}},
            {"type": "document", "title": "spec", "source": {"type": "url", "url": "https://example.invalid/s.pdf"}}]},
        {"type": "tool_result", "tool_use_id": "toolu_4", "content": [
            {"type": "document", "source": {"type": "content", "content": [
                {"type": "text", "text": "page one"}, {"type": "image", "source": {"type": "base64",
                                                                                  "media_type": "image/png",
                                                                                  "data": "iVBORw0KGgo="}}]}}]},
    ], timestamp="2026-09-13T10:00:02.000Z")
    p = write_jsonl(tmp_path / "s.jsonl", [user("u0", "read them"), calls, results])
    want = {"toolu_1": ("[document: readme.txt]\nThe secret is 42", 0),
            "toolu_2": ("[search_result: A, https://example.invalid/a]\nmpg is 21\nhp is 110", 0),
            "toolu_3": ("two files:\n[document: application/pdf]\n[document: spec, https://example.invalid/s.pdf]", 0),
            "toolu_4": ("page one", 1)}
    for load in (load_claude_code, load_reference):
        f = load(p).frame
        got = kinds(f, "tool_call").set_index("call_id")
        res = kinds(f, "tool_result").set_index("call_id")
        for cid, (text, images) in want.items():
            assert got.loc[cid, "result_text"] == res.loc[cid, "text"] == text, (load.__name__, cid)
            assert got.loc[cid, "images"] == res.loc[cid, "images"] == images, (load.__name__, cid)
        assert res.loc["toolu_2", "text_bytes"] == len(want["toolu_2"][0])


def test_unreadable_timestamps_and_is_error_strings_are_kept_and_said(tmp_path):
    """A line whose timestamp cannot be read (no date-time, month 13, a number, null, empty) keeps
    its steps, with the time unknown, and the file's inputs entry names the line and the value
    (as Codex and Gemini CLI transcripts do); ``is_error`` written as the string ``"true"`` /
    ``"false"`` is that boolean, any other value NA and named too.  Nothing is set aside."""
    from replaybook.sources._claude_ref import load_reference

    call = assistant("a1", "msg_1", "req_1", [
        {"type": "tool_use", "id": f"toolu_{i}", "name": "mcp__door__read_object", "input": {"i": i}}
        for i in range(1, 5)], timestamp="2026-13-13T10:00:01.000Z")
    results = [user("u2", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "denied", "is_error": "true"},
                           {"type": "tool_result", "tool_use_id": "toolu_2", "content": "ok", "is_error": "false"}],
                    timestamp="not a time"),
               user("u3", [{"type": "tool_result", "tool_use_id": "toolu_3", "content": "?", "is_error": "yes"}],
                    timestamp=1757757603),
               user("u4", [{"type": "tool_result", "tool_use_id": "toolu_4", "content": "?", "is_error": 1}],
                    timestamp=None)]
    p = write_jsonl(tmp_path / "s.jsonl", [user("u1", "read them"), call, *results,
                                           user("u5", "thanks", timestamp="2026-09-13T10:00:05Z")])
    for load in (load_claude_code, load_reference):
        res = load(p)
        f = res.frame
        assert res.quarantine.empty and len(f) == 11, load.__name__
        assert f["ts"].isna().tolist() == [False] + [True] * 9 + [False]
        calls = kinds(f, "tool_call").set_index("call_id")
        assert calls["is_error"].tolist()[:2] == [True, False]
        assert calls["is_error"].isna().tolist() == [False, False, True, True]
        assert kinds(f, "tool_result")["is_error"].isna().tolist() == [False, False, True, True]
        assert res.inputs[0]["notes"] == [
            "2 lines with a timestamp that is empty or not text, kept with the time unknown: "
            "line 4 (1757757603), line 5 (null)",
            "2 tool results whose is_error is neither true nor false, kept with is_error unknown (NA): "
            "line 4 ('yes'), line 5 (1)",
            "2 lines with a time that is not a date-time, kept with the time unknown: "
            "line 2 ('2026-13-13T10:00:01.000Z'), line 3 ('not a time')"], load.__name__


def test_case_unknown_line_types():
    exp = expected("claude-unknown-line-types")
    path = FIX / "claude-unknown-line-types" / "session.jsonl"
    from replaybook.sources import registry

    src, score = registry.sniff_file(path)
    assert src is not None and src.name == exp["format"] == "claude-code"
    assert score >= 0.85
    res = load_claude_code(path)
    f = res.frame
    assert len(kinds(f, "tool_call")) == exp["tool_calls"] == 2
    assert len(res.quarantine) == exp["quarantined_lines"] == 0
    # every one of the 15 lines is a row (assistant lines carry one tool_call each as well)
    assert len(f) == 15
    other = kinds(f, "other")
    assert other["line_type"].tolist() == ["queue-operation", "file-history-snapshot",
                                           "file-history-snapshot", "file-history-snapshot",
                                           "atis-latch", "mode", "last-prompt"]
    assert other["line_no"].tolist() == [1, 2, 3, 4, 7, 8, 10]
    sysrow = kinds(f, "system").iloc[0]
    assert sysrow["line_type"] == "system/turn_duration" and sysrow["line_no"] == 11
    # lines without a timestamp have NaT, the rest are UTC
    assert str(f["ts"].dtype) == "datetime64[ns, UTC]"
    assert f.loc[f["line_type"].isin(["atis-latch", "mode", "last-prompt"]), "ts"].isna().all()
    assert f.loc[f["line_no"] == 1, "ts"].iloc[0] == pd.Timestamp("2026-09-13T10:00:00Z")
    assert f["client_version"].dropna().unique().tolist() == ["2.1.152"]


@pytest.mark.parametrize("case", CASES)
def test_cases_frame_shape(case):
    """Every case: exact STEPS columns/dtypes, seq 0-based per transcript, provenance on every row."""
    res = load_claude_code(FIX / case)
    f = res.frame
    STEPS.validate(f)
    QUARANTINE.validate(res.quarantine)
    assert set(f["kind"]) <= set(STEP_KINDS)
    assert f["source_file"].notna().all() and f["line_no"].notna().all()
    assert (f["line_no"] >= 1).all()
    assert f["client"].eq("claude-code").all()
    for _, g in f.groupby("transcript_id"):
        assert g["seq"].tolist() == list(range(len(g)))
    assert [i["format"] for i in res.inputs] == ["claude-code"] * len(res.inputs)


# --------------------------------------------------------------------------- sub-agents

def test_sidechain_inline():
    f = load_claude_code(FIX / "sidechain-inline").frame
    by_line = f.groupby("line_no")["agent_id"].first()
    assert by_line.loc[[1, 2, 8, 9]].isna().all()
    assert by_line.loc[[3, 4, 5]].tolist() == ["sidechain"] * 3   # isSidechain, no agentId
    assert by_line.loc[[6, 7]].tolist() == ["inl7", "inl7"]       # isSidechain with agentId
    assert by_line.loc[10] is pd.NA                               # the summary line
    prompts = kinds(f, "user_prompt")
    assert prompts["text"].tolist() == ["Find the config", "Search for config files", "Check the README too"]
    task = kinds(f, "tool_call").set_index("call_id").loc["toolu_inl_task"]
    assert task["tool"] == "Task" and task["server"] is pd.NA
    assert task["result_text"] == "Found config.yaml\nDone."
    assert task["arguments"] == {"description": "find config", "prompt": "Search for config files"}
    sysrow = kinds(f, "system").iloc[0]
    assert sysrow["line_type"] == "system" and sysrow["text"] == "Running PostToolUse:Task..."
    summ = kinds(f, "summary").iloc[0]
    assert summ["text"] == "Config search" and pd.isna(summ["ts"]) and summ["line_no"] == 10
    assert kinds(f, "model_request").set_index("line_no").loc[7, "text"] == "README mentions config.yaml"
    assert f["client_version"].dropna().unique().tolist() == ["1.0.51"]


def test_subagents_folder_layout():
    root = FIX / "subagents-layout"
    res = load_claude_code(root)
    f = res.frame
    main = "cccccccc-6666-4666-8666-cccccccccccc"
    assert sorted(f["transcript_id"].unique()) == [
        "agent-a000000000000000b", "agent-a5f0c1d2e3b4a5968", main]
    ag = f.groupby("transcript_id")["agent_id"].unique()
    assert f.loc[f["transcript_id"] == main, "agent_id"].isna().all()
    assert list(ag["agent-a5f0c1d2e3b4a5968"]) == ["a5f0c1d2e3b4a5968"]   # from the lines' agentId
    assert list(ag["agent-a000000000000000b"]) == ["a000000000000000b"]   # from the file name
    # .meta.json files are not transcripts; a good one is read, a broken one is ignored
    assert len(res.inputs) == 3 and not any(i["path"].endswith(".meta.json") for i in res.inputs)
    meta = {Path(i["path"]).name: i.get("agent_meta") for i in res.inputs}
    assert meta["agent-a5f0c1d2e3b4a5968.jsonl"] == {"agentType": "general-purpose", "description": "Read the log"}
    assert meta["agent-a000000000000000b.jsonl"] is None
    # each .meta.json read is evidence: its own entry (SHA-256 of the bytes read) under its transcript's
    sides = {Path(i["path"]).name: i.get("side_files") for i in res.inputs}
    assert sides["cccccccc-6666-4666-8666-cccccccccccc.jsonl"] is None
    for name, note in (("agent-a5f0c1d2e3b4a5968", None),
                       ("agent-a000000000000000b", "not a JSON object: the sub-agent's metadata was not read from it")):
        metafile = next(root.rglob(f"{name}.meta.json"))
        data = metafile.read_bytes()
        assert sides[f"{name}.jsonl"] == [{
            "path": str(metafile), "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
            "lines": data.count(b"\n") + (0 if data.endswith(b"\n") else 1), "format": "claude-code sub-agent meta",
            "side_of": str(metafile.with_name(f"{name}.jsonl")), "note": note}]
    assert len(res.quarantine) == 0
    # the sub-agent's MCP call is paired with its result in the sub-agent file
    sub = kinds(f, "tool_call").set_index("call_id").loc["toolu_sub_read"]
    assert (sub["server"], sub["tool"], sub["agent_id"]) == ("door", "read_object", "a5f0c1d2e3b4a5968")
    assert sub["result_text"] == "ERROR a\nERROR b\nERROR c"
    assert sub["result_ts"] == pd.Timestamp("2026-09-13T11:00:04Z")
    assert sub["client_session_id"] == main
    # bookkeeping lines of 2.1.x are kept as `other`
    assert kinds(f, "other")["line_type"].tolist() == ["queue-operation", "attachment", "permission-mode"]
    # the Bash call of the second sub-agent has no result: NA, not an error
    bash = kinds(f, "tool_call").set_index("call_id").loc["toolu_sub_bash"]
    assert pd.isna(bash["result_ts"]) and bash["is_error"] is pd.NA and bash["result_text"] is pd.NA
    # a .meta.json given explicitly is not loaded as a transcript
    metafile = next(root.rglob("agent-a5f0c1d2e3b4a5968.meta.json"))
    assert len(load_claude_code([metafile]).frame) == 0


def test_flat_agent_files():
    f = load_claude_code(FIX / "flat-agent").frame
    agent = f[f["transcript_id"] == "agent-3f2a9c1b"]
    assert agent["kind"].tolist() == ["user_prompt", "model_request", "tool_call", "tool_result"]
    assert agent["agent_id"].eq("3f2a9c1b").all()
    assert f.loc[f["transcript_id"] != "agent-3f2a9c1b", "agent_id"].isna().all()
    ls = kinds(f, "tool_call").set_index("call_id").loc["toolu_flat_ls"]
    assert ls["result_text"] == "a.py\nb.py\nc.py"      # toolUseResult was a list: tolerated
    # files load in sorted path order: agent-3f2a9c1b.jsonl sorts before dddddddd-….jsonl
    assert kinds(f, "tool_call")["call_id"].tolist() == ["toolu_flat_ls", "toolu_flat_task"]


# --------------------------------------------------------------------------- MCP names

@pytest.mark.parametrize("name, want", [
    ("mcp__door__read_object", ("door", "read_object")),
    ("mcp__plugin_github_github__create_issue", ("github", "create_issue")),
    ("mcp__plugin_my_srv_my_srv__go", ("my_srv", "go")),               # X_X: plugin == server
    ("mcp__plugin_claude-mem_mcp-search__search", ("mcp-search", "search")),  # first "_" splits
    ("mcp__plugin_pw_browser_tools__click", ("browser_tools", "click")),
    ("mcp__plugin_solo__x", ("plugin_solo", "x")),                     # not a plugin name
    ("mcp__my_server__do__thing", ("my_server", "do__thing")),         # first "__" splits
    ("mcp__claude_ai_Gmail__search", ("claude_ai_Gmail", "search")),
    ("Read", (None, "Read")),
    ("Bash", (None, "Bash")),
    ("Task", (None, "Task")),
    ("mcp__onlyserver", (None, "mcp__onlyserver")),
    ("mcp__srv__", (None, "mcp__srv__")),
    (None, (None, None)),
])
def test_split_mcp_name(name, want):
    assert split_mcp_name(name) == want


def test_mcp_names_in_frame_and_five_line_split():
    f = load_claude_code(FIX / "mcp-names").frame
    calls = kinds(f, "tool_call")
    assert calls["tool_raw"].tolist() == [
        "mcp__plugin_github_github__create_issue", "mcp__door__read_object", "Read",
        "mcp__plugin_claude-mem_mcp-search__search", "mcp__my_server__do__thing"]
    assert calls["server"].tolist() == ["github", "door", pd.NA, "mcp-search", "my_server"]
    assert calls["tool"].tolist() == ["create_issue", "read_object", "Read", "search", "do__thing"]
    assert calls["result_text"].tolist() == ["ok 1", "ok 2", "ok 3", "ok 4", "ok 5"]
    assert calls["line_no"].tolist() == [2, 3, 4, 5, 6]
    assert calls["args_key"].tolist()[-1] == "{}"
    reqs = kinds(f, "model_request")
    assert len(reqs) == 1
    assert reqs.iloc[0]["output_tokens"] == 50 and reqs.iloc[0]["text"] is pd.NA
    results = kinds(f, "tool_result")
    assert results["server"].tolist() == ["github", "door", pd.NA, "mcp-search", "my_server"]


# --------------------------------------------------------------------------- merging & pairing

def test_split_stream_non_consecutive_and_usage_from_last_copy(tmp_path):
    p = write_jsonl(tmp_path / "s.jsonl", [
        user("u1", "go"),
        assistant("a1", "msg_A", "req_A", [{"type": "text", "text": "part one"}], {"input_tokens": 3, "output_tokens": 10}),
        assistant("b1", "msg_B", "req_B", [{"type": "text", "text": "other request"}], {"input_tokens": 1, "output_tokens": 2},
                  isSidechain=True),
        assistant("a2", "msg_A", "req_A", [{"type": "thinking", "thinking": "hmm"}]),  # no usage on this copy
        assistant("a3", "msg_A", "req_A", [{"type": "text", "text": "part two"},
                                            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}},
                                            {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "pwd"}}],
                  {"input_tokens": 3, "output_tokens": 30}),
        # same message id with a different request id is a different request
        assistant("c1", "msg_A", "req_C", [{"type": "text", "text": "retry"}], {"input_tokens": 4, "output_tokens": 5}),
    ])
    f = load_claude_code(p).frame
    reqs = kinds(f, "model_request")
    assert reqs["request_id"].tolist() == ["req_A", "req_B", "req_C"]
    a = reqs.iloc[0]
    assert a["text"] == "part one\npart two"
    assert a["output_tokens"] == 30 and a["input_tokens"] == 3   # last copy with usage, not 40
    assert a["line_no"] == 2 and a["uuid"] == "a1"
    assert reqs.iloc[1]["agent_id"] == "sidechain"
    calls = kinds(f, "tool_call")
    assert calls["call_id"].tolist() == ["t1", "t2"] and calls["line_no"].tolist() == [5, 5]
    assert calls["message_id"].tolist() == ["msg_A", "msg_A"]
    assert f["kind"].tolist() == ["user_prompt", "model_request", "model_request", "tool_call",
                                  "tool_call", "model_request"]


def test_pairing_orphans_and_mixed_user_content(tmp_path):
    p = write_jsonl(tmp_path / "p.jsonl", [
        user("r0", [{"type": "tool_result", "tool_use_id": "late", "content": [{"type": "text", "text": "early result"}]}],
             toolUseResult={"stdout": "x"}),
        assistant("a1", "m1", "q1", [{"type": "tool_use", "id": "late", "name": "mcp__door__q", "input": {"n": 1.0}}]),
        user("r1", [{"type": "tool_result", "tool_use_id": "ghost", "content": "no call", "is_error": True},
                    {"type": "text", "text": "[Request interrupted by user]"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}],
             toolUseResult="Error: interrupted"),
        user("r2", [{"type": "tool_result", "tool_use_id": "late", "content": "second result"}]),
    ])
    f = load_claude_code(p).frame
    call = kinds(f, "tool_call").iloc[0]
    assert call["result_text"] == "early result"            # result before call; first result wins
    assert call["args_key"] == '{"n":1}' and call["arguments"] == {"n": 1.0}
    assert not pd.isna(call["is_error"]) and bool(call["is_error"]) is False
    res = kinds(f, "tool_result")
    assert res["call_id"].tolist() == ["late", "ghost", "late"]
    ghost = res.iloc[1]
    assert ghost["tool"] is pd.NA and bool(ghost["is_error"]) is True and ghost["text"] == "no call"
    mixed = kinds(f, "user_prompt").iloc[0]
    assert mixed["line_no"] == 3 and mixed["text"] == "[Request interrupted by user]" and mixed["images"] == 1


def test_dedup_within_one_file_and_uuidless_lines_kept(tmp_path):
    p = write_jsonl(tmp_path / "d.jsonl", [
        user("same", "hello"),
        {"type": "summary", "summary": "s", "leafUuid": "same"},
        user("same", "hello"),
        {"type": "summary", "summary": "s", "leafUuid": "same"},
    ])
    res = load_claude_code(p)
    assert res.frame["kind"].tolist() == ["user_prompt", "summary", "summary"]
    assert res.inputs[0]["duplicates"] == 1


# --------------------------------------------------------------------------- damage, size, text safety

def test_non_object_and_invalid_lines_quarantined(tmp_path):
    p = write_jsonl(tmp_path / "bad.jsonl", [
        user("u1", "ok"),
        "[1, 2]", "42", "null", '"s"', "", "{not json", '{"type": "user"}{"type": "x"}',
        {"no_type_here": True},
        {"type": "brand-new-type", "uuid": "n1", "subtype": "v9"},
    ])
    res = load_claude_code(p)
    assert res.invalid["line_no"].tolist() == [2, 3, 4, 5, 7, 8]
    assert res.invalid["error"].tolist()[:4] == ["not a JSON object (list)", "not a JSON object (int)",
                                                 "not a JSON object (NoneType)", "not a JSON object (str)"]
    assert len(res.pending) == 0
    f = res.frame
    assert f["kind"].tolist() == ["user_prompt", "other", "other"]
    assert f["line_type"].tolist() == ["user", pd.NA, "brand-new-type/v9"]
    assert f["line_no"].tolist() == [1, 9, 10]


def test_pending_last_line(tmp_path):
    p = tmp_path / "pend.jsonl"
    p.write_bytes(json.dumps(user("u1", "hi")).encode() + b"\n" + b'{"type": "assistant", "mess')
    res = load_claude_code(p)
    assert res.pending["line_no"].tolist() == [2] and len(res.invalid) == 0
    assert res.pending["byte_offset"].iloc[0] == len(json.dumps(user("u1", "hi"))) + 1
    assert len(res.frame) == 1


def test_surrogates_and_invalid_utf8_made_safe(tmp_path):
    good = json.dumps(assistant("a1", "m1", "q1", [
        {"type": "tool_use", "id": "t1", "name": "mcp__door__read_object", "input": {"path\udcb2": "x\ud800y"}}]))
    assert "\\udcb2" in good
    bad_utf8 = json.dumps(user("u1", "caf_")).encode().replace(b"caf_", b"caf\xe9 \xff")
    p = write_jsonl(tmp_path / "s.jsonl", [good, bad_utf8,
                                           user("u2", [{"type": "tool_result", "tool_use_id": "t1", "content": "\udcb3"}])])
    res = load_claude_code(p)
    f = res.frame
    assert len(res.quarantine) == 0
    call = kinds(f, "tool_call").iloc[0]
    assert call["arguments"] == {"path\ufffd": "x\ufffdy"}
    assert call["args_key"] == '{"path\ufffd":"x\ufffdy"}'
    assert call["result_text"] == "\ufffd"
    assert kinds(f, "user_prompt").iloc[0]["text"] == "caf\ufffd \ufffd"
    f.to_parquet(tmp_path / "s.parquet")
    f.to_html().encode("utf-8")
    for col in ("text", "result_text", "args_key"):
        for v in f[col].dropna():
            v.encode("utf-8")


def test_huge_line_truncated_with_full_size(tmp_path):
    big_text = "é" * 300_000 + "END"
    image = "A" * 600_000
    p = write_jsonl(tmp_path / "huge.jsonl", [
        user("u1", [{"type": "text", "text": big_text},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image}}]),
        assistant("a1", "m1", "q1", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/x"}}]),
        user("u2", [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 50_000}]),
    ])
    assert p.stat().st_size > 855_000
    f = load_claude_code(p).frame
    prompt = kinds(f, "user_prompt").iloc[0]
    assert prompt["text_bytes"] == len(big_text.encode("utf-8")) == 600_003
    assert prompt["text"].startswith("éé") and len(prompt["text"]) < TEXT_LIMIT + 30
    assert prompt["text"].endswith(f"…[+{len(big_text) - TEXT_LIMIT} chars]")
    assert prompt["images"] == 1
    call = kinds(f, "tool_call").iloc[0]
    assert len(call["result_text"]) < TEXT_LIMIT + 30
    assert kinds(f, "tool_result").iloc[0]["text_bytes"] == 50_000


# --------------------------------------------------------------------------- files

def test_read_only_inputs_unchanged(tmp_path):
    src = FIX / "claude-streaming-split" / "66666666-ffff-4fff-8fff-666666666666.jsonl"
    p = tmp_path / src.name
    p.write_bytes(src.read_bytes())
    os.chmod(p, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    before = (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_mode)
    res = load_claude_code(p)
    assert (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_mode) == before
    info = res.inputs[0]
    assert info["sha256"] == hashlib.sha256(before[0]).hexdigest()
    assert info["bytes"] == len(before[0]) and info["lines"] == 9 and info["path"] == str(p)


def test_gzip_and_folder_walk(tmp_path):
    src = FIX / "claude-tool-result-shapes" / "aaaaaaaa-4444-4444-8444-aaaaaaaaaaaa.jsonl"
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / (src.name + ".gz")).write_bytes(gzip.compress(src.read_bytes()))
    (tmp_path / "notes.txt").write_text("not a transcript")
    res = load_claude_code(tmp_path)
    f = res.frame
    assert f["transcript_id"].unique().tolist() == ["aaaaaaaa-4444-4444-8444-aaaaaaaaaaaa"]
    assert len(kinds(f, "tool_call")) == 2
    assert len(res.inputs) == 1


def test_missing_path_raises(tmp_path):
    with pytest.raises(InputError, match="no such file or folder"):
        load_claude_code(tmp_path / "nope.jsonl")


def test_empty_input_gives_empty_frame(tmp_path):
    res = load_claude_code([])
    STEPS.validate(res.frame)
    assert len(res.frame) == 0 and len(res.quarantine) == 0
    (tmp_path / "empty.jsonl").write_bytes(b"")
    res = load_claude_code(tmp_path / "empty.jsonl")
    STEPS.validate(res.frame)
    assert len(res.frame) == 0 and res.inputs[0]["lines"] == 0


# --------------------------------------------------------------------------- sniffing & registry

def test_sniff_high_for_claude_code_low_for_others():
    for case in CASES:
        for p in (FIX / case).glob("*.jsonl"):
            assert sniff(p.read_bytes()) >= 0.75, p
    # starts with 4 bookkeeping lines, still recognised with high confidence
    assert sniff((FIX / "claude-unknown-line-types" / "session.jsonl").read_bytes()) >= 0.85
    door = b'{"ts":"2026-09-13T10:00:00Z","seq":1,"session":"s","agent":"a","tool":"q","arguments":{},"decision":"allow"}\n' * 5
    codex = b'{"timestamp":"2026-01-02T03:04:05Z","type":"session_meta","payload":{"id":"x"}}\n' \
            b'{"timestamp":"2026-01-02T03:04:06Z","type":"response_item","payload":{"type":"message","role":"user"}}\n'
    other = b'{"a": 1}\n[1,2]\nnot json\n'
    assert sniff(door) == 0.0
    assert sniff(codex) <= 0.1
    assert sniff(other) == 0.0
    assert sniff(b"") == 0.0
    # only bookkeeping lines (a file of snapshots): moderate
    snaps = b'{"type":"file-history-snapshot","messageId":"m","snapshot":{"messageId":"m"},"isSnapshotUpdate":false}\n' * 3
    assert 0.5 <= sniff(snaps) < 0.9
    # a sample cut inside one huge line: judged by the keys in the fragment
    big = json.dumps(user("u1", [{"type": "text", "text": "x" * 300_000}])).encode()
    frag = big[:256 * 1024]
    assert sniff(frag) >= 0.5


def test_a_file_starting_with_hundreds_of_lines_of_a_newer_type_is_still_a_transcript(tmp_path):
    """A client newer than this loader can open a session with many lines of a type it does
    not know (hook telemetry, say): in Claude Code's own envelope they are the client's lines,
    and the file is loaded by content — its first user line lies beyond the sniffed bytes."""
    import replaybook

    env = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/p",
           "sessionId": "ffffffff-0000-4000-8000-ffffffffffff", "version": "2.3.0",
           "timestamp": "2026-09-13T10:00:00Z"}
    lines = [json.dumps({**env, "type": "hook-telemetry", "uuid": f"h{i}", "data": {"n": i}}) for i in range(3000)]
    lines.append(json.dumps({**env, "type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}))
    p = tmp_path / "session.jsonl"
    p.write_text("\n".join(lines) + "\n")
    assert len(p.read_bytes()[:256 * 1024].split(b"\n")) < 3000
    assert sniff(p.read_bytes()[:256 * 1024]) >= 0.5
    steps = replaybook.load(tmp_path)["steps"]
    assert len(steps) == 3001 and steps["kind"].value_counts().to_dict() == {"other": 3000, "user_prompt": 1}
    # the same lines without the envelope (a type and an id only) are not enough
    bare = b"\n".join(json.dumps({"type": "hook-telemetry", "uuid": f"h{i}"}).encode() for i in range(300)) + b"\n"
    assert sniff(bare) < 0.5


def test_registered_in_registry():
    from replaybook.sources import registry

    src = registry.get("claude-code")
    assert src.frame == "steps"
    # (wrapped with room for deep nesting: replaybook._json.nesting_room)
    assert inspect.unwrap(src.load) is load_claude_code and inspect.unwrap(src.sniff) is sniff
    assert "claude-code" in registry.names()
    assert set(cc.__all__) >= {"load_claude_code", "split_mcp_name", "sniff"}


@pytest.mark.parametrize("tokens", [2**63, 2**64 - 1, 10**30])
def test_token_count_beyond_int64_is_na_not_a_crash(tmp_path, tokens):
    # usage counts no Int64 column can hold are treated like any non-integer count (NA); the
    # rest of the request, and of the file, loads
    from replaybook.sources.claude_code import load_claude_code

    lines = [
        '{"type":"user","uuid":"u1","sessionId":"s","timestamp":"2026-01-01T00:00:00Z",'
        '"message":{"role":"user","content":"hi"}}',
        '{"type":"assistant","uuid":"u2","sessionId":"s","timestamp":"2026-01-01T00:00:01Z","requestId":"r",'
        '"message":{"id":"m","role":"assistant","model":"x","usage":{"input_tokens":%d,"output_tokens":7},'
        '"content":[{"type":"text","text":"ok"}]}}' % tokens,
    ]
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(lines) + "\n")
    res = load_claude_code(p)
    req = res.frame[res.frame["kind"] == "model_request"]
    assert len(req) == 1 and res.quarantine.empty
    assert pd.isna(req["input_tokens"].iloc[0]) and req["output_tokens"].iloc[0] == 7


def test_same_file_name_in_two_folders_is_two_transcripts(tmp_path):
    # investigators collect transcripts from several machines into folders; two different
    # sessions both saved as session.jsonl must not merge into one transcript for the join
    from replaybook.sources.claude_code import load_claude_code

    def lines(tag):
        return "\n".join([
            '{"type":"user","uuid":"%s-u1","sessionId":"%s","timestamp":"2026-01-01T00:00:00Z",'
            '"message":{"role":"user","content":"hi"}}' % (tag, tag),
            '{"type":"assistant","uuid":"%s-u2","sessionId":"%s","timestamp":"2026-01-01T00:00:01Z","requestId":"r%s",'
            '"message":{"id":"m%s","role":"assistant","model":"x","content":[{"type":"tool_use","id":"t%s",'
            '"name":"mcp__door__ls","input":{"path":"%s"}}]}}' % (tag, tag, tag, tag, tag, tag),
        ]) + "\n"

    for host in ("alice", "bob"):
        (tmp_path / host / "proj").mkdir(parents=True)
        (tmp_path / host / "proj" / "session.jsonl").write_text(lines(host))
    res = load_claude_code(tmp_path)
    f = res.frame
    assert sorted(f["transcript_id"].unique()) == ["alice/proj/session", "bob/proj/session"]
    for tid, g in f.groupby("transcript_id"):
        assert g["seq"].tolist() == [0, 1, 2]
        assert set(g["client_session_id"]) == {tid.split("/")[0]}
    assert [i["transcript_id"] for i in res.inputs] == ["alice/proj/session", "bob/proj/session"]
    # a copy of a file adds no lines (its uuids were seen): still one transcript
    (tmp_path / "bob" / "proj" / "session.jsonl").write_text(lines("alice"))
    f = load_claude_code(tmp_path).frame
    assert f["transcript_id"].unique().tolist() == ["session"]


def test_a_folder_walk_reads_transcripts_whatever_the_case_of_their_extension(tmp_path):
    # load_claude_code(folder) read nothing of a folder of TRANSCRIPT.JSONL files — an empty
    # frame and no word — where `replaybook load steps` read them
    import shutil

    from replaybook.sources.door import load_door

    src = next(p for p in sorted((Path(__file__).resolve().parents[1] / "fixtures").rglob("*.jsonl"))
               if load_claude_code(p).frame["kind"].eq("tool_call").any())
    shutil.copy(src, tmp_path / (src.stem.upper() + ".JSONL"))
    got, want = load_claude_code(tmp_path), load_claude_code(src)
    assert len(got.inputs) == 1 and len(got.frame) == len(want.frame) > 0
    (tmp_path / "door").mkdir()
    (tmp_path / "door" / "S1.JSONL").write_text('{"session": "s1", "ts": "2026-11-20T09:58:05Z", "tool": "t", '
                                                 '"decision": "allow"}\n')
    assert len(load_door(tmp_path / "door").frame) == 1


def test_usage_is_the_final_count_whatever_order_the_streamed_copies_come_in(tmp_path, monkeypatch):
    # copies written 88, 40, 2, 61 output tokens (a file whose lines were reordered): the last
    # copy's 61 was taken, where usage only grows within one response and 88 is the final count
    from test_claude_fast_equiv import assert_same

    rows = [user("u1", "go")]
    for i, out in enumerate((88, 40, 2, 61), 1):
        rows.append(assistant(f"a{i}", "msg_A", "req_A", [{"type": "text", "text": f"part {i}"}],
                              {"input_tokens": 5 + i, "output_tokens": out}))
    rows.append(assistant("b1", "msg_B", "req_B", [{"type": "text", "text": "next"}], {"input_tokens": 9}))
    rows.append(assistant("b2", "msg_B", "req_B", [{"type": "text", "text": "more"}],
                          {"input_tokens": 9, "output_tokens": 3}))
    rows.append(assistant("b3", "msg_B", "req_B", [{"type": "text", "text": "end"}], {"input_tokens": 11}))
    p = write_jsonl(tmp_path / "s.jsonl", rows)
    f = assert_same(p, monkeypatch)
    reqs = kinds(f, "model_request")
    assert reqs["output_tokens"].tolist() == [88, 3]
    assert reqs["input_tokens"].tolist() == [6, 9]  # the 88 copy's; a copy without a count does not undo one


def test_in_a_chain_of_resumes_each_file_names_the_transcript_it_goes_on_from(tmp_path, monkeypatch):
    # B resumes A; C resumes B, copying all of B's lines (A's copies first). C was said to resume
    # A — the file of its first copied line — where its own lines go on from B's
    from replaybook.join import resumptions

    from test_claude_fast_equiv import assert_same

    a, b, c = ("aaaaaaaa-0000-4000-8000-%012d" % i for i in (1, 2, 3))
    a_lines = [user("a-u1", "first", sessionId=a, parentUuid=None),
               assistant("a-a1", "msg_1", "req_1", [{"type": "text", "text": "one"}], {"output_tokens": 1},
                         sessionId=a, parentUuid="a-u1")]
    b_own = [user("b-u1", "again", sessionId=b, parentUuid="a-a1"),
             assistant("b-a1", "msg_2", "req_2", [{"type": "text", "text": "two"}], {"output_tokens": 2},
                       sessionId=b, parentUuid="b-u1")]
    c_own = [user("c-u1", "and again", sessionId=c, parentUuid="b-a1")]
    write_jsonl(tmp_path / f"{a}.jsonl", a_lines)
    write_jsonl(tmp_path / f"{b}.jsonl", a_lines + b_own)
    write_jsonl(tmp_path / f"{c}.jsonl", a_lines + b_own + c_own)
    res = load_claude_code(tmp_path)
    assert_same(tmp_path, monkeypatch)
    by_file = {Path(i["path"]).stem: i for i in res.inputs}
    assert [by_file[x].get("resumes") for x in (a, b, c)] == [None, a, b]
    assert [by_file[x].get("duplicates") for x in (a, b, c)] == [0, 2, 4]
    assert resumptions(res.frame)[c] == b  # the join's own reading agrees


def _resume_world(tmp_path):
    """A ← B ← C (each resuming the last, copying all its lines), and D resuming both A and X
    (A's lines, then X's, then its own)."""
    ids = {k: "%s-0000-4000-8000-%012d" % (k * 8, i) for i, k in enumerate("abcdx")}

    def own(k, parent):
        return [user(f"{k}-u1", f"prompt {k}", sessionId=ids[k], parentUuid=parent),
                assistant(f"{k}-a1", f"msg_{k}", f"req_{k}", [{"type": "text", "text": k}], {"output_tokens": 1},
                          sessionId=ids[k], parentUuid=f"{k}-u1")]
    a, x = own("a", None), own("x", None)
    b = a + own("b", "a-a1")
    c = b + own("c", "b-a1")
    d = a + x + own("d", "x-a1")
    return ids, {k: write_jsonl(tmp_path / f"{ids[k]}.jsonl", v) for k, v in
                 (("a", a), ("b", b), ("c", c), ("d", d), ("x", x))}


def test_resumed_files_keep_each_transcript_whatever_order_they_are_named_in(tmp_path, monkeypatch):
    # named C, B, A (or as a folder sorts random session ids), the chain's first file lost its
    # transcript to the one that resumed it last; a file resuming two sessions took one of them
    import itertools

    from test_claude_fast_equiv import assert_same

    ids, paths = _resume_world(tmp_path)
    want = {ids[k]: 2 for k in "abcdx"}
    resumes = {ids["b"]: ids["a"], ids["c"]: ids["b"], ids["d"]: ids["x"]}
    for perm in itertools.permutations([paths[k] for k in "abcdx"]):
        res = load_claude_code(list(perm))
        got = res.frame.groupby(res.frame["transcript_id"].astype(str)).size().to_dict()
        assert got == want, [p.stem[:1] for p in perm]
        assert {Path(i["path"]).stem: i.get("resumes") for i in res.inputs if i.get("resumes")} == resumes
    assert_same(list(reversed([paths[k] for k in "abcdx"])), monkeypatch)


def test_lines_of_another_log_in_a_transcript_are_said_not_silently_other(tmp_path):
    """A door log appended to a transcript (two files concatenated): its lines have no Claude Code
    line type; they stay ``other`` rows, and the file's note names them — the refusal they hold
    was lost without a word."""
    demo = Path(__file__).resolve().parents[2] / "data" / "demo"
    transcript = sorted((demo / "transcripts").glob("*.jsonl"))[0].read_text()
    door = sorted((demo / "door").rglob("*.jsonl"))[0].read_text()
    p = tmp_path / "t.jsonl"
    p.write_text(transcript + door)
    n = transcript.count("\n")
    res = load_claude_code(p)
    rows = res.frame[res.frame["line_no"] > n]
    assert rows["kind"].unique().tolist() == ["other"] and rows["line_type"].isna().all()
    assert rows["line_no"].tolist() == list(range(n + 1, n + 1 + door.count("\n")))
    assert door.count("\n") == 5 and res.inputs[0]["notes"] == [
        f"lines {', '.join(str(n + i) for i in range(1, 6))}: a JSON object with no line type (`type`), so not a "
        "Claude Code line — another log's lines in this file? Kept as kind other; nothing in them is read"]
    assert load_claude_code(sorted((demo / "transcripts").glob("*.jsonl"))[0]).inputs[0].get("notes") is None
