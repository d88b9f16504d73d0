"""Verify a capsule: integrity of every evidence object, the schema, and what the capsule can prove.

:func:`verify_capsule` re-hashes every object the capsule references and every object in its
store (read-only), and builds the seed's inventory — one row per input class, saying whether the
input is **pinned** (the capsule holds its identity/digest) and **independently captured** (the
object itself is in the evidence store and hashes to its digest):

=========================  =========================================  ==========================================
input class                pinned when                                captured when
=========================  =========================================  ==========================================
repository tree            commit and dirty_tree_digest               the dirty-tree object is in the store
system and task prompts    both prompt digests                        both prompt objects are in the store
model and parameters       model and parameters_digest (model only:   the parameters object is in the store
                           partial)
MCP responses              every call that needed a response has a    every such response is in the store
                           response_digest
policy decisions           policy_version and a decision per call     the decision point's logs are in the store
credential scope           principal and scopes (principal only:      the token introspection object is in
                           partial)                                   the store
runtime image              image_digest and started_at                the image manifest is in the store
clock and feature flags    started_at, every observed_at and          a clock_source and the flag snapshot
                           flags_digest                               object in the store
=========================  =========================================  ==========================================

``completeness`` is ``complete`` only when every row is pinned *and* captured and no object is
missing or damaged; otherwise ``unproven``, with the reasons.  An object whose bytes do not hash
to its digest is an **integrity failure** naming the call (or the input) it belongs to.  A link
leading out of the store is not an object the capsule holds (``outside``: not read).  An object
whose file is there but cannot be read (an I/O error, no permission) is ``unreadable``, said with
the system's reason ("cannot be read: Input/output error") and counted apart from the missing
ones: its bytes cannot be checked, so the capsule is ``unproven`` (exit 4), as for a missing one.

Objects in the store that the capsule does not reference (another capsule's, when two share a
store) are checked and listed as ``unreferenced``, but they are not this capsule's evidence: a
damaged or missing one is a note (:attr:`VerifyReport.notes`), never this capsule's failure.

The door's own logs (``authority.decision_logs``, kept as evidence) are a second witness of the
responses: every ``response_digest`` of ``tool_evidence`` must be one the door logged.  One that is
not — a response replaced, and the manifest edited to its new digest — is an integrity failure
(:attr:`VerifyReport.log_disagreements`) naming the call.  A capsule without readable door logs,
or whose logs record no response digest at all, is not checked this way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import orjson
import pandas as pd

from ..frames import Column, FrameSpec
from .errors import CapsuleError
from .model import Capsule, load_capsule
from .store import EvidenceStore

__all__ = ["INPUT_CLASSES", "INVENTORY", "OBJECTS", "VerifyReport", "verify_capsule",
           "EXIT_OK", "EXIT_INTEGRITY", "EXIT_INCOMPLETE"]

#: Exit codes of ``replaybook capsule verify`` (and ``diff`` for not re-derivable).
EXIT_OK, EXIT_INTEGRITY, EXIT_INCOMPLETE = 0, 3, 4

#: The inventory's rows, in the seed's order.
INPUT_CLASSES = ("repository tree", "system and task prompts", "model and parameters", "MCP responses",
                 "policy decisions", "credential scope", "runtime image", "clock and feature flags")

INVENTORY = FrameSpec(
    "inventory",
    (
        Column("input_class", "string", "one of INPUT_CLASSES"),
        Column("pinned", "string", "`yes`, `partial` or `no`: the capsule holds the input's identity/digest"),
        Column("captured", "string", "`yes`, `partial` or `no`: the object itself is in the store and verifies"),
        Column("why", "string", "what is missing, or what proves it"),
    ),
    "One row per input class that can change the agent's decision.",
)

OBJECTS = FrameSpec(
    "evidence_objects",
    (
        Column("what", "string", "what the object is: `call <id>`, `prompt.task`, `unreferenced` …"),
        Column("call_id", "string", "the tool call, for responses"),
        Column("digest", "string", "the recorded digest (sha256:<hex>)"),
        Column("status", "string", "`ok`, `missing`, `unreadable` (there, but cannot be read), `mismatch` or "
                                   "`outside` (a link out of the store)"),
        Column("actual", "string", "digest of the bytes found, when they differ"),
        Column("bytes", "Int64", "object size in bytes"),
        Column("reason", "string", "why an `unreadable` object cannot be read (`Input/output error` …)"),
    ),
    "One row per evidence object checked.",
)


@dataclass
class VerifyReport:
    """The result of :func:`verify_capsule`.

    Attributes:
        capsule: the capsule verified.
        inventory: :data:`INVENTORY`-shaped frame (8 rows, seed order).
        objects: :data:`OBJECTS`-shaped frame, one row per object checked.
        completeness: ``complete`` or ``unproven`` (computed, not the declared value).
        reasons: why it is unproven (empty when complete).
        declared: the completeness the capsule declares.
        notes: what verification saw that is not this capsule's failure (damaged objects the
            capsule does not reference).
        log_disagreements: ``[{"call_id", "digest"}]``: calls whose response digest the door's
            own logs never recorded (integrity failures).
    """

    capsule: Capsule
    inventory: pd.DataFrame
    objects: pd.DataFrame
    completeness: str
    reasons: list[str] = field(default_factory=list)
    declared: str = "unproven"
    notes: list[str] = field(default_factory=list)
    log_disagreements: list[dict] = field(default_factory=list)

    @property
    def integrity_failures(self) -> pd.DataFrame:
        """Objects the capsule references whose bytes do not hash to their digest."""
        o = self.objects
        return o[(o["status"] == "mismatch") & (o["what"] != "unreferenced")].reset_index(drop=True)

    @property
    def missing_objects(self) -> pd.DataFrame:
        """Referenced objects the store does not hold (missing, or a link out of the store)."""
        o = self.objects
        return o[o["status"].isin(["missing", "outside"]) & (o["what"] != "unreferenced")].reset_index(drop=True)

    @property
    def unreadable_objects(self) -> pd.DataFrame:
        """Referenced objects whose file is in the store but cannot be read (``reason`` says why)."""
        o = self.objects
        return o[(o["status"] == "unreadable") & (o["what"] != "unreferenced")].reset_index(drop=True)

    @property
    def exit_code(self) -> int:
        """3 on an integrity failure (a damaged object, or a response the door's log disagrees
        with), else 4 when unproven (a missing or unreadable object makes it so), else 0."""
        if len(self.integrity_failures) or self.log_disagreements:
            return EXIT_INTEGRITY
        return EXIT_OK if self.completeness == "complete" else EXIT_INCOMPLETE

    def to_dict(self) -> dict:
        """JSON-ready summary: operation, completeness, reasons, inventory rows, integrity failures,
        the count of missing objects and the unreadable ones (``[{what, call_id, digest, reason}]``)."""
        return {
            "operation_id": self.capsule.operation_id,
            "completeness": self.completeness,
            "declared_completeness": self.declared,
            "reasons": list(self.reasons),
            "integrity_failures": [
                {"what": r.what, "call_id": None if pd.isna(r.call_id) else r.call_id, "digest": r.digest,
                 "actual": r.actual} for r in self.integrity_failures.itertuples(index=False)],
            "door_log_disagreements": [dict(x) for x in self.log_disagreements],
            "missing_objects": int(len(self.missing_objects)),
            "unreadable_objects": [
                {"what": r.what, "call_id": None if pd.isna(r.call_id) else r.call_id, "digest": r.digest,
                 "reason": None if pd.isna(r.reason) else r.reason}
                for r in self.unreadable_objects.itertuples(index=False)],
            "objects_checked": int(len(self.objects)),
            "notes": list(self.notes),
            "inventory": [dict(zip(INVENTORY.names, row)) for row in
                          self.inventory.itertuples(index=False, name=None)],
        }


def _level(n: int, total: int) -> str:
    return "yes" if n == total else ("no" if n == 0 else "partial")


def verify_capsule(capsule: Capsule | str | Path, store: EvidenceStore | None = None) -> VerifyReport:
    """Re-hash every evidence object and build the inventory (read-only; never writes).

    Args:
        capsule: a loaded capsule, or the path of ``capsule.yaml`` / its folder.
        store: the evidence store (default: the capsule's ``evidence_store``).

    Raises:
        CapsuleFormatError: the capsule cannot be read or does not match the schema.
    """
    cap = capsule if isinstance(capsule, Capsule) else load_capsule(capsule)
    st = store if store is not None else cap.store()
    rows: list[dict] = []
    status: dict[str, str] = {}
    targets: dict[str, str] = {}
    why_not: dict[str, str] = {}  # digest → why its file cannot be read

    def check(what: str, digest: str | None, ref: str | None, call_id: str | None = None) -> None:
        if not digest or not ref:
            return
        c = st.check(digest)
        status[digest] = c.status
        if c.target is not None:
            targets[digest] = c.target
        if c.reason is not None:
            why_not[digest] = c.reason
        rows.append({"what": what, "call_id": call_id, "digest": digest, "status": c.status,
                     "actual": c.actual if c.status == "mismatch" else None, "bytes": c.size,
                     "reason": c.reason})

    repo, prm, mdl, rt = cap.repository, cap.prompts, cap.model, cap.runtime
    auth = cap.data.get("authority") or {}
    check("repository.dirty-tree", repo.get("dirty_tree_digest"), repo.get("dirty_tree_ref"))
    check("prompt.system", prm.get("system_digest"), prm.get("system_ref"))
    check("prompt.task", prm.get("task_digest"), prm.get("task_ref"))
    check("model.parameters", mdl.get("parameters_digest"), mdl.get("parameters_ref"))
    check("runtime.image-manifest", rt.get("image_digest"), rt.get("image_ref"))
    check("runtime.feature-flags", rt.get("flags_digest"), rt.get("flags_ref"))
    check("authority.token-info", auth.get("token_info_digest"), auth.get("token_info_ref"))
    for i, log in enumerate(auth.get("decision_logs") or []):
        check(f"door-log.{i + 1}", log["digest"], log["ref"])
    for ev in cap.tool_evidence:
        check(f"call {ev.call_id}", ev.response_digest, ev.captured_response_ref, ev.call_id)
    for d in st.digests():
        if d not in status:
            check("unreferenced", d, "store")

    def ok(digest: str | None, ref: str | None) -> bool:
        return bool(digest) and bool(ref) and status.get(digest) == "ok"

    def gone(noun: str, digest: str | None) -> str:
        """Why ``noun``'s object does not count as captured: not in the store, or there but unreadable."""
        if digest and status.get(digest) == "unreadable":
            return f"{noun} cannot be read from the store: {why_not.get(digest)}"
        return f"{noun} not in the store"

    def not_a_file(digest: str | None) -> bool:
        """Something that is not a file (a folder, a pipe) is in the object's place: not read."""
        try:
            p = st.path(digest) if digest else None
        except ValueError:  # (not a digest: no place in the store)
            return False
        if digest and status.get(digest) == "unreadable":  # (the system could not look at it)
            return False
        try:
            return p is not None and p.exists() and not p.is_file()
        except OSError:  # (an I/O error on looking it up now: it was read, or said unreadable)
            return False

    inv: list[dict] = []
    # repository tree
    if repo.get("none") and not repo.get("commit"):  # declared: the agent worked on no repository
        inv.append({"input_class": "repository tree", "pinned": "yes", "captured": "yes",
                    "why": "no repository (declared in capture.yaml)"})
    pinned = _level(bool(repo.get("commit")) + bool(repo.get("dirty_tree_digest")), 2)
    got = ok(repo.get("dirty_tree_digest"), repo.get("dirty_tree_ref"))
    why = []
    if not repo.get("commit"):
        why.append("no commit")
    if not repo.get("dirty_tree_digest"):
        why.append("no dirty-tree digest")
    if not got:
        why.append(gone("dirty-tree object", repo.get("dirty_tree_digest")))
    if not inv:
        inv.append({"input_class": "repository tree", "pinned": pinned, "captured": "yes" if got else "no",
                    "why": "; ".join(why) or f"commit {str(repo['commit'])[:12]} + dirty-tree object"})
    # prompts
    pinned = _level(bool(prm.get("system_digest")) + bool(prm.get("task_digest")), 2)
    n = ok(prm.get("system_digest"), prm.get("system_ref")) + ok(prm.get("task_digest"), prm.get("task_ref"))
    why = []
    for k in ("system", "task"):
        d, r = prm.get(f"{k}_digest"), prm.get(f"{k}_ref")
        if not d:
            why.append(f"{k} prompt not pinned")
        elif not ok(d, r):
            why.append(gone(f"{k} prompt", d))
    inv.append({"input_class": "system and task prompts", "pinned": pinned, "captured": _level(n, 2),
                "why": "; ".join(why) or "both prompts stored"})
    # model
    pinned = "yes" if mdl.get("model") and mdl.get("parameters_digest") else ("partial" if mdl.get("model") else "no")
    got = ok(mdl.get("parameters_digest"), mdl.get("parameters_ref"))
    why = []
    if not mdl.get("model"):
        why.append("model not recorded")
    if not mdl.get("parameters_digest"):
        why.append("parameters not pinned")
    elif not got:
        why.append(gone("parameters object", mdl.get("parameters_digest")))
    inv.append({"input_class": "model and parameters", "pinned": pinned, "captured": "yes" if got else "no",
                "why": "; ".join(why) or f"{mdl.get('model')} + parameters object"})
    # MCP responses
    needed = [ev for ev in cap.tool_evidence if ev.needs_response]
    no_digest = [ev.call_id for ev in needed if not ev.response_digest]
    not_stored = [ev.call_id for ev in needed if ev.response_digest and not ok(ev.response_digest,
                                                                                ev.captured_response_ref)]
    n_ok = len(needed) - len(no_digest) - len(not_stored)
    why = []
    if no_digest:
        why.append("no response digest: " + ", ".join(no_digest))
    replaced = [ev.call_id for ev in needed if ev.call_id in not_stored and not_a_file(ev.response_digest)]
    unreadable = [ev.call_id for ev in needed if ev.call_id in not_stored
                  and status.get(ev.response_digest) == "unreadable"]
    absent = [c for c in not_stored if c not in replaced and c not in unreadable]
    if absent:
        why.append("response not in the store: " + ", ".join(absent))
    if unreadable:
        why.append("response in the store cannot be read: " + ", ".join(unreadable))
    if replaced:
        why.append("response's place in the store holds something that is not a file (a folder, a pipe): "
                   + ", ".join(replaced))
    inv.append({"input_class": "MCP responses", "pinned": _level(len(needed) - len(no_digest), len(needed)),
                "captured": _level(n_ok, len(needed)),
                "why": "; ".join(why) or f"{len(needed)} of {len(needed)} responses stored"})
    # policy decisions
    with_policy = sum(1 for ev in cap.tool_evidence if ev.policy)
    total = len(cap.tool_evidence)
    pv = bool(auth.get("policy_version"))
    pinned = "yes" if pv and with_policy == total else ("no" if not pv and with_policy == 0 else "partial")
    logs = auth.get("decision_logs") or []
    got = bool(logs) and all(ok(x["digest"], x["ref"]) for x in logs)
    why = []
    if not pv:
        why.append("policy version not recorded")
    if with_policy < total:
        why.append(f"{total - with_policy} calls without a captured decision")
    if not got:
        bad = [x["digest"] for x in logs if status.get(x["digest"]) == "unreadable"]
        why.append(gone("decision point's logs", bad[0] if bad else None))
    inv.append({"input_class": "policy decisions", "pinned": pinned, "captured": "yes" if got else "no",
                "why": "; ".join(why) or f"{auth.get('policy_version')}; {total} decisions; {len(logs)} door logs"})
    # credential scope
    a = cap.authority
    pinned = "yes" if a.principal and a.scopes is not None else ("partial" if a.principal or a.scopes else "no")
    got = ok(auth.get("token_info_digest"), auth.get("token_info_ref"))
    why = [f"{f} not recorded" for f in ("principal", "scopes") if f in a.missing()]
    if not got:
        why.append(gone("token introspection record", auth.get("token_info_digest")))
    inv.append({"input_class": "credential scope", "pinned": pinned, "captured": "yes" if got else "no",
                "why": "; ".join(why) or f"{a.principal} [{', '.join(a.scopes or ())}]"})
    # runtime image
    pinned = _level(bool(rt.get("image_digest")) + bool(rt.get("started_at")), 2)
    got = ok(rt.get("image_digest"), rt.get("image_ref"))
    why = [t for t, c in (("image not pinned", not rt.get("image_digest")),
                          ("start time not recorded", not rt.get("started_at")),
                          (gone("image manifest", rt.get("image_digest")), rt.get("image_digest") and not got)) if c]
    inv.append({"input_class": "runtime image", "pinned": pinned, "captured": "yes" if got else "no",
                "why": "; ".join(why) or "image manifest stored"})
    # clock and feature flags
    untimed = [ev.call_id for ev in cap.tool_evidence if not ev.observed_at]
    parts = [bool(rt.get("started_at")), not untimed, bool(rt.get("flags_digest"))]
    got_flags = ok(rt.get("flags_digest"), rt.get("flags_ref"))
    n_cap = bool(rt.get("clock_source")) + got_flags
    why = [t for t, c in (("start time not recorded", not parts[0]),
                          ("calls without observed_at: " + ", ".join(untimed), untimed),
                          ("feature flags not pinned", not parts[2]),
                          ("no clock source", not rt.get("clock_source")),
                          (gone("flag snapshot", rt.get("flags_digest")),
                           rt.get("flags_digest") and not got_flags)) if c]
    inv.append({"input_class": "clock and feature flags", "pinned": _level(sum(parts), 3),
                "captured": _level(n_cap, 2),
                "why": "; ".join(why) or f"{rt.get('clock_source')} clock; flag snapshot stored"})

    inventory = INVENTORY.build(inv)
    objects = OBJECTS.build(rows) if rows else OBJECTS.empty()
    reasons = [f"{r['input_class']}: {r['why']}" for r in inv if (r["pinned"], r["captured"]) != ("yes", "yes")]
    notes: list[str] = []
    for r in objects.itertuples(index=False):
        if r.what == "unreferenced":
            if r.status == "mismatch":
                notes.append(f"an object this capsule does not reference is damaged: {r.digest} hashes to {r.actual}")
            elif r.status == "outside":
                notes.append(f"an object this capsule does not reference is a link out of the store: {r.digest} "
                             f"(to {targets.get(r.digest)})")
            elif r.status == "unreadable":
                notes.append(f"an object this capsule does not reference cannot be read: {r.digest}: {r.reason}")
            continue
        if r.status == "mismatch":
            reasons.append(f"integrity: {r.what}: object {r.digest} hashes to {r.actual}")
        elif r.status == "outside":
            reasons.append(f"outside the store: {r.what}: object {r.digest} is a link to {targets.get(r.digest)}, "
                           "which the capsule does not hold")
        elif r.status == "unreadable":
            reasons.append(f"unreadable object: {r.what} ({r.digest}): cannot be read: {r.reason}")
    for r in objects[objects["status"] == "missing"].itertuples(index=False):
        if r.what != "unreferenced" and not any(r.what.removeprefix("call ") in x for x in reasons):
            reasons.append(f"missing object: {r.what} ({r.digest})" + (
                ": something that is not a file (a folder, a pipe) is in its place" if not_a_file(r.digest) else ""))
    disagreements = _against_door_logs(cap, st, status)
    for x in disagreements:
        reasons.append(f"integrity: call {x['call_id']}: response digest {x['digest']} is not one the door's "
                       "own log recorded")
    completeness = "unproven" if reasons else "complete"
    if cap.completeness == "complete" and completeness != "complete":
        reasons.append("the capsule declares itself complete, but the evidence does not show it")
    return VerifyReport(cap, inventory, objects, completeness, reasons, cap.completeness, notes, disagreements)


def _against_door_logs(cap: Capsule, st: EvidenceStore, status: dict[str, str]) -> list[dict]:
    """The calls whose response digest no door log of the capsule recorded (see the module
    docstring); empty when no log is readable or the logs record no response digest."""
    logged: set[str] = set()
    for log in (cap.data.get("authority") or {}).get("decision_logs") or []:
        if status.get(log["digest"]) != "ok":
            continue
        try:
            data = st.get(log["digest"])
        except CapsuleError:
            continue
        for line in data.splitlines():
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # (a line cut short: the rows before it still count)
            if isinstance(row, dict) and isinstance(row.get("response_digest"), str):
                logged.add(row["response_digest"])
    if not logged:
        return []
    return [{"call_id": ev.call_id, "digest": ev.response_digest} for ev in cap.tool_evidence
            if ev.response_digest and ev.response_digest not in logged]
