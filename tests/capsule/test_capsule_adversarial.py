"""Adversarial scenarios: inputs built to make verify, the harnesses or the diff give a wrong or
misleading answer.  Each test states the answer a reviewer must get."""

from __future__ import annotations

import copy
import json
import re
import unicodedata

import pytest
import yaml

from replaybook.capsule import (ForensicHarness, LiveHarness, align, build_capsule, diff_runs, incident_run,
                                load_capsule, load_capture, load_run, verify_capsule)
from replaybook.capsule.diff import json_changes
from replaybook.capsule.digest import sha256_digest
from replaybook.capsule.errors import CapsuleFormatError
from replaybook.capsule.report import replay_results
from replaybook.capsule.scripted import T_INCIDENT, DemoWorld, PolicyDecision, deploy_rule_agent
from replaybook.capsule.store import EvidenceStore, ObjectCheck
from replaybook.canonical import canonical_args


@pytest.fixture
def incident(demo):
    return load_run(demo / "runs" / "incident.json")


class Respelling(DemoWorld):
    """The demo world at the incident's time, each response rewritten by ``spell(server, value)``
    (a parsed response in, bytes out): the same answers, spelled another way."""

    def __init__(self, spell, at=T_INCIDENT, **kw):
        super().__init__(at, **kw)
        self.spell = spell

    def call(self, server, method, arguments):
        return self.spell(server, json.loads(super().call(server, method, arguments)))


def live(spell, workspace, store, **kw):
    """A live verification against :class:`Respelling`, keeping what it read in ``store``."""
    return LiveHarness(Respelling(spell, **kw), workspace, capture_store=store).run(deploy_rule_agent)


def canonical(value) -> bytes:
    return canonical_args(value).encode()


def catalogue(change, write=canonical):
    """A spelling that applies ``change`` to the catalogue's answer only (``write``: to bytes)."""
    def spell(server, value):
        if server == "service-catalogue":
            value = copy.deepcopy(value)
            change(value)
        return write(value)
    return spell


# -- the diff: spellings that are not divergences ----------------------------------------------

SPELLINGS = {
    "indented": lambda server, v: json.dumps(v, indent=2).encode(),
    "keys reversed": lambda server, v: json.dumps(dict(reversed(list(v.items())))).encode(),
    "1 as 1.0": lambda server, v: canonical(v).replace(b'"tier":1', b'"tier":1.0'),
    "1 as 1e0": lambda server, v: canonical(v).replace(b'"tier":1', b'"tier":1e0'),
}


@pytest.mark.parametrize("name", list(SPELLINGS))
def test_a_response_spelled_another_way_is_not_a_divergence(name, incident, workspace, tmp_path):
    """The project compares JSON canonically (key order, whitespace, 1 vs 1.0): a live server
    that writes the same answer with other bytes had made the live run 'diverge at checkpoint 7'
    on external evidence with no field changed."""
    run = live(SPELLINGS[name], workspace, EvidenceStore(tmp_path / "live"))
    resp = run.checkpoints[11]
    assert resp.label == "tool_response.service_catalogue" and resp.digest != incident.checkpoints[11].digest
    d = diff_runs(incident, run)
    assert (d.verdict, d.checkpoint, d.divergence) == ("reproduced", None, None)
    respelled = {"indented": "tool_response.feature_flags, tool_response.service_catalogue",
                 "keys reversed": "tool_response.feature_flags, tool_response.service_catalogue",
                 "1 as 1.0": "response_schema.service_catalogue, tool_response.service_catalogue",
                 "1 as 1e0": "response_schema.service_catalogue, tool_response.service_catalogue"}[name]
    n = respelled.count(",") + 1
    assert d.notes[0] == (f"{n} checkpoints differ in spelling only (key order, whitespace, 1 vs 1.0, Unicode "
                          f"normal form; integer vs number) and agree as canonical JSON: {respelled}")
    al = align({"incident": incident, "live": run}, "incident")
    row = al[al["label"] == "tool_response.service_catalogue"].iloc[0]
    assert bool(row["live_match"]) is True  # the side-by-side table agrees with the verdict


def test_unicode_normal_forms_of_one_text_are_not_a_divergence(workspace, tmp_path):
    store = EvidenceStore(tmp_path / "live")
    def as_sent(v):
        return json.dumps(v, ensure_ascii=False, separators=(",", ":")).encode()
    nfc = live(catalogue(lambda v: v.update(owner=unicodedata.normalize("NFC", "équipe-paiements")), as_sent),
               workspace, store)
    nfd = live(catalogue(lambda v: v.update(owner=unicodedata.normalize("NFD", "équipe-paiements")), as_sent),
               workspace, store)
    assert nfc.checkpoints[11].digest != nfd.checkpoints[11].digest
    assert diff_runs(nfc, nfd).verdict == "reproduced"


