"""Fixtures for the report tests: a tiny hostile incident, rendered once per session.

The tiny incident has one transcript and one door session (two calls, the second refused).
Its evidence carries HTML that must come out as text: a ``<script>`` in the user prompt and in
the refused call's tool result, and an ``<img onerror>`` in a damaged transcript line (which
lands in the quarantine).

``rendered_tiny`` renders it in a *subprocess* whose PATH does not contain the venv — the way a
cron job or a CLI started by absolute path would — so every report test also checks that the
kernel runs this interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO = REPO_ROOT / "data" / "demo" / "incident.yaml"

PROMPT_XSS = '<script>alert("prompt-xss")</script> average mpg?'
RESULT_XSS = "refused by rule no-dotenv <script>alert('result-xss')</script>"
QUARANTINE_XSS = '{"type": "user", <img src=x onerror=alert("q-xss")>'

SESSION = "11111111-aaaa-4aaa-8aaa-111111111111"
DOOR_SESSION = "door-sess-tiny"


def _line(uuid: str, parent: str | None, ts: str, typ: str, message: dict, **extra) -> str:
    d = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/a",
         "sessionId": SESSION, "version": "2.0.55", "type": typ, "uuid": uuid, "timestamp": ts,
         "message": message}
    d.update(extra)
    return json.dumps(d)


def write_tiny_incident(root: Path) -> Path:
    """Write the tiny incident under ``root/tiny-incident`` and return its ``incident.yaml``."""
    inc = root / "tiny-incident"
    (inc / "transcripts").mkdir(parents=True)
    (inc / "door" / "analyst").mkdir(parents=True)
    lines = [
        _line("u1", None, "2026-09-13T10:00:00.000Z", "user", {"role": "user", "content": PROMPT_XSS}),
        _line("a1", "u1", "2026-09-13T10:00:05.000Z", "assistant",
              {"model": "claude-sonnet-4-5", "id": "msg_1", "type": "message", "role": "assistant",
               "content": [{"type": "tool_use", "id": "toolu_read_1", "name": "mcp__door__read_object",
                            "input": {"path": "demo/cars.csv"}}],
               "usage": {"input_tokens": 5, "output_tokens": 9}}, requestId="req_1"),
        _line("r1", "a1", "2026-09-13T10:00:05.900Z", "user",
              {"role": "user", "content": [{"tool_use_id": "toolu_read_1", "type": "tool_result",
                                            "content": "ok: 32 rows", "is_error": False}]}),
        QUARANTINE_XSS,
        _line("a2", "r1", "2026-09-13T10:00:20.000Z", "assistant",
              {"model": "claude-sonnet-4-5", "id": "msg_2", "type": "message", "role": "assistant",
               "content": [{"type": "tool_use", "id": "toolu_env_2", "name": "mcp__door__read_object",
                            "input": {"path": "reference/.env"}}],
               "usage": {"input_tokens": 5, "output_tokens": 9}}, requestId="req_2"),
        _line("r2", "a2", "2026-09-13T10:00:20.800Z", "user",
              {"role": "user", "content": [{"tool_use_id": "toolu_env_2", "type": "tool_result",
                                            "content": RESULT_XSS, "is_error": True}]}),
    ]
    (inc / "transcripts" / f"{SESSION}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    door = [
        {"ts": "2026-09-13T10:00:05.400Z", "seq": 1, "session": DOOR_SESSION, "agent": "analyst",
         "tool": "read_object", "arguments": {"path": "demo/cars.csv"}, "object": "demo/cars.csv",
         "decision": "allow", "rule": "allow-demo", "rows": 32, "bytes": 2048},
        {"ts": "2026-09-13T10:00:20.400Z", "seq": 2, "session": DOOR_SESSION, "agent": "analyst",
         "tool": "read_object", "arguments": {"path": "reference/.env"}, "object": "reference/.env",
         "decision": "deny", "rule": "no-dotenv", "rows": None, "bytes": None},
    ]
    (inc / "door" / "analyst" / f"{DOOR_SESSION}.jsonl").write_text(
        "".join(json.dumps(d) + "\n" for d in door), encoding="utf-8")
    (inc / "incident.yaml").write_text(
        "title: Tiny <b>hostile</b> incident\ntranscripts:\n  - transcripts/*.jsonl\ndoor:\n  - door/\nwindow_s: 60\n",
        encoding="utf-8")
    return inc / "incident.yaml"


def clean_env() -> dict:
    """The environment without the venv on PATH (nor VIRTUAL_ENV)."""
    venv_bin = os.path.dirname(sys.executable)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep)
                                  if p and os.path.abspath(p) != os.path.abspath(venv_bin)) or "/usr/bin:/bin"
    return env


def render_in_subprocess(incident: Path, out_dir: Path) -> dict:
    """Run ``render_report`` in a fresh interpreter (venv python by absolute path, venv not on
    PATH); return ``{"ipynb", "html", "seconds", "attempts", "findings", "checksums"}``."""
    code = (
        "import json, sys\n"
        "from replaybook.report.render import render_report\n"
        "p = render_report(sys.argv[1], sys.argv[2], timeout=300)\n"
        "print(json.dumps({'ipynb': str(p.ipynb), 'html': str(p.html), 'seconds': p.seconds, "
        "'attempts': p.attempts, 'findings': p.findings, 'checksums': p.checksums and str(p.checksums)}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(incident), str(out_dir)], env=clean_env(),
                          capture_output=True, text=True, timeout=900, cwd="/")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def tiny_incident(tmp_path_factory) -> Path:
    """The tiny hostile incident's ``incident.yaml``."""
    return write_tiny_incident(tmp_path_factory.mktemp("inc"))


@pytest.fixture(scope="session")
def rendered_tiny(tiny_incident, tmp_path_factory) -> dict:
    """The tiny incident rendered once (subprocess, venv not on PATH)."""
    return render_in_subprocess(tiny_incident, tmp_path_factory.mktemp("out"))


@pytest.fixture(scope="session")
def hostile() -> dict:
    """The hostile strings planted in the tiny incident."""
    return {"prompt": PROMPT_XSS, "result": RESULT_XSS, "quarantine": QUARANTINE_XSS}


@pytest.fixture(scope="session")
def render_subprocess():
    """:func:`render_in_subprocess` (render in a fresh interpreter, venv not on PATH)."""
    return render_in_subprocess


@pytest.fixture(scope="session")
def demo_incident() -> Path:
    """``data/demo/incident.yaml`` (committed; regenerate with ``make demo-data``)."""
    assert DEMO.exists(), f"demo incident {DEMO} is missing: run `make demo-data`"
    return DEMO


@pytest.fixture(scope="session")
def rendered_demo(demo_incident, tmp_path_factory) -> dict:
    """The demo incident rendered once (subprocess, venv not on PATH)."""
    return render_in_subprocess(demo_incident, tmp_path_factory.mktemp("demo-out"))
