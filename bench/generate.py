"""Deterministic (seeded) benchmark data for replaybook.

Three generators:

* :func:`gen_transcripts` — Claude Code session JSONL files (``<root>/<project>/<uuid>.jsonl``,
  a few flat ``agent-<id>.jsonl`` sub-agent files): user prompts, assistant responses streamed
  one content block per line (thinking / text / tool_use lines sharing ``message.id`` +
  ``requestId``, growing ``usage``), ``mcp__door__<tool>`` and built-in tool calls with small
  argument dicts, tool_result lines (string or block content, varied size, ~2 % of tens of KB,
  with the ``toolUseResult`` copy Claude Code writes), bookkeeping lines
  (file-history-snapshot, progress, system/turn_duration, queue-operation, last-prompt).
* :func:`gen_door` — a door call log (``<root>/<agent>/<session>.jsonl``, schema
  ``door-call-log.v1``) whose arguments come from a Zipf-shaped pool, so many sessions share the
  same (tool, arguments); some sessions log ``meta`` tool-use ids, some lines carry
  ``response_digest`` / ``duration_ms`` (evidence-keeping doors), some are refused or failed.
* :func:`build_join_frames` — in-memory ``steps`` (tool_call rows only) and ``calls`` frames with
  the exact STEPS / CALLS columns and dtypes, built with numpy (no files, no ``FrameSpec.build``).
* :func:`build_result_join_frames` — in-memory frames of many door sessions running at once, whose
  Codex transcripts lack some tool calls' lines (only the results remain): the join's tier that
  pairs such a result with a door call by its tool and time.
* :func:`build_access_frames` — in-memory ``calls`` and ``access`` frames for the door-call ↔
  cloud-access join (CloudTrail- and S3-server-access-like rows, duplicates, unexplained rows).

Every generator takes a seed; the same parameters give byte-identical output.  A
``manifest.json`` beside the data records the parameters and file sizes so ``run.py`` can tell
whether data on disk is current.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import orjson

GEN_VERSION = 1
CLOUD_GEN_VERSION = 2  # CloudTrail / S3 access data (bump to regenerate only those)
EPOCH_MS = int(datetime(2026, 9, 1, tzinfo=timezone.utc).timestamp() * 1000)

DOOR_TOOLS = ("list_folder", "describe", "summarise", "query", "read_object", "search",
              "render_chart", "sample_rows")
BUILTIN_TOOLS = ("Read", "Bash", "Grep", "Edit", "Glob", "TodoWrite")
WORDS = ("the of and to in is that for it as with was on be by this are from at or an have not "
         "table column rows mpg cyl hp wt cars parquet xpt csv schema value mean median null "
         "error warning select where group order limit join file folder path demo data "
         "reference report summary analysis result query count total average latency 42 3.14 "
         "ÿes naïve café 東京 données straße").split()


# --------------------------------------------------------------------------- helpers

def iso(ms: int) -> str:
    """Epoch milliseconds → RFC 3339 UTC with milliseconds and 'Z'."""
    s, ms = divmod(int(ms), 1000)
    return datetime.fromtimestamp(s, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{ms:03d}Z"


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:]}"


def _corpus(seed: int, n: int = 1 << 20) -> str:
    """About ``n`` characters of seeded filler text to slice prose and tool output from."""
    r = random.Random(seed)
    parts, size = [], 0
    while size < n:
        line = " ".join(r.choice(WORDS) for _ in range(r.randint(4, 16)))
        parts.append(line)
        size += len(line) + 1
    return "\n".join(parts)


class _Text:
    def __init__(self, seed: int) -> None:
        self.c = _corpus(seed)
        self.n = len(self.c)

    def get(self, r: random.Random, size: int) -> str:
        size = max(1, min(size, self.n - 1))
        i = r.randrange(0, self.n - size)
        return self.c[i:i + size]


def _args_pool(seed: int, n: int) -> list[tuple[str, dict]]:
    """``n`` distinct (door tool, small arguments dict) pairs; index 0 is the most popular."""
    r = random.Random(seed)
    out, seen = [], set()
    folders = ["demo/", "reference/", "warehouse/", "finance/2026/", "hr/", "sales/q3/", "/"]
    while len(out) < n:
        tool = DOOR_TOOLS[min(int(r.expovariate(0.45)), len(DOOR_TOOLS) - 1)]
        folder = folders[min(int(r.expovariate(0.6)), len(folders) - 1)]
        obj = f"{folder}{r.choice(['cars', 'orders', 'events', 'users', 'ledger'])}_{r.randrange(n // 4 + 1)}." \
              f"{r.choice(['parquet', 'xpt', 'csv'])}"
        if tool == "list_folder":
            args = {"path": folder if r.random() < 0.3 else obj.rsplit('/', 1)[0] + f"/p{r.randrange(n)}/"}
        elif tool == "query":
            args = {"path": obj, "sql": f"SELECT {r.choice(['avg', 'sum', 'max'])}(mpg) FROM t "
                                        f"WHERE cyl = {r.randrange(12)} LIMIT {r.randrange(1, 1000)}"}
        elif tool == "summarise":
            args = {"path": obj, "columns": r.sample(["mpg", "cyl", "hp", "wt", "qsec", "gear"], r.randint(1, 4))}
        elif tool == "search":
            args = {"pattern": " ".join(r.sample(WORDS, 2)), "path": folder, "max_results": r.choice([10, 50, 100])}
        elif tool == "sample_rows":
            args = {"path": obj, "n": r.choice([5, 10, 20]), "seed": r.randrange(100)}
        else:
            args = {"path": obj}
        key = (tool, orjson.dumps(args, option=orjson.OPT_SORT_KEYS))
        if key in seen:
            continue
        seen.add(key)
        out.append((tool, args))
    return out


def _zipf_index(r: random.Random, n: int, a: float = 1.1) -> int:
    """Index in [0, n) with P(k) roughly ∝ 1/(k+1)^a (inverse-CDF of a continuous power law)."""
    u = r.random()
    x = ((n + 1) ** (1 - a) - 1) * u + 1
    return min(int(x ** (1 / (1 - a))) - 1, n - 1)


_GLOBS = {"cloudtrail": "*.json.gz", "s3": "*-*-*-*-*-*-*"}


def _dir_bytes(root: Path, pattern: str = "*.jsonl") -> tuple[int, int]:
    files = [p for p in root.rglob(pattern) if p.is_file() and p.name != "manifest.json"]
    return len(files), sum(p.stat().st_size for p in files)


def manifest_ok(root: Path, params: dict) -> bool:
    """True when ``root/manifest.json`` records ``params`` and the files on disk match it."""
    m = root / "manifest.json"
    try:
        got = json.loads(m.read_text())
    except (OSError, ValueError):
        return False
    if got.get("params") != params:
        return False
    return _dir_bytes(root, _GLOBS.get(params.get("kind"), "*.jsonl")) == (got.get("files"), got.get("bytes"))


def _write_manifest(root: Path, params: dict, extra: dict | None = None) -> dict:
    files, size = _dir_bytes(root, _GLOBS.get(params.get("kind"), "*.jsonl"))
    m = {"params": params, "files": files, "bytes": size, **(extra or {})}
    (root / "manifest.json").write_text(json.dumps(m, indent=1))
    return m


def _fresh(root: Path) -> None:
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)


# --------------------------------------------------------------------------- transcripts

def _transcript_job(job: tuple) -> int:
    """Write one transcript file of about ``target`` bytes; returns bytes written."""
    path, seed, target, start_ms, is_agent, pool_n = job
    r = random.Random(seed)
    text = _TEXT
    pool = _POOL
    session = Path(path).stem if not is_agent else _uuid(r)
    agent_id = Path(path).stem[6:] if is_agent else None
    version = r.choice(["2.0.55", "2.1.42", "2.1.152", "1.0.98"])
    cwd = f"/home/{r.choice(['analyst', 'dev', 'ops'])}/project-{r.randrange(50)}"
    t = start_ms
    parent = None
    out: list[bytes] = []
    size = 0
    dumps = orjson.dumps

    def common(kind: str) -> dict:
        nonlocal parent
        u = _uuid(r)
        d = {"parentUuid": parent, "isSidechain": is_agent, "userType": "external", "cwd": cwd,
             "sessionId": session, "version": version, "gitBranch": "main", "type": kind,
             "uuid": u, "timestamp": iso(t)}
        if is_agent:
            d["agentId"] = agent_id
        parent = u
        return d

    def emit(o: dict) -> None:
        nonlocal size
        b = dumps(o)
        out.append(b)
        size += len(b) + 1

    if not is_agent and r.random() < 0.5:
        emit({"type": "queue-operation", "operation": "enqueue", "timestamp": iso(t), "sessionId": session})
    while size < target:
        # one turn: a prompt, then model requests until the model stops calling tools
        t += int(r.expovariate(1 / 20000)) + 500
        prompt_uuid = None
        d = common("user")
        prompt_uuid = d["uuid"]
        if not is_agent:
            emit({"type": "file-history-snapshot", "messageId": prompt_uuid,
                  "snapshot": {"messageId": prompt_uuid, "trackedFileBackups": {}, "timestamp": iso(t)},
                  "isSnapshotUpdate": False})
        d["message"] = {"role": "user", "content": text.get(r, int(r.lognormvariate(5.0, 1.0)) + 10)}
        emit(d)
        in_tok = r.randrange(2000, 60000)
        for _ in range(max(1, int(r.expovariate(1 / 6)))):
            t += int(r.expovariate(1 / 4000)) + 300
            mid = f"msg_01{r.getrandbits(96):024x}"
            rid = f"req_01{r.getrandbits(88):022x}"
            model = r.choice(["claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"])
            out_tok = 0
            blocks: list[dict] = []
            if r.random() < 0.4:
                blocks.append({"type": "thinking", "thinking": text.get(r, int(r.lognormvariate(6, 1))),
                               "signature": f"{r.getrandbits(256):064x}"})
            if r.random() < 0.7:
                blocks.append({"type": "text", "text": text.get(r, int(r.lognormvariate(5.5, 1.0)) + 5)})
            n_tools = 0 if r.random() < 0.15 else min(1 + int(r.expovariate(1.5)), 4)
            uses = []
            for _ in range(n_tools):
                tid = f"toolu_01{r.getrandbits(96):024x}"
                if r.random() < 0.75:
                    tool, args = pool[_zipf_index(r, pool_n)]
                    name = f"mcp__door__{tool}"
                else:
                    name = r.choice(BUILTIN_TOOLS)
                    args = {"file_path": f"{cwd}/src/m{r.randrange(500)}.py"} if name != "Bash" else \
                        {"command": f"ls -la {cwd}/data{r.randrange(40)}", "description": "List files"}
                blocks.append({"type": "tool_use", "id": tid, "name": name, "input": args})
                uses.append(tid)
            if not blocks:
                blocks.append({"type": "text", "text": "Done."})
            for i, b in enumerate(blocks):
                out_tok += r.randrange(5, 200)
                d = common("assistant")
                d["message"] = {"model": model, "id": mid, "type": "message", "role": "assistant",
                                "content": [b],
                                "stop_reason": ("tool_use" if uses else "end_turn") if i == len(blocks) - 1 else None,
                                "stop_sequence": None,
                                "usage": {"input_tokens": in_tok, "cache_creation_input_tokens": r.randrange(2000),
                                          "cache_read_input_tokens": r.randrange(40000), "output_tokens": out_tok,
                                          "service_tier": "standard"}}
                d["requestId"] = rid
                emit(d)
            if r.random() < 0.1:
                emit({"parentUuid": parent, "isSidechain": is_agent, "type": "progress",
                      "data": {"type": "hook_progress", "hookEvent": "PreToolUse", "hookName": "PreToolUse:mcp"},
                      "toolUseID": uses[0] if uses else None, "parentToolUseID": None,
                      "uuid": _uuid(r), "timestamp": iso(t), "sessionId": session})
            for tid in uses:
                t += int(r.expovariate(1 / 1500)) + 50
                big = r.random() < 0.02
                n = r.randrange(20000, 80000) if big else int(r.lognormvariate(6.3, 1.2)) + 5
                body = text.get(r, n)
                err = r.random() < 0.04
                if err:
                    body = "Error: refused by rule " + r.choice(["no-dotenv", "default-deny", "pii-columns"])
                content = body if r.random() < 0.6 else [{"type": "text", "text": body}]
                d = common("user")
                d["message"] = {"role": "user", "content": [
                    {"tool_use_id": tid, "type": "tool_result", "content": content, "is_error": err}]}
                if r.random() < 0.7:
                    d["toolUseResult"] = body if err else {"content": [{"type": "text", "text": body}]}
                emit(d)
            in_tok += out_tok + r.randrange(100, 3000)
            if not uses or size >= target:
                break
        if not is_agent:
            emit({"type": "system", "subtype": "turn_duration", "durationMs": r.randrange(1000, 300000),
                  "timestamp": iso(t), "uuid": _uuid(r), "parentUuid": parent, "sessionId": session,
                  "isMeta": False})
            if r.random() < 0.3:
                emit({"type": "last-prompt", "leafUuid": parent, "sessionId": session})
    with open(path, "wb") as fh:
        fh.write(b"\n".join(out) + b"\n")
    return size


_TEXT: _Text | None = None
_POOL: list | None = None


def _init_worker(seed: int, pool_n: int) -> None:
    global _TEXT, _POOL
    _TEXT = _Text(seed)
    _POOL = _args_pool(seed, pool_n)


def gen_transcripts(root: Path, n_files: int, total_bytes: int, seed: int = 1, workers: int = 2) -> dict:
    """Write ``n_files`` transcripts totalling about ``total_bytes`` under ``root`` (replaced)."""
    params = {"kind": "transcripts", "v": GEN_VERSION, "files": n_files, "bytes": total_bytes, "seed": seed}
    if manifest_ok(root, params):
        return json.loads((root / "manifest.json").read_text())
    _fresh(root)
    r = random.Random(seed)
    # heavy-tailed file sizes (most sessions small, a few several MB), scaled to the total
    w = [r.lognormvariate(0, 1.0) for _ in range(n_files)]
    scale = total_bytes / sum(w)
    pool_n = 20000
    jobs = []
    for i in range(n_files):
        project = root / f"-home-user-project-{i % 12:02d}"
        project.mkdir(exist_ok=True)
        is_agent = r.random() < 0.05
        name = f"agent-{r.getrandbits(32):08x}" if is_agent else _uuid(r)
        start = EPOCH_MS + r.randrange(0, 14 * 86400_000)
        jobs.append((str(project / f"{name}.jsonl"), seed * 1_000_003 + i, int(w[i] * scale * 0.94), start, is_agent, pool_n))
    with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(seed, pool_n)) as ex:
        list(ex.map(_transcript_job, jobs, chunksize=8))
    return _write_manifest(root, params)


# --------------------------------------------------------------------------- door log

def _door_job(job: tuple) -> int:
    path, seed, n_lines, start_ms, agent, session, pool_n = job
    r = random.Random(seed)
    pool = _POOL
    meta = r.random() < 0.3           # door logs the client's _meta (tool-use ids)
    evidence = r.random() < 0.15      # door keeps evidence: response_digest + duration_ms
    server = r.choice(["warehouse-files", "warehouse-sql", "door-upstream"])
    t = start_ms
    out = []
    dumps = orjson.dumps
    for seq in range(1, n_lines + 1):
        t += int(r.expovariate(1 / 15000)) + 100
        tool, args = pool[_zipf_index(r, pool_n)]
        dur = int(r.expovariate(1 / 150)) + 1
        deny = r.random() < 0.05
        o = {"ts": iso(t), "ts_end": iso(t + dur), "seq": seq, "session": session, "agent": agent,
             "server": server, "tool": tool, "arguments": args,
             "object": args.get("path"), "decision": "deny" if deny else "allow",
             "rule": r.choice(["no-dotenv", "default-deny"]) if deny else r.choice(["allow-demo", "allow-read", "allow-sql"]),
             "rows": None if deny else r.randrange(0, 5000), "bytes": None if deny else int(r.lognormvariate(7, 2))}
        if not deny and r.random() < 0.01:
            o["error"] = "upstream timeout after 30s"
        if meta:
            o["meta"] = {"claudecode/toolUseId": f"toolu_01{r.getrandbits(96):024x}", "progressToken": seq}
        if evidence:
            o["v"] = 1
            o["duration_ms"] = float(dur)
            o["response_digest"] = f"sha256:{r.getrandbits(256):064x}"
        out.append(dumps(o))
    with open(path, "wb") as fh:
        fh.write(b"\n".join(out) + b"\n")
    return n_lines


def gen_door(root: Path, n_lines: int, seed: int = 2, workers: int = 2, mean_session: int = 100) -> dict:
    """Write a door log of ``n_lines`` lines across ~``n_lines/mean_session`` sessions under ``root``."""
    params = {"kind": "door", "v": GEN_VERSION, "lines": n_lines, "seed": seed, "mean_session": mean_session}
    if manifest_ok(root, params):
        return json.loads((root / "manifest.json").read_text())
    _fresh(root)
    r = random.Random(seed)
    agents = [f"agent-{a}" for a in ("analyst", "etl", "support", "finance", "research", "ops")] + \
             [f"svc-{i:02d}" for i in range(18)]
    pool_n = 20000
    jobs, left, i = [], n_lines, 0
    while left > 0:
        n = min(left, max(1, int(r.lognormvariate(np.log(mean_session) - 0.5, 1.0))), 20000)
        left -= n
        agent = agents[min(int(r.expovariate(0.25)), len(agents) - 1)]
        start = EPOCH_MS + r.randrange(0, 14 * 86400_000)
        session = f"door-{datetime.fromtimestamp(start / 1000, timezone.utc):%Y%m%dT%H%M%S}-{r.getrandbits(24):06x}"
        (root / agent).mkdir(exist_ok=True)
        jobs.append((str(root / agent / f"{session}.jsonl"), seed * 1_000_003 + i, n, start, agent, session, pool_n))
        i += 1
    with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(seed, pool_n)) as ex:
        list(ex.map(_door_job, jobs, chunksize=32))
    return _write_manifest(root, params, {"sessions": len(jobs), "lines": n_lines})


# --------------------------------------------------------------------------- CloudTrail / S3 access logs

_CT_ACCOUNT = "123456789012"
_CT_REGIONS = ("eu-west-1", "us-east-1")
_CT_BUCKETS = ("acme-data", "acme-reports", "acme-raw", "acme-ml")
_CT_ROLES = ("door-reader", "etl-writer", "analyst", "ml-train")
_CT_UA = ("[aws-sdk-java/1.12.588 Linux/5.10 OpenJDK_64-Bit_Server_VM/17.0.9+9-LTS java/17.0.9 vendor/Amazon.com_Inc.]",
          "[Boto3/1.34.11 md/Botocore#1.34.11 ua/2.0 os/linux#5.15 md/arch#x86_64 lang/python#3.11.7 md/pyimpl#CPython "
          "cfg/retry-mode#legacy Botocore/1.34.11]", "door/1.2", "[aws-cli/2.15.8 Python/3.11.6 Linux/6.1 exe/x86_64.amzn.2]")
_S3_OPS = (("GetObject", "REST.GET.OBJECT", "GET", True, 0.55), ("ListObjects", "REST.GET.BUCKET", "GET", True, 0.15),
           ("HeadObject", "REST.HEAD.OBJECT", "HEAD", True, 0.12), ("PutObject", "REST.PUT.OBJECT", "PUT", False, 0.12),
           ("DeleteObject", "REST.DELETE.OBJECT", "DELETE", False, 0.06))


def _s3_op(r: random.Random) -> tuple:
    x = r.random()
    for op in _S3_OPS:
        x -= op[4]
        if x < 0:
            return op
    return _S3_OPS[0]


def _ct_key(r: random.Random, pool_n: int) -> str:
    tool, args = _POOL[_zipf_index(r, pool_n)]
    p = args.get("path") if isinstance(args.get("path"), str) else ""
    p = p.strip("/ ").replace(" ", "_") or f"{tool}/{r.getrandbits(20):05x}"
    return p + r.choice([".csv", ".parquet", ".json", ".sas7bdat", ""])


def _ct_record(r: random.Random, t_ms: int, region: str, pool_n: int) -> dict:
    role = r.choice(_CT_ROLES)
    sess = f"{role}-{r.getrandbits(16):04x}"
    ip = f"198.51.{r.randrange(256)}.{r.randrange(1, 255)}"
    ev_time = datetime.fromtimestamp(t_ms // 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    common = {"eventVersion": "1.09"}
    if r.random() < 0.08:                         # management events: STS from AWS services, KMS …
        name = r.choice(["AssumeRole", "Decrypt", "GenerateDataKey", "GetCallerIdentity"])
        src = "sts.amazonaws.com" if name in ("AssumeRole", "GetCallerIdentity") else "kms.amazonaws.com"
        ident = ({"type": "AWSService", "invokedBy": "lambda.amazonaws.com"} if r.random() < 0.5 else
                 {"type": "AssumedRole", "principalId": f"AROA{r.getrandbits(64):016X}:{sess}",
                  "arn": f"arn:aws:sts::{_CT_ACCOUNT}:assumed-role/{role}/{sess}", "accountId": _CT_ACCOUNT,
                  "accessKeyId": f"ASIA{r.getrandbits(64):016X}"})
        return {**common, "userIdentity": ident, "eventTime": ev_time, "eventSource": src, "eventName": name,
                "awsRegion": region, "sourceIPAddress": ident.get("invokedBy", ip), "userAgent": r.choice(_CT_UA),
                "requestParameters": {"roleArn": f"arn:aws:iam::{_CT_ACCOUNT}:role/{role}", "roleSessionName": sess,
                                      "durationSeconds": 3600} if name == "AssumeRole" else {"keyId": "alias/acme"},
                "responseElements": None, "requestID": f"{r.getrandbits(128):032x}",
                "eventID": f"{r.getrandbits(128):032x}", "readOnly": name != "AssumeRole",
                "eventType": "AwsApiCall", "managementEvent": True, "recipientAccountId": _CT_ACCOUNT,
                "eventCategory": "Management"}
    name, _op, _m, ro, _w = _s3_op(r)
    bucket = _CT_BUCKETS[min(int(r.expovariate(1.0)), len(_CT_BUCKETS) - 1)]
    key = _ct_key(r, pool_n)
    rp: dict = {"bucketName": bucket, "Host": f"{bucket}.s3.{region}.amazonaws.com"}
    if name == "ListObjects":
        rp.update({"list-type": "2", "prefix": key.rsplit("/", 1)[0] + "/", "encoding-type": "url"})
    else:
        rp["key"] = key
    rec = {**common,
           "userIdentity": {"type": "AssumedRole", "principalId": f"AROA{r.getrandbits(64):016X}:{sess}",
                            "arn": f"arn:aws:sts::{_CT_ACCOUNT}:assumed-role/{role}/{sess}", "accountId": _CT_ACCOUNT,
                            "accessKeyId": f"ASIA{r.getrandbits(64):016X}",
                            "sessionContext": {"sessionIssuer": {"type": "Role", "principalId": f"AROA{role.upper()}",
                                                                 "arn": f"arn:aws:iam::{_CT_ACCOUNT}:role/{role}",
                                                                 "accountId": _CT_ACCOUNT, "userName": role},
                                               "attributes": {"creationDate": ev_time, "mfaAuthenticated": "false"}}},
           "eventTime": ev_time, "eventSource": "s3.amazonaws.com", "eventName": name, "awsRegion": region,
           "sourceIPAddress": ip, "userAgent": r.choice(_CT_UA), "requestParameters": rp,
           "responseElements": None,
           "additionalEventData": {"SignatureVersion": "SigV4", "CipherSuite": "ECDHE-RSA-AES128-GCM-SHA256",
                                   "bytesTransferredIn": 0 if ro else int(r.lognormvariate(8, 2)),
                                   "AuthenticationMethod": "AuthHeader", "x-amz-id-2": f"{r.getrandbits(256):064x}",
                                   "bytesTransferredOut": int(r.lognormvariate(8, 2)) if ro else 0},
           "requestID": f"{r.getrandbits(64):016X}", "eventID": f"{r.getrandbits(128):032x}", "readOnly": ro,
           "resources": [{"type": "AWS::S3::Object", "ARN": f"arn:aws:s3:::{bucket}/{key}"},
                         {"accountId": _CT_ACCOUNT, "type": "AWS::S3::Bucket", "ARN": f"arn:aws:s3:::{bucket}"}],
           "eventType": "AwsApiCall", "managementEvent": False, "recipientAccountId": _CT_ACCOUNT,
           "eventCategory": "Data",
           "tlsDetails": {"tlsVersion": "TLSv1.2", "cipherSuite": "ECDHE-RSA-AES128-GCM-SHA256",
                          "clientProvidedHostHeader": rp["Host"]}}
    if r.random() < 0.04:
        rec["errorCode"], rec["errorMessage"] = "AccessDenied", "Access Denied"
    elif r.random() < 0.01:
        rec["errorCode"], rec["errorMessage"] = "NoSuchKey", "The specified key does not exist."
    return rec


def _cloudtrail_job(job: tuple) -> tuple[int, int]:
    """One CloudTrail delivery file (gzipped ``{"Records": [...]}``); returns (records, JSON bytes)."""
    path, seed, n, start_ms, region, pool_n = job
    r = random.Random(seed)
    t = start_ms
    recs = []
    for _ in range(n):
        t += r.randrange(0, 600)
        recs.append(_ct_record(r, t, region, pool_n))
    body = orjson.dumps({"Records": recs})
    import gzip
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(gzip.compress(body, compresslevel=6, mtime=0))
    return n, len(body)


def gen_cloudtrail(root: Path, n_records: int, seed: int = 4, workers: int = 2, per_file: int = 1000) -> dict:
    """CloudTrail delivery files under ``root/AWSLogs/<acct>/CloudTrail/<region>/YYYY/MM/DD/``, ``n_records`` in all."""
    params = {"kind": "cloudtrail", "v": CLOUD_GEN_VERSION, "records": n_records, "seed": seed, "per_file": per_file}
    if manifest_ok(root, params):
        return json.loads((root / "manifest.json").read_text())
    _fresh(root)
    r = random.Random(seed)
    jobs, left, i = [], n_records, 0
    t = EPOCH_MS
    while left > 0:
        n = min(left, max(1, int(r.gauss(per_file, per_file / 4))))
        left -= n
        region = _CT_REGIONS[i % len(_CT_REGIONS)]
        t += 300_000 // len(_CT_REGIONS)
        d = datetime.fromtimestamp(t / 1000, timezone.utc)
        name = (f"{_CT_ACCOUNT}_CloudTrail_{region}_{d:%Y%m%dT%H%M}Z_"
                f"{''.join(r.choice('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789') for _ in range(16))}.json.gz")
        path = root / "AWSLogs" / _CT_ACCOUNT / "CloudTrail" / region / f"{d:%Y}" / f"{d:%m}" / f"{d:%d}" / name
        jobs.append((str(path), seed * 1_000_003 + i, n, t - 300_000, region, 20000))
        i += 1
    with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(seed, 20000)) as ex:
        done = list(ex.map(_cloudtrail_job, jobs, chunksize=16))
    # digest files sit in the same tree (no Records key): one per region-hour
    dig = root / "AWSLogs" / _CT_ACCOUNT / "CloudTrail-Digest" / _CT_REGIONS[0] / "2026" / "09" / "01"
    dig.mkdir(parents=True, exist_ok=True)
    import gzip
    (dig / f"{_CT_ACCOUNT}_CloudTrail-Digest_{_CT_REGIONS[0]}_trail_{_CT_REGIONS[0]}_20260901T010000Z.json.gz").write_bytes(
        gzip.compress(orjson.dumps({"awsAccountId": _CT_ACCOUNT, "digestStartTime": "2026-09-01T00:00:00Z",
                                    "digestEndTime": "2026-09-01T01:00:00Z", "logFiles": []}), mtime=0))
    return _write_manifest(root, params, {"records": sum(n for n, _ in done), "json_bytes": sum(b for _, b in done)})


_S3_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _s3_line(r: random.Random, t_ms: int, bucket: str, pool_n: int) -> str:
    name, op, method, ro, _w = _s3_op(r)
    d = datetime.fromtimestamp(t_ms // 1000, timezone.utc)
    when = f"[{d.day:02d}/{_S3_MONTHS[d.month - 1]}/{d.year}:{d:%H:%M:%S} +0000]"
    role = r.choice(_CT_ROLES)
    requester = (f"arn:aws:sts::{_CT_ACCOUNT}:assumed-role/{role}/{role}-{r.getrandbits(16):04x}"
                 if r.random() < 0.9 else "-")
    key = _ct_key(r, pool_n)
    ek = key.replace(" ", "%20")
    if op == "REST.GET.BUCKET":
        obj, uri = "-", f"GET /{bucket}?list-type=2&prefix={ek.rsplit('/', 1)[0]}%2F HTTP/1.1"
    else:
        obj, uri = ek, f"{method} /{bucket}/{ek} HTTP/1.1"
    status, err = 200, "-"
    if r.random() < 0.04:
        status, err = 403, "AccessDenied"
    elif op in ("REST.GET.OBJECT", "REST.HEAD.OBJECT") and r.random() < 0.02:
        status, err = 404, "NoSuchKey"
    elif op == "REST.DELETE.OBJECT":
        status = 204
    size = int(r.lognormvariate(8, 2))
    sent = "-" if status >= 300 or method in ("HEAD", "PUT") else str(size)
    total = r.randrange(1, 400)
    turn = "-" if method == "PUT" else str(max(1, total - r.randrange(0, total)))
    ua = r.choice(_CT_UA).strip("[]")
    return (f"{r.getrandbits(256):064x} {bucket} {when} 198.51.{r.randrange(256)}.{r.randrange(1, 255)} {requester} "
            f"{r.getrandbits(64):016X} {op} {obj} \"{uri}\" {status} {err} {sent} "
            f"{size if method in ('GET', 'PUT') else '-'} {total} {turn} \"-\" \"{ua}\" "
            f"{'-' if r.random() < 0.7 else f'{r.getrandbits(96):024x}'} "
            f"{r.getrandbits(384):096x}= SigV4 ECDHE-RSA-AES128-GCM-SHA256 AuthHeader "
            f"{bucket}.s3.eu-west-1.amazonaws.com TLSv1.2 - -")


def _s3_job(job: tuple) -> int:
    path, seed, n, start_ms, bucket, pool_n = job
    r = random.Random(seed)
    t = start_ms
    lines = []
    for _ in range(n):
        t += r.randrange(0, 300)
        lines.append(_s3_line(r, t, bucket, pool_n))
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return n


def gen_s3_access(root: Path, n_lines: int, seed: int = 5, workers: int = 2, per_file: int = 2000) -> dict:
    """S3 server access log files ``<bucket>-YYYY-MM-DD-HH-MM-SS-<UNIQUE>`` under ``root``, ``n_lines`` in all."""
    params = {"kind": "s3", "v": CLOUD_GEN_VERSION, "lines": n_lines, "seed": seed, "per_file": per_file}
    if manifest_ok(root, params):
        return json.loads((root / "manifest.json").read_text())
    _fresh(root)
    r = random.Random(seed)
    jobs, left, i, t = [], n_lines, 0, EPOCH_MS
    while left > 0:
        n = min(left, max(1, int(r.gauss(per_file, per_file / 4))))
        left -= n
        bucket = _CT_BUCKETS[i % len(_CT_BUCKETS)]
        t += 60_000
        d = datetime.fromtimestamp(t / 1000, timezone.utc)
        name = f"{bucket}-{d:%Y-%m-%d-%H-%M-%S}-{r.getrandbits(64):016X}"
        jobs.append((str(root / name), seed * 1_000_003 + i, n, t - 60_000, bucket, 20000))
        i += 1
    with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(seed, 20000)) as ex:
        list(ex.map(_s3_job, jobs, chunksize=16))
    return _write_manifest(root, params, {"lines": n_lines})


# --------------------------------------------------------------------------- join frames

def _str_array(values, n: int | None = None):
    import pandas as pd

    if values is None:
        values = np.full(n, None, dtype=object)
    return pd.array(np.asarray(values, dtype=object), dtype=pd.StringDtype("python"))


def _conform(df, spec_name: str):
    """Order ``df``'s columns as the current spec in replaybook.frames declares them; columns the
    spec gained since this generator was written are added as all-NA at their dtype, columns it
    lost are dropped (the spec is edited concurrently; the bench follows it)."""
    import pandas as pd
    from replaybook import frames

    spec = getattr(frames, spec_name)
    n = len(df)
    out = {}
    for c in spec.columns:
        if c.name in df.columns:
            out[c.name] = df[c.name]
        elif c.dtype == "float64":
            out[c.name] = np.full(n, np.nan)
        elif c.dtype == "object":
            out[c.name] = np.full(n, None, dtype=object)
        elif c.dtype == "string":
            out[c.name] = _str_array(None, n)
        else:
            out[c.name] = pd.array(np.full(n, None, dtype=object), dtype=c.dtype)
    return pd.DataFrame(out, index=pd.RangeIndex(n))


def build_join_frames(n_calls: int, n_steps: int, seed: int = 3, mean_session: int = 100,
                      n_keys: int | None = None, zipf_a: float = 1.1, meta_share: float = 0.3,
                      span_days: float = 30.0):
    """In-memory ``(steps, calls)`` frames for the join, built with numpy.

    * ``calls``: ``n_calls`` door calls in ~``n_calls / mean_session`` sessions (lognormal sizes)
      spread over ``span_days``; each call's (tool, arguments) drawn from a Zipf(``zipf_a``) pool
      of ``n_keys`` keys (default ``n_calls // 25``), so popular keys recur across many sessions.
    * ``steps``: ``n_steps`` ``tool_call`` rows.  Transcripts are copies of randomly chosen
      door sessions (until ``n_steps`` is reached): ~3 % of their calls dropped, ~5 % extra
      built-in tool steps, a per-transcript clock offset (door later by ~1.2 s ± 0.3 s) and
      jitter; ``meta_share`` of the sessions log the step's tool-use id in ``meta_call_id``.
      The remaining door sessions have no transcript.
    """
    import pandas as pd

    rng = np.random.default_rng(seed)
    n_keys = n_keys or max(50, n_calls // 25)
    UTC = "datetime64[ns, UTC]"

    # ---- sessions and calls
    n_sess = max(1, n_calls // mean_session)
    sizes = np.maximum(1, rng.lognormal(np.log(mean_session) - 0.5, 1.0, n_sess)).astype(np.int64)
    sizes = np.maximum(1, np.round(sizes * n_calls / sizes.sum())).astype(np.int64)
    diff = n_calls - int(sizes.sum())
    while diff != 0:  # fix rounding so the total is exact
        j = rng.integers(0, n_sess, min(abs(diff), n_sess))
        if diff > 0:
            np.add.at(sizes, j, 1)
        else:
            sizes[j] = np.maximum(1, sizes[j] - 1)
        diff = n_calls - int(sizes.sum())
    sess = np.repeat(np.arange(n_sess), sizes)
    starts_idx = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    seq = np.arange(n_calls) - np.repeat(starts_idx, sizes) + 1
    sess_start = EPOCH_MS + rng.integers(0, int(span_days * 86400_000), n_sess)
    gaps = rng.exponential(15000, n_calls).astype(np.int64) + 100
    cg = np.cumsum(gaps)
    cg -= np.repeat(cg[starts_idx], sizes)
    c_ms = sess_start[sess] + cg
    # Zipf key ranks via inverse CDF of a continuous power law
    u = rng.random(n_calls)
    a = zipf_a
    key = np.minimum(((((n_keys + 1) ** (1 - a) - 1) * u + 1) ** (1 / (1 - a))).astype(np.int64) - 1, n_keys - 1)
    tools_arr = np.array(DOOR_TOOLS, dtype=object)
    key_tool = tools_arr[np.minimum(rng.exponential(2.2, n_keys).astype(np.int64), len(DOOR_TOOLS) - 1)]
    key_args = [{"path": f"warehouse/t{k % 997}/obj_{k}.parquet"} if k % 3 else
                {"path": f"warehouse/t{k % 997}/", "sql": f"SELECT * FROM t WHERE id = {k} LIMIT 10"}
                for k in range(n_keys)]
    key_args_key = np.array([orjson.dumps(d, option=orjson.OPT_SORT_KEYS).decode() for d in key_args], dtype=object)
    key_args_obj = np.empty(n_keys, dtype=object)
    key_args_obj[:] = key_args
    sess_names = np.array([f"door-s{i:07d}" for i in range(n_sess)], dtype=object)
    agent_names = np.array([f"agent-{i:02d}" for i in range(24)], dtype=object)
    sess_agent = agent_names[rng.integers(0, 24, n_sess)]
    dur = rng.exponential(150.0, n_calls).astype(np.int64) + 1
    deny = rng.random(n_calls) < 0.05

    # ---- transcripts: copies of some sessions
    order = rng.permutation(n_sess)
    keep_p = 0.97
    est = np.cumsum(sizes[order] * (keep_p + 0.05))
    n_tr = int(min(n_sess, np.searchsorted(est, n_steps) + 1))
    tr_sess = order[:n_tr]                       # session copied by transcript i
    is_tr_sess = np.zeros(n_sess, bool)
    is_tr_sess[tr_sess] = True
    tr_of_sess = np.full(n_sess, -1)
    tr_of_sess[tr_sess] = np.arange(n_tr)
    c_in = is_tr_sess[sess]
    c_keep = c_in & (rng.random(n_calls) < keep_p)
    src = np.flatnonzero(c_keep)                 # calls that have a step
    sess_meta = rng.random(n_sess) < meta_share
    tr_off = rng.normal(1200, 300, n_tr).astype(np.int64)
    s_tr = tr_of_sess[sess[src]]
    s_ms = c_ms[src] - tr_off[s_tr] - rng.exponential(200, len(src)).astype(np.int64)
    s_key = key[src]
    s_builtin = np.zeros(len(src), bool)
    # extra built-in tool steps (never pass the door)
    n_extra = max(0, n_steps - len(src))
    x_tr = rng.integers(0, n_tr, n_extra)
    x_ms = c_ms[starts_idx[tr_sess[x_tr]]] + rng.integers(0, 3_600_000, n_extra)
    all_tr = np.concatenate([s_tr, x_tr])
    all_ms = np.concatenate([s_ms, x_ms])
    all_key = np.concatenate([s_key, np.full(n_extra, -1)])
    all_builtin = np.concatenate([s_builtin, np.ones(n_extra, bool)])
    all_src = np.concatenate([src, np.full(n_extra, -1)])
    # trim to exactly n_steps: drop random rows, then re-sort
    if len(all_tr) > n_steps:
        pick = np.sort(rng.choice(len(all_tr), n_steps, replace=False))
        all_tr, all_ms, all_key, all_builtin, all_src = (x[pick] for x in (all_tr, all_ms, all_key, all_builtin, all_src))
    o = np.lexsort((all_ms, all_tr))
    all_tr, all_ms, all_key, all_builtin, all_src = (x[o] for x in (all_tr, all_ms, all_key, all_builtin, all_src))
    n_s = len(all_tr)
    tr_counts = np.bincount(all_tr, minlength=n_tr)
    tr_starts = np.concatenate(([0], np.cumsum(tr_counts)[:-1]))
    s_seq = np.arange(n_s) - np.repeat(tr_starts, tr_counts)
    tr_names = np.array([f"{(seed << 96) ^ (i * 0x9E3779B97F4A7C15):032x}"[-32:] for i in range(n_tr)], dtype=object)
    tr_names = np.array([f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:]}" for h in tr_names], dtype=object)
    call_ids = np.array([f"toolu_01{i:022x}" for i in range(n_s)], dtype=object)
    # meta ids on the call side for steps copied from meta-logging sessions
    c_meta = np.full(n_calls, None, dtype=object)
    has_src = all_src >= 0
    ms_mask = has_src.copy()
    ms_mask[has_src] = sess_meta[sess[all_src[has_src]]]
    c_meta[all_src[ms_mask]] = call_ids[ms_mask]
    # meta-logging sessions without a transcript still log (unmatched) ids
    other = sess_meta[sess] & (c_meta == None)  # noqa: E711
    c_meta[other] = np.array([f"toolu_02{i:022x}" for i in range(int(other.sum()))], dtype=object)

    builtin_names = np.array(BUILTIN_TOOLS, dtype=object)
    s_tool = np.where(all_builtin, builtin_names[np.arange(n_s) % len(BUILTIN_TOOLS)],
                      key_tool[np.maximum(all_key, 0)])
    s_args_key = np.where(all_builtin, '{"file_path":"/home/u/src/x.py"}', key_args_key[np.maximum(all_key, 0)])
    s_args = key_args_obj[np.maximum(all_key, 0)].copy()
    s_args[all_builtin] = None
    s_server = np.where(all_builtin, None, "door")
    s_raw = np.where(all_builtin, s_tool, "mcp__door__" + s_tool.astype(str)).astype(object)
    s_ts = pd.to_datetime(all_ms, unit="ms", utc=True).astype(UTC)

    na_s = _str_array(None, n_s)
    na_i = pd.array(np.full(n_s, None, dtype=object), dtype="Int64")
    steps = pd.DataFrame({
        "transcript_id": _str_array(tr_names[all_tr]),
        "client": _str_array(np.full(n_s, "claude-code", dtype=object)),
        "client_version": _str_array(np.full(n_s, "2.1.42", dtype=object)),
        "client_session_id": _str_array(tr_names[all_tr]),
        "agent_id": na_s,
        "seq": pd.array(s_seq, dtype="Int64"),
        "ts": s_ts,
        "kind": _str_array(np.full(n_s, "tool_call", dtype=object)),
        "line_type": _str_array(np.full(n_s, "assistant", dtype=object)),
        "tool_raw": _str_array(s_raw),
        "server": _str_array(s_server),
        "tool": _str_array(s_tool),
        "call_id": _str_array(call_ids),
        "arguments": pd.Series(s_args, dtype=object).array,
        "args_key": _str_array(s_args_key),
        "result_ts": pd.to_datetime(all_ms + 800, unit="ms", utc=True).astype(UTC),
        "is_error": pd.array(np.zeros(n_s, bool), dtype="boolean"),
        "result_text": na_s.copy(),
        "images": pd.array(np.zeros(n_s, np.int64), dtype="Int64"),
        "text": na_s.copy(),
        "text_bytes": na_i,
        "model": na_s.copy(),
        "message_id": na_s.copy(),
        "request_id": na_s.copy(),
        "input_tokens": na_i.copy(),
        "output_tokens": na_i.copy(),
        "uuid": na_s.copy(),
        "parent_uuid": na_s.copy(),
        "source_file": _str_array(np.full(n_s, "bench/in-memory.jsonl", dtype=object)),
        "line_no": pd.array(s_seq + 1, dtype="Int64"),
    })

    na_c = _str_array(None, n_calls)
    c_key_tool = key_tool[key]
    calls = pd.DataFrame({
        "door_session": _str_array(sess_names[sess]),
        "agent": _str_array(sess_agent[sess]),
        "seq": pd.array(seq, dtype="Int64"),
        "ts": pd.to_datetime(c_ms, unit="ms", utc=True).astype(UTC),
        "ts_end": pd.to_datetime(c_ms + dur, unit="ms", utc=True).astype(UTC),
        "duration_ms": dur.astype("float64"),
        "server": _str_array(np.full(n_calls, "warehouse-files", dtype=object)),
        "tool": _str_array(c_key_tool),
        "arguments": pd.Series(key_args_obj[key], dtype=object).array,
        "args_key": _str_array(key_args_key[key]),
        "object": na_c,
        "decision": _str_array(np.where(deny, "deny", "allow").astype(object)),
        "rule": _str_array(np.where(deny, "default-deny", "allow-read").astype(object)),
        "rows": pd.array(np.where(deny, 0, 10), dtype="Int64"),
        "bytes": pd.array(np.where(deny, 0, 1000), dtype="Int64"),
        "meta_call_id": _str_array(c_meta),
        "error": na_c.copy(),
        "response_digest": na_c.copy(),
        "source_file": _str_array(np.full(n_calls, "bench/in-memory-door.jsonl", dtype=object)),
        "line_no": pd.array(seq, dtype="Int64"),
    })
    steps, calls = _conform(steps, "STEPS"), _conform(calls, "CALLS")
    info = {"calls": n_calls, "steps": n_s, "sessions": n_sess, "transcripts": n_tr, "keys": n_keys,
            "meta_sessions": int(sess_meta.sum()),
            # ground truth: door session -> the transcript copied from it
            "_truth": {sess_names[tr_sess[i]]: tr_names[i] for i in np.unique(all_tr)}}
    return steps, calls, info



def build_result_join_frames(n_sessions: int, calls_per: int = 20, span_s: float = 600.0,
                             missing: float = 0.1, seed: int = 0):
    """In-memory ``(steps, calls, info)`` frames for the join's tier of tool results whose call's
    line is missing: ``n_sessions`` door sessions of ``calls_per`` calls each, all within the same
    ``span_s`` seconds (agents running at once), alternating two tools with arguments of their
    own; each session has its Codex transcript (no tool-use ids), in which a ``missing`` share of
    the tool calls' lines are gone and only their result remains (300 ms after the call, naming
    its tool).  Every result's window then holds the calls of every session: the candidates
    grow with results × sessions.  ``info["_truth"]``: door session → its transcript."""
    import pandas as pd
    from replaybook.frames import CALLS, STEPS

    rng = np.random.default_rng(seed)
    t0 = pd.Timestamp(EPOCH_MS, unit="ms", tz="UTC")
    srows, crows = [], []
    for s in range(n_sessions):
        for i, m in enumerate(np.sort(rng.integers(0, int(span_s * 1000), calls_per)).tolist()):
            tool = "read_object" if i % 2 else "list_folder"
            args = {"path": f"warehouse/s{s}/obj_{i}.parquet"}
            args_key = orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()
            ts = t0 + pd.Timedelta(milliseconds=m)
            crows.append(dict(door_session=f"door-s{s:07d}", agent=f"agent-{s % 24:02d}", seq=i + 1, ts=ts,
                              tool=tool, arguments=args, args_key=args_key, decision="allow", bytes=100 + i))
            if rng.random() < missing:
                srows.append(dict(transcript_id=f"codex-t{s:07d}", client="codex", seq=i,
                                  ts=ts + pd.Timedelta(milliseconds=300), kind="tool_result", tool=tool,
                                  call_id=f"call_lost_{s}_{i}", text="ok", text_bytes=2))
            else:
                srows.append(dict(transcript_id=f"codex-t{s:07d}", client="codex", seq=i, ts=ts,
                                  kind="tool_call", tool_raw=tool, server="door", tool=tool,
                                  call_id=f"call_{s}_{i}", arguments=args, args_key=args_key))
    steps, calls = STEPS.build(srows), CALLS.build(crows)
    results = int((steps["kind"] == "tool_result").sum())
    info = {"calls": len(calls), "steps": len(steps), "sessions": n_sessions, "transcripts": n_sessions,
            "results_without_call": results,
            "_truth": {f"door-s{s:07d}": f"codex-t{s:07d}" for s in range(n_sessions)}}
    return steps, calls, info


# --------------------------------------------------------------------------- access-join frames

#: the storage_map and principals of the access-join frames (agents 20-23 have no principal)
ACCESS_STORAGE_MAP = {"warehouse/": "s3://acme-data/warehouse/", "scratch/": "s3://acme-data/scratch/"}
ACCESS_DOOR_ROLE = f"arn:aws:sts::{_CT_ACCOUNT}:assumed-role/door-reader"
ACCESS_PRINCIPALS = {f"agent-{i:02d}": f"{ACCESS_DOOR_ROLE}/*" for i in range(20)}


def build_access_frames(n_calls: int, n_access: int, seed: int = 6, mean_session: int = 100,
                        span_days: float = 7.0, zipf_a: float = 1.1):
    """In-memory ``(calls, access, info)`` frames for the door-call ↔ cloud-access join, built
    with numpy; columns and dtypes follow ``replaybook.frames.CALLS`` / ``ACCESS`` at run time.

    * ``calls``: ``n_calls`` door calls in ~``n_calls / mean_session`` sessions (lognormal sizes)
      of 24 agents over ``span_days``; each call's object drawn from a Zipf(``zipf_a``) pool of
      ``n_calls / 10`` objects under ``warehouse/`` (a third of the calls list a folder, logged
      without its slash as the door does; 1 % list the data root ``.``; 2 % name several
      objects); durations exponential (mean 0.4 s), 10 % without ``ts_end``; 5 % refused;
      20 % of the sessions propagate a per-session correlation token.
    * ``access``: the storage requests the allowed calls made (a read: 1-4 GetObject ranges; a
      describe: a HeadObject; a listing: a ListObjects and HeadObjects of ~4 entries; a query:
      1-3 GetObject), each in CloudTrail (75 %, ``completed``, whole seconds) and/or the S3
      server access log (55 %, ``received``, whole seconds) under one request id, 1 % of
      CloudTrail records delivered twice; plus the rows no call explains (~15 %: another
      principal on the calls' objects, half of them while a call on the object was open; the
      door's role on objects never called — many distinct keys; refused calls reached anyway;
      IAM events), as many as ``n_access`` leaves room for; in time order.

    ``info["_truth"]`` holds, per access row, the call that made it (-1: none).
    """
    import pandas as pd

    rng = np.random.default_rng(seed)
    UTC = "datetime64[ns, UTC]"
    n_obj = max(50, n_calls // 10)

    # ---- calls
    n_sess = max(1, n_calls // mean_session)
    sizes = np.maximum(1, rng.lognormal(np.log(mean_session) - 0.5, 1.0, n_sess))
    sizes = np.maximum(1, np.round(sizes * n_calls / sizes.sum())).astype(np.int64)
    while sizes.sum() != n_calls:
        diff = n_calls - int(sizes.sum())
        j = rng.integers(0, n_sess, min(abs(diff), n_sess))
        if diff > 0:
            np.add.at(sizes, j, 1)
        else:
            sizes[j] = np.maximum(1, sizes[j] - 1)
    sess = np.repeat(np.arange(n_sess), sizes)
    first = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    seq = np.arange(n_calls) - np.repeat(first, sizes) + 1
    sess_start = EPOCH_MS + rng.integers(0, int(span_days * 86400_000), n_sess)
    cg = np.cumsum(rng.exponential(20_000, n_calls).astype(np.int64) + 200)
    cg -= np.repeat(cg[first], sizes)
    c_ms = sess_start[sess] + cg
    dur = rng.exponential(400.0, n_calls).astype(np.int64) + 5
    u = rng.random(n_calls)
    a = zipf_a
    obj = np.minimum(((((n_obj + 1) ** (1 - a) - 1) * u + 1) ** (1 / (1 - a))).astype(np.int64) - 1, n_obj - 1)
    kind = rng.choice(4, n_calls, p=[0.45, 0.12, 0.33, 0.10])  # 0 read, 1 describe, 2 list, 3 query
    root = (kind == 2) & (rng.random(n_calls) < 0.03)
    deny = rng.random(n_calls) < 0.05
    agent_names = np.array([f"agent-{i:02d}" for i in range(24)], dtype=object)
    sess_agent = rng.integers(0, 24, n_sess)
    sess_token = rng.random(n_sess) < 0.2
    folder_of = np.array([f"warehouse/t{k % 997}" for k in range(n_obj)], dtype=object)
    file_of = np.array([f"warehouse/t{k % 997}/obj_{k}.parquet" for k in range(n_obj)], dtype=object)
    c_obj = np.where(kind == 2, folder_of[obj], file_of[obj])
    c_obj[root] = "."
    multi = (kind == 0) & (rng.random(n_calls) < 0.02)
    c_objects = np.full(n_calls, None, dtype=object)
    multi_objects = np.empty(int(multi.sum()), dtype=object)
    multi_objects[:] = [(file_of[k], file_of[(k * 7 + 3) % n_obj], file_of[(k * 13 + 5) % n_obj]) for k in obj[multi]]
    c_objects[multi] = multi_objects
    tools = np.array(["read_object", "describe", "list_folder", "query"], dtype=object)
    sess_names = np.array([f"door-s{i:06d}" for i in range(n_sess)], dtype=object)
    token_names = np.where(sess_token, np.char.add("door-", sess_names.astype(str)).astype(object), None)
    no_end = rng.random(n_calls) < 0.10
    ts = pd.to_datetime(c_ms, unit="ms", utc=True).astype(UTC)
    ts_end = pd.Series(pd.to_datetime(c_ms + dur, unit="ms", utc=True).astype(UTC)).mask(no_end)

    # ---- the requests the allowed calls made
    allowed = ~deny
    n_req = np.select([kind == 0, kind == 2, kind == 3],
                      [rng.integers(1, 5, n_calls), 1 + rng.poisson(4.0, n_calls), rng.integers(1, 4, n_calls)], 1)
    n_req = np.where(allowed, n_req + multi * 2, 0)
    r_call = np.repeat(np.arange(n_calls), n_req)
    r_first = np.concatenate(([0], np.cumsum(n_req)[:-1]))
    r_nth = np.arange(len(r_call)) - np.repeat(r_first, n_req)
    r_kind = kind[r_call]
    base = obj[r_call] % 997  # an entry of the listed folder: an object of the same t<k>/
    child = base + 997 * (rng.random(len(r_call)) * ((n_obj - 1 - base) // 997 + 1)).astype(np.int64)
    r_uri_obj = np.where((r_kind == 2) & (r_nth > 0), file_of[child], c_obj[r_call])
    is_folder = (r_kind == 2) & (r_nth == 0)
    r_multi = multi[r_call] & (r_nth > 0)
    r_uri_obj[r_multi] = np.array([t[min(int(n), 2)] for t, n in zip(c_objects[r_call[r_multi]], r_nth[r_multi])],
                                  dtype=object)
    r_uri = np.char.add("s3://acme-data/", r_uri_obj.astype(str)).astype(object)
    r_uri[is_folder] = np.char.add(r_uri[is_folder].astype(str), "/").astype(object)
    r_uri[is_folder & root[r_call]] = "s3://acme-data/"
    r_action = np.where(is_folder, "list", np.where((r_kind == 1) | (r_kind == 2), "head", "read")).astype(object)
    r_at = c_ms[r_call] + (rng.random(len(r_call)) * dur[r_call]).astype(np.int64)  # sent while the call was open
    n_r = len(r_call)
    in_ct = rng.random(n_r) < 0.75
    in_sal = (rng.random(n_r) < 0.55) | ~in_ct
    again = in_ct & (rng.random(n_r) < 0.01)

    def rows_of(mask, source, t_ms):
        return {"call": r_call[mask], "t": t_ms[mask] // 1000 * 1000, "source": source,
                "uri": r_uri[mask], "action": r_action[mask], "rid": np.flatnonzero(mask)}
    done = r_at + rng.exponential(150, n_r).astype(np.int64)
    parts = [rows_of(in_ct, "aws.cloudtrail", done), rows_of(in_sal, "aws.s3_access", r_at),
             rows_of(again, "aws.cloudtrail", done)]

    # ---- rows no call explains
    n_explained = sum(len(p["call"]) for p in parts)
    n_noise = max(0, n_access - n_explained) if n_explained < n_access else int(0.12 * n_access)
    t_lo, t_hi = int(c_ms.min()), int(c_ms.max())
    nz = rng.choice(4, n_noise, p=[0.45, 0.35, 0.10, 0.10])  # other principal, door role, refused, IAM
    z_t = rng.integers(t_lo, t_hi, n_noise)
    z_obj = np.minimum(((((n_obj + 1) ** (1 - a) - 1) * rng.random(n_noise) + 1) ** (1 / (1 - a))).astype(np.int64)
                       - 1, n_obj - 1)
    z_uri = np.char.add("s3://acme-data/", file_of[z_obj].astype(str)).astype(object)
    fresh = nz == 1
    z_uri[fresh] = np.char.add("s3://acme-data/warehouse/export/part-",
                               np.arange(int(fresh.sum())).astype(str)).astype(object)
    refused_calls = np.flatnonzero(deny & (kind != 2))
    ref = nz == 2
    if len(refused_calls):
        pick = refused_calls[rng.integers(0, len(refused_calls), int(ref.sum()))]
        z_uri[ref] = np.char.add("s3://acme-data/", c_obj[pick].astype(str)).astype(object)
        z_t[ref] = c_ms[pick] + rng.integers(-2000, 60_000, int(ref.sum()))
    near = (nz == 0) & (rng.random(n_noise) < 0.5)  # another principal on a call's object while it was open
    reads = np.flatnonzero(allowed & (kind == 0))
    pick = reads[rng.integers(0, len(reads), int(near.sum()))]
    z_uri[near] = np.char.add("s3://acme-data/", c_obj[pick].astype(str)).astype(object)
    z_t[near] = c_ms[pick] + (rng.random(len(pick)) * dur[pick]).astype(np.int64)
    iam = nz == 3
    z_uri[iam] = f"arn:aws:iam::{_CT_ACCOUNT}:role/door-reader"
    z_action = np.where(iam, "other", np.where(rng.random(n_noise) < 0.8, "read", "head")).astype(object)
    parts.append({"call": np.full(n_noise, -1), "t": z_t // 1000 * 1000,
                  "source": np.where(rng.random(n_noise) < 0.6, "aws.cloudtrail", "aws.s3_access").astype(object),
                  "uri": z_uri, "action": z_action, "rid": n_r + np.arange(n_noise), "noise": nz})

    call = np.concatenate([p["call"] for p in parts])
    t_ms = np.concatenate([p["t"] for p in parts])
    source = np.concatenate([np.broadcast_to(np.asarray(p["source"], dtype=object), len(p["call"])) for p in parts])
    uri = np.concatenate([p["uri"] for p in parts])
    action = np.concatenate([p["action"] for p in parts])
    rid = np.concatenate([p["rid"] for p in parts])
    noise = np.concatenate([np.full(len(p["call"]), -1) if "noise" not in p else p["noise"] for p in parts])
    if len(call) > n_access:
        keep = np.sort(rng.choice(len(call), n_access, replace=False))
        call, t_ms, source, uri, action, rid, noise = (x[keep] for x in (call, t_ms, source, uri, action, rid, noise))
    o = np.argsort(t_ms, kind="stable")
    call, t_ms, source, uri, action, rid, noise = (x[o] for x in (call, t_ms, source, uri, action, rid, noise))
    n = len(call)

    who = np.where(call >= 0, np.char.add(f"{ACCESS_DOOR_ROLE}/", agent_names[sess_agent[sess[np.maximum(call, 0)]]]
                                          .astype(str)), "").astype(object)
    other = noise == 0
    who[other] = f"arn:aws:sts::{_CT_ACCOUNT}:assumed-role/etl-writer/etl-nightly"
    who[(noise == 1) | (noise == 2) | (noise == 3)] = f"{ACCESS_DOOR_ROLE}/agent-03"
    corr = np.where(call >= 0, token_names[sess[np.maximum(call, 0)]], None)
    ct = source == "aws.cloudtrail"
    raw_op = {("read", True): "GetObject", ("head", True): "HeadObject", ("list", True): "ListObjects",
              ("other", True): "GetRole", ("read", False): "REST.GET.OBJECT", ("head", False): "REST.HEAD.OBJECT",
              ("list", False): "REST.GET.BUCKET", ("other", False): "REST.GET.ACL"}
    action_raw = np.array([raw_op[(x, bool(c))] for x, c in zip(action, ct)], dtype=object)
    denied = rng.random(n) < 0.01
    nbytes = np.where(action == "read", rng.lognormal(9, 2, n).astype(np.int64), 0)
    access = pd.DataFrame({
        "ts": pd.to_datetime(t_ms, unit="ms", utc=True).astype(UTC),
        "time_kind": _str_array(np.where(ct, "completed", "received").astype(object)),
        "source": _str_array(source),
        "principal": _str_array(who),
        "principal_type": _str_array(np.full(n, "AssumedRole", dtype=object)),
        "action": _str_array(action),
        "action_raw": _str_array(action_raw),
        "resource_uri": _str_array(uri),
        "outcome": _str_array(np.where(denied, "denied", "allowed").astype(object)),
        "error_code": _str_array(np.where(denied, "AccessDenied", None)),
        "bytes": pd.array(np.where(ct & (action != "read"), None, nbytes).astype(object), dtype="Int64"),
        "rows": pd.array(np.full(n, None, dtype=object), dtype="Int64"),
        "request_id": _str_array(np.char.mod("%016X", rid).astype(object)),
        "user_agent": _str_array(np.full(n, _CT_UA[1], dtype=object)),
        "correlation": _str_array(corr),
        "raw": np.full(n, None, dtype=object),
        "source_file": _str_array(np.where(ct, "bench/in-memory-cloudtrail.json", "bench/in-memory-s3.log")
                                  .astype(object)),
        "line_no": pd.array(np.arange(1, n + 1), dtype="Int64"),
    })
    na_c = _str_array(None, n_calls)
    calls = pd.DataFrame({
        "door_session": _str_array(sess_names[sess]),
        "agent": _str_array(agent_names[sess_agent[sess]]),
        "seq": pd.array(seq, dtype="Int64"),
        "ts": ts,
        "ts_end": ts_end.array,
        "duration_ms": np.where(no_end, np.nan, dur.astype("float64")),
        "server": _str_array(np.full(n_calls, "warehouse-files", dtype=object)),
        "tool": _str_array(tools[kind]),
        "arguments": pd.Series([None] * n_calls, dtype=object).array,
        "object": _str_array(c_obj),
        "objects": pd.Series(c_objects, dtype=object).array,
        "decision": _str_array(np.where(deny, "deny", "allow").astype(object)),
        "rule": _str_array(np.where(deny, "no-export", "allow-warehouse").astype(object)),
        "correlation": _str_array(token_names[sess]),
        "error": na_c,
        "source_file": _str_array(np.full(n_calls, "bench/in-memory-door.jsonl", dtype=object)),
        "line_no": pd.array(seq, dtype="Int64"),
    })
    calls, access = _conform(calls, "CALLS"), _conform(access, "ACCESS")
    info = {"calls": n_calls, "access": n, "sessions": n_sess, "objects": n_obj,
            "requests_of_calls": int((call >= 0).sum()), "rows_no_call_made": int((call < 0).sum()),
            "cloudtrail_rows": int(ct.sum()), "s3_access_rows": int((~ct).sum()), "_truth": call}
    return calls, access, info

if __name__ == "__main__":  # tiny self-check
    import sys

    out = Path(sys.argv[1] if len(sys.argv) > 1 else "bench/out/selfcheck")
    print(gen_transcripts(out / "t", 4, 400_000))
    print(gen_door(out / "d", 2000))
    s, c, info = build_join_frames(20000, 8000)
    info.pop("_truth")
    print(info, s.shape, c.shape)
    from replaybook.frames import CALLS, STEPS

    STEPS.validate(s)
    CALLS.validate(c)
    print("frames valid")
    print(os.path.getsize(out / "t" / "manifest.json"))
