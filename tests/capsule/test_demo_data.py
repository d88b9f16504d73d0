"""The committed data/capsule-demo is exactly what scripts/make_capsule_demo.py writes, and the
spine loads it as an ordinary incident."""

from __future__ import annotations

import replaybook

from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "data" / "capsule-demo"


def _files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_committed_demo_matches_the_generator(demo):
    assert _files(demo) == _files(DEMO)
    for rel in _files(demo):
        assert (demo / rel).read_bytes() == (DEMO / rel).read_bytes(), rel


def test_demo_is_a_spine_incident():
    inc = replaybook.Incident.load(DEMO)
    assert inc.title == "Demo: the agent moved ledger-api to the fast-track deployment rule"
    assert len(inc.calls) == 4 and inc.calls.response_digest.notna().all()
    assert inc.quarantine.empty
    assert inc.join.sessions.status.tolist() == ["matched"]
