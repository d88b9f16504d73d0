"""Write the capsule demo incident (``data/capsule-demo``): the seed-003 story, end to end.

:func:`make_demo` runs the scripted agent (:mod:`~replaybook.capsule.scripted`) against the
world as it was at 16:42:03 on 2026-09-13, records what a door and a Claude Code transcript would
have recorded, builds the capsule from that evidence, and writes the three runs:

``incident.yaml``, ``transcripts/``, ``door/deployer/``
    the incident as the spine loads it (the door log carries ``response_digest``);
``door-evidence/sha256/<hex>``
    the responses the door kept;
``capture.yaml``, ``capture/``
    what the agent runtime captured at start (prompts, parameters, image manifest, flags, token
    introspection, the repository state);
``workspace/``
    the checkout's files (:func:`~replaybook.capsule.repo.init_checkout` of them, dated
    :data:`CHECKOUT_DATE`, gives the incident's commit);
``capsule/capsule.yaml``, ``capsule/evidence/``
    the capsule and its evidence store;
``runs/incident.json``, ``runs/forensic.json``, ``runs/live.json``, ``runs/evidence/``
    the incident's checkpoints (extracted from its evidence), the forensic replay, the live
    verification at 09:18:22 the next morning (and the live responses it read).

Deterministic: the same code writes the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from ..canonical import canonical_args
from .build import build_capsule, load_capture
from .checkpoints import target_scope
from .extract import incident_run
from .harness import ForensicHarness, LiveHarness, PolicyDecision
from .model import Authority, iso_z, load_capsule
from .repo import Workspace, init_checkout
from .runs import RunRecord
from .scripted import (IDENTITY, RULES_PATH, SYSTEM_PROMPT, T_INCIDENT, T_LIVE, TASK_PROMPT, TESTS_OMITTED,
                       TESTS_SELECTED, WORKSPACE_FILES, DemoWorld, deploy_rule_agent, propose_patch)
from .store import EvidenceStore

__all__ = ["make_demo", "DemoPaths", "CHECKOUT_DATE", "WORKDIR", "OPERATION_ID", "DOOR_SESSION"]

CHECKOUT_DATE = "2026-09-12T15:30:00Z"
WORKDIR = "/home/deployer/deploy-config"
OPERATION_ID = "op-example-913"
DOOR_SESSION = "door-20260913T164203-d1"
AGENT = "deployer"
MODEL = "claude-sonnet-4-5"
_GENERATED = ("transcripts", "door", "door-evidence", "capture", "workspace", "capsule", "runs")


@dataclass
class DemoPaths:
    """Where :func:`make_demo` wrote things."""

    root: Path
    incident: Path
    capsule: Path
    runs: dict[str, Path]


class _Tap:
    """A LiveTransport wrapper that records what the door would log."""

    def __init__(self, world: DemoWorld):
        self.world = world
        self.calls: list[dict] = []

    def identity(self) -> Authority:
        return self.world.identity()

    def now(self) -> datetime:
        return self.world.now()

    def effect(self, server: str, method: str) -> str:
        return self.world.effect(server, method)

    def authorize(self, server, method, arguments, identity, at) -> PolicyDecision:
        d = self.world.authorize(server, method, arguments, identity, at)
        self.calls.append({"server": server, "method": method, "arguments": dict(arguments), "decision": d,
                           "ts": at, "ts_end": None, "data": None})
        return d

    def call(self, server, method, arguments) -> bytes:
        data = self.world.call(server, method, arguments)
        self.calls[-1].update(data=data, ts_end=self.world.now())
        return data

    simulate = call


def _uid(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "replaybook-capsule-demo/" + "/".join(parts)))


def _tool_id(*parts: str) -> str:
    return "toolu_01" + hashlib.sha256("/".join(parts).encode()).hexdigest()[:22]


class _Transcript:
    def __init__(self, sid: str):
        self.sid, self.lines, self.parent, self.n = sid, [], None, 0

    def _base(self, t: datetime, typ: str) -> dict:
        self.n += 1
        u = _uid(self.sid, str(self.n))
        d = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": WORKDIR,
             "sessionId": self.sid, "version": "2.1.42", "gitBranch": "main", "type": typ, "uuid": u,
             "timestamp": iso_z(t)}
        self.parent = u
        return d

    def prompt(self, t: datetime, text: str) -> None:
        d = self._base(t, "user")
        d["message"] = {"role": "user", "content": text}
        self.lines.append(d)

    def assistant(self, t: datetime, block: dict) -> None:
        d = self._base(t, "assistant")
        mid = "msg_01" + hashlib.sha256(f"{self.sid}{self.n}".encode()).hexdigest()[:20]
        d["message"] = {"model": MODEL, "id": mid, "type": "message", "role": "assistant", "content": [block],
                        "stop_reason": "tool_use" if block["type"] == "tool_use" else "end_turn",
                        "usage": {"input_tokens": 2400 + 90 * self.n, "output_tokens": 60 + 5 * self.n}}
        d["requestId"] = "req_01" + hashlib.sha256(f"r{self.sid}{self.n}".encode()).hexdigest()[:20]
        self.lines.append(d)

    def result(self, t: datetime, call_id: str, text: str, is_error: bool = False) -> None:
        d = self._base(t, "user")
        d["message"] = {"role": "user", "content": [{"tool_use_id": call_id, "type": "tool_result",
                                                     "content": text, "is_error": is_error}]}
        d["toolUseResult"] = {"content": [{"type": "text", "text": text}]}
        self.lines.append(d)

    def text(self) -> str:
        return "".join(json.dumps(x, ensure_ascii=False, sort_keys=True) + "\n" for x in self.lines)


def _write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")


def _record_incident(out: Path, checkout: Path) -> None:
    """Run the scripted agent at 16:42 with writes performed; write door log, evidence, transcript."""
    tap = _Tap(DemoWorld(T_INCIDENT))
    sim = LiveHarness(tap, Workspace(checkout), read_only=False, run_name="incident-sim", mode="incident")
    rec = sim.run(deploy_rule_agent)
    if rec.status != "completed":  # pragma: no cover - the demo world is deterministic
        raise RuntimeError(f"demo incident did not complete: {rec.stop_reason}")
    door_store = EvidenceStore(out / "door-evidence")
    sid = _uid("conversation", "incident")
    tr = _Transcript(sid)
    tr.prompt(T_INCIDENT - timedelta(seconds=2), TASK_PROMPT)
    door_lines: list[dict] = []
    calls = iter(tap.calls)
    ms = timedelta(milliseconds=1)
    for cp in rec.checkpoints:
        if cp.kind == "tool_choice":
            c = next(calls)
            cid = _tool_id(sid, str(len(door_lines) + 1))
            if not door_lines:
                tr.assistant(c["ts"] - 900 * ms, {"type": "text",
                                                  "text": "I'll check the feature flag and the catalogue first."})
            tr.assistant(c["ts"] - 400 * ms, {"type": "tool_use", "id": cid, "name": f"mcp__door__{c['method']}",
                                             "input": c["arguments"]})
            d: PolicyDecision = c["decision"]
            allowed = d.result == "allow"
            data = c["data"] if allowed else None
            door_lines.append({
                "ts": iso_z(c["ts"]), "ts_end": iso_z(c["ts_end"] or c["ts"]), "seq": len(door_lines) + 1,
                "session": DOOR_SESSION, "agent": AGENT, "server": c["server"], "method": "tools/call",
                "tool": c["method"], "arguments": c["arguments"], "object": target_scope(c["arguments"]),
                "decision": d.result, "rule": d.rule, "rows": None,
                "bytes": None if data is None else len(data), "meta": {"claudecode/toolUseId": cid},
                "response_digest": None if data is None else door_store.put(data)})
            tr.result((c["ts_end"] or c["ts"]) + 200 * ms, cid,
                      data.decode("utf-8") if data is not None else f"refused by rule {d.rule}", not allowed)
        elif cp.kind == "patch":
            t = datetime.fromisoformat(cp.ts.replace("Z", "+00:00"))
            old, new = propose_patch(WORKSPACE_FILES[RULES_PATH])
            cid = _tool_id(sid, "edit")
            tr.assistant(t + 1000 * ms, {"type": "tool_use", "id": cid, "name": "Edit",
                                         "input": {"file_path": f"{WORKDIR}/{RULES_PATH}", "old_string": old,
                                                   "new_string": new}})
            tr.result(t + 1300 * ms, cid, f"The file {WORKDIR}/{RULES_PATH} has been updated.")
        elif cp.kind == "tests":
            t = datetime.fromisoformat(cp.ts.replace("Z", "+00:00"))
            cid = _tool_id(sid, "tests")
            cmd = "pytest -q " + " ".join(TESTS_SELECTED) + "".join(f" --deselect {x}" for x in TESTS_OMITTED)
            tr.assistant(t + 2000 * ms, {"type": "tool_use", "id": cid, "name": "Bash", "input": {"command": cmd}})
            tr.result(t + 3000 * ms, cid, "1 passed, 1 deselected in 0.02s")
        elif cp.kind == "decision":
            t = datetime.fromisoformat(cp.ts.replace("Z", "+00:00"))
            tr.assistant(t + 1500 * ms, {"type": "text", "text": "Done: ledger-api now deploys through the "
                                         "fast-track rule (PR #481 merged). The catalogue lists no regulated data."})
    _write(out / "transcripts" / f"{sid}.jsonl", tr.text())
    _write(out / "door" / AGENT / f"{DOOR_SESSION}.jsonl",
           "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in door_lines))


def _write_capture(out: Path, dirty_tree: bytes, commit: str) -> None:
    cap = out / "capture"
    _write(cap / "system-prompt.txt", SYSTEM_PROMPT + "\n")
    _write(cap / "model-parameters.json", canonical_args(
        {"model": MODEL, "temperature": 0, "max_tokens": 8192,
         "tools": ["mcp__door__get_flag", "mcp__door__get_service", "mcp__door__create_pull_request",
                   "mcp__door__merge_pull_request", "mcp__door__set_rule", "Edit", "Bash", "Read"]}) + "\n")
    _write(cap / "image-manifest.json", canonical_args(
        {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
         "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                    "digest": "sha256:" + hashlib.sha256(b"agent-runtime-example-2.1.42").hexdigest()},
         "layers": []}) + "\n")
    _write(cap / "feature-flags.json", canonical_args({"agent.auto_merge": True, "agent.mcp_door": True}) + "\n")
    _write(cap / "token-info.json", canonical_args(
        {"sub": IDENTITY.principal, "scope": " ".join(IDENTITY.scopes or ()), "active": True,
         "token_id": "tok-demo-not-a-real-secret-81c2", "exp": "2026-09-13T17:42:03Z"}) + "\n")
    _write(cap / "dirty-tree.bin", dirty_tree)
    _write(out / "capture.yaml", (
        "# What the agent runtime captured at start, besides the door's log and evidence.\n"
        "# Files are stored as evidence objects by `replaybook capsule build`; never inlined.\n"
        f"operation_id: {OPERATION_ID}\n"
        f"principal: {IDENTITY.principal}\n"
        f"scopes: [{', '.join(IDENTITY.scopes or ())}]\n"
        f"policy_version: {IDENTITY.policy_version}\n"
        "provider: anthropic\n"
        "clock_source: door\n"
        f"started_at: '{iso_z(T_INCIDENT)}'\n"
        f"workdir: {WORKDIR}\n"
        "system_prompt: capture/system-prompt.txt\n"
        "model_parameters: capture/model-parameters.json\n"
        "image_manifest: capture/image-manifest.json\n"
        "feature_flags: capture/feature-flags.json\n"
        "token_info: capture/token-info.json\n"
        "repository:\n"
        f"  commit: {commit}\n"
        "  dirty_tree: capture/dirty-tree.bin\n"
    ))


_README = """# Capsule demo: the deployment rule that changed at 16:42

