"""The door's client-facing stdio transport: newline-delimited JSON-RPC on stdin/stdout.

Messages are parsed and written with the MCP SDK's own JSON-RPC models
(``mcp_types.jsonrpc_message_adapter``, ``model_dump_json(by_alias=True, exclude_unset=True)``),
exactly as ``mcp.server.stdio.stdio_server`` does.  The door reads the bytes itself instead of
using ``stdio_server`` because it must, for hostile input:

* see the raw bytes, to refuse a request that is not valid UTF-8 (the SDK silently replaces
  them) while still answering its id;
* bound a line's size (``max_line``): an over-long line is discarded as it streams in, never
  held in memory, and answered with an error;
* stop reading when the upstream server dies (a thread blocked on ``readline`` cannot be
  cancelled; a non-blocking pipe can).

While the transport is open, fd 0 points at ``/dev/null`` and fd 1 at stderr, so nothing else in
the process (or a child it starts) can write stray bytes into the protocol stream.
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
from dataclasses import dataclass

import mcp_types as types
import orjson

from .. import _json

__all__ = ["Incoming", "StdioPeer"]

_ID_RE = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,256}")')
_METHOD_RE = re.compile(rb'"method"\s*:\s*"((?:[^"\\]|\\.){1,256})"')


@dataclass
class Incoming:
    """One line from the client.

    Attributes:
        message: the parsed JSON-RPC message, or ``None`` when the line is not one.
        error: why the line is not a message (``None`` when it is).
        size: the line's size in bytes.
        bad_utf8: the line held bytes that are not valid UTF-8 (decoded with U+FFFD).
        id_hint: the request id recovered from an unparseable line, if any.
        method_hint: the method recovered from an unparseable line, if any.
        too_large: the line was longer than the transport's limit (discarded unread).
        json_ok: the line is JSON (but not a JSON-RPC message), as opposed to not JSON at all.
        depth: how deeply the line nests (set when it is JSON but not a message).
        meta_hint: the line's ``params._meta`` (an object), when it is JSON but not a message.
        tool_hint, arguments_hint: a ``tools/call`` line's tool name and arguments, when the line
            is JSON but not a message (so a refusal can log what was asked); for a line that cannot
            be parsed (too long, nested past every reader, not JSON) the tool name alone, when its
            first :data:`HEAD_BYTES` give ``params.name``.
        has_id: a message read as a notification has an ``id`` member (of a type JSON-RPC does
            not allow for requests: null, a fraction, a boolean …).
        raw: the line's bytes, for a message (so a refusal can log numbers the SDK read as
            infinity as they were written).
        lone_surrogate: the line is JSON but a string holds a lone surrogate escape (refused as
            text that is not valid Unicode, ``door:invalid-utf8``).
    """

    message: types.JSONRPCMessage | None
    error: str | None = None
    size: int = 0
    bad_utf8: bool = False
    id_hint: int | str | None = None
    method_hint: str | None = None
    too_large: bool = False
    json_ok: bool = False
    depth: int = 0
    tool_hint: str | None = None
    arguments_hint: object = None
    meta_hint: dict | None = None
    has_id: bool = False
    raw: bytes | None = None
    lone_surrogate: bool = False


#: Nesting the MCP SDK's JSON reader (pydantic-core) takes: a message nested deeper is refused.
SDK_MAX_DEPTH = 200
#: Nesting orjson reads (the door reads a refused line with it to log what it asked for).
_MAX_READ_DEPTH = 1024
#: How many of a line's first bytes are read for its tool name when it cannot be parsed.
HEAD_BYTES = 4096


def _head_string(head: bytes, path: tuple[str, ...]) -> str | None:
    """The text value at ``path`` (member names from the top-level object down, e.g.
    ``("params", "name")``) of a JSON line of which ``head`` is the first bytes — read without
    parsing the whole line (it may be too long, or nested too deep, to parse): one pass over
    ``head`` that follows the nesting, so a ``"name"`` nested in the arguments is never taken for
    the tool's.  ``None`` when ``head`` ends before the value, the value is not text, or the
    member is given twice within ``head`` (which of them a reader takes is not sure)."""
    stack: list[list] = []  # per open container: [is_object, its current member name]
    found: list[str] = []
    i, n = 0, len(head)
    while i < n:
        c = head[i]
        if c == 0x22:  # a string: a member name or a value
            j = i + 1
            while j < n and head[j] != 0x22:
                j += 2 if head[j] == 0x5C else 1
            if j >= n:
                break  # cut off at the head's end
            k = j + 1
            while k < n and head[k] in b" \t\r\n":
                k += 1
            in_object = bool(stack) and stack[-1][0]
            if in_object and k < n and head[k] == 0x3A:  # a member name
                depth = len(stack)
                if depth <= len(path):  # (only names on the way to the value are read)
                    try:
                        stack[-1][1] = orjson.loads(head[i:j + 1])
                    except orjson.JSONDecodeError:
                        return None
                else:
                    stack[-1][1] = None
                i = k + 1
                continue
            if in_object and len(stack) == len(path) and all(e[0] and e[1] == p for e, p in zip(stack, path)):
                try:
                    v = orjson.loads(head[i:j + 1])
                except orjson.JSONDecodeError:
                    return None
                found.append(v)
            i = j + 1
            continue
        if c in b"{[":
            stack.append([c == 0x7B, None])
        elif c in b"}]":
            if not stack:
                return None
            stack.pop()
            if not stack:
                break  # the top-level value ended
        i += 1
    return found[0] if len(found) == 1 and isinstance(found[0], str) and found[0] else None


def _hints_tool(head: bytes) -> str | None:
    """The tool name (``params.name``) of a ``tools/call`` line the door cannot parse (too long,
    nested too deep, not JSON), from its first bytes (:func:`_head_string`), when at most 256
    characters; ``None`` otherwise."""
    name = _head_string(head, ("params", "name"))
    return name if name is not None and len(name) <= 256 else None


def _depth(v: object) -> int:
    """Levels of nesting of a parsed JSON value (a scalar is 0), without recursion."""
    deepest = 0
    stack = [(v, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, dict):
            deepest = max(deepest, d)
            stack.extend((y, d + 1) for y in x.values())
        elif isinstance(x, list):
            deepest = max(deepest, d)
            stack.extend((y, d + 1) for y in x)
    return deepest


def _top_level_strings(buf: bytes, *, from_end: bool) -> set[int]:
    """Offsets in ``buf`` of the opening quotes of the strings directly inside the top-level
    JSON object (its keys, and values that are strings).  ``buf`` is the first bytes of a line
    (``from_end`` false) or its last bytes (true): read from that edge, where the nesting is
    known, whatever lies beyond the other edge."""
    out: set[int] = set()
    depth, in_str = 0, False
    if not from_end:
        esc = False
        for i, c in enumerate(buf):
            if in_str:
                if esc:
                    esc = False
                elif c == 0x5C:  # backslash
                    esc = True
                elif c == 0x22:
                    in_str = False
            elif c == 0x22:
                in_str = True
                if depth == 1:
                    out.add(i)
            elif c in b"{[":
                depth += 1
            elif c in b"}]":
                depth -= 1
        return out
    for i in range(len(buf) - 1, -1, -1):
        c = buf[i]
        if c == 0x22:
            n = 0  # backslashes right before it: an odd number escapes it (within a string)
            while i - 1 - n >= 0 and buf[i - 1 - n] == 0x5C:
                n += 1
            if n % 2 == 0:
                if in_str and depth == 1:
                    out.add(i)
                in_str = not in_str
        elif not in_str:
            if c in b"}]":
                depth += 1
            elif c in b"{[":
                depth -= 1
    return out


def _top_level_match(pattern: re.Pattern, head: bytes, tail: bytes):
    """The first match of ``pattern`` (``"key": value``) whose key is a member of the line's
    top-level object — never one nested in ``params`` (a tool's argument named ``id``) — in
    the line's first bytes ``head``, else in its last bytes ``tail`` (where a client that
    writes ``id`` after ``params``, as the TypeScript MCP SDK does, puts it)."""
    for buf, from_end in ((head, False), (tail, True)):
        if not buf:
            continue
        if from_end:
            buf = buf.rstrip()
            if not buf.endswith(b"}"):  # (a line cut short: its nesting cannot be read from its end)
                continue
        keys = _top_level_strings(buf, from_end=from_end)
        for m in pattern.finditer(buf):
            if m.start() in keys:
                return m
    return None


def _hints(head: bytes, tail: bytes = b"") -> tuple[int | str | None, str | None]:
    """``(id, method)`` of a line that cannot be read as a message, from its first bytes
    ``head`` and its last bytes ``tail``: members of its top-level object only."""
    rid = None
    m = _top_level_match(_ID_RE, head, tail)
    if m:
        try:
            rid = orjson.loads(m.group(1))
        except orjson.JSONDecodeError:
            rid = None
    mm = _top_level_match(_METHOD_RE, head, tail)
    method = mm.group(1).decode("utf-8", "replace") if mm else None
    return rid, method


def _pollable(fd: int) -> bool:
    """``fd`` is a pipe, a socket or a terminal: what the event loop can wait on.  epoll refuses
    regular files and other character devices (``/dev/null``: a door started by cron or with
    ``stdin=DEVNULL``), and asyncio reports that only in a callback, after which the door would
    wait for input forever."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


