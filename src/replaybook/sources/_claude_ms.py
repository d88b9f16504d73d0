"""A Claude Code transcript decoded in one call by msgspec (private; used by ``_claude_fast``).

:func:`decode_file` gives one typed record (:class:`Rec`) per line, holding only the keys the
``steps`` frame reads; the other keys (``toolUseResult`` copies, ``thinking`` text, snapshots,
``cwd`` …) are skipped by the decoder without being built as Python objects.  It returns ``None``
— and the caller then parses the file line by line with orjson, as the reference does — unless
the records can be shown to equal what the reference reads:

* the bytes show one JSON object per line and nothing else: the file starts with ``{``, every
  newline follows a ``}`` and every newline but the last precedes a ``{``, and the data ends with
  ``}\n`` (so no blank line, no CR, no pending last line; no JSON value can span such a newline,
  since ``}`` is never followed by ``{`` inside a value), and the decoder finds exactly as many
  values as there are newlines;
* every key read has a type the reference's checks take as is: ``str`` or null for the string
  keys, ``bool`` or null for the flags, ints within ``-2**63 .. 2**63-1`` for token counts
  (orjson reads integers beyond ``2**64-1`` as floats); a value of another type (which the
  reference maps to NA) fails the decode;
* values used whole whose shape is free (tool ``input``, ``tool_name``, the line's ``content``,
  a document's or search result's ``source`` and ``title``) are kept raw and parsed by the
  caller with orjson (a failure there sends the file back too).

msgspec refuses what orjson refuses in a line — lone-surrogate escapes, control characters in
strings, bad escapes, NaN, trailing commas, nesting deeper than its limit (below orjson's) — in
skipped values as well, and both keep the last of duplicate keys, with two exceptions in values
it skips or keeps raw: invalid UTF-8, and numbers beyond the float range.  orjson refuses such a
line; the reference then reads it with ``json`` + ``deep_safe`` (``parse_json``), which gives the
same values for every key msgspec decodes (those are valid UTF-8 and typed), but (1) reads an
integer beyond 64 bits as an int where orjson reads a float, and (2) fails, quarantining the
line, on nesting deeper than about half the recursion limit.  So the caller (``_claude_fast``)
checks with orjson (a) the lines :func:`decode_file` lists as possibly that deep (``deep``: as
many opening brackets as ``max_open``) and (b) a line whose raw value used whole holds 19 digits
in a row; a line orjson refuses sends the file line by line.  An integer of more than 4300 digits
(Python's int digit limit) is read by ``json`` as written (``_json.parse_int``), so such a line in
a value not read gives its rows both ways.  ``tests/sources/test_claude_fast_equiv.py`` covers
these cases.
"""

from __future__ import annotations

from typing import Annotated, List, Union

import msgspec
import numpy as np
from msgspec import UNSET, Meta, Raw, Struct, UnsetType

__all__ = ["Rec", "Msg", "Block", "Sub", "Usage", "Decoded", "decode_file", "UNSET"]

_NULL = Raw(b"null")
#: the default of a Raw field whose key the line does not have
RAW_NULL = _NULL
#: integers orjson surely reads as ``int`` (it reads those beyond -2**63 .. 2**64-1 as ``float``,
#: which int_or_none maps to None; msgspec bounds must fit an int64)
_Int = Annotated[int, Meta(ge=-(2**63), le=2**63 - 1)]
_Str = Union[str, None]


class Usage(Struct, gc=False):
    input_tokens: Union[_Int, None] = None
    output_tokens: Union[_Int, None] = None


class Sub(Struct, gc=False):
    """An item of a ``tool_result``'s content list (text, image, tool_reference, document,
    search_result …)."""

    type: Union[str, None] = None
    text: _Str = None
    tool_name: Raw = _NULL
    source: Raw = _NULL      # document: an object; search_result: a string
    title: Raw = _NULL
    content: Raw = _NULL     # search_result: its text blocks


