"""Build a capsule from an incident: door log + the door's captured responses + transcript + checkout.

Inputs:

* the incident manifest (``incident.yaml``, :class:`replaybook.Incident`): its door call log
  must carry ``response_digest`` for the responses the door kept;
* the door's captured-responses folder (content-addressed, ``sha256/<hex>``, the same layout as
  :class:`~replaybook.capsule.store.EvidenceStore`);
* a git checkout (commit + dirty-tree digest, :func:`~replaybook.capsule.repo.repo_state`) — or,
  when the checkout is gone, the state the runtime captured (``capture.yaml``'s ``repository``);
* optionally ``capture.yaml``: what the agent runtime captured besides the door's evidence.

``capture.yaml`` (paths relative to it; every field optional)::

    operation_id: op-example-913
    principal: claude-worker-example-12        # default: the door's agent name
    scopes: [catalogue_read, repo_write]
    policy_version: policy-example-44
    provider: anthropic                        # default for Claude Code transcripts
    clock_source: door                         # default: door
    started_at: 2026-09-13T16:42:03Z           # default: first transcript or door event
    workdir: /home/deployer/deploy-config      # default: the transcript's cwd
    system_prompt: capture/system-prompt.txt   # files: stored as evidence, never inlined
    model_parameters: capture/model-parameters.json
    image_manifest: capture/image-manifest.json
    feature_flags: capture/feature-flags.json
    token_info: capture/token-info.json
    tool_effects: {"service-catalogue/get_service": read}   # default: guessed from the name
    permitted_fallbacks: []                    # [{server, method}] a reviewer allows live
    repository: {commit: 89d2…, dirty_tree: capture/dirty-tree.bin}   # or: none (no repository)

Everything sensitive (prompts, responses, parameters, token information, the dirty tree, the
door's logs) goes into the capsule's evidence store; ``capsule.yaml`` holds digests and
``evidence://`` references only.

The run's conversation is its main transcript with its sub-agents' files and the sessions that
resumed it (:func:`conversation_roots`).  An MCP tool call of the conversation that no door call
carried (a door log cut short, a server reached without the door) gets a ``tool_evidence`` entry
with no decision, no response and no time: the capsule is then unproven, naming the call,
rather than complete without it.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pandas as pd
import yaml

from .. import _yaml
from .._jsonl import read_bytes
from .._schema import short_message
from ..errors import InputError
from ..incident import Incident
from .digest import door_request_digest, request_digest, sha256_digest
from .errors import CapsuleFormatError, EvidenceMissing, ReadBackError
from .model import EFFECTS, Capsule, _plain, evidence_ref, guess_effect, iso_z
from .repo import repo_state
from .store import EvidenceStore

__all__ = ["Capture", "load_capture", "build_capsule", "door_call_ids", "select_transcript", "conversation_steps",
           "conversation_roots", "match_door_calls", "BUILTIN_TOOLS"]

#: Claude Code built-in tools the capsule and the checkpoint extractor understand.
BUILTIN_TOOLS = ("Edit", "Write", "MultiEdit", "Bash")

_CAPTURE_SCHEMA = {
    "type": "object",
    "properties": {
        "operation_id": {"type": "string", "minLength": 1},
        "principal": {"type": "string"},
        "scopes": {"type": "array", "items": {"type": "string"}},
        "policy_version": {"type": "string"},
        "provider": {"type": "string"},
        "clock_source": {"type": "string"},
        "started_at": {"type": "string", "format": "date-time"},
        "workdir": {"type": "string"},
        "system_prompt": {"type": "string"},
        "model_parameters": {"type": "string"},
        "image_manifest": {"type": "string"},
        "feature_flags": {"type": "string"},
        "token_info": {"type": "string"},
        "tool_effects": {"type": "object", "additionalProperties": {"enum": list(EFFECTS)}},
        "permitted_fallbacks": {"type": "array", "items": {
            "type": "object", "required": ["server"],
            "properties": {"server": {"type": "string"}, "method": {"type": "string"}}, "additionalProperties": False}},
        "repository": {"oneOf": [
            {"type": "object", "required": ["commit"],
             "properties": {"commit": {"type": "string"}, "dirty_tree": {"type": "string"}},
             "additionalProperties": False},
            {"const": "none", "description": "the agent worked on no repository (MCP tools only)"}]},
    },
    "additionalProperties": False,
}

_FILES = ("system_prompt", "model_parameters", "image_manifest", "feature_flags", "token_info")


@dataclass
class Capture:
    """What the agent runtime captured besides the door's evidence (``capture.yaml``, loaded).

    File fields hold the files' bytes; every field may be ``None`` (not captured).
    """

    operation_id: str | None = None
    principal: str | None = None
    scopes: list[str] | None = None
    policy_version: str | None = None
    provider: str | None = None
    clock_source: str | None = None
    started_at: str | None = None
    workdir: str | None = None
    system_prompt: bytes | None = None
    model_parameters: bytes | None = None
    image_manifest: bytes | None = None
    feature_flags: bytes | None = None
    token_info: bytes | None = None
    tool_effects: dict[str, str] = field(default_factory=dict)
    permitted_fallbacks: list[dict] = field(default_factory=list)
    repository_commit: str | None = None
    repository_dirty_tree: bytes | None = None
    #: ``repository: none``: the agent worked on no repository (its state is pinned as none)
    repository_none: bool = False
    #: ``capture.yaml`` and every file it names, as read (evidence: a command's output never goes
    #: over them, nor into their folders)
    files: list[Path] = field(default_factory=list)


def load_capture(path: str | Path) -> Capture:
    """Read ``capture.yaml`` (file paths in it are relative to its folder).

    Raises:
        CapsuleFormatError: unreadable, not YAML, not matching the format, or naming a file that is
            missing, empty, or named ``.json`` and not JSON (each with the line of its key).
    """
    p = Path(path)
    text = ""
    try:
        text = p.read_text("utf-8")
        data = _yaml.load(text) or {}
    except OSError as exc:
        raise CapsuleFormatError(f"cannot read capture file: {exc.strerror or exc}", p) from exc
    except _yaml.DuplicateKeyError as exc:
        raise CapsuleFormatError(exc.problem, p, exc.problem_mark.line + 1) from None
    except yaml.YAMLError as exc:
        raise CapsuleFormatError(f"not valid YAML: {_yaml.describe(exc)}", p) from exc
    data = _plain(data)
    v = jsonschema.Draft202012Validator(_CAPTURE_SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    err = jsonschema.exceptions.best_match(v.iter_errors(data))
    if err is not None:
        where = "/".join(str(x) for x in err.absolute_path) or "(top level)"
        raise CapsuleFormatError(f"invalid capture file at {where}: {short_message(err.message)}", p,
                                 _yaml.line_at(text, list(err.absolute_path)))

    files: list[Path] = [p]

    def read(rel: str | None, *key: str) -> bytes | None:
        """The bytes of the file ``rel`` that ``key`` names; a captured document that is empty, or
        named ``.json`` and not JSON, captures nothing a replay can use: an error, not a capsule
        that calls itself complete."""
        if rel is None:
            return None
        line = _yaml.line_at(text, list(key))
        files.append(p.parent / rel)
        try:
            got = (p.parent / rel).read_bytes()
        except OSError as exc:
            raise CapsuleFormatError(f"{'.'.join(key)}: cannot read {rel!r}: {exc.strerror or exc}", p, line) from exc
        if key[0] in _FILES:
            if not got.strip():
                raise CapsuleFormatError(f"{key[0]}: {rel!r} is empty: it captures nothing", p, line)
            if rel.lower().endswith(".json"):
                try:
                    orjson.loads(got)
                except ValueError as exc:
                    raise CapsuleFormatError(f"{key[0]}: {rel!r} is not JSON: {exc}", p, line) from None
        return got

    repo = data.get("repository") or {}
    none = repo == "none"
    if none:
        repo = {}
    return Capture(
        operation_id=data.get("operation_id"), principal=data.get("principal"), scopes=data.get("scopes"),
        policy_version=data.get("policy_version"), provider=data.get("provider"),
        clock_source=data.get("clock_source"), started_at=data.get("started_at"), workdir=data.get("workdir"),
        **{k: read(data.get(k), k) for k in _FILES},
        tool_effects=dict(data.get("tool_effects") or {}),
        permitted_fallbacks=list(data.get("permitted_fallbacks") or []),
        repository_commit=repo.get("commit"), repository_dirty_tree=read(repo.get("dirty_tree"), "repository", "dirty_tree"),
        repository_none=none, files=files,
    )


def door_call_ids(calls: pd.DataFrame) -> list[str]:
    """One unique call id per door call row: the client's tool-use id (``meta_call_id``) or
    ``<door_session>#<seq>``; a repeated id gets ``#2``, ``#3`` … (in row order)."""
    out, seen = [], {}
    for meta, sess, seq in zip(calls["meta_call_id"], calls["door_session"], calls["seq"]):
        base = meta if isinstance(meta, str) and meta else f"{sess}#{seq}"
        n = seen[base] = seen.get(base, 0) + 1
        out.append(base if n == 1 else f"{base}#{n}")
    return out


