"""``replaybook packet``: record commands, replay them in a throwaway clean checkout, lint PR claims.

Commands and exit codes::

    replaybook packet record [--log session.jsonl] [--store-output] -- CMD [ARGS…]
        exits with CMD's exit code; 2 when the step could not be recorded
    replaybook packet replay session.jsonl [--checkout REF] [--timeout S] [--junit FILE] [--allow-dirty]
                                           [--require-head] [--head-ignore PATH]… [--skip-secret-steps]
                                           [--body PR_BODY.md]
        0 PASS · 1 DIVERGED · 2 UNRUNNABLE or bad usage
    replaybook packet claims PR_BODY.md session.jsonl [--outputs DIR] [--replay REPLAY.json] [--format text|json]
        0 no findings · 1 findings (in the body, or damage to the log's chain) · 2 unreadable input or
        bad usage

Every command exits 3 on an internal error (a bug; the traceback is printed).
Run standalone as ``python -m replaybook.packet.cli``.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import traceback
from pathlib import Path

import click

from ..errors import ReplaybookError
from .log import printable

__all__ = ["packet", "EXIT_INTERNAL"]

#: Exit code for an unexpected exception (1 and 2 carry meanings in these commands).
EXIT_INTERNAL = 3


def _guard(name: str):
    """Map ReplaybookError to exit 2 with a one-line message, anything else to exit 3."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            ctx = click.get_current_context()
            try:
                return fn(*args, **kwargs)
            except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
                raise
            except ReplaybookError as exc:
                click.echo(f"replaybook packet {name}: error: {exc}", err=True)
                ctx.exit(2)
            except Exception as exc:  # a bug
                click.echo(f"replaybook packet {name}: internal error: {type(exc).__name__}: {exc}", err=True)
                traceback.print_exc()
                ctx.exit(EXIT_INTERNAL)
        return wrapper
    return deco


@click.group("packet", context_settings={"help_option_names": ["-h", "--help"]})
def packet() -> None:
    """Replay packets: evidence a reviewer can re-run (see docs/packets.md)."""


@packet.command("record", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--log", "log_path", default="session.jsonl", show_default=True, envvar="REPLAYBOOK_SESSION_LOG",
              type=click.Path(dir_okay=False), help="Session log to append to (env REPLAYBOOK_SESSION_LOG).")
@click.option("--store-output", is_flag=True, help="Keep the normalized output beside the log for replay diffs.")
@click.option("--outputs", "outputs_dir", type=click.Path(file_okay=False), default=None,
              help="Folder for stored outputs (default: session.outputs/ beside the log).")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the 'recorded seq N' line to stderr.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@_guard("record")
def record_cmd(log_path: str, store_output: bool, outputs_dir: str | None, quiet: bool,
               command: tuple[str, ...]) -> None:
    """Run COMMAND, print its output, append one step to the log, exit with its exit code.

    One argument is a shell line (``record -- "pytest -q | tail"``); several are a program
    and its arguments (``record -- pytest -q``).  stdout and stderr are captured as one stream.
    """
    from .record import record

    sys.stdout.flush()
    res = record(command, log_path, store=store_output, outputs_dir=outputs_dir,
                 tee=getattr(sys.stdout, "buffer", None))
    for w in res.warnings:
        click.echo(f"[replaybook] warning: {w}", err=True)
    if not quiet:
        click.echo(f"[replaybook] recorded seq {res.seq} (exit {res.exit}) in {log_path}", err=True)
    click.get_current_context().exit(res.exit)


def _print_step(s) -> None:
    tag = {"ok": "[ok]      ", "UNCHECKED": "[UNCHECKED]"}.get(s.status, "[DIVERGED]")
    exit_s = str(s.exit) if s.exit is not None else ("timeout" if s.duration_ms is not None else "not-run")
    line = f"{tag} seq={s.seq} exit={exit_s}/{s.expected_exit} {printable(s.cmd)}"
    if s.cwd not in (".", ""):
        line += f"   (in {printable(s.cwd)})"
    if s.stored_edited:
        line += "   STORED OUTPUT EDITED"
    click.echo(line)
    if s.reasons:
        click.echo("           " + "; ".join(s.reasons))
    for n in s.notes:
        click.echo(f"           note: {n}")
    if s.diff:
        for dl in s.diff.split("\n"):
            click.echo("           " + printable(dl))


