"""replaybook: what did the agent see, in the order it saw it — and can I re-run the evidence?

Load agent transcripts and the door's (MCP gateway's) call log into canonical pandas frames,
join each transcript to the door session it came from, and render a review report.

Public API::

    replaybook.Incident.load("incident.yaml")     # manifest → steps, calls, quarantine, join
    replaybook.load(paths)                        # sniff each file, load into its frame
    replaybook.load_claude_code(paths)            # → LoadResult(frame=steps, quarantine, inputs)
    replaybook.load_door(paths)                   # → LoadResult(frame=calls, quarantine, inputs)
    replaybook.join_sessions(steps, calls)        # → JoinResult
    replaybook.canonical_args(arguments)          # → canonical JSON text

Names are imported on first use, so ``import replaybook`` (and the ``rec`` recorder, the CLI's
``--help``) stays fast; pandas and friends load when a frame is first needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Incident": "incident",
    "load": "loading",
    "Loaded": "loading",
    "JoinResult": "join",
    "join_sessions": "join",
    "load_claude_code": "sources.claude_code",
    "load_door": "sources.door",
    "canonical_args": "canonical",
    "LoadResult": "frames",
    "STEPS": "frames",
    "CALLS": "frames",
    "PAIRS": "frames",
    "SESSIONS": "frames",
    "ACCESS": "frames",
    "QUARANTINE": "frames",
    "ReplaybookError": "errors",
    "InputError": "errors",
    "FormatError": "errors",
    "ManifestError": "errors",
    "FrameError": "errors",
    "JoinError": "errors",
    "ReportError": "errors",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'replaybook' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{mod}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # pragma: no cover
    from .canonical import canonical_args
    from .errors import (FormatError, FrameError, InputError, JoinError, ManifestError,
                         ReplaybookError, ReportError)
    from .frames import ACCESS, CALLS, PAIRS, QUARANTINE, SESSIONS, STEPS, LoadResult
    from .incident import Incident
    from .join import JoinResult, join_sessions
    from .loading import Loaded, load
    from .sources.claude_code import load_claude_code
    from .sources.door import load_door
