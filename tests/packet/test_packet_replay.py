"""Record → replay in a clean checkout (a throwaway clone): PASS, DIVERGED (naming the step), UNRUNNABLE, dirty trees."""

from __future__ import annotations

import hashlib
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from replaybook.packet import read_log, replay
from replaybook.packet.errors import PacketLogError
from replaybook.packet.cli import packet as packet_cli
from replaybook.packet.normalize import normalize
from replaybook.packet.replay import line_end_words

from packet_helpers import PY, edit_log, git, log_lines, rec, write_check, write_lines


def _worktrees(repo: Path) -> int:
    return git(repo, "worktree", "list", "--porcelain").count("worktree ")


def test_recorded_log_has_what_a_replay_needs(packet: Path, repo: Path):
    steps = read_log(packet, for_replay=True).steps
    head = git(repo, "rev-parse", "HEAD").strip()
    assert [s.seq for s in steps] == [1, 2, 3]
    assert [s.exit for s in steps] == [1, 0, 0]
    s1 = steps[0]
    assert s1.get("commit") == head and s1.get("cwd") == "." and s1.get("dirty") is False
    assert s1.get("excluded") == ["session.jsonl", "session.outputs"]
    assert s1.get("norm") == "2" and s1.get("argv") == [PY, "check.py"] and s1.get("shell") is None
    assert steps[1].get("shell") in ("bash", "sh") and steps[1].get("argv") is None
    # the flag file made by step 2 is an untracked change seen by step 3
    assert steps[2].get("dirty") is True and steps[2].get("dirty_files") == 1
    assert set(s1.get("norm_fired")) >= {"iso_timestamp", "pid", "pytest_duration"}
    stored = (repo / "session.outputs" / f"{s1.get('out_sha')}.txt").read_text()
    assert stored == "started <TS> pid <PID>\nFAIL: feature flag missing\n1 check in <DUR>"


def test_replay_passes_in_a_clean_worktree_and_removes_it(packet: Path, repo: Path, tmp_path: Path,
                                                          monkeypatch):
    monkeypatch.chdir(repo)
    (repo / "feature.flag").unlink()  # made by step 2 of the recording
    junit = tmp_path / "packet.xml"
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--junit", str(junit)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].startswith("replaying session.jsonl at recorded commit ")
    assert lines[1].startswith("line ends: ")  # (the settings the clone checked files out with)
    assert lines[2].startswith("[ok]       seq=1 exit=1/1 ")
    assert lines[3] == "[ok]       seq=2 exit=0/0 touch feature.flag"
    assert lines[-1] == "VERDICT: PASS"
    assert _worktrees(repo) == 1
    assert not (repo / "feature.flag").exists()  # the replay never touched the user's tree
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "3" and suite.get("failures") == "0" and suite.get("errors") == "0"


def test_junit_never_writes_over_the_log_the_body_or_a_stored_output(packet: Path, repo: Path, monkeypatch):
    """``--junit session.jsonl`` replaced the session log with JUnit XML (VERDICT: PASS, exit 0);
    a stored output went the same way.  Refused before anything is replayed."""
    import hashlib

    monkeypatch.chdir(repo)
    stored = next((repo / "session.outputs").glob("*.txt"))
    body = repo / "PR.md"
    body.write_text("Checks pass [seq:2].\n")

    def digests():
        return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in [packet, stored, body]}

    before = digests()
    for target, extra, why in [("session.jsonl", [], "is one of the inputs"),
                               (str(stored), [], "is inside"),
                               ("PR.md", ["--body", "PR.md"], "is one of the inputs"),
                               ("session.outputs/new.xml", [], "is inside")]:
        res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--junit", target, *extra])
        assert res.exit_code == 2, (target, res.output)
        assert why in " ".join(res.output.split()) and "replaying" not in res.output
    assert digests() == before
    assert _worktrees(repo) == 1


def test_junit_never_writes_over_any_file_of_the_packet(packet: Path, repo: Path, monkeypatch):
    """``--head-ignore PR_BODY.md --junit PR_BODY.md`` replaced the PR body with JUnit XML: only
    ``--body`` and the output folder were guarded.  Whatever the packet holds is refused before
    anything is replayed: what ``--head-ignore`` names (a path, a folder, a glob; from here or from
    the repository's root), the body beside the log without ``--body``, a Markdown file beside the
    log citing its steps, and the default output folder when ``--outputs`` names another."""
    import hashlib
    import shutil

    monkeypatch.chdir(repo)
    (repo / "PR_BODY.md").write_text("The check passes [seq:3].\n")
    (repo / "NOTES.md").write_text("Fails before the fix [seq:1].\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "notes.txt").write_text("notes\n")
    other = repo / "other-outputs"
    shutil.copytree(repo / "session.outputs", other)
    kept = [repo / "PR_BODY.md", repo / "NOTES.md", repo / "docs" / "notes.txt", packet,
            *sorted((repo / "session.outputs").glob("*.txt"))]

    def digests():
        return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in kept}

    before = digests()
    for args, why in [(["--head-ignore", "PR_BODY.md", "--junit", "PR_BODY.md"], "is one of the inputs"),
                      (["--junit", "PR_BODY.md"], "is one of the inputs"),
                      (["--junit", "./NOTES.md"], "is one of the inputs"),
                      (["--head-ignore", "docs", "--junit", "docs/notes.txt"], "is one of the inputs"),
                      (["--head-ignore", "docs/*.txt", "--junit", "docs/notes.txt"], "is one of the inputs"),
                      (["--outputs", str(other), "--junit", "session.outputs/new.xml"], "is inside"),
                      (["--outputs", str(other), "--junit", str(other / "new.xml")], "is inside")]:
        res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", *args])
        assert res.exit_code == 2, (args, res.output)
        assert why in " ".join(res.output.split()) and "replaying" not in res.output, (args, res.output)
    monkeypatch.chdir(repo / "sub")  # --head-ignore names a path from the repository's root
    res = CliRunner().invoke(packet_cli, ["replay", "../session.jsonl", "--head-ignore", "PR_BODY.md",
                                          "--junit", "../PR_BODY.md"])
    assert res.exit_code == 2 and "is one of the inputs" in res.output, res.output
    assert digests() == before
    assert _worktrees(repo) == 1
    # a report beside the packet is still written, and written again
    monkeypatch.chdir(repo)
    (repo / "feature.flag").unlink()
    for _ in range(2):
        res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--head-ignore", "PR_BODY.md",
                                              "--head-ignore", "docs", "--junit", "packet-junit.xml"])
        assert res.exit_code == 0, res.output
        assert ET.parse(repo / "packet-junit.xml").getroot().tag == "testsuites"
    for _ in range(2):  # a new file: nothing written over; then the earlier report, written again
        res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--head-ignore", "docs",
                                              "--junit", "docs/junit.xml"])
        assert res.exit_code == 0 and (repo / "docs" / "junit.xml").is_file(), res.output
    for _ in range(2):  # (the report named by --head-ignore itself, so the replay ignores it)
        res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--head-ignore", "packet-junit.xml",
                                              "--junit", "packet-junit.xml"])
        assert res.exit_code == 0, res.output
    assert digests() == before


def test_local_edits_do_not_leak_into_the_replay(packet: Path, repo: Path):
    write_check(repo, extra=" and False")  # uncommitted breakage on disk
    v = replay(packet, repo=repo)
    assert v.verdict == "PASS" and v.exit_code == 0 and v.warnings == []
    # the replayed files match the recorded digests before every step: no drift notes
    assert [s.notes for s in v.steps] == [[], [], []]
    assert [s.exit for s in v.steps] == [1, 0, 0]


def test_changed_commit_diverges_naming_the_step_with_a_diff(packet: Path, repo: Path, monkeypatch):
    write_check(repo, extra=' and os.path.exists("other.flag")')
    git(repo, "commit", "-q", "-am", "require another flag")
    monkeypatch.chdir(repo)
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--checkout", "HEAD"])
    assert res.exit_code == 1, res.output
    assert "[ok]       seq=1 exit=1/1" in res.output
    assert f"[DIVERGED] seq=3 exit=1/0 {PY} check.py" in res.output
    assert "exit 1, recorded 0; output differs" in res.output
    assert "+FAIL: feature flag missing" in res.output  # the stored output gives a unified diff
    assert "holds different files than the recorded commit" in res.output
    assert res.output.rstrip().endswith("VERDICT: DIVERGED (1/3 steps differ)")
    assert _worktrees(repo) == 1
    junit = repo.parent / "diverged.xml"
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--checkout", "HEAD", "--format", "json",
                                          "--junit", str(junit)])
    out = json.loads(res.output)
    assert res.exit_code == 1 and out["headline"] == "DIVERGED (1/3 steps differ)"
    assert [(s["seq"], s["status"]) for s in out["steps"]] == [(1, "ok"), (2, "ok"), (3, "DIVERGED")]
    failures = ET.parse(junit).getroot().findall("testsuite/testcase/failure")
    assert len(failures) == 1 and failures[0].get("message") == "exit 1, recorded 0; output differs"
    assert "+FAIL: feature flag missing" in failures[0].text


