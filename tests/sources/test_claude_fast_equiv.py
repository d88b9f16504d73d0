"""The Claude Code fast path equals the reference (per-record) loader, exactly.

``load_claude_code`` (``_claude_fast`` + ``_claude_ms``: msgspec-decoded files, line-by-line
orjson otherwise) against ``_claude_ref.load_reference`` (the loader as it was before the fast
path, kept verbatim): same frame (values, dtypes, order), same quarantine, same ``inputs`` — on
every fixture, the hostile corpus, the real files and cases in ``../shared``, generated bench-like
transcripts and a set of tricky lines written here.  Each input is also loaded with the msgspec
decoder switched off, so the line-by-line path is held to the reference on its own too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from replaybook._text import TEXT_LIMIT
from replaybook.sources import _claude_fast, _claude_ms
from replaybook.sources._claude_ref import load_reference
from replaybook.sources.claude_code import _expand, _shadowed_first, finish, load_claude_code

FIX = Path(__file__).resolve().parents[1] / "fixtures"
REPO = Path(__file__).resolve().parents[2]


def _outcome(fn, paths):
    try:
        return fn(paths), None
    except Exception as exc:  # InputError; and whatever the reference raises, the fast path must too
        return None, (type(exc), str(exc))


def _reference(paths):
    """The reference loader's result, with the decisions made after it was written: a session's
    own file is read before the file resuming it (``claude_code._shadowed_first``), a
    resumed file names the transcript it resumes, a response split between the two is one, and
    the notes made over all the files (``claude_code.finish``)."""
    ref = load_reference(paths)
    first = _shadowed_first(_expand(paths), ref)
    ref = ref if first is None else load_reference(first)
    finish(ref)
    return ref


def assert_same(paths, monkeypatch=None) -> pd.DataFrame | None:
    """Load ``paths`` both ways (and with the msgspec decoder off) and assert equal results."""
    ref, ref_err = _outcome(_reference, paths)
    runs = [_outcome(load_claude_code, paths)]
    if monkeypatch is not None:
        with monkeypatch.context() as m:
            m.setattr(_claude_fast, "decode_file", lambda data, max_open: None)
            runs.append(_outcome(load_claude_code, paths))
    for got, err in runs:
        assert err == ref_err
        if ref is None:
            continue
        pd.testing.assert_frame_equal(got.frame, ref.frame, check_exact=True)
        pd.testing.assert_frame_equal(got.quarantine, ref.quarantine, check_exact=True)
        assert got.inputs == ref.inputs
    return None if ref is None else ref.frame


# --------------------------------------------------------------------------- fixtures, cases, real

@pytest.mark.parametrize("folder", ["claude_code", "join_trap"])
def test_fixture_folders(folder, monkeypatch):
    assert_same(FIX / folder, monkeypatch)


def test_each_fixture_file(monkeypatch):
    for p in sorted((FIX / "claude_code").rglob("*.jsonl")) + sorted((FIX / "join_trap").rglob("*.jsonl")):
        assert_same(p, monkeypatch)


def test_demo_transcripts(monkeypatch):
    demo = REPO / "data" / "demo"
    files = [f for f in sorted(demo.rglob("*.jsonl")) if "door" not in f.parts]
    assert len(files) >= 2, "the committed demo incident has two transcripts"
    frame = assert_same(files, monkeypatch)
    assert frame is not None and (frame["kind"] == "tool_call").sum() > 0


def test_shared_real(real_dir, monkeypatch):
    root = real_dir / "claude-code"
    assert_same(root, monkeypatch)
    for p in sorted(root.rglob("*.jsonl")):
        assert_same(p, monkeypatch)


def test_shared_cases(cases_dir, monkeypatch):
    cases = sorted(cases_dir.glob("claude-*"))
    assert cases
    for case in cases:
        assert_same(case, monkeypatch)
    assert_same(cases_dir / "join-trap", monkeypatch)


def test_hostile_corpus(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO / "tests" / "hostile"))
    try:
        from test_hostile import corpus
    finally:
        sys.path.pop(0)
    for p in corpus(tmp_path):
        assert_same(p, monkeypatch)


def test_generated_transcripts(tmp_path, monkeypatch):
    """Bench-shaped data (bench/generate.py): every file goes the msgspec way."""
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import generate  # bench/ is part of the repository: its absence is a failure, not a skip
    finally:
        sys.path.pop(0)
    root = tmp_path / "t"
    generate.gen_transcripts(root, 24, 3_000_000, seed=7, workers=1)
    files = sorted(root.rglob("*.jsonl"))
    assert all(_claude_ms.decode_file(f.read_bytes(), 400) is not None for f in files)
    frame = assert_same(root, monkeypatch)
    assert len(frame) > 1500
    # column arrays sized far too small (they grow) and far too big (spare room dropped)
    from replaybook.sources import claude_code

    for guess in (0, 50_000):
        with monkeypatch.context() as m:
            m.setattr(claude_code, "_expect_rows", lambda files, g=guess: g)
            assert_same(root)


# --------------------------------------------------------------------------- tricky lines

SID = "ffffffff-0000-4000-8000-ffffffffffff"
TS = "2026-09-13T10:00:00.000Z"


def env(**kw) -> dict:
    d = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/p",
         "sessionId": SID, "version": "2.0.55", "timestamp": TS}
    d.update(kw)
    return d


def j(o) -> bytes:
    return json.dumps(o, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def user(uuid, content, **kw) -> bytes:
    return j(env(type="user", uuid=uuid, message={"role": "user", "content": content}, **kw))


def asst(uuid, mid, rid, content, usage=None, model="claude-sonnet-4-5", **kw) -> bytes:
    msg = {"model": model, "id": mid, "type": "message", "role": "assistant", "content": content}
    if usage is not None:
        msg["usage"] = usage
    return j(env(type="assistant", uuid=uuid, requestId=rid, message=msg, **kw))


def tr(cid, content, **kw) -> dict:
    return {"type": "tool_result", "tool_use_id": cid, "content": content, **kw}


def tu(cid, name, inp) -> dict:
    return {"type": "tool_use", "id": cid, "name": name, "input": inp}


BIG = ("naïve café 東京 \"quoted\" \\ back\tslash\n" * 400)   # > TEXT_LIMIT chars, escapes, non-ASCII

# each entry: name → list of raw lines (bytes); written with "\n" after each line
TRICKY: dict[str, list[bytes]] = {
    "plain": [
        user("u1", "hello"),
        asst("a1", "m1", "r1", [{"type": "thinking", "thinking": BIG, "signature": "s"}],
             usage={"input_tokens": 1, "output_tokens": 2}),
        asst("a2", "m1", "r1", [{"type": "text", "text": BIG}], usage={"input_tokens": 1, "output_tokens": 5}),
        asst("a3", "m1", "r1", [tu("t1", "mcp__door__read_object", {"path": "x", "n": 1.0, "z": [1, {"b": 2, "a": 1}]})]),
        user("u2", [tr("t1", BIG)], toolUseResult={"content": [{"type": "text", "text": BIG}]}),
        j({"type": "summary", "summary": BIG, "leafUuid": "u2"}),
        j(env(type="system", subtype="turn_duration", uuid="s1", content=BIG)),
        j(env(type="progress", uuid="p1", data={"x": [1, 2, {"y": None}]})),
        j({"type": "file-history-snapshot", "messageId": "u1", "snapshot": {"trackedFileBackups": {}}}),
    ],
    "result-shapes": [
        asst("a1", "m1", "r1", [tu("t1", "Read", {}), tu("t2", "mcp__plugin_github_github__x", None),
                                tu("t3", "Bash", "str"), tu("t4", "Bash", [1, 2]),
                                {"type": "tool_use", "id": "t5"},
                                {"type": "tool_use", "id": "", "name": "mcp__x"}]),
        user("u1", [tr("t1", [{"type": "text", "text": "a"}, "bare", {"type": "image", "source": {}},
                              {"type": "tool_reference", "tool_name": "Grep"},
                              {"type": "tool_reference"}, {"type": "text", "text": ""}])]),
        user("u2", [tr("t2", None, is_error=True), tr("t3", [], is_error=False)]),
        user("u3", [tr("t4", "x"), {"type": "text", "text": "also"}, "s"]),
        user("u4", [tr("t5", [BIG, {"type": "text", "text": BIG}])]),
        user("u5", [tr("t1", "second result for t1")]),
        user("u6", [{"type": "image", "source": {}}, {"type": "text", "text": "see"}]),
        user("u7", []),
        user("u8", None),
        user("u9", ""),
    ],
    # document and search_result blocks (Anthropic Messages API): every source type, and values
    # of the wrong type in the keys the decoder keeps raw (source, title)
    # MCP content a client passed through (embedded resource, resource link, audio), a newer item
    # type, and content that is one object or a number instead of a list
    "mcp-content": [
        asst("a1", "m1", "r1", [tu(f"t{i}", "mcp__door__read", {"i": i}) for i in range(1, 6)]),
        user("u1", [tr("t1", [{"type": "resource", "resource": {"uri": "s3://acme-data/demo/cars.csv",
                                                                "mimeType": "text/csv", "text": "mpg,cyl\n21,6"}},
                              {"type": "resource", "resource": {"uri": "file:///x.bin", "blob": "AAEC"}},
                              {"type": "resource_link", "uri": "s3://acme-data/demo/big.parquet", "name": "big"},
                              {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                              {"type": "widget", "x": 1}, {"nope": 1}])]),
        user("u2", [tr("t2", {"type": "text", "text": "one block"})]),
        user("u3", [tr("t3", 42), tr("t4", True)]),
        user("u4", [tr("t5", [{"type": "resource", "resource": "not an object"}, {"type": "resource_link"}])]),
    ],
    # one streamed response whose second line repeats the first line's tool_use block beside a new one
    "repeated-tool-use": [
        asst("a1", "m1", "r1", [tu("toolu_1", "mcp__door__read", {"path": "a"})], usage={"output_tokens": 10}),
        asst("a2", "m1", "r1", [tu("toolu_1", "mcp__door__read", {"path": "a"}),
                                tu("toolu_2", "mcp__door__read", {"path": "b"})], usage={"output_tokens": 20}),
        asst("a3", "m2", "r2", [tu("toolu_1", "mcp__door__read", {"path": "a"})]),  # another response: kept
        user("u1", [tr("toolu_1", "A"), tr("toolu_2", "B")]),
    ],
    # a line of one response repeating a tool_use id with other input (an edited transcript): a second call
    "repeated-id-other-input": [
        asst("a1", "m1", "r1", [tu("toolu_1", "mcp__door__read", {"path": "a", "n": 1})], usage={"output_tokens": 10}),
        asst("a2", "m1", "r1", [tu("toolu_1", "mcp__door__read", {"path": "reference/.env"})]),
        asst("a3", "m1", "r1", [tu("toolu_1", "mcp__door__read", {"path": "a", "n": 1.0}),
                                tu("toolu_1", "mcp__door__read", {"n": 1, "path": "a"})]),
        asst("a4", "m1", "r1", [tu("toolu_1", "mcp__door__read", {"path": "reference/.env"})]),  # the altered one again
        user("u1", [tr("toolu_1", "A")]),
    ],
    # an assistant message whose content is one block, not a list (msgspec refuses it: line by line)
    "lone-assistant-block": [
        asst("a4", "m3", "r3", tu("toolu_3", "mcp__door__read", {"path": "c"})),
        user("u4", [tr("toolu_3", "C")]),
    ],
    "document-blocks": [
        asst("a1", "m1", "r1", [tu(f"t{i}", "mcp__door__read", {"i": i}) for i in range(1, 7)]),
        user("u1", [tr("t1", [{"type": "document", "title": "readme.txt",
                               "source": {"type": "text", "media_type": "text/plain", "data": "doc body"}},
                              {"type": "text", "text": "after"}])]),
        user("u2", [tr("t2", [{"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                                              "data": "JVBERi0xLjQ="}},
                              {"type": "document", "title": "spec", "source": {"type": "url",
                                                                               "url": "https://example.invalid/s.pdf"}},
                              {"type": "document", "source": {"type": "file", "file_id": "file_011"}},
                              {"type": "document", "source": {"type": "content", "content": [
                                  {"type": "text", "text": "part one"}, {"type": "image", "source": {}},
                                  "bare", {"type": "text", "text": 5}]}},
                              {"type": "document", "title": "t", "source": {"type": "content", "content": "whole"}}])]),
        user("u3", [tr("t3", [{"type": "search_result", "title": "A", "source": "https://example.invalid/a",
                               "content": [{"type": "text", "text": "mpg is 21"}, {"type": "text", "text": "hp 110"}]},
                              {"type": "search_result", "title": "", "source": 7, "content": "a string"},
                              {"type": "search_result", "content": [{"type": "image"}, None, 3]}])]),
        user("u4", [tr("t4", [{"type": "document"}, {"type": "document", "source": "text", "title": 9},
                              {"type": "document", "source": {"type": "text", "data": None}},
                              {"type": "document", "source": {"type": "url", "url": [1]}, "title": {"a": 1}},
                              {"type": "document", "source": {"type": "content", "content": {"a": 1}}},
                              {"type": "document", "source": {"type": "base64",
                                                              "media_type": 123456789012345678901234567890}}])]),
        # the same blocks in a user message's own content (a prompt with an attached document)
        user("u5", [{"type": "document", "title": "notes.md",
                     "source": {"type": "text", "media_type": "text/plain", "data": "line"}},
                    {"type": "search_result", "title": "B", "source": "s",
                     "content": [{"type": "text", "text": "x"}, {"type": "image"}, "y"]},
                    {"type": "search_result", "content": "z"}, {"type": "search_result"}]),
        user("u6", [tr("t5", [{"type": "document", "source": {"type": "text", "data": "ünïcode \"q\""}}]),
                    tr("t6", [{"type": "search_result", "title": None, "source": None, "content": None}])]),
    ],
    "streaming": [
        asst("a1", "m1", "r1", [{"type": "text", "text": "one"}], model=None),
        asst("a2", "m2", "r2", [{"type": "text", "text": "other"}], usage={"input_tokens": 3}),
        asst("a3", "m1", "r1", [{"type": "text", "text": "two"}], usage={"input_tokens": 9, "output_tokens": 4}),
        asst("a4", "m1", None, [{"type": "text", "text": "norid"}]),
        asst("a5", None, "r9", [{"type": "text", "text": "nomid"}]),
        asst("a6", "", "r9", "a string content"),
        asst("a7", "m3", "r3", ["str", {"type": "text"}, {"type": "image"}],
             usage={"input_tokens": 2**53 + 1, "output_tokens": 0}),
        asst("a8", "m1", "r1", [], usage={}),
    ],
    "sidechain": [
        user("u1", "main"),
        user("u2", "side", isSidechain=True, agentId="abc"),
        user("u3", "side2", isSidechain=True),
        user("u4", "side3", isSidechain=True, agentId=""),
    ],
    "dedup-and-ids": [
        user("u1", "a"), user("u1", "a copy"), user("", "no uuid"), j(env(type="user", message={"content": "x"})),
        user("u2", "b", parentUuid="u1", version="", sessionId=""),
        j(env(type="user", uuid="u3", message={"content": "t"}, timestamp="")),
        j(env(type="user", uuid="u4", message={"content": "t"}, timestamp=None)),
        j(env(type="user", uuid="u5", message={"content": "t"}, timestamp="not a time")),
        j(env(type="user", uuid="u6", message={"content": "t"}, timestamp="2026-09-13T12:00:00+02:00")),
    ],
    # timestamps the decoder takes (null, empty, no date-time) and is_error values it does not
    "odd-times": [
        user("u1", "a"), j(env(type="user", uuid="u2", message={"content": "b"}, timestamp=None)),
        j(env(type="user", uuid="u3", message={"content": "c"}, timestamp="")),
        asst("a1", "m1", "r1", [tu("t1", "x", {}), tu("t2", "x", {})], timestamp="2026-13-13T10:00:00Z"),
        asst("a2", "m2", "r2", [{"type": "text", "text": "y"}], timestamp="not a time"),
        j({"type": "summary", "summary": "s", "leafUuid": "u1"}),
        j(env(type="system", uuid="s1", content="c", timestamp="2026-02-30T00:00:00Z")),
    ],
    "odd-is-error": [
        asst("a1", "m1", "r1", [tu(f"t{i}", "x", {}) for i in range(1, 8)]),
        user("u1", [tr("t1", "r", is_error="true"), tr("t2", "r", is_error=" FALSE "), tr("t3", "r", is_error="yes")]),
        user("u2", [tr("t4", "r", is_error=1), tr("t5", "r", is_error=None), tr("t6", "r", is_error={"a": [1]})]),
        user("u3", [tr("t7", "r", is_error=float("nan"))], timestamp=17577576),
        user("u4", "p", timestamp=[1, 2]),
    ],
    "duplicate-keys": [
        b'{"type":"user","uuid":"d1","uuid":"d2","message":{"content":"first"},"message":{"content":"second"}}',
        b'{"type":"assistant","type":"user","uuid":"d3","message":{"content":"x","content":[{"type":"text","text":"y"}]}}',
        b'{"type":"assistant","uuid":"d4","requestId":"r","message":{"id":"m","usage":{"input_tokens":1,"input_tokens":7},'
        b'"content":[{"type":"tool_use","id":"t","name":"a","name":"b","input":{"k":1,"k":2}}]}}',
    ],
    "other-types": [
        j(env(type="system", uuid="s1", content="")), j(env(type="system", uuid="s2")),
        j(env(type="system", uuid="s3", subtype="", content="c")),
        j(env(type="attachment", uuid="x1", content={"a": [1]}, subtype="k")),
        j(env(type="queue-operation", operation="enqueue", content="ls")),
        j({"type": "summary", "summary": "", "leafUuid": "z"}), j({"type": "summary"}),
        j({"type": "last-prompt", "lastPrompt": "p"}), j({"no_type": True}), j({}),
        j(env(type="user", uuid="m1")), j(env(type="assistant", uuid="m2", message=None)),
        j(env(type="from-the-future", uuid="f1", subtype="x", message={"content": "y"})),
    ],
    # type mismatches: the msgspec decoder refuses the file, the line-by-line path decides
    "odd-types": [
        j({"type": 7, "subtype": "s"}), j({"type": ["user"], "uuid": 5}), j({"type": None, "uuid": ""}),
        j(env(type="user", uuid="o1", isSidechain="true", agentId=3, message={"content": "x"})),
        j(env(type="user", uuid="o2", message="a string")),
        j(env(type="user", uuid="o3", message={"content": {"a": 1}})),
        j(env(type="user", uuid="o4", message={"content": [1, None, [2], {"type": "text", "text": 3}]})),
        j(env(type="assistant", uuid="o5", requestId=4, message={"id": 5, "model": 6, "usage": [],
                                                                   "content": [tu("q", "n", {"a": 1})]})),
        j(env(type="assistant", uuid="o6", requestId="r", message={"id": "m6", "usage": {"input_tokens": True,
                                                                                         "output_tokens": 5.0}})),
        j(env(type="system", uuid="o7", subtype=9, content=["a"])),
        j({"type": "summary", "summary": 12}),
        asst("o9", "m9", "r9", [{"type": "text", "text": 5}, "str", None, {"type": "text"}]),
        asst("o10", "m10", "r10", [{"type": "tool_use", "id": "t5", "name": 7}]),
        j(env(type="user", uuid="o8", message={"content": [tr(7, "x", is_error="yes")]})),
    ],
}

RAW: dict[str, bytes] = {
    # raw control characters (JSON allows them only escaped): each such line is quarantined
    "raw-control-chars": (user("u1", "a") + b"\n" + user("u2", "bNULc").replace(b"NUL", b"\x00")
                          + b"\n" + asst("a1", "m1", "r1", [tu("t1", "mcp__door__read", {"p": "TABHERE"})]).replace(
                              b"TABHERE", b"x\ty\x1f") + b"\n" + user("u3", [tr("t1", "ok")]) + b"\n"),
    # tool input numbers / shapes that json and orjson read alike only sometimes
    "big-ints": b"\n".join([
        b'{"type":"assistant","uuid":"b1","requestId":"r","message":{"id":"m1","usage":{"input_tokens":18446744073709551616,"output_tokens":1},"content":[]}}',
        b'{"type":"assistant","uuid":"b2","requestId":"r","message":{"id":"m2","usage":{"input_tokens":9223372036854775808,"output_tokens":-9223372036854775809},"content":[]}}',
        b'{"type":"assistant","uuid":"b3","requestId":"r","message":{"id":"m3","content":[{"type":"tool_use","id":"t","name":"x","input":{"n":123456789012345678901234567890,"f":1.0,"e":1e5}}]}}',
    ]) + b"\n",
    # msgspec keeps a title's invalid UTF-8 raw; orjson then refuses it: read line by line
    "invalid-utf8-document-title": user("u1", [tr("t", [{"type": "document", "title": "T",
                                                         "source": {"type": "text", "data": "d"}}])]).replace(
        b'"title":"T"', b'"title":"T\xff"') + b"\n",
    "big-int-in-range": b'{"type":"assistant","uuid":"b1","requestId":"r","message":{"id":"m1","usage":{"input_tokens":9007199254740993,"output_tokens":1},"content":[]}}\n',
    # what msgspec skips without checking: the reference reads such a line with json
    "invalid-utf8-skipped": (user("u1", "ok").replace(b'"cwd":"/p"', b'"cwd":"/p\xff\xfe"') + b"\n"
                             + user("u2", [tr("t", "r")], toolUseResult={"c": "x"}).replace(b'"c":"x"', b'"c":"\xc3("')
                             + b"\n"),
    "invalid-utf8-used": user("u1", "hi").replace(b"hi", b"h\xffi") + b"\n" + user("u2", "fine") + b"\n",
    "invalid-utf8-in-input": asst("a1", "m", "r", [tu("t", "x", {"p": "v"})]).replace(b'"v"', b'"\xff"') + b"\n",
    "float-overflow-skipped": user("u1", "x").replace(b'"cwd":"/p"', b'"cwd":1e400') + b"\n",
    "float-overflow-input": asst("a1", "m", "r", [tu("t", "x", {"p": 1})]).replace(b'"p":1', b'"p":1e400') + b"\n",
    "nan-skipped": user("u1", "x").replace(b'"cwd":"/p"', b'"cwd":NaN') + b"\n" + user("u2", "y") + b"\n",
    "surrogates": (user("u1", "x").replace(b'"x"', b'"a\\udcb2b\\ud800"') + b"\n"
                   + user("u2", "y").replace(b'"cwd":"/p"', b'"cwd":"\\ud800"') + b"\n"
                   + user("u3", "pair \\ud83d\\ude00").replace(b"\\\\ud83d\\\\ude00", b"\\ud83d\\ude00") + b"\n"),
    "control-char-skipped": user("u1", "x").replace(b'"cwd":"/p"', b'"cwd":"a\x01b"') + b"\n" + user("u2", "y") + b"\n",
    "tab-in-string": user("u1", "x").replace(b'"x"', b'"a\tb"') + b"\n",
    "deep-skipped": (user("u1", "x").replace(b'"cwd":"/p"', b'"cwd":' + b"[" * 700 + b"]" * 700) + b"\n"
                     + user("u2", "x").replace(b'"cwd":"/p"', b'"cwd":' + b"[" * 1100 + b"]" * 1100) + b"\n"),
    # orjson refuses these lines, json reads them: the reference's values, or its quarantine
    # ("nested too deeply": deep_safe recurses two frames a level) must come out
    "invalid-utf8-deep": (user("u1", "x").replace(b'"cwd":"/p"', b'"cwd":"\xff","d":' + b"[" * 600 + b"]" * 600)
                          + b"\n" + user("u2", "y") + b"\n"),
    "overflow-deep": (user("u1", "x").replace(b'"cwd":"/p"', b'"cwd":1e999,"d":' + b'[{"a":' * 300 + b"1" + b"}]" * 300)
                      + b"\n" + user("u2", "y") + b"\n"),
    "invalid-utf8-bigint-input": asst("a1", "m", "r", [tu("t", "x", {"n": 1})]).replace(
        b'"n":1', b'"n":123456789012345678901234567890').replace(b'"cwd":"/p"', b'"cwd":"\xff"') + b"\n",
    "overflow-bigint-tool-name": user("u1", [tr("t", [{"type": "tool_reference", "tool_name": [1]}])]).replace(
        b'"tool_name":[1]', b'"tool_name":[99999999999999999999999]').replace(b'"cwd":"/p"', b'"cwd":-1e999') + b"\n",
    "bigint-input-ok": asst("a1", "m", "r", [tu("t", "x", {"n": 1, "s": "12345678901234567890123"})]).replace(
        b'"n":1', b'"n":123456789012345678901234567890') + b"\n",
    "many-brackets-shallow": user("u1", [tr("t", "r")], toolUseResult={"l": [{"a": [i]} for i in range(600)]}) + b"\n",
    "crlf": user("u1", "a") + b"\r\n" + user("u2", "b") + b"\r\n",
    "blank-lines": b"\n" + user("u1", "a") + b"\n\n  \n" + user("u2", "b") + b"\n",
    "trailing-space": user("u1", "a") + b"  \n" + user("u2", "b") + b"\n",
    "pending-last": user("u1", "a") + b"\n" + user("u2", "b")[:40],
    "complete-last-no-newline": user("u1", "a") + b"\n" + user("u2", "b"),
    "concatenated": user("u1", "a") + user("u2", "b") + b"\n" + user("u3", "c") + b"\n",
    "not-objects": b'[1,2]\n"s"\n' + user("u1", "a") + b"\nnull\n",
    "garbage-line": user("u1", "a") + b"\n{not json}\n" + user("u2", "b") + b"\n",
    "pretty-printed": json.dumps(json.loads(user("u1", "a")), indent=1).encode() + b"\n",
    "spaces-json": json.dumps(json.loads(user("u1", "a"))).encode() + b"\n",
    "escaped-keys": (b'{"t\\u0079pe":"user","uuid":"e1","message":{"c\\u006fntent":"hi"}}\n'
                     b'{"type":"summary","t\\u0079pe":"user","uuid":"e2","message":{"content":[{"type":"text","text":"x"}]}}\n'
                     b'{"type":"\\u0061ssistant","uuid":"e3","requestId":"r","message":{"id":"m","content":'
                     b'[{"type":"tool_use","id":"t","n\\u0061me":"mcp__a__b","input":{"k\\u0065y":"\\u00e9"}}]}}\n'),
    "empty": b"",
    "only-newline": b"\n",
}


@pytest.fixture()
def tricky(tmp_path) -> Path:
    root = tmp_path / "tricky"
    root.mkdir()
    for name, lines in TRICKY.items():
        (root / f"{name}.jsonl").write_bytes(b"".join(ln + b"\n" for ln in lines))
    for name, data in RAW.items():
        (root / f"{name}.jsonl").write_bytes(data)
    return root


def test_tricky_files_one_by_one(tricky, monkeypatch):
    for p in sorted(tricky.iterdir()):
        assert_same(p, monkeypatch)


def test_tricky_files_together(tricky, monkeypatch):
    """Pairing and dedup across files (results before calls, resume copies, seq per id)."""
    (tricky / "resumed.jsonl").write_bytes(TRICKY["plain"][0] + b"\n" + TRICKY["result-shapes"][1] + b"\n")
    (tricky / "agent-abc123.jsonl").write_bytes(user("g1", "sub") + b"\n" + TRICKY["plain"][3] + b"\n")
    (tricky / "agent-abc123.meta.json").write_text('{"agentType": "x"}')
    # token counts beyond int64 make the reference raise OverflowError when it builds the frame
    # (frames.py casts from_records' float64); one by one, the fast path is held to that too
    (tricky / "big-ints.jsonl").unlink()
    frame = assert_same(tricky, monkeypatch)
    assert frame is not None and len(frame) > 50


def test_tricky_paths_taken(tricky):
    """The msgspec decoder takes the well-formed files and refuses the others."""
    takes = {"plain", "result-shapes", "streaming", "sidechain", "dedup-and-ids", "duplicate-keys",
             "other-types", "big-int-in-range", "invalid-utf8-skipped", "float-overflow-skipped",
             "spaces-json", "escaped-keys", "invalid-utf8-deep", "overflow-deep", "invalid-utf8-bigint-input",
             "overflow-bigint-tool-name", "bigint-input-ok", "many-brackets-shallow", "document-blocks", "odd-times",
             "repeated-tool-use",
             "invalid-utf8-document-title",
             # taken by the decoder, then the tool input does not parse with orjson: line by line
             "invalid-utf8-in-input", "float-overflow-input"}
    for name in takes:
        assert _claude_ms.decode_file((tricky / f"{name}.jsonl").read_bytes(), 400) is not None, name
    for name in ("odd-types", "odd-is-error", "big-ints", "surrogates", "control-char-skipped", "nan-skipped", "crlf",
                 "blank-lines", "pending-last", "concatenated", "not-objects", "garbage-line", "empty",
                 "only-newline", "pretty-printed", "invalid-utf8-used", "tab-in-string", "deep-skipped",
                 "trailing-space", "complete-last-no-newline"):
        assert _claude_ms.decode_file((tricky / f"{name}.jsonl").read_bytes(), 400) is None, name


def test_mcp_content_and_lone_items_are_read_not_dropped(tricky):
    """What the model was given in a tool result holding MCP content (an embedded resource's
    text, a resource link, audio), an item of a type the loader does not know, a lone object
    and a number — each kept as text, never an empty result."""
    f = load_claude_code(tricky / "mcp-content.jsonl").frame
    res = f[f["kind"] == "tool_result"].set_index("call_id")["text"]
    assert res["t1"] == ("[resource: s3://acme-data/demo/cars.csv, text/csv]\nmpg,cyl\n21,6\n"
                         "[resource: file:///x.bin]\n[resource_link: s3://acme-data/demo/big.parquet, big]\n"
                         "[audio: audio/wav]\n[widget]")
    assert res["t2"] == "one block"
    assert res["t3"] == "42" and res["t4"] == "true"
    assert res["t5"] == "[resource]\n[resource_link]"
    calls = f[f["kind"] == "tool_call"].set_index("call_id")["result_text"]
    assert calls["t1"].startswith("[resource: s3://acme-data/demo/cars.csv") and calls["t3"] == "42"


def test_a_tool_use_repeated_within_one_response_is_one_call(tricky):
    """Two lines of one streamed response (one message id and request id), the second repeating
    the first's tool_use beside a new one: three calls had been counted, toolu_1 twice, and the
    join then reported a door-bound step with no door call.  Within one response a tool-use id is
    one call (a note says how many repeats were dropped); the same id in another response stays."""
    res = load_claude_code(tricky / "repeated-tool-use.jsonl")
    calls = res.frame[res.frame["kind"] == "tool_call"]
    assert list(zip(calls["call_id"], calls["message_id"])) == [("toolu_1", "m1"), ("toolu_2", "m1"), ("toolu_1", "m2")]
    assert res.inputs[0]["notes"] == [
        "1 tool_use block repeated a tool-use id already in the same response (same message id and request id): the "
        "same call written again, counted once",
        "tool-use id toolu_1 names 2 tool calls (lines 1, 3: read): Claude Code gives each call its own id — an "
        "edited transcript, or two conversations' lines merged? Results are paired to calls by id, so one of them "
        "may show the other's result"]
    req = res.frame[res.frame["kind"] == "model_request"]
    assert req["message_id"].tolist() == ["m1", "m2"] and req["output_tokens"].iloc[0] == 20  # (the last copy's)
    assert pd.isna(req["output_tokens"].iloc[1])
    # an assistant message whose content is one block, not a list: its call is read, not dropped
    lone = load_claude_code(tricky / "lone-assistant-block.jsonl").frame
    assert lone.loc[lone["kind"] == "tool_call", ["call_id", "args_key", "result_text"]].values.tolist() == [
        ["toolu_3", '{"path":"c"}', "C"]]


def test_text_limit_and_sizes(tricky):
    f = load_claude_code(tricky / "plain.jsonl").frame
    res = f[f["kind"] == "tool_result"].iloc[0]
    assert res["text"].startswith(BIG[:100]) and len(res["text"]) > TEXT_LIMIT
    assert res["text_bytes"] == len(BIG.encode("utf-8"))


def test_folder_walk_with_symlinks(tricky, tmp_path, monkeypatch):
    """One folder is walked without resolving each file: same files, same order as expand_paths
    (symlinked files and folders are not taken; hard links are distinct files)."""
    from replaybook._jsonl import expand_paths
    from replaybook.sources.claude_code import _expand, _transcript_name

    root = tmp_path / "walk"
    (root / "b" / "c").mkdir(parents=True)
    (root / "b-c").mkdir()
    for p in (root / "a.jsonl", root / "b" / "x.jsonl", root / "b" / "c" / "y.jsonl.gz", root / "b-c" / "z.jsonl"):
        p.write_bytes((tricky / "plain.jsonl").read_bytes() if p.suffix == ".jsonl" else b"")
    (root / "b" / "notes.txt").write_text("x")
    (root / "b" / "x.meta.json").write_text("{}")
    (root / "link.jsonl").symlink_to(root / "a.jsonl")
    (root / "linkdir").symlink_to(root / "b", target_is_directory=True)
    (root / "hard.jsonl").hardlink_to(root / "a.jsonl")
    got = _expand(root)
    assert got == expand_paths([root], accept=_transcript_name)
    assert [p.relative_to(root).as_posix() for p in got] == [
        "a.jsonl", "b/c/y.jsonl.gz", "b/x.jsonl", "b-c/z.jsonl", "hard.jsonl"]   # Path order, by parts
    assert_same(root, monkeypatch)
    assert_same(str(root), monkeypatch)


def test_checks_before_taking_msgspec_records(tricky):
    """Lines orjson refuses (json reads them) that are deep, or hold a long integer in a value used
    whole, send their file line by line; deep lines orjson reads and long integers in lines it
    reads keep the msgspec records."""
    from replaybook.sources import _claude_fast as F

    def path_taken(name: str) -> str:
        load = F.Load(max_open=400)
        took = []
        orig = load._lines
        load._lines = lambda *a: (took.append("lines"), orig(*a))
        try:
            load.file(tricky / f"{name}.jsonl", F.read_file(tricky / f"{name}.jsonl"))
        except TypeError:   # canonical_args refuses json's 100-bit integer: the reference's crash
            assert name == "invalid-utf8-bigint-input"
        return took[0] if took else "msgspec"

    for name in ("invalid-utf8-deep", "overflow-deep", "invalid-utf8-bigint-input", "overflow-bigint-tool-name"):
        assert path_taken(name) == "lines", name
    for name in ("bigint-input-ok", "many-brackets-shallow", "plain", "invalid-utf8-skipped", "float-overflow-skipped"):
        assert path_taken(name) == "msgspec", name
    f = load_reference(tricky / "invalid-utf8-deep.jsonl")
    assert f.quarantine["error"].tolist() == ["invalid JSON: nested too deeply"]


@pytest.mark.parametrize("cwd", [b"\xff", b"/p"], ids=["invalid-utf8", "valid-utf8"])
def test_integer_beyond_4300_digits_in_a_value_the_loader_does_not_read(tmp_path, cwd, monkeypatch):
    """Once the one known difference (found by differential fuzzing): a line holding an integer of
    more than 4300 digits in a value the loader does not read is valid JSON, but neither orjson
    (out of range) nor ``json`` (int max_str_digits) read it, so the line-by-line reading
    quarantined the line where the fast path gave its rows.  ``json`` now reads such an integer as
    written (``_json.parse_int``): both give the line's rows."""
    p = tmp_path / "huge-int.jsonl"
    p.write_bytes(user("u1", "x").replace(b'"cwd":"/p"', b'"cwd":"' + cwd + b'","n":' + b"7" * 5000) + b"\n")
    ref = load_reference(p)
    assert ref.quarantine.empty and ref.frame["text"].tolist() == ["x"]
    assert load_claude_code(p).frame["text"].tolist() == ["x"]
    assert_same(p, monkeypatch)


