"""The recorder: run one command, print its output through, append one step to the log.

:func:`record` is what ``replaybook packet record -- CMD…`` and the sourced ``rec`` shell
function (``rec.sh``) call.  Per command it:

1. finds the repository root, ``HEAD`` and the working-tree digest (:mod:`.gitstate`) *before*
   the command runs, and the project's normalization rules (:mod:`.normalize`);
2. runs the command with stdout and stderr merged into one pipe (:mod:`.capture`), copying the
   output to the caller's stdout as it arrives;
3. redacts secrets (:mod:`.redact`) from the output and the command line, normalizes the
   redacted output and hashes it (``out_sha``); optionally stores the normalized text as
   ``<outputs>/<out_sha>.txt`` and the redacted text before normalization as
   ``<outputs>/raw/<raw_sha>.txt`` (``raw_sha`` its SHA-256), which the claims linter checks quoted
   texts and figures against;
4. appends the line under the log's lock (:func:`.log.append_step`), which assigns ``seq``,
   chains the line to the one before it (``prev``) and replaces the log's trailer.

The recorder never writes a secret it knows of: redaction happens before anything is hashed,
stored or logged, and a value recognised as a secret in one place (the command line, an
argument, the output) is removed from all of them, every occurrence.
"""

from __future__ import annotations

import os
import shlex
import signal
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Mapping, Sequence

from .._text import safe_str
from .capture import Captured, default_shell, run_merged
from .errors import PacketError, PacketLogError
from .gitstate import git, head_commit, repo_root, tree_state
from .log import FORMAT_VERSION, RAW_DIR, append_step, outputs_dir_for, read_log
from .normalize import ALTERED_LIMIT, RuleSet, decode_output, load_rules, out_sha
from .redact import Redactor

__all__ = ["RecordResult", "record", "store_output", "command_line", "excluded_paths", "MAX_DIRTY_PATHS"]

#: At most this many uncommitted paths are listed in a step's ``dirty_paths`` (more: ``null``).
MAX_DIRTY_PATHS = 1000


@dataclass(frozen=True)
class RecordResult:
    """The outcome of recording one command.

    Attributes:
        seq: the step number the log assigned.
        exit: the command's exit code (the recorder exits with it).
        line: the dict written to the log.
        stored: path of the stored normalized output, if ``store_output`` was asked.
        warnings: things the user should know (e.g. not inside a git repository, or the log
            already holds a malformed line or a broken chain, named by file and line).
    """

    seq: int
    exit: int
    line: dict
    stored: Path | None = None
    warnings: tuple[str, ...] = field(default=())


def command_line(command: Sequence[str]) -> tuple[str, list[str] | None]:
    """``(cmd, argv)`` for a recorded command.

    One argument is a shell line, kept verbatim (``argv`` is ``None``); several are an
    argument vector, shown as ``shlex.join(argv)``.

    Raises:
        PacketError: no command, or an empty shell line.
    """
    command = list(command)
    if not command or (len(command) == 1 and not command[0].strip()):
        raise PacketError("no command to record (usage: replaybook packet record -- CMD [ARGS…])")
    if len(command) == 1:
        return command[0], None
    return shlex.join(command), command


def excluded_paths(root: Path | None, *paths: Path) -> list[str]:
    """Root-relative POSIX forms of ``paths`` that lie inside ``root`` (for the tree digest)."""
    if root is None:
        return []
    real_root = os.path.realpath(root)
    out = []
    for p in paths:
        rel = os.path.relpath(os.path.realpath(p), real_root)
        if rel != "." and not rel.startswith(".." + os.sep) and rel != "..":
            out.append(Path(rel).as_posix())
    return out


def store_output(outputs_dir: str | os.PathLike, sha: str, text: str) -> Path:
    """Write a normalized output as ``<outputs_dir>/<sha>.txt`` (atomically; kept if present).

    Raises:
        PacketError: the folder or file cannot be written.
    """
    d = Path(outputs_dir)
    target = d / f"{sha}.txt"
    if target.exists():
        return target
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".txt")
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8", "surrogatepass"))
        os.replace(tmp, target)
    except OSError as exc:
        raise PacketError(f"cannot store output in {d}: {exc}") from exc
    return target


