"""Read-only JSON Lines reading shared by the loaders.

Source files are evidence: they are opened read-only (``rb``) and never written.  Gzip is
recognised by its magic bytes, not by the file name.  Each line becomes a :class:`Line`:
parsed object, or the reason it could not be used.  A last line without a terminating newline
is reported as *pending* (the writer may still be appending), not as corruption.

Also here, for every loader: which files a list of paths names (:func:`expand_paths`), reading
one file with its ``inputs`` entry (:func:`read_source`), the JSON objects of a JSON Lines file
with the rest quarantined (:func:`iter_objects`) — a record glued to the torn start of another
read, the torn start set aside (:func:`split_torn`) —, the elements of a JSON document with their
lines (:func:`json_doc_items`) — also of one that is valid but for raw control characters, with
the elements holding them set aside (:func:`control_repair`) —, and the line loops of the
sniffers (:func:`line_scores`, :func:`sample_objects`).
"""

from __future__ import annotations

import bisect
import codecs
import contextlib
import gzip
import hashlib
import json
import os
import re
import zlib
from dataclasses import dataclass
from json.decoder import scanstring
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import orjson

from . import _json
from ._text import deep_safe, safe_str
from .errors import InputError

__all__ = [
    "Line",
    "PENDING",
    "ZERO_FILL",
    "is_zero_fill",
    "unreadable_row",
    "note_unreadable_times",
    "note_zoneless_times",
    "zoneless_at",
    "ZONE_AT_END",
    "read_bytes",
    "read_source",
    "gunzip_leniently",
    "read_side_file",
    "iter_lines",
    "iter_text_lines",
    "iter_objects",
    "split_torn",
    "torn_row",
    "set_aside_line",
    "expand_paths",
    "name_stem",
    "lines_words",
    "not_utf8_note",
    "file_info",
    "quarantine_row",
    "json_doc_items",
    "control_repair",
    "ControlRepair",
    "Damaged",
    "raw_control",
    "line_scores",
    "whole_lines",
    "sample_objects",
]

GZIP_MAGIC = b"\x1f\x8b"


@dataclass(slots=True)
class Line:
    """One physical line of a JSONL file.

    ``obj`` is the parsed value (any JSON type) or ``None`` with ``error`` set; ``pending`` is
    true for an unterminated last line.  ``line_no`` is 1-based; ``offset`` is in bytes.
    """

    line_no: int
    offset: int
    raw: bytes
    obj: Any
    error: str | None
    pending: bool


def read_bytes(path: str | Path) -> bytes:
    """Read a whole file read-only, gunzipping it when it starts with the gzip magic bytes — as
    far as its stream goes, as :func:`read_source` reads it (:func:`gunzip_leniently`), so a
    second reading of a loaded file (a resume's copies compared, a capsule's lines) sees the
    lines the load saw.

    Raises:
        OSError: the file cannot be read; ``gzip.BadGzipFile`` (an OSError) when its gzip stream
            gives nothing.
    """
    with open(path, "rb") as fh:
        disk = fh.read()
    data, problem = gunzip_leniently(disk)
    if problem is not None and not data.strip(b"\x00"):
        raise gzip.BadGzipFile(problem)
    return data


#: while a file is sniffed (:func:`sniff_memo`): parse results by (line, exact), and parsed
#: sample lines, shared by the ~20 sniffers that each read the same sample's lines
_SNIFF_MEMO: dict | None = None


@contextlib.contextmanager
def sniff_memo() -> Iterator[None]:
    """Within the block, :func:`parse_json`, :func:`line_scores` and :func:`sample_objects`
    remember what they parsed, so that every source sniffing one sample parses each of its lines
    once (the registry sniffs each file with every source).  What they return is then shared
    between callers: sniffers read parsed values, never change them."""
    global _SNIFF_MEMO
    outer = _SNIFF_MEMO
    _SNIFF_MEMO = {} if outer is None else outer
    try:
        yield
    finally:
        _SNIFF_MEMO = outer


def parse_json(raw: bytes, exact: bool = True) -> tuple[Any, str | None]:
    """Parse one JSON text; fall back to the stdlib for what orjson refuses (lone surrogates,
    invalid UTF-8), replacing lone surrogates with U+FFFD everywhere in the result.

    ``exact``: integers beyond 64 bits stay ``int`` (:func:`replaybook._json.loads`, as every
    loader of tool-call arguments reads them); ``False`` leaves them as orjson reads them, as
    floats (the cloud access-log loaders, whose column-wise fast paths read them so)."""
    memo = _SNIFF_MEMO
    if memo is not None:
        key = (raw, exact)
        got = memo.get(key)
        if got is None:
            got = memo[key] = _parse_json(raw, exact)
        return got
    return _parse_json(raw, exact)


def _parse_json(raw: bytes, exact: bool) -> tuple[Any, str | None]:
    try:
        # orjson refuses lone surrogates, so this is safe
        return (_json.loads(raw) if exact else orjson.loads(raw)), None
    except orjson.JSONDecodeError as exc:
        try:
            # lone-surrogate escapes or invalid UTF-8: parse leniently, then make every string
            # safe so no loader hands a frame that cannot be written to Parquet or HTML
            text = raw.decode("utf-8", "surrogateescape")
            return deep_safe(_json.loads_lenient(text) if exact else json.loads(text, parse_int=_json.parse_int)), None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc2:
            msg = _where(exc2) if isinstance(exc2, json.JSONDecodeError) else str(exc)
            return None, f"invalid JSON: {msg}"
        except ValueError as exc2:  # (json's own refusals that are not JSONDecodeError)
            return None, f"invalid JSON: {exc2}"
        except RecursionError:
            return None, "invalid JSON: nested too deeply"


def _where(exc: json.JSONDecodeError) -> str:
    """The parser's complaint with its place in the text parsed: ``column C`` for a one-line
    text (a JSON Lines record, whose file line the quarantine row gives), else ``line L
    column C of the record``; the parser's own "line 1 column 2 (char 1)" read as a file line."""
    if getattr(exc, "placeless", False):  # (met the nesting limit: no one place to name)
        return exc.msg
    ch = exc.doc[exc.pos:exc.pos + 1] if isinstance(exc.doc, str) else ""
    if ch and ch < " " and (ch not in "\t\n\r" or exc.msg == "Invalid control character at"):
        # (a NUL byte, an unescaped tab in a string …: named as every reader here names it)
        where = f"column {exc.colno}" if exc.lineno == 1 else f"line {exc.lineno} column {exc.colno} of the record"
        return raw_control(ch, where)
    at = "" if exc.msg.endswith(" at") else " at"  # "Unterminated string starting at": no second "at"
    if exc.lineno == 1:
        return f"{exc.msg}{at} column {exc.colno}"
    return f"{exc.msg}{at} line {exc.lineno} column {exc.colno} of the record"


