"""Replay harnesses: answer an agent's tool calls from captured evidence, or from current systems.

Both harnesses expose the same transport-agnostic interface — ``harness.call(server, method,
arguments) -> response`` — so the same agent code (the scripted agent here, an MCP replay server
later) runs against either, and both record the run's structured checkpoints as they go.

:class:`ForensicHarness`
    Answers each call from the capsule's evidence, found by request digest
    (:func:`~replaybook.capsule.digest.request_digest`), with the policy decision captured for it.
    The clock is pinned to the captured times.  Network access is blocked for the whole run
    (:mod:`~replaybook.capsule.netguard`); an attempt fails the replay.  Missing evidence
    **stops** the replay with status ``replay_incomplete``, unless the capsule's (or the
    caller's) ``missing_evidence_policy`` explicitly permits a live read for that server and
    method and a fallback transport is given: the substitution is then recorded and every later
    checkpoint is marked ``contaminated``.  Writes are never performed (the captured response is
    returned).

:class:`LiveHarness`
    Calls current systems through a :class:`LiveTransport`, read-only: a call whose intended
    effect is not ``read`` is not sent — the transport's ``simulate`` answers it and its response
    checkpoints are ``simulated``.  Its policy decisions come from the live policy decision point.

Each harness's :meth:`Harness.run` runs an agent (``agent(harness, workspace)``) and returns a
:class:`~replaybook.capsule.runs.RunRecord`; it never raises for what the agent or the evidence
did — those become the record's ``status`` and ``stop_reason``.
"""

from __future__ import annotations

import contextlib
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Protocol, runtime_checkable

import pandas as pd

from .checkpoints import (CheckpointLog, authority_checkpoint, decision_checkpoint, effect_checkpoint,
                          patch_checkpoint, policy_checkpoint, response_schema_checkpoint,
                          state_checkpoint, target_scope, tests_checkpoint, tool_choice_checkpoint,
                          tool_request_checkpoint, tool_response_checkpoint)
from .digest import parse_response, request_digest, sha256_digest
from .errors import (AuthorityUnproven, CapsuleError, EvidenceMissing, IntegrityError, NetworkBlocked,
                     ToolDenied)
from .model import Authority, Capsule, MissingEvidencePolicy, ToolEvidence, guess_effect, iso_z
from .netguard import allow_network, block_network
from .repo import Workspace
from .runs import RunRecord
from .store import EvidenceStore

__all__ = [
    "PolicyDecision",
    "LiveTransport",
    "Harness",
    "ForensicHarness",
    "LiveHarness",
    "Agent",
    "run_forensic",
    "run_live",
]


@dataclass(frozen=True)
class PolicyDecision:
    """A policy decision point's answer for one call.

    Attributes:
        result: ``allow``, ``deny`` or ``ask``.
        rule: the rule that decided.
        conditions: what the decision depended on besides the request and identity, e.g.
            ``{"clock": "2026-09-13T17:05:02.000Z", "change_window": "closed"}`` (recorded in the
            policy checkpoint's context; a ``clock`` entry marks the decision time-dependent).
    """

    result: str
    rule: str | None = None
    conditions: dict = field(default_factory=dict)


@runtime_checkable
class LiveTransport(Protocol):
    """Current systems, as a live verification (or a permitted fallback) sees them.

    Responses are the exact response bytes (JSON); the harness digests those bytes.
    """

    def identity(self) -> Authority:
        """The effective principal, scopes and policy version calls run under."""

    def now(self) -> datetime:
        """The current time (tz-aware UTC)."""

    def effect(self, server: str, method: str) -> str:
        """The tool's intended effect: ``read``, ``write`` or ``unknown``."""

    def authorize(self, server: str, method: str, arguments: dict, identity: Authority,
                  at: datetime) -> PolicyDecision:
        """The live policy decision for a call at time ``at``."""

    def call(self, server: str, method: str, arguments: dict) -> bytes:
        """Perform the call; return the response bytes."""

    def simulate(self, server: str, method: str, arguments: dict) -> bytes:
        """What the call would return, without performing it (for writes in read-only runs)."""


#: An agent: reads responses through the harness and records its decisions on it.
Agent = Callable[["Harness", "Workspace | None"], Any]


def _utc(t: Any) -> datetime:
    ts = pd.Timestamp(t)
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return ts.to_pydatetime()


def _parse(data: bytes) -> Any:
    return parse_response(data)


@dataclass
class _Fatal:
    status: str
    reason: str
    detail: dict
    error: Exception


