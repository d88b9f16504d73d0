"""Join transcripts to the door sessions they came from.

Nothing in MCP carries the client's conversation id to the server, so a transcript and a door
session are joined by what both recorded.  A transcript ``tool_call`` step **agrees** with a door
call when

* the door logged the client's tool-use id in ``_meta`` and it equals the step's ``call_id``
  (``how = "meta_id"``: that exact key decides, whatever the times or arguments say), or
* the tool is the same (after the client's ``mcp__<server>__`` prefix is stripped), the
  canonical arguments are equal (:func:`replaybook.canonical_args`) and the door's time, after
  subtracting the estimated clock offset, is within ``window_s`` of the step's time
  (``how = "content"``), or
* one side has no arguments to compare (``args_key`` NA: a gateway that logs only a count or a
  hash, a client whose arguments did not parse), and the tool is the same within the window
  (``how = "tool_time"``).  This is weaker evidence —
  the session's ``method`` says so, and the report lowers its confidence.

Within one (transcript, session) pair, steps and calls with the same tool and arguments are
paired in time order, one call per step, so a step repeated twice needs two calls to agree
twice.  The **agreement** of a pair is its number of agreeing steps.

Transcripts are then assigned to sessions **one-to-one**, maximising the total agreement over
all sessions (ties broken by time proximity: the smaller median |Δt| wins), and never below
``min_agreed``.  This is what the naive "each session takes its best transcript" rule gets
wrong when a second session a minute later repeats some of the first one's calls: both sessions'
best transcript is then the first one.

For each session the result reports the transcript, agreement, share, runner-up, **margin**
(how much the best total agreement drops when this session may not have its transcript: 0 means
an equally good alternative assignment exists), status, clock offset and both residuals.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from .errors import JoinError
from .frames import CALLS, PAIRS, SESSIONS, STEPS

__all__ = ["JoinResult", "join_sessions", "DEFAULT_WINDOW_S", "DEFAULT_MIN_AGREED"]

#: Default agreement window between a transcript step and a door call, seconds.
DEFAULT_WINDOW_S = 60.0
#: Default minimum agreeing steps before a transcript may be assigned to a session.
DEFAULT_MIN_AGREED = 1
#: Components larger than this (sessions + transcripts) get an approximate margin.
_EXACT_MARGIN_LIMIT = 400


@dataclass
class JoinResult:
    """The outcome of :func:`join_sessions`.

    Attributes:
        sessions: :data:`~replaybook.frames.SESSIONS` frame, one row per door session, ordered
            by start time.
        pairs: :data:`~replaybook.frames.PAIRS` frame: the agreeing (step, call) pairs of the
            assigned (session, transcript) pairs.
        scores: every (door_session, transcript_id) pair with any agreement: columns
            ``door_session``, ``transcript_id`` (string), ``agreed`` (Int64), ``exact`` (Int64,
            agreeing steps matched by tool-use id), ``median_abs_delta_ms`` (float64).
        unclaimed_calls: rows of ``calls`` that no step of their session's transcript claims
            (all calls of unmatched sessions).
        unmatched_steps: door-bound ``tool_call`` rows of assigned transcripts that no call of
            their session claims (see ``door_servers``).
        unmatched_transcripts: transcript ids assigned to no session.
        offset_ms: the door clock minus the transcript clock, median over all agreeing pairs
            (ms), or ``None`` when nothing agreed.
        window_s: the window used, seconds.
        min_agreed: the minimum agreement used.
        door_servers: MCP server names (as the clients call the door) seen on agreeing steps;
            steps of other servers and built-in tools never pass the door and are not residuals.
    """

    sessions: pd.DataFrame
    pairs: pd.DataFrame
    scores: pd.DataFrame
    unclaimed_calls: pd.DataFrame
    unmatched_steps: pd.DataFrame
    unmatched_transcripts: list[str]
    offset_ms: float | None
    window_s: float
    min_agreed: int
    door_servers: list[str] = field(default_factory=list)

    def assignments(self) -> dict[str, str | None]:
        """``{door_session: transcript_id or None}``."""
        return {
            s: (None if pd.isna(t) else str(t))
            for s, t in zip(self.sessions["door_session"], self.sessions["transcript_id"])
        }

    def to_dict(self) -> dict:
        """A JSON-ready summary: assignments, per-session verdicts, residual counts, offset."""
        sess = []
        for r in self.sessions.itertuples(index=False):
            d = {}
            for k, v in r._asdict().items():
                if isinstance(v, pd.Timestamp):
                    v = v.isoformat().replace("+00:00", "Z")
                elif v is pd.NA or (isinstance(v, float) and np.isnan(v)) or v is pd.NaT:
                    v = None
                elif isinstance(v, np.integer):
                    v = int(v)
                elif isinstance(v, np.floating):
                    v = float(v)
                d[k] = v
            sess.append(d)
        return {
            "window_s": self.window_s,
            "min_agreed": self.min_agreed,
            "offset_ms": self.offset_ms,
            "assignments": self.assignments(),
            "unmatched_transcripts": list(self.unmatched_transcripts),
            "sessions": sess,
            "unclaimed_calls": int(len(self.unclaimed_calls)),
            "unmatched_steps": int(len(self.unmatched_steps)),
            "door_servers": list(self.door_servers),
        }


def _ms(ts: pd.Series) -> np.ndarray:
    """UTC timestamps → int64 milliseconds since the epoch (NaT → min int64)."""
    return ts.astype("datetime64[ns, UTC]").to_numpy(dtype="datetime64[ns]").astype("int64") // 1_000_000


def _candidates(s_code, s_ms, c_code, c_ms, window_ms: int) -> tuple[np.ndarray, np.ndarray]:
    """All (step index, call index) with equal key code and |Δt| ≤ window, without a cross join.

    Calls are sorted by (code, time) into one int64 composite key; each step's range is found by
    binary search, so the cost is O((S + C) log C + candidates).
    """
    if len(s_code) == 0 or len(c_code) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    tmin = min(s_ms.min(), c_ms.min()) - window_ms - 1
    span = int(max(s_ms.max(), c_ms.max()) - tmin + window_ms + 2)
    if span * (max(int(s_code.max()), int(c_code.max())) + 1) >= 2**62:
        raise JoinError("time span too large to index; split the incident by day")
    ckey = c_code.astype(np.int64) * span + (c_ms - tmin)
    order = np.argsort(ckey, kind="stable")
    ckey_sorted = ckey[order]
    base = s_code.astype(np.int64) * span + (s_ms - tmin)
    lo = np.searchsorted(ckey_sorted, base - window_ms, side="left")
    hi = np.searchsorted(ckey_sorted, base + window_ms, side="right")
    counts = hi - lo
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    step_idx = np.repeat(np.arange(len(s_code)), counts)
    starts = np.repeat(lo - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    call_pos = starts + np.arange(total)
    return step_idx, order[call_pos]


def _estimate_offset(s_code, s_ms, c_code, c_ms, max_offset_ms: int, sample: int = 20000) -> float:
    """Median door−transcript offset from each sampled step's nearest same-key call (ms)."""
    if max_offset_ms <= 0 or len(s_code) == 0 or len(c_code) == 0:
        return 0.0
    idx = np.arange(len(s_code))
    if len(idx) > sample:
        idx = np.random.default_rng(0).choice(idx, sample, replace=False)
    si, ci = _candidates(s_code[idx], s_ms[idx], c_code, c_ms, max_offset_ms)
    if len(si) == 0:
        return 0.0
    d = pd.DataFrame({"s": si, "d": c_ms[ci] - s_ms[idx][si]})
    d["a"] = d["d"].abs()
    nearest = d.sort_values("a", kind="stable").drop_duplicates("s")
    return float(np.median(nearest["d"]))


