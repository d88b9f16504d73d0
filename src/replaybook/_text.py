"""Text helpers shared by the loaders: safe strings, truncation, timestamps."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["safe_str", "deep_safe", "needs_safe", "truncate", "to_utc", "before_by_ms", "MAX_SHIFT_MS", "SHOW_INVISIBLE",
           "TEXT_LIMIT", "str_or_none",
           "int_or_none", "float_or_none", "utf8_error_place", "ONE_LINE", "one_line", "TIME_RANGE",
           "beyond_time_range", "time_words"]

#: Characters of free text (prompts, model output, tool results) kept in a frame cell.
#: The full size in UTF-8 bytes is kept beside it (``text_bytes``).
TEXT_LIMIT = 4000

_SURROGATE = re.compile("[\ud800-\udfff]")


#: Invisible characters that change how the text around them reads, mapped to their visible
#: ``\\uNNNN`` form (for ``str.translate``): bidirectional embeddings, overrides and isolates
#: (``evil\u202egnp.exe`` shows as ``evilexe.png``) and zero-width spaces (Unicode TR9;
#: CVE-2021-42574).  Where evidence is shown to a reader (report tables, chart tooltips) they
#: are written out so a name cannot be disguised.  The zero-width joiner is left alone: emoji
#: sequences need it.
SHOW_INVISIBLE = {c: f"\\u{c:04x}" for c in (0x061C, 0x200B, 0x200E, 0x200F, *range(0x202A, 0x202F),
                                           0x2060, *range(0x2066, 0x206A), 0xFEFF)}


#: Every character that would act on a terminal or break a line, mapped to a visible escape (for
#: ``str.translate``): C0 controls (``\\r``, ``\\n``, ``\\t`` by name, the rest — ESC starting a colour,
#: a cursor move or a window-title sequence — as ``\\xNN``), DEL, C1 (``\\x9b`` is a CSI too), the
#: Unicode line and paragraph separators, and :data:`SHOW_INVISIBLE`.
ONE_LINE = {**{c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), *range(0x7F, 0xA0))},
            0x0D: "\\r", 0x0A: "\\n", 0x09: "\\t", 0x2028: "\\u2028", 0x2029: "\\u2029", **SHOW_INVISIBLE}


def one_line(text: Any) -> str:
    """``text`` (``str()`` of it) as one line of plain characters, for a terminal: a log's value
    holding ESC sequences, CR or a newline could otherwise colour, clear or forge the lines
    around it (a key ending ``\\n  outcome denied`` printed a line of its own).  See
    :data:`ONE_LINE`."""
    return str(text).translate(ONE_LINE)


def safe_str(s: str) -> str:
    """Return ``s`` with lone UTF-16 surrogates replaced by U+FFFD.

    JSON allows escapes such as ``\\udcb2`` that decode to lone surrogates; Python keeps them
    in ``str`` but they cannot be encoded to UTF-8 (HTML, Parquet).  Valid surrogate *pairs*
    are joined into their code point.
    """
    if s.isascii() or not _SURROGATE.search(s):  # isascii is O(1) on CPython
        return s
    return s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def deep_safe(v: Any) -> Any:
    """``v`` with lone surrogates replaced in every string and key, at any depth (dicts, lists)."""
    if isinstance(v, str):
        return safe_str(v)
    if isinstance(v, dict):
        return {(safe_str(k) if isinstance(k, str) else k): deep_safe(x) for k, x in v.items()}
    if isinstance(v, list):
        return [deep_safe(x) for x in v]
    return v


def needs_safe(raw: bytes) -> bool:
    """True when a raw JSON line may decode to lone surrogates (escapes or invalid UTF-8)."""
    if b"\\ud" in raw or b"\\uD" in raw:
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def truncate(s: str | None, limit: int = TEXT_LIMIT) -> tuple[str | None, int | None]:
    """Return ``(truncated surrogate-safe text, size of the full text in UTF-8 bytes)``.

    ``None`` gives ``(None, None)``.  Truncated text ends with ``" …[+N chars]"``.
    """
    if s is None:
        return None, None
    s = safe_str(s)
    size = len(s.encode("utf-8"))
    if len(s) > limit:
        return s[:limit] + f" …[+{len(s) - limit} chars]", size
    return s, size


def str_or_none(v: Any) -> str | None:
    """``v`` when it is a non-empty string, else ``None``."""
    return v if isinstance(v, str) and v != "" else None


_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def int_or_none(v: Any, *, integral_float: bool = False) -> int | None:
    """``v`` when it is an int that fits a signed 64-bit integer (booleans excluded), else ``None``.

    With ``integral_float`` a float with no fractional part (``3.0``) is accepted as well and
    returned as an int; other floats, strings, integers beyond int64 (which no ``Int64`` column
    can hold) and everything else give ``None``.
    """
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if _I64_MIN <= v <= _I64_MAX else None
    if integral_float and isinstance(v, float) and v.is_integer() and _I64_MIN <= v < _I64_MAX:
        return int(v)
    return None


def float_or_none(v: Any) -> float | None:
    """``v`` as a float when it is an int or a float (booleans excluded), else ``None``."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


