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

Timestamps (``ts``, ``result_ts``) are tz-aware UTC; NaT where a line has none, or one that
cannot be read — no date-time (``"not a time"``, month 13), empty, or not text (a number,
``null``): such a line's steps are kept (evidence) with the time unknown, and the file's
``inputs`` entry says which lines and what they held (``notes``), as for Codex and Gemini CLI
transcripts.  A ``tool_result``'s ``is_error`` is a JSON boolean or the string ``"true"`` /
``"false"`` (read as that boolean); absent or ``null``: false; any other value: NA, noted the
same way.  Text is
truncated to :data:`~replaybook._text.TEXT_LIMIT` characters with the full UTF-8 size in
``text_bytes``; lone surrogates (``\\udcb2`` escapes, invalid UTF-8) become U+FFFD everywhere,
including inside ``arguments``, so the frame can be written to Parquet and HTML.

Decisions
---------
* **Dedup**: a line whose ``uuid`` was already seen in the same :func:`load_claude_code` call is a
  resume copy and is skipped (first occurrence wins, in load order, except that a file made
  only of such lines — the session a later file resumed — is read first, so its transcript
  keeps them whichever order the files were named in) — when it *is* a copy: the
  same bytes, or the same JSON but for the envelope a resume re-stamps (``sessionId``,
  ``version``, ``cwd`` …: ``_resume.COPY_KEYS_IGNORED``).  A fork's copy (``/branch``, the
  Agent SDK's ``forkSession()``: a line with ``forkedFrom: {sessionId, messageUuid}``) stands
  for the line ``messageUuid`` names, whatever its own ``uuid``: it is skipped the same way,
  and a file holding such copies is read after each file holding those lines as its own (the
  lines stay in the session they were first written in).  The count of skipped copies is
  reported per file as ``inputs[i]["duplicates"]``, the sessions a file's lines were forked
  from as ``inputs[i]["forked_from"]``.  A line that repeats a uuid with other content (an
  edited transcript, two files that disagree) is set aside as a ``conflict`` quarantine row
  naming the first place and the keys that differ.  Lines without a ``uuid`` are never deduped.
* **Merging**: assistant lines are grouped per file by ``(message.id, requestId)`` (``requestId``
  may be missing), consecutive or not.  The ``model_request`` row sits at the first line and keeps
  its ``uuid``/``ts``/``line_no``; ``usage`` comes from the line of the group whose ``usage``
  has the most ``output_tokens`` — the final count: streamed copies repeat a growing count, in
  whatever order the file holds them; of equal counts the later line; one without a count only
  where no line has one — and is never summed; text blocks are joined with
  ``"\\n"``.  Each ``tool_use`` block is its own ``tool_call`` row at its own line.  A response
  whose first lines end a session's file and whose other lines follow their copies in the file
  resuming it (the first file collected mid-write) is one model request too, in the first
  file's transcript, with the resumed file's tool calls of it (:mod:`._resume_split`).
* **Pairing**: results are paired to calls by ``tool_use_id`` across every file of the load, in
  any order; the first result for an id wins.  The call row gets ``result_ts``, ``is_error``,
  ``result_text``, ``images``; the result row gets the call's ``tool_raw``/``server``/``tool``.
* **Result text**: a ``tool_result``'s content is a string or a list of blocks (Anthropic
  Messages API): ``text`` blocks give their text, ``image`` blocks are counted in ``images``,
  ``tool_reference`` gives ``[tool_reference: <name>]``, a ``document`` with a text or content
  source gives its text (after ``[document: <title>]`` when titled), a PDF, URL or uploaded
  file document ``[document: <title>, <media type | url | file id>]``, and a ``search_result``
  ``[search_result: <title>, <source>]`` then its text blocks; parts joined with ``"\n"``.  A
  user message's own blocks are read the same way.
* **MCP names**: see :func:`split_mcp_name`.
* **Sub-agents**: ``agent_id`` is the line's ``agentId`` on sidechain lines or in ``agent-<id>``
  files, else the id from the file name, else ``"sidechain"`` for an inline sidechain line
  without ``agentId``; NA for the main agent.  ``transcript_id`` is the file stem; files in
  different folders sharing a name are told apart as ``<folder>/<stem>``.

Nothing is dropped silently: lines that are not JSON or not a JSON object go to the quarantine
with file, line number and byte offset; an unterminated unparsable last line is quarantined as
``kind="pending"``.  Files are opened read-only and never modified.