def _nested(depth: int, cwd: bytes = b"\xff") -> bytes:
    """A user line whose unread ``d`` value nests ``depth`` levels (the line's object included),
    with invalid UTF-8 (orjson refuses the line; json reads it) unless ``cwd`` says otherwise."""
    return (user("u1", "x").replace(b'"cwd":"/p"', b'"cwd":"' + cwd + b'","d":' + b"[" * (depth - 1)
                                     + b"]" * (depth - 1)) + b"\n" + user("u2", "y") + b"\n")


@pytest.mark.parametrize("limit", [1000, 3000])
def test_deep_lines_near_the_reference_limit(tmp_path, monkeypatch, limit):
    """Lines nested around the depth where the reference's json + deep_safe give up (orjson
    refuses them), in an unread value and in a tool input: the same rows or quarantine both
    ways, at two recursion limits."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        for depth in (60, 200, limit // 2 - 80, limit // 2 - 20, limit // 2 + 20, limit - 100):
            p = tmp_path / f"deep-{limit}-{depth}.jsonl"
            p.write_bytes(_nested(depth))
            q = tmp_path / f"deep-input-{limit}-{depth}.jsonl"   # nested in a raw value read
            q.write_bytes(asst("a1", "m", "r", [tu("t", "x", {"p": 1})]).replace(
                b'"p":1', b'"p":' + b"[" * (depth - 5) + b"]" * (depth - 5)).replace(
                b'"cwd":"/p"', b'"cwd":"\xff"') + b"\n")
            for f in (p, q):
                assert_same(f, monkeypatch)
    finally:
        sys.setrecursionlimit(old)


def test_a_repeated_uuid_with_other_content_is_a_conflict_not_a_copy(tmp_path, monkeypatch):
    """A resumed session's copy (same line, new sessionId) is counted once; a line that repeats
    a uuid with other content (here: the prompt edited) is set aside as a conflict naming the
    first place — it had been dropped as a 'duplicate', the edit invisible.  Every path agrees."""
    first = [user("u1", "What is the MEAN mpg?"),
             asst("a1", "m1", "r1", [tu("toolu_1", "mcp__door__query", {"sql": "select avg(mpg)"})]),
             user("u2", [tr("toolu_1", "avg 19.9")])]
    edited = [user("u1", "What is the MEDIAN mpg?", sessionId="other-session"),  # same uuid, other prompt
              asst("a1", "m1", "r1", [tu("toolu_1", "mcp__door__query", {"sql": "select avg(mpg)"})],
                   sessionId="other-session"),                                   # a resume copy
              user("u2", [tr("toolu_1", "avg 19.9")]),                          # byte for byte
              user("u3", "thanks", sessionId="other-session")]
    (tmp_path / "a.jsonl").write_bytes(b"".join(x + b"\n" for x in first))
    (tmp_path / "b.jsonl").write_bytes(b"".join(x + b"\n" for x in edited))
    frame = assert_same(tmp_path, monkeypatch)
    res = load_claude_code(tmp_path)
    assert list(frame["text"].dropna()) == ["What is the MEAN mpg?", "avg 19.9", "thanks"]
    q = res.quarantine
    assert list(zip(q["source_file"], q["line_no"], q["kind"])) == [(str(tmp_path / "b.jsonl"), 1, "conflict")]
    assert q["error"].iloc[0] == (f"repeats the uuid of {tmp_path / 'a.jsonl'}:1 with different content (message "
                                  "differs); the first is kept, this one set aside")
    assert [i["duplicates"] for i in res.inputs] == [0, 2]  # the two true copies only
    # within one file, the first place is named by its line
    (tmp_path / "b.jsonl").unlink()
    (tmp_path / "a.jsonl").write_bytes(b"".join(x + b"\n" for x in first + [user("u1", "changed")]))
    q = load_claude_code(tmp_path).quarantine
    assert q["error"].tolist() == ["repeats the uuid of line 1 with different content (message differs); "
                                   "the first is kept, this one set aside"]
    assert_same(tmp_path, monkeypatch)


@pytest.mark.parametrize("names", [("aaaa", "bbbb"), ("ffff", "0000")])  # the resumed file named last / first
def test_a_resume_copy_written_by_an_upgraded_client_is_still_a_copy(tmp_path, monkeypatch, names):
    """A session resumed by a newer client: its copies carry the new sessionId and the client's
    own envelope (another ``version``, a ``slug`` the first client did not write).  They were set
    aside as conflicts — and, with the resumed file read first, the first session's call moved to
    the second transcript.  They are copies: counted once, each call in its own session's file."""
    first = [user("u1", "What is the mean mpg?", version="2.0.55"),
             asst("a1", "m1", "r1", [tu("toolu_1", "mcp__door__query", {"sql": "select avg(mpg)"})], version="2.0.55"),
             user("u2", [tr("toolu_1", "avg 19.9")], version="2.0.55")]

    def copy(raw: bytes) -> bytes:
        o = json.loads(raw)
        o.update(sessionId="eeeeeeee-0000-4000-8000-eeeeeeeeeeee", version="2.1.0", slug="mean-mpg")
        return j(o)

    resumed = [copy(x) for x in first] + [
        user("u3", "and the median?", sessionId="eeeeeeee-0000-4000-8000-eeeeeeeeeeee", version="2.1.0", slug="mean-mpg"),
        asst("a3", "m3", "r3", [tu("toolu_2", "mcp__door__query", {"sql": "select median(mpg)"})],
             sessionId="eeeeeeee-0000-4000-8000-eeeeeeeeeeee", version="2.1.0", slug="mean-mpg")]
    a, b = names
    (tmp_path / f"{a}.jsonl").write_bytes(_lines(*first))
    (tmp_path / f"{b}.jsonl").write_bytes(_lines(*resumed))
    frame = assert_same(tmp_path, monkeypatch)
    res = load_claude_code(tmp_path)
    assert res.quarantine.empty
    calls = frame[frame["kind"] == "tool_call"]
    assert list(zip(calls["call_id"], calls["transcript_id"])) == [("toolu_1", a), ("toolu_2", b)]
    assert {i["path"].rsplit("/", 1)[-1]: i["duplicates"] for i in res.inputs} == {f"{a}.jsonl": 0, f"{b}.jsonl": 3}
    # what the line records still differs only by an edit: that stays a conflict
    (tmp_path / f"{b}.jsonl").write_bytes(_lines(copy(user("u1", "What is the MEDIAN mpg?")), *resumed[1:]))
    q = load_claude_code(tmp_path).quarantine
    assert q["kind"].tolist() == ["conflict"] and "message differs" in q["error"].iloc[0]


