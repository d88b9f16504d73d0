"""``replaybook capsule`` (the click group), through click's CliRunner, on the committed demo."""

from __future__ import annotations

import hashlib
import json

import pytest
from click.testing import CliRunner

from replaybook.capsule.cli import capsule

from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "data" / "capsule-demo"


def run(*args):
    return CliRunner().invoke(capsule, [str(a) for a in args])


def test_verify_the_committed_demo():
    r = run("verify", DEMO / "capsule")
    assert r.exit_code == 0, r.output
    assert "completeness: complete" in r.output
    assert "input class pinned? independently captured?" in " ".join(r.output.split())
    r = run("verify", DEMO / "capsule" / "capsule.yaml", "--format", "json")
    d = json.loads(r.output)
    assert (r.exit_code, d["completeness"], d["integrity_failures"], d["objects_checked"]) == (0, "complete", [], 12)
    assert [x["input_class"] for x in d["inventory"]][:2] == ["repository tree", "system and task prompts"]


def test_diff_the_committed_demo_runs():
    r = run("diff", DEMO / "runs" / "incident.json", DEMO / "runs" / "live.json", "--format", "json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert (d["verdict"], d["verdict_text"], d["classification"]) == ("diverged", "diverged at checkpoint 12",
                                                                      "external_evidence_drift")
    assert d["divergence"]["first_checkpoint"] == "tool_response.service_catalogue"
    assert d["divergence"]["changed_input"]["name"] == "service_catalogue.response"
    # whole digests in JSON (a script compares them); "sha256:c6dd…" could not be used
    assert [len(p) for p in d["effects"]["reference_patches"]] == [71] and d["effects"]["replay_patches"] == []
    r = run("diff", DEMO / "runs" / "incident.json", DEMO / "runs" / "live.json", "--format", "table")
    assert r.exit_code == 0
    lines = r.output.splitlines()
    assert lines[2] == "verdict    diverged at checkpoint 12"
    assert "classification    external_evidence_drift (structural)" in lines
    assert "    tags.regulated_data: false → true" in lines
    first = [x for x in lines if x.startswith("▶  tool_response.service_catalogue")]
    # the comparison is said in words beside the replay's own record status ("ok" beside ≠ read
    # as "no divergence")
    at = lines.index(first[0])
    assert len(first) == 1 and first[0].split()[-4:] == ["≠", "sha256:76cd…", "different", "recorded"]
    assert lines[at - 1].split()[-2:] == ["same", "recorded"]
    assert lines[at + 1].split()[-6:] == ["·", "—", "only", "in", "incident", "—"]
    r = run("diff", DEMO / "runs" / "incident.json", DEMO / "runs" / "forensic.json")
    assert r.exit_code == 0 and r.output.splitlines()[2] == "verdict    reproduced"
    r = run("diff", DEMO / "runs" / "incident.json", DEMO / "runs" / "live.json", "--exit-code")
    assert r.exit_code == 1


def test_verdict_block():
    r = run("verdict", DEMO / "capsule", "--incident", DEMO / "runs" / "incident.json",
            "--forensic", DEMO / "runs" / "forensic.json", "--live", DEMO / "runs" / "live.json")
    assert r.exit_code == 0, r.output
    assert r.output.startswith("replay_verdict:\n  capsule_complete: true\n  forensic_verdict: reproduced\n"
                               "  live_verdict: diverged at checkpoint 12\n")
    assert "  first_divergence: service_catalogue.response\n" in r.output
    assert "  reviewer_decision: incident_explained_by_service_catalogue_drift\n" in r.output
    assert "Suggested decision: incident_explained_by_service_catalogue_drift — the forensic replay" in r.stderr
    assert "Suggested decision" not in r.stdout  # (stdout stays the YAML blocks)


def test_integrity_failure_exits_3_and_names_the_call(committed_capsule_copy):
    cap = committed_capsule_copy
    obj = next(p for p in (cap / "evidence" / "sha256").iterdir()
               if p.name == "0482a3c6491f9d14b6c7cd72e873ca6dcfc853f40c2a04d65eb40b2d1e5e60f0")
    obj.write_bytes(obj.read_bytes().replace(b"false", b"true "))
    r = run("verify", cap)
    assert r.exit_code == 3
    assert "INTEGRITY FAILURE: call toolu_01d39b40b90e67fffe3f8481: evidence object sha256:0482" in r.output


def test_incomplete_evidence_exits_4(committed_capsule_copy):
    cap = committed_capsule_copy
    (cap / "evidence" / "sha256" / "0482a3c6491f9d14b6c7cd72e873ca6dcfc853f40c2a04d65eb40b2d1e5e60f0").unlink()
    r = run("verify", cap)
    assert r.exit_code == 4
    assert "  - MCP responses: response not in the store: toolu_01d39b40b90e67fffe3f8481" in r.output.splitlines()


def test_not_re_derivable_diff_exits_4(tmp_path):
    rec = json.loads((DEMO / "runs" / "forensic.json").read_text())
    rec.update(status="replay_incomplete", stop_reason="missing_evidence: test", checkpoints=rec["checkpoints"][:9])
    p = tmp_path / "forensic.json"
    p.write_text(json.dumps(rec))
    r = run("diff", DEMO / "runs" / "incident.json", p)
    assert r.exit_code == 4
    assert "not re-derivable: replay run 'forensic' replay_incomplete: missing_evidence: test" in r.output


@pytest.mark.parametrize("cmd", [("verify", "{bad}"), ("diff", "{bad}", "{bad}"), ("checkpoints", "{bad}")])
def test_bad_input_exits_2(tmp_path, cmd):
    bad = tmp_path / "capsule.yaml"
    bad.write_text("capsule_version: 2\n")
    r = run(*[c.replace("{bad}", str(bad)) for c in cmd])
    assert r.exit_code == 2 and "replaybook: error:" in r.output and str(bad) in r.output


