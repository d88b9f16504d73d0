"""The workbook's widgets and their pure helpers, without a browser.

The widgets only render what :mod:`replaybook.views.session` and :mod:`replaybook.replay`
compute; these tests drive them the way a click would (calling the handlers) and read the
widgets' state and HTML.  ``charts=False`` skips the JupyterChart widgets where a test only
needs tables (the offline Vega bundle takes seconds to build).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import ipywidgets as W
import pandas as pd
import pytest

from replaybook.incident import Incident
from replaybook.views import session as S
from replaybook.views.widgets import CSS_CLASSES, SessionView, Workbook

S1 = "door-20260913T100005-a1"
S2 = "door-20260913T100052-b7"
T1 = "919dc839-23e1-56e5-8bd5-430e87d6a897"
T2 = "3b4173aa-345d-5382-aff0-c40b872f81ae"
SECRETS = ("WAREHOUSE_PASSWORD", "demo-not-a-real-secret", "wJalrXUtnFEMI")
REPO = Path(__file__).resolve().parents[2]


def states(view: SessionView) -> list[str]:
    return [s.state for s in view.plan.steps]


def panel_items(html_text: str) -> list[dict]:
    return [dict(re.findall(r'data-(\w+)="([^"]*)"', li)) for li in re.findall(r"<li [^>]*>", html_text)]


# -- sessions list ------------------------------------------------------------------------------


def test_sessions_list_from_the_demo(demo_incident):
    f = S.sessions_list(demo_incident.join)
    assert list(f["door_session"]) == [S1, S2]
    assert list(f["transcript"]) == [T1, T2]
    assert list(f["calls"]) == [5, 4] and list(f["refused"]) == [1, 0]
    assert list(f["status"]) == ["matched", "matched"]
    assert f["offset_ms"].tolist() == [750.0, 750.0]
    for col in ("agent", "start", "end", "agreed", "share", "runner_up", "margin"):
        assert col in f.columns

    wb = Workbook(demo_incident, charts=False)
    assert set(wb.sessions.open_buttons) == {S1, S2}
    b = wb.sessions.open_buttons[S1]
    assert CSS_CLASSES["open_session"] in b._dom_classes and f"rb-session-{S1}" in b._dom_classes
    assert CSS_CLASSES["row_replay"] in wb.sessions.replay_buttons[S2]._dom_classes


def test_the_sessions_list_of_many_sessions_is_a_few_widgets_a_row(demo_incident):
    """A widget a cell and a layout and style a button: an incident of 2,000 door sessions made
    the list some 86,000 widgets, 25 s to build in the kernel and more than a browser tab draws."""
    from ipywidgets.widgets.widget import _instances

    from replaybook.frames import CALLS, STEPS
    from replaybook.join import join_sessions
    from replaybook.views.widgets import SessionsList

    t0 = pd.Timestamp("2026-09-13T10:00:00Z")
    n = 300
    calls = CALLS.build([dict(door_session=f"s{i:04}", agent="a", seq=1, ts=t0 + pd.Timedelta(seconds=i),
                              tool="read_file", arguments={}, args_key="{}", object="demo/a.txt",
                              decision="deny" if i == 7 else "allow", rule="r") for i in range(n)])
    before = len(_instances)
    sl = SessionsList(join_sessions(STEPS.empty(), calls, window_s=60), lambda ds: None, lambda ds: None)
    assert len(_instances) - before <= 4 * n + 20, len(_instances) - before
    assert list(sl.open_buttons) == [f"s{i:04}" for i in range(n)] and len(sl.replay_buttons) == n
    rows = [c for c in sl.widget.children[0].children if "rb-grid-row" in getattr(c, "_dom_classes", ())]
    assert len(rows) == n + 1  # the head, then a row a session
    cells = re.findall(r">([^<]*)</span>", rows[8].value)  # s0007: one call, refused
    assert cells == ["a", "10:00:07.000", "10:00:07.000", "1", "1", "— none —", "", "unmatched", "", "", ""]
    assert 'style="color:#d62728;font-weight:bold">1<' in rows[8].value


def test_the_workbook_opens_an_incident_with_more_door_calls_than_altair_draws(demo_incident):
    """The brush strip under the timeline drew one tick per event: above 5,000 door calls Altair
    refused the data and the workbook did not open at all."""
    calls = demo_incident.calls
    many = pd.concat([calls.assign(ts=calls["ts"] + pd.Timedelta(seconds=i), seq=calls["seq"] + 10 * i)
                      for i in range(1300)], ignore_index=True)
    assert len(many) > 10_000
    spec = S.timeline_with_brush(demo_incident.steps, many, demo_incident.join.pairs).to_dict()
    strip = spec["vconcat"][1]
    ticks = spec["datasets"][strip["data"]["name"]]
    assert 0 < len(ticks) <= 5000
    assert {t["what"] for t in ticks} == {"door allow", "door deny", "transcript"}
    first = pd.to_datetime(many["ts"].min()).strftime("%H:%M:%S.%f")[:-3]
    last = pd.to_datetime(many["ts"].max()).strftime("%H:%M:%S.%f")[:-3]
    assert any(first in t["t"] for t in ticks) and any(last in t["t"] for t in ticks)  # the full extent


def test_selecting_rows_opens_one_tab_per_session(demo_incident):
    wb = Workbook(demo_incident, charts=False)
    wb.sessions.open_buttons[S1].click()
    wb.sessions.open_buttons[S2].click()
    assert list(wb.views) == [S1, S2]
    assert len(wb.tabs.children) == 2 and wb.tabs.titles == (S1, S2)
    assert wb.tabs.selected_index == 1
    wb.sessions.open_buttons[S1].click()  # already open: selected, not duplicated
    assert len(wb.tabs.children) == 2 and wb.tabs.selected_index == 0
    wb.close_session(S1)
    assert wb.tabs.titles == (S2,)


def test_second_session_a_minute_later_shows_its_own_transcript(demo_incident):
    wb = Workbook(demo_incident, charts=False)
    v1, v2 = wb.open_session(S1), wb.open_session(S2)
    assert v1.transcript_id == T1 and v2.transcript_id == T2
    assert "19.90" in " ".join(v1.conversation["label"]) and "20.35" not in " ".join(v1.conversation["label"])
    assert "20.35 (from cars.xpt)" in " ".join(v2.conversation["label"])
    # each tool call carries what its door call reached
    reached = v2.conversation[v2.conversation["lane"] == "tool call"]
    assert list(reached["call_seq"]) == [1, 2, 3, 4]
    assert reached["status"].eq("reached").all()
    assert "demo/cars.xpt · allow (allow-demo) · 1 row · 96 B" in reached["reach"].iloc[-1]
    refused = v1.conversation[v1.conversation["status"] == "refused"]
    assert list(refused["object"]) == ["reference/.env"] and list(refused["rule"]) == ["no-dotenv"]
    assert T2 in v2.header.value and "+750 ms" in v2.header.value


def test_conversation_shows_calls_the_door_never_saw_and_unclaimed_calls(demo_incident):
    steps, calls = demo_incident.steps, demo_incident.calls
    # the door "lost" call 2 of session 1, and logged an extra call no step made
    extra = calls[(calls["door_session"] == S1) & (calls["seq"] == 1)].copy()
    extra["seq"] = 9
    extra["ts"] = extra["ts"] + pd.Timedelta(seconds=30)
    extra["object"] = "demo/README.txt"
    calls2 = pd.concat([calls[~((calls["door_session"] == S1) & (calls["seq"] == 2))], extra], ignore_index=True)
    from replaybook.join import join_sessions

    j2 = join_sessions(steps, calls2, window_s=60)
    conv = S.conversation(steps, calls2, j2, S1)
    assert "door never saw" in set(conv["status"])
    never = conv[conv["status"] == "door never saw"]
    assert list(never["tool"]) == ["describe"]
    unclaimed = conv[conv["status"] == "unclaimed"]
    assert list(unclaimed["call_seq"]) == [9] and list(unclaimed["lane"]) == ["door"]
    # placed at its time on the transcript's clock, after the steps written before it
    assert unclaimed["order"].iloc[0] > conv[conv["step_seq"] == 5]["order"].iloc[0]
    table = S.door_table(calls2, j2, S1)
    assert table.loc[table["seq"] == 9, "note"].iloc[0] == "no transcript step claims this call"
    spec = S.conversation_chart(conv).to_dict()
    statuses = {v["status"] for v in spec["datasets"][next(iter(spec["datasets"]))]}
    assert {"door never saw", "unclaimed", "refused", "reached"} <= statuses


def test_a_call_logged_ask_is_neither_reached_nor_refused(demo_incident):
    """A gateway log that records only that a rule asked (decision ``ask``, no outcome) had been
    shown "REFUSED … nothing returned" in the conversation while the header counted it as not
    refused, and the door had logged bytes returned for it."""
    from replaybook.join import join_sessions
    from replaybook.replay import ReplayPlan

    calls = demo_incident.calls.copy()
    i = calls.index[(calls["door_session"] == S1) & (calls["seq"] == 2)][0]
    calls.loc[i, "decision"] = "ask"
    calls.loc[i, "rule"] = "ask-first"
    j = join_sessions(demo_incident.steps, calls, window_s=60)
    conv = S.conversation(demo_incident.steps, calls, j, S1)
    row = conv[conv["call_seq"] == 2].iloc[0]
    assert row["status"] == "asked" and "REFUSED" not in row["reach"]
    assert row["reach"] == ("demo/cars.xpt · ASKED the user by rule ask-first · the log does not say what they "
                            "answered · the door logged 32 rows, 2,720 B returned")
    table = S.door_table(calls, j, S1).set_index("seq")
    assert table.loc[2, "note"] == "the rule ask-first asked the user; the log does not say what they answered"
    # the static workbook shows this table: not refused, as the header counts it
    assert table["refused"].tolist() == [False, False, False, False, True]
    step = next(s for s in ReplayPlan.from_calls(calls, demo_incident.data_root, door_session=S1).steps if s.call_seq == 2)
    assert step.note == "the rule ask-first asked the user; the log does not say what they answered"
    spec = S.conversation_chart(conv).to_dict()
    assert "asked" in {v["status"] for v in spec["datasets"][next(iter(spec["datasets"]))]}


def test_replay_neither_counts_nor_words_an_ask_as_a_refusal(demo_incident):
    """A call the door logged ``ask`` (the log does not say what the user answered): the session's
    header said "0 refused" while its Replay panel counted "1 in all", crossed the step out,
    drew its slice of the overview red and the pane said "The agent was refused it"; clicking
    its object said "(refused)", and the door table crossed it out."""
    from types import SimpleNamespace

    from replaybook.join import join_sessions

    calls = demo_incident.calls.copy()
    i = calls.index[(calls["door_session"] == S2) & (calls["seq"] == 2)][0]
    calls.loc[i, "decision"] = "ask"
    calls.loc[i, "rule"] = "ask-first"
    inc = SimpleNamespace(calls=calls, steps=demo_incident.steps, join=join_sessions(demo_incident.steps, calls,
                                                                                     window_s=60),
                          data_root=demo_incident.data_root, window_s=60, manifest={})
    v = SessionView(inc, S2, charts=False)
    assert "4 calls, 0 refused" in v.header.value
    v.replay_start(run=False)
    v.replay_step()
    v.replay_step()
    head = dict(re.findall(r'data-([\w-]+)="([^"]*)"', re.search(r'<div class="rb-replay-head"[^>]*>', v.panel.value)[0]))
    assert head["refused"] == "0" and "refused so far" not in v.panel.value
    li = panel_items(v.panel.value)[1]
    assert li["seq"] == "2" and li["state"] == "current"
    assert "rb-step-asked" in v.panel.value and "rb-step-refused" not in v.panel.value and "<s>" not in v.panel.value
    assert 'data-kind="asked"' in v.viewer.value and "refused" not in v.viewer.value
    assert ("demo/cars.xpt — the rule ask-first asked the user; the log does not say what they answered, "
            "so nothing is opened.") in v.viewer.value
    while v.replay_step():
        pass
    assert panel_items(v.panel.value)[1]["mark"] == "?"
    assert "rb-ov-refused" not in v.overview.value
    shown = v.open_object(2)
    assert 'data-kind="asked"' in shown and "refused" not in shown and "<s>" not in shown
    assert "(asked the user)" in shown
    b = v.object_buttons[2]  # the door table: not crossed out as refused either
    assert "rb-asked" in b._dom_classes and "rb-refused" not in b._dom_classes
    assert "rb-refused" in Workbook(demo_incident, charts=False).open_session(S1).object_buttons[5]._dom_classes


def test_a_tool_call_with_free_text_input_shows_that_text(demo_incident):
    """Codex's apply_patch sends a patch, not JSON arguments (args_key NA): the conversation had
    shown only the tool's name, so a file write was invisible."""
    from replaybook.join import join_sessions

    steps = demo_incident.steps.copy()
    tid = demo_incident.join.assignments()[S1]
    i = steps.index[(steps["transcript_id"] == tid) & (steps["kind"] == "tool_call") & (steps["tool"] == "describe")][0]
    steps.loc[i, "args_key"] = pd.NA
    steps.loc[i, "text"] = "*** Begin Patch\n*** Add File: gamma.txt\n+hello\n*** End Patch"
    j = join_sessions(steps, demo_incident.calls, window_s=60)
    conv = S.conversation(steps, demo_incident.calls, j, S1)
    row = conv[conv["step_seq"] == steps.loc[i, "seq"]].iloc[0]
    assert row["text"] == "*** Begin Patch *** Add File: gamma.txt +hello *** End Patch"


