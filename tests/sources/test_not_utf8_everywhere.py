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
from replaybook._jsonl import is_utf8

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


@pytest.mark.parametrize("data,ok", [
    (b"", True),
    (b"plain", True),
    ("ä€😀".encode() * 300_000, True),          # pieces of 1 MiB cut characters: carried over
    (b"a" * (1 << 20) + b"\xe4", False),       # at the end of the last piece
    (b"a" * ((1 << 20) - 1) + "€".encode(), True),  # a 3-byte character across the piece boundary
    (b"\xed\xa0\x80", False),                  # an encoded surrogate is not UTF-8
    (b"\xc3", False),                          # cut at the end
])
def test_is_utf8(data, ok):
    assert is_utf8(data) is ok
    try:
        data.decode("utf-8")
        assert ok
    except UnicodeDecodeError:
        assert not ok