def test_a_real_change_beside_a_respelling_names_only_the_real_change(incident, workspace, tmp_path):
    def spell(server, v):
        if server == "service-catalogue":
            v = dict(reversed(list({**v, "tier": 2}.items())))
        return json.dumps(v, indent=1).encode().replace(b'"regulated_data": false', b'"regulated_data": false ')
    d = diff_runs(incident, live(spell, workspace, EvidenceStore(tmp_path / "live")))
    assert (d.verdict_text, d.classification, d.first_divergence) == (
        "diverged at checkpoint 12", "external_evidence_drift", "service_catalogue.response")
    assert d.divergence["changed_input"]["fields"] == [{"path": "tier", "a": 1, "b": 2}]
    assert replay_results(d, d)["replay_results"]["live_verification"]["changed_inputs"] == ["service_catalogue.tier"]


# -- the diff: values a parser can read wrongly ------------------------------------------------

def _owner_written(raw: bytes):
    """A catalogue answer whose ``owner`` value is written as the JSON text ``raw``."""
    return catalogue(lambda v: v.update(owner="@@OWNER@@"),
                     lambda v: canonical(v).replace(b'"@@OWNER@@"', raw))


@pytest.mark.parametrize("a, b", [
    (rb'"\ud83d"', rb'"\ud83e"'),             # two lone surrogates: both U+FFFD in canonical JSON
    (rb'"\ud83d"', '"\ufffd"'.encode()),      # a lone surrogate and U+FFFD itself
    (rb'{"approved":false,"approved":true}', rb'{"approved":true}'),   # a key written twice: last wins
    (rb'{"approved":true,"approved":true}', rb'{"approved":true}'),
])
def test_responses_readers_read_differently_are_never_respellings(a, b, workspace, tmp_path):
    """Two lone surrogates (``"\\ud83d"`` vs ``"\\ud83e"``) both become U+FFFD in canonical JSON,
    and ``{"approved":false,"approved":true}`` is ``{"approved":true}`` to a last-wins reader: the
    diff said "reproduced", calling responses with other values respellings.  A response that
    another reader may read otherwise is compared by its bytes: an external evidence drift."""
    store = EvidenceStore(tmp_path / "live")
    x = live(_owner_written(a), workspace, store)
    y = live(_owner_written(b), workspace, store)
    assert x.checkpoints[11].digest != y.checkpoints[11].digest
    d = diff_runs(x, y)
    assert (d.verdict, d.checkpoint, d.classification) == ("diverged", 12, "external_evidence_drift")
    assert d.divergence["first_checkpoint"] == "tool_response.service_catalogue"
    assert not any("spelling only" in n for n in d.notes)
    al = align({"x": x, "y": y}, "x")
    assert bool(al[al["label"] == "tool_response.service_catalogue"].iloc[0]["y_match"]) is False


def test_a_valid_surrogate_pair_is_still_a_respelling_of_its_character(workspace, tmp_path):
    """The check above is on lone surrogates only: ``"\\ud83d\\ude00"`` is 😀, however written."""
    store = EvidenceStore(tmp_path / "live")
    x = live(_owner_written(rb'"\ud83d\ude00"'), workspace, store)
    y = live(_owner_written('"\U0001f600"'.encode()), workspace, store)
    assert x.checkpoints[11].digest != y.checkpoints[11].digest
    assert diff_runs(x, y).verdict == "reproduced"


def test_integers_beyond_64_bits_are_compared_exactly(workspace, tmp_path):
    """orjson reads 2**70 and 2**70 + 1 as one double: the diff said the responses differed
    but listed no field, and the response's shape called an integer a number."""
    store = EvidenceStore(tmp_path / "live")
    a = live(catalogue(lambda v: v.update(tier=2**70)), workspace, store)
    b = live(catalogue(lambda v: v.update(tier=2**70 + 1)), workspace, store)
    assert a.checkpoints[10].detail["shape"]["object"]["tier"] == "integer"
    d = diff_runs(a, b)
    assert (d.checkpoint, d.first_divergence) == (12, "service_catalogue.response")
    assert d.divergence["changed_input"]["fields"] == [{"path": "tier", "a": 2**70, "b": 2**70 + 1}]


def test_nan_and_infinity_are_located_and_the_json_output_stays_json(workspace, tmp_path):
    """A server writing Python's NaN/Infinity literals: the response had been read as text, so
    the agent saw a string, and the change was the whole body at (root)."""
    store = EvidenceStore(tmp_path / "live")
    nan = live(catalogue(lambda v: v.update(tier=float("nan"))), workspace, store)
    inf = live(catalogue(lambda v: v.update(tier=float("inf"))), workspace, store)
    assert nan.checkpoints[10].summary == "get_service: {owner, service, tags, tier, updated_at}"
    assert nan.checkpoints[-1].summary == "stop: end_turn"  # the agent read an object, not text
    d = diff_runs(nan, inf)
    assert d.divergence["changed_input"]["fields"] == [{"path": "tier", "a": "NaN", "b": "Infinity"}]
    json.dumps(d.to_dict(), allow_nan=False)  # strict JSON: no bare NaN token for a script to choke on
    again = live(catalogue(lambda v: v.update(tier=float("nan"))), workspace, store)
    assert diff_runs(nan, again).verdict == "reproduced"  # NaN is the same NaN


