"""Compare two runs by their checkpoints and report the first structured divergence.

Run A is the reference (normally the incident), run B the replay (forensic or live).  The
checkpoint sequences are walked in order; the first position where the kind, the key or the
digest differs is the **first divergence** (a ``simulated`` response in a read-only live run is
not compared).  Verdicts (:data:`VERDICTS`) are never conflated:

``reproduced``
    every checkpoint agrees;
``diverged`` (at checkpoint N)
    the runs split at N, and every checkpoint before N was established from pinned evidence;
``not_re_derivable``
    the comparison cannot be trusted: a run stopped (``replay_incomplete``/``failed``), or a
    checkpoint at or before the split could not be established (``failed``,
    ``missing_evidence``, or no digest whatever its status) or rests on a live substitution (``substituted``/``contaminated``).

The divergence is classified (:data:`CLASSIFICATIONS`) from the checkpoint where it happens:

========================  ========================================================================
state_mismatch            the repository state differs (same commit, other dirty tree; or commit)
authority_drift           principal or scopes differ (authority, or a policy decision's identity)
policy_drift              the policy version differs, or the same policy answered differently
clock_boundary            same policy, same identity, a time-dependent decision on the other side
                          of its boundary (the clock appears in ``changed_input``)
external_evidence_drift   a tool response (or its output schema) differs
path_divergence           a different read tool, or one run stopped calling tools
effect_divergence         a different write path, or a different committed effect
model_choice              same inputs, different request, patch, test selection or decision
========================  ========================================================================

Every divergence is **structural** (digests differ).  Differences between checkpoints whose
digests agree — their summaries — are **cosmetic** and listed separately.

Responses are compared as canonical JSON (:func:`replaybook.canonical.canonical_args`: key
order, whitespace, ``1`` vs ``1.0`` and Unicode normal form do not count), not as bytes: two
``tool_response`` checkpoints whose digests differ but whose responses (read from the runs'
evidence stores) are the same canonical JSON agree, and so do two ``response_schema``
checkpoints that differ only in ``integer`` vs ``number`` (JSON Schema counts ``1.0`` as an
integer).  Such respellings are listed in :attr:`RunDiff.notes`.  A response one of the stores
does not hold cannot be read, so its bytes decide.

A divergence names its changed input after the checkpoint, with ``#n`` for the n-th call of
the same kind to the same server (``service_catalogue#2.response``); field paths are dotted,
``[i]`` for list items, and a key that is not a plain word is written as a JSON string in
brackets (``tags["team.lead"]``), so a path names one place only.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import pandas as pd

from .. import _json
from .checkpoints import Checkpoint, labels
from .digest import canonical_bytes, json_digest, json_value, parse_response, shape_paths, short
from .errors import CapsuleError
from .runs import RunRecord
from .store import EvidenceStore

__all__ = ["VERDICTS", "CLASSIFICATIONS", "DECISION_CHECKPOINT_KINDS", "RunDiff", "diff_runs", "align",
           "json_changes"]

VERDICTS = ("reproduced", "diverged", "not_re_derivable")
CLASSIFICATIONS = ("external_evidence_drift", "policy_drift", "authority_drift", "state_mismatch",
                   "clock_boundary", "path_divergence", "effect_divergence", "model_choice")
#: Checkpoint kinds that make up "the decision" (``decision_reproduced``).
DECISION_CHECKPOINT_KINDS = ("patch", "tests", "effect", "decision")

_BAD = ("failed", "missing_evidence", "substituted", "contaminated")
_SECRET = re.compile(r"secret|token|password|passwd|api[_-]?key|credential|private|session[_-]?key", re.I)
_MISSING = object()

_VERBS = {  # kind → (only in reference, only in replay)
    "patch": ("not_proposed", "proposed_only_in_replay"),
    "tests": ("not_run", "run_only_in_replay"),
    "tool_choice": ("not_called", "called_only_in_replay"),
    "effect": ("not_committed", "committed_only_in_replay"),
    "decision": ("not_taken", "taken_only_in_replay"),
}


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_$@-]+")


def _step(path: str, key: Any) -> str:
    """``path`` extended by one object key: ``a.b``, or ``a["b.c"]`` for a key that is not a plain word."""
    k = str(key)
    if _PLAIN_KEY.fullmatch(k):
        return f"{path}.{k}" if path else k
    return f"{path}[{json.dumps(k, ensure_ascii=False)}]"


def _canonical(v: Any) -> Any:
    """``v`` as its canonical JSON reads back: keys and strings NFC, ``1.0`` → ``1``, integers
    exact, NaN/Infinity as :class:`replaybook._json.NumberAsWritten`; ``v`` itself when it
    cannot be canonicalised (nested too deeply)."""
    try:
        return _json.loads_lenient(canonical_bytes(v).decode("utf-8"))
    except (ValueError, RecursionError):
        return v


def _leaf_equal(x: Any, y: Any) -> bool:
    if type(x) is not type(y):
        return False
    if isinstance(x, _json.NumberAsWritten):  # NaN is NaN, 1e400 is not 1e401
        return x.text == y.text
    return x == y


@_json.nesting_room  # (a response nested as deep as a parser reads is walked to the bottom)
def json_changes(a: Any, b: Any, limit: int = 20) -> list[dict]:
    """Leaf-level differences between two JSON values: ``[{"path", "a", "b"}]``.

    Both values are compared in canonical form (key order, ``1`` vs ``1.0`` and Unicode normal
    form are no difference; NaN equals NaN).  Paths are dotted, ``[i]`` for list items, and a
    key that is not a plain word (``A-Z a-z 0-9 _ - $ @``) is a JSON string in brackets
    (``tags["a.b"]``), so a path names one place; the root is ``(root)``.  Lists of different
    lengths are compared item by item, the extra items shown against ``"<absent>"``; a side
    missing a key shows ``"<absent>"``; values under secret-looking keys — token, secret,
    password, api key … — show as ``"<redacted>"``; a number no double holds (NaN, Infinity,
    ``1e400``) shows as its text.  At most ``limit`` changes, in path order."""
    out: list[dict] = []

    def show(v: Any, secret: bool) -> Any:
        if v is _MISSING:
            return "<absent>"
        return "<redacted>" if secret else _shown(v)

    def walk(x: Any, y: Any, path: str, secret: bool) -> None:
        if len(out) >= limit:
            return
        if isinstance(x, dict) and isinstance(y, dict):
            for k in sorted(set(x) | set(y), key=str):
                walk(x.get(k, _MISSING), y.get(k, _MISSING), _step(path, k), secret or bool(_SECRET.search(str(k))))
        elif isinstance(x, list) and isinstance(y, list):
            for i in range(max(len(x), len(y))):
                walk(x[i] if i < len(x) else _MISSING, y[i] if i < len(y) else _MISSING, f"{path}[{i}]", secret)
        elif not _leaf_equal(x, y):
            out.append({"path": path or "(root)", "a": show(x, secret), "b": show(y, secret)})

    walk(_canonical(a), _canonical(b), "", False)
    return out


def _shown(v: Any) -> Any:
    """A value to show in a change (a whole object or list: NaN/Infinity inside as their text)."""
    if isinstance(v, dict):
        return {k: _shown(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_shown(x) for x in v]
    return v.text if isinstance(v, _json.NumberAsWritten) else v


@dataclass
class RunDiff:
    """The comparison of a reference run (A) and a replay (B).  See the module docstring.

    Attributes:
        reference, replay: the two runs.
        verdict: one of :data:`VERDICTS`.
        checkpoint: N, the 1-based order of the first divergence (``None`` when none was found).
        classification: one of :data:`CLASSIFICATIONS` (``None`` when no divergence).
        divergence: the divergence record (seed format), or ``None``.
        decision_reproduced: whether the patch/tests/effect/decision checkpoints agree
            (``None`` when not re-derivable).
        effects: the effect comparison: ``patch_digests_equal``, ``effects_equal`` and both runs'
            committed effects.
        cosmetic: labels whose digests agree but whose summaries differ.
        reasons: why the verdict is ``not_re_derivable`` (empty otherwise).
        notes: other observations (simulated responses not compared, responses that differ in
            spelling only, operation ids or capsule digests that differ).
    """

    reference: RunRecord
    replay: RunRecord
    verdict: str
    checkpoint: int | None = None
    classification: str | None = None
    divergence: dict | None = None
    decision_reproduced: bool | None = None
    effects: dict = field(default_factory=dict)
    cosmetic: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def verdict_text(self) -> str:
        """``reproduced``, ``diverged at checkpoint N`` or ``not re-derivable``."""
        if self.verdict == "diverged":
            return f"diverged at checkpoint {self.checkpoint}"
        return "not re-derivable" if self.verdict == "not_re_derivable" else "reproduced"

    @property
    def structural(self) -> bool:
        """True when a checkpoint digest differs (a divergence); cosmetic differences are not."""
        return self.divergence is not None

    @property
    def first_divergence(self) -> str | None:
        """The changed input's name (``service_catalogue.response``, ``clock`` …), or ``None``."""
        return None if self.divergence is None else self.divergence["changed_input"]["name"]

    def to_dict(self) -> dict:
        """JSON-ready form (what ``replaybook capsule diff --format json`` prints)."""
        def run(r: RunRecord) -> dict:
            return {"run": r.run, "mode": r.mode, "status": r.status, "stop_reason": r.stop_reason,
                    "evidence_time": r.evidence_time, "external_calls": r.external_calls,
                    "checkpoints": len(r.checkpoints)}
        return {"reference": run(self.reference), "replay": run(self.replay), "verdict": self.verdict,
                "verdict_text": self.verdict_text, "checkpoint": self.checkpoint,
                "classification": self.classification, "structural": self.structural,
                "decision_reproduced": self.decision_reproduced, "divergence": self.divergence,
                "effects": self.effects, "cosmetic_differences": self.cosmetic, "reasons": self.reasons,
                "notes": self.notes}


