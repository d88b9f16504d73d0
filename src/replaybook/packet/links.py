"""Which transcript tool call recorded each step of a replay packet.

The packet's session log and the agent's transcript are two records of one session: the agent
ran ``replaybook packet record -- CMD`` (or the ``rec`` shell function, ``rec.sh``) through its
shell tool, and the recorder wrote a step.  Nothing carries an id from one to the other, so the
pairing is by the command and the time — the same rule shape the transcript ↔ door join uses.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

__all__ = ["recording_calls"]


def _na(v: Any) -> bool:
    try:
        return v is None or bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


#: a command line that records a step into a replay packet: ``replaybook packet record …`` or the
#: ``rec`` shell function / ``rec.sh`` script the packet docs give
_RECORDS = re.compile(r"\breplaybook\s+packet\s+record\b|(?:^|[\s;&|(/])rec(?:\.sh)?\s")


def _command_text(arguments: Any) -> str:
    """The strings of a tool call's arguments (a shell tool's ``command``, Codex's ``cmd`` list …)
    joined by spaces, whitespace runs as one space."""
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)

    walk(arguments)
    return " ".join(" ".join(out).split())


def recording_calls(packet_steps: pd.DataFrame, steps: pd.DataFrame | None,
                    window_s: float = 120.0) -> list[tuple[str, int] | None]:
    """For each replay-packet step (:data:`~replaybook.packet.frames.PACKET_STEPS` rows): the
    transcript tool call that recorded it — ``(transcript_id, seq)`` of a ``tool_call`` row of
    ``steps`` (:data:`~replaybook.frames.STEPS`) whose arguments hold a recording command
    (``replaybook packet record``, ``rec``, ``rec.sh``) and the step's command (whitespace runs
    as one space), made at most ``window_s`` seconds before the step started and no more than
    1 s after it (the transcript writes the call before the command runs; the clocks are one
    machine's); or ``None``.  Each call records one step and each step has one call: the pairs
    that fit are taken nearest first; a step without a start time (a seed-format line) takes
    the first unused call with its command, in transcript order."""
    out: list[tuple[str, int] | None] = [None] * len(packet_steps)
    if steps is None or not len(steps) or not len(packet_steps):
        return out
    tc = steps[steps["kind"].eq("tool_call").fillna(False).to_numpy(bool)]
    cands = []
    for tid, seq, ts, args in zip(tc["transcript_id"], tc["seq"], tc["ts"], tc["arguments"]):
        text = _command_text(args)
        if text and _RECORDS.search(text + " "):
            cands.append((None if _na(ts) else pd.Timestamp(ts), str(tid), int(seq), text))
    if not cands:
        return out
    # timed steps: every (step, call) pair that fits, nearest first, each step and call taken
    # once — so two steps running the same command a few seconds apart each get their own call
    pairs = []
    untimed = []
    for i, (cmd, ts) in enumerate(zip(packet_steps["cmd"], packet_steps["ts"])):
        if _na(cmd) or not str(cmd).strip():
            continue
        want = " ".join(str(cmd).split())
        hits = [j for j, c in enumerate(cands) if want in c[3]]
        if _na(ts):
            untimed.append((i, hits))
            continue
        t = pd.Timestamp(ts)
        for j in hits:
            if cands[j][0] is None:
                continue
            d = (t - cands[j][0]).total_seconds()  # the call is made before the step starts
            if -_RECORD_SLACK_S <= d <= window_s:
                pairs.append((abs(d), i, j))
    used: set[int] = set()
    for _, i, j in sorted(pairs):
        if out[i] is None and j not in used:
            used.add(j)
            out[i] = (cands[j][1], cands[j][2])
    for i, hits in untimed:  # (a seed-format line: no time) the first unused call, in order
        pick = next((j for j in hits if j not in used), None)
        if pick is not None:
            used.add(pick)
            out[i] = (cands[pick][1], cands[pick][2])
    return out


#: how far after a step's start its recording call's time may lie (s): the transcript writes the
#: call before the command runs, on the same machine's clock
_RECORD_SLACK_S = 1.0
