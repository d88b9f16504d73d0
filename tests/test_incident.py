import hashlib
import json
import os
import re
from pathlib import Path

import pandas as pd

import pytest

import replaybook
from replaybook.errors import InputError, ManifestError

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures"
DEMO = ROOT / "data" / "demo" / "incident.yaml"


def test_demo_incident_loads_and_joins():
    inc = replaybook.Incident.load(DEMO)
    assert inc.title.startswith("Demo:")
    assert inc.data_root == (ROOT / "data" / "demo" / "data").resolve()
    assert inc.window_s == 60.0
    assert len(inc.calls) == 9 and (inc.calls.decision == "deny").sum() == 1
    assert (inc.steps.kind == "tool_call").sum() == 10  # 5 + 4 door calls + 1 built-in Read
    assert inc.quarantine.empty
    assert {i["format"] for i in inc.inputs} == {"manifest", "claude-code", "door", "aws.cloudtrail"}
    assert len(inc.inputs) == 8 and all(len(i["sha256"]) == 64 for i in inc.inputs)
    assert inc.inputs[0]["path"] == "incident.yaml" and inc.inputs[0]["format"] == "manifest"
    res = inc.join
    sess = res.sessions.set_index("door_session")
    assert list(sess.status) == ["matched", "matched"]
    assert sess.agreed.tolist() == [5, 4]
    # the second session (50 s later, same first three calls) gets its own transcript
    assert sess.transcript_id.nunique() == 2
    assert len(res.unmatched_transcripts) == 1
    # door clock: 400 ms skew + 350 ms dispatch
    assert res.offset_ms == pytest.approx(750.0)


def test_manifest_errors_name_the_field(tmp_path):
    (tmp_path / "incident.yaml").write_text("title: x\n")
    with pytest.raises(ManifestError, match="'transcripts' is a required property"):
        replaybook.Incident.load(tmp_path)
    # a transcripts-only incident needs no door key (it had to say `door: []`)
    (tmp_path / "incident.yaml").write_text("title: x\ntranscripts: []\n")
    assert replaybook.Incident.load(tmp_path).calls.empty
    (tmp_path / "incident.yaml").write_text("title: x\ntranscripts: [t/*.jsonl]\ndoor: [d/]\n")
    with pytest.raises(ManifestError, match="matches no file"):
        replaybook.Incident.load(tmp_path)
    # an empty folder is said the same way (it read as "0 requests", a clean-looking result)
    (tmp_path / "d" / "agent").mkdir(parents=True)
    (tmp_path / "incident.yaml").write_text("title: x\ntranscripts: []\ndoor: [d/]\n")
    with pytest.raises(ManifestError, match="'d/' is an empty folder: no file in it to read"):
        replaybook.Incident.load(tmp_path)
    (tmp_path / "d" / "agent" / "s.jsonl").write_text("")
    assert replaybook.Incident.load(tmp_path).calls.empty  # a file, even empty, is evidence listed
    (tmp_path / "incident.yaml").write_text("title: [unclosed\n")
    with pytest.raises(ManifestError, match="not valid YAML") as e:
        replaybook.Incident.load(tmp_path / "incident.yaml")
    assert e.value.path.endswith("incident.yaml")
    # the file and line are named once; PyYAML's own '"<byte string>", line 1' is not repeated
    (tmp_path / "incident.yaml").write_text("title: x\ntranscripts:\n  - a\n door: [b\n")
    with pytest.raises(ManifestError) as e:
        replaybook.Incident.load(tmp_path / "incident.yaml")
    assert e.value.line_no == 4 and "<byte string>" not in str(e.value)
    assert ("not valid YAML: expected <block end>, but found '<block mapping start>' (column 2), in a block "
            "mapping that starts on line 1: 'door: [b'") in str(e.value)
    with pytest.raises(ManifestError, match="cannot read"):
        replaybook.Incident.load(tmp_path / "missing.yaml")
    # YAML reads UTF-16 with its byte-order mark as it reads UTF-8 (an internal error before)
    (tmp_path / "incident.yaml").write_bytes("title: café\ntranscripts: []\n".encode("utf-16"))
    assert replaybook.Incident.load(tmp_path).title == "café"
    (tmp_path / "incident.yaml").write_bytes(b"title: caf\xe9\ntranscripts: []\n")  # Latin-1, not UTF-8
    with pytest.raises(ManifestError, match=r"not UTF-8 text .*: byte 10 \(invalid continuation byte\)"):
        replaybook.Incident.load(tmp_path)
    # a window YAML spells .inf or .nan is not a number of seconds (the report failed in a cell)
    for bad, says in ((".inf", "1000000000"), (".nan", "nan is not a number of seconds"), ("1.0e+300", "1000000000")):
        (tmp_path / "incident.yaml").write_text(f"title: x\ntranscripts: []\nwindow_s: {bad}\n")
        with pytest.raises(ManifestError, match=says):
            replaybook.Incident.load(tmp_path)
    # a transcript's clock offset is a number of seconds
    for bad, says in (("{t1: .nan}", "clock_offsets/t1: nan is not a number of seconds"),
                      ("{t1: soon}", "invalid manifest at clock_offsets/t1"), ("[7200]", "clock_offsets")):
        (tmp_path / "incident.yaml").write_text(f"title: x\ntranscripts: []\nclock_offsets: {bad}\n")
        with pytest.raises(ManifestError, match=says):
            replaybook.Incident.load(tmp_path)
    # a data root that is not there: every object would read "missing … not on disk now"
    (tmp_path / "incident.yaml").write_text("title: x\ntranscripts: []\ndata_root: ../nope/\n")
    with pytest.raises(ManifestError, match=r"data_root '../nope/' is not a folder \(looked for "):
        replaybook.Incident.load(tmp_path)
    # a misspelt key is named, with its line and the key meant (it had said 'transcripts' is required)
    (tmp_path / "incident.yaml").write_text("title: x\ntranscript: [t.jsonl]\n")
    with pytest.raises(ManifestError) as e:
        replaybook.Incident.load(tmp_path)
    assert str(e.value) == f"{tmp_path / 'incident.yaml'}:2: unknown key 'transcript' (did you mean 'transcripts'?)"
    # a misspelt format: its line and the name meant (it had said only "unknown source format")
    (tmp_path / "incident.yaml").write_text("title: x\ntranscripts:\n  - t.jsonl\n"
                                            "  - {path: more/, format: claude_code}\n")
    with pytest.raises(ManifestError) as e:
        replaybook.Incident.load(tmp_path)
    assert str(e.value) == (f"{tmp_path / 'incident.yaml'}:4: transcripts: unknown format 'claude_code' "
                            "(did you mean 'claude-code'?) (`replaybook sources` lists every format)")
    (tmp_path / "incident.yaml").write_text("")
    with pytest.raises(ManifestError, match="it needs title: and transcripts:; door: is optional"):
        replaybook.Incident.load(tmp_path)


def test_the_demo_lead_names_the_wrong_figure_the_right_one_and_what_was_queried_instead():
    """The lead said the agent "answered with a wrong number" without the number, and that the
    second session "queried cars.xpt instead" without saying instead of what.  It now gives the
    figures the evidence holds: each file's mean as the data root has it, the result each session's
    query got and the answer each gave, as their transcripts say."""
    inc = replaybook.Incident.load(DEMO)
    lead = " ".join(inc.manifest["description"].split())
    xpt = pd.read_sas(inc.data_root / "demo" / "cars.xpt", format="xport", encoding="infer")
    parquet = pd.read_parquet(inc.data_root / "demo" / "cars.parquet")
    assert (f"{parquet['mpg'].mean():.2f}", f"{xpt['mpg'].mean():.2f}") == ("19.90", "20.35")
    assert len(parquet) - len(xpt) == 3
    sess = inc.join.sessions.set_index("door_session")["transcript_id"]
    t = inc.steps

    def said(door_session: str, kind: str) -> list[str]:
        own = t[(t["transcript_id"] == sess[door_session]) & (t["kind"] == kind)]
        return [x for x in own["text" if kind != "tool_call" else "result_text"] if isinstance(x, str) and x]

    first, second = "door-20260913T100005-a1", "door-20260913T100052-b7"
    assert said(first, "model_request")[-1] == "The average mpg of the cars in demo/ is 19.90."
    assert said(second, "model_request")[-1] == "The average mpg is 20.35 (from cars.xpt)."
    assert "avg_mpg\n19.9000" in said(first, "tool_call") and "mpg mean 20.35, cyl mode 8" in said(first, "tool_call")
    assert "avg_mpg\n20.3500" in said(second, "tool_call")
    assert lead.startswith("Asked 'what is the average mpg of the cars in demo/?', the analyst agent answered 19.90: "
                           "its query of cars.parquet, an export made for dashboards that holds 3 rows twice, "
                           "returned 19.9000, while cars.xpt, which demo/README.txt names the source of truth, gives "
                           "20.35, as the agent's own summary of it had said.")
    assert "then queried cars.xpt instead of cars.parquet and answered 20.35." in lead
    assert "source of truth" in (inc.data_root / "demo" / "README.txt").read_text(encoding="utf-8")
    # the third transcript is not the analyst's: another conversation, with no door call
    other = t[t["transcript_id"] == inc.join.unmatched_transcripts[0]]
    assert other.loc[other["kind"] == "user_prompt", "text"].tolist() == ["Rename the variables in utils.py"]
    assert other.loc[other["kind"] == "tool_call", "tool"].tolist() == ["Read"]
    assert lead.endswith("The third transcript is another conversation (renaming variables in utils.py) that made "
                         "no door call.")