def _lines(*items: bytes) -> bytes:
    return b"".join(x + b"\n" for x in items)


def _as_copy(raw: bytes, session: str) -> bytes:
    """A resumed session's copy of a line: the same line under the new session's id."""
    o = json.loads(raw)
    o["sessionId"] = session
    return j(o)


@pytest.mark.parametrize("names", [("aaaa", "bbbb"), ("ffff", "0000")])  # the resumed file named last / first
def test_a_response_cut_in_a_session_file_and_completed_in_its_resume_is_one_request(tmp_path, monkeypatch, names):
    """A session file collected mid-write ends inside a streamed response (the text and the first
    tool call, 40 output tokens so far); the file resuming it copies those lines and goes on with
    the rest of the same response (message.id + requestId): a second tool call, 70 tokens in
    all.  That had given two model requests (40 and 70, summed double) and the two tool calls in
    two transcripts — a door session holding both calls then agreed with neither in full.  It
    is one model request, in the first file's transcript, with both calls; every path agrees."""
    orig, resumed = names
    other = "bbbbbbbb-0000-4000-8000-bbbbbbbbbbbb"
    head = [user("u1", "Check two files"),
            asst("a1", "msg_CUT", "req_CUT", [{"type": "text", "text": "Looking"}],
                 usage={"input_tokens": 5, "output_tokens": 10}, parentUuid="u1"),
            asst("a2", "msg_CUT", "req_CUT", [tu("toolu_1", "mcp__door__describe", {"path": "demo/a.parquet"})],
                 usage={"input_tokens": 5, "output_tokens": 40}, parentUuid="a1")]
    rest = [asst("a3", "msg_CUT", "req_CUT", [{"type": "text", "text": "and b"},
                                               tu("toolu_2", "mcp__door__describe", {"path": "demo/b.parquet"})],
                 usage={"input_tokens": 6, "output_tokens": 70}, parentUuid="a2", sessionId=other),
            user("u2", [tr("toolu_1", "a: 12 rows")], parentUuid="a3", sessionId=other),
            user("u3", [tr("toolu_2", "b: 10 rows")], parentUuid="u2", sessionId=other)]
    (tmp_path / f"{orig}.jsonl").write_bytes(_lines(*head))
    (tmp_path / f"{resumed}.jsonl").write_bytes(_lines(*(_as_copy(x, other) for x in head), *rest))
    frame = assert_same(tmp_path, monkeypatch)
    res = load_claude_code(tmp_path)
    mr = frame[frame["kind"] == "model_request"]
    assert len(mr) == 1
    assert mr[["transcript_id", "uuid", "line_no", "input_tokens", "output_tokens", "text", "text_bytes"]].iloc[0].tolist() \
        == [orig, "a1", 2, 6, 70, "Looking\nand b", len("Looking\nand b")]
    calls = frame[frame["kind"] == "tool_call"]
    assert calls[["call_id", "transcript_id", "source_file", "line_no", "result_text"]].values.tolist() == [
        ["toolu_1", orig, str(tmp_path / f"{orig}.jsonl"), 3, "a: 12 rows"],
        ["toolu_2", orig, str(tmp_path / f"{resumed}.jsonl"), 4, "b: 10 rows"]]
    seqs = {t: g["kind"].tolist() for t, g in frame.sort_values("seq").groupby("transcript_id")}
    assert seqs == {orig: ["user_prompt", "model_request", "tool_call", "tool_call"],
                    resumed: ["tool_result", "tool_result"]}
    assert sorted(frame.groupby("transcript_id")["seq"].apply(list).tolist()) == [[0, 1], [0, 1, 2, 3]]
    info = {Path(i["path"]).stem: i for i in res.inputs}
    assert info[resumed]["duplicates"] == 3 and info[resumed]["resumes"] == orig
    assert info[resumed]["notes"] == [
        f"line 4: continues model response msg_CUT (requestId req_CUT) begun at line 2 of transcript {orig}, "
        "whose lines this file starts by copying: one model request there (usage from here; 1 of its tool "
        "calls read here)"]
    assert "notes" not in info[orig]


