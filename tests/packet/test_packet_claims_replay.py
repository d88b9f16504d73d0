"""Which claims rest on steps that did not replay as recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from click.testing import CliRunner
from packet_helpers import PY, rec

from replaybook.packet.claims import cited_markers, lint_claims_text
from replaybook.packet.cli import packet as packet_cli

RANDOM = "import random; print(random.random())"
BODY = ("The sampler prints a number [seq:1].\n\nThe greeting prints `hi` [seq:2].\n\n"
        "```\nnot a marker [seq:1]\n```\n")


def test_cited_markers_reads_comments_and_code_as_the_linter_does():
    assert cited_markers("Escapes `<!--` now.\n\nIt passes [seq:2].\n") == [(3, 2)]
    assert cited_markers("A bare <!-- stays. It passes [seq:2].\n") == [(1, 2)]
    assert cited_markers("It passes [seq:1].\n<!-- draft [seq:2]\nand [seq:3]\n") == [(1, 1)]


def test_cited_markers_leaves_out_a_marker_beyond_any_seq():
    assert cited_markers("It passes [seq:" + "9" * 4301 + "] and [seq:2].\n") == [(1, 2)]


def test_cited_markers_lists_lines_and_steps_outside_code():
    assert cited_markers(BODY + "Bad [seq:x] and [seq:2][seq:3].\n") == [(1, 1), (3, 2), (8, 2), (8, 3)]


def test_replay_with_the_body_says_which_diverged_steps_are_cited(repo: Path, monkeypatch):
    monkeypatch.chdir(repo)
    rec(repo, PY, "-c", RANDOM)          # step 1: a new number on every run
    rec(repo, "echo hi")                 # step 2: stable
    rec(repo, PY, "-c", RANDOM)          # step 3: diverges, cited by no marker
    (repo / "PR_BODY.md").write_text(BODY)
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--body", "sub/../PR_BODY.md"])
    assert res.exit_code == 1, res.output
    lines = res.output.splitlines()
    assert lines[-3:] == [
        "DIVERGED step 1 is cited by PR_BODY.md:1: the claim there rests on a step that did not replay as recorded",
        "diverged step(s) no marker in PR_BODY.md cites: 3",
        "VERDICT: DIVERGED (2/3 steps differ)"]
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--body", "PR_BODY.md", "--format", "json"])
    out = json.loads(res.output)
    assert out["body"] == {"path": "PR_BODY.md", "cited": [{"seq": 1, "status": "DIVERGED", "lines": [1]}],
                           "uncited": [3]}
    # the claims command, given that replay's JSON, says it per marker
    (repo / "replay.json").write_text(res.output)
    res = CliRunner().invoke(packet_cli, ["claims", "PR_BODY.md", "session.jsonl", "--replay", "replay.json"])
    assert "PR_BODY.md:1: replay: [seq:1] step 1 DIVERGED: output differs\n    The sampler prints a number [seq:1]." \
        in res.output
    assert "PR_BODY.md:3: replay: [seq:2] step 2 replayed as recorded\n" in res.output
    res = CliRunner().invoke(packet_cli, ["claims", "PR_BODY.md", "session.jsonl", "--replay", "replay.json",
                                          "--format", "json"])
    assert [(r["line"], r["seq"], r["status"], r["lint"]) for r in json.loads(res.output)["replayed"]] == [
        (1, 1, "DIVERGED", "accepted"), (3, 2, "ok", "accepted")]


def test_a_replay_file_that_is_not_a_replays_json_is_an_error_naming_it(tmp_path: Path):
    (tmp_path / "PR_BODY.md").write_text("It passes [seq:1].\n")
    (tmp_path / "session.jsonl").write_text('{"seq": 1, "cmd": "pytest", "exit": 0}\n')
    (tmp_path / "r.json").write_text('{"verdict": "PASS"}')
    res = CliRunner().invoke(packet_cli, ["claims", str(tmp_path / "PR_BODY.md"), str(tmp_path / "session.jsonl"),
                                          "--replay", str(tmp_path / "r.json")])
    assert res.exit_code == 2
    assert f"{tmp_path / 'r.json'}: not a replay's JSON" in res.output


@pytest.mark.parametrize("steps,what", [
    ('[1, 2]', "steps[0]: not an object"),
    ('[{"seq": 1, "status": "ok"},\n  {"seq": "x", "status": "ok"}]', "steps[1]: its seq \"x\" is not a step number"),
    ('[{"seq": 1, "status": "ok"},\n  {"seq": true, "status": "ok"}]', "steps[1]: its seq true is not a step number"),
    ('[{"seq": 1, "status": "ok"},\n  {"seq": 2, "status": 3}]', "steps[1]: its status 3 is not text"),
])
def test_a_replay_step_it_cannot_read_is_named_not_taken_as_not_replayed(tmp_path: Path, steps: str, what: str):
    (tmp_path / "PR_BODY.md").write_text("It passes [seq:1].\n")
    (tmp_path / "session.jsonl").write_text('{"seq": 1, "cmd": "pytest", "exit": 0}\n')
    (tmp_path / "r.json").write_text('{"verdict": "PASS",\n "steps": ' + steps + "}")
    res = CliRunner().invoke(packet_cli, ["claims", str(tmp_path / "PR_BODY.md"), str(tmp_path / "session.jsonl"),
                                          "--replay", str(tmp_path / "r.json")])
    assert res.exit_code == 2, res.output
    line = 2 if what.startswith("steps[0]") else 3
    assert f"{tmp_path / 'r.json'}:{line}: not a replay's JSON: {what}" in " ".join(res.output.split())


def test_attach_replay_marks_steps_the_replay_did_not_run():
    report = lint_claims_text("It passes [seq:1]. Also [seq:7] passes.", {1: 0})
    view = report.attach_replay({1: ("ok", [])})
    assert [(r.seq, r.status, r.lint) for r in view] == [(1, "ok", "accepted"), (7, "not replayed", "cites_missing_step")]