def _raw(store: EvidenceStore | None, digest: str | None) -> bytes | None:
    if store is None or not digest:
        return None
    try:
        return store.get(digest)
    except (CapsuleError, ValueError):
        return None


def _load(store: EvidenceStore | None, digest: str | None) -> Any:
    data = _raw(store, digest)
    return _MISSING if data is None else parse_response(data)


def _shape_kinds(shape: Any) -> Any:
    """A response shape with ``integer`` read as ``number`` (array item shapes deduplicated again)."""
    if isinstance(shape, dict) and "object" in shape and isinstance(shape["object"], dict):
        return {"object": {k: _shape_kinds(v) for k, v in shape["object"].items()}}
    if isinstance(shape, dict) and "array" in shape and isinstance(shape["array"], list):
        items = {json_digest(s): s for s in (_shape_kinds(v) for v in shape["array"])}
        return {"array": [items[k] for k in sorted(items)]}
    return "number" if shape == "integer" else shape


class _Ambiguous(ValueError):
    """A JSON text whose value readers disagree on (see :func:`_one_reading`)."""


def _pairs_once(pairs: list[tuple[str, Any]]) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _Ambiguous("a key written twice in one object")
    return dict(pairs)


def _one_reading(data: bytes) -> bool:
    """True when the response ``data`` is a JSON text every reader reads as the same value: each
    key written once per object (``{"approved":false,"approved":true}`` is ``true`` to one reader and
    ``false`` to another) and no lone surrogate escape (``"\\ud83d"`` is no character; canonical
    JSON writes every one of them as U+FFFD, so ``"\\ud83d"`` and ``"\\ud83e"`` would read alike).
    Such a response can only be compared by its bytes: two of them are never a respelling."""
    try:
        value = _json._deep_enough(json.loads, bytes(data).decode("utf-8"), object_pairs_hook=_pairs_once,
                                   parse_int=_json.parse_int, parse_constant=lambda c: c)
    except (ValueError, RecursionError):  # (_Ambiguous is a ValueError)
        return False
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if any(_LONE_SURROGATE.search(k) for k in v):
                return False
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, str) and _LONE_SURROGATE.search(v):
            return False
    return True


