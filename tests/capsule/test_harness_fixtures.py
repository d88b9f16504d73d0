"""The seed's eight harness fixtures: each must fail the way the seed says, with the exact verdict."""

from __future__ import annotations

import functools
import shutil
import socket

import pytest
import yaml

from replaybook.capsule import (ForensicHarness, LiveHarness, MissingEvidencePolicy, Workspace, diff_runs,
                                load_capsule, load_run, verify_capsule)
from replaybook.capsule.digest import request_digest
from replaybook.capsule.errors import IntegrityError
from replaybook.capsule.scripted import (T_BOUNDARY_RUN, T_INCIDENT, T_LIVE, DemoWorld, deploy_rule_agent)

CATALOGUE_RD = request_digest("service-catalogue", "get_service", {"service": "ledger-api"})


def edit_capsule(capsule_dir, fn):
    p = capsule_dir / "capsule.yaml"
    data = yaml.safe_load(p.read_text())
    fn(data)
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_capsule(capsule_dir)


def catalogue_entry(cap):
    return next(e for e in cap.tool_evidence if e.server == "service-catalogue")


@pytest.fixture
def incident(demo):
    return load_run(demo / "runs" / "incident.json")


# 1. Remove one captured MCP response -> replay_incomplete ------------------------------------------

def test_1_removed_evidence_entry_stops_with_replay_incomplete(capsule_dir, workspace, incident):
    cap = edit_capsule(capsule_dir, lambda d: d.update(
        tool_evidence=[e for e in d["tool_evidence"] if e["server"] != "service-catalogue"]))
    rec = ForensicHarness(cap, workspace).run(deploy_rule_agent)
    assert rec.status == "replay_incomplete"
    assert rec.stop_reason == (f"missing_evidence: no captured evidence for service-catalogue get_service "
                               f"(request {CATALOGUE_RD})")
    assert rec.stop_detail == {"what": "response", "server": "service-catalogue", "method": "get_service",
                               "request_digest": CATALOGUE_RD, "call_id": None}
    assert [c.label for c in rec.checkpoints[-2:]] == ["tool_choice.service_catalogue",
                                                       "tool_request.service_catalogue"]
    assert rec.captured_responses_used == 1 and rec.substitutions == [] and rec.network_attempts == []
    d = diff_runs(incident, rec)
    assert (d.verdict, d.verdict_text, d.decision_reproduced) == ("not_re_derivable", "not re-derivable", None)
    assert d.reasons == ["replay run 'forensic' replay_incomplete: " + rec.stop_reason]


def test_1b_removed_evidence_object_stops_and_verify_says_unproven(capsule_dir, workspace, incident):
    cap = load_capsule(capsule_dir)
    ev = catalogue_entry(cap)
    cap.store().path(ev.response_digest).unlink()
    rep = verify_capsule(cap)
    assert (rep.completeness, rep.exit_code, len(rep.integrity_failures)) == ("unproven", 4, 0)
    row = rep.inventory.set_index("input_class").loc["MCP responses"]
    assert (row.pinned, row.captured, row.why) == ("yes", "partial", f"response not in the store: {ev.call_id}")
    rec = ForensicHarness(cap, workspace).run(deploy_rule_agent)
    assert rec.status == "replay_incomplete"
    assert rec.stop_detail == {"what": "object", "server": "service-catalogue", "method": "get_service",
                               "request_digest": CATALOGUE_RD, "call_id": ev.call_id}
    assert diff_runs(incident, rec).verdict == "not_re_derivable"


