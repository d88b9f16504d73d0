"""OpenTelemetry GenAI spans (OTLP JSON) → the ``steps`` frame.

Format origin
-------------
* Container: OTLP/JSON trace export requests (``ExportTraceServiceRequest``, opentelemetry-proto
  ``trace/v1``, JSON mapping per the OTLP specification "JSON Protobuf Encoding"):
  ``{"resourceSpans": [{"resource": {"attributes": […]}, "scopeSpans": [{"scope": {…},
  "spans": [{"traceId", "spanId", "parentSpanId", "name", "kind", "startTimeUnixNano",
  "endTimeUnixNano", "attributes": [{"key", "value": {"stringValue"|"intValue"|…}}],
  "status": {"code", "message"}}]}]}]}``.  Two file layouts: one document (``.json``, pretty
  or not; also a JSON array of requests) or OTLP JSON Lines — one request per line, as the
  OpenTelemetry Collector ``file`` exporter writes.  ``lowerCamelCase`` and ``snake_case`` field
  names, hex or integer-as-string values and ``instrumentationLibrarySpans`` (pre-1.0) are read.
* Meaning: OpenTelemetry semantic conventions for generative AI (``gen_ai.*``, "Development"
  status; attribute names as of semconv 1.37–1.38 and the semantic-conventions-genai MCP
  conventions): ``gen_ai.operation.name`` (``execute_tool``, ``chat``, ``text_completion``,
  ``generate_content``, ``invoke_agent``), ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
  ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``, ``gen_ai.request.model``,
  ``gen_ai.response.model``, ``gen_ai.response.id``, ``gen_ai.usage.input_tokens`` /
  ``output_tokens``, ``gen_ai.conversation.id``, ``gen_ai.agent.id`` / ``name``; MCP:
  ``mcp.method.name`` (``tools/call``), ``mcp.session.id``; ``gen_ai.usage.prompt_tokens`` /
  ``completion_tokens`` (before 1.27) as the input / output tokens.
* Other vocabularies, read into those terms by :mod:`replaybook.sources._otel_shapes` (its
  docstring lists every attribute): **OpenLLMetry** (Traceloop; ``opentelemetry-semantic-conventions-ai``
  0.4.x, ``traceloop-sdk`` decorators, ``opentelemetry-instrumentation-mcp``) — ``traceloop.span.kind``
  ``tool`` spans with ``traceloop.entity.input`` / ``output``, model spans by ``llm.request.type``
  with the indexed ``gen_ai.prompt.{i}.*`` / ``gen_ai.completion.{i}.*`` content and
  ``tool_calls.{j}``; and **OpenInference** (Arize Phoenix; ``openinference-semantic-conventions``)
  — ``openinference.span.kind`` ``TOOL`` (``tool.name``, ``tool_call.id``, ``input.value``,
  ``output.value``), ``LLM`` (``llm.model_name``, ``llm.token_count.*``,
  ``llm.input_messages`` / ``llm.output_messages`` with ``message.tool_calls``), ``AGENT``, and
  ``session.id`` as the conversation.  A span the GenAI conventions already describe keeps its
  own ``gen_ai.*`` attributes: the other vocabulary only fills what it lacks.

The frame
---------
:func:`load_otel` returns a :class:`~replaybook.frames.LoadResult` whose ``frame`` has exactly the
:data:`~replaybook.frames.STEPS` columns, ``client`` ``"otel"``; one row per span (a span exported
twice — same trace and span id — counts once, as its first export or, when that one had not
ended, the first that has; ``inputs[i]["duplicates"]``):

==============  ===========================================================================
kind            span
==============  ===========================================================================
tool_call       ``execute_tool``, an MCP ``tools/call`` client span, an OpenLLMetry ``tool`` or
                OpenInference ``TOOL`` span; ``ts`` = start, ``result_ts`` = end, ``is_error``
                from the status (ERROR), ``error.type`` or the MCP result's own flag (NA for
                a span not ended or whose status cannot be read, below); and a
                tool call the model asked for that no tool span records (below)
user_prompt     a user message in the messages a model span sent, the first time a request of
                the transcript sent it (below)
model_request   ``chat`` / ``text_completion`` / ``generate_content``, an OpenLLMetry model span
                (``llm.request.type`` ``chat`` / ``completion``), an OpenInference ``LLM`` span;
                ``invoke_agent`` only when no model span sits under it (else its tokens would
                count twice)
other           every other span, and a tool span nested (at any depth) inside a tool span
                for the same tool — one call seen by two instrumentation layers (a framework's
                ``execute_tool`` around the MCP client's ``tools/call``, or the MCP server's
                own span): the outer span is the row, the inner one fills what it lacks
                (``mcp.session.id``, call id, arguments, result; a failure of its last
                attempt — ``error.type`` or status ERROR, its message as the result —
                whatever the outer span says)
                and becomes ``other`` (with the outer span's call id when it has none)
==============  ===========================================================================

* ``transcript_id``: ``gen_ai.conversation.id`` (OpenInference: ``session.id``) of the span, else
  of its nearest ancestor, else of any span of its trace, else the trace id (hex).  Rows are
  ordered by start time within a transcript; ``seq`` is 0-based per transcript.
* ``client_session_id``: ``mcp.session.id``.  ``client_version``: the resource's
  ``service.version``.  ``agent_id``: the ``gen_ai.agent.id`` (or name) of the nearest enclosing
  agent span (``invoke_agent``, OpenLLMetry ``agent``, OpenInference ``AGENT``: its entity or
  ``agent.name``) when that agent is itself invoked by another agent; NA otherwise.
* ``line_type``: the operation (``chat``, ``execute_tool`` …), else ``mcp.method.name``, else the
  span name; for the other vocabularies the span kind as written: ``traceloop:tool``,
  ``traceloop:chat`` (the ``llm.request.type``), ``openinference:TOOL``, ``openinference:LLM``.
* ``uuid`` / ``parent_uuid``: span id / parent span id.  ``line_no``: the line of the export
  request (JSON Lines) or of the span object (one document).
* Tool names: ``gen_ai.tool.name`` (for a ``tools/call`` span without it, the span name's target);
  ``mcp__<server>__<tool>`` is split; otherwise ``server`` is an ``mcp.server.name`` attribute if
  present, else — for MCP spans only (``mcp.method.name`` set) — ``server.address`` (a host, not
  a configured name).  An MCP tool call (``mcp.method.name`` ``tools/call``, on the span or on
  the MCP client span folded into it) with neither is still a call to an MCP server, so a call
  a door may have decided: ``server`` is :data:`UNNAMED_MCP_SERVER` (``"(unnamed MCP server)"``),
  never NA, which the join would take for a built-in tool that no door sees.  A tool span
  without ``mcp.method.name`` and without a name (a framework's own function tool) keeps NA.
* Arguments: ``gen_ai.tool.call.arguments`` is a JSON string (or a structured value); it is
  parsed and canonicalised.  Not recorded (the attribute is opt-in) → ``arguments`` None and
  ``args_key`` NA; not JSON → ``args_key`` NA, raw text in ``text`` and a note in
  ``inputs[i]["notes"]``.
* Message content (opt-in): a model span's ``gen_ai.output.messages`` / ``gen_ai.input.messages``
  (semconv 1.37+; JSON text or structured; also on a ``gen_ai.client.inference.operation.details``
  span event), else the deprecated ``gen_ai.completion`` / ``gen_ai.prompt`` in the OpenAI
  messages format (semconv ≤ 1.26, on the span or its ``gen_ai.content.completion`` /
  ``gen_ai.content.prompt`` event).  Its text parts are the ``model_request`` row's ``text``.
* **The user's prompts.**  A model span's input messages (opt-in content, any of the shapes
  above) are the conversation so far, so each user message is a ``user_prompt`` row the first
  time a request of the transcript sends it — counted, so the same words typed twice are two
  prompts and the history sent again is none; a sub-agent's task is its first prompt.  ``ts`` is
  the start of the request that first sent it, ``parent_uuid`` that span, ``line_type``
  ``<operation>/user``, ``text`` the message's text parts; a user message of tool results only
  is none.
* **Tool calls the model asked for.**  Instrumentation of the model client alone (no tool
  spans) records tool calls only as ``tool_call`` parts of the output (``{type: tool_call, id,
  name, arguments}``; OpenAI ``tool_calls[].function``).  Each such call that no tool span of the
  transcript records by its call id becomes a ``tool_call`` row: ``line_type``
  ``<operation>/tool_call``, ``ts`` the model span's end (when the answer asking for it arrived),
  ``parent_uuid`` the model span, ``result_text`` the ``tool_call_response`` with its id sent back
  in a later request of the transcript (``result_ts`` NaT: when it was produced is not recorded).
  A call a tool span records by id gives that span's row its arguments when the span recorded
  none.  Where ids cannot tell (a call without an id, or a tool span that records none), a call
  is a row only when no such tool span of the transcript has its name: counted once, not twice.
  An id asked again under another tool or other arguments (providers that number each answer's
  calls from ``call_0``) is another call, a row of its own; the n-th call of an id gets the n-th
  ``tool_call_response`` with that id.

Times are converted from Unix nanoseconds to tz-aware UTC (a span starting before 1970-01-12 —
a time an exporter wrote in seconds, milliseconds or microseconds — is read so, and
``inputs[i]["notes"]`` names its line); a time of 0 (protobuf's default: not set)
is absent — a start of 0 sets the span aside, an end of 0 is a span not ended (``result_ts``
NaT).  A line that is not JSON, not an object, or not an export request, and a span without
``traceId``/``spanId`` or a start time, go to the quarantine with file and line; an unterminated
last line is ``pending``.  An attribute (of a
span, a span event or the resource) whose ``AnyValue`` has the wrong shape anywhere inside — an
``arrayValue`` / ``kvlistValue`` whose ``values`` is no list, a ``stringValue`` that is no text,
an ``intValue`` that is no whole number (an integer or its decimal digits), a ``boolValue`` that
is not true or false, a ``bytesValue`` that is no text, an object with none of the
``AnyValue`` fields (``{"foo": 1}``; but an empty ``{}`` is OTLP's encoding of a value not set:
absent, with no row) — and an attributes entry that is no key and value, are read as absent,
each a quarantine row (``span <id>: <attribute> has a malformed value (…): read as absent``, the
span's line, the value as ``raw``).  In a JSON document
(not JSON Lines) a span holding a raw control character (a NUL byte, an unescaped tab in a
string) is a quarantine row with its line and byte offset, and the other spans are read; such a
character outside every span is a row of its own.  An attribute of the
OpenLLMetry / OpenInference vocabularies whose value is of the wrong type (a kind, name, id,
role or token count that is not text or a whole number, an index that is no number, a tool call
without a name, ``input.value`` that is not the JSON its ``input.mime_type`` says) is a quarantine
row too (``span <id>: <attribute> …``, the span's line, the value as ``raw``); the span keeps its
row with what could be read.  So is a GenAI attribute the row is read from that has the wrong type:
an id, name, model or operation that is not text (left out: the span's name, its trace or
nothing stands in; but an integer ``gen_ai.tool.call.id`` is the same id written as a number:
read as its digits, ``call_id`` ``"42"``, with a note in ``inputs[i]["notes"]``), a token count (``gen_ai.usage.input_tokens`` / ``output_tokens``) that is
not a whole number — an integer, or its decimal digits as text, as OTLP/JSON writes a 64-bit
``intValue`` and some instrumentations a ``stringValue`` (``"12"``: read as 12) — or that is
beyond a 64-bit integer (``input_tokens`` / ``output_tokens`` NA).  A span ``status`` that is
not an object ``{code, message}`` (``"status": "ERROR"``), or whose ``code`` is no ``StatusCode``
(its number 0–2 or its name, ``2`` / ``"STATUS_CODE_ERROR"``), is not read and is a quarantine row
(``span <id>: status … whether the span failed is unknown``): the call's ``is_error`` is NA, not
False, unless ``error.type`` or the MCP result says it failed (the same for a call whose last
nested attempt has such a status); a ``status.message`` that is not text is left out with a row.  Export
requests of other signals (``resourceLogs``, ``resourceMetrics``) are counted in ``inputs[i]["other_signals"]``.
Files are opened read-only.

Raises :class:`~replaybook.errors.InputError` for a missing path or an unreadable file.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import orjson
import pandas as pd

from .. import _json
from .._jsonl import (Damaged, control_repair, expand_paths, iter_objects, json_doc_items, lines_note, quarantine_row,
                      read_source, shown_value)
from .._text import deep_safe, safe_str, truncate
from ..canonical import arguments_from_text, canonical_args
from ..frames import QUARANTINE, STEPS, LoadResult
from ._otel_shapes import Shape, read_shape
from .codex import split_codex_name
from .registry import Source, register

__all__ = ["load_otel", "sniff", "otlp_value", "LOADER", "CLIENT", "UNNAMED_MCP_SERVER"]

#: Source name in the registry and ``quarantine.loader``.
LOADER = "otel"
#: Value of ``steps.client``.
CLIENT = "otel"
#: ``steps.server`` of an MCP ``tools/call`` span that names no server (no ``mcp.server.name``,
#: no ``server.address``, no ``mcp__<server>__`` prefix): an MCP call, so door-bound for the join.
UNNAMED_MCP_SERVER = "(unnamed MCP server)"

_RS = ("resourceSpans", "resource_spans")
_SS = ("scopeSpans", "scope_spans", "instrumentationLibrarySpans", "instrumentation_library_spans")
_SPAN_PATH = (_RS, "*", _SS, "*", ("spans",), "*")
_MODEL_OPS = frozenset({"chat", "text_completion", "generate_content", "completion"})
_ERROR_CODES = (2, "2", "STATUS_CODE_ERROR", "ERROR")
#: ``Status.code`` as OTLP/JSON writes it: the ``StatusCode`` enum's number or name (and the short
#: names and numbers as text some exporters write); ``_ERROR_CODES`` are the failures among them
_STATUS_CODES = frozenset({0, 1, 2, "0", "1", "2", "STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR",
                           "UNSET", "OK", "ERROR"})


class _Malformed(ValueError):
    """An OTLP ``AnyValue`` whose fields do not have the types the JSON encoding gives them
    (the message says which and what it held)."""


_INT_TEXT = re.compile(r"[+-]?[0-9]+")


def _kind(x: Any) -> str:
    return "null" if x is None else type(x).__name__


def _decode(v: Any) -> Any:
    """:func:`otlp_value`, raising :class:`_Malformed` for a value of the wrong shape."""
    if not isinstance(v, dict):
        return v
    for k in ("stringValue", "string_value"):
        if k in v:
            x = v[k]
            if x is None or isinstance(x, str):
                return x
            raise _Malformed(f"{k} is not text ({_kind(x)})")
    for k in ("intValue", "int_value"):
        if k in v:
            x = v[k]
            if x is None or (isinstance(x, int) and not isinstance(x, bool)):
                return x
            if isinstance(x, str) and x.isascii() and _INT_TEXT.fullmatch(x):
                try:
                    return int(x)
                except ValueError:  # (more digits than Python converts: past 4,300)
                    raise _Malformed(f"{k} is a whole number of {len(x):,} characters, too long to read") from None
            raise _Malformed(f"{k} is not a whole number ({_kind(x)})")
    for k in ("doubleValue", "double_value"):
        if k in v:
            x = v[k]
            if x is None:
                return None
            if isinstance(x, (int, float, str)) and not isinstance(x, bool):
                try:       # (text: "NaN", "Infinity", "1.5", as the JSON encoding allows)
                    return float(x)
                except (ValueError, OverflowError):
                    pass
            raise _Malformed(f"{k} is not a number ({_kind(x)})")
    for k in ("boolValue", "bool_value"):
        if k in v:
            x = v[k]
            if x is None or isinstance(x, bool):
                return x
            raise _Malformed(f"{k} is not true or false ({_kind(x)})")
    for k in ("arrayValue", "array_value"):
        if k in v:
            vals = _values(v[k], k)
            out = []
            for i, x in enumerate(vals):
                try:
                    out.append(_decode(x))
                except _Malformed as exc:
                    raise _Malformed(f"{k}.values[{i}]: {exc}") from None
            return out
    for k in ("kvlistValue", "kvlist_value"):
        if k in v:
            out_kv: dict = {}
            for i, a in enumerate(_values(v[k], k)):
                if not (isinstance(a, dict) and isinstance(a.get("key"), str)):
                    raise _Malformed(f"{k}.values[{i}] is not a key and value ({_kind(a)})")
                try:
                    out_kv[a["key"]] = _decode(a.get("value"))
                except _Malformed as exc:
                    raise _Malformed(f"{k}.values[{i}] ({a['key']}): {exc}") from None
            return out_kv
    for k in ("bytesValue", "bytes_value"):
        if k in v:
            x = v[k]
            if x is None or isinstance(x, str):
                return x
            raise _Malformed(f"{k} is not base64 text ({_kind(x)})")
    if v:  # (an empty AnyValue, {}, is OTLP's unset value: absent, and nothing wrong)
        names = ", ".join(safe_str(str(n))[:40] for n in list(v)[:3]) + (", …" if len(v) > 3 else "")
        raise _Malformed(f"no AnyValue field: {names}")
    return None


def _values(x: Any, k: str) -> list:
    """The ``values`` list of an ``ArrayValue`` / ``KeyValueList`` (absent or null: empty)."""
    if x is None:
        return []
    if not isinstance(x, dict):
        raise _Malformed(f"{k} is not an object ({_kind(x)})")
    vals = x.get("values")
    if vals is None:
        return []
    if not isinstance(vals, list):
        raise _Malformed(f"{k}.values is not a list ({_kind(vals)})")
    return vals


def otlp_value(v: Any) -> Any:
    """Decode an OTLP JSON ``AnyValue`` (``{"stringValue": …}`` etc.) into a Python value.

    ``intValue`` (an integer, or its decimal digits as the JSON encoding writes 64-bit integers)
    becomes ``int``; ``doubleValue`` ``float``; ``arrayValue`` a list; ``kvlistValue`` a dict;
    ``bytesValue`` stays the base64 text; an empty ``AnyValue`` (``{}``, how OTLP/JSON writes a
    value that is not set) is None, and nothing wrong.  A value of the wrong shape anywhere inside
    (``{"arrayValue": {"values": 5}}``, ``{"boolValue": "yes"}``, an ``intValue`` that is no whole
    number, an object with none of the ``AnyValue`` fields such as ``{"foo": 1}``) is None as a
    whole: the loader reads such an attribute as absent and says so in a quarantine row
    (:func:`_attrs`); an empty one gives no row.
    """
    try:
        return _decode(v)
    except (_Malformed, RecursionError):
        return None


def _attrs(lst: Any, bad: list | None = None) -> dict:
    """``{key: value}`` of an OTLP ``attributes`` list (``[{key, value: AnyValue}]``; a mapping, as
    some exporters write, is read too).  An entry that is no key and value, and an attribute
    whose value has the wrong shape (:func:`otlp_value`), are left out, and each is added to
    ``bad`` as ``(attribute, what, value)`` for a quarantine row."""
    out: dict = {}
    if isinstance(lst, dict):  # already a mapping (some exporters)
        items = list(lst.items())
    elif isinstance(lst, list):
        items = []
        for i, a in enumerate(lst):
            if isinstance(a, dict) and isinstance(a.get("key"), str):
                items.append((a["key"], a.get("value")))
            elif bad is not None:
                bad.append((f"attributes[{i}]", f"is not a key and value ({_kind(a)}): not read", a))
    else:
        if lst is not None and bad is not None:
            bad.append(("attributes", f"is not a list ({_kind(lst)}): none of them is read", lst))
        return out
    for k, v in items:
        try:
            out[k] = _decode(v)
        except (_Malformed, RecursionError) as exc:
            if bad is not None:
                why = str(exc) if isinstance(exc, _Malformed) else "nested too deeply"
                bad.append((k, f"has a malformed value ({why}): read as absent", v))
    return out


def _get(d: dict, *names: str) -> Any:
    for n in names:
        if n in d:
            return d[n]
    return None


def _hex_id(v: Any) -> str | None:
    """Trace/span ids: OTLP JSON uses hex; proto-JSON from some SDKs uses base64."""
    if not isinstance(v, str) or not v:
        return None
    if re.fullmatch(r"[0-9a-fA-F]+", v):
        return v.lower()
    try:
        return base64.b64decode(v, validate=True).hex()
    except (ValueError, TypeError):
        return v


def _ns(v: Any) -> int | None:
    """A ``*UnixNano`` value (an integer, or its decimal digits as OTLP/JSON writes 64-bit
    integers) as nanoseconds since the epoch; ``None`` when it is not one a timestamp holds
    (negative, past 2262, ``"²"``) or when it is 0, protobuf's default: the time was not set
    (an exporter writing a span not ended yet with ``"endTimeUnixNano": "0"``), never
    1970-01-01."""
    if isinstance(v, bool):
        return None
    if isinstance(v, str) and v.isascii() and v.isdigit() and len(v) <= 19:
        v = int(v)
    if isinstance(v, int) and 0 < v < 2**63:
        return v
    return None


# --------------------------------------------------------------------------- sniffing

#: 10**15 ns is 1970-01-12T13:46:40Z: a span "started" before then had its time written in a
#: smaller unit (a time now in microseconds is about 1.8e15, in milliseconds 1.8e12, in seconds 1.8e9)
_PLAUSIBLE_NS = 10**15
_FRAG = re.compile(rb'"(resourceSpans|resource_spans)"\s*:')
_OTHER_SIGNALS = ("resourceLogs", "resourceMetrics", "resource_logs", "resource_metrics")
_FRAG_OTHER = re.compile(rb'"(resourceLogs|resourceMetrics|resource_logs|resource_metrics)"\s*:')
_GENAI_MARKS = (b'"gen_ai.', b'"mcp.', b'"traceloop.', b'"openinference.', b'"llm.')
_FRAG_SPAN = re.compile(rb'"(traceId|trace_id|spanId|span_id|startTimeUnixNano|start_time_unix_nano)"')


def _export_lines(sample: bytes, keys) -> tuple[int, int]:
    """Of the sample's first 200 non-blank lines: how many are JSON objects holding one of
    ``keys`` (export requests of a signal), and how many there are."""
    lines = [x for x in sample.split(b"\n")[:200] if x.strip()]
    ok = 0
    for raw in lines:
        try:
            o = _json.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(o, dict) and any(k in o for k in keys):
            ok += 1
    return ok, len(lines)


def sniff(sample: bytes) -> float:
    """Confidence in [0, 1] that ``sample`` (a file's first bytes) is OTLP JSON traces.

    Looks at up to 200 lines: JSON Lines of export requests, or one document (parsed when the
    sample holds all of it, else judged by its visible keys).  0.95 with ``resourceSpans`` and
    span keys (0.97 when ``gen_ai.``/``mcp.`` attributes, or OpenLLMetry's ``traceloop.`` /
    ``llm.`` or OpenInference's ``openinference.`` ones, show); 0.6 for JSON Lines of export
    requests of other signals only (``resourceLogs``, ``resourceMetrics``): the Collector's
    ``file`` exporter shared by a logs, a metrics and a traces pipeline writes them all to one
    file, and its spans may come after the sample; 0 otherwise.
    """
    if not _FRAG.search(sample):
        if not _FRAG_OTHER.search(sample):
            return 0.0
        ok, seen = _export_lines(sample, _OTHER_SIGNALS)
        return 0.6 if ok and ok >= seen - 1 else 0.0
    has_span = bool(_FRAG_SPAN.search(sample))
    genai = any(m in sample for m in _GENAI_MARKS)
    ok, seen = _export_lines(sample, _RS)
    if ok and ok >= seen - 1:  # JSON Lines (the last line may be cut)
        return 0.97 if genai else 0.95
    if has_span:
        return 0.97 if genai else 0.9
    return 0.5


# --------------------------------------------------------------------------- loading

@dataclass
class _Span:
    trace: str
    span: str
    parent: str | None
    name: str | None
    kind: Any
    start: int
    end: int | None
    attrs: dict
    status_code: Any
    status_msg: str | None
    res: dict
    file_idx: int
    line_no: int | None
    order: int
    events: tuple = ()        # (name, attributes) of the span's events, in order
    shape: Shape | None = None  # what its OpenLLMetry / OpenInference attributes mean (_otel_shapes)
    bad: tuple = ()           # (attribute, what, value) of attributes of the wrong shape, read as absent
    status_unknown: bool = False  # a status of the wrong shape (_status): whether the span failed is unknown


def _read(path: Path, file_idx: int, quarantine: list[dict], spans: list[_Span], counter: list[int]) -> dict:
    data, info = read_source(path, LOADER, "OTLP file")
    info.update(notes=info.get("notes", []), other_signals=0, duplicates=0, layout=None)  # (read_source's kept)
    doc = None
    rep = None
    stripped = data.strip()
    if stripped[:1] in (b"{", b"["):
        try:
            doc = _json.loads(stripped)   # one document (pretty or not); JSON Lines fail at line 2
        except orjson.JSONDecodeError:
            doc = None
            rep = control_repair(data)  # valid but for raw control characters: read around them
            if rep is not None:
                doc = rep.doc
            elif stripped.split(b"\n", 1)[0].strip() in (b"{", b"["):  # a pretty document that does not parse
                try:
                    _json.loads_lenient(data.decode("utf-8", "replace"))
                except json.JSONDecodeError as exc:
                    quarantine.append(quarantine_row(path, None, LOADER, f"OTLP JSON document is not valid JSON: "
                                                     f"{exc.msg}", line_no=exc.lineno, raw=data[:400]))
                    info["layout"] = "document"
                    return info
    if doc is not None:
        info["layout"] = "document"
        reqs = doc if isinstance(doc, list) else [doc]
        text = data.decode("utf-8", "replace")
        path_ = ("*",) + _SPAN_PATH if isinstance(doc, list) else _SPAN_PATH
        try:
            lines = [ln for ln, _o, _v in json_doc_items(text, path_)] if rep is None else \
                _around_damage(path, rep, path_, reqs, quarantine)
        except ValueError:
            lines = []
        it = iter(lines)
        for k, req in enumerate(reqs):
            if not isinstance(req, dict) or not any(x in req for x in _RS):
                if isinstance(req, dict) and any(x in req for x in _OTHER_SIGNALS):
                    info["other_signals"] += 1
                else:
                    quarantine.append(quarantine_row(path, None, LOADER, "not an OTLP trace export request "
                                                     "(no resourceSpans)", line_no=1 if not isinstance(doc, list) else None,
                                                     raw=_json.dumps(req)[:400] if req is not None else None))
                continue
            _request(path, req, lambda: next(it, None), file_idx, quarantine, spans, counter, info,
                     req_line=None if isinstance(doc, list) else 1 + data[:len(data) - len(data.lstrip())].count(b"\n"))
        return info
    info["layout"] = "jsonl"
    # (a line glued to a torn one: an export request begins it, never an object nested in one)
    for line in iter_objects(path, data, LOADER, quarantine, accept=lambda o: any(x in o for x in _RS)):
        o = line.obj
        if not any(x in o for x in _RS):
            if any(x in o for x in _OTHER_SIGNALS):
                info["other_signals"] += 1
                continue
            quarantine.append(quarantine_row(path, line, LOADER, "not an OTLP trace export request (no resourceSpans)"))
            continue
        ln = line.line_no
        _request(path, o, lambda: ln, file_idx, quarantine, spans, counter, info, req_line=ln)
    return info


def _around_damage(path: Path, rep: Any, path_: tuple, reqs: list, quarantine: list[dict]) -> list[int]:
    """The spans' lines of a document that is valid but for raw control characters (``rep``, a
    :class:`~replaybook._jsonl.ControlRepair`; ``reqs`` its export requests): each span is put
    back into ``reqs`` as read from its own text, a span holding such a character as a
    :class:`~replaybook._jsonl.Damaged` (:func:`_request` quarantines it); such a character
    outside every span is a quarantine row."""
    elements, outside = rep.elements(path_, exact=True)
    for d in outside:
        quarantine.append(quarantine_row(path, None, LOADER, d.reason(f"{len(elements):,} spans"),
                                         line_no=d.line_no, offset=d.offset, raw=d.raw))
    values = iter(v for _ln, _off, v in elements)
    for req in reqs:  # (the order _request reads them in, which is the document's)
        for rs in (_get(req, *_RS) if isinstance(req, dict) else None) or ():
            for ss in (_get(rs, *_SS) if isinstance(rs, dict) else None) or ():
                sps = ss.get("spans") if isinstance(ss, dict) else None
                if isinstance(sps, list):
                    sps[:] = [next(values, sp) for sp in sps]
    return [ln for ln, _off, _v in elements]


def _request(path: Path, req: dict, next_line, file_idx: int, quarantine: list[dict],
             spans: list[_Span], counter: list[int], info: dict, req_line: int | None = None) -> None:
    req = deep_safe(req)

    def listed(v: Any, what: str) -> list:
        """``v`` when it is a list (``None``: empty); anything else is quarantined, with the
        request's line (JSON Lines), since the spans it should hold cannot be read."""
        if v is None or isinstance(v, list):
            return v or []
        quarantine.append(quarantine_row(path, None, LOADER, f"{what} is not a list ({type(v).__name__}): "
                                         "no span of it can be read", line_no=req_line,
                                         raw=_json.dumps(v)[:400]))
        return []

    for rs in listed(_get(req, *_RS), "resourceSpans"):
        if not isinstance(rs, dict):
            continue
        bad_res: list = []
        res = _attrs(rs["resource"].get("attributes") if isinstance(rs.get("resource"), dict) else None, bad_res)
        for attr, what, value in bad_res:
            quarantine.append(quarantine_row(path, None, LOADER, f"resource attribute {attr} {what}",
                                             line_no=req_line, raw=_json.dumps(value)[:400]))
        for ss in listed(_get(rs, *_SS), "scopeSpans"):
            if not isinstance(ss, dict):
                continue
            for sp in listed(ss.get("spans"), "spans"):
                ln = next_line()
                if isinstance(sp, Damaged):  # (a raw control character in it: _around_damage)
                    quarantine.append(quarantine_row(path, None, LOADER, sp.reason(f"span {sp.index + 1} of the file"),
                                                     line_no=sp.line_no, offset=sp.offset, raw=sp.raw))
                    continue
                if not isinstance(sp, dict):
                    quarantine.append(quarantine_row(path, None, LOADER, "span is not an object", line_no=ln))
                    continue
                trace = _hex_id(_get(sp, "traceId", "trace_id"))
                sid = _hex_id(_get(sp, "spanId", "span_id"))
                start = _ns(_get(sp, "startTimeUnixNano", "start_time_unix_nano"))
                if trace is None or sid is None or start is None:
                    bad = [k for k, v in (("traceId", trace), ("spanId", sid), ("startTimeUnixNano", start))
                           if v is None]
                    quarantine.append(quarantine_row(
                        path, None, LOADER, f"span without a usable {' or '.join(bad)}"
                        + (" (nanoseconds since 1970, before 2262)" if start is None else ""), line_no=ln,
                        raw=_json.dumps(sp)[:400]))
                    continue
                counter[0] += 1
                name = sp.get("name") if isinstance(sp.get("name"), str) else None
                bad: list = []
                code, msg, status_unknown = _status(sp.get("status"), bad)
                attrs = _attrs(sp.get("attributes"), bad)
                events = _events(sp.get("events"), bad)
                shape = read_shape(attrs, name)
                for k, v in shape.derived.items():   # what the span means, in gen_ai.* terms
                    attrs.setdefault(k, v)
                spans.append(_Span(
                    trace=trace, span=sid, parent=_hex_id(_get(sp, "parentSpanId", "parent_span_id")),
                    name=name, kind=sp.get("kind"),
                    start=start, end=_ns(_get(sp, "endTimeUnixNano", "end_time_unix_nano")),
                    attrs=attrs, status_code=code, status_msg=msg,
                    res=res, file_idx=file_idx, line_no=ln, order=counter[0], events=events,
                    shape=shape if shape.convention or shape.derived or shape.problems else None, bad=tuple(bad),
                    status_unknown=status_unknown))


def _status(v: Any, bad: list) -> tuple[Any, str | None, bool]:
    """``(code, message, unknown)`` of a span's ``status`` (OTLP ``Status``: ``{"code": <StatusCode>,
    "message": <text>}``, ``code`` the enum's number or name, ``2`` / ``"STATUS_CODE_ERROR"``).  No
    status, ``null``, or no ``code`` is UNSET: ``(None, …, False)``.  A status that is not an object
    (``"ERROR"``) or a ``code`` that is no status code is not read: ``unknown`` is True (whether the
    span failed is unknown) and ``bad`` gets ``(attribute, what, value)`` for a quarantine row; so
    does a ``message`` that is not text (left out)."""
    if v is None:
        return None, None, False
    if not isinstance(v, dict):
        bad.append(("status", f"is not an object ({shown_value(v)}): not read, so whether the span failed is unknown", v))
        return None, None, True
    code, msg = v.get("code"), v.get("message")
    unknown = False
    if code is not None and not (isinstance(code, (int, str)) and not isinstance(code, bool)
                                 and code in _STATUS_CODES):
        bad.append(("status.code", f"is not a status code ({shown_value(code)}): not read, so whether the span failed "
                    "is unknown", code))
        code, unknown = None, True
    if msg is not None and not isinstance(msg, str):
        bad.append(("status.message", f"is not text ({shown_value(msg)}): not read", msg))
        msg = None
    return code, msg, unknown


#: GenAI semantic-convention attributes the rows are read from, and the type each must have
#: (OpenTelemetry semconv, gen-ai spans): text, or a whole number
_GEN_AI_TEXT = ("gen_ai.conversation.id", "gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id",
                "gen_ai.request.model", "gen_ai.response.model", "gen_ai.response.id", "gen_ai.agent.id",
                "gen_ai.agent.name")
_GEN_AI_INT = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")


def _gen_ai_problems(attrs: dict) -> tuple:
    """``(attribute, what, value)`` for each GenAI attribute of ``attrs`` of the wrong type: left
    out of the row (the span's name, its trace or nothing stands in), so a quarantine row says
    so — a conversation id that is a number had moved the span to another transcript silently."""
    out = []
    for k in _GEN_AI_TEXT:
        v = attrs.get(k)
        if k == "gen_ai.tool.call.id" and _call_id(v) is not None:
            continue   # (an integer id is read as its digits: a note says so, see _int_call_id_note)
        if v is not None and not isinstance(v, str):
            out.append((k, f"is not text ({_json.dumps(v)[:60].decode('utf-8', 'replace')}): not read", v))
    for k in _GEN_AI_INT:
        v = attrs.get(k)
        problem = _whole_number(v)[1]
        if problem is not None:
            out.append((k, f"{problem} ({_json.dumps(v)[:60].decode('utf-8', 'replace')}): not read", v))
    return tuple(out)


_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


def _call_id(v: Any) -> str | None:
    """A ``gen_ai.tool.call.id`` as the row's ``call_id``: text as written; an integer (an
    ``intValue``, which some instrumentations write for a numeric id) as its decimal digits —
    the same id, as text; anything else (a boolean, a number with a fraction, a list) is no id:
    ``None`` (and a quarantine row, :func:`_gen_ai_problems`)."""
    if isinstance(v, str):
        return v
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return None


def _int_call_id_note(s: "_Span") -> str | None:
    """The ``inputs`` note for a span whose ``gen_ai.tool.call.id`` is an integer (read as its
    digits), else ``None``."""
    v = s.attrs.get("gen_ai.tool.call.id")
    if isinstance(v, int) and not isinstance(v, bool):
        return (f"line {s.line_no}: span {s.span} gen_ai.tool.call.id is a number ({v}), not text: "
                f"read as the call id {str(v)!r}")
    return None


def _whole_number(v: Any) -> tuple[int | None, str | None]:
    """``(number, None)`` for a token count as the GenAI conventions record it — an integer, or
    its decimal digits as text (blanks around them allowed), as OTLP/JSON writes a 64-bit
    ``intValue`` and some instrumentations a ``stringValue`` — that a 64-bit integer holds;
    ``(None, what is wrong)`` for any other value; ``(None, None)`` when absent."""
    if v is None:
        return None, None
    if isinstance(v, str) and v.isascii() and _INT_TEXT.fullmatch(v.strip()):
        try:
            v = int(v)
        except ValueError:  # (more digits than Python converts)
            return None, "is beyond what a 64-bit integer holds"
    if isinstance(v, bool) or not isinstance(v, int):
        return None, "is not a whole number"
    if not _I64_MIN <= v <= _I64_MAX:
        return None, "is beyond what a 64-bit integer holds"
    return v, None


def _events(v: Any, bad: list | None = None) -> tuple:
    """``((name, attributes), …)`` of a span's ``events`` (``Span.Event``: ``timeUnixNano``, ``name``,
    ``attributes``); events that are not objects are left out.  An event attribute of the wrong
    shape is read as absent and added to ``bad`` (``event <name> attribute <key>``, what, value)."""
    if not isinstance(v, list):
        return ()
    out = []
    for e in v:
        if isinstance(e, dict) and isinstance(e.get("name"), str):
            got: list = []
            out.append((e["name"], _attrs(e.get("attributes"), got)))
            if bad is not None:
                bad.extend((f"event {e['name']} attribute {a}", what, x) for a, what, x in got)
    return tuple(out)


def _op(s: _Span) -> str | None:
    op = s.attrs.get("gen_ai.operation.name")
    return op if isinstance(op, str) and op else None


def _is_agent(s: _Span) -> bool:
    """An agent's span: ``invoke_agent``, OpenLLMetry ``agent``, OpenInference ``AGENT``."""
    return _op(s) == "invoke_agent" or (s.shape is not None and s.shape.agent is not None)


def _agent_id(s: _Span) -> str:
    a = s.attrs.get("gen_ai.agent.id") or s.attrs.get("gen_ai.agent.name") or (s.shape.agent if s.shape else None)
    return a if isinstance(a, str) and a else s.span


def _is_tool(s: _Span) -> bool:
    return _op(s) == "execute_tool" or s.attrs.get("mcp.method.name") == "tools/call"


def _tool_name(s: _Span) -> str | None:
    n = s.attrs.get("gen_ai.tool.name")
    if isinstance(n, str) and n:
        return n
    if s.name and s.attrs.get("mcp.method.name") == "tools/call":
        parts = s.name.split(" ", 1)
        if len(parts) == 2 and parts[1]:
            return parts[1]
    if s.name and _op(s) == "execute_tool":
        parts = s.name.split(" ", 1)
        if len(parts) == 2 and parts[1]:
            return parts[1]
    return None


def _iso(ns: int | None) -> str | None:
    if ns is None:
        return None
    return pd.Timestamp(ns, unit="ns", tz="UTC").isoformat()


def _json_value(v: Any) -> Any:
    """An attribute that holds JSON either as text (semconv: "MAY be recorded as a JSON string")
    or structured (``kvlistValue``/``arrayValue``), as a Python value; None when text is not JSON."""
    if isinstance(v, str):
        try:
            v = _json.loads_lenient(v)
        except (json.JSONDecodeError, RecursionError):
            return None
        return deep_safe(v)
    return v


def _messages(v: Any) -> list[dict]:
    """The messages of a ``gen_ai.input.messages`` / ``gen_ai.output.messages`` value (semconv
    1.37+: ``[{role, parts: [{type: text, content} | {type: tool_call, id, name, arguments} |
    {type: tool_call_response, id, response}]}]``) or of the older OpenAI-format content
    (``gen_ai.prompt`` / ``gen_ai.completion``, semconv ≤ 1.26: ``[{role, content, tool_calls:
    [{id, type: function, function: {name, arguments}}]}]``, or ``choices`` ``[{message: …}]``)."""
    v = _json_value(v)
    if isinstance(v, dict):
        v = [v]
    if not isinstance(v, list):
        return []
    out = []
    for m in v:
        if isinstance(m, dict) and isinstance(m.get("message"), dict) and "role" not in m:
            m = m["message"]  # a choice
        if isinstance(m, dict):
            out.append(m)
    return out


def _parts(m: dict) -> list[dict]:
    """A message's parts in the semconv 1.37+ shape, whichever shape it was written in."""
    parts = m.get("parts")
    if isinstance(parts, list):
        return [p for p in parts if isinstance(p, dict)]
    out: list[dict] = []
    content = m.get("content")
    if isinstance(content, str):
        out.append({"type": "text", "content": content})
    elif isinstance(content, list):
        for c in content:
            if isinstance(c, str):
                out.append({"type": "text", "content": c})
            elif isinstance(c, dict) and isinstance(c.get("text"), str):
                out.append({"type": "text", "content": c["text"]})
    if m.get("role") == "tool" and (m.get("tool_call_id") is not None or m.get("id") is not None):
        return [{"type": "tool_call_response", "id": m.get("tool_call_id", m.get("id")),
                 "response": "\n".join(p["content"] for p in out) if out else content}]
    calls = m.get("tool_calls")
    for c in calls if isinstance(calls, list) else []:
        fn = c.get("function") if isinstance(c, dict) else None
        if isinstance(fn, dict):
            out.append({"type": "tool_call", "id": c.get("id"), "name": fn.get("name"),
                        "arguments": fn.get("arguments")})
    fn = m.get("function_call")
    if isinstance(fn, dict):
        out.append({"type": "tool_call", "id": None, "name": fn.get("name"), "arguments": fn.get("arguments")})
    return out


def _content_of(s: _Span, attrs: dict, what: str) -> Any:
    """A model span's ``gen_ai.{what}.messages`` (``input``/``output``) as recorded: the attribute,
    else the ``gen_ai.client.inference.operation.details`` event's, else the deprecated
    ``gen_ai.prompt``/``gen_ai.completion`` attribute or its ``gen_ai.content.prompt``/
    ``gen_ai.content.completion`` event (semconv ≤ 1.26)."""
    key = f"gen_ai.{what}.messages"
    if attrs.get(key) is not None:
        return attrs[key]
    for name, ea in s.events:
        if name == "gen_ai.client.inference.operation.details" and ea.get(key) is not None:
            return ea[key]
    old = "gen_ai.prompt" if what == "input" else "gen_ai.completion"
    if attrs.get(old) is not None:
        return attrs[old]
    for name, ea in s.events:
        if name == f"gen_ai.content.{'prompt' if what == 'input' else 'completion'}" and ea.get(old) is not None:
            return ea[old]
    return None


def _text_of_messages(v: Any) -> str | None:
    """Text parts of model output messages (any shape :func:`_messages` reads), joined."""
    texts = [p["content"] for m in _messages(v) for p in _parts(m)
             if p.get("type") == "text" and isinstance(p.get("content"), str)]
    return "\n".join(texts) if texts else None


def _user_texts(v: Any) -> list[str]:
    """The text of each user message of model input messages (any shape :func:`_messages` reads),
    in order; a user message with no text (only tool results, images) is left out."""
    out = []
    for m in _messages(v):
        if m.get("role") == "user":
            t = "\n".join(p["content"] for p in _parts(m)
                          if p.get("type") == "text" and isinstance(p.get("content"), str))
            if t.strip():
                out.append(t)
    return out


def _prompts(rows: list[dict], keys: list[tuple], model_rows: list[tuple[int, _Span, dict]]) -> None:
    """The user's prompts, from the messages sent to the model: each request sends the
    conversation so far, so a user message is a prompt of its own the first time a request of
    the transcript holds it (counted, so a prompt typed twice — "go on" — is two).  The row
    stands before the request that first sent it: ``ts`` its start, ``parent_uuid`` its span."""
    seen: dict[str, dict[str, int]] = {}
    for i, s, attrs in sorted(model_rows, key=lambda m: keys[m[0]]):
        base = rows[i]
        tid = base["transcript_id"]
        before = seen.setdefault(tid, {})
        now: dict[str, int] = {}
        new = []
        for t in _user_texts(_content_of(s, attrs, "input")):
            now[t] = now.get(t, 0) + 1
            if now[t] > before.get(t, 0):
                new.append(t)
        for t, n in now.items():
            before[t] = max(before.get(t, 0), n)
        for n, t in enumerate(new):
            text, nb = truncate(t)
            rows.append({**{k: base[k] for k in ("transcript_id", "client", "client_version", "client_session_id",
                                                 "agent_id", "source_file", "line_no")},
                         "kind": "user_prompt", "line_type": f"{base['line_type']}/user", "text": text,
                         "text_bytes": nb, "parent_uuid": s.span, "_ts": _iso(s.start), "_rts": None})
            keys.append((tid, s.start, s.order, n - len(new)))


def _requested_calls(v: Any) -> list[dict]:
    """The ``tool_call`` parts of model output messages: what the model asked to call."""
    return [p for m in _messages(v) for p in _parts(m)
            if p.get("type") == "tool_call" and isinstance(p.get("name"), str) and p["name"]]


def _responses(v: Any) -> dict[str, list]:
    """``{call id: [response, …]}`` of the ``tool_call_response`` parts of model input messages, in
    message order: an id a provider numbers per response (``call_0``) answers several calls."""
    out: dict[str, list] = {}
    for m in _messages(v):
        for p in _parts(m):
            if p.get("type") == "tool_call_response" and p.get("id") is not None:
                out.setdefault(str(p["id"]).strip(), []).append(p.get("response", p.get("result")))
    return out


def _parse_args(v: Any) -> tuple[Any, str | None, str | None]:
    """``(arguments, args_key, raw_text_if_unparsable)``."""
    if v is None:
        return None, None, None
    if isinstance(v, (dict, list)):
        return v, canonical_args(v), None
    if isinstance(v, str):
        try:
            obj = arguments_from_text(v)
        except ValueError:
            return None, None, v
        return obj, canonical_args(obj), None
    return None, None, str(v)


def _requested(rows: list[dict], keys: list[tuple], model_rows: list[tuple[int, _Span, dict]],
               tool_rows: dict[tuple[str, str], int], tool_names: dict[tuple[str, bool], set],
               inputs: list[dict], id_names: dict[tuple[str, str], set] | None = None) -> None:
    """Tool calls the model asked for (``tool_call`` parts of a model span's output) that no tool
    span of the transcript records become ``tool_call`` rows of their own; those a tool span
    records (same call id) give it the arguments it did not record.  The ``tool_call_response``
    parts sent back to the model in later requests give such rows their ``result_text``.

    Call ids are unique only within a response for some providers (``call_0`` in every answer):
    a call asked with an id asked before under another tool or other arguments is another call (a
    row of its own), and the n-th call of an id gets the n-th response with that id of the
    conversation's history; the same call in the output of two spans (one request seen by two
    instrumentation layers) is one."""
    responses: dict[tuple[str, str], list] = {}
    for _i, s, attrs in model_rows:
        tid = rows[_i]["transcript_id"]
        for cid, resp in _responses(_content_of(s, attrs, "input")).items():
            if len(resp) > len(responses.get((tid, cid), ())):  # (the longest history holds every answer)
                responses[(tid, cid)] = resp
    seen: dict[tuple[str, str], list] = {}   # (transcript, call id) → the (name, args) asked under it
    for i, s, attrs in sorted(model_rows, key=lambda m: keys[m[0]]):
        base = rows[i]
        tid = base["transcript_id"]
        for n, part in enumerate(_requested_calls(_content_of(s, attrs, "output"))):
            cid = str(part["id"]).strip() if part.get("id") is not None and str(part["id"]).strip() else None
            args, key, raw = _parse_args(part.get("arguments"))
            asked = (part["name"], key if raw is None else raw)
            name = part["name"]
            server, tool = split_codex_name(name) if name.startswith("mcp__") else (None, name)
            prior = seen.get((tid, cid), []) if cid is not None else []
            if cid is not None and (tid, cid) in tool_rows:   # a tool span records this call
                names = (id_names or {}).get((tid, cid), set())
                # unless the id was asked before for another call and no span of the id has this
                # call's tool: then it is that other call, which no tool span records
                if not prior or asked in prior or not names or {name, tool} & names:
                    if asked not in prior:
                        seen.setdefault((tid, cid), []).append(asked)
                    j = tool_rows[(tid, cid)]
                    if j >= 0 and not rows[j].pop("_args_recorded", True) and raw is None and args is not None:
                        rows[j].update(arguments=args, args_key=key)
                    continue
            if cid is not None and asked in prior:  # asked once, recorded on two spans
                continue
            # a tool span of this tool that records no id (or a call that has none) may be this
            # very call: nothing tells them apart, so the span is the row
            if {name, tool} & (tool_names.get((tid, False), set()) |
                               (tool_names.get((tid, True), set()) if cid is None else set())):
                continue
            nth = 0
            if cid is not None:
                nth = len(seen.setdefault((tid, cid), []))
                seen[(tid, cid)].append(asked)
            if raw is not None:
                inputs[s.file_idx]["notes"].append(
                    f"line {s.line_no}: span {s.span} tool call {name!r} arguments are not JSON; args_key left NA")
            answers = responses.get((tid, cid), ()) if cid is not None else ()
            resp = answers[nth] if nth < len(answers) else None
            if resp is not None and not isinstance(resp, str):
                resp = _json.dumps(resp).decode()
            text, nb = truncate(raw)
            rtext, _ = truncate(resp)
            end = s.end if s.end is not None else s.start
            rows.append({**{k: base[k] for k in ("transcript_id", "client", "client_version", "client_session_id",
                                                 "agent_id", "source_file", "line_no", "message_id")},
                         "kind": "tool_call", "line_type": f"{base['line_type']}/tool_call", "tool_raw": name,
                         "server": server, "tool": tool, "call_id": cid, "arguments": args, "args_key": key,
                         "result_text": rtext, "text": text, "text_bytes": nb, "parent_uuid": s.span,
                         "_ts": _iso(end), "_rts": None})
            keys.append((tid, end, s.order, n + 1))


@_json.nesting_room  # (called directly, not only through the registry: a request ~1,000 deep is read)
def load_otel(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load OTLP JSON trace exports into the ``steps`` frame: spans of the GenAI / MCP semantic
    conventions, of OpenLLMetry (Traceloop, semantic-conventions-ai 0.4.x) and of OpenInference
    (Arize Phoenix), as the module docstring describes.

    Runs with room for deep nesting (:func:`replaybook._json.nesting_room`) whether called directly
    or through the registry (:func:`replaybook.load`): a request nested as deep as a JSON parser
    accepts gives the same rows either way, never a ``RecursionError`` out of a recursive walk.

    Args:
        paths: files and/or folders; folders are walked (sorted) for ``*.json``, ``*.jsonl``,
            ``*.json.gz``, ``*.jsonl.gz``; gzip is recognised by magic bytes.

    Returns:
        :class:`~replaybook.frames.LoadResult`: ``frame`` with exactly the
        :data:`~replaybook.frames.STEPS` columns (ordered by transcript, then span start;
        ``ts``/``result_ts`` tz-aware UTC), ``quarantine`` (unusable lines and spans, and
        attribute values of the wrong type, each with file and line), and ``inputs`` (one dict per file:
        ``path``, ``sha256``, ``bytes``, ``lines``, ``format``, ``layout`` (``document`` or
        ``jsonl``), ``duplicates``, ``other_signals``, ``notes``).

    Raises:
        InputError: a path does not exist, or a file cannot be read (permission, corrupt gzip).
    """
    quarantine: list[dict] = []
    spans_all: list[_Span] = []
    counter = [0]
    files = expand_paths(paths, accept=lambda q: q.name.lower().endswith((".json", ".jsonl", ".json.gz", ".jsonl.gz")))
    inputs = [_read(p, i, quarantine, spans_all, counter) for i, p in enumerate(files)]
    spans: list[_Span] = []
    index: dict[tuple[str, str], _Span] = {}
    too_early: dict[int, list[tuple[Any, Any]]] = {}   # file → (line, start) of spans dated in 1970's first days
    at: dict[tuple[str, str], int] = {}   # (trace, span) → its place in spans
    for s in spans_all:
        k = (s.trace, s.span)
        if k in index:
            first = index[k]
            if first.end is None and s.end is not None:  # the span exported again once it ended
                inputs[first.file_idx]["duplicates"] += 1
                index[k] = spans[at[k]] = s
            else:
                inputs[s.file_idx]["duplicates"] += 1
            continue
        index[k] = s
        at[k] = len(spans)
        spans.append(s)
    for s in spans:
        if s.start < _PLAUSIBLE_NS:
            too_early.setdefault(s.file_idx, []).append((s.line_no, str(s.start)))
        note = _int_call_id_note(s)
        if note is not None:
            inputs[s.file_idx]["notes"].append(note)
        for attr, what, value in [*s.bad, *(s.shape.problems if s.shape else ()), *_gen_ai_problems(s.attrs)]:
            quarantine.append(quarantine_row(files[s.file_idx], None, LOADER, f"span {s.span}: {attr} {what}",
                                             line_no=s.line_no, raw=_json.dumps(value)[:400]))

    for fi, got in too_early.items():  # (read as written: the spec's unit; said, since 1970 is surely wrong)
        inputs[fi]["notes"].append(lines_note(
            got, "span", "with a startTimeUnixNano before 1970-01-12, read as nanoseconds as OTLP defines it: "
                         "times written in seconds, milliseconds or microseconds read as January 1970 — "
                         "check the exporter"))

    def parent_of(s: _Span) -> _Span | None:
        return index.get((s.trace, s.parent)) if s.parent else None

    def ancestors(s: _Span):
        seen = {s.span}
        p = parent_of(s)
        while p is not None and p.span not in seen:
            yield p
            seen.add(p.span)
            p = parent_of(p)

    # conversation ids per trace (any span), for spans without their own or an ancestor's
    trace_conv: dict[str, str] = {}
    for s in spans:
        c = s.attrs.get("gen_ai.conversation.id")
        if isinstance(c, str) and c and s.trace not in trace_conv:
            trace_conv[s.trace] = c
    # model spans under invoke_agent spans
    has_model_below: set[tuple[str, str]] = set()
    for s in spans:
        if _op(s) in _MODEL_OPS:
            for a in ancestors(s):
                if _op(a) == "invoke_agent":
                    has_model_below.add((a.trace, a.span))
    # nested tool spans: fold into the outermost tool span for the same tool
    outer_of: dict[tuple[str, str], _Span] = {}
    for s in spans:
        if not _is_tool(s):
            continue
        name = _tool_name(s)
        cid = _call_id(s.attrs.get("gen_ai.tool.call.id"))
        outer = None
        for a in ancestors(s):
            if _is_tool(a) and (_tool_name(a) == name or (cid and _call_id(a.attrs.get("gen_ai.tool.call.id")) == cid)):
                outer = a
        if outer is not None:
            outer_of[(s.trace, s.span)] = outer
    merged: dict[tuple[str, str], dict] = {}
    # the last inner attempt decides whether the call failed: a tool error comes back as a result
    # with isError, which the MCP client span marks (error.type tool_error, status ERROR) and the
    # framework's span around it usually does not; a failed attempt then retried with success
    # inside the same outer span is a success — outer span → (start, failed, status message)
    last_inside: dict[tuple[str, str], tuple[int, bool, str | None]] = {}
    # (the latest inner span first: what the outer span lacks — session id, result — is the last
    # attempt's, not a failed first one's)
    for k, outer in sorted(outer_of.items(), key=lambda kv: -index[kv[0]].start):
        inner = index[k]
        ok = (outer.trace, outer.span)
        m = merged.setdefault(ok, {})
        for key in ("mcp.session.id", "gen_ai.tool.call.id", "gen_ai.tool.call.arguments",
                    "gen_ai.tool.call.result", "mcp.server.name", "server.address", "mcp.method.name"):
            if key not in outer.attrs and key in inner.attrs and key not in m:
                m[key] = inner.attrs[key]
        failed = inner.status_code in _ERROR_CODES or inner.attrs.get("error.type") is not None
        if not failed and inner.status_unknown:
            failed = None   # (its status could not be read: whether the attempt failed is unknown)
        if ok not in last_inside:  # (met latest first)
            last_inside[ok] = (inner.start, failed, inner.status_msg)
    failed_inside = {ok: msg for ok, (_, failed, msg) in last_inside.items() if failed}
    unknown_inside = {ok for ok, (_, failed, _msg) in last_inside.items() if failed is None}

    rows: list[dict] = []
    keys: list[tuple] = []
    model_rows: list[tuple[int, _Span, dict]] = []      # (row, span, attributes) of model requests
    tool_rows: dict[tuple[str, str], int] = {}          # (transcript, call id) → row of its tool span
    id_names: dict[tuple[str, str], set] = {}          # (transcript, call id) → the tool names its spans give
    tool_names: dict[tuple[str, bool], set] = {}        # (transcript, span has a call id) → tool names
    for s in spans:
        k = (s.trace, s.span)
        attrs = {**s.attrs, **merged.get(k, {})}
        conv = attrs.get("gen_ai.conversation.id")
        if not (isinstance(conv, str) and conv):
            conv = next((a.attrs["gen_ai.conversation.id"] for a in ancestors(s)
                         if isinstance(a.attrs.get("gen_ai.conversation.id"), str)
                         and a.attrs["gen_ai.conversation.id"]), None) or trace_conv.get(s.trace)
        tid = conv or s.trace
        agents = [a for a in [s, *ancestors(s)] if _is_agent(a)]
        agent_id = _agent_id(agents[0]) if len(agents) >= 2 else None
        op = _op(s)
        lt = (s.shape.line_type if s.shape else None) or op or attrs.get("mcp.method.name") or s.name
        sess = attrs.get("mcp.session.id")
        info = inputs[s.file_idx]
        row = {
            "transcript_id": tid,
            "client": CLIENT,
            "client_version": s.res.get("service.version") if isinstance(s.res.get("service.version"), str) else None,
            "client_session_id": sess if isinstance(sess, str) and sess else None,
            "agent_id": agent_id,
            "line_type": lt if isinstance(lt, str) else None,
            "uuid": s.span,
            "parent_uuid": s.parent,
            "source_file": str(files[s.file_idx]),
            "line_no": s.line_no,
        }
        ts, result_ts = _iso(s.start), None
        error = s.status_code in _ERROR_CODES or attrs.get("error.type") is not None or k in failed_inside
        if _is_tool(s) and k not in outer_of:
            name = _tool_name(s)
            server, tool = split_codex_name(name) if name and name.startswith("mcp__") else (None, name)
            if server is None:
                srv = attrs.get("mcp.server.name")
                if isinstance(srv, str) and srv:
                    server = srv
                elif attrs.get("mcp.method.name") and isinstance(attrs.get("server.address"), str) \
                        and attrs["server.address"]:
                    server = attrs["server.address"]
                elif attrs.get("mcp.method.name") == "tools/call":
                    server = UNNAMED_MCP_SERVER
            args, key, raw = _parse_args(attrs.get("gen_ai.tool.call.arguments"))
            sh = s.shape
            if raw is not None:
                what = (sh.args_attr if sh and sh.args_attr else None) or "gen_ai.tool.call.arguments"
                info["notes"].append(f"line {s.line_no}: span {s.span} {what} is not JSON; args_key left NA")
            elif sh is not None and sh.args_text is not None and args is None:
                raw = sh.args_text
                info["notes"].append(f"line {s.line_no}: span {s.span} {sh.args_note}")
            if sh is not None and sh.is_error:
                error = True
            res = attrs.get("gen_ai.tool.call.result")
            if res is not None and not isinstance(res, str):
                res = _json.dumps(res).decode()
            text, nb = truncate(raw)
            rtext, _ = truncate(res if isinstance(res, str) else ((s.status_msg or failed_inside.get(k)) if error
                                                                  else None))
            cid = _call_id(attrs.get("gen_ai.tool.call.id"))
            # a status that could not be read (its own, or its last inner attempt's) leaves the
            # outcome unknown unless something else says the call failed: NA, never False
            unknown = s.status_unknown or k in unknown_inside
            row.update(kind="tool_call", tool_raw=name, server=server, tool=tool,
                       call_id=cid, arguments=args, args_key=key,
                       is_error=True if error else (False if s.end is not None and not unknown else None),
                       result_text=rtext, text=text, text_bytes=nb)
            result_ts = _iso(s.end)
            if cid is not None:
                tool_rows.setdefault((tid, str(cid).strip()), len(rows))
                id_names.setdefault((tid, str(cid).strip()), set()).update(x for x in (name, tool) if x)
            tool_names.setdefault((tid, cid is not None), set()).update(x for x in (name, tool) if x)
            row["_args_recorded"] = "gen_ai.tool.call.arguments" in attrs
        elif op in _MODEL_OPS or (op == "invoke_agent" and k not in has_model_below):
            model = attrs.get("gen_ai.request.model") or attrs.get("gen_ai.response.model")
            text, nb = truncate(_text_of_messages(_content_of(s, attrs, "output")))
            model_rows.append((len(rows), s, attrs))
            it, ot = attrs.get("gen_ai.usage.input_tokens"), attrs.get("gen_ai.usage.output_tokens")
            row.update(kind="model_request", model=model if isinstance(model, str) else None,
                       message_id=attrs.get("gen_ai.response.id") if isinstance(attrs.get("gen_ai.response.id"), str)
                       else None,
                       input_tokens=_whole_number(it)[0], output_tokens=_whole_number(ot)[0],
                       text=text, text_bytes=nb)
        else:
            if k in outer_of:
                row["line_type"] = f"{row['line_type']} (nested in span {outer_of[k].span})"
                name = _tool_name(s)
                cid = _call_id(attrs.get("gen_ai.tool.call.id", outer_of[k].attrs.get("gen_ai.tool.call.id")))
                row.update(tool_raw=name, tool=name, call_id=cid)
                if cid is not None:
                    tool_rows.setdefault((tid, str(cid).strip()), -1)
                    id_names.setdefault((tid, str(cid).strip()), set()).update(x for x in (name,) if x)
            row["kind"] = "other"
        row["_ts"], row["_rts"] = ts, result_ts
        rows.append(row)
        keys.append((tid, s.start, s.order, 0))
    _requested(rows, keys, model_rows, tool_rows, tool_names, inputs, id_names)
    _prompts(rows, keys, model_rows)
    order = sorted(range(len(rows)), key=lambda i: keys[i])
    seqs: dict[str, int] = {}
    out, ts_l, rts_l = [], [], []
    for i in order:
        r = rows[i]
        ts_l.append(r.pop("_ts"))
        rts_l.append(r.pop("_rts"))
        r.pop("_args_recorded", None)
        n = seqs.get(r["transcript_id"], 0)
        r["seq"] = n
        seqs[r["transcript_id"]] = n + 1
        out.append(r)
    frame = STEPS.build(out)
    if len(frame):
        frame["ts"] = pd.to_datetime(pd.Series(ts_l, dtype="object"), utc=True, format="ISO8601").astype(
            "datetime64[ns, UTC]").array
        frame["result_ts"] = pd.to_datetime(pd.Series(rts_l, dtype="object"), utc=True, format="ISO8601").astype(
            "datetime64[ns, UTC]").array
    return LoadResult(frame=frame, quarantine=QUARANTINE.build(quarantine), inputs=inputs)


register(Source(
    name=LOADER,
    frame="steps",
    sniff=sniff,
    load=load_otel,
    doc="OpenTelemetry GenAI/MCP spans as OTLP JSON (one ExportTraceServiceRequest document, or OTLP JSON "
        "Lines as the Collector file exporter writes); gen_ai.* semantic conventions (Development), "
        "OpenLLMetry (traceloop.*, indexed gen_ai.prompt/completion) and OpenInference attributes",
))
