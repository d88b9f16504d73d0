"""The claims linter, including the shared packet-claims case (copied into tests/fixtures/packet/claims)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from replaybook.packet import lint_claims
from replaybook.packet.claims import lint_claims_text, mask_code
from replaybook.packet.cli import packet as packet_cli
from replaybook.packet.errors import PacketLogError

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "packet" / "claims"


def test_packet_claims_case_gives_exactly_the_expected_findings():
    expected = json.loads((CASE / "expected.json").read_text())
    report = lint_claims(CASE / "PR_BODY.md", CASE / "session.jsonl")
    assert [{"seq": f.seq, "kind": f.kind} for f in report.findings] == expected["findings"]
    assert report.accepted == expected["accepted"]
    assert expected["exit_code"] == "non-zero" and report.exit_code == 1
    assert [(f.line, f.kind) for f in report.findings] == [(5, "cites_failing_step"), (6, "cites_missing_step")]
    # the unmarked opening sentence is a warning, not a finding
    assert [(w.line, w.kind, w.sentence) for w in report.warnings] == [
        (1, "unsupported_claim", "Fixes the router fallback.")]


def test_cli_json_and_exit_code():
    res = CliRunner().invoke(packet_cli, ["claims", str(CASE / "PR_BODY.md"), str(CASE / "session.jsonl"),
                                          "--format", "json"])
    assert res.exit_code == 1
    out = json.loads(res.output)
    assert [(f["seq"], f["kind"]) for f in out["findings"]] == [(3, "cites_failing_step"), (7, "cites_missing_step")]
    assert out["accepted"] == [1, 2] and out["markers"] == 4


def test_cli_text_names_file_and_line():
    body = str(CASE / "PR_BODY.md")
    res = CliRunner().invoke(packet_cli, ["claims", body, str(CASE / "session.jsonl")])
    assert res.exit_code == 1
    assert f"{body}:5: error: cites_failing_step: [seq:3] cites step 3 (`ruff check src`), which exited 1" in res.output
    assert res.output.splitlines()[-1] == "claims: 2 finding(s), 1 warning(s), 4 marker(s); accepted seq: 1, 2"


STEPS = {1: 1, 2: 0, 3: 1}


def test_markers_in_code_and_comments_are_ignored():
    body = ("Done.\n\n```\nexample [seq:9]\n```\n\nUse `[seq:8]` like this.\n\n"
            "<!-- cite with [seq:N] -->\n\n~~~~\n[seq:7]\n~~~\n~~~~\n")
    report = lint_claims_text(body, STEPS)
    assert report.markers == 0 and report.findings == []
    masked = mask_code("a `b [seq:1]` c")
    assert masked == "a " + " " * len("`b [seq:1]`") + " c"


def test_unclosed_fence_runs_to_the_end():
    report = lint_claims_text("Text [seq:2].\n```python\n[seq:99]\n", STEPS)
    assert report.markers == 1 and report.findings == [] and report.accepted == [2]


@pytest.mark.parametrize("sentence", [
    "The test fails before the fix [seq:1].",
    "Expected failure: the old router drops the request [seq:1].",
    "A failing test pins the bug [seq:3].",
    "It was red before the change [seq:1].",
    "This reproduces the bug [seq:1].",
    "The new test is expected to fail here [seq:3].",
])
def test_expected_failure_phrasings_accept_failing_steps(sentence: str):
    report = lint_claims_text(sentence, STEPS)
    assert report.findings == [] and len(report.accepted) == 1


def test_marker_after_the_full_stop_belongs_to_the_sentence():
    report = lint_claims_text("The test fails before the fix. [seq:1] It passes after it. [seq:2]", STEPS)
    assert report.findings == [] and report.accepted == [1, 2] and report.warnings == []


def test_failing_step_without_the_words_and_malformed_markers_are_findings():
    body = "# Summary\n\nAll green [seq:1]. Also e.g. this [seq:x].\n\n- Lint is clean [seq:2]\n"
    report = lint_claims_text(body, STEPS)
    assert [(f.line, f.kind, f.seq) for f in report.findings] == [
        (3, "cites_failing_step", 1), (3, "malformed_marker", None)]
    assert report.accepted == [2]


def test_unsupported_claims_are_warnings_only():
    body = "## Tests pass\n\nThe cache is 30% faster.\nDoes it work?\nSee the notes.\nIt works [seq:2].\n"
    report = lint_claims_text(body, STEPS)
    assert report.exit_code == 0
    assert [(w.line, w.sentence) for w in report.warnings] == [(3, "The cache is 30% faster.")]


def test_bad_log_names_file_and_line(tmp_path: Path):
    log = tmp_path / "s.jsonl"
    log.write_text('{"seq": 1, "cmd": "a", "exit": 0}\n{"seq": 1, "cmd": "b", "exit": 0}\n')
    with pytest.raises(PacketLogError, match=r"s\.jsonl:2: seq 1 repeats \(first on line 1\)"):
        lint_claims(CASE / "PR_BODY.md", log)
    log.write_text('{"seq": "1", "cmd": "a", "exit": 0}\n')
    res = CliRunner().invoke(packet_cli, ["claims", str(CASE / "PR_BODY.md"), str(log)])
    assert res.exit_code == 2 and f"{log}:1: field 'seq': '1' is not of type 'integer'" in res.output
    res = CliRunner().invoke(packet_cli, ["claims", str(tmp_path / "nope.md"), str(CASE / "session.jsonl")])
    assert res.exit_code == 2 and "cannot read PR body" in res.output


@pytest.mark.parametrize("sentence", [
    "The new tests fail before the fix [seq:2].",
    "It failed on the old code [seq:2].",
    "This reproduces the bug [seq:2].",
    "The suite was red before the change [seq:2].",
    "The new test is expected to fail [seq:2].",
    "The old parser crashed on empty input [seq:2].",
])
def test_a_failure_claim_citing_a_passing_step_is_a_finding(sentence: str):
    report = lint_claims_text(sentence, STEPS, commands={2: "pytest -q"})
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_passing_step_for_failure", 2)]
    assert report.findings[0].message == ("[seq:2] cites step 2 (`pytest -q`), which exited 0, but the sentence "
                                          "says something fails; cite the step that failed")
    assert report.accepted == [] and report.exit_code == 1


@pytest.mark.parametrize("sentence", [
    "The tests fail before the fix and pass after [seq:1][seq:2].",  # the failure half cites step 1
    "The tests no longer fail [seq:2].",
    "Nothing fails after the fix [seq:2].",
    "The check doesn't fail any more [seq:2].",
    "The fix makes the failing test pass [seq:2].",
    "All tests pass [seq:2].",
])
def test_passing_steps_back_sentences_that_claim_no_failure(sentence: str):
    report = lint_claims_text(sentence, STEPS)
    assert report.findings == [] and 2 in report.accepted


@pytest.mark.parametrize("sentence", [
    "Negation: this is not an expected failure [seq:1].",
    "No xfail here, the tests pass [seq:1].",
    "It never fails before the fix [seq:1].",
])
def test_negated_expected_failure_phrases_do_not_accept_a_failing_step(sentence: str):
    report = lint_claims_text(sentence, STEPS)
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_failing_step", 1)]


def test_claims_warn_about_gaps_in_seq(tmp_path: Path):
    log = tmp_path / "s.jsonl"
    log.write_text('{"seq": 1, "cmd": "a", "exit": 1}\n{"seq": 3, "cmd": "b", "exit": 0}\n')
    body = tmp_path / "b.md"
    body.write_text("It passes [seq:3].\n")
    res = CliRunner().invoke(packet_cli, ["claims", str(body), str(log)])
    assert res.exit_code == 0
    assert (f"warning: {log}:2: seq 2 missing before step 3: the recorder numbers steps without gaps, so a line "
            f"was removed from the log") in res.output.splitlines()
    assert res.output.splitlines()[-1] == "claims: 0 finding(s), 1 warning(s), 1 marker(s); accepted seq: 3"


@pytest.mark.parametrize("sentence", [
    "The test fails before the fix [seq:1] and passes after [seq:3].",
    "The test fails before the fix [seq:1], but passes after [seq:3].",
    "The test fails before the fix [seq:1]; it passes after [seq:3].",
    "The tests fail before the fix and pass after [seq:1][seq:3].",
    "It fails before the fix and passes after [seq:1].",
    "The failing test passes now [seq:3].",
])
def test_a_failing_step_cited_for_a_pass_is_a_finding_though_the_sentence_names_a_failure(sentence: str):
    """An expected-failure phrase excuses only the step its own clause cites."""
    report = lint_claims_text(sentence, STEPS)
    failing = [(f.kind, f.seq) for f in report.findings]
    assert failing == [("cites_failing_step", failing[0][1])] and failing[0][1] in (1, 3)
    assert report.exit_code == 1


def test_each_marker_is_judged_against_the_clause_it_ends():
    report = lint_claims_text("The test fails before the fix [seq:1] and passes after [seq:3].", STEPS,
                              commands={3: "pytest -q"})
    assert [(f.kind, f.seq, f.message) for f in report.findings] == [(
        "cites_failing_step", 3,
        '[seq:3] cites step 3 (`pytest -q`), which exited 1; describe it as an expected failure ("expected '
        'failure", "fails before the fix" …) or cite a passing step (its clause: "passes after")')]
    assert report.accepted == [1]
    report = lint_claims_text("It fails before the fix and passes after [seq:1].", STEPS)
    assert [f.message for f in report.findings] == [
        '[seq:1] cites step 1, which exited 1, but "It fails before the fix; passes after" says something passes '
        'and no step cited there passed; cite the step that passed']


@pytest.mark.parametrize("sentence", [
    "The bug is reproduced [seq:2].",
    "Without the fix the test does not pass [seq:2].",
    "Before the fix the test was broken [seq:2].",
    "The old code gives the wrong mean [seq:2].",
    "Before the fix, the assertion error shows up [seq:2].",
    "The failing test [seq:2] shows the bug.",
    "Before the fix, test_mean fails [seq:2] and after it passes [seq:2].",
    "The test fails before the fix (see [seq:2]).",
    "It fails before the fix and passes after [seq:2][seq:2].",
])
def test_other_failure_wordings_citing_a_passing_step_are_findings(sentence: str):
    report = lint_claims_text(sentence, STEPS)
    assert [(f.kind, f.seq) for f in report.findings][:1] == [("cites_passing_step_for_failure", 2)]


@pytest.mark.parametrize("sentence", [
    "The test fails before the fix [seq:1] and passes after [seq:2].",
    "The tests fail before the fix and pass after [seq:1][seq:2].",
    "The bug is reproduced [seq:1] and fixed [seq:2].",
    "The test fails before the fix [seq:1]; it passes after [seq:2], as expected.",
])
def test_honest_failing_then_passing_sentences_stay_accepted(sentence: str):
    report = lint_claims_text(sentence, STEPS)
    assert report.findings == [] and report.accepted == [1, 2]
