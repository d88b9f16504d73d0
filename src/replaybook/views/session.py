"""Pure helpers behind the workbook's session view (no ipywidgets here).

Everything the widgets in :mod:`replaybook.views.widgets` show is computed here from an
:class:`~replaybook.incident.Incident`'s frames and its join, so it can be tested and reused
without a browser or a kernel:

* :func:`sessions_list` — one row per door session with the join's verdict;
* :func:`conversation` — the matched transcript as a sequence (the user's question, each
  request to the model, each tool call), each door call annotated with what it reached, plus
  the calls the door never saw and the door calls no step claims;
* :func:`door_table` — the door's own table for one session;
* :func:`call_preview` — what clicking an object shows (a refused object is never opened);
* :func:`conversation_chart`, :func:`timeline_with_brush` — Altair charts;
* :func:`panel_html`, :func:`overview_html`, :func:`preview_html` — the Replay panel (a window
  of steps around the current one), the bar of the whole plan, and the preview pane, as HTML;
* :func:`span_from_selection`, :func:`in_span` — the timeline brush as a time span;
* :func:`resolve_incident_path`, :func:`display_static` — for the notebook.

All HTML built here escapes every value that comes from the evidence, and writes out the
characters that would disguise it (:func:`visible`).
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from .._text import SHOW_INVISIBLE
from ..join import orphan_results
from ..replay import LaterWrites, Preview, ReplayPlan, ReplayStep, kept_or_now, preview, writes
from .charts import _tips

__all__ = [
    "DEMO_INCIDENT",
    "resolve_incident_path",
    "sessions_list",
    "transcript_of",
    "conversation",
    "door_table",
    "call_row",
    "call_rows",
    "call_preview",
    "evidence_store",
    "session_caveats",
    "session_header_html",
    "without_tool_only_requests",
    "conversation_chart",
    "timeline_with_brush",
    "SPAN_PARAM",
    "span_from_selection",
    "in_span",
    "step_mark",
    "PANEL_BEFORE",
    "PANEL_AFTER",
    "OVERVIEW_CELLS",
    "panel_window",
    "panel_html",
    "overview_html",
    "preview_html",
    "frame_html",
    "slug",
    "visible",
    "display_static",
]

#: The bundled demo incident, relative to the repository root.
DEMO_INCIDENT = "data/demo/incident.yaml"

#: Name of the interval selection on the timeline's brush strip.
SPAN_PARAM = "span"

_CONV_LANES = ("user", "model", "tool call", "door")
_LANE_OF_KIND = {"user_prompt": "user", "model_request": "model", "tool_call": "tool call"}
_LABEL_CHARS = 110


# --------------------------------------------------------------------------------------------
# small utilities


#: Control characters and the invisible characters that change how a name reads (bidirectional
#: overrides, zero-width spaces: :data:`replaybook._text.SHOW_INVISIBLE`), written out as the
#: report writes them.
_VISIBLE = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F)}
_VISIBLE.update(SHOW_INVISIBLE)


def visible(text: Any) -> str:
    """``text`` as a string whose invisible characters are written out, so a name cannot be
    disguised (a right-to-left override makes ``evil<U+202E>gnp.exe`` read ``evilexe.png``):
    control characters as ``\\xNN``, bidirectional controls and zero-width spaces as
    ``\\uNNNN``.  ``""`` for NA."""
    return "" if _na(text) else str(text).translate(_VISIBLE)


def _esc(text: Any) -> str:
    """Escaped HTML text of :func:`visible` ``text``."""
    return html.escape(visible(text))


def slug(text: Any) -> str:
    """A CSS-class-safe form of ``text`` (``door-20260913T100005-a1`` stays as it is)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(text)).strip("-") or "x"


