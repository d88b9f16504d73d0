"""Helpers for the replay-packet tests: a throw-away git repository with a failing-then-passing check.

The repository's ``check.py`` fails (exit 1, a message on stderr) until ``feature.flag`` exists.
A packet records: (1) the check failing, (2) a recorded command creating the flag, (3) the check
passing — so a clean checkout of the recorded commit replays all three.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from replaybook.packet import record
from replaybook.packet.log import entry_digest, trailer_line

PY = sys.executable

CHECK_PY = '''\
import datetime, os, sys, time
t0 = time.time()
print("started", datetime.datetime.now(datetime.timezone.utc).isoformat(), "pid", os.getpid(), flush=True)
ok = os.path.exists("feature.flag"){extra}
if not ok:
    print("FAIL: feature flag missing", file=sys.stderr, flush=True)
print(f"1 check in {{time.time() - t0:.2f}}s", flush=True)
sys.exit(0 if ok else 1)
'''


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def write_check(repo: Path, extra: str = "") -> None:
    (repo / "check.py").write_text(CHECK_PY.format(extra=extra))


def rec(repo: Path, *command: str, store: bool = True, cwd: Path | None = None, env=None):
    """Record one command in ``repo`` into ``repo/session.jsonl`` (the default place)."""
    return record(list(command), repo / "session.jsonl", cwd=cwd or repo, store=store, env=env)


def log_lines(log: Path) -> list[dict]:
    """The step lines of a session log, parsed (its trailer left out)."""
    return [json.loads(x) for x in log.read_text().splitlines() if x.strip() and not x.startswith('{"trailer"')]


def write_lines(log: Path, lines: list[dict], *, chain: bool = True) -> None:
    """Write step lines as the recorder would: chained, with a trailer (``chain=False``: as a
    recorder before the chain wrote them, without ``prev`` or a trailer)."""
    out, prev = [], None
    for line in lines:
        line = {k: v for k, v in line.items() if k != "prev"}
        if chain:
            line["prev"] = prev
            prev = entry_digest(line)
        out.append(json.dumps(line) + "\n")
    if chain and lines:
        out.append(json.dumps(trailer_line(len(lines), prev)) + "\n")
    log.write_text("".join(out))


def edit_log(log: Path, seq: int, *, chain: bool = True, **fields) -> None:
    """Change fields of step ``seq`` and write the log again, its chain recomputed (as someone
    who knows the format would): the edit then shows only where other checks look."""
    lines = log_lines(log)
    for line in lines:
        if line["seq"] == seq:
            line.update(fields)
    write_lines(log, lines, chain=chain)
