"""JSON Schema validation shared by every loader and manifest reader.

``jsonschema`` is imported on first use: with its optional format checkers installed it can cost
seconds to import, which would slow every CLI call (and ``rec`` in an agent session) that never
validates anything.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["package_schema", "first_error", "first_error_at", "key_error", "short_message"]

#: the longest validation message said: ``jsonschema`` writes the offending value out whole
MAX_MESSAGE = 300


def short_message(message: str, limit: int = MAX_MESSAGE) -> str:
    """A validation error's ``message`` cut to ``limit`` characters: its middle (the offending
    value as ``jsonschema`` writes it out, which can be megabytes) left out as `` … ``, its
    start and its end (what is wrong: ``is not of type 'object'``) kept."""
    if len(message) <= limit:
        return message
    tail = min(120, limit // 2)
    return message[:limit - tail - 3] + " … " + message[-tail:]


@lru_cache(maxsize=None)
def package_schema(name: str) -> dict:
    """A JSON Schema shipped in ``replaybook/schemas/`` (e.g. ``door-call-log.v1.json``)."""
    return json.loads(resources.files("replaybook").joinpath("schemas", name).read_text("utf-8"))


_VALIDATORS: dict[int, Any] = {}


def _validator(schema: dict, formats: bool):
    key = (id(schema), formats)
    v = _VALIDATORS.get(key)
    if v is None:
        import jsonschema

        cls = jsonschema.validators.validator_for(schema)
        v = cls(schema, format_checker=cls.FORMAT_CHECKER if formats else None)
        _VALIDATORS[key] = (v, schema)  # keep schema alive so id() stays unique
        return v
    return v[0]


def first_error_at(schema: dict, obj: Any, *, formats: bool = True) -> tuple[list, str] | None:
    """The most relevant validation error of ``obj`` against ``schema`` as ``(path, message)``
    (``path`` is the list of keys/indexes into ``obj``), or ``None`` when ``obj`` is valid.
    ``schema`` must stay alive (a module constant or cached)."""
    import jsonschema

    err = jsonschema.exceptions.best_match(_validator(schema, formats).iter_errors(obj))
    if err is None:
        return None
    # "… is not valid under any of the given schemas" (anyOf/oneOf): say what is wrong within the
    # branch made for a value of this type (an object given where a path string or a
    # {path, format} object goes: what the object lacks or has too much of)
    while err.context:
        fitting = [e for e in err.context if e.validator != "type"]
        if not fitting:
            break
        err = jsonschema.exceptions.best_match(fitting)
    return list(err.absolute_path), short_message(err.message)


def first_error(schema: dict, obj: Any, *, formats: bool = True) -> str | None:
    """Like :func:`first_error_at`, as text: ``"at <a/b/0>: <message>"``."""
    found = first_error_at(schema, obj, formats=formats)
    if found is None:
        return None
    path, message = found
    return f"at {'/'.join(str(p) for p in path) or '(top level)'}: {message}"


def key_error(err: Any) -> tuple[list, str] | None:
    """A misspelt or unknown key behind a ``required`` or ``additionalProperties`` error (a
    ``jsonschema`` ``ValidationError``) as ``(where, words)``: ``where`` is the path of the key
    as written (so its line can be found), ``words`` say which key is unknown and, when one is
    close, which it was meant to be (``"'operation_id' is a required property; unknown key
    'operaton_id' (did you mean 'operation_id'?)"``).  ``None`` for any other error, or a missing key with
    no unknown key beside it (the mapping's own path then places it)."""
    import difflib
    import re

    inst = err.instance
    if not isinstance(inst, dict) or err.validator not in ("required", "additionalProperties"):
        return None
    props = err.schema.get("properties") or {}
    patterns = list(err.schema.get("patternProperties") or {})
    unknown = [k for k in inst if isinstance(k, str) and k not in props
               and not any(re.search(pat, k) for pat in patterns)]
    if not unknown:
        return None
    here = list(err.absolute_path)
    missing = [k for k in err.schema.get("required") or () if k not in inst]
    if err.validator == "required":
        for key in unknown:  # the unknown key that is a spelling of the missing one
            near = difflib.get_close_matches(key, missing, n=1)
            if near:
                return here + [key], f"{short_message(err.message)}; unknown key {key!r} (did you mean {near[0]!r}?)"
        return None
    key = unknown[0]
    near = difflib.get_close_matches(key, missing, n=1) or difflib.get_close_matches(
        key, [k for k in props if k not in inst], n=1)
    return here + [key], f"unknown key {key!r}" + (f" (did you mean {near[0]!r}?)" if near else
                                                   f"; it takes {', '.join(props)}")
