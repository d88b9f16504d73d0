"""Canonical tool-call arguments: one stable text key per arguments object.

The join matches a transcript's tool call to a door call by tool *and* arguments, so both sides
must spell the same arguments the same way.  :func:`canonical_args` is the only function that
decides that spelling.  Rules (version :data:`CANONICAL_VERSION`):

1. Objects: keys sorted by code point, at every depth; keys and string values NFC-normalised.
2. No insignificant whitespace: ``{"a":1,"b":[1,2]}``.
3. Numbers: an integral float equals its integer, at any size (``1.0`` → ``1``, ``-0.0`` → ``0``,
   ``1e19`` → ``10000000000000000000``: that double's exact value); other
   floats are written in Python's shortest round-trip form (``0.1`` → ``0.1``).  A number with a
   fraction or exponent is the IEEE double it reads as (RFC 8259 §6), so spellings that read
   alike agree (``0.30000000000000000001`` and ``0.3``; ``1e-400`` and ``0``); integers are
   exact at any size.  Booleans stay
   booleans (``true`` is not ``1``).  A number beyond the double range (``1e400``, read as
   :class:`replaybook._json.NumberAsWritten`) is compared by its exact decimal value, written
   as its digits without trailing zeros and a decimal exponent (``1e400``, ``10E+399`` →
   ``1E400``; ``-2.50e999`` → ``-25E998``), so it never equals another such number nor
   a string.  NaN and ±Infinity (Python's literals, not JSON) are written as the bare tokens
   ``NaN``, ``Infinity``, ``-Infinity``, never as strings.  (The door refuses all of these,
   ``door:number-out-of-range``.)
4. Arrays keep their order (order is meaningful in arguments).
5. ``None``/``null`` is ``null``; a missing arguments object (``None`` at top level) is ``{}``.
6. Output is ASCII-safe UTF-8 text (non-ASCII kept as characters, lone surrogates replaced).
7. Integers beyond 64 bits are written exactly, all digits (the whole text is then written by
   Python's ``json``, whose float spelling can differ from orjson's in the exponent only).
"""

from __future__ import annotations

import math
import unicodedata
from decimal import Decimal
from functools import lru_cache
from typing import Any

import orjson

from . import _json
from ._text import deep_safe, safe_str

__all__ = ["canonical_args", "canonical_args_cached", "canonical_args_text", "arguments_from_text",
           "CANONICAL_VERSION"]

#: Bumped whenever a rule above changes, since stored keys stop comparing equal.
CANONICAL_VERSION = 3  # 3: integral doubles of 2**63 or more equal their integer


def _norm(v: Any) -> Any:
    if isinstance(v, str):
        return unicodedata.normalize("NFC", safe_str(v)) if not v.isascii() else v
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if v.__class__ is _json.NumberAsWritten:
            return _exact_token(v.text)
        if math.isnan(v):
            return _NAN
        if math.isinf(v):
            return _INF if v > 0 else _NEG_INF
        if v.is_integer():  # exact at any size: 1e19 is the integer 10**19, as written in full
            return int(v)
        return v
    if isinstance(v, dict):
        return {(_norm(k) if isinstance(k, str) else str(k)): _norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    return str(v)


def canonical_args(arguments: Any) -> str:
    """Return the canonical JSON text of a tool call's arguments.

    Args:
        arguments: the arguments as parsed JSON (usually a ``dict``); ``None`` means ``{}``.

    Returns:
        Compact JSON text with sorted keys, e.g. ``{"columns":["mpg","cyl"],"path":"demo/"}``.
        Two argument objects that differ only in key order, whitespace, ``1`` vs ``1.0`` or
        Unicode normal form give the same text.

    Raises:
        ValueError: the arguments are nested deeper than ~5,000 levels (no JSON parser replaybook
            uses returns that much nesting: orjson stops at 1,024).
    """
    if arguments is None:
        arguments = {}
    try:
        return _canonical(arguments)
    except (RecursionError, orjson.JSONEncodeError):
        pass
    # deeper than the interpreter's default limit allows: JSON parsers stop near 1,024 levels,
    # so retry once with room for that much nesting rather than fail the whole load
    import sys

    old = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(old, _DEEP_LIMIT))
        return _canonical(arguments)
    except (RecursionError, orjson.JSONEncodeError):
        raise ValueError(f"arguments nested too deeply to canonicalise (over ~{_DEEP_LIMIT // 2} levels)") from None
    finally:
        sys.setrecursionlimit(old)