#: A surrogate code point left in a string after reading: the standard library joins every valid
#: ``\\ud83d\\ude00`` pair into one character, so any surrogate left was a lone escape.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _respelled(x: Checkpoint, y: Checkpoint, sa: EvidenceStore | None, sb: EvidenceStore | None) -> bool:
    """Two checkpoints of one kind and key whose digests differ, yet which say the same: two
    responses that are one canonical JSON value, or two response shapes that differ only in
    ``integer`` vs ``number``.  A response that holds a key twice in one object or a lone
    surrogate escape is read differently by different readers (:func:`_one_reading`): it is not a
    respelling of anything, whatever canonical JSON makes of it."""
    if x.kind == "response_schema" and "shape" in x.detail and "shape" in y.detail:
        try:
            return json_digest(_shape_kinds(x.detail["shape"])) == json_digest(_shape_kinds(y.detail["shape"]))
        except (ValueError, RecursionError):
            return False
    if x.kind == "tool_response":
        ra, rb = _raw(sa, x.digest), _raw(sb, y.digest)
        if ra is None or rb is None or not _one_reading(ra) or not _one_reading(rb):
            return False
        try:
            return canonical_bytes(json_value(ra)) == canonical_bytes(json_value(rb))
        except (ValueError, RecursionError):
            return False
    return False


