"""UTC timestamps of whole columns, cheaply (private; shared by the door-log and cloud fast paths).

:func:`utc_ns` is :func:`replaybook._text.to_utc` as int64 nanoseconds; :func:`iso_ns` converts
date-times of the common fixed-width shape ``YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z`` arithmetically, on
the bytes, exactly where it takes a value; :func:`parse_parts` combines the two for the values
of many files.  ``tests/sources/test_door_fast_speed.py`` holds them to ``to_utc``.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["utc_ns", "iso_ns", "parse_parts"]

_NAT = np.iinfo(np.int64).min


def utc_ns(values: list) -> tuple[np.ndarray, np.ndarray]:
    """``(ns, given)``: ``_text.to_utc(values)`` as int64 nanoseconds since the epoch (``NaT``'s
    value where missing, not a date-time or outside the nanosecond range), and where a value
    was given (not ``None``).
    """
    from .._text import to_utc

    obj = np.fromiter(values, dtype=object, count=len(values))
    given = obj.astype(bool)  # text is truthy unless empty; None is not
    for i in np.flatnonzero(~given):
        given[i] = obj[i] is not None
    if not len(obj):
        return np.zeros(0, dtype=np.int64), given
    ns = to_utc(obj).to_numpy(dtype="datetime64[ns]").view(np.int64)
    return ns, given


_ISO_WIDTHS = frozenset([20, *range(22, 31)])  # …SSZ, …SS.fZ to …SS.fffffffffZ
_CUM_DAYS = np.array([0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334], dtype=np.int64)
_MONTH_DAYS = np.array([31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31], dtype=np.int64)


def iso_ns(text: bytes, width: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ns, ok)`` of ``len(text) // width`` ASCII date-times of ``width`` characters each,
    laid end to end: nanoseconds since the epoch where ``ok``, i.e. where the value has the
    shape ``YYYY-MM-DDTHH:MM:SSZ`` or ``YYYY-MM-DDTHH:MM:SS.<1–9 digits>Z``, the year is
    1900–2199, the date exists, hours < 24, minutes and seconds < 60.  There the value is
    exactly what ``_text.to_utc`` gives; elsewhere (``ok`` false) ``ns`` is meaningless and the
    caller asks ``to_utc``."""
    k = len(text) // width
    if width not in _ISO_WIDTHS or not k:
        return np.zeros(k, dtype=np.int64), np.zeros(k, dtype=bool)
    a = np.frombuffer(text, dtype=np.uint8).reshape(k, width)
    digit_at = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, *range(20, width - 1)]
    d = np.ascontiguousarray((a[:, digit_at] - np.uint8(48)).T)  # digit j of every value: row j
    ok = (d < 10).all(axis=0)  # wraps below '0'
    seps = np.ascontiguousarray(a[:, [4, 7, 10, 13, 16, 19, width - 1]].T)
    for row, ch in enumerate(b"--T::.Z"):
        if row != 5 or width > 20:
            ok &= seps[row] == ch

    def num(*at: int) -> np.ndarray:
        v = d[digit_at.index(at[0])].astype(np.int64)
        for i in at[1:]:
            v = v * 10 + d[digit_at.index(i)]
        return v

    year, month, day = num(0, 1, 2, 3), num(5, 6), num(8, 9)
    hour, minute, second = num(11, 12), num(14, 15), num(17, 18)
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    m0 = np.clip(month - 1, 0, 11)
    dim = _MONTH_DAYS[m0] + (leap & (m0 == 1))
    ok &= (year >= 1900) & (year < 2200) & (month >= 1) & (month <= 12) & (day >= 1) & (day <= dim)
    ok &= (hour < 24) & (minute < 60) & (second < 60)
    # days since 1970-01-01 (proleptic Gregorian)
    y1 = year - 1
    days = (365 * (year - 1970) + (y1 // 4 - 1969 // 4) - (y1 // 100 - 1969 // 100) + (y1 // 400 - 1969 // 400)
            + _CUM_DAYS[m0] + ((m0 >= 2) & leap) + day - 1)
    ns = (days * 86400 + hour * 3600 + minute * 60 + second) * 1_000_000_000
    frac_digits = width - 21
    if frac_digits > 0:
        ns += num(*range(20, width - 1)) * 10 ** (9 - frac_digits)
    return ns, ok


def parse_parts(parts: list, counts: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """``(ns, given)`` as :func:`utc_ns` gives them for the values of ``parts`` laid end to end:
    one part per file, ``counts[i]`` values each, either ``(width, text)`` (the file's values,
    all ``width`` ASCII characters, joined: converted by :func:`iso_ns` where it can) or a list
    (of str / ``None``)."""
    n = int(sum(counts))
    ns = np.full(n, _NAT, dtype=np.int64)
    given = np.ones(n, dtype=bool)
    groups: dict[int, tuple[list, list]] = {}
    rest_at: list[np.ndarray] = []
    rest_vals: list = []
    pos = 0
    for part, k in zip(parts, counts):
        if type(part) is tuple:
            starts, texts = groups.setdefault(part[0], ([], []))
            starts.append(pos)
            texts.append(part[1])
        elif k:
            rest_at.append(np.arange(pos, pos + k))
            rest_vals.extend(part)
        pos += k
    for width, (starts, texts) in groups.items():
        sizes = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)) // width
        at = np.repeat(np.asarray(starts, dtype=np.int64) - np.cumsum(sizes) + sizes, sizes) + np.arange(sizes.sum())
        text = "".join(texts).encode("ascii")
        vals, ok = iso_ns(text, width)
        ns[at[ok]] = vals[ok]
        bad = np.flatnonzero(~ok)
        if len(bad):
            rest_at.append(at[bad])
            rest_vals.extend(text[i * width:(i + 1) * width].decode("ascii") for i in bad.tolist())
    if rest_vals:
        at = np.concatenate(rest_at)
        vals, g = utc_ns(rest_vals)
        ns[at] = vals
        given[at] = g
    return ns, given
