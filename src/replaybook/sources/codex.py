"""OpenAI Codex CLI rollouts → the ``steps`` frame.

Format origin
-------------
Codex writes one rollout per session under ``~/.codex/sessions/``.  Three generations exist; all
are read (the generation is recognised per file, by content):

1. **TypeScript CLI** (``codex-cli``, 2025-04/05, ``codex-cli/src/utils/storage/save-rollout.ts``):
   one pretty-printed JSON document ``rollout-<date>-<id>.json`` =
   ``{"session": {"timestamp", "id", "instructions"}, "items": [<Responses API item>, …]}``.
   Items carry no timestamps.
2. **Rust, un-enveloped JSONL** (codex-rs before the envelope): first line the session meta
   object ``{"id", "timestamp", "instructions", "git"?}``, then one Responses API item per line
   (``{"type": "message"|"function_call"|"function_call_output"|"reasoning"|…, "id": "msg_…"}``)
   and ``{"record_type": "state"}`` markers.  Items carry no timestamps.
3. **Rust, envelope JSONL** (``RolloutLine`` in ``codex-rs/protocol/src/protocol.rs``):
   ``{"timestamp", "type", "payload"}`` with ``type`` one of ``session_meta``,
   ``response_item``, ``event_msg``, ``turn_context``, ``compacted`` (and types newer than this
   loader).  ``payload`` of ``response_item`` is the ``ResponseItem`` enum
   (``codex-rs/protocol/src/models.rs``); of ``event_msg`` the ``EventMsg`` enum, e.g.
   ``mcp_tool_call_begin`` / ``mcp_tool_call_end`` with ``invocation: {server, tool, arguments}``,
   ``duration: {secs, nanos}`` (or a string such as ``"1.2s"``) and
   ``result: {"Ok": CallToolResult} | {"Err": "…"}``.

The frame
---------
:func:`load_codex` returns a :class:`~replaybook.frames.LoadResult`; ``frame`` has exactly the
:data:`~replaybook.frames.STEPS` columns and dtypes, ``client`` ``"codex"``.  One row per line
(per item for the TypeScript generation), in file order; ``seq`` is 0-based per transcript.

==============  ===========================================================================
kind            from
==============  ===========================================================================
user_prompt     ``event_msg/user_message`` (what the user typed); in files without such events
                (generations 1–2) a ``message`` item with ``role: user``
model_request   a ``message`` item with ``role: assistant`` (``model`` from the latest
                ``turn_context``; tokens from the next ``event_msg/token_count``'s
                ``info.last_token_usage``)
tool_call       ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` /
                ``web_search_call`` / ``tool_search_call`` items; an ``mcp_tool_call_begin``
                (else ``_end``) event when no ``function_call`` carries its ``call_id``
tool_result     ``function_call_output`` / ``custom_tool_call_output`` / ``tool_search_output``;
                an ``mcp_tool_call_end`` whose call came from a ``begin`` event
summary         a ``compacted`` line (``text`` = its ``message``)
system          ``session_meta`` (and the legacy meta line), ``turn_context``, ``message`` items
                with role ``system``/``developer``
other           everything else: ``role: user`` items of files that have ``user_message`` events
                (they mirror the event, or are injected context), other ``event_msg`` types
                (``agent_message``, ``token_count``, MCP events folded into their
                ``function_call``), ``reasoning`` (``text`` = summary, never the encrypted
                content), ``{"record_type": "state"}`` lines, types newer than this loader
==============  ===========================================================================

* ``transcript_id`` and ``client_session_id``: the session id (``session_meta.payload.id``, the
  legacy meta ``id``, ``session.id``), else the UUID in the file name, else the file stem.  A
  ``session_meta`` that is not on the file's first line and names another session than the file
  name's UUID is not the file's own (its own first line was unreadable): it heads a fork's
  replayed history, so it names the parent (rule A below) and the file is its name's session,
  with a note in ``inputs[i]["notes"]``.
  ``client_version``: ``cli_version``.  ``agent_id``: for sub-agent rollouts
  (``source.subagent``) the ``agent_nickname``/``agent_path``/``agent_role``, else the
  sub-agent kind (``review``, ``compact`` …); NA for main sessions.
* **Arguments**: ``function_call.arguments`` is a JSON *string*; it is parsed and canonicalised
  (:func:`~replaybook.canonical.canonical_args`).  Text that is not JSON keeps ``arguments`` None
  and ``args_key`` NA, puts the raw text in ``text`` and adds a note (``inputs[i]["notes"]``); the
  line is not quarantined.  ``custom_tool_call.input`` is free text (``apply_patch``): ``arguments``
  None, ``args_key`` NA, ``text`` the input.
* **MCP names**: ``mcp__<server>__<tool>`` (codex-rs ``MCP_TOOL_NAME_DELIMITER``) and the legacy
  ``<server>__<tool>`` are split at the first ``__``; a ``namespace`` field (codex-rs 2026:
  ``{"namespace": "mcp__<server>", "name": "<tool>"}``) names the server and leaves the tool's
  own name whole, ``__`` and all (:func:`split_codex_name`; ``tool_raw`` is then
  ``<namespace>__<name>``).  The ``invocation`` of an MCP event is authoritative and overrides the
  split for the call of its ``call_id`` that it follows (Codex sanitises and may hash the names
  the model sees).
* **Pairing**: results and MCP events are paired with calls by ``call_id`` within their
  session (every file of the load with that session id: a thread's paginated segments) — call
  ids are unique only within a session (local models and providers number them ``call_0``,
  ``call_1`` …), so the same id in two sessions is two calls, and some providers number each
  answer's calls from ``call_0``, so one id can name several calls of a session, one after the
  other (below, "Lines written twice count once").  A result answers the latest call of its id
  before it (file order) that has no output yet; a call keeps its first result.  The call row
  gets ``result_ts``, ``is_error`` (``Err``, ``isError``, or a legacy
  ``{"content", "success": false}`` output; NA when the rollout does not say), ``result_text``;
  result rows get the call's ``tool_raw``/``server``/``tool``.
* **MCP results** are read as the Claude Code loader reads ``tool_result`` blocks: ``text`` /
  ``result_text`` the text blocks joined (``structuredContent`` as JSON when there are none),
  ``images`` the image blocks, ``is_error`` the result's ``isError`` (false when absent),
  ``text_bytes`` the full text's size.  Codex writes them as ``mcp_tool_call_end.result``
  (``{"Ok": CallToolResult} | {"Err": "…"}``, an ``Err`` being an error) and, for the call of an
  MCP tool (a split name, or a call with MCP events), as ``function_call_output.output`` text:
  the whole ``CallToolResult`` as JSON (``McpToolCallOutput``, codex-rs from May 2025), then —
  since Codex passes structured content and images on to the model (autumn 2025,
  ``FunctionCallOutputPayload`` from a ``CallToolResult``) — the ``content`` list as JSON
  (``is_error`` then NA unless the end event says), ``structuredContent`` as JSON (kept as that
  text: it is the result), or a list of ``input_text``/``input_image`` items when images came
  back; a failed call is ``err: "…"`` (a Rust debug string; 2025) or the bare error text (2026,
  kept as written).  Output of any other shape stays the text it was written as.
* **Command results** (the built-in :data:`SHELL_TOOLS`: ``shell``, ``exec_command`` …) are
  read by :func:`exec_output`: ``text`` / ``result_text`` the command's output, ``is_error``
  true for a non-zero exit code (false for 0; NA when the rollout records none, as for a plain
  string output), and a non-zero exit code kept as the text's first line ``Exit code: N``.
  Shapes: the JSON text ``{"output", "metadata": {"exit_code", "duration_seconds"}}`` (TypeScript
  CLI; codex-rs until autumn 2025) or that object itself, and the text Codex writes since then
  (``Exit code: N`` / ``Wall time: …`` / unified exec's ``Process exited with code N`` header
  lines, then ``Output:`` and the output).  Any other output of a built-in tool (a plain string,
  a command printing JSON of another shape) stays as written.
* **A result whose call's line is missing** (damaged and set aside, a file cut before it) keeps
  its ``call_id`` and no tool name (NA: the name was on the lost line); its output is read by
  its shape alone: a whole MCP ``CallToolResult`` object (``{"content": […], "isError": …}``)
  gives its text and ``isError``, a command payload ``{"output", "metadata"}`` its output and
  exit code; anything else stays as written.  The join can still pair it with the door call it
  answers (:mod:`replaybook.join`: by the door's error text, or its tool or response size, and
  time — Codex sends the door no tool-use id).
* **Forks and sub-agents — replayed history is counted once.**  A forked or sub-agent rollout
  starts by replaying its parent's history, re-stamped with the time of the fork: Codex writes
  the copied lines as one batch after the child's ``session_meta``, milliseconds apart.  Rule,
  per file, applied to the lines after its own ``session_meta``:

  A. when its ``session_meta`` names a parent (``forked_from_id``, or
     ``source.subagent.thread_spawn.parent_thread_id``) whose rollout is in the same load, the
     replay is the run of lines right after that ``session_meta`` whose ``(type, payload)`` —
     timestamp ignored — appear, in order, in the parent's lines written up to the fork (a
     subsequence: the parent may hold lines that were not replayed, e.g. its MCP events), plus
     replayed ``session_meta`` lines of another session.  Timestamps bound the run on both sides:
     a parent line stamped after the child's ``session_meta`` cannot have been copied, and the run
     ends at the first child line stamped 0.5 s or more after the line before it (the batch is
     over: that line, and all after it, are the child's own, even when the parent wrote the same
     ``(type, payload)`` — the same ``turn_context``, the same question asked again).  Lines
     without a readable time are judged by content alone;
  B. otherwise, the leading lines identical in ``(timestamp, type, payload)`` (envelope) or in
     their whole object when it carries an item ``id`` (legacy) to a line of a file loaded
     earlier are replay (lines without such an identity — ``record_type: state`` — are replay
     when they sit before the last matching line);
  C. a copy of a legacy or TypeScript rollout (a backup, a gzipped copy in another folder):
     a file whose meta — the legacy meta line, the ``session`` object — is identical to that of
     a file loaded earlier is the same session, copied.  Its meta gives no row (counted in
     ``duplicates``, as an envelope copy's ``session_meta`` line is) and its leading lines
     identical, position by position, to that file's lines after the meta are replay (more of
     them than rule B finds: these generations carry no timestamps, and messages and
     ``record_type: state`` lines no ``id``).  Lines past them — a copy that went on — are rows
     of the same transcript.  Lines of two *different* sessions are never matched this way:
     without timestamps the same message can be written twice on purpose.

  Replayed lines become no rows; ``inputs[i]["replayed"]`` counts them and
  ``inputs[i]["parent"]`` names the parent session.  A parent whose rollout is split in
  paginated segments (below) is read as all its segments in load order.
* **Paginated segments** (codex 0.150+): a resumed thread goes on in a new file
  ``rollout-<time>-<thread>_<segment>.jsonl`` whose ``session_meta.id`` is the thread's; its
  rows are the same transcript, ``seq`` going on from the segment before (files are read in
  path order, which is time order).  A segment without a usable meta line is named by the
  thread UUID of its file name.
* **Lines written twice count once.**  An envelope line identical to an earlier one of the load
  (timestamp, type and payload: a duplicated last line, a history re-appended as it was) gives
  no row; nor does a tool call whose ``call_id`` already has a tool_call row of the same
  session with the same item (a history re-appended under new timestamps: an output after it
  answers that call), nor the same output for the same ``call_id`` of the same session again
  once the call it answered has its output.  ``inputs[i]["duplicates"]`` counts them.  (The same
  call asked again under the same id, same tool and arguments, is thus counted once too: by its
  lines alone it cannot be told from a re-appended history.)
  A tool call that repeats a ``call_id`` with *other* content in the same session is not a copy:
  once the id's earlier call was answered (its output, or its MCP end event, came before this
  call) it is a new call, a row of its own (providers that number each answer's calls from
  ``call_0`` ask for ``list`` in one turn and ``read`` in the next under the same id); while the
  earlier call is not answered yet — two different calls open under one id at once — it goes to
  the quarantine as ``conflict`` (naming the earlier call, which is kept and takes the output),
  since which of the two ran is exactly what an investigator asks.

Timestamps (``ts``, ``result_ts``) are tz-aware UTC; NaT where a line has none (generations 1–2).
Lines that are not JSON, not JSON objects, or whose ``payload`` is not an object go to the
quarantine with file, line number and byte offset; an unterminated unparsable last line is
``pending``.  A TypeScript document that is not valid JSON is one quarantine row (with the
parser's line), unless raw control characters (a NUL byte, an unescaped tab in a string) are all
that is wrong: then each item holding one is a quarantine row (its index, line, byte offset and
the character's byte offset) and the other items are read.  Files are opened read-only and never
modified.

Raises :class:`~replaybook.errors.InputError` for a missing path or an unreadable file.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import orjson

from .. import _json
from .._jsonl import (ControlRepair, Damaged, control_repair, expand_paths, iter_objects, json_doc_items, line_scores,
                      lines_note, name_stem, note_non_text_times, note_unreadable_times, note_zoneless_times, quarantine_row,
                      read_source)
from .._text import before_by_ms, deep_safe, int_or_none, needs_safe, str_or_none, to_utc, truncate
from ..canonical import arguments_from_text, canonical_args
from ..frames import QUARANTINE, STEPS, LoadResult
from ._mcp_blocks import mcp_blocks_text
from .registry import Source, register

__all__ = [
    "load_codex",
    "sniff",
    "is_prompt_history",
    "split_codex_name",
    "exec_output",
    "EXEC_OUTPUT_TOOLS",
    "SHELL_TOOLS",
    "LOADER",
    "CLIENT",
]

#: Source name in the registry and ``quarantine.loader``.
LOADER = "codex"
#: Value of ``steps.client``.
CLIENT = "codex"

_ENVELOPE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_ITEM_TYPES = frozenset({
    "message", "function_call", "function_call_output", "reasoning", "local_shell_call",
    "custom_tool_call", "custom_tool_call_output", "web_search_call", "tool_search_call",
    "tool_search_output", "image_generation_call", "compaction", "compaction_summary",
})
_CALL_TYPES = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call",
                         "tool_search_call"})
_RESULT_TYPES = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


# --------------------------------------------------------------------------- shared helpers

def _rollout_name(path: Path) -> bool:
    """Folder walks read ``rollout-*`` files ending ``.jsonl``/``.json`` (or ``.gz``) only."""
    return path.name.lower().endswith((".jsonl", ".jsonl.gz", ".json", ".json.gz")) and path.name.startswith("rollout-")


def _stem(path: Path) -> str:
    return name_stem(path, (".jsonl.gz", ".json.gz", ".jsonl", ".json", ".gz"))


def _canon_key(v: Any) -> bytes:
    try:
        return _json.dumps(v, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return json.dumps(v, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------- names

def split_codex_name(name: Any, namespace: Any = None) -> tuple[str | None, Any]:
    """Split a Codex tool name into ``(server, tool)``.

    * ``mcp__<server>__<tool>`` → ``(server, tool)`` (split at the first ``__`` after ``mcp__``);
    * legacy ``<server>__<tool>`` → ``(server, tool)`` (Codex built-in tool names hold no ``__``);
    * a ``namespace`` (``function_call.namespace``, codex-rs 2026: ``"mcp__files"``, older
      ``"mcp__files__"``) with the tool's own name → ``("files", name)``: the name is the MCP
      tool's whole name, ``__`` and all (``a__b`` stays ``a__b``); a name that already starts
      with the namespace is split after it;
    * anything else (``shell``, ``exec_command``, ``apply_patch``) → ``(None, name)``.

    >>> split_codex_name("mcp__door__read_object")
    ('door', 'read_object')
    >>> split_codex_name("door__read_object")
    ('door', 'read_object')
    >>> split_codex_name("a__b", "mcp__door")
    ('door', 'a__b')
    >>> split_codex_name("exec_command")
    (None, 'exec_command')
    """
    if not isinstance(name, str):
        return None, name
    ns = _namespace(namespace)
    if ns is not None:
        server = ns[5:] if ns.startswith("mcp__") else ns
        server = server.strip("_")
        tool = name[len(ns) + 2:] if name.startswith(ns + "__") and len(name) > len(ns) + 2 else name
        if server:
            return server, tool
    rest = name[5:] if name.startswith("mcp__") else name
    server, sep, tool = rest.partition("__")
    if sep and server and tool:
        return server, tool
    return None, name


def _namespace(namespace: Any) -> str | None:
    """A ``namespace`` value without its trailing underscores (``"mcp__files__"`` → ``"mcp__files"``),
    or None when there is none."""
    if isinstance(namespace, str):
        ns = namespace.rstrip("_")
        return ns or None
    return None


def _qualified(name: str | None, namespace: Any) -> str | None:
    """The tool name as one string (``tool_raw``): ``<namespace>__<name>`` when the call gives its
    namespace apart, else the name as written."""
    ns = _namespace(namespace)
    if ns is None or name is None or name.startswith(ns + "__"):
        return name
    return f"{ns}__{name}"


# --------------------------------------------------------------------------- sniffing

_FRAG_ENVELOPE = re.compile(rb'"type"\s*:\s*"(session_meta|response_item|event_msg|turn_context)"')
_FRAG_TS_DOC = re.compile(rb'^\s*\{\s*"(session|items)"\s*:')
_FRAG_ITEM = re.compile(rb'"type"\s*:\s*"(message|function_call|function_call_output|reasoning)"')


def _line_score(o: Any) -> float:
    if not isinstance(o, dict):
        return 0.0
    t = o.get("type")
    if t is not None and not isinstance(t, str):  # ("type": {…}: a line of no type this loader knows)
        return 0.0
    if t in _ENVELOPE_TYPES and "payload" in o and isinstance(o.get("timestamp"), str):
        return 1.0
    if "payload" in o and isinstance(o.get("timestamp"), str) and isinstance(t, str) and len(o) <= 4:
        return 0.5  # an envelope type newer than this loader
    if o.get("record_type") == "state":
        return 0.6
    if t in _ITEM_TYPES and "payload" not in o and "message" not in o and "uuid" not in o:
        if t == "message":
            return 0.8 if o.get("role") in ("user", "assistant", "system", "developer") and \
                isinstance(o.get("content"), list) else 0.0
        if t in ("function_call", "function_call_output"):
            return 0.9 if "call_id" in o else 0.0
        return 0.6
    if t is None and isinstance(o.get("id"), str) and isinstance(o.get("timestamp"), str) and \
            ("instructions" in o or "git" in o):
        return 0.6
    return 0.0


def sniff(sample: bytes) -> float:
    """Confidence in [0, 1] that ``sample`` (a file's first bytes) is a Codex rollout.

    Judges up to 200 lines (every generation: envelope lines, un-enveloped Responses items,
    ``record_type`` markers, the legacy meta line); a TypeScript-generation document (one JSON
    object with ``session`` and ``items``) is judged by its parsed keys, or by its visible keys
    when the sample cuts it.  ≥ 0.9 for envelope files, about 0.7–0.9 for older generations,
    ≤ 0.1 for other JSON.
    """
    stripped = sample.lstrip()
    if stripped.startswith(b"{") and _FRAG_TS_DOC.match(stripped):
        try:
            doc = _json.loads(stripped)
        except orjson.JSONDecodeError:
            doc = None
        if isinstance(doc, dict):
            items = doc.get("items")
            if isinstance(doc.get("session"), dict) and isinstance(items, list):
                return 0.85 if any(_line_score(i) >= 0.6 for i in items[:50] if isinstance(i, dict)) \
                    or not items else 0.5
        elif b'"items"' in sample and b'"session"' in sample and _FRAG_ITEM.search(sample):
            return 0.8
    scores = line_scores(sample, _line_score)  # the sample may cut the last line: left out
    if not scores:
        tail = sample.strip()
        return 0.6 if _FRAG_ENVELOPE.search(tail) and b'"payload"' in tail else 0.0
    mean = sum(scores) / len(scores)
    if max(scores) >= 1.0:
        return round(min(0.99, 0.6 + 0.4 * mean), 3)
    if max(scores) >= 0.8:
        return round(min(0.9, 0.4 + 0.5 * mean), 3)
    return round(min(0.4, mean), 3)


# --------------------------------------------------------------------------- parsing

@dataclass
class _Rec:
    """One usable line (or TypeScript item) of a rollout."""

    line_no: int
    kind: str                 # envelope | legacy_meta | legacy_item | state | ts_session | ts_item | unknown
    obj: dict
    ts: str | None
    rtype: str | None         # envelope type, or "response_item" for bare items
    payload: Any              # envelope payload / the item itself
    offset: int | None = None  # byte offset of the line (JSONL generations)
    raw: bytes | None = None   # the line's first bytes (JSONL generations), for a quarantine row
    kb: Any = 0               # cached _key_b (0: not computed yet)


@dataclass
class _File:
    path: Path
    info: dict
    recs: list[_Rec] = field(default_factory=list)
    session_id: str | None = None
    parent_id: str | None = None
    cli_version: str | None = None
    agent_id: str | None = None
    meta_idx: int | None = None   # index in recs of its own session meta
    skip: int = 0                 # number of leading recs (after meta) that are replay
    skip_set: set = field(default_factory=set)
    dup_set: set = field(default_factory=set)   # recs that are a copy of an earlier file's (rule C: its meta)


def _subagent(source: Any) -> tuple[str | None, str | None]:
    """``(agent_id, parent_thread_id)`` from a ``SessionSource`` value."""
    if not isinstance(source, dict):
        return None, None
    sub = None
    for k in ("subagent", "sub_agent", "SubAgent"):
        if k in source:
            sub = source[k]
            break
    if sub is None:
        return None, None
    if isinstance(sub, str):
        return sub, None
    if isinstance(sub, dict):
        spawn = sub.get("thread_spawn") or sub.get("ThreadSpawn")
        if isinstance(spawn, dict):
            aid = (str_or_none(spawn.get("agent_nickname")) or str_or_none(spawn.get("agent_path"))
                   or str_or_none(spawn.get("agent_role")) or "thread_spawn")
            return aid, str_or_none(spawn.get("parent_thread_id"))
        for k, v in sub.items():
            return (str_or_none(v) if k == "other" and str_or_none(v) else k), None
    return "subagent", None


def _apply_meta(f: _File, meta: dict) -> None:
    f.session_id = f.session_id or str_or_none(meta.get("id"))
    f.cli_version = f.cli_version or str_or_none(meta.get("cli_version"))
    aid, parent = _subagent(meta.get("source"))
    nick = str_or_none(meta.get("agent_nickname"))
    if aid == "thread_spawn" and nick:
        aid = nick
    f.agent_id = f.agent_id or aid or nick
    f.parent_id = f.parent_id or str_or_none(meta.get("forked_from_id")) or parent


def _is_envelope(o: dict) -> bool:
    """A current-generation rollout line (``timestamp``, ``type``, ``payload``), not an object
    nested in one: where a line glued to a torn one begins (:func:`replaybook._jsonl.split_torn`)."""
    return "payload" in o and "timestamp" in o and o.get("type").__class__ is str


def _classify(o: dict, first: bool) -> tuple[str, str | None, str | None, Any]:
    """``(kind, ts, rtype, payload)`` of one parsed JSONL object."""
    t = o.get("type")
    ts = o.get("timestamp") if isinstance(o.get("timestamp"), str) else None
    if "payload" in o and isinstance(t, str):
        return "envelope", ts, t, o.get("payload")
    if "record_type" in o:
        return "state", None, None, o
    if isinstance(t, str):
        return ("legacy_item" if t in _ITEM_TYPES else "unknown"), None, "response_item", o
    if first and str_or_none(o.get("id")):
        return "legacy_meta", ts, "session_meta", o
    return "unknown", ts, None, o


def _read_file(path: Path, quarantine: list[dict]) -> _File:
    data, info = read_source(path, LOADER, "Codex rollout")
    f = _File(path=path, info=info)
    f.info.setdefault("notes", [])  # (read_source's own, on a gzip stream cut short)
    first_line = data.lstrip().split(b"\n", 1)[0].strip()
    doc = rep = None
    if data.lstrip()[:1] == b"{":
        try:
            doc = _json.loads(data)
        except orjson.JSONDecodeError:
            rep = control_repair(data)  # valid but for raw control characters: read around them
            doc = rep.doc if rep is not None else None
    if isinstance(doc, dict) and isinstance(doc.get("items"), list) and isinstance(doc.get("session"), dict):
        _read_ts_doc(f, data, rep, quarantine)
        f.info["generation"] = "typescript-json"
        return f
    if first_line == b"{":
        # a pretty-printed JSON document that is not a TypeScript rollout (or does not parse)
        try:
            _json.loads_lenient(data.decode("utf-8", "replace"))
            msg, ln = "a JSON document without session and items: not a Codex rollout", 1
        except json.JSONDecodeError as exc:
            msg, ln = f"rollout document is not valid JSON: {exc.msg}", exc.lineno
        quarantine.append(quarantine_row(path, None, LOADER, msg, line_no=ln, raw=data[:400]))
        f.info["generation"] = "typescript-json" if b'"items"' in data and b'"session"' in data else "unknown"
        return f
    gens: set[str] = set()
    first = True
    bad_ts: list[tuple[int, Any]] = []   # (line, timestamp) written empty or not text
    first_ln = 1 + data[:len(data) - len(data.lstrip())].count(b"\n")   # the file's first line with content
    named = _name_uuid(path)
    for line in iter_objects(path, data, LOADER, quarantine, accept=_is_envelope):
        o = line.obj
        if needs_safe(line.raw):
            o = deep_safe(o)
        kind, ts, rtype, payload = _classify(o, first)
        first = False
        if kind == "envelope" and rtype in _ENVELOPE_TYPES and not isinstance(payload, dict):
            quarantine.append(quarantine_row(path, line, LOADER,
                                             f"{rtype} payload is not an object ({type(payload).__name__})"))
            continue
        if kind in ("envelope", "legacy_meta") and "timestamp" in o and not ts:
            bad_ts.append((line.line_no, o["timestamp"]))   # (null, a number, "": the time is unknown)
        gens.add("envelope" if kind == "envelope" else ("legacy" if kind != "unknown" else "unknown"))
        rec = _Rec(line.line_no, kind, o, ts, rtype, payload, line.offset, line.raw[:400])
        if (kind == "envelope" and rtype == "session_meta") or kind == "legacy_meta":
            meta = payload if kind == "envelope" else o
            if f.meta_idx is None and f.parent_id is None and line.line_no != first_ln and named \
                    and str_or_none(meta.get("id")) not in (None, named):
                # the file's own meta line (its first) is damaged: this is the parent's meta at the
                # head of a fork's replayed history, not the file's own; the file is its name's
                f.parent_id = str(meta["id"])
                f.info["notes"].append(
                    f"line {line.line_no}: a session_meta of session {f.parent_id}, not this file's "
                    f"({named}, from its name): its own first line is unreadable; read as the parent's "
                    "replayed meta")
            elif f.meta_idx is None and f.parent_id is None:
                f.meta_idx = len(f.recs)
                _apply_meta(f, meta)
        f.recs.append(rec)
    note_non_text_times(f.info, bad_ts)
    gens.discard("unknown")
    f.info["generation"] = ("envelope-jsonl" if gens == {"envelope"} else
                            "legacy-jsonl" if gens == {"legacy"} else
                            "mixed-jsonl" if gens else "unknown")
    _fallback_ids(f)
    return f


def _read_ts_doc(f: _File, data: bytes, rep: ControlRepair | None = None, quarantine: list[dict] | None = None) -> None:
    """The records of a TypeScript rollout document.  ``rep``: the document is valid but for raw
    control characters (:func:`~replaybook._jsonl.control_repair`); each item holding one is a
    quarantine row naming its index, line, byte offset and the character, the others are read
    (a session header holding one is read as it stands, and a quarantine row says so)."""
    if rep is not None and quarantine is not None:
        items, outside = rep.elements(("items", "*"))
        for d in outside:
            quarantine.append(quarantine_row(f.path, None, LOADER, d.reason(f"{len(items):,} items"),
                                             line_no=d.line_no, offset=d.offset, raw=d.raw))
        for k, (ln, off, it) in enumerate(items):
            if isinstance(it, Damaged):
                quarantine.append(quarantine_row(f.path, None, LOADER, it.reason(f"item {k + 1}"),
                                                 line_no=ln, offset=off, raw=it.raw))
        items = [x for x in items if not isinstance(x[2], Damaged)]
        sess = [(ln, off, None) for ln, off, _v in rep.elements(("session",))[0]]
        doc = rep.doc
    else:
        text = data.decode("utf-8", "replace")
        try:
            sess = list(json_doc_items(text, ("session",)))
            items = list(json_doc_items(text, ("items", "*")))
        except ValueError:
            sess, items = [], []
        doc = _json.loads(data)
    if not items and rep is None:  # fall back to item index as the line
        items = [(None, 0, it) for it in doc["items"]]
    meta = deep_safe(doc["session"])
    line_no = sess[0][0] if sess else None
    f.meta_idx = 0
    f.recs.append(_Rec(line_no, "ts_session", meta, meta.get("timestamp") if isinstance(
        meta.get("timestamp"), str) else None, "session_meta", meta))
    _apply_meta(f, meta)
    for ln, _off, it in items:
        if not isinstance(it, dict):
            f.info["notes"].append(f"line {ln}: item is not a JSON object; kept as an other row")
            it = {"type": None, "value": it}
        it = deep_safe(it)
        f.recs.append(_Rec(ln, "ts_item", it, None, "response_item", it))
    _fallback_ids(f)


def _name_uuid(path: Path) -> str | None:
    """The session UUID a rollout's file name gives (``rollout-<time>-<uuid>.jsonl``; a paginated
    segment's thread UUID), or None when the name holds none."""
    stem = _stem(path)
    seg = re.search(f"({_UUID.pattern})_({_UUID.pattern})$", stem)
    m = _UUID.findall(stem)
    return seg.group(1) if seg else (m[-1] if m else None)


def _fallback_ids(f: _File) -> None:
    """A rollout whose own meta line is missing or unusable is named by its file: the UUID in
    ``rollout-<time>-<uuid>.jsonl``; a paginated segment ``rollout-<time>-<thread>_<segment>.jsonl``
    (codex 0.150+, written on resume) by its thread's UUID, the one its meta line would give."""
    if f.session_id is None:
        stem = _stem(f.path)
        seg = re.search(f"({_UUID.pattern})_({_UUID.pattern})$", stem)
        m = _UUID.findall(stem)
        f.session_id = seg.group(1) if seg else (m[-1] if m else stem)


# --------------------------------------------------------------------------- replay (forks)

def _key_a(r: _Rec) -> bytes:
    return _canon_key([r.rtype, r.payload])


def _key_b(r: _Rec) -> bytes | None:
    if r.kb != 0:
        return r.kb
    if r.kind == "envelope":
        r.kb = _canon_key([r.ts, r.rtype, r.payload])
    elif r.kind in ("legacy_item", "ts_item") and str_or_none(r.obj.get("id")):
        r.kb = _canon_key(r.obj)
    else:
        r.kb = None
    return r.kb


#: the longest pause between two lines of one replay: Codex writes a fork's copied history as
#: one batch, its lines stamped milliseconds apart; a line stamped this much or more after the
#: line before it was written later, by the child itself
_REPLAY_GAP_NS = 500_000_000


def _ns(stamps: list[str | None]) -> list[int | None]:
    """``stamps`` as UTC nanoseconds since the epoch; None for a missing or unreadable one."""
    import pandas as pd

    return [None if pd.isna(x) else x.value for x in to_utc(stamps).tolist()]


def _mark_replay(files: list[_File]) -> None:
    """Mark each file's leading replayed lines (``skip_set``, ``info["replayed"]``, rules A and
    B of the module docstring)."""
    by_session: dict[str, list[_File]] = {}   # a session's files: one, or its paginated segments
    for f in files:
        if f.session_id and f.meta_idx is not None:
            by_session.setdefault(f.session_id, []).append(f)
    seen_b: set[bytes] = set()
    copied: dict[bytes, _File] = {}   # rule C: legacy / TypeScript meta → the first file with it
    for f in files:
        start = (f.meta_idx + 1) if f.meta_idx is not None else 0
        tail = f.recs[start:]
        parents = [p for p in by_session.get(f.parent_id, []) if p is not f] if f.parent_id else []
        n = 0
        if parents and f.session_id != f.parent_id:
            f.info["parent"] = f.parent_id
            fork = _ns([f.recs[f.meta_idx].ts])[0] if f.meta_idx is not None else None
            positions: dict[bytes, list[int]] = {}
            i = 0
            for parent in parents:   # the parent's lines, every segment in load order
                p_start = (parent.meta_idx + 1) if parent.meta_idx is not None else 0
                p_recs = parent.recs[p_start:]
                for r, t in zip(p_recs, _ns([r.ts for r in p_recs])):
                    if fork is not None and t is not None and t > fork:
                        continue     # written after the fork: cannot be in its replay
                    positions.setdefault(_key_a(r), []).append(i)
                    i += 1
            j = 0
            prev = None
            for r, t in zip(tail, _ns([r.ts for r in tail])):
                if prev is not None and t is not None and t - prev >= _REPLAY_GAP_NS:
                    break            # stamped after the replay's burst: the child's own line
                if r.rtype == "session_meta" and str_or_none((r.payload or {}).get("id")) != f.session_id:
                    n += 1
                    prev = t if t is not None else prev
                    continue
                pos = positions.get(_key_a(r))
                k = bisect.bisect_left(pos, j) if pos else None
                if pos is None or k == len(pos):
                    break
                j = pos[k] + 1
                n += 1
                prev = t if t is not None else prev
        else:
            if f.parent_id:
                f.info["parent"] = f.parent_id
            last = -1
            for i, r in enumerate(tail):
                k = _key_b(r)
                if k is None:
                    continue
                if k in seen_b:
                    last = i
                else:
                    break
            n = last + 1
        if f.meta_idx is not None and f.recs[f.meta_idx].kind in ("legacy_meta", "ts_session"):
            mkey = _canon_key(f.recs[f.meta_idx].obj)
            first = copied.setdefault(mkey, f)
            if first is not f:   # rule C: a copy of that session
                f.dup_set = {f.meta_idx}
                mine, theirs = tail, first.recs[first.meta_idx + 1:]
                same = 0
                while same < min(len(mine), len(theirs)) and \
                        _canon_key(mine[same].obj) == _canon_key(theirs[same].obj):
                    same += 1
                n = max(n, same)
        f.skip = n
        f.skip_set = set(range(start, start + n))
        f.info["replayed"] = n
        for r in f.recs:
            k = _key_b(r)
            if k is not None:
                seen_b.add(k)


# --------------------------------------------------------------------------- rows

_TEXT_ITEMS = (None, "input_text", "output_text", "text", "summary_text", "reasoning_text")


def _content_text(content: Any) -> tuple[str | None, int]:
    """Text of a Responses API ``content`` (string or list of content items) and its image count.

    Items (OpenAI Responses API): ``input_text`` / ``output_text`` / ``summary_text`` /
    ``reasoning_text`` give their ``text``; ``input_image`` is counted; a ``refusal`` (the model
    declined) gives ``[refusal] <its text>``; ``input_file`` a ``[input_file: <name>]`` line; any
    other typed item a ``[<type>]`` line — an item is never dropped unsaid."""
    if isinstance(content, str):
        return content, 0
    if not isinstance(content, list):
        return None, 0
    texts: list[str] = []
    images = 0
    for c in content:
        if isinstance(c, str):
            texts.append(c)
        elif isinstance(c, dict):
            ct = c.get("type")
            if ct in _TEXT_ITEMS:
                if isinstance(c.get("text"), str):
                    texts.append(c["text"])
            elif ct in ("input_image", "image"):
                images += 1
            elif ct == "refusal":
                r = c.get("refusal")
                texts.append("[refusal]" + (f" {r}" if isinstance(r, str) and r else ""))
            elif ct == "input_file":
                name = next((c[k] for k in ("filename", "file_id", "file_url") if isinstance(c.get(k), str) and c[k]),
                            None)
                texts.append(f"[input_file: {name}]" if name else "[input_file]")
            elif isinstance(ct, str) and ct:
                texts.append(f"[{ct}]")
    return ("\n".join(texts) if texts else None), images


def _output(out: Any) -> tuple[str | None, int, bool | None]:
    """``(text, images, is_error)`` of a ``function_call_output.output``."""
    if isinstance(out, dict):
        succ = out.get("success")
        text, images = _content_text(out.get("content"))
        return text, images, (succ is False) if isinstance(succ, bool) else None
    text, images = _content_text(out)
    return text, images, None


#: Codex's built-in tools that run a command: their output carries the command's exit code
#: (``shell`` and ``container.exec``: codex-rs ``ShellHandler``; ``local_shell``: a
#: ``local_shell_call``; ``exec_command`` / ``write_stdin``: unified exec; ``shell_command``)
SHELL_TOOLS = frozenset({"shell", "container.exec", "local_shell", "exec_command", "write_stdin", "shell_command"})

#: the tools whose output :func:`exec_output` reads: the command tools, and ``apply_patch``, whose
#: output Codex writes in the same ``{"output", "metadata": {"exit_code"}}`` shape (a patch that does
#: not apply: exit code 1)
EXEC_OUTPUT_TOOLS = SHELL_TOOLS | {"apply_patch"}

# the text header Codex writes before a command's output: ``Exit code: N`` / ``Wall time: S
# seconds`` / ``Total output lines: N`` (codex-rs ``format_exec_output_for_model_freeform``,
# 2025-09 on); unified exec's ``Chunk ID: …`` / ``Process exited with code N`` / ``Process running
# with session ID N`` / ``Original token count: N``; then ``Output:`` and the output itself
_EXEC_HEADER = re.compile(r"(?:Exit code: -?\d+|Wall time: [^\n]*|Total output lines: \d+|Chunk ID: [^\n]*|"
                          r"Process exited with code -?\d+|Process running with session ID [^\n]*|"
                          r"Original token count: \d+)")
_EXIT_IN_HEADER = re.compile(r"(?:Exit code:|Process exited with code) (-?\d+)")


def exec_output(out: Any) -> tuple[str, bool | None, int | None] | None:
    """``(text, is_error, exit_code)`` of the output of a Codex command tool (:data:`SHELL_TOOLS`),
    or None when ``out`` is in none of the shapes Codex writes for one (kept as written then).

    Shapes (``function_call_output.output``):

    * ``{"output": "<text>", "metadata": {"exit_code": N, "duration_seconds": S}}`` as JSON text
      (codex-rs ``format_exec_output_for_model_structured``, and the TypeScript CLI's
      ``handle-exec-command.ts`` before it) or as that object itself;
    * text with a header — ``Exit code: N`` / ``Wall time: S seconds`` (codex-rs
      ``format_exec_output_for_model_freeform``, autumn 2025) or unified exec's ``Chunk ID`` /
      ``Wall time`` / ``Process exited with code N`` / ``Original token count`` lines — then an
      ``Output:`` line and the output.

    ``text`` is the command's output; ``is_error`` is ``exit_code != 0`` (None when no exit code
    is recorded: a process still running, metadata without one); ``exit_code`` is the integer
    code.  A plain string with no such header is not one of these shapes (None)."""
    obj = out
    if isinstance(out, str):
        s = out.lstrip()
        if s[:1] == "{":
            try:
                obj = _json.loads(s)
            except orjson.JSONDecodeError:
                return None
        else:
            head, sep, rest = out.partition("Output:\n")
            if not sep:
                head, sep, rest = (out[:-len("Output:")], "Output:", "") if out.endswith("Output:") else (out, "", "")
            lines = [ln for ln in head.split("\n") if ln.strip()]
            if not sep or not lines or not all(_EXEC_HEADER.fullmatch(ln.strip()) for ln in lines):
                return None
            m = _EXIT_IN_HEADER.search(head)
            code = int(m.group(1)) if m else None
            return rest, (code != 0) if code is not None else None, code
    if not isinstance(obj, dict) or not isinstance(obj.get("output"), str) or \
            not isinstance(obj.get("metadata"), dict) or not set(obj) <= {"output", "metadata", "hint"}:
        return None
    code = obj["metadata"].get("exit_code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    return obj["output"], (code != 0) if code is not None else None, code


def _exec_text(text: str, code: int | None) -> str:
    """A command's output as the ``text`` / ``result_text`` of its rows: a non-zero exit code is
    kept as a first line ``Exit code: N`` (Codex's own wording); exit code 0 leaves the output as
    it is (``is_error`` false says so)."""
    return f"Exit code: {code}\n{text}" if code not in (None, 0) else text


_MCP_BLOCKS = frozenset({"text", "image", "audio", "resource", "resource_link"})


def _call_tool_result(res: Any) -> tuple[str | None, int, bool | None] | None:
    """``(text, images, is_error)`` of an MCP result as Codex logs it, or None when ``res`` is not
    one.  Shapes (MCP ``CallToolResult``, spec 2025-06-18: ``content`` blocks ``{type: text, text}``
    / ``{type: image, data, mimeType}`` / audio / resource / resource_link, ``isError`` false when
    absent, ``structuredContent``):

    * ``{"Ok": CallToolResult} | {"Err": "…"}`` — ``mcp_tool_call_end.result`` (Rust ``Result``);
    * a ``CallToolResult`` object — ``function_call_output.output`` text of codex-rs from May
      2025 (``McpToolCallOutput``: ``serde_json::to_string(&result)``);
    * a list of content blocks — that text since autumn 2025 (``serde_json::to_string(&content)``;
      ``is_error`` not recorded there: NA).

    ``text`` joins the text blocks, an embedded resource as a ``[resource: <uri>]`` line and its
    text, a resource link and audio as one line each (:func:`._mcp_blocks.mcp_blocks_text`; else
    ``structuredContent`` as JSON); ``images`` counts image blocks.  A result with neither text nor images is not read (None: kept as it was written)."""
    if isinstance(res, dict) and len(res) == 1 and ("Ok" in res or "Err" in res):
        if "Err" in res:
            err = res["Err"]
            return (err if isinstance(err, str) else _json.dumps(err).decode()), 0, True
        return _call_tool_result(res["Ok"])
    if isinstance(res, dict):
        content, is_err = res.get("content"), res.get("isError", res.get("is_error"))
    elif isinstance(res, list):
        content, is_err = res, None
    else:
        return None
    if not isinstance(content, list) or not all(
            isinstance(b, dict) and isinstance(b.get("type"), str) and b["type"] in _MCP_BLOCKS for b in content):
        return None
    texts, images = mcp_blocks_text(content)
    text = "\n".join(texts) if texts else None
    structured = res.get("structuredContent", res.get("structured_content")) if isinstance(res, dict) else None
    if text is None and structured is not None:
        text = _json.dumps(structured).decode()
    if text is None and not images:
        return None
    if isinstance(res, list):
        return text, images, None
    return text, images, (is_err is True) if isinstance(is_err, bool) or is_err is None else None


_RUST_ERR = re.compile(r'err: (".*")', re.S)


def _mcp_output(out: Any) -> tuple[str | None, int, bool | None] | None:
    """``(text, images, is_error)`` of the ``function_call_output.output`` of an MCP tool call when
    it holds an MCP result as JSON text (:func:`_call_tool_result`), or the ``err: "…"`` text
    codex-rs of 2025 wrote for a failed call (``format!("err: {e:?}")``: a Rust debug string,
    read as JSON when it is one); None for anything else (kept as written)."""
    if not isinstance(out, str):
        return None
    s = out.strip()
    if s[:1] in ("{", "["):
        try:
            return _call_tool_result(_json.loads(s))
        except orjson.JSONDecodeError:
            return None
    m = _RUST_ERR.fullmatch(s)
    if m:
        try:
            msg = _json.loads(m.group(1))
        except orjson.JSONDecodeError:
            msg = m.group(1)[1:-1]
        return (msg if isinstance(msg, str) else m.group(1)), 0, True
    return None


def _mcp_result(res: Any) -> tuple[str | None, int, bool | None]:
    """``(text, images, is_error)`` of an ``mcp_tool_call_end.result`` (``{"Ok": …} | {"Err": …}``)."""
    got = _call_tool_result(res)
    if got is not None:
        return got
    if isinstance(res, dict) and "Err" in res:
        return _json.dumps(res["Err"]).decode(), 0, True
    return None, 0, (res.get("Ok", res).get("isError") is True
                     if isinstance(res, dict) and isinstance(res.get("Ok", res), dict) else None)


def _duration_s(d: Any) -> float | None:
    if isinstance(d, dict):
        secs, nanos = d.get("secs", 0), d.get("nanos", 0)
        if isinstance(secs, (int, float)) and isinstance(nanos, (int, float)):
            return float(secs) + float(nanos) / 1e9
        return None
    if isinstance(d, (int, float)) and not isinstance(d, bool):
        return float(d)
    if isinstance(d, str):
        total = 0.0
        found = False
        for num, unit in re.findall(r"([0-9]*\.?[0-9]+)\s*(ns|µs|us|ms|s|m|h)", d):
            found = True
            total += float(num) * {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0,
                                   "m": 60.0, "h": 3600.0}[unit]
        return total if found else None
    return None


class _Load:
    def __init__(self) -> None:
        self.rows: list[dict] = []
        self.ts: list[str | None] = []
        self.result_ts: list[str | None] = []
        # call ids are unique only within a session, and some providers number each answer's
        # calls from call_0: every map of calls is keyed by (session id, call_id), and one id
        # can name several calls of a session, one after the other (see _repeat)
        self.calls: dict[tuple[str, str], list[int]] = {}    # → row indexes of its tool_calls, file order
        self.call_seen: dict[tuple[str, str], list[tuple[bytes, Any, str, int | None]]] = {}
        #   → (key, item, file, line) of each of those calls, in the same order
        self.current: dict[tuple[str, str], int] = {}       # → call row the id's latest call line names
        self.answered: set[int] = set()           # call rows with an output or an MCP end event
        self.output_of: dict[int, int] = {}       # call row → row of its first output
        self.result_call: dict[int, int | None] = {}  # tool_result row → its call's row (None: none before it)
        self.results: list[int] = []             # tool_result row indexes
        self.outputs: dict[int, Any] = {}        # tool_result row → function_call_output text (or object)
        self.mcp_info: list[tuple[int, tuple[str, str], int | None]] = []
        #   (MCP event row, (session, call_id), its call's row; None: no call before it)
        self.seq: dict[str, int] = {}
        self.lines_seen: set[bytes] = set()       # (timestamp, type, payload) of envelope lines with a row
        self.results_seen: set[bytes] = set()     # session + call_id + output of result items with a row
        self.quarantine: list[dict] = []

    def add(self, row: dict, ts: str | None) -> int:
        tid = row["transcript_id"]
        row["seq"] = self.seq.get(tid, 0)
        self.seq[tid] = row["seq"] + 1
        self.rows.append(row)
        self.ts.append(ts)
        self.result_ts.append(None)
        return len(self.rows) - 1


def _build_file(st: _Load, f: _File, fc_ids: set[tuple[str, str]], begin_ids: set[tuple[str, str]]) -> None:
    spath = str(f.path)
    notes: list[str] = f.info["notes"]
    f.info.setdefault("duplicates", 0)
    user_events = any(r.rtype == "event_msg" and isinstance(r.payload, dict)
                      and r.payload.get("type") == "user_message"
                      for i, r in enumerate(f.recs) if i not in f.skip_set)
    model: str | None = None
    pending_request: int | None = None
    for idx, r in enumerate(f.recs):
        if idx in f.skip_set:
            continue
        if idx in f.dup_set:   # a copied session's meta (rule C)
            f.info["duplicates"] += 1
            continue
        if r.kind == "envelope":
            k = _key_b(r)
            if k in st.lines_seen:  # the same line written again: counted once
                f.info["duplicates"] += 1
                continue
            st.lines_seen.add(k)
        base = {
            "transcript_id": f.session_id,
            "client": CLIENT,
            "client_version": f.cli_version,
            "client_session_id": f.session_id,
            "agent_id": f.agent_id,
            "source_file": spath,
            "line_no": r.line_no,
        }
        p = r.payload if isinstance(r.payload, dict) else {}
        if r.kind == "state":
            st.add({**base, "kind": "other", "line_type": "state"}, None)
            continue
        if r.rtype == "session_meta" or r.kind in ("legacy_meta", "ts_session"):
            base_instructions = p.get("base_instructions")
            text, nb = truncate(str_or_none(p.get("instructions")) or (
                str_or_none(base_instructions.get("text")) if isinstance(base_instructions, dict) else None))
            st.add({**base, "kind": "system", "line_type": "session_meta", "text": text,
                    "text_bytes": nb, "uuid": str_or_none(p.get("id"))}, r.ts)
            model = model or str_or_none(p.get("model"))
            continue
        if r.rtype == "turn_context":
            model = str_or_none(p.get("model")) or model
            st.add({**base, "kind": "system", "line_type": "turn_context", "model": str_or_none(p.get("model"))}, r.ts)
            continue
        if r.rtype == "compacted":
            text, nb = truncate(str_or_none(p.get("message")))
            st.add({**base, "kind": "summary", "line_type": "compacted", "text": text, "text_bytes": nb}, r.ts)
            continue
        if r.rtype == "event_msg":
            pending_request = _event(st, f, base, r, p, fc_ids, begin_ids, pending_request)
            continue
        if r.rtype == "response_item" and r.kind in ("envelope", "legacy_item", "ts_item", "unknown"):
            it = p if r.kind == "envelope" else r.obj
            lt_prefix = "response_item/" if r.kind == "envelope" else ""
            pending_request = _item(st, f, base, r, it, lt_prefix, model, user_events, notes, pending_request)
            continue
        lt = r.rtype if r.rtype else (str_or_none(r.obj.get("type")) if isinstance(r.obj, dict) else None)
        st.add({**base, "kind": "other", "line_type": lt}, r.ts)


def _repeat(st: _Load, f: _File, r: _Rec, call_id: str | None, item: Any) -> bool:
    """True when the tool call ``item`` (line ``r`` of ``f``) gives no row of its own; False when
    it is a call of its own (the caller then adds its tool_call row and :func:`_add_call`).

    Call ids are unique only within a session (``f.session_id``; the same id in another session is
    another call), and some providers number each answer's calls from ``call_0``, so one id can
    name several calls of a session, one after the other:

    * the same content as a call of that id already read (a line written twice, a resumed session
      that re-appended its history with new timestamps) is that call: counted once in
      ``duplicates``, and an output after it pairs with that call (when it has none yet);
    * other content while the id's latest call has no answer yet (no output, no MCP end event) is
      a ``conflict`` quarantine row naming that call, which is kept: two different calls open
      under one id at once, and which of them ran is what an investigator asks;
    * other content once the id's calls are answered is a new call (False)."""
    if call_id is None:
        return False
    ck = (f.session_id, call_id)
    key = _canon_key(item)
    seen = st.call_seen.setdefault(ck, [])
    for n, (k, *_rest) in enumerate(seen):
        if k == key:
            f.info["duplicates"] += 1
            st.current[ck] = st.calls[ck][n]
            return True
    if seen and st.calls[ck][-1] not in st.answered:
        first = seen[-1]
        a, b = first[1], item
        if isinstance(a, dict) and isinstance(b, dict):
            keys = sorted(k for k in a.keys() | b.keys() if k not in a or k not in b or a[k] != b[k])
            what = ", ".join(map(str, keys[:6])) + (f" and {len(keys) - 6} more" if len(keys) > 6 else "")
            what += " differs" if len(keys) == 1 else " differ"
        else:
            what = "the item itself differs"
        where = f"line {first[3]}" if first[2] == str(f.path) else f"{first[2]}:{first[3]}"
        st.quarantine.append(quarantine_row(
            f.path, None, LOADER, f"repeats the call_id {call_id!r} of {where}, not answered yet, with different "
            f"content ({what}); the first is kept, this one set aside", kind="conflict", line_no=r.line_no,
            offset=r.offset, raw=r.raw))
        return True
    seen.append((key, item, str(f.path), r.line_no))
    return False


def _add_call(st: _Load, ck: tuple[str, str], i: int) -> None:
    """Row ``i`` is the tool_call of the call :func:`_repeat` just took as a call of its own."""
    st.calls.setdefault(ck, []).append(i)
    st.current[ck] = i


def _answered(st: _Load, i: int, target: int | None) -> None:
    """Row ``i`` is a tool_result answering the call row ``target`` (:func:`_answer_target`)."""
    st.results.append(i)
    st.result_call[i] = target
    if target is not None:
        st.answered.add(target)
        st.output_of.setdefault(target, i)


def _answer_target(st: _Load, ck: tuple[str, str] | None) -> int | None:
    """The call row an output of ``ck`` read now answers: the call the id's latest call line names
    when it has no output yet, else the id's latest call when that has none (an output follows
    its call), else that named call again (a second output: the call keeps its first); None when
    no call of the id was read before it."""
    calls = st.calls.get(ck) if ck is not None else None
    if not calls:
        return None
    cur = st.current[ck]
    if cur not in st.output_of:
        return cur
    return calls[-1] if calls[-1] not in st.output_of else cur


def _item(st: _Load, f: _File, base: dict, r: _Rec, it: dict, lt_prefix: str, model: str | None,
          user_events: bool, notes: list[str], pending_request: int | None) -> int | None:
    t = it.get("type")
    t = t if isinstance(t, str) else None
    lt = f"{lt_prefix}{t}" if t else (lt_prefix.rstrip("/") or None)
    item_id = str_or_none(it.get("id"))
    if t == "message":
        role = it.get("role")
        text, images = _content_text(it.get("content"))
        text, nb = truncate(text)
        if role == "assistant":
            i = st.add({**base, "kind": "model_request", "line_type": f"{lt}/assistant", "text": text,
                        "text_bytes": nb, "model": model, "message_id": item_id}, r.ts)
            return i
        if role == "user":
            kind = "other" if user_events else "user_prompt"
            st.add({**base, "kind": kind, "line_type": f"{lt}/user", "text": text, "text_bytes": nb,
                    "images": images, "message_id": item_id}, r.ts)
            return pending_request
        st.add({**base, "kind": "system", "line_type": f"{lt}/{role}" if isinstance(role, str) else lt,
                "text": text, "text_bytes": nb, "message_id": item_id}, r.ts)
        return pending_request
    if t in _CALL_TYPES:
        call_id = str_or_none(it.get("call_id")) or (item_id if t in ("web_search_call",) else None)
        if _repeat(st, f, r, call_id, it):
            return pending_request
        args: Any = None
        key: str | None = None
        text = None
        if t == "function_call":
            name = str_or_none(it.get("name"))
            raw_args = it.get("arguments")
            if isinstance(raw_args, str):
                try:
                    args = arguments_from_text(raw_args)
                    key = canonical_args(args)
                except (TypeError, ValueError, RecursionError):
                    args, key = None, None
                    text = raw_args
                    notes.append(f"line {r.line_no}: function_call arguments are not JSON (or nest too deep); "
                                 "kept as text, args_key left NA: the call cannot agree by arguments")
            elif isinstance(raw_args, (dict, list)):
                args = raw_args
                try:
                    key = canonical_args(args)
                except (TypeError, RecursionError):
                    key = None
                    notes.append(f"line {r.line_no}: function_call arguments nest too deep to compare; "
                                 "args_key left NA")
            elif raw_args is None:
                args = {}
                key = canonical_args(args)
            else:  # a number or a boolean: not the JSON text Codex writes
                text = _json.dumps(raw_args).decode()
                what = "a boolean" if isinstance(raw_args, bool) else "a number"
                notes.append(f"line {r.line_no}: function_call arguments are {what}, not JSON text; kept as "
                             "text, args_key left NA")
            if name is None:
                notes.append(f"line {r.line_no}: function_call has no name (tool left NA)")
            server, tool = split_codex_name(name, it.get("namespace"))
            tool_raw = _qualified(name, it.get("namespace"))
        elif t == "custom_tool_call":
            name = str_or_none(it.get("name"))
            if _namespace(it.get("namespace")) is not None:
                server, tool = split_codex_name(name, it.get("namespace"))
            else:
                server, tool = None, name
            tool_raw = _qualified(name, it.get("namespace"))
            text = it.get("input") if isinstance(it.get("input"), str) else None
        elif t == "local_shell_call":
            server, tool, tool_raw = None, "local_shell", "local_shell"
            args = it.get("action") if isinstance(it.get("action"), dict) else None
            key = canonical_args(args) if args is not None else None
        elif t == "web_search_call":
            server, tool, tool_raw = None, "web_search", "web_search"
            args = it.get("action") if isinstance(it.get("action"), dict) else None
            key = canonical_args(args) if args is not None else None
        else:  # tool_search_call
            server, tool, tool_raw = None, "tool_search", "tool_search"
            args = it.get("arguments")
            key = canonical_args(args) if args is not None else None
        text, nb = truncate(text)
        i = st.add({**base, "kind": "tool_call", "line_type": lt, "tool_raw": tool_raw, "server": server,
                    "tool": tool, "call_id": call_id, "arguments": args, "args_key": key, "text": text,
                    "text_bytes": nb, "message_id": item_id}, r.ts)
        if call_id is not None:
            _add_call(st, (f.session_id, call_id), i)
        return pending_request
    if t in _RESULT_TYPES:
        cid = str_or_none(it.get("call_id"))
        ck = (f.session_id, cid) if cid is not None else None
        target = _answer_target(st, ck)
        if cid is not None:
            rkey = _canon_key([f.session_id, cid, t, it.get("output"), it.get("tools")])
            cur = st.current.get(ck)
            if rkey in st.results_seen and (cur is None or cur in st.output_of):
                # the same output again after the call it answered (a line written twice, a history
                # re-appended): counted once; the next call of an id may well get the same output
                f.info["duplicates"] += 1
                return pending_request
            st.results_seen.add(rkey)
        if t == "tool_search_output":
            text = _json.dumps(it.get("tools")).decode() if it.get("tools") is not None else None
            images, is_err = 0, None
        else:
            text, images, is_err = _output(it.get("output"))
        raw_out = it.get("output")
        text, nb = truncate(text)
        i = st.add({**base, "kind": "tool_result", "line_type": lt, "call_id": str_or_none(it.get("call_id")),
                    "is_error": is_err, "text": text, "text_bytes": nb, "images": images}, r.ts)
        if t in ("function_call_output", "custom_tool_call_output") and isinstance(raw_out, (str, dict)):
            st.outputs[i] = raw_out   # read as its tool's result once its call is known (_pair)
        _answered(st, i, target)
        return pending_request
    if t == "reasoning":
        text, _ = _content_text(it.get("summary"))
        text, nb = truncate(text)
        st.add({**base, "kind": "other", "line_type": lt, "text": text, "text_bytes": nb,
                "message_id": item_id}, r.ts)
        return pending_request
    st.add({**base, "kind": "other", "line_type": lt, "message_id": item_id}, r.ts)
    return pending_request


def _event(st: _Load, f: _File, base: dict, r: _Rec, p: dict, fc_ids: set[tuple[str, str]],
           begin_ids: set[tuple[str, str]],
           pending_request: int | None) -> int | None:
    et = str_or_none(p.get("type"))
    lt = f"event_msg/{et}" if et else "event_msg"
    if et == "user_message":
        text, nb = truncate(str_or_none(p.get("message")))
        images = p.get("images")
        st.add({**base, "kind": "user_prompt", "line_type": lt, "text": text, "text_bytes": nb,
                "images": len(images) if isinstance(images, list) else 0}, r.ts)
        return pending_request
    if et in ("agent_message", "agent_reasoning", "agent_reasoning_raw_content", "error",
              "warning", "background_event"):
        text, nb = truncate(str_or_none(p.get("message")) or str_or_none(p.get("text")))
        st.add({**base, "kind": "other", "line_type": lt, "text": text, "text_bytes": nb}, r.ts)
        return pending_request
    if et == "token_count":
        info = p.get("info") if isinstance(p.get("info"), dict) else {}
        last = info.get("last_token_usage") if isinstance(info.get("last_token_usage"), dict) else None
        st.add({**base, "kind": "other", "line_type": lt}, r.ts)
        if last is not None and pending_request is not None:
            row = st.rows[pending_request]
            row["input_tokens"] = int_or_none(last.get("input_tokens"), integral_float=True)
            row["output_tokens"] = int_or_none(last.get("output_tokens"), integral_float=True)
            return None
        return pending_request
    if et in ("mcp_tool_call_begin", "mcp_tool_call_end"):
        call_id = str_or_none(p.get("call_id"))
        inv = p.get("invocation") if isinstance(p.get("invocation"), dict) else {}
        server, tool = str_or_none(inv.get("server")), str_or_none(inv.get("tool"))
        args = inv.get("arguments") if "arguments" in inv else None
        if "arguments" in inv and (args is None or isinstance(args, (dict, list))):
            args_key = canonical_args(args)
        else:
            args_key = None  # not logged, or not an arguments object
        tool_raw = f"mcp__{server}__{tool}" if server and tool else tool
        base = {**base, "line_type": lt, "call_id": call_id, "server": server, "tool": tool,
                "tool_raw": tool_raw}
        ckey = (f.session_id, call_id)
        has_fc = call_id is not None and ckey in fc_ids
        target = st.current.get(ckey) if call_id is not None else None   # the id's latest call before it
        if et == "mcp_tool_call_begin":
            if has_fc:
                i = st.add({**base, "kind": "other"}, r.ts)
            elif _repeat(st, f, r, call_id, {"type": et, "invocation": p.get("invocation")}):
                return pending_request
            else:
                i = target = st.add({**base, "kind": "tool_call", "arguments": args, "args_key": args_key}, r.ts)
                if call_id is not None:
                    _add_call(st, ckey, i)
        else:
            text, images, is_err = _mcp_result(p.get("result"))
            text, nb = truncate(text)
            if has_fc or (call_id is not None and ckey in begin_ids):
                kind = "other" if has_fc else "tool_result"
                i = st.add({**base, "kind": kind, "is_error": is_err, "text": text, "text_bytes": nb,
                            "images": images}, r.ts)
                if kind == "tool_result":
                    target = _answer_target(st, ckey)
                    _answered(st, i, target)
                elif target is not None:
                    st.answered.add(target)
            elif _repeat(st, f, r, call_id, {"type": et, **p}):
                return pending_request
            else:  # no function_call and no begin: the end line is the only record of the call
                dur = _duration_s(p.get("duration"))
                i = target = st.add({**base, "kind": "tool_call", "arguments": args, "args_key": args_key,
                                     "is_error": is_err, "result_text": text, "images": images}, r.ts)
                st.result_ts[i] = r.ts
                if dur is not None and r.ts:
                    st.ts[i] = _minus_seconds(r.ts, dur)
                if call_id is not None:
                    _add_call(st, ckey, i)
                    st.answered.add(i)
        if call_id is not None:
            st.mcp_info.append((i, ckey, target))
        return pending_request
    st.add({**base, "kind": "other", "line_type": lt}, r.ts)
    return pending_request


def _minus_seconds(ts: str, seconds: float) -> str:
    """``ts`` less a logged duration; ``ts`` itself when the duration is not one a start can be
    derived from (negative, or beyond :data:`~replaybook._text.MAX_SHIFT_MS`)."""
    t = before_by_ms(ts, seconds * 1000.0 if isinstance(seconds, (int, float)) else None)
    return ts if t is None else t.isoformat()


def _pair(st: _Load) -> None:
    """Give each call its result and each result its call's tool.  A result (or MCP event) answers
    the call :func:`_answer_target` chose when it was read; one read before any call of its id (an
    unusual order) answers the id's first call.  A call keeps the first result that answers it."""
    rows = st.rows

    def call_of(ck: tuple[str, Any], ci: int | None) -> int | None:
        if ci is None and ck[1] is not None and st.calls.get(ck):
            return st.calls[ck][0]
        return ci

    events: dict[int, list[int]] = {}      # call row → its MCP event rows, file order
    for j, ck, ci in st.mcp_info:
        ci = call_of(ck, ci)
        if ci is not None:
            events.setdefault(ci, []).append(j)
    result_call = {i: call_of((rows[i]["transcript_id"], rows[i].get("call_id")), st.result_call.get(i))
                   for i in st.results}
    done: set[int] = set()
    for i in st.results:
        r = rows[i]
        ci = result_call[i]
        if ci is None:
            if i in st.outputs:  # its call's line is missing: read by its shape alone
                _orphan_output(r, st.outputs[i])
            continue
        call = rows[ci]
        if i in st.outputs and (call.get("server") is not None or ci in events):
            got = _mcp_output(st.outputs[i])   # an MCP call's output: the result Codex wrote as JSON
            if got is not None:
                text, r["images"], r["is_error"] = got
                r["text"], r["text_bytes"] = truncate(text)
        elif i in st.outputs and call.get("tool") in EXEC_OUTPUT_TOOLS:
            ex = exec_output(st.outputs[i])    # a command's output: its text and exit code
            if ex is not None:
                text, r["is_error"], code = ex
                r["text"], r["text_bytes"] = truncate(_exec_text(text, code))
        if r.get("tool") is None:
            r["tool_raw"], r["server"], r["tool"] = call.get("tool_raw"), call.get("server"), call.get("tool")
        if ci in done:
            continue
        done.add(ci)
        st.result_ts[ci] = st.ts[i]
        call["is_error"] = r.get("is_error")
        call["result_text"] = r.get("text")
        call["images"] = r.get("images")
    # MCP events: authoritative server/tool; fill result facts the function_call_output lacks
    for ci, idxs in events.items():
        call = rows[ci]
        for j in idxs:
            ev = rows[j]
            if j == ci:
                continue
            if ev.get("server") and ev.get("tool") and call["line_type"].endswith("function_call"):
                call["server"], call["tool"] = ev["server"], ev["tool"]
            if ev["line_type"].endswith("mcp_tool_call_end"):
                if call.get("is_error") is None and ev.get("is_error") is not None:
                    call["is_error"] = ev["is_error"]
                if call.get("result_text") is None and ev.get("text") is not None:
                    call["result_text"] = ev["text"]
                if not call.get("images") and ev.get("images"):
                    call["images"] = ev["images"]
                if st.result_ts[ci] is None:
                    st.result_ts[ci] = st.ts[j]
    for i in st.results:  # results inherit the (possibly corrected) names
        ci = result_call[i]
        if ci is not None:
            rows[i]["tool_raw"], rows[i]["server"], rows[i]["tool"] = (rows[ci]["tool_raw"], rows[ci]["server"],
                                                                       rows[ci]["tool"])


def _orphan_output(r: dict, out: Any) -> None:
    """Read the output of a result whose call's line is missing (damaged and set aside, a file cut
    before it) by its shape, since its tool is unknown: a whole MCP ``CallToolResult`` object
    (``{"content": [blocks], "isError"?, "structuredContent"?}``, as JSON text) gives its text
    blocks and ``isError`` (:func:`_call_tool_result`); a command's ``{"output", "metadata"}``
    payload its output and exit code (:func:`exec_output`).  Any other output stays as written
    (a bare content list or plain text could be any tool's)."""
    obj = out
    if isinstance(out, str) and out.lstrip()[:1] == "{":
        try:
            obj = _json.loads(out)
        except orjson.JSONDecodeError:
            return
    if not isinstance(obj, dict):
        return
    if isinstance(obj.get("content"), list) and set(obj) <= {"content", "isError", "structuredContent", "_meta"}:
        got = _call_tool_result(obj)
        if got is not None:
            text, r["images"], r["is_error"] = got
            r["text"], r["text_bytes"] = truncate(text)
        return
    ex = exec_output(obj)
    if ex is not None:
        text, r["is_error"], code = ex
        r["text"], r["text_bytes"] = truncate(_exec_text(text, code))


def is_prompt_history(sample: bytes) -> bool:
    """Whether a file's first lines are Codex CLI's prompt history (``~/.codex/history.jsonl``,
    codex-rs ``message_history``: ``{session_id | conversation_id, ts, text}`` a line — each
    prompt's text alone, no tool calls), every one of them.  Not a transcript: ``load`` says
    what it is and where the rollouts are."""
    lines = [x for x in sample.split(b"\n")[:50] if x.strip()]
    if not lines:
        return False
    for raw in lines:
        try:
            o = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return False
        if not (isinstance(o, dict) and isinstance(o.get("text"), str) and isinstance(o.get("ts"), int)
                and isinstance(o.get("session_id", o.get("conversation_id")), str)):
            return False
    return True


def load_codex(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load Codex CLI rollouts (all three generations) into the ``steps`` frame.

    Args:
        paths: rollout files and/or folders (e.g. ``~/.codex/sessions/``); folders are walked
            recursively (sorted) for ``rollout-*`` files ending ``.jsonl``, ``.json`` (or ``.gz``) —
            never ``auth.json``, ``config.toml``, ``history.jsonl`` and other files of ``~/.codex``;
            a file named explicitly is always read.  Gzip is recognised by magic bytes.

    Returns:
        :class:`~replaybook.frames.LoadResult`: ``frame`` with exactly the
        :data:`~replaybook.frames.STEPS` columns (file order; ``seq`` 0-based per transcript;
        ``ts``/``result_ts`` tz-aware UTC, NaT where absent), ``quarantine`` (``invalid`` /
        ``pending`` lines, ``conflict`` tool calls: another call under an id whose call is not
        answered yet), and ``inputs`` with one dict per file:
        ``path``, ``sha256``, ``bytes``, ``lines``, ``format``, ``generation`` (``envelope-jsonl``, ``legacy-jsonl``,
        ``typescript-json`` …), ``replayed`` (lines skipped as a parent's replayed history, or as
        a copy of a rollout loaded earlier), ``duplicates`` (lines and tool calls written twice,
        counted once), ``parent`` (when declared) and ``notes``.

    Raises:
        InputError: a path does not exist, or a file cannot be read (permission, corrupt gzip).
    """
    quarantine: list[dict] = []
    files = [_read_file(p, quarantine) for p in expand_paths(paths, accept=_rollout_name)]
    _mark_replay(files)
    fc_ids: set[tuple[str, str]] = set()      # (session, call_id) of function_call items
    begin_ids: set[tuple[str, str]] = set()   # (session, call_id) of mcp_tool_call_begin events
    for f in files:
        odd_ids: list[tuple[int, Any]] = []   # (line, call_id) written but not text
        for idx, r in enumerate(f.recs):
            if idx in f.skip_set or not isinstance(r.payload, dict):
                continue
            p = r.payload
            if p.get("call_id") is not None and not isinstance(p.get("call_id"), str):
                odd_ids.append((r.line_no, p["call_id"]))
            if r.rtype == "response_item" and p.get("type") == "function_call" and str_or_none(p.get("call_id")):
                fc_ids.add((f.session_id, p["call_id"]))
            if r.rtype == "event_msg" and p.get("type") == "mcp_tool_call_begin" and str_or_none(p.get("call_id")):
                begin_ids.add((f.session_id, p["call_id"]))
        if odd_ids:  # (a call and its result read with no call id are not paired: said, not silent)
            f.info.setdefault("notes", []).append(lines_note(
                odd_ids, "line", "with a call_id that is not text, kept with no call id, so call and result are not "
                                 "paired"))
    st = _Load()
    for f in files:
        _build_file(st, f, fc_ids, begin_ids)
    quarantine.extend(st.quarantine)
    _pair(st)
    frame = STEPS.build(st.rows)
    inputs = [f.info for f in files]
    if len(frame):
        frame["ts"] = to_utc(st.ts).array
        frame["result_ts"] = to_utc(st.result_ts).array
        note_unreadable_times(st.ts, frame["ts"], frame["source_file"], frame["line_no"], inputs)
        note_zoneless_times(st.ts, frame["ts"], frame["source_file"], frame["line_no"], inputs, writer="Codex")
    return LoadResult(frame=frame, quarantine=QUARANTINE.build(quarantine), inputs=inputs)


register(Source(
    name=LOADER,
    frame="steps",
    sniff=sniff,
    load=load_codex,
    doc="OpenAI Codex CLI rollouts from ~/.codex/sessions/: envelope JSONL ({timestamp,type,payload}, "
        "codex-rs RolloutLine), un-enveloped legacy JSONL, and TypeScript-CLI rollout JSON",
))