class Harness:
    """Base of both harnesses: checkpoint recording and the run loop.

    Attributes:
        run_name: the run's name in its record.
        workspace: the checkout the agent reads, or ``None``.
        log: the :class:`~replaybook.capsule.checkpoints.CheckpointLog` being recorded.
    """

    mode = "live"
    external_calls = "allowed_read_only"

    def __init__(self, run_name: str, workspace: Workspace | None = None):
        self.run_name = run_name
        self.workspace = workspace
        self.log = CheckpointLog()
        self.network_attempts: list[dict] = []
        self.substitutions: list[dict] = []
        self.captured_responses_used = 0
        self._fatal: _Fatal | None = None
        self._identity: Authority | None = None

    # -- what subclasses provide ------------------------------------------------------------
    def now(self) -> datetime:
        """The run's clock (tz-aware UTC)."""
        raise NotImplementedError

    def _begin(self) -> None:
        raise NotImplementedError

    def _plan(self, server: str, method: str, rd: str) -> tuple[str, str, datetime]:
        """(call_id, effect, ts) for a call about to be made."""
        raise NotImplementedError

    def _authorize(self, server: str, method: str, arguments: dict, rd: str, effect: str) -> PolicyDecision:
        raise NotImplementedError

    def _respond(self, server: str, method: str, arguments: dict, rd: str, effect: str
                 ) -> tuple[bytes, str, dict]:
        """(response bytes, status, context) for an allowed call."""
        raise NotImplementedError

    def _guard(self):
        return contextlib.nullcontext()

    def _record_fields(self) -> dict:
        return {}

    # -- the interface ------------------------------------------------------------------------
    def call(self, server: str, method: str, arguments: dict | None = None) -> Any:
        """Make a tool call; return the parsed JSON response (text when not JSON).

        Raises:
            ToolDenied: the policy decision was ``deny`` or ``ask``.
            EvidenceMissing, IntegrityError, AuthorityUnproven, NetworkBlocked: the replay must
                stop (the run's status records it even if the agent catches the error).
        """
        return _parse(self.call_raw(server, method, arguments))

    def call_raw(self, server: str, method: str, arguments: dict | None = None) -> bytes:
        """Like :meth:`call` but return the response's exact bytes."""
        if self._fatal is not None:
            raise self._fatal.error
        arguments = dict(arguments or {})
        rd = request_digest(server, method, arguments)
        target = target_scope(arguments)
        call_id, effect, ts = self._plan(server, method, rd)
        self.log.add(tool_choice_checkpoint(server, method, effect, ts, call_id))
        self.log.add(tool_request_checkpoint(server, method, rd, target, ts, call_id))
        try:
            decision = self._authorize(server, method, arguments, rd, effect)
        except CapsuleError as exc:
            raise self._fail(exc)
        self.log.add(policy_checkpoint(server, method, decision.result, decision.rule, self._identity or
                                       Authority(None, None, None), ts, call_id, decision.conditions))
        if decision.result != "allow":
            if decision.result == "ask":
                self.log.add(decision_checkpoint("approval", "requested", ts))
            raise ToolDenied(f"{server} {method} refused: {decision.result} by rule {decision.rule}",
                             server=server, method=method, rule=decision.rule, result=decision.result)
        try:
            data, status, ctx = self._respond(server, method, arguments, rd, effect)
        except CapsuleError as exc:
            raise self._fail(exc)
        rts = ctx.pop("ts", ts)
        self.log.add(response_schema_checkpoint(server, method, _parse(data), rts, call_id, status=status))
        self.log.add(tool_response_checkpoint(server, method, sha256_digest(data), rts, call_id, status, ctx))
        if status == "substituted":
            self.log.contaminate()
        if effect == "write":
            self.log.add(effect_checkpoint(server, method, rd, target, rts, call_id,
                                           {"performed": status == "ok" and self.mode == "incident"}))
        return data

    def record_patch(self, path: str, old: str, new: str) -> None:
        """Record a proposed edit of ``path`` (relative to the checkout) replacing ``old`` by ``new``."""
        self.log.add(patch_checkpoint(path, old, new, self.now()))

    def record_tests(self, selected: list[str], omitted: list[str]) -> None:
        """Record the tests the agent selected and the ones it omitted."""
        self.log.add(tests_checkpoint(selected, omitted, self.now()))

    def record_decision(self, kind: str, value: str) -> None:
        """Record a ``stop``, ``approval`` or ``rollback`` decision with its value."""
        self.log.add(decision_checkpoint(kind, value, self.now()))

    # -- the run --------------------------------------------------------------------------------
    def _fail(self, exc: Exception) -> Exception:
        if self._fatal is None:
            if isinstance(exc, EvidenceMissing):
                self._fatal = _Fatal("replay_incomplete", f"missing_evidence: {exc}",
                                     {"what": exc.what, "server": exc.server, "method": exc.method,
                                      "request_digest": exc.request_digest, "call_id": exc.call_id}, exc)
            elif isinstance(exc, AuthorityUnproven):
                self._fatal = _Fatal("replay_incomplete", f"authority_unproven: {exc}",
                                     {"missing": exc.missing}, exc)
            elif isinstance(exc, IntegrityError):
                self._fatal = _Fatal("failed", f"integrity_failure: {exc}",
                                     {"call_id": exc.call_id, "digest": exc.digest, "actual": exc.actual}, exc)
            elif isinstance(exc, NetworkBlocked):
                self._fatal = _Fatal("failed", f"network_blocked: {exc.api}({exc.address})",
                                     {"api": exc.api, "address": exc.address}, exc)
            else:
                self._fatal = _Fatal("failed", f"{type(exc).__name__}: {exc}", {}, exc)
        return exc

    def _on_network(self, api: str, address: str) -> None:
        self.network_attempts.append({"api": api, "address": address, "after_checkpoint": len(self.log),
                                      "at": iso_z(self.now())})

    def begin(self) -> None:
        """Record the ``state`` and ``authority`` checkpoints (:meth:`run` does this first).

        For a caller that serves calls itself (an MCP replay server): ``with harness.guard():``
        ``harness.begin()``, then ``harness.call(…)`` per request, then :meth:`finish`.

        Raises:
            AuthorityUnproven: the effective authority is not fully known (the run must stop).
        """
        self._started = iso_z(self.now())
        self._begin()

    def guard(self):
        """The context the run must execute in: network blocked for a forensic replay, nothing for live."""
        return self._guard()

    def finish(self, crash: Exception | None = None) -> RunRecord:
        """The run record so far (status from what happened; see :meth:`run`)."""
        fatal = self._fatal
        if fatal is None and crash is not None:
            fatal = _Fatal("failed", f"agent_error: {type(crash).__name__}: {crash}", {}, crash)
        status, reason, detail = ("completed", None, {}) if fatal is None else (fatal.status, fatal.reason,
                                                                                 fatal.detail)
        if self.network_attempts and status != "failed":
            a = self.network_attempts[0]
            status, reason, detail = "failed", f"network_blocked: {a['api']}({a['address']})", dict(a)
        return RunRecord(run=self.run_name, mode=self.mode, checkpoints=list(self.log.checkpoints),
                         status=status, stop_reason=reason, stop_detail=detail,
                         started_at=getattr(self, "_started", None), external_calls=self.external_calls,
                         captured_responses_used=self.captured_responses_used,
                         substitutions=list(self.substitutions), network_attempts=list(self.network_attempts),
                         **self._record_fields())

    def run(self, agent: Agent) -> RunRecord:
        """Run ``agent(self, self.workspace)`` and return the run record.

        Status: ``completed``; ``replay_incomplete`` (evidence or authority missing: the run
        stopped there); ``failed`` (network access attempted, evidence damaged, or the agent
        raised).  The status stands even if the agent caught the error.  A :class:`ToolDenied`
        the agent does not handle becomes a ``decision.stop`` checkpoint with value
        ``policy_denied``.
        """
        crash: Exception | None = None
        with self.guard():
            try:
                self.begin()
                agent(self, self.workspace)
            except ToolDenied:
                self.record_decision("stop", "policy_denied")
            except CapsuleError as exc:
                self._fail(exc)
            except Exception as exc:  # the agent's own bug: record it, never crash the caller
                crash = exc
        return self.finish(crash)

    def _begin_authority(self, authority: Authority, ts: Any, context: dict) -> None:
        self._identity = authority
        self.log.add(authority_checkpoint(authority, ts, context))
        if authority.missing():
            raise self._fail(AuthorityUnproven(
                "effective authority not captured: " + ", ".join(authority.missing()), missing=authority.missing()))


