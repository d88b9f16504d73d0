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


def test_the_report_shows_each_steps_commit_time_and_stored_output(packet: Path, repo: Path):
    """A reviewer reading the report saw exit codes and hashes only: not which commit a step ran
    at, whether the tree was dirty, when it ran, nor what it printed — the evidence the PR's
    claims rest on.  The summary carries the stored outputs; the section shows them, and says
    of an output edited after recording that it no longer matches, without showing it."""
    from replaybook.packet.log import outputs_dir_for
    from replaybook.report.sections import packet_section

    out = packet_summary(packet)
    steps = out["steps"]
    head = git(repo, "rev-parse", "HEAD").strip()
    assert steps["commit"].tolist() == [head] * 3 and steps["ts"].notna().all()
    assert steps["dirty"].tolist() == [False, False, True]   # (feature.flag, untracked, from step 2 on)
    outputs = out["outputs"]
    assert sorted(outputs) == [1, 2, 3] and not any(o["edited"] for o in outputs.values())
    first = outputs[1]["text"]
    assert isinstance(first, str) and first == (outputs_dir_for(packet) / f"{steps.loc[0, 'out_sha']}.txt").read_text()
    html = packet_section(out)
    assert "<h3>Stored outputs</h3>" in html and html.count("<details>") == 3
    assert html.count(f"<code>{head[:12]}</code>") == 3
    assert html.count("<br>uncommitted changes: <code>feature.flag</code>") == 1  # the paths the log names
    assert ">started (UTC)<" in html
    # an output changed after recording: named, not shown
    p = outputs_dir_for(packet) / f"{steps.loc[0, 'out_sha']}.txt"
    p.write_text(first + "edited\n")
    out = packet_summary(packet)
    assert out["outputs"][1] == {"path": str(p), "text": None, "edited": True}
    html = packet_section(out)
    assert "changed after it was recorded" in html and "edited\n" not in html and html.count("<details>") == 2
    # and the header and the stderr findings line say so: evidence edited after recording
    from replaybook.report.sections import packet_counts, packet_words

    assert packet_counts(out)["edited_outputs"] == [1]
    assert packet_words(out) == ("replay packet: 3 recorded steps, no PR body named: no claims checked; 1 stored "
                                 "output changed after recording (seq 1)")


def test_each_step_is_tied_to_the_transcript_call_that_recorded_it(packet: Path):
    """The packet's steps and the agent's shell calls that recorded them were two lists the
    reviewer lined up by hand.  A call whose command runs ``replaybook packet record`` (or
    ``rec``) with a step's command, up to two minutes before the step started, is named beside
    it — one call per step, the latest in the window; a call made too early, or a plain run of
    the same command without recording it, is not."""
    import pandas as pd

    from replaybook.frames import STEPS
    from replaybook.packet.links import recording_calls
    from replaybook.report.sections import packet_section

    out = packet_summary(packet)
    ps = out["steps"]
    t = [pd.Timestamp(x) for x in ps["ts"]]
    py_cmd = ps.loc[0, "cmd"]
    assert ps["cmd"].tolist() == [py_cmd, "touch feature.flag", py_cmd]

    def call(seq, ts, command):
        return {"transcript_id": "tr-1", "seq": seq, "ts": ts, "kind": "tool_call", "tool": "Bash",
                "arguments": {"command": command, "description": "record"}}

    steps = STEPS.build([
        call(1, t[0] - pd.Timedelta(minutes=10), f"replaybook packet record -- {py_cmd}"),  # too early
        call(2, t[0] - pd.Timedelta(seconds=1), f"cd repo &&  replaybook packet record -- {py_cmd}"),
        call(3, t[1] - pd.Timedelta(seconds=1), "touch feature.flag"),                         # not recorded
        call(4, t[2] - pd.Timedelta(seconds=2), f"rec {py_cmd}"),
    ])
    assert recording_calls(ps, steps) == [("tr-1", 2), None, ("tr-1", 4)]
    # the same command run twice a few seconds apart: each step gets the call made just before it,
    # never the later one (a call after a step started did not record it)
    ps2 = ps.copy()
    ps2.loc[2, "ts"] = t[0] + pd.Timedelta(seconds=5)
    twice = STEPS.build([call(7, t[0] - pd.Timedelta(seconds=0.4), f"rec {py_cmd}"),
                         call(8, t[0] + pd.Timedelta(seconds=4.6), f"rec {py_cmd}")])
    assert recording_calls(ps2, twice) == [("tr-1", 7), None, ("tr-1", 8)]
    assert recording_calls(ps, None) == [None, None, None]
    html = packet_section(out, steps=steps)
    assert "2 of 3 steps were recorded by a tool call in the transcripts" in html
    assert html.count("<code>tr-1</code> step 2") == 1 and html.count("<code>tr-1</code> step 4") == 1
    # without transcripts (or none that recorded a step) the column is not there
    assert "recorded by the agent" not in packet_section(out)


def test_a_marker_citing_a_step_beyond_64_bits_is_a_row_with_no_step(tmp_path: Path):
    """``[seq:9223372036854775808]``: the claims linter names it as citing a missing step, and
    the report's claims frame had failed to build (``cannot convert to Int64``)."""
    body = tmp_path / "PR_BODY.md"
    body.write_text("Tests pass [seq:9223372036854775808].\n")
    out = packet_summary(CASE / "session.jsonl", body)
    claims = out["claims"]
    PACKET_CLAIMS.validate(claims)
    assert claims["kind"].tolist() == ["cites_missing_step"] and claims["seq"].isna().all()
    assert "9223372036854775808" in claims["message"].iloc[0]
