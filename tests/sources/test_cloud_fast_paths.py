"""The column-wise fast paths of the CloudTrail and S3 access-log loaders give exactly what the
record-by-record reference paths give (frame, quarantine, inputs) — on every fixture, on the
hostile inputs, and on tricky inputs written here to hit each guard that sends a file or a line
back to the reference path."""

from __future__ import annotations

import gzip
import json
import random
import struct
import zlib
from pathlib import Path

import pandas as pd
import pytest

from replaybook.sources import _cloud_fast, _ct_fast, _s3_fast, cloudtrail, s3_access
from replaybook.sources._record import as_dict

FIX = Path(__file__).resolve().parents[1] / "fixtures"
CLOUD = FIX / "cloud"


def _same(fast, ref, paths) -> None:
    try:
        b = ref(paths)
    except Exception as exc:  # noqa: BLE001 - the fast path must fail the same way
        with pytest.raises(type(exc)):
            fast(paths)
        return
    a = fast(paths)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    pd.testing.assert_frame_equal(a.quarantine, b.quarantine)
    assert a.inputs == b.inputs
    for x, y in zip(a.frame["raw"], b.frame["raw"]):
        assert x == y and type(as_dict(x)) is type(as_dict(y))  # a lazily parsed record: its dict


def same_ct(paths) -> None:
    _same(cloudtrail.load_cloudtrail, cloudtrail._load_reference, paths)


def same_s3(paths) -> None:
    _same(s3_access.load_s3_access, s3_access._load_reference, paths)


# -- CloudTrail ------------------------------------------------------------------------------

CT_FIXTURES = [CLOUD / "cloudtrail-tree", CLOUD / "hostile", CLOUD / "lookup", CLOUD / "eventbridge",
               CLOUD / "join", CLOUD / "s3-access-quotes", CLOUD / "azure"]


@pytest.mark.parametrize("path", CT_FIXTURES, ids=lambda p: p.name)
def test_cloudtrail_fixtures(path):
    same_ct(path)


@pytest.mark.real
def test_cloudtrail_real_and_case_files(real_dir, cases_dir):
    same_ct(real_dir / "cloud")
    same_ct(cases_dir / "cloudtrail-tree")


def _rec(i: int, **over) -> dict:
    rec = {
        "eventVersion": "1.09",
        "userIdentity": {"type": "AssumedRole", "principalId": f"AROA:s{i}",
                         "arn": f"arn:aws:sts::123456789012:assumed-role/reader/sess-{i % 7}",
                         "accountId": "123456789012",
                         "sessionContext": {"attributes": {"mfaAuthenticated": "false"}}},
        "eventTime": f"2026-09-13T10:{i % 60:02d}:{(i * 7) % 60:02d}Z",
        "eventSource": "s3.amazonaws.com", "eventName": "GetObject", "awsRegion": "eu-west-1",
        "userAgent": "[aws-cli/2.15 Python/3.11]",
        "requestParameters": {"bucketName": "acme-data", "key": f"k/{i}.csv"},
        "additionalEventData": {"bytesTransferredOut": 100 + i},
        "requestID": f"R{i}", "eventID": f"E{i}",
        "resources": [{"type": "AWS::S3::Object", "ARN": f"arn:aws:s3:::acme-data/k/{i}.csv"},
                      {"type": "AWS::S3::Bucket", "ARN": "arn:aws:s3:::acme-data"}],
    }
    rec.update(over)
    return {k: v for k, v in rec.items() if v is not _DROP}


_DROP = object()


def _delivery(path: Path, recs: list, *, gz: bool = True, prefix: bytes = b"") -> Path:
    body = prefix + json.dumps({"Records": recs}, ensure_ascii=False).encode("utf-8")
    path.write_bytes(gzip.compress(body, mtime=0) if gz else body)
    return path


