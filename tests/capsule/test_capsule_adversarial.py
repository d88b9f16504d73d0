"""Adversarial scenarios: inputs built to make verify, the harnesses or the diff give a wrong or
misleading answer.  Each test states the answer a reviewer must get."""

from __future__ import annotations

import copy
import json
import unicodedata

import pytest

from replaybook.capsule import LiveHarness, align, diff_runs, load_run
from replaybook.capsule.diff import json_changes
from replaybook.capsule.report import replay_results
from replaybook.capsule.scripted import T_INCIDENT, DemoWorld, PolicyDecision, deploy_rule_agent
from replaybook.capsule.store import EvidenceStore
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
