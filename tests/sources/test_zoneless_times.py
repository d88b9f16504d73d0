"""A transcript timestamp without a time zone is read as UTC, and the file's note says so.

Claude Code, Codex and Gemini CLI write UTC with a ``Z``.  A line without a zone (a converted or
hand-edited transcript, another tool's export) was read as UTC without a word; if its writer meant
local time, its steps are hours off the door's calls and the join's clock offset absorbs it, or
refuses it beyond its bound.  The door log says so already (``door.zoneless_notes``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import replaybook
from test_claude_fast_equiv import assert_same

FIX = Path(__file__).resolve().parents[1] / "fixtures"
CLAUDE = FIX / "claude_code" / "claude-streaming-split" / "66666666-ffff-4fff-8fff-666666666666.jsonl"
CODEX = FIX / "codex" / "envelope" / "rollout-2025-09-13T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl"
GEMINI = FIX / "gemini" / "chats" / "session-2025-10-01T12-00-5a1b2c3d.jsonl"

_TS = re.compile(rb'("timestamp":\s*"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z"')


def _rezone(src: Path, dst: Path, line_nos: set[int], zone: bytes) -> Path:
    """``src`` with the ``Z`` of the ``timestamp`` on ``line_nos`` replaced by ``zone``."""
    lines = src.read_bytes().split(b"\n")
    for n in line_nos:
        lines[n - 1], k = _TS.subn(rb'\1' + zone + b'"', lines[n - 1], count=1)
        assert k == 1, (src, n)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(b"\n".join(lines))
    return dst


def _notes(path: Path) -> list[str]:
    res = replaybook.load([path]).results["steps"]
    return [n for info in res.inputs for n in info.get("notes") or []]


@pytest.mark.parametrize("src,lines,writer", [
    (CLAUDE, {1, 4}, "Claude Code"),
    (CODEX, {2}, "Codex"),
    (GEMINI, {2, 8}, "Gemini CLI"),
])
def test_a_timestamp_without_a_zone_is_noted_by_line(tmp_path, src, lines, writer):
    path = _rezone(src, tmp_path / "t" / src.name, lines, b"")
    texts = [re.search(rb'"timestamp":\s*"([^"]+)"', src.read_bytes().split(b"\n")[n - 1]).group(1).decode()[:-1]
             for n in sorted(lines)]
    got = [n for n in _notes(path) if "without a time zone" in n]
    where = f"line {min(lines)}" if len(lines) == 1 else "lines " + ", ".join(map(str, sorted(lines)))
    shown = ", ".join(repr(t) for t in dict.fromkeys(texts))
    assert got == [f"a time without a time zone on {where} ({shown}): read as UTC; RFC 3339 requires an offset — "
                   f"if {writer} wrote local time, these lines are off by the zone's offset"]
    # a zone written as an offset is a zone; the file as shipped has none to note
    offset = _rezone(src, tmp_path / "o" / src.name, lines, b"+02:00")
    assert not [n for n in _notes(offset) if "time zone" in n]
    assert not [n for n in _notes(src) if "time zone" in n]


def test_claude_code_fast_and_line_by_line_paths_note_the_same(tmp_path, monkeypatch):
    path = _rezone(CLAUDE, tmp_path / CLAUDE.name, {2, 5}, b"")
    assert_same(path, monkeypatch)
    assert any("without a time zone on lines 2, 5" in n for n in _notes(path))


def test_an_unreadable_time_has_its_own_note_not_this_one(tmp_path):
    data = CLAUDE.read_bytes().split(b"\n")
    data[1] = _TS.sub(b'"timestamp": "2026-13-45T10:00:00"', data[1], count=1)
    path = tmp_path / CLAUDE.name
    path.write_bytes(b"\n".join(data))
    notes = _notes(path)
    assert not [n for n in notes if "without a time zone" in n]
    assert any("not a date-time" in n and "line 2" in n for n in notes)


def test_rows_whose_line_is_not_known_are_counted_not_a_crash(tmp_path):
    """A Gemini CLI session document whose items the line walk cannot place (a repeated
    ``messages`` key: JSON keeps the last) gives rows with no line number; a zoneless time on one
    of them had crashed the load (``int(NA)``)."""
    import json

    from replaybook.sources.gemini import load_gemini

    src = json.loads((FIX / "gemini" / "resumed" / "session-2025-09-30T08-00-7f00aa11.json").read_text())
    for m in src["messages"]:
        m["timestamp"] = m["timestamp"].rstrip("Z")
    body = json.dumps(src, indent=2)
    p = tmp_path / "session-2025-09-30T08-00-7f00aa11.json"
    p.write_text(body[:-2] + ',\n  "messages": ' + json.dumps(src["messages"][:1], indent=2) + "\n}")
    res = load_gemini([p])
    assert res.frame["line_no"].isna().sum() == 1
    text = src["messages"][0]["timestamp"]
    assert [n for i in res.inputs for n in i.get("notes") or [] if "time zone" in n] == [
        f"a time without a time zone on 1 row whose line is not known ({text!r}): read as UTC; RFC 3339 requires "
        "an offset — if Gemini CLI wrote local time, these lines are off by the zone's offset"]


@pytest.mark.parametrize("text,noted", [
    ("2026-09-13T10:00:00.000Z ", False),   # blanks after the zone: the parser reads it as UTC too
    ("2026-09-13T10:00:00+0000", False),
    ("2026-09-13 10:00:00 -05:00", False),
    ("2026-09-13T10:00:00.5+02", False),
    ("2026-09-13T10:00:00z", False),
    ("2026-09-13T10:00:00.000", True),
])
def test_what_counts_as_a_zone(tmp_path, text, noted):
    lines = CLAUDE.read_bytes().split(b"\n")
    lines[1], k = _TS.subn(b'"timestamp": "' + text.encode() + b'"', lines[1], count=1)
    assert k == 1
    p = tmp_path / CLAUDE.name
    p.write_bytes(b"\n".join(lines))
    got = [n for n in _notes(p) if "time zone" in n]
    assert got == ([f"a time without a time zone on line 2 ({text!r}): read as UTC; RFC 3339 requires an offset — "
                    "if Claude Code wrote local time, these lines are off by the zone's offset"] if noted else [])


def test_a_date_alone_is_no_time_without_a_zone_but_no_time_at_all(tmp_path):
    # "2026-09-13" had been read as that day's UTC midnight (and noted as a time without a zone):
    # a date alone is not a date-time, so the line keeps its steps with the time unknown
    lines = CLAUDE.read_bytes().split(b"\n")
    lines[1], k = _TS.subn(b'"timestamp": "2026-09-13"', lines[1], count=1)
    assert k == 1
    p = tmp_path / CLAUDE.name
    p.write_bytes(b"\n".join(lines))
    assert _notes(p) == ["1 line with a time that is not a date-time, kept with the time unknown: line 2 ('2026-09-13')"]


@pytest.mark.parametrize("src,line,writer", [(CLAUDE, 4, "Claude Code"), (CODEX, 2, "Codex"), (GEMINI, 8, "Gemini CLI")])
@pytest.mark.parametrize("value", [b"null", b"1735689600"])
def test_a_timestamp_written_null_or_as_a_number_is_noted_by_line(tmp_path, src, line, writer, value):
    """Codex had read a ``timestamp`` written ``null`` or as a number as an unknown time without
    a word, where Claude Code's loader (and now Gemini's) notes it."""
    lines = src.read_bytes().split(b"\n")
    lines[line - 1], k = re.subn(rb'"timestamp":\s*"[^"]*"', b'"timestamp": ' + value, lines[line - 1], count=1)
    assert k == 1
    path = tmp_path / "t" / src.name
    path.parent.mkdir()
    path.write_bytes(b"\n".join(lines))
    got = [n for n in _notes(path) if "empty or not text" in n]
    assert got == [f"1 line with a timestamp that is empty or not text, kept with the time unknown: "
                   f"line {line} ({value.decode()})"], (writer, _notes(path))
