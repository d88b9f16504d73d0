"""The door in front of a remote MCP server over Streamable HTTP (``replaybook door --url``).

The upstream is the fixture server (an SDK ``MCPServer``) run with its Streamable HTTP
transport on a free local port; the client is the SDK's ``ClientSession`` over stdio, as an MCP
client spawns the door."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from replaybook.door.proxy import shown_url
from replaybook.sources.door import load_door

from .conftest import FIXTURE_SERVER, door_cmd, run_session, validate_lines

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and ports")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server(data: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(FIXTURE_SERVER), str(data), "--http", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the fixture server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("the fixture server did not start listening within 30 s")


@pytest.fixture
def http_server(data_root):
    proc, url = _start_server(data_root)
    try:
        yield proc, url
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _door_url(rules: Path, log_root: Path, url: str, *extra: str) -> list[str]:
    cmd = door_cmd(rules, log_root, [], session="web-1", extra=["--url", url, *extra])
    return cmd[:-1]  # no `--` and no server command


def test_calls_to_a_remote_server_are_decided_logged_and_headers_sent_but_never_logged(
        http_server, rules_file, tmp_path):
    _, url = http_server
    log_root = tmp_path / "door"

    async def agent(s):
        names = [t.name for t in (await s.list_tools()).tools]
        out = [await s.call_tool(n, a, meta={"claudecode/toolUseId": f"toolu_{i}"}) for i, (n, a) in enumerate([
            ("list_folder", {"path": "demo"}), ("query", {"path": "demo/cars.csv", "column": "mpg"}),
            ("read_object", {"path": "reference/.env"})])]
        return names, out

    names, out = run_session(_door_url(rules_file, log_root, url, "--header", "Authorization: Bearer t0ken-123"),
                             agent)
    assert names == ["list_folder", "read_object", "query", "crash", "whoami"]
    assert out[0].content[0].text == "cars.csv\nnotes.txt\n"
    assert out[1].structured_content == {"rows": [{"mpg": "21"}, {"mpg": "22.8"}, {"mpg": "21.4"}]}
    assert out[2].is_error and "rule 'deny-dotenv'" in out[2].content[0].text
    log = log_root / "analyst" / "web-1.jsonl"
    lines = validate_lines(log)
    assert [(o["seq"], o["tool"], o["object"], o["decision"], o["rule"], o["server"], o["meta"]) for o in lines] == [
        (1, "list_folder", "demo", "allow", "allow-demo", "door-fixture", {"claudecode/toolUseId": "toolu_0"}),
        (2, "query", "demo/cars.csv", "allow", "allow-demo", "door-fixture", {"claudecode/toolUseId": "toolu_1"}),
        (3, "read_object", "reference/.env", "deny", "deny-dotenv", "door-fixture", {"claudecode/toolUseId": "toolu_2"}),
    ]
    assert lines[1]["rows"] == 3 and lines[0]["bytes"] == len("cars.csv\nnotes.txt\n")
    assert len(load_door(log_root).frame) == 3

    # the header reached the server; the door logged nothing of it
    rules_all = tmp_path / "allow-all.yaml"
    rules_all.write_text("version: 1\nrules:\n  - id: any\n    decision: allow\n")
    got = run_session(_door_url(rules_all, tmp_path / "door2", url, "--header", "Authorization: Bearer t0ken-123"),
                      lambda s: s.call_tool("whoami", {}))
    assert got.content[0].text == "Bearer t0ken-123"
    assert b"t0ken" not in log.read_bytes() and b"t0ken" not in (tmp_path / "door2" / "analyst" / "web-1.jsonl").read_bytes()


def _run_door(cmd: list[str], stdin: bytes = b"", timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout)


def test_an_unreachable_server_is_an_input_error_and_the_url_s_secrets_stay_out(rules_file, tmp_path):
    port = _free_port()  # nothing listens there
    url = f"http://someone:pa55word@127.0.0.1:{port}/mcp?api_key=sekrit"

    async def agent(s):  # pragma: no cover - never reached: initialize fails
        return None

    with pytest.raises(BaseException):
        run_session(_door_url(rules_file, tmp_path / "door", url), agent)
    init = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
            b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n')
    # as a client does, stdin stays open after initialize: the door ends on its own
    p = subprocess.Popen(_door_url(rules_file, tmp_path / "door", url), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(init)
    p.stdin.flush()
    try:
        code = p.wait(60)
    finally:
        p.kill()
        p.stdin.close()
    err = p.stderr.read().decode()
    p.stdout.close()
    p.stderr.close()
    assert code == 2, err
    assert f"cannot reach the MCP server at http://127.0.0.1:{port}/mcp" in err
    assert "pa55word" not in err and "sekrit" not in err and "Traceback" not in err


def test_a_server_lost_mid_session_answers_and_logs_the_call_in_flight(data_root, rules_file, tmp_path):
    proc, url = _start_server(data_root)
    log_root = tmp_path / "door"

    async def agent(s):
        first = await s.call_tool("list_folder", {"path": "demo"})
        proc.kill()
        proc.wait(10)
        try:
            with anyio.fail_after(60):
                await s.call_tool("list_folder", {"path": "demo"})
        except MCPError as exc:
            return first, exc
        return first, None

    try:
        first, lost = run_session(_door_url(rules_file, log_root, url), agent)
    except BaseException as exc:  # the door exits after answering; the SDK client may say so too
        pytest.fail(f"the client got no answer for the call in flight: {exc!r}")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not first.is_error
    assert lost is not None and "cannot reach the MCP server at " + url in str(lost)
    lines = validate_lines(log_root / "analyst" / "web-1.jsonl")
    assert [(o["seq"], o["decision"], o["error"]) for o in lines] == [
        (1, "allow", None), (2, "allow", f"cannot reach the MCP server at {url}: All connection attempts failed")]


@pytest.mark.parametrize("args, says", [
    (["--url", "http://127.0.0.1:9/mcp", "--", sys.executable, "x.py"], "not both"),
    ([], "give the MCP server as a command after `--`, or --url URL"),
    (["--header", "Authorization: Bearer x", "--", sys.executable, "x.py"], "--header goes with --url"),
    (["--url", "ftp://host/mcp"], "is not an http(s) URL"),
    # a URL urlsplit cannot take apart, or a port that is none: usage, before anything starts (they
    # crashed with ValueError, or with an OverflowError once the client spoke; the URL shown had no port)
    (["--url", "http://[::1/mcp?key=s3cr3t"],
     "Invalid value for --url: not a URL the door can read (Invalid IPv6 URL); the URL is not repeated here"),
    (["--url", "http://u:s3cr3t@127.0.0.1:99999/mcp?key=s3cr3t"],
     "Invalid value for --url: 'http://127.0.0.1:99999/mcp' has no valid port (a port is a number from 1 to 65535)"),
    (["--url", "http://127.0.0.1:s3cr3t/mcp"], "'http://127.0.0.1:…/mcp' has no valid port"),
    (["--url", "http://127.0.0.1:0/mcp"], "'http://127.0.0.1:0/mcp' has no valid port"),
    (["--url", "http://127.0.0.1:9/mcp", "--header", "Bearer s3cr3t"], "expected 'NAME: VALUE'"),
    (["--url", "http://127.0.0.1:9/mcp", "--cwd", "."], "--cwd goes with a server started as a command"),
    # a value HTTP cannot carry: refused at the start, never echoed (it went into the log and the
    # agent's answer on the first call, or crashed with a UnicodeEncodeError)
    (["--url", "http://127.0.0.1:9/mcp", "--header", "X-A: s3cr3t\r\nX-Injected: 1"], "holds a line break"),
    (["--url", "http://127.0.0.1:9/mcp", "--header", "Authorization: Bearer s3cr3t\u00dc"], "non-ASCII character"),
    (["--url", "http://127.0.0.1:9/mcp", "--header-env", "Authorization=REPLAYBOOK_TEST_UNSET"],
     "REPLAYBOOK_TEST_UNSET is not"),
    # not a number of seconds: "nan" passed the range check and answered every call with the
    # timeout error at once ("did not answer within nan s")
    (["--call-timeout", "nan", "--", sys.executable, "x.py"],
     "Invalid value for '--call-timeout': nan is not a number of seconds greater than 0"),
    (["--call-timeout", "inf", "--", sys.executable, "x.py"],
     "Invalid value for '--call-timeout': inf is not a number of seconds greater than 0"),
])
def test_door_usage_mistakes_exit_2_and_say_what_to_do(rules_file, tmp_path, args, says):
    cmd = [sys.executable, "-m", "replaybook.door", "door", "--rules", str(rules_file),
           "--log-root", str(tmp_path / "door"), *args]
    r = _run_door(cmd)
    err = r.stderr.decode()
    assert r.returncode == 2 and says in err, err
    assert "s3cr3t" not in err and not (tmp_path / "door").exists()


def test_shown_url_keeps_scheme_host_port_and_path_only():
    assert shown_url("https://u:p@example.com:8443/a/mcp?key=1#f") == "https://example.com:8443/a/mcp"
    assert shown_url("http://[::1]:9/mcp") == "http://[::1]:9/mcp"
    assert shown_url("https://example.com/mcp") == "https://example.com/mcp"
    # a port that is none is shown as written when it is a number (a message about it names it)
    assert shown_url("http://127.0.0.1:99999/mcp") == "http://127.0.0.1:99999/mcp"
    assert shown_url("http://[::1]:70000/mcp?k=1") == "http://[::1]:70000/mcp"
    assert shown_url("http://u:p@127.0.0.1:abc/mcp") == "http://127.0.0.1:…/mcp"
    assert shown_url("http://127.0.0.1:0/mcp") == "http://127.0.0.1:0/mcp"
    assert shown_url("http://127.0.0.1:/mcp") == "http://127.0.0.1/mcp"
    with pytest.raises(ValueError, match="Invalid IPv6 URL"):
        shown_url("http://[::1/mcp")


def test_a_header_from_the_environment_reaches_the_server(http_server, rules_file, tmp_path, monkeypatch):
    """--header-env keeps the token off the door's command line (which the process list shows)."""
    _, url = http_server
    rules_all = tmp_path / "allow-all.yaml"
    rules_all.write_text("version: 1\nrules:\n  - id: any\n    decision: allow\n")
    monkeypatch.setenv("REPLAYBOOK_TEST_TOKEN", "Bearer from-env-42")
    cmd = _door_url(rules_all, tmp_path / "door", url, "--header-env", "Authorization=REPLAYBOOK_TEST_TOKEN")
    assert "from-env-42" not in " ".join(cmd)
    got = run_session(cmd, lambda s: s.call_tool("whoami", {}))
    assert got.content[0].text == "Bearer from-env-42"
    assert b"from-env-42" not in (tmp_path / "door" / "analyst" / "web-1.jsonl").read_bytes()