def test_session_without_a_transcript_shows_the_table_and_a_note(demo_copy):
    man = demo_copy / "incident.yaml"
    man.write_text(man.read_text().replace("transcripts/*.jsonl", "transcripts/9c58*.jsonl"))
    inc = Incident.load(man)
    wb = Workbook(inc, charts=False)
    v = wb.open_session(S1)
    assert v.transcript_id is None and v.conversation is None
    assert CSS_CLASSES["no_transcript"] in v.conversation_box._dom_classes
    assert "conversation would be here" in v.conversation_box.value
    assert len(v.table) == 5 and set(v.object_buttons) == {1, 2, 3, 4, 5}
    assert "no matched transcript" in v.header.value


# -- object preview -------------------------------------------------------------------------------


def test_refused_object_preview_shows_the_refusal_not_the_file(demo_incident):
    v = Workbook(demo_incident, charts=False).open_session(S1)
    b = v.object_buttons[5]
    assert "rb-refused" in b._dom_classes and b.description == "reference/.env"
    b.click()
    out = v.viewer.value
    assert 'data-kind="refused"' in out and "refused by rule no-dotenv" in out
    assert not any(s in out for s in SECRETS)
    # allowed objects open: a folder lists, a data file shows its head
    v.object_buttons[1].click()
    assert 'data-kind="folder"' in v.viewer.value and "cars.parquet" in v.viewer.value
    v.object_buttons[4].click()
    assert 'data-kind="table"' in v.viewer.value and "mpg" in v.viewer.value


