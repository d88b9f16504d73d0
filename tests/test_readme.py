"""The README's commands, as the command line takes them and as it answers them."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def _first_screen() -> str:
    """The README before its first ``##`` heading (what a reader sees before scrolling)."""
    readme = README.read_text(encoding="utf-8")
    return readme[:readme.index("\n## ")]


def test_the_first_screen_says_what_the_suite_does_without_the_shared_folder(tmp_path, monkeypatch):
    """The suite's real-file tests need ``../shared``, which no checkout and no ``make`` holds: the
    first screen says they skip locally with the reason the suite gives, and fail where
    ``REPLAYBOOK_REQUIRE_SHARED=1`` (CI) is set — as tests/conftest.py does."""
    import importlib.util

    import pytest

    spec = importlib.util.spec_from_file_location("_suite_conftest", REPO / "tests" / "conftest.py")
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)
    screen = " ".join(_first_screen().split())
    monkeypatch.delenv("REPLAYBOOK_REQUIRE_SHARED", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        suite._require(tmp_path / "shared")
    reason = str(skipped.value.msg).replace(str(tmp_path), "…")
    assert reason == "…/shared not found (the read-only evidence folder ../shared beside the repository)"
    assert f"each with the reason `{reason}`" in screen
    monkeypatch.setenv("REPLAYBOOK_REQUIRE_SHARED", "1")
    with pytest.raises(pytest.fail.Exception):
        suite._require(tmp_path / "shared")
    assert "`REPLAYBOOK_REQUIRE_SHARED=1` turns that skip into a failure" in screen
    assert "REPLAYBOOK_REQUIRE_SHARED=1" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "it is not in the repository and `make` does not make it" in screen
    assert "On a fresh clone `make demo` takes about 70 s on 2 cores" in screen
    assert "`make test` about 15 minutes" in screen
