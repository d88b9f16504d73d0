"""What the report says about the cloud access logs: the files and lines the loaders set aside
(whose requests are in no count), the door calls on objects no storage_map entry covers, and
the citation of each request no door call explains (``cloud_case``: tests/report/conftest.py)."""

from __future__ import annotations

import html
import re

from conftest import CT_CUT, CT_FILE, CT_SALVAGED, S3_LOG

from replaybook.cli import _findings_line
from replaybook.report import sections as S

CUT_NAME = CT_CUT.rsplit("/", 1)[1]
SALVAGED_NAME = CT_SALVAGED.rsplit("/", 1)[1]
S3_NAME = S3_LOG.rsplit("/", 1)[1]

LOSS_WORDS = [
    f"1 CloudTrail delivery file could not be read: the requests it holds are not counted ({CUT_NAME})",
    f"1 CloudTrail delivery file read only in part (2 quarantine entries): the requests in what was set aside are "
    f"not counted ({SALVAGED_NAME}:2, 5)",
    f"1 line of 1 S3 server access log set aside: the requests on it are not counted ({S3_NAME}:3)",
]


def text(h: str) -> str:
    """Markup as the reader sees it (``<wbr/>`` are only break opportunities)."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", h.replace("<wbr/>", ""))).replace("&#x27;", "'")


def test_cloud_log_files_and_lines_set_aside_are_named_beside_the_storage_counts(cloud_case):
    """A CloudTrail delivery file cut in half had shown only as "1 line set aside" in Quarantine,
    while the header and the cloud section counted the storage requests with no caveat.  Each
    kind of cloud log now says what it lost, per file, by quarantine rows: a file nothing was
    read from could not be read; of a file read in part, its set-aside records or lines."""
    q, inputs, res = cloud_case["quarantine"], cloud_case["inputs"], cloud_case["result"]
    losses = S.cloud_log_losses(q, inputs)
    assert [(x["log"], x["file"], x["set_aside"], x["lines"], x["unread"]) for x in losses] == [
        ("aws.cloudtrail", CT_CUT, 1, [1], True), ("aws.cloudtrail", CT_SALVAGED, 2, [2, 5], False),
        ("aws.s3_access", S3_LOG, 1, [3], False)]
    assert S.cloud_loss_words(losses, markup=False) == LOSS_WORDS
    h = S.header("t", "/x/incident.yaml", quarantine=q, inputs=inputs, unexplained=res.unexplained)
    fact = re.search(r"<li>(<strong><a href=\"#quarantine\">Cloud access logs.*?)</li>", h).group(1)
    assert text(fact) == "Cloud access logs the join could not read whole: " + "; ".join(LOSS_WORDS)
    a = S.access_section(res, cloud_case["access"], quarantine=q, inputs=inputs)
    alarm = re.search(r'<p class="rb-alarm"><b>Not in these counts</b>.*?</p>', a).group(0)
    assert text(alarm) == ("Not in these counts: " + "; ".join(LOSS_WORDS) + ". What each line held is in "
                           "Quarantine; a request in it may be one no door call explains.")
    # beside the counts: right after the sentence that states them
    assert a.index("Door calls explain") < a.index("Not in these counts") < a.index("Requests no door call explains")
    f = S.findings(_sessions(), cloud_case["calls"], q,
                   res.unexplained, inputs=inputs)
    assert f["cloud_log_loss_words"] == LOSS_WORDS
    assert [(x["file"], x["unread"]) for x in f["cloud_log_losses"]] == [(CT_CUT, True), (CT_SALVAGED, False),
                                                                        (S3_LOG, False)]
    line = _findings_line(f)
    assert line.endswith("; ".join(LOSS_WORDS)), line
    # without cloud losses, none of it
    door_only = q[q["loader"] == "door"]
    assert S.cloud_log_losses(door_only, inputs) == []
    assert "Cloud access logs" not in S.header("t", "/x/incident.yaml", quarantine=door_only, inputs=inputs,
                                               unexplained=res.unexplained)
    assert "Not in these counts" not in S.access_section(res, cloud_case["access"], quarantine=door_only,
                                                         inputs=inputs)


def _sessions():
    from replaybook.frames import SESSIONS

    return SESSIONS.empty()


def test_door_calls_on_objects_no_storage_map_entry_covers_are_named(cloud_case):
    """A storage_map entry ``customer/`` where the door's objects are ``customers/…`` had made
    the agent's own reads "no door call on this object", read as someone reaching the data
    around the door.  The calls nothing maps are named beside the count, and each such
    request's why names the nearest of them."""
    res, access = cloud_case["result"], cloud_case["access"]
    assert [(r.door_session, r.seq, r.object) for r in res.unmapped_calls.itertuples()] == [
        ("door-20261120T140005-k9", 2, "customers/ACME-4411/profile.json"),
        ("door-20261120T140005-k9", 3, "customers/ACME-4412/profile.json")]  # (seq 4 was refused)
    un = res.unexplained
    assert list(un["request_id"]) == ["HU1S30002EXAMPLE", "HU1S3ROGUEEXAMPLE"]
    head = "no door call on this object, but 2 allowed door calls reach objects no storage_map entry covers"
    assert list(un["why"]) == [
        f"{head} (nearest: session door-20261120T140005-k9 seq 2 on customers/ACME-4411/profile.json, "
        "1.0 s after that call): storage_map may miss this object",
        # 160 s after the nearest: beyond any call's reach, so no map entry would have made it that call's
        f"{head}, none of them within this request's time window (nearest: session door-20261120T140005-k9 seq 3 "
        "on customers/ACME-4412/profile.json, 160 s after that call)"]
    h = S.header("t", "/x/incident.yaml", unexplained=un, unmapped_calls=res.unmapped_calls)
    facts = [text(x) for x in re.findall(r"<li>(.*?)</li>", h)]
    i = facts.index("2 storage requests no door call explains (2 made with the door's own principal: the cloud "
                    "identity the door itself uses to reach storage, as the manifest's principals give it, so the "
                    "cloud log shows the door's role, not the agent's)")
    assert facts[i + 1] == ("2 allowed door calls reach objects no storage_map entry covers: "
                            "customers/ACME-4411/profile.json, customers/ACME-4412/profile.json. A request they made "
                            "is listed as one no door call explains; add their folders to storage_map")
    a = S.access_section(res, access)
    alarm = re.search(r'<p class="rb-alarm"><b>2 allowed door calls.*?</p>', a).group(0)
    assert text(alarm) == (
        "2 allowed door calls reach objects no storage_map entry covers: customers/ACME-4411/profile.json, "
        "customers/ACME-4412/profile.json (session door-20261120T140005-k9 seq 2, session door-20261120T140005-k9 "
        "seq 3). No request can be matched to them, so a request they made is listed below as one no door call "
        "explains, its why naming the nearest of them. Add their folders to storage_map (door object prefix → "
        "storage URI prefix).")
    f = S.findings(_sessions(), cloud_case["calls"], cloud_case["quarantine"], un, unmapped_calls=res.unmapped_calls)
    assert f["unmapped_calls"] == [
        {"door_session": "door-20261120T140005-k9", "seq": 2, "object": "customers/ACME-4411/profile.json"},
        {"door_session": "door-20261120T140005-k9", "seq": 3, "object": "customers/ACME-4412/profile.json"}]
    assert ("2 allowed door calls reach objects no storage_map entry covers: customers/ACME-4411/profile.json, "
            "customers/ACME-4412/profile.json") in _findings_line(f)