def test_a_door_call_with_no_object_opens_its_session(demo_copy):
    """A tool that names no object (a search) is logged with ``object: null``: pandas reads the
    missing value as NaN, and the session's tab failed to open."""
    log = demo_copy / "door" / "analyst" / f"{S1}.jsonl"
    line = json.loads(log.read_text().splitlines()[0])
    line.update(seq=6, ts="2026-09-13T10:01:30.000Z", tool="search", arguments={"q": "mpg"}, object=None,
                rows=None, bytes=None)
    with log.open("a") as fh:
        fh.write(json.dumps(line) + "\n")
    v = Workbook(Incident.load(demo_copy / "incident.yaml"), charts=False).open_session(S1)
    b = v.object_buttons[6]
    assert b.description == "(no object)" and b.disabled
    assert 'data-kind="missing"' in v.open_object(6) and "reached no object" in v.viewer.value


def test_a_refused_row_never_opens_the_file_of_another_call_with_its_number(demo_copy):
    """A door that restarted mid-session numbers calls from 1 again: a refused row shared its
    number with an allowed call, and clicking the refused row opened the allowed call's file."""
    log = demo_copy / "door" / "analyst" / f"{S1}.jsonl"
    line = json.loads(log.read_text().splitlines()[1])  # seq 2: describe demo/cars.xpt, allowed
    line.update(ts="2026-09-13T10:01:30.000Z", decision="deny", rule="no-xpt-after-restart", rows=None, bytes=None)
    with log.open("a") as fh:
        fh.write(json.dumps(line) + "\n")
    v = Workbook(Incident.load(demo_copy / "incident.yaml"), charts=False).open_session(S1)
    assert list(v.table["seq"]) == [1, 2, 3, 4, 5, 2]
    buttons = [b for b in v.door_box.children[0].children if isinstance(b, W.Button)]
    refused, allowed = buttons[5], buttons[1]
    assert "rb-refused" in refused._dom_classes and "rb-refused" not in allowed._dom_classes
    refused.click()
    assert 'data-kind="refused"' in v.viewer.value and "no-xpt-after-restart" in v.viewer.value
    allowed.click()
    assert 'data-kind="table"' in v.viewer.value and "mpg" in v.viewer.value


def _restarted_door(demo_copy) -> SessionView:
    """Session 1 with a door that restarted at 10:01:30 and numbered its calls from 1 again:
    a second call #2 (describe demo/cars.xpt), this time refused."""
    log = demo_copy / "door" / "analyst" / f"{S1}.jsonl"
    line = json.loads(log.read_text().splitlines()[1])  # seq 2: describe demo/cars.xpt, allowed
    line.update(ts="2026-09-13T10:01:30.000Z", decision="deny", rule="no-xpt-after-restart", rows=None, bytes=None)
    with log.open("a") as fh:
        fh.write(json.dumps(line) + "\n")
    return Workbook(Incident.load(demo_copy / "incident.yaml"), charts=False).open_session(S1)


