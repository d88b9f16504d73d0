"""Structured checkpoints: what a run decided, as digests, in order.

Two runs are compared by their checkpoints, never by prose.  A run (the incident, a forensic
replay, a live verification) is a sequence of :class:`Checkpoint`; each has a ``kind`` from
:data:`CHECKPOINT_KINDS`, a ``key`` saying what it is about, a ``detail`` mapping (the
decision-relevant facts) and a ``digest`` over them.  ``context`` holds facts that are *not*
compared (times, call ids, evidence references, the policy's clock conditions).

Kinds, in the order a tool call produces them, and what the digest covers:

================  ===================  ===================================================
kind              key                  digest over
================  ===================  ===================================================
state             ``repository``       commit and dirty-tree digest
authority         ``effective``        principal, scopes, policy version
tool_choice       server (``_`` form)  server, method, intended effect (read/write)
tool_request      server               the request digest itself (target scope in detail)
policy            server               result, rule, principal, scopes, policy version
response_schema   server               the response's observed shape (digest.response_shape)
tool_response     server               the response digest itself
effect            server               server, method, request digest of a committed write
patch             file path            path, old text, new text (one proposed edit)
tests             ``selection``        tests selected and omitted
decision          stop/approval/       the decision and its value (``end_turn``,
                  rollback             ``policy_denied``, ``unrecognised_response_schema`` …)
================  ===================  ===================================================

A checkpoint's ``label`` is ``<kind>.<key>``, with ``#<n>`` for the n-th occurrence (n ≥ 2) of
the same kind and key in one run (``tool_choice.repo_host#2``).

Statuses (:data:`CHECKPOINT_STATUSES`): ``ok``; ``failed`` (the input could not be established,
e.g. authority not captured); ``missing_evidence`` (the evidence object is absent);
``simulated`` (a write a read-only live run did not send; its response is not compared);
``substituted`` (a live read replaced missing evidence); ``contaminated`` (recorded after a
substitution: it may depend on current state).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from ..frames import Column, FrameSpec
from .digest import json_digest, response_shape, short
from .model import Authority, iso_z

__all__ = [
    "CHECKPOINT_KINDS",
    "CHECKPOINT_STATUSES",
    "DECISION_KINDS",
    "TARGET_KEYS",
    "CHECKPOINTS",
    "Checkpoint",
    "CheckpointLog",
    "server_key",
    "target_scope",
    "state_checkpoint",
    "authority_checkpoint",
    "tool_choice_checkpoint",
    "tool_request_checkpoint",
    "policy_checkpoint",
    "response_schema_checkpoint",
    "tool_response_checkpoint",
    "effect_checkpoint",
    "patch_checkpoint",
    "tests_checkpoint",
    "decision_checkpoint",
    "checkpoints_frame",
    "labels",
]

#: Values of ``checkpoints.kind``.
CHECKPOINT_KINDS = ("state", "authority", "tool_choice", "tool_request", "policy", "response_schema",
                    "tool_response", "effect", "patch", "tests", "decision")

#: Values of ``checkpoints.status``.
CHECKPOINT_STATUSES = ("ok", "failed", "missing_evidence", "simulated", "substituted", "contaminated")

#: Keys of ``decision`` checkpoints.
DECISION_KINDS = ("stop", "approval", "rollback")

#: Argument names whose value names a call's target scope, in order of preference.
TARGET_KEYS = ("service", "repo", "repository", "path", "file_path", "object", "uri", "url", "flag",
               "table", "name", "target")

CHECKPOINTS = FrameSpec(
    "checkpoints",
    (
        Column("run", "string", "the run's name (incident, forensic, live …)"),
        Column("mode", "string", "incident, forensic or live"),
        Column("order", "Int64", "1-based position of the checkpoint in its run"),
        Column("kind", "string", "one of CHECKPOINT_KINDS"),
        Column("key", "string", "what it is about: a server (`service_catalogue`), a file path, `stop` …"),
        Column("label", "string", "`<kind>.<key>`, `#n` appended for the n-th repeat in the run"),
        Column("digest", "string", "sha256:<hex> compared across runs; NA when the input could not be established"),
        Column("summary", "string", "short human summary of the value (never a secret)"),
        Column("ts", "datetime64[ns, UTC]", "when, on the run's clock (forensic: the captured times), UTC"),
        Column("status", "string", "one of CHECKPOINT_STATUSES"),
        Column("call_id", "string", "the tool call it belongs to, if any"),
        Column("detail", "object", "the digested facts (dict)"),
        Column("context", "object", "facts not compared: times, references, policy conditions (dict)"),
    ),
    "One row per structured checkpoint of a run, in run order.",
)

_KEY_RE = re.compile(r"[^A-Za-z0-9_./]+")


def server_key(server: str | None) -> str:
    """A server name as a checkpoint key: ``service-catalogue`` → ``service_catalogue``."""
    return _KEY_RE.sub("_", server or "unknown").strip("_") or "unknown"


def target_scope(arguments: Mapping | None) -> str | None:
    """The target a call's arguments name, as ``key:value`` (first of :data:`TARGET_KEYS`), or ``None``."""
    if not isinstance(arguments, Mapping):
        return None
    for k in TARGET_KEYS:
        v = arguments.get(k)
        if isinstance(v, (str, int)) and not isinstance(v, bool) and str(v):
            return f"{k}:{v}"
    return None


