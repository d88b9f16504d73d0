"""Run records: one run's checkpoints and how it ended, as a JSON file.

A run is the incident itself (extracted from its transcript, door log and capsule), a forensic
replay (answered from captured evidence) or a live verification (current systems, read-only).
Format ``replaybook-run/1`` (JSON, UTF-8)::

    {"format": "replaybook-run/1", "run": "live", "mode": "live",
     "operation_id": "op-…", "capsule_digest": "sha256:…",        # of capsule.yaml's bytes
     "status": "completed",               # completed | replay_incomplete | failed
     "stop_reason": null, "stop_detail": {},
     "started_at": "…Z", "evidence_time": "…Z",                   # UTC
     "external_calls": "allowed_read_only",  # blocked | allowed_read_only | recorded
     "external_effects_replayed": false,
     "captured_responses_used": 0,
     "substitutions": [],                  # live reads that replaced missing evidence
     "network_attempts": [],               # blocked network access (forensic)
     "evidence_store": "evidence",         # where its responses are, relative to this file
     "checkpoints": [ {order, kind, key, label, digest, summary, ts, status, call_id,
                       detail, context}, … ]}
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from .. import _yaml
from .._schema import key_error, short_message
from .._text import utf8_error_place
from .checkpoints import CHECKPOINT_KINDS, CHECKPOINT_STATUSES, Checkpoint, checkpoints_frame
from .errors import CapsuleFormatError
from .store import EvidenceStore

__all__ = ["RUN_FORMAT", "RUN_STATUSES", "RUN_MODES", "EXTERNAL_CALLS", "RunRecord", "load_run"]

RUN_FORMAT = "replaybook-run/1"

#: Values of ``status``.
RUN_STATUSES = ("completed", "replay_incomplete", "failed")

#: Values of ``mode``.
RUN_MODES = ("incident", "forensic", "live")

#: Values of ``external_calls``.
EXTERNAL_CALLS = ("blocked", "allowed_read_only", "recorded")

_SCHEMA = {
    "type": "object",
    "required": ["format", "run", "mode", "status", "checkpoints"],
    "properties": {
        "format": {"const": RUN_FORMAT},
        "run": {"type": "string", "minLength": 1},
        "mode": {"enum": list(RUN_MODES)},
        "status": {"enum": list(RUN_STATUSES)},
        "external_calls": {"enum": list(EXTERNAL_CALLS)},
        "operation_id": {"type": ["string", "null"]},
        "capsule_digest": {"type": ["string", "null"]},
        "stop_reason": {"type": ["string", "null"]},
        "stop_detail": {"type": ["object", "null"]},
        "started_at": {"type": ["string", "null"], "format": "date-time"},
        "evidence_time": {"type": ["string", "null"], "format": "date-time"},
        "external_effects_replayed": {"type": "boolean"},
        "captured_responses_used": {"type": ["integer", "null"], "minimum": 0, "maximum": 2**63 - 1},
        "substitutions": {"type": ["array", "null"], "items": {"type": "object"}},
        "network_attempts": {"type": ["array", "null"], "items": {"type": "object"}},
        "evidence_store": {"type": ["string", "null"], "minLength": 1},
        "checkpoints": {"type": "array", "items": {
            "type": "object",
            "required": ["order", "kind", "key", "digest", "status"],
            "properties": {
                "order": {"type": "integer", "minimum": 1, "maximum": 2**63 - 1},  # (a frame's Int64)
                "kind": {"enum": list(CHECKPOINT_KINDS)},
                "key": {"type": "string"},
                "label": {"type": ["string", "null"]},
                "digest": {"type": ["string", "null"], "pattern": "^sha256:[0-9a-f]{64}$"},
                "summary": {"type": ["string", "null"]},
                "ts": {"type": ["string", "null"], "format": "date-time"},
                "status": {"enum": list(CHECKPOINT_STATUSES)},
                "call_id": {"type": ["string", "null"]},
                "detail": {"type": "object"},
                # a policy checkpoint's conditions are named by key ({"clock": …}): the diff reads them so
                "context": {"type": "object", "properties": {"conditions": {"type": ["object", "null"]}}},
            },
        }},
    },
}


@dataclass
class RunRecord:
    """One run (see the module docstring for the fields).  Times are ISO 8601 UTC strings."""

    run: str
    mode: str
    checkpoints: list[Checkpoint] = field(default_factory=list)
    status: str = "completed"
    stop_reason: str | None = None
    stop_detail: dict = field(default_factory=dict)
    operation_id: str | None = None
    capsule_digest: str | None = None
    started_at: str | None = None
    evidence_time: str | None = None
    external_calls: str = "recorded"
    external_effects_replayed: bool = False
    captured_responses_used: int = 0
    substitutions: list[dict] = field(default_factory=list)
    network_attempts: list[dict] = field(default_factory=list)
    evidence_store: Path | None = None
    path: Path | None = None

    # -- views -----------------------------------------------------------------------------
    @property
    def contaminated(self) -> bool:
        """True when a live read replaced missing evidence (the run is not a faithful replay)."""
        return bool(self.substitutions) or any(c.status in ("substituted", "contaminated") for c in self.checkpoints)

    @property
    def frame(self):
        """This run's :data:`~replaybook.capsule.checkpoints.CHECKPOINTS` frame."""
        return checkpoints_frame(self)

    def store(self) -> EvidenceStore | None:
        """The evidence store holding this run's responses, if known."""
        return None if self.evidence_store is None else EvidenceStore(self.evidence_store)

    # -- (de)serialisation ----------------------------------------------------------------------
    def to_dict(self, base: Path | None = None) -> dict:
        """JSON-ready dict; ``evidence_store`` relative to ``base`` when given."""
        store = None
        if self.evidence_store is not None:
            store = str(self.evidence_store)
            if base is not None:
                store = os.path.relpath(Path(self.evidence_store).resolve(), base.resolve())
        return {"format": RUN_FORMAT, "run": self.run, "mode": self.mode, "operation_id": self.operation_id,
                "capsule_digest": self.capsule_digest, "status": self.status, "stop_reason": self.stop_reason,
                "stop_detail": self.stop_detail, "started_at": self.started_at,
                "evidence_time": self.evidence_time, "external_calls": self.external_calls,
                "external_effects_replayed": self.external_effects_replayed,
                "captured_responses_used": self.captured_responses_used,
                "substitutions": self.substitutions, "network_attempts": self.network_attempts,
                "evidence_store": store, "checkpoints": [c.to_dict() for c in self.checkpoints]}

    def save(self, path: str | Path) -> Path:
        """Write the record as JSON (atomically); ``evidence_store`` is stored relative to it."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.to_dict(p.parent), indent=1, ensure_ascii=False) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=".run-", dir=p.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, p)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.path = p
        return p

    @classmethod
    def from_dict(cls, d: dict, path: Path | None = None) -> "RunRecord":
        """Rebuild from :meth:`to_dict` output (``evidence_store`` resolved against ``path``'s folder)."""
        store = d.get("evidence_store")
        if store is not None and path is not None:
            store = (path.parent / store).resolve()
        return cls(run=d["run"], mode=d["mode"], checkpoints=[Checkpoint.from_dict(c) for c in d["checkpoints"]],
                   status=d["status"], stop_reason=d.get("stop_reason"), stop_detail=d.get("stop_detail") or {},
                   operation_id=d.get("operation_id"), capsule_digest=d.get("capsule_digest"),
                   started_at=d.get("started_at"), evidence_time=d.get("evidence_time"),
                   external_calls=d.get("external_calls", "recorded"),
                   external_effects_replayed=bool(d.get("external_effects_replayed")),
                   captured_responses_used=int(d.get("captured_responses_used") or 0),
                   substitutions=list(d.get("substitutions") or []),
                   network_attempts=list(d.get("network_attempts") or []),
                   evidence_store=None if store is None else Path(store), path=path)


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        raise _DuplicateKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return d


def load_run(path: str | Path) -> RunRecord:
    """Read a run record (``replaybook-run/1`` JSON).

    Raises:
        CapsuleFormatError: unreadable, not JSON (or nested too deeply to read), an object that
            writes a key twice, or not a run record (names the field and its line, and for an
            unknown key beside a missing one the key it was meant to be: a checkpoint digest must
            be ``sha256:<64 lowercase hex>``, the spelling the diff compares), or its checkpoints
            are not listed in increasing ``order``.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
        text = raw.decode("utf-8")
        d: Any = json.loads(text, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise CapsuleFormatError(f"run record writes key {exc.args[0]!r} twice in one object: JSON readers keep "
                                 "either one, so which the record means is not known", p) from None
    except OSError as exc:
        raise CapsuleFormatError(f"cannot read run record: {exc.strerror or exc}", p) from exc
    except UnicodeDecodeError as exc:
        line, col = utf8_error_place(raw, exc)
        raise CapsuleFormatError(f"run record is not UTF-8 text: byte 0x{raw[exc.start]:02x} at column {col}", p,
                                 line) from exc
    except json.JSONDecodeError as exc:
        raise CapsuleFormatError(f"run record is not JSON: {exc}", p, exc.lineno) from exc
    except RecursionError:  # (a record replaybook writes nests a few levels)
        raise CapsuleFormatError("run record is nested too deeply to read", p) from None
    validator = jsonschema.Draft202012Validator(_SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    err = jsonschema.exceptions.best_match(validator.iter_errors(d))
    if err is not None:
        where = "/".join(str(x) for x in err.absolute_path) or "(top level)"
        key = key_error(err)  # a misspelt key: its own line, and the key it was meant to be
        at, words = key if key is not None else (list(err.absolute_path), short_message(err.message))
        # the line of the offending field, or of the object that lacks a required one
        raise CapsuleFormatError(f"not a {RUN_FORMAT} record at {where}: {words}", p, _yaml.line_at(text, at))
    orders = [c["order"] for c in d["checkpoints"]]
    for i in range(1, len(orders)):  # (the diff walks checkpoints as listed: a list out of order misleads it)
        if orders[i] <= orders[i - 1]:
            raise CapsuleFormatError(f"not a {RUN_FORMAT} record at checkpoints/{i}/order: {orders[i]} follows "
                                     f"{orders[i - 1]}; checkpoints are listed in their order, each once (was the "
                                     "record edited?)", p, _yaml.line_at(text, ["checkpoints", i, "order"]))
    return RunRecord.from_dict(d, p.resolve())
