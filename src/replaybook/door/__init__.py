"""The door: an MCP proxy that decides, logs and keeps every call; replay from a capsule; retention.

* :func:`run_door` / ``replaybook door --rules R --log-root L [--evidence E] [--agent A] -- SERVER_CMD…``
  relays an MCP client (stdio) to the server it starts; :func:`run_door_url` / ``… --url URL
  [--header 'NAME: VALUE']`` to a remote server over Streamable HTTP.  Each ``tools/call`` and
  ``resources/read`` is decided by :class:`Rules` (ordered, first match, default deny), written
  to ``<log-root>/<agent>/<session>.jsonl`` in the door-call-log v1 format *before* it is
  answered, and (with ``--evidence``) its full response is kept in a content-addressed
  :class:`~replaybook.capsule.EvidenceStore` and logged by digest.
* :class:`CapsuleServer` / ``replaybook serve-capsule CAPSULE`` answers the same calls from a
  replay capsule through the forensic harness (never live) and logs them in the same format.
* :func:`prune` / ``replaybook prune --log-root L [--older-than 30d] [--dry-run] [--evidence E]``
  deletes sessions older than the retention (:func:`retention_setting`).

Public API::

    load_rules(path) -> Rules;  rules.decide(method, tool, arguments) -> Decision
    rules_schema()                                   # door-rules.v1 JSON Schema
    CallLog(root, agent, session).write(record)      # one fsync'd line
    Door(rules, log, evidence=store).serve(peer, server_read, server_write)
    run_door(rules, log, command, evidence=None)     # async; stdio ↔ the server it starts
    run_door_url(rules, log, url, headers=None)      # async; stdio ↔ a Streamable HTTP server
    CapsuleServer(capsule, log).mcp_server(); run_serve_capsule(server)
    prune(log_root, older_than, dry_run=…, evidence=…) -> PruneReport
    parse_duration("30d"); retention_setting()
    replaybook.door.cli: door, serve_capsule, prune  # click commands
"""

_EXPORTS = {
    "Rules": "rules", "Rule": "rules", "Decision": "rules", "load_rules": "rules", "rules_from_dict": "rules",
    "rules_schema": "rules", "refusal_text": "rules",
    "CallLog": "calllog", "new_session_id": "calllog", "rfc3339": "calllog",
    "Door": "proxy", "run_door": "proxy", "run_door_url": "proxy", "UpstreamUnreachable": "proxy", "PASS_METHODS": "proxy", "DECIDED_METHODS": "proxy",
    "DOOR_REFUSED": "results", "measure": "results", "refusal_result": "results",
    "CapsuleServer": "replay", "run_serve_capsule": "replay",
    "prune": "retention", "PruneReport": "retention",
    "parse_duration": "config", "retention_setting": "config", "DEFAULT_RETENTION": "config",
    "RETENTION_ENV": "config",
}

__all__ = list(_EXPORTS)


def __getattr__(name):
    """Load submodules on first use: the MCP SDK and the capsule package are only needed by some
    commands (``replaybook prune`` needs neither)."""
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'replaybook.door' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{mod}", __name__), name)
