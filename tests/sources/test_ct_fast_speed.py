"""Tier 1 of the CloudTrail fast path (:func:`replaybook.sources._ct_fast.read_compact`): compact
delivery files decoded by msgspec, ``raw`` kept as lazily parsed source text.

Every test loads the same files through the fast path and the record-by-record reference
(``cloudtrail._load_reference``) and asserts equal frames, quarantine and inputs; each guard of
tier 1 has a test whose file would load differently (or whose ``raw`` would not parse) without
that guard, and checks that tier 1 declines it."""

from __future__ import annotations

import gzip
import copy
import json
from pathlib import Path

import orjson
import pandas as pd
import pytest

from replaybook.sources import _ct_fast, cloudtrail
from replaybook.sources._record import SourceRecord, as_dict
from test_cloud_fast_paths import _DROP, _branches, _rec  # the record builders the equivalence tests use


def _same(paths) -> object:
    a = cloudtrail.load_cloudtrail(paths)
    b = cloudtrail._load_reference(paths)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    pd.testing.assert_frame_equal(a.quarantine, b.quarantine)
    assert a.inputs == b.inputs
    for x, y in zip(a.frame["raw"], b.frame["raw"]):
        assert type(as_dict(x)) is dict and as_dict(x) == y and y == x
    return a


def _variety() -> list[dict]:
    """Records covering the row builder's branches, all of a shape tier 1 takes."""
    recs = [_rec(i) for i in range(20)] + _branches(30)
    n = 30 + len(recs) - 20
    recs += [_rec(n + k, **kw) for k, kw in enumerate([
        dict(resources=[{"type": "AWS::S3::Object", "ARN": "arn:aws:s3:::"},
                        {"type": "AWS::S3::Object", "ARN": "arn:aws:s3:::b2/x y"}]),
        dict(resources=None, requestParameters=None),
        dict(resources=[], requestParameters=["odd", 1]),
        dict(resources=[{"type": "AWS::S3::Object", "ARN": ""}], requestParameters={"bucketName": "b", "key": 5,
                                                                                    "prefix": "p/"}),
        dict(eventSource="signin.amazonaws.com", eventName="ConsoleLogin",
             responseElements={"ConsoleLogin": "Success"}, userIdentity={"userName": "amy", "principalId": "P"}),
        dict(eventSource="signin.amazonaws.com", eventName="ConsoleLogin", responseElements=["Failure"]),
        dict(userIdentity=None),
        dict(userIdentity={"arn": "arn:aws:sts::1:assumed-role/r/no-type"}),
        dict(userIdentity={"type": "AssumedRole", "arn": "anonymous", "sessionContext": None}),
        dict(additionalEventData=["x"], requestID="", requestId=""),
        dict(eventTime="2026-09-13T10:00:00.123456789+11:00"),
        dict(userAgent="naïve ünïcode ✓", requestParameters={"bucketName": "b", "key": "caf\u00e9"}),
        dict(eventName="DeleteObjects"),
        dict(eventSource="ec2.amazonaws.com", eventName="TerminateInstances", resources=None),
        dict(eventSource="ec2.amazonaws.com", eventName="RunInstances",
             resources=[{"type": "x"}, {"ARN": "arn:aws:ec2:1:i/1"}, {"ARN": "arn:aws:ec2:1:i/2"}]),
        dict(eventSource=None, eventName="Frobnicate"),
        dict(requestParameters={"bucketName": "b", "key": {"nested": [1, 2.5, None]}}, resources=_DROP),
        dict(userIdentity={"type": "AssumedRole", "arn": "arn:aws:sts::1:assumed-role/r/s",
                           "sessionContext": {"sourceIdentity": ""}, "sourceIdentity": "outer"}),
    ])]
    return recs


def _write(path: Path, recs: list, *, gz: bool = True, prefix: bytes = b"", suffix: bytes = b"",
           body: bytes | None = None) -> Path:
    text = body if body is not None else prefix + orjson.dumps({"Records": recs}) + suffix
    path.write_bytes(gzip.compress(text, mtime=0) if gz else text)
    return path


def _tier1(path: Path) -> dict | None:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return _ct_fast.read_compact(path, data)


def test_tier1_takes_compact_files_and_equals_the_reference(tmp_path):
    f = _write(tmp_path / "a.json.gz", _variety())
    assert _tier1(f) is not None
    res = _same(tmp_path)
    assert all(isinstance(v, SourceRecord) for v in res.frame["raw"])
    # the cell's text is the record's exact bytes in the file
    texts = {v.text for v in res.frame["raw"]}
    assert all(orjson.dumps(r) in texts for r in _variety())


