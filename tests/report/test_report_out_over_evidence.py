"""``replaybook report --out`` never puts the report's files on the incident's evidence.

A report written into the transcripts folder had listed its own notebook among the inputs (its
checksum file failed at once), and a second run had read the first run's three files as
transcripts and then written over them.  Each refusal comes before a kernel starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from replaybook.cli import main


@pytest.fixture
def tiny(tiny_incident, tmp_path) -> Path:
    """A copy of the tiny incident (``transcripts/*.jsonl``, ``door/``) this test may change."""
    import shutil

    shutil.copytree(tiny_incident.parent, tmp_path / "tiny-incident")
    return tmp_path / "tiny-incident" / "incident.yaml"


@pytest.mark.parametrize("where", ["transcripts", "door", "door/analyst", "door/analyst/deeper"])
def test_a_report_folder_inside_a_listed_folder_is_refused(tiny, where, capsys):
    before = sorted(p.relative_to(tiny.parent) for p in tiny.parent.rglob("*"))
    assert main(["report", str(tiny), "--out", str(tiny.parent / where)]) == 2
    err = capsys.readouterr().err
    assert ("whose files are evidence and never written over" in err or "holds the incident's" in err) and "--out" in err
    assert sorted(p.relative_to(tiny.parent) for p in tiny.parent.rglob("*")) == before  # nothing made


def test_a_report_folder_a_glob_of_the_manifest_would_read_is_refused(tiny, capsys):
    (tiny.parent / "incident.yaml").write_text("title: tiny\ntranscripts:\n  - transcript*/*\n"
                                               "door:\n  - door/\n")
    assert main(["report", str(tiny), "--out", str(tiny.parent / "transcripts-2")]) == 2
    assert "matches " + str(tiny.parent / "transcript*" / "*") in capsys.readouterr().err
    assert not (tiny.parent / "transcripts-2").exists()


def test_a_report_folder_in_the_data_root_is_refused(tiny, capsys):
    (tiny.parent / "objects").mkdir()
    (tiny.parent / "objects" / "cars.csv").write_text("mpg\n21\n")
    text = (tiny.parent / "incident.yaml").read_text()
    (tiny.parent / "incident.yaml").write_text(text + "data_root: objects\n")
    assert main(["report", str(tiny), "--out", str(tiny.parent / "objects" / "r")]) == 2
    assert "objects, whose files are evidence" in capsys.readouterr().err
    assert not (tiny.parent / "objects" / "r").exists()


def test_the_report_beside_the_evidence_is_allowed(tiny):
    from replaybook.cli import _refuse_report_over_evidence
    from replaybook.incident import Incident

    inc = Incident.load(tiny)
    # (beside the manifest, or in a folder of its own there: no list reads those files)
    assert _refuse_report_over_evidence(inc, str(tiny), str(tiny.parent)) is None
    assert _refuse_report_over_evidence(inc, str(tiny), str(tiny.parent / "reports")) is None
    places = inc.evidence_places()
    rel = lambda ps: sorted(p.relative_to(tiny.parent).as_posix() for p in ps)  # noqa: E731
    assert rel(places.files) == ["incident.yaml", "transcripts/11111111-aaaa-4aaa-8aaa-111111111111.jsonl"]
    assert rel(places.folders) == ["door"]
    assert rel(places.holding) == ["transcripts"]
    assert places.patterns == [str(tiny.parent / "transcripts" / "*.jsonl")]