@pytest.mark.parametrize("how", ["open", "stat"])
def test_1c_an_evidence_object_that_cannot_be_read_stops_the_replay_saying_so(capsule_dir, workspace, incident,
                                                                                monkeypatch, how):
    """An object verify calls unreadable (the disk answers an I/O error) stops a forensic replay
    as replay_incomplete, saying it cannot be read — an I/O error on looking its file up had
    escaped the harness (an OSError out of serve-capsule's call: no log line, no run status)."""
    import builtins
    import errno
    import os
    from pathlib import Path

    cap = load_capsule(capsule_dir)
    ev = catalogue_entry(cap)
    bad = cap.store().path(ev.response_digest)
    real_open, real_stat = builtins.open, os.stat

    def fake_open(file, mode="r", *a, **kw):
        if "r" in mode and not isinstance(file, int) and Path(file) == bad:
            raise OSError(errno.EIO, "Input/output error")
        return real_open(file, mode, *a, **kw)

    def fake_stat(path, *a, **kw):
        if not isinstance(path, int) and Path(path) == bad:
            raise OSError(errno.EIO, "Input/output error", str(path))
        return real_stat(path, *a, **kw)

    monkeypatch.setattr(*((builtins, "open", fake_open) if how == "open" else (os, "stat", fake_stat)))
    assert verify_capsule(cap).unreadable_objects["what"].tolist() == [f"call {ev.call_id}"]
    rec = ForensicHarness(cap, workspace).run(deploy_rule_agent)
    monkeypatch.undo()
    assert rec.status == "replay_incomplete"
    assert rec.stop_reason == (f"missing_evidence: evidence object {ev.response_digest} (call {ev.call_id}) "
                               f"cannot be read from {cap.store().root}: Input/output error: service-catalogue "
                               f"get_service (request {CATALOGUE_RD})")
    assert rec.stop_detail == {"what": "object", "server": "service-catalogue", "method": "get_service",
                               "request_digest": CATALOGUE_RD, "call_id": ev.call_id}
    assert diff_runs(incident, rec).verdict == "not_re_derivable"


# 2. Change an evidence object without changing its digest -> integrity failure ----------------------

def test_2_changed_evidence_object_is_an_integrity_failure_naming_the_call(capsule_dir, workspace):
    cap = load_capsule(capsule_dir)
    ev = catalogue_entry(cap)
    path = cap.store().path(ev.response_digest)
    path.write_bytes(path.read_bytes().replace(b'"regulated_data":false', b'"regulated_data":true'))
    rep = verify_capsule(cap)
    assert rep.exit_code == 3 and rep.completeness == "unproven"
    bad = rep.integrity_failures
    assert bad[["what", "call_id", "digest"]].values.tolist() == [[f"call {ev.call_id}", ev.call_id,
                                                                   ev.response_digest]]
    assert bad.actual[0].startswith("sha256:") and bad.actual[0] != ev.response_digest
    with pytest.raises(IntegrityError, match=f"for call {ev.call_id} was changed") as e:
        cap.store().get(ev.response_digest, call_id=ev.call_id)
    assert e.value.call_id == ev.call_id
    rec = ForensicHarness(cap, workspace).run(deploy_rule_agent)
    assert rec.status == "failed"
    assert rec.stop_reason.startswith(f"integrity_failure: evidence object {ev.response_digest} for call "
                                      f"{ev.call_id} was changed")
    assert rec.stop_detail["call_id"] == ev.call_id


# 3. The server returns a new output schema -> reported, no silent coercion ---------------------------

def test_3_new_output_schema_is_reported_and_never_coerced(workspace, incident):
    live = LiveHarness(DemoWorld(T_LIVE, catalogue_schema=2), workspace).run(deploy_rule_agent)
    assert live.status == "completed"
    assert [c.label for c in live.checkpoints if c.kind in ("patch", "tests", "effect")] == []
    assert live.checkpoints[-1].detail == {"decision": "stop", "value": "unrecognised_response_schema"}
    d = diff_runs(incident, live)
    assert (d.verdict_text, d.classification) == ("diverged at checkpoint 11", "external_evidence_drift")
    dv = d.divergence
    assert dv["first_checkpoint"] == "response_schema.service_catalogue"
    assert dv["changed_input"]["name"] == "service_catalogue.response_schema"
    assert dv["changed_input"]["schema_change"] == {
        "added": ["labels[].key:string", "labels[].value:string"],
        "removed": ["tags.regulated_data:boolean", "tags.team:string"]}
    assert "decision.stop: changed (end_turn → unrecognised_response_schema)" in dv["downstream_changes"]


# 4. Omit the effective scope or policy version -> the authority checkpoint fails ---------------------