def iter_text_lines(data: bytes) -> Iterator[tuple[int, int, bytes, bool]]:
    """``(line_no, offset, raw, unterminated)`` for every non-blank line of a text.

    ``data`` is split on ``\\n``; a trailing ``\\r`` is dropped from ``raw``; ``line_no`` is
    1-based (blank lines count), ``offset`` in bytes (of ``raw``); ``unterminated`` marks a last
    line without a newline.  A UTF-8 byte-order mark at the start of the text (a file saved by a
    Windows editor) is no part of the first line: ``raw`` starts after it, ``offset`` 3.
    """
    pos, n, line_no = (3 if data[:3] == _BOM else 0), len(data), 0
    while pos < n:
        end = data.find(b"\n", pos)
        pending = end < 0
        if pending:
            end = n
        line_no += 1
        raw = data[pos:end]
        start = pos
        pos = end + 1
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if raw.strip():
            yield line_no, start, raw, pending


def iter_lines(data: bytes, exact: bool = True) -> Iterator[Line]:
    """Split ``data`` on ``\\n`` and parse each non-blank line (``exact``: as :func:`parse_json`).

    Blank lines are skipped (they carry nothing); every other line yields a :class:`Line`.
    """
    for line_no, start, raw, pending in iter_text_lines(data):
        obj, err = parse_json(raw, exact)
        if pending and err is not None:
            yield Line(line_no, start, raw, None, "unterminated last line (still being written?)", True)
        else:
            yield Line(line_no, start, raw, obj, err, False)


#: the most places :func:`split_torn` tries in one line (each is a parse of the rest of the line)
TORN_TRIES = 64


def split_torn(raw: bytes, accept: Callable[[dict], bool], exact: bool = True) -> tuple[int, dict] | None:
    """A record glued to the torn start of another: ``(p, record)`` when the line ``raw``, which
    does not parse, is the start of a record cut off mid-write (a writer killed, two writers
    appending to one file) followed by a whole record from byte ``p`` on; else ``None``.

    The places tried are the ``{"`` after the first byte that do not follow ``:``, ``,`` or ``[``
    (whitespace aside), left to right, at most :data:`TORN_TRIES`; the first at which the rest of
    the line parses to an object that ``accept`` takes as a top-level record of the format wins.
    Both rules keep an object nested in the torn part from being taken for a record: every
    nested object follows one of those three characters (and a Claude Code ``progress`` line
    nests whole messages, uuid and all), and ``accept`` must name keys every record has.  The
    price: a record cut off right after one of them, with another glued on, stays one quarantine
    row — set aside, never a record made up.  When the part before ``p`` is itself a whole JSON
    value, the line is two records on one line (``}{``), not a torn write, and ``None`` is
    returned: which of them the writer meant is not known.  ``exact`` as :func:`parse_json`."""
    p = raw.find(b'{"', 1)
    tries = 0
    while p > 0 and tries < TORN_TRIES:
        q = p - 1
        while q >= 0 and raw[q] in (32, 9):   # (the byte before, whitespace aside; no copy of the line)
            q -= 1
        if q >= 0 and raw[q] not in (58, 44, 91):   # ':' ',' '['
            tries += 1
            obj, err = parse_json(raw[p:], exact)
            if err is None and obj.__class__ is dict and accept(obj):
                if parse_json(raw[:q + 1], exact)[1] is None:
                    return None
                return p, obj
        p = raw.find(b'{"', p + 1)
    return None


def torn_row(path: str | Path, line_no: int, offset: int, raw: bytes, p: int, error: str, loader: str) -> dict:
    """The ``invalid`` QUARANTINE row of the torn start (``raw[:p]``) of line ``line_no`` (at byte
    ``offset``) whose record from byte ``p`` on is read (:func:`split_torn`); ``error``: the
    parser's complaint about the whole line."""
    why = (f"a record cut off mid-write, then a whole record glued to it at column {p + 1} (read as this "
           f"line's record; the torn part set aside): {error}")
    return quarantine_row(path, None, loader, why, line_no=line_no, offset=offset, raw=raw[:p])


def set_aside_line(path: str | Path, line_no: int, offset: int, raw: bytes, error: str, pending: bool, loader: str,
                   quarantine: list[dict], accept: Callable[[dict], bool] | None = None) -> tuple[int, dict] | None:
    """What a line-by-line reader does with a line that does not parse (``error``: the parser's
    complaint): ``(p, record)`` when it is a torn record with a whole one glued on from byte
    ``p`` (:func:`split_torn`, with ``accept``; never for an unterminated last line) — the torn
    start is appended to ``quarantine`` (:func:`torn_row`) and the caller reads the record —;
    else ``None``, the line appended as a ``pending`` (unterminated last line: :data:`PENDING`)
    or ``invalid`` QUARANTINE row."""
    torn = None if pending or accept is None else split_torn(raw, accept)
    if torn is not None:
        quarantine.append(torn_row(path, line_no, offset, raw, torn[0], error, loader))
        return torn
    if pending:
        quarantine.append(quarantine_row(path, Line(line_no, offset, raw, None, PENDING, True), loader, PENDING,
                                         kind="pending"))
    else:
        quarantine.append(quarantine_row(path, Line(line_no, offset, raw, None, error, False), loader, error))
    return None


def iter_objects(path: str | Path, data: bytes, loader: str, quarantine: list[dict],
                 accept: Callable[[dict], bool] | None = None) -> Iterator[Line]:
    """The lines of a JSON Lines file that are JSON objects.

    Every other non-blank line is appended to ``quarantine`` as a QUARANTINE row dict
    (:func:`quarantine_row`): one that does not parse with the parser's complaint (``kind``
    ``pending`` for an unterminated last line, else ``invalid``), one that parses to another
    JSON type as ``not a JSON object (<type>)``.  Yields :class:`Line` values whose ``obj`` is a
    dict, in file order.  With ``accept`` (is a dict a top-level record of the format?), a line
    that does not parse but is a torn record followed by a whole one (:func:`split_torn`) yields
    the whole one (``offset`` and ``raw`` its own) and quarantines the torn start
    (:func:`torn_row`).
    """
    for line in iter_lines(data):
        if line.error is not None:
            torn = set_aside_line(path, line.line_no, line.offset, line.raw, line.error, line.pending, loader,
                                  quarantine, accept)
            if torn is not None:
                p, obj = torn
                yield Line(line.line_no, line.offset + p, line.raw[p:], obj, None, False)
            continue
        if not isinstance(line.obj, dict):
            quarantine.append(quarantine_row(path, line, loader,
                                             f"not a JSON object ({type(line.obj).__name__})"))
            continue
        yield line


