"""The replayer: re-run a session log in a clean checkout (a throwaway clone) and compare, step by step.

:func:`replay` makes a throwaway clone of the repository checked out at the recorded commit (or
``checkout``; :func:`~.gitstate.temporary_clone`: it shares no config, refs or hooks with the
repository, so what a step does to git there stays there; of the repository's own config only its
line-end settings are carried over, and filters and the like it sets are named in the warnings,
never run: :func:`~.gitstate.local_config_not_carried`; the line-end settings the clone then has,
carried or the user's own, are recorded in the verdict: :attr:`PacketVerdict.line_ends`),
re-runs every step in its recorded working directory with a timeout, captures the merged
output exactly as the recorder did, redacts and normalizes it with the rules found in the
worktree, and compares the exit code and ``out_sha``.  The clone is always removed.

Verdicts (:class:`PacketVerdict`): ``PASS`` (every step matched, exit 0), ``DIVERGED`` (k of n
steps differ or could not be compared, or a packet-level problem such as an edited stored
output, a chained log whose chain shows damage or, with ``require_head``, a PR head that is not
the last recorded state — exit 1),
``UNRUNNABLE`` (the log is empty, malformed or inconsistent — a ``cmd`` that is not what runs,
a clean step whose tree is not its commit's, a ``cwd`` outside the tree, an ``excluded`` path
other than the log and its output folder —, a commit is unknown,
a command holds a secret that cannot be restored (unless ``skip_secret_steps``: the step is then
not run, and diverges), or the recording was made on uncommitted
changes that the replayed tree does not hold — exit 2).  A step may have a non-zero exit: it
matches when the replay exits the same way.

Which state is replayed
-----------------------
* Without ``checkout``: the first step's recorded commit.  When a later step was recorded on a
  different commit (a commit was made between steps), the worktree is moved to it first
  (``git checkout --detach``, keeping files earlier steps produced).
* With ``checkout=REF``: every step runs on ``REF``; recorded commits are not followed.

Before the first step the worktree's tree digest is compared with the recorded one.  If they
differ and the first step was recorded on a *dirty* tree, the replay refuses (UNRUNNABLE) —
the recorded evidence depends on changes nobody committed — unless ``allow_dirty`` is set, in
which case it warns and runs.  If they differ but the recording was clean, the replayed ref
simply holds other files (``--checkout``): a warning, not a refusal.  Before each later step the
digest is compared again; the first step where the replay falls out of step with the
recording gets a note, once (:func:`_drift_note`).

After the last step of a replay of the recorded commits, the state it ran on is compared with
the PR head (``HEAD``; with ``checkout`` every step ran on the ref itself): a head holding other
files is a loud warning, and with ``require_head`` a
``DIVERGED`` verdict (see :func:`_check_head`).
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from fnmatch import fnmatchcase
from typing import Callable, Mapping, Sequence

from .capture import SHELLS, run_merged
from .errors import PacketError, PacketLogError, RulesError
from .gitstate import (TreeState, checkout as git_checkout, clean_git_env, commit_exists, commit_state,
                       differing_paths, entries_state, git, line_end_config, local_config_not_carried, repo_root,
                       resolve_commit, temporary_clone, tree_state)
from .log import ChainFinding, LogStep, outputs_dir_for, read_log
from .normalize import ALTERED_LIMIT, BUILTIN_VERSION, Rule, RuleSet, decode_output, load_rules, out_sha
from .record import excluded_paths
from .redact import Redactor, redact_command, secret_advice

__all__ = ["StepResult", "PacketVerdict", "replay", "line_end_words", "VERDICTS", "DIFF_LINES"]

#: The three verdicts and their exit codes.
VERDICTS = {"PASS": 0, "DIVERGED": 1, "UNRUNNABLE": 2}

#: At most this many lines of unified diff are kept per step.
DIFF_LINES = 200


@dataclass
class StepResult:
    """One replayed step.

    Attributes:
        seq, cmd, cwd, line_no: from the log (``line_no`` 1-based); ``cmd`` as it may be shown
            (:func:`~.redact.redact_command`: a log from an older recorder may hold a password).
        argv, shell: what the replay runs — the argument list (shown redacted like ``cmd``), or the
            shell a ``cmd`` shell line runs in (from the log; checked against ``cmd`` before
            anything runs).
        status: ``ok``, ``DIVERGED``, or ``UNCHECKED`` (the exit code matched but the output
            could not be compared: a project rule replaced all of it).
        expected_exit / exit: recorded and replayed exit codes (``exit`` None: timed out, or not run
            when ``duration_ms`` is None too).
        expected_sha / out_sha: recorded and replayed normalized-output SHA-256 (hex).
        duration_ms: replay run time in ms.
        reasons: why the step diverged (empty when ok).
        notes: things that did not decide the step but a reviewer should see.
        diff: unified diff recorded → replayed normalized output, when the recording stored it.
        output: the replayed normalized output.
        fired: the normalization rules that changed the replayed output (built-in and project).
        project_fired: those of them that are project rules (from the replayed tree).
        stored_edited: the step's stored output does not hash to its ``out_sha`` (it was edited
            after recording); the step itself may still match, but the packet does not PASS.
    """

    seq: int
    cmd: str
    cwd: str
    line_no: int
    status: str
    expected_exit: int
    exit: int | None
    expected_sha: str
    out_sha: str | None = None
    duration_ms: int | None = None
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    diff: str | None = None
    output: str | None = field(default=None, repr=False)
    argv: list[str] | None = None
    shell: str | None = None
    fired: list[str] = field(default_factory=list)
    project_fired: list[str] = field(default_factory=list)
    stored_edited: bool = False

    @property
    def ok(self) -> bool:
        """The step matched (same exit code and normalized output)."""
        return self.status == "ok"

    def to_dict(self) -> dict:
        """A JSON-ready dict (without ``output``)."""
        return {k: v for k, v in self.__dict__.items() if k != "output"}


@dataclass
class PacketVerdict:
    """The outcome of a replay.

    Attributes:
        verdict: ``PASS``, ``DIVERGED`` or ``UNRUNNABLE``.
        log_path: the session log.
        steps: the replayed steps (empty when UNRUNNABLE before running).
        reason: why UNRUNNABLE (names the file and line where one line is the cause).
        commit: the commit the worktree started at.
        checkout: the ref asked for with ``checkout``, if any.
        warnings: whole-replay warnings (``--allow-dirty``, a different ref's files …).
        problems: why the packet does not PASS although no step differs (the log's chain is
            broken, a stored output was edited, or the PR head is not the last recorded state and
            ``require_head`` was asked); each makes the verdict ``DIVERGED`` and is in the headline.
        head: the comparison of the last recorded state with the PR head (see :func:`replay`):
            ``{"ref", "commit", "seq", "matches", "differing", "ignored", "produced", "own", "unknown"}``
            — ``differing`` is the sorted paths that differ (``None`` when they cannot be listed),
            ``ignored`` those of them (and of ``unknown``) left out with ``head_ignore``, ``produced``
            files earlier steps made that no commit holds (not differences), ``own`` the files
            recorded steps wrote whose replayed content stood for the recorded one (it differed, see
            :func:`_drift`), ``unknown`` files changed outside recorded commands before the last
            step, whose recorded content is not known; ``None`` when no comparison was made.
        rules, rules_origin: the project normalization rules in force at the start
            (``{"name", "pattern", "replace", "matches_anything"}`` each) and where they come
            from (``pyproject.toml at commit <sha12>``); empty / ``None`` without project rules.
        log_chain: the log's chain (:attr:`~.log.SessionLog.chain`): ``chained``, ``unchained``
            or ``damaged`` (its findings are warnings and problems: the verdict is ``DIVERGED``);
            ``None`` when the log could not be read.
        line_ends: the line-end settings the replay's clone checked files out with
            (:func:`~.gitstate.line_end_config`): for each of ``core.autocrlf``, ``core.eol``,
            ``core.safecrlf`` and ``core.checkRoundtripEncoding``, ``{"value", "scope"}`` (``scope``
            ``local``: carried from the repository's own config; ``global``, ``system`` …: the
            user's or the machine's, which the clone reads as the repository does; ``None`` where
            git cannot say, before 2.26) or ``None``
            (not set: git's default); ``None`` when no clone was made.  :func:`line_end_words`
            says it in words.
    """

    verdict: str
    log_path: str
    steps: list[StepResult] = field(default_factory=list)
    reason: str | None = None
    commit: str | None = None
    checkout: str | None = None
    warnings: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    head: dict | None = None
    rules: list[dict] = field(default_factory=list)
    rules_origin: str | None = None
    log_chain: str | None = None
    line_ends: dict[str, dict | None] | None = None

    @property
    def exit_code(self) -> int:
        """0 PASS, 1 DIVERGED, 2 UNRUNNABLE."""
        return VERDICTS[self.verdict]

    @property
    def diverged(self) -> list[StepResult]:
        """The steps that did not match (``DIVERGED`` or ``UNCHECKED``)."""
        return [s for s in self.steps if not s.ok]

    @property
    def headline(self) -> str:
        """``PASS`` (``PASS (k/n outputs altered by project rules)`` when project normalization
        rules changed k outputs), ``DIVERGED (k/n steps differ; problems…)`` or
        ``UNRUNNABLE (reason)``."""
        if self.verdict == "DIVERGED":
            n = len(self.steps)
            differ = sum(1 for s in self.steps if s.status == "DIVERGED")
            unchecked = sum(1 for s in self.steps if s.status == "UNCHECKED")
            parts = [f"{differ}/{n} steps differ"] if differ else []
            parts += [f"{unchecked}/{n} steps not compared"] if unchecked else []
            return f"DIVERGED ({'; '.join(parts + self.problems)})"
        if self.verdict == "UNRUNNABLE":
            return f"UNRUNNABLE ({self.reason})"
        altered = sum(1 for s in self.steps if s.project_fired)
        return f"PASS ({altered}/{len(self.steps)} outputs altered by project rules)" if altered else "PASS"

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return {"verdict": self.verdict, "headline": self.headline, "log_path": self.log_path,
                "reason": self.reason, "commit": self.commit, "checkout": self.checkout,
                "warnings": list(self.warnings), "problems": list(self.problems), "head": self.head,
                "rules": list(self.rules), "rules_origin": self.rules_origin, "log_chain": self.log_chain,
                "line_ends": None if self.line_ends is None else {k: None if v is None else dict(v)
                                                                  for k, v in self.line_ends.items()},
                "steps": [s.to_dict() for s in self.steps]}


#: How :func:`line_end_words` names where git read a setting (``git config --show-scope``).
_SCOPE_WORDS = {"local": "the repository's own config, carried into the clone", "global": "the user's global config",
                "system": "the system's config", "worktree": "the worktree's config",
                "command": "GIT_CONFIG_* in the environment"}


def line_end_words(line_ends: Mapping[str, dict | None] | None) -> str | None:
    """:attr:`PacketVerdict.line_ends` in words: ``core.autocrlf=true (the repository's own
    config, carried into the clone), core.eol=lf (the user's global config); not set (git's
    defaults): core.safecrlf, core.checkRoundtripEncoding`` — or ``none of core.autocrlf, … is
    set (git's defaults)``; ``None`` for ``None`` (no clone made).  Values are shown as
    :func:`~.._text.one_line` writes them (a config value may hold any character)."""
    from .._text import one_line

    if line_ends is None:
        return None
    set_ = [(k, v) for k, v in line_ends.items() if v is not None]
    unset = [k for k, v in line_ends.items() if v is None]
    if not set_:
        return f"none of {', '.join(unset)} is set (git's defaults)"
    words = ", ".join(f"{k}={one_line(v['value'])} ("
                      + ("where git read it not known: git before 2.26 cannot say" if v.get("scope") is None
                         else _SCOPE_WORDS.get(v["scope"], one_line(str(v["scope"])))) + ")"
                      for k, v in set_)
    return words + (f"; not set (git's defaults): {', '.join(unset)}" if unset else "")


def _unrunnable(log_path, reason: str, **kw) -> PacketVerdict:
    return PacketVerdict("UNRUNNABLE", str(log_path), reason=reason, **kw)


def _read_stored(path: Path, expected_sha: str) -> tuple[str | None, str | None]:
    """``(text, problem)`` of a stored output: the text when it hashes to ``expected_sha``.

    A checkout that turned ``\\n`` into ``\\r\\n`` (git ``core.autocrlf``) is read back as ``\\n``.
    """
    try:
        recorded = path.read_bytes().decode("utf-8", "surrogatepass")
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"stored output {path} is unreadable: {exc}"
    for text in (recorded, recorded.replace("\r\n", "\n")):
        if out_sha(text) == expected_sha:
            return text, None
    return None, f"stored output {path} does not hash to the recorded out_sha: it was edited"


def _check_stored(s: LogStep, outputs: Path) -> tuple[str | None, str | None]:
    """``(note, problem)`` for a step's stored output ``<out_sha>.txt``: missing although the log
    marks the step ``stored`` (a note), or present — whatever ``stored`` says — and not hashing to
    ``out_sha`` (a problem: the packet shows an output that was not recorded)."""
    path = outputs / f"{s.get('out_sha')}.txt"
    if path.exists() and not path.is_file():  # (a folder or a pipe in its place: not read, not "missing")
        problem = f"stored output {path} is not a file (a folder or a pipe took its place): it was edited"
        return problem, f"step {s.seq}'s {problem}"
    if not path.is_file():
        if s.get("stored"):
            return f"the log marks this step's output stored, but {path} is missing", None
        return None, None
    _text, problem = _read_stored(path, s.get("out_sha"))
    return problem, (f"step {s.seq}'s {problem}" if problem else None)


def _other_edited_outputs(outputs: Path, named: set[str]) -> list[str]:
    """Problems for the ``*.txt`` files in ``outputs`` that no step's ``out_sha`` names and whose
    content does not hash to their name: a stored output is always ``<sha256 of it>.txt``, so
    such a file was edited (or put there) after recording, and a reviewer may read it."""
    if not outputs.is_dir():
        return []
    out = []
    for path in sorted(outputs.glob("*.txt")):
        if path.stem in named or not path.is_file():
            continue
        _text, problem = _read_stored(path, path.stem)
        if problem:
            out.append(problem.replace("the recorded out_sha", "its name") if "does not hash" in problem
                       else problem)
    return out


_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def _bytes_shown(text: str) -> str:
    """``text`` with each byte that was not UTF-8 (kept as U+DC80+byte by
    :func:`~.normalize.decode_output`) written as ``\\xNN``: shown, outputs that differ only
    in such bytes differ on screen too, and the text can be written as UTF-8 (JUnit, JSON)."""
    return _ESCAPED_BYTE.sub(lambda m: f"\\x{ord(m.group(0)) - 0xDC00:02x}", text)


def _stored_diff(outputs: Path, expected_sha: str, seq: int, replayed: str) -> tuple[str | None, str | None]:
    """``(diff, None)`` against the stored recorded output, if there is one that hashes right
    (:func:`_check_stored` reports the others)."""
    path = outputs / f"{expected_sha}.txt"
    if not path.is_file():
        return None, None
    recorded, _problem = _read_stored(path, expected_sha)
    if recorded is None:
        return None, None
    lines = list(difflib.unified_diff(_bytes_shown(recorded).split("\n"), _bytes_shown(replayed).split("\n"),
                                      f"recorded (seq {seq})", "replay", lineterm="", n=3))
    if len(lines) > DIFF_LINES:
        lines = lines[:DIFF_LINES] + [f"… diff truncated ({len(lines) - DIFF_LINES} more lines)"]
    return "\n".join(lines), None


def _command_problem(log_path: Path, s: LogStep) -> str | None:
    """Why step ``s``'s ``cmd`` is not what a replay of it would run, or ``None``.

    The recorder writes ``cmd == shlex.join(argv)`` and ``shell`` null for an argument list,
    and ``argv`` null with ``shell`` in :data:`~.capture.SHELLS` for a shell line (``cmd`` is
    then what runs).  Anything else means the line was edited: what it shows is not what runs.
    """
    argv, shell = s.get("argv"), s.get("shell")
    where = f"{log_path}:{s.line_no}: step {s.seq}"
    if argv is not None:
        if s.cmd != shlex.join(argv):
            cmd, runs = redact_command(s.cmd)[0], redact_command(shlex.join(argv))[0]
            return (f"{where}'s cmd {cmd!r} is not the command its argv runs ({runs!r}); "
                    f"the log line was edited")
        if shell is not None:
            return f"{where} has both argv and shell {shell!r}; a recorded line has one of them"
    elif shell not in SHELLS:
        return (f"{where}'s shell {shell!r} is not a shell the recorder uses ({' or '.join(SHELLS)}); "
                f"the log line was edited")
    return None


def _cwd_problem(log_path: Path, s: LogStep) -> str | None:
    """Why step ``s``'s ``cwd`` cannot be inside the replayed tree (absolute, or climbing out with
    ``..``), or ``None``.  The recorder writes a path relative to the repository root, inside it."""
    cwd = s.get("cwd")
    if cwd is None:
        return None
    if os.path.isabs(cwd) or os.path.normpath(cwd).split(os.sep)[0] == "..":
        return (f"{log_path}:{s.line_no}: step {s.seq}'s cwd {cwd!r} is outside the replayed tree (the recorder "
                f"writes a directory inside the repository): the log line was edited")
    return None


#: Placeholder kinds of a password the table of known programs found (:data:`~.redact.SECRET_ARGS`).
_TABLE_KINDS = frozenset({"password_flag", "password_arg", "secret_assignment", "url_token"})


def _secret_problem(log_path: Path, s: LogStep, missing: list[str]) -> str:
    """Why step ``s``'s command cannot be restored: literal tokens, or unset variables; for a
    password of a known program, how to record it the program's way (:func:`~.redact.secret_advice`)."""
    where = f"{log_path}:{s.line_no}: step {s.seq}"
    tokens = [m for m in missing if not m.startswith("env:")]
    names = [m[4:] for m in missing if m.startswith("env:")]
    parts = []
    advice = secret_advice(s.cmd) if tokens else []
    if advice:
        parts.append(f"{where}'s command line held a literal password ({', '.join(tokens)}), redacted at record "
                     f"time; it cannot be replayed. Re-record the step with the password in an environment "
                     f"variable: {'; '.join(advice)}")
    if tokens and (not advice or set(tokens) - _TABLE_KINDS):
        parts.append(f"{where}'s command line held a literal token ({', '.join(tokens)}), redacted at record "
                     f"time; it cannot be replayed. Re-record the step with the secret in an environment "
                     f"variable (for example --token \"$MY_TOKEN\")")
    if names:
        parts.append(f"{where}'s command held the value of {', '.join(names)} (redacted as "
                     f"{', '.join('env:' + n for n in names)}); set {' and '.join(names)} in the environment "
                     f"(at least 6 characters) to replay it")
    return "; ".join(parts)


def _excluded_problem(log_path: Path, s: LogStep, allowed: tuple[str, ...]) -> str | None:
    """Why step ``s``'s ``excluded`` list is not what the recorder writes, or ``None``.

    The recorder leaves out of ``tree`` only the log and its output folder (``allowed``, worked
    out from where the log and the output folder are, never read from the log).  Any other path
    there would go unchecked by every digest comparison, so the log line was edited.
    """
    other = [e for e in s.get("excluded") or () if e.strip("/") not in ("", ".") and e.strip("/") not in allowed]
    if not other:
        return None
    return (f"{log_path}:{s.line_no}: step {s.seq}'s excluded list names {', '.join(map(repr, other))}, which "
            f"{'is' if len(other) == 1 else 'are'} neither the log nor its output folder "
            f"({', '.join(allowed) or 'both outside the repository'}); the recorder leaves out nothing else, "
            f"so the log line was edited (or the log was moved: replay it where it was recorded)")


def _check_steps(log_path: Path, steps: tuple[LogStep, ...], redactor: Redactor,
                 repo: Path, follow_commits: bool,
                 allowed_excluded: tuple[str, ...] = ()
                 ) -> tuple[list[str], dict[int, object], dict[int, str]]:
    """Pre-flight: versions, commands that are what they show and can be restored, known commits,
    ``excluded`` lists that name only the log and its output folder (``allowed_excluded``), and
    clean steps whose tree digest is their commit's.

    Returns ``(problems, commands, secrets)``: one message per problem (each naming the file and
    line; any problem makes the replay UNRUNNABLE), the command to run per seq, and per seq of a
    step whose command cannot be restored (a secret) why, with what to do (a problem too, unless
    those steps are skipped).
    """
    problems: list[str] = []
    commands: dict[int, object] = {}
    secrets: dict[int, str] = {}
    digests: dict = {}
    for s in steps:
        norm = str(s.get("norm"))
        if norm.split("+", 1)[0] != BUILTIN_VERSION:
            problems.append(f"{log_path}:{s.line_no}: step {s.seq} was normalized with rules version {norm}; "
                            f"this replaybook has version {BUILTIN_VERSION}, whose hashes differ; replay it "
                            f"with the replaybook that recorded it, or record the session again")
        bad = (_command_problem(log_path, s) or _cwd_problem(log_path, s)
               or _excluded_problem(log_path, s, allowed_excluded))
        if bad:
            problems.append(bad)
            continue
        argv = s.get("argv")
        if argv is not None:
            restored = [redactor.restore(a) for a in argv]
            missing = sorted({m for _, ms in restored for m in ms})
            command: object = [t for t, _ in restored]
        else:
            text, missing = redactor.restore(s.cmd)
            command = text
        if missing:
            secrets[s.seq] = _secret_problem(log_path, s, missing)
        else:
            commands[s.seq] = command
        if follow_commits:
            if s.get("commit") is None:
                problems.append(f"{log_path}:{s.line_no}: step {s.seq} recorded no commit (recorded outside a "
                                f"git repository or before the first commit); replay with --checkout REF")
            elif not commit_exists(repo, s.get("commit")):
                problems.append(f"{log_path}:{s.line_no}: step {s.seq}'s commit {s.get('commit')} is not in "
                                f"{repo} (fetch it, or replay with --checkout REF)")
                continue
        bad = _clean_tree_problem(log_path, s, repo, digests)
        if bad:
            problems.append(bad)
    return problems, commands, secrets


def _clean_tree_problem(log_path: Path, s: LogStep, repo: Path, digests: dict) -> str | None:
    """A step recorded clean (``dirty`` false) ran on exactly its commit's files, so its ``tree``
    must be that commit's digest; when it is not, the log is inconsistent (it was edited).
    ``digests`` caches ``(commit, excluded) -> digest``."""
    commit, tree = s.get("commit"), s.get("tree")
    if s.get("dirty") is not False or not commit or not tree or not commit_exists(repo, commit):
        return None
    key = (commit, tuple(s.get("excluded") or ()))
    if key not in digests:
        digests[key] = commit_state(repo, commit, key[1]).digest
    if digests[key] == tree:
        return None
    return (f"{log_path}:{s.line_no}: step {s.seq} is recorded as run on a clean checkout of {commit[:12]}, but its "
            f"tree digest is not that commit's files: the log is inconsistent (was it edited?)")


def _chain_problem(findings: Sequence[ChainFinding], log_path: str | os.PathLike) -> str:
    """One problem for all of a log's chain breaks: "the log's chain is broken: lines removed
    (session.jsonl:1, 5), renumbered (session.jsonl:1, 2, 3, 4)" — each kind once, with the lines
    that show it, in the order the kinds first appear."""
    lines: dict[str, list[int]] = {}
    for f in findings:
        lines.setdefault(f.kind.replace("_", " "), []).append(f.line_no)
    breaks = [f"{kind} ({log_path}:{', '.join(str(n) for n in dict.fromkeys(nos))})" for kind, nos in lines.items()]
    return "the log's chain is broken: " + ", ".join(breaks)


def replay(log_path: str | os.PathLike, *, repo: str | os.PathLike | None = None, checkout: str | None = None,
           timeout: float = 600.0, allow_dirty: bool = False, outputs_dir: str | os.PathLike | None = None,
           env: Mapping[str, str] | None = None, require_head: bool = False,
           head_ignore: Sequence[str] = (), skip_secret_steps: bool = False,
           on_step: Callable[[StepResult], None] | None = None,
           on_start: Callable[[PacketVerdict], None] | None = None) -> PacketVerdict:
    """Replay a session log in a clean checkout in a throwaway clone and judge it.

    Args:
        log_path: the session log.
        repo: the repository to take commits from (default: the one containing the current
            directory, else the one containing the log).
        checkout: replay every step on this ref instead of the recorded commit(s).
        timeout: seconds each step may run (its process group is killed after).
        allow_dirty: run even when the recording's uncommitted changes are not in the replayed
            tree (warns instead of refusing).
        outputs_dir: where stored outputs are (default ``session.outputs/`` beside the log),
            for diffs.
        env: environment for the steps (default ``os.environ``, minus GIT_DIR & co.); its
            secret-named variables restore redacted command secrets and are redacted again
            from the output.
        require_head: the strict mode: make it a failing verdict (``DIVERGED``, with the reason in
            ``problems``) when the PR head does not hold the files the last recorded step ran
            on, or when seq has gaps (lines were removed from an unchained log).  Without it both
            are warnings.  Damage a chained log shows (lines removed, renumbered or edited, its
            end cut off) fails the replay either way.
        head_ignore: paths (or ``fnmatch`` patterns, or folders) whose differences between the
            last recorded state and the PR head are accepted, e.g. ``PR_BODY.md`` written after
            the last step.  The log and its output folder are always left out.
        skip_secret_steps: replay the other steps when some step's command held a secret that
            cannot be restored (a literal password, or an unset variable), instead of refusing
            the whole log (UNRUNNABLE): such a step is not run, and diverges, so the verdict is
            at best ``DIVERGED``.
        on_step: called with each :class:`StepResult` as soon as it is known (the CLI prints).
        on_start: called once with the (still empty) verdict when the worktree is ready.

    Returns:
        :class:`PacketVerdict`.  Every problem with the log or the repository is an
        ``UNRUNNABLE`` verdict with a reason naming the file and line, not an exception.
    """
    log_path = Path(log_path)
    env = clean_git_env(dict(os.environ if env is None else env))
    try:
        log = read_log(log_path, for_replay=True)
    except PacketLogError as exc:
        return _unrunnable(log_path, str(exc))
    steps = log.steps
    if not steps:
        return _unrunnable(log_path, f"{log_path}: the log has no steps")
    first = steps[0]
    repo_path = Path(repo) if repo else (repo_root(Path.cwd()) or repo_root(log_path.resolve().parent))
    if repo_path is None or repo_root(repo_path) is None:
        return _unrunnable(log_path, f"{repo_path or Path.cwd()} is not inside a git repository (use --repo DIR)")
    redactor = Redactor.from_env(env)
    outputs = Path(outputs_dir) if outputs_dir else outputs_dir_for(log_path)
    allowed = tuple(dict.fromkeys(excluded_paths(repo_root(repo_path), log_path, outputs,
                                                 outputs_dir_for(log_path))))
    problems, commands, secrets = _check_steps(log_path, steps, redactor, repo_path,
                                               follow_commits=checkout is None, allowed_excluded=allowed)
    if problems:
        return _unrunnable(log_path, "; ".join(problems + list(secrets.values())))
    if secrets and not skip_secret_steps:
        return _unrunnable(log_path, "; ".join(secrets.values()) + ". " + _skip_hint(steps, secrets))
    try:
        target = resolve_commit(repo_path, checkout) if checkout else first.get("commit")
    except PacketError as exc:
        return _unrunnable(log_path, str(exc), checkout=checkout)
    verdict = PacketVerdict("PASS", str(log_path), commit=target, checkout=checkout,
                            warnings=log.chain_messages() + log.gap_warnings(), log_chain=log.chain)
    # what the repository's own config does to its files that the clean clone leaves out (filters)
    verdict.warnings += local_config_not_carried(repo_path)
    # a chained log with lines removed, renumbered, edited or cut off is not evidence of what ran
    if log.chain_findings:
        verdict.problems.append(_chain_problem(log.chain_findings, log_path))
    if require_head:  # the strict mode: gaps in seq of an unchained log too
        named = {f.line_no for f in log.chain_findings}
        for a, b, s in log.gaps():
            if s.line_no in named:
                continue
            which = f"seq {a}" if a == b else f"seq {a} to {b}"
            verdict.problems.append(f"{which} missing from the log before step {s.seq} ({log_path}:{s.line_no})")
    try:
        with temporary_clone(repo_path, target) as wt:
            verdict.line_ends = line_end_config(wt)  # (what its checkouts write line ends by)

            def rules_at(commit: str) -> RuleSet:
                return load_rules(wt, label=f"pyproject.toml at commit {commit[:12]}")

            def first_rules(commit: str) -> RuleSet:
                """The rules in force at the first step (RulesError: its pyproject.toml is malformed)."""
                got = rules_at(commit)
                verdict.rules_origin = got.origin
                verdict.rules = [_rule_dict(r) for r in got.project_rules]
                return got

            start = target
            try:
                rules = first_rules(start)
                what = f"{checkout} ({target[:12]})" if checkout else f"a clean checkout of {target[:12]}"
                state = tree_state(wt, first.get("excluded") or (), env=env)
                if (first.get("tree") is not None and state.digest != first.get("tree") and first.get("dirty")
                        and checkout is None):
                    start = _commit_holding(wt, repo_path, first, state) or target
                    if start != target:  # the uncommitted changes were committed afterwards: replay on that
                        git_checkout(wt, start)
                        state = tree_state(wt, first.get("excluded") or (), env=env)
                        verdict.warnings.append(_adopted_words(first, start))
                        rules = first_rules(start)
            except RulesError as exc:
                return _unrunnable(log_path, f"the replayed tree's {exc}", commit=start, checkout=checkout)
            if first.get("tree") is None:
                verdict.warnings.append("the log records no tree digest: the replayed files cannot be "
                                        "checked against the recorded ones")
            elif state.digest != first.get("tree"):
                if first.get("dirty"):
                    msg = (f"{log_path}:{first.line_no}: step {first.seq} was recorded on a working tree with "
                           f"{first.get('dirty_files')} uncommitted change(s); {what} does not hold them")
                    if not allow_dirty:
                        return _unrunnable(
                            log_path, msg + ". Commit them and replay with --checkout <that commit>, "
                                            "or pass --allow-dirty to replay anyway",
                            commit=target, checkout=checkout)
                    verdict.warnings.append(msg + "; replaying anyway (--allow-dirty): divergence may come "
                                                  "from those changes")
                else:
                    verdict.warnings.append(f"{what} holds different files than the recorded commit "
                                            f"{str(first.get('commit'))[:12]}; divergence may come from them")
            if on_start:
                on_start(verdict)
            prev_commit = first.get("commit")
            last_state = last_drift = None
            # a replay that starts on the recorded files makes every uncommitted change it holds itself
            clean_start = first.get("tree") is not None and state.digest == first.get("tree")
            kind = "same" if first.get("tree") is None or state.digest == first.get("tree") else "drift"
            for i, s in enumerate(steps):
                res, before, rules = _replay_step(s, i, wt, commands.get(s.seq), prev_commit, checkout is None,
                                                  rules, rules_at, redactor, env, timeout, outputs, state,
                                                  skip=secrets.get(s.seq), repo=repo_path)
                drift = None
                if before is not None and s.get("tree"):
                    matched = before.digest == s.get("tree")
                    drift = None if matched else _drift(s, before, clean_start)
                    now = "same" if matched else ("own" if drift and drift.explained else "drift")
                    if i > 0 and now != "same" and now != kind:  # said where the replay loses step, once
                        res.notes.insert(1 if res.notes[:1] and res.notes[0].startswith("moved") else 0,
                                         _drift_note(s, drift))
                    kind = now
                prev_commit = s.get("commit")
                note, problem = _check_stored(s, outputs)
                if note:
                    res.notes.append(note)
                if problem:
                    res.stored_edited = True
                if problem and problem not in verdict.problems:  # steps may share an output
                    verdict.problems.append(problem)
                verdict.steps.append(res)
                if on_step:
                    on_step(res)
                last_state, last_drift = before, drift
            verdict.problems += _other_edited_outputs(outputs, {str(s.get("out_sha")) for s in steps})
            if checkout is None:  # with --checkout every step ran on the ref itself
                _check_head(verdict, log_path, steps[-1], last_state, prev_commit, repo_path, require_head,
                            tuple(head_ignore), last_drift)
    except PacketError as exc:
        return _unrunnable(log_path, str(exc), steps=verdict.steps, commit=target, checkout=checkout,
                           warnings=verdict.warnings)
    verdict.verdict = "DIVERGED" if verdict.diverged or verdict.problems else "PASS"
    return verdict


def _skip_hint(steps: Sequence[LogStep], secrets: Mapping[int, str]) -> str:
    """How to go on when the steps ``secrets`` names cannot be restored: whether the others can run."""
    listed = ", ".join(map(str, sorted(secrets)))
    if len(secrets) == len(steps):
        return "Every step holds such a secret: none can be replayed until the steps are recorded again that way"
    return (f"The other {len(steps) - len(secrets)} step(s) can be replayed: --skip-secret-steps replays them and "
            f"marks step(s) {listed} not run (the verdict is then DIVERGED at best)")


@dataclass(frozen=True)
class _Drift:
    """How the replayed files before a step differ from the recorded ones (:func:`_drift`).

    Attributes:
        own: uncommitted paths both hold: written by recorded steps, their replayed content stands
            for the recorded one (a log with timings differs run to run).
        outside: paths the recording held changed and the replay does not: changed outside
            recorded commands; what the step ran on there is not known.
        undone: paths the replay's steps changed that the recording held as committed: restored or
            removed outside recorded commands (the recorded content is the commit's).
    """

    own: tuple[str, ...]
    outside: tuple[str, ...] = ()
    undone: tuple[str, ...] = ()
    counted: bool = False  # told from ``dirty_files`` alone (a log without ``dirty_paths``)

    @property
    def explained(self) -> bool:
        """The difference is only the content of files recorded steps wrote."""
        return bool(self.own) and not self.outside and not self.undone

    @property
    def known(self) -> bool:
        """The recorded files can be listed from the replayed ones (see :func:`_check_head`)."""
        return bool(self.own or self.outside or self.undone)


def _drift(s: LogStep, before: TreeState, clean_start: bool) -> _Drift | None:
    """Which paths make the replayed files before step ``s`` (``before``) other than the recorded
    ones (``tree``), or ``None`` when that cannot be told.

    A replay that started on the recorded files holds no uncommitted change it did not make
    itself: each of ``before.changed`` was written by a replayed step.  The step's
    ``dirty_paths`` name the uncommitted paths of the recording, so the two sets say which
    files are the replay's own (in both), which were changed outside recorded commands, and
    which were restored by hand.  A log without ``dirty_paths`` (an older recorder, or more than
    :data:`~.record.MAX_DIRTY_PATHS`) tells only how many: the difference is then taken to be in
    the replay's own files when the counts agree.  A hand edit of a file that a step also wrote
    cannot be told apart either way.
    """
    if not clean_start:
        return None
    paths = s.get("dirty_paths")
    if isinstance(paths, list):
        recorded, replayed = set(paths), set(before.changed)
        return _Drift(tuple(sorted(recorded & replayed)), tuple(sorted(recorded - replayed)),
                      tuple(sorted(replayed - recorded)))
    if s.get("dirty") and before.changed and s.get("dirty_files") == len(before.changed):
        return _Drift(before.changed, counted=True)
    return None


def _listed(paths: Sequence[str], limit: int = 5) -> str:
    return ", ".join(paths[:limit]) + (" …" if len(paths) > limit else "")


def _drift_note(s: LogStep, drift: _Drift | None = None) -> str:
    """The note for the first step before which the replayed files are not the recorded ones."""
    if drift is not None and drift.explained:
        return (f"step {s.seq} was recorded with {len(drift.own)} uncommitted change(s), and the replay holds "
                f"{'as many' if drift.counted else 'the same'}, written by recorded steps ({_listed(drift.own)}): their content is the replay's own and may "
                f"differ from the recording's (output that changes run to run, such as timings in a log)")
    if drift is not None and (drift.outside or drift.undone):
        parts = []
        if drift.outside:
            parts.append(f"step {s.seq} was recorded with {len(drift.outside)} uncommitted change(s) that the replay "
                         f"does not hold (files changed outside recorded commands?): {_listed(drift.outside)}")
        if drift.undone:
            parts.append(f"{'it' if parts else f'step {s.seq}'} was recorded without {len(drift.undone)} change(s) "
                         f"recorded steps made in the replay (files restored or removed outside recorded "
                         f"commands?): {_listed(drift.undone)}")
        return "; ".join(parts) + "; commit between steps"
    if s.get("dirty"):
        return (f"step {s.seq} was recorded with {s.get('dirty_files')} uncommitted change(s) that the replay "
                f"does not hold (files changed outside recorded commands?); commit between steps")
    return "files differ from the recorded state before this step (changed outside recorded commands?)"


def _ignored(path: str, patterns: tuple[str, ...]) -> bool:
    return any(path == p.strip("/") or path.startswith(p.strip("/") + "/") or fnmatchcase(path, p)
               for p in patterns)


def _check_head(verdict: PacketVerdict, log_path: Path, last: LogStep, before_last: TreeState | None,
                base: str | None, repo: Path, require: bool, ignore: tuple[str, ...],
                drift: _Drift | None = None) -> None:
    """Compare the state the last recorded step ran on with the PR head (``HEAD``).

    Only for a replay of the recorded commits: with ``checkout`` every step runs on the ref.

    The recorded commits of earlier steps do not matter: a packet records the work as it went.
    What a reviewer merges is the head, so the last recorded state must be the head's files
    (the log and its output folder aside).  The files can be listed when the replay reached
    the recorded ``tree`` before the last step, when the last step was recorded clean on a
    commit, or when ``drift`` (:func:`_drift`) says where the replayed files differ from the
    recorded ones: a file recorded steps wrote (``own``) is the replay's, and stands for the
    recorded one — exactly, when putting the head's version of those files in its place gives
    the recorded digest; a file restored outside recorded commands (``undone``) was the commit's;
    a file changed outside recorded commands (``outside``) has no known recorded content, so it
    is named as such unless ``ignore`` accepts it.  Files earlier steps produced (in that state,
    but neither in ``base`` — the commit the worktree sat on — nor in the head) are not
    differences: a replay makes them again.  Sets ``verdict.head``; appends a warning, and a
    problem when ``require``.
    """
    ref = "HEAD"
    if last.get("tree") is None:
        verdict.warnings.append(f"the last step (seq {last.seq}) records no tree digest: the PR head {ref} "
                                f"cannot be compared with it")
        if require:
            verdict.problems.append(f"the PR head {ref} cannot be compared with the last recorded state")
        return
    excluded = last.get("excluded") or ()
    commit = resolve_commit(repo, ref)
    head = commit_state(repo, commit, excluded)
    base_files = commit_state(repo, base, excluded).entries if base and commit_exists(repo, base) else {}
    recorded = before_last if before_last is not None and before_last.digest == last.get("tree") else None
    clean_commit = last.get("commit") if last.get("dirty") is False else None
    if recorded is None and clean_commit and commit_exists(repo, clean_commit):
        candidate = commit_state(repo, last.get("commit"), excluded)
        recorded = candidate if candidate.digest == last.get("tree") else None
    own: list[str] = []
    outside: tuple[str, ...] = ()
    if recorded is None and drift is not None and drift.known and before_last is not None:
        entries = dict(before_last.entries)
        for p in drift.undone:  # the recording held the commit's version
            if p in base_files:
                entries[p] = base_files[p]
            else:
                entries.pop(p, None)
        outside = drift.outside
        for p in outside:  # not known: compared below by name only
            entries.pop(p, None)
        recorded, own = entries_state(entries), list(drift.own)
        if drift.own and not outside:
            swapped = dict(entries)
            for p in drift.own:  # the head's version of each file the replay wrote itself, if it holds one
                if p in head.entries:
                    swapped[p] = head.entries[p]
                else:
                    swapped.pop(p, None)
            candidate = entries_state(swapped)
            if candidate.digest == last.get("tree"):
                recorded, own = candidate, []
    differing = produced = None
    if recorded is not None:
        differing, produced = [], []
        for p in differing_paths(recorded, head):
            if p in outside:
                continue
            made = p in recorded.entries and p not in head.entries and p not in base_files
            (produced if made else differing).append(p)
    ignored = sorted(p for p in [*(differing or ()), *outside] if _ignored(p, ignore))
    unknown = [p for p in outside if p not in ignored]
    shown = [p for p in differing or () if p not in ignored]
    matches = head.digest == last.get("tree") or (differing is not None and not shown and not unknown)
    verdict.head = {"ref": ref, "commit": commit, "seq": last.seq, "matches": matches,
                    "differing": differing, "ignored": ignored, "produced": produced, "own": sorted(own),
                    "unknown": unknown}
    if matches:
        return
    if differing is None:
        listed = ("the files cannot be listed (the last recorded state was not reproduced), but their digests "
                  "differ" + ("; --head-ignore applies only to files that can be listed" if ignore else ""))
    else:
        parts = [f"{len(shown)} file(s) differ: {_listed(shown, 10)}"] if shown else []
        if unknown:
            parts.append(f"{len(unknown)} file(s) were changed outside recorded commands before it, so what it ran "
                         f"on there is not known: {_listed(unknown, 10)}")
        listed = "; ".join(parts)
    verdict.warnings.append(
        f"THE PR HEAD IS NOT WHAT THE PACKET TESTED: {ref} ({commit[:12]}) holds other files than the last "
        f"recorded step (seq {last.seq}, {log_path}:{last.line_no}) ran on; {listed}. The replay does not cover "
        f"these changes: replay with --checkout {ref}, or record a step on the head"
        + ("" if require else "; --require-head makes this a failing verdict"))
    if require:
        verdict.problems.append(f"the PR head {ref} ({commit[:12]}) is not the last recorded state: {listed}")


def _rule_dict(r: Rule) -> dict:
    return {"name": r.name, "pattern": r.pattern, "replace": r.replace, "matches_anything": r.matches_anything()}


#: how many commits after the replayed one are searched for one holding a step's uncommitted changes
MAX_LATER_COMMITS = 50


def _commit_holding(wt: Path, repo: Path, s: LogStep, before: TreeState) -> str | None:
    """A commit made after the one the worktree is on (on the way to the repository's ``HEAD``,
    the PR head; the first :data:`MAX_LATER_COMMITS`, oldest first) whose files are exactly what
    step ``s`` ran on: checking it out over the worktree — files tracked there replaced, the
    files earlier steps wrote kept — gives the step's recorded ``tree``.  The author recorded on
    uncommitted changes and committed them afterwards (edit, record, commit): that commit is the
    state to replay.  ``None`` when there is none, or git cannot tell."""
    excluded = s.get("excluded") or ()
    try:
        here = git(["rev-parse", "HEAD"], wt).decode().strip()
        head = git(["rev-parse", "HEAD"], repo).decode().strip()
        if not here or here == head:
            return None
        later = git(["rev-list", "--reverse", "--ancestry-path", f"{here}..{head}"], repo).decode().split()
        tracked = commit_state(repo, here, excluded).entries
    except PacketError:
        return None
    written = {p: e for p, e in before.entries.items() if p not in tracked}  # (earlier steps' own files)
    for c in later[:MAX_LATER_COMMITS]:
        try:
            files = commit_state(repo, c, excluded).entries
        except PacketError:
            return None
        if entries_state({**written, **files}).digest == s.get("tree"):
            return c
    return None


def _rules_moved(res: StepResult, rules: RuleSet, moved: RuleSet) -> RuleSet:
    """``moved``, the rules of the commit the worktree moved to, with a note on ``res`` when its
    project rules are not ``rules``'."""
    if moved.project_rules != rules.project_rules:
        listed = ", ".join(r.name for r in moved.project_rules) or "none"
        res.notes.append(f"project normalization rules from here on ({moved.origin or 'no pyproject.toml'}): "
                         f"{listed}")
    return moved


def _adopted_words(s: LogStep, commit: str) -> str:
    """The note of a step replayed on the later commit that holds its uncommitted changes."""
    n = s.get("dirty_files")
    what = f"{n} uncommitted change{'' if n == 1 else 's'}" if isinstance(n, int) else "uncommitted changes"
    return (f"step {s.seq} was recorded on {what} that commit {commit[:12]}, made afterwards, holds exactly: "
            f"replayed on {commit[:12]}")


def _replay_step(s: LogStep, index: int, wt: Path, command, prev_commit: str | None, follow: bool,
                 rules: RuleSet, rules_at: Callable[[str], RuleSet], redactor: Redactor, env: dict[str, str],
                 timeout: float, outputs: Path,
                 first_state: TreeState, skip: str | None = None,
                 repo: Path | None = None) -> tuple[StepResult, TreeState | None, RuleSet]:
    """Run one step; returns its result, the worktree's state just before it ran (``None`` when
    the step could not start) and the rules in force after it (re-read with ``rules_at`` when
    the worktree moves to another commit).  ``first_state`` is the state for step 0, taken by
    the caller.  ``skip``: why the step is not run (its command cannot be restored); it then
    diverges, after the worktree moved to its commit.

    Raises:
        RulesError: the pyproject.toml of a commit the worktree moved to is malformed.
    """
    before: TreeState | None = first_state if index == 0 else None
    cwd_rel = s.get("cwd") or "."
    shown_cmd, shown_argv = redact_command(s.cmd, s.get("argv"))  # what it runs is `command`
    res = StepResult(s.seq, shown_cmd, cwd_rel, s.line_no, "ok", s.exit, None, s.get("out_sha"),
                     argv=shown_argv, shell=s.get("shell"))
    commit = s.get("commit")
    if follow and index > 0 and commit and commit != prev_commit:
        try:
            git_checkout(wt, commit)
            res.notes.append(f"moved the checkout to the recorded commit {commit[:12]}")
        except PacketError as exc:
            res.status = "DIVERGED"
            res.reasons.append(f"could not move to the recorded commit {commit[:12]}: {exc}")
            return res, None, rules
        rules = _rules_moved(res, rules, rules_at(commit))
    if index > 0:
        before = tree_state(wt, s.get("excluded") or (), env=env)
        if (follow and repo is not None and s.get("dirty") and s.get("tree") and before.digest != s.get("tree")):
            later = _commit_holding(wt, repo, s, before)
            if later is not None:  # recorded on edits committed afterwards: replayed on that commit
                try:
                    git_checkout(wt, later)
                except PacketError:
                    later = None
                if later is not None:
                    res.notes.append(_adopted_words(s, later))
                    before = tree_state(wt, s.get("excluded") or (), env=env)
                    rules = _rules_moved(res, rules, rules_at(later))
    if skip:
        res.status = "DIVERGED"
        res.reasons.append("not run (--skip-secret-steps): its command held a secret that cannot be restored")
        res.notes.append(skip)
        return res, before, rules
    unset = [k[4:] for k in s.get("redacted") or () if k.startswith("env:") and k[4:] not in redactor.secrets]
    if unset:
        res.notes.append(f"the recording redacted the value of {', '.join(unset)} from this step, and "
                         f"{' and '.join(unset)} {'is' if len(unset) == 1 else 'are'} not set here (or shorter "
                         f"than 6 characters): the output cannot match; set {'it' if len(unset) == 1 else 'them'}")
    if s.get("norm") != rules.version:
        res.notes.append(f"normalization rules are {rules.version} here, {s.get('norm')} when recorded")
    cwd = (wt / cwd_rel).resolve()
    if not (cwd == wt.resolve() or wt.resolve() in cwd.parents):  # e.g. a symlink pointing out
        res.status = "DIVERGED"
        res.reasons.append(f"not run: the recorded working directory {cwd_rel!r} is outside the replayed tree")
        return res, before, rules
    if not cwd.is_dir():
        res.status = "DIVERGED"
        res.reasons.append(f"not run: the recorded working directory {cwd_rel!r} does not exist in the replayed tree")
        return res, before, rules
    cap = run_merged(command, cwd, shell=s.get("shell"), timeout=timeout, env=env, new_session=True,
                     pipefail=s.get("pipefail") is True)  # as recorded: older logs ran without it
    res.exit = cap.exit
    res.duration_ms = cap.duration_ms
    raw_out = decode_output(cap.output)  # bytes that are not UTF-8 kept apart, as on record
    shown = command if isinstance(command, str) else shlex.join(command)
    learned = redactor.learn(shown, *([] if isinstance(command, str) else command), raw_out)
    norm = rules.normalize(learned.redact(raw_out).text, wt)  # redacted as the recorder did
    res.output = norm.text
    res.out_sha = norm.sha256
    res.fired = list(norm.fired)
    project = [n for n in norm.fired if n in {r.name for r in rules.project_rules}]
    res.project_fired = project
    if project:
        res.notes.append(f"project rule(s) changed this output: {', '.join(project)}")
    if cap.timed_out:
        res.reasons.append(f"timed out after {timeout:g} s")
    elif cap.exit != s.exit:
        res.reasons.append(f"exit {cap.exit}, recorded {s.exit}")
    if norm.swallowed:
        # the rule erased the output: equal hashes would prove nothing
        res.reasons.append(f"output not compared: project rule(s) {', '.join(map(repr, norm.swallowed))} "
                           f"replaced all or most of the output (more than {ALTERED_LIMIT:.0%} of it)")
        res.status = "UNCHECKED"
    elif res.out_sha != res.expected_sha:
        res.reasons.append("output differs")
        res.diff, note = _stored_diff(outputs, res.expected_sha, s.seq, norm.text)
        if note:
            res.notes.append(note)
    if res.reasons and (res.status != "UNCHECKED" or len(res.reasons) > 1):
        res.status = "DIVERGED"
    return res, before, rules
