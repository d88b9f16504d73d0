"""A Streamable HTTP MCP server (stdlib only) for the door's stop-signal tests: it answers
``initialize`` with a session id and accepts notifications; every other request, and the
``DELETE`` that ends the session, it holds open without an answer — unless started with
``drop``, when it drops a request's connection after a second instead (the call fails in the
SDK while the door winds down), or ``mute``, when it holds ``initialize`` open as well (a
``--url`` door holds the client's calls until that answer)."""

import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = sys.argv[2] if len(sys.argv) > 2 else "silent"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _reply(self, status: int, body: bytes = b"", headers: dict | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _hold(self) -> None:
        if MODE == "drop":
            time.sleep(1.0)
            self.close_connection = True
            self.connection.close()
            return
        time.sleep(10 ** 6)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        if isinstance(body, dict) and body.get("method") == "initialize" and MODE != "mute":
            out = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "silent-http", "version": "0"}}}).encode()
            self._reply(200, out, {"content-type": "application/json", "mcp-session-id": "s1"})
        elif isinstance(body, dict) and "id" not in body:
            self._reply(202)
        else:
            if MODE == "mute":  # (the test waits for this: the door's relay has begun)
                print(body.get("method") if isinstance(body, dict) else "batch", flush=True)
            self._hold()

    def do_GET(self):
        self._reply(405)

    def do_DELETE(self):
        time.sleep(10 ** 6)


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