def expand_paths(paths: str | Path | Iterable[str | Path], *,
                 accept: Callable[[Path], bool] | None = None, unique: bool = True,
                 links: list[Path] | None = None) -> list[Path]:
    """Files named by ``paths`` (one path or several).

    A file is taken as given, whatever its name.  A folder is walked recursively, sorted, for
    regular files that are not symlinks (symlinked folders are not entered) and, when ``accept``
    is given, for which ``accept(file)`` is true.  With ``unique`` a file met again (same
    resolved path: a folder and a file in it both given, say) is left out after its first
    place — read twice, its rows would count twice; without it every place is kept.  (One path
    cannot name a file twice, so only several paths are resolved.)  ``links``, when given, gets
    the symbolic links and the pipes, sockets and devices met in walked folders (sorted), so the
    caller can say they were not read.

    Raises:
        InputError: a path is neither a file nor a folder (``no such file or folder``; a
            symbolic link to nothing says so), or a folder under one cannot be listed (its files would be left out unsaid).
    """
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    out: list[Path] = []
    seen: set[Path] = set()
    for p in map(Path, paths):
        if p.is_dir():
            met: list[str] = []
            found = sorted(q for q in map(Path, _files_under(p, met)) if accept is None or accept(q))
            if links is not None:
                links.extend(sorted(map(Path, met)))
        elif p.is_file():
            found = [p]
        elif p.exists():
            raise InputError("not a regular file or folder (a pipe, socket or device): nothing to read", p)
        elif p.is_symlink():
            raise InputError(f"a symbolic link to {os.readlink(p)}, which does not exist: nothing to read", p)
        else:
            raise InputError("no such file or folder", p)
        for q in found:
            _text_name(q)
        if not unique or len(paths) == 1:
            out.extend(found)
            continue
        for q in found:
            key = q.resolve()
            if key not in seen:
                seen.add(key)
                out.append(q)
    return out


def _text_name(path: Path) -> None:
    """Raise :class:`InputError` for a file name that is not valid UTF-8 (the file system allows
    it; Python keeps such bytes as lone surrogates, which no frame column, JSON output or report
    can hold — the load failed deep inside with an internal error)."""
    s = str(path)
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(s).decode("utf-8", "backslashreplace")
        raise InputError(f"{shown}: the file name is not valid UTF-8; give the file a UTF-8 name "
                         "(a copy will do: its content is what is read)") from None


def _files_under(folder: Path, links: list[str] | None = None) -> list[str]:
    """The regular files (not symlinks) under ``folder``, recursively, in no set order; symlinked
    folders are not entered (as ``Path.rglob("*")``, which also passes over a folder it cannot
    list — evidence left out without a word; here that is an error).  The symbolic links met,
    and the entries that are no regular file (a pipe, socket or device: reading one could wait
    forever), are appended to ``links``.

    Raises:
        InputError: a folder under ``folder`` cannot be listed (permission).
    """
    out: list[str] = []
    stack = [os.fspath(folder)]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as entries:
                for e in entries:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)
                        elif e.is_file(follow_symlinks=False):
                            out.append(e.path)
                        elif links is not None:  # a symbolic link, or a pipe, socket or device
                            links.append(e.path)
                    except OSError:  # gone since listed
                        continue
        except FileNotFoundError:  # gone since listed
            continue
        except OSError as exc:
            raise InputError(f"cannot list the folder: {exc.strerror or exc} (its files would be left out)",
                             d) from None
    return out


def lines_words(lines: list[int]) -> str:
    """``line 3``, ``lines 3, 5, 9``, ``lines 3, 5, 9, 10, 12 … (40 lines)``."""
    if len(lines) == 1:
        return f"line {lines[0]}"
    shown = ", ".join(map(str, lines[:5]))
    return f"lines {shown}" + (f" … ({len(lines):,} lines)" if len(lines) > 5 else "")


def not_utf8_note(data: bytes, what: str = "value") -> str | None:
    """A note naming the lines of ``data`` that hold bytes which are not UTF-8 (up to 20 places
    looked at), or None when it is all UTF-8.  Such a line is still read — its bad bytes as
    U+FFFD (``\ufffd``), as the lenient parse reads them — so the ``what`` it holds is not the
    one written, and a comparison of it (the join's arguments) fails without a word unless said.

    An all-ASCII file costs one ``isascii``; other text one UTF-8 decoding in 1 MiB pieces (no
    copy of the file, newlines counted once as the places are found).  A character cut at the
    very end of an unterminated last line is no such byte: that line is still being written
    (``pending``, not read)."""
    if data.isascii():
        return None
    end = len(data) - (0 if data.endswith(b"\n") else _cut_character(data))
    view = memoryview(data)
    lines: list[int] = []
    pos = found = 0
    counted_to, newlines = 0, 0
    while pos < end and found < 20:
        stop = min(pos + _UTF8_PIECE, end)
        try:
            _, used = codecs.utf_8_decode(view[pos:stop], "strict", stop == end)
            pos += used
        except UnicodeDecodeError as exc:
            at = pos + exc.start
            newlines += data.count(b"\n", counted_to, at)
            counted_to = at
            if not lines or lines[-1] != newlines + 1:
                lines.append(newlines + 1)
            pos, found = pos + exc.end, found + 1
    if not lines:
        return None
    return (f"bytes that are not UTF-8 on {lines_words(lines)}{' (and maybe more)' if found >= 20 else ''}: read "
            f"as U+FFFD (\ufffd), so a {what} there is not exactly as written")


_UTF8_PIECE = 1 << 20


def _cut_character(data: bytes) -> int:
    """How many bytes at the end of ``data`` are the start of a UTF-8 character cut short (a
    lead byte and fewer continuation bytes than it announces): 0 when none."""
    for back in range(1, min(4, len(data)) + 1):
        b = data[-back]
        if b & 0xC0 == 0x80:  # a continuation byte: look further back for its lead
            continue
        need = 2 if b & 0xE0 == 0xC0 else 3 if b & 0xF0 == 0xE0 else 4 if b & 0xF8 == 0xF0 else 1
        return back if need > back else 0
    return 0


def name_stem(path: Path, suffixes: tuple[str, ...]) -> str:
    """``path``'s name without the first of ``suffixes`` (tried in order) that it ends with,
    provided something is left (``.jsonl`` alone stays whole); else ``path.stem``."""
    name = path.name
    for suffix in suffixes:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return path.stem


_BOM = b"\xef\xbb\xbf"


