"""Per-file parsing for :mod:`replaybook.sources.claude_code` (private).

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

from .._jsonl import Line, name_stem, parse_json, quarantine_row, read_source
from .._text import TEXT_LIMIT, deep_safe, int_or_none, str_or_none
from ..canonical import canonical_args

NCOLS = 30
# column positions (STEPS order)
(C_TID, C_CLIENT, C_VER, C_SESS, C_AGENT, C_SEQ, C_TS, C_KIND, C_LT, C_TOOL_RAW, C_SERVER,
 C_TOOL, C_CALL_ID, C_ARGS, C_ARGS_KEY, C_RESULT_TS, C_IS_ERROR, C_RESULT_TEXT, C_IMAGES,
 C_TEXT, C_TEXT_BYTES, C_MODEL, C_MSG_ID, C_REQ_ID, C_IN_TOK, C_OUT_TOK, C_UUID, C_PARENT,
 C_SOURCE, C_LINE_NO) = range(NCOLS)

NAN = float("nan")   # ``arguments`` of rows that are not tool calls (from_records: missing → NaN)

LOADER = "claude-code"
CLIENT = "claude-code"
_PENDING = "unterminated last line (still being written?)"


def _trunc(s: str | None) -> tuple[str | None, int | None]:
    """``truncate`` for strings known to be surrogate-free."""
    if s is None:
        return None, None
    n = len(s)
    size = n if s.isascii() else len(s.encode("utf-8"))
    if n > TEXT_LIMIT:
        return s[:TEXT_LIMIT] + f" …[+{n - TEXT_LIMIT} chars]", size
    return s, size


_CANON: dict[bytes, str] = {}


def _canonical(args: Any) -> str:
    """canonical_args, cached by the exact JSON spelling of ``args`` (same bytes: same value)."""
    try:
        key = orjson.dumps(args)
    except (TypeError, orjson.JSONEncodeError):
        return canonical_args(args)
    out = _CANON.get(key)
    if out is None:
        if len(_CANON) >= 65536:
            _CANON.clear()
        out = _CANON[key] = canonical_args(args)
    return out


def _blocks_text(content: Any) -> tuple[str | None, int]:
    if isinstance(content, str):
        return content, 0
    if not isinstance(content, list):
        return None, 0
    texts: list[str] = []
    images = 0
    for b in content:
        if isinstance(b, str):
            texts.append(b)
            continue
        if not isinstance(b, dict):
            continue
        bt = b.get("type")
        if bt == "text":
            t = b.get("text")
            if isinstance(t, str):
                texts.append(t)
        elif bt == "image":
            images += 1
        elif bt == "tool_reference":
            texts.append(f"[tool_reference: {b.get('tool_name')}]")
    return ("\n".join(texts) if texts else None), images


def _read_meta(path: Path, stem: str) -> dict | None:
    meta = path.with_name(stem + ".meta.json")
    try:
        if not meta.is_file():
            return None
        with open(meta, "rb") as fh:
            obj = orjson.loads(fh.read())
        return deep_safe(obj) if isinstance(obj, dict) else None
    except (OSError, orjson.JSONDecodeError, RecursionError):
        return None


def read_file(path: Path) -> tuple[bytes, dict]:
    """One transcript read once, with its ``inputs`` entry (lines are counted by parse_file)."""
    return read_source(path, LOADER, "Claude Code transcript", count_lines=False)


def parse_file(path: Path, seen: set, read: tuple[bytes, dict] | None = None) -> tuple[list, list, dict]:
    """Parse one transcript: ``(columns, quarantine rows, inputs entry)``.

    ``columns`` is a list of NCOLS lists (empty when the file has no rows); ``seq`` is 0-based
    within the file and ``ts`` holds the raw timestamp strings.  ``seen`` holds the uuids met so
    far in the load: lines with those uuids are skipped as resume copies, and the file's own
    uuids are added to it.  ``read`` is :func:`read_file`'s result when already read.
    """
    data, info = read if read is not None else read_file(path)
    stem = name_stem(path, (".jsonl.gz", ".jsonl", ".gz", ".json"))
    file_agent = stem[6:] if stem.startswith("agent-") and len(stem) > 6 else None
    if file_agent is not None:
        meta = _read_meta(path, stem)
        if meta is not None:
            info["agent_meta"] = meta
    spath = str(path)
    quarantine: list[dict] = []
    rows: list[list] = []
    add = rows.append
    groups: dict[tuple, list] = {}   # key → [row, texts]
    dups = 0
    loads = orjson.loads
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
                if pending:
                    quarantine.append(quarantine_row(path, Line(line_no, start, raw, None, _PENDING, True),
                                                     LOADER, _PENDING, kind="pending"))
                else:
                    quarantine.append(quarantine_row(path, Line(line_no, start, raw, None, err, False),
                                                     LOADER, err, kind="invalid"))
                continue
        if o.__class__ is not dict:
            raw = data[start:stop]
            quarantine.append(quarantine_row(path, Line(line_no, start, raw, o, None, False), LOADER,
                                             f"not a JSON object ({type(o).__name__})"))
            continue
        uuid = o.get("uuid")
        if uuid.__class__ is not str or uuid == "":
            uuid = uuid if isinstance(uuid, str) and uuid != "" else None
        if uuid is not None:
            if uuid in seen:
                dups += 1
                continue
            seen.add(uuid)

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
                        r[C_IS_ERROR] = b.get("is_error") is True
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
                grp = [base, []]
                groups[(mid, rid) if mid is not None else ("line", line_no)] = grp
            row = grp[0]
            if isinstance(usage, dict):
                row[C_IN_TOK] = int_or_none(usage.get("input_tokens"))
                row[C_OUT_TOK] = int_or_none(usage.get("output_tokens"))
            if row[C_MODEL] is None:
                row[C_MODEL] = str_or_none(mg("model"))
            content = mg("content")
            if isinstance(content, str):
                grp[1].append(content)
                continue
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
    for row, texts in groups.values():
        row[C_TEXT], row[C_TEXT_BYTES] = _trunc("\n".join(texts) if texts else None)
    for i, r in enumerate(rows):
        r[C_SEQ] = i
    info["lines"] = newlines + (0 if data.endswith(b"\n") or not data else 1)
    info["duplicates"] = dups
    cols = [list(c) for c in zip(*rows)] if rows else []
    return cols, quarantine, info


from .claude_code import split_mcp_name  # noqa: E402  (circular: claude_code imports us lazily)
