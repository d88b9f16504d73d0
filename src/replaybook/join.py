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


def _ranked(group: np.ndarray, item: np.ndarray, when: np.ndarray, n_items: int):
    """Unique (group, item) pairs, each item's 0-based rank by time within its group."""
    key = np.unique(group.astype(np.int64) * n_items + item)
    g, it = key // n_items, key % n_items
    order = np.lexsort((it, when[it], g))
    g, it = g[order], it[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    counts = np.diff(np.r_[starts, len(g)])
    rank = np.arange(len(g)) - np.repeat(starts, counts)
    return g, it, rank


def _rank_pair(si: np.ndarray, ci: np.ndarray, t: np.ndarray, s: np.ndarray, k: np.ndarray,
               s_ms: np.ndarray, c_ms: np.ndarray, window_ms: float) -> tuple[np.ndarray, np.ndarray]:
    """Pair candidate steps and calls one-to-one in time order within (transcript, session, key).

    ``si``/``ci`` index the candidate pairs' steps and calls; ``t``, ``s``, ``k`` are their
    transcript, session and key codes; ``s_ms``/``c_ms`` the full time arrays (ms, calls already
    shifted by the clock offset).  The i-th candidate step of a group pairs with its i-th
    candidate call; pairs further apart than the window are dropped.  Integer arrays only: no
    per-group Python.
    """
    if len(si) == 0:
        return si, ci
    nt, ns, nk = int(t.max()) + 1, int(s.max()) + 1, int(k.max()) + 1
    if nt * ns * nk < 2**62:  # one int64 key per (transcript, session, key): a 1-D unique
        _, g = np.unique((t.astype(np.int64) * ns + s) * nk + k, return_inverse=True)
    else:
        _, g = np.unique(np.stack([t, s, k], axis=1), axis=0, return_inverse=True)
    g = g.reshape(-1).astype(np.int64)
    n_items = int(max(si.max(), ci.max())) + 1
    g1, step, r1 = _ranked(g, si, s_ms, n_items)
    g2, call, r2 = _ranked(g, ci, c_ms, n_items)
    width = int(max(r1.max(), r2.max())) + 1
    a, b = g1 * width + r1, g2 * width + r2
    _, i1, i2 = np.intersect1d(a, b, assume_unique=True, return_indices=True)
    step, call = step[i1], call[i2]
    keep = np.abs(c_ms[call] - s_ms[step]) <= window_ms
    return step[keep], call[keep]


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
    c_shift = c_ms - off
    msi, mci = _rank_pair(si, ci, t_codes[si], s_codes[ci], k_s[si], s_ms, c_shift, window_ms)
    parts = [(msi, mci, np.full(len(msi), HOW_CONTENT, np.int8))]
    if len(c_tool_idx) or s_noargs[s_idx].any():
        # tool + time only, where one side logged no arguments (a gateway that logs a count or a
        # hash; a client whose arguments did not parse), among steps and calls still unmatched
        free_s = s_idx[~np.isin(s_idx, msi)]
        free_c = c_idx[~np.isin(c_idx, mci)]
        pairs_ = []
        for ss, cc in ((free_s, c_tool_idx), (free_s[s_noargs[free_s]], free_c)):
            if len(ss) and len(cc):
                a, b = _candidates(k_s_tool[ss], s_ms[ss], k_c_tool[cc], c_ms[cc] - off, window_ms)
                pairs_.append((ss[a], cc[b]))
        si2 = np.concatenate([p[0] for p in pairs_]) if pairs_ else np.empty(0, np.int64)
        ci2 = np.concatenate([p[1] for p in pairs_]) if pairs_ else np.empty(0, np.int64)
        if len(si2):
            uniq = np.unique(si2.astype(np.int64) * (len(calls) + 1) + ci2)
            si2, ci2 = uniq // (len(calls) + 1), uniq % (len(calls) + 1)
            m2s, m2c = _rank_pair(si2, ci2, t_codes[si2], s_codes[ci2], k_s_tool[si2], s_ms, c_shift, window_ms)
            parts.append((m2s, m2c, np.full(len(m2s), HOW_TOOL_TIME, np.int8)))
    if not exact.empty:
        es, ec = exact["si"].to_numpy(np.int64), exact["ci"].to_numpy(np.int64)
        parts.append((es, ec, np.full(len(es), HOW_META, np.int8)))
    m_si = np.concatenate([p[0] for p in parts]).astype(np.int64)
    m_ci = np.concatenate([p[1] for p in parts]).astype(np.int64)
    m_how = np.concatenate([p[2] for p in parts])
    m_t, m_s = t_codes[m_si], s_codes[m_ci]
    m_d = (c_shift[m_ci] - s_ms[m_si]).astype("float64")  # after the offset: ~0 when in step

    # 3. agreement per (transcript, session): integer pair codes, one groupby.
    n_s, n_t = len(s_names), len(t_names)
    if len(m_si):
        pair_code = m_t.astype(np.int64) * max(n_s, 1) + m_s
        g = pd.DataFrame({"p": pair_code, "absd": np.abs(m_d), "meta": m_how == HOW_META})
        agg = g.groupby("p", sort=True).agg(agreed=("absd", "size"), exact=("meta", "sum"),
                                            med=("absd", "median"))
        pc = agg.index.to_numpy(np.int64)
        sc = pd.DataFrame({"t": pc // max(n_s, 1), "s": pc % max(n_s, 1),
                           "agreed": agg["agreed"].to_numpy(np.int64),
                           "exact": agg["exact"].to_numpy(np.int64),
                           "med": agg["med"].to_numpy("float64")})
    else:
        sc = pd.DataFrame({"t": np.empty(0, np.int64), "s": np.empty(0, np.int64),
                           "agreed": np.empty(0, np.int64), "exact": np.empty(0, np.int64),
                           "med": np.empty(0, "float64")})

    # 4. one-to-one assignment, maximising agreement; ties by time proximity.
    eligible = sc[sc["agreed"] >= min_agreed]
    assign: dict[int, int] = {}
    margin: dict[int, float] = {}
    if len(eligible):
        assign, margin = _assign(eligible, n_s, n_t, window_ms)
    assign_arr = np.full(n_s, -1, np.int64)
    for sc_, tc_ in assign.items():
        assign_arr[sc_] = tc_

    # 5. per-session report, vectorised.
    in_pair = assign_arr[m_s] == m_t if len(m_si) else np.zeros(0, bool)
    p_si, p_ci, p_s, p_t = m_si[in_pair], m_ci[in_pair], m_s[in_pair], m_t[in_pair]
    p_how, p_delta = m_how[in_pair], (c_ms[m_ci[in_pair]] - s_ms[m_si[in_pair]]).astype("float64")
    # the names the clients give the door: servers of steps that agree with some call; steps of
    # other servers and built-in tools never pass the door and are not residuals
    door_servers = sorted(set(ts_steps["server"].iloc[np.unique(m_si)].dropna().astype(str))) if len(m_si) else []
    pairs = PAIRS.build({
        "door_session": s_names.to_numpy(object)[p_s] if len(p_s) else [],
        "transcript_id": t_names.to_numpy(object)[p_t] if len(p_t) else [],
        "step_seq": ts_steps["seq"].to_numpy(object)[p_si],
        "call_seq": calls["seq"].to_numpy(object)[p_ci],
        "call_id": ts_steps["call_id"].to_numpy(object)[p_si],
        "tool": ts_steps["tool"].to_numpy(object)[p_si],
        "args_key": ts_steps["args_key"].to_numpy(object)[p_si],
        "step_ts": ts_steps["ts"].iloc[p_si].reset_index(drop=True),
        "call_ts": calls["ts"].iloc[p_ci].reset_index(drop=True),
        "delta_ms": p_delta,
        "how": np.asarray(_HOW_NAMES, dtype=object)[p_how] if len(p_how) else [],
    })
    if len(pairs):
        pairs = pairs.sort_values(["door_session", "call_ts"], kind="stable").reset_index(drop=True)

    # residuals: calls no step claims; door-bound steps of assigned transcripts no call claims
    claimed_call = np.zeros(len(calls), bool)
    claimed_call[p_ci] = True
    claimed_step = np.zeros(len(ts_steps), bool)
    claimed_step[p_si] = True
    srv = ts_steps["server"]
    door_bound = (srv.isin(door_servers) if door_servers else srv.notna()).to_numpy(bool)
    t_assigned = np.zeros(n_t, bool)
    t_assigned[assign_arr[assign_arr >= 0]] = True
    step_in_assigned = t_assigned[t_codes] if len(ts_steps) else np.zeros(0, bool)
    unmatched_mask = door_bound & step_in_assigned & ~claimed_step
    t_to_s = np.full(n_t, -1, np.int64)
    t_to_s[assign_arr[assign_arr >= 0]] = np.flatnonzero(assign_arr >= 0)

    per = pd.DataFrame({
        "s": s_codes, "ts": calls["ts"], "ts_end": calls["ts_end"], "agent": calls["agent"],
        "deny": (calls["decision"] == "deny").to_numpy(bool), "unclaimed": ~claimed_call,
    })
    ga = per.groupby("s", sort=True).agg(start=("ts", "min"), last=("ts", "max"), end=("ts_end", "max"),
                                         calls=("ts", "size"), refused=("deny", "sum"),
                                         unclaimed=("unclaimed", "sum"), agent=("agent", "first"))
    ga = ga.reindex(range(n_s))
    n_agreed = np.bincount(p_s, minlength=n_s) if n_s else np.zeros(0, np.int64)
    off_ms = pd.Series(p_delta).groupby(p_s).median().reindex(range(n_s)) if len(p_s) else \
        pd.Series([np.nan] * n_s)
    how_bits = np.zeros(n_s, np.int64)
    if len(p_s):
        np.bitwise_or.at(how_bits, p_s, (1 << p_how.astype(np.int64)))
    tool_steps_t = np.bincount(t_codes[door_bound], minlength=n_t) if len(ts_steps) else np.zeros(n_t, np.int64)
    unmatched_t = np.bincount(t_codes[unmatched_mask], minlength=n_t) if len(ts_steps) else np.zeros(n_t, np.int64)
    runner = _runners_up(sc, assign_arr)
    t_names_arr = t_names.to_numpy(object)
    s_names_arr = s_names.to_numpy(object)
    has_t = assign_arr >= 0
    tcode = np.where(has_t, assign_arr, 0)
    status = np.where(~has_t, "unmatched", "matched").astype(object)
    mg = np.array([margin.get(i, np.nan) for i in range(n_s)], dtype="float64")
    status[has_t & (mg <= 0)] = "ambiguous"
    end = ga["end"].where(ga["end"].notna() & (ga["end"] > ga["last"]), ga["last"])
    sessions = SESSIONS.build({
        "door_session": s_names_arr,
        "agent": ga["agent"].to_numpy(object),
        "start": ga["start"],
        "end": end,
        "calls": ga["calls"].to_numpy(object),
        "refused": ga["refused"].to_numpy(object),
        "transcript_id": np.where(has_t, t_names_arr[tcode] if n_t else None, None),
        "agreed": np.where(has_t, n_agreed, None),
        "transcript_tool_steps": np.where(has_t, tool_steps_t[tcode] if n_t else 0, None),
        "share": np.where(has_t, n_agreed / np.maximum(ga["calls"].to_numpy("float64"), 1), np.nan),
        "runner_up": [None if r < 0 else t_names_arr[r] for r in runner["t"]],
        "runner_up_agreed": [None if r < 0 else int(a) for r, a in zip(runner["t"], runner["agreed"])],
        "margin": mg,
        "status": status,
        "offset_ms": np.where(has_t, off_ms.to_numpy("float64"), np.nan),
        "unclaimed_calls": ga["unclaimed"].to_numpy(object),
        "unmatched_steps": np.where(has_t, unmatched_t[tcode] if n_t else 0, None),
        "method": [("+".join(n for b, n in enumerate(_HOW_NAMES) if bits & (1 << b)) if h else None)
                   for bits, h in zip(how_bits, has_t)],
    })
    if len(sessions):
        sessions = sessions.sort_values(["start", "door_session"], kind="stable").reset_index(drop=True)
    scores = pd.DataFrame({
        "door_session": pd.array(s_names_arr[sc["s"].to_numpy(np.int64)] if len(sc) else [], dtype="string"),
        "transcript_id": pd.array(t_names_arr[sc["t"].to_numpy(np.int64)] if len(sc) else [], dtype="string"),
        "agreed": pd.array(sc["agreed"], dtype="Int64"),
        "exact": pd.array(sc["exact"], dtype="Int64"),
        "median_abs_delta_ms": sc["med"].astype("float64").to_numpy(),
    }).sort_values(["door_session", "agreed"], ascending=[True, False], kind="stable").reset_index(drop=True)
    assigned_names = set(t_names_arr[assign_arr[assign_arr >= 0]])
    all_t = sorted(set(steps["transcript_id"].dropna().astype(str)))
    offset_all = float(np.median(pairs["delta_ms"])) if len(pairs) else None
    unclaimed_calls = calls[~claimed_call]
    if len(unclaimed_calls):
        unclaimed_calls = unclaimed_calls.sort_values(["door_session", "ts"], kind="stable")
    return JoinResult(
        sessions=sessions,
        pairs=pairs,
        scores=scores,
        unclaimed_calls=unclaimed_calls,
        unmatched_steps=ts_steps[unmatched_mask],
        unmatched_transcripts=[t for t in all_t if t not in assigned_names],
        offset_ms=offset_all,
        window_s=float(window_s),
        min_agreed=int(min_agreed),
        door_servers=door_servers,
    )


#: How an agreeing pair was found (index = code in the arrays above).
HOW_META, HOW_CONTENT, HOW_TOOL_TIME = 0, 1, 2
_HOW_NAMES = ("meta_id", "content", "tool_time")


def _runners_up(sc: pd.DataFrame, assign_arr: np.ndarray) -> pd.DataFrame:
    """Per session code: the best-agreeing transcript other than the assigned one (t = -1: none)."""
    n_s = len(assign_arr)
    out = pd.DataFrame({"t": np.full(n_s, -1, np.int64), "agreed": np.zeros(n_s, np.int64)})
    if not len(sc):
        return out
    others = sc[sc["t"].to_numpy() != assign_arr[sc["s"].to_numpy()]]
    best = others.sort_values(["s", "agreed", "med", "t"], ascending=[True, False, True, True],
                              kind="stable").drop_duplicates("s")
    out.loc[best["s"].to_numpy(), "t"] = best["t"].to_numpy()
    out.loc[best["s"].to_numpy(), "agreed"] = best["agreed"].to_numpy()
    return out


def _assign(eligible: pd.DataFrame, n_s: int, n_t: int, window_ms: int) -> tuple[dict[int, int], dict[int, float]]:
    """Maximum-agreement one-to-one assignment per connected component of the score graph.

    Weights are agreeing steps minus a time-proximity penalty that sums to less than one step
    over any assignment, so agreement always decides and proximity only breaks ties.  Small
    components (≤ ``_EXACT_MARGIN_LIMIT`` nodes) are solved densely and get exact margins: the
    best total agreement minus the best total when this session may not keep its transcript.
    Larger ones (many sessions repeating the same calls at the same time chain into one) are
    solved as a sparse bipartite matching — never a dense matrix — and their margin is the
    assigned agreement minus the best alternative transcript's agreement for that session.

    Returns ``{session code: transcript code}`` and ``{session code: margin}``.
    """
    s = eligible["s"].to_numpy(np.int64)
    t = eligible["t"].to_numpy(np.int64)
    graph = coo_matrix((np.ones(len(s)), (s, n_s + t)), shape=(n_s + n_t, n_s + n_t))
    _, labels = connected_components(graph, directed=False)
    comp_of = labels[s]
    order = np.argsort(comp_of, kind="stable")
    bounds = np.flatnonzero(np.r_[True, comp_of[order][1:] != comp_of[order][:-1], True])
    agreed_all = eligible["agreed"].to_numpy("float64")
    med_all = eligible["med"].to_numpy("float64")
    assign: dict[int, int] = {}
    margin: dict[int, float] = {}
    sizes = np.diff(bounds)
    single = order[bounds[:-1][sizes == 1]]  # one session, one transcript: nothing to decide
    for x in single:
        assign[int(s[x])] = int(t[x])
        margin[int(s[x])] = float(agreed_all[x])
    for a_, b_ in zip(bounds[:-1], bounds[1:]):
        if b_ - a_ == 1:
            continue
        idx = order[a_:b_]
        cs, ct, ca, cm = s[idx], t[idx], agreed_all[idx], med_all[idx]
        ss, rows = np.unique(cs, return_inverse=True)
        tt, cols = np.unique(ct, return_inverse=True)
        penalty = np.minimum(cm / max(window_ms, 1), 1.0) / (len(ss) + 1)
        weight = ca - penalty
        if len(ss) + len(tt) <= _EXACT_MARGIN_LIMIT:
            agreed = np.zeros((len(ss), len(tt)))
            agreed[rows, cols] = ca
            w = np.zeros((len(ss), len(tt)))
            w[rows, cols] = weight
            r, c = linear_sum_assignment(w, maximize=True)
            best = {int(x): int(y) for x, y in zip(r, c) if agreed[x, y] > 0}
            total = sum(agreed[x, y] for x, y in best.items())
            for x, y in best.items():
                assign[int(ss[x])] = int(tt[y])
                w2 = agreed.copy()
                w2[x, y] = 0
                r2, c2 = linear_sum_assignment(w2, maximize=True)
                margin[int(ss[x])] = float(total - w2[r2, c2].sum())
            continue
        # sparse: rows = sessions; columns = transcripts, then one "no transcript" column per
        # session (a tiny weight), so a full matching of the sessions always exists
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import min_weight_full_bipartite_matching

        eps = 1e-9
        nr, nc = len(ss), len(tt)
        m = csr_matrix((np.r_[weight + 1.0, np.full(nr, eps)],
                        (np.r_[rows, np.arange(nr)], np.r_[cols, nc + np.arange(nr)])),
                       shape=(nr, nc + nr))
        r, c = min_weight_full_bipartite_matching(m, maximize=True)
        chosen = np.full(nr, -1, np.int64)
        real = c < nc
        chosen[r[real]] = c[real]
        # margin per assigned row: its agreement minus the best other transcript's, vectorised
        e = pd.DataFrame({"row": rows, "col": cols, "agreed": ca}).sort_values(
            ["row", "agreed"], ascending=[True, False], kind="stable")
        e["is_chosen"] = e["col"].to_numpy() == chosen[e["row"].to_numpy()]
        got = e[e["is_chosen"]].groupby("row")["agreed"].max()
        alt = e[~e["is_chosen"]].groupby("row")["agreed"].max()
        for x in np.flatnonzero(chosen >= 0):
            assign[int(ss[x])] = int(tt[chosen[x]])
            margin[int(ss[x])] = float(got.get(x, 0.0) - alt.get(x, 0.0))
    return assign, margin