def test_build_and_checkpoints_commands(demo, tmp_path):
    r = run("build", demo, "--evidence", demo / "door-evidence", "--capture", demo / "capture.yaml",
            "--out", tmp_path / "c")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "c" / "capsule.yaml").read_bytes() == (DEMO / "capsule" / "capsule.yaml").read_bytes()
    r = run("checkpoints", DEMO / "runs" / "live.json", "--format", "jsonl")
    rows = [json.loads(x) for x in r.output.splitlines()]
    assert r.exit_code == 0 and len(rows) == 13 and rows[11]["label"] == "tool_response.service_catalogue"
    r = run("checkpoints", DEMO / "runs" / "live.json")
    assert r.exit_code == 0 and "tool_response.service_catalogue" in r.output


def test_incident_run_command_writes_what_extraction_gives(demo, tmp_path):
    """The incident's run record had no command (only the Python API), so a user could not diff
    a replay against it."""
    out = tmp_path / "runs" / "incident.json"
    r = run("incident-run", demo / "capsule", demo / "incident.yaml", "--out", out)
    assert r.exit_code == 0, r.output
    assert "27 checkpoints, stop: end_turn" in r.output
    got = json.loads(out.read_text())
    committed = json.loads((DEMO / "runs" / "incident.json").read_text())
    assert [c["digest"] for c in got["checkpoints"]] == [c["digest"] for c in committed["checkpoints"]]
    r = run("diff", out, DEMO / "runs" / "forensic.json", "--format", "json")
    assert r.exit_code == 0 and json.loads(r.output)["verdict"] == "reproduced"


def test_incident_run_never_writes_over_the_evidence(demo, tmp_path):
    """``--out capsule/capsule.yaml`` replaced the capsule just read with the run record (exit 0),
    and ``verify`` then failed; a door log, the manifest or a stored object went the same way."""
    import hashlib
    import shutil

    w = tmp_path / "w"
    shutil.copytree(demo, w)

    def digests():
        return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(w.rglob("*")) if p.is_file()}

    before = digests()
    door_log = next((w / "door").rglob("*.jsonl"))
    stored = next(p for p in (w / "capsule" / "evidence").rglob("*") if p.is_file())
    run_store = next(p for p in (w / "runs" / "evidence").rglob("*") if p.is_file())  # (what the live run read)
    os_link = w / "hard.json"
    os_link.hardlink_to(stored)
    before = digests()
    for target, why in [(w / "capsule" / "capsule.yaml", "is one of the inputs"), (door_log, "is one of the inputs"),
                        (w / "incident.yaml", "is one of the inputs"), (stored, "is inside"),
                        (w / "capsule" / "evidence" / "new.json", "is inside"), (run_store, "is inside"),
                        (os_link, "is a hard link to")]:
        r = run("incident-run", w / "capsule", w / "incident.yaml", "--out", target)
        assert r.exit_code == 2, (target, r.output)
        assert why in " ".join(r.output.split()), r.output
    assert digests() == before
    for ok in (w / "runs" / "again.json", w / "capsule" / "beside.json"):  # (beside the capsule: not in its store)
        r = run("incident-run", w / "capsule", w / "incident.yaml", "--out", ok)
        assert r.exit_code == 0, r.output
    # the incident's own run record, named by the manifest, is what the command writes: missing, or
    # written again, it is no input (the guard had listed every file the manifest names, and failed)
    (w / "runs" / "incident.json").unlink()
    for _ in range(2):
        r = run("incident-run", w / "capsule", w / "incident.yaml", "--out", w / "runs" / "incident.json")
        assert r.exit_code == 0, r.output


def test_build_says_what_a_replay_will_lack(demo, tmp_path):
    """Built from a door run alone (no capture, no checkout), every forensic call would stop at
    'authority not captured' and a verdict could not be re-derived; the build says so and how."""
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", tmp_path / "c")
    assert r.exit_code == 0, r.output
    notes = [ln for ln in r.output.splitlines() if ln.startswith("replaybook: note:")]
    assert len(notes) == 2
    assert "authority not captured (scopes, policy_version): a forensic replay stops at every call" in notes[0]
    assert "--capture" in notes[0] and "no repository state" in notes[1] and "--repo" in notes[1]
    r = run("build", demo, "--evidence", demo / "door-evidence", "--capture", demo / "capture.yaml",
            "--out", tmp_path / "d")
    assert r.exit_code == 0 and "replaybook: note:" not in r.output
    before = (tmp_path / "d" / "capsule.yaml").read_bytes()
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", tmp_path / "d")  # over an existing one
    assert r.exit_code == 2 and "already holds a capsule (capsule.yaml)" in r.output
    assert (tmp_path / "d" / "capsule.yaml").read_bytes() == before


def test_a_run_record_nested_too_deeply_is_bad_input(tmp_path):
    rec = json.loads((DEMO / "runs" / "forensic.json").read_text())
    text = json.dumps(rec).replace('"detail": {', '"detail": {"x": ' + "[" * 100_000 + "]" * 100_000 + ", ", 1)
    p = tmp_path / "deep.json"
    p.write_text(text)
    for cmd in (("diff", p, DEMO / "runs" / "incident.json"), ("checkpoints", p)):
        r = run(*cmd)
        assert r.exit_code == 2, r.output
        assert "nested too deeply" in r.output and str(p) in r.output


@pytest.mark.parametrize("field, value", [
    ("evidence_store", 123), ("captured_responses_used", "abc"), ("substitutions", "abc"),
    ("checkpoints/0/ts", "garbage"), ("checkpoints/0/call_id", 5),
    # beyond 64 bits: diff and verdict had crashed (OverflowError), checkpoints named no line
    ("checkpoints/0/order", 10**40), ("captured_responses_used", 2**63)])
def test_a_run_record_field_of_the_wrong_type_is_bad_input_naming_it(tmp_path, field, value):
    """Every field a run record has is typed: a wrong one is exit 2 naming it, never an internal
    error (evidence_store: 123) nor a silent misreading (substitutions: "abc" read as 3 live reads)."""
    rec = json.loads((DEMO / "runs" / "forensic.json").read_text())
    *parents, last = field.split("/")
    at = rec
    for k in parents:
        at = at[int(k) if k.isdigit() else k]
    at[last] = value
    p = tmp_path / "bad.json"
    text = json.dumps(rec, indent=1)  # as replaybook writes records: the error names the field's line
    p.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.strip().startswith(f'"{last}": {json.dumps(value)}'))
    for cmd in (("diff", DEMO / "runs" / "incident.json", p), ("checkpoints", p)):
        r = run(*cmd)
        assert r.exit_code == 2, r.output
        assert f"{p}:{line}: not a replaybook-run/1 record at {field}:" in r.output


