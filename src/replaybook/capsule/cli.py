"""``replaybook capsule …``: build, verify and compare replay capsules and runs.

The lead registers the group on the main CLI (``cli.add_command(capsule)``).

Exit codes:
    ``0`` verified complete / a verdict was reached (reproduced or diverged);
    ``2`` bad input (unreadable or schema-invalid capsule, run record or capture file); for
        ``build``, also a capsule just written that cannot be read back as written (its
        ``capsule.yaml`` short, changed or unreadable; an object missing, unreadable or damaged:
        what the build wrote is removed);
    ``3`` integrity failure (an evidence object does not hash to its digest);
    ``4`` incomplete evidence (capsule ``unproven``; diff verdict ``not_re_derivable``);
    ``1`` with ``diff --exit-code`` only: the runs diverged.
"""

from __future__ import annotations

import json
import os

import click
import pandas as pd

from .diff import RunDiff, align, diff_runs
from .digest import short
from .errors import CapsuleFormatError, IntegrityError, ReadBackError
from .verify import EXIT_INCOMPLETE, EXIT_INTEGRITY, VerifyReport

__all__ = ["capsule", "EXIT_INPUT", "EXIT_DIVERGED"]

EXIT_INPUT = 2
EXIT_DIVERGED = 1


def _input_error(ctx: click.Context, exc: Exception) -> None:
    click.echo(f"replaybook: error: {exc}", err=True)
    ctx.exit(EXIT_INPUT)


def _load_run(ctx: click.Context, path: str):
    from .runs import load_run

    try:
        return load_run(path)
    except CapsuleFormatError as exc:
        _input_error(ctx, exc)


@click.group("capsule", context_settings={"help_option_names": ["-h", "--help"]})
def capsule() -> None:
    """Replay capsules: capture the inputs of an agent run, replay them, report the first divergence."""


# -- verify -------------------------------------------------------------------------------------

def _verify_table(rep: VerifyReport) -> str:
    lines = [f"capsule {rep.capsule.operation_id} ({rep.capsule.path})", ""]
    inv = rep.inventory.rename(columns={"input_class": "input class", "captured": "independently captured?",
                                        "pinned": "pinned?"})
    with pd.option_context("display.width", 250, "display.max_colwidth", 120):
        lines.append(inv.to_string(index=False))
    lines += ["", f"completeness: {rep.completeness}"
              + (f" (capsule declares {rep.declared})" if rep.declared != rep.completeness else "")]
    lines += [f"  - {r}" for r in rep.reasons]
    lines.append(f"objects checked: {len(rep.objects)}; integrity failures: {len(rep.integrity_failures)}; "
                 f"missing: {len(rep.missing_objects)}; cannot be read: {len(rep.unreadable_objects)}")
    for r in rep.integrity_failures.itertuples(index=False):
        lines.append(f"INTEGRITY FAILURE: {r.what}: evidence object {r.digest} hashes to {r.actual}")
    for x in rep.log_disagreements:
        lines.append(f"INTEGRITY FAILURE: call {x['call_id']}: response digest {x['digest']} is not one the "
                     "door's own log recorded")
    lines += [f"note: {n}" for n in rep.notes]
    return "\n".join(lines)


