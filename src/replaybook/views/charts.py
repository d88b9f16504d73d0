"""Altair charts over replaybook's canonical frames (static; no widgets here).

:func:`timeline` draws "what the agent saw, in the order it saw it": one facet row per door
session (with the transcript the join assigned to it), lanes for the transcript's user prompts,
model requests and tool calls, a lane for the door's calls (coloured by decision, refused calls
as red crosses), an optional lane for cloud storage access, and a line joining every agreeing
(transcript tool call, door call) pair.

Big inputs stay small: above ``max_marks`` events the ordinary events are counted per lane per
time bin in pandas and drawn as shaded bars, while refused calls (and the pair lines, when they
fit) stay individual.  The chart never needs ``alt.data_transformers.disable_max_rows()``.

:func:`chart_html` turns a chart into an HTML fragment that renders with no network access:
the Vega, Vega-Lite and vega-embed JavaScript (vl-convert's bundle) is inlined.

Nothing here imports ipywidgets.
"""

from __future__ import annotations

import html
import json
import math
import uuid
from functools import lru_cache
from typing import Any

import altair as alt
import pandas as pd

from .._text import SHOW_INVISIBLE

__all__ = ["timeline", "chart_html", "LANES", "CATEGORY_COLORS", "MAX_MARKS"]

#: Default ceiling on individually drawn events before the timeline aggregates.
MAX_MARKS = 5000
#: rows (facets) a timeline draws at most; see :func:`timeline`'s ``max_groups``
MAX_GROUPS = 40
#: the row the groups beyond ``max_groups`` are drawn in
MERGED_GROUP = "other door sessions and transcripts, drawn together"

#: Lane labels, top to bottom, within each facet row.
LANES = ("user prompt", "model request", "tool call", "door", "storage")

_KIND_LANE = {"user_prompt": "user prompt", "model_request": "model request", "tool_call": "tool call"}

#: Colour of each category (transcript lanes by kind, door calls by decision, storage access).
CATEGORY_COLORS = {
    "user prompt": "#9467bd",
    "model request": "#7f7f7f",
    "tool call": "#1f77b4",
    "allow": "#2ca02c",
    "ask": "#ff7f0e",
    "deny": "#d62728",
    "storage": "#8c564b",
    "no door call": "#e377c2",
}

#: Facet row holding access events no door call explains.
UNEXPLAINED_GROUP = "cloud storage access no door call explains"
#: Shape of door calls by decision (refused = ``deny`` = a cross).
DECISION_SHAPES = {"allow": "circle", "ask": "diamond", "deny": "cross"}
#: Shape of each category (one legend gives colour and shape); storage requests are squares.
CATEGORY_SHAPES = {**dict.fromkeys(("user prompt", "model request", "tool call"), "circle"), **DECISION_SHAPES,
                   "storage": "square", "no door call": "square"}

_ARGS_CHARS = 160  # tooltip text is truncated to this many characters
_TEXT_CHARS = 120
_TARGET_BINS = 150
_WHEN_FMT = "%Y-%m-%d %H:%M:%S.%LZ"
_NICE_BIN_S = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600,
               900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)


# --------------------------------------------------------------------------------------------
# helpers


def _iso(ts: pd.Series) -> pd.Series:
    """UTC timestamps as ``YYYY-MM-DDTHH:MM:SS.fffZ`` strings (Vega parses them as UTC)."""
    ts = pd.to_datetime(ts, utc=True)
    return ts.dt.strftime("%Y-%m-%dT%H:%M:%S.%f").str[:-3] + "Z"


def _short(v: Any, n: int) -> str | None:
    if v is None or (not isinstance(v, (str, dict, list)) and pd.isna(v)):
        return None
    s = str(v)
    return s if len(s) <= n else s[: n - 1] + "…"


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return df[name] if name in df.columns else pd.Series([pd.NA] * len(df), index=df.index, dtype="object")


def _assignment(pairs: pd.DataFrame | None) -> dict[str, str]:
    """transcript_id → door_session with the most agreeing pairs."""
    if pairs is None or len(pairs) == 0:
        return {}
    p = pairs[["transcript_id", "door_session"]].dropna()
    if p.empty:
        return {}
    counts = p.groupby(["transcript_id", "door_session"], observed=True).size().reset_index(name="n")
    counts = counts.sort_values(["transcript_id", "n"], ascending=[True, False])
    return {str(r.transcript_id): str(r.door_session) for r in counts.drop_duplicates("transcript_id").itertuples()}


