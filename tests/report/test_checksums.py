"""The report's checksum file: GNU ``sha256sum`` format, checked by ``sha256sum -c`` itself."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess

import pytest

from replaybook.report.checksums import checksum_entries, sha256sum_line, write_sha256sum

SHA256SUM = shutil.which("sha256sum")


def _digest(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_a_plain_name_is_digest_two_spaces_name():
    sha = hashlib.sha256(b"x").hexdigest()
    assert sha256sum_line(sha, "door/a b.jsonl") == f"{sha}  door/a b.jsonl\n".encode()


def test_backslash_newline_and_carriage_return_are_escaped_as_gnu_does():
    """coreutils manual, "cksum output modes": such a line starts with a backslash, and each of
    these characters in the name is escaped with one."""
    sha = "ab" * 32
    assert sha256sum_line(sha, "a\\b\nc\rd") == b"\\" + sha.encode() + b"  a\\\\b\\nc\\rd\n"


def test_a_name_that_is_not_utf8_is_written_as_its_bytes():
    name = os.fsdecode(b"t/caf\xe9.jsonl")
    assert sha256sum_line("cd" * 32, name).endswith(b"  t/caf\xe9.jsonl\n")


@pytest.mark.parametrize("sha, path", [("AB" * 32, "x"), ("ab" * 31, "x"), ("ab" * 32, "")])
def test_a_malformed_entry_is_refused(sha, path):
    with pytest.raises(ValueError):
        sha256sum_line(sha, path)


def test_entries_keep_rows_with_a_digest_once_each():
    rows = [{"path": "incident.yaml", "sha256": "0" * 64},
            {"path": "door/link.jsonl", "sha256": None},  # a symbolic link: listed, not followed
            {"path": "door/a.jsonl", "sha256": "1" * 64},
            {"path": "door/a.jsonl", "sha256": "1" * 64}]
    assert checksum_entries(rows) == [["incident.yaml", "0" * 64], ["door/a.jsonl", "1" * 64]]


@pytest.mark.skipif(SHA256SUM is None, reason="GNU sha256sum is not installed")
def test_sha256sum_checks_every_file_written_including_awkward_names(tmp_path):
    """Names with a newline, a backslash, a carriage return, a leading space or star, bytes that
    are not UTF-8, and a file outside the folder by its absolute path: ``sha256sum -c``, run in
    the folder, finds and checks each."""
    case = tmp_path / "case"
    names = ["incident.yaml", "door/a\nb.jsonl", "door/back\\slash.jsonl", "door/cr\rname.jsonl",
             "door/ leading space.jsonl", "door/*star.jsonl", os.fsdecode(b"door/caf\xe9.jsonl")]
    (case / "door").mkdir(parents=True)
    for i, n in enumerate(names):
        (case / n).write_bytes(f"line {i}\n".encode())
    outside = tmp_path / "elsewhere" / "x.jsonl"
    outside.parent.mkdir()
    outside.write_bytes(b"outside\n")
    entries = [(n, _digest(case / n)) for n in names] + [(str(outside), _digest(outside))]
    dest = tmp_path / "out" / "case.sha256"
    dest.parent.mkdir()
    assert write_sha256sum(entries, dest) == len(entries)
    ok = subprocess.run([SHA256SUM, "--strict", "-c", str(dest)], cwd=case, capture_output=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.count(b": OK\n") == len(entries)
    # and it is a check: one changed byte fails it, naming the file
    (case / "door/a\nb.jsonl").write_bytes(b"changed\n")
    bad = subprocess.run([SHA256SUM, "-c", str(dest)], cwd=case, capture_output=True)
    assert bad.returncode == 1 and b"a\\nb.jsonl: FAILED" in bad.stdout