def test_interleaved_stdout_stderr_is_one_stream_and_replays(repo: Path):
    code = ("import sys\nfor i in range(4):\n"
            "    sys.stdout.write(f'out {i}\\n'); sys.stdout.flush()\n"
            "    sys.stderr.write(f'err {i}\\n'); sys.stderr.flush()\n")
    r = rec(repo, PY, "-c", code)
    stored = (repo / "session.outputs" / f"{r.line['out_sha']}.txt").read_text()
    assert stored == "out 0\nerr 0\nout 1\nerr 1\nout 2\nerr 2\nout 3\nerr 3"
    # the seed's replay hashed stdout + stderr: that would never match this recording
    seed_style = "".join(f"out {i}\n" for i in range(4)) + "".join(f"err {i}\n" for i in range(4))
    assert normalize(seed_style).sha256 != r.line["out_sha"]
    v = replay(repo / "session.jsonl", repo=repo)
    assert v.verdict == "PASS" and v.steps[0].output == stored


def test_empty_and_malformed_logs_are_unrunnable(tmp_path: Path, repo: Path, monkeypatch):
    monkeypatch.chdir(repo)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    res = CliRunner().invoke(packet_cli, ["replay", str(empty)])
    assert res.exit_code == 2
    assert res.output.strip() == f"VERDICT: UNRUNNABLE ({empty}: the log has no steps)"
    bad = tmp_path / "bad.jsonl"
    rec(repo, "echo", "hi")
    bad.write_text((repo / "session.jsonl").read_text() + '{"seq": 2, "cmd": "x"\n')  # after the step and trailer
    v = replay(bad, repo=repo)
    assert v.verdict == "UNRUNNABLE" and v.exit_code == 2 and f"{bad}:3: invalid JSON" in v.reason
    seed = tmp_path / "seed.jsonl"  # the seed's five fields are not enough to replay
    seed.write_text('{"seq": 1, "cmd": "true", "exit": 0, "out_sha": "' + "0" * 64 + '", "duration_ms": 1}\n')
    v = replay(seed, repo=repo)
    assert v.verdict == "UNRUNNABLE" and f"{seed}:1: " in v.reason and "'v' is a required property" in v.reason
    v = replay(tmp_path / "missing.jsonl", repo=repo)
    assert v.verdict == "UNRUNNABLE" and "no such session log" in v.reason
    assert _worktrees(repo) == 1


def test_an_output_changed_on_a_line_ending_in_a_carriage_return_diverges(repo: Path):
    (repo / "verdict").write_text("checksum OK\n")
    (repo / "show.py").write_text('print(open("verdict").read().strip() + "\\r", end="")\n')
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "verdict")
    r = rec(repo, PY, "show.py")
    assert (repo / "session.outputs" / f"{r.line['out_sha']}.txt").read_text() == "checksum OK"
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "log")
    (repo / "verdict").write_text("checksum MISMATCH: binary tampered\n")
    git(repo, "commit", "-q", "-am", "tamper")
    v = replay(repo / "session.jsonl", repo=repo, checkout="HEAD")
    assert v.verdict == "DIVERGED" and v.steps[0].output == "checksum MISMATCH: binary tampered"
    assert v.steps[0].reasons == ["output differs"]


def test_an_output_changed_only_in_bytes_that_are_not_utf8_diverges(repo: Path, tmp_path: Path):
    (repo / "b").write_bytes(b"\xff")
    (repo / "show.py").write_text('import sys\nsys.stdout.buffer.write(b"status " + open("b", "rb").read() + b" done\\n")\n')
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "byte")
    r = rec(repo, PY, "show.py")
    assert r.line["out_sha"] == hashlib.sha256(b"status \xed\xb3\xbf done").hexdigest()
    assert (repo / "session.outputs" / f"{r.line['out_sha']}.txt").read_bytes() == b"status \xed\xb3\xbf done"
    assert replay(repo / "session.jsonl", repo=repo).verdict == "PASS"
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "log")
    (repo / "b").write_bytes(b"\xfe")
    git(repo, "commit", "-q", "-am", "another byte")
    v = replay(repo / "session.jsonl", repo=repo, checkout="HEAD")
    step = v.steps[0]
    assert v.verdict == "DIVERGED" and step.reasons == ["output differs"]
    assert step.out_sha == hashlib.sha256(b"status \xed\xb3\xbe done").hexdigest() != step.expected_sha
    assert step.diff.splitlines()[-2:] == ["-status \\xff done", "+status \\xfe done"]
    junit = tmp_path / "junit.xml"
    res = CliRunner().invoke(packet_cli, ["replay", str(repo / "session.jsonl"), "--repo", str(repo),
                                          "--checkout", "HEAD", "--junit", str(junit)])
    assert res.exit_code == 1 and "+status \\xfe done" in res.output
    assert "+status \\xfe done" in ET.parse(junit).getroot().find("testsuite/testcase/failure").text


def test_a_log_normalized_by_other_builtin_rules_is_unrunnable(repo: Path):
    rec(repo, "echo", "hi")
    edit_log(repo / "session.jsonl", 1, norm="1")
    v = replay(repo / "session.jsonl", repo=repo)
    assert v.verdict == "UNRUNNABLE"
    assert ("session.jsonl:1: step 1 was normalized with rules version 1; this replaybook has version 2, whose "
            "hashes differ") in v.reason


def test_unknown_commit_is_unrunnable_with_the_line(repo: Path, tmp_path: Path):
    rec(repo, "echo", "hi")
    line = log_lines(repo / "session.jsonl")[0]
    line["commit"] = "f" * 40
    line["excluded"] = []  # the log is outside the repository
    log = tmp_path / "other.jsonl"
    log.write_text(json.dumps(line) + "\n")
    v = replay(log, repo=repo)
    assert v.verdict == "UNRUNNABLE" and v.reason.startswith(f"{log}:1: step 1's commit ffff")


def test_dirty_recording_is_refused_unless_allowed_or_committed(repo: Path):
    write_check(repo, extra="  # local edit")
    r = rec(repo, "echo", "hi")
    assert r.line["dirty"] is True and r.line["dirty_files"] == 1
    log = repo / "session.jsonl"
    v = replay(log, repo=repo)
    assert v.verdict == "UNRUNNABLE" and "1 uncommitted change(s)" in v.reason and "--allow-dirty" in v.reason
    v = replay(log, repo=repo, allow_dirty=True)
    assert v.verdict == "PASS" and len(v.warnings) == 2 and "--allow-dirty" in v.warnings[0]
    # and HEAD does not hold the uncommitted edit either
    assert v.warnings[1].startswith("THE PR HEAD IS NOT WHAT THE PACKET TESTED: HEAD (")
    git(repo, "commit", "-q", "-am", "the edit")  # the same files, now committed
    v = replay(log, repo=repo, checkout="HEAD")
    assert v.verdict == "PASS" and v.warnings == []


def test_commits_made_between_steps_are_followed(repo: Path):
    rec(repo, PY, "check.py")
    (repo / "feature.flag").write_text("on\n")
    git(repo, "add", "feature.flag")
    git(repo, "commit", "-q", "-m", "fix")
    rec(repo, PY, "check.py")
    v = replay(repo / "session.jsonl", repo=repo)
    assert v.verdict == "PASS", v.to_dict()
    assert v.steps[1].notes == [f"moved the checkout to the recorded commit {git(repo, 'rev-parse', 'HEAD')[:12]}"]


def test_uncommitted_edit_between_steps_is_named_once(repo: Path):
    rec(repo, PY, "check.py")
    (repo / "feature.flag").write_text("on\n")  # an agent's file edit, not a recorded command
    rec(repo, PY, "check.py")
    rec(repo, PY, "check.py")
    v = replay(repo / "session.jsonl", repo=repo)
    assert v.verdict == "DIVERGED" and [s.seq for s in v.diverged] == [2, 3]
    assert v.steps[1].notes == ["step 2 was recorded with 1 uncommitted change(s) that the replay does not hold "
                                "(files changed outside recorded commands?): feature.flag; commit between steps"]
    assert v.steps[2].notes == []  # still the same missing change: not repeated
    write_check(repo, extra=" or True")
    git(repo, "commit", "-q", "-am", "other files")
    v = replay(repo / "session.jsonl", repo=repo, checkout="HEAD")
    assert "holds different files" in v.warnings[0]
    assert [s.notes for s in v.steps] == [[], [], []]  # the warning said it; no note on every step


