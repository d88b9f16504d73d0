"""The log's chain: each line carries the digest of the line before it, and a trailer seals the
last one, so lines removed, renumbered, edited or cut from the end show, naming the line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from replaybook.packet import lint_claims, packet_summary, read_log, replay
from replaybook.packet.cli import packet as packet_cli
from replaybook.packet.log import append_step, entry_digest, trailer_line

from packet_helpers import PY, log_lines, rec, write_lines


def _log(tmp_path: Path, n: int = 5) -> tuple[Path, list[str]]:
    log = tmp_path / "session.jsonl"
    for i in range(n):
        append_step(log, {"cmd": f"pytest -q tests/test_{i}.py", "exit": 0})
    return log, log.read_text().splitlines()


def _kinds(log: Path) -> list[tuple[str, int]]:
    return [(f.kind, f.line_no) for f in read_log(log).chain_findings]


def test_the_recorder_chains_every_line_and_seals_the_last_in_a_trailer(tmp_path: Path):
    log, raw = _log(tmp_path, 3)
    lines = [json.loads(x) for x in raw]
    assert [x.get("prev") for x in lines[:3]] == [None, entry_digest(lines[0]), entry_digest(lines[1])]
    assert lines[3] == trailer_line(3, entry_digest(lines[2])) == {
        "trailer": {"v": 1, "lines": 3, "last": entry_digest(lines[2])}}
    read = read_log(log)
    assert (read.chain, read.chained_from, read.chain_findings) == ("chained", 1, ())
    assert [s.seq for s in read.steps] == [1, 2, 3]
    # the digest is of the line's content, not its spacing
    log.write_text("".join(json.dumps(x, indent=None, separators=(", ", ": ")) + "\n" for x in lines))
    assert read_log(log).chain == "chained"


def test_a_removed_line_is_named(tmp_path: Path):
    log, raw = _log(tmp_path)
    log.write_text("\n".join(raw[:2] + raw[3:]) + "\n")
    read = read_log(log)
    assert read.chain == "damaged" and [f.where(log) for f in read.chain_findings] == [
        f"{log}:3: seq 3 missing before line 3 (step 4): its prev is not the digest of line 2, so the line(s) "
        f"recorded between them were removed",
        f"{log}:5: the trailer on line 5 counts 5 lines and the log holds 4: 1 line(s) were removed"]
    assert read.gap_warnings() == []  # the chain says it, once


def test_a_log_whose_every_step_was_removed_is_not_called_chained(tmp_path: Path):
    """Only the trailer left: ``claims`` said "log chained" and the report "intact — none was
    removed", though the trailer seals four lines."""
    log, raw = _log(tmp_path, 4)
    log.write_text(raw[-1] + "\n")
    read = read_log(log)
    assert read.steps == () and read.chain == "damaged"
    assert [f.where(log) for f in read.chain_findings] == [
        f"{log}:1: the trailer on line 1 counts 4 lines and the log holds none: every recorded step was removed"]
    log.write_text(json.dumps(trailer_line(0, "sha256:" + "0" * 64)) + "\n")  # (a trailer of nothing: nothing lost)
    assert read_log(log).chain_findings == ()


def test_a_removed_line_with_the_rest_renumbered_is_named(tmp_path: Path):
    log, raw = _log(tmp_path)
    lines = [json.loads(x) for x in raw]
    log.write_text("".join(json.dumps(x) + "\n" for x in [lines[0], lines[1], {**lines[3], "seq": 3},
                                                          {**lines[4], "seq": 4}, lines[5]]))
    assert _kinds(log) == [("lines_removed", 3), ("renumbered", 3), ("renumbered", 4), ("lines_removed", 5)]
    messages = [f.message for f in read_log(log).chain_findings]
    assert messages[0].startswith("seq 3 missing before line 3 (step 3)")  # step 3 was recorded as step 4
    assert messages[1] == ("line 3 holds step 3, but the recorder wrote it as step 4 (line 4's prev says so): the "
                           "log was renumbered, so [seq:N] markers may name other steps than were recorded")
    assert "(the trailer on line 5 says so)" in messages[2]