@pytest.mark.parametrize("rest_usage, said, out", [
    ({"input_tokens": 6, "output_tokens": 20}, "usage from there: its count is the larger", 40),
    (None, "usage from there: no line here has a count", 40)])
def test_the_continued_responses_note_says_where_its_usage_came_from(tmp_path, monkeypatch, rest_usage, said, out):
    # the note said "usage from here" when the count came from the first file (the larger, or
    # the only one)
    orig, other = "aaaa", "bbbbbbbb-0000-4000-8000-bbbbbbbbbbbb"
    head = [user("u1", "Check two files"),
            asst("a1", "msg_CUT", "req_CUT", [tu("toolu_1", "mcp__door__describe", {"path": "demo/a.parquet"})],
                 usage={"input_tokens": 5, "output_tokens": 40}, parentUuid="u1")]
    rest = [asst("a3", "msg_CUT", "req_CUT", [tu("toolu_2", "mcp__door__describe", {"path": "demo/b.parquet"})],
                 usage=rest_usage, parentUuid="a1", sessionId=other)]
    (tmp_path / f"{orig}.jsonl").write_bytes(_lines(*head))
    (tmp_path / "bbbb.jsonl").write_bytes(_lines(*(_as_copy(x, other) for x in head), *rest))
    frame = assert_same(tmp_path, monkeypatch)
    assert frame.loc[frame["kind"] == "model_request", "output_tokens"].tolist() == [out]
    notes = {Path(i["path"]).stem: i.get("notes") for i in load_claude_code(tmp_path).inputs}
    assert f"({said}; 1 of its tool calls read here)" in notes["bbbb"][0]


