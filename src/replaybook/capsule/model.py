"""The replay capsule (``capsule.yaml``): the format, its JSON Schema and a typed view of it.

A capsule pins every input that can change an agent's decision in one operation.  Its shape is
the JSON Schema ``replaybook/schemas/capsule.v1.json`` (:func:`capsule_schema`), which ships in
the package.  Example (all values fictional)::

    capsule_version: 1
    operation_id: op-example-913
    evidence_store: evidence               # folder beside capsule.yaml: sha256/<hex>
    repository:
      commit: 7f2c…
      dirty_tree_digest: sha256:…          # git status --porcelain + git diff HEAD (repo.py)
      dirty_tree_ref: evidence://op-example-913/repository.dirty-tree
      workdir: /home/deployer/deploy-config
    prompts: {system_digest: sha256:…, system_ref: …, task_digest: sha256:…, task_ref: …}
    model: {provider: anthropic, model: claude-sonnet-4-5, parameters_digest: sha256:…, parameters_ref: …}
    runtime: {image_digest: sha256:…, image_ref: …, started_at: '2026-09-13T16:42:03Z',
              clock_source: door, flags_digest: sha256:…, flags_ref: …}
    authority:
      principal: claude-worker-example-12
      scopes: [repo_write, catalogue_read]
      policy_version: policy-example-44
      token_info_digest: sha256:…          # the credential's introspection record, kept as evidence
      decision_logs: [{digest: sha256:…, ref: evidence://…/door-log.1}]
    tool_evidence:
      - call_id: toolu_01…
        server: service-catalogue
        method: get_service
        request_digest: sha256:…           # digest.request_digest(server, method, arguments); door_request_digest for a door call whose arguments were not logged
        response_digest: sha256:31a7…
        captured_response_ref: evidence://op-example-913/toolu_01…
        observed_at: '2026-09-13T16:42:11.120Z'
        effect: read                       # read | write | unknown
        policy: {result: allow, rule: allow-read}
    missing_evidence_policy: {default: stop, permitted_fallbacks: [], verdict_on_missing_input: replay_incomplete}
    completeness: complete                 # complete | unproven (see verify.py)
    completeness_reasons: []

Every ``*_ref`` sits beside a ``*_digest``: the reference names the object for an authorised
reviewer, the digest finds it in the content-addressed store and proves it is the one the run
used.  Nothing sensitive is inline.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .. import _yaml
from .._schema import key_error, short_message
from .._text import utf8_error_place
from .errors import CapsuleFormatError

__all__ = [
    "CAPSULE_FILE",
    "EFFECTS",
    "capsule_schema",
    "validate_capsule",
    "load_capsule",
    "evidence_ref",
    "iso_z",
    "Authority",
    "ToolEvidence",
    "MissingEvidencePolicy",
    "Capsule",
    "guess_effect",
]

#: The capsule's file name inside a capsule folder.
CAPSULE_FILE = "capsule.yaml"

#: Values of ``tool_evidence[].effect``: what the tool is meant to do.
EFFECTS = ("read", "write", "unknown")


@lru_cache(maxsize=1)
def capsule_schema() -> dict:
    """The capsule's JSON Schema (draft 2020-12), loaded from the package."""
    text = resources.files("replaybook").joinpath("schemas/capsule.v1.json").read_text("utf-8")
    return json.loads(text)


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(capsule_schema())
    return cls(capsule_schema(), format_checker=cls.FORMAT_CHECKER)


def iso_z(t: Any) -> str | None:
    """A time as ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (UTC, milliseconds); ``None``/NaT → ``None``.

    Accepts ``datetime`` (naive means UTC), ``pandas.Timestamp`` and ISO 8601 strings.

    Raises:
        ValueError: a string that is not an ISO 8601 time.
    """
    if t is None:
        return None
    import pandas as pd

    if isinstance(t, str):
        ts = pd.Timestamp(t)
    elif isinstance(t, (datetime, pd.Timestamp)):
        ts = pd.Timestamp(t)
    else:
        raise ValueError(f"not a time: {t!r}")
    if pd.isna(ts):
        return None
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def _plain(v: Any) -> Any:
    """YAML may parse unquoted times into datetimes: turn them back into ISO strings."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=timezone.utc)
        return iso_z(v)
    if isinstance(v, date):
        return v.isoformat()
    return v


class _Invalid(CapsuleFormatError):
    """A :class:`CapsuleFormatError` that knows the field's place in the mapping (``where``)."""

    def __init__(self, message: str, path: str | Path | None, where: list):
        super().__init__(message, path)
        self.where = where