def _request_hints(o: object, depth: int, *, safe: bool) -> tuple:
    """``(id, method, tool, arguments, meta)`` that a line the door refuses names, read from its
    parsed JSON ``o`` (each ``None`` where it names none), so the refusal is answered to its id and
    logged with what it asked for — and with its ``params._meta`` (an object), which carries the
    client's tool-use id the join links the call by.  ``safe``: the line held lone surrogates —
    the id is kept only when it is text as written (else the answer's id is null, as JSON-RPC
    says), the names are made safe, and arguments (and a ``_meta``) nested as deep as the SDK
    refuses are left out."""
    from .._text import deep_safe, safe_str

    if not isinstance(o, dict):
        return None, None, None, None, None
    v = o.get("id")
    rid = v if isinstance(v, (int, str)) and not isinstance(v, bool) else None
    if safe and isinstance(rid, str) and safe_str(rid) != rid:
        rid = None
    method = o.get("method") if isinstance(o.get("method"), str) else None
    params = o.get("params")
    tool = args = meta = None
    if isinstance(params, dict) and isinstance(params.get("_meta"), dict):
        meta = params["_meta"]
    if method == "tools/call" and isinstance(params, dict):
        tool = params.get("name") if isinstance(params.get("name"), str) else None
        args = params.get("arguments")
    if safe:
        method, tool = (safe_str(x) if x is not None else None for x in (method, tool))
        try:
            args = deep_safe(args) if depth < SDK_MAX_DEPTH else None
        except RecursionError:
            args = None
        try:
            meta = deep_safe(meta) if depth < SDK_MAX_DEPTH else None
        except RecursionError:
            meta = None
    return rid, method, tool, args, meta