def test_demo_incident_cloudtrail_lane_and_unexplained_access():
    inc = replaybook.Incident.load(DEMO)
    assert inc.has_access and len(inc.access) == 10
    assert set(inc.access.source) == {"aws.cloudtrail"}
    digest = [i for i in inc.inputs if i.get("skipped")]
    assert len(digest) == 1 and "CloudTrail-Digest" in digest[0]["path"]
    aj = inc.access_join
    # every allowed door call reached storage once; the refused .env call never left the door
    assert len(aj.links) == 8
    per = aj.per_call.set_index(["door_session", "seq"])
    assert per.loc[("door-20260913T100005-a1", 5), "access_count"] == 0
    # the door's own role read reference/.env at 10:03:12 with no door call behind it
    first = aj.unexplained.iloc[0]
    assert first.resource_uri == "s3://acme-data/reference/.env" and bool(first.door_principal)
    assert str(first.ts) == "2026-09-13 10:03:12+00:00"
    assert len(aj.unexplained) == 2


def test_capsule_demo_incident_carries_its_verdict():
    inc = replaybook.Incident.load(ROOT / "data" / "capsule-demo" / "incident.yaml")
    assert inc.has_capsule and not inc.has_access
    sec = inc.capsule_section()
    assert sec.completeness == "complete"
    v = sec.verdict["replay_verdict"]
    assert v["forensic_decision_reproduced"] is True and v["live_decision_reproduced"] is False
    assert v["live_verdict"] == "diverged at checkpoint 12"
    d = sec.divergence["divergence"]
    assert d["classification"] == "external_evidence_drift"
    assert d["first_checkpoint"] == "tool_response.service_catalogue"
    assert replaybook.Incident.load(DEMO).capsule_section() is None


def test_a_capsule_without_all_three_runs_shows_its_inventory_and_what_is_missing(tmp_path):
    """`capsule: {path: …}` alone (a user's own capsule, before any replay) had stopped the
    report ("capsule.runs needs incident, forensic and live run records")."""
    import shutil

    from replaybook.report import sections as S

    demo = ROOT / "data" / "capsule-demo"
    for part in ("transcripts", "door", "capsule", "runs"):
        shutil.copytree(demo / part, tmp_path / part)
    text = (demo / "incident.yaml").read_text()
    head, _, _ = text.partition("capsule:")
    (tmp_path / "incident.yaml").write_text(head + "capsule:\n  path: capsule/capsule.yaml\n"
                                            "  runs:\n    incident: runs/incident.json\n")
    sec = replaybook.Incident.load(tmp_path).capsule_section()
    assert (sec.completeness, list(sec.runs), sec.missing) == ("complete", ["incident"], ["forensic", "live"])
    h = S.capsule_section(replaybook.Incident.load(tmp_path))
    assert "No verdict yet" in h and "incident (completed, 27 checkpoints)" in h
    assert "forensic: the run record <code>replaybook serve-capsule CAPSULE --record forensic.json</code>" in h
    (tmp_path / "incident.yaml").write_text(head + "capsule:\n  path: capsule/capsule.yaml\n")
    sec = replaybook.Incident.load(tmp_path).capsule_section()
    assert sec.missing == ["incident", "forensic", "live"] and len(sec.inventory) > 0


def _capsule_copy(tmp_path) -> Path:
    """A writable copy of data/capsule-demo (transcripts, door logs, capsule, runs, manifest)."""
    import shutil

    demo = ROOT / "data" / "capsule-demo"
    for part in ("transcripts", "door", "capsule", "runs"):
        shutil.copytree(demo / part, tmp_path / part)
    shutil.copy(demo / "incident.yaml", tmp_path / "incident.yaml")
    return tmp_path / "incident.yaml"


@pytest.mark.parametrize("old, new, where", [
    ("live: runs/live.json", "live: runs/lve.json", "capsule: runs: live: 'runs/lve.json' does not exist"),
    ("path: capsule/capsule.yaml", "path: capsule/capsul.yaml",
     "capsule: path: 'capsule/capsul.yaml' does not exist"),
])
def test_a_missing_capsule_or_run_file_is_said_before_loading_with_its_manifest_line(tmp_path, old, new, where):
    # found only once the notebook had run ~10 s, with no manifest line ("capsule: /…/lve.json
    # does not exist (no report written: the notebook stopped in cell 18)")
    m = _capsule_copy(tmp_path)
    text = m.read_text().replace(old, new)
    m.write_text(text)
    inc = replaybook.Incident.load(m)  # (capsule build loads an incident before its capsule exists)
    with pytest.raises(ManifestError) as e:
        inc.check_inputs()  # what `replaybook report` runs before a kernel starts
    assert e.value.message == f"{where} (looked for {tmp_path / new.split(': ')[1]})"
    assert (e.value.path, e.value.line_no) == (str(m), text[:text.index(new)].count("\n") + 1)


def test_a_malformed_run_record_is_refused_before_the_report_runs(tmp_path):
    from replaybook.capsule.errors import CapsuleFormatError

    m = _capsule_copy(tmp_path)
    p = tmp_path / "runs" / "forensic.json"
    text = p.read_text().replace('"checkpoints":', '"checkpionts":')
    p.write_text(text)
    inc = replaybook.Incident.load(m)  # (the file is there: reading it is check_inputs' part)
    with pytest.raises(CapsuleFormatError, match="unknown key 'checkpionts'") as e:
        inc.check_inputs()
    assert (e.value.path, e.value.line_no) == (str(p), text[:text.index('"checkpionts"')].count("\n") + 1)


def test_the_capsules_files_are_inputs_with_their_sha256(tmp_path):
    # the Replay capsule section is built from them, yet Inputs and the .sha256 file had listed
    # none: sha256sum -c could not show the replay evidence intact
    import hashlib
    import os

    from replaybook.capsule.model import load_capsule
    from replaybook.report.checksums import checksum_entries

    m = _capsule_copy(tmp_path)
    inc = replaybook.Incident.load(m)
    cap = [r for r in inc.inputs if str(r["format"] or "").startswith("capsule")]
    refs = load_capsule(tmp_path / "capsule")
    digests = [ev.response_digest for ev in refs.tool_evidence if ev.response_digest]
    assert [(r["path"], r["format"]) for r in cap[:4]] == [
        ("capsule/capsule.yaml", "capsule manifest"), ("runs/incident.json", "capsule run record"),
        ("runs/forensic.json", "capsule run record"), ("runs/live.json", "capsule run record")]
    assert [r["note"] for r in cap[1:4]] == ["the incident run", "the forensic run", "the live run"]
    objs = {r["path"]: r for r in cap[4:]}
    assert all(r["format"] == "capsule evidence object" for r in objs.values())
    for d in digests:  # every captured response, by its path in the store
        assert f"capsule/evidence/sha256/{d.removeprefix('sha256:')}" in objs
    sums = dict(checksum_entries(inc.inputs))
    for path in ["capsule/capsule.yaml", "runs/live.json", *objs]:
        assert sums[path] == hashlib.sha256((tmp_path / path).read_bytes()).hexdigest()
    # an object the store lacks: listed with a note, no SHA-256 (nothing to check)
    gone = f"capsule/evidence/sha256/{digests[0].removeprefix('sha256:')}"
    os.chmod(tmp_path / gone, 0o644)
    (tmp_path / gone).unlink()
    row = next(r for r in replaybook.Incident.load(m).inputs if r["path"] == gone)
    assert row["sha256"] is None and row["note"].endswith("not in the evidence store")
    assert gone not in dict(checksum_entries(replaybook.Incident.load(m).inputs))