def validate_capsule(data: Any, path: str | Path | None = None) -> None:
    """Check a capsule mapping against the JSON Schema, and what the schema cannot say: every
    ``tool_evidence`` entry has its own ``call_id``, and ``evidence_store`` is a relative path
    (it names the folder beside ``capsule.yaml``; a NUL cannot be in a path).

    Raises:
        CapsuleFormatError: naming the first offending field (``tool_evidence/2/request_digest``).
    """
    err = jsonschema.exceptions.best_match(_validator().iter_errors(data))
    if err is not None:
        where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        key = key_error(err)  # a misspelt key: its own line, and the key it was meant to be
        at, words = key if key is not None else (list(err.absolute_path), short_message(err.message))
        raise _Invalid(f"capsule does not match capsule.v1 at {where}: {words}", path, at)
    seen: dict[str, int] = {}
    for i, ev in enumerate(data["tool_evidence"]):
        first = seen.setdefault(ev["call_id"], i)
        if first != i:
            raise _Invalid(f"capsule's tool_evidence/{i}/call_id: call id {ev['call_id']!r} is also entry {first}'s; "
                           "each captured call has its own id (which response would be that call's?)",
                           path, ["tool_evidence", i, "call_id"])
    store = data.get("evidence_store", "evidence")
    if "\0" in store or os.path.isabs(store) or store.startswith(("/", "\\")):
        raise _Invalid(f"capsule's evidence_store {store!r} must be a folder relative to capsule.yaml "
                       "(its evidence travels with it)", path, ["evidence_store"])


def evidence_ref(operation_id: str, name: str) -> str:
    """``evidence://<operation_id>/<name>`` — the reference a reviewer resolves through the store."""
    return f"evidence://{operation_id}/{name}"


@dataclass(frozen=True)
class Authority:
    """The effective identity of a run: who, with which scopes, under which policy version.

    ``scopes`` is a sorted tuple, or ``None`` when it was not captured.
    """

    principal: str | None
    scopes: tuple[str, ...] | None
    policy_version: str | None

    @classmethod
    def from_dict(cls, d: dict | None) -> "Authority":
        """Build from the capsule's ``authority`` block (missing keys mean not captured)."""
        d = d or {}
        sc = d.get("scopes")
        return cls(d.get("principal"), None if sc is None else tuple(sorted(sc)), d.get("policy_version"))

    def missing(self) -> list[str]:
        """Names of the fields that were not captured, in ``principal, scopes, policy_version`` order."""
        out = []
        if not self.principal:
            out.append("principal")
        if self.scopes is None:
            out.append("scopes")
        if not self.policy_version:
            out.append("policy_version")
        return out

    def to_dict(self) -> dict:
        """``{principal, scopes (list or None), policy_version}``."""
        return {"principal": self.principal, "scopes": None if self.scopes is None else list(self.scopes),
                "policy_version": self.policy_version}


@dataclass(frozen=True)
class ToolEvidence:
    """One captured tool call (a ``tool_evidence`` entry).  Times are ISO 8601 UTC strings."""

    call_id: str
    server: str
    method: str
    request_digest: str
    response_digest: str | None
    captured_response_ref: str | None
    observed_at: str | None
    effect: str = "unknown"
    policy: dict | None = None
    error: str | None = None

    @classmethod
    def from_dict(cls, d: dict) -> "ToolEvidence":
        """Build from a validated ``tool_evidence`` entry."""
        return cls(d["call_id"], d["server"], d["method"], d["request_digest"], d.get("response_digest"),
                   d.get("captured_response_ref"), d.get("observed_at"), d.get("effect", "unknown"),
                   d.get("policy"), d.get("error"))

    def to_dict(self) -> dict:
        """The entry as it appears in ``capsule.yaml``."""
        return {"call_id": self.call_id, "server": self.server, "method": self.method,
                "request_digest": self.request_digest, "response_digest": self.response_digest,
                "captured_response_ref": self.captured_response_ref, "observed_at": self.observed_at,
                "effect": self.effect, "policy": self.policy, "error": self.error}

    @property
    def needs_response(self) -> bool:
        """True when the call was allowed and did not fail, so a response must have existed."""
        return (self.policy is None or self.policy.get("result") == "allow") and not self.error