def _unestablished(c: Checkpoint) -> bool:
    """A checkpoint that cannot be compared: a bad status, or no digest (two missing digests
    are not two equal ones)."""
    return c.status in _BAD or c.digest is None


def _conditions(c: Checkpoint) -> dict:
    """A policy checkpoint's ``context.conditions``; none known (``{}``) when it is not an object
    (:func:`~.runs.load_run` refuses such a record; a run built in memory may still hold one)."""
    got = c.context.get("conditions") if isinstance(c.context, dict) else None
    return got if isinstance(got, dict) else {}


def _classify(x: Checkpoint | None, y: Checkpoint | None, sa: EvidenceStore | None,
              sb: EvidenceStore | None, nth: int = 1) -> tuple[str, dict]:
    """The classification and the changed input of a divergence between ``x`` and ``y``
    (``nth``: which occurrence of its kind and key the checkpoint is in its run)."""
    if x is None or y is None:
        c = x or y
        return "path_divergence", {"name": "path", "checkpoint": c.label,
                                   "only_in": "reference" if y is None else "replay", "summary": c.summary}
    if (x.kind, x.key) != (y.kind, y.key):
        effects = {x.detail.get("effect"), y.detail.get("effect")}
        write = "write" in effects or "effect" in (x.kind, y.kind)
        return ("effect_divergence" if write else "path_divergence",
                {"name": "tool_path", "a": x.label, "b": y.label, "a_summary": x.summary, "b_summary": y.summary})
    k = x.kind
    key = x.key + (f"#{nth}" if nth > 1 else "")  # the 2nd call to one server is not the 1st
    base = {"checkpoint": x.label}
    if x.call_id or y.call_id:
        base.update(call_id_a=x.call_id, call_id_b=y.call_id)
    if k == "state":
        da, db = x.detail, y.detail
        name = "repository.commit" if da.get("commit") != db.get("commit") else "repository.dirty_tree"
        return "state_mismatch", {"name": name, **base, "commit_a": da.get("commit"), "commit_b": db.get("commit"),
                                  "dirty_tree_digest_a": da.get("dirty_tree_digest"),
                                  "dirty_tree_digest_b": db.get("dirty_tree_digest")}
    if k == "authority":
        fields = [f for f in ("principal", "scopes", "policy_version") if x.detail.get(f) != y.detail.get(f)]
        cls = "policy_drift" if fields == ["policy_version"] else "authority_drift"
        return cls, {"name": "authority." + (fields[0] if fields else "effective"), **base,
                     "fields": [{"path": f, "a": x.detail.get(f), "b": y.detail.get(f)} for f in fields]}
    if k == "policy":
        da, db = x.detail, y.detail
        ca, cb = _conditions(x), _conditions(y)
        info = {**base, "method": x.context.get("method"), "a": {"result": da.get("result"), "rule": da.get("rule")},
                "b": {"result": db.get("result"), "rule": db.get("rule")}}
        if da.get("policy_version") != db.get("policy_version"):
            return "policy_drift", {"name": "policy_version", **info, "policy_version_a": da.get("policy_version"),
                                    "policy_version_b": db.get("policy_version")}
        if (da.get("principal"), da.get("scopes")) != (db.get("principal"), db.get("scopes")):
            return "authority_drift", {"name": "authority", **info,
                                       "fields": [{"path": f, "a": da.get(f), "b": db.get(f)}
                                                  for f in ("principal", "scopes") if da.get(f) != db.get(f)]}
        if "clock" in ca or "clock" in cb:
            return "clock_boundary", {"name": "clock", **info,
                                      "clock_a": ca.get("clock") or x.context.get("evaluated_at") or x.ts,
                                      "clock_b": cb.get("clock") or y.context.get("evaluated_at") or y.ts,
                                      "conditions_a": ca, "conditions_b": cb}
        return "policy_drift", {"name": f"{key}.policy", **info}
    if k == "response_schema":
        pa, pb = shape_paths(x.detail.get("shape")), shape_paths(y.detail.get("shape"))
        return "external_evidence_drift", {"name": f"{key}.response_schema", **base,
                                           "method": x.context.get("method"),
                                           "schema_change": {"added": sorted(pb - pa), "removed": sorted(pa - pb)}}
    if k == "tool_response":
        info = {"name": f"{key}.response", **base, "method": x.context.get("method"),
                "observed_a": x.ts, "observed_b": y.ts}
        ra, rb = _load(sa, x.digest), _load(sb, y.digest)
        if ra is not _MISSING and rb is not _MISSING:
            info["fields"] = json_changes(ra, rb)
        return "external_evidence_drift", info
    if k == "tool_choice":
        write = "write" in (x.detail.get("effect"), y.detail.get("effect"))
        return ("effect_divergence" if write else "path_divergence",
                {"name": "tool_path", **base, "a": x.summary, "b": y.summary})
    if k == "effect":
        return "effect_divergence", {"name": f"{key}.effect", **base, "a": x.summary, "b": y.summary}
    if k == "tool_request":
        return "model_choice", {"name": f"{key}.request", **base, "a": x.summary, "b": y.summary}
    # patch, tests, decision
    return "model_choice", {"name": f"{k}.{key}", **base, "a": x.summary, "b": y.summary}


