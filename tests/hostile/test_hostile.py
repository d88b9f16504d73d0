"""Hostile inputs: every loader, given damaged or wrong input, answers with a clear error or
quarantine rows naming the file (and the line, where there is one) — never a crash, never a
change to the evidence file.

The corpus is written by :func:`corpus` (51 inputs across every format), each run through
content sniffing (``replaybook.load``) and through every registered source forced onto it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
from pathlib import Path

import pandas as pd
import pytest

import replaybook
from replaybook.errors import ReplaybookError
from replaybook.frames import ACCESS, CALLS, QUARANTINE, STEPS
from replaybook.sources import registry

FIX = Path(__file__).resolve().parents[1] / "fixtures"
SPECS = {"steps": STEPS, "calls": CALLS, "access": ACCESS}

CLAUDE = json.dumps({"type": "user", "sessionId": "s", "uuid": "u1", "timestamp": "2026-09-13T10:00:00Z",
                     "message": {"role": "user", "content": "hi"}})
CLAUDE_TOOL = json.dumps({"type": "assistant", "sessionId": "s", "uuid": "u2", "timestamp": "2026-09-13T10:00:01Z",
                          "requestId": "r", "message": {"id": "m", "role": "assistant", "content": [
                              {"type": "tool_use", "id": "toolu_1", "name": "mcp__door__read", "input": {"p": 1}}]}})
DOOR = json.dumps({"ts": "2026-09-13T10:00:05Z", "seq": 1, "session": "s1", "agent": "a", "tool": "read",
                   "arguments": {"path": "x"}, "object": "x", "decision": "allow", "rule": "r"})
CT_EVENT = {"eventVersion": "1.09", "eventTime": "2026-09-13T10:00:05Z", "eventSource": "s3.amazonaws.com",
            "eventName": "GetObject", "userIdentity": {"type": "AssumedRole", "arn": "arn:aws:sts::1:assumed-role/r/s"},
            "requestParameters": {"bucketName": "b", "key": "k"}, "requestID": "R1"}
S3_LINE = ('79a5 acme-data [13/Sep/2026:10:00:21 +0000] 192.0.2.3 arn:aws:sts::1:assumed-role/r/s 3E57 '
           'REST.GET.OBJECT demo/a.csv "GET /acme-data/demo/a.csv HTTP/1.1" 200 - 2048 2048 70 10 "-" "ua" - '
           'Ix= SigV4 ECDHE-RSA-AES128-GCM-SHA256 AuthHeader acme-data.s3.amazonaws.com TLSv1.2 - -')
GCP = json.dumps({"protoPayload": {"@type": "type.googleapis.com/google.cloud.audit.AuditLog",
                                   "methodName": "storage.objects.get", "serviceName": "storage.googleapis.com",
                                   "resourceName": "projects/_/buckets/b/objects/k",
                                   "authenticationInfo": {"principalEmail": "a@x.iam.gserviceaccount.com"}},
                  "timestamp": "2026-09-13T10:00:05.123456789Z", "logName": "projects/p/logs/cloudaudit.googleapis.com%2Fdata_access",
                  "resource": {"type": "gcs_bucket"}, "insertId": "i1"})
CODEX = json.dumps({"timestamp": "2026-09-13T10:00:00.000Z", "type": "session_meta",
                    "payload": {"id": "11111111-1111-4111-8111-111111111111", "timestamp": "2026-09-13T10:00:00Z",
                                "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.40.0"}})
CODEX_CALL = json.dumps({"timestamp": "2026-09-13T10:00:01.000Z", "type": "response_item",
                         "payload": {"type": "function_call", "name": "shell", "arguments": "{\"command\": [\"ls\"",
                                     "call_id": "c1"}})


def _gz(b: bytes) -> bytes:
    return gzip.compress(b, mtime=0)


def corpus(root: Path) -> list[Path]:
    """Write the hostile corpus under ``root``; returns the paths (files and one folder)."""
    items: dict[str, bytes] = {
        # empty and near-empty
        "empty.jsonl": b"",
        "blank-lines.jsonl": b"\n\n   \n\t\n",
        "zero-byte.json.gz": b"",
        "gzip-of-nothing.jsonl.gz": _gz(b""),
        "truncated.json.gz": _gz(json.dumps({"Records": [CT_EVENT] * 20}).encode())[:-40],
        "corrupt-gzip.jsonl.gz": b"\x1f\x8b\x08\x00garbage-not-deflate" * 3,
        # junk with a trusted name
        "binary-junk.jsonl": bytes(range(256)) * 8,
        "nul-bytes.jsonl": (CLAUDE + "\n").encode() + b"\x00\x00\x00\n" + (CLAUDE_TOOL + "\n").encode(),
        # raw control characters (U+0000-U+001F, which JSON allows only escaped) inside one record
        "door-raw-control.jsonl": (DOOR + "\n" + DOOR.replace('"x"}', '"x\x01\ty"}') + "\n" + DOOR + "\n").encode(),
        "claude-raw-nul.jsonl": (CLAUDE + "\n" + CLAUDE_TOOL.replace("mcp__door__read", "mcp__door__\x00read") + "\n").encode(),
        "cloudtrail-raw-nul-record.json": json.dumps({"Records": [CT_EVENT, {**CT_EVENT, "requestID": "R\x002"}, CT_EVENT]},
                                                     separators=(",", ":")).replace("\\u0000", "\x00").encode(),
        "gcp-array-raw-nul.json": ("[" + GCP + "," + GCP.replace('"i1"', '"i\x002"') + "]").encode(),
        "png-named.json": b"\x89PNG\r\n\x1a\n" + b"\x00" * 100,
        # encodings
        "latin1.jsonl": (CLAUDE.replace("hi", "caf\u00e9") + "\n").encode("latin-1"),
        "utf16-bom.jsonl": (DOOR + "\n").encode("utf-16"),
        "utf8-bom.jsonl": b"\xef\xbb\xbf" + (DOOR + "\n").encode(),
        "lone-surrogates-claude.jsonl": (CLAUDE.replace("hi", "\\udcb2\\ud800x") + "\n").encode(),
        "lone-surrogates-door.jsonl": (DOOR.replace('"x"}', '"\\udcb2"}') + "\n").encode(),
        "invalid-utf8.jsonl": (CLAUDE + "\n").encode().replace(b"hi", b"h\xff\xfei"),
        "crlf.jsonl": (DOOR + "\r\n" + DOOR.replace('"seq": 1', '"seq": 2') + "\r\n").encode(),
        # truncation and interleaving
        "claude-truncated-last.jsonl": (CLAUDE + "\n" + CLAUDE_TOOL[:60]).encode(),
        "door-truncated-middle.jsonl": (DOOR + "\n" + DOOR[:50] + "\n" + DOOR + "\n").encode(),
        "interleaved.jsonl": (CLAUDE[:80] + CLAUDE + "\n" + CLAUDE_TOOL + "\n").encode(),
        "concatenated.jsonl": (DOOR + DOOR + "\n").encode(),
        "codex-bad-arguments.jsonl": (CODEX + "\n" + CODEX_CALL + "\n").encode(),
        "s3-truncated-line.log": (S3_LINE + "\n" + S3_LINE[:70] + "\n").encode(),
        "s3-unbalanced-quote.log": (S3_LINE.replace('"GET /acme', 'GET /acme') + "\n").encode(),
        # wrong shapes
        "json-array.jsonl": b"[1, 2, 3]\n[\"a\"]\n",
        "scalars.jsonl": b"1\n\"x\"\nnull\ntrue\n",
        "nan-literals.jsonl": DOOR.replace('"seq": 1', '"seq": NaN').encode() + b"\n",
        "huge-number.jsonl": DOOR.replace('"seq": 1', '"seq": ' + "9" * 400).encode() + b"\n",
        "deep-nesting.jsonl": (b'{"type": "user", "message": ' + b"[" * 5000 + b"]" * 5000 + b"}\n"),
        "duplicate-keys.jsonl": b'{"ts": "2026-09-13T10:00:05Z", "ts": 5, "session": "s", "tool": "t", "decision": "allow"}\n',
        "door-wrong-types.jsonl": json.dumps({"ts": 12, "session": ["s"], "tool": None, "decision": "allow"}).encode() + b"\n",
        "door-bad-dates.jsonl": DOOR.replace("2026-09-13T10:00:05Z", "2026-02-30T25:61:00Z").encode() + b"\n",
        "claude-unknown-types.jsonl": b'{"type": "from-the-future", "x": 1}\n{"type": 7}\n{"no_type": true}\n',
        "cloudtrail-no-records.json": json.dumps({"Records": "nope"}).encode(),
        "cloudtrail-bad-records.json": json.dumps({"Records": [1, None, {"eventTime": "never"}, CT_EVENT]}).encode(),
        "cloudtrail-lookup-bad-inner.jsonl": json.dumps({"EventId": "e", "CloudTrailEvent": "{not json"}).encode() + b"\n",
        "gcp-no-payload.jsonl": b'{"timestamp": "2026-09-13T10:00:05Z", "logName": "x"}\n' + GCP.encode() + b"\n",
        "gcp-bad-timestamp.jsonl": GCP.replace("2026-09-13T10:00:05.123456789Z", "yesterday").encode() + b"\n",
        "azure-records-wrong.json": json.dumps({"records": [{"operationName": "GetBlob", "time": 5}, "x"]}).encode(),
        "otel-wrong.json": json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
            {"name": "execute_tool", "startTimeUnixNano": "soon", "attributes": "nope"}]}]}]}).encode(),
        "gemini-wrong.json": json.dumps({"sessionId": "s", "messages": [{"type": "gemini", "toolCalls": "x"}]}).encode(),
        "gateway-garbage.log": b"time=??? level=INFO msg=\"tool call\" tool=\n" * 3,
        # huge lines
        "claude-huge-line.jsonl": (json.dumps({"type": "user", "sessionId": "s", "uuid": "big",
                                               "timestamp": "2026-09-13T10:00:00Z",
                                               "message": {"role": "user", "content": "x" * 3_000_000}}) + "\n").encode(),
        "door-huge-arguments.jsonl": DOOR.replace('{"path": "x"}', json.dumps({"blob": "y" * 2_000_000})).encode() + b"\n",
        "one-line-no-newline.jsonl": DOOR.encode(),
        # gzip by magic, not by name
        "gz-without-suffix.dat": _gz((CLAUDE + "\n").encode()),
        "plain-with-gz-suffix.jsonl.gz": (DOOR + "\n").encode(),
    }
    paths = []
    for name, data in items.items():
        p = root / name
        p.write_bytes(data)
        paths.append(p)
    mixed = root / "mixed-folder"
    (mixed / "door" / "a").mkdir(parents=True)
    (mixed / "door" / "a" / "s1.jsonl").write_text(DOOR + "\nnot json\n")
    (mixed / "t.jsonl").write_text(CLAUDE + "\n" + CLAUDE_TOOL + "\n")
    (mixed / "trail.json.gz").write_bytes(_gz(json.dumps({"Records": [CT_EVENT]}).encode()))
    (mixed / "junk.bin").write_bytes(os.urandom(64))
    (mixed / "empty.jsonl").write_bytes(b"")
    paths.append(mixed)
    return paths


def _digest(p: Path) -> dict[str, tuple[str, int]]:
    files = [p] if p.is_file() else sorted(q for q in p.rglob("*") if q.is_file())
    return {str(f): (hashlib.sha256(f.read_bytes()).hexdigest(), f.stat().st_mtime_ns) for f in files}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> list[Path]:
    return corpus(tmp_path_factory.mktemp("hostile"))


def test_the_corpus_is_big_enough(hostile):
    assert len(hostile) >= 40


def _check_result(res, spec, inputs: set[str]) -> None:
    spec.validate(res.frame)
    QUARANTINE.validate(res.quarantine)
    q = res.quarantine
    assert q["source_file"].notna().all()
    assert set(q["source_file"].astype(str)) <= inputs, "quarantine names a file that was not given"
    assert q["error"].notna().all() and (q["error"].str.len() > 0).all()
    assert (q["line_no"].dropna() >= 1).all()
    # what we keep must be writable as evidence: Parquet (lone surrogates!) and HTML
    flat = res.frame.drop(columns=[c for c in res.frame.columns if res.frame[c].dtype == object])
    flat.to_parquet(io.BytesIO())
    res.frame.head(50).to_html().encode("utf-8")
    q.to_html().encode("utf-8")


@pytest.mark.parametrize("source", registry.names())
def test_every_source_survives_every_hostile_input(hostile, source):
    src = registry.get(source)
    spec = SPECS[src.frame]
    for p in hostile:
        before = _digest(p)
        try:
            res = src.load([p])
        except ReplaybookError as exc:
            assert str(exc), f"{source} on {p.name}: an error without a message"
        except RecursionError:  # pragma: no cover - would be a defect
            pytest.fail(f"{source} on {p.name}: RecursionError")
        else:
            _check_result(res, spec, set(_digest(p)))
        assert _digest(p) == before, f"{source} changed {p.name}"


def test_sniffing_places_or_declines_every_hostile_input(hostile):
    for p in hostile:
        before = _digest(p)
        loaded = replaybook.load(p)
        for frame, res in loaded.results.items():
            _check_result(res, SPECS[frame], set(before))
        # every file is accounted for: loaded by a source, or declined with a reason
        assert loaded.files["path"].notna().all()
        declined = loaded.files[loaded.files["source"].isna()]
        assert declined["note"].notna().all()
        assert _digest(p) == before


def test_specific_hostile_answers(hostile):
    by = {p.name: p for p in hostile}
    door = registry.get("door").load
    r = door([by["door-truncated-middle.jsonl"]])
    # the damaged middle line is set aside; the last line repeats the first in every field: one
    # call logged twice, counted once
    assert len(r.frame) == 1 and r.quarantine.line_no.tolist() == [2, 3]
    assert r.quarantine.kind.tolist() == ["invalid", "duplicate"]
    r = door([by["utf8-bom.jsonl"]])
    assert len(r.frame) + len(r.quarantine) == 1
    r = door([by["crlf.jsonl"]])
    assert r.frame.seq.tolist() == [1, 2]
    r = door([by["door-bad-dates.jsonl"]])
    assert r.frame.empty and "date-time" in r.quarantine.error.iloc[0]
    r = door([by["one-line-no-newline.jsonl"]])
    assert len(r.frame) == 1  # a complete last line without "\n" is not pending
    r = door([by["door-huge-arguments.jsonl"]])
    assert len(r.frame) == 1 and len(r.frame.args_key.iloc[0]) > 2_000_000
    r = door([by["plain-with-gz-suffix.jsonl.gz"]])
    assert len(r.frame) == 1
    cc = registry.get("claude-code").load
    r = cc([by["claude-truncated-last.jsonl"]])
    assert r.quarantine.kind.tolist() == ["pending"] and r.quarantine.line_no.tolist() == [2]
    r = cc([by["claude-huge-line.jsonl"]])
    assert r.frame.text_bytes.max() == 3_000_000 and r.frame.text.str.len().max() < 10_000
    r = cc([by["gz-without-suffix.dat"]])
    assert (r.frame.kind == "user_prompt").sum() == 1
    r = cc([by["deep-nesting.jsonl"]])
    assert len(r.frame) + len(r.quarantine) == 1
    r = cc([by["lone-surrogates-claude.jsonl"]])
    assert "\ufffd" in r.frame.text.iloc[0]
    loaded = replaybook.load(by["mixed-folder"])
    f = loaded.files.set_index(loaded.files.path.str.rsplit("/", n=1).str[-1])
    assert f.loc["s1.jsonl", "source"] == "door" and f.loc["s1.jsonl", "quarantined"] == 1
    assert f.loc["t.jsonl", "source"] == "claude-code"
    assert f.loc["trail.json.gz", "source"] == "aws.cloudtrail"
    assert pd.isna(f.loc["junk.bin", "source"]) and f.loc["empty.jsonl", "note"] == "empty file"