def test_a_capsule_object_that_cannot_be_read_is_an_input_said_so(tmp_path, monkeypatch):
    # an object the disk could not read was listed as "not in the evidence store": an
    # investigator reads that as never captured
    import builtins
    import errno

    from replaybook.capsule.model import load_capsule
    from replaybook.report.checksums import checksum_entries

    m = _capsule_copy(tmp_path)
    d = load_capsule(tmp_path / "capsule").prompts["task_digest"].removeprefix("sha256:")
    real_open = builtins.open

    def fake_open(file, mode="r", *a, **kw):
        if "r" in mode and not isinstance(file, int) and Path(file).name == d:
            raise OSError(errno.EIO, "Input/output error")
        return real_open(file, mode, *a, **kw)

    monkeypatch.setattr(builtins, "open", fake_open)
    rows = replaybook.Incident.load(m).inputs
    row = next(r for r in rows if r["path"] == f"capsule/evidence/sha256/{d}")
    assert (row["sha256"], row["note"]) == (
        None, "prompt.task: in the evidence store, but cannot be read: Input/output error")
    assert row["path"] not in dict(checksum_entries(rows))


def test_packet_in_the_manifest_reaches_the_report_section(tmp_path):
    import shutil

    from replaybook.report import sections as S

    shutil.copytree(ROOT / "data" / "demo", tmp_path / "demo")
    claims = ROOT / "tests" / "fixtures" / "packet" / "claims"
    shutil.copy(claims / "session.jsonl", tmp_path / "demo" / "session.jsonl")
    shutil.copy(claims / "PR_BODY.md", tmp_path / "demo" / "PR_BODY.md")
    m = tmp_path / "demo" / "incident.yaml"
    m.write_text(m.read_text() + "packet:\n  log: session.jsonl\n  body: PR_BODY.md\n")
    inc = replaybook.Incident.load(m)
    summary = inc.packet_summary()
    findings = summary["claims"][summary["claims"].status == "finding"]
    assert sorted(zip(findings.seq, findings.kind)) == [(3, "cites_failing_step"), (7, "cites_missing_step")]
    cwd = os.getcwd()
    try:
        os.chdir(os.sep)  # (paths sharing no folder but the root with it are shown as given)
        html = S.packet_section(summary)
    finally:
        os.chdir(cwd)
    assert "cites_failing_step" in html and "Replay packet" in html
    assert "2 findings, 1 warning, 2 of 4 [seq:N] markers accepted." in html  # markers, not steps
    assert S.packet_section(replaybook.Incident.load(DEMO).packet_summary()) == ""
    # the report runs no replay: it says so, and how to run one, naming the packet's own files
    log, body = summary["log_path"], summary["body_path"]
    assert "../" not in log and log.endswith("demo/session.jsonl") and body.endswith("demo/PR_BODY.md")
    assert (f"This report does not replay them: run <code>replaybook packet replay {log} --body {body} "
            "--require-head --head-ignore PR_BODY.md</code> in the repository") in html
    # rendered from the manifest's folder (as `replaybook report` runs the notebook): the manifest's own paths
    try:
        os.chdir(tmp_path / "demo")
        assert ("run <code>replaybook packet replay session.jsonl --body PR_BODY.md --require-head --head-ignore "
                "PR_BODY.md</code> in the repository") in S.packet_section(summary)
    finally:
        os.chdir(cwd)
    assert "unless a replay was run" not in html
    # the log's chain is shown whatever its state, not only when damaged (this log is unchained)
    assert "Session log chain: unchained — the log carries no digest chain" in html
    assert "Session log chain: intact — every line carries the digest" in S.packet_section({**summary, "chain": "chained"})


def test_manifest_lists_are_read_by_content_or_by_named_format(tmp_path):
    # a Codex rollout under transcripts and a gateway log under door are read by their own
    # loaders (sniffed, or named with {path, format}); a file in the wrong list is an error
    fx = ROOT / "tests" / "fixtures"
    codex = fx / "codex" / "envelope"
    gw = fx / "gateways" / "mcpjungle" / "audit.log"
    m = tmp_path / "incident.yaml"
    m.write_text(f"title: t\ntranscripts: ['{codex}']\ndoor: [{{path: '{gw}', format: mcpjungle}}]\n")
    inc = replaybook.Incident.load(m)
    assert set(inc.steps["client"]) == {"codex"} and len(inc.steps) > 0
    assert len(inc.calls) > 0 and inc.calls["door_session"].str.startswith("mcpjungle:").all()
    m.write_text(f"title: t\ntranscripts: ['{codex}']\ndoor: ['{gw}']\n")
    assert len(replaybook.Incident.load(m).calls) == len(inc.calls)  # sniffed the same
    m.write_text(f"title: t\ntranscripts: ['{gw}']\ndoor: ['{gw}']\n")
    with pytest.raises(ManifestError, match="transcripts: files that are not transcripts"):
        replaybook.Incident.load(m).steps
    m.write_text(f"title: t\ntranscripts: ['{codex}', '{gw}']\ndoor: ['{gw}']\n")
    with pytest.raises(ManifestError, match="files that are not transcripts"):
        replaybook.Incident.load(m).steps
    # the error names the line of the entry that holds the file, not the list's first line
    m.write_text(f"title: t\ntranscripts:\n  - '{codex}'\n  - '{gw}'\ndoor: ['{gw}']\n")
    for load in (lambda: replaybook.Incident.load(m).steps, lambda: replaybook.Incident.load(m).check_inputs()):
        with pytest.raises(ManifestError) as e:
            load()
        assert str(e.value).startswith(f"{m}:4: transcripts: files that are not transcripts")


def test_a_forced_format_that_reads_nothing_is_named_in_inputs(tmp_path):
    """{path, format} forcing a gateway format on a transcript: the report's Inputs row for it
    says that nothing was read as that format, and how many lines were left out."""
    log = ROOT / "tests" / "fixtures" / "claude_code" / "flat-agent" / "dddddddd-7777-4777-8777-dddddddddddd.jsonl"
    m = tmp_path / "incident.yaml"
    m.write_text(f"title: t\ntranscripts: ['{log}']\ndoor: [{{path: '{log}', format: gatekit}}]\n")
    inc = replaybook.Incident.load(m)
    assert len(inc.calls) == 0 and len(inc.steps) > 0
    rows = [r for r in inc.inputs if r["format"] == "gatekit"]
    assert len(rows) == 1
    n = sum(1 for line in log.read_bytes().splitlines() if line.strip())
    assert rows[0]["note"] == (f"{n} records of other kinds ignored; "
                               "nothing in it was read as gatekit: is it another format?")
    read = [r for r in inc.inputs if r["format"] == "claude-code"]
    assert read and read[0]["note"] is None
    assert rows[0]["read_nothing"] is True and read[0]["read_nothing"] is False
    # and before any kernel starts, report warns on stderr (the format was asked for: not refused)
    assert inc.check_inputs() == [f"door: {log} is forced to gatekit but reads as claude-code (steps); "
                                  "gatekit may find nothing in it"]


def test_check_inputs_finds_a_file_in_the_wrong_list_without_loading_it(tmp_path, monkeypatch):
    """``check_inputs`` (run by ``replaybook report`` before a kernel starts) sniffs, loads
    nothing, and says exactly what loading would say."""
    fx = ROOT / "tests" / "fixtures"
    codex = fx / "codex" / "envelope"
    gw = fx / "gateways" / "mcpjungle" / "audit.log"
    m = tmp_path / "incident.yaml"
    m.write_text(f"title: t\ntranscripts: ['{codex}', '{gw}']\ndoor: ['{gw}']\n")
    with pytest.raises(ManifestError) as loading:
        replaybook.Incident.load(m).steps
    from dataclasses import replace

    from replaybook.sources import registry

    def no_loading(*args, **kwargs):
        raise AssertionError("check_inputs loaded a file")

    for name in registry.names():
        monkeypatch.setitem(registry._REGISTRY, name, replace(registry.get(name), load=no_loading))
    with pytest.raises(ManifestError) as checking:
        replaybook.Incident.load(m).check_inputs()
    assert str(checking.value) == str(loading.value)
    assert f"{gw}: mcpjungle (calls)" in str(checking.value)
    m.write_text(f"title: t\ntranscripts: ['{codex}']\ndoor: ['{gw}']\n")
    replaybook.Incident.load(m).check_inputs()  # every file in its list: nothing to say
    m.write_text(f"title: t\ntranscripts: ['{codex}']\ndoor: [{{path: '{codex}', format: codex}}]\n")
    # said when the manifest is read, with its line and where the entry belongs (it had named no
    # line and said "yields steps", leaving the user to work out the remedy)
    with pytest.raises(ManifestError) as wrong_list:
        replaybook.Incident.load(m)
    assert wrong_list.value.line_no == 3
    assert ("door: format 'codex' reads transcripts, not door or gateway call logs: move the entry under "
            "transcripts:, or name a format of door or gateway call logs") in str(wrong_list.value)