def read_source(path: Path, fmt: str, what: str, *, count_lines: bool = True,
                holds: str = "value") -> tuple[bytes, dict]:
    """Read one input file read-only, once (gunzipped by magic bytes): ``(data, inputs entry)``.

    The entry has ``path``, ``sha256`` (hex, of the bytes on disk — hashed from the bytes just
    read, not by reading the file again), ``bytes`` (on disk), ``lines`` (of the decompressed
    text; ``None`` with ``count_lines=False`` for a caller that counts them itself) and
    ``format`` = ``fmt``.  A UTF-8 byte-order mark before a JSON value is given back as three
    spaces (``bom: True`` in the entry), so the first line parses and byte offsets stay the file's.

    A gzip stream that is cut short or damaged gives the bytes before the damage, and the entry's
    ``notes`` say so (:func:`gunzip_leniently`): the lines before the cut still load, the cut line
    is a ``pending`` quarantine row.

    Bytes that are not UTF-8 (a Latin-1 editor's save, a spliced binary) are named in ``notes``
    by line (:func:`not_utf8_note`; ``holds`` says what such a line holds, in words, e.g.
    ``"call's arguments or object"``): every loader reads them as U+FFFD, so a value there is not
    the one written and a comparison of it (the join's arguments) fails — the note says why.

    Raises:
        InputError: the file cannot be read (permission, a folder), or its gzip stream gives
            nothing; the message is ``cannot read <what>: <reason>``.
    """
    try:
        with open(path, "rb") as fh:
            disk = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc}", path) from exc
    data, problem = gunzip_leniently(disk)
    if problem is not None and not data.strip(b"\x00"):
        raise InputError(f"cannot read {what}: {problem}", path)
    bom = data[:3] == _BOM and data[3:4] in (b"{", b"[")
    if bom:  # (a file saved by a Windows editor) read as JSON's leading whitespace: offsets stay the file's
        data = b"   " + data[3:]
    info = {
        "path": str(path),
        "sha256": hashlib.sha256(disk).hexdigest(),
        "bytes": len(disk),
        "lines": _count_lines(data) if count_lines else None,
        "format": fmt,
    }
    if bom:
        info["bom"] = True
    if problem is not None:  # (a copy cut short: the lines before the cut are evidence too)
        info.setdefault("notes", []).append(problem + (": what comes before it is read" if "recovered" in problem
                                                       else ""))
    bad = not_utf8_note(data, holds)
    if bad:
        info.setdefault("notes", []).append(bad)
    return data, info


def gunzip_leniently(data: bytes) -> tuple[bytes, str | None]:
    """``data`` gunzipped as far as it goes: ``(bytes, problem)``.  Bytes that do not start with
    the gzip magic come back as they are; concatenated gzip members are all read.  ``problem`` is
    None for a clean stream, else what is wrong — a truncated stream (a copy cut short, a file
    still being written), a corrupt one, or bytes after the stream that are not gzip (trailing
    NUL padding is not counted) — with the bytes before the damage given back (possibly none),
    so a caller reads what can be read and says the rest."""
    if data[:2] != GZIP_MAGIC:
        return data, None
    out: list[bytes] = []
    rest = data
    problem = None
    while rest[:2] == GZIP_MAGIC:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out.append(d.decompress(rest))
        except zlib.error as exc:
            problem = f"corrupt gzip stream ({exc}); {sum(map(len, out))} bytes recovered before it"
            break
        if not d.eof:
            out.append(d.flush())
            problem = f"truncated gzip stream: it ends before its end marker; {sum(map(len, out))} bytes recovered"
            break
        rest = d.unused_data
        if rest[:1] == b"\x00":  # (NUL padding between members or after the last: gzip skips it too)
            rest = rest.lstrip(b"\x00")
    else:
        if rest:
            problem = f"{len(rest)} bytes after the gzip stream are not gzip: not read"
    return b"".join(out), problem


def read_side_file(path: Path, of: Path, fmt: str) -> tuple[bytes | None, dict]:
    """Read a file a loader reads *beside* the input ``of`` (Claude Code's
    ``agent-<id>.meta.json``) read-only, once: ``(data or None, inputs entry)``.  It is evidence
    too, so the entry is :func:`read_source`'s — ``path``, ``sha256`` (hex, of the bytes read),
    ``bytes``, ``lines``, ``format`` = ``fmt`` — with ``side_of`` (``str(of)``) and ``note``:
    ``None``, or why it could not be read (``cannot read: …``: then ``data`` is ``None`` and
    ``sha256``, ``bytes``, ``lines`` are ``None``).  The file is not decompressed."""
    entry = {"path": str(path), "sha256": None, "bytes": None, "lines": None, "format": fmt,
             "side_of": str(of), "note": None}
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        entry["note"] = f"cannot read: {exc.strerror or exc}"
        return None, entry
    entry.update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data), lines=_count_lines(data))
    return data, entry


def _count_lines(data: bytes) -> int:
    return data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


def file_info(path: str | Path, raw_size: int, data: bytes, fmt: str) -> dict:
    """Describe an input for the report: path, sha256 of the file bytes on disk, size, lines."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return {
        "path": str(path),
        "sha256": h.hexdigest(),
        "bytes": raw_size,
        "lines": _count_lines(data),
        "format": fmt,
    }


#: The quarantine's words for a file whose lines end in CR only (no LF): one "line" to a reader.
CR_ONLY = ("the lines end in CR only (no LF), so the file reads as one unfinished line: JSON Lines needs LF "
           "line ends (a copy converted with `tr '\\r' '\\n'` will read)")

#: The quarantine's words for an unterminated last line (``kind="pending"``): a log still being
#: written, not a damaged one.
PENDING = "unterminated last line (still being written?)"
def is_zero_fill(raw: bytes) -> bool:
    """Whether a line is NUL bytes alone (with blanks): a crash's zero fill, not a record."""
    return b"\x00" in raw and not raw.strip(b"\x00 \t\r\n")


#: the error of a last "line" of NUL bytes alone (:func:`quarantine_row`)
ZERO_FILL = ("NUL bytes after the last line: the zero fill a crash leaves where the file system had allocated "
             "space, not a record being written")


def unreadable_row(path: str | Path, line: Line, loader: str, why: str) -> dict:
    """The quarantine row for a line a loader cannot read: ``pending`` (:data:`PENDING`) when it
    is the unterminated last line, else ``invalid`` with ``why``."""
    if line.pending:
        return quarantine_row(path, line, loader, PENDING, kind="pending")
    return quarantine_row(path, line, loader, why)