def _branches(start: int) -> list[dict]:
    """Records of the row builder's branches that every CloudTrail path reads (the reference,
    both fast tiers), numbered from ``start``."""
    specs = [
        dict(eventName="ListObjects", resources=_DROP,
             requestParameters={"bucketName": "acme-data", "prefix": "reports/"}),
        dict(resources=[{"type": "AWS::S3::Object", "ARNPrefix": "arn:aws:s3:::acme-data/pre/"}]),
        dict(resources=[{"type": "AWS::S3::Bucket", "ARN": "arn:aws:s3:::acme-data"}],
             requestParameters={"bucketName": ""}),
        dict(eventSource="kms.amazonaws.com", eventName="Decrypt",
             userIdentity={"type": "AWSService", "invokedBy": "lambda.amazonaws.com"},
             resources=[{"ARN": "arn:aws:kms:eu-west-1:1:key/k"}]),
        dict(eventSource="signin.amazonaws.com", eventName="ConsoleLogin",
             responseElements={"ConsoleLogin": "Failure"}, userIdentity={"type": "IAMUser", "userName": "bob"}),
        dict(errorCode="AccessDenied", errorMessage="Access Denied"),
        dict(errorCode="NoSuchKey"),
        dict(errorCode=""),
        dict(userIdentity={"type": "AWSAccount", "accountId": "anonymous", "principalId": ""}),
        dict(userIdentity={"type": "AssumedRole", "arn": "arn:aws:sts::1:assumed-role/r/s",
                           "sessionContext": {"sourceIdentity": "door-call-17"}}),
        dict(userIdentity={"type": "Weird", "arn": "arn:aws:iam::1:user/x", "sourceIdentity": "si"}),
        dict(userIdentity={"arn": "", "invokedBy": "s3.amazonaws.com"}),
        *(dict(additionalEventData={"bytesTransferredOut": v}) for v in (2 ** 60, 12.0, "77")),
        dict(additionalEventData=None, requestID=None, requestId="lower-id", userAgent=""),
    ]
    return [_rec(start + k, **kw) for k, kw in enumerate(specs)]


def _variety() -> list[dict]:
    """Records covering every branch of the reference's row builder."""
    recs = [_rec(i) for i in range(30)] + _branches(30)
    n = len(recs)
    recs += [_rec(n + k, **kw) for k, kw in enumerate([
        dict(resources=[{"type": "AWS::S3::Object", "ARN": "arn:aws:s3:::"}, "junk",
                        {"type": "AWS::S3::Object", "ARN": "arn:aws:s3:::b2/x y"}]),
        dict(resources="not a list", requestParameters=None),
        dict(userIdentity="not a dict"),
        dict(eventTime="2026-09-13T10:00:00.123456789+11:00"),
        dict(eventTime="yesterday"),
        dict(userAgent="naïve ünïcode ✓", requestParameters={"bucketName": "b", "key": "caf\u00e9"}),
        dict(eventName="DeleteObjects", eventSource="s3.amazonaws.com"),
        dict(eventSource="ec2.amazonaws.com", eventName="TerminateInstances", resources=None),
        dict(userIdentity={"type": ["AssumedRole"], "userName": "odd"}),  # used to crash the load
        dict(resources=5),
        dict(eventSource="ec2.amazonaws.com", eventName="RunInstances", resources=True),
        dict(eventSource="ec2.amazonaws.com", eventName="RunInstances", resources={"ARN": "x"}),
    ])]
    return recs


def test_cloudtrail_fast_path_is_taken_and_equal(tmp_path):
    _delivery(tmp_path / "a.json.gz", _variety())
    data = gzip.decompress((tmp_path / "a.json.gz").read_bytes())
    assert _ct_fast.read_fast(tmp_path / "a.json.gz", data) is not None
    same_ct(tmp_path)