def test_the_storage_map_fixed_names_no_unmapped_call(cloud_case):
    from replaybook.access_join import join_access

    smap = {**cloud_case["storage_map"], "customers/": "s3://acme-support-data/customers/"}
    res = join_access(cloud_case["calls"], cloud_case["access"], storage_map=smap)
    assert len(res.unmapped_calls) == 0
    assert list(res.unexplained["why"]) == ["no door call on this object"]  # (the request around the door)
    a = S.access_section(res, cloud_case["access"])
    assert "no storage_map entry covers" not in a
    assert "no storage_map entry covers" not in S.header("t", "/x/incident.yaml", unexplained=res.unexplained,
                                                         unmapped_calls=res.unmapped_calls)


def test_each_request_no_door_call_explains_can_be_cited(cloud_case):
    """The table had no request id, no file or line and no word of the other log holding the
    same request: each row now has them, the file as Inputs shows it (never the
    investigator's own path)."""
    res, access, inputs = cloud_case["result"], cloud_case["access"], cloud_case["inputs"]
    a = S.access_section(res, access, inputs=inputs)
    un = a[a.index("Requests no door call explains"):a.index("What each door call reached")]
    assert "<th>request: source, id, where logged</th>" in un
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", un)[1:]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in rows]
    ct_name = CT_FILE.rsplit("/", 1)[1]
    assert [text(c[1]) for c in cells] == [
        f"aws.cloudtrailrequest id HU1S30002EXAMPLE, eventID ev-2{ct_name} record 2",
        f"aws.cloudtrailrequest id HU1S3ROGUEEXAMPLE, eventID 10ced693-e374-5127-b54e-bb0b2e0daa50{ct_name} record 3"
        f"also in the S3 server access log: {S3_NAME} line 6"]
    assert [c[1].count("<br>") for c in cells] == [2, 3]  # one fact a line
    assert "/home/investigator" not in a
    # two inputs of one name: the path Inputs shows tells them apart
    twin = [*inputs, {"path": "cloud/copy/" + ct_name, "format": "aws.cloudtrail", "records": 3}]
    assert f"{CT_FILE}</code> record 3" in S.access_section(res, access, inputs=twin).replace("<wbr/>", "")
    # without inputs: the file's name
    bare = S.access_section(res, access)
    assert f"{ct_name}</code> record 3" in bare.replace("<wbr/>", "")
    assert "/home/investigator" not in bare
    # the JSON summary cites them too
    d = res.to_dict()["unexplained"]
    assert [(u["request_id"], u["source_file"].rsplit("/", 1)[1], u["line_no"]) for u in d] == [
        ("HU1S30002EXAMPLE", CT_FILE.rsplit("/", 1)[1], 2), ("HU1S3ROGUEEXAMPLE", CT_FILE.rsplit("/", 1)[1], 3)]
    # a request the same log delivered twice says so
    twice = access.iloc[[2]].assign(line_no=7)
    import pandas as pd

    from replaybook.access_join import join_access

    acc2 = pd.concat([access, twice], ignore_index=True)
    res2 = join_access(cloud_case["calls"], acc2, storage_map=cloud_case["storage_map"])
    a2 = S.access_section(res2, acc2, inputs=inputs)
    assert f"delivered again: {ct_name} record 7" in text(a2)
    # the why wraps at its spaces: a break opportunity only inside a word longer than 24 characters
    why = re.findall(r"<td[^>]*>(.*?)</td>", re.findall(r"<tr[^>]*>(.*?)</tr>", un)[1])[-1]
    assert why == html.escape(res.unexplained["why"].iloc[0], quote=True).replace(
        "customers/ACME-4411/profile.json,", "customers/<wbr/>ACME-<wbr/>4411/<wbr/>profile.<wbr/>json,")