Generated by `scripts/make_capsule_demo.py` (deterministic; do not edit by hand).  All systems,
identifiers and records are fictional.

At 16:42 on 2026-09-13 the agent moved ledger-api to the fast-track deployment rule because the
service catalogue reported `regulated_data: false`.  An operator restored the tag at 23:10.  A
live rerun at 09:18 the next morning left the rule alone.

    replaybook capsule verify data/capsule-demo/capsule                 # complete, exit 0
    replaybook capsule diff data/capsule-demo/runs/incident.json data/capsule-demo/runs/forensic.json
    # -> reproduced
    replaybook capsule diff data/capsule-demo/runs/incident.json data/capsule-demo/runs/live.json
    # -> diverged at checkpoint 12: tool_response.service_catalogue, external_evidence_drift
    replaybook capsule verdict data/capsule-demo/capsule --incident data/capsule-demo/runs/incident.json \\
        --forensic data/capsule-demo/runs/forensic.json --live data/capsule-demo/runs/live.json

Rebuild the capsule from the incident's evidence (no checkout needed: `capture.yaml` holds the
repository state the runtime captured):

    replaybook capsule build data/capsule-demo --evidence data/capsule-demo/door-evidence \\
        --capture data/capsule-demo/capture.yaml --out /tmp/capsule

