"""``replaybook prune``: delete door sessions older than the retention limit, and their evidence.

A session file (``<log-root>/<agent>/<session>.jsonl``, or any ``*.jsonl`` further down, as in
``<agent>/archive/``: the log root is walked recursively, as ``replaybook load calls`` and
``replaybook hold`` walk it) is removed when its **last call**
(the latest ``ts_end``, else ``ts``, of its lines; the file's mtime when no line has one) is
older than the limit.  Evidence objects (``<evidence>/sha256/<hex>``) referenced by a removed
session (``response_digest``, ``object_digest``) are removed too, unless a remaining session
still references them.  A serve-capsule run record beside a removed session
(``<session>.run.json``) goes with it.

**Legal holds.** A session with a hold file beside it (``<session>.hold``, written by
:func:`place_hold` / ``replaybook hold``) is never removed, whatever its age, and neither is the
evidence it references: an incident under review keeps its door log and evidence until the hold
is released (:func:`release_hold`).  A hold file that cannot be read still holds.

Safety:

* only ``*.jsonl`` regular files under the log root are considered for removal (a running door
  appends to them and holds a lock prune can test); a gzip'd session (``*.jsonl.gz``, any case:
  rotated or archived by another tool, never written by a door) is read for the evidence it
  references, which is kept, and never removed — status ``compressed``, one report line each;
  symlinks (to files or
  folders) are never removed, and nothing outside the log root is touched (evidence objects
  only inside ``<evidence>/sha256/``, named by a 64-hex digest, never through a symlink).  A
  session reached through a symlink (``<agent>/x.jsonl`` or an ``<agent>`` folder) is read, not
  removed: the evidence it references is kept (a linked folder is read at any depth);
* emptied folders under the log root go with their last session (never the log root itself);
* files modified within the last ``idle_s`` seconds (default 60) and files another process holds
  a lock on (a running door holds an exclusive ``flock`` on its log) are skipped — so prune is
  safe to run while doors are writing; an evidence object touched within ``idle_s`` is kept;
* when a session file cannot be read, or a folder under the log root cannot be listed, no
  evidence object is removed (the unread session may reference any of them);
* an evidence store may serve several log roots: each door records its log root in the store
  (:func:`register_log_root`), and prune reads the sessions of every other recorded log root
  too, keeping what they reference (one inside this log root, ``logs/team`` beside
  ``logs/analyst``, is not walked as this root's: its sessions are its door's, never removed
  here); a recorded log root that cannot be read — missing (an
  unmounted volume), no folder, no permission, on another device than recorded (the empty
  mount point of a volume not mounted) — counts as a session that cannot be read: no
  evidence object is removed, and the report names the root and why;
* ``dry_run`` reports what would be removed and removes nothing.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import stat
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterable, Iterator

import orjson

from ..errors import InputError

__all__ = ["prune", "PruneReport", "SessionInfo", "DEFAULT_IDLE_S", "register_log_root", "place_hold", "release_hold",
           "hold_path", "HOLD_SUFFIX", "check_holdable", "hold_author"]

#: A file modified this recently (seconds) is taken to be in use and skipped.
DEFAULT_IDLE_S = 60.0

_HEX = re.compile(r"^[0-9a-f]{64}$")
#: the folder of an evidence store where doors record their log roots
_LOG_ROOTS = "log-roots"


@dataclass
class SessionInfo:
    """One session file as prune saw it.

    Attributes:
        path: the file.
        last_call: its last call's time (UTC), or ``None`` when it could not be read.
        digests: evidence digests its lines reference.
        status: ``removed`` (or would be, in a dry run), ``kept`` (young enough), ``held`` (a
            legal hold: old enough, kept), ``active``
            (modified within the idle window), ``locked`` (a door holds it), ``linked`` (reached
            through a symlink, or in another log root sharing the evidence store: read, never
            removed), ``changed`` (replaced while prune ran: kept, its references unknown),
            ``compressed`` (a gzip'd ``*.jsonl.gz`` session: read for its references, never
            removed) or ``unreadable``.
    """

    path: Path
    last_call: datetime | None
    digests: set[str] = field(default_factory=set)
    status: str = "kept"
    #: the hold's reason, for a session under a legal hold (``""`` when it gives none)
    hold: str | None = None
    #: why it is ``unreadable``, when more is known than that it could not be read (a folder
    #: that could not be listed, a log root that is not there)
    why: str | None = None


@dataclass
class PruneReport:
    """What :func:`prune` did (or would do, with ``dry_run``)."""

    log_root: Path
    cutoff: datetime
    dry_run: bool
    sessions: list[SessionInfo] = field(default_factory=list)
    evidence_removed: list[Path] = field(default_factory=list)
    other_removed: list[Path] = field(default_factory=list)
    skipped_symlinks: list[Path] = field(default_factory=list)
    #: other log roots that share the evidence store (their sessions read, never touched; one
    #: that cannot be read, a missing one too, is an ``unreadable`` entry in ``shared_sessions``)
    shared_roots: list[Path] = field(default_factory=list)
    #: their sessions, as read
    shared_sessions: list[SessionInfo] = field(default_factory=list)
    #: evidence that would have gone was kept because a session could not be read
    evidence_held: bool = False
    #: a file modified this recently (seconds) is a session a door may still be writing
    idle_s: float = 60.0
    #: the evidence store, when one was given
    evidence: Path | None = None

    @property
    def removed(self) -> list[SessionInfo]:
        """The sessions removed (or that would be)."""
        return [s for s in self.sessions if s.status == "removed"]

    def lines(self) -> list[str]:
        """The report as text lines (what the CLI prints)."""
        verb = "would remove" if self.dry_run else "removed"
        out = []
        for s in self.removed:
            out.append(f"{verb} {s.path} (last call {s.last_call:%Y-%m-%dT%H:%M:%SZ})")
        for p in self.other_removed:
            out.append(f"{verb} {p}")
        for p in self.evidence_removed:
            out.append(f"{verb} evidence {p}")
        for s in self.sessions:
            if s.status in ("active", "locked", "unreadable", "changed"):
                why = {"active": f"modified within the last {self.idle_s:g} s: a door may still be writing it",
                       "locked": "another process holds a lock on it: a door is writing it",
                       "unreadable": s.why or "it could not be read",
                       "changed": "it was replaced while prune held it: what replaced it is left alone"}[s.status]
                out.append(f"skipped {s.path} ({s.status}: {why})")
            elif s.status == "compressed":
                out.append(f"kept {s.path} (gzip'd session: prune removes only .jsonl sessions a door may hold "
                           "a lock on; the evidence it references kept)")
            elif s.status == "held":
                out.append(f"kept {s.path} (legal hold{': ' + s.hold if s.hold else ''}; "
                           f"last call {s.last_call:%Y-%m-%dT%H:%M:%SZ})")
        unread = {s.path: s for s in self.shared_sessions if s.status == "unreadable"}
        records = (self.evidence / _LOG_ROOTS) if self.evidence is not None else Path(_LOG_ROOTS)
        for r in self.shared_roots:
            if r in unread:
                out.append(f"could not read {r}, a log root that shares the evidence store "
                           f"({unread[r].why or 'it could not be read'}): no evidence is removed while it cannot "
                           f"be read (its sessions may reference any object; if it is gone for good, remove "
                           f"its record from {records})")
            else:
                out.append(f"read {r} too (it shares the evidence store): kept the evidence its sessions reference")
        for s in self.shared_sessions:
            if s.status == "unreadable" and s.path not in self.shared_roots:
                out.append(f"could not read {s.path} ({s.why or 'a session of another log root'})")
        for p in self.skipped_symlinks:
            out.append(f"skipped {p} (symlink: not removed, the evidence it references kept)")
        if self.evidence_held:
            out.append("kept all evidence: a session that could not be read may still reference it")
        n_ev = len(self.evidence_removed)
        n_held = sum(s.status == "held" for s in self.sessions)
        out.append(f"{len(self.removed)} session(s) and {n_ev} evidence object(s) "
                   f"{'would be removed' if self.dry_run else 'removed'}"
                   + (f" ({n_held} old enough kept under a legal hold)" if n_held else "")
                   + f"; cutoff {self.cutoff:%Y-%m-%dT%H:%M:%SZ}")
        return out


#: a legal hold's file, beside the session file it holds: ``<session>.hold``
HOLD_SUFFIX = ".hold"


def hold_path(session_file: str | Path) -> Path:
    """The hold file of a session file (``x.jsonl`` → ``x.hold``)."""
    p = Path(session_file)
    return p.with_name(p.name[: -len(".jsonl")] + HOLD_SUFFIX if _session_name(p.name) else p.name + HOLD_SUFFIX)


def _hold_of(session_file: Path) -> str | None:
    """The reason of the hold on ``session_file`` (``""`` when none is given or it cannot be
    read: a hold file that exists holds), or ``None`` when it has none."""
    h = hold_path(session_file)
    try:
        os.lstat(h)
    except FileNotFoundError:
        return None
    except OSError:
        return ""
    try:
        with open(h, "rb") as fh:
            reason = orjson.loads(fh.read(1 << 16)).get("reason")
        return reason if isinstance(reason, str) else ""
    except (OSError, ValueError, AttributeError):
        return ""


def check_holdable(session_file: str | Path) -> Path:
    """``session_file`` as a :class:`~pathlib.Path` when a hold can be placed on it: a regular
    ``.jsonl`` file (not a symlink) in a folder the hold file can be written in.  ``replaybook
    hold`` checks every file with this before it writes any hold.

    Raises:
        InputError: it cannot be read, is not a door session file, or its folder is not writable.
    """
    p = Path(session_file)
    try:
        st = os.lstat(p)
    except OSError as exc:
        raise InputError(f"cannot hold a session file that cannot be read: {exc.strerror or exc}", p) from exc
    if not _session_name(p.name) or not stat.S_ISREG(st.st_mode):
        raise InputError("a hold is placed on a door session file (<agent>/<session>.jsonl, not a symlink)", p)
    if not os.access(p.parent, os.W_OK | os.X_OK):
        raise InputError("cannot write the hold file beside it: its folder is not writable", p)
    return p


def place_hold(session_file: str | Path, reason: str, *, by: str | None = None,
               now: datetime | None = None) -> Path:
    """Put ``session_file`` (a door session's ``.jsonl``) under a legal hold: write its hold file
    (JSON: ``reason``, ``placed`` UTC ISO 8601, ``by``), which :func:`prune` honours.  The session
    file itself is not touched.  Placing a hold again replaces its reason.  Returns the hold file.

    Raises:
        InputError: ``reason`` is empty or blank (a hold no one can account for later is not
            placed), ``session_file`` is not a regular ``.jsonl`` file (or is a symlink), or the
            hold file cannot be written (:func:`check_holdable`).
    """
    if not isinstance(reason, str) or not reason.strip():
        raise InputError("a hold needs a reason (a case or ticket number: it is kept with the hold)", session_file)
    p = check_holdable(session_file)
    h = hold_path(p)
    body = {"reason": reason, "placed": (now or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "by": by, "session": p.name}
    tmp = h.with_name(h.name + ".part")
    try:
        with open(tmp, "wb") as fh:
            fh.write(orjson.dumps(body, option=orjson.OPT_INDENT_2) + b"\n")
        os.replace(tmp, h)
    except OSError as exc:
        raise InputError(f"cannot write the hold file: {exc.strerror or exc}", h) from exc
    return h


def hold_author(by: str | None = None) -> str | None:
    """Who places a hold: ``by`` when given, else ``$USER``, else the login name
    (:func:`getpass.getuser`: ``$LOGNAME``, ``$LNAME``, ``$USERNAME``, then the user database's
    name for this process's uid); ``None`` when none is known."""
    import getpass

    if by and by.strip():
        return by.strip()
    user = os.environ.get("USER")
    if user:
        return user
    try:
        return getpass.getuser() or None
    except (OSError, KeyError, ImportError):  # no name for this uid (a container's arbitrary uid)
        return None


def release_hold(session_file: str | Path) -> bool:
    """Remove ``session_file``'s legal hold; ``False`` when it had none.

    Raises:
        InputError: the hold file exists but cannot be removed.
    """
    h = hold_path(session_file)
    try:
        os.unlink(h)
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise InputError(f"cannot remove the hold file: {exc.strerror or exc}", h) from exc
    return True


def _parse_ts(s: object) -> datetime | None:
    if not isinstance(s, str) or len(s) < 19:
        return None
    try:
        t = datetime.fromisoformat(s.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        # more than 6 fractional digits: trim them
        m = re.match(r"^(.*?\.\d{6})\d*(.*)$", s)
        if not m:
            return None
        try:
            t = datetime.fromisoformat((m.group(1) + m.group(2)).replace("Z", "+00:00"))
        except ValueError:
            return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _session_name(name: str) -> bool:
    """A session file's name: ``*.jsonl``, in any case (the loaders read ``S.JSONL`` too, so its
    evidence must be seen, and the file held and pruned, as any other session's)."""
    return name.lower().endswith(".jsonl")


def _gz_name(name: str) -> bool:
    """A gzip'd session's name: ``*.jsonl.gz`` in any case."""
    return name.lower().endswith(".jsonl.gz")


def _scan(fd: int) -> tuple[datetime | None, set[str]]:
    """The last call and the evidence digests of the session open as ``fd`` (gzip'd or not, by
    its first bytes).

    Raises:
        OSError: it cannot be read (a damaged gzip stream too).
    """
    import gzip
    import zlib

    with os.fdopen(os.dup(fd), "rb") as raw:
        magic = raw.read(2)
        raw.seek(0)
        if magic != b"\x1f\x8b":
            return _scan_lines(raw)
        try:
            with gzip.GzipFile(fileobj=raw, mode="rb") as fh:
                return _scan_lines(fh)
        except (EOFError, zlib.error) as exc:
            raise OSError(f"damaged gzip stream: {exc}") from exc


def _scan_lines(fh) -> tuple[datetime | None, set[str]]:
    last: datetime | None = None
    digests: set[str] = set()
    for line in fh:
        try:
            o = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(o, dict):
            continue
        t = _parse_ts(o.get("ts_end")) or _parse_ts(o.get("ts"))
        if t is not None and (last is None or t > last):
            last = t
        for k in ("response_digest", "object_digest"):
            d = o.get(k)
            if isinstance(d, str) and d.startswith("sha256:") and _HEX.match(d[7:]):
                digests.add(d)
    return last, digests


def _open_nofollow(path: Path) -> int:
    return os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))


def _linked(path: Path) -> SessionInfo:
    """A session reached through a symlink, read for the evidence it references (never removed):
    ``linked``, or ``unreadable`` when it is not a regular file that can be read (opened without
    blocking: a FIFO behind the link must not stall prune)."""
    info = SessionInfo(path, None, status="unreadable")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return info
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            info.last_call, info.digests = _scan(fd)
            info.status = "linked"
    except OSError:
        pass
    finally:
        os.close(fd)
    return info


def register_log_root(evidence: str | Path, log_root: str | Path) -> str | None:
    """Record in the evidence store ``evidence`` that the doors of ``log_root`` keep objects in
    it (``<evidence>/log-roots/<sha256 of the log root's real path>``, holding that path and the
    device it is on), so that :func:`prune` of another log root keeps what this one's sessions
    reference.

    A record naming another device is never replaced: a door started on the empty mount point
    of a volume not mounted yet would otherwise make that folder the root, and prune would
    remove what the volume's sessions reference.  Such a record is left as it is and a warning
    is returned (``None`` otherwise) saying how to record the root anew if it moved for good.

    Raises:
        OSError: the record cannot be written.
    """
    real = os.path.realpath(log_root)
    folder = Path(evidence) / _LOG_ROOTS
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / hashlib.sha256(os.fsencode(real)).hexdigest()
    try:  # (a root its door has not made yet: the path alone, the device recorded at the next start)
        dev: int | None = os.stat(real).st_dev
    except FileNotFoundError:
        dev = None
    record = os.fsencode(real) + (b"\0dev=%d" % dev if dev is not None else b"")
    try:
        with open(p, "rb") as fh:
            had = fh.read(8192)
    except OSError:
        had = None
    if had == record:
        return None
    old = had.partition(b"\0")[2] if had is not None else b""
    if re.fullmatch(rb"dev=[0-9]+", old) and (dev is None or int(old[4:]) != dev):
        return (f"{real} is on another device than the evidence store recorded for it ({p}): a volume "
                "not mounted yet? prune keeps all evidence while it is so; if the log root moved for good, "
                "remove that record and start the door again")
    tmp = folder / f".tmp-{os.getpid()}-{p.name[:16]}"
    tmp.write_bytes(record)
    os.replace(tmp, p)
    return None


def _shared_roots(evidence: Path, log_root: Path) -> tuple[list[tuple[Path, int | None]], bool]:
    """The other log roots recorded in the store (:func:`register_log_root`), each with the
    device it was on when recorded (``None`` in a record written before devices were); False
    when the records cannot be read."""
    folder = evidence / _LOG_ROOTS
    mine = os.path.realpath(log_root)
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except FileNotFoundError:
        return [], True
    except OSError:
        return [], False
    out, ok = [], True
    for e in entries:
        if not _HEX.match(e.name) or not e.is_file(follow_symlinks=False):
            continue
        try:
            with open(e.path, "rb") as fh:
                raw, _, dev = fh.read(8192).partition(b"\0")
        except OSError:
            ok = False
            continue
        path = os.fsdecode(raw)
        if path != mine and os.path.realpath(path) != mine:
            out.append((Path(path), int(dev[4:]) if re.fullmatch(rb"dev=[0-9]+", dev) else None))
    return out, ok


def _shared_sessions(root: Path, exclude: Iterable[Path] = (), dev: int | None = None) -> list[SessionInfo]:
    """Every session of another log root, at any depth, read for its references (symlinks
    followed: nothing there is ever removed).  A root that is not there (an unmounted volume, a
    moved folder) or is no folder is one ``unreadable`` entry, as a session that cannot be read:
    its sessions may reference any object, so none is removed until it can be read again or its
    record is removed from the store.  ``exclude``: folders inside it not to read as its own
    (the log root being pruned, the other recorded roots: each is read as itself).  ``dev``: the
    device the root was on when its door recorded it; a root now on another device (the empty
    mount point of a volume not mounted) is ``unreadable`` too."""
    try:
        st = os.stat(root)
    except FileNotFoundError:
        return [SessionInfo(root, None, status="unreadable",
                            why="it does not exist: not mounted, moved or deleted?")]
    except OSError as exc:
        return [SessionInfo(root, None, status="unreadable", why=f"it cannot be looked at: {exc.strerror or exc}")]
    if not stat.S_ISDIR(st.st_mode):
        return [SessionInfo(root, None, status="unreadable", why="it is not a folder")]
    if dev is not None and st.st_dev != dev:
        return [SessionInfo(root, None, status="unreadable",
                            why="it is on another device than when its door recorded it: a volume not mounted "
                                "(its empty mount point)?")]
    return _linked_folder(root, [p for p in exclude if os.path.realpath(p) != os.path.realpath(root)])


def _linked_folder(path: Path, exclude: Iterable[Path] = ()) -> list[SessionInfo]:
    """The sessions under a folder reached through a symlink (or another log root's), at any
    depth, each read as :func:`_linked` (never removed), sorted by path.  Symlinks under it are
    followed too (nothing there is removed); each folder is read once, so a link back up does not
    loop.  A folder under it that cannot be listed is one ``unreadable`` entry (it may hold
    sessions referencing any evidence object).  The folders in ``exclude`` (other log roots,
    read as themselves) are not entered."""
    if not os.path.isdir(path):
        return []
    out: list[SessionInfo] = []
    seen: set[tuple[int, int]] = set()
    for other in exclude:
        try:
            st = os.stat(other)
        except OSError:
            continue
        seen.add((st.st_dev, st.st_ino))
    stack = [path]
    while stack:
        folder = stack.pop()
        try:
            st = os.stat(folder)
            key = (st.st_dev, st.st_ino)
            if key in seen:
                continue
            seen.add(key)
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except FileNotFoundError:  # gone since listed
            continue
        except OSError as exc:
            out.append(SessionInfo(folder, None, status="unreadable",
                                   why=f"the folder could not be listed: {exc.strerror or exc}"))
            continue
        for e in entries:
            try:
                if e.is_dir():
                    stack.append(Path(e.path))
                    continue
            except OSError:  # a link loop, a file gone since listed: not a folder to enter
                pass
            if _session_name(e.name) or _gz_name(e.name):
                out.append(_linked(Path(e.path)))
    return sorted(out, key=lambda i: i.path)


def _walk(root: Path, skip: frozenset[str] = frozenset()) -> Iterator[tuple[Path, str, str | None]]:
    """What prune looks at under ``root``, at any depth (``replaybook load calls`` and
    ``replaybook hold`` walk a log root recursively too): ``(path, kind, why)``, each folder's
    files by name before its subfolders.  ``kind`` is ``session`` (a ``*.jsonl`` that is no
    symlink: regular files are candidates for removal), ``gz`` (a ``*.jsonl.gz`` that is no
    symlink), ``link`` (a symlink to a folder or named as a session: read, never entered here nor
    removed) or ``unlisted`` (a folder that cannot be listed; ``why`` says why).  Symlinked
    folders are not entered: :func:`_linked_folder` reads them; nor are the folders in ``skip``
    (real paths: another log root sharing the evidence store, which has its own retention, and
    the evidence store itself), yielded as ``other``."""
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except FileNotFoundError:  # gone since listed
            continue
        except OSError as exc:
            yield folder, "unlisted", f"the folder could not be listed: {exc.strerror or exc}"
            continue
        subs = []
        for e in entries:
            path = Path(e.path)
            try:
                if e.is_symlink():
                    if _session_name(e.name) or _gz_name(e.name) or e.is_dir():
                        yield path, "link", None
                    continue
                if e.is_dir(follow_symlinks=False):
                    if skip and os.path.realpath(path) in skip:
                        yield path, "other", None
                    else:
                        subs.append(path)
                    continue
                if _gz_name(e.name):
                    yield path, "gz", None
                elif _session_name(e.name) and e.is_file(follow_symlinks=False):
                    yield path, "session", None
            except OSError:  # gone since listed
                continue
        stack.extend(reversed(subs))


def prune(log_root: str | Path, older_than: timedelta, *, dry_run: bool = False, evidence: str | Path | None = None,
          now: datetime | None = None, idle_s: float = DEFAULT_IDLE_S) -> PruneReport:
    """Remove door sessions whose last call is older than ``older_than`` (see the module docstring).

    Raises:
        InputError: ``log_root`` is not a folder (or is a symlink), or ``older_than`` is negative
            or reaches back before year 1.
    """
    root = Path(log_root)
    if older_than < timedelta(0):
        raise InputError(f"retention must not be negative, got {older_than}")
    try:
        st = os.lstat(root)
    except OSError as exc:
        raise InputError(f"log root does not exist: {exc.strerror or exc}", root) from exc
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise InputError("log root must be a folder (not a symlink)", root)
    now = now or datetime.now(timezone.utc)
    try:
        cutoff = now - older_than
    except OverflowError:
        raise InputError(f"retention {older_than.days} days reaches back before year 1: "
                         "no session can be that old") from None
    wall = time.time()
    report = PruneReport(log_root=root, cutoff=cutoff, dry_run=dry_run, idle_s=idle_s,
                         evidence=Path(evidence) if evidence is not None else None)
    held: list[tuple[SessionInfo, int]] = []  # removal candidates, locked by us
    shared: list[tuple[Path, int | None]] = []
    if evidence is not None:
        shared, ok = _shared_roots(Path(evidence), root)
        report.shared_roots = [p for p, _ in shared]
        if not ok:
            report.shared_sessions.append(SessionInfo(
                Path(evidence) / _LOG_ROOTS, None, status="unreadable",
                why="the records of the log roots that share the evidence store"))
    # another log root sharing the store may sit inside this one (logs/ and logs/team/): its
    # sessions are its own door's, read for their references below and never removed here
    skip = frozenset(os.path.realpath(p) for p in [*(p for p, _ in shared),
                                                   *([Path(evidence)] if evidence is not None else [])])
    try:
        for path, kind, why in _walk(root, skip):
            if kind == "other":
                continue
            if kind == "unlisted":
                report.sessions.append(SessionInfo(path, None, status="unreadable", why=why))
                continue
            if kind == "link":
                report.skipped_symlinks.append(path)
                report.sessions.extend(_linked_folder(path) if os.path.isdir(path) else [_linked(path)])
                continue
            if kind == "gz":  # read for its references, never removed
                gz = _linked(path)
                if gz.status == "linked":
                    gz.status = "compressed"
                report.sessions.append(gz)
                continue
            info = SessionInfo(path, None)
            report.sessions.append(info)
            try:
                fd = _open_nofollow(path)
            except OSError:
                info.status = "unreadable"
                continue
            keep_fd = False
            try:
                fst = os.fstat(fd)
                if not stat.S_ISREG(fst.st_mode):
                    info.status = "unreadable"
                    continue
                try:
                    info.last_call, info.digests = _scan(fd)
                except OSError:
                    info.status = "unreadable"
                    continue
                if info.last_call is None:
                    info.last_call = datetime.fromtimestamp(fst.st_mtime, timezone.utc)
                if wall - fst.st_mtime < idle_s:
                    info.status = "active"
                    continue
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    info.status = "locked"
                    continue
                if info.last_call < cutoff and (hold := _hold_of(path)) is not None:
                    info.status, info.hold = "held", hold
                elif info.last_call < cutoff:
                    info.status = "removed"
                    held.append((info, fd))
                    keep_fd = True
            finally:
                if not keep_fd:
                    os.close(fd)

        for other, dev in shared:
            report.shared_sessions.extend(_shared_sessions(other, [root, *(p for p, _ in shared)], dev))

        for s, fd in held:
            sibling = s.path.with_name(s.path.name[: -len(".jsonl")] + ".run.json")
            if not dry_run:
                # still the same file we locked? (never unlink something swapped in under us)
                try:
                    cur = os.lstat(s.path)
                    mine = os.fstat(fd)
                    if (cur.st_ino, cur.st_dev) != (mine.st_ino, mine.st_dev) or not stat.S_ISREG(cur.st_mode):
                        s.status = "changed"  # what replaced it may reference anything
                        continue
                    os.unlink(s.path)
                except FileNotFoundError:
                    pass
            try:
                sst = os.lstat(sibling)
                if stat.S_ISREG(sst.st_mode):
                    if not dry_run:
                        os.unlink(sibling)
                    report.other_removed.append(sibling)
            except FileNotFoundError:
                pass
    finally:
        for _, fd in held:
            os.close(fd)

    # evidence of the removed sessions that no session staying (here or in a log root sharing
    # the store) references
    referenced: set[str] = set()
    for s in [*report.sessions, *report.shared_sessions]:
        if s.status != "removed":
            referenced |= s.digests
    doomed = set()
    for s in report.removed:
        doomed |= s.digests
    doomed -= referenced

    # a session that could not be read may reference any object: removing evidence could
    # orphan its lines, so none is removed until it can be read (the report says so)
    report.evidence_held = evidence is not None and bool(doomed) and any(
        s.status in ("unreadable", "changed") for s in [*report.sessions, *report.shared_sessions])
    if evidence is not None and doomed and not report.evidence_held:
        ev_dir = Path(evidence) / "sha256"
        try:
            ok_dir = stat.S_ISDIR(os.lstat(Path(evidence)).st_mode) and stat.S_ISDIR(os.lstat(ev_dir).st_mode)
        except OSError:
            ok_dir = False
        if ok_dir:
            for d in sorted(doomed):
                p = ev_dir / d[7:]
                try:
                    pst = os.lstat(p)
                except FileNotFoundError:
                    continue
                if not stat.S_ISREG(pst.st_mode) or wall - pst.st_mtime < idle_s:
                    continue
                if not dry_run:
                    try:
                        os.unlink(p)
                    except FileNotFoundError:
                        continue
                report.evidence_removed.append(p)

    if not dry_run:  # folders under the root emptied by the removals go too (never the root)
        for folder in sorted({s.path.parent for s in report.removed}, key=lambda p: -len(p.parts)):
            while folder != root and root in folder.parents:
                try:
                    os.rmdir(folder)  # only when now empty
                except OSError:
                    break
                folder = folder.parent
    return report
