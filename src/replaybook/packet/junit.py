"""JUnit XML for a replay verdict, for CI systems that show test reports.

One ``<testsuite name="replaybook.packet">`` with one ``<testcase>`` per step (``classname`` is
the log's file name, ``name`` is ``seq N: <cmd>`` with control characters escaped
(:func:`.log.printable`), ``time`` in seconds).  A diverged step has a
``<failure type="DIVERGED">`` (``UNCHECKED`` for a step whose output could not be compared)
whose text is the reasons, notes and diff; a step that matched but whose stored output was
edited has a ``<failure type="EDITED_OUTPUT">``.  A DIVERGED replay whose verdict names problems
its steps do not show (the PR head is not the last recorded state, the log's chain is broken, a
stored output no step names was edited) adds a ``<testcase name="replay">`` with a ``<failure type="DIVERGED">`` listing
them, so a report never shows no failure for a verdict that is not PASS.  An UNRUNNABLE replay
adds a ``<testcase name="replay">`` with an ``<error type="UNRUNNABLE">``.  The suite's
``<properties>`` are ``verdict`` (the headline), ``commit``, ``checkout`` and ``line_ends`` (the
line-end settings the replay's clone had, in words: :func:`~.replay.line_end_words`; empty when
no clone was made).  The format follows
the de-facto JUnit schema read by Jenkins, GitLab and GitHub test-report actions.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

from .errors import PacketError
from .log import printable
from .replay import PacketVerdict, line_end_words

__all__ = ["junit_xml", "write_junit"]


def _clean(text: str) -> str:
    # XML 1.0 forbids most control characters; outputs may hold them.
    return "".join(ch if ch in "\t\n\r" or ord(ch) >= 0x20 else f"\\x{ord(ch):02x}" for ch in text)


def junit_xml(verdict: PacketVerdict) -> str:
    """The JUnit XML document (UTF-8 text, with XML declaration) for ``verdict``."""
    classname = Path(verdict.log_path).name
    # problems a step's own failure does not already show (an edited stored output does)
    on_steps = {f"step {s.seq}'s {n}" for s in verdict.steps if s.stored_edited for n in s.notes}
    others = [p for p in verdict.problems if p not in on_steps] if verdict.verdict == "DIVERGED" else []
    problems = bool(others)
    failures = sum(1 for s in verdict.steps if not s.ok or s.stored_edited) + problems
    errors = 1 if verdict.verdict == "UNRUNNABLE" else 0
    total_s = sum((s.duration_ms or 0) for s in verdict.steps) / 1000
    suites = ET.Element("testsuites")
    suite = ET.SubElement(suites, "testsuite", name="replaybook.packet",
                          tests=str(len(verdict.steps) + errors + problems), failures=str(failures),
                          errors=str(errors), skipped="0", time=f"{total_s:.3f}")
    props = ET.SubElement(suite, "properties")
    for k, v in (("verdict", verdict.headline), ("commit", verdict.commit or ""),
                 ("checkout", verdict.checkout or ""), ("line_ends", line_end_words(verdict.line_ends) or "")):
        ET.SubElement(props, "property", name=k, value=_clean(v))
    for s in verdict.steps:
        case = ET.SubElement(suite, "testcase", classname=classname, name=printable(f"seq {s.seq}: {s.cmd}"),
                             time=f"{(s.duration_ms or 0) / 1000:.3f}")
        if not s.ok:
            fail = ET.SubElement(case, "failure", type=s.status, message=_clean("; ".join(s.reasons)))
            body = list(s.reasons) + [f"note: {n}" for n in s.notes]
            if s.diff:
                body += ["", s.diff]
            fail.text = _clean("\n".join(body))
        elif s.stored_edited:
            fail = ET.SubElement(case, "failure", type="EDITED_OUTPUT",
                                 message="the step matched, but its stored output was edited after recording")
            fail.text = _clean("\n".join(f"note: {n}" for n in s.notes))
        elif s.notes:
            ET.SubElement(case, "system-out").text = _clean("\n".join(s.notes))
    if problems:
        case = ET.SubElement(suite, "testcase", classname=classname, name="replay", time="0")
        ET.SubElement(case, "failure", type="DIVERGED", message=_clean("; ".join(others))).text = \
            _clean("\n".join(others))
    if errors:
        case = ET.SubElement(suite, "testcase", classname=classname, name="replay", time="0")
        ET.SubElement(case, "error", type="UNRUNNABLE", message=_clean(verdict.reason or "")).text = \
            _clean(verdict.reason or "")
    if verdict.warnings:
        ET.SubElement(suite, "system-err").text = _clean("\n".join(verdict.warnings))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def write_junit(verdict: PacketVerdict, path: str | os.PathLike) -> Path:
    """Write :func:`junit_xml` to ``path`` (UTF-8).

    Raises:
        PacketError: the file cannot be written.
    """
    path = Path(path)
    try:
        path.write_text(junit_xml(verdict), encoding="utf-8")
    except OSError as exc:
        raise PacketError(f"cannot write JUnit XML to {path}: {exc}") from exc
    return path
