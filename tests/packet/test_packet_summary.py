"""packet_summary: the steps and claims tables the review report and workbook will read."""

from __future__ import annotations

from pathlib import Path

from replaybook.packet import packet_summary, replay
from replaybook.packet.frames import PACKET_CLAIMS, PACKET_STEPS

from packet_helpers import git, write_check

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "packet" / "claims"


def test_summary_of_a_seed_format_log_and_its_body():
    out = packet_summary(CASE / "session.jsonl", CASE / "PR_BODY.md")
    PACKET_STEPS.validate(out["steps"])
    PACKET_CLAIMS.validate(out["claims"])
    assert out["steps"]["seq"].tolist() == [1, 2, 3] and out["steps"]["exit"].tolist() == [1, 0, 1]
    assert out["steps"]["ts"].isna().all() and out["verdict"] is None
    claims = out["claims"]
    rows = [(r.line_no, r.status, None if r.seq is None else int(r.seq))
            for r in claims.astype("object").where(claims.notna(), None).itertuples()]
    assert rows == [(1, "warning", None), (3, "accepted", 1), (4, "accepted", 2), (5, "finding", 3), (6, "finding", 7)]
    assert claims.loc[claims["seq"] == 3, "step_exit"].tolist() == [1]
    assert out["counts"] == {"steps": 3, "failing_steps": 2, "diverged": None, "findings": 2, "warnings": 1,
                             "markers": 4, "accepted_markers": 2, "accepted_steps": 2}


def test_summary_joins_a_replay(packet: Path, repo: Path):
    write_check(repo, extra=' and os.path.exists("other.flag")')
    git(repo, "commit", "-q", "-am", "stricter")
    v = replay(packet, repo=repo, checkout="HEAD")
    out = packet_summary(packet, replay=v)
    steps = out["steps"]
    assert out["verdict"] == "DIVERGED" and out["headline"] == "DIVERGED (1/3 steps differ)"
    assert steps["replay_status"].tolist() == ["ok", "ok", "DIVERGED"]
    assert steps["replay_exit"].tolist() == [1, 0, 1]
    assert steps.loc[2, "replay_reasons"] == "exit 1, recorded 0; output differs"
    assert steps["cwd"].tolist() == [".", ".", "."] and steps["stored"].tolist() == [True, True, True]
    assert out["claims"].empty and out["counts"]["diverged"] == 1
