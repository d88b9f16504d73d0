"""Diff verdicts on the demo, the side-by-side view and the report section."""

from __future__ import annotations

import pandas as pd
import pytest

from replaybook.capsule import diff_runs, load_run, review_section, side_by_side, side_by_side_styler
from replaybook.capsule.diff import json_changes
from replaybook.capsule.report import replay_verdict, suggest_reviewer_decision
from replaybook.capsule.verify import verify_capsule


@pytest.fixture
def runs(demo):
    return {n: load_run(demo / "runs" / f"{n}.json") for n in ("incident", "forensic", "live")}


def test_forensic_reproduces_the_incident(runs):
    d = diff_runs(runs["incident"], runs["forensic"])
    assert (d.verdict, d.verdict_text, d.checkpoint, d.classification) == ("reproduced", "reproduced", None, None)
    assert d.decision_reproduced is True and d.structural is False
    assert d.cosmetic == [] and d.reasons == [] and d.notes == []
    assert d.effects["patch_digests_equal"] and d.effects["effects_equal"]


def test_live_diverges_on_the_catalogue_response(runs):
    d = diff_runs(runs["incident"], runs["live"])
    assert (d.verdict, d.verdict_text, d.classification) == ("diverged", "diverged at checkpoint 12",
                                                             "external_evidence_drift")
    assert d.first_divergence == "service_catalogue.response"
    dv = d.divergence
    assert dv["first_checkpoint"] == "tool_response.service_catalogue"
    assert dv["incident_digest"] == "sha256:0482a3c6491f9d14b6c7cd72e873ca6dcfc853f40c2a04d65eb40b2d1e5e60f0"
    assert dv["replay_digest"] == "sha256:76cdec8e50321b8fc7147a9de0c4a83a29a33520abee40b5cc4b36e559b47a07"
    assert dv["changed_input"]["fields"] == [
        {"path": "tags.regulated_data", "a": False, "b": True},
        {"path": "updated_at", "a": "2026-09-13T09:00:00.000Z", "b": "2026-09-13T23:10:00.000Z"}]
    assert dv["downstream_changes"] == [
        "patch.deploy/rules.yaml: not_proposed", "tests.selection: not_run", "tool_choice.repo_host: not_called",
        "effect.repo_host: not_committed", "tool_choice.repo_host#2: not_called", "effect.repo_host#2: not_committed"]
    assert dv["structural"] is True and d.decision_reproduced is False


def test_json_changes_redacts_secret_looking_fields():
    a = {"evaluation_token": "x1", "n": [1, 2], "k": {"api_key": "s"}}
    b = {"evaluation_token": "x2", "n": [1, 3], "extra": 1, "k": {"api_key": "t"}}
    assert json_changes(a, b) == [
        {"path": "evaluation_token", "a": "<redacted>", "b": "<redacted>"},
        {"path": "extra", "a": "<absent>", "b": 1},
        {"path": "k.api_key", "a": "<redacted>", "b": "<redacted>"},
        {"path": "n[1]", "a": 2, "b": 3}]


def test_side_by_side_flags_the_first_divergence(runs):
    df = side_by_side(runs, "incident")
    assert list(df.columns) == ["checkpoint", "kind", "incident", "incident_digest", "incident_status", "forensic",
                                "forensic_digest", "forensic_status", "live", "live_digest", "live_status",
                                "forensic_match", "live_match", "first_divergence"]
    assert len(df) == 27
    flagged = df[df.first_divergence != ""]
    assert flagged[["checkpoint", "first_divergence"]].values.tolist() == [
        ["tool_response.service_catalogue", "live"]]
    assert df.forensic_match.all()
    assert df.live_match.iloc[:12].tolist() == [True] * 11 + [False]
    assert df.live_match.iloc[12:26].isna().all() and df.live_match.iloc[26]
    assert pd.isna(df.loc[12, "live"]) and df.loc[11, "live"] == "sha256:76cd… get_service → sha256:76cd…"
    html = side_by_side_styler(df).to_html()
    assert "background-color: #fdecea" in html and "live_digest" not in html


def test_review_section_blocks(demo, runs):
    sec = review_section(demo / "capsule", runs["incident"], runs["forensic"], runs["live"])
    assert sec.verdict == {"replay_verdict": {
        "capsule_complete": True,
        "forensic_verdict": "reproduced",
        "live_verdict": "diverged at checkpoint 12",
        "forensic_decision_reproduced": True,
        "live_decision_reproduced": False,
        "first_divergence": "service_catalogue.response",
        "external_effects_replayed": False,
        "unexpected_live_calls": 0,
        "reviewer_decision": "incident_explained_by_service_catalogue_drift"}}
    assert sec.verdict_yaml.startswith("replay_verdict:\n  capsule_complete: true\n")
    assert sec.results["replay_results"]["forensic"] == {
        "evidence_time": "2026-09-13T16:42:03.000Z", "external_calls": "blocked", "captured_responses_used": 4,
        "status": "completed", "decision_reproduced": True}
    assert sec.results["replay_results"]["live_verification"] == {
        "evidence_time": "2026-09-14T09:18:22.000Z", "external_calls": "allowed_read_only",
        "changed_inputs": ["service_catalogue.tags.regulated_data", "service_catalogue.updated_at"],
        "status": "completed", "decision_reproduced": False}
    assert sec.divergence["divergence"]["classification"] == "external_evidence_drift"
    assert sec.completeness == "complete" and len(sec.inventory) == 8
    html = sec.html()
    assert html.startswith('<div class="rb-section"><h2>Replay capsule</h2>')
    assert "incident_explained_by_service_catalogue_drift" in html and 'class="rb-refused"' in html
    # the decision said in words, with why: it had stood as a bare name in a YAML block
    said = ("Suggested decision: incident_explained_by_service_catalogue_drift — the forensic replay reproduces "
            "the incident and today's live run diverged at checkpoint 12: what changed there explains the incident "
            "(see First divergence). The reviewer confirms or replaces it as capsule.reviewer_decision in the "
            "incident's manifest.")
    assert sec.decision == said and html.index(said.replace("'", "&#x27;")) < html.index("replay_verdict:")


