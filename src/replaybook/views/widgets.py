"""The investigation workbook's widgets: they render, the package decides.

:class:`Workbook` is the whole interactive workbook for one incident::

    from replaybook.incident import Incident
    from replaybook.views.widgets import Workbook
    wb = Workbook(Incident.load("data/demo/incident.yaml"))
    wb            # in JupyterLab

It shows the timeline (with a brush strip: drag a span to filter), the sessions list (one row
per door session: Open and Replay buttons), and a :class:`ipywidgets.Tab` with one
:class:`SessionView` per opened session.  A session view has the conversation as a sequence
chart (or a note when no transcript matched), the door's own table (click an object to
preview it), the Replay controls, the Replay overview (the whole plan as one bar, slices with a
refused step red, a progress bar under it), the Replay panel (the steps around the current one,
with ``step i of n`` and counts of the steps before and after) and the preview pane.  A Replay
step sends the page the panel's window, the progress bar's number and the new preview — a few
kilobytes, whatever the session's length; the overview bar is sent once per Replay.

Replay is driven by :class:`~replaybook.replay.ReplayPlan`: :meth:`SessionView.replay_start`
starts it and schedules an asyncio task on the kernel's loop that calls
:meth:`SessionView.replay_step`, then waits ``step_ms`` milliseconds after each step is shown —
a step slow to open is still on screen a whole step time — (never ``time.sleep``, so the
kernel stays responsive: Pause, Stop and Escape work while it plays).  Pause
(:meth:`~SessionView.replay_pause`) holds it on the current step; the step buttons (◀ and ▶,
:meth:`~SessionView.replay_step_back` / :meth:`~SessionView.replay_step_forward`) then move it
one step at a time, pausing it first if it plays, and stop at the first and the last step;
Resume (:meth:`~SessionView.replay_resume`) plays on from the step shown, which stays a whole
step time before the next.  Stop (or Escape) ends it: Replay then begins again from the first
step.  A step taken by hand sends the page what a played step does.  Tests call
:meth:`~SessionView.replay_step` by hand.

Every interactive element carries a stable CSS class (``rb-…``) for browser tests; see
:data:`CSS_CLASSES`.
"""

from __future__ import annotations

import asyncio
import html
import time
from typing import Any

import anywidget
import ipywidgets as W
import traitlets

from ..errors import AmbiguousCall
from ..replay import DEFAULT_STEP_MS, LaterWrites, ReplayPlan
from . import session as S

__all__ = ["Workbook", "SessionView", "SessionsList", "EscapeKey", "CSS_CLASSES", "STYLE"]

#: The stable CSS classes the browser test relies on.
CSS_CLASSES = {
    "workbook": "rb-workbook",
    "timeline": "rb-timeline",
    "span": "rb-span-label",
    "clear_span": "rb-clear-span",
    "sessions": "rb-sessions",
    "open_session": "rb-open-session",  # + rb-session-<door_session>
    "row_replay": "rb-row-replay",  # + rb-session-<door_session>
    "tabs": "rb-tabs",
    "view": "rb-session-view",  # + rb-session-view-<door_session>
    "conversation": "rb-conversation",
    "no_transcript": "rb-no-transcript",
    "door_table": "rb-door-table",
    "object_button": "rb-object-button",  # + rb-call-<seq>, rb-refused when refused, rb-asked when asked
    "replay": "rb-replay-button",
    "stop": "rb-stop-button",
    "pause": "rb-pause-button",
    "resume": "rb-resume-button",
    "step_back": "rb-step-back-button",
    "step_forward": "rb-step-forward-button",
    "step_ms": "rb-step-ms",
    "panel": "rb-replay-panel",
    "overview": "rb-replay-overview",  # the whole plan as one bar, refused slices red
    "progress": "rb-replay-progress",  # how far playback has got in the whole plan
    "replay_error": "rb-replay-error",  # what stopped a Replay that failed
    "viewer": "rb-viewer",
    "escape": "rb-escape",
    "close": "rb-close-tab",
}

#: CSS for the workbook (injected once per workbook through an HTML widget).
STYLE = """
<style>
.rb-workbook .rb-grid-cell { padding: 1px 6px; border-bottom: 1px solid #eee; font-size: 12px;
  white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.rb-workbook .rb-grid-head { font-weight: bold; border-bottom: 1px solid #999; }
.rb-workbook .rb-refused button, .rb-workbook button.rb-refused { text-decoration: line-through;
  color: #d62728; }
.rb-workbook .rb-step-current { background: #fff3c4; }
.rb-workbook .rb-step-refused { text-decoration: line-through; }
.rb-workbook .rb-replay-panel { border: 1px solid #ccc; border-radius: 4px; padding: 4px 8px;
  background: #fafafa; font-size: 12px; }
.rb-workbook .rb-overview { display: flex; height: 8px; margin: 2px 0 0 0; }
.rb-workbook .rb-ov { flex: 1 1 0; min-width: 1px; background: #ddd; }
.rb-workbook .rb-ov-refused { background: #d62728; }
.rb-workbook .rb-viewer { border: 1px solid #ccc; border-radius: 4px; padding: 4px 8px;
  font-size: 12px; overflow: auto; max-height: 30em; }
.rb-workbook .rb-door-table { overflow-x: auto; }
.rb-workbook .rb-table { border-collapse: collapse; font-size: 11px; }
.rb-workbook .rb-table td, .rb-workbook .rb-table th { padding: 1px 6px; border-bottom: 1px solid #eee; }
.rb-workbook .rb-tabs { --jp-widgets-horizontal-tab-width: 17em; }
.rb-workbook .rb-object-button button, .rb-workbook button.rb-object-button { text-align: left; }
.rb-workbook .rb-note { color: #555; font-style: italic; padding: 8px; border: 1px dashed #bbb;
  border-radius: 4px; }
</style>
"""

