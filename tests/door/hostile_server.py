"""An MCP server (stdio, newline-delimited JSON-RPC, no SDK) that misbehaves on request, for the
door's adversarial tests.  It answers ``initialize``, ``tools/list`` and ``ping`` like any server;
its tools:

* ``echo`` — answers with the arguments exactly as it received them (``structuredContent``
  ``{"received": …}`` and the same as text), so a test sees what passed the door;
* ``spoof`` — first sends answers for the request ids in ``ids`` (each a text result
  ``"spoofed <id>"``), then answers the call itself;
* ``storm`` — sends ``count`` server→client requests (``method``, default ``roots/list``; ids
  ``storm-<n>``, or ``id`` for all of them when given) before answering; a client's answers to
  them are counted and the call's answer says how many came;
* ``slow`` — answers after ``seconds`` seconds;
* ``hang`` — never answers;
* ``twice`` — answers the call twice (the second answer says ``"second"``);
* ``latin1`` — answers with its ``text`` argument, the whole line written in Latin-1 (so a
  character such as ``é`` is a byte that is not UTF-8);
* ``wedge`` — never answers, and stops reading its stdin (a server stuck for good).

Any request whose ``params`` hold ``"_garble": [line, …]`` is answered with those lines instead,
written as given, with ``ID`` replaced by the request's id as JSON and ``ID_TEXT`` by its text;
a line ``"ok"`` is a well-formed answer.

``prompts/list`` is answered after a second (an empty list), so a test can keep a request that
the door passes through in flight.

Every message received is appended to the file named by ``$HOSTILE_SERVER_SEEN`` (one JSON line
each), when set; the server's process id is written to ``$HOSTILE_SERVER_PID`` when set.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

_out_lock = threading.Lock()
_answers: list = []
_SEEN = os.environ.get("HOSTILE_SERVER_SEEN")


def send(msg: dict) -> None:
    with _out_lock:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def result(rid, text: str, structured=None) -> None:
    res = {"content": [{"type": "text", "text": text}], "isError": False}
    if structured is not None:
        res["structuredContent"] = structured
    send({"jsonrpc": "2.0", "id": rid, "result": res})


TOOLS = [{"name": n, "inputSchema": {"type": "object"}} for n in ("echo", "spoof", "storm", "slow", "hang", "twice",
                                                                    "latin1", "wedge")]


def handle(msg: dict) -> None:
    method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if method is None:  # an answer from the client (to a storm request)
        _answers.append(msg)
        return
    if rid is None:
        return  # a notification
    if isinstance(params.get("_garble"), list):
        for line in params["_garble"]:
            if line == "ok":
                result(rid, "ok")
            else:
                with _out_lock:
                    sys.stdout.write(line.replace("ID_TEXT", str(rid)).replace("ID", json.dumps(rid)) + "\n")
                    sys.stdout.flush()
        return
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "prompts/list":
        def later():
            time.sleep(1.0)
            send({"jsonrpc": "2.0", "id": rid, "result": {"prompts": []}})
        threading.Thread(target=later, daemon=True).start()
    elif method == "tools/call":
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "echo":
            result(rid, json.dumps(args, sort_keys=True), {"received": args})
        elif name == "spoof":
            for other in args.get("ids", []):
                result(other, f"spoofed {other}")
            result(rid, "spoof done")
        elif name == "storm":
            n = int(args.get("count", 100))
            for i in range(n):
                send({"jsonrpc": "2.0", "id": args.get("id", f"storm-{i}"), "method": args.get("method", "roots/list"),
                      "params": args.get("params", {})})
            deadline = time.monotonic() + float(args.get("wait", 10))
            while len(_answers) < n and time.monotonic() < deadline:
                time.sleep(0.01)
            result(rid, f"{len(_answers)} answers", {"answers": _answers[:3]})
        elif name == "slow":
            def later():
                time.sleep(float(args.get("seconds", 1)))
                result(rid, "slow done")
            threading.Thread(target=later, daemon=True).start()
        elif name == "hang":
            pass
        elif name == "wedge":
            time.sleep(3600)
        elif name == "latin1":
            res = {"content": [{"type": "text", "text": str(args.get("text", ""))}], "isError": False}
            with _out_lock:
                sys.stdout.flush()
                sys.stdout.buffer.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": res},
                                                   ensure_ascii=False).encode("latin-1") + b"\n")
                sys.stdout.buffer.flush()
        elif name == "twice":
            result(rid, "first")
            result(rid, "second")
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"unknown tool {name}"}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"method {method} not found"}})


def main() -> None:
    try:  # a test may start the door under a file size limit: not meant for this server's own files
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    except (ImportError, ValueError, OSError):
        pass
    if os.environ.get("HOSTILE_SERVER_PID"):
        with open(os.environ["HOSTILE_SERVER_PID"], "w") as fh:
            fh.write(str(os.getpid()))
    for line in sys.stdin:
        if not line.strip():
            continue
        if _SEEN:
            with open(_SEEN, "a", encoding="utf-8") as fh:
                fh.write(line.rstrip("\n") + "\n")
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict):
            # a storm call waits for answers that come through this same loop: handle it aside
            if msg.get("method") == "tools/call" and (msg.get("params") or {}).get("name") == "storm":
                threading.Thread(target=handle, args=(msg,), daemon=True).start()
            else:
                handle(msg)


if __name__ == "__main__":
    main()
