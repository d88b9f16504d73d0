"""``replaybook door``: an MCP proxy that decides, logs and (optionally) keeps every call.

The door sits between an MCP client (stdio) and the MCP server it starts (stdio, through the
SDK's :func:`mcp.client.stdio.stdio_client`, :func:`run_door`) or a remote MCP server it reaches
over Streamable HTTP (the SDK's :func:`mcp.client.streamable_http.streamable_http_client`,
:func:`run_door_url`).  It relays JSON-RPC messages, parsed and written with the SDK's models,
and never rewrites what it forwards:

* ``initialize``, ``ping``, ``server/discover``, ``tools/list``, ``resources/list`` and the other
  listing/negotiation requests in :data:`PASS_METHODS` (plus the rules file's ``pass_methods``),
  every notification, and every server→client message pass through untouched;
* each ``tools/call`` and ``resources/read`` is decided by the rules (:mod:`.rules`).  A rule
  that *asks* sends the client an ``elicitation/create`` request (MCP elicitation: the client
  asks its user "allow this call?") and the call is allowed only when the user approves; a
  client that declared no ``elicitation`` capability, a decline, a dismissal or no answer within
  :attr:`Door.ask_timeout_s` refuses it.  Such a call is logged with the decision that came of
  it (``allow``/``deny``), the asking rule and ``approval`` (the answer).  A refused
  call is logged and answered by the door (a tool result with ``isError: true`` naming the rule;
  for ``resources/read`` a JSON-RPC error, code :data:`~.results.DOOR_REFUSED`).  An allowed call
  is forwarded; when the server answers, the door measures the answer, keeps it in the evidence
  store (``--evidence``), writes the log line, and only then forwards the answer;
* any other request method is refused (``door:method-not-allowed``), and a line that is not a
  JSON-RPC message (invalid JSON, a batch, too long, not UTF-8) is answered with a JSON-RPC error
  and logged (``door:invalid-request`` / ``door:message-too-large``).

An answer from the server to no request in flight (an id the door refused, a second answer)
is not relayed: it would reach the client unlogged; a request whose id is already in flight is
refused.  An answer the server sends that is not valid JSON-RPC is taken for a parse error
(``-32700``) to the request whose id it names at its top level, as the SDK's HTTP transport
does, so the call is logged and the client is not left waiting.  With ``roots`` in the rules,
the client's answer to the server's ``roots/list`` reaches the server only when it lists those
roots (a server could otherwise move off them).
If the log line cannot be written, the client gets an error instead of the answer, and no
allowed call is forwarded until lines can be written again (fail closed); an answer that cannot
be kept as evidence is not given either.
Bytes that are not UTF-8 (read as U+FFFD, by the SDK on the server's side) are said on stderr,
from either side.
If the server exits, every call still waiting is logged with an error and answered with one.
With a call timeout (:attr:`Door.call_timeout_s`, ``--call-timeout``), so is a call the server
has not answered in time; its late answer is dropped.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import logging
import math
import os
import posixpath
import secrets
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Protocol
from urllib.parse import unquote, urlsplit

import anyio
import mcp_types as types
import orjson

from .. import _json
from .._text import deep_safe, safe_str
from .calllog import META_CALL_ID_KEYS, CallLog, canonical_object, rfc3339
from .results import (DOOR_REFUSED, error_evidence_bytes, evidence_bytes, measure, refusal_result,
                      tool_error_text)
from .rules import Decision, Rules, refusal_text

__all__ = ["Door", "PASS_METHODS", "DECIDED_METHODS", "STOP_SIGNALS", "run_door", "run_door_url", "UpstreamUnreachable", "shown_url", "ClientPeer"]

#: Request methods forwarded untouched.
PASS_METHODS = frozenset({
    "initialize", "ping", "server/discover", "tools/list", "resources/list", "resources/templates/list",
    "prompts/list", "completion/complete", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
    "subscriptions/listen",
})
#: Request methods the door decides.
DECIDED_METHODS = ("tools/call", "resources/read")

_SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"
_PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
#: Longest tool or method name the door accepts (MCP tool names are at most 128 characters).
_MAX_NAME = 256


def _say(text: str) -> None:
    """Tell stderr (a full disk or a file size limit there must not stop the door)."""
    try:
        print(f"replaybook door: {text}", file=sys.stderr)
    except (OSError, ValueError):
        pass


class _Undecodable:
    """Bytes that are not UTF-8 the MCP SDK's stdio client read from the server, counted by the
    codec error handler :data:`_UTF8_NOTED` it decodes with (as ``replace`` would, it puts U+FFFD
    in their place — the SDK accepts only ``strict``, ``ignore`` or ``replace`` and says nothing)."""

    bytes = 0


def _replace_counted(exc: UnicodeError) -> tuple[str, int]:
    """``replace``, counting the bytes a decode replaces (:class:`_Undecodable`)."""
    if isinstance(exc, UnicodeDecodeError):
        _Undecodable.bytes += exc.end - exc.start
        return "\ufffd", exc.end
    return codecs.replace_errors(exc)


#: The codec error handler the door gives the SDK's stdio client (registered on first use).
_UTF8_NOTED = "replaybook-door-replace-counted"


def _counting_replacements(params):
    """The SDK's stdio parameters ``params`` with the codec error handler :data:`_UTF8_NOTED`
    (``replace``, counting what it replaces, so the door can say so) and ``True``; the SDK's field
    takes only the names of the standard handlers, hence a copy without validation.  When the
    SDK's parameters cannot be copied so (another SDK), ``params`` as they are and ``False``:
    bytes that are not UTF-8 are then still replaced, and stderr says once that they go unsaid."""
    try:
        try:
            codecs.lookup_error(_UTF8_NOTED)
        except LookupError:
            codecs.register_error(_UTF8_NOTED, _replace_counted)
        copied = params.model_copy(update={"encoding_error_handler": _UTF8_NOTED})
    except Exception:  # noqa: BLE001 - the SDK changed: relay as it reads, uncounted
        copied = None
    if getattr(copied, "encoding_error_handler", None) != _UTF8_NOTED:
        _say("this MCP SDK's stdio client cannot be given the door's codec error handler: bytes from the "
             "server that are not UTF-8 are read as U+FFFD and not said")
        return params, False
    return copied, True


def _what(msg) -> str:
    """A message from either side in words: ``answer to id 7``, ``request 'ping' (id 4)`` …"""
    if isinstance(msg, (types.JSONRPCResponse, types.JSONRPCError)):
        return f"answer to id {msg.id!r}"
    if isinstance(msg, types.JSONRPCRequest):
        return f"request {safe_str(msg.method)[:_MAX_NAME]!r} (id {msg.id!r})"
    return f"notification {safe_str(getattr(msg, 'method', ''))[:_MAX_NAME]!r}"


def _result_for(method: str, version: str | None, result) -> dict:
    """A result model dumped the way the negotiated protocol version spells it (SDK surface maps)."""
    data = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    if version:
        try:
            from mcp_types.methods import serialize_server_result

            return serialize_server_result(method, version, data)
        except Exception:  # noqa: BLE001 - unknown version or method: the generic dump is valid JSON-RPC
            pass
    return data


class ClientPeer(Protocol):
    """The client side of the door (:class:`~._stdio.StdioPeer`, or a test double)."""

    async def receive(self) -> Any:
        """The next message from the client (a JSON-RPC message or an error to answer)."""
        ...

    async def send(self, message: types.JSONRPCMessage) -> None:
        """Send one JSON-RPC message to the client."""
        ...


@dataclass
class _Call:
    seq: int
    ts_ns: int
    t0: float
    method: str
    tool: str
    arguments: Any
    meta: dict | None
    decision: Decision
    extra: dict = field(default_factory=dict)
    #: the id of the door's own question to the user about this call (a rule that asks)
    ask_id: str | None = None
    #: why the client cancelled this call while its question waited for the user's answer
    cancelled: str | None = None
    #: when the call, forwarded, stops waiting for the server's answer (``time.monotonic``), if ever
    deadline: float | None = None


def _jsonable(v: Any) -> tuple[Any, bytes | None, bool]:
    """``(value, compact JSON bytes or None, had_bad_text)`` — lone surrogates replaced."""
    try:
        return v, _json.dumps(v), False
    except (orjson.JSONEncodeError, TypeError):
        pass
    safe = deep_safe(v)
    try:
        return safe, _json.dumps(safe), safe != v
    except (orjson.JSONEncodeError, TypeError):
        return None, None, safe != v


def _not_finite(v: Any) -> bool:
    """``v`` holds a float that is infinite or NaN (a number beyond the double range, or a
    ``NaN``/``Infinity`` literal), at any depth."""
    return any(isinstance(x, float) and not math.isfinite(x) for x in _json.leaves(v))


def _as_written(raw: bytes | None, method: str, args: Any) -> Any:
    """The arguments of the request line ``raw`` re-read so that numbers no double holds keep
    their text (:class:`replaybook._json.NumberAsWritten`; the SDK reads ``1e400`` as infinity),
    or ``args`` when the line does not give them."""
    if raw is None:
        return args
    try:
        params = _json.loads_lenient(raw.decode("utf-8", "replace")).get("params")
        got = params.get("arguments") if method == "tools/call" else {"uri": params.get("uri")}
    except (ValueError, AttributeError):
        return args
    return got if isinstance(got, dict) else args


def _small(v: Any) -> bool:
    """``v`` is text of at most :data:`_MAX_NAME` bytes (UTF-8), or another value (not null)
    whose compact JSON is at most that long."""
    if isinstance(v, str):
        return len(v.encode("utf-8", "surrogatepass")) <= _MAX_NAME
    if v is None:
        return False
    data = _jsonable(v)[1]
    return data is not None and len(data) <= _MAX_NAME


def _canon(v: Any) -> Any:
    try:
        return canonical_object(v)
    except (orjson.JSONEncodeError, orjson.JSONDecodeError, TypeError, ValueError):
        return None


class Door:
    """The relay and its policy.  One instance serves one client session.

    Args:
        rules: the loaded rules.
        log: the session's call log.
        evidence: where to keep full responses (``None``: keep none, log no digests).
        server_name: the upstream's name in the log (default: its ``serverInfo.name`` as seen in the
            ``initialize`` answer, else ``default_server``).
        default_server: the name used before/without ``serverInfo`` (e.g. the command's name).
        clock_ns: the door's wall clock (``time.time_ns``); rules' time windows use it too.
        grace_s: how long to wait for answers still in flight after the client hangs up.
        call_timeout_s: how long a forwarded call waits for the server's answer, seconds
            (``None``: as long as it takes).  When it expires the call is logged as not answered
            in time, the client gets a JSON-RPC error (:data:`~mcp_types.REQUEST_TIMEOUT`), the
            server a ``notifications/cancelled`` for it, and an answer that comes later is dropped
            (said on stderr).
    """

    def __init__(self, rules: Rules, log: CallLog, *, evidence=None, server_name: str | None = None,
                 default_server: str | None = None, clock_ns: Callable[[], int] = time.time_ns,
                 grace_s: float = 5.0, call_timeout_s: float | None = None):
        self.rules = rules
        self.log = log
        self.evidence = evidence
        self._server_name = server_name
        self._sniffed: str | None = None
        self.protocol_version: str | None = None
        self.default_server = default_server
        self.clock_ns = clock_ns
        self.grace_s = grace_s
        self.call_timeout_s = call_timeout_s
        #: ids of calls answered with the door's timeout error whose late answer has not come
        self._timed_out_ids: set = set()
        self.pending: dict[Any, _Call] = {}
        #: the signal that stopped the door (``SIGTERM`` …), once one has
        self.stopped_by: str | None = None
        #: what a stop signal cancels (set while :func:`_serve_until_stopped` runs)
        self._stop_scope: anyio.CancelScope | None = None
        #: lines that could not be written yet, oldest first (written before the next line)
        self._held: list[dict] = []
        #: requests passed through to the server and not answered yet: id → method
        self._passing: dict[Any, str] = {}
        #: the server's ``roots/list`` requests to the client not answered yet
        self._roots_asked: set = set()
        self._init_ids: set = set()
        #: set once the server has answered every ``initialize`` in flight (made in the event loop)
        self._init_answered: anyio.Event | None = None
        #: how long a line the door writes itself (a refusal) waits for that answer, seconds
        self.init_wait_s = 5.0
        self.pass_methods = PASS_METHODS | frozenset(rules.pass_methods)
        self.calls = 0
        self.refused = 0
        #: the client declared MCP elicitation in ``initialize``: a rule that asks can ask it
        self.client_can_ask = False
        #: how long a rule's question waits for the user's answer, seconds
        self.ask_timeout_s = 300.0
        self._asks: dict[str, list] = {}   # our elicitation request id → [answered event, answer]
        self._asking: dict[Any, _Call] = {}  # client request id → a call waiting for its user's answer
        self._n_asks = 0
        self._asked: set[str] = set()       # every question's id (a late answer to one is not the server's)
        #: ids of calls the client cancelled whose answer has not come: a late answer naming one
        #: is that call's, never another request's whose id is its text or number (:meth:`_as_asked`)
        self._cancelled_ids: set = set()
        self._tg = None                     # the relay's task group (a question waits in its own task)
        #: the server reads this machine's filesystem (the door started it): a path is decided
        #: on the object it reaches through symlinks too (:meth:`.Rules.decide`)
        self.on_disk = False
        #: hold every other client message until the server has answered ``initialize`` (over
        #: HTTP the session id comes with that answer; a notification sent before it is refused)
        self.hold_until_initialized = False
        #: how many bytes that are not UTF-8 the transport has read from the server so far
        #: (replaced with U+FFFD), when it can tell (:func:`run_door`); those said on stderr
        self.server_undecodable: Callable[[], int] | None = None
        self._undecodable_said = 0

    @property
    def server_name(self) -> str | None:
        """The upstream server's name for the log: given, else from its ``initialize`` answer."""
        return self._server_name or self._sniffed or self.default_server

    # -- logging ---------------------------------------------------------------------------------
    def _record(self, call: _Call, *, rows=None, nbytes=None, error=None, digest=None) -> dict:
        end = self.clock_ns()
        rec = {"ts": rfc3339(call.ts_ns), "ts_end": rfc3339(max(end, call.ts_ns)), "seq": call.seq,
               "session": self.log.session, "agent": self.log.agent, "server": self.server_name,
               "tool": call.tool}
        if call.method != "tools/call":
            rec["method"] = call.method
        rec.update({"arguments": call.arguments, "object": call.decision.object, "decision": call.decision.decision,
                    "rule": call.decision.rule, "rows": rows, "bytes": nbytes,
                    "duration_ms": round((time.perf_counter() - call.t0) * 1000.0, 3), "meta": call.meta,
                    "error": error})
        if digest is not None:
            rec["response_digest"] = digest
        rec.update(call.extra)
        return rec

    def _write(self, rec: dict) -> bool:
        """Write ``rec``, after any line held back by an earlier failure; False when it could not
        be written (it is then held back too, and written before the next line that can be)."""
        self._held.append(rec)
        return self._write_held()

    def _write_held(self) -> bool:
        """Write the lines held back, oldest first; False when one still cannot be written."""
        try:
            while self._held:
                self.log.write(self._held[0])
                self._held.pop(0)
            return True
        except Exception as exc:  # noqa: BLE001 - OSError, InputError (locked): fail closed
            _say(f"cannot write the call log: {exc}")
            return False

    def _log_ready(self) -> bool:
        """The call log can take this call's line: its file opens, and no line is held back.  An
        allowed call is forwarded only then, since the server acts on it before its line is written."""
        if self._held:
            return self._write_held()
        try:
            self.log.open()
            return True
        except Exception as exc:  # noqa: BLE001 - OSError, InputError (locked)
            _say(f"cannot open the call log: {exc}")
            return False

    def _unwritten(self) -> None:
        """Say on stderr every line that could not be written, so that none is lost unsaid."""
        for rec in self._held:
            _say("a call log line that could not be written: " + _json.dumps(rec).decode("utf-8", "replace"))
        self._held.clear()

    def _keep(self, data: bytes) -> str | None:
        if self.evidence is None:
            return None
        digest = self.evidence.put(data)
        try:  # mark as recently used: prune never removes an object touched within its idle window
            os.utime(self.evidence.path(digest))
        except OSError:
            pass
        return digest

    # -- building a call ----------------------------------------------------------------------------
    def _new_call(self, method: str, tool: str, arguments: Any, meta: Any, decision: Decision,
                  extra: dict | None = None) -> _Call:
        extra = extra or {}
        logged = self._logged_meta(meta, extra) if isinstance(meta, dict) else None
        return _Call(seq=self.log.next_seq(), ts_ns=self.clock_ns(), t0=time.perf_counter(), method=method,
                     tool=tool, arguments=arguments, meta=logged, decision=decision, extra=extra)

    def _logged_meta(self, meta: dict, extra: dict) -> dict | None:
        """The request's ``_meta`` as the log keeps it: in canonical form; or, when its compact
        JSON (UTF-8, keys in the client's order) is larger than the rules' ``max_argument_bytes``
        — the bound arguments have — only its tool-use id keys (:data:`~.calllog.META_CALL_ID_KEYS`,
        the join's) and the protocol version key, each when its value is text of at most
        :data:`_MAX_NAME` bytes, or another value (a number …) whose JSON is that small, so the
        loader can still say an id is not text (``None`` when none is), with ``meta_bytes`` (that size) and
        ``meta_digest`` (``sha256:<hex>`` of those bytes) added to ``extra``.  The request itself
        is forwarded as sent: the bound is the log line's, not a refusal."""
        _, data, _ = _jsonable(meta)
        if data is None or len(data) <= self.rules.max_argument_bytes:
            return _canon(meta)
        extra["meta_bytes"] = len(data)
        extra["meta_digest"] = "sha256:" + hashlib.sha256(data).hexdigest()
        kept = {k: meta[k] for k in (*META_CALL_ID_KEYS, _PROTOCOL_VERSION_META_KEY) if k in meta and _small(meta[k])}
        return _canon(kept) if kept else None

    def _decide_request(self, msg: types.JSONRPCRequest, bad_utf8: bool, raw: bytes | None = None) -> _Call:
        ts_ns, t0 = self.clock_ns(), time.perf_counter()
        params = msg.params if isinstance(msg.params, dict) else {}
        method = msg.method
        meta = params.get("_meta")
        if method == "tools/call":
            name = params.get("name")
            tool = safe_str(name) if isinstance(name, str) and 0 < len(name) <= _MAX_NAME else None
            raw_args = params.get("arguments")
        else:
            uri = params.get("uri")
            tool = "resources/read"
            raw_args = {"uri": uri} if isinstance(uri, str) else None
            if raw_args is None:
                tool = None
        extra: dict = {}
        if tool is None:
            decision = Decision("deny", "door:invalid-request")
            call = self._new_call(method, "(invalid)", None, meta, decision)
            call.ts_ns, call.t0 = ts_ns, t0
            return call
        args, argjson, bad_text = _jsonable(raw_args if raw_args is not None else {})
        if args is None or not isinstance(args, dict):
            decision = Decision("deny", "door:invalid-arguments")
            logged = None  # the log's `arguments` is an object or null; keep what came, when small
            if argjson is not None and len(argjson) <= self.rules.max_argument_bytes:
                extra["arguments_invalid"] = _canon(args)
        elif _not_finite(args):
            # 1e400 reads as infinity and the SDK would pass it on as null: the server would get
            # other arguments than the agent sent
            decision = Decision("deny", "door:number-out-of-range")
            logged = _canon(_as_written(raw, method, args))
        else:
            renamed = method == "tools/call" and tool != params.get("name")  # lone surrogates in the name
            if bad_utf8 or bad_text or renamed:
                objs = self.rules.raw_objects(method, args) if isinstance(args, dict) else []
                decision = Decision("deny", "door:invalid-utf8", objs[0] if objs else None)
            else:
                decision = self.rules.decide(method, tool, args, argument_bytes=len(argjson), on_disk=self.on_disk,
                                             now=datetime.fromtimestamp(ts_ns / 1e9, timezone.utc))
            if decision.rule == "door:arguments-too-large":
                logged = None
                extra = {"arguments_bytes": len(argjson),
                         "arguments_digest": "sha256:" + hashlib.sha256(argjson).hexdigest()}
            else:
                logged = _canon(args)
        if len(decision.objects) > 1:
            extra["objects"] = list(decision.objects)
        call = self._new_call(method, tool, logged, meta, decision, extra)
        call.ts_ns, call.t0 = ts_ns, t0
        return call

    # -- answering ---------------------------------------------------------------------------------
    def _refusal(self, call: _Call, rid) -> types.JSONRPCMessage:
        if call.decision.rule == "door:log-failed":
            return self._log_failed(rid)
        if call.decision.rule == "door:invalid-request":
            return types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(
                code=types.INVALID_PARAMS, message=refusal_text(call.method, call.decision.rule)))
        approval = call.extra.get("approval")
        if call.method == "tools/call":
            res = refusal_result(call.tool, call.decision.rule, approval)
            version = (call.meta or {}).get(_PROTOCOL_VERSION_META_KEY) or self.protocol_version
            return types.JSONRPCResponse(jsonrpc="2.0", id=rid,
                                         result=_result_for("tools/call", version if isinstance(version, str)
                                                            else None, res))
        return types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(
            code=DOOR_REFUSED, message=refusal_text(call.tool, call.decision.rule, approval)))

    @staticmethod
    def _log_failed(rid) -> types.JSONRPCError:
        return types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(
            code=types.INTERNAL_ERROR, message=refusal_text("request", "door:log-failed")))

    async def _safe_send(self, peer: ClientPeer, msg: types.JSONRPCMessage) -> None:
        try:
            await peer.send(msg)
        except (ConnectionError, OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass

    # -- the two directions ---------------------------------------------------------------------------
    async def _from_client(self, peer: ClientPeer, server_write) -> None:
        while True:
            if self.stopped_by is not None:
                # stopped while a refusal was written (the stop reaches it in _server_named, which
                # lets it write its line): no line read after the signal is decided
                await anyio.lowlevel.checkpoint()
                return
            inc = await peer.receive()
            if inc is None:
                return
            msg = inc.message
            if msg is None:
                await self._bad_line(peer, inc)
                continue
            if inc.bad_utf8 and not (isinstance(msg, types.JSONRPCRequest) and msg.method in DECIDED_METHODS):
                # (a call is refused for it, door:invalid-utf8; anything else goes on as the SDK would take it)
                _say(f"the client's {_what(msg)} held bytes that are not UTF-8: passed on with U+FFFD in their place")
            if (self.hold_until_initialized and self._init_ids and self._init_answered is not None
                    and not (isinstance(msg, types.JSONRPCRequest) and msg.method == "initialize")):
                try:
                    with anyio.move_on_after(30):
                        await self._init_answered.wait()
                except anyio.get_cancelled_exc_class():
                    if self.stopped_by is not None:
                        self._held_at_stop(msg, inc)
                    raise
            if isinstance(msg, (types.JSONRPCResponse, types.JSONRPCError)) and msg.id in self._asks:
                asked = self._asks[msg.id]  # the user's answer to the door's own question: not the server's
                asked[1] = msg
                asked[0].set()
                continue
            if isinstance(msg, (types.JSONRPCResponse, types.JSONRPCError)) and msg.id in self._asked:
                # a late answer to the door's question (withdrawn, or timed out): nothing the server asked
                _say(f"the client answered the door's question {msg.id!r} after it was closed: not passed on")
                continue
            if isinstance(msg, types.JSONRPCResponse) and msg.id in self._roots_asked:
                self._roots_asked.discard(msg.id)
                if not self._roots_agree(msg.result):
                    await server_write.send(_session_message(types.JSONRPCError(
                        jsonrpc="2.0", id=msg.id, error=types.ErrorData(
                            code=types.INTERNAL_ERROR, message="the door in front of this server decides paths under "
                                                               "its rules' roots: the client's roots are not passed on"))))
                    continue
            if isinstance(msg, types.JSONRPCNotification) and msg.method == "notifications/cancelled":
                await self._cancelled(peer, msg)
            if isinstance(msg, types.JSONRPCNotification) and not msg.method.startswith("notifications/"):
                # "tools/call" without an id (or with one JSON-RPC does not allow) reads as a
                # notification: never forwarded, since no rule would decide it and no line log it
                await self._not_a_request(peer, msg, inc.has_id)
                continue
            if isinstance(msg, types.JSONRPCRequest):
                if msg.method in DECIDED_METHODS:
                    await self._decided(peer, server_write, msg, inc.bad_utf8, inc.raw)
                    continue
                if msg.method not in self.pass_methods:
                    await self._not_allowed(peer, msg)
                    continue
                if self._in_flight(msg.id):
                    # its answer would be taken for the other request's (and a call's logged so)
                    await self._safe_send(peer, types.JSONRPCError(jsonrpc="2.0", id=msg.id, error=types.ErrorData(
                        code=types.INVALID_REQUEST, message=f"refused by the door: request id {msg.id!r} is already "
                                                            "in flight")))
                    continue
                self._passing[msg.id] = msg.method
                self._timed_out_ids.discard(msg.id)  # (an id used again: its answer is this request's)
                if msg.method in ("initialize", "server/discover"):
                    self._init_ids.add(msg.id)
                    if self._init_answered is None or self._init_answered.is_set():
                        self._init_answered = anyio.Event()
                    if msg.method == "initialize":
                        caps = (msg.params or {}).get("capabilities") if isinstance(msg.params, dict) else None
                        self.client_can_ask = isinstance(caps, dict) and isinstance(caps.get("elicitation"), dict)
            await server_write.send(_session_message(msg))

    async def _cancelled(self, peer: ClientPeer, msg: types.JSONRPCNotification) -> None:
        """The client's ``notifications/cancelled`` for a call in flight: the call is logged now
        as cancelled (its ``reason``, when given, in ``error``) and no longer waits for an answer.
        A call whose rule's question still waits for the user's answer is never passed on: it is
        logged as refused (``approval: cancelled``) and the question is withdrawn (a
        ``notifications/cancelled`` for it to the client).
        The notification itself is then passed on, as every notification is.  A server that
        honours it never answers the call (the MCP SDKs do not), so without this the call would
        be logged only when the session ends, as if the client had hung up, and the door would
        wait for that answer on the way down; an answer that comes anyway is not passed on (the
        client has stopped waiting for it).  A ``requestId`` written as the text of an integer
        names that integer id too, as the MCP SDKs read it."""
        params = msg.params if isinstance(msg.params, dict) else {}
        rid = params.get("requestId")
        if not isinstance(rid, (int, str)) or isinstance(rid, bool):
            return
        if rid in self._passing:  # a request passed through (tools/list …): nothing to log here
            return
        if rid not in self.pending and rid not in self._asking and isinstance(rid, str):
            try:
                rid = int(rid)
            except ValueError:
                return
        reason = params.get("reason")
        why = "cancelled by the client before the answer"
        if isinstance(reason, str) and reason:
            why += f": {safe_str(reason)[:300]}"
        call = self.pending.pop(rid, None)
        if call is not None:
            self._cancelled_ids.add(rid)
            self._write(self._record(call, error=why))
            return
        call = self._asking.get(rid)
        if call is None or call.cancelled is not None:
            return
        call.cancelled = why
        asked = self._asks.get(call.ask_id) if call.ask_id is not None else None
        if asked is not None:
            asked[0].set()  # (no answer: the question task logs the refusal)
            await self._safe_send(peer, types.JSONRPCNotification(
                jsonrpc="2.0", method="notifications/cancelled",
                params={"requestId": call.ask_id, "reason": "the agent cancelled the call this question is about"}))

    def _held_at_stop(self, msg, inc) -> None:
        """A line read before a stop signal, held back until the server answers ``initialize``
        (``--url``), that the stop leaves unsent: a call the rules decide is decided and logged
        now — a refusal as refused, a call the rules let through as ``the door was stopped
        (SIGTERM) before the call was passed on`` — so that no call the client sent before the
        signal goes unlogged.  Nothing is answered: the door is on its way down."""
        if not (isinstance(msg, types.JSONRPCRequest) and msg.method in DECIDED_METHODS):
            return
        call = self._decide_request(msg, inc.bad_utf8, inc.raw)
        self.calls += 1
        if call.decision.decision == "ask":  # (no one is left to ask)
            call.extra["approval"] = "unavailable"
            d = call.decision
            call.decision = Decision("deny", d.rule, d.object, d.objects)
        if not call.decision.allowed:
            self.refused += 1
            self._write(self._record(call, error=call.extra.pop("error_detail", None)))
        else:
            self._write(self._record(call, error=f"the door was stopped ({self.stopped_by}) before the call "
                                                 "was passed on"))

    async def _decided(self, peer: ClientPeer, server_write, msg: types.JSONRPCRequest, bad_utf8: bool,
                       raw: bytes | None = None) -> None:
        call = self._decide_request(msg, bad_utf8, raw)
        self.calls += 1
        if call.decision.decision in ("allow", "ask") and self._in_flight(msg.id):
            call.decision = Decision("deny", "door:invalid-request", call.decision.object)
            call.extra["error_detail"] = "request id already in flight"
        if call.decision.decision == "ask" and self._tg is not None:
            # the question waits for the user in a task of its own: this loop must go on
            # reading, since the answer comes back through it (and a cancellation of the call)
            self._asking[msg.id] = call
            self._tg.start_soon(self._ask_then_relay, peer, server_write, msg, call)
            return
        if call.decision.decision == "ask":  # (no relay running: nobody to ask)
            call.extra["approval"] = "unavailable"
            call.decision = Decision("deny", call.decision.rule, call.decision.object, call.decision.objects)
        if call.decision.allowed and not self._log_ready():
            self._log_broken(call)
        if not call.decision.allowed:
            self.refused += 1
            await self._server_named()
            ok = self._write(self._record(call, error=call.extra.pop("error_detail", None)))
            await self._safe_send(peer, self._refusal(call, msg.id) if ok else self._log_failed(msg.id))
            return
        self._forwarding(msg.id, call)
        await server_write.send(_session_message(msg))

    def _forwarding(self, rid, call: _Call) -> None:
        """``call`` (id ``rid``) goes to the server now: it waits for the answer, until its
        deadline when the door has a call timeout."""
        self._timed_out_ids.discard(rid)  # (an id used again: its answer is this call's)
        if self.call_timeout_s is not None:
            call.deadline = time.monotonic() + self.call_timeout_s
        self.pending[rid] = call

    def _timeout_words(self) -> str:
        return f"{self.call_timeout_s:g} s"

    async def _expire_calls(self, peer: ClientPeer, server_write) -> None:
        """While the relay runs: every call whose answer has not come by its deadline is logged as
        not answered in time, answered with a JSON-RPC error, and cancelled at the server (MCP's
        ``notifications/cancelled``); an answer that comes after that is dropped (:meth:`_from_server`)."""
        tick = min(0.25, max(0.01, self.call_timeout_s / 10))
        while True:
            await anyio.sleep(tick)
            now = time.monotonic()
            for rid, call in list(self.pending.items()):
                if call.deadline is None or now < call.deadline or self.pending.get(rid) is not call:
                    continue
                del self.pending[rid]
                self._timed_out_ids.add(rid)
                within = self._timeout_words()
                ok = self._write(self._record(call, error=f"no answer from the upstream MCP server within {within} "
                                                          "(--call-timeout): the client was answered with an error"))
                await self._safe_send(peer, types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(
                    code=types.REQUEST_TIMEOUT, message=f"the upstream MCP server did not answer within {within} "
                                                        "(the door's --call-timeout)")) if ok else self._log_failed(rid))
                # in a task of its own: a server that has stopped reading its stdin would hold the
                # cancellation, and with it every later call's timeout, for good
                self._tg.start_soon(self._cancel_at_server, server_write, rid, within)

    @staticmethod
    async def _cancel_at_server(server_write, rid, within: str) -> None:
        """Send the server a ``notifications/cancelled`` for the timed-out call ``rid``."""
        try:
            await server_write.send(_session_message(types.JSONRPCNotification(
                jsonrpc="2.0", method="notifications/cancelled",
                params={"requestId": rid, "reason": f"no answer within {within} (the door's call timeout)"})))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the server is gone: its wind-down handles the rest

    @staticmethod
    def _log_broken(call: _Call) -> None:
        d = call.decision
        call.decision = Decision("deny", "door:log-failed", d.object, d.objects)
        call.extra["error_detail"] = f"allowed by rule {d.rule!r}, but the call log could not be written"

    async def _ask_then_relay(self, peer: ClientPeer, server_write, msg: types.JSONRPCRequest, call: _Call) -> None:
        """A call a rule asks about: ask the user (:meth:`_ask`), then relay it (approved) or
        refuse it, logging the decision that came of it with ``approval``."""
        self._asking[msg.id] = call
        # (the task cancelled: the entry stays, for _abandon to log)
        approval = await self._ask(peer, call) if call.cancelled is None else "cancelled"
        self._asking.pop(msg.id, None)
        d = call.decision
        if call.cancelled is not None:  # the client gave the call up while its user was asked
            call.extra["approval"] = "cancelled"
            call.decision = Decision("deny", d.rule, d.object, d.objects)
            self.refused += 1
            self._write(self._record(call, error=call.cancelled))
            return  # (a cancelled request is not answered)
        call.extra["approval"] = approval
        call.decision = Decision("allow" if approval == "approved" else "deny", d.rule, d.object, d.objects)
        if approval == "approved" and self._in_flight(msg.id):  # (the client reused the id meanwhile)
            call.decision = Decision("deny", "door:invalid-request", d.object, d.objects)
            call.extra["error_detail"] = "request id already in flight"
        elif approval == "approved" and not self._log_ready():
            self._log_broken(call)
        elif approval == "approved":
            self._forwarding(msg.id, call)
            try:
                await server_write.send(_session_message(msg))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass  # the server is gone: its wind-down logs and answers what is pending
            return
        self.refused += 1
        await self._server_named()
        ok = self._write(self._record(call, error=call.extra.pop("error_detail", None)))
        await self._safe_send(peer, self._refusal(call, msg.id) if ok else self._log_failed(msg.id))

    async def _ask(self, peer: ClientPeer, call: _Call) -> str:
        """Ask the client's user whether ``call`` may pass (MCP ``elicitation/create``, a form with
        one yes/no field; the message names the tool, every object it reaches and its arguments)
        and wait up to :attr:`ask_timeout_s` for the answer: ``approved``, ``declined``,
        ``cancelled``, ``timed_out``, ``unavailable`` (the client declared no elicitation, or does
        not know the method) or ``failed`` (it answered with another error)."""
        if not self.client_can_ask:
            return "unavailable"
        self._n_asks += 1
        # unguessable: a server must not be able to send the client a question of its own with
        # this id, whose answer the door would take for the user's answer to its question
        rid = f"replaybook-door-ask-{self._n_asks}-{secrets.token_hex(8)}"
        call.ask_id = rid
        self._asked.add(rid)
        answered = anyio.Event()
        self._asks[rid] = [answered, None]
        objects = list(call.decision.objects) or ([call.decision.object] if call.decision.object else [])
        what = f"{call.tool} on {' and '.join(objects)}" if objects else call.tool
        args = _json.dumps(call.arguments).decode() if call.arguments is not None else "{}"
        if len(args) > 400:
            args = args[:400] + " …"
        params = {"message": f"The door's rule {call.decision.rule!r} asks before this call: allow {what}? "
                             f"Arguments: {args}",
                  "requestedSchema": {"type": "object", "required": ["approve"], "properties": {
                      "approve": {"type": "boolean", "title": "Allow this call",
                                  "description": f"{call.method} {what}, from the agent's MCP connection"}}}}
        try:
            await self._safe_send(peer, types.JSONRPCRequest(jsonrpc="2.0", id=rid, method="elicitation/create",
                                                             params=params))
            with anyio.move_on_after(self.ask_timeout_s):
                await answered.wait()
        finally:
            got = self._asks.pop(rid)[1]
        if got is None:
            return "timed_out"
        if isinstance(got, types.JSONRPCError):  # cannot ask after all, or the question failed
            return "unavailable" if got.error.code in (types.METHOD_NOT_FOUND, types.INVALID_REQUEST) else "failed"
        result = got.result if isinstance(got.result, dict) else {}
        action = result.get("action")
        if action == "accept":
            return "approved" if (result.get("content") or {}).get("approve") is True else "declined"
        return "cancelled" if action == "cancel" else "declined"

    async def _not_allowed(self, peer: ClientPeer, msg: types.JSONRPCRequest) -> None:
        params, _, _ = _jsonable(msg.params)
        if params is not None and len(_json.dumps(params)) > self.rules.max_argument_bytes:
            params = None
        method = safe_str(msg.method)[:_MAX_NAME] or "(empty)"
        call = self._new_call(method, method, _canon(params) if isinstance(params, dict) else None,
                              (msg.params or {}).get("_meta"), Decision("deny", "door:method-not-allowed"))
        self.refused += 1
        await self._server_named()
        ok = self._write(self._record(call, error=f"method {call.method!r} is not forwarded by the door"))
        err = types.JSONRPCError(jsonrpc="2.0", id=msg.id, error=types.ErrorData(
            code=types.METHOD_NOT_FOUND, message=refusal_text(call.method, "door:method-not-allowed")))
        await self._safe_send(peer, err if ok else self._log_failed(msg.id))

    async def _not_a_request(self, peer: ClientPeer, msg: types.JSONRPCNotification, has_id: bool) -> None:
        """A notification whose method is a request's (``tools/call`` with no id, or an id that is
        null, a fraction …): refused and logged (``door:not-a-request``), never forwarded; when the
        line had an id, answered with an error for id null (JSON-RPC's answer to a request whose
        id cannot be read), so the client does not wait forever."""
        params = msg.params if isinstance(msg.params, dict) else {}
        method = safe_str(msg.method)[:_MAX_NAME] or "(empty)"
        tool = safe_str(params.get("name"))[:_MAX_NAME] if isinstance(params.get("name"), str) else method
        args = params.get("arguments") if method == "tools/call" else params
        call = self._new_call(method, tool, _canon(args) if isinstance(args, dict) else None, params.get("_meta"),
                              Decision("deny", "door:not-a-request"))
        self.refused += 1
        await self._server_named()
        ok = self._write(self._record(call, error=(
            "the request's id is not a string or an integer" if has_id else "a request sent without an id")))
        if has_id:
            err = types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(
                code=types.INVALID_REQUEST, message=f"{refusal_text(tool, 'door:not-a-request')}: the id must be a "
                                                    "string or an integer"))
            await self._safe_send(peer, err if ok else self._log_failed(None))

    async def _bad_line(self, peer: ClientPeer, inc) -> None:
        from ._stdio import SDK_MAX_DEPTH

        too_deep = inc.json_ok and inc.depth >= SDK_MAX_DEPTH
        rule = ("door:message-too-large" if inc.too_large else "door:nested-too-deep" if too_deep
                else "door:invalid-utf8" if getattr(inc, "lone_surrogate", False) else "door:invalid-request")
        name = safe_str(inc.method_hint) if inc.method_hint else "(invalid)"
        tool = safe_str(inc.tool_hint)[:_MAX_NAME] if inc.tool_hint else name
        # what the agent asked for, when the line said it (a refusal a reviewer can read)
        args = _canon(inc.arguments_hint) if isinstance(inc.arguments_hint, dict) else None
        call = self._new_call(name, tool, args, getattr(inc, "meta_hint", None), Decision("deny", rule))
        call.extra["message_bytes"] = inc.size
        self.refused += 1
        await self._server_named()
        ok = self._write(self._record(call, error=safe_str(inc.error or "") if too_deep else
                                      f"not a JSON-RPC message: {safe_str(inc.error or '')}"))
        code = types.INVALID_REQUEST if inc.too_large or inc.json_ok else types.PARSE_ERROR
        err = types.JSONRPCError(jsonrpc="2.0", id=inc.id_hint, error=types.ErrorData(
            code=code, message=f"{refusal_text(tool if inc.tool_hint else 'message', rule)}: "
                              f"{safe_str(inc.error or '')}"[:500]))
        await self._safe_send(peer, err if ok else self._log_failed(inc.id_hint))

    async def _server_named(self) -> None:
        """Wait (at most :attr:`init_wait_s`) for the server's answer to an ``initialize`` still
        in flight, so that a line the door writes itself names the server as the lines after
        it do.  (A client that sends a call before that answer, as MCP says it should not, got
        the command's name — ``python3`` — as ``server`` on that line.)"""
        if self._init_ids and self._server_name is None and self._init_answered is not None:
            try:
                with anyio.move_on_after(self.init_wait_s):
                    await self._init_answered.wait()
            except anyio.get_cancelled_exc_class():
                # the door is being stopped (a signal): the caller writes its line now, and its
                # next await ends it (the stop is delivered again there) — a refusal in progress
                # is in no table the wind-down reads, so it would go unlogged
                if self.stopped_by is None:
                    raise

    def _sniff(self, msg) -> None:
        self._init_ids.discard(msg.id)
        if not self._init_ids and self._init_answered is not None:
            self._init_answered.set()
        if not isinstance(msg, types.JSONRPCResponse):
            return
        if isinstance(msg.result.get("protocolVersion"), str):
            self.protocol_version = msg.result["protocolVersion"]
        info = msg.result.get("serverInfo")
        if not isinstance(info, dict):
            info = (msg.result.get("_meta") or {}).get(_SERVER_INFO_META_KEY)
        if isinstance(info, dict) and isinstance(info.get("name"), str) and info["name"]:
            self._sniffed = safe_str(info["name"])

    def _complete(self, call: _Call, msg):
        """Measure, keep and log an answered call; return what the client gets: the answer, or an
        error when the answer could not be kept as evidence or its line could not be written."""
        try:
            if isinstance(msg, types.JSONRPCResponse):
                digest = self._keep(evidence_bytes(msg.result)) if self.evidence is not None else None
            else:
                e = msg.error
                digest = (self._keep(error_evidence_bytes(e.code, e.message, e.data)) if self.evidence is not None
                          else None)
        except Exception as exc:  # noqa: BLE001 - OSError, IntegrityError (an object with other bytes)
            # fail closed: the client does not get an answer the door cannot show later
            _say(f"cannot keep the answer as evidence: {exc}")
            ok = self._write(self._record(call, error="not answered: the door could not keep the answer as "
                                                      f"evidence: {safe_str(str(exc))[:300]}"))
            if not ok:
                return self._log_failed(msg.id)
            return types.JSONRPCError(jsonrpc="2.0", id=msg.id, error=types.ErrorData(
                code=types.INTERNAL_ERROR, message=refusal_text("request", "door:evidence-failed")))
        if isinstance(msg, types.JSONRPCResponse):
            rows, nbytes = measure(call.method, msg.result)
            rec = self._record(call, rows=rows, nbytes=nbytes, error=tool_error_text(msg.result), digest=digest)
        else:
            rec = self._record(call, error=f"upstream error {e.code}: {safe_str(str(e.message))[:500]}", digest=digest)
        return msg if self._write(rec) else self._log_failed(msg.id)

    def _say_undecodable(self, msg) -> None:
        """Say on stderr that the server's message ``msg`` (``None``: its output, at the end) held
        bytes that are not UTF-8, which the transport read as U+FFFD — when it has read such bytes
        since this was last said and ``msg`` holds a U+FFFD (bytes in a line still being read are
        said with that line)."""
        if self.server_undecodable is None:
            return
        n = self.server_undecodable() - self._undecodable_said
        if n <= 0:
            return
        where = "output"
        if msg is not None:
            try:
                text = msg.model_dump_json(by_alias=True, exclude_unset=True)
            except Exception:  # noqa: BLE001 - cannot be written: it is said as the output's
                text = "\ufffd"
            if "\ufffd" not in text:
                return
            where = _what(msg)
            call = self.pending.get(msg.id) if isinstance(msg, (types.JSONRPCResponse, types.JSONRPCError)) else None
            if call is not None:
                where += f" (call {call.seq}, {call.tool})"
        self._undecodable_said += n
        _say(f"the MCP server's {where} held {n} byte{'' if n == 1 else 's'} that {'is' if n == 1 else 'are'} not "
             "UTF-8: the MCP SDK read them as U+FFFD, which the client gets in their place")

    async def _from_server(self, peer: ClientPeer, server_read) -> None:
        async for item in server_read:
            self._say_undecodable(None if isinstance(item, Exception) else item.message)
            if isinstance(item, Exception):  # a line the stdio transport could not read as JSON-RPC
                msg = _broken_answer(item)  # (its id must be the request's, of the same type: it settles nothing else)
                if msg is None or (msg.id not in self.pending and msg.id not in self._passing):
                    _say("the MCP server sent something that is not JSON-RPC (passed over): "
                         f"{type(item).__name__}: {safe_str(str(item))[:500]}")
                    continue
                _say(f"the MCP server's answer to id {msg.id!r} is not JSON-RPC: answered with an error")
            else:
                msg = item.message
            if isinstance(msg, (types.JSONRPCResponse, types.JSONRPCError)):
                if not isinstance(item, Exception):  # (a well-formed answer)
                    msg = self._as_asked(msg)
                if msg.id in self._init_ids:
                    self._sniff(msg)
                call = self.pending.pop(msg.id, None)
                if call is not None:
                    msg = self._complete(call, msg)
                elif msg.id in self._timed_out_ids:
                    self._timed_out_ids.discard(msg.id)
                    _say(f"the MCP server answered id {msg.id!r} after the door's --call-timeout "
                         f"({self._timeout_words()}): dropped (the client was answered with an error)")
                    continue
                elif self._passing.pop(msg.id, None) is None:
                    self._cancelled_ids.discard(msg.id)
                    # an answer to no request in flight (a refused id, a second answer, an id the
                    # client has not used yet): relayed, it would reach the client unlogged
                    _say(f"the MCP server answered id {msg.id!r}, which no request is waiting for: not passed on")
                    continue
            elif isinstance(msg, types.JSONRPCRequest) and msg.id in self._asks:
                _say(f"the MCP server sent a request with the id of the door's own question ({msg.id!r}): "
                     "not passed on")
                continue
            elif isinstance(msg, types.JSONRPCRequest) and msg.method == "roots/list":
                self._roots_asked.add(msg.id)
            await self._safe_send(peer, msg)

    def _as_asked(self, msg):
        """A server's well-formed answer with the id of the request it answers as the client
        wrote it: an answer to request ``7`` that names ``"7"`` (or to ``"7"`` naming ``7``) is
        that request's — the MCP SDKs (Python and TypeScript) match ids so, and a client behind
        the door would otherwise wait forever for an answer the server gave — unless a request
        with the id as the server wrote it is in flight too.  (An answer that is not JSON-RPC
        settles only a request of its own id and type, :func:`_broken_answer`.)"""
        rid = msg.id
        if rid in self.pending or rid in self._passing or rid in self._cancelled_ids or rid in self._timed_out_ids:
            return msg  # (an answer to a call cancelled or timed out: that call's, relayed to no one)
        if isinstance(rid, str):
            try:
                other = int(rid)
            except ValueError:
                return msg
        else:
            other = str(rid)
        if other in self.pending or other in self._passing:
            return msg.model_copy(update={"id": other})
        return msg

    def _roots_agree(self, result: Any) -> bool:
        """The client's answer to the server's ``roots/list`` may reach the server: the rules set
        no roots, the client lists none, or exactly the rules' roots.  Otherwise a server such
        as the reference filesystem server would replace its folders with the client's, and
        resolve a relative path under another root than the one the rules decided it under."""
        if not self.rules.roots:
            return True
        roots = result.get("roots") if isinstance(result, dict) else None
        if not isinstance(roots, list) or not roots:
            return True
        same = os.path.realpath if self.on_disk else posixpath.normpath
        given = []
        for r in roots:
            uri = r.get("uri") if isinstance(r, dict) else None
            if not isinstance(uri, str):
                given.append(repr(r))
            else:
                given.append(same(unquote(urlsplit(uri).path) if uri[:5].lower() == "file:" else uri))
        if given == [same(r) for r in self.rules.roots]:
            return True
        _say(f"the client's MCP roots are not the rules' roots ({', '.join(given)}): not passed on; the server "
             "keeps its own folders (the door decides paths under " + ", ".join(self.rules.roots) + ")")
        return False

    def _in_flight(self, rid) -> bool:
        """A request with this id is waiting for the server's answer (or the user's)."""
        return rid in self.pending or rid in self._passing or rid in self._asking

    def _abandon(self, reason: str) -> list:
        """Log every call still waiting with ``reason``; return their ids."""
        if self._init_answered is not None:  # no answer is coming: nothing more to wait for
            self._init_answered.set()
        ids = []
        for rid, call in list(self.pending.items()):
            self._write(self._record(call, error=reason))
            ids.append(rid)
        self.pending.clear()
        for rid, call in list(self._asking.items()):  # a question no one will answer now: refused
            d = call.decision
            call.decision = Decision("deny", d.rule, d.object, d.objects)
            call.extra["approval"] = "timed_out"
            self._write(self._record(call, error=f"no answer to the rule's question: {reason}"))
            ids.append(rid)
        self._asking.clear()
        return ids

    async def serve(self, peer: ClientPeer, server_read, server_write) -> str:
        """Relay until the client or the server hangs up.

        Returns:
            ``client`` or ``server``: who ended the session.
        """
        ended = "client"
        try:
            await self._relay(peer, server_read, server_write)
        except _ServerEnded:
            ended = "server"
        finally:
            self._say_undecodable(None)
            if self.stopped_by is not None:  # a signal cancelled the relay: no call goes unlogged
                self._wind_down(f"the door was stopped ({self.stopped_by}) before the answer")
        # (another error, such as a remote server that cannot be reached, is the caller's to log)
        self._wind_down("the client closed the connection before the answer")
        return ended

    def _wind_down(self, reason: str) -> None:
        """Log every call still waiting with ``reason``, then every line held back."""
        self._abandon(reason)
        self._write_held()
        self._unwritten()

    async def _relay(self, peer: ClientPeer, server_read, server_write) -> None:
        """Relay until the client or the server hangs up (raises :class:`_ServerEnded` for the server)."""
        server_ended = False
        async with anyio.create_task_group() as tg:
            self._tg = tg

            async def from_server() -> None:
                nonlocal server_ended
                try:
                    await self._from_server(peer, server_read)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                    pass
                server_ended = True
                # every call still waiting is logged; it and every request passed through (initialize,
                # tools/list …) is answered, so the client is told why rather than left with a closed pipe
                passing = list(self._passing)
                self._passing.clear()
                self._init_ids.difference_update(passing)
                for rid in [*self._abandon("the upstream MCP server closed the connection before answering"),
                            *passing]:
                    await self._safe_send(peer, types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(
                        code=types.INTERNAL_ERROR, message="the upstream MCP server exited before answering")))
                tg.cancel_scope.cancel()

            tg.start_soon(from_server)
            if self.call_timeout_s is not None:
                tg.start_soon(self._expire_calls, peer, server_write)
            try:
                await self._from_client(peer, server_write)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass  # the server side is gone; from_server winds down
            else:
                with anyio.move_on_after(self.grace_s):
                    while self.pending:
                        await anyio.sleep(0.01)
                tg.cancel_scope.cancel()
        if server_ended:
            raise _ServerEnded


