"""Errors of the replay-packet tools, rooted in :mod:`replaybook.errors`.

::

    ReplaybookError
    └── PacketError               a packet could not be recorded, replayed or linted
        ├── PacketLogError        a session log line is malformed (also an InputError: file + line)
        └── RulesError            ``[tool.replaybook.normalize]`` in pyproject.toml is malformed

A replay that cannot run is not an exception: it is the ``UNRUNNABLE`` verdict (replay.py).
"""

from __future__ import annotations

from ..errors import FormatError, InputError, ReplaybookError

__all__ = ["PacketError", "PacketLogError", "RulesError"]


class PacketError(ReplaybookError):
    """Base class of the packet tools' errors (git failed, a lock could not be taken …)."""


class PacketLogError(FormatError, PacketError):
    """A session log (``session.jsonl``) is unreadable or a line is malformed.

    ``path`` and ``line_no`` (1-based) name the place; both are in the message.
    """


class RulesError(InputError, PacketError):
    """The project's normalization rules (``[tool.replaybook.normalize]``) are malformed."""