class Block(Struct, gc=False):
    """An item of ``message.content`` (text, thinking, tool_use, tool_result, image …)."""

    type: Union[str, None] = None
    text: _Str = None
    content: Union[str, List[Union[str, Sub]], None] = None
    tool_use_id: _Str = None
    is_error: Union[bool, None] = None
    id: _Str = None
    name: _Str = None
    input: Raw = _NULL
    tool_name: Raw = _NULL
    source: Raw = _NULL      # document, search_result
    title: Raw = _NULL


class Msg(Struct, gc=False):
    id: _Str = None
    model: _Str = None
    usage: Union[Usage, None] = None
    content: Union[str, List[Union[str, Block]], None] = None


class Rec(Struct, gc=False):
    """One line: the keys the steps frame reads."""

    uuid: _Str = None
    type: _Str = None
    isSidechain: Union[bool, None] = None
    agentId: _Str = None
    timestamp: Union[str, None, UnsetType] = UNSET   # (null, unlike a missing key, is noted)
    version: _Str = None
    sessionId: _Str = None
    parentUuid: _Str = None
    requestId: _Str = None
    subtype: _Str = None
    summary: _Str = None
    content: Raw = _NULL
    message: Union[Msg, None] = None
    forkedFrom: Raw = _NULL   # a fork's copy: {sessionId, messageUuid} (see _resume)


_DECODER = msgspec.json.Decoder(Rec)


class Decoded:
    """A file decoded by :func:`decode_file`: ``recs`` (one per line), ``ends`` (the offset of each
    line's newline) and ``deep`` (numbers of the lines, 0-based, with at least ``max_open``
    opening brackets: their nesting may be beyond what the reference reads without failing when
    orjson refuses the line — see :func:`decode_file`)."""

    __slots__ = ("recs", "ends", "deep", "data")

    def __init__(self, recs: list, ends, deep, data: bytes) -> None:
        self.recs, self.ends, self.deep, self.data = recs, ends, deep, data

    def line(self, i: int) -> bytes:
        """The bytes of line ``i`` (0-based), without its newline."""
        return self.data[(int(self.ends[i - 1]) + 1 if i else 0):int(self.ends[i])]


def decode_file(data: bytes, max_open: int) -> Decoded | None:
    """The records of a transcript's lines, or ``None`` when the file must be parsed line by line
    (see the module docstring).

    ``max_open``: lines with this many opening brackets (``[``/``{``) or more are listed in
    ``deep`` for the caller to check with orjson.  Why: where orjson refuses a line that msgspec
    takes (invalid UTF-8 or an out-of-range number in a value not read), the reference reads it
    with ``json`` and ``deep_safe``, which fail — quarantining the line — on nesting deeper than
    about half the recursion limit; a line with fewer opening brackets cannot nest that deep.
    """
    if data[:1] != b"{" or data[-2:] != b"}\n":
        return None
    # every newline follows a "}" and (but the last) precedes a "{"; numpy, since bytes.count of a
    # two-byte needle runs at a fraction of the speed of the decoder
    arr = np.frombuffer(data, dtype=np.uint8)
    nl = np.flatnonzero(arr == 10)
    n = len(nl)
    if not (arr[nl - 1] == 125).all() or not (arr[nl[:-1] + 1] == 123).all():
        return None
    try:
        recs = _DECODER.decode_lines(data)
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return None
    if len(recs) != n:
        return None
    # opening brackets per line, for the lines long enough to hold max_open pairs of brackets
    deep = np.empty(0, dtype=np.intp)
    lengths = np.diff(nl, prepend=-1)
    if n and int(lengths.max()) >= 2 * max_open:
        opening = np.flatnonzero((arr | 32) == 123)   # "[" (0x5b) or "{" (0x7b)
        per_line = np.bincount(np.searchsorted(nl, opening), minlength=n)
        deep = np.flatnonzero(per_line >= max_open)
    return Decoded(recs, nl, deep, data)
