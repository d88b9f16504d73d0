"""The shortcuts of the S3 access-log fast path (:mod:`replaybook.sources._s3_fast`) and the
lazily parsed ``raw`` record (:class:`replaybook.sources.s3_access.LogLine`): each shortcut's
guard is hit here, and the result compared with the reference path (per-line reading, the
reference functions) — every test fails if its guard is removed."""

from __future__ import annotations

import gc
import hashlib
import pickle
import random

import numpy as np
import pandas as pd
import pytest

from replaybook.errors import InputError
from replaybook.sources import _cloud, _s3_fast, s3_access
from replaybook.sources._record import SourceRecord
from test_cloud_fast_paths import _line  # the log-line builder the equivalence tests use




def same_s3(paths) -> None:
    """The fast loader's result (frame, quarantine, inputs, raw types) is the reference's."""
    try:
        b = s3_access._load_reference(paths)
    except Exception as exc:  # noqa: BLE001 - the fast path must fail the same way
        with pytest.raises(type(exc)):
            s3_access.load_s3_access(paths)
        return
    a = s3_access.load_s3_access(paths)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    pd.testing.assert_frame_equal(a.quarantine, b.quarantine)
    assert a.inputs == b.inputs
    for x, y in zip(a.frame["raw"], b.frame["raw"]):
        assert x == y and type(x) is type(y)


def _file(tmp_path, name, lines, end="\n"):
    p = tmp_path / name
    p.write_bytes((end.join(lines) + end).encode())
    return p


# -- raw: a LogLine of the line's bytes, parsed on first use ---------------------------------

def test_raw_is_a_lazy_log_line_of_the_exact_line_on_both_paths(tmp_path):
    lines = [_line(i) for i in range(3)]
    lines[1] = _line(1, uri='"GET /acme-data/a?X-Amz-Signature=abc HTTP/1.1"')
    p = _file(tmp_path, "log", lines, end="\r\n")
    fast = s3_access.load_s3_access(p).frame
    ref = s3_access._load_reference(p).frame
    for f, r, line in zip(fast["raw"], ref["raw"], lines):
        assert type(f) is type(r) is s3_access.LogLine and isinstance(f, SourceRecord)
        assert f.text == r.text == line.encode()  # without the CR of the line end
        assert f == r == s3_access._record_of(line)
    rec = fast["raw"][1]
    assert rec["request_uri"] == "GET /acme-data/a?X-Amz-Signature=REDACTED HTTP/1.1"
    assert b"abc" in rec.text  # the source text is kept as it was; the parsed value is redacted
    assert type(pickle.loads(pickle.dumps(rec))) is dict


def test_log_line_parses_once_and_only_when_used(monkeypatch):
    calls = []
    real = s3_access.parse_line
    monkeypatch.setattr(s3_access, "parse_line", lambda t: calls.append(t) or real(t))
    recs = s3_access.LogLine.many([_line(1).encode(), _line(2).encode()])
    assert calls == []
    assert recs[0]["request_id"] == "REQ1" and recs[0].get("bucket") == "acme-data"
    assert len(recs[0]) == len(s3_access.FIELDS) - 1 and "extra_fields" not in recs[0]  # 9 tail fields
    assert len(calls) == 1
    assert dict(recs[1]) == s3_access._record_of(_line(2)) and len(calls) == 3
    with pytest.raises(ValueError):
        s3_access.LogLine(b"not a log line").value


def test_a_quarantined_bad_time_keeps_its_record_as_json_on_both_paths(tmp_path):
    p = _file(tmp_path, "log", [_line(0), _line(1, time="13/Foo/2026:10:00:21 +0000"), _line(2)])
    for load in (s3_access.load_s3_access, s3_access._load_reference):
        q = load(p).quarantine
        assert q["line_no"].tolist() == [2]
        assert str(q["raw"][0]).startswith('{"bucket_owner":"79a59df9')  # the dict as JSON, not a repr
    same_s3(p)


# -- lines and files the fast pattern does not take ------------------------------------------

