"""Fixtures for the report tests: a tiny hostile incident, rendered once per session.

The tiny incident has one transcript and one door session (two calls, the second refused).
Its evidence carries HTML that must come out as text: a ``<script>`` in the user prompt and in
the refused call's tool result, and an ``<img onerror>`` in a damaged transcript line (which
lands in the quarantine).

``rendered_tiny`` renders it in a *subprocess* whose PATH does not contain the venv — the way a
cron job or a CLI started by absolute path would — so every report test also checks that the
kernel runs this interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO = REPO_ROOT / "data" / "demo" / "incident.yaml"

PROMPT_XSS = '<script>alert("prompt-xss")</script> average mpg?'
RESULT_XSS = "refused by rule no-dotenv <script>alert('result-xss')</script>"
QUARANTINE_XSS = '{"type": "user", <img src=x onerror=alert("q-xss")>'

SESSION = "11111111-aaaa-4aaa-8aaa-111111111111"
DOOR_SESSION = "door-sess-tiny"


def _line(uuid: str, parent: str | None, ts: str, typ: str, message: dict, **extra) -> str:
    d = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/a",
         "sessionId": SESSION, "version": "2.0.55", "type": typ, "uuid": uuid, "timestamp": ts,
         "message": message}
    d.update(extra)
    return json.dumps(d)


def write_tiny_incident(root: Path) -> Path:
    """Write the tiny incident under ``root/tiny-incident`` and return its ``incident.yaml``."""
    inc = root / "tiny-incident"
    (inc / "transcripts").mkdir(parents=True)
    (inc / "door" / "analyst").mkdir(parents=True)
    lines = [
        _line("u1", None, "2026-09-13T10:00:00.000Z", "user", {"role": "user", "content": PROMPT_XSS}),
        _line("a1", "u1", "2026-09-13T10:00:05.000Z", "assistant",
              {"model": "claude-sonnet-4-5", "id": "msg_1", "type": "message", "role": "assistant",
               "content": [{"type": "tool_use", "id": "toolu_read_1", "name": "mcp__door__read_object",
                            "input": {"path": "demo/cars.csv"}}],
               "usage": {"input_tokens": 5, "output_tokens": 9}}, requestId="req_1"),
        _line("r1", "a1", "2026-09-13T10:00:05.900Z", "user",
              {"role": "user", "content": [{"tool_use_id": "toolu_read_1", "type": "tool_result",
                                            "content": "ok: 32 rows", "is_error": False}]}),
        QUARANTINE_XSS,
        _line("a2", "r1", "2026-09-13T10:00:20.000Z", "assistant",
              {"model": "claude-sonnet-4-5", "id": "msg_2", "type": "message", "role": "assistant",
               "content": [{"type": "tool_use", "id": "toolu_env_2", "name": "mcp__door__read_object",
                            "input": {"path": "reference/.env"}}],
               "usage": {"input_tokens": 5, "output_tokens": 9}}, requestId="req_2"),
        _line("r2", "a2", "2026-09-13T10:00:20.800Z", "user",
              {"role": "user", "content": [{"tool_use_id": "toolu_env_2", "type": "tool_result",
                                            "content": RESULT_XSS, "is_error": True}]}),
    ]
    (inc / "transcripts" / f"{SESSION}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    door = [
        {"ts": "2026-09-13T10:00:05.400Z", "seq": 1, "session": DOOR_SESSION, "agent": "analyst",
         "tool": "read_object", "arguments": {"path": "demo/cars.csv"}, "object": "demo/cars.csv",
         "decision": "allow", "rule": "allow-demo", "rows": 32, "bytes": 2048},
        {"ts": "2026-09-13T10:00:20.400Z", "seq": 2, "session": DOOR_SESSION, "agent": "analyst",
         "tool": "read_object", "arguments": {"path": "reference/.env"}, "object": "reference/.env",
         "decision": "deny", "rule": "no-dotenv", "rows": None, "bytes": None},
    ]
    (inc / "door" / "analyst" / f"{DOOR_SESSION}.jsonl").write_text(
        "".join(json.dumps(d) + "\n" for d in door), encoding="utf-8")
    (inc / "incident.yaml").write_text(
        "title: Tiny <b>hostile</b> incident\ntranscripts:\n  - transcripts/*.jsonl\ndoor:\n  - door/\nwindow_s: 60\n",
        encoding="utf-8")
    return inc / "incident.yaml"


def _iso(sec: float) -> str:
    """A Unix time in seconds as a transcript writes it (UTC, milliseconds, ``Z``)."""
    return datetime.fromtimestamp(sec, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _count_lines(data: bytes) -> int:
    """Lines as ``wc -l`` counts them, plus an unterminated last one."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def write_wide_incident(root: Path, sessions: int) -> dict:
    """Write an incident of many small files under ``root/wide-incident``: ``sessions``
    transcripts (``transcripts/``) and as many one-call door logs, split between
    ``door/analyst/`` and ``door/auditor/``, plus the files a long Inputs list must put first:
    three door logs with a damaged line, a byte-identical copy of one (``door-backup/``), a file
    no source reads, a door log outside the manifest's folder (named by absolute path) and one
    whose name holds a backslash and a newline.

    Returns ``{"manifest": Path, "root": Path, "files": [...]}``; each file is ``{"path"`` (as the
    report's Inputs shows it: relative to the incident folder, absolute outside it), ``"format"``
    (``None`` for the unreadable one), ``"bytes"``, ``"lines"`` (``None`` where no source read
    the file), ``"noted"`` (the report gives it a note)``}``, the manifest first."""
    inc = root / "wide-incident"
    for d in ("transcripts", "door/analyst", "door/auditor", "door-backup"):
        (inc / d).mkdir(parents=True)
    outside = root / "elsewhere"
    outside.mkdir()
    files: list[tuple[Path, str | None, bool]] = []
    t0 = datetime(2026, 9, 13, 10, tzinfo=timezone.utc).timestamp()
    for i in range(sessions):
        sid, ts = f"{i:08d}-aaaa-4aaa-8aaa-{i:012d}", t0 + 120 * i
        tr = [
            _line(f"u{i}", None, _iso(ts), "user", {"role": "user", "content": f"read f{i}"}, sessionId=sid),
            _line(f"a{i}", f"u{i}", _iso(ts + 5), "assistant",
                  {"model": "claude-sonnet-4-5", "id": f"msg_{i}", "type": "message", "role": "assistant",
                   "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "mcp__door__read_object",
                                "input": {"path": f"data/f{i}.csv"}}]}, sessionId=sid),
            _line(f"r{i}", f"a{i}", _iso(ts + 6), "user",
                  {"role": "user", "content": [{"tool_use_id": f"toolu_{i}", "type": "tool_result",
                                                "content": "ok", "is_error": False}]}, sessionId=sid),
        ]
        p = inc / "transcripts" / f"{sid}.jsonl"
        p.write_text("\n".join(tr) + "\n", encoding="utf-8")
        files.append((p, "claude-code", False))
        agent = ("analyst", "auditor")[i % 2]
        call = {"ts": _iso(ts + 5.4), "seq": 1, "session": f"door-{i:05d}", "agent": agent,
                "tool": "read_object", "arguments": {"path": f"data/f{i}.csv"}, "object": f"data/f{i}.csv",
                "decision": "allow", "rule": "allow-data", "rows": i, "bytes": 100 + i}
        text = json.dumps(call) + "\n"
        damaged = i % (sessions // 3 or 1) == 1
        if damaged:  # a line cut off: set aside, and the file gets a note
            text += '{"ts": "2026-09-13T10:00:0\n'
        p = inc / "door" / agent / f"door-{i:05d}.jsonl"
        p.write_text(text, encoding="utf-8")
        files.append((p, "door", damaged))
    copy = inc / "door-backup" / "door-00000.jsonl"
    copy.write_bytes((inc / "door" / "analyst" / "door-00000.jsonl").read_bytes())
    files.append((copy, "door", True))  # "same content as …: read once"
    junk = inc / "door" / "auditor" / "notes.bin"
    junk.write_bytes(bytes(range(256)) * 2)
    files.append((junk, None, True))  # "skipped: no source recognised this content"
    odd = inc / "door" / "analyst" / "odd\\name\nx.jsonl"
    odd.write_text(json.dumps(dict(call, session="door-odd", ts="2026-09-30T10:00:00.000Z")) + "\n", encoding="utf-8")
    files.append((odd, "door", False))
    far = outside / "door-far.jsonl"
    far.write_text(json.dumps(dict(call, session="door-far", ts="2026-09-30T11:00:00.000Z")) + "\n", encoding="utf-8")
    files.append((far, "door", False))
    (inc / "incident.yaml").write_text(
        f"title: Wide incident\ntranscripts:\n  - transcripts/\ndoor:\n  - door/\n  - door-backup/\n"
        f"  - {json.dumps(str(far))}\nwindow_s: 60\n", encoding="utf-8")
    out = []
    for p, fmt, noted in [(inc / "incident.yaml", "manifest", False), *files]:
        data = p.read_bytes()
        shown = str(p.relative_to(inc)) if p.is_relative_to(inc) else str(p)
        out.append({"path": shown, "format": fmt, "bytes": len(data),
                    "lines": None if fmt is None else _count_lines(data), "noted": noted})
    return {"manifest": inc / "incident.yaml", "root": inc, "files": out}


def clean_env() -> dict:
    """The environment without the venv on PATH (nor VIRTUAL_ENV)."""
    venv_bin = os.path.dirname(sys.executable)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
                                  if p and os.path.abspath(p) != os.path.abspath(venv_bin)) or "/usr/bin:/bin"
    return env


