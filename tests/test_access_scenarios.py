"""The door call ↔ storage request join on small incidents whose answer is known.

Each scenario writes a door log and the cloud's own logs in their real formats into a fresh
folder, names them in an ``incident.yaml`` (``storage_map``, ``principals``), loads the
incident as ``replaybook report`` does and checks the exact pairing (which request each call
explains) and the exact set of requests no door call explains.  The expected answer is written
down by reasoning from the formats' documentation, before looking at what the product says:

* CloudTrail (User Guide, "CloudTrail record contents"): ``eventTime`` is when the request
  completed, to the second; ``eventID`` identifies an event, and an event may be delivered more
  than once, in the same or another delivery file; ``requestID`` is the S3 request id
  (``x-amz-request-id``), the same id the S3 server access log gives the request.
* S3 server access logs (User Guide, "Amazon S3 server access log format"; "best effort"
  delivery): the time is when S3 received the request, to the second; records may be late,
  missing, or delivered twice; the ``key`` is URL-encoded — twice for most operations, once for
  the lifecycle and batch-delete records (as operators of large fleets report: a key
  ``a b`` is logged ``a%2520b`` by ``REST.GET.OBJECT``); the ``Request-URI`` holds the path
  as the client sent it (percent-encoded once).
* GCP Cloud Audit Logs: ``timestamp`` to the nanosecond; ``resourceName``
  ``projects/_/buckets/<bucket>/objects/<object name>`` with the name as it is; a listing is
  logged at bucket level; ``authenticationInfo`` may be absent.
* Azure Storage resource logs: ``time`` is when storage received the request (100 ns); ``uri``
  is the request URL (percent-encoded), ``objectKey`` ``/<account>/<container>/<blob>``
  URL-encoded; SAS and account-key requests carry no identity.

The door logs the object a call names normalised (``posixpath.normpath``): a listing of
``demo/`` is logged as ``demo`` and one of the data root as ``.``.
"""

from __future__ import annotations

import gzip
import json
import math
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import quote

import pandas as pd
import pytest

from replaybook.incident import Incident

BASE = datetime(2026, 9, 13, 10, 0, 0, tzinfo=timezone.utc)
ACCOUNT = "123456789012"
ROLE = f"arn:aws:sts::{ACCOUNT}:assumed-role/door-reader"
DOOR_ARN = f"{ROLE}/door-analyst"
PRINCIPALS = {"analyst": f"{ROLE}/*"}
SMAP = {"demo/": "s3://acme-data/demo/", "reference/": "s3://acme-data/reference/"}
OWNER = "79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be"
GCP_SA = "door-reader@acme-proj.iam.gserviceaccount.com"
AZ_OID = "6d2c1a8e-0f3b-4c55-9e7a-2b1f0c9d8e7a"


# -- time -------------------------------------------------------------------------------------

def at(s: float) -> datetime:
    """``BASE`` + ``s`` seconds (microsecond precision)."""
    return BASE + timedelta(microseconds=round(s * 1e6))


def door_ts(s: float) -> str:
    return at(s).strftime("%Y-%m-%dT%H:%M:%S.") + f"{at(s).microsecond // 1000:03d}Z"


def whole(s: float) -> str:
    """CloudTrail ``eventTime``: the second the request completed in (the fraction dropped)."""
    return (BASE + timedelta(seconds=math.floor(s))).strftime("%Y-%m-%dT%H:%M:%SZ")


def sal_time(s: float) -> str:
    return (BASE + timedelta(seconds=math.floor(s))).strftime("%d/%b/%Y:%H:%M:%S +0000")


def azure_time(s: float) -> str:
    t = at(s)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond:06d}0Z"


# -- the door ---------------------------------------------------------------------------------

def call(seq: int, start: float, end: float | None, obj: str | None, *, tool: str = "read_file",
         decision: str = "allow", rule: str = "allow-demo", **extra) -> dict:
    rec = {"ts": door_ts(start), "seq": seq, "tool": tool, "arguments": {"path": obj}, "object": obj,
           "decision": decision, "rule": rule}
    if end is not None:
        rec["ts_end"] = door_ts(end)
    rec.update(extra)
    return rec


def write_door(root: Path, sessions: dict[str, list[dict]], agent: str = "analyst") -> None:
    for session, calls in sessions.items():
        p = root / "door" / agent / f"{session}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(json.dumps({**c, "session": session, "agent": agent}) + "\n" for c in calls))


# -- CloudTrail -------------------------------------------------------------------------------

def ct_event(name: str, done: float, key: str | None, request_id: str, *, bucket: str = "acme-data",
             arn: str | None = DOOR_ARN, event_id: str | None = None, out: int | None = None,
             error: str | None = None, prefix: str | None = None, params: dict | None = None,
             ip: str = "198.51.100.7", ua: str = "[aws-sdk-python/1.34 door/1.2]") -> dict:
    """One S3 data event as a delivery file holds it (AWS's own example's fields)."""
    ui = None
    if arn is not None:
        role, session = arn.rsplit("/", 1)
        ui = {"type": "AssumedRole", "principalId": f"AROAEXAMPLEID:{session}", "arn": arn,
              "accountId": ACCOUNT, "accessKeyId": "ASIAEXAMPLEKEY",
              "sessionContext": {"sessionIssuer": {"type": "Role", "principalId": "AROAEXAMPLEID",
                                                   "arn": f"arn:aws:iam::{ACCOUNT}:role/{role.rsplit('/', 1)[1]}",
                                                   "accountId": ACCOUNT, "userName": role.rsplit("/", 1)[1]},
                                 "attributes": {"creationDate": "2026-09-13T09:58:00Z", "mfaAuthenticated": "false"}}}
    rp = {"bucketName": bucket, "Host": f"{bucket}.s3.eu-west-1.amazonaws.com"}
    if key is not None:
        rp["key"] = key
    if prefix is not None:
        rp.update({"list-type": "2", "prefix": prefix, "delimiter": "/"})
    rp.update(params or {})
    resources = [{"type": "AWS::S3::Object", "ARNPrefix" if key is None else "ARN":
                  f"arn:aws:s3:::{bucket}/{key if key is not None else prefix or ''}"},
                 {"accountId": ACCOUNT, "type": "AWS::S3::Bucket", "ARN": f"arn:aws:s3:::{bucket}"}]
    ev = {"eventVersion": "1.10", "eventTime": whole(done), "eventSource": "s3.amazonaws.com",
          "eventName": name, "awsRegion": "eu-west-1", "sourceIPAddress": ip,
          "userAgent": ua, "requestParameters": rp, "responseElements": None,
          "additionalEventData": {"SignatureVersion": "SigV4", "AuthenticationMethod": "AuthHeader",
                                  "bytesTransferredIn": 0, "bytesTransferredOut": out if out is not None else 0},
          "requestID": request_id, "eventID": event_id or f"ev-{request_id}", "readOnly": True,
          "resources": resources, "eventType": "AwsApiCall", "managementEvent": False,
          "recipientAccountId": ACCOUNT, "eventCategory": "Data"}
    if ui is not None:
        ev["userIdentity"] = ui
    if error:
        ev["errorCode"], ev["errorMessage"] = error, "Access Denied"
    return ev


def write_cloudtrail(root: Path, name: str, events: list[dict]) -> None:
    """A gzipped delivery file in an ``AWSLogs/`` tree."""
    p = root / "cloud" / "AWSLogs" / ACCOUNT / "CloudTrail" / "eu-west-1" / "2026" / "09" / "13" / \
        f"{ACCOUNT}_CloudTrail_eu-west-1_20260913T{name}.json.gz"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(gzip.compress(json.dumps({"Records": events}).encode()))


# -- S3 server access logs ----------------------------------------------------------------------

def sal(received: float, op: str, key: str, request_id: str, *, uri: str | None = None,
        requester: str = DOOR_ARN, status: int = 200, error: str = "-", sent: int | None = 2048,
        bucket: str = "acme-data") -> str:
    """One server access log record; ``key`` and ``uri`` as S3 writes them (already encoded)."""
    uri_field = "-" if uri is None else f'"{uri}"'
    return (f"{OWNER} {bucket} [{sal_time(received)}] 198.51.100.7 {requester} {request_id} {op} {key} "
            f"{uri_field} {status} {error} {'-' if sent is None else sent} 4096 12 10 \"-\" \"door/1.2\" - "
            f"aGlkCg== SigV4 ECDHE-RSA-AES128-GCM-SHA256 AuthHeader {bucket}.s3.eu-west-1.amazonaws.com "
            "TLSv1.2 - - eu-west-1")


def write_sal(root: Path, name: str, lines: list[str]) -> None:
    p = root / "cloud" / "s3-access" / f"acme-data-{name}"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(ln + "\n" for ln in lines))


# -- GCP audit ----------------------------------------------------------------------------------

