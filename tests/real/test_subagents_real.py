"""Sub-agent transcripts of the real Claude Code samples belong to their parent's conversation."""

from __future__ import annotations

from replaybook.join import sub_agent_parents
from replaybook.sources.claude_code import load_claude_code


def test_every_real_sub_agent_file_maps_to_its_parent_session(real_dir):
    # the 2.0.x flat layout (<project>/agent-<id>.jsonl) and the 2.1.x one
    # (<project>/<session>/subagents/agent-<id>.jsonl); checked by hand: each file's sessionId
    # is the stem of a <session>.jsonl in the same project folder
    steps = load_claude_code(real_dir / "claude-code").frame
    parents = sub_agent_parents(steps)
    assert parents == {
        "agent-3430b97e": "7acd37a8-2745-4b58-a8a9-46164b22ad9e",
        "agent-a2271d1": "29ccd257-68b1-427f-ae5f-6524b7cb6f20",
        "agent-c8d9b115": "a7da6a22-facc-4fcd-8bab-f83c87862004",
        **{f"agent-{a}": "ef958aa1-0e93-49f0-bb71-150f63befcd1"
           for a in ("a36efb2a1231c41e2", "a4ca7529859c158c2", "a52886dc180afb356", "a6aa8ad077d9ea083",
                     "ab1e6e141221a29ab", "aef063ba534d73153")},
    }
    # every sub-agent row carries its agent id; no main-agent transcript is taken for a sub-agent's
    sub = steps[steps["transcript_id"].isin(list(parents))]
    assert sub["agent_id"].notna().all()
    assert not set(parents) & set(steps.loc[steps["agent_id"].isna(), "transcript_id"])