def test_timeout_kills_the_step_and_diverges(repo: Path):
    rec(repo, PY, "-c", "import os, time; time.sleep(30 if os.environ.get('RB_SLOW') else 0); print('done')")
    env = dict(os.environ, RB_SLOW="1")
    v = replay(repo / "session.jsonl", repo=repo, timeout=0.5, env=env)
    s = v.steps[0]
    assert v.verdict == "DIVERGED" and s.exit is None and s.reasons[0] == "timed out after 0.5 s"
    assert s.duration_ms < 10_000


def test_steps_run_in_their_recorded_directory(repo: Path):
    r = rec(repo, "cat", "data.txt", cwd=repo / "sub")
    assert r.line["cwd"] == "sub" and r.exit == 0
    v = replay(repo / "session.jsonl", repo=repo)
    assert v.verdict == "PASS" and v.steps[0].output == "alpha\nbeta"


def _edit_log(log: Path, seq: int, **fields) -> None:
    edit_log(log, seq, **fields)  # the chain recomputed: these tests are about the other checks


def test_cmd_that_is_not_what_runs_is_unrunnable_naming_the_line(repo: Path):
    rec(repo, PY, "-c", "print('1 passed')")
    rec(repo, "true")
    log = repo / "session.jsonl"
    _edit_log(log, 1, cmd="pytest -q tests/test_x.py")  # argv still runs python -c …
    _edit_log(log, 2, cmd="pytest -q tests/test_x.py", shell="true")  # would run: true -c "pytest …"
    v = replay(log, repo=repo)
    assert v.verdict == "UNRUNNABLE" and v.steps == []
    shown = f"{PY} -c 'print('\"'\"'1 passed'\"'\"')'"
    assert v.reason == (
        f"{log}:1: step 1's cmd 'pytest -q tests/test_x.py' is not the command its argv runs ({shown!r}); "
        f"the log line was edited; "
        f"{log}:2: step 2's shell 'true' is not a shell the recorder uses (bash or sh); the log line was edited")
    _edit_log(log, 1, cmd=shown)
    _edit_log(log, 2, shell="bash", argv=["true"])
    v = replay(log, repo=repo)
    assert v.verdict == "UNRUNNABLE" and v.reason == (
        f"{log}:2: step 2's cmd 'pytest -q tests/test_x.py' is not the command its argv runs ('true'); "
        f"the log line was edited")


def test_json_output_shows_what_each_step_runs(packet: Path, repo: Path, monkeypatch):
    monkeypatch.chdir(repo)
    (repo / "feature.flag").unlink()
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--format", "json"])
    assert res.exit_code == 0, res.output
    steps = json.loads(res.output)["steps"]
    assert [(s["argv"], s["shell"]) for s in steps] == [
        ([PY, "check.py"], None), (None, steps[1]["shell"]), ([PY, "check.py"], None)]
    assert steps[1]["shell"] in ("bash", "sh") and steps[1]["cmd"] == "touch feature.flag"


def _fail_fix_pass_packet(repo: Path) -> Path:
    """check.py fails, a commit adds the flag, check.py passes; then the log and a PR body are committed."""
    rec(repo, PY, "check.py")
    (repo / "feature.flag").write_text("on\n")
    git(repo, "add", "feature.flag")
    git(repo, "commit", "-q", "-m", "fix")
    rec(repo, PY, "check.py")
    (repo / "PR_BODY.md").write_text("It fails before the fix [seq:1] and passes after it [seq:2].\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "packet")
    return repo / "session.jsonl"


def test_head_holding_the_last_recorded_state_passes_with_require_head(repo: Path):
    log = _fail_fix_pass_packet(repo)
    v = replay(log, repo=repo, require_head=True, head_ignore=["PR_BODY.md"])
    assert v.verdict == "PASS" and v.warnings == [] and v.problems == []
    assert v.head["matches"] is True and v.head["differing"] == ["PR_BODY.md"]
    assert v.head["ignored"] == ["PR_BODY.md"] and v.head["seq"] == 2


def test_head_that_reverts_the_fix_after_recording_is_named_and_fails_with_require_head(repo: Path,
                                                                                        monkeypatch):
    log = _fail_fix_pass_packet(repo)
    git(repo, "rm", "-q", "feature.flag")
    git(repo, "commit", "-q", "-m", "later commit: reverts the fix")
    head = git(repo, "rev-parse", "HEAD").strip()
    v = replay(log, repo=repo, head_ignore=["PR_BODY.md"])
    assert v.verdict == "PASS" and v.exit_code == 0  # every step still matches at its recorded commit
    assert v.warnings == [
        f"THE PR HEAD IS NOT WHAT THE PACKET TESTED: HEAD ({head[:12]}) holds other files than the last "
        f"recorded step (seq 2, {log}:2) ran on; 1 file(s) differ: feature.flag. The replay does not cover "
        f"these changes: replay with --checkout HEAD, or record a step on the head; --require-head makes this "
        f"a failing verdict"]
    monkeypatch.chdir(repo)
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--require-head", "--head-ignore", "PR_BODY.md"])
    assert res.exit_code == 1, res.output
    lines = res.output.splitlines()
    assert lines[-2].startswith("warning: THE PR HEAD IS NOT WHAT THE PACKET TESTED: HEAD (")
    assert lines[-1] == (f"VERDICT: DIVERGED (the PR head HEAD ({head[:12]}) is not the last recorded state: "
                         f"1 file(s) differ: feature.flag)")
    # without --head-ignore the PR body written after the last step is a difference too
    v = replay(log, repo=repo, require_head=True)
    assert v.verdict == "DIVERGED" and v.head["differing"] == ["PR_BODY.md", "feature.flag"]


def test_replaying_on_the_head_itself_does_not_warn_that_the_head_was_not_tested(repo: Path):
    log = _fail_fix_pass_packet(repo)
    git(repo, "rm", "-q", "feature.flag")
    git(repo, "commit", "-q", "-m", "later commit: reverts the fix")
    v = replay(log, repo=repo, checkout="HEAD", require_head=True)
    assert v.head is None and v.problems == [] and not any("PR HEAD" in w for w in v.warnings)
    assert v.verdict == "DIVERGED" and [s.seq for s in v.diverged] == [2]  # the steps themselves show it


def _with_rules(repo: Path, rules: str, program: str) -> None:
    """Commit ``pyproject.toml`` normalization ``rules`` (the TOML list's items) and ``tool.py``
    holding ``program``, then record ``python tool.py``."""
    (repo / "pyproject.toml").write_text(f"[tool.replaybook.normalize]\nrules = [ {rules} ]\n")
    (repo / "tool.py").write_text(program)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "rules")
    rec(repo, PY, "tool.py")


def test_a_project_rule_that_swallows_the_output_makes_the_step_not_compared(repo: Path, monkeypatch):
    _with_rules(repo, '{ name = "everything", pattern = "(?s).+", replace = "ok" }', "print('version 1')\n")
    (repo / "tool.py").write_text("print('TOTALLY DIFFERENT OUTPUT')\n")
    git(repo, "commit", "-q", "-am", "change")
    head = git(repo, "rev-parse", "HEAD").strip()
    v = replay(repo / "session.jsonl", repo=repo, checkout="HEAD")
    s = v.steps[0]
    assert v.verdict == "DIVERGED" and v.headline == "DIVERGED (1/1 steps not compared)"
    assert s.status == "UNCHECKED" and s.exit == 0
    assert s.reasons == ["output not compared: project rule(s) 'everything' replaced all or most of the output "
                         "(more than 80% of it)"]
    assert s.notes[-1] == "project rule(s) changed this output: everything" and "everything" in s.fired
    assert v.rules_origin == f"pyproject.toml at commit {head[:12]}"
    assert v.rules == [{"name": "everything", "pattern": "(?s).+", "replace": "ok", "matches_anything": True}]
    monkeypatch.chdir(repo)
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--checkout", "HEAD"])
    assert res.exit_code == 1
    assert (f"project normalization rules (pyproject.toml at commit {head[:12]}):\n"
            f"  everything: '(?s).+' -> 'ok'   MATCHES ANY TEXT: outputs it touches are not compared\n") in res.output
    assert f"[UNCHECKED] seq=1 exit=0/0 {PY} tool.py" in res.output
    # a malformed rules table is named by its commit, not by a deleted temporary path
    (repo / "pyproject.toml").write_text(
        '[tool.replaybook.normalize]\nrules = [ { name = "x", pattern = "(", replace = "" } ]\n')
    git(repo, "commit", "-q", "-am", "bad rules")
    head = git(repo, "rev-parse", "HEAD").strip()
    v = replay(repo / "session.jsonl", repo=repo, checkout="HEAD")
    assert v.verdict == "UNRUNNABLE" and v.reason.startswith(
        f"the replayed tree's pyproject.toml at commit {head[:12]}:2: [tool.replaybook.normalize].rules[0] (x): ")