Speed: well-formed files are decoded whole by msgspec into just the keys read, other files line
by line with orjson (``_claude_fast``, ``_claude_ms``); the per-record loader this replaced is
kept in ``_claude_ref`` as the reference the tests hold the fast path to.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

from .._jsonl import expand_paths, line_scores, lines_words, parse_json
from ..errors import InputError
from .._text import to_utc
from ..frames import QUARANTINE, STEPS, LoadResult
from . import _parallel
from ._resume_split import merge_split_responses
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


#: the keys Claude Code writes on every line of a session (whatever the line's type)
_ENVELOPE = ("sessionId", "uuid", "parentUuid", "timestamp", "version", "cwd", "userType", "isSidechain")


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
        if t in _BOOKKEEPING_TYPES:
            return 0.5
        # a line type newer than this loader, in Claude Code's own envelope: a file can start
        # with hundreds of them, and they are as much the client's as the types known here
        return 0.5 if sum(k in o for k in _ENVELOPE) >= 5 else 0.3
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
        o, err = parse_json(tail, exact=False)  # (what the loader reads: 1e400, lone surrogates too)
        if err is None:
            scores.append(_line_score(o))
        elif not scores:  # a single line longer than the sample: judge the fragment
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
    and ``*.jsonl.gz``; duplicates and side files (``*.meta.json``, a session's persisted tool
    results: :func:`_is_side_file`) are left out.

    Raises:
        InputError: a path does not exist.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    named = [p for p in map(Path, paths)
             if not (p.name.lower().endswith(".meta.json") and p.is_file())
             and not (p.parent.name == "tool-results" and p.is_file() and _is_side_file(p))]
    return expand_paths(named, accept=_transcript_name)