@pytest.mark.parametrize("field,row", [("scopes", "credential scope"), ("policy_version", "policy decisions")])
def test_4_missing_authority_field_fails_the_authority_checkpoint(capsule_dir, workspace, incident, field, row):
    cap = edit_capsule(capsule_dir, lambda d: d["authority"].update({field: None}))
    rec = ForensicHarness(cap, workspace).run(deploy_rule_agent)
    assert rec.status == "replay_incomplete"
    assert rec.stop_reason == f"authority_unproven: effective authority not captured: {field}"
    assert [(c.label, c.status, c.digest) for c in rec.checkpoints][1:] == [
        ("authority.effective", "failed", None)]
    assert rec.checkpoints[1].summary == f"not captured: {field}"
    rep = verify_capsule(cap)
    assert rep.exit_code == 4
    assert rep.inventory.set_index("input_class").loc[row, "pinned"] == "partial"
    assert diff_runs(incident, rec).verdict == "not_re_derivable"


# 5. A network call in forensic mode -> blocked, the replay fails --------------------------------------

def _calls_the_network(h, ws):
    h.call("feature-flags", "get_flag", {"flag": "deploy.fast_track"})
    socket.create_connection(("catalogue.example.invalid", 443), timeout=0.5)


def _swallows_the_block(h, ws):
    try:
        socket.getaddrinfo("catalogue.example.invalid", 443)
    except Exception:
        pass
    deploy_rule_agent(h, ws)


def test_5_network_access_in_forensic_mode_is_blocked_and_fails_the_replay(demo, workspace, incident):
    cap = load_capsule(demo / "capsule")
    originals = (socket.socket.connect, socket.create_connection, socket.getaddrinfo)
    rec = ForensicHarness(cap, workspace).run(_calls_the_network)
    assert rec.status == "failed"
    assert rec.stop_reason == "network_blocked: socket.create_connection(catalogue.example.invalid:443)"
    assert rec.network_attempts == [{"api": "socket.create_connection", "address": "catalogue.example.invalid:443",
                                     "after_checkpoint": 7, "at": "2026-09-13T16:42:07.150Z"}]
    assert (socket.socket.connect, socket.create_connection, socket.getaddrinfo) == originals
    # an agent that catches the refusal still fails the replay
    rec2 = ForensicHarness(cap, workspace).run(_swallows_the_block)
    assert rec2.status == "failed" and len(rec2.checkpoints) == 27
    assert rec2.stop_reason == "network_blocked: socket.getaddrinfo(catalogue.example.invalid:443)"
    assert diff_runs(incident, rec2).verdict == "not_re_derivable"


def test_5b_raw_socket_connect_never_reaches_the_listener(demo, workspace):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(0.2)
    addr = srv.getsockname()

    def agent(h, ws):
        with socket.socket() as s:
            s.connect(addr)

    try:
        rec = ForensicHarness(load_capsule(demo / "capsule"), workspace).run(agent)
        assert rec.status == "failed"
        assert rec.network_attempts[0]["api"] == "socket.connect"
        assert rec.network_attempts[0]["address"] == f"127.0.0.1:{addr[1]}"
        with pytest.raises(socket.timeout):
            srv.accept()
    finally:
        srv.close()


# 6. Same commit, different dirty tree -> state mismatch ------------------------------------------------

def test_6_same_commit_other_dirty_tree_is_a_state_mismatch(demo, checkout, tmp_path, incident):
    dirty = tmp_path / "dirty"
    shutil.copytree(checkout, dirty)
    (dirty / "README.md").write_text("# deploy-config\n\nlocal notes\n")
    ws = Workspace(dirty)
    rec = ForensicHarness(load_capsule(demo / "capsule"), ws).run(deploy_rule_agent)
    assert rec.status == "completed"
    assert rec.checkpoints[0].context == {"checked": True, "matches_capsule": False}
    d = diff_runs(incident, rec)
    assert (d.verdict_text, d.classification) == ("diverged at checkpoint 1", "state_mismatch")
    ci = d.divergence["changed_input"]
    assert ci["name"] == "repository.dirty_tree"
    assert ci["commit_a"] == ci["commit_b"] == ws.state.commit
    assert ci["dirty_tree_digest_b"] == ws.state.dirty_tree_digest != ci["dirty_tree_digest_a"]
    assert d.divergence["downstream_changes"] == []


# 7. Cross a time-dependent policy boundary -> the clock appears in the divergence --------------------

