"""What a Replay step sends to the page, measured in bytes, on long door sessions.

The panel had listed every step of the plan and was sent whole at each step: 2.86 MB per
step (every 700 ms) on a 10,000-call session.  It now lists a window of steps around the
current one; the overview bar of the whole plan is sent only when it changes.  The bytes are
counted where ipywidgets hands each message to its comm (the JSON the kernel would send), and
the bound is computed from the sizes of the rows the window can hold — nothing is timed.
"""

from __future__ import annotations

import dataclasses
import json
import re

import comm
import pandas as pd
import pytest

from replaybook.incident import Incident
from replaybook.replay import ReplayPlan, ReplayStep
from replaybook.views import session as S
from replaybook.views.widgets import Workbook

S1 = "door-20260913T100005-a1"
#: the JSON around one widget update ({"method": "update", "state": {...}, "buffer_paths": []})
ENVELOPE = 120


def _json_bytes(text: str) -> int:
    """Bytes of ``text`` as a JSON string, as the comm message carries it."""
    return len(json.dumps(text).encode())


class _Recorder(comm.DummyComm):
    """A comm that keeps the size of every message a widget sends."""

    sent: list[int] = []

    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        _Recorder.sent.append(len(json.dumps(data, default=str).encode()) + sum(len(b) for b in buffers or ()))


@pytest.fixture
def sent(monkeypatch):
    """The sizes (bytes) of the widget messages sent since the list was last cleared."""
    _Recorder.sent = []
    monkeypatch.setattr(comm, "create_comm", lambda *a, **k: _Recorder(*a, **k))
    return _Recorder.sent