#: The longest logged duration a start (or end) time is derived from, in ms (a year).  A duration
#: beyond it (``1e300``), negative or not finite is kept as logged but moves no time: it would
#: put a call's start after its end, or outside what a timestamp holds.
MAX_SHIFT_MS = 366 * 86_400_000


def before_by_ms(t: Any, ms: Any) -> "pd.Timestamp | None":
    """``t`` (an RFC 3339 string or a timestamp) minus ``ms`` milliseconds, as a UTC
    timestamp; ``None`` when ``t`` is not a date-time or ``ms`` is not a usable duration (a
    number in [0, :data:`MAX_SHIFT_MS`])."""
    import math

    import pandas as pd

    if not isinstance(ms, (int, float)) or isinstance(ms, bool) or not math.isfinite(ms) \
            or not 0 <= ms <= MAX_SHIFT_MS:
        return None
    t = to_utc([t]).iloc[0] if not isinstance(t, pd.Timestamp) else t
    if pd.isna(t):
        return None
    out = t - pd.Timedelta(milliseconds=ms)
    return out if out >= _ns_bounds()[0] else None


def _ns_bounds():
    import pandas as pd

    return pd.Timestamp.min.tz_localize("UTC"), pd.Timestamp.max.tz_localize("UTC")


#: The text :func:`to_utc` reads as a date-time: an RFC 3339 ``date-time`` — a full date, ``T``
#: (or ``t``, or a space), hours, minutes *and* seconds, any number of fractional digits, an offset
#: ``Z``/``z``, ``±HH:MM``, ``±HHMM`` or ``±HH`` (optionally after one space) or none (read as UTC;
#: the loaders say so) — with blanks around it ignored.  A year, a date, or a date with hours or
#: hours and minutes alone (``"2025"``, ``"2025-10-01"``, ``"2025-10-01T02Z"``,
#: ``"2025-10-01T02:03Z"``) is not a date-time: pandas' ISO 8601 parser would place it at midnight
#: or at the top of the hour or minute, an instant the log never named.  So are ISO 8601's basic
#: (``20251001T020304Z``), week and ordinal forms.  (The door log's JSON Schema, whose
#: ``date-time`` requires the seconds too, agrees.)
_DATE_TIME = re.compile(r"\s*\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(?:\.\d+)? ?(?:[Zz]|[+-]\d\d(?::?\d\d)?)?\s*",
                        re.ASCII)


def to_utc(values: Any) -> "pd.Series":
    """Parse RFC 3339 date-times (any offset, 0-9 fractional digits, ``T``/``Z`` in either case;
    see :data:`_DATE_TIME` for exactly what is read) to UTC.

    Returns a ``datetime64[ns, UTC]`` Series; unparseable or missing values become ``NaT``, and
    so do text that is not a full date-time (a year, a date, a time without seconds: see
    :data:`_DATE_TIME`) and date-times outside what nanoseconds can hold (before 1677-09-21 or
    after 2262-04-11), so the caller quarantines them instead of the load failing.  A leap
    second (second ``60``) is the first second of the next minute, as POSIX time counts it
    (:func:`_leap_second`).  Values that are not text (``datetime``, ``Timestamp``) are
    converted as pandas converts them.
    """
    import pandas as pd

    s = pd.Series(values, dtype="object")
    match = _DATE_TIME.fullmatch
    partial: list[int] = []  # a year, a date, a time without seconds …: pandas would read them
    lower: list[int] = []  # RFC 3339 allows "t" and "z" in lower case; the ISO parser takes upper case only
    for i, v in enumerate(s.tolist()):
        if v.__class__ is str or isinstance(v, str):
            if match(v) is None:
                partial.append(i)
            elif ("t" in v or "z" in v) and v.isascii():
                lower.append(i)
    if partial or lower:
        s = s.copy()
        if partial:
            s.iloc[partial] = None
        if lower:
            s.iloc[lower] = [s.iloc[i].upper() for i in lower]
    out = pd.to_datetime(s, utc=True, format="ISO8601", errors="coerce")
    if str(out.dtype) != "datetime64[ns, UTC]":  # pandas 3 parses at µs: range-check before ns
        lo, hi = _ns_bounds()
        out = out.where((out >= lo) & (out <= hi))
    out = out.astype("datetime64[ns, UTC]")
    failed = out.isna() & s.map(lambda v: v.__class__ is str and ":60" in v)
    if failed.any():
        out = out.copy()
        for i in failed.to_numpy().nonzero()[0]:
            out.iloc[i] = _leap_second(s.iloc[i])
    return out


