"""JSON text in and out, with integers of any size kept exact.

orjson is replaybook's JSON parser and writer, but it reads an integer beyond 64 bits
(``123456789012345678901234567890``, valid JSON per RFC 8259 §6) as a float, losing digits, and
refuses to write one.  Tool-call arguments are evidence and the join compares them, so two
different such numbers must never read alike, and the door must pass and log them as sent.

* :func:`loads` — orjson's result, except that a text holding a run of 19 or more digits (every
  integer orjson reads as a float — below -2**63 or from 2**64 — has one; most texts have none)
  and a float where such an integer would be is read by the standard library's ``json``, which
  keeps integers exact.  Both read floats to the same double.
* :func:`dumps` — orjson's bytes, except that a value holding such an integer, or nested deeper
  than orjson writes (254 levels), is written by ``json`` instead (compact, UTF-8, the same
  spelling otherwise but for float exponents).
* :class:`NumberAsWritten` — what :func:`loads_lenient` reads a number no double holds as
  (``1e400``, and the ``NaN``/``Infinity`` literals Python's ``json`` writes): the float every
  parser reads (±inf, nan) that also keeps its text, so it is compared and written as sent,
  never as the string ``"Infinity"`` or as ``null``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

import orjson

__all__ = ["loads", "loads_lenient", "dumps", "leaves", "JSONDecodeError", "nesting_room", "NumberAsWritten", "parse_int"]

#: What :func:`loads` raises for text that is not JSON (orjson's error, a ``ValueError``).
JSONDecodeError = orjson.JSONDecodeError

_LONG_DIGITS = re.compile(rb"\d{19}")
_LONG_DIGITS_STR = re.compile(r"\d{19}")


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse one JSON text (bytes or str); integers of any size stay ``int``.

    Raises:
        JSONDecodeError: ``data`` is not JSON (orjson's verdict: lone surrogates, invalid UTF-8,
            NaN literals and nesting past 1,024 levels are refused).
    """
    pattern = _LONG_DIGITS_STR if isinstance(data, str) else _LONG_DIGITS
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as refused:
        # an integer of 310 digits or more is past the double range: orjson refuses the text
        if pattern.search(data if not isinstance(data, memoryview) else bytes(data)) is None:
            raise
        try:
            text = data if isinstance(data, str) else bytes(data).decode("utf-8")
            return loads_lenient(text)
        except orjson.JSONDecodeError:
            raise
        except ValueError:  # (not UTF-8, or not JSON for json either: orjson's own complaint)
            raise refused from None
    if pattern.search(data if not isinstance(data, memoryview) else bytes(data)) is not None \
            and _has_lossy_float(obj):
        text = data if isinstance(data, str) else bytes(data).decode("utf-8")
        return _deep_enough(json.loads, text, parse_int=parse_int)
    return obj


class NumberAsWritten(float):
    """A JSON number no double holds, as :func:`loads_lenient` reads it: a number beyond the
    double range (``1e400``, ``-2.5E+999``) or one of the ``NaN``, ``Infinity`` and
    ``-Infinity`` literals Python's ``json.dumps`` writes (not JSON, RFC 8259 §6).

    Its float value is what any parser reads (±inf or nan), so numeric checks see it as such
    (the door refuses it, ``door:number-out-of-range``); ``text`` is the number exactly as it was
    written.  :func:`~replaybook.canonical.canonical_args` compares it by its exact value (never
    equal to a string, nor ``1e400`` to ``1e401``) and :func:`dumps` writes ``text`` back.
    """

    __slots__ = ("text",)

    def __new__(cls, text: str) -> "NumberAsWritten":
        obj = super().__new__(cls, float(text))
        obj.text = text
        return obj

    def __reduce__(self):  # (pickled whole, to and from load helpers)
        return NumberAsWritten, (self.text,)

    def __repr__(self) -> str:  # (as written: schema messages quote values by their repr)
        return self.text