def test_a_secret_variable_unset_at_replay_is_named_in_the_step_note(repo: Path):
    env = dict(os.environ, MY_API_TOKEN="s3cr3t-value-123")
    rec(repo, 'echo "token is $MY_API_TOKEN"', env=env)
    env.pop("MY_API_TOKEN")
    v = replay(repo / "session.jsonl", repo=repo, env=env)
    s = v.steps[0]
    assert v.verdict == "DIVERGED" and s.reasons == ["output differs"]
    assert s.notes == ["the recording redacted the value of MY_API_TOKEN from this step, and MY_API_TOKEN is not "
                       "set here (or shorter than 6 characters): the output cannot match; set it"]
    v = replay(repo / "session.jsonl", repo=repo, env=dict(env, MY_API_TOKEN="another-value-456"))
    assert v.verdict == "PASS" and v.steps[0].notes == []


def test_a_stored_output_replaced_by_a_folder_is_an_edited_output(packet: Path, repo: Path):
    steps = read_log(packet, for_replay=True).steps
    folder = repo / "session.outputs" / f"{steps[0].get('out_sha')}.txt"
    folder.unlink()
    folder.mkdir()
    v = replay(packet, repo=repo)
    assert v.verdict == "DIVERGED" and v.problems == [
        f"step 1's stored output {folder} is not a file (a folder or a pipe took its place): it was edited"]


def test_every_stored_output_is_checked_even_when_its_step_matches(packet: Path, repo: Path):
    steps = read_log(packet, for_replay=True).steps
    forged = repo / "session.outputs" / f"{steps[0].get('out_sha')}.txt"
    forged.write_text("FORGED\n")
    (repo / "session.outputs" / f"{steps[1].get('out_sha')}.txt").unlink()
    v = replay(packet, repo=repo)
    assert [s.status for s in v.steps] == ["ok", "ok", "ok"]
    assert v.verdict == "DIVERGED" and v.problems == [
        f"step 1's stored output {forged} does not hash to the recorded out_sha: it was edited"]
    assert v.headline == (f"DIVERGED (step 1's stored output {forged} does not hash to the recorded out_sha: "
                          f"it was edited)")
    assert v.steps[0].notes == [f"stored output {forged} does not hash to the recorded out_sha: it was edited"]
    missing = repo / "session.outputs" / f"{steps[1].get('out_sha')}.txt"
    assert v.steps[1].notes == [f"the log marks this step's output stored, but {missing} is missing"]


def test_gaps_in_seq_of_an_unchained_log_are_warned_about(packet: Path, repo: Path):
    lines = log_lines(packet)
    write_lines(packet, [lines[0], lines[2]], chain=False)  # as an older recorder wrote it, step 2 removed
    (repo / "feature.flag").unlink()
    v = replay(packet, repo=repo)
    assert v.log_chain == "unchained" and read_log(packet).chain_findings == ()
    assert v.warnings[0] == (f"{packet}:2: seq 2 missing before step 3: the recorder numbers steps without gaps, "
                             f"so a line was removed from the log")
    assert read_log(packet).gap_warnings() == v.warnings[:1]
    write_lines(packet, [lines[2]], chain=False)
    assert read_log(packet).gap_warnings() == [
        f"{packet}:1: seq 1 to 2 missing before step 3: the recorder numbers steps without gaps, so lines were "
        f"removed from the log"]


def test_a_clean_step_whose_tree_is_not_its_commits_is_an_inconsistent_log(packet: Path, repo: Path):
    _edit_log(packet, 1, tree="sha256:" + "0" * 64)
    head = git(repo, "rev-parse", "HEAD").strip()
    v = replay(packet, repo=repo)
    assert v.verdict == "UNRUNNABLE" and v.steps == []
    assert v.reason == (f"{packet}:1: step 1 is recorded as run on a clean checkout of {head[:12]}, but its tree "
                        f"digest is not that commit's files: the log is inconsistent (was it edited?)")
    assert replay(packet, repo=repo, checkout="HEAD").verdict == "UNRUNNABLE"
    _edit_log(packet, 1, dirty=True)  # recorded dirty: a different digest is possible, and handled as before
    v = replay(packet, repo=repo)
    assert v.verdict == "UNRUNNABLE" and "uncommitted change(s)" in v.reason


@pytest.mark.parametrize("line,message", [
    (b'{"seq": 5.0, "cmd": "x", "exit": 0}', "field 'seq': 5.0 is not an integer (write it without a decimal point)"),
    (b'{"seq": 1, "cmd": "x", "exit": 0.0}', "field 'exit': 0.0 is not an integer (write it without a decimal point)"),
    (b'{"seq": 1, "cmd": "x", "exit": 0, "v": 2}',
     "field 'v': line format version 2 is not supported; this replaybook reads version 1"),
    (b'{"seq": 1, "cmd": "echo \xff", "exit": 0}', "the line is not valid UTF-8 (byte 0xff at column 25)"),
    (b'{"seq": 1, "cmd": "echo \\udcff", "exit": 0}',
     "the command holds a lone surrogate escape (not a character); it cannot be run as recorded"),
    # a NUL reached subprocess: "internal error: ValueError: embedded null byte", exit 3
    (b'{"seq": 1, "cmd": "a\\u0000b", "exit": 0}',
     "the command or its folder holds a NUL character (\\u0000); it cannot have been run as recorded"),
    (b'{"seq": 1, "cmd": "x", "argv": ["x", "a\\u0000"], "exit": 0}',
     "the command or its folder holds a NUL character (\\u0000); it cannot have been run as recorded"),
    (b'{"seq": 1, "cmd": "x", "cwd": "sub\\u0000", "exit": 0}',
     "the command or its folder holds a NUL character (\\u0000); it cannot have been run as recorded"),
])
def test_log_lines_the_schema_lets_through_are_refused(tmp_path: Path, line: bytes, message: str):
    log = tmp_path / "s.jsonl"
    log.write_bytes(b'{"seq": 9, "cmd": "ok \xe2\x9c\x93 \\ufffd", "exit": 0}\n' + line + b"\n")
    with pytest.raises(PacketLogError) as ei:
        read_log(log)
    assert str(ei.value) == f"{log}:2: {message}"


@pytest.mark.parametrize("cwd", ["../..", "/etc", "sub/../../x"])
def test_a_cwd_outside_the_tree_is_named_as_such(repo: Path, cwd: str):
    rec(repo, "cat", "data.txt", cwd=repo / "sub")
    log = repo / "session.jsonl"
    _edit_log(log, 1, cwd=cwd)
    v = replay(log, repo=repo)
    assert v.verdict == "UNRUNNABLE" and v.reason == (
        f"{log}:1: step 1's cwd {cwd!r} is outside the replayed tree (the recorder writes a directory inside the "
        f"repository): the log line was edited")


def test_a_missing_cwd_is_a_step_that_did_not_run(repo: Path, monkeypatch):
    rec(repo, "cat", "data.txt", cwd=repo / "sub")
    _edit_log(repo / "session.jsonl", 1, cwd="nope")
    monkeypatch.chdir(repo)
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl"])
    assert res.exit_code == 1
    assert "[DIVERGED] seq=1 exit=not-run/0 cat data.txt   (in nope)\n" in res.output
    assert "not run: the recorded working directory 'nope' does not exist in the replayed tree" in res.output


def test_control_characters_in_a_command_are_shown_escaped(repo: Path, tmp_path: Path, monkeypatch):
    """A shell line holding CR, LF or ESC cannot draw a line that looks like the replay's own."""
    rec(repo, "echo hi #\r[ok]       seq=2 exit=0/0 pytest -q")
    rec(repo, "true\n[ok]       seq=3 exit=0/0 pytest -q\x1b[2K")
    monkeypatch.chdir(repo)
    junit = tmp_path / "packet.xml"
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--junit", str(junit)])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[2] == "[ok]       seq=1 exit=0/0 echo hi #\\r[ok]       seq=2 exit=0/0 pytest -q"
    assert lines[3] == "[ok]       seq=2 exit=127/127 true\\n[ok]       seq=3 exit=0/0 pytest -q\\x1b[2K"
    assert lines[4] == "VERDICT: PASS" and "\r" not in res.output and "\x1b" not in res.output
    names = [c.get("name") for c in ET.parse(junit).getroot().iter("testcase")]
    assert names == ["seq 1: echo hi #\\r[ok]       seq=2 exit=0/0 pytest -q",
                     "seq 2: true\\n[ok]       seq=3 exit=0/0 pytest -q\\x1b[2K"]
    (repo / "b.md").write_text("It works [seq:1] and [seq:9].\n")
    _edit_log(repo / "session.jsonl", 1, exit=1)
    res = CliRunner().invoke(packet_cli, ["claims", "b.md", "session.jsonl"])
    assert ("[seq:1] cites step 1 (`echo hi #\\r[ok]       seq=2 exit=0/0 pytest -q`), which exited 1"
            in res.output) and "\r" not in res.output


