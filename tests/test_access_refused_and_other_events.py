"""What the report and ``replaybook access`` say about a storage request on an object the door
refused, by what storage answered, and how they count requests no door call explains.

The incident is written in the logs' real formats (tests/test_access_scenarios.py's helpers):
the door refuses ``reference/.env``; GCP's audit log, as ``gcloud logging read --format=json``
writes it (one pretty-printed JSON array), holds a read of that object with the door's own
service account that storage denied (``status.code`` 7, PERMISSION_DENIED: the request reached
nothing), a read of another object no call made, and a compute ``setMetadata`` (not storage:
no door call reaches an instance).  Reading the formats' documentation: two storage requests
no door call explains, one other cloud event, and the refused object tried, not reached.
"""

from __future__ import annotations

import json
import re

from test_access_scenarios import GCP_SA, call, gcp_entry, gcp_ts, investigate, write_door

from replaybook.cli import _findings_line, main
from replaybook.report import sections as S

SMAP = {"demo/": "gs://acme-gcs/demo/", "reference/": "gs://acme-gcs/reference/"}
ENV = "gs://acme-gcs/reference/.env"
INSTANCE = "projects/acme-proj/zones/europe-west1-b/instances/ci-1"


def _compute(ts: str, insert_id: str) -> dict:
    """A Compute Engine admin-activity entry (an instance's metadata set by a person)."""
    e = gcp_entry("v1.compute.instances.setMetadata", ts, INSTANCE, insert_id, email="ops-alice@acme.com")
    e["protoPayload"]["serviceName"] = "compute.googleapis.com"
    e["resource"] = {"type": "gce_instance", "labels": {"instance_id": "4711", "project_id": "acme-proj",
                                                        "zone": "europe-west1-b"}}
    e["logName"] = "projects/acme-proj/logs/cloudaudit.googleapis.com%2Factivity"
    return e


def _incident(root, *, env_code: int = 7) -> None:
    write_door(root, {"s": [call(1, 10.0, 10.4, "demo/a.csv"),
                            call(2, 40.0, 40.01, "reference/.env", decision="deny", rule="default-deny")]})
    entries = [
        gcp_entry("storage.objects.get", gcp_ts(10.1), "projects/_/buckets/acme-gcs/objects/demo/a.csv", "g1"),
        gcp_entry("storage.objects.get", gcp_ts(100.0), "projects/_/buckets/acme-gcs/objects/reference/.env", "g2",
                  code=env_code),
        gcp_entry("storage.objects.get", gcp_ts(130.0), "projects/_/buckets/acme-gcs/objects/demo/b.csv", "g3",
                  email="ops-alice@acme.com"),
        _compute(gcp_ts(160.0), "g4"),
    ]
    p = root / "cloud" / "gcp" / "data_access.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(entries, indent=2) + "\n")  # gcloud logging read --format=json