def _rank_pair(cand: pd.DataFrame, window_ms: float) -> pd.DataFrame:
    """Pair candidate steps and calls one-to-one in time order within (t, s, key) groups."""
    g = ["t", "s", "k"]
    steps = cand[g + ["si", "sms"]].drop_duplicates(g + ["si"])
    calls = cand[g + ["ci", "cms"]].drop_duplicates(g + ["ci"])
    steps = steps.sort_values(g + ["sms", "si"], kind="stable")
    calls = calls.sort_values(g + ["cms", "ci"], kind="stable")
    steps["r"] = steps.groupby(g, sort=False).cumcount()
    calls["r"] = calls.groupby(g, sort=False).cumcount()
    m = steps.merge(calls, on=g + ["r"], how="inner")
    m = m[(m["cms"] - m["sms"]).abs() <= window_ms]
    return m


def join_sessions(
    steps: pd.DataFrame,
    calls: pd.DataFrame,
    *,
    window_s: float = DEFAULT_WINDOW_S,
    min_agreed: int = DEFAULT_MIN_AGREED,
    max_offset_s: float = 300.0,
) -> JoinResult:
    """Assign transcripts to door sessions one-to-one and report how sure each assignment is.

    Args:
        steps: a :data:`~replaybook.frames.STEPS` frame (only ``kind == "tool_call"`` rows are
            used; columns used: ``transcript_id``, ``seq``, ``ts``, ``server``, ``tool``,
            ``args_key``, ``call_id``).
        calls: a :data:`~replaybook.frames.CALLS` frame.
        window_s: agreement window in seconds (> 0), applied after the clock offset.
        min_agreed: a transcript is never assigned with fewer agreeing steps than this (≥ 1).
        max_offset_s: how far apart (seconds) the two clocks may be; the offset is estimated as
            the median difference between each step and its nearest same-tool, same-arguments
            door call within this range.  ``0`` assumes the clocks agree.

    Returns:
        :class:`JoinResult`.

    Raises:
        JoinError: ``window_s`` ≤ 0 or ``min_agreed`` < 1, or a frame lacks its columns.
    """
    if not window_s > 0:
        raise JoinError(f"window_s must be positive, got {window_s}")
    if min_agreed < 1:
        raise JoinError(f"min_agreed must be at least 1, got {min_agreed}")
    for spec, df in ((STEPS, steps), (CALLS, calls)):
        missing = [c for c in spec.names if c not in df.columns]
        if missing:
            raise JoinError(f"{spec.name} frame lacks columns {missing}")
    window_ms = int(round(window_s * 1000))

    ts_steps = steps[(steps["kind"] == "tool_call") & steps["tool"].notna()].reset_index(drop=True)
    calls = calls.reset_index(drop=True)

    # Integer codes for transcripts, sessions and (tool, args) keys.
    t_codes, t_names = pd.factorize(ts_steps["transcript_id"].astype("object"), sort=True)
    s_codes, s_names = pd.factorize(calls["door_session"].astype("object"), sort=True)
    # Calls whose gateway logged no arguments (args_key NA) can only agree on tool + time.
    c_noargs = calls["args_key"].isna().to_numpy()
    key_s = ts_steps["tool"].astype("object") + "\x00" + ts_steps["args_key"].fillna("{}").astype("object")
    key_c = calls["tool"].astype("object") + "\x00" + calls["args_key"].fillna("{}").astype("object")
    key_s_tool = ts_steps["tool"].astype("object") + "\x00*"
    key_c_tool = calls["tool"].astype("object") + "\x00*"
    k_all, _ = pd.factorize(pd.concat([key_s, key_c, key_s_tool, key_c_tool], ignore_index=True))
    n1, n2 = len(key_s), len(key_s) + len(key_c)
    k_s, k_c = k_all[:n1], k_all[n1:n2]
    k_s_tool, k_c_tool = k_all[n2:n2 + n1], k_all[n2 + n1:]
    s_ms, c_ms = _ms(ts_steps["ts"]), _ms(calls["ts"])
    s_ok = ts_steps["ts"].notna().to_numpy()
    c_ok = (calls["ts"].notna() & calls["tool"].notna()).to_numpy()  # some gateways log neither
    s_noargs = ts_steps["args_key"].isna().to_numpy()

    # 1. exact pairs by the client's tool-use id logged in _meta.
    exact = pd.DataFrame(columns=["si", "ci"], dtype="int64")
    if calls["meta_call_id"].notna().any() and ts_steps["call_id"].notna().any():
        a = pd.DataFrame({"ci": np.arange(len(calls)), "id": calls["meta_call_id"].astype("object")}).dropna()
        b = pd.DataFrame({"si": np.arange(len(ts_steps)), "id": ts_steps["call_id"].astype("object")}).dropna()
        exact = b.merge(a, on="id")[["si", "ci"]].drop_duplicates("si").drop_duplicates("ci")
    ex_steps = set(exact["si"].tolist())
    ex_calls = set(exact["ci"].tolist())

    # 2. content candidates (steps/calls already matched exactly are out of the running).
    s_idx = np.flatnonzero(s_ok & ~np.isin(np.arange(len(ts_steps)), list(ex_steps)))
    c_free = c_ok & ~np.isin(np.arange(len(calls)), list(ex_calls))
    c_tool_idx = np.flatnonzero(c_free & c_noargs)
    c_idx = np.flatnonzero(c_free & ~c_noargs)
    offset = _estimate_offset(k_s[s_idx], s_ms[s_idx], k_c[c_idx], c_ms[c_idx], int(max_offset_s * 1000))
    if not exact.empty:  # exact pairs measure the offset directly
        d = c_ms[exact["ci"].to_numpy()] - s_ms[exact["si"].to_numpy()]
        d = d[s_ok[exact["si"].to_numpy()] & c_ok[exact["ci"].to_numpy()]]
        if len(d):
            offset = float(np.median(d))
    off = int(round(offset))
    s_args_idx = s_idx[~s_noargs[s_idx]]
    si, ci = _candidates(k_s[s_args_idx], s_ms[s_args_idx], k_c[c_idx], c_ms[c_idx] - off, window_ms)
    si = s_args_idx[si]
    ci = c_idx[ci]
    cand = pd.DataFrame({
        "si": si, "ci": ci, "t": t_codes[si], "s": s_codes[ci], "k": k_s[si],
        "sms": s_ms[si], "cms": c_ms[ci] - off,
    })
    matched = _rank_pair(cand, window_ms) if len(cand) else cand.assign(r=0)
    matched = matched[["t", "s", "k", "si", "ci", "sms", "cms"]].assign(how="content")
    if len(c_tool_idx) or s_noargs[s_idx].any():
        # tool + time only, where one side logged no arguments (a gateway that logs a count or a
        # hash; a client whose arguments did not parse), among steps and calls still unmatched
        free_s = s_idx[~np.isin(s_idx, matched["si"].to_numpy())]
        free_c = c_idx[~np.isin(c_idx, matched["ci"].to_numpy())]
        pairs_ = []
        for ss, cc in ((free_s, c_tool_idx), (free_s[s_noargs[free_s]], free_c)):
            if len(ss) and len(cc):
                a, b = _candidates(k_s_tool[ss], s_ms[ss], k_c_tool[cc], c_ms[cc] - off, window_ms)
                pairs_.append((ss[a], cc[b]))
        si2 = np.concatenate([p[0] for p in pairs_]) if pairs_ else np.empty(0, np.int64)
        ci2 = np.concatenate([p[1] for p in pairs_]) if pairs_ else np.empty(0, np.int64)
        cand2 = pd.DataFrame({
            "si": si2, "ci": ci2, "t": t_codes[si2], "s": s_codes[ci2], "k": k_s_tool[si2],
            "sms": s_ms[si2], "cms": c_ms[ci2] - off,
        })
        cand2 = cand2.drop_duplicates(["si", "ci"])
        if len(cand2):
            m2 = _rank_pair(cand2, window_ms)[["t", "s", "k", "si", "ci", "sms", "cms"]].assign(how="tool_time")
            matched = pd.concat([matched, m2], ignore_index=True)
    if not exact.empty:
        e = exact.assign(t=t_codes[exact["si"]], s=s_codes[exact["ci"]], k=k_s[exact["si"]],
                         sms=s_ms[exact["si"]], cms=c_ms[exact["ci"]] - off, how="meta_id")
        matched = pd.concat([matched, e[matched.columns]], ignore_index=True)
    matched["absd"] = (matched["cms"] - matched["sms"]).abs().astype("float64")

    # 3. agreement per (transcript, session).
    if len(matched):
        sc = matched.groupby(["t", "s"], sort=False).agg(
            agreed=("si", "size"),
            exact=("how", lambda h: int((h == "meta_id").sum())),
            med=("absd", "median"),
        ).reset_index()
    else:
        sc = pd.DataFrame({"t": [], "s": [], "agreed": [], "exact": [], "med": []})
    sc = sc.astype({"t": "int64", "s": "int64", "agreed": "int64", "exact": "int64", "med": "float64"})

    # 4. one-to-one assignment, maximising agreement; ties by time proximity.
    eligible = sc[sc["agreed"] >= min_agreed]
    assign: dict[int, int] = {}
    margin: dict[int, float] = {}
    n_s, n_t = len(s_names), len(t_names)
    if len(eligible):
        assign, margin = _assign(eligible, n_s, n_t, window_ms)

    # 5. per-session report.
    sess_rows = []
    all_sessions = calls.groupby("door_session", sort=False) if len(calls) else []
    per_session = {name: g for name, g in all_sessions}
    sc_by_s = {s: g.sort_values(["agreed", "med"], ascending=[False, True]) for s, g in sc.groupby("s")} if len(sc) else {}
    pair_frames = []
    unclaimed = []
    unmatched_steps = []
    door_servers = sorted(set(ts_steps.loc[matched["si"].unique(), "server"].dropna().astype(str))) if len(matched) else []
    for s_code, s_name in enumerate(s_names):
        g = per_session[s_name]
        t_code = assign.get(s_code)
        cands = sc_by_s.get(s_code)
        t_name = t_names[t_code] if t_code is not None else None
        runner = runner_agreed = None
        if cands is not None:
            others = cands[cands["t"] != t_code] if t_code is not None else cands
            if t_code is None:
                others = cands
            if len(others):
                runner = t_names[int(others["t"].iloc[0])]
                runner_agreed = int(others["agreed"].iloc[0])
        agreed = share = off_ms = None
        tool_steps = n_unmatched = None
        method = None
        if t_code is not None:
            m = matched[(matched["t"] == t_code) & (matched["s"] == s_code)]
            agreed = len(m)
            share = agreed / len(g)
            d = (m["cms"] + off) - m["sms"]
            off_ms = float(np.median(d)) if len(d) else None
            hows = set(m["how"])
            method = "+".join(h for h in ("meta_id", "content", "tool_time") if h in hows)
            p = pd.DataFrame({
                "door_session": s_name,
                "transcript_id": t_name,
                "step_seq": ts_steps.loc[m["si"], "seq"].to_numpy(),
                "call_seq": calls.loc[m["ci"], "seq"].to_numpy(),
                "call_id": ts_steps.loc[m["si"], "call_id"].to_numpy(),
                "tool": ts_steps.loc[m["si"], "tool"].to_numpy(),
                "args_key": ts_steps.loc[m["si"], "args_key"].to_numpy(),
                "step_ts": ts_steps.loc[m["si"], "ts"].to_numpy(),
                "call_ts": calls.loc[m["ci"], "ts"].to_numpy(),
                "delta_ms": d.to_numpy(dtype="float64"),
                "how": m["how"].to_numpy(),
            })
            pair_frames.append(p)
            claimed_calls = set(m["ci"].tolist())
            unclaimed.append(calls.loc[[i for i in g.index if i not in claimed_calls]])
            t_steps = ts_steps.index[ts_steps["transcript_id"] == t_name]
            door_bound = _door_bound(ts_steps.loc[t_steps], door_servers)
            tool_steps = int(len(door_bound))
            claimed_steps = set(m["si"].tolist())
            um = door_bound.loc[[i for i in door_bound.index if i not in claimed_steps]]
            unmatched_steps.append(um)
            n_unmatched = len(um)
        else:
            unclaimed.append(g)
        mg = margin.get(s_code)
        if t_code is None:
            status = "unmatched"
        elif mg is not None and mg <= 0:
            status = "ambiguous"
        else:
            status = "matched"
        end = g["ts_end"].max() if g["ts_end"].notna().any() else g["ts"].max()
        sess_rows.append({
            "door_session": s_name,
            "agent": g["agent"].dropna().iloc[0] if g["agent"].notna().any() else None,
            "start": g["ts"].min(),
            "end": max(end, g["ts"].max()),
            "calls": len(g),
            "refused": int((g["decision"] == "deny").sum()),
            "transcript_id": t_name,
            "agreed": agreed,
            "transcript_tool_steps": tool_steps,
            "share": share,
            "runner_up": runner,
            "runner_up_agreed": runner_agreed,
            "margin": mg,
            "status": status,
            "offset_ms": off_ms,
            "unclaimed_calls": len(unclaimed[-1]),
            "unmatched_steps": n_unmatched,
            "method": method,
        })
    sessions = SESSIONS.build(sess_rows)
    if len(sessions):
        sessions = sessions.sort_values(["start", "door_session"], kind="stable").reset_index(drop=True)
    pairs = PAIRS.build(pd.concat(pair_frames, ignore_index=True)) if pair_frames else PAIRS.empty()
    if len(pairs):
        pairs = pairs.sort_values(["door_session", "call_ts"], kind="stable").reset_index(drop=True)
    scores = pd.DataFrame({
        "door_session": pd.array([s_names[i] for i in sc["s"]], dtype="string"),
        "transcript_id": pd.array([t_names[i] for i in sc["t"]], dtype="string"),
        "agreed": pd.array(sc["agreed"], dtype="Int64"),
        "exact": pd.array(sc["exact"], dtype="Int64"),
        "median_abs_delta_ms": sc["med"].astype("float64").to_numpy(),
    }).sort_values(["door_session", "agreed"], ascending=[True, False], kind="stable").reset_index(drop=True)
    assigned_t = {t_names[t] for t in assign.values()}
    all_t = sorted(set(steps["transcript_id"].dropna().astype(str)))
    offset_all = float(np.median(pairs["delta_ms"])) if len(pairs) else None
    return JoinResult(
        sessions=sessions,
        pairs=pairs,
        scores=scores,
        unclaimed_calls=(pd.concat(unclaimed).sort_values(["door_session", "ts"], kind="stable")
                         if unclaimed else calls.iloc[0:0]),
        unmatched_steps=(pd.concat(unmatched_steps) if unmatched_steps else ts_steps.iloc[0:0]),
        unmatched_transcripts=[t for t in all_t if t not in assigned_t],
        offset_ms=offset_all,
        window_s=float(window_s),
        min_agreed=int(min_agreed),
        door_servers=door_servers,
    )