@pytest.mark.parametrize("edit, message, key", [
    (lambda t: t.replace('"checkpoints":', '"checkpionts":'),
     "at (top level): 'checkpoints' is a required property; unknown key 'checkpionts' (did you mean "
     "'checkpoints'?)", '"checkpionts":'),
    (lambda t: t.replace('"status": "completed"', '"statuz": "completed"', 1),
     "at (top level): 'status' is a required property; unknown key 'statuz' (did you mean 'status'?)",
     '"statuz":'),
])
def test_a_misspelt_run_record_key_is_named_with_its_line(tmp_path, edit, message, key):
    """A run record's errors name file and line like capsule.yaml's, and the key meant."""
    text = edit((DEMO / "runs" / "live.json").read_text())
    p = tmp_path / "live.json"
    p.write_text(text)
    line = text[:text.index(key)].count("\n") + 1
    assert line > 1
    r = run("checkpoints", p)
    assert r.exit_code == 2, r.output
    assert f"{p}:{line}: not a replaybook-run/1 record {message}" in r.output


def test_a_run_record_lacking_a_checkpoint_field_names_the_checkpoint_line(tmp_path):
    rec = json.loads((DEMO / "runs" / "live.json").read_text())
    del rec["checkpoints"][1]["status"]
    text = json.dumps(rec, indent=1)
    p = tmp_path / "live.json"
    p.write_text(text)
    # the second checkpoint's opening brace: the object that lacks the key
    at = text.index('"checkpoints": [')
    second = text.index("  {", text.index("  {", at) + 1)
    r = run("checkpoints", p)
    assert r.exit_code == 2, r.output
    assert (f"{p}:{text[:second].count(chr(10)) + 1}: not a replaybook-run/1 record at checkpoints/1: "
            "'status' is a required property") in r.output


def test_checkpoints_listed_out_of_order_are_bad_input(tmp_path):
    """Listed in reverse with their own orders, the diff said "diverged at checkpoint 1" at a row
    that shows the same digest on both sides: it walks the list as written."""
    rec = json.loads((DEMO / "runs" / "incident.json").read_text())
    rec["checkpoints"] = rec["checkpoints"][::-1]
    p = tmp_path / "reversed.json"
    text = json.dumps(rec, indent=1)
    p.write_text(text)
    second = text.index('"order"', text.index('"order"') + 1)
    line = text[:second].count("\n") + 1
    n = len(rec["checkpoints"])
    for cmd in (("diff", DEMO / "runs" / "incident.json", p), ("checkpoints", p)):
        r = run(*cmd)
        assert r.exit_code == 2, r.output
        assert (f"{p}:{line}: not a replaybook-run/1 record at checkpoints/1/order: {n - 1} follows {n}; checkpoints "
                "are listed in their order, each once (was the record edited?)") in " ".join(r.output.split())


def test_verify_says_what_is_in_a_missing_objects_place(tmp_path):
    """A pipe where an object should be was "missing" without a word why (and reading it would
    wait for ever): verify names it, and the capsule stays unproven (exit 4)."""
    import os
    import shutil

    import yaml

    w = tmp_path / "demo"
    shutil.copytree(DEMO, w)
    digest = yaml.safe_load((w / "capsule" / "capsule.yaml").read_text())["repository"]["dirty_tree_digest"]
    victim = w / "capsule" / "evidence" / "sha256" / digest.removeprefix("sha256:")
    victim.unlink()
    os.mkfifo(victim)
    response = yaml.safe_load((w / "capsule" / "capsule.yaml").read_text())["tool_evidence"][0]
    place = w / "capsule" / "evidence" / "sha256" / response["response_digest"].removeprefix("sha256:")
    place.unlink()
    place.mkdir()
    r = run("verify", w / "capsule")
    assert r.exit_code == 4, r.output
    assert (f"missing object: repository.dirty-tree ({digest}): something that is not a file (a folder, a pipe) is "
            "in its place") in r.output
    assert ("MCP responses: response's place in the store holds something that is not a file (a folder, a pipe): "
            f"{response['call_id']}") in r.output


def test_build_never_puts_a_capsule_among_the_evidence(demo, tmp_path):
    """``--out`` inside the door's log folder or its evidence store had added capsule.yaml and an
    evidence/ folder there, among the files the incident reads."""
    import shutil

    w = tmp_path / "w"
    shutil.copytree(demo, w)
    door_folder = next((w / "door").rglob("*.jsonl")).parent
    for out in (door_folder / "cap", w / "door-evidence" / "cap"):
        r = run("build", w / "incident.yaml", "--evidence", w / "door-evidence", "--capture", w / "capture.yaml",
                "--out", out)
        assert r.exit_code == 2, r.output
        assert "whose files are evidence and never written over" in " ".join(r.output.split())
        assert not out.exists()
    r = run("build", w / "incident.yaml", "--evidence", w / "door-evidence", "--capture", w / "capture.yaml",
            "--out", w / "capsule2")
    assert r.exit_code == 0, r.output


