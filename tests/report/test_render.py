"""render_report: papermill execution (kernel = this interpreter), retries, offline HTML."""

from __future__ import annotations

import hashlib
import html as html_lib
import json
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from replaybook.errors import ManifestError, ReportError
from replaybook.report import render as R
from replaybook.report.render import render_report, to_html



def read(p) -> str:
    return Path(p).read_text(encoding="utf-8")


def assert_offline(html: str) -> None:
    low = html.lower()
    assert not re.search(r"<script[^>]*\bsrc\s*=", low)
    assert "<link" not in low  # no external stylesheet either
    for word in ("cdn", "require.js", "requirejs", "mathjax", "widget-state", "jupyter-widgets"):
        assert word not in low, word
    # no code input cells
    assert 'class="jp-CodeMirrorEditor' not in html and 'class="jp-InputArea-editor' not in html
    assert "highlight hl-ipython3" not in html and 'class="jp-InputPrompt' not in html


def test_tiny_report_files_and_names(rendered_tiny):
    assert Path(rendered_tiny["ipynb"]).name == "tiny-incident.ipynb"
    assert Path(rendered_tiny["html"]).name == "tiny-incident.html"
    assert rendered_tiny["attempts"] == 1


def test_executed_notebook_holds_no_local_paths(rendered_tiny, tiny_incident):
    # the executed .ipynb is shared like the HTML: neither the evidence folder, the output
    # folder nor the install location appears in it
    text = read(rendered_tiny["ipynb"])
    out_dir = str(Path(rendered_tiny["ipynb"]).parent)
    for path in (str(tiny_incident.parent), out_dir, str(Path(R.__file__).parents[2]), sys.prefix):
        assert path not in text, path
    nb = nbformat.read(rendered_tiny["ipynb"], as_version=4)
    meta = nb.metadata["papermill"]
    assert meta["parameters"]["incident_path"] == "incident.yaml"
    assert (meta["input_path"], meta["output_path"]) == ("replaybook/report/review.ipynb", "tiny-incident.ipynb")
    # the header still names the manifest by its folder
    assert f"<code>{tiny_incident.parent.name}/incident.yaml</code>" in read(rendered_tiny["html"])


def test_tiny_report_is_offline_without_code(rendered_tiny):
    html = read(rendered_tiny["html"])
    assert_offline(html)
    # parameters cells and their values are gone; so is the code that loads the incident
    assert "incident_path" not in html and "injected-parameters" not in html
    assert "Incident.load" not in html and "display(HTML" not in html
    # exactly two scripts: the inlined Vega bundle and the vegaEmbed call
    assert html.count("<script") == 2
    assert "window.vegaEmbed=" in html


def test_tiny_report_escapes_evidence(rendered_tiny, hostile):
    html = read(rendered_tiny["html"])
    for raw in (*hostile.values(), "<b>hostile</b>"):
        assert raw not in html
    # (nbconvert re-serialises the page with BeautifulSoup, which writes quotes in text unescaped)
    assert re.search(r"&lt;script&gt;alert\((&#x27;|')result-xss", html)  # refused call's result
    assert re.search(r"&lt;img src=x onerror=alert\((&quot;|\")q-xss", html)  # quarantined line
    assert "Tiny &lt;b&gt;hostile&lt;/b&gt; incident" in html
    assert "\\u003cscript\\u003ealert(\\\"prompt-xss\\\")" in html  # prompt inside the chart's JSON


def test_tiny_report_sections(rendered_tiny):
    html = read(rendered_tiny["html"])
    for title in ("Sessions and the join", "Clock offset", "Timeline", "What each call reached",
                  "Residuals: what the join left unpaired", "Refused calls", "Inputs", "Quarantine",
                  "What the join cannot prove"):
        assert f">{title}</h2>" in html, title
    assert html.index("Sessions and the join") < html.index("Clock offset") < html.index(">Timeline<")
    # this incident's residuals come before the general caveats, under their own heading
    assert html.index(">Residuals: what the join left unpaired<") < html.index(">What the join cannot prove</h2>")
    assert html.index("Door calls no transcript step claims") < html.index(">What the join cannot prove</h2>")
    assert "door-sess-tiny" in html and "toolu_env_2" in html and "no-dotenv" in html
    assert re.search(r"<code>[0-9a-f]{64}</code>", html.replace("<wbr/>", "").replace("<wbr>", ""))  # input SHA-256