def gcp_entry(method: str, timestamp: str, resource: str, insert_id: str, *, email: str | None = GCP_SA,
              code: int = 0, items: int | None = None) -> dict:
    pp = {"@type": "type.googleapis.com/google.cloud.audit.AuditLog",
          "status": {} if not code else {"code": code, "message": "PERMISSION_DENIED"},
          "requestMetadata": {"callerIp": "198.51.100.7", "callerSuppliedUserAgent": "door/1.2,gzip(gfe)"},
          "serviceName": "storage.googleapis.com", "methodName": method,
          "authorizationInfo": [{"resource": resource, "permission": method, "resourceAttributes": {}}],
          "resourceName": resource, "resourceLocation": {"currentLocations": ["europe-west1"]}}
    if code == 0:
        pp["authorizationInfo"][0]["granted"] = True
    if email is not None:
        pp["authenticationInfo"] = {"principalEmail": email}
    if items is not None:
        pp["metadata"] = {"numResponseItems": str(items)}
    return {"protoPayload": pp, "insertId": insert_id,
            "resource": {"type": "gcs_bucket", "labels": {"bucket_name": resource.split("/")[3],
                                                          "project_id": "acme-proj", "location": "europe-west1"}},
            "timestamp": timestamp, "severity": "INFO" if not code else "ERROR",
            "logName": "projects/acme-proj/logs/cloudaudit.googleapis.com%2Fdata_access",
            "receiveTimestamp": timestamp}


def gcp_ts(s: float, ns: int | None = None) -> str:
    """``BASE`` + ``s`` seconds as a nanosecond RFC 3339 time (``ns`` overrides the fraction)."""
    whole_s = math.floor(s)
    frac = round((s - whole_s) * 1e9) if ns is None else ns
    return (BASE + timedelta(seconds=whole_s)).strftime("%Y-%m-%dT%H:%M:%S.") + f"{frac:09d}Z"


def write_gcp(root: Path, entries: list[dict]) -> None:
    p = root / "cloud" / "gcp" / "data_access.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(json.dumps(e) + "\n" for e in entries))


# -- Azure storage ------------------------------------------------------------------------------

def az_record(op: str, received: float, uri: str | None, request_id: str, *, oid: str | None = AZ_OID,
              auth: str = "OAuth", status: int = 200, text: str = "Success", size: int = 2048,
              object_key: str | None = None, category: str = "StorageRead") -> dict:
    identity: dict = {"type": auth, "tokenHash": "key1(ABCDEF)"}
    if oid is not None:
        identity["requester"] = {"objectId": oid, "appId": "3a9f0c1e-aaaa-bbbb-cccc-0123456789ab",
                                 "tenantId": "72f988bf-0000-0000-0000-2d7cd011db47"}
        identity["authorization"] = [{"action": "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read",
                                      "principals": [{"id": oid, "type": "ServicePrincipal"}],
                                      "result": "Granted" if status < 400 else "Denied", "type": "RBAC"}]
    props = {"accountName": "acmedata", "userAgentHeader": "door/1.2", "clientRequestId": f"c-{request_id}",
             "serviceType": "blob", "responseBodySize": size}
    if object_key is not None:
        props["objectKey"] = object_key
    rec = {"time": azure_time(received),
           "resourceId": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/"
                         "Microsoft.Storage/storageAccounts/acmedata/blobServices/default",
           "category": category, "operationName": op, "operationVersion": "2021-08-06", "schemaVersion": "1.0",
           "statusCode": status, "statusText": text, "durationMs": 12, "callerIpAddress": "198.51.100.7:52114",
           "correlationId": request_id, "identity": identity, "location": "westeurope", "properties": props,
           "protocol": "HTTPS", "resourceType": "Microsoft.Storage/storageAccounts/blobServices"}
    if uri is not None:
        rec["uri"] = uri
    return rec


def write_azure(root: Path, records: list[dict]) -> None:
    p = root / "cloud" / "insights-logs-storageread" / "PT1H.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(json.dumps(r) + "\n" for r in records))


# -- the incident -----------------------------------------------------------------------------

def investigate(root: Path, storage_map: dict | None = None, principals: dict | None = None, **join):
    """Load the incident in ``root`` as ``replaybook report`` does: ``(incident, access join)``
    (``join``: other arguments of :func:`~replaybook.access_join.join_access`, which are then
    used instead of the incident's own join)."""
    m = {"title": "scenario", "transcripts": [], "door": ["door/"], "access": ["cloud/"],
         "storage_map": SMAP if storage_map is None else storage_map}
    if principals is not None:
        m["principals"] = principals
    (root / "incident.yaml").write_text(json.dumps(m))
    inc = Incident.load(root / "incident.yaml")
    if join:
        from replaybook.access_join import join_access

        return inc, join_access(inc.calls, inc.access, storage_map=m["storage_map"], principals=principals, **join)
    return inc, inc.access_join


def pairs(res) -> list[tuple[str, str, int]]:
    """``(request id, door session, call seq)`` of every link, sorted."""
    return sorted(zip(res.links["request_id"], res.links["door_session"], res.links["call_seq"].astype(int)))


def unexplained(res) -> list[str]:
    return sorted(res.unexplained["request_id"])


def per_call(res) -> pd.DataFrame:
    return res.per_call.set_index(["door_session", "seq"])


# == duplicates and missing records =============================================================

def test_cloudtrail_event_delivered_twice_and_again_in_another_file_counts_once(tmp_path):
    """CloudTrail delivers an event at least once: the GetObject (eventID ev-R1) is in the
    10:05 delivery file twice and again in the 10:10 file.  One request, one link; the call
    reached 2048 bytes, not three times that."""
    write_door(tmp_path, {"s": [call(1, 20.8, 21.3, "demo/cars.csv")]})
    ev = ct_event("GetObject", 21.1, "demo/cars.csv", "R1", out=2048)
    write_cloudtrail(tmp_path, "1005Z_A", [ev, ev])
    write_cloudtrail(tmp_path, "1010Z_B", [ev])
    inc, res = investigate(tmp_path, principals=PRINCIPALS)
    assert len(inc.access) == 3  # the frame holds what the logs hold
    assert pairs(res) == [("R1", "s", 1)]
    assert unexplained(res) == []
    assert per_call(res).loc[("s", 1), "access_count"] == 1
    assert per_call(res).loc[("s", 1), "access_bytes"] == 2048
    dup = res.duplicates
    assert len(dup) == 2 and set(dup["request_id"]) == {"R1"}
    first = int(res.links["access_index"].iat[0])
    assert set(dup["same_as"]) == {first}
    assert set(dup["how"]) == {"delivered again"}
    # the report counts the request once and draws it once, beside its call
    from replaybook.report import sections as S

    h = S.access_section(res, inc.access)
    assert "2 of these records repeat a request another one holds (2 delivered twice) and are counted once" in h
    assert "Door calls explain <b>1 storage request</b>" in h
    chart = S.timeline_section(inc.steps, inc.calls, None, inc.access, access_links=res.links,
                               access_duplicates=res.duplicates)
    without = S.timeline_section(inc.steps, inc.calls, None, inc.access, access_links=res.links)
    assert '"cloud storage access no door call explains"' not in chart
    assert '"cloud storage access no door call explains"' in without


def test_a_request_no_call_explains_delivered_twice_is_listed_once(tmp_path):
    """The door's role reads reference/.env with no door call behind it; CloudTrail delivers
    that event in two files.  One request no door call explains, not two."""
    write_door(tmp_path, {"s": [call(1, 20.8, 21.3, "demo/cars.csv")]})
    rogue = ct_event("GetObject", 192.0, "reference/.env", "R9", out=310)
    write_cloudtrail(tmp_path, "1005Z_A", [ct_event("GetObject", 21.0, "demo/cars.csv", "R1", out=2048), rogue])
    write_cloudtrail(tmp_path, "1010Z_B", [rogue])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [("R1", "s", 1)]
    assert unexplained(res) == ["R9"]
    assert list(res.duplicates["request_id"]) == ["R9"]


def test_s3_access_log_late_missing_and_duplicated_records(tmp_path):
    """Server access logs are best effort: of three reads, the log holds the first and the third
    (the second's record never came), the third arrived in a file named an hour later, and the
    first is delivered twice.  Two requests, each explained by its own call; the second call
    reached nothing the log shows — and nothing is unexplained."""
    write_door(tmp_path, {"s": [call(1, 20.2, 20.6, "demo/a.csv"), call(2, 40.2, 40.6, "demo/b.csv"),
                                call(3, 60.2, 60.6, "demo/c.csv")]})
    r1 = sal(20.3, "REST.GET.OBJECT", "demo/a.csv", "A1", uri="GET /acme-data/demo/a.csv HTTP/1.1")
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [r1])
    write_sal(tmp_path, "2026-09-13-11-05-00-BBBB", [sal(60.3, "REST.GET.OBJECT", "demo/c.csv", "C1",
                                                         uri="GET /acme-data/demo/c.csv HTTP/1.1"), r1])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [("A1", "s", 1), ("C1", "s", 3)]
    assert unexplained(res) == []
    assert list(per_call(res)["access_count"]) == [1, 0, 1]
    assert list(res.duplicates["request_id"]) == ["A1"]