def _lone_surrogates(text: str, size: int, bad: bool) -> Incoming | None:
    """A line that is JSON but for a lone surrogate escape (``"\\ud800"``: no Unicode text, which
    the SDK and orjson refuse): refused as text that is not valid Unicode, like bytes that are not
    UTF-8, with what it asked for (:func:`_request_hints`, made safe); ``None`` when it is not
    JSON after all."""
    try:
        o = _json.loads_lenient(text)
    except (ValueError, RecursionError):
        return None
    depth = _depth(o)
    rid, method, tool, args, meta = _request_hints(o, depth, safe=True)
    return Incoming(None, "a string holds a lone surrogate escape (\\ud800 …): not Unicode text",
                    size, bad, rid, method, json_ok=True, depth=depth, tool_hint=tool, arguments_hint=args,
                    meta_hint=meta,
                    lone_surrogate=True)


def _parse(raw: bytes) -> Incoming:
    bad = False
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        bad = True
        text = raw.decode("utf-8", "replace")
    try:
        msg = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError as exc:
        rid, method, json_ok = None, None, False
        depth, tool, args, meta = 0, None, None, None
        try:
            o = _json.loads(text if bad else raw)  # (bytes that are not UTF-8: read as the SDK read them)
            json_ok = True
            if isinstance(o, dict):
                depth = _depth(o)
                rid, method, tool, args, meta = _request_hints(o, depth, safe=False)
        except orjson.JSONDecodeError as refused:
            rid, method = _hints(raw[:HEAD_BYTES], raw[-HEAD_BYTES:] if len(raw) > HEAD_BYTES else b"")
            tool = _hints_tool(raw[:HEAD_BYTES]) if method == "tools/call" else None
            if str(refused).startswith("depth limit exceeded"):  # (orjson's words past 1,024 levels)
                json_ok, depth = True, _MAX_READ_DEPTH + 1
            elif "surrogate in string" in str(refused):  # (orjson's words for a lone surrogate escape)
                lone = _lone_surrogates(text, len(raw), bad)
                if lone is not None:
                    return lone
        first = str(exc).strip().splitlines()
        why = "invalid JSON" if not json_ok else (first[0] if first else type(exc).__name__)
        if depth > _MAX_READ_DEPTH:
            why = (f"nested more than {_MAX_READ_DEPTH:,} levels deep, deeper than any JSON reader here takes "
                   f"(the MCP SDK reads about {SDK_MAX_DEPTH})")
        elif depth >= SDK_MAX_DEPTH:
            why = f"nested {depth} levels deep, deeper than the MCP SDK reads (about {SDK_MAX_DEPTH})"
        return Incoming(None, why[:300], len(raw), bad, rid, method, json_ok=json_ok, depth=depth,
                        tool_hint=tool, arguments_hint=args, meta_hint=meta)
    if isinstance(msg, types.JSONRPCNotification) and b'"id"' in raw:
        # a request whose id JSON-RPC does not allow (null, 7.0, true …) reads as a notification
        try:
            o = _json.loads(raw)
            rid_given = isinstance(o, dict) and "id" in o
        except orjson.JSONDecodeError:
            rid_given = True
        return Incoming(msg, None, len(raw), bad, has_id=rid_given, raw=raw)
    return Incoming(msg, None, len(raw), bad, raw=raw)