_MAX_TABLE_ROWS = 500


class EscapeKey(anywidget.AnyWidget):
    """A tiny widget that counts Escape key presses anywhere on the page while ``armed``.

    The page listens in the capture phase, so Escape reaches it even while JupyterLab has the
    focus in a notebook; ``presses`` goes up by one per press and Python stops the Replay.
    """

    _esm = """
    function render({ model, el }) {
      el.classList.add("rb-escape-catcher");
      const hint = document.createElement("span");
      hint.style.fontSize = "11px";
      hint.style.color = "#777";
      const show = () => { hint.textContent = model.get("armed") ? "Esc stops Replay" : ""; };
      show();
      model.on("change:armed", show);
      el.appendChild(hint);
      const onKey = (e) => {
        if (e.key !== "Escape" || !model.get("armed")) return;
        model.set("presses", (model.get("presses") || 0) + 1);
        model.save_changes();
      };
      document.addEventListener("keydown", onKey, true);
      return () => { document.removeEventListener("keydown", onKey, true); model.off("change:armed", show); };
    }
    export default { render };
    """
    armed = traitlets.Bool(False).tag(sync=True)
    presses = traitlets.Int(0).tag(sync=True)


def _cell(text: Any, *, head: bool = False, title: str | None = None, style: str = "") -> W.HTML:
    t = S.visible(text)  # NA is ""; a bidi override or zero-width space is written out
    tip = f' title="{S._esc(title)}"' if title else ""
    w = W.HTML(f'<span{tip} style="{style}">{html.escape(t)}</span>')
    w.add_class("rb-grid-cell")
    if head:
        w.add_class("rb-grid-head")
    return w


#: the door table's columns left and right of the object button (widths as a CSS grid track list)
_LEFT_COLS = "2.5em 7.3em 6.5em"
_RIGHT_COLS = "4.6em 6em 3em 4em minmax(7em,1fr)"


def _cells(items: list[tuple[Any, str, str | None]], columns: str, *, head: bool = False,
           layout: W.Layout | None = None) -> W.HTML:
    """Several table cells in one HTML widget (``(text, style, title)`` each, laid out on
    ``columns``): a 10,000-call session's table had taken seconds to open, one widget per cell."""
    spans = []
    for text, style, title in items:
        tip = f' title="{S._esc(title)}"' if title else ""
        spans.append(f'<span class="rb-grid-cell{" rb-grid-head" if head else ""}"{tip} style="{style}">'
                     f"{html.escape(S.visible(text))}</span>")
    html_ = f'<div style="display:grid;grid-template-columns:{columns}">{"".join(spans)}</div>'
    w = W.HTML(html_, layout=layout) if layout is not None else W.HTML(html_)
    w.add_class("rb-grid-row")
    return w


def _grid(children: list, columns: str) -> W.GridBox:
    return W.GridBox(children, layout=W.Layout(grid_template_columns=columns, grid_gap="0px", width="100%"))


def _jupyter_chart(chart, **kw):
    """An offline :class:`altair.JupyterChart` (Vega bundled by vl-convert, no CDN)."""
    import altair as alt

    alt.JupyterChart.enable_offline()
    return alt.JupyterChart(chart, embed_options={"actions": False}, **kw)


# ------------------------------------------------------------------------------------------------