def _resumptions(steps: pd.DataFrame) -> dict[str, str]:
    """``{transcript: the transcript it resumes}``: a resumed session's file (Claude Code
    ``--resume``/``--continue``) starts with copies of the earlier session's lines, which the
    loader keeps with the earlier transcript; its own first line's ``parentUuid`` is then a line
    of that transcript.  A transcript continues ``S`` when every parent it names outside itself
    is one of ``S``'s lines (main-agent lines only; two that would continue each other continue
    nothing)."""
    if not len(steps) or "parent_uuid" not in steps or "uuid" not in steps:
        return {}
    main = steps[steps["agent_id"].isna()] if "agent_id" in steps else steps
    main = main[main["uuid"].notna() | main["parent_uuid"].notna()]
    if main.empty:
        return {}
    owner: dict[str, str] = {}
    for u, t in zip(main["uuid"], main["transcript_id"]):
        if isinstance(u, str):
            owner.setdefault(u, t)
    named: dict[str, set[str]] = {}
    for par, t in zip(main["parent_uuid"], main["transcript_id"]):
        if isinstance(par, str) and par in owner and owner[par] != t:
            named.setdefault(t, set()).add(owner[par])
    out = {t: next(iter(o)) for t, o in named.items() if len(o) == 1}
    return {t: o for t, o in out.items() if out.get(o) != t}