def test_a_change_in_a_nested_list_item_is_located(workspace, tmp_path):
    store = EvidenceStore(tmp_path / "live")
    a = live(catalogue(lambda v: v["tags"].update(envs=[{"n": "prod"}, {"n": "stage"}])), workspace, store)
    b = live(catalogue(lambda v: v["tags"].update(envs=[{"n": "prod"}, {"n": "dev"}, {"n": "qa"}])),
             workspace, store)
    assert diff_runs(a, b).divergence["changed_input"]["fields"] == [
        {"path": "tags.envs[1].n", "a": "stage", "b": "dev"},
        {"path": "tags.envs[2]", "a": "<absent>", "b": {"n": "qa"}}]


def test_field_paths_name_one_place_only():
    """``{"a.b": 1}`` and ``{"a": {"b": 1}}`` had both been reported at path ``a.b``."""
    assert json_changes({"a.b": 1}, {"a.b": 2}) == [{"path": '["a.b"]', "a": 1, "b": 2}]
    assert json_changes({"a": {"b": 1}}, {"a": {"b": 2}}) == [{"path": "a.b", "a": 1, "b": 2}]
    assert json_changes({"t": {"x y": 1, "": 2, 'q"': 3}}, {"t": {}}) == [
        {"path": 't[""]', "a": 2, "b": "<absent>"},
        {"path": 't["q\\""]', "a": 3, "b": "<absent>"},
        {"path": 't["x y"]', "a": 1, "b": "<absent>"}]
    assert json_changes({"n": 1, "s": "é"}, {"n": 1.0, "s": "e\u0301"}) == []  # canonical, as the digests
    assert json_changes({"n": 1}, {"n": True}) == [{"path": "n", "a": 1, "b": True}]  # true is not 1


# -- the diff: which call, and whether it was made ---------------------------------------------

class Sequence(DemoWorld):
    """The catalogue answers each call with the next of ``answers``."""

    def __init__(self, answers, **kw):
        super().__init__(T_INCIDENT, **kw)
        self.answers = list(answers)

    def call(self, server, method, arguments):
        if method == "get_service":
            self.t += self.latency
            return self.answers.pop(0)
        return super().call(server, method, arguments)


def read_twice(h, workspace):
    h.call("feature-flags", "get_flag", {"flag": "deploy.fast_track"})
    first = h.call("service-catalogue", "get_service", {"service": "ledger-api"})
    second = h.call("service-catalogue", "get_service", {"service": "ledger-api"})
    h.record_decision("stop", "end_turn" if first == second else "rollback_needed")


def test_a_change_in_the_second_of_two_identical_calls_names_the_second(tmp_path):
    store = EvidenceStore(tmp_path / "runs")
    r1, r2 = b'{"service":"ledger-api","v":1}', b'{"service":"ledger-api","v":2}'
    a = LiveHarness(Sequence([r1, r1]), capture_store=store, no_repository=True).run(read_twice)
    b = LiveHarness(Sequence([r1, r2]), capture_store=store, no_repository=True).run(read_twice)
    d = diff_runs(a, b)
    assert (d.checkpoint, d.first_divergence) == (17, "service_catalogue#2.response")
    dv = d.divergence
    assert dv["first_checkpoint"] == "tool_response.service_catalogue#2"
    assert (dv["changed_input"]["call_id_a"], dv["changed_input"]["call_id_b"]) == ("live-call-03", "live-call-03")
    assert dv["changed_input"]["fields"] == [{"path": "v", "a": 1, "b": 2}]
    assert replay_results(d, d)["replay_results"]["live_verification"]["changed_inputs"] == [
        "service_catalogue#2.v"]
    # the first call, the same on both sides, is not the one blamed
    assert a.checkpoints[11].digest == b.checkpoints[11].digest


def test_an_extra_or_a_missing_call_on_the_live_side(tmp_path):
    store = EvidenceStore(tmp_path / "runs")
    r1 = b'{"service":"ledger-api","v":1}'

    def and_again(h, workspace):
        read_twice(h, workspace)
        h.call("feature-flags", "get_flag", {"flag": "deploy.canary"})

    a = LiveHarness(Sequence([r1, r1]), capture_store=store, no_repository=True).run(read_twice)
    b = LiveHarness(Sequence([r1, r1]), capture_store=store, no_repository=True).run(and_again)
    extra, missing = diff_runs(a, b), diff_runs(b, a)
    assert (extra.checkpoint, extra.classification, extra.divergence["changed_input"]) == (
        19, "path_divergence", {"name": "path", "checkpoint": "tool_choice.feature_flags#2", "only_in": "replay",
                                "summary": "feature-flags get_flag (read)"})
    assert (missing.checkpoint, missing.divergence["changed_input"]["only_in"]) == (19, "reference")
    assert extra.divergence["downstream_changes"] == ["tool_choice.feature_flags#2: called_only_in_replay"]


class Frozen(DemoWorld):
    """The catalogue refuses reads (a freeze rule); everything else as the demo world."""

    def authorize(self, server, method, arguments, identity, at):
        if server == "service-catalogue":
            return PolicyDecision("deny", "catalogue-frozen", {})
        return super().authorize(server, method, arguments, identity, at)


