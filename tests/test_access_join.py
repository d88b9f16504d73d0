"""Door call ↔ cloud access join: a synthetic door log and CloudTrail delivery file
(``tests/fixtures/cloud/join``) with one storage request no call explains, plus the other tiers
and verdicts on small frames."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from replaybook.access_join import ACCESS_LINKS, join_access, map_object
from replaybook.errors import JoinError
from replaybook.frames import ACCESS, CALLS
from replaybook.sources.azure_storage import load_azure_storage
from replaybook.sources.cloudtrail import load_cloudtrail
from replaybook.sources.door import load_door

CLOUD = Path(__file__).resolve().parent / "fixtures" / "cloud"
ROLE = "arn:aws:sts::123456789012:assumed-role/door-reader/door-analyst"
SMAP = {"demo/": "s3://acme-data/demo/", "reference/": "s3://acme-data/reference/"}
PRINCIPALS = {"analyst": "arn:aws:sts::123456789012:assumed-role/door-reader/*"}


@pytest.fixture(scope="module")
def frames():
    calls = load_door(CLOUD / "join" / "door").frame
    access = load_cloudtrail(CLOUD / "join" / "cloudtrail.json").frame
    return calls, access


def test_links_and_the_unexplained_request(frames):
    calls, access = frames
    res = join_access(calls, access, storage_map=SMAP, principals=PRINCIPALS)
    ACCESS_LINKS.validate(res.links)
    links = res.links
    assert list(links["request_id"]) == ["J0", "J1", "J2", "J3"]
    assert list(links["call_seq"]) == [1, 2, 3, 3]  # seq 3 explains a read and its retry
    assert set(links["door_session"]) == {"door-sess-j"}
    assert set(links["how"]) == {"principal+object+time"}
    # CloudTrail eventTime is whole seconds: the listing "completed" 0.6 s before the door logged the call
    assert list(links["delta_ms"]) == [-600.0, 200.0, 600.0, 1600.0]
    assert list(links["call_uri"]) == ["s3://acme-data/demo/"] + ["s3://acme-data/demo/cars.sas7bdat"] * 3
    assert list(links["access_index"]) == [0, 1, 2, 3]

    un = res.unexplained
    assert len(un) == 1
    row = un.iloc[0]
    assert row["request_id"] == "J4" and row["access_index"] == 4
    assert row["resource_uri"] == "s3://acme-data/demo/customers.csv" and row["action"] == "read"
    assert row["principal"] == ROLE and bool(row["door_principal"]) is True
    assert row["bytes"] == 90210 and row["ts"] == pd.Timestamp("2026-09-13T10:03:10Z")
    assert row["why"] == "no door call on this object"

    pc = res.per_call.set_index("seq")
    assert list(pc["access_count"]) == [1, 1, 2, 0]
    # the listing logged no size and the refused call reached nothing: unknown, not 0 bytes
    assert pc["access_bytes"].tolist() == [pd.NA, 2048, 2048, pd.NA]
    assert pc.loc[4, "decision"] == "deny" and pc.loc[4, "call_uri"] == "s3://acme-data/reference/.env"

    d = res.to_dict()
    assert d["links"] == 4 and d["by_how"] == {"principal+object+time": 4}
    assert d["unexplained"][0]["resource_uri"] == "s3://acme-data/demo/customers.csv"


def test_a_read_during_a_folder_listing_is_not_explained_by_it(frames):
    calls, access = frames
    moved = access.copy()
    moved.loc[4, "ts"] = pd.Timestamp("2026-09-13T10:00:05.800Z")  # while list_folder demo/ was open
    res = join_access(calls, moved, storage_map=SMAP, principals=PRINCIPALS)
    assert 4 in set(res.unexplained["access_index"])
    assert res.unexplained.iloc[0]["why"] == "no door call on this object"


def test_without_principal_mapping_the_tier_says_so(frames):
    calls, access = frames
    res = join_access(calls, access, storage_map=SMAP)
    assert set(res.links["how"]) == {"object+time"}
    assert res.unexplained["door_principal"].isna().all()


def test_wrong_principal_is_not_linked(frames):
    calls, access = frames
    res = join_access(calls, access, storage_map=SMAP, principals={"analyst": "arn:aws:iam::999999999999:user/*"})
    assert res.links.empty and len(res.unexplained) == 5
    first = res.unexplained.iloc[0]
    assert first["request_id"] == "J0"
    # the listing fits seq 1 in object and time: the principal is what does not fit
    assert first["why"] == ("a door call on this object fits the time (session door-sess-j seq 1), but the request "
                            f"was made by {ROLE}, not a principal the door's agent analyst acts as")
    # the customers.csv read fits no call at all (and not the principal either)
    last = res.unexplained.set_index("request_id").loc["J4", "why"]
    assert last == "no door call on this object"


def test_refused_calls_and_unreachable_resources_from_the_case_tree(frames):
    calls, _ = frames
    access = load_cloudtrail(CLOUD / "cloudtrail-tree" / "AWSLogs").frame
    res = join_access(calls, access, storage_map=SMAP, principals=PRINCIPALS)
    assert list(res.links["request_id"]) == ["REQ0", "REQ1"]
    un = res.unexplained.set_index("action_raw")
    assert un.loc["GetObject", "resource_uri"] == "s3://acme-data/reference/.env"
    assert un.loc["GetObject", "why"] == ("only a call the door refused matches (session door-sess-j seq 4): "
                                          "the door says it did not forward it")
    assert un.loc["GetBucketAcl", "why"] == "resource outside every storage_map target: no door call can reach it"
    # rows of the door's own principal first
    assert list(res.unexplained["door_principal"]) == [True, False]
    # the object the door refused, reached anyway: the refusal named in columns, not only in words
    refused_call_ts = calls.set_index("seq").loc[4, "ts"]
    assert (un.loc["GetObject", "refused_session"], un.loc["GetObject", "refused_seq"]) == ("door-sess-j", 4)
    assert un.loc["GetObject", "since_refusal_s"] == pytest.approx(
        (un.loc["GetObject", "ts"] - refused_call_ts).total_seconds())
    assert pd.isna(un.loc["GetBucketAcl", "refused_session"]) and pd.isna(un.loc["GetBucketAcl", "since_refusal_s"])
    got = {u["resource_uri"]: u["refused_call"] for u in res.to_dict()["unexplained"]}
    assert got == {"s3://acme-data/reference/.env": {"door_session": "door-sess-j", "seq": 4, "rule": "no-dotenv",
                                                   "since_refusal_s": -0.4, "agents_principal": True},
                   "s3://acme-trail/": None}


def test_a_refused_object_read_later_names_the_last_refusal_before_it():
    """A storage read of an object the door refused twice, minutes before: the refusal it
    follows is the latest one before it, and a request before any refusal names the first after."""
    rows = [{"door_session": "s", "agent": "analyst", "seq": i + 1, "ts": ts, "ts_end": ts, "tool": "read_object",
             "object": "reference/.env", "decision": "deny", "rule": f"r{i + 1}", "arguments": {}}
            for i, ts in enumerate(["2026-09-13T10:00:00Z", "2026-09-13T10:05:00Z", "2026-09-13T10:20:00Z"])]
    calls = CALLS.build(rows)
    access = load_cloudtrail(CLOUD / "join" / "cloudtrail.json").frame.iloc[:2].copy()
    access["resource_uri"] = pd.array(["s3://acme-data/reference/.env"] * 2, dtype="string")
    access["action"] = pd.array(["read"] * 2, dtype="string")
    access["ts"] = pd.to_datetime(["2026-09-13T09:59:00Z", "2026-09-13T10:10:00Z"], utc=True)
    un = join_access(calls, access, storage_map=SMAP).unexplained.sort_values("ts")
    assert list(un["refused_seq"]) == [1, 2]
    assert list(un["refused_rule"]) == ["r1", "r2"]
    assert list(un["since_refusal_s"]) == [-60.0, 300.0]


def _azure_calls() -> pd.DataFrame:
    rows = [
        {"door_session": "door-sess-a", "agent": "analyst", "seq": 1, "ts": "2026-09-13T10:00:05.000Z",
         "ts_end": "2026-09-13T10:00:05.400Z", "tool": "list_folder", "object": "demo/", "decision": "allow",
         "arguments": {"path": "demo/"}},
        {"door_session": "door-sess-a", "agent": "analyst", "seq": 2, "ts": "2026-09-13T10:00:21.200Z",
         "ts_end": "2026-09-13T10:00:21.700Z", "tool": "describe", "object": "demo/cars v2.csv", "decision": "allow",
         "arguments": {"path": "demo/cars v2.csv"}},
        {"door_session": "door-sess-b", "agent": "analyst", "seq": 1, "ts": "2026-09-13T10:59:59.500Z",
         "tool": "describe", "object": "demo/cars v2.csv", "decision": "allow", "arguments": {}},
    ]
    calls = CALLS.build(rows)
    calls["correlation"] = pd.array(["door-sess-a/1", "door-sess-a/2", "door-sess-b/1"], dtype="string")
    return calls


def test_correlation_tier_with_azure_client_request_ids():
    access = load_azure_storage(CLOUD / "azure").frame
    res = join_access(_azure_calls(), access, storage_map={"demo/": "az://acmedata/demo-data/demo/"})
    by_rid = res.links.set_index("request_id")
    assert by_rid.loc["3f1a0000-401e-0053-6c1d-e6a2b8000000", "how"] == "correlation"
    assert by_rid.loc["3f1a0001-401e-0053-6c1d-e6a2b8000000", "how"] == "correlation"
    assert by_rid.loc["3f1a0010-401e-0053-6c1d-e6a2b8000000", "door_session"] == "door-sess-b"
    assert by_rid.loc["3f1a0010-401e-0053-6c1d-e6a2b8000000", "time_kind"] == "received"
    assert len(res.links) == 3
    # ListContainers (door-sess-b/2) names a token no call has, and no call lists the account
    assert set(res.unexplained["request_id"]) == {
        "3f1a0002-401e-0053-6c1d-e6a2b8000000", "3f1a0003-401e-0053-6c1d-e6a2b8000000",
        "3f1a0004-401e-0053-6c1d-e6a2b8000000", "3f1a0005-401e-0053-6c1d-e6a2b8000000",
        "3f1a0011-401e-0053-6c1d-e6a2b8000000"}


def test_shared_per_session_token_decides_by_object_and_time(frames):
    calls, access = frames
    calls = calls.copy()
    calls["correlation"] = pd.array(["door-analyst"] * len(calls), dtype="string")
    res = join_access(calls, access, storage_map=SMAP)
    assert list(res.links["how"]) == ["correlation+object+time"] * 4
    assert list(res.links["call_seq"]) == [1, 2, 3, 3]
    assert res.unexplained.iloc[0]["why"].startswith("correlation 'door-analyst' belongs to door session(s) door-sess-j")


def test_received_time_has_no_completion_lag():
    calls = CALLS.build([{"door_session": "s", "agent": "a", "seq": 1, "ts": "2026-09-13T10:00:00Z",
                          "ts_end": "2026-09-13T10:00:01Z", "tool": "t", "object": "s3://b/k", "decision": "allow"}])
    rows = []
    for kind in ("received", "completed"):
        rows.append({"ts": "2026-09-13T10:00:05Z", "time_kind": kind, "source": "x", "action": "read",
                     "resource_uri": "s3://b/k", "outcome": "allowed", "raw": {}})
    from replaybook.frames import ACCESS
    access = ACCESS.build(rows)
    res = join_access(calls, access, lag_s=5.0, skew_s=0.0)
    assert list(res.links["time_kind"]) == ["completed"]
    assert list(res.unexplained["time_kind"]) == ["received"]


def test_map_object_and_errors(frames):
    # the longest entry wins, whole path segments only: "demo/a" names demo/a and what is under it
    assert map_object("demo/a.csv", {"demo/": "s3://x/d/", "demo/a": "s3://y/"}) == "s3://x/d/a.csv"
    assert map_object("demo/a/b.csv", {"demo/": "s3://x/d/", "demo/a": "s3://y/"}) == "s3://y/b.csv"
    # the folder as the door logs it (normalised: no trailing slash), and the data root
    assert map_object("demo", SMAP) == "s3://acme-data/demo/"
    assert map_object(".", SMAP) == "s3://acme-data/"
    assert map_object(".", {"demo/": "s3://x/d/", "ref/": "s3://y/ref/"}) is None  # no folder they share
    assert map_object(".", {"": "gs://b/root/"}) == "gs://b/root/"
    # a key with a slash and a target without one still maps folder to folder
    assert map_object("demo/a.csv", {"demo/": "s3://x/d"}) == "s3://x/d/a.csv"
    assert map_object("gs://b/k", None) == "gs://b/k"
    assert map_object("other/a.csv", SMAP) is None
    assert map_object(None, SMAP) is None
    calls, access = frames
    with pytest.raises(JoinError, match="window_s"):
        join_access(calls, access, window_s=-1)
    with pytest.raises(JoinError, match="offset_s"):
        join_access(calls, access, offset_s=float("nan"))
    with pytest.raises(JoinError, match="max_offset_s"):
        join_access(calls, access, max_offset_s=-1)
    with pytest.raises(JoinError, match="lacks columns"):
        join_access(calls.drop(columns=["object"]), access)
    empty = join_access(calls.iloc[0:0], access, storage_map=SMAP)
    assert empty.links.empty and len(empty.unexplained) == len(access) and empty.per_call.empty


def test_one_request_in_cloudtrail_and_the_server_access_log_as_the_readme_says():
    """README "One request in two records": a CloudTrail record and an S3 server access log line
    are one request by request id, provider, action and resource, no more than
    window_s + lag_s + 2·skew_s apart (69 s by default); otherwise both count."""
    from replaybook.frames import ACCESS

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert ("A CloudTrail record and an S3 server access log line are one\nrequest when they share the "
            "**request id**") in readme
    assert "`window_s + lag_s + 2·skew_s` after the first (69 s by default)" in readme
    t0 = pd.Timestamp("2026-11-20T14:03:40Z")
    calls = CALLS.build([dict(door_session="s", agent="analyst", seq=1, ts=t0 - pd.Timedelta(minutes=30),
                              object="demo/a.csv", decision="allow")])

    def pair(after_s: float, rid_s3: str = "R1", action_s3: str = "read") -> list[str]:
        access = ACCESS.build([
            dict(ts=t0, time_kind="completed", source="aws.cloudtrail", principal=ROLE, action="read",
                 action_raw="GetObject", resource_uri="s3://acme-data/demo/b.csv", outcome="allowed",
                 request_id="R1", raw={}),
            dict(ts=t0 + pd.Timedelta(seconds=after_s), time_kind="received", source="aws.s3_access",
                 principal=ROLE, action=action_s3, action_raw="REST.GET.OBJECT",
                 resource_uri="s3://acme-data/demo/b.csv", outcome="allowed", request_id=rid_s3, raw={})])
        res = join_access(calls, access, storage_map=SMAP, offset_s=0)
        return [f"{r.source} {r.how} of {r.same_as}" for r in res.duplicates.itertuples()] + \
            [f"unexplained {s}" for s in res.unexplained["source"]]

    assert pair(0) == ["aws.s3_access another log of 0", "unexplained aws.cloudtrail"]
    assert pair(69) == ["aws.s3_access another log of 0", "unexplained aws.cloudtrail"]
    assert pair(70) == ["unexplained aws.cloudtrail", "unexplained aws.s3_access"]
    assert pair(1, rid_s3="-") == ["unexplained aws.cloudtrail", "unexplained aws.s3_access"]
    assert pair(1, action_s3="head") == ["unexplained aws.cloudtrail", "unexplained aws.s3_access"]


ATTACKER = "arn:aws:sts::999999999999:assumed-role/attacker/door-analyst"


@pytest.mark.parametrize("per_call", [False, True])
def test_a_token_from_another_principal_explains_nothing_when_the_agents_principals_are_known(frames, per_call):
    """A role session name is whatever the caller of AssumeRole chose: another account's request
    carrying the door's token had been linked to the door's call (in the one-call tier on any
    object), and counted as explained."""
    calls, access = frames
    calls, access = calls.copy(), access.copy()
    if per_call:  # each call its own token; J1 carries seq 2's but asks for another object
        calls["correlation"] = pd.array([f"door-analyst/{s}" for s in calls["seq"]], dtype="string")
        access["correlation"] = pd.array([f"door-analyst/{s}" for s in (1, 2, 3, 3, 9)], dtype="string")
        access.loc[1, "resource_uri"] = "s3://acme-data/reference/.env"
    else:
        calls["correlation"] = pd.array(["door-analyst"] * len(calls), dtype="string")
    access.loc[1, "principal"] = ATTACKER
    res = join_access(calls, access, storage_map=SMAP, principals=PRINCIPALS)
    assert list(res.links["request_id"]) == ["J0", "J2", "J3"]
    how = "correlation" if per_call else "correlation+object+time"
    assert set(res.links["how"]) == {how}
    un = res.unexplained.set_index("request_id")
    assert un.loc["J1", "why"] == (f"its correlation {'door-analyst/2' if per_call else 'door-analyst'!r} is a door "
                                   f"call's (session door-sess-j seq 2), but the request was made by {ATTACKER}, "
                                   "not a principal the door's agent analyst acts as")
    # without a principals mapping the token alone still links, as documented (the weaker tier)
    res = join_access(calls, access, storage_map=SMAP)
    assert "J1" in set(res.links["request_id"])


@pytest.mark.parametrize("logged", ["demo", "demo/"])
@pytest.mark.parametrize("action", ["list", "head"])
def test_a_listing_of_the_folder_without_its_slash_is_the_folder_calls(logged, action):
    """``aws s3 ls s3://acme-data/demo`` (and a door tool that lists the path as the door
    normalised it) asks for ``prefix=demo``: that listing — and a stat of ``demo`` before
    ``demo/`` — is the listing call's on ``demo/``, whichever way the door logged the folder;
    a read of an object named ``demo`` is not."""
    calls = CALLS.build([{"door_session": "s", "agent": "analyst", "seq": 1, "ts": "2026-09-13T10:00:10Z",
                          "ts_end": "2026-09-13T10:00:11Z", "tool": "list_folder", "object": logged,
                          "decision": "allow", "rule": "r", "arguments": {}}])
    access = ACCESS.build([{"ts": pd.Timestamp("2026-09-13T10:00:10Z"), "time_kind": "received",
                            "source": "aws.s3_access", "principal": ROLE, "action": a,
                            "resource_uri": "s3://acme-data/demo", "outcome": "allowed",
                            "request_id": f"R{i}", "raw": {}} for i, a in enumerate([action, "read"])])
    res = join_access(calls, access, storage_map=SMAP, offset_s=0)
    assert list(res.links["request_id"]) == ["R0"]
    assert list(res.links["call_uri"]) == ["s3://acme-data/demo/"]
    assert list(res.unexplained["request_id"]) == ["R1"]
    assert res.per_call["access_count"].tolist() == [1]


def test_a_clients_port_is_not_another_address():
    """Azure logs the caller as ``ip:port``, and each connection of one client comes from a port
    of its own: the agent's three reads from 10.0.0.1 are one address, and only the read from
    another host (its port alike) is flagged as another client."""
    calls = CALLS.build([{"door_session": "s", "agent": "analyst", "seq": 1, "ts": "2026-09-13T10:00:10Z",
                          "ts_end": "2026-09-13T10:00:12Z", "tool": "read_object", "object": "demo/c.csv",
                          "decision": "allow", "rule": "r", "arguments": {}}])
    addresses = ["10.0.0.1:50001", "10.0.0.1:50002", "10.0.0.1:50003", "203.0.113.9:50001"]
    access = ACCESS.build([{"ts": pd.Timestamp("2026-09-13T10:00:10Z") + pd.Timedelta(milliseconds=100 * i),
                            "time_kind": "received", "source": "azure.storage", "principal": "oid-1",
                            "action": "read", "resource_uri": "az://acct/data/demo/c.csv", "outcome": "allowed",
                            "request_id": f"R{i}", "user_agent": "azsdk", "raw": {"callerIpAddress": ip}}
                           for i, ip in enumerate(addresses)])
    res = join_access(calls, access, storage_map={"demo/": "az://acct/data/demo/"}, offset_s=0)
    links = res.links.set_index("request_id")
    assert links["other_client"].tolist() == [False, False, False, True]
    assert links["source_ip"].tolist() == addresses  # as logged, port and all
    assert res.per_call["note"].iat[0] == (
        "1 of its 4 requests came from another address/client (203.0.113.9:50001, azsdk) than most of its door "
        "session's requests by that principal in that log (10.0.0.1, azsdk)")


@pytest.mark.parametrize("tool, action", [("create_directory", "write"), ("delete_directory", "delete")])
def test_a_folder_marker_is_the_folder_calls(tool, action):
    """A folder of object storage is the object ``newdir/``; the door logs the folder it was
    asked for without its slash (``demo/newdir``).  The marker's PutObject / DeleteObject is
    that call's, not a request no door call explains — and a write of another object under it
    still is not."""
    calls = CALLS.build([{"door_session": "s", "agent": "analyst", "seq": 1, "ts": "2026-09-13T10:00:05Z",
                          "ts_end": "2026-09-13T10:00:06Z", "tool": tool, "object": "demo/newdir",
                          "decision": "allow", "rule": "r", "arguments": {}}])
    access = ACCESS.build([{"ts": pd.Timestamp("2026-09-13T10:00:05Z"), "time_kind": "received",
                            "source": "aws.s3_access", "principal": ROLE, "action": action,
                            "resource_uri": uri, "outcome": "allowed", "request_id": f"R{i}", "raw": {}}
                           for i, uri in enumerate(["s3://acme-data/demo/newdir/", "s3://acme-data/demo/newdir/x.csv"])])
    res = join_access(calls, access, storage_map=SMAP, offset_s=0)
    assert list(res.links["request_id"]) == ["R0"]
    assert list(res.unexplained["request_id"]) == ["R1"]
    assert res.per_call["access_count"].tolist() == [1]


def test_a_bucket_level_listing_is_not_warned_of_as_a_prefix_no_request_has():
    """GCS audit logs record a listing of ``data/`` at bucket level (``gs://acme-gcs/``): the
    listing links to the call, so the storage_map entry is not one "no call on those objects can
    be linked" by — while a prefix in another bucket still is warned of."""
    calls = CALLS.build([{"door_session": "s", "agent": "analyst", "seq": 1, "ts": "2026-09-13T10:00:10Z",
                          "ts_end": "2026-09-13T10:00:11Z", "tool": "list_folder", "object": "data",
                          "decision": "allow", "rule": "r", "arguments": {}}])
    access = ACCESS.build([{"ts": pd.Timestamp("2026-09-13T10:00:10.3Z"), "time_kind": "event", "source": "gcp.audit",
                            "principal": "door-reader@acme-proj.iam.gserviceaccount.com", "action": "list",
                            "resource_uri": "gs://acme-gcs/", "outcome": "allowed", "request_id": "a1", "raw": {}}])
    smap = {"data/": "gs://acme-gcs/data/", "other/": "gs://elsewhere/other/"}
    res = join_access(calls, access, storage_map=smap, offset_s=0)
    assert list(res.links["request_id"]) == ["a1"]
    assert res.warnings == ["storage_map 'other/' → 'gs://elsewhere/other/' names a storage prefix no request in the "
                            "access logs has: no call on those objects can be linked"]


def test_an_s3_bucket_level_listing_hides_no_typo_in_the_storage_map():
    """An S3 listing names its prefix: one of the whole bucket (`aws s3 ls s3://acme-data/`) had
    silenced the warning for a storage_map prefix with a typo in it (dmeo/), which no request
    has — only a GCS audit log's bucket-level listing stands for its folders."""
    calls = CALLS.build([{"door_session": "s", "agent": "analyst", "seq": 1, "ts": "2026-09-13T10:00:10Z",
                          "ts_end": "2026-09-13T10:00:11Z", "tool": "read_file", "object": "demo/a.csv",
                          "decision": "allow", "rule": "r", "arguments": {}}])
    access = ACCESS.build([{"ts": pd.Timestamp("2026-09-13T10:00:10.3Z"), "time_kind": "received",
                            "source": "aws.s3_access", "principal": ROLE, "action": act, "resource_uri": uri,
                            "outcome": "allowed", "request_id": f"R{i}", "raw": {}}
                           for i, (act, uri) in enumerate([("read", "s3://acme-data/demo/a.csv"),
                                                           ("list", "s3://acme-data/")])])
    res = join_access(calls, access, storage_map={"demo/": "s3://acme-data/dmeo/"}, offset_s=0)
    assert res.warnings == ["storage_map 'demo/' → 's3://acme-data/dmeo/' names a storage prefix no request in the "
                            "access logs has: no call on those objects can be linked"]


@pytest.mark.parametrize("tool", ["list_folder", "read_file", "get_file_info"])
@pytest.mark.parametrize("action", ["write", "delete"])
def test_a_folder_markers_change_is_not_a_reading_calls(tool, action):
    """A listing, read or stat of ``demo/newdir`` creates or deletes no folder marker: the marker's
    PutObject / DeleteObject made meanwhile stays a request no door call explains (a read of the
    marker, or a listing of the folder, is still that call's)."""
    calls = CALLS.build([{"door_session": "s", "agent": "analyst", "seq": 1, "ts": "2026-09-13T10:00:05Z",
                          "ts_end": "2026-09-13T10:00:06Z", "tool": tool, "object": "demo/newdir",
                          "decision": "allow", "rule": "r", "arguments": {}}])
    access = ACCESS.build([{"ts": pd.Timestamp("2026-09-13T10:00:05Z"), "time_kind": "received",
                            "source": "aws.s3_access", "principal": ROLE, "action": act,
                            "resource_uri": "s3://acme-data/demo/newdir/", "outcome": "allowed", "request_id": f"R{i}",
                            "raw": {}} for i, act in enumerate([action, "read", "list"])])
    res = join_access(calls, access, storage_map=SMAP, offset_s=0)
    assert list(res.links["request_id"]) == ["R1", "R2"]
    assert list(res.unexplained["request_id"]) == ["R0"]
    assert res.unexplained["why"].iat[0] == "no door call on this object"


def test_request_id_kind_tells_a_request_id_without_parsing_a_compact_record():
    """``AccessJoinResult.to_dict()`` labels every unexplained request's id: for a CloudTrail
    delivery file's record (read on first use, about 130 µs to parse) reading ``requestID`` parsed
    every one, minutes for a million rows nobody opens.  A record whose text writes
    ``"requestID":"<its id>"`` is told without parsing; any other is parsed and read."""
    import json as _json

    from replaybook.access_join import request_id_kind
    from replaybook.sources._record import SourceRecord

    def parse(text):
        return _json.loads(text)

    with_id = SourceRecord(b'{"eventID":"e-1","requestID":"R1","eventName":"GetObject"}', parse)
    lower = SourceRecord('{"eventID":"e-4","requestId":"R4","eventName":"GetObject"}', parse)
    without = SourceRecord(b'{"eventID":"e-2","eventName":"ConsoleLogin"}', parse)
    null_id = SourceRecord(b'{"eventID":"e-3","requestID":null,"eventName":"x",'
                           b'"responseElements":{"note":"\\"requestID\\":\\"e-3\\""}}', parse)
    assert request_id_kind("aws.cloudtrail", with_id, "R1") == "request id" and not with_id.parsed
    assert request_id_kind("aws.cloudtrail", lower, "R4") == "request id" and not lower.parsed
    assert request_id_kind("aws.cloudtrail", without, "e-2") == "event id" and without.parsed
    assert request_id_kind("aws.cloudtrail", null_id, "e-3") == "event id"
    assert request_id_kind("aws.cloudtrail", {"eventID": "e-5", "requestID": "R5"}, "R5") == "request id"