def test_open_object_refuses_a_number_two_calls_carry_and_opens_the_call_named_by_time_or_row(demo_copy):
    """open_object(seq) opened the first call of that number: with a door that restarted, the
    refused call #2 could not be opened from Python at all (it showed the allowed one's file)."""
    from replaybook.errors import AmbiguousCall

    v = _restarted_door(demo_copy)
    assert list(v.table["seq"]) == [1, 2, 3, 4, 5, 2]
    assert list(v.table["note"])[1] == "2 calls carry #2"
    # the transcript made one describe of cars.xpt: the first #2 claims it, the restarted one none
    assert v.table["note"].iloc[5] == ("2 calls carry #2; refused by rule no-xpt-after-restart; "
                                       "no transcript step claims this call")
    assert list(v.table["claimed"]) == [True, True, True, True, True, False]
    before = v.viewer.value
    with pytest.raises(AmbiguousCall) as e:
        v.open_object(2)
    assert str(e.value) == (
        "door call #2 is not one call of door session 'door-20260913T100005-a1': 2 calls match — "
        "row=1: #2 at 2026-09-13 10:00:20.570 UTC, describe demo/cars.xpt, allow (allow-demo); "
        "row=5: #2 at 2026-09-13 10:01:30.000 UTC, describe demo/cars.xpt, deny (no-xpt-after-restart). "
        "To open one, add its time as the table shows it (ts='10:01:30.000') or name it by row (row=…)")
    assert [(c["row"], c["decision"]) for c in e.value.candidates] == [(1, "allow"), (5, "deny")]
    assert v.viewer.value == before  # nothing opened
    # the time as the table shows it, a shorter one, a full timestamp, or the row
    for how in ({"ts": "10:01:30.000"}, {"ts": "10:01:30"}, {"ts": "2026-09-13T10:01:30Z"},
                {"ts": pd.Timestamp("2026-09-13 10:01:30", tz="UTC")}):
        pane = v.open_object(2, **how)
        assert 'data-kind="refused"' in pane and "no-xpt-after-restart" in pane, how
    assert 'data-kind="table"' in v.open_object(2, ts="10:00:20.570") and "mpg" in v.viewer.value
    assert 'data-kind="table"' in v.open_object(row=1)
    assert 'data-kind="refused"' in v.open_object(row=5)
    # a number one call carries opens as before; none, or a time no call #2 has, opens nothing
    assert 'data-kind="folder"' in v.open_object(1)
    assert "no such door call" in v.open_object(9) and "no such door call" in v.open_object(2, ts="10:01:31")
    with pytest.raises(IndexError, match=f"row 6 is not a call of door session '{S1}': it has rows 0–5"):
        v.open_object(row=6)
    from replaybook.errors import InputError

    with pytest.raises(InputError, match="not both"):
        v.open_object(2, row=5)
    # the door's table: each row's button, by row
    assert "rb-refused" in v.row_buttons[5]._dom_classes and "rb-refused" not in v.row_buttons[1]._dom_classes


def test_a_chart_pick_of_a_shared_number_lists_the_calls_instead_of_opening_one(demo_copy):
    v = _restarted_door(demo_copy)
    v._on_pick({"new": type("Sel", (), {"value": [{"call_seq": 2}]})()})
    assert 'data-kind="ambiguous"' in v.viewer.value and "row=5: #2 at 2026-09-13 10:01:30.000 UTC" in v.viewer.value
    v._on_pick({"new": type("Sel", (), {"value": [{"call_seq": 4}]})()})
    assert 'data-kind="table"' in v.viewer.value
    # the conversation chart's marks carry the call's row in the calls frame: a pick opens that call
    calls = v.incident.calls
    rows = [int(i) for i in range(len(calls))
            if calls["door_session"].iat[i] == S1 and calls["seq"].iat[i] == 2]
    assert [calls["decision"].iat[i] for i in rows] == ["allow", "deny"]
    conv = v.conversation
    assert sorted(int(x) for x in conv.loc[conv["call_seq"] == 2, "call_row"]) == rows
    v._on_pick({"new": type("Sel", (), {"value": [{"call_seq": 2, "call_row": rows[1]}]})()})
    assert 'data-kind="refused"' in v.viewer.value and "no-xpt-after-restart" in v.viewer.value
    v._on_pick({"new": type("Sel", (), {"value": [{"call_seq": 2, "call_row": rows[0]}]})()})
    assert 'data-kind="table"' in v.viewer.value and "mpg" in v.viewer.value


def test_call_row_with_two_lines_of_one_number_and_time_names_them_by_row(demo_copy):
    """Merged logs can hold two lines of one number and time that differ elsewhere (here the
    rule): only the row tells them apart (the message does not suggest a time that would not
    help).  A line repeated in every field is one call (the loader sets the copy aside)."""
    from replaybook.errors import AmbiguousCall

    log = demo_copy / "door" / "analyst" / f"{S1}.jsonl"
    lines = log.read_text().splitlines()
    other = json.loads(lines[3])
    other["rule"] = "allow-demo-merged"
    log.write_text("\n".join(lines + [lines[3], json.dumps(other)]) + "\n")  # #4 twice as it was, once changed
    inc = Incident.load(demo_copy)
    calls = inc.calls
    with pytest.raises(AmbiguousCall, match=r"row=3: .*; row=4: .*To open one, name it by row \(row=…\)$"):
        S.call_row(calls, S1, 4, ts="10:01:03.210")
    assert S.call_row(calls, S1, row=4).seq == 4 and S.call_row(calls, S1, row=4).row == 4
    assert list(S.call_rows(calls, S1, 4)["row"]) == [3, 4]
    q = inc.quarantine
    assert q.loc[q["kind"] == "duplicate", "line_no"].tolist() == [len(lines) + 1]