def _merge_groups(events: pd.DataFrame, pr: pd.DataFrame, max_groups: int) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """``events`` and pair lines ``pr`` with every group past the first ``max_groups - 1``
    (:data:`UNEXPLAINED_GROUP`, then groups with a transcript, then with a refusal, then by
    first event) relabelled
    :data:`MERGED_GROUP`; and how many groups were merged."""
    first = events.groupby("group")["t"].min()
    refused = set(events.loc[events["layer"] == "refused", "group"])
    linked = {g for g in first.index if " ↔ transcript " in g or g.startswith("transcript ")}
    order = sorted(first.index, key=lambda g: (g != UNEXPLAINED_GROUP, g not in linked, g not in refused, first[g], g))
    keep = set(order[:max_groups - 1])
    merged = len(order) - len(keep)
    events = events.assign(group=events["group"].where(events["group"].isin(keep), MERGED_GROUP))
    if not pr.empty:
        pr = pr.assign(group=pr["group"].where(pr["group"].isin(keep), MERGED_GROUP))
    return events, pr, merged


def _group_labels(steps: pd.DataFrame, calls: pd.DataFrame, assign: dict[str, str],
                  pairs: pd.DataFrame | None = None) -> tuple[dict, dict]:
    """Facet labels: one per door session (naming its transcript), one per unassigned transcript.

    A transcript is drawn in the row of the session it has most pairs with (``assign``); a
    session it continues (``sessions.continues``: pairs with it too) names it as well."""
    by_session: dict[str, list[str]] = {}
    for tid, ds in assign.items():
        by_session.setdefault(ds, []).append(tid)
    if pairs is not None and len(pairs):
        for tid, ds in pairs[["transcript_id", "door_session"]].dropna().drop_duplicates().itertuples(index=False):
            if str(tid) in assign and str(tid) not in by_session.setdefault(str(ds), []):
                by_session[str(ds)].append(str(tid))
    session_label = {}
    for ds in pd.unique(calls["door_session"].dropna().astype(str)) if len(calls) else []:
        tids = by_session.get(ds)
        session_label[ds] = (f"door session {ds} ↔ transcript {', '.join(sorted(tids))}" if tids
                             else f"door session {ds} (no transcript)")
    for ds, tids in by_session.items():  # a session only in pairs (calls filtered out)
        session_label.setdefault(ds, f"door session {ds} ↔ transcript {', '.join(sorted(tids))}")
    transcript_label = {}
    tids_all = pd.unique(steps["transcript_id"].fillna("?").astype(str)) if len(steps) else []
    for tid in tids_all:
        transcript_label[tid] = session_label[assign[tid]] if tid in assign else f"transcript {tid} (no door session)"
    if len(steps) and {"agent_id", "client_session_id"} <= set(steps.columns):
        from ..join import sub_agent_parents

        # a sub-agent with no door call of its own is drawn in its parent's row
        for sub, parent in sub_agent_parents(steps).items():
            if sub not in assign and parent in transcript_label:
                transcript_label[sub] = transcript_label[parent]
    return session_label, transcript_label


def _step_records(steps: pd.DataFrame, transcript_label: dict) -> pd.DataFrame:
    s = steps[steps["kind"].isin(list(_KIND_LANE))]
    s = s[s["ts"].notna()]
    if s.empty:
        return pd.DataFrame()
    tool = _col(s, "tool").where(_col(s, "tool").notna(), _col(s, "tool_raw"))
    return pd.DataFrame(
        {
            "group": s["transcript_id"].fillna("?").astype(str).map(transcript_label),
            "lane": s["kind"].map(_KIND_LANE),
            "category": s["kind"].map(_KIND_LANE),
            "layer": "step",
            "t": s["ts"],
            "who": s["transcript_id"].fillna("?").astype(str),
            "seq": _col(s, "seq"),
            "tool": tool,
            "arguments": _col(s, "args_key").map(lambda v: _short(v, _ARGS_CHARS)),
            "call_id": _col(s, "call_id"),
            "text": _col(s, "text").map(lambda v: _short(v, _TEXT_CHARS)),
        }
    )