@dataclass(frozen=True)
class MissingEvidencePolicy:
    """What a forensic replay does when evidence is missing (the seed's ``missing_evidence_policy``).

    ``default`` is always ``stop``.  ``permitted_fallbacks`` lists ``(server, method)`` pairs
    (``method`` ``*`` = any) a reviewer allows to be read live instead; a fallback is recorded
    and contaminates every later checkpoint.
    """

    default: str = "stop"
    permitted_fallbacks: tuple[tuple[str, str], ...] = ()
    verdict_on_missing_input: str = "replay_incomplete"

    @classmethod
    def from_dict(cls, d: dict | None) -> "MissingEvidencePolicy":
        """Build from the capsule's ``missing_evidence_policy`` block (absent → stop, no fallbacks)."""
        d = d or {}
        fb = tuple((f["server"], f.get("method", "*")) for f in d.get("permitted_fallbacks", []))
        return cls(d.get("default", "stop"), fb, d.get("verdict_on_missing_input", "replay_incomplete"))

    def allows(self, server: str, method: str) -> bool:
        """True when a live read of ``server``/``method`` is an explicitly permitted fallback."""
        return any(s == server and m in ("*", method) for s, m in self.permitted_fallbacks)

    def to_dict(self) -> dict:
        """The block as it appears in ``capsule.yaml``."""
        return {"default": self.default,
                "permitted_fallbacks": [{"server": s, "method": m} for s, m in self.permitted_fallbacks],
                "verdict_on_missing_input": self.verdict_on_missing_input}


@dataclass
class Capsule:
    """A loaded, schema-valid capsule.

    Attributes:
        data: the capsule mapping exactly as in ``capsule.yaml`` (times as ISO strings).
        path: the ``capsule.yaml`` it was read from (``None`` for one built in memory).
        verification: for a capsule :func:`~replaybook.capsule.build.build_capsule` has just
            written, the :class:`~replaybook.capsule.verify.VerifyReport` of reading its objects
            back (each object re-hashed from disk once it was written); ``None`` otherwise.
    """

    data: dict
    path: Path | None = None
    _evidence: list[ToolEvidence] | None = field(default=None, repr=False)
    verification: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict, path: str | Path | None = None) -> "Capsule":
        """Validate a mapping and wrap it.

        Raises:
            CapsuleFormatError: the mapping does not match the schema.
        """
        data = _plain(data)
        validate_capsule(data, path)
        return cls(data=data, path=None if path is None else Path(path))

    # -- sections -------------------------------------------------------------------------
    @property
    def operation_id(self) -> str:
        """The operation id."""
        return self.data["operation_id"]

    @property
    def repository(self) -> dict:
        """The ``repository`` block (``commit``, ``dirty_tree_digest`` …)."""
        return self.data["repository"]

    @property
    def prompts(self) -> dict:
        """The ``prompts`` block."""
        return self.data["prompts"]

    @property
    def model(self) -> dict:
        """The ``model`` block."""
        return self.data["model"]

    @property
    def runtime(self) -> dict:
        """The ``runtime`` block."""
        return self.data["runtime"]

    @property
    def authority(self) -> Authority:
        """The effective identity recorded for the run."""
        return Authority.from_dict(self.data.get("authority"))

    @property
    def tool_evidence(self) -> list[ToolEvidence]:
        """The captured tool calls, in capsule order."""
        if self._evidence is None:
            self._evidence = [ToolEvidence.from_dict(d) for d in self.data["tool_evidence"]]
        return self._evidence

    @property
    def missing_evidence_policy(self) -> MissingEvidencePolicy:
        """What a forensic replay does on missing evidence (default: stop)."""
        return MissingEvidencePolicy.from_dict(self.data.get("missing_evidence_policy"))

    @property
    def completeness(self) -> str:
        """The completeness the capsule declares (``complete`` / ``unproven``)."""
        return self.data["completeness"]

    @property
    def started_at(self) -> str | None:
        """``runtime.started_at`` (ISO 8601 UTC) or ``None``."""
        return self.runtime.get("started_at")

    @property
    def store_root(self) -> Path:
        """The evidence store folder (``evidence_store`` relative to capsule.yaml).

        Raises:
            CapsuleFormatError: the capsule was built in memory and has no folder.
        """
        if self.path is None:
            raise CapsuleFormatError("capsule has no path, so its evidence store cannot be found")
        return (self.path.parent / self.data.get("evidence_store", "evidence")).resolve()

    def store(self):
        """The capsule's :class:`~replaybook.capsule.store.EvidenceStore`."""
        from .store import EvidenceStore

        return EvidenceStore(self.store_root)

    # -- output ---------------------------------------------------------------------------
    def to_yaml(self) -> str:
        """The capsule as YAML text (key order kept; times quoted)."""
        return "# replay capsule (replaybook capsule.v1): digests and evidence references only\n" + \
            yaml.safe_dump(self.data, sort_keys=False, allow_unicode=True, width=120)

    def save(self, path: str | Path) -> Path:
        """Write ``capsule.yaml`` atomically and durably (a folder means ``<folder>/capsule.yaml``):
        its UTF-8 bytes (:meth:`to_yaml`) go to a temporary file in the same folder, which is
        ``fsync``'d, renamed into place, and the folder ``fsync``'d so the new entry lasts a crash.

        Returns:
            The file written; :attr:`path` is set to it.

        Raises:
            OSError: writing, syncing or renaming failed (no space left, an I/O error …).
        """
        p = Path(path)
        if p.is_dir() or p.suffix == "":
            p = p / CAPSULE_FILE
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".capsule-", dir=p.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(self.to_yaml().encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, p)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        sync_folder(p.parent)
        self.path = p
        return p