def _broken_answer(exc: Exception) -> types.JSONRPCError | None:
    """The error the client gets for a server answer the SDK's stdio transport could not read as
    JSON-RPC (``mcp.client.stdio._parse_line`` hands over the pydantic ``ValidationError``), or
    ``None`` when ``exc`` is not such an answer.

    An answer is a top-level object with no ``method``: pydantic reports that as a ``missing``
    error at ``("JSONRPCRequest", "method")`` whose ``input`` is the whole object, so the id is
    read from that object only (never from a nested one), and only when it is an integer or a
    string, as JSON-RPC ids are (``3.0`` or ``true`` would compare equal to another request's
    id).  A line that is not JSON at all names no id anyone can trust: ``None``.  The error is the
    one the SDK's Streamable HTTP transport gives for an answer it cannot parse
    (:data:`~mcp_types.PARSE_ERROR`), so a call is logged the same way over either transport."""
    errors = getattr(exc, "errors", None)
    try:
        found = errors() if callable(errors) else []
    except Exception:  # noqa: BLE001 - not a pydantic error after all
        return None
    top = next((e.get("input") for e in found if e.get("type") == "missing"
                and tuple(e.get("loc", ())) == ("JSONRPCRequest", "method")), None)
    if not isinstance(top, dict) or "method" in top or type(top.get("id")) not in (int, str):
        return None
    member = "JSONRPCError" if "error" in top else "JSONRPCResponse"
    why = next((f"{'.'.join(map(str, e['loc'][1:])) or 'message'}: {e.get('msg', '')}" for e in found
                if tuple(e.get("loc", ()))[:1] == (member,)), "not a JSON-RPC answer")
    return types.JSONRPCError(jsonrpc="2.0", id=top["id"], error=types.ErrorData(
        code=types.PARSE_ERROR, message=safe_str(f"the upstream MCP server's answer is not valid JSON-RPC "
                                                 f"({why})")[:500]))


