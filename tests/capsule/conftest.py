"""Fixtures for the capsule tests: a freshly generated copy of the capsule demo, and helpers to
copy it and tamper with the copy (the committed data/capsule-demo is never modified)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from replaybook.capsule.demo import make_demo
from replaybook.capsule.repo import Workspace, init_checkout
from replaybook.capsule.scripted import WORKSPACE_FILES

REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO = REPO_ROOT / "data" / "capsule-demo"
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "capsule"


@pytest.fixture(scope="session")
def demo(tmp_path_factory) -> Path:
    """A demo generated for this test session (read-only by convention: copy before changing)."""
    out = tmp_path_factory.mktemp("capsule-demo") / "capsule-demo"
    make_demo(out)
    return out


@pytest.fixture(scope="session")
def checkout(tmp_path_factory) -> Path:
    """A clean checkout of the demo workspace at the incident's commit."""
    root = tmp_path_factory.mktemp("checkout") / "deploy-config"
    init_checkout(root, WORKSPACE_FILES, when="2026-09-12T15:30:00Z", message="deploy rules")
    return root


@pytest.fixture
def workspace(checkout) -> Workspace:
    return Workspace(checkout)


def copy_tree(src: Path, dst: Path) -> Path:
    """Copy a folder, making every file writable (evidence objects are stored read-only)."""
    shutil.copytree(src, dst)
    for f in dst.rglob("*"):
        if f.is_file():
            f.chmod(0o644)
    return dst


@pytest.fixture
def capsule_dir(demo, tmp_path) -> Path:
    """A writable copy of the demo's capsule folder (capsule.yaml + evidence/)."""
    return copy_tree(demo / "capsule", tmp_path / "capsule")


@pytest.fixture(scope="session")
def committed() -> Path:
    """The committed demo folder, data/capsule-demo (never modified by tests)."""
    return DEMO


@pytest.fixture
def committed_capsule_copy(tmp_path) -> Path:
    """A writable copy of the committed demo's capsule folder."""
    return copy_tree(DEMO / "capsule", tmp_path / "capsule")
