"""Checkpoints: the frame, and extraction from the incident's evidence."""

from __future__ import annotations

import pandas as pd
import pytest

from replaybook.capsule import CHECKPOINTS, checkpoints_frame, incident_run, load_capsule, load_run
from replaybook.capsule.checkpoints import (CheckpointLog, decision_checkpoint, server_key, target_scope,
                                            tests_checkpoint as make_tests_checkpoint)
from replaybook.capsule.errors import CapsuleFormatError
from replaybook.capsule.extract import parse_pytest

DEMO_LABELS = [
    "state.repository", "authority.effective",
    "tool_choice.feature_flags", "tool_request.feature_flags", "policy.feature_flags",
    "response_schema.feature_flags", "tool_response.feature_flags",
    "tool_choice.service_catalogue", "tool_request.service_catalogue", "policy.service_catalogue",
    "response_schema.service_catalogue", "tool_response.service_catalogue",
    "patch.deploy/rules.yaml", "tests.selection",
    "tool_choice.repo_host", "tool_request.repo_host", "policy.repo_host", "response_schema.repo_host",
    "tool_response.repo_host", "effect.repo_host",
    "tool_choice.repo_host#2", "tool_request.repo_host#2", "policy.repo_host#2", "response_schema.repo_host#2",
    "tool_response.repo_host#2", "effect.repo_host#2",
    "decision.stop",
]


def test_incident_checkpoints_from_transcript_door_and_capsule(demo):
    run = incident_run(demo / "capsule", demo / "incident.yaml")
    assert [c.label for c in run.checkpoints] == DEMO_LABELS
    assert all(c.status == "ok" for c in run.checkpoints)
    by = {c.label: c for c in run.checkpoints}
    assert by["tool_response.service_catalogue"].digest == (
        "sha256:0482a3c6491f9d14b6c7cd72e873ca6dcfc853f40c2a04d65eb40b2d1e5e60f0")
    assert by["tests.selection"].detail == {"selected": ["tests/deploy/test_rules.py"],
                                            "omitted": ["tests/deploy/test_regulated_data.py"]}
    assert by["patch.deploy/rules.yaml"].detail["path"] == "deploy/rules.yaml"
    assert by["policy.repo_host"].detail == {"result": "allow", "rule": "change-window",
                                             "principal": "claude-worker-example-12",
                                             "scopes": ["catalogue_read", "deploy_write", "flags_read", "repo_write"],
                                             "policy_version": "policy-example-44"}
    assert by["decision.stop"].detail == {"decision": "stop", "value": "end_turn"}
    # the committed record is what extraction gives, and the forensic replay agrees digest for digest
    committed = load_run(demo / "runs" / "incident.json")
    forensic = load_run(demo / "runs" / "forensic.json")
    assert [c.digest for c in run.checkpoints] == [c.digest for c in committed.checkpoints] == \
        [c.digest for c in forensic.checkpoints]


def test_checkpoints_frame_has_the_canonical_columns_and_dtypes(demo):
    runs = [load_run(demo / "runs" / f"{n}.json") for n in ("incident", "forensic", "live")]
    df = checkpoints_frame(runs)
    CHECKPOINTS.validate(df)
    assert list(df.columns) == ["run", "mode", "order", "kind", "key", "label", "digest", "summary", "ts",
                                "status", "call_id", "detail", "context"]
    assert df.groupby("run", sort=False).size().to_dict() == {"incident": 27, "forensic": 27, "live": 13}
    assert str(df["ts"].dtype) == "datetime64[ns, UTC]"
    row = df[(df.run == "live") & (df.label == "tool_response.service_catalogue")].iloc[0]
    assert (row["order"], row["kind"], row["key"], row["mode"]) == (12, "tool_response", "service_catalogue", "live")
    assert row["ts"] == pd.Timestamp("2026-09-14T09:18:30.300Z")
    assert checkpoints_frame([]).shape == (0, 13)


def test_builders_and_log():
    log = CheckpointLog()
    log.add(make_tests_checkpoint(["b", "a"], []))
    log.add(make_tests_checkpoint(["a", "b"], []))
    log.contaminate()
    cp = log.add(decision_checkpoint("stop", "end_turn"))
    assert [c.label for c in log.checkpoints] == ["tests.selection", "tests.selection#2", "decision.stop"]
    assert log.checkpoints[0].digest == log.checkpoints[1].digest
    assert cp.status == "contaminated" and cp.order == 3
    with pytest.raises(ValueError, match="decision kind"):
        decision_checkpoint("pause", "x")
    assert server_key("service-catalogue") == "service_catalogue" and server_key(None) == "unknown"
    assert target_scope({"repo": "a/b", "number": 3}) == "repo:a/b" and target_scope({"x": 1}) is None


@pytest.mark.parametrize("cmd,expected", [
    ("pytest -q tests/a.py --deselect tests/b.py", (["tests/a.py"], ["tests/b.py"])),
    ("python -m pytest tests -k 'not slow' --ignore=tests/c", (["tests", "-k not slow"], ["tests/c"])),
    ("cd x && .venv/bin/pytest --tb short t.py", (["t.py"], [])),
    ("ls -la", None),
])
def test_parse_pytest(cmd, expected):
    assert parse_pytest(cmd) == expected