class _ServerEnded(Exception):
    """The upstream server hung up first (internal to :meth:`Door.serve`)."""


#: Signals that stop the door cleanly: calls in flight are logged, the server is shut down.
STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")


async def _serve_until_stopped(door: Door, peer: ClientPeer, server_read, server_write) -> str:
    """:meth:`Door.serve`, stopped cleanly by any of :data:`STOP_SIGNALS` (under
    :func:`_stop_signals`): each call still waiting is logged as not answered (``the door was
    stopped (SIGTERM) before the answer``) and the caller's transport then shuts the server
    down, instead of the process dying with calls unlogged and a server left running.  Returns
    ``client``, ``server`` or the signal's name."""
    ended = None
    with anyio.CancelScope() as scope:
        door._stop_scope = scope
        if door.stopped_by is not None:  # (a signal came before the relay started)
            scope.cancel()
        ended = await door.serve(peer, server_read, server_write)
    door._stop_scope = None
    # (a relay that came to its end as the signal arrived was still stopped by it)
    return door.stopped_by if door.stopped_by is not None else ended


@contextlib.contextmanager
def _stop_signals(door: Door):
    """While inside, the first of :data:`STOP_SIGNALS` stops ``door`` (its relay is cancelled and
    winds down); a later one is ignored until the door has logged its calls — a second Ctrl-C
    must not cut the wind-down short — and then cancels the scope this yields, which the caller
    wraps around its transport (a remote server that never answers the session's closing DELETE
    would otherwise hold the door for the HTTP client's read timeout).  Outside the main thread,
    or without an asyncio loop, no handler is set (the scope is still yielded).

    A signal ignored when the door starts (``nohup`` ignores SIGHUP, a shell's background job
    SIGINT) stays ignored, as Python itself leaves an ignored SIGINT.  On the way out each
    handler found on the way in is set again (asyncio's own removal would leave the default) —
    for a handler set on the running loop (``loop.add_signal_handler``), on that loop — so a
    program that runs the door keeps its handlers."""
    import asyncio
    import signal
    import threading

    installed: list[tuple[int, Any, Any]] = []  # (signal, the handler before the door's, the loop's before it)
    loop = None
    outer = anyio.CancelScope()  # the transport: cancelled by a later signal once every call is logged
    if threading.current_thread() is threading.main_thread():
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None

    def on_signal(signum: int) -> None:
        if door.stopped_by is None:
            door.stopped_by = signal.Signals(signum).name
            if door._stop_scope is not None:
                door._stop_scope.cancel()
        elif door._stop_scope is None:  # the calls are logged: only the transport's shutdown is left
            outer.cancel()

    try:
        if loop is not None:
            for name in STOP_SIGNALS:
                sig = getattr(signal, name)
                try:
                    before = signal.getsignal(sig)
                    if before == signal.SIG_IGN:  # ignored by whoever started the door: not a stop
                        continue
                    # a handler the program set on this loop (loop.add_signal_handler): asyncio
                    # keeps it on the loop, behind a Python-level handler that only wakes the loop
                    loops = getattr(loop, "_signal_handlers", None)
                    own = loops.get(sig) if isinstance(loops, dict) else None
                    loop.add_signal_handler(sig, on_signal, sig)
                except (NotImplementedError, RuntimeError, ValueError):
                    continue
                installed.append((sig, before, own))
        yield outer
    finally:
        for sig, before, own in installed:
            try:
                loop.remove_signal_handler(sig)
            except (RuntimeError, ValueError):  # (a loop already closed)
                pass
            if own is not None:  # the loop's own handler again (setting asyncio's alone would do nothing)
                try:
                    loop.add_signal_handler(sig, own._callback, *own._args)
                    continue
                except (AttributeError, NotImplementedError, RuntimeError, TypeError, ValueError):
                    before = None  # (cannot: the default, as asyncio leaves it, rather than a signal that does nothing)
            if before is not None:  # (None: a handler not set from Python, which cannot be set again)
                try:
                    signal.signal(sig, before)
                except (TypeError, ValueError, OSError):
                    pass


