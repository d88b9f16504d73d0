"""The claims linter, including the shared packet-claims case (copied into tests/fixtures/packet/claims)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import replaybook
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


# ----- a pass claim needs a step that ran the check ---------------------------------------------

NON_CHECK = Path(__file__).resolve().parents[1] / "fixtures" / "packet" / "non_check"
CMDS = {1: "pytest -q tests/test_router.py", 2: "pytest -q", 3: "ruff check src", 5: "make"}


@pytest.mark.parametrize("cmd,reason", [
    ('echo "1 passed"', "`echo` only prints"),
    ("printf '1 passed'", "`printf` only prints"),
    ("true", "`true` does nothing"),
    ("cat old-output.txt", "`cat` only reads"),
    ("ls", "`ls` only reads"),
    ("pytest --collect-only", "`pytest --collect-only` only lists tests or fixtures, running none"),
    ("pytest -q; echo done", "it runs pytest, but the step's exit code is that of `echo`, which runs after it"),
    ("pytest -q || true", "it runs pytest, but `||` lets the step exit 0 when it fails"),
])
def test_all_tests_pass_citing_a_step_that_runs_no_tests_is_a_finding(cmd: str, reason: str):
    report = lint_claims_text("All tests pass [seq:7].", {7: 0}, commands={7: cmd})
    assert [(f.kind, f.severity, f.line, f.seq) for f in report.findings] == [("cites_non_check_step", "error", 1, 7)]
    assert report.findings[0].message == (
        f"[seq:7] cites step 7 (`{cmd}`), which exited 0 but runs no tests: {reason}; \"All tests pass\" needs a "
        f"cited step that runs them (pytest, npm test, go test …)")
    assert report.accepted == [] and report.exit_code == 1


@pytest.mark.parametrize("cmd", [
    "pytest -q", "python -m pytest", "py.test tests", "tox -e py312", "nox -s tests", "python -m unittest",
    "npm test", "pnpm run test", "yarn test", "npx jest", "npx vitest run", "mocha", "go test ./...",
    "cargo test", "cargo nextest run", "mvn test", "mvn verify", "./gradlew test", "gradle check", "make test",
    "make check", "ctest", "rspec", "bundle exec rspec", "phpunit", "dotnet test", "mix test", "bazel test //...",
    "env CI=1 timeout 600 uv run pytest", "poetry run pytest", "bash -c 'cd tests && pytest -q'",
])
def test_all_tests_pass_citing_a_test_runner_is_accepted(cmd: str):
    report = lint_claims_text("All tests pass [seq:7].", {7: 0}, commands={7: cmd})
    assert report.findings == [] and report.warnings == [] and report.accepted == [7]


@pytest.mark.parametrize("sentence,seq", [
    ("Lint is clean [seq:7].", 3),
    ("ruff is happy and the lint passes [seq:7].", 3),
    ("The build passes [seq:7].", 5),
    ("It builds [seq:7].", 5),
    ("The crate compiles cleanly [seq:7].", 5),
    ("mypy is clean [seq:7].", 4),
    ("The type checks pass [seq:7].", 4),
    ("CI is green [seq:7].", 1),
    ("All checks pass [seq:7].", 3),
])
def test_build_lint_and_type_check_claims_need_their_kind_of_runner(sentence: str, seq: int):
    runners = {1: "pytest", 3: "ruff check src", 4: "mypy src", 5: "cargo build"}
    report = lint_claims_text(sentence, {7: 0}, commands={7: runners[seq]})
    assert report.findings == [] and report.accepted == [7]
    report = lint_claims_text(sentence, {7: 0}, commands={7: "echo ok"})
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_non_check_step", 7)]


def test_a_runner_of_another_kind_does_not_back_the_claim():
    report = lint_claims_text("All tests pass [seq:3].", {3: 0}, commands=CMDS)
    assert [f.message for f in report.findings] == [
        '[seq:3] cites step 3 (`ruff check src`), which exited 0 but runs no tests: it runs ruff check, a lint; '
        '"All tests pass" needs a cited step that runs them (pytest, npm test, go test …)']
    report = lint_claims_text("Lint is clean [seq:2].", {2: 0}, commands=CMDS)
    assert [f.message for f in report.findings] == [
        '[seq:2] cites step 2 (`pytest -q`), which exited 0 but runs no lint: it runs pytest, a test runner; '
        '"Lint is clean" needs a cited step that runs one (ruff check, eslint, npm run lint …)']


def test_one_runner_among_the_cited_steps_backs_the_clause():
    steps = {1: 0, 2: 0}
    report = lint_claims_text("All tests pass [seq:1][seq:2].", steps, commands={1: "cd tests", 2: "pytest"})
    assert report.findings == [] and report.accepted == [1, 2]
    # each claim clause needs its own: pytest backs the tests, nothing backs the lint
    report = lint_claims_text("The tests pass and lint is clean [seq:2].", steps, commands={2: "pytest"})
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_non_check_step", 2)]
    assert '"lint is clean" needs' in report.findings[0].message
    report = lint_claims_text("The tests pass [seq:2] and lint is clean [seq:1].", steps,
                              commands={1: "ruff check .", 2: "pytest"})
    assert report.findings == [] and report.accepted == [1, 2]


@pytest.mark.parametrize("sentence", [
    "It passes after the fix [seq:7].",          # names no check: left to the reviewer
    "The config is copied over [seq:7].",        # claims nothing passes
    "The old output shows the bug [seq:7].",     # a failure claim: judged by the failure rules
])
def test_clauses_that_claim_no_passing_check_are_not_held_to_a_runner(sentence: str):
    report = lint_claims_text(sentence, {7: 0, 8: 1}, commands={7: "cat old-output.txt"})
    assert all(f.kind != "cites_non_check_step" for f in report.findings + report.warnings)


def test_a_step_the_linter_cannot_read_is_a_warning_not_a_finding():
    for cmd, reason in [
        ("./scripts/run-tests.sh", "`./scripts/run-tests.sh` is no test, build, lint or type-check runner the "
                                   "linter knows"),
        ('pytest -k "unclosed', "the command line cannot be parsed (no closing double quote)"),
    ]:
        report = lint_claims_text("All tests pass [seq:7].", {7: 0}, commands={7: cmd})
        assert report.findings == [] and report.accepted == [7] and report.exit_code == 0
        assert [(w.kind, w.severity, w.seq) for w in report.warnings] == [("cites_unrecognised_command", "warning", 7)]
        assert report.warnings[0].message == (
            f"[seq:7] cites step 7 (`{cmd}`), which exited 0, but the linter cannot tell whether it runs tests: "
            f"{reason}; \"All tests pass\" needs a cited step that runs them (pytest, npm test, go test …): cite "
            f"one, or check this step yourself")


def test_without_commands_pass_claims_are_not_held_to_a_runner():
    report = lint_claims_text("All tests pass [seq:7].", {7: 0})
    assert report.findings == [] and report.warnings == [] and report.accepted == [7]


def test_lint_claims_reads_argv_shell_and_pipefail_from_the_log(tmp_path: Path):
    log = tmp_path / "session.jsonl"
    lines = [
        {"seq": 1, "cmd": "pytest -q | tee log", "exit": 0, "shell": "bash", "pipefail": True, "argv": None},
        {"seq": 2, "cmd": "pytest -q | tee log", "exit": 0, "shell": "bash", "pipefail": None, "argv": None},
        {"seq": 3, "cmd": "pytest -q | tee log", "exit": 0},  # a seed-format line: pipefail not known
        {"seq": 4, "cmd": "pytest '|' tee", "exit": 0, "argv": ["pytest", "|", "tee"], "shell": None},
    ]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    body = tmp_path / "PR_BODY.md"
    body.write_text("All tests pass [seq:1].\n\nAll tests pass [seq:2].\n\nAll tests pass [seq:3].\n\n"
                    "All tests pass [seq:4].\n")
    report = lint_claims(body, log)
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_non_check_step", 2)]
    assert "(the log records that the line ran without pipefail)" in report.findings[0].message
    assert [(w.kind, w.seq) for w in report.warnings] == [("cites_unrecognised_command", 3)]
    assert "(the log does not record whether the line ran with pipefail)" in report.warnings[0].message
    assert report.accepted == [1, 3, 4]


def test_cli_end_to_end_names_each_step_that_runs_no_check():
    """The packet CLI, run as a program, on a PR body and command log written for this case."""
    body, log = NON_CHECK / "PR_BODY.md", NON_CHECK / "session.jsonl"
    src = Path(replaybook.__file__).resolve().parents[1]  # this checkout's src, for the child process
    res = subprocess.run([sys.executable, "-m", "replaybook.packet.cli", "claims", str(body), str(log)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(src)}, timeout=120)
    assert res.returncode == 1, res.stderr
    lines = res.stdout.splitlines()
    hint = "(pytest, npm test, go test …)"
    assert lines == [
        f'{body}:4: error: cites_non_check_step: [seq:3] cites step 3 (`echo "1 passed"`), which exited 0 but runs '
        f'no tests: `echo` only prints; "All tests pass" needs a cited step that runs them {hint}',
        "    All tests pass [seq:3].",
        f"{body}:5: error: cites_non_check_step: [seq:5] cites step 5 (`pytest -q | tee pytest.log`), which exited "
        f"0 but runs no tests: it runs pytest, but its exit code is lost in the pipe: the step's exit code is "
        f"`tee`'s (the log records that the line ran without pipefail); \"The full suite is green\" needs a cited "
        f"step that runs them {hint}",
        "    The full suite is green [seq:5], and it stays green with the log kept [seq:9].",
        f"{body}:7: error: cites_non_check_step: [seq:4] cites step 4 (`cat old-output.txt`), which exited 0 but "
        f'runs no tests: `cat` only reads; "The test suite passes on the recorded output" needs a cited step that '
        f"runs them {hint}",
        "    The test suite passes on the recorded output [seq:4].",
        f"{body}:9: error: cites_non_check_step: [seq:7] cites step 7 (`true`), which exited 0 but runs no check: "
        f'`true` does nothing; "CI checks pass" needs a cited step that runs one (pytest, npm test, make check …)',
        "    CI checks pass [seq:7].",
        f"{body}:1: warning: unsupported_claim: this sentence reads like a factual claim but cites no step; add "
        f"[seq:N]",
        "    Fixes the router fallback.",
        f"{body}:8: warning: cites_unrecognised_command: [seq:8] cites step 8 (`./scripts/run-tests.sh`), which "
        f"exited 0, but the linter cannot tell whether it runs tests: `./scripts/run-tests.sh` is no test, build, "
        f'lint or type-check runner the linter knows; "The integration tests pass" needs a cited step that runs '
        f"them {hint}: cite one, or check this step yourself",
        "    The integration tests pass [seq:8].",
        "claims: 4 finding(s), 2 warning(s), 9 marker(s); accepted seq: 1, 2, 6, 8, 9",
    ]
    res = subprocess.run([sys.executable, "-m", "replaybook.packet.cli", "claims", str(body), str(log),
                          "--format", "json"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(src)}, timeout=120)
    out = json.loads(res.stdout)
    assert res.returncode == 1 and out["exit_code"] == 1
    assert [(f["kind"], f["seq"], f["line"]) for f in out["findings"]] == [
        ("cites_non_check_step", 3, 4), ("cites_non_check_step", 5, 5), ("cites_non_check_step", 4, 7),
        ("cites_non_check_step", 7, 9)]
    assert [(w["kind"], w["seq"]) for w in out["warnings"]] == [("unsupported_claim", None),
                                                                ("cites_unrecognised_command", 8)]
