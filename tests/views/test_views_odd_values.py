"""The views and the report on values the evidence may hold but the demo does not: a step with
no timestamp, a session id or title holding markup, a table whose headers are numbers, a call
the frame gives no number."""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

import pandas as pd

from replaybook.frames import CALLS
from replaybook.incident import Incident
from replaybook.views import session as S

REPO = Path(__file__).resolve().parents[2]
T1 = "919dc839-23e1-56e5-8bd5-430e87d6a897"


def test_a_step_without_a_timestamp_keeps_its_place_in_the_conversation(tmp_path):
    """A model request whose line carries no timestamp (NaT, as STEPS allows) had been moved to
    the end of the conversation, after the agent's final answer, in the workbook and the report."""
    shutil.copytree(REPO / "data" / "demo", tmp_path / "demo")
    f = tmp_path / "demo" / "transcripts" / f"{T1}.jsonl"
    lines = [json.loads(x) for x in f.read_text().splitlines()]
    before = Incident.load(tmp_path / "demo" / "incident.yaml")
    ds = before.join.sessions.set_index("transcript_id").loc[T1, "door_session"]
    want = list(S.conversation(before.steps, before.calls, before.join, ds)["label"])
    dropped = lines[8]
    del lines[8]["timestamp"]
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    inc = Incident.load(tmp_path / "demo" / "incident.yaml")
    conv = S.conversation(inc.steps, inc.calls, inc.join, ds)
    assert list(conv["label"]) == want
    nat = conv[conv["ts"].isna()]
    assert len(nat) == 1 and nat["label"].iloc[0].startswith("model: ")
    assert dropped["message"]["content"][0]["text"][:20] in nat["label"].iloc[0]
    assert nat["order"].iloc[0] < conv["order"].max()


def test_the_static_workbook_escapes_the_title_and_session_ids(tmp_path, monkeypatch):
    """``display_static`` (the papermill workbook) had written the manifest's title and each
    door session id into Markdown as they were: a session id (an ``Mcp-Session-Id`` the client
    chose) holding ``<img onerror=…>`` reached the page as a tag."""
    import IPython.display as D

    (tmp_path / "door" / "a").mkdir(parents=True)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.txt").write_text("hi\n")
    sid = "s1` <img src=x onerror=alert(1)> `"
    (tmp_path / "door" / "a" / "s1.jsonl").write_text(json.dumps(
        {"ts": "2026-09-13T10:00:01Z", "seq": 1, "session": sid, "agent": "a", "tool": "read_file",
         "arguments": {"path": "a.txt"}, "object": "a.txt", "decision": "allow"}) + "\n")
    (tmp_path / "incident.yaml").write_text('title: "T <b onmouseover=x>"\ntranscripts: []\ndoor:\n  - door/\n'
                                            "data_root: data/\n")
    shown: list = []
    monkeypatch.setattr(D, "display", lambda *a, **k: shown.extend(a))
    S.display_static(Incident.load(tmp_path / "incident.yaml"), chart=False)
    heads = [x.data for x in shown if isinstance(x, (D.HTML, D.Markdown)) and isinstance(x.data, str)
             and ("Sessions —" in x.data or "Door session <code>" in x.data)]
    assert heads[:2] == ["<h2>Sessions — T &lt;b onmouseover=x&gt;</h2>",
                         f"<h3>Door session <code>{html.escape(sid)}</code></h3>"]
    assert not any("<img" in x.data or "<b " in x.data for x in shown if isinstance(x, D.Markdown))


def _calls(**kw) -> pd.DataFrame:
    row = dict(door_session="s1", agent="a", seq=1, ts=pd.Timestamp("2026-09-13T10:00:00Z"), tool="read_file",
               arguments={}, args_key="{}", object="demo/a.txt", decision="allow", rule="r")
    row.update(kw)
    return CALLS.build([row])


def test_a_table_with_numbers_for_headers_shows_its_values_in_the_report(tmp_path):
    """A JSON table whose headers are years (read as numbers) had shown "—" in every cell of
    "What the agent reached": the cells were looked up by the header's text."""
    from replaybook.report import sections as RS

    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "years.json").write_text('[{"2020": 5, "2021": 7}, {"2020": 6, "2021": 8}]')
    got = RS.reached_objects(_calls(object="demo/years.json"), tmp_path).previews
    assert len(got) == 1 and got[0][0] == "demo/years.json"
    cells = [c for c in html.unescape(got[0][1]).replace("</td>", "<td>").split("<td>")
             if c.strip() and "<" not in c]
    assert cells[:4] == ["5", "7", "6", "8"], got[0][1]