def _na(v: Any) -> bool:
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _short(v: Any, n: int = _LABEL_CHARS) -> str:
    if _na(v):
        return ""
    s = " ".join(str(v).split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _int(v: Any) -> int | None:
    return None if _na(v) else int(v)


def _hms(ts: Any) -> str:
    if _na(ts):
        return ""
    return pd.Timestamp(ts).tz_convert("UTC").strftime("%H:%M:%S.%f")[:-3]


def _bytes(n: Any) -> str:
    return "" if _na(n) else f"{int(n):,} B"


def resolve_incident_path(path: str | Path | None = None, *, start: str | Path | None = None) -> Path:
    """Find an incident manifest: ``path`` as given, or relative to the repository.

    A relative ``path`` (default: the bundled demo, :data:`DEMO_INCIDENT`) is tried against
    ``start`` (default: the current directory) and each of its parents — so the notebook finds
    ``data/demo/incident.yaml`` when run from ``notebooks/`` — and finally against the
    repository this package was installed from (editable installs).

    Raises:
        FileNotFoundError: nothing matches (the message lists where it looked).
    """
    p = Path(path if path not in (None, "") else DEMO_INCIDENT).expanduser()
    if p.is_absolute():
        if p.exists():
            return p
        raise FileNotFoundError(f"incident {p} not found")
    here = Path(start or Path.cwd()).resolve()
    tried = []
    for base in (here, *here.parents, Path(__file__).resolve().parents[3]):
        cand = base / p
        tried.append(str(cand))
        if cand.exists():
            return cand.resolve()
    raise FileNotFoundError(f"incident {p} not found; looked in: " + ", ".join(tried[:6]) + " …")


# --------------------------------------------------------------------------------------------
# frames


def sessions_list(join) -> pd.DataFrame:
    """One row per door session, in start order, with the join's verdict.

    Columns: ``door_session``, ``agent``, ``start``, ``end`` (UTC), ``calls``, ``refused``,
    ``transcript`` (the matched transcript id, NA when none), ``agreed`` (steps agreeing),
    ``share`` (agreed / calls), ``status`` (matched / ambiguous / unmatched), ``offset_ms``
    (door clock − transcript clock), ``runner_up``, ``margin``, ``unclaimed_calls``,
    ``unmatched_steps``, ``continues`` (the door session whose transcript this one continues —
    a door that restarted mid-conversation, a resumed conversation — NA otherwise) and
    ``method`` (what the link rests on: ``content``, ``meta_id``, ``tool_time``, joined with
    ``+``; NA without a transcript), both as ``join.sessions`` has them.
    """
    s = join.sessions
    out = pd.DataFrame({
        "door_session": s["door_session"].astype("string"),
        "agent": s["agent"],
        "start": s["start"],
        "end": s["end"],
        "calls": s["calls"],
        "refused": s["refused"],
        "transcript": s["transcript_id"],
        "agreed": s["agreed"],
        "share": s["share"],
        "status": s["status"],
        "offset_ms": s["offset_ms"],
        "runner_up": s["runner_up"],
        "margin": s["margin"],
        "unclaimed_calls": s["unclaimed_calls"],
        "unmatched_steps": s["unmatched_steps"],
        "continues": s["continues"].astype("string") if "continues" in s.columns else pd.NA,
        "method": s["method"].astype("string") if "method" in s.columns else pd.NA,
    })
    return out.sort_values(["start", "door_session"], kind="stable").reset_index(drop=True)


def transcript_of(join, door_session: str) -> str | None:
    """The transcript the join assigned to ``door_session``, or ``None``."""
    return join.assignments().get(str(door_session))


def _session_calls(calls: pd.DataFrame, door_session: str) -> pd.DataFrame:
    """The session's calls in time order, each with ``frame_row``: its position in ``calls`` (what
    the join's ``pairs.call_row`` names, so a repeated ``seq`` still names one call)."""
    mask = (calls["door_session"].astype("string") == str(door_session)).to_numpy(dtype=bool, na_value=False)
    c = calls[mask].assign(frame_row=np.flatnonzero(mask))
    return c.sort_values(["ts", "seq"], kind="stable")


def _conversation_sessions(join, tid: str, door_session: str) -> list[str]:
    """The door sessions whose transcript is ``tid``: ``door_session`` first, then the others in
    time order (one assigned one-to-one, the rest continuing it: ``sessions.continues``)."""
    s = join.sessions
    if "continues" not in s.columns or not s["continues"].notna().any():
        return [str(door_session)]
    mine = s[s["transcript_id"].astype("string") == str(tid)].sort_values("start", kind="stable")
    return [str(door_session)] + [str(x) for x in mine["door_session"] if str(x) != str(door_session)]


def door_table(calls: pd.DataFrame, join, door_session: str) -> pd.DataFrame:
    """The door's own table for one session, in the door's order.

    Columns: ``seq``, ``ts``, ``tool``, ``object``, ``decision``, ``rule``, ``rows``,
    ``bytes``, ``refused`` (bool: the door did not allow the call; ``False`` for an ``ask``, whose
    outcome the log does not record), ``claimed`` (a step of the matched transcript claims the
    call), ``note`` (``2 calls carry #2`` — a number the session uses more than once: name the
    call by its time or row, :func:`call_row` — / ``refused by rule …`` / ``no transcript step
    claims this call``).  Row ``i`` (the index, 0…n-1) is what :func:`call_row` calls ``row=i``.
    """
    c = _session_calls(calls, door_session)
    claimed_rows = set()
    p = join.pairs
    if len(p):
        pp = p[p["door_session"].astype("string") == str(door_session)]
        claimed_rows = {int(x) for x in pp["call_row"].dropna()}
    has_transcript = transcript_of(join, door_session) is not None
    shared = c["seq"].value_counts()
    shared = {int(k): int(v) for k, v in shared[shared > 1].items()}
    rows = []
    for r in c.itertuples(index=False):
        # (an ask whose outcome is not logged: neither reached nor refused — the sessions list and
        # the header do not count it as refused)
        refused = str(r.decision) not in ("allow", "ask")
        seq = _int(r.seq)
        claimed = int(r.frame_row) in claimed_rows
        notes = []
        if seq in shared:
            notes.append(f"{shared[seq]} calls carry #{seq}")
        if str(r.decision) == "ask":
            notes.append(ASKED_NOTE.format(rule=f" {r.rule}" if not _na(r.rule) else ""))
        elif refused:
            notes.append(f"refused by rule {r.rule}" if not _na(r.rule) else "refused")
        if has_transcript and not claimed:
            notes.append("no transcript step claims this call")
        rows.append({
            "seq": seq, "ts": r.ts, "tool": r.tool, "object": None if _na(r.object) else str(r.object),
            "decision": r.decision, "rule": None if _na(r.rule) else str(r.rule),
            "rows": _int(r.rows), "bytes": _int(r.bytes), "refused": refused, "claimed": claimed,
            "note": "; ".join(notes),
        })
    cols = ["seq", "ts", "tool", "object", "decision", "rule", "rows", "bytes", "refused", "claimed", "note"]
    out = pd.DataFrame(rows, columns=cols)
    out["ts"] = pd.to_datetime(out["ts"], utc=True)
    for col in ("seq", "rows", "bytes"):
        out[col] = out[col].astype("Int64")
    return out


#: a door call logged with decision ``ask``: the rule asked the agent's user, and the log does not
#: record the answer (replaybook's door logs the outcome, ``allow``/``deny`` with ``approval``)
ASKED_NOTE = "the rule{rule} asked the user; the log does not say what they answered"


def _status(call: Any) -> str:
    """``reached`` (allowed), ``refused`` (denied) or ``asked`` (an ``ask`` whose outcome the log
    does not record: neither shown as reached nor counted as refused)."""
    d = str(call.decision)
    return "reached" if d == "allow" else "asked" if d == "ask" else "refused"


def _reach(call: Any) -> str:
    """``demo/cars.xpt · allow (allow-demo) · 32 rows · 2,720 B`` for a door call row (a rule
    that asked the user adds their answer: ``allow (ask-first, the user was asked: approved)``)."""
    obj = call.object if not _na(call.object) else "(no object)"
    approval = getattr(call, "approval", None)
    asked = "" if _na(approval) else f", the user was asked: {str(approval).replace('_', ' ')}"
    if str(call.decision) == "ask":  # the log says only that the rule asked, not what came of it
        rule = f" by rule {call.rule}" if not _na(call.rule) else ""
        logged = [f"{int(call.rows):,} row" + ("" if int(call.rows) == 1 else "s")] if not _na(call.rows) else []
        logged += [_bytes(call.bytes)] if not _na(call.bytes) else []
        return (f"{obj} · ASKED the user{rule} · the log does not say what they answered"
                + (f" · the door logged {', '.join(logged)} returned" if logged else ""))
    if str(call.decision) != "allow":
        rule = f" by rule {call.rule}" if not _na(call.rule) else ""
        return f"{obj} · REFUSED{rule}{asked} · nothing returned"
    parts = [str(obj), f"{call.decision}" + (f" ({call.rule}{asked})" if not _na(call.rule) else "")]
    if not _na(call.rows):
        parts.append(f"{int(call.rows):,} row" + ("" if int(call.rows) == 1 else "s"))
    if not _na(call.bytes):
        parts.append(_bytes(call.bytes))
    return " · ".join(parts)


def conversation(steps: pd.DataFrame, calls: pd.DataFrame, join, door_session: str) -> pd.DataFrame | None:
    """The matched transcript of ``door_session`` as a sequence, annotated by the door.

    One row per user prompt, model request and tool call of the transcript the join assigned
    to the session (in transcript order), plus one row per door call of the session that no
    step claims (placed at its time on the transcript's clock, ``ts − offset_ms``).

    Columns: ``order`` (0-based position), ``ts`` (transcript clock, UTC), ``lane`` (``user``,
    ``model``, ``tool call`` or ``door``), ``kind``, ``step_seq``, ``tool``, ``text`` (prompt /
    model text / tool arguments), ``call_seq``, ``call_row`` (the door call's 0-based position in
    ``calls``, as ``join.pairs.call_row``: unique where a damaged log repeats a ``seq``),
    ``call_session`` (the door call's session: ``door_session``, or one that continues the
    conversation, ``sessions.continues``),
    ``object``, ``decision``, ``rule``, ``rows``,
    ``bytes``, ``status`` — ``prompt``, ``request``, ``reached`` (a door call agrees),
    ``call line missing`` (a tool result whose call's own line is missing, whose tool-use id no
    door call of the session logged),
    ``refused`` (it agrees and the door refused it), ``asked`` (it agrees and the door logged
    decision ``ask``: the rule asked the user and the log does not say what they answered),
    ``door never saw`` (a door-bound call
    with no door call: ``join.unmatched_steps``), ``not through the door`` (built-in or other
    server's tool), ``unclaimed`` (a door call no step claims: ``join.unclaimed_calls``) —
    and ``reach`` (what the door call reached, in words), ``label`` (one line for the chart),
    ``transcript_id`` (the step's transcript: the session's, or a sub-agent's; ``None`` for an
    unclaimed door call), ``agent_id`` (a sub-agent's step: its agent id; else ``None``; the
    step's transcript may also be a sub-agent's own file), ``result`` (what a tool call got back, as the transcript recorded it,
    one line of at most 400 characters; ``None`` for other rows), ``call_missing`` (True on the row
    of a tool result whose tool call's own line is missing from the transcript — damaged and set
    aside, a file cut before it, a resumed copy that dropped it —
    :func:`replaybook.join.orphan_results`: ``kind`` ``tool_result``, ``step_seq`` the result's;
    where the join paired it with a door call, ``tool`` and ``text`` are the door's), ``tied_by``
    (on such a row the join paired: what paired it, ``join.pairs.how`` — ``meta_id`` its tool-use
    id, ``result_text`` / ``result_tool`` / ``result_size`` the door's error text, the tool or the
    response size at that time, for clients that send the door no tool-use id; :func:`tie_text`
    words it; ``None`` otherwise).

    Returns ``None`` when the session has no matched transcript.
    """
    tid = transcript_of(join, door_session)
    if tid is None:
        return None
    # the conversation: the transcript and its sub-agents' (their calls share the door session)
    members = join.transcripts_of(tid) if hasattr(join, "transcripts_of") else [tid]
    rank = {t: i for i, t in enumerate(members)}
    mine = steps[steps["transcript_id"].astype("string").isin(members)]
    # with each tool result whose tool call's own line is missing: it stands for its call
    st = mine[mine["kind"].isin(list(_LANE_OF_KIND)).to_numpy(bool) | orphan_results(mine)]
    st = st.assign(member=st["transcript_id"].map(rank)).sort_values(["member", "seq"], kind="stable")
    # the door sessions of this conversation: the one assigned, and those that continue it
    # (sessions.continues: a door that restarted, a resumed conversation)
    group = _conversation_sessions(join, tid, door_session)
    sc = pd.concat([_session_calls(calls, g) for g in group]) if len(group) > 1 else _session_calls(calls, door_session)
    by_row = {int(r.frame_row): r for r in sc.itertuples(index=False)}
    pairs = join.pairs
    pairs = pairs[pairs["door_session"].astype("string").isin(group)]
    claimed_rows = {int(x) for x in pairs["call_row"].dropna()}
    pairs = pairs[pairs["transcript_id"].astype("string").isin(members)]
    # a step names its call by the call's row, not its seq: a damaged or merged log can repeat a seq
    call_of_step = {(str(r.transcript_id), int(r.step_seq)): int(r.call_row) for r in pairs.itertuples(index=False)}
    how_of_step = {(str(r.transcript_id), int(r.step_seq)): str(r.how) for r in pairs.itertuples(index=False)}
    um = join.unmatched_steps
    never_saw = set()
    if len(um):
        um = um[um["transcript_id"].astype("string").isin(members)]
        never_saw = {(str(t), int(x)) for t, x in zip(um["transcript_id"], um["seq"]) if not _na(x)}

    rows: list[dict] = []
    for r in st.itertuples(index=False):
        seq = int(r.seq)
        key = (str(r.transcript_id), seq)
        lane = _LANE_OF_KIND.get(str(r.kind), "tool call")  # (a tool result standing in for its call)
        row = {"ts": r.ts, "lane": lane, "kind": str(r.kind), "step_seq": seq, "tool": None, "text": None,
               "call_seq": None, "call_row": None, "call_session": None, "object": None, "decision": None, "rule": None, "rows": None,
               "bytes": None, "status": None, "reach": None, "transcript_id": str(r.transcript_id),
               "agent_id": None if _na(r.agent_id) else str(r.agent_id), "result": None, "call_missing": False,
               "tied_by": None, "_m": r.member}
        if str(r.kind) == "tool_result":
            _result_only_row(row, r, call_of_step.get(key), by_row, door_session, calls, how_of_step.get(key))
        elif lane == "user":
            row.update(status="prompt", text=_short(r.text, 400))
            row["label"] = "user: " + _short(r.text)
        elif lane == "model":
            row.update(status="request", text=_short(r.text, 400))
            row["label"] = "model: " + (_short(r.text) or "(request to the model)")
        else:
            tool = r.tool if not _na(r.tool) else r.tool_raw
            # a call whose input is free text (Codex's apply_patch, a custom tool) has no
            # comparable arguments: its text is what it sent
            args = _short(r.args_key, 60) if not _na(r.args_key) else _short(r.text, 400)
            row.update(tool=None if _na(tool) else str(tool), text=args,
                       result=(_short(r.result_text, 400) or None) if hasattr(r, "result_text") else None)
            head = f"{tool} {args}".strip()
            crow = call_of_step.get(key)
            if crow is not None and crow in by_row:
                c = by_row[crow]
                cseq = _int(c.seq)
                refused = str(c.decision) != "allow"
                row.update(call_seq=cseq, call_row=crow, call_session=str(c.door_session),
                           object=None if _na(c.object) else str(c.object),
                           decision=str(c.decision), rule=None if _na(c.rule) else str(c.rule),
                           rows=_int(c.rows), bytes=_int(c.bytes),
                           status=_status(c), reach=_reach(c))
                where = "door" if str(c.door_session) == str(door_session) else f"door session {c.door_session}"
                row["label"] = f"{head}  →  {where} #{cseq}: {row['reach']}"
            elif key in never_saw:
                row.update(status="door never saw", reach="the door never saw this call")
                row["label"] = f"{head}  →  the door never saw this call"
            else:
                row.update(status="not through the door", reach="not a door tool")
                row["label"] = f"{head}  (not through the door)"
        if r.member:  # a sub-agent's step
            agent = row["agent_id"] or r.transcript_id
            row["label"] = f"sub-agent {agent} · {row['label']}"
        rows.append(row)

    offsets = {g: _session_offset_ms(join, g) for g in group}
    # the sessions' calls no step claims (join.unclaimed_calls, by row)
    for c in sc.itertuples(index=False):
        if int(c.frame_row) not in claimed_rows:
            offset = offsets.get(str(c.door_session), offsets[str(door_session)])
            ts = c.ts - pd.Timedelta(milliseconds=offset) if not _na(c.ts) else c.ts
            reach = _reach(c)
            rows.append({"ts": ts, "lane": "door", "kind": "door_call", "step_seq": None, "tool": str(c.tool),
                         "text": _short(c.args_key, 60), "call_seq": _int(c.seq), "call_row": int(c.frame_row),
                         "call_session": str(c.door_session),
                         "object": None if _na(c.object) else str(c.object), "decision": str(c.decision),
                         "rule": None if _na(c.rule) else str(c.rule), "rows": _int(c.rows),
                         "bytes": _int(c.bytes), "status": "unclaimed", "reach": reach,
                         "label": (f"door #{_int(c.seq)}" if str(c.door_session) == str(door_session)
                                   else f"door session {c.door_session} #{_int(c.seq)}")
                         + f" {c.tool}: {reach}  (no transcript step claims it)",
                         "transcript_id": None, "agent_id": None, "result": None, "call_missing": False,
                         "tied_by": None, "_m": None})
    cols = ["ts", "lane", "kind", "step_seq", "tool", "text", "call_seq", "call_row", "call_session", "object",
            "decision", "rule", "rows", "bytes", "status", "reach", "label", "transcript_id", "agent_id", "result",
            "call_missing", "tied_by", "_m"]
    out = pd.DataFrame(rows, columns=cols)
    out["ts"] = pd.to_datetime(out["ts"], utc=True)
    # time order, then transcript order (the parent's, then each sub-agent's); an unclaimed door
    # call goes after the steps written before it.  A step whose line carries no timestamp keeps
    # its place in its transcript: it sorts at the time of the step before it (of the one after
    # it, when none before has a time), not after the whole conversation.
    out["_k"] = out["step_seq"].astype("float64")
    out["_m"] = out["_m"].astype("float64")
    step = out["_m"].notna()
    out["_t"] = out["ts"]
    if step.any() and out.loc[step, "ts"].isna().any():  # (rows are in (member, seq) order here)
        by_member = out.loc[step, "ts"].groupby(out.loc[step, "_m"])
        out.loc[step, "_t"] = by_member.ffill().fillna(by_member.bfill())
    out = out.sort_values(["_t", "_m", "_k"], kind="stable", na_position="last").drop(columns=["_k", "_m", "_t"])
    for col in ("step_seq", "call_seq", "call_row", "rows", "bytes"):
        out[col] = out[col].astype("Int64")
    out.insert(0, "order", range(len(out)))
    return out.reset_index(drop=True)


#: what paired a tool result standing in for its missing call with a door call, in words, by
#: ``join.pairs.how``
_TIES = {
    "meta_id": "its result's tool-use id names this door call",
    "result_text": "its result's text is the error the door logged for this call, at that time",
    "result_tool": "its result names this door call's tool, at that time",
    "result_size": "its result is as long as the answer the door logged for this call (bytes), at that time",
}

#: clients whose tool-use id the door can log (``_meta``): Claude Code sends
#: ``claudecode/toolUseId``; Codex, Gemini CLI and OTel-traced clients send none
ID_SENDING_CLIENTS = ("claude-code",)


def tie_text(how: Any) -> str:
    """What paired a tool result whose call's line is missing with its door call, in words
    (``how``: a ``join.pairs.how`` value, as a :func:`conversation` row's ``tied_by``)."""
    return _TIES.get(str(how), "the join paired its result with this door call")


def _result_only_row(row: dict, r, crow: int | None, by_row: dict, door_session: str,
                     calls: pd.DataFrame, how: str | None = None) -> None:
    """Fill ``row`` (a :func:`conversation` row) for a tool result whose tool call's own line is
    missing from the transcript (:func:`replaybook.join.orphan_results`): the call is the door's
    record, where the join paired the result with a door call of the conversation (``crow``, its
    row; ``how`` what paired them, ``join.pairs.how``); else the transcript alone says a call was
    made, not what it was, and ``reach`` says why no door call is tied to it: for a client that
    sends the door its tool-use ids (:data:`ID_SENDING_CLIENTS`), none logged it, or those that
    did are other sessions'; for others (Codex sends none), no door call of the session answers
    it by error text, tool or size at that time."""
    row.update(call_missing=True, result=_short(r.text, 400) or None)
    if crow is not None and crow in by_row:
        c = by_row[crow]
        cseq = _int(c.seq)
        row.update(tool=None if _na(c.tool) else str(c.tool), text=_short(c.args_key, 60),
                   call_seq=cseq, call_row=crow, call_session=str(c.door_session),
                   object=None if _na(c.object) else str(c.object), decision=str(c.decision),
                   rule=None if _na(c.rule) else str(c.rule), rows=_int(c.rows), bytes=_int(c.bytes),
                   status=_status(c), reach=_reach(c), tied_by=how or "meta_id")
        where = "door" if str(c.door_session) == str(door_session) else f"door session {c.door_session}"
        row["label"] = (f"{row['tool'] or ''} {row['text'] or ''}".strip() + f"  →  {where} #{cseq}: {row['reach']}"
                        f"  (the tool call's own line is missing from the transcript; {tie_text(row['tied_by'])})")
        return
    tool = r.tool if not _na(r.tool) else r.tool_raw
    other = calls[(calls["meta_call_id"] == r.call_id).fillna(False).to_numpy(bool)] if not _na(r.call_id) else calls.iloc[:0]
    client = getattr(r, "client", None)
    sends_ids = _na(client) or str(client) in ID_SENDING_CLIENTS
    reach = (("no door call logged its tool-use id" if sends_ids else
              f"no door call of this session answers it by error text, tool or size at that time ({client} "
              "sends the door no tool-use id)") if not len(other) else
             "its tool-use id was logged by " + ", ".join(
                 f"door session {c.door_session} #{_int(c.seq)}" for c in other.head(3).itertuples(index=False))
             + ", a door session not assigned to this transcript")
    row.update(tool=None if _na(tool) else str(tool), status="call line missing", reach=reach)
    row["label"] = (f"{'' if _na(tool) else tool} (a tool call whose own line is missing from the transcript; "
                    f"only its result remains: {reach})").strip()


def _session_offset_ms(join, door_session: str) -> float:
    s = join.sessions
    row = s[s["door_session"].astype("string") == str(door_session)]
    if len(row) and not _na(row["offset_ms"].iloc[0]):
        return float(row["offset_ms"].iloc[0])
    return float(join.offset_ms or 0.0)


_TIME_OF_DAY = re.compile(r"\d{1,2}:\d{2}:\d{2}(\.\d{1,9})?")


def _ts_matches(ts: pd.Series, when: Any) -> pd.Series:
    """Which of ``ts`` (UTC) are ``when``: a time of day as the door's table writes it
    (``"10:01:30.000"``; a shorter one, ``"10:01:30"``, is every call of that second), or a
    point in time (a Timestamp, datetime or ISO string with a date; naive means UTC), equal
    to the microsecond."""
    t = pd.to_datetime(ts, utc=True)
    if isinstance(when, str) and _TIME_OF_DAY.fullmatch(when.strip()):
        w = when.strip()
        w = "0" + w if w.index(":") == 1 else w  # 9:01:30 is 09:01:30
        shown = t.dt.strftime("%H:%M:%S.%f")
        return shown.str.startswith(w).fillna(False).astype(bool)
    w = pd.Timestamp(when)
    w = w.tz_localize("UTC") if w.tzinfo is None else w.tz_convert("UTC")
    return (t == w).fillna(False).astype(bool)


def call_rows(calls: pd.DataFrame, door_session: str, seq: int | None = None, *, ts: Any = None) -> pd.DataFrame:
    """The door calls of ``door_session`` numbered ``seq`` (all of them when ``seq`` is None)
    at time ``ts`` (any time when None; see :func:`call_row` for the forms), in the door's
    order (ts, then seq — :func:`door_table`'s), with a first column ``row``: each call's
    0-based position in that order."""
    c = _session_calls(calls, door_session).reset_index(drop=True)
    c.insert(0, "row", range(len(c)))
    keep = pd.Series(True, index=c.index)
    if seq is not None:
        keep &= (c["seq"] == int(seq)).fillna(False).astype(bool)
    if ts is not None:
        keep &= _ts_matches(c["ts"], ts)
    return c[keep]


def _candidate(k: dict) -> str:
    """``row=5: #2 at 2026-09-13 10:01:30.000 UTC, describe demo/cars.xpt, deny (no-xpt)``."""
    when = "an unknown time" if _na(k["ts"]) else (pd.Timestamp(k["ts"]).tz_convert("UTC").strftime("%Y-%m-%d ")
                                                   + _hms(k["ts"]) + " UTC")
    rule = f" ({visible(k['rule'])})" if k["rule"] else ""
    return (f"row={k['row']}: #{k['seq']} at {when}, {visible(k['tool'])} {visible(k['object'] or '(no object)')}, "
            f"{visible(k['decision'])}{rule}")


def call_row(calls: pd.DataFrame, door_session: str, seq: int | None = None, *, ts: Any = None,
             row: int | None = None) -> Any:
    """One door call of ``door_session`` (a namedtuple of the calls frame's columns, ``row``
    first), or ``None`` when none matches.

    Name it by its number, ``seq`` (the door table's ``#``) — enough when the number is the
    session's only one — adding ``ts`` when several calls carry it (a door that restarted
    numbers its calls from 1 again; merged logs), or by ``row``, its 0-based position in the
    session's calls in the door's order (:func:`door_table`'s rows, whatever span is shown).

    Args:
        seq: the call's number.
        ts: the call's time: as the door's table writes it (``"10:01:30.000"``, UTC; a
            shorter ``"10:01:30"`` is any call of that second), or a point in time (Timestamp,
            datetime, ISO string; naive is UTC) equal to the microsecond.
        row: the call's position instead (not with ``seq`` or ``ts``).

    Raises:
        AmbiguousCall: several calls match (``seq`` alone, or even with ``ts``); the message
            lists each with its row and time, and how to name one.
        IndexError: ``row`` is not a position in the session.
        InputError: ``row`` given with ``seq`` or ``ts``, or neither given.
    """
    from ..errors import AmbiguousCall, InputError

    if row is not None:
        if seq is not None or ts is not None:
            raise InputError("name a door call by seq (and ts) or by row, not both")
        c = call_rows(calls, door_session)
        if not 0 <= int(row) < len(c):
            where = f"door session {visible(door_session)!r}"
            raise IndexError(f"row {row} is not a call of {where}: it has rows 0–{len(c) - 1}" if len(c)
                             else f"{where} has no calls")
        return next(c.iloc[[int(row)]].itertuples(index=False))
    if seq is None and ts is None:
        raise InputError("name a door call: by its number (seq), its time (ts) or its row")
    c = call_rows(calls, door_session, seq, ts=ts)
    if len(c) > 1:
        cands = [{"row": int(r.row), "seq": _int(r.seq), "ts": r.ts, "tool": r.tool,
                  "object": None if _na(r.object) else str(r.object), "decision": str(r.decision),
                  "rule": None if _na(r.rule) else str(r.rule)} for r in c.itertuples(index=False)]
        what = (f"door call #{seq}" if seq is not None else "a door call") + (f" at {ts}" if ts is not None else "")
        listed = "; ".join(_candidate(k) for k in cands)
        if ts is None and len({_hms(k["ts"]) for k in cands}) == len(cands):
            how = f"add its time as the table shows it (ts={_hms(cands[-1]['ts'])!r}) or name it by row"
        else:
            how = "name it by row"
        raise AmbiguousCall(f"{what} is not one call of door session {visible(door_session)!r}: {len(cands)} calls "
                            f"match — {listed}. To open one, {how} (row=…)",
                            str(door_session), None if seq is None else int(seq), cands)
    return next(c.itertuples(index=False), None)


def call_preview(data_root: str | Path | None, call: Any, *, later: LaterWrites | None = None,
                 evidence=None, evidence_where: str = "the evidence store") -> Preview:
    """What clicking a door call's object shows.

    A call the door did not allow is never opened: the preview says ``refused by rule …``
    (kind ``refused``) and the file is not touched.  Where ``evidence`` (an
    :class:`~replaybook.capsule.store.EvidenceStore`) holds the response the door kept for the
    call (``response_digest``) and the call does not write, that response is shown
    (:func:`replaybook.replay.evidence_preview`, ``source="evidence"``).  Otherwise
    :func:`replaybook.replay.preview` opens the file read-only inside the data root, secrets
    redacted, and its ``caveat`` says it is the file as it is now, not as the call read it, and
    what shows it changed since (:func:`replaybook.replay.as_now_caveat`: the ``bytes`` the door
    logged, a later write in ``later``, a file that no longer hashes to the ``object_digest`` the
    door logged — Replay's "changed since the run").
    """
    obj = None if call is None or _na(call.object) else str(call.object)
    if call is None:
        return Preview("missing", "", text="no such door call")
    if str(call.decision) != "allow":
        if str(call.decision) == "ask":
            return Preview("asked", obj or "", text=ASKED_NOTE.format(rule=f" {call.rule}" if not _na(call.rule)
                                                                        else "") + ", so nothing is opened")
        rule = f"refused by rule {call.rule}" if not _na(call.rule) else "refused by the door"
        return Preview("refused", obj or "", text=f"{rule}: the agent was refused this object, so nothing is opened")
    resp = getattr(call, "response_digest", None)
    resp = None if _na(resp) else str(resp)
    if obj is None and (evidence is None or resp is None or not evidence.has(resp)):  # (a kept answer still shows)
        return Preview("missing", "", text="the call reached no object")
    lw = later.after(obj, getattr(call, "ts", None)) if later is not None else None
    return kept_or_now(data_root, obj, tool=call.tool, logged_bytes=getattr(call, "bytes", None), later_write=lw,
                       door_session=getattr(call, "door_session", None), evidence=evidence,
                       response_digest=resp, evidence_where=evidence_where,
                       object_digest=getattr(call, "object_digest", None))


def evidence_store(incident) -> tuple[Any, str | None, str | None]:
    """The store of the responses the door kept for ``incident``'s calls: the evidence store of
    the capsule its manifest names (``capsule.path``).  ``(store, where, problem)``: ``store``
    an :class:`~replaybook.capsule.store.EvidenceStore` or ``None``; ``where`` how the pane
    names it; ``problem`` why a named capsule gave none (it is said in the session header)."""
    spec = incident.manifest.get("capsule") if hasattr(incident, "manifest") else None
    if not spec or not spec.get("path"):
        return None, None, None
    from ..capsule.model import load_capsule

    try:
        cap = load_capsule(incident.root / spec["path"])
        return cap.store(), "the capsule's evidence store", None
    except Exception as exc:  # noqa: BLE001 - a damaged capsule: the files are still shown, as they are now
        return None, None, f"the capsule {spec['path']} could not be read ({type(exc).__name__}: {exc})"


def session_caveats(join, door_session: str, window_s: float | None = None,
                    calls: pd.DataFrame | None = None) -> list[str]:
    """What the session header says about the session's link to its transcript (plain text):
    that it continues another door session's conversation (``sessions.continues``) — with the
    incident's ``calls``, whether through the same door or a second one (another door agent or
    MCP server: :func:`replaybook.report.sections.other_doors`) —, then the report's confidence
    sentence (:func:`replaybook.report.sections.confidence_sentence`)."""
    from ..report.sections import confidence_sentence, other_doors, resumed_from

    s = join.sessions
    row = s[s["door_session"].astype("string") == str(door_session)]
    if not len(row):
        return []
    r = row.iloc[0].to_dict()
    out = []
    cont = r.get("continues")
    other = other_doors(row, calls).get(str(door_session)) if calls is not None and not _na(cont) else None
    resumed = resumed_from(s).get(str(door_session)) if not _na(cont) else None
    if resumed is not None:  # its transcript resumes the continued session's
        r["resumes_transcript"] = resumed
        if other is not None:
            r["other_door"] = other
        out.append(f"Continues door session {cont}: the same conversation, resumed in a new file — transcript "
                   f"{r.get('transcript_id')} resumes transcript {resumed}, door session {cont}'s"
                   + (f"; through a second door: its calls are {other}." if other is not None else "."))
    elif other is not None:
        r["other_door"] = other
        out.append(f"Continues door session {cont}'s conversation (transcript {r.get('transcript_id')}) through a "
                   f"second door: its calls are {other}.")
    elif not _na(cont):
        out.append(f"Continues door session {cont}: the same conversation (transcript {r.get('transcript_id')}), "
                   "its calls logged in a new door session.")
    out.append(confidence_sentence(r, window_s))
    return out


def session_header_html(join, door_session: str, caveats: list[str] | None = None,
                        evidence_problem: str | None = None) -> str:
    """A session's header (HTML), as its tab and the static workbook show it: the door session,
    its agent, times, calls and refusals, the transcript the join matched, then ``caveats``
    (:func:`session_caveats`: what continues what, the confidence sentence) and, with
    ``evidence_problem`` (:func:`evidence_store`), that previews show the files as they are now."""
    r = sessions_list(join)
    r = r[r["door_session"] == door_session].iloc[0]
    tid = transcript_of(join, door_session)
    who = (f"transcript <code>{_esc(tid)}</code> — {html.escape(str(r['status']))}, "
           f"{int(r['agreed'])} of {int(r['calls'])} call{'' if int(r['calls']) == 1 else 's'} agree"
           + ("" if _na(r["offset_ms"]) else f", door clock {float(r['offset_ms']):+,.0f} ms")
           if tid else "no matched transcript")
    notes = [*(caveats or [])] + ([f"Previews show the files as they are now: {evidence_problem}."]
                                  if evidence_problem else [])
    said = "".join(f'<div class="rb-session-caveat" style="font-size:12px;color:#555">{_esc(n)}</div>'
                   for n in notes)
    return (f'<div class="rb-session-header"><b>Door session <code>{_esc(door_session)}</code></b> · '
            f"agent {_esc(r['agent'])} · {_hms(r['start'])}–{_hms(r['end'])} UTC · "
            f"{int(r['calls'])} call{'' if int(r['calls']) == 1 else 's'}, {int(r['refused'])} refused · {who}"
            f"{said}</div>")


def without_tool_only_requests(conv: pd.DataFrame) -> pd.DataFrame:
    """``conv`` (:func:`conversation`) without the model requests that have no text: they only
    called tools, and their calls are the rows that follow (the report hides them too)."""
    return conv[~((conv["lane"] == "model") & conv["text"].fillna("").eq(""))]


# --------------------------------------------------------------------------------------------
# spans


def span_from_selection(value: Any) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """Turn an interval selection's value (``{"t": [start, end]}``) into a UTC span.

    Accepts epoch milliseconds, ISO strings or Timestamps; ``None``/empty gives ``None``.
    """
    if not value:
        return None
    if isinstance(value, dict):
        vals = next((v for v in value.values() if isinstance(v, (list, tuple)) and len(v) == 2), None)
    else:
        vals = value if isinstance(value, (list, tuple)) and len(value) == 2 else None
    if vals is None:
        return None

    def ts(v):
        if isinstance(v, (int, float)):
            return pd.Timestamp(v, unit="ms", tz="UTC")
        t = pd.Timestamp(v)
        return t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")

    a, b = ts(vals[0]), ts(vals[1])
    return (a, b) if a <= b else (b, a)


def in_span(df: pd.DataFrame, span: tuple[pd.Timestamp, pd.Timestamp] | None, col: str = "ts") -> pd.DataFrame:
    """Rows of ``df`` whose ``col`` lies in ``span`` (inclusive); all rows when ``span`` is None."""
    if span is None or df is None or len(df) == 0:
        return df
    t = pd.to_datetime(df[col], utc=True)
    return df[(t >= span[0]) & (t <= span[1])]


def sessions_in_span(sessions: pd.DataFrame, span) -> pd.DataFrame:
    """Sessions (from :func:`sessions_list`) that overlap ``span``."""
    if span is None:
        return sessions
    return sessions[(sessions["end"] >= span[0]) & (sessions["start"] <= span[1])]


# --------------------------------------------------------------------------------------------
# charts


def conversation_chart(conv: pd.DataFrame, *, width: int = 900, max_rows: int = 400) -> alt.LayerChart:
    """The conversation as a sequence chart: one row per event, top to bottom.

    Lanes (x): user, model, tool call, door.  A tool call the door decided is drawn in the
    tool-call lane joined to the door lane (green when allowed, red cross when refused; so is a
    tool result whose call's own line is missing, where its id names a door call, and brown
    where none does); a tool call the door never saw is a hollow grey circle with no door mark; a door call no
    step claims is an orange square in the door lane only.  The label on each row says what
    the door call reached (object, decision, rule, rows, bytes).  Clicking a door mark selects
    it (point selection ``pick`` over ``call_seq`` and ``call_row``).
    """
    if conv is None or len(conv) == 0:
        return alt.Chart(alt.Data(values=[{"msg": "no conversation events in the selected span"}])).mark_text(
            size=13, color="#555555").encode(text="msg:N").properties(width=width, height=30)
    n_all = len(conv)
    d = conv.head(max_rows).copy()
    x_of = {lane: i for i, lane in enumerate(_CONV_LANES)}
    recs = []
    for r in d.itertuples(index=False):
        base = {"order": int(r.order), "when": _hms(r.ts), "status": r.status, "label": visible(r.label),
                "call_seq": None if _na(r.call_seq) else int(r.call_seq),
                "call_row": None if _na(getattr(r, "call_row", None)) else int(r.call_row),
                "object": None if _na(r.object) else visible(r.object), "decision": r.decision, "rule": r.rule,
                "rows": None if _na(r.rows) else int(r.rows), "bytes": None if _na(r.bytes) else int(r.bytes),
                "result": None if _na(getattr(r, "result", None)) else visible(r.result)}
        base["ink"] = {"refused": "#d62728", "door never saw": "#b35900", "unclaimed": "#b35900",
                       "call line missing": "#b35900"}.get(r.status, "#222222")
        recs.append({**base, "mark": "event", "x": x_of[r.lane]})
        if r.lane == "tool call" and r.status in ("reached", "refused", "asked"):
            recs.append({**base, "mark": "door", "x": x_of["door"]})
    data = pd.DataFrame(recs)
    status_colors = {"prompt": "#9467bd", "request": "#7f7f7f", "reached": "#2ca02c", "refused": "#d62728",
                     "asked": "#e6a100", "door never saw": "#aaaaaa", "not through the door": "#1f77b4", "unclaimed": "#ff7f0e",
                     "call line missing": "#8c564b"}
    color = alt.Color("status:N", title="what happened",
                      scale=alt.Scale(domain=list(status_colors), range=list(status_colors.values())))
    y = alt.Y("order:O", axis=None)
    x = alt.X("x:Q", scale=alt.Scale(domain=[-1.6, 12]),
              axis=alt.Axis(values=list(range(len(_CONV_LANES))), orient="top", title=None, grid=True,
                            labelExpr="['user','model','tool call','door'][datum.value]", labelFontWeight="bold"))
    tips = [("when", "time (UTC)"), ("label", "event"), ("call_seq", "door call", "d"), ("object", "object"),
            ("decision", "decision"), ("rule", "rule"), ("rows", "rows", ","), ("bytes", "bytes", ","),
            ("result", "agent got back")]
    base = alt.Chart(data)
    # the pick carries the call's row too: its number alone can name two calls of a damaged log
    pick = alt.selection_point(name="pick", fields=["call_seq", "call_row"], on="click", empty=False)
    links = base.transform_filter(alt.datum.mark == "door").mark_rule(strokeWidth=1.5).encode(
        x=x, x2=alt.datum(x_of["tool call"]), y=y, color=color)
    events = _tips(base.transform_filter(
        "datum.mark == 'event' && datum.status != 'door never saw' && datum.status != 'unclaimed'"
    ).mark_point(filled=True, size=90).encode(x=x, y=y, color=color), *tips)
    never = _tips(base.transform_filter("datum.status == 'door never saw'").mark_point(
        filled=False, size=110, strokeWidth=2).encode(x=x, y=y, color=color), *tips)
    door_ok = _tips(base.transform_filter(
        "(datum.mark == 'door' && datum.status == 'reached') || datum.status == 'unclaimed'"
    ).mark_point(filled=True, size=110, shape="square").encode(
        x=x, y=y, color=color,
        strokeWidth=alt.condition(pick, alt.value(3), alt.value(0)), stroke=alt.value("black")).add_params(pick), *tips)
    door_no = _tips(base.transform_filter("datum.mark == 'door' && datum.status == 'refused'").mark_point(
        shape="cross", filled=True, size=180).encode(x=x, y=y, color=color), *tips)
    text = _tips(base.transform_filter("datum.mark == 'event'").mark_text(align="left", dx=4, limit=width * 0.62).encode(
        x=alt.datum(3.35), y=y, text="label:N", color=alt.Color("ink:N", scale=None)), *tips)
    times = base.transform_filter("datum.mark == 'event'").mark_text(align="right", color="#666666").encode(
        x=alt.datum(-0.35), y=y, text="when:N")
    title = "What the agent did and what each door call reached"
    sub = [f"{n_all - max_rows:,} later events not drawn"] if n_all > max_rows else []
    return alt.layer(links, events, never, door_ok, door_no, text, times).properties(
        width=width, height=alt.Step(24),
        title=alt.TitleParams(title, anchor="start", **({"subtitle": sub} if sub else {})))


def timeline_with_brush(steps: pd.DataFrame, calls: pd.DataFrame, pairs: pd.DataFrame | None = None, *,
                        width: int = 760) -> alt.VConcatChart:
    """The spine's :func:`~replaybook.views.charts.timeline` above a brush strip.

    The strip draws every door call (coloured by decision) and transcript event on one
    time axis and carries an interval selection :data:`SPAN_PARAM` over x: drag across it to
    select a span (read it in Python with ``JupyterChart.selections.span``).  Above
    :data:`~replaybook.views.charts.MAX_MARKS` events the strip keeps, per kind, the first and
    last event of each small slice of the time axis (the whole span stays selectable).
    """
    from .charts import timeline

    top = timeline(steps, calls, pairs, width=width)
    parts = []
    if calls is not None and len(calls):
        c = calls[calls["ts"].notna()]
        parts.append(pd.DataFrame({"t": c["ts"], "what": "door " + c["decision"].fillna("?").astype(str),
                                   "who": c["door_session"].astype(str)}))
    if steps is not None and len(steps):  # the same events the timeline draws, so the two x extents agree
        s = steps[steps["kind"].isin(list(_LANE_OF_KIND)) & steps["ts"].notna()]
        parts.append(pd.DataFrame({"t": s["ts"], "what": "transcript", "who": s["transcript_id"].astype(str)}))
    ev = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame({"t": [], "what": [], "who": []})
    ev = ev[ev["t"].notna()]
    ev = _thin_ticks(ev)
    ev["t"] = pd.to_datetime(ev["t"], utc=True).dt.strftime("%Y-%m-%dT%H:%M:%S.%f").str[:-3] + "Z"
    brush = alt.selection_interval(name=SPAN_PARAM, encodings=["x"])
    strip = alt.Chart(ev).mark_tick(thickness=2, size=16).encode(
        x=alt.X("t:T", title="drag here to select a span (filters the sessions and tables below)",
                scale=alt.Scale(type="utc", padding=10), axis=alt.Axis(format="%H:%M:%S")),
        y=alt.Y("what:N", title=None),
        color=alt.Color("what:N", legend=None,
                        scale=alt.Scale(domain=["door allow", "door ask", "door deny", "transcript"],
                                        range=["#2ca02c", "#ff7f0e", "#d62728", "#1f77b4"])),
        tooltip=[alt.Tooltip("what:N"), alt.Tooltip("who:N")],
    ).add_params(brush).properties(width=width, height=alt.Step(14))
    return alt.vconcat(top, strip).resolve_scale(color="independent", shape="independent")


def _thin_ticks(ev: pd.DataFrame) -> pd.DataFrame:
    """At most :data:`~replaybook.views.charts.MAX_MARKS` strip ticks: above that, per ``what``,
    the first and last event of each slice of the time axis (Altair refuses more rows, and more
    ticks than pixels draw nothing more)."""
    from .charts import MAX_MARKS

    if len(ev) <= MAX_MARKS:
        return ev
    t = pd.to_datetime(ev["t"], utc=True)
    slices = max(MAX_MARKS // (2 * max(ev["what"].nunique(), 1)) - 1, 1)
    width = max((t.max() - t.min()) / slices, pd.Timedelta(microseconds=1))
    ev = ev.assign(_s=((t - t.min()) // width).to_numpy(), _t=t).sort_values("_t", kind="stable")
    keep = ~ev.duplicated(["what", "_s"], keep="first") | ~ev.duplicated(["what", "_s"], keep="last")
    return ev[keep].drop(columns=["_s", "_t"])


# --------------------------------------------------------------------------------------------
# HTML for the Replay panel and the preview pane


def step_mark(step: ReplayStep) -> str:
    """The panel's mark for a step: ``▶`` current, ``✓`` done, ``✗`` refused, ``?`` asked (the
    log does not say what the user answered), ``–`` skipped for another reason, ``·`` pending."""
    if step.state == "current":
        return "▶"
    if step.asked and step.state in ("skipped", "done"):
        return "?"
    if step.refused and step.state in ("skipped", "done"):
        return "✗"
    return {"done": "✓", "skipped": "–"}.get(step.state, "·")


def _step_label(step: ReplayStep) -> str:
    what = step.object or "(no object)"
    verb = "writes " if step.opens == "writes" or (step.opens == "nothing" and writes(step.tool)) else ""
    return f"#{step.call_seq} {step.tool} {verb}{what}"


#: Rows the Replay panel shows before the current step, and after it.  A step re-sends only
#: this window (at most ``PANEL_BEFORE + 1 + PANEL_AFTER`` rows), whatever the plan's length.
PANEL_BEFORE = 3
PANEL_AFTER = 12

#: Cells of the Replay overview bar (:func:`overview_html`): each stands for a slice of the plan.
OVERVIEW_CELLS = 100


def panel_window(plan: ReplayPlan, *, before: int = PANEL_BEFORE, after: int = PANEL_AFTER) -> tuple[int, int]:
    """The steps the panel lists: ``(lo, hi)``, step indexes ``lo ≤ i < hi``.

    ``before`` steps before the current one and ``after`` after it; near either end of the plan
    the window slides so it still holds ``min(n, before + 1 + after)`` steps.  Before playback it
    starts at the first step; once finished it ends at the last.
    """
    n = len(plan.steps)
    size = max(int(before), 0) + 1 + max(int(after), 0)
    centre = max(0, min(plan.position, n - 1))
    lo = max(0, centre - max(int(before), 0))
    hi = min(n, lo + size)
    return max(0, hi - size), hi


def _step_li(s: ReplayStep) -> str:
    mark = step_mark(s)
    denied = s.refused and not s.asked  # (an ask's outcome is not logged: not shown as refused)
    cls = f"rb-step rb-step-{s.state}" + (" rb-step-asked" if s.asked else " rb-step-refused" if denied else "")
    label = _esc(_step_label(s))
    if denied:
        label = f"<s>{label}</s>"
    if s.state == "current":
        label = f"<b>{label}</b>"
    note = f' <span class="rb-step-note">— {_esc(s.note)}</span>' if s.note else ""
    style = "color:#d62728;" if denied else ("color:#b35900;" if s.changed or s.asked else "")
    return (f'<li class="{cls}" data-index="{s.index}" data-state="{s.state}" data-mark="{mark}" '
            f'data-seq="{s.call_seq}" style="list-style:none;{style}">'
            f'<span class="rb-step-mark" style="display:inline-block;width:1.4em">{mark}</span>{label}{note}</li>')


def _steps_word(k: int) -> str:
    return f"{k:,} step" + ("" if k == 1 else "s")


def panel_html(plan: ReplayPlan, status: str | None = None, *, before: int = PANEL_BEFORE,
               after: int = PANEL_AFTER) -> str:
    """The Replay panel: where playback is in the whole plan, and the steps around it.

    The head says ``step i of n``, how many are done, how many of those the door refused and
    how many of the whole plan it refused (``0 done · 0 refused so far (1 in all)``); then the window of :func:`panel_window` (at most ``before + 1 + after`` steps, one
    ``<li>`` each, ticked off as playback goes) between one line counting the earlier steps
    and one counting the later ones (each with how many of them were refused).  Its size
    depends on the window and the labels in it, not on the plan's length: the widget sends it
    again at every step (:func:`overview_html` draws the whole plan once per Replay).

    Markup for tests: the head ``<div class="rb-replay-head">`` carries ``data-status``,
    ``data-position`` (current index, -1 before the first), ``data-total``, ``data-done``,
    ``data-refused-done`` (refused among the done steps) and ``data-refused`` (whole plan); each ``<li>`` ``class="rb-step rb-step-<state>"`` (and
    ``rb-step-refused``), ``data-index``, ``data-state``, ``data-mark`` and ``data-seq``, a
    refused step crossed out (``<s>``); ``<div class="rb-steps-before">`` /
    ``rb-steps-after`` (only when steps lie outside the window) ``data-count`` and
    ``data-refused``.
    """
    n = len(plan.steps)
    lo, hi = panel_window(plan, before=before, after=after)
    st = html.escape(status or plan.status)
    done, refused = plan.done, plan.refused
    refused_done = plan.refused_before(done)
    if plan.position < 0 or n == 0:
        where = _steps_word(n)
    elif plan.position >= n:
        where = f"all {_steps_word(n)}"
    else:
        where = f"step {plan.position + 1:,} of {n:,}"
    head = (f'<div class="rb-replay-head" data-status="{st}" data-position="{plan.position}" data-total="{n}" '
            f'data-done="{done}" data-refused-done="{refused_done}" data-refused="{refused}"><b>Replay</b> — {st} · '
            f"{where} · {done:,} done · "
            + (f'<span style="color:#d62728">{refused_done:,} refused</span>' if refused_done else "0 refused")
            + (f" so far ({refused:,} in all)" if refused else "")
            + f" · {plan.step_ms} ms/step</div>")

    def beyond(cls: str, arrow: str, k: int, r: int, side: str) -> str:
        if k <= 0:
            return ""
        red = f", {r:,} of them refused" if r else ""
        return (f'<div class="{cls}" data-count="{k}" data-refused="{r}" style="color:#777">'
                f"{arrow} {_steps_word(k)} {side}{red}</div>")

    items = "".join(_step_li(s) for s in plan.steps[lo:hi])
    return (f'<div class="rb-replay-panel-inner" data-status="{st}">{head}'
            + beyond("rb-steps-before", "↑", lo, plan.refused_before(lo), "before these")
            + f'<ol class="rb-steps" start="{lo + 1}" style="padding-left:0;margin:4px 0">{items}</ol>'
            + beyond("rb-steps-after", "↓", n - hi, refused - plan.refused_before(hi), "after these")
            + "</div>")


def overview_html(plan: ReplayPlan, *, cells: int = OVERVIEW_CELLS) -> str:
    """The whole plan as one bar of at most ``cells`` cells, each a slice of consecutive steps;
    a red cell holds a step the door refused (its tooltip: ``steps a–b: r refused``).

    It depends only on the plan's steps, not on where playback is, so the widget (which sends
    a value only when it changes) sends it once per Replay; a progress bar under it shows how
    far playback has got.  Markup: ``<div class="rb-overview" data-total>`` holding one
    ``<span class="rb-ov">`` per cell (``rb-ov-refused`` too when it holds a refused step) with
    ``data-from``/``data-to`` (1-based step numbers, inclusive) and ``data-refused``.
    """
    n = len(plan.steps)
    k = min(n, max(int(cells), 1))
    out = []
    for j in range(k):
        a, b = j * n // k, (j + 1) * n // k
        r = plan.refused_before(b) - plan.refused_before(a)
        span = f"step {a + 1:,}" if b - a == 1 else f"steps {a + 1:,}–{b:,}"
        out.append(f'<span class="rb-ov{" rb-ov-refused" if r else ""}" data-from="{a + 1}" data-to="{b}" '
                   f'data-refused="{r}" title="{span}: {r:,} refused"></span>')
    tip = f"the whole plan, {_steps_word(n)}: red where the door refused a step"
    return f'<div class="rb-overview" data-total="{n}" title="{tip}">{"".join(out)}</div>'


def frame_html(df: pd.DataFrame, max_rows: int = 20) -> str:
    """A small escaped HTML table (text cells and column names :func:`visible`)."""
    d = df.head(max_rows)
    d = d.rename(columns=lambda c: visible(c) if isinstance(c, str) else c)
    d = d.apply(lambda col: col.map(lambda v: visible(v) if isinstance(v, str) else v)
                if col.dtype == object or pd.api.types.is_string_dtype(col) else col)
    return d.to_html(index=False, escape=True, na_rep="", border=0, classes="rb-table")


#: Rows of a table (entries of a folder) the preview pane shows.
PANE_ROWS = 20


def _rows_note(pv: Preview) -> str:
    """The line under a table or folder the pane shows in part: ``the first 20 of 32 rows``
    (``rb-preview-rows``, ``data-shown``, ``data-total`` — empty when the file's count is not
    known); ``""`` when it shows them all."""
    shown = min(len(pv.table), PANE_ROWS)
    if pv.kind == "folder":
        total, what = len(pv.table), "entries"
    else:
        total, what = pv.rows, "rows"
        if total is None and len(pv.table) < PANE_ROWS:
            total = len(pv.table)  # (the preview read fewer than it asked for: that is all of them)
    if total is not None and total <= shown:
        return ""
    said = (f"the first {shown:,} {what}; how many the file holds is not known" if total is None
            else f"the first {shown:,} of {int(total):,} {what}")
    return (f'<div class="rb-preview-rows" data-shown="{shown}" data-total="{"" if total is None else int(total)}" '
            f'style="color:#555;font-style:italic">Showing {said}.</div>')


def preview_html(pv: Preview | None, *, step: ReplayStep | None = None) -> str:
    """The preview pane for an object (or a Replay step that opens nothing).

    The outer ``<div class="rb-preview" data-kind=… data-path=…>`` tells what is shown:
    ``folder``/``table``/``text``/``binary``/``missing``/``outside`` from
    :func:`~replaybook.replay.preview`, ``refused`` for an object the door refused (never
    opened), ``asked`` for one whose rule asked the user (the log does not say what they
    answered: never opened, not said to be refused), ``nothing`` for a Replay step that opens nothing, ``changed`` for a step whose
    object changed since the run.  ``data-source`` is ``disk`` (the file as it is now) or
    ``evidence`` (the response the door kept for the call); the preview's caveat
    (:attr:`~replaybook.replay.Preview.caveat`) is the ``<div class="rb-preview-caveat">`` under
    the head.  A Replay step of a tool that writes says so in the head (``writes``).  A table
    or folder shown in part (its first :data:`PANE_ROWS` rows or entries) says so under it
    (:func:`_rows_note`: ``Showing the first 20 of 32 rows.``); so does a text shown in part
    (its first lines: ``Showing the first 40 lines: there is more.``).
    """
    if pv is None and step is not None:
        kind = "asked" if step.asked else "refused" if step.refused else ("changed" if step.changed else "nothing")
        path = step.object or ""
        if step.asked:  # (the log does not say what the user answered: not said to be refused)
            body = (f'<div style="color:#b35900">{_esc(path)} — {_esc(step.note)}, so nothing is opened.</div>')
        elif step.refused:
            body = (f'<div style="color:#d62728"><s>{_esc(path)}</s> — {_esc(step.note or "refused")}. '
                    "The agent was refused it, so there is nothing to open.</div>")
        elif step.changed:
            body = (f"<div>{_esc(path)} — changed since the run: the file on disk now differs from "
                    "what the agent read, so it is not shown as if it were.</div>")
        else:
            body = f"<div>{_esc(path)} — {_esc(step.note or 'nothing to open')}.</div>"
        head = f"Step #{step.call_seq} {_esc(step.tool)}: {'writes, ' if writes(step.tool) else ''}opens nothing"
        return (f'<div class="rb-preview rb-preview-nothing" data-kind="{kind}" data-path="{html.escape(path)}" '
                f'data-seq="{step.call_seq}"><div class="rb-preview-head"><b>{head}</b></div>{body}</div>')
    if pv is None:
        return ('<div class="rb-preview rb-preview-empty" data-kind="empty" data-path="">'
                "<i>Click an object in the door's table (or press Replay) to open it here.</i></div>")
    seq = f' data-seq="{step.call_seq}"' if step is not None else ""
    head = _esc(pv.path or "")
    if step is not None:
        head = f"Step #{step.call_seq} {_esc(step.tool)} {'writes' if step.opens == 'writes' else 'opened'} {head}"
    src = getattr(pv, "source", "disk")
    caveat = (f'<div class="rb-preview-caveat" data-source="{html.escape(src)}" style="color:#b35900">'
              f"{_esc(pv.caveat)}</div>" if getattr(pv, "caveat", None) else "")
    size = f" · {pv.size:,} bytes" if pv.size is not None else ""
    red = f" · redacted: {html.escape(', '.join(pv.redactions))}" if pv.redactions else ""
    if pv.kind == "refused":
        body = f'<div style="color:#d62728"><s>{head}</s> — {_esc(pv.text or "refused")}</div>'
    elif pv.kind == "asked":
        body = f'<div style="color:#b35900">{head} — {_esc(pv.text or "asked")}</div>'
    elif pv.kind in ("folder", "table") and pv.table is not None:
        body = frame_html(pv.table, PANE_ROWS) + _rows_note(pv)
    elif pv.kind == "text":
        body = f'<pre style="max-height:18em;overflow:auto;margin:0">{_esc(pv.text or "")}</pre>'
        if getattr(pv, "cut", False):
            n = len((pv.text or "").splitlines())
            body += (f'<div class="rb-preview-rows" data-shown="{n}" data-total="" style="color:#555;'
                     f'font-style:italic">Showing the first {n:,} line{"" if n == 1 else "s"}: there is more.</div>')
    else:
        body = f"<div>{_esc(pv.text or pv.kind)}</div>"
    label = {"folder": "folder", "table": "data file", "text": "text file", "binary": "file",
             "missing": "not available", "outside": "outside the data root", "refused": "refused",
             "asked": "asked the user"}.get(pv.kind, pv.kind)
    if src == "evidence":
        label, size = "the response the door kept", f" · {pv.size:,} bytes" if pv.size is not None else ""
    return (f'<div class="rb-preview rb-preview-{html.escape(pv.kind)}" data-kind="{html.escape(pv.kind)}" '
            f'data-path="{html.escape(pv.path or "")}" data-source="{html.escape(src)}"{seq}>'
            f'<div class="rb-preview-head"><b>{head}</b> ({label}{size}{red})</div>{caveat}{body}</div>')


# --------------------------------------------------------------------------------------------
# notebook, batch mode


def storage_html(incident) -> str | None:
    """The incident's cloud storage access as the review report shows it (its "Cloud access"
    section: requests no door call explains, who made them, what each door call reached in
    storage), or ``None`` when the manifest names no ``access:`` logs.  Shown by the workbook
    (a panel) and by :func:`display_static`."""
    if not getattr(incident, "has_access", False):
        return None
    from ..report import sections as RS

    return RS.access_section(incident.access_join, incident.access, quarantine=incident.quarantine,
                             inputs=incident.inputs)


def display_static(incident, *, chart: bool = True) -> None:
    """Show the workbook's content without widgets (papermill, ``interactive=False``).

    The sessions list, the timeline (drawn as SVG by vl-convert, no network; with the incident's
    cloud storage requests in a lane of their own when it has ``access:`` logs), the storage
    access (:func:`storage_html`), then for each door session: the header its tab shows
    (:func:`session_header_html`), its conversation (or a note), the door's table and the Replay
    plan (without its playback ``state``, which only the live Replay moves).
    """
    from IPython.display import HTML, Markdown, display

    j = incident.join
    # headings as escaped HTML: a title or a session id (an ``Mcp-Session-Id`` the client chose)
    # written into Markdown had passed its tags through
    display(HTML(f"<h2>Sessions — {html.escape(str(incident.title))}</h2>"))
    _display_whole(sessions_list(j))
    storage = storage_html(incident)
    if chart:
        try:
            from .charts import timeline

            aj = incident.access_join if storage is not None else None
            access = incident.access if aj is not None else None
            if access is not None and len(aj.duplicates):  # (each request drawn once, as in the report)
                access = access.drop(index=[i for i in aj.duplicates["access_index"] if i in access.index])
            svg = timeline(incident.steps, incident.calls, j.pairs, access,
                           access_links=aj.links if aj is not None else None).to_json()
            import vl_convert as vlc

            display(HTML(vlc.vegalite_to_svg(svg)))
        except Exception as exc:  # a missing renderer must not stop a batch run
            display(Markdown(f"_timeline not drawn: {html.escape(str(exc))}_"))
    if storage is not None:
        display(HTML(storage))
    for ds in sessions_list(j)["door_session"]:
        display(HTML(f"<h3>Door session <code>{html.escape(str(ds))}</code></h3>"))
        # the header the session's tab shows: what continues what, the confidence sentence
        display(HTML(session_header_html(j, ds, session_caveats(j, ds, getattr(incident, "window_s", None),
                                                                calls=incident.calls))))
        conv = conversation(incident.steps, incident.calls, j, ds)
        if conv is None:
            display(Markdown("_No transcript matched this session: the conversation would be here. "
                             "The door's table below is all there is._"))
        else:
            # what the agent got back beside each call, whole labels, blanks for what is not there
            cols = [c for c in ("order", "ts", "lane", "tool", "status", "label", "result") if c in conv.columns]
            _display_whole(without_tool_only_requests(conv)[cols])
        _display_whole(door_table(incident.calls, j, ds))
        plan = ReplayPlan.from_calls(incident.calls, incident.data_root, door_session=str(ds))
        _display_whole(plan.to_frame().drop(columns=["state"], errors="ignore"))


#: Rows of a table the static workbook shows (as the live door table does); a note counts the rest.
STATIC_MAX_ROWS = 500


def _display_whole(df: pd.DataFrame, width: int = 400, max_rows: int = STATIC_MAX_ROWS) -> None:
    """Display ``df`` in a batch run with cells up to ``width`` characters (pandas cuts them at
    50 by default: "model: Feature drift is 0.3% (user_age_bucket,...") and missing values blank
    (not ``NaN`` / ``None``): its first ``max_rows`` rows, every one of them (pandas shows only
    the first and last 5 of a table over 60 rows: a refused call in between was in no batch
    run's output, while the live table lists it), then a line counting the rows not shown."""
    from IPython.display import HTML, display

    shown = df.head(max_rows).astype(object).where(df.head(max_rows).notna(), "")
    with pd.option_context("display.max_colwidth", width, "display.max_rows", None):
        display(shown)
    if len(df) > max_rows:
        display(HTML(f"<i>{len(df) - max_rows:,} more rows not shown (the first {max_rows:,} of "
                     f"{len(df):,} are)</i>"))