def test_an_unreachable_server_answers_the_clients_initialize_with_the_reason(rules_file, tmp_path):
    """An SDK client saw only 'Connection closed'; the door now answers its initialize."""
    port = _free_port()
    with pytest.raises(Exception) as e:
        run_session(_door_url(rules_file, tmp_path / "door", f"http://127.0.0.1:{port}/mcp"), lambda s: None)
    assert f"cannot reach the MCP server at http://127.0.0.1:{port}/mcp" in repr(e.value)


def test_messages_sent_before_the_initialize_answer_wait_for_the_session_id(http_server, rules_file, tmp_path):
    """A client that writes initialize, notifications/initialized and a call at once: over HTTP
    the session id comes with the initialize answer, so the door holds the rest until it has
    it (the notification had been refused: 'HTTP 400 … Missing session ID')."""
    import json

    _, url = http_server
    p = subprocess.Popen(_door_url(rules_file, tmp_path / "door", url), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                 "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "list_folder", "arguments": {"path": "demo"}}}]
    try:
        p.stdin.write(b"".join(json.dumps(x).encode() + b"\n" for x in lines))
        p.stdin.flush()
        got = {}
        while len(got) < 2:
            o = json.loads(p.stdout.readline())
            got[o.get("id")] = o
        p.stdin.close()
        p.wait(30)
    finally:
        p.kill()
    err = p.stderr.read().decode()
    p.stdout.close()
    p.stderr.close()
    assert "result" in got[1] and got[2]["result"]["content"][0]["text"] == "cars.csv\nnotes.txt\n"
    assert "HTTP 400" not in err, err


def _silent_server(port: int, mode: str, **popen) -> subprocess.Popen:
    """``silent_http_server.py`` on ``port`` in ``mode``, once it listens."""
    server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("silent_http_server.py")), str(port), mode],
                              **popen)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return server
        except OSError:
            if time.monotonic() >= deadline:
                server.kill()
                raise AssertionError("the test server did not start") from None
            time.sleep(0.1)


