"""The README's commands, as the command line takes them and as it answers them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from click.testing import CliRunner

from replaybook.cli import cli, main

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def test_the_join_usage_reads_as_the_command_takes_it():
    """The usage line read ``replaybook join [INCIDENT] --transcripts PATH --calls PATH``, as if
    both options were needed with an INCIDENT too: the command takes an INCIDENT, or both
    options, never the two together."""
    readme = README.read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| `replaybook join"))
    assert row.startswith("| `replaybook join INCIDENT [--window 60] [--min-agreed 1] [--max-offset 300] "
                          "[--clock-offset TRANSCRIPT=S] [--format table\\|json]` or `replaybook join --transcripts "
                          "PATH --calls PATH [same options]` |")
    assert "without one, `--transcripts` and `--calls` are both needed, and with one neither is taken (exit 2)" in row
    demo = REPO / "data" / "demo"
    both = CliRunner().invoke(cli, ["join", str(demo), "--transcripts", str(demo / "transcripts")])
    assert both.exit_code == 2 and "give an INCIDENT manifest or --transcripts and --calls, not both" in both.output
    one = CliRunner().invoke(cli, ["join", "--transcripts", str(demo / "transcripts")])
    assert one.exit_code == 2 and "give an INCIDENT manifest, or both --transcripts and --calls" in one.output
    helped = CliRunner().invoke(cli, ["join", "--help"])
    assert "join [OPTIONS] [INCIDENT]\n" in helped.output
    for option in ("--window", "--min-agreed", "--max-offset", "--clock-offset", "--format"):
        assert option in helped.output


def test_the_report_example_prints_the_paths_its_command_writes(tmp_path, monkeypatch, capsys):
    """The example's command wrote ``--out reports/my-incident`` while its output named
    ``/home/me/reports/demo``: the command is run here in a checkout of its own, and what it
    prints, with that checkout's path written as the example's, is the example's output."""
    from replaybook.report import render

    readme = README.read_text(encoding="utf-8")
    block = readme[readme.index("```text\n$ cd /home/me/replaybook && replaybook report"):].split("\n```")[0]
    shown = block.splitlines()[1:]
    root, manifest, out = re.fullmatch(r"\$ cd (\S+) && replaybook report (\S+) --out (\S+)", shown[0]).groups()
    checkout = tmp_path / "replaybook"
    shutil.copytree(REPO / "data" / "demo", checkout / Path(manifest).parent)
    monkeypatch.chdir(checkout)

    def render_report(incident, out_dir, timeout):  # (the notebook's run is the report tests')
        files = render.report_files(incident, out_dir)
        return render.ReportPaths(ipynb=files.ipynb.resolve(), html=files.html.resolve(), findings={},
                                  checksums=files.checksums.resolve())

    monkeypatch.setattr(render, "render_report", render_report)
    assert main(["report", manifest, "--out", out]) == 0
    got = capsys.readouterr()
    said = [line.replace(str(checkout.resolve()), root) for line in got.err.splitlines()]
    assert shown[2] == said[-1] == (
        "replaybook: every input's SHA-256 is in /home/me/replaybook/reports/my-incident/demo.sha256; check them "
        "with: cd /home/me/replaybook/data/demo && sha256sum -c /home/me/replaybook/reports/my-incident/demo.sha256")
    assert shown[3:] == [got.out.strip().replace(str(checkout.resolve()), root)] == [
        "/home/me/replaybook/reports/my-incident/demo.html"]
    assert shown[1].startswith("replaybook: 2 door sessions (2 matched); 9 door calls, 1 refused;")


def _first_screen() -> str:
    """The README before its first ``##`` heading (what a reader sees before scrolling)."""
    readme = README.read_text(encoding="utf-8")
    return readme[:readme.index("\n## ")]


def _section(title: str) -> str:
    """The README's ``## title`` section, up to the next ``##`` heading."""
    readme = README.read_text(encoding="utf-8")
    body = readme[readme.index(f"\n## {title}\n"):]
    return body[:body.index("\n## ", 1)]