def _call_records(calls: pd.DataFrame, session_label: dict) -> pd.DataFrame:
    c = calls[calls["ts"].notna()]
    if c.empty:
        return pd.DataFrame()
    decision = c["decision"].fillna("?").astype(str)
    return pd.DataFrame(
        {
            "group": c["door_session"].fillna("?").astype(str).map(lambda d: session_label.get(d, f"door session {d}")),
            "lane": "door",
            "category": decision,
            "layer": decision.map(lambda d: "refused" if d == "deny" else "call"),
            "t": c["ts"],
            "who": c["door_session"].fillna("?").astype(str),
            "seq": _col(c, "seq"),
            "tool": _col(c, "tool"),
            "arguments": _col(c, "args_key").map(lambda v: _short(v, _ARGS_CHARS)),
            "object": _col(c, "object").map(lambda v: _short(v, _ARGS_CHARS)),
            "decision": decision,
            "rule": _col(c, "rule"),
            "rows": _col(c, "rows"),
            "bytes": _col(c, "bytes"),
        }
    )


def _access_records(access: pd.DataFrame | None, links: pd.DataFrame | None = None,
                    session_label: dict | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Access points (under their explaining call's session, or in the unexplained row) and the
    call → access link lines."""
    if access is None or len(access) == 0 or "ts" not in access.columns:
        return pd.DataFrame(), pd.DataFrame()
    a = access[access["ts"].notna()]
    if a.empty:
        return pd.DataFrame(), pd.DataFrame()
    session_label = session_label or {}
    group = pd.Series(UNEXPLAINED_GROUP, index=a.index, dtype="object")
    category = pd.Series("no door call", index=a.index, dtype="object")
    link_lines = pd.DataFrame()
    if links is not None and len(links):
        lk = links[links["access_index"].notna()]
        lk = lk[lk["access_index"].astype("int64").isin(a.index)]
        idx = lk["access_index"].astype("int64").to_numpy()
        labels = lk["door_session"].astype(str).map(lambda d: session_label.get(d, f"door session {d}"))
        group.loc[idx] = labels.to_numpy()
        category.loc[idx] = "storage"
        link_lines = pd.DataFrame({
            "group": labels.to_numpy(),
            "lane": "door", "lane2": "storage", "category": "link", "layer": "link",
            "t": lk["call_ts"].to_numpy(), "t2": lk["access_ts"].to_numpy(),
            "who": lk["door_session"].to_numpy(), "seq": lk["call_seq"].to_numpy(),
            "tool": lk["action"].to_numpy(), "object": lk["resource_uri"].to_numpy(),
            "delta_ms": lk["delta_ms"].to_numpy(), "how": lk["how"].to_numpy(),
        })
    outcome = _col(a, "outcome").fillna("?").astype(str)
    points = pd.DataFrame(
        {
            "group": group,
            "lane": "storage",
            "category": category,
            "layer": outcome.map(lambda o: "refused" if o == "denied" else "access"),
            "t": a["ts"],
            "who": _col(a, "principal"),
            "tool": _col(a, "action"),
            "object": _col(a, "resource_uri").map(lambda v: _short(v, _ARGS_CHARS)),
            "decision": outcome,
            "bytes": _col(a, "bytes"),
        }
    )
    return points, link_lines


def _pair_records(pairs: pd.DataFrame | None, session_label: dict) -> pd.DataFrame:
    if pairs is None or len(pairs) == 0:
        return pd.DataFrame()
    p = pairs[pairs["step_ts"].notna() & pairs["call_ts"].notna()]
    if p.empty:
        return pd.DataFrame()
    return pd.DataFrame(
        {
            "group": p["door_session"].fillna("?").astype(str).map(lambda d: session_label.get(d, f"door session {d}")),
            "lane": "tool call",
            "lane2": "door",
            "category": "pair",
            "layer": "pair",
            "t": p["step_ts"],
            "t2": p["call_ts"],
            "who": p["transcript_id"],
            "seq": _col(p, "call_seq"),
            "tool": _col(p, "tool"),
            "arguments": _col(p, "args_key").map(lambda v: _short(v, _ARGS_CHARS)),
            "call_id": _col(p, "call_id"),
            "delta_ms": _col(p, "delta_ms"),
            "how": _col(p, "how"),
        }
    )


def _bin_seconds(span_s: float) -> float:
    want = max(span_s, 0.001) / _TARGET_BINS
    for b in _NICE_BIN_S:
        if b >= want:
            return b
    return math.ceil(want / 86400) * 86400


#: Rows get a time axis each when the whole span is this many times the longest row's (and
#: over :data:`_APART_MIN_S`): sessions days or months apart on one axis are a dot each.
_APART_RATIO = 20
_APART_MIN_S = 3600.0


def _far_apart(ev: pd.DataFrame) -> bool:
    """The facet rows (``group``) of ``ev`` lie so far apart in time that one shared axis would
    draw each as a dot (see :data:`_APART_RATIO`)."""
    by = ev.groupby("group")["t"]
    if by.ngroups < 2:
        return False
    span = (ev["t"].max() - ev["t"].min()).total_seconds()
    longest = max((by.max() - by.min()).dt.total_seconds().max(), 1.0)
    return span > _APART_MIN_S and span > _APART_RATIO * longest


def _aggregate_each(ev: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """:func:`_aggregate` per facet row (each row has its own time axis): the bins, and the
    widest bin width used."""
    parts = [_aggregate(g) for _, g in ev.groupby("group", sort=False)]
    return pd.concat([p for p, _ in parts], ignore_index=True), max(w for _, w in parts)


def _aggregate(ev: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """Count events per (group, lane, category, time bin) → one ``bin`` record per non-empty bin."""
    t0 = ev["t"].min()
    span = (ev["t"].max() - t0).total_seconds()
    width = _bin_seconds(span)
    step = pd.Timedelta(seconds=width)
    idx = ((ev["t"] - t0) / step).astype("int64")
    g = ev.assign(_b=idx).groupby(["group", "lane", "category", "_b"], observed=True).size().reset_index(name="count")
    g["t"] = t0 + g["_b"] * step
    g["t2"] = g["t"] + step
    g["layer"] = "bin"
    return g.drop(columns="_b"), width


def _fmt_width(w: float) -> str:
    if w < 1:
        return f"{w * 1000:g} ms"
    if w < 60:
        return f"{w:g} s"
    if w < 3600:
        return f"{w / 60:g} min"
    if w < 86400:
        return f"{w / 3600:g} h"
    return f"{w / 86400:g} d"


_MISSING = "—"  # what a tooltip shows for a value the event does not have (as the tables do)


def _tips(chart: alt.Chart, *tips: tuple) -> alt.Chart:
    """``chart`` with a tooltip of ``tips`` — ``(field, title)`` or ``(field, title, number
    format)`` — each shown as text, and :data:`_MISSING` where the event has no value:
    Vega-Lite would show a missing field as "undefined" and a missing number as "NaN"."""
    calc, shown = {}, []
    for field, title, *fmt in tips:
        name = f"tip_{field}"
        value = f"format(datum['{field}'], '{fmt[0]}')" if fmt else f"datum['{field}'] + ''"
        calc[name] = f"isValid(datum['{field}']) && datum['{field}'] !== '' ? {value} : '{_MISSING}'"
        shown.append(alt.Tooltip(f"{name}:N", title=title))
    return chart.transform_calculate(**calc).encode(tooltip=shown)


def _records(df: pd.DataFrame) -> list[dict]:
    """Compact JSON-safe records: NA keys are dropped, timestamps become ISO strings."""
    if df.empty:
        return []
    df = df.copy()
    for c in ("t", "t2"):
        if c in df.columns:
            df[c] = _iso(df[c]).where(df[c].notna(), None)
    out = []
    cols = list(df.columns)
    for row in df.itertuples(index=False, name=None):
        rec = {}
        for k, v in zip(cols, row):
            if v is None or v is pd.NA or v is pd.NaT:
                continue
            if isinstance(v, float) and math.isnan(v):
                continue
            if hasattr(v, "item") and not isinstance(v, str):  # numpy scalars
                v = v.item()
            elif isinstance(v, str) and not v.isascii():  # a tooltip cannot disguise a name either
                v = v.translate(SHOW_INVISIBLE)
            rec[k] = v
        out.append(rec)
    return out


# --------------------------------------------------------------------------------------------
# public


def timeline(
    steps: pd.DataFrame,
    calls: pd.DataFrame,
    pairs: pd.DataFrame | None = None,
    access: pd.DataFrame | None = None,
    *,
    access_links: pd.DataFrame | None = None,
    max_marks: int = MAX_MARKS,
    width: int = 760,
    max_groups: int = MAX_GROUPS,
) -> alt.FacetChart | alt.Chart:
    """Transcript-vs-door timeline: what the agent did beside what the door decided.

    Args:
        steps: a ``STEPS`` frame.  Uses ``transcript_id``, ``kind`` (rows of kind
            ``user_prompt``, ``model_request`` and ``tool_call`` are drawn; others ignored),
            ``ts`` (UTC; rows with NaT are left out and counted in the subtitle), ``seq``,
            ``tool`` (or ``tool_raw``), ``args_key``, ``call_id``, ``text``.
        calls: a ``CALLS`` frame.  Uses ``door_session``, ``ts`` (UTC), ``seq``, ``tool``,
            ``args_key``, ``object``, ``decision`` (``deny`` = refused), ``rule``, ``rows``
            (count) and ``bytes`` (bytes returned to the agent).
        pairs: optional ``PAIRS`` frame.  Each row draws a line from (``step_ts``, tool-call
            lane) to (``call_ts``, door lane) in the row of ``door_session``; the transcript a
            session pairs with most is drawn in that session's facet row.
        access: optional cloud storage access frame (``ts`` UTC, ``action``, ``resource_uri``,
            ``outcome`` — ``denied`` is marked like a refusal —, ``principal``, ``bytes``),
            drawn in the "storage" lane of the session whose door call explains it (a line joins
            the call to it) or, when no call explains it, in the highlighted row
            :data:`UNEXPLAINED_GROUP`.
        access_links: optional ``ACCESS_LINKS`` frame from
            :func:`replaybook.access_join.join_access` (``access_index`` refers to ``access``'s
            row labels); without it every access row counts as unexplained.
        max_marks: above this many events (transcript + door + access rows drawn), ordinary
            events are counted per lane per time bin (bin width chosen for ~150 bins over the
            whole span) and drawn as bars whose opacity is the count; refused calls are always
            drawn individually, pair lines only when refused + pairs ≤ ``max_marks``.  The
            title then says "aggregated".
        width: plot width in pixels.
        max_groups: at most this many rows (door sessions and transcripts): above it, the
            storage row no door call explains, the groups with a transcript and those with a
            refused call or storage refusal come first, by their first event, and all groups past ``max_groups - 1`` are
            drawn together in one last row (:data:`MERGED_GROUP`); the subtitle says how many.

    Returns:
        An Altair chart: a facet (``row`` = session group) of a layer chart.  Layers, in order
        (bottom to top): ``bin`` rects (aggregated mode only), ``pair`` and ``link`` rules,
        ``step`` points, ``call`` points (door calls allowed/asked, shape by decision),
        ``access`` points, ``refused`` points (red crosses).  Layers with no data are omitted.  x is UTC time; y is the lane.
    """
    steps = steps if steps is not None else pd.DataFrame(columns=["transcript_id", "kind", "ts"])
    calls = calls if calls is not None else pd.DataFrame(columns=["door_session", "ts", "decision"])
    assign = _assignment(pairs)
    session_label, transcript_label = _group_labels(steps, calls, assign, pairs)

    st = _step_records(steps, transcript_label)
    ca = _call_records(calls, session_label)
    n_other = 0
    if access is not None and len(access) and "resource_uri" in access.columns:
        # the storage lane: requests on objects and buckets, what door calls reach; other
        # services' events (roles assumed, instances started …) are counted in the report's
        # cloud section, not drawn as storage
        from ..access_join import on_storage

        keep = [on_storage(u) for u in access["resource_uri"]]
        n_other = len(keep) - sum(keep)
        access = access[keep]
    ac, al = _access_records(access, access_links, session_label)
    pr = _pair_records(pairs, session_label)
    if not al.empty:
        pr = pd.concat([pr, al], ignore_index=True) if not pr.empty else al
    events = pd.concat([x for x in (st, ca, ac) if not x.empty], ignore_index=True) if any(
        not x.empty for x in (st, ca, ac)) else pd.DataFrame()

    n_merged = 0
    if not events.empty and events["group"].nunique() > max_groups:
        events, pr, n_merged = _merge_groups(events, pr, max_groups)

    n_steps_nat = int(steps["kind"].isin(list(_KIND_LANE)).sum() - len(st)) if len(steps) else 0
    n_calls_nat = int(len(calls) - len(ca)) if len(calls) else 0

    title = ("Transcript vs door: what the agent did and what the door decided" if len(calls)
             else "Transcripts: what the agent did (no door calls in this incident)")
    subtitle: list[str] = []
    if events.empty:
        return (
            alt.Chart(alt.Data(values=[{"msg": "no timestamped events to draw"}]))
            .mark_text(size=14)
            .encode(text="msg:N")
            .properties(title=title, width=width, height=40)
        )

    apart = _far_apart(events)
    if n_other:
        subtitle.append(f"{n_other:,} cloud events of other services (not storage) are not drawn: see the cloud section")
    # one time axis spanning more than a day shows dates too (a multi-year lane read 00:00:00 throughout)
    long_span = bool(len(events)) and (events["t"].max() - events["t"].min()) > pd.Timedelta(days=1)
    if apart:
        subtitle.append(f"each row has its own time axis: the sessions lie far apart "
                        f"({events['t'].min():%Y-%m-%d} to {events['t'].max():%Y-%m-%d})")
    aggregated = len(events) > max_marks
    bins = pd.DataFrame()
    if aggregated:
        refused = events[events["layer"] == "refused"]
        ordinary = events[events["layer"] != "refused"]
        if len(refused) > max_marks:  # keep the earliest refusals individually, count the rest
            refused = refused.sort_values("t")
            ordinary = pd.concat([ordinary, refused.iloc[max_marks:]], ignore_index=True)
            refused = refused.iloc[:max_marks]
            subtitle.append(f"{max_marks} earliest refused calls drawn individually, later ones counted")
        bins, bw = ((_aggregate_each if apart else _aggregate)(ordinary) if len(ordinary)
                    else (pd.DataFrame(), _bin_seconds(0)))
        kept_pairs = len(pr) if len(refused) + len(pr) <= max_marks else 0
        title += f" (aggregated: {len(events):,} events in {_fmt_width(bw)} bins)"
        subtitle.append(
            f"{len(ordinary):,} events counted per lane per {_fmt_width(bw)} bin (shade = count); "
            f"{len(refused):,} refused shown individually"
        )
        if len(pr) and not kept_pairs:
            subtitle.append(f"{len(pr):,} agreeing-pair lines omitted (more than {max_marks:,} marks)")
            pr = pd.DataFrame()
        events = refused
    if n_steps_nat or n_calls_nat:
        subtitle.append(f"not drawn (no timestamp): {n_steps_nat} transcript events, {n_calls_nat} door calls")
    if n_merged:
        subtitle.append(f"{n_merged:,} door sessions and transcripts are drawn together in the last row "
                        f"(a row each for {max_groups - 1}: those with a transcript, then a refused call, first)")

    data = pd.concat([x for x in (bins, events, pr) if not x.empty], ignore_index=True)
    values = _records(data)
    present = set(data["layer"])

    cats = set(data["category"].dropna()) - {"pair", "link"}
    known = [c for c in CATEGORY_COLORS if c in cats]
    extra = sorted(cats - set(CATEGORY_COLORS))  # decisions outside DECISIONS, e.g. "?"
    color_scale = alt.Scale(domain=known + extra,
                            range=[CATEGORY_COLORS[c] for c in known] + ["#bcbd22"] * len(extra))
    color = alt.Color("category:N", scale=color_scale, title="lane / decision")
    # the same field, scale domain and title as the colour: Vega-Lite draws one legend whose
    # symbols have both (a red cross for deny, squares for storage), not a second legend
    shape = alt.Shape("category:N", title="lane / decision",
                      scale=alt.Scale(domain=known + extra,
                                      range=[CATEGORY_SHAPES.get(c, "circle") for c in known + extra]))
    x = alt.X("t:T", title="time (UTC)", scale=alt.Scale(type="utc", padding=10),
              axis=alt.Axis(format="%Y-%m-%d %H:%M:%S" if apart or long_span else "%H:%M:%S", labelOverlap=True))
    y = alt.Y("lane:N", title=None, sort=list(LANES))

    def base(layer: str, two: bool = False) -> alt.Chart:
        # tooltips show UTC text computed in the browser (Vega's time format would be local time);
        # ``desc`` is what a screen reader says of a mark (its default lists the raw field names)
        c = alt.Chart().transform_filter(alt.datum.layer == layer).transform_calculate(
            when=f"utcFormat(toDate(datum.t), '{_WHEN_FMT}')").transform_calculate(
            desc="datum.lane + (datum.tool ? ' ' + datum.tool : '') + (datum.object ? ' on ' + datum.object : '')"
                 " + (datum.decision ? ', ' + datum.decision : '') + ' at ' + datum.when")
        return c.transform_calculate(when2=f"utcFormat(toDate(datum.t2), '{_WHEN_FMT}')") if two else c

    desc = alt.Description("desc:N")

    layers = []
    zoom = alt.selection_interval(bind="scales", encodings=["x"])
    if "bin" in present:
        layers.append(_tips(
            base("bin", True)
            .mark_rect(height={"band": 0.7})
            .encode(
                x=x, x2="t2:T", y=y, color=color,
                opacity=alt.Opacity("count:Q", scale=alt.Scale(type="sqrt", range=[0.2, 1]), legend=None),
            ),
            ("lane", "lane"), ("category", "category"), ("count", "events", ","),
            ("when", "from (UTC)"), ("when2", "to (UTC)")))
    when = ("when", "time (UTC)")
    # the lines first, under the points: hovering a dot shows the dot's tooltip, not a line's
    if "pair" in present:
        layers.append(_tips(
            base("pair", True)
            .mark_rule(color="#555555", strokeWidth=1, opacity=0.6, aria=False)
            .encode(x=x, x2="t2:T", y=y, y2="lane2:N"),
            ("who", "transcript"), ("call_id", "tool-use id"), ("seq", "call seq", "d"), ("tool", "tool"),
            ("arguments", "arguments"), ("when", "transcript time (UTC)"), ("when2", "door time (UTC)"),
            ("delta_ms", "door − transcript (ms)", ",.0f"), ("how", "matched by")))
    if "link" in present:
        layers.append(_tips(
            base("link", True)
            .mark_rule(color=CATEGORY_COLORS["storage"], strokeWidth=1, strokeDash=[3, 2], opacity=0.7, aria=False)
            .encode(x=x, x2="t2:T", y=y, y2="lane2:N"),
            ("who", "door session"), ("seq", "call seq", "d"), ("tool", "storage action"),
            ("object", "resource"), ("when", "door time (UTC)"), ("when2", "storage time (UTC)"),
            ("delta_ms", "storage − door (ms)", ",.0f"), ("how", "linked by")))
    if "step" in present:
        layers.append(_tips(
            base("step")
            .mark_point(filled=True, size=45, opacity=0.85)
            .encode(x=x, y=y, color=color, shape=shape, description=desc),
            ("who", "transcript"), ("seq", "step seq", "d"), when, ("lane", "kind"), ("tool", "tool"),
            ("arguments", "arguments"), ("call_id", "tool-use id"), ("text", "text")))
    call_tooltip = [("who", "door session"), ("seq", "call seq", "d"), when, ("tool", "tool"),
                    ("arguments", "arguments"), ("object", "object"), ("decision", "decision"),
                    ("rule", "rule"), ("rows", "rows", ","), ("bytes", "bytes", ",")]
    if "call" in present:
        layers.append(_tips(
            base("call")
            .mark_point(filled=True, size=55, opacity=0.9)
            .encode(x=x, y=y, color=color, shape=shape, description=desc),
            *call_tooltip))
    if "access" in present:
        layers.append(_tips(
            base("access")
            .mark_point(filled=True, size=45)
            .encode(x=x, y=y, color=color, shape=shape, description=desc),
            ("who", "principal"), when, ("tool", "action"), ("object", "resource"),
            ("decision", "outcome"), ("bytes", "bytes", ",")))
    if "refused" in present:
        layers.append(_tips(
            base("refused")
            .mark_point(shape="cross", filled=True, size=160, color=CATEGORY_COLORS["deny"],
                        stroke=CATEGORY_COLORS["deny"], strokeWidth=1, opacity=1)
            .encode(x=x, y=y, color=color, description=desc),
            *call_tooltip))
    layers[0] = layers[0].add_params(zoom)

    first = data.groupby("group")["t"].min()
    groups = sorted(first.index, key=lambda g: (g != UNEXPLAINED_GROUP, g == MERGED_GROUP, g.startswith("transcript "),
                                                 first[g], g))
    # named as the data names them (_records writes invisible characters out): a row order
    # naming them raw would match no row, and the rows would fall back to Vega's own order
    groups = [g.translate(SHOW_INVISIBLE) if isinstance(g, str) and not g.isascii() else g for g in groups]
    inner = alt.layer(*layers).properties(width=width, height=alt.Step(22))
    chart = (
        alt.FacetChart(
            data=alt.Data(values=values),
            spec=inner,
            facet=alt.Facet("group:N", title=None, sort=groups,
                            header=alt.Header(labelAngle=0, labelAlign="left", labelAnchor="start",
                                              labelOrient="top", labelFontWeight="bold")),
            columns=1,
        )
        .resolve_scale(y="independent", **({"x": "independent"} if apart else {}))
        .properties(title=alt.TitleParams(title, anchor="start", **({"subtitle": subtitle} if subtitle else {})))
    )
    return chart


@lru_cache(maxsize=1)
def _js_bundle() -> str:
    import vl_convert as vlc

    try:
        from altair.utils._importers import vl_version_for_vl_convert

        version = vl_version_for_vl_convert()
    except Exception:  # private helper moved: derive "v6_4" from altair's schema version
        major, minor = alt.SCHEMA_VERSION.lstrip("v").split(".")[:2]
        version = f"v{major}_{minor}"
    return vlc.javascript_bundle(vl_version=version)


def _script_json(obj: Any) -> str:
    """JSON safe inside a ``<script>`` element: ``<``, ``>``, ``&`` and U+2028/9 escaped."""
    s = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return (s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def chart_html(chart: alt.TopLevelMixin | dict, *, include_js: bool = True, renderer: str = "svg") -> str:
    """A self-contained HTML fragment that renders ``chart`` with no network access.

    The fragment is a ``<div class="replaybook-chart">`` plus two inline ``<script>`` elements:
    vl-convert's bundle of Vega, Vega-Lite and vega-embed (~0.9 MB, loaded only if
    ``window.vegaEmbed`` is not defined yet, so several fragments on one page are fine) and the
    call to ``vegaEmbed``.  No ``<script src=…>``, no CDN.  The spec's JSON is escaped so text
    from transcripts (``</script>``) cannot end the script element.  vega-embed's "open in
    editor"/"view source" actions (which link to the web) are switched off; SVG/PNG export stays.

    Args:
        chart: an Altair chart or a Vega-Lite spec dict.
        include_js: inline the JavaScript bundle (set False only when the page already has it).
        renderer: ``svg`` (default) or ``canvas``.
    """
    spec = chart.to_dict() if hasattr(chart, "to_dict") else dict(chart)
    spec.pop("$schema", None)
    div_id = "rb-chart-" + uuid.uuid4().hex[:12]
    options = {"mode": "vega-lite", "renderer": renderer,
               "actions": {"export": True, "source": False, "compiled": False, "editor": False}}
    parts = [f'<div class="replaybook-chart" id="{html.escape(div_id)}"></div>']
    if include_js:
        parts.append(
            '<script type="text/javascript">\nif (typeof window.vegaEmbed === "undefined") { (function () {\n'
            + _js_bundle()
            + "\n})(); }\n</script>"
        )
    parts.append(
        '<script type="text/javascript">\n(function () {\n'
        f'  var el = document.getElementById("{div_id}");\n'
        f"  var spec = {_script_json(spec)};\n"
        f"  var opt = {_script_json(options)};\n"
        "  if (typeof window.vegaEmbed === 'undefined') { el.textContent = 'chart unavailable: vega-embed not loaded'; return; }\n"
        "  window.vegaEmbed(el, spec, opt).catch(function (e) { el.textContent = 'chart failed: ' + e; });\n"
        "})();\n</script>"
    )
    return "\n".join(parts)