def test_demo_report_access_section_names_the_operation_and_says_yes_or_no():
    from replaybook.report import sections as S

    inc = replaybook.Incident.load(DEMO)
    h = S.access_section(inc.access_join, inc.access)
    un = h[h.index("Requests no door call explains"):h.index("How requests were linked")]
    assert "<th>operation</th>" in un and "<code>GetBucketAcl</code>" in un and "<code>GetObject</code>" in un
    assert ">yes<" in un and ">True<" not in un and ">False<" not in un
    # the nearest call on the object was the door's refusal: said, since that is the alarm
    assert ("(nearest: session door-20260913T100005-a1 seq 5, which the door refused (rule no-dotenv), "
            "111 s after that call)") in un
    # where each came from: the .env read from the same address and client as the door's own
    # requests (the server behind the door), the ACL read from an AWS service
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", un)[1:]
    origin = [re.sub("<[^>]+>", "", re.findall(r"<td[^>]*>(.*?)</td>", r)[7]) for r in rows]
    assert origin == ["198.51.100.7 · warehouse-files-mcp/0.4 (boto3)same address and client as the requests door "
                      "calls explain: consistent with a request from the door's side (the server behind it, or its "
                      "host) rather than credentials used elsewhere — not proof: a client names itself, and an "
                      "address can be shared", "config.amazonaws.com"]


def test_source_ip_from_each_cloud_log():
    from replaybook.access_join import source_ip

    assert source_ip({"sourceIPAddress": "198.51.100.7"}) == "198.51.100.7"
    assert source_ip({"sourceIPAddress": "config.amazonaws.com"}) is None  # a service, not an address
    assert source_ip({"remote_ip": "203.0.113.9"}) == "203.0.113.9" and source_ip({"remote_ip": "-"}) is None
    assert source_ip({"protoPayload": {"requestMetadata": {"callerIp": "2001:db8::1"}}}) == "2001:db8::1"
    assert source_ip({"callerIpAddress": "192.0.2.4:53122"}) == "192.0.2.4:53122"
    assert source_ip(None) is None and source_ip({"x": 1}) is None


def test_inputs_list_every_file_given_with_notes_and_paths_as_the_report_shows_them(tmp_path):
    # a file no source recognises is evidence too: listed with its hash and why nothing was
    # read; quarantine paths are written as inputs paths; "a/../b" is normalised
    import hashlib

    demo = ROOT / "data" / "demo"
    (tmp_path / "case").mkdir()
    junk = tmp_path / "case" / "junk.jsonl"
    junk.write_bytes(bytes(range(256)) * 4)
    m = tmp_path / "case" / "incident.yaml"
    m.write_text(f"title: t\ntranscripts: ['../../{tmp_path.name}/case/junk.jsonl', '{demo}/transcripts']\n"
                 f"door: ['{demo}/door']\n")
    inc = replaybook.Incident.load(m)
    row = next(i for i in inc.inputs if i["path"] == "junk.jsonl")
    assert row["sha256"] == hashlib.sha256(junk.read_bytes()).hexdigest() and row["bytes"] == 1024
    assert row["format"] is None and row["note"] == "skipped: no source recognised this content"
    assert inc.quarantine.loc[inc.quarantine["loader"] == "auto", "source_file"].tolist() == ["junk.jsonl"]
    assert not any(".." in i["path"] for i in inc.inputs)
    # a file read with every line set aside says so beside its hash
    bad = tmp_path / "case" / "bad.jsonl"
    bad.write_text("{bad\n{worse\n")
    m.write_text(f"title: t\ntranscripts: ['{demo}/transcripts', {{path: bad.jsonl, format: claude-code}}]\n"
                 f"door: ['{demo}/door']\n")
    inc = replaybook.Incident.load(m)
    assert next(i for i in inc.inputs if i["path"] == "bad.jsonl")["note"] == "2 lines set aside (see Quarantine)"
    digest = [i for i in replaybook.Incident.load(demo / "incident.yaml").inputs if "Digest" in i["path"]]
    assert [i["note"] for i in digest] == ["skipped: CloudTrail digest file (no Records)"]


def test_access_section_keeps_other_services_events_apart_from_storage_requests():
    # a trail holds IAM/STS/compute events too: they were counted as "storage requests" and
    # listed first, burying the storage requests no door call explains
    from replaybook.access_join import join_access, on_storage
    from replaybook.report import sections as S

    inc = replaybook.Incident.load(DEMO)
    acc = inc.access
    extra = acc.iloc[[0, 0, 0]].copy()
    extra["resource_uri"] = pd.array(["arn:aws:iam::123456789012:role/x"] * 3, dtype="string")
    extra["action_raw"] = pd.array(["AssumeRole"] * 3, dtype="string")
    extra["principal"] = pd.array(["config.amazonaws.com"] * 3, dtype="string")
    extra["request_id"] = pd.array(["IAM1", "IAM2", "IAM3"], dtype="string")  # three events, three requests
    both = pd.concat([acc, extra], ignore_index=True)
    res = join_access(inc.calls, both, storage_map=inc.manifest.get("storage_map"),
                      principals=inc.manifest.get("principals"))
    h = S.access_section(res, both)
    n_storage = sum(map(on_storage, acc["resource_uri"]))
    assert n_storage == len(acc) == 10
    assert f"hold <b>13 events</b>: <b>{n_storage}</b> on storage (objects and buckets, what the door's calls reach) and 3 on other services" in h
    first = h[h.index("Requests no door call explains"):h.index("Other cloud events")]
    assert "AssumeRole" not in first and "GetObject" in first
    other = h[h.index("Other cloud events (3 events, not on storage)"):h.index("How requests were linked")]
    assert re.search(r"<code>AssumeRole</code></td><td><code>config.amazonaws.com</code></td><td class=\"num\">3</td>", other)


def test_a_file_named_on_its_own_in_no_known_format_is_an_error(tmp_path, capsys):
    """`transcripts: [/etc/passwd]` had rendered a report with 0 steps; a glob or a folder may
    hold other files (a README), a file named on its own is meant."""
    from replaybook.cli import main

    junk = tmp_path / "notes.txt"
    junk.write_text("root:x:0:0:root:/root:/bin/bash\n")
    m = tmp_path / "incident.yaml"
    m.write_text(f"title: t\ntranscripts: ['{junk}']\n")
    with pytest.raises(ManifestError, match=r"incident.yaml:2: transcripts: notes.txt: no format replaybook reads "
                       r"recognises this file"):
        replaybook.Incident.load(m).check_inputs()
    assert main(["report", str(m), "--out", str(tmp_path / "r")]) == 2
    assert "no format replaybook reads recognises this file" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
    m.write_text("title: t\ntranscripts: ['*.txt']\n")  # a glob of nothing but such files: said too
    with pytest.raises(ManifestError, match=r"transcripts: '\*\.txt' holds no transcripts replaybook reads"):
        replaybook.Incident.load(m).check_inputs()
    (tmp_path / "s.txt").write_bytes((FIX / "join_trap" / "transcripts" /
                                      "11111111-aaaa-4aaa-8aaa-111111111111.jsonl").read_bytes())
    assert replaybook.Incident.load(m).check_inputs() == []  # beside a transcript: left to the Inputs table


def _manifest_error(path) -> ManifestError:
    with pytest.raises(ManifestError) as e:
        replaybook.Incident.load(path).check_inputs()
    return e.value


def test_a_key_written_twice_is_an_error_with_both_lines(tmp_path):
    """A second ``transcripts:`` block had silently replaced the first (PyYAML keeps the last):
    transcript A was never read and its door session showed "unmatched"."""
    (tmp_path / "a.jsonl").write_bytes((FIX / "join_trap" / "transcripts" /
                                        "11111111-aaaa-4aaa-8aaa-111111111111.jsonl").read_bytes())
    m = tmp_path / "incident.yaml"
    m.write_text("title: x\ntranscripts:\n  - a.jsonl\ndoor: []\ntranscripts:\n  - b.jsonl\n")
    e = _manifest_error(m)
    assert (e.line_no, e.message) == (5, "key 'transcripts' is written twice (lines 2 and 5); YAML keeps only the "
                                         "last, so what the first holds would be ignored: merge them into one")
    # in a nested mapping too (a storage_map prefix written twice keeps one URI)
    m.write_text('title: x\ntranscripts: [a.jsonl]\nstorage_map:\n  "demo/": s3://a/\n  "demo/": s3://b/\n')
    assert _manifest_error(m).line_no == 5
    # YAML merge keys are not duplicates
    m.write_text('title: x\ntranscripts: [a.jsonl]\nprincipals: &p {analyst: "arn:x"}\n'
                 'storage_map: {<<: {"d/": "s3://a/d/"}, "e/": "s3://a/e/"}\n')
    assert replaybook.Incident.load(m).manifest["storage_map"] == {"d/": "s3://a/d/", "e/": "s3://a/e/"}