def _transcript_name(q: Path) -> bool:
    # (any case: TRANSCRIPT.JSONL too)
    return q.name.lower().endswith((".jsonl", ".jsonl.gz")) and not (q.parent.name == "tool-results"
                                                                    and _is_side_file(q))


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
        (resume or fork copies skipped), ``resumes`` (a resumed or forked file: the transcript
        whose lines it starts by copying), ``forked_from`` (a file holding a fork's copies: the
        sorted ``forkedFrom.sessionId`` values they name) and, for ``agent-<id>`` files with a readable
        ``.meta.json``, ``agent_meta``; for ``agent-<id>`` files with a ``.meta.json`` beside
        them, ``side_files``: that file's own entry (``path``, ``sha256``, ``bytes``, ``lines``,
        ``format`` ``claude-code sub-agent meta``, ``side_of``, ``note``: why it was not read,
        or ``None``), for it is evidence too.

    Raises:
        InputError: a path does not exist, or a file cannot be read (permission, corrupt gzip).
    """
    import gc

    from . import _claude_fast as F

    files = _expand(paths)
    max_open = F.max_open()
    # the parse allocates millions of short-lived containers: the cyclic GC's passes over them
    # cost ~10 % and find nothing (parsed JSON has no cycles)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        snapshots = _earlier_copies(files)
        loaded = [f for f in files if f not in snapshots] if snapshots else files
        res = _load(loaded, max_open)
        first = _shadowed_first(loaded, res)
        res = res if first is None else _load(first, max_open)
        finish(res)
        if snapshots:
            res = _with_snapshots(res, files, snapshots)
        return res
    finally:
        if gc_was_enabled:
            gc.enable()


def _earlier_copies(files: list[Path]) -> dict[Path, tuple[Path, dict]]:
    """``{file: (later file, its inputs entry)}`` for each file that is an earlier copy of another
    file of the same name in the load: a backup or snapshot taken while the session went on, its
    bytes (gunzipped) the first bytes of the later file's.  Such a file is not read: its lines
    are the later file's first lines, so read too they would be the earlier copy's, and the
    conversation would be cut in two transcripts (the later one taken for a resumed session, the
    door session joined to the snapshot, and the calls after it left unclaimed).  Of several later
    copies the longest is named.  Only files sharing a name are compared (a file's name is its
    session id); byte-identical copies are left to :func:`replaybook.loading.read_once`."""
    from . import _claude_fast as F
    from .._jsonl import name_stem

    by_name: dict[str, list[Path]] = {}
    for f in files:
        by_name.setdefault(name_stem(f, (".jsonl.gz", ".jsonl")), []).append(f)
    out: dict[Path, tuple[Path, dict]] = {}
    for group in by_name.values():
        if len(group) < 2:
            continue
        read = {}
        for f in group:
            try:
                read[f] = F.read_file(f)
            except InputError:  # noqa: PERF203
                continue  # (the load says why)
        for f, (data, info) in read.items():
            if not data.strip():
                continue
            later = [g for g, (d, _) in read.items() if g != f and len(d) > len(data) and d.startswith(data)]
            if later:
                info = dict(info, lines=data.count(b"\n") + (not data.endswith(b"\n")))
                out[f] = (max(later, key=lambda g: len(read[g][0])), info)
    return out


def _with_snapshots(res: LoadResult, files: list[Path], snapshots: dict[Path, tuple[Path, dict]]) -> LoadResult:
    """``res`` with an ``inputs`` entry, in the files' order, for each earlier copy left unread
    (:func:`_earlier_copies`): ``skipped``, ``copy_of`` the later file (said as "an earlier copy
    of <later file>: its N lines begin it, and are read there").  The files beside an earlier
    copy (its ``agent-<id>.meta.json``, its persisted tool results) are evidence as well: they are
    listed in its entry's ``side_files``, with their SHA-256, as a read transcript's are."""
    from .._jsonl import name_stem
    from ._claude_ref import read_side_files

    entries = {str(i.get("path")): i for i in res.inputs}
    inputs = []
    for f in files:
        if f in snapshots:
            later, info = snapshots[f]
            entry = dict(info, skipped=True, copy_of=str(later))
            stem = name_stem(f, (".jsonl.gz", ".jsonl", ".gz", ".json"))
            side: dict = {}
            read_side_files(f, stem, stem[6:] if stem.startswith("agent-") and len(stem) > 6 else None, side)
            for k in ("side_files", "notes"):
                if side.get(k):
                    entry[k] = [*entry.get(k, []), *side[k]]
            inputs.append(entry)
        elif str(f) in entries:
            inputs.append(entries.pop(str(f)))
    inputs.extend(entries.values())  # (any entry not named by a file: kept, after)
    return LoadResult(frame=res.frame, quarantine=res.quarantine, inputs=inputs)


def finish(res: LoadResult) -> None:
    """What is decided over all the files once they are read (in place): a resumed file names the
    transcript it resumes (:func:`_mark_resumes`), a response split between a session and its
    resume is one (:func:`merge_split_responses`), and the notes on lines that are not Claude
    Code lines and on tool-use ids that name several calls."""
    _mark_resumes(res)
    merge_split_responses(res)
    _note_untyped_lines(res)
    _note_reused_call_ids(res)


def _note_untyped_lines(res: LoadResult) -> None:
    """A note in a file's ``inputs`` entry naming its lines that hold a JSON object but no line
    ``type``: every Claude Code line has one, so these are not Claude Code lines — another log's
    lines written into the file (a door log or a Codex rollout appended to it, two files
    concatenated).  They stay ``other`` rows, as unknown line types do, but their tool calls,
    refusals and times are not read, and that must not pass unsaid."""
    f = res.frame
    if not len(f):
        return
    odd = (f["kind"] == "other") & f["line_type"].isna()
    if not odd.any():
        return
    lines: dict[str, list[int]] = {}
    for src, n in zip(f.loc[odd, "source_file"].astype(str), f.loc[odd, "line_no"]):
        lines.setdefault(src, []).append(int(n))
    for info in res.inputs:
        at = lines.get(str(info.get("path")))
        if at:
            info.setdefault("notes", []).append(
                f"{lines_words(sorted(at))}: a JSON object with no line type (`type`), so not a Claude Code "
                "line — another log's lines in this file? Kept as kind other; nothing in them is read")


def _note_reused_call_ids(res: LoadResult) -> None:
    """A note in a file's ``inputs`` entry for each tool-use id that two or more ``tool_call``
    rows of one transcript carry (with other input: the same block written again within one
    response is one call).  Claude Code gives every call an id of its own, so this is an edited
    transcript or two conversations' lines merged into one file; results are paired to calls by
    that id, so a call may show another call's result — which the investigator must be told."""
    f = res.frame
    if not len(f):
        return
    calls = f[(f["kind"] == "tool_call") & f["call_id"].notna()]
    if not len(calls):
        return
    dup = calls.duplicated(["transcript_id", "call_id"], keep=False)
    if not dup.any():
        return
    notes: dict[str, list[str]] = {}
    for (_tid, cid), g in calls[dup].groupby(["transcript_id", "call_id"], sort=False):
        src = str(g["source_file"].iat[0])
        notes.setdefault(src, []).append(
            f"tool-use id {cid} names {len(g)} tool calls ({lines_words(sorted(int(n) for n in g['line_no']))}: "
            f"{', '.join(dict.fromkeys(str(t) for t in g['tool'].fillna('?')))}): Claude Code "
            "gives each call its own id — an edited transcript, or two conversations' lines merged? Results "
            "are paired to calls by id, so one of them may show the other's result")
    for info in res.inputs:
        for n in notes.get(str(info.get("path")), ()):
            info.setdefault("notes", []).append(n)


def _mark_resumes(res: LoadResult) -> None:
    """Name, in a resumed file's ``inputs`` entry, the transcript it resumes: ``resumes`` (the
    ``transcript_id`` whose file holds the *last* of the copied lines the resumed file starts
    with — the line its own lines go on from), when the file's first line with a uuid is a copy
    kept from another file.  In a chain (B resumes A, C resumes B) C's copies start with A's
    lines and end with B's: C resumes B.  Only files with ``duplicates`` are read again (their
    uuids, up to their first line of their own)."""
    dup = [i for i in res.inputs if i.get("duplicates")]
    if not dup or not len(res.frame):
        return
    f = res.frame
    place = dict(zip(f["uuid"].astype(object), zip(f["source_file"].astype(str), f["transcript_id"].astype(object))))
    kept = set(f["source_file"].astype(str))
    for info in dup:
        name = str(info.get("path"))
        if name not in kept:
            continue
        last = None
        for u in _line_uuids(name):
            hit = place.get(u)
            if hit is None or hit[0] == name:  # the file's own lines begin
                break
            last = hit
        if last is not None:
            info["resumes"] = str(last[1])


def _shadowed_first(files: list[Path], res: LoadResult) -> list[Path] | None:
    """The files reordered so that each session's own file comes before every file resuming or
    forking it, or ``None`` when no file needs to move.

    A resumed session's file starts with copies of the earlier session's lines, and the first
    place of a line keeps it: named first (a folder sorts by the random session ids), the
    resumed file had taken every line of the session it resumed, whose transcript then vanished
    from the frame — and its door session had no transcript to be joined to.  A file ``F``
    whose lines were all taken by another file must come before each file ``G`` that holds all
    of ``F``'s uuid lines, in order, as one block, and goes on after it (``G`` resumed ``F``:
    in a chain C ← B ← A, C starts with A's lines then B's; a file resuming two sessions holds
    both blocks).  A fork's copies say which lines they copy (``forkedFrom``), so a file holding
    such copies comes after each file holding any of those lines as its own, whether or not the
    fork copied the whole session (a fork may stop mid-session).  The files concerned — those
    holding copies, and the files holding their lines first — are put in an order that keeps
    every such rule (and otherwise the named order) in the places they were named at, so the
    copies are each resumed or forked file's whichever order the files were named in; one reload
    follows.  Files that merely share lines (an identical copy) stay as they were named."""
    dup = {str(i.get("path")) for i in res.inputs if i.get("duplicates")}
    forks = {str(i.get("path")) for i in res.inputs if i.get("forked_from")}
    if not dup or not len(res.frame):
        return None
    kept = set(res.frame["source_file"].astype(str))
    names = [str(f) for f in files]
    lost = [n for n in names if n in dup and n not in kept]
    if not lost and not forks:
        return None
    first_file = dict(zip(res.frame["uuid"].astype(object), res.frame["source_file"].astype(str)))
    lists: dict[str, list] = {}
    mine_of: dict[str, list] = {}   # file → the keys of its lines that are no fork's copies, in order
    declared: dict[str, set] = {}   # file → the keys of the lines it holds as a fork's copies
    uuids: dict[str, set] = {}      # file → its fork copies' own fresh uuids (a fork of it names them so)
    todo = [n for n in names if n in dup or n in forks]
    while todo:  # the files with copies and, transitively, the files that hold their lines first
        n = todo.pop()
        if n in lists:
            continue
        keys = _line_keys(n)
        lists[n] = [k for k, _, _ in keys]
        mine_of[n] = [k for k, d, _ in keys if not d]
        declared[n] = {k for k, d, _ in keys if d}
        uuids[n] = {u for k, d, u in keys if d and u is not None and u != k}
        for u in lists[n]:
            g = first_file.get(u)
            if g is not None and g not in lists and g in names:
                todo.append(g)
    involved = [n for n in names if n in lists]
    own = {n: (set(lists[n]) - declared[n]) | uuids[n] for n in involved}

    def resumed_by(f: str, g: str) -> bool:  # g holds f's own lines as one block, and goes on
        # (a fork's copies are f's only by declaration: the session it copies holds them first)
        mine, theirs = mine_of[f], lists[g]
        if not mine or len(theirs) <= len(mine):
            return False
        try:
            i = theirs.index(mine[0])
        except ValueError:
            return False
        return theirs[i:i + len(mine)] == mine

    def forked_by(f: str, g: str) -> bool:  # g holds copies of lines f holds (its own, or its copies by their uuid)
        return bool(declared[g]) and not own[f].isdisjoint(declared[g])

    after = {n: {g for g in involved if g != n and (forked_by(n, g) or resumed_by(n, g))} for n in involved}
    before_count = {n: sum(n in after[m] for m in involved) for n in involved}
    order: list[str] = []
    ready = [n for n in involved if not before_count[n]]
    while ready:  # the named order among the free
        ready.sort(key=names.index)
        n = ready.pop(0)
        order.append(n)
        for g in after[n]:
            before_count[g] -= 1
            if not before_count[g]:
                ready.append(g)
    # files whose rules contradict each other (each holding copies of the other's lines) keep
    # their named order, after the others
    order += [n for n in involved if n not in order]
    if order == involved:
        return None
    slots = [i for i, n in enumerate(names) if n in lists]
    out = list(files)
    by_name = {str(f): f for f in files}
    for i, n in zip(slots, order):
        out[i] = by_name[n]
    return out


def _line_uuids(path: str, limit: int | None = None) -> list:
    """The key of each line of a transcript that has one (its ``uuid``, or for a fork's copy
    the uuid of the line it copies: :func:`._resume.line_key`), in order (the first ``limit``);
    lines that do not parse are passed over."""
    return [k for k, _, _ in _line_keys(path, limit)]


def _line_keys(path: str, limit: int | None = None) -> list[tuple[str, bool, str | None]]:
    """``(key, declared, uuid)`` for each line of a transcript that has a key (:func:`_line_uuids`);
    ``declared``: the line is a fork's copy (it has ``forkedFrom``); ``uuid`` its own uuid (a
    non-empty string) or ``None``."""
    from .._jsonl import parse_json
    from ._resume import _lines_of, line_key

    out: list = []
    for raw in _lines_of(path):
        if limit is not None and len(out) >= limit:
            break
        if b'"uuid"' not in raw and b'"forkedFrom"' not in raw:
            continue
        o, err = parse_json(raw, exact=False)
        if err is None and isinstance(o, dict):
            ff = o.get("forkedFrom")
            u = o.get("uuid")
            key = line_key(u, ff)
            if key is not None:
                out.append((key, ff is not None and line_key(None, ff) is not None,
                            u if u.__class__ is str and u else None))
    return out


def _load(files: list[Path], max_open: int) -> LoadResult:
    from . import _claude_fast as F

    load = F.Load(expect_rows=_expect_rows(files), max_open=max_open)

    def here(group: list[Path]) -> bool:
        # (reading the next file in a thread while this one is parsed was tried: the parse holds
        # the GIL, so the reader only ran when the parser waited for it — no gain)
        for path in group:
            load.file(path, F.read_file(path))
        return True

    def helper(group: list[Path]) -> tuple:
        part = F.Load(expect_rows=_expect_rows(group), max_open=max_open)
        for path in group:
            part.file(path, F.read_file(path))
        return group, part.state()

    # a large load is shared with helper processes (groups of files parsed on either side, in
    # order of files); a helper's group is taken as it is unless a line of it repeats a line
    # (uuid) of an earlier group — a resumed session's copy —, then it is parsed here again
    workers = _parallel.helpers()
    def settle(value: tuple) -> tuple:  # a helper's columns unpickled while this process still parses
        group, state = value
        return group, F.Load.unpack(state)

    for kind, value in _parallel.front_back(_parallel.groups(files, workers), here, helper, workers, settle):
        if kind == "remote":
            group, state = value
            if not load.absorb(state):
                here(group)
    quarantine = QUARANTINE.build(load.quarantine)
    if not load.n:
        return LoadResult(frame=STEPS.build([]), quarantine=quarantine, inputs=load.inputs)
    frame = _build(load, F)
    from ._claude_ref import note_unreadable_timestamps

    note_unreadable_timestamps(load.column(F.C_TS), frame["ts"], frame["source_file"], frame["line_no"], load.inputs)
    # (each file's rows carry its stem as transcript_id: only a stem two files share needs a look)
    paths_of: dict[str, set] = {}
    for stem, path, rows in load.per_file:
        if rows:
            paths_of.setdefault(stem, set()).add(path)
    if any(len(v) > 1 for v in paths_of.values()):
        frame = _split_shared_names(frame, load.inputs)
    return LoadResult(frame=frame, quarantine=quarantine, inputs=load.inputs)


def _split_shared_names(frame: "pd.DataFrame", inputs: list[dict]) -> "pd.DataFrame":
    """Files in different folders with the same name (``a/session.jsonl``, ``b/session.jsonl``)
    that each contribute lines are different transcripts, not one: each such file's rows get
    ``transcript_id`` ``<folder>/<stem>`` (as many parent folders as it takes to tell them
    apart), ``seq`` renumbered 0-based per new id, and the file's ``inputs`` entry a
    ``transcript_id``.  A copy of a file contributes no lines (its uuids were seen), so copies
    stay one transcript; so does a byte-identical copy whose lines without a uuid (bookkeeping
    lines) it does contribute: the load reads it once (``loading.read_once`` drops its rows)."""
    import pandas as pd

    from ..loading import _content_sha

    first: dict[str, str] = {}
    copies: set[str] = set()
    for info in inputs:
        sha, path = info.get("sha256"), info.get("path")
        if not sha or path is None or not info.get("bytes"):
            continue
        sha = _content_sha(inputs, info) or sha
        if first.setdefault(sha, str(path)) != str(path):
            copies.add(str(path))
    per = frame[["transcript_id", "source_file"]].drop_duplicates()
    if copies:
        per = per[~per["source_file"].astype(str).isin(copies)]
    shared = per[per.duplicated("transcript_id", keep=False)]
    if shared.empty:
        return frame
    new: dict[tuple[str, str], str] = {}
    for tid, grp in shared.groupby("transcript_id", sort=False):
        parents = [Path(p).parent.parts for p in grp["source_file"]]
        for k in range(1, max(len(x) for x in parents) + 1):
            names = ["/".join((*x[-k:], tid)) for x in parents]
            if len(set(names)) == len(names):
                break
        else:  # the same path listed in different spellings: keep the full path
            names = list(grp["source_file"])
        new.update({(tid, f): n for f, n in zip(grp["source_file"], names)})
    keys = list(zip(frame["transcript_id"], frame["source_file"]))
    mask = pd.Series([k in new for k in keys], index=frame.index)
    frame = frame.copy()
    frame.loc[mask, "transcript_id"] = [new[k] for k, m in zip(keys, mask) if m]
    frame.loc[mask, "seq"] = frame[mask].groupby("transcript_id", sort=False).cumcount().astype("Int64")
    by_path = {f: n for (_, f), n in new.items()}
    for info in inputs:
        if info.get("path") in by_path:
            info["transcript_id"] = by_path[info["path"]]
    return frame


def _expect_rows(files: list[Path]) -> int:
    """A guess of the rows ``files`` give, to size the column arrays (200 bytes a row): ~1 per
    1.6 KB as in typical transcripts, at most 2**20; 0 when the sizes cannot be read.  The arrays
    grow as needed; spare room is dropped when the frame is built."""
    import os

    try:
        return min(sum(os.stat(p).st_size for p in files) // 1600 + 1024, 1 << 20)
    except OSError:
        return 0


def _pair(load, F, col) -> "np.ndarray":
    """Pair results to calls by call_id across the load (first result wins), filling the object
    columns ``col`` in place; returns, per row, the row whose ``ts`` is its result_ts (-1: none)."""
    import numpy as np

    n = load.n
    result_ts = np.full(n, -1, dtype=np.intp)
    calls = load.calls
    if not calls:
        return result_ts
    call_id = col[F.C_CALL_ID]
    tool_raw, server, tool = col[F.C_TOOL_RAW], col[F.C_SERVER], col[F.C_TOOL]
    is_error, result_text, images, text = (col[F.C_IS_ERROR], col[F.C_RESULT_TEXT],
                                           col[F.C_IMAGES], col[F.C_TEXT])
    done: set[str] = set()
    call_rows: list[int] = []
    result_rows: list[int] = []
    for i in load.results:
        cid = call_id[i]
        idx = calls.get(cid)
        if not idx:
            continue
        j0 = idx[0]
        tool_raw[i], server[i], tool[i] = tool_raw[j0], server[j0], tool[j0]
        if cid in done:
            continue
        done.add(cid)
        call_rows.extend(idx)
        result_rows.extend([i] * len(idx))
    if call_rows:
        j = np.array(call_rows, dtype=np.intp)
        i = np.array(result_rows, dtype=np.intp)
        result_ts[j] = i
        is_error[j] = is_error[i]
        result_text[j] = text[i]
        images[j] = images[i]
    return result_ts


_EXACT = 1 << 53


def _build(load, F) -> "pd.DataFrame":
    """The STEPS frame of the load, equal to the reference loader's (``_claude_ref``): object
    columns joined once with ``np.fromiter``, string columns (NA already in place) wrapped as they
    are, ``seq`` and the per-file columns from per-file row counts, ``ts`` parsed once per
    distinct string (``to_utc`` parses element by element)."""
    import numpy as np
    import pandas as pd

    n = load.n
    per_file = load.per_file
    col = {k: load.column(k) for k in F.JOINED}
    result_ts = _pair(load, F, col)
    counts = [k for _, _, k in per_file]
    file_of_row = np.repeat(np.arange(len(per_file), dtype=np.intp), counts)
    # seq: 0-based per transcript id, continuing over files with the same id
    seq = np.empty(n, dtype=np.int64)
    done: dict[str, int] = {}
    pos = 0
    for tid, _, k in per_file:
        off = done.get(tid, 0)
        seq[pos:pos + k] = np.arange(off, off + k, dtype=np.int64)
        done[tid] = off + k
        pos += k
    is_call = col[F.C_KIND] == "tool_call"
    args = col[F.C_ARGS]
    exact = True
    if not is_call.any():
        args = None   # no row had the key: from_records leaves the column out → None
    elif any(a.__class__ is not dict for a in args[is_call]):
        exact = False   # from_records infers this column's dtype from its values
    ints: dict[int, Any] = {}
    for k in (F.C_IMAGES, F.C_TEXT_BYTES, F.C_IN_TOK, F.C_OUT_TOK):
        ints[k] = _int64(col[k])
        if ints[k] is None:
            if k in (F.C_IN_TOK, F.C_OUT_TOK):
                exact = False   # beyond 2**53: from_records goes through float64
            else:  # pragma: no cover - text sizes and image counts are far below 2**53
                ints[k] = _int64_object(col[k])
    if not exact:
        return _build_slow(col, F, per_file, file_of_row, seq, result_ts)
    out: dict[str, Any] = {}
    sdt = pd.StringDtype("python")
    ts_arr = _utc(col[F.C_TS])
    no_mask = np.zeros(n, dtype=bool)
    for k, c in enumerate(STEPS.columns):
        name = c.name
        if k == F.C_TS:
            out[name] = ts_arr
        elif k == F.C_RESULT_TS:
            out[name] = ts_arr.take(result_ts, allow_fill=True)
        elif k == F.C_ARGS:
            out[name] = np.full(n, None, dtype=object) if args is None else args
        elif k == F.C_TID:
            out[name] = pd.array([t for t, _, _ in per_file], dtype=sdt).take(file_of_row)
        elif k == F.C_SOURCE:
            out[name] = pd.array([p for _, p, _ in per_file], dtype=sdt).take(file_of_row)
        elif k == F.C_CLIENT:
            out[name] = pd.array([F.CLIENT], dtype=sdt).take(np.zeros(n, dtype=np.intp))
        elif k == F.C_SEQ:
            out[name] = pd.arrays.IntegerArray(seq, no_mask.copy())
        elif k == F.C_LINE_NO:
            out[name] = pd.arrays.IntegerArray(col[k].astype(np.int64), no_mask.copy())
        elif c.dtype == "string":   # str or NA only (F.STR_COLS): wrapped as they are
            out[name] = _strings(col[k], sdt)
        elif c.dtype == "Int64":
            out[name] = ints[k]
        elif c.dtype == "boolean":
            out[name] = pd.array(col[k], dtype=c.dtype)
        else:  # pragma: no cover - STEPS has no other dtypes
            raise AssertionError(c.dtype)
    return pd.DataFrame(out, index=pd.RangeIndex(n), copy=False)


def _strings(arr, sdt) -> "pd.arrays.StringArray":
    """A StringArray of ``sdt`` over ``arr`` (an object array holding only ``str`` and ``pd.NA``,
    as the parser makes them), without a validating pass over the values."""
    import pandas as pd

    proto = pd.arrays.StringArray(arr[:1], dtype=sdt)   # validated (and checks the dtype)
    wrap = getattr(proto, "_from_backing_data", None)
    if wrap is None:  # pragma: no cover - pandas without the (private) no-copy constructor
        return pd.arrays.StringArray(arr, dtype=sdt)
    return wrap(arr)


def _int64(obj) -> "pd.arrays.IntegerArray | None":
    """Int64 array of an object array of ints and None; None when a value is beyond 2**53."""
    import numpy as np
    import pandas as pd

    try:
        arr = obj.astype(np.float64)   # None → NaN
    except OverflowError:
        return None
    mask = np.isnan(arr)
    if mask.any():
        arr[mask] = 0
    if arr.size and np.abs(arr).max() >= _EXACT:   # may not be exact in float64: look closer
        vals = [v for v in obj.tolist() if v is not None]
        if max(vals) > _EXACT or min(vals) < -_EXACT:
            return None
        return _int64_object(obj)
    return pd.arrays.IntegerArray(arr.astype(np.int64), mask)


def _int64_object(obj) -> "pd.arrays.IntegerArray":
    """Int64 array of an object array of ints and None, the reference's way (exact ints)."""
    import numpy as np
    import pandas as pd

    arr = obj.copy()
    mask = pd.isna(arr)
    if mask.any():
        arr[mask] = 0
    return pd.arrays.IntegerArray(arr.astype(np.int64), mask)


def _utc(ts) -> "pd.api.extensions.ExtensionArray":
    """``to_utc(ts).array`` of an object array of str/None, each distinct string parsed once."""
    import pandas as pd

    codes, uniques = pd.factorize(ts)
    return to_utc(uniques).array.take(codes, allow_fill=True)


def _build_slow(col: dict, F, per_file, file_of_row, seq, result_ts) -> "pd.DataFrame":
    """Odd values (arguments that are not objects, token counts beyond 2**53): the reference's
    exact slow build, from the reference's column lists (None for missing strings)."""
    import pandas as pd

    from ._claude_ref import _build_records

    NA = pd.NA
    cols: list = [None] * F.NCOLS
    for k, arr in col.items():
        vals = arr.tolist()
        cols[k] = [None if v is NA else v for v in vals] if k in F.STR_COLS else vals
    idx = file_of_row.tolist()
    tids = [t for t, _, _ in per_file]
    srcs = [p for _, p, _ in per_file]
    cols[F.C_TID] = [tids[i] for i in idx]
    cols[F.C_SOURCE] = [srcs[i] for i in idx]
    cols[F.C_CLIENT] = [F.CLIENT] * len(idx)
    cols[F.C_SEQ] = seq.tolist()
    cols[F.C_RESULT_TS] = [None] * len(idx)
    return _build_records(cols, F, cols[F.C_TS], result_ts.tolist())


def _is_side_file(p: Path) -> bool:
    """A file the loader reads beside a transcript (``_claude_ref.read_side_files``): a
    sub-agent's ``agent-<id>.meta.json`` next to its ``agent-<id>.jsonl``, or a persisted tool
    result ``<session>/tool-results/<file>`` next to ``<session>.jsonl``."""
    name = p.name.lower()
    if name.endswith(".meta.json"):
        return p.with_name(p.name[: -len(".meta.json")] + ".jsonl").is_file()
    if p.parent.name == "tool-results":
        session = p.absolute().parent.parent   # (absolute: "tool-results/x.txt" named from the session's folder)
        if not session.name:
            return False
        try:
            return any(session.with_name(session.name + ext).is_file()
                       for ext in (".jsonl", ".jsonl.gz", ".JSONL", ".JSONL.GZ"))
        except OSError:
            return False
    return False


register(Source(
    name=LOADER,
    frame="steps",
    sniff=sniff,
    load=load_claude_code,
    doc="Claude Code session JSONL (client 1.0.24–2.1.x) from ~/.claude/projects/<project>/, "
        "with sub-agent files (agent-<id>.jsonl, <session>/subagents/agent-<id>.jsonl)",
    side_file=_is_side_file,
))
