"""Faults and load, loopback only and bounded: hostile requests, SIGKILL mid-run, 500 calls.

Hostile input must be sent as raw bytes, so these tests drive the door over its pipes directly
(messages that are valid are still built with the SDK's JSON-RPC models)."""

from __future__ import annotations

import hashlib
import json
import os
import selectors
import signal
import subprocess
import time
from pathlib import Path

import mcp_types as types
import orjson
import pandas as pd
import pytest

from replaybook.sources.door import load_door

from .conftest import door_cmd, fixture_server_cmd, run_session, validate_lines

FAULT_RULES = """\
version: 1
max_argument_bytes: 100000
rules:
  - id: deny-dotenv
    decision: deny
    paths: ["**/.env"]
  - id: allow-demo
    decision: allow
    tools: [list_folder, read_object, query]
    paths: ["demo", "demo/**"]
  - id: allow-tools-without-objects
    decision: allow
    tools: [crash, no_such_tool]
"""


class RawDoor:
    """A door process spoken to over raw pipes (newline-delimited JSON-RPC)."""

    def __init__(self, cmd: list[str], stderr: Path):
        self._err = open(stderr, "wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err)
        self._sel = selectors.DefaultSelector()
        self._sel.register(self.proc.stdout, selectors.EVENT_READ)
        self._buf = b""
        self._next = 100

    def send_raw(self, data: bytes) -> None:
        self.proc.stdin.write(data if data.endswith(b"\n") else data + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict | None = None, rid=None) -> int:
        if rid is None:
            self._next += 1
            rid = self._next
        msg = types.JSONRPCRequest(jsonrpc="2.0", id=rid, method=method, params=params)
        self.send_raw(msg.model_dump_json(by_alias=True, exclude_none=True).encode())
        return rid

    def notify(self, method: str, params: dict | None = None) -> None:
        msg = types.JSONRPCNotification(jsonrpc="2.0", method=method, params=params)
        self.send_raw(msg.model_dump_json(by_alias=True, exclude_none=True).encode())

    def recv(self, timeout: float = 20.0) -> dict:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not self._sel.select(left):
                raise TimeoutError("no answer from the door")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise EOFError("the door closed stdout")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return orjson.loads(line)

    def initialize(self) -> dict:
        params = types.InitializeRequestParams(
            protocol_version="2025-11-25", capabilities=types.ClientCapabilities(),
            client_info=types.Implementation(name="raw-test", version="0")).model_dump(
            by_alias=True, exclude_none=True, mode="json")
        self.request("initialize", params, rid=1)
        ans = self.recv()
        self.notify("notifications/initialized")
        return ans

    def call(self, name: str, arguments, rid=None) -> dict:
        rid = self.request("tools/call", {"name": name, "arguments": arguments}, rid)
        ans = self.recv()
        assert ans["id"] == rid
        return ans

    def close(self, timeout: float = 15.0) -> int:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout)
        finally:
            self._err.close()


@pytest.fixture
def fault_rules(tmp_path: Path) -> Path:
    p = tmp_path / "fault-rules.yaml"
    p.write_text(FAULT_RULES)
    return p


