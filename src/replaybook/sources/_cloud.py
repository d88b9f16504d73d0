"""Shared helpers of the cloud access-log loaders (``cloudtrail``, ``s3_access``, ``gcp_audit``,
``azure_storage``), which all yield the :data:`~replaybook.frames.ACCESS` frame.

What lives here
---------------
* **Reading** (:func:`iter_files`, :func:`read_input`): files are opened read-only and never
  written; gzip is recognised by its magic bytes.  A *truncated* gzip stream (a partial download)
  is decompressed as far as it goes and reported, so the lines before the cut still load; a
  stream that is not gzip at all past its magic bytes gives no data and a file-level quarantine
  row.  A file whose lines end in CR only is read with each CR as a line end
  (:func:`cr_line_ends`).  A path that does not exist or cannot be opened raises :class:`~replaybook.errors.InputError`.
* **JSON shapes** (:func:`json_items`, :func:`json_records`): one whole JSON document (an object,
  an array, or a wrapper object such as CloudTrail's ``{"Records": [...]}``), several such
  documents one after another (``cat`` of delivery files, pretty-printed ``jq`` output), or JSON
  Lines — decided by content, never by the file name.
* **Loading** (:func:`load_each`): every file read and handed to the loader's own reader, then
  :func:`finish`.
* **Row building** (:func:`new_row`, :func:`finish`): rows are plain dicts with every ACCESS
  column; :func:`finish` parses timestamps to UTC in one pass, quarantines rows whose time is
  not a date-time, sorts by ``ts`` (then file, line) and returns a
  :class:`~replaybook.frames.LoadResult`.
* **Safety** (:func:`clean`, :func:`redact_url`): every string in ``raw`` and in the row is made
  surrogate-safe (:func:`~replaybook._text.safe_str`), and credentials in URLs (SAS ``sig``,
  presigned ``X-Amz-Signature`` / ``X-Goog-Signature``, security tokens) are replaced by
  ``REDACTED`` before they reach a frame.
* **Vocabulary**: :data:`PRINCIPAL_TYPES` (the normalised ``principal_type`` values shared by all
  four loaders), :func:`http_outcome`, :func:`verb_action`, :func:`role_session_name`.

Inputs entries
--------------
Each loader returns one ``inputs`` dict per file (``path``, ``sha256`` of the bytes on disk,
``bytes`` on disk, ``lines`` of the decompressed text, ``format``) plus, where they apply:
``records`` (rows produced), ``skipped: True`` and ``reason`` (a valid file that holds no access
records, e.g. a CloudTrail digest file or an empty file), ``ignored_lines`` (valid lines that are
not access records, e.g. GCP ``textPayload`` entries), ``extra_fields`` (S3 lines carrying fields
newer than this loader), ``damaged_gzip: True`` with ``problem`` (a truncated or corrupt gzip
stream; the text before the damage is still read), ``notes`` (a list of sentences: a file whose
lines end in CR only, :data:`CR_LINE_ENDS`), ``numbered: "record"`` (a whole-file JSON document
— an array, a wrapper list, documents one after another: its rows' ``line_no`` is the record's
place among the file's records, not a line, and is shown as ``record N``; :func:`numbered`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator
from urllib.parse import unquote

import orjson
import pandas as pd

from .. import _json
from .._jsonl import (ZERO_FILL, Damaged, _count_lines, control_repair, expand_paths, file_info, gunzip_leniently,
                      is_zero_fill, iter_lines, not_utf8_note, parse_json, quarantine_row)
from .._text import deep_safe, safe_str, time_words, to_utc
from ..errors import InputError
from ..frames import ACCESS, QUARANTINE, LoadResult
from ._record import as_dict
from .registry import SNIFF_BYTES

__all__ = [
    "PRINCIPAL_TYPES",
    "REDACTED",
    "NUL_IN_LINE",
    "Item",
    "iter_files",
    "read_input",
    "read_input_bytes",
    "looks_binary",
    "sniff_lines",
    "cr_line_ends",
    "note_cr_line_ends",
    "CR_LINE_ENDS",
    "json_items",
    "json_records",
    "load_each",
    "new_row",
    "finish",
    "clean",
    "redact_url",
    "redact_text",
    "http_outcome",
    "verb_action",
    "role_session_name",
    "to_int",
    "count_or_note",
    "input_entry",
    "path_uri",
    "json_preview",
    "is_na",
]

#: Normalised ``access.principal_type`` values used by every cloud loader.
PRINCIPAL_TYPES = (
    "user",             # a person's identity: AWS IAMUser / Identity Center user, GCP user, Azure User
    "role",             # an AWS assumed role session
    "root",             # an AWS account root user
    "federated",        # AWS FederatedUser / WebIdentityUser / SAMLUser
    "service",          # the cloud provider's own service acting (AWS invokedBy, S3 `svc:` requesters)
    "service_account",  # a workload identity: GCP service account, Azure service principal / managed identity
    "account",          # a whole account (AWS AWSAccount, an S3 canonical user id)
    "sas",              # Azure shared access signature (no identity, only a signed URL)
    "shared_key",       # Azure storage account key
    "anonymous",        # unauthenticated request
    "unknown",          # the source did not say
)

#: What replaces a credential in a URL or text.
REDACTED = "REDACTED"

# Query parameters whose values are credentials, in any cloud (compared lower-case).
_SECRET_PARAMS = frozenset({
    "sig", "signature", "x-amz-signature", "x-amz-security-token", "x-amz-credential",
    "x-goog-signature", "x-goog-credential", "googleaccessid", "awsaccesskeyid",
    "access_token", "token", "code", "x-ms-signature", "sv-signature",
})
_SECRET_IN_TEXT = re.compile(
    r"(?i)\b(sig|signature|x-amz-signature|x-amz-security-token|x-amz-credential|x-goog-signature|"
    r"x-goog-credential|access_token)=([^&\s\"'#]+)"
)


# -- reading ---------------------------------------------------------------------------------

def iter_files(paths: str | Path | Iterable[str | Path], loader: str, inputs: list[dict],
               quarantine: list[dict]) -> Iterator[tuple[Path, bytes, dict]]:
    """``(path, data, inputs entry)`` for each file named by ``paths`` that holds text to read.

    Files are taken as given; folders are walked recursively for every regular file (sorted;
    symlinks and dot-files skipped — formats are decided by content, so no name pattern is
    applied).  Each file is read (:func:`read_input`) and gets its :func:`input_entry`, appended
    to ``inputs`` in order.  A damaged gzip stream adds a file-level row to ``quarantine`` (what
    was recovered is still read).  An empty file is not yielded (its entry gets ``skipped`` and
    ``reason`` ``empty file`` unless the gzip was damaged); nor is one that is not text at all
    (:func:`looks_binary`), which adds a quarantine row ``not a text log (binary data)``.  A
    text file holding some NUL bytes is yielded: its loader quarantines the lines that hold them.
    A file whose lines end in CR only is yielded with each CR read as a line end
    (:func:`cr_line_ends`; its entry's ``lines`` count those lines and its ``notes`` say so).

    Raises:
        InputError: a path does not exist, or a file cannot be opened or read.
    """
    for path in expand_paths(paths, accept=lambda q: not q.name.startswith(".")):
        size, data, problem = read_input(path)
        lf = cr_line_ends(data)
        if lf is not None:
            data = lf
        info = input_entry(path, size, data, loader, problem)
        if lf is not None:
            note_cr_line_ends(info)
        inputs.append(info)
        if problem:
            quarantine.append(quarantine_row(path, None, loader, problem))
        if not data.strip():
            if not problem:
                info["skipped"], info["reason"] = True, "empty file"
            continue
        if looks_binary(data):
            quarantine.append(quarantine_row(path, None, loader, "not a text log (binary data)",
                                             offset=0, raw=data[:200]))
            continue
        yield path, data, info


def read_input(path: Path) -> tuple[int, bytes, str | None]:
    """Read one file read-only: ``(size on disk, decompressed bytes, problem)``.

    ``problem`` is ``None`` for a clean read; for a gzip stream that is truncated or corrupt it
    says so, and the bytes are what could be decompressed before the damage (possibly none).
    Concatenated gzip members are all read.

    Raises:
        InputError: the file cannot be opened or read (missing, permission, a folder).
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path) from exc
    return read_input_bytes(data)