def _door_bound(tsteps: pd.DataFrame, door_servers: list[str]) -> pd.DataFrame:
    """Tool steps that should have passed the door: MCP steps of a door server.

    With no agreeing step anywhere, every MCP tool step (server known) counts.
    """
    if door_servers:
        return tsteps[tsteps["server"].isin(door_servers)]
    return tsteps[tsteps["server"].notna()]


def _assign(eligible: pd.DataFrame, n_s: int, n_t: int, window_ms: int) -> tuple[dict[int, int], dict[int, float]]:
    """Maximum-agreement one-to-one assignment per connected component of the score graph.

    Returns ``{session code: transcript code}`` and ``{session code: margin}``; the margin is in
    agreeing steps: the best total agreement minus the best total when this session may not
    keep its transcript (exact for components up to ``_EXACT_MARGIN_LIMIT`` nodes; larger ones
    use agreement minus the best alternative transcript's agreement).
    """
    s = eligible["s"].to_numpy()
    t = eligible["t"].to_numpy()
    graph = coo_matrix((np.ones(len(s)), (s, n_s + t)), shape=(n_s + n_t, n_s + n_t))
    _, labels = connected_components(graph, directed=False)
    eligible = eligible.assign(comp=labels[s])
    assign: dict[int, int] = {}
    margin: dict[int, float] = {}
    for _, comp in eligible.groupby("comp", sort=False):
        ss = np.unique(comp["s"].to_numpy())
        tt = np.unique(comp["t"].to_numpy())
        si = {v: i for i, v in enumerate(ss)}
        ti = {v: i for i, v in enumerate(tt)}
        agreed = np.zeros((len(ss), len(tt)))
        penalty = np.zeros((len(ss), len(tt)))
        rows = comp["s"].map(si).to_numpy()
        cols = comp["t"].map(ti).to_numpy()
        agreed[rows, cols] = comp["agreed"].to_numpy()
        # ties broken by time proximity: the penalties of a whole assignment sum to < 1 step
        penalty[rows, cols] = np.minimum(comp["med"].to_numpy() / max(window_ms, 1), 1.0) / (len(ss) + 1)
        weight = np.where(agreed > 0, agreed - penalty, 0.0)
        r, c = linear_sum_assignment(weight, maximize=True)
        best = {int(a): int(b) for a, b in zip(r, c) if agreed[a, b] > 0}
        total = sum(agreed[a, b] for a, b in best.items())
        exact_margin = len(ss) + len(tt) <= _EXACT_MARGIN_LIMIT
        for a, b in best.items():
            assign[int(ss[a])] = int(tt[b])
            if exact_margin:
                w2 = agreed.copy()
                w2[a, b] = 0
                r2, c2 = linear_sum_assignment(w2, maximize=True)
                alt = w2[r2, c2].sum()
                margin[int(ss[a])] = float(total - alt)
            else:
                row = agreed[a].copy()
                row[b] = 0
                margin[int(ss[a])] = float(agreed[a, b] - row.max())
    return assign, margin