def test_a_linked_read_another_principal_made_is_said_up_top_and_a_missing_principals_too(cloud_case):
    """Without principals, a read another principal made at the agent's time is linked to the
    agent's call; its flag had stood only in one cell of the per-call table, the header and the
    findings line saying nothing, and nothing said that principals were missing."""
    import pandas as pd

    links = pd.DataFrame({
        "door_session": ["s-a", "s-a", "s-b"], "call_seq": pd.array([3, 4, 1], dtype="Int64"),
        "resource_uri": ["s3://acme-data/sales/q3.csv", "s3://acme-data/sales/q4.csv", "s3://acme-data/x.csv"],
        "principal": ["arn:aws:sts::1:assumed-role/r/agent", "arn:aws:iam::1:user/mallory", "arn:aws:sts::1:assumed-role/r/b"],
        "source_ip": ["198.51.100.7", "203.0.113.9", "198.51.100.8"],
        "user_agent": ["boto3", "curl/8.4.0", "boto3"],
        "other_principal": pd.array([False, True, pd.NA], dtype="boolean"),
        "other_client": pd.array([False, True, True], dtype="boolean"),
    })
    flagged = S.other_client_links(links)
    assert flagged == [
        {"door_session": "s-a", "seq": 4, "resource_uri": "s3://acme-data/sales/q4.csv",
         "principal": "arn:aws:iam::1:user/mallory", "source_ip": "203.0.113.9", "user_agent": "curl/8.4.0",
         "what": "another principal"},
        {"door_session": "s-b", "seq": 1, "resource_uri": "s3://acme-data/x.csv",
         "principal": "arn:aws:sts::1:assumed-role/r/b", "source_ip": "198.51.100.8", "user_agent": "boto3",
         "what": "another address/client"}]
    words = ("2 storage requests a door call explains came from another principal or client than their door "
             "session's others: s3://acme-data/sales/q4.csv by arn:aws:iam::1:user/mallory from 203.0.113.9 "
             "(curl/8.4.0) (another principal; door session s-a seq 4); s3://acme-data/x.csv by "
             "arn:aws:sts::1:assumed-role/r/b from 198.51.100.8 (boto3) (another address/client; door session s-b "
             "seq 1)")
    assert S.other_client_words(flagged, markup=False) == words
    res = cloud_case["result"]
    h = S.header("t", "/x/incident.yaml", unexplained=res.unexplained, access_links=links, principals_given=False)
    assert words in text(h)
    assert ("No principals in the manifest: storage requests are linked to door calls by object and time alone, so "
            "a read anyone made on the agent's object at the agent's time counts as the agent's") in text(h)
    f = S.findings(_sessions(), cloud_case["calls"], cloud_case["quarantine"], res.unexplained, access_links=links,
                   principals_given=False)
    assert f["other_client_links"] == flagged and f["no_principals"] is True
    line = _findings_line(f)
    assert words in line and S.NO_PRINCIPALS in line
    # principals given, nothing flagged: not a word of either
    quiet = S.header("t", "/x/incident.yaml", unexplained=res.unexplained, access_links=links.iloc[:1],
                     principals_given=True)
    assert "another principal or client" not in quiet and "No principals" not in quiet
    f2 = S.findings(_sessions(), cloud_case["calls"], cloud_case["quarantine"], res.unexplained,
                    access_links=links.iloc[:1], principals_given=True)
    assert f2["other_client_links"] == [] and f2["no_principals"] is False
    # no access logs at all: no principals to miss
    assert S.findings(_sessions(), cloud_case["calls"], cloud_case["quarantine"])["no_principals"] is False


