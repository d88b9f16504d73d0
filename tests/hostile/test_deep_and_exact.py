"""Every transcript and gateway format, with one argument value replaced in its fixture by a
value nested as deep as a JSON parser accepts, or by an integer orjson reads as a float: the
load gives rows or quarantine rows (never a RecursionError out of a recursive walk), and the
integer comes back exact.  (A hostile sweep crashed eight gateway loaders at 350-500 levels, and
read -9223372036854775809 as -9.223372036854776e18 in every format.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import replaybook

FIX = Path(__file__).resolve().parents[1] / "fixtures"
FOLDERS = ("claude_code", "codex", "otel", "gemini", "gateways", "join_trap")  # join_trap: door logs


def _first_string_argument(frame) -> str | None:
    for a in frame["arguments"].dropna():
        if isinstance(a, dict):
            for v in a.values():
                if isinstance(v, str) and len(v) > 1:
                    return v
    return None


def _cases() -> list[tuple[Path, str, str]]:
    """(fixture file, its frame kind, the argument value to replace) for every fixture that has one."""
    out = []
    for folder in FOLDERS:
        for f in sorted((FIX / folder).rglob("*")):
            if not f.is_file():
                continue
            try:
                res = replaybook.load(f)
            except Exception:  # noqa: BLE001 - fixtures of refused shapes: not this test's subject
                continue
            for kind in res.results:
                frame = res[kind]
                if "arguments" in frame and (v := _first_string_argument(frame)) is not None:
                    out.append((f, kind, v))
                    break
    return out


CASES = _cases()


def _replaced(tmp_path: Path, f: Path, value: str, new: str) -> Path | None:
    raw = f.read_text(encoding="utf-8", errors="surrogateescape")
    text = raw.replace(json.dumps(value), new, 1)
    if text == raw:  # arguments logged as a JSON string inside the record
        text = raw.replace(json.dumps(json.dumps(value))[1:-1], json.dumps(new)[1:-1], 1)
    if text == raw:
        return None
    p = tmp_path / f.parent.name / f.name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8", errors="surrogateescape")
    return p


def test_the_sweep_covers_every_format_family():
    names = {f.relative_to(FIX).parts[0] for f, _, _ in CASES}
    assert names == set(FOLDERS)
    assert len(CASES) >= 25


@pytest.mark.parametrize("depth", [500, 1000])
def test_deep_arguments_load_or_are_set_aside_in_every_format(tmp_path, depth):
    deep = "[" * depth + "]" * depth
    done = 0
    for f, kind, value in CASES:
        p = _replaced(tmp_path / f"{f.parent.name}-{f.name}", f, value, deep)
        if p is None:
            continue
        res = replaybook.load(p)  # must not raise
        frame = res[kind] if kind in res.results else None
        assert (frame is not None and len(frame)) or len(res.quarantine), p
        done += 1
    assert done >= 25


@pytest.mark.parametrize("number", ["-9223372036854775809", "123456789012345678901234567890"])
def test_integers_orjson_reads_as_floats_come_back_exact_in_every_format(tmp_path, number):
    exact = 0
    for f, kind, value in CASES:
        p = _replaced(tmp_path / f"{f.parent.name}-{f.name}", f, value, number)
        if p is None:
            continue
        frame = replaybook.load(p)[kind]
        keys = [k for k in frame["args_key"].dropna() if number in k]
        floats = [k for k in frame["args_key"].dropna() if "e+" in k]
        assert not floats, (p, floats)
        exact += bool(keys)
    assert exact >= 20


@pytest.mark.parametrize("number, key", [("1e400", "1E400"), ("-2.50E+999", "-25E998")])
def test_numbers_beyond_the_double_range_keep_their_value_in_every_format(tmp_path, number, key):
    """Every parser reads them as infinity: two of them had agreed in the join, and with the
    string "Infinity" too.  Each format now keys them by their exact value."""
    exact = 0
    for f, kind, value in CASES:
        p = _replaced(tmp_path / f"{f.parent.name}-{f.name}", f, value, number)
        if p is None:
            continue
        res = replaybook.load(p)
        frame = res[kind] if kind in res.results else None
        if frame is None or not len(frame):
            assert len(res.quarantine), p
            continue
        keys = list(frame["args_key"].dropna())
        assert not [k for k in keys if "Infinity" in k], (p, keys)
        exact += any(f":{key}" in k for k in keys)
    assert exact >= 20