class SessionView:
    """One door session in a tab: conversation, door's table, Replay, preview pane.

    Attributes:
        door_session: the session id.
        transcript_id: the matched transcript, or ``None``.
        conversation: :func:`replaybook.views.session.conversation` frame, or ``None``.
        table: :func:`replaybook.views.session.door_table` frame.
        plan: the current :class:`~replaybook.replay.ReplayPlan` (``None`` before Replay).
        replay_log: ``(step index, monotonic seconds)`` each time a step became current (played,
            or stepped to by hand).
        panel: the Replay panel (:func:`replaybook.views.session.panel_html`).
        overview: the bar of the whole plan (:func:`replaybook.views.session.overview_html`).
        progress: steps reached so far (the current one included) of the whole plan.
        widget: the tab's content (``rb-session-view``).
    """

    def __init__(self, incident, door_session: str, *, step_ms: int = DEFAULT_STEP_MS, charts: bool = True):
        self.incident = incident
        self.join = incident.join
        self.door_session = str(door_session)
        self.data_root = incident.data_root
        self.transcript_id = S.transcript_of(self.join, self.door_session)
        self.conversation = S.conversation(incident.steps, incident.calls, self.join, self.door_session)
        self.table = S.door_table(incident.calls, self.join, self.door_session)
        self.span = None
        self.plan: ReplayPlan | None = None
        self.replay_log: list[tuple[int, float]] = []
        #: why the last Replay stopped, when it failed (``"TypeName: message"``), else None
        self.replay_error: str | None = None
        self._task: asyncio.Task | None = None
        self._charts = charts
        sl = S.slug(self.door_session)
        #: the writes of the whole incident, by object: a preview says when one came after its call
        self.later_writes = LaterWrites(incident.calls)
        #: the store of the responses the door kept (a capsule's), where, and why a named one failed
        self.evidence, self.evidence_where, self.evidence_problem = S.evidence_store(incident)
        #: what the header says about the link: it continues another session; the confidence sentence
        self.caveats = S.session_caveats(self.join, self.door_session, getattr(incident, "window_s", None),
                                         calls=getattr(incident, "calls", None))

        self.header = W.HTML(self._header_html())

        self.replay_button = W.Button(description="Replay", icon="play", tooltip="Reopen, in order, what the agent opened")
        self.replay_button.add_class(CSS_CLASSES["replay"])
        self.replay_button.add_class(f"rb-session-{sl}")
        self.stop_button = W.Button(description="Stop", icon="stop", tooltip="Stop Replay (Escape)", disabled=True)
        self.stop_button.add_class(CSS_CLASSES["stop"])
        self.pause_button = W.Button(description="Pause", icon="pause", disabled=True,
                                     tooltip="Hold Replay on the step it shows")
        self.pause_button.add_class(CSS_CLASSES["pause"])
        self.resume_button = W.Button(description="Resume", icon="play", disabled=True,
                                      tooltip="Play on from the step shown")
        self.resume_button.add_class(CSS_CLASSES["resume"])
        self.step_back_button = W.Button(description="", icon="step-backward", disabled=True,
                                         tooltip="One step back (pauses Replay)", layout=W.Layout(width="40px"))
        self.step_back_button.add_class(CSS_CLASSES["step_back"])
        self.step_forward_button = W.Button(description="", icon="step-forward", disabled=True,
                                            tooltip="One step forward (pauses Replay)", layout=W.Layout(width="40px"))
        self.step_forward_button.add_class(CSS_CLASSES["step_forward"])
        self.step_ms = W.BoundedIntText(value=int(step_ms), min=50, max=60000, step=100, description="ms/step",
                                        layout=W.Layout(width="160px"))
        self.step_ms.add_class(CSS_CLASSES["step_ms"])
        self.escape = EscapeKey()
        self.escape.add_class(CSS_CLASSES["escape"])
        self.close_button = W.Button(description="Close", icon="times", layout=W.Layout(width="90px"))
        self.close_button.add_class(CSS_CLASSES["close"])
        self.replay_button.on_click(lambda _b: self.replay_start())
        self.stop_button.on_click(lambda _b: self.replay_stop())
        self.pause_button.on_click(lambda _b: self.replay_pause())
        self.resume_button.on_click(lambda _b: self.replay_resume())
        self.step_back_button.on_click(lambda _b: self.replay_step_back())
        self.step_forward_button.on_click(lambda _b: self.replay_step_forward())
        self.escape.observe(self._on_escape, names="presses")

        self.panel = W.HTML()
        self.panel.add_class(CSS_CLASSES["panel"])
        self.overview = W.HTML()
        self.overview.add_class(CSS_CLASSES["overview"])
        self.progress = W.IntProgress(value=0, min=0, max=1, layout=W.Layout(width="100%", height="10px", margin="0"))
        self.progress.add_class(CSS_CLASSES["progress"])
        self.viewer = W.HTML(S.preview_html(None))
        self.viewer.add_class(CSS_CLASSES["viewer"])
        self._render_panel()

        self.chart = None
        if self.conversation is None:
            self.conversation_box = W.HTML(
                '<div class="rb-note rb-no-transcript-note">No transcript matched this door session, so the '
                "conversation would be here. The join reads one client's transcript format and joins by tool, "
                "arguments and time; below is the door's own table, which is all the evidence says.</div>")
            self.conversation_box.add_class(CSS_CLASSES["no_transcript"])
        elif charts:
            self.chart = _jupyter_chart(S.conversation_chart(self.conversation))
            self.chart.selections.observe(self._on_pick, names=["pick"])
            self.conversation_box = self.chart
            self.conversation_box.add_class(CSS_CLASSES["conversation"])
        else:
            self.conversation_box = W.HTML(S.frame_html(self.conversation[["order", "lane", "status", "label"]], 400))
            self.conversation_box.add_class(CSS_CLASSES["conversation"])

        self.door_box = W.VBox()
        self.door_box.add_class(CSS_CLASSES["door_table"])
        #: the shown rows' object buttons by call number (the last row shown, when several share one)
        self.object_buttons: dict[int, W.Button] = {}
        #: the shown rows' object buttons by row of :attr:`table`
        self.row_buttons: dict[int, W.Button] = {}
        self._render_table()

        controls = W.HBox([self.replay_button, self.pause_button, self.resume_button, self.step_back_button,
                           self.step_forward_button, self.stop_button, self.step_ms, self.escape, self.close_button],
                          layout=W.Layout(align_items="center"))
        right = W.VBox([self.overview, self.progress, self.panel, self.viewer],
                       layout=W.Layout(width="40%", min_width="300px"))
        left = W.VBox([W.HTML("<b>The door's table</b> (click an object to open it)"), self.door_box],
                      layout=W.Layout(width="60%", margin="0 8px 0 0"))
        self.widget = W.VBox([self.header, controls, self.conversation_box, W.HBox([left, right])])
        self.widget.add_class(CSS_CLASSES["view"])
        self.widget.add_class(f"rb-session-view-{sl}")

    # -- rendering ---------------------------------------------------------------------------
    def _header_html(self) -> str:
        return S.session_header_html(self.join, self.door_session, self.caveats, self.evidence_problem)

    def _render_table(self) -> None:
        t = S.in_span(self.table, self.span)
        # three widgets a row (the cells left of the object button, the button, the cells right of
        # it), not one a cell: the table of a long session opens in a fraction of the time
        children: list = [_cells([(c, "", None) for c in ("#", "time (UTC)", "tool")], _LEFT_COLS, head=True),
                          _cell("object", head=True),
                          _cells([(c, "", None) for c in ("decision", "rule", "rows", "bytes", "note")], _RIGHT_COLS,
                                 head=True)]
        self.object_buttons, self.row_buttons = {}, {}
        # one Layout shared by every button and one by every row's cells (a widget each, otherwise)
        button_layout = W.Layout(width="auto", height="24px")
        cell_layout = W.Layout()
        for row, r in zip(t.index[:_MAX_TABLE_ROWS], t.head(_MAX_TABLE_ROWS).itertuples(index=False)):
            # a call the door logged ask (the log does not say what the user answered) is not
            # shown as refused: the sessions list and the header do not count it as one
            asked = str(r.decision) == "ask"
            denied = bool(r.refused) and not asked
            red = "color:#d62728;text-decoration:line-through;" if denied else "color:#b35900;" if asked else ""
            obj = None if S._na(r.object) else str(r.object)  # pandas 3 reads a missing object as NaN
            b = W.Button(description=S.visible(obj) or "(no object)", tooltip=f"open {S.visible(obj)}",
                         layout=button_layout, disabled=obj is None)
            b.add_class(CSS_CLASSES["object_button"])
            seq = None if S._na(r.seq) else int(r.seq)  # (a frame built by hand may leave it NA)
            if seq is not None:
                b.add_class(f"rb-call-{seq}")
            if denied:
                b.add_class("rb-refused")
            elif asked:
                b.add_class("rb-asked")
            # the row itself, not its number: a door that restarted numbers its calls from 1 again
            b.on_click(lambda _b, call=r: self._show_call(call))
            if seq is not None:
                self.object_buttons[seq] = b
            self.row_buttons[int(row)] = b
            children += [_cells([(r.seq, "", None), (S._hms(r.ts), "", None), (r.tool, red, None)], _LEFT_COLS,
                                layout=cell_layout), b,
                         _cells([(r.decision, "color:#d62728;font-weight:bold" if denied else
                                  "color:#b35900;font-weight:bold" if asked else "", None),
                                 (r.rule, "", None), ("" if S._na(r.rows) else f"{int(r.rows):,}", "", None),
                                 ("" if S._na(r.bytes) else f"{int(r.bytes):,}", "", None), (r.note, "", r.note)],
                                _RIGHT_COLS, layout=cell_layout)]
        extra = []
        if len(t) > _MAX_TABLE_ROWS:
            extra.append(W.HTML(f"<i>{len(t) - _MAX_TABLE_ROWS:,} more calls not shown</i>"))
        if self.span is not None:
            extra.append(W.HTML(f"<i>{len(t)} of {len(self.table)} calls in the selected span</i>"))
        self.door_box.children = [_grid(children, "16.3em minmax(8em,2fr) minmax(24.6em,1.5fr)"), *extra]

    def _render_panel(self, status: str | None = None) -> None:
        # Each assignment sends the widget's new value to the page; an unchanged value sends
        # nothing.  The panel is a window of steps around the current one, so a step costs the
        # same bytes in a plan of 5 steps or 10,000; the overview bar depends on the plan only
        # (sent once per Replay) and the progress bar under it is one number.
        if self.plan is None:
            plan = ReplayPlan.from_calls(self.incident.calls, self.data_root, door_session=self.door_session,
                                         step_ms=int(self.step_ms.value))
            status = "ready"
        else:
            plan = self.plan
        self.panel.value = S.panel_html(plan, status=status)
        self.overview.value = S.overview_html(plan)
        n = len(plan.steps)
        with self.progress.hold_sync():
            self.progress.max = max(n, 1)
            self.progress.value = min(plan.position + 1, n) if plan.position >= 0 else 0

    # -- objects -------------------------------------------------------------------------------
    def open_object(self, seq: int | None = None, *, ts: Any = None, row: int | None = None) -> str:
        """Show a door call's object in the preview pane (refused: the refusal, never the file).

        ``open_object(4)`` opens call #4 — the door table's ``#`` — when the session has one
        call of that number.  When several carry it (a door that restarted numbers its calls
        from 1 again, merged logs: the table's note says ``2 calls carry #2``), it raises
        :class:`~replaybook.errors.AmbiguousCall` listing them, and ``open_object(2,
        ts="10:01:30.000")`` (the time as the table shows it, UTC) or ``open_object(row=5)``
        (the call's 0-based row in :attr:`table`, whatever span is shown) opens the one meant.

        Returns:
            the pane's HTML (``data-kind="missing"``, ``no such door call``, when none matches).

        Raises:
            AmbiguousCall: ``seq`` (with ``ts``, if given) names several calls; the pane is
                left as it was.
            IndexError: ``row`` is not a row of :attr:`table`.
        """
        return self._show_call(S.call_row(self.incident.calls, self.door_session, seq, ts=ts, row=row))

    def _show_call(self, call) -> str:
        self.viewer.value = S.preview_html(S.call_preview(self.data_root, call, later=self.later_writes,
                                                          evidence=self.evidence,
                                                          evidence_where=self.evidence_where or "the evidence store"))
        return self.viewer.value

    def _on_pick(self, change) -> None:
        sel = change.get("new")
        vals = getattr(sel, "value", None) or []
        for v in vals:
            seq = v.get("call_seq") if isinstance(v, dict) else None
            crow = v.get("call_row") if isinstance(v, dict) else None
            calls = self.incident.calls
            if crow is not None and 0 <= int(crow) < len(calls):  # the call's own row: one call, always
                self._show_call(next(calls.iloc[[int(crow)]].itertuples(index=False)))
                return
            if seq is not None:
                try:
                    self.open_object(int(seq))
                except AmbiguousCall as exc:  # the chart knows the number only: say which calls carry it
                    self.viewer.value = (f'<div class="rb-preview rb-preview-ambiguous" data-kind="ambiguous" '
                                         f'data-seq="{int(seq)}">{html.escape(str(exc))}</div>')
                return

    # -- span ----------------------------------------------------------------------------------
    def set_span(self, span) -> None:
        """Filter the door's table (and the conversation chart) to ``span`` (``None``: all)."""
        self.span = span
        self._render_table()
        if self.chart is not None and self.conversation is not None:
            # the span is read off the timeline, which draws each record at its own clock's time
            self.chart.chart = S.conversation_chart(S.in_span(self.conversation, span))
            self.chart.selections.observe(self._on_pick, names=["pick"])  # a new chart has new selections

    # -- Replay --------------------------------------------------------------------------------
    def replay_start(self, *, run: bool = True) -> ReplayPlan:
        """Start Replay from the first step.

        Args:
            run: schedule the playback on the running asyncio loop (the kernel's); ``False``
                only prepares it, for a caller that drives :meth:`replay_step` itself.
        """
        self._cancel_task()
        self.plan = ReplayPlan.from_calls(self.incident.calls, self.data_root, door_session=self.door_session,
                                          step_ms=int(self.step_ms.value), evidence=self.evidence,
                                          evidence_where=self.evidence_where or "the evidence store")
        self.plan.start()
        self.replay_log = []
        self.replay_error = None
        self.escape.armed = True
        self.stop_button.disabled = False
        self.viewer.value = S.preview_html(None)
        self._render_panel()
        self._sync_controls()
        if run:
            self._schedule(self.plan)
        return self.plan

    def _schedule(self, plan: ReplayPlan, *, wait_first: bool = False) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = asyncio.get_event_loop()
        self._task = loop.create_task(self._run(plan, wait_first=wait_first))

    def replay_step(self) -> bool:
        """Advance a playing Replay by one step and render it; ``False`` once it is finished or
        stopped, and while it is paused (the step shown stays)."""
        plan = self.plan
        if plan is None or plan.status == "paused":
            return False
        r = plan.advance()
        if r is None:
            self._finish()
            return False
        self._show_step(*r)
        return True

    def _show_step(self, step, pv) -> None:
        # the preview pane, the panel's window and the progress bar: what a played step sends
        self.replay_log.append((step.index, time.monotonic()))
        self.viewer.value = S.preview_html(pv, step=step)
        self._render_panel()

    def replay_pause(self) -> bool:
        """Hold a playing Replay on the step it shows (Pause button): nothing plays until
        :meth:`replay_resume`; Escape and Stop still end it.  ``False`` (nothing changes) when
        Replay is not playing."""
        plan = self.plan
        if plan is None or plan.status != "running":
            return False
        self._cancel_task()
        plan.pause()
        self._render_panel()
        self._sync_controls()
        return True

    def replay_resume(self, *, run: bool = True) -> bool:
        """Play a paused Replay on from the step it shows, not from the first (Resume button):
        that step stays a whole step time (``step_ms``) before the next.  ``False`` when Replay
        is not paused.

        Args:
            run: schedule the playback on the running asyncio loop; ``False`` only lets it go
                on, for a caller that drives :meth:`replay_step` itself.
        """
        plan = self.plan
        if plan is None or not plan.resume():
            return False
        self._render_panel()
        self._sync_controls()
        if run:
            self._schedule(plan, wait_first=plan.position >= 0)
        return True

    def replay_step_forward(self) -> bool:
        """Show the next step of Replay (▶ button), pausing it first if it plays; a refused or
        asked step opens nothing, as when played.  ``False`` on the last step (it stays there:
        Resume ends the Replay) or when no Replay is playing or paused; ``False`` too when the
        step cannot be opened: as for a played step, Replay ends and the pane says why
        (``replay_error``)."""
        return self._step_by_hand(forward=True)

    def replay_step_back(self) -> bool:
        """Show the step before the current one again (◀ button), pausing Replay first if it
        plays; the step left goes back to pending.  ``False`` on the first step or when no
        Replay is playing or paused; ``False`` too when the step cannot be opened (Replay ends,
        the pane saying why, as for :meth:`replay_step_forward`)."""
        return self._step_by_hand(forward=False)

    def _step_by_hand(self, *, forward: bool) -> bool:
        plan = self.plan
        if plan is None or plan.status not in ("running", "paused"):
            return False
        self.replay_pause()
        shown = plan.position
        try:
            r = plan.step_forward() if forward else plan.step_back()
            if r is not None:
                self._show_step(*r)
        except Exception as exc:  # noqa: BLE001 - a button's error reaches no one: say it in the pane
            # (as a played step's does: the step pressed for had left Replay paused on it, the
            # pane still showing the step before, and the error in the kernel's log alone)
            self._failed(plan, exc, shown)
            return False
        self._sync_controls()
        return r is not None

    def replay_stop(self) -> None:
        """Stop Replay where it is (Stop button, Escape), playing or paused: the next Replay
        begins from the first step."""
        self._cancel_task()
        if self.plan is not None:
            self.plan.stop()
        self._finish()

    def _finish(self) -> None:
        self.escape.armed = False
        self.stop_button.disabled = True
        self._render_panel()
        self._sync_controls()

    def _sync_controls(self) -> None:
        """Enable the buttons that apply now.  Playing, they do not change from step to step
        (a step sends no button state); paused, ◀ and ▶ are off at the first and the last step."""
        plan = self.plan
        status = plan.status if plan is not None else "idle"
        running, paused = status == "running", status == "paused"
        n = len(plan.steps) if plan is not None else 0
        self.pause_button.disabled = not running
        self.resume_button.disabled = not paused
        self.step_back_button.disabled = not (running or (paused and plan.position > 0))
        self.step_forward_button.disabled = not (running or (paused and plan.position < n - 1))

    def _cancel_task(self) -> None:
        t, self._task = self._task, None
        if t is not None and not t.done() and t is not _current_task():
            t.cancel()

    async def _run(self, plan: ReplayPlan, *, wait_first: bool = False) -> None:
        try:
            if wait_first:  # resumed: the step shown stays its whole step time before the next
                await asyncio.sleep(plan.step_ms / 1000)
            while plan is self.plan and plan.status == "running":
                if not self.replay_step():
                    break
                # a full step time after each step is shown: keeping to a clock from the first
                # step instead, a step that took longer than a step to open (a large folder, a
                # slow disk) made the steps after it catch up — sent one after the other at once,
                # each replaced before the page could show it
                await asyncio.sleep(plan.step_ms / 1000)
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # noqa: BLE001 - a task's error reaches no one: say it in the pane
            # (an unreadable file, say): Replay had sat at "running" with no word
            self._failed(plan, exc, plan.position)

    def _failed(self, plan: ReplayPlan, exc: Exception, shown: int) -> None:
        """End Replay on an error, saying it in the preview pane after the last step shown
        (index ``shown``, -1 before the first): ``replay_error`` holds ``"<type>: <message>"``."""
        plan.stop()
        self.replay_error = f"{type(exc).__name__}: {exc}"
        where = f"after step {shown + 1}" if shown >= 0 else "before its first step"
        self.viewer.value = (f'<div class="{CSS_CLASSES["replay_error"]}"><b>Replay stopped {where}:</b> '
                             f"{html.escape(S.visible(self.replay_error))}</div>")
        self._finish()

    def _on_escape(self, _change) -> None:
        if self.plan is not None and self.plan.status in ("running", "paused"):
            self.replay_stop()

    @property
    def replay_running(self) -> bool:
        """Replay is playing (not paused)."""
        return self.plan is not None and self.plan.status == "running"

    @property
    def replay_paused(self) -> bool:
        """Replay is paused on a step."""
        return self.plan is not None and self.plan.status == "paused"