def test_one_request_in_both_cloudtrail_and_the_s3_access_log_is_one_request(tmp_path):
    """CloudTrail data events and the bucket's server access log are both collected: each S3
    request is in both, with the same request id.  Session a reads cars.csv at 10:00:20.2,
    session b the same object at 10:00:22.1; the access log says received at 20 and 22, CloudTrail
    completed at 20 and 23 (b's read was slow).  Each request is one request, explained by one
    call — never by a's call through one record and b's through the other; and the door role's
    read of reference/.env, in both logs, is one request no call explains."""
    write_door(tmp_path, {"a": [call(1, 20.2, 20.5, "demo/cars.csv")], "b": [call(1, 22.1, 22.4, "demo/cars.csv")]})
    write_cloudtrail(tmp_path, "1005Z_A", [ct_event("GetObject", 20.4, "demo/cars.csv", "X1", out=2048),
                                           ct_event("GetObject", 23.2, "demo/cars.csv", "X2", out=2048),
                                           ct_event("GetObject", 192.4, "reference/.env", "X9", out=310)])
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(20.3, "REST.GET.OBJECT", "demo/cars.csv", "X1", uri="GET /acme-data/demo/cars.csv HTTP/1.1"),
        sal(22.2, "REST.GET.OBJECT", "demo/cars.csv", "X2", uri="GET /acme-data/demo/cars.csv HTTP/1.1"),
        sal(192.1, "REST.GET.OBJECT", "reference/.env", "X9", uri="GET /acme-data/reference/.env HTTP/1.1")])
    inc, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [("X1", "a", 1), ("X2", "b", 1)]
    assert unexplained(res) == ["X9"]
    dup = res.duplicates
    assert sorted(dup["request_id"]) == ["X1", "X2", "X9"]
    assert set(dup["how"]) == {"another log"}
    kept = inc.access.loc[list(dup["same_as"]), "source"]
    assert all(a != b for a, b in zip(dup["source"], kept))
    assert list(per_call(res)["access_count"]) == [1, 1]


# == clocks ======================================================================================

def test_door_clock_within_the_skew_and_whole_second_log_times(tmp_path):
    """The door's clock runs 1.5 s ahead (within the 2 s skew allowed).  The call starts at
    10:00:05.8 true time, logged 10:00:07.300; S3 received the GET at 10:00:05.9 and logs the
    second, 10:00:05.  The request is the call's: 1.5 s of clock plus the dropped fraction is
    not 2.4 s of clock disagreement."""
    write_door(tmp_path, {"s": [call(1, 7.3, 7.7, "demo/a.csv")]})
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(5.9, "REST.GET.OBJECT", "demo/a.csv", "A1", uri="GET /acme-data/demo/a.csv HTTP/1.1")])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [("A1", "s", 1)]
    assert unexplained(res) == []
    assert res.offset_s == 0.0


def test_door_clock_seconds_behind_the_cloud_is_measured(tmp_path):
    """The door host's clock is 4 s behind: each of four reads is logged by S3 4.1 s after the
    door says the call started, beyond the 2 s skew.  The four requests line up with their calls
    once the offset is measured (+4 s, storage after the door); the door role's read of
    reference/.env, and a second read of demo/a.csv 70 s after its call, stay unexplained."""
    starts = [1.0, 16.0, 31.0, 46.0]
    objs = ["demo/a.csv", "demo/b.csv", "demo/c.csv", "demo/d.csv"]
    write_door(tmp_path, {"s": [call(i + 1, s, s + 0.5, o) for i, (s, o) in enumerate(zip(starts, objs))]})
    lines = [sal(s + 4.1, "REST.GET.OBJECT", o, f"G{i + 1}", uri=f"GET /acme-data/{o} HTTP/1.1")
             for i, (s, o) in enumerate(zip(starts, objs))]
    lines.append(sal(120.4, "REST.GET.OBJECT", "reference/.env", "G9", uri="GET /acme-data/reference/.env HTTP/1.1"))
    lines.append(sal(75.2, "REST.GET.OBJECT", "demo/a.csv", "G8", uri="GET /acme-data/demo/a.csv HTTP/1.1"))
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", lines)
    inc, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [(f"G{i}", "s", i) for i in (1, 2, 3, 4)]
    assert unexplained(res) == ["G8", "G9"]
    assert 3.5 <= res.offset_s <= 4.6 and res.offset_requests == 4
    from replaybook.report import sections as S

    assert f"the door's clock was {res.offset_s:,.1f} s behind the cloud's — measured on 4 requests" in \
        S.access_section(res, inc.access)
    # given, the offset is not measured: none, and the four reads are no call's
    _, res0 = investigate(tmp_path, principals=PRINCIPALS, offset_s=0)
    assert pairs(res0) == [] and res0.offset_s == 0.0


def test_door_clock_ahead_of_gcp_is_measured(tmp_path):
    """The door's clock is 3.5 s ahead of Google's: the audit log's nanosecond timestamps fall
    3.4 s before each call starts by the door's clock.  Measured, the offset is about −3.5 s and
    all three reads are explained."""
    starts = [10.0, 25.0, 40.0]
    objs = ["demo/a.csv", "demo/b.csv", "demo/c.csv"]
    write_door(tmp_path, {"s": [call(i + 1, s, s + 0.4, o) for i, (s, o) in enumerate(zip(starts, objs))]})
    write_gcp(tmp_path, [gcp_entry("storage.objects.get", gcp_ts(s - 3.4), f"projects/_/buckets/acme-gcs/objects/{o}",
                                   f"ins{i + 1}") for i, (s, o) in enumerate(zip(starts, objs))])
    _, res = investigate(tmp_path, storage_map={"demo/": "gs://acme-gcs/demo/"},
                         principals={"analyst": GCP_SA})
    assert pairs(res) == [("ins1", "s", 1), ("ins2", "s", 2), ("ins3", "s", 3)]
    assert unexplained(res) == []
    assert -3.9 <= res.offset_s <= -3.0


def test_a_storage_clock_the_manifest_gives_is_taken_instead_of_measured(tmp_path):
    """The door's clock runs 6.5 s ahead of S3's and the agent made two reads: S3 logs each
    7 s before the door says its call started.  Two requests are too few to measure a clock by:
    both stay unexplained, and the offset that would line them up (−7.4 … −6.0 s, its middle
    −6.7 s) is named as not applied.  ``storage_clock_ahead_s: -6.5`` in the manifest (the
    storage logs' clock 6.5 s behind the door's) is taken as it is, and explains both."""
    write_door(tmp_path, {"s": [call(1, 20.0, 20.5, "demo/a.csv"), call(2, 35.0, 35.4, "demo/b.csv")]})
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(13.6, "REST.GET.OBJECT", "demo/a.csv", "K1", uri="GET /acme-data/demo/a.csv HTTP/1.1"),
        sal(28.5, "REST.GET.OBJECT", "demo/b.csv", "K2", uri="GET /acme-data/demo/b.csv HTTP/1.1")])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [] and unexplained(res) == ["K1", "K2"]
    assert list(res.unexplained["why"]) == [
        "no door call on this object within the time window (nearest: session s seq 1, 7.0 s before that call)",
        "no door call on this object within the time window (nearest: session s seq 2, 7.0 s before that call)"]
    assert (res.offset_s, res.offset_given) == (0.0, False)
    assert (res.offset_unapplied_s, res.offset_unapplied_requests) == (-6.7, 2)

    m = json.loads((tmp_path / "incident.yaml").read_text())
    (tmp_path / "incident.yaml").write_text(json.dumps({**m, "storage_clock_ahead_s": -6.5}))
    inc = Incident.load(tmp_path / "incident.yaml")
    res = inc.access_join
    assert pairs(res) == [("K1", "s", 1), ("K2", "s", 2)] and unexplained(res) == []
    assert (res.offset_s, res.offset_given, res.offset_requests) == (-6.5, True, 2)
    assert res.offset_unapplied_s is None
    assert list(res.links["delta_ms"]) == [-7000.0, -7000.0]  # as logged: the offset is not taken off here
    from replaybook.report import sections as S

    assert ("the door's clock was 6.5 s ahead of the cloud's — as the manifest gives it (storage_clock_ahead_s); "
            "2 requests line up with their calls once it is taken off") in S.access_section(res, inc.access)


def test_one_early_request_does_not_move_the_clock(tmp_path):
    """One call and one read of its object 4 s before it: a skewed clock and a request made
    before the agent asked look the same, and one pair cannot tell them apart.  The request
    stays unexplained and the why names the call it would have been."""
    write_door(tmp_path, {"s": [call(1, 20.0, 20.4, "demo/a.csv")]})
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(16.0, "REST.GET.OBJECT", "demo/a.csv", "E1", uri="GET /acme-data/demo/a.csv HTTP/1.1")])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == []
    assert unexplained(res) == ["E1"]
    assert res.offset_s == 0.0
    assert "nearest: session s seq 1" in res.unexplained["why"].iat[0]


# == one call, several requests =================================================================

def test_listing_pages_head_and_ranged_gets_of_one_call(tmp_path):
    """``list_directory demo/`` (logged by the door as ``demo``) pages through ListObjects twice;
    ``read_file demo/big.parquet`` makes a HEAD, then two ranged GETs.  Every request is its
    call's; the listing's pages are not the read's, nor the other way round."""
    write_door(tmp_path, {"s": [call(1, 5.0, 6.2, "demo", tool="list_directory"),
                                call(2, 20.0, 22.5, "demo/big.parquet")]})
    write_cloudtrail(tmp_path, "1005Z_A", [
        ct_event("ListObjects", 5.4, None, "L1", prefix="demo/"),
        ct_event("ListObjects", 6.0, None, "L2", prefix="demo/", params={"continuation-token": "1ueGcxLPRx1Tr"}),
        ct_event("HeadObject", 20.2, "demo/big.parquet", "H1"),
        ct_event("GetObject", 21.1, "demo/big.parquet", "P1", out=8388608, params={"Range": "bytes=0-8388607"}),
        ct_event("GetObject", 22.3, "demo/big.parquet", "P2", out=1048576,
                 params={"Range": "bytes=8388608-9437183"})])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [("H1", "s", 2), ("L1", "s", 1), ("L2", "s", 1), ("P1", "s", 2), ("P2", "s", 2)]
    assert unexplained(res) == []
    assert per_call(res).loc[("s", 2), "access_bytes"] == 9437184
    assert list(res.per_call["call_uri"]) == ["s3://acme-data/demo/", "s3://acme-data/demo/big.parquet"]