def test_a_call_refused_on_one_side_only(incident, workspace):
    run = LiveHarness(Frozen(T_INCIDENT), workspace).run(deploy_rule_agent)
    d = diff_runs(incident, run)
    assert (d.verdict_text, d.classification, d.first_divergence) == (
        "diverged at checkpoint 10", "policy_drift", "service_catalogue.policy")
    ci = d.divergence["changed_input"]
    assert (ci["a"], ci["b"]) == ({"result": "allow", "rule": "allow-read"},
                                  {"result": "deny", "rule": "catalogue-frozen"})
    assert run.checkpoints[-1].summary == "stop: policy_denied" and d.decision_reproduced is False


def test_times_that_legitimately_differ_are_not_a_divergence(incident, workspace):
    """A live run on its own clock (slower thinking, so every time differs) reads the same."""
    run = LiveHarness(DemoWorld(T_INCIDENT, think=9.0, latency=0.4), workspace).run(deploy_rule_agent)
    assert run.checkpoints[11].ts != incident.checkpoints[11].ts
    d = diff_runs(incident, run)
    assert (d.verdict, d.cosmetic) == ("reproduced", [])


# -- the evidence store --------------------------------------------------------------------------

def response_object(capsule_dir):
    cap = load_capsule(capsule_dir)
    ev = next(e for e in cap.tool_evidence if e.server == "service-catalogue")
    return cap, ev, cap.store().path(ev.response_digest)


def test_a_blob_changed_under_its_name_is_an_integrity_failure_naming_the_call(capsule_dir):
    cap, ev, obj = response_object(capsule_dir)
    obj.write_bytes(obj.read_bytes().replace(b"false", b"true "))
    rep = verify_capsule(capsule_dir)
    assert (rep.exit_code, rep.completeness) == (3, "unproven")
    assert rep.integrity_failures[["what", "digest"]].values.tolist() == [[f"call {ev.call_id}", ev.response_digest]]


def test_a_missing_blob_is_unproven_not_a_pass(capsule_dir):
    cap, ev, obj = response_object(capsule_dir)
    obj.unlink()
    rep = verify_capsule(capsule_dir)
    assert (rep.exit_code, rep.completeness) == (4, "unproven")
    assert rep.reasons[0] == f"MCP responses: response not in the store: {ev.call_id}"
    assert rep.missing_objects["what"].tolist() == [f"call {ev.call_id}"]


def test_a_link_out_of_the_store_is_not_evidence_the_capsule_holds(capsule_dir, tmp_path, workspace, incident):
    """The right bytes in a file elsewhere, linked into the store: verify said 'complete', but
    the capsule does not hold that object (copy the folder and it is gone; the file can change)."""
    cap, ev, obj = response_object(capsule_dir)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(obj.read_bytes())
    obj.unlink()
    obj.symlink_to(elsewhere)
    rep = verify_capsule(capsule_dir)
    assert (rep.exit_code, rep.completeness) == (4, "unproven")
    assert (f"outside the store: call {ev.call_id}: object {ev.response_digest} is a link to {elsewhere}, "
            "which the capsule does not hold") in rep.reasons
    assert rep.objects.set_index("what").loc[f"call {ev.call_id}", "status"] == "outside"
    # the replay does not follow it either: the evidence is missing, the replay stops
    run = ForensicHarness(load_capsule(capsule_dir), workspace).run(deploy_rule_agent)
    assert run.status == "replay_incomplete" and "is not in the store" in run.stop_reason
    # an unreferenced link out (say, to a file of the reviewer's) is a note, never read
    (obj.parent / ("e" * 64)).symlink_to("/etc/hostname")
    assert any(n.endswith("(to /etc/hostname)") for n in verify_capsule(capsule_dir).notes)


def test_a_link_inside_the_store_is_fine(capsule_dir):
    cap, ev, obj = response_object(capsule_dir)
    moved = obj.parent.parent / "kept.json"
    obj.rename(moved)
    obj.symlink_to(moved)
    assert verify_capsule(capsule_dir).exit_code == 0


def test_a_huge_blob_is_hashed_in_chunks(tmp_path):
    store = EvidenceStore(tmp_path / "store")
    data = bytes(range(256)) * (3 * 4096 + 1)  # 3 MiB + 256 bytes: past the 1 MiB read size
    digest = store.put(data)
    assert store.check(digest) == ObjectCheck(digest, "ok", digest, len(data))
    p = store.path(digest)
    p.chmod(0o644)
    with open(p, "r+b") as fh:  # one byte changed far past the first chunk
        fh.seek(2 * 1024 * 1024 + 7)
        fh.write(b"\xff" if data[2 * 1024 * 1024 + 7] != 0xFF else b"\x00")
    assert store.check(digest).status == "mismatch"


@pytest.mark.parametrize("digest", ["sha256:" + "A" * 64, "SHA256:" + "a" * 64, "sha512:" + "a" * 128,
                                    "sha256:" + "a" * 63])