@pytest.mark.parametrize("tail", ["- H  SigV4 C", "- H SigV4 C ", "- H SigV4 C  ", "  - H"])
def test_tails_with_empty_tokens_are_read_per_line(tmp_path, tail):
    p = _file(tmp_path, "log", [_line(0), _line(1, tail=tail), _line(2)])
    q: list = []
    block = _s3_fast._read_fast(p, p.read_bytes(), {}, q)
    assert block["fast_no"] == [1, 3]
    assert [r["line_no"] for r in block["rows"]] + [r["line_no"] for r in q] == [2]  # read per line
    same_s3(p)


def test_double_space_inside_a_quoted_field_stays_fast(tmp_path):
    p = _file(tmp_path, "log", [_line(0), _line(1, ua='"a  b "'), _line(2)])
    block = _s3_fast._read_fast(p, p.read_bytes(), {}, [])
    assert block["fast_no"] is None and not block["rows"]
    same_s3(p)


@pytest.mark.parametrize("field", [
    {"op": '"REST.GET.OBJECT"'}, {"key": '"k"'}, {"key": '"-"'}, {"op": '"-"', "key": "-"},
    {"key": 'a"b'}, {"op": "REST.GET.BUCKET", "key": "-", "uri": '"-"'},
])
def test_quotes_in_operation_or_key_are_unquoted_as_the_reference_does(tmp_path, field):
    p = _file(tmp_path, "log", [_line(0), _line(1, **field), _line(2)])
    assert _s3_fast._read_fast(p, p.read_bytes(), {}, []) is not None  # taken the fast way
    same_s3(p)


@pytest.mark.parametrize("field", [{"requester": '"x"'}, {"err": '"E"'}, {"bucket": '"b"'},
                                   {"tail": '- "H" SigV4'}, {"owner": 'o"'}])
def test_a_quote_in_another_field_sends_the_file_to_the_reference(tmp_path, field):
    p = _file(tmp_path, "log", [_line(0), _line(1, **field), _line(2)])
    assert _s3_fast._read_fast(p, p.read_bytes(), {}, []) is None
    same_s3(p)


def test_extra_fields_are_counted_on_fast_and_per_line_lines(tmp_path):
    extra = "- H SigV4 C AuthHeader h TLSv1.3 - Yes eu-west-1 NEW1"
    p = _file(tmp_path, "log", [_line(0, tail=extra), _line(1), _line(2, tail=extra + " "), "junk"])
    info: dict = {}
    block = _s3_fast._read_fast(p, p.read_bytes(), info, [])
    assert block["fast_no"] == [1, 2] and [r["line_no"] for r in block["rows"]] == [3]
    assert info["extra_fields"] == 2
    same_s3(p)


# -- derived values once per distinct value ---------------------------------------------------

REQUESTERS = [
    "-", "svc:logging.s3.amazonaws.com", "a" * 64, "A" * 64, "arn:aws:iam::123456789012:root",
    "arn:aws:iam::123456789012:user/alice", "arn:aws:sts::123456789012:federated-user/bob",
    "arn:aws:sts::123456789012:assumed-role/reader/sess-1",
    "arn:aws:sts::123456789012:assumed-role/reader/a/b",  # session with a '/'
    "arn:aws:sts::123456789012:assumed-role/reader/",  # no session
    "arn:aws:sts::123456789012:assumed-role//s",  # no role
    "arn:aws:sts::123456789012:assumed-role/r",
    "arn:aws-cn:sts::1:assumed-role/r/s", "arn:aws-us-gov:sts:::assumed-role/r/s",
    "arn:aws:sts::12a:assumed-role/r/s", "xarn:aws:sts::1:assumed-role/r/s",
    "arn:aws:iam::1:user/x:assumed-role/r/s", "svc:x/assumed-role/r/s",
    "arn:aws:sts::1:assumed-role/r/s:root", "arn:aws:sts::1:assumed-role/r/s/:user/",
    "arn:aws:sts::1:assumed-role/ro\u00e9le/s", "/", "//", "a/b",
]


def test_requester_values_equal_the_reference_functions():
    principal, ptype, rsn = _s3_fast._requesters(REQUESTERS)
    for r, p, t, s in zip(REQUESTERS, principal, ptype, rsn):
        ref = None if r == "-" else r
        assert (p, t, s) == (ref, s3_access._principal_type(ref), _cloud.role_session_name(ref)), r