def test_a_tracked_cache_file_counts_in_the_tree_and_the_head_comparison(repo: Path):
    """Only untracked caches are left out: a committed .pyc can change what the head runs."""
    from replaybook.packet.gitstate import commit_state, tree_state

    log = _fail_fix_pass_packet(repo)
    before = tree_state(repo, ["session.jsonl", "session.outputs"])
    (repo / "__pycache__").mkdir()
    (repo / "__pycache__" / "check.cpython-312.pyc").write_bytes(b"stale")
    (repo / "old.pyc").write_bytes(b"stale")
    assert tree_state(repo, ["session.jsonl", "session.outputs"]) == before  # untracked caches are left out
    git(repo, "add", "-f", "__pycache__/check.cpython-312.pyc")
    git(repo, "commit", "-q", "-m", "add a build cache")
    after = tree_state(repo, ["session.jsonl", "session.outputs"])
    assert after.digest != before.digest and "__pycache__/check.cpython-312.pyc" in after.entries
    assert "old.pyc" not in after.entries
    head = git(repo, "rev-parse", "HEAD").strip()
    assert "__pycache__/check.cpython-312.pyc" in commit_state(repo, head).entries
    v = replay(log, repo=repo, require_head=True, head_ignore=["PR_BODY.md"])
    assert v.verdict == "DIVERGED" and v.head["differing"] == ["PR_BODY.md", "__pycache__/check.cpython-312.pyc"]
    assert v.problems == [f"the PR head HEAD ({head[:12]}) is not the last recorded state: 1 file(s) differ: "
                          f"__pycache__/check.cpython-312.pyc"]


def test_an_excluded_list_naming_more_than_the_log_and_its_outputs_is_an_inconsistent_log(repo: Path):
    log = _fail_fix_pass_packet(repo)
    _edit_log(log, 2, excluded=["session.jsonl", "session.outputs", "feature.flag"])
    v = replay(log, repo=repo, require_head=True, head_ignore=["PR_BODY.md"])
    assert v.verdict == "UNRUNNABLE" and v.steps == []
    assert v.reason == (f"{log}:2: step 2's excluded list names 'feature.flag', which is neither the log nor its "
                        f"output folder (session.jsonl, session.outputs); the recorder leaves out nothing else, so "
                        f"the log line was edited (or the log was moved: replay it where it was recorded)")
    _edit_log(log, 2, excluded=["session.jsonl/", "session.outputs"])
    assert replay(log, repo=repo, require_head=True, head_ignore=["PR_BODY.md"]).verdict == "PASS"


def test_an_edited_output_is_found_whatever_the_log_says_about_storing_it(packet: Path, repo: Path):
    steps = read_log(packet, for_replay=True).steps
    edited = repo / "session.outputs" / f"{steps[2].get('out_sha')}.txt"
    edited.write_text("1 check passed, all good\n")
    _edit_log(packet, 3, stored=False)
    stray = repo / "session.outputs" / f"{'ab' * 32}.txt"
    stray.write_text("a hand-written output\n")
    (repo / "session.outputs" / "README.txt").write_text("notes\n")
    (repo / "feature.flag").unlink()
    v = replay(packet, repo=repo)
    assert [s.status for s in v.steps] == ["ok", "ok", "ok"]
    assert v.verdict == "DIVERGED" and v.problems == [
        f"step 3's stored output {edited} does not hash to the recorded out_sha: it was edited",
        f"stored output {repo / 'session.outputs' / 'README.txt'} does not hash to its name: it was edited",
        f"stored output {stray} does not hash to its name: it was edited"]
    assert v.steps[2].notes[-1] == f"stored output {edited} does not hash to the recorded out_sha: it was edited"


def test_a_gap_in_seq_fails_the_strict_mode(packet: Path, repo: Path):
    lines = log_lines(packet)
    write_lines(packet, [lines[0], lines[2]], chain=False)  # as an older recorder wrote it, step 2 removed
    (repo / "feature.flag").unlink()
    v = replay(packet, repo=repo, require_head=True, head_ignore=["feature.flag"])
    assert v.verdict == "DIVERGED" and v.problems[0] == f"seq 2 missing from the log before step 3 ({packet}:2)"
    assert v.headline.startswith(f"DIVERGED (1/2 steps differ; seq 2 missing from the log before step 3 ({packet}:2)")
    assert replay(packet, repo=repo).problems == []  # without the strict mode, a warning only


def test_a_pass_says_how_many_outputs_project_rules_altered(repo: Path, tmp_path: Path, monkeypatch):
    _with_rules(repo, '{ name = "request_id", pattern = "req-[0-9a-f]{8}", replace = "req-<ID>" }',
                "import uuid\nprint('served request', 'req-' + uuid.uuid4().hex[:8])\n")
    rec(repo, "echo", "hello")
    monkeypatch.chdir(repo)
    junit = tmp_path / "packet.xml"
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--junit", str(junit)])
    assert res.exit_code == 0, res.output
    assert res.output.splitlines()[-1] == "VERDICT: PASS (1/2 outputs altered by project rules)"
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).getroot().iter("property")}
    assert props["verdict"] == "PASS (1/2 outputs altered by project rules)"


def test_a_project_rule_that_leaves_almost_nothing_makes_the_step_not_compared(repo: Path):
    _with_rules(repo, '{ name = "tail", pattern = "(?s)(?<=\\\\A.).*", replace = "" }', "print('mean: 5.0')\n")
    v = replay(repo / "session.jsonl", repo=repo)
    assert v.verdict == "DIVERGED" and v.headline == "DIVERGED (1/1 steps not compared)"
    assert v.steps[0].reasons == ["output not compared: project rule(s) 'tail' replaced all or most of the output "
                                  "(more than 80% of it)"]


def test_a_matching_step_whose_stored_output_was_edited_says_so_on_its_line(packet: Path, repo: Path,
                                                                           tmp_path: Path, monkeypatch):
    steps = read_log(packet, for_replay=True).steps
    (repo / "session.outputs" / f"{steps[0].get('out_sha')}.txt").write_text("FORGED\n")
    (repo / "feature.flag").unlink()
    monkeypatch.chdir(repo)
    junit = tmp_path / "packet.xml"
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--junit", str(junit)])
    assert res.exit_code == 1
    lines = res.output.splitlines()
    assert lines[2] == f"[ok]       seq=1 exit=1/1 {PY} check.py   STORED OUTPUT EDITED"
    assert lines[4] == "[ok]       seq=2 exit=0/0 touch feature.flag"
    root = ET.parse(junit).getroot()
    assert root.find("testsuite").get("failures") == "1"
    fails = [(c.get("name"), f.get("type")) for c in root.iter("testcase") for f in c.iter("failure")]
    assert fails == [(f"seq 1: {PY} check.py", "EDITED_OUTPUT")]


def test_a_password_a_log_holds_in_plain_text_is_never_shown(repo: Path, tmp_path: Path, monkeypatch):
    """A log written by an older recorder, or by hand, may hold a password: every place that shows
    a command shows it redacted, while the replay still runs what the log says."""
    from replaybook.packet import packet_summary

    rec(repo, "echo sshpass -p abc ssh web1")
    rec(repo, "true", "--x")
    log = repo / "session.jsonl"
    _edit_log(log, 1, cmd="echo sshpass -p hunter22 ssh web1")
    _edit_log(log, 2, cmd="true curl -u bob:w0nderland https://x",
              argv=["true", "curl", "-u", "bob:w0nderland", "https://x"])
    monkeypatch.chdir(repo)
    junit = tmp_path / "packet.xml"
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--junit", str(junit)])
    assert res.exit_code == 0, res.output  # the replay ran what the log says, and redacted its output alike
    assert "[ok]       seq=1 exit=0/0 echo sshpass -p [REDACTED:password_flag] ssh web1" in res.output
    assert "[ok]       seq=2 exit=0/0 true curl -u bob:[REDACTED:password_flag] https://x" in res.output
    assert "hunter22" not in res.output + junit.read_text() and "w0nderland" not in res.output + junit.read_text()
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--format", "json"])
    steps = json.loads(res.output)["steps"]
    assert steps[0]["cmd"] == "echo sshpass -p [REDACTED:password_flag] ssh web1"
    assert steps[1]["argv"] == ["true", "curl", "-u", "bob:[REDACTED:password_flag]", "https://x"]
    assert "hunter22" not in res.output and "w0nderland" not in res.output
    # an argv that is not what cmd shows: the UNRUNNABLE reason names both, redacted
    _edit_log(log, 2, cmd="true curl -u bob:w0nderland https://y")
    v = replay(log, repo=repo)
    assert v.verdict == "UNRUNNABLE" and v.reason == (
        f"{log}:2: step 2's cmd 'true curl -u bob:[REDACTED:password_flag] https://y' is not the command its argv "
        f"runs ('true curl -u bob:[REDACTED:password_flag] https://x'); the log line was edited")
    (repo / "b.md").write_text("The tests pass [seq:1] and [seq:2].\n")
    res = CliRunner().invoke(packet_cli, ["claims", "b.md", "session.jsonl"])
    assert "cites step 1 (`echo sshpass -p [REDACTED:password_flag] ssh web1`)" in res.output
    assert "hunter22" not in res.output and "w0nderland" not in res.output
    steps = packet_summary(log, repo / "b.md")["steps"]
    assert steps["cmd"].tolist() == ["echo sshpass -p [REDACTED:password_flag] ssh web1",
                                     "true curl -u bob:[REDACTED:password_flag] https://y"]


