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
"""

from .canonical import canonical_args
from .errors import (FormatError, FrameError, InputError, JoinError, ManifestError,
                     ReplaybookError, ReportError)
from .frames import CALLS, PAIRS, QUARANTINE, SESSIONS, STEPS, LoadResult
from .incident import Incident
from .join import JoinResult, join_sessions
from .loading import Loaded, load
from .sources.claude_code import load_claude_code
from .sources.door import load_door

__version__ = "0.1.0"

__all__ = [
    "Incident",
    "load",
    "Loaded",
    "JoinResult",
    "LoadResult",
    "join_sessions",
    "load_door",
    "load_claude_code",
    "canonical_args",
    "STEPS",
    "CALLS",
    "PAIRS",
    "SESSIONS",
    "QUARANTINE",
    "ReplaybookError",
    "InputError",
    "FormatError",
    "ManifestError",
    "FrameError",
    "JoinError",
    "ReportError",
    "__version__",
]

