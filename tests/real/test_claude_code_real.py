"""The Claude Code loader against real public transcripts in ``../shared/real/claude-code``.

Those files (daaain/claude-code-log test data, MIT, client versions 1.0.24–2.1.114) are read in
place and never copied into this repository.  Skipped when ``../shared`` is absent, failing
instead when ``REPLAYBOOK_REQUIRE_SHARED=1`` (see ``tests/conftest.py``).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from replaybook.frames import STEPS
from replaybook.sources import registry
from replaybook.sources.claude_code import load_claude_code

pytestmark = pytest.mark.real

# Expected per-file counts, counted BY HAND with jq, independently of the loader:
#   lines          grep -c '' FILE
#   tool_calls     jq -r 'select(.type=="assistant") | .message.content
#                         | if type=="array" then .[]|select(.type=="tool_use")|.id else empty end' | sort -u | wc -l
#   tool_results   same over type=="user" lines, .[]|select(.type=="tool_result")|.tool_use_id | wc -l
#                  (and the sorted unique id sets of calls and results are identical in every file)
#   model_requests jq -r 'select(.type=="assistant" and (.message|type)=="object")
#                         | "\(.message.id)|\(.requestId)"' | sort -u | wc -l
#   user_prompts   type=="user" lines whose content is a string or a list without tool_result blocks
#   agents         jq -r 'select(.isSidechain==true) | .agentId // "sidechain"' | sort -u
#   quarantined    lines that python's json.loads rejects or that are not objects (0 everywhere;
#                  jq also parses every line)
#   rows           lines - assistant lines + model_requests + tool_calls (one row per line, streamed
#                  assistant lines merged per request, one extra row per tool_use block; every user
#                  line with tool results holds exactly one tool_result block in these files)
# There are no duplicate uuids in or across these files (jq ... | sort | uniq -d is empty).
# (lines, rows, tool_calls, tool_results, model_requests, user_prompts, agents, quarantined)
EXPECTED = {
    "-Users-dain-workspace-JSSoundRecorder/7acd37a8-2745-4b58-a8a9-46164b22ad9e.jsonl": (211, 198, 71, 71, 36, 8, [], 0),
    "-Users-dain-workspace-JSSoundRecorder/agent-3430b97e.jsonl": (1, 1, 0, 0, 1, 0, ["3430b97e"], 0),
    "-Users-dain-workspace-claude-code-log-sample/326189cf-5676-4237-8cde-1ce80aae4a9f.jsonl": (54, 63, 14, 14, 15, 4, [], 0),
    "-Users-dain-workspace-claude-code-log-sample/4e27c414-a885-46a0-b5c8-d58e1417377d.jsonl": (1, 1, 0, 0, 0, 0, [], 0),
    "-Users-dain-workspace-claude-code-log-sample/fe869ecb-c176-478f-9734-7e4b8ef12cff.jsonl": (111, 118, 32, 32, 34, 5, [], 0),
    "-experiments-ideas/03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl": (61, 50, 2, 2, 9, 10, [], 0),
    "-experiments-ideas/a95fea4a-b88a-4e49-ac07-4cc323d8700c.jsonl": (4, 4, 0, 0, 0, 0, [], 0),
    "-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl": (180, 175, 40, 40, 17, 5, [], 0),
    "-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a36efb2a1231c41e2.jsonl": (18, 21, 7, 7, 6, 1, ["a36efb2a1231c41e2"], 0),
    "-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a4ca7529859c158c2.jsonl": (56, 69, 24, 24, 20, 1, ["a4ca7529859c158c2"], 0),
    "-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a52886dc180afb356.jsonl": (44, 51, 17, 17, 15, 2, ["a52886dc180afb356"], 0),
    "-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-a6aa8ad077d9ea083.jsonl": (18, 18, 6, 6, 5, 1, ["a6aa8ad077d9ea083"], 0),
    "-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-ab1e6e141221a29ab.jsonl": (41, 50, 17, 17, 15, 1, ["ab1e6e141221a29ab"], 0),
    "-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1/subagents/agent-aef063ba534d73153.jsonl": (16, 18, 6, 6, 5, 1, ["aef063ba534d73153"], 0),
    "-src-deep-manifest/a7da6a22-facc-4fcd-8bab-f83c87862004.jsonl": (316, 350, 108, 108, 103, 14, [], 0),
    "-src-deep-manifest/agent-c8d9b115.jsonl": (35, 36, 15, 15, 6, 0, ["c8d9b115"], 0),
    "-src-experiments-claude_p/256ba646-2c15-437a-98e9-4171aafd030e.jsonl": (11, 13, 3, 3, 4, 1, [], 0),
    "-src-experiments-claude_p/29ccd257-68b1-427f-ae5f-6524b7cb6f20.jsonl": (6, 7, 1, 1, 2, 1, [], 0),
    "-src-experiments-claude_p/29ccd257-68b1-427f-ae5f-6524b7cb6f20/subagents/agent-a2271d1.jsonl": (59, 59, 24, 24, 10, 1, ["a2271d1"], 0),
    "-src-experiments-claude_p/2b4ed4c0-b905-41de-9238-273db3ec737a.jsonl": (24, 31, 9, 9, 10, 1, [], 0),
    "-src-experiments-claude_p/94604a7b-062f-4369-bdf0-da948381c3e5.jsonl": (4, 4, 0, 0, 1, 1, [], 0),
    "debug_image_message.v2.0.55.jsonl": (1, 1, 0, 0, 0, 1, [], 0),
}


@pytest.fixture(scope="module")
def cc_dir(real_dir: Path) -> Path:
    d = real_dir / "claude-code"
    assert d.is_dir(), f"{d} missing from the shared evidence folder"
    return d


def test_table_covers_every_file(cc_dir):
    found = sorted(str(p.relative_to(cc_dir)) for p in cc_dir.rglob("*.jsonl"))
    assert found == sorted(EXPECTED)


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_real_file_counts(cc_dir, rel):
    lines, rows, tool_calls, tool_results, model_requests, user_prompts, agents, quarantined = EXPECTED[rel]
    path = cc_dir / rel
    before = path.stat().st_mtime_ns
    res = load_claude_code(path)
    f = res.frame
    STEPS.validate(f)
    k = f["kind"].value_counts()
    assert res.inputs[0]["lines"] == lines
    assert len(f) == rows
    assert k.get("tool_call", 0) == tool_calls
    assert f.loc[f["kind"] == "tool_call", "call_id"].nunique() == tool_calls
    assert k.get("tool_result", 0) == tool_results
    assert k.get("model_request", 0) == model_requests
    assert k.get("user_prompt", 0) == user_prompts
    assert sorted(f["agent_id"].dropna().unique()) == agents
    assert len(res.quarantine) == quarantined
    # every call has its result (checked with jq: same id sets)
    calls = f[f["kind"] == "tool_call"]
    assert calls["result_ts"].notna().all() and calls["is_error"].notna().all()
    # sub-agent files: every row carries the agent id
    if agents and Path(rel).name.startswith("agent-"):
        assert f["agent_id"].notna().all()
    assert f["seq"].tolist() == list(range(len(f)))
    assert path.stat().st_mtime_ns == before
    assert registry.sniff_file(path)[0].name == "claude-code"


def test_whole_folder_in_one_call(cc_dir, tmp_path):
    res = load_claude_code(cc_dir)
    f = res.frame
    assert len(res.inputs) == len(EXPECTED)
    assert sum(i["duplicates"] for i in res.inputs) == 0
    assert len(f) == sum(v[1] for v in EXPECTED.values()) == 1338
    assert (f["kind"] == "tool_call").sum() == sum(v[2] for v in EXPECTED.values()) == 396
    assert (f["kind"] == "model_request").sum() == sum(v[4] for v in EXPECTED.values()) == 314
    assert f["agent_id"].dropna().nunique() == 9
    assert len(res.quarantine) == 0
    # no MCP tools in these sessions (jq: no tool_use name starts with mcp__): all built-ins
    calls = f[f["kind"] == "tool_call"]
    assert calls["server"].isna().all() and (calls["tool"] == calls["tool_raw"]).all()
    assert (calls["tool"] == "Bash").sum() == 123 and (calls["tool"] == "Read").sum() == 75
    # the 2.1.x sub-agent .meta.json files are read beside their transcripts
    metas = [i["agent_meta"] for i in res.inputs if "agent_meta" in i]
    assert len(metas) == 6 and all(m["agentType"] == "general-purpose" for m in metas)
    # the frame writes to Parquet and HTML
    f.to_parquet(tmp_path / "steps.parquet")
    f.to_html(io.StringIO())


def test_huge_image_line(cc_dir):
    res = load_claude_code(cc_dir / "debug_image_message.v2.0.55.jsonl")
    row = res.frame.iloc[0]
    assert res.inputs[0]["bytes"] == 855148
    assert row["kind"] == "user_prompt"
    assert row["images"] == 2                      # two base64 PNG blocks
    assert row["text_bytes"] == 228 + 1 + 917      # jq utf8bytelength of the two text blocks, "\n"-joined
    assert row["text"].startswith("<ide_selection>")
    assert row["ts"].tzinfo is not None and str(res.frame["ts"].dtype) == "datetime64[ns, UTC]"


def test_old_versions_system_and_summary(cc_dir):
    f = load_claude_code(cc_dir / "-Users-dain-workspace-claude-code-log-sample").frame
    # jq: 326189cf holds 12 system lines (no subtype, 1.0.51) and 4 summary lines; fe869ecb 15; 4e27c414 1
    assert (f["kind"] == "system").sum() == 12
    assert set(f.loc[f["kind"] == "system", "line_type"]) == {"system"}
    assert (f["kind"] == "summary").sum() == 4 + 15 + 1
    assert f.loc[f["kind"] == "summary", "ts"].isna().all()    # summary lines carry no timestamp
    assert set(f["client_version"].dropna()) == {"1.0.24", "1.0.51"}


def test_case_copies_match_shared(cases_dir):
    """The fixtures under tests/fixtures/claude_code are byte-identical copies of ../shared/cases."""
    fix = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code"
    for case in sorted(cases_dir.glob("claude-*")):
        for src in case.iterdir():
            assert (fix / case.name / src.name).read_bytes() == src.read_bytes(), src


MAIN_21X = "-experiments-worktrees/ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"


def _fork_of(lines: list[bytes], new_session: str, fresh_uuids: bool, upto: int) -> list[bytes]:
    """A fork of a real session's first ``upto`` lines as the client writes one: ``/branch`` keeps
    each uuid, the Agent SDK's ``forkSession()`` gives a fresh one; both re-stamp ``sessionId``,
    rebuild ``parentUuid`` and mark the copy with ``forkedFrom``; the SDK re-stamps the last
    copy's time."""
    import json

    out, new = [], {}
    for i, raw in enumerate(lines[:upto]):
        o = json.loads(raw)
        if not isinstance(o.get("uuid"), str):
            continue   # (bookkeeping lines are not copied)
        new[o["uuid"]] = ("f" + o["uuid"][1:]) if fresh_uuids else o["uuid"]
        o.update(forkedFrom={"sessionId": o.get("sessionId"), "messageUuid": o["uuid"]}, uuid=new[o["uuid"]],
                 parentUuid=new.get(o.get("parentUuid")), sessionId=new_session, isSidechain=False)
        if fresh_uuids and i == upto - 1:
            o["timestamp"] = "2099-01-01T00:00:00.000Z"
        out.append(json.dumps(o, ensure_ascii=False, separators=(",", ":")).encode())
    return out


