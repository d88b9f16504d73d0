"""S3 server access log parsing: quotes inside quoted fields, short and long lines, redaction,
bad lines, and a hostile line that must not make the parser backtrack for ever."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from replaybook.sources.s3_access import _load_reference, load_s3_access, parse_line, sniff

CLOUD = Path(__file__).resolve().parents[1] / "fixtures" / "cloud"
OWNER = "79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be"
ROLE = "arn:aws:sts::123456789012:assumed-role/door-reader/door-analyst"


def _line(time_="[13/Sep/2026:10:00:21 +0000]", requester=ROLE, op="REST.GET.OBJECT", key="demo/a.csv",
          uri='"GET /acme-data/demo/a.csv HTTP/1.1"', status="200", err="-", sent="10",
          referer='"-"', ua='"door/1.2"', tail=" - HOSTID SigV4 ECDHE-RSA-AES128-GCM-SHA256 AuthHeader "
                                               "acme-data.s3.eu-west-1.amazonaws.com TLSv1.3 - -"):
    return (f"{OWNER} acme-data {time_} 198.51.100.7 {requester} REQ {op} {key} {uri} {status} {err} "
            f"{sent} 10 5 4 {referer} {ua}{tail}")


def test_quotes_and_spaces_inside_quoted_fields():
    rec = parse_line(_line(ua='"agent "quoted" with spaces" and "more""'))
    assert rec["user_agent"] == 'agent "quoted" with spaces" and "more"'
    assert rec["version_id"] is None and rec["host_id"] == "HOSTID" and rec["acl_required"] is None
    rec = parse_line(_line(referer='"https://x.example/?q="a b""', ua='"ua "x""'))
    assert rec["referer"] == 'https://x.example/?q="a b"'
    assert rec["user_agent"] == 'ua "x"'


@pytest.mark.parametrize("ua, want", [
    ('"x" "y z"', 'x" "y z'),
    ('"x" "y"', 'x" "y'),
    ('"a" "b" "c"', 'a" "b" "c'),
])
def test_a_user_agent_holding_quote_space_quote_is_one_field(tmp_path, ua, want):
    # the fields after the user agent are never quoted: "y z" is not a version id, and the
    # fields after it keep their places (a client can choose its user agent)
    rec = parse_line(_line(ua=ua))
    assert rec["user_agent"] == want
    assert (rec["version_id"], rec["host_id"], rec["signature_version"], rec["tls_version"]) == (
        None, "HOSTID", "SigV4", "TLSv1.3")
    assert "extra_fields" not in rec
    p = tmp_path / "acme-data-2026-09-13-10-10-00-UA"
    p.write_text(_line(ua=ua) + "\n" + _line() + "\n", encoding="utf-8")
    f = load_s3_access(p).frame
    assert list(f["user_agent"]) == [want, "door/1.2"]


def test_short_old_lines_and_future_fields():
    old = parse_line(_line(tail=""))
    assert old["user_agent"] == "door/1.2" and "version_id" not in old and "extra_fields" not in old
    new = parse_line(_line(tail=" - H SigV4 C AuthHeader h TLSv1.3 - Yes eu-west-1 f28 \"quoted new\""))
    assert new["acl_required"] == "Yes" and new["source_region"] == "eu-west-1"
    assert new["extra_fields"] == ["f28", "quoted new"]


def test_loader_rows(tmp_path):
    lines = [
        _line(time_="[13/Sep/2026:12:00:21 +0200]", key="demo/a%2Bb+c.csv"),
        _line(requester="-", op="REST.GET.BUCKET", key="-", uri='"GET /?list-type=2&prefix=a%20b%2F HTTP/1.1"',
              sent="-"),
        _line(op="REST.HEAD.OBJECT", status="404", err="NoSuchKey", sent="-"),
        _line(uri='"GET /acme-data/demo/a.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=ASIA%2F20260913'
                  '&X-Amz-Security-Token=IQoJb3JpZ2luX2VjE&X-Amz-Signature=4f3c2b1a HTTP/1.1"',
              referer='"https://evil.example/?sig=abcdef"'),
        "this is not an access log line",
        _line(op="REST.PUT.OBJECT", status="403", err="AccessDenied", sent="243"),
        _line()[:60],  # unterminated last line
    ]
    p = tmp_path / "acme-data-2026-09-13-10-10-00-ABC"
    p.write_text("\n".join(lines), encoding="utf-8")
    res = load_s3_access(p)
    f = res.frame.set_index("line_no")
    assert list(f.index) == [1, 2, 3, 4, 6]
    assert f.loc[1, "ts"] == pd.Timestamp("2026-09-13T10:00:21Z")  # +0200 → UTC
    assert f.loc[1, "resource_uri"] == "s3://acme-data/demo/a+b c.csv"  # %2B is a plus, + a space
    assert f.loc[2, "principal_type"] == "anonymous" and pd.isna(f.loc[2, "principal"])
    assert f.loc[2, "resource_uri"] == "s3://acme-data/a b/" and f.loc[2, "action"] == "list"
    assert f.loc[2, "bytes"] == 0
    assert f.loc[3, "action"] == "head" and f.loc[3, "outcome"] == "error" and f.loc[3, "error_code"] == "NoSuchKey"
    raw4 = f.loc[4, "raw"]
    assert "4f3c2b1a" not in raw4["request_uri"] and "IQoJb3JpZ2luX2VjE" not in raw4["request_uri"]
    assert "X-Amz-Signature=REDACTED" in raw4["request_uri"] and "X-Amz-Algorithm=AWS4-HMAC-SHA256" in raw4["request_uri"]
    assert raw4["referer"] == "https://evil.example/?sig=REDACTED"
    assert f.loc[6, "outcome"] == "denied" and f.loc[6, "action"] == "write"
    q = res.quarantine.set_index("line_no")
    assert q.loc[5, "kind"] == "invalid" and "not an S3 server access log line" in q.loc[5, "error"]
    assert q.loc[7, "kind"] == "pending"
    assert q.loc[5, "byte_offset"] == sum(len(x.encode()) + 1 for x in lines[:4])


def test_pathological_line_is_quick():
    evil = _line(referer='"' + '" "' * 6000 + '"', ua='"' + '" x "' * 3000 + '"', tail=' "')
    t0 = time.perf_counter()
    parse_line(evil)
    assert time.perf_counter() - t0 < 5.0


def test_sniff():
    data = (CLOUD / "s3-access-quotes" / "acme-data-2026-09-13-10-10-00-0123456789ABCDEF").read_bytes()
    assert sniff(data) == pytest.approx(0.95)
    assert sniff(b'{"ts": "2026-09-13T10:00:00Z"}\n') == 0.0
    assert sniff(data + b"garbage line\n") == pytest.approx(0.95 * 4 / 5)


def _keyed(i: int) -> str:
    return _line(time_=f"[13/Sep/2026:10:00:{i:02d} +0000]", key=f"demo/{i}.csv")


@pytest.mark.parametrize("end", ["\r", "\r\n", "\n", ""])
def test_cr_only_line_ends_read_every_record(tmp_path, end):
    # an old Mac editor's CR line ends: the first record took the other four into its trailing
    # fields (extra_fields) and the load said 1 row, 0 quarantined
    import gzip

    from replaybook.sources import s3_access

    lines = [_keyed(i) for i in range(5)]
    data = ("\r".join(lines) + end).encode()  # (the last line's end: CR, CRLF, LF or none)
    (tmp_path / "log").write_bytes(data)
    (tmp_path / "log.gz").write_bytes(gzip.compress(data))
    for name in ("log", "log.gz"):
        res = load_s3_access(tmp_path / name)
        ref = s3_access._load_reference(tmp_path / name)
        pd.testing.assert_frame_equal(res.frame, ref.frame)
        assert res.inputs == ref.inputs
        assert res.quarantine.empty
        assert list(res.frame["resource_uri"]) == [f"s3://acme-data/demo/{i}.csv" for i in range(5)]
        assert list(res.frame["line_no"]) == [1, 2, 3, 4, 5]
        assert all("extra_fields" not in r for r in res.frame["raw"])
        info = res.inputs[0]
        assert info["lines"] >= 5 and info["records"] == 5
        assert info["notes"] == ["the lines end in CR only (an old Mac editor's): each CR read as a line end"]
    assert (tmp_path / "log").read_bytes() == data


def test_a_lone_cr_inside_a_line_ends_a_record(tmp_path):
    # lines of an LF file joined by a CR (part of a file written with CR line ends): each
    # record is read, numbered with the line it stands in; junk after a CR is quarantined
    from replaybook.sources import s3_access

    a, b, c, d = (_keyed(i) for i in range(4))
    data = f"{a}\n{b}\r{c}\r\n{d}\rjunk\n".encode()
    (tmp_path / "log").write_bytes(data)
    res = load_s3_access(tmp_path / "log")
    ref = s3_access._load_reference(tmp_path / "log")
    pd.testing.assert_frame_equal(res.frame, ref.frame)
    pd.testing.assert_frame_equal(res.quarantine, ref.quarantine)
    assert list(res.frame["resource_uri"]) == [f"s3://acme-data/demo/{i}.csv" for i in range(4)]
    assert list(res.frame["line_no"]) == [1, 2, 2, 3]
    assert res.frame["raw"].iloc[2].text == c.encode()
    q = res.quarantine.iloc[0]
    assert (q["line_no"], q["byte_offset"], q["raw"]) == (3, data.index(b"junk"), "junk")
    assert q["error"] == "not an S3 server access log line (fields do not match the format)"
    assert "notes" not in res.inputs[0]


@pytest.mark.parametrize("op, key, uri, expected", [
    # requests: encoded twice; the request-URI (the path the client sent) confirms
    ("REST.GET.OBJECT", "demo/a%2520b.csv", "GET /acme-data/demo/a%20b.csv HTTP/1.1", "demo/a b.csv"),
    ("REST.GET.OBJECT", "demo/c%252Bd.csv", "GET /demo/c%2Bd.csv HTTP/1.1", "demo/c+d.csv"),
    # a key holding "%41" of its own, virtual-hosted: not "eA"
    ("REST.HEAD.OBJECT", "demo/e%252541.csv", "HEAD /demo/e%2541.csv HTTP/1.1", "demo/e%41.csv"),
    # encoded once where twice was expected: the request-URI still decides
    ("REST.GET.OBJECT", "demo/e%2541.csv", "GET /acme-data/demo/e%2541.csv HTTP/1.1", "demo/e%41.csv"),
    ("REST.GET.OBJECT", "demo/cars%20%22v2%22.csv", "GET /acme-data/demo/cars%20%22v2%22.csv HTTP/1.1",
     'demo/cars "v2".csv'),
    # no request-URI: the operation decides
    ("REST.GET.OBJECT", "foo-%2525Y", None, "foo-%Y"),
    ("BATCH.DELETE.OBJECT", "tmp/old+file.csv", None, "tmp/old file.csv"),
    ("S3.EXPIRE.OBJECT", "foo-%2525Y", None, "foo-%25Y"),
    ("REST.GET.OBJECT", "plain/key.csv", None, "plain/key.csv"),
])
def test_object_key_decodes_as_the_record_was_encoded(op, key, uri, expected):
    from replaybook.sources.s3_access import object_key

    assert object_key(op, key, uri) == expected


def test_a_status_logged_as_dash_is_no_outcome_not_allowed(tmp_path):
    """A line whose HTTP status is ``-`` and that names no error code does not say whether the
    request got anything: its outcome is NA (the report's "no outcome logged"), on both paths;
    a ``-`` status beside an error code still takes the code's outcome."""
    p = tmp_path / "log"
    p.write_text("\n".join([_line(status="-"), _line(status="-", err="AccessDenied"),
                            _line(status="-", err="InternalError"), _line(status="200")]) + "\n")
    for load in (load_s3_access, _load_reference):
        out = load([p]).frame
        assert pd.isna(out["outcome"].iloc[0]) and out["outcome"].iloc[1:].tolist() == ["denied", "error", "allowed"]
        assert out["error_code"].iloc[1:3].tolist() == ["AccessDenied", "InternalError"]
