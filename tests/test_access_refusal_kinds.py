"""A request on an object the door refused the agent is set beside that refusal only when it is
the same kind of operation, and carries the agent's principal where principals are known.

An SRE's incident: the door refused the agent's ``put_object`` of a deployment rule (the user
declined), while the door's allowed ``get_object`` of it sat on a damaged log line.  The agent's
storage read then read as "refused at the door, reached in storage anyway", citing the declined
write.  And a person's ``PutObject`` on the refused rule eight hours later read as the agent
getting round the door "29,603 s after the refusal".
"""

from __future__ import annotations

import html
import re

import pandas as pd
import pytest

from replaybook.access_join import duration_words, join_access, operation_kinds_agree
from replaybook.frames import ACCESS, CALLS
from replaybook.report import sections as S

SMAP = {"deploy/": "s3://cfg/deploy/"}
AGENT_ARN = "arn:aws:sts::1:assumed-role/door-s3/door-deployer"
ALICE = "arn:aws:sts::1:assumed-role/sre/alice"
RULE = "s3://cfg/deploy/rules/checkout.yaml"


def _calls(*extra: dict) -> pd.DataFrame:
    """The agent reads a listing, then is refused a write of the rule (its read of the rule is
    on a damaged line: not among the calls)."""
    rows = [
        {"door_session": "s", "agent": "deployer", "seq": 1, "ts": "2026-11-30T23:31:08Z",
         "ts_end": "2026-11-30T23:31:08.3Z", "tool": "list_objects", "object": "deploy/rules",
         "decision": "allow", "rule": "read", "arguments": {}},
        {"door_session": "s", "agent": "deployer", "seq": 3, "ts": "2026-11-30T23:31:13Z",
         "ts_end": "2026-11-30T23:31:25Z", "tool": "put_object", "object": "deploy/rules/checkout.yaml",
         "decision": "deny", "rule": "ask-before-writing", "arguments": {}},
        *extra]
    return CALLS.build(rows)


def _access(*rows: tuple) -> pd.DataFrame:
    """``(ts, principal, action, action_raw, uri)`` rows, CloudTrail-like, storage allowed each."""
    return ACCESS.build([{"ts": pd.Timestamp(ts), "time_kind": "event", "source": "aws.cloudtrail",
                          "principal": who, "action": act, "action_raw": raw, "resource_uri": uri,
                          "outcome": "allowed", "bytes": 300, "request_id": f"R{i}", "raw": {}}
                         for i, (ts, who, act, raw, uri) in enumerate(rows)])