def conversation_roots(steps: pd.DataFrame) -> dict[str, str]:
    """``{transcript: the main transcript of its conversation}`` for every transcript that is part
    of another's conversation: a Claude Code sub-agent's file (:func:`replaybook.join.sub_agent_parents`)
    and a resumed session's file (its first line continues another transcript), followed to the
    first transcript of the chain.  Transcripts that are their own conversation are not keys."""
    from ..join import sub_agent_parents

    up = {**_resumptions(steps), **sub_agent_parents(steps)}
    out: dict[str, str] = {}
    for t in up:
        seen, r = {t}, up[t]
        while r in up and up[r] not in seen:
            seen.add(r)
            r = up[r]
        out[t] = r
    return out


def select_transcript(steps: pd.DataFrame, call_ids: set[str], join=None) -> str | None:
    """The conversation the door's calls came from, named by its main transcript (a Claude Code
    sub-agent's file counts with its parent — its calls go through the parent's MCP
    connections — and a resumed session's file with the session it resumes,
    :func:`conversation_roots`):

    1. the conversation whose tool calls share the most tool-use ids with the door's calls
       (``call_ids``; ties: first id) — the ids are the client's own, so this is certain;
    2. else the transcript ``join`` (a :class:`~replaybook.join.JoinResult`) assigned to the
       door session with the most calls (``matched`` or ``ambiguous``);
    3. else ``None``: no transcript is the run's (a capsule then pins no task prompt or model
       rather than another conversation's).

    Returns ``None`` when there are no transcripts.
    """
    if steps.empty:
        return None
    parents = conversation_roots(steps)
    tc = steps[(steps["kind"] == "tool_call") & steps["call_id"].isin(list(call_ids))]
    if not tc.empty:
        counts = tc["transcript_id"].map(lambda t: parents.get(t, t)).value_counts()
        return str(sorted(counts.index, key=lambda t: (-counts[t], t))[0])
    if join is None or not len(join.sessions):
        return None
    s = join.sessions
    s = s[s["transcript_id"].notna()]
    if s.empty:
        return None
    best = s.sort_values(["calls", "door_session"], ascending=[False, True], kind="stable").iloc[0]
    return parents.get(str(best["transcript_id"]), str(best["transcript_id"]))