def test_7_crossing_the_change_window_puts_the_clock_in_the_divergence(workspace, incident):
    live = LiveHarness(DemoWorld(T_BOUNDARY_RUN), workspace).run(deploy_rule_agent)
    d = diff_runs(incident, live)
    assert (d.verdict_text, d.classification) == ("diverged at checkpoint 17", "clock_boundary")
    dv = d.divergence
    assert dv["first_checkpoint"] == "policy.repo_host"
    ci = dv["changed_input"]
    assert ci["name"] == "clock"
    assert (ci["clock_a"], ci["clock_b"]) == ("2026-09-13T16:42:15.300Z", "2026-09-13T17:00:07.300Z")
    assert ci["conditions_b"] == {"clock": "2026-09-13T17:00:07.300Z", "change_window": "closed",
                                  "window": "08:00-17:00Z daily"}
    assert (ci["a"], ci["b"]) == ({"result": "allow", "rule": "change-window"},
                                  {"result": "deny", "rule": "change-window"})
    assert dv["downstream_changes"] == ["effect.repo_host: not_committed", "tool_choice.repo_host#2: not_called",
                                        "effect.repo_host#2: not_committed",
                                        "decision.stop: changed (end_turn → policy_denied)"]


# 8. The same patch through a different tool path -> the effect comparison detects it -----------------

def test_8_same_patch_other_tool_path_is_an_effect_divergence(demo, workspace, incident):
    agent = functools.partial(deploy_rule_agent, apply_via="deploy-api")
    live = LiveHarness(DemoWorld(T_INCIDENT), workspace).run(agent)
    d = diff_runs(incident, live)
    assert (d.verdict_text, d.classification) == ("diverged at checkpoint 15", "effect_divergence")
    assert d.divergence["changed_input"] == {
        "name": "tool_path", "a": "tool_choice.repo_host", "b": "tool_choice.deploy_api",
        "a_summary": "repo-host create_pull_request (write)", "b_summary": "deploy-api set_rule (write)"}
    assert d.effects["patch_digests_equal"] is True and d.effects["effects_equal"] is False
    assert d.effects["reference_effects"] == ["repo-host create_pull_request on repo:platform/deploy-config",
                                              "repo-host merge_pull_request on repo:platform/deploy-config"]
    assert d.effects["replay_effects"] == ["deploy-api set_rule on service:ledger-api"]
    assert d.decision_reproduced is False
    # forensically the path the incident never took has no evidence: the replay stops
    rec = ForensicHarness(load_capsule(demo / "capsule"), workspace).run(agent)
    assert rec.status == "replay_incomplete" and rec.stop_detail["server"] == "deploy-api"


# The permitted fallback: explicit, recorded, contaminating ---------------------------------------------

def test_permitted_live_fallback_is_recorded_and_contaminates_every_later_checkpoint(capsule_dir, workspace,
                                                                                    incident):
    cap = edit_capsule(capsule_dir, lambda d: d.update(
        tool_evidence=[e for e in d["tool_evidence"] if e["server"] != "service-catalogue"]))
    world = DemoWorld(T_LIVE)
    # without permission a fallback transport is not used
    assert ForensicHarness(cap, workspace, fallback=world).run(deploy_rule_agent).status == "replay_incomplete"
    allow = MissingEvidencePolicy(permitted_fallbacks=(("service-catalogue", "get_service"),))
    rec = ForensicHarness(cap, workspace, fallback=world, missing_evidence_policy=allow).run(deploy_rule_agent)
    assert rec.status == "completed" and rec.contaminated
    assert [(s["server"], s["reason"]) for s in rec.substitutions] == [
        ("service-catalogue", "no captured evidence for this request")]
    assert [(c.label, c.status) for c in rec.checkpoints[9:]] == [
        ("policy.service_catalogue", "ok"), ("response_schema.service_catalogue", "substituted"),
        ("tool_response.service_catalogue", "substituted"), ("decision.stop", "contaminated")]
    d = diff_runs(incident, rec)
    assert d.verdict == "not_re_derivable"
    assert d.reasons == ["checkpoint 11 response_schema.service_catalogue in run 'forensic' is substituted: "
                         "get_service: {owner, service, tags, tier, updated_at}"]
