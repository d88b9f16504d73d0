"""Fixtures for the replay-packet tests (see packet_helpers for the repository's contents)."""

from __future__ import annotations

from pathlib import Path

import pytest

from packet_helpers import PY, git, rec, write_check


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with check.py committed (one commit), clean."""
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    git(r, "config", "user.email", "dev@example.com")
    git(r, "config", "user.name", "Dev")
    git(r, "config", "commit.gpgsign", "false")
    write_check(r)
    (r / "sub").mkdir()
    (r / "sub" / "data.txt").write_text("alpha\nbeta\n")
    git(r, "add", ".")
    git(r, "commit", "-q", "-m", "init")
    return r


@pytest.fixture
def packet(repo: Path) -> Path:
    """``repo`` with a recorded failing-then-passing packet; returns the log path."""
    r1 = rec(repo, PY, "check.py")
    r2 = rec(repo, "touch feature.flag")
    r3 = rec(repo, PY, "check.py")
    assert (r1.exit, r2.exit, r3.exit) == (1, 0, 0)
    return repo / "session.jsonl"