def test_a_digest_in_another_spelling_or_algorithm_is_refused_naming_its_line(capsule_dir, digest):
    text = (capsule_dir / "capsule.yaml").read_text()
    cap = load_capsule(capsule_dir)
    old = cap.tool_evidence[1].response_digest
    line = text[:text.index(f"response_digest: {old}")].count("\n") + 1
    (capsule_dir / "capsule.yaml").write_text(text.replace(old, digest))
    with pytest.raises(CapsuleFormatError, match="at tool_evidence/1/response_digest") as e:
        load_capsule(capsule_dir)
    assert e.value.line_no == line and str(e.value).startswith(f"{capsule_dir / 'capsule.yaml'}:{line}: ")
    assert EvidenceStore(capsule_dir / "evidence").has(digest) is False


def test_two_capsules_sharing_a_store_each_answer_for_their_own_evidence(demo, tmp_path):
    """B's damaged object had failed A's verification (exit 3), though A's evidence was intact."""
    capture = load_capture(demo / "capture.yaml")
    a = build_capsule(demo, demo / "door-evidence", tmp_path / "a", capture=capture)
    capture.system_prompt = b"You are a careful deployment assistant."
    b = build_capsule(demo, demo / "door-evidence", tmp_path / "b", capture=capture)
    shared = tmp_path / "shared"
    for c in (a, b):
        copy_tree_into(c.store_root, shared)
        data = yaml.safe_load(c.path.read_text())
        data["evidence_store"] = "../shared"
        c.path.write_text(yaml.safe_dump(data, sort_keys=False))
    ra, rb = verify_capsule(tmp_path / "a"), verify_capsule(tmp_path / "b")
    assert (ra.exit_code, rb.exit_code) == (0, 0)
    only_b = b.prompts["system_digest"]
    assert ra.objects.set_index("digest").loc[only_b, "what"] == "unreferenced"
    p = EvidenceStore(shared).path(only_b)
    p.chmod(0o644)
    p.write_bytes(b"You are a reckless deployment assistant.")
    ra, rb = verify_capsule(tmp_path / "a"), verify_capsule(tmp_path / "b")
    assert (ra.exit_code, ra.completeness, ra.reasons) == (0, "complete", [])
    assert ra.notes == [f"an object this capsule does not reference is damaged: {only_b} hashes to "
                        f"{sha256_digest(b'You are a reckless deployment assistant.')}"]
    assert rb.exit_code == 3 and rb.integrity_failures["what"].tolist() == ["prompt.system"]


def copy_tree_into(src, dst):
    dst.joinpath("sha256").mkdir(parents=True, exist_ok=True)
    for f in (src / "sha256").iterdir():
        target = dst / "sha256" / f.name
        if not target.exists():
            target.write_bytes(f.read_bytes())


# -- the capsule manifest ------------------------------------------------------------------------

def edit(capsule_dir, fn):
    p = capsule_dir / "capsule.yaml"
    data = yaml.safe_load(p.read_text())
    fn(data)
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


@pytest.mark.parametrize("store, ok", [("/tmp", False), ("evi\0dence", False), ("../evidence-shared", True),
                                       ("evidence/../evidence", True)])
def test_the_evidence_store_path(capsule_dir, store, ok):
    """An absolute store is not 'beside capsule.yaml'; a NUL had crashed verify with a ValueError."""
    p = edit(capsule_dir, lambda d: d.update(evidence_store=store))
    if ok:
        rep = verify_capsule(capsule_dir)
        assert rep.exit_code == (0 if store.startswith("evidence") else 4)
        return
    with pytest.raises(CapsuleFormatError, match="must be a folder relative to capsule.yaml") as e:
        verify_capsule(capsule_dir)
    assert (e.value.path, e.value.line_no) == (str(p), 3)


def test_two_entries_with_one_call_id_are_refused(capsule_dir):
    """Which response is that call's?  The extraction kept one, verify passed both."""
    p = edit(capsule_dir, lambda d: d["tool_evidence"][2].update(call_id=d["tool_evidence"][0]["call_id"]))
    with pytest.raises(CapsuleFormatError, match=r"tool_evidence/2/call_id: call id 'toolu_01e10b774318486fefdbb04a' "
                                                 r"is also entry 0's") as e:
        load_capsule(capsule_dir)
    text = p.read_text()
    assert e.value.line_no == text[:text.index("- call_id: toolu_01e10b774318486fefdbb04a", text.index(
        "- call_id: toolu_01d39b40b90e67fffe3f8481"))].count("\n") + 1