def test_a_call_without_a_number_is_replayed_and_tabled(tmp_path):
    """A calls frame built by hand may leave ``seq`` NA (Int64 allows it): the Replay plan and the
    session view's table had raised ``TypeError`` on it."""
    from replaybook.join import join_sessions
    from replaybook.replay import ReplayPlan
    from replaybook.views.widgets import SessionView

    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "a.txt").write_text("hi\n")
    calls = _calls(seq=None)
    plan = ReplayPlan.from_calls(calls, tmp_path)
    assert [(s.call_seq, s.object, s.opens) for s in plan.steps] == [(None, "demo/a.txt", "object")]
    from replaybook.frames import STEPS

    j = join_sessions(STEPS.empty(), calls, window_s=60)

    class Inc:
        pass

    inc = Inc()
    inc.calls, inc.steps, inc.join, inc.data_root, inc.window_s = calls, STEPS.empty(), j, tmp_path, 60
    v = SessionView(inc, "s1")
    assert v.object_buttons == {} and len(v.row_buttons) == 1


def test_the_static_workbook_lists_every_call_of_a_long_session(monkeypatch, tmp_path):
    """pandas shows only the first and last five rows of a table over 60: the static workbook
    (papermill, ``interactive=False``) had left a session's 31st call — refused — out of its
    door table and its Replay plan, while the live workbook lists it."""
    import IPython.display as D

    t0 = pd.Timestamp("2026-09-13T10:00:00Z")
    calls = CALLS.build([dict(door_session="s1", agent="a", seq=i + 1, ts=t0 + pd.Timedelta(seconds=i),
                              tool="read_file", arguments={}, args_key="{}", object="demo/a.txt",
                              decision="deny" if i == 30 else "allow", rule="no-31" if i == 30 else "r")
                         for i in range(80)])
    from replaybook.frames import STEPS
    from replaybook.join import join_sessions

    class Inc:
        pass

    inc = Inc()
    inc.calls, inc.steps, inc.data_root, inc.window_s, inc.title = calls, STEPS.empty(), tmp_path, 60, "t"
    inc.join = join_sessions(inc.steps, calls, window_s=60)
    tables: list[str] = []  # rendered as the notebook renders them, at display time
    monkeypatch.setattr(D, "display", lambda *a, **k: tables.extend(
        x._repr_html_() for x in a if isinstance(x, pd.DataFrame)))
    S.display_static(inc, chart=False)
    door, plan = tables[1], tables[2]
    assert door.count("<tr>") == 80 and plan.count("<tr>") == 80  # (the header row carries a style)
    assert "no-31" in door and "no-31" in plan

    notes: list[str] = []
    monkeypatch.setattr(D, "display", lambda *a, **k: notes.extend(
        x.data for x in a if isinstance(x, D.HTML)))
    S._display_whole(calls[["seq", "decision"]], max_rows=50)
    assert notes == ["<i>30 more rows not shown (the first 50 of 80 are)</i>"]


def test_the_preview_pane_says_a_table_or_folder_is_shown_in_part(tmp_path):
    """The pane showed the first 20 of cars.xpt's 32 rows (and 20 of a folder's entries) with
    no word that there were more: a reviewer checking the agent's average mpg against it
    would have averaged 20 cars."""
    import re

    from replaybook.replay import preview

    pv = preview(REPO / "data" / "demo" / "data", "demo/cars.xpt")
    h = S.preview_html(pv)
    assert pv.rows == 32 and h.count("<tr>") == 20
    assert re.findall(r'<div class="rb-preview-rows"[^>]*>([^<]*)<', h) == ["Showing the first 20 of 32 rows."]
    assert 'data-shown="20" data-total="32"' in h

    (tmp_path / "d").mkdir()
    for i in range(25):
        (tmp_path / "d" / f"f{i:02}.txt").write_text("x")
    h = S.preview_html(preview(tmp_path, "d"))
    assert "Showing the first 20 of 25 entries." in h and h.count("<tr>") == 20

    (tmp_path / "small.csv").write_text("a,b\n1,2\n3,4\n")
    (tmp_path / "d2").mkdir()
    (tmp_path / "d2" / "one.txt").write_text("x")
    assert "rb-preview-rows" not in S.preview_html(preview(tmp_path, "small.csv"))
    assert "rb-preview-rows" not in S.preview_html(preview(tmp_path, "d2"))


def test_the_preview_pane_says_a_text_is_shown_in_part(tmp_path):
    """A text file of 1,000 lines showed its first 40 in the pane with no word that there were
    more (only its size in bytes)."""
    from replaybook.replay import preview

    (tmp_path / "long.txt").write_text("".join(f"line {i}\n" for i in range(1000)))
    (tmp_path / "short.txt").write_text("one\ntwo\n")
    (tmp_path / "wide.txt").write_text("x" * 100_000)  # one line, longer than is read
    h = S.preview_html(preview(tmp_path, "long.txt"))
    assert "Showing the first 40 lines: there is more." in h and "line 39" in h and "line 40" not in h
    assert "Showing the first 1 line: there is more." in S.preview_html(preview(tmp_path, "wide.txt"))
    assert "rb-preview-rows" not in S.preview_html(preview(tmp_path, "short.txt"))