`workspace/` holds the checkout's files; committing them with
`replaybook.capsule.repo.init_checkout(dir, files, when="2026-09-12T15:30:00Z", message="deploy rules")`
recreates the incident's commit.
"""


def make_demo(out: str | Path) -> DemoPaths:
    """Write the capsule demo into ``out`` (its generated subfolders are replaced).

    Returns:
        :class:`DemoPaths`.

    Raises:
        CapsuleError: git is not installed.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name in _GENERATED:
        p = out / name
        if p.exists():
            for f in p.rglob("*"):  # evidence objects are read-only
                if f.is_file():
                    f.chmod(0o644)
            shutil.rmtree(p)
    for rel, text in WORKSPACE_FILES.items():
        _write(out / "workspace" / rel, text)
    with tempfile.TemporaryDirectory(prefix="capsule-demo-") as tmp:
        checkout = Path(tmp) / "deploy-config"
        state = init_checkout(checkout, WORKSPACE_FILES, when=CHECKOUT_DATE, message="deploy rules")
        _record_incident(out, checkout)
        _write_capture(out, state.dirty_tree or b"", state.commit or "")
        _write(out / "incident.yaml", (
            "# The capsule demo incident (generated by scripts/make_capsule_demo.py; do not edit by hand).\n"
            'title: "Demo: the agent moved ledger-api to the fast-track deployment rule"\n'
            "description: >-\n"
            "  At 16:42 the service catalogue reported regulated_data=false for ledger-api and the agent\n"
            "  changed the production deployment rule. The capsule is in capsule/, the runs in runs/.\n"
            "transcripts:\n  - transcripts/*.jsonl\n"
            "door:\n  - door/\n"
            "capsule:\n  path: capsule/capsule.yaml\n"
            "  runs:\n    incident: runs/incident.json\n    forensic: runs/forensic.json\n"
            "    live: runs/live.json\n"
            "window_s: 60\n"))
        _write(out / "README.md", _README)
        build_capsule(out / "incident.yaml", out / "door-evidence", out / "capsule",
                      capture=load_capture(out / "capture.yaml"))
        capsule = load_capsule(out / "capsule")
        runs: dict[str, RunRecord] = {
            "incident": incident_run(capsule, out / "incident.yaml"),
            "forensic": ForensicHarness(capsule, Workspace(checkout)).run(deploy_rule_agent),
            "live": LiveHarness(DemoWorld(T_LIVE), Workspace(checkout),
                                capture_store=EvidenceStore(out / "runs" / "evidence")).run(deploy_rule_agent),
        }
    paths = {name: r.save(out / "runs" / f"{name}.json") for name, r in runs.items()}
    return DemoPaths(out, out / "incident.yaml", out / "capsule" / "capsule.yaml", paths)