class ForensicHarness(Harness):
    """Replay against captured evidence only (see the module docstring).

    Args:
        capsule: the loaded capsule.
        workspace: the checkout to replay in; its state is compared with the capsule's (a
            different state is recorded, not refused).  ``None`` uses the capsule's state unchecked.
        store: the evidence store (default: the capsule's).
        fallback: a live transport for *permitted* fallbacks only; ``None`` means none.
        missing_evidence_policy: overrides the capsule's policy.
        run_name: the run's name (default ``forensic``).
    """

    mode = "forensic"
    external_calls = "blocked"

    def __init__(self, capsule: Capsule, workspace: Workspace | None = None, *, store: EvidenceStore | None = None,
                 fallback: LiveTransport | None = None,
                 missing_evidence_policy: MissingEvidencePolicy | None = None, run_name: str = "forensic"):
        super().__init__(run_name, workspace)
        self.capsule = capsule
        self.store = store if store is not None else capsule.store()
        self.fallback = fallback
        self.policy = missing_evidence_policy or capsule.missing_evidence_policy
        self._queues: dict[str, deque[ToolEvidence]] = {}
        self._effects: dict[tuple[str, str], str] = {}
        for ev in capsule.tool_evidence:
            self._queues.setdefault(ev.request_digest, deque()).append(ev)
            self._effects.setdefault((ev.server, ev.method), ev.effect)
        start = capsule.started_at or (capsule.tool_evidence[0].observed_at if capsule.tool_evidence else None)
        self._clock = _utc(start) if start else datetime(1970, 1, 1, tzinfo=timezone.utc)
        self._current: ToolEvidence | None = None

    def now(self) -> datetime:
        """The pinned clock: the capsule's start, then each served evidence's ``observed_at``."""
        return self._clock

    def _guard(self):
        return block_network(self._on_network)

    def _record_fields(self) -> dict:
        digest = None
        if self.capsule.path is not None and self.capsule.path.is_file():
            digest = sha256_digest(self.capsule.path.read_bytes())
        return {"operation_id": self.capsule.operation_id, "capsule_digest": digest,
                "evidence_time": self.capsule.started_at, "evidence_store": self.store.root}

    def _begin(self) -> None:
        repo = self.capsule.repository
        if self.workspace is not None:
            st = self.workspace.state
            ctx = {"checked": True, "matches_capsule": (st.commit, st.dirty_tree_digest) ==
                   (repo.get("commit"), repo.get("dirty_tree_digest"))}
            self.log.add(state_checkpoint(st.commit, st.dirty_tree_digest, self._clock, ctx))
        else:
            self.log.add(state_checkpoint(repo.get("commit"), repo.get("dirty_tree_digest"), self._clock,
                                          {"checked": False}, none=bool(repo.get("none"))))
        self._begin_authority(self.capsule.authority, self._clock, {"source": "capsule"})

    def _plan(self, server: str, method: str, rd: str) -> tuple[str, str, datetime]:
        q = self._queues.get(rd)
        self._current = q.popleft() if q else None
        if self._current is None:
            effect = self._effects.get((server, method), guess_effect(method))
            return f"{self.run_name}-missing-{len(self.log) + 1}", effect, self._clock
        ev = self._current
        if ev.observed_at:
            self._clock = _utc(ev.observed_at)
        return ev.call_id, ev.effect, self._clock

    def _may_fall_back(self, server: str, method: str, effect: str) -> bool:
        return self.fallback is not None and effect == "read" and self.policy.allows(server, method)

    def _authorize(self, server, method, arguments, rd, effect) -> PolicyDecision:
        ev = self._current
        if ev is None:
            if self._may_fall_back(server, method, effect):
                with allow_network():
                    return self.fallback.authorize(server, method, arguments, self._identity, self.fallback.now())
            raise EvidenceMissing(f"no captured evidence for {server} {method} (request {rd})",
                                  server=server, method=method, request_digest=rd, what="response")
        if not ev.policy:
            raise EvidenceMissing(f"no captured policy decision for {server} {method} (call {ev.call_id})",
                                  server=server, method=method, request_digest=rd, call_id=ev.call_id,
                                  what="policy")
        return PolicyDecision(ev.policy["result"], ev.policy.get("rule"), {})

    def _respond(self, server, method, arguments, rd, effect) -> tuple[bytes, str, dict]:
        ev = self._current
        reason = None
        if ev is None:
            reason = "no captured evidence for this request"
        elif not ev.response_digest or not ev.captured_response_ref:
            reason = f"call {ev.call_id} has no captured response"
        elif not self.store.has(ev.response_digest):
            reason = f"evidence object {ev.response_digest} (call {ev.call_id}) is not in the store"
        if reason is None:
            try:
                data = self.store.get(ev.response_digest, call_id=ev.call_id)  # IntegrityError on damage
            except EvidenceMissing as exc:  # (there, but it cannot be read: the replay stops, naming the call)
                raise EvidenceMissing(f"{exc}: {server} {method} (request {rd})", server=server, method=method,
                                      request_digest=rd, call_id=ev.call_id, what="object") from exc
            self.captured_responses_used += 1
            return data, "ok", {"ref": ev.captured_response_ref, "observed_at": ev.observed_at,
                                "request_digest": rd, "source": "captured"}
        if self._may_fall_back(server, method, effect):
            with allow_network():
                data = self.fallback.call(server, method, arguments)
                at = self.fallback.now()
            self.substitutions.append({"after_checkpoint": len(self.log), "server": server, "method": method,
                                       "request_digest": rd, "reason": reason, "read_at": iso_z(at),
                                       "response_digest": sha256_digest(data)})
            return data, "substituted", {"request_digest": rd, "source": "live_fallback", "read_at": iso_z(at)}
        raise EvidenceMissing(f"{reason}: {server} {method} (request {rd})", server=server, method=method,
                              request_digest=rd, call_id=None if ev is None else ev.call_id,
                              what="response" if ev is None or not ev.response_digest else "object")


