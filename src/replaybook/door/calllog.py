"""The door's call log writer: one JSON line per call, flushed and fsync'd before the answer.

File layout (the door-call-log v1 format, ``replaybook/schemas/door-call-log.v1.json``, read by
:func:`replaybook.sources.door.load_door`)::

    <log-root>/<agent>/<session>.jsonl

Each line is written with a single ``write(2)`` on an ``O_APPEND`` descriptor and then
``fsync(2)``'d, so a door killed at any point leaves whole lines only (the loader also sets a
torn last line aside instead of failing).  A file that ends in a torn line (another process
died mid-line, a session id used again) gets a line break before the next line, so the torn
line stays one damaged line and the new line is whole.  While the door runs it holds an
exclusive ``flock`` on its file: ``replaybook prune`` skips locked files.  The file is opened
with ``O_NOFOLLOW`` (a symlink planted at the log path is refused), must be a regular file (a
FIFO would take the lines and then block the door), and is created on the first call.  When the file at the log path is removed or replaced while the door runs, the next line
goes to a new file created at the path (said on stderr), not into the removed one where no
one would find it.
"""

from __future__ import annotations

import fcntl
import os
import re
import secrets
import stat
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from .. import _json
from ..canonical import canonical_args
from ..errors import InputError

__all__ = ["CallLog", "rfc3339", "new_session_id", "check_name", "canonical_object", "NAME_RE", "META_CALL_ID_KEYS"]

#: ``meta`` keys holding a client's tool-use id, in the order the loader prefers them
#: (:func:`replaybook.sources.door.meta_call_id`); a ``_meta`` too large to log keeps these.
META_CALL_ID_KEYS = ("claudecode/toolUseId", "toolUseId", "tool_use_id", "call_id", "openai/callId")

#: Agent and session names: they become a folder and a file name.
NAME_RE = re.compile(r"^[A-Za-z0-9@_+=-][A-Za-z0-9@._+=-]{0,127}$")