def _downstream(ca: list[Checkpoint], cb: list[Checkpoint], la: list[str], lb: list[str], start: int) -> list[str]:
    a = {lbl: c for lbl, c in zip(la[start:], ca[start:])}
    b = {lbl: c for lbl, c in zip(lb[start:], cb[start:])}
    out = []
    for lbl in list(a) + [x for x in b if x not in a]:
        x, y = a.get(lbl), b.get(lbl)
        c = x or y
        if c.kind not in _VERBS:
            continue
        if x is None or y is None:
            out.append(f"{lbl}: {_VERBS[c.kind][0 if y is None else 1]}")
        elif x.digest != y.digest and "simulated" not in (x.status, y.status):
            extra = f" ({x.detail.get('value')} → {y.detail.get('value')})" if c.kind == "decision" else ""
            out.append(f"{lbl}: changed{extra}")
    return out


@_json.nesting_room
def diff_runs(a: RunRecord, b: RunRecord, *, store_a: EvidenceStore | None = None,
              store_b: EvidenceStore | None = None) -> RunDiff:
    """Compare run A (reference) with run B (replay).

    Args:
        a, b: the runs.
        store_a, store_b: evidence stores for field-level response changes (default: each run's
            own ``evidence_store``).

    Returns:
        A :class:`RunDiff`.  Never raises for what the runs contain.
    """
    sa = store_a if store_a is not None else a.store()
    sb = store_b if store_b is not None else b.store()
    ca, cb = a.checkpoints, b.checkpoints
    la, lb = labels(ca), labels(cb)
    d: int | None = None
    bad: int | None = None
    simulated = 0
    respelled: list[str] = []
    for i in range(max(len(ca), len(cb))):
        if i >= len(ca) or i >= len(cb):
            d = i
            break
        x, y = ca[i], cb[i]
        if _unestablished(x) or _unestablished(y):
            bad = i
            break
        if (x.kind, x.key) != (y.kind, y.key):
            d = i
            break
        if "simulated" in (x.status, y.status):
            simulated += 1
            continue
        if x.digest != y.digest:
            if _respelled(x, y, sa, sb):
                respelled.append(la[i])
                continue
            d = i
            break

    reasons: list[str] = []
    for r, side in ((a, "reference"), (b, "replay")):
        if r.status != "completed":
            reasons.append(f"{side} run {r.run!r} {r.status}: {r.stop_reason}")
    if bad is not None:
        x, y = ca[bad], cb[bad]
        for c, r in ((x, a), (y, b)):
            if c.status in _BAD:
                reasons.append(f"checkpoint {c.order} {c.label} in run {r.run!r} is {c.status}: {c.summary}")
            elif c.digest is None:
                reasons.append(f"checkpoint {c.order} {c.label} in run {r.run!r} has no digest "
                               f"(recorded {c.status}): it cannot be compared")
    if not ca and not cb:
        reasons.append("neither run has a checkpoint: nothing was compared")
    if b.contaminated and d is None and bad is None:
        reasons.append(f"run {b.run!r} used live substitutions for missing evidence")

    res = RunDiff(a, b, "reproduced")
    if d is not None:
        x = ca[d] if d < len(ca) else None
        y = cb[d] if d < len(cb) else None
        c = x or y
        nth = sum(1 for z in (ca if x is not None else cb)[:d + 1] if (z.kind, z.key) == (c.kind, c.key))
        cls, changed = _classify(x, y, sa, sb, nth)
        res.checkpoint = d + 1
        res.classification = cls
        res.divergence = {
            "first_checkpoint": (x or y).label,
            "checkpoint": d + 1,
            "incident_digest": None if x is None else x.digest,
            "replay_digest": None if y is None else y.digest,
            "changed_input": changed,
            "downstream_changes": _downstream(ca, cb, la, lb, d + 1 if x is not None and y is not None
                                              and (x.kind, x.key) == (y.kind, y.key) else d),
            "classification": cls,
            "structural": True,
        }
    if reasons:
        res.verdict = "not_re_derivable"
    elif d is not None:
        res.verdict = "diverged"
    res.reasons = reasons
    seq_a = [(c.kind, c.key, c.digest) for c in ca if c.kind in DECISION_CHECKPOINT_KINDS]
    seq_b = [(c.kind, c.key, c.digest) for c in cb if c.kind in DECISION_CHECKPOINT_KINDS]
    res.decision_reproduced = None if res.verdict == "not_re_derivable" else seq_a == seq_b
    pa = [c.digest for c in ca if c.kind == "patch"]
    pb = [c.digest for c in cb if c.kind == "patch"]
    ea = [c for c in ca if c.kind == "effect"]
    eb = [c for c in cb if c.kind == "effect"]
    res.effects = {"patch_digests_equal": pa == pb, "effects_equal": [c.digest for c in ea] == [c.digest for c in eb],
                   "reference_effects": [c.summary for c in ea], "replay_effects": [c.summary for c in eb],
                   # whole digests: a script compares or looks them up (the table shortens them)
                   "reference_patches": list(pa), "replay_patches": list(pb)}
    upto = d if d is not None else (bad if bad is not None else min(len(ca), len(cb)))
    res.cosmetic = [f"{la[i]}: summary differs ({ca[i].summary!r} vs {cb[i].summary!r})" for i in range(upto)
                    if ca[i].digest == cb[i].digest and ca[i].summary != cb[i].summary]
    if respelled:
        res.notes.append(f"{len(respelled)} checkpoint{'s' if len(respelled) > 1 else ''} differ in spelling only "
                         "(key order, whitespace, 1 vs 1.0, Unicode normal form; integer vs number) and agree as "
                         "canonical JSON: " + ", ".join(respelled))
    if simulated:
        res.notes.append(f"{simulated} simulated checkpoints (writes not sent by a read-only run) were not compared")
    if a.operation_id and b.operation_id and a.operation_id != b.operation_id:
        res.notes.append(f"operation ids differ: {a.operation_id} vs {b.operation_id}")
    if a.capsule_digest and b.capsule_digest and a.capsule_digest != b.capsule_digest:
        res.notes.append(f"the runs were made from different capsule.yaml files ({a.capsule_digest} vs "
                         f"{b.capsule_digest}): the capsule changed between them, or they are two capsules' runs")
    return res


