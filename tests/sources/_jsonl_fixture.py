"""Writing JSON Lines fixtures for the loader scenario tests (imported by them; not a test)."""

from __future__ import annotations

import json
from pathlib import Path


def write_jsonl(path: Path, lines: list, tail: str = "") -> Path:
    """Write ``lines`` to ``path`` (folders made), one per line: a ``str`` as it is (a damaged
    line), anything else as its JSON; then ``tail`` (a last line with no newline, say)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines) + tail,
                    encoding="utf-8")
    return path


def otlp_value(v) -> dict:
    """A Python value as an OTLP/JSON ``AnyValue`` (``stringValue``, ``intValue`` as a string,
    ``doubleValue``, ``boolValue``, ``arrayValue``, ``kvlistValue``), as an exporter writes it."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, str):
        return {"stringValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [otlp_value(x) for x in v]}}
    return {"kvlistValue": {"values": [{"key": k, "value": otlp_value(x)} for k, x in v.items()]}}


def counts_by_id(frame, id_col: str, col: str) -> dict:
    """A count column (``bytes``, ``rows``) of a loaded frame as ``{id: int or None}``, NA as
    ``None``, keyed by ``id_col`` (``request_id``)."""
    import pandas as pd

    return {k: (None if pd.isna(v) else int(v)) for k, v in zip(frame[id_col], frame[col])}