def rfc3339(ns: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS.ffffffZ`` for a ``time.time_ns()`` value."""
    s, frac = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + f".{frac // 1000:06d}Z"


def new_session_id(ns: int | None = None) -> str:
    """A fresh door session id: ``door-20261013T120000Z-3f9a1c2b``."""
    ns = time.time_ns() if ns is None else ns
    return "door-" + time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(ns // 1_000_000_000)) + "-" + secrets.token_hex(4)


def check_name(value: str, what: str) -> str:
    """Return ``value`` if it is a safe agent/session name (no ``/``, no leading dot, ≤ 128 chars).

    Raises:
        InputError: it is not.
    """
    if not isinstance(value, str) or not NAME_RE.match(value):
        raise InputError(f"{what} {value!r} is not a safe name (letters, digits, @ . _ + = -; no leading dot; "
                         "at most 128 characters)")
    return value


def canonical_object(v: Any) -> Any:
    """``v`` in canonical form (sorted keys, NFC, integral floats as ints, no lone surrogates),
    as the log writes it: valid JSON, so a number beyond the double range stays a number, exact
    (``1E400``, a :class:`replaybook._json.NumberAsWritten`), and the ``NaN``/``Infinity``
    literals JSON does not have become the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``."""
    text = canonical_args(v)
    try:
        return _json.loads(text)
    except _json.JSONDecodeError:
        return _literals_as_strings(_json.loads_lenient(text))


def _literals_as_strings(v: Any) -> Any:
    if v.__class__ is _json.NumberAsWritten and v.text in ("NaN", "Infinity", "-Infinity"):
        return v.text
    if isinstance(v, dict):
        return {k: _literals_as_strings(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_literals_as_strings(x) for x in v]
    return v


class CallLog:
    """Appends door-call-log v1 lines to ``<root>/<agent>/<session>.jsonl``.

    Args:
        root: the log root.
        agent: the agent's name (a folder).
        session: the session id (the file's stem).
        fsync: ``fsync`` every line (default; turn off only for throw-away benchmarks).

    Raises:
        InputError: ``agent`` or ``session`` is not a safe name.
    """

    def __init__(self, root: str | Path, agent: str, session: str, *, fsync: bool = True):
        self.root = Path(root)
        self.agent = check_name(agent, "agent")
        self.session = check_name(session, "session")
        self.path = self.root / self.agent / f"{self.session}.jsonl"
        self.fsync = fsync
        self._fd: int | None = None
        self._seq = 0
        self.lines = 0
        self._file_lines = 0  # lines written to the file open now

    def __repr__(self) -> str:
        return f"CallLog({str(self.path)!r})"

    def next_seq(self) -> int:
        """The next 1-based call number of the session."""
        if self._fd is None and self._seq == 0 and self.path.is_file():
            self._seq = _last_seq(self.path)
        self._seq += 1
        return self._seq

    def _open(self) -> int:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # read as well as append (the last byte is read before each line, see write) where the
        # file lets the door read it; non-blocking until it is known to be a regular file: a FIFO
        # planted at the path would otherwise take the lines and then block the door for good
        base = os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            try:
                fd = os.open(self.path, os.O_RDWR | base, 0o640)
            except PermissionError:
                fd = os.open(self.path, os.O_WRONLY | base, 0o640)
        except OSError as exc:
            raise InputError(f"cannot open the door call log: {exc.strerror or exc}", self.path) from exc
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InputError("the door call log path is not a regular file (a FIFO, a device …): "
                                 "no line is written to it", self.path)
            os.set_blocking(fd, True)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except InputError:
            os.close(fd)
            raise
        except OSError:
            os.close(fd)
            raise InputError("another door is writing this session's log (it is locked)", self.path) from None
        self._file_lines = 0
        return fd

    def open(self) -> None:
        """Create (or open) the file and take its lock now, unless that is done already.

        Raises:
            InputError: the file cannot be opened, or another door holds its lock.
        """
        if self._fd is None:
            self._fd = self._open()

    def write(self, record: dict) -> None:
        """Append one record as a JSON line, then ``fsync``.  A line that fails part-way (a full
        disk, a file size limit) is cut off again, so the file holds whole lines only and the
        next line does not start inside it.

        Raises:
            OSError: the write or the fsync failed (the caller must not answer as if logged).
            InputError: the file cannot be opened (see :meth:`open`).
        """
        self.open()
        st = os.fstat(self._fd)
        if not self._at_path(st):
            self._reopen()
            st = os.fstat(self._fd)
        data = _json.dumps(record) + b"\n"
        start = st.st_size  # (the lock keeps other writers out: the line starts here)
        if start and self._last_byte(start) not in (b"\n", None):
            data = b"\n" + data  # the file ends in a torn line: it stays a line of its own
        view = memoryview(data)
        try:
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
            if self.fsync:
                os.fsync(self._fd)
        except OSError:
            try:
                os.ftruncate(self._fd, start)
            except OSError:
                pass
            raise
        self.lines += 1
        self._file_lines += 1

    def _last_byte(self, size: int) -> bytes | None:
        """The file's last byte, or ``None`` when the door may not read its own log (opened
        write-only): then no line break is added."""
        try:
            return os.pread(self._fd, 1, size - 1)
        except OSError:
            return None

    def _at_path(self, st: os.stat_result) -> bool:
        """The open file is still the one at :attr:`path` (when the path cannot be looked at for
        another reason than its absence — a folder made unreadable —, the door goes on writing
        to the file it has)."""
        try:
            at = os.stat(self.path, follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError:
            return True
        return (at.st_dev, at.st_ino) == (st.st_dev, st.st_ino)

    def _reopen(self) -> None:
        """The file was removed or replaced under the door: go on in a new one at the path (the
        old one is kept open until the new one is)."""
        try:
            print(f"replaybook door: the call log {self.path} was removed or replaced while the door ran "
                  f"(it held {self._file_lines} line(s) this door wrote, no longer at that path): later lines "
                  "go to a new file at that path", file=sys.stderr)
        except (OSError, ValueError):
            pass
        fd = self._open()
        old, self._fd = self._fd, fd
        if old is not None:
            try:
                os.close(old)
            except OSError:
                pass

    def close(self) -> None:
        """Release the lock and close the file (idempotent)."""
        if self._fd is not None:
            try:
                os.close(self._fd)
            finally:
                self._fd = None

    def __enter__(self) -> "CallLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _last_seq(path: Path) -> int:
    """The highest ``seq`` in an existing log (a resumed session continues numbering)."""
    best = 0
    try:
        with open(path, "rb") as fh:
            for line in fh:
                try:
                    o = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(o, dict) and isinstance(o.get("seq"), int):
                    best = max(best, o["seq"])
    except OSError:
        return 0
    return best