def sync_folder(folder: str | Path) -> None:
    """``fsync`` a folder, so the entries just made in it (a file renamed into place) last a
    crash.  A file system that cannot sync a folder (``EINVAL``: it keeps no such state to
    sync) is left as it is, and so is a folder this process may write but not open for reading
    (``EACCES``, ``EPERM``: mode 0333): its entries are made all the same, only not forced to disk.

    Raises:
        OSError: the folder cannot be opened for another reason, or syncing it failed (an I/O
            error …).
    """
    import errno

    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except PermissionError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def load_capsule(path: str | Path) -> Capsule:
    """Read and validate ``capsule.yaml``.

    Args:
        path: the file, or the folder holding ``capsule.yaml``.

    Raises:
        CapsuleFormatError: the file is missing, not YAML (or nested too deeply to read), or
            does not match capsule.v1 (the message names the field, and the error its line).
    """
    p = Path(path)
    if p.is_dir():
        p = p / CAPSULE_FILE
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise CapsuleFormatError(f"cannot read capsule: {exc.strerror or exc}", p) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = utf8_error_place(raw, exc)
        raise CapsuleFormatError(f"capsule is not UTF-8 text: byte 0x{raw[exc.start]:02x} at column {col}", p,
                                 line) from exc
    try:
        data = _yaml.load(text)
    except _yaml.DuplicateKeyError as exc:
        raise CapsuleFormatError(exc.problem, p, exc.problem_mark.line + 1) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise CapsuleFormatError(f"not valid YAML: {_yaml.describe(exc)}", p, None if mark is None else mark.line + 1) from exc
    except RecursionError:  # (a capsule replaybook writes nests a few levels)
        raise CapsuleFormatError("capsule is nested too deeply to read", p) from None
    prefix: list = []
    if isinstance(data, dict) and "replay_capsule" in data and len(data) == 1:
        data = data["replay_capsule"]  # the seed's wrapping key
        prefix = ["replay_capsule"]
    if not isinstance(data, dict):
        raise CapsuleFormatError("capsule must be a YAML mapping", p)
    try:
        return Capsule.from_dict(data, p.resolve())
    except _Invalid as exc:
        # the offending key's line, or the line of the mapping that lacks a required key
        line = _yaml.line_at(text, prefix + exc.where)
        cut = "" if exc.where or text.endswith("\n") else " (the file ends mid-line: was it cut short?)"
        raise CapsuleFormatError(exc.message + cut, p, line) from None
    except RecursionError:
        raise CapsuleFormatError("capsule is nested too deeply to read", p) from None


_READ_PREFIXES = ("get", "list", "read", "describe", "query", "search", "fetch", "show", "status", "find",
                  "lookup", "head", "count", "summarise", "summarize", "view", "inspect", "check")


def guess_effect(method: str) -> str:
    """A tool's intended effect guessed from its name: ``read`` for ``get_…``, ``list_…``, ``describe``
    and similar verbs (:data:`_READ_PREFIXES`), otherwise ``write`` (fail closed: an unknown tool is
    treated as having an effect, so a read-only run never sends it)."""
    m = method.lower().replace("-", "_").replace(".", "_").split("/")[-1]
    return "read" if m.split("_")[0] in _READ_PREFIXES else "write"
