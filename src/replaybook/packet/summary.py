"""``packet_summary``: the replay packet as tables, for the review report and the workbook."""

from __future__ import annotations

import os

from .claims import ClaimsReport, EditedOutput, lint_claims, read_stored_output
from .frames import PACKET_CLAIMS, PACKET_STEPS
from .log import outputs_dir_for, read_log
from .redact import redact_command
from .replay import PacketVerdict

__all__ = ["packet_summary"]


def packet_summary(log_path: str | os.PathLike, body_path: str | os.PathLike | None = None,
                   replay: PacketVerdict | None = None) -> dict:
    """Summarize a replay packet.  Pure: reads the files, runs nothing, writes nothing.

    Args:
        log_path: the session log (seed-format lines are fine).
        body_path: the PR body to lint against the log, if any.
        replay: a :class:`~replaybook.packet.replay.PacketVerdict` from an earlier
            :func:`~replaybook.packet.replay.replay`, if any; its outcome joins the steps table.

    Returns:
        ``{"steps": DataFrame (PACKET_STEPS), "claims": DataFrame (PACKET_CLAIMS),
        "verdict": "PASS" | "DIVERGED" | "UNRUNNABLE" | None, "headline": str | None,
        "chain": "chained" | "unchained" | "damaged", "log_path": str, "body_path": str | None
        (the paths as given, ``..`` worked out), "outputs": {seq: {"path": str, "text": str | None,
        "edited": bool}} for each step whose ``stored`` is true — the stored normalized output
        (``session.outputs/<out_sha>.txt``) as :func:`~.claims.read_stored_output` reads it:
        ``text`` None and ``edited`` True when the file no longer hashes to ``out_sha``, ``text``
        None and ``edited`` False when it is not there,
        "counts": {"steps", "failing_steps", "diverged", "findings", "warnings", "markers",
        "accepted_markers", "accepted_steps"}}``: ``markers`` and ``accepted_markers`` count ``[seq:N]``
        markers (each is accepted or has a finding); ``accepted_steps`` counts the steps cited only
        by accepted markers (:attr:`~.claims.ClaimsReport.accepted_steps`).
        Damage the log's chain shows is in the claims frame too (status ``finding``, ``kind`` a
        :data:`~.log.CHAIN_KINDS` kind, ``line_no`` and ``source_file`` naming the log's line),
        and counts as findings, when a body is given.

    Raises:
        PacketLogError: the log is unreadable or malformed (file and line named).
        InputError: the body cannot be read.
    """
    # shown as given, with "." and ".." parts worked out (incident/../pr-repo/session.jsonl → pr-repo/…)
    log_path = os.path.normpath(log_path)
    body_path = os.path.normpath(body_path) if body_path is not None else None
    log = read_log(log_path)
    by_seq = {r.seq: r for r in (replay.steps if replay else [])}
    rows = []
    for s in log.steps:
        r = by_seq.get(s.seq)
        rows.append({
            "seq": s.seq, "ts": s.get("ts"), "cmd": redact_command(s.cmd)[0], "cwd": s.get("cwd"), "exit": s.exit,
            "out_sha": s.get("out_sha"), "duration_ms": s.get("duration_ms"), "commit": s.get("commit"),
            "dirty": s.get("dirty"), "dirty_paths": ", ".join(map(str, s.get("dirty_paths") or [])) or None,
            "norm": s.get("norm"),
            "redacted": ",".join(s.get("redacted") or []) or None, "stored": s.get("stored"),
            "replay_status": r.status if r else None, "replay_exit": r.exit if r else None,
            "replay_out_sha": r.out_sha if r else None,
            "replay_reasons": "; ".join(r.reasons) or None if r else None,
            "source_file": str(log_path), "line_no": s.line_no,
        })
    steps = PACKET_STEPS.build(rows)
    out_dir = outputs_dir_for(log_path)
    outputs = {}
    for s in log.steps:
        if s.get("stored") is True:
            got = read_stored_output(out_dir, s.get("out_sha"))
            outputs[s.seq] = {"path": str(out_dir / f"{s.get('out_sha')}.txt"),
                              "text": got if isinstance(got, str) else None,
                              "edited": isinstance(got, EditedOutput)}
    report: ClaimsReport | None = None
    claims = PACKET_CLAIMS.empty()
    if body_path is not None:
        report = lint_claims(body_path, log_path)
        exits = {s.seq: s.exit for s in log.steps}
        crow = []
        items = ([("finding", f) for f in report.findings] + [("warning", w) for w in report.warnings]
                 + [("accepted", a) for a in report.accepted_markers])
        for status, f in sorted(items, key=lambda it: (it[1].line, it[1].seq or 0)):
            # (a marker citing a step beyond 64 bits names no step: its message says what it cites)
            seq = f.seq if f.seq is None or -(2**63) <= f.seq < 2**63 else None
            crow.append({"line_no": f.line, "status": status,
                         "kind": None if status == "accepted" else f.kind, "seq": seq,
                         "step_exit": exits.get(seq) if seq is not None else None,
                         "sentence": f.sentence, "message": f.message or None,
                         "source_file": str(body_path)})
        for lf in report.log_findings:
            crow.append({"line_no": lf.line_no, "status": "finding", "kind": lf.kind, "seq": None, "step_exit": None,
                         "sentence": None, "message": lf.message, "source_file": str(log_path)})
        claims = PACKET_CLAIMS.build(crow)
    return {
        "steps": steps,
        "claims": claims,
        "verdict": replay.verdict if replay else None,
        "headline": replay.headline if replay else None,
        "chain": log.chain,
        "log_path": log_path,
        "body_path": body_path,
        "outputs": outputs,
        "counts": {
            "steps": len(log.steps),
            "failing_steps": sum(1 for s in log.steps if s.exit != 0),
            "diverged": len(replay.diverged) if replay else None,
            "findings": len(report.findings) + len(report.log_findings) if report else None,
            "warnings": len(report.warnings) if report else None,
            "markers": report.markers if report else None,
            "accepted_markers": len(report.accepted_markers) if report else None,
            "accepted_steps": len(report.accepted_steps) if report else None,
        },
    }