def render_in_subprocess(incident: Path, out_dir: Path) -> dict:
    """Run ``render_report`` in a fresh interpreter (venv python by absolute path, venv not on
    PATH); return ``{"ipynb", "html", "seconds", "attempts", "findings", "checksums"}``."""
    code = (
        "import json, sys\n"
        "from replaybook.report.render import render_report\n"
        "p = render_report(sys.argv[1], sys.argv[2], timeout=300)\n"
        "print(json.dumps({'ipynb': str(p.ipynb), 'html': str(p.html), 'seconds': p.seconds, "
        "'attempts': p.attempts, 'findings': p.findings, 'checksums': p.checksums and str(p.checksums)}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(incident), str(out_dir)], env=clean_env(),
                          capture_output=True, text=True, timeout=900, cwd="/")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def tiny_incident(tmp_path_factory) -> Path:
    """The tiny hostile incident's ``incident.yaml``."""
    return write_tiny_incident(tmp_path_factory.mktemp("inc"))


@pytest.fixture(scope="session")
def rendered_tiny(tiny_incident, tmp_path_factory) -> dict:
    """The tiny incident rendered once (subprocess, venv not on PATH)."""
    return render_in_subprocess(tiny_incident, tmp_path_factory.mktemp("out"))


@pytest.fixture(scope="session")
def hostile() -> dict:
    """The hostile strings planted in the tiny incident."""
    return {"prompt": PROMPT_XSS, "result": RESULT_XSS, "quarantine": QUARANTINE_XSS}