@dataclass
class Checkpoint:
    """One structured checkpoint (see the module docstring).

    ``ts`` is an ISO 8601 UTC string or ``None``; ``order`` is set by :class:`CheckpointLog`.
    """

    kind: str
    key: str
    digest: str | None
    summary: str
    ts: str | None = None
    status: str = "ok"
    call_id: str | None = None
    detail: dict = field(default_factory=dict)
    context: dict = field(default_factory=dict)
    order: int = 0
    label: str = ""

    def to_dict(self) -> dict:
        """The checkpoint as a JSON-ready dict (run-record form)."""
        return {"order": self.order, "kind": self.kind, "key": self.key, "label": self.label,
                "digest": self.digest, "summary": self.summary, "ts": self.ts, "status": self.status,
                "call_id": self.call_id, "detail": self.detail, "context": self.context}

    @classmethod
    def from_dict(cls, d: Mapping) -> "Checkpoint":
        """Rebuild from :meth:`to_dict` output."""
        return cls(kind=d["kind"], key=d["key"], digest=d.get("digest"), summary=d.get("summary") or "",
                   ts=d.get("ts"), status=d.get("status", "ok"), call_id=d.get("call_id"),
                   detail=dict(d.get("detail") or {}), context=dict(d.get("context") or {}),
                   order=int(d.get("order") or 0), label=d.get("label") or "")


def labels(checkpoints: Sequence[Checkpoint]) -> list[str]:
    """The labels of a run's checkpoints: ``<kind>.<key>`` with ``#n`` on repeats."""
    seen: dict[tuple[str, str], int] = {}
    out = []
    for c in checkpoints:
        n = seen[(c.kind, c.key)] = seen.get((c.kind, c.key), 0) + 1
        out.append(f"{c.kind}.{c.key}" + (f"#{n}" if n > 1 else ""))
    return out


class CheckpointLog:
    """An append-only checkpoint sequence for one run.

    After :meth:`contaminate` every later ``ok`` checkpoint is recorded as ``contaminated``.
    """

    def __init__(self) -> None:
        self.checkpoints: list[Checkpoint] = []
        self.contaminated = False
        self._seen: dict[tuple[str, str], int] = {}

    def add(self, cp: Checkpoint) -> Checkpoint:
        """Append ``cp`` (sets its ``order`` and ``label``) and return it."""
        cp.order = len(self.checkpoints) + 1
        n = self._seen[(cp.kind, cp.key)] = self._seen.get((cp.kind, cp.key), 0) + 1
        cp.label = f"{cp.kind}.{cp.key}" + (f"#{n}" if n > 1 else "")
        if self.contaminated and cp.status == "ok":
            cp.status = "contaminated"
        self.checkpoints.append(cp)
        return cp

    def contaminate(self) -> None:
        """Mark every checkpoint recorded from now on as contaminated by current state."""
        self.contaminated = True

    def __len__(self) -> int:
        return len(self.checkpoints)


