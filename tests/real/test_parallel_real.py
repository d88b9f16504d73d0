"""The loaders that share large loads with helper processes give the same frames on the real
public samples in ``../shared/real`` and on the cases in ``../shared/cases`` when a helper is
forced to read part of them, as when one process reads everything.

The files are small, so the helper is forced (no size threshold) and this process waits a little
before each of its own groups of files, so that the helper surely delivers some; each test also
asserts that it did.  Skipped when ``../shared`` is absent, failing instead when
``REPLAYBOOK_REQUIRE_SHARED=1`` (see ``tests/conftest.py``).
"""

from __future__ import annotations

import sys
import time

import pandas as pd
import pytest

from replaybook.sources import _parallel
from replaybook.sources.claude_code import load_claude_code
from replaybook.sources.cloudtrail import load_cloudtrail
from replaybook.sources.door import load_door
from replaybook.sources.s3_access import load_s3_access

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="helper processes are forked on Linux only")


def _shared_load(monkeypatch, load, paths):
    """``load(paths)`` with one helper forced on; returns the result and the kinds of groups."""
    kinds: list[str] = []
    front_back = _parallel.front_back

    def spy(chunks, local, remote, workers, settle=None):
        def slow_local(chunk):  # this process's groups only: the helper takes the rest
            time.sleep(0.05)
            return local(chunk)

        for kind, value in front_back(chunks, slow_local, remote, workers, settle):
            kinds.append(kind)
            yield kind, value

    with monkeypatch.context() as m:
        m.setenv(_parallel.ENV, "1")
        m.setattr(_parallel, "MIN_BYTES", 0)
        m.setattr(_parallel, "front_back", spy)
        return load(paths), kinds


def _one_process(monkeypatch, load, paths):
    with monkeypatch.context() as m:
        m.setenv(_parallel.ENV, "0")
        return load(paths)


def _same(a, b) -> None:
    pd.testing.assert_frame_equal(a.frame, b.frame, check_exact=True)
    pd.testing.assert_frame_equal(a.quarantine, b.quarantine, check_exact=True)
    assert a.inputs == b.inputs


@pytest.mark.parametrize("load, where, rows", [
    (load_claude_code, "real/claude-code", None),
    (load_cloudtrail, "real/cloud/111111111111_CloudTrail_eu-central-1_20171211T1505Z_A6kvhMoVeCsc7v8U.json*", 4),
    (load_s3_access, "real/cloud/s3_server_access__awsdocs_logformat_example.log", 5),
    (load_door, "cases/join-trap/door", None),
    (load_claude_code, "cases/join-trap/transcripts", None),
], ids=["claude-code", "cloudtrail", "s3", "door", "join-trap-transcripts"])
def test_real_files_shared_with_a_helper(monkeypatch, tmp_path, shared_dir, load, where, rows):
    base, _, pattern = where.rpartition("/")
    folder = shared_dir / base
    paths = sorted(folder.glob(pattern)) if "*" in pattern else [folder / pattern]
    assert all(p.exists() for p in paths) and paths
    if load is load_s3_access:  # one file: the helper needs at least two groups (a file named
        # twice is read once, so the second is a copy under another name)
        copy = tmp_path / "copy.log"
        copy.write_bytes(paths[0].read_bytes())
        paths = [paths[0], copy]
    shared, kinds = _shared_load(monkeypatch, load, paths)
    alone = _one_process(monkeypatch, load, paths)
    _same(shared, alone)
    assert "remote" in kinds, kinds  # the helper did read part of it
    if rows is not None:
        assert len(shared.frame) == rows * (2 if load is load_s3_access else 1)
    assert len(shared.frame) > 0