def read_input_bytes(data: bytes) -> tuple[int, bytes, str | None]:
    """:func:`read_input` for bytes already read from disk: ``(len(data), decompressed bytes,
    problem)`` (:func:`~replaybook._jsonl.gunzip_leniently`); bytes that do not start with the
    gzip magic are returned as they are."""
    out, problem = gunzip_leniently(data)
    return len(data), out, problem


def cr_line_ends(data: bytes) -> bytes | None:
    """The text of a file whose lines end in CR only (an old Mac editor's; no LF before its last
    line end) with each lone CR read as a line end: ``data`` with every CR not followed by an LF
    replaced by an LF — the same length, so every line's byte offset is its place in the file.
    ``None`` for any other text (LF or CRLF line ends, or no line end at all).

    Read as they stand, such a file is one line: JSON documents one after another still parse,
    but an S3 access log's first record took all the others into its trailing fields."""
    if b"\r" not in data:
        return None
    body = data.rstrip(b"\r\n")
    if b"\n" in body or b"\r" not in body:
        return None
    return _LONE_CR.sub(b"\n", data)


_LONE_CR = re.compile(rb"\r(?!\n)")

#: The note an ``inputs`` entry gets for a file read by :func:`cr_line_ends`.
CR_LINE_ENDS = "the lines end in CR only (an old Mac editor's): each CR read as a line end"


def note_cr_line_ends(info: dict) -> None:
    """Add :data:`CR_LINE_ENDS` to an ``inputs`` entry's ``notes``."""
    info.setdefault("notes", []).append(CR_LINE_ENDS)


def sniff_lines(sample: bytes) -> bytes:
    """The lines of a sniffer's sample that say what the file is.

    Left out: the last line when it is unterminated, does not parse as JSON and the sample is
    as long as the registry's (:data:`~.registry.SNIFF_BYTES`: a file's first bytes, which may
    have cut it) — a long line of another kind (one huge record, a pasted blob) must not count
    as a line that is not this format's, which made a file of three records and one such line
    "not recognised"; a shorter sample is the whole file, whose last line (a pretty-printed
    document's closing brace) is complete — and, when the sample has more than one line, every
    line holding NUL bytes (damage, which the loader quarantines line by line; not a line of
    another format).  A sample of one line is returned as it is."""
    cut = sample.rfind(b"\n")
    if cut < 0:
        return sample
    if cut != len(sample) - 1 and len(sample) >= SNIFF_BYTES:
        last = sample[cut + 1:].strip()
        if not last or parse_json(last, exact=False)[1] is not None:
            sample = sample[:cut + 1]
    if b"\x00" in sample:
        sample = b"\n".join(ln for ln in sample.split(b"\n") if b"\x00" not in ln)
    return sample


def line_share(ok: int, parsed: int, seen: int, damaged: int = 0) -> float:
    """A line-based sniffer's share: ``ok`` records of the format among ``parsed`` lines that
    read as records (JSON objects), ``damaged`` lines that start like one and do not read (a
    cut or damaged record: neither for the format nor against it, but a little doubt) and the
    other ``seen - parsed - damaged`` non-blank lines, of another kind, which count against:
    ``ok / (parsed + other) × (0.75 … 1)``.  One record and a cut line: 0.875; one record among
    nine lines of prose: 0.1.  ``0.0`` without any record."""
    other = max(seen - parsed - damaged, 0)
    if not parsed or not ok:
        return 0.0
    return ok / (parsed + other) * (0.75 + 0.25 * parsed / (parsed + damaged))