def _long_session(demo_copy, n: int) -> Incident:
    """The demo with door session 1 made ``n`` calls long: its five calls over and over (one in
    five is the refused ``reference/.env``), numbered 1…n, 250 ms apart."""
    log = demo_copy / "door" / "analyst" / f"{S1}.jsonl"
    base = [json.loads(x) for x in log.read_text().splitlines()]
    t0 = pd.Timestamp(base[0]["ts"])
    lines = []
    for i in range(n):
        r = {k: v for k, v in base[i % len(base)].items() if k != "ts_end"}
        r.update(seq=i + 1, ts=(t0 + pd.Timedelta(milliseconds=250 * i)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z")
        lines.append(json.dumps(r))
    log.write_text("\n".join(lines) + "\n")
    return Incident.load(demo_copy)


def _row_bytes_max(plan: ReplayPlan) -> int:
    """The largest JSON size one panel row of this plan can take, over every state."""
    return max(_json_bytes(S._step_li(dataclasses.replace(s, state=st)))
               for s in plan.steps for st in ("pending", "current", "done", "skipped"))


def _measure(inc: Incident, steps: int, sent: list[int]) -> tuple[list[dict], object]:
    v = Workbook(inc, charts=False).open_session(S1)
    v.replay_start(run=False)
    out = []
    for k in range(steps):
        overview = v.overview.value
        sent.clear()
        assert v.replay_step()
        assert v.progress.value == k + 1 and v.progress.max == len(v.plan.steps)
        out.append({"bytes": sum(sent), "messages": len(sent), "viewer": _json_bytes(v.viewer.value),
                    "panel": _json_bytes(v.panel.value),
                    "overview": _json_bytes(v.overview.value) if v.overview.value != overview else 0})
    return out, v


@pytest.mark.parametrize("n", [200, 4000])
def test_a_replay_step_sends_a_window_of_steps_not_the_whole_plan(demo_copy, sent, n):
    steps = 120
    measured, v = _measure(_long_session(demo_copy, n), steps, sent)
    plan = v.plan
    rows = S.PANEL_BEFORE + 1 + S.PANEL_AFTER
    row_max = _row_bytes_max(plan)
    # the head, the two "steps before/after these" lines and the <ol>: fixed text with a few counts
    frame_max = 1200
    panel_bound = rows * row_max + frame_max
    progress_max = ENVELOPE  # one integer
    for k, m in enumerate(measured):
        # three messages: the panel, the preview pane, the progress bar; the overview bar is the
        # same plan's, so it is not sent again
        assert m["messages"] == 3 and m["overview"] == 0, (k, m)
        assert m["panel"] <= panel_bound, (k, m)
        assert m["bytes"] <= m["panel"] + m["viewer"] + progress_max + 2 * ENVELOPE, (k, m)
        assert m["bytes"] <= panel_bound + m["viewer"] + progress_max + 2 * ENVELOPE, (k, m)
    # the bound is the window's: it does not grow with n; the whole plan listed does
    whole = sum(_json_bytes(S._step_li(s)) for s in plan.steps)
    print(f"\nn={n}: bytes per step median {sorted(m['bytes'] for m in measured)[steps // 2]:,}, "
          f"max {max(m['bytes'] for m in measured):,}; the whole plan's rows {whole:,}; panel bound {panel_bound:,}")
    assert panel_bound <= rows * 400 + frame_max  # a row of this demo is at most ~330 bytes
    if n == 4000:
        assert whole > 100 * panel_bound
        assert max(m["bytes"] for m in measured) < whole / 100


def test_a_step_taken_by_hand_sends_what_a_played_step_sends(demo_copy, sent):
    """Paused on a 4,000-step plan, ◀ and ▶ send the panel's window, the preview and the
    progress bar — no more than a played step; pausing and resuming send a few small updates."""
    measured, v = _measure(_long_session(demo_copy, 4000), 100, sent)
    played = max(m["bytes"] for m in measured)
    sent.clear()
    assert v.replay_pause()
    # the panel's status and the buttons that apply now (Pause, Resume); nothing whole-plan
    assert len(sent) <= 4 and sum(sent) <= _json_bytes(v.panel.value) + 4 * ENVELOPE, sent
    for forward in [False] * 10 + [True] * 15:
        before = v.plan.position
        sent.clear()
        assert (v.replay_step_forward() if forward else v.replay_step_back())
        assert v.plan.position == before + (1 if forward else -1)
        assert len(sent) == 3, sent  # the panel, the preview pane, the progress bar
        assert sum(sent) <= played + 2 * ENVELOPE, (sent, played)
    sent.clear()
    assert v.replay_resume(run=False)
    assert len(sent) <= 4 and sum(sent) <= _json_bytes(v.panel.value) + 4 * ENVELOPE, sent
    sent.clear()
    assert v.replay_step() and v.plan.position == 105 and len(sent) == 3


def test_the_panel_says_where_playback_is_in_the_whole_plan(demo_copy, sent):
    """Step i of n, what was done, and the refused steps before and after the window."""
    inc = _long_session(demo_copy, 4000)
    v = Workbook(inc, charts=False).open_session(S1)
    head = dict(re.findall(r'data-(\w+)="([^"]*)"', v.panel.value.split("<b>")[0]))
    assert (head["status"], head["total"], head["done"], head["refused"]) == ("ready", "4000", "0", "800")
    assert "4,000 steps" in v.panel.value and "rb-steps-before" not in v.panel.value
    v.replay_start(run=False)
    for _ in range(2000):
        v.replay_step()
    p = v.panel.value
    # the refused count of the head is of the steps done (every fifth of 1,999: 399), the whole
    # plan's beside it
    assert "step 2,000 of 4,000 · 1,999 done · " in p and "399 refused</span> so far (800 in all)" in p
    head = dict(re.findall(r'data-([\w-]+)="([^"]*)"', p.split("<b>")[0]))
    assert (head["done"], head["refused-done"], head["refused"]) == ("1999", "399", "800")
    items = [dict(re.findall(r'data-(\w+)="([^"]*)"', li)) for li in re.findall(r"<li [^>]*>", p)]
    assert [int(i["index"]) for i in items] == list(range(1999 - S.PANEL_BEFORE, 1999 + S.PANEL_AFTER + 1))
    assert [i["state"] for i in items].count("current") == 1 and items[S.PANEL_BEFORE]["state"] == "current"
    # index 1999 is call #2000, the fifth of its five: the refused reference/.env
    assert items[S.PANEL_BEFORE]["mark"] == "▶" and "rb-step-refused" in p
    # the window holds indexes 1996–2011 (refused: 1999, 2004, 2009); 1,996 steps before it
    # (every fifth refused: 399), 1,988 after it (800 - 399 - 3 = 398 refused)
    assert 'class="rb-steps-before" data-count="1996" data-refused="399"' in p
    assert "↑ 1,996 steps before these, 399 of them refused" in p
    assert 'class="rb-steps-after" data-count="1988" data-refused="398"' in p
    # the bar: 100 slices of 40 steps, every one holding refused steps (8); the progress bar
    # under it has reached step 2,000
    cells = [dict(re.findall(r'data-(\w+)="([^"]*)"', c))
             for c in re.findall(r'<span class="rb-ov[^>]*>', v.overview.value)]
    assert len(cells) == 100 and all(c["refused"] == "8" for c in cells)
    assert (cells[49]["from"], cells[49]["to"]) == ("1961", "2000")
    assert (v.progress.value, v.progress.max) == (2000, 4000)
    v.replay_stop()
    assert 'data-status="stopped"' in v.panel.value and "step 2,000 of 4,000" in v.panel.value


def _plan(n: int, refused_every: int | None = None) -> ReplayPlan:
    t0 = pd.Timestamp("2026-09-13T10:00:00Z")
    steps = [ReplayStep(index=i, door_session="s", call_seq=i + 1, ts=t0, tool="read_object",
                        object=f"demo/{i % 7}.csv",
                        decision="deny" if refused_every and i % refused_every == refused_every - 1 else "allow",
                        rule=None, opens="nothing") for i in range(n)]
    return ReplayPlan(steps, None)


def test_the_panel_window_slides_and_keeps_its_size_at_both_ends():
    plan = _plan(50)
    assert S.panel_window(plan) == (0, 16)  # before playback: from the first step
    plan.start()
    for pos, want in [(0, (0, 16)), (3, (0, 16)), (4, (1, 17)), (30, (27, 43)), (37, (34, 50)), (40, (34, 50)),
                      (49, (34, 50))]:
        plan.position = pos
        assert S.panel_window(plan) == want, pos
    plan.position = 50  # finished: ends at the last step
    assert S.panel_window(plan) == (34, 50)
    assert S.panel_window(_plan(5)) == (0, 5)
    assert S.panel_window(_plan(0)) == (0, 0) and "0 steps" in S.panel_html(_plan(0))


def test_the_overview_marks_each_slice_that_holds_a_refused_step():
    plan = _plan(1000, refused_every=250)  # refused: indexes 249, 499, 749, 999
    cells = re.findall(r'data-from="(\d+)" data-to="(\d+)" data-refused="(\d+)"', S.overview_html(plan))
    assert len(cells) == 100 and cells[0] == ("1", "10", "0")
    assert [(int(a), int(b)) for a, b, r in cells if r != "0"] == [(241, 250), (491, 500), (741, 750), (991, 1000)]
    assert S.overview_html(plan).count("rb-ov-refused") == 4
    small = S.overview_html(_plan(3, refused_every=2))
    assert small.count('<span class="rb-ov') == 3 and small.count("rb-ov-refused") == 1
    assert 'title="step 2: 1 refused"' in small
