"""The door log's speed-ups beyond the per-file fast path (``sources/_door_fast.py``) give exactly
what the per-line path gives:

* the arithmetic conversion of common timestamps (:func:`_times.iso_ns`), against
  ``_text.to_utc`` on shapes it takes and shapes it must leave to pandas;
* the one-pass byte scan (:func:`_door_fast.scan`) against ``_jsonl``'s line count and the
  one-object-per-line shape;
* the sort's shortcut (:func:`_door_fast.sort_order`) against the stable ``numpy.lexsort``;
* and that door logs as the door writes them take the fast way (their speed is measured by
  ``make bench``, not here).
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from replaybook._jsonl import _count_lines
from replaybook._text import to_utc
from replaybook.sources import _door_fast, _times, door
from replaybook.sources.door import load_door

# the equivalence helpers of test_door_fast.py (loaded by path: tests/ is not a package)
_spec = importlib.util.spec_from_file_location("_door_fast_equivalence", Path(__file__).with_name("test_door_fast.py"))
_eq = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_eq)
GOOD, REJECTED, _assert_same, _generated, _write, reference_load_door = (
    _eq.GOOD, _eq.REJECTED, _eq._assert_same, _eq._generated, _eq._write, _eq.reference_load_door)


def _check(paths) -> None:
    fast = load_door(paths)
    _assert_same(fast, door._load(paths, fast=False))
    _assert_same(fast, reference_load_door(paths))


# -- timestamps --------------------------------------------------------------------------------

def _texts(seed: int, n: int) -> list[str]:
    r = random.Random(seed)
    out = []
    for _ in range(n):
        y = r.choice([1899, 1900, 1904, 1970, 1999, 2000, 2024, 2026, 2100, 2199, 2200, r.randrange(1900, 2200)])
        mo = r.choice([0, 1, 2, 2, 2, 4, 9, 12, 13, r.randrange(1, 13)])
        d = r.choice([0, 1, 28, 29, 29, 30, 31, 32, r.randrange(1, 29)])
        h, mi, s = r.choice([0, 23, 24, r.randrange(24)]), r.choice([0, 59, 60, r.randrange(60)]), \
            r.choice([0, 59, 60, 61, r.randrange(60)])
        frac = r.choice(["", "", ".", *("." + "".join(r.choice("0123456789") for _ in range(k)) for k in range(1, 11))])
        zone = r.choice(["Z", "Z", "Z", "z", "+00:00", "-07:30", ""])
        if r.random() < 0.5:  # a real date-time in the common shape, with 0-9 fractional digits
            y, mo, d = r.randrange(1900, 2200), r.randrange(1, 13), r.randrange(1, 29)
            h, mi, s, zone = r.randrange(24), r.randrange(60), r.randrange(60), "Z"
            frac = r.choice(["", "." + "".join(r.choice("0123456789") for _ in range(r.randint(1, 9)))])
        t = f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}{frac}{zone}"
        if r.random() < 0.05:
            i = r.randrange(len(t))
            t = t[:i] + r.choice("x /:-T٥") + t[i + 1:]
        out.append(t)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_iso_ns_agrees_with_to_utc_where_it_takes_a_value(seed):
    texts = _texts(seed, 4000)
    expect = to_utc(texts)
    widths = {len(t) for t in texts if t.isascii()}
    taken = 0
    for w in widths:
        group = [(i, t) for i, t in enumerate(texts) if len(t) == w and t.isascii()]
        ns, ok = _times.iso_ns("".join(t for _, t in group).encode(), w)
        for (i, t), v, good in zip(group, ns, ok):
            if good:
                taken += 1
                assert not pd.isna(expect[i]), t
                assert v == expect[i].value, t
    assert taken > 1500


@pytest.mark.parametrize("seed", range(3))
def test_parse_parts_is_utc_ns(seed):
    r = random.Random(seed)
    texts = _texts(seed + 10, 3000)
    parts, counts, flat = [], [], []
    pos = 0
    while pos < len(texts):
        k = r.randint(1, 40)
        chunk = texts[pos:pos + k]
        pos += k
        if r.random() < 0.4:  # one width, as a door writes them
            w = r.choice([20, 24, 30])
            chunk = [t for t in chunk if len(t) == w] or chunk
        if r.random() < 0.2:
            chunk = [None if r.random() < 0.3 else t for t in chunk] + [""]
        fixed = _door_fast._fixed(chunk) if None not in chunk else None
        parts.append(_door_fast._ts_part(chunk, fixed))
        counts.append(len(chunk))
        flat.extend(chunk)
    ns, given = _times.parse_parts(parts, counts)
    ns2, given2 = _times.utc_ns(flat)
    assert list(ns) == list(ns2)
    assert list(given) == list(given2)
    assert any(type(p) is tuple for p in parts)


def test_common_timestamps_take_the_arithmetic_way():
    ts = pd.Timestamp("2026-09-13T10:00:05.600Z")
    texts = [(ts + pd.Timedelta(milliseconds=37 * i)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z" for i in range(100)]
    ns, ok = _times.iso_ns("".join(texts).encode(), 24)
    assert ok.all() and list(ns) == [t.value for t in to_utc(texts)]


# -- the byte scan ------------------------------------------------------------------------------

@pytest.mark.parametrize("data,shaped", [
    (b"", False), (b"\n", False), (b"{}", False), (b"{}\n", True), (b"{}\n{}\n", True), (b"{}\n{}", False),
    (b"{}\r\n{}\n", False), (b"{}\n\n{}\n", False), (b" {}\n", False), (b"{} \n", False), (b"{}\n {}\n", False),
    (b'{"a":[1,\n2]}\n', False), (b"[]\n", False), (b"{}\n[]\n", False), (b"x\n", False),
])
def test_scan_counts_lines_as_jsonl_and_sees_the_shape(data, shaped):
    assert _door_fast.scan(data) == (_count_lines(data), shaped)


# -- the fast way is taken --------------------------------------------------------------------------

def test_door_logs_as_the_door_writes_them_take_the_fast_way(tmp_path, monkeypatch):
    """(Its speed is measured by ``make bench``, not here.)"""
    r = random.Random(5)
    t0 = pd.Timestamp("2026-09-13T10:00:00Z").value // 10**6
    for f in range(12):
        lines = []
        for seq in range(1, 41):
            t = pd.Timestamp((t0 + f * 10**6 + seq * 1500) * 10**6, tz="UTC")
            end = t + pd.Timedelta(milliseconds=250)
            lines.append({**GOOD, "ts": t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z", "seq": seq,
                          "ts_end": end.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                          "session": f"s{f}", "arguments": {"path": f"p/{r.randrange(500)}.csv"},
                          "tool": r.choice(["read", "list", "query"]), "rows": r.randrange(1000)})
        _write(tmp_path, f"a{f % 3}/s{f}.jsonl", lines)
    taken = []
    real = _door_fast.decode_file

    def spy(*args):
        taken.append(real(*args))
        return taken[-1]

    monkeypatch.setattr(_door_fast, "decode_file", spy)
    _check(tmp_path)
    assert len(taken) == 12 and all(taken)  # every file the fast way, same frame as the per-line way


# -- the sort ------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(40))
def test_sort_order_is_the_stable_lexsort(seed):
    r = np.random.default_rng(seed)
    n_files = int(r.integers(1, 30))
    counts = r.integers(0, 12, n_files)
    file_idx = np.repeat(np.arange(n_files), counts)
    m = len(file_idx)
    shape = seed % 4
    if shape in (0, 3):  # rows in order, one key per file: the shortcut's case (3: keys shared by files)
        keys = (r.permutation(n_files) if shape == 0 else r.integers(0, 3, n_files))[file_idx]
        ts = r.integers(0, 5, m)  # ties on purpose; in order within each file, not across files
        ts = np.concatenate([np.sort(ts[file_idx == f]) for f in range(n_files)]) if m else ts
        seq = np.arange(m)
    else:
        keys = r.integers(0, 4 if shape == 1 else n_files, m)
        keys = keys if shape == 1 else r.permutation(n_files)[file_idx]
        ts = r.integers(0, 5, m)
        seq = r.integers(0, 3, m)
    got = _door_fast.sort_order(keys.astype(np.int64), ts.astype(np.int64), seq.astype(np.int64), file_idx)
    assert list(got) == list(np.lexsort((seq, ts, keys)))
