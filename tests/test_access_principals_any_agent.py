"""``principals["*"]``: the principal(s) of every door agent without an entry of its own, and of
calls that name no agent (a gateway that logs no client, such as Gatekit); and the warning for a
``principals`` key that names no agent of the calls.  Frames written here, modelled on a Gatekit
log (no agent) beside a door log (agent ``analyst``) and an S3 server access log."""

from __future__ import annotations

import json

import pandas as pd

from replaybook.access_join import join_access, principals_warning
from replaybook.cli import main
from replaybook.frames import ACCESS, CALLS
from replaybook.report.sections import access_section

GATEKIT_ROLE = "arn:aws:sts::123456789012:assumed-role/gatekit-files/prep"
DOOR_ROLE = "arn:aws:sts::123456789012:assumed-role/door-reader/door-analyst"
JDOE = "arn:aws:iam::123456789012:user/jdoe"
SMAP = {"data/": "s3://acme-sales/data/"}


def _calls():
    return CALLS.build([
        {"door_session": "gatekit:unknown-agent:2026-11-20", "agent": None, "seq": 1, "ts": "2026-11-20T09:58:10Z",
         "ts_end": "2026-11-20T09:58:10.6Z", "tool": "files__describe", "object": "data/sales.parquet",
         "decision": "allow"},
        {"door_session": "door-a1", "agent": "analyst", "seq": 1, "ts": "2026-11-20T10:00:08Z",
         "ts_end": "2026-11-20T10:00:08.5Z", "tool": "read_object", "object": "data/sales.csv", "decision": "allow"},
        {"door_session": "door-b1", "agent": "reviewer", "seq": 1, "ts": "2026-11-20T10:05:00Z",
         "ts_end": "2026-11-20T10:05:00.5Z", "tool": "read_object", "object": "data/sales.csv", "decision": "allow"},
    ])


def _access():
    def req(ts, who, key, rid):
        return {"ts": ts, "time_kind": "received", "source": "aws.s3_access", "principal": who, "action": "read",
                "resource_uri": f"s3://acme-sales/{key}", "outcome": "allowed", "request_id": rid,
                "source_file": "s3.log", "line_no": int(rid[-1]), "raw": {}}
    return ACCESS.build([
        req("2026-11-20T09:58:10Z", GATEKIT_ROLE, "data/sales.parquet", "R1"),  # the gateway's own read
        req("2026-11-20T09:58:10Z", JDOE, "data/sales.parquet", "R2"),          # jdoe's curl, same second
        req("2026-11-20T10:00:08Z", DOOR_ROLE, "data/sales.csv", "R3"),
        req("2026-11-20T10:05:00Z", GATEKIT_ROLE, "data/sales.csv", "R4"),      # reviewer: no entry of its own
    ])


def test_star_gives_calls_with_no_agent_a_principal():
    res = join_access(_calls(), _access(), storage_map=SMAP, offset_s=0,
                      principals={"analyst": "arn:aws:sts::123456789012:assumed-role/door-reader/*",
                                  "*": "arn:aws:sts::123456789012:assumed-role/gatekit-files/*"})
    links = res.links.set_index("request_id")
    assert links.loc["R1", "door_session"] == "gatekit:unknown-agent:2026-11-20"
    assert links.loc["R1", "how"] == "principal+object+time"
    assert links.loc["R3", "how"] == "principal+object+time"
    assert links.loc["R4", ["door_session", "how"]].tolist() == ["door-b1", "principal+object+time"]
    # jdoe's read at the gateway call's time is not that call's: the call's principal is known now
    assert res.unexplained["request_id"].tolist() == ["R2"]
    assert res.unexplained.iloc[0]["why"] == (
        "a door call on this object fits the time (session gatekit:unknown-agent:2026-11-20 seq 1), but the request "
        f"was made by {JDOE}, not one principals[\"*\"] gives the door's calls that name no agent")
    assert res.warnings == []


