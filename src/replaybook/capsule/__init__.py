"""Replay capsules: capture every input that can change an agent's decision, replay it, compare.

A **capsule** (``capsule.yaml`` + a content-addressed evidence store) pins an operation's inputs:
repository commit and dirty tree, prompts, model and parameters, runtime image and start time,
authority (principal, scopes, policy version), and every tool call's request and response
digests with the captured response kept as evidence.  Two exercises use it, and their verdicts
are never merged:

* a **forensic replay** (:class:`ForensicHarness`) answers the agent's calls from the captured
  evidence only — network blocked, missing evidence stops it (``replay_incomplete``);
* a **live verification** (:class:`LiveHarness`) asks current systems, read-only.

Each run yields structured **checkpoints** (:data:`CHECKPOINTS`); :func:`diff_runs` compares two
runs and reports the first divergence, its classification and a verdict: ``reproduced``,
``diverged`` at checkpoint N, or ``not_re_derivable``.

Public API::

    load_capsule(path) / verify_capsule(path)          # → Capsule / VerifyReport (inventory)
    build_capsule(incident, door_evidence, out, repo=…, capture=load_capture(…))
    ForensicHarness(capsule, workspace).run(agent)    # → RunRecord
    LiveHarness(transport, workspace).run(agent)       # → RunRecord
    incident_run(capsule, incident)                    # → RunRecord of the incident itself
    diff_runs(run_a, run_b)                            # → RunDiff
    checkpoints_frame(runs)                            # → CHECKPOINTS frame
    review_section(capsule, incident, forensic, live)  # → report blocks, tables, HTML
    replaybook.capsule.cli.capsule                     # the ``replaybook capsule`` click group
"""

from .build import Capture, build_capsule, load_capture
from .checkpoints import CHECKPOINT_KINDS, CHECKPOINT_STATUSES, CHECKPOINTS, Checkpoint, checkpoints_frame
from .diff import CLASSIFICATIONS, VERDICTS, RunDiff, align, diff_runs
from .digest import request_digest, response_shape, sha256_digest
from .errors import (AuthorityUnproven, CapsuleError, CapsuleFormatError, EvidenceMissing, IntegrityError,
                     NetworkBlocked, ReadBackError, ToolDenied)
from .extract import incident_run
from .harness import ForensicHarness, LiveHarness, LiveTransport, PolicyDecision, run_forensic, run_live
from .model import Authority, Capsule, MissingEvidencePolicy, ToolEvidence, capsule_schema, load_capsule
from .netguard import allow_network, block_network
from .repo import RepoState, Workspace, init_checkout, repo_state
from .report import (CapsuleSection, replay_results, replay_verdict, review_section, side_by_side,
                     side_by_side_styler)
from .runs import RunRecord, load_run
from .store import EvidenceStore
from .verify import INVENTORY, VerifyReport, verify_capsule

__all__ = [
    "Capsule", "ToolEvidence", "Authority", "MissingEvidencePolicy", "load_capsule", "capsule_schema",
    "EvidenceStore", "RepoState", "Workspace", "repo_state", "init_checkout",
    "VerifyReport", "verify_capsule", "INVENTORY",
    "Capture", "load_capture", "build_capsule",
    "Checkpoint", "CHECKPOINTS", "CHECKPOINT_KINDS", "CHECKPOINT_STATUSES", "checkpoints_frame",
    "RunRecord", "load_run", "incident_run",
    "ForensicHarness", "LiveHarness", "LiveTransport", "PolicyDecision", "run_forensic", "run_live",
    "block_network", "allow_network",
    "RunDiff", "diff_runs", "align", "VERDICTS", "CLASSIFICATIONS",
    "side_by_side", "side_by_side_styler", "replay_verdict", "replay_results", "review_section", "CapsuleSection",
    "request_digest", "response_shape", "sha256_digest",
    "CapsuleError", "CapsuleFormatError", "IntegrityError", "EvidenceMissing", "AuthorityUnproven",
    "NetworkBlocked", "ToolDenied", "ReadBackError",
]
