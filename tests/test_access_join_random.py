"""join_access against its reference (``tests/_access_join_reference.py``: the same join, one
storage request at a time in plain Python) on many small random incidents.

Each incident is a few door sessions and a few dozen storage requests drawn so that the cases the
join decides are all met often: requests several calls fit (two sessions on one object within a
logged second), whole-second log times, a door clock off by tens of seconds (measured, given,
or none), requests the logs hold twice (the same log twice, CloudTrail and the server access
log, too far apart to be one), correlation tokens per call and per session, calls the door
refused, calls on several objects, storage_map folders and the data root, keys in several
encodings, principals that are and are not the agent's, requests without a time, a resource or
an action, untimed calls.  Every frame the join returns must equal the reference's exactly.
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest
from _access_join_reference import _object_match
from _access_join_reference import join_access as reference_join

import replaybook.access_join as AJ
from replaybook.access_join import join_access
from replaybook.frames import ACCESS, CALLS

T0 = datetime(2026, 9, 13, 10, 0, tzinfo=timezone.utc)
ROLE = "arn:aws:sts::123456789012:assumed-role/door-reader"
OTHER = "arn:aws:iam::123456789012:user/someone-else"
GCP_SA = "door-reader@acme-proj.iam.gserviceaccount.com"

STORAGE_MAPS = [
    None,
    {"demo/": "s3://acme-data/demo/", "reference/": "s3://acme-data/reference/"},
    {"demo": "s3://acme-data/demo", "data/": "gs://acme-gcs/data/", "demo/sub/": "s3://acme-raw/sub/"},
    {"": "s3://acme-data/"},
    {"demo/": "s3://acme-data/demo/", "demo/a b.csv": "s3://acme-raw/x/a b.csv", "az/": "az://acct/c/az/"},
    # odd targets: a URI-less folder, and a prefix of every s3:// URI (the object index and the
    # token tier's object test part ways on these)
    {"demo/": "s3://acme-data/demo/", "q": "a", "w": "s3:"},
]
OBJECTS = ["demo/cars.csv", "demo/a b.csv", "demo/ünï.csv", "demo", "demo/", "demo/sub/x.parquet", "demo/sub",
           ".", "reference/.env", "reference", "other/x.csv", "s3://acme-data/demo/cars.csv",
           "s3://acme-raw/k%2Bv.csv", "gs://acme-gcs/data/x.csv", "data/x.csv", "data", "az/b.bin", "q", "w", None]
EXTRA_URIS = ["s3://acme-data/demo/cars.csv", "s3://acme-data/demo/", "s3://acme-data/demo", "s3://acme-data/",
              "s3://acme-data/demo/sub/", "s3://acme-data/demo/sub/x.parquet", "s3://acme-data/demo/a b.csv",
              "s3://acme-data/demo/a%20b.csv", "s3://acme-data/demo/a+b.csv", "s3://acme-data/demo/ünï.csv",
              "s3://acme-data/reference/.env", "s3://acme-data/demo/cars.csv/", "s3://acme-raw/k%2Bv.csv",
              "s3://acme-raw/k+v.csv", "s3://acme-raw/x/", "s3://acme-raw/sub/", "gs://acme-gcs/",
              "gs://acme-gcs/data/x.csv", "gs://acme-gcs/data/", "az://acct/c/az/", "az://acct/c/az/b.bin",
              "s3://acme-trail/", "arn:aws:iam::123456789012:role/x", None, "s3://", "a/b", "a", "s3:/x"]
SOURCES = [("aws.cloudtrail", "completed"), ("aws.s3_access", "received"), ("gcp.audit", "event"),
           ("azure.storage", "received")]
PRINCIPALS = [
    None,
    {},
    {"analyst": f"{ROLE}/*"},
    {"analyst": [f"{ROLE}/*", GCP_SA], "etl": "arn:aws:iam::123456789012:user/etl"},
    {"rogue": OTHER},
]
#: ``principals`` with ``"*"``: every agent without an entry, and the calls naming no agent
STAR_PRINCIPALS = [{"*": f"{ROLE}/*"}, {"analyst": GCP_SA, "*": [f"{ROLE}/*", OTHER]}]
ACTIONS = ["read", "list", "head", "write", "delete", "other"]


def _at(s: float) -> pd.Timestamp:
    return pd.Timestamp(T0 + timedelta(microseconds=round(s * 1e6)))


def _incident(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Door calls, storage requests and join options for one random incident."""
    r = random.Random(seed)
    r2 = random.Random(-1 - seed)  # the requests' addresses and clients: apart, so the rest stays as it was
    r4 = random.Random(20_000 + seed)  # which calls write: apart, so the rest stays as it was
    smap = r.choice(STORAGE_MAPS)
    tokens = r.choice(["none", "none", "call", "session", "mixed"])
    # -- the door
    rows, t = [], 0.0
    n_sess = r.randint(1, 4)
    for s in range(n_sess):
        agent = r.choice(["analyst", "analyst", "etl", "rogue", None])
        t = r.uniform(0, 40) if r.random() < 0.7 else t  # sessions overlap in time
        for seq in range(1, r.randint(1, 8) + 1):
            t += r.choice([0.0, 0.2, r.uniform(0, 3), r.uniform(0, 30)])
            start = float(int(t)) if r.random() < 0.2 else t
            end = None if r.random() < 0.25 else start + r.choice([0.0, r.uniform(0, 2), r.uniform(0, 8), -0.5])
            obj = r.choice(OBJECTS)
            row = {"door_session": f"sess-{s}", "agent": agent, "seq": seq if r.random() > 0.03 else None,
                   "ts": None if r.random() < 0.03 else _at(start), "ts_end": None if end is None else _at(end),
                   "tool": r.choice(["read_file", "list_folder", "describe"]), "object": obj,
                   "decision": r.choices(["allow", "deny", "ask"], [80, 15, 5])[0],
                   "rule": r.choice(["allow-demo", "no-dotenv", None])}
            if r4.random() < 0.2:  # a write: a refusal of it is not set beside a read
                row["tool"] = r4.choice(["put_object", "delete_file"])
            if r.random() < 0.15:
                row["objects"] = tuple(r.sample([o for o in OBJECTS if o], r.randint(1, 3)) + ([obj] if obj else []))
            if tokens == "call" or (tokens == "mixed" and r.random() < 0.5):
                row["correlation"] = r.choice([f"sess-{s}/{seq}"] * 6 + ["", None])
            elif tokens == "session" or tokens == "mixed":
                row["correlation"] = f"sess-{s}"
            rows.append(row)
            if r.random() < 0.12:  # another session on the same object at nearly the same moment
                rows.append({**row, "door_session": f"sess-{s + 10}", "seq": seq,
                             "ts": None if row["ts"] is None else _at(start + r.choice([0.0, 0.1, 0.4])),
                             "correlation": None if "correlation" not in row else f"sess-{s + 10}"})
    calls = CALLS.build(rows)
    if tokens != "none" and "correlation" not in calls.columns:
        calls["correlation"] = pd.array([None] * len(calls), dtype="string")
    mapped = [AJ.map_object(o, smap) for o in OBJECTS]
    uris = [u for u in mapped if u] + EXTRA_URIS
    principals = r.choice(PRINCIPALS + [PRINCIPALS[2]] * 2)
    r3 = random.Random(10_000 + seed)  # "*" in one incident in four: apart, so the rest stays as it was
    if r3.random() < 0.25:
        principals = r3.choice(STAR_PRINCIPALS)
    clock = r.choice([0.0, 0.0, 0.0, 40.0, -25.0, 130.0, 0.6])
    renew_at = float("inf") if seed % 3 == 1 else 10.0 + seed % 7 * 5  # (two in three incidents renew credentials)

    # -- the cloud
    arows: list[dict] = []
    for _ in range(r.randint(0, 40)):
        src, kind = r.choice(SOURCES)
        if rows and r.random() < 0.7:  # a request a call made
            c = r.choice(rows)
            ts0 = 0.0 if c["ts"] is None else (c["ts"] - _at(0)).total_seconds()
            dur = 0.0 if c["ts_end"] is None else (c["ts_end"] - c["ts"]).total_seconds() if c["ts"] else 0.0
            when = ts0 + clock + r.choice([r.uniform(-3, dur + 8), r.uniform(0, max(dur, 0.1)), 0.0])
            u = AJ.map_object(c["object"], smap) or r.choice(uris)
            if u and r.random() < 0.3:
                u = r.choice([u.rstrip("/") + "/", u + "/part-0", u.rsplit("/", 1)[0] + "/", u.replace(" ", "%20")])
            token = c.get("correlation") if r.random() < 0.8 else r.choice(["sess-0", "nobody", None])
            action = r.choice(["read", "read", "list", "head", r.choice(ACTIONS)])
        else:
            when, u, token = r.uniform(-20, 200) + clock, r.choice(uris), r.choice([None, None, "sess-1", "x"])
            action = r.choice(ACTIONS)
        if src in AJ.TIME_RESOLUTION_S and r.random() < 0.9:
            when = float(int(when // 1))
        who = r.choice([f"{ROLE}/door-analyst"] * 4 + [OTHER, GCP_SA, None, "arn:aws:iam::123456789012:user/etl"])
        if who == f"{ROLE}/door-analyst" and when > renew_at:  # renewed credentials: a new role session
            who = f"{ROLE}/door-analyst-2"
        arows.append({
            "ts": None if r.random() < 0.03 else _at(when), "time_kind": None if r.random() < 0.05 else kind,
            "source": src, "principal": who, "action": None if r.random() < 0.03 else action,
            "resource_uri": u, "outcome": r.choices(["allowed", "denied", "error"], [85, 10, 5])[0],
            "bytes": None if r.random() < 0.3 else r.randint(0, 5000),
            "request_id": r.choice([f"R{r.randint(0, 10 ** 6)}"] * 8 + ["-", "", None]),
            "correlation": token,
            "raw": r2.choice([{"sourceIPAddress": "198.51.100.20"}] * 5 + [{"remote_ip": "203.0.113.66"},
                                                                            {"sourceIPAddress": "-"}, {}]),
            "user_agent": r2.choice(["boto3/1.35"] * 5 + ["curl/8.4.0", None]),
        })
        if arows[-1]["ts"] is not None and r.random() < 0.18:  # the same request twice
            again = dict(arows[-1])
            if r.random() < 0.5:
                again["source"], again["time_kind"] = r.choice(SOURCES[:2])
            again["ts"] = again["ts"] + pd.Timedelta(seconds=r.choice([0, 0.4, 2, 30, 70, 400]))
            if r.random() < 0.15:
                again["action"] = r.choice(ACTIONS)
            arows.append(again)
    r.shuffle(arows)
    access = ACCESS.build(arows)
    if r.random() < 0.3:  # row labels that are not positions
        labels = list(range(7, 7 + 3 * len(access), 3))
        r.shuffle(labels)
        access.index = pd.Index(labels, dtype="int64")
    kw = {"storage_map": smap, "principals": principals,
          "window_s": r.choice([60.0, 60.0, 5.0, 0.5]), "lag_s": r.choice([5.0, 5.0, 0.0, 1.5]),
          "skew_s": r.choice([2.0, 2.0, 0.0, 0.5]),
          "offset_s": r.choice([None] * 5 + [0, 12.5, -3.0, 40.0]),
          "max_offset_s": r.choice([300.0, 300.0, 300.0, 0.0, 30.0])}
    if seed % 7 == 3:  # a door whose clock the user knows
        kw["door_offsets_s"] = {"etl": clock - 35.0, "nobody": 5.0}
    return calls, access, kw


N_INCIDENTS = 320


@functools.lru_cache(maxsize=None)
def _case(seed: int):
    """An incident and what the reference makes of it (computed once for both tests below)."""
    calls, access, kw = _incident(seed)
    return calls, access, kw, reference_join(calls, access, **kw)


def _assert_same(got, want) -> None:
    for name in ("links", "unexplained", "per_call", "duplicates"):
        pd.testing.assert_frame_equal(getattr(got, name), getattr(want, name), check_exact=True, obj=name)
    assert (got.offset_s, got.offset_requests) == (want.offset_s, want.offset_requests)
    assert (got.window_s, got.lag_s, got.skew_s) == (want.window_s, want.lag_s, want.skew_s)
    pd.testing.assert_frame_equal(got.door_offsets, want.door_offsets, check_exact=True, obj="door_offsets")
    assert got.to_dict() == want.to_dict()


@pytest.mark.parametrize("batch", range(8))
def test_random_incidents_join_as_the_reference(batch):
    for seed in range(batch * N_INCIDENTS // 8, (batch + 1) * N_INCIDENTS // 8):
        calls, access, kw, want = _case(seed)
        try:
            _assert_same(join_access(calls, access, **kw), want)
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}: {exc}") from None


#: the verdicts ``why`` gives, by the words that say which
VERDICTS = {"refused": "only a call the door refused matches", "principal": "but the request was made by",
            "no resource": "no resource in the access record", "outside": "resource outside every storage_map",
            "unmapped": "no door call's object maps", "not in window": "on this object within the time window",
            "unmapped call": "objects no storage_map entry covers (nearest:",
            "no call": "no door call on this object", "token": "belongs to door session(s)", "no time": "no time"}


def test_random_incidents_cover_every_case():
    """The incidents above meet each verdict the join can give, several times (so the test above
    compares the fast path on all of them, not on a few easy ones)."""
    seen: Counter = Counter()
    for seed in range(N_INCIDENTS):
        calls, access, kw, res = _case(seed)
        seen.update(f"how {h}" for h in res.links["how"])
        seen["tied"] += int((res.links["candidates"] > 1).sum())
        seen.update(f"dup {h}" for h in res.duplicates["how"])
        seen["offset measured"] += int(kw["offset_s"] is None and res.offset_s != 0)
        seen["refusal named"] += int(res.unexplained["refused_session"].notna().sum())
        named = res.unexplained[res.unexplained["refused_session"].notna()]
        seen["refused write named"] += int(named["action"].isin(["write", "delete"]).sum())
        seen["refusal by another principal"] += int((named["refused_agents_principal"] == False).sum())  # noqa: E712
        seen["several objects"] += int(calls["objects"].notna().sum())
        seen["other principal"] += int(res.links["other_principal"].sum())
        seen["other client"] += int(res.links["other_client"].sum())
        seen["client not known"] += int(res.links["other_client"].isna().sum())
        seen["principal not known"] += int(res.links["other_principal"].isna().sum())
        # principals["*"] is the principal of the calls naming no agent: linked by it, or refused by it
        if kw["principals"] and "*" in kw["principals"]:
            seen["star links no agent"] += int(((res.links["how"] == "principal+object+time")
                                                & res.links["agent"].isna()).sum())
            seen["star refuses no agent"] += sum('principals["*"] gives' in w for w in res.unexplained["why"])
        seen["offset unapplied"] += int(res.offset_unapplied_s is not None)
        d = res.door_offsets
        seen["door offset measured"] += int((d["applied"] & ~d["given"]).sum())
        seen["door offset unapplied"] += int((~d["applied"]).sum())
        seen["door offset given"] += int(d["given"].sum())
        # a door session's requests in one log under the first role session and its renewal
        for _, who in res.links.groupby(["door_session", "source"])["principal"]:
            seen["renewed role session"] += bool(who.eq(f"{ROLE}/door-analyst").any()
                                                 and who.eq(f"{ROLE}/door-analyst-2").any())
        for why in res.unexplained["why"]:
            seen["why " + next((k for k, words in VERDICTS.items() if words in why), why)] += 1
    for case in [f"how {h}" for h in AJ.LINK_HOWS] + [f"why {v}" for v in VERDICTS] + [
            "tied", "dup delivered again", "dup another log", "offset measured", "refusal named", "several objects",
            "other principal", "other client", "offset unapplied", "client not known", "principal not known",
            "renewed role session", "door offset measured", "door offset unapplied", "door offset given",
            "star links no agent", "star refuses no agent", "refused write named", "refusal by another principal"]:
        assert seen[case] >= 3, (case, seen)


def test_large_random_incident_in_small_chunks(monkeypatch):
    """Many requests on few objects, from forty incidents at once, joined a few requests at a
    time and all at once: the chunk boundaries change nothing."""
    calls_l, access_l = [], []
    for seed in range(1000, 1040):
        calls, access, _ = _incident(seed)
        calls_l.append(calls.assign(door_session=calls["door_session"] + f"-{seed}"))
        access_l.append(access)
    calls = pd.concat(calls_l, ignore_index=True)
    access = pd.concat(access_l, ignore_index=True)
    for kw in ({"storage_map": STORAGE_MAPS[1], "principals": PRINCIPALS[2]},
               {"storage_map": STORAGE_MAPS[2], "principals": None, "offset_s": 40.0}):
        want = reference_join(calls, access, **kw)
        for chunk in (7, 100_000):
            monkeypatch.setattr(AJ, "_CHUNK_ROWS", chunk)
            _assert_same(join_access(calls, access, **kw), want)


def test_the_token_tier_tests_the_object_the_object_index_does_not_find():
    """A call whose object maps to ``s3:`` reaches every ``s3://`` listing by the object rule
    (its folder ``s3:/`` is a prefix of them), but the object tiers look calls up by the folders
    after ``scheme://`` and never find it; the token tier tests the object itself.  So a listing
    carrying the call's token is linked to it, one without a token is not."""
    at = _at(0)
    calls = CALLS.build([
        {"door_session": "s", "agent": "analyst", "seq": 1, "ts": at, "ts_end": at + pd.Timedelta(seconds=1),
         "tool": "list_folder", "object": "w", "decision": "allow", "correlation": "tok"},
        {"door_session": "s", "agent": "analyst", "seq": 2, "ts": at + pd.Timedelta(seconds=100),
         "tool": "read_file", "object": "demo/x.csv", "decision": "allow", "correlation": "tok"}])
    access = ACCESS.build([{"ts": at + pd.Timedelta(seconds=0.5), "time_kind": "event", "source": "gcp.audit",
                            "action": "list", "resource_uri": "s3://acme-data/demo/", "outcome": "allowed",
                            "request_id": rid, "correlation": tok, "raw": {}} for rid, tok in (("A", "tok"),
                                                                                              ("B", None))])
    kw = {"storage_map": {"w": "s3:", "demo/": "s3://acme-data/demo/"}}
    got = join_access(calls, access, **kw)
    _assert_same(got, reference_join(calls, access, **kw))
    assert list(zip(got.links["request_id"], got.links["how"], got.links["call_uri"])) == [
        ("A", "correlation+object+time", "s3:")]
    assert list(got.unexplained["request_id"]) == ["B"]
    assert got.unexplained["why"].iloc[0] == "no door call on this object"


def _index_finds(uri: str | None, action: str, call_uri: str) -> bool:
    """The per-request join's object index (its ``reaching``): the URIs it looked calls up by."""
    if not uri:
        return False
    found = {uri, uri[:-1]} if uri.endswith("/") and uri not in ("s3://", "gs://", "az://") else {uri}
    if action in ("list", "head"):
        cut = uri.find("://") + 3
        while True:
            cut = uri.find("/", cut) + 1
            if cut <= 0:
                break
            found.update((uri[:cut], uri[:cut - 1]))
        found.add(uri + "/")
    if action == "list" and uri.endswith("/") and call_uri.endswith("/") and call_uri.startswith(uri):
        return True
    return call_uri in found


def test_the_object_relation_is_the_object_rule():
    """Every (resource, action) against every call URI, from the random incidents' URIs and their
    folders: the relation holds exactly the pairs the object rule matches, and marks as found by
    the object index exactly those the per-request join's index found."""
    r = random.Random(5)
    pool = sorted({u for u in EXTRA_URIS if u} | {AJ.map_object(o, m) for m in STORAGE_MAPS for o in OBJECTS} - {None})
    pool += [u.rsplit("/", 1)[0] for u in pool if "/" in u] + ["", "s3://acme-data/demo/sub"]
    for _ in range(20):
        keys = sorted({(r.choice(pool + [None]), r.choice(ACTIONS)) for _ in range(60)}, key=str)
        uris = sorted({u for u in r.sample(pool, 25) if u})
        rel = AJ._Relation([k[0] for k in keys], [k[1] for k in keys], uris)
        for k, (uri, action) in enumerate(keys):
            every = {uris[u] for u in rel.u_all[rel.ptr_all[k]:rel.ptr_all[k + 1]]}
            indexed = {uris[u] for u in rel.u[rel.ptr[k]:rel.ptr[k + 1]]}
            assert every == {u for u in uris if _object_match(uri, action, u)}, (uri, action)
            assert indexed == {u for u in every if _index_finds(uri, action, u)}, (uri, action)
