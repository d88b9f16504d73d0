"""One exception tree for replaybook.

Every error replaybook raises on purpose derives from :class:`ReplaybookError`, so a caller
(the CLI, a notebook) can catch one class.  Errors about a particular input carry the file
and, where known, the 1-based line number, and say both in their message.

::

    ReplaybookError
    ├── InputError            bad or unreadable input (a file, a manifest, an argument)
    │   ├── FormatError       a file is not in the format it was given or sniffed as
    │   ├── ManifestError     an incident.yaml is missing fields or names missing files
    │   └── AmbiguousCall     a door call number names several calls of one session
    ├── FrameError            a DataFrame does not satisfy its canonical spec
    ├── JoinError             the join was asked something it cannot answer
    └── ReportError           rendering a review report failed (kernel hang, template, nbconvert)
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "ReplaybookError",
    "InputError",
    "FormatError",
    "ManifestError",
    "AmbiguousCall",
    "FrameError",
    "JoinError",
    "ReportError",
]


class ReplaybookError(Exception):
    """Base class of every error replaybook raises on purpose."""


class InputError(ReplaybookError):
    """Bad or unreadable input.

    Args:
        message: what is wrong, in words a user can act on.
        path: the file concerned, if any.
        line_no: 1-based line number in ``path``, if any.
    """

    def __init__(self, message: str, path: str | Path | None = None, line_no: int | None = None):
        self.path = str(path) if path is not None else None
        self.line_no = line_no
        where = ""
        if self.path:  # (a file name's ESC, CR or newline written out: the message goes to a terminal)
            from ._text import one_line

            where = one_line(self.path) + (f":{line_no}" if line_no else "") + ": "
        super().__init__(where + message)
        self.message = message


class FormatError(InputError):
    """A file is not in the format it was given (or sniffed) as."""


class ManifestError(InputError):
    """An ``incident.yaml`` manifest is malformed or names files that do not exist."""


class AmbiguousCall(InputError):
    """A door call number names several calls of one session (a door that restarted numbers
    its calls from 1 again; merged or damaged logs repeat lines).

    Attributes:
        door_session: the session.
        seq: the number asked for.
        candidates: one dict per call that carries it, in the door's order: ``row`` (0-based
            position in the session's door table), ``seq``, ``ts`` (UTC Timestamp), ``tool``,
            ``object``, ``decision``, ``rule``.
    """

    def __init__(self, message: str, door_session: str, seq: int, candidates: list[dict]):
        super().__init__(message)
        self.door_session, self.seq, self.candidates = door_session, seq, candidates


class FrameError(ReplaybookError):
    """A DataFrame does not have the columns or dtypes its canonical spec requires."""


class JoinError(ReplaybookError):
    """The join was given inputs it cannot work with (e.g. a non-positive window)."""


class ReportError(ReplaybookError):
    """Rendering a review report failed (kernel did not answer, template or export error)."""