def test_raw_is_not_parsed_at_load_and_parses_to_the_reference_record(tmp_path):
    _write(tmp_path / "a.json", [_rec(1), _rec(2)], gz=False)
    res = cloudtrail.load_cloudtrail(tmp_path)
    cells = list(res.frame["raw"])
    assert not any(c.parsed for c in cells)
    assert cells[0]["eventID"] == "E1" and cells[0].parsed and not cells[1].parsed
    assert cells[1].text == orjson.dumps(_rec(2))  # the record's exact bytes, sliced from the document


@pytest.mark.parametrize("case", ["bom", "ws-before", "newline-after", "empty", "one", "escaped-keys",
                                  "bad-time", "deep-cut", "pairs", "unicode-escape", "other-first-key",
                                  "nested-separator", "separator-in-string", "deep-but-short-enough"])
def test_tier1_shapes_it_takes(tmp_path, case):
    recs = _variety()[:6]
    f = tmp_path / "f.json.gz"
    body = None
    if case == "bom":
        _write(f, recs, prefix=b"\xef\xbb\xbf")
    elif case == "ws-before":
        _write(f, recs, prefix=b" \n\t\x0c")
    elif case == "newline-after":
        _write(f, recs, suffix=b"\n\r\n ")
    elif case == "empty":
        _write(f, [])
    elif case == "one":
        _write(f, recs[:1])
    elif case == "escaped-keys":
        body = orjson.dumps({"Records": recs}).replace(b'"eventTime"', b'"\\u0065ventTime"', 1)
        body = body.replace(b'"userAgent"', b'"user\\u0041gent"')
    elif case == "bad-time":
        recs[2]["eventTime"] = "yesterday"
        recs[3]["eventTime"] = ""
    elif case == "deep-cut":  # nested deeper than the reference's clean() keeps: cut in raw
        v: object = "leaf"
        for _ in range(260):
            v = [v]
        recs[1]["requestParameters"]["deep"] = v
        body = json.dumps({"Records": recs}, separators=(",", ":"), ensure_ascii=False).encode()
    elif case == "pairs":
        recs[1]["userAgent"] = "\U0001F600 smile"
        body = orjson.dumps({"Records": recs}).replace("\U0001F600".encode(), b"\\ud83d\\ude00")
    elif case == "unicode-escape":
        body = orjson.dumps({"Records": recs}).replace(b"[aws-cli", b"\\u005baws-cli", 1)
    elif case == "other-first-key":  # records need not begin with "eventVersion"
        recs[3] = {"eventTime": recs[3].pop("eventTime"), **recs[3]}
    elif case == "nested-separator":  # what separates records, inside a record
        recs[2]["requestParameters"]["list"] = [{"a": 1}, {"eventVersion": "x"}]
    elif case == "separator-in-string":
        recs[2]["userAgent"] = 'x},{"eventVersion": y'
    elif case == "deep-but-short-enough":  # nested deep, but not too deep for the stdlib parser
        v = 1
        for _ in range(700):
            v = [v]
        recs[1]["requestParameters"]["deep"] = v
        body = json.dumps({"Records": recs}, separators=(",", ":"), ensure_ascii=False).encode()
    if case not in ("bom", "ws-before", "newline-after", "empty", "one"):
        _write(f, recs, body=body)
    assert _tier1(f) is not None
    res = _same(tmp_path)
    if case == "bad-time":
        assert len(res.quarantine) == 2 and res.quarantine["raw"].str.startswith('{"eventVersion"').all()


def _bignum_file(path: Path, *, extra: bytes) -> None:
    recs = [_rec(i) for i in range(4)]
    body = orjson.dumps({"Records": recs})
    # an S3 record holding an integer beyond 64 bits, and (maybe) a number beyond the double range
    body = body.replace(b'"eventVersion":"1.09"', b'"eventVersion":"1.09","big":123456789012345678901234567890', 1)
    at = body.rindex(b'"awsRegion":"eu-west-1"')  # in the last record
    body = body[:at] + b'"x":' + extra + b"," + body[at:]
    path.write_bytes(body)


@pytest.mark.parametrize("extra", [b"1", b"1e400", b"-2.5E+999", b"[1e-400]"])
def test_numbers_the_two_reference_parsers_read_differently(tmp_path, extra):
    # With a number beyond the double range the reference parses the whole file with the stdlib
    # (orjson refuses it): the >64-bit integer elsewhere is then an int, not orjson's float.
    f = tmp_path / "n.json"
    _bignum_file(f, extra=extra)
    assert _tier1(f) is not None
    res = _same(tmp_path)
    big = res.frame["raw"][0]["big"]
    assert (type(big) is int) == (extra not in (b"1", b"[1e-400]"))


