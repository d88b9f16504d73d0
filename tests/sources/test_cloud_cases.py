"""The three cloud cases from ``../shared/cases`` (copied into ``tests/fixtures/cloud``): every
field of each ``expected.json`` is asserted, rows matched by ts (+ action when given)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from replaybook.frames import ACCESS
from replaybook.sources import registry
from replaybook.sources.cloudtrail import load_cloudtrail
from replaybook.sources.gcp_audit import load_gcp_audit
from replaybook.sources.s3_access import load_s3_access

CLOUD = Path(__file__).resolve().parents[1] / "fixtures" / "cloud"

CASES = {
    # case: (loader, input path inside the case folder, registry name every input file sniffs as)
    "cloudtrail-tree": (load_cloudtrail, "AWSLogs", "aws.cloudtrail"),
    "s3-access-quotes": (load_s3_access, "acme-data-2026-09-13-10-10-00-0123456789ABCDEF", "aws.s3_access"),
    "gcp-audit-denied": (load_gcp_audit, "data_access.jsonl", "gcp.audit"),
}


def _digests(root: Path) -> dict[str, str]:
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def _find(frame: pd.DataFrame, exp: dict) -> pd.Series:
    m = frame[frame["ts"] == pd.Timestamp(exp["ts"])]
    if "action" in exp:
        m = m[m["action"] == exp["action"]]
    assert len(m) == 1, f"expected exactly one row at {exp['ts']} {exp.get('action', '')}, got {len(m)}"
    return m.iloc[0]


@pytest.mark.parametrize("case", sorted(CASES))
def test_case_matches_expected_json(case):
    loader, rel, _ = CASES[case]
    folder = CLOUD / case
    expected = json.loads((folder / "expected.json").read_text("utf-8"))
    before = _digests(folder)

    res = loader(folder / rel)

    ACCESS.validate(res.frame)
    assert len(res.frame) == expected["access_rows"]
    if "quarantined" in expected:
        assert len(res.quarantine) == expected["quarantined"]
    if "skipped_files" in expected:
        assert sum(1 for i in res.inputs if i.get("skipped")) == expected["skipped_files"]
    for exp in expected["rows"]:
        row = _find(res.frame, exp)
        for key, want in exp.items():
            if key == "ts":
                assert row["ts"] == pd.Timestamp(want)
            elif key == "extra_fields":
                assert len(row["raw"]["extra_fields"]) == want
            else:
                assert row[key] == want, (key, row[key], want)
    assert _digests(folder) == before  # evidence untouched


def test_cloudtrail_tree_details():
    res = load_cloudtrail(CLOUD / "cloudtrail-tree" / "AWSLogs")
    f = res.frame
    assert list(f["action_raw"]) == ["ListObjects", "GetObject", "GetObject", "GetBucketAcl"]
    # CloudTrail's own GetBucketAcl carries no requestID: its eventID stands in
    assert list(f["request_id"].fillna("-")) == ["REQ0", "REQ1", "REQ2", "e3"]
    assert list(f["time_kind"].unique()) == ["completed"]
    assert list(f["source"].unique()) == ["aws.cloudtrail"]
    # the ListObjects row carries the listed prefix (resources[].ARNPrefix), record index 2
    lst = f.iloc[0]
    assert lst["resource_uri"] == "s3://acme-data/demo/" and lst["line_no"] == 2
    assert lst["correlation"] == "door-analyst"  # role session name of the assumed-role ARN
    denied = f.iloc[2]
    assert denied["error_code"] == "AccessDenied" and pd.isna(denied["bytes"])
    svc = f.iloc[3]
    assert svc["principal"] == "cloudtrail.amazonaws.com" and svc["action"] == "other"
    assert svc["resource_uri"] == "s3://acme-trail/" and pd.isna(svc["correlation"])
    skipped = [i for i in res.inputs if i.get("skipped")]
    assert len(skipped) == 1 and "CloudTrail-Digest" in skipped[0]["path"]
    assert skipped[0]["reason"] == "CloudTrail digest file (no Records)"
    delivery = next(i for i in res.inputs if not i.get("skipped"))
    assert delivery["records"] == 4 and delivery["bytes"] == 875


def test_s3_quotes_details():
    res = load_s3_access(CLOUD / "s3-access-quotes")
    f = res.frame.set_index("request_id")
    assert f.loc["3E57427F3EXAMPLE", "raw"]["key"] == "demo/cars%20%22v2%22.csv"  # as logged
    assert f.loc["3E57427F3EXAMPLE", "raw"]["extra_fields"] == ["futurefield"]
    assert f.loc["3E57427F3EXAMPLE", "raw"]["source_region"] == "eu-west-1"
    assert f.loc["891CE47D2EXAMPLE", "resource_uri"] == "s3://acme-data/demo/"  # prefix from the request-URI
    assert "source_region" not in f.loc["891CE47D2EXAMPLE", "raw"]  # a shorter, older line
    assert f.loc["0D0D0D0DEXAMPLE", "principal"] == "svc:lifecycle.s3.amazonaws.com"
    assert f.loc["0D0D0D0DEXAMPLE", "principal_type"] == "service"
    assert f.loc["0D0D0D0DEXAMPLE", "bytes"] == 0  # "-" means zero bytes sent
    assert pd.isna(f.loc["0D0D0D0DEXAMPLE", "user_agent"])
    assert f.loc["A1206F460EXAMPLE", "correlation"] == "door-analyst"
    assert res.inputs[0]["extra_fields"] == 1 and res.inputs[0]["records"] == 4


def test_gcp_denied_details():
    res = load_gcp_audit(CLOUD / "gcp-audit-denied" / "data_access.jsonl")
    f = res.frame.set_index("request_id")
    assert f.loc["i2", "error_code"] == "7" and f.loc["i2", "outcome"] == "denied"
    assert f.loc["i1", "outcome"] == "allowed" and pd.isna(f.loc["i1", "error_code"])
    assert f.loc["i3", "resource_uri"] == "gs://acme-data/"
    assert set(f["principal"]) == {"door-reader@acme.iam.gserviceaccount.com"}
    assert set(f["principal_type"]) == {"service_account"}
    assert str(f.loc["i2", "ts"]) == "2026-09-13 10:01:20.123456789+00:00"  # all 9 digits kept


@pytest.mark.parametrize("case", sorted(CASES))
def test_case_files_sniff_as_their_source(case):
    _, rel, name = CASES[case]
    target = CLOUD / case / rel
    files = [p for p in target.rglob("*") if p.is_file()] if target.is_dir() else [target]
    for p in files:
        src, conf = registry.sniff_file(p)
        assert src is not None and src.name == name and conf >= 0.5, (p, src, conf)