def test_path_and_field_errors_name_the_manifest_line(tmp_path):
    m = tmp_path / "incident.yaml"
    m.write_text("title: x\ntranscripts:\n  - t/\ndoor:\n  - dorr/\n")
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "a.jsonl").write_text("")
    e = _manifest_error(m)
    assert (e.line_no, e.message) == (5, f"door: 'dorr/' does not exist (looked for {tmp_path / 'dorr'})")
    m.write_text("title: x\ntranscripts: [t/]\n\nwindow_s: sixty\n")
    e = _manifest_error(m)
    assert (e.line_no, e.message) == (4, "invalid manifest at window_s: 'sixty' is not of type 'number'")
    m.write_text("title: x\ntranscripts: [t/]\ndata_root: dta/\n")
    assert _manifest_error(m).line_no == 3


def test_an_entry_holding_no_file_of_its_kind_is_an_error(tmp_path):
    """A transcripts folder holding only notes had given a clean-looking "0 transcripts" report."""
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "notes.txt").write_text("what I saw\n")
    m = tmp_path / "incident.yaml"
    m.write_text("title: x\ntranscripts:\n  - t/\n")
    e = _manifest_error(m)
    assert e.line_no == 3
    assert e.message == ("transcripts: 't/' holds no transcripts replaybook reads (1 file: notes.txt: no source "
                         "recognised this content); `replaybook load auto` shows what each file is")
    # one file it reads (or an empty one: a session just begun) is enough
    (tmp_path / "t" / "s.jsonl").write_text("")
    assert replaybook.Incident.load(m).check_inputs() == []


def test_a_transcript_given_as_the_manifest_is_named(tmp_path):
    tr = tmp_path / "s.jsonl"
    tr.write_bytes((FIX / "join_trap" / "transcripts" / "11111111-aaaa-4aaa-8aaa-111111111111.jsonl").read_bytes())
    e = _manifest_error(tr)
    assert e.message == ("this is a claude-code file (steps), not an incident manifest: name it under transcripts: "
                         "in an incident.yaml, or read it with `replaybook load steps s.jsonl`")


def test_every_manifest_error_names_the_manifest_as_the_user_gave_it(tmp_path, monkeypatch):
    """A schema error and a missing input of one manifest name it the same way (one had said
    ``/abs/incident.yaml:2``, the other ``incident.yaml:4``)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "incident.yaml").write_text("title: x\ntranscripts: [nope/*.jsonl]\n")
    with pytest.raises(ManifestError) as missing:
        replaybook.Incident.load("incident.yaml")
    (tmp_path / "incident.yaml").write_text("title: x\ntranscripts: []\nwindow_s: -1\n")
    with pytest.raises(ManifestError) as schema:
        replaybook.Incident.load("incident.yaml")
    assert str(missing.value).startswith("incident.yaml:2: transcripts: 'nope/*.jsonl' matches no file")
    assert str(schema.value).startswith("incident.yaml:3: invalid manifest at window_s")
    with pytest.raises(ManifestError) as absolute:
        replaybook.Incident.load(tmp_path / "incident.yaml")
    assert str(absolute.value).startswith(f"{tmp_path / 'incident.yaml'}:3:")


def test_a_transcripts_clock_offset_in_the_manifest_reaches_the_join(tmp_path):
    """clock_offsets joins a transcript whose machine ran two hours behind the door, where the
    default max_offset_s does not reach it."""
    import shutil

    demo = Path(__file__).resolve().parents[1] / "data" / "demo"
    shutil.copytree(demo, tmp_path / "demo")
    base = replaybook.Incident.load(tmp_path / "demo")
    tid = base.join.sessions["transcript_id"].dropna().iloc[-1]
    sess = base.join.sessions.set_index("transcript_id").loc[tid, "door_session"]
    # that session's door log, shifted two hours later
    for log in (tmp_path / "demo" / "door").rglob(f"{sess}.jsonl"):
        lines = []
        for line in log.read_text().splitlines():
            o = json.loads(line)
            for k in ("ts", "ts_end"):
                if o.get(k):
                    o[k] = (pd.Timestamp(o[k]) + pd.Timedelta(hours=2)).isoformat().replace("+00:00", "Z")
            lines.append(json.dumps(o))
        log.write_text("\n".join(lines) + "\n")
    shifted = replaybook.Incident.load(tmp_path / "demo")
    assert shifted.join.assignments()[sess] is None
    text = (tmp_path / "demo" / "incident.yaml").read_text()
    (tmp_path / "demo" / "incident.yaml").write_text(text + f"clock_offsets:\n  {tid}: 7200\n")
    fixed = replaybook.Incident.load(tmp_path / "demo")
    assert fixed.manifest["clock_offsets"] == {tid: 7200}
    assert fixed.join.assignments() == base.join.assignments()
    off = fixed.join.sessions.set_index("door_session")["offset_ms"]
    assert off[sess] == base.join.sessions.set_index("door_session")["offset_ms"][sess] + 7_200_000


def test_a_folder_with_no_incident_yaml_says_what_to_do(tmp_path):
    """It had said '<folder>/incident.yaml: cannot read incident manifest: No such file or directory'."""
    with pytest.raises(ManifestError) as e:
        replaybook.Incident.load(tmp_path)
    assert str(e.value) == (f"{tmp_path}: this folder holds no incident.yaml: write an incident.yaml naming its "
                            "transcripts and door logs (README: Using it on your own incident), or join its files "
                            "without one (`replaybook join --transcripts DIR --calls DIR`); `replaybook load "
                            "auto` shows what each file in it is")
    (tmp_path / "march.yaml").write_text("title: x\ntranscripts: []\n")
    with pytest.raises(ManifestError, match=r"give one of its manifests \(march.yaml\) by name, or write"):
        replaybook.Incident.load(tmp_path)
    assert replaybook.Incident.load(tmp_path / "march.yaml").title == "x"


def test_a_list_entry_of_the_wrong_shape_says_what_it_lacks(tmp_path):
    """'{pth: door/}' had been '… is not valid under any of the given schemas'."""
    for entry, said in (("{pth: door/}", "'path' is a required property"),
                        ("{path: door/, fromat: door}", "Additional properties are not allowed ('fromat' was "
                                                        "unexpected)")):
        (tmp_path / "incident.yaml").write_text(f"title: x\ntranscripts: []\ndoor:\n  - {entry}\n")
        with pytest.raises(ManifestError) as e:
            replaybook.Incident.load(tmp_path / "incident.yaml")
        assert str(e.value) == f"{tmp_path / 'incident.yaml'}:4: invalid manifest at door/0: {said}"


def test_a_sub_agents_meta_json_is_an_input_with_its_sha256(tmp_path):
    """Claude Code's agent-<id>.meta.json was read (its agent_meta was in inputs) but was neither
    listed in Inputs nor in the report's checksum file: evidence the report could not re-check."""
    import hashlib

    from _continued_incident import SUB_TRANSCRIPT, meta_path, write_continued_incident

    from replaybook.report.checksums import checksum_entries

    manifest = write_continued_incident(tmp_path / "inc")
    inputs = replaybook.Incident.load(manifest).inputs
    meta = meta_path(manifest)
    data = (manifest.parent / meta).read_bytes()
    paths = [r["path"] for r in inputs]
    # right after the transcript it belongs to
    assert paths[paths.index(meta) - 1] == meta.replace(".meta.json", ".jsonl")
    row = inputs[paths.index(meta)]
    assert row == {"path": meta, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data), "lines": 1,
                   "format": "claude-code sub-agent meta", "side_of": meta.replace(".meta.json", ".jsonl"),
                   "note": None, "read_nothing": False}
    sub = inputs[paths.index(meta) - 1]
    assert sub["agent_meta"] == {"agentType": "general-purpose", "description": "Check the rule's history"}
    assert "side_files" not in sub  # (a row of its own)
    assert [meta, hashlib.sha256(data).hexdigest()] in checksum_entries(inputs)
    # every file of the incident is listed, once
    every = sorted(str(p.relative_to(manifest.parent)) for p in manifest.parent.rglob("*") if p.is_file())
    assert sorted(paths) == every and len(set(paths)) == len(paths)
    # a meta.json that holds no JSON object is listed too, saying why nothing was read from it
    (manifest.parent / meta).write_text('{"agentType": "gen')
    row = next(r for r in replaybook.Incident.load(manifest).inputs if r["path"] == meta)
    assert row["note"] == "not a JSON object: the sub-agent's metadata was not read from it"
    assert row["sha256"] == hashlib.sha256(b'{"agentType": "gen').hexdigest() and SUB_TRANSCRIPT in row["side_of"]


