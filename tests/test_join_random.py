"""join_sessions against a brute-force reference, on many small random incidents.

The reference below restates the join's rules in the plainest Python (nested loops, one group at
a time, every one-to-one assignment enumerated) so that the vectorised implementation can be
checked on the cases it is easiest to get wrong: many sessions sharing identical arguments,
equal timestamps, a door clock running ahead, calls logged without arguments, tool-use ids
logged twice.  Also: the integer building blocks against the pandas/numpy calls they replace,
and the sparse matcher's shortcut against the plain solver.
"""

from __future__ import annotations

import statistics
from datetime import datetime, timedelta, timezone
from fractions import Fraction
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import min_weight_full_bipartite_matching

import replaybook.join as J
from replaybook.canonical import canonical_args
from replaybook.frames import CALLS, STEPS

T0 = datetime(2026, 9, 13, 10, 0, tzinfo=timezone.utc)
TOOLS = ("read", "list", "query")


# --- the reference --------------------------------------------------------------------------


def _ms(ts) -> int | None:
    return None if pd.isna(ts) else int(pd.Timestamp(ts).value // 1_000_000)


def _na(v):
    return None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v


def _rank_pairs(cands, S, C, key, off):
    """Group candidate (step, call) pairs by (transcript, session, key), both sides in (time, row)
    order.  With as many steps as calls, pair the i-th step with the i-th call; otherwise every
    item of the shorter side pairs with one of the longer, in order, the choice of the longer
    side's items least in summed |call − off(step) − step| and, of equal sums, the first in
    lexicographic order of their indices (every choice tried)."""
    groups: dict = {}
    for i, j in cands:
        g = groups.setdefault((S[i]["t"], C[j]["s"], key(i)), (set(), set()))
        g[0].add(i)
        g[1].add(j)
    out = []
    for ss, cc in groups.values():
        ss = sorted(ss, key=lambda i: (S[i]["ms"], i))
        cc = sorted(cc, key=lambda j: (C[j]["ms"], j))

        def cost(i, j):
            return abs(C[j]["ms"] - off(i) - S[i]["ms"])
        if len(ss) > len(cc):
            best = min(combinations(range(len(ss)), len(cc)),
                       key=lambda ks: (sum(cost(ss[k], j) for k, j in zip(ks, cc)), ks))
            ss = [ss[k] for k in best]
        elif len(cc) > len(ss):
            best = min(combinations(range(len(cc)), len(ss)),
                       key=lambda ks: (sum(cost(i, cc[k]) for i, k in zip(ss, ks)), ks))
            cc = [cc[k] for k in best]
        out.extend(zip(ss, cc))
    return out


def brute_join(steps, calls, window_s=60.0, min_agreed=1, max_offset_s=300.0, clock_offsets=None):
    W = int(round(window_s * 1000))
    # the clocks the investigator gave (door − transcript, ms), by transcript: its steps are found
    # on that clock only, and neither vote on the common offset nor look for one of their own
    declared = {str(t): int(round(float(sec) * 1000)) for t, sec in (clock_offsets or {}).items()}
    # a tool result whose call's own line is missing (its tool-use id on no tool_call row of any
    # transcript) stands in for its call, in the id tier only: it has no tool, arguments or time
    # of call to compare
    called = {_na(c) for k, c in zip(steps["kind"], steps["call_id"]) if k == "tool_call"}
    orphan = [k == "tool_result" and _na(c) is not None and _na(t) is not None and _na(c) not in called
              for k, c, t in zip(steps["kind"], steps["call_id"], steps["transcript_id"])]
    st = steps[((steps["kind"] == "tool_call") & steps["tool"].notna()).to_numpy(bool) | np.array(orphan, bool)]
    S = [dict(t=r.transcript_id, ms=_ms(r.ts), tool=_na(r.tool), args=_na(r.args_key), cid=_na(r.call_id),
              server=_na(r.server), seq=r.seq, orphan=r.kind == "tool_result", end=_ms(r.result_ts))
         for r in st.itertuples()]
    # how long each tool call waited for its result (ms): the door receives a call once the client
    # runs it — after the user approved it — and before its result is written
    for x in S:
        x["wait"] = (x["end"] - x["ms"] if not x["orphan"] and x["ms"] is not None and x["end"] is not None
                     and x["end"] > x["ms"] else 0)
    C = [dict(s=r.door_session, ms=_ms(r.ts), tool=_na(r.tool), args=_na(r.args_key), meta=_na(r.meta_call_id),
              seq=r.seq) for r in calls.reset_index(drop=True).itertuples()]
    # tier 1: the tool-use id; each step takes the first call logging its id, each call the
    # first step that took it
    exact, used = [], set()
    for i, s in enumerate(S):
        if s["cid"] is None:
            continue
        js = [j for j, c in enumerate(C) if c["meta"] == s["cid"]]
        if js and js[0] not in used:
            used.add(js[0])
            exact.append((i, js[0]))
    ex_s, ex_c = {i for i, _ in exact}, {j for _, j in exact}
    s_pool = [i for i, s in enumerate(S) if s["ms"] is not None and i not in ex_s and not s["orphan"]]
    c_pool = [j for j, c in enumerate(C) if c["ms"] is not None and c["tool"] is not None and j not in ex_c]
    c_args = [j for j in c_pool if C[j]["args"] is not None]
    c_noargs = [j for j in c_pool if C[j]["args"] is None]

    def key(x):
        return (x["tool"], x["args"] if x["args"] is not None else "{}")

    # clock offset: measured on the steps and calls the ids left; the ids' own where those give none
    d_ex = [C[j]["ms"] - S[i]["ms"] for i, j in exact if S[i]["ms"] is not None and C[j]["ms"] is not None
            and C[j]["tool"] is not None and not S[i]["orphan"]]
    # (every step's differences to its same-key calls within max_offset_s + the window, 64 at
    # most; the 2 s span holding the most wins, of equal ones the nearest to 0)
    diffs, M = [], int(max_offset_s * 1000)
    LIM = M  # the offset applied never lies beyond max_offset_s (spans up to a call's travel, 1 s, past it)
    if M > 0:
        M += W  # (a call's latency on top of the clocks' difference)
        for i in s_pool:
            if S[i]["t"] in declared:
                continue
            ds = sorted(C[j]["ms"] - S[i]["ms"] for j in c_args if key(C[j]) == key(S[i])
                        and abs(C[j]["ms"] - S[i]["ms"]) <= M)
            assert len(ds) <= 64  # (small incidents: the cap is not reached)
            diffs += ds
    offset = 0.0
    if d_ex:  # (the ids' offset as measured when within a call's travel, 1 s, of the limit)
        offset = float(np.median(d_ex))
        offset = offset if abs(offset) <= LIM + 1000 else float(np.clip(offset, -LIM, LIM))
    diffs.sort()
    spans = [sp for sp in ([x for x in diffs if d <= x <= d + 2000] for d in diffs)
             if abs(sp[0] + sp[-1]) / 2 <= LIM + 1000]
    if spans:
        most = max(map(len, spans))
        full = [sp for sp in spans if len(sp) == most]
        offset = float(np.clip(np.median(min(full, key=lambda sp: abs(sp[0] + sp[-1]) / 2)), -LIM, LIM))
    off = int(round(offset))

    def within(i, j):
        return abs(C[j]["ms"] - off - S[i]["ms"]) <= W

    def ids_allow(i, j):  # a call that logged another tool-use id than the step's never agrees with it
        return S[i]["cid"] is None or C[j]["meta"] is None or S[i]["cid"] == C[j]["meta"]

    common = [i for i in s_pool if S[i]["args"] is not None and S[i]["t"] not in declared]
    vetoed = {(i, j) for i in common for j in c_args
              if key(S[i]) == key(C[j]) and within(i, j) and not ids_allow(i, j)}
    content = [p for p in _rank_pairs(
        [(i, j) for i in common for j in c_args
         if key(S[i]) == key(C[j]) and within(i, j) and ids_allow(i, j)], S, C, lambda i: key(S[i]),
        lambda i: off) if within(*p)]

    def late(i, j, o):  # beyond the window of the step's time, before its result (give or take
        return W < C[j]["ms"] - o - S[i]["ms"] <= S[i]["wait"] + min(W, 5000)  # the window, ≤ 5 s)

    def waited(first, cands, group_key, o, barred=frozenset()):
        """A step the window left without a call in every session (``first``: the window's pairs;
        ``barred``: steps another tier's window gave a call) takes, in time order, one of a
        session's calls no step of its transcript took, from ``cands`` (the calls beyond the window
        of its time, before its result); only candidate pairs agree."""
        st_, ct_ = {i for i, _ in first} | set(barred), {(j, S[i]["t"]) for i, j in first}
        free_ = [(i, j) for i, j in cands if i not in st_ and (j, S[i]["t"]) not in ct_]
        return [p for p in _rank_pairs(free_, S, C, group_key, o) if p in set(free_)]

    vetoed |= {(i, j) for i in common for j in c_args
               if key(S[i]) == key(C[j]) and late(i, j, off) and not ids_allow(i, j)}
    late_content = waited(content, [(i, j) for i in common for j in c_args if key(S[i]) == key(C[j])
                                    and late(i, j, off) and ids_allow(i, j)], lambda i: key(S[i]), lambda i: off)
    # a transcript fewer than two of whose steps agreed by id, and fewer than half of whose steps with
    # arguments agreed by content, may take a clock of its own: the fullest 2 s span of its own
    # differences (of equal ones the nearest to the common offset), when it holds ≥ max(min_agreed,
    # 2) of them, half its steps that have any same-key call and more than its pairs at the
    # common offset, and lies more than the window from the common offset; its pairs at the
    # common offset are then dropped; calls another transcript agrees with at the common offset,
    # in the session it explains, do not count (see below)
    # each transcript's differences (call − step) over its timed id pairs
    per_id: dict = {}
    for i, j in exact:
        if S[i]["ms"] is not None and C[j]["ms"] is not None and C[j]["tool"] is not None and not S[i]["orphan"]:
            per_id.setdefault(S[i]["t"], []).append(C[j]["ms"] - S[i]["ms"])
    own_off = {}
    if M > 0:
        # (the ids tell a transcript's clock where two or more timed id pairs measure it)
        by_id = {t for t, ds in per_id.items() if len(ds) >= 2}
        # a session's best transcript at the common offset: most pairs there, of equally many the
        # smaller summed |Δt|; none when two are equal in both.  A transcript's pairs in a session
        # whose best transcript is another one do not count for it (nor claim calls below)
        per = {}
        for i, j in content:
            per.setdefault((C[j]["s"], S[i]["t"]), []).append(abs(C[j]["ms"] - off - S[i]["ms"]))
        best_of = {}
        for s_ in {s_ for s_, _ in per}:
            ranked = sorted((-len(v), sum(v), t) for (ss, t), v in per.items() if ss == s_)
            if len(ranked) == 1 or ranked[0][:2] != ranked[1][:2]:
                best_of[s_] = ranked[0][2]

        top = {}  # each transcript's best (count, summed |Δt|) over its sessions
        for (s_, t), v in per.items():
            top[t] = min(top[t], (-len(v), sum(v))) if t in top else (-len(v), sum(v))

        def counts(i, j):
            return best_of.get(C[j]["s"], S[i]["t"]) == S[i]["t"]

        def own_session(i, j):  # this transcript is its session's best, and that one of its best
            v = per[(C[j]["s"], S[i]["t"])]
            return best_of.get(C[j]["s"]) == S[i]["t"] and (-len(v), sum(v)) == top[S[i]["t"]]
        at_common = {}
        for i, j in content:
            if counts(i, j):
                at_common[S[i]["t"]] = at_common.get(S[i]["t"], 0) + 1
        with_args = {}
        for i in common:
            with_args[S[i]["t"]] = with_args.get(S[i]["t"], 0) + 1
        cands = {t for t, n in with_args.items() if t not in by_id and at_common.get(t, 0) < 0.5 * n}
        # a call another (non-candidate) transcript agrees with at the common offset is no evidence
        # (only in the session that transcript is most likely joined to: its calls in a second one,
        # such as another agent's on another clock, stay evidence of that agent's clock)
        claimed = {j for i, j in content if S[i]["t"] not in cands and own_session(i, j)}
        for t in sorted(cands):
            ds, with_calls = [], 0
            for i in s_pool:
                if S[i]["t"] != t or S[i]["args"] is None:
                    continue
                di = [C[j]["ms"] - S[i]["ms"] for j in c_args if key(C[j]) == key(S[i])
                      and abs(C[j]["ms"] - S[i]["ms"]) <= M and j not in claimed]
                if di:
                    with_calls += 1
                    ds += di
            if not ds:
                continue
            ds.sort()
            spans = [sp for sp in ([x for x in ds if d <= x <= d + 2000] for d in ds)
                     if abs((sp[0] + sp[-1]) // 2) <= LIM + 1000]
            if not spans:
                continue
            most = max(map(len, spans))
            sp = min((sp for sp in spans if len(sp) == most), key=lambda sp: abs((sp[0] + sp[-1]) // 2 - off))
            own = float(np.clip(np.median(sp), -LIM, LIM))
            if (len(sp) >= max(min_agreed, 2) and len(sp) >= 0.5 * with_calls and len(sp) > at_common.get(t, 0)
                    and abs(own - off) > W):
                own_off[t] = int(round(own))

    # a transcript the tool-use ids pair takes, for its other steps, the median of those pairs'
    # differences, when at least two pairs measure it, it is not the common offset and lies within
    # max_offset_s, and fewer than half its other steps with arguments (or none: it has none)
    # agreed at the common offset
    id_off = {}
    if LIM > 0:
        for t, ds in per_id.items():
            o = int(round(statistics.median(ds)))
            if (t not in declared and len(ds) >= 2 and o != off and abs(o) <= LIM
                    and (at_common.get(t, 0) < 0.5 * with_args.get(t, 0) or not with_args.get(t, 0))):
                id_off[t] = o

    # each transcript's own clock: the one the investigator gave, else one it took
    clock = {**own_off, **id_off, **declared}
    # (the clocks above are read from the pairs within the window of their step's time alone: a
    # call that waited for the user's approval is no clock)
    content = content + late_content

    def step_off(i):
        return clock.get(S[i]["t"], off) if (i, "own") in own_pairs_steps else off

    own_pairs_steps = set()
    if clock:
        def within_own(i, j):
            return abs(C[j]["ms"] - clock[S[i]["t"]] - S[i]["ms"]) <= W

        mine = [i for i in s_pool if S[i]["args"] is not None and S[i]["t"] in clock]
        vetoed |= {(i, j) for i in mine for j in c_args if key(S[i]) == key(C[j]) and within_own(i, j)
                   and not ids_allow(i, j)}
        own_content = [p for p in _rank_pairs(
            [(i, j) for i in mine for j in c_args if key(S[i]) == key(C[j]) and within_own(i, j) and ids_allow(i, j)],
            S, C, lambda i: key(S[i]), lambda i: clock[S[i]["t"]]) if within_own(*p)]
        vetoed |= {(i, j) for i in mine for j in c_args if key(S[i]) == key(C[j])
                   and late(i, j, clock[S[i]["t"]]) and not ids_allow(i, j)}
        own_content += waited(own_content, [(i, j) for i in mine for j in c_args if key(S[i]) == key(C[j])
                                            and late(i, j, clock[S[i]["t"]]) and ids_allow(i, j)],
                              lambda i: key(S[i]), lambda i: clock[S[i]["t"]])
        own_pairs_steps = {(i, "own") for i, _ in own_content}
        content = [p for p in content if S[p[0]]["t"] not in own_off and S[p[0]]["t"] not in id_off] + own_content
    # the tool-and-time tier reads each step on its transcript's clock: its own, where it has one
    def t_off(i):
        return clock.get(S[i]["t"], off)

    def within_t(i, j):
        return abs(C[j]["ms"] - t_off(i) - S[i]["ms"]) <= W

    tool = []
    if c_noargs or any(S[i]["args"] is None for i in s_pool):
        # a step or call a content pair holds is taken in that pair's (transcript, session) only
        cs_, cc_ = {(i, C[j]["s"]) for i, j in content}, {(j, S[i]["t"]) for i, j in content}

        def free(i, j):
            return (i, C[j]["s"]) not in cs_ and (j, S[i]["t"]) not in cc_
        vetoed |= {(i, j) for i in s_pool for j in c_noargs if S[i]["tool"] == C[j]["tool"] and within_t(i, j)
                   and free(i, j) and not ids_allow(i, j)}
        vetoed |= {(i, j) for i in s_pool if S[i]["args"] is None for j in c_args
                   if S[i]["tool"] == C[j]["tool"] and within_t(i, j) and free(i, j) and not ids_allow(i, j)}
        cands = {(i, j) for i in s_pool for j in c_noargs
                 if S[i]["tool"] == C[j]["tool"] and within_t(i, j) and free(i, j) and ids_allow(i, j)}
        cands |= {(i, j) for i in s_pool if S[i]["args"] is None for j in c_args
                  if S[i]["tool"] == C[j]["tool"] and within_t(i, j) and free(i, j) and ids_allow(i, j)}
        # (a group pairs by rank: only a candidate pair agrees — not a step and a call with other
        # arguments, nor a pair the ids veto, met there through other candidates of the group)
        tool = [p for p in _rank_pairs(sorted(cands), S, C, lambda i: S[i]["tool"], t_off) if within_t(*p)
                and p in cands]

        def late_t(i, j):
            return late(i, j, t_off(i))
        vetoed |= {(i, j) for i in s_pool for j in c_noargs if S[i]["tool"] == C[j]["tool"] and late_t(i, j)
                   and free(i, j) and not ids_allow(i, j)}
        vetoed |= {(i, j) for i in s_pool if S[i]["args"] is None for j in c_args
                   if S[i]["tool"] == C[j]["tool"] and late_t(i, j) and free(i, j) and not ids_allow(i, j)}
        cands = {(i, j) for i in s_pool for j in c_noargs
                 if S[i]["tool"] == C[j]["tool"] and late_t(i, j) and free(i, j) and ids_allow(i, j)}
        cands |= {(i, j) for i in s_pool if S[i]["args"] is None for j in c_args
                  if S[i]["tool"] == C[j]["tool"] and late_t(i, j) and free(i, j) and ids_allow(i, j)}
        near_content = {i for i, j in content if abs(C[j]["ms"] - step_off(i) - S[i]["ms"]) <= W}
        tool += waited(tool, sorted(cands), lambda i: S[i]["tool"], t_off, near_content)
    pairs = [(i, j, "content") for i, j in content] + [(i, j, "tool_time") for i, j in tool] + \
            [(i, j, "meta_id") for i, j in exact]
    # agreement per (transcript, session); a call that waited beyond the window of its step's time
    # is as near as the window's edge
    agg: dict = {}
    applied, late_pairs = {}, set()
    for i, j, how in pairs:
        a = agg.setdefault((S[i]["t"], C[j]["s"]), [0, 0, []])
        a[0] += 1
        a[1] += how == "meta_id"
        applied[(i, j)] = {"content": step_off(i), "tool_time": t_off(i)}.get(how, off)
        d = C[j]["ms"] - applied[(i, j)] - S[i]["ms"]
        if how != "meta_id" and d > W:  # (a call that waited: no nearer than the window's edge)
            late_pairs.add((i, j))
            a[2].append(W)
        else:
            a[2].append(abs(d))
    scores = {k: (v[0], v[1], statistics.median(v[2])) for k, v in agg.items()}
    edges = {k: v for k, v in scores.items() if v[0] >= min_agreed}
    sessions = sorted({c["s"] for c in C})

    def best(forbid=None):
        """Every one-to-one assignment: the best (total agreement, -total proximity penalty).  The
        penalties are summed as exact fractions: two assignments whose medians add up alike are
        tied, which float sums (0.2 against 1/30 + 1/6) would tell apart by their rounding."""
        out = []

        def rec(k, used_t, tot, pen, chosen):
            if k == len(sessions):
                out.append((tot, -pen, dict(chosen)))
                return
            s = sessions[k]
            rec(k + 1, used_t, tot, pen, chosen)
            for (t, s2), (a, _, m) in edges.items():
                if s2 == s and t not in used_t and (t, s) != forbid:
                    chosen[s] = t
                    rec(k + 1, used_t | {t}, tot + a, pen + min(Fraction(m) / max(W, 1), 1), chosen)
                    del chosen[s]
        rec(0, frozenset(), 0, Fraction(0), {})
        return out

    alls = best()
    top = max(x[:2] for x in alls)
    winners = [x[2] for x in alls if x[:2] == top]
    # of exactly tied assignments, the one pairing in order of first activity: the sessions by
    # first call (then id), each taking the transcript earliest by first tool step (then id) that
    # some best assignment still gives it — no transcript only when none does
    inf = float("inf")
    first_s, first_t = {}, {}
    for c in C:
        if c["ms"] is not None:
            first_s[c["s"]] = min(first_s.get(c["s"], inf), c["ms"])
    for x in S:
        if x["ms"] is not None:
            first_t[x["t"]] = min(first_t.get(x["t"], inf), x["ms"])
    by_first = sorted(sessions, key=lambda s: (first_s.get(s, inf), s))
    t_rank = {t: k for k, t in enumerate(sorted({t for t, _ in edges}, key=lambda t: (first_t.get(t, inf), t)))}
    chosen = min(winners, key=lambda w: [t_rank[w[s]] if s in w else inf for s in by_first])
    # door-bound servers: the servers of steps that agree with some call (in any session, any
    # tier), and of steps some door call has the tool and arguments of, at any time (the same
    # tool where the call or the step logged no arguments); every server when there are none
    door = {S[i]["server"] for i, _, _ in pairs}
    door |= {s["server"] for s in S if not s["orphan"] and s["tool"] is not None and any(
        c["s"] is not None and c["tool"] == s["tool"]
        and (c["args"] is None or s["args"] is None or c["args"] == s["args"]) for c in C)}
    door_servers = sorted(x for x in door if x is not None)
    return dict(S=S, C=C, pairs=pairs, scores=scores, offset=off, applied=applied, late=late_pairs, best_total=top[0], winners=winners, chosen=chosen,
                edges=edges, best=best, sessions=sessions, vetoed=vetoed, door_servers=door_servers)


def continuations(ref, one: dict, min_agreed: int) -> dict:
    """The sessions that continue a transcript the one-to-one assignment ``one`` gave another
    session, restated: an unassigned session whose best-agreeing transcript (no other as good)
    is assigned, agrees on ≥ max(min_agreed, 2) steps (≥ min_agreed when one of them agrees by
    tool-use id: the id proves the conversation) and half its calls, and whose calls (first
    to last) and agreeing steps lie apart in time from those of each of that transcript's
    sessions (the assigned one, then continuations taken before: by agreement, then name).
    Returns {session: (transcript, the session it continues)}."""
    S, C = ref["S"], ref["C"]
    steps_span, calls_span, n_calls = {}, {}, {}
    for i, j, _ in ref["pairs"]:
        k, ms = (S[i]["t"], C[j]["s"]), S[i]["ms"]
        lo, hi = steps_span.get(k, (ms, ms))
        steps_span[k] = (min(lo, ms), max(hi, ms))
    for c in C:
        n_calls[c["s"]] = n_calls.get(c["s"], 0) + 1
        if c["ms"] is not None:
            lo, hi = calls_span.get(c["s"], (c["ms"], c["ms"]))
            calls_span[c["s"]] = (min(lo, c["ms"]), max(hi, c["ms"]))
    cands = []
    for s in sorted(n_calls):
        if s in one:
            continue
        mine = {t: a for (t, s2), (a, _, _) in ref["scores"].items() if s2 == s}
        if not mine:
            continue
        top = max(mine.values())
        best = [t for t, a in mine.items() if a == top]
        by_id = len(best) == 1 and ref["scores"][(best[0], s)][1] > 0
        enough = top >= max(min_agreed, 2) or (by_id and top >= min_agreed)
        if len(best) == 1 and best[0] in one.values() and enough and top >= 0.5 * n_calls[s]:
            cands.append((-top, s, best[0]))

    def apart(a, b):
        return a[1] < b[0] or b[1] < a[0]

    sess_of = {t: [s for s, t2 in one.items() if t2 == t] for t in set(one.values())}
    out = {}
    for _, s, t in sorted(cands):
        if all((t, o) in steps_span and apart(steps_span[(t, s)], steps_span[(t, o)])
               and apart(calls_span[s], calls_span[o]) for o in sess_of[t]):
            out[s] = (t, [o for o, t2 in one.items() if t2 == t][0])
            sess_of[t].append(s)
    return out


def resumed(steps, calls, one: dict) -> dict:
    """The sessions the one-to-one assignment ``one`` gave a transcript that resumes another's,
    restated: a transcript resumes the one holding the line its first main-agent line with a
    uuid names as parent (the first row with that uuid; not itself; two naming each other:
    neither; Claude Code transcripts only); followed back to the nearest transcript with a
    session in ``one``, that session is continued when it is another and its last call (or
    answer) is before this session's first call.  Returns {session: the session it continues}."""
    first, owner = {}, {}
    for r in steps.itertuples():
        if _na(r.agent_id) is not None or _na(r.uuid) is None or r.client != "claude-code":
            continue
        first.setdefault(r.transcript_id, _na(r.parent_uuid))
        owner.setdefault(r.uuid, r.transcript_id)
    res = {t: owner[p] for t, p in first.items() if p is not None and p in owner and owner[p] != t}
    res = {t: o for t, o in res.items() if res.get(o) != t}
    span = {}
    for r in calls.itertuples():
        lo, hi = span.get(r.door_session, (r.ts, r.ts))
        end = r.ts if pd.isna(r.ts_end) else max(r.ts, r.ts_end)
        span[r.door_session] = (min(lo, r.ts), max(hi, end))
    session_of = {t: s for s, t in one.items()}
    out = {}
    for s, t in one.items():
        seen = {t}
        while t in res and res[t] not in seen:
            t = res[t]
            seen.add(t)
            if t in session_of:
                if session_of[t] != s and span[s][0] > span[session_of[t]][1]:
                    out[s] = session_of[t]
                break
    return out


# --- random incidents -----------------------------------------------------------------------


def random_incident(rng, clocks: bool = False, orphans: bool = False, servers: bool = False,
                    resumes: bool = False, copies: bool = False, waits: bool = False):
    """Steps and calls of a small random incident; with ``clocks``, each transcript's machine
    has a clock of its own (differing by up to ±150 s), and some steps line up by coincidence
    with another session's call at the door's common skew; with ``orphans``, some tool calls'
    lines are missing and only their results remain (no tool, no arguments, written a little
    after the call); with ``servers``, some steps are on other servers than the door's: one
    whose steps repeat door calls a day off (a door session no clock within reach joins), one
    of tools no door call has, and built-in tools; with ``resumes``, every step has a uuid and
    some transcripts' first step names as its parent a step of another transcript (a resumed
    conversation), of its own, or one no step has; with ``copies``, no call logs a tool-use id,
    and a session's calls or a transcript's steps may be repeated under another id (sorting
    before or after the others), at the same times or with one call (step) of their own a little
    before: exact ties, settled by first activity or by id; with ``waits``, tool calls have a result
    time, and some calls waited for their user's approval: the door received them a minute to
    three after the step asked, before its result (or, now and then, a few seconds after it)."""
    n_t, n_s, n_keys = int(rng.integers(1, 5)), int(rng.integers(1, 5)), int(rng.integers(1, 4))
    grid = int(rng.choice([1, 500, 1000]))  # coarse clocks make equal timestamps common
    skew = int(rng.choice([0, 400, 1200, 90_000]))
    t_skew = [int(rng.choice([0, 0, 70_000, -90_000, 150_000])) if clocks else 0 for _ in range(n_t + 1)]
    keys = [(TOOLS[k % 3], {"path": f"p{k // 3}"}) for k in range(n_keys)]
    steps, calls = [], []
    result_at = {}  # tool-use id → when its result was written (ms)
    seq = 0
    for s in range(n_s):  # each session copies some transcript (or none), with noise
        t = int(rng.integers(0, n_t + 1))
        n = int(rng.integers(1, 6))
        base = int(rng.integers(0, 120)) * 1000
        for _ in range(n):
            tool, args = keys[int(rng.integers(0, n_keys))]
            ms = base + int(rng.integers(0, 20)) * grid
            tid = f"toolu_{seq:04d}"
            if t < n_t and rng.random() > 0.15:
                steps.append((f"t{t}", ms, tool, args, tid, rng.random() < 0.1))
                if orphans and rng.random() < 0.25:  # only the result remains
                    steps[-1] = (f"t{t}", ms + int(rng.integers(0, 3000)), None, None, tid, "result")
            meta = tid if rng.random() < 0.2 else None
            if meta is None and rng.random() < 0.05:  # an id some other call (or none) also logs
                meta = f"toolu_{int(rng.integers(0, seq + 1)):04d}"
            wait = 0
            if waits:
                r = rng.random()
                if r < 0.3:  # approved late: the call a minute or more after the step, its result after it
                    wait = int(rng.integers(61, 200)) * 1000
                    # (now and then written a little before the door logged the call: a clock's
                    # jitter, or beyond it — then the call did not wait for it)
                    result_at[tid] = ms + wait + int(rng.integers(-10, 30)) * 1000
                elif r < 0.8:  # run at once
                    result_at[tid] = ms + int(rng.integers(0, 4000))
            calls.append((f"s{s}", ms + wait + skew + t_skew[t] + int(rng.integers(0, 3)) * grid, tool, args, meta,
                          rng.random() < 0.1))
            seq += 1
    if copies:
        calls = [c[:4] + (None,) + c[5:] for c in calls]
        for _ in range(int(rng.integers(0, 3))):  # a session's calls again, under another id
            src = f"s{int(rng.integers(0, n_s))}"
            name = f"{rng.choice(['a', 'z'])}-copy{len(calls)}"
            mine = [c for c in calls if c[0] == src]
            if rng.random() < 0.4:  # a call of its own first (a tool no transcript has)
                calls.append((name, min(c[1] for c in mine) - int(rng.integers(1, 3)) * 500, "ping", {"n": 1},
                              None, False))
            calls += [(name,) + c[1:] for c in mine]
        for _ in range(int(rng.integers(0, 3))):  # a transcript's steps again, under another id
            src = f"t{int(rng.integers(0, n_t))}"
            name = f"{rng.choice(['a', 'z'])}-copy{len(steps)}"
            mine = [x for x in steps if x[0] == src]
            if not mine:
                continue
            if rng.random() < 0.4:  # a step of its own first (a tool no door call has)
                steps.append((name, min(x[1] for x in mine) - int(rng.integers(1, 3)) * 500, "note",
                              {"text": "x"}, f"toolu_e{len(steps)}", False))
            steps += [(name, x[1], x[2], x[3], f"{x[4]}c{len(steps)}", x[5]) for x in mine]
    if clocks and calls and rng.random() < 0.8:  # coincidences: a step lined up with some call at the
        for _ in range(int(rng.integers(1, 4))):  # door's common skew, whatever its own machine's clock
            s_, ms_, tool, args, _m, _n = calls[int(rng.integers(0, len(calls)))]
            steps.append((f"t{int(rng.integers(0, n_t))}", ms_ - skew, tool, args, f"toolu_c{seq}", False))
            seq += 1
    for _ in range(int(rng.integers(0, 4))):  # stray steps
        tool, args = keys[int(rng.integers(0, n_keys))]
        steps.append((f"t{int(rng.integers(0, n_t))}", int(rng.integers(0, 150)) * 1000, tool, args,
                      f"toolu_x{int(rng.integers(0, 99))}", False))
    steps = [x + ("door",) for x in steps]
    if servers:
        for _ in range(int(rng.integers(0, 3))):  # a door call repeated a day before (no door session
            _s, ms_, tool, args, _m, noargs = calls[int(rng.integers(0, len(calls)))]  # in reach has it)
            steps.append((f"t{int(rng.integers(0, n_t))}", ms_ - 86_400_000, tool, args, f"toolu_g{seq}",
                          rng.random() < 0.2, "gate"))
            seq += 1
        for _ in range(int(rng.integers(0, 3))):  # a tool no door call has, and built-in tools
            steps.append((f"t{int(rng.integers(0, n_t))}", int(rng.integers(0, 150)) * 1000, "note",
                          {"text": "x"}, f"toolu_n{seq}", False, "local"))
            steps.append((f"t{int(rng.integers(0, n_t))}", int(rng.integers(0, 150)) * 1000, "Read",
                          {"path": "p0"}, f"toolu_b{seq}", False, None))
            seq += 1
    parent = {}
    if resumes and steps:
        firsts = {}
        for i, x in enumerate(steps):
            firsts.setdefault(x[0], i)
        for t, i in firsts.items():
            r = rng.random()
            if r < 0.5:  # another transcript's step (or its own, or none)
                parent[i] = f"u{int(rng.integers(0, len(steps)))}"
            elif r < 0.6:
                parent[i] = "u-none"
    st = STEPS.build([dict(transcript_id=t, client="claude-code", seq=i, ts=T0 + timedelta(milliseconds=ms),
                           kind="tool_call", tool_raw=f"mcp__{server}__{tool}" if server else tool, server=server,
                           tool=tool, call_id=cid, arguments=args, args_key=None if noargs else canonical_args(args),
                           result_ts=T0 + timedelta(milliseconds=result_at[cid]) if cid in result_at else None)
                      if noargs != "result" else
                      dict(transcript_id=t, client="claude-code", seq=i, ts=T0 + timedelta(milliseconds=ms),
                           kind="tool_result", call_id=cid, text="a result")
                      for i, (t, ms, tool, args, cid, noargs, server) in enumerate(steps)])
    if resumes:
        st["uuid"] = pd.array([f"u{i}" for i in range(len(st))], dtype="string")
        st["parent_uuid"] = pd.array([parent.get(i) for i in range(len(st))], dtype="string")
    ca = CALLS.build([dict(door_session=s, agent="analyst", seq=i + 1, ts=T0 + timedelta(milliseconds=ms), tool=tool,
                           arguments=args, args_key=None if noargs else canonical_args(args), decision="allow",
                           meta_call_id=meta)
                      for i, (s, ms, tool, args, meta, noargs) in enumerate(calls)])
    return st, ca


@pytest.mark.parametrize("seed,clocks,orphans,servers", [(s, False, False, False) for s in range(12)]
                         + [(s, True, False, False) for s in range(100, 124)]
                         + [(s, False, True, False) for s in range(200, 212)]
                         + [(s, True, True, False) for s in range(300, 306)]
                         + [(s, True, False, True) for s in [*range(400, 412), 32]]
                         + [(s, False, False, False) for s in range(500, 512)]
                         + [(s, False, False, False) for s in range(600, 612)]
                         + [(s, True, False, False) for s in range(700, 706)]
                         + [(s, False, False, False) for s in range(800, 812)]
                         + [(s, True, False, False) for s in range(900, 908)]
                         + [(s, False, True, False) for s in range(1000, 1004)]
                         + [(s, True, False, True) for s in range(1050, 1054)])
def test_join_agrees_with_brute_force(seed, clocks, orphans, servers):
    rng = np.random.default_rng(seed)
    resumes = 500 <= seed < 600
    copies = 600 <= seed < 800
    waits = seed >= 800  # (calls that waited for their user's approval)
    ties = late = 0
    for _ in range(12):
        steps, calls = random_incident(rng, clocks, orphans, servers, resumes, copies, waits)
        window_s = float(rng.choice([0.5, 2.0, 60.0]))
        min_agreed = int(rng.choice([1, 1, 2]))
        max_offset_s = float(rng.choice([0.0, 300.0]))
        # with servers: a clock some transcript's machine may have, given for one or two of them
        # (and an id no transcript has, which changes nothing)
        clock_offsets = ({f"t{int(rng.integers(0, 4))}": float(rng.choice([0, 70.0, -90.0, 150.4]))
                          for _ in range(int(rng.integers(0, 3)))} | {"t-none": 5.0}) if servers else None
        res = J.join_sessions(steps, calls, window_s=window_s, min_agreed=min_agreed, max_offset_s=max_offset_s,
                              clock_offsets=clock_offsets)
        ref = brute_join(steps, calls, window_s, min_agreed, max_offset_s, clock_offsets)
        S, C = ref["S"], ref["C"]
        # scores: every (session, transcript) pair with any agreement
        got = {(r.transcript_id, r.door_session): (int(r.agreed), int(r.exact), float(r.median_abs_delta_ms))
               for r in res.scores.itertuples()}
        assert got == {k: (a, e, float(m)) for k, (a, e, m) in ref["scores"].items()}
        # the assignment: maximal total agreement, and the unique best one when there is one
        sess = res.sessions.set_index("door_session")
        # (one-to-one: the sessions continuing nothing, or the session of another transcript, which
        # theirs resumes)
        one = {s: t for s, t in res.assignments().items() if t is not None and (
            pd.isna(sess.loc[s, "continues"]) or sess.loc[sess.loc[s, "continues"], "transcript_id"] != t)}
        assert sum(ref["edges"][(t, s)][0] for s, t in one.items()) == ref["best_total"]
        # the best one, and of exactly tied ones the one in order of first activity
        assert one == ref["chosen"]
        ties += len(ref["winners"]) > 1
        assert len(set(one.values())) == len(one)
        # sessions continuing a transcript another session has, given that assignment
        cont = continuations(ref, one, min_agreed)
        assert {s: (t, sess.loc[s, "continues"]) for s, t in res.assignments().items() if s not in one
                and t is not None} == cont
        # sessions whose transcript resumes another's continue that one's session
        assert {s: sess.loc[s, "continues"] for s in one if not pd.isna(sess.loc[s, "continues"])} == \
            resumed(steps, calls, one)
        asg = {**one, **{s: t for s, (t, _) in cont.items()}}
        # calls that agree with a step of their session's transcript but logged another id
        conflicts = {s: len({j for i, j in ref["vetoed"] if C[j]["s"] == s and S[i]["t"] == t})
                     for s, t in asg.items()}
        assert {r.door_session: int(r.id_conflicts) for r in res.sessions.itertuples()
                if r.door_session in asg} == conflicts
        # agreeing pairs of the assigned sessions, tier by tier
        want = sorted((C[j]["s"], S[i]["t"], S[i]["seq"], C[j]["seq"], how) for i, j, how in ref["pairs"]
                      if asg.get(C[j]["s"]) == S[i]["t"])
        have = sorted(zip(res.pairs.door_session, res.pairs.transcript_id, res.pairs.step_seq, res.pairs.call_seq,
                          res.pairs.how))
        assert have == want
        assert list(res.pairs.door_session) == sorted(res.pairs.door_session)
        # exact margins (small components): best total minus best total without this pair; a
        # continuation's: its agreement minus the next-best transcript's
        for s, (t, _) in cont.items():
            others = [a for (t2, s2), (a, _, _) in ref["scores"].items() if s2 == s and t2 != t]
            assert sess.loc[s, "margin"] == ref["scores"][(t, s)][0] - max(others, default=0)
            assert sess.loc[s, "status"] == "matched" and sess.loc[s, "agreed"] == ref["scores"][(t, s)][0]
        continued = {first for _, first in cont.values()}
        for s in continued:
            others = [a for (t2, s2), (a, _, _) in ref["scores"].items() if s2 == s and t2 != one[s]]
            assert sess.loc[s, "margin"] == ref["scores"][(one[s], s)][0] - max(others, default=0)
        for s, t in one.items():
            if s in continued:
                continue
            alt = max(x[0] for x in ref["best"](forbid=(t, s)))
            assert sess.loc[s, "margin"] == ref["best_total"] - alt
            assert sess.loc[s, "status"] == ("ambiguous" if ref["best_total"] - alt <= 0 else "matched")
            assert sess.loc[s, "agreed"] == ref["edges"][(t, s)][0]
        # residuals
        claimed = {j for i, j, _ in ref["pairs"] if asg.get(C[j]["s"]) == S[i]["t"]}
        # a call and a step one tool-use id pairs, left in no link: named together
        session_of = {t: s for s, t in one.items()}
        assert sorted((r.door_session, r.call_seq, r.transcript_id, r.step_seq, r.conversation,
                       None if pd.isna(r.conversation_session) else r.conversation_session)
                      for r in res.split_ids.itertuples()) == sorted(
            (C[j]["s"], C[j]["seq"], S[i]["t"], S[i]["seq"], S[i]["t"], session_of.get(S[i]["t"]))
            for i, j, how in ref["pairs"] if how == "meta_id" and j not in claimed)
        assert len(res.unclaimed_calls) == len(C) - len(claimed)
        assert sorted(res.unclaimed_calls.seq) == sorted(C[j]["seq"] for j in range(len(C)) if j not in claimed)
        # a result standing in for its call: its pairs are the "tool_result" ones, and count apart
        assert sorted(zip(res.pairs.step_seq, res.pairs.step_kind)) == sorted(
            (S[i]["seq"], "tool_result" if S[i]["orphan"] else "tool_call") for i, j, _ in ref["pairs"]
            if asg.get(C[j]["s"]) == S[i]["t"])
        assert {r.door_session: int(r.by_result_id) for r in res.sessions.itertuples() if r.door_session in asg} == {
            s: sum(1 for i, j, _ in ref["pairs"] if C[j]["s"] == s and S[i]["t"] == t and S[i]["orphan"])
            for s, t in asg.items()}
        # the transcript's own residual: door-bound tool calls no call claims (results are none)
        claimed_s = {i for i, j, _ in ref["pairs"] if asg.get(C[j]["s"]) == S[i]["t"]}
        assert res.door_servers == ref["door_servers"]

        def door_bound(i, s):  # (a step a door call claims went through the door, whatever its server)
            on_door = s["server"] in ref["door_servers"] if ref["door_servers"] else s["server"] is not None
            return (on_door or i in claimed_s) and not s["orphan"]
        assert len(res.unmatched_steps) == sum(1 for i, s in enumerate(S) if s["t"] in asg.values()
                                               and door_bound(i, s) and i not in claimed_s)
        assert {r.door_session: int(r.transcript_tool_steps) for r in res.sessions.itertuples()
                if r.door_session in asg} == {s_: sum(1 for i, x in enumerate(S) if x["t"] == t and door_bound(i, x))
                                              for s_, t in asg.items()}
        if servers:  # (t-none always, and a tN this incident has no step of)
            unknown = [t for t in clock_offsets if t not in set(steps["transcript_id"])]
            assert "t-none" in unknown and res.warnings == [J.clock_offsets_warning(unknown)]
        else:
            assert res.warnings == []
        # the clock offset is read from the tool calls' pairs (a result's time is when its call ended)
        # within the window of their step's time (a call that waited for its approval is no clock;
        # where every pair waited, the offset applied to them)
        mine = [(i, j) for i, j, _ in ref["pairs"] if asg.get(C[j]["s"]) == S[i]["t"] and not S[i]["orphan"]]
        clocked = [C[j]["ms"] - S[i]["ms"] for i, j in mine if (i, j) not in ref["late"]]
        late += len(mine) - len(clocked)
        if not mine:
            assert res.offset_ms is None
        elif clocked:
            assert res.offset_ms == pytest.approx(float(np.median(clocked)))
        else:
            assert res.offset_ms == pytest.approx(float(np.median([ref["applied"][p] for p in mine])))
        if copies:  # the rows in another order: the same links, the same verdicts
            sh = J.join_sessions(steps.iloc[rng.permutation(len(steps))].reset_index(drop=True),
                                 calls.iloc[rng.permutation(len(calls))].reset_index(drop=True),
                                 window_s=window_s, min_agreed=min_agreed, max_offset_s=max_offset_s,
                                 clock_offsets=clock_offsets)
            cols = ["door_session", "transcript_id", "status", "margin", "agreed", "continues"]
            pd.testing.assert_frame_equal(sh.sessions[cols], res.sessions[cols])
    if copies:  # (the copies make exact ties: the rule, not the solver, chose among them)
        assert ties >= 2
    if waits and not orphans:  # (calls that waited were paired, and tested)
        assert late >= 1


def test_assignments_whose_medians_add_up_alike_are_tied_whatever_the_float_sums_say():
    """Two sessions both agree best with t2 (3 steps: 2 s and 0 s median |Δt|) and once with t1
    (12 s and 10 s).  Either way round the total agreement is 4 and the medians add up to 12 s, so
    neither assignment is nearer: a tie, each session's margin 0.  Summed as floats the penalties
    differ in their last bit (1/30 + 1/6 = 0.19999999999999998 against 0.2): the reference sums
    them exactly so as not to call one of them the only best, and the join takes the one the
    rule gives: s0 calls first (208 s, s2 at 214 s) and t2 steps first (46 s, t1 at 50 s), so s0
    is t2's and s2 t1's."""
    p0 = {"path": "p0"}
    steps = STEPS.build([dict(transcript_id=t, client="claude-code", seq=i, ts=T0 + timedelta(seconds=sec),
                              kind="tool_call", tool_raw=f"mcp__door__{tool}", server="door", tool=tool,
                              call_id=cid, arguments=p0, args_key=canonical_args(p0))
                         for i, (t, sec, tool, cid) in enumerate([
                             ("t2", 46, "list", "toolu_1"), ("t2", 62, "list", "toolu_2"), ("t2", 53, "read", "toolu_6"),
                             ("t2", 60, "list", "toolu_7"), ("t2", 60, "read", "toolu_x25"),
                             ("t1", 50, "list", "toolu_x69")])])
    calls = CALLS.build([dict(door_session=s, agent="analyst", seq=i + 1, ts=T0 + timedelta(seconds=sec), tool=tool,
                              arguments=p0, args_key=canonical_args(p0), decision="allow", meta_call_id=meta)
                         for i, (s, sec, tool, meta) in enumerate([
                             ("s0", 222, "list", None), ("s0", 208, "list", "toolu_1"), ("s0", 224, "list", "toolu_2"),
                             ("s2", 220, "read", None), ("s2", 214, "read", "toolu_6"), ("s2", 220, "list", None)])])
    res = J.join_sessions(steps, calls)
    assert sorted(zip(res.scores.door_session, res.scores.transcript_id, res.scores.agreed,
                      res.scores.median_abs_delta_ms)) == [("s0", "t1", 1, 12000.0), ("s0", "t2", 3, 2000.0),
                                                            ("s2", "t1", 1, 10000.0), ("s2", "t2", 3, 0.0)]
    ref = brute_join(steps, calls)
    assert ref["best_total"] == 4
    assert sorted(ref["winners"], key=lambda w: w["s0"]) == [{"s0": "t1", "s2": "t2"}, {"s0": "t2", "s2": "t1"}]
    assert res.assignments() == ref["chosen"] == {"s0": "t2", "s2": "t1"}
    s = res.sessions.set_index("door_session")
    assert s.margin.to_dict() == {"s0": 0.0, "s2": 0.0}
    assert s.status.to_dict() == {"s0": "ambiguous", "s2": "ambiguous"}


def test_many_sessions_repeating_the_same_call_at_the_same_time():
    """Twenty sessions issue the same call in the same millisecond as their transcripts do; each
    also reads its own file.  Only the own file can tell them apart — and does."""
    n = 20
    st, ca = [], []
    for i in range(n):
        st += [dict(transcript_id=f"t{i:02d}", seq=0, ts=T0, tool="list", args_key='{"path":"demo/"}'),
               dict(transcript_id=f"t{i:02d}", seq=1, ts=T0 + timedelta(seconds=1), tool="read",
                    args_key=f'{{"path":"f{i}"}}')]
        ca += [dict(door_session=f"s{i:02d}", seq=1, ts=T0 + timedelta(milliseconds=300), tool="list",
                    args_key='{"path":"demo/"}', decision="allow"),
               dict(door_session=f"s{i:02d}", seq=2, ts=T0 + timedelta(milliseconds=1300), tool="read",
                    args_key=f'{{"path":"f{i}"}}', decision="allow")]
    steps = STEPS.build([dict(r, kind="tool_call", server="door", call_id=None) for r in st])
    calls = CALLS.build(ca)
    res = J.join_sessions(steps, calls)
    assert res.assignments() == {f"s{i:02d}": f"t{i:02d}" for i in range(n)}
    assert (res.sessions.agreed == 2).all()
    assert res.offset_ms == pytest.approx(300.0)
    # every session agrees with every transcript on the shared call
    assert len(res.scores) == n * n


# --- building blocks --------------------------------------------------------------------------


@pytest.mark.parametrize("sort", [False, True])
@pytest.mark.parametrize("runs", [False, True])
def test_codes_equal_pandas_factorize(sort, runs):
    rng = np.random.default_rng(1)
    pool = [f"v{i}" for i in range(50)]
    shared = np.array([pool[i] for i in rng.integers(0, 50, 20000)], dtype=object)  # same objects repeated
    fresh = np.array(["".join(["v", str(i)]) for i in rng.integers(0, 50, 20000)], dtype=object)  # equal, distinct
    grouped = np.array(sorted(fresh.tolist()), dtype=object)
    with_na = shared.copy()
    with_na[rng.random(20000) < 0.1] = pd.NA
    with_none = fresh.copy()
    with_none[::7] = None
    for v in (shared, fresh, grouped, with_na, with_none, shared[:10], np.array([], dtype=object)):
        c, u = J._codes(v, sort=sort, runs=runs)
        c2, u2 = pd.factorize(v, sort=sort)
        assert np.array_equal(c, c2) and list(u) == list(u2)
    for parts in ([shared, fresh], [shared[:3000], with_na, shared[5:9]], [fresh[:10], shared]):
        c, u = J._codes_parts(parts, sort=sort)
        c2, u2 = pd.factorize(np.concatenate(parts), sort=sort)
        assert np.array_equal(c, c2) and list(u) == list(u2)


def test_stable_order_and_isna():
    rng = np.random.default_rng(2)
    for key in (rng.integers(0, 5, 1000), rng.integers(-(2**40), 2**40, 1000),
                rng.integers(-(2**62), 2**62, 1000), np.array([], np.int64), np.array([3])):
        assert np.array_equal(J._stable_order(key.astype(np.int64)), np.argsort(key, kind="stable"))
    s = pd.Series(pd.array(["a", None, "b", None] * 1000, dtype=pd.StringDtype("python")))
    assert np.array_equal(J._isna_str(s), s.isna().to_numpy())
    o = pd.Series(["a", None, np.nan, "b"] * 1000, dtype=object)
    assert np.array_equal(J._isna_str(o), o.isna().to_numpy())


@pytest.mark.parametrize("sizes", [[5, 3, 3, 40], [2**40, 3, 2**30, 7]])  # packed in 63 bits; lexsort
@pytest.mark.parametrize("n_group", [0, 1, 2])
def test_least_per_group_is_the_first_row_of_each_group_in_sorted_order(sizes, n_group):
    rng = np.random.default_rng(len(sizes) + n_group + sizes[0] % 97)
    rows = {tuple(int(rng.integers(0, min(z, 6 if i < 2 else z))) for i, z in enumerate(sizes)) for _ in range(400)}
    cols = [np.array(c, np.int64) for c in zip(*sorted(rows, key=lambda r: rng.random()))]
    want = {}
    for r in sorted(rows):  # the least row of each group (n_group 0: every row), groups in order
        want.setdefault(r[:n_group] if n_group else r, r)
    got = J._least_per_group(cols, sizes, n_group)
    assert [tuple(int(v) for v in r) for r in zip(*got)] == list(want.values())
    if n_group:
        assert len(got[0]) < len(rows)  # (groups of several rows were there to reduce)


@pytest.mark.parametrize("n", [10, J._POLARS_SORT_MIN - 1, J._POLARS_SORT_MIN, 300_000])
def test_sorted_gives_numpy_sorts_values_writable_and_leaves_a_large_input_alone(n):
    rng = np.random.default_rng(n)
    # duplicates, negatives and the int64 extremes, as the packed keys and offsets hold them
    key = np.concatenate([rng.integers(-(2**62), 2**62, n // 2), rng.integers(0, 7, n - n // 2)])
    key[: min(n, 2)] = [np.iinfo(np.int64).min, np.iinfo(np.int64).max][: min(n, 2)]
    before = key.copy()
    out = J._sorted(key)
    assert out.dtype == np.int64 and out.flags.writeable
    assert np.array_equal(out, np.sort(before))
    out &= 3  # callers mask the packed position bits in place
    if n >= J._POLARS_SORT_MIN and J.pl is not None:
        assert np.array_equal(key, before)  # a new array: the input is left as it was
    stable = J._stable_order(before)
    assert np.array_equal(stable, np.argsort(before, kind="stable"))


def test_first_equal_matches_a_dict_lookup_even_with_lone_surrogates():
    a = np.array(["x1", "x2", "x\ud800", "x3", "x1"], dtype=object)
    b = np.array(["x3", "x1", "x\ud801", "x1", "x\ud800"], dtype=object)
    rows_a, rows_b = np.arange(5) * 10, np.arange(5) * 100
    i, j, miss = J._first_equal(a, b, rows_a, rows_b)
    assert list(i) == [0, 20, 30, 40] and list(j) == [100, 400, 0, 100]
    assert list(miss) == [200]  # "x\ud801": no string of a
    i, j, miss = J._first_equal(a[[0, 1, 3, 4]], b[[0, 1, 3]], rows_a[[0, 1, 3, 4]], rows_b[[0, 1, 3]])
    assert list(i) == [0, 30, 40] and list(j) == [100, 0, 100] and list(miss) == []
    # the polars path and the dict path agree on what matched nothing
    i, j, miss = J._first_equal(a[:2], b[:2], rows_a[:2], rows_b[:2])
    assert list(i) == [0] and list(j) == [100] and list(miss) == [0]


@pytest.mark.parametrize("seed", range(6))
def test_sparse_matching_shortcut_gives_the_solvers_answer(seed):
    """Fixing the pairs every optimum contains must not change what the solver would pick."""
    rng = np.random.default_rng(seed)
    nr, nc = int(rng.integers(5, 60)), int(rng.integers(5, 60))
    own = rng.permutation(max(nr, nc))[:nr] % nc
    rows = list(range(nr))
    cols = list(own)
    agreed = list(rng.integers(1, 30, nr))
    for _ in range(int(rng.integers(0, 4 * nr))):  # strangers sharing a few popular calls
        rows.append(int(rng.integers(0, nr)))
        cols.append(int(rng.integers(0, nc)))
        agreed.append(int(rng.integers(1, 4)))
    e = pd.DataFrame({"r": rows, "c": cols, "a": agreed}).drop_duplicates(["r", "c"])
    rows, cols = e.r.to_numpy(np.int64), e.c.to_numpy(np.int64)
    weight = e.a.to_numpy(float) - rng.random(len(e)) / (nr + 1)
    got = J._match_sparse(rows, cols, weight, nr, nc)
    m = csr_matrix((np.r_[weight + 1.0, np.full(nr, 1e-9)],
                    (np.r_[rows, np.arange(nr)], np.r_[cols, nc + np.arange(nr)])), shape=(nr, nc + nr))
    r, c = min_weight_full_bipartite_matching(m, maximize=True)
    want = np.full(nr, -1)
    want[r[c < nc]] = c[c < nc]
    assert np.array_equal(got, want)


def test_rows_without_session_or_transcript_join_nothing_and_do_not_break_the_rest():
    args = '{"path":"a"}'
    steps = STEPS.build([dict(transcript_id=t, seq=i, ts=T0 + timedelta(seconds=i), kind="tool_call", server="door",
                              tool="read", call_id=f"toolu_{i}", args_key=args) for i, t in enumerate(["t1", None])])
    calls = CALLS.build([dict(door_session=s, seq=i + 1, ts=T0 + timedelta(seconds=i, milliseconds=300), tool="read",
                              args_key=args, decision="allow", meta_call_id=m)
                         for i, (s, m) in enumerate([("s1", None), (None, "toolu_1")])])
    res = J.join_sessions(steps, calls)
    assert res.assignments() == {"s1": "t1"}
    assert list(res.sessions.door_session) == ["s1"] and res.sessions.calls.tolist() == [1]
    assert len(res.pairs) == 1 and len(res.unclaimed_calls) == 1
    assert res.unclaimed_calls.door_session.isna().all()


@pytest.mark.parametrize("seed", range(6))
def test_rows_of_other_kinds_change_nothing_even_when_they_carry_a_matching_call_id(seed):
    # tool_result rows repeat their call's tool-use id (which the door may have logged in
    # _meta), prompts carry none: neither may claim a call or shift a pair
    rng = np.random.default_rng(100 + seed)
    for _ in range(6):
        steps, calls = random_incident(rng)
        extra = steps.copy()
        extra["kind"] = "tool_result"
        extra["tool"] = pd.array([None] * len(extra), dtype="string") if rng.random() < 0.5 else extra["tool"]
        extra["ts"] = extra["ts"] + pd.Timedelta(milliseconds=5)
        prompts = steps.head(3).assign(kind="prompt", call_id=None)
        # each result right after its call; the tool_call rows keep their order
        order = np.r_[np.arange(len(steps)) * 2 + 1, np.arange(len(steps)) * 2 + 2, np.zeros(len(prompts))]
        mixed = (pd.concat([steps, extra, prompts], ignore_index=True).assign(_o=order)
                 .sort_values("_o", kind="stable").drop(columns="_o").reset_index(drop=True))
        a = J.join_sessions(steps, calls)
        b = J.join_sessions(mixed, calls)
        pd.testing.assert_frame_equal(a.scores, b.scores)
        pd.testing.assert_frame_equal(a.sessions, b.sessions)
        pd.testing.assert_frame_equal(a.pairs, b.pairs)


@pytest.mark.parametrize("seed", range(4))
def test_orphan_results_match_a_plain_set_lookup(seed):
    """Results near their call, far from it, before it, without an id, twice; calls without an id;
    more candidates than the short path compares one by one."""
    rng = np.random.default_rng(500 + seed)
    for n in (5, 40, 400):
        kinds = rng.choice(["tool_call", "tool_result", "user_prompt"], n, p=[0.45, 0.45, 0.1])
        ids = [None if rng.random() < 0.1 else f"toolu_{int(rng.integers(0, n // 2 + 1))}" for _ in range(n)]
        tids = [None if rng.random() < 0.05 else f"t{int(rng.integers(0, 3))}" for _ in range(n)]
        steps = STEPS.build([dict(transcript_id=t, seq=i, kind=k, call_id=c)
                             for i, (k, c, t) in enumerate(zip(kinds, ids, tids))])
        called = {c for k, c in zip(kinds, ids) if k == "tool_call" and c is not None}
        want = [k == "tool_result" and c is not None and t is not None and c not in called
                for k, c, t in zip(kinds, ids, tids)]
        assert J.orphan_results(steps).tolist() == want
