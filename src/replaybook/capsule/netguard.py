"""Block network access while a forensic replay runs.

:func:`block_network` patches, for the duration of a ``with`` block, the Python-level entry
points to the network — ``socket.socket.connect``, ``socket.socket.connect_ex``,
``socket.socket.sendto``, ``socket.create_connection`` and ``socket.getaddrinfo`` — so an
attempt is reported to a callback and refused with :class:`NetworkBlocked` (it never reaches the
network).  Unix-domain sockets stay allowed (local IPC is not network).  :func:`allow_network`
opens the seal inside the block for an explicitly permitted, recorded fallback.

Limits: the patch is process-wide while active (do not run other network code in other threads
meanwhile), and code that captured ``socket.getaddrinfo`` before the block, or talks to the
network from C extensions, is not intercepted.
"""

from __future__ import annotations

import contextvars
import socket
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

from .errors import NetworkBlocked

__all__ = ["block_network", "allow_network", "network_blocked"]

_lock = threading.RLock()
_depth = 0
_originals: dict[str, object] = {}
_handler: contextvars.ContextVar[Callable[[str, str], None] | None] = contextvars.ContextVar(
    "replaybook_net_handler", default=None)
_allowed: contextvars.ContextVar[bool] = contextvars.ContextVar("replaybook_net_allowed", default=False)

_INET = (socket.AF_INET, getattr(socket, "AF_INET6", socket.AF_INET))


def network_blocked() -> bool:
    """True inside :func:`block_network` and outside :func:`allow_network`."""
    return _depth > 0 and not _allowed.get()


def _refuse(api: str, address: object) -> None:
    addr = _fmt(address)
    cb = _handler.get()
    if cb is not None:
        cb(api, addr)
    raise NetworkBlocked(f"network access blocked during forensic replay: {api}({addr})", api=api, address=addr)


def _fmt(address: object) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        return f"{address[0]}:{address[1]}"
    return str(address)


def _install() -> None:
    _originals.update(connect=socket.socket.connect, connect_ex=socket.socket.connect_ex,
                      sendto=socket.socket.sendto, create_connection=socket.create_connection,
                      getaddrinfo=socket.getaddrinfo)

    def connect(self, address):
        if self.family in _INET and network_blocked():
            _refuse("socket.connect", address)
        return _originals["connect"](self, address)

    def connect_ex(self, address):
        if self.family in _INET and network_blocked():
            _refuse("socket.connect_ex", address)
        return _originals["connect_ex"](self, address)

    def sendto(self, data, *args):
        if self.family in _INET and network_blocked():
            _refuse("socket.sendto", args[-1] if args else "?")
        return _originals["sendto"](self, data, *args)

    def create_connection(address, *args, **kwargs):
        if network_blocked():
            _refuse("socket.create_connection", address)
        return _originals["create_connection"](address, *args, **kwargs)

    def getaddrinfo(host, port, *args, **kwargs):
        if network_blocked():
            _refuse("socket.getaddrinfo", (host, port))
        return _originals["getaddrinfo"](host, port, *args, **kwargs)

    socket.socket.connect = connect
    socket.socket.connect_ex = connect_ex
    socket.socket.sendto = sendto
    socket.create_connection = create_connection
    socket.getaddrinfo = getaddrinfo


def _uninstall() -> None:
    socket.socket.connect = _originals["connect"]
    socket.socket.connect_ex = _originals["connect_ex"]
    socket.socket.sendto = _originals["sendto"]
    socket.create_connection = _originals["create_connection"]
    socket.getaddrinfo = _originals["getaddrinfo"]
    _originals.clear()


@contextmanager
def block_network(on_attempt: Callable[[str, str], None] | None = None) -> Iterator[None]:
    """Refuse network access inside the block.

    Args:
        on_attempt: called with ``(api, address)`` for every attempt, before
            :class:`NetworkBlocked` is raised in the caller.

    Nested blocks are allowed; the innermost callback is used.
    """
    global _depth
    with _lock:
        if _depth == 0:
            _install()
        _depth += 1
    token = _handler.set(on_attempt)
    allowed = _allowed.set(False)
    try:
        yield
    finally:
        _allowed.reset(allowed)
        _handler.reset(token)
        with _lock:
            _depth -= 1
            if _depth == 0:
                _uninstall()


@contextmanager
def allow_network() -> Iterator[None]:
    """Let network calls through inside a :func:`block_network` block (for a recorded fallback)."""
    token = _allowed.set(True)
    try:
        yield
    finally:
        _allowed.reset(token)
