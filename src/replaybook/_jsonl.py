"""Read-only JSON Lines reading shared by the loaders.

Source files are evidence: they are opened read-only (``rb``) and never written.  Gzip is
recognised by its magic bytes, not by the file name.  Each line becomes a :class:`Line`:
parsed object, or the reason it could not be used.  A last line without a terminating newline
is reported as *pending* (the writer may still be appending), not as corruption.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import orjson

from ._text import deep_safe, safe_str

__all__ = ["Line", "read_bytes", "iter_lines", "file_info", "quarantine_row"]

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
    """Read a whole file read-only, gunzipping it when it starts with the gzip magic bytes.

    Raises:
        OSError: the file cannot be read; ``gzip.BadGzipFile`` (an OSError) for corrupt gzip.
        EOFError: a gzip stream cut short (callers turn both into InputError or quarantine).
    """
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except zlib.error as exc:  # a damaged deflate stream is not an OSError
            raise gzip.BadGzipFile(f"corrupt gzip data: {exc}") from exc
    return data


def parse_json(raw: bytes) -> tuple[Any, str | None]:
    """Parse one JSON text; fall back to the stdlib for what orjson refuses (lone surrogates,
    invalid UTF-8), replacing lone surrogates with U+FFFD everywhere in the result."""
    try:
        return orjson.loads(raw), None  # orjson refuses lone surrogates, so this is safe
    except orjson.JSONDecodeError as exc:
        try:
            # lone-surrogate escapes or invalid UTF-8: parse leniently, then make every string
            # safe so no loader hands a frame that cannot be written to Parquet or HTML
            return deep_safe(json.loads(raw.decode("utf-8", "surrogateescape"))), None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc2:
            msg = str(exc2) if isinstance(exc2, json.JSONDecodeError) else str(exc)
            return None, f"invalid JSON: {msg}"
        except RecursionError:
            return None, "invalid JSON: nested too deeply"


def iter_lines(data: bytes) -> Iterator[Line]:
    """Split ``data`` on ``\\n`` and parse each non-blank line.

    Blank lines are skipped (they carry nothing); every other line yields a :class:`Line`.
    """
    pos = 0
    n = len(data)
    line_no = 0
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
        if not raw.strip():
            continue
        obj, err = parse_json(raw)
        if pending and err is not None:
            yield Line(line_no, start, raw, None, "unterminated last line (still being written?)", True)
        else:
            yield Line(line_no, start, raw, obj, err, False)


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
        "lines": data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1),
        "format": fmt,
    }


def quarantine_row(path: str | Path, line: Line | None, loader: str, error: str, *,
                   kind: str = "invalid", line_no: int | None = None, offset: int | None = None,
                   raw: bytes | None = None) -> dict:
    """A QUARANTINE row dict for a line (or for a whole file when ``line`` is None)."""
    if line is not None:
        line_no, offset, raw = line.line_no, line.offset, line.raw
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