def note_unreadable_times(texts: Sequence[Any], parsed: Any, files: Sequence[Any], lines: Sequence[Any],
                          inputs: Sequence[dict], what: str = "event") -> None:
    """Say in each input's ``notes`` which rows carried a time that is not a date-time
    (``"yesterday"``, February 30th), or one beyond the times a frame holds (year 9999: its own
    note): the row is kept, in file order, with its time unknown (NaT), and the note names the
    lines and the text (the first three, and how many in all).

    Args:
        texts: each row's time as logged (``None`` or ``""`` where none was logged: no note).
        parsed: each row's parsed time (``NaT`` where unreadable), same length.
        files, lines: each row's source file and line.
        inputs: the loader's inputs entries (``path`` and a ``notes`` list).
        what: what a row is, in words (``event``, ``call``).
    """
    import pandas as pd

    from ._text import TIME_RANGE, beyond_time_range

    bad: dict[tuple[str, bool], list[tuple[Any, str]]] = {}
    for t, v, f, ln in zip(texts, parsed, files, lines):
        if isinstance(t, str) and t and pd.isna(v):
            bad.setdefault((str(f), beyond_time_range(t)), []).append((ln, t))
    if not bad:
        return
    for info in inputs:
        for beyond in (False, True):
            got = bad.get((str(info.get("path")), beyond))
            if not got:
                continue
            shown = ", ".join(f"line {ln} ({safe_str(t)[:40]!r})" for ln, t in got[:3])
            more = f" and {len(got) - 3:,} more" if len(got) > 3 else ""
            why = (f"a date-time beyond the times a frame holds ({TIME_RANGE})" if beyond
                   else "a time that is not a date-time")
            info.setdefault("notes", []).append(
                f"{len(got):,} {what}{'' if len(got) == 1 else 's'} with {why}, kept with the time unknown: "
                f"{shown}{more}")


def shown_value(v: Any) -> str:
    """A value as a note shows it: a string quoted, anything else as JSON (40 characters)."""
    if isinstance(v, str):
        return repr(safe_str(v)[:40])
    try:
        return safe_str(_json.dumps(v).decode("utf-8", "replace"))[:40]
    except Exception:  # noqa: BLE001 - a value JSON cannot write (NaN …): as Python shows it
        return repr(v)[:40]


def lines_note(items: Sequence[tuple[Any, Any]], what: str, says: str) -> str:
    """One note on the lines that held an odd value, in the words every loader uses: ``2 lines
    <says>: line 3 (null), line 4 (1735689600)`` — ``items`` are ``(line, value)``, in line
    order; the first three are named, and how many more."""
    n = len(items)
    listed = ", ".join(f"line {ln} ({shown_value(v)})" for ln, v in items[:3])
    more = f" and {n - 3:,} more" if n > 3 else ""
    return f"{n:,} {what}{'' if n == 1 else 's'} {says}: {listed}{more}"


def note_non_text_times(info: dict, items: Sequence[tuple[Any, Any]], *, what: str = "line",
                        kept: str = "kept with the time unknown") -> None:
    """Say in ``info["notes"]`` which lines held a time field that was written but is empty or
    not text (a number, ``null``): their rows are kept with the time unknown (NaT).  ``items``:
    ``(line, value)``; the note names the first three in line order, and how many in all
    (:func:`lines_note`).  A time *text* that is no date-time is
    :func:`note_unreadable_times`' note.  ``what`` is what is counted (``"tool call"``: several
    may share a line) and ``kept`` what the row's time is instead (``"read as the message's
    time"``)."""
    if items:
        got = sorted(items, key=lambda x: (x[0] is None, x[0] if x[0] is not None else 0))
        info.setdefault("notes", []).append(lines_note(got, what, f"with a timestamp that is empty or not text, "
                                                                  f"{kept}"))


#: a time of day with a time zone at the end of a date-time text: ``…10:00Z``, ``…10:00:00.5+02:00``,
#: ``…10:00:00 -0500``, ``…10:00+02`` (blanks after it allowed, as the parser allows them); a date
#: alone (``2026-09-13``, read as UTC midnight) has none
ZONE_AT_END = re.compile(r"\d:\d\d(?::\d\d)?(?:[.,]\d+)?\s*(?:[Zz]|[+-]\d\d(?::?\d\d)?)\s*\Z")


#: :data:`ZONE_AT_END` for Arrow's regular expressions (RE2: ``$`` is the end of the text)
_ZONE_AT_END_RE2 = r"\d:\d\d(?::\d\d)?(?:[.,]\d+)?\s*(?:[Zz]|[+-]\d\d(?::?\d\d)?)\s*$"


