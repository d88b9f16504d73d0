"""Claude Code session transcripts → the ``steps`` frame.

Format origin
-------------
Claude Code (Anthropic's CLI agent) writes one JSON Lines file per session under
``~/.claude/projects/<project-dir>/<session-uuid>.jsonl``.  This loader reads the shapes written by
client versions 1.0.24 – 2.1.x:

* one JSON object per line with ``type`` (``user``, ``assistant``, ``summary``, ``system``,
  ``progress``, ``queue-operation``, ``file-history-snapshot``, ``attachment``, … — new types
  appear often), usually ``uuid``/``parentUuid``/``sessionId``/``timestamp``/``version``;
* one API response streamed over several ``assistant`` lines sharing ``message.id`` and
  ``requestId`` (one content block per line, ``usage`` repeated and growing);
* sub-agents in three layouts: inline ``isSidechain: true`` lines (1.0.x), flat
  ``<project>/agent-<id>.jsonl`` files (2.0.x) and ``<project>/<session>/subagents/agent-<id>.jsonl``
  with an ``agent-<id>.meta.json`` beside it (2.1.x);
* resumed sessions copying earlier lines (same ``uuid``) into a new session file.

The frame
---------
:func:`load_claude_code` returns a :class:`~replaybook.frames.LoadResult` whose ``frame`` has
exactly the :data:`~replaybook.frames.STEPS` columns and dtypes, in file order (files in the order
given, folders walked sorted).  One row per event:

==============  =====================================================================
kind            from
==============  =====================================================================
user_prompt     a ``user`` line whose content is a string or text/image blocks
model_request   all ``assistant`` lines of one ``message.id`` + ``requestId`` (merged)
tool_call       one ``tool_use`` block (paired with its result by ``tool_use_id``)
tool_result     one ``tool_result`` block
summary         a ``summary`` line
system          a ``system`` line (``line_type`` ``system/<subtype>``)
other           every other line type, including types newer than this loader
==============  =====================================================================

Timestamps (``ts``, ``result_ts``) are tz-aware UTC; NaT where a line has none.  Text is
truncated to :data:`~replaybook._text.TEXT_LIMIT` characters with the full UTF-8 size in
``text_bytes``; lone surrogates (``\\udcb2`` escapes, invalid UTF-8) become U+FFFD everywhere,
including inside ``arguments``, so the frame can be written to Parquet and HTML.

Decisions
---------
* **Dedup**: a line whose ``uuid`` was already seen in the same :func:`load_claude_code` call is a
  resume copy and is skipped (first occurrence wins, in load order).  The count of skipped copies
  is reported per file as ``inputs[i]["duplicates"]``.  Lines without a ``uuid`` are never deduped.
* **Merging**: assistant lines are grouped per file by ``(message.id, requestId)`` (``requestId``
  may be missing), consecutive or not.  The ``model_request`` row sits at the first line and keeps
  its ``uuid``/``ts``/``line_no``; ``usage`` comes from the LAST line of the group that has one
  (streamed copies repeat a growing count; they are never summed); text blocks are joined with
  ``"\\n"``.  Each ``tool_use`` block is its own ``tool_call`` row at its own line.
* **Pairing**: results are paired to calls by ``tool_use_id`` across every file of the load, in
  any order; the first result for an id wins.  The call row gets ``result_ts``, ``is_error``,
  ``result_text``, ``images``; the result row gets the call's ``tool_raw``/``server``/``tool``.
* **MCP names**: see :func:`split_mcp_name`.
* **Sub-agents**: ``agent_id`` is the line's ``agentId`` on sidechain lines or in ``agent-<id>``
  files, else the id from the file name, else ``"sidechain"`` for an inline sidechain line
  without ``agentId``; NA for the main agent.  ``transcript_id`` is the file stem.

Nothing is dropped silently: lines that are not JSON or not a JSON object go to the quarantine
with file, line number and byte offset; an unterminated unparsable last line is quarantined as
``kind="pending"``.  Files are opened read-only and never modified.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

import orjson

from .._jsonl import expand_paths, line_scores
from .._text import to_utc
from ..frames import QUARANTINE, STEPS, LoadResult
from .registry import Source, register

__all__ = ["load_claude_code", "split_mcp_name", "sniff", "LOADER", "CLIENT"]

#: Source name in the registry and ``quarantine.loader``.
LOADER = "claude-code"
#: Value of ``steps.client``.
CLIENT = "claude-code"

_BOOKKEEPING_TYPES = frozenset({
    "summary", "system", "progress", "queue-operation", "file-history-snapshot", "attachment",
    "last-prompt", "permission-mode", "mode", "atis-latch", "custom-title", "tag",
})


# --------------------------------------------------------------------------- MCP names

def split_mcp_name(name: Any) -> tuple[str | None, Any]:
    """Split a Claude Code tool name into ``(server, tool)``.

    * ``mcp__<server>__<tool>`` → ``(server, tool)``; the split is at the first ``__`` after the
      ``mcp__`` prefix, as Claude Code itself does, so a tool name may contain ``__``.
    * ``mcp__plugin_<plugin>_<server>__<tool>`` (plugin-provided servers, named
      ``plugin:<plugin>:<server>`` in Claude Code and normalised to ``plugin_<plugin>_<server>``)
      → ``(server, tool)``, keeping the plugin out of the server name.  The ``_`` between plugin and
      server cannot be told from an ``_`` inside either name, so: when the part after ``plugin_`` is
      ``X_X`` (plugin and server named alike — the usual case, e.g. ``plugin_github_github``),
      the server is ``X``; otherwise the split is at the FIRST ``_`` (plugin names are kebab-case
      by convention, server names may hold ``_``): ``plugin_claude-mem_mcp-search`` → server
      ``mcp-search``.  ``plugin_x`` with no further ``_`` is not a plugin name and is kept whole.
    * anything else (built-ins such as ``Read``, ``Bash``, ``Task``; malformed ``mcp__x``)
      → ``(None, name)``.

    >>> split_mcp_name("mcp__door__read_object")
    ('door', 'read_object')
    >>> split_mcp_name("mcp__plugin_github_github__create_issue")
    ('github', 'create_issue')
    >>> split_mcp_name("Bash")
    (None, 'Bash')
    """
    if not isinstance(name, str) or not name.startswith("mcp__"):
        return None, name
    server, sep, tool = name[5:].partition("__")
    if not sep or not server or not tool:
        return None, name
    if server.startswith("plugin_"):
        rest = server[7:]
        n = len(rest)
        half = n // 2
        if n % 2 == 1 and rest[half] == "_" and rest[:half] == rest[half + 1:] and half:
            server = rest[:half]
        else:
            _plugin, sep2, srv = rest.partition("_")
            if sep2 and _plugin and srv:
                server = srv
    return server, tool


# --------------------------------------------------------------------------- sniffing

_FRAG_KEYS = (b'"parentUuid"', b'"sessionId"', b'"isSidechain"', b'"userType"', b'"uuid"',
              b'"leafUuid"', b'"requestId"')
_FRAG_TYPE = re.compile(rb'"type"\s*:\s*"(user|assistant|summary|system|file-history-snapshot|queue-operation)"')


def _line_score(o: Any) -> float:
    """How Claude-Code-like one parsed line is: 1 strong, 0.5 bookkeeping, 0 foreign."""
    if not isinstance(o, dict):
        return 0.0
    t = o.get("type")
    if t in ("user", "assistant"):
        msg = o.get("message")
        ids = sum(k in o for k in ("sessionId", "uuid", "parentUuid"))
        if isinstance(msg, dict) and msg.get("role") in ("user", "assistant") and ids >= 2:
            return 1.0
        return 0.3 if ids else 0.0
    if t == "summary" and "leafUuid" in o:
        return 0.7
    if t == "file-history-snapshot" and "snapshot" in o:
        return 0.7
    if isinstance(t, str) and ("sessionId" in o or "uuid" in o) and "payload" not in o:
        return 0.5 if t in _BOOKKEEPING_TYPES else 0.3
    return 0.0


def sniff(sample: bytes) -> float:
    """Confidence in [0, 1] that ``sample`` (a file's first bytes) is a Claude Code transcript.

    Looks at up to 200 lines, not just the first (files often start with several bookkeeping
    lines).  A sample cut inside one huge line (an 855 KB image message) is judged by the keys
    visible in the fragment.  Returns ≥ 0.9 when user/assistant lines with ``message.role`` and
    ``sessionId``/``uuid``/``parentUuid`` are seen, about 0.6–0.7 for files of bookkeeping lines
    only (snapshots, summaries), and ≤ 0.1 for other JSON Lines.
    """
    scores = line_scores(sample, _line_score)
    tail = sample.rpartition(b"\n")[2]   # the last line when the sample does not end with one
    if tail.strip():
        try:
            scores.append(_line_score(orjson.loads(tail)))
        except orjson.JSONDecodeError:
            if not scores:  # a single line longer than the sample: judge the fragment
                keys = sum(k in tail for k in _FRAG_KEYS)
                m = _FRAG_TYPE.search(tail)
                return 0.8 if keys >= 3 and m else (0.4 if keys >= 2 else 0.0)
    if not scores:
        return 0.0
    mean = sum(scores) / len(scores)
    if max(scores) >= 1.0:
        return round(min(0.99, 0.6 + 0.4 * mean), 3)
    return round(min(0.7, mean), 3)


# --------------------------------------------------------------------------- helpers

def _expand(paths: str | Path | Iterable[str | Path]) -> list[Path]:
    """Transcript files named by ``paths``: files as given, folders walked (sorted) for ``*.jsonl``
    and ``*.jsonl.gz``; duplicates and ``*.meta.json`` side files are left out.

    Raises:
        InputError: a path does not exist.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    named = [p for p in map(Path, paths) if not (p.name.endswith(".meta.json") and p.is_file())]
    return expand_paths(named, accept=lambda q: q.name.endswith((".jsonl", ".jsonl.gz")))


# --------------------------------------------------------------------------- loading

def load_claude_code(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load Claude Code transcripts (JSONL, client versions 1.0.24 – 2.1.x) into the ``steps`` frame.

    Args:
        paths: transcript files and/or folders (e.g. ``~/.claude/projects/<project>/``); folders
            are walked recursively (sorted) for ``*.jsonl`` / ``*.jsonl.gz``, which picks up both
            sub-agent layouts.  Gzip is recognised by magic bytes.  ``*.meta.json`` side files are
            read as sub-agent metadata, never loaded as transcripts.

    Returns:
        :class:`~replaybook.frames.LoadResult`: ``frame`` with exactly the
        :data:`~replaybook.frames.STEPS` columns (file order; ``seq`` 0-based per transcript;
        ``ts``/``result_ts`` tz-aware UTC, NaT where absent), ``quarantine`` with one row per
        unusable line (``invalid``) or unterminated last line (``pending``), and ``inputs`` with
        one dict per file: ``path``, ``sha256``, ``bytes``, ``lines``, ``format``, ``duplicates``
        (resume copies skipped by uuid) and, for ``agent-<id>`` files with a readable
        ``.meta.json``, ``agent_meta``.

    Raises:
        InputError: a path does not exist, or a file cannot be read (permission, corrupt gzip).
    """
    import gc

    from . import _claude_fast as F

    files = _expand(paths)
    # the parse allocates millions of short-lived containers: the cyclic GC's passes over them
    # cost ~10 % and find nothing (parsed JSON has no cycles)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _load(files, F)
    finally:
        if gc_was_enabled:
            gc.enable()


def _load(files: list[Path], F) -> LoadResult:
    cols: list[list] = [[] for _ in range(F.NCOLS)]
    quarantine: list[dict] = []
    inputs: list[dict] = []
    seen: set[str] = set()
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


register(Source(
    name=LOADER,
    frame="steps",
    sniff=sniff,
    load=load_claude_code,
    doc="Claude Code session JSONL (client 1.0.24–2.1.x) from ~/.claude/projects/<project>/, "
        "with sub-agent files (agent-<id>.jsonl, <session>/subagents/agent-<id>.jsonl)",
    side_file=lambda p: p.name.endswith(".meta.json")
    and p.with_name(p.name[: -len(".meta.json")] + ".jsonl").is_file(),
))
