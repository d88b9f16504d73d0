"""Fixtures for the door tests: a data root, rules, the fixture MCP server, and MCP SDK clients.

Every MCP conversation here uses the official SDK's ``ClientSession`` over ``stdio_client``; the
door runs as ``python -m replaybook.door door …`` (the same click command ``replaybook door``
runs), in front of ``tests/fixtures/door_server/server.py`` (an SDK ``MCPServer``) or the npm
reference filesystem server.
"""

from __future__ import annotations

import json

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Awaitable, Callable

import anyio
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE_SERVER = REPO_ROOT / "tests" / "fixtures" / "door_server" / "server.py"
NPM_PACKAGE = "@modelcontextprotocol/server-filesystem@2026.8.31"  # the version these tests were written against
NPM_CACHE_ENV = "REPLAYBOOK_NPM_CACHE"
REQUIRE_NPM_ENV = "REPLAYBOOK_REQUIRE_NPM"

RULES_YAML = """\
version: 1
rules:
  - id: deny-dotenv
    decision: deny
    paths: ["**/.env", "**/.env.*"]
  - id: allow-demo
    decision: allow
    tools: [list_folder, read_object, query, "resources/read"]
    paths: ["demo", "demo/**", "data://demo/**"]
"""


def door_cmd(rules: Path, log_root: Path, server_cmd: list[str], *, evidence: Path | None = None,
             agent: str = "analyst", session: str | None = None, extra: list[str] = ()) -> list[str]:
    """``python -m replaybook.door door …`` in front of ``server_cmd``."""
    cmd = [sys.executable, "-m", "replaybook.door", "door", "--rules", str(rules), "--log-root", str(log_root),
           "--agent", agent]
    if evidence is not None:
        cmd += ["--evidence", str(evidence)]
    if session is not None:
        cmd += ["--session", session]
    return cmd + list(extra) + ["--", *server_cmd]


def fixture_server_cmd(data: Path) -> list[str]:
    return [sys.executable, str(FIXTURE_SERVER), str(data)]


async def with_session(cmd: list[str], fn: Callable[[Any], Awaitable[Any]], **session_kw: Any) -> Any:
    """Start ``cmd`` as an MCP server over stdio, initialize an SDK ClientSession (``session_kw``:
    its callbacks, e.g. ``elicitation_callback``), run ``fn(session)``."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, **session_kw) as session:
            await session.initialize()
            return await fn(session)


def run_session(cmd: list[str], fn: Callable[[Any], Awaitable[Any]], **session_kw: Any) -> Any:
    """Synchronous :func:`with_session`."""
    return anyio.run(lambda: with_session(cmd, fn, **session_kw))


def log_files(log_root: Path) -> list[Path]:
    return sorted(log_root.rglob("*.jsonl"))


def validate_lines(path: Path) -> list[dict]:
    """Every line of a door log, each checked against the door-call-log v1 schema directly."""
    import jsonschema
    import orjson

    from replaybook.sources.door import door_schema

    schema = door_schema()
    v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    out = []
    for raw in path.read_bytes().splitlines():
        try:
            o = orjson.loads(raw)
        except orjson.JSONDecodeError:  # valid JSON orjson does not read (1E400): the standard library's reading
            o = json.loads(raw, parse_constant=lambda c: pytest.fail(f"{path}: {c} is not JSON"))
        errors = list(v.iter_errors(o))
        assert not errors, f"{path}: {errors[0].message} in {o}"
        out.append(o)
    return out


@pytest.fixture
def data_root(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    (d / "demo").mkdir(parents=True)
    (d / "reference").mkdir()
    (d / "demo" / "cars.csv").write_text("name,mpg,cyl\nmazda,21,6\ndatsun,22.8,4\nhornet,21.4,6\n")
    (d / "demo" / "notes.txt").write_text("cars from 1974\n")
    (d / "reference" / ".env").write_text("API_KEY=do-not-read\n")
    return d


@pytest.fixture
def rules_file(tmp_path: Path) -> Path:
    p = tmp_path / "rules.yaml"
    p.write_text(RULES_YAML)
    return p


# -- the npm reference filesystem server ---------------------------------------------------------

def _npm_unavailable(msg: str):
    if os.environ.get(REQUIRE_NPM_ENV) == "1":
        pytest.fail(f"{msg}; {REQUIRE_NPM_ENV}=1 forbids skipping", pytrace=False)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def npm_fs_server() -> Path:
    """The entry point of ``@modelcontextprotocol/server-filesystem``, installed with npm into
    ``$REPLAYBOOK_NPM_CACHE`` (default ``~/.cache/replaybook/npm``) when not there yet.

    Skips when node/npm are missing or the registry cannot be reached — unless
    ``REPLAYBOOK_REQUIRE_NPM=1`` (CI), which turns that into a failure.
    """
    prefix = Path(os.environ.get(NPM_CACHE_ENV) or Path.home() / ".cache" / "replaybook" / "npm")
    entry = prefix / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
    if not shutil.which("node"):
        _npm_unavailable("node is not installed")
    if not entry.is_file():
        npm = shutil.which("npm")
        if not npm:
            _npm_unavailable("npm is not installed")
        prefix.mkdir(parents=True, exist_ok=True)
        try:
            r = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", NPM_PACKAGE],
                               capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            _npm_unavailable(f"npm install {NPM_PACKAGE} timed out")
        if r.returncode != 0 or not entry.is_file():
            _npm_unavailable(f"npm install {NPM_PACKAGE} failed: {(r.stderr or r.stdout).strip()[-500:]}")
    return entry