def test_tiny_notebook_metadata_and_interpreter(rendered_tiny):
    nb = json.loads(read(rendered_tiny["ipynb"]))
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert nb["metadata"]["kernelspec"]["language"] == "python"
    assert nb["metadata"]["language_info"]["name"] == "python"
    assert nb["metadata"]["language_info"]["version"].startswith(f"{sys.version_info[0]}.{sys.version_info[1]}")
    nbformat.validate(nbformat.reads(json.dumps(nb), as_version=4))
    # the hidden "remove" cell recorded which interpreter the kernel ran (a digest of its path):
    # this one, though the render ran with the venv absent from PATH
    outs = [o for c in nb["cells"] if "remove" in c["metadata"].get("tags", []) and c["cell_type"] == "code"
            for o in c["outputs"]]
    text = "".join("".join(o.get("text", "")) for o in outs)
    digest = hashlib.sha256(sys.executable.encode()).hexdigest()[:16]
    assert f"python: {platform.python_version()} {digest}\n" in text
    tags = [c["metadata"].get("tags", []) for c in nb["cells"]]
    assert ["injected-parameters"] in tags and ["parameters"] in tags


def _template(tmp_path: Path, body: str) -> Path:
    nb = new_notebook(cells=[
        new_code_cell('incident_path = "x"\ninteractive = False', metadata={"tags": ["parameters"]}),
        new_code_cell(body),
    ], metadata={"kernelspec": R.KERNELSPEC, "language_info": {"name": "python"}})
    p = tmp_path / "template.ipynb"
    nbformat.write(nb, p)
    return p


def test_hang_is_retried_once_then_succeeds(tiny_incident, tmp_path):
    marker = tmp_path / "first-attempt-hung"
    body = (f"import pathlib, time\nm = pathlib.Path({str(marker)!r})\n"
            "if not m.exists():\n    m.write_text('x')\n    time.sleep(60)\nprint('second attempt ok')")
    out = render_report(tiny_incident, tmp_path / "out", template=_template(tmp_path, body), timeout=3)
    assert out.attempts == 2 and marker.exists()
    assert "second attempt ok" in read(out.ipynb)
    assert_offline(read(out.html))


def test_hang_on_every_attempt_raises_report_error(tiny_incident, tmp_path):
    tpl = _template(tmp_path, "import time\ntime.sleep(60)")
    with pytest.raises(ReportError, match=r"hung or died on all 2 attempt\(s\).*timeout 2 s"):
        render_report(tiny_incident, tmp_path / "out", template=tpl, timeout=2)


def test_dead_kernel_raises_report_error(tiny_incident, tmp_path):
    tpl = _template(tmp_path, "import os\nos._exit(1)")
    with pytest.raises(ReportError, match="hung or died on all 1 attempt"):
        render_report(tiny_incident, tmp_path / "out", template=tpl, timeout=20, retries=0)


def test_the_kernels_own_log_stays_off_the_terminal_and_explains_a_death(tiny_incident, tmp_path, capfd):
    """ipykernel's start-up and shut-down lines ("KeyboardInterrupt caught in kernel") had been
    printed on every report's stderr, reading as errors; they now go to the error message only
    when the kernel dies."""
    tpl = _template(tmp_path, "import os\nos.write(2, b'kernel noise on fd 2\\n')\nprint('fine')")
    out = render_report(tiny_incident, tmp_path / "out", template=tpl, timeout=20)
    assert "fine" in read(out.ipynb)
    assert "kernel noise" not in capfd.readouterr().err
    tpl = _template(tmp_path, "import os\nos.write(2, b'last words before dying\\n')\nos._exit(1)")
    with pytest.raises(ReportError, match=r"(?s)hung or died on all 1 attempt.*the kernel's log ended:.*last words"):
        render_report(tiny_incident, tmp_path / "out2", template=tpl, timeout=20, retries=0)
    assert "last words" not in capfd.readouterr().err


def test_cell_error_is_a_report_error_not_retried(tiny_incident, tmp_path):
    tpl = _template(tmp_path, "raise ValueError('boom <here>')")
    with pytest.raises(ReportError, match=r"failed in cell .*ValueError: boom <here>"):
        render_report(tiny_incident, tmp_path / "out", template=tpl, timeout=20)


def test_bad_manifest_fails_before_any_kernel(tmp_path):
    (tmp_path / "incident.yaml").write_text("title: x\n")
    with pytest.raises(ManifestError):
        render_report(tmp_path, tmp_path / "out")
    with pytest.raises(ReportError, match="template notebook not found"):
        (tmp_path / "incident.yaml").write_text("title: x\ntranscripts: [incident.yaml]\ndoor: [incident.yaml]\n")
        render_report(tmp_path, tmp_path / "out", template=tmp_path / "nope.ipynb")


