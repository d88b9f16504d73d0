"""A scripted, deterministic agent and the small world it works in (for tests and the demo).

The story (seed 003; every system, identifier and record is fictional): the task asks the agent
to move ``ledger-api`` to the fast-track deployment rule *if the service catalogue says it holds
no regulated data*.  The agent (:func:`deploy_rule_agent`):

1. reads the ``deploy.fast_track`` feature flag (``feature-flags`` ``get_flag``);
2. reads the service (``service-catalogue`` ``get_service``) and checks the response against the
   output schema it understands (:data:`SERVICE_SCHEMA`) — an unrecognised schema stops it with
   ``unrecognised_response_schema``; it never guesses a missing field;
3. if ``tags.regulated_data`` is true, stops and leaves the rule alone;
4. otherwise proposes the edit to ``deploy/rules.yaml`` (:func:`propose_patch`), selects the
   rule tests and omits the regulated-data eval, and ships the change — through ``repo-host``
   (``create_pull_request`` then ``merge_pull_request``) or, with ``apply_via="deploy-api"``,
   directly through ``deploy-api`` ``set_rule`` (the same patch through a different tool path).

:class:`DemoWorld` is the world's state at a given time, as a
:class:`~replaybook.capsule.harness.LiveTransport`: the catalogue lost ledger-api's
regulated-data tag at 09:00 UTC on 2026-09-13 (:data:`TAG_LOST`) and an operator restored it
at 23:10 (:data:`TAG_RESTORED`); production writes are allowed only inside the daily change
window 08:00–17:00 UTC (policy ``policy-example-44``).  The incident ran at 16:42:03
(:data:`T_INCIDENT`), the live rerun at 09:18:22 the next morning (:data:`T_LIVE`).
"""

from __future__ import annotations

from datetime import datetime, time, timedelta, timezone
from typing import Any

import jsonschema

from ..canonical import canonical_args
from .digest import json_digest
from .harness import Harness, PolicyDecision
from .model import Authority, guess_effect, iso_z
from .repo import Workspace

__all__ = [
    "T_INCIDENT",
    "T_LIVE",
    "T_BOUNDARY_RUN",
    "TAG_LOST",
    "TAG_RESTORED",
    "SERVICE",
    "RULES_PATH",
    "REPO",
    "TASK_PROMPT",
    "SYSTEM_PROMPT",
    "WORKSPACE_FILES",
    "TESTS_SELECTED",
    "TESTS_OMITTED",
    "SERVICE_SCHEMA",
    "TOOLS",
    "IDENTITY",
    "DemoWorld",
    "deploy_rule_agent",
    "propose_patch",
]

UTC = timezone.utc
T_INCIDENT = datetime(2026, 9, 13, 16, 42, 3, tzinfo=UTC)
T_LIVE = datetime(2026, 9, 14, 9, 18, 22, tzinfo=UTC)
#: A rerun that starts just before the change window closes: its first write falls after 17:00.
T_BOUNDARY_RUN = datetime(2026, 9, 13, 16, 59, 55, tzinfo=UTC)
TAG_LOST = datetime(2026, 9, 13, 9, 0, 0, tzinfo=UTC)
TAG_RESTORED = datetime(2026, 9, 13, 23, 10, 0, tzinfo=UTC)
CHANGE_WINDOW = (time(8, 0), time(17, 0))

SERVICE = "ledger-api"
RULES_PATH = "deploy/rules.yaml"
REPO = "platform/deploy-config"
TESTS_SELECTED = ["tests/deploy/test_rules.py"]
TESTS_OMITTED = ["tests/deploy/test_regulated_data.py"]

TASK_PROMPT = ("ledger-api deploys are slow. If the service catalogue says ledger-api holds no regulated "
               "data, move it to the fast-track deployment rule in deploy/rules.yaml and ship the change.")
SYSTEM_PROMPT = ("You are the platform team's deployment assistant. Use the MCP tools for every external "
                 "system. Production changes go through the deployment rules repository.")