def _with_packet(tmp_path, outputs: bool = True) -> Path:
    """The demo incident with the claims fixture as its packet, its log outside the manifest's
    folder, and (``outputs``) a stored-outputs folder holding a file and a symbolic link."""
    import shutil

    shutil.copytree(ROOT / "data" / "demo", tmp_path / "demo")
    claims = ROOT / "tests" / "fixtures" / "packet" / "claims"
    (tmp_path / "pr").mkdir()
    shutil.copy(claims / "session.jsonl", tmp_path / "pr" / "session.jsonl")
    shutil.copy(claims / "PR_BODY.md", tmp_path / "demo" / "PR_BODY.md")
    if outputs:
        (tmp_path / "pr" / "session.outputs").mkdir()
        (tmp_path / "pr" / "session.outputs" / "a.txt").write_text("1 passed\n")
        (tmp_path / "pr" / "session.outputs" / "b.txt").symlink_to("a.txt")
    m = tmp_path / "demo" / "incident.yaml"
    m.write_text(m.read_text() + "packet:\n  log: ../pr/session.jsonl\n  body: PR_BODY.md\n")
    return m


def test_the_packets_files_are_inputs_with_their_sha256(tmp_path):
    # the packet section is built from them, yet Inputs and the .sha256 file had left them out
    import hashlib

    from replaybook.report.checksums import checksum_entries

    inc = replaybook.Incident.load(_with_packet(tmp_path))
    pk = [r for r in inc.inputs if str(r["format"] or "").startswith("packet") or "session.outputs" in r["path"]]
    out = (tmp_path / "pr").resolve()
    assert [(r["path"], r["format"], r["lines"]) for r in pk] == [
        (str(out / "session.jsonl"), "packet session log", 3), ("PR_BODY.md", "packet PR body", 6),
        (str(out / "session.outputs" / "a.txt"), "packet stored output", 1),
        (str(out / "session.outputs" / "b.txt"), "packet stored output", None)]
    assert pk[0]["sha256"] == hashlib.sha256((out / "session.jsonl").read_bytes()).hexdigest()
    assert pk[3]["sha256"] is None and pk[3]["note"].startswith("symbolic link to a.txt: not followed")
    sums = dict((p, s) for p, s in checksum_entries(inc.inputs))
    assert sums["PR_BODY.md"] == hashlib.sha256((tmp_path / "demo" / "PR_BODY.md").read_bytes()).hexdigest()
    assert str(out / "session.outputs" / "a.txt") in sums and str(out / "session.outputs" / "b.txt") not in sums
    # no outputs folder: the log and the body only; a named file that is gone: the manifest's error
    inc = replaybook.Incident.load(_with_packet(tmp_path / "x", outputs=False))
    assert [r["format"] for r in inc.inputs if str(r["format"] or "").startswith("packet")] == [
        "packet session log", "packet PR body"]
    (tmp_path / "x" / "demo" / "PR_BODY.md").unlink()
    with pytest.raises(ManifestError, match="packet: body: 'PR_BODY.md' does not exist"):
        replaybook.Incident.load(tmp_path / "x" / "demo" / "incident.yaml").inputs


def test_a_missing_packet_file_is_found_before_the_report_starts_with_its_manifest_line(tmp_path):
    """``check_inputs`` (what ``replaybook report`` runs before the notebook's kernel) names the
    packet's missing file as the manifest gives it, where it looked, and the manifest's line."""
    (tmp_path / "pr").mkdir()
    (tmp_path / "pr" / "session.jsonl").write_text('{"seq": 1, "cmd": "pytest", "exit": 0}\n')
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "t.jsonl").write_text("")
    m = tmp_path / "inc" / "incident.yaml"
    m.write_text("title: x\ntranscripts: [t.jsonl]\npacket:\n  log: ../pr/session.jsonl\n  body: ../pr/PR_BODY.txt\n")
    inc = replaybook.Incident.load(m)
    with pytest.raises(ManifestError) as e:
        inc.check_inputs()
    assert (e.value.line_no, e.value.message) == (
        5, f"packet: body: '../pr/PR_BODY.txt' does not exist (looked for {tmp_path / 'pr' / 'PR_BODY.txt'})")
    assert str(e.value).endswith("incident.yaml:5: " + e.value.message)


def test_the_packets_findings_are_in_the_header_and_the_findings(tmp_path):
    # a false claim in the PR body had been said only in the packet's own section, far down the page
    from replaybook.cli import _findings_line
    from replaybook.report import sections as S

    inc = replaybook.Incident.load(_with_packet(tmp_path))
    summary = inc.packet_summary()
    words = "replay packet: 2 findings, 1 warning, 2 of 4 markers accepted in the PR body"
    assert S.packet_words(summary) == words
    head = S.header(inc.title, inc.path, steps=inc.steps, calls=inc.calls, packet=summary)
    assert ('<strong><a href="#packet">Replay packet</a>: 2 findings, 1 warning, 2 of 4 markers accepted in the '
            "PR body</strong>") in head
    f = S.findings(inc.join.sessions, inc.calls, inc.quarantine, join=inc.join, packet=summary)
    assert f["packet"] == {"steps": 3, "failing_steps": 2, "findings": 2, "warnings": 1, "markers": 4,
                           "accepted_markers": 2, "chain": "unchained", "verdict": None,
                           "edited_outputs": []}
    assert _findings_line(f).endswith("; " + words)
    # no body: the steps, and that no claim was checked; no packet: nothing
    (tmp_path / "demo" / "incident.yaml").write_text(
        (tmp_path / "demo" / "incident.yaml").read_text().replace("  body: PR_BODY.md\n", ""))
    summary = replaybook.Incident.load(tmp_path / "demo").packet_summary()
    assert S.packet_words(summary) == "replay packet: 3 recorded steps, no PR body named: no claims checked"
    f = S.findings(inc.join.sessions, inc.calls, inc.quarantine, join=inc.join)
    assert f["packet"] is None and "packet" not in _findings_line(f)
    assert "#packet" not in S.header(inc.title, inc.path, steps=inc.steps, calls=inc.calls)


def test_a_persisted_tool_result_beside_the_transcript_is_an_input_with_its_sha256(tmp_path):
    """Claude Code (2.1.2 on) writes a tool result over its size limit to
    ``<session>/tool-results/<tool_use_id>.txt`` and gives the model a ``<persisted-output>``
    preview: the transcript holds what the model saw, the file the whole output.  The file is
    evidence of what the tool returned: listed once, as the transcript's, with its SHA-256."""
    import hashlib

    from _continued_incident import SID, write_continued_incident

    from replaybook.report.checksums import checksum_entries

    manifest = write_continued_incident(tmp_path / "inc")
    folder = manifest.parent / "transcripts" / SID / "tool-results"
    folder.mkdir()
    full = "".join(f"rev {i}: max_surge {i % 3}\n" for i in range(4000)).encode()
    (folder / "toolu_01Read000000000000000001.txt").write_bytes(full)
    inputs = replaybook.Incident.load(manifest).inputs
    paths = [r["path"] for r in inputs]
    name = f"transcripts/{SID}/tool-results/toolu_01Read000000000000000001.txt"
    assert paths.count(name) == 1 and len(set(paths)) == len(paths)
    row = inputs[paths.index(name)]
    assert row == {"path": name, "sha256": hashlib.sha256(full).hexdigest(), "bytes": len(full), "lines": 4000,
                   "format": "claude-code persisted tool result", "side_of": f"transcripts/{SID}.jsonl",
                   "note": None, "read_nothing": False}
    # after the transcript it belongs to (and that transcript's other side files, if any)
    assert paths.index(name) > paths.index(f"transcripts/{SID}.jsonl")
    assert [name, hashlib.sha256(full).hexdigest()] in checksum_entries(inputs)


