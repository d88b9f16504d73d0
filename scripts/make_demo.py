"""Generate the bundled demo incident in data/demo/ (deterministic; the output is committed).

The story (seed 000): an analyst agent is asked for the average mpg of the cars in ``demo/``.
It lists ``demo/``, describes and summarises the SAS file, then queries the Parquet file — a
stale copy with three duplicated rows, so the number it reports is wrong — and is refused
``reference/.env``.  A second session 50 s later repeats the first three calls and queries
the SAS file instead.  A third, unrelated transcript never touched the door.

Usage:  python scripts/make_demo.py [OUT_DIR]        (default: data/demo)
Needs pyreadstat (the ``dev`` extra) to write the SAS transport file.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
import textwrap
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd

T0 = datetime(2026, 9, 13, 10, 0, 0, tzinfo=timezone.utc)
DOOR_SKEW = timedelta(milliseconds=400)  # the door's clock runs 400 ms ahead of the laptop's
CWD = "/home/analyst/project"
VERSION = "2.1.42"


def iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def uid(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "replaybook-demo/" + "/".join(parts)))


def tool_id(*parts: str) -> str:
    return "toolu_01" + hashlib.sha256("/".join(parts).encode()).hexdigest()[:22]


#: The created/modified stamp the SAS transport file's headers carry: the time the committed
#: cars.xpt was first written.  pyreadstat stamps the current time, so without this every run
#: wrote a file with other bytes (and another SHA-256) for the same data.
XPT_STAMP = b"29NOV26:19:58:35"


def _pin_xpt_stamps(path: Path) -> None:
    """Set the created and modified stamps (``DDMONYY:HH:MM:SS``) of a version 5 transport
    file's library and member headers to :data:`XPT_STAMP`; the data records are left alone."""
    import re

    b = path.read_bytes()
    head = b.index(b"HEADER RECORD*******NAMESTR HEADER RECORD")  # the variables' and data records follow
    stamps = re.compile(rb"\d\d[A-Z]{3}\d\d:\d\d:\d\d:\d\d")
    path.write_bytes(stamps.sub(XPT_STAMP, b[:head]) + b[head:])


def make_data(root: Path) -> pd.DataFrame:
    import pyreadstat

    rng = np.random.default_rng(1974)
    n = 32
    cyl = rng.choice([4, 6, 8], size=n, p=[0.35, 0.25, 0.40])
    mpg = np.round(np.where(cyl == 4, 26.5, np.where(cyl == 6, 19.7, 15.1)) + rng.normal(0, 2.2, n), 1)
    cars = pd.DataFrame({
        "model": [f"car-{i + 1:02d}" for i in range(n)],
        "mpg": mpg,
        "cyl": cyl.astype("int64"),
        "hp": np.round(np.where(cyl == 4, 82, np.where(cyl == 6, 122, 209)) + rng.normal(0, 15, n)).astype("int64"),
        "wt": np.round(np.where(cyl == 4, 2.3, np.where(cyl == 6, 3.1, 4.0)) + rng.normal(0, 0.3, n), 3),
    })
    (root / "demo").mkdir(parents=True, exist_ok=True)
    (root / "reference").mkdir(parents=True, exist_ok=True)
    pyreadstat.write_xport(cars, str(root / "demo" / "cars.xpt"), table_name="CARS", file_format_version=5)
    _pin_xpt_stamps(root / "demo" / "cars.xpt")
    stale = pd.concat([cars, cars[cars["cyl"] == 8].head(3)], ignore_index=True)  # 3 rows twice
    stale.to_parquet(root / "demo" / "cars.parquet", index=False)
    (root / "demo" / "README.txt").write_text(
        "Fleet test cars.\ncars.xpt is the source of truth (SAS transport).\n"
        "cars.parquet is an export made for dashboards.\n", encoding="utf-8")
    (root / "reference" / ".env").write_text(
        "# credentials for the reference warehouse\nWAREHOUSE_USER=analyst\n"
        "WAREHOUSE_PASSWORD=demo-not-a-real-secret-7Hq2\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
        encoding="utf-8")
    return cars


