"""What the door measures in a response, keeps as evidence, and answers when it refuses.

* **bytes** — the size of the content returned to the agent: UTF-8 bytes of every text block
  (``content[].text``, embedded ``resource.text``, ``contents[].text`` of a resource read) plus
  the decoded size of every base64 payload (image/audio ``data``, ``blob``).  A result with no
  content blocks but a ``structuredContent`` counts that value's compact JSON.
* **rows** — records returned: the length of a tabular ``structuredContent`` (a list, or an
  object whose ``rows``/``items``/``results``/``result``/``records``/``data`` value is a list);
  otherwise the lines of text content (a trailing newline does not start a line) plus one per
  non-text block; for a resource read, the number of ``contents``.
* **evidence** — the JSON-RPC ``result`` object exactly as the server returned it, serialised as
  compact JSON with sorted keys (so identical responses share one object).  A JSON-RPC error
  answer is kept as ``{"error": {code, message, data}}``.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import orjson

from .. import _json
from .rules import refusal_text

__all__ = ["measure", "evidence_bytes", "error_evidence_bytes", "refusal_result", "tool_error_text",
           "DOOR_REFUSED", "is_error_evidence"]

#: JSON-RPC error code the door uses for a refused ``resources/read`` (implementation-defined band).
DOOR_REFUSED = -32010

_TABLE_KEYS = ("rows", "items", "results", "result", "records", "data")


def _b64_size(s: Any) -> int:
    if not isinstance(s, str):
        return 0
    n = len(s.rstrip("\n\r "))
    if n == 0:
        return 0
    pad = len(s) - len(s.rstrip("="))
    return max(0, n * 3 // 4 - pad)


def _text_size(s: Any) -> int:
    if not isinstance(s, str):
        return 0
    return len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))


def _text_lines(s: Any) -> int:
    if not isinstance(s, str) or not s:
        return 0
    return s.count("\n") + (0 if s.endswith("\n") else 1)


def _block_size(b: Any) -> int:
    if not isinstance(b, dict):
        return 0
    t = b.get("type")
    if t == "text":
        return _text_size(b.get("text"))
    if t in ("image", "audio"):
        return _b64_size(b.get("data"))
    if t == "resource":
        r = b.get("resource") or {}
        return _text_size(r.get("text")) + _b64_size(r.get("blob"))
    return 0


def _table_len(sc: Any) -> int | None:
    if isinstance(sc, list):
        return len(sc)
    if isinstance(sc, dict):
        for k in _TABLE_KEYS:
            if isinstance(sc.get(k), list):
                return len(sc[k])
    return None


def measure(method: str, result: Any) -> tuple[int | None, int | None]:
    """``(rows, bytes)`` of a JSON-RPC ``result`` (see the module docstring)."""
    if not isinstance(result, dict):
        return None, None
    if method == "resources/read":
        contents = result.get("contents") or []
        if not isinstance(contents, list):
            return None, None
        size = sum(_text_size(c.get("text")) + _b64_size(c.get("blob")) for c in contents if isinstance(c, dict))
        return len(contents), size
    content = result.get("content")
    content = content if isinstance(content, list) else []
    sc = result.get("structuredContent")
    size = sum(_block_size(b) for b in content)
    if not content and sc is not None:
        size = len(_json.dumps(sc))
    rows = _table_len(sc)
    if rows is None:
        rows = sum(_text_lines(b.get("text")) if b.get("type") == "text" else 1
                   for b in content if isinstance(b, dict))
    return rows, size


def evidence_bytes(result: Any) -> bytes:
    """The bytes the door keeps for a response (compact JSON, sorted keys)."""
    return _json.dumps(result, option=orjson.OPT_SORT_KEYS)


def error_evidence_bytes(code: int, message: str, data: Any = None) -> bytes:
    """The bytes the door keeps for a JSON-RPC error answer."""
    err: dict = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return _json.dumps({"error": err}, option=orjson.OPT_SORT_KEYS)


def is_error_evidence(obj: Any) -> bool:
    """True for evidence written by :func:`error_evidence_bytes`."""
    return isinstance(obj, dict) and set(obj) == {"error"} and isinstance(obj["error"], dict)


def tool_error_text(result: Any, limit: int = 500) -> str | None:
    """For a tool result with ``isError: true``: its first text block (truncated), else ``None``."""
    if not isinstance(result, dict) or result.get("isError") is not True:
        return None
    for b in result.get("content") or []:
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str):
            t = b["text"]
            return "tool error: " + (t if len(t) <= limit else t[:limit] + "…")
    return "tool error"


def refusal_result(tool: str, rule: str | None, approval: str | None = None) -> types.CallToolResult:
    """The MCP tool result the door answers a refused ``tools/call`` with (``isError: true``);
    ``approval``: the answer to an ``ask`` rule that refused it."""
    text = refusal_text(tool, rule, approval)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