def test_listing_the_data_root(tmp_path):
    """``list_directory`` of the data root itself (the door logs ``.``): S3 lists the bucket
    root, the folder both ``storage_map`` entries sit in.  Explained by that call."""
    write_door(tmp_path, {"s": [call(1, 5.0, 5.6, ".", tool="list_directory")]})
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(5.1, "REST.GET.BUCKET", "-", "B1", uri="GET /acme-data?list-type=2&delimiter=%2F HTTP/1.1")])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [("B1", "s", 1)]
    assert res.per_call["call_uri"].iat[0] == "s3://acme-data/"


def test_a_call_on_several_objects(tmp_path):
    """``read_multiple_files`` names two files; the door logs the first as ``object`` and both
    under ``objects``.  S3 serves one GET for each: both are the call's."""
    write_door(tmp_path, {"s": [call(1, 20.0, 20.8, "demo/a.csv", tool="read_multiple_files",
                                     objects=["demo/a.csv", "demo/b.csv"])]})
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(20.1, "REST.GET.OBJECT", "demo/a.csv", "M1", uri="GET /acme-data/demo/a.csv HTTP/1.1"),
        sal(20.3, "REST.GET.OBJECT", "demo/b.csv", "M2", uri="GET /acme-data/demo/b.csv HTTP/1.1")])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [("M1", "s", 1), ("M2", "s", 1)]
    assert unexplained(res) == []


# == several sessions, several principals =======================================================

def test_two_sessions_read_one_object_seconds_apart(tmp_path):
    """Sessions a and b read demo/cars.csv about two seconds apart, as the same role.  CloudTrail
    says the first GET completed at 10:00:20, the second at 10:00:22: the first is a's, the
    second b's, though a's window (with its completion lag) holds both."""
    write_door(tmp_path, {"a": [call(1, 20.2, 20.5, "demo/cars.csv")], "b": [call(1, 22.1, 22.4, "demo/cars.csv")]})
    write_cloudtrail(tmp_path, "1005Z_A", [ct_event("GetObject", 20.4, "demo/cars.csv", "T1", out=2048),
                                           ct_event("GetObject", 22.3, "demo/cars.csv", "T2", out=2048)])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [("T1", "a", 1), ("T2", "b", 1)]
    assert list(res.links["candidates"]) == [1, 1]


def test_two_sessions_in_the_same_second_share_its_requests(tmp_path):
    """Sessions a and b read demo/cars.csv half a second apart, as the same role; the access
    log gives both GETs the same second.  Nothing tells which GET was whose: each call explains
    one (in time order), and each link says two calls could have explained it — no call
    explains both while the other explains none."""
    write_door(tmp_path, {"a": [call(1, 20.1, 20.3, "demo/cars.csv")], "b": [call(1, 20.6, 20.8, "demo/cars.csv")]})
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(20.15, "REST.GET.OBJECT", "demo/cars.csv", "Q1", uri="GET /acme-data/demo/cars.csv HTTP/1.1"),
        sal(20.65, "REST.GET.OBJECT", "demo/cars.csv", "Q2", uri="GET /acme-data/demo/cars.csv HTTP/1.1")])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [("Q1", "a", 1), ("Q2", "b", 1)]
    assert list(res.links["candidates"]) == [2, 2]
    assert list(per_call(res)["access_count"]) == [1, 1]


def test_correlation_token_decides_between_sessions(tmp_path):
    """Each door session uses its own role session name and logs it as ``correlation``: two
    reads of one object in the same second are told apart by the ARN's session name."""
    write_door(tmp_path, {"a": [call(1, 20.1, 20.3, "demo/cars.csv", correlation="door-a")],
                          "b": [call(1, 20.6, 20.8, "demo/cars.csv", correlation="door-b")]})
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(20.65, "REST.GET.OBJECT", "demo/cars.csv", "K2", uri="GET /acme-data/demo/cars.csv HTTP/1.1",
            requester=f"{ROLE}/door-b"),
        sal(20.15, "REST.GET.OBJECT", "demo/cars.csv", "K1", uri="GET /acme-data/demo/cars.csv HTTP/1.1",
            requester=f"{ROLE}/door-a")])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [("K1", "a", 1), ("K2", "b", 1)]
    assert set(res.links["how"]) == {"correlation"}


def test_another_principal_at_the_same_moment_stays_unexplained(tmp_path):
    """While the door reads demo/cars.csv, the IAM user bob reads it too, in the same second.
    The door's agent acts as the door-reader role (``principals``): bob's read is no door
    call's, and the why says the call fits in time but not in principal."""
    write_door(tmp_path, {"s": [call(1, 20.1, 20.5, "demo/cars.csv")]})
    bob = f"arn:aws:iam::{ACCOUNT}:user/bob"
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(20.2, "REST.GET.OBJECT", "demo/cars.csv", "P1", uri="GET /acme-data/demo/cars.csv HTTP/1.1"),
        sal(20.3, "REST.GET.OBJECT", "demo/cars.csv", "P2", uri="GET /acme-data/demo/cars.csv HTTP/1.1",
            requester=bob)])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [("P1", "s", 1)]
    assert unexplained(res) == ["P2"]
    why = res.unexplained["why"].iat[0]
    assert why == (f"a door call on this object fits the time (session s seq 1), but the request was made by {bob}, "
                   "not a principal the door's agent analyst acts as")
    assert bool(res.unexplained["door_principal"].iat[0]) is False


def test_requests_with_no_principal_are_not_the_agents(tmp_path):
    """Two reads of the door's object while its call runs, whose logs name no principal: a
    CloudTrail event without ``userIdentity`` and an anonymous access-log record (requester
    ``-``).  The agent acts as the door-reader role: neither is its call's."""
    write_door(tmp_path, {"s": [call(1, 20.0, 20.4, "demo/a.csv")]})
    write_cloudtrail(tmp_path, "1005Z_A", [ct_event("GetObject", 20.2, "demo/a.csv", "N1", arn=None, out=10)])
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(20.1, "REST.GET.OBJECT", "demo/a.csv", "N0", uri="GET /acme-data/demo/a.csv HTTP/1.1"),
        sal(20.3, "REST.GET.OBJECT", "demo/a.csv", "N2", uri="GET /acme-data/demo/a.csv HTTP/1.1", requester="-")])
    inc, res = investigate(tmp_path, principals=PRINCIPALS)
    assert list(inc.access.set_index("request_id").loc[["N1", "N2"], "principal_type"]) == ["unknown", "anonymous"]
    assert pairs(res) == [("N0", "s", 1)]
    assert unexplained(res) == ["N1", "N2"]
    assert all("the request was made by no principal the log names" in w for w in res.unexplained["why"])


def test_without_principals_another_principal_is_indistinguishable(tmp_path):
    """The same two reads without a ``principals`` mapping: object and time are all there is,
    and both reads fit the call.  Both are linked, at the weakest tier (``object+time``) — the
    limit README states: map the agents' principals to tell the door's requests from others'."""
    write_door(tmp_path, {"s": [call(1, 20.1, 20.5, "demo/cars.csv")]})
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(20.2, "REST.GET.OBJECT", "demo/cars.csv", "P1", uri="GET /acme-data/demo/cars.csv HTTP/1.1"),
        sal(20.3, "REST.GET.OBJECT", "demo/cars.csv", "P2", uri="GET /acme-data/demo/cars.csv HTTP/1.1",
            requester=f"arn:aws:iam::{ACCOUNT}:user/bob")])
    _, res = investigate(tmp_path)
    assert pairs(res) == [("P1", "s", 1), ("P2", "s", 1)]
    assert set(res.links["how"]) == {"object+time"}
    # one request each: no principal is the session's most common — which was the agent's is
    # not known (NA, not a flag), and the call's note says so
    assert res.links["other_principal"].isna().all() and res.per_call["other_principal_count"].tolist() == [0]
    assert res.per_call["note"].tolist() == [
        "its door session's requests in that log were made as often by one principal as by another "
        f"(arn:aws:iam::{ACCOUNT}:user/bob / {DOOR_ARN}): which were the agent's is not known"]


