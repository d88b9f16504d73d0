"""``replaybook access``: the door compared with the storage logs from the command line — the
clock offset, the storage requests no door call explains (with where each is logged) and what
each call reached.  The incidents are written in the logs' real formats by the scenario helpers."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from test_access_scenarios import (ACCOUNT, DOOR_ARN, PRINCIPALS, REVIEWER_ARN, SMAP, _two_doors, call, ct_event, sal,
                                   write_cloudtrail, write_door, write_sal)

from replaybook.cli import main


def _manifest(root, **more) -> str:
    m = {"title": "cli", "transcripts": [], "door": ["door/"], "access": ["cloud/"], "storage_map": SMAP,
         "principals": PRINCIPALS, **more}
    (root / "incident.yaml").write_text(json.dumps(m))
    return str(root / "incident.yaml")


def _rogue_read(root) -> None:
    """Two reads through the door, the agent's role reading customers.csv with curl from
    another address at 10:01:10 (no call names it), and that request in the S3 access log too."""
    write_door(root, {"s": [call(1, 10.0, 10.5, "demo/a.csv"), call(2, 25.0, 25.5, "demo/b.csv")]})
    write_cloudtrail(root, "1005Z_A", [
        ct_event("GetObject", 10.3, "demo/a.csv", "R1", out=100),
        ct_event("GetObject", 25.2, "demo/b.csv", "R2", out=100),
        ct_event("GetObject", 70.0, "demo/customers.csv", "R9", out=90210, ip="203.0.113.66", ua="curl/8.4.0")])
    write_sal(root, "2026-09-13-10-10-00-AAAA", [
        sal(70.0, "REST.GET.OBJECT", "demo/customers.csv", "R9", uri="GET /acme-data/demo/customers.csv HTTP/1.1")])


def test_access_prints_the_requests_no_door_call_explains(tmp_path, capsys):
    _rogue_read(tmp_path)
    assert main(["access", _manifest(tmp_path)]) == 0
    out = capsys.readouterr().out
    ct = (f"cloud/AWSLogs/{ACCOUNT}/CloudTrail/eu-west-1/2026/09/13/"
          f"{ACCOUNT}_CloudTrail_eu-west-1_20260913T1005Z_A.json.gz")
    block = (
        "storage requests no door call explains: 1\n"
        "(those made with a principal the door's agents use, as the principals say, first; then in time order)\n\n"
        "2026-09-13T10:01:10.000Z  read  s3://acme-data/demo/customers.csv\n"
        f"  principal   {DOOR_ARN}\n"
        "  from        203.0.113.66, curl/8.4.0\n"
        "  outcome     allowed\n"
        "  why         no door call on this object\n"
        "  request id  R9\n"
        f"  logged at   {ct} record 3 (also cloud/s3-access/acme-data-2026-09-13-10-10-00-AAAA:1)\n")
    assert block in out
    assert out.startswith("clock offset (storage − door, the access join's offset_s): none (")
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("door_session"))
    assert lines[head - 1] == ("door calls and the storage requests they explain (2 links: principal+object+time 2; "
                               "1 row repeating a request another row holds, counted once):")
    assert lines[head + 1].split() == ["s", "1", "2026-09-13T10:00:10.000Z", "allow", "demo/a.csv", "1", "100", "0",
                                       "0", "0"]

    assert main(["access", str(tmp_path), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["offset"] == {"offset_s": 0.0, "given": False, "requests": 0, "unapplied_s": None,
                           "unapplied_requests": 0, "doors": []}
    (u,) = d["unexplained"]
    assert {k: u[k] for k in ("ts", "principal", "action", "resource_uri", "source_ip", "user_agent", "why",
                              "request_id", "logged_at", "also_logged_at")} == {
        "ts": "2026-09-13T10:01:10.000Z", "principal": DOOR_ARN, "action": "read",
        "resource_uri": "s3://acme-data/demo/customers.csv", "source_ip": "203.0.113.66", "user_agent": "curl/8.4.0",
        "why": "no door call on this object", "request_id": "R9", "logged_at": f"{ct} record 3",
        "also_logged_at": ["cloud/s3-access/acme-data-2026-09-13-10-10-00-AAAA:1"]}
    assert [(c["seq"], c["access_count"], c["access_bytes"]) for c in d["calls"]] == [(1, 1, 100), (2, 1, 100)]
    assert (d["links"], d["by_how"], d["duplicates"]) == (2, {"principal+object+time": 2}, 1)


def test_access_takes_explicit_paths(tmp_path, capsys, monkeypatch):
    _rogue_read(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["access", "--calls", "door", "--access", "cloud", "--storage-map", "demo/=s3://acme-data/demo/",
                 "--principal", f"analyst={DOOR_ARN.rsplit('/', 1)[0]}/*", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [u["request_id"] for u in d["unexplained"]] == ["R9"] and d["by_how"] == {"principal+object+time": 2}
    # without --storage-map no call's object maps: every request is unexplained, and says why
    assert main(["access", "--calls", "door", "--access", "cloud", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [u["request_id"] for u in d["unexplained"]] == ["R1", "R2", "R9"] and d["links"] == 0
    # … and the text says that reason once, up top, with the fix — not on each of the requests — and
    # does not claim an order by principal when no principals are given
    assert main(["access", "--calls", "door", "--access", "cloud"]) == 0
    out = capsys.readouterr().out
    assert ("storage requests no door call explains: 3\n(in time order: no principals are given, so the door's own "
            "requests cannot be told from others' — --principal AGENT=PRINCIPAL, or principals: in the manifest)\n"
            "why: no storage_map is given, so no door call's object maps to a storage URI and no request can be "
            "matched to a call — give --storage-map DOOR_PREFIX=STORAGE_URI (or storage_map: in the manifest), e.g. "
            "--storage-map demo/=s3://acme-data/demo/\n") in out
    assert "  why " not in out and "as the principals say" not in out
    # with a storage_map, several requests sharing one reason have it said once
    assert main(["access", "--calls", "door", "--access", "cloud", "--storage-map", "other/=s3://acme-data/other/"]) == 0
    out = capsys.readouterr().out
    assert out.count("why, for all 3: ") == 1 and "  why " not in out


def test_access_bad_usage_and_input_exit_2(tmp_path, capsys):
    _rogue_read(tmp_path)
    m = _manifest(tmp_path)
    assert main(["access", m, "--calls", str(tmp_path / "door")]) == 2
    assert "give an INCIDENT manifest or --calls and --access, not both" in capsys.readouterr().err
    assert main(["access", "--calls", str(tmp_path / "door")]) == 2
    assert "give an INCIDENT manifest, or both --calls and --access" in capsys.readouterr().err
    for opt in ("--calls-format", "--access-format"):
        assert main(["access", m, opt, "cloudtrail"]) == 2
        assert f"{opt} forces a format on the paths given with --" in capsys.readouterr().err
        assert main(["access", m, opt, ""]) == 2  # empty (a shell variable left unset): forced all the same
        assert f"{opt} forces a format on the paths given with --" in capsys.readouterr().err
    assert main(["access", m, "--storage-map", "demo/"]) == 2
    assert "give DOOR_PREFIX=STORAGE_URI" in capsys.readouterr().err
    assert main(["access", m, "--storage-map", "demo/=/srv/demo"]) == 2
    assert "a storage URI starts with s3://, gs:// or az://" in capsys.readouterr().err
    assert main(["access", m, "--storage-clock-ahead", "nan"]) == 2
    assert "--storage-clock-ahead: 'nan': give SECONDS (a number, -1e9 to 1e9) or AGENT=SECONDS" in \
        capsys.readouterr().err
    assert main(["access", m, "--storage-clock-ahead", "nobody=3"]) == 2
    assert "no door call has agent 'nobody'" in capsys.readouterr().err
    (tmp_path / "no-access.yaml").write_text(json.dumps({"title": "t", "transcripts": [], "door": ["door/"]}))
    assert main(["access", str(tmp_path / "no-access.yaml")]) == 2
    assert "the manifest names no cloud access logs (access:)" in capsys.readouterr().err
    (tmp_path / "nan.yaml").write_text("title: t\ntranscripts: []\ndoor: [door/]\naccess: [cloud/]\n"
                                       "storage_clock_ahead_s: .nan\n")
    assert main(["access", str(tmp_path / "nan.yaml")]) == 2
    assert "storage_clock_ahead_s: nan is not a number of seconds" in capsys.readouterr().err
    (tmp_path / "nan2.yaml").write_text("title: t\ntranscripts: []\ndoor: [door/]\naccess: [cloud/]\n"
                                        "storage_clock_ahead_s: {analyst: .nan}\n")
    assert main(["access", str(tmp_path / "nan2.yaml")]) == 2
    assert "storage_clock_ahead_s/analyst: nan is not a number of seconds" in capsys.readouterr().err


def test_access_of_a_manifest_whose_access_logs_hold_nothing_is_no_all_clear(tmp_path, capsys):
    """An access: list of empty files had printed "storage requests no door call explains: 0"
    and exited 0 — all clear — where --access with the same folder exits 2."""
    _rogue_read(tmp_path)
    (tmp_path / "nothing").mkdir()
    (tmp_path / "nothing" / "empty.json").write_bytes(b"")
    (tmp_path / "e.yaml").write_text("title: t\ntranscripts: []\ndoor: [door/]\naccess: [nothing/]\n")
    assert main(["access", str(tmp_path / "e.yaml")]) == 2
    err = capsys.readouterr().err
    assert "  skipped nothing/empty.json: empty file" in err
    assert "no cloud access log was read from the manifest's access: list" in err


@pytest.mark.parametrize("entry,key,shown,line", [
    ("storage_map:\n  demo/: s3://acme-data/demo/\n  2024: s3://acme-data/2024/\n", "storage_map", "2024", 7),
    ("principals:\n  null: arn:aws:iam::1:user/x\n", "principals", "null", 5),  # (the map's line: null is no key)
    ("storage_clock_ahead_s:\n  true: 3\n", "storage_clock_ahead_s", "true", 5),
])
def test_a_manifest_map_key_that_is_not_text_is_bad_input_with_its_line(tmp_path, capsys, entry, key, shown, line):
    """``storage_map: {2024: …}`` (a year-named folder) had crashed the access join (exit 1,
    AttributeError); a principals key 5 or null the same (TypeError)."""
    _rogue_read(tmp_path)
    text = "title: t\ntranscripts: []\ndoor: [door/]\naccess: [cloud/]\n" + entry
    (tmp_path / "k.yaml").write_text(text)
    assert main(["access", str(tmp_path / "k.yaml")]) == 2
    assert (f"k.yaml:{line}: invalid manifest at {key}: the key {shown} is not text; quote it (\"{shown}\": …)"
            in capsys.readouterr().err)


def _two_early_reads(root) -> None:
    """The door's clock 6.5 s ahead of S3's, two reads: each logged 7 s before its call."""
    write_door(root, {"s": [call(1, 20.0, 20.5, "demo/a.csv"), call(2, 35.0, 35.4, "demo/b.csv")]})
    write_sal(root, "2026-09-13-10-10-00-AAAA", [
        sal(13.6, "REST.GET.OBJECT", "demo/a.csv", "K1", uri="GET /acme-data/demo/a.csv HTTP/1.1"),
        sal(28.5, "REST.GET.OBJECT", "demo/b.csv", "K2", uri="GET /acme-data/demo/b.csv HTTP/1.1")])


def test_access_names_an_offset_too_few_requests_measure_and_takes_one_given(tmp_path, capsys):
    _two_early_reads(tmp_path)
    m = _manifest(tmp_path)
    assert main(["access", m]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        "clock offset (storage − door, the access join's offset_s): none taken. 2 requests would line up with their "
        "calls at -6.700 s, too few to measure a clock by (it must line up 3 more than no offset does, and twice as "
        "many); if the storage logs' clock is known to be that far off, give it: --storage-clock-ahead -6.7 "
        "(storage_clock_ahead_s: -6.7 in the manifest)")
    assert "storage requests no door call explains: 2\n" in out

    assert main(["access", m, "--storage-clock-ahead", "-6.5"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == ("clock offset (storage − door, the access join's offset_s): -6.500 s, as given "
                                   "(--storage-clock-ahead); 2 requests line up with their calls at it")
    assert "storage requests no door call explains: 0\n" in out

    assert main(["access", m, "--storage-clock-ahead", "0"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "clock offset (storage − door, the access join's offset_s): 0 s, as given (--storage-clock-ahead): the clocks "
        "are taken to agree (within 2 s)")

    m = _manifest(tmp_path, storage_clock_ahead_s=-6.5)
    assert main(["access", m, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["offset"] == {"offset_s": -6.5, "given": True, "requests": 2, "unapplied_s": None,
                           "unapplied_requests": 0, "doors": []}
    assert d["unexplained"] == [] and [c["access_count"] for c in d["calls"]] == [1, 1]
    assert main(["access", m]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(
        "-6.500 s, as given (storage_clock_ahead_s in the manifest); 2 requests line up with their calls at it")


def test_an_offset_given_beyond_the_search_counts_the_requests_it_lines_up(tmp_path, capsys):
    """The storage clock an hour ahead, given: every request was linked, yet the header said
    "0 requests line up with their calls at it" (the count looked only within --max-offset)."""
    write_door(tmp_path, {"s": [call(1, 20.0, 20.5, "demo/a.csv"), call(2, 35.0, 35.4, "demo/b.csv")]})
    write_sal(tmp_path, "2026-09-13-11-10-00-AAAA", [
        sal(3620.2, "REST.GET.OBJECT", "demo/a.csv", "K1", uri="GET /acme-data/demo/a.csv HTTP/1.1"),
        sal(3635.2, "REST.GET.OBJECT", "demo/b.csv", "K2", uri="GET /acme-data/demo/b.csv HTTP/1.1")])
    m = _manifest(tmp_path, storage_clock_ahead_s=3600)
    assert main(["access", m, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["offset"]["requests"] == 2 and d["unexplained"] == []
    assert [c["access_count"] for c in d["calls"]] == [1, 1]


def test_a_logged_escape_sequence_or_newline_is_written_out_not_sent_to_the_terminal(tmp_path, capsys):
    """A key holding ESC sequences and a newline, a user agent setting the window title: printed
    raw they coloured and cleared the screen, and forged an "outcome denied" line of their own."""
    write_door(tmp_path, {"s": [call(1, 10.0, 10.5, "demo/a.csv")]})
    key = "demo/x\x1b[31mRED\x1b[0m\n  outcome     denied\r.csv"
    write_cloudtrail(tmp_path, "1005Z_A", [
        ct_event("GetObject", 10.3, "demo/a.csv", "R1", out=100),
        ct_event("GetObject", 70.0, key, "R9", out=5, ip="203.0.113.66", ua="ua\x1b]0;pwned\x07")])
    m = _manifest(tmp_path)
    assert main(["access", m]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "\x07" not in out
    assert "demo/x\\x1b[31mRED\\x1b[0m\\n  outcome     denied\\r.csv" in out
    assert "ua\\x1b]0;pwned\\x07" in out
    assert [ln.strip() for ln in out.splitlines() if ln.strip().startswith("outcome")] == ["outcome     allowed"]


def test_a_storage_prefix_or_principal_no_request_has_is_warned_of(tmp_path, capsys):
    """``--storage-map demo/='s3://acme-data/demo/ '`` (a blank at the end) matched nothing, and
    the calls' requests read as unexplained with no word why; a principal pattern likewise."""
    _rogue_read(tmp_path)
    m = _manifest(tmp_path)
    assert main(["access", m, "--storage-map", "demo/=s3://acme-data/demo/ ", "--principal",
                 "analyst= arn:aws:sts::123456789012:assumed-role/door-reader/*"]) == 0
    err = capsys.readouterr().err
    assert ("storage_map 'demo/' → 's3://acme-data/demo/ ' names a storage prefix no request in the access logs has "
            "(a blank at its end?): no call on those objects can be linked") in err
    assert "principals 'analyst': ' arn:aws:sts::123456789012:assumed-role/door-reader/*' matches no principal in " \
           "the access logs (a blank at its end or start?)" in err
    assert main(["access", m]) == 0
    assert "matches no principal" not in capsys.readouterr().err