def damaged_json_lines(sample: bytes, objects: int, seen: int, limit: int = 50) -> int:
    """How many of the first ``limit`` non-blank lines of ``sample`` start like a JSON object
    (``{"``) but are not one of the ``objects`` the sample's lines read as (a record cut or
    damaged), for :func:`line_share`; ``0`` when every one of the ``seen`` lines (or
    pretty-printed documents, :func:`~replaybook._jsonl.sample_objects`) read as an object."""
    if objects >= seen:
        return 0
    braces = 0
    seen = 0
    for raw in sample.split(b"\n"):
        raw = raw.strip()
        if not raw:
            continue
        seen += 1
        if seen > limit:
            break
        braces += raw[:2] == b'{"'  # (a JSON object's first key; a Python dict's repr starts "{'")
    return max(braces - objects, 0)


def looks_binary(data: bytes) -> bool:
    """True when the first 8 KiB are not text: more than a tenth of them control bytes (NUL
    included; tab, line ends and form feed are text), or more than three tenths control bytes
    and bytes that are not UTF-8 together (compressed or random data).

    A stretch of NUL bytes counts as one byte: a text log holding a few NULs, or a block of
    them (what a crash leaves where a file system had allocated but not yet written), is text
    with damage in it — each loader quarantines the lines that hold them and reads the rest.
    """
    head = data[:8192]
    if not head:
        return False
    if b"\x00\x00" in head:
        head = _NUL_RUN.sub(b"\x00", head)
    ctrl = len(head.translate(None, _NOT_CONTROL))  # bytes < 9 or 14..31
    if ctrl > len(head) * 0.1:
        return True
    if head.isascii():
        return False
    not_utf8 = head.decode("utf-8", "replace").count("\ufffd") - head.count(b"\xef\xbf\xbd")
    return ctrl + not_utf8 > len(head) * 0.3


_NOT_CONTROL = bytes(b for b in range(256) if not (b < 9 or 13 < b < 32))
_NUL_RUN = re.compile(rb"\x00{2,}")


@dataclass(slots=True)
class Item:
    """One JSON record of a file.

    For a record (``error`` is ``None``), ``line_no`` is the 1-based line for JSON Lines, or the
    1-based record index inside a whole-file document (``{"Records": [...]}``, an array) or
    across a file of several documents; ``offset`` is the line's byte offset for JSON Lines, the
    byte offset of the record's document in a file of several documents, and ``None`` inside a
    single whole-file document.  For damage (``error`` set, ``obj`` ``None``), ``line_no`` and
    ``offset`` are always the 1-based line and the byte offset in the file where the text that
    could not be read starts, so a quarantine row points at the bytes.  ``pending`` marks an
    unterminated, unparsable last line.
    """

    line_no: int | None
    offset: int | None
    raw: bytes | None
    obj: Any
    error: str | None
    pending: bool = False


def _strip_bom(data: bytes) -> bytes:
    return data[3:] if data[:3] == b"\xef\xbb\xbf" else data


_WRAPPER_START = re.compile(rb'\{\s*"([A-Za-z_]+)"\s*:\s*\[')


def _records_before_the_cut(body: bytes, wrappers: tuple[str, ...], err: str, base: int = 0,
                            doc_no: int | None = None) -> tuple[str, Any, list[Item]] | None:
    """A document that opens with one of ``wrappers`` (``{"Records": [``) and does not parse as
    a whole, read element by element: ``("wrapper:<key>", None, items)`` — the complete
    records, then one item carrying the error ("cut short after N complete records …") at the
    first element that does not parse — or ``None`` when it does not open that way or no
    element parses (the whole document is then one broken item, as before).

    A document (wrapper or array) that is valid but for raw control characters is read whole
    instead, but for the records holding them (:func:`_records_around_control_chars`; ``base``
    and ``doc_no``: where ``body`` starts in its file, and which document of it it is, if one of
    several)."""
    got = _records_around_control_chars(body, wrappers, base, doc_no)
    if got is not None:
        return got
    m = _WRAPPER_START.match(body)
    if m is None or m.group(1).decode() not in wrappers:
        return None
    text = body.decode("utf-8", "surrogateescape")
    dec = json.JSONDecoder(parse_int=_json.parse_int)
    pos = len(m.group(0).decode("utf-8", "surrogateescape"))
    items: list[Item] = []
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        try:
            obj, end = dec.raw_decode(text, pos)
            obj = deep_safe(obj)
        except (json.JSONDecodeError, RecursionError, ValueError):
            break
        items.append(Item(len(items) + 1, None, None, obj, None))
        pos = end
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos < n and text[pos] == ",":
            pos += 1
            continue
        break  # "]" (then the document's end did not parse) or anything else
    if not items:
        return None
    rest = text[pos:pos + 400].encode("utf-8", "surrogateescape")
    why = (f"document cut short or damaged after {len(items):,} complete record"
           f"{'' if len(items) == 1 else 's'} (those are read): {err}")
    line_no, offset = _where(text, pos)
    items.append(Item(line_no, offset, rest, None, why, False))
    return f"wrapper:{m.group(1).decode()}", None, items