def test_incident_run_and_build_keep_off_run_records_capture_files_and_log_folders(tmp_path):
    """`incident-run --out runs/live.json` had replaced the live run record the manifest names,
    and `--out door/deployer/x.json` written among the door logs; `build --out capture` (or
    `runs`) had put a capsule among the captured files and run records it pins."""
    import hashlib
    import shutil

    w = tmp_path / "w"
    shutil.copytree(DEMO, w)

    def digests():
        return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(w.rglob("*")) if p.is_file()}

    before = digests()
    door_dir = next(p for p in (w / "door").iterdir() if p.is_dir())
    for target, why in [(w / "runs" / "live.json", "is one of the inputs"),
                        (w / "runs" / "forensic.json", "is one of the inputs"),
                        (door_dir / "x.json", "is inside")]:
        r = run("incident-run", w / "capsule", w / "incident.yaml", "--out", target)
        assert r.exit_code == 2, (target, r.output)
        assert why in " ".join(r.output.split()), r.output
    for out in ("capture", "runs", "capture/sub"):
        r = run("build", w / "incident.yaml", "--evidence", w / "door-evidence", "--capture", w / "capture.yaml",
                "--out", w / out)
        assert r.exit_code == 2, (out, r.output)
        assert "whose files are evidence and never written over" in " ".join(r.output.split()), r.output
    assert digests() == before
    r = run("build", w / "incident.yaml", "--evidence", w / "door-evidence", "--capture", w / "capture.yaml",
            "--out", tmp_path / "elsewhere")
    assert r.exit_code == 0, r.output


def test_build_takes_a_relative_capture_path_as_an_absolute_one(tmp_path, monkeypatch):
    """With `--capture inc/capture.yaml` (relative) the folder holding it had been taken for one
    the capsule pins files in: every --out under the incident was refused."""
    import shutil

    shutil.copytree(DEMO, tmp_path / "inc")
    monkeypatch.chdir(tmp_path)
    r = run("build", "inc", "--evidence", "inc/door-evidence", "--capture", "inc/capture.yaml", "--out", "inc/capsule2")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "inc" / "capsule2" / "capsule.yaml").is_file()
    monkeypatch.chdir(tmp_path / "inc")
    r = run("build", ".", "--evidence", "door-evidence", "--capture", "capture.yaml", "--out", "capsule3")
    assert r.exit_code == 0, r.output
    r = run("build", ".", "--evidence", "door-evidence", "--capture", "capture.yaml", "--out", "capture/c")
    assert r.exit_code == 2 and "whose files are evidence" in " ".join(r.output.split()), r.output


def test_incident_run_out_that_cannot_be_written_is_bad_usage(demo, tmp_path):
    """A name too long ended `incident-run` with an internal error; a device as --out was
    replaced by the run record (a file renamed over it)."""
    import os

    r = run("incident-run", demo / "capsule", demo / "incident.yaml", "--out", tmp_path / ("a" * 300 + ".json"))
    assert r.exit_code == 2 and "File name too long" in r.output, r.output
    dev = tmp_path / "fifo"
    os.mkfifo(dev)
    r = run("incident-run", demo / "capsule", demo / "incident.yaml", "--out", dev)
    assert r.exit_code == 2 and "not a regular file" in r.output, r.output
    assert not dev.is_file() and dev.exists()


def _policy_run(name: str, result: str, digit: str, conditions) -> dict:
    return {"format": "replaybook-run/1", "run": name, "mode": "forensic", "status": "completed", "checkpoints": [
        {"order": 1, "kind": "policy", "key": "svc", "digest": "sha256:" + digit * 64, "status": "ok",
         "detail": {"result": result, "policy_version": "p1", "principal": "x", "scopes": ["s"]},
         "context": {"conditions": conditions}}]}


@pytest.mark.parametrize("conditions", [["clock"], "clock", 5])
def test_policy_conditions_that_are_not_an_object_are_bad_input_not_an_internal_error(tmp_path, conditions):
    """A policy checkpoint whose ``context.conditions`` was a list or a string made ``capsule diff``
    crash (AttributeError, exit 1) where it looked for a clock condition: the record is refused
    naming the line, like every other field of the wrong type; and ``diff_runs`` on runs built in
    memory (no schema check) reads such conditions as none known, never raising."""
    from replaybook.capsule import diff_runs
    from replaybook.capsule.runs import RunRecord

    paths = []
    for name, result, digit in (("a", "allow", "1"), ("b", "deny", "2")):
        text = json.dumps(_policy_run(name, result, digit, conditions), indent=1)
        p = tmp_path / f"{name}.json"
        p.write_text(text)
        paths.append(p)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.strip().startswith('"conditions":'))
    r = run("diff", *paths)
    assert r.exit_code == 2, r.output
    assert (f"{paths[0]}:{line}: not a replaybook-run/1 record at checkpoints/0/context/conditions: "
            f"{conditions!r} is not of type 'object', 'null'") in r.output
    runs = [RunRecord.from_dict(_policy_run(n, res, d, conditions)) for n, res, d in (("a", "allow", "1"),
                                                                                     ("b", "deny", "2"))]
    d = diff_runs(*runs)
    assert (d.verdict, d.checkpoint, d.classification) == ("diverged", 1, "policy_drift")
    assert d.divergence["changed_input"]["name"] == "svc.policy"
    assert (d.divergence["changed_input"]["a"], d.divergence["changed_input"]["b"]) == (
        {"result": "allow", "rule": None}, {"result": "deny", "rule": None})
    # an object holding a clock condition is still read as one
    clocked = [RunRecord.from_dict(_policy_run(n, res, d, {"clock": f"2026-01-0{d}T00:00:00Z"}))
               for n, res, d in (("a", "allow", "1"), ("b", "deny", "2"))]
    d = diff_runs(*clocked)
    assert d.classification == "clock_boundary"
    assert (d.divergence["changed_input"]["clock_a"], d.divergence["changed_input"]["clock_b"]) == (
        "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z")