_STAMP = f"{PY} -c 'import time; print(time.time_ns())' > stamp.txt"  # other content on every run


def test_a_file_a_recorded_step_wrote_is_the_replays_own_in_the_head_check(repo: Path, monkeypatch):
    """`pytest -q | tee pytest.log` leaves an untracked log whose timings change run to run."""
    rec(repo, _STAMP)
    rec(repo, "true")
    log = repo / "session.jsonl"
    v = replay(log, repo=repo, require_head=True)
    assert v.verdict == "PASS" and v.warnings == [] and v.problems == [], v.to_dict()
    note = ("step 2 was recorded with 1 uncommitted change(s), and the replay holds {}, written by recorded steps "
            "(stamp.txt): their content is the replay's own and may differ from the recording's (output that changes "
            "run to run, such as timings in a log)")
    assert v.steps[1].notes == [note.format("the same")]
    assert v.head["matches"] is True and v.head["produced"] == ["stamp.txt"] and v.head["own"] == ["stamp.txt"]
    monkeypatch.chdir(repo)
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--require-head", "--head-ignore", "PR_BODY.md"])
    assert res.exit_code == 0 and res.output.splitlines()[-1] == "VERDICT: PASS", res.output
    # a log from before dirty_paths: as many uncommitted changes as the replay holds
    write_lines(log, [{k: v for k, v in line.items() if k != "dirty_paths"} for line in log_lines(log)])
    v = replay(log, repo=repo, require_head=True)
    assert v.verdict == "PASS" and v.steps[1].notes == [note.format("as many")] and v.head["own"] == ["stamp.txt"]


def test_the_head_check_compares_committed_files_with_what_recorded_steps_wrote(repo: Path):
    rec(repo, _STAMP)
    rec(repo, "true")
    log = repo / "session.jsonl"
    git(repo, "add", "stamp.txt")  # the file as recorded, committed after the last step
    git(repo, "commit", "-q", "-m", "the stamp")
    v = replay(log, repo=repo, require_head=True)
    assert v.verdict == "PASS" and v.head["differing"] == [] and v.head["own"] == [], v.to_dict()
    (repo / "stamp.txt").write_text("edited after the last step\n")  # an untracked file's other content
    git(repo, "commit", "-q", "-am", "another stamp")
    head = git(repo, "rev-parse", "HEAD").strip()
    v = replay(log, repo=repo, require_head=True)
    assert v.verdict == "DIVERGED" and v.problems == [
        f"the PR head HEAD ({head[:12]}) is not the last recorded state: 1 file(s) differ: stamp.txt"]
    v = replay(log, repo=repo, require_head=True, head_ignore=["stamp.txt"])
    assert v.verdict == "PASS" and v.head["ignored"] == ["stamp.txt"], v.to_dict()
    write_check(repo, extra=" or True")  # a commit after the last step is still named
    git(repo, "commit", "-q", "-am", "later commit")
    head = git(repo, "rev-parse", "HEAD").strip()
    v = replay(log, repo=repo, require_head=True, head_ignore=["stamp.txt"])
    assert v.verdict == "DIVERGED" and v.problems == [
        f"the PR head HEAD ({head[:12]}) is not the last recorded state: 1 file(s) differ: check.py"]


def test_a_file_changed_outside_recorded_commands_beside_one_a_step_wrote_still_diverges(repo: Path):
    rec(repo, _STAMP)
    write_check(repo, extra="  # a hand edit, not a recorded command")
    rec(repo, "true")
    log = repo / "session.jsonl"
    v = replay(log, repo=repo, require_head=True, head_ignore=["stamp.txt"])
    assert v.steps[1].notes == ["step 2 was recorded with 1 uncommitted change(s) that the replay does not hold "
                                "(files changed outside recorded commands?): check.py; commit between steps"]
    head = git(repo, "rev-parse", "HEAD").strip()
    assert v.verdict == "DIVERGED" and v.problems == [
        f"the PR head HEAD ({head[:12]}) is not the last recorded state: 1 file(s) were changed outside recorded "
        f"commands before it, so what it ran on there is not known: check.py"]
    assert v.head["unknown"] == ["check.py"] and v.head["own"] == ["stamp.txt"]
    # a log from before dirty_paths: 2 uncommitted changes recorded, 1 in the replay
    write_lines(log, [{k: v for k, v in line.items() if k != "dirty_paths"} for line in log_lines(log)])
    v = replay(log, repo=repo, require_head=True, head_ignore=["stamp.txt"])
    assert v.steps[1].notes == ["step 2 was recorded with 2 uncommitted change(s) that the replay does not hold "
                                "(files changed outside recorded commands?); commit between steps"]
    assert v.verdict == "DIVERGED" and v.problems == [
        f"the PR head HEAD ({head[:12]}) is not the last recorded state: the files cannot be listed (the last "
        f"recorded state was not reproduced), but their digests differ; --head-ignore applies only to files that "
        f"can be listed"]


def test_a_verdict_diverged_by_the_head_or_the_chain_is_a_failing_testcase_in_junit(repo: Path, tmp_path: Path,
                                                                                      monkeypatch):
    log = _fail_fix_pass_packet(repo)
    git(repo, "rm", "-q", "feature.flag")
    git(repo, "commit", "-q", "-m", "later commit: reverts the fix")
    head = git(repo, "rev-parse", "HEAD").strip()
    monkeypatch.chdir(repo)
    junit = tmp_path / "packet.xml"

    def failing(*args: str) -> list[tuple[str, str, str]]:
        res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--junit", str(junit), *args])
        suite = ET.parse(junit).getroot().find("testsuite")
        steps = len(read_log(log).steps)
        assert res.exit_code == 1 and suite.get("tests") == str(steps + 1) and suite.get("failures") == "1", \
            res.output
        return [(c.get("name"), f.get("type"), f.get("message")) for c in suite.iter("testcase")
                for f in c.findall("failure")]

    assert failing("--require-head", "--head-ignore", "PR_BODY.md") == [
        ("replay", "DIVERGED", f"the PR head HEAD ({head[:12]}) is not the last recorded state: 1 file(s) differ: "
                               f"feature.flag")]
    lines = log.read_text().splitlines()
    log.write_text("\n".join(lines[1:]) + "\n")  # step 1 cut off: the chain shows it
    assert failing() == [("replay", "DIVERGED", "the log's chain is broken: lines removed (session.jsonl:1, 2)")]


def test_head_ignore_accepts_an_untracked_file_written_outside_recorded_commands(repo: Path):
    rec(repo, _STAMP)
    (repo / "PR_BODY.md").write_text("draft\n")  # written by an editor between steps, never committed
    rec(repo, "true")
    log = repo / "session.jsonl"
    assert log_lines(log)[1]["dirty_paths"] == ["PR_BODY.md", "stamp.txt"]
    head = git(repo, "rev-parse", "HEAD").strip()
    v = replay(log, repo=repo, require_head=True)
    assert v.verdict == "DIVERGED" and v.problems == [
        f"the PR head HEAD ({head[:12]}) is not the last recorded state: 1 file(s) were changed outside recorded "
        f"commands before it, so what it ran on there is not known: PR_BODY.md"]
    v = replay(log, repo=repo, require_head=True, head_ignore=["PR_BODY.md"])
    assert v.verdict == "PASS" and v.head["ignored"] == ["PR_BODY.md"] and v.head["own"] == ["stamp.txt"], v.to_dict()
    (repo / "PR_BODY.md").write_text("It works [seq:2].\n")  # edited and committed after the last step
    git(repo, "add", "PR_BODY.md")
    git(repo, "commit", "-q", "-m", "PR body")
    v = replay(log, repo=repo, require_head=True, head_ignore=["PR_BODY.md"])
    assert v.verdict == "PASS" and v.head["ignored"] == ["PR_BODY.md"], v.to_dict()