def test_a_name_disguised_with_invisible_characters_is_shown_written_out(demo_copy):
    """A right-to-left override makes ``evil<U+202E>gnp.exe`` read ``evilexe.png``; the report
    writes such characters out, the workbook showed the disguise (door table, Replay panel,
    preview pane, folder listing)."""
    name = "demo/evil\u202egnp.exe"
    (demo_copy / "data" / name).write_text("MZ")
    (demo_copy / "data" / "demo" / "zero\u200bwidth.csv").write_text("a\u200bb,c\nx\u202ey,1\n")
    log = demo_copy / "door" / "analyst" / f"{S1}.jsonl"
    line = json.loads(log.read_text().splitlines()[0])
    line.update(seq=6, ts="2026-09-13T10:01:30.000Z", tool="read_object", object=name)
    with log.open("a") as fh:
        fh.write(json.dumps(line) + "\n")
    v = Workbook(Incident.load(demo_copy / "incident.yaml"), charts=False).open_session(S1)

    def shown(markup: str) -> str:  # the text a reader sees, attributes left out
        return re.sub(r"<[^>]*>", "", markup)

    assert v.object_buttons[6].description == "demo/evil\\u202egnp.exe"
    pane = v.open_object(6)
    assert "evil\\u202egnp.exe" in shown(pane) and "\u202e" not in shown(pane)
    listing = v.open_object(1)  # demo/
    assert "evil\\u202egnp.exe" in listing and "zero\\u200bwidth.csv" in listing and "\u202e" not in listing
    from replaybook.replay import preview
    table = S.preview_html(preview(demo_copy / "data", "demo/zero\u200bwidth.csv"))
    assert "a\\u200bb" in table and "x\\u202ey" in table and "\u200b" not in shown(table)
    v.replay_start(run=False)
    while v.replay_step():
        pass
    assert "evil\\u202egnp.exe" in v.panel.value and "\u202e" not in shown(v.panel.value)


def test_call_preview_never_opens_a_refused_object(demo_incident, monkeypatch):
    import replaybook.views.session as mod

    opened = []
    monkeypatch.setattr(mod, "preview", lambda root, obj, **k: opened.append(obj))
    call = S.call_row(demo_incident.calls, S1, 5)
    pv = S.call_preview(demo_incident.data_root, call)
    assert pv.kind == "refused" and pv.text.startswith("refused by rule no-dotenv") and opened == []


# -- Replay ----------------------------------------------------------------------------------------


def test_replay_by_hand_ticks_the_panel_in_order(demo_incident):
    wb = Workbook(demo_incident, charts=False)
    v = wb.replay(S1, run=False)  # Replay on the session's row: opens the tab, starts there
    assert wb.tabs.titles == (S1,) and v.plan.status == "running" and v.escape.armed
    assert states(v) == ["pending"] * 5
    while v.replay_step():
        cur = v.plan.position
        assert states(v)[:cur] == [("skipped" if v.plan.steps[i].refused else "done") for i in range(cur)]
        assert states(v)[cur] == "current" and states(v)[cur + 1:] == ["pending"] * (4 - cur)
        marks = [i["mark"] for i in panel_items(v.panel.value)]
        assert marks[cur] == "▶" and all(m == "✓" for m in marks[:cur])
        kind = re.search(r'data-kind="(\w+)"', v.viewer.value).group(1)
        assert kind == ["folder", "table", "table", "table", "refused"][cur]
    assert [i for i, _ in v.replay_log] == [0, 1, 2, 3, 4]
    assert v.plan.status == "finished" and not v.escape.armed and v.stop_button.disabled
    items = panel_items(v.panel.value)
    assert [i["mark"] for i in items] == ["✓", "✓", "✓", "✓", "✗"]
    assert "<s>#5 read_object reference/.env</s>" in v.panel.value and "rb-step-refused" in v.panel.value
    assert not any(s in v.viewer.value for s in SECRETS)
    assert 'data-status="finished"' in v.panel.value


def test_stop_and_escape_halt_replay(demo_incident):
    v = Workbook(demo_incident, charts=False).open_session(S1)
    v.replay_start(run=False)
    v.replay_step(), v.replay_step()
    v.stop_button.click()
    assert v.plan.status == "stopped" and 'data-status="stopped"' in v.panel.value
    assert v.replay_step() is False and states(v)[:2] == ["done", "current"]
    v.replay_start(run=False)
    v.replay_step()
    v.escape.presses += 1  # what the page's Escape key does
    assert v.plan.status == "stopped" and not v.escape.armed
    v.escape.presses += 1  # Escape when nothing plays changes nothing
    assert v.plan.status == "stopped"


def controls(v: SessionView) -> dict[str, bool]:
    """Which of the Replay buttons can be pressed."""
    return {k: not b.disabled for k, b in [("pause", v.pause_button), ("resume", v.resume_button),
                                            ("back", v.step_back_button), ("forward", v.step_forward_button),
                                            ("stop", v.stop_button)]}