@pytest.fixture(scope="session")
def render_subprocess():
    """:func:`render_in_subprocess` (render in a fresh interpreter, venv not on PATH)."""
    return render_in_subprocess


@pytest.fixture(scope="session")
def wide_incident(tmp_path_factory) -> dict:
    """An incident of 600 one-call sessions' files and a few odd ones (:func:`write_wide_incident`)."""
    return write_wide_incident(tmp_path_factory.mktemp("wide"), 300)


@pytest.fixture(scope="session")
def rendered_wide(wide_incident, tmp_path_factory) -> dict:
    """The wide incident rendered once (subprocess, venv not on PATH)."""
    return render_in_subprocess(wide_incident["manifest"], tmp_path_factory.mktemp("wide-out"))


@pytest.fixture(scope="session")
def demo_incident() -> Path:
    """``data/demo/incident.yaml`` (committed; regenerate with ``make demo-data``)."""
    assert DEMO.exists(), f"demo incident {DEMO} is missing: run `make demo-data`"
    return DEMO


@pytest.fixture(scope="session")
def rendered_demo(demo_incident, tmp_path_factory) -> dict:
    """The demo incident rendered once (subprocess, venv not on PATH)."""
    return render_in_subprocess(demo_incident, tmp_path_factory.mktemp("demo-out"))


#: The cloud-access case: a support agent's door calls, a storage_map whose ``customer/`` entry
#: misses the door's ``customers/`` folder, and a CloudTrail trail and S3 server access log
#: that hold one request the door made (linked), one it made on an object nothing maps, and one
#: made around it (in both logs, under one request id), with log files the loaders set aside.
CT_DIR = "cloud/AWSLogs/123456789012/CloudTrail/eu-west-1/2026/11/20/"
CT_FILE = CT_DIR + "123456789012_CloudTrail_eu-west-1_20261120T1410Z_Hu1TrailFile0002.json.gz"
CT_CUT = CT_DIR + "123456789012_CloudTrail_eu-west-1_20261120T1415Z_Hu1TrailFile0003.json"
CT_SALVAGED = CT_DIR + "123456789012_CloudTrail_eu-west-1_20261120T1420Z_Hu1TrailFile0004.json"
S3_LOG = "cloud/s3-access/acme-support-data-2026-11-20-14-10-00-HU1EXAMPLE"
ROLE = "arn:aws:sts::123456789012:assumed-role/support-agent-reader/door-support"