@pytest.mark.parametrize("case", [
    "secret", "secret-upper", "eq-harmless", "escape", "long-s", "deep", "not-deep", "bad-record",
    "lookup-inside", "eventbridge-inside", "nested-records", "bom", "ws", "array", "jsonl", "plain",
    "duplicate-key", "empty-records", "concatenated", "concatenated-cut", "pretty-stream", "concatenated-stray", "jsonl-joined-line",
    "raw-nul", "raw-nul-plain", "raw-controls", "raw-nul-between-tokens", "raw-nul-pretty", "raw-nul-concatenated",
    "raw-nul-array", "raw-nul-jsonl", "raw-nul-every-record", "raw-nul-in-wrapper",
    "error-code-number", "error-code-object", "error-code-number-compact",
    "bytes-negative", "bytes-bool", "bytes-negative-compact",
])
def test_cloudtrail_guards(tmp_path, case):
    recs = _variety()[:8]
    f = tmp_path / "f.json.gz"
    if case == "secret":
        recs[2]["requestParameters"]["url"] = "https://x/o?X-Amz-Signature=abc&a=b"
    elif case == "secret-upper":
        recs[2]["userAgent"] = "SIG=zzz"
    elif case == "eq-harmless":
        recs[2]["userAgent"] = "a=b c=d"
    elif case == "escape":
        _delivery(f, recs, gz=True)
        body = gzip.decompress(f.read_bytes()).replace(b"[aws-cli", b"\\u0073ig\\u003dq [aws-cli", 1)
        f.write_bytes(gzip.compress(body))
        same_ct(tmp_path)
        return
    elif case == "long-s":
        recs[2]["userAgent"] = "\u017fig=secret"  # case-folds to "sig" in the reference's regex
    elif case in ("deep", "not-deep"):
        v: object = 1
        for _ in range(230 if case == "deep" else 120):
            v = [v]
        recs[3]["requestParameters"]["deep"] = v
    elif case in ("error-code-number", "error-code-object", "error-code-number-compact"):
        recs[4]["errorCode"] = {"code": "AccessDenied"} if case == "error-code-object" else 403
        if case == "error-code-number-compact":
            f.write_bytes(json.dumps({"Records": recs}, separators=(",", ":")).encode())
            assert _ct_fast.read_fast(f, f.read_bytes()) is None  # read record by record, noted
            same_ct(tmp_path)
            return
    elif case in ("bytes-negative", "bytes-bool", "bytes-negative-compact"):
        # a byte count that is no count: the reference notes it on the file, so neither fast
        # tier takes the file
        recs[4]["additionalEventData"] = {"bytesTransferredOut": True if case == "bytes-bool" else -5}
        if case == "bytes-negative-compact":
            f.write_bytes(json.dumps({"Records": recs}, separators=(",", ":")).encode())
        else:
            _delivery(f, recs, gz=False)
        assert _ct_fast.read_fast(f, f.read_bytes()) is None
        same_ct(tmp_path)
        assert cloudtrail.load_cloudtrail(f).inputs[0]["notes"][0].startswith(
            "record 5: additionalEventData.bytesTransferredOut ")
        return
    elif case == "bad-record":
        recs[4] = {"eventName": "GetObject"}
    elif case == "lookup-inside":
        recs[4] = {"EventTime": "2026-09-13T10:00:00Z", "EventName": "GetObject",
                   "CloudTrailEvent": json.dumps(_rec(99))}
    elif case == "eventbridge-inside":
        recs[4] = {"detail-type": "Object Created", "detail": {"bucket": "b"}}
    elif case == "nested-records":
        recs[4] = {"Records": [_rec(98)]}
    elif case == "bom":
        _delivery(f, recs, prefix=b"\xef\xbb\xbf")
        same_ct(tmp_path)
        return
    elif case == "ws":
        _delivery(f, recs, prefix=b" \n\t\x0c")
        same_ct(tmp_path)
        return
    elif case == "array":
        f.write_bytes(json.dumps(recs).encode())
        same_ct(tmp_path)
        return
    elif case == "jsonl":
        f.write_bytes(b"\n".join(json.dumps(r).encode() for r in recs) + b"\n")
        same_ct(tmp_path)
        return
    elif case == "plain":
        _delivery(f, recs, gz=False)
        same_ct(tmp_path)
        return
    elif case == "duplicate-key":
        _delivery(f, recs, gz=False)
        f.write_bytes(f.read_bytes().replace(b'"eventName": "GetObject"',
                                             b'"eventName": "PutObject", "eventName": "GetObject"', 1))
        same_ct(tmp_path)
        return
    elif case in ("concatenated", "concatenated-cut"):
        one = json.dumps({"Records": recs[:4]}).encode()
        two = json.dumps({"Records": recs[4:]}).encode()
        f.write_bytes(gzip.compress(one) + gzip.compress(two[:-50] if case == "concatenated-cut" else two))
        same_ct(tmp_path)
        return
    elif case == "concatenated-stray":
        one, two = (json.dumps({"Records": r}).encode() for r in (recs[:4], recs[4:]))
        f.write_bytes(gzip.compress(one + b"}" + two))
        same_ct(tmp_path)
        return
    elif case == "jsonl-joined-line":
        f.write_bytes(b"\n".join(json.dumps(r).encode() for r in recs[:3]) + b"\n"
                      + json.dumps({"Records": recs[3:5]}).encode() + json.dumps({"Records": recs[5:]}).encode())
        same_ct(tmp_path)
        return
    elif case == "pretty-stream":
        f.write_bytes("\n".join(json.dumps(r, indent=2) for r in recs).encode())
        same_ct(tmp_path)
        return
    elif case.startswith("raw-"):  # a raw control character (damage: no JSON writer leaves one) in records
        f.write_bytes(raw_control_file(recs, case))
        same_ct(f)
        return
    elif case == "empty-records":
        recs = []
    _delivery(f, recs)
    same_ct(tmp_path)


