"""Lines that repeat a line: a resumed or forked session's copy, or a conflict (private).

Claude Code writes a resumed session to a new file that starts with copies of the earlier
session's lines — same ``uuid``, same timestamps and content, only ``sessionId`` changed
(``../shared/cases/claude-resumed-session``), and, where the client changed between the two, its
envelope keys (:data:`COPY_KEYS_IGNORED`).  A *fork* copies them too, and says so: each copied
line carries ``forkedFrom: {sessionId, messageUuid}`` naming the session and line it copies.
``/branch`` (client 2.1.x) keeps each line's ``uuid`` (``messageUuid`` equals it); the Agent
SDK's ``forkSession()`` gives every copied line a fresh ``uuid`` (``messageUuid`` keeps the
original's) and re-stamps the last one's ``timestamp`` with the time of the fork.  Either way the
copied line stands for the line ``messageUuid`` names: :func:`line_key` is that line's key, and
the copy is compared with it leaving out what a fork re-stamps (:data:`FORK_KEYS_IGNORED`).
The loaders count those once.  A line that
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

__all__ = ["copy_or_conflict", "conflict_row", "line_key", "fork_key", "note_alias", "COPY_KEYS_IGNORED",
           "FORK_KEYS_IGNORED", "CONFLICT"]

#: keys a resumed session's copy may change: the envelope the client writes each line under —
#: the new session's id, and the writing client's version, branch, folder, session slug, user
#: type and entry point (a client upgraded between the session and its resume re-stamps them all,
#: or adds one the first did not write) — never what the line records (its type, uuid, parent,
#: time, message, tool result)
COPY_KEYS_IGNORED = frozenset({"sessionId", "version", "gitBranch", "cwd", "slug", "userType", "entrypoint"})
#: keys a fork's copy (a line with ``forkedFrom``) may change besides those: its own ``uuid`` and
#: the rebuilt chain (``parentUuid``, ``logicalParentUuid``), the fork's marker itself, and what
#: a fork clears or sets on every line it copies (``isSidechain`` false; ``sessionKind``,
#: ``teamName``, ``agentName``, ``sourceToolAssistantUUID`` cleared; ``neutralizedByFork``).
#: ``timestamp`` is left out only where the copy's is not earlier than the line it copies (the
#: SDK re-stamps the last copied line with the time of the fork), or where both are a fork's
#: copies (each may carry its own fork's time).  A fork's copy is known by its own ``uuid`` too:
#: a fork of the fork names the line by it (``messageUuid``), so the loaders map it to the same
#: first place
FORK_KEYS_IGNORED = frozenset({"uuid", "parentUuid", "logicalParentUuid", "forkedFrom", "isSidechain",
                               "sessionKind", "teamName", "agentName", "sourceToolAssistantUUID",
                               "neutralizedByFork"})
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
        from .._jsonl import parse_json, split_torn

        got, err = parse_json(raw)
        if err is None:
            return got
        from ._claude_ref import is_record

        torn = split_torn(raw, is_record)   # (the record the loader read from a torn line)
        return None if torn is None else torn[1]


def fork_key(forked_from: Any) -> str | None:
    """The ``messageUuid`` a line's ``forkedFrom`` value names (a non-empty string), else ``None``."""
    if forked_from.__class__ is dict:
        m = forked_from.get("messageUuid")
        if m.__class__ is str and m:
            return m
    return None


def line_key(uuid: Any, forked_from: Any) -> str | None:
    """The key a line is counted once by: the ``messageUuid`` of its ``forkedFrom`` (a fork's
    copy stands for the line it copies, whatever its own ``uuid``), else its ``uuid`` (a
    non-empty string), else ``None`` (never deduplicated)."""
    if forked_from is not None:
        m = fork_key(forked_from)
        if m is not None:
            return m
    return uuid if uuid.__class__ is str and uuid else None


def fork_sessions(info: dict, forked_from: list) -> None:
    """Note in a file's ``inputs`` entry ``info`` the sessions its lines say they were forked from:
    ``forked_from``, the distinct ``forkedFrom.sessionId`` strings, sorted (set only when there is
    one)."""
    ids = sorted({f["sessionId"] for f in forked_from
                  if f.__class__ is dict and f.get("sessionId").__class__ is str and f["sessionId"]})
    if ids:
        info["forked_from"] = ids


def note_alias(seen: dict, key: Any, uuid: Any, place: tuple[str, int]) -> bool:
    """A fork's copy is known by its own ``uuid`` too (a fork of the fork names the line by it):
    map it in ``seen`` to ``place`` (where the line it stands for was met first) unless the uuid
    is the key itself, not a non-empty string, or already mapped.  True when it was added."""
    if uuid.__class__ is not str or not uuid or uuid == key or uuid in seen:
        return False
    seen[uuid] = place
    return True


def _ignored(a: dict, b: dict) -> frozenset:
    if "forkedFrom" not in a and "forkedFrom" not in b:
        return COPY_KEYS_IGNORED
    out = COPY_KEYS_IGNORED | FORK_KEYS_IGNORED
    if "forkedFrom" in a and "forkedFrom" in b:   # two forks' copies: either may carry its fork's time
        return out | {"timestamp"}
    copy, orig = (b, a) if "forkedFrom" in b else (a, b)
    tc, to = copy.get("timestamp"), orig.get("timestamp")
    if tc.__class__ is str and to.__class__ is str and len(tc) == len(to) and tc >= to:
        out = out | {"timestamp"}
    return out


def copy_or_conflict(first: tuple[str, int], path: str, line_no: int, raw: bytes) -> str | None:
    """``None`` when line ``line_no`` of ``path`` (its bytes ``raw``) is a copy of the line at
    ``first`` (``(file, 1-based line)``, where its key — :func:`line_key` — was met first): the
    same bytes, or the same JSON object but for :data:`COPY_KEYS_IGNORED` (and, where either
    line is a fork's copy, :data:`FORK_KEYS_IGNORED`).  Otherwise the quarantine's words for
    it: where the first is and which keys differ."""
    fpath, fline = first
    lines = _lines_of(fpath)
    orig = lines[fline - 1] if 0 < fline <= len(lines) else None
    if orig is not None and orig == raw:
        return None
    a = _obj(orig) if orig is not None else None
    b = _obj(raw)
    forked = (isinstance(a, dict) and "forkedFrom" in a) or (isinstance(b, dict) and "forkedFrom" in b)
    if isinstance(a, dict) and isinstance(b, dict):
        ignored = _ignored(a, b)
        keys = sorted(k for k in a.keys() | b.keys()
                      if k not in ignored and (k not in a or k not in b or a[k] != b[k]))
        if not keys:
            return None
        what = ", ".join(keys[:6]) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
        what += " differs" if len(keys) == 1 else " differ"
    else:
        what = "the line itself differs"
    where = f"line {fline}" if fpath == path else f"{fpath}:{fline}"
    same = "stands for the same line as" if forked else "repeats the uuid of"
    return f"{same} {where} with different content ({what}); the first is kept, this one set aside"


def conflict_row(first: tuple[str, int], path, line_no: int, start: int, raw: bytes, loader: str) -> dict | None:
    """``None`` for a resume copy (:func:`copy_or_conflict`), else the ``conflict`` QUARANTINE
    row of line ``line_no`` (at byte ``start``) of ``path``."""
    err = copy_or_conflict(first, str(path), line_no, raw)
    if err is None:
        return None
    from .._jsonl import Line, quarantine_row

    return quarantine_row(path, Line(line_no, start, raw, None, None, False), loader, err, kind=CONFLICT)