@_json.nesting_room
def align(runs: Mapping[str, RunRecord], reference: str | None = None) -> pd.DataFrame:
    """Align several runs' checkpoints by label, in the reference run's order.

    A label present only in another run is placed after that run's previous label.

    Returns:
        One row per label: ``label``, ``kind``, ``key``, then for each run ``<name>_order``
        (Int64), ``<name>_digest``, ``<name>_summary``, ``<name>_status`` (string) and
        ``<name>_match`` (boolean: digest equals the reference's, or the two say the same as
        canonical JSON — see the module docstring; NA for the reference itself, for simulated
        checkpoints, and where either side lacks the checkpoint).
    """
    names = list(runs)
    if not names:
        return pd.DataFrame(columns=["label", "kind", "key"])
    if not any(r.checkpoints for r in runs.values()):  # no rows: still every column
        cols = ["label", "kind", "key"] + [f"{n}_{c}" for n in names
                                           for c in ("order", "digest", "summary", "status", "match")]
        return pd.DataFrame({c: pd.Series(dtype="Int64" if c.endswith("_order") else "boolean"
                                          if c.endswith("_match") else pd.StringDtype("python")) for c in cols})
    ref = reference or names[0]
    per = {n: dict(zip(labels(r.checkpoints), r.checkpoints)) for n, r in runs.items()}
    stores = {n: r.store() for n, r in runs.items()}
    order: list[str] = list(per[ref])
    for n in names:
        prev = None
        for lbl in per[n]:
            if lbl not in order:
                order.insert(order.index(prev) + 1 if prev in order else len(order), lbl)
            prev = lbl
    rows = []
    for lbl in order:
        c0 = next(per[n][lbl] for n in [ref] + names if lbl in per[n])
        row: dict[str, Any] = {"label": lbl, "kind": c0.kind, "key": c0.key}
        rc = per[ref].get(lbl)
        for n in names:
            c = per[n].get(lbl)
            row[f"{n}_order"] = None if c is None else c.order
            row[f"{n}_digest"] = None if c is None else c.digest
            row[f"{n}_summary"] = None if c is None else c.summary
            row[f"{n}_status"] = None if c is None else c.status
            match = None
            if n != ref and c is not None and rc is not None and "simulated" not in (c.status, rc.status):
                match = c.digest == rc.digest and c.digest is not None
                if not match and c.digest is not None and rc.digest is not None:
                    match = _respelled(rc, c, stores[ref], stores[n])  # one canonical JSON value
            row[f"{n}_match"] = match
        rows.append(row)
    df = pd.DataFrame(rows)
    for n in names:
        df[f"{n}_order"] = df[f"{n}_order"].astype("Int64")
        for col in ("digest", "summary", "status"):
            df[f"{n}_{col}"] = df[f"{n}_{col}"].astype(pd.StringDtype("python"))
        df[f"{n}_match"] = df[f"{n}_match"].astype("boolean")
    for col in ("label", "kind", "key"):
        df[col] = df[col].astype(pd.StringDtype("python"))
    return df
