"""Digests: the one place that decides how capsule things are hashed.

Every digest is ``sha256:<64 lowercase hex>``.

* An **object digest** is SHA-256 of the object's exact bytes (an evidence object, a prompt, a
  captured response as the door kept it).
* A **JSON digest** is SHA-256 of the canonical JSON text (:func:`replaybook.canonical.canonical_args`:
  sorted keys, no whitespace, ``1.0`` → ``1``) encoded as UTF-8.
* A **request digest** is the JSON digest of ``{"server", "method", "arguments"}`` — ``method`` is
  the tool's name as the door logs it (``get_service``), ``arguments`` ``{}`` when absent.  The
  forensic harness finds captured evidence by this digest.
* A **shape** is a response's output schema as observed: objects become
  ``{"object": {key: shape}}``, arrays ``{"array": [distinct item shapes]}``, scalars their JSON
  type name (``string``, ``integer``, ``number``, ``boolean``, ``null``).  Its JSON digest is the
  ``response_schema`` checkpoint: a server that changes its output schema changes it.

A response is read by :func:`parse_response`, the one reading every part of the capsule package
uses (the harnesses, the incident's extraction, the diff): integers of any size stay exact (a
parser that reads ``2**70 + 1`` as a double makes two different responses read alike).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from .. import _json
from ..canonical import canonical_args

__all__ = [
    "DIGEST_RE",
    "is_digest",
    "hex_of",
    "sha256_digest",
    "canonical_bytes",
    "json_digest",
    "request_digest",
    "door_request_digest",
    "response_shape",
    "json_value",
    "parse_response",
    "shape_paths",
    "short",
]

#: A well-formed digest.
DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")


def is_digest(value: Any) -> bool:
    """True when ``value`` is a ``sha256:<64 hex>`` string."""
    return isinstance(value, str) and DIGEST_RE.match(value) is not None


def hex_of(digest: str) -> str:
    """The 64 hex digits of a digest.

    Raises:
        ValueError: ``digest`` is not ``sha256:<64 lowercase hex>``.
    """
    if not is_digest(digest):
        raise ValueError(f"not a sha256 digest: {digest!r}")
    return digest[7:]


def sha256_digest(data: bytes) -> str:
    """``sha256:<hex>`` of ``data`` (an object digest)."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_bytes(obj: Any) -> bytes:
    """Canonical JSON of ``obj`` as UTF-8 bytes (``None`` → ``null``)."""
    if obj is None:
        return b"null"
    return canonical_args(obj).encode("utf-8")


def json_digest(obj: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``obj``."""
    return sha256_digest(canonical_bytes(obj))


def request_digest(server: str, method: str, arguments: Any) -> str:
    """The request digest of a tool call: JSON digest of ``{server, method, arguments}``.

    Argument key order, whitespace, ``1`` vs ``1.0`` and Unicode normal form do not change it.
    """
    return json_digest({"server": server or "", "method": method, "arguments": arguments or {}})


def door_request_digest(server: str, method: str, arguments: Any, arguments_digest: Any = None) -> str:
    """:func:`request_digest` of a door call as the ``calls`` frame holds it.  A call whose
    arguments the door did not log (``arguments`` not an object: too large, not an object, a line
    it could not read as a call) has a digest of its own, of ``{server, method,
    arguments_not_logged: <the door's arguments_digest, or None>}``: never that of ``{}``, which
    a call with no arguments has."""
    if isinstance(arguments, dict):
        return request_digest(server, method, arguments)
    logged = arguments_digest if isinstance(arguments_digest, str) and arguments_digest else None
    return json_digest({"server": server or "", "method": method, "arguments_not_logged": logged})


def json_value(data: bytes) -> Any:
    """A response's bytes read as one JSON value: integers of any size exact; the ``NaN`` and
    ``Infinity`` literals some servers write, and numbers beyond the double range, read as
    :class:`replaybook._json.NumberAsWritten` (compared by their text, never as strings).

    Raises:
        ValueError: ``data`` is not a JSON text (nor UTF-8), or is nested too deeply to read.
    """
    try:
        return _json.loads(data)
    except ValueError:
        pass
    try:
        return _json.loads_lenient(bytes(data).decode("utf-8"))
    except RecursionError:  # (loads_lenient turns deep nesting into a JSONDecodeError already)
        raise ValueError("nested too deeply to read") from None


def parse_response(data: bytes) -> Any:
    """A response as its reader sees it: :func:`json_value`, or — when the bytes are not JSON —
    their text (UTF-8, invalid bytes replaced).  Never raises."""
    try:
        return json_value(data)
    except ValueError:
        return bytes(data).decode("utf-8", "replace")


@_json.nesting_room  # (as deep as a parser reads: 1,024 levels)
def response_shape(value: Any) -> Any:
    """The observed output schema of a parsed JSON value (see the module docstring)."""
    if isinstance(value, dict):
        return {"object": {str(k): response_shape(v) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        seen: dict[str, Any] = {}
        for item in value:
            s = response_shape(item)
            seen.setdefault(canonical_bytes(s).decode(), s)
        return {"array": [seen[k] for k in sorted(seen)]}
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


@_json.nesting_room
def shape_paths(shape: Any, prefix: str = "") -> set[str]:
    """Flatten a shape into ``path:type`` strings (``tags.regulated_data:boolean``, ``items[]:string``).

    Used to report what a schema change added and removed.
    """
    out: set[str] = set()
    if isinstance(shape, dict) and "object" in shape:
        if not shape["object"]:
            out.add(f"{prefix or '(root)'}:object")
        for k, v in shape["object"].items():
            out |= shape_paths(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(shape, dict) and "array" in shape:
        if not shape["array"]:
            out.add(f"{prefix}[]:empty")
        for v in shape["array"]:
            out |= shape_paths(v, f"{prefix}[]")
    else:
        out.add(f"{prefix or '(root)'}:{shape}")
    return out


def short(digest: str | None, n: int = 4) -> str:
    """``sha256:31a7…`` — a digest shortened for tables (``—`` for none)."""
    if not digest:
        return "—"
    return digest[: 7 + n] + "…"