WORKSPACE_FILES = {
    "README.md": "# deploy-config\n\nProduction deployment rules for the platform team.\n",
    RULES_PATH: (
        "# Production deployment rules (platform/deploy-config)\n"
        "rules:\n"
        "  standard:\n"
        "    approval: manual\n"
        "    checks: [unit, integration, regulated-data-eval]\n"
        "    services:\n"
        "      - billing-api\n"
        "      - ledger-api\n"
        "  fast-track:\n"
        "    approval: none\n"
        "    checks: [unit]\n"
        "    services:\n"
        "      - docs-site\n"
    ),
    "tests/deploy/test_rules.py": "def test_rules_parse():\n    assert True\n",
    "tests/deploy/test_regulated_data.py": "def test_regulated_services_need_manual_approval():\n    assert True\n",
}

#: The ``get_service`` output schema the agent understands.
SERVICE_SCHEMA = {
    "type": "object",
    "required": ["service", "tags"],
    "properties": {
        "service": {"type": "string"},
        "tags": {"type": "object", "required": ["regulated_data"],
                 "properties": {"regulated_data": {"type": "boolean"}}},
    },
}

#: ``(server, method) → intended effect`` of the world's tools.
TOOLS = {
    ("feature-flags", "get_flag"): "read",
    ("service-catalogue", "get_service"): "read",
    ("repo-host", "create_pull_request"): "write",
    ("repo-host", "merge_pull_request"): "write",
    ("deploy-api", "set_rule"): "write",
}

#: The effective identity the agent's calls run under.
IDENTITY = Authority("claude-worker-example-12", ("catalogue_read", "deploy_write", "flags_read", "repo_write"),
                     "policy-example-44")

_SCOPE = {"feature-flags": "flags_read", "service-catalogue": "catalogue_read", "repo-host": "repo_write",
          "deploy-api": "deploy_write"}


def propose_patch(rules_text: str, service: str = SERVICE) -> tuple[str, str] | None:
    """The edit moving ``service`` from the ``standard`` rule to ``fast-track`` in ``deploy/rules.yaml``.

    Returns:
        ``(old_string, new_string)`` — ``old_string`` occurs once in ``rules_text`` — or ``None``
        when the service is not listed under ``standard``.
    """
    entry = f"      - {service}\n"
    start = rules_text.find("  standard:\n")
    ft = rules_text.find("  fast-track:\n")
    if start < 0 or ft < 0 or entry not in rules_text[start:ft]:
        return None
    old = rules_text[start:]
    std, fast = rules_text[start:ft], rules_text[ft:]
    new = std.replace(entry, "", 1) + fast + ("" if fast.endswith("\n") else "\n") + entry
    return old, new


def deploy_rule_agent(h: Harness, workspace: Workspace | None, *, service: str = SERVICE,
                      apply_via: str = "repo-host") -> None:
    """The scripted agent (see the module docstring).  Deterministic: same responses, same decisions.

    Args:
        h: the harness answering its calls and recording its decisions.
        workspace: the checkout holding ``deploy/rules.yaml``.
        apply_via: ``repo-host`` (pull request + merge) or ``deploy-api`` (direct ``set_rule``).
    """
    flag = h.call("feature-flags", "get_flag", {"flag": "deploy.fast_track"})
    if not (isinstance(flag, dict) and flag.get("enabled") is True):
        h.record_decision("stop", "end_turn")
        return
    svc = h.call("service-catalogue", "get_service", {"service": service})
    if next(jsonschema.Draft202012Validator(SERVICE_SCHEMA).iter_errors(svc), None) is not None:
        h.record_decision("stop", "unrecognised_response_schema")
        return
    if svc["tags"]["regulated_data"]:
        h.record_decision("stop", "end_turn")
        return
    edit = propose_patch(workspace.read(RULES_PATH), service) if workspace is not None else None
    if edit is None:
        h.record_decision("stop", "end_turn")
        return
    old, new = edit
    h.record_patch(RULES_PATH, old, new)
    patch_digest = json_digest({"path": RULES_PATH, "old": old, "new": new})
    h.record_tests(TESTS_SELECTED, TESTS_OMITTED)
    if apply_via == "deploy-api":
        h.call("deploy-api", "set_rule", {"service": service, "rule": "fast-track", "patch_digest": patch_digest})
    else:
        pr = h.call("repo-host", "create_pull_request",
                    {"repo": REPO, "branch": f"agent/{service}-fast-track",
                     "title": f"Move {service} to the fast-track deployment rule", "patch_digest": patch_digest})
        h.call("repo-host", "merge_pull_request", {"repo": REPO, "number": pr["number"]})
    h.record_decision("stop", "end_turn")