def _current_task():
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


# ------------------------------------------------------------------------------------------------


class SessionsList:
    """The sessions list: one row per door session, with Open and Replay buttons.

    Attributes:
        frame: :func:`replaybook.views.session.sessions_list`.
        widget: the list (``rb-sessions``).
    """

    COLUMNS = ["door session", "agent", "start (UTC)", "end (UTC)", "calls", "refused", "matched transcript",
               "agreement", "status", "method", "continues", "clock offset", ""]

    def __init__(self, join, on_open, on_replay):
        self.frame = S.sessions_list(join)
        self._on_open, self._on_replay = on_open, on_replay
        self.widget = W.VBox()
        self.widget.add_class(CSS_CLASSES["sessions"])
        self.open_buttons: dict[str, W.Button] = {}
        self.replay_buttons: dict[str, W.Button] = {}
        self.render()

    #: the list's columns: the Open button, the cells between (one widget a row), the Replay button
    _OUTER_COLS = "minmax(14em,2fr) minmax(68.5em,2.2fr) 7em"
    _CELL_COLS = "6em 7.5em 7.5em 3.5em 4.5em minmax(8em,1.2fr) 7em 6.5em 5.5em minmax(6em,1fr) 6.5em"

    def render(self, span=None) -> None:
        """(Re)draw the list, keeping only sessions overlapping ``span`` (UTC start, end) if given.

        A row is three widgets — its Open button, one HTML widget for the cells between, its
        Replay button — with one layout and style shared by all the rows' buttons: a widget a
        cell (and a layout and style a button) had made an incident of 2,000 door sessions some 86,000 widgets, 25 s
        to build in the kernel and more than a browser tab draws."""
        f = S.sessions_in_span(self.frame, span)
        children: list = [_cell(self.COLUMNS[0], head=True),
                          _cells([(c, "", None) for c in self.COLUMNS[1:-1]], self._CELL_COLS, head=True),
                          _cell(self.COLUMNS[-1], head=True)]
        self.open_buttons, self.replay_buttons = {}, {}
        status_color = {"matched": "#2ca02c", "ambiguous": "#ff7f0e", "unmatched": "#777777"}
        open_layout = W.Layout(width="auto", height="24px")
        replay_layout = W.Layout(width="90px", height="24px")
        button_style = W.ButtonStyle()
        cell_layout = W.Layout()
        for r in f.itertuples(index=False):
            ds = str(r.door_session)
            sl = S.slug(ds)
            ob = W.Button(description=S.visible(ds), tooltip=f"open {S.visible(ds)} in a tab", layout=open_layout,
                          style=button_style)
            ob.add_class(CSS_CLASSES["open_session"])
            ob.add_class(f"rb-session-{sl}")
            ob.on_click(lambda _b, ds=ds: self._on_open(ds))
            rb = W.Button(description="Replay", icon="play", tooltip=f"Replay {S.visible(ds)}", layout=replay_layout,
                          style=button_style)
            rb.add_class(CSS_CLASSES["row_replay"])
            rb.add_class(f"rb-session-{sl}")
            rb.on_click(lambda _b, ds=ds: self._on_replay(ds))
            self.open_buttons[ds], self.replay_buttons[ds] = ob, rb
            tid = None if S._na(r.transcript) else str(r.transcript)
            agree = "" if S._na(r.agreed) else f"{int(r.agreed)} ({float(r.share):.0%})"
            tip = None
            if not S._na(r.runner_up):
                tip = f"runner-up {r.runner_up}, margin {r.margin}"
            cells = [(r.agent, "", None), (S._hms(r.start), "", None), (S._hms(r.end), "", None), (r.calls, "", None),
                     (r.refused, "color:#d62728;font-weight:bold" if (r.refused or 0) > 0 else "", None),
                     (tid[:13] + "…" if tid and len(tid) > 14 else (tid or "— none —"), "", tid or None),
                     (agree, "", tip),
                     (r.status, f"color:{status_color.get(str(r.status), '#000')};font-weight:bold", None),
                     ("" if S._na(r.method) else r.method, "", None),
                     ("" if S._na(r.continues) else r.continues, "",
                      None if S._na(r.continues) else f"continues door session {r.continues}: the same conversation"),
                     ("" if S._na(r.offset_ms) else f"{float(r.offset_ms):+,.0f} ms", "", None)]
            children += [ob, _cells(cells, self._CELL_COLS, layout=cell_layout), rb]
        note = [] if span is None else [W.HTML(f"<i>{len(f)} of {len(self.frame)} sessions overlap the span</i>")]
        self.widget.children = [_grid(children, self._OUTER_COLS), *note]


