"""Helpers for the replay-packet tests: a throw-away git repository with a failing-then-passing check.

The repository's ``check.py`` fails (exit 1, a message on stderr) until ``feature.flag`` exists.
A packet records: (1) the check failing, (2) a recorded command creating the flag, (3) the check
passing — so a clean checkout of the recorded commit replays all three.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from replaybook.packet import record

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