class _OneLine(logging.Formatter):
    """A log record of the MCP SDK as one line on stderr: ``replaybook door: MCP SDK: <message>``,
    and for an exception only its type and first line, never a Python traceback."""

    def format(self, record: logging.LogRecord) -> str:
        text = safe_str(record.getMessage())
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None:
            first = safe_str(str(exc)).strip().splitlines()
            text += f" ({type(exc).__name__}{': ' + first[0][:300] if first else ''})"
        return f"replaybook door: MCP SDK: {text}"


@contextlib.contextmanager
def _sdk_log_lines():
    """While inside, what the MCP SDK logs (``mcp.*`` loggers, warnings and up: a server line it
    cannot read, a failed session end …) goes to stderr as single lines (:class:`_OneLine`)
    instead of through Python's last-resort handler, which printed a traceback for every answer
    a server got wrong — the door says what it did about such an answer itself."""
    sdk = logging.getLogger("mcp")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine())
    handler.setLevel(logging.WARNING)
    saved = sdk.propagate
    sdk.addHandler(handler)
    sdk.propagate = False
    try:
        yield
    finally:
        sdk.removeHandler(handler)
        sdk.propagate = saved


def _session_message(msg: types.JSONRPCMessage):
    from mcp.shared.message import SessionMessage

    return SessionMessage(msg)