def test_pause_holds_the_step_and_the_step_buttons_move_one_at_a_time(demo_incident):
    v = Workbook(demo_incident, charts=False).open_session(S1)
    assert set(controls(v).values()) == {False}  # nothing to pause or step before Replay
    assert CSS_CLASSES["pause"] in v.pause_button._dom_classes
    assert CSS_CLASSES["step_forward"] in v.step_forward_button._dom_classes
    v.replay_start(run=False)
    assert controls(v) == {"pause": True, "resume": False, "back": True, "forward": True, "stop": True}
    v.replay_step(), v.replay_step()
    v.pause_button.click()
    assert v.plan.status == "paused" and v.replay_paused and not v.replay_running
    assert controls(v) == {"pause": False, "resume": True, "back": True, "forward": True, "stop": True}
    head = dict(re.findall(r'data-([\w-]+)="([^"]*)"', v.panel.value.split("<b>")[0]))
    assert (head["status"], head["position"], head["done"]) == ("paused", "1", "1")
    assert "paused · step 2 of 5" in v.panel.value and v.escape.armed
    shown = v.viewer.value
    # paused: playing a step moves nothing
    assert v.replay_step() is False and v.plan.position == 1 and v.viewer.value == shown
    assert states(v) == ["done", "current", "pending", "pending", "pending"]
    # one step forward at a time, to the last: the refused reference/.env opens nothing
    for want in (2, 3, 4):
        v.step_forward_button.click()
        assert v.plan.position == want and states(v)[want] == "current" and v.plan.status == "paused"
        assert f'data-seq="{want + 1}"' in v.viewer.value
        assert [i["mark"] for i in panel_items(v.panel.value)][want] == "▶"
        assert (v.progress.value, v.progress.max) == (want + 1, 5)
    assert re.search(r'data-kind="(\w+)"', v.viewer.value).group(1) == "refused"
    assert not any(x in v.viewer.value for x in SECRETS)
    assert controls(v)["forward"] is False and controls(v)["back"] is True
    assert v.replay_step_forward() is False and v.plan.position == 4 and v.plan.status == "paused"
    # and back, to the first: the step left is pending again
    for want in (3, 2, 1, 0):
        v.step_back_button.click()
        assert v.plan.position == want and states(v)[want + 1:] == ["pending"] * (4 - want)
    assert states(v) == ["current"] + ["pending"] * 4 and 'data-seq="1"' in v.viewer.value
    assert 'data-kind="folder"' in v.viewer.value
    assert controls(v)["back"] is False and controls(v)["forward"] is True
    assert v.replay_step_back() is False and v.plan.position == 0
    assert [i for i, _ in v.replay_log] == [0, 1, 2, 3, 4, 3, 2, 1, 0]
    v.step_forward_button.click()
    # resumed: on from the step shown (index 1), not from the first
    v.resume_button.click()
    assert v.plan.status == "running" and controls(v)["pause"] and not controls(v)["resume"]
    assert v.replay_step() and v.plan.position == 2 and states(v)[:3] == ["done", "done", "current"]
    while v.replay_step():
        pass
    assert [i for i, _ in v.replay_log][-4:] == [1, 2, 3, 4]
    assert v.plan.status == "finished" and set(controls(v).values()) == {False}
    assert [i["mark"] for i in panel_items(v.panel.value)] == ["✓", "✓", "✓", "✓", "✗"]


def test_a_step_button_pressed_while_replay_plays_pauses_it_there(demo_incident):
    v = Workbook(demo_incident, charts=False).open_session(S1)
    v.replay_start(run=False)
    v.replay_step(), v.replay_step(), v.replay_step()
    v.step_back_button.click()
    assert v.plan.status == "paused" and v.plan.position == 1 and states(v)[2:] == ["pending"] * 3
    v.replay_resume(run=False)
    v.replay_step_forward()
    assert v.plan.status == "paused" and v.plan.position == 2


def test_stop_and_escape_end_a_paused_replay_and_the_next_begins_again(demo_incident):
    v = Workbook(demo_incident, charts=False).open_session(S1)
    v.replay_start(run=False)
    v.replay_step(), v.replay_step(), v.replay_step()
    v.replay_pause()
    v.stop_button.click()
    assert v.plan.status == "stopped" and 'data-status="stopped"' in v.panel.value and not v.escape.armed
    assert set(controls(v).values()) == {False}
    assert v.replay_resume() is False and v.replay_step_forward() is False and v.plan.position == 2
    v.replay_start(run=False)
    assert v.plan.position == -1 and states(v) == ["pending"] * 5
    assert v.replay_step() and v.plan.position == 0
    v.replay_pause()
    v.escape.presses += 1  # Escape stops a paused Replay too
    assert v.plan.status == "stopped" and not v.escape.armed
    assert v.replay_pause() is False and v.plan.status == "stopped"


def test_pause_stops_the_playing_task_and_resume_plays_on_from_the_paused_step(demo_incident):
    v = Workbook(demo_incident, charts=False).open_session(S1)
    v.step_ms.value = 60

    async def main():
        v.replay_start()
        while v.plan.position < 1:  # the second step has played
            await asyncio.sleep(0.005)
        assert v.replay_pause()
        pos = v.plan.position
        await asyncio.sleep(0.3)  # five step times: a task still playing would have moved on
        held = (v.plan.position, v.plan.status, len(v.replay_log))
        t_resume = time.monotonic()
        assert v.replay_resume()
        while v.replay_running:
            await asyncio.sleep(0.005)
        return pos, held, t_resume

    pos, held, t_resume = asyncio.run(main())
    assert held == (pos, "paused", pos + 1) and 1 <= pos < 4
    # on from the paused step: every step shown once, in order, none from the start again
    assert [i for i, _ in v.replay_log] == [0, 1, 2, 3, 4] and v.plan.status == "finished"
    # the paused step stays a whole step time after Resume before the next one shows
    nxt = v.replay_log[pos + 1][1]
    assert nxt - t_resume >= 0.05, nxt - t_resume
    times = [t for _, t in v.replay_log[pos + 1:]]
    assert all(b - a >= 0.04 for a, b in zip(times, times[1:])), times


def test_replay_runs_on_the_event_loop_without_blocking(demo_incident):
    v = Workbook(demo_incident, charts=False).open_session(S1)
    v.step_ms.value = 60

    async def main():
        t0 = time.monotonic()
        v.replay_start()
        ticks = 0
        while v.replay_running:  # the loop stays free while Replay plays
            ticks += 1
            await asyncio.sleep(0.005)
        return time.monotonic() - t0, ticks

    took, ticks = asyncio.run(main())
    assert v.plan.status == "finished" and ticks > 10
    times = [t for _, t in v.replay_log]
    gaps = [b - a for a, b in zip(times, times[1:])]
    # paced: no step comes sooner than the step time allows (how much later, a busy machine
    # decides: no upper bound here)
    assert len(gaps) == 4 and all(g >= 0.04 for g in gaps), gaps
    assert took >= 0.25, took  # 5 steps × 60 ms


def test_a_step_slow_to_open_does_not_make_the_next_steps_flash_by(demo_incident, monkeypatch):
    """A step that took longer than the step time to open (a folder of 100,000 files takes
    seconds) made Replay catch up: the steps after it were sent one after the other at once,
    each replaced before the page could show it."""
    from replaybook.replay import ReplayPlan

    v = Workbook(demo_incident, charts=False).open_session(S1)
    v.step_ms.value = 60
    real = ReplayPlan.preview_of

    def slow(self, step):
        if step.index == 1:
            time.sleep(0.5)  # (blocks the loop, as a slow read in the kernel does)
        return real(self, step)

    monkeypatch.setattr(ReplayPlan, "preview_of", slow)

    async def main():
        v.replay_start()
        while v.replay_running:
            await asyncio.sleep(0.005)

    asyncio.run(main())
    assert [i for i, _ in v.replay_log] == [0, 1, 2, 3, 4]
    times = [t for _, t in v.replay_log]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert gaps[0] >= 0.5 and all(g >= 0.04 for g in gaps[1:]), gaps