def raw_control_file(recs: list, case: str) -> bytes:
    """A file of ``recs`` with raw control characters (U+0000–U+001F) where JSON allows them only
    escaped — what no JSON writer leaves, so damage to the file; ``recs[k]`` has requestID ``Rk``."""
    compact = json.dumps({"Records": recs}, separators=(",", ":")).encode()
    nul2 = compact.replace(b'"R2"', b'"R\x002"', 1)
    if case == "raw-nul":
        return gzip.compress(nul2)
    if case == "raw-nul-plain":
        return nul2
    if case == "raw-controls":  # an unescaped tab, LF and U+001F in strings of three records
        return compact.replace(b'"R1"', b'"R\t1"', 1).replace(b'"R4"', b'"R\n4"', 1).replace(b'"R6"', b'"R\x1f6"', 1)
    if case == "raw-nul-between-tokens":
        return compact.replace(b',"requestID":"R3"', b',\x00"requestID":"R3"', 1)
    if case == "raw-nul-pretty":
        return json.dumps({"Records": recs}, indent=2).encode().replace(b'"R5"', b'"R\x00 5"', 1)
    if case == "raw-nul-concatenated":
        one = json.dumps({"Records": recs[:4]}).encode()
        two = json.dumps({"Records": recs[4:]}).encode().replace(b'"R5"', b'"R\x005"', 1)
        return gzip.compress(one) + gzip.compress(two)
    if case == "raw-nul-array":
        return json.dumps(recs).encode().replace(b'"R2"', b'"R\x002"', 1)
    if case == "raw-nul-jsonl":
        return b"\n".join(json.dumps(r).encode() for r in recs).replace(b'"R2"', b'"\x00R2"', 1) + b"\n"
    if case == "raw-nul-every-record":
        return compact.replace(b'"eventVersion"', b'"event\x00Version"')
    if case == "raw-nul-in-wrapper":
        return compact[:-1] + b',"note":"a\x00b"}'
    raise ValueError(case)


def _nested(k: int, leaf=1) -> dict:
    """A record whose ``requestParameters`` makes ``k`` nested containers, the record included."""
    v = leaf
    for _ in range(k - 2):
        v = [v]
    return _rec(0, requestParameters={"deep": v})


@pytest.mark.parametrize("k,fast", [(150, True), (200, True), (201, False), (260, False), (1100, False)])
def test_cloudtrail_nesting_limit(tmp_path, k, fast):
    recs = [_rec(1), _nested(k)]
    assert _ct_fast.shallow(recs) is fast
    if k < 1000:  # orjson itself refuses more than 1024 levels: the reference reads that file
        _delivery(tmp_path / "n.json.gz", recs)
        same_ct(tmp_path)
        _delivery(tmp_path / "n.json.gz", [_rec(1), _nested(k, leaf="s")])
        same_ct(tmp_path)


def test_cloudtrail_files_given_twice_unsorted_and_mixed(tmp_path):
    a = _delivery(tmp_path / "b.json.gz", _variety())
    b = _delivery(tmp_path / "a.json.gz", [_rec(i) for i in range(100, 120)])
    (tmp_path / "digest.json").write_text(json.dumps({"digestStartTime": "x", "logFiles": []}))
    (tmp_path / "lookup.jsonl").write_bytes((CLOUD / "lookup" / "lookup_events.jsonl").read_bytes())
    same_ct([a, b, a, tmp_path / "digest.json", tmp_path / "lookup.jsonl"])
    same_ct(tmp_path)


def _gzip_with_header_crc(body: bytes) -> bytes:
    head = b"\x1f\x8b\x08\x02" + struct.pack("<I", 0) + b"\x00\xff"
    comp = zlib.compressobj(6, zlib.DEFLATED, -15)
    return (head + struct.pack("<H", zlib.crc32(head) & 0xFFFF) + comp.compress(body) + comp.flush()
            + struct.pack("<II", zlib.crc32(body), len(body)))


