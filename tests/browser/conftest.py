"""Fixtures for the real-browser tests: a JupyterLab server and headless Debian Chromium.

* ``chromium`` — ``/usr/bin/chromium`` (never a Playwright browser download).  Missing: the
  tests are skipped, unless ``REPLAYBOOK_REQUIRE_BROWSER=1`` (CI), which makes them fail.
* ``lab_server`` — JupyterLab on 127.0.0.1, a free port, a random token, ``--allow-root``,
  ``--no-browser``, a fresh workspaces dir, a settings override that turns the news popup off,
  its root a temporary copy of ``notebooks/`` and ``data/demo/``.  Stopped by its own process
  id at teardown (after asking it to shut its kernels down).
* ``lab_page`` — a Playwright page in headless Chromium whose requests may go to the server
  only: every request leaving 127.0.0.1 is aborted and recorded in ``page.blocked``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = REPO / "test-artifacts"


def _missing(msg: str):
    if os.environ.get("REPLAYBOOK_REQUIRE_BROWSER") == "1":
        pytest.fail(msg + "; REPLAYBOOK_REQUIRE_BROWSER=1 forbids skipping", pytrace=False)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's Chromium (skip when missing, fail when REPLAYBOOK_REQUIRE_BROWSER=1)."""
    if not (CHROMIUM.exists() and os.access(CHROMIUM, os.X_OK)):
        _missing(f"{CHROMIUM} not found (apt-get install chromium)")
    for mod in ("playwright", "jupyterlab", "ipywidgets", "anywidget"):
        try:
            __import__(mod)
        except ImportError:
            _missing(f"python package {mod} is not installed")
    return CHROMIUM


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LabServer:
    url: str
    token: str
    root: Path
    proc: subprocess.Popen
    log: Path
    port: int
    extra: dict = field(default_factory=dict)

    def api(self, path: str, method: str = "GET") -> int:
        req = urllib.request.Request(f"{self.url}{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""


@pytest.fixture(scope="module")
def lab_server(chromium, tmp_path_factory):
    """JupyterLab serving a temporary copy of the workbook and the demo incident."""
    import secrets

    base = tmp_path_factory.mktemp("lab")
    root = base / "root"
    (root / "notebooks").mkdir(parents=True)
    shutil.copy2(REPO / "notebooks" / "investigate.ipynb", root / "notebooks" / "investigate.ipynb")
    shutil.copytree(REPO / "data" / "demo", root / "data" / "demo")
    settings = base / "app-settings"
    settings.mkdir()
    (settings / "overrides.json").write_text(json.dumps({
        "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    }))
    for d in ("workspaces", "user-settings", "config", "runtime"):
        (base / d).mkdir()
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    env.update(JUPYTER_CONFIG_DIR=str(base / "config"), JUPYTER_RUNTIME_DIR=str(base / "runtime"),
               JUPYTER_PLATFORM_DIRS="1", PYTHONUNBUFFERED="1")
    log = base / "lab.log"
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
           "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           f"--LabApp.workspaces_dir={base / 'workspaces'}", f"--LabApp.user_settings_dir={base / 'user-settings'}",
           f"--LabApp.app_settings_dir={settings}", "--ServerApp.open_browser=False"]
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=root)
    srv = LabServer(url=f"http://127.0.0.1:{port}", token=token, root=root, proc=proc, log=log, port=port)
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with {proc.returncode}:\n{srv.log_tail()}", pytrace=False)
            try:
                if srv.api("/api/status") == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not answer on {srv.url} in 90 s:\n{srv.log_tail()}", pytrace=False)
            time.sleep(0.25)
        yield srv
    finally:
        _stop(srv)


def _stop(srv: LabServer) -> None:
    """Shut the kernels down through the API, then stop the server by its process id."""
    if srv.proc.poll() is None:
        try:
            for path in ("/api/sessions",):
                req = urllib.request.Request(f"{srv.url}{path}", headers={"Authorization": f"token {srv.token}"})
                with urllib.request.urlopen(req, timeout=5) as r:
                    for s in json.load(r):
                        srv.api(f"/api/sessions/{s['id']}", method="DELETE")
        except OSError:
            pass
        os.kill(srv.proc.pid, signal.SIGTERM)
        try:
            srv.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.kill(srv.proc.pid, signal.SIGKILL)
            srv.proc.wait(timeout=10)


@pytest.fixture()
def lab_page(lab_server, chromium):
    """A page in headless Debian Chromium; requests leaving 127.0.0.1 are blocked."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    allowed = (f"http://127.0.0.1:{lab_server.port}/", f"ws://127.0.0.1:{lab_server.port}/",
               "data:", "blob:", "about:")
    blocked: list[str] = []

    def route(r):
        if r.request.url.startswith(allowed):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), headless=True, args=CHROMIUM_ARGS)
        try:
            ctx = browser.new_context(viewport={"width": 1500, "height": 1300})
            ctx.route("**/*", route)
            page = ctx.new_page()
            page.blocked = blocked
            page.console_errors = []
            page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)
            yield page
        finally:
            browser.close()