def test_without_star_a_call_with_no_agent_takes_anyones_read():
    res = join_access(_calls(), _access(), storage_map=SMAP, offset_s=0,
                      principals={"analyst": "arn:aws:sts::123456789012:assumed-role/door-reader/*"})
    assert res.unexplained["request_id"].tolist() == []
    assert set(res.links.loc[res.links["door_session"] == "gatekit:unknown-agent:2026-11-20", "how"]) == {"object+time"}


def test_an_agents_own_entry_wins_over_star():
    res = join_access(_calls(), _access(), storage_map=SMAP, offset_s=0,
                      principals={"reviewer": DOOR_ROLE, "*": "arn:aws:sts::123456789012:assumed-role/gatekit-files/*"})
    # reviewer acts as the door role only: the gatekit role's read at its time is not its
    assert "R4" in res.unexplained["request_id"].tolist()
    assert "not a principal the door's agent reviewer acts as" in \
        res.unexplained.set_index("request_id").loc["R4", "why"]


def test_a_principals_key_naming_no_agent_is_warned_of():
    principals = {"analyst": DOOR_ROLE, "unknown-agent": GATEKIT_ROLE, "*": GATEKIT_ROLE}
    want = ("principals names an agent no door call has: unknown-agent (it applies to nothing); the calls' agents: "
            "analyst, reviewer, and 1 call names no agent (principals[\"*\"] gives the principal of every agent "
            "without an entry of its own, and of those)")
    assert principals_warning(_calls(), principals) == want
    res = join_access(_calls(), _access(), storage_map=SMAP, offset_s=0, principals=principals)
    assert res.warnings == [want] and res.to_dict()["warnings"] == [want]
    html = access_section(res, _access())
    assert "<b>Warning:</b> principals names an agent no door call has: unknown-agent" in html
    assert principals_warning(_calls(), {"*": GATEKIT_ROLE, "analyst": DOOR_ROLE}) is None


def test_access_command_warns_on_stderr_and_takes_star(tmp_path, capsys):
    door = tmp_path / "door" / "analyst"
    door.mkdir(parents=True)
    (door / "s1.jsonl").write_text(json.dumps(
        {"ts": "2026-11-20T10:00:08Z", "ts_end": "2026-11-20T10:00:08.5Z", "session": "s1", "seq": 1,
         "agent": "analyst", "server": "files", "tool": "read_object", "arguments": {"path": "data/sales.csv"},
         "object": "data/sales.csv", "decision": "allow", "rule": "r"}) + "\n")
    gk = tmp_path / "gatekit_audit.jsonl"
    gk.write_text("".join(json.dumps(r) + "\n" for r in [
        {"timestamp": "2026-11-20T09:58:10.000000Z", "event_type": "REQUEST", "request_id": 2, "server_name": "files",
         "method": "tools/call", "pipeline_outcome": "allowed", "security_evaluated": True,
         "pipeline": {"pipeline_outcome": "allowed"}, "reason": "", "tool": "files__describe",
         "request_body": {"name": "files__describe", "arguments": {"path": "data/sales.parquet"}}},
        {"timestamp": "2026-11-20T09:58:10.600000Z", "event_type": "RESPONSE", "request_id": 2, "server_name": "files",
         "method": "tools/call", "pipeline_outcome": "allowed", "security_evaluated": True,
         "pipeline": {"pipeline_outcome": "allowed"}, "reason": "", "response_status": "success",
         "tool": "files__describe", "duration_ms": 600}]))
    line = ('79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be acme-sales [20/Nov/2026:{t} +0000] '
            '{ip} {who} {rid} REST.GET.OBJECT {key} "GET /acme-sales/{key} HTTP/1.1" 200 - 2100 2100 12 11 "-" '
            '"{ua}" - hostid{rid}= SigV4 ECDHE-RSA-AES128-GCM-SHA256 AuthHeader acme-sales.s3.us-east-1.amazonaws.com '
            'TLSv1.2 - -\n')
    (tmp_path / "s3.log").write_text(
        line.format(t="09:58:10", ip="10.0.3.21", who=GATEKIT_ROLE, rid="7A11PREPGETP0002", key="data/sales.parquet",
                    ua="aws-sdk-go-v2/1.30.0")
        + line.format(t="09:58:10", ip="203.0.113.50", who=JDOE, rid="9C33JDOEGETP0008", key="data/sales.parquet",
                      ua="curl/8.5.0")
        + line.format(t="10:00:08", ip="10.0.4.10", who=DOOR_ROLE, rid="8B22ANLSGETC0005", key="data/sales.csv",
                      ua="Boto3/1.35.0"))
    args = ["access", "--calls", str(tmp_path / "door"), "--calls", str(gk), "--access", str(tmp_path / "s3.log"),
            "--storage-map", "data/=s3://acme-sales/data/", "--storage-clock-ahead", "0",
            "--principal", f"analyst={DOOR_ROLE}", "--format", "json"]
    assert main(args + ["--principal", "unknown-agent=arn:aws:sts::*"]) == 0
    out = capsys.readouterr()
    assert ("replaybook: warning: principals names an agent no door call has: unknown-agent (it applies to "
            "nothing); the calls' agents: analyst, and 1 call names no agent") in out.err
    d = json.loads(out.out)
    assert [u["request_id"] for u in d["unexplained"]] == []            # jdoe's read taken for the gateway's call
    assert main(args + ["--principal", "*=arn:aws:sts::123456789012:assumed-role/gatekit-files/*"]) == 0
    out = capsys.readouterr()
    assert "warning" not in out.err
    d = json.loads(out.out)
    assert [u["request_id"] for u in d["unexplained"]] == ["9C33JDOEGETP0008"]
    assert d["warnings"] == []