@pytest.mark.parametrize("case", [
    "ws-between", "other-key", "repeated-records", "records-not-list", "not-object", "invalid-utf8",
    "long-digits", "deep-overflow", "lone-surrogate", "secret", "time-not-string", "no-event-name",
    "ui-not-object", "resources-not-list", "resource-not-object", "detail", "lookup", "nested-records",
    "event-time-key", "bytes-object", "trailing-junk", "array",
])
def test_tier1_declines_and_the_file_still_equals_the_reference(tmp_path, case):
    recs = _variety()[:6]
    f = tmp_path / "f.json.gz"
    body = None
    if case == "ws-between":
        body = json.dumps({"Records": recs}).encode()
    elif case == "other-key":  # orjson refuses the document for "x": the stdlib reads "big" as an int
        body = orjson.dumps({"Records": recs})[:-1] + b',"x":1e400,"y":[]}'
        body = body.replace(b'"eventVersion"', b'"big":123456789012345678901234567890,"eventVersion"', 1)
    elif case == "repeated-records":  # the document's last "Records" wins in both parsers
        body = b'{"Records":[{"x":1e400}],' + orjson.dumps({"Records": recs})[1:]
        body = body.replace(b'"eventVersion"', b'"big":123456789012345678901234567890,"eventVersion"', 1)
    elif case == "records-not-list":
        body = orjson.dumps({"Records": {"a": recs[0]}})
    elif case == "not-object":
        body = orjson.dumps({"Records": [recs[0], 5, recs[1]]})
    elif case == "invalid-utf8":  # inside a string no field struct reads: msgspec skips it unchecked
        body = orjson.dumps({"Records": recs}).replace(b'"eu-west-1"', b'"eu-\xff-1"', 1)
    elif case == "long-digits":  # orjson refuses it (infinite), the stdlib too (over 4,300 digits)
        body = orjson.dumps({"Records": recs}).replace(b'"awsRegion"', b'"n":' + b"7" * 5000 + b',"awsRegion"', 1)
    elif case == "deep-overflow":  # orjson refuses the number; the stdlib then the nesting
        deep = b"[" * 900 + b"1" + b"]" * 900
        body = orjson.dumps({"Records": recs}).replace(
            b'"awsRegion"', b'"n":1e400,"d":' + deep + b',"awsRegion"', 1)
    elif case == "lone-surrogate":
        body = orjson.dumps({"Records": recs}).replace(b'"eu-west-1"', b'"eu-\\ud800-1"', 1)
    elif case == "secret":
        recs[2]["requestParameters"]["url"] = "https://x/o?X-Amz-Signature=abc&a=b"
    elif case == "time-not-string":
        recs[2]["eventTime"] = 1757757600
    elif case == "no-event-name":
        recs[2]["eventName"] = ""
    elif case == "ui-not-object":
        recs[2]["userIdentity"] = "not a dict"
    elif case == "resources-not-list":
        recs[2]["resources"] = "arn:aws:s3:::b/k"
    elif case == "resource-not-object":
        recs[2]["resources"] = ["junk", {"type": "AWS::S3::Object", "ARN": "arn:aws:s3:::b/k"}]
    elif case == "detail":
        recs[2]["detail"] = None
    elif case == "lookup":
        recs[2] = {"EventTime": "2026-09-13T10:00:00Z", "EventName": "GetObject",
                   "CloudTrailEvent": json.dumps(_rec(99))}
    elif case == "nested-records":
        recs[2] = {"Records": [_rec(98)]}
    elif case == "event-time-key":
        recs[2]["EventTime"] = "2026-09-13T10:00:00Z"
    elif case == "bytes-object":
        recs[2]["additionalEventData"] = {"bytesTransferredOut": {"n": 1}}
    elif case == "trailing-junk":
        body = orjson.dumps({"Records": recs}) + b"\x0c"
    elif case == "array":
        body = orjson.dumps(recs)
    _write(f, recs, body=body)
    assert _tier1(f) is None
    _same(tmp_path)


def test_many_compact_files_mixed_with_other_shapes(tmp_path):
    _write(tmp_path / "a.json.gz", [_rec(i) for i in range(50)])
    _write(tmp_path / "b.json.gz", _variety())
    (tmp_path / "c.json").write_text(json.dumps({"Records": _variety()}))  # tier 2
    (tmp_path / "d.json").write_text(json.dumps({"digestStartTime": "x", "logFiles": []}))
    _write(tmp_path / "e.json", [_rec(i, eventTime="2026-09-13T09:00:00Z") for i in range(5)], gz=False)
    _same(tmp_path)
    _same([tmp_path / "b.json.gz", tmp_path / "a.json.gz", tmp_path / "b.json.gz"])


def test_digit_run_sampling_finds_every_run_of_512():
    for n in (512, 700, 5000):
        for start in range(0, 600, 37):
            body = b"x" * start + b"1" * n + b"y" * 300
            assert _ct_fast._digit_run(body), (n, start)
    assert not _ct_fast._digit_run(b"1" * 200 + b"," + b"2" * 200 + b"x" * 2000)


