"""The door log's fast path (``sources/_door_fast.py``) gives exactly what the per-line path gives.

Every input here is loaded three ways — ``load_door`` (fast path where it applies),
``door._load(fast=False)`` (every file line by line) and :func:`reference_load_door`, a verbatim
copy of ``load_door`` as it was before the fast path existed, with the later rule that a call
logged twice counts once applied to its result — and the frames, quarantines and
inputs must be equal, with ``arguments`` compared by their exact JSON spelling (so ``1`` vs
``1.0`` or key order would show).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import random
from pathlib import Path

import numpy as np
import orjson
import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from replaybook import _json
from replaybook._jsonl import expand_paths, iter_objects, quarantine_row, read_source
from replaybook._text import to_utc as pandas_to_utc
from replaybook.canonical import canonical_args
from replaybook.frames import CALLS, QUARANTINE, LoadResult
from replaybook.sources import _door_fast, _times, door
from replaybook.sources.door import _quick_ok, _schema_error, load_door, meta_call_id

FIX = Path(__file__).resolve().parents[1] / "fixtures"
HOSTILE = Path(__file__).resolve().parents[1] / "hostile" / "test_hostile.py"


# -- the loader as it was before the fast path (verbatim, for comparison) ------------------------

def _verbatim_reference_load_door(paths) -> LoadResult:
    cols: dict[str, list] = {c: [] for c in CALLS.names}
    quarantine: list[dict] = []
    inputs: list[dict] = []
    key_cache: dict[bytes, str] = {}
    for path in expand_paths(paths, accept=door._log_name):  # (a file named twice: read once, since)
        data, info = read_source(path, "door", "door log")
        inputs.append(info)
        default_agent = path.parent.name or None
        spath = str(path)
        for line in iter_objects(path, data, "door", quarantine):
            o = line.obj
            if not _quick_ok(o):
                err = _schema_error(o)
                if err is not None:
                    quarantine.append(quarantine_row(path, line, "door", err))
                    continue
            # (changed since: arguments logged as null were not logged — unknown, NA, never {})
            args = o.get("arguments", {})
            # (changed since: integers beyond 64 bits are read exactly, so written by replaybook._json)
            kb = _json.dumps(args, option=orjson.OPT_NON_STR_KEYS)
            key = key_cache.get(kb)
            if key is None and args is not None:
                key = key_cache[kb] = canonical_args(args)
            cols["door_session"].append(o["session"])
            cols["agent"].append(o.get("agent") or default_agent)
            cols["seq"].append(o.get("seq"))
            cols["ts"].append(o["ts"])
            cols["ts_end"].append(o.get("ts_end"))
            cols["duration_ms"].append(o.get("duration_ms"))
            cols["server"].append(o.get("server"))
            cols["tool"].append(o["tool"])
            cols["arguments"].append(args)
            cols["args_key"].append(key)
            cols["object"].append(o.get("object"))
            objs = o.get("objects")  # (a column added since)
            cols["objects"].append(None if objs is None else tuple(objs))
            cols["decision"].append(o["decision"])
            cols["approval"].append(o.get("approval"))  # (a column added since: the one change here)
            cols["rule"].append(o.get("rule"))
            cols["rows"].append(o.get("rows"))
            cols["bytes"].append(o.get("bytes"))
            cols["meta_call_id"].append(meta_call_id(o.get("meta")))
            cols["correlation"].append(o.get("correlation"))
            cols["error"].append(o.get("error"))
            cols["response_digest"].append(o.get("response_digest"))
            cols["object_digest"].append(o.get("object_digest"))
            # (columns added since: what the door logs of arguments it did not log, and of a line
            # it could not read as a call)
            cols["arguments_bytes"].append(o.get("arguments_bytes"))
            cols["arguments_digest"].append(o.get("arguments_digest"))
            invalid = o.get("arguments_invalid")
            cols["arguments_invalid"].append(None if invalid is None else canonical_args(invalid))
            cols["message_bytes"].append(o.get("message_bytes"))
            cols["source_file"].append(spath)
            cols["line_no"].append(line.line_no)
    ts = pandas_to_utc(cols["ts"])
    te = pandas_to_utc(cols["ts_end"])
    te_given = pd.Series(cols["ts_end"], dtype="object").notna().to_numpy()
    bad = ts.isna().to_numpy() | (te.isna().to_numpy() & te_given)
    cols["ts"], cols["ts_end"] = ts, te
    frame = CALLS.build(cols)
    if bad.any():
        for f, n in zip(frame.loc[bad, "source_file"], frame.loc[bad, "line_no"]):
            quarantine.append(quarantine_row(f, None, "door", _door_fast.DOOR_TIME_ERROR, line_no=int(n)))
        frame = frame[~bad].reset_index(drop=True)
    if len(frame):
        # (changed since: an end before the start gives no duration)
        missing = frame["duration_ms"].isna() & frame["ts_end"].notna() & (frame["ts_end"] >= frame["ts"])
        frame.loc[missing, "duration_ms"] = (
            (frame.loc[missing, "ts_end"] - frame.loc[missing, "ts"]).dt.total_seconds() * 1000.0
        )
        if frame["seq"].isna().any():
            order = frame.groupby("door_session").cumcount() + 1
            frame["seq"] = frame["seq"].fillna(order.astype("Int64"))
        frame = frame.sort_values(["door_session", "ts", "seq"], kind="stable").reset_index(drop=True)
    return LoadResult(frame=frame, quarantine=QUARANTINE.build(quarantine), inputs=inputs)


# -- comparing ---------------------------------------------------------------------------------

def _spelling(v) -> bytes:
    return _json.dumps(v, option=orjson.OPT_NON_STR_KEYS)


def _assert_same(a: LoadResult, b: LoadResult, *, notes: bool = True) -> None:
    """Equal frames, quarantines and inputs (the inputs' ``notes`` left out without ``notes``:
    the verbatim reference predates them)."""
    assert_frame_equal(a.frame, b.frame, check_exact=True)
    assert [_spelling(x) for x in a.frame["arguments"]] == [_spelling(x) for x in b.frame["arguments"]]
    assert [type(x) for x in a.frame["arguments"]] == [type(x) for x in b.frame["arguments"]]
    assert_frame_equal(a.quarantine, b.quarantine, check_exact=True)
    if notes:
        assert a.inputs == b.inputs
    else:
        # (the reference reads files with read_source, whose own note on a cut gzip stream it keeps)
        assert [{k: v for k, v in i.items() if k != "notes"} for i in a.inputs] == \
            [{k: v for k, v in i.items() if k != "notes"} for i in b.inputs]
    CALLS.validate(a.frame)


def _without_repeats(res: LoadResult) -> LoadResult:
    """The reference's result with the rule the loader applies after reading (a call logged twice
    in every field counts once: ``door._drop_repeated_calls``), which the reference predates."""
    q = res.quarantine.to_dict("records")
    inputs = [dict(i) for i in res.inputs]
    frame = door._drop_repeated_calls(res.frame, q, inputs)
    return LoadResult(frame=frame, quarantine=QUARANTINE.build(q), inputs=inputs)


def reference_load_door(paths) -> LoadResult:
    """The verbatim reference, then the rule the loader applies after reading (:func:`_without_repeats`)."""
    return _without_repeats(_verbatim_reference_load_door(paths))


def _load_three(paths, *, fast_files: int | None = None) -> LoadResult:
    """Load ``paths`` three ways and assert they agree; ``fast_files``: how many files the fast
    decoder must have taken."""
    taken = []
    real = _door_fast.decode_file

    def spy(*args, **kw):
        got = real(*args, **kw)
        taken.append(bool(got))
        return got

    _door_fast.decode_file = spy
    try:
        fast = load_door(paths)
    finally:
        _door_fast.decode_file = real
    slow = door._load(paths, fast=False)
    ref = reference_load_door(paths)
    _assert_same(fast, slow)
    _assert_same(fast, ref, notes=False)
    if fast_files is not None:
        assert sum(taken) == fast_files, taken
    return fast


# -- inputs ------------------------------------------------------------------------------------

GOOD = {"ts": "2026-09-13T10:00:05.600Z", "ts_end": "2026-09-13T10:00:05.850Z", "seq": 1, "session": "s1",
        "agent": "analyst", "server": "files", "tool": "list_folder", "arguments": {"path": "demo/"},
        "object": "demo/", "decision": "allow", "rule": "allow-demo", "rows": 3, "bytes": 412}


def _line(o) -> bytes:
    return o if isinstance(o, bytes) else orjson.dumps(o)


def _write(root: Path, rel: str, lines, *, end: bytes = b"\n", sep: bytes = b"\n") -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(sep.join(_line(x) for x in lines) + end)
    return p


def _generated(root: Path, seed: int, n_files: int = 12) -> list[Path]:
    """Door logs in the shapes doors write: the bench generator's and the proxy's key orders,
    ``json.dumps`` spacing, meta/evidence/error variants, shared arguments, missing fields."""
    r = random.Random(seed)
    pool = [{"path": f"demo/f{i}.csv"} for i in range(5)] + [
        {"path": "demo/cars.parquet", "columns": ["mpg", "cyl"]}, {"sql": "SELECT 1", "limit": 1.0},
        {"sql": "SELECT 1", "limit": 1}, {"b": 1, "a": {"y": [1, 2.5, None, True], "x": "é"}},
        {"a": {"y": [1, 2.5, None, True], "x": "é"}, "b": 1}, {}, {"q": "caf\u00e9 \u2603 \U0001f600"},
        {"n": -0.0}, {"n": 1e300, "m": 12345678901234567890}, {"s": "a\"b\\c\n\u0001"}]
    out = []
    for f in range(n_files):
        agent = r.choice(["agent-a", "svc-1", "x"])
        session = f"door-{seed}-{f % 9}"  # some sessions span files
        style = r.choice(["bench", "proxy", "dumps"])
        meta = r.random() < 0.5
        evidence = r.random() < 0.3
        t = 1_788_000_000_000 + r.randrange(10**7)
        lines = []
        for seq in range(1, r.randint(1, 60)):
            t += r.randrange(0, 3000)
            ts = pd.Timestamp(t, unit="ms", tz="UTC")
            ts_text = r.choice([ts.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z", ts.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                ts.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"])
            if r.random() < 0.02:
                ts_text = ts.tz_convert("Europe/Berlin").isoformat()
            dur = r.randrange(1, 900)
            te = (ts + pd.Timedelta(milliseconds=dur)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
            args = r.choice(pool)
            deny = r.random() < 0.1
            o = {"ts": ts_text, "ts_end": te if r.random() < 0.9 else None, "seq": seq, "session": session,
                 "agent": agent if r.random() < 0.9 else r.choice([None, ""]), "server": "wh",
                 "tool": r.choice(["read", "query", "list_folder"])}
            if style == "proxy" and r.random() < 0.1:
                o["method"] = "resources/read"
            o.update({"arguments": args if r.random() < 0.95 else None, "object": args.get("path"),
                      "decision": "deny" if deny else r.choice(["allow", "ask"]),
                      "rule": "no" if deny else "yes", "rows": None if deny else r.randrange(5000),
                      "bytes": None if deny else r.randrange(10**6)})
            if r.random() < 0.05:
                o["error"] = "upstream timeout after 30s"
            if meta:
                o["meta"] = r.choice([{"claudecode/toolUseId": f"toolu_{r.getrandbits(64):x}", "progressToken": seq},
                                      {"claudecode/toolUseId": "", "toolUseId": "t2"}, {"call_id": "c", "x": [1, {"y": 2}]},
                                      {}, None])
            if evidence:
                o["v"] = 1
                o["duration_ms"] = r.choice([float(dur), dur, 0, 1.5])
                o["response_digest"] = f"sha256:{r.getrandbits(256):064x}"
                o["object_digest"] = None
                o["correlation"] = f"door-{agent}"
            if style == "bench" and "seq" in o and r.random() < 0.02:
                del o["seq"]  # numbered by file order in its session
            if style == "dumps":
                lines.append(json.dumps(o).encode())
            elif style == "proxy":
                lines.append(orjson.dumps(dict(sorted(o.items())) if r.random() < 0.5 else o))
            else:
                lines.append(orjson.dumps(o))
        if lines:
            out.append(_write(root, f"{agent}/{session}-{f}.jsonl", lines))
    return out


def test_generated_logs_take_the_fast_path_and_match(tmp_path):
    files = _generated(tmp_path, 1, 24)
    res = _load_three(tmp_path, fast_files=len(files))
    assert len(res.frame) > 100 and res.frame["meta_call_id"].notna().any()
    assert res.frame["seq"].notna().all()


@pytest.mark.parametrize("seed", [2, 3, 4])
def test_generated_logs_given_as_files_twice(tmp_path, seed):
    files = _generated(tmp_path, seed)
    _load_three(files + files[:3], fast_files=len(files))  # each file read once


# one line each; every one must make its file go the per-line way and give the same result
REJECTED = {
    "unknown-key": {**GOOD, "extra": 1},
    "seq-null": {**GOOD, "seq": None},
    "seq-float": b'{"ts":"2026-09-13T10:00:05Z","seq":1.0,"session":"s","tool":"t","decision":"allow"}',
    "seq-negative": {**GOOD, "seq": -1},
    "seq-bool": {**GOOD, "seq": True},
    "seq-huge": {**GOOD, "seq": 2**63},
    "seq-string": {**GOOD, "seq": "1"},
    "v-2": {**GOOD, "v": 2},
    "v-float": b'{"ts":"2026-09-13T10:00:05Z","v":1.0,"session":"s","tool":"t","decision":"allow"}',
    "v-true": {**GOOD, "v": True},
    "method-null": {**GOOD, "method": None},
    "decision-bad": {**GOOD, "decision": "maybe"},
    "session-empty": {**GOOD, "session": ""},
    "tool-empty": {**GOOD, "tool": ""},
    "tool-missing": {k: v for k, v in GOOD.items() if k != "tool"},
    "rows-negative": {**GOOD, "rows": -1},
    "bytes-string": {**GOOD, "bytes": "5"},
    "bytes-float": {**GOOD, "bytes": 5.5},
    "duration-negative": {**GOOD, "duration_ms": -1},
    "duration-string": {**GOOD, "duration_ms": "1"},
    "duration-bool": {**GOOD, "duration_ms": True},
    "duration-huge-int": b'{"ts":"2026-09-13T10:00:05Z","duration_ms":99999999999999999999999,"session":"s","tool":"t","decision":"allow"}',
    "digest-upper": {**GOOD, "response_digest": "sha256:" + "A" * 64},
    "digest-newline": {**GOOD, "object_digest": "sha256:" + "a" * 64 + "\n"},
    "ts-lowercase": {**GOOD, "ts": "2026-09-13t10:00:05.600z"},
    "ts-short": {**GOOD, "ts": "2026-09-13T10:00Z"},
    "ts-not-iso": {**GOOD, "ts": "13/09/2026 10:00:05 +0000"},
    "ts-number": {**GOOD, "ts": 1788000000},
    "ts-end-number": {**GOOD, "ts_end": 5},
    "agent-number": {**GOOD, "agent": 5},
    "arguments-list": {**GOOD, "arguments": []},
    "arguments-zero": {**GOOD, "arguments": 0},
    "arguments-empty-string": {**GOOD, "arguments": ""},
    "arguments-false": {**GOOD, "arguments": False},
    "arguments-string": {**GOOD, "arguments": "x"},
    "arguments-huge-float": b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow","arguments":{"n":1e400}}',
    "arguments-lone-surrogate": b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow","arguments":{"p":"\\udcb2"}}',
    "object-lone-surrogate": b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow","object":"\\ud800x"}',
    "arguments-invalid-utf8": b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow","arguments":{"p":"\xff"}}',
    "meta-invalid-utf8": b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow","meta":{"x":"\xfe"}}',
    "meta-list": {**GOOD, "meta": []},
    "meta-string": {**GOOD, "meta": "toolu_1"},
    "meta-id-number": {**GOOD, "meta": {"toolUseId": 5, "call_id": "c"}},
    "dup-first-bad": b'{"ts":"2026-09-13T10:00:05Z","seq":"x","seq":3,"session":"s","tool":"t","decision":"allow"}',
    "dup-second-bad": b'{"ts":"2026-09-13T10:00:05Z","seq":3,"seq":"x","session":"s","tool":"t","decision":"allow"}',
    "nan": b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow","duration_ms":NaN}',
    "not-json": b"not json",
    "a-list": b'["a list"]',
    "scalar": b"5",
    "two-objects": orjson.dumps(GOOD) + b" " + orjson.dumps(GOOD),
    "objects-string": {**GOOD, "objects": "demo/a.csv"},
    "objects-numbers": {**GOOD, "objects": ["demo/a.csv", 5]},
    "trailing-comma": b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow",}',
    "control-char": b'{"ts":"2026-09-13T10:00:05Z","session":"s\x01","tool":"t","decision":"allow"}',
    # raw control characters, which JSON allows only escaped: the line is quarantined, the others read
    "raw-nul-in-string": orjson.dumps({**GOOD, "arguments": {"path": "a\u0000b"}}).replace(b"\\u0000", b"\x00"),
    "raw-tab-and-unit-separator": orjson.dumps({**GOOD, "object": "a\tb\x1fc"}).replace(b"\\t", b"\t").replace(
        b"\\u001f", b"\x1f"),
    "raw-nul-between-tokens": orjson.dumps(GOOD).replace(b',"session"', b',\x00"session"', 1),
    # arguments that are not an object, as the door logs them (read line by line), and wrong types
    "arguments-invalid": {**GOOD, "arguments": None, "decision": "deny", "rule": "door:invalid-arguments",
                          "arguments_invalid": ["demo/a.csv", {"b": 1, "a": 1.0}]},
    "arguments-invalid-string": {**GOOD, "arguments": None, "arguments_invalid": "caf\u0065\u0301"},
    "arguments-invalid-null": {**GOOD, "arguments_invalid": None},
    "arguments-bytes-negative": {**GOOD, "arguments_bytes": -1},
    "arguments-bytes-string": {**GOOD, "arguments_bytes": "72"},
    "arguments-bytes-huge": b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow","arguments_bytes":9223372036854775808}',
    "arguments-digest-upper": {**GOOD, "arguments": None, "arguments_digest": "sha256:" + "A" * 64},
    "message-bytes-float": {**GOOD, "message_bytes": 1.5},
    "meta-bytes-negative": {**GOOD, "meta_bytes": -1, "meta_digest": "sha256:" + "a" * 64},
    "meta-bytes-string": {**GOOD, "meta_bytes": "72"},
    "meta-bytes-huge": b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow","meta_bytes":9223372036854775808}',
    "meta-digest-upper": {**GOOD, "meta_bytes": 72, "meta_digest": "sha256:" + "A" * 64},
    "meta-kept-id-number": {**GOOD, "meta": {"claudecode/toolUseId": 12345}, "meta_bytes": 2_000_000,
                            "meta_digest": "sha256:" + "b" * 64},
}

# lines the fast path takes, with values that are easy to get wrong
ACCEPTED = {
    "arguments-big-int": b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow","arguments":{"n":123456789012345678901234567890}}',
    "meta-big-int": b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow","meta":{"x":123456789012345678901234567890,"call_id":"c"}}',
    "dup-arguments": b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow","arguments":{"a":1},"arguments":{"a":1.0}}',
    "dup-decision": b'{"ts":"2026-09-13T10:00:05Z","decision":"deny","session":"s","tool":"t","decision":"allow"}',
    "dup-meta": b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow","meta":{"call_id":"a"},"meta":{"toolUseId":"b"}}',
    "ts-past-ns-range": {**GOOD, "ts": "2262-04-11T23:47:16.854775808Z"},
    "dup-keys-last-wins": b'{"ts":"2026-09-13T10:00:05Z","seq":3,"seq":4,"session":"s","tool":"t","decision":"allow",'
                          b'"arguments":{"a":1,"a":2.0},"meta":{"call_id":"a","call_id":"b"}}',
    "escapes": b'{"ts":"2026-09-13T10:00:05Z","session":"s\\u00e9\\n\\"\\/","tool":"t\\ud83d\\ude00","decision":"allow",'
               b'"arguments":{"k\\u00e9":"\\u0000\\t"},"error":"x\\\\y"}',
    "spaces": b'{ "ts" : "2026-09-13T10:00:05Z" , "session" : "s" ,"tool":"t",  "decision":"allow", '
              b'"arguments" : { "b" : 1 , "a" : [ 1.0 , -0.0 ] } }',
    "floats": b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow","duration_ms":1E2,'
              b'"arguments":{"x":0.1,"y":1e-320,"z":2.5e10,"w":123456789012345678}}',
    "nulls": b'{"ts":"2026-09-13T10:00:05Z","ts_end":null,"session":"s","agent":null,"server":null,"tool":"t",'
             b'"arguments":null,"object":null,"decision":"ask","rule":null,"rows":null,"bytes":null,"meta":null,'
             b'"correlation":null,"error":null,"response_digest":null,"object_digest":null,"duration_ms":null}',
    "limits": orjson.dumps({**GOOD, "seq": 2**63 - 1, "rows": 0, "bytes": 2**63 - 1, "duration_ms": 0.0}),
    "unicode-ts-length": {**GOOD, "ts": "2026-09-13T10:00:05.600Z\u00e9"},
    "ts-no-zone": {**GOOD, "ts": "2026-09-13T10:00:05.600", "ts_end": "2026-09-13T10:00:05.850"},
    "ts-end-no-zone": {**GOOD, "ts_end": "2026-09-13T10:00:06"},
    "ts-offset": {**GOOD, "ts": "2026-09-13T12:00:05.600+02:00", "ts_end": "2026-09-13T10:00:06-00:00"},
    "ts-bad-date": {**GOOD, "ts": "2026-02-30T10:00:05.600Z"},
    "ts-leap-second": {**GOOD, "ts": "2026-09-13T23:59:60Z"},
    "ts-end-bad": {**GOOD, "ts_end": "yesterday"},
    "ts-end-empty": {**GOOD, "ts_end": ""},
    "ts-ten-digits": {**GOOD, "ts": "2026-09-13T10:00:05.1234567891Z"},
    "ts-space": {**GOOD, "ts": "2026-09-13T10:00:05 Z   "},
    "ts-arabic-digits": {**GOOD, "ts": "2026-09-13T10:00:0\u0665.600Z"},
    "method-and-v": {**GOOD, "method": "resources/read", "v": 1},
    "objects": {**GOOD, "object": "demo/a.csv", "objects": ["demo/a.csv", "demo/b c.csv"]},
    "objects-empty-and-null": b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow",'
                              b'"objects":[]}\n{"ts":"2026-09-13T10:00:06Z","session":"s","tool":"t",'
                              b'"decision":"allow","objects":null}',
    "meta-empty-ids": {**GOOD, "meta": {"claudecode/toolUseId": "", "toolUseId": None, "tool_use_id": "",
                                         "call_id": "c9", "openai/callId": "o"}},
    "meta-other-only": {**GOOD, "meta": {"progressToken": 3, "deep": {"a": [1, {"b": None}]}}},
    # arguments the door did not log: null (unknown), with what it logs instead
    "arguments-too-large": {**GOOD, "arguments": None, "object": None, "decision": "deny",
                            "rule": "door:arguments-too-large", "rows": None, "bytes": None,
                            "arguments_bytes": 2**63 - 1, "arguments_digest": "sha256:" + "a" * 64},
    "arguments-too-large-and-logged": {**GOOD, "arguments_bytes": 0, "arguments_digest": None},
    "message-bytes": {**GOOD, "tool": "(invalid)", "arguments": None, "decision": "deny",
                      "rule": "door:message-too-large", "message_bytes": 16 << 20},
    # a _meta too large to log: its size and digest, and the tool-use id kept (or none)
    "meta-too-large": {**GOOD, "meta": {"claudecode/toolUseId": "toolu_1"}, "meta_bytes": 2**63 - 1,
                       "meta_digest": "sha256:" + "c" * 64},
    "meta-too-large-no-id": {**GOOD, "meta": None, "meta_bytes": 1_048_577, "meta_digest": "sha256:" + "d" * 64},
    "arguments-null-spaced": b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow","arguments" : null }',
    "arguments-absent": {k: v for k, v in GOOD.items() if k != "arguments"},
}


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_lines_the_fast_path_refuses_go_the_per_line_way(tmp_path, name):
    p = _write(tmp_path, "a/s.jsonl", [GOOD, REJECTED[name], {**GOOD, "seq": 2}])
    _load_three(p, fast_files=0)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_lines_the_fast_path_takes_match(tmp_path, name):
    p = _write(tmp_path, "a/s.jsonl", [GOOD, ACCEPTED[name], {**GOOD, "seq": 2}])
    _load_three(p, fast_files=1)


def test_all_tricky_lines_in_one_load(tmp_path):
    for name, line in {**REJECTED, **ACCEPTED}.items():
        _write(tmp_path, f"agent/{name}.jsonl", [GOOD, line])
    _generated(tmp_path, 7)
    _load_three(tmp_path)


LAYOUTS = {
    "no-final-newline": dict(end=b""),
    "crlf": dict(sep=b"\r\n", end=b"\r\n"),
    "blank-line-between": dict(sep=b"\n\n"),
    "blank-line-at-end": dict(end=b"\n\n"),
    "space-line": dict(sep=b"\n  \n"),
    "trailing-space": dict(sep=b" \n", end=b" \n"),
    "leading-space": dict(sep=b"\n "),
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_file_layouts_the_fast_path_refuses(tmp_path, name):
    p = _write(tmp_path, "a/s.jsonl", [GOOD, {**GOOD, "seq": 2}], **LAYOUTS[name])
    _load_three(p, fast_files=0)


def test_values_spanning_lines_are_not_taken_for_lines(tmp_path):
    # decode_lines reads values separated by any whitespace: these 3 lines hold 3 objects, but
    # no line is one object, so the per-line path quarantines all three
    lines = [b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow","arguments":{"a":[{"x":1}',
             b'{"y":2}]}}',
             orjson.dumps(GOOD) + b"  " + orjson.dumps(GOOD)]
    p = _write(tmp_path, "a/s.jsonl", lines)
    res = _load_three(p, fast_files=0)
    assert res.frame.empty and len(res.quarantine) == 3


def test_bom_gzip_and_empty_files(tmp_path):
    body = orjson.dumps(GOOD) + b"\n" + orjson.dumps({**GOOD, "seq": 2}) + b"\n"
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + body)
    (tmp_path / "a" / "gz.jsonl").write_bytes(gzip.compress(body, mtime=0))
    (tmp_path / "a" / "empty.jsonl").write_bytes(b"")
    (tmp_path / "a" / "newline.jsonl").write_bytes(b"\n")
    res = _load_three(tmp_path, fast_files=1)
    # the BOM is read past, not the line set aside; the two files hold the same two calls (one
    # agent folder, one session): each counted once, the gzip file's copies set aside as such
    assert len(res.frame) == 2 and res.quarantine["kind"].tolist() == ["duplicate", "duplicate"]
    assert set(res.quarantine["source_file"]) == {str(tmp_path / "a" / "gz.jsonl")}


def test_fixtures_and_hostile_corpus(tmp_path):
    _load_three(FIX / "join_trap" / "door")
    spec = importlib.util.spec_from_file_location("_hostile_corpus", HOSTILE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for p in mod.corpus(tmp_path):
        try:
            _load_three(p)
        except Exception as exc:  # the same error both ways
            with pytest.raises(type(exc)):
                reference_load_door(p)


@pytest.mark.parametrize("depth", [300, 600])
def test_arguments_nested_deeper_than_orjson_writes_load_as_in_transcripts(tmp_path, depth):
    # orjson (the canonical key's writer) stops at 254 levels: such lines had been quarantined
    # ("cannot be canonicalised") while a transcript of the same depth loads; the loader before
    # the fast path crashed here (TypeError / RecursionError)
    line = (b'{"ts":"2026-09-13T10:00:05Z","session":"s","tool":"t","decision":"allow","arguments":{"a":'
            + b"[" * depth + b"]" * depth + b"}}")
    p = _write(tmp_path, "a/s.jsonl", [GOOD, line, {**GOOD, "seq": 2}])
    fast, slow = load_door(p), door._load(p, fast=False)
    _assert_same(fast, slow)
    assert fast.quarantine.empty
    assert len(fast.frame) == 3
    deep = fast.frame[fast.frame["tool"] == "t"]
    assert deep["args_key"].iloc[0] == '{"a":' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("ts", ["1500-09-13T10:00:05.600Z", "3000-09-13T10:00:05Z"])
def test_ts_beyond_nanosecond_range_is_quarantined(tmp_path, ts):
    # a date-time datetime64[ns] cannot hold is evidence of a broken clock or a forged line:
    # the line is quarantined with its number, the rest of the file loads
    p = _write(tmp_path, "a/s.jsonl", [GOOD, {**GOOD, "ts": ts}])
    for load in (load_door, lambda q: door._load(q, fast=False), reference_load_door):
        res = load(p)
        assert len(res.frame) == 1
        assert list(res.quarantine["line_no"]) == [2]
        assert "date-time" in res.quarantine["error"][0]


def test_existing_door_test_inputs(tmp_path):
    from tests.sources import test_door as T  # noqa: F401 - only when importable as a package
    for fn in (T.test_bad_lines_are_quarantined_with_line_numbers, T.test_optional_fields_are_checked_as_strictly_as_the_schema):
        d = tmp_path / fn.__name__
        d.mkdir()
        fn(d)
        _load_three(d)


def test_utc_ns_is_to_utc_with_given():
    texts = ["2026-09-13T10:00:05.600Z", None, "", "x", "2026-09-13T10:00:05.5-07:30", "2026-02-30T10:00:00Z"]
    ns, given = _times.utc_ns(texts)
    expect = pandas_to_utc(texts)
    assert list(given) == [True, False, True, True, True, True]
    assert list(ns == np.iinfo(np.int64).min) == list(expect.isna())
    assert list(ns[expect.notna().to_numpy()]) == [t.value for t in expect.dropna()]


def test_zoneless_ts_is_noted_alike_both_ways(tmp_path):
    p = _write(tmp_path, "a/s.jsonl", [GOOD, {**GOOD, "seq": 2, "ts": "2026-09-13T10:00:05.700"}, {**GOOD, "seq": 3}])
    res = _load_three(p, fast_files=1)
    assert res.inputs[0]["notes"] == [
        "ts without a time zone on line 2 ('2026-09-13T10:00:05.700'): read as UTC; RFC 3339 requires an "
        "offset — if the door wrote local time its calls are off by the zone's offset"]