def test_replay_stop_while_running_cancels_the_task(demo_incident):
    v = Workbook(demo_incident, charts=False).open_session(S1)
    v.step_ms.value = 100

    async def main():
        v.replay_start()
        while v.plan.position < 1:  # the first step has played (however long a busy machine takes)
            await asyncio.sleep(0.005)
        v.replay_stop()
        pos = v.plan.position
        await asyncio.sleep(0.4)  # four step times: a task still running would have moved on
        return pos

    pos = asyncio.run(main())
    # stopped where it was: nothing played after the stop, and the plan did not run to its end
    assert v.plan.status == "stopped" and v.plan.position == pos and 1 <= pos < len(v.plan.steps)


def test_changed_since_the_run_says_so(demo_copy):
    log = demo_copy / "door" / "analyst" / "door-20260913T100005-a1.jsonl"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    lines[1]["object_digest"] = "sha256:" + "0" * 64  # the agent read different bytes
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    v = Workbook(Incident.load(demo_copy), charts=False).open_session(S1)
    v.replay_start(run=False)
    v.replay_step(), v.replay_step()
    assert 'data-kind="changed"' in v.viewer.value and "changed since the run" in v.viewer.value
    assert "changed since the run" in v.panel.value
    while v.replay_step():
        pass
    assert [i["mark"] for i in panel_items(v.panel.value)] == ["✓", "–", "✓", "✓", "✗"]


def test_clicking_an_object_that_changed_since_the_run_says_so(demo_copy):
    """Replay says call #2's file "changed since the run" (it no longer hashes to the digest the
    door logged), but clicking the same call's object in the door's table showed the file with
    no word of it: only "Shown as it is on disk now, not as the call read it"."""
    log = demo_copy / "door" / "analyst" / "door-20260913T100005-a1.jsonl"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    lines[1]["object_digest"] = "sha256:" + "0" * 64  # the agent read different bytes
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    v = Workbook(Incident.load(demo_copy), charts=False).open_session(S1)

    def caveat(seq):
        return re.findall(r'class="rb-preview-caveat"[^>]*>([^<]*)<', v.open_object(seq))

    assert caveat(2) == ["Shown as it is on disk now, not as the call read it; its bytes no longer hash to the digest "
                         "the door logged for this call, so it has changed since."]
    from replaybook.replay import file_digest

    lines[1]["object_digest"] = file_digest(demo_copy / "data" / "demo" / "cars.xpt")  # the bytes it read
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    v = Workbook(Incident.load(demo_copy), charts=False).open_session(S1)
    assert caveat(2) == ["Shown as it is on disk now, not as the call read it."]


# -- timeline span ---------------------------------------------------------------------------------