def test_access_prints_a_calls_request_from_another_client(tmp_path, capsys):
    objs = {1: ("demo/a.csv", 10.0), 2: ("demo/b.csv", 25.0), 3: ("demo/c.csv", 40.0)}
    write_door(tmp_path, {"s": [call(i, t, t + 0.5, o) for i, (o, t) in objs.items()]})
    write_cloudtrail(tmp_path, "1005Z_A", [ct_event("GetObject", t + 0.3, o, f"C{i}", out=100)
                                           for i, (o, t) in objs.items()]
                     + [ct_event("GetObject", 25.4, "demo/b.csv", "X1", out=100, ip="203.0.113.66", ua="curl/8.4.0")])
    assert main(["access", _manifest(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert ("door session s seq 2: 1 of its 2 requests came from another address/client (203.0.113.66, curl/8.4.0) "
            "than most of its door session's requests by that principal in that log (198.51.100.7, "
            "[aws-sdk-python/1.34 door/1.2])\n") in out
    ct = (f"cloud/AWSLogs/{ACCOUNT}/CloudTrail/eu-west-1/2026/09/13/"
          f"{ACCOUNT}_CloudTrail_eu-west-1_20260913T1005Z_A.json.gz")
    assert out.endswith(
        "\nlinked requests by another principal or client than the rest of their door session's, or where it has no "
        "usual one (1):\n"
        "  2026-09-13T10:00:25.000Z  read  s3://acme-data/demo/b.csv  -> session s seq 2: another address/client; "
        f"{DOOR_ARN}, 203.0.113.66, curl/8.4.0; request id X1; {ct} record 4\n")
    assert main(["access", _manifest(tmp_path), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["other_client"], d["other_principal"]) == (1, 0)
    assert [(f["request_id"], f["other_client"], f["other_principal"], f["logged_at"]) for f in d["flagged"]] == [
        ("X1", True, False, f"{ct} record 4")]
    assert [c["other_client_count"] for c in d["calls"]] == [0, 1, 0]


def test_join_points_to_access_when_the_manifest_names_access_logs(tmp_path, capsys):
    _rogue_read(tmp_path)
    m = _manifest(tmp_path)
    assert main(["join", m]) == 0
    assert (f"note: the manifest names cloud access logs; `replaybook access {m}` compares them with the door "
            "(the storage requests no door call explains)") in capsys.readouterr().err


def test_access_names_a_door_on_a_clock_of_its_own_and_takes_one_given_per_agent(tmp_path, capsys):
    """Two reviewer reads 40.2 s off the storage clock: too few to take the reviewer's door
    clock, so it is named with the option that gives it; given (option or manifest mapping),
    both reads are explained."""
    _two_doors(tmp_path, 2)
    m = _manifest(tmp_path, principals={"analyst": DOOR_ARN, "reviewer": REVIEWER_ARN})
    assert main(["access", m]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1] == (
        "  door agent reviewer's door: 2 requests made by its calls would line up at -39.950 s, too few more than at "
        "the common offset to take it; if that door's clock is known to be off, give it: --storage-clock-ahead "
        "reviewer=-40.0 (storage_clock_ahead_s: {reviewer: -40.0} in the manifest)")
    assert "storage requests no door call explains: 2\n" in out

    assert main(["access", m, "--storage-clock-ahead", "reviewer=-40.2"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1] == ("  door agent reviewer's door: -40.200 s, as given (--storage-clock-ahead): "
                                   "2 requests made by its calls line up at it")
    assert "storage requests no door call explains: 0\n" in out

    m = _manifest(tmp_path, principals={"analyst": DOOR_ARN, "reviewer": REVIEWER_ARN},
                  storage_clock_ahead_s={"reviewer": -40.2, "*": 0})
    assert main(["access", m, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["offset"]["given"] is True and d["offset"]["offset_s"] == 0
    assert d["offset"]["doors"] == [{"agent": "reviewer", "offset_s": -40.2, "requests": 2, "given": True,
                                     "applied": True}]
    assert d["unexplained"] == []


def test_load_access_places_a_records_documents_quarantine_by_record(tmp_path, capsys):
    """A {"records": [...]} Azure log is one line: its set-aside records are printed as
    ``file record N``, never ``file:N``, and the time as the file holds it."""
    good = {"time": "2026-09-13T10:00:05Z", "category": "StorageRead", "operationName": "GetBlob",
            "statusCode": 200, "statusText": "Success", "correlationId": "r-1",
            "uri": "https://acmedata.blob.core.windows.net/demo-data/x.csv"}
    p = tmp_path / "odd.json"
    p.write_text(json.dumps({"records": [good, {**good, "time": "yesterday"}]}))
    main(["load", "access", str(p)])
    err = capsys.readouterr().err
    assert f"  {p} record 2: [invalid] time 'yesterday' is not a date-time" in err
    assert f"{p}:2" not in err


def test_an_azure_requesters_upn_is_shown_beside_its_object_id(tmp_path, capsys):
    """A read by a person (OAuth, requester.upn) was shown by its object id alone: the report
    and `access` never named j.doe."""
    import pandas as pd

    from replaybook.sources.azure_storage import load_azure_storage

    oid = "9d8c7b6a-1111-2222-3333-444455556666"
    rec = {"time": "2026-09-13T10:00:05Z", "category": "StorageRead", "operationName": "GetBlob",
           "statusCode": 200, "statusText": "Success", "correlationId": "r-1",
           "uri": "https://acmedata.blob.core.windows.net/demo-data/ledger.csv",
           "identity": {"type": "OAuth", "requester": {"objectId": oid, "upn": "j.doe@bank.example"}}}
    app = {**rec, "correlationId": "r-2", "identity": {"type": "OAuth", "requester": {"appId": "app-1"}}}
    log = tmp_path / "PT1H.json"
    log.write_text(json.dumps(rec) + "\n" + json.dumps(app) + "\n")
    f = load_azure_storage(log).frame.sort_values("request_id")
    assert f["principal"].tolist() == [oid, "app-1"]
    assert f["principal_name"].tolist() == ["j.doe@bank.example", pd.NA]
    door = tmp_path / "door.jsonl"
    door.write_text(json.dumps({"session": "s1", "agent": "analyst", "seq": 1, "ts": "2026-09-13T09:00:00Z",
                                "tool": "read_file", "arguments": {"path": "other.csv"}, "object": "other.csv",
                                "decision": "allow"}) + "\n")
    assert main(["access", "--calls", str(door), "--access", str(log),
                 "--storage-map", "./=az://acmedata/demo-data/"]) == 0
    out = capsys.readouterr().out
    assert f"  principal   {oid} (j.doe@bank.example)\n" in out
    assert "  principal   app-1\n" in out
    assert main(["access", "--calls", str(door), "--access", str(log), "--storage-map", "./=az://acmedata/demo-data/",
                 "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert sorted((u["principal"], u["principal_name"]) for u in d["unexplained"]) == [
        (oid, "j.doe@bank.example"), ("app-1", None)]
    from replaybook.access_join import join_access
    from replaybook.report import sections as S
    from replaybook.sources.door import load_door

    res = join_access(load_door(door).frame, load_azure_storage(log).frame, storage_map={"./": "az://acmedata/demo-data/"})
    assert "j.doe@bank.example" in S._with_principal_names(res.unexplained)["principal"].str.cat()
    assert [u["principal_name"] for u in res.to_dict()["unexplained"]].count("j.doe@bank.example") == 1


DEMO = Path(__file__).resolve().parents[1] / "data" / "demo"
DEMO_CT = "123456789012/CloudTrail/eu-west-1/2026/09/13/123456789012_CloudTrail_eu-west-1_20260913T1005Z_DemoTrailFile0001.json.gz"


def _damaged_demo_trail(tmp_path, damage) -> Path:
    """data/demo's AWSLogs/ copied, its delivery file's bytes changed by ``damage(bytes)``."""
    import shutil

    logs = tmp_path / "AWSLogs"
    shutil.copytree(DEMO / "cloud" / "AWSLogs", logs)
    f = logs / DEMO_CT
    f.write_bytes(damage(f.read_bytes()))
    return logs


def _flip_40_41(b: bytes) -> bytes:
    b = bytearray(b)
    b[40] ^= 0xFF
    b[41] ^= 0xFF
    return bytes(b)


@pytest.mark.parametrize("damage, why", [
    (_flip_40_41, "corrupt gzip stream"),
    (lambda b: gzip.compress(b'{"Records": {"eventTime": "2026-09-13T10:00:00Z"}}'),
     "damaged CloudTrail delivery file: Records is not a list (an object"),
    (lambda b: gzip.compress(b"hello, not JSON\n"), "damaged CloudTrail delivery file: not JSON"),
    (lambda b: b[:300], "truncated gzip stream")])
def test_a_damaged_cloudtrail_delivery_file_is_quarantined_and_its_requests_said_uncounted(tmp_path, capsys, damage,
                                                                                             why):
    """A delivery file whose gzip stream was corrupt from its start (bytes 40–41 flipped), whose
    Records was not a list, or that held no JSON had been sniffed as nothing: listed under "not
    read … not evidence of these kinds", the quarantine empty and "storage requests no door call
    explains: 0" with no caveat.  A file at a CloudTrail delivery path is CloudTrail evidence
    whatever it holds: quarantined as damaged, with why, and `access` says its requests are not
    counted (as a truncated copy always was: exit 0, said beside the count)."""
    logs = _damaged_demo_trail(tmp_path, damage)
    args = ["access", "--calls", str(DEMO / "door"), "--access", str(logs), "--storage-map", "demo/=s3://acme-data/demo/"]
    assert main(args) == 0
    cap = capsys.readouterr()
    name = DEMO_CT.rsplit("/", 1)[1]
    assert ("storage requests no door call explains: 0\nnot in this count: 1 CloudTrail delivery file could not be "
            f"read: the requests it holds are not counted ({name})\n") in cap.out
    assert "not read:" not in cap.err and "no source recognised" not in cap.err
    assert f"{logs / DEMO_CT}: [invalid] " in cap.err and why in cap.err
    assert main([*args, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["not_counted"] == [f"1 CloudTrail delivery file could not be read: the requests it holds are not "
                                f"counted ({name})"] and d["quarantine"] >= 1
    # `load access` reads it as CloudTrail too: quarantined, never "not recognised"
    assert main(["load", "access", str(logs)]) == 0
    err = capsys.readouterr().err
    assert "not recognised" not in err and "not read:" not in err and why in err


def test_a_principal_written_as_an_iam_role_is_told_how_its_requests_are_logged(tmp_path, capsys):
    """``--principal analyst=arn:aws:iam::…:role/door-reader``: the role, where the logs name
    each request by the role session that made it — every one of the agent's requests read as
    another principal's, and the warning only said the entry matched nothing.  It now says what
    to give."""
    _rogue_read(tmp_path)
    m = _manifest(tmp_path)
    assert main(["access", m, "--principal", "analyst=arn:aws:iam::123456789012:role/service-role/door-reader"]) == 0
    err = capsys.readouterr().err
    assert ("principals 'analyst': 'arn:aws:iam::123456789012:role/service-role/door-reader' matches no principal "
            "in the access logs (an IAM role's requests are logged by its role sessions, "
            "'arn:aws:sts::123456789012:assumed-role/door-reader/<session name>': give "
            "'arn:aws:sts::123456789012:assumed-role/door-reader/*'): every request of that agent's reads as another "
            "principal's") in err


def test_the_storage_clock_for_every_other_agent_is_given_as_star(tmp_path, capsys):
    """``storage_clock_ahead_s: {"*": -6.5}`` in the manifest is the common clock; the same on
    the command line, ``--storage-clock-ahead '*=-6.5'``, was refused: "no door call has agent '*'"."""
    _rogue_read(tmp_path)
    m = _manifest(tmp_path)
    assert main(["access", m, "--storage-clock-ahead", "*=-6.5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("clock offset (storage − door, the access join's offset_s): -6.500 s, as given "
                          "(--storage-clock-ahead)")
    assert main(["access", m, "--storage-clock-ahead", "*=-6.5", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["offset"]["offset_s"] == -6.5 and d["offset"]["given"] is True and d["offset"]["doors"] == []


def test_an_unexplained_request_of_no_storage_action_says_the_logs_own_name_for_it(capsys):
    """The demo's AWS Config request had printed as "other  s3://acme-data/", where the README
    and the report say what it is (the bucket's ACL read): an ``other`` action is shown with the
    log's own name for it, and the JSON carries that name too."""
    demo = DEMO / "incident.yaml"
    assert main(["access", str(demo)]) == 0
    out = capsys.readouterr().out
    assert "\n2026-09-13T10:04:00.000Z  other (GetBucketAcl)  s3://acme-data/\n  principal   config.amazonaws.com\n" in out
    assert "\n2026-09-13T10:03:12.000Z  read  s3://acme-data/reference/.env\n" in out
    assert main(["access", str(demo), "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [(u["action"], u["action_raw"]) for u in got["unexplained"]] == [("read", "GetObject"),
                                                                            ("other", "GetBucketAcl")]


#: CloudTrail's ids of the two events below that carry no ``requestID``
EVENT_ROGUE = "6d2f5a0e-1c4b-4e8a-9f3d-2b7c8e1a0f95"
EVENT_OTHER_CLIENT = "b41e7c93-05d2-4a6f-8e1b-7c3a9d2f6e08"


def test_an_event_told_by_its_event_id_is_labelled_event_id(tmp_path, capsys):
    """A CloudTrail event without a ``requestID`` is told by its ``eventID``; ``access`` printed
    that id as "request id", a value no request carries.  It says "event id" where the id is
    the event's (both lists, and ``request_id_kind`` in the JSON), "request id" where it is one."""
    objs = {1: ("demo/a.csv", 10.0), 2: ("demo/b.csv", 25.0), 3: ("demo/c.csv", 40.0)}
    write_door(tmp_path, {"s": [call(i, t, t + 0.5, o) for i, (o, t) in objs.items()]})
    rogue = ct_event("GetObject", 70.0, "demo/customers.csv", "-", event_id=EVENT_ROGUE, out=90210,
                     ip="203.0.113.66", ua="curl/8.4.0")
    other = ct_event("GetObject", 25.4, "demo/b.csv", "-", event_id=EVENT_OTHER_CLIENT, out=100,
                     ip="203.0.113.66", ua="curl/8.4.0")
    del rogue["requestID"], other["requestID"]
    write_cloudtrail(tmp_path, "1005Z_A", [ct_event("GetObject", t + 0.3, o, f"C{i}", out=100)
                                           for i, (o, t) in objs.items()] + [other, rogue]
                     + [ct_event("GetObject", 80.0, "demo/orders.csv", "R10", out=7, ip="203.0.113.66")])
    ct = (f"cloud/AWSLogs/{ACCOUNT}/CloudTrail/eu-west-1/2026/09/13/"
          f"{ACCOUNT}_CloudTrail_eu-west-1_20260913T1005Z_A.json.gz")
    # written as AWS writes it (no blank between records): its records are read on first use
    f = tmp_path / ct
    f.write_bytes(gzip.compress(json.dumps(json.loads(gzip.decompress(f.read_bytes())), separators=(",", ":"))
                                .encode()))
    m = _manifest(tmp_path)
    assert main(["access", m]) == 0
    out = capsys.readouterr().out
    assert ("2026-09-13T10:01:10.000Z  read  s3://acme-data/demo/customers.csv\n"
            f"  principal   {DOOR_ARN}\n"
            "  from        203.0.113.66, curl/8.4.0\n"
            "  outcome     allowed\n"
            f"  event id    {EVENT_ROGUE}\n"
            f"  logged at   {ct} record 5\n") in out
    assert ("2026-09-13T10:01:20.000Z  read  s3://acme-data/demo/orders.csv\n"
            f"  principal   {DOOR_ARN}\n"
            "  from        203.0.113.66, [aws-sdk-python/1.34 door/1.2]\n"
            "  outcome     allowed\n"
            "  request id  R10\n") in out
    assert out.endswith(
        "  2026-09-13T10:00:25.000Z  read  s3://acme-data/demo/b.csv  -> session s seq 2: another address/client; "
        f"{DOOR_ARN}, 203.0.113.66, curl/8.4.0; event id {EVENT_OTHER_CLIENT}; {ct} record 4\n")
    assert f"request id {EVENT_ROGUE}" not in out and f"request id {EVENT_OTHER_CLIENT}" not in out
    assert main(["access", m, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [(u["request_id"], u["request_id_kind"]) for u in d["unexplained"]] == [
        (EVENT_ROGUE, "event id"), ("R10", "request id")]
    assert [(f["request_id"], f["request_id_kind"]) for f in d["flagged"]] == [(EVENT_OTHER_CLIENT, "event id")]

    # the report cites it the same way, and says the id once (it had "request id X, eventID X")
    import re

    from replaybook.incident import Incident
    from replaybook.report import sections as S

    inc = Incident.load(m)
    res = inc.access_join
    assert type(inc.access["raw"].iloc[0]).__name__ == "SliceRecord"  # (a mapping, parsed on first use)
    assert [(u["request_id"], u["request_id_kind"]) for u in res.to_dict()["unexplained"]] == [
        (EVENT_ROGUE, "event id"), ("R10", "request id")]
    page = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", S.access_section(res, inc.access).replace("<wbr/>", "")))
    ct_name = ct.rsplit("/", 1)[1]
    assert f"aws.cloudtrailevent id {EVENT_ROGUE}{ct_name} record 5" in page
    assert f"aws.cloudtrailrequest id R10, eventID ev-R10{ct_name} record 6" in page
    assert f"request id {EVENT_ROGUE}" not in page and f"eventID {EVENT_ROGUE}" not in page