def test_a_response_continued_over_two_resumes_and_one_that_is_not_a_copy(tmp_path, monkeypatch):
    """The response may be cut twice (a resume of a resume, each collected mid-write): still one
    request, its usage from the last line that has one (here: the first resume's, the last
    continuation having none).  Two files that merely hold the same message.id and requestId —
    the later one holds no copy of the first one's lines — stay two requests, as read."""
    s2, s3 = "22222222-0000-4000-8000-222222222222", "33333333-0000-4000-8000-333333333333"
    a = [user("u1", "go"),
         asst("a1", "m1", "r1", [tu("toolu_1", "mcp__door__q", {"i": 1})], usage={"output_tokens": 10})]
    b_new = [asst("a2", "m1", "r1", [tu("toolu_2", "mcp__door__q", {"i": 2})], usage={"output_tokens": 30},
                  sessionId=s2)]
    c_new = [asst("a3", "m1", "r1", [tu("toolu_3", "mcp__door__q", {"i": 3})], sessionId=s3),
             user("u2", "thanks", sessionId=s3)]
    (tmp_path / "a.jsonl").write_bytes(_lines(*a))
    (tmp_path / "b.jsonl").write_bytes(_lines(*(_as_copy(x, s2) for x in a), *b_new))
    (tmp_path / "c.jsonl").write_bytes(_lines(*(_as_copy(x, s3) for x in a + b_new), *c_new))
    frame = assert_same(tmp_path, monkeypatch)
    mr = frame[frame["kind"] == "model_request"]
    assert mr[["transcript_id", "output_tokens"]].values.tolist() == [["a", 30]]
    assert frame.loc[frame["kind"] == "tool_call", "transcript_id"].tolist() == ["a", "a", "a"]
    assert frame[frame["transcript_id"] == "a"]["seq"].tolist() == [0, 1, 2, 3, 4]
    assert frame[frame["transcript_id"] == "c"][["kind", "seq"]].values.tolist() == [["user_prompt", 0]]
    assert "b" not in set(frame["transcript_id"])  # all its lines were copies or this response's
    # the same ids in a file that copies nothing of the first: not a resume, nothing merged
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.jsonl").write_bytes(_lines(*a))
    (other / "b.jsonl").write_bytes(_lines(user("v1", "go", sessionId=s2), *b_new))
    frame = assert_same(other, monkeypatch)
    mr = frame[frame["kind"] == "model_request"]
    assert mr[["transcript_id", "output_tokens"]].values.tolist() == [["a", 10], ["b", 30]]
    assert all("notes" not in i for i in load_claude_code(other).inputs)


