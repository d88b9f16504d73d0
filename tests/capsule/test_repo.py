"""Repository state: commit + dirty-tree digest from git."""

from __future__ import annotations

import pytest

from replaybook.capsule import init_checkout, repo_state
from replaybook.capsule.digest import sha256_digest
from replaybook.capsule.errors import CapsuleFormatError
from replaybook.capsule.repo import Workspace, dirty_tree_object

CLEAN = dirty_tree_object(b"", b"", [])


def test_same_files_same_date_give_the_same_commit(tmp_path):
    a = init_checkout(tmp_path / "a", {"x.txt": "1\n"}, when="2026-01-01T00:00:00Z")
    b = init_checkout(tmp_path / "b", {"x.txt": "1\n"}, when="2026-01-01T00:00:00Z")
    assert a.commit == b.commit and len(a.commit) == 40
    assert a.dirty_tree == CLEAN and a.dirty_tree_digest == sha256_digest(CLEAN)
    assert CLEAN == b"replaybook-dirty-tree/1\nstatus 0\ndiff 0\nuntracked 0\n"


def test_dirty_tree_digest_sees_edits_and_untracked_files(tmp_path):
    clean = init_checkout(tmp_path / "r", {"x.txt": "1\n"})
    (tmp_path / "r" / "x.txt").write_text("2\n")
    edited = repo_state(tmp_path / "r")
    assert edited.commit == clean.commit and edited.dirty_tree_digest != clean.dirty_tree_digest
    assert b" M x.txt\0" in edited.dirty_tree and b"+2\n" in edited.dirty_tree
    (tmp_path / "r" / "new.txt").write_text("n")
    untracked = repo_state(tmp_path / "r")
    assert untracked.dirty_tree_digest != edited.dirty_tree_digest
    assert untracked.dirty_tree.endswith(
        b"untracked 1\n1b16b1df538ba12dc3f97edbb85caa7050d46c148134290feba80f8236c83db9 new.txt\n")
    assert repo_state(tmp_path / "r") == untracked  # reading twice changes nothing


def test_not_a_checkout_is_an_input_error(tmp_path):
    with pytest.raises(CapsuleFormatError, match="git rev-parse"):
        repo_state(tmp_path)


def test_workspace_reads_inside_only(tmp_path):
    init_checkout(tmp_path / "w", {"a/b.txt": "hi\n"})
    ws = Workspace(tmp_path / "w")
    assert ws.read("a/b.txt") == "hi\n"
    with pytest.raises(CapsuleFormatError, match="outside the workspace"):
        ws.read("../x")