# -- builders --------------------------------------------------------------------------------

def state_checkpoint(commit: str | None, dirty_tree_digest: str | None, ts: Any = None,
                     context: dict | None = None, *, none: bool = False) -> Checkpoint:
    """The repository state (``state.repository``); ``failed`` when either part is unknown —
    unless ``none``: the agent worked on no repository (a capsule's ``repository.none``), a
    state pinned as such."""
    if none and not commit:
        detail = {"repository": "none"}
        return Checkpoint("state", "repository", json_digest(detail), "no repository (declared)", iso_z(ts), "ok",
                          None, detail, dict(context or {}))
    detail = {"commit": commit, "dirty_tree_digest": dirty_tree_digest}
    ok = bool(commit) and bool(dirty_tree_digest)
    summary = f"commit {commit[:12] if commit else '?'}, dirty tree {short(dirty_tree_digest)}"
    return Checkpoint("state", "repository", json_digest(detail) if ok else None, summary, iso_z(ts),
                      "ok" if ok else "failed", None, detail, dict(context or {}))


def authority_checkpoint(authority: Authority, ts: Any = None, context: dict | None = None) -> Checkpoint:
    """The effective identity (``authority.effective``); ``failed`` when a field was not captured."""
    detail = authority.to_dict()
    missing = authority.missing()
    if missing:
        return Checkpoint("authority", "effective", None, "not captured: " + ", ".join(missing), iso_z(ts),
                          "failed", None, detail, {**(context or {}), "missing": missing})
    summary = f"{authority.principal} [{', '.join(authority.scopes or ())}] under {authority.policy_version}"
    return Checkpoint("authority", "effective", json_digest(detail), summary, iso_z(ts), "ok", None, detail,
                      dict(context or {}))


def tool_choice_checkpoint(server: str, method: str, effect: str, ts: Any = None,
                           call_id: str | None = None) -> Checkpoint:
    """The chosen tool and its intended effect (``tool_choice.<server>``)."""
    detail = {"server": server, "method": method, "effect": effect}
    return Checkpoint("tool_choice", server_key(server), json_digest(detail), f"{server} {method} ({effect})",
                      iso_z(ts), "ok", call_id, detail, {})


def tool_request_checkpoint(server: str, method: str, request_digest: str, target: str | None,
                            ts: Any = None, call_id: str | None = None) -> Checkpoint:
    """The request digest and target scope (``tool_request.<server>``)."""
    detail = {"request_digest": request_digest, "target": target}
    return Checkpoint("tool_request", server_key(server), request_digest,
                      f"{method} → {target or '(no target)'}", iso_z(ts), "ok", call_id, detail,
                      {"method": method})


def policy_checkpoint(server: str, method: str, result: str | None, rule: str | None, authority: Authority,
                      ts: Any = None, call_id: str | None = None, conditions: dict | None = None) -> Checkpoint:
    """The policy result and effective identity for one call (``policy.<server>``).

    ``conditions`` (e.g. ``{"clock": …, "change_window": "closed"}``) go to ``context``: they
    explain a result but are not compared.  ``failed`` when no decision was captured.
    """
    detail = {"result": result, "rule": rule, **authority.to_dict()}
    ctx = {"method": method, "evaluated_at": iso_z(ts), "conditions": dict(conditions or {})}
    if result is None:
        return Checkpoint("policy", server_key(server), None, f"{method}: no policy decision captured",
                          iso_z(ts), "failed", call_id, detail, ctx)
    return Checkpoint("policy", server_key(server), json_digest(detail),
                      f"{method}: {result} by {rule or '?'} as {authority.principal or '?'}", iso_z(ts), "ok",
                      call_id, detail, ctx)


