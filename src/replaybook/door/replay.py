"""``replaybook serve-capsule``: an MCP server that answers from a replay capsule, never live.

It lists the tools seen in the capsule and answers each ``tools/call`` (and ``resources/read``)
through the capsule package's :class:`~replaybook.capsule.ForensicHarness`: the request digest
(:func:`~replaybook.capsule.request_digest` of server, tool and arguments) finds the captured
evidence, whose exact bytes are the answer.  Network access is blocked for the whole run.

* A call the original door refused is refused again, with the same answer (the rule's id).
* A call with no captured evidence (new arguments, a tool the capsule never saw, a missing or
  damaged evidence object, one that is not JSON) gets an MCP error result (``isError: true``, text starting with
  ``replay_incomplete:``) — never a live call — and the run record says ``replay_incomplete``.
  As in any forensic replay, missing evidence **stops** the replay: every later call gets the
  same error.
* Every call is written to a door-format call log (``<log-root>/<agent>/<session>.jsonl``), so
  an agent re-run against the capsule is an incident replaybook can load, join and diff against
  the original; the harness's run record (``replaybook-run/1``, with its checkpoints) is saved
  beside it as ``<session>.run.json`` after every call.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import mcp_types as types
import orjson

from ..capsule import Capsule, ForensicHarness
from ..capsule.digest import request_digest, sha256_digest
from ..capsule.errors import CapsuleError, EvidenceMissing, ToolDenied
from .calllog import CallLog, canonical_object, rfc3339
from .results import DOOR_REFUSED, is_error_evidence, measure, refusal_result, tool_error_text
from .rules import DEFAULT_PATH_ARGUMENTS, Rules, refusal_text

__all__ = ["CapsuleServer", "run_serve_capsule", "REPLAY_INCOMPLETE"]

#: JSON-RPC error code for a resources/read the capsule cannot answer.
REPLAY_INCOMPLETE = -32011


def _answer_problem(method: str, obj: Any) -> str | None:
    """Why the captured JSON ``obj`` cannot be given to an MCP client as the answer to
    ``method`` (``tools/call``: a ``CallToolResult``; ``resources/read``: a
    ``ReadResourceResult``; either: a JSON-RPC error ``{"error": {"code": int, "message": str}}``,
    :func:`is_error_evidence`), or ``None`` when it can.  Checked before the call is logged
    as allowed: the client would otherwise get a protocol error for a call the log calls answered."""
    if is_error_evidence(obj):
        e = obj["error"]
        if isinstance(e.get("code"), int) and not isinstance(e.get("code"), bool) and isinstance(e.get("message"), str):
            return None
        return "is an error without an integer code and a message text"
    model = types.ReadResourceResult if method == "resources/read" else types.CallToolResult
    try:
        model.model_validate(obj)
    except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        first = str(exc).splitlines()
        return f"is not an MCP {model.__name__} ({first[1].strip() if len(first) > 1 else first[0]})"
    return None


class CapsuleServer:
    """Answers MCP calls from a capsule's evidence and logs them in the door's format.

    Args:
        capsule: the loaded capsule.
        log: the replay session's call log.
        record_path: where to keep the run record (default ``<log dir>/<session>.run.json``).
        rules: the original door's rules, used only to compute the logged ``object`` the same
            way (roots, path arguments); decisions always come from the capsule.
        server: the server name for tools whose server the capsule does not say (default: the
            capsule's only server, else ``unknown``).
    """

    def __init__(self, capsule: Capsule, log: CallLog, *, record_path: str | Path | None = None,
                 rules: Rules | None = None, server: str | None = None):
        self.capsule = capsule
        self.log = log
        self.harness = ForensicHarness(capsule, None, run_name=f"replay-{log.session}")
        self.record_path = Path(record_path) if record_path else log.path.with_name(f"{log.session}.run.json")
        self.rules = rules or Rules(rules=[], path_arguments=DEFAULT_PATH_ARGUMENTS)
        self._queues: dict[str, deque] = {}
        self.tool_servers: dict[str, str] = {}
        for ev in capsule.tool_evidence:
            self._queues.setdefault(ev.request_digest, deque()).append(ev)
            self.tool_servers.setdefault(ev.method, ev.server)
        servers = sorted({ev.server for ev in capsule.tool_evidence})
        self.default_server = server or (servers[0] if len(servers) == 1 else "unknown")
        self.started = False
        self.last_refused = False

    # -- the run -------------------------------------------------------------------------------
    def begin(self) -> None:
        """Record the run's first checkpoints (inside :meth:`ForensicHarness.guard`)."""
        try:
            self.harness.begin()
        except CapsuleError as exc:  # authority unproven: every call will report it
            print(f"replaybook serve-capsule: {exc}", file=sys.stderr)
        self.started = True
        self.save_record()

    def save_record(self):
        """Write the run record so far; return it."""
        rec = self.harness.finish()
        try:
            rec.save(self.record_path)
        except OSError as exc:
            print(f"replaybook serve-capsule: cannot save the run record: {exc}", file=sys.stderr)
        return rec

    def end(self):
        """The client hung up: record the run's ``decision.stop`` and save the record.

        An MCP server cannot see the model, so the stop is inferred the way the incident's own
        extraction does it: ``policy_denied`` when the last call was refused, else ``end_turn``.
        """
        if self.started:
            self.harness.record_decision("stop", "policy_denied" if self.last_refused else "end_turn")
            self.started = False
        return self.save_record()

    def tools(self) -> list[types.Tool]:
        """The tools seen in the capsule, in order of first use."""
        names = [m for m in dict.fromkeys(ev.method for ev in self.capsule.tool_evidence) if m != "resources/read"]
        return [types.Tool(name=n, description=f"replayed from capsule {self.capsule.operation_id} "
                                               "(answers only calls captured there)",
                           input_schema={"type": "object"}) for n in names]

    def _object(self, method: str, arguments: dict) -> str | None:
        raw = self.rules.raw_objects(method, arguments)
        if not raw:
            return None
        obj, _ = self.rules.normalise(raw[0])
        return obj

    # -- one call ------------------------------------------------------------------------------------
    def call(self, method: str, tool: str, arguments: dict | None, meta: dict | None) -> tuple[str, Any]:
        """Answer one call.

        Returns:
            ``(kind, value)``: ``("result", result dict)``, ``("refused", rule)``,
            ``("error", ErrorData dict)`` (the captured answer was a JSON-RPC error) or
            ``("incomplete", message)``.
        """
        ts_ns, t0 = time.time_ns(), time.perf_counter()
        arguments = dict(arguments or {})
        server = self.tool_servers.get(tool, self.default_server)
        q = self._queues.get(request_digest(server, tool, arguments))
        ev = q.popleft() if q else None
        rec: dict = {"ts": rfc3339(ts_ns), "seq": self.log.next_seq(), "session": self.log.session,
                     "agent": self.log.agent, "server": server, "tool": tool}
        if method != "tools/call":
            rec["method"] = method
        rec.update({"arguments": canonical_object(arguments), "object": self._object(method, arguments)})
        rows = nbytes = error = digest = None
        try:
            data = self.harness.call_raw(server, tool, arguments)
            try:
                obj = orjson.loads(data)
                problem = _answer_problem(method, obj)
            except orjson.JSONDecodeError as exc:  # not an answer an MCP client can be given
                problem = f"is not JSON an MCP client can read ({exc})"
            if problem is not None:
                who = ev.call_id if ev is not None else "?"
                # the replay stops here, as for any evidence that cannot answer the call
                raise self.harness._fail(EvidenceMissing(
                    f"captured response {sha256_digest(data)} (call {who}) {problem}: {server} {tool} cannot be "
                    "answered from it", server=server, method=tool,
                    call_id=None if ev is None else ev.call_id, what="object")) from None
        except ToolDenied as exc:
            decision, rule, kind, value = "deny", exc.rule, "refused", exc.rule
        except CapsuleError as exc:
            decision, rule, kind = "deny", "replay:incomplete", "incomplete"
            value = error = f"replay_incomplete: {exc}"
        else:
            digest = sha256_digest(data)
            decision = "allow"
            rule = (ev.policy or {}).get("rule") if ev is not None else None
            if is_error_evidence(obj):
                kind, value = "error", obj["error"]
                error = f"upstream error {value.get('code')}: {value.get('message')}"
            else:
                kind, value = "result", obj
                rows, nbytes = measure(method, obj)
                error = tool_error_text(obj)
        rec.update({"decision": decision, "rule": rule, "rows": rows, "bytes": nbytes,
                    "meta": canonical_object(meta) if isinstance(meta, dict) else None, "error": error})
        if digest is not None:
            rec["response_digest"] = digest
        end = time.time_ns()
        rec["ts_end"] = rfc3339(max(end, ts_ns))
        rec["duration_ms"] = round((time.perf_counter() - t0) * 1000.0, 3)
        self.last_refused = kind == "refused"
        self.log.write(rec)
        self.save_record()
        return kind, value

    # -- MCP ------------------------------------------------------------------------------------------
    def mcp_server(self):
        """A low-level :class:`mcp.server.lowlevel.Server` wired to this capsule."""
        from mcp.server.lowlevel import Server
        from mcp.shared.exceptions import MCPError

        async def on_list_tools(ctx, params) -> types.ListToolsResult:
            return types.ListToolsResult(tools=self.tools())

        async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
            meta = params.model_dump(by_alias=True, exclude_none=True).get("_meta")
            kind, value = self.call("tools/call", params.name, params.arguments, meta)
            if kind == "result":
                return types.CallToolResult.model_validate(value)
            if kind == "refused":
                return refusal_result(params.name, value)
            if kind == "error":
                raise MCPError(int(value.get("code", types.INTERNAL_ERROR)), str(value.get("message", "")),
                               value.get("data"))
            return types.CallToolResult(content=[types.TextContent(type="text", text=value)], is_error=True)

        async def on_list_resources(ctx, params) -> types.ListResourcesResult:
            return types.ListResourcesResult(resources=[])

        async def on_read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
            meta = params.model_dump(by_alias=True, exclude_none=True).get("_meta")
            uri = str(params.uri)
            kind, value = self.call("resources/read", "resources/read", {"uri": uri}, meta)
            if kind == "result":
                return types.ReadResourceResult.model_validate(value)
            if kind == "refused":
                raise MCPError(DOOR_REFUSED, refusal_text("resources/read", value))
            if kind == "error":
                raise MCPError(int(value.get("code", types.INTERNAL_ERROR)), str(value.get("message", "")),
                               value.get("data"))
            raise MCPError(REPLAY_INCOMPLETE, value)

        return Server(f"replaybook-capsule-{self.capsule.operation_id}", version="1",
                      instructions="Answers only from captured evidence; anything else is replay_incomplete.",
                      on_list_tools=on_list_tools, on_call_tool=on_call_tool,
                      on_list_resources=on_list_resources, on_read_resource=on_read_resource)


async def run_serve_capsule(server: CapsuleServer) -> None:
    """Serve ``server`` over this process's stdio until the client hangs up (network blocked)."""
    from mcp.server.stdio import stdio_server

    mcp_server = server.mcp_server()
    with server.harness.guard():
        server.begin()
        async with stdio_server() as (read_stream, write_stream):
            await mcp_server.run(read_stream, write_stream, mcp_server.create_initialization_options())
        server.end()
