"""Tool calls the agent's user declined (or stopped): a declined call never ran, so no door received it.

A client that asks its user before running a tool writes, when the user says no, a tool result
of its own in place of the tool's answer.  Where that result's text is the client's fixed
wording, a ``tool_call`` step can be told apart from a call that ran:

* Claude Code (seen in 2.0.42 and 2.0.55 transcripts): ``is_error: true`` and a text starting
  ``The user doesn't want to proceed with this tool use.`` (the user chose "No", with or without
  a reason after it) or ``The user doesn't want to take this action right now.`` (the user pressed
  Escape at the prompt; the next user line is ``[Request interrupted by user for tool use]``).
  A sub-agent's call its user declined reads ``Permission for this tool use was denied.`` instead
  (2.1: the sub-agent is told to try another way rather than to stop; a reason the user typed
  follows ``The user said:``).  A call a permission rule or mode refused without asking
  (``Permission to use … has been denied``, ``… auto-denied in dontAsk mode``) is not read as
  declined: no user was asked, so it did not wait.

Claude Code writes the same "doesn't want to proceed" result for a call its user stopped with
Escape while it ran (its ``toolUseResult``, not read into the frame, tells the two apart: "User
rejected tool use" for a stopped call, as public reconstructions of its tool executor show; no
such record is in the real files tested), so a row read as declined may have run and reached a
door: the report says "declined or stopped", and only a call that came while the user was being
asked — beyond the window of the step's time — is kept from it.

Codex CLI records no such result for a declined call and Gemini CLI an ``error`` status shared
with tools' own failures, so their steps are never read as declined here.

The join does not let a declined step take a door call that came while its user was being asked
(:mod:`replaybook.join`, "A call that waited"), and the report says why such a step has no door
call.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["DECLINED_RESULT_PREFIXES", "declined_by_user"]

#: per client (``steps.client``), the starts of the result text it writes for a call its user
#: declined
DECLINED_RESULT_PREFIXES: dict[str, tuple[str, ...]] = {
    "claude-code": ("The user doesn't want to proceed with this tool use.",
                    "The user doesn't want to take this action right now.",
                    "Permission for this tool use was denied."),
}


def declined_by_user(steps: pd.DataFrame) -> np.ndarray:
    """Per row of ``steps`` (a :data:`~replaybook.frames.STEPS` frame, or any frame with its
    ``client``, ``is_error`` and ``result_text`` columns), True where the row's result is the one its
    client writes for a call the user declined (``is_error`` true and ``result_text`` starting with
    one of :data:`DECLINED_RESULT_PREFIXES` of that client); a bool array of ``len(steps)``.  A
    frame without those columns has no declined rows."""
    out = np.zeros(len(steps), bool)
    if not len(steps) or not {"client", "is_error", "result_text"} <= set(steps.columns):
        return out
    err = steps["is_error"].fillna(False).to_numpy(bool)
    if not err.any():
        return out
    client = steps["client"].astype("string")
    text = steps["result_text"].astype("string")
    for name, prefixes in DECLINED_RESULT_PREFIXES.items():
        rows = err & client.eq(name).fillna(False).to_numpy(bool)
        if rows.any():
            out[rows] = text[rows].str.startswith(prefixes).fillna(False).to_numpy(bool)
    return out