@packet.command("replay")
@click.argument("log_path", metavar="SESSION_LOG", type=click.Path(dir_okay=False))
@click.option("--checkout", "ref", default=None, help="Replay every step on REF instead of the recorded commit(s).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=600.0, show_default=True,
              help="Seconds each step may run.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), default=None,
              help="Also write a JUnit XML report here (for CI).")
@click.option("--allow-dirty", is_flag=True,
              help="Replay even when the recording's uncommitted changes are not in the replayed tree (warns).")
@click.option("--require-head", is_flag=True,
              help="Fail (DIVERGED) when the PR head holds other files than the last recorded step ran on.")
@click.option("--head-ignore", "head_ignore", multiple=True, metavar="PATH",
              help="A path, folder or glob whose head differences are accepted, e.g. PR_BODY.md (repeatable).")
@click.option("--skip-secret-steps", is_flag=True,
              help="Replay the other steps when a step's command held a secret that cannot be restored; "
                   "that step is marked not run (DIVERGED).")
@click.option("--repo", type=click.Path(file_okay=False, exists=True), default=None,
              help="Repository holding the commits (default: the one around the current directory).")
@click.option("--outputs", "outputs_dir", type=click.Path(file_okay=False), default=None,
              help="Folder of stored outputs, for diffs (default: session.outputs/ beside the log).")
