"""The cases copied into tests/fixtures stay byte-identical to ../shared/cases.

The unit tests read these copies so that they run without ../shared; this suite (required in
CI) makes sure a copy never drifts from the case it stands for.
"""

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
#: fixture folder → the case it copies
COPIES = {
    "join_trap": "join-trap",
    "packet/claims": "packet-claims",
    "cloud/cloudtrail-tree": "cloudtrail-tree",
    "cloud/s3-access-quotes": "s3-access-quotes",
    "cloud/gcp-audit-denied": "gcp-audit-denied",
    **{f"claude_code/{name}": name for name in (
        "claude-damaged-lines", "claude-resumed-session", "claude-streaming-split",
        "claude-tool-result-shapes", "claude-unknown-line-types")},
}


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("fixture,case", sorted(COPIES.items()))
def test_fixture_copy_matches_its_case(cases_dir, fixture, case):
    copy, original = _files(FIXTURES / fixture), _files(cases_dir / case)
    assert original, f"case {case} is empty or missing"
    assert sorted(copy) == sorted(original)
    for name, data in original.items():
        assert copy[name] == data, f"{fixture}/{name} differs from cases/{case}/{name}"


def test_every_case_has_a_copy(cases_dir):
    assert sorted(set(COPIES.values())) == sorted(p.name for p in cases_dir.iterdir() if p.is_dir())