def _records_around_control_chars(body: bytes, wrappers: tuple[str, ...], base: int = 0,
                                  doc_no: int | None = None) -> tuple[str, Any, list[Item]] | None:
    """A document that does not parse only because raw control characters (a NUL byte, an
    unescaped tab or line break in a string: U+0000–U+001F) stand in some of its records
    (:func:`~replaybook._jsonl.control_repair`): ``("wrapper:<key>" or "array", None, items)`` —
    every other record read from its own text as a whole document's are, and one damaged item per
    record holding such a character, at the line and byte offset where the record starts, naming
    the record (its index in the list, its ``eventID`` or other id when it can be read) and the
    character with its byte offset.  A raw control character outside the records (in the
    wrapper's own fields) is one damaged item more.  ``None`` for other damage, or a document
    that is neither an array nor one of ``wrappers``.  ``base``: the byte offset of ``body`` in
    its file (the words name bytes of the file); ``doc_no``: the document's number in a file of
    several, named in the words."""
    rep = control_repair(body, base)
    if rep is None:
        return None
    doc = rep.doc
    if isinstance(doc, list):
        shape, path, what = "array", ("*",), "element {} of the array"
    elif isinstance(doc, dict) and (key := next((k for k in wrappers if isinstance(doc.get(k), list)), None)):
        shape, path, what = f"wrapper:{key}", (key, "*"), f'record {{}} of "{key}"'
    else:
        return None
    if doc_no is not None:
        what += f" in document {doc_no}"
    try:
        elements, outside = rep.elements(path, exact=False)
    except (ValueError, RecursionError):
        return None
    items: list[Item] = []
    for k, (line_no, offset, value) in enumerate(elements):
        if isinstance(value, Damaged):
            items.append(Item(line_no, offset, value.raw, None, value.reason(what.format(k + 1)), False))
        else:
            items.append(Item(k + 1, None, None, value, None))
    n = len(elements)
    for d in outside:
        items.append(Item(d.line_no, d.offset, d.raw, None, d.reason(f"{n:,} record{'' if n == 1 else 's'}"), False))
    return shape, None, items


def _where(text: str, pos: int) -> tuple[int, int]:
    """The 1-based line and the byte offset of character ``pos`` of ``text`` (a file's bytes
    decoded with ``surrogateescape``, so each undecodable byte is one character)."""
    return text.count("\n", 0, pos) + 1, len(text[:pos].encode("utf-8", "surrogateescape"))


def _shifted(items: list[Item], lines: int, offset: int) -> list[Item]:
    """``items`` read from text that starts ``lines`` newlines and ``offset`` bytes into the
    file, placed in the file: offsets moved by ``offset``, and the damaged items' lines by
    ``lines`` (a record's ``line_no`` is its index, which does not move)."""
    if not (lines or offset):
        return items
    return [it if it.offset is None else
            Item(it.line_no + lines if it.error is not None else it.line_no, it.offset + offset,
                 it.raw, it.obj, it.error, it.pending) for it in items]


#: Where a document may start again after damage: ``{`` right after a document's closing
#: ``}``/``]``, ``{`` at the start of a line (not indented: a pretty-printed document's own
#: members are), or the opening of one of the loader's wrappers (``{"Records": [``).
_RESTART_BASE = r'(?:[}\]][ \t\r\n]*|\n)(?P<a>)\{'
_RESTARTS: dict[tuple[str, ...], re.Pattern] = {}
#: Damaged stretches one file may have before the rest of it is set aside in one piece.
_MAX_DAMAGED = 10_000


def _restart(wrappers: tuple[str, ...]) -> re.Pattern:
    pat = _RESTARTS.get(wrappers)
    if pat is None:
        keys = "|".join(re.escape(k) for k in wrappers)
        pat = _RESTARTS[wrappers] = re.compile(_RESTART_BASE + (rf'|(?P<b>)\{{\s*"(?:{keys})"\s*:\s*\['
                                                                 if keys else ""))
    return pat


def _start_of(m: re.Match) -> int:
    """Where the document a :func:`_restart` match finds starts (its ``{``)."""
    return m.start("a") if m.group("a") is not None else m.start("b")


_DOC_DECODER = json.JSONDecoder(parse_int=_json.parse_int)


def _decode_at(text: str, pos: int, restart: re.Pattern, spent: list[int]) -> tuple[Any, int]:
    """The JSON document at ``pos``: ``(value, end)``.  It is decoded from a copy reaching to a
    place where a document may start again (:func:`_restart`), the copy doubled while the text
    runs out inside it (``}{`` in a string, a document cut short): the parser's error names its
    line by counting the text before it, so decoding in place would cost a file of many damaged
    documents time in the square of its size.  ``spent[0]`` grows by the characters copied.

    Raises:
        json.JSONDecodeError: the document does not parse (its ``pos`` counted from ``pos``);
            RecursionError, ValueError: as ``json`` raises them.
    """
    n = len(text)
    stop = pos
    while True:
        want = max(stop + 1, pos + 2 * (stop - pos))
        m = restart.search(text, want - 1)  # (from the char before: a '}' ending a document)
        while m is not None and _start_of(m) < want:
            m = restart.search(text, _start_of(m) + 1)
        stop = n if m is None else _start_of(m)
        piece = text[pos:stop]
        spent[0] += len(piece)
        try:  # the common case, one whole document up to the next: orjson, as parse_json reads
            return orjson.loads(piece), stop
        except orjson.JSONDecodeError:
            pass
        try:
            value, end = _DOC_DECODER.raw_decode(piece)
            return value, pos + end
        except json.JSONDecodeError as exc:
            ran_out = exc.pos >= len(piece.rstrip()) or exc.msg.startswith("Unterminated string")
            if stop >= n or not ran_out:  # damaged inside, not cut by the copy's end
                raise