@click.option("--body", "body_path", type=click.Path(dir_okay=False), default=None,
              help="The PR body: say which diverged steps its [seq:N] markers cite, and which none does.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_guard("replay")
def replay_cmd(log_path: str, ref: str | None, timeout: float, junit_path: str | None, allow_dirty: bool,
               require_head: bool, head_ignore: tuple[str, ...], skip_secret_steps: bool, repo: str | None,
               outputs_dir: str | None, body_path: str | None, fmt: str) -> None:
    """Re-run SESSION_LOG in a clean checkout in a throwaway clone; print ok/DIVERGED per step and the verdict.

    Exit 0 PASS, 1 DIVERGED, 2 UNRUNNABLE (empty or malformed log, unknown commit, dirty record).
    """
    from .junit import write_junit
    from .replay import line_end_words, replay

    cites = _read_cites(body_path) if body_path else None  # before the replay: a bad path fails at once
    if junit_path:  # (the report goes beside the evidence, never over it)
        from .._guard import refuse_over_evidence, stat_or_refuse

        stat_or_refuse(junit_path, "--junit")  # (a name too long: a usage error, not a crash below)
        files, folders = _packet_files(junit_path, log_path, body_path, head_ignore, outputs_dir, repo)
        refuse_over_evidence(junit_path, files=files, folders=folders, option="--junit")
    text = fmt == "text"
    shown = [0]  # warnings printed so far

    def on_start(v) -> None:
        where = f"{v.checkout} ({v.commit[:12]})" if v.checkout else f"recorded commit {v.commit[:12]}"
        chain = "" if v.log_chain != "unchained" else "; the log is unchained (no digest chain: lines removed " \
                                                      "from it show only as gaps in seq)"
        click.echo(f"replaying {log_path} at {where} in a clean checkout (a throwaway clone){chain}")
        if v.line_ends is not None:
            click.echo(f"line ends: {line_end_words(v.line_ends)}")
        if v.rules:
            click.echo(f"project normalization rules ({v.rules_origin}):")
            for r in v.rules:
                flag = "   MATCHES ANY TEXT: outputs it touches are not compared" if r["matches_anything"] else ""
                click.echo(f"  {r['name']}: {r['pattern']!r} -> {r['replace']!r}{flag}")
        for w in v.warnings:
            click.echo(f"warning: {w}")
        shown[0] = len(v.warnings)

    verdict = replay(log_path, repo=repo, checkout=ref, timeout=timeout, allow_dirty=allow_dirty,
                     outputs_dir=outputs_dir, require_head=require_head, head_ignore=head_ignore,
                     skip_secret_steps=skip_secret_steps,
                     on_step=_print_step if text else None, on_start=on_start if text else None)
    if junit_path:
        write_junit(verdict, junit_path)
    cited = _cited_divergence(verdict, cites) if cites is not None else None
    if text:
        for w in verdict.warnings[shown[0]:]:
            click.echo(f"warning: {w}")
        if cited is not None:
            body = _shown_path(body_path)
            for d in cited["cited"]:
                lines = ", ".join(f"{body}:{n}" for n in d["lines"])
                click.echo(f"{d['status']} step {d['seq']} is cited by {lines}: the claim there rests on a step "
                           f"that did not replay as recorded")
            if cited["uncited"]:
                click.echo(f"diverged step(s) no marker in {body} cites: "
                           + ", ".join(str(q) for q in cited["uncited"]))
            if not cited["cited"] and not cited["uncited"]:
                click.echo(f"no diverged step: every step {body} cites replayed as recorded")
        click.echo(f"VERDICT: {verdict.headline}")
    else:
        out = verdict.to_dict()
        if cited is not None:
            out["body"] = {"path": body_path, **cited}
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
    click.get_current_context().exit(verdict.exit_code)


def _shown_path(path: str) -> str:
    """A path as given, with ``.`` and ``..`` parts worked out (``a/../b`` → ``b``) for messages."""
    return os.path.normpath(path)


#: A PR body's usual name: beside the session log, it is the packet's body even when ``--body`` is not given.
_BODY_NAME = "PR_BODY.md"


def _packet_files(target: str, log_path: str, body_path: str | None, head_ignore: tuple[str, ...],
                  outputs_dir: str | None, repo: str | None) -> tuple[list[Path], list[Path]]:
    """``(files, folders)`` of the packet that ``replay --junit target`` must not write over: the
    session log; the body (``--body``); what ``--head-ignore`` names (a path, from here or from the
    repository's root; and ``target`` itself when a folder or glob of it names it); the files beside
    the log that the packet holds (``PR_BODY.md``, and ``target`` when it is a Markdown file there
    citing ``[seq:N]`` steps: a body, or one the Markdown reader fails on); and the stored outputs (``--outputs`` and ``session.outputs/``
    beside the log)."""
    from .claims import cited_markers
    from .gitstate import repo_root
    from .log import outputs_dir_for
    from .replay import _ignored

    log = Path(log_path)
    files = [log, *([Path(body_path)] if body_path else [])]
    folders = [outputs_dir_for(log), *([Path(outputs_dir)] if outputs_dir else [])]
    try:
        root = repo_root(repo) if repo else (repo_root(Path.cwd()) or repo_root(log.resolve().parent))
    except (OSError, ReplaybookError):
        root = None
    out = Path(target)
    # (a JUnit report an earlier replay wrote there is the replay's own output: written again)
    earlier = out.is_file() and _is_junit_report(out)
    ignored = [q for p in head_ignore for q in (Path(p), *([root / p] if root is not None else []))]
    files += [q for q in ignored if not (earlier and q.exists() and os.path.samefile(q, out))]
    if not out.is_file():
        return files, folders
    where = out.resolve()
    if root is not None and head_ignore and not earlier:
        try:
            rel = where.relative_to(root.resolve()).as_posix()
        except ValueError:
            rel = None
        if rel is not None and _ignored(rel, tuple(head_ignore)):
            files.append(out)
    beside = log.resolve().parent
    files.append(beside / _BODY_NAME)
    if where.parent == beside and where.suffix.lower() in (".md", ".markdown"):
        try:
            text = where.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        try:
            cites = bool(cited_markers(text))
        except ReplaybookError:  # (the Markdown reader failed on it: it may be a body, so it is kept)
            cites = True
        if cites:
            files.append(out)
    return files, folders


def _is_junit_report(path: Path) -> bool:
    """``path`` holds a JUnit XML report (its root element ``<testsuites>`` or ``<testsuite>``,
    after an XML declaration or comments): what ``replay --junit`` writes."""
    import re

    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    except OSError:
        return False
    head = re.sub(r"^(?:<\?xml[^>]*\?>|<!--.*?-->|\s+)*", "", head, flags=re.S)
    return re.match(r"<testsuites?[\s>/]", head) is not None


def _read_cites(body_path: str) -> list[tuple[int, int]]:
    """``(line, seq)`` of the body's markers (:func:`.claims.cited_markers`).

    Raises:
        InputError: the body cannot be read, or read as Markdown.
    """
    from ..errors import InputError
    from .claims import cited_markers

    try:
        body = open(body_path, encoding="utf-8", errors="replace").read()
    except OSError as exc:
        raise InputError(f"cannot read PR body: {exc.strerror or exc}", body_path) from exc
    try:
        return cited_markers(body)
    except InputError as exc:  # (markdown-it-py failed on it)
        raise InputError(exc.message, body_path) from exc


def _cited_divergence(verdict, cites: list[tuple[int, int]]) -> dict:
    """``{"cited": [{"seq", "status", "lines"}], "uncited": [seq]}``: the steps that did not replay
    as recorded (``DIVERGED`` or ``UNCHECKED``) that markers cite, with the body lines citing them,
    and those no marker cites."""
    lines: dict[int, list[int]] = {}
    for line, seq in cites:
        lines.setdefault(seq, []).append(line)
    cited, uncited = [], []
    for s in verdict.diverged:
        if s.seq in lines:
            cited.append({"seq": s.seq, "status": s.status, "lines": sorted(set(lines[s.seq]))})
        else:
            uncited.append(s.seq)
    return {"cited": cited, "uncited": uncited}


@packet.command("claims")
@click.argument("body_path", metavar="PR_BODY", type=click.Path(dir_okay=False))
@click.argument("log_path", metavar="SESSION_LOG", type=click.Path(dir_okay=False))
@click.option("--outputs", "outputs_dir", type=click.Path(file_okay=False), default=None,
              help="Folder of stored outputs, for 'fails with X' claims (default: session.outputs/ beside the log).")
@click.option("--replay", "replay_path", type=click.Path(dir_okay=False), default=None,
              help="A replay's result (packet replay --format json > FILE): say for each marker how the step "
                   "it cites replayed.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_guard("claims")
def claims_cmd(body_path: str, log_path: str, outputs_dir: str | None, replay_path: str | None, fmt: str) -> None:
    """Check the [seq:N] markers of PR_BODY against SESSION_LOG; list unsupported claims.

    Exit 1 when a marker cites a step that is not in the log, a failing step its clause does not describe
    as failing, for a claim that tests (a build, a lint, a type check) pass or fail, only steps
    whose exit code shows no such check passing or failing (`echo "1 passed"`, `true`, `false`,
    `exit 1`, `pytest` that collected no tests), a failure said to show a text its stored output
    lacks, an exit status ("exits with code 2") the step did not exit with, or a stored output
    edited after recording; warnings (unsupported claims, commands the linter cannot read) never fail.
    """
    from .claims import lint_claims, read_replay_json

    statuses = read_replay_json(replay_path) if replay_path else None
    report = lint_claims(body_path, log_path, outputs_dir=outputs_dir)
    if statuses is not None:
        report.attach_replay(statuses)
    if fmt == "json":
        click.echo(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        body_path, log_path = report.body_path, report.log_path  # as given, ".." worked out
        for f in report.findings + sorted(report.warnings, key=lambda w: w.line):
            click.echo(f"{body_path}:{f.line}: {f.severity}: {f.kind}: {f.message}\n    {f.sentence}")
        for lf in report.log_findings:
            click.echo(f"{log_path}:{lf.line_no}: error: {lf.kind}: {lf.message}")
        for w in report.log_warnings:
            click.echo(f"warning: {w}")
        for r in report.replayed or []:
            why = f": {'; '.join(r.reasons)}" if r.reasons and r.status != "ok" else ""
            verdict = "replayed as recorded" if r.status == "ok" else r.status + why
            click.echo(f"{body_path}:{r.line}: replay: [seq:{r.seq}] step {r.seq} {verdict}\n    {r.sentence}")
        acc = ", ".join(str(s) for s in report.accepted_steps) or "none"
        click.echo(f"claims: {len(report.findings) + len(report.log_findings)} finding(s), "
                   f"{len(report.warnings) + len(report.log_warnings)} warning(s); "
                   f"{report.markers} marker(s): {len(report.accepted_markers)} accepted "
                   f"({report.markers_accepted_with_warnings} with a warning), "
                   f"{report.markers_with_findings} with a finding; "
                   f"steps cited only by accepted markers: {acc}; log {report.log_chain}")
    click.get_current_context().exit(report.exit_code)


if __name__ == "__main__":  # pragma: no cover
    packet(prog_name="replaybook packet")