@pytest.mark.parametrize("change, message, line", [
    (lambda t: t.replace("capsule_version: 1", "capsule_version: 2"), "at capsule_version: 1 was expected", 2),
    # a missing key: the line of the mapping that lacks it (the top one starts on line 2)
    (lambda t: t.replace("operation_id: op-example-913\n", ""), "'operation_id' is a required property", 2),
    (lambda t: t + "operation_id: op-other\n", "key 'operation_id' is written twice (lines 3 and 95)", 95),
    (lambda t: t[:t.index("completeness: complete")], "'completeness' is a required property", 2),
    (lambda t: t.replace("effect: read", "effect: reed", 1), "at tool_evidence/0/effect", 48),
    # a misspelt key: its own line, and the key it was meant to be (the schema alone said only
    # what was missing, at no line)
    (lambda t: t.replace("operation_id:", "operaton_id:"),
     "at (top level): 'operation_id' is a required property; unknown key 'operaton_id' (did you mean "
     "'operation_id'?)", 3),
    (lambda t: t.replace("evidence_store:", "evidence_stor:"),
     "at (top level): unknown key 'evidence_stor' (did you mean 'evidence_store'?)", 4),
    (lambda t: t.replace("  principal:", "  principl:", 1),
     "at authority: unknown key 'principl' (did you mean 'principal'?)", 28),
    (lambda t: t.replace("  model: claude", "  modle: claude", 1),
     "at model: 'model' is a required property; unknown key 'modle' (did you mean 'model'?)", 17),
])
def test_a_bad_manifest_is_refused_naming_file_and_line(capsule_dir, change, message, line):
    p = capsule_dir / "capsule.yaml"
    p.write_text(change(p.read_text()))
    with pytest.raises(CapsuleFormatError, match=re.escape(message)) as e:
        load_capsule(capsule_dir)
    assert (e.value.path, e.value.line_no) == (str(p), line)


def test_a_manifest_cut_short_says_so(capsule_dir):
    p = capsule_dir / "capsule.yaml"
    text = p.read_text()
    p.write_text(text[:text.index("completeness: complete")] + "complet")  # not YAML: the line says where
    with pytest.raises(CapsuleFormatError, match="not valid YAML") as e:
        load_capsule(capsule_dir)
    assert e.value.line_no == text.count("\n") - 1
    p.write_text(text[:text.index("  verdict_on_missing_input: replay_incomplete") + 30])  # YAML, cut mid-value
    with pytest.raises(CapsuleFormatError, match=r"'completeness' is a required property \(the file ends "
                                                 r"mid-line: was it cut short\?\)"):
        load_capsule(capsule_dir)


def test_a_manifest_that_claims_completeness_it_lacks(capsule_dir):
    cap, ev, obj = response_object(capsule_dir)
    edit(capsule_dir, lambda d: (d["authority"].update(scopes=None), d.update(completeness_reasons=[])))
    rep = verify_capsule(capsule_dir)
    assert (rep.declared, rep.completeness, rep.exit_code) == ("complete", "unproven", 4)
    assert rep.reasons == ["credential scope: scopes not recorded",
                           "the capsule declares itself complete, but the evidence does not show it"]


# -- run records ---------------------------------------------------------------------------------

def test_a_run_record_digest_in_upper_case_is_refused_not_compared_as_different(demo, tmp_path):
    """'SHA256:ABC…' and 'sha256:abc…' are one digest; compared as strings they had 'diverged'."""
    rec = json.loads((demo / "runs" / "incident.json").read_text())
    rec["checkpoints"][11]["digest"] = rec["checkpoints"][11]["digest"].upper()
    p = tmp_path / "incident.json"
    p.write_text(json.dumps(rec))
    with pytest.raises(CapsuleFormatError, match=r"at checkpoints/11/digest: 'SHA256:0482"):
        load_run(p)


def test_a_run_record_writing_a_key_twice_is_refused(demo, tmp_path):
    text = (demo / "runs" / "forensic.json").read_text()
    p = tmp_path / "forensic.json"
    p.write_text(text.replace('"status": "completed"', '"status": "failed", "status": "completed"', 1))
    with pytest.raises(CapsuleFormatError, match="writes key 'status' twice in one object"):
        load_run(p)


# -- building from an incident -------------------------------------------------------------------

def incident_copy(demo, dst, door=None, transcripts=None):
    """The demo incident (without its capsule entry) in ``dst``; ``door(rows)`` rewrites the door
    log's rows, ``transcripts(lines)`` returns ``{file stem: lines}`` for the transcript folder."""
    import shutil

    shutil.copytree(demo / "door", dst / "door")
    (dst / "transcripts").mkdir()
    (dst / "incident.yaml").write_text((demo / "incident.yaml").read_text().split("capsule:")[0])
    (src,) = (demo / "transcripts").glob("*.jsonl")
    lines = [json.loads(x) for x in src.read_text().splitlines()]
    files = transcripts(lines) if transcripts else {src.stem: lines}
    for stem, objs in files.items():
        (dst / "transcripts" / f"{stem}.jsonl").write_text("".join(json.dumps({**o, "sessionId": stem}) + "\n"
                                                                   for o in objs))
    log = next((dst / "door").rglob("*.jsonl"))
    if door is not None:
        rows = door([json.loads(x) for x in log.read_text().splitlines()])
        log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return dst


def built(demo, inc, out):
    cap = build_capsule(inc, demo / "door-evidence", out, capture=load_capture(demo / "capture.yaml"))
    return cap, incident_run(cap, inc)


RESUMED = "22222222-2222-4222-8222-222222222222"