class LiveHarness(Harness):
    """Verify against current systems, read-only (see the module docstring).

    Args:
        transport: the current systems.
        workspace: the checkout (its state is the ``state`` checkpoint; ``None`` → state unknown).
        capture_store: where to keep the live responses (for field-level diffs); ``None`` keeps none.
        read_only: ``True`` (default) never sends a call whose effect is not ``read``.  ``False``
            performs writes — only for simulated worlds (the scripted demo's incident).
        run_name: the run's name (default ``live``).
        mode: ``live`` (default) or ``incident`` (recording a simulated incident).
        no_repository: the agent works on no repository (a capsule built with ``repository:
            none``): without a ``workspace`` the state is pinned as none, as in the capsule's runs.
    """

    def __init__(self, transport: LiveTransport, workspace: Workspace | None = None, *,
                 capture_store: EvidenceStore | None = None, read_only: bool = True, run_name: str = "live",
                 mode: str = "live", no_repository: bool = False):
        super().__init__(run_name, workspace)
        self.no_repository = no_repository
        self.transport = transport
        self.capture_store = capture_store
        self.read_only = read_only
        self.mode = mode
        self.external_calls = "allowed_read_only" if read_only else "recorded"
        self._n = 0
        self._start = iso_z(transport.now())

    def now(self) -> datetime:
        """The transport's clock."""
        return self.transport.now()

    def _record_fields(self) -> dict:
        return {"evidence_time": self._start, "external_effects_replayed": False,
                "evidence_store": None if self.capture_store is None else self.capture_store.root}

    def _begin(self) -> None:
        now = self.now()
        if self.workspace is not None:
            st = self.workspace.state
            self.log.add(state_checkpoint(st.commit, st.dirty_tree_digest, now, {"checked": True}))
        else:
            self.log.add(state_checkpoint(None, None, now, {"checked": False}, none=self.no_repository))
        self._begin_authority(self.transport.identity(), now, {"source": "live"})

    def _plan(self, server: str, method: str, rd: str) -> tuple[str, str, datetime]:
        self._n += 1
        return f"{self.run_name}-call-{self._n:02d}", self.transport.effect(server, method), self.now()

    def _authorize(self, server, method, arguments, rd, effect) -> PolicyDecision:
        return self.transport.authorize(server, method, arguments, self._identity, self.now())

    def _respond(self, server, method, arguments, rd, effect) -> tuple[bytes, str, dict]:
        if effect == "read" or not self.read_only:
            data, status = self.transport.call(server, method, arguments), "ok"
        else:
            data, status = self.transport.simulate(server, method, arguments), "simulated"
        ctx: dict = {"request_digest": rd, "source": "live", "ts": self.now()}
        if self.capture_store is not None:
            ctx["ref"] = self.capture_store.put(data)
        return data, status, ctx


def run_forensic(capsule: Capsule, agent: Agent, workspace: Workspace | None = None, **kwargs) -> RunRecord:
    """``ForensicHarness(capsule, workspace, **kwargs).run(agent)``."""
    return ForensicHarness(capsule, workspace, **kwargs).run(agent)


def run_live(transport: LiveTransport, agent: Agent, workspace: Workspace | None = None, **kwargs) -> RunRecord:
    """``LiveHarness(transport, workspace, **kwargs).run(agent)``."""
    return LiveHarness(transport, workspace, **kwargs).run(agent)
