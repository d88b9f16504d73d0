"""Canonical frames of the replay-packet tools, declared like :mod:`replaybook.frames`.

``PACKET_STEPS``   one row per step of a session log (with the replay's outcome when given)
``PACKET_CLAIMS``  one row per claims-linter finding, warning or accepted marker
"""

from __future__ import annotations

from ..frames import UTC, Column, FrameSpec

__all__ = ["PACKET_STEPS", "PACKET_CLAIMS", "CLAIM_STATUSES"]

#: Values of ``packet_claims.status``.
CLAIM_STATUSES = ("finding", "warning", "accepted")


def _cols(*specs: tuple[str, str, str]) -> tuple[Column, ...]:
    return tuple(Column(*s) for s in specs)


PACKET_STEPS = FrameSpec(
    "packet_steps",
    _cols(
        ("seq", "Int64", "the step's seq in the session log"),
        ("ts", UTC, "when the command started, UTC (NaT for seed-format lines)"),
        ("cmd", "string", "the command line as recorded (secrets redacted)"),
        ("cwd", "string", "working directory relative to the repository root"),
        ("exit", "Int64", "recorded exit code"),
        ("out_sha", "string", "SHA-256 hex of the normalized recorded output"),
        ("duration_ms", "Int64", "recorded run time, milliseconds"),
        ("commit", "string", "HEAD commit when the step started"),
        ("dirty", "boolean", "the working tree had uncommitted changes when the step started"),
        ("dirty_paths", "string", "those changed paths as recorded, comma-separated (NA: none, or an older log)"),
        ("norm", "string", "normalization rules version"),
        ("redacted", "string", "comma-separated kinds redacted (env:NAME, github_token …)"),
        ("stored", "boolean", "the normalized output is stored beside the log"),
        ("replay_status", "string", "`ok`, `DIVERGED` or `UNCHECKED` (output not comparable) when a replay "
                                    "was given; NA otherwise"),
        ("replay_exit", "Int64", "the replay's exit code (NA: timed out or not replayed)"),
        ("replay_out_sha", "string", "SHA-256 hex of the replay's normalized output"),
        ("replay_reasons", "string", "why the step diverged ('; '-joined)"),
        ("source_file", "string", "the session log"),
        ("line_no", "Int64", "1-based line in source_file"),
    ),
    "One row per recorded command of a replay packet, with the replay outcome when known.",
)

PACKET_CLAIMS = FrameSpec(
    "packet_claims",
    _cols(
        ("line_no", "Int64", "1-based line in source_file"),
        ("status", "string", "one of CLAIM_STATUSES"),
        ("kind", "string", "finding or warning kind (claims.FINDING_KINDS / WARNING_KINDS, or log.CHAIN_KINDS for "
                           "damage to the log's chain); NA when accepted"),
        ("seq", "Int64", "the cited step; NA for unsupported claims and malformed markers"),
        ("step_exit", "Int64", "exit code of the cited step, when it is in the log"),
        ("sentence", "string", "the sentence, whitespace collapsed; NA for damage to the log's chain"),
        ("message", "string", "what is wrong, in words; NA when accepted"),
        ("source_file", "string", "the PR body, or the session log for damage to its chain"),
    ),
    "One row per claims-linter result: findings, warnings, and accepted markers.",
)