def test_without_principals_another_principals_read_during_the_agents_is_flagged(tmp_path):
    """Three reads by the door's role, one per call, and bob's read of b.csv while the call on
    it runs.  Without ``principals`` all four are linked by object and time, but bob is not the
    principal the session's other requests carry: his read is flagged (``other_principal``) and
    the call's note names him."""
    objs = {1: ("demo/a.csv", 10.0), 2: ("demo/b.csv", 25.0), 3: ("demo/c.csv", 40.0)}
    write_door(tmp_path, {"s": [call(i, t, t + 0.5, o) for i, (o, t) in objs.items()]})
    bob = f"arn:aws:iam::{ACCOUNT}:user/bob"
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(t + 0.2, "REST.GET.OBJECT", o, f"Q{i}", uri=f"GET /acme-data/{o} HTTP/1.1") for i, (o, t) in objs.items()
    ] + [sal(25.3, "REST.GET.OBJECT", "demo/b.csv", "Q9", uri="GET /acme-data/demo/b.csv HTTP/1.1", requester=bob)])
    _, res = investigate(tmp_path)
    assert pairs(res) == [("Q1", "s", 1), ("Q2", "s", 2), ("Q3", "s", 3), ("Q9", "s", 2)]
    flagged = res.links.set_index("request_id")
    assert flagged["other_principal"].to_dict() == {"Q1": False, "Q2": False, "Q9": True, "Q3": False}
    assert not flagged["other_client"].any()  # bob's address is compared with bob's requests only
    pc = per_call(res)
    assert pc.loc[("s", 2), "access_count"] == 2 and pc.loc[("s", 2), "other_principal_count"] == 1
    assert pc.loc[("s", 2), "note"] == (
        f"1 of its 2 requests was made by another principal ({bob}) than most of its door session's requests in "
        f"that log ({DOOR_ARN})")
    assert pc["note"].isna().tolist() == [True, False, True]


def test_one_request_from_the_agents_client_and_one_from_another_are_named_not_flagged(tmp_path):
    """A session of one call whose object the agent's role session read twice in its window:
    once through the door's client, once with curl from another address.  Neither is the usual
    client of the session, so neither is flagged (NA) — the call's note names both."""
    write_door(tmp_path, {"s": [call(1, 10.0, 10.5, "demo/a.csv")]})
    write_cloudtrail(tmp_path, "1005Z_A", [
        ct_event("GetObject", 10.3, "demo/a.csv", "C1", out=100),
        ct_event("GetObject", 10.4, "demo/a.csv", "X1", out=100, ip="203.0.113.66", ua="curl/8.4.0")])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [("C1", "s", 1), ("X1", "s", 1)]
    assert res.links["other_client"].isna().all() and not res.links["other_principal"].any()
    assert res.per_call["other_client_count"].tolist() == [0]
    assert res.per_call["note"].tolist() == [
        "its door session's requests by that principal in that log came as often from one address or user agent as "
        "from another (addresses 198.51.100.7 / 203.0.113.66; user agents [aws-sdk-python/1.34 door/1.2] / "
        "curl/8.4.0): which were the agent's is not known"]


def test_the_agents_role_from_another_address_and_client_is_flagged(tmp_path):
    """The agent's role session reads a, b and c through the door (198.51.100.7, the door's
    SDK), and the same role session reads b.csv again from 203.0.113.66 with curl while the
    door's call on b.csv runs.  Principal, object and time all fit, so the read is linked to
    that call — and flagged: it came from another address and client than the session's other
    requests by that principal."""
    objs = {1: ("demo/a.csv", 10.0), 2: ("demo/b.csv", 25.0), 3: ("demo/c.csv", 40.0)}
    write_door(tmp_path, {"s": [call(i, t, t + 0.5, o) for i, (o, t) in objs.items()]})
    write_cloudtrail(tmp_path, "1005Z_A", [ct_event("GetObject", t + 0.3, o, f"C{i}", out=100)
                                           for i, (o, t) in objs.items()]
                     + [ct_event("GetObject", 25.4, "demo/b.csv", "X1", out=100, ip="203.0.113.66", ua="curl/8.4.0")])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [("C1", "s", 1), ("C2", "s", 2), ("C3", "s", 3), ("X1", "s", 2)]
    links = res.links.set_index("request_id")
    assert links["other_client"].to_dict() == {"C1": False, "C2": False, "X1": True, "C3": False}
    assert not links["other_principal"].any()
    assert links.loc["X1", "source_ip"] == "203.0.113.66" and links.loc["X1", "user_agent"] == "curl/8.4.0"
    assert links.loc["X1", "how"] == "principal+object+time"
    pc = per_call(res)
    assert pc["access_count"].tolist() == [1, 2, 1] and pc["other_client_count"].tolist() == [0, 1, 0]
    assert pc.loc[("s", 2), "note"] == (
        "1 of its 2 requests came from another address/client (203.0.113.66, curl/8.4.0) than most of its door "
        "session's requests by that principal in that log (198.51.100.7, [aws-sdk-python/1.34 door/1.2])")


# == outcomes ====================================================================================

def test_denied_in_storage_after_the_door_allowed(tmp_path):
    """The door allowed three reads; storage refused each (CloudTrail AccessDenied, GCP status 7,
    Azure 403 AuthorizationPermissionMismatch).  Each request is its call's, counted as denied
    by storage — not a request no call explains."""
    write_door(tmp_path, {"s": [call(1, 20.0, 20.4, "aws/x.csv"), call(2, 30.0, 30.4, "gcs/x.csv"),
                                call(3, 40.0, 40.4, "az/x.csv")]})
    write_cloudtrail(tmp_path, "1005Z_A", [ct_event("GetObject", 20.2, "x.csv", "D1", error="AccessDenied")])
    write_gcp(tmp_path, [gcp_entry("storage.objects.get", gcp_ts(30.1), "projects/_/buckets/acme-gcs/objects/x.csv",
                                   "D2", code=7)])
    write_azure(tmp_path, [az_record("GetBlob", 40.1, "https://acmedata.blob.core.windows.net/demo-data/x.csv", "D3",
                                     status=403, text="AuthorizationPermissionMismatch", size=0)])
    smap = {"aws/": "s3://acme-data/", "gcs/": "gs://acme-gcs/", "az/": "az://acmedata/demo-data/"}
    _, res = investigate(tmp_path, storage_map=smap,
                         principals={"analyst": [f"{ROLE}/*", GCP_SA, AZ_OID]})
    assert pairs(res) == [("D1", "s", 1), ("D2", "s", 2), ("D3", "s", 3)]
    assert set(res.links["outcome"]) == {"denied"}
    assert list(per_call(res)["denied_count"]) == [1, 1, 1]
    assert unexplained(res) == []


def test_refused_at_the_door_then_reached_in_storage(tmp_path):
    """The door refused reference/.env at 10:01:20.4 and forwarded nothing; two minutes later the
    door's role reads it in storage (allowed there).  Unexplained, with the refusal named."""
    write_door(tmp_path, {"s": [call(1, 80.4, 80.41, "reference/.env", decision="deny", rule="no-dotenv")]})
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(192.0, "REST.GET.OBJECT", "reference/.env", "Z1", uri="GET /acme-data/reference/.env HTTP/1.1")])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == []
    row = res.unexplained.iloc[0]
    assert (row["request_id"], row["refused_session"], row["refused_seq"], row["refused_rule"]) == \
        ("Z1", "s", 1, "no-dotenv")
    assert row["since_refusal_s"] == pytest.approx(111.6)


def test_a_multi_object_delete_cloudtrail_logs_without_its_keys_is_the_delete_calls(tmp_path):
    """CloudTrail logs S3's multi-object delete (``DeleteObjects``) with its bucket only: the keys
    would not fit an event (AWS re:Post, "why is the object name missing in CloudTrail logs for
    S3 DeleteObjects events").  The agent deletes demo/tmp/a.csv at 10:00:30 through the door,
    whose server does it with one DeleteObjects; the server access log has the key
    (``BATCH.DELETE.OBJECT``).  The bucket-level record is that call's — it was reported as a
    request no call explains, a false alarm of a change behind the door's back.  A second
    DeleteObjects while the agent was only reading stays unexplained: a read never deletes."""
    write_door(tmp_path, {"d": [call(1, 30.0, 30.6, "demo/tmp/a.csv", tool="delete_object", rule="allow-tmp"),
                                call(2, 41.0, 41.3, "demo/cars.csv"),
                                call(3, 50.0, 50.1, "demo/secret.csv", tool="put_object", decision="deny",
                                     rule="no-writes")]})
    write_cloudtrail(tmp_path, "1005Z_A", [ct_event("DeleteObjects", 30.5, None, "D1", params={"delete": ""}),
                                           ct_event("GetObject", 41.2, "demo/cars.csv", "G1", out=2048),
                                           ct_event("DeleteObjects", 41.2, None, "D2", params={"delete": ""}),
                                           ct_event("DeleteObjects", 50.4, None, "D3", params={"delete": ""})])
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(30.1, "REST.POST.MULTI_OBJECT_DELETE", "-", "D1", uri="POST /acme-data/?delete HTTP/1.1", sent=None),
        sal(30.2, "BATCH.DELETE.OBJECT", "demo/tmp/a.csv", "D1", sent=None)])
    inc, res = investigate(tmp_path, principals=PRINCIPALS)
    ct = inc.access[inc.access["source"] == "aws.cloudtrail"]
    assert sorted(zip(ct["request_id"], ct["resource_uri"], ct["action"])) == [
        ("D1", "s3://acme-data/", "delete"), ("D2", "s3://acme-data/", "delete"), ("D3", "s3://acme-data/", "delete"),
        ("G1", "s3://acme-data/demo/cars.csv", "read")]
    # the batch in both logs is one request (the access log's record of it repeats CloudTrail's)
    assert list(zip(res.duplicates["request_id"], res.duplicates["source"], res.duplicates["how"])) == [
        ("D1", "aws.s3_access", "another log")]
    assert pairs(res) == [("D1", "d", 1), ("D1", "d", 1), ("G1", "d", 2)]
    links = res.links.sort_values(["source", "request_id"])
    assert list(zip(links["source"], links["resource_uri"], links["call_uri"])) == [
        ("aws.cloudtrail", "s3://acme-data/", "s3://acme-data/demo/tmp/a.csv"),
        ("aws.cloudtrail", "s3://acme-data/demo/cars.csv", "s3://acme-data/demo/cars.csv"),
        ("aws.s3_access", "s3://acme-data/demo/tmp/a.csv", "s3://acme-data/demo/tmp/a.csv")]
    assert unexplained(res) == ["D2", "D3"]
    un = res.unexplained.set_index("request_id")
    assert un.loc["D2", "why"] == (
        "a multi-object delete (DeleteObjects) logged with its bucket only, s3://acme-data/: which objects it "
        "deleted the record does not say; no door call that changes objects under it within the time window "
        "(nearest: session d seq 3, which the door refused (rule no-writes), 9.0 s before that call)")
    # a refused write under the bucket is no sign the batch reached its object: no refusal beside it
    assert un["refused_seq"].isna().all()
    # without principals (object and time only) the read still explains no delete
    _, res = investigate(tmp_path)
    assert unexplained(res) == ["D2", "D3"] and ("D1", "d", 1) in pairs(res)