def _document_stream(body: bytes, wrappers: tuple[str, ...], base: int = 0) -> tuple[str, None, list[Item]] | None:
    """Several JSON documents one after another, with or without whitespace between them: what
    ``cat`` of uncompressed CloudTrail delivery files (which end without a newline), a gzip of
    several members, or ``jq`` without ``-c`` (pretty-printed objects) writes.

    Returns ``("documents", None, items)`` — each document's records in order (the elements of a
    wrapper list or an array; any other document is one record), ``line_no`` the record's
    1-based index across the file and ``offset`` the byte offset where its document starts (in
    ``body``); a damaged stretch's item has the line and byte offset where it starts.  A
    stretch that does not parse (a document cut short, a stray character; the first document
    too) gives the records it holds before the damage (:func:`_records_before_the_cut`) and one
    item with the complaint, and reading goes on where a document starts again
    (:func:`_restart`), so the documents after it are read too.  After :data:`_MAX_DAMAGED`
    stretches, or once the failed attempts have read four times the text (a text built to make
    each attempt read to its end), the rest is one item.  ``None`` when no document parses, or
    fewer than two pieces are found, so the caller's single-document handling applies.
    ``base``: the byte offset of ``body`` in its file, for the byte offsets a complaint names."""
    text = body.decode("utf-8", "surrogateescape")
    n = len(text)
    restart = _restart(wrappers)
    budget = 4 * n + (1 << 20)  # characters decoding may copy
    spent = [0]
    pos = 0
    pieces: list[tuple[int, Any, str | None]] = []  # (character position, document or text, complaint)
    damaged = complete = 0
    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n:
            break
        if spent[0] > budget:  # (attempts have read the text four times over: no more of them)
            pieces.append((pos, text[pos:].rstrip(), "not read on: too much of the file is damaged"))
            damaged += 1
            break
        try:
            obj, end = _decode_at(text, pos, restart, spent)
            pieces.append((pos, deep_safe(obj), None))
            complete += 1
            pos = end
            continue
        except (json.JSONDecodeError, RecursionError, ValueError) as exc:
            why = (f"{exc.msg}{'' if exc.msg.endswith(' at') else ' at'} character {exc.pos + 1:,} of the "
                   "document" if isinstance(exc, json.JSONDecodeError) else "nested too deeply")
        damaged += 1
        m = restart.search(text, pos) if damaged < _MAX_DAMAGED else None
        while m is not None and _start_of(m) <= pos:  # (the damaged document's own opening)
            m = restart.search(text, _start_of(m) + 1)
        stop = n if m is None else _start_of(m)
        while stop > pos + 1 and text[stop - 1] in " \t\r\n":
            stop -= 1
        pieces.append((pos, text[pos:stop], why))
        if m is None:
            break
        pos = stop
    if not complete or len(pieces) < 2:
        return None
    items: list[Item] = []
    done_chars = done_bytes = done_lines = 0
    n_docs = 0
    for k, (at, piece, why) in enumerate(pieces):
        done_bytes += len(text[done_chars:at].encode("utf-8", "surrogateescape"))
        done_lines += text.count("\n", done_chars, at)
        done_chars = at
        n_docs += 1
        if why is None:
            recs = piece if isinstance(piece, list) else None
            if isinstance(piece, dict):
                recs = next((piece[k] for k in wrappers if isinstance(piece.get(k), list)), None)
            for o in (recs if recs is not None else [piece]):
                items.append(Item(len(items) + 1, done_bytes, None, o, None))
            continue
        raw = piece.encode("utf-8", "surrogateescape")
        cut = _records_before_the_cut(raw, wrappers, why, base + done_bytes, n_docs)
        held = (_shifted(cut[2], done_lines, done_bytes) if cut is not None else
                [Item(done_lines + 1, done_bytes, raw[:400], None,
                      f"document {n_docs} cut short or damaged ({len(raw):,} bytes not read; the documents "
                      f"{'around' if k + 1 < len(pieces) else 'before'} it are): {why}", False)])
        for it in held:  # records numbered across the file; damage where it is in the file
            items.append(it if it.error is not None else Item(len(items) + 1, done_bytes, it.raw, it.obj, None))
    return "documents", None, items


def _lines_after_are_records(data: bytes, first_end: int) -> bool:
    """JSON Lines whose first line is damaged: one of the next five non-blank lines is a JSON
    object (with members) by itself, as no line inside a pretty-printed document is."""
    if first_end < 0:
        return False
    seen = 0
    for raw in data[first_end + 1:first_end + 1 + (1 << 20)].split(b"\n"):
        raw = raw.strip()
        if not raw:
            continue
        seen += 1
        if raw[:1] == b"{" and raw[-1:] == b"}" and len(raw) > 2:
            obj, err = parse_json(raw, exact=False)
            if err is None and isinstance(obj, dict) and obj:
                return True
        if seen >= 5:
            break
    return False


def json_items(data: bytes, wrappers: tuple[str, ...]) -> tuple[str, Any, list[Item]]:
    """Split a file's text into JSON records, by content.

    Returns ``(shape, document, items)``:

    * ``("wrapper:<key>", doc, items)`` — one JSON object with a list under one of ``wrappers``
      (tried in order); ``items`` are the list's elements (record index as ``line_no``);
    * ``("array", None, items)`` — one JSON array;
    * ``("document", doc, [])`` — one JSON object without a wrapper key (the caller decides:
      a single record, or a file to skip);
    * ``("documents", None, items)`` — several JSON documents one after another (concatenated
      delivery files, pretty-printed ``jq`` output): :func:`_document_stream`;
    * ``("jsonl", None, items)`` — JSON Lines, one item per non-blank line;
    * ``("broken", None, [item])`` — one JSON document (its first line is not JSON by itself)
      that does not parse: a single item carrying the parser's complaint.

    A wrapper document or array that is valid but for raw control characters (a NUL byte …)
    gives its records and one damaged item per record holding one
    (:func:`_records_around_control_chars`); cut short, the records before the cut.
    """
    bom = len(data) - len(_strip_bom(data))
    data = _strip_bom(data)
    body = data.lstrip()
    lead = len(data) - len(body)  # (damage found in body is placed in the file by these)
    lead_lines, lead_bytes = data[:lead].count(b"\n"), bom + lead
    if body[:1] in (b"{", b"["):
        obj, err = parse_json(body, exact=False)
        if err is None:
            if isinstance(obj, list):
                return "array", None, [Item(i + 1, None, None, o, None) for i, o in enumerate(obj)]
            if isinstance(obj, dict):
                for key in wrappers:
                    v = obj.get(key)
                    if isinstance(v, list):
                        return (f"wrapper:{key}", obj,
                                [Item(i + 1, None, None, o, None) for i, o in enumerate(v)])
                return "document", obj, []
        else:
            first_end = body.find(b"\n")  # (the first line that is not blank)
            first = body if first_end < 0 else body[:first_end]
            if (parse_json(first.strip(), exact=False)[1] is not None
                    and not _lines_after_are_records(body, first_end)):
                # several documents one after another, or one multi-line (or single-line)
                # document that does not parse as a whole: a wrapper list cut short (a copy of a
                # delivery file stopped mid-write, a truncated gzip) still holds its complete
                # records
                stream = _document_stream(body, wrappers, lead_bytes)
                if stream is not None:
                    return stream[0], None, _shifted(stream[2], lead_lines, lead_bytes)
                cut = _records_before_the_cut(body, wrappers, err, lead_bytes)
                if cut is not None:
                    return cut[0], None, _shifted(cut[2], lead_lines, lead_bytes)
                return "broken", None, [Item(1, 0, data[:400], None, err, False)]
    items = []
    for ln in iter_lines(data, exact=False):
        if ln.error is not None and ln.raw[:1] in (b"{", b"["):
            # one line holding documents back to back (two delivery files joined without a
            # newline): its records, all numbered with its line
            stream = _document_stream(ln.raw, wrappers)
            if stream is not None and all(it.error is None for it in stream[2]):
                items.extend(Item(ln.line_no, ln.offset, None, it.obj, None) for it in stream[2])
                continue
        items.append(Item(ln.line_no, ln.offset, ln.raw, ln.obj, ln.error, ln.pending))
    return "jsonl", None, items