@pytest.mark.parametrize("fresh_uuids", [False, True], ids=["branch", "sdk-fork"])
def test_a_fork_of_a_real_session_counts_its_calls_once(cc_dir, tmp_path, fresh_uuids):
    lines = (cc_dir / MAIN_21X).read_bytes().splitlines()
    want = EXPECTED[MAIN_21X]
    fork = "0f0f0f0f-0000-4000-8000-0f0f0f0f0f0f"
    copied = _fork_of(lines, fork, fresh_uuids, upto=len(lines) // 2)
    (tmp_path / f"{fork}.jsonl").write_bytes(b"".join(x + b"\n" for x in copied))
    for paths in ([tmp_path / f"{fork}.jsonl", cc_dir / MAIN_21X], [cc_dir / MAIN_21X, tmp_path / f"{fork}.jsonl"]):
        res = load_claude_code(paths)
        f = res.frame
        # the real session's hand-checked counts, as if the fork were not there
        assert len(f) == want[1] and (f["kind"] == "tool_call").sum() == want[2]
        assert (f["transcript_id"] == Path(MAIN_21X).stem).all()
        assert res.quarantine.empty
        info = {Path(i["path"]).stem: i for i in res.inputs}
        assert info[fork]["duplicates"] == len(copied) and info[fork]["forked_from"] == [Path(MAIN_21X).stem]


def test_a_real_session_with_a_torn_write_loses_only_the_torn_record(cc_dir, tmp_path):
    # a writer killed mid-line, the next line appended right after it: the real session reads as
    # if the torn line had never been written (the line after it in its place), plus one
    # quarantine row for the torn start
    lines = (cc_dir / MAIN_21X).read_bytes().splitlines()
    i = next(n for n, raw in enumerate(lines) if b'"tool_use"' in raw and n + 1 < len(lines))
    cut = lines[i].index(b'"tool_use"') + 5   # inside a string: torn mid-value
    name = Path(MAIN_21X).name
    (tmp_path / "torn").mkdir()
    (tmp_path / "torn" / name).write_bytes(b"".join(x + b"\n" for x in lines[:i] + [lines[i][:cut] + lines[i + 1]]
                                                    + lines[i + 2:]))
    (tmp_path / "never").mkdir()
    (tmp_path / "never" / name).write_bytes(b"".join(x + b"\n" for x in lines[:i] + lines[i + 1:]))
    res, control = load_claude_code(tmp_path / "torn" / name), load_claude_code(tmp_path / "never" / name)
    cols = [c for c in control.frame.columns if c != "source_file"]
    assert len(control.frame) > 100 and (control.frame["kind"] == "tool_call").sum() >= 30
    assert res.frame[cols].astype(str).equals(control.frame[cols].astype(str))
    assert control.quarantine.empty
    q = res.quarantine
    assert list(zip(q["line_no"], q["kind"])) == [(i + 1, "invalid")]
    assert q["raw"].iloc[0] == lines[i][:cut][:200].decode()


def test_tool_calls_their_user_declined(cc_dir):
    """Counted by hand: the tool_result blocks with ``is_error: true`` whose text starts "The user
    doesn't want to" (``grep -c "doesn't want to" FILE``: 1 in the deep-manifest session, an
    ExitPlanMode; 4 in JSSoundRecorder — three Bash and an Edit, a Bash and the Edit declined with
    Escape, "doesn't want to take this action right now")."""
    from replaybook.sources._declined import declined_by_user

    found = {}
    for rel in ("-src-deep-manifest/a7da6a22-facc-4fcd-8bab-f83c87862004.jsonl",
                "-Users-dain-workspace-JSSoundRecorder/7acd37a8-2745-4b58-a8a9-46164b22ad9e.jsonl"):
        st = load_claude_code(cc_dir / rel).frame
        d = st[declined_by_user(st)]
        assert (d["kind"] == "tool_call").all() and d["is_error"].all()
        found[rel.split("/")[0]] = sorted(d["tool_raw"].tolist())
        escaped = d["result_text"].str.startswith("The user doesn't want to take this action right now.")
        found[rel.split("/")[0] + " escape"] = sorted(d.loc[escaped, "tool_raw"].tolist())
    assert found == {"-src-deep-manifest": ["ExitPlanMode"], "-src-deep-manifest escape": [],
                     "-Users-dain-workspace-JSSoundRecorder": ["Bash", "Bash", "Bash", "Edit"],
                     "-Users-dain-workspace-JSSoundRecorder escape": ["Bash", "Edit"]}