def test_to_html_drops_tagged_cells_inputs_and_widgets(tmp_path):
    nb = new_notebook(cells=[
        new_markdown_cell("# Visible heading"),
        new_code_cell("secret_param = 1", metadata={"tags": ["parameters"]},
                      outputs=[new_output("stream", name="stdout", text="PARAM-OUT")]),
        new_code_cell("injected = 2", metadata={"tags": ["injected-parameters"]},
                      outputs=[new_output("stream", name="stdout", text="INJECTED-OUT")]),
        new_code_cell("hidden()", metadata={"tags": ["remove"]},
                      outputs=[new_output("stream", name="stdout", text="REMOVED-OUT")]),
        new_code_cell("shown_code_xyz()",
                      outputs=[new_output("display_data", data={"text/html": "<p>SHOWN-OUT</p>",
                                                                "text/plain": "x"})]),
        new_code_cell("w", outputs=[new_output("display_data", data={
            "application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2,
                                                         "version_minor": 0},
            "text/plain": "IntSlider()"})]),
        new_markdown_cell("$x^2$ stays as text"),
    ], metadata={"kernelspec": R.KERNELSPEC, "language_info": {"name": "python"},
                 "widgets": {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2,
                                                                            "version_minor": 0}}})
    p = tmp_path / "n.ipynb"
    nbformat.write(nb, p)
    html = read(to_html(p))
    assert_offline(html)
    assert "Visible heading" in html and "SHOWN-OUT" in html
    for gone in ("PARAM-OUT", "INJECTED-OUT", "REMOVED-OUT", "secret_param", "shown_code_xyz", "model_id"):
        assert gone not in html, gone
    assert "<script" not in html


def test_demo_report_renders(rendered_demo):
    out = rendered_demo
    html = read(out["html"])
    assert Path(out["html"]).name == "demo.html"
    assert_offline(html)
    assert ">Refused calls</h2>" in html and html.count("<script") == 2
    assert html.count('class="rb-status rb-status-matched"') == 2 and 'class="rb-status rb-status-ambiguous' not in html
    assert "door-20260913T100005-a1" in html and "door-20260913T100052-b7" in html
    # the transcript with no door calls is named as a residual
    residual = html[html.index("Transcripts assigned to no door session"):]
    assert re.search(r"<li><code>[0-9a-f-]{36}</code></li>", residual)
    # what happened before how the join found it: each conversation's question, door calls and
    # answer, then the conversation in order, then the join's tables
    order = [html.index(f">{t}</h2>") for t in ("What each conversation was asked, and what it answered",
                                                 "The conversation, in order", "Sessions and the join")]
    assert order == sorted(order) and html.index("What each link rests on") > order[-1]
    screen = re.sub(r"\s+", " ", html_lib.unescape(re.sub("<[^>]+>", "", html[:order[1]].replace("<wbr/>", ""))))
    assert ("Door calls: 5 — 4 allowed, reaching demo/, demo/cars.xpt, demo/cars.parquet; 1 refused: read_object "
            "reference/.env (#5, rule no-dotenv).") in screen
    assert "The average mpg of the cars in demo/ is 19.90." in screen and "The average mpg is 20.35 (from cars.xpt)." \
        in screen
    assert "What each agent conversation saw, in the order it saw it: each transcript, one conversation," in screen
    assert "What the agent saw" not in screen
    # why the answer was wrong, up top: the file described and the file computed from disagree
    head = re.sub("<[^>]+>", "", html[:html.index("Sessions and the join")])
    assert ("2 files the agent reached look like one dataset but hold different rows: demo/cars.xpt (32 rows), "
            "demo/cars.parquet (35 rows)") in head
    # the findings the CLI prints, read back from the executed notebook (and not in the HTML)
    assert out["findings"] == {"sessions": {"matched": 2}, "unassigned_transcripts": 1, "door_calls": 9, "refused_calls": 1,
                               "set_aside_lines": 0, "set_aside_files": 0, "unread_files": 0,
                               "unexplained_storage": 2, "unexplained_other": 0,
                               "refused_then_reached": ["s3://acme-data/reference/.env"], "refused_then_tried": [],
                                   "refused_then_other_principal": [],
                               "refused_then_tried_words": None, "unclaimed_calls": 0, "unmatched_steps": 0, "far_pairs": 0,
                               "disagreeing_copies": [["demo/cars.xpt", "demo/cars.parquet"]], "far_clocks": [],
                               "storage_written_after_read": [], "storage_written_words": None,
                               "offset_changes": [], "cloud_log_losses": [], "cloud_log_loss_words": [],
                               "unmapped_calls": [], "other_client_links": [], "no_principals": False,
                               "packet": None, "packet_words": None,  # (no replay packet in the demo)
                                   "capsule_words": None,
                               "join_warnings": [], "join_notes": [], "access_warnings": []}
    assert "vnd.replaybook" not in html
    nb = json.loads(read(out["ipynb"]))
    assert nb["metadata"]["kernelspec"]["name"] == "python3" and nb["metadata"]["language_info"]["name"] == "python"
    assert f"python: {platform.python_version()} {hashlib.sha256(sys.executable.encode()).hexdigest()[:16]}" in json.dumps(nb)


