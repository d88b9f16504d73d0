"""Lines that repeat a uuid: a resumed session's copy, or a conflict (private).

Claude Code writes a resumed session to a new file that starts with copies of the earlier
session's lines — same ``uuid``, same timestamps and content, only ``sessionId`` changed
(``../shared/cases/claude-resumed-session``), and, where the client changed between the two, its
envelope keys (:data:`COPY_KEYS_IGNORED`).  The loaders count those once.  A line that
repeats a uuid with *other* content is not such a copy — an edited transcript, two files that
disagree about what happened — and dropping it as a duplicate would hide exactly what an
investigator looks for.  :func:`copy_or_conflict` tells the two apart; the loaders keep the first
line and set the other aside as a ``conflict`` quarantine row naming both places.

Only repeats pay for this: the first place of each uuid is remembered as ``(file, line)``,
and the first line's bytes are read again from its file when a repeat is met (one file's
lines are kept between calls: a resumed file repeats one earlier file, line after line).
"""

from __future__ import annotations

from typing import Any

import orjson

from .. import _json

__all__ = ["copy_or_conflict", "conflict_row", "COPY_KEYS_IGNORED", "CONFLICT"]

#: keys a resumed session's copy may change: the envelope the client writes each line under —
#: the new session's id, and the writing client's version, branch, folder and session slug (a
#: client upgraded between the session and its resume, or one that adds a key the first did not
#: write) — never what the line records (its type, uuid, parent, time, message, tool result)
COPY_KEYS_IGNORED = frozenset({"sessionId", "version", "gitBranch", "cwd", "slug"})
#: the quarantine ``kind`` of a line that repeats a uuid with other content
CONFLICT = "conflict"

_cache: dict[str, list[bytes]] = {}


def _lines_of(path: str) -> list[bytes]:
    """The lines of ``path`` (gunzipped, without line ends or a UTF-8 BOM); one file cached."""
    got = _cache.get(path)
    if got is None:
        from .._jsonl import read_bytes

        try:
            data = read_bytes(path)
        except (OSError, EOFError):
            data = b""
        if data[:3] == b"\xef\xbb\xbf":
            data = data[3:]
        got = [ln[:-1] if ln.endswith(b"\r") else ln for ln in data.split(b"\n")]
        _cache.clear()
        _cache[path] = got
    return got


def _obj(raw: bytes) -> Any:
    try:
        return _json.loads(raw)
    except orjson.JSONDecodeError:
        from .._jsonl import parse_json

        return parse_json(raw)[0]


def copy_or_conflict(first: tuple[str, int], path: str, line_no: int, raw: bytes) -> str | None:
    """``None`` when line ``line_no`` of ``path`` (its bytes ``raw``) is a copy of the line at
    ``first`` (``(file, 1-based line)``, where its uuid was met first): the same bytes, or the
    same JSON object but for :data:`COPY_KEYS_IGNORED`.  Otherwise the quarantine's words for
    it: where the first is and which keys differ."""
    fpath, fline = first
    lines = _lines_of(fpath)
    orig = lines[fline - 1] if 0 < fline <= len(lines) else None
    if orig is not None and orig == raw:
        return None
    a = _obj(orig) if orig is not None else None
    b = _obj(raw)
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(k for k in a.keys() | b.keys()
                      if k not in COPY_KEYS_IGNORED and (k not in a or k not in b or a[k] != b[k]))
        if not keys:
            return None
        what = ", ".join(keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
        what += " differs" if len(keys) == 1 else " differ"
    else:
        what = "the line itself differs"
    where = f"line {fline}" if fpath == path else f"{fpath}:{fline}"
    return (f"repeats the uuid of {where} with different content ({what}); the first is kept, "
            "this one set aside")


def conflict_row(first: tuple[str, int], path, line_no: int, start: int, raw: bytes, loader: str) -> dict | None:
    """``None`` for a resume copy (:func:`copy_or_conflict`), else the ``conflict`` QUARANTINE
    row of line ``line_no`` (at byte ``start``) of ``path``."""
    err = copy_or_conflict(first, str(path), line_no, raw)
    if err is None:
        return None
    from .._jsonl import Line, quarantine_row

    return quarantine_row(path, Line(line_no, start, raw, None, None, False), loader, err, kind=CONFLICT)
