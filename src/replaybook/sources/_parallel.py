"""Helper processes for loaders whose files can be read one chunk at a time (private).

A large load is cut into chunks of files.  The calling process takes chunks from the front, in
order; helper processes, forked at the start of the load, take chunks from the back and leave
what they made of each one pickled in a private temporary folder (``tempfile``'s, mode 0700;
each result is deleted as soon as it is read, the folder at the end).  The two meet in the
middle, so a slower or late helper simply does less.  A helper that has finished waits until the caller
is done with its results (a pipe the caller holds reaches its end), then removes the folder;
one whose caller dies, however it dies, is told (``PR_SET_PDEATHSIG``) and does the same.  Nothing a helper does is needed for the result: a
chunk whose helper raised, died or was never started is done by the caller afterwards, the
same way as its own.

The caller's chunks always come before every helper's chunk, so the caller meets the files
in order: an error it raises (a file that cannot be read) is the one the sequential load
would raise first, and it stops the helpers.

Only ``fork`` is used: the helpers need nothing pickled to start (the chunks and the
functions are inherited), and they never re-import the program's ``__main__`` as ``spawn`` and
``forkserver`` children do.  Where ``fork`` is missing (not Linux), or would be unsafe (Python
3.12 and later warn when other threads are running), the load runs in one process.
"""

from __future__ import annotations

import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

__all__ = ["helpers", "groups", "front_back", "ENV", "MIN_BYTES"]

#: environment variable: how many helper processes a large load may fork (``0``: none)
ENV = "REPLAYBOOK_LOAD_WORKERS"
_MAX = 3
#: below this many bytes on disk a load stays in one process (forking costs more than it saves)
MIN_BYTES = 32 * 2**20
_CHUNKS_PER_PROCESS = 16


def helpers() -> int:
    """How many helper processes to fork for one load: ``$REPLAYBOOK_LOAD_WORKERS`` when set
    (an integer; ``0`` turns them off), else one fewer than the CPUs this process may use (at
    most 3).  ``0`` wherever ``fork`` is not available or not safe (see the module
    docstring)."""
    if sys.platform != "linux":
        return 0
    if sys.version_info >= (3, 12) and threading.active_count() > 1:
        return 0
    raw = os.environ.get(ENV, "").strip()
    if raw:
        try:
            return max(0, int(raw))
        except ValueError:
            return 0
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - Linux has it
        cpus = os.cpu_count() or 1
    return max(0, min(cpus - 1, _MAX))


def groups(files: list[Path], workers: int) -> list[list[Path]]:
    """``files`` cut, in order, into about 16 groups per process of similar size on disk (one
    group when the whole is under :data:`MIN_BYTES`, or without ``workers``)."""
    sizes = []
    for f in files:
        try:
            sizes.append(f.stat().st_size)
        except OSError:
            sizes.append(0)
    total = sum(sizes)
    if not workers or total < MIN_BYTES or len(files) < 2:
        return [files]
    target = total / (_CHUNKS_PER_PROCESS * (workers + 1))
    out: list[list[Path]] = [[]]
    acc = 0
    for f, size in zip(files, sizes):
        if out[-1] and acc + size > target:
            out.append([])
            acc = 0
        out[-1].append(f)
        acc += size
    return out


