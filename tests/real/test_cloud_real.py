"""The cloud loaders against the real public samples in ``../shared/real/cloud``.

Those files are read in place and never copied into this repository.  Skipped when ``../shared``
is absent, failing instead when ``REPLAYBOOK_REQUIRE_SHARED=1`` (see ``tests/conftest.py``).

Every expected value below was checked BY HAND, independently of the loaders:

* CloudTrail delivery file (``111111111111_CloudTrail_eu-central-1_…json`` and its ``.gz``):
  ``jq '.Records|length'`` → 2; ``cmp <(zcat ….json.gz) ….json`` → identical bytes;
  ``jq -c '.Records[]|.userIdentity.arn // .userIdentity.invokedBy'`` → the assumed-role ARN of
  ``someRole/AutoScalingDescribeHandlerSession``, then ``config.amazonaws.com`` (type AWSService).
* LookupEvents export: ``grep -c ''`` → 6 lines, the last without a newline (``wc -l`` says 5);
  ``jq -r .EventTime`` → ``2022-02-08 09:23:37+11:00`` … ``09:19:04+11:00``; the embedded
  ``eventTime`` values are the same instants in UTC (``2022-02-07T22:23:37Z`` …);
  ``jq -r '.CloudTrailEvent|fromjson|.userIdentity.arn // .userIdentity.invokedBy' | sort | uniq -c``
  → 5 × ``arn:aws:iam::012345678901:user/fakeusername``, 1 × ``ec2.amazonaws.com``.
* GCP audit: ``jq -c '[input_line_number, has("protoPayload"), has("jsonPayload"), has("textPayload"),
  .timestamp, (.protoPayload.status.code // 0)]'`` → 11 lines; line 8 jsonPayload, line 9
  textPayload, the other 9 protoPayload AuditLogs; 6-digit fractions (line 1
  ``02:57:47.339377Z``), 9-digit fractions (line 5 ``02:43:48.064377809Z``, line 11
  ``17:58:44.882119699Z``); only line 11 has ``status.code`` 7.
* S3 access log (the five example records of the AWS docs page): ``awk '{print NR, $8, $13, $14,
  $15}'`` → operations VERSIONING, LOGGING_STATUS, BUCKETPOLICY (404 NoSuchBucketPolicy), VERSIONING,
  PUT.OBJECT ``s3-dg.pdf`` with bytes sent ``-``; every line has 27 whitespace-separated tokens =
  24 log fields (the line ends at the TLS version).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest

from replaybook.frames import ACCESS
from replaybook.sources import registry
from replaybook.sources.cloudtrail import load_cloudtrail
from replaybook.sources.gcp_audit import load_gcp_audit
from replaybook.sources.s3_access import load_s3_access

pytestmark = pytest.mark.real

CT = "111111111111_CloudTrail_eu-central-1_20171211T1505Z_A6kvhMoVeCsc7v8U.json"
LOOKUP = "cloudtrail_lookupevents_export__plaso.jsonl"
GCP = "gcp_audit_logentries__plaso.jsonl"
S3 = "s3_server_access__awsdocs_logformat_example.log"

# file → (registry name, rows, quarantined, skipped)
EXPECTED = {
    CT: ("aws.cloudtrail", 2, 0, False),
    CT + ".gz": ("aws.cloudtrail", 2, 0, False),
    LOOKUP: ("aws.cloudtrail", 6, 0, False),
    GCP: ("gcp.audit", 9, 0, False),
    S3: ("aws.s3_access", 5, 0, False),
}


@pytest.fixture(scope="module")
def cloud(real_dir: Path) -> Path:
    d = real_dir / "cloud"
    assert d.is_dir(), f"{d} not found in the shared sample files"
    return d


def test_every_real_file_is_known(cloud):
    assert sorted(p.name for p in cloud.iterdir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_per_file_counts_and_sniffing(cloud, name):
    source, rows, quarantined, skipped = EXPECTED[name]
    path = cloud / name
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    src, conf = registry.sniff_file(path)
    assert src.name == source and conf >= 0.9
    res = registry.get(source).load([path])
    ACCESS.validate(res.frame)
    assert len(res.frame) == rows
    assert len(res.quarantine) == quarantined
    assert res.inputs[0]["sha256"] == digest
    assert bool(res.inputs[0].get("skipped")) is skipped
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest  # untouched


def test_cloudtrail_delivery_file(cloud):
    plain = load_cloudtrail(cloud / CT)
    gz = load_cloudtrail(cloud / (CT + ".gz"))
    f = plain.frame
    assert list(f["principal"]) == [
        "arn:aws:sts::111111111111:assumed-role/someRole/AutoScalingDescribeHandlerSession",
        "config.amazonaws.com"]
    assert list(f["principal_type"]) == ["role", "service"]
    assert list(f["action_raw"]) == ["DescribeLaunchConfigurations", "AssumeRole"]
    assert list(f["request_id"]) == ["796142d4-cbf6-11e7-8c53-9fdb2434bfb9", "7955d159-cbf6-11e7-b30f-095c9db6bcb3"]
    assert list(f["ts"]) == [pd.Timestamp("2017-12-11T15:01:51Z"), pd.Timestamp("2017-12-11T15:04:51Z")]
    assert f.iloc[0]["correlation"] == "AutoScalingDescribeHandlerSession"
    assert f.iloc[1]["resource_uri"] == "arn:aws:iam::111111111111:role/someRole"
    assert list(f["line_no"]) == [1, 2]
    # the gzip copy gives the identical frame (bar the file name)
    pd.testing.assert_frame_equal(f.drop(columns="source_file"), gz.frame.drop(columns="source_file"))
    assert plain.inputs[0]["bytes"] == 2843 and gz.inputs[0]["bytes"] == 914


def test_lookup_events_offsets(cloud):
    res = load_cloudtrail(cloud / LOOKUP)
    f = res.frame.sort_values("line_no").reset_index(drop=True)
    export_times = ["2022-02-08 09:23:37+11:00", "2022-02-08 09:23:18+11:00", "2022-02-08 09:23:03+11:00",
                    "2022-02-08 09:19:07+11:00", "2022-02-08 09:19:05+11:00", "2022-02-08 09:19:04+11:00"]
    assert list(f["ts"]) == [pd.Timestamp(t).tz_convert("UTC") for t in export_times]
    assert f.loc[0, "ts"] == pd.Timestamp("2022-02-07T22:23:37Z")
    assert f["principal"].value_counts().to_dict() == {"arn:aws:iam::012345678901:user/fakeusername": 5,
                                                       "ec2.amazonaws.com": 1}
    svc = f[f["principal"] == "ec2.amazonaws.com"].iloc[0]
    assert svc["action_raw"] == "SharedSnapshotVolumeCreated" and svc["principal_type"] == "service"
    assert f.loc[5, "line_no"] == 6  # the unterminated last line is a complete record, not pending
    assert res.inputs[0]["lines"] == 6


def test_gcp_fractions_and_ignored_entries(cloud):
    res = load_gcp_audit(cloud / GCP)
    f = res.frame.set_index("line_no")
    assert res.inputs[0]["ignored_lines"] == 2
    assert sorted(f.index) == [1, 2, 3, 4, 5, 6, 7, 10, 11]
    assert str(f.loc[1, "ts"]) == "2021-10-19 02:57:47.339377+00:00"
    assert str(f.loc[5, "ts"]) == "2021-10-19 02:43:48.064377809+00:00"
    assert str(f.loc[11, "ts"]) == "2024-12-03 17:58:44.882119699+00:00"
    assert f.loc[11, "outcome"] == "denied" and f.loc[11, "error_code"] == "7"
    assert f.loc[11, "principal"] == "dvwa-service-account@ketchup.iam.gserviceaccount.com"
    assert f.loc[11, "principal_type"] == "service_account"
    assert (f.drop(index=11)["outcome"] == "allowed").all()
    assert f.loc[1, "action_raw"] == "beta.compute.networks.insert" and f.loc[1, "action"] == "write"
    assert f.loc[1, "resource_uri"] == "projects/fake-project/global/networks/test"


def test_s3_doc_examples(cloud):
    res = load_s3_access(cloud / S3)
    f = res.frame.sort_values("line_no").reset_index(drop=True)
    assert list(f["action_raw"]) == ["REST.GET.VERSIONING", "REST.GET.LOGGING_STATUS", "REST.GET.BUCKETPOLICY",
                                     "REST.GET.VERSIONING", "REST.PUT.OBJECT"]
    assert list(f["action"]) == ["other", "other", "other", "other", "write"]
    assert list(f["outcome"]) == ["allowed", "allowed", "error", "allowed", "allowed"]
    assert f.loc[2, "error_code"] == "NoSuchBucketPolicy"
    assert list(f["bytes"]) == [113, 242, 297, 113, 0]
    assert f.loc[4, "resource_uri"] == "s3://awsexamplebucket1/s3-dg.pdf"
    assert list(f["ts"]) == [pd.Timestamp(t) for t in ("2019-02-06T00:00:38Z",) * 3
                             + ("2019-02-06T00:01:00Z", "2019-02-06T00:01:57Z")]
    assert set(f["principal_type"]) == {"account"}  # a canonical user id
    assert all(r["tls_version"] == "TLSV1.1" and "access_point_arn" not in r for r in f["raw"])
    assert "extra_fields" not in res.inputs[0]


def test_case_fixture_copies_match_shared_cases(cases_dir):
    here = Path(__file__).resolve().parents[1] / "fixtures" / "cloud"
    for case in ("cloudtrail-tree", "s3-access-quotes", "gcp-audit-denied"):
        src = cases_dir / case
        for p in src.rglob("*"):
            if p.is_file():
                assert (here / case / p.relative_to(src)).read_bytes() == p.read_bytes(), p


def test_a_real_event_without_a_request_id_is_told_by_its_event_id(cloud):
    """The LookupEvents export holds one service event, SharedSnapshotVolumeCreated, whose
    CloudTrailEvent has no ``requestID`` (read by hand: ``jq -r '.CloudTrailEvent | fromjson |
    [.eventName, .requestID, .eventID]'``); it is told by its ``eventID``, so a second delivery of
    it is found as one.  The others keep their ``requestID``."""
    f = load_cloudtrail(cloud / LOOKUP).frame.set_index("action_raw")["request_id"]
    assert f["SharedSnapshotVolumeCreated"] == "ec783cd8-fad8-41a8-abac-569a78c42e33"  # its eventID
    assert f["RunInstances"] == "25e584a8-c452-4d73-bf06-99f951583043"  # its requestID, not its eventID
    assert f["DescribeInstances"] == "5e2d469d-002a-40b1-9922-a2e7dca03332"


def test_a_real_event_told_by_its_event_id_is_labelled_event_id(cloud, tmp_path, capsys):
    """``replaybook access`` labelled every access row's id "request id": the
    SharedSnapshotVolumeCreated event's is its ``eventID`` (it has no ``requestID``), so it is
    labelled "event id" (text and JSON); RunInstances keeps "request id".  The export is read in
    place."""
    import json

    from test_access_scenarios import call, write_door

    from replaybook.access_join import request_id_kind
    from replaybook.cli import main

    f = load_cloudtrail(cloud / LOOKUP).frame.set_index("action_raw")
    assert {a: request_id_kind(s, r, i) for a, s, r, i in zip(f.index, f["source"], f["raw"], f["request_id"])} == {
        "SharedSnapshotVolumeCreated": "event id", **dict.fromkeys(
        ["DescribeInstances", "TerminateInstances", "StopInstances", "RunInstances", "CreateSecurityGroup"],
        "request id")}
    # (the id compared: a record that carries no requestID, read beside another id, says nothing)
    row = f.loc["SharedSnapshotVolumeCreated"]
    assert request_id_kind(row["source"], row["raw"], "another-id") == "request id"
    # a GCP audit entry is told by its insertId (line 1's, read by hand: ``jq -r .insertId``)
    g = load_gcp_audit(cloud / GCP).frame.set_index("line_no")
    assert g.loc[1, "request_id"] == "iv9wx9d16l2"
    assert request_id_kind(g.loc[1, "source"], g.loc[1, "raw"], g.loc[1, "request_id"]) == "insert id"

    write_door(tmp_path, {"s": [call(1, 10.0, 10.5, "demo/a.csv")]})
    assert main(["access", "--calls", str(tmp_path / "door"), "--access", str(cloud / LOOKUP)]) == 0
    out = capsys.readouterr().out
    assert ("2022-02-07T22:19:07.000Z  other (SharedSnapshotVolumeCreated)  (no resource)\n"
            "  principal   ec2.amazonaws.com\n"
            "  from        ec2.amazonaws.com\n"  # (its user agent: a service names no address)
            "  outcome     allowed\n"
            "  event id    ec783cd8-fad8-41a8-abac-569a78c42e33\n") in out
    assert "  request id  25e584a8-c452-4d73-bf06-99f951583043\n" in out  # RunInstances
    assert "request id  ec783cd8" not in out
    assert main(["access", "--calls", str(tmp_path / "door"), "--access", str(cloud / LOOKUP),
                 "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {u["action_raw"]: (u["request_id"], u["request_id_kind"]) for u in d["unexplained_other"]}[
        "SharedSnapshotVolumeCreated"] == ("ec783cd8-fad8-41a8-abac-569a78c42e33", "event id")
    assert {u["action_raw"]: u["request_id_kind"] for u in d["unexplained_other"]}["RunInstances"] == "request id"

    # the export's events are not on storage: the report counts them by operation, with no ids
    # (its citing of a storage request by its ids: tests/test_cli_access.py)