# == objects and keys ============================================================================

# a key with a space, a plus, non-ASCII letters and a percent sign
KEY = "données/été 2026+v2 100%.csv"


def test_keys_needing_url_encoding_in_every_log(tmp_path):
    """One object name needing URL-encoding, read through each cloud: CloudTrail gives the key as
    it is; the S3 access log encodes it twice (and the request-URI once); GCP names the object as
    it is in ``resourceName``; Azure percent-encodes the request URL.  Each read is its call's."""
    smap = {"aws/": "s3://acme-data/demo/", "gcs/": "gs://acme-gcs/demo/", "az/": "az://acmedata/demo-data/demo/"}
    write_door(tmp_path, {"s": [call(1, 10.0, 10.4, f"aws/{KEY}"), call(2, 20.0, 20.4, f"aws/{KEY}"),
                                call(3, 30.0, 30.4, f"gcs/{KEY}"), call(4, 40.0, 40.4, f"az/{KEY}")]})
    write_cloudtrail(tmp_path, "1005Z_A", [ct_event("GetObject", 10.2, f"demo/{KEY}", "U1", out=10)])
    once = quote(f"demo/{KEY}")            # what the client sent in the request-URI
    twice = quote(once)                    # what the access log's key field holds
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(20.1, "REST.GET.OBJECT", twice, "U2", uri=f"GET /acme-data/{once} HTTP/1.1")])
    write_gcp(tmp_path, [gcp_entry("storage.objects.get", gcp_ts(30.1),
                                   f"projects/_/buckets/acme-gcs/objects/demo/{KEY}", "U3")])
    write_azure(tmp_path, [az_record("GetBlob", 40.1, f"https://acmedata.blob.core.windows.net/demo-data/{once}"
                                     "?sv=2021-08-06&se=2026-09-14&sr=b&sp=r&sig=abc%3D", "U4")])
    inc, res = investigate(tmp_path, storage_map=smap, principals={"analyst": [f"{ROLE}/*", GCP_SA, AZ_OID]})
    assert set(inc.access["resource_uri"]) == {f"s3://acme-data/demo/{KEY}", f"gs://acme-gcs/demo/{KEY}",
                                               f"az://acmedata/demo-data/demo/{KEY}"}
    assert pairs(res) == [("U1", "s", 1), ("U2", "s", 2), ("U3", "s", 3), ("U4", "s", 4)]
    assert unexplained(res) == []


def test_s3_access_log_keys_by_operation_and_request_uri(tmp_path):
    """The access log's key field, read the way each record is written: a GET whose key is
    encoded once (the request-URI confirms it), a GET encoded twice with no request-URI (``-``),
    a HEAD through a virtual-hosted request-URI, and a lifecycle expiry (encoded once, space as
    ``+``) — which no door call explains."""
    objs = ["demo/a b.csv", "demo/c+d.csv", "demo/e%41.csv"]
    write_door(tmp_path, {"s": [call(i + 1, 10.0 * (i + 1), 10.0 * (i + 1) + 0.4, o) for i, o in enumerate(objs)]})
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(10.1, "REST.GET.OBJECT", "demo/a%20b.csv", "S1", uri="GET /acme-data/demo/a%20b.csv HTTP/1.1"),
        sal(20.1, "REST.GET.OBJECT", "demo/c%252Bd.csv", "S2"),
        sal(30.1, "REST.HEAD.OBJECT", "demo/e%252541.csv", "S3", uri="HEAD /demo/e%2541.csv HTTP/1.1", sent=None),
        sal(50.0, "S3.EXPIRE.OBJECT", "demo/old+file.csv", "S4", requester="svc:lifecycle.s3.amazonaws.com",
            status=204, sent=None)])
    inc, res = investigate(tmp_path, principals=PRINCIPALS)
    assert list(inc.access["resource_uri"]) == [f"s3://acme-data/{o}" for o in objs] + \
        ["s3://acme-data/demo/old file.csv"]
    assert pairs(res) == [("S1", "s", 1), ("S2", "s", 2), ("S3", "s", 3)]
    assert unexplained(res) == ["S4"]


def test_gcp_resource_name_forms(tmp_path):
    """``resourceName`` shapes: an object whose name holds ``/objects/``, a bucket-level listing
    (how GCS logs ``objects.list`` with a prefix), a bucket read by the door's service account
    (no call reads buckets), and a read with no ``authenticationInfo`` at the same moment as the
    door's (not the door's principal)."""
    write_door(tmp_path, {"s": [call(1, 5.0, 5.5, "demo", tool="list_directory"),
                                call(2, 20.0, 20.4, "demo/objects/x.csv")]})
    write_gcp(tmp_path, [
        gcp_entry("storage.objects.list", gcp_ts(5.2), "projects/_/buckets/acme-gcs", "g1", items=3),
        gcp_entry("storage.objects.get", gcp_ts(20.1), "projects/_/buckets/acme-gcs/objects/demo/objects/x.csv", "g2"),
        gcp_entry("storage.objects.get", gcp_ts(20.2), "projects/_/buckets/acme-gcs/objects/demo/objects/x.csv", "g3",
                  email=None),
        gcp_entry("storage.buckets.get", gcp_ts(20.3), "projects/_/buckets/acme-gcs", "g4")])
    _, res = investigate(tmp_path, storage_map={"demo/": "gs://acme-gcs/demo/"}, principals={"analyst": GCP_SA})
    assert pairs(res) == [("g1", "s", 1), ("g2", "s", 2)]
    assert unexplained(res) == ["g3", "g4"]
    un = res.unexplained.set_index("request_id")
    assert "the request was made by no principal the log names" in un.loc["g3", "why"]


def test_azure_uri_and_object_key_forms(tmp_path):
    """Azure's ways of naming the blob: a blob-endpoint URI, a Data Lake (dfs) URI, a Log
    Analytics row with only ``ObjectKey``, and a container listing with a ``prefix``; plus a
    SAS request for the same blob at the same moment (no identity: not the door's)."""
    write_door(tmp_path, {"s": [call(1, 5.0, 5.5, "demo", tool="list_directory"),
                                call(2, 20.0, 20.4, "demo/a b.csv"), call(3, 30.0, 30.4, "demo/c.csv"),
                                call(4, 40.0, 40.4, "demo/d.csv")]})
    la = {"TimeGenerated": azure_time(40.1), "OperationName": "GetBlob", "Category": "StorageRead",
          "StatusCode": 200, "StatusText": "Success", "CorrelationId": "Z4", "AuthenticationType": "OAuth",
          "RequesterObjectId": AZ_OID, "AccountName": "acmedata", "ObjectKey": "/acmedata/demo-data/demo/d.csv",
          "ResponseBodySize": 10}
    write_azure(tmp_path, [
        az_record("ListBlobs", 5.1, "https://acmedata.blob.core.windows.net/demo-data?restype=container&comp=list"
                  "&prefix=demo%2F&delimiter=%2F", "Z1"),
        az_record("GetBlob", 20.1, "https://acmedata.blob.core.windows.net/demo-data/demo/a%20b.csv", "Z2"),
        az_record("GetBlob", 20.2, "https://acmedata.blob.core.windows.net/demo-data/demo/a%20b.csv?sv=2021-08-06"
                  "&sr=b&sp=r&sig=abc%3D", "Z5", oid=None, auth="SAS"),
        az_record("ReadFile", 30.1, "https://acmedata.dfs.core.windows.net/demo-data/demo/c.csv", "Z3"),
        la])
    _, res = investigate(tmp_path, storage_map={"demo/": "az://acmedata/demo-data/demo/"},
                         principals={"analyst": AZ_OID})
    assert pairs(res) == [("Z1", "s", 1), ("Z2", "s", 2), ("Z3", "s", 3), ("Z4", "s", 4)]
    assert unexplained(res) == ["Z5"]


