"""Checkpoints of the incident itself, extracted from its evidence (transcript + door log + capsule).

The incident run is rebuilt in transcript order — the transcript's steps and its Claude Code
sub-agents' (``agent-<id>.jsonl`` files, :func:`~replaybook.capsule.build.conversation_steps`),
in time order, since a sub-agent's edits and calls are the run's too:

* an MCP tool call of the transcript is matched to its door call by the client's tool-use id
  (the door's ``meta_call_id``; failing that, the next unclaimed door call with the same tool and
  canonical arguments, :func:`~replaybook.capsule.build.match_door_calls`) and yields
  ``tool_choice``, ``tool_request``, ``policy`` (the door's decision and rule, with the
  capsule's authority), then — when allowed — ``response_schema`` (from the captured response in
  the store), ``tool_response`` (the door's ``response_digest``) and, for a write, ``effect``;
  door calls that logged the same tool-use id again (the client's retries) follow it at once;
* an MCP tool call the door has no record of yields ``tool_choice`` and ``tool_request`` (from
  the transcript's arguments) and a ``failed`` ``policy`` checkpoint: the call was made, what it
  was answered is not known;
* a built-in ``Edit``/``MultiEdit``/``Write`` yields ``patch`` checkpoints (paths made relative
  to the capsule's ``repository.workdir``; ``Write`` counts as replacing ``""``);
* a built-in ``Bash`` running pytest yields ``tests``: positional arguments are selected,
  ``--deselect``/``--ignore`` values omitted, ``-k``/``-m`` expressions kept as selected;
* door calls no transcript step claims follow, in door order;
* a door ``ask`` adds ``decision.approval`` = ``requested`` after the policy checkpoint (the call
  itself is not answered); a call replaybook's door asked its user about adds
  ``decision.approval`` = the answer (``approved``, ``declined`` …) after the policy checkpoint;
* the run ends with ``decision.stop``: ``policy_denied`` when the last tool call was refused,
  ``end_turn`` when the transcript ends with the model's answer, else ``interrupted``.

The repository ``state`` and ``authority`` checkpoints come from the capsule.  Other built-in
tools (Read, Grep …) are not checkpoints: what they read is pinned by the repository state.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pandas as pd

from ..incident import Incident
from .build import conversation_steps, door_call_ids, match_door_calls, select_transcript
from .checkpoints import (CheckpointLog, authority_checkpoint, decision_checkpoint, effect_checkpoint,
                          patch_checkpoint, policy_checkpoint, response_schema_checkpoint, state_checkpoint,
                          target_scope, tests_checkpoint, tool_choice_checkpoint, tool_request_checkpoint,
                          tool_response_checkpoint)
from .digest import door_request_digest, parse_response, request_digest, sha256_digest
from .errors import EvidenceMissing, IntegrityError
from .model import Capsule, guess_effect, load_capsule
from .runs import RunRecord
from .store import EvidenceStore

__all__ = ["incident_run", "parse_pytest"]

_VALUE_OPTS = {"--deselect", "--ignore", "--ignore-glob", "-k", "-m", "-p", "-c", "-o", "--rootdir",
               "--maxfail", "--tb", "--confcutdir", "--basetemp", "-W", "--durations", "--junitxml", "-n"}


def parse_pytest(command: str) -> tuple[list[str], list[str]] | None:
    """``(selected, omitted)`` of a pytest command line, or ``None`` when it does not run pytest.

    >>> parse_pytest("pytest -q tests/a.py --deselect tests/b.py")
    (['tests/a.py'], ['tests/b.py'])
    """
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for i, w in enumerate(words):
        if w in ("pytest", "py.test") or w.endswith("/pytest"):
            args = words[i + 1:]
            break
        if w == "-m" and i + 1 < len(words) and words[i + 1] == "pytest":
            args = words[i + 2:]
            break
    else:
        return None
    selected, omitted = [], []
    it = iter(range(len(args)))
    for i in it:
        a = args[i]
        if a in ("&&", "||", ";", "|"):
            break
        name, eq, val = a.partition("=")
        if name in ("--deselect", "--ignore", "--ignore-glob"):
            v = val if eq else (args[i + 1] if i + 1 < len(args) else "")
            omitted.append(v)
            if not eq:
                next(it, None)
        elif name in ("-k", "-m"):
            v = val if eq else (args[i + 1] if i + 1 < len(args) else "")
            selected.append(f"{name} {v}")
            if not eq:
                next(it, None)
        elif a in _VALUE_OPTS:
            next(it, None)
        elif not a.startswith("-"):
            selected.append(a)
    return selected, omitted


def _rel(path: str, workdir: str | None) -> str:
    if workdir and path.startswith(workdir.rstrip("/") + "/"):
        return path[len(workdir.rstrip("/")) + 1:]
    return path


def _na(v: Any) -> Any:
    return None if v is None or (not isinstance(v, (dict, list)) and pd.isna(v)) else v


def incident_run(capsule: Capsule | str | Path, incident: Incident | str | Path, *, run: str = "incident",
                 store: EvidenceStore | None = None) -> RunRecord:
    """The incident's run record, extracted from its evidence (see the module docstring).

    Args:
        capsule: the incident's capsule (or the path of capsule.yaml / its folder).
        incident: the incident manifest (or a loaded :class:`~replaybook.Incident`).
        run: the run's name.
        store: the evidence store (default: the capsule's).

    Returns:
        A ``completed`` :class:`~replaybook.capsule.runs.RunRecord` in mode ``incident``.  Inputs
        that cannot be established (authority not captured, a response object missing or
        damaged) become ``failed`` / ``missing_evidence`` checkpoints rather than errors.

    Raises:
        ManifestError, CapsuleFormatError: the manifest or capsule cannot be read.
    """
    cap = capsule if isinstance(capsule, Capsule) else load_capsule(capsule)
    inc = incident if isinstance(incident, Incident) else Incident.load(incident)
    st = store if store is not None else cap.store()
    evidence = {ev.call_id: ev for ev in cap.tool_evidence}
    calls = inc.calls.sort_values(["ts", "seq"], kind="stable").reset_index(drop=True)
    if not calls.empty:
        calls["call_key"] = door_call_ids(calls)
        calls = calls[calls["call_key"].isin(list(evidence))].reset_index(drop=True)
    else:
        calls["call_key"] = pd.Series(dtype="object")
    steps = inc.steps
    tid = select_transcript(steps, set(calls["call_key"]), inc.join)
    tsteps = conversation_steps(steps, tid)  # a sub-agent's edits and calls are the run's too

    log = CheckpointLog()
    repo = cap.repository
    log.add(state_checkpoint(repo.get("commit"), repo.get("dirty_tree_digest"), cap.started_at, {"source": "capsule"},
                             none=bool(repo.get("none"))))
    log.add(authority_checkpoint(cap.authority, cap.started_at, {"source": "capsule"}))
    authority = cap.authority
    workdir = repo.get("workdir")
    used: set[int] = set()
    last_denied = False

    def door_event(i: int) -> None:
        nonlocal last_denied
        used.add(i)
        row = calls.iloc[i]
        ev = evidence[row["call_key"]]
        server, method, args = ev.server, ev.method, row["arguments"]
        rd = door_request_digest(server, method, args, row.get("arguments_digest"))
        target = _na(row["object"]) or target_scope(args if isinstance(args, dict) else {})
        ts, call_id = row["ts"], ev.call_id
        log.add(tool_choice_checkpoint(server, method, ev.effect or guess_effect(method), ts, call_id))
        log.add(tool_request_checkpoint(server, method, rd, target, ts, call_id))
        log.add(policy_checkpoint(server, method, row["decision"], _na(row["rule"]), authority, ts, call_id))
        last_denied = row["decision"] != "allow"
        if row["decision"] == "ask":  # a gateway that logs the question itself, unanswered
            log.add(decision_checkpoint("approval", "requested", ts))
        elif "approval" in row.index and isinstance(row["approval"], str):  # the door asked; the user answered
            log.add(decision_checkpoint("approval", row["approval"], ts))
        if last_denied:
            return
        rts = row["ts_end"] if not pd.isna(row["ts_end"]) else ts
        resp = _na(row["response_digest"])
        status, parsed = "ok", None
        try:
            if not resp:
                raise EvidenceMissing("no response digest")
            parsed = parse_response(st.get(resp, call_id=call_id))
        except EvidenceMissing:
            status = "missing_evidence"
        except IntegrityError:
            status = "failed"
        if status == "ok":
            log.add(response_schema_checkpoint(server, method, parsed, rts, call_id))
        else:
            cp = response_schema_checkpoint(server, method, None, rts, call_id, status=status)
            cp.digest, cp.summary, cp.detail = None, f"{method}: response object {status.replace('_', ' ')}", {}
            log.add(cp)
        log.add(tool_response_checkpoint(server, method, resp, rts, call_id, "ok" if resp else "missing_evidence",
                                         {"ref": ev.captured_response_ref, "observed_at": ev.observed_at,
                                          "request_digest": rd, "source": "door"}))
        if ev.effect == "write" and not _na(row["error"]):
            log.add(effect_checkpoint(server, method, rd, target, rts, call_id, {"performed": True}))

    def unlogged_event(s: Any) -> None:
        """An MCP call of the transcript the door has no record of: made, but its answer unknown."""
        nonlocal last_denied
        last_denied = False
        cid = s.call_id if isinstance(s.call_id, str) and s.call_id else f"{s.transcript_id}:{s.line_no}"
        ev = evidence.get(cid)
        method = ev.method if ev else str(_na(s.tool) or "unknown")
        server = ev.server if ev else str(_na(s.server))
        args = s.arguments if isinstance(s.arguments, dict) else {}
        log.add(tool_choice_checkpoint(server, method, ev.effect if ev else guess_effect(method), s.ts, cid))
        log.add(tool_request_checkpoint(server, method, request_digest(server, method, args), target_scope(args),
                                        s.ts, cid))
        cp = policy_checkpoint(server, method, None, None, authority, s.ts, cid)
        cp.summary = f"{method}: the door has no record of this call (no decision, no response captured)"
        cp.context["source"] = "transcript"
        log.add(cp)

    matches = match_door_calls(tsteps, calls, list(calls["call_key"]))
    last_kind = None
    for pos, s in enumerate(tsteps.itertuples(index=False)):
        if s.kind in ("user_prompt", "model_request", "tool_call", "tool_result"):
            last_kind = s.kind
        if s.kind != "tool_call":
            continue
        tool = _na(s.tool)
        if _na(s.server) is not None:
            i, retries = matches[pos]
            if i is None:
                unlogged_event(s)
            for j in ([] if i is None else [i, *retries]):
                door_event(j)
            continue
        args = s.arguments if isinstance(s.arguments, dict) else {}
        if tool in ("Edit", "MultiEdit", "Write"):
            path = _rel(str(args.get("file_path", "")), workdir)
            if tool == "Edit":
                edits = [(args.get("old_string", ""), args.get("new_string", ""))]
            elif tool == "MultiEdit":
                edits = [(e.get("old_string", ""), e.get("new_string", "")) for e in args.get("edits") or []
                         if isinstance(e, dict)]
            else:
                edits = [("", args.get("content", ""))]
            for old, new in edits:
                log.add(patch_checkpoint(path, str(old), str(new), s.ts))
        elif tool == "Bash":
            parsed = parse_pytest(str(args.get("command", "")))
            if parsed is not None:
                log.add(tests_checkpoint(parsed[0], parsed[1], s.ts))
    for i in range(len(calls)):
        if i not in used:
            door_event(i)
    end_ts = tsteps["ts"].max() if not tsteps.empty else (calls["ts_end"].max() if not calls.empty else None)
    if last_denied:
        stop = "policy_denied"
    elif last_kind in (None, "model_request"):
        stop = "end_turn"
    else:
        stop = "interrupted"
    log.add(decision_checkpoint("stop", stop, None if end_ts is None or pd.isna(end_ts) else end_ts))
    digest = sha256_digest(cap.path.read_bytes()) if cap.path is not None and cap.path.is_file() else None
    return RunRecord(run=run, mode="incident", checkpoints=list(log.checkpoints), status="completed",
                     operation_id=cap.operation_id, capsule_digest=digest, started_at=cap.started_at,
                     evidence_time=cap.started_at, external_calls="recorded", external_effects_replayed=False,
                     evidence_store=st.root)