def conversation_steps(steps: pd.DataFrame, transcript_id: str | None) -> pd.DataFrame:
    """The steps of ``transcript_id`` and of the files of its conversation — its sub-agents' and
    the sessions resuming it (:func:`conversation_roots`) —, in time order (steps at one time:
    the main transcript's first, then by ``seq``; no time: last).  The STEPS columns, unchanged;
    empty for ``None``."""
    if transcript_id is None:
        return steps.iloc[0:0]
    subs = sorted(t for t, p in conversation_roots(steps).items() if p == transcript_id)
    if not subs:
        return steps[steps["transcript_id"] == transcript_id].sort_values("seq", kind="stable")
    members = [transcript_id, *subs]
    own = steps[steps["transcript_id"].isin(members)]
    rank = own["transcript_id"].map({t: i for i, t in enumerate(members)})
    order = pd.DataFrame({"ts": own["ts"], "m": rank, "seq": own["seq"]}).sort_values(
        ["ts", "m", "seq"], kind="stable", na_position="last").index
    return own.loc[order]


def match_door_calls(conv: pd.DataFrame, calls: pd.DataFrame,
                     keys: list[str]) -> dict[int, tuple[int | None, list[int]]]:
    """Pair a conversation's MCP tool calls with the door calls that carried them.

    Args:
        conv: the conversation's steps, in order (:func:`conversation_steps`).
        calls: the door calls, index ``0..n-1`` in the order ``keys`` names them.
        keys: each door call's id (:func:`door_call_ids`).

    Returns:
        ``{position in conv: (door call index or None, [retries])}`` for every step that is an
        MCP tool call (``server`` not NA).  A step takes the door call whose id is its tool-use id,
        failing that the first unclaimed door call with the same tool and canonical arguments;
        ``None`` when the door has no record of it.  The retries are the later door calls that
        logged the same client tool-use id (``meta_call_id``): the client sent the call again,
        the conversation shows it once.
    """
    by_key = {k: i for i, k in enumerate(keys)}
    meta = calls["meta_call_id"] if "meta_call_id" in calls else pd.Series([None] * len(calls), dtype=object)
    same: dict[str, list[int]] = {}
    for i, m in enumerate(meta):
        if isinstance(m, str) and m:
            same.setdefault(m, []).append(i)
    used: set[int] = set()
    out: dict[int, tuple[int | None, list[int]]] = {}
    for pos, st in enumerate(conv.itertuples(index=False)):
        if st.kind != "tool_call" or _opt(st.server) is None:
            continue
        i = by_key.get(st.call_id) if isinstance(st.call_id, str) else None
        if i is None or i in used:
            tool = _opt(st.tool)
            # (a call whose arguments the door did not log, args_key NA, agrees on none)
            cand = [j for j in range(len(calls)) if j not in used and calls.at[j, "tool"] == tool
                    and isinstance(calls.at[j, "args_key"], str) and calls.at[j, "args_key"] == st.args_key]
            i = cand[0] if cand else None
        retries: list[int] = []
        if i is not None:
            used.add(i)
            m = meta.iat[i]
            if isinstance(m, str) and m:
                retries = [j for j in same[m] if j > i and j not in used]
                used.update(retries)
        out[pos] = (i, retries)
    return out


def _cannot_read(path: str | Path, exc: OSError) -> InputError:
    """The error for an input file (the door's log, an object of its evidence store, a
    transcript) the system could not read — an I/O error, no permission — naming that file:
    ``cannot read <path>: Input/output error``; not the capsule's folder, which is written."""
    from .._text import one_line

    err = InputError(f"cannot read {one_line(str(path))}: {exc.strerror or exc}")
    err.path = str(path)
    return err


