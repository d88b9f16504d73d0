"""The Codex loader (and the other agent sniffs) against ``../shared/real/codex``.

Those two rollouts (daaain/claude-code-log ``test/test_data/codex/``, MIT; hand-written fixtures of
that project in the current ``{timestamp, type, payload}`` envelope) are read in place and never
copied.  Skipped when ``../shared`` is absent; failing with ``REPLAYBOOK_REQUIRE_SHARED=1``.

Counts checked BY HAND, independently of the loader:
  lines         grep -c '' FILE
  tool_calls    jq 'select(.type=="response_item" and (.payload.type=="function_call"
                    or .payload.type=="custom_tool_call"))' → call-structured-001, call-custom-001,
                    call-mcp-001 (exec_command, apply_patch, mcp__synthetic__lookup)
  tool_results  jq '… .payload.type | test("output$")' → the same three call_ids
  user_prompts  jq 'select(.type=="event_msg" and .payload.type=="user_message")' (1 per file)
  model_req.    jq '… .payload.type=="message" and .payload.role=="assistant"' (1, 0)
  quarantined   python json.loads per line: malformed file line 3 fails, at byte 323 (grep -b)
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pandas as pd
import pytest

from replaybook.frames import STEPS
from replaybook.sources import registry
from replaybook.sources.codex import load_codex

pytestmark = pytest.mark.real

FULL = "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl"
BAD = "rollout-66666666-6666-4666-8666-666666666666.malformed.jsonl"
# (lines, rows, tool_calls, tool_results, model_requests, user_prompts, quarantined)
EXPECTED = {FULL: (14, 14, 3, 3, 1, 1, 0), BAD: (3, 2, 0, 0, 0, 1, 1)}
AGENT_SOURCES = ("codex", "otel", "gemini")


@pytest.fixture(scope="module")
def codex_dir(real_dir: Path) -> Path:
    d = real_dir / "codex"
    assert d.is_dir(), f"{d} missing from the shared evidence folder"
    return d


def test_table_covers_every_file(codex_dir):
    assert sorted(p.name for p in codex_dir.iterdir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_file_counts(codex_dir, name):
    lines, rows, calls, results, requests, prompts, quarantined = EXPECTED[name]
    path = codex_dir / name
    before = (path.stat().st_mtime_ns, path.read_bytes())
    res = load_codex(path)
    f = res.frame
    STEPS.validate(f)
    k = f["kind"].value_counts()
    assert res.inputs[0]["lines"] == lines and res.inputs[0]["generation"] == "envelope-jsonl"
    assert len(f) == rows and f["seq"].tolist() == list(range(rows))
    assert k.get("tool_call", 0) == calls and k.get("tool_result", 0) == results
    assert k.get("model_request", 0) == requests and k.get("user_prompt", 0) == prompts
    assert len(res.quarantine) == quarantined
    assert res.inputs[0]["replayed"] == 0
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before
    assert registry.sniff_file(path)[0].name == "codex"


def test_full_rollout_values(codex_dir):
    f = load_codex(codex_dir / FULL).frame
    assert f["transcript_id"].eq("11111111-1111-4111-8111-111111111111").all()
    assert f["client_version"].eq("0.0.0-test").all()
    calls = f[f["kind"] == "tool_call"].set_index("call_id")
    ex = calls.loc["call-structured-001"]
    assert ex["tool"] == "exec_command" and pd.isna(ex["server"])
    assert ex["args_key"] == '{"cmd":"find . -maxdepth 1 -type f"}'
    assert ex["result_text"] == "./alpha.txt\n./beta.txt"
    assert str(ex["ts"]) == "2026-01-02 03:04:09+00:00" and str(ex["result_ts"]) == "2026-01-02 03:04:10+00:00"
    patch = calls.loc["call-custom-001"]
    assert patch["tool"] == "apply_patch" and pd.isna(patch["args_key"]) and patch["text"].startswith("*** Begin Patch")
    assert patch["result_text"] == "Done!"
    mcp = calls.loc["call-mcp-001"]
    assert (mcp["server"], mcp["tool"], mcp["args_key"]) == ("synthetic", "lookup", '{"query":"fixture"}')
    assert mcp["result_text"] == '{"status":"ok"}'
    # the prompt is the user_message event (line 3); the mirrored response item (line 4) is "other"
    up = f[f["kind"] == "user_prompt"].iloc[0]
    assert (up["line_no"], up["text"]) == (3, "List the synthetic files.")
    mr = f[f["kind"] == "model_request"].iloc[0]
    assert mr["model"] == "synthetic-model" and mr["line_no"] == 13
    # reasoning summary shown, encrypted content never
    assert not f["text"].fillna("").str.contains("SYNTHETIC_ENCRYPTED").any()
    other = f[f["line_no"] == 14].iloc[0]
    assert (other["kind"], other["line_type"]) == ("other", "future_synthetic_record")


def test_malformed_last_line(codex_dir):
    res = load_codex(codex_dir / BAD)
    q = res.quarantine.iloc[0]
    assert (q["line_no"], q["byte_offset"], q["kind"]) == (3, 323, "invalid")
    assert q["raw"] == "{synthetic malformed json"
    assert res.frame["line_no"].tolist() == [1, 2]


def _head(p: Path) -> bytes:
    data = p.read_bytes()[: registry.SNIFF_BYTES]
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(p.read_bytes())[: registry.SNIFF_BYTES]
        except (OSError, EOFError):
            data = b""
    return data


def test_agent_sniffs_over_every_real_file(real_dir):
    """Codex files go to codex; Claude Code files to claude-code; no agent sniff of ours claims others."""
    for p in sorted(q for q in real_dir.rglob("*") if q.is_file() and q.suffix != ".md"):
        head = _head(p)
        rel = p.relative_to(real_dir).as_posix()
        mine = {n: registry.get(n).sniff(head) for n in AGENT_SOURCES}
        if rel.startswith("codex/"):
            assert registry.sniff_file(p)[0].name == "codex", rel
            assert mine["otel"] < 0.5 and mine["gemini"] < 0.5, rel
        else:
            assert all(s < 0.5 for s in mine.values()), (rel, mine)
            if rel.startswith("claude-code/") and p.suffix == ".jsonl":
                assert registry.sniff_file(p)[0].name == "claude-code", rel


def test_the_reports_transcript_table_shows_the_real_rollouts_patch(codex_dir):
    """The real rollout's apply_patch call (free-text input: no arguments) read "apply_patch" and
    "Done!" in the report — the patch the agent sent was missing.  Its cell holds the patch."""
    from replaybook.report import sections as S

    f = load_codex(codex_dir / FULL).frame
    h = S.unassigned_transcripts(f, ["11111111-1111-4111-8111-111111111111"])
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", h, re.S)
    patch = [r for r in rows if "apply_patch" in r]
    assert len(patch) == 1
    what = re.findall(r"<td[^>]*>(.*?)</td>", patch[0], re.S)[3]
    assert what == "apply_patch *** Begin Patch\n*** Add File: gamma.txt\n+synthetic\n*** End Patch"
