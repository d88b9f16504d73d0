"""Repository state: the commit and the dirty-tree digest of a git checkout.

The **dirty-tree object** records everything in the working tree that the commit does not:
``git status --porcelain=v1 -z --untracked-files=all``, ``git diff HEAD --binary`` and, for each
untracked file, its path and SHA-256.  Sections are length-prefixed so the bytes are unambiguous::

    replaybook-dirty-tree/1\n
    status <n>\n<n bytes>
    diff <n>\n<n bytes>
    untracked <count>\n<sha256 hex> <path>\n …

Its digest is ``repository.dirty_tree_digest``; a clean tree has a fixed digest.  Git runs with
``GIT_OPTIONAL_LOCKS=0`` so reading the state never rewrites the index.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .digest import sha256_digest
from .errors import CapsuleError, CapsuleFormatError

__all__ = ["RepoState", "repo_state", "dirty_tree_object", "Workspace", "init_checkout"]

_HEADER = b"replaybook-dirty-tree/1\n"


def _git_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_OPTIONAL_LOCKS": "0", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
                "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"})
    return env


def _git(root: Path, *args: str, env: dict | None = None) -> bytes:
    try:
        res = subprocess.run(["git", "-c", "core.quotepath=off", *args], cwd=root, capture_output=True,
                             env=env or _git_env(), check=False, timeout=60)
    except FileNotFoundError as exc:
        raise CapsuleError("git is not installed (needed to read the repository state)") from exc
    if res.returncode != 0:
        raise CapsuleFormatError(f"git {' '.join(args)} failed: {res.stderr.decode('utf-8', 'replace').strip()}",
                                 root)
    return res.stdout


@dataclass(frozen=True)
class RepoState:
    """A checkout's state.

    Attributes:
        commit: HEAD commit id (hex), or ``None`` when unknown.
        dirty_tree_digest: ``sha256:<hex>`` of :attr:`dirty_tree`, or ``None`` when unknown.
        dirty_tree: the dirty-tree object's bytes (``None`` when only the digest is known).
    """

    commit: str | None
    dirty_tree_digest: str | None
    dirty_tree: bytes | None = field(default=None, repr=False)


def dirty_tree_object(status: bytes, diff: bytes, untracked: list[tuple[str, str]]) -> bytes:
    """Assemble the dirty-tree object from its parts (see the module docstring).

    Args:
        status: ``git status --porcelain=v1 -z --untracked-files=all`` output.
        diff: ``git diff HEAD --binary`` output.
        untracked: ``(path, sha256 hex)`` of each untracked file.
    """
    out = [_HEADER, b"status %d\n" % len(status), status, b"diff %d\n" % len(diff), diff,
           b"untracked %d\n" % len(untracked)]
    for path, hx in sorted(untracked):
        out.append(f"{hx} {path}\n".encode("utf-8", "surrogateescape"))
    return b"".join(out)


def repo_state(path: str | Path) -> RepoState:
    """Read a git checkout's commit and dirty-tree object (read-only).

    Raises:
        CapsuleFormatError: ``path`` is not a git checkout or has no commit.
        CapsuleError: git is not installed.
    """
    root = Path(path)
    if not root.is_dir():
        raise CapsuleFormatError("not a folder", root)
    top = Path(_git(root, "rev-parse", "--show-toplevel").decode().strip())
    commit = _git(top, "rev-parse", "--verify", "HEAD").decode().strip()
    status = _git(top, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    diff = _git(top, "diff", "HEAD", "--binary", "--full-index", "--no-color", "--no-ext-diff", "--no-textconv")
    untracked = []
    for entry in status.split(b"\0"):
        if entry.startswith(b"?? "):
            rel = entry[3:].decode("utf-8", "surrogateescape")
            with open(top / rel, "rb") as fh:
                untracked.append((rel, hashlib.sha256(fh.read()).hexdigest()))
    obj = dirty_tree_object(status, diff, untracked)
    return RepoState(commit, sha256_digest(obj), obj)


class Workspace:
    """The files an agent works on plus their pinned state.

    Args:
        root: the checkout folder.
        state: the state to report; ``None`` reads it from git on first use (:func:`repo_state`).
    """

    def __init__(self, root: str | Path, state: RepoState | None = None):
        self.root = Path(root)
        self._state = state

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    @property
    def state(self) -> RepoState:
        """The checkout's :class:`RepoState` (read from git once, then cached)."""
        if self._state is None:
            self._state = repo_state(self.root)
        return self._state

    def read(self, rel: str) -> str:
        """A file's text (UTF-8), by path relative to :attr:`root`.

        Raises:
            CapsuleFormatError: the file is missing or escapes the workspace.
        """
        p = (self.root / rel).resolve()
        if self.root.resolve() not in p.parents:
            raise CapsuleFormatError(f"{rel!r} is outside the workspace", self.root)
        try:
            return p.read_text("utf-8")
        except OSError as exc:
            raise CapsuleFormatError(f"cannot read {rel!r}: {exc.strerror or exc}", self.root) from exc


def init_checkout(root: str | Path, files: dict[str, str], *, when: str = "2026-09-10T12:00:00Z",
                  message: str = "snapshot", author: str = "Demo Author <demo@example.invalid>") -> RepoState:
    """Create a git checkout holding ``files`` in one commit with fixed dates (same input, same commit id).

    For tests and the demo.  Returns the clean checkout's :class:`RepoState`.

    Raises:
        CapsuleError: git is not installed or a git command fails.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    name, _, email = author.partition(" <")
    env = _git_env()
    env.update({"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email.rstrip(">"), "GIT_AUTHOR_DATE": when,
                "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email.rstrip(">"),
                "GIT_COMMITTER_DATE": when})
    _git(root, "init", "-q", "-b", "main", env=env)
    _git(root, "add", "-A", env=env)
    _git(root, "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", message, env=env)
    return repo_state(root)