def response_schema_checkpoint(server: str, method: str, response: Any, ts: Any = None,
                               call_id: str | None = None, status: str = "ok") -> Checkpoint:
    """The observed output schema of a response (``response_schema.<server>``)."""
    shape = response_shape(response)
    top = sorted(shape["object"]) if isinstance(shape, dict) and "object" in shape else [str(shape)]
    return Checkpoint("response_schema", server_key(server), json_digest(shape),
                      f"{method}: {{{', '.join(top)}}}", iso_z(ts), status, call_id, {"shape": shape},
                      {"method": method})


def tool_response_checkpoint(server: str, method: str, response_digest: str | None, ts: Any = None,
                             call_id: str | None = None, status: str = "ok",
                             context: dict | None = None) -> Checkpoint:
    """The response digest (``tool_response.<server>``); the digest *is* the response digest."""
    st = status if response_digest else "missing_evidence"
    return Checkpoint("tool_response", server_key(server), response_digest,
                      f"{method} → {short(response_digest)}", iso_z(ts), st, call_id,
                      {"response_digest": response_digest}, {"method": method, **(context or {})})


def effect_checkpoint(server: str, method: str, request_digest: str, target: str | None, ts: Any = None,
                      call_id: str | None = None, context: dict | None = None) -> Checkpoint:
    """A committed external effect (``effect.<server>``): a write the agent had performed."""
    detail = {"server": server, "method": method, "request_digest": request_digest}
    return Checkpoint("effect", server_key(server), json_digest(detail),
                      f"{server} {method} on {target or '(no target)'}", iso_z(ts), "ok", call_id, detail,
                      {"target": target, **(context or {})})


def patch_checkpoint(path: str, old: str, new: str, ts: Any = None) -> Checkpoint:
    """One proposed edit (``patch.<path>``): digest over ``{path, old, new}``."""
    digest = json_digest({"path": path, "old": old, "new": new})
    added, removed = new.count("\n") + (1 if new and not new.endswith("\n") else 0), \
        old.count("\n") + (1 if old and not old.endswith("\n") else 0)
    return Checkpoint("patch", path, digest, f"{path}: -{removed} +{added} lines ({short(digest)})",
                      iso_z(ts), "ok", None, {"path": path, "patch_digest": digest}, {})


def tests_checkpoint(selected: Iterable[str], omitted: Iterable[str], ts: Any = None) -> Checkpoint:
    """Tests selected and omitted (``tests.selection``); both lists sorted."""
    detail = {"selected": sorted(selected), "omitted": sorted(omitted)}
    return Checkpoint("tests", "selection", json_digest(detail),
                      f"selected {len(detail['selected'])}, omitted {', '.join(detail['omitted']) or 'none'}",
                      iso_z(ts), "ok", None, detail, {})


def decision_checkpoint(kind: str, value: str, ts: Any = None, context: dict | None = None) -> Checkpoint:
    """A stop, approval or rollback decision (``decision.<kind>``).

    Raises:
        ValueError: ``kind`` is not one of :data:`DECISION_KINDS`.
    """
    if kind not in DECISION_KINDS:
        raise ValueError(f"decision kind must be one of {DECISION_KINDS}, not {kind!r}")
    detail = {"decision": kind, "value": value}
    return Checkpoint("decision", kind, json_digest(detail), f"{kind}: {value}", iso_z(ts), "ok", None, detail,
                      dict(context or {}))


def checkpoints_frame(runs: Any) -> pd.DataFrame:
    """The :data:`CHECKPOINTS` frame of one run record or several (concatenated in the order given).

    Args:
        runs: a :class:`~replaybook.capsule.runs.RunRecord`, a list of them, or a mapping
            ``{name: RunRecord}``.

    Returns:
        A frame with exactly :data:`CHECKPOINTS` columns and dtypes (``ts`` UTC).
    """
    if isinstance(runs, Mapping):
        runs = list(runs.values())
    elif not isinstance(runs, (list, tuple)):
        runs = [runs]
    rows = []
    for r in runs:
        for c in r.checkpoints:
            d = c.to_dict()
            d["run"], d["mode"] = r.run, r.mode
            rows.append(d)
    return CHECKPOINTS.build(rows) if rows else CHECKPOINTS.empty()