def json_records(path: Path, data: bytes, info: dict, wrappers: tuple[str, ...], loader: str,
                 quarantine: list[dict], skip_document: Callable[[dict], str | None]) -> Iterator[Item]:
    """The parsed JSON records of one file's text, by content (:func:`json_items`).

    The elements of a wrapper list (one of ``wrappers``) or of an array, or the lines of JSON
    Lines; a lone JSON object is one record (line 1, offset 0) unless ``skip_document(object)``
    gives a reason, in which case ``info`` gets ``skipped: True`` and that ``reason`` and nothing
    is yielded.  A record that does not parse goes to ``quarantine`` instead, with its line,
    offset, raw text and the parser's complaint (``kind`` ``pending`` for an unterminated last
    line, else ``invalid``; a JSON Lines line holding NUL bytes says so first, :data:`NUL_IN_LINE`).
    """
    shape, doc, items = json_items(data, wrappers)
    if shape.startswith("wrapper:") or shape in ("array", "documents"):
        info["numbered"] = "record"  # (line_no is the record's index: see the module docstring)
    if shape == "document":
        reason = skip_document(doc)
        if reason:
            info["skipped"], info["reason"] = True, reason
            return
        items = [Item(1, 0, None, doc, None)]
    for it in items:
        if it.error is not None:
            if shape == "jsonl" and it.raw is not None and b"\x00" in it.raw:
                quarantine.append(quarantine_row(path, None, loader, ZERO_FILL if it.pending and is_zero_fill(it.raw) else
                                                 f"{NUL_IN_LINE}: {it.error}",
                                                 line_no=it.line_no, offset=it.offset, raw=it.raw))
                continue
            quarantine.append(quarantine_row(path, None, loader, it.error,
                                             kind="pending" if it.pending else "invalid",
                                             line_no=it.line_no, offset=it.offset, raw=it.raw))
            continue
        yield it


def numbered(source_file: Any, line_no: Any, records: Iterable[str] = ()) -> str:
    """Where an ACCESS row was read, in words: ``file:6`` for a line, ``file record 2`` for a
    record of a whole-file JSON document (``source_file`` among ``records``: the paths whose
    ``inputs`` entry says ``numbered: "record"``), whose ``line_no`` is its index there, not a
    line; ``file`` alone without ``line_no``."""
    f = str(source_file)
    if line_no is None or is_na(line_no):
        return f
    return f"{f} record {int(line_no)}" if f in records else f"{f}:{int(line_no)}"


def record_error(info: dict, line_no: Any, why: str) -> str:
    """A quarantine row's ``error`` for a record that parsed but cannot be used: ``record 3:
    <why>`` in a whole-file JSON document (``info`` says ``numbered: "record"``; the row's
    ``line_no`` is then that record number, not a line, as the ACCESS rows' is), else ``why``.
    The CLI prints such a row as ``file record 3`` (:func:`quarantine_where`)."""
    if info.get("numbered") == "record" and line_no is not None:
        return f"record {int(line_no)}: {why}"
    return why


def at_words(info: dict, line_no: Any) -> str:
    """``record 3`` in a whole-file JSON document (``numbered: "record"``), else ``line 3``:
    where a file note places a record."""
    return f"{'record' if info.get('numbered') == 'record' else 'line'} {line_no}"


def quarantine_where(source_file: Any, line_no: Any, error: Any, records: Iterable[str] = ()) -> tuple[str, str]:
    """``(where, error)`` to print a quarantine row: ``file record 3`` and the error without its
    ``record 3: `` (:func:`record_error`) for a record of a file in ``records``; else
    ``file:3`` (a line; a damaged record's row names its line, and its error the record) or
    ``file``."""
    f = str(source_file)
    if line_no is None or is_na(line_no):
        return f, str(error)
    prefix = f"record {int(line_no)}: "
    if f in records and isinstance(error, str) and error.startswith(prefix):
        return f"{f} record {int(line_no)}", error[len(prefix):]
    return f"{f}:{int(line_no)}", str(error)


def record_numbered(inputs: Iterable[dict]) -> set[str]:
    """The ``path`` of every ``inputs`` entry whose rows are numbered by record (``numbered:
    "record"``), for :func:`numbered`."""
    return {str(i["path"]) for i in inputs if i.get("numbered") == "record" and i.get("path") is not None}


#: The quarantine's words for a line holding NUL bytes (no JSON text holds one raw, nor does an
#: S3 access log): the file is damaged there, and only that line is set aside.
NUL_IN_LINE = "NUL bytes in the line (binary data: the file is damaged here); the other lines are read"