def test_a_records_documents_set_aside_records_are_named_as_records():
    """An Azure {"records": [...]} log is one line: "2 lines of 1 Azure Storage log set aside
    (odd.json:3, 4)" named lines the file does not have."""
    import pandas as pd

    q = pd.DataFrame({"source_file": ["cloud/odd.json", "cloud/odd.json", "cloud/PT1H.json"],
                      "line_no": [3, 4, 7], "kind": ["invalid"] * 3, "loader": ["azure.storage"] * 3,
                      "error": ["record 3: storage log record without a time", "record 4: x", "y"]})
    inputs = [{"path": "cloud/odd.json", "records": 2, "numbered": "record"}, {"path": "cloud/PT1H.json", "records": 9}]
    losses = S.cloud_log_losses(q, inputs)
    assert [(x["lines"], x["records"]) for x in losses] == [([], [3, 4]), ([7], [])]
    assert S.cloud_loss_words(losses[:1], markup=False) == [
        "2 records of 1 Azure Storage log set aside: the requests in them are not counted (odd.json records 3, 4)"]
    assert S.cloud_loss_words(losses, markup=False) == [
        "3 entries of 2 Azure Storage logs set aside: the requests in them are not counted "
        "(odd.json records 3, 4, PT1H.json:7)"]
    assert S.cloud_loss_words(losses[1:], markup=False) == [
        "1 line of 1 Azure Storage log set aside: the requests on it are not counted (PT1H.json:7)"]


def test_the_headers_refused_then_reached_line_says_its_time_is_on_the_doors_clock(tmp_path):
    """The demo with its storage logs' clock set 40 s behind the door's: the header's ".env …
    151 s after the refusal" is on the door's clock, while the section's table shows the time
    the storage log wrote.  The section said so; the header, read first, did not."""
    import shutil

    from conftest import DEMO, render_in_subprocess

    inc = tmp_path / "demo"
    shutil.copytree(DEMO.parent, inc)
    (inc / "incident.yaml").write_text(DEMO.read_text(encoding="utf-8") + "storage_clock_ahead_s: -40\n",
                                       encoding="utf-8")
    page = text(html.unescape(open(render_in_subprocess(inc / "incident.yaml", tmp_path / "out")["html"],
                                   encoding="utf-8").read()))
    head = page[:page.index("What each conversation was asked")]  # (the header: the section's own note is worded apart)
    assert ("1 object the door refused was reached in storage with no door call behind it: "
            "s3://acme-data/reference/.env (GetObject by "
            "arn:aws:sts::123456789012:assumed-role/door-reader/door-analyst, the door's own principal; 151 s after the refusal in door session door-20260913T100005-a1 #5, rule "
            "no-dotenv; after every door session had ended: the last door call ended 151 s before; the door allowed no "
            "call on this object); the logs name the credentials used, not who used them; the times measured from "
            "door calls are on the door's clock: the storage log's clock reads 40 s behind the door's (Clock offset, "
            "below), so a request time the storage log wrote reads 40 s earlier than it was on the door's "
            "clock") in head