def parse_int(text: str) -> int | float:
    """A JSON integer as Python's ``json`` reads it with this as ``parse_int``: exact, or — past
    Python's limit on the digits ``int()`` converts (4,300; a value no log means as a count) — a
    :class:`NumberAsWritten` (±inf, its text kept): ``json`` had raised ValueError, and a whole
    document of records was lost for one number in a field no loader reads."""
    try:
        return int(text)
    except ValueError:
        return NumberAsWritten(text)


def _parse_float(text: str) -> float:
    v = float(text)
    return v if v - v == 0.0 else NumberAsWritten(text)  # (inf - inf is nan)


def loads_lenient(text: str) -> Any:
    """The standard library's reading of a JSON text orjson refused: lone-surrogate escapes,
    ``NaN``/``Infinity`` literals (Python's ``json.dumps`` writes them) and numbers beyond the
    double range (``1e400``) are read — those numbers as :class:`NumberAsWritten` —, integers
    stay exact, and there is room for the nesting orjson reads.

    Raises:
        json.JSONDecodeError: not JSON, or nested deeper than 1,024-odd levels.
    """
    return _deep_enough(json.loads, text, parse_float=_parse_float, parse_int=parse_int,
                        parse_constant=NumberAsWritten)


def _deep_enough(fn, *args, levels: int = 0, **kw) -> Any:
    """``fn(*args, **kw)`` (a standard-library JSON parse or write, which recurses once per level
    of nesting) with room for the 1,024 levels orjson reads (``levels``: other room), and not
    much more: the limit also keeps a far deeper text from exhausting the C stack.

    Raises:
        JSONDecodeError: nested deeper than that.
    """
    import sys

    here, f = 0, sys._getframe()
    while f is not None:
        here += 1
        f = f.f_back
    old = sys.getrecursionlimit()
    try:
        # exactly this much room, even under nesting_room's higher limit: what a parse accepts
        # here, the recursive walks after it must reach too
        sys.setrecursionlimit(here + (levels or _PARSE_LEVELS))
        return fn(*args, **kw)
    except RecursionError:
        exc = orjson.JSONDecodeError("nested too deeply", "", 0)
        exc.placeless = True  # (the recursion limit was met somewhere in the text)
        raise exc from None
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError):
            raise
        # an integer of more digits than int() reads (sys.int_info.str_digits_check_threshold)
        err = orjson.JSONDecodeError(f"an integer of more than {sys.get_int_max_str_digits():,} digits "
                                     "(more than Python reads)" if "digits" in str(exc) else str(exc), "", 0)
        err.placeless = True
        raise err from None
    finally:
        sys.setrecursionlimit(old)


#: Levels of nesting the standard-library fallbacks read (orjson reads 1,024), with some room.
_PARSE_LEVELS = 1_100


def leaves(v: Any) -> Iterator[Any]:
    """Every value of a parsed JSON value that is not an object or array (object values and array
    items, at any depth, in no set order), without recursion: nesting a parser accepted cannot
    exhaust the interpreter's stack here."""
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
        else:
            yield x


def _has_lossy_float(v: Any) -> bool:
    """``v`` holds a float at or beyond 2**63 in magnitude (where orjson puts a long integer)."""
    return any(x.__class__ is float and abs(x) >= 9.2e18 for x in leaves(v))


def dumps(v: Any, option: int | None = None, default: Any = None) -> bytes:
    """Compact JSON bytes of ``v`` (``option``, ``default``: as for ``orjson.dumps``;
    ``orjson.OPT_SORT_KEYS`` and ``default`` are honoured by the fallback too).

    Raises:
        TypeError: ``v`` holds a value JSON cannot carry (orjson's ``JSONEncodeError``, a
            ``TypeError``: lone surrogates, non-string keys without ``OPT_NON_STR_KEYS``, objects).
    """
    if default is None:
        default = _as_written
    else:
        default = _chained(default)
    try:
        return orjson.dumps(v, option=option, default=default)
    except orjson.JSONEncodeError as exc:
        if "64-bit" not in str(exc) and "Recursion" not in str(exc):
            raise
    sort = bool(option and option & orjson.OPT_SORT_KEYS)
    if _has_number_as_written(v):  # (json cannot write a number's own text: placeholders)
        return _with_numbers_as_written(v, sort, default)
    try:
        # nesting orjson does not write (past 254 levels) but a parser kept: room for the 1,024
        # levels JSON parsers stop at
        # (twice the parsers' room: what any reader here accepted can always be written back)
        text = _deep_enough(json.dumps, v, ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                            sort_keys=sort, default=default, levels=2 * _PARSE_LEVELS)
        return text.encode("utf-8")
    except (ValueError, UnicodeEncodeError) as exc:  # NaN, Infinity; a lone surrogate; deeper still
        raise orjson.JSONEncodeError(getattr(exc, "msg", None) or str(exc) or type(exc).__name__) from None