def load_each(paths: str | Path | Iterable[str | Path], loader: str,
              read_file: Callable[[Path, bytes, dict, list[dict], list[dict]], None]) -> LoadResult:
    """Load the files named by ``paths`` (:func:`iter_files`) into the ACCESS frame.

    ``read_file(path, data, info, rows, quarantine)`` reads one file's text: it appends a row dict
    (:func:`new_row`, ``ts`` an ISO 8601 string) per access record to ``rows``, unusable records
    to ``quarantine``, and notes to ``info``.  The result is :func:`finish`'s.

    Raises:
        InputError: a path does not exist, or a file cannot be opened or read.
    """
    rows: list[dict] = []
    quarantine: list[dict] = []
    inputs: list[dict] = []
    for path, data, info in iter_files(paths, loader, inputs, quarantine):
        read_file(path, data, info, rows, quarantine)
    return finish(rows, quarantine, inputs, loader)


# -- rows ------------------------------------------------------------------------------------

def new_row(source: str, time_kind: str, path: str, line_no: int | None) -> dict:
    """A row dict with every ACCESS column (NA) and the given source, time kind and location."""
    row = dict.fromkeys(ACCESS.names)
    row["source"] = source
    row["time_kind"] = time_kind
    row["source_file"] = path
    row["line_no"] = line_no
    return row


def finish(rows: list[dict], quarantine: list[dict], inputs: list[dict], loader: str) -> LoadResult:
    """Build the ACCESS frame from row dicts whose ``ts`` is an ISO 8601 string.

    Rows whose ``ts`` does not parse are moved to the quarantine (with file and line).  The
    frame is sorted by ``ts``, then ``source_file``, ``line_no`` (stable) and re-indexed, and
    each file's ``inputs`` entry gets ``records`` (rows kept).
    """
    if rows:
        ts = to_utc([r["ts"] for r in rows])
        bad = ts.isna().to_numpy()
        keep = []
        by_record = record_numbered(inputs) if bad.any() else set()
        for r, t, b in zip(rows, ts, bad):
            if b:
                numbered = {"numbered": "record"} if r["source_file"] in by_record else {}
                quarantine.append(quarantine_row(
                    r["source_file"], None, loader,
                    record_error(numbered, r["line_no"], f"time {r['ts']!r} {time_words(r['ts'])}"), line_no=r["line_no"],
                    raw=json_preview(r["raw"])[:400] if r["raw"] is not None else None))
                continue
            r["ts"] = t
            keep.append(r)
        rows = keep
    frame = ACCESS.build(rows) if rows else ACCESS.empty()
    if len(frame):
        frame = frame.sort_values(["ts", "source_file", "line_no"], kind="stable").reset_index(drop=True)
    counts = frame["source_file"].value_counts().to_dict() if len(frame) else {}
    for info in inputs:
        info["records"] = int(counts.get(info["path"], 0))
    for q in quarantine:
        if isinstance(q.get("raw"), str):
            q["raw"] = redact_text(q["raw"])
    return LoadResult(frame=frame, quarantine=QUARANTINE.build(quarantine), inputs=inputs)


def input_entry(path: Path, size: int, data: bytes, fmt: str, problem: str | None, *,
                sha256: str | None = None, lines: int | None = None) -> dict:
    """The ``inputs`` dict for one file (see the module docstring).

    ``sha256`` (hex, of the bytes on disk) and ``lines`` (of ``data``) may be given when the
    caller already has them; otherwise the file is hashed from disk and the lines counted.
    Bytes that are not UTF-8 are named in ``notes`` by line (read as U+FFFD; see
    :func:`~replaybook._jsonl.not_utf8_note`), unless the file is no text at all
    (:func:`looks_binary`: set aside whole).
    """
    if sha256 is None:
        info = file_info(path, size, data, fmt)
    else:
        info = {"path": str(path), "sha256": sha256, "bytes": size,
                "lines": lines if lines is not None else _count_lines(data), "format": fmt}
    if problem:
        info["damaged_gzip"] = True
        info["problem"] = problem
    bad = None if looks_binary(data) else not_utf8_note(data, "request's object, principal or URI")
    if bad:  # (a file that is no text at all is set aside whole: its quarantine row says so)
        info.setdefault("notes", []).append(bad)
    return info


# -- safety ----------------------------------------------------------------------------------

def redact_url(url: str, keep: frozenset[str] | None = None) -> str:
    """``url`` with credential query values replaced by ``REDACTED``.

    With ``keep`` ``None``, the values of :data:`_SECRET_PARAMS` (``sig``, ``X-Amz-Signature``,
    ``X-Amz-Security-Token``, ``X-Goog-Signature``, ``access_token`` …) are redacted.  With a
    ``keep`` set (lower-case names), EVERY parameter value whose name is not in it is redacted
    (used for Azure SAS URLs, whose ``sv``/``se``/``sp``/``skoid``… describe the credential).
    Parameters without a value (``?versioning``) and the parameter names are kept; the order
    is kept.
    """
    q = url.find("?")
    if q < 0:
        return url
    head, query = url[:q], url[q + 1:]
    frag = ""
    h = query.find("#")
    if h >= 0:
        query, frag = query[:h], query[h:]
    parts = []
    for part in query.split("&"):
        name, eq, _value = part.partition("=")
        lname = unquote(name).lower()
        if eq and ((keep is None and lname in _SECRET_PARAMS) or (keep is not None and lname not in keep)):
            parts.append(f"{name}={REDACTED}")
        else:
            parts.append(part)
    return head + "?" + "&".join(parts) + frag


def redact_text(s: str) -> str:
    """``s`` with ``sig=…``, ``X-Amz-Signature=…`` and similar credential values redacted
    wherever they appear (inside URLs embedded in free text, request lines, headers)."""
    if "=" not in s:
        return s
    return _SECRET_IN_TEXT.sub(lambda m: f"{m.group(1)}={REDACTED}", s)


