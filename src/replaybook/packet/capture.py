"""Run a command and capture its output as one merged stream, in the order it was written.

stdout and stderr of the command are the *same* pipe (``stderr=STDOUT``), so the captured
bytes are exactly the sequence of writes the command made to either — the record and the
replay capture the same way and hash the same thing.  (A program that buffers stdout when it
is not a terminal writes it in blocks; it does so on record and on replay alike.)  stdin is
``/dev/null`` on both sides so a replay never waits for input the recording had.

A command is either a shell line (one string, run with ``<shell> -c``; ``bash -o pipefail -c``
when asked, see :func:`run_merged`) or an argument vector (run directly, no shell).  Exit codes follow the shell: a command killed by signal N exits
``128 + N``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import BinaryIO, Sequence

__all__ = ["Captured", "SHELLS", "run_merged", "default_shell", "shell_path"]

#: The shells a recorded shell line runs in (what :func:`default_shell` returns).
SHELLS = ("bash", "sh")


@dataclass(frozen=True)
class Captured:
    """What one run of a command produced.

    Attributes:
        output: the merged stdout+stderr bytes, in write order.
        exit: exit code (``128 + N`` when killed by signal N); ``None`` when it timed out.
        duration_ms: wall-clock run time in milliseconds.
        started: when it started, UTC.
        timed_out: it was killed after ``timeout`` seconds.
    """

    output: bytes
    exit: int | None
    duration_ms: int
    started: datetime
    timed_out: bool = False


def default_shell() -> str:
    """``bash`` when it is on PATH, else ``sh``: the shell a recorded shell line runs in."""
    return "bash" if shutil.which("bash") else "sh"


def shell_path(name: str) -> str:
    """The executable for a recorded shell name (``bash`` or ``sh``), found on PATH."""
    return shutil.which(name) or ("/bin/sh" if name == "sh" else name)


def run_merged(command: str | Sequence[str], cwd: str | os.PathLike, *, shell: str | None = None,
               timeout: float | None = None, tee: BinaryIO | None = None,
               env: dict[str, str] | None = None, new_session: bool = False, pipefail: bool = False) -> Captured:
    """Run ``command`` in ``cwd`` and capture stdout and stderr as one stream.

    Args:
        command: a shell line (``str``, run with ``shell -c``) or an argument list.
        cwd: working directory.
        shell: shell name for a shell line (default :func:`default_shell`).
        timeout: seconds before the command (and, with ``new_session``, its whole process
            group) is killed; ``None`` waits forever.
        tee: a binary stream to copy the output to as it arrives (the recorder's stdout).
        env: the environment (default: the current one).
        new_session: start the command in its own session/process group so a timeout kills
            its children too.  The recorder leaves it off so Ctrl-C reaches the command.
        pipefail: run a ``bash`` shell line with ``-o pipefail``, so a pipeline fails when any
            command in it fails (``pytest | tail -3`` keeps pytest's exit code).  Ignored for
            ``sh`` and for an argument list.

    Returns:
        :class:`Captured`.  A command that cannot be started (not found, not executable)
        gives exit 127 or 126 and the reason as its output, as a shell would.
    """
    if isinstance(command, str):
        name = shell or default_shell()
        args = [shell_path(name), *(["-o", "pipefail"] if pipefail and name == "bash" else []), "-c", command]
    else:
        args = list(command)
    started = datetime.now(timezone.utc)
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=new_session)
    except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
        code = 126 if isinstance(exc, PermissionError) else 127
        msg = f"{args[0]}: {exc.strerror or exc}\n".encode()
        if tee is not None:
            tee.write(msg)
            tee.flush()
        return Captured(msg, code, int((time.monotonic() - t0) * 1000), started)
    chunks: list[bytes] = []

    def pump() -> None:
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
            if tee is not None:
                try:
                    tee.write(data)
                    tee.flush()
                except (OSError, ValueError):
                    pass

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(proc, new_session)
        proc.wait()
    if timed_out:
        reader.join(timeout=5)
    else:
        # A background child may still hold the pipe open; give it what is left of the timeout.
        left = None if timeout is None else max(0.1, timeout - (time.monotonic() - t0))
        reader.join(timeout=left)
        if reader.is_alive():
            _kill(proc, new_session)
            reader.join(timeout=5)
    if proc.stdout is not None:
        proc.stdout.close()
    duration_ms = int((time.monotonic() - t0) * 1000)
    rc = proc.returncode
    code = None if timed_out else (128 - rc if rc < 0 else rc)
    return Captured(b"".join(chunks), code, duration_ms, started, timed_out)


def _kill(proc: subprocess.Popen, group: bool) -> None:
    try:
        if group:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except ProcessLookupError:
        pass