def _stop_door(door: subprocess.Popen, *, again: bool) -> None:
    """SIGTERM to ``door`` — and, with ``again``, a second one 2 s later if it still runs (a
    transport's shutdown may hang on a server that never answers) —; it must exit 128 + 15."""
    try:
        door.send_signal(signal.SIGTERM)
        if again:
            time.sleep(2.0)
            if door.poll() is None:
                door.send_signal(signal.SIGTERM)
        assert door.wait(30) == 128 + signal.SIGTERM.value, door.stderr.read().decode()[-2000:]
    finally:
        if door.poll() is None:
            door.kill()
            door.wait(10)


@pytest.mark.parametrize("mode", ["silent", "drop"])
def test_a_door_in_front_of_a_remote_server_stops_on_signals_with_its_status(rules_file, tmp_path, mode):
    """SIGTERM to a `--url` door with a call in flight: the call is logged as stopped and the door
    exits 143 — also when the remote server never answers the session's closing DELETE (a second
    signal, once the calls are logged, cuts that short instead of waiting out the HTTP read
    timeout) and when the call's connection drops on the way down (not 'cannot reach the MCP
    server', exit 2)."""
    import json

    port = _free_port()
    server = _silent_server(port, mode)
    try:
        log_root = tmp_path / "door"
        door = subprocess.Popen(_door_url(rules_file, log_root, f"http://127.0.0.1:{port}/mcp"),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            def send(o):
                door.stdin.write(json.dumps(o).encode() + b"\n")
                door.stdin.flush()

            send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
            assert json.loads(door.stdout.readline())["result"]["serverInfo"]["name"] == "silent-http"
            send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                  "params": {"name": "list_folder", "arguments": {"path": "demo"}}})
            time.sleep(0.5)
        finally:
            _stop_door(door, again=mode == "silent")
        lines = validate_lines(log_root / "analyst" / "web-1.jsonl")
        assert [(o["seq"], o["error"]) for o in lines] == [(1, "the door was stopped (SIGTERM) before the answer")]
    finally:
        server.kill()
        server.wait(10)