async def run_door(rules: Rules, log: CallLog, command: list[str], *, evidence=None, server_name: str | None = None,
                   cwd: str | Path | None = None, max_message_bytes: int = 16 << 20, grace_s: float = 5.0,
                   call_timeout_s: float | None = None) -> str:
    """Start ``command`` as the upstream MCP server and relay this process's stdio to it.
    ``call_timeout_s``: how long a call waits for the server's answer (:class:`Door`; ``None``: no bound).

    Returns:
        who ended the session: ``client``, ``server``, or the name of the signal that stopped
        the door (:data:`STOP_SIGNALS`; calls still waiting are logged as not answered).

    Raises:
        OSError: the server could not be started.
    """
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from ._stdio import StdioPeer

    params = StdioServerParameters(command=command[0], args=list(command[1:]), env=dict(os.environ), cwd=cwd,
                                   encoding_error_handler="replace")
    params, counted = _counting_replacements(params)
    door = Door(rules, log, evidence=evidence, server_name=server_name,
                default_server=Path(command[0]).name, grace_s=grace_s, call_timeout_s=call_timeout_s)
    door.on_disk = True
    if counted:
        door.server_undecodable = lambda: _Undecodable.bytes
        door._undecodable_said = _Undecodable.bytes
    ended = None
    async with StdioPeer(max_line=max_message_bytes) as peer:
        with _sdk_log_lines(), _stop_signals(door) as outer, outer:
            async with stdio_client(params, errlog=sys.stderr) as (server_read, server_write):
                ended = await _serve_until_stopped(door, peer, server_read, server_write)
    return ended if ended is not None else (door.stopped_by or "client")


