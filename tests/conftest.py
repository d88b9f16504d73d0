"""Shared test fixtures.

``shared_dir`` / ``real_dir`` / ``cases_dir`` point at the read-only evidence folder
``../shared`` beside the repository.  When it is absent the tests that need it are skipped —
unless ``REPLAYBOOK_REQUIRE_SHARED=1`` is set (CI), in which case they fail.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
#: the read-only evidence folder: ../shared beside the checkout, or $REPLAYBOOK_SHARED
SHARED = Path(os.environ.get("REPLAYBOOK_SHARED") or REPO_ROOT.parent / "shared")
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _require(path: Path) -> Path:
    if path.is_dir():
        return path
    msg = f"{path} not found (the read-only evidence folder ../shared beside the repository)"
    if os.environ.get("REPLAYBOOK_REQUIRE_SHARED") == "1":
        pytest.fail(msg + "; REPLAYBOOK_REQUIRE_SHARED=1 forbids skipping", pytrace=False)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` (skip if absent; fail if REPLAYBOOK_REQUIRE_SHARED=1)."""
    return _require(SHARED)


@pytest.fixture(scope="session")
def real_dir(shared_dir: Path) -> Path:
    """``../shared/real``: real public sample files (never copied into the repo)."""
    return _require(shared_dir / "real")


@pytest.fixture(scope="session")
def cases_dir(shared_dir: Path) -> Path:
    """``../shared/cases``: small breaking inputs with their ``expected.json``."""
    return _require(shared_dir / "cases")


# --- workbook / browser fixtures (views) ------------------------------------------------------

DEMO_INCIDENT = REPO_ROOT / "data" / "demo" / "incident.yaml"


@pytest.fixture(scope="session")
def demo_incident_path() -> Path:
    """The bundled demo incident's manifest (``data/demo/incident.yaml``)."""
    return DEMO_INCIDENT


@pytest.fixture(scope="session")
def demo_incident(demo_incident_path: Path):
    """The bundled demo incident, loaded once per test session (treat it as read-only)."""
    from replaybook.incident import Incident

    return Incident.load(demo_incident_path)


@pytest.fixture()
def demo_copy(tmp_path: Path) -> Path:
    """A writable copy of the demo incident's folder (edit its manifest or logs freely)."""
    import shutil

    dst = tmp_path / "demo"
    shutil.copytree(DEMO_INCIDENT.parent, dst)
    return dst


# --- file digests -------------------------------------------------------------------------------


@pytest.fixture
def hashed(monkeypatch):
    """Every file :func:`replaybook.replay.file_digest` reads, as ``(file name, bytes read)``.
    The digests remembered are forgotten first, and files count as settled at once
    (``replay.RECENT_NS`` 0: the files of a test are seconds old)."""
    from replaybook import replay

    replay.clear_digest_cache()
    monkeypatch.setattr(replay, "RECENT_NS", 0)
    reads: list[tuple[str, int]] = []
    real = replay._sha256_of

    def counting(fh):
        start = fh.tell()
        digest = real(fh)
        name = Path(os.readlink(f"/proc/self/fd/{fh.fileno()}")).name  # the file opened (Linux)
        reads.append((name, fh.tell() - start))
        return digest

    monkeypatch.setattr(replay, "_sha256_of", counting)
    yield reads
    replay.clear_digest_cache()