class Transcript:
    """Writes Claude Code 2.1.x JSONL lines (user, assistant split per content block, results)."""

    def __init__(self, session_id: str):
        self.sid = session_id
        self.lines: list[dict] = []
        self.parent: str | None = None
        self.n = 0

    def _base(self, t: datetime, typ: str) -> dict:
        self.n += 1
        u = uid(self.sid, str(self.n))
        d = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": CWD,
             "sessionId": self.sid, "version": VERSION, "gitBranch": "main", "type": typ,
             "uuid": u, "timestamp": iso(t)}
        self.parent = u
        return d

    def prompt(self, t: datetime, text: str) -> None:
        d = self._base(t, "user")
        d["message"] = {"role": "user", "content": text}
        self.lines.append(d)

    def assistant(self, t: datetime, blocks: list[dict], usage_out: int) -> None:
        msg_id = "msg_01" + hashlib.sha256(f"{self.sid}{self.n}".encode()).hexdigest()[:20]
        req = "req_01" + hashlib.sha256(f"r{self.sid}{self.n}".encode()).hexdigest()[:20]
        for i, b in enumerate(blocks):  # streamed: one line per content block, usage grows
            d = self._base(t, "assistant")
            d["message"] = {"model": "claude-sonnet-4-5", "id": msg_id, "type": "message", "role": "assistant",
                            "content": [b], "stop_reason": "tool_use" if i == len(blocks) - 1 and b["type"] == "tool_use" else None,
                            "usage": {"input_tokens": 1200 + 40 * self.n, "output_tokens": usage_out * (i + 1) // len(blocks)}}
            d["requestId"] = req
            self.lines.append(d)

    def result(self, t: datetime, call_id: str, text: str, is_error: bool = False) -> None:
        d = self._base(t, "user")
        d["message"] = {"role": "user", "content": [{"tool_use_id": call_id, "type": "tool_result",
                                                     "content": text, "is_error": is_error}]}
        d["toolUseResult"] = ("Error: " + text) if is_error else {"content": [{"type": "text", "text": text}]}
        self.lines.append(d)

    def write(self, path: Path) -> None:
        path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in self.lines), encoding="utf-8")


def run_session(tr: Transcript, door_session: str, start: datetime, script: list[dict], prompt: str,
                answer: str) -> list[dict]:
    """Play one conversation: returns the door's log lines for it."""
    door: list[dict] = []
    t = start
    tr.prompt(t, prompt)
    for seq, step in enumerate(script, 1):
        t += timedelta(seconds=step.get("think", 4))
        cid = tool_id(tr.sid, str(seq))
        blocks = []
        if step.get("say"):
            blocks.append({"type": "text", "text": step["say"]})
        blocks.append({"type": "tool_use", "id": cid, "name": "mcp__door__" + step["tool"], "input": step["args"]})
        tr.assistant(t, blocks, 60 + 7 * seq)
        door_t = t + timedelta(milliseconds=350) + DOOR_SKEW
        denied = step.get("deny", False)
        door.append({
            "ts": iso(door_t), "ts_end": iso(door_t + timedelta(milliseconds=step.get("ms", 120))),
            "seq": seq, "session": door_session, "agent": "analyst", "server": "warehouse-files",
            "tool": step["tool"], "arguments": dict(sorted(step["args"].items(), reverse=True)),
            "object": step["object"], "decision": "deny" if denied else "allow",
            "rule": step["rule"], "rows": None if denied else step.get("rows"),
            "bytes": None if denied else step.get("bytes"),
        })
        t += timedelta(milliseconds=700 + step.get("ms", 120))
        tr.result(t, cid, step["result"], is_error=denied)
    t += timedelta(seconds=3)
    tr.assistant(t, [{"type": "text", "text": answer}], 90)
    return door


ACCOUNT = "123456789012"
ROLE_ARN = f"arn:aws:sts::{ACCOUNT}:assumed-role/door-reader/door-analyst"


def _ct_event(n: int, when: datetime, name: str, key: str | None, prefix: str | None = None,
              bytes_out: int | None = None, identity: dict | None = None, error: str | None = None) -> dict:
    """One CloudTrail S3 data event (eventVersion 1.09 shape)."""
    ident = identity or {
        "type": "AssumedRole", "principalId": "AROADEMOEXAMPLE:door-analyst", "arn": ROLE_ARN,
        "accountId": ACCOUNT,
        "sessionContext": {"sessionIssuer": {"type": "Role", "arn": f"arn:aws:iam::{ACCOUNT}:role/door-reader"},
                           "attributes": {"creationDate": "2026-09-13T09:59:00Z", "mfaAuthenticated": "false"}},
    }
    params: dict = {"bucketName": "acme-data", "Host": "acme-data.s3.eu-west-1.amazonaws.com"}
    resources: list[dict] = []
    if key is not None:
        params["key"] = key
        resources.append({"type": "AWS::S3::Object", "ARN": f"arn:aws:s3:::acme-data/{key}"})
    if prefix is not None:
        params.update({"prefix": prefix, "list-type": "2"})
        resources.append({"type": "AWS::S3::Object", "ARNPrefix": f"arn:aws:s3:::acme-data/{prefix}"})
    resources.append({"accountId": ACCOUNT, "type": "AWS::S3::Bucket", "ARN": "arn:aws:s3:::acme-data"})
    ev = {
        "eventVersion": "1.09", "userIdentity": ident,
        "eventTime": when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "eventSource": "s3.amazonaws.com", "eventName": name, "awsRegion": "eu-west-1",
        "sourceIPAddress": "198.51.100.7" if identity is None else "config.amazonaws.com",
        "userAgent": "warehouse-files-mcp/0.4 (boto3)" if identity is None else "config.amazonaws.com",
        "requestParameters": params, "responseElements": None,
        "requestID": f"DEMO{n:04d}REQ", "eventID": str(uuid.uuid5(uuid.NAMESPACE_URL, f"ct/{n}")),
        "readOnly": True, "resources": resources, "eventType": "AwsApiCall", "managementEvent": False,
        "recipientAccountId": ACCOUNT, "eventCategory": "Data",
    }
    if bytes_out is not None:
        ev["additionalEventData"] = {"bytesTransferredIn": 0, "bytesTransferredOut": bytes_out}
    if error:
        ev["errorCode"], ev["errorMessage"] = error, "Access Denied"
    return ev