@pytest.mark.parametrize("requester", REQUESTERS)
def test_requesters_through_the_loader(tmp_path, requester):
    # (a non-ASCII requester sends its whole file the reference way: compared all the same)
    same_s3(_file(tmp_path, "log", [_line(0), _line(1, requester=requester), _line(2)]))


def test_several_buckets_and_list_prefixes_in_one_file(tmp_path):
    lines = [_line(i, bucket=b, op=op, key=key, uri=uri)
             for i, (b, op, key, uri) in enumerate([
                 ("b1", "REST.GET.OBJECT", "k%20x+y", '"GET /b1/k HTTP/1.1"'),
                 ("b2", "REST.GET.OBJECT", "k%20x+y", '"GET /b2/k HTTP/1.1"'),
                 ("b1", "REST.GET.BUCKET", "-", '"GET /b1?prefix=p%2F&sig=1 HTTP/1.1"'),
                 ("-", "REST.GET.BUCKET", "-", '"GET /b1?prefix=p%2F HTTP/1.1"'),
                 ("b2", "REST.GET.BUCKET", "-", '"GET /b2?prefix=p%2F HTTP/1.1"'),
                 ("b2", "REST.PUT.OBJECT", "-", "-")])]
    p = _file(tmp_path, "log", lines)
    res = s3_access.load_s3_access(p).frame
    assert res["resource_uri"].tolist() == ["s3://b1/k x y", "s3://b2/k x y", "s3://b1/p/", pd.NA,
                                            "s3://b2/p/", "s3://b2/"]
    same_s3(p)


def test_bytes_past_18_digits_and_dashes(tmp_path):
    p = _file(tmp_path, "log", [_line(0, sent="-"), _line(1, sent="1" * 19), _line(2, sent=str(2**53 + 1)),
                                _line(3, sent="0" * 25 + "7"), _line(4, sent="12")])
    # (26 digits that are 7 written with leading zeros: 7, not a silent NA)
    assert s3_access.load_s3_access(p).frame["bytes"].tolist() == [0, 1111111111111111111, 2**53 + 1, 7, 12]
    same_s3(p)
    q = _file(tmp_path, "big", [_line(0, sent=str(2**53 + 1)), _line(1, sent="5")])
    same_s3(q)


# -- the frame's order ----------------------------------------------------------------------

def _lexsort(ts_u, t_codes, fcode, line_no, blk):
    order = np.lexsort((blk, line_no, fcode, ts_u[t_codes]))
    return order


@pytest.mark.parametrize("seed", range(6))
def test_packed_sort_key_is_the_reference_order(seed):
    rnd = np.random.default_rng(seed)
    n = 500
    ts_u = rnd.integers(-5, 5, size=7) * (10**18 if seed % 2 else 1)
    t_codes = rnd.integers(0, len(ts_u), size=n)
    blk = np.sort(rnd.integers(0, 4, size=n))
    fcode = np.array([3, 1, 3, 0])[blk]  # one file given twice (blocks 0 and 2)
    line_no = np.concatenate([np.arange(1, (blk == b).sum() + 1) for b in range(4)])
    if seed >= 4:
        line_no = line_no * 2**58  # too wide to pack: np.lexsort
    got = _s3_fast._sort_order(ts_u, t_codes, fcode, line_no, blk, True)
    want = np.lexsort((blk, line_no, fcode, ts_u[t_codes]))
    assert (np.arange(n) if got is None else got).tolist() == want.tolist()
    # rows not in (block, line) order (reference rows after the fast ones): ties by block
    perm = rnd.permutation(n)
    t_codes, fcode, line_no, blk = t_codes[perm], fcode[perm], line_no[perm], blk[perm]
    got = _s3_fast._sort_order(ts_u, t_codes, fcode, line_no, blk, False)
    want = np.lexsort((blk, line_no, fcode, ts_u[t_codes]))
    assert (np.arange(n) if got is None else got).tolist() == want.tolist()


def test_rows_already_in_order_need_no_sort():
    n = 50
    assert _s3_fast._sort_order(np.arange(5), np.repeat(np.arange(5), 10), np.zeros(n, dtype=np.int64),
                                np.arange(1, n + 1), np.zeros(n, dtype=np.int64), True) is None