def record(command: Sequence[str], log_path: str | os.PathLike = "session.jsonl", *,
           cwd: str | os.PathLike | None = None, store: bool = False,
           outputs_dir: str | os.PathLike | None = None, env: Mapping[str, str] | None = None,
           tee: BinaryIO | None = None) -> RecordResult:
    """Run ``command`` in ``cwd`` and append one step to ``log_path``.

    Args:
        command: one shell line, or a program and its arguments (see :func:`command_line`).
        log_path: the session log (relative paths are relative to the current directory).
        cwd: where to run (default: the current directory).
        store: keep the normalized output in ``outputs_dir`` as ``<out_sha>.txt``, and the redacted
            output before normalization as ``raw/<raw_sha>.txt`` (the line's ``raw_sha``).
        outputs_dir: the side folder (default: ``session.outputs/`` beside the log).
        env: the command's environment, also searched for secret values (default ``os.environ``).
        tee: binary stream to copy the raw output to as it arrives (the CLI passes stdout).

    Returns:
        :class:`RecordResult` — the command's exit code is ``.exit``.

    Raises:
        PacketError: no command given, git failed, the output could not be stored.
        RulesError: the project's ``[tool.replaybook.normalize]`` is malformed (raised before
            the command runs).
        PacketLogError: the log could not be written.
    """
    cmd, argv = command_line(command)
    env = dict(os.environ if env is None else env)
    cwd = Path(os.path.abspath(cwd if cwd is not None else os.getcwd()))
    log_path = Path(os.path.abspath(log_path))
    outputs = Path(os.path.abspath(outputs_dir)) if outputs_dir else outputs_dir_for(log_path)
    warnings: list[str] = []

    bad_log = _log_problem(log_path)
    if bad_log:
        warnings.append(bad_log)
    root = repo_root(cwd)
    rules: RuleSet = load_rules(root)
    commit = tree = dirty = dirty_files = dirty_paths = rel_cwd = None
    excluded: list[str] = []
    if root is None:
        warnings.append(f"{cwd} is not inside a git repository: the step records no commit and cannot be replayed")
    else:
        excluded = excluded_paths(root, log_path, outputs)
        commit = head_commit(root)
        state = tree_state(root, excluded)
        tree, dirty, dirty_files = state.digest, state.dirty, len(state.changed)
        dirty_paths = list(state.changed) if len(state.changed) <= MAX_DIRTY_PATHS else None
        rel = os.path.relpath(os.path.realpath(cwd), os.path.realpath(root))
        rel_cwd = Path(rel).as_posix()
        if commit is None:
            warnings.append("the repository has no commit yet: the step cannot be replayed")

    shell = default_shell() if argv is None else None
    pipefail = True if shell == "bash" else None  # a pipeline keeps the exit code of a failing command
    cap = _run_interruptible(argv if argv is not None else cmd, cwd, shell, env, tee, bool(pipefail))

    raw_out = decode_output(cap.output)  # bytes that are not UTF-8 kept apart, as on record
    raw_args = [safe_str(a) for a in argv] if argv is not None else None
    raw_cmd = safe_str(cmd) if raw_args is None else shlex.join(raw_args)
    # every secret value found anywhere (command line, an argument, the output) is removed everywhere
    redactor = Redactor.from_env(env).learn(raw_cmd, *(raw_args or ()), raw_out)
    red_out = redactor.redact(raw_out)
    norm = rules.normalize(red_out.text, root)
    sha = norm.sha256
    red_argv = [redactor.redact(a) for a in raw_args] if raw_args is not None else None
    # argv: redact each argument, then quote — a secret holding a quote is still found whole, and
    # cmd stays exactly shlex.join(argv), which the replay checks
    red_cmd = redactor.redact(raw_cmd) if red_argv is None else None
    cmd_text = red_cmd.text if red_cmd is not None else shlex.join(r.text for r in red_argv)
    kinds = (set(red_out.kinds) | set(red_cmd.kinds if red_cmd else ())
             | {k for r in (red_argv or []) for k in r.kinds})

    if norm.swallowed:
        warnings.append(f"project normalization rule(s) {', '.join(map(repr, norm.swallowed))} in "
                        f"{rules.origin} replaced all or most of the output (more than {ALTERED_LIMIT:.0%} of it): "
                        f"a replay cannot compare this step")
    stored = store_output(outputs, sha, norm.text) if store else None
    # the redacted output before normalization: what a claim quotes ("elapsed 11.956ms") is checked
    # against it, since normalization replaces exactly the figures a claim names (durations, times)
    raw_sha = out_sha(red_out.text) if store else None
    if raw_sha is not None:
        store_output(outputs / RAW_DIR, raw_sha, red_out.text)
    from .. import __version__

    line = {
        "cmd": cmd_text,
        "exit": cap.exit,
        "out_sha": sha,
        "duration_ms": cap.duration_ms,
        "v": FORMAT_VERSION,
        "ts": cap.started.strftime("%Y-%m-%dT%H:%M:%S.") + f"{cap.started.microsecond // 1000:03d}Z",
        "argv": [r.text for r in red_argv] if red_argv is not None else None,
        "shell": shell,
        "pipefail": pipefail,
        "cwd": rel_cwd,
        "commit": commit,
        "tree": tree,
        "dirty": dirty,
        "dirty_files": dirty_files,
        "dirty_paths": dirty_paths,
        "excluded": excluded,
        "norm": rules.version,
        "norm_fired": list(norm.fired),
        "redacted": sorted(kinds),
        "out_bytes": len(cap.output),
        "stored": stored is not None,
        **({"raw_sha": raw_sha} if raw_sha is not None else {}),
        "recorder": __version__,
    }
    seq = append_step(log_path, line)
    line = {"seq": seq, **line}
    if dirty and root is not None:
        said = _dirty_warning(root, seq, dirty_files or 0, list(state.changed))
        if said:
            warnings.append(said)
    return RecordResult(seq, int(cap.exit if cap.exit is not None else 124), line, stored, tuple(warnings))


