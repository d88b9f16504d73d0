"""Replay packets: turn an agent session into evidence a reviewer can re-run.

A packet is a session log (``session.jsonl``, one JSON line per recorded command) plus,
optionally, the normalized outputs beside it.  See ``docs/packets.md``.

Public API::

    record(["pytest", "-q"], "session.jsonl")      # run, print through, append one step → RecordResult
    replay("session.jsonl", checkout=None)         # clean checkout (a throwaway clone) re-run → PacketVerdict (PASS/DIVERGED/UNRUNNABLE)
    lint_claims("PR_BODY.md", "session.jsonl")     # [seq:N] markers vs the log → ClaimsReport
    packet_summary("session.jsonl", "PR_BODY.md")  # steps and claims DataFrames for reports
    load_rules(repo_root).normalize(text, root)    # normalization → Normalized(text, fired)
    Redactor.from_env(os.environ).redact(text)     # secret redaction → Redacted(text, kinds)
    read_log(path) / append_step(path, fields)     # the log format, locked appends
    write_junit(verdict, "packet.xml")             # JUnit XML for CI

``REC_SH`` is the path of ``rec.sh``, the shell function file to ``source``.
"""

from __future__ import annotations

from pathlib import Path

from .claims import ClaimsReport, Finding, lint_claims
from .errors import PacketError, PacketLogError, RulesError
from .junit import junit_xml, write_junit
from .log import LOG_FIELDS, LOG_SCHEMA, SessionLog, append_step, read_log
from .normalize import BUILTIN_RULES, BUILTIN_VERSION, Normalized, RuleSet, load_rules, normalize
from .record import RecordResult, record
from .redact import Redactor
from .replay import PacketVerdict, StepResult, replay
from .summary import packet_summary

__all__ = [
    "REC_SH",
    "record",
    "RecordResult",
    "replay",
    "PacketVerdict",
    "StepResult",
    "lint_claims",
    "ClaimsReport",
    "Finding",
    "packet_summary",
    "normalize",
    "load_rules",
    "RuleSet",
    "Normalized",
    "BUILTIN_RULES",
    "BUILTIN_VERSION",
    "Redactor",
    "read_log",
    "append_step",
    "SessionLog",
    "LOG_FIELDS",
    "LOG_SCHEMA",
    "junit_xml",
    "write_junit",
    "PacketError",
    "PacketLogError",
    "RulesError",
]

#: Path of the shell function file (``source`` it to get ``rec``).
REC_SH = str(Path(__file__).with_name("rec.sh"))
