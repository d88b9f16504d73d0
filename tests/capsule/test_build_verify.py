"""Building a capsule from an incident, and verifying it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from replaybook.capsule import build_capsule, load_capsule, load_capture, verify_capsule
from replaybook.capsule.digest import sha256_digest
from replaybook.capsule.errors import CapsuleFormatError, IntegrityError

SECRETS = ("fft-demo-not-a-real-secret-3f9a", "tok-demo-not-a-real-secret-81c2",
           "ledger-api deploys are slow", "deployment assistant", '"regulated_data"')


def test_demo_capsule_is_complete_and_holds_no_secret_inline(demo):
    text = (demo / "capsule" / "capsule.yaml").read_text()
    for s in SECRETS:
        assert s not in text
    cap = load_capsule(demo / "capsule")
    assert cap.operation_id == "op-example-913" and cap.completeness == "complete"
    assert [(e.server, e.method, e.effect, e.policy["rule"]) for e in cap.tool_evidence] == [
        ("feature-flags", "get_flag", "read", "allow-read"),
        ("service-catalogue", "get_service", "read", "allow-read"),
        ("repo-host", "create_pull_request", "write", "change-window"),
        ("repo-host", "merge_pull_request", "write", "change-window")]
    ev = cap.tool_evidence[1]
    assert ev.observed_at == "2026-09-13T16:42:11.300Z"
    assert ev.captured_response_ref == f"evidence://op-example-913/{ev.call_id}"
    assert ev.response_digest == "sha256:0482a3c6491f9d14b6c7cd72e873ca6dcfc853f40c2a04d65eb40b2d1e5e60f0"
    assert cap.store().get(ev.response_digest) == (
        b'{"owner":"payments-platform","service":"ledger-api","tags":{"regulated_data":false,"team":"payments"},'
        b'"tier":1,"updated_at":"2026-09-13T09:00:00.000Z"}')
    assert cap.repository["workdir"] == "/home/deployer/deploy-config"
    assert cap.model == {"provider": "anthropic", "model": "claude-sonnet-4-5",
                         "parameters_digest": cap.model["parameters_digest"],
                         "parameters_ref": "evidence://op-example-913/model.parameters"}
    task = cap.store().get(cap.prompts["task_digest"]).decode()
    assert task.startswith("ledger-api deploys are slow.")
    rep = verify_capsule(cap)
    assert rep.exit_code == 0 and rep.reasons == [] and len(rep.objects) == 12
    assert (rep.inventory.pinned == "yes").all() and (rep.inventory.captured == "yes").all()
    assert rep.inventory.why.tolist()[3:5] == ["4 of 4 responses stored",
                                               "policy-example-44; 4 decisions; 1 door logs"]


def test_build_from_a_checkout_equals_build_from_the_captured_state(demo, checkout, tmp_path):
    cap = load_capture(demo / "capture.yaml")
    a = build_capsule(demo / "incident.yaml", demo / "door-evidence", tmp_path / "a", capture=cap)
    b = build_capsule(demo, demo / "door-evidence", tmp_path / "b", repo=checkout, capture=cap)
    assert a.data == b.data == load_capsule(demo / "capsule").data
    assert (tmp_path / "a" / "capsule.yaml").read_bytes() == (demo / "capsule" / "capsule.yaml").read_bytes()


def test_build_without_capture_is_unproven_and_says_why(demo, tmp_path):
    cap = build_capsule(demo, demo / "door-evidence", tmp_path / "c")
    assert cap.operation_id == "op-door-20260913T164203-d1"
    assert cap.authority.principal == "deployer" and cap.authority.scopes is None
    assert cap.repository["commit"] is None
    assert cap.completeness == "unproven"
    assert cap.data["completeness_reasons"] == [
        "repository tree: no commit; no dirty-tree digest; dirty-tree object not in the store",
        "system and task prompts: system prompt not pinned",
        "model and parameters: parameters not pinned",
        "policy decisions: policy version not recorded",
        "credential scope: scopes not recorded; token introspection record not in the store",
        "runtime image: image not pinned",
        "clock and feature flags: feature flags not pinned",
    ]
    inv = verify_capsule(cap).inventory
    assert inv[["pinned", "captured"]].values.tolist() == [
        ["no", "no"], ["partial", "partial"], ["partial", "no"], ["yes", "yes"], ["partial", "yes"],
        ["partial", "no"], ["partial", "no"], ["partial", "partial"]]


def test_build_without_door_evidence_leaves_responses_uncaptured(demo, tmp_path):
    cap = build_capsule(demo, None, tmp_path / "c", capture=load_capture(demo / "capture.yaml"))
    assert [e.captured_response_ref for e in cap.tool_evidence] == [None] * 4
    row = verify_capsule(cap).inventory.set_index("input_class").loc["MCP responses"]
    assert (row.pinned, row.captured) == ("yes", "no")


def test_damaged_door_evidence_fails_the_build_naming_the_call(demo, tmp_path):
    door = tmp_path / "door-evidence"
    shutil.copytree(demo / "door-evidence", door)
    cap = load_capsule(demo / "capsule")
    ev = cap.tool_evidence[1]
    obj = door / "sha256" / ev.response_digest[7:]
    obj.chmod(0o644)
    obj.write_bytes(b'{"regulated_data":true}')
    with pytest.raises(IntegrityError, match=f"for call {ev.call_id} was changed") as e:
        build_capsule(demo, door, tmp_path / "c", capture=load_capture(demo / "capture.yaml"))
    assert e.value.call_id == ev.call_id


def test_declared_complete_but_damaged_is_reported(capsule_dir):
    cap = load_capsule(capsule_dir)
    ev = cap.tool_evidence[0]
    cap.store().path(ev.response_digest).write_bytes(b"{}")
    rep = verify_capsule(capsule_dir)
    assert (rep.exit_code, rep.completeness, rep.declared) == (3, "unproven", "complete")
    assert rep.reasons == [
        f"MCP responses: response not in the store: {ev.call_id}",
        f"integrity: call {ev.call_id}: object {ev.response_digest} hashes to {sha256_digest(b'{}')}",
        "the capsule declares itself complete, but the evidence does not show it"]


def test_bad_capture_file_is_an_input_error(tmp_path):
    p = tmp_path / "capture.yaml"
    p.write_text("scopes: read\n")
    with pytest.raises(CapsuleFormatError, match="invalid capture file at scopes"):
        load_capture(p)
    p.write_text("system_prompt: missing.txt\n")
    with pytest.raises(CapsuleFormatError, match="cannot read 'missing.txt'"):
        load_capture(p)


@pytest.mark.parametrize("text,content,message", [
    ("scopes: read\n", None, "1: invalid capture file at scopes: 'read' is not of type 'array'"),
    ("provider: x\nfeature_flags: flags.json\n", None,
     "2: feature_flags: cannot read 'flags.json': No such file or directory"),
    # an empty or broken capture had been stored, and the capsule had called itself complete
    ("model_parameters: params.json\n", b"", "1: model_parameters: 'params.json' is empty: it captures nothing"),
    ("provider: x\n\nmodel_parameters: params.json\n", b'{"temperature": 0,',
     "3: model_parameters: 'params.json' is not JSON: unexpected end of data"),
    ("repository:\n  commit: abc\n  dirty_tree: gone.bin\n", None,
     "3: repository.dirty_tree: cannot read 'gone.bin': No such file or directory"),
])
def test_a_capture_files_problem_names_the_line_of_its_key(tmp_path, text, content, message):
    p = tmp_path / "capture.yaml"
    p.write_text(text)
    if content is not None:
        (tmp_path / "params.json").write_bytes(content)
    with pytest.raises(CapsuleFormatError) as e:
        load_capture(p)
    assert str(e.value).startswith(f"{p}:{message}")


def test_a_transcript_the_join_rejects_is_not_the_capsules(demo, tmp_path):
    """A fresh user's incident: the door log of one run beside an unrelated transcript the join
    leaves unmatched.  The capsule had taken that transcript's prompt, model and start time
    ("the one transcript there is"); it now pins none of them."""
    import shutil

    from replaybook import Incident

    inc_dir = tmp_path / "incident"
    shutil.copytree(demo / "door", inc_dir / "door")
    (inc_dir / "transcripts").mkdir()
    other = next((Path(__file__).resolve().parents[2] / "data" / "demo" / "transcripts").glob("*.jsonl"))
    shutil.copy(other, inc_dir / "transcripts" / other.name)
    (inc_dir / "incident.yaml").write_text("title: t\ntranscripts: [transcripts/*.jsonl]\ndoor: [door/]\n")
    assert set(Incident.load(inc_dir).join.sessions["status"]) == {"unmatched"}
    cap = build_capsule(inc_dir, demo / "door-evidence", tmp_path / "c")  # (no capture: its start time is the door's)
    assert cap.data["prompts"]["task_digest"] is None and cap.data["model"]["model"] is None
    first_call = Incident.load(inc_dir).calls["ts"].min()
    assert cap.data["runtime"]["started_at"] == first_call.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    # with the run's own transcript beside it, that one is taken (by its tool-use ids)
    (src,) = (demo / "transcripts").glob("*.jsonl")
    shutil.copy(src, inc_dir / "transcripts" / src.name)
    cap = build_capsule(inc_dir, demo / "door-evidence", tmp_path / "d", capture=load_capture(demo / "capture.yaml"))
    assert cap.data["prompts"]["task_digest"] is not None and cap.data["model"]["model"] is not None


def test_an_agent_on_no_repository_can_still_reproduce(demo, tmp_path):
    """`repository: none` in capture.yaml: state.repository is pinned as 'no repository' in
    the capsule, the incident run and a forensic replay, so they compare equal (it had been
    'commit ?', failed, and a verdict could never be re-derived)."""
    import yaml

    from replaybook.capsule import ForensicHarness, diff_runs, incident_run
    from replaybook.capsule.scripted import deploy_rule_agent

    cap_yaml = yaml.safe_load((demo / "capture.yaml").read_text())
    cap_yaml["repository"] = "none"
    shutil.copytree(demo / "capture", tmp_path / "capture")
    (tmp_path / "capture.yaml").write_text(yaml.safe_dump(cap_yaml))
    cap = build_capsule(demo, demo / "door-evidence", tmp_path / "c", capture=load_capture(tmp_path / "capture.yaml"))
    assert cap.repository["none"] is True and cap.repository["commit"] is None
    rep = verify_capsule(cap)
    row = rep.inventory[rep.inventory["input_class"] == "repository tree"].iloc[0]
    assert (row["pinned"], row["captured"], row["why"]) == ("yes", "yes", "no repository (declared in capture.yaml)")
    assert not any(r.startswith("repository tree") for r in rep.reasons)
    inc = incident_run(cap, demo / "incident.yaml")
    state = inc.checkpoints[0]
    assert (state.label, state.status, state.summary) == ("state.repository", "ok", "no repository (declared)")
    forensic = ForensicHarness(cap, None).run(deploy_rule_agent)
    assert forensic.checkpoints[0].digest == state.digest
    d = diff_runs(inc, forensic)
    assert d.first_divergence != "state.repository" and d.verdict != "not_re_derivable", d.verdict_text
    # a live verification of such an agent pins the same state
    from replaybook.capsule import LiveHarness
    from replaybook.capsule.scripted import T_LIVE, DemoWorld

    live = LiveHarness(DemoWorld(T_LIVE), None, no_repository=True).run(deploy_rule_agent)
    assert (live.checkpoints[0].label, live.checkpoints[0].digest) == ("state.repository", state.digest)
