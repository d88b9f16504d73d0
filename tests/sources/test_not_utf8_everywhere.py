"""Bytes that are not UTF-8 are named by line, whatever the format.

Every loader reads such a byte as U+FFFD, so a value that holds one is not the one written: a
step's arguments no longer equal the door's, a request's object no longer names the file. Before,
only the door log's per-line path said so; a transcript, a gateway log or a cloud access log with
a Latin-1 byte loaded without a word.  Each case below damages one line of one of our fixtures
(one letter inside a string value becomes ``0xE4``, Latin-1's ``ä``) and asserts the note names
that line, and that the undamaged file has no such note.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

import replaybook
from replaybook._jsonl import not_utf8_note

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures"

CASES = [
    # (fixture file, 1-based line to damage, frame the loader gives)
    ("claude_code/claude-streaming-split/66666666-ffff-4fff-8fff-666666666666.jsonl", 3, "steps"),
    ("codex/envelope/rollout-2025-09-13T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl", 4, "steps"),
    ("otel/jsonl/collector_traces.jsonl", 2, "steps"),
    ("gemini/chats/session-2025-10-01T12-00-5a1b2c3d.jsonl", 2, "steps"),
    ("gateways/agentgateway/access.log", 1, "calls"),
    ("cloud/s3-access-quotes/acme-data-2026-09-13-10-10-00-0123456789ABCDEF", 2, "access"),
    ("cloud/cloudtrail-tree/AWSLogs/123456789012/CloudTrail/eu-west-1/2026/09/13/"
     "123456789012_CloudTrail_eu-west-1_20260913T1005Z_abcdEFGHijklMNOP.json.gz", 1, "access"),
]
DEMO_DOOR = ROOT / "data" / "demo" / "door" / "analyst" / "door-20260913T100005-a1.jsonl"

_IN_STRING = re.compile(rb'":\s*"[^"\\]*?([a-z])')


def _damage(data: bytes, line_no: int) -> bytes:
    """``data`` with one letter of line ``line_no`` (inside a JSON string value where the line
    has one, else the first lower-case letter after column 30) replaced by byte 0xE4."""
    lines = data.split(b"\n")
    line = lines[line_no - 1]
    m = _IN_STRING.search(line)
    at = m.start(1) if m else 30 + re.search(rb"[a-z]", line[30:]).start()
    lines[line_no - 1] = line[:at] + b"\xe4" + line[at + 1:]
    return b"\n".join(lines)


def _notes(loaded, frame: str) -> list[str]:
    return [n for info in loaded.results[frame].inputs for n in (info.get("notes") or [])]


@pytest.mark.parametrize("rel,line_no,frame", CASES, ids=[c[0].split("/")[0] + ":" + c[0].rsplit("/", 1)[-1][:24]
                                                          for c in CASES])
def test_a_byte_that_is_not_utf8_is_named_by_line(tmp_path, rel, line_no, frame):
    src = FIX / rel
    data = src.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    name = src.name.removesuffix(".gz")
    clean = tmp_path / "clean" / name
    clean.parent.mkdir()
    clean.write_bytes(data)
    assert not any("not UTF-8" in n for n in _notes(replaybook.load([clean]), frame))

    bad = tmp_path / "bad" / name
    bad.parent.mkdir()
    bad.write_bytes(_damage(data, line_no))
    got = [n for n in _notes(replaybook.load([bad]), frame) if "not UTF-8" in n]
    assert len(got) == 1, got
    assert got[0].startswith(f"bytes that are not UTF-8 on line {line_no}: read as U+FFFD")


@pytest.mark.parametrize("fast", [True, False])
def test_the_door_log_says_what_such_a_line_holds(tmp_path, fast):
    """The door log's note names what a call's line holds (its arguments, its object), on the
    fast path's file too (its decoder skips keys it does not read without checking them)."""
    from replaybook.sources import door

    bad = tmp_path / DEMO_DOOR.name
    bad.write_bytes(_damage(DEMO_DOOR.read_bytes(), 2))
    got = [n for info in door._load([bad], fast=fast).inputs for n in info.get("notes") or []]
    assert got == ["bytes that are not UTF-8 on line 2: read as U+FFFD (\ufffd), so a call's arguments or "
                   "object there is not exactly as written"]


@pytest.mark.parametrize("data,lines", [
    (b"", None),
    (b"plain\n", None),
    ("ä€😀\n".encode() * 300_000, None),          # 1 MiB pieces cut characters: carried over
    (b"a" * (1 << 20) + b"\xe4\n", [1]),           # at the start of the second piece
    (b"a" * ((1 << 20) - 1) + "€\n".encode(), None),  # a 3-byte character across the piece boundary
    (b"ok\n\xed\xa0\x80\n", [2]),                # an encoded surrogate is not UTF-8
    (b"ok\n\xc3\n", [2]),                          # a lead byte alone, then a line end
    (b"\xe4\n" * 30, list(range(1, 21))),           # 20 places looked at, then "maybe more"
])
def test_not_utf8_lines(data, lines):
    note = not_utf8_note(data)
    if lines is None:
        assert note is None
        data.decode("utf-8")
        return
    words = f"line {lines[0]}" if len(lines) == 1 else "lines " + ", ".join(map(str, lines[:5])) + (
        f" … ({len(lines)} lines)" if len(lines) > 5 else "")
    assert note == (f"bytes that are not UTF-8 on {words}{' (and maybe more)' if len(lines) == 20 else ''}: read as "
                    "U+FFFD (\ufffd), so a value there is not exactly as written")


def test_a_character_cut_by_a_line_still_being_written_is_not_named(tmp_path):
    """A live transcript copied mid-write, cut inside ``é``: its last line is ``pending`` (not
    read), so nothing there is "read as U+FFFD".  A finished line holding the same cut byte is."""
    src = FIX / "claude_code" / "claude-streaming-split" / "66666666-ffff-4fff-8fff-666666666666.jsonl"
    data = src.read_bytes()
    cut = tmp_path / "cut" / src.name
    cut.parent.mkdir()
    cut.write_bytes(data + b'{"type": "user", "message": {"content": "caf' + "é".encode()[:1])
    loaded = replaybook.load([cut])
    assert not [n for n in _notes(loaded, "steps") if "not UTF-8" in n]
    assert loaded.results["steps"].quarantine["kind"].tolist() == ["pending"]
    done = tmp_path / "done" / src.name
    done.parent.mkdir()
    done.write_bytes(data + b'{"type": "user", "message": {"content": "caf' + "é".encode()[:1] + b'"}}\n')
    n = data.count(b"\n") + 1
    assert [x for x in _notes(replaybook.load([done]), "steps") if "not UTF-8" in x] == [
        f"bytes that are not UTF-8 on line {n}: read as U+FFFD (\ufffd), so a value there is not exactly as written"]


def test_a_binary_file_among_cloud_logs_is_set_aside_without_the_text_note(tmp_path):
    from replaybook.sources import s3_access

    src = FIX / "cloud" / "s3-access-quotes" / "acme-data-2026-09-13-10-10-00-0123456789ABCDEF"
    (tmp_path / src.name).write_bytes(src.read_bytes())
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 64)
    res = s3_access.load_s3_access(tmp_path)
    blob = [i for i in res.inputs if i["path"].endswith("blob.bin")]
    assert blob and not blob[0].get("notes")
    assert res.quarantine["error"].tolist() == ["not a text log (binary data)"]
