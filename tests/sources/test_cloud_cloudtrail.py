"""CloudTrail shapes beyond the delivery file: EventBridge envelopes, LookupEvents exports,
JSON Lines, arrays, the CLI's ``{"Events": [...]}``, and record-level damage."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from _jsonl_fixture import counts_by_id
from replaybook.errors import InputError
from replaybook.frames import ACCESS
from replaybook.sources.cloudtrail import load_cloudtrail, sniff

CLOUD = Path(__file__).resolve().parents[1] / "fixtures" / "cloud"
ROLE = "arn:aws:sts::123456789012:assumed-role/door-reader/door-analyst"


def test_eventbridge_envelopes():
    res = load_cloudtrail(CLOUD / "eventbridge" / "events.jsonl")
    f = res.frame
    ACCESS.validate(f)
    assert list(f["request_id"]) == ["EB1", "EB2", "EB3"]
    assert list(f["line_no"]) == [1, 2, 4]
    assert list(f["action"]) == ["read", "write", "delete"]
    assert list(f["resource_uri"]) == ["s3://acme-data/demo/cars.sas7bdat", "s3://acme-data/out/report.csv",
                                       "s3://acme-data/tmp/x y.csv"]
    # sourceIdentity wins over the role session name
    assert list(f["correlation"]) == ["door-sess-a", "door-analyst", "door-analyst"]
    assert f.iloc[0]["bytes"] == 2048
    assert f.iloc[2]["outcome"] == "denied" and f.iloc[2]["error_code"] == "AccessDenied"
    assert f.iloc[0]["raw"]["_envelope"]["detail-type"] == "AWS API Call via CloudTrail"
    assert "detail" not in f.iloc[0]["raw"]["_envelope"]
    # the S3 "Object Created" notification is valid but not a CloudTrail record
    assert res.inputs[0]["ignored_lines"] == 1 and res.quarantine.empty


def test_lookup_events_export():
    res = load_cloudtrail(CLOUD / "lookup" / "lookup_events.jsonl")
    f = res.frame.set_index("line_no")
    assert res.quarantine.empty and len(f) == 3
    # line 1: the embedded record (a JSON string) is used
    assert f.loc[1, "ts"] == pd.Timestamp("2026-09-13T10:00:21Z")
    assert f.loc[1, "principal"] == ROLE and f.loc[1, "request_id"] == "LK1"
    assert f.loc[1, "raw"]["_envelope"]["AccessKeyId"] == "ASIAEXAMPLEKEY000001"
    assert "CloudTrailEvent" not in f.loc[1, "raw"]["_envelope"]
    # line 2: no CloudTrailEvent at all — the export's own fields, +11:00 converted to UTC
    assert f.loc[2, "ts"] == pd.Timestamp("2026-09-13T21:30:00Z")
    assert f.loc[2, "action_raw"] == "ConsoleLogin" and f.loc[2, "principal"] == "mallory"
    assert f.loc[2, "principal_type"] == "unknown"
    # line 3: CloudTrailEvent is not valid JSON — the export's fields, -05:00 converted to UTC
    assert f.loc[3, "ts"] == pd.Timestamp("2026-09-14T04:00:00Z")
    assert f.loc[3, "action"] == "list"
    assert "not a JSON object" in f.loc[3, "raw"]["_envelope"]["_note"]
    # lines 2 and 3: the errorCode is in the embedded record that is missing: the outcome is not
    # known, never success, and the file's notes say so
    assert f.loc[1, "outcome"] == "allowed" and f.loc[2, "outcome"] == "error" and f.loc[3, "outcome"] == "error"
    notes = res.inputs[0]["notes"]
    assert [n.split(":")[0] for n in notes] == ["record 2", "record 3"]
    assert "the request's outcome (its errorCode) is unknown" in notes[0]


def _rec(t, name, **kw):
    r = {"eventVersion": "1.10", "eventTime": t, "eventName": name, "eventSource": "s3.amazonaws.com",
         "userIdentity": {"type": "AssumedRole", "arn": ROLE},
         "requestParameters": {"bucketName": "acme-data", "key": "demo/a.csv"}}
    r.update(kw)
    return r


def test_plain_jsonl_array_and_events_wrapper(tmp_path):
    recs = [_rec("2026-09-13T10:00:00Z", "GetObject"), _rec("2026-09-13T10:00:01Z", "HeadObject")]
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    (tmp_path / "b.json").write_text(json.dumps(recs, indent=2))
    cli = {"Events": [{"EventId": "x", "EventName": "GetObject", "EventTime": "2026-09-13T20:00:02+10:00",
                       "CloudTrailEvent": json.dumps(_rec("2026-09-13T10:00:02Z", "GetObject"))}],
           "NextToken": "abc"}
    (tmp_path / "c.json").write_text(json.dumps(cli))
    single = _rec("2026-09-13T10:00:03Z", "DeleteObject")
    (tmp_path / "d.json").write_text(json.dumps(single, indent=1))
    res = load_cloudtrail(tmp_path)
    f = res.frame
    assert res.quarantine.empty
    assert list(f["action"]) == ["read", "read", "head", "head", "read", "delete"]
    assert sorted(Path(p).name for p in f["source_file"]) == ["a.jsonl", "a.jsonl", "b.json", "b.json", "c.json", "d.json"]
    assert {i["path"].rsplit("/", 1)[-1]: i["records"] for i in res.inputs} == {
        "a.jsonl": 2, "b.json": 2, "c.json": 1, "d.json": 1}


def test_bad_records_are_quarantined_with_their_index(tmp_path):
    doc = {"Records": [_rec("2026-09-13T10:00:00Z", "GetObject"), "not an object",
                       {"eventTime": "2026-09-13T10:00:00Z"},  # no eventName
                       _rec("2026-02-30T10:00:00Z", "GetObject"),  # no such day
                       _rec("2026-09-13T10:00:05Z", "PutObject")]}
    p = tmp_path / "x_CloudTrail_x.json.gz"
    p.write_bytes(gzip.compress(json.dumps(doc).encode()))
    res = load_cloudtrail(p)
    assert list(res.frame["line_no"]) == [1, 5]
    q = res.quarantine.set_index("line_no")
    assert list(q.index) == [2, 3, 4]
    # (a delivery file is one document: line_no is the record number, and the error says so)
    assert q.loc[2, "error"] == "record 2: not a JSON object (str)"
    assert q.loc[3, "error"] == "record 3: not a CloudTrail record (no eventTime / eventName)"
    assert q.loc[4, "error"] == "record 4: time '2026-02-30T10:00:00Z' is not a date-time"
    assert set(q["source_file"]) == {str(p)}


def test_non_s3_events_keep_their_arn_and_verb():
    res = load_cloudtrail(CLOUD / "cloudtrail-tree" / "AWSLogs")
    assert set(res.frame["source"]) == {"aws.cloudtrail"}
    rec = {"eventTime": "2026-09-13T10:00:00Z", "eventName": "AssumeRole", "eventSource": "sts.amazonaws.com",
           "userIdentity": {"type": "AWSAccount", "accountId": "anonymous", "principalId": ""},
           "resources": [{"ARN": "arn:aws:iam::123456789012:role/door-reader", "type": "AWS::IAM::Role"}],
           "errorCode": "Client.UnauthorizedOperation"}
    from replaybook.sources.cloudtrail import _row
    row, err = _row(rec, None, "f", 1)
    assert err is None
    assert row["resource_uri"] == "arn:aws:iam::123456789012:role/door-reader"
    assert row["principal"] == "anonymous" and row["principal_type"] == "anonymous"
    assert row["outcome"] == "denied" and row["action"] == "other"


def test_missing_path_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file or folder"):
        load_cloudtrail(tmp_path / "nope")


def test_sniff_scores():
    tree = CLOUD / "cloudtrail-tree" / "AWSLogs" / "123456789012"
    delivery = gzip.decompress(next((tree / "CloudTrail").rglob("*.gz")).read_bytes())
    digest = gzip.decompress(next((tree / "CloudTrail-Digest").rglob("*.gz")).read_bytes())
    assert sniff(delivery) == 0.95
    assert sniff(digest) == 0.8
    assert sniff((CLOUD / "eventbridge" / "events.jsonl").read_bytes()) == pytest.approx(0.95 * 3 / 4)
    assert sniff((CLOUD / "lookup" / "lookup_events.jsonl").read_bytes()) == pytest.approx(0.95)
    assert sniff(b"") == 0.0


def _cli_lookup(*events, next_token=None):
    """``aws cloudtrail lookup-events``'s answer: each event's record as a JSON string."""
    doc = {"Events": [{"EventId": r["eventID"], "EventName": r["eventName"], "ReadOnly": "true",
                       "EventTime": r["eventTime"], "EventSource": r["eventSource"],
                       "Username": "door-analyst", "Resources": [], "CloudTrailEvent": json.dumps(r)}
                      for r in events]}
    if next_token is not None:
        doc["NextToken"] = next_token
    return doc


def test_the_clis_lookup_events_answer_is_recognised_by_content(tmp_path):
    """The AWS CLI prints ``lookup-events`` as one JSON document, indented by 4 (its default) or
    on one line (``jq -c``): sniffing, ``replaybook.load`` and an incident's ``access:`` read it
    without ``--source``."""
    import replaybook
    from replaybook.sources import registry

    doc = _cli_lookup(_rec("2026-09-13T10:00:00Z", "GetObject", eventID="e1", requestID="R1"),
                      _rec("2026-09-13T10:00:05Z", "PutObject", eventID="e2", requestID="R2"),
                      next_token="eyJ0b2tlbiI6IDF9")
    (tmp_path / "cloud").mkdir()
    (tmp_path / "cloud" / "indent4.json").write_text(json.dumps(doc, indent=4) + "\n")
    (tmp_path / "cloud" / "compact.json").write_text(json.dumps({"NextToken": doc["NextToken"],
                                                                 "Events": doc["Events"][::-1]}))
    (tmp_path / "cloud" / "none.json").write_text('{\n    "Events": []\n}\n')
    for name, score in (("indent4.json", 0.95), ("compact.json", 0.95), ("none.json", 0.6)):
        assert sniff((tmp_path / "cloud" / name).read_bytes()) == score, name
        src, _ = registry.sniff_file(tmp_path / "cloud" / name)
        assert src is not None and src.name == "aws.cloudtrail", name
    assert sniff(b'{"Events": [{"id": 1, "kind": "click"}]}') == 0.0  # another tool's events

    loaded = replaybook.load(tmp_path / "cloud")
    acc = loaded["access"]
    assert sorted(zip(acc["source_file"].map(lambda p: Path(p).name), acc["request_id"])) == [
        ("compact.json", "R1"), ("compact.json", "R2"), ("indent4.json", "R1"), ("indent4.json", "R2")]
    assert set(acc["action"]) == {"read", "write"} and loaded.quarantine.empty
    assert set(loaded.files["source"]) == {"aws.cloudtrail"}

    (tmp_path / "incident.yaml").write_text("title: lookup\ntranscripts: []\naccess: [cloud/indent4.json]\n")
    inc = replaybook.Incident.load(tmp_path)
    assert list(inc.access["request_id"]) == ["R1", "R2"]
    assert list(inc.access["ts"]) == [pd.Timestamp("2026-09-13T10:00:00Z"), pd.Timestamp("2026-09-13T10:00:05Z")]


def test_documents_one_after_another_are_all_read(tmp_path):
    """``cat`` of delivery files (which end without a newline), a gzip of several members and
    ``jq`` without ``-c`` each give several JSON documents in one file: every record is read,
    numbered across the file, with the byte offset of its document."""
    a = json.dumps({"Records": [_rec("2026-09-13T10:00:00Z", "GetObject"),
                                _rec("2026-09-13T10:00:01Z", "HeadObject")]})
    b = json.dumps({"Records": [_rec("2026-09-13T10:00:02Z", "DeleteObject")]})
    (tmp_path / "cat.json").write_text(a + b)
    (tmp_path / "members.json.gz").write_bytes(gzip.compress(a.encode()) + gzip.compress(b.encode()))
    (tmp_path / "jq.json").write_text("\n".join(json.dumps(r, indent=2) for r in json.loads(a)["Records"]) + "\n")
    res = load_cloudtrail(tmp_path)
    assert res.quarantine.empty
    got = {name: list(g["action"]) for name, g in res.frame.groupby(res.frame["source_file"].map(lambda p: Path(p).name))}
    assert got == {"cat.json": ["read", "head", "delete"], "members.json.gz": ["read", "head", "delete"],
                   "jq.json": ["read", "head"]}
    cat = res.frame[res.frame["source_file"].str.endswith("cat.json")]
    assert list(cat["line_no"]) == [1, 2, 3]
    assert {i["path"].rsplit("/", 1)[-1]: i["records"] for i in res.inputs} == {
        "cat.json": 3, "members.json.gz": 3, "jq.json": 2}
    assert sniff((tmp_path / "jq.json").read_bytes()) == pytest.approx(0.95)


def test_a_damaged_last_document_keeps_the_records_before_it(tmp_path):
    a = json.dumps({"Records": [_rec("2026-09-13T10:00:00Z", "GetObject")]})
    b = json.dumps({"Records": [_rec("2026-09-13T10:00:02Z", "DeleteObject"),
                                _rec("2026-09-13T10:00:03Z", "PutObject")]})
    p = tmp_path / "cat.json"
    p.write_text(a + b[:-40])  # the copy stopped inside the second document's last record
    res = load_cloudtrail(p)
    assert list(res.frame["action"]) == ["read", "delete"]
    assert list(res.frame["line_no"]) == [1, 2]
    q = res.quarantine
    assert len(q) == 1 and q.loc[0, "line_no"] == 1  # a line and an offset in the file, not a record index
    assert q.loc[0, "byte_offset"] == len(a) + b.index('{"eventVersion"', b.index("DeleteObject"))  # the unread record
    assert q.loc[0, "error"].startswith("document cut short or damaged after 1 complete record")
    p2 = tmp_path / "junk.json"
    p2.write_text(a + "not json at all\n")
    q2 = load_cloudtrail(p2).quarantine
    assert len(q2) == 1 and q2.loc[0, "error"] == (
        "document 2 cut short or damaged (15 bytes not read; the documents before it are): Expecting value at "
        "character 1 of the document")


def test_damage_in_a_file_of_documents_is_placed_by_line_and_byte(tmp_path):
    """Quarantine rows had carried the record's index across the file as their line number: a
    reader looking for the damage at "line 3" of a pretty-printed file found the wrong text.  And
    a pretty-printed file starting with a blank line had been read as JSON Lines: every line of
    it quarantined, no record read."""
    docs = [json.dumps({"Records": [_rec(f"2026-09-13T10:00:0{i}Z", "GetObject")]}, indent=2) for i in range(3)]
    text = "\ufeff\n" + docs[0] + "\n" + docs[1][:-80] + "\n" + docs[2] + "\n"
    p = tmp_path / "jq.json"
    p.write_text(text, encoding="utf-8")
    res = load_cloudtrail(p)
    assert list(res.frame["ts"].dt.second) == [0, 2]
    q = res.quarantine
    assert len(q) == 1
    data = p.read_bytes()
    start = data.index(docs[1][:-80].encode())
    assert q.loc[0, "byte_offset"] == start  # BOM and the blank first line counted
    assert q.loc[0, "line_no"] == data[:start].count(b"\n") + 1 == 3 + docs[0].count("\n")
    # a single delivery document cut short, after a blank line: its unread record's line and byte
    one = json.dumps({"Records": [_rec("2026-09-13T10:00:00Z", "GetObject"),
                                  _rec("2026-09-13T10:00:01Z", "PutObject")]}, indent=1)
    p2 = tmp_path / "cut.json"
    p2.write_text("\n" + one[:-60])
    q2 = load_cloudtrail(p2).quarantine
    data2 = p2.read_bytes()
    at = data2.rindex(b"{\n", 0, data2.index(b'"PutObject"'))  # the unread record's opening brace
    assert q2.loc[0, "byte_offset"] == at
    assert q2.loc[0, "line_no"] == data2[:at].count(b"\n") + 1


def test_documents_after_a_damaged_one_are_read_too(tmp_path):
    """A stray character, or a document cut short in the middle of a cat, had ended the reading:
    the documents after it were neither read nor counted."""
    docs = [json.dumps({"Records": [_rec(f"2026-09-13T10:00:0{i}Z", "GetObject")]}) for i in range(4)]
    p = tmp_path / "cat.json"
    p.write_text(docs[0] + "}" + docs[1] + docs[2][:-60] + docs[3])
    res = load_cloudtrail(p)
    assert list(res.frame["ts"].dt.second) == [0, 1, 3]
    q = res.quarantine
    assert len(q) == 2
    assert q.loc[0, "error"].startswith("document 2 cut short or damaged (1 bytes not read; the documents around it "
                                        "are): Expecting value")
    assert q.loc[1, "error"].startswith("document 4 cut short or damaged (")
    assert q.loc[1, "byte_offset"] == len(docs[0]) + 1 + len(docs[1])


def test_a_json_lines_line_holding_two_documents_gives_both(tmp_path):
    """Two delivery files joined without a newline, among JSON Lines: the line had been set aside
    (as "still being written?" when last)."""
    one, two, three = ([_rec(f"2026-09-13T10:00:0{i}Z", "GetObject")] for i in range(3))
    p = tmp_path / "mixed.json"
    p.write_text(json.dumps({"Records": one}) + "\nnot json\n" + json.dumps({"Records": two})
                 + json.dumps({"Records": three}))
    res = load_cloudtrail(p)
    assert list(res.frame["ts"].dt.second) == [0, 1, 2]
    assert list(res.frame["line_no"]) == [1, 3, 3]
    assert list(res.quarantine["line_no"]) == [2]


def test_damage_first_often_or_inside_strings_loses_no_valid_document(tmp_path):
    """From a hostile sweep: a damaged *first* document, a first JSON Lines line cut short,
    more than 100 damaged documents, or '}{' inside strings had each lost the valid documents
    after them."""
    def doc(i, key="k"):
        return json.dumps({"Records": [_rec("2026-09-13T10:00:00Z", "GetObject", requestID=f"d{i}",
                                            requestParameters={"bucketName": "acme-data", "key": key})]})
    # first document cut short, then good ones
    p = tmp_path / "first.json"
    p.write_text(doc(0)[:-40] + doc(1) + doc(2))
    res = load_cloudtrail(p)
    assert sorted(res.frame["request_id"]) == ["d1", "d2"] and len(res.quarantine) == 1
    # 300 damaged documents among 600: every good one read, every damaged one counted
    p = tmp_path / "many.json"
    p.write_text("".join(doc(i)[:-30] if i % 2 else doc(i) for i in range(600)))
    res = load_cloudtrail(p)
    assert sorted(res.frame["request_id"]) == sorted(f"d{i}" for i in range(0, 600, 2))
    assert len(res.quarantine) == 300
    # '}{' and '\n{' inside strings are not places where a document starts
    p = tmp_path / "strings.json"
    p.write_text("".join(doc(i, key='a}{"Records":[x' + "}{" * 20 + "\n{") for i in range(50)))
    res = load_cloudtrail(p)
    assert len(res.frame) == 50 and res.quarantine.empty


def test_a_first_json_lines_line_cut_short_keeps_the_lines_after_it(tmp_path):
    recs = [_rec(f"2026-09-13T10:00:0{i}Z", "GetObject", requestID=f"r{i}") for i in range(4)]
    lines = [json.dumps(r) for r in recs]
    p = tmp_path / "events.jsonl"
    p.write_text(lines[0][:-50] + "\n" + "\n".join(lines[1:]) + "\n")
    res = load_cloudtrail(p)
    assert list(res.frame["request_id"]) == ["r1", "r2", "r3"]
    assert list(res.frame["line_no"]) == [2, 3, 4]
    assert list(res.quarantine["line_no"]) == [1]


_ERROR_CODES = [  # (requestID, errorCode or _ABSENT, outcome, error_code)
    ("c1", "AccessDenied", "denied", "AccessDenied"),
    ("c2", "NoSuchKey", "error", "NoSuchKey"),
    ("c3", 403, "error", "403"),
    ("c4", True, "error", "true"),
    ("c5", {"code": "AccessDenied"}, "error", '{"code":"AccessDenied"}'),
    ("c6", ["NoSuchKey"], "error", '["NoSuchKey"]'),
    ("c7", False, "error", "false"),
    ("c8", 0, "error", "0"),
    ("c9", None, "allowed", None),
    ("c10", "", "allowed", None),
    ("c11", "_absent", "allowed", None),
]


def _write_shaped(p, recs: list[dict], shape: str):
    """``recs`` written as a compact delivery file (what CloudTrail writes; the fast path's
    first tier), an indented one (its second tier) or JSON Lines (record by record)."""
    if shape == "compact":
        p.write_text(json.dumps({"Records": recs}, separators=(",", ":")))
    elif shape == "indented":
        p.write_text(json.dumps({"Records": recs}, indent=1))
    else:
        p.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    return p


@pytest.mark.parametrize("shape", ["compact", "indented", "jsonl"])
def test_an_error_code_that_is_not_text_is_not_success(tmp_path, shape):
    """A record whose ``errorCode`` is a number, a boolean, an object or a list had given outcome
    ``allowed``: a failed request read as one that succeeded.  It says an error without saying
    which: the row is ``error`` with the code as written, and the file's inputs entry says why —
    on the fast path (a compact delivery file, an indented one) as on the record-by-record one."""
    from replaybook.sources.cloudtrail import _load_reference

    recs = []
    for rid, code, _, _ in _ERROR_CODES:
        r = _rec("2026-09-13T10:00:00Z", "GetObject", requestID=rid)
        if code != "_absent":
            r["errorCode"] = code
        recs.append(r)
    p = _write_shaped(tmp_path / "trail.json", recs, shape)
    for load in (load_cloudtrail, _load_reference):
        res = load(p)
        assert res.quarantine.empty and len(res.frame) == len(_ERROR_CODES)
        f = res.frame.set_index("request_id")
        got = {rid: (f.loc[rid, "outcome"], None if pd.isna(f.loc[rid, "error_code"]) else f.loc[rid, "error_code"])
               for rid, *_ in _ERROR_CODES}
        assert got == {rid: (outcome, code) for rid, _, outcome, code in _ERROR_CODES}
        notes = res.inputs[0]["notes"]
        assert [n.split(":", 1)[0] for n in notes] == [f"record {i}" for i in (3, 4, 5, 6, 7, 8)]
        assert notes[0] == ("record 3: errorCode 403 is not a CloudTrail error code (text); outcome error "
                            "(the request's outcome is unknown), error_code as written")


def _insight(i: int) -> dict:
    return {"eventVersion": "1.08", "eventTime": f"2026-09-13T10:0{i}:00Z", "awsRegion": "us-east-1",
            "eventID": f"ins-{i}", "eventType": "AwsCloudTrailInsight", "recipientAccountId": "111122223333",
            "sharedEventID": f"sh-{i}", "eventCategory": "Insight",
            "insightDetails": {"state": "Start", "eventSource": "s3.amazonaws.com", "eventName": "GetObject",
                               "insightType": "ApiCallRateInsight"}}


def test_cloudtrail_insights_files_are_skipped_like_digest_files(tmp_path):
    """An ``AWSLogs/<account>/CloudTrail-Insight/`` file in the tree was quarantined ("not a
    CloudTrail record"), and the report then said requests had been lost.  Insights events are
    summaries CloudTrail computes, not requests: a file of them is skipped with its reason, and
    one among ordinary records is counted as ignored; neither is quarantined."""
    root = tmp_path / "AWSLogs" / "111122223333"
    ins = root / "CloudTrail-Insight" / "us-east-1" / "2026" / "09" / "13" / "111122223333_CloudTrail-Insight_x.json.gz"
    ins.parent.mkdir(parents=True)
    ins.write_bytes(gzip.compress(json.dumps({"Records": [_insight(1), _insight(2)]}).encode()))
    mixed = root / "CloudTrail" / "us-east-1" / "2026" / "09" / "13" / "111122223333_CloudTrail_x.json"
    mixed.parent.mkdir(parents=True)
    get = {"eventVersion": "1.08", "eventTime": "2026-09-13T10:00:05Z", "eventSource": "s3.amazonaws.com",
           "eventName": "GetObject", "userIdentity": {"type": "AssumedRole", "arn": "arn:aws:sts::1:assumed-role/r/s"},
           "requestParameters": {"bucketName": "acme-data", "key": "demo/a.csv"}, "requestID": "R1"}
    mixed.write_text(json.dumps({"Records": [get, _insight(3)]}))
    res = load_cloudtrail(tmp_path / "AWSLogs")
    assert res.quarantine.empty
    assert res.frame["resource_uri"].tolist() == ["s3://acme-data/demo/a.csv"]
    by = {Path(i["path"]).name: i for i in res.inputs}
    assert by[ins.name]["skipped"] is True
    assert by[ins.name]["reason"] == "CloudTrail Insights file (summaries of unusual activity, not requests)"
    assert by[mixed.name].get("skipped") is None and by[mixed.name]["ignored_lines"] == 1


def test_a_record_time_beyond_a_frames_range_is_said_as_such(tmp_path):
    import json

    from replaybook.sources.cloudtrail import load_cloudtrail

    rec = {"eventVersion": "1.08", "eventTime": "9999-12-31T23:59:59Z", "eventSource": "s3.amazonaws.com",
           "eventName": "GetObject", "awsRegion": "eu-central-1", "userIdentity": {"type": "IAMUser"}}
    ok = dict(rec, eventTime="2026-01-01T00:00:00Z")
    p = tmp_path / "ct.json"
    p.write_text(json.dumps({"Records": [ok, rec]}))
    res = load_cloudtrail(p)
    assert len(res.frame) == 1
    assert res.quarantine["error"].tolist() == [
        "record 2: time '9999-12-31T23:59:59Z' is a date-time beyond the times a frame holds "
        "(1677-09-21 to 2262-04-11 UTC)"]


DELIVERY = "AWSLogs/123456789012/CloudTrail/us-east-1/2026/09/13/123456789012_CloudTrail_us-east-1_20260913T1005Z_abcDEF0123456789.json.gz"


@pytest.mark.parametrize("body, why, by_content", [
    (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"\xff" * 40, "corrupt gzip stream", False),
    (gzip.compress(b'{"Records": "oops"}'), "damaged CloudTrail delivery file: Records is not a list (a string", True),
    (gzip.compress(b'{"Records": null}'), "damaged CloudTrail delivery file: Records is not a list (null", True),
    (gzip.compress(b'{"eventVersionX": 1}'), "damaged CloudTrail delivery file: a JSON object without Records", False),
    (gzip.compress(b"<html>not json</html>\nmore\n"), "damaged CloudTrail delivery file: not JSON", False)])
def test_a_file_at_a_delivery_path_that_cannot_be_read_is_damaged_cloudtrail_evidence(tmp_path, body, why,
                                                                                        by_content):
    """A file named as a CloudTrail delivery file whose content no source recognises had been
    "not evidence" (load: no source; load_frame: an ``auto`` row of kind ``unread``).  The
    registry gives it to CloudTrail by its name; the loader quarantines it whole with why, and
    its inputs entry counts 0 records — a delivery file that could not be read."""
    from replaybook import load
    from replaybook.loading import load_frame
    from replaybook.report.sections import cloud_log_losses
    from replaybook.sources import registry

    f = tmp_path / DELIVERY
    f.parent.mkdir(parents=True)
    f.write_bytes(body)
    assert registry.sniff_file(f)[0].name == "aws.cloudtrail"
    got = load_frame([tmp_path / "AWSLogs"], "access")
    q = got.result.quarantine
    assert list(q["loader"]) == ["aws.cloudtrail"] and q["line_no"].isna().all(), q
    assert q["error"].iloc[0].startswith(why) and q["source_file"].iloc[0] == str(f)
    assert got.sources == {str(f): "aws.cloudtrail"}
    assert [x["unread"] for x in cloud_log_losses(q, got.result.inputs)] == [True]
    assert not any(i.get("skipped") for i in got.result.inputs)
    files = load([tmp_path]).files
    assert list(files["source"]) == ["aws.cloudtrail"] and list(files["quarantined"]) == [1]
    # the same bytes under any other name: still "not recognised" (content decides) — but a
    # Records that is not a list is CloudTrail's damaged delivery by content too
    other = tmp_path / "elsewhere" / "x.json.gz"
    other.parent.mkdir()
    other.write_bytes(body)
    src, conf = registry.sniff_file(other)
    assert (src is not None and src.name == "aws.cloudtrail" and conf >= 0.5) == by_content


def test_a_digest_or_insight_file_name_is_no_delivery_path():
    from replaybook.sources.cloudtrail import delivery_path

    assert delivery_path(DELIVERY) and delivery_path(DELIVERY[:-3])
    assert not delivery_path("123456789012_CloudTrail-Digest_us-east-1_trail_us-east-1_20260913T110000Z.json.gz")
    assert not delivery_path("123456789012_CloudTrail-Insight_us-east-1_20260913T1005Z_x.json.gz")
    assert not delivery_path("events.json.gz")


@pytest.mark.parametrize("shape", ["compact", "indented", "jsonl"])
def test_a_byte_count_that_is_no_count_is_noted_not_left_out_without_a_word(tmp_path, shape):
    """``bytesTransferredOut`` of -1, past 64 bits, text or a fraction had left ``bytes`` empty
    with nothing said: the record looked like one whose size CloudTrail never logged.  The file's
    inputs entry now names each, on the fast paths as on the record-by-record one."""
    from replaybook.sources.cloudtrail import _load_reference

    counts = [("b1", 5, 5), ("b2", 2**64, None), ("b3", -1, None), ("b4", "n/a", None), ("b5", None, None),
              ("b6", 2.5, None), ("b7", "12", 12), ("b8", 2**63 - 1, 2**63 - 1)]
    recs = [_rec("2026-09-13T10:00:00Z", "GetObject", requestID=rid, additionalEventData={"bytesTransferredOut": v})
            for rid, v, _ in counts]
    p = _write_shaped(tmp_path / "trail.json", recs, shape)
    for load in (load_cloudtrail, _load_reference):
        res = load(p)
        assert res.quarantine.empty
        assert counts_by_id(res.frame, "request_id", "bytes") == {rid: want for rid, _, want in counts}
        notes = res.inputs[0]["notes"]
        assert [n.split(":", 1)[0] for n in notes] == [f"record {i}" for i in (2, 3, 4, 6)]
        assert notes[1] == ("record 3: additionalEventData.bytesTransferredOut -1 is not a count (a whole number "
                            "from 0 to 2**63-1): left empty, the count is not known")
        assert notes[2].startswith('record 4: additionalEventData.bytesTransferredOut "n/a" is not a count')


def _express(key: str | None, *, params: bool = True) -> dict:
    """A data event of a directory bucket (S3 Express One Zone), as CloudTrail logs it."""
    b = "acme--euw1-az1--x-s3"
    rp = {"bucketName": b, "Host": f"{b}.s3express-euw1-az1.eu-west-1.amazonaws.com"}
    if key is not None:
        rp["key"] = key
    arn = f"arn:aws:s3express:eu-west-1:123456789012:bucket/{b}" + (f"/{key}" if key is not None else "")
    return {"eventVersion": "1.10", "eventTime": "2026-09-13T10:00:05Z", "eventSource": "s3express.amazonaws.com",
            "eventName": "GetObject" if key is not None else "ListObjectsV2", "awsRegion": "eu-west-1",
            "userIdentity": {"type": "AssumedRole", "arn": ROLE, "accountId": "123456789012"},
            "requestParameters": rp if params else None, "requestID": f"X{key}",
            "resources": [{"type": "AWS::S3Express::Object" if key is not None else "AWS::S3Express::DirectoryBucket",
                           "ARN": arn}],
            "eventType": "AwsApiCall", "managementEvent": False, "eventCategory": "Data"}


@pytest.mark.parametrize("shape", ["compact", "indented", "jsonl"])
def test_a_directory_buckets_requests_are_storage_requests(tmp_path, shape):
    """CloudTrail logs a directory bucket's (S3 Express One Zone) data events from
    ``s3express.amazonaws.com``: they were read as other cloud events with the bucket's ARN — not
    on storage, so an agent's read there was counted in no storage request, and no door call could
    explain it.  They are S3 requests: ``s3://<bucket>/<key>``, from the request's parameters or
    the object's ``arn:aws:s3express:…:bucket/<bucket>/<key>``."""
    recs = [_express("demo/c.csv"), _express("demo/d e.csv", params=False), _express(None)]
    f = load_cloudtrail(_write_shaped(tmp_path / "ct.json", recs, shape)).frame
    assert list(f["resource_uri"]) == ["s3://acme--euw1-az1--x-s3/demo/c.csv", "s3://acme--euw1-az1--x-s3/demo/d e.csv",
                                       "s3://acme--euw1-az1--x-s3/"]
    assert list(f["action"]) == ["read", "read", "list"]


@pytest.mark.parametrize("shape", ["compact", "indented", "jsonl"])
def test_a_directory_buckets_create_session_is_no_storage_request(tmp_path, shape):
    """A directory bucket's SDK calls CreateSession for session credentials before its reads and
    writes (every few minutes): CloudTrail logs it from ``s3express.amazonaws.com`` on the bucket.
    It reaches no object and no door call makes it, so it is another cloud event (its ARN kept),
    not a storage request every agent's read from such a bucket would leave unexplained."""
    from replaybook.access_join import join_access, on_storage
    from replaybook.frames import CALLS

    session = {**_express(None), "eventName": "CreateSession", "requestID": "XS"}
    recs = [session, _express("demo/c.csv")]
    f = load_cloudtrail(_write_shaped(tmp_path / "ct.json", recs, shape)).frame
    assert list(f["resource_uri"]) == ["arn:aws:s3express:eu-west-1:123456789012:bucket/acme--euw1-az1--x-s3",
                                       "s3://acme--euw1-az1--x-s3/demo/c.csv"]
    assert [on_storage(u) for u in f["resource_uri"]] == [False, True]
    calls = CALLS.build([{"door_session": "s", "agent": "analyst", "seq": 1, "ts": "2026-09-13T10:00:05Z",
                          "ts_end": "2026-09-13T10:00:06Z", "tool": "read_file", "object": "demo/c.csv",
                          "decision": "allow", "rule": "r", "arguments": {}}])
    res = join_access(calls, f, storage_map={"demo/": "s3://acme--euw1-az1--x-s3/demo/"}, offset_s=0)
    assert list(res.links["request_id"]) == ["Xdemo/c.csv"]
    assert [on_storage(u) for u in res.unexplained["resource_uri"]] == [False]  # (an other service's event)
