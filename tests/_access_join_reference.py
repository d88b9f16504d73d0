"""The door call ↔ storage request join written the plainest way: one storage request at a
time, in Python — the reference :func:`replaybook.access_join.join_access` is held to.

This is the join as it stood before it was made to work on whole columns (integer codes, sorted
range searches, group reductions) so that an incident of a million storage requests joins in
seconds; it is kept unchanged but for this docstring and its imports.
``tests/test_access_join_random.py`` asserts that both give exactly the same frames (links,
unexplained requests with their ``why``, per-call counts, duplicates) and the same clock offset
on many small random incidents.  A change to the join's rules is made here as well, so that the
fast path is always checked against the plainest statement of them.

The helpers the join shares with the loaders and the report (:func:`map_object`,
:func:`on_storage`, the result class and the constants) are imported, not copied: they are not
what the fast path replaces.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections import Counter
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from replaybook.access_join import (
    _CALL_NEEDS,
    _OFFSET_CAP,
    _PROVIDER,
    _principal_hint,
    DEFAULT_LAG_S,
    DEFAULT_MAX_OFFSET_S,
    DEFAULT_SKEW_S,
    DEFAULT_WINDOW_S,
    MIN_OFFSET_REQUESTS,
    TIME_RESOLUTION_S,
    UNMAPPED,
    AccessJoinResult,
    call_notes,
    map_object,
    principals_warning,
    on_storage,
    operation_kinds_agree,
    source_ip,
    address_host,
)
from replaybook.errors import JoinError
from replaybook.frames import ACCESS, ACCESS_DUPLICATES, ACCESS_LINKS, UTC


def _object_match(access_uri: str | None, access_action: str, call_uri: str | None, tool: str | None = None) -> bool:
    """The access row's resource is what a call (``tool``) on ``call_uri`` reaches (module
    docstring, "Objects")."""
    if not access_uri or not call_uri:
        return False
    if access_uri == call_uri:
        return True
    if access_uri == call_uri + "/" and access_uri not in ("s3://", "gs://", "az://"):
        # its folder marker (the door logs a folder without its slash): a write or delete of it
        # only a call that changes objects explains
        return access_action not in ("write", "delete") or operation_kinds_agree(tool, access_action)
    if access_action in ("list", "head"):
        # a listing or stat of the folder the call names, or of what is in it: the call's URI
        # may name the folder without its slash (an object equal to a storage_map key written
        # so, or a stat that looks for both ``k`` and ``k/``, as file-system clients of object
        # storage do)
        folder = call_uri if call_uri.endswith("/") else call_uri + "/"
        if access_uri.startswith(folder):
            return True
        # the call's folder without its slash (a listing of ``prefix=demo`` for ``demo/``)
        if call_uri.endswith("/") and access_uri == call_uri[:-1] and call_uri not in ("s3://", "gs://", "az://"):
            return True
    if access_action == "list" and access_uri.endswith("/") and call_uri.endswith("/") \
            and call_uri.startswith(access_uri) and access_uri not in ("s3://", "gs://", "az://"):
        return True
    return False


def _principal_match(principal: str | None, patterns: Sequence[str]) -> bool:
    if not principal:
        return False
    return any(principal == p or fnmatch.fnmatchcase(principal, p) for p in patterns)


def _closeness(principal: str, pattern: str) -> int | None:
    """None: ``pattern`` does not match; else how literally it names ``principal`` (written out
    in full beats every pattern; else the characters outside ``*``, ``?`` and ``[…]``)."""
    if principal == pattern:
        return 10 ** 9
    if not fnmatch.fnmatchcase(principal, pattern):
        return None
    # a class: "[", an optional "!", then a "]" that belongs to it, or at least one other character
    classes = re.sub(r"\[!?\][^\]]*\]|\[![^\]]+\]|\[[^!\]][^\]]*\]", "", pattern)
    return len(classes.replace("*", "").replace("?", ""))


def _owns(principal: str | None, own: Sequence[str], every: Sequence[Sequence[str]]) -> bool:
    """``own`` (one agent's principals) name ``principal`` and no entry of ``every`` names it
    more closely."""
    if not principal:
        return False
    mine = [c for p in own if (c := _closeness(principal, p)) is not None]
    if not mine:
        return False
    return max(mine) >= max(c for ps in every for p in ps if (c := _closeness(principal, p)) is not None)


def _check(df: pd.DataFrame, needs: Sequence[str], what: str) -> None:
    missing = [c for c in needs if c not in df.columns]
    if missing:
        raise JoinError(f"{what} frame lacks columns {missing}")


def join_access(
    calls: pd.DataFrame,
    access: pd.DataFrame,
    *,
    storage_map: Mapping[str, str] | None = None,
    principals: Mapping[str, str | Sequence[str]] | None = None,
    window_s: float = DEFAULT_WINDOW_S,
    lag_s: float = DEFAULT_LAG_S,
    skew_s: float = DEFAULT_SKEW_S,
    offset_s: float | None = None,
    max_offset_s: float = DEFAULT_MAX_OFFSET_S,
    door_offsets_s: Mapping[str, float] | None = None,
) -> AccessJoinResult:
    """Link door calls to the cloud access rows they caused (see the module docstring).

    Args:
        calls: a :data:`~replaybook.frames.CALLS` frame; its ``correlation`` column, where a
            door logged one, enables the correlation tiers; its ``objects`` column, where a
            call names several objects, lets the call explain requests on each.
        access: an :data:`~replaybook.frames.ACCESS` frame (any index; ``access_index`` refers
            to its row labels).
        storage_map: door object prefix → storage URI prefix, e.g.
            ``{"demo/": "s3://acme-data/demo/"}`` (:func:`map_object`).
        principals: agent name → the cloud principal(s) it acts as: exact strings or
            ``fnmatch`` patterns (``"arn:aws:sts::123456789012:assumed-role/door-reader/*"``).
        window_s: assumed longest call when ``ts_end`` is missing, seconds (≥ 0).
        lag_s: slack after the call's end for ``completed``/``event`` timestamps, seconds (≥ 0).
        skew_s: clock skew allowed between the door and the cloud, seconds (≥ 0), on top of
            the clock offset.
        offset_s: the cloud's clock minus the door's, seconds, taken off every access time;
            ``None`` (default) measures it (module docstring, "Clocks"), ``0`` assumes none.
        max_offset_s: the largest offset measured, seconds (≥ 0; 0 measures none).

    Returns:
        :class:`AccessJoinResult`.

    Raises:
        JoinError: a frame lacks required columns, a window is negative or an offset is not
            a finite number of seconds.
    """
    for name, v in (("window_s", window_s), ("lag_s", lag_s), ("skew_s", skew_s), ("max_offset_s", max_offset_s)):
        if not (v >= 0) or not math.isfinite(v):
            raise JoinError(f"{name} must be a number of seconds ≥ 0, got {v!r}")
    if offset_s is not None and not (isinstance(offset_s, (int, float)) and math.isfinite(offset_s)):
        raise JoinError(f"offset_s must be a finite number of seconds, got {offset_s!r}")
    _check(calls, _CALL_NEEDS, "calls")
    _check(access, ACCESS.names, "access")
    pats: dict[str, list[str]] = {}
    for agent, p in (principals or {}).items():
        pats[agent] = [p] if isinstance(p, str) else list(p)
    all_patterns = [p for ps in pats.values() for p in ps]

    # -- the calls ------------------------------------------------------------------------------
    c = calls.reset_index(drop=True)
    n_c = len(c)
    c_uri = [map_object(o, storage_map) for o in c["object"]]
    # every URI a call reaches: its object's and, for a call on several objects, the others'
    more = c["objects"] if "objects" in c.columns else None
    c_uris: list[list[str]] = []
    for i in range(n_c):
        us = [c_uri[i]] if c_uri[i] else []
        extra = more.iat[i] if more is not None else None
        if isinstance(extra, (list, tuple)):
            for o in extra:
                u = map_object(o, storage_map)
                if u and u not in us:
                    us.append(u)
        c_uris.append(us)
    c_start = c["ts"].astype(UTC)
    c_end = c["ts_end"].astype(UTC).where(c["ts_end"].notna(), c_start + pd.Timedelta(seconds=window_s))
    start_ns = c_start.to_numpy(dtype="datetime64[ns]").astype(np.int64) if n_c else np.zeros(0, np.int64)
    end_ns = c_end.to_numpy(dtype="datetime64[ns]").astype(np.int64) if n_c else np.zeros(0, np.int64)
    valid = c_start.notna().to_numpy() if n_c else np.zeros(0, bool)
    refused = (c["decision"].astype("string") == "deny").fillna(False).to_numpy(dtype=bool) if n_c else np.zeros(0, bool)
    agents = [None if pd.isna(a) else str(a) for a in c["agent"]] if n_c else []
    seqs = [0 if pd.isna(q) else int(q) for q in c["seq"]]
    sessions = [str(s) for s in c["door_session"]]
    tools = [None if pd.isna(x) else str(x) for x in c["tool"]] if "tool" in c.columns else [None] * n_c
    corr = None
    if "correlation" in c.columns:
        corr = [None if pd.isna(x) or x == "" else str(x) for x in c["correlation"]]
    by_token: dict[str, list[int]] = {}
    for i, tok in enumerate(corr or []):
        if tok is not None:
            by_token.setdefault(tok, []).append(i)
    max_span = int(np.max(np.where(valid, end_ns - start_ns, 0))) if n_c else 0
    skew = int(round(skew_s * 1e9))
    lag = int(round(lag_s * 1e9))
    max_off = int(round(max_offset_s * 1e9))

    # calls by the URIs they reach, for the object match (:func:`_object_match`) without a scan
    by_uri: dict[str, list[int]] = {}
    folder_calls: list[tuple[str, int]] = []
    for i, us in enumerate(c_uris):
        for u in us:
            by_uri.setdefault(u, []).append(i)
            if u.endswith("/"):
                folder_calls.append((u, i))
    matched: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}

    def reaching(uri: str | None, action: str) -> tuple[np.ndarray, np.ndarray]:
        """``(calls, their start times)`` of the calls whose objects the access row's resource
        is (:func:`_object_match`), by start time; refused and untimed calls included."""
        key = (uri or "", action)
        got = matched.get(key)
        if got is not None:
            return got
        found: set[int] = set()
        if uri:
            found.update(by_uri.get(uri, ()))
            if uri.endswith("/"):
                found.update(by_uri.get(uri[:-1], ()))
            if action in ("list", "head"):
                cut = uri.find("://") + 3
                while True:  # every folder the resource lies in (or is), as a call may name it
                    cut = uri.find("/", cut) + 1
                    if cut <= 0:
                        break
                    folder = uri[:cut]
                    found.update(by_uri.get(folder, ()))
                    found.update(by_uri.get(folder[:-1], ()))
                found.update(by_uri.get(uri + "/", ()))
            if action == "list" and uri.endswith("/"):
                found.update(i for u, i in folder_calls if u.startswith(uri))
        idx = np.array(sorted(i for i in found if any(_object_match(uri, action, u, tools[i]) for u in c_uris[i])),
                       dtype=np.int64)
        st = np.where(valid[idx], start_ns[idx], np.iinfo(np.int64).max) if len(idx) else np.zeros(0, np.int64)
        o = np.argsort(st, kind="stable")
        got = matched[key] = (idx[o], st[o])
        return got

    def pats_of(i: int) -> list[str] | None:
        """The principals call ``i``'s agent acts as: its own entry, else ``"*"``'s (every agent
        without an entry, and a call naming no agent); None: not known."""
        ag = agents[i]
        if ag is not None and ag in pats:
            return pats[ag]
        return pats.get("*")

    def principal_ok(i: int, principal: str | None) -> bool:
        return pats_of(i) is None or _owns(principal, pats_of(i), list(pats.values()))

    def fits(i: int, t: int, res: int, kind: str) -> bool:
        """The request (logged at ``t``, door clock, within ``res`` ns) fits call ``i``'s window."""
        if not valid[i]:
            return False
        if t > end_ns[i] + (skew if kind == "received" else lag + skew):
            return False
        lo = start_ns[i] - skew
        return t + res > lo if res else t >= lo

    def dist(i: int, t: int, res: int) -> int:
        """How far the request's time lies outside the call's own span (0: within it), ns."""
        return max(0, int(start_ns[i]) - (t + res)) + max(0, t - int(end_ns[i]))

    def rank(i: int, t: int, res: int) -> tuple[int, int, int, int]:
        return dist(i, t, res), abs(t + res // 2 - int(start_ns[i])), seqs[i], i

    def near(uri: str | None, action: str, t: int, res: int) -> np.ndarray:
        """Calls reaching the resource that started early enough to hold ``t``."""
        idx, st = reaching(uri, action)
        lo = np.searchsorted(st, t - max_span - lag - skew, "left")
        hi = np.searchsorted(st, t + res + skew, "right")
        return idx[lo:hi]

    # -- the access rows ------------------------------------------------------------------------
    recs = access[ACCESS.names].to_dict("records")
    labels = list(access.index)
    n_a = len(recs)
    a_ts = access["ts"].astype(UTC)
    a_ns = a_ts.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    a_nat = a_ts.isna().to_numpy()
    kinds = [str(r["time_kind"]) if not pd.isna(r["time_kind"]) else "event" for r in recs]
    uris = [None if pd.isna(r["resource_uri"]) else str(r["resource_uri"]) for r in recs]
    actions = [str(r["action"]) if not pd.isna(r["action"]) else "other" for r in recs]
    whos = [None if pd.isna(r["principal"]) else str(r["principal"]) for r in recs]
    res_ns = [0] * n_a
    for pos, r in enumerate(recs):
        step = TIME_RESOLUTION_S.get(str(r["source"]))
        if step and not a_nat[pos] and a_ns[pos] % int(step * 1e9) == 0:
            res_ns[pos] = int(step * 1e9)

    # the same request twice: a record delivered again, or the request in two logs
    copy_of = [-1] * n_a
    dups: list[dict] = []
    span = int(round((window_s + lag_s + 2 * skew_s) * 1e9))
    seen: dict[tuple, tuple[int, int]] = {}
    for pos in sorted(range(n_a), key=lambda p: (bool(a_nat[p]), 0 if a_nat[p] else int(a_ns[p]), p)):
        rid = recs[pos]["request_id"]
        if a_nat[pos] or pd.isna(rid) or str(rid) in ("", "-"):
            continue
        src = str(recs[pos]["source"])
        key = (_PROVIDER.get(src, src), str(rid), actions[pos], uris[pos])
        prev = seen.get(key)
        if prev is not None and int(a_ns[pos]) - prev[1] <= span:
            copy_of[pos] = prev[0]
            dups.append({"access_index": labels[pos], "same_as": labels[prev[0]], "source": src,
                         "request_id": str(rid), "ts": a_ts.iat[pos],
                         "how": "delivered again" if str(recs[prev[0]]["source"]) == src else "another log"})
        else:
            seen[key] = (pos, int(a_ns[pos]))

    # -- the clock offset ---------------------------------------------------------------------------
    def collect(reach: int) -> list[tuple[int, int, str, list[int]]]:
        """(t, resolution, kind, calls) per request, with the calls within ``reach`` ns."""
        out = []
        for pos in range(n_a):
            if copy_of[pos] >= 0 or a_nat[pos] or not on_storage(uris[pos]):
                continue
            t, res = int(a_ns[pos]), res_ns[pos]
            idx, st = reaching(uris[pos], actions[pos])
            lo = np.searchsorted(st, t - reach - max_span - res, "left")
            hi = np.searchsorted(st, t + reach, "right")
            if hi - lo > 4 * _OFFSET_CAP:
                continue
            cand = [int(i) for i in idx[lo:hi] if valid[i] and not refused[i] and principal_ok(int(i), whos[pos])]
            if cand and len(cand) <= _OFFSET_CAP:
                out.append((t, res, kinds[pos], cand))
        return out

    evidence = collect(max_off)

    def fitting(off: int, ev: list | None = None) -> int:
        return sum(any(fits(i, t - off, res, kind) for i in cand) for t, res, kind, cand in
                   (evidence if ev is None else ev))

    unapplied: tuple = (None, 0)
    if offset_s is None:
        off = _measure_offset(evidence, start_ns, end_ns, max_off)
        if off:
            with_off, without = fitting(off), fitting(0)
            if with_off - without < MIN_OFFSET_REQUESTS or with_off < 2 * without:
                if with_off > without:  # measured, not applied: named, for the user to give
                    unapplied = (off / 1e9, with_off)
                off = 0
    else:
        off = int(round(offset_s * 1e9))
    # (an offset given beyond max_off is counted against the calls that far away)
    offset_requests = fitting(off, evidence if abs(off) <= max_off else collect(abs(off))) if off else 0

    # doors on clocks of their own: per agent, the offset its calls' evidence gives, taken where it
    # lines up enough more of that evidence than the common one; given ones as given
    def agent_evidence(a: str, ev: list | None = None) -> list:
        return [(t, res, kind, [i for i in cand if agents[i] == a]) for t, res, kind, cand in
                (evidence if ev is None else ev) if any(agents[i] == a for i in cand)]

    def fitting_of(ev: list, o: int) -> int:
        return sum(any(fits(i, t - o, res, kind) for i in cand) for t, res, kind, cand in ev)

    door_rows: list[tuple] = []  # (agent, offset ns, requests, given, applied)
    names = sorted({a for a in agents if a is not None})
    given = {a: int(round(float(v) * 1e9)) for a, v in (door_offsets_s or {}).items() if a in names}
    door_at: dict[str, int] = {}
    if offset_s is None and max_off > 0 and len(names) > 1:
        for a in names:
            if a in given:
                continue
            ev = agent_evidence(a)
            o = _measure_offset(ev, start_ns, end_ns, max_off)
            if o == off:
                continue
            own, common = fitting_of(ev, o), fitting_of(ev, off)
            if own - common >= MIN_OFFSET_REQUESTS and own >= 2 * common:
                door_at[a] = o
                door_rows.append((a, o, own, False, True))
            elif own > common:
                door_rows.append((a, o, own, False, False))
    reach = max([max_off, abs(off), *(abs(o) for o in given.values())])
    given_ev = evidence if reach == max_off else collect(reach)
    for a, o in given.items():
        door_at[a] = o
        door_rows.append((a, o, fitting_of(agent_evidence(a, given_ev), o), True, True))
    start_raw = start_ns
    if any(o != off for o in door_at.values()):
        shift = np.array([door_at.get(a, off) - off if a is not None else 0 for a in agents], np.int64)
        start_ns = start_ns + shift
        end_ns = end_ns + shift
        matched.clear()
    door_rows.sort(key=lambda r: (not r[4], r[0]))

    # the calls the door refused, by object: a storage request on such an object that no call
    # explains is the one to read first (the agent was refused it, and it was reached anyway)
    def _refusal(uri: str | None, action: str, t: int) -> int | None:
        """The refused call on this object the request at ``t`` most likely follows: the last
        one started by ``t`` (clock skew allowed), else the first one after."""
        hits = [int(i) for i in reaching(uri, action)[0] if refused[i] and valid[i]
                and operation_kinds_agree(tools[i], action)]
        if not hits:
            return None
        before = [i for i in hits if start_ns[i] - skew <= t]
        return (max(before, key=lambda i: (int(start_ns[i]), -i)) if before
                else min(hits, key=lambda i: (int(start_ns[i]), i)))

    # -- each request ---------------------------------------------------------------------------
    linked: list[list] = []  # [pos, call, how, tied calls, t]
    unexplained: list[tuple[object, str, int | None, int | None]] = []  # (label, why, refused call, t)
    # the calls the door did not refuse that name an object nothing maps: (call, that object)
    unmapped: list[tuple[int, str]] = []
    for i in range(n_c):
        named = [c["object"].iat[i]]
        if "objects" in c.columns and isinstance(c["objects"].iat[i], (list, tuple)):
            named += list(c["objects"].iat[i])
        miss = [o for o in named if isinstance(o, str) and o and map_object(o, storage_map) is None]
        if miss and not refused[i]:
            unmapped.append((i, miss[0]))
    for pos in range(n_a):
        if copy_of[pos] >= 0:
            continue
        label, r = labels[pos], recs[pos]
        if a_nat[pos]:
            unexplained.append((label, "no time", None, None))
            continue
        t, res, kind = int(a_ns[pos]) - off, res_ns[pos], kinds[pos]
        uri, action, principal = uris[pos], actions[pos], whos[pos]
        token = None if pd.isna(r["correlation"]) else str(r["correlation"])
        chosen, how, why, pool = None, None, None, []

        tok_calls = by_token.get(token, []) if token is not None else []
        def theirs(i: int) -> bool:  # the request is made by a principal of the call's agent, or none is known
            return pats_of(i) is None or _owns(principal, pats_of(i), list(pats.values()))

        def not_theirs(i: int) -> str:
            who = principal if principal else "no principal the log names"
            whose = (f"a principal the door's agent {agents[i]} acts as" if agents[i] is not None else
                     'one principals["*"] gives the door\'s calls that name no agent')
            return (f"its correlation {token!r} is a door call's (session {sessions[i]} seq {c['seq'].iat[i]}), but "
                    f"the request was made by {who}, not {whose}")

        if tok_calls:
            usable = [i for i in tok_calls if not refused[i]]
            if len(tok_calls) == 1 and usable and fits(usable[0], t, res, kind):
                if theirs(usable[0]):
                    chosen, how, pool = usable[0], "correlation", [usable[0]]
                else:
                    why = not_theirs(usable[0])
            else:
                fitting = [i for i in usable if fits(i, t, res, kind)
                           and any(_object_match(uri, action, u, tools[i]) for u in c_uris[i])]
                pool = [i for i in fitting if theirs(i)]
                if pool:
                    chosen, how = min(pool, key=lambda i: rank(i, t, res)), "correlation+object+time"
                elif fitting:
                    why = not_theirs(min(fitting, key=lambda i: rank(i, t, res)))
                else:
                    sess = sorted({sessions[i] for i in tok_calls})
                    why = (f"correlation {token!r} belongs to door session(s) {', '.join(sess)}, "
                           f"but no allowed call there on this object within the window")
        else:
            tiered: dict[str, list[int]] = {"principal+object+time": [], "object+time": []}
            refused_hits: list[int] = []
            other_principal: list[int] = []  # fits in object and time, but acts as another principal
            for i in near(uri, action, t, res):
                i = int(i)
                if not fits(i, t, res, kind):
                    continue
                if pats_of(i) is not None:
                    if not _owns(principal, pats_of(i), list(pats.values())):
                        if not refused[i]:
                            other_principal.append(i)
                        continue
                    tier = "principal+object+time"
                else:
                    tier = "object+time"
                if refused[i]:
                    if operation_kinds_agree(tools[i], action):  # a refused call of another kind: not this
                        refused_hits.append(i)
                    continue
                tiered[tier].append(i)
            for tier in ("principal+object+time", "object+time"):
                if tiered[tier]:
                    pool = tiered[tier]
                    chosen, how = min(pool, key=lambda i: rank(i, t, res)), tier
                    break
            if chosen is None:
                why = _why_unexplained(uri, action, t, principal, refused_hits, other_principal,
                                       reaching(uri, action)[0], rank=lambda i: rank(i, t, res),
                                       start_ns=start_ns, valid=valid, c=c, agents=agents,
                                       storage_map=storage_map, any_mapped=bool(by_uri),
                                       all_patterns=all_patterns, unmapped=unmapped,
                                       reach_ns=max_span + lag + skew)
        if chosen is None:
            unexplained.append((label, why or "no door call explains it", _refusal(uri, action, t), t))
            continue
        best = dist(chosen, t, res)
        tied = tuple(sorted((i for i in pool if dist(i, t, res) == best), key=lambda i: (int(start_ns[i]), seqs[i], i)))
        linked.append([pos, chosen, how, tied, t])

    # requests that several calls explain equally well are shared among them in time order: of
    # two reads of one object in one logged second by two sessions, each explains one — not one
    # both while the other explains none
    groups: dict[tuple, list[list]] = {}
    for item in linked:
        if len(item[3]) > 1:
            groups.setdefault((item[2], item[3]), []).append(item)
    for (_, tied), items in groups.items():
        items.sort(key=lambda it: (it[4], it[0]))
        n, m = len(items), len(tied)
        for k, it in enumerate(items):
            it[1] = tied[k * m // n]

    counts = np.zeros(n_c, np.int64)
    bytes_sum = np.zeros(n_c, np.int64)
    bytes_known = np.zeros(n_c, bool)  # some linked request logged its size
    denied = np.zeros(n_c, np.int64)
    links: list[dict] = []
    for pos, chosen, how, tied, _t in linked:
        r = recs[pos]
        counts[chosen] += 1
        b = r["bytes"]
        if not pd.isna(b):
            bytes_sum[chosen] += int(b)
            bytes_known[chosen] = True
        denied[chosen] += int(str(r["outcome"]) == "denied")
        links.append({
            "door_session": c["door_session"].iat[chosen],
            "call_seq": c["seq"].iat[chosen],
            "agent": agents[chosen],
            "access_index": labels[pos],
            "request_id": r["request_id"],
            "source": r["source"],
            "action": r["action"],
            "outcome": r["outcome"],
            "resource_uri": r["resource_uri"],
            "call_uri": next((u for u in c_uris[chosen] if _object_match(uris[pos], actions[pos], u, tools[chosen])),
                             c_uri[chosen]),
            "call_ts": c_start.iat[chosen],
            "access_ts": a_ts.iat[pos],
            "time_kind": r["time_kind"],
            "delta_ms": (int(a_ns[pos]) - int(start_raw[chosen])) / 1e6,
            "how": how,
            "candidates": max(len(tied), 1),
            "principal": _or_none(r["principal"]),
            "source_ip": source_ip(r["raw"]),
            "user_agent": _or_none(r["user_agent"]),
        })

    # whose requests: each against what most of its door session's linked requests in the same
    # log carry — the principal among all of them, the address and user agent among those of
    # the same principal; a value differs only from a reference there is (one value the most
    # common), an unknown address or user agent from none; where values are as common, which
    # was the agent's is not known (None)
    def by_session(d):
        return d["door_session"], d["source"]

    def by_principal(d):
        return d["door_session"], d["source"], d["who"]

    for d in links:  # an address is compared by host: a client's port is not another client
        d["host"] = address_host(d["source_ip"])
    _renewed(links, by_session)
    ref_p, tie_p = _most_common_of(links, by_session, "who")
    ref_ip, tie_ip = _most_common_of(links, by_principal, "host")
    ref_ua, tie_ua = _most_common_of(links, by_principal, "user_agent")
    refs: dict[str, list] = {k: [] for k in ("ref_principal", "ref_ip", "ref_ua", "tied_principal", "tied_ip",
                                             "tied_ua")}
    n_other_p = np.zeros(n_c, np.int64)
    n_other_c = np.zeros(n_c, np.int64)
    for (_pos, chosen, *_), d in zip(linked, links):
        rp, ri, ru = ref_p.get(by_session(d)), ref_ip.get(by_principal(d)), ref_ua.get(by_principal(d))
        tp, ti, tu = tie_p.get(by_session(d)), tie_ip.get(by_principal(d)), tie_ua.get(by_principal(d))
        d["other_principal"] = None if tp is not None else rp is not None and d["who"] != rp
        differs = ((d["host"] is not None and ri is not None and d["host"] != ri)
                   or (d["user_agent"] is not None and ru is not None and d["user_agent"] != ru))
        unknown = (d["source_ip"] is not None and ti is not None) or (d["user_agent"] is not None and tu is not None)
        d["other_client"] = True if differs else None if unknown else False
        n_other_p[chosen] += d["other_principal"] is True
        n_other_c[chosen] += d["other_client"] is True
        for k, v in (("ref_principal", rp), ("ref_ip", ri), ("ref_ua", ru), ("tied_principal", tp), ("tied_ip", ti),
                     ("tied_ua", tu)):
            refs[k].append(v)
    notes = call_notes(n_c, [item[1] for item in linked], counts,
                       {k: [d[k] for d in links] for k in ("principal", "source_ip", "user_agent", "other_principal",
                                                           "other_client")}, refs)

    for d in links:
        del d["who"], d["host"]
    links_df = ACCESS_LINKS.build(links) if links else ACCESS_LINKS.empty()
    if len(links_df):
        links_df = links_df.sort_values(["access_ts", "access_index"], kind="stable").reset_index(drop=True)

    labels_un = [u[0] for u in unexplained]
    un = access.loc[labels_un].reset_index(drop=True) if labels_un else ACCESS.empty()
    un = un[ACCESS.names].copy()
    un.insert(0, "access_index", pd.array(labels_un, dtype="Int64") if labels_un else pd.array([], dtype="Int64"))
    if all_patterns:
        dp = [_principal_match(None if pd.isna(p) else str(p), all_patterns) for p in un["principal"]]
        un["door_principal"] = pd.array(dp, dtype="boolean")
    else:
        un["door_principal"] = pd.array([pd.NA] * len(un), dtype="boolean")
    un["why"] = pd.array([u[1] for u in unexplained], dtype="string")
    ref = [u[2] for u in unexplained]
    rule = c["rule"] if "rule" in c.columns else pd.Series([pd.NA] * n_c, dtype="string")
    un["refused_session"] = pd.array([None if i is None else c["door_session"].iat[i] for i in ref], dtype="string")
    un["refused_seq"] = pd.array([None if i is None else c["seq"].iat[i] for i in ref], dtype="Int64")
    un["refused_rule"] = pd.array([None if i is None or pd.isna(rule.iat[i]) else str(rule.iat[i]) for i in ref],
                                  dtype="string")
    un["since_refusal_s"] = pd.array(
        [np.nan if u[2] is None else (u[3] - int(start_ns[u[2]])) / 1e9 for u in unexplained], dtype="float64")
    un["refused_agents_principal"] = pd.array(
        [None if i is None or pats_of(i) is None else _owns(None if pd.isna(p) else str(p), pats_of(i),
                                                               list(pats.values()))
         for i, p in zip(ref, un["principal"])], dtype="boolean")
    if len(un):
        un = un.assign(_k=~un["door_principal"].fillna(False).astype(bool)).sort_values(
            ["_k", "ts", "access_index"], kind="stable").drop(columns="_k").reset_index(drop=True)

    per_call = pd.DataFrame({
        "door_session": c["door_session"].astype("string"),
        "seq": c["seq"].astype("Int64"),
        "agent": c["agent"].astype("string"),
        "ts": c_start,
        "decision": c["decision"].astype("string"),
        "object": c["object"].astype("string"),
        "call_uri": pd.array(c_uri, dtype="string"),
        "access_count": pd.array(counts, dtype="Int64"),
        # no size logged (CloudTrail without bytesTransferredOut): unknown, not 0 bytes
        "access_bytes": pd.arrays.IntegerArray(bytes_sum, ~bytes_known),
        "denied_count": pd.array(denied, dtype="Int64"),
        "other_principal_count": pd.array(n_other_p, dtype="Int64"),
        "other_client_count": pd.array(n_other_c, dtype="Int64"),
        "note": pd.array(notes, dtype="string"),
    })
    dup_df = ACCESS_DUPLICATES.build(dups) if dups else ACCESS_DUPLICATES.empty()
    return AccessJoinResult(links=links_df, unexplained=un, per_call=per_call, window_s=float(window_s),
                            lag_s=float(lag_s), skew_s=float(skew_s), duplicates=dup_df,
                            offset_s=off / 1e9, offset_requests=int(offset_requests),
                            offset_given=offset_s is not None, offset_unapplied_s=unapplied[0],
                            offset_unapplied_requests=int(unapplied[1]),
                            door_offsets=pd.DataFrame({
                                "agent": pd.array([r[0] for r in door_rows], dtype="string"),
                                "offset_s": pd.array([r[1] / 1e9 for r in door_rows], dtype="float64"),
                                "requests": pd.array([r[2] for r in door_rows], dtype="Int64"),
                                "given": pd.array([r[3] for r in door_rows], dtype="bool"),
                                "applied": pd.array([r[4] for r in door_rows], dtype="bool")}),
                            # a principals key naming no agent of the calls ("*" needs none) is warned of
                            warnings=([principals_warning(c, principals)]
                                      if [k for k in pats if k != "*" and k not in {a for a in agents if a}] else [])
                            + _settings_warnings(access, storage_map, pats))


def _settings_warnings(access: pd.DataFrame, storage_map, pats: dict[str, list[str]]) -> list[str]:
    """Row by row: each storage prefix no request's URI starts with (nor a GCS audit log's
    bucket-level listing above it), each principal pattern no request's principal matches (the
    sentences :func:`join_access` gives)."""
    if not len(access):
        return []
    out = []
    rows = access.astype(object).where(access.notna(), None).to_dict("records")
    for prefix, target in (storage_map or {}).items():
        if not any(isinstance(r["resource_uri"], str) and (r["resource_uri"].startswith(target) or (
                r["action"] == "list" and r["source"] == "gcp.audit" and r["resource_uri"].endswith("/")
                and target.startswith(r["resource_uri"])
                and r["resource_uri"] not in ("s3://", "gs://", "az://"))) for r in rows):
            hint = " (a blank at its end?)" if target != target.strip() else ""
            out.append(f"storage_map {prefix!r} → {target!r} names a storage prefix no request in the access logs "
                       f"has{hint}: no call on those objects can be linked")
    for agent, ps in pats.items():
        for p in ps:
            if not any(isinstance(r["principal"], str) and (r["principal"] == p or fnmatch.fnmatchcase(r["principal"], p))
                       for r in rows):
                hint = " (a blank at its end or start?)" if p != p.strip() else _principal_hint(p)
                out.append(f"principals {agent!r}: {p!r} matches no principal in the access logs{hint}: every "
                           "request of that agent's reads as another principal's")
    return out


def _or_none(v) -> str | None:
    return None if v is None or pd.isna(v) else str(v)


def _renewed(links: list[dict], group) -> None:
    """Each link's ``who``: its principal, or, for role sessions of one role a group's agent
    used one after another from one client (renewed credentials), one name for them all —
    per group and role, sessions in order of their first request, each continuing the earliest
    chain that ended before it began from the same clients (an unknown client fits any)."""
    sessions: dict = {}
    for d in links:
        d["who"] = d["principal"]
        m = re.match(r"^(arn:aws[a-z-]*:sts::[0-9]*:assumed-role/[^/]+)/.+$", d["principal"] or "")
        if m:
            s = sessions.setdefault((group(d), m.group(1)), {}).setdefault(d["principal"], [None, None, set()])
            t = d["access_ts"]
            s[0] = t if s[0] is None or t < s[0] else s[0]
            s[1] = t if s[1] is None or t > s[1] else s[1]
            if d["source_ip"] is not None or d["user_agent"] is not None:
                s[2].add((d["host"], d["user_agent"]))
    name: dict = {}
    for (g, _role), by_p in sessions.items():
        chains: list = []
        for p, (lo, hi, cl) in sorted(by_p.items(), key=lambda kv: (kv[1][0], kv[1][1], kv[0])):
            for ch in chains:
                if ch["end"] < lo and (not cl or not ch["cl"] or cl & ch["cl"]):
                    ch["ps"].append(p)
                    ch["end"] = hi
                    ch["cl"] = ch["cl"] | cl
                    break
            else:
                chains.append({"ps": [p], "end": hi, "cl": cl})
        for ch in chains:
            if len(ch["ps"]) > 1:
                for p in ch["ps"]:
                    name[(g, p)] = (f"{ch['ps'][0]} … {ch['ps'][-1].rsplit('/', 1)[1]}, "
                                    "one role session after another")
    for d in links:
        d["who"] = name.get((group(d), d["principal"]), d["principal"])


def _most_common_of(links: list[dict], group, key: str) -> tuple[dict, dict]:
    """Per group of links: the value of ``key`` most of them carry (of those carrying one), where
    one value is more common than every other; and where several are as common, their values
    (sorted, joined by `` / ``)."""
    counts: dict = {}
    for d in links:
        if d[key] is not None:
            counts.setdefault(group(d), Counter())[d[key]] += 1
    out, tied = {}, {}
    for g, cnt in counts.items():
        most = max(cnt.values())
        top = sorted(v for v, n in cnt.items() if n == most)
        if len(top) == 1:
            out[g] = top[0]
        else:
            tied[g] = " / ".join(top)
    return out, tied


def _measure_offset(evidence: list[tuple[int, int, str, list[int]]], start_ns: np.ndarray, end_ns: np.ndarray,
                    max_off: int) -> int:
    """The clock offset (ns, cloud − door) that puts the most requests within the span of a
    call that could have made them, or 0.

    Each request (``t``, logged within ``res`` ns) fits call ``i`` for the offsets
    ``[t − end_i, t + res − start_i]`` (no skew or lag: the calls' own spans, so the estimate is
    sharp); the offsets where the most requests fit form one or more stretches, and the
    stretch nearest 0 gives its middle — 0 when it holds 0, or when nothing is within
    ``max_off``.  :func:`join_access` then applies it only when it fits enough requests more
    than no offset does (:data:`MIN_OFFSET_REQUESTS`).
    """
    if not evidence or max_off <= 0:
        return 0
    events: list[tuple[int, int]] = []  # (offset, 0 = a request starts fitting, 1 = stops)
    for t, res, _kind, cand in evidence:
        spans = sorted((max(t - int(end_ns[i]), -max_off), min(t + res - int(start_ns[i]), max_off)) for i in cand)
        merged: list[list[int]] = []
        for a, b in spans:
            if a > b:
                continue
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        for a, b in merged:
            events.append((a, 0))
            events.append((b, 1))
    if not events:
        return 0
    events.sort()
    cur = best = 0
    stretches: list[list] = []
    for x, kind in events:
        if kind == 0:
            cur += 1
            if cur > best:
                best, stretches = cur, [[x, None]]
            elif cur == best:
                stretches.append([x, None])
        else:
            if cur == best and stretches and stretches[-1][1] is None:
                stretches[-1][1] = x
            cur -= 1
    a, b = min(((a, b) for a, b in stretches if b is not None),
               key=lambda s: 0 if s[0] <= 0 <= s[1] else min(abs(s[0]), abs(s[1])))
    if a <= 0 <= b:
        return 0
    return (a + b) // 2


def _why_unexplained(uri: str | None, action: str, t: int, principal: str | None, refused_hits: list[int],
                     other_principal: list[int], same: np.ndarray, *, rank, start_ns: np.ndarray,
                     valid: np.ndarray, c: pd.DataFrame, agents: list, storage_map, any_mapped: bool,
                     all_patterns: list[str], unmapped: list[tuple[int, str]] = (),
                     reach_ns: int | None = None) -> str:
    """Why no call explains an access row (``t`` on the door's clock; ``same``: the calls on
    its object at any time)."""
    if refused_hits:
        i = min(refused_hits, key=rank)
        return (f"only a call the door refused matches (session {c['door_session'].iat[i]} "
                f"seq {c['seq'].iat[i]}): the door says it did not forward it")
    if other_principal:
        i = min(other_principal, key=rank)
        who = principal if principal else "no principal the log names"
        whose = (f"a principal the door's agent {agents[i]} acts as" if agents[i] is not None else
                 'one principals["*"] gives the door\'s calls that name no agent')
        return (f"a door call on this object fits the time (session {c['door_session'].iat[i]} seq "
                f"{c['seq'].iat[i]}), but the request was made by {who}, not {whose}")
    if uri is None:
        return "no resource in the access record"
    same = [int(i) for i in same if valid[i]]
    targets = list((storage_map or {}).values())
    if not same and targets and not any(uri.startswith(tg) or tg.startswith(uri) for tg in targets):
        return "resource outside every storage_map target: no door call can reach it"
    if not same and not any_mapped:
        return UNMAPPED
    if not same and not unmapped:
        return "no door call on this object"
    if not same:
        n = len(unmapped)
        head = (f"no door call on this object, but {n:,} allowed door call{'' if n == 1 else 's'} "
                f"{'reaches' if n == 1 else 'reach'} objects no storage_map entry covers")
        timed = [(i, o) for i, o in unmapped if valid[i]]
        if not timed:
            return head + " (none has a time): storage_map may miss this object"
        i, o = min(timed, key=lambda x: (abs(t - int(start_ns[x[0]])), int(start_ns[x[0]]), x[0]))
        near = (f"nearest: session {c['door_session'].iat[i]} seq {c['seq'].iat[i]} on {o}, "
                f"{_delta_words((t - int(start_ns[i])) / 1e9)} that call")
        if reach_ns is not None and abs(t - int(start_ns[i])) > reach_ns + 60 * 10**9:
            return f"{head}, none of them within this request's time window ({near})"
        return f"{head} ({near}): storage_map may miss this object"
    i = min(same, key=lambda i: abs(t - int(start_ns[i])))
    near_rule = c["rule"].iat[i] if "rule" in c.columns else None
    what = (f", which the door refused{'' if pd.isna(near_rule) else f' (rule {near_rule})'}"
            if str(c["decision"].iat[i]) != "allow" else "")
    why = (f"no door call on this object within the time window (nearest: session "
           f"{c['door_session'].iat[i]} seq {c['seq'].iat[i]}{what}, "
           f"{_delta_words((t - int(start_ns[i])) / 1e9)} that call)")
    if all_patterns and not _principal_match(principal, all_patterns):
        why += "; the principal is not one the door's agents use"
    return why


def _delta_words(seconds: float) -> str:
    """``111 s after`` / ``2.5 s before``; beyond 5 min ``8 h 11 min after`` (to the nearest minute)."""
    a = abs(seconds)
    if a <= 300:
        amount = f"{a:.1f} s" if a < 10 else f"{a:,.0f} s"
    else:
        mins = int(round(a / 60))
        d, h, m = mins // 1440, mins % 1440 // 60, mins % 60
        amount = " ".join(([f"{d:,} d"] if d else []) + ([f"{h} h"] if d or h else []) + [f"{m} min"])
    return f"{amount} {'after' if seconds >= 0 else 'before'}"