def test_the_tests_section_says_what_the_suite_does_without_the_shared_folder(tmp_path, monkeypatch):
    """The suite's real-file tests need ``../shared``, which no checkout and no ``make`` holds: the
    README's Tests section says they skip locally with the reason the suite gives, and fail where
    ``REPLAYBOOK_REQUIRE_SHARED=1`` (CI) is set — as tests/conftest.py does. The first screen, for
    someone trying the tool, says only that such tests skip, and where to read why."""
    import importlib.util

    import pytest

    spec = importlib.util.spec_from_file_location("_suite_conftest", REPO / "tests" / "conftest.py")
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)
    section = " ".join(_section("Tests").split())
    monkeypatch.delenv("REPLAYBOOK_REQUIRE_SHARED", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        suite._require(tmp_path / "shared")
    reason = str(skipped.value.msg).replace(str(tmp_path), "…")
    assert reason == "…/shared not found (the read-only evidence folder ../shared beside the repository)"
    assert f"each with the reason `{reason}`" in section
    monkeypatch.setenv("REPLAYBOOK_REQUIRE_SHARED", "1")
    with pytest.raises(pytest.fail.Exception):
        suite._require(tmp_path / "shared")
    assert "`REPLAYBOOK_REQUIRE_SHARED=1` turns that skip into a failure" in section
    assert "REPLAYBOOK_REQUIRE_SHARED=1" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "it is not in the repository and `make` does not make it" in section

    screen = " ".join(_first_screen().split())
    assert "../shared" not in screen.replace("the `../shared` sample files", "")
    assert ("The tests that need what a checkout does not hold (Chromium, an npm package, the `../shared` "
            "sample files) are skipped locally without them: see [Tests](#tests).") in screen
    assert "On a fresh clone `make demo` takes about 70 s on 2 cores" in screen
    assert "`make test` about 15 minutes" in screen


def _make(target: str, venv: Path, *assignments: str) -> subprocess.CompletedProcess:
    """Run this checkout's Makefile for ``target`` with ``venv`` (a folder of stand-in commands) as
    its ``.venv`` and no Python to make one: only the recipes themselves run."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    return subprocess.run(["make", "--no-print-directory", "-C", str(REPO), target, f"VENV={venv}", "PYTHON=true",
                           *assignments], capture_output=True, text=True, timeout=60, env=env)


def _stand_in(venv: Path, name: str, script: str) -> None:
    """``venv/bin/name``: a shell script standing in for pip, python or replaybook."""
    command = venv / "bin" / name
    command.parent.mkdir(parents=True, exist_ok=True)
    command.write_text("#!/bin/sh\n" + script)
    command.chmod(0o755)


def test_make_keeps_pips_warnings_in_a_log_and_says_how_many(tmp_path):
    """pip, configured with index folders that do not exist, gave a warning per package per folder
    (140 on a fresh clone) ahead of what ``make demo`` prints: they go to ``.venv/pip.log`` and make
    says how many, and the first; pip is run quiet, without its version check."""
    venv = tmp_path / "venv"
    _stand_in(venv, "pip", 'echo "$*" >> "$(dirname "$0")/../argv"\n'
                           "for p in pandas click; do\n"
                           "  echo \"WARNING: Location 'file:///opt/pypi/simple/$p/' is ignored: it is neither a file "
                           "nor a directory.\" >&2\n"
                           "done\n")
    made = _make(str(venv / ".installed"), venv)
    assert made.returncode == 0, made.stderr
    log = venv / "pip.log"
    assert made.stdout.splitlines() == [
        "true -m venv " + str(venv),
        f"make: installing replaybook with its test extras into {venv} (pip's output: {log})",
        f"make: pip gave 4 warnings, all in {log}; the first:",
        "WARNING: Location 'file:///opt/pypi/simple/pandas/' is ignored: it is neither a file nor a directory."]
    assert made.stderr == ""
    assert log.read_text().count("is ignored: it is neither a file nor a directory") == 4
    quiet = "install --quiet --disable-pip-version-check --no-warn-script-location"
    assert (venv / "argv").read_text().splitlines() == [f"{quiet} --upgrade pip", f"{quiet} -e .[test]"]
    assert (venv / ".installed").exists()


def test_make_shows_all_of_pips_output_when_it_fails_or_says_more_than_warnings(tmp_path):
    """Keeping pip's warnings in a log must not hide its errors: a failed install prints everything
    pip said and stops; an install that succeeded with an error said (a dependency conflict, which
    pip exits 0 on) prints everything too."""
    failing = tmp_path / "failing"
    _stand_in(failing, "pip", 'case "$*" in *upgrade*) exit 0;; esac\n'
                              "echo \"WARNING: Location 'file:///opt/pypi/simple/x/' is ignored\" >&2\n"
                              "echo 'ERROR: No matching distribution found for papermill>=2.6' >&2\nexit 1\n")
    made = _make(str(failing / ".installed"), failing)
    assert made.returncode != 0
    assert made.stdout.splitlines()[-2:] == ["WARNING: Location 'file:///opt/pypi/simple/x/' is ignored",
                                             "ERROR: No matching distribution found for papermill>=2.6"]
    assert f"make: pip failed: its output is above, and in {failing / 'pip.log'}" in made.stderr
    assert not (failing / ".installed").exists()

    conflicted = tmp_path / "conflicted"
    _stand_in(conflicted, "pip", 'case "$*" in *upgrade*) exit 0;; esac\n'
                                 "echo 'WARNING: Location x is ignored' >&2\n"
                                 "echo \"ERROR: pip's dependency resolver does not currently take into account all "
                                 "the packages that are installed.\" >&2\n"
                                 "echo 'nbclient 0.10.2 requires jupyter-client>=6.1.12, which is not installed.' >&2\n")
    made = _make(str(conflicted / ".installed"), conflicted)
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines()[-3:] == [
        "WARNING: Location x is ignored",
        "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed.",
        "nbclient 0.10.2 requires jupyter-client>=6.1.12, which is not installed."]


def test_make_demo_prints_the_report_path_last_and_labelled(tmp_path):
    """``make demo``'s last line is the HTML path the report command printed, labelled, after the
    findings the command writes on stderr; a report that fails fails ``make demo``, with no path."""
    venv = tmp_path / "venv"
    _stand_in(venv, "pip", "")
    _stand_in(venv, "replaybook", 'echo "$*" > "$(dirname "$0")/../argv"\n'
                                  "echo 'replaybook: 2 door sessions (2 matched)' >&2\n"
                                  "echo /home/me/replaybook/reports/elsewhere/demo.html\n")
    made = _make("demo", venv, "REPORT_DIR=reports/elsewhere")
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines()[-2:] == [
        f"{venv}/bin/replaybook report data/demo/incident.yaml --out reports/elsewhere",
        "demo report (open in a browser): /home/me/replaybook/reports/elsewhere/demo.html"]
    assert made.stderr == "replaybook: 2 door sessions (2 matched)\n"
    assert (venv / "argv").read_text() == "report data/demo/incident.yaml --out reports/elsewhere\n"
    assert "make demo    # creates .venv, installs (with test extras), renders the bundled demo incident's report, " \
           "prints the HTML path as its last line\n" in README.read_text(encoding="utf-8")

    _stand_in(venv, "replaybook", "echo 'replaybook: error: data/demo/incident.yaml: no such file' >&2\nexit 2\n")
    made = _make("demo", venv)
    assert made.returncode != 0
    assert "demo report" not in made.stdout and "no such file" in made.stderr


def test_make_test_hands_pytest_args_to_pytest_and_ci_runs_make_test(tmp_path):
    """The README's ``make test PYTEST_ARGS=-rs`` (to list the skipped tests) reaches pytest; CI runs
    ``make test`` itself, with nothing added."""
    venv = tmp_path / "venv"
    _stand_in(venv, "pip", "")
    _stand_in(venv, "python", 'echo "$*" > "$(dirname "$0")/../argv"\n')
    made = _make("test", venv, "PYTEST_ARGS=-rs tests/test_readme.py")
    assert made.returncode == 0, made.stderr
    assert (venv / "argv").read_text() == "-m pytest -rs tests/test_readme.py\n"
    assert "make test PYTEST_ARGS=-rs" in " ".join(_section("Tests").split())
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert ci.rstrip().splitlines()[-1] == "make test"