def test_a_foreign_python3_kernelspec_is_not_used(tiny_incident, tmp_path, monkeypatch):
    # a user-level python3 kernelspec naming another interpreter by absolute path comes first
    # on the Jupyter path; the report must still run in this interpreter
    kdir = tmp_path / "jp" / "kernels" / "python3"
    kdir.mkdir(parents=True)
    (kdir / "kernel.json").write_text(json.dumps({
        "argv": ["/nonexistent/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (elsewhere)", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jp"))
    tpl = _template(tmp_path, "import sys\nprint('kernel python:', sys.executable)")
    out = render_report(tiny_incident, tmp_path / "out", template=tpl, timeout=60)
    assert f"kernel python: {sys.executable}" in read(out.ipynb)


def test_report_file_is_named_after_the_manifest_so_two_in_one_folder_do_not_collide(tmp_path):
    from replaybook.report.render import _slug, report_files

    (tmp_path / "case 7").mkdir()
    out = tmp_path / "out"
    assert report_files(tmp_path / "case 7" / "incident.yaml", out) == (
        out / "case-7.ipynb", out / "case-7.html", out / "case-7.sha256")
    assert report_files(tmp_path / "case 7" / "jointrap.yaml", out).html == out / "jointrap.html"
    assert _slug(tmp_path / "case 7" / "incident.yaml") == "case-7"
    assert _slug(tmp_path / "Vorfall März 2026" / "incident.yaml") == "Vorfall-März-2026"  # not Vorfall-M-rz
    assert _slug(tmp_path / "a;b$(c)" / "incident.yaml") == "a-b-c"
    assert _slug(tmp_path / "case 7") == "case-7"
    assert _slug(tmp_path / "case 7" / "jointrap.yaml") == "jointrap"
    assert _slug(tmp_path / "case 7" / "real.yaml") == "real"


def test_evidence_in_the_wrong_list_is_a_user_error_exit_2_not_a_report_failure(tmp_path, capsys):
    # a door log under transcripts is found only when the notebook loads the frames: it is the
    # evidence that is wrong, so the CLI exits 2 (bad input), as its own loaders would
    from replaybook.cli import main
    from replaybook.errors import InputError

    door = Path(__file__).resolve().parents[2] / "data" / "demo" / "door"
    (tmp_path / "incident.yaml").write_text(f"title: x\ntranscripts: ['{door}']\ndoor: ['{door}']\n")
    with pytest.raises(InputError, match=r"transcripts: files that are not transcripts .*no report written"):
        render_report(tmp_path, tmp_path / "out", timeout=60, retries=0)
    assert not list((tmp_path / "out").iterdir())  # no half-run notebook left as if it were a report
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "out2")]) == 2
    assert "files that are not transcripts" in capsys.readouterr().err
    assert not (tmp_path / "out2").exists()  # found before a kernel started: nothing written


def test_empty_manifest_says_so(tmp_path):
    (tmp_path / "incident.yaml").write_text("")
    with pytest.raises(ManifestError, match="the manifest is empty"):
        render_report(tmp_path, tmp_path / "out")


SHA256SUM = shutil.which("sha256sum")


def _inputs_section(html: str) -> str:
    """The Inputs section of a rendered report, ``<wbr/>`` break opportunities taken out."""
    return html[html.index('id="inputs"'):html.index('id="quarantine"')].replace("<wbr/>", "").replace("<wbr>", "")


def _table_rows(part: str) -> list[list[str]]:
    """The text of each body row of the first table in ``part``."""
    part = part[part.index("<table"):part.index("</table>")]
    return [[html_lib.unescape(re.sub("<[^>]+>", "", c)) for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
            for r in re.findall(r"<tr[^>]*>(.*?)</tr>", part, re.S) if "<td" in r]


def _sha256sum_check(checksums: str, folder: Path) -> subprocess.CompletedProcess:
    """``sha256sum --strict -c CHECKSUMS``, run in ``folder``."""
    return subprocess.run([SHA256SUM, "--strict", "-c", checksums], cwd=folder, capture_output=True)


def test_the_report_writes_its_inputs_checksums_beside_the_html(rendered_tiny, tiny_incident):
    sums = Path(rendered_tiny["checksums"])
    assert sums == Path(rendered_tiny["html"]).with_suffix(".sha256")
    files = sorted(p for p in tiny_incident.parent.rglob("*") if p.is_file())
    expect = {f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(tiny_incident.parent)}" for p in files}
    assert set(sums.read_text(encoding="utf-8").splitlines()) == expect
    assert sums.read_text(encoding="utf-8").splitlines()[0].endswith("  incident.yaml")  # the manifest first
    inputs = re.sub("<[^>]+>", "", _inputs_section(read(rendered_tiny["html"])))
    assert f"run sha256sum -c path/to/{sums.name} in the manifest's folder" in inputs


@pytest.mark.skipif(SHA256SUM is None, reason="GNU sha256sum is not installed")
def test_sha256sum_checks_the_tiny_reports_inputs(rendered_tiny, tiny_incident):
    ok = _sha256sum_check(rendered_tiny["checksums"], tiny_incident.parent)
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_a_template_that_hands_over_no_inputs_leaves_no_stale_checksum_file(tiny_incident, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "tiny-incident.sha256").write_text("an earlier run's inputs\n")
    out = render_report(tiny_incident, out_dir, template=_template(tmp_path, "print('fine')"), timeout=60)
    assert out.checksums is None and not (out_dir / "tiny-incident.sha256").exists()


def test_the_demo_report_lists_every_input(rendered_demo, demo_incident):
    import replaybook

    inputs = replaybook.Incident.load(demo_incident).inputs
    section = _inputs_section(read(rendered_demo["html"]))
    assert [r[0] for r in _table_rows(section)] == [i["path"] for i in inputs]
    assert "not listed here" not in section and "Per folder and format" not in section
    assert Path(rendered_demo["checksums"]).name == "demo.sha256" and "demo.sha256" in section


def test_a_wide_incident_lists_the_files_that_matter_and_counts_the_rest_per_folder(rendered_wide, wide_incident):
    """600 door and transcript files: the table lists the manifest, then the files with a note,
    then others up to the cap; the summary counts every file per folder and format."""
    from replaybook.report.sections import MAX_INPUT_ROWS

    files = wide_incident["files"]
    assert len(files) > MAX_INPUT_ROWS
    section = _inputs_section(read(rendered_wide["html"]))
    listed = _table_rows(section[section.index("files</h3>"):])
    assert len(listed) == MAX_INPUT_ROWS
    noted = [f["path"] for f in files if f["noted"]]
    assert [r[0] for r in listed[:1 + len(noted)]] == ["incident.yaml", *noted]
    text = html_lib.unescape(re.sub("<[^>]+>", "", section))
    hidden = len(files) - MAX_INPUT_ROWS
    assert f"{hidden:,} files are not listed here: every file, with its SHA-256, is in wide-incident.sha256" in text
    expect: dict[tuple, list] = {}
    for f in files:
        folder = str(Path(f["path"]).parent)
        c = expect.setdefault((folder, f["format"] or "—"), [0, 0, None])
        c[0] += 1
        c[1] += f["bytes"]
        if f["lines"] is not None:
            c[2] = (c[2] or 0) + f["lines"]
    summary = _table_rows(section[section.index("Per folder and format"):])
    num = lambda s: None if s == "—" else int(s.replace(",", ""))  # noqa: E731
    assert {(r[0], r[1]): [num(x) for x in r[2:]] for r in summary} == expect


@pytest.mark.skipif(SHA256SUM is None, reason="GNU sha256sum is not installed")
def test_sha256sum_checks_every_input_of_the_wide_incident(rendered_wide, wide_incident):
    """Every file, the one outside the incident's folder (by absolute path) and the one whose
    name holds a backslash and a newline among them."""
    ok = _sha256sum_check(rendered_wide["checksums"], wide_incident["root"])
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.count(b": OK\n") == len(wide_incident["files"])


def test_a_manifest_with_a_wider_max_offset_names_the_sessions_it_joined_otherwise(tmp_path, capsys):
    """max_offset_s: 7200, set to reach one agent's clock two hours off, also gave another
    session's transcript to an agent's repeat of its calls an hour later: the report says so up
    top, in that session's sentence, and `replaybook report` prints it among the findings."""
    from datetime import datetime, timedelta, timezone

    from replaybook.cli import main

    t0 = datetime(2026, 9, 13, 10, 0, tzinfo=timezone.utc)

    def iso(t):
        return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    (tmp_path / "t").mkdir()
    (tmp_path / "door" / "analyst").mkdir(parents=True)
    a, b = "aaaaaaaa-0000-4000-8000-00000000000a", "bbbbbbbb-0000-4000-8000-00000000000b"
    # (transcript, its first step (s), its steps, [(door session, seconds later the door logged each call)])
    for n, (sid, start, n_steps, sessions) in enumerate(((a, 0, 3, [("s1", 0.2), ("s3", 3600.2)]),
                                                         (b, 100, 5, [("s2", 7200.4)]))):
        lines = []
        for i in range(n_steps):
            t = t0 + timedelta(seconds=start + 10 * i)
            lines.append(json.dumps({
                "sessionId": sid, "version": "2.1.90", "isSidechain": False, "type": "assistant",
                "uuid": f"{sid[:8]}-{i:04d}-4000-8000-000000000000", "timestamp": iso(t), "requestId": f"r{n}{i}",
                "message": {"id": f"m{n}{i}", "role": "assistant", "content": [
                    {"type": "tool_use", "id": f"toolu_{n}{i}", "name": "mcp__door__read",
                     "input": {"path": f"{sid[0]}{i}"}}]}}))
            for ds, later in sessions:
                with (tmp_path / "door" / "analyst" / f"{ds}.jsonl").open("a") as fh:
                    fh.write(json.dumps({"ts": iso(t + timedelta(seconds=later)), "seq": i + 1, "session": f"door-{ds}",
                                         "tool": "read", "arguments": {"path": f"{sid[0]}{i}"},
                                         "decision": "allow"}) + "\n")
        (tmp_path / "t" / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "incident.yaml").write_text("title: clocks\ntranscripts: [t/]\ndoor: [door/]\nmax_offset_s: 7200\n")
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert (f"door session door-s1 matched to transcript {a} at max_offset_s 300 (the default), unmatched at 7200 "
            "(see the report)") in err
    assert (f"door session door-s2 unmatched at max_offset_s 300 (the default), matched to transcript {b} at 7200; "
            f"transcript {b}'s own clock joins it alone: clock_offsets {{{b}: 7200.4}} (see the report)") in err
    text = html_lib.unescape(re.sub("<[^>]+>", "", read(next((tmp_path / "out").glob("*.html")))))
    assert ("max_offset_s 7200 joined 3 door sessions otherwise than the default (300 s) would: door-s1, door-s3, "
            "door-s2; each one's sentence says how") in text
    assert (f"With max_offset_s 300 (the default) it was matched to transcript {a} (3 agreeing steps, clock offset "
            "+0.2 s); at 7200 it is unmatched.") in text


def test_a_conversation_across_a_door_restart_with_a_sub_agent_is_counted_once(tmp_path, capsys):
    """A reviewer's conversation continued across two door sessions (the door restarted) and
    started a sub-agent. The header said 2 door-bound tool calls with no door call where stderr
    and the residuals said 1, called the sub-agent's transcript one assigned to no session, and
    the sub-agent's agent-<id>.meta.json was read but in neither Inputs nor the .sha256 file."""
    from _continued_incident import SUB_TRANSCRIPT, meta_path, write_continued_incident

    from replaybook.cli import main

    manifest = write_continued_incident(tmp_path / "inc")
    assert main(["report", str(manifest), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert ("replaybook: 2 door sessions (2 matched); 4 door calls, 0 refused; left unpaired by the join: "
            "1 door-bound tool call with no door call\n") in err
    page = read(tmp_path / "out" / "inc.html")
    text = html_lib.unescape(re.sub("<[^>]+>", "", page.replace("<wbr/>", "").replace("<wbr>", "")))
    assert ("2 transcripts (1 assigned to a door session, 1 a sub-agent of an assigned one), 22 transcript events"
            in text)
    assert "Left unpaired by the join: 1 door-bound tool call with no door call" in text
    assert "Transcripts assigned to no door sessionNone: every transcript was assigned" in text
    residual = _table_rows(page[page.index("Transcript tool calls with no door call"):])
    assert len(residual) == 1
    meta = meta_path(manifest)
    digest = hashlib.sha256((manifest.parent / meta).read_bytes()).hexdigest()
    rows = _table_rows(_inputs_section(page))
    assert [meta, "claude-code sub-agent meta", str((manifest.parent / meta).stat().st_size), "1"] == rows[2][:4]
    assert rows[1][0].endswith(f"{SUB_TRANSCRIPT}.jsonl")
    sums = (tmp_path / "out" / "inc.sha256").read_text(encoding="utf-8").splitlines()
    assert f"{digest}  {meta}" in sums
    assert len(sums) == len([p for p in manifest.parent.rglob("*") if p.is_file()]) == 6
    if SHA256SUM is not None:
        ok = _sha256sum_check(str(tmp_path / "out" / "inc.sha256"), manifest.parent)
        assert ok.returncode == 0 and f"{meta}: OK".encode() in ok.stdout, ok.stdout + ok.stderr


def test_a_sub_agents_calls_behind_an_unmatched_door_and_a_clock_offset_not_applied_are_reported(tmp_path, capsys):
    """A sub-agent's calls through a second door whose session is unmatched had vanished from the
    residuals, and a clock_offsets entry naming no transcript was ignored without a word."""
    from _gate_incident import write_gate_incident

    from replaybook.cli import main

    manifest = write_gate_incident(tmp_path / "inc", "clock_offsets:\n  agent-typo: 40.2\n")
    assert main(["report", str(manifest), "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    said = ("clock_offsets names a transcript no input holds: agent-typo; its offset was not applied "
            "(`replaybook load steps` lists each step's transcript_id)")
    assert f"replaybook: warning: {said}\n" in err
    assert "left unpaired by the join: 2 door calls no step claims and 3 door-bound tool calls with no door call" in err
    page = read(tmp_path / "out" / "inc.html")
    text = html_lib.unescape(re.sub("<[^>]+>", "", page.replace("<wbr/>", "").replace("<wbr>", "")))
    assert f"Not applied: {said}." in text
    residual = _table_rows(page[page.index("Transcript tool calls with no door call"):])
    assert len(residual) == 3


def test_a_packets_findings_and_files_reach_stderr_the_header_and_the_checksums(tmp_path, capsys):
    """With ``packet:`` in the manifest the page had its packet section, but the findings line on
    stderr (what a CI job reads) and the header said nothing of the PR body's false claims, and
    Inputs and the ``.sha256`` file left the packet's files out."""
    from conftest import write_tiny_incident

    from replaybook.cli import main

    manifest = write_tiny_incident(tmp_path)
    claims = Path(__file__).resolve().parents[1] / "fixtures" / "packet" / "claims"
    pr = tmp_path / "pr"
    (pr / "session.outputs").mkdir(parents=True)
    shutil.copy(claims / "session.jsonl", pr / "session.jsonl")
    shutil.copy(claims / "PR_BODY.md", manifest.parent / "PR_BODY.md")
    (pr / "session.outputs" / "a.txt").write_text("1 passed\n")
    manifest.write_text(manifest.read_text() + "packet:\n  log: ../pr/session.jsonl\n  body: PR_BODY.md\n")
    assert main(["report", str(manifest), "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert ("replaybook: 1 door session (1 matched); 2 door calls, 1 refused; 1 line set aside (see Quarantine); "
            "replay packet: 2 findings, 1 warning, 2 of 4 markers accepted in the PR body\n") in err
    page = read(tmp_path / "r" / "tiny-incident.html")
    assert ('<a href="#packet">Replay packet</a>: 2 findings, 1 warning, 2 of 4 markers accepted in the PR '
            "body") in page
    sums = (tmp_path / "r" / "tiny-incident.sha256").read_text().splitlines()
    out = pr.resolve()
    assert sums[-3:] == [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {name}" for p, name in (
        (out / "session.jsonl", out / "session.jsonl"), (manifest.parent / "PR_BODY.md", "PR_BODY.md"),
        (out / "session.outputs" / "a.txt", out / "session.outputs" / "a.txt"))]
    inputs = re.sub("<[^>]+>", "", _inputs_section(page))
    assert "packet session log" in inputs and "packet PR body" in inputs and "packet stored output" in inputs
    if SHA256SUM:
        ok = _sha256sum_check(str(tmp_path / "r" / "tiny-incident.sha256"), manifest.parent)
        assert ok.returncode == 0, ok.stdout + ok.stderr


def test_a_capsules_verdict_reaches_stderr_and_the_header(tmp_path, capsys):
    """The capsule demo's finding — today's live run diverged at checkpoint 12, with a suggested
    decision — was only in the Replay capsule section far down the page; stderr and the header
    said "1 door session (1 matched); 4 door calls, 0 refused" and nothing more."""
    from replaybook.cli import main

    demo = Path(__file__).resolve().parents[2] / "data" / "capsule-demo"
    assert main(["report", str(demo / "incident.yaml"), "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    said = ("replay capsule: forensic replay reproduced, live run diverged at checkpoint 12; suggested decision: "
            "incident_explained_by_service_catalogue_drift")
    assert f"; {said}\n" in err
    page = read(next((tmp_path / "r").glob("*.html")))
    head = page[:page.index("Sessions and the join")]
    assert ('<strong><a href="#capsule">Replay capsule</a>: forensic replay reproduced, live run diverged at '
            "checkpoint 12; suggested decision: incident_explained_by_service_catalogue_drift</strong>") in head
    assert page.count('id="capsule"') == 1


def test_the_page_title_writes_invisible_and_control_characters_out():
    from replaybook.report.render import page_title

    assert page_title({"title": "T\u202eeltit\nx"}, "s") == "T\\u202eeltit\\nx — replaybook review"
    assert page_title({}, "demo") == "demo — replaybook review"


@pytest.mark.parametrize("stage", ["notebook", "html"])
def test_a_full_disk_is_said_with_the_file_and_leaves_no_half_written_report(tiny_incident, tmp_path, monkeypatch,
                                                                            capsys, stage):
    """A disk that filled up while papermill wrote the notebook had ended `report` with "report
    execution failed: OSError", exit 1 (an internal error), and left the half-written notebook
    as if it were a report."""
    import errno

    from replaybook.cli import main
    from replaybook.report import render

    def execute(template, out_ipynb, *args):
        if stage == "notebook":
            out_ipynb.write_text('{"cells": [')  # (papermill writes it as the cells run)
            raise OSError(errno.ENOSPC, "No space left on device")
        nbformat.write(new_notebook(cells=[new_markdown_cell("# ok")]), out_ipynb)

    def to_html(ipynb, html_path):
        Path(html_path).write_text("<html><body>half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(render, "_execute", execute)
    monkeypatch.setattr(render, "to_html", to_html)
    out = tmp_path / "out"
    with pytest.raises(OSError) as got:
        render_report(tiny_incident, out, timeout=20)
    name = "tiny-incident.ipynb" if stage == "notebook" else "tiny-incident.html"
    assert (got.value.errno, got.value.filename) == (errno.ENOSPC, str(out / name))
    assert list(out.iterdir()) == []
    assert main(["report", str(tiny_incident), "--out", str(tmp_path / "out2")]) == 2
    assert f"cannot write {tmp_path / 'out2' / name}: No space left on device" in capsys.readouterr().err
    assert list((tmp_path / "out2").iterdir()) == []


def test_a_full_temporary_folder_is_not_the_report_folders_and_leaves_an_earlier_report_alone(tiny_incident, tmp_path,
                                                                                              monkeypatch, capsys):
    """The temporary folder filling up before papermill wrote the notebook (the sniffed-files list
    handed to the kernel) had been said as the report notebook's disk being full, and the earlier
    report's notebook removed, though this run had not written it."""
    import errno

    from replaybook.cli import main
    from replaybook.report import render
    from replaybook.sources import registry

    out = tmp_path / "out"
    out.mkdir()
    ipynb, html, _ = render.report_files(tiny_incident, out)
    ipynb.write_text("the earlier report, with the reviewer's notes")
    html.write_text("<html>the earlier report</html>")

    def full(path):
        Path(path).write_text("[")
        raise OSError(errno.ENOSPC, "No space left on device")  # (a write names no file)

    monkeypatch.setattr(registry, "export_verdicts", full)
    with pytest.raises(render.ReportError, match="No space left on device"):
        render_report(tiny_incident, out, timeout=20)
    assert ipynb.read_text() == "the earlier report, with the reviewer's notes"
    assert main(["report", str(tiny_incident), "--out", str(out)]) == 1
    assert f"cannot write {ipynb}" not in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == [html.name, ipynb.name]
