"""The recorder: exit codes, pass-through, redaction, concurrent appends, the shell function."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from replaybook.packet import REC_SH, read_log, record, replay
from replaybook.packet.cli import packet as packet_cli
from replaybook.packet.errors import PacketError, PacketLogError
from replaybook.packet.log import append_step

from packet_helpers import PY, git, log_lines, rec, write_lines

SECRET = "s3cr3t-value-123"
GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def test_cli_prints_output_through_and_exits_with_the_command_code(repo: Path, monkeypatch):
    monkeypatch.chdir(repo)
    res = CliRunner().invoke(packet_cli, ["record", "--store-output", "--", PY, "-c",
                                          "import sys; print('to out'); print('to err', file=sys.stderr); sys.exit(3)"])
    assert res.exit_code == 3
    assert "to out\nto err\n" in res.output
    assert "[replaybook] recorded seq 1 (exit 3) in session.jsonl" in res.output
    res = CliRunner().invoke(packet_cli, ["record", "-q", "--", "exit 5"])  # a shell line
    assert res.exit_code == 5 and res.output == ""
    steps = read_log(repo / "session.jsonl", for_replay=True).steps
    assert [(s.seq, s.exit) for s in steps] == [(1, 3), (2, 5)]
    assert steps[1].cmd == "exit 5" and steps[1].get("stored") is False


def test_missing_program_is_recorded_as_127(repo: Path):
    r = rec(repo, "definitely-not-a-program-xyz", "--flag")
    assert r.exit == 127 and r.line["cmd"] == "definitely-not-a-program-xyz --flag"


def test_no_command_is_an_error(repo: Path):
    with pytest.raises(PacketError, match="no command to record"):
        record([], repo / "session.jsonl", cwd=repo)
    res = CliRunner().invoke(packet_cli, ["record", "--", "  "])
    assert res.exit_code == 2 and "no command to record" in res.output


def test_secrets_never_reach_the_log_or_stored_output(repo: Path, monkeypatch):
    monkeypatch.setenv("MY_API_TOKEN", SECRET)
    monkeypatch.setenv("SHORT_KEY", "abc")  # too short to redact
    env = dict(os.environ)
    r1 = rec(repo, 'echo "token is $MY_API_TOKEN"', env=env)
    r2 = rec(repo, "echo", SECRET, env=env)  # the secret is in the command line too
    r3 = rec(repo, "printf", "auth: Bearer abcdefghijklmnop and %s\\n", GHP, env=env)
    assert r1.line["out_sha"] == hashlib.sha256(b"token is [REDACTED:env:MY_API_TOKEN]").hexdigest()
    assert r2.line["cmd"] == "echo '[REDACTED:env:MY_API_TOKEN]'"
    assert r2.line["argv"] == ["echo", "[REDACTED:env:MY_API_TOKEN]"]
    assert r3.line["redacted"] == ["bearer", "github_token"]
    files = [repo / "session.jsonl", *sorted(p for p in (repo / "session.outputs").rglob("*") if p.is_file())]
    assert len(files) == 7  # each output stored normalized, and raw in raw/: neither holds a secret
    for f in files:
        data = f.read_bytes()
        assert SECRET.encode() not in data and GHP.encode() not in data and b"abcdefghijklmnop" not in data, f
    stored = (repo / "session.outputs" / f"{r3.line['out_sha']}.txt").read_text()
    assert stored == "auth: Bearer [REDACTED:bearer] and [REDACTED:github_token]"
    # the replayer restores the secret from its own environment and hashes the same way
    lines = [json.loads(x.replace('"session.', '"two.')) for x in (repo / "session.jsonl").read_text().splitlines()]
    write_lines(repo / "two.jsonl", lines[:2])  # its own chain: a log of the first two steps, recorded as two.jsonl
    v = replay(repo / "two.jsonl", repo=repo, env=env)
    assert v.verdict == "PASS", v.to_dict()
    env.pop("MY_API_TOKEN")
    v = replay(repo / "two.jsonl", repo=repo, env=env)
    assert v.verdict == "UNRUNNABLE" and v.reason.startswith(f"{repo / 'two.jsonl'}:2: step 2's command")
    assert "env:MY_API_TOKEN" in v.reason


def _worker(log: str, cwd: str, n: int, start) -> None:
    start.wait()
    for _ in range(n):
        record(["true"], log, cwd=cwd)


def test_concurrent_appends_get_unique_seqs(repo: Path):
    log = repo / "session.jsonl"
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    procs = [ctx.Process(target=_worker, args=(str(log), str(repo), 10, start)) for _ in range(8)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 8
    raw = log.read_text().splitlines()
    assert len(raw) == 81 and raw[-1].startswith('{"trailer":{"v":1,"lines":80,')  # 80 steps, then the trailer
    read = read_log(log, for_replay=True)
    assert sorted(s.seq for s in read.steps) == list(range(1, 81))
    assert (read.chain, read.chain_findings) == ("chained", ())  # every append chained to the one before it


def test_append_never_glues_onto_a_torn_line(tmp_path: Path):
    log = tmp_path / "s.jsonl"
    log.write_text('{"seq": 4, "cmd": "a", "exit": 0}\n{"seq": 9, "cmd": "torn')
    assert append_step(log, {"cmd": "b", "exit": 0}) == 5
    lines = log.read_text().splitlines()
    assert lines[1] == '{"seq": 9, "cmd": "torn' and json.loads(lines[2])["seq"] == 5
    with pytest.raises(PacketLogError, match=r"s\.jsonl:2: invalid JSON"):
        read_log(log)


def test_outside_a_repository_records_with_a_warning(tmp_path: Path):
    r = record(["echo", "hi"], tmp_path / "s.jsonl", cwd=tmp_path)
    assert r.exit == 0 and r.line["commit"] is None and r.line["cwd"] is None
    assert "not inside a git repository" in r.warnings[0]
    v = replay(tmp_path / "s.jsonl", repo=tmp_path)
    assert v.verdict == "UNRUNNABLE"


def test_rec_sh_shell_function(repo: Path):
    # one `rec` call (each starts a Python process): a shell line, run from a subdirectory
    script = (f'export REPLAYBOOK_PYTHON="{PY}"; export SESSION_LOG=session.jsonl; source "{REC_SH}"; '
              'cd sub; rec "cat data.txt | wc -l; exit 3"; echo "rc=$?"')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(["bash", "-c", script], cwd=repo, capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.split() == ["2", "rc=3"], out.stderr
    assert "[replaybook] recorded seq 1 (exit 3)" in out.stderr
    steps = read_log(repo / "session.jsonl", for_replay=True).steps  # the log stays where rec.sh was sourced
    assert [(s.cmd, s.exit, s.get("cwd")) for s in steps] == [("cat data.txt | wc -l; exit 3", 3, "sub")]
    assert git(repo, "status", "--porcelain") == "?? session.jsonl\n"


def test_a_secret_recognised_in_the_command_line_is_redacted_everywhere(repo: Path):
    r1 = rec(repo, "API_TOKEN=s3cretvalue42 sh -c 'echo using $API_TOKEN'")
    r2 = rec(repo, "true --token s3cretvalue43; echo 'sent token s3cretvalue43'")
    r3 = rec(repo, PY, "-c", "import sys; print('got', sys.argv[2])", "--token", "s3cretvalue44")
    assert r1.line["cmd"] == "API_TOKEN=[REDACTED:secret_assignment] sh -c 'echo using $API_TOKEN'"
    assert r2.line["cmd"] == "true --token [REDACTED:secret_flag]; echo 'sent token [REDACTED:secret_flag]'"
    assert r3.line["argv"][-2:] == ["--token", "[REDACTED:secret_flag]"]
    assert r3.line["cmd"] == shlex.join(r3.line["argv"])
    outputs = repo / "session.outputs"
    assert (outputs / f"{r1.line['out_sha']}.txt").read_text() == "using [REDACTED:secret_assignment]"
    assert (outputs / f"{r2.line['out_sha']}.txt").read_text() == "sent token [REDACTED:secret_flag]"
    assert (outputs / f"{r3.line['out_sha']}.txt").read_text() == "got [REDACTED:secret_flag]"
    assert [r.line["redacted"] for r in (r1, r2, r3)] == [["secret_assignment"], ["secret_flag"], ["secret_flag"]]
    for f in [repo / "session.jsonl", *(p for p in outputs.rglob("*") if p.is_file())]:
        assert b"s3cretvalue4" not in f.read_bytes(), f


def test_replay_redacts_learned_secrets_the_way_the_recorder_did(repo: Path):
    r = rec(repo, PY, "-c", "s = 'opensesame' + '99'; print('pass' + 'word: ' + s); print('login with', s)")
    stored = (repo / "session.outputs" / f"{r.line['out_sha']}.txt").read_text()
    assert stored == "password: [REDACTED:secret_assignment]\nlogin with [REDACTED:secret_assignment]"
    v = replay(repo / "session.jsonl", repo=repo)
    assert v.verdict == "PASS" and v.steps[0].output == stored


def test_recording_a_step_whose_output_a_project_rule_swallows_warns(repo: Path):
    (repo / "pyproject.toml").write_text(
        '[tool.replaybook.normalize]\nrules = [ { name = "everything", pattern = "(?s).+", replace = "ok" } ]\n')
    git(repo, "add", "pyproject.toml")
    git(repo, "commit", "-q", "-m", "rules")
    r = rec(repo, "echo", "hello")
    assert r.warnings == (f"project normalization rule(s) 'everything' in {repo / 'pyproject.toml'} replaced all or "
                          f"most of the output (more than 80% of it): a replay cannot compare this step",)


def test_literal_tokens_are_named_per_step_and_a_variable_reference_replays(repo: Path):
    env = dict(os.environ, MY_TOKEN="s3cretvalue45")
    rec(repo, "echo --token s3cretvalue43 >/dev/null", env=env)
    rec(repo, "true", "--api-key", "abcdef123456", env=env)
    log = repo / "session.jsonl"
    v = replay(log, repo=repo, env=env)
    assert v.verdict == "UNRUNNABLE" and v.reason == "; ".join(
        f"{log}:{n}: step {n}'s command line held a literal token (secret_flag), redacted at record time; it "
        f"cannot be replayed. Re-record the step with the secret in an environment variable (for example "
        f"--token \"$MY_TOKEN\")" for n in (1, 2)) + (". Every step holds such a secret: none can be replayed until "
                                                   "the steps are recorded again that way")
    assert "environment variable" in v.reason and "set MY" not in v.reason
    log.unlink()
    r = rec(repo, 'echo --token "$MY_TOKEN"', env=env)
    assert r.line["cmd"] == 'echo --token "$MY_TOKEN"' and r.line["redacted"] == ["env:MY_TOKEN"]
    assert replay(log, repo=repo, env=env).verdict == "PASS"


def test_recording_into_a_log_with_a_malformed_line_warns_naming_it(repo: Path, monkeypatch):
    log = repo / "session.jsonl"
    log.write_text("garbage\n")
    monkeypatch.chdir(repo)
    res = CliRunner().invoke(packet_cli, ["record", "-q", "--", "echo", "hi"])
    assert res.exit_code == 0
    assert (f"[replaybook] warning: {log}:1: invalid JSON") in res.output
    assert ("The step is appended anyway, but replay and the claims linter refuse this log until that line is "
            "fixed") in res.output
    log.write_text("")
    assert rec(repo, "true").warnings == ()


def test_a_bash_pipeline_keeps_the_exit_code_of_a_failing_command_on_record_and_replay(repo: Path):
    from replaybook.packet import replay
    from replaybook.packet.log import read_log

    # (bash is part of every machine this project supports: no skip, so CI cannot pass it by)
    line = f"{PY} -c 'print(\"1 failed\"); raise SystemExit(1)' | tail -1"
    r = rec(repo, line)
    assert r.exit == 1 and r.line["shell"] == "bash" and r.line["pipefail"] is True
    log = repo / "session.jsonl"
    assert replay(log, repo=repo).verdict == "PASS"
    # a log written before the field replays as it was recorded: without pipefail
    old = log_lines(log)[0]
    del old["pipefail"]
    old["exit"] = 0
    write_lines(log, [old], chain=False)
    assert read_log(log, for_replay=True).steps[0].get("pipefail") is None
    v = replay(log, repo=repo)
    assert v.verdict == "PASS" and v.steps[0].exit == 0


def test_passwords_of_known_programs_never_reach_the_log_or_stored_output(repo: Path):
    # argv: each argument is redacted, and cmd stays shlex.join(argv)
    r1 = rec(repo, "echo", "sshpass", "-p", "pw1", "ssh", "web1")
    assert r1.line["argv"] == ["echo", "sshpass", "-p", "[REDACTED:password_flag]", "ssh", "web1"]
    assert r1.line["cmd"] == shlex.join(r1.line["argv"]) and r1.line["redacted"] == ["password_flag"]
    # a shell line, and a `set -x` trace in the output
    r2 = rec(repo, "PGPASSWORD=pg-s3cret true psql; echo '+ mysql -pTr0ub4dor app'; echo 'curl -u bob:w0nderland'")
    assert r2.line["cmd"] == ("PGPASSWORD=[REDACTED:secret_assignment] true psql; "
                              "echo '+ mysql -p[REDACTED:password_flag] app'; "
                              "echo 'curl -u bob:[REDACTED:password_flag]'")
    stored = (repo / "session.outputs" / f"{r2.line['out_sha']}.txt").read_text()
    assert stored == "+ mysql -p[REDACTED:password_flag] app\ncurl -u bob:[REDACTED:password_flag]"
    r3 = rec(repo, PY, "-c", "print(' '.join(['htpass' + 'wd', '-b', 'f', 'alice', 'wonder' + 'land42']))")
    assert (repo / "session.outputs" / f"{r3.line['out_sha']}.txt").read_text() == \
        "htpasswd -b f alice [REDACTED:password_arg]"
    for f in [repo / "session.jsonl", *(p for p in (repo / "session.outputs").rglob("*") if p.is_file())]:
        data = f.read_bytes()
        for secret in (b"pw1", b"pg-s3cret", b"Tr0ub4dor", b"w0nderland", b"wonderland42"):
            assert secret not in data, (f, secret)
    # ordinary -p options are recorded as they were
    r4 = rec(repo, "mkdir -p build/x && echo ssh -p 2222 web1")
    assert r4.line["cmd"] == "mkdir -p build/x && echo ssh -p 2222 web1" and r4.line["redacted"] == []
    # a password written on the command line cannot be replayed: the replay says to re-record it
    v = replay(repo / "session.jsonl", repo=repo)
    assert v.verdict == "UNRUNNABLE" and v.reason.startswith(
        f"{repo / 'session.jsonl'}:1: step 1's command line held a literal password (password_flag), redacted at "
        f"record time; it cannot be replayed. Re-record the step with the password in an environment variable: "
        f"export SSHPASS (6 characters or more) and write `echo sshpass -p \"$SSHPASS\" ssh web1` in the step; ")


def test_a_literal_password_of_a_known_program_gets_that_programs_advice_and_the_rest_can_replay(repo: Path):
    rec(repo, "echo one")
    rec(repo, "true curl -u bob:w0nderland123 https://api.example.com/x")
    rec(repo, "PGPASSWORD=pg-s3cret true psql -h db")
    rec(repo, "echo two")
    log = repo / "session.jsonl"
    v = replay(log, repo=repo)
    assert v.verdict == "UNRUNNABLE" and v.steps == []
    assert v.reason == (
        f"{log}:2: step 2's command line held a literal password (password_flag), redacted at record time; it "
        f"cannot be replayed. Re-record the step with the password in an environment variable: export "
        f"CURL_PASSWORD (6 characters or more) and write `true curl -u \"bob:$CURL_PASSWORD\" "
        f"https://api.example.com/x` in the step; "
        f"{log}:3: step 3's command line held a literal password (secret_assignment), redacted at record time; it "
        f"cannot be replayed. Re-record the step with the password in an environment variable: export PGPASSWORD "
        f"(6 characters or more) and write `true psql -h db` in the step: psql reads it from the environment. "
        f"The other 2 step(s) can be replayed: --skip-secret-steps replays them and marks step(s) 2, 3 not run "
        f"(the verdict is then DIVERGED at best)")
    v = replay(log, repo=repo, skip_secret_steps=True)
    assert v.verdict == "DIVERGED" and v.headline == "DIVERGED (2/4 steps differ)"
    assert [(s.status, s.exit) for s in v.steps] == [("ok", 0), ("DIVERGED", None), ("DIVERGED", None), ("ok", 0)]
    assert v.steps[1].reasons == ["not run (--skip-secret-steps): its command held a secret that cannot be restored"]
    assert v.steps[1].notes[0].startswith(f"{log}:2: step 2's command line held a literal password")
    # recorded the way the advice says, the step replays
    log.unlink()
    env = dict(os.environ, CURL_PASSWORD="w0nderland123")
    r = rec(repo, 'true curl -u "bob:$CURL_PASSWORD" https://api.example.com/x', env=env)
    assert r.line["cmd"] == 'true curl -u "bob:$CURL_PASSWORD" https://api.example.com/x'
    assert replay(log, repo=repo, env=env).verdict == "PASS"


def test_rec_sh_takes_the_recorders_options_before_the_command_and_refuses_others(repo: Path):
    script = (f'export REPLAYBOOK_PYTHON="{PY}"; source "{REC_SH}"; '
              'rec -q "echo hi > f.txt"; echo "rc=$?"; '
              'rec -x true; echo "rc=$?"; '
              'rec --store-output --outputs "my outputs" -- echo stored; echo "rc=$?"; '
              'rec --log; echo "rc=$?"')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(["bash", "-c", script], cwd=repo, capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.split("\n") == ["rc=0", "rc=2", "stored", "rc=0", "rc=2", ""], out.stderr
    assert out.stderr.splitlines() == [
        "rec: unknown option '-x'; nothing was recorded. rec takes -q, --store-output, --outputs DIR and --log FILE "
        "before the command; put -- before a command that starts with '-' (rec -- -x ...)",
        f"[replaybook] recorded seq 2 (exit 0) in {repo / 'session.jsonl'}",
        "rec: --log needs a value (rec --log PATH CMD ...); nothing was recorded"]
    steps = read_log(repo / "session.jsonl", for_replay=True).steps
    assert [(s.cmd, s.exit, s.get("stored")) for s in steps] == [("echo hi > f.txt", 0, False),
                                                                  ("echo stored", 0, True)]
    assert (repo / "f.txt").read_text() == "hi\n"
    assert [p.read_text() for p in (repo / "my outputs").glob("*.txt")] == ["stored"]
    assert [p.read_text() for p in (repo / "my outputs" / "raw").glob("*.txt")] == ["stored\n"]


def test_recording_on_uncommitted_changes_says_what_the_replay_will_do(repo: Path):
    """Edit, record, commit: the replay then diverged ("commit between steps") although the
    recorder had said nothing.  Recording on uncommitted changes warns at once, naming them — the
    first step's makes the packet unrunnable, a later step's diverges unless a recorded step made
    them — and a clean tree gives no warning."""
    assert rec(repo, "echo", "clean").warnings == ()
    (repo / "check.py").write_text((repo / "check.py").read_text() + "\n# edited by hand\n")
    r = rec(repo, "echo", "later")
    assert r.seq == 2 and r.warnings == (
        "step 2 was recorded with 1 committed file changed (check.py): a replay starts from the commit, so it holds "
        "the change only if an earlier recorded step made it — an edit by hand or by an agent's file-edit tool is not "
        "replayed: commit before recording the next step",)
    # a new file an earlier step wrote is what steps do: no warning for it
    (repo / "check.py").write_text((repo / "check.py").read_text().replace("\n# edited by hand\n", ""))
    (repo / "report.txt").write_text("written by a step\n")
    assert rec(repo, "echo", "after").warnings == ()
    (repo / "session.jsonl").unlink()
    r = rec(repo, "echo", "first")
    assert r.seq == 1 and r.warnings[0].startswith("step 1 was recorded on 1 uncommitted change (report.txt): a replay "
                                                   "starts from the commit, so it refuses this packet (UNRUNNABLE)")
