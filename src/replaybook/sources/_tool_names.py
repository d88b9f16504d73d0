"""The name a client calls a tool by, behind a gateway that namespaces its servers' tools (private).

An aggregating gateway shows its clients the tools of several upstream MCP servers as the tools
of one server, told apart by a prefix: the client calls ``files__list_folder``, the gateway
routes ``list_folder`` to its upstream server ``files``.  The client names the gateway itself as
the MCP server, so its transcript holds ``mcp__<gateway>__files__list_folder`` (Claude Code,
Codex CLI; legacy Codex ``<gateway>__files__list_folder``), which the transcript loaders split
into server ``<gateway>`` and tool ``files__list_folder``.  The join compares ``tool`` as it is,
so a gateway's call must carry the name its client called — :func:`client_tool` — while
``server`` keeps the upstream server the gateway logged.

Where the prefix comes from:

* Gatekit: ``gatekit/utils/namespacing.py`` (``namespace_name``: ``f"{server}__{name}"``, applied
  to every upstream's ``tools/list``; ``parse_namespaced_name`` splits at the first ``__`` that is
  exactly two underscores, so ``aws___tool`` is not namespaced).  Its audit log's ``tool`` holds
  the name as logged by the version: namespaced (``files__list_folder``) or clean
  (``list_folder``, the routed request), ``server_name`` the upstream server in both.
* MCPJungle: canonical tool names ``<server>__<tool>`` (its own meta-tools
  ``mcpjungle__list_servers`` …); the audit log gives ``server_name`` and ``tool_name`` apart.

Other gateways' clients see the upstream tool name unprefixed (Docker mcp-gateway, Obot,
Pomerium: one server per endpoint; Invariant, MXCP), and their loaders keep it as logged.
"""

from __future__ import annotations

__all__ = ["client_tool", "split_namespaced"]

SEP = "__"


def split_namespaced(name: str) -> tuple[str | None, str]:
    """``(server, rest)`` of a namespaced name, split at its first ``__`` that is exactly two
    underscores (Gatekit's rule); ``(None, name)`` when there is none.

    >>> split_namespaced("files__list_folder")
    ('files', 'list_folder')
    >>> split_namespaced("aws___tool")
    (None, 'aws___tool')
    """
    i = name.find(SEP)
    while i != -1:
        if (i == 0 or name[i - 1] != "_") and (i + 2 >= len(name) or name[i + 2] != "_"):
            if i and i + 2 < len(name):
                return name[:i], name[i + 2:]
            return None, name
        i = name.find(SEP, i + 1)
    return None, name


def client_tool(server: str | None, tool: str | None) -> tuple[str | None, str | None]:
    """``(server, tool)`` of a namespacing gateway's logged call → ``(server, the tool's name as
    the client called it)``.

    * a tool logged with its server's prefix stays as it is: ``("files", "files__list_folder")``;
    * a tool logged without it takes it: ``("files", "list_folder")`` → ``("files",
      "files__list_folder")``;
    * a namespaced tool logged without a server names the server and stays whole:
      ``(None, "files__list_folder")`` → ``("files", "files__list_folder")``;
    * no tool, or no server and no prefix: as logged.

    >>> client_tool("files", "list_folder")
    ('files', 'files__list_folder')
    >>> client_tool(None, "files__list_folder")
    ('files', 'files__list_folder')
    """
    if not tool:
        return server, tool
    if server:
        return server, tool if tool.startswith(server + SEP) else f"{server}{SEP}{tool}"
    srv, _rest = split_namespaced(tool)
    return srv, tool
