"""The capsule package's errors, all under :class:`replaybook.errors.ReplaybookError`.

::

    ReplaybookError
    └── CapsuleError                  anything the capsule package refuses on purpose
        ├── CapsuleFormatError        capsule.yaml, a run record or a capture file is malformed
        │                             (also an InputError: the CLI exits 2 and names the file)
        ├── IntegrityError            an evidence object does not hash to its recorded digest
        ├── ReadBackError             a file the build just wrote does not read back as written
        ├── EvidenceMissing           a forensic replay needs evidence the capsule does not hold
        ├── AuthorityUnproven         the effective principal, scopes or policy version is unknown
        ├── NetworkBlocked            network access was attempted inside a forensic replay
        └── ToolDenied                the policy decision point refused a tool call
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError, ReplaybookError

__all__ = [
    "CapsuleError",
    "CapsuleFormatError",
    "IntegrityError",
    "ReadBackError",
    "EvidenceMissing",
    "AuthorityUnproven",
    "NetworkBlocked",
    "ToolDenied",
]


class CapsuleError(ReplaybookError):
    """Base class of every error the capsule package raises on purpose."""


class CapsuleFormatError(CapsuleError, InputError):
    """A capsule, run record or capture file is unreadable or does not match its schema.

    Args:
        message: what is wrong (names the offending field).
        path: the file concerned, if any.
        line_no: 1-based line number, if known.
    """

    def __init__(self, message: str, path: str | Path | None = None, line_no: int | None = None):
        InputError.__init__(self, message, path, line_no)


class IntegrityError(CapsuleError):
    """An evidence object's bytes do not hash to the digest recorded for it.

    Attributes:
        digest: the recorded digest (``sha256:<hex>``).
        actual: the digest of the bytes found, or ``None`` when unknown.
        call_id: the tool call whose evidence it is, when known.
    """

    def __init__(self, message: str, *, digest: str | None = None, actual: str | None = None,
                 call_id: str | None = None):
        super().__init__(message)
        self.digest, self.actual, self.call_id = digest, actual, call_id


class ReadBackError(CapsuleError):
    """A file ``capsule build`` has just written (its ``capsule.yaml``) does not read back as
    written: shorter, other bytes, or the disk cannot read it.  The build has failed (the CLI
    exits 2 naming the file and removes what the build made).

    Message: ``the capsule just written cannot be read back: <path>: <why>``.

    Attributes:
        path: the file.
        why: what was found (``1234 bytes read back, 2468 written``, ``its bytes differ from
            those written``, or the system's reason: ``Input/output error``).
    """

    def __init__(self, path: str | Path, why: str):
        from .._text import one_line

        super().__init__(f"the capsule just written cannot be read back: {one_line(str(path))}: {why}")
        self.path, self.why = str(path), why


class EvidenceMissing(CapsuleError):
    """A forensic replay asked for evidence the capsule does not hold (the replay stops).

    Attributes:
        server, method: the tool call asked for.
        request_digest: its request digest (``sha256:<hex>``).
        call_id: the captured call it would have been, when known.
        what: ``response`` (no captured response), ``object`` (the object is not in the store)
            or ``policy`` (no captured policy decision).
    """

    def __init__(self, message: str, *, server: str | None = None, method: str | None = None,
                 request_digest: str | None = None, call_id: str | None = None, what: str = "response"):
        super().__init__(message)
        self.server, self.method, self.request_digest = server, method, request_digest
        self.call_id, self.what = call_id, what


class AuthorityUnproven(CapsuleError):
    """The effective identity of a run cannot be established.

    Attributes:
        missing: the authority fields that are absent (``principal``, ``scopes``, ``policy_version``).
    """

    def __init__(self, message: str, *, missing: list[str] | tuple[str, ...] = ()):
        super().__init__(message)
        self.missing = list(missing)


class NetworkBlocked(CapsuleError):
    """Network access was attempted inside a forensic replay and was refused.

    Attributes:
        api: the function that was called (``socket.connect``, ``socket.create_connection`` …).
        address: the address asked for, as text.
    """

    def __init__(self, message: str, *, api: str = "", address: str = ""):
        super().__init__(message)
        self.api, self.address = api, address


class ToolDenied(CapsuleError):
    """The policy decision point refused a tool call (what the agent sees on a ``deny``).

    Attributes:
        server, method: the call refused.
        rule: the rule that decided.
        result: ``deny`` or ``ask``.
    """

    def __init__(self, message: str, *, server: str = "", method: str = "", rule: str | None = None,
                 result: str = "deny"):
        super().__init__(message)
        self.server, self.method, self.rule, self.result = server, method, rule, result