def test_a_symbolic_link_to_nothing_is_named_with_its_manifest_line(tmp_path, monkeypatch):
    """A glob lists a link whatever it points to: the load then said "no such file or folder" of a
    name the investigator can see in the folder, with no manifest line."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "moved.jsonl").symlink_to(tmp_path / "gone" / "evidence.jsonl")
    (tmp_path / "incident.yaml").write_text("title: x\ntranscripts:\n  - t/*.jsonl\n  - t/moved.jsonl\n")
    with pytest.raises(ManifestError) as glob_err:
        replaybook.Incident.load("incident.yaml")
    assert str(glob_err.value) == (f"incident.yaml:3: transcripts: 't/*.jsonl' matches {tmp_path}/t/moved.jsonl, a "
                                   f"symbolic link to {tmp_path}/gone/evidence.jsonl, which does not exist")
    (tmp_path / "incident.yaml").write_text("title: x\ntranscripts:\n  - t/moved.jsonl\n")
    with pytest.raises(ManifestError) as named:
        replaybook.Incident.load("incident.yaml")
    assert str(named.value) == (f"incident.yaml:3: transcripts: 't/moved.jsonl' is a symbolic link to "
                                f"{tmp_path}/gone/evidence.jsonl, which does not exist")
    with pytest.raises(InputError, match="a symbolic link to .*gone/evidence.jsonl, which does not exist"):
        replaybook.load(tmp_path / "t" / "moved.jsonl")


def test_a_transcript_cut_inside_its_gzip_stream_is_read_up_to_the_cut(tmp_path, monkeypatch):
    """A copy cut short inside its gzip stream: the load had stopped with an error naming neither
    the file nor the manifest line (``transcripts: cannot read … Compressed file ended …``).  Now
    the lines before the cut load, the cut line is pending, and the file's note says why; a gzip
    stream that gives nothing at all is an error naming the file and the entry's line."""
    import gzip as _gzip
    import hashlib as _hashlib
    import zlib

    monkeypatch.chdir(tmp_path)
    (tmp_path / "t").mkdir()
    text = b"".join(
        b'{"type":"user","uuid":"u%d","sessionId":"s1","timestamp":"2026-09-13T10:00:00Z","message":{"role":"user",'
        b'"content":"%s"}}\n' % (i, _hashlib.sha256(b"%d" % i).hexdigest().encode()) for i in range(50))
    whole = _gzip.compress(text)
    (tmp_path / "t" / "s1.jsonl.gz").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "incident.yaml").write_text("title: x\ntranscripts:\n  - t/\n")
    inc = replaybook.Incident.load("incident.yaml")
    got = zlib.decompressobj(31).decompress(whole[: len(whole) // 2])
    assert len(inc.steps) == got.count(b"\n") and 0 < len(inc.steps) < 50
    assert inc.quarantine[["line_no", "kind"]].values.tolist() == [[got.count(b"\n") + 1, "pending"]]
    entry = next(i for i in inc.inputs if i["path"] == "t/s1.jsonl.gz")
    assert entry["note"] == (f"truncated gzip stream: it ends before its end marker; {len(got)} bytes recovered: "
                             "what comes before it is read; 1 line set aside (see Quarantine)")
    (tmp_path / "t" / "s1.jsonl.gz").write_bytes(whole[:10] + b"\xff" * 40)  # (its deflate data damaged at once)
    (tmp_path / "incident.yaml").write_text("title: x\ntranscripts:\n  - {path: t/s1.jsonl.gz, format: claude-code}\n")
    with pytest.raises(ManifestError) as err:
        replaybook.Incident.load("incident.yaml").steps
    assert str(err.value).startswith("incident.yaml:3: transcripts: t/s1.jsonl.gz: cannot read Claude Code "
                                     "transcript: corrupt gzip stream (")


def test_a_pipe_in_a_named_folder_is_listed_not_passed_over(tmp_path):
    """A pipe (or socket, device) in a walked folder is not read — reading could wait forever — and
    is listed with why, as a symbolic link is; it was left out of the inputs without a word."""
    import os as _os
    demo = Path(__file__).resolve().parents[1] / "data" / "demo" / "door"
    (tmp_path / "door").mkdir()
    for f in sorted(demo.rglob("*.jsonl")):
        (tmp_path / "door" / f.name).write_bytes(f.read_bytes())
    _os.mkfifo(tmp_path / "door" / "zz-pipe.jsonl")
    loaded = replaybook.load(tmp_path / "door")
    row = loaded.files.set_index("path").loc[str(tmp_path / "door" / "zz-pipe.jsonl")]
    assert pd.isna(row["source"]) and row["note"] == "not a regular file (a pipe, socket or device): not read"
    assert len(loaded["calls"]) == 9


def test_numbers_in_e_notation_are_numbers(tmp_path):
    """YAML 1.1 (PyYAML) reads ``1e4`` and ``1.5e3`` as text: ``max_offset_s: 1e4`` was refused
    as "'1e4' is not of type 'number'"; YAML 1.2 and JSON read them as numbers.  Quoted, a text."""
    (tmp_path / "t.jsonl").write_text("")
    (tmp_path / "incident.yaml").write_text("title: x\ntranscripts: [t.jsonl]\nmax_offset_s: 1e4\nwindow_s: 1.5e1\n"
                                            "clock_offsets:\n  t1: -7.2E+3\n")
    inc = replaybook.Incident.load(tmp_path / "incident.yaml")
    assert (inc.manifest["max_offset_s"], inc.manifest["window_s"], inc.manifest["clock_offsets"]) == \
        (10000.0, 15.0, {"t1": -7200.0})
    (tmp_path / "incident.yaml").write_text("title: '1e4'\ntranscripts: [t.jsonl]\n")
    assert replaybook.Incident.load(tmp_path / "incident.yaml").manifest["title"] == "1e4"


@pytest.mark.parametrize("text", ["window_s 60\n", "- window_s\n- 60\n"])
def test_a_manifest_that_is_no_mapping_is_said_so(tmp_path, text):
    # (a missing colon, a list: the e-notation reading of the seconds had crashed on them: TypeError)
    (tmp_path / "incident.yaml").write_text(text)
    with pytest.raises(ManifestError, match="is not of type 'object'|not an incident manifest"):
        replaybook.Incident.load(tmp_path / "incident.yaml")


@pytest.mark.parametrize("bad,message", [
    (b'{"seq": 1, "cmd": "pytest", "exit": 0}\n{"seq": 2, "cmd": "ls", "exit": 0', ":2: unterminated last line"),
    (b'{"seq": 9223372036854775808, "cmd": "pytest", "exit": 0}\n',
     "field 'seq': 9223372036854775808 is out of range (a 64-bit integer)"),
    (b'{"seq": 1, "cmd": "echo \xff", "exit": 0}\n', "the line is not valid UTF-8"),
])
def test_a_malformed_packet_log_is_bad_input_before_the_report_starts(tmp_path, bad, message):
    """The report's notebook failed half-way in cell 4 (exit 1) on a session log the packet
    commands refuse with its line (exit 2): ``check_inputs`` now reads it as they do."""
    from replaybook.cli import main
    from replaybook.packet.errors import PacketLogError

    (tmp_path / "t.jsonl").write_text("")
    (tmp_path / "session.jsonl").write_bytes(bad)
    m = tmp_path / "incident.yaml"
    m.write_text("title: x\ntranscripts: [t.jsonl]\npacket:\n  log: session.jsonl\n")
    inc = replaybook.Incident.load(m)
    inc.check_inputs()  # (what join and access check: they do not read the packet)
    with pytest.raises(PacketLogError) as e:
        inc.check_packet_log()
    assert message in str(e.value) and f"{tmp_path / 'session.jsonl'}:" in str(e.value)
    assert main(["report", str(m), "--out", str(tmp_path / "r")]) == 2


def _demo_copy(tmp_path) -> Path:
    import shutil

    shutil.copytree(DEMO.parent, tmp_path / "demo")
    return tmp_path / "demo"


def test_a_file_named_sniffed_and_with_a_format_is_read_once_by_the_named_format(tmp_path):
    """`door/` and `{path: door/, format: door}` in one list named every door file twice, once
    per format group: each call was counted twice (18 of the demo's 9)."""
    d = _demo_copy(tmp_path)
    one = "door/analyst/door-20260913T100005-a1.jsonl"
    for door in ("  - door/\n  - {path: door/, format: door}\n",
                 f"  - {{path: door/, format: door}}\n  - door/\n",
                 f"  - door/\n  - {{path: {one}, format: door}}\n"):
        (d / "incident.yaml").write_text(f"title: t\ntranscripts: [transcripts/]\ndoor:\n{door}")
        inc = replaybook.Incident.load(d / "incident.yaml")
        assert len(inc.calls) == 9
        assert inc.calls.duplicated(["door_session", "seq"]).sum() == 0
        rows = [r["path"] for r in inc.inputs if r["format"] == "door"]
        assert sorted(rows) == ["door/analyst/door-20260913T100005-a1.jsonl",
                                "door/analyst/door-20260913T100052-b7.jsonl"]
        assert inc.check_inputs() == []
    # two entries forcing two formats on one file: which one is meant cannot be told
    (d / "incident.yaml").write_text(f"title: t\ntranscripts: [transcripts/]\ndoor:\n"
                                     f"  - {{path: door/, format: door}}\n  - {{path: {one}, format: mcpjungle}}\n")
    e = _manifest_error(d / "incident.yaml")
    assert e.line_no == 5
    assert f"{one} is named by two entries forcing different formats: 'door' (line 4) and 'mcpjungle' (line 5)" \
        in str(e)


def test_an_existing_file_whose_name_has_brackets_is_that_file_not_a_glob(tmp_path):
    """`t/run[1].jsonl` had been read as a glob matching `t/run1.jsonl`, another file."""
    src = DEMO.parent / "transcripts"
    (tmp_path / "t").mkdir()
    braced, plain = tmp_path / "t" / "run[1].jsonl", tmp_path / "t" / "run1.jsonl"
    braced.write_bytes((src / "3b4173aa-345d-5382-aff0-c40b872f81ae.jsonl").read_bytes())
    plain.write_bytes((src / "919dc839-23e1-56e5-8bd5-430e87d6a897.jsonl").read_bytes())
    m = tmp_path / "incident.yaml"
    m.write_text('title: t\ntranscripts:\n  - "t/run[1].jsonl"\n')
    inc = replaybook.Incident.load(m)
    assert [r["path"] for r in inc.inputs[1:]] == ["t/run[1].jsonl"]
    assert set(inc.steps["source_file"]) == {str(braced)}
    assert inc.check_inputs() == []
    places = inc.evidence_places()
    assert places.files == [m.resolve(), braced] and places.patterns == []
    # with no such file, the entry is a glob as before
    braced.unlink()
    assert [r["path"] for r in replaybook.Incident.load(m).inputs[1:]] == ["t/run1.jsonl"]


def test_a_double_star_glob_does_not_follow_symbolic_links_to_folders(tmp_path):
    """`t/**/*.jsonl` had followed `t/a -> .`: the same transcript read again under t/a/, t/a/a/ …
    down to the system's limit (two such links: load never ended)."""
    src = DEMO.parent / "transcripts"
    (tmp_path / "t" / "sub").mkdir(parents=True)
    (tmp_path / "t" / ".hidden").mkdir()
    one, two = "3b4173aa-345d-5382-aff0-c40b872f81ae.jsonl", "919dc839-23e1-56e5-8bd5-430e87d6a897.jsonl"
    (tmp_path / "t" / one).write_bytes((src / one).read_bytes())
    (tmp_path / "t" / "sub" / two).write_bytes((src / two).read_bytes())
    (tmp_path / "t" / ".hidden" / two).write_bytes((src / two).read_bytes())  # (as glob: not matched)
    (tmp_path / "t" / "a").symlink_to(".")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "t" / "b").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere" / two).write_bytes((src / two).read_bytes())
    m = tmp_path / "incident.yaml"
    m.write_text('title: t\ntranscripts:\n  - "t/**/*.jsonl"\n')
    inc = replaybook.Incident.load(m)
    # the links `**` passed over are listed, not read, as a folder walk lists its links: t/b holds
    # a transcript the glob would have matched (it had been left out without a word)
    assert [(r["path"], r["sha256"], r["note"]) for r in inc.inputs[1:]] == [
        (f"t/{one}", hashlib.sha256((src / one).read_bytes()).hexdigest(), None),
        (f"t/sub/{two}", hashlib.sha256((src / two).read_bytes()).hexdigest(), None),
        ("t/a", None, "skipped: symbolic link to .: not followed (name the file itself to read it)"),
        ("t/b", None, f"skipped: symbolic link to {tmp_path / 'elsewhere'}: not followed (name the file itself "
                      "to read it)")]
    assert sorted(set(inc.steps["source_file"])) == [str(tmp_path / "t" / one), str(tmp_path / "t" / "sub" / two)]
    assert inc.listed_files("transcripts") == [tmp_path / "t" / one, tmp_path / "t" / "sub" / two]
    # one level named by `*` is entered as before: t/a/<file> is t/<file>, read once
    m.write_text('title: t\ntranscripts:\n  - "t/*/*.jsonl"\n')
    assert sorted(replaybook.incident._expand(tmp_path, "t/*/*.jsonl", m, "transcripts")) == [
        tmp_path / "t" / "a" / one, tmp_path / "t" / "b" / two, tmp_path / "t" / "sub" / two]
    # a link whose folder holds nothing the pattern names is not listed
    (tmp_path / "t" / "b").unlink()
    (tmp_path / "t" / "c").symlink_to(tmp_path / "elsewhere" / "empty", target_is_directory=True)
    (tmp_path / "elsewhere" / "empty").mkdir()
    (tmp_path / "elsewhere" / "empty" / "notes.txt").write_text("x")
    m.write_text('title: t\ntranscripts:\n  - "t/**/*.jsonl"\n')
    assert [r["path"] for r in replaybook.Incident.load(m).inputs[1:]] == [f"t/{one}", f"t/sub/{two}", "t/a"]


def test_a_folder_link_a_glob_reads_through_is_not_listed_as_not_followed(tmp_path):
    """`t/**/runs/*.jsonl` enters `t/runs -> /archive/runs` by its `runs` part and reads the
    transcript there; the link had been listed all the same as skipped, not followed."""
    src = DEMO.parent / "transcripts"
    one = "3b4173aa-345d-5382-aff0-c40b872f81ae.jsonl"
    (tmp_path / "archive" / "runs").mkdir(parents=True)
    (tmp_path / "archive" / "runs" / one).write_bytes((src / one).read_bytes())
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "runs").symlink_to(tmp_path / "archive" / "runs", target_is_directory=True)
    m = tmp_path / "incident.yaml"
    m.write_text('title: t\ntranscripts:\n  - "t/**/runs/*.jsonl"\n')
    inc = replaybook.Incident.load(m)
    assert sorted(set(inc.steps["source_file"])) == [str(tmp_path / "t" / "runs" / one)]
    assert [(r["path"], r["note"]) for r in inc.inputs[1:]] == [(f"archive/runs/{one}", None)]