def test_same_file_twice_and_out_of_order_times(tmp_path):
    a = _file(tmp_path, "a", [_line(i, time=f"13/Sep/2026:10:00:{59 - i:02d} +0000") for i in range(30)])
    b = _file(tmp_path, "b", [_line(i, time=f"13/Sep/2026:10:00:{i:02d} +0130") for i in range(30)] + ["junk"])
    same_s3([a, b, a])
    same_s3([b, a])


# -- reading --------------------------------------------------------------------------------

def test_inputs_hash_the_bytes_on_disk_and_a_missing_file_fails_in_turn(tmp_path):
    a = _file(tmp_path, "a", [_line(0)])
    res = s3_access.load_s3_access([a, a])  # a file named twice is read once
    assert [i["sha256"] for i in res.inputs] == [hashlib.sha256(a.read_bytes()).hexdigest()]
    assert len(res.frame) == 1
    with pytest.raises(InputError):
        s3_access.load_s3_access([a, tmp_path / "missing"])
    assert gc.isenabled()


def test_garbage_collector_state_is_restored():
    gc.disable()
    try:
        s3_access.load_s3_access([])
        assert not gc.isenabled()
    finally:
        gc.enable()
    s3_access.load_s3_access([])
    assert gc.isenabled()


def test_random_mixed_files_equal_the_reference(tmp_path):
    rnd = random.Random(7)
    for k in range(6):
        lines = []
        for i in range(60):
            kw = {}
            if rnd.random() < 0.3:
                kw["requester"] = rnd.choice(REQUESTERS[:-5])
            if rnd.random() < 0.2:
                kw["ua"] = rnd.choice(['"-"', "-", '"x y"', '"a  b"'])
            if rnd.random() < 0.2:
                kw["time"] = rnd.choice(["13/Sep/2026:10:00:21 +0000", "1/sep/2026:10:00:21.5 -0130", "x"])
            if rnd.random() < 0.1:
                kw["tail"] = rnd.choice(["", "- H", "- H  x", "a b c d e f g h i j k l"])
            lines.append(_line(rnd.randrange(1000), **kw))
        _file(tmp_path, f"f{k}", lines)
    same_s3(tmp_path)


def test_requesters_repeated_and_mostly_distinct(tmp_path):
    # one role session per request, anonymous and other requesters between (repeated)
    rnd = random.Random(3)
    reqs = [rnd.choice([f"arn:aws:sts::1:assumed-role/r{i % 3}/s-{i}", "-", "-", REQUESTERS[i % len(REQUESTERS[:-5])]])
            for i in range(300)]
    principal, ptype, rsn = _s3_fast._requesters(reqs)
    assert principal == [None if r == "-" else r for r in reqs]
    assert ptype == [s3_access._principal_type(p) for p in principal]
    assert rsn == [_cloud.role_session_name(p) for p in principal]
    same_s3(_file(tmp_path, "log", [_line(i, requester=r) for i, r in enumerate(reqs)]))


def test_tail_spaces_counts_each_tail_and_finds_double_or_trailing_spaces():
    from replaybook.sources._s3_fast import _tail_spaces

    counts, odd = _tail_spaces(("", " a b", " c", ""))
    assert counts.tolist() == [0, 2, 1, 0] and odd is False
    assert _tail_spaces((" a  b", " c"))[1] is True        # two spaces in a row
    assert _tail_spaces((" a ", " c"))[1] is True          # a tail ending with a space
    assert _tail_spaces((" c", " a "))[1] is True          # the last tail too
    assert _tail_spaces(("", ""))[0].tolist() == [0, 0] and _tail_spaces(("",))[1] is False
    # a newline between tails is no space: " a \n b" would be two tails " a " (odd) and " b"
    assert _tail_spaces((" x", " y z"))[0].tolist() == [1, 2] and _tail_spaces((" x", " y z"))[1] is False


def test_buckets_are_coded_per_file_and_a_file_naming_two_buckets_still_reads_right(tmp_path):
    one = _file(tmp_path, "a.log", [_line(i, bucket="b-one") for i in range(3)])
    two = _file(tmp_path, "b.log", [_line(0, bucket="b-two"), _line(1, bucket="b-one"), _line(2, bucket="b-two")])
    same_s3(tmp_path)
    f = s3_access.load_s3_access([one, two]).frame
    assert sorted(f["resource_uri"].str.split("/").str[2]) == ["b-one"] * 4 + ["b-two"] * 2
    same_s3(one)