class StdioPeer:
    """The client side of the door, over this process's stdin and stdout.

    Args:
        max_line: longest line accepted, bytes; longer lines are discarded and reported.
    """

    def __init__(self, max_line: int = 16 << 20):
        self.max_line = max_line
        self._in_fd: int | None = None
        self._out_fd: int | None = None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._read_transport = None
        self._lines = None
        self._saved: list[tuple[int, int]] = []

    async def __aenter__(self) -> "StdioPeer":
        self._in_fd = os.dup(0)
        self._out_fd = os.dup(1)
        # divert fd 0/1 for the rest of the process: stray output goes to stderr
        for fd, target in ((0, os.open(os.devnull, os.O_RDONLY)), (1, os.dup(2))):
            saved = os.dup(fd)
            os.dup2(target, fd)
            os.close(target)
            self._saved.append((fd, saved))
        loop = asyncio.get_running_loop()
        try:
            if not _pollable(self._in_fd):
                raise ValueError("not a pipe, socket or terminal")
            reader = asyncio.StreamReader(limit=1 << 16)
            proto = asyncio.StreamReaderProtocol(reader)
            # closefd=False: when the fd is a regular file the transport refuses it, and the
            # discarded file object must not close the fd — its number would be reused by the
            # next open() (the call log) and replies would be written into it
            self._read_transport, _ = await loop.connect_read_pipe(
                lambda: proto, os.fdopen(self._in_fd, "rb", 0, closefd=False))
            self._reader = reader
        except (ValueError, OSError):
            self._reader = None  # a regular file or /dev/null: read it in a thread
        try:
            if not _pollable(self._out_fd):
                raise ValueError("not a pipe, socket or terminal")
            transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                                os.fdopen(self._out_fd, "wb", 0, closefd=False))
            self._writer = asyncio.StreamWriter(transport, protocol, None, loop)
        except (ValueError, OSError):
            self._writer = None
        self._lines = self._iter_lines()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Flush and close stdout, stop reading stdin, restore fd 0/1."""
        if self._writer is not None:
            try:
                await self._writer.drain()
                self._writer.close()
            except (ConnectionError, OSError, RuntimeError):
                pass
            self._writer = None
        if self._read_transport is not None:
            self._read_transport.close()
            self._read_transport = None
        for fd in (self._in_fd, self._out_fd):  # the transports never own them (closefd=False)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._in_fd = self._out_fd = None
        for fd, saved in reversed(self._saved):
            try:
                os.dup2(saved, fd)
                os.close(saved)
            except OSError:
                pass
        self._saved.clear()

    async def _read_chunk(self) -> bytes:
        if self._reader is not None:
            return await self._reader.read(1 << 16)
        import anyio.to_thread

        return await anyio.to_thread.run_sync(os.read, self._in_fd, 1 << 16)

    def _over_long(self, size: int, head: bytes, tail: bytes) -> Incoming:
        """A line longer than :attr:`max_line` (discarded unread but for its first and last
        :data:`HEAD_BYTES`): its id and method from its top-level members, and for a
        ``tools/call`` its tool's name from its first bytes, when they hold ``params.name``."""
        rid, method = _hints(head, tail)
        tool = _hints_tool(head) if method == "tools/call" else None
        return Incoming(None, f"message of {size} bytes exceeds the door's limit of {self.max_line}",
                        size, False, rid, method, True, tool_hint=tool)

    async def _iter_lines(self):
        buf = bytearray()
        discarding = 0  # > 0: bytes of an over-long line seen so far
        head = tail = b""  # an over-long line's first and last 4,096 bytes
        while True:
            chunk = await self._read_chunk()
            if not chunk:
                if discarding:
                    yield self._over_long(discarding, head, tail)
                elif buf.strip():
                    yield _parse(bytes(buf))
                return
            start = 0
            while True:
                i = chunk.find(b"\n", start)
                piece = chunk[start:] if i < 0 else chunk[start:i]
                if discarding:
                    discarding += len(piece)
                    tail = (tail + piece)[-HEAD_BYTES:]
                elif len(buf) + len(piece) > self.max_line:
                    head = bytes(buf[:HEAD_BYTES]) + piece[: max(0, HEAD_BYTES - len(buf))]
                    tail = (bytes(buf[-HEAD_BYTES:]) + piece)[-HEAD_BYTES:]
                    discarding = len(buf) + len(piece)
                    buf.clear()
                else:
                    buf += piece
                if i < 0:
                    break
                if discarding:
                    yield self._over_long(discarding, head, tail)
                    discarding, head, tail = 0, b"", b""
                elif buf.strip():
                    yield _parse(bytes(buf))
                buf.clear()
                start = i + 1

    async def receive(self) -> Incoming | None:
        """The next line from the client, or ``None`` at end of input."""
        try:
            return await self._lines.__anext__()
        except StopAsyncIteration:
            return None

    async def send(self, message: types.JSONRPCMessage) -> None:
        """Write one message as a line on stdout.

        Raises:
            ConnectionError: the client closed its end.
        """
        data = (message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode("utf-8", "replace")
        if self._writer is not None:
            self._writer.write(data)
            await self._writer.drain()
        else:
            view = memoryview(data)
            while view:
                n = os.write(self._out_fd, view)
                view = view[n:]