def _named(paths: list[str]) -> str:
    return " (" + ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "") + ")"


def _dirty_warning(root: Path, seq: int, n: int, changed: list[str]) -> str | None:
    """What recording on uncommitted changes means for the replay, said when it happens (the
    replay starts from a commit): the first step's make the packet unrunnable; a later step's
    changes to *tracked* files diverge the replay unless an earlier recorded step made them (a
    hand edit, an agent's file-edit tool) — new untracked files are what earlier steps usually
    write, and are not warned of.  ``None`` when there is nothing to say."""
    head = "a replay starts from the commit, "
    if seq == 1:
        return (f"step 1 was recorded on {n} uncommitted change{'' if n == 1 else 's'}{_named(changed)}: {head}so it "
                "refuses this packet (UNRUNNABLE) — commit them and record again, or replay with "
                "--checkout <the commit that holds them>")
    try:
        tracked = set(git(["ls-files", "-z", "--", *changed[:1000]], root).decode("utf-8", "replace").split("\0"))
    except PacketError:
        return None
    edited = [p for p in changed if p in tracked]
    if not edited:
        return None
    return (f"step {seq} was recorded with {len(edited)} committed file{'' if len(edited) == 1 else 's'} changed"
            f"{_named(edited)}: {head}so it holds the change only if an earlier recorded step made it — an edit "
            "by hand or by an agent's file-edit tool is not replayed: commit before recording the next step")


def _log_problem(log_path: Path) -> str | None:
    """What is wrong with an existing log the step will be appended to — a malformed line (a
    replay would refuse the log), or damage its chain shows (lines removed, renumbered, edited,
    its end cut off) — or ``None``."""
    if not log_path.is_file():
        return None
    try:
        log = read_log(log_path)
    except PacketLogError as exc:
        return (f"{exc}. The step is appended anyway, but replay and the claims linter refuse this log "
                f"until that line is fixed")
    if log.chain_findings:
        return ("the log's chain is broken: " + "; ".join(log.chain_messages()) + ". The step is appended, "
                "and the claims linter and replay fail on the damage")
    return None


def _run_interruptible(command, cwd: Path, shell: str | None, env: dict[str, str],
                       tee: BinaryIO | None, pipefail: bool = False) -> Captured:
    """Run the command; a Ctrl-C goes to the command (same process group), not the recorder,
    so the step is still recorded with the command's own exit code."""
    previous = None
    try:
        previous = signal.signal(signal.SIGINT, lambda *_: None)
    except ValueError:  # not the main thread
        previous = None
    try:
        return run_merged(command, cwd, shell=shell, tee=tee, env=env, pipefail=pipefail)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
