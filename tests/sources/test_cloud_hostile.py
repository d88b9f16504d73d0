"""Hostile inputs for every cloud loader: truncated gzip, zero-byte gzip, a gzip magic with no
gzip behind it, binary junk named ``.json``, lone surrogates and invalid UTF-8.  Each gives a
clear quarantine row or a counted skip — never a crash, never a silent drop — and no input file
changes.  Also: the cloud sniffers leave door / Claude Code files alone and vice versa."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
from pathlib import Path

import pandas as pd
import pytest

from replaybook import _jsonl
from replaybook.errors import InputError
from replaybook.frames import ACCESS
from replaybook.sources import registry, s3_access
from replaybook.sources._record import as_dict
from replaybook.sources.azure_analytics import load_azure_analytics
from replaybook.sources.azure_storage import load_azure_storage
from replaybook.sources.cloudtrail import load_cloudtrail
from replaybook.sources.gcp_audit import load_gcp_audit
from replaybook.sources.s3_access import load_s3_access

FIX = Path(__file__).resolve().parents[1] / "fixtures"
CLOUD = FIX / "cloud"
HOSTILE = CLOUD / "hostile"

# loader, a good sample file, a line with lone surrogates / invalid UTF-8 in that format
SURROGATE_S3 = (b'79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be acme-data [13/Sep/2026:10:00:21 +0000] '
                b'198.51.100.7 - R1 REST.GET.OBJECT demo/caf%C3%A9.csv "GET /acme-data/demo/x HTTP/1.1" 200 - 5 5 1 1 '
                b'"-" "ua \xff\xfe \xed\xb3\xa9" - H SigV4 C AuthHeader h TLSv1.3 - -\n')
SURROGATE_GCP = (b'{"protoPayload": {"@type": "type.googleapis.com/google.cloud.audit.AuditLog", "methodName": '
                 b'"storage.objects.get", "resourceName": "projects/_/buckets/b/objects/caf\\udce9", '
                 b'"authenticationInfo": {"principalEmail": "x\\ud83d@acme.example"}}, "insertId": "s1", '
                 b'"timestamp": "2026-09-13T10:00:21Z", "logName": "projects/p/logs/cloudaudit.googleapis.com%2Fdata_access"}\n')
SURROGATE_AZ = (b'{"time": "2026-09-13T10:00:21Z", "category": "StorageRead", "operationName": "GetBlob", '
                b'"statusCode": 200, "statusText": "Success", "correlationId": "s1", '
                b'"uri": "https://acct.blob.core.windows.net/c/caf\\udce9.csv", '
                b'"properties": {"accountName": "acct", "userAgentHeader": "ua \\ud800"}}\n')
SURROGATE_AZ_CLASSIC = (b'1.0;2026-09-13T10:00:21.0000000Z;GetBlob;Success;200;5;5;anonymous;;acct;blob;'
                        b'"https://acct.blob.core.windows.net/c/caf\xc3\xa9.csv";"/acct/c/caf\xed\xb3\xa9.csv";s1;0;'
                        b'198.51.100.7:1;2019-12-12;100;0;100;5;0;;;;;;"ua \xff\xfe";;\n')
LOADERS = {
    "aws.cloudtrail": (load_cloudtrail, (HOSTILE / "surrogates.jsonl").read_bytes()),
    "azure.storage_analytics": (load_azure_analytics, SURROGATE_AZ_CLASSIC),
    "aws.s3_access": (load_s3_access, SURROGATE_S3),
    "gcp.audit": (load_gcp_audit, SURROGATE_GCP),
    "azure.storage": (load_azure_storage, SURROGATE_AZ),
}
GOOD = {
    "aws.cloudtrail": next((CLOUD / "cloudtrail-tree").rglob("*_CloudTrail_*.json.gz")),
    "aws.s3_access": CLOUD / "s3-access-quotes" / "acme-data-2026-09-13-10-10-00-0123456789ABCDEF",
    "gcp.audit": CLOUD / "gcp-audit-denied" / "data_access.jsonl",
    "azure.storage": CLOUD / "azure" / "PT1H.json",
    "azure.storage_analytics": CLOUD / "azure-analytics" / "000000.log",
}


def _state(folder: Path) -> dict[str, tuple[str, int]]:
    return {p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), os.stat(p).st_mtime_ns)
            for p in folder.iterdir()}


def _hostile_folder(tmp_path: Path, name: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    good = GOOD[name].read_bytes()
    if good[:2] == b"\x1f\x8b":
        good = gzip.decompress(good)
    gz = gzip.compress(good)
    (d / "truncated.json.gz").write_bytes(gz[: len(gz) * 6 // 10])
    (d / "zero.json.gz").write_bytes(b"")
    (d / "fake.json.gz").write_bytes(b"\x1f\x8b" + b"not deflate" * 9)
    rnd = random.Random(7)
    (d / "junk.json").write_bytes(bytes(rnd.randrange(256) for _ in range(2048)) + b"\x00")
    (d / "surrogates.log").write_bytes(LOADERS[name][1])
    for p in d.iterdir():
        p.chmod(0o444)
    return d


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_hostile_inputs_give_quarantine_rows_and_leave_files_alone(tmp_path, name):
    loader = LOADERS[name][0]
    d = _hostile_folder(tmp_path, name)
    before = _state(d)
    res = loader(d)
    assert _state(d) == before
    ACCESS.validate(res.frame)
    info = {Path(i["path"]).name: i for i in res.inputs}
    assert set(info) == {"truncated.json.gz", "zero.json.gz", "fake.json.gz", "junk.json", "surrogates.log"}
    assert all(len(i["sha256"]) == 64 for i in info.values())
    assert info["zero.json.gz"]["skipped"] is True and info["zero.json.gz"]["reason"] == "empty file"
    assert info["truncated.json.gz"]["damaged_gzip"] is True
    q = res.quarantine
    by_file = {n: q[q["source_file"].str.endswith(n)] for n in info}
    assert by_file["zero.json.gz"].empty
    assert by_file["truncated.json.gz"]["error"].str.startswith("truncated gzip stream").any()
    assert by_file["fake.json.gz"]["error"].str.startswith("corrupt gzip stream").any()
    assert list(by_file["junk.json"]["error"]) == ["not a text log (binary data)"]
    # lone surrogates and invalid UTF-8 become U+FFFD; the row loads and encodes as UTF-8
    rows = res.frame[res.frame["source_file"].str.endswith("surrogates.log")]
    assert len(rows) >= 1
    for col in ("principal", "resource_uri", "user_agent"):
        for v in rows[col].dropna():
            v.encode("utf-8")
    json.dumps(as_dict(rows.iloc[0]["raw"]), ensure_ascii=False).encode("utf-8")
    assert any("\ufffd" in str(v) for v in rows[["resource_uri", "user_agent", "principal"]].to_numpy().ravel())


def test_truncated_gzip_keeps_the_lines_before_the_cut(tmp_path):
    lines = [json.dumps({"eventTime": f"2026-09-13T10:00:{i:02d}Z", "eventName": "GetObject",
                         "eventSource": "s3.amazonaws.com", "requestParameters": {"bucketName": "b", "key": f"k{i}"}})
             for i in range(60)]
    gz = gzip.compress(("\n".join(lines) + "\n").encode(), compresslevel=1)
    p = tmp_path / "events.jsonl.gz"
    p.write_bytes(gz[: len(gz) // 2])
    res = load_cloudtrail(p)
    assert 0 < len(res.frame) < 60
    assert list(res.frame["line_no"]) == list(range(1, len(res.frame) + 1))
    kinds = res.quarantine["kind"].tolist()
    assert kinds.count("invalid") == 1  # the file-level row saying the stream is truncated
    assert kinds.count("pending") <= 1  # the cut line, if the cut fell inside one


def test_cloudtrail_hostile_fixture_folder():
    before = _state(HOSTILE)
    res = load_cloudtrail(HOSTILE)
    assert _state(HOSTILE) == before
    assert list(res.frame["request_id"].fillna("-")) == ["SUR1", "-"]
    assert res.frame.iloc[0]["resource_uri"] == "s3://acme-data/demo/caf\ufffd.csv"
    assert res.frame.iloc[0]["user_agent"] == "door/1.2 \ufffd"
    q = res.quarantine
    assert sorted(Path(p).name for p in q["source_file"]) == [
        "junk.json", "not_really.json.gz", "surrogates.jsonl", "surrogates.jsonl",
        "truncated_CloudTrail.json.gz", "truncated_CloudTrail.json.gz"]
    sur = q[q["source_file"].str.endswith("surrogates.jsonl")].set_index("line_no")
    assert sur.loc[3, "error"] == "time 'not a time' is not a date-time"
    assert sur.loc[4, "kind"] == "pending"


@pytest.mark.parametrize("loader", [v[0] for v in LOADERS.values()])
def test_missing_path_raises_input_error(tmp_path, loader):
    with pytest.raises(InputError):
        loader([tmp_path / "absent.json"])


CLOUD_NAMES = set(LOADERS)
#: the loaders of line formats that are not JSON
TEXT_FORMATS = ("aws.s3_access", "azure.storage_analytics")


def _files(root: Path) -> list[Path]:
    return [p for p in sorted(root.rglob("*")) if p.is_file() and p.name not in ("README.md", "expected.json")]


def test_cloud_sniffers_do_not_claim_door_or_claude_code_files():
    others = _files(FIX / "join_trap") + _files(FIX / "claude_code") + _files(CLOUD / "join" / "door")
    assert others
    for p in others:
        data = p.read_bytes()
        for name in CLOUD_NAMES:
            assert registry.get(name).sniff(data) < 0.5, (name, p)


def test_cloud_files_sniff_as_their_own_source():
    expect = {
        CLOUD / "azure" / "PT1H.json": "azure.storage",
        CLOUD / "azure" / "eventhub-records.json": "azure.storage",
        CLOUD / "eventbridge" / "events.jsonl": "aws.cloudtrail",
        CLOUD / "lookup" / "lookup_events.jsonl": "aws.cloudtrail",
        CLOUD / "join" / "cloudtrail.json": "aws.cloudtrail",
    }
    for p, name in expect.items():
        src, conf = registry.sniff_file(p)
        assert src.name == name and conf >= 0.5, (p, src.name, conf)
        for other in CLOUD_NAMES - {name}:
            assert registry.get(other).sniff(p.read_bytes()) < 0.5


# -- NUL bytes in a text log -------------------------------------------------------------------

NUL_WORDS = "NUL bytes in the line (binary data: the file is damaged here); the other lines are read"


def _good_lines(name: str) -> list[bytes]:
    if name == "aws.cloudtrail":
        return [json.dumps(CT_LINE | {"eventTime": f"2026-09-13T10:00:0{i}Z", "requestID": f"R{i}"}).encode()
                for i in range(5)]
    return [ln for ln in GOOD[name].read_bytes().split(b"\n") if ln.strip()]


CT_LINE = {"eventVersion": "1.09", "eventTime": "2026-09-13T10:00:00Z", "eventName": "GetObject",
           "eventSource": "s3.amazonaws.com", "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::1:user/a"},
           "requestParameters": {"bucketName": "b", "key": "k"}}


@pytest.mark.parametrize("name", sorted(LOADERS))
@pytest.mark.parametrize("damage", ["one", "block"])
def test_nul_bytes_set_aside_only_their_line(tmp_path, name, damage):
    # one NUL byte (or a block of them, as a crash leaves in a file) made the whole file
    # "not a text log (binary data)": every record in it was lost
    lines = _good_lines(name)
    at = 1  # the second line
    bad = lines[at][:40] + (b"\x00" if damage == "one" else b"\x00" * 4096) + lines[at][40:]
    p = tmp_path / "log"
    data = b"\n".join(lines[:at] + [bad] + lines[at + 1:]) + b"\n"
    p.write_bytes(data)
    res = LOADERS[name][0](p)
    full = LOADERS[name][0](GOOD[name]) if name != "aws.cloudtrail" else None
    q = res.quarantine
    assert len(q) == 1
    assert q.iloc[0]["line_no"] == 2 and q.iloc[0]["byte_offset"] == len(lines[0]) + 1
    assert q.iloc[0]["kind"] == "invalid" and q.iloc[0]["error"].startswith(NUL_WORDS)
    assert q.iloc[0]["source_file"] == str(p)
    expected = 4 if full is None else len(full.frame) - 1
    assert len(res.frame) == expected and 2 not in set(res.frame["line_no"])
    assert p.read_bytes() == data


def test_nul_line_in_s3_log_same_on_both_paths(tmp_path):
    lines = _good_lines("aws.s3_access")
    (tmp_path / "a").write_bytes(b"\n".join([lines[0], lines[1].replace(b" ", b"\x00 ", 1)] + lines[2:]) + b"\n")
    (tmp_path / "b").write_bytes(b"\n".join(lines) + b"\n" + b"\x00" * 512)  # a crash's zeros at the end
    res = load_s3_access(tmp_path)
    ref = s3_access._load_reference(tmp_path)
    pd.testing.assert_frame_equal(res.quarantine, ref.quarantine)
    assert [(Path(f).name, n) for f, n in zip(res.quarantine["source_file"], res.quarantine["line_no"])] == [
        ("a", 2), ("b", len(lines) + 1)]
    # (the zeros after the last line are a crash's zero fill, said as such)
    assert res.quarantine["error"].tolist() == [NUL_WORDS, _jsonl.ZERO_FILL]
    assert len(res.frame) == 2 * len(lines) - 1 == len(ref.frame)


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_a_file_that_is_not_text_is_still_refused_whole(tmp_path, name):
    rnd = random.Random(11)
    junk = bytes(rnd.randrange(256) for _ in range(4096)).replace(b"\x00", b"\x01")  # no NUL at all
    (tmp_path / "junk").write_bytes(junk)
    (tmp_path / "utf16").write_bytes("\n".join(_good_lines(name)[0].decode() for _ in range(3)).encode("utf-16-le"))
    (tmp_path / "zeros").write_bytes(b"\x00" * 9000)
    res = LOADERS[name][0](tmp_path)
    assert res.frame.empty
    q = res.quarantine
    assert sorted(Path(f).name for f in q["source_file"]) == ["junk", "utf16", "zeros"]
    assert set(q["error"]) == {"not a text log (binary data)"} and q["line_no"].isna().all()


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_cr_only_line_ends_load_as_the_lf_copy_does(tmp_path, name):
    # an old Mac editor's CR line ends: damage was placed at "line 1" of a file of one line (and
    # an S3 log lost every record after the first into its trailing fields)
    lines = _good_lines(name)[:3]
    text = [lines[0], lines[1], b"", b'{"damaged', lines[2]]
    (tmp_path / "cr").write_bytes(b"\r".join(text) + b"\r")
    (tmp_path / "lf").write_bytes(b"\n".join(text) + b"\n")
    load = LOADERS[name][0]
    cr, lf = load(tmp_path / "cr"), load(tmp_path / "lf")
    assert len(cr.frame) == len(lf.frame) >= 2
    assert list(cr.frame["line_no"]) == list(lf.frame["line_no"])
    assert 5 in set(cr.frame["line_no"])
    q = cr.quarantine
    assert list(q["line_no"]) == [4] and list(q["byte_offset"]) == [len(lines[0]) + len(lines[1]) + 3]
    assert list(q["error"]) == list(lf.quarantine["error"])
    assert [r for r in cr.frame["raw"]] == [r for r in lf.frame["raw"]]
    assert cr.inputs[0]["lines"] == 5 and cr.inputs[0]["notes"] == [
        "the lines end in CR only (an old Mac editor's): each CR read as a line end"]


@pytest.mark.parametrize("name, path", [
    ("gcp.audit", CLOUD / "gcp-audit-denied" / "data_access.jsonl"),
    ("azure.storage", CLOUD / "azure" / "PT1H.json"),
    ("aws.cloudtrail", CLOUD / "lookup" / "lookup_events.jsonl"),
    ("aws.cloudtrail", CLOUD / "eventbridge" / "events.jsonl"),
    ("aws.s3_access", CLOUD / "s3-access-quotes" / "acme-data-2026-09-13-10-10-00-0123456789ABCDEF"),
])
def test_one_huge_foreign_line_does_not_hide_the_format(tmp_path, name, path):
    # the sniffer sees a file's first 256 KiB: a long line of another kind cut there counted as
    # a line that is not this format's, and a file of three records and that line was
    # "not recognised" — none of its records loaded
    from replaybook.loading import load_frame

    lines = [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]
    huge = b'{"x": "' + b"A" * (1 << 20) + b'"}'
    p = tmp_path / "log.jsonl"
    p.write_bytes(b"\n".join(lines[:1] + [huge] + lines[1:]) + b"\n")
    src, conf = registry.sniff_file(p)
    assert src.name == name and conf >= 0.5
    got = load_frame(p, "access").result
    alone = registry.get(name).load(path)
    assert len(got.frame) == len(alone.frame)
    assert list(got.quarantine["line_no"]) == [2] and list(got.quarantine["kind"]) == ["invalid"]
    # a sample of one cut line says nothing either way; one record among lines of another kind
    # is not this format's
    assert registry.get(name).sniff(huge[:1000]) == 0.0
    assert registry.get(name).sniff(lines[0] + b"\n" + b"a line of plain text of another kind\n" * 49) < 0.5


@pytest.mark.parametrize("name", sorted(LOADERS))
@pytest.mark.parametrize("tail", ["pending", "cut"])
def test_one_record_and_a_cut_or_unfinished_line_is_still_the_formats(tmp_path, name, tail):
    # a log of one record whose next line was cut (a copy cut short) or is still being written
    # was "not recognised": the line counted against the format, and the record was never read
    from replaybook.loading import load

    good = _good_lines(name)
    rest = good[1][: len(good[1]) // 2]
    p = tmp_path / ("log" if name == "aws.s3_access" else "log.jsonl")
    p.write_bytes(good[0] + b"\n" + rest + (b"" if tail == "pending" else b"\n"))
    src, conf = registry.sniff_file(p)
    assert src.name == name and conf >= 0.5
    got = load([p])
    files = got.files.set_index("path")
    assert files.loc[str(p), "source"] == name and int(files.loc[str(p), "rows"]) == 1
    q = got.quarantine
    assert list(q["line_no"]) == [2] and list(q["kind"]) == ["pending" if tail == "pending" else "invalid"]
    # a damaged line of JSON is not a line of another format either (for the JSON formats)
    if name not in TEXT_FORMATS:
        assert registry.get(name).sniff(good[0] + b'\n{"damag\n') >= 0.5
        # (a Python dict's repr is a line of another kind, not a cut record)
        assert registry.get(name).sniff(good[0] + b"\n" + b"{'bucket': 'x', 'n': 1}\n" * 3) < 0.5


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_a_line_with_nul_bytes_does_not_hide_the_format(tmp_path, name):
    # a damaged line is not a line of another format: one NUL in the first of two lines made
    # the file "not recognised" when sniffed, so the good line was never read
    from replaybook.loading import load_frame

    good = _good_lines(name)
    p = tmp_path / "log"
    p.write_bytes(good[0][:30] + b"\x00" + good[0][30:] + b"\n" + good[1] + b"\n")
    src, conf = registry.sniff_file(p)
    assert src.name == name and conf >= 0.5
    got = load_frame(p, "access").result
    assert list(got.quarantine["line_no"]) == [1] and got.quarantine["error"].iloc[0].startswith(NUL_WORDS)
    assert list(got.frame["line_no"]) == [2]
    assert registry.get(name).sniff(b"\x00\x01\x02\x03\n" * 50) == 0.0


@pytest.mark.parametrize("name", ["gcp.audit", "azure.storage", "aws.cloudtrail"])
def test_a_whole_small_file_is_sniffed_to_its_last_line(name):
    # a sample shorter than the sniffer's is the whole file: its unterminated last line (the
    # closing brace of one pretty-printed record) is complete and read
    rec = json.loads(_good_lines(name)[0])
    doc = json.dumps(rec, indent=2).encode()
    assert registry.get(name).sniff(doc) >= 0.9
    assert registry.get(name).sniff(doc + b"\n" + doc) >= 0.9


@pytest.mark.parametrize("name", sorted(LOADERS))
@pytest.mark.parametrize("other", [4, 9, 18])
def test_one_record_among_a_few_lines_of_another_kind_is_not_claimed(tmp_path, name, other):
    # the first rule let one record and up to 18 lines of prose be claimed (0.95 × (0.5 + 0.5/N)
    # stayed above 0.5): a line of another kind counts against the format, a cut record does not
    good = _good_lines(name)
    prose = b"".join(b"a line of plain text, not a log record %d\n" % i for i in range(other))
    assert registry.get(name).sniff(good[0] + b"\n" + prose) < 0.5
    assert registry.get(name).sniff(prose + good[0] + b"\n") < 0.5


def test_s3_cut_lines_are_told_from_lines_of_another_kind():
    good = _good_lines("aws.s3_access")
    sniff = registry.get("aws.s3_access").sniff
    owner = good[1].split(b" ")[0]
    assert sniff(good[0] + b"\r\n" + owner + b"\r\n") >= 0.5  # CRLF, cut after the owner id
    assert sniff(good[0] + b"\n" + owner[:40] + b"\n") >= 0.5  # cut inside the owner id, last
    assert sniff(good[0] + b"\n" + b"".join(b"%d\n" % i for i in range(3))) < 0.5  # numbers: another kind
    binary = b"".join(hashlib.sha256(b"%d" % i).hexdigest().encode() + b" *file%d.bin\n" % i for i in range(3))
    assert sniff(good[0] + b"\n" + binary) < 0.5  # sha256sum -b
    # sha256sum's lines (a hash, two spaces, a name) are another kind, not cut S3 lines
    sums = b"".join(hashlib.sha256(b"%d" % i).hexdigest().encode() + b"  file%d.csv\n" % i for i in range(6))
    assert sniff(sums + good[0] + b"\n") < 0.5


@pytest.mark.parametrize("name", ["cloud/lookup/lookup_events.jsonl", "cloud/gcp-audit-denied/data_access.jsonl",
                                  "cloud/azure/PT1H.json",
                                  "cloud/s3-access-quotes/acme-data-2026-09-13-10-10-00-0123456789ABCDEF"])
def test_a_crash_zero_fill_after_the_last_record_is_said_as_such(tmp_path, name):
    import replaybook

    src = Path(__file__).resolve().parents[1] / "fixtures" / name
    p = tmp_path / src.name
    p.write_bytes(src.read_bytes() + b"\x00" * 4096)
    before, after = replaybook.load(src), replaybook.load(p)
    assert after.quarantine["error"].tolist()[-1] == _jsonl.ZERO_FILL
    assert len(after.quarantine) == len(before.quarantine) + 1 and len(after["access"]) == len(before["access"])


def test_an_integer_past_pythons_digit_limit_loses_no_record(tmp_path):
    """One record holding a 5,001-digit integer in a field no loader reads: json raised ValueError
    ("use sys.set_int_max_str_digits()"), the delivery file was "cut short or damaged after 1
    complete record", and the records after it were lost without a row of their own."""
    import json

    from replaybook.sources.cloudtrail import load_cloudtrail

    def ev(i):
        return {"eventVersion": "1.08", "eventTime": f"2026-09-13T10:00:0{i}Z", "eventSource": "s3.amazonaws.com",
                "eventName": "GetObject", "awsRegion": "eu-west-1", "eventID": f"e{i}", "requestID": f"R{i}",
                "requestParameters": {"bucketName": "acme-data", "key": f"demo/a{i}.csv"},
                "userIdentity": {"type": "AssumedRole", "arn": "arn:aws:sts::1:assumed-role/r/s"}}

    text = json.dumps({"Records": [ev(1), ev(2), ev(3)]}).replace('"R2"', '"R2", "big": ' + "9" * 5001)
    p = tmp_path / "ct.json"
    p.write_text(text)
    res = load_cloudtrail(p)
    assert res.quarantine.empty
    assert res.frame["resource_uri"].tolist() == [f"s3://acme-data/demo/a{i}.csv" for i in (1, 2, 3)]
    q = tmp_path / "ct.jsonl"  # (and as JSON Lines, one record a line)
    q.write_text("\n".join(json.dumps(ev(i)) for i in (1, 2, 3)).replace('"R2"', '"R2", "big": ' + "9" * 5001) + "\n")
    got = load_cloudtrail(q)
    assert got.quarantine.empty and len(got.frame) == 3