def test_cloudtrail_gzip_variants(tmp_path):
    body = json.dumps({"Records": _variety()[:5]}).encode()
    (tmp_path / "multi.json.gz").write_bytes(gzip.compress(body[:50]) + gzip.compress(body[50:]))
    (tmp_path / "hcrc.json.gz").write_bytes(_gzip_with_header_crc(body))
    gz = gzip.compress(body)
    (tmp_path / "cut.json.gz").write_bytes(gz[: len(gz) // 2])
    bad = bytearray(gz)
    bad[-8] ^= 0xFF
    (tmp_path / "crc.json.gz").write_bytes(bytes(bad))
    (tmp_path / "trailing.json.gz").write_bytes(gz + b"\x00\x00junk")
    same_ct(tmp_path)
    for p in tmp_path.iterdir():
        disk = p.read_bytes()
        assert _cloud_fast.gunzip(p, disk) == _cloud_fast._cloud.read_input_bytes(disk)[1:]


# -- S3 server access logs -------------------------------------------------------------------

S3_FIXTURES = [CLOUD / "s3-access-quotes", CLOUD / "hostile", CLOUD / "cloudtrail-tree", CLOUD / "join"]


@pytest.mark.parametrize("path", S3_FIXTURES, ids=lambda p: p.name)
def test_s3_fixtures(path):
    same_s3(path)


@pytest.mark.real
def test_s3_real_and_case_files(real_dir, cases_dir):
    same_s3(real_dir / "cloud" / "s3_server_access__awsdocs_logformat_example.log")
    same_s3(cases_dir / "s3-access-quotes")


OWNER = "79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be"


def _line(i: int = 0, *, owner=OWNER, bucket="acme-data", time="13/Sep/2026:10:00:21 +0000",
          requester="arn:aws:sts::123456789012:assumed-role/reader/sess-1", op="REST.GET.OBJECT",
          key="demo/a.csv", uri='"GET /acme-data/demo/a.csv HTTP/1.1"', status="200", err="-",
          sent="512", size="512", total="12", turn="10", referer='"-"', ua='"aws-cli/2.15 Python/3.11"',
          tail="- HOSTID= SigV4 ECDHE-RSA-AES128-GCM-SHA256 AuthHeader acme-data.s3.amazonaws.com TLSv1.2 - -"):
    parts = [owner, bucket, f"[{time}]", f"198.51.100.{i % 250}", requester, f"REQ{i}", op, key, uri,
             status, err, sent, size, total, turn, referer, ua]
    return " ".join(parts) + (" " + tail if tail else "")


TRICKY = {
    "quote-in-ua": _line(ua='"door/1.2 (say "hi")"'),
    "quote-in-uri": _line(uri='"GET /acme-data/a"b HTTP/1.1"'),
    "space-requester": _line(requester="arn:aws:iam::1:user/with space"),
    "dashes": _line(requester="-", key="-", uri="-", status="-", err="-", sent="-", size="-", total="-",
                    turn="-", referer="-", ua="-", tail="- - - - - - - - - -"),
    "empty-quoted": _line(uri='""', referer='""'),
    "quoted-dash": _line(ua='"-"', uri='"-"'),
    "short-tail": _line(tail="- HOSTID="),
    "no-tail": _line(tail=""),
    "extra-fields": _line(tail="- H SigV4 C AuthHeader h TLSv1.3 - Yes eu-west-1 NEW1 NEW2"),
    "quoted-tail": _line(tail='- H SigV4 C AuthHeader h TLSv1.3 "arn x" - -'),
    "trailing-space": _line() + " ",
    "double-space-tail": _line(tail="- H  SigV4"),
    "two-trailing-spaces": _line() + "  ",
    "encoded-key": _line(key="demo/caf%C3%A9+menu%2Bx.csv"),
    "plus-key": _line(key="a+b"),
    "list-prefix": _line(op="REST.GET.BUCKET", key="-", uri='"GET /acme-data?list-type=2&prefix=rep%2F HTTP/1.1"'),
    "list-encoded-name": _line(op="REST.GET.BUCKET", key="-", uri='"GET /acme-data?pre%66ix=z&x=1 HTTP/1.1"'),
    "list-no-prefix": _line(op="REST.GET.BUCKET", key="-", uri='"GET /acme-data HTTP/1.1"'),
    "no-bucket": _line(bucket="-"),
    "bucket-op": _line(op="REST.GET.VERSIONING", key="-"),
    "no-op": _line(op="-"),
    "secret-uri": _line(uri='"GET /acme-data/a?X-Amz-Signature=abc&X-Amz-Credential=AK HTTP/1.1"'),
    "secret-referer": _line(referer='"https://x/?sig=zzz"'),
    "harmless-eq": _line(uri='"GET /acme-data/a?versionId=3 HTTP/1.1"'),
    "bad-time": _line(time="13/Foo/2026:10:00:21 +0000"),
    "dash-time": _line(time="-"),
    "odd-time": _line(time="3/sep/2026:10:00:21.5 -0130"),
    "big-bytes": _line(sent=str(2 ** 60)),
    "huge-bytes": _line(sent=str(2 ** 70)),
    "denied": _line(status="403", err="AccessDenied"),
    "server-error": _line(status="503", err="SlowDown"),
    "canonical": _line(requester="a" * 64),
    "svc": _line(requester="svc:logging.s3.amazonaws.com"),
    "root": _line(requester="arn:aws:iam::123456789012:root"),
    "quoted-plain-field": _line(key='"k"'),
    "tab": _line(ua='"a\tb"'),
    "unicode-ua": _line(ua='"naïve ✓"'),
    "junk": "this is not an access log line",
}


@pytest.mark.parametrize("name", sorted(TRICKY))
def test_s3_tricky_line_in_a_file_of_good_lines(tmp_path, name):
    good = [_line(i) for i in range(5)]
    text = "\n".join(good[:3] + [TRICKY[name]] + good[3:]) + "\n"
    (tmp_path / "log").write_text(text, encoding="utf-8")
    same_s3(tmp_path)


@pytest.mark.parametrize("ending", ["\n", "\r\n", "", "\r", "\n\n\n", "\r\r\n"])
def test_s3_line_endings_blank_and_pending_lines(tmp_path, ending):
    lines = [_line(i) for i in range(4)]
    (tmp_path / "a").write_bytes((ending.join(lines) + ending).encode() if ending else
                                 "\n".join(lines).encode())
    (tmp_path / "b").write_bytes(("\n".join(lines) + "\n\n   \n" + _line(9)[:80]).encode())  # pending junk
    (tmp_path / "c").write_bytes(b"\n" + "\n".join(lines).encode() + b"\n \t\n" + _line(8).encode())
    (tmp_path / "d").write_bytes(b"\n".join([_line(1).encode(), b"\xff\xfe broken", _line(2).encode()]))
    same_s3(tmp_path)


def test_s3_whole_file_shapes(tmp_path):
    # uniform tails, mixed tail lengths, all extra fields, all lines without tail, lone CR
    (tmp_path / "uniform").write_text("\n".join(_line(i) for i in range(50)) + "\n")
    (tmp_path / "mixed").write_text("\n".join(_line(i, tail=" ".join(["x"] * (i % 13))) for i in range(50)) + "\n")
    (tmp_path / "extra").write_text("\n".join(_line(i, tail=" ".join(["y"] * 12)) for i in range(20)) + "\n")
    (tmp_path / "notail").write_text("\n".join(_line(i, tail="") for i in range(20)) + "\n")
    (tmp_path / "cr").write_bytes(("\n".join(_line(i) for i in range(5)) + "\rmore\n").encode())
    (tmp_path / "gz").write_bytes(gzip.compress(("\n".join(_line(i) for i in range(30)) + "\n").encode()))
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "blank").write_bytes(b"\n\n  \n")
    same_s3(tmp_path)
    same_s3([tmp_path / "uniform", tmp_path / "mixed", tmp_path / "uniform"])


def test_s3_fuzzed_lines(tmp_path):
    rnd = random.Random(20261129)
    base = [_line(i) for i in range(40)] + list(TRICKY.values())
    out = []
    for i in range(400):
        s = list(rnd.choice(base))
        for _ in range(rnd.randrange(0, 4)):
            pos = rnd.randrange(len(s) + 1)
            op = rnd.random()
            if op < 0.6:
                s.insert(pos, rnd.choice([" ", '"', "-", "]", "[", "%", "+", "=", "\r", "x"]))
            elif s:
                del s[min(pos, len(s) - 1)]
        out.append("".join(s))
    for k in range(8):
        (tmp_path / f"f{k}").write_text("\n".join(out[k * 50:(k + 1) * 50]) + "\n")
    same_s3(tmp_path)


def test_s3_fast_pattern_takes_ordinary_lines():
    text = "\n".join(_line(i) for i in range(10)) + "\n"
    assert all(m[0] for m in _s3_fast.LINE.findall(text))


def test_s3_fast_path_is_taken_with_odd_lines_read_per_line(tmp_path):
    good = [_line(i) for i in range(5)]
    data = ("\n".join(good[:2] + [TRICKY["junk"], TRICKY["quote-in-uri"]] + good[2:]) + "\n").encode()
    q: list = []
    block = _s3_fast._read_fast(tmp_path / "x", data, {}, q)
    assert block is not None and block["line_no"] == [1, 2, 4, 5, 6, 7] and [r["line_no"] for r in q] == [3]




def test_byte_counts_beyond_int64_are_na_on_both_paths(tmp_path):
    # no byte count reaches 2**63: such a value is not a count (NA), and must not abort the load
    rec = {"eventVersion": "1.09", "userIdentity": {"type": "AssumedRole", "arn": "arn:aws:sts::1:assumed-role/r/s"},
           "eventTime": "2026-09-13T10:00:00Z", "eventSource": "s3.amazonaws.com", "eventName": "GetObject",
           "requestParameters": {"bucketName": "b", "key": "k"}, "requestID": "R", "eventID": "E",
           "additionalEventData": {"bytesTransferredOut": 2**64}}
    ct = tmp_path / "ct.json"
    ct.write_text(json.dumps({"Records": [rec, dict(rec, additionalEventData={"bytesTransferredOut": 5})]}))
    for load in (cloudtrail.load_cloudtrail, cloudtrail._load_reference):
        res = load(ct)
        assert res.frame["bytes"].tolist() == [pd.NA, 5] and res.quarantine.empty
    owner = "79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be"
    line = (f'{owner} bkt [06/Feb/2019:00:00:38 +0000] 192.0.2.3 {owner} 3E57427F3EXAMPLE REST.GET.OBJECT a.jpg '
            '"GET /bkt/a.jpg HTTP/1.1" 200 - {} 434234 70 10 "-" "curl/7.1" - id2= SigV4 ECDHE-RSA-AES128-SHA '
            'AuthHeader bkt.s3.amazonaws.com TLSV1.2 - -\n')
    s3log = tmp_path / "s3.log"
    s3log.write_text(line.format("99999999999999999999999") + line.format("9223372036854775807")
                     + line.format("9223372036854775808") + line.format("000000000000000000000042"))
    for load in (s3_access.load_s3_access, s3_access._load_reference):
        # an S3 line whose count is 2**63 or more is damaged there: set aside with its line, as
        # one holding -5 is — never read as a request whose bytes are silently NA
        res = load(s3log)
        assert res.frame["bytes"].tolist() == [2**63 - 1, 42] and list(res.frame["line_no"]) == [2, 4]
        assert list(res.quarantine["line_no"]) == [1, 3] and list(res.quarantine["kind"]) == ["invalid"] * 2
        assert all("bytes sent" in e and "beyond 64 bits" in e for e in res.quarantine["error"])


@pytest.mark.parametrize("field", range(4))
def test_an_s3_count_beyond_64_bits_sets_its_line_aside_on_both_paths_as_minus_5_does(tmp_path, field):
    """Bytes sent, object size, total time or turn-around time of 99999999999999999999999 had
    loaded as a row with ``bytes`` NA (or the value kept only in ``raw``), no note, no quarantine
    row; ``-5`` in the same field quarantined the whole line.  Both are damage: both set the
    line aside, with its line number and the field named, the fast path as the per-line one."""
    owner = "79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be"
    names = ["bytes sent", "object size", "total time", "turn-around time"]

    def line(value: str) -> str:
        counts = ["434234", "434234", "70", "10"]
        counts[field] = value
        return (f'{owner} bkt [06/Feb/2019:00:00:38 +0000] 192.0.2.3 {owner} 3E57427F3EXAMPLE REST.GET.OBJECT a.jpg '
                f'"GET /bkt/a.jpg HTTP/1.1" 200 - {" ".join(counts)} "-" "curl/7.1" - id2= SigV4 ECDHE-RSA-AES128-SHA '
                'AuthHeader bkt.s3.amazonaws.com TLSV1.2 - -\n')

    s3log = tmp_path / "s3.log"
    s3log.write_text(line("5") + line("99999999999999999999999") + line("-5") + line("9223372036854775807"))
    got = []
    for load in (s3_access.load_s3_access, s3_access._load_reference):
        res = load(s3log)
        assert list(res.frame["line_no"]) == [1, 4]
        q = res.quarantine
        assert list(q["line_no"]) == [2, 3] and list(q["kind"]) == ["invalid", "invalid"]
        assert f"{names[field]} 99999999999999999999999 is beyond 64 bits" in q["error"].iloc[0]
        got.append((res.frame.drop(columns=["raw"]), q))
    pd.testing.assert_frame_equal(got[0][0], got[1][0])
    pd.testing.assert_frame_equal(got[0][1], got[1][1])


def test_quarantined_record_holding_an_integer_past_64_bits_is_kept_not_a_crash(tmp_path):
    # found by differential fuzzing: the quarantine row's raw preview could not be written
    p = tmp_path / "ct.jsonl"
    p.write_bytes(b'{"eventTime":"","eventName":"t","x":{"y":"\xe9"},"n":18446744073709551616}\n')  # invalid UTF-8: read by json, the int stays exact
    for load in (cloudtrail.load_cloudtrail, cloudtrail._load_reference):
        res = load(p)
        assert res.frame.empty
        assert res.quarantine["line_no"].tolist() == [1]
        assert "18446744073709551616" in str(res.quarantine["raw"][0])


def test_the_reader_thread_stays_a_few_files_ahead_and_stops_when_told(tmp_path, monkeypatch):
    """A folder of logs larger than memory must not be read ahead all at once."""
    import time

    files = []
    for i in range(20):
        p = tmp_path / f"log-{i:02d}"
        p.write_bytes(b"x" * 10)
        files.append(p)
    reads = []
    real = _cloud_fast.read_disk
    monkeypatch.setattr(_cloud_fast, "read_disk", lambda p: (reads.append(p), real(p))[1])
    reader = _cloud_fast.ReadAhead(files)
    reader.start()
    time.sleep(0.5)  # nothing consumed: the reader fills its queue and waits
    assert len(reads) <= _cloud_fast.ReadAhead.AHEAD + 1
    assert reader.out.get()[0] == files[0]
    reader.stop = True
    reader.join(timeout=2)
    assert not reader.is_alive()


def test_a_file_the_reader_cannot_read_raises_in_its_turn_and_the_reader_stops(tmp_path, monkeypatch):
    import threading

    from replaybook.errors import InputError

    for i in range(6):
        (tmp_path / f"log-{i}").write_text(_line(i) + "\n")
    bad = tmp_path / "log-3"
    real = _cloud_fast.read_disk

    def read(p):
        if p == bad:
            raise InputError("cannot read: Permission denied", p)
        return real(p)

    monkeypatch.setattr(_cloud_fast, "read_disk", read)
    before = threading.active_count()
    with pytest.raises(InputError, match="cannot read: Permission denied") as err:
        s3_access.load_s3_access(tmp_path)
    assert str(bad) in str(err.value)
    assert threading.active_count() == before  # the read-ahead thread is gone


def test_cr_line_ends_same_on_both_paths(tmp_path):
    recs = [_rec(i) for i in range(6)]
    (tmp_path / "pretty.json").write_bytes(json.dumps({"Records": recs}, indent=2).replace("\n", "\r").encode())
    (tmp_path / "lines.jsonl").write_bytes(b"\r".join(json.dumps(r).encode() for r in recs) + b"\r")
    (tmp_path / "compact.json").write_bytes(json.dumps({"Records": recs}, separators=(",", ":")).encode() + b"\r")
    same_ct(tmp_path)
    res = cloudtrail.load_cloudtrail(tmp_path / "lines.jsonl")
    assert list(res.frame["request_id"]) == [f"R{i}" for i in range(6)]
    assert res.inputs[0]["lines"] == 6 and len(res.inputs[0]["notes"]) == 1
    (tmp_path / "s3").write_bytes(b"\r".join(_line(i).encode() for i in range(6)))
    same_s3(tmp_path / "s3")


def test_a_date_alone_is_set_aside_by_every_path(tmp_path):
    # eventTime "2026-09-13" (and the like) had been read as midnight; the fast paths ask to_utc
    # for every time not of the common shape, so they set it aside exactly as the reference does
    recs = [_rec(i) for i in range(8)] + [_rec(8, eventTime="2026-09-13"), _rec(9, eventTime="2026"),
                                           _rec(10, eventTime="2026-09-13T10Z"), _rec(11, eventTime="2026-09-13T10:01Z")]
    _delivery(tmp_path / "a.json.gz", recs)
    same_ct(tmp_path)
    res = cloudtrail.load_cloudtrail(tmp_path)
    assert len(res.frame) == 8 and len(res.quarantine) == 4
    assert all(e.endswith("is not a date-time") for e in res.quarantine["error"])


@pytest.mark.parametrize("compact", [True, False], ids=["tier1", "tier2"])
def test_an_event_without_a_request_id_carries_its_event_id_on_every_path(tmp_path, compact):
    """An event without ``requestID`` (a sign-in, an AWS service's own event) is told by its
    ``eventID`` — on the fast tiers as on the reference — so that the access join can tell a
    copy CloudTrail delivered again; an event with a request id keeps it, and neither id (or an
    ``eventID`` that is not text) leaves it NA."""
    login = dict(eventSource="signin.amazonaws.com", eventName="ConsoleLogin", resources=_DROP,
                 userIdentity={"type": "IAMUser", "arn": "arn:aws:iam::1:user/ops", "userName": "ops"})
    recs = [_rec(0), _rec(1, requestID=_DROP, **login), _rec(2, requestID="", eventID="E2b"),
            _rec(3, requestID=_DROP, eventID=_DROP), _rec(4, requestID=None, requestId="lower-id")]
    if not compact:
        recs.append(_rec(5, requestID=_DROP, eventID=5))
    body = json.dumps({"Records": recs}, separators=(",", ":") if compact else None).encode()
    (tmp_path / "a.json").write_bytes(body)
    assert (_ct_fast.read_compact(tmp_path / "a.json", body) is not None) is compact
    assert _ct_fast.read_fast(tmp_path / "a.json", body) is not None
    same_ct(tmp_path)
    got = cloudtrail.load_cloudtrail(tmp_path).frame
    want = ["R0", "E1", "E2b", None, "lower-id"] + ([] if compact else [None])
    assert [None if pd.isna(v) else v for v in got.sort_values("line_no")["request_id"]] == want