def _as_written(o: Any) -> Any:
    """orjson's ``default`` for a :class:`NumberAsWritten`: its text, as written."""
    if o.__class__ is NumberAsWritten:
        return orjson.Fragment(o.text.encode("ascii"))
    raise TypeError


def _chained(default):
    """``default`` that first writes a :class:`NumberAsWritten` as written."""
    def run(o: Any) -> Any:
        return _as_written(o) if o.__class__ is NumberAsWritten else default(o)
    return run


def _has_number_as_written(v: Any) -> bool:
    return any(x.__class__ is NumberAsWritten for x in leaves(v))


#: Marks a number's text inside a string while ``json`` writes (a lone surrogate: no text a
#: loader returns holds one once made safe, and none is written by orjson).
_MARK = "\udfff"


def _with_numbers_as_written(v: Any, sort: bool, default: Any) -> bytes:
    def mark(o: Any) -> Any:
        if o.__class__ is NumberAsWritten:
            return _MARK + o.text + _MARK
        if default is None or default is _as_written:
            raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")
        return default(o)

    def plain(x: Any) -> Any:  # (json writes a float subclass as a float: hand it to mark)
        if x.__class__ is NumberAsWritten:
            return _Marked(x)
        if isinstance(x, dict):
            return {k: plain(y) for k, y in x.items()}
        if isinstance(x, list):
            return [plain(y) for y in x]
        return x

    def unwrap(o: Any) -> Any:
        return mark(o.n) if isinstance(o, _Marked) else mark(o)

    try:
        text = _deep_enough(lambda: json.dumps(_deep_enough(plain, v, levels=2 * _PARSE_LEVELS),
                                               ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                                               sort_keys=sort, default=unwrap),
                            levels=2 * _PARSE_LEVELS)
    except (ValueError, UnicodeEncodeError) as exc:
        raise orjson.JSONEncodeError(getattr(exc, "msg", None) or str(exc) or type(exc).__name__) from None
    text = text.replace('"' + _MARK, "").replace(_MARK + '"', "")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:  # (a lone surrogate of the value's own: orjson refuses it too)
        raise orjson.JSONEncodeError(str(exc)) from None


class _Marked:
    __slots__ = ("n",)

    def __init__(self, n: NumberAsWritten) -> None:
        self.n = n


#: The interpreter's recursion limit while a parsed value is walked: JSON parsers hand over up to
#: 1,024 levels of nesting and a recursive walk takes a few frames per level.
NESTING_ROOM = 6_000


def nesting_room(fn):
    """Decorate ``fn`` (a loader, a sniffer, a report section) to run with the recursion limit at
    least :data:`NESTING_ROOM`: recursive walks over parsed values (surrogate clean-up, gateway
    truncation markers, previews) then reach every depth a parser accepts instead of failing
    with ``RecursionError`` at a few hundred levels.  The limit is restored on return."""
    import functools
    import sys

    @functools.wraps(fn)
    def run(*args, **kw):
        old = sys.getrecursionlimit()
        if old >= NESTING_ROOM:
            return fn(*args, **kw)
        sys.setrecursionlimit(NESTING_ROOM)
        try:
            return fn(*args, **kw)
        finally:
            sys.setrecursionlimit(old)

    return run