@pytest.mark.parametrize("body, line, words", [
    ("transcripts:\n  - transcripts/" + "a" * 300 + ".jsonl\n", 3, "cannot be looked up: File name too long"),
    ('transcripts:\n  - "transcripts\\0/*.jsonl"\n', 3, "a path cannot hold a NUL character"),
    ('transcripts: [transcripts/]\ndata_root: "data\\0"\n', 3,
     "data_root 'data\\x00' cannot be looked up: a path cannot hold a NUL character"),
    ('transcripts: [transcripts/]\ndata_root: ' + "a" * 300 + "\n", 3,
     "data_root '" + "a" * 300 + "' cannot be looked up: File name too long"),
    ('transcripts: [transcripts/]\ndoor:\n  - {path: "door\\0", format: door}\n', 4,
     "a path cannot hold a NUL character"),
    ('transcripts: [transcripts/]\npacket:\n  log: ' + "a" * 300 + "\n", 4,
     "packet: log: '" + "a" * 300 + "' cannot be looked up: File name too long"),
])
def test_a_path_the_system_cannot_look_up_is_bad_input_with_its_line(tmp_path, capsys, body, line, words):
    """A name longer than the file system allows, or a NUL character in a glob or the data
    root, had ended `join` with an internal error (OSError, ValueError), exit 1."""
    from replaybook.cli import main

    d = _demo_copy(tmp_path)
    (d / "incident.yaml").write_text("title: t\n" + body)
    for cmd in (["join"], ["report", "--out", str(tmp_path / "out")]):
        assert main([*cmd, str(d / "incident.yaml")]) == 2
        err = capsys.readouterr().err
        assert f"incident.yaml:{line}: " in err and words in err and "internal error" not in err


def test_a_legal_hold_beside_a_door_session_is_listed_with_its_sha256(tmp_path):
    """``replaybook hold`` writes ``<session>.hold`` beside a door session, inside the folder the
    manifest's ``door:`` names. The walk passed it over as a side file and no loader listed it:
    a file of the evidence folder missing from Inputs and from the ``.sha256`` file."""
    import shutil

    demo = Path(__file__).resolve().parents[1] / "data" / "demo"
    shutil.copytree(demo / "transcripts", tmp_path / "transcripts")
    shutil.copytree(demo / "door", tmp_path / "door")
    (tmp_path / "incident.yaml").write_text("title: t\ntranscripts:\n  - transcripts/\ndoor:\n  - door/\n")
    hold = tmp_path / "door" / "analyst" / "door-20260913T100005-a1.hold"
    hold.write_text('{"reason": "CASE-1"}\n')
    inc = replaybook.Incident.load(tmp_path / "incident.yaml")
    rows = [r for r in inc.inputs if r["path"] == "door/analyst/door-20260913T100005-a1.hold"]
    assert len(rows) == 1
    assert rows[0]["format"] == "door legal hold"
    assert rows[0]["sha256"] == hashlib.sha256(hold.read_bytes()).hexdigest()
    assert rows[0]["side_of"] == "door/analyst/door-20260913T100005-a1.jsonl"
    assert len(inc.calls) == 9  # holds no calls


@pytest.mark.parametrize("key", ["transcripts", "door", "access"])
def test_one_entry_written_without_its_list_says_how_to_write_it(tmp_path, key):
    """`transcripts: transcripts/` (one path, no list around it) had named its line and "is not of
    type 'array'" only: the message now says the fix."""
    m = tmp_path / "incident.yaml"
    body = {"transcripts": "transcripts: [t/]\n", "door": "door: [d/]\n", "access": ""}
    body[key] = f"{key}: logs/\n"
    m.write_text("title: t\n" + body["transcripts"] + body["door"] + body["access"])
    line = 1 + ["transcripts", "door", "access"].index(key) + 1
    from replaybook.incident import load_manifest

    with pytest.raises(ManifestError) as got:
        load_manifest(m)
    assert str(got.value) == (f"{m}:{line}: invalid manifest at {key}: 'logs/' is not of type 'array'; write it as "
                              f"a list: {key}: [logs/]")