def test_renumbering_alone_is_named(tmp_path: Path):
    log, raw = _log(tmp_path, 3)
    lines = [json.loads(x) for x in raw]
    log.write_text("".join(json.dumps({**x, "seq": 7} if x.get("seq") == 2 else x) + "\n" for x in lines))
    assert _kinds(log) == [("renumbered", 2)]


@pytest.mark.parametrize("keep,expected", [
    (3, [("missing_trailer", 3)]),                           # cut with its trailer
    (-1, [("missing_trailer", 5)]),                          # only the trailer gone
])
def test_a_log_cut_off_at_its_end_is_named(tmp_path: Path, keep: int, expected: list):
    log, raw = _log(tmp_path)
    log.write_text("\n".join(raw[:keep]) + "\n")
    assert _kinds(log) == expected
    assert read_log(log).chain_findings[0].message == (
        f"the log ends at line {expected[0][1]} without the recorder's trailer: the lines after it were cut off, "
        f"or its last recording was interrupted (recording a step writes one)")


def test_lines_cut_before_the_trailer_are_named(tmp_path: Path):
    log, raw = _log(tmp_path)
    log.write_text("\n".join(raw[:3] + raw[5:]) + "\n")
    assert [f.where(log) for f in read_log(log).chain_findings] == [
        f"{log}:4: the trailer on line 4 seals 5 lines and the log holds 3: the last 2 line(s) were cut from its "
        f"end (line 3 is not the last one recorded)"]


@pytest.mark.parametrize("seq,line", [(2, 2), (5, 5)])
def test_an_edited_line_is_named(tmp_path: Path, seq: int, line: int):
    log, raw = _log(tmp_path)
    lines = [json.loads(x) for x in raw]
    log.write_text("".join(json.dumps({**x, "exit": 1} if x.get("seq") == seq else x) + "\n" for x in lines))
    assert _kinds(log) == [("line_edited", line)]