class Workbook:
    """The interactive workbook for one incident (display it in JupyterLab).

    Args:
        incident: a loaded :class:`~replaybook.incident.Incident`.
        step_ms: Replay's milliseconds per step (default 700).
        charts: draw the timeline and conversation charts (``JupyterChart``); ``False`` for tests
            that only need the tables.

    Attributes:
        sessions: the :class:`SessionsList`.
        tabs: the :class:`ipywidgets.Tab` of opened sessions.
        views: ``{door_session: SessionView}`` for the opened sessions.
        timeline: the timeline ``JupyterChart`` (``None`` without charts).
        span: the selected ``(start, end)`` span, or ``None``.
        widget: the whole workbook (``rb-workbook``).
    """

    def __init__(self, incident, *, step_ms: int = DEFAULT_STEP_MS, charts: bool = True):
        self.incident = incident
        self.step_ms = int(step_ms)
        self.charts = charts
        self.views: dict[str, SessionView] = {}
        self.span = None
        self.sessions = SessionsList(incident.join, self.open_session, self.replay)
        self.tabs = W.Tab()
        self.tabs.add_class(CSS_CLASSES["tabs"])
        self.span_label = W.HTML("<i>No span selected: drag across the strip under the timeline to select one.</i>")
        self.span_label.add_class(CSS_CLASSES["span"])
        self.clear_span_button = W.Button(description="Clear span", disabled=True, layout=W.Layout(width="110px"))
        self.clear_span_button.add_class(CSS_CLASSES["clear_span"])
        self.clear_span_button.on_click(lambda _b: self.set_span(None))
        self.timeline = None
        parts: list = [W.HTML(STYLE), W.HTML(f"<h3 style='margin:4px 0'>{S._esc(incident.title)}</h3>")]
        if charts:
            j = incident.join
            self.timeline = _jupyter_chart(S.timeline_with_brush(incident.steps, incident.calls, j.pairs))
            self.timeline.add_class(CSS_CLASSES["timeline"])
            self.timeline.selections.observe(self._on_brush, names=[S.SPAN_PARAM])
            parts.append(self.timeline)
        parts += [W.HBox([self.span_label, self.clear_span_button], layout=W.Layout(align_items="center"))]
        #: the cloud's own access log beside the door's (None: the incident names no access logs)
        self.storage = None
        storage = S.storage_html(incident)
        if storage is not None:
            self.storage = W.Accordion(children=[W.HTML(STYLE + storage)], selected_index=None,
                                       titles=("Cloud storage access: who else touched what the agent reached",))
            parts.append(self.storage)
        parts += [W.HTML("<b>Door sessions</b> — Open shows a session in a tab; Replay reopens what the agent opened."),
                  self.sessions.widget, self.tabs]
        self.widget = W.VBox(parts)
        self.widget.add_class(CSS_CLASSES["workbook"])

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    # -- tabs ------------------------------------------------------------------------------------
    def open_session(self, door_session: str) -> SessionView:
        """Open ``door_session`` in its tab (or select it if open) and return its view."""
        ds = str(door_session)
        if ds not in self.views and not (self.incident.calls["door_session"] == ds).any():
            known = list(dict.fromkeys(self.incident.calls["door_session"].dropna().astype(str)))
            raise KeyError(f"no door session {ds!r} in this incident; it has "
                           + (", ".join(known[:10]) + (f" and {len(known) - 10} more" if len(known) > 10 else "")
                              if known else "none"))
        if ds not in self.views:
            v = SessionView(self.incident, ds, step_ms=self.step_ms, charts=self.charts)
            if self.span is not None:
                v.set_span(self.span)
            v.close_button.on_click(lambda _b, ds=ds: self.close_session(ds))
            self.views[ds] = v
            self._sync_tabs()
        self.tabs.selected_index = list(self.views).index(ds)
        return self.views[ds]

    def close_session(self, door_session: str) -> None:
        """Close a session's tab (stopping its Replay)."""
        v = self.views.pop(str(door_session), None)
        if v is not None:
            v.replay_stop()
            self._sync_tabs()

    def _sync_tabs(self) -> None:
        self.tabs.children = [v.widget for v in self.views.values()]
        self.tabs.titles = tuple(self._title(ds) for ds in self.views)
        if not self.views:
            self.tabs.selected_index = None

    def _title(self, ds: str) -> str:
        ds = S.visible(ds)
        return ds if len(ds) <= 28 else "…" + ds[-27:]

    def replay(self, door_session: str, *, run: bool = True) -> SessionView:
        """Replay pressed on a session's row: open its tab and start Replay there."""
        v = self.open_session(door_session)
        v.replay_start(run=run)
        return v

    # -- span ------------------------------------------------------------------------------------
    def _on_brush(self, change) -> None:
        sel = change.get("new")
        self.set_span(S.span_from_selection(getattr(sel, "value", None)))

    def set_span(self, span) -> None:
        """Filter the sessions list and every open session's tables to ``span`` (``None``: all)."""
        self.span = span
        if span is None:
            self.span_label.value = "<i>No span selected: drag across the strip under the timeline to select one.</i>"
        else:
            self.span_label.value = (f'<span class="rb-span-value">Span {S._hms(span[0])} – {S._hms(span[1])} UTC</span>'
                                     " — tables filtered to it")
        self.clear_span_button.disabled = span is None
        self.sessions.render(span)
        for v in self.views.values():
            v.set_span(span)
