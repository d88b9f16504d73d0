"""The evidence store: a content-addressed folder of captured objects.

Layout: ``<root>/sha256/<64 hex>``, one file per object, named by the SHA-256 of its exact bytes
(the same layout the door uses for the responses it keeps).  Objects are written atomically
(temporary file in the same folder, ``fsync``, ``os.replace``) and then made read-only
(mode ``0444``), and :meth:`EvidenceStore.sync` syncs the folders they were renamed into;
writing an object that already exists checks the existing bytes instead of overwriting them.  Reading and verification open files read-only and never write.

An object is the file in the store: a symbolic link leading out of the store's folder is
``outside`` — never followed, never read (it could name any file on the reviewer's machine, or
one that changes after verification) — and the capsule does not hold that object.

An object file that is there but cannot be read (the disk answers an I/O error, no permission)
is ``unreadable``, with the system's reason: it is not ``missing`` — "missing" says the object was
never captured or was removed, "unreadable" that it is there and its bytes cannot be checked.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .digest import hex_of, is_digest, sha256_digest
from .errors import EvidenceMissing, IntegrityError

__all__ = ["EvidenceStore", "ObjectCheck", "OBJECT_STATUSES"]

#: Values of :attr:`ObjectCheck.status`.
OBJECT_STATUSES = ("ok", "missing", "unreadable", "mismatch", "outside")

_CHUNK = 1 << 20


@dataclass(frozen=True)
class ObjectCheck:
    """The result of re-hashing one object.

    Attributes:
        digest: the digest asked for (``sha256:<hex>``).
        status: ``ok``, ``missing`` (no such object, or something that is not a file — a folder,
            a pipe — in its place), ``unreadable`` (the file is there but cannot be read: an I/O
            error, no permission; see ``reason``), ``mismatch`` (bytes hash to ``actual``) or
            ``outside`` (a link leading out of the store, not followed).
        actual: the digest of the bytes found (``None`` unless ok or mismatch).
        size: the object's size in bytes (``None`` unless ok or mismatch).
        target: where an ``outside`` link leads (``None`` otherwise).
        reason: why an ``unreadable`` object cannot be read, in the system's words
            (``Input/output error``, ``Permission denied``); ``None`` otherwise.
    """

    digest: str
    status: str
    actual: str | None = None
    size: int | None = None
    target: str | None = None
    reason: str | None = None


def _hash_file(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    n = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
            n += len(chunk)
    return "sha256:" + h.hexdigest(), n


def _listed(p: Path) -> bool:
    """True for a file or a link in the store's folder; also for an entry the system cannot
    stat (it is checked, and said to be unreadable, rather than left out unsaid)."""
    try:
        return p.is_file() or p.is_symlink()
    except OSError:
        return True


class EvidenceStore:
    """A content-addressed evidence folder.

    Args:
        root: the store's folder (it need not exist until the first :meth:`put`).
    """

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"EvidenceStore({str(self.root)!r})"

    def path(self, digest: str) -> Path:
        """The file that holds ``digest``'s object (it may not exist).

        Raises:
            ValueError: ``digest`` is not ``sha256:<64 hex>``.
        """
        return self.root / "sha256" / hex_of(digest)

    def outside(self, digest: str) -> str | None:
        """Where ``digest``'s file leads when it is a link out of the store's folder (the real
        path), else ``None`` (also for no file at all).

        Raises:
            ValueError: ``digest`` is not ``sha256:<64 hex>``.
        """
        p = self.path(digest)
        if not os.path.lexists(p):
            return None
        root = os.path.realpath(self.root)
        real = os.path.realpath(p)
        return None if real.startswith(root.rstrip(os.sep) + os.sep) else real

    def has(self, digest: str) -> bool:
        """True when an object file for ``digest`` is in the store (its bytes are not checked;
        a link out of the store does not count) — also when something is there that the system
        cannot look at (an I/O error: :meth:`check` says ``unreadable``, :meth:`get` raises
        saying why), never raising for it."""
        if not is_digest(digest):
            return False
        try:
            mode = os.stat(self.path(digest)).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return False
        except OSError:  # (there, but the disk answers an error)
            return True
        return stat.S_ISREG(mode) and self.outside(digest) is None

    def digests(self) -> list[str]:
        """Every object's digest by file name, sorted (files and links; names that are not 64
        lowercase hex are skipped)."""
        d = self.root / "sha256"
        if not d.is_dir():
            return []
        return sorted("sha256:" + p.name for p in d.iterdir()
                      if _listed(p) and is_digest("sha256:" + p.name))

    def check(self, digest: str) -> ObjectCheck:
        """Re-hash one object (read-only, never raises for the object's file).

        Returns:
            ``outside`` for a link out of the store (not read); ``missing`` when there is no
            object file (or a folder or a pipe is in its place: not read); ``unreadable`` with
            the system's ``reason`` when the file is there but cannot be read (an I/O error, no
            permission); else ``ok`` or ``mismatch`` with the bytes' digest and size.

        Raises:
            ValueError: ``digest`` is not ``sha256:<64 hex>``.
        """
        target = self.outside(digest)
        if target is not None:
            return ObjectCheck(digest, "outside", target=target)
        p = self.path(digest)
        try:
            if not stat.S_ISREG(os.stat(p).st_mode):
                return ObjectCheck(digest, "missing")
            actual, size = _hash_file(p)
        except (FileNotFoundError, NotADirectoryError):  # (no object, or the store's root is a file)
            return ObjectCheck(digest, "missing")
        except OSError as exc:  # there, but the disk or the permissions refuse it
            return ObjectCheck(digest, "unreadable", reason=exc.strerror or str(exc))
        return ObjectCheck(digest, "ok" if actual == digest else "mismatch", actual, size)

    def get(self, digest: str, *, call_id: str | None = None) -> bytes:
        """The object's bytes, verified against ``digest``.

        Raises:
            EvidenceMissing: no object for ``digest``, it cannot be read (the ``OSError`` the
                system gave is its ``__cause__``), or it is a link out of the store
                (``what='object'``).
            IntegrityError: the bytes hash to something else (names ``call_id`` when given).
        """
        try:
            p = self.path(digest)
            target = self.outside(digest)
        except ValueError as exc:
            raise EvidenceMissing(f"not a digest: {digest!r}", call_id=call_id, what="object") from exc
        if target is not None:
            who = f" (call {call_id})" if call_id else ""
            raise EvidenceMissing(f"evidence object {digest}{who} is a link out of {self.root} (to {target}): "
                                  "the store does not hold it", call_id=call_id, what="object")
        try:
            there = p.exists() and not p.is_file()
        except OSError as exc:  # (looking the file up: the disk answered an error)
            who = f" (call {call_id})" if call_id else ""
            raise EvidenceMissing(f"evidence object {digest}{who} cannot be read from {self.root}: "
                                  f"{exc.strerror or exc}", call_id=call_id, what="object") from exc
        if there:  # (a pipe in its place would be waited on for ever)
            who = f" (call {call_id})" if call_id else ""
            raise EvidenceMissing(f"evidence object {digest}{who} in {self.root} is not a file (a folder or a pipe "
                                  "is in its place)", call_id=call_id, what="object")
        try:
            with open(p, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            who = f" (call {call_id})" if call_id else ""
            raise EvidenceMissing(f"evidence object {digest}{who} is not in {self.root}",
                                  call_id=call_id, what="object") from None
        except OSError as exc:  # a folder in its place, no permission, an I/O error …
            who = f" (call {call_id})" if call_id else ""
            raise EvidenceMissing(f"evidence object {digest}{who} cannot be read from {self.root}: "
                                  f"{exc.strerror or exc}", call_id=call_id, what="object") from exc
        actual = sha256_digest(data)
        if actual != digest:
            who = f" for call {call_id}" if call_id else ""
            raise IntegrityError(f"evidence object {digest}{who} was changed: its bytes hash to {actual}",
                                 digest=digest, actual=actual, call_id=call_id)
        return data

    def put(self, data: bytes) -> str:
        """Store ``data`` atomically and read-only; return its digest.

        Raises:
            IntegrityError: an object with that name exists but holds other bytes.
        """
        digest = sha256_digest(data)
        p = self.path(digest)
        if p.is_file() and self.outside(digest) is None:
            self.get(digest)  # exists: verify instead of overwriting
            return digest  # (a link out of the store is replaced by the object itself)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=p.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o444)
            os.replace(tmp, p)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return digest

    def sync(self) -> None:
        """``fsync`` the store's folders, once each: ``sha256/``, whose entries are the objects
        renamed into place, and the store's own folder, which holds ``sha256/``'s entry.  Each
        object's bytes are synced before its rename (:meth:`put`); without this the renames
        themselves could be lost in a crash, leaving a capsule whose objects are gone.  A folder
        not there (nothing stored) is skipped; a file system that cannot sync a folder
        (``EINVAL``, ``ENOTSUP``) is left as it is (:func:`~.model.sync_folder`).

        Raises:
            OSError: a folder cannot be opened, or syncing it failed (an I/O error …).
        """
        from .model import sync_folder

        for folder in (self.root / "sha256", self.root):
            if folder.is_dir():
                sync_folder(folder)

    def put_file(self, path: str | Path) -> str:
        """Store a file's bytes (read-only open); return the digest."""
        with open(path, "rb") as fh:
            return self.put(fh.read())
