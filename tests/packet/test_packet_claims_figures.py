"""Claims that compare or state figures, and quotes of what normalization replaced.

A benchmark step prints ``elapsed 11.956ms``; normalization stores ``elapsed <DUR>``.  A PR body
that quotes the real line must be accepted, one that states a figure the output does not hold, or
compares with nothing to compare to, must get a warning.
"""

from __future__ import annotations

import json
from pathlib import Path

from packet_helpers import rec

from replaybook.packet import lint_claims
from replaybook.packet.claims import lint_claims_text
from replaybook.packet.normalize import out_sha

BENCH = "printf 'elapsed 11.956ms\\nratio 12.0%%\\n'"


def _bench_packet(repo: Path) -> Path:
    r = rec(repo, BENCH)
    assert r.exit == 0 and r.line["norm_fired"] == ["duration", "whitespace"]
    return repo / "session.jsonl"


def _lint(tmp_path: Path, log: Path, body: str):
    path = tmp_path / "PR_BODY.md"
    path.write_text(body)
    return lint_claims(path, log)


def test_the_recorder_stores_the_raw_output_beside_the_normalized_one(repo: Path):
    r = rec(repo, BENCH)
    outputs = repo / "session.outputs"
    assert (outputs / f"{r.line['out_sha']}.txt").read_text() == "elapsed <DUR>\nratio 12.0%"
    assert r.line["raw_sha"] == out_sha("elapsed 11.956ms\nratio 12.0%\n")
    assert (outputs / "raw" / f"{r.line['raw_sha']}.txt").read_text() == "elapsed 11.956ms\nratio 12.0%\n"
    assert "raw_sha" not in rec(repo, "echo hi", store=False).line


def test_a_quote_of_a_duration_normalization_replaced_is_found_in_the_raw_output(repo: Path, tmp_path: Path):
    log = _bench_packet(repo)
    report = _lint(tmp_path, log, "The benchmark prints `elapsed 11.956ms` [seq:1].\n")
    assert report.findings == [] and report.warnings == [] and report.accepted_steps == [1]
    # a figure it did not print is still a finding: the raw output is read, not the <DUR> one
    report = _lint(tmp_path, log, "The benchmark prints `elapsed 5.000ms` [seq:1].\n")
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_output_without_text", 1)]


def test_without_a_raw_output_the_quote_is_normalized_before_it_is_looked_for(repo: Path, tmp_path: Path):
    log = _bench_packet(repo)
    line = json.loads(log.read_text().splitlines()[0])
    # an older recording: only the normalized output
    report = lint_claims_text("The benchmark prints `elapsed 11.956ms` [seq:1].", {1: 0},
                              commands={1: "python bench.py"}, outputs={1: "elapsed <DUR>\nratio 12.0%"})
    assert report.findings == [] and report.accepted_steps == [1]
    assert [(w.kind, w.seq) for w in report.warnings] == [("cites_normalized_text", 1)]
    assert "does not contain" not in report.warnings[0].message
    assert report.warnings[0].message == (
        "[seq:1] cites step 1 (`python bench.py`), whose stored output holds \"elapsed 11.956ms\" only normalized, as "
        "\"elapsed <DUR>\" (\"The benchmark prints `elapsed 11.956ms`\"), and its raw output was not stored: what "
        "normalization replaced (durations, times, paths) is not checked; record with --store-output again to keep "
        "the raw output")
    assert line["stored"] is True


def test_a_figure_the_raw_output_does_not_hold_is_a_warning_naming_what_it_shows(repo: Path, tmp_path: Path):
    log = _bench_packet(repo)
    report = _lint(tmp_path, log, "The benchmark runs in under 1ms [seq:1].\n")
    assert report.findings == [] and report.accepted_steps == [1]
    assert [(w.kind, w.seq, w.line) for w in report.warnings] == [("cites_figure_not_in_output", 1, 1)]
    assert report.warnings[0].message == (
        f"[seq:1] cites step 1 (`{BENCH}`), whose raw output has no 1 (the figures it shows: 11.956ms, 12.0%), but "
        "\"The benchmark runs in under 1ms\" states \"1ms\"; quote the figure the step printed, or cite the step that "
        "printed it")
    # the figures it printed are accepted, by value (12% is 12.0%)
    assert _lint(tmp_path, log, "It takes 11.956ms and uses 12% [seq:1].\n").warnings == []


def test_a_figure_with_no_stored_output_is_a_warning_that_it_is_not_checked():
    report = lint_claims_text("The benchmark runs in under 1ms [seq:4].", {4: 0}, commands={4: "python bench.py"})
    assert [(w.kind, w.seq) for w in report.warnings] == [("cites_figure_not_in_output", 4)]
    assert report.warnings[0].message.endswith(
        "whose output was not stored, so \"1ms\" in \"The benchmark runs in under 1ms\" is not checked; record the "
        "step with --store-output")


