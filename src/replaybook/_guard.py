"""Refuse an output path that would write over evidence (private; used by the command lines).

Every input — a transcript, a door log, a session log, a capsule and its evidence store — is
evidence: replaybook opens it read-only and never writes over it.  A command that writes a file
(``load --out``, ``capsule incident-run --out``, ``capsule build --out``, ``packet replay --junit``)
checks its path here
first: ``capsule incident-run --out capsule/capsule.yaml`` had replaced the capsule it had just
read, ``packet replay --junit session.jsonl`` the session log, and ``packet replay --head-ignore
PR_BODY.md --junit PR_BODY.md`` the PR body (the packet's files are listed by
``replaybook.packet.cli._packet_files``).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from contextlib import contextmanager
from typing import Iterable, Iterator

import click

__all__ = ["refuse_over_evidence", "check_writable", "cannot_write", "writing", "stat_or_refuse", "DISK_ERRNOS"]


#: errors of the disk an output is written to (no space left, a quota, read-only, an I/O error,
#: a file too large) — the system's refusal, said as :func:`cannot_write`'s usage error
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG})


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def cannot_write(out: str | Path, exc: OSError, option: str = "--out") -> click.BadParameter:
    """The usage error (exit 2) for an output path the system refused, in its own words (``File
    name too long``, ``No space left on device``, ``Permission denied`` …)."""
    return click.BadParameter(f"cannot write {out}: {_why(exc)}", param_hint=option)


def stat_or_refuse(out: str | Path, option: str) -> os.stat_result | None:
    """``os.stat(out)``; ``None`` when nothing is there yet (nor, perhaps, its folder); a usage
    error for a path the system cannot even look up (a name too long, a file where a folder
    must be, a folder it may not enter)."""
    try:
        return os.stat(out)
    except (FileNotFoundError, NotADirectoryError):  # (a file where a folder must be: the folder maker says so)
        return None
    except OSError as exc:
        raise cannot_write(out, exc, option) from None


def check_writable(out: str | Path, option: str = "--out", *, replaces: bool = False) -> None:
    """Raise :func:`cannot_write`'s error when ``out`` can be seen, cheaply, not to be writable —
    before a command spends its time loading what it would write there.  A regular file there
    must be open for writing; where there is none, and its folder exists, one is made and
    removed again (a name too long, a read-only or full-of-inodes folder, no permission).  A
    device, a pipe or a missing folder is left to the write itself (:func:`writing`) — unless
    the write ``replaces`` the file (a new file renamed over it): then anything but a regular
    file there is refused (``/dev/null`` would be replaced by a file, for every program)."""
    st = stat_or_refuse(out, option)
    import stat as _stat

    if st is not None and replaces and not _stat.S_ISREG(st.st_mode):
        raise click.BadParameter(f"cannot write {out}: not a regular file (the file written is put in its "
                                 "place)", param_hint=option)
    if st is not None:
        if _stat.S_ISREG(st.st_mode) and not os.access(out, os.W_OK):
            raise cannot_write(out, PermissionError(13, os.strerror(13)), option)
        return
    if not Path(out).parent.is_dir():
        return
    try:
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:  # (made since: by another process)
        return
    except OSError as exc:
        raise cannot_write(out, exc, option) from None
    os.close(fd)
    try:
        os.unlink(out)
    except OSError:
        pass


@contextmanager
def writing(out: str | Path, option: str = "--out") -> Iterator[None]:
    """``with writing(out): …write out…`` — an ``OSError`` the write meets (no space left, the
    disk gone read-only, a name too long) becomes :func:`cannot_write`'s usage error (exit 2),
    and a file the write had made (none was there before) is removed, not left half-written."""
    try:
        was = os.path.lexists(out)
    except (OSError, ValueError):
        was = True
    try:
        yield
    except OSError as exc:
        if not was:
            try:
                if os.path.isfile(out):
                    os.unlink(out)
            except OSError:
                pass
        raise cannot_write(out, exc, option) from None


def refuse_over_evidence(out: str | Path, *, files: Iterable[str | Path] = (), folders: Iterable[str | Path] = (),
                         option: str = "--out") -> None:
    """Raise :class:`click.BadParameter` (exit 2) when ``out`` is one of ``files`` (the same
    file on disk: symbolic and hard links and relative paths seen through) or lies inside one of
    ``folders`` (an evidence store, stored outputs), or is a hard link to a file in one of them;
    otherwise return.

    Args:
        out: the output file a command is about to write.
        files: input files (missing ones are passed over).
        folders: folders whose every file is evidence (missing ones are passed over).
        option: the option that named ``out``, for the message.
    """
    target = Path(out)
    if stat_or_refuse(out, option) is not None:
        for f in files:
            try:
                same = os.path.samefile(f, target)
            except OSError:
                continue
            if same:
                raise click.BadParameter(f"{out} is one of the inputs ({f}); input files are never written over: "
                                         "choose another file", param_hint=option)
    where = target.resolve()
    roots = [Path(f) for f in folders if Path(f).is_dir()]
    for root in roots:
        full = root.resolve()
        if where == full or full in where.parents:
            raise click.BadParameter(f"{out} is inside {root}, whose files are evidence and never written over: "
                                     "choose another place", param_hint=option)
    try:
        st = target.stat()
    except OSError:
        return
    if st.st_nlink > 1 and target.is_file():  # (a hard link elsewhere to a file in a protected folder)
        for root in roots:
            for dirpath, _dirs, names in os.walk(root):
                for name in names:
                    try:
                        other = os.stat(os.path.join(dirpath, name))
                    except OSError:
                        continue
                    if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                        raise click.BadParameter(
                            f"{out} is a hard link to {os.path.join(dirpath, name)}, inside {root}, whose files are "
                            "evidence and never written over: choose another place", param_hint=option)