def test_a_file_a_step_wrote_and_removed_by_hand_is_named_and_the_head_still_listed(repo: Path):
    rec(repo, "echo a > a.txt")
    rec(repo, _STAMP)
    (repo / "a.txt").unlink()  # removed outside recorded commands
    rec(repo, "true")
    v = replay(repo / "session.jsonl", repo=repo, require_head=True)
    assert v.steps[2].notes == ["step 3 was recorded without 1 change(s) recorded steps made in the replay (files "
                                "restored or removed outside recorded commands?): a.txt; commit between steps"]
    assert v.verdict == "PASS" and v.head["produced"] == ["stamp.txt"] and v.head["unknown"] == [], v.to_dict()


def test_edit_record_then_commit_replays_on_the_commit_that_holds_the_edit(repo: Path):
    """The author (or an agent's file-edit tool) fixed check.py by hand, recorded the passing
    check on that uncommitted edit, then committed it.  The replay held the edit nowhere and
    diverged ("commit between steps"), though a later commit holds exactly the files the step ran
    on.  The replay moves to that commit before the step, says so, and passes."""
    rec(repo, PY, "check.py")                                   # 1: fails, the flag is missing
    write_check(repo, extra=" or True")                         # the fix, by hand
    r2 = rec(repo, PY, "check.py")                              # 2: passes, on the uncommitted fix
    assert (r2.exit, r2.line["dirty"], r2.line["dirty_paths"]) == (0, True, ["check.py"])
    git(repo, "commit", "-q", "-am", "fix the check")
    fix = git(repo, "rev-parse", "HEAD").strip()
    v = replay(repo / "session.jsonl", repo=repo)
    assert v.verdict == "PASS", v.to_dict()
    assert [s.exit for s in v.steps] == [1, 0]
    assert v.steps[1].notes[0] == (f"step 2 was recorded on 1 uncommitted change that commit {fix[:12]}, made "
                                   f"afterwards, holds exactly: replayed on {fix[:12]}")
    # a later commit that holds something else is not taken: the step still diverges, as before
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    write_check(repo, extra=" or 1 == 1")
    git(repo, "commit", "-q", "-am", "another fix")
    v = replay(repo / "session.jsonl", repo=repo)
    assert v.verdict == "DIVERGED" and "commit between steps" in v.steps[1].notes[0]


def test_a_first_step_recorded_on_edits_committed_afterwards_is_runnable(repo: Path):
    """The first step recorded on an uncommitted edit made the packet UNRUNNABLE ("commit them and
    replay with --checkout") even after the edit was committed; the replay now finds that commit."""
    write_check(repo, extra=" or True")
    r1 = rec(repo, PY, "check.py")
    assert (r1.exit, r1.line["dirty"]) == (0, True)
    git(repo, "commit", "-q", "-am", "fix the check")
    fix = git(repo, "rev-parse", "HEAD").strip()
    v = replay(repo / "session.jsonl", repo=repo)
    assert v.verdict == "PASS", v.to_dict()
    assert (f"step 1 was recorded on 1 uncommitted change that commit {fix[:12]}, made afterwards, holds exactly: "
            f"replayed on {fix[:12]}") in v.warnings
    # with --checkout the ref asked for is replayed, as before
    assert replay(repo / "session.jsonl", repo=repo, checkout="HEAD~1").verdict == "UNRUNNABLE"


def test_a_replayed_step_cannot_change_the_reviewers_repository(repo: Path, tmp_path: Path, monkeypatch):
    """Steps ran in a ``git worktree`` of the reviewer's repository, which shares its config, refs,
    tags and hooks: replaying a packet whose step set ``core.hooksPath`` (the packet author's code
    then runs on the reviewer's next git command), ``user.name``, a tag, a branch and a hook changed
    the reviewer's own repository.  A replay runs in a throwaway clone: the step does all of that,
    matches its recording, and the repository is byte for byte as it was."""
    import subprocess
    import tempfile

    (repo / "f.txt").write_text("two\n")
    git(repo, "add", "f.txt")
    git(repo, "commit", "-q", "-m", "two")
    git(repo, "tag", "v1")
    author = tmp_path / "author"  # the packet author's clone: the recording changes only it
    git(tmp_path, "clone", "-q", str(repo), str(author))
    git(author, "checkout", "-q", "--detach")
    hostile = (f"git config core.hooksPath {tmp_path / 'evil-hooks'}; git config user.name Mallory; "
               "git tag v9 HEAD~1; git branch -f main HEAD~1; git remote add evil /nowhere; "
               "printf '#!/bin/sh\\necho pwned\\n' > \"$(git rev-parse --git-common-dir)/hooks/pre-commit\"; "
               "echo mallory | git hash-object -w --stdin")
    assert rec(author, hostile).exit == 0
    assert rec(author, "git describe --tags HEAD").exit == 0  # the replay clone has the tags
    for name in ("session.jsonl", "session.outputs"):
        (author / name).rename(repo / name)

    def state():
        files = {p.relative_to(repo / ".git"): p.read_bytes() for p in (repo / ".git").rglob("*")
                 if p.is_file() and p.parts[len((repo / ".git").parts)] in ("config", "hooks", "packed-refs", "refs")}
        return (files, git(repo, "for-each-ref", "--format=%(refname) %(objectname)"), git(repo, "tag"),
                git(repo, "config", "--list", "--local"), git(repo, "rev-parse", "HEAD"), _worktrees(repo))

    before = state()
    assert git(repo, "tag") == "v1\n" and "Mallory" not in before[3]
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    v = replay(repo / "session.jsonl", repo=repo)
    assert git(repo, "config", "--get", "user.name") == "Dev\n" and git(repo, "tag") == "v1\n"
    assert state() == before
    assert v.verdict == "PASS", v.to_dict()
    assert [s.exit for s in v.steps] == [0, 0] and v.steps[1].output.strip() == "v1"
    written = v.steps[0].output.strip()  # the object the step wrote went to the clone
    assert len(written) == 40 and subprocess.run(["git", "cat-file", "-e", written], cwd=repo).returncode != 0
    assert not (tmp_path / "evil-hooks").exists() and not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert list((tmp_path / "tmp").iterdir()) == []  # the clone is gone


def test_a_local_filter_is_named_and_never_run_by_the_replay(repo: Path, tmp_path: Path):
    """A filter set only in the repository's own config (git-crypt, say) converts files on checkout;
    the replay's clean clone does not have it, so a step reading such a file can diverge for a
    reason that is not the change's.  The replay says so, and does not run the filter's program:
    the packet's repository names it, and nobody asked to run it."""
    ran = tmp_path / "smudge-ran"
    (repo / ".gitattributes").write_text("*.secret filter=crypt\n")
    (repo / "a.secret").write_text("stored\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "secret")
    git(repo, "config", "filter.crypt.smudge", f"touch {ran}; sed s/stored/plain/")
    git(repo, "config", "filter.crypt.clean", "sed s/plain/stored/")
    (repo / "a.secret").unlink()
    git(repo, "checkout", "--", "a.secret")
    assert (repo / "a.secret").read_text() == "plain\n" and ran.exists()
    ran.unlink()
    assert rec(repo, "cat a.secret").exit == 0
    v = replay(repo / "session.jsonl", repo=repo)
    assert not ran.exists()  # the clone never ran the filter
    assert v.verdict == "DIVERGED" and v.steps[0].output == "stored"
    assert ("this repository's own config (.git/config) sets filter.crypt (clean, smudge); the replay's clean "
            "clone does not run it (a filter runs a program, and the replay runs only the packet's steps): files "
            "it converts are checked out as committed, and a step reading them may diverge") in v.warnings


def test_line_ending_settings_of_the_repository_are_carried_into_the_replay(repo: Path):
    """``core.autocrlf`` in the repository's own config writes CRLF line ends on checkout; it runs
    no program, so the replay's clone takes it, and a step reading the file replays as recorded."""
    git(repo, "config", "core.autocrlf", "true")
    (repo / "sub" / "data.txt").unlink()
    git(repo, "checkout", "--", "sub/data.txt")
    assert (repo / "sub" / "data.txt").read_bytes() == b"alpha\r\nbeta\r\n"
    assert rec(repo, PY, "-c", "print(open('sub/data.txt', 'rb').read())").exit == 0
    v = replay(repo / "session.jsonl", repo=repo)
    assert v.verdict == "PASS", v.to_dict()
    assert v.steps[0].output == "b'alpha\\r\\nbeta\\r\\n'"
    assert not any("core.autocrlf" in w for w in v.warnings)


def _own_git_config(monkeypatch, tmp_path: Path, text: str = "") -> None:
    """The user's global config is ``text`` (a file of its own), and no system config is read:
    the line-end settings a replay sees are the test's, not the machine's."""
    g = tmp_path / "global-gitconfig"
    g.write_text(text)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(g))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