def test_a_principal_that_several_entries_match_is_the_closest_entrys():
    """``analyst`` acts as any session of the door-reader role, ``ops`` as its ``door-ops-*``
    sessions: a read made as ``door-ops-7`` at a moment both agents' calls on the object fit is
    ops's, not analyst's (both patterns match it; ops's names it more closely). Before, both
    agents agreed and the read was linked to whichever call came nearer — the analyst's."""
    role = "arn:aws:sts::123456789012:assumed-role/door-reader/"

    def c(session, agent, start, end):
        return {"door_session": session, "agent": agent, "seq": 1, "ts": start, "ts_end": end,
                "tool": "read_object", "object": "data/sales.csv", "decision": "allow"}

    def r(ts, who, rid):
        return {"ts": ts, "time_kind": "received", "source": "aws.s3_access", "principal": who, "action": "read",
                "resource_uri": "s3://acme-sales/data/sales.csv", "outcome": "allowed", "request_id": rid,
                "source_file": "s3.log", "line_no": int(rid[-1]), "raw": {}}

    calls = CALLS.build([c("door-a1", "analyst", "2026-11-20T10:00:08Z", "2026-11-20T10:00:08.6Z"),
                         c("door-o1", "ops", "2026-11-20T10:00:06Z", "2026-11-20T10:00:09Z")])
    access = ACCESS.build([r("2026-11-20T10:00:08.3Z", role + "door-ops-7", "R1"),
                           r("2026-11-20T10:00:08.4Z", role + "door-analyst", "R2")])
    closest = {"analyst": role + "*", "ops": role + "door-ops-*"}
    # (a class is one character however it is written: ``[]a-z]`` holds "]" and a to z, as fnmatch reads it)
    for principals in (closest, {**closest, "ops": [role + "door-o*", role + "door-ops-7"]},
                       {**closest, "analyst": role + "door-[]a-z]*"}):
        res = join_access(calls, access, storage_map=SMAP, offset_s=0, principals=principals)
        assert sorted(zip(res.links["request_id"], res.links["door_session"])) == [("R1", "door-o1"),
                                                                                   ("R2", "door-a1")]
    # an entry for an agent with no calls still names its principals more closely: not analyst's
    res = join_access(calls[calls["agent"] == "analyst"], access, storage_map=SMAP, offset_s=0,
                      principals=closest)
    assert res.links["request_id"].tolist() == ["R2"] and res.unexplained["request_id"].tolist() == ["R1"]
    # entries that name a principal equally closely each have it
    res = join_access(calls, access, storage_map=SMAP, offset_s=0,
                      principals={"analyst": role + "door-*", "ops": role + "door-*"})
    assert sorted(res.links["request_id"]) == ["R1", "R2"]