def clean(obj: Any, _depth: int = 0) -> Any:
    """A copy of a parsed JSON value with every string surrogate-safe and credential-redacted.

    Dict keys are cleaned too.  Nesting deeper than 200 levels is cut (replaced by the string
    ``"…nested too deeply"``) so a hostile record cannot exhaust the stack.
    """
    if isinstance(obj, str):
        return redact_text(safe_str(obj))
    if _depth > 200:
        return "…nested too deeply"
    if isinstance(obj, dict):
        return {(redact_text(safe_str(k)) if isinstance(k, str) else k): clean(v, _depth + 1)
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [clean(v, _depth + 1) for v in obj]
    return obj


# -- vocabulary ------------------------------------------------------------------------------

def http_outcome(status: int | None, error_code: str | None = None) -> str:
    """``allowed`` / ``denied`` / ``error`` from an HTTP status and a service error code.

    401 and 403, and error codes naming an authorization failure (``AccessDenied…``,
    ``…Unauthorized…``, ``AuthorizationFailure``, ``AuthenticationFailed``, ``AllAccessDisabled``,
    ``…PermissionMismatch``, ``Forbidden``) are ``denied``; any other 4xx/5xx or error code is
    ``error``; 1xx–3xx without an error code (304 Not Modified included) or no status at all is
    ``allowed``.
    """
    if error_code and _is_denied_code(error_code):
        return "denied"
    if status in (401, 403):
        return "denied"
    if status is not None and status >= 400:
        return "error"
    if error_code:
        return "error"
    return "allowed"


_DENIED_CODE = re.compile(r"(?i)accessdenied|unauthori[sz]|authorizationfailure|authenticationfailed|"
                          r"allaccessdisabled|permissionmismatch|forbidden|permission_denied|"
                          r"sasauthorizationerror|authorizationerror|invalidaccesskeyid|signaturedoesnotmatch|"
                          r"expiredtoken|invalidtoken|accountisdisabled")


def _is_denied_code(code: str) -> bool:
    return bool(_DENIED_CODE.search(code))


_VERBS = (
    ("list", ("list", "describe", "search", "scan", "query", "lookup", "select")),
    ("head", ("head",)),
    ("read", ("get", "read", "download", "fetch", "export", "batchget")),
    ("delete", ("delete", "remove", "terminate", "destroy", "purge", "expire", "abort")),
    ("write", ("put", "create", "update", "modify", "set", "insert", "patch", "upload", "copy",
               "write", "append", "compose", "rewrite", "restore", "move", "rename", "attach",
               "add", "run", "start", "stop", "reboot", "tag", "untag", "enable",
               "disable", "register", "replace", "post")),
)


def verb_action(name: str | None) -> str:
    """Coarse ACCESS_ACTIONS value from an operation name's leading verb (``DescribeInstances``
    → list, ``TerminateInstances`` → delete, ``insert`` → write); ``other`` when no verb fits.

    Used only for operations outside each loader's explicit storage table.
    """
    if not name:
        return "other"
    word = re.match(r"[A-Za-z][a-z]*", name)
    if not word:
        return "other"
    w = word.group(0).lower()
    for action, verbs in _VERBS:
        if w in verbs:
            return action
    return "other"


_ASSUMED_ROLE = re.compile(r"^arn:aws[\w-]*:sts::\d*:assumed-role/([^/]+)/(.+)$")


def role_session_name(arn: str | None) -> str | None:
    """The role session name of an ``arn:aws:sts::<acct>:assumed-role/<role>/<session>`` ARN."""
    if not arn:
        return None
    m = _ASSUMED_ROLE.match(arn)
    return m.group(2) if m else None


def to_int(v: Any) -> int | None:
    """An int from an int, an integral float or a string of ASCII digits; ``None`` otherwise (and for
    booleans, negative values and values of 2**63 or more, which no byte or row count can be
    and no ``Int64`` column can hold)."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if 0 <= v < COUNT_LIMIT else None
    if isinstance(v, float):
        return int(v) if v.is_integer() and 0 <= v < COUNT_LIMIT else None
    if isinstance(v, str) and v.strip().isascii() and v.strip().isdigit():  # ("²" is a digit int() refuses)
        n = int(v.strip()) if len(v.strip()) < 20 else COUNT_LIMIT
        return n if n < COUNT_LIMIT else None
    return None


#: Counts (bytes, rows) at or above this are not counts: ``to_int`` gives ``None``.
COUNT_LIMIT = 2**63


def count_or_note(v: Any, field: str, at: str, notes: list[str] | None) -> int | None:
    """``to_int(v)`` for a count column (``bytes``, ``rows``); a value that is there but is no
    count (negative, 2**63 or more, a fraction, text that is not digits, a boolean, an object)
    gives ``None`` and a note in ``notes`` (``"<at>: <field> <value> is not a count …"``), so a
    byte count the record holds is never left out without a word.  ``None`` (JSON ``null`` or no
    field) gives ``None`` and no note."""
    n = to_int(v)
    if n is None and v is not None and notes is not None:
        shown = clean(json_preview(v)[:80].decode("utf-8", "replace"))
        notes.append(f"{at}: {field} {shown} is not a count (a whole number from 0 to 2**63-1): "
                     "left empty, the count is not known")
    return n


def path_uri(scheme: str, bucket: str, key: str | None) -> str:
    """``<scheme>://<bucket>/<key>`` (``key`` ``None`` or empty gives the bucket root ``…/``)."""
    return f"{scheme}://{bucket}/{key or ''}"


def json_preview(obj: Any) -> bytes:
    """Compact JSON bytes of ``obj`` for a quarantine row's ``raw`` (non-JSON values as str; a
    lazily parsed :class:`~._record.SourceRecord` as its dict)."""
    try:
        return orjson.dumps(as_dict(obj), default=str)
    except (TypeError, orjson.JSONEncodeError):
        return safe_str(repr(obj)).encode("utf-8", "replace")


def is_na(v: Any) -> bool:
    """True for ``None`` and pandas NA/NaT/NaN scalars."""
    try:
        return v is None or bool(pd.isna(v))
    except (TypeError, ValueError):
        return False