#: a date-time whose second is 60, in the forms the ISO parser takes for other seconds
_LEAP = re.compile(r"(\d{4}-\d\d-\d\d[T ]\d\d:\d\d):60(\.\d{1,9})?(Z|[+-]\d\d:?\d\d)?", re.ASCII)


def _leap_second(v: str) -> "pd.Timestamp | pd.NaT":
    """A leap second (``…T23:59:60.25Z``: RFC 3339 §5.6 allows second 60) as POSIX time counts
    it, the first second of the next minute (``…T00:00:00.25Z`` of the next day), the instant
    ``calendar.timegm`` gives for it; ``NaT`` for any other text."""
    import pandas as pd

    m = _LEAP.fullmatch(v.upper())
    if m is None:
        return pd.NaT
    at = pd.to_datetime(f"{m.group(1)}:59{m.group(2) or ''}{m.group(3) or ''}", utc=True, format="ISO8601",
                        errors="coerce")
    return at + pd.Timedelta(seconds=1) if not pd.isna(at) else pd.NaT


def utf8_error_place(data: bytes, exc: UnicodeDecodeError) -> tuple[int, int]:
    """``(line, column)``, both 1-based, of the first byte ``exc`` (raised decoding ``data`` as
    UTF-8) names, the column counted in characters: an error can then say where in the file, as
    an editor shows it, rather than a byte position."""
    line_start = data.rfind(b"\n", 0, exc.start) + 1
    before = data[line_start:exc.start].decode("utf-8", "replace")  # (valid UTF-8: the first error is here)
    return data.count(b"\n", 0, exc.start) + 1, len(before) + 1


#: The times a frame holds (pandas' nanosecond timestamps), in words.
TIME_RANGE = "1677-09-21 to 2262-04-11 UTC"


def beyond_time_range(text: Any) -> bool:
    """Whether ``text`` is a date-time (as :func:`to_utc` takes it, :data:`_DATE_TIME`, and
    Python's ``fromisoformat`` reads it) that a frame cannot hold: before 1677-09-21 or after 2262-04-11 UTC
    (``9999-12-31T23:59:59Z``, ``0001-01-01T00:00:00Z``).  ``False`` for anything else."""
    from datetime import datetime, timezone

    if not isinstance(text, str) or not 10 <= len(text) <= 64 or _DATE_TIME.fullmatch(text) is None:
        return False  # (a date alone, "9999-12-31", is no date-time: not "beyond the range" either)
    try:
        t = datetime.fromisoformat(text.strip())
    except ValueError:
        return False
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    try:
        t = t.astimezone(timezone.utc)
    except (OverflowError, ValueError):  # (year 1 or 9999 shifted past the calendar by its offset)
        return True
    return not (datetime(1677, 9, 22, tzinfo=timezone.utc) <= t < datetime(2262, 4, 11, tzinfo=timezone.utc))


def time_words(text: Any) -> str:
    """Why a logged time was not read, in words that follow its text: ``is not a date-time``,
    or — a valid date-time out of a frame's range (:func:`beyond_time_range`) — ``is a date-time
    beyond the times a frame holds (1677-09-21 to 2262-04-11 UTC)``."""
    return (f"is a date-time beyond the times a frame holds ({TIME_RANGE})" if beyond_time_range(text)
            else "is not a date-time")
