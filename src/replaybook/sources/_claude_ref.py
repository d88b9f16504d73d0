"""The reference (per-record) Claude Code loader, kept unchanged as the oracle for the fast path (private).

:func:`load_reference` is what :func:`replaybook.sources.claude_code.load_claude_code` returned
before the fast path; ``tests/sources/test_claude_fast_equiv.py`` asserts both give equal results.
Per-file parsing for :mod:`replaybook.sources.claude_code` (private).

One file is turned into STEPS columns (a list per column, in ``STEPS`` order) without building
row dicts.  The cross-file steps (``seq`` per transcript, tool_use_id pairing, the frame) are
done by the caller; :func:`parse_file` shares the load's set of seen uuids (dedup).

Semantics are those of the original row-dict loader, line for line:

* a line parsed by orjson needs no surrogate clean-up (orjson refuses lone surrogates and
  invalid UTF-8); a line parsed by the lenient fallback is already ``deep_safe``;
* every string in a parsed object is therefore surrogate-free, so ``safe_str`` is skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from .. import _json
from .._jsonl import (Line, lines_note, name_stem, note_unreadable_times, note_zoneless_times, parse_json, quarantine_row,
                      read_side_file, read_source, set_aside_line)
from .._text import TEXT_LIMIT, deep_safe, int_or_none, safe_str, str_or_none, to_utc
from ..frames import QUARANTINE, STEPS, LoadResult
from ..canonical import canonical_args_cached
from ._mcp_blocks import other_block_text
from ._resume import conflict_row, fork_sessions, line_key, note_alias

NCOLS = 30
# column positions (STEPS order)
(C_TID, C_CLIENT, C_VER, C_SESS, C_AGENT, C_SEQ, C_TS, C_KIND, C_LT, C_TOOL_RAW, C_SERVER,
 C_TOOL, C_CALL_ID, C_ARGS, C_ARGS_KEY, C_RESULT_TS, C_IS_ERROR, C_RESULT_TEXT, C_IMAGES,
 C_TEXT, C_TEXT_BYTES, C_MODEL, C_MSG_ID, C_REQ_ID, C_IN_TOK, C_OUT_TOK, C_UUID, C_PARENT,
 C_SOURCE, C_LINE_NO) = range(NCOLS)

NAN = float("nan")   # ``arguments`` of rows that are not tool calls (from_records: missing → NaN)

LOADER = "claude-code"
CLIENT = "claude-code"


def _trunc(s: str | None) -> tuple[str | None, int | None]:
    """``truncate`` for strings known to be surrogate-free."""
    if s is None:
        return None, None
    n = len(s)
    size = n if s.isascii() else len(s.encode("utf-8"))
    if n > TEXT_LIMIT:
        return s[:TEXT_LIMIT] + f" …[+{n - TEXT_LIMIT} chars]", size
    return s, size


_canonical = canonical_args_cached


def _name(v: Any) -> str | None:
    """``v`` when it is a non-empty string (a title, media type, URL, id), else None."""
    return v if isinstance(v, str) and v else None


def _plain_block(b: Any, texts: list) -> int | None:
    """Append the text of one content item — a string or a ``text`` block — to ``texts`` and
    return 0, or return 1 for an ``image`` block; ``None`` for any other item (not read here)."""
    if isinstance(b, str):
        texts.append(b)
        return 0
    bt = b.get("type") if isinstance(b, dict) else None
    if bt == "text":
        t = b.get("text")
        if isinstance(t, str):
            texts.append(t)
        return 0
    return 1 if bt == "image" else None


def _plain_blocks(content: Any, texts: list) -> int:
    """Append the text of ``content`` — a string, or a list of strings and ``text`` / ``image``
    blocks (a ``content`` document source, a search result's content) — to ``texts``; return
    the number of image blocks.  Other items are not read (the API allows none there)."""
    if isinstance(content, str):
        texts.append(content)
        return 0
    if not isinstance(content, list):
        return 0
    return sum(_plain_block(b, texts) or 0 for b in content)


def document_text(source: Any, title: Any, texts: list) -> int:
    """Append what the model received of a ``document`` block to ``texts``; return the number
    of images in it.

    Anthropic Messages API, ``DocumentBlockParam`` (in a ``tool_result``'s content, or a user
    message's): ``source`` is ``{"type": "text", "media_type": "text/plain", "data": …}``,
    ``{"type": "content", "content": str | [text / image blocks]}``, ``{"type": "base64",
    "media_type": "application/pdf", "data": …}``, ``{"type": "url", "url": …}`` or (Files API)
    ``{"type": "file", "file_id": …}``; ``title`` is optional.  Text and content sources give
    their text, after a ``[document: <title>]`` line when the block has a title; a PDF or file
    — bytes, not text — gives one placeholder line naming what it was:
    ``[document: <title>, application/pdf]``, ``[document: https://…]``, ``[document: file_…]``
    (``[document]`` when the source names nothing)."""
    title = _name(title)
    st = source.get("type") if isinstance(source, dict) else None
    if st == "text" and isinstance(source.get("data"), str):
        if title:
            texts.append(f"[document: {title}]")
        texts.append(source["data"])
        return 0
    if st == "content" and isinstance(source.get("content"), (str, list)):
        if title:
            texts.append(f"[document: {title}]")
        return _plain_blocks(source["content"], texts)
    what = None
    if isinstance(source, dict):
        what = _name(source.get("url") if st == "url" else source.get("file_id") if st == "file"
                     else source.get("media_type"))
    parts = [p for p in (title, what) if p]
    texts.append(f"[document: {', '.join(parts)}]" if parts else "[document]")
    return 0


def search_result_text(title: Any, source: Any, content: Any, texts: list) -> int:
    """Append what the model received of a ``search_result`` block to ``texts``; return the
    number of images in it.

    Anthropic Messages API, ``SearchResultBlockParam``: ``title`` and ``source`` (a URL or
    other identifier) strings, ``content`` a list of ``text`` blocks.  Gives a
    ``[search_result: <title>, <source>]`` line, then the text of its blocks."""
    parts = [p for p in (_name(title), _name(source)) if p]
    texts.append(f"[search_result: {', '.join(parts)}]" if parts else "[search_result]")
    return _plain_blocks(content, texts)


#: the content item types read by name; any other typed item is kept as a ``[type]`` line
KNOWN_BLOCKS = frozenset({"text", "image", "tool_reference", "document", "search_result"})


def content_items(content: Any) -> Any:
    """A ``tool_result``'s (or message's) ``content`` as the readers take it: a lone content
    item (an object, where the API gives a list) as a list of one; a number or boolean as its
    JSON text; anything else unchanged."""
    if isinstance(content, dict):
        return [content]
    if isinstance(content, (int, float)):
        return _json.dumps(content).decode()
    return content


def _blocks_text(content: Any) -> tuple[str | None, int]:
    content = content_items(content)
    if isinstance(content, str):
        return content, 0
    if not isinstance(content, list):
        return None, 0
    texts: list[str] = []
    images = 0
    for b in content:
        plain = _plain_block(b, texts)
        if plain is not None:
            images += plain
            continue
        if not isinstance(b, dict):
            continue
        bt = b.get("type")
        if bt == "tool_reference":
            texts.append(f"[tool_reference: {b.get('tool_name')}]")
        elif bt == "document":
            images += document_text(b.get("source"), b.get("title"), texts)
        elif bt == "search_result":
            images += search_result_text(b.get("title"), b.get("source"), b.get("content"), texts)
        else:
            other_block_text(b, texts)
    return ("\n".join(texts) if texts else None), images


def is_error_of(v: Any) -> bool | None:
    """A ``tool_result``'s ``is_error``: a JSON boolean, or the strings ``"true"`` / ``"false"``
    (any case, spaces around: as some writers give it) read as that boolean; absent or ``null``
    is False (the API leaves it out when false).  Anything else (``"yes"``, ``1``, an object) is
    ``None``: not known, which the caller notes (:func:`note_odd_values`)."""
    if v is True:
        return True
    if v is False or v is None:
        return False
    if isinstance(v, str):
        w = v.strip().lower()
        if w == "true":
            return True
        if w == "false":
            return False
    return None


def same_input(a: Any, b: Any) -> bool:
    """Whether two ``tool_use`` inputs are the same arguments (their canonical keys are equal; a
    value no key can be made of compares as itself).  A block repeating a tool-use id within one
    response with the same input is that call written again; with other input it is a call of
    its own (an edited transcript), kept as one and named by ``load_claude_code``'s note on
    reused ids."""
    try:
        return _canonical(a) == _canonical(b)
    except (ValueError, TypeError):
        return a == b


def note_repeated_calls(info: dict, repeated: int) -> None:
    """Say in a transcript's ``inputs`` notes how many ``tool_use`` blocks repeated a tool-use id
    already met in the same response (same ``message.id`` and ``requestId``: the lines of one
    streamed response) and were counted once — the same call written again, not a second call."""
    if repeated:
        info.setdefault("notes", []).append(
            f"{repeated:,} tool_use block{'' if repeated == 1 else 's'} repeated a tool-use id already in the same "
            "response (same message id and request id): the same call written again, counted once")


def note_odd_values(info: dict, bad_ts: list[tuple[int, Any]], bad_err: list[tuple[int, Any]],
                    bad_id: list[tuple[int, Any]] = ()) -> None:
    """Say in a transcript's ``inputs`` notes which lines were read with a value that could not
    be: a ``timestamp`` that is empty or not text (a number, ``null``) — the line's steps are
    kept with the time unknown (NaT) —, a ``tool_result`` whose ``is_error`` is neither true
    nor false — kept with ``is_error`` NA — and a ``tool_use`` ``id`` or ``tool_result``
    ``tool_use_id`` that is not text (a number: Claude Code writes ``toolu_…`` strings) — kept
    with ``call_id`` NA, so the call and its result are not paired.  ``bad_ts``/``bad_err``/
    ``bad_id``: ``(line, value)`` in line order.  A timestamp text that is no date-time is
    noted after the load (:func:`note_unreadable_timestamps`)."""
    if bad_ts:
        info.setdefault("notes", []).append(
            lines_note(bad_ts, "line", "with a timestamp that is empty or not text, kept with the time unknown"))
    if bad_err:
        info.setdefault("notes", []).append(
            lines_note(bad_err, "tool result", "whose is_error is neither true nor false, kept with is_error "
                                                "unknown (NA)"))
    if bad_id:
        info.setdefault("notes", []).append(
            lines_note(bad_id, "line", "with a tool-use id that is not text (a tool_use id or a tool_result's "
                                        "tool_use_id), kept with no call id, so call and result are not paired"))


def note_unreadable_timestamps(raw_ts: Any, parsed: Any, files: Any, lines: Any, inputs: list[dict]) -> None:
    """After the load: the lines whose ``timestamp`` text is no date-time (``"not a time"``,
    month 13), each once however many steps it gave, in each file's ``inputs`` notes
    (:func:`~replaybook._jsonl.note_unreadable_times`); their steps are kept with ``ts`` NaT.
    The lines whose timestamp has no time zone (read as UTC) get a note of their own
    (:func:`~replaybook._jsonl.note_zoneless_times`).
    ``raw_ts``: each row's timestamp as written (str or None), ``parsed`` its parsed time,
    ``files``/``lines`` where the row was read."""
    import numpy as np
    import pandas as pd

    note_zoneless_times(raw_ts, parsed, files, lines, inputs, writer="Claude Code")
    nat = np.flatnonzero(pd.isna(parsed))
    if not len(nat):
        return
    # (the columns' values are taken for the NaT rows only: a load has hundreds of thousands)
    files = np.asarray(files.iloc[nat] if isinstance(files, pd.Series) else np.asarray(files)[nat], dtype=object)
    lines = np.asarray(lines.iloc[nat] if isinstance(lines, pd.Series) else np.asarray(lines)[nat], dtype=object)
    seen: set = set()
    texts, times, where, nums = [], [], [], []
    for j, i in enumerate(nat.tolist()):
        t = raw_ts[i]
        if t.__class__ is not str or not t:
            continue
        key = (files[j], lines[j])
        if key in seen:
            continue
        seen.add(key)
        texts.append(t)
        times.append(pd.NaT)
        where.append(files[j])
        nums.append(lines[j])
    if texts:
        note_unreadable_times(texts, times, where, nums, inputs, what="line")


#: the ``format`` of a sub-agent's ``agent-<id>.meta.json`` in ``inputs``
META_FORMAT = "claude-code sub-agent meta"


def is_record(o: dict) -> bool:
    """Is ``o`` a transcript line's object (a ``type`` and a ``uuid`` or ``sessionId``), not an
    object nested in one?  Decides where a record glued to a torn one begins
    (:func:`replaybook._jsonl.split_torn`)."""
    return o.get("type").__class__ is str and ("uuid" in o or "sessionId" in o)


def read_meta(path: Path, stem: str, info: dict) -> None:
    """Read ``agent-<id>.meta.json`` beside ``path`` when there is one: its object goes to
    ``info["agent_meta"]``, the file itself (evidence too: its SHA-256) to
    ``info["side_files"]`` (:func:`~replaybook._jsonl.read_side_file`), with a note when it
    holds no JSON object."""
    meta = path.with_name(stem + ".meta.json")
    try:
        if not meta.is_file():
            return
    except OSError:
        return
    data, entry = read_side_file(meta, path, META_FORMAT)
    info.setdefault("side_files", []).append(entry)
    if data is None:
        return
    try:
        obj = orjson.loads(data)
    except (orjson.JSONDecodeError, RecursionError):
        obj = None
    if isinstance(obj, dict):
        info["agent_meta"] = deep_safe(obj)
    else:
        entry["note"] = "not a JSON object: the sub-agent's metadata was not read from it"


#: the ``format`` of a tool result Claude Code persisted beside the transcript (:func:`read_side_files`)
PERSISTED_FORMAT = "claude-code persisted tool result"


def read_side_files(path: Path, stem: str, file_agent: str | None, info: dict) -> None:
    """The files a transcript has beside it, listed in ``info["side_files"]`` (evidence: each
    with its SHA-256, :func:`~replaybook._jsonl.read_side_file`): a sub-agent's
    ``agent-<id>.meta.json`` (:func:`read_meta`), and a session's persisted tool results.

    From client 2.1.2 on, Claude Code writes a tool result over its size limit (100 K characters;
    50 K from 2.1.51) to ``<session>/tool-results/<tool_use_id>.txt`` beside the session's file
    and hands the model a ``<persisted-output>`` block instead: the size, the file's path and a
    2 KB preview.  The transcript's result — the steps' ``result_text`` — is that block, which
    is what the model saw; the whole output is in the file, listed here (its ``format``
    :data:`PERSISTED_FORMAT`, sorted by name) for the investigator to open and check.  A folder
    that cannot be listed is said in ``info["notes"]``."""
    if file_agent is not None:
        read_meta(path, stem, info)
        return
    folder = path.parent / stem / "tool-results"
    try:
        if not folder.is_dir():
            return
        found = sorted(f for f in folder.iterdir() if f.is_file() and not f.is_symlink())
    except OSError as exc:
        info.setdefault("notes", []).append(f"{folder}: its persisted tool results cannot be listed "
                                            f"({exc.strerror or exc})")
        return
    side = info.setdefault("side_files", [])
    for f in found:
        side.append(read_side_file(f, path, PERSISTED_FORMAT)[1])


def read_file(path: Path) -> tuple[bytes, dict]:
    """One transcript read once, with its ``inputs`` entry (lines are counted by parse_file)."""
    return read_source(path, LOADER, "Claude Code transcript", count_lines=False)


def parse_file(path: Path, seen: dict, read: tuple[bytes, dict] | None = None) -> tuple[list, list, dict]:
    """Parse one transcript: ``(columns, quarantine rows, inputs entry)``.

    ``columns`` is a list of NCOLS lists (empty when the file has no rows); ``seq`` is 0-based
    within the file and ``ts`` holds the raw timestamp strings.  ``seen`` maps the uuids met so
    far in the load to where (``(file, line)``) — the key of a fork's copy is the uuid of the line
    it copies (:func:`._resume.line_key`): a line with one of those keys is skipped as a
    resume or fork copy, or set aside as a ``conflict`` when its content differs
    (:func:`._resume.copy_or_conflict`); the file's own uuids are added to it.  ``read`` is
    :func:`read_file`'s result when already read.
    """
    data, info = read if read is not None else read_file(path)
    stem = name_stem(path, (".jsonl.gz", ".jsonl", ".gz", ".json"))
    file_agent = stem[6:] if stem.startswith("agent-") and len(stem) > 6 else None
    read_side_files(path, stem, file_agent, info)
    spath = str(path)
    quarantine: list[dict] = []
    rows: list[list] = []
    add = rows.append
    groups: dict[tuple, list] = {}   # key → [row, texts, tool-use ids]
    dups = 0
    forks: list = []   # the forkedFrom values of the file's lines (fork_sessions)
    repeated = 0  # tool_use blocks repeating an id within one response (note_repeated_calls)
    bad_ts: list[tuple[int, Any]] = []    # (line, timestamp) empty or not text
    bad_err: list[tuple[int, Any]] = []   # (line, is_error) neither true nor false
    bad_id: list[tuple[int, Any]] = []    # (line, tool-use id) that is not text
    loads = _json.loads
    JDE = orjson.JSONDecodeError

    # lines are handed to orjson as memoryview slices (no copy of the file); bytes are made only
    # for lines that need them (quarantine)
    mv = memoryview(data)
    find = data.find
    n = len(data)
    pos = 0
    line_no = 0
    newlines = 0
    while pos < n:
        end = find(b"\n", pos)
        if end < 0:
            pending = True
            end = n
        else:
            pending = False
            newlines += 1
        line_no += 1
        start = pos
        pos = end + 1
        stop = end - 1 if end > start and data[end - 1] == 13 else end   # drop a trailing \r
        try:
            o = loads(mv[start:stop])
        except JDE:
            raw = data[start:stop]
            if not raw.strip():
                continue
            o, err = parse_json(raw)
            if err is not None:
                torn = set_aside_line(path, line_no, start, raw, err, pending, LOADER, quarantine, is_record)
                if torn is None:
                    continue
                start += torn[0]   # a record glued to the torn start of another: read it
                o = torn[1]
        if o.__class__ is not dict:
            raw = data[start:stop]
            quarantine.append(quarantine_row(path, Line(line_no, start, raw, o, None, False), LOADER,
                                             f"not a JSON object ({type(o).__name__})"))
            continue
        uuid = o.get("uuid")
        if uuid.__class__ is not str or uuid == "":
            uuid = uuid if isinstance(uuid, str) and uuid != "" else None
        if o.get("forkedFrom") is not None:
            forks.append(o["forkedFrom"])
        key = line_key(uuid, o.get("forkedFrom"))
        forked = o.get("forkedFrom") is not None
        if key is not None:
            first = seen.get(key)
            if first is not None:  # a resume or fork copy, or a conflict set aside
                if forked:
                    note_alias(seen, key, uuid, first)
                row = conflict_row(first, path, line_no, start, data[start:stop], LOADER)
                if row is None:
                    dups += 1
                else:
                    quarantine.append(row)
                continue
            seen[key] = (spath, line_no)
            if forked:
                note_alias(seen, key, uuid, (spath, line_no))

        # ---- one line (legacy _Load._line)
        g = o.get
        t = g("type")
        if g("isSidechain") is True or file_agent is not None:
            agent = str_or_none(g("agentId")) or file_agent or "sidechain"
        else:
            agent = None
        ts = g("timestamp")
        if ts.__class__ is not str:
            ts = ts if isinstance(ts, str) else None
            if ts is None and "timestamp" in o:
                bad_ts.append((line_no, g("timestamp")))
        if ts == "":
            bad_ts.append((line_no, ts))
        # parsed JSON strings are exact ``str``: ``v if v.__class__ is str and v`` is str_or_none
        ver = g("version")
        sess = g("sessionId")
        par = g("parentUuid")
        base = [stem, CLIENT, ver if ver.__class__ is str and ver else None,
                sess if sess.__class__ is str and sess else None, agent, 0, ts, None, None,
                None, None, None, None, NAN, None, None, None, None, None, None, None, None, None,
                None, None, None, uuid, par if par.__class__ is str and par else None, spath,
                line_no]
        msg = g("message")
        if t == "user" and isinstance(msg, dict):
            content = msg.get("content")
            if isinstance(content, list):
                other: list = []
                n_results = 0
                for b in content:
                    if isinstance(b, dict) and b.get("type") == "tool_result":
                        n_results += 1
                        text, images = _blocks_text(b.get("content"))
                        text, nb = _trunc(text)
                        r = base.copy()
                        r[C_KIND] = "tool_result"
                        r[C_LT] = "user"
                        r[C_CALL_ID] = str_or_none(b.get("tool_use_id"))
                        if b.get("tool_use_id") is not None and not isinstance(b.get("tool_use_id"), str):
                            bad_id.append((line_no, b.get("tool_use_id")))
                        r[C_IS_ERROR] = is_error_of(b.get("is_error"))
                        if r[C_IS_ERROR] is None:
                            bad_err.append((line_no, b.get("is_error")))
                        r[C_TEXT] = text
                        r[C_TEXT_BYTES] = nb
                        r[C_IMAGES] = images
                        add(r)
                    else:
                        other.append(b)
                if n_results and not other:
                    continue
                content = other
            text, images = _blocks_text(content)
            text, nb = _trunc(text)
            base[C_KIND] = "user_prompt"
            base[C_LT] = "user"
            base[C_TEXT] = text
            base[C_TEXT_BYTES] = nb
            base[C_IMAGES] = images
            add(base)
        elif t == "assistant" and isinstance(msg, dict):
            mg = msg.get
            mid = str_or_none(mg("id"))
            rid = str_or_none(g("requestId"))
            usage = mg("usage")
            grp = groups.get((mid, rid)) if mid is not None else None
            if grp is None:
                base[C_KIND] = "model_request"
                base[C_LT] = "assistant"
                base[C_MODEL] = str_or_none(mg("model"))
                base[C_MSG_ID] = mid
                base[C_REQ_ID] = rid
                add(base)
                grp = [base, [], {}]
                groups[(mid, rid) if mid is not None else ("line", line_no)] = grp
            row = grp[0]
            if isinstance(usage, dict):
                # the final count: the copy with the most output tokens (copies repeat a growing
                # count, in whatever order the file holds them), of equal counts the later one
                out = int_or_none(usage.get("output_tokens"))
                if row[C_OUT_TOK] is None or (out is not None and out >= row[C_OUT_TOK]):
                    row[C_IN_TOK] = int_or_none(usage.get("input_tokens"))
                    row[C_OUT_TOK] = out
            if row[C_MODEL] is None:
                row[C_MODEL] = str_or_none(mg("model"))
            content = mg("content")
            if isinstance(content, str):
                grp[1].append(content)
                continue
            if isinstance(content, dict):  # a lone block where the API gives a list
                content = [content]
            if not isinstance(content, list):
                continue
            for b in content:
                if not isinstance(b, dict):
                    continue
                bt = b.get("type")
                if bt == "text":
                    if isinstance(b.get("text"), str):
                        grp[1].append(b["text"])
                elif bt == "tool_use":
                    bid = b.get("id")
                    if isinstance(bid, str) and bid:
                        met = grp[2].setdefault(bid, [])  # (the inputs met under this id)
                        if any(same_input(x, b.get("input")) for x in met):
                            repeated += 1  # the same block again within one response: one call
                            continue
                        met.append(b.get("input"))
                    name = b.get("name")
                    name = name if isinstance(name, str) else None
                    server, tool = split_mcp_name(name)
                    args = b.get("input")
                    r = base.copy()
                    r[C_KIND] = "tool_call"
                    r[C_LT] = "assistant"
                    r[C_TOOL_RAW] = name
                    r[C_SERVER] = server
                    r[C_TOOL] = tool
                    r[C_CALL_ID] = str_or_none(b.get("id"))
                    if b.get("id") is not None and not isinstance(b.get("id"), str):
                        bad_id.append((line_no, b.get("id")))
                    r[C_ARGS] = args
                    r[C_ARGS_KEY] = _canonical(args)
                    r[C_MODEL] = None
                    r[C_TEXT] = None
                    r[C_TEXT_BYTES] = None
                    r[C_IN_TOK] = None
                    r[C_OUT_TOK] = None
                    r[C_MSG_ID] = mid
                    r[C_REQ_ID] = rid
                    add(r)
        elif t == "summary":
            base[C_KIND] = "summary"
            base[C_LT] = "summary"
            base[C_TEXT], base[C_TEXT_BYTES] = _trunc(str_or_none(g("summary")))
            add(base)
        else:
            lt = t if isinstance(t, str) else (None if t is None else str(t))
            sub = g("subtype")
            if lt is not None and isinstance(sub, str) and sub:
                lt = f"{lt}/{sub}"
            base[C_LT] = lt
            if t == "system":
                base[C_KIND] = "system"
                base[C_TEXT], base[C_TEXT_BYTES] = _trunc(str_or_none(g("content")))
            else:
                base[C_KIND] = "other"
            add(base)
    for row, texts, _ in groups.values():
        row[C_TEXT], row[C_TEXT_BYTES] = _trunc("\n".join(texts) if texts else None)
    for i, r in enumerate(rows):
        r[C_SEQ] = i
    info["lines"] = newlines + (0 if data.endswith(b"\n") or not data else 1)
    info["duplicates"] = dups
    if forks:
        fork_sessions(info, forks)
    note_odd_values(info, bad_ts, bad_err, bad_id)
    note_repeated_calls(info, repeated)
    cols = [list(c) for c in zip(*rows)] if rows else []
    return cols, quarantine, info


# --------------------------------------------------------------------------- whole load (reference)

def load_reference(paths) -> LoadResult:
    """The reference loader: same arguments, result and errors as ``load_claude_code``."""
    import gc

    from .claude_code import _expand   # (which files: the loader's own rule, side files left out)

    files = _expand(paths)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _load(files, _F)
    finally:
        if gc_was_enabled:
            gc.enable()


def _load(files: list[Path], F) -> LoadResult:
    cols: list[list] = [[] for _ in range(F.NCOLS)]
    quarantine: list[dict] = []
    inputs: list[dict] = []
    seen: dict[str, tuple[str, int]] = {}
    seq: dict[str, int] = {}
    per_file: list[tuple[str, str, int]] = []   # (transcript_id, source_file, rows) per file
    _PER_FILE = (F.C_TID, F.C_CLIENT, F.C_SOURCE)   # constant within a file: built in _build
    for path in files:
        fcols, fq, info = F.parse_file(path, seen)
        quarantine.extend(fq)
        inputs.append(info)
        if not fcols:
            continue
        tid = fcols[F.C_TID][0]
        nf = len(fcols[F.C_TID])
        off = seq.get(tid, 0)
        if off:
            fcols[F.C_SEQ] = [i + off for i in fcols[F.C_SEQ]]
        seq[tid] = off + nf
        per_file.append((tid, fcols[F.C_SOURCE][0], nf))
        for k, (c, fc) in enumerate(zip(cols, fcols)):
            if k not in _PER_FILE:
                c.extend(fc)
    if not cols[F.C_KIND]:
        frame = STEPS.build([])
        return LoadResult(frame=frame, quarantine=QUARANTINE.build(quarantine), inputs=inputs)
    ts = cols[F.C_TS]
    result_ts = _pair(cols, F)
    frame = _build(cols, F, ts, result_ts, per_file)
    note_unreadable_timestamps(ts, frame["ts"], frame["source_file"].tolist(), frame["line_no"].tolist(), inputs)
    return LoadResult(frame=frame, quarantine=QUARANTINE.build(quarantine), inputs=inputs)


def _pair(cols: list[list], F) -> list[int]:
    """Pair results to calls by call_id across the load (first result wins); fills the columns in
    place and returns, parallel to the rows, the row whose ``ts`` is the row's result_ts (-1:
    none)."""
    kind, call_id = cols[F.C_KIND], cols[F.C_CALL_ID]
    n = len(kind)
    result_ts: list[int] = [-1] * n
    calls: dict[str, list[int]] = {}
    results: list[int] = []
    for i in range(n):
        k = kind[i]
        if k == "tool_call":
            cid = call_id[i]
            if cid is not None:
                calls.setdefault(cid, []).append(i)
        elif k == "tool_result":
            results.append(i)
    if not calls:
        return result_ts
    tool_raw, server, tool = cols[F.C_TOOL_RAW], cols[F.C_SERVER], cols[F.C_TOOL]
    is_error, result_text, images, text = (cols[F.C_IS_ERROR], cols[F.C_RESULT_TEXT],
                                           cols[F.C_IMAGES], cols[F.C_TEXT])
    done: set[str] = set()
    for i in results:
        cid = call_id[i]
        idx = calls.get(cid) if cid is not None else None
        if not idx:
            continue
        j0 = idx[0]
        tool_raw[i], server[i], tool[i] = tool_raw[j0], server[j0], tool[j0]
        if cid in done:
            continue
        done.add(cid)
        for j in idx:
            result_ts[j] = i
            is_error[j] = is_error[i]
            result_text[j] = text[i]
            images[j] = images[i]
    return result_ts


_EXACT = 1 << 53


def _build(cols: list[list], F, ts: list, result_ts: list[int],
           per_file: list[tuple[str, str, int]]) -> "pd.DataFrame":
    """The STEPS frame of the columns, equal to STEPS.build(row dicts) of the row-dict loader
    (with ``ts`` parsed by ``to_utc``; ``result_ts`` is taken from the parsed ``ts`` of the rows
    :func:`_pair` names: to_utc parses element by element, so this equals parsing the strings)."""
    import numpy as np
    import pandas as pd

    n = len(cols[F.C_KIND])
    kind = cols[F.C_KIND]
    # the columns constant within a file are expanded from one value per file
    file_of_row = np.repeat(np.arange(len(per_file), dtype=np.intp), [k for _, _, k in per_file])
    cols[F.C_TID] = ([t for t, _, _ in per_file], file_of_row)
    cols[F.C_SOURCE] = ([p for _, p, _ in per_file], file_of_row)
    cols[F.C_CLIENT] = ([F.CLIENT], np.zeros(n, dtype=np.intp))
    exact = True
    args = cols[F.C_ARGS]
    if "tool_call" not in kind:
        args = [None] * n   # no row had the key: from_records leaves the column out → None
    elif any(a.__class__ is not dict for a, k in zip(args, kind) if k == "tool_call"):
        exact = False   # from_records infers this column's dtype from its values
    for c in (F.C_IN_TOK, F.C_OUT_TOK):  # the other Int64 columns are small counts
        vals = [v for v in cols[c] if v is not None]
        if vals and (max(vals) > _EXACT or min(vals) < -_EXACT):
            exact = False   # from_records goes through float64 (missing keys → NaN)
    if not exact:
        for c in (F.C_TID, F.C_SOURCE, F.C_CLIENT):
            vals, idx = cols[c]
            cols[c] = [vals[i] for i in idx.tolist()]
        return _build_records(cols, F, ts, result_ts)
    out: dict[str, Any] = {}
    sdt = pd.StringDtype("python")
    ts_arr = to_utc(ts).array
    for c, col in zip(STEPS.columns, cols):
        name = c.name
        if name == "ts":
            out[name] = ts_arr
        elif name == "result_ts":
            out[name] = ts_arr.take(np.asarray(result_ts, dtype=np.intp), allow_fill=True)
        elif name == "arguments":
            arr = np.empty(n, dtype=object)
            arr[:] = args
            out[name] = arr
        elif c.dtype == "string":
            if isinstance(col, tuple):   # (values, index of each row's value)
                out[name] = pd.array(col[0], dtype=sdt).take(col[1])
            else:
                out[name] = pd.array(col, dtype=sdt)
        elif c.dtype == "Int64":   # ints (|v| <= 2**53 here) and None
            arr = np.array(col, dtype=object)
            mask = pd.isna(arr)
            if mask.any():
                arr[mask] = 0
            out[name] = pd.arrays.IntegerArray(arr.astype(np.int64), mask)
        elif c.dtype == "boolean":
            out[name] = pd.array(col, dtype=c.dtype)
        else:  # pragma: no cover - STEPS has no other dtypes
            raise AssertionError(c.dtype)
    return pd.DataFrame(out, index=pd.RangeIndex(n))


def _build_records(cols: list[list], F, ts: list, result_ts: list[int]) -> "pd.DataFrame":
    """Slow exact path for odd values: arguments that are not objects, token counts beyond 2**53."""
    import pandas as pd

    data: dict[str, Any] = {}
    kind = cols[F.C_KIND]
    for name, col in zip(STEPS.names, cols):
        if name in ("ts", "result_ts"):
            continue
        if name == "arguments":
            if "tool_call" not in kind:
                col = [None] * len(col)
            else:
                col = pd.DataFrame.from_records(
                    [{"a": a} if k == "tool_call" else {} for a, k in zip(col, kind)])["a"]
        elif name in ("input_tokens", "output_tokens"):
            col = pd.DataFrame.from_records([{"a": v} for v in col])["a"]
        data[name] = col
    frame = STEPS.build(data)
    frame["ts"] = to_utc(ts).array
    frame["result_ts"] = to_utc([ts[i] if i >= 0 else None for i in result_ts]).array
    return frame




import sys as _sys  # noqa: E402
_F = _sys.modules[__name__]
from .claude_code import split_mcp_name  # noqa: E402  (circular: claude_code imports us lazily)