@pytest.mark.parametrize("written, global_text, stored", [
    ("[core]\n\tautocrlf\n", "", b"alpha\r\nbeta\r\n"),                     # a bare key: git's true
    ("[core]\n\tautocrlf =\n", "[core]\n\tautocrlf = true\n", b"alpha\nbeta\n")])  # empty: false, over the user's true
def test_a_line_end_setting_written_without_a_value_is_carried_into_the_replay(repo: Path, tmp_path: Path,
                                                                              monkeypatch, written, global_text,
                                                                              stored):
    """``[core] autocrlf`` with no ``=`` is git's boolean true, and ``autocrlf =`` (empty) its
    false; ``git config --get`` prints both as an empty line, which the replay took for "not set":
    the clone checked the file out with other line ends than the repository (LF for the bare key;
    CRLF from the user's own ``autocrlf = true`` for the empty one) and the step diverged.  Each is
    carried as git reads it."""
    _own_git_config(monkeypatch, tmp_path, global_text)
    with open(repo / ".git" / "config", "a") as fh:
        fh.write(written)
    (repo / "sub" / "data.txt").unlink()
    git(repo, "checkout", "--", "sub/data.txt")
    assert (repo / "sub" / "data.txt").read_bytes() == stored
    assert rec(repo, PY, "-c", "print(open('sub/data.txt', 'rb').read())").exit == 0
    v = replay(repo / "session.jsonl", repo=repo)
    assert v.verdict == "PASS", v.to_dict()
    assert v.steps[0].output == repr(stored)
    assert v.line_ends["core.autocrlf"] == {"value": "true" if stored.endswith(b"\r\n") else "", "scope": "local"}


def test_the_replay_records_the_line_end_settings_its_clone_ran_with(repo: Path, tmp_path: Path, monkeypatch):
    """A reader of a replay could not tell which line-end settings its clone checked files out
    with: those carried from the repository's own config, the user's global ones, or none.  The
    verdict records each (``line_ends``: value and where git read it, or None: not set, git's
    default), the JSON and the JUnit report carry it, and the text says it before the first step."""
    _own_git_config(monkeypatch, tmp_path, "[core]\n\teol = lf\n")
    git(repo, "config", "core.autocrlf", "input")
    assert rec(repo, PY, "check.py").exit == 1
    monkeypatch.chdir(repo)
    junit = tmp_path / "packet.xml"
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--junit", str(junit)])
    assert res.exit_code == 0, res.output
    words = ("line ends: core.autocrlf=input (the repository's own config, carried into the clone), "
             "core.eol=lf (the user's global config); not set (git's defaults): core.safecrlf, "
             "core.checkRoundtripEncoding")
    assert res.output.splitlines()[1] == words
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).getroot().iter("property")}
    assert props["line_ends"] == words.removeprefix("line ends: ")
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--format", "json"])
    assert json.loads(res.output)["line_ends"] == {
        "core.autocrlf": {"value": "input", "scope": "local"}, "core.eol": {"value": "lf", "scope": "global"},
        "core.safecrlf": None, "core.checkRoundtripEncoding": None}
    # none set: said so; a replay that made no clone records none
    git(repo, "config", "--unset", "core.autocrlf")
    _own_git_config(monkeypatch, tmp_path)
    v = replay(repo / "session.jsonl", repo=repo)
    assert v.line_ends == dict.fromkeys(["core.autocrlf", "core.eol", "core.safecrlf", "core.checkRoundtripEncoding"])
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl"])
    assert res.output.splitlines()[1] == ("line ends: none of core.autocrlf, core.eol, core.safecrlf, "
                                          "core.checkRoundtripEncoding is set (git's defaults)")
    (repo / "empty.jsonl").write_text("")
    assert replay(repo / "empty.jsonl", repo=repo).line_ends is None


@pytest.mark.parametrize("where", ["include", "worktree", "includeIf"])
def test_line_end_settings_the_repository_reads_from_elsewhere_are_carried(repo: Path, tmp_path: Path,
                                                                          monkeypatch, where):
    """Only the settings written in .git/config itself were carried (``git config --local``
    reads no ``[include]`` and no worktree config), so a repository whose ``core.autocrlf = true``
    comes from a file its config includes, from its worktree's own config (``config.worktree``),
    or from the user's ``[includeIf "gitdir:…"]`` (which matches the repository, not the clone's
    temporary folder) checked files out with CRLF while the replay's clone wrote LF, and a step
    reading such a file diverged.  The clone is given every line-end setting as the repository
    reads it."""
    included = tmp_path / "line-ends.gitconfig"
    included.write_text("[core]\n\tautocrlf = true\n")
    _own_git_config(monkeypatch, tmp_path)
    work = repo
    if where == "include":
        git(repo, "config", "include.path", str(included))
    elif where == "worktree":
        git(repo, "config", "extensions.worktreeConfig", "true")
        work = tmp_path / "linked"
        git(repo, "worktree", "add", "-q", "--detach", str(work), "HEAD")
        git(work, "config", "--worktree", "core.autocrlf", "true")
    else:
        _own_git_config(monkeypatch, tmp_path, f'[includeIf "gitdir:{repo.resolve()}/"]\n\tpath = {included}\n')
    (work / "sub" / "data.txt").unlink()
    git(work, "checkout", "--", "sub/data.txt")
    assert (work / "sub" / "data.txt").read_bytes() == b"alpha\r\nbeta\r\n"
    assert rec(work, PY, "-c", "print(open('sub/data.txt', 'rb').read())").exit == 0
    v = replay(work / "session.jsonl", repo=work)
    assert v.verdict == "PASS", v.to_dict()
    assert v.steps[0].output == "b'alpha\\r\\nbeta\\r\\n'"
    assert v.line_ends["core.autocrlf"] == {"value": "true", "scope": "local"}


def test_a_git_without_show_scope_still_records_the_line_end_settings(repo: Path, tmp_path: Path, monkeypatch):
    """A git before 2.26 (Ubuntu 20.04's 2.25) refuses ``--show-scope`` and prints nothing: the
    replay then said "none of core.autocrlf, … is set (git's defaults)" of a clone that had
    ``core.autocrlf = true`` carried into it.  The values are read without it, where each was
    read from is said not to be known."""
    import shutil

    _own_git_config(monkeypatch, tmp_path)
    real = shutil.which("git")
    old = tmp_path / "old-git"
    old.mkdir()
    (old / "git").write_text('#!/bin/sh\nfor a in "$@"; do [ "$a" = --show-scope ] && '
                             '{ echo "error: unknown option \\`show-scope\'" >&2; exit 129; }; done\n'
                             f'exec {real} "$@"\n')
    (old / "git").chmod(0o755)
    git(repo, "config", "core.autocrlf", "true")
    assert rec(repo, PY, "check.py").exit == 1
    monkeypatch.setenv("PATH", f"{old}{os.pathsep}{os.environ['PATH']}")
    v = replay(repo / "session.jsonl", repo=repo)
    assert v.verdict == "PASS", v.to_dict()
    assert v.line_ends == {"core.autocrlf": {"value": "true", "scope": None}, "core.eol": None,
                           "core.safecrlf": None, "core.checkRoundtripEncoding": None}
    assert line_end_words(v.line_ends) == (
        "core.autocrlf=true (where git read it not known: git before 2.26 cannot say); not set (git's defaults): "
        "core.eol, core.safecrlf, core.checkRoundtripEncoding")


def test_junit_keeps_a_markdown_file_beside_the_log_the_reader_cannot_read(packet: Path, repo: Path, monkeypatch):
    """A Markdown file beside the log is the packet's when it cites steps; where the Markdown
    reader fails on it (markdown-it-py raising), whether it cites steps is not known, so it is
    kept as the packet's — refused as a target with exit 2 naming it — rather than ending in an
    error that names no file, or being written over."""
    import hashlib

    from replaybook.errors import InputError
    from replaybook.packet import claims

    def failing(text, *a, **k):
        raise InputError("the Markdown reader failed on this body: boom", "?")

    monkeypatch.chdir(repo)
    notes = repo / "NOTES.md"
    notes.write_text("Fails before the fix [seq:1].\n")
    before = hashlib.sha256(notes.read_bytes()).hexdigest()
    monkeypatch.setattr(claims, "cited_markers", failing)
    res = CliRunner().invoke(packet_cli, ["replay", "session.jsonl", "--junit", "NOTES.md"])
    assert res.exit_code == 2, res.output
    assert "NOTES.md" in res.output and "is one of the inputs" in " ".join(res.output.split())
    assert "replaying" not in res.output
    assert hashlib.sha256(notes.read_bytes()).hexdigest() == before