def test_run_record_errors_name_the_file(tmp_path):
    p = tmp_path / "run.json"
    p.write_text('{"format": "replaybook-run/1", "run": "x", "mode": "replay", "status": "completed", '
                 '"checkpoints": []}')
    with pytest.raises(CapsuleFormatError, match="at mode: 'replay' is not one of"):
        load_run(p)
    p.write_text("{")
    with pytest.raises(CapsuleFormatError, match="run record is not JSON"):
        load_run(p)


def test_incident_with_missing_response_object_marks_it(capsule_dir, demo):
    cap = load_capsule(capsule_dir)
    ev = cap.tool_evidence[1]
    cap.store().path(ev.response_digest).unlink()
    run = incident_run(cap, demo / "incident.yaml")
    c = run.checkpoints[10]
    assert (c.label, c.status, c.digest) == ("response_schema.service_catalogue", "missing_evidence", None)


class _AskingWorld:
    """A minimal LiveTransport whose policy asks for approval on every write."""

    def __init__(self):
        from replaybook.capsule.scripted import T_INCIDENT
        self.t = T_INCIDENT

    def identity(self):
        from replaybook.capsule.scripted import IDENTITY
        return IDENTITY

    def now(self):
        return self.t

    def effect(self, server, method):
        return "read" if method.startswith("get") else "write"

    def authorize(self, server, method, arguments, identity, at):
        from replaybook.capsule import PolicyDecision
        return PolicyDecision("allow" if self.effect(server, method) == "read" else "ask", "needs-approval")

    def call(self, server, method, arguments):
        from replaybook.capsule.scripted import DemoWorld
        return DemoWorld(self.t).call(server, method, arguments)

    simulate = call


def test_an_ask_decision_is_an_approval_checkpoint_then_a_stop(workspace):
    from replaybook.capsule import LiveHarness
    from replaybook.capsule.scripted import deploy_rule_agent

    rec = LiveHarness(_AskingWorld(), workspace).run(deploy_rule_agent)
    assert rec.status == "completed"
    assert [(c.label, c.detail.get("result") or c.detail.get("value")) for c in rec.checkpoints[-3:]] == [
        ("policy.repo_host", "ask"), ("decision.approval", "requested"), ("decision.stop", "policy_denied")]


def test_work_a_sub_agent_did_is_the_runs_too(demo, tmp_path):
    """The demo's work (three door calls, the edit, the pytest run, the pull request) done by a
    Claude Code sub-agent (a flat ``agent-<id>.jsonl``, 2.0.x): the capsule still belongs to the
    parent's task and the incident run is the same, checkpoint for checkpoint — the sub-agent's
    file, holding most of the calls, is not taken for the run, and its edits are not dropped."""
    import json
    import shutil

    from replaybook import Incident
    from replaybook.capsule.build import conversation_steps, select_transcript

    inc_dir = tmp_path / "incident"
    for part in ("door", "capsule", "runs"):
        shutil.copytree(demo / part, inc_dir / part)
    shutil.copy(demo / "incident.yaml", inc_dir / "incident.yaml")
    (src,) = (demo / "transcripts").glob("*.jsonl")
    lines = src.read_text().splitlines()
    parent_id = src.stem
    sub = []
    for line in lines[2:12]:  # get_flag … create_pull_request, with their results
        o = json.loads(line)
        o.update(isSidechain=True, agentId="a1b2c3")
        sub.append(json.dumps(o))
    (inc_dir / "transcripts").mkdir()
    (inc_dir / "transcripts" / src.name).write_text("\n".join(lines[:2] + lines[12:]) + "\n")
    (inc_dir / "transcripts" / "agent-a1b2c3.jsonl").write_text("\n".join(sub) + "\n")

    inc = Incident.load(inc_dir / "incident.yaml")
    ids = set(inc.steps.loc[inc.steps["kind"] == "tool_call", "call_id"].dropna())
    assert select_transcript(inc.steps, ids) == parent_id
    conv = conversation_steps(inc.steps, parent_id)
    assert conv["transcript_id"].tolist()[:3] == [parent_id, parent_id, "agent-a1b2c3"]
    assert conv["ts"].is_monotonic_increasing and len(conv) == len(inc.steps)

    run = incident_run(inc_dir / "capsule", inc)
    assert [c.label for c in run.checkpoints] == DEMO_LABELS
    original = incident_run(demo / "capsule", demo / "incident.yaml")
    assert [c.digest for c in run.checkpoints] == [c.digest for c in original.checkpoints]
    assert run.checkpoints[-1].detail == {"decision": "stop", "value": "end_turn"}


def test_bytes_that_are_not_utf8_are_named_by_line_and_column(tmp_path):
    """A Latin-1 byte in a run record or capsule.yaml was named by its byte position in the file
    ("position 117"); a person opening the file needs its line."""
    from replaybook.capsule.model import load_capsule

    p = tmp_path / "run.json"
    p.write_bytes(b'{"format": "replaybook-run/1",\n "run": "caf\xe9"}')
    with pytest.raises(CapsuleFormatError) as e:
        load_run(p)
    assert str(e.value) == f"{p}:2: run record is not UTF-8 text: byte 0xe9 at column 13"
    d = tmp_path / "capsule"
    d.mkdir()
    (d / "capsule.yaml").write_bytes(b"format: replaybook-capsule/1\nid: op-1\nevidence_store: evid\xe4nce\n")
    with pytest.raises(CapsuleFormatError) as e:
        load_capsule(d)
    assert str(e.value) == f"{d / 'capsule.yaml'}:3: capsule is not UTF-8 text: byte 0xe4 at column 21"
