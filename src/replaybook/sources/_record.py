"""The ``raw`` cell of the ``access`` frame: a source record read on first use.

An investigator opens ``raw`` for a handful of rows (drill-down); a load of a million
CloudTrail records or S3 log lines should not build a million dicts nobody reads.  A
:class:`SourceRecord` keeps the record's exact source text (a slice of the file, after gunzip)
and the function that turns that text into the record as the loader's reference path builds
it (parsed, surrogate-cleaned, credentials redacted).  It parses once, on first use, and then
behaves as that dict: ``rec["eventName"]``, ``rec.get(...)``, ``dict(rec)``, ``rec == {...}``,
iteration and ``len`` are all the dict's.

The source text itself is on :attr:`SourceRecord.text` — the bytes as they stood in the file,
which is what an investigator quotes as evidence.  Note that it is *not* redacted: the
redaction the loader applies is on the parsed value only.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from itertools import repeat
from typing import Any, Callable, Iterator

__all__ = ["SourceRecord", "SliceRecord", "as_dict"]


class SourceRecord(Mapping):
    """A read-only mapping parsed from ``text`` by ``parse`` on first access.

    Args:
        text: the record's exact source bytes (``bytes``) or line (``str``).
        parse: ``parse(text) -> dict`` — the loader's reference construction of ``raw`` from
            that text.  It must not fail on text the loader already accepted; if it does, the
            error propagates from the first access (a bug, not bad input).

    Equality compares the parsed dict, so a frame holding these compares equal to one holding
    the dicts (``pandas.testing.assert_frame_equal`` included).  Not hashable (as a dict).
    """

    __slots__ = ("text", "_parse", "_value")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, text: bytes | str, parse: Callable[[Any], dict]):
        self.text = text
        self._parse = parse
        self._value: dict | None = None

    @property
    def value(self) -> dict:
        """The parsed record (a plain ``dict``; parsed on the first call, then kept)."""
        v = self._value
        if v is None:
            v = self._value = self._parse(self.text)
        return v

    @property
    def parsed(self) -> bool:
        """Whether the record has been parsed yet (it is, on its first use as a mapping)."""
        return getattr(self, "_value", None) is not None

    def __getitem__(self, key: str) -> Any:
        return self.value[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __contains__(self, key: object) -> bool:
        return key in self.value

    def get(self, key: str, default: Any = None) -> Any:
        return self.value.get(key, default)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SourceRecord):
            return self.value == other.value
        if isinstance(other, Mapping):
            return self.value == (other if isinstance(other, dict) else dict(other))
        return NotImplemented

    def __repr__(self) -> str:
        return repr(self.value)

    def __reduce__(self):  # pickles (and deep-copies) as the plain dict
        return (dict, (self.value,))


_VALUE_GET = SourceRecord._value.__get__  # the per-instance slots of the base class
_VALUE_SET = SourceRecord._value.__set__
_TEXT_GET = SourceRecord.text.__get__
_PARSE_SET = SourceRecord._parse.__set__
_NEW = object.__new__
#: a span is ``start << 32 | length``: both below 4 GiB, and the start below 2 GiB so that
#: spans fit numpy's int64
MAX_SPAN_SOURCE = 2**31


class SliceRecord(SourceRecord):
    """A :class:`SourceRecord` whose text is held as a reference to the bytes of the whole
    file (or document) and the record's place in them; :attr:`text` slices it on use, so a
    million records need not be copied out one by one.  Made with :meth:`slices`.

    A subclass may set ``_parse`` as a class attribute (one parser for all its records)
    instead of passing one to :meth:`slices`.
    """

    __slots__ = ("_src", "_span")

    @property
    def text(self) -> bytes | str:
        """The record's exact source bytes."""
        try:
            src = _SRC_GET(self)
        except AttributeError:
            return _TEXT_GET(self)
        span = _SPAN_GET(self)
        start = span >> 32
        return src[start:start + (span & 0xFFFFFFFF)]

    @property
    def value(self) -> dict:
        """The parsed record (a plain ``dict``, parsed on the first call, then kept)."""
        try:
            v = _VALUE_GET(self)
        except AttributeError:
            v = None
        if v is None:
            v = self._parse(self.text)
            _VALUE_SET(self, v)
        return v

    @classmethod
    def slices(cls, src: bytes, spans: list[int], parse: Callable[[Any], dict] | None = None) -> list:
        """One record of ``src`` per span (``start << 32 | length``, byte offsets; ``src``
        shorter than :data:`MAX_SPAN_SOURCE`), each parsed by ``parse`` (default: the class's
        own ``_parse``), made without a Python-level call per record (C-level allocation and
        slot stores)."""
        out = list(map(_NEW, repeat(cls, len(spans))))
        deque(map(_SRC_SET, out, repeat(src)), 0)
        deque(map(_SPAN_SET, out, spans), 0)
        if parse is not None:
            deque(map(_PARSE_SET, out, repeat(parse)), 0)
        return out


_SRC_GET, _SRC_SET = SliceRecord._src.__get__, SliceRecord._src.__set__
_SPAN_GET, _SPAN_SET = SliceRecord._span.__get__, SliceRecord._span.__set__


def as_dict(v: Any) -> Any:
    """``v`` as a plain ``dict`` when it is a :class:`SourceRecord`, else ``v`` unchanged (for
    serialisers that only know dicts: orjson, pyarrow)."""
    return v.value if isinstance(v, SourceRecord) else v