def _text(h: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", h.replace("<wbr/>", ""))).replace("&#x27;", "'")


def test_a_refused_object_storage_denied_is_tried_not_reached(tmp_path):
    """Storage denied the door's service account the object the door had refused: the request
    reached nothing.  It had been reported as "refused at the door, reached in storage anyway"
    in the findings line, the header and the section; it is a finding of its own — tried."""
    _incident(tmp_path)
    inc, res = investigate(tmp_path, storage_map=SMAP, principals={"analyst": GCP_SA})
    un = res.unexplained
    env = un[un["resource_uri"] == ENV].iloc[0]
    assert (env["outcome"], env["refused_session"], env["refused_seq"]) == ("denied", "s", 2)
    reached, tried = S.refused_then_requested(un)
    assert len(reached) == 0 and list(tried["request_id"]) == ["g2"]

    f = S.findings(inc.join.sessions, inc.calls, inc.quarantine, un, join=inc.join)
    assert f["refused_then_reached"] == [] and f["refused_then_tried"] == [ENV]
    words = "denied by storage, so nothing was reached; with the door's own principal"
    assert f["refused_then_tried_words"] == words
    line = _findings_line(f)
    assert f"refused at the door, tried in storage with no door call ({words}): {ENV}" in line
    assert "reached in storage with no door call" not in line

    h = _text(S.header("t", tmp_path / "incident.yaml", unexplained=un, calls=inc.calls, per_call=res.per_call))
    assert (f"1 object the door refused was tried in storage with no door call behind it: {ENV} (storage.objects.get "
            f"by {GCP_SA}, the door's own principal; 60 s after the refusal in door session s #2, rule default-deny; "
            f"after door session s had ended: its last call ended 60 s before; the door allowed no call on this "
            f"object) ({words}); the logs name the credentials used, not who used them") in h
    assert "reached in storage" not in h

    a = S.access_section(res, inc.access)
    assert "Refused at the door, reached in storage with no door call" not in a
    part = a.split("<h3>Refused at the door, tried in storage with no door call</h3>")[1].split("<h3>")[0]
    assert _text(part).startswith(
        f"The door refused the agent 1 object, and 1 storage request tried it anyway, with no door call behind it: "
        f"{words}. A finding all the same")



def test_a_refused_object_storage_allowed_is_still_reached(tmp_path, capsys):
    """The same request allowed by storage: reached anyway, as before, and nothing tried."""
    _incident(tmp_path, env_code=0)
    inc, res = investigate(tmp_path, storage_map=SMAP, principals={"analyst": GCP_SA})
    f = S.findings(inc.join.sessions, inc.calls, inc.quarantine, res.unexplained, join=inc.join)
    assert f["refused_then_reached"] == [ENV] and f["refused_then_tried"] == []
    assert f"refused at the door, reached in storage with no door call: {ENV}" in _findings_line(f)
    h = _text(S.header("t", tmp_path / "incident.yaml", unexplained=res.unexplained, calls=inc.calls,
                       per_call=res.per_call))
    assert (f"1 object the door refused was reached in storage with no door call behind it: {ENV} (storage.objects.get "
            f"by {GCP_SA}, the door's own principal; 60 s after the refusal in door session s #2, rule default-deny; "
            "after door session s had ended: its last call ended 60 s before; the door allowed no call on this "
            "object); the logs name the credentials used, not who used them") in h
    a = S.access_section(res, inc.access)
    assert "Refused at the door, reached in storage with no door call" in a and "tried in storage with no door call" not in a
    assert main(["access", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert ("on this object, 60 s before this request; storage allowed this request: it reached what the door "
            "refused") in out


def test_every_place_counts_the_storage_requests_and_names_the_other_events_apart(tmp_path, capsys):
    """``report``'s findings line and ``replaybook access`` had counted 3 requests no door call
    explains, the header 2: the compute request is no storage request, and the report lists it
    under "Other cloud events".  Now each counts the storage requests, and names the other
    event apart; ``access`` lists it apart, says in what order it lists, and gives each
    request's outcome (the JSON's too)."""
    _incident(tmp_path)
    inc, res = investigate(tmp_path, storage_map=SMAP, principals={"analyst": GCP_SA})
    assert sorted(res.unexplained["request_id"]) == ["g2", "g3", "g4"]
    d = res.to_dict()  # (the library's own summary counts them alike)
    assert [u["request_id"] for u in d["unexplained"]] == ["g2", "g3"]
    assert [u["request_id"] for u in d["unexplained_other"]] == ["g4"]
    f = S.findings(inc.join.sessions, inc.calls, inc.quarantine, res.unexplained, join=inc.join)
    assert (f["unexplained_storage"], f["unexplained_other"]) == (2, 1)
    line = _findings_line(f)
    assert "; 2 storage requests no door call explains; 1 other cloud event (not on storage) no door call explains;" \
        in line
    h = _text(S.header("t", tmp_path / "incident.yaml", unexplained=res.unexplained))
    assert ("2 storage requests no door call explains (1 made with the door's own principal: the cloud identity the "
            "door itself uses to reach storage, as the manifest's principals give it, so the cloud log shows the "
            "door's role, not the agent's)") in h
    a = _text(S.access_section(res, inc.access))
    assert "2 storage requests match no door call, listed below (requests made with the door's own principal " \
           "first, then by time)" in a
    assert "Other cloud events (1 event, not on storage)" in a

    assert main(["access", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    storage = out.split("storage requests no door call explains: ")[1].split("other cloud events")[0]
    assert storage.startswith("2\n(those made with a principal the door's agents use, as the principals say, first; "
                              "then in time order)\n")
    assert [ln.split("  ")[2] for ln in storage.splitlines() if ln.startswith("2026-")] == [
        ENV, "gs://acme-gcs/demo/b.csv"]  # the door's principal first, then by time
    assert "  outcome     denied (code 7)\n" in storage
    assert ("storage denied this request: it reached nothing, but someone tried what the door refused"
            in storage)
    other = out.split("other cloud events no door call explains (not on storage: no door call reaches them): ")[1]
    assert other.startswith("1\n(those made")
    assert f"  write  {INSTANCE}\n" in other.split("door calls and the storage requests")[0]
    assert INSTANCE not in storage

    assert main(["access", str(tmp_path), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [(u["request_id"], u["outcome"]) for u in d["unexplained"]] == [("g2", "denied"), ("g3", "allowed")]
    assert d["unexplained"][0]["refused_call"]["seq"] == 2
    assert [(u["request_id"], u["resource_uri"]) for u in d["unexplained_other"]] == [("g4", INSTANCE)]


def test_a_whole_file_json_logs_records_are_cited_as_records(tmp_path, capsys):
    """A pretty-printed JSON array's rows carry their record's index as ``line_no``: g2 is the
    array's second record and starts on line 44.  ``access`` had said ``data_access.json:2``,
    the report ``line 2``; both say ``record 2`` now, and a JSON Lines log keeps its lines."""
    _incident(tmp_path)
    inc, res = investigate(tmp_path, storage_map=SMAP, principals={"analyst": GCP_SA})
    text = (tmp_path / "cloud" / "gcp" / "data_access.json").read_text()
    assert text.splitlines()[43] == "  {" and '"insertId": "g2"' in text.split("\n  {\n")[2]
    gcp = str(tmp_path / "cloud" / "gcp" / "data_access.json")
    assert inc.access_record_files == {gcp}
    a = _text(S.access_section(res, inc.access, inputs=inc.inputs))
    # (an audit entry carries no request id: the id it is told by is the entry's insertId)
    assert "insert id g2data_access.json record 2" in a and "line 2" not in a and "request id" not in a
    assert main(["access", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "  insert id   g2\n  logged at   cloud/gcp/data_access.json record 2\n" in out
    assert "request id" not in out
    assert "  logged at   cloud/gcp/data_access.json record 4\n" in out  # (the compute event, apart)
    assert ":2\n" not in out
    assert main(["access", "--calls", str(tmp_path / "door"), "--access", str(tmp_path / "cloud"),
                 "--storage-map", "reference/=gs://acme-gcs/reference/", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {u["request_id"]: u["logged_at"].rsplit("/", 1)[1] for u in d["unexplained"]}["g2"] == \
        "data_access.json record 2"

    # the same entries as JSON Lines: lines
    (tmp_path / "cloud" / "gcp" / "data_access.json").unlink()
    from test_access_scenarios import write_gcp

    write_gcp(tmp_path, json.loads(text))
    inc, res = investigate(tmp_path, storage_map=SMAP, principals={"analyst": GCP_SA})
    assert inc.access_record_files == set()
    assert "insert id g2data_access.jsonl line 2" in _text(S.access_section(res, inc.access, inputs=inc.inputs))
    assert main(["access", str(tmp_path)]) == 0
    assert "  logged at   cloud/gcp/data_access.jsonl:2\n" in capsys.readouterr().out