def test_span_filters_sessions_and_tables(demo_incident):
    wb = Workbook(demo_incident, charts=False)
    v1 = wb.open_session(S1)
    span = S.span_from_selection({"t": [pd.Timestamp("2026-09-13T10:00:00Z").value // 10**6,
                                        pd.Timestamp("2026-09-13T10:00:30Z").value // 10**6]})
    wb.set_span(span)
    assert "10:00:00.000 – 10:00:30.000" in wb.span_label.value and not wb.clear_span_button.disabled
    assert set(wb.sessions.open_buttons) == {S1}  # session 2 starts at 10:00:53
    assert set(v1.object_buttons) == {1, 2}
    v2 = wb.open_session(S2)  # opened while a span is set: filtered too
    assert v2.object_buttons == {}
    wb.clear_span_button.click()
    assert set(wb.sessions.open_buttons) == {S1, S2} and set(v1.object_buttons) == {1, 2, 3, 4, 5}
    assert S.span_from_selection({}) is None
    iso = S.span_from_selection({"t": ["2026-09-13T10:00:30Z", "2026-09-13T10:00:00.000Z"]})
    assert iso == (pd.Timestamp("2026-09-13T10:00:00Z"), pd.Timestamp("2026-09-13T10:00:30Z"))


def test_charts_are_jupyter_charts_with_a_brush_and_a_pick(demo_incident):
    wb = Workbook(demo_incident)
    assert wb.timeline is not None and CSS_CLASSES["timeline"] in wb.timeline._dom_classes
    assert S.SPAN_PARAM in wb.timeline.selections.trait_names()
    assert "esm.sh" not in wb.timeline._esm  # offline bundle, no CDN import
    v = wb.open_session(S1)
    assert "pick" in v.chart.selections.trait_names()
    # the brush in the browser sets the JupyterChart's selection; the tables follow
    wb.timeline._vl_selections = {S.SPAN_PARAM: {"value": {"t": [
        pd.Timestamp("2026-09-13T10:01:00Z").value // 10**6, pd.Timestamp("2026-09-13T10:01:30Z").value // 10**6]},
        "store": []}}
    assert set(v.object_buttons) == {4, 5} and wb.span is not None
    # clicking a door mark in the conversation opens its object
    v.chart._vl_selections = {"pick": {"value": {"vlPoint": {"or": [{"call_seq": 5}]}}, "store": []}}
    assert 'data-kind="refused"' in v.viewer.value


def test_resolve_incident_path(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO / "notebooks")
    assert S.resolve_incident_path() == (REPO / "data/demo/incident.yaml").resolve()
    monkeypatch.chdir(tmp_path)  # outside the repo: falls back to the package's repository
    assert S.resolve_incident_path("data/demo/incident.yaml").exists()
    with pytest.raises(FileNotFoundError):
        S.resolve_incident_path("no/such/incident.yaml")


# -- the notebook under papermill -------------------------------------------------------------------


def _papermill(out: Path, timeout: int) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "papermill", str(REPO / "notebooks" / "investigate.ipynb"), str(out),
         "-p", "interactive", "False", "-k", "python3", "--execution-timeout", "180",
         "--cwd", str(REPO / "notebooks"), "--no-progress-bar"],
        capture_output=True, text=True, timeout=timeout)


def test_notebook_runs_top_to_bottom_under_papermill(tmp_path):
    nb = json.loads((REPO / "notebooks" / "investigate.ipynb").read_text())
    params = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(params) == 1
    src = "".join(params[0]["source"])
    assert 'incident_path = "data/demo/incident.yaml"' in src and "interactive = True" in src
    out = tmp_path / "out.ipynb"
    try:  # papermill can lose a cell's reply (nbclient #312): time out and retry once
        r = _papermill(out, timeout=300)
    except subprocess.TimeoutExpired:
        r = _papermill(out, timeout=300)
    if r.returncode != 0:
        r = _papermill(out, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    done = json.loads(out.read_text())
    text = json.dumps(done["cells"])
    assert "door-20260913T100052-b7" in text and "refused by rule no-dotenv" in text
    assert "application/vnd.jupyter.widget-view+json" not in text  # no widgets in batch runs
    assert not any(s in text for s in SECRETS)


def test_a_replay_that_fails_says_why_instead_of_sitting_at_running(demo_incident, monkeypatch):
    """An error inside the Replay task (an unreadable file, say) went nowhere: Replay showed
    "running" for good, with no word in the pane."""
    v = Workbook(demo_incident, charts=False).open_session(S1)
    v.step_ms.value = 20
    from replaybook.replay import ReplayPlan

    real = ReplayPlan.advance
    calls = []

    def advance(self):
        calls.append(1)
        if len(calls) == 3:
            raise PermissionError(13, "Permission denied", "demo/<secret>.csv")
        return real(self)

    monkeypatch.setattr(ReplayPlan, "advance", advance)

    async def main():
        v.replay_start()
        for _ in range(200):
            if not v.replay_running:
                break
            await asyncio.sleep(0.01)

    asyncio.run(main())
    assert v.plan.status == "stopped" and not v.replay_running and v.stop_button.disabled
    assert v.replay_error == "PermissionError: [Errno 13] Permission denied: 'demo/<secret>.csv'"
    assert "Replay stopped after step 2:" in v.viewer.value  # the third step failed
    assert "&lt;secret&gt;" in v.viewer.value and "<secret>" not in v.viewer.value


def test_a_step_taken_by_hand_that_fails_says_why(demo_incident, monkeypatch):
    """An error opening a step reached with ▶ or ◀ (an unreadable file, say) went out of the
    button's handler into the kernel's log alone: Replay stayed paused on the step pressed for,
    the pane still showing the step before, with no word.  It ends Replay as a played step's
    error does, saying why in the pane."""
    from replaybook.replay import ReplayPlan

    v = Workbook(demo_incident, charts=False).open_session(S1)
    real = ReplayPlan.preview_of
    broken = {2}

    def preview_of(self, step):
        if step.index in broken:
            raise PermissionError(13, "Permission denied", "demo/<secret>.csv")
        return real(self, step)

    monkeypatch.setattr(ReplayPlan, "preview_of", preview_of)
    v.replay_start(run=False)
    v.replay_step(), v.replay_step()
    assert v.replay_step_forward() is False  # step 3 cannot be opened
    assert v.plan.status == "stopped" and not v.replay_paused and not v.escape.armed
    assert v.replay_error == "PermissionError: [Errno 13] Permission denied: 'demo/<secret>.csv'"
    assert "Replay stopped after step 2:" in v.viewer.value
    assert "&lt;secret&gt;" in v.viewer.value and "<secret>" not in v.viewer.value
    assert set(controls(v).values()) == {False}
    # and back: the step ◀ returns to fails the same way
    broken.clear()
    v.replay_start(run=False)
    for _ in range(4):
        v.replay_step()
    broken.add(2)
    assert v.replay_step_back() is False and v.plan.status == "stopped"
    assert "Replay stopped after step 4:" in v.viewer.value and [i for i, _ in v.replay_log] == [0, 1, 2, 3]


def test_opening_a_session_the_incident_does_not_have_names_those_it_has(demo_incident):
    wb = Workbook(demo_incident, charts=False)
    with pytest.raises(KeyError, match="no door session 'door-nope' in this incident; it has door-20260913T100005-a1, "
                                       "door-20260913T100052-b7"):
        wb.open_session("door-nope")
    assert not wb.views


def test_replaying_a_session_again_hashes_none_of_its_objects_again(demo_copy, hashed):
    """Every Replay (and the tab's opening, which shows the plan) hashed each object with a
    logged digest once per call that reached it."""
    from replaybook.replay import file_digest

    data = demo_copy / "data"
    log = demo_copy / "door" / "analyst" / f"{S1}.jsonl"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    for x in lines:  # the door logged what it read: the digest of each file (cars.xpt twice)
        if x["decision"] == "allow" and not x["object"].endswith("/"):
            x["object_digest"] = file_digest(data / x["object"], cache=False)
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    hashed.clear()
    v = Workbook(Incident.load(demo_copy), charts=False).open_session(S1)
    sizes = {p.name: p.stat().st_size for p in (data / "demo").iterdir()}
    assert sorted(hashed) == [("cars.parquet", sizes["cars.parquet"]), ("cars.xpt", sizes["cars.xpt"])]
    hashed.clear()
    v.replay_start(run=False)
    while v.replay_step():
        pass
    v.replay_start(run=False)
    assert hashed == [] and [s.changed for s in v.plan.steps] == [None, False, False, False, None]
    # cars.xpt edited since (same size, mtime put back): the next Replay hashes it, and says so
    xpt = data / "demo" / "cars.xpt"
    st = xpt.stat()
    raw = bytearray(xpt.read_bytes())
    raw[-1] ^= 0x01
    xpt.write_bytes(bytes(raw))
    os.utime(xpt, ns=(st.st_atime_ns, st.st_mtime_ns))
    v.replay_start(run=False)
    assert hashed == [("cars.xpt", sizes["cars.xpt"])]
    assert [s.note for s in v.plan.steps][1:3] == ["changed since the run"] * 2