async def run_door_url(rules: Rules, log: CallLog, url: str, *, headers: dict[str, str] | None = None,
                       evidence=None, server_name: str | None = None, max_message_bytes: int = 16 << 20,
                       grace_s: float = 5.0, call_timeout_s: float | None = None) -> str:
    """Relay this process's stdio to the remote MCP server at ``url`` over Streamable HTTP (MCP
    2025-03-26 and later; the SDK's client transport: ``Mcp-Session-Id``, SSE answers, redirects
    only within the endpoint's origin).  ``headers`` (e.g. ``Authorization``) go with every
    request and are never logged.  Before the server names itself, calls are logged with the
    URL's host as ``server``.  ``call_timeout_s``: as for :func:`run_door`.

    Returns:
        who ended the session: ``client``, ``server``, or the name of the signal that stopped
        the door (:data:`STOP_SIGNALS`).
    """
    from urllib.parse import urlsplit

    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    from ._stdio import StdioPeer

    door = Door(rules, log, evidence=evidence, server_name=server_name,
                default_server=urlsplit(url).hostname or "remote", grace_s=grace_s,
                call_timeout_s=call_timeout_s)
    door.hold_until_initialized = True
    shown = shown_url(url)
    async def refused_by_http(response) -> None:
        # the SDK answers the request with a bare "Server returned an error response": say why here
        if response.status_code >= 400:
            hint = " (check --header, e.g. Authorization)" if response.status_code in (401, 403) else ""
            print(f"replaybook door: {shown} answered HTTP {response.status_code} {response.reason_phrase}{hint}",
                  file=sys.stderr)

    # the SDK's own timeouts: 30 s to connect or write, 300 s to read (an answer may stream)
    client = httpx2.AsyncClient(headers=headers or {}, timeout=httpx2.Timeout(30.0, read=300.0),
                                event_hooks={"response": [refused_by_http]})
    ended = None
    async with StdioPeer(max_line=max_message_bytes) as peer, client:
        try:
            with _sdk_log_lines(), _stop_signals(door) as outer, outer:
                async with streamable_http_client(url, http_client=client) as (server_read, server_write):
                    ended = await _serve_until_stopped(door, peer, server_read, server_write)
                    # every call is logged: the session's end (its DELETE, the streams) gets
                    # the grace period, not the HTTP read timeout of a server that answers nothing
                    outer.deadline = min(outer.deadline, anyio.current_time() + max(grace_s, 1.0))
        except BaseExceptionGroup as group:
            lost, rest = group.split(httpx2.HTTPError)  # cannot connect, TLS, a timeout, a dropped stream
            if lost is None:
                raise
            first = lost
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            said = str(first)
            for v in (headers or {}).values():  # a header value never reaches a log, the agent or stderr
                if v:
                    said = said.replace(v, "[header value]").replace(repr(v.encode())[2:-1], "[header value]")
            reason = f"cannot reach the MCP server at {shown}: {said}"
            # logged, then answered: no call is left hanging — and an initialize still open (the
            # server was never reached) gets the reason too, instead of a closed connection
            for rid in [*door._abandon(reason), *door._init_ids]:
                await door._safe_send(peer, types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(
                    code=types.INTERNAL_ERROR, message=reason)))
            if door.stopped_by is not None:  # stopped by a signal: the connection failed on the way down
                _say(reason)
                return door.stopped_by
            raise UpstreamUnreachable(reason) from None
    return ended if ended is not None else (door.stopped_by or "client")


def shown_url(url: str) -> str:
    """``url`` as the door may print and log it: scheme, host, port and path only — user
    information and the query (where some servers take an API key) are left out.

    A port that is no valid port (above 65535, say) is kept as written when it is all digits, so
    that a message about it shows it, and is shown as ``…`` otherwise.  Raises ``ValueError`` (from
    ``urlsplit``) for a URL that cannot be taken apart, e.g. a ``[`` without its ``]``."""
    from urllib.parse import urlsplit, urlunsplit

    u = urlsplit(url)
    host = u.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    try:
        port = u.port
    except ValueError:  # not a number, or above 65535: as written (after the host, and any "]")
        written = u.netloc.rpartition("@")[2].rpartition("]")[2].partition(":")[2]
        port = written if written.isascii() and written.isdigit() else "…"
    return urlunsplit((u.scheme, host + (f":{port}" if port is not None else ""), u.path, "", ""))


class UpstreamUnreachable(OSError):
    """The remote MCP server could not be reached, or the connection to it failed (an ``OSError``:
    the CLI reports it as bad input, exit 2).  Calls in flight were logged and answered first."""
