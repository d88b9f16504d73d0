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

from .._jsonl import expand_paths, iter_objects, line_scores, name_stem, read_source
from .._text import deep_safe, int_or_none, needs_safe, str_or_none, to_utc, truncate
from ..canonical import canonical_args
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

def _blocks_text(content: Any) -> tuple[str | None, int]:
    """Text of a content value (string or list of blocks) and its number of image blocks.

    Text blocks are joined with ``"\\n"``; ``tool_reference`` blocks are written as
    ``[tool_reference: <name>]``; other non-text blocks are not text.
    """
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


def _stem(path: Path) -> str:
    return name_stem(path, (".jsonl.gz", ".jsonl", ".gz", ".json"))


def _read_meta(path: Path, stem: str) -> dict | None:
    """The 2.1.x ``agent-<id>.meta.json`` beside a sub-agent file, or None (never raises)."""
    meta = path.with_name(stem + ".meta.json")
    try:
        if not meta.is_file():
            return None
        with open(meta, "rb") as fh:
            obj = orjson.loads(fh.read())
        return deep_safe(obj) if isinstance(obj, dict) else None
    except (OSError, orjson.JSONDecodeError, RecursionError):
        return None


# --------------------------------------------------------------------------- loading

class _Load:
    """Mutable state of one load call: rows, quarantine, dedup and pairing tables."""

    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.ts: list[str | None] = []          # parallel to rows: raw timestamp strings
        self.quarantine: list[dict] = []
        self.inputs: list[dict] = []
        self.seen_uuids: set[str] = set()
        self.calls: dict[str, list[int]] = {}    # call_id → indexes of tool_call rows
        self.results: list[int] = []             # indexes of tool_result rows
        self.seq: dict[str, int] = {}            # transcript_id → next seq

    def add(self, row: dict, ts: str | None) -> dict:
        tid = row["transcript_id"]
        n = self.seq.get(tid, 0)
        row["seq"] = n
        self.seq[tid] = n + 1
        self.rows.append(row)
        self.ts.append(ts)
        return row

    def load_file(self, path: Path) -> None:
        data, info = read_source(path, LOADER, "Claude Code transcript")
        stem = _stem(path)
        file_agent = stem[6:] if stem.startswith("agent-") and len(stem) > 6 else None
        if file_agent is not None:
            meta = _read_meta(path, stem)
            if meta is not None:
                info["agent_meta"] = meta
        spath = str(path)
        groups: dict[tuple, dict] = {}           # (message.id, requestId) → group state
        dups = 0
        for line in iter_objects(path, data, LOADER, self.quarantine):
            o = line.obj
            if needs_safe(line.raw):
                o = deep_safe(o)
            uuid = str_or_none(o.get("uuid"))
            if uuid is not None:
                if uuid in self.seen_uuids:
                    dups += 1
                    continue
                self.seen_uuids.add(uuid)
            self._line(o, uuid, stem, file_agent, spath, line.line_no, groups)
        for g in groups.values():
            row = g["row"]
            row["text"], row["text_bytes"] = truncate("\n".join(g["texts"]) if g["texts"] else None)
        info["duplicates"] = dups
        self.inputs.append(info)

    def _line(self, o: dict, uuid: str | None, stem: str, file_agent: str | None, spath: str,
              line_no: int, groups: dict) -> None:
        t = o.get("type")
        side = o.get("isSidechain") is True
        if side or file_agent is not None:
            agent = str_or_none(o.get("agentId")) or file_agent or "sidechain"
        else:
            agent = None
        ts = o.get("timestamp")
        ts = ts if isinstance(ts, str) else None
        base = {
            "transcript_id": stem,
            "client": CLIENT,
            "client_version": str_or_none(o.get("version")),
            "client_session_id": str_or_none(o.get("sessionId")),
            "agent_id": agent,
            "uuid": uuid,
            "parent_uuid": str_or_none(o.get("parentUuid")),
            "source_file": spath,
            "line_no": line_no,
        }
        msg = o.get("message")
        if t == "user" and isinstance(msg, dict):
            self._user(base, ts, msg.get("content"))
        elif t == "assistant" and isinstance(msg, dict):
            self._assistant(base, ts, o, msg, groups)
        elif t == "summary":
            text, nb = truncate(str_or_none(o.get("summary")))
            self.add({**base, "kind": "summary", "line_type": "summary", "text": text,
                      "text_bytes": nb}, ts)
        else:
            lt = t if isinstance(t, str) else (None if t is None else str(t))
            sub = o.get("subtype")
            if lt is not None and isinstance(sub, str) and sub:
                lt = f"{lt}/{sub}"
            row = {**base, "kind": "system" if t == "system" else "other", "line_type": lt}
            if t == "system":
                row["text"], row["text_bytes"] = truncate(str_or_none(o.get("content")))
            self.add(row, ts)

    def _user(self, base: dict, ts: str | None, content: Any) -> None:
        if isinstance(content, list):
            other: list = []
            n_results = 0
            for b in content:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    n_results += 1
                    text, images = _blocks_text(b.get("content"))
                    text, nb = truncate(text)
                    self.add({**base, "kind": "tool_result", "line_type": "user",
                                    "call_id": str_or_none(b.get("tool_use_id")),
                                    "is_error": b.get("is_error") is True, "text": text,
                                    "text_bytes": nb, "images": images}, ts)
                    self.results.append(len(self.rows) - 1)
                else:
                    other.append(b)
            if n_results and not other:
                return
            content = other
        text, images = _blocks_text(content)
        text, nb = truncate(text)
        self.add({**base, "kind": "user_prompt", "line_type": "user", "text": text,
                  "text_bytes": nb, "images": images}, ts)

    def _assistant(self, base: dict, ts: str | None, o: dict, msg: dict, groups: dict) -> None:
        mid = str_or_none(msg.get("id"))
        rid = str_or_none(o.get("requestId"))
        usage = msg.get("usage")
        g = groups.get((mid, rid)) if mid is not None else None
        if g is None:
            row = self.add({**base, "kind": "model_request", "line_type": "assistant",
                            "model": str_or_none(msg.get("model")), "message_id": mid,
                            "request_id": rid}, ts)
            g = {"row": row, "texts": []}
            groups[(mid, rid) if mid is not None else ("line", base["line_no"])] = g
        row = g["row"]
        if isinstance(usage, dict):
            row["input_tokens"] = int_or_none(usage.get("input_tokens"))
            row["output_tokens"] = int_or_none(usage.get("output_tokens"))
        if row.get("model") is None:
            row["model"] = str_or_none(msg.get("model"))
        content = msg.get("content")
        if isinstance(content, str):
            g["texts"].append(content)
            return
        if not isinstance(content, list):
            return
        for b in content:
            if not isinstance(b, dict):
                continue
            bt = b.get("type")
            if bt == "text":
                if isinstance(b.get("text"), str):
                    g["texts"].append(b["text"])
            elif bt == "tool_use":
                name = b.get("name")
                name = name if isinstance(name, str) else None
                server, tool = split_mcp_name(name)
                args = b.get("input")
                call_id = str_or_none(b.get("id"))
                self.add({**base, "kind": "tool_call", "line_type": "assistant",
                          "tool_raw": name, "server": server, "tool": tool, "call_id": call_id,
                          "arguments": args, "args_key": canonical_args(args),
                          "message_id": mid, "request_id": rid}, ts)
                if call_id is not None:
                    self.calls.setdefault(call_id, []).append(len(self.rows) - 1)

    def pair(self) -> list[str | None]:
        """Pair results to calls by call_id; returns the result_ts strings parallel to rows."""
        result_ts: list[str | None] = [None] * len(self.rows)
        done: set[str] = set()
        rows = self.rows
        for i in self.results:
            r = rows[i]
            cid = r["call_id"]
            idx = self.calls.get(cid) if cid is not None else None
            if not idx:
                continue
            call = rows[idx[0]]
            r["tool_raw"], r["server"], r["tool"] = call["tool_raw"], call["server"], call["tool"]
            if cid in done:
                continue
            done.add(cid)
            for j in idx:
                c = rows[j]
                result_ts[j] = self.ts[i]
                c["is_error"] = r["is_error"]
                c["result_text"] = r["text"]
                c["images"] = r["images"]
        return result_ts


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
    st = _Load()
    for path in _expand(paths):
        st.load_file(path)
    result_ts = st.pair()
    frame = STEPS.build(st.rows)
    if len(frame):
        frame["ts"] = to_utc(st.ts).array
        frame["result_ts"] = to_utc(result_ts).array
    return LoadResult(frame=frame, quarantine=QUARANTINE.build(st.quarantine), inputs=st.inputs)


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