@pytest.mark.parametrize("existed", [False, True])
def test_a_full_disk_while_building_is_said_and_leaves_no_half_built_capsule(demo, tmp_path, monkeypatch, existed):
    """A disk that filled up while the evidence store was written had ended `capsule build` with
    "internal error: OSError", exit 1, and left a half-built store in the folder."""
    import errno

    from replaybook.capsule import build

    def build_capsule(inc, evidence, out_dir, **kw):
        store = Path(out_dir) / "evidence" / "sha256"
        store.mkdir(parents=True)
        (store / ("ab" * 32)).write_bytes(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(build, "build_capsule", build_capsule)
    out = tmp_path / "c"
    if existed:
        out.mkdir()
        (out / "README").write_text("mine")
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", out)
    assert r.exit_code == 2 and f"cannot write {out}: No space left on device" in r.output
    assert (sorted(p.name for p in out.iterdir()) == ["README"]) if existed else not out.exists()


def _eio_on(monkeypatch, failing, how):
    """From when ``capsule build`` starts building (the incident is loaded), the disk answers an
    I/O error (EIO) on reading the file ``failing(path)`` picks: at ``open``, or at ``stat``."""
    import builtins
    import errno
    import os

    from replaybook.capsule import build

    real_build, real_open, real_stat = build.build_capsule, builtins.open, os.stat

    def fake_open(file, mode="r", *a, **kw):
        if "r" in mode and not isinstance(file, int) and failing(Path(file)):
            raise OSError(errno.EIO, "Input/output error")
        return real_open(file, mode, *a, **kw)

    def fake_stat(path, *a, **kw):
        if not isinstance(path, int) and failing(Path(path)):
            raise OSError(errno.EIO, "Input/output error", str(path))
        return real_stat(path, *a, **kw)

    def build_capsule(*a, **kw):
        monkeypatch.setattr(builtins, "open", fake_open)
        if how == "stat":
            monkeypatch.setattr(os, "stat", fake_stat)
        return real_build(*a, **kw)

    monkeypatch.setattr(build, "build_capsule", build_capsule)


@pytest.mark.parametrize("what, how", [("store object", "open"), ("store object", "stat"), ("door log", "open"),
                                       ("transcript", "open")])
def test_an_io_error_reading_the_doors_evidence_is_said_as_a_read_of_that_file(demo, tmp_path, monkeypatch,
                                                                              what, how):
    """An I/O error on reading an object of the door's evidence store (or the door's log, read
    again to be kept in the capsule) was said as "cannot write <out>" — the reader looked for a
    fault on the disk written to — or ended in exit 1; one on the transcript's prompt line left
    the prompt cut short in the capsule, unsaid.  Each names the file that could not be read,
    exits 2, and leaves no half-built capsule."""
    target = {"store object": demo / "door-evidence" / "sha256" /
                              "f1008b3dadcf93bb0075ac7c5c692651e5031bae3ced2aa52d41e794a4df5017",
              "door log": demo / "door" / "deployer" / "door-20260913T164203-d1.jsonl",
              "transcript": demo / "transcripts" / "9eca9def-ae83-5f09-8d79-7ead15ceeee1.jsonl"}[what]
    _eio_on(monkeypatch, lambda p: p.name == target.name, how)
    out = tmp_path / "c"
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", out)
    assert r.exit_code == 2, (r.output, r.exception)
    assert f"replaybook: error: cannot read {target}: Input/output error" in r.output
    assert "cannot write" not in r.output
    assert not out.exists()


def test_an_io_error_writing_the_capsule_is_still_said_as_a_write(demo, tmp_path, monkeypatch):
    """The same error on the disk written to stays "cannot write <out>"."""
    import errno
    import os

    def fsync(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", fsync)
    out = tmp_path / "c"
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", out)
    assert r.exit_code == 2 and f"cannot write {out}: Input/output error" in r.output
    assert "cannot read" not in r.output and not out.exists()



def _eio_reading(monkeypatch, failing):
    """The disk answers an I/O error (EIO) on opening for reading any file ``failing(path)`` picks."""
    import builtins
    import errno

    real_open = builtins.open

    def fake_open(file, mode="r", *a, **kw):
        if "r" in mode and not isinstance(file, int) and failing(Path(file)):
            raise OSError(errno.EIO, "Input/output error")
        return real_open(file, mode, *a, **kw)

    monkeypatch.setattr(builtins, "open", fake_open)


def test_verify_says_an_object_that_cannot_be_read_is_not_missing(tmp_path, monkeypatch):
    """An object whose file is there but that the disk cannot read was "missing object: …", the
    investigator's word for never captured: it is "cannot be read: <why>", counted apart from the
    missing ones, and the capsule stays unproven (exit 4, as for a missing object)."""
    import shutil

    import yaml

    w = tmp_path / "demo"
    shutil.copytree(DEMO, w)
    cap = yaml.safe_load((w / "capsule" / "capsule.yaml").read_text())
    task = cap["prompts"]["task_digest"]
    call = cap["tool_evidence"][0]
    bad = {task.removeprefix("sha256:"), call["response_digest"].removeprefix("sha256:")}
    _eio_reading(monkeypatch, lambda p: p.name in bad)
    r = run("verify", w / "capsule")
    assert r.exit_code == 4, r.output
    out = " ".join(r.output.split())
    assert f"unreadable object: prompt.task ({task}): cannot be read: Input/output error" in out
    assert (f"unreadable object: call {call['call_id']} ({call['response_digest']}): cannot be read: "
            "Input/output error") in out
    assert "task prompt cannot be read from the store: Input/output error" in out
    assert f"MCP responses: response in the store cannot be read: {call['call_id']}" in out
    assert "objects checked: 12; integrity failures: 0; missing: 0; cannot be read: 2" in out
    assert "missing object" not in out and "not in the store" not in out
    r = run("verify", w / "capsule", "--format", "json")
    d = json.loads(r.output)
    assert (r.exit_code, d["completeness"], d["missing_objects"]) == (4, "unproven", 0)
    assert d["unreadable_objects"] == [
        {"what": "prompt.task", "call_id": None, "digest": task, "reason": "Input/output error"},
        {"what": f"call {call['call_id']}", "call_id": call["call_id"], "digest": call["response_digest"],
         "reason": "Input/output error"}]


def _eio_on_written_objects(monkeypatch, out):
    """Once the build has written its objects (it verifies the capsule: reads them back), the
    disk answers an I/O error (EIO) on reading any object of the evidence store written into
    ``out``."""
    from replaybook.capsule import verify

    real_verify = verify.verify_capsule
    store = (Path(out) / "evidence" / "sha256").resolve()

    def verify_capsule(*a, **kw):
        _eio_reading(monkeypatch, lambda p: p.resolve().parent == store)
        return real_verify(*a, **kw)

    monkeypatch.setattr(verify, "verify_capsule", verify_capsule)


@pytest.mark.parametrize("existed", [False, True])
def test_a_capsule_that_cannot_be_read_back_is_a_failed_build(demo, tmp_path, monkeypatch, existed):
    """With the disk failing to read back the objects just written, `capsule build` printed
    "missing: 6", exited 0 and left the capsule in place, as if built: it is a failed build
    naming the first object's file, and what the build wrote is removed (nothing else)."""
    import yaml

    out = tmp_path / "c"
    if existed:
        out.mkdir()
        (out / "README").write_text("mine")
    _eio_on_written_objects(monkeypatch, out)
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", out)
    assert r.exit_code == 2, (r.output, r.exception)
    monkeypatch.undo()
    task = yaml.safe_load((demo / "capsule" / "capsule.yaml").read_text())["prompts"]["task_digest"][7:]
    assert r.output.strip().splitlines() == [
        f"replaybook: error: the capsule just written cannot be read back: {out / 'evidence' / 'sha256' / task}: "
        "Input/output error (and 5 more of its objects)"]
    assert (sorted(p.name for p in out.iterdir()) == ["README"]) if existed else not out.exists()


def test_a_response_the_door_never_captured_leaves_the_build_a_success(demo, tmp_path):
    """A response the door's store lacks is not an object of the capsule: the capsule says so in
    its inventory, and the build succeeds."""
    import shutil

    import yaml

    door = tmp_path / "door-evidence"
    shutil.copytree(demo / "door-evidence", door)
    call = yaml.safe_load((demo / "capsule" / "capsule.yaml").read_text())["tool_evidence"][0]
    (door / "sha256" / call["response_digest"].removeprefix("sha256:")).unlink()
    out = tmp_path / "c"
    r = run("build", demo, "--evidence", door, "--out", out)
    assert r.exit_code == 0, r.output
    assert f"MCP responses: response not in the store: {call['call_id']}" in " ".join(r.output.split())
    assert "cannot be read back" not in r.output and (out / "capsule.yaml").is_file()


def test_a_capsule_whose_object_reads_back_changed_is_a_failed_build(demo, tmp_path, monkeypatch):
    """An object that reads back with other bytes than were written fails the build the same way."""
    import os

    import yaml

    from replaybook.capsule import verify

    real_verify = verify.verify_capsule
    out = tmp_path / "c"
    task = yaml.safe_load((demo / "capsule" / "capsule.yaml").read_text())["prompts"]["task_digest"]
    victim = out / "evidence" / "sha256" / task[7:]

    def verify_capsule(*a, **kw):  # (once written, before it is read back)
        os.chmod(victim, 0o644)
        victim.write_bytes(b"other bytes")
        return real_verify(*a, **kw)

    monkeypatch.setattr(verify, "verify_capsule", verify_capsule)
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", out)
    assert r.exit_code == 2, (r.output, r.exception)
    assert r.output.strip().splitlines() == [
        f"replaybook: error: the capsule just written cannot be read back: {victim}: its bytes hash to "
        f"sha256:{hashlib.sha256(b'other bytes').hexdigest()}, not to {task}"]
    assert not out.exists()


def _capsule_yaml_written_short(monkeypatch):
    """The disk keeps only the first half of what is written to the capsule.yaml being saved
    (its temporary file ``.capsule-*``), while saying all of it was written — the evidence
    objects are written whole."""
    import os

    real_fdopen = os.fdopen

    class Short:
        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            self.fh.write(data[:len(data) // 2])
            return len(data)

        def __enter__(self):
            self.fh.__enter__()
            return self

        def __exit__(self, *exc):
            return self.fh.__exit__(*exc)

        def __getattr__(self, name):
            return getattr(self.fh, name)

    def fdopen(fd, *a, **kw):
        fh = real_fdopen(fd, *a, **kw)
        return Short(fh) if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(".capsule-") else fh

    monkeypatch.setattr(os, "fdopen", fdopen)


@pytest.mark.parametrize("existed", [False, True])
def test_a_capsule_yaml_that_reads_back_short_is_a_failed_build(demo, tmp_path, monkeypatch, existed):
    """The build read back every evidence object it wrote, but not capsule.yaml: a manifest the
    disk kept only half of was "built" (exit 0), its path printed.  It is read back and compared
    with what was meant: a failed build naming the file (exit 2), and what the build wrote is
    removed (nothing else)."""
    out = tmp_path / "c"
    if existed:
        out.mkdir()
        (out / "README").write_text("mine")
    _capsule_yaml_written_short(monkeypatch)
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", out)
    monkeypatch.undo()
    assert r.exit_code == 2, (r.output, r.exception)
    failed = r.output
    assert (sorted(p.name for p in out.iterdir()) == ["README"]) if existed else not out.exists()
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", out)  # (the same --out, again)
    assert r.exit_code == 0, r.output
    meant = len((out / "capsule.yaml").read_bytes())
    assert meant > 1000
    assert failed.strip().splitlines() == [
        f"replaybook: error: the capsule just written cannot be read back: {out / 'capsule.yaml'}: "
        f"{meant // 2} bytes read back, {meant} written"]


def test_a_capsule_yaml_that_cannot_be_read_back_is_a_failed_build(demo, tmp_path, monkeypatch):
    """The disk answering an I/O error on reading the capsule.yaml just written: a failed build
    naming the file with the system's reason, as for an object."""
    out = tmp_path / "c"
    _eio_reading(monkeypatch, lambda p: p == out / "capsule.yaml")
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", out)
    monkeypatch.undo()
    assert r.exit_code == 2, (r.output, r.exception)
    assert r.output.strip().splitlines() == [
        f"replaybook: error: the capsule just written cannot be read back: {out / 'capsule.yaml'}: "
        "Input/output error"]
    assert not out.exists()


def test_the_capsule_yaml_built_is_fsynced_with_its_folder_entry(demo, tmp_path, monkeypatch):
    """capsule.yaml was renamed into place unsynced: a crash after the build said it succeeded
    could leave it empty or absent.  Its bytes are synced before the rename, the folder entry
    the rename made after it (as the final capsule.yaml, the one read back)."""
    events = _fsyncs_and_renames(monkeypatch)
    out = tmp_path / "c"
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", out)
    monkeypatch.undo()
    assert r.exit_code == 0, r.output
    saves = [i for i, e in enumerate(events) if e[0] == "replace" and e[2] == str(out / "capsule.yaml")]
    assert len(saves) == 2  # (written, then written again with the completeness its verification found)
    for i in saves:
        tmp = events[i][1]
        assert Path(tmp).parent == out and Path(tmp).name.startswith(".capsule-")
        assert events[i - 1] == ("fsync", tmp)             # its bytes, before the rename
        assert events[i + 1] == ("fsync", str(out))        # the folder entry the rename made


def _fsyncs_and_renames(monkeypatch, fail_folder=None):
    """Record every ``fsync`` (by the path of the file or folder synced) and ``os.replace`` in
    order; a folder's ``fsync`` raises ``fail_folder`` (an errno) when one is given."""
    import os
    import stat

    events = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        if fail_folder is not None and stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(fail_folder, os.strerror(fail_folder))
        return real_fsync(fd)

    def replace(src, dst, *a, **kw):
        events.append(("replace", str(src), str(dst)))
        return real_replace(src, dst, *a, **kw)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return events


@pytest.mark.parametrize("shared", [False, True])
def test_the_evidence_stores_folders_are_fsynced_once_before_capsule_yaml(demo, tmp_path, monkeypatch, shared):
    """Each evidence object's bytes were synced before its rename, but not the folders the
    renames wrote: a crash after the build said it succeeded could leave a capsule.yaml naming
    objects that are gone.  The store's sha256/ folder and the store's own folder are synced
    once each, after the last object is in place and before capsule.yaml is written — also
    for a store another capsule already filled."""
    import os

    out = tmp_path / "c"
    if shared:  # (a store that holds another build's objects: kept, and synced all the same)
        assert run("build", demo, "--evidence", demo / "door-evidence", "--out", tmp_path / "first").exit_code == 0
        out.mkdir()
        (out / "evidence").symlink_to(tmp_path / "first" / "evidence")
    events = _fsyncs_and_renames(monkeypatch)
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", out)
    monkeypatch.undo()
    assert r.exit_code == 0, (r.output, r.exception)
    root = os.path.realpath(out / "evidence")
    objects, store = os.path.join(root, "sha256"), root
    synced = [e[1] for e in events if e[0] == "fsync"]
    assert (synced.count(objects), synced.count(store)) == (1, 1)
    at = {e: i for i, e in enumerate(events)}
    put = [i for i, e in enumerate(events) if e[0] == "replace" and os.path.dirname(e[2]) == objects]
    assert len(put) == (0 if shared else len(os.listdir(objects))) and (shared or len(put) > 5)
    first_yaml = next(i for i, e in enumerate(events) if e[0] == "replace" and e[2] == str(out / "capsule.yaml"))
    assert max(put, default=-1) < at[("fsync", objects)] < at[("fsync", store)] < first_yaml
    assert sorted(p.name for p in out.iterdir()) == ["capsule.yaml", "evidence"]


@pytest.mark.parametrize("err", ["EINVAL", "ENOTSUP"])
def test_a_file_system_that_cannot_sync_folders_still_builds(demo, tmp_path, monkeypatch, err):
    """A file system that keeps no folder state to sync answers EINVAL or ENOTSUP to a folder's
    fsync: the build goes on, as it does for capsule.yaml's folder."""
    import errno

    _fsyncs_and_renames(monkeypatch, fail_folder=getattr(errno, err))
    out = tmp_path / "c"
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", out)
    monkeypatch.undo()
    assert r.exit_code == 0, (r.output, r.exception)
    assert r.output.splitlines()[0] == str(out / "capsule.yaml")
    assert json.loads(run("verify", out, "--format", "json").output)["integrity_failures"] == []


@pytest.mark.parametrize("existed", [False, True])
def test_an_io_error_syncing_the_evidence_store_is_a_failed_build(demo, tmp_path, monkeypatch, existed):
    """An I/O error syncing the store's folders is the disk written to failing: "cannot write
    <out>" (exit 2), and what the build made is removed — nothing that was there before."""
    import errno

    out = tmp_path / "c"
    if existed:
        out.mkdir()
        (out / "README").write_text("mine")
    _fsyncs_and_renames(monkeypatch, fail_folder=errno.EIO)
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", out)
    monkeypatch.undo()
    assert r.exit_code == 2 and f"cannot write {out}: Input/output error" in r.output, (r.output, r.exception)
    assert (sorted(p.name for p in out.iterdir()) == ["README"]) if existed else not out.exists()


def _door_copy_with_last_response_damaged(demo, tmp_path):
    """A copy of the demo's door evidence whose last call's response no longer hashes to its
    digest (the earlier calls' responses are written to the capsule before it is met)."""
    import shutil

    import yaml

    door = tmp_path / "door-evidence"
    shutil.copytree(demo / "door-evidence", door)
    last = yaml.safe_load((demo / "capsule" / "capsule.yaml").read_text())["tool_evidence"][-1]
    victim = door / "sha256" / last["response_digest"].removeprefix("sha256:")
    victim.chmod(0o644)
    victim.write_bytes(b'{"changed": true}')
    return door, last


@pytest.mark.parametrize("existed", [False, True])
def test_a_damaged_door_response_fails_the_build_leaving_no_half_built_capsule(demo, tmp_path, existed):
    """A door response that does not hash to its digest ends the build as an integrity failure
    (exit 3) — and the responses written before it was met had been left in --out, a capsule
    store without its capsule.yaml: what the build wrote is removed, nothing else."""
    door, last = _door_copy_with_last_response_damaged(demo, tmp_path)
    out = tmp_path / "c"
    if existed:
        out.mkdir()
        (out / "README").write_text("mine")
    r = run("build", demo, "--evidence", door, "--out", out)
    assert r.exit_code == 3, (r.output, r.exception)
    assert f"replaybook: integrity failure: evidence object {last['response_digest']} for call" in r.output
    assert (sorted(p.name for p in out.iterdir()) == ["README"]) if existed else not out.exists()


@pytest.mark.parametrize("when", ["writing", "verifying"])
def test_a_build_interrupted_leaves_no_half_built_capsule(demo, tmp_path, monkeypatch, when):
    """A build stopped with Ctrl-C after it had written objects (or its capsule.yaml, before
    verifying it) left them in --out: a store without a capsule.yaml, or a capsule.yaml never
    verified that the next build into that folder refuses to replace."""
    from replaybook.capsule import store, verify

    out = tmp_path / "c"
    if when == "writing":
        real_put, n = store.EvidenceStore.put, []

        def put(self, data):
            n.append(1)
            if len(n) == 5:
                raise KeyboardInterrupt
            return real_put(self, data)

        monkeypatch.setattr(store.EvidenceStore, "put", put)
    else:
        def verify_capsule(*a, **kw):
            raise KeyboardInterrupt

        monkeypatch.setattr(verify, "verify_capsule", verify_capsule)
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", out)
    assert r.exit_code != 0 and isinstance(r.exception, SystemExit) and "Aborted!" in r.output
    assert not out.exists()
    monkeypatch.undo()
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", out)
    assert r.exit_code == 0, r.output



def test_an_object_already_in_the_out_store_that_cannot_be_read_is_said_by_its_file(demo, tmp_path, monkeypatch):
    """--out's evidence store already holding an object the build stores (two capsules sharing a
    store), whose file the disk cannot read: the build ended in exit 1, naming only the store's
    folder, and left the objects it had written.  It says "cannot read <that file>", exits 2
    and removes what it wrote — never the store's own objects."""
    import shutil

    import yaml

    out = tmp_path / "c"
    shutil.copytree(demo / "capsule" / "evidence", out / "evidence")
    before = sorted(p.name for p in (out / "evidence" / "sha256").iterdir())
    task = yaml.safe_load((demo / "capsule" / "capsule.yaml").read_text())["prompts"]["task_digest"][7:]
    target = out / "evidence" / "sha256" / task
    _eio_reading(monkeypatch, lambda p: p == target)
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", out)
    monkeypatch.undo()
    assert r.exit_code == 2, (r.output, r.exception)
    assert r.output.strip().splitlines() == [f"replaybook: error: cannot read {target}: Input/output error"]
    assert sorted(p.name for p in out.iterdir()) == ["evidence"]
    assert sorted(p.name for p in (out / "evidence" / "sha256").iterdir()) == before


def test_a_build_reads_each_object_it_wrote_back_once(demo, tmp_path, monkeypatch):
    """The build verified the capsule it had written (to say its completeness in capsule.yaml),
    then `capsule build` verified it again to print the table: every object was read back and
    hashed twice — seconds per gigabyte of responses, for no new answer.  Once is enough; the
    table printed is the same."""
    from collections import Counter

    from replaybook.capsule import store

    read = Counter()
    real = store._hash_file

    def hash_file(path):
        read[Path(path).name] += 1
        return real(path)

    monkeypatch.setattr(store, "_hash_file", hash_file)
    out = tmp_path / "c"
    r = run("build", demo, "--evidence", demo / "door-evidence", "--capture", demo / "capture.yaml", "--out", out)
    assert r.exit_code == 0, r.output
    written = sorted(p.name for p in (out / "evidence" / "sha256").iterdir())
    assert len(written) == 12 and read == Counter({name: 1 for name in written})
    monkeypatch.undo()
    again = run("verify", out)
    table = again.output[again.output.index("\n"):]  # (after the line naming the capsule's path)
    assert again.exit_code == 0 and table.strip() and table in r.output
    assert "capsule declares" not in r.output


def test_verify_says_a_response_whose_file_cannot_be_looked_up_cannot_be_read(tmp_path, monkeypatch):
    """An I/O error on looking a response's file up (stat) ended `capsule verify` in a traceback
    (exit 1): the object is unreadable, as when opening it fails, and the capsule unproven."""
    import errno
    import os
    import shutil

    import yaml

    w = tmp_path / "demo"
    shutil.copytree(DEMO, w)
    call = yaml.safe_load((w / "capsule" / "capsule.yaml").read_text())["tool_evidence"][0]
    bad = call["response_digest"].removeprefix("sha256:")
    real_stat = os.stat

    def fake_stat(path, *a, **kw):
        if not isinstance(path, int) and Path(path).name == bad:
            raise OSError(errno.EIO, "Input/output error", str(path))
        return real_stat(path, *a, **kw)

    monkeypatch.setattr(os, "stat", fake_stat)
    r = run("verify", w / "capsule")
    monkeypatch.undo()
    assert r.exit_code == 4, (r.output, r.exception)
    out = " ".join(r.output.split())
    assert (f"unreadable object: call {call['call_id']} ({call['response_digest']}): cannot be read: "
            "Input/output error") in out
    assert f"MCP responses: response in the store cannot be read: {call['call_id']}" in out
    assert "objects checked: 12; integrity failures: 0; missing: 0; cannot be read: 1" in out
    assert "not a file" not in out and "not in the store" not in out


@pytest.mark.parametrize("err", ["EACCES", "EPERM"])
def test_a_folder_that_cannot_be_opened_for_reading_is_not_synced_and_the_build_goes_on(demo, tmp_path, monkeypatch,
                                                                                       err):
    """A folder the builder may write but not read (mode 0333) cannot be opened to sync it: the
    entries are made all the same, so the build goes on (it had succeeded before folders were
    synced, and a build into such an ``--out`` must not become an internal error)."""
    import errno
    import os

    real_open = os.open

    def refusing_open(path, flags, *a, **k):
        if flags & getattr(os, "O_DIRECTORY", 0) or os.path.isdir(path):
            raise OSError(getattr(errno, err), os.strerror(getattr(errno, err)), str(path))
        return real_open(path, flags, *a, **k)

    monkeypatch.setattr(os, "open", refusing_open)
    out = tmp_path / "c"
    r = run("build", demo, "--evidence", demo / "door-evidence", "--out", out)
    monkeypatch.undo()
    assert r.exit_code == 0, (r.output, r.exception)
    assert r.output.splitlines()[0] == str(out / "capsule.yaml")
    assert json.loads(run("verify", out, "--format", "json").output)["integrity_failures"] == []