@pytest.mark.parametrize("cut", [6, 12])
def test_a_resumed_conversation_is_one_run(demo, incident, tmp_path, cut):
    """A session resumed after line ``cut``: the new file starts with copies of the first one's
    lines.  The capsule had taken one of the two files as the whole run: with the first, the edit,
    the tests and the end were lost (cut 6: 'diverged at checkpoint 13') or the stop read
    'interrupted' (cut 12); the conversation is both files."""
    first = "11111111-1111-4111-8111-111111111111"
    inc = incident_copy(demo, tmp_path / "inc", transcripts=lambda lines: {first: lines[:cut], RESUMED: lines})
    cap, run = built(demo, inc, tmp_path / "cap")
    assert cap.completeness == "complete"
    assert cap.prompts["task_digest"] == load_capsule(demo / "capsule").prompts["task_digest"]
    assert [(c.label, c.digest) for c in run.checkpoints] == [(c.label, c.digest) for c in incident.checkpoints]
    assert diff_runs(incident, run).verdict == "reproduced"


@pytest.mark.parametrize("keep_ids", [True, False])
def test_repeated_door_call_numbers(demo, incident, tmp_path, keep_ids):
    """Every door call logged with seq 1 (a door restarted under one session name), with or
    without the client's tool-use ids: each call keeps its own evidence and the run reproduces."""
    def renumber(rows):
        for r in rows:
            r["seq"] = 1
            if not keep_ids:
                r.pop("meta")
        return rows
    inc = incident_copy(demo, tmp_path / "inc", door=renumber)
    cap, run = built(demo, inc, tmp_path / "cap")
    ids = [e.call_id for e in cap.tool_evidence]
    assert len(set(ids)) == 4 and cap.completeness == "complete"
    if not keep_ids:
        assert ids == ["door-20260913T164203-d1#1", "door-20260913T164203-d1#1#2", "door-20260913T164203-d1#1#3",
                       "door-20260913T164203-d1#1#4"]
    assert [e.response_digest for e in cap.tool_evidence] == [e.response_digest for e in
                                                              load_capsule(demo / "capsule").tool_evidence]
    assert diff_runs(incident, run).verdict == "reproduced"


def test_a_retried_call_stays_where_it_was_made(demo, tmp_path, workspace):
    """The client sent get_service twice under one tool-use id (a retry the conversation shows
    once).  The copy was placed after the merge, as if the agent had read the catalogue again
    after shipping; it belongs right after the call it repeats."""
    def retry(rows):
        again = {**rows[1], "seq": 5, "ts": "2026-09-13T16:42:11.310Z", "ts_end": "2026-09-13T16:42:11.420Z"}
        return rows[:2] + [again] + rows[2:]
    inc = incident_copy(demo, tmp_path / "inc", door=retry)
    cap, run = built(demo, inc, tmp_path / "cap")
    assert [e.call_id for e in cap.tool_evidence][1:3] == ["toolu_01d39b40b90e67fffe3f8481",
                                                           "toolu_01d39b40b90e67fffe3f8481#2"]
    labels = [c.label for c in run.checkpoints]
    assert labels[12:18] == ["tool_choice.service_catalogue#2", "tool_request.service_catalogue#2",
                             "policy.service_catalogue#2", "response_schema.service_catalogue#2",
                             "tool_response.service_catalogue#2", "patch.deploy/rules.yaml"]
    d = diff_runs(run, ForensicHarness(cap, workspace).run(deploy_rule_agent))
    assert (d.checkpoint, d.classification, d.divergence["changed_input"]["a"]) == (
        13, "path_divergence", "tool_choice.service_catalogue#2")


def test_a_door_log_cut_short_leaves_the_capsule_unproven_naming_the_call(demo, tmp_path, workspace):
    """The door log's last line cut mid-write: the merge the transcript shows had vanished from
    the capsule (verified 'complete') and from the incident's run, which then read as if the
    agent had never merged."""
    inc = incident_copy(demo, tmp_path / "inc")
    log = next((inc / "door").rglob("*.jsonl"))
    log.write_bytes(log.read_bytes()[:-60])
    cap, run = built(demo, inc, tmp_path / "cap")
    merge = "toolu_0147655029ff1ecc0af9de69"
    assert cap.completeness == "unproven"
    assert cap.data["completeness_reasons"] == [
        f"MCP responses: no response digest: {merge}",
        "policy decisions: 1 calls without a captured decision",
        f"clock and feature flags: calls without observed_at: {merge}"]
    assert [(c.label, c.status, c.call_id) for c in run.checkpoints[-4:]] == [
        ("tool_choice.door", "ok", merge), ("tool_request.door", "ok", merge), ("policy.door", "failed", merge),
        ("decision.stop", "ok", None)]
    assert run.checkpoints[-2].summary == ("merge_pull_request: the door has no record of this call "
                                           "(no decision, no response captured)")
    forensic = ForensicHarness(cap, workspace).run(deploy_rule_agent)
    assert forensic.status == "replay_incomplete"
    d = diff_runs(run, forensic)
    assert d.verdict == "not_re_derivable" and d.decision_reproduced is None


# -- verify: tampering -----------------------------------------------------------------------------