def _serve(chunks: Sequence[Any], bounds, lock, work: Callable[[Any], Any], folder: str,
           parent: int, done, me: int, release: int, release_write: int) -> None:
    """A helper's loop: take the last chunk not yet taken and write ``work(chunk)`` pickled to
    ``<folder>/<index>`` (nothing when ``work`` raised), until none is left; then say so
    (``done[me]``) and wait until the caller lets go (``release``, a pipe's read end, reaches
    its end: the caller closed it, or died), and remove the folder.  Results go through files,
    not a pipe: a pipe's reader must be scheduled for every 64 KB, and the calling process is
    busy with its own chunks meanwhile."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle: it stops us
    os.close(release_write)  # the caller's end: only the caller may hold it open
    _follow(parent, folder)
    while True:
        with lock:
            lo, hi = bounds[0], bounds[1]
            if hi <= lo:
                break
            hi -= 1
            bounds[1] = hi
        target = os.path.join(folder, str(hi))
        try:
            value = work(chunks[hi])
            fd = os.open(target + ".part", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with open(fd, "wb") as fh:  # large bytes go straight to the file
                pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
            del value
            os.rename(target + ".part", target)
        except Exception:  # noqa: BLE001 - the caller does this chunk itself
            continue
    done[me] = 1
    # results not yet taken in are copies of the evidence: stay until the caller is done with
    # them — or gone, however it went — and leave nothing behind
    try:
        while os.read(release, 1):
            pass
    except OSError:
        pass
    shutil.rmtree(folder, ignore_errors=True)


def _follow(parent: int, folder: str) -> None:
    """Make this helper end, removing the results folder, when it is told to stop (SIGTERM)
    or when the calling process dies however it dies (Linux ``PR_SET_PDEATHSIG``): a killed
    load leaves neither a process nor copies of the evidence behind."""

    def stop(_signum, _frame) -> None:
        shutil.rmtree(folder, ignore_errors=True)
        os._exit(1)

    signal.signal(signal.SIGTERM, stop)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - Linux has prctl
        pass
    if os.getppid() != parent:  # the caller died before the line above
        stop(None, None)


def front_back(chunks: Sequence[Any], local: Callable[[Any], Any], remote: Callable[[Any], Any],
               workers: int, settle: Callable[[Any], Any] | None = None) -> Iterator[tuple[str, Any]]:
    """Run ``local(chunk)`` here from the first chunk on and ``remote(chunk)`` in ``workers``
    forked helpers from the last chunk back, until every chunk is taken.

    Without helpers (``workers`` 0, fewer than two chunks) every chunk is done with ``local``
    as the iterator reaches it.  ``local`` must not return ``None``.

    ``settle(result)``, when given, is applied here to each helper's result as soon as it is
    found (between two chunks of this process's own, and while the last helper finishes), in
    whatever order they come: work that needs no order is done while the helpers still
    run.  It must not raise for a result a helper delivered.

    Returns an iterator over the chunks in order: ``("local", local(chunk))`` or
    ``("remote", settle(remote(chunk)))`` (without ``settle``: ``remote(chunk)``).  A chunk a
    helper took but did not deliver (``remote`` raised, or the helper died) is done with
    ``local`` when its turn comes.

    Raises:
        whatever ``local`` raises (here, or when a chunk's turn comes); the helpers are
            stopped first.
    """
    n = len(chunks)
    done: list[Any] = [None] * n
    settled: dict[int, Any] = {}
    if not workers or n < 2:
        return _in_order(chunks, local, done, None)
    inbox = _Inbox(None, settle, settled)  # the folder is made just before the helpers are forked
    try:
        _run(chunks, local, remote, workers, done, inbox)
    except BaseException:
        inbox.close()
        raise
    return _in_order(chunks, local, done, inbox)


class _Inbox:
    """The helpers' delivered results in ``folder``, settled as they are found; the helper
    processes and the pipe that keeps them waiting until :meth:`close`."""

    def __init__(self, folder: str | None, settle: Callable[[Any], Any] | None, settled: dict[int, Any]):
        self.folder = folder
        self.settle = settle
        self.settled = settled
        self.procs: list = []
        self.release_write: int | None = None

    def close(self) -> None:
        """Remove the folder, let the helpers go and wait for them to end."""
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
        if self.release_write is not None:
            os.close(self.release_write)
            self.release_write = None
        for p in self.procs:
            p.join()
        self.procs = []

    def _load(self, i: int) -> Any:
        with open(os.path.join(self.folder, str(i)), "rb") as fh:
            value = pickle.load(fh)  # large bytes are read straight into place
        os.unlink(os.path.join(self.folder, str(i)))
        return self.settle(value) if self.settle is not None else value

    def collect(self) -> None:
        """Settle every result delivered so far."""
        if self.folder is None:
            return
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:  # a helper told to stop removed it: the chunks are done here
            return
        for name in names:
            if name.isdigit():
                i = int(name)
                try:
                    self.settled[i] = self._load(i)
                except FileNotFoundError:
                    pass

    def take(self, i: int) -> Any:
        """Chunk ``i``'s settled result, or ``None`` when no helper delivered it."""
        if i in self.settled:
            return self.settled.pop(i)
        if self.folder is None:
            return None
        try:
            return self._load(i)
        except FileNotFoundError:
            return None


def _in_order(chunks, local, done, inbox: _Inbox | None) -> Iterator[tuple[str, Any]]:
    try:
        for i, chunk in enumerate(chunks):
            if done[i] is not None:
                value, done[i] = done[i], None
                yield "local", value
                continue
            value = inbox.take(i) if inbox is not None else None
            if value is not None:
                yield "remote", value
            else:
                yield "local", local(chunk)
    finally:
        if inbox is not None:
            inbox.close()


def _run(chunks, local, remote, workers: int, done: list, inbox: _Inbox) -> None:
    """The caller's side of the load: fork the helpers, do chunks from the front until the two
    sides meet, then settle results until every helper has finished its chunks (or died).  On
    an error the helpers are stopped (they remove the folder) and the error is raised."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    bounds = ctx.RawArray("q", [0, len(chunks)])
    finished = ctx.RawArray("b", workers)
    lock = ctx.Lock()
    release_read, inbox.release_write = os.pipe()
    procs = inbox.procs
    try:
        try:
            # made at the last moment: a caller killed between here and the fork below leaves an
            # empty private folder behind (microseconds), after the fork the helpers remove it
            inbox.folder = tempfile.mkdtemp(prefix="replaybook-load-")  # private (0700)
        except OSError:  # no usable temporary folder: everything is done here
            workers = 0
        try:
            for me in range(workers):
                p = ctx.Process(target=_serve, daemon=True, name="replaybook-load-helper",
                                args=(chunks, bounds, lock, remote, inbox.folder, os.getpid(), finished, me,
                                      release_read, inbox.release_write))
                try:
                    p.start()
                except OSError:  # cannot fork (process limits): the chunks stay here
                    break
                procs.append(p)
        finally:
            os.close(release_read)  # the helpers hold it now
        while True:
            if inbox.settle is not None:
                inbox.collect()
            with lock:
                i = bounds[0]
                if i >= bounds[1]:
                    break
                bounds[0] = i + 1
            done[i] = local(chunks[i])
        # the helpers' last chunks: wait for each to finish them (or to die)
        while any(not finished[k] and p.is_alive() for k, p in enumerate(procs)):
            if inbox.settle is not None:
                inbox.collect()
            time.sleep(0.005)
        if inbox.settle is not None:
            inbox.collect()
    except BaseException:
        with lock:
            bounds[1] = bounds[0]
        for p in procs:
            p.terminate()
        raise