def test_a_comparison_citing_one_step_is_a_warning():
    steps, commands = {3: 0, 4: 0}, {3: "python bench.py", 4: "python bench.py"}
    for sentence, word in [("Benchmark improved 12% [seq:4].", "improved"), ("No regressions [seq:4].", "regressions"),
                           ("The parser is 2x faster [seq:4].", "2x")]:
        report = lint_claims_text(sentence, steps, commands=commands,
                                  outputs={4: "elapsed <DUR>"}, raw_outputs={4: "elapsed 11.956ms"})
        kinds = [w.kind for w in report.warnings]
        assert "cites_one_step_for_comparison" in kinds, sentence
        warning = next(w for w in report.warnings if w.kind == "cites_one_step_for_comparison")
        assert warning.seq == 4 and f"compares (\"{word}\"): one run has nothing to compare to" in warning.message
        assert report.findings == [] and report.accepted_steps == [4]
    # "improved 12%" also states a figure step 4 never printed
    report = lint_claims_text("Benchmark improved 12% [seq:4].", steps, commands=commands,
                              outputs={4: "elapsed <DUR>"}, raw_outputs={4: "elapsed 11.956ms"})
    assert [w.kind for w in report.warnings] == ["cites_one_step_for_comparison", "cites_figure_not_in_output"]
    assert report.markers_accepted_with_warnings == 1
    # a baseline and a new run: a comparison; a regression test or a reproduced regression: none
    assert lint_claims_text("Benchmark improved [seq:3][seq:4].", steps, commands=commands).warnings == []
    assert lint_claims_text("Adds a regression test that passes [seq:4].", steps,
                            commands={3: "pytest -q", 4: "pytest -q"}).warnings == []


def _with_raw_output(repo: Path, text: str) -> tuple[Path, Path]:
    """The bench packet, its stored raw output then changed to ``text``: (log, raw output file)."""
    log = _bench_packet(repo)
    raw = repo / "session.outputs" / "raw" / (json.loads(log.read_text().splitlines()[0])["raw_sha"] + ".txt")
    raw.write_text(text)
    return log, raw


def test_an_edited_raw_output_is_named_not_taken_as_never_stored(repo: Path, tmp_path: Path):
    """The raw output edited to hold a figure the step never printed: the quote passed, with only a
    warning that the raw output "was not stored" (false: the log records its raw_sha).  Edited, it
    is a ``cites_edited_output`` finding; deleted, the warning says it is missing."""
    log, raw = _with_raw_output(repo, "elapsed 99.999ms\nratio 12.0%\n")
    report = _lint(tmp_path, log, "The benchmark prints `elapsed 99.999ms` [seq:1].\n")
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_edited_output", 1)]
    assert f"raw output {raw} no longer hashes to the step's raw_sha" in report.findings[0].message
    raw.unlink()
    raw.mkdir()  # (something that is not a file in its place: edited too, and not read)
    assert [f.kind for f in _lint(tmp_path, log, "The benchmark prints `elapsed 99.999ms` [seq:1].\n").findings] == [
        "cites_edited_output"]
    raw.rmdir()
    report = _lint(tmp_path, log, "The benchmark prints `elapsed 11.956ms` [seq:1].\n")
    assert report.findings == [] and [w.kind for w in report.warnings] == ["cites_normalized_text"]
    assert f"and its raw output is missing ({raw}):" in report.warnings[0].message


def test_a_stored_output_replaced_by_a_folder_or_a_pipe_is_edited(repo: Path, tmp_path: Path):
    """A folder in place of the stored output gave no finding at all; a pipe made the linter wait
    for ever.  Neither is read: each is an output changed after recording."""
    import os

    log = _bench_packet(repo)
    out = repo / "session.outputs" / (json.loads(log.read_text().splitlines()[0])["out_sha"] + ".txt")
    body = "The benchmark prints `ratio 12.0%` [seq:1].\n"
    assert _lint(tmp_path, log, body).findings == []
    out.unlink()
    out.mkdir()
    assert [f.kind for f in _lint(tmp_path, log, body).findings] == ["cites_edited_output"]
    out.rmdir()
    os.mkfifo(out)
    assert [f.kind for f in _lint(tmp_path, log, body).findings] == ["cites_edited_output"]


def test_a_figure_judged_by_an_edited_or_missing_raw_output_says_so(repo: Path, tmp_path: Path):
    """"runs in 0.5ms" citing a step whose raw output was edited to hold 0.5ms had only a warning
    that the raw output "was not stored", and the marker was accepted."""
    log, raw = _with_raw_output(repo, "elapsed 0.5ms\nratio 12.0%\n")
    report = _lint(tmp_path, log, "The benchmark runs in 0.5ms [seq:1].\n")
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_edited_output", 1)]
    raw.unlink()
    report = _lint(tmp_path, log, "The benchmark runs in 0.5ms [seq:1].\n")
    assert [w.kind for w in report.warnings] == ["cites_figure_not_in_output"]
    assert f"whose raw output is missing ({raw}) and its normalized output has no 0.5" in report.warnings[0].message