def test_a_door_whose_client_hung_up_does_not_wait_on_a_remote_server_that_never_answers(rules_file, tmp_path):
    """The client closes its end with a call in flight, before a remote server that answers
    nothing (not the call, not the session's closing DELETE): the call is logged and the door
    exits 0 within its grace period and a few seconds more — it had waited out the HTTP read
    timeout (five minutes), holding its log, for a session no one used any more."""
    import json

    port = _free_port()
    server = _silent_server(port, "silent")
    try:
        log_root = tmp_path / "door"
        door = subprocess.Popen(_door_url(rules_file, log_root, f"http://127.0.0.1:{port}/mcp"),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            door.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"}}}).encode() + b"\n")
            door.stdin.flush()
            assert json.loads(door.stdout.readline())["result"]["serverInfo"]["name"] == "silent-http"
            door.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
                             b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_folder",'
                             b'"arguments":{"path":"demo"}}}\n')
            door.stdin.close()
            t0 = time.monotonic()
            assert door.wait(60) == 0, door.stderr.read().decode()[-2000:]
            assert time.monotonic() - t0 < 30
        finally:
            if door.poll() is None:
                door.kill()
                door.wait(10)
        lines = validate_lines(log_root / "analyst" / "web-1.jsonl")
        assert [(o["seq"], o["error"]) for o in lines] == [(1, "the client closed the connection before the answer")]
    finally:
        server.kill()
        server.wait(10)


@pytest.mark.parametrize("call,expected", [
    ({"name": "list_folder", "arguments": {"path": "demo"}},
     ("allow", "the door was stopped (SIGTERM) before the call was passed on")),
    ({"name": "read_object", "arguments": {"path": "reference/.env"}}, ("deny", None)),
])
def test_a_call_held_behind_an_unanswered_initialize_is_logged_when_the_door_is_stopped(
        rules_file, tmp_path, call, expected):
    """A `--url` door holds the client's calls until the server answers ``initialize``; SIGTERM
    while one is held had left that call with no line at all. It is decided and logged: a call
    the rules let through as stopped before it was passed on, a refusal as refused."""
    import json

    port = _free_port()
    server = _silent_server(port, "mute", stdout=subprocess.PIPE)
    try:
        log_root = tmp_path / "door"
        door = subprocess.Popen(_door_url(rules_file, log_root, f"http://127.0.0.1:{port}/mcp"),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            for o in ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                          "protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "t", "version": "0"}}},
                      {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}):
                door.stdin.write(json.dumps(o).encode() + b"\n")
            door.stdin.flush()
            assert server.stdout.readline() == b"initialize\n"  # the door's relay has begun
            time.sleep(0.5)
        finally:  # (the transport's shutdown waits on the unanswered initialize: a second signal)
            _stop_door(door, again=True)
        lines = validate_lines(log_root / "analyst" / "web-1.jsonl")
        assert [(o["seq"], o["tool"], o["arguments"], o["decision"]) for o in lines] == [
            (1, call["name"], call["arguments"], expected[0])]
        if expected[1] is not None:
            assert lines[0]["error"] == expected[1]
        else:
            assert lines[0]["rule"] != "door:invalid-request" and lines[0]["object"].endswith("reference/.env")
    finally:
        server.kill()
        server.wait(10)