def _text(h: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", h.replace("<wbr/>", ""))))


def test_a_refused_write_is_not_the_refusal_a_read_follows():
    """The agent's read of the rule, 2 s before its declined write: no refusal beside it, and no
    "reached in storage" finding in the header."""
    access = _access(("2026-11-30T23:31:11Z", AGENT_ARN, "read", "GetObject", RULE))
    res = join_access(_calls(), access, storage_map=SMAP, principals={"deployer": "*door-s3/*"}, offset_s=0)
    un = res.unexplained
    assert len(un) == 1 and pd.isna(un["refused_session"].iat[0]) and pd.isna(un["since_refusal_s"].iat[0])
    assert "only a call the door refused matches" not in un["why"].iat[0]
    reached, tried = S.refused_then_requested(un)
    assert len(reached) == 0 and len(tried) == 0
    h = _text(S.header("t", "incident.yaml", unexplained=un))
    assert "anyway" not in h
    assert "1 storage request no door call explains (1 made with the door's own principal: the cloud identity" in h


def test_a_refused_write_is_the_refusal_the_agents_write_follows():
    """The same object written by the agent's principal 30 s after the declined write: reached
    anyway, and the header says by whom, with what, and how long after."""
    access = _access(("2026-11-30T23:31:43Z", AGENT_ARN, "write", "PutObject", RULE))
    un = join_access(_calls(), access, storage_map=SMAP, principals={"deployer": "*door-s3/*"},
                     offset_s=0).unexplained
    assert (un["refused_session"].iat[0], un["refused_seq"].iat[0], un["since_refusal_s"].iat[0]) == ("s", 3, 30.0)
    assert bool(un["refused_agents_principal"].iat[0]) is True
    reached, _ = S.refused_then_requested(un)
    assert list(reached["request_id"]) == ["R0"]
    h = _text(S.header("t", "incident.yaml", unexplained=un))
    assert (f"1 object the door refused was reached in storage with no door call behind it: {RULE} (PutObject by "
            f"{AGENT_ARN}, the door's own principal; 30 s after the refusal in door session s #3, rule "
            "ask-before-writing); the logs name the credentials used, not who used them") in h


def test_another_principals_write_hours_later_is_a_fact_of_its_own():
    """alice's PutObject of the refused rule 8 h 13 min later is not the agent getting round the
    door: said apart, with who and when, in the header, the access section and the findings."""
    access = _access(("2026-12-01T07:44:30Z", ALICE, "write", "PutObject", RULE))
    res = join_access(_calls(), access, storage_map=SMAP, principals={"deployer": "*door-s3/*"}, offset_s=0)
    un = res.unexplained
    assert un["refused_seq"].iat[0] == 3 and bool(un["refused_agents_principal"].iat[0]) is False
    assert res.to_dict()["unexplained"][0]["refused_call"]["agents_principal"] is False
    reached, tried = S.refused_then_requested(un)
    assert len(reached) == 0 and len(tried) == 0
    assert list(S.refused_then_other_principal(un)["request_id"]) == ["R0"]
    h = _text(S.header("t", "incident.yaml", unexplained=un))
    assert "anyway" not in h
    assert (f"1 object the door refused was requested in storage by another principal: {RULE} (PutObject by {ALICE}, "
            "not a principal the manifest gives the door; 8 h 13 min after the refusal in door session s #3, rule "
            "ask-before-writing) — not the agent's principal; the logs name the credentials used, not who used "
            "them") in h
    sec = _text(S._refused_then_reached(un.assign(origin="")))
    # the principal is whose credentials they were, not who sent them: an agent that read another
    # principal's keys would look the same, so the report does not clear the agent
    assert "getting round" not in h and "getting round" not in sec
    assert "not who used them" in sec
    assert "Refused at the door, requested in storage by another principal" in sec
    assert "8 h 13 min after the refusal" in sec and "reached in storage with no door call" not in sec
    f = S.findings(pd.DataFrame({"status": []}), _calls(), None, un)
    assert f["refused_then_reached"] == [] and f["refused_then_other_principal"] == [RULE]


def test_without_principals_a_later_write_is_still_set_beside_the_refusal():
    """No principals in the manifest: whose the request was is not known, so it stays a finding
    (the header names the principal and the gap for the reader to judge)."""
    access = _access(("2026-12-01T07:44:30Z", ALICE, "write", "PutObject", RULE))
    un = join_access(_calls(), access, storage_map=SMAP, offset_s=0).unexplained
    assert pd.isna(un["refused_agents_principal"].iat[0])
    reached, _ = S.refused_then_requested(un)
    assert list(reached["request_id"]) == ["R0"]
    h = _text(S.header("t", "incident.yaml", unexplained=un))
    assert f"(PutObject by {ALICE}; 8 h 13 min after the refusal in door session s #3, rule ask-before-writing)" in h
    assert "own principal" not in h and "not a principal the manifest gives" not in h  # (whose: not known)


@pytest.mark.parametrize("tool, action, agree", [
    ("put_object", "write", True), ("put_object", "read", False), ("delete_object", "delete", True),
    ("get_object", "read", True), ("get_object", "write", False), ("list_objects", "list", True),
    ("get_object", "head", True), ("put_object", "other", True), (None, "read", True), ("get_object", None, True)])
def test_operation_kinds(tool, action, agree):
    assert operation_kinds_agree(tool, action) is agree


@pytest.mark.parametrize("seconds, words", [(2.54, "2.5 s"), (-111.0, "111 s"), (300.0, "300 s"), (301.0, "5 min"),
                                            (29_468.0, "8 h 11 min"), (29_603.0, "8 h 13 min"),
                                            (90_000.0, "1 d 1 h 0 min")])
def test_a_long_gap_is_said_in_hours_and_minutes(seconds, words):
    """'29,468 s after that call' is a number to work out; '8 h 11 min' is a time."""
    assert duration_words(seconds) == words


def test_the_why_of_a_request_hours_after_the_nearest_call_says_hours():
    access = _access(("2026-12-01T07:42:16Z", ALICE, "read", "GetObject", "s3://cfg/deploy/rules"))
    un = join_access(_calls(), access, storage_map=SMAP, principals={"deployer": "*door-s3/*"},
                     offset_s=0).unexplained
    assert "(nearest: session s seq 1, 8 h 11 min after that call)" in un["why"].iat[0]


def test_when_says_it_is_on_the_doors_clock_when_the_storage_clock_is_off():
    """With the storage log's clock 39.7 s behind the door's, a request 30 s after a refusal is
    logged 10 s before the refusal's time; the table showed that time beside "30 s after the
    refusal" with nothing to say why."""
    access = _access(("2026-12-01T07:44:30Z", ALICE, "write", "PutObject", RULE))
    un = join_access(_calls(), access, storage_map=SMAP, principals={"deployer": "*door-s3/*"}, offset_s=0).unexplained
    sec = _text(S._refused_then_reached(un.assign(origin=""), -39.71))
    assert ("when is on the door's clock: the storage log's clock reads 40 s behind the door's (Clock offset, "
            "below), and each request time is shown as the storage log wrote it, so set beside the refused call's "
            "time it reads 40 s earlier than it was on the door's clock.") in sec
    assert "on the door's clock" not in _text(S._refused_then_reached(un.assign(origin=""), 0.4))


def test_the_headers_time_after_a_refusal_says_it_is_on_the_doors_clock_as_the_section_does():
    """The header's "30 s after the refusal" is measured on the door's clock, as the section's
    **when** is; with the storage log's clock 40 s behind the door's, the section's table shows
    the request logged 10 s before the refusal.  The section said why, the header did not."""
    access = _access(("2026-11-30T23:31:03Z", AGENT_ARN, "write", "PutObject", RULE))
    un = join_access(_calls(), access, storage_map=SMAP, principals={"deployer": "*door-s3/*"},
                     offset_s=-39.71).unexplained
    h = _text(S.header("t", "incident.yaml", unexplained=un, access_offset_s=-39.71))
    assert (f"1 object the door refused was reached in storage with no door call behind it: {RULE} (PutObject by "
            f"{AGENT_ARN}, the door's own principal; 30 s after the refusal in door session s #3, rule "
            "ask-before-writing); the logs name the credentials used, not who used them; the times measured from "
            "door calls are on the door's clock: the storage log's clock reads 40 s behind the door's (Clock offset, "
            "below), so a request time the storage log wrote reads 40 s earlier than it was on the door's clock") in h
    # the same words as the section's note
    assert ("the storage log's clock reads 40 s behind the door's (Clock offset, below)"
            in _text(S._refused_then_reached(un.assign(origin=""), -39.71)))
    # under a second apart (or no offset given): nothing to reconcile, no note
    for off in (0.4, None):
        assert "on the door's clock" not in _text(S.header("t", "incident.yaml", unexplained=un, access_offset_s=off))
    # another principal's request: the same note beside its time
    access = _access(("2026-11-30T23:31:03Z", ALICE, "write", "PutObject", RULE))
    un = join_access(_calls(), access, storage_map=SMAP, principals={"deployer": "*door-s3/*"},
                     offset_s=-39.71).unexplained
    h = _text(S.header("t", "incident.yaml", unexplained=un, access_offset_s=-39.71))
    assert ("not who used them; the times measured from door calls are on the door's clock: the storage log's "
            "clock reads "
            "40 s behind the door's") in h


def _bullet(access: pd.DataFrame, *extra: dict) -> str:
    """The header's line on the refused object, given the door calls (and ``extra`` ones) as the
    report gives them: when the request came beside the door sessions, and whether the door
    allowed any call on the object."""
    calls = _calls(*extra)
    res = join_access(calls, access, storage_map=SMAP, principals={"deployer": "*door-s3/*"}, offset_s=0)
    h = _text(S.header("t", "incident.yaml", unexplained=res.unexplained, calls=calls, per_call=res.per_call))
    return h[h.index("1 object the door refused"):]


@pytest.mark.parametrize("at, beside", [
    # the declined write ran 23:31:13–23:31:25, the session's first call started 23:31:08
    ("2026-11-30T23:31:43Z", "30 s after the refusal in door session s #3, rule ask-before-writing; after door "
                             "session s had ended: its last call ended 18 s before"),
    ("2026-11-30T23:31:20Z", "7.0 s after the refusal in door session s #3, rule ask-before-writing; while door "
                             "session s was running (between its first and last call)"),
    ("2026-11-30T23:31:00Z", "13 s before the refusal in door session s #3, rule ask-before-writing; before any door "
                             "session began: 8.0 s before the first door call"),
])
def test_the_header_says_when_a_refused_object_was_reached_beside_the_door_sessions(at, beside):
    """The demo's header read "refused to the agent at the door was reached in storage anyway",
    as if the agent had got round the door, where the door's own role read the file after every
    door session had ended.  The line now says what the logs show: whose credentials (the
    door's own principal), when beside the refusal and the door sessions, that the door allowed
    no call on the object — and that the logs do not say who sent it."""
    got = _bullet(_access((at, AGENT_ARN, "write", "PutObject", RULE)))
    assert got == (f"1 object the door refused was reached in storage with no door call behind it: {RULE} "
                   f"(PutObject by {AGENT_ARN}, the door's own principal; {beside}; the door allowed no call on this object); the "
                   "logs name the credentials used, not who used them")
    assert "anyway" not in got and "getting round" not in got


def test_the_header_names_an_allowed_call_on_the_refused_object_and_every_session_of_the_agent():
    """An hour earlier another session of the agent read the rule, allowed: the line says the door
    allowed a call on the object, none that explains this request; with two sessions of the
    agent ended, "every door session" — of the agent, when the calls have another agent's too
    (another door may keep another clock: its session, running at the request's time, is left
    out of the comparison)."""
    read = {"door_session": "r", "agent": "deployer", "seq": 1, "ts": "2026-11-30T22:30:00Z",
            "ts_end": "2026-11-30T22:30:01Z", "tool": "get_object", "object": "deploy/rules/checkout.yaml",
            "decision": "allow", "rule": "read", "arguments": {}}
    other = {"door_session": "o", "agent": "auditor", "seq": 1, "ts": "2026-11-30T23:31:40Z",
             "ts_end": "2026-11-30T23:31:50Z", "tool": "list_objects", "object": "deploy/",
             "decision": "allow", "rule": "read", "arguments": {}}
    access = _access(("2026-11-30T23:31:43Z", AGENT_ARN, "write", "PutObject", RULE))
    assert ("30 s after the refusal in door session s #3, rule ask-before-writing; after every door session had "
            "ended: the last door call ended 18 s before; the door allowed 1 call on this object (first: door session "
            "r #1), none that explains this request)") in _bullet(access, read)
    assert ("after every door session of agent deployer had ended: the last door call ended 18 s before; the door "
            "allowed 1 call on this object") in _bullet(access, read, other)
    # between two sessions of the agent, neither running
    later = dict(read, door_session="q", ts="2026-11-30T23:40:00Z", ts_end="2026-11-30T23:40:01Z")
    assert ("between door sessions, none running: the last door call before it ended 18 s before"
            in _bullet(access, later))


def test_another_door_agents_principal_is_not_called_the_doors_own():
    """Two door agents, each with its own role: the reviewer's role read the rule the door had
    refused the deployer.  The header called it 'the door's own principal' and then 'not the
    agent's principal' in one breath; it is the principal the manifest gives the door for
    another agent."""
    reviewer = "arn:aws:sts::1:assumed-role/door-review/door-reviewer"
    access = _access(("2026-11-30T23:40:00Z", reviewer, "write", "PutObject", RULE))
    res = join_access(_calls(), access, storage_map=SMAP, offset_s=0,
                      principals={"deployer": "*door-s3/*", "reviewer": "*door-review/*"})
    un = res.unexplained
    assert bool(un["door_principal"].iat[0]) is True and bool(un["refused_agents_principal"].iat[0]) is False
    h = _text(S.header("t", "incident.yaml", unexplained=un, calls=_calls()))
    assert "the door's own principal;" not in h
    assert (f"1 object the door refused was requested in storage by another principal: {RULE} (PutObject by "
            f"{reviewer}, a principal the manifest gives the door for another agent, not the refused call's agent; "
            "9 min after the refusal in door session s #3, rule ask-before-writing") in h
