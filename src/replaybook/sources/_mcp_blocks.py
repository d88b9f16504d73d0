"""What the model was given of an MCP content block, as text (private).

MCP specification 2025-06-18, ``CallToolResult.content``: ``text``, ``image``, ``audio``,
``resource`` (an embedded resource: ``{uri, mimeType, text | blob}``) and ``resource_link``
(``{uri, name, mimeType, …}``).  A client passes these through to the model (Codex logs them as
written) or converts them; either way no block is dropped from a step's text: a block that is not
text is kept as one bracketed line naming it.
"""

from __future__ import annotations

from typing import Any

from .._text import safe_str

__all__ = ["other_block_text", "mcp_blocks_text"]


def _name(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def other_block_text(b: dict, texts: list) -> None:
    """Append what the model was given of a content item the Messages API does not define for a
    ``tool_result`` — the MCP content types a client may pass through (MCP specification
    2025-06-18, ``CallToolResult.content``) — or of an item of a newer type: never dropped.

    ``resource`` (an embedded resource): a ``[resource: <uri>, <mimeType>]`` line, then its
    ``text`` (a ``blob`` is bytes: the line alone); ``resource_link``: ``[resource_link: <uri>,
    <name>]``; ``audio``: ``[audio: <mimeType>]``; any other item with a ``type``: ``[<type>]``.
    An item without a string ``type`` adds nothing."""
    bt = b.get("type")
    if not isinstance(bt, str) or not bt:
        return
    if bt == "resource":
        r = b.get("resource")
        r = r if isinstance(r, dict) else {}
        parts = [p for p in (_name(r.get("uri")), _name(r.get("mimeType"))) if p]
        texts.append(f"[resource: {', '.join(parts)}]" if parts else "[resource]")
        if isinstance(r.get("text"), str):
            texts.append(r["text"])
        return
    if bt == "resource_link":
        parts = [p for p in (_name(b.get("uri")), _name(b.get("name"))) if p]
        texts.append(f"[resource_link: {', '.join(parts)}]" if parts else "[resource_link]")
        return
    if bt == "audio":
        mt = _name(b.get("mimeType"))
        texts.append(f"[audio: {mt}]" if mt else "[audio]")
        return
    texts.append(f"[{safe_str(bt)}]")


def mcp_blocks_text(content: list) -> tuple[list[str], int]:
    """The text lines of a list of MCP content blocks and its image count: a ``text`` block's
    text, an ``image`` counted, every other block as :func:`other_block_text` gives it."""
    texts: list[str] = []
    images = 0
    for b in content:
        if not isinstance(b, dict):
            continue
        bt = b.get("type")
        if bt == "text":
            if isinstance(b.get("text"), str):
                texts.append(b["text"])
        elif bt == "image":
            images += 1
        else:
            other_block_text(b, texts)
    return texts, images