def zoneless_at(texts: Sequence[Any]) -> "np.ndarray":
    """Positions of ``texts`` that are text, not blank, with no time zone at the end
    (:data:`ZONE_AT_END`): over Arrow's compiled expressions for a column of text and ``None``
    (a million values in about half a second), else one value at a time."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        if len(texts) < 64:  # (a few values: Arrow's set-up costs more than the loop)
            raise TypeError
        arr = pa.array(texts, type=pa.string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):  # (or a value that is no text: a number)
        return np.fromiter((i for i, t in enumerate(texts) if t.__class__ is str and t.strip()
                            and not ZONE_AT_END.search(t)), dtype=np.intp)
    zoneless = pc.and_(pc.match_substring_regex(arr, r"\S"),
                       pc.invert(pc.match_substring_regex(arr, _ZONE_AT_END_RE2)))
    return np.flatnonzero(pc.fill_null(zoneless, False).to_numpy(zero_copy_only=False))


def note_zoneless_times(texts: Sequence[Any], parsed: Any, files: Sequence[Any], lines: Sequence[Any],
                        inputs: Sequence[dict], what: str = "line", writer: str = "the client") -> None:
    """Say in each input's ``notes`` which rows carried a date-time without a time zone that was
    read as UTC (``"2026-09-13T10:00:00.000"``, a date alone): RFC 3339 requires an offset, and a
    writer that logged local time puts every such row off by its zone's offset — hours, which the
    join's clock offset then absorbs or, beyond its bound, refuses.  One note per file naming the
    lines (each once, however many rows it gave; rows whose line is not known are counted) and up
    to three of the texts.

    Args:
        texts: each row's time as logged (str or ``None``).
        parsed: each row's parsed time (``NaT`` where unreadable: those have their own note).
        files, lines: each row's source file and line (sequences or Series, same length; a line
            may be NA).
        inputs: the loader's inputs entries (``path`` and a ``notes`` list).
        what: what a line is, in words; writer: who wrote the times (``the client``).
    """
    import numpy as np
    import pandas as pd

    at = zoneless_at(texts)
    if not len(at):
        return
    at = at[~np.asarray(pd.isna(parsed), dtype=bool)[at]]
    if not len(at):
        return
    rows = pd.DataFrame({"file": np.asarray(files, dtype=object)[at],
                         "line": pd.array(np.asarray(lines, dtype=object)[at], dtype="Int64"),
                         "text": np.asarray(texts, dtype=object)[at]})
    rows["file"] = rows["file"].astype(str)
    got = {f: g for f, g in rows.groupby("file", sort=False)}
    for info in inputs:
        g = got.get(str(info.get("path")))
        if g is None:
            continue
        placed = g[g["line"].notna()].drop_duplicates("line").sort_values("line")
        unplaced = g[g["line"].isna()]
        where = [lines_words(placed["line"].astype("int64").tolist())] if len(placed) else []
        if len(unplaced):
            where.append(f"{len(unplaced):,} row{'' if len(unplaced) == 1 else 's'} whose line is not known")
        first = list(dict.fromkeys([*placed["text"].head(100), *unplaced["text"].head(100)]))
        shown = first[:3]
        more = len(first) > 3 or len(placed) + len(unplaced) > 100  # (… when there may be more texts)
        words = ", ".join(repr(safe_str(t)[:40]) for t in shown) + (", …" if more else "")
        info.setdefault("notes", []).append(
            f"a time without a time zone on {' and '.join(where)} ({words}): read as UTC; RFC 3339 "
            f"requires an offset — if {writer} wrote local time, these {what}s are off by the zone's offset")


def quarantine_row(path: str | Path, line: Line | None, loader: str, error: str, *,
                   kind: str = "invalid", line_no: int | None = None, offset: int | None = None,
                   raw: bytes | None = None) -> dict:
    """A QUARANTINE row dict for a line (or for a whole file when ``line`` is None).

    An unterminated "last line" (``pending``) that holds carriage returns is a file whose lines
    end in CR only (an old Mac editor's): not a log still being written, so it is said as such
    (``invalid``, with the conversion that reads it); one of NUL bytes alone is the zero fill a
    crash leaves where the file system had allocated space (``invalid``, :data:`ZERO_FILL`)."""
    if line is not None:
        line_no, offset, raw = line.line_no, line.offset, line.raw
    if kind == "pending" and raw is not None and b"\r" in raw.rstrip(b"\r"):
        kind, error = "invalid", CR_ONLY
    elif kind == "pending" and raw is not None and is_zero_fill(raw):
        kind, error = "invalid", ZERO_FILL
    text = None
    if raw is not None:
        text = safe_str(raw[:400].decode("utf-8", "replace"))[:200]
    return {
        "source_file": str(path),
        "line_no": line_no,
        "byte_offset": offset,
        "kind": kind,
        "loader": loader,
        "error": error,
        "raw": text,
    }


# -- JSON documents ----------------------------------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder(parse_int=_json.parse_int)


def _skip_ws(s: str, pos: int) -> int:
    return _WS.match(s, pos).end()


def _walk(s: str, pos: int, path: tuple, out: list, dec: json.JSONDecoder = _DECODER,
          strict: bool = True) -> int:
    """Append ``(start, end, value)`` of each element of ``s`` at ``path`` (from ``pos``) to
    ``out``; ``dec`` and ``strict`` decode the values and the keys."""
    pos = _skip_ws(s, pos)
    if not path:
        val, end = dec.raw_decode(s, pos)
        out.append((pos, end, val))
        return end
    head = path[0]
    c = s[pos:pos + 1]
    if head == "*" and c == "[":
        pos = _skip_ws(s, pos + 1)
        if s[pos:pos + 1] == "]":
            return pos + 1
        while True:
            pos = _skip_ws(s, _walk(s, pos, path[1:], out, dec, strict))
            c = s[pos:pos + 1]
            if c == ",":
                pos += 1
            elif c == "]":
                return pos + 1
            else:
                raise ValueError(f"expected , or ] at {pos}")
    if head != "*" and c == "{":
        pos = _skip_ws(s, pos + 1)
        if s[pos:pos + 1] == "}":
            return pos + 1
        while True:
            if s[pos:pos + 1] != '"':
                raise ValueError(f"expected a key at {pos}")
            key, pos = scanstring(s, pos + 1, strict)
            pos = _skip_ws(s, pos)
            if s[pos:pos + 1] != ":":
                raise ValueError(f"expected : at {pos}")
            if key == head or (isinstance(head, tuple) and key in head):
                pos = _walk(s, pos + 1, path[1:], out, dec, strict)
            else:
                _, pos = dec.raw_decode(s, _skip_ws(s, pos + 1))
            pos = _skip_ws(s, pos)
            c = s[pos:pos + 1]
            if c == ",":
                pos = _skip_ws(s, pos + 1)
            elif c == "}":
                return pos + 1
            else:
                raise ValueError(f"expected , or }} at {pos}")
    _, end = dec.raw_decode(s, pos)  # not the container the path wants: skip it
    return end


def json_doc_items(text: str, path: tuple) -> Iterator[tuple[int, int, Any]]:
    """Elements of a JSON document at ``path``, with their 1-based line and character offset.

    ``path`` is a tuple of object keys (a key may be a tuple of alternative spellings) and ``"*"``
    for "every element of this array", e.g. ``("items", "*")`` or
    ``(("resourceSpans", "resource_spans"), "*", ("scopeSpans", "scope_spans"), "*", "spans", "*")``.
    Yields ``(line_no, offset, value)`` in document order.

    Raises:
        ValueError: ``text`` is not valid JSON (json.JSONDecodeError is a ValueError).
    """
    out: list[tuple[int, Any]] = []
    _walk(text, 0, path, out)
    newlines = [i for i, ch in enumerate(text) if ch == "\n"] if out else []
    for off, _end, val in out:
        yield bisect.bisect_right(newlines, off) + 1, off, val


# -- raw control characters in a JSON document ---------------------------------------------------

#: Control characters JSON allows nowhere raw, not even between tokens (only tab, LF and CR are
#: whitespace there); inside a string none of U+0000–U+001F may stand raw.
_CTRL_NOT_WS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_CTRL = re.compile(r"[\x00-\x1f]")
_STRING_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_LENIENT = json.JSONDecoder(strict=False, parse_int=_json.parse_int)
#: Keys that name a record in a quarantine row, the first one a damaged record holds as a string.
ID_KEYS = ("eventID", "insertId", "correlationId", "requestID", "id", "uuid", "call_id", "spanId", "eventId")


def raw_control(ch: str, where: str) -> str:
    """The words for a raw control character: ``raw control character U+0000 at byte 1837 (JSON
    allows it only escaped, as \\u0000)``; ``where`` is ``byte N`` or ``column N``."""
    return f"raw control character U+{ord(ch):04X} at {where} (JSON allows it only escaped, as \\u{ord(ch):04x})"


@dataclass(slots=True)
class Damaged:
    """An element of a JSON document that holds a raw control character (:func:`control_repair`).

    ``index`` is 0-based among the elements at the path (``-1``: the damage is outside every
    element, in the document's own fields); ``line_no`` (1-based) and ``offset`` (bytes) are
    where the element starts in the text; ``raw`` its first 400 bytes; ``error`` names the first
    raw control character and its byte offset in the text (and how many more the element holds);
    ``name`` the element's id (``eventID "E3"``, :data:`ID_KEYS`) when it can be read."""

    index: int
    line_no: int
    offset: int
    raw: bytes
    error: str
    name: str | None

    def reason(self, what: str) -> str:
        """The quarantine row's words: ``<what> (<name>): <error>; set aside, the others are read``,
        ``what`` being e.g. ``record 3 of "Records"``."""
        named = f" ({self.name})" if self.name else ""
        if self.index < 0:
            return (f"{self.error}, outside the {what}, in the document's own fields: those are read with it in "
                    "place (one other than tab, LF or CR as a space)")
        return f"{what}{named}: {self.error}; set aside, the others are read"


class ControlRepair:
    """A JSON document that is valid but for raw control characters (U+0000–U+001F: a NUL byte,
    an unescaped tab or line break inside a string, …) — what no JSON writer produces, so damage
    to the file (a disk, a transfer, an editor) — found by :func:`control_repair`.

    Python's ``json`` can read such strings (``strict=False``), but the value read is not what the
    writer wrote: the elements that hold such a character are set aside (:class:`Damaged`) as the
    line-by-line readers set aside a line that holds one, and every other element is read from its
    own source text exactly as a whole document is (:func:`parse_json`).  ``doc`` is the whole
    document read leniently (each control character other than tab, LF and CR read as a space),
    for the fields around the elements; ``damage`` the character positions of the raw control
    characters in ``text`` (the file's bytes decoded, one character per undecodable byte)."""

    def __init__(self, text: str, doc: Any, damage: list[int], base: int = 0, fixed: str | None = None):
        self.base = base
        self.text = text
        self.doc = doc
        self.damage = damage
        self._fixed = _CTRL_NOT_WS.sub(" ", text) if fixed is None else fixed
        self._newlines: list[int] | None = None
        self._at = (0, 0)  # (character, byte) of the last place asked for

    def _line(self, pos: int) -> int:
        if self._newlines is None:
            self._newlines = [m.start() for m in re.finditer("\n", self.text)]
        return bisect.bisect_left(self._newlines, pos) + 1

    def _byte(self, pos: int) -> int:
        at, b = self._at if self._at[0] <= pos else (0, 0)  # (asked for in document order: no rescans)
        b += len(self.text[at:pos].encode("utf-8", "surrogateescape"))
        self._at = (pos, b)
        return b

    def elements(self, path: tuple, exact: bool = True) -> tuple[list[tuple[int, int, Any]], list[Damaged]]:
        """``(elements, outside)``: ``(line_no, byte offset, value)`` of each element at ``path``
        (as :func:`json_doc_items`), ``value`` a :class:`Damaged` for an element holding a raw
        control character, else the element parsed from its source text (:func:`parse_json`,
        ``exact`` as there); ``outside`` one :class:`Damaged` (``index`` -1) per raw control
        character outside every element.

        Raises:
            ValueError: the document has no such elements where ``path`` leads (as
                :func:`json_doc_items`).
        """
        spans: list[tuple[int, int, Any]] = []
        _walk(self._fixed, 0, path, spans, _LENIENT, False)
        out: list[tuple[int, int, Any]] = []
        stray: list[int] = []
        hits = self.damage
        k = 0
        for index, (start, end, lenient) in enumerate(spans):
            while k < len(hits) and hits[k] < start:
                stray.append(hits[k])
                k += 1
            inside = []
            while k < len(hits) and hits[k] < end:
                inside.append(hits[k])
                k += 1
            src = self.text[start:end].encode("utf-8", "surrogateescape")
            line_no, offset = self._line(start), self._byte(start)
            if not inside:
                value, err = parse_json(src, exact)
                if err is None:
                    out.append((line_no, offset, value))
                    continue
                error = err
            else:
                first = inside[0]
                error = raw_control(self.text[first], f"byte {self.base + self._byte(first)}")
                if len(inside) > 1:
                    error += f", and {len(inside) - 1} more in it"
            out.append((line_no, offset, Damaged(index, line_no, offset, src[:400], error,
                                                 _name(self.text[start:end], lenient))))
        stray.extend(hits[k:])
        outside = []
        for p in stray:
            line_no, offset = self._line(p), self._byte(p)
            outside.append(Damaged(-1, line_no, offset, self.text[p:p + 400].encode("utf-8", "surrogateescape"),
                                   raw_control(self.text[p], f"byte {self.base + offset}"), None))
        return out, outside


def _name(src: str, fallback: Any) -> str | None:
    """``<key> <value as JSON>`` of the first :data:`ID_KEYS` key a damaged element holds as a
    string (read with its control characters, escaped in the words)."""
    try:
        value = _LENIENT.decode(src)
    except (json.JSONDecodeError, RecursionError, ValueError):
        value = fallback
    if isinstance(value, dict):
        for k in ID_KEYS:
            v = value.get(k)
            if isinstance(v, str) and v:
                return f"{k} {json.dumps(safe_str(v)[:100])}"
    return None


def control_repair(data: bytes | str, base: int = 0) -> ControlRepair | None:
    """The document ``data`` as a :class:`ControlRepair` when raw control characters are all
    that keep it from being JSON; ``None`` when it holds none, or does not parse even read
    leniently (other damage: the caller's handling applies).  ``base``: the byte offset of
    ``data`` in its file, added to the byte offsets the words name (not to ``Damaged.offset``)."""
    text = data.decode("utf-8", "surrogateescape") if isinstance(data, bytes) else data
    fixed = _CTRL_NOT_WS.sub(" ", text) if _CTRL_NOT_WS.search(text) else text
    try:  # (JSON Lines stop after their first line: Extra data)
        doc, end = _LENIENT.raw_decode(fixed, _skip_ws(fixed, 0))
    except (json.JSONDecodeError, RecursionError, ValueError):
        return None
    if _skip_ws(fixed, end) != len(fixed):
        return None
    damage = {m.start() for m in _CTRL_NOT_WS.finditer(text)}
    for tok in _STRING_TOKEN.finditer(fixed):  # (valid but for control characters: every '"' opens or closes)
        if _CTRL.search(tok.group()):
            damage.update(tok.start() + m.start() for m in _CTRL.finditer(tok.group()))
    if not damage:
        return None
    return ControlRepair(text, doc, sorted(damage), base, fixed)


# -- sniffing ----------------------------------------------------------------------------------

def whole_lines(sample: bytes) -> list[bytes]:
    """The lines of a sniffer's sample (split on ``\\n``) that were written whole.

    An unterminated last line is left out when the sample may have cut it — it is as long as
    the registry reads (:data:`~replaybook.sources.registry.SNIFF_BYTES`: a file's first bytes);
    a shorter sample is the whole file (:func:`~replaybook.sources.registry.sniff_file` sees to
    it), whose last line is all there is: a one-line log without a final newline is recognised —,
    or when it opens a JSON object (``{"``) that does not parse: a record still being written,
    which the loader sets aside as ``pending``, not a line of another format."""
    from .sources.registry import SNIFF_BYTES

    parts = sample.split(b"\n")
    last = parts[-1].strip()  # (empty when the sample ends with a newline)
    if last and (len(sample) >= SNIFF_BYTES
                 or (_OPENS_OBJECT.match(last) and parse_json(last, exact=False)[1] is not None)):
        parts.pop()
    return parts


def line_scores(sample: bytes, score: Callable[[dict], float], limit: int = 200) -> list[float]:
    """``score`` of each JSON object among the first ``limit`` complete non-blank lines of a sample.

    An unterminated last line is left out when the sample may cut it, or when it is a record
    still being written (:func:`whole_lines`).  A line that is not JSON, or is JSON but not an
    object, scores 0.0; a line orjson refuses but the loaders read (a number beyond the double
    range, a lone-surrogate escape) is scored; a line that is JSON but for a raw control
    character (damage the loader sets aside) is left out.
    """
    return [score(o) if o is not None else 0.0 for o in _sample_lines(sample, limit)]


def _sample_lines(sample: bytes, limit: int) -> list:
    """The JSON object (or ``None``: not JSON, or not an object) of each of the first ``limit``
    complete non-blank lines of a sample (see :func:`line_scores`); remembered under
    :func:`sniff_memo`."""
    memo = _SNIFF_MEMO
    key = ("lines", sample, limit)
    if memo is not None:
        got = memo.get(key)
        if got is not None:
            return got
    parts = whole_lines(sample)
    out: list = []
    for raw in parts[:limit]:
        raw = raw.strip()
        if not raw:
            continue
        o, err = parse_json(raw, exact=False)  # (what the loaders read: 1e400, lone surrogates too)
        if err is not None and err.startswith(_DAMAGED_LINE):
            continue  # (damage, which the loader sets aside: not a line of another format)
        out.append(o if err is None and isinstance(o, dict) else None)
    if memo is not None:
        memo[key] = out
    return out


#: How :func:`parse_json` begins the complaint about a line that is JSON but for a raw control
#: character (damage): the sniffers leave such a line out instead of counting it as another
#: format's, as they leave out a line holding NUL bytes.
_DAMAGED_LINE = "invalid JSON: raw control character"


def sample_objects(sample: bytes, limit: int = 50) -> tuple[int, list[dict]]:
    """``(seen, objects)`` of the first ``limit`` lines of a sample: how many are not blank, and
    the JSON objects among them (lines that are not JSON, or not objects, are only counted).  A
    damaged JSON line — JSON but for a raw control character, or a line that opens a JSON object
    (``{"``) and does not parse — is not counted at all and does not use up ``limit``: the lines after
    it are read instead, up to ``20 × limit`` lines in all.

    A sample of pretty-printed objects one after another (``jq`` without ``-c``), where no line
    is JSON by itself, is read as such a stream instead: its first ``limit`` complete objects
    (the one the sample cuts off is not counted).  Remembered under :func:`sniff_memo`."""
    memo = _SNIFF_MEMO
    if memo is None:
        return _sample_objects(sample, limit)
    key = ("objects", sample, limit)
    got = memo.get(key)
    if got is None:
        got = memo[key] = _sample_objects(sample, limit)
    return got


_OPENS_OBJECT = re.compile(rb'\{\s*"')
#: How many lines :func:`sample_objects` reads at most for every line it counts: damaged JSON
#: lines are passed over, so a log that begins with many of them is still recognised by the
#: lines after them (within the sample).
_DAMAGE_READ_FACTOR = 20


def _sample_objects(sample: bytes, limit: int) -> tuple[int, list[dict]]:
    seen = 0
    objects: list[dict] = []
    for raw in sample.split(b"\n", limit * _DAMAGE_READ_FACTOR)[:limit * _DAMAGE_READ_FACTOR]:
        if seen >= limit:
            break
        raw = raw.strip()
        if not raw:
            continue
        o, err = parse_json(raw, exact=False)  # (what the loaders read: 1e400, lone surrogates too)
        if err is not None and (err.startswith(_DAMAGED_LINE) or _OPENS_OBJECT.match(raw)):
            # damage, which the loader sets aside, not a line of another format: JSON but for a raw
            # control character, or a JSON object (``{"``) that does not parse — a torn, cut or
            # garbled line, the sample's last line cut off (a Python dict's ``{'`` is another kind)
            continue
        seen += 1
        if err is None and isinstance(o, dict):
            objects.append(o)
    if seen and not objects and sample.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{":
        return _stream_objects(sample, limit)
    return seen, objects


def _stream_objects(sample: bytes, limit: int) -> tuple[int, list[dict]]:
    """:func:`sample_objects` for a sample of JSON documents one after another."""
    text = sample.decode("utf-8", "replace").lstrip("\ufeff")
    pos = 0
    seen = 0
    objects: list[dict] = []
    while seen < limit:
        try:
            _, o, pos = _next_document(text, pos)
        except (json.JSONDecodeError, RecursionError, ValueError):
            break
        if pos < 0:
            break
        seen += 1
        if isinstance(o, dict):
            objects.append(o)
    return seen, objects


_DECODER_DOC = json.JSONDecoder(parse_int=_json.parse_int)


def _next_document(text: str, pos: int) -> tuple[int, Any, int]:
    """The JSON document of ``text`` at ``pos``, whitespace before it skipped: ``(start, value,
    end)``, or ``(len(text), None, -1)`` when only whitespace is left (documents one after another:
    ``cat`` of JSON files, ``jq`` output).

    Raises:
        json.JSONDecodeError, RecursionError, ValueError: the text at ``start`` is not a document.
    """
    n = len(text)
    while pos < n and text[pos] in " \t\r\n":
        pos += 1
    if pos >= n:
        return n, None, -1
    value, end = _DECODER_DOC.raw_decode(text, pos)
    return pos, value, end