def test_hostile_requests_get_clear_errors_and_log_lines_and_the_door_survives(tmp_path, data_root, fault_rules):
    log_root = tmp_path / "logs"
    door = RawDoor(door_cmd(fault_rules, log_root, fixture_server_cmd(data_root), session="hostile",
                            extra=["--max-message-bytes", "1000000"]), tmp_path / "door.err")
    try:
        assert door.initialize()["result"]["serverInfo"]["name"] == "door-fixture"

        def text(ans):
            return ans["result"]["content"][0]["text"]

        big = door.call("read_object", {"path": "demo/notes.txt", "pad": "x" * 300_000}, rid=2)
        assert big["result"]["isError"] and "door:arguments-too-large" in text(big)
        trav = door.call("read_object", {"path": "demo/../reference/.env"}, rid=3)
        assert "door:path-traversal" in text(trav)
        trav2 = door.call("read_object", {"path": "../../etc/passwd"}, rid=4)
        assert "door:path-traversal" in text(trav2)
        door.send_raw(b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_object",'
                      b'"arguments":{"path":"demo/\xff\xfe.csv"}}}')
        bad = door.recv()
        assert bad["id"] == 5 and "door:invalid-utf8" in text(bad)
        door.send_raw(b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_object",'
                      b'"arguments":{"path":"demo/\\ud800.csv"}}}')
        surrogate = door.recv()  # a lone surrogate escape: JSON, but no Unicode text (the SDK refuses it)
        assert surrogate["id"] == 6 and surrogate["error"]["code"] == types.INVALID_REQUEST
        assert "door:invalid-utf8" in surrogate["error"]["message"]
        assert "lone surrogate escape" in surrogate["error"]["message"]
        door.send_raw(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{')
        broken = door.recv()
        assert broken["id"] == 7 and broken["error"]["code"] == types.PARSE_ERROR
        door.send_raw(b"[1,2,3]")
        batch = door.recv()
        assert batch["id"] is None and batch["error"]["code"] == types.INVALID_REQUEST
        door.request("secrets/dump", {"all": True}, rid=8)
        unknown = door.recv()
        assert unknown["id"] == 8 and unknown["error"]["code"] == types.METHOD_NOT_FOUND
        assert "door:method-not-allowed" in unknown["error"]["message"]
        door.request("tools/call", {"arguments": {"path": "demo"}}, rid=9)
        noname = door.recv()
        assert noname["id"] == 9 and noname["error"]["code"] == types.INVALID_PARAMS
        args_list = door.call("read_object", ["demo/notes.txt"], rid=10)
        assert "door:invalid-arguments" in text(args_list)
        door.send_raw(b'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"read_object",'
                      b'"arguments":{"path":"' + b"y" * 1_200_000 + b'"}}}')
        huge = door.recv()
        assert huge["id"] == 11 and "door:message-too-large" in huge["error"]["message"]
        # … and the door still works
        ok = door.call("read_object", {"path": "demo/notes.txt"}, rid=12)
        assert not ok["result"]["isError"] and text(ok) == "cars from 1974\n"
    finally:
        rc = door.close()
    assert rc == 0, (tmp_path / "door.err").read_text()
    lines = validate_lines(log_root / "analyst" / "hostile.jsonl")
    assert [(o["tool"], o["decision"], o["rule"]) for o in lines] == [
        ("read_object", "deny", "door:arguments-too-large"),
        ("read_object", "deny", "door:path-traversal"),
        ("read_object", "deny", "door:path-traversal"),
        ("read_object", "deny", "door:invalid-utf8"),
        ("read_object", "deny", "door:invalid-utf8"),
        ("tools/call", "deny", "door:invalid-request"),
        ("(invalid)", "deny", "door:invalid-request"),
        ("secrets/dump", "deny", "door:method-not-allowed"),
        ("(invalid)", "deny", "door:invalid-request"),
        ("read_object", "deny", "door:invalid-arguments"),
        ("read_object", "deny", "door:message-too-large"),  # (its name read from the line's start)
        ("read_object", "allow", "allow-demo"),
    ]
    assert lines[0]["arguments"] is None and lines[0]["arguments_bytes"] > 300_000
    assert lines[0]["arguments_digest"].startswith("sha256:")
    assert lines[3]["arguments"] == {"path": "demo/\ufffd\ufffd.csv"}
    assert lines[4]["arguments"] == {"path": "demo/\ufffd.csv"}  # what the agent asked for, made safe
    assert lines[10]["message_bytes"] > 1_000_000 and lines[9]["arguments_invalid"] == ["demo/notes.txt"]
    assert all(o["error"] for o in lines[4:8])
    res = load_door(log_root)
    assert res.quarantine.empty and len(res.frame) == len(lines)


def test_lone_surrogate_lines_of_every_shape_are_refused_and_the_door_lives_on(tmp_path, data_root, fault_rules):
    """A lone surrogate escape in a call nested 500 levels deep (deeper than the SDK reads), in a
    batch, beside bytes that are not UTF-8, and in the id itself: each is refused and logged as
    door:invalid-utf8 — none takes the door down."""
    log_root = tmp_path / "logs"
    door = RawDoor(door_cmd(fault_rules, log_root, fixture_server_cmd(data_root), session="lone"), tmp_path / "d.err")
    try:
        door.initialize()
        deep = b'{"a":' * 500 + b"1" + b"}" * 500
        door.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_object\\ud800",'
                      b'"arguments":' + deep + b"}}")
        got = door.recv()  # (nested past what the SDK reads: that rule first)
        assert got["id"] == 2 and "door:nested-too-deep" in got["error"]["message"]
        door.send_raw(b'[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_object",'
                      b'"arguments":{"path":"demo/\\ud800"}}}]')
        got = door.recv()
        assert got["id"] is None and "door:invalid-utf8" in got["error"]["message"]
        door.send_raw(b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_object",'
                      b'"arguments":{"path":"demo/\\ud800\xff.csv"}}}')
        got = door.recv()
        assert got["id"] == 4 and "door:invalid-utf8" in got["error"]["message"]
        door.send_raw(b'{"jsonrpc":"2.0","id":"x\\ud800","method":"tools/call","params":{"name":"read_object",'
                      b'"arguments":{"path":"demo/notes.txt"}}}')
        got = door.recv()
        assert got["id"] is None and "door:invalid-utf8" in got["error"]["message"]  # (an id no one can echo)
        ok = door.call("read_object", {"path": "demo/notes.txt"}, rid=5)
        assert not ok["result"]["isError"]
    finally:
        rc = door.close()
    assert rc == 0, (tmp_path / "d.err").read_text()
    lines = validate_lines(log_root / "analyst" / "lone.jsonl")
    assert [(o["tool"], o["rule"]) for o in lines] == [
        ("read_object\ufffd", "door:nested-too-deep"), ("(invalid)", "door:invalid-utf8"),
        ("read_object", "door:invalid-utf8"), ("read_object", "door:invalid-utf8"), ("read_object", "allow-demo")]
    assert lines[0]["arguments"] is None and lines[2]["arguments"] == {"path": "demo/\ufffd\ufffd.csv"}


def test_sigkill_mid_run_leaves_a_log_that_loads_up_to_the_last_completed_call(tmp_path, data_root, fault_rules):
    log_root = tmp_path / "logs"
    door = RawDoor(door_cmd(fault_rules, log_root, fixture_server_cmd(data_root), session="killed"),
                   tmp_path / "door.err")
    door.initialize()
    answered = 0
    for i in range(40):
        assert not door.call("read_object", {"path": "demo/notes.txt", "i": i})["result"]["isError"]
        answered += 1
    for i in range(20):  # a burst in flight …
        door.request("query", {"path": "demo/cars.csv", "i": i})
    for _ in range(5):
        door.recv()
        answered += 1
    os.kill(door.proc.pid, signal.SIGKILL)  # … killed mid-run
    door.proc.wait(10)
    door._err.close()
    log = log_root / "analyst" / "killed.jsonl"
    raw = log.read_bytes()
    assert raw.endswith(b"\n")
    lines = validate_lines(log)
    assert answered <= len(lines) <= 60
    assert [o["seq"] for o in lines] == list(range(1, len(lines) + 1))
    res = load_door(log_root)
    assert res.quarantine.empty and len(res.frame) == len(lines)


def test_an_upstream_error_and_a_crashing_server_are_logged_and_answered(tmp_path, data_root, fault_rules):
    log_root = tmp_path / "logs"
    door = RawDoor(door_cmd(fault_rules, log_root, fixture_server_cmd(data_root), session="crash",
                            evidence=tmp_path / "ev"), tmp_path / "door.err")
    door.initialize()
    unknown = door.call("no_such_tool", {}, rid=2)
    assert "error" in unknown or unknown["result"]["isError"]
    door.request("tools/call", {"name": "crash", "arguments": {}}, rid=3)
    ans = door.recv()
    assert ans["id"] == 3 and ans["error"]["code"] == types.INTERNAL_ERROR
    assert "exited" in ans["error"]["message"]
    assert door.proc.wait(15) == 1  # the door ends when its server is gone
    door._err.close()
    lines = validate_lines(log_root / "analyst" / "crash.jsonl")
    assert [(o["tool"], o["decision"]) for o in lines] == [("no_such_tool", "allow"), ("crash", "allow")]
    assert lines[0]["error"] and lines[0]["response_digest"]
    assert "closed the connection before answering" in lines[1]["error"] and "response_digest" not in lines[1]


def _children_rss_kb(marker: str) -> int | None:
    """RSS of this process's child whose command line contains ``marker`` (Linux /proc)."""
    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            if ppid != me:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if marker.encode() not in fh.read():
                    continue
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except (OSError, ValueError, IndexError):
            continue
    return None


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_500_calls_no_lost_lines_flat_memory_and_small_added_latency(tmp_path, data_root, fault_rules):
    n = 500
    log_root = tmp_path / "logs"

    async def drive(s):
        times, rss = [], []
        for i in range(n):
            t = time.perf_counter()
            r = await s.call_tool("read_object", {"path": "demo/notes.txt", "i": i})
            times.append(time.perf_counter() - t)
            assert not r.is_error
            if i in (100, n - 1):
                rss.append(_children_rss_kb("replaybook.door"))
        return sorted(times), rss

    direct, _ = run_session(fixture_server_cmd(data_root), drive)
    via_door, rss = run_session(door_cmd(fault_rules, log_root, fixture_server_cmd(data_root), session="load"),
                                drive)
    lines = validate_lines(log_root / "analyst" / "load.jsonl")
    assert len(lines) == n and [o["seq"] for o in lines] == list(range(1, n + 1))
    p50 = via_door[n // 2] - direct[n // 2]
    p99 = via_door[int(n * 0.99)] - direct[int(n * 0.99)]
    print(f"door added latency over {n} calls: p50 {p50 * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms; "
          f"door RSS {rss[0]} kB → {rss[1]} kB")
    assert p50 < 0.05
    if None not in rss:
        assert rss[1] - rss[0] < 20_000  # kB: flat, not growing with calls


def _one_call(tmp_path: Path, data_root: Path, rules: Path, session: str, arguments: bytes) -> tuple[dict, list[dict], dict]:
    """Send one ``read_object`` call with these raw ``arguments`` through a door, then a plain one:
    (the first answer, the log's lines, the second answer)."""
    log_root = tmp_path / "logs"
    door = RawDoor(door_cmd(rules, log_root, fixture_server_cmd(data_root), session=session), tmp_path / "door.err")
    try:
        door.initialize()
        door.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_object",'
                      b'"arguments":' + arguments + b'}}')
        ans = door.recv()
        after = door.call("read_object", {"path": "demo/notes.txt"}, rid=3)  # and the door goes on
    finally:
        rc = door.close()
    assert rc == 0, (tmp_path / "door.err").read_text()
    return ans, validate_lines(log_root / "analyst" / f"{session}.jsonl"), after


def test_an_integer_beyond_64_bits_passes_and_is_logged_exactly(tmp_path, data_root, fault_rules):
    """Valid JSON (RFC 8259 §6 sets no size): the door had refused such a call as "not a JSON
    object" and logged its arguments as null, because its JSON writer stops at 64 bits."""
    ans, lines, _ = _one_call(tmp_path, data_root, fault_rules, "bigint",
                              b'{"path":"demo/notes.txt","id":123456789012345678901234567890,"lo":-9223372036854775809}')
    assert ans["id"] == 2 and not ans["result"]["isError"]
    assert ans["result"]["content"][0]["text"] == "cars from 1974\n"
    raw = (tmp_path / "logs" / "analyst" / "bigint.jsonl").read_bytes()
    assert b'"id":123456789012345678901234567890' in raw and b'"lo":-9223372036854775809' in raw
    assert (lines[0]["decision"], lines[0]["rule"], lines[0]["object"]) == ("allow", "allow-demo", "demo/notes.txt")


def test_a_call_nested_deeper_than_the_sdk_reads_is_refused_by_name_and_logged(tmp_path, data_root, fault_rules):
    """The SDK's JSON reader stops near 200 levels: such a call had been refused as "1 validation
    error for union[...]", logged as tool 'tools/call' with null arguments."""
    deep = b"[" * 250 + b"]" * 250
    ans, (first, second), after = _one_call(tmp_path, data_root, fault_rules, "deep",
                                            b'{"path":"demo/notes.txt","x":' + deep + b'}')
    assert ans["id"] == 2 and ans["error"]["code"] == types.INVALID_REQUEST
    assert "rule 'door:nested-too-deep' denies this read_object call" in ans["error"]["message"]
    assert "nested 253 levels deep" in ans["error"]["message"]
    assert not after["result"]["isError"]
    assert (first["tool"], first["decision"], first["rule"]) == ("read_object", "deny", "door:nested-too-deep")
    assert first["arguments"]["path"] == "demo/notes.txt"
    assert json.dumps(first["arguments"]["x"], separators=(",", ":")) == deep.decode()
    assert first["error"].startswith("nested 253 levels deep, deeper than the MCP SDK reads")
    assert (second["decision"], second["rule"]) == ("allow", "allow-demo")


@pytest.mark.parametrize("session,arguments,rule", [
    ("deep", b'{"path":"demo/notes.txt","x":' + b"[" * 250 + b"]" * 250 + b'}', "door:nested-too-deep"),
    ("surrogate", b'{"path":"demo/\\ud800.csv"}', "door:invalid-utf8"),
])
def test_a_call_refused_before_the_sdk_could_read_it_keeps_its_meta(tmp_path, data_root, fault_rules, session,
                                                                     arguments, rule):
    """The client's tool-use id in ``_meta`` links a logged call to the agent's transcript; a
    line the SDK cannot read (nested too deep, a lone surrogate) was logged with ``meta: null``,
    so the refusal could not be linked to the tool use that asked for it."""
    meta = b', "_meta": {"claudecode/toolUseId": "toolu_01"}'
    ans, (first, second), _ = _one_call(tmp_path, data_root, fault_rules, session, arguments + meta)
    assert ans["id"] == 2 and rule in ans["error"]["message"]
    assert (first["tool"], first["rule"], first["meta"]) == ("read_object", rule, {"claudecode/toolUseId": "toolu_01"})
    assert second["meta"] is None
    res = load_door(tmp_path / "logs")
    assert res.quarantine.empty and res.frame["meta_call_id"].tolist()[:1] == ["toolu_01"]


def test_a_number_beyond_the_double_range_is_refused_not_passed_on_as_null(tmp_path, data_root, fault_rules):
    """The SDK reads 1e400 as infinity and writes it as null: the server would have got other
    arguments than the agent sent.  The log had said the *string* "Infinity", which a transcript
    holding that string agreed with; it now holds the number, exactly, as valid JSON."""
    ans, (line, _), _ = _one_call(tmp_path, data_root, fault_rules, "inf", b'{"path":"demo/notes.txt","n":10e399}')
    assert ans["id"] == 2 and ans["result"]["isError"]
    assert "rule 'door:number-out-of-range' denies this read_object call" in ans["result"]["content"][0]["text"]
    assert (line["decision"], line["rule"], line["arguments"]["path"]) == (
        "deny", "door:number-out-of-range", "demo/notes.txt")
    raw = (tmp_path / "logs" / "analyst" / "inf.jsonl").read_bytes()
    assert b'"arguments":{"n":1E400,"path":"demo/notes.txt"}' in raw  # (canonical: 10e399 is 1E400)
    calls = load_door(tmp_path / "logs").frame
    assert list(calls["args_key"]) == ['{"n":1E400,"path":"demo/notes.txt"}', '{"path":"demo/notes.txt"}']


def test_nan_and_infinity_literals_are_refused_and_logged_as_valid_json(tmp_path, data_root, fault_rules):
    """The SDK reads Python's NaN/Infinity literals (not JSON); the log stays JSON: they are
    written as strings there."""
    _, (line, _), _ = _one_call(tmp_path, data_root, fault_rules, "nan", b'{"path":"demo/notes.txt","n":[NaN,-Infinity]}')
    assert (line["decision"], line["rule"], line["arguments"]) == (
        "deny", "door:number-out-of-range", {"n": ["NaN", "-Infinity"], "path": "demo/notes.txt"})


def test_a_call_without_a_usable_id_is_refused_and_logged_never_forwarded(tmp_path, data_root, fault_rules):
    """JSON-RPC reads a request with no id (or id null, 7.0, true) as a notification: the door
    had forwarded such a tools/call to the server with no rule applied and no log line."""
    log_root = tmp_path / "logs"
    door = RawDoor(door_cmd(fault_rules, log_root, fixture_server_cmd(data_root), session="noid"),
                   tmp_path / "door.err")
    try:
        door.initialize()
        door.send_raw(b'{"jsonrpc":"2.0","id":7.0,"method":"tools/call","params":{"name":"read_object",'
                      b'"arguments":{"path":"reference/.env"}}}')
        ans = door.recv()
        assert ans["id"] is None and ans["error"]["code"] == types.INVALID_REQUEST
        assert "rule 'door:not-a-request' denies this read_object call" in ans["error"]["message"]
        door.send_raw(b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"read_object",'
                      b'"arguments":{"path":"demo/notes.txt"}}}')  # no id: no answer is due
        ok = door.call("read_object", {"path": "demo/notes.txt"}, rid=3)
        assert ok["id"] == 3 and not ok["result"]["isError"]  # the next answer is this call's
    finally:
        rc = door.close()
    assert rc == 0, (tmp_path / "door.err").read_text()
    lines = validate_lines(log_root / "analyst" / "noid.jsonl")
    assert [(o["tool"], o["decision"], o["rule"], o["error"]) for o in lines] == [
        ("read_object", "deny", "door:not-a-request", "the request's id is not a string or an integer"),
        ("read_object", "deny", "door:not-a-request", "a request sent without an id"),
        ("read_object", "allow", "allow-demo", None)]
    assert lines[0]["arguments"] == {"path": "reference/.env"}


def test_a_call_nested_past_every_reader_is_still_refused_by_name(tmp_path, data_root, fault_rules):
    """Past 1,024 levels no JSON reader here takes the line: it had been 'invalid JSON', logged as
    tool 'tools/call'; it is nested-too-deep, with the tool name read from the line's start."""
    deep = b"[" * 1100 + b"]" * 1100
    ans, (first, second), _ = _one_call(tmp_path, data_root, fault_rules, "deeper",
                                        b'{"path":"demo/notes.txt","x":' + deep + b'}')
    assert ans["error"]["code"] == types.INVALID_REQUEST
    assert "rule 'door:nested-too-deep' denies this read_object call" in ans["error"]["message"]
    assert (first["tool"], first["rule"], first["arguments"]) == ("read_object", "door:nested-too-deep", None)
    assert first["error"].startswith("nested more than 1,024 levels deep")
    assert second["rule"] == "allow-demo"


def test_a_meta_larger_than_the_argument_limit_is_logged_by_size_and_digest_keeping_its_tool_use_id(
        tmp_path, data_root, fault_rules):
    """``_meta`` had no bound while arguments have one (``max_argument_bytes``): a client could make
    one log line as long as its message.  Such a ``_meta`` is logged as its size and digest, like
    arguments over the limit, keeping only the tool-use id the join reads (when that is small)."""
    meta = b'{"claudecode/toolUseId":"toolu_02","pad":"' + b"m" * 150_000 + b'"}'
    ans, (first, second), _ = _one_call(tmp_path, data_root, fault_rules, "bigmeta",
                                        b'{"path":"demo/notes.txt"}, "_meta": ' + meta)
    assert not ans["result"]["isError"] and ans["result"]["content"][0]["text"] == "cars from 1974\n"
    assert (first["decision"], first["rule"], first["meta"]) == ("allow", "allow-demo", {"claudecode/toolUseId": "toolu_02"})
    assert first["meta_bytes"] == len(meta) and first["meta_digest"] == "sha256:" + hashlib.sha256(meta).hexdigest()
    assert "meta_bytes" not in second and second["meta"] is None
    assert max(len(x) for x in (tmp_path / "logs" / "analyst" / "bigmeta.jsonl").read_bytes().splitlines()) < 2_000
    res = load_door(tmp_path / "logs")
    assert res.quarantine.empty and res.frame["meta_call_id"].tolist()[0] == "toolu_02"
    assert res.frame["meta_call_id"].isna().tolist() == [False, True]
    assert not res.inputs[0].get("notes")  # (meta_bytes and meta_digest are keys of the format)


def test_an_over_long_call_is_logged_by_the_tool_name_its_first_bytes_give_and_joins_by_tool_and_time(
        tmp_path, data_root, fault_rules):
    """A line over --max-message-bytes was logged as tool 'tools/call', so nothing tied the refusal
    to the agent's step.  The name is read from the line's first 4 KiB when ``params.name`` is
    there, never from a "name" nested in the arguments; when it is not there, the line keeps
    'tools/call'."""
    from replaybook.canonical import canonical_args
    from replaybook.frames import STEPS
    from replaybook.join import join_sessions

    log_root = tmp_path / "logs"
    door = RawDoor(door_cmd(fault_rules, log_root, fixture_server_cmd(data_root), session="long",
                            extra=["--max-message-bytes", "100000"]), tmp_path / "door.err")
    pad = b"y" * 200_000
    try:
        door.initialize()
        door.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_object",'
                      b'"arguments":{"path":"demo/notes.txt","pad":"' + pad + b'"}}}')
        first = door.recv()
        # a "name" among the arguments, ahead of the tool's own name (past the first 4 KiB)
        door.send_raw(b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"arguments":{"name":"list_folder",'
                      b'"pad":"' + pad + b'"},"name":"read_object"}}')
        second = door.recv()
        door.send_raw(b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_\\u006fbject",'
                      b'"arguments":{"pad":"' + pad + b'"}}}')  # (an escape in the name: read as JSON reads it)
        third = door.recv()
    finally:
        rc = door.close()
    assert rc == 0, (tmp_path / "door.err").read_text()
    assert first["id"] == 2 and "rule 'door:message-too-large' denies this read_object call" in first["error"]["message"]
    assert second["id"] == 3 and "denies this message" in second["error"]["message"]
    assert third["id"] == 4 and "denies this read_object call" in third["error"]["message"]
    lines = validate_lines(log_root / "analyst" / "long.jsonl")
    assert [(o["tool"], o["rule"], o["arguments"]) for o in lines] == [
        ("read_object", "door:message-too-large", None), ("tools/call", "door:message-too-large", None),
        ("read_object", "door:message-too-large", None)]
    assert all(o["message_bytes"] > 200_000 and "method" not in o for o in lines)
    calls = load_door(log_root).frame
    assert calls["args_key"].isna().all()
    # the agent's step for the first call, a moment before the door received it: paired by tool and time
    step = STEPS.build([dict(transcript_id="t1", client="claude-code", seq=0, ts=calls["ts"].iloc[0] - pd.Timedelta("200ms"),
                             kind="tool_call", tool_raw="mcp__door__read_object", server="door", tool="read_object",
                             call_id="toolu_9", arguments={"path": "demo/notes.txt", "pad": pad.decode()},
                             args_key=canonical_args({"path": "demo/notes.txt", "pad": pad.decode()}))])
    res = join_sessions(step, calls.iloc[:1].reset_index(drop=True), max_offset_s=0)
    assert res.assignments() == {"long": "t1"}
    assert list(zip(res.pairs.call_seq, res.pairs.how)) == [(1, "tool_time")]


def test_a_meta_too_large_to_log_keeps_a_tool_use_id_that_is_not_text_so_the_loader_says_so(
        tmp_path, data_root, fault_rules):
    """A ``_meta`` over ``max_argument_bytes`` kept only text tool-use ids: one that is not text
    (a number) vanished from the log, so the loader no longer said why the call cannot be joined
    by tool-use id, as it does for the same ``_meta`` under the limit — the reader saw a call that
    seemed to carry no id at all.  A small value that is not text is kept as it came."""
    meta = b'{"claudecode/toolUseId":12345,"pad":"' + b"m" * 150_000 + b'"}'
    ans, (first, second), _ = _one_call(tmp_path, data_root, fault_rules, "bigmeta-int",
                                        b'{"path":"demo/notes.txt"}, "_meta": ' + meta)
    assert not ans["result"]["isError"]
    assert first["meta"] == {"claudecode/toolUseId": 12345} and first["meta_bytes"] == len(meta)
    res = load_door(tmp_path / "logs")
    assert res.quarantine.empty and res.frame["meta_call_id"].isna().all()
    assert res.inputs[0]["notes"] == [
        "line 1: meta 'claudecode/toolUseId' is not text (12345): the call cannot be joined by tool-use id"]


@pytest.mark.parametrize("head, name", [
    (b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a","arguments":{"pad":"', "a"),
    # a "name" among the arguments, in an escaped string, or in _meta, ahead of the tool's own
    (b'{"method":"tools/call","params":{"arguments":{"x":"\\"name\\":\\"evil\\"","name":"evil2"},"name":"a"', "a"),
    (b'{"method":"tools/call","params":{"_meta":{"name":"evil"},"name":"a","arguments":{', "a"),
    (b'{"method":"tools/call","params":{"_meta":{"name":"evil"},"arguments":{"name":"evil2","pad":"', None),
    (b'{"method":"tools/call","params":{"x":[{"name":"evil"}],"arguments":{', None),
    (b'{"method":"tools/call","name":"evil","params":{"arguments":{', None),
    # escapes in member names, read as JSON reads them
    (b'{"method":"tools/call","params":{"\\u006eame":"a","arguments":{', "a"),
    (b'{"method":"tools/call","\\u0070arams":{"name":"a","arguments":{', "a"),
    # given twice within the head: which a reader takes is not sure
    (b'{"method":"tools/call","params":{"name":"a"},"params":{"name":"b","arguments":{', None),
    (b'{"method":"tools/call","params":{"name":"a","n\\u0061me":"b","arguments":{', None),
    # not text, empty, over 256 characters, not valid JSON text
    (b'{"method":"tools/call","params":{"name":5,"arguments":{', None),
    (b'{"method":"tools/call","params":{"name":"","arguments":{', None),
    (b'{"method":"tools/call","params":{"name":"' + b"n" * 257 + b'","arguments":{', None),
    (b'{"method":"tools/call","params":{"name":"a\xff","arguments":{', None),
    (b'{"method":"tools/call","params":{"name":"abc', None),  # (cut off at the head's end)
])
def test_the_tool_name_of_a_line_too_long_to_parse_is_only_ever_params_name(head, name):
    from replaybook.door._stdio import _hints_tool

    assert _hints_tool(head) == name