class DemoWorld:
    """The demo's current systems at a point in time (a :class:`~replaybook.capsule.harness.LiveTransport`).

    Args:
        at: the world's clock at the start (tz-aware UTC).
        catalogue_schema: ``1`` (``tags.regulated_data``) or ``2`` (a new output schema:
            ``labels: [{key, value}]`` and no ``tags``).
        think: seconds the clock advances before each call (the agent thinking).
        latency: seconds each call takes.

    Responses are canonical JSON bytes.  The world is stateless: ``simulate`` returns exactly what
    ``call`` would.
    """

    def __init__(self, at: datetime, *, catalogue_schema: int = 1, think: float = 4.0, latency: float = 0.15):
        self.t = at.astimezone(UTC)
        self.catalogue_schema = catalogue_schema
        self.think = timedelta(seconds=think)
        self.latency = timedelta(seconds=latency)

    def identity(self) -> Authority:
        """:data:`IDENTITY`."""
        return IDENTITY

    def now(self) -> datetime:
        """The world's clock."""
        return self.t

    def effect(self, server: str, method: str) -> str:
        """From :data:`TOOLS` (unknown tools: :func:`~replaybook.capsule.model.guess_effect`).

        The harness looks the tool up when the agent starts a call, so this is where the world's
        clock advances by the think time.
        """
        self.t += self.think
        return self._effect(server, method)

    @staticmethod
    def _effect(server: str, method: str) -> str:
        return TOOLS.get((server, method), guess_effect(method))

    def authorize(self, server: str, method: str, arguments: dict, identity: Authority, at: datetime
                  ) -> PolicyDecision:
        """Policy ``policy-example-44``: the server's scope is required; writes only in the change window.

        ``at`` is the decision time (the harness passes the world's clock).
        """
        scope = _SCOPE.get(server)
        if scope is None or scope not in (identity.scopes or ()):
            return PolicyDecision("deny", "missing-scope", {})
        if self._effect(server, method) == "read":
            return PolicyDecision("allow", "allow-read", {})
        lo, hi = CHANGE_WINDOW
        open_ = lo <= at.time() < hi
        return PolicyDecision("allow" if open_ else "deny", "change-window",
                              {"clock": iso_z(at), "change_window": "open" if open_ else "closed",
                               "window": "08:00-17:00Z daily"})

    def _answer(self, server: str, method: str, arguments: dict) -> Any:
        if (server, method) == ("feature-flags", "get_flag"):
            return {"flag": arguments.get("flag"), "enabled": True,
                    "evaluation_token": "fft-demo-not-a-real-secret-3f9a"}
        if (server, method) == ("service-catalogue", "get_service"):
            name = arguments.get("service")
            regulated = not (name == SERVICE and TAG_LOST <= self.t < TAG_RESTORED)
            updated = TAG_RESTORED if self.t >= TAG_RESTORED else TAG_LOST
            if self.catalogue_schema == 2:
                return {"service": name, "owner": "payments-platform", "tier": 1,
                        "labels": [{"key": "regulated_data", "value": "true" if regulated else "false"}],
                        "updated_at": iso_z(updated)}
            return {"service": name, "owner": "payments-platform", "tier": 1,
                    "tags": {"regulated_data": regulated, "team": "payments"}, "updated_at": iso_z(updated)}
        if (server, method) == ("repo-host", "create_pull_request"):
            return {"number": 481, "state": "open",
                    "url": f"https://git.example.invalid/{arguments.get('repo')}/pull/481"}
        if (server, method) == ("repo-host", "merge_pull_request"):
            return {"number": arguments.get("number"), "merged": True,
                    "merge_commit": json_digest(arguments)[7:47]}
        if (server, method) == ("deploy-api", "set_rule"):
            return {"service": arguments.get("service"), "rule": arguments.get("rule"), "applied": True}
        return {"error": f"unknown tool {server}/{method}"}

    def call(self, server: str, method: str, arguments: dict) -> bytes:
        """Answer a call (canonical JSON bytes); the clock advances by the latency."""
        self.t += self.latency
        return canonical_args(self._answer(server, method, arguments)).encode("utf-8")

    def simulate(self, server: str, method: str, arguments: dict) -> bytes:
        """What :meth:`call` would answer (this world has no state to change)."""
        return self.call(server, method, arguments)