@pytest.fixture()
def cloud_case() -> dict:
    """Frames of the cloud-access case (``calls``, ``access`` with the loaders' absolute
    ``source_file``, ``quarantine`` and ``inputs`` with the paths Inputs shows) and its join."""
    import pandas as pd

    from replaybook.access_join import join_access
    from replaybook.frames import ACCESS, CALLS, QUARANTINE

    t0 = pd.Timestamp("2026-11-20T14:00:00Z")

    def at(sec: float) -> pd.Timestamp:
        return t0 + pd.Timedelta(seconds=sec)

    calls = CALLS.build([
        dict(door_session="door-20261120T140005-k9", agent="support", seq=seq, ts=at(sec), ts_end=at(sec + 1),
             tool="read_object", object=obj, decision=dec, rule=rule)
        for seq, sec, obj, dec, rule in (
            (1, 10, "tickets/2026-11/ACME-4411.json", "allow", "allow-tickets"),
            (2, 20, "customers/ACME-4411/profile.json", "allow", "allow-customers"),
            (3, 40, "customers/ACME-4412/profile.json", "allow", "allow-customers"),
            (4, 60, "secrets/stripe.env", "deny", "deny-secrets"))])
    base = "/home/investigator/cases/hu1/"

    def req(sec, source, key, rid, f, line, ip="198.51.100.20", ua="cloud-files-mcp/1.2 (boto3)", event=None):
        raw = {"sourceIPAddress": ip} if source == "aws.cloudtrail" else {"remote_ip": ip}
        if event:
            raw["eventID"] = event
        return dict(ts=at(sec), time_kind="completed" if source == "aws.cloudtrail" else "received", source=source,
                    principal=ROLE, action="read", action_raw="GetObject" if source == "aws.cloudtrail"
                    else "REST.GET.OBJECT", resource_uri="s3://acme-support-data/" + key, outcome="allowed",
                    bytes=512, request_id=rid, user_agent=ua, raw=raw, source_file=base + f, line_no=line)

    access = ACCESS.build([
        req(10, "aws.cloudtrail", "tickets/2026-11/ACME-4411.json", "HU1S30001EXAMPLE", CT_FILE, 1, event="ev-1"),
        req(21, "aws.cloudtrail", "customers/ACME-4411/profile.json", "HU1S30002EXAMPLE", CT_FILE, 2, event="ev-2"),
        req(200, "aws.cloudtrail", "customers/ACME-5000/payment.json", "HU1S3ROGUEEXAMPLE", CT_FILE, 3,
            ip="203.0.113.66", ua="curl/8.5.0", event="10ced693-e374-5127-b54e-bb0b2e0daa50"),
        req(200, "aws.s3_access", "customers/ACME-5000/payment.json", "HU1S3ROGUEEXAMPLE", S3_LOG, 6,
            ip="203.0.113.66", ua="curl/8.5.0"),
    ])
    quarantine = QUARANTINE.build([
        dict(source_file="door/support/door-20261120T140005-k9.jsonl", line_no=6, kind="invalid", loader="door",
             error="invalid JSON", raw="{"),
        dict(source_file=CT_CUT, line_no=1, byte_offset=0, kind="invalid", loader="aws.cloudtrail",
             error="invalid JSON: Unterminated string starting at column 702", raw='{"Records": [{'),
        dict(source_file=CT_SALVAGED, line_no=2, kind="invalid", loader="aws.cloudtrail", error="not a record",
             raw="[]"),
        dict(source_file=CT_SALVAGED, line_no=5, kind="invalid", loader="aws.cloudtrail", error="not a record",
             raw="7"),
        dict(source_file=S3_LOG, line_no=3, kind="invalid", loader="aws.s3_access",
             error="not an S3 server access log line (fields do not match the format)", raw="8f1c0a7e acme"),
    ])
    inputs = [{"path": "incident.yaml", "format": "manifest"},
              {"path": CT_FILE, "format": "aws.cloudtrail", "records": 3, "numbered": "record"},
              {"path": CT_CUT, "format": "aws.cloudtrail", "records": 0},
              {"path": CT_SALVAGED, "format": "aws.cloudtrail", "records": 3, "numbered": "record"},
              {"path": S3_LOG, "format": "aws.s3_access", "records": 1}]
    storage_map = {"tickets/": "s3://acme-support-data/tickets/", "customer/": "s3://acme-support-data/customers/"}
    res = join_access(calls, access, storage_map=storage_map,
                      principals={"support": "arn:aws:sts::123456789012:assumed-role/support-agent-reader/*"})
    return dict(calls=calls, access=access, quarantine=quarantine, inputs=inputs, result=res,
                storage_map=storage_map)


def otel_tool_span(sid: str, start_s: int, tool: str, args: dict) -> dict:
    """An OTLP JSON span of one GenAI ``execute_tool`` call in conversation ``conv-1`` (100 ms
    long, ``start_s`` seconds after 2026-11-30T14:00:00Z), as an OTel-instrumented agent writes it."""
    at = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "gen_ai.tool.call.id": sid,
          "gen_ai.conversation.id": "conv-1", "gen_ai.tool.call.arguments": json.dumps(args),
          "mcp.method.name": "tools/call"}
    ns = 1_796_047_200_000_000_000 + start_s * 1_000_000_000
    return {"traceId": "a1" * 16, "spanId": sid, "name": f"execute_tool {tool}", "kind": 1,
            "startTimeUnixNano": str(ns), "endTimeUnixNano": str(ns + 100_000_000),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in at.items()]}

