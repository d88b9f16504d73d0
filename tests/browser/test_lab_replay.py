"""The workbook in a real JupyterLab, driven in headless Debian Chromium.

Opens ``notebooks/investigate.ipynb`` on the demo incident, runs all cells, opens a session
from the sessions list, presses Replay and watches the panel: the steps are ticked off in
order about 700 ms apart, the refused ``reference/.env`` opens nothing (and its content never
reaches the page), Stop and Escape halt playback, Pause holds a step, ◀ and ▶ move one step at
a time and Resume plays on from the step shown, Replay on a session's row opens that
session's tab and plays it, and a brush on the timeline filters the tables.  Screenshots go
to ``test-artifacts/``.  Network requests leaving 127.0.0.1 are blocked.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

S1 = "door-20260913T100005-a1"
S2 = "door-20260913T100052-b7"
SECRETS = ("WAREHOUSE_PASSWORD", "demo-not-a-real-secret", "wJalrXUtnFEMI")
STEP_MS = 700
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

# Records every change of a session view's Replay panel and preview pane (page clock, ms).
RECORDER = """
(sel) => {
  const view = document.querySelector(sel);
  const panel = view.querySelector('.rb-replay-panel');
  const viewer = view.querySelector('.rb-viewer');
  const log = [];
  const snap = () => {
    const lis = Array.from(panel.querySelectorAll('li.rb-step'));
    const head = panel.querySelector('.rb-replay-head');
    const pv = viewer.querySelector('.rb-preview');
    return {t: performance.now(), states: lis.map(li => li.dataset.state), marks: lis.map(li => li.dataset.mark),
            struck: lis.map(li => !!li.querySelector('s')),
            status: head ? head.dataset.status : null, kind: pv ? pv.dataset.kind : null,
            path: pv ? pv.dataset.path : null, seq: pv ? pv.dataset.seq : null, table: !!viewer.querySelector('table'),
            seqs: lis.map(li => li.dataset.seq),
            text: viewer.innerText.slice(0, 2000)};
  };
  const rec = () => {
    const s = snap(), last = log[log.length - 1];
    const key = x => JSON.stringify([x.states, x.status, x.kind, x.path, x.seq]);
    if (!last || key(last) !== key(s)) log.push(s);
  };
  const opts = {subtree: true, childList: true, characterData: true, attributes: true};
  new MutationObserver(rec).observe(panel, opts);
  new MutationObserver(rec).observe(viewer, opts);
  rec();
  window.__rbLog = log;
}
"""


def _current(snap: dict) -> int:
    return snap["states"].index("current") if "current" in snap["states"] else -1


def _log(page) -> list[dict]:
    return page.evaluate("() => window.__rbLog")


def _wait_status(page, status: str, timeout_s: float) -> list[dict]:
    page.wait_for_function("(s) => { const l = window.__rbLog; return l.length && l[l.length-1].status === s; }",
                           arg=status, timeout=timeout_s * 1000)
    return _log(page)


def _replay_until(page, view_sel: str, index: int, timeout_s: float = 10) -> None:
    """Press Replay (clearing the record first) and wait until step ``index`` is current."""
    page.evaluate("() => { window.__rbLog.length = 0; }")
    page.click(f"{view_sel} .rb-replay-button")
    page.wait_for_function(
        "(i) => { const l = window.__rbLog; if (!l.length) return false; const s = l[l.length-1];"
        " return s.status === 'running' && s.states.indexOf('current') >= i; }",
        arg=index, timeout=timeout_s * 1000)


def _wait_current(page, index: int, timeout_s: float = 5) -> list[dict]:
    """Wait until the panel shows step ``index`` as current and the pane shows its call."""
    page.wait_for_function(
        "(i) => { const l = window.__rbLog; if (!l.length) return false; const s = l[l.length-1];"
        " return s.states.indexOf('current') === i && s.seq === s.seqs[i]; }", arg=index, timeout=timeout_s * 1000)
    return _log(page)


def _became_current(log: list[dict]) -> dict[int, float]:
    """step index → page time (ms) when the panel first showed it as current."""
    out: dict[int, float] = {}
    for s in log:
        c = _current(s)
        if c >= 0 and c not in out:
            out[c] = s["t"]
    return out


def _open_workbook(page, lab_server) -> float:
    t0 = time.monotonic()
    page.goto(f"{lab_server.url}/lab/tree/notebooks/investigate.ipynb?token={lab_server.token}")
    page.wait_for_selector(".jp-NotebookPanel", timeout=90_000)
    page.wait_for_function("() => document.body.innerText.includes('| Idle')", timeout=90_000)
    page.click(".lm-MenuBar-itemLabel:text-is('Run')")
    page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
    page.wait_for_selector(f".rb-open-session.rb-session-{S1}", timeout=180_000)
    return time.monotonic() - t0


def test_replay_in_jupyterlab(lab_page, lab_server):
    page = lab_page
    took = _open_workbook(page, lab_server)
    print(f"\nLab open + Run All until the sessions list shows: {took:.1f} s")

    # the timeline and the sessions list render offline
    page.wait_for_selector(".rb-timeline svg, .rb-timeline canvas", timeout=60_000)
    assert page.locator(".rb-open-session").count() == 2

    # select a session: it opens in a tab, its conversation chart renders
    page.click(f".rb-open-session.rb-session-{S1}")
    view_sel = f".rb-session-view-{S1}"
    page.wait_for_selector(f"{view_sel} .rb-replay-panel li.rb-step", timeout=60_000)
    page.wait_for_selector(f"{view_sel} .rb-conversation svg, {view_sel} .rb-conversation canvas", timeout=60_000)
    assert page.locator(".rb-tabs .lm-TabBar-tab, .rb-tabs .p-TabBar-tab").count() == 1

    # clicking the refused object shows the refusal, never the file
    page.click(f"{view_sel} .rb-object-button.rb-call-5")
    page.wait_for_selector(f"{view_sel} .rb-viewer .rb-preview[data-kind='refused']", timeout=15_000)
    assert "refused by rule no-dotenv" in page.inner_text(f"{view_sel} .rb-viewer")

    # Replay: ticked in order, ~700 ms a step, the refused step opens nothing
    page.evaluate(RECORDER, view_sel)
    page.locator(f"{view_sel} .rb-replay-button").scroll_into_view_if_needed()
    page.click(f"{view_sel} .rb-replay-button")
    log = _wait_status(page, "finished", timeout_s=30)
    page.locator(f"{view_sel} .rb-replay-panel").scroll_into_view_if_needed()
    shot = ARTIFACTS / "lab_replay.png"
    page.screenshot(path=str(shot))

    became = _became_current(log)
    assert sorted(became) == [0, 1, 2, 3, 4], became
    order = [i for i, _ in sorted(became.items(), key=lambda kv: kv[1])]
    assert order == [0, 1, 2, 3, 4]
    for s in log:  # every step before the current one is ticked off, none after it
        c = _current(s)
        if c > 0:
            assert s["marks"][:c] == ["✓"] * c and s["states"][c + 1:] == ["pending"] * (4 - c), s
    gaps = [became[i + 1] - became[i] for i in range(4)]
    end = next(s["t"] for s in log if s["status"] == "finished")
    gaps.append(end - became[4])
    print("Replay step gaps (ms):", [round(g) for g in gaps], "mean", round(sum(gaps) / len(gaps)))
    assert all(0.5 * STEP_MS <= g <= 2.5 * STEP_MS for g in gaps), gaps
    assert 0.8 * STEP_MS <= sum(gaps) / len(gaps) <= 1.6 * STEP_MS, gaps

    # what each step opened, in this window (the pane showing the current step's call)
    at: dict[int, dict] = {}
    for s in log:
        c = _current(s)
        if c >= 0 and s["seq"] == s["seqs"][c]:
            at.setdefault(c, s)
    assert [at[i]["kind"] for i in range(5)] == ["folder", "table", "table", "table", "refused"]
    assert [at[i]["path"] for i in range(4)] == ["demo/", "demo/cars.xpt", "demo/cars.xpt", "demo/cars.parquet"]
    # each step says the file is as it is now, not as the call read it, and what the door logged
    assert "Step #2 describe opened demo/cars.xpt" in at[1]["text"]
    assert "Shown as it is on disk now, not as the call read it." in at[1]["text"]
    assert ("the door logged 96 bytes for this call; the file is 3,992 bytes now (what query answered need not "
            "be the file itself: no sign it changed)") in at[3]["text"]
    # the session's header carries the join's confidence sentence
    assert (f"Door session {S1}: High confidence — matched to transcript 919dc839-23e1-56e5-8bd5-430e87d6a897; "
            "5 of 5 calls (100%) agree") in page.inner_text(f"{view_sel} .rb-session-header")
    refused = at[4]
    assert not refused["table"] and "nothing to open" in refused["text"] and "refused by rule no-dotenv" in refused["text"]
    final = log[-1]
    assert final["marks"] == ["✓", "✓", "✓", "✓", "✗"] and final["struck"] == [False] * 4 + [True]
    body = page.inner_text("body")
    assert not any(x in body for x in SECRETS)

    # Stop halts it
    _replay_until(page, view_sel, 1)
    page.click(f"{view_sel} .rb-stop-button")
    log = _wait_status(page, "stopped", timeout_s=5)
    stopped_at = _current(log[-1])
    time.sleep(2.5 * STEP_MS / 1000)
    after = _log(page)[-1]
    assert after["status"] == "stopped" and _current(after) == stopped_at and stopped_at in (1, 2)
    page.screenshot(path=str(ARTIFACTS / "lab_replay_stopped.png"))

    # and so does Escape
    _replay_until(page, view_sel, 1)
    page.keyboard.press("Escape")
    log = _wait_status(page, "stopped", timeout_s=5)
    esc_at = _current(log[-1])
    time.sleep(2.5 * STEP_MS / 1000)
    assert _log(page)[-1]["status"] == "stopped" and _current(_log(page)[-1]) == esc_at

    # Pause holds the step shown; ◀ and ▶ move one step; Resume plays on from the step shown
    _replay_until(page, view_sel, 1)
    page.click(f"{view_sel} .rb-pause-button")
    log = _wait_status(page, "paused", timeout_s=5)
    paused_at = _current(log[-1])
    time.sleep(2.5 * STEP_MS / 1000)
    assert _log(page)[-1]["status"] == "paused" and _current(_log(page)[-1]) == paused_at and paused_at in (1, 2)
    forward, back = page.locator(f"{view_sel} .rb-step-forward-button"), page.locator(f"{view_sel} .rb-step-back-button")
    for i in range(paused_at + 1, 5):
        forward.click()
        s = _wait_current(page, i)[-1]
        assert s["status"] == "paused" and s["states"][:i] == ["done"] * i and s["states"][i + 1:] == ["pending"] * (4 - i)
    s = _log(page)[-1]
    assert s["kind"] == "refused" and not s["table"] and "nothing to open" in s["text"]
    assert not any(x in page.inner_text("body") for x in SECRETS)
    page.wait_for_function("(sel) => document.querySelector(sel).disabled",
                           arg=f"{view_sel} .rb-step-forward-button", timeout=5_000)  # the last step
    back.click()
    s = _wait_current(page, 3)[-1]
    assert s["status"] == "paused" and s["kind"] == "table" and s["states"][4] == "pending"
    page.screenshot(path=str(ARTIFACTS / "lab_replay_paused.png"))
    page.evaluate("() => { window.__rbLog.length = 0; }")
    page.click(f"{view_sel} .rb-resume-button")
    log = _wait_status(page, "finished", timeout_s=10)
    became = _became_current(log)
    assert sorted(became) == [3, 4], became  # on from the step shown, not from the first
    assert became[4] - became[3] >= 0.5 * STEP_MS, became
    assert log[-1]["marks"] == ["✓", "✓", "✓", "✓", "✗"]

    # Replay on the second session's row opens its tab and plays it (its own transcript)
    page.click(f".rb-row-replay.rb-session-{S2}")
    view2 = f".rb-session-view-{S2}"
    page.wait_for_selector(f"{view2} .rb-replay-panel li.rb-step", timeout=60_000)
    page.evaluate(RECORDER, view2)
    page.wait_for_function("() => { const l = window.__rbLog; return l.length && "
                           "l[l.length-1].states.indexOf('current') >= 3; }", timeout=30_000)
    page.locator(f"{view2} .rb-viewer").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "lab_replay_running.png"))
    log2 = _wait_status(page, "finished", timeout_s=30)
    assert log2[-1]["marks"] == ["✓", "✓", "✓", "✓"]
    assert "3b4173aa" in page.inner_text(f"{view2} .rb-session-header")
    assert page.locator(".rb-tabs .lm-TabBar-tab, .rb-tabs .p-TabBar-tab").count() == 2

    # the timeline's brush filters the sessions list and the open sessions' tables
    tl = page.locator(".rb-timeline")
    tl.scroll_into_view_if_needed()
    box = tl.bounding_box()
    y = box["y"] + box["height"] - 60  # the brush strip under the timeline
    page.mouse.move(box["x"] + 105, y)
    page.mouse.down()
    page.mouse.move(box["x"] + 250, y, steps=8)
    page.mouse.move(box["x"] + 344, y, steps=8)
    page.mouse.up()
    page.wait_for_selector(".rb-span-label .rb-span-value", timeout=10_000)
    page.wait_for_function("() => document.querySelectorAll('.rb-open-session').length === 1", timeout=10_000)
    assert page.locator(f".rb-open-session.rb-session-{S1}").count() == 1
    page.screenshot(path=str(ARTIFACTS / "lab_span.png"))
    page.click(".rb-clear-span")
    page.wait_for_function("() => document.querySelectorAll('.rb-open-session').length === 2", timeout=10_000)

    assert not page.blocked or all(not u.startswith("http://127.0.0.1") for u in page.blocked)
    print("requests blocked (left 127.0.0.1):", page.blocked)
    print("screenshot:", shot)