def test_storage_map_prefixes_are_folders(tmp_path):
    """``storage_map`` maps folders: ``data`` → ``s3://acme-data/warehouse`` (written without
    slashes) maps ``data/cars.csv`` to ``…/warehouse/cars.csv`` and the folder ``data`` itself,
    but not ``database.csv`` (another name that starts with the same letters); the request for
    ``warehousebase.csv`` is no call's."""
    write_door(tmp_path, {"s": [call(1, 10.0, 10.4, "data/cars.csv"), call(2, 20.0, 20.4, "database.csv"),
                                call(3, 30.0, 30.4, "data", tool="list_directory")]})
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(10.1, "REST.GET.OBJECT", "warehouse/cars.csv", "F1", uri="GET /acme-data/warehouse/cars.csv HTTP/1.1"),
        sal(20.1, "REST.GET.OBJECT", "warehousebase.csv", "F2", uri="GET /acme-data/warehousebase.csv HTTP/1.1"),
        sal(30.1, "REST.GET.BUCKET", "-", "F3", uri="GET /acme-data?list-type=2&prefix=warehouse%2F HTTP/1.1")])
    _, res = investigate(tmp_path, storage_map={"data": "s3://acme-data/warehouse"}, principals=PRINCIPALS)
    assert list(res.per_call["call_uri"].fillna("-")) == ["s3://acme-data/warehouse/cars.csv", "-",
                                                          "s3://acme-data/warehouse"]
    assert pairs(res) == [("F1", "s", 1), ("F3", "s", 3)]
    assert unexplained(res) == ["F2"]


# == window edges ================================================================================

def test_window_edges_with_nanosecond_times(tmp_path):
    """GCP times to the nanosecond; the call runs 10:00:10.000–10:00:10.500, skew 2 s and lag 5 s:
    the window is [10:00:08.000000000, 10:00:17.500000000], both ends in."""
    write_door(tmp_path, {"s": [call(1, 10.0, 10.5, "demo/a.csv")]})
    obj = "projects/_/buckets/acme-gcs/objects/demo/a.csv"
    write_gcp(tmp_path, [gcp_entry("storage.objects.get", gcp_ts(8, 0), obj, "in-start"),
                         gcp_entry("storage.objects.get", gcp_ts(7, 999_999_999), obj, "out-start"),
                         gcp_entry("storage.objects.get", gcp_ts(17, 500_000_000), obj, "in-end"),
                         gcp_entry("storage.objects.get", gcp_ts(17, 500_000_001), obj, "out-end")])
    _, res = investigate(tmp_path, storage_map={"demo/": "gs://acme-gcs/demo/"}, principals={"analyst": GCP_SA})
    assert pairs(res) == [("in-end", "s", 1), ("in-start", "s", 1)]
    assert unexplained(res) == ["out-end", "out-start"]


def test_window_edges_with_whole_second_times(tmp_path):
    """The access log gives the second S3 received a request in.  The call runs
    10:00:03.500–10:00:03.900 and 2 s of skew are allowed, so a request received in
    [10:00:01.500, 10:00:05.900] is the call's: the seconds 01 … 05 may hold one, 00 and 06
    cannot."""
    write_door(tmp_path, {"s": [call(1, 3.5, 3.9, "demo/a.csv")]})
    uri = "GET /acme-data/demo/a.csv HTTP/1.1"
    write_sal(tmp_path, "2026-09-13-10-10-00-AAAA", [
        sal(s, "REST.GET.OBJECT", "demo/a.csv", f"W{s}", uri=uri) for s in (0, 1, 5, 6)])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [("W1", "s", 1), ("W5", "s", 1)]
    assert unexplained(res) == ["W0", "W6"]


# == role sessions one after another ===============================================================

def test_a_role_session_renewed_mid_session_is_not_another_principal(tmp_path):
    """The agent's credentials are renewed halfway (an SDK's assume-role provider names each
    renewal's session anew): calls 1–2 are read as ``door-analyst``, calls 3–4 as
    ``door-analyst-2``, never interleaved.  One role, one session after the other: no request
    is another principal's, and no call's note says the principals were as common."""
    objs = {1: ("demo/a.csv", 10.0), 2: ("demo/b.csv", 25.0), 3: ("demo/c.csv", 40.0), 4: ("demo/d.csv", 55.0)}
    write_door(tmp_path, {"s": [call(i, t, t + 0.5, o) for i, (o, t) in objs.items()]})
    renewed = f"{ROLE}/door-analyst-2"
    write_cloudtrail(tmp_path, "1005Z_A", [ct_event("GetObject", t + 0.3, o, f"C{i}", out=100,
                                                    arn=DOOR_ARN if i <= 2 else renewed)
                                           for i, (o, t) in objs.items()])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert pairs(res) == [("C1", "s", 1), ("C2", "s", 2), ("C3", "s", 3), ("C4", "s", 4)]
    assert res.links["other_principal"].tolist() == [False] * 4
    assert res.links["principal"].tolist() == [DOOR_ARN, DOOR_ARN, renewed, renewed]  # (as logged)
    assert res.per_call["other_principal_count"].tolist() == [0] * 4
    assert res.per_call["note"].isna().all()


def test_a_renewal_then_one_more_read_is_still_the_same_principal(tmp_path):
    """Three reads under the first role session, one under the renewed one after them: the
    renewal is not a minority principal."""
    objs = {1: ("demo/a.csv", 10.0), 2: ("demo/b.csv", 25.0), 3: ("demo/c.csv", 40.0), 4: ("demo/d.csv", 55.0)}
    write_door(tmp_path, {"s": [call(i, t, t + 0.5, o) for i, (o, t) in objs.items()]})
    write_cloudtrail(tmp_path, "1005Z_A", [ct_event("GetObject", t + 0.3, o, f"C{i}", out=100,
                                                    arn=DOOR_ARN if i <= 3 else f"{ROLE}/door-analyst-2")
                                           for i, (o, t) in objs.items()])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    assert res.links["other_principal"].tolist() == [False] * 4
    assert res.per_call["note"].isna().all()


def test_two_role_sessions_of_one_role_used_at_once_are_still_told_apart(tmp_path):
    """Another holder of the same role reads b.csv between the agent's reads under its own role
    session: the two sessions overlap in time, so they are two principals, and the read made
    under the less common one is flagged as before."""
    objs = {1: ("demo/a.csv", 10.0), 2: ("demo/b.csv", 25.0), 3: ("demo/c.csv", 40.0)}
    write_door(tmp_path, {"s": [call(i, t, t + 0.5, o) for i, (o, t) in objs.items()]})
    other = f"{ROLE}/someone-else"
    write_cloudtrail(tmp_path, "1005Z_A", [ct_event("GetObject", t + 0.3, o, f"C{i}", out=100)
                                           for i, (o, t) in objs.items()]
                     + [ct_event("GetObject", 25.4, "demo/b.csv", "X1", out=100, arn=other)])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    links = res.links.set_index("request_id")
    assert links["other_principal"].to_dict() == {"C1": False, "C2": False, "X1": True, "C3": False}
    assert per_call(res).loc[("s", 2), "note"] == (
        f"1 of its 2 requests was made by another principal ({other}) than most of its door session's requests in "
        f"that log ({DOOR_ARN})")


def test_another_holder_of_the_role_between_two_renewals_is_flagged(tmp_path):
    """The agent reads under ``door-analyst`` then, renewed, under ``door-analyst-2``; between
    them another holder of the role reads b.csv with curl from another address.  The renewals
    are one principal; the other holder's read is flagged and the note names both."""
    objs = {1: ("demo/a.csv", 10.0), 2: ("demo/b.csv", 25.0), 3: ("demo/c.csv", 40.0), 4: ("demo/d.csv", 55.0)}
    write_door(tmp_path, {"s": [call(i, t, t + 0.5, o) for i, (o, t) in objs.items()]})
    other = f"{ROLE}/someone-else"
    write_cloudtrail(tmp_path, "1005Z_A", [ct_event("GetObject", t + 0.3, o, f"C{i}", out=100,
                                                    arn=DOOR_ARN if i <= 2 else f"{ROLE}/door-analyst-2")
                                           for i, (o, t) in objs.items()]
                     + [ct_event("GetObject", 25.4, "demo/b.csv", "X1", out=100, arn=other,
                                 ip="203.0.113.66", ua="curl/8.4.0")])
    _, res = investigate(tmp_path, principals=PRINCIPALS)
    links = res.links.set_index("request_id")
    assert links["other_principal"].to_dict() == {"C1": False, "C2": False, "X1": True, "C3": False, "C4": False}
    assert per_call(res).loc[("s", 2), "note"] == (
        f"1 of its 2 requests was made by another principal ({other}) than most of its door session's requests in "
        f"that log ({DOOR_ARN} … door-analyst-2, one role session after another)")


# == doors on clocks of their own ==================================================================

REVIEWER_ARN = f"{ROLE}/door-reviewer"


def _two_doors(tmp_path, n_reviewer: int, ahead: float = 40.2) -> None:
    """The analyst's door on the storage clock (four reads), and a reviewer's door on a host whose
    clock is ``ahead`` seconds ahead (``n_reviewer`` reads, each request made at the call's
    true time)."""
    a = {i: (f"demo/a{i}.csv", 10.0 + 15 * i) for i in range(1, 5)}
    r = {i: (f"demo/r{i}.csv", 12.0 + 15 * i) for i in range(1, n_reviewer + 1)}
    write_door(tmp_path, {"s": [call(i, t, t + 0.5, o) for i, (o, t) in a.items()]})
    write_door(tmp_path, {"rv": [call(i, t + ahead, t + ahead + 0.5, o) for i, (o, t) in r.items()]},
               agent="reviewer")
    write_cloudtrail(tmp_path, "1005Z_A", [ct_event("GetObject", t + 0.3, o, f"A{i}", out=100)
                                           for i, (o, t) in a.items()]
                     + [ct_event("GetObject", t + 0.3, o, f"R{i}", out=100, arn=REVIEWER_ARN)
                        for i, (o, t) in r.items()])