def test_joined_logs_and_foreign_lines_are_named(tmp_path: Path):
    a, raw_a = _log(tmp_path / "a", 2)
    b = tmp_path / "b.jsonl"
    append_step(b, {"cmd": "make", "exit": 0})
    (tmp_path / "j.jsonl").write_text(a.read_text() + b.read_text().replace('"seq":1', '"seq":3'))
    # b's line: renumbered (its own trailer sealed it as step 1), a chain of its own, after a's trailer
    assert _kinds(tmp_path / "j.jsonl") == [("renumbered", 4), ("not_recorded", 4), ("not_recorded", 4),
                                            ("not_recorded", 5)]
    assert [f.message for f in read_log(tmp_path / "j.jsonl").chain_findings][1:] == [
        "line 4 (step 3) starts a chain of its own (prev null) after line 2: two logs were joined, or the lines "
        "before it were added",
        "line 4 comes after the trailer on line 3: the recorder did not append it (two logs joined?)",
        "the trailer on line 5 counts 1 lines and the log holds 3: 2 line(s) were added"]
    lines = [json.loads(x) for x in raw_a]
    foreign = {"seq": 3, "cmd": "true", "exit": 0}
    (tmp_path / "f.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines[:2] + [foreign]))
    assert _kinds(tmp_path / "f.jsonl") == [("missing_trailer", 3), ("not_recorded", 3)]


def test_a_log_without_the_chain_still_reads_as_unchained(tmp_path: Path):
    log = tmp_path / "seed.jsonl"
    log.write_text('{"seq": 1, "cmd": "pytest -q", "exit": 1}\n{"seq": 2, "cmd": "pytest -q", "exit": 0}\n')
    read = read_log(log)
    assert (read.chain, read.chained_from, read.chain_findings) == ("unchained", None, ())
    # the recorder chains from the first line it writes: the line before is pinned by its prev
    assert append_step(log, {"cmd": "ruff check .", "exit": 0}) == 3
    read = read_log(log)
    assert (read.chain, read.chained_from, read.chain_findings) == ("chained", 3, ())
    assert json.loads(log.read_text().splitlines()[2])["prev"] == entry_digest(
        {"seq": 2, "cmd": "pytest -q", "exit": 0})


def test_a_trailer_after_lines_without_prev_is_named_not_a_crash(tmp_path: Path):
    log, raw = _log(tmp_path, 2)
    stripped = [json.dumps({k: v for k, v in json.loads(x).items() if k != "prev"}) for x in raw[:2]]
    log.write_text("\n".join(stripped + raw[2:]) + "\n")  # an older tool rewrote the lines without prev
    read = read_log(log)
    assert (read.chain, read.chained_from) == ("damaged", None)
    assert _kinds(log) == [("not_recorded", 1), ("line_edited", 2), ("not_recorded", 2)]
    assert read.chain_findings[0].where(log) == (
        f"{log}:1: line 1 (step 1) has no prev, though the log holds a trailer (line 3), which only the recorder "
        f"writes, and it writes a prev on every line: the prevs were removed, or the trailer was added")
    body = tmp_path / "PR_BODY.md"
    body.write_text("It passes [seq:1].\n")
    res = CliRunner().invoke(packet_cli, ["claims", str(body), str(log)])
    assert res.exit_code == 1 and res.output.splitlines()[0].startswith(f"{log}:1: error: not_recorded: line 1")
    assert res.output.splitlines()[-1].endswith("; log damaged")
    # a seed-format line followed by something shaped like a trailer, not one the recorder writes
    seed = tmp_path / "seed.jsonl"
    seed.write_text('{"seq": 1, "cmd": "pytest -q", "exit": 0}\n{"trailer": 5}\n')
    assert _kinds(seed) == [("not_recorded", 1), ("truncated", 2)]
    assert read_log(seed).chain_findings[1].message == (
        'the trailer on line 2 is not one the recorder writes ({"trailer": {"v": 1, "lines": N, "last": "sha256:…"}})')
    res = CliRunner().invoke(packet_cli, ["claims", str(body), str(seed)])
    assert res.exit_code == 1 and [x.split(": error: ")[0] for x in res.output.splitlines()[:2]] == [
        f"{seed}:1", f"{seed}:2"]


def test_a_replay_of_lines_without_prev_and_a_trailer_names_the_chain(repo: Path):
    rec(repo, "true")
    log = repo / "session.jsonl"
    log.write_text(log.read_text().replace(',"prev":null', ''))
    assert '"prev"' not in log.read_text()
    v = replay(log, repo=repo)
    assert v.verdict == "DIVERGED" and v.log_chain == "damaged"
    assert v.problems == [f"the log's chain is broken: line edited ({log}:1), not recorded ({log}:1)"]


def test_the_claims_linter_fails_on_a_broken_chain_naming_the_log_line(tmp_path: Path):
    log, raw = _log(tmp_path)
    body = tmp_path / "PR_BODY.md"
    body.write_text("All tests pass [seq:4].\n")
    res = CliRunner().invoke(packet_cli, ["claims", str(body), str(log)])
    assert res.exit_code == 0 and res.output.splitlines()[-1].endswith("; steps cited only by accepted markers: 4; log chained")
    log.write_text("\n".join(raw[:2] + raw[3:]) + "\n")
    res = CliRunner().invoke(packet_cli, ["claims", str(body), str(log)])
    assert res.exit_code == 1
    assert res.output.splitlines() == [
        f"{log}:3: error: lines_removed: seq 3 missing before line 3 (step 4): its prev is not the digest of line 2, "
        f"so the line(s) recorded between them were removed",
        f"{log}:5: error: lines_removed: the trailer on line 5 counts 5 lines and the log holds 4: 1 line(s) were "
        f"removed",
        "claims: 2 finding(s), 0 warning(s); 1 marker(s): 1 accepted (0 with a warning), 0 with a finding; "
        "steps cited only by accepted markers: 4; log damaged"]
    out = json.loads(CliRunner().invoke(packet_cli, ["claims", str(body), str(log), "--format", "json"]).output)
    assert out["log_chain"] == "damaged" and out["exit_code"] == 1
    assert [(f["kind"], f["line"]) for f in out["log_findings"]] == [("lines_removed", 3), ("lines_removed", 5)]
    report = lint_claims(body, log)
    assert report.exit_code == 1 and report.findings == []
    summary = packet_summary(log, body)
    rows = summary["claims"].astype("object").where(summary["claims"].notna(), None)
    assert [(r.status, r.kind, r.line_no, r.source_file) for r in rows.itertuples()] == [
        ("accepted", None, 1, str(body)), ("finding", "lines_removed", 3, str(log)),
        ("finding", "lines_removed", 5, str(log))]
    assert summary["chain"] == "damaged" and summary["counts"]["findings"] == 2


def test_replay_fails_on_a_broken_chain_even_without_the_strict_mode(repo: Path, monkeypatch):
    rec(repo, PY, "-c", "print('one')")
    rec(repo, PY, "-c", "print('two')")
    rec(repo, PY, "-c", "print('three')")
    log = repo / "session.jsonl"
    assert replay(log, repo=repo, require_head=True, head_ignore=["session.jsonl"]).verdict == "PASS"
    lines = log_lines(log)
    # step 2 removed and the steps after it renumbered, the chain recomputed by nobody
    renumbered = [lines[0], {**lines[2], "seq": 2}]
    raw = [json.dumps(x) for x in renumbered]
    log.write_text("\n".join(raw) + "\n" + log.read_text().splitlines()[-1] + "\n")
    for strict in (False, True):
        v = replay(log, repo=repo, require_head=strict)
        assert v.verdict == "DIVERGED" and v.log_chain == "damaged" and [s.status for s in v.steps] == ["ok", "ok"]
        assert v.warnings == [
            f"{log}:2: seq 2 missing before line 2 (step 2): its prev is not the digest of line 1, so the line(s) "
            f"recorded between them were removed",
            f"{log}:2: line 2 holds step 2, but the recorder wrote it as step 3 (the trailer on line 3 says so): the "
            f"log was renumbered, so [seq:N] markers may name other steps than were recorded",
            f"{log}:3: the trailer on line 3 counts 3 lines and the log holds 2: 1 line(s) were removed"]
        # said once, each kind of break listed with its lines
        assert v.problems == [f"the log's chain is broken: lines removed ({log}:2, 3), renumbered ({log}:2)"]
        assert v.headline == f"DIVERGED ({'; '.join(v.problems)})"
    monkeypatch.chdir(repo)
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl"])
    assert res.exit_code == 1 and res.output.splitlines()[-1].startswith(
        "VERDICT: DIVERGED (the log's chain is broken: lines removed (session.jsonl:2, 3), renumbered "
        "(session.jsonl:2))")
    # an unchained log (an older recorder's) passes, and says so on the replay's first line
    write_lines(log, lines, chain=False)
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl"])
    assert res.exit_code == 0 and res.output.splitlines()[0].endswith(
        "in a clean checkout (a throwaway clone); the log is unchained (no digest chain: lines removed from it show only as gaps in seq)")
    assert json.loads(CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--format", "json"])
                      .output)["log_chain"] == "unchained"


def test_the_recorder_warns_when_it_appends_to_a_damaged_log(repo: Path):
    rec(repo, "true")
    rec(repo, "true")
    log = repo / "session.jsonl"
    raw = log.read_text().splitlines()
    log.write_text(raw[1] + "\n")  # step 1 and the trailer removed
    r = rec(repo, "true")
    assert r.seq == 3 and r.warnings == (
        f"the log's chain is broken: {log}:1: line 1 (step 2) is chained to a line before it, and there is none: "
        f"seq 1 missing: the first line(s) of the log were removed; {log}:1: the log ends at line 1 without the "
        f"recorder's trailer: the lines after it were cut off, or its last recording was interrupted (recording a "
        f"step writes one). The step is appended, and the claims linter and replay fail on the damage",)
    assert _kinds(log) == [("lines_removed", 1)]  # the new trailer counts what is there; the removal stays