_DEEP_LIMIT = 10_000


_NAN, _INF, _NEG_INF = (_json.NumberAsWritten(t) for t in ("NaN", "Infinity", "-Infinity"))


def _exact_token(text: str) -> "_json.NumberAsWritten":
    """The canonical spelling of a number no double holds (``1e400``): its exact decimal value
    as digits without trailing zeros and a decimal exponent; the ``NaN``/``Infinity`` literals as
    themselves.  :func:`replaybook._json.dumps` writes it as that bare token."""
    if text in ("NaN", "Infinity", "-Infinity"):
        return {"NaN": _NAN, "Infinity": _INF, "-Infinity": _NEG_INF}[text]
    sign, digits, exp = Decimal(text).as_tuple()  # (exact: no context, no rounding)
    ds = "".join(map(str, digits)).lstrip("0")
    stripped = ds.rstrip("0")
    exp += len(ds) - len(stripped)
    return _json.NumberAsWritten(f"{'-' if sign else ''}{stripped}E{exp}")


def _canonical(arguments: Any) -> str:
    # _json.dumps: orjson's writing; the standard library's for integers beyond 64 bits and
    # nesting past 254 levels; numbers no double holds as their canonical text
    return _json.dumps(_norm(arguments), option=orjson.OPT_SORT_KEYS).decode("utf-8")


_CACHE: dict[bytes, str] = {}


def canonical_args_cached(arguments: Any) -> str:
    """:func:`canonical_args`, cached by the exact JSON spelling of ``arguments`` (the same
    bytes are the same value; transcripts and logs repeat arguments a lot).  At most 65,536
    spellings are kept; the cache is emptied when full."""
    try:
        key = orjson.dumps(arguments)
    except (TypeError, orjson.JSONEncodeError):  # not writable by orjson: no cache
        return canonical_args(arguments)
    if b"null" in key and any(isinstance(x, float) and x - x != 0.0 for x in _json.leaves(arguments)):
        return canonical_args(arguments)  # (orjson writes NaN and infinity as null: not a key)
    out = _CACHE.get(key)
    if out is None:
        if len(_CACHE) >= 65536:
            _CACHE.clear()
        out = _CACHE[key] = canonical_args(arguments)
    return out


@lru_cache(maxsize=65536)
def canonical_args_text(text: str) -> str:
    """Canonical key for arguments given as JSON *text* (cached: logs repeat arguments a lot).

    Raises:
        ValueError: ``text`` is not JSON.
    """
    try:
        obj = _json.loads(text)  # integers beyond 64 bits stay exact
    except orjson.JSONDecodeError:
        obj = _json.loads_lenient(text)
    return canonical_args(obj)


def arguments_from_text(text: str) -> Any:
    """Tool-call arguments a client wrote as JSON *text* — Codex's ``function_call.arguments``,
    OTel's ``gen_ai.tool.call.arguments``, a Gemini record another program wrote — parsed the one
    way every loader parses them, so the same call gets the same :func:`canonical_args` key
    whichever client logged it.

    Blank text is ``{}`` (no arguments); integers of any size stay exact (:func:`_json.loads`);
    text orjson refuses but JSON readers take (``1e400``, ``NaN``, a lone-surrogate escape) is read
    by :func:`_json.loads_lenient`; no lone surrogate is left in any string or key (a ``\ud800``
    escape, or one already decoded into ``text``, becomes U+FFFD).

    Raises:
        ValueError: ``text`` is not JSON, or nests deeper than a parser reads.
    """
    if not text.strip():
        return {}
    try:
        obj = _json.loads(text)
    except orjson.JSONDecodeError:
        try:
            return deep_safe(_json.loads_lenient(text))
        except RecursionError:
            raise ValueError("arguments nest deeper than a JSON parser reads") from None
    if "\\ud" in text or "\\uD" in text:
        obj = deep_safe(obj)
    return obj