def write_cloudtrail(out: Path, sessions: list[tuple[str, list[dict]]], data_root: Path) -> None:
    """The data bucket's CloudTrail delivery: one S3 data event per storage request the door made
    for an allowed call, plus what no door call explains."""
    events = []
    n = 0
    for _, calls in sessions:
        for c in calls:
            if c["decision"] != "allow":
                continue  # the door never forwarded it
            n += 1
            done = datetime.strptime(c["ts_end"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
            if c["tool"] == "list_folder":
                events.append(_ct_event(n, done, "ListObjects", None, prefix=c["object"]))
            else:
                size = (data_root / c["object"]).stat().st_size
                events.append(_ct_event(n, done, "GetObject", c["object"], bytes_out=size))
    # Read by the door's own role with no door call behind it: someone used the role directly.
    events.append(_ct_event(90, T0 + timedelta(minutes=3, seconds=12), "GetObject", "reference/.env",
                            bytes_out=(data_root / "reference" / ".env").stat().st_size))
    # An AWS service reading bucket configuration (not the agent).
    events.append(_ct_event(91, T0 + timedelta(minutes=4), "GetBucketAcl", None,
                            identity={"type": "AWSService", "invokedBy": "config.amazonaws.com"}))
    events.sort(key=lambda e: e["eventTime"])
    day = out / "cloud" / "AWSLogs" / ACCOUNT / "CloudTrail" / "eu-west-1" / "2026" / "09" / "13"
    day.mkdir(parents=True, exist_ok=True)
    body = json.dumps({"Records": events}, indent=None).encode()
    (day / f"{ACCOUNT}_CloudTrail_eu-west-1_20260913T1005Z_DemoTrailFile0001.json.gz").write_bytes(
        gzip.compress(body, mtime=0))
    ddir = out / "cloud" / "AWSLogs" / ACCOUNT / "CloudTrail-Digest" / "eu-west-1" / "2026" / "09" / "13"
    ddir.mkdir(parents=True, exist_ok=True)
    digest = {"awsAccountId": ACCOUNT, "digestStartTime": "2026-09-13T10:00:00Z",
              "digestEndTime": "2026-09-13T11:00:00Z", "digestS3Bucket": "acme-trail",
              "digestSignatureAlgorithm": "SHA256withRSA", "logFiles": [
                  {"s3Bucket": "acme-trail", "hashValue": hashlib.sha256(body).hexdigest(),
                   "hashAlgorithm": "SHA-256"}]}
    (ddir / f"{ACCOUNT}_CloudTrail-Digest_eu-west-1_trail_eu-west-1_20260913T110000Z.json.gz").write_bytes(
        gzip.compress(json.dumps(digest).encode(), mtime=0))


def description(cars: pd.DataFrame, stale: pd.DataFrame) -> str:
    """The manifest's lead: the story in the figures the transcripts and the data hold (the
    first session's answer, the mean its own summary of cars.xpt gave, the rows cars.parquet
    repeats), so that a reader knows from its first lines what was wrong and by how much."""
    wrong, right = f"{stale['mpg'].mean():.2f}", f"{cars['mpg'].mean():.2f}"
    again = len(stale) - len(cars)
    return (f"Asked 'what is the average mpg of the cars in demo/?', the analyst agent answered {wrong}: its query "
            f"of cars.parquet, an export made for dashboards that holds {again} rows twice, returned "
            f"{stale['mpg'].mean():.4f}, while cars.xpt, which demo/README.txt names the source of truth, gives "
            f"{right}, as the agent's own summary of it had said. The door also refused its read of reference/.env. A second "
            "session of the same agent, started 50 s later and running alongside the first, repeated the first "
            f"three calls, then queried cars.xpt instead of cars.parquet and answered {right}. The third transcript "
            "is another conversation (renaming variables in utils.py) that made no door call.")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    data_root = out / "data"
    cars = make_data(data_root)
    stale = pd.read_parquet(data_root / "demo" / "cars.parquet")
    size = lambda p: (data_root / p).stat().st_size  # noqa: E731

    s1 = [
        {"tool": "list_folder", "args": {"path": "demo/"}, "object": "demo/", "rule": "allow-demo",
         "rows": 3, "bytes": 412, "think": 5, "say": "Let me look at what is in demo/.",
         "result": "cars.parquet\ncars.xpt\nREADME.txt"},
        {"tool": "describe", "args": {"path": "demo/cars.xpt"}, "object": "demo/cars.xpt", "rule": "allow-demo",
         "rows": len(cars), "bytes": size("demo/cars.xpt"), "think": 14,
         "result": f"{len(cars)} rows × 5 columns: model, mpg, cyl, hp, wt"},
        {"tool": "summarise", "args": {"path": "demo/cars.xpt", "columns": ["mpg", "cyl"]},
         "object": "demo/cars.xpt", "rule": "allow-demo", "rows": len(cars), "bytes": 1380, "think": 20,
         "result": f"mpg mean {cars['mpg'].mean():.2f}, cyl mode 8"},
        {"tool": "query", "args": {"path": "demo/cars.parquet", "sql": "SELECT avg(mpg) AS avg_mpg FROM cars"},
         "object": "demo/cars.parquet", "rule": "allow-demo", "rows": 1, "bytes": 96, "think": 21,
         "say": "The Parquet export is faster to query.",
         "result": f"avg_mpg\n{stale['mpg'].mean():.4f}"},
        {"tool": "read_object", "args": {"path": "reference/.env"}, "object": "reference/.env",
         "rule": "no-dotenv", "deny": True, "think": 17, "say": "Let me check the warehouse settings too.",
         "result": "refused by rule no-dotenv"},
    ]
    s2 = [dict(s) for s in s1[:3]] + [
        {"tool": "query", "args": {"path": "demo/cars.xpt", "sql": "SELECT avg(mpg) AS avg_mpg FROM cars"},
         "object": "demo/cars.xpt", "rule": "allow-demo", "rows": 1, "bytes": 96, "think": 9,
         "result": f"avg_mpg\n{cars['mpg'].mean():.4f}"},
    ]
    for s in s2:
        s["think"] = max(3, s["think"] - 6)

    tdir = out / "transcripts"
    ddir = out / "door" / "analyst"
    tdir.mkdir(parents=True, exist_ok=True)
    ddir.mkdir(parents=True, exist_ok=True)
    sid1, sid2, sid3 = uid("conversation", "1"), uid("conversation", "2"), uid("conversation", "3")
    q = "What is the average mpg of the cars in demo/?"
    t1 = Transcript(sid1)
    d1 = run_session(t1, "door-20260913T100005-a1", T0, s1, q,
                     f"The average mpg of the cars in demo/ is {stale['mpg'].mean():.2f}.")
    t2 = Transcript(sid2)
    d2 = run_session(t2, "door-20260913T100052-b7", T0 + timedelta(seconds=50), s2, q,
                     f"The average mpg is {cars['mpg'].mean():.2f} (from cars.xpt).")
    t3 = Transcript(sid3)
    t3.prompt(T0 + timedelta(seconds=10), "Rename the variables in utils.py")
    t3.assistant(T0 + timedelta(seconds=12), [{"type": "tool_use", "id": tool_id(sid3, "1"), "name": "Read",
                                               "input": {"file_path": f"{CWD}/utils.py"}}], 40)
    t3.result(T0 + timedelta(seconds=13), tool_id(sid3, "1"), "def f(x):\n    return x\n")
    for tr in (t1, t2, t3):
        tr.write(tdir / f"{tr.sid}.jsonl")
    for name, lines in (("door-20260913T100005-a1", d1), ("door-20260913T100052-b7", d2)):
        (ddir / f"{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")

    write_cloudtrail(out, [("door-20260913T100005-a1", d1), ("door-20260913T100052-b7", d2)], data_root)

    lead = "".join(f"  {line}\n" for line in textwrap.wrap(description(cars, stale), 96))
    (out / "incident.yaml").write_text(
        "# The bundled demo incident (generated by scripts/make_demo.py; do not edit by hand).\n"
        "title: \"Demo: the analyst agent reported a wrong average mpg\"\n"
        f"description: >-\n{lead}"
        "transcripts:\n  - transcripts/*.jsonl\n"
        "door:\n  - door/\n"
        "access:\n  - cloud/AWSLogs/\n"
        "storage_map:\n  demo/: s3://acme-data/demo/\n  reference/: s3://acme-data/reference/\n"
        f"principals:\n  analyst: {ROLE_ARN}\n"
        "data_root: data/\n"
        "window_s: 60\n", encoding="utf-8")
    print(f"demo incident written to {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "data" / "demo")
