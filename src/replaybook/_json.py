"""JSON text in and out, with integers of any size kept exact.

orjson is replaybook's JSON parser and writer, but it reads an integer beyond 64 bits
(``123456789012345678901234567890``, valid JSON per RFC 8259 §6) as a float, losing digits, and
refuses to write one.  Tool-call arguments are evidence and the join compares them, so two
different such numbers must never read alike, and the door must pass and log them as sent.

* :func:`loads` — orjson's result, except that a text holding a run of 20 or more digits (every
  integer of 2**64 or more has one; most texts have none) is read by the standard library's
  ``json``, which keeps integers exact.  Both read floats to the same double.
* :func:`dumps` — orjson's bytes, except that a value holding such an integer, or nested deeper
  than orjson writes (254 levels), is written by ``json`` instead (compact, UTF-8, the same
  spelling otherwise but for float exponents).
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

__all__ = ["loads", "dumps", "JSONDecodeError"]

#: What :func:`loads` raises for text that is not JSON (orjson's error, a ``ValueError``).
JSONDecodeError = orjson.JSONDecodeError

_LONG_DIGITS = re.compile(rb"\d{20}")
_LONG_DIGITS_STR = re.compile(r"\d{20}")


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse one JSON text (bytes or str); integers of any size stay ``int``.

    Raises:
        JSONDecodeError: ``data`` is not JSON (orjson's verdict: lone surrogates, invalid UTF-8,
            NaN literals and nesting past 1,024 levels are refused).
    """
    obj = orjson.loads(data)
    pattern = _LONG_DIGITS_STR if isinstance(data, str) else _LONG_DIGITS
    if pattern.search(data if not isinstance(data, memoryview) else bytes(data)) is not None \
            and _has_lossy_float(obj):
        text = data if isinstance(data, str) else bytes(data).decode("utf-8")
        return json.loads(text)
    return obj


def _has_lossy_float(v: Any) -> bool:
    """``v`` holds a float at or beyond 2**63 in magnitude (where orjson puts a long integer)."""
    stack = [v]
    while stack:
        x = stack.pop()
        if x.__class__ is float:
            if abs(x) >= 9.2e18:
                return True
        elif x.__class__ is dict:
            stack.extend(x.values())
        elif x.__class__ is list:
            stack.extend(x)
    return False


def dumps(v: Any, option: int | None = None, default: Any = None) -> bytes:
    """Compact JSON bytes of ``v`` (``option``, ``default``: as for ``orjson.dumps``;
    ``orjson.OPT_SORT_KEYS`` and ``default`` are honoured by the fallback too).

    Raises:
        TypeError: ``v`` holds a value JSON cannot carry (orjson's ``JSONEncodeError``, a
            ``TypeError``: lone surrogates, non-string keys without ``OPT_NON_STR_KEYS``, objects).
    """
    try:
        return orjson.dumps(v, option=option, default=default)
    except orjson.JSONEncodeError as exc:
        if "64-bit" not in str(exc) and "Recursion" not in str(exc):
            raise
    sort = bool(option and option & orjson.OPT_SORT_KEYS)
    import sys

    old = sys.getrecursionlimit()
    try:
        # nesting orjson does not write (past 254 levels) but a parser kept: room for the 1,024
        # levels JSON parsers stop at, as canonical_args gives itself
        sys.setrecursionlimit(max(old, 10_000))
        text = json.dumps(v, ensure_ascii=False, separators=(",", ":"), allow_nan=False, sort_keys=sort,
                          default=default)
        return text.encode("utf-8")
    except (ValueError, UnicodeEncodeError, RecursionError) as exc:  # NaN, Infinity; lone surrogate; deeper still
        raise orjson.JSONEncodeError(str(exc)) from None
    finally:
        sys.setrecursionlimit(old)