def _read_input(path: str | Path) -> bytes:
    """A file's bytes as they are on disk (read-only).

    Raises:
        InputError: the file cannot be read (:func:`_cannot_read`)."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise _cannot_read(path, exc) from None


def _door_object(door: EvidenceStore, digest: str, call_id: str) -> bytes | None:
    """The door's captured response ``digest`` from its evidence store, verified; ``None`` when
    the store does not hold it.

    Raises:
        InputError: its file cannot be read (:func:`_cannot_read`: the I/O error names that file).
        IntegrityError: its bytes hash to another digest (names ``call_id``).
        EvidenceMissing: it is a link out of the store, or not a file."""
    try:
        if not door.has(digest):
            return None
        return door.get(digest, call_id=call_id)
    except OSError as exc:  # (its file looked up: the disk answered an error)
        raise _cannot_read(door.path(digest), exc) from None
    except EvidenceMissing as exc:
        if isinstance(exc.__cause__, OSError):  # (opened or read: the disk answered an error)
            raise _cannot_read(door.path(digest), exc.__cause__) from None
        raise


def _put(store: EvidenceStore, data: bytes) -> str:
    """``store.put(data)``: the digest.  An object already in the store (``--out``'s store shared
    with another capsule) is verified, not written again.

    Raises:
        InputError: that object's file cannot be read (:func:`_cannot_read`: names that file).
        IntegrityError: that object's bytes hash to another digest.
        OSError: writing the object failed (no space left, an I/O error …)."""
    try:
        return store.put(data)
    except EvidenceMissing as exc:
        if isinstance(exc.__cause__, OSError):  # (there, but the disk answered an error on reading it)
            raise _cannot_read(store.path(sha256_digest(data)), exc.__cause__) from None
        raise


def _line_obj(row: Any) -> dict | None:
    """The JSON object of a transcript row's line (re-read: the frame holds no whole line);
    ``None`` when the line is not there or not JSON.

    Raises:
        InputError: the transcript cannot be read now (:func:`_cannot_read`)."""
    try:
        data = read_bytes(row.source_file)
    except gzip.BadGzipFile:
        return None
    except OSError as exc:
        raise _cannot_read(row.source_file, exc) from None
    except (TypeError, ValueError):  # (no file named)
        return None
    try:
        lines = data.split(b"\n")
        return orjson.loads(lines[int(row.line_no) - 1])
    except (IndexError, ValueError, TypeError, orjson.JSONDecodeError):
        return None


def _prompt_bytes(row: Any) -> bytes | None:
    """The full text of a user prompt (re-read from its line: the frame's text is truncated)."""
    o = _line_obj(row)
    content = ((o or {}).get("message") or {}).get("content")
    if isinstance(content, str):
        return content.encode("utf-8")
    if isinstance(content, list):
        parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        if parts:
            return "\n".join(parts).encode("utf-8")
    return None if pd.isna(row.text) else str(row.text).encode("utf-8")


def _opt(v: Any) -> Any:
    return None if v is None or (not isinstance(v, (list, dict)) and pd.isna(v)) else v


def _unlogged_calls(conv: pd.DataFrame, calls: pd.DataFrame, ids: list[str], cap: Capture) -> list[dict]:
    """``tool_evidence`` entries for the conversation's MCP tool calls the door has no record of
    (a door log cut short, a server the agent reached without the door): no decision, no
    response, no time — the capsule says it lacks their evidence instead of leaving them out."""
    out: list[dict] = []
    taken = set(ids)
    servers = {t: sv for t, sv in zip(calls["tool"], calls["server"]) if isinstance(sv, str)}
    for pos, (i, _) in match_door_calls(conv, calls, ids).items():
        if i is not None:
            continue
        st = conv.iloc[pos]
        tool = str(_opt(st["tool"]) or _opt(st["tool_raw"]) or "unknown")
        server = servers.get(tool) or str(_opt(st["server"]))  # the door's name for it when it knows the tool
        base = st["call_id"] if isinstance(st["call_id"], str) and st["call_id"] else \
            f"{st['transcript_id']}:{st['line_no']}"
        call_id, n = base, 1
        while call_id in taken:
            n += 1
            call_id = f"{base}#{n}"
        taken.add(call_id)
        args = st["arguments"] if isinstance(st["arguments"], dict) else {}
        out.append({"call_id": call_id, "server": server, "method": tool,
                    "request_digest": request_digest(server, tool, args), "response_digest": None,
                    "captured_response_ref": None, "observed_at": None,
                    "effect": cap.tool_effects.get(f"{server}/{tool}") or guess_effect(tool),
                    "policy": None, "error": None})
    return out


def build_capsule(incident: str | Path | Incident, door_evidence: str | Path | None, out_dir: str | Path, *,
                  repo: str | Path | None = None, capture: Capture | None = None,
                  operation_id: str | None = None) -> Capsule:
    """Build ``<out_dir>/capsule.yaml`` and its evidence store ``<out_dir>/evidence``.

    Args:
        incident: the incident manifest (or its folder, or a loaded :class:`~replaybook.Incident`).
        door_evidence: the door's captured-responses folder (``sha256/<hex>``); ``None`` = none kept.
        out_dir: where to write the capsule (created).
        repo: a git checkout; overrides ``capture.repository``.
        capture: what the runtime captured (:func:`load_capture`).
        operation_id: overrides ``capture.operation_id`` (default ``op-<first door session>``).

    Returns:
        The saved, schema-valid :class:`~replaybook.capsule.model.Capsule`, with ``completeness``
        and ``completeness_reasons`` computed by :func:`~replaybook.capsule.verify.verify_capsule`,
        whose report (every object read back once it was written) is its ``verification``;
        its ``capsule.yaml`` is ``fsync``'d with its folder entry and read back byte for byte, after
        the evidence store's folders are ``fsync``'d (:meth:`~.store.EvidenceStore.sync`).

    Raises:
        ManifestError: the incident manifest is bad.
        CapsuleFormatError: the incident has no door calls, or the checkout is not a git checkout.
        IntegrityError: an object in the door's folder does not match its digest (names the call).
        ReadBackError: the ``capsule.yaml`` written does not read back as written (short, other
            bytes, unreadable): what was written is no capsule.
        InputError: an input — the door's log, an object of its evidence store, the transcript,
            an object ``out_dir``'s store already held — cannot be read (an I/O error, no
            permission): ``cannot read <that file>: <why>``.
        OSError: writing ``out_dir`` failed (no space left, an I/O error …).
    """
    from .verify import verify_capsule

    inc = incident if isinstance(incident, Incident) else Incident.load(incident)
    cap = capture or Capture()
    out = Path(out_dir)
    calls = inc.calls
    if calls.empty:
        raise CapsuleFormatError("the incident's door log has no calls: nothing to capture", inc.path)
    calls = calls.sort_values(["ts", "seq"], kind="stable").reset_index(drop=True)
    ids = door_call_ids(calls)
    op = operation_id or cap.operation_id or f"op-{calls['door_session'].iloc[0]}"
    store = EvidenceStore(out / "evidence")
    door = EvidenceStore(door_evidence) if door_evidence is not None else None

    evidence = []
    for call_id, row in zip(ids, calls.itertuples(index=False)):
        server = _opt(row.server) or "unknown"
        resp = _opt(row.response_digest)
        ref = None
        got = _door_object(door, resp, call_id) if resp and door is not None else None
        if got is not None:
            _put(store, got)
            ref = evidence_ref(op, call_id)
        effect = cap.tool_effects.get(f"{server}/{row.tool}") or guess_effect(row.tool)
        observed = row.ts_end if not pd.isna(row.ts_end) else row.ts
        evidence.append({"call_id": call_id, "server": server, "method": row.tool,
                         "request_digest": door_request_digest(server, row.tool, row.arguments,
                                                               getattr(row, "arguments_digest", None)),
                         "response_digest": resp, "captured_response_ref": ref, "observed_at": iso_z(observed),
                         "effect": effect, "policy": {"result": row.decision, "rule": _opt(row.rule)},
                         "error": _opt(row.error)})

    def keep(data: bytes | None, name: str) -> tuple[str | None, str | None]:
        if data is None:
            return None, None
        return _put(store, data), evidence_ref(op, name)

    # repository
    if repo is not None:
        st = repo_state(repo)
        commit, dirty = st.commit, st.dirty_tree
    else:
        commit, dirty = cap.repository_commit, cap.repository_dirty_tree
    dirty_digest, dirty_ref = keep(dirty, "repository.dirty-tree")

    # transcript: task prompt, model, workdir
    steps = inc.steps
    tid = select_transcript(steps, set(ids), inc.join)
    tsteps = steps[steps["transcript_id"] == tid] if tid is not None else steps.iloc[0:0]
    conv = conversation_steps(steps, tid)  # with its sub-agents' and resumed sessions': when the run began
    evidence += _unlogged_calls(conv, calls, ids, cap)
    prompts = tsteps[tsteps["kind"] == "user_prompt"]
    task = _prompt_bytes(next(prompts.itertuples(index=False))) if not prompts.empty else None
    first = _line_obj(next(tsteps.itertuples(index=False))) if not tsteps.empty else None
    workdir = cap.workdir or ((first or {}).get("cwd") if isinstance((first or {}).get("cwd"), str) else None)
    models = tsteps.loc[tsteps["kind"] == "model_request", "model"].dropna()
    model = str(models.iloc[0]) if not models.empty else None
    clients = tsteps["client"].dropna()
    provider = cap.provider or ("anthropic" if not clients.empty and clients.iloc[0] == "claude-code" else None)

    started = cap.started_at
    if started is None:
        times = [t for t in (conv["ts"].min() if not conv.empty else None, calls["ts"].min())
                 if t is not None and not pd.isna(t)]
        started = iso_z(min(times)) if times else None
    else:
        started = iso_z(started)

    principal = cap.principal
    if principal is None:
        agents = calls["agent"].dropna().unique()
        principal = str(agents[0]) if len(agents) == 1 else None

    logs = []
    for i, info in enumerate(x for x in inc.loaded_inputs() if x["format"] == "door"):
        p = Path(info["path"])
        p = p if p.is_absolute() else inc.root / p
        logs.append({"digest": _put(store, _read_input(p)), "ref": evidence_ref(op, f"door-log.{i + 1}")})

    sys_d, sys_r = keep(cap.system_prompt, "prompt.system")
    task_d, task_r = keep(task, "prompt.task")
    par_d, par_r = keep(cap.model_parameters, "model.parameters")
    img_d, img_r = keep(cap.image_manifest, "runtime.image-manifest")
    flg_d, flg_r = keep(cap.feature_flags, "runtime.feature-flags")
    tok_d, tok_r = keep(cap.token_info, "authority.token-info")

    data = {
        "capsule_version": 1,
        "operation_id": op,
        "evidence_store": "evidence",
        "repository": {"commit": commit, "dirty_tree_digest": dirty_digest, "dirty_tree_ref": dirty_ref,
                       "workdir": workdir,
                       **({"none": True} if repo is None and cap.repository_none and not commit else {})},
        "prompts": {"system_digest": sys_d, "system_ref": sys_r, "task_digest": task_d, "task_ref": task_r},
        "model": {"provider": provider, "model": model, "parameters_digest": par_d, "parameters_ref": par_r},
        "runtime": {"image_digest": img_d, "image_ref": img_r, "started_at": started,
                    "clock_source": cap.clock_source or "door", "flags_digest": flg_d, "flags_ref": flg_r},
        "authority": {"principal": principal, "scopes": None if cap.scopes is None else sorted(cap.scopes),
                      "policy_version": cap.policy_version, "token_info_digest": tok_d, "token_info_ref": tok_r,
                      "decision_logs": logs},
        "tool_evidence": evidence,
        "missing_evidence_policy": {"default": "stop",
                                    "permitted_fallbacks": [{"server": f["server"], "method": f.get("method", "*")}
                                                            for f in cap.permitted_fallbacks],
                                    "verdict_on_missing_input": "replay_incomplete"},
        "completeness": "unproven",
        "completeness_reasons": ["not verified yet"],
    }
    # the objects' folder entries reach the disk before the capsule.yaml naming them is written
    store.sync()
    capsule = Capsule.from_dict(data, out / "capsule.yaml")
    capsule.save(out)
    report = verify_capsule(capsule)  # (every object read back from disk and re-hashed)
    capsule.data["completeness"] = report.completeness
    capsule.data["completeness_reasons"] = report.reasons
    _read_back(capsule.save(out), capsule.to_yaml().encode("utf-8"))
    capsule.verification = replace(report, declared=report.completeness)  # (as a verify now would say)
    return capsule


def _read_back(path: Path, meant: bytes) -> None:
    """Read the ``capsule.yaml`` just saved back from disk and compare it with the bytes meant
    (as each evidence object is read back): a manifest the disk kept short or changed is no
    capsule.

    Raises:
        ReadBackError: its bytes differ (``N bytes read back, M written``, or ``its bytes differ
            from those written``), or it cannot be read (the system's reason)."""
    try:
        with open(path, "rb") as fh:
            got = fh.read()
    except OSError as exc:
        raise ReadBackError(path, exc.strerror or str(exc)) from None
    if got != meant:
        raise ReadBackError(path, f"{len(got)} bytes read back, {len(meant)} written" if len(got) != len(meant)
                            else "its bytes differ from those written")