def test_a_door_on_a_clock_of_its_own_is_measured_on_its_own(tmp_path):
    """The reviewer's door runs 40.2 s ahead of the storage logs, the analyst's does not.  One
    offset for both left the reviewer's five requests unexplained; each door's own lines up
    all nine, and the reviewer's offset is on the result."""
    _two_doors(tmp_path, 5)
    _, res = investigate(tmp_path, principals={"analyst": DOOR_ARN, "reviewer": REVIEWER_ARN})
    assert pairs(res) == [("A1", "s", 1), ("A2", "s", 2), ("A3", "s", 3), ("A4", "s", 4),
                          ("R1", "rv", 1), ("R2", "rv", 2), ("R3", "rv", 3), ("R4", "rv", 4), ("R5", "rv", 5)]
    assert res.offset_s == 0.0 and len(res.unexplained) == 0
    d = res.door_offsets
    assert d["agent"].tolist() == ["reviewer"] and d["applied"].tolist() == [True] and not d["given"].any()
    assert -40.5 < float(d["offset_s"].iloc[0]) < -39.9 and d["requests"].tolist() == [5]
    # (the links keep the raw difference: storage time − the door's logged start)
    r1 = res.links.set_index("request_id").loc["R1"]
    assert r1["delta_ms"] == -40200.0  # (CloudTrail keeps whole seconds: 27 s − 67.2 s)


def test_a_door_clock_too_few_requests_show_is_named_and_can_be_given(tmp_path):
    """Two reviewer requests fit the reviewer's own clock: too few to take it (three more than
    the common offset fits are needed), so they stay unexplained and the offset is named as
    measured, not applied.  Given (``door_offsets_s``, as the manifest's ``storage_clock_ahead_s:
    {reviewer: -40.2}`` gives it), both are explained."""
    _two_doors(tmp_path, 2)
    _, res = investigate(tmp_path, principals={"analyst": DOOR_ARN, "reviewer": REVIEWER_ARN})
    assert sorted(res.unexplained["request_id"]) == ["R1", "R2"]
    d = res.door_offsets
    assert d["agent"].tolist() == ["reviewer"] and d["applied"].tolist() == [False] and d["requests"].tolist() == [2]
    _, res = investigate(tmp_path, principals={"analyst": DOOR_ARN, "reviewer": REVIEWER_ARN},
                         storage_map=SMAP, door_offsets_s={"reviewer": -40.2})
    assert len(res.unexplained) == 0 and ("R2", "rv", 2) in pairs(res)
    d = res.door_offsets
    assert d.to_dict("records") == [{"agent": "reviewer", "offset_s": -40.2, "requests": 2, "given": True,
                                     "applied": True}]


def test_a_door_clock_the_manifest_gives_per_agent_is_taken_and_the_report_says_so(tmp_path):
    """``storage_clock_ahead_s: {reviewer: -40.2}``: the reviewer's two reads are explained and
    the report's access section names that door's clock; measured but too few, it names the
    manifest line that would give it."""
    from replaybook.report import sections as S

    _two_doors(tmp_path, 2)
    _, res = investigate(tmp_path, principals={"analyst": DOOR_ARN, "reviewer": REVIEWER_ARN})
    html = S.access_section(res, Incident.load(tmp_path / "incident.yaml").access)
    assert ("door agent <code>reviewer</code>: 2 requests made by its calls would line up if its door's clock was "
            "40.0 s ahead of the cloud's — too few more than at the common offset to take it; if that door's host is "
            "known to run off, give it: <code>storage_clock_ahead_s: {reviewer: -40.0}</code>") in html
    m = json.loads((tmp_path / "incident.yaml").read_text())
    (tmp_path / "incident.yaml").write_text(json.dumps({**m, "storage_clock_ahead_s": {"reviewer": -40.2}}))
    inc = Incident.load(tmp_path / "incident.yaml")
    res = inc.access_join
    assert unexplained(res) == [] and ("R1", "rv", 1) in pairs(res)
    assert (res.offset_s, res.offset_given) == (0.0, False)
    assert ("door agent <code>reviewer</code>: its door's clock was 40.2 s ahead of the cloud's — as the manifest "
            "gives it (storage_clock_ahead_s); 2 requests made by its calls line up once it is taken off, and its calls "
            "were compared at it") in S.access_section(res, inc.access)


def test_an_s3_request_that_names_no_bucket_is_a_storage_request_no_listing_explains(tmp_path):
    """``ListBuckets`` (which buckets the account has) is an S3 request that names no bucket:
    CloudTrail gives it no resource and no ``bucketName``.  It is a storage request, ``s3://``
    (all of the account's S3), that no door call explains — not even a listing of the data root
    at that moment: listing a bucket never lists the account's buckets.  It had been counted
    with the other services' events, as if no door call could reach storage with it."""
    write_door(tmp_path, {"s": [call(1, 5.0, 5.6, ".", tool="list_directory")]})
    root_listing = ct_event("ListObjectsV2", 5.2, None, "L1", prefix="")
    buckets = ct_event("ListBuckets", 5.3, None, "L2")
    buckets["requestParameters"] = {"Host": "s3.eu-west-1.amazonaws.com"}
    del buckets["resources"]
    write_cloudtrail(tmp_path, "1005Z_A", [root_listing, buckets])
    inc, res = investigate(tmp_path, principals=PRINCIPALS)
    row = inc.access[inc.access["request_id"] == "L2"].iloc[0]
    assert (row["action"], row["resource_uri"]) == ("list", "s3://")
    assert pairs(res) == [("L1", "s", 1)]
    assert unexplained(res) == ["L2"]
    summary = res.to_dict()
    assert [u["request_id"] for u in summary["unexplained"]] == ["L2"] and summary["unexplained_other"] == []


def test_an_event_without_a_request_id_delivered_twice_is_one_event(tmp_path):
    """A console sign-in carries no ``requestID`` (the record's ``requestID`` is optional; its
    ``eventID``, CloudTrail's own id of the event, never is).  CloudTrail delivers the event in
    the 10:05 file and again in the 10:10 file: one other cloud event no door call explains,
    the copy listed as delivered again — and a second sign-in, another ``eventID`` at the same
    second, is still an event of its own."""
    write_door(tmp_path, {"s": [call(1, 20.8, 21.3, "demo/cars.csv")]})
    login = {"eventVersion": "1.08", "eventTime": whole(30.0), "eventSource": "signin.amazonaws.com",
             "eventName": "ConsoleLogin", "awsRegion": "eu-west-1", "sourceIPAddress": "203.0.113.9",
             "userAgent": "Mozilla/5.0", "requestParameters": None,
             "responseElements": {"ConsoleLogin": "Success"},
             "userIdentity": {"type": "IAMUser", "principalId": "AIDAEXAMPLE", "accountId": ACCOUNT,
                              "arn": f"arn:aws:iam::{ACCOUNT}:user/ops", "userName": "ops"},
             "eventID": "3fcfb10c-7b3c-4b3e-9d0f-0f7b1c2a9e01", "readOnly": False, "eventType": "AwsConsoleSignIn",
             "managementEvent": True, "recipientAccountId": ACCOUNT, "eventCategory": "Management"}
    again = dict(login, eventID="3fcfb10c-7b3c-4b3e-9d0f-0f7b1c2a9e02")
    write_cloudtrail(tmp_path, "1005Z_A", [ct_event("GetObject", 21.0, "demo/cars.csv", "R1", out=2048), login])
    write_cloudtrail(tmp_path, "1010Z_B", [login, again])
    inc, res = investigate(tmp_path, principals=PRINCIPALS)
    assert len(inc.access) == 4  # the frame holds what the logs hold
    assert pairs(res) == [("R1", "s", 1)]
    other = res.to_dict()["unexplained_other"]
    assert sorted(u["request_id"] for u in other) == ["3fcfb10c-7b3c-4b3e-9d0f-0f7b1c2a9e01",
                                                     "3fcfb10c-7b3c-4b3e-9d0f-0f7b1c2a9e02"]
    dup = res.duplicates
    assert list(dup["request_id"]) == ["3fcfb10c-7b3c-4b3e-9d0f-0f7b1c2a9e01"]
    assert list(dup["how"]) == ["delivered again"]
    copy, kept = inc.access.loc[int(dup["access_index"].iat[0])], inc.access.loc[int(dup["same_as"].iat[0])]
    assert kept["source_file"].endswith("T1005Z_A.json.gz") and copy["source_file"].endswith("T1010Z_B.json.gz")
    # the report counts the sign-ins CloudTrail logged, not the records it delivered
    from replaybook.report import sections as S

    h = S.access_section(res, inc.access)
    assert "Other cloud events (2 events, not on storage)" in h
    assert "1 of these record repeats a request another one holds (1 delivered twice)" in h