@capsule.command("verify")
@click.argument("capsule_path", metavar="CAPSULE", type=click.Path(exists=True))
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.pass_context
def verify_cmd(ctx: click.Context, capsule_path: str, fmt: str) -> None:
    """Re-hash every evidence object of CAPSULE (capsule.yaml or its folder), check the schema and
    print the inventory.  Exit 3 on an integrity failure, 4 when the evidence is incomplete."""
    from .verify import verify_capsule

    try:
        rep = verify_capsule(capsule_path)
    except CapsuleFormatError as exc:
        _input_error(ctx, exc)
        return
    if fmt == "json":
        click.echo(json.dumps(rep.to_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(_verify_table(rep))
    ctx.exit(rep.exit_code)


# -- diff ---------------------------------------------------------------------------------------

def _yn(v: bool | None) -> str:
    return "n/a (not re-derivable)" if v is None else ("yes" if v else "no")


def _diff_table(d: RunDiff) -> str:
    a, b = d.reference, d.replay
    out = []
    for role, r in (("reference", a), ("replay", b)):
        out.append(f"{role:<10} {r.run} ({r.mode}, {r.status}; evidence {r.evidence_time}; "
                   f"external calls {r.external_calls})")
    out.append(f"verdict    {d.verdict_text}")
    if d.divergence:
        dv = d.divergence
        ci = dv["changed_input"]
        out.append(f"classification    {d.classification} (structural)")
        out.append(f"first divergence  {dv['first_checkpoint']} (checkpoint {dv['checkpoint']})")
        w = max(len(a.run), len(b.run), len("changed")) + 7
        out.append(f"  {a.run + ' digest':<{w}} {dv['incident_digest']}")
        out.append(f"  {b.run + ' digest':<{w}} {dv['replay_digest']}")
        out.append(f"  {'changed input':<{w}} {ci['name']}")
        for f in ci.get("fields") or []:
            out.append(f"    {f['path']}: {json.dumps(f['a'])} → {json.dumps(f['b'])}")
        sc = ci.get("schema_change")
        if sc:
            out.append(f"    schema added: {', '.join(sc['added']) or 'none'}")
            out.append(f"    schema removed: {', '.join(sc['removed']) or 'none'}")
        if ci["name"] == "clock":
            out.append(f"    clock: {ci.get('clock_a')} → {ci.get('clock_b')}")
        if dv["downstream_changes"]:
            out.append("  downstream changes")
            out += [f"    - {x}" for x in dv["downstream_changes"]]
    out.append(f"decision reproduced  {_yn(d.decision_reproduced)}")
    e = d.effects
    out.append(f"effects    patch digests equal: {_yn(e['patch_digests_equal'])}; "
               f"committed effects equal: {_yn(e['effects_equal'])}")
    for r in d.reasons:
        out.append(f"not re-derivable: {r}")
    for n in d.notes + d.cosmetic:
        out.append(f"note: {n}")
    al = align({"A": a, "B": b}, "A")
    marks = ["·" if pd.isna(m) else ("=" if m else "≠") for m in al["B_match"]]
    first = d.divergence["first_checkpoint"] if d.divergence else None
    # "compared" says what the digests show; the last column is how the replay recorded the
    # checkpoint (a recording status, not the comparison: "ok" beside ≠ read as "no divergence")
    rows = [("", "checkpoint", a.run, "", b.run, "compared", f"{b.run} record")]
    for lbl, da, sa, m, db, sb, mt in zip(al["label"], al["A_digest"], al["A_status"], marks, al["B_digest"],
                                          al["B_status"], al["B_match"]):
        if pd.isna(sb) or pd.isna(sa):
            compared = f"only in {a.run}" if pd.isna(sb) else f"only in {b.run}"
        else:
            compared = "not compared" if pd.isna(mt) else ("same" if mt else "different")
        rows.append(("▶" if lbl == first else "", lbl,
                     "—" if pd.isna(sa) else (short(da) if not pd.isna(da) else "(none)"), m,
                     "—" if pd.isna(sb) else (short(db) if not pd.isna(db) else "(none)"), compared,
                     "—" if pd.isna(sb) else ("recorded" if sb == "ok" else sb)))
    widths = [max(len(str(r[i])) for r in rows) for i in range(7)]
    out.append("")
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(out)


@capsule.command("diff")
@click.argument("run_a", type=click.Path(exists=True, dir_okay=False))
@click.argument("run_b", type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.option("--exit-code", "exit_code", is_flag=True, help="Exit 1 when the runs diverge.")
@click.pass_context
def diff_cmd(ctx: click.Context, run_a: str, run_b: str, fmt: str, exit_code: bool) -> None:
    """Compare two runs' checkpoints: RUN_A is the reference (the incident), RUN_B the replay.

    Prints the verdict (reproduced / diverged at checkpoint N / not re-derivable), the first
    divergence and its classification.  Exit 4 when not re-derivable.
    """
    a, b = _load_run(ctx, run_a), _load_run(ctx, run_b)
    d = diff_runs(a, b)
    if fmt == "json":
        click.echo(json.dumps(d.to_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(_diff_table(d))
    if d.verdict == "not_re_derivable":
        ctx.exit(EXIT_INCOMPLETE)
    if d.verdict == "diverged" and exit_code:
        ctx.exit(EXIT_DIVERGED)


# -- build ----------------------------------------------------------------------------------------

@capsule.command("build")
@click.argument("incident", type=click.Path(exists=True))
@click.option("--evidence", "evidence", type=click.Path(exists=True, file_okay=False), default=None,
              help="The door's captured-responses folder (sha256/<hex>).")
@click.option("--repo", type=click.Path(exists=True, file_okay=False), default=None,
              help="The git checkout the agent worked in (commit + dirty tree).")
@click.option("--capture", "capture_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="capture.yaml: what the agent runtime captured (prompts, authority, image …).")
@click.option("--operation-id", default=None, help="Operation id (default: capture.yaml's, else op-<door session>).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True,
              help="Folder for capsule.yaml and its evidence store.")
@click.pass_context
def build_cmd(ctx: click.Context, incident: str, evidence: str | None, repo: str | None,
              capture_path: str | None, operation_id: str | None, out_dir: str) -> None:
    """Build a capsule from INCIDENT (incident.yaml or its folder) and print its inventory.

    The capsule written is verified at once: when its capsule.yaml (synced to disk with its
    folder entry) or any object it references cannot be read back as written (short, missing,
    unreadable, damaged), the build fails (exit 2, naming the first such file) and what it
    wrote is removed — as it is when the build ends any other way (an input it
    cannot read, a damaged door object: exit 3, Ctrl-C)."""
    from ..errors import InputError
    from .build import build_capsule, load_capture
    from .verify import verify_capsule

    from pathlib import Path

    from .._guard import stat_or_refuse

    if stat_or_refuse(Path(out_dir) / "capsule.yaml", "--out") is not None:  # a capsule is evidence: never replaced unasked
        _input_error(ctx, InputError("already holds a capsule (capsule.yaml): choose another folder, or remove "
                                     "that one first", out_dir))
        return
    try:
        from .._guard import refuse_over_evidence
        from ..incident import Incident

        inc = Incident.load(incident)
        cap = load_capture(capture_path) if capture_path else None
        # not among the evidence: inside the door's evidence store, a folder holding the
        # incident's logs, its run records or the captured files, a capsule's files would be
        # read with them (or written over them)
        holding = {(inc.root / i["path"]).parent for i in inc.loaded_inputs() if i.get("format") != "manifest"}
        places = inc.evidence_places()
        captured = cap.files if cap is not None else []
        pinned = [*places.runs.values(), *captured]  # (their folders: a capsule's files would sit among them)
        refuse_over_evidence(Path(out_dir) / "capsule.yaml", files=[*places.files, *captured],
                             folders=[*([evidence] if evidence else []), *holding, *places.folders,
                                      *{q.resolve().parent for q in pinned if q.resolve().parent != inc.root}])
        made = _made_by_build(Path(out_dir))
        try:
            built = build_capsule(inc, evidence, out_dir, repo=repo, capture=cap, operation_id=operation_id)
            # the build's own verification read back every object it wrote: hashing them all
            # again would add nothing (seconds per gigabyte of responses)
            rep = built.verification if built.verification is not None else verify_capsule(built)
            unread = _not_read_back(rep, built.store())
        except BaseException as exc:  # a half-built capsule is no capsule, whatever ended the build:
            _remove_made(made)        # an input it cannot read, a damaged door object, Ctrl-C …
            from .._guard import DISK_ERRNOS, cannot_write

            if isinstance(exc, OSError) and exc.errno in DISK_ERRNOS:  # (the capsule's folder written:
                raise cannot_write(out_dir, exc) from None                # an unreadable input is an InputError)
            raise
    except (InputError, ReadBackError) as exc:  # (capsule.yaml read back short: what was made is removed)
        _input_error(ctx, exc)
        return
    except IntegrityError as exc:
        click.echo(f"replaybook: integrity failure: {exc}", err=True)
        ctx.exit(EXIT_INTEGRITY)
        return
    if unread is not None:  # (what was written is not what is there: no capsule to hand on)
        _remove_made(made)
        from .._text import one_line

        click.echo(f"replaybook: error: the capsule just written cannot be read back: {one_line(unread)}", err=True)
        ctx.exit(EXIT_INPUT)
        return
    click.echo(str(built.path))
    click.echo(_verify_table(rep), err=True)
    for hint in build_hints(built):
        click.echo(f"replaybook: note: {hint}", err=True)


def _not_read_back(rep: VerifyReport, store) -> str | None:
    """``FILE: why`` for the first object the capsule just built references that its own
    verification found missing, unreadable, damaged or a link out of the store (with how many
    more), else ``None``.  Responses the door never captured are not among them: the capsule
    holds no object for those (no ``captured_response_ref``), and says so in its inventory."""
    o = rep.objects
    bad = o[(o["what"] != "unreferenced") & o["status"].isin(["missing", "unreadable", "mismatch", "outside"])]
    if bad.empty:
        return None
    r = next(bad.itertuples(index=False))
    why = {"missing": "not there",
           "unreadable": r.reason,
           "mismatch": f"its bytes hash to {r.actual}, not to {r.digest}",
           "outside": "a link out of the evidence store"}[r.status]
    more = f" (and {len(bad) - 1} more of its objects)" if len(bad) > 1 else ""
    return f"{store.path(r.digest)}: {why}{more}"


def _made_by_build(out: "Path") -> list["Path"]:
    """What ``capsule build`` into ``out`` will make that is not there yet: ``out`` itself, or
    else its ``capsule.yaml`` (checked absent) and its evidence store when that is new."""
    if not os.path.lexists(out):
        return [out]
    return [out / "capsule.yaml"] + ([out / "evidence"] if not os.path.lexists(out / "evidence") else [])


def _remove_made(paths: list["Path"]) -> None:
    """Remove what a failed build made (:func:`_made_by_build`); what cannot be removed stays.
    Objects the build added to an evidence store that was already there stay too (another
    build may be storing them into that shared store)."""
    import shutil

    for p in paths:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            try:
                p.unlink(missing_ok=True)
            except OSError:
                pass


def build_hints(capsule) -> list[str]:
    """What a built capsule lacks for a replay to get anywhere, and which option gives it."""
    out = []
    auth = capsule.authority
    missing = auth.missing() if hasattr(auth, "missing") else []
    if missing:
        out.append(f"authority not captured ({', '.join(missing)}): a forensic replay stops at every call "
                   "(replay_incomplete) until they are; give them in --capture (principal, scopes, "
                   "policy_version; docs/capsules.md)")
    repo = capsule.repository
    if not repo.get("commit") and not repo.get("none"):
        out.append("no repository state: a verdict cannot be re-derived (state.repository unknown); give --repo "
                   "CHECKOUT, or capture.yaml's repository: {commit, dirty_tree} — or repository: none when the "
                   "agent worked on no repository")
    return out


# -- checkpoints / verdict --------------------------------------------------------------------------

@capsule.command("incident-run")
@click.argument("capsule_path", metavar="CAPSULE", type=click.Path(exists=True))
@click.argument("incident", type=click.Path(exists=True))
@click.option("--out", "out", type=click.Path(dir_okay=False), required=True,
              help="Where to write the incident's run record (JSON, replaybook-run/1).")
@click.pass_context
def incident_run_cmd(ctx: click.Context, capsule_path: str, incident: str, out: str) -> None:
    """Write the run record of the incident itself, extracted from INCIDENT's transcript and
    door log with CAPSULE's evidence: what `capsule diff` and `capsule verdict` compare a
    forensic replay and a live verification against."""
    from .._guard import check_writable, refuse_over_evidence
    from ..errors import InputError
    from ..incident import Incident
    from .extract import incident_run
    from .model import load_capsule

    try:
        cap = load_capsule(capsule_path)
        inc = Incident.load(incident)
        # the run record goes beside the evidence, never over it: not onto a file it reads (the
        # manifest, the transcripts and door logs, capsule.yaml), not into an evidence store
        # — nor onto the forensic or live run record the manifest names (the incident's own is
        # what this writes), nor into a folder the manifest reads as logs
        places = inc.evidence_places()
        others = [p for role, p in places.runs.items() if role != "incident"]
        refuse_over_evidence(out, files=[inc.path, cap.path, *inc.listed_files("transcripts", "door"), *others],
                             folders=[cap.store_root, *_run_stores(inc), *places.holding,
                                      *(f for f in places.folders if f.resolve() != cap.path.resolve().parent)])
        check_writable(out, replaces=True)  # (a name too long, a read-only folder, a device: said before the run)
        rec = incident_run(cap, inc)
    except (InputError, CapsuleFormatError) as exc:
        _input_error(ctx, exc)
        return
    from .._guard import writing

    with writing(out):
        path = rec.save(out)
    click.echo(str(path))
    click.echo(f"{len(rec.checkpoints)} checkpoints, stop: "
               f"{next((c.detail.get('value') for c in reversed(rec.checkpoints) if c.label == 'decision.stop'), '?')}",
               err=True)

def _run_stores(inc) -> list[Path]:
    """The evidence stores of the run records the incident's ``capsule: runs:`` names and that
    exist (a live run keeps what it read); a record that cannot be read names none."""
    from .runs import load_run

    spec = inc.manifest.get("capsule") or {}
    runs = spec.get("runs") if isinstance(spec, dict) else None
    out = []
    for rel in (runs.values() if isinstance(runs, dict) else ()):
        p = inc.root / str(rel)
        if not p.is_file():
            continue
        try:
            rec = load_run(p)
        except CapsuleFormatError:
            continue
        if rec.evidence_store is not None:
            out.append(rec.evidence_store)
    return out


@capsule.command("checkpoints")
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["table", "jsonl", "csv"]), default="table", show_default=True)
@click.pass_context
def checkpoints_cmd(ctx: click.Context, runs: tuple[str, ...], fmt: str) -> None:
    """Print the checkpoints frame of one or more run records."""
    from .checkpoints import checkpoints_frame

    df = checkpoints_frame([_load_run(ctx, p) for p in runs])
    if fmt == "table":
        view = df[["run", "order", "label", "digest", "status", "ts", "summary"]].copy()
        view["digest"] = [short(x) if not pd.isna(x) else "—" for x in view["digest"]]
        with pd.option_context("display.width", 250, "display.max_colwidth", 80, "display.max_rows", None):
            click.echo(view.to_string(index=False))
        return
    df = df.copy()
    for c in ("detail", "context"):
        df[c] = [json.dumps(x, ensure_ascii=False, sort_keys=True) for x in df[c]]
    if fmt == "csv":
        click.echo(df.to_csv(index=False), nl=False)
    else:
        click.echo(df.to_json(orient="records", lines=True, date_format="iso", force_ascii=False), nl=False)


@capsule.command("verdict")
@click.argument("capsule_path", metavar="CAPSULE", type=click.Path(exists=True))
@click.option("--incident", "incident", type=click.Path(exists=True, dir_okay=False), required=True)
@click.option("--forensic", "forensic", type=click.Path(exists=True, dir_okay=False), required=True)
@click.option("--live", "live", type=click.Path(exists=True, dir_okay=False), required=True)
@click.option("--reviewer-decision", default=None, help="Record this instead of the suggested decision.")
@click.option("--format", "fmt", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True)
@click.pass_context
def verdict_cmd(ctx: click.Context, capsule_path: str, incident: str, forensic: str, live: str,
                reviewer_decision: str | None, fmt: str) -> None:
    """Print the review packet's replay_verdict, replay_results and divergence blocks."""
    from .report import review_section, to_yaml

    runs = [_load_run(ctx, p) for p in (incident, forensic, live)]
    try:
        sec = review_section(capsule_path, *runs, reviewer_decision=reviewer_decision)
    except CapsuleFormatError as exc:
        _input_error(ctx, exc)
        return
    blocks = {**sec.verdict, **sec.results, **(sec.divergence or {})}
    if fmt == "json":
        click.echo(json.dumps(blocks, indent=2, ensure_ascii=False))
    else:
        click.echo(to_yaml(blocks), nl=False)
        click.echo(sec.decision, err=True)  # (the decision in words, with why: stdout stays the blocks)
