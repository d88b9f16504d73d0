"""Gemini CLI chat recordings → the ``steps`` frame.

Format origin
-------------
Google's Gemini CLI (``google-gemini/gemini-cli``, ``packages/core/src/services/
chatRecordingService.ts`` and ``chatRecordingTypes.ts``) records each session under
``~/.gemini/tmp/<project-hash>/chats/``.  Three shapes are read, recognised by content:

1. **JSONL** (current, ``session-<time>-<id8>.jsonl``; sub-agents in ``chats/<parent>/<id>.jsonl``):
   append-only records — the metadata record ``{sessionId, projectHash, startTime, lastUpdated,
   kind?, directories?}``; message records ``{id, timestamp, type: user|gemini|info|error|warning,
   content, toolCalls?, thoughts?, tokens?, model?}``, re-appended whole whenever they change
   (tool calls added, tokens recorded, results masked); ``{"$set": {…}}`` metadata updates
   (``$set.messages`` replaces the message list); ``{"$rewindTo": <id>}``.
2. **ConversationRecord JSON** (older, ``session-*.json``): one document ``{sessionId,
   projectHash, startTime, lastUpdated, messages: [<message record>, …], summary?}``.
3. **Checkpoint / history JSON** (``/chat save`` checkpoints): a list of ``Content``
   ``{role: user|model, parts: [{text} | {functionCall: {id?, name, args}} |
   {functionResponse: {id?, name, response}}]}`` (or ``{"history": [...]}``).  No timestamps.

``ToolCallRecord``: ``{id, name, args, result (PartListUnion), status (success|error|cancelled|…),
timestamp, displayName, description, resultDisplay}``.

The frame
---------
:func:`load_gemini` returns a :class:`~replaybook.frames.LoadResult` whose ``frame`` has exactly the
:data:`~replaybook.frames.STEPS` columns, ``client`` ``"gemini"``:

==============  ===========================================================================
kind            from
==============  ===========================================================================
user_prompt     a ``user`` message (checkpoints: a ``user`` Content with text parts)
model_request   a ``gemini`` message (``model``, ``tokens.input``/``tokens.output``; text parts
                only, never ``thought`` parts); checkpoints: a ``model`` Content
tool_call       one per ``toolCalls[]`` entry of a ``gemini`` message (it carries its own
                result: no separate tool_result row); checkpoints: one per ``functionCall``
tool_result     checkpoints only: one per ``functionResponse`` part (paired by ``id``, else by
                name in order)
system          the metadata record (once per session), ``info``/``error``/``warning`` messages
other           message records of other types
==============  ===========================================================================

Decisions
---------
* **Upserts — the last version of an id wins.**  Message records are keyed by
  ``(sessionId, id)`` across every file of the load (a session resumed from ``.json`` into
  ``.jsonl`` re-appends the same ids).  A message's row sits at its *first* appearance (load
  order — the order Gemini CLI itself keeps) and carries the *last* version's content, file and
  line; superseded versions become no row and are counted in ``inputs[i]["superseded"]``.
  ``$set.messages`` entries are upserts too.
* **Rewinds are kept.**  Messages removed by ``$rewindTo`` were still said and their tool calls
  still ran, so their rows stay; ``inputs[i]["rewinds"]`` lists the ids rewound to.
  ``$set`` records are counted in ``inputs[i]["metadata_updates"]`` (not rows).
* ``transcript_id`` / ``client_session_id``: ``sessionId`` (checkpoints: the file stem).
  ``agent_id``: the ``sessionId`` of a ``kind: "subagent"`` recording; NA for the main agent.
  A sub-agent recording sits in ``chats/<parent sessionId>/``: its ``client_session_id`` is that
  parent's id, as a Claude Code sub-agent's lines carry their parent's ``sessionId``.  A Gemini
  CLI sub-agent runs in the parent's process and calls MCP tools through the parent's
  connections, so its door calls are in the parent's door session, and the join counts its
  steps as the parent's conversation (:func:`replaybook.join.sub_agent_parents`).
  ``message_id``: the message ``id``; ``call_id``: the ``ToolCallRecord.id`` / ``functionCall.id``.
* ``arguments``: ``args`` as recorded (an object); ``args_key`` its canonical JSON.  ``args``
  given as JSON text is parsed first; other text keeps ``args_key`` NA and goes to ``text``,
  with a note in ``inputs[i]["notes"]``.
* ``input_tokens`` / ``output_tokens``: ``tokens.input`` / ``tokens.output`` (``TokensSummary``)
  written as an integer, an integral number (``40.0``) or its decimal digits as text (``"10"``:
  read as 10); any other value (``5.5``, ``"ten"``, ``true``, one past a 64-bit integer), or a
  ``tokens`` that is not an object, is NA with a note in ``inputs[i]["notes"]`` naming the line
  (``line 5: message m4 tokens.output is not a whole number (5.5): output_tokens left NA``).
* **Tool call times.**  The format records no start time: a ``ToolCallRecord.timestamp`` is
  written when the call *completed* (gemini-cli ``recordCompletedToolCalls``, after the tool
  answered), while the door logs when the call started — so a call longer than the join window
  would meet no door call.  What the record's message holds is earlier times: its own
  ``timestamp`` (when the model's answer was recorded, before the calls it asked for ran — or,
  for a message gemini-cli created to hold the calls, when they were recorded), its
  ``thoughts[].timestamp`` (as the answer streamed in) and the ``timestamp`` of calls recorded in
  it before (a later tool-only answer is appended to the same message).  ``ts`` is the latest of
  these at least :data:`SAME_BATCH_S` (1 s) before the call's own ``timestamp`` — the nearest time
  known before the call started (the model's answer; as for Claude Code, before any wait for the
  user to approve it) — else the call's own ``timestamp`` (a message created as its calls were
  recorded, after a prompt, holds nothing earlier).  ``result_ts`` is the call's own
  ``timestamp`` (its completion) when a result is present.  A call whose ``timestamp`` is
  missing, or written empty or not text (``null``, a number), takes the message's time for both,
  which the file's ``inputs`` notes say for the latter (``1 tool call with a timestamp that is
  empty or not text, read as the message's time: line 4 (null)``).  ``is_error``:
  ``status`` ``error``/``cancelled`` → True, ``success`` → False, else NA.
* MCP names (:func:`split_gemini_name`): ``displayName`` ``"<tool> (<server> MCP Server)"`` is
  authoritative; else what a ``displayName`` said for the same name elsewhere in the load (a
  record written before Gemini CLI added it, a checkpoint's ``functionCall``); else
  ``mcp_<server>_<tool>`` (split at the first ``_`` after ``mcp_``, as Gemini CLI's own
  ``parseMcpToolName``: wrong for a server name holding ``_``, which only a ``displayName``
  tells) or the older ``<server>__<tool>``; else a built-in (server NA).

Timestamps are tz-aware UTC; NaT where a record has none, or one that cannot be read — no
date-time (``"not a time"``), or written empty or not text (a number, ``null``): the row is kept
with the time unknown and the file's ``inputs`` notes name the lines and what they held, as for
Claude Code and Codex transcripts.  Lines that are not JSON or not objects go to the quarantine with
file, line and byte offset, and so does a message record without a string ``id`` (a number, none:
no upsert can key it; in JSONL, in ``$set.messages`` and in a ConversationRecord document alike —
its content and tool calls are in the row's ``raw``, not in the frame) (an unterminated last line: ``pending``); a JSON document that does
not parse is one quarantine row with the parser's line, unless raw control characters (a NUL
byte, an unescaped tab in a string) are all that is wrong: then each message or Content item
holding one is a quarantine row (its index, line, byte offset and the character's byte offset)
and the others are read.  Files are opened read-only.

Raises :class:`~replaybook.errors.InputError` for a missing path or an unreadable file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import orjson
import pandas as pd

from .. import _json
from .._jsonl import (Damaged, control_repair, expand_paths, iter_objects, json_doc_items, line_scores, name_stem,
                      note_non_text_times, note_unreadable_times, note_zoneless_times, quarantine_row, read_source,
                      shown_value)
from .._text import deep_safe, needs_safe, safe_str, str_or_none, to_utc, truncate
from ..canonical import arguments_from_text, canonical_args
from ..frames import QUARANTINE, STEPS, LoadResult
from .registry import Source, register

__all__ = ["load_gemini", "sniff", "split_gemini_name", "LOADER", "CLIENT"]

#: Source name in the registry and ``quarantine.loader``.
LOADER = "gemini"
#: Value of ``steps.client``.
CLIENT = "gemini"

_MSG_TYPES = ("user", "gemini", "info", "error", "warning")
_DISPLAY = re.compile(r"^(?P<tool>.+) \((?P<server>.+) MCP Server\)$")


def split_gemini_name(name: Any, display_name: Any = None,
                      known: dict[str, tuple[str, str]] | None = None) -> tuple[str | None, Any]:
    """Split a Gemini CLI tool name into ``(server, tool)``.

    ``known`` maps tool names to the ``(server, tool)`` a ``displayName`` gave them (see
    :func:`load_gemini`); it is used when ``display_name`` says nothing.

    >>> split_gemini_name("mcp_door_read_object")
    ('door', 'read_object')
    >>> split_gemini_name("read_object", "read_object (door MCP Server)")
    ('door', 'read_object')
    >>> split_gemini_name("mcp_my_srv_list", known={"mcp_my_srv_list": ("my_srv", "list")})
    ('my_srv', 'list')
    >>> split_gemini_name("door__read_object")
    ('door', 'read_object')
    >>> split_gemini_name("read_file")
    (None, 'read_file')
    """
    if isinstance(display_name, str):
        m = _DISPLAY.match(display_name)
        if m:
            return m.group("server"), m.group("tool")
    if not isinstance(name, str):
        return None, name
    if known and name in known:
        return known[name]
    if name.startswith("mcp_"):
        m = re.match(r"^([^_]+)_(.+)$", name[4:])
        if m:
            return m.group(1), m.group(2)
    server, sep, tool = name.partition("__")
    if sep and server and tool:
        return server, tool
    return None, name


# --------------------------------------------------------------------------- sniffing

def _rec_score(o: Any) -> float:
    if not isinstance(o, dict):
        return 0.0
    if any(k in o for k in ("uuid", "parentUuid", "payload", "message", "resourceSpans")):
        return 0.0
    if isinstance(o.get("sessionId"), str) and isinstance(o.get("projectHash"), str):
        return 1.0
    if isinstance(o.get("id"), str) and o.get("type") in _MSG_TYPES and "content" in o \
            and isinstance(o.get("timestamp"), str):
        return 0.9
    if isinstance(o.get("$set"), dict) and len(o) == 1:
        return 0.6
    if isinstance(o.get("$rewindTo"), str) and len(o) == 1:
        return 0.6
    return 0.0


def _content_list_score(v: Any) -> float:
    if not isinstance(v, list) or not v:
        return 0.0
    good = sum(1 for c in v[:50] if isinstance(c, dict) and c.get("role") in ("user", "model")
               and isinstance(c.get("parts"), list))
    return 0.8 * good / min(len(v), 50)


_FRAG_SESSION = re.compile(rb'"sessionId"\s*:\s*"')
#: the head of a checkpoint (a ``Content`` list, bare or as ``{"history": […]}``) as JSON.stringify
#: writes it: ``[{"role": "user", "parts": [`` — a first message (a file pasted with ``@``) may be
#: longer than the whole sample, so no ``model`` turn is in sight
_FRAG_CONTENT_HEAD = re.compile(rb'(\{\s*"history"\s*:\s*)?\[\s*\{\s*"role"\s*:\s*"(user|model)"\s*,\s*"parts"\s*:\s*\[')
_FRAG_PROJECT = re.compile(rb'"projectHash"\s*:\s*"')


def sniff(sample: bytes) -> float:
    """Confidence in [0, 1] that ``sample`` (a file's first bytes) is a Gemini CLI recording.

    JSONL: up to 200 records (metadata, message, ``$set``, ``$rewindTo``); a JSON document is
    parsed when whole, else judged by its visible keys (a checkpoint cut inside its first message:
    by its head, ``[{"role": …, "parts": [``).  ≥ 0.9 with a metadata record or a
    ``sessionId``+``projectHash`` document, 0.6–0.8 for message-only files and checkpoints,
    0 for Claude Code, Codex, OTLP and door files.
    """
    stripped = sample.strip()
    first = stripped.split(b"\n", 1)[0].strip()
    if stripped[:1] in (b"{", b"[") and (first in (b"{", b"[") or b"\n" not in stripped):
        try:
            doc = _json.loads(stripped)
        except orjson.JSONDecodeError:
            doc = None
        if isinstance(doc, dict):
            if isinstance(doc.get("sessionId"), str) and isinstance(doc.get("messages"), list):
                return 0.9 if isinstance(doc.get("projectHash"), str) else 0.6
            if isinstance(doc.get("history"), list):
                return _content_list_score(doc["history"])
            if b"\n" not in stripped:
                return _rec_score(doc)
            return 0.0
        if isinstance(doc, list):
            return _content_list_score(doc)
        if first in (b"{", b"["):  # cut document: visible keys
            if _FRAG_SESSION.search(sample) and _FRAG_PROJECT.search(sample) and b'"messages"' in sample:
                return 0.85
            if re.search(rb'"role"\s*:\s*"model"', sample) and b'"parts"' in sample:
                return 0.6
            return 0.6 if _FRAG_CONTENT_HEAD.match(stripped) else 0.0  # (a first message filling the sample)
        if doc is None and _FRAG_CONTENT_HEAD.match(stripped):  # the same, written on one line
            return 0.6
    scores = line_scores(sample, _rec_score)
    if not scores:
        return 0.0
    mean = sum(scores) / len(scores)
    if max(scores) >= 1.0:
        return round(min(0.98, 0.6 + 0.4 * mean), 3)
    if max(scores) >= 0.9:
        return round(min(0.85, 0.3 + 0.5 * mean), 3)
    return round(min(0.3, mean), 3)


# --------------------------------------------------------------------------- helpers

def _parts_text(content: Any) -> tuple[str | None, int]:
    """Text of a ``PartListUnion`` (string, part, or list of parts/strings) and its media count.

    ``thought`` parts are left out; ``inlineData``/``fileData`` parts count as images.
    """
    if isinstance(content, str):
        return content, 0
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return None, 0
    texts: list[str] = []
    media = 0
    for p in content:
        if isinstance(p, str):
            texts.append(p)
        elif isinstance(p, dict):
            if isinstance(p.get("text"), str) and not p.get("thought"):
                texts.append(p["text"])
            elif "inlineData" in p or "fileData" in p:
                media += 1
    return ("\n".join(texts) if texts else None), media


def _result_text(result: Any, display: Any = None) -> str | None:
    """Text of a tool call's ``result`` parts: ``functionResponse.response`` output/error, text parts."""
    texts: list[str] = []
    items = result if isinstance(result, list) else ([result] if result is not None else [])
    for p in items:
        if isinstance(p, str):
            texts.append(p)
        elif isinstance(p, dict):
            fr = p.get("functionResponse")
            if isinstance(fr, dict):
                resp = fr.get("response")
                if isinstance(resp, dict):
                    for k in ("output", "error", "content", "llmContent"):
                        v = resp.get(k)
                        if isinstance(v, str):
                            texts.append(v)
                            break
                    else:
                        texts.append(_json.dumps(resp).decode())
                elif isinstance(resp, str):
                    texts.append(resp)
            elif isinstance(p.get("text"), str):
                texts.append(p["text"])
    if texts:
        return "\n".join(texts)
    return display if isinstance(display, str) and display else None


# --------------------------------------------------------------------------- loading

@dataclass
class _Msg:
    order: int
    session: str
    rec: dict
    file_idx: int
    line_no: int | None


@dataclass
class _Content:
    """One checkpoint Content item."""

    session: str
    item: Any
    file_idx: int
    line_no: int | None
    order: int


class _State:
    def __init__(self) -> None:
        self.msgs: dict[tuple[str, str], _Msg] = {}
        self.versions: dict[tuple[str, str], list[int]] = {}   # key → file indexes of every version
        self.meta: dict[str, tuple[int, int | None, dict, int]] = {}  # session → (file, line, meta, order)
        self.kind: dict[str, str] = {}
        self.contents: list[_Content] = []
        self.others: list[tuple[int, str, dict, int, int | None]] = []  # (order, session, rec, file, line)
        self.order = 0
        self.seen_bytes: dict[str, str] = {}  # SHA-256 of a file read → its path (a copy is not read again)

    def next(self) -> int:
        self.order += 1
        return self.order

    def upsert(self, session: str, rec: dict, file_idx: int, line_no: int | None) -> None:
        key = (session, rec["id"])
        old = self.msgs.get(key)
        order = old.order if old is not None else self.next()
        self.msgs[key] = _Msg(order, session, rec, file_idx, line_no)
        self.versions.setdefault(key, []).append(file_idx)

    def set_meta(self, session: str, meta: dict, file_idx: int, line_no: int | None) -> None:
        if meta.get("kind") in ("main", "subagent"):
            self.kind[session] = meta["kind"]
        if session not in self.meta:
            self.meta[session] = (file_idx, line_no, meta, self.next())


def _recording_name(path: Path) -> bool:
    """Folder walks read chat recordings only: ``session-*``, ``checkpoint-*``, and sub-agent
    recordings under a ``chats/`` folder, ending ``.jsonl``/``.json`` (or ``.gz``) — never
    ``settings.json``, ``oauth_creds.json``, ``logs.json`` or other files of ``~/.gemini``."""
    name = path.name.lower()
    return name.endswith((".jsonl", ".json", ".jsonl.gz", ".json.gz")) and (
        path.name.startswith(("session-", "checkpoint-")) or (
            name.endswith((".jsonl", ".jsonl.gz")) and "chats" in path.parts[:-1]))


def _stem(path: Path) -> str:
    return name_stem(path, (".jsonl.gz", ".json.gz", ".jsonl", ".json"))


def _parent_session(path: Path, session: str) -> str | None:
    """The parent session of a sub-agent recording: Gemini CLI writes it to
    ``chats/<parent sessionId>/<sessionId>.jsonl`` (the parent's id as the folder's name)."""
    parent = path.parent
    if parent.parent.name == "chats" and parent.name and parent.name != session:
        return parent.name
    return None


def _read(path: Path, file_idx: int, st: _State, quarantine: list[dict]) -> dict:
    data, info = read_source(path, LOADER, "Gemini CLI recording")
    info.update(layout=None, superseded=0, rewinds=[], metadata_updates=0, notes=info.get("notes", []))
    # a byte-for-byte copy of a recording read before (a backup, the same file named twice) is
    # not read again: read as a later version of the same session, it would supersede every
    # message of the first and then be left out as a copy, and the session lost both
    earlier = st.seen_bytes.get(info.get("sha256")) if info.get("sha256") and data else None
    if earlier is not None:
        info.update(skipped=True, same_as=earlier)
        return info
    if info.get("sha256") and data:
        st.seen_bytes[info["sha256"]] = str(path)
    stripped = data.strip()
    first = stripped.split(b"\n", 1)[0].strip()
    doc = None
    if stripped[:1] in (b"{", b"["):
        try:
            doc = _json.loads(stripped)   # one document (pretty or not); JSON Lines fail at line 2
        except orjson.JSONDecodeError:
            doc = None
    is_doc = isinstance(doc, list) or (isinstance(doc, dict) and (
        isinstance(doc.get("messages"), list) or isinstance(doc.get("history"), list)))
    if is_doc or (doc is None and first in (b"{", b"[")):
        info["layout"] = "json"
        _read_doc(path, data, file_idx, st, quarantine, info)
        return info
    info["layout"] = "jsonl"
    session = None
    for line in iter_objects(path, data, LOADER, quarantine, accept=_is_record):
        o = line.obj
        if needs_safe(line.raw):
            o = deep_safe(o)
        if isinstance(o.get("$rewindTo"), str):
            info["rewinds"].append(o["$rewindTo"])
            continue
        if isinstance(o.get("$set"), dict):
            info["metadata_updates"] += 1
            s = o["$set"]
            if isinstance(s.get("sessionId"), str):
                session = session or s["sessionId"]
            if isinstance(s.get("kind"), str) and session:
                st.kind[session] = s["kind"]
            if isinstance(s.get("messages"), list):
                for i, m in enumerate(s["messages"]):
                    if isinstance(m, dict) and isinstance(m.get("id"), str):
                        st.upsert(session or _stem(path), m, file_idx, line.line_no)
                    else:
                        quarantine.append(quarantine_row(path, None, LOADER, f"message without a string id "
                                                         f"($set.messages[{i}])", line_no=line.line_no,
                                                         offset=line.offset, raw=_json.dumps(m)[:400]))
            continue
        if isinstance(o.get("sessionId"), str) and not isinstance(o.get("id"), str):
            session = session or o["sessionId"]
            st.set_meta(o["sessionId"], o, file_idx, line.line_no)
            continue
        if isinstance(o.get("id"), str):
            st.upsert(session or _stem(path), o, file_idx, line.line_no)
            continue
        if _is_message(o):  # (as the ConversationRecord reader: no id, no upsert, no row)
            quarantine.append(quarantine_row(path, line, LOADER, "message without a string id"))
            continue
        st.others.append((st.next(), session or _stem(path), o, file_idx, line.line_no))
    return info


def _is_message(o: dict) -> bool:
    """A message record by its fields (an ``id``, a message ``type``, ``content`` or ``toolCalls``),
    whatever its ``id`` holds: one without a string id cannot be keyed for the upserts (the last
    version of an id wins) and is quarantined, in JSONL as in a ConversationRecord document."""
    return "id" in o or o.get("type") in _MSG_TYPES or "content" in o or "toolCalls" in o


def _is_record(o: dict) -> bool:
    """A recording's line — a message record (``id``, ``timestamp``, ``type``), the metadata
    record (``sessionId``, ``projectHash``), ``$set`` or ``$rewindTo`` — not an object nested in
    one (a tool call record has no ``type``; a part none of these): where a line glued to a torn
    one begins (:func:`replaybook._jsonl.split_torn`)."""
    return ("$set" in o or "$rewindTo" in o or ("sessionId" in o and "projectHash" in o)
            or (o.get("type").__class__ is str and "id" in o and "timestamp" in o))


def _read_doc(path: Path, data: bytes, file_idx: int, st: _State, quarantine: list[dict], info: dict) -> None:
    rep = None
    try:
        doc = _json.loads(data)
    except orjson.JSONDecodeError:
        try:
            doc = _json.loads_lenient(data.decode("utf-8", "replace"))
        except json.JSONDecodeError as exc:
            # valid but for raw control characters (a NUL byte …): read around the elements holding them
            rep = control_repair(data)
            if rep is None:
                quarantine.append(quarantine_row(path, None, LOADER, f"JSON document is not valid JSON: {exc.msg}",
                                                 line_no=exc.lineno, raw=data[:400]))
                return
            doc = rep.doc
    doc = deep_safe(doc)
    text = data.decode("utf-8", "replace")

    def lines(p: tuple, items: list) -> list[int | None]:
        """The lines of ``items`` (the list at ``p``); around raw control characters (``rep``),
        each item is put back as read from its own text, one holding such a character as a
        :class:`~replaybook._jsonl.Damaged`, and such a character outside every item is a
        quarantine row."""
        n = len(items)
        if rep is not None:
            got, outside = rep.elements(p)
            for d in outside:
                quarantine.append(quarantine_row(path, None, LOADER, d.reason(f"{len(got):,} items"),
                                                 line_no=d.line_no, offset=d.offset, raw=d.raw))
            if len(got) == n:
                items[:] = [v if isinstance(v, Damaged) else deep_safe(v) for _ln, _off, v in got]
            return [ln for ln, _off, _v in got] if len(got) == n else [None] * n
        try:
            got = [ln for ln, _o, _v in json_doc_items(text, p)]
        except ValueError:
            got = []
        return got if len(got) == n else [None] * n

    def damaged(ln: int | None, v: Any) -> bool:
        if isinstance(v, Damaged):
            quarantine.append(quarantine_row(path, None, LOADER, v.reason(f"item {v.index + 1}"), line_no=ln,
                                             offset=v.offset, raw=v.raw))
            return True
        return False

    if isinstance(doc, dict) and isinstance(doc.get("messages"), list) and \
            not any(isinstance(m, dict) and "parts" in m and "id" not in m for m in doc["messages"][:5]):
        session = str_or_none(doc.get("sessionId")) or _stem(path)
        st.set_meta(session, {k: v for k, v in doc.items() if k != "messages"}, file_idx, 1)
        msgs = doc["messages"]
        for ln, m in zip(lines(("messages", "*"), msgs), msgs):
            if damaged(ln, m):
                continue
            if isinstance(m, dict) and isinstance(m.get("id"), str):
                st.upsert(session, m, file_idx, ln)
            else:
                quarantine.append(quarantine_row(path, None, LOADER, "message without a string id", line_no=ln,
                                                 raw=_json.dumps(m)[:400]))
        return
    if isinstance(doc, dict):
        key = "history" if isinstance(doc.get("history"), list) else (
            "messages" if isinstance(doc.get("messages"), list) else None)
        items, p = (doc[key], (key, "*")) if key else (None, None)
    elif isinstance(doc, list):
        items, p = doc, ("*",)
    else:
        items, p = None, None
    if items is None:
        quarantine.append(quarantine_row(path, None, LOADER, "JSON document is neither a conversation record "
                                         "(sessionId, messages) nor a Content list", line_no=1, raw=data[:400]))
        return
    session = _stem(path)
    for ln, c in zip(lines(p, items), items):
        if damaged(ln, c):
            continue
        if not isinstance(c, dict) or not isinstance(c.get("parts"), list):
            quarantine.append(quarantine_row(path, None, LOADER, "Content item without parts", line_no=ln,
                                             raw=_json.dumps(c)[:400]))
            continue
        st.contents.append(_Content(session, c, file_idx, ln, st.next()))


def _args(args: Any, line_no: int | None, notes: list[str]) -> tuple[Any, str | None, dict]:
    """``(arguments, args_key, {text, text_bytes} or {})`` of a tool call's ``args``.

    Gemini CLI writes ``args`` as an object (``FunctionCall.args``); a JSON *string* (a record
    another program wrote) is parsed as Codex's and OTel's arguments are, so the same call gets
    the same key; text that is not JSON, or a number, keeps ``args_key`` NA, the text in ``text``
    and a note."""
    if args is None or isinstance(args, (dict, list)):
        return args, canonical_args(args), {}
    if isinstance(args, str):
        try:
            obj = arguments_from_text(args)
        except ValueError:
            obj = _NOT_JSON
        if obj is not _NOT_JSON:
            return obj, canonical_args(obj), {}
    raw = args if isinstance(args, str) else _json.dumps(args).decode()
    notes.append(f"line {line_no}: tool call args are not a JSON object or JSON text; kept as text, args_key "
                 "left NA")
    text, nb = truncate(raw)
    return None, None, {"text": text, "text_bytes": nb}


_NOT_JSON = object()

_INT_TEXT = re.compile(r"[+-]?[0-9]+")


def _tokens(rec: dict, line_no: int | None, notes: list[str]) -> tuple[int | None, int | None]:
    """``(input_tokens, output_tokens)`` of a ``gemini`` message's ``tokens`` (``TokensSummary``:
    ``{input, output, cached, thoughts, tool, total}``, whole numbers).  A count written as an
    integer, an integral number (``40.0``) or its decimal digits as text (``"10"``, blanks around
    them allowed) is read; any other value (``5.5``, ``"ten"``, ``true``, one past a 64-bit
    integer) is NA with a note naming the line, and so are both when ``tokens`` is not an object.
    Absent or ``null``: NA, no note."""
    tok = rec.get("tokens")
    if tok is None:
        return None, None
    if not isinstance(tok, dict):
        notes.append(f"line {line_no}: message {rec['id']} tokens is not an object ({shown_value(tok)}): "
                     "input_tokens and output_tokens left NA")
        return None, None
    out: list[int | None] = []
    for key in ("input", "output"):
        n, what = _whole_number(tok.get(key))
        if what is not None:
            notes.append(f"line {line_no}: message {rec['id']} tokens.{key} {what} ({shown_value(tok.get(key))}): "
                         f"{key}_tokens left NA")
        out.append(n)
    return out[0], out[1]


_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def _whole_number(v: Any) -> tuple[int | None, str | None]:
    """``(number, None)`` for a token count that is an integer, an integral number or its decimal
    digits as text, and that a 64-bit integer holds; ``(None, what is wrong)`` for any other
    value; ``(None, None)`` when absent (as otel.py reads its token counts)."""
    if v is None:
        return None, None
    n = v
    if isinstance(v, str) and v.isascii() and _INT_TEXT.fullmatch(v.strip()):
        try:
            n = int(v)
        except ValueError:  # (more digits than Python converts)
            return None, "is beyond what a 64-bit integer holds"
    elif isinstance(v, float) and v.is_integer():
        n = int(v)
    if isinstance(n, bool) or not isinstance(n, int):
        return None, "is not a whole number"
    if not _I64_MIN <= n <= _I64_MAX:
        return None, "is beyond what a 64-bit integer holds"
    return n, None


def _tool_row(base: dict, tc: dict, msg_ts: str | None, msg_id: str | None,
              known: dict[str, tuple[str, str]], notes: list[str],
              bad_ts: list[tuple[int | None, Any]]) -> tuple[dict, str | None, str | None]:
    """The ``tool_call`` row of a ``ToolCallRecord`` and its ``(ts, result_ts)``.  A ``timestamp``
    written empty or not text (``null``, a number) is added to ``bad_ts`` as ``(line, value)``
    for the note (:func:`~replaybook._jsonl.note_non_text_times`): the message's time stands in."""
    name = str_or_none(tc.get("name"))
    server, tool = split_gemini_name(name, tc.get("displayName"), known)
    args, key, text = _args(tc.get("args"), base["line_no"], notes)
    status = tc.get("status")
    is_err = True if status in ("error", "cancelled") else (False if status == "success" else None)
    rtext = _result_text(tc.get("result"), tc.get("resultDisplay"))
    rtext, _ = truncate(rtext)
    tts = tc.get("timestamp")
    if not (isinstance(tts, str) and tts):
        if "timestamp" in tc:
            bad_ts.append((base["line_no"], tts))
        tts = msg_ts
    has_result = tc.get("result") is not None or status in ("success", "error", "cancelled")
    row = {**base, "kind": "tool_call", "line_type": "gemini/toolCall", "tool_raw": name, "server": server,
           "tool": tool, "call_id": str_or_none(tc.get("id")), "arguments": args, "args_key": key,
           "is_error": is_err, "result_text": rtext, "message_id": msg_id, **text}
    return row, tts, (tts if has_result else None)


#: Calls of one batch are recorded in one pass (their ``timestamp`` a few ms apart); a time the
#: message recorded this much or more before a call's own is from before the call's batch.
SAME_BATCH_S = 1.0


def _recorded_times(rec: dict, calls: Any) -> list[str]:
    """Every time a ``gemini`` message record holds as text: its ``timestamp``, its thoughts'
    (written as the model's answer streamed in) and its tool calls' own (each written when the
    call completed)."""
    out = [rec.get("timestamp")]
    thoughts = rec.get("thoughts")
    out += [t.get("timestamp") for t in thoughts if isinstance(t, dict)] if isinstance(thoughts, list) else []
    out += [tc.get("timestamp") for tc in calls if isinstance(tc, dict)] if isinstance(calls, list) else []
    return [t for t in out if isinstance(t, str) and t]


def _start_times(started: list[tuple[int, str, list[str]]], ts: list) -> None:
    """Set ``ts[row]`` of each tool call to the nearest time before its start its message
    recorded (see the module docstring): the latest of ``recorded`` at least
    :data:`SAME_BATCH_S` before the call's own (completion) time; a call with none, or whose
    own time cannot be read, keeps its own."""
    if not started:
        return
    texts = sorted({t for _, own, recorded in started for t in (own, *recorded)})
    ns = dict(zip(texts, to_utc(texts).array.asi8.tolist()))
    nat = pd.NaT.value
    gap = int(SAME_BATCH_S * 1e9)
    for row, own, recorded in started:
        end = ns[own]
        if end == nat:
            continue
        before = [(ns[t], t) for t in recorded if ns[t] != nat and ns[t] <= end - gap]
        if before:
            ts[row] = max(before)[1]


def _known_names(st: _State) -> dict[str, tuple[str, str]]:
    """``{tool name: (server, tool)}`` from every ``displayName`` of the load that names an MCP
    server; a name two servers claim is left out (nothing decides between them)."""
    seen: dict[str, set[tuple[str, str]]] = {}
    for m in st.msgs.values():
        calls = m.rec.get("toolCalls")
        for tc in calls if isinstance(calls, list) else []:
            if isinstance(tc, dict) and isinstance(tc.get("name"), str) and isinstance(tc.get("displayName"), str):
                d = _DISPLAY.match(tc["displayName"])
                if d:
                    seen.setdefault(tc["name"], set()).add((d.group("server"), d.group("tool")))
    return {n: next(iter(v)) for n, v in seen.items() if len(v) == 1}


def load_gemini(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load Gemini CLI chat recordings (JSONL, ConversationRecord JSON, checkpoints) into ``steps``.

    Args:
        paths: files and/or folders (e.g. ``~/.gemini/tmp/<hash>/``); folders are walked
            recursively (sorted) for ``session-*``/``checkpoint-*`` files and ``*.jsonl`` under a
            ``chats/`` folder, ending ``.jsonl``/``.json`` (or ``.gz``) — see
            :func:`_recording_name`; a file named explicitly is always read.  Gzip by magic bytes.

    Returns:
        :class:`~replaybook.frames.LoadResult`: ``frame`` with exactly the
        :data:`~replaybook.frames.STEPS` columns (first-appearance order; ``seq`` 0-based per
        transcript; ``ts``/``result_ts`` tz-aware UTC, NaT where absent), ``quarantine``, and
        ``inputs`` with one dict per file: ``path``, ``sha256``, ``bytes``, ``lines``, ``format``,
        ``layout`` (``jsonl``/``json``), ``superseded``, ``rewinds``, ``metadata_updates``, ``notes``.

    Raises:
        InputError: a path does not exist, or a file cannot be read (permission, corrupt gzip).
    """
    quarantine: list[dict] = []
    st = _State()
    files = expand_paths(paths, accept=_recording_name)
    inputs = [_read(p, i, st, quarantine) for i, p in enumerate(files)]
    for key, fidx in st.versions.items():
        for fi in fidx[:-1]:
            inputs[fi]["superseded"] += 1

    items: list[tuple[int, str, Any]] = []
    for session, (fi, ln, meta, order) in st.meta.items():
        items.append((order, "meta", (session, fi, ln, meta)))
    for m in st.msgs.values():
        items.append((m.order, "msg", m))
    for c in st.contents:
        items.append((c.order, "content", c))
    for o in st.others:
        items.append((o[0], "other", o))
    items.sort(key=lambda x: x[0])
    known = _known_names(st)

    rows: list[dict] = []
    ts: list[str | None] = []
    rts: list[str | None] = []
    seqs: dict[str, int] = {}

    def add(row: dict, t: str | None, rt: str | None = None) -> int:
        n = seqs.get(row["transcript_id"], 0)
        row["seq"] = n
        seqs[row["transcript_id"]] = n + 1
        rows.append(row)
        ts.append(t)
        rts.append(rt)
        return len(rows) - 1

    def base_for(session: str, fi: int, ln: int | None) -> dict:
        sub = st.kind.get(session) == "subagent"
        return {"transcript_id": session, "client": CLIENT,
                "client_session_id": (_parent_session(files[st.meta[session][0] if session in st.meta else fi],
                                                      session) if sub else None) or session,
                "agent_id": session if sub else None,
                "source_file": str(files[fi]), "line_no": ln}

    bad_times: dict[int, list[tuple[int | None, Any]]] = {}   # file → (line, time) written but not text
    bad_call_times: dict[int, list[tuple[int | None, Any]]] = {}  # the same for tool calls' timestamps

    def time_of(rec: dict, key: str, fi: int, ln: int | None) -> str | None:
        """``rec[key]`` when it is text; one written empty or not text (``null``, a number) is
        noted (:func:`~replaybook._jsonl.note_non_text_times`) and the time is unknown."""
        v = rec.get(key)
        if isinstance(v, str) and v:
            return v
        if key in rec:
            bad_times.setdefault(fi, []).append((ln, v))
        return None

    # checkpoint pairing state, per file
    pending_calls: dict[int, dict[str, list[int]]] = {}
    started: list[tuple[int, str, list[str]]] = []  # (row, own timestamp, its message's recorded times)
    for _order, what, obj in items:
        if what == "meta":
            session, fi, ln, meta = obj
            text, nb = truncate(str_or_none(meta.get("summary")))
            add({**base_for(session, fi, ln), "kind": "system", "line_type": "session", "text": text,
                 "text_bytes": nb}, time_of(meta, "startTime", fi, ln))
        elif what == "msg":
            m: _Msg = obj
            rec = m.rec
            b = base_for(m.session, m.file_idx, m.line_no)
            t = str_or_none(rec.get("type"))
            mts = time_of(rec, "timestamp", m.file_idx, m.line_no)
            text, media = _parts_text(rec.get("content"))
            text, nb = truncate(text)
            if t == "user":
                add({**b, "kind": "user_prompt", "line_type": "user", "text": text, "text_bytes": nb,
                     "images": media, "message_id": rec["id"]}, mts)
            elif t == "gemini":
                it, ot = _tokens(rec, m.line_no, inputs[m.file_idx]["notes"])
                add({**b, "kind": "model_request", "line_type": "gemini", "text": text, "text_bytes": nb,
                     "model": str_or_none(rec.get("model")), "message_id": rec["id"],
                     "input_tokens": it, "output_tokens": ot}, mts)
                calls = rec.get("toolCalls")
                if calls is not None and not isinstance(calls, list):
                    quarantine.append(quarantine_row(files[m.file_idx], None, LOADER,
                                                     f"toolCalls is not a list ({type(calls).__name__}): no tool "
                                                     "call of this message can be read", line_no=m.line_no,
                                                     raw=_json.dumps(calls)[:400]))
                    calls = None
                recorded = _recorded_times(rec, calls)
                for tc in calls or []:
                    if isinstance(tc, dict):
                        row, t1, t2 = _tool_row(b, tc, mts, rec["id"], known, inputs[m.file_idx]["notes"],
                                                bad_call_times.setdefault(m.file_idx, []))
                        i = add(row, t1, t2)
                        own = tc.get("timestamp")
                        if isinstance(own, str) and own:  # its completion: its start is looked for below
                            started.append((i, own, recorded))
            elif t in ("info", "error", "warning"):
                add({**b, "kind": "system", "line_type": t, "text": text, "text_bytes": nb,
                     "message_id": rec["id"]}, mts)
            else:
                add({**b, "kind": "other", "line_type": t, "text": text, "text_bytes": nb,
                     "message_id": rec["id"]}, mts)
        elif what == "other":
            _o, session, rec, fi, ln = obj
            lt = rec.get("type") if isinstance(rec.get("type"), str) else "unknown"
            add({**base_for(session, fi, ln), "kind": "other", "line_type": lt},
                time_of(rec, "timestamp", fi, ln))
        else:
            c: _Content = obj
            b = base_for(c.session, c.file_idx, c.line_no)
            role = c.item.get("role")
            parts = c.item["parts"]
            calls = pending_calls.setdefault(c.file_idx, {})
            text, media = _parts_text([p for p in parts if not (isinstance(p, dict) and (
                "functionCall" in p or "functionResponse" in p))])
            text, nb = truncate(text)
            if role == "model":
                add({**b, "kind": "model_request", "line_type": "model", "text": text, "text_bytes": nb}, None)
                for p in parts:
                    fc = p.get("functionCall") if isinstance(p, dict) else None
                    if isinstance(fc, dict):
                        name = str_or_none(fc.get("name"))
                        server, tool = split_gemini_name(name, None, known)
                        args, key, atext = _args(fc.get("args"), c.line_no, inputs[c.file_idx]["notes"])
                        i = add({**b, "kind": "tool_call", "line_type": "model/functionCall", "tool_raw": name,
                                 "server": server, "tool": tool, "call_id": str_or_none(fc.get("id")),
                                 "arguments": args, "args_key": key, **atext}, None)
                        calls.setdefault(str_or_none(fc.get("id")) or f"name:{name}", []).append(i)
            else:
                responses = [p["functionResponse"] for p in parts if isinstance(p, dict)
                             and isinstance(p.get("functionResponse"), dict)]
                if text is not None or media or not responses:
                    add({**b, "kind": "user_prompt" if role == "user" else "other",
                         "line_type": role if isinstance(role, str) else None, "text": text,
                         "text_bytes": nb, "images": media}, None)
                for fr in responses:
                    name = str_or_none(fr.get("name"))
                    rtext, rnb = truncate(_result_text([{"functionResponse": fr}]))
                    resp = fr.get("response") if isinstance(fr.get("response"), dict) else {}
                    is_err = "error" in resp
                    cid = str_or_none(fr.get("id"))
                    q = calls.get(cid) if cid else None
                    if not q:
                        q = calls.get(f"name:{name}")
                    ci = q.pop(0) if q else None
                    server, tool = split_gemini_name(name, None, known)
                    if ci is not None:
                        call = rows[ci]
                        call.update(is_error=is_err, result_text=rtext)
                        server, tool = call["server"], call["tool"]
                        cid = cid or call["call_id"]
                    add({**b, "kind": "tool_result", "line_type": "user/functionResponse", "tool_raw": name,
                         "server": server, "tool": tool, "call_id": cid, "is_error": is_err, "text": rtext,
                         "text_bytes": rnb}, None)
    _start_times(started, ts)
    for fi, got in bad_times.items():
        note_non_text_times(inputs[fi], got)
    for fi, got in bad_call_times.items():
        note_non_text_times(inputs[fi], got, what="tool call", kept="read as the message's time")
    frame = STEPS.build(rows)
    if len(frame):
        frame["ts"] = to_utc(ts).array
        frame["result_ts"] = to_utc(rts).array
        note_unreadable_times(ts, frame["ts"], frame["source_file"], frame["line_no"], inputs)
        # a call timed from its message keeps its own (completion) time as result_ts: a zone it
        # lacks is said too
        own = [r if r is not None and r != t else None for t, r in zip(ts, rts)]
        note_zoneless_times(ts + own, pd.concat([frame["ts"], frame["result_ts"]], ignore_index=True),
                            [*frame["source_file"], *frame["source_file"]], [*frame["line_no"], *frame["line_no"]],
                            inputs, writer="Gemini CLI")
    return LoadResult(frame=frame, quarantine=QUARANTINE.build(quarantine), inputs=inputs)


register(Source(
    name=LOADER,
    frame="steps",
    sniff=sniff,
    load=load_gemini,
    doc="Gemini CLI chat recordings from ~/.gemini/tmp/<hash>/chats/: append-only session JSONL "
        "(ChatRecordingService), older ConversationRecord JSON, and /chat checkpoints (Content lists)",
))
