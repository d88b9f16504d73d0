"""Listing input folders (``_jsonl.expand_paths``): the files ``Path.rglob`` would give, and
an error — never a silent gap — where a folder or a file cannot be read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from replaybook import _jsonl
from replaybook._jsonl import expand_paths
from replaybook.cli import main
from replaybook.errors import InputError

FIX = Path(__file__).resolve().parent / "fixtures"


def _tree(root: Path) -> None:
    (root / "a" / "deep" / "deeper").mkdir(parents=True)
    (root / ".hidden").mkdir()
    (root / "b").mkdir()
    for rel, text in {"top.jsonl": "1\n", "a/x.jsonl": "2\n", "a/deep/deeper/y.jsonl": "3\n",
                      ".hidden/z.jsonl": "4\n", ".dot.jsonl": "5\n", "b/note.txt": "6\n"}.items():
        (root / rel).write_text(text)
    (root / "link.jsonl").symlink_to(root / "top.jsonl")
    (root / "a" / "linkdir").symlink_to(root / "b", target_is_directory=True)


def test_folder_listing_is_what_rglob_lists(tmp_path):
    _tree(tmp_path)
    got = expand_paths(tmp_path)
    assert got == sorted(q for q in tmp_path.rglob("*") if q.is_file() and not q.is_symlink())
    # hidden files and folders are walked; symlinked files and folders are not taken
    assert [p.relative_to(tmp_path).as_posix() for p in got] == [
        ".dot.jsonl", ".hidden/z.jsonl", "a/deep/deeper/y.jsonl", "a/x.jsonl", "b/note.txt", "top.jsonl"]
    # a folder named as a symlink is entered; only what is under it is not followed
    (tmp_path.parent / "via-link").symlink_to(tmp_path, target_is_directory=True)
    got = expand_paths(tmp_path.parent / "via-link", accept=lambda p: p.name.endswith(".jsonl"))
    assert len(got) == 5


def _unlistable(monkeypatch, bad: Path) -> None:
    real = os.scandir

    def scandir(path):
        if Path(path) == bad:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(_jsonl.os, "scandir", scandir)


def test_a_folder_that_cannot_be_listed_is_an_error_not_a_gap(tmp_path, monkeypatch, capsys):
    """(rglob passed over it: 9 calls of 13 loaded, exit 0, nothing said.)"""
    import shutil

    door = tmp_path / "door"
    shutil.copytree(FIX / "join_trap" / "door", door)
    sub = door / "sub"
    sub.mkdir()
    first = sorted(door.rglob("*.jsonl"))[0]
    shutil.copy(first, sub / "x.jsonl")
    _unlistable(monkeypatch, sub)
    with pytest.raises(InputError) as e:
        expand_paths(door)
    assert str(e.value) == f"{sub}: cannot list the folder: Permission denied (its files would be left out)"
    assert main(["load", "calls", str(door)]) == 2
    assert capsys.readouterr().err == (f"replaybook: error: {sub}: cannot list the folder: Permission denied "
                                       "(its files would be left out)\n")


def test_a_file_in_a_folder_that_cannot_be_read_is_an_error_not_a_crash(tmp_path, monkeypatch, capsys):
    import shutil

    from replaybook.sources import registry

    door = tmp_path / "door"
    shutil.copytree(FIX / "join_trap" / "door", door)
    bad = sorted(door.rglob("*.jsonl"))[0]
    real = registry.sniff_file

    def sniff(path, only=None):
        if Path(path) == bad:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, only)

    monkeypatch.setattr(registry, "sniff_file", sniff)
    assert main(["load", "calls", str(door)]) == 2  # an internal error (exit 1) before
    assert capsys.readouterr().err == f"replaybook: error: {bad}: cannot read: Permission denied\n"


def test_a_pipe_is_not_called_missing(tmp_path):
    fifo = tmp_path / "calls.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InputError) as e:
        expand_paths(fifo)
    assert str(e.value) == f"{fifo}: not a regular file or folder (a pipe, socket or device): nothing to read"


@pytest.mark.parametrize("folder", ["door", "transcripts"])
def test_a_crash_zero_fill_after_the_last_line_is_said_as_such(tmp_path, folder):
    """4 KiB of NUL bytes after the last line (what a crash leaves where the file system had
    allocated space) was reported as "unterminated last line (still being written?)"."""
    import replaybook

    src = sorted((Path(__file__).resolve().parents[1] / "data" / "demo" / folder).rglob("*.jsonl"))[0]
    p = tmp_path / src.name
    p.write_bytes(src.read_bytes() + b"\x00" * 4096)
    q = replaybook.load(p).quarantine
    n = src.read_bytes().count(b"\n")
    assert q[["line_no", "kind", "error"]].values.tolist() == [[n + 1, "invalid", _jsonl.ZERO_FILL]]
    assert q["byte_offset"].tolist() == [len(src.read_bytes())]


_CUT_GZIP_NOTE = "truncated gzip stream: it ends before its end marker"


@pytest.mark.parametrize("fixture", [
    "otel/jsonl/collector_traces.jsonl", "gemini/chats/session-2025-10-01T12-00-5a1b2c3d.jsonl",
    "gateways/docker/policy-audit.jsonl", "codex/envelope/rollout-2025-09-13T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl",
    "claude_code/claude-streaming-split/66666666-ffff-4fff-8fff-666666666666.jsonl", "join_trap/door/analyst/door-sess-a.jsonl"])
def test_a_gzip_cut_short_is_read_up_to_the_cut_and_said(tmp_path, fixture):
    """Every JSON Lines loader reads what comes before the cut and keeps the note that says the
    file was cut (three loaders had reset the notes after reading the file)."""
    import gzip
    import replaybook

    src = Path(__file__).resolve().parent / "fixtures" / fixture
    z = gzip.compress(src.read_bytes())
    p = tmp_path / (src.name + ".gz")
    p.write_bytes(z[: int(len(z) * 0.7)])
    loaded = replaybook.load(p)
    note = loaded.files["note"].iat[0]
    assert loaded.files["source"].notna().all() and _CUT_GZIP_NOTE in note and "what comes before it is read" in note
    assert len(loaded.quarantine) >= 1


def test_a_resume_of_a_session_whose_gzip_was_cut_still_counts_its_copies(tmp_path):
    """The session's own file, gzip'd and cut short, loads up to the cut; the resume file's copies
    of those lines are copies — the second reading of the cut file (to compare them) had read
    nothing, and the copies were set aside as conflicts."""
    import gzip
    import shutil

    from replaybook.sources.claude_code import load_claude_code

    case = Path(__file__).resolve().parent / "fixtures" / "claude_code" / "claude-resumed-session"
    first = "88888888-2222-4222-8222-888888888888.jsonl"
    for f in case.glob("*.jsonl"):
        shutil.copy(f, tmp_path / f.name)
    whole = (tmp_path / first).read_bytes()
    tail = b'{"type":"summary","summary":"a last line, cut in the copy: padding padding padding padding"}\n'
    (tmp_path / (first + ".gz")).write_bytes(gzip.compress(whole + tail)[:-30])
    (tmp_path / first).unlink()
    intact = load_claude_code(case)
    res = load_claude_code(tmp_path)
    assert "conflict" not in set(res.quarantine["kind"])
    assert (res.frame["kind"] == "tool_call").sum() == (intact.frame["kind"] == "tool_call").sum() == 2


def test_gunzip_leniently_reads_what_gzip_reads_and_says_the_rest():
    import gzip

    a, b = gzip.compress(b"one\n"), gzip.compress(b"two\n")
    assert _jsonl.gunzip_leniently(a + b"\0" * 10 + b) == (b"one\ntwo\n", None)  # NUL padding between members
    assert _jsonl.gunzip_leniently(a + b"\0" * 10) == (b"one\n", None)
    assert _jsonl.gunzip_leniently(a + b"xx") == (b"one\n", "2 bytes after the gzip stream are not gzip: not read")
    assert _jsonl.gunzip_leniently(a + b[:-6]) == (
        b"one\ntwo\n", "truncated gzip stream: it ends before its end marker; 8 bytes recovered")
    assert _jsonl.gunzip_leniently(b"plain\n") == (b"plain\n", None)