def test_a_tool_use_id_repeated_with_other_input_is_a_call_of_its_own(tricky):
    """An edited transcript: a line of the response repeats a tool-use id with other input.  It
    had been dropped as "the same call written again" — the altered call vanished.  Now it is a
    call, and the note names the id; the same input however spelt (1 and 1.0, key order) is still
    the one call written again."""
    res = load_claude_code(tricky / "repeated-id-other-input.jsonl")
    calls = res.frame[res.frame["kind"] == "tool_call"]
    assert calls[["line_no", "call_id", "args_key"]].values.tolist() == [
        [1, "toolu_1", '{"n":1,"path":"a"}'], [2, "toolu_1", '{"path":"reference/.env"}']]
    assert res.inputs[0]["notes"] == [
        "3 tool_use blocks repeated a tool-use id already in the same response (same message id and request id): "
        "the same call written again, counted once",
        "tool-use id toolu_1 names 2 tool calls (lines 1, 2: read): Claude Code gives each call its own id — an "
        "edited transcript, or two conversations' lines merged? Results are paired to calls by id, so one of them "
        "may show the other's result"]


def test_a_tool_use_id_that_is_not_text_is_noted_by_line_on_both_paths(tmp_path, monkeypatch):
    """An ``id``/``tool_use_id`` written as a number had left the call and its result unpaired
    (``call_id`` NA) without a word."""
    import json

    base = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/w", "sessionId": "S1",
            "version": "2.0.1", "timestamp": "2025-01-01T00:00:00.000Z"}
    lines = [dict(base, type="assistant", uuid="a1", requestId="req_1", message={
                 "id": "msg_1", "role": "assistant", "model": "m",
                 "content": [{"type": "tool_use", "id": 42, "name": "mcp__door__read_object", "input": {"p": 1}}]}),
             dict(base, type="user", uuid="u2", message={"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": 42, "content": "r1"}]}),
             dict(base, type="user", uuid="u3", message={"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": "toolu_9", "content": "r2"}]})]
    path = tmp_path / "S1.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in lines))
    frame = assert_same([path], monkeypatch)
    tools = frame[frame["kind"].isin(["tool_call", "tool_result"])]
    assert list(zip(tools["kind"], tools["call_id"].astype(object).where(tools["call_id"].notna(), None))) == [
        ("tool_call", None), ("tool_result", None), ("tool_result", "toolu_9")]
    notes = load_claude_code([path]).inputs[0]["notes"]
    assert notes == ["2 lines with a tool-use id that is not text (a tool_use id or a tool_result's tool_use_id), "
                     "kept with no call id, so call and result are not paired: line 1 (42), line 2 (42)"]