_ARNS = [
    "arn:aws:sts::123456789012:assumed-role/reader/sess-1", "arn:aws:sts:::assumed-role/r/s",
    "arn:aws:sts::12a:assumed-role/r/s", "arn:aws:sts::1:assumed-role//s", "arn:aws:sts::1:assumed-role/r/",
    "arn:aws:sts::1:assumed-role/r", "arn:aws:sts::1:assumed-role/r/s/t", "arn:aws:sts::1:assumed-role/r/s\n",
    "arn:aws:sts::1:assumed-role/r\n/s", "arn:aws:sts::1:assumed-role/r/s\n\n", "arn:aws:sts::\u0661\u0662:assumed-role/r/s",
    "arn:aws:sts::\u00b2:assumed-role/r/s", "arn:aws-cn:sts::1:assumed-role/r/s", "arn:aws:sts::1:assumed-role/r/s\u2028x",
    "arn:aws:sts::1:user/x", "arn:aws:iam::1:role/r", "", "arn:aws:sts::", "arn:aws:sts::1:assumed-role/",
    "arn:aws:s3:::bucket/key/with/slashes", "arn:aws:s3:::bucket", "arn:aws:s3:::bucket/", "arn:aws:s3:::/key",
    "arn:aws:s3:::", "arn:aws:s3:::b\n", "arn:aws:s3:::b/k\n", "arn:aws:s3:::b\n/k", "arn:aws-us-gov:s3:::b/k",
    "arn:aws:s3:::b/caf\u00e9 x", "ARN:aws:s3:::b/k", "arn:aws:s3::b/k",
]


@pytest.mark.parametrize("arn", _ARNS)
def test_string_shortcuts_match_the_reference_patterns(arn):
    from replaybook.sources._cloud import role_session_name
    assert _ct_fast._session_name(arn) == role_session_name(arn)
    assert _ct_fast._s3_uri_of(arn) == cloudtrail._s3_arn_uri(arn)


@pytest.mark.real
def test_real_and_case_records_written_compact(real_dir, cases_dir, tmp_path):
    # the real delivery files are indented (tier 2): written compact they must load the same
    n = 0
    for src in sorted((real_dir / "cloud").glob("*CloudTrail*")) + sorted((cases_dir / "cloudtrail-tree").rglob("*CloudTrail_*")):
        data = src.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        doc = json.loads(data)
        f = _write(tmp_path / f"{n}.json.gz", doc["Records"])
        assert _tier1(f) is not None
        n += 1
    assert n
    _same(tmp_path)


def test_fuzzed_field_types(tmp_path):
    # any JSON type in any field the columns read: tier 1 takes the file or declines it, and
    # the load equals the reference's either way
    import random

    rnd = random.Random(20261130)
    values = [None, "", "x", "GetObject", "s3.amazonaws.com", "AWS::S3::Object", "arn:aws:s3:::b/k",
              "arn:aws:sts::1:assumed-role/r/s", "Failure", "anonymous", 0, -1, 7, 2 ** 64, 1.5, 12.0, True,
              False, [], ["x"], [{"ARN": "arn:aws:s3:::b/k"}], {}, {"ARN": 5}, {"type": "AWS::S3::Object"},
              {"bytesTransferredOut": 9}, {"ConsoleLogin": "Failure"}, {"sourceIdentity": "si"}]
    paths = [("eventTime",), ("eventName",), ("eventSource",), ("userIdentity",), ("userIdentity", "arn"),
             ("userIdentity", "type"), ("userIdentity", "accountId"), ("userIdentity", "invokedBy"),
             ("userIdentity", "sessionContext"), ("userIdentity", "sourceIdentity"), ("resources",),
             ("requestParameters",), ("requestParameters", "key"), ("requestParameters", "bucketName"),
             ("additionalEventData",), ("additionalEventData", "bytesTransferredOut"), ("responseElements",),
             ("errorCode",), ("requestID",), ("requestId",), ("userAgent",)]
    taken = 0
    variety = _variety()
    for k in range(60):
        recs = [_rec(i) for i in range(3)] + [copy.deepcopy(variety[rnd.randrange(len(variety))])]
        for _ in range(rnd.randrange(1, 4)):
            r = rnd.choice(recs)
            path = rnd.choice(paths)
            target = r
            for key in path[:-1]:
                if not isinstance(target.get(key), dict):
                    target[key] = {}
                target = target[key]
            target[path[-1]] = rnd.choice(values)
        body = json.dumps({"Records": recs}, separators=(",", ":"), ensure_ascii=False).encode()
        f = _write(tmp_path / f"f{k}.json.gz", recs, body=body)
        taken += _tier1(f) is not None
    assert 0 < taken < 60
    _same(tmp_path)
