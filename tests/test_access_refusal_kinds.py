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
    "reached in storage anyway" in the header."""
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
    assert (f"1 object refused to the agent at the door was reached in storage anyway: {RULE} (PutObject by {AGENT_ARN}, "
            "30 s after the refusal)") in h


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
    assert (f"1 object refused to the agent at the door was requested in storage by another principal: {RULE} (PutObject "
            f"by {ALICE}, 8 h 13 min after the refusal) — not the agent's principal; the logs name the credentials "
            "used, not who used them") in h
    sec = _text(S._refused_then_reached(un.assign(origin="")))
    # the principal is whose credentials they were, not who sent them: an agent that read another
    # principal's keys would look the same, so the report does not clear the agent
    assert "getting round" not in h and "getting round" not in sec
    assert "not who used them" in sec
    assert "Refused at the door, requested in storage by another principal" in sec
    assert "8 h 13 min after the refusal" in sec and "reached in storage anyway" not in sec
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
    assert f"(PutObject by {ALICE}, 8 h 13 min after the refusal)" in _text(S.header("t", "incident.yaml",
                                                                                      unexplained=un))


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
    assert (f"1 object refused to the agent at the door was reached in storage anyway: {RULE} (PutObject by "
            f"{AGENT_ARN}, 30 s after the refusal); the time after the refusal is on the door's clock: the storage "
            "log's clock reads 40 s behind the door's (Clock offset, below), so a request time the storage log "
            "wrote reads 40 s earlier than it was on the door's clock") in h
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
    assert ("not who used them; the time after the refusal is on the door's clock: the storage log's clock reads "
            "40 s behind the door's") in h
