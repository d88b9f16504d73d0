"""A capsule built from a door log holding a call whose arguments the door did not log
(``arguments: null`` with ``arguments_bytes`` / ``arguments_digest``: too large)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from replaybook.capsule import build_capsule
from replaybook.capsule.digest import door_request_digest, request_digest

REPO = Path(__file__).resolve().parents[2]
A1 = "door/analyst/door-20260913T100005-a1.jsonl"


def _demo_with_unlogged_arguments(tmp_path: Path, extra: dict | None = None) -> Path:
    inc = tmp_path / "demo"
    shutil.copytree(REPO / "data" / "demo", inc)
    p = inc / A1
    lines = p.read_text().splitlines()
    o = json.loads(lines[2])  # seq 3, summarise
    o.update(arguments=None, arguments_bytes=70000, arguments_digest="sha256:" + "a" * 64, decision="deny",
             rule="door:arguments-too-large", rows=None, bytes=None)
    lines[2] = json.dumps(o)
    if extra is not None:
        lines.append(json.dumps(extra))
    p.write_text("\n".join(lines) + "\n")
    return inc


def test_a_call_whose_arguments_were_not_logged_builds_and_is_never_digested_as_no_arguments(tmp_path):
    """Such a call had stopped ``capsule build`` (``TypeError: boolean value of NA is
    ambiguous``, exit 1) when a step's id matched no call, and its request digest had been that
    of ``{}``, the digest of a call with no arguments."""
    inc = _demo_with_unlogged_arguments(tmp_path)
    cap = build_capsule(inc, None, tmp_path / "cap")
    ev = {e.call_id: e for e in cap.tool_evidence}
    unlogged = ev["door-20260913T100005-a1#3"]
    assert unlogged.request_digest == door_request_digest("warehouse-files", "summarise", None,
                                                         "sha256:" + "a" * 64)
    assert unlogged.request_digest != request_digest("warehouse-files", "summarise", {})
    assert unlogged.request_digest != door_request_digest("warehouse-files", "summarise", None, None)
    # the same call in the other session, its arguments logged, keeps its digest of them
    assert ev["door-20260913T100052-b7#3"].request_digest == request_digest(
        "warehouse-files", "summarise", {"path": "demo/cars.xpt", "columns": ["mpg", "cyl"]})
