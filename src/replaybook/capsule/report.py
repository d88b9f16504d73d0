"""Views and review-report sections for capsules and replays (pure functions; no widgets).

* :func:`side_by_side` — the incident / forensic / live table aligned by checkpoint, with each
  run's first divergence flagged; :func:`side_by_side_styler` — the same as a pandas Styler.
* :func:`replay_verdict` / :func:`replay_results` — the seed's ``replay_verdict`` and
  ``replay_results`` blocks; :func:`to_yaml` renders them.
* :func:`review_section` — everything the review report shows for one capsule: the verdict block
  as YAML text, the inventory table, the divergence record, the side-by-side table, and
  :meth:`CapsuleSection.html` (a self-contained, escaped HTML fragment).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import yaml

from .diff import RunDiff, align, diff_runs
from .digest import sha256_digest, short
from .model import Capsule
from .runs import RunRecord
from .verify import VerifyReport, verify_capsule

__all__ = ["side_by_side", "side_by_side_styler", "replay_verdict", "replay_results", "divergence_record",
           "suggest_reviewer_decision", "decision_words", "foreign_runs", "to_yaml", "CapsuleSection", "review_section",
           "InventorySection", "inventory_section", "RUN_ROLES"]

#: the three runs a verdict compares, in order
RUN_ROLES = ("incident", "forensic", "live")


def side_by_side(runs: Mapping[str, RunRecord], reference: str | None = None) -> pd.DataFrame:
    """Runs aligned by checkpoint label, in the reference run's order.

    Args:
        runs: ``{name: run}``, e.g. ``{"incident": …, "forensic": …, "live": …}``.
        reference: the run others are compared with (default: the first).

    Returns:
        One row per checkpoint label: ``checkpoint`` (label), ``kind``, then per run ``<name>``
        (short digest and summary, NA where the run has no such checkpoint), ``<name>_digest``,
        ``<name>_status``; per non-reference run ``<name>_match`` (boolean, NA when not
        compared); and ``first_divergence`` — the names of the runs whose first divergence from
        the reference is this checkpoint (comma-separated, ``""`` elsewhere).  All text columns
        are ``string`` dtype.
    """
    names = list(runs)
    ref = reference or names[0]
    al = align(runs, ref)
    out = pd.DataFrame({"checkpoint": al["label"], "kind": al["kind"]})
    for n in names:
        cell = [None if pd.isna(s) else f"{short(d) if not pd.isna(d) else '—'} {s}"
                for d, s in zip(al[f"{n}_digest"], al[f"{n}_summary"])]
        out[n] = pd.Series(cell, dtype=pd.StringDtype("python"))
        out[f"{n}_digest"] = al[f"{n}_digest"]
        out[f"{n}_status"] = al[f"{n}_status"]
    flags = [[] for _ in range(len(al))]
    for n in names:
        if n == ref:
            continue
        out[f"{n}_match"] = al[f"{n}_match"]
        d = diff_runs(runs[ref], runs[n])
        if d.divergence is not None:
            idx = al.index[al["label"] == d.divergence["first_checkpoint"]]
            if len(idx):
                flags[idx[0]].append(n)
    out["first_divergence"] = pd.Series([", ".join(f) for f in flags], dtype=pd.StringDtype("python"))
    return out


def side_by_side_styler(df: pd.DataFrame):
    """A pandas Styler for :func:`side_by_side`'s frame: first-divergence rows red, mismatching
    cells amber, digest and status columns hidden, every value HTML-escaped (the summaries are
    what the runs' tools returned), ``—`` where a run has no such checkpoint."""
    runs = [c[:-6] for c in df.columns if c.endswith("_match")]

    def row_style(row: pd.Series) -> list[str]:
        base = "background-color: #fdecea" if row["first_divergence"] else ""
        styles = []
        for c in df.columns:
            s = base
            name = c
            m = row.get(f"{name}_match")
            if name in runs and m is not None and not pd.isna(m) and not bool(m):
                s = "background-color: #fff3cd" if not base else base + "; font-weight: 600"
            styles.append(s)
        return styles

    hidden = [c for c in df.columns if c.endswith("_digest") or c.endswith("_status") or c.endswith("_match")]
    return (df.style.format(escape="html", na_rep="—").apply(row_style, axis=1).hide(axis="index")
            .hide(subset=hidden, axis="columns"))


def divergence_record(diff: RunDiff) -> dict | None:
    """``{"divergence": {...}}`` in the seed's format (``None`` when the runs agree)."""
    return None if diff.divergence is None else {"divergence": diff.divergence}


def _changed_inputs(diff: RunDiff) -> list[str]:
    if diff.divergence is None:
        return []
    ci = diff.divergence["changed_input"]
    if ci.get("fields") and diff.divergence["first_checkpoint"].startswith("tool_response."):
        key = ci["name"].removesuffix(".response")  # service_catalogue, or service_catalogue#2
        return [key + ("" if f["path"].startswith("[") else ".") + f["path"] if f["path"] != "(root)" else key
                for f in ci["fields"]]
    return [ci["name"]]


def suggest_reviewer_decision(capsule_complete: bool, forensic: RunDiff, live: RunDiff) -> str:
    """A proposed ``reviewer_decision`` (the reviewer confirms or replaces it).

    ``incident_explained_by_<server>_drift`` when the forensic replay reproduces and the live
    verification diverges on external evidence; ``incident_explained_by_<classification>`` for
    another live divergence; ``incident_reproduces_today`` when both reproduce;
    ``replay_not_re_derivable`` / ``forensic_replay_diverged`` / ``live_verification_not_re_derivable``
    otherwise.
    """
    if not capsule_complete or forensic.verdict == "not_re_derivable":
        return "replay_not_re_derivable"
    if forensic.verdict == "diverged":
        return "forensic_replay_diverged"
    if live.verdict == "not_re_derivable":
        return "live_verification_not_re_derivable"
    if live.verdict == "reproduced":
        return "incident_reproduces_today"
    if live.classification == "external_evidence_drift":
        key = live.divergence["first_checkpoint"].split(".", 1)[-1].split("#")[0]
        return f"incident_explained_by_{key}_drift"
    return f"incident_explained_by_{live.classification}"


def decision_words(verdict: dict, reasons: list[str], *, given: bool) -> str:
    """The ``reviewer_decision`` of a ``replay_verdict`` block in one plain sentence, with why
    (:func:`suggest_reviewer_decision`'s rule, from the block's own fields), for a reader who
    does not know the decisions' names: whether the reviewer ``given`` it or it is suggested."""
    v = verdict["replay_verdict"]
    d = v["reviewer_decision"]
    if given:
        return f"Reviewer's decision: {d} (capsule.reviewer_decision in the incident's manifest)."
    fv, lv = str(v["forensic_verdict"]), str(v["live_verdict"])
    if v.get("runs_from_another_capsule"):
        why = ("runs " + ", ".join(v["runs_from_another_capsule"]) + " were made from another capsule.yaml than "
               "this one, so their comparison says nothing of this capsule")
    elif not v["capsule_complete"]:
        why = ("the capsule is not complete" + (f" ({'; '.join(reasons)})" if reasons else "")
               + f": a replay from it cannot stand for the incident, whatever it shows (forensic: {fv}; live: {lv})")
    elif fv.startswith("not re-derivable") or fv == "not_re_derivable":
        why = f"the forensic replay cannot be compared with the incident run ({fv})"
    elif fv.startswith("diverged"):
        why = f"replayed from the captured responses alone, the run {fv}: the capsule does not re-derive the incident"
    elif lv.startswith("not re-derivable") or lv == "not_re_derivable":
        why = f"the forensic replay reproduces the incident, but today's live run cannot be compared ({lv})"
    elif d == "incident_reproduces_today":
        why = "the forensic replay and today's live run both reach the incident's decision"
    else:
        why = (f"the forensic replay reproduces the incident and today's live run {lv}: what changed there "
               "explains the incident (see First divergence)")
    return (f"Suggested decision: {d} — {why}. The reviewer confirms or replaces it as capsule.reviewer_decision "
            "in the incident's manifest.")


def _reproduced(d: RunDiff) -> bool | None:
    return None if d.verdict == "not_re_derivable" else d.decision_reproduced


def replay_verdict(report: VerifyReport, forensic: RunDiff, live: RunDiff, *,
                   reviewer_decision: str | None = None, foreign_runs: list[str] | None = None) -> dict:
    """The seed's ``replay_verdict`` block (plus both verdicts, never merged).

    Args:
        report: the capsule's verification.
        forensic: incident vs forensic replay.
        live: incident vs live verification.
        reviewer_decision: the reviewer's decision; default :func:`suggest_reviewer_decision`
            (``replay_not_re_derivable`` when ``foreign_runs`` names a run).
        foreign_runs: the runs made from another ``capsule.yaml`` than this one
            (:func:`foreign_runs`); when any, the block says so under ``runs_from_another_capsule``.

    Returns:
        ``{"replay_verdict": {capsule_complete, forensic_verdict, live_verdict,
        forensic_decision_reproduced, live_decision_reproduced, first_divergence,
        external_effects_replayed, unexpected_live_calls, reviewer_decision}}`` —
        ``*_decision_reproduced`` is ``None`` when that comparison is not re-derivable.
    """
    complete = report.completeness == "complete" and report.integrity_failures.empty
    first = forensic.first_divergence if forensic.verdict == "diverged" else live.first_divergence
    fr = forensic.replay
    suggested = "replay_not_re_derivable" if foreign_runs else suggest_reviewer_decision(complete, forensic, live)
    return {"replay_verdict": {
        "capsule_complete": complete,
        "forensic_verdict": forensic.verdict_text,
        "live_verdict": live.verdict_text,
        "forensic_decision_reproduced": _reproduced(forensic),
        "live_decision_reproduced": _reproduced(live),
        "first_divergence": first,
        "external_effects_replayed": bool(fr.external_effects_replayed or live.replay.external_effects_replayed),
        "unexpected_live_calls": len(fr.network_attempts) + len(fr.substitutions),
        "reviewer_decision": reviewer_decision or suggested,
        **({"runs_from_another_capsule": list(foreign_runs)} if foreign_runs else {}),
    }}


def foreign_runs(capsule: Capsule, *runs: RunRecord) -> list[str]:
    """The names of ``runs`` that record the digest of another ``capsule.yaml`` than ``capsule``'s
    file as it is now (edited after the run, or another capsule's run); runs recording none (a
    live verification) are not named.  Empty for a capsule without a file."""
    if capsule.path is None or not capsule.path.is_file():
        return []
    now = sha256_digest(capsule.path.read_bytes())
    return [r.run for r in runs if r.capsule_digest and r.capsule_digest != now]


def replay_results(forensic: RunDiff, live: RunDiff) -> dict:
    """The seed's ``replay_results`` block: the forensic and live runs side by side, never merged."""
    f, lv = forensic.replay, live.replay
    return {"replay_results": {
        "forensic": {"evidence_time": f.evidence_time, "external_calls": f.external_calls,
                     "captured_responses_used": f.captured_responses_used, "status": f.status,
                     "decision_reproduced": _reproduced(forensic)},
        "live_verification": {"evidence_time": lv.evidence_time, "external_calls": lv.external_calls,
                              "changed_inputs": _changed_inputs(live), "status": lv.status,
                              "decision_reproduced": _reproduced(live)},
    }}


def to_yaml(obj: Any) -> str:
    """Block-style YAML text (key order kept)."""
    return yaml.safe_dump(obj, sort_keys=False, allow_unicode=True, width=100)


@dataclass
class CapsuleSection:
    """The review report's capsule section.

    Attributes:
        verdict: the ``replay_verdict`` block (dict); ``verdict_yaml`` its YAML text.
        results: the ``replay_results`` block (dict).
        inventory: the inventory frame (:data:`~replaybook.capsule.verify.INVENTORY`).
        completeness, reasons: the capsule's computed completeness and why.
        divergence: the first divergence record (forensic if it diverged, else live), or ``None``;
            ``divergence_yaml`` its YAML text (``""`` when none).
        side_by_side: :func:`side_by_side` of incident / forensic / live.
    """

    verdict: dict
    verdict_yaml: str
    results: dict
    inventory: pd.DataFrame
    completeness: str
    reasons: list[str]
    divergence: dict | None
    divergence_yaml: str
    side_by_side: pd.DataFrame
    #: the decision in a sentence, with why (:func:`decision_words`)
    decision: str = ""

    def html(self) -> str:
        """A self-contained HTML fragment (``rb-section`` classes; every value escaped)."""
        def pre(text: str) -> str:
            return f"<pre><code>{html.escape(text)}</code></pre>"

        sbs = self.side_by_side
        runs = [c for c in sbs.columns if c not in ("checkpoint", "kind", "first_divergence")
                and not c.endswith(("_digest", "_status", "_match"))]
        rows = []
        for _, r in sbs.iterrows():
            cls = ' class="rb-refused"' if r["first_divergence"] else ""
            cells = "".join(f"<td><code>{html.escape('' if pd.isna(r[n]) else str(r[n]))}</code></td>" for n in runs)
            rows.append(f"<tr{cls}><td>{html.escape(str(r['checkpoint']))}</td>{cells}"
                        f"<td>{html.escape(str(r['first_divergence']))}</td></tr>")
        head = "".join(f"<th>{html.escape(n)}</th>" for n in ["checkpoint", *runs, "first divergence"])
        reasons = "".join(f"<li>{html.escape(x)}</li>" for x in self.reasons)
        return (
            '<div class="rb-section"><h2>Replay capsule</h2>'
            f"<h3>Verdict</h3>"
            + (f'<p class="rb-note">{html.escape(self.decision)}</p>' if self.decision else "")
            + f"{pre(self.verdict_yaml)}{pre(to_yaml(self.results))}"
            f"<h3>Inventory (completeness: {html.escape(self.completeness)})</h3>"
            + self.inventory.to_html(index=False, classes="rb-table", escape=True, border=0)
            + (f"<ul>{reasons}</ul>" if reasons else "")
            + "<h3>First divergence</h3>" + (pre(self.divergence_yaml) if self.divergence_yaml else "<p>none</p>")
            + f'<h3>Incident, forensic replay and live verification</h3><table class="rb-table"><tr>{head}</tr>'
            + "".join(rows) + "</table></div>"
        )


def review_section(capsule: Capsule | str | Path, incident: RunRecord, forensic: RunRecord, live: RunRecord,
                   *, reviewer_decision: str | None = None) -> CapsuleSection:
    """Build the capsule section of the review report.  A run made from another ``capsule.yaml``
    than this one (:func:`foreign_runs`) is named in the reasons and the verdict block.

    Raises:
        CapsuleFormatError: the capsule cannot be read.
    """
    report = verify_capsule(capsule)
    fd, ld = diff_runs(incident, forensic), diff_runs(incident, live)
    foreign = foreign_runs(report.capsule, incident, forensic, live)
    verdict = replay_verdict(report, fd, ld, reviewer_decision=reviewer_decision, foreign_runs=foreign)
    div = divergence_record(fd if fd.verdict == "diverged" else ld)
    reasons = list(report.reasons) + [f"run {n!r} was made from another capsule.yaml than this one (edited since, "
                                      "or another capsule's): its comparison is not this capsule's" for n in foreign]
    return CapsuleSection(
        verdict=verdict, verdict_yaml=to_yaml(verdict), results=replay_results(fd, ld),
        inventory=report.inventory, completeness=report.completeness, reasons=reasons,
        divergence=div, divergence_yaml="" if div is None else to_yaml(div),
        side_by_side=side_by_side({incident.run: incident, forensic.run: forensic, live.run: live}, incident.run),
        decision=decision_words(verdict, reasons, given=bool(reviewer_decision)))


@dataclass
class InventorySection:
    """The capsule section when the incident names fewer than the three runs a verdict compares:
    the capsule's inventory and completeness, the runs given, and what is missing.

    Attributes:
        inventory, completeness, reasons: as :class:`CapsuleSection`'s.
        runs: the run records given, by role (``incident``, ``forensic``, ``live``).
        missing: the roles not given, in :data:`RUN_ROLES` order.
    """

    inventory: pd.DataFrame
    completeness: str
    reasons: list[str]
    runs: dict
    missing: list[str]

    def html(self) -> str:
        """A self-contained HTML fragment (``rb-section`` classes; every value escaped)."""
        reasons = "".join(f"<li>{html.escape(x)}</li>" for x in self.reasons)
        given = ", ".join(f"{html.escape(k)} ({html.escape(r.status)}, {len(r.checkpoints)} checkpoints)"
                          for k, r in self.runs.items()) or "none"
        how = {"incident": "<code>replaybook capsule incident-run CAPSULE INCIDENT --out incident.json</code>",
               "forensic": "the run record <code>replaybook serve-capsule CAPSULE --record forensic.json</code> "
                           "writes when the agent is re-run against it",
               "live": "a run of the agent against today's systems (the capsule harness's live mode)"}
        todo = "".join(f"<li>{html.escape(m)}: {how[m]}</li>" for m in self.missing)
        return (
            '<div class="rb-section"><h2>Replay capsule</h2>'
            f"<p>No verdict yet: a verdict compares the incident, its forensic replay and a live verification. "
            f"Runs given: {given}. Missing:</p><ul>{todo}</ul>"
            f"<h3>Inventory (completeness: {html.escape(self.completeness)})</h3>"
            + self.inventory.to_html(index=False, classes="rb-table", escape=True, border=0)
            + (f"<ul>{reasons}</ul>" if reasons else "") + "</div>"
        )


def inventory_section(capsule: Capsule | str | Path, runs: Mapping[str, RunRecord]) -> InventorySection:
    """The capsule section without a verdict (:class:`InventorySection`): ``runs`` holds the
    run records the incident names (any of :data:`RUN_ROLES`).

    Raises:
        CapsuleFormatError: the capsule cannot be read.
    """
    report = verify_capsule(capsule)
    return InventorySection(inventory=report.inventory, completeness=report.completeness,
                            reasons=list(report.reasons), runs={k: runs[k] for k in RUN_ROLES if k in runs},
                            missing=[k for k in RUN_ROLES if k not in runs])