def test_the_decision_in_words_says_why_for_each_rule(demo, runs):
    from replaybook.capsule.report import decision_words

    sec = review_section(demo / "capsule", runs["incident"], runs["forensic"], runs["live"],
                         reviewer_decision="confirmed")
    assert sec.decision == "Reviewer's decision: confirmed (capsule.reviewer_decision in the incident's manifest)."
    base = sec.verdict["replay_verdict"]

    def words(**kw):
        return decision_words({"replay_verdict": {**base, "reviewer_decision": "x", **kw}}, ["a file is missing"],
                              given=False)

    assert "the capsule is not complete (a file is missing): a replay from it cannot stand for the incident" in words(
        capsule_complete=False)
    assert "the run diverged at checkpoint 3: the capsule does not re-derive" in words(forensic_verdict="diverged at checkpoint 3")
    assert "cannot be compared with the incident run (not re-derivable)" in words(forensic_verdict="not re-derivable")
    assert "today's live run cannot be compared" in words(live_verdict="not re-derivable")
    assert "both reach the incident's decision" in words(live_verdict="reproduced", reviewer_decision="incident_reproduces_today")
    assert "runs incident, forensic were made from another capsule.yaml" in words(runs_from_another_capsule=["incident", "forensic"])


def test_reviewer_decision_can_be_given_and_suggestions_never_merge_verdicts(demo, runs):
    rep = verify_capsule(demo / "capsule")
    fd = diff_runs(runs["incident"], runs["forensic"])
    ld = diff_runs(runs["incident"], runs["live"])
    v = replay_verdict(rep, fd, ld, reviewer_decision="confirmed")["replay_verdict"]
    assert v["reviewer_decision"] == "confirmed"
    assert suggest_reviewer_decision(False, fd, ld) == "replay_not_re_derivable"
    assert suggest_reviewer_decision(True, fd, fd) == "incident_reproduces_today"
    assert suggest_reviewer_decision(True, ld, fd) == "forensic_replay_diverged"


def test_two_missing_digests_are_not_two_equal_ones(runs):
    """A checkpoint recorded ``ok`` but without a digest (a run record written by another tool,
    or edited) cannot be compared: the verdict is not re-derivable, never "reproduced"."""
    import copy

    a, b = copy.deepcopy(runs["incident"]), copy.deepcopy(runs["forensic"])
    for r in (a, b):
        r.checkpoints[11].digest = None  # tool_response.service_catalogue, status still "ok"
    d = diff_runs(a, b)
    assert d.verdict == "not_re_derivable" and d.decision_reproduced is None
    assert any("tool_response.service_catalogue" in r and "no digest" in r for r in d.reasons)
    b = copy.deepcopy(runs["forensic"])
    b.checkpoints[11].digest = None  # one side only
    assert diff_runs(runs["incident"], b).verdict == "not_re_derivable"


def test_two_runs_without_checkpoints_are_not_reproduced(tmp_path):
    """Two run records with no checkpoint at all compare nothing: not re-derivable (exit 4),
    and the table still prints."""
    import json

    from click.testing import CliRunner

    from replaybook.capsule.cli import capsule

    for n in ("a", "b"):
        (tmp_path / f"{n}.json").write_text(json.dumps({"format": "replaybook-run/1", "run": n, "mode": "forensic",
                                                        "status": "completed", "checkpoints": []}))
    a, b = load_run(tmp_path / "a.json"), load_run(tmp_path / "b.json")
    assert diff_runs(a, b).verdict == "not_re_derivable"
    for fmt in ("table", "json"):
        r = CliRunner().invoke(capsule, ["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--format", fmt])
        assert r.exit_code == 4, r.output
        assert "nothing was compared" in r.output


def test_side_by_side_styler_escapes_what_the_runs_recorded():
    """A tool's response summary is evidence: the Styler showed it as markup, so a response
    holding ``<img onerror=…>`` ran in the notebook that displayed the comparison."""
    df = pd.DataFrame({"checkpoint": ["tool_response.<b>svc</b>"], "kind": ["tool_response"],
                       "incident": ["sha256:aa… <img src=x onerror=alert(1)>"], "incident_digest": ["sha256:aa"],
                       "incident_status": ["ok"], "live": ["sha256:bb… ok"], "live_digest": ["sha256:bb"],
                       "live_status": ["ok"], "live_match": [False], "first_divergence": ["live"]})
    out = side_by_side_styler(df).to_html()
    assert "<img" not in out and "<b>svc" not in out
    assert "&lt;img src=x onerror=alert(1)&gt;" in out and "&lt;b&gt;svc&lt;/b&gt;" in out
    assert "background-color: #fdecea" in out