def test_a_response_replaced_with_its_digest_edited_in_is_caught_by_the_door_log(capsule_dir):
    """A forged response stored under its own digest, and the manifest edited to that digest:
    every object hashed right and verify said 'complete'.  The door's own log, kept as evidence,
    recorded the original digest."""
    from click.testing import CliRunner

    from replaybook.capsule.cli import capsule

    cap, ev, obj = response_object(capsule_dir)
    forged = obj.read_bytes().replace(b'"regulated_data":false', b'"regulated_data":true')
    new = cap.store().put(forged)
    obj.unlink()
    p = capsule_dir / "capsule.yaml"
    p.write_text(p.read_text().replace(ev.response_digest, new))
    rep = verify_capsule(capsule_dir)
    assert (rep.exit_code, rep.completeness) == (3, "unproven")
    assert rep.log_disagreements == [{"call_id": ev.call_id, "digest": new}]
    assert rep.integrity_failures.empty  # every object does hash to its name: the log is the witness
    r = CliRunner().invoke(capsule, ["verify", str(capsule_dir)])
    assert r.exit_code == 3
    assert (f"INTEGRITY FAILURE: call {ev.call_id}: response digest {new} is not one the door's own log recorded"
            in r.output.splitlines())


def test_a_door_log_truncated_in_the_store_is_an_integrity_failure_naming_it(capsule_dir):
    cap = load_capsule(capsule_dir)
    log = cap.data["authority"]["decision_logs"][0]["digest"]
    p = cap.store().path(log)
    p.write_bytes(p.read_bytes()[:-100])
    rep = verify_capsule(capsule_dir)
    assert rep.exit_code == 3 and rep.integrity_failures["what"].tolist() == ["door-log.1"]
    assert rep.log_disagreements == []  # (an unreadable witness is not a second accusation)


def test_runs_made_from_another_capsule_yaml_are_named(demo, capsule_dir, workspace):
    """The capsule edited after its runs were made: the review verdict had been given as the
    capsule's own.  Each run records the digest of the capsule.yaml it was made from."""
    from replaybook.capsule import review_section

    runs = [load_run(demo / "runs" / f"{n}.json") for n in ("incident", "forensic", "live")]
    sec = review_section(capsule_dir, *runs)
    assert "runs_from_another_capsule" not in sec.verdict["replay_verdict"]
    edit(capsule_dir, lambda d: d["tool_evidence"][2]["policy"].update(rule="allow-anything"))
    sec = review_section(capsule_dir, *runs)
    v = sec.verdict["replay_verdict"]
    assert (v["runs_from_another_capsule"], v["reviewer_decision"]) == (["incident", "forensic"],
                                                                       "replay_not_re_derivable")
    assert sec.reasons[-1] == ("run 'forensic' was made from another capsule.yaml than this one (edited since, "
                               "or another capsule's): its comparison is not this capsule's")
    again = ForensicHarness(load_capsule(capsule_dir), workspace).run(deploy_rule_agent)
    d = diff_runs(runs[0], again)
    assert d.notes == [f"the runs were made from different capsule.yaml files ({runs[0].capsule_digest} vs "
                       f"{again.capsule_digest}): the capsule changed between them, or they are two capsules' runs"]


def test_two_identical_captured_calls_are_replayed_in_the_order_they_were_answered(capsule_dir, tmp_path):
    """Two get_service calls with one request digest: the forensic replay serves the first
    captured answer to the first call and the second to the second, each at its own time."""
    cap, ev, obj = response_object(capsule_dir)
    second = cap.store().put(b'{"service":"ledger-api","tags":{"regulated_data":true}}')

    def add(d):
        entries = d["tool_evidence"]
        i = next(k for k, e in enumerate(entries) if e["call_id"] == ev.call_id)
        entries.insert(i + 1, {**entries[i], "call_id": "toolu_second", "response_digest": second,
                               "captured_response_ref": "evidence://op-example-913/toolu_second",
                               "observed_at": "2026-09-13T16:42:12.000Z"})
    edit(capsule_dir, add)
    run = ForensicHarness(load_capsule(capsule_dir), None).run(read_twice)
    got = [(c.call_id, c.digest, c.ts) for c in run.checkpoints if c.kind == "tool_response"][1:]
    assert got == [(ev.call_id, ev.response_digest, "2026-09-13T16:42:11.300Z"),
                   ("toolu_second", second, "2026-09-13T16:42:12.000Z")]
    assert run.checkpoints[-1].summary == "stop: rollback_needed"


def test_a_response_nested_as_deep_as_json_allows_is_compared_to_the_bottom(incident, workspace, tmp_path):
    """1,000 levels (a parser reads 1,024): the diff raised RecursionError instead of a verdict."""
    def deep(leaf):
        def change(v):
            x = leaf
            for _ in range(1000):
                x = [x]
            v["tags"]["deep"] = x
        return change
    store = EvidenceStore(tmp_path / "live")
    a = live(catalogue(deep(1)), workspace, store)
    b = live(catalogue(deep(2)), workspace, store)
    assert a.status == b.status == "completed"
    (change,) = diff_runs(a, b).divergence["changed_input"]["fields"]
    assert (change["path"], change["a"], change["b"]) == ("tags.deep" + "[0]" * 1000, 1, 2)
