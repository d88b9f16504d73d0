"""More MCP gateway logs → the ``calls`` frame (same conventions as :mod:`.gateways`).

Five sources, each registered on its own: ``agentgateway``, ``context-forge``, ``invariant``,
``mxcp``, ``mcp-http``.  Shapes follow each project's source (``../shared/real/gateway/modelled/``
holds samples written field-for-field from it); mapping rules are those of :mod:`.gateways`
(synthetic ``door_session`` ``<source>:<agent or unknown-agent>:<UTC date>`` where no session id
is logged, arguments kept and keyed only when logged whole, ``inputs[i]["not_calls"]`` for valid
records that are not tool calls, quarantine for unreadable ones).

==============  ================================================================================
source          format
==============  ================================================================================
agentgateway    agentgateway access log lines (``<time>\\t<level>\\trequest k=v k="v w" …``, or
                the same fields as JSON): ``mcp.method.name`` (``mcp.method`` in 2025 releases),
                ``gen_ai.tool.name`` (or ``mcp.resource.name``), ``mcp.target``,
                ``mcp.session.id`` (or the ``mcp-session-id`` request header of
                ``rq.headers.all``), ``jwt.sub``, ``http.status``,
                ``mcp.error.code``/``mcp.error.message``, ``duration=412ms``
context-forge   IBM mcp-context-forge table rows: ``observability_spans`` (``tool.invoke``),
                ``tool_metrics``, ``structured_log_entries``, plugin violations
                (``PluginViolation``: ``reason``, ``description``, ``code``, ``details``,
                ``plugin_name``) — one document of tables, a list, or JSONL of rows
invariant       Invariant gateway traces: ``session_id``, ``metadata`` (``mcp_client``,
                ``mcp_server``), OpenAI-style ``messages`` (assistant ``tool_calls`` + ``tool``
                results by ``tool_call_id``), ``annotations`` (guardrail ``action: block``)
mxcp            MXCP audit JSONL (``AuditRecord``): ``timestamp``, ``caller``, ``type``,
                ``name``, ``input_json`` (JSON text, secrets ``[REDACTED]``), ``duration_ms``,
                ``policy_decision``, ``reason``, ``status``, ``error``
mcp-http        a raw MCP Streamable HTTP exchange: JSONL records ``{dir: c2s|s2c, http, body |
                sse}`` (or bare JSON-RPC messages); ``tools/call`` requests paired with their
                response by JSON-RPC id within the ``Mcp-Session-Id``
==============  ================================================================================

Decisions
---------
* agentgateway: ``deny`` for HTTP 401/403 (its authorization policies answer 403); error from
  ``mcp.error.message`` (or an HTTP status ≥ 400).  Arguments are not logged.
* context-forge: one call per ``tool.invoke`` span; when a file has no spans, one per
  ``tool_metrics`` row (``tool`` is then the ``tool_id``); when it has neither, one per
  ``mcp_call_completed``/``mcp_call_failed`` log entry — the other tables describe the same calls
  and are counted as ``not_calls``.  Every plugin violation is a ``deny`` row (``rule`` =
  plugin, code, reason, description); without a time its ``ts`` is NaT.  Only an argument count
  is logged: arguments None.
* invariant: ``deny`` when a guardrail annotation with ``action: block`` addresses the call's
  assistant message or its tool result (``rule`` = guardrail id and text); ``error`` from the
  tool message's ``error``.  Times have no zone: read as UTC (noted).
* mxcp: ``deny`` for ``policy_decision: deny``, ``rule`` = ``reason``; ``error`` when
  ``status`` is ``error``.  ``input_json`` with a ``[REDACTED]`` value: arguments as logged,
  ``args_key`` NA.
* mcp-http: ``allow`` unless the response is an error (JSON-RPC error, or a result with
  ``isError``) whose text says it was refused (:data:`REFUSAL` words); ``error`` = that text.
  Records usually carry no time (``ts``/``time``/``timestamp`` when present): ``ts`` NaT then.
  A request without ``Mcp-Session-Id`` is taken to be in the session of the record before it,
  but for ``initialize``, which opens a session (MCP 2025-06-18, Session Management: the server
  names it in its answer's header): its client is that session's ``agent``.  A session whose
  ``initialize`` the capture lacks takes the capture's client (server) only when it names one.
  A response names its session less often (servers send the header on ``initialize`` only): one
  that carries none answers the open call with its JSON-RPC id when exactly one is open; when
  calls of several sessions are open with that id (each client numbers from 1), it answers the
  one sent last (a response follows its request; a call left open by a client that went away is
  older), and the file's notes name the response's line, the call it was paired with and the
  others it may have answered: that pairing is a reading of the order, not something the
  capture says.
* ``object``: a path-like argument (:func:`path_object`) wherever arguments are logged.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any, Iterable

import orjson

from .. import _json
from .._jsonl import iter_lines, line_scores, lines_words, parse_json, quarantine_row, unreadable_row, whole_lines
from .._text import before_by_ms, deep_safe, float_or_none, safe_str, str_or_none
from ..frames import LoadResult
from .gateways import (
    _args,
    _dated,
    _doc_or_lines,
    _glued_after_torn,
    _load_calls,
    _mean_score,
    _meta_id,
    _note_synthetic,
    _records,
    _synthetic,
    _valid_ts,
)
from .registry import Source, register

__all__ = [
    "load_agentgateway", "load_context_forge", "load_invariant", "load_mxcp", "load_mcp_http",
    "sniff_agentgateway", "sniff_context_forge", "sniff_invariant", "sniff_mxcp", "sniff_mcp_http",
    "path_object", "REFUSAL", "SOURCES",
]

#: Words that make an error response a refusal (``mcp-http``).
REFUSAL = re.compile(r"access ?denied|permission denied|\bdenied\b|forbidden|not allowed|not permitted|refused|"
                     r"blocked|unauthori[sz]ed|policy", re.I)

_PATH_KEYS = ("path", "file_path", "filepath", "file", "filename", "uri", "url", "object", "object_key",
              "directory", "dir")


def path_object(args: Any) -> str | None:
    """The object a call reached, from its arguments: the first path-like argument (``path``,
    ``file_path``, ``uri`` …), or ``<bucket>/<key>``; None when there is none."""
    if not isinstance(args, dict):
        return None
    bucket = args.get("bucket")
    key = args.get("key")
    if isinstance(bucket, str) and bucket:
        return f"{bucket}/{key}" if isinstance(key, str) and key else bucket
    for k in _PATH_KEYS:
        v = args.get(k)
        if isinstance(v, str) and v:
            return v
    return None


# --------------------------------------------------------------------------- agentgateway

_AG_LINE = re.compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d))\s+(?P<level>[A-Za-z]+)\s+"
                      r"(?P<msg>\S+)\s(?P<kv>.*)$")
_AG_KEYS = ("mcp.method.name", "gen_ai.tool.name", "mcp.session.id", "mcp.target")


def _ag_fields(raw: bytes, exact: bool = True) -> tuple[dict | None, str | None]:
    """``(fields, ts)`` of one agentgateway log line (text ``k=v`` or JSON); ``(None, None)`` if neither.
    ``exact=False`` (the sniffer: it reads only keys and strings) reads integers beyond 64 bits as floats."""
    obj, err = parse_json(raw, exact)
    if err is None and isinstance(obj, dict):
        f = obj.get("fields") if isinstance(obj.get("fields"), dict) else obj
        ts = obj.get("timestamp") or obj.get("time") or obj.get("ts")
        return f, ts if isinstance(ts, str) else None
    m = _AG_LINE.match(raw.decode("utf-8", "replace").strip())
    if not m:
        return None, None
    try:
        tokens = shlex.split(m.group("kv"), posix=True)
    except ValueError:
        return None, None
    fields = {"message": m.group("msg"), "level": m.group("level")}
    for tok in tokens:
        k, eq, v = tok.partition("=")
        if not eq:
            return None, None
        fields[k] = v
    return fields, m.group("ts")


def _ag_score(f: dict | None) -> float:
    if not f:
        return 0.0
    if "mcp.method.name" in f or "mcp.method" in f or (f.get("protocol") == "mcp" and "http.path" in f):
        return 1.0
    if "gateway" in f and "listener" in f and "route" in f:
        return 0.7                       # an agentgateway request line of another protocol
    return 0.0


def sniff_agentgateway(sample: bytes) -> float:
    """Confidence that ``sample`` is an agentgateway access log (text ``k=v`` or JSON lines)."""
    parts = whole_lines(sample)  # (the last line too when the sample is the whole file)
    scores = [_ag_score(_ag_fields(p.strip(), exact=False)[0]) for p in parts[:200] if p.strip()]
    if not scores or max(scores) < 1.0:
        return 0.0
    return _mean_score(scores)


def _ag_record(o: dict) -> bool:
    """Whether a JSON object is a top-level line of agentgateway's JSON log (a torn line's glued
    record: :func:`~replaybook._jsonl.split_torn`)."""
    return _ag_score(o.get("fields") if isinstance(o.get("fields"), dict) else o) > 0


def _ag_method(f: dict) -> Any:
    """The MCP method of one agentgateway line: ``mcp.method.name`` (the OTel name, current releases) or
    ``mcp.method`` (releases of 2025, e.g. ``"mcp.method":"tools/call"`` in solo.io's agentgateway workshop)."""
    m = f.get("mcp.method.name")
    return m if m is not None else f.get("mcp.method")


def _ag_resource(f: dict, kind: str) -> str | None:
    """``mcp.resource.name`` when the line's ``mcp.resource`` is ``kind`` (or not logged), else None."""
    r = f.get("mcp.resource")
    return str_or_none(f.get("mcp.resource.name")) if r is None or r == kind else None


def _ag_header(f: dict, name: str) -> str | None:
    """A request header from ``rq.headers.all`` (a JSON line's logged headers; names compared lower-case)."""
    h = f.get("rq.headers.all")
    if not isinstance(h, dict):
        return None
    for k, v in h.items():
        if isinstance(k, str) and k.lower() == name:
            return str_or_none(v)
    return None


def _ag_duration(v: Any) -> float | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if not isinstance(v, str):
        return None
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ns|us|µs|ms|s)?\s*", v)
    if not m:
        return None
    return float(m.group(1)) * {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1000.0, None: 1.0}[m.group(2)]


def _read_agentgateway(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict]) -> None:
    """The calls of one agentgateway access log (see :func:`load_agentgateway`)."""
    synth = 0
    for line in iter_lines(data):
        if not line.raw.strip():
            continue
        f, ts = _ag_fields(line.raw.strip())
        if f is None:  # a JSON line cut off mid-write, a whole one glued to it: that one is read
            glued = _glued_after_torn(path, line, _ag_record, "agentgateway", quarantine)
            if glued is not None:
                f, ts = _ag_fields(glued)
        if f is None:
            quarantine.append(unreadable_row(path, line, "agentgateway", "not an agentgateway log line"))
            continue
        if line.pending:
            # an unterminated last text line (a JSON one that parses is whole): k=v pairs cut
            # anywhere still read (``mcp.target=fi``), so it is not known whole — still being written?
            quarantine.append(unreadable_row(path, line, "agentgateway", "not an agentgateway log line"))
            continue
        f = deep_safe(f)
        if _ag_method(f) != "tools/call":
            info["not_calls"] += 1
            continue
        if not _valid_ts(ts):
            quarantine.append(quarantine_row(path, line, "agentgateway", "log line without a valid time"))
            continue
        agent = str_or_none(f.get("jwt.sub")) or str_or_none(f.get("mcp.client.name"))
        sess = str_or_none(f.get("mcp.session.id")) or _ag_header(f, "mcp-session-id")
        if sess is None:
            synth += 1
        try:
            status = int(f.get("http.status"))
        except (TypeError, ValueError):
            status = None
        deny = status in (401, 403)
        err = str_or_none(f.get("mcp.error.message")) or str_or_none(f.get("error"))
        if err is None and status is not None and status >= 400 and not deny:
            err = f"HTTP {status}"
        if err and str_or_none(f.get("mcp.error.code")):
            err = f"{err} ({f['mcp.error.code']})"
        rows.append({"door_session": sess or _synthetic("agentgateway", agent, ts, path), "agent": agent, "ts": ts,
                     "duration_ms": _ag_duration(f.get("duration")), "server": str_or_none(f.get("mcp.target")),
                     "tool": str_or_none(f.get("gen_ai.tool.name")) or _ag_resource(f, "tool"),
                     "arguments": None, "args_key": None, "decision": "deny" if deny else "allow",
                     "rule": (str_or_none(f.get("reason")) or f"HTTP {status}") if deny else None,
                     "correlation": str_or_none(f.get("trace.id")), "error": err,
                     "source_file": str(path), "line_no": line.line_no})
    _note_synthetic(info, "agentgateway (no mcp.session.id)", synth)
    if any(r["source_file"] == str(path) for r in rows):
        info["notes"].append("the access log records no arguments: arguments None, args_key NA")


def load_agentgateway(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load agentgateway access logs into ``calls`` (lines with ``mcp.method.name=tools/call``, or
    ``mcp.method=tools/call`` as releases of 2025 write it).

    ``door_session`` = ``mcp.session.id`` (else the logged ``mcp-session-id`` request header),
    ``agent`` = ``jwt.sub``, ``server`` = ``mcp.target``, ``tool`` = ``gen_ai.tool.name`` (else
    ``mcp.resource.name`` of an ``mcp.resource=tool`` line), ``duration_ms`` from ``duration``, ``correlation`` =
    ``trace.id``; ``deny`` for HTTP 401/403; ``error`` = ``mcp.error.message`` (code appended).

    Raises:
        InputError: a path does not exist or a file cannot be read.
    """
    return _load_calls(paths, "agentgateway", _read_agentgateway)


# --------------------------------------------------------------------------- context-forge

_CF_TABLES = ("observability_spans", "tool_metrics", "structured_log_entries", "plugin_violations",
              "plugin_violation_example", "violations")
_CF_LOG_EVENTS = ("mcp_call_completed", "mcp_call_failed", "tool_call_completed", "tool_call_failed")


def _cf_kind(o: dict) -> str | None:
    if "span_id" in o and "trace_id" in o and "start_time" in o and ("resource_type" in o or "name" in o):
        return "span"
    if "tool_id" in o and "response_time" in o and "is_success" in o:
        return "metric"
    if "component" in o and "correlation_id" in o and "level" in o and "message" in o:
        return "log"
    if "plugin_name" in o and "code" in o and "reason" in o:
        return "violation"
    return None


def _cf_score(o: dict) -> float:
    return 1.0 if _cf_kind(o) else 0.0


def sniff_context_forge(sample: bytes) -> float:
    """Confidence that ``sample`` holds IBM mcp-context-forge rows (tables document, list or JSONL)."""
    stripped = sample.strip()
    first = stripped.split(b"\n", 1)[0].strip()
    # one document (pretty-printed, or on one line); a sample of JSON Lines is scored line by line
    if stripped[:1] == b"{" and (first == b"{" or b"\n" not in stripped or parse_json(first, False)[1] is not None):
        try:
            doc = _json.loads(stripped)
        except orjson.JSONDecodeError:
            doc = None
            if b'"tool.invoke"' in sample or (b'"tool_metrics"' in sample and b'"observability_spans"' in sample):
                return 0.7
        if isinstance(doc, dict) and any(k in doc for k in _CF_TABLES):
            recs = [r for k in _CF_TABLES for r in (doc[k] if isinstance(doc.get(k), list) else [doc.get(k)])
                    if k in doc]
            return _mean_score([_cf_score(r) if isinstance(r, dict) else 0.0 for r in recs[:100]])
    return _doc_or_lines(sample, _cf_score, ("items", "rows", "data"))


def _cf_records(path: Path, data: bytes, quarantine: list[dict]) -> Iterable[tuple[int | None, dict]]:
    """Every row of a context-forge export, tables flattened (document order)."""
    for ln, o in _records(path, data, "context-forge", quarantine, ("items", "rows", "data"), _CF_TABLES, score=_cf_score):
        tables = [k for k in _CF_TABLES if k in o]
        if not tables:
            yield ln, o
            continue
        for k in tables:
            v = o[k]
            for it in (v if isinstance(v, list) else [v]):
                if isinstance(it, dict):
                    yield ln, deep_safe(it)
                else:
                    quarantine.append(quarantine_row(path, None, "context-forge", f"{k}: not a JSON object",
                                                     line_no=ln, raw=_json.dumps(it)[:400]))


def _read_context_forge(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict]) -> None:
    """The calls of one context-forge export (see :func:`load_context_forge`)."""
    by_kind: dict[str, list[tuple[int | None, dict]]] = {"span": [], "metric": [], "log": [], "violation": []}
    for ln, o in _cf_records(path, data, quarantine):
        kind = _cf_kind(o)
        if kind is None:
            info["not_calls"] += 1
        else:
            by_kind[kind].append((ln, o))
    spans = [(ln, o) for ln, o in by_kind["span"]
             if o.get("name") == "tool.invoke" or (o.get("resource_type") == "tool" and "invoke" in str(o.get("name")))]
    logs = [(ln, o) for ln, o in by_kind["log"]
            if isinstance(o.get("context"), dict) and o["context"].get("event") in _CF_LOG_EVENTS]
    primary = "span" if spans else "metric" if by_kind["metric"] else "log"
    used = {"span": spans, "metric": by_kind["metric"], "log": logs}[primary]
    info["not_calls"] += sum(len(v) for v in by_kind.values()) - len(by_kind["violation"]) - len(used)
    info["call_table"] = primary
    synth = 0
    for ln, o in used:
        if primary == "span":
            at = o.get("attributes") if isinstance(o.get("attributes"), dict) else {}
            if not _dated(o, "start_time", "span", path, ln, "context-forge", quarantine):
                continue
            agent = str_or_none(at.get("user.email")) or str_or_none(at.get("user"))
            failed = str(o.get("status", "")).lower() in ("error", "failed")
            row = {"ts": o["start_time"], "ts_end": o.get("end_time") if _valid_ts(o.get("end_time")) else None,
                   "duration_ms": float_or_none(o.get("duration_ms")),
                   "tool": str_or_none(at.get("tool.name")) or str_or_none(o.get("resource_name")),
                   "server": str_or_none(at.get("gateway.name")) or str_or_none(at.get("server.name")),
                   "correlation": str_or_none(o.get("trace_id")),
                   "error": (str_or_none(o.get("status_message")) or "span status error") if failed else None}
            sess = str_or_none(at.get("session.id")) or str_or_none(at.get("mcp.session.id"))
        elif primary == "metric":
            if not _dated(o, "timestamp", "tool metric", path, ln, "context-forge", quarantine):
                continue
            agent, sess = None, None
            rt = float_or_none(o.get("response_time"))
            row = {"ts_end": o["timestamp"], "ts": None, "duration_ms": rt * 1000.0 if rt is not None else None,
                   "tool": str_or_none(o.get("tool_id")), "server": None, "correlation": None,
                   "error": (str_or_none(o.get("error_message")) or "is_success false")
                   if o.get("is_success") is False else None}
        else:
            if not _dated(o, "timestamp", "log entry", path, ln, "context-forge", quarantine):
                continue
            ctx = o["context"]
            agent, sess = str_or_none(o.get("user_email")), None
            row = {"ts_end": o["timestamp"], "ts": None, "duration_ms": float_or_none(o.get("duration_ms")),
                   "tool": str_or_none(ctx.get("tool_name")), "server": None,
                   "correlation": str_or_none(o.get("correlation_id")),
                   "error": (str_or_none(ctx.get("error")) or str_or_none(o.get("message")))
                   if ctx.get("success") is False or ctx.get("event", "").endswith("failed") else None}
        if row["ts"] is None and row["duration_ms"] is not None:   # metrics/logs are written at completion
            start = before_by_ms(row["ts_end"], row["duration_ms"])  # (unusable duration: the end time)
            row["ts"] = row["ts_end"] if start is None else start.isoformat()
        if sess is None:
            synth += 1
        row.update(door_session=sess or _synthetic("context-forge", agent, row["ts"] or row["ts_end"], path),
                   agent=agent, arguments=None, args_key=None, decision="allow", source_file=str(path), line_no=ln)
        rows.append(row)
    for ln, o in by_kind["violation"]:
        det = o.get("details") if isinstance(o.get("details"), dict) else {}
        agent = str_or_none(det.get("user"))
        ts = o.get("timestamp") if _valid_ts(o.get("timestamp")) else None
        synth += 1
        rule = " — ".join(x for x in (": ".join(x for x in (str_or_none(o.get("plugin_name")),
                                                              str_or_none(o.get("code"))) if x),
                                      str_or_none(o.get("reason")), str_or_none(o.get("description"))) if x)
        rows.append({"door_session": _synthetic("context-forge", agent, ts, path), "agent": agent, "ts": ts,
                     "tool": str_or_none(det.get("tool")), "arguments": None, "args_key": None,
                     "decision": "deny", "rule": rule or None, "source_file": str(path), "line_no": ln})
        if ts is None:
            info["notes"].append(f"line {ln}: plugin violation without a time: ts NaT")
    _note_synthetic(info, "context-forge", synth)
    if rows:
        info["notes"].append(f"calls from {primary} rows; other tables describe the same calls (not_calls); "
                             "only an argument count is logged: arguments None, args_key NA")


def load_context_forge(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load IBM mcp-context-forge rows into ``calls`` (see the module doc for which table yields calls).

    Spans: ``ts``/``ts_end`` = ``start_time``/``end_time``, ``tool`` = ``attributes["tool.name"]``,
    ``correlation`` = ``trace_id``; plugin violations are ``deny`` rows.

    Raises:
        InputError: a path does not exist or a file cannot be read.
    """
    return _load_calls(paths, "context-forge", _read_context_forge)


# --------------------------------------------------------------------------- Invariant

def _inv_score(o: dict) -> float:
    msgs = o.get("messages")
    if not isinstance(msgs, list):
        return 0.0
    meta = o.get("metadata") if isinstance(o.get("metadata"), dict) else {}
    if ("mcp_client" in meta or "mcp_server" in meta or "system_user" in meta) and \
            ("session_id" in o or "session_id" in meta):
        return 1.0
    if "annotations" in o and any(isinstance(m, dict) and "tool_calls" in m for m in msgs):
        return 0.6
    return 0.0


def sniff_invariant(sample: bytes) -> float:
    """Confidence that ``sample`` holds Invariant gateway traces (object, list or JSONL)."""
    return _doc_or_lines(sample, _inv_score, ("traces", "items"),
                         frag=(b'"messages"', b'"mcp_client"', b'"session_id"'))


def _inv_blocks(annotations: Any) -> dict[int, str]:
    """``{message index: rule}`` of guardrail annotations whose action is ``block``."""
    out: dict[int, str] = {}
    for a in annotations if isinstance(annotations, list) else []:
        if not isinstance(a, dict):
            continue
        em = a.get("extra_metadata") if isinstance(a.get("extra_metadata"), dict) else {}
        g = em.get("guardrail") if isinstance(em.get("guardrail"), dict) else {}
        if str(g.get("action", "")).lower() != "block":
            continue
        m = re.match(r"messages\.(\d+)", str(a.get("address", "")))
        if m:
            rule = " — ".join(x for x in (str_or_none(g.get("id")), str_or_none(a.get("content"))) if x)
            out.setdefault(int(m.group(1)), rule or "guardrail block")
    return out


def _read_invariant(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict]) -> None:
    """The calls of one Invariant trace file (see :func:`load_invariant`)."""
    synth = 0
    for ln, o in _records(path, data, "invariant", quarantine, ("traces", "items"), score=_inv_score):
        msgs = o.get("messages")
        if not isinstance(msgs, list):
            info["not_calls"] += 1
            continue
        meta = o.get("metadata") if isinstance(o.get("metadata"), dict) else {}
        sess = str_or_none(o.get("session_id")) or str_or_none(meta.get("session_id"))
        agent = str_or_none(meta.get("mcp_client")) or str_or_none(meta.get("system_user"))
        server = str_or_none(meta.get("mcp_server"))
        blocks = _inv_blocks(o.get("annotations"))
        results = {str(m.get("tool_call_id")): (i, m) for i, m in enumerate(msgs)
                   if isinstance(m, dict) and m.get("role") == "tool" and m.get("tool_call_id") is not None}
        for i, m in enumerate(msgs):
            if not isinstance(m, dict) or not isinstance(m.get("tool_calls"), list):
                continue
            for tc in m["tool_calls"]:
                if not isinstance(tc, dict):
                    continue
                fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
                raw_args = fn.get("arguments")
                if isinstance(raw_args, str):
                    parsed, err = parse_json(raw_args.encode("utf-8", "replace"))
                    raw_args = parsed if err is None else None
                args, akey = _args(raw_args)
                ts = m.get("timestamp") if _valid_ts(m.get("timestamp")) else None
                if ts is None and str_or_none(m.get("timestamp")):
                    info["notes"].append(f"line {ln}: message time {safe_str(m['timestamp'])[:40]!r} is not a "
                                         "date-time: its call is kept with the time unknown")
                ri, res = results.get(str(tc.get("id")), (None, None))
                rule = blocks.get(i) or (blocks.get(ri) if ri is not None else None)
                err = None
                if res is not None:
                    err = str_or_none(res.get("error")) if not isinstance(res.get("error"), dict) else \
                        str_or_none(res["error"].get("message"))
                if sess is None:
                    synth += 1
                rows.append({"door_session": sess or _synthetic("invariant", agent, ts, path), "agent": agent,
                             "ts": ts, "ts_end": res.get("timestamp") if res is not None and
                             _valid_ts(res.get("timestamp")) else None, "server": server,
                             "tool": str_or_none(fn.get("name")), "arguments": args, "args_key": akey,
                             "object": path_object(args), "decision": "deny" if rule else "allow", "rule": rule,
                             "correlation": str_or_none(tc.get("id")), "error": err,
                             "source_file": str(path), "line_no": ln})
            if m.get("role") != "tool" and not m.get("tool_calls"):
                info["not_calls"] += 1
    _note_synthetic(info, "this Invariant trace", synth)
    if any(r["source_file"] == str(path) for r in rows):
        info["notes"].append("Invariant message timestamps carry no zone: read as UTC")


def load_invariant(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load Invariant gateway traces into ``calls``: one row per assistant ``tool_calls`` entry.

    ``door_session`` = ``session_id``, ``agent`` = ``metadata.mcp_client``, ``server`` =
    ``metadata.mcp_server``; ``ts_end`` and ``error`` from the ``tool`` message with the same
    ``tool_call_id``; ``deny`` when a guardrail ``block`` annotation addresses either message.

    Raises:
        InputError: a path does not exist or a file cannot be read.
    """
    return _load_calls(paths, "invariant", _read_invariant)


# --------------------------------------------------------------------------- MXCP

def _mxcp_score(o: dict) -> float:
    if {"caller", "type", "name", "policy_decision"} <= o.keys() and ("input_json" in o or "status" in o):
        return 1.0
    return 0.0


def sniff_mxcp(sample: bytes) -> float:
    """Confidence that ``sample`` is an MXCP audit log (JSON Lines of ``AuditRecord``)."""
    return _doc_or_lines(sample, _mxcp_score, ("records", "items"))


def _read_mxcp(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict]) -> None:
    """The calls of one MXCP audit log (see :func:`load_mxcp`)."""
    synth = redacted = 0
    for ln, o in _records(path, data, "mxcp", quarantine, ("records", "items"), score=_mxcp_score):
        if o.get("type") != "tool":
            info["not_calls"] += 1
            continue
        if not _dated(o, "timestamp", "audit record", path, ln, "mxcp", quarantine):
            continue
        raw = o.get("input_json")
        args_in: Any = raw
        if isinstance(raw, str):
            parsed, err = parse_json(raw.encode("utf-8", "replace"))
            args_in = parsed if err is None else None
            if err is not None:
                info["notes"].append(f"line {ln}: input_json is not JSON; args_key NA")
        args, akey = _args(deep_safe(args_in))
        if args is not None and b"[REDACTED]" in _json.dumps(args):
            akey = None
            redacted += 1
        agent = str_or_none(o.get("user_id")) or str_or_none(o.get("user"))
        sess = str_or_none(o.get("session_id"))
        if sess is None:
            synth += 1
        deny = str(o.get("policy_decision", "")).lower() == "deny"
        rows.append({"door_session": sess or _synthetic("mxcp", agent, o["timestamp"], path), "agent": agent,
                     "ts": o["timestamp"], "duration_ms": float_or_none(o.get("duration_ms")),
                     "tool": str_or_none(o.get("name")), "arguments": args, "args_key": akey,
                     "object": path_object(args), "decision": "deny" if deny else "allow",
                     "rule": str_or_none(o.get("reason")), "correlation": str_or_none(o.get("trace_id")),
                     "error": (str_or_none(o.get("error")) or "status error") if o.get("status") == "error" else None,
                     "source_file": str(path), "line_no": ln})
    _note_synthetic(info, "MXCP", synth)
    if redacted:
        info["notes"].append(f"{redacted} call(s) with [REDACTED] arguments: arguments as logged, args_key NA")


def load_mxcp(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load MXCP audit JSONL into ``calls`` (``type: tool`` records).

    Arguments from ``input_json`` (keyed unless a value was ``[REDACTED]``); ``deny`` for
    ``policy_decision: deny`` with ``rule`` = ``reason``; ``error`` when ``status`` is ``error``.

    Raises:
        InputError: a path does not exist or a file cannot be read.
    """
    return _load_calls(paths, "mxcp", _read_mxcp)


# --------------------------------------------------------------------------- MCP Streamable HTTP

def _jsonrpc(o: Any) -> bool:
    return isinstance(o, dict) and o.get("jsonrpc") == "2.0"


def _http_score(o: dict) -> float:
    if o.get("dir") in ("c2s", "s2c") or o.get("direction") in ("c2s", "s2c", "request", "response"):
        body = o.get("body")
        if _jsonrpc(body) or (isinstance(body, list) and body and _jsonrpc(body[0])) or \
                isinstance(o.get("sse"), list) or (body is None and isinstance(o.get("http"), dict)):
            return 1.0
        return 0.3
    if _jsonrpc(o) and ("method" in o or "result" in o or "error" in o):
        return 0.9
    return 0.0


def sniff_mcp_http(sample: bytes) -> float:
    """Confidence that ``sample`` is a raw MCP Streamable HTTP exchange (JSONL of records or JSON-RPC messages)."""
    scores = line_scores(sample, _http_score)
    if not scores or max(scores) < 0.9:
        return 0.0
    return _mean_score(scores)


def _messages(o: dict) -> Iterable[dict]:
    """The JSON-RPC messages one exchange record carries (body, batch, or SSE events)."""
    if _jsonrpc(o) and "dir" not in o:
        yield o
        return
    body = o.get("body")
    for b in body if isinstance(body, list) else [body]:
        if _jsonrpc(b):
            yield b
    for ev in o.get("sse") if isinstance(o.get("sse"), list) else []:
        d = ev.get("data") if isinstance(ev, dict) else None
        if isinstance(d, str):
            d, _e = parse_json(d.encode("utf-8", "replace"))
        for b in d if isinstance(d, list) else [d]:
            if _jsonrpc(b):
                yield b


def _header(o: dict, name: str) -> str | None:
    h = (o.get("http") or {}).get("headers") if isinstance(o.get("http"), dict) else None
    if not isinstance(h, dict):
        return None
    for k, v in h.items():
        if k.lower() == name.lower():
            return str_or_none(v)
    return None


def _result_error(msg: dict) -> str | None:
    if isinstance(msg.get("error"), dict):
        e = msg["error"]
        return (str_or_none(e.get("message")) or "JSON-RPC error") + (f" ({e['code']})" if "code" in e else "")
    if "error" in msg:
        return str_or_none(msg.get("error")) or "JSON-RPC error"
    res = msg.get("result")
    if isinstance(res, dict) and res.get("isError") is True:
        content = res.get("content") if isinstance(res.get("content"), list) else []  # (the error stands without its text)
        texts = [c.get("text") for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)]
        return " ".join(texts).strip() or "tool result isError"
    return None


def _read_mcp_http(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict],
                   state: dict) -> None:
    """The calls of one MCP Streamable HTTP exchange (see :func:`load_mcp_http`).  What pairs
    across lines (open calls, each session's client and server, the last session id — taken by a
    request without one, never used to pick which session's call a response answers) is kept in
    ``state``, for the next file of a rotated capture; :func:`_mcp_http_finish` names agents
    and servers once every file is read.  A response without a session id whose JSON-RPC id
    several sessions' open calls share answers the one sent last, named in ``info["notes"]``
    with the others."""
    open_calls: dict[tuple, dict] = state.setdefault("open", {})
    clients: dict[str | None, str] = state.setdefault("clients", {})
    servers: dict[str | None, str] = state.setdefault("servers", {})
    init_ids: dict[tuple, list] = state.setdefault("init_ids", {})  # (session, id) → [(client, line)]
    requests: set[bytes] = state.setdefault("requests", set())
    orphan = 0
    ambiguous: dict[tuple, list] = {}  # (id, the open calls' places) → lines of responses not paired
    for ln, o in _records(path, data, "mcp-http", quarantine, score=_http_score):
        own = _header(o, "Mcp-Session-Id") or str_or_none(o.get("session_id"))
        sess = own or state.get("last_sess")
        state["last_sess"] = sess
        ts = next((o[k] for k in ("ts", "time", "timestamp") if _valid_ts(o.get(k))), None)
        msgs = list(_messages(o))
        if not msgs:
            info["not_calls"] += 1
            continue
        for m in msgs:
            if "method" in m:                                  # a request or a notification
                if "id" in m:
                    requests.add(_json.dumps(m.get("id")))
                if m["method"] == "initialize":                # opens a session: never in the one before
                    ci = m.get("params", {}).get("clientInfo") if isinstance(m.get("params"), dict) else None
                    name = str_or_none(ci.get("name")) if isinstance(ci, dict) else None
                    if own is not None and name:
                        clients[own] = name
                    if name:  # (every client the capture names, its answer captured or not)
                        state.setdefault("named", set()).add(name)
                    init_ids.setdefault((own, _json.dumps(m.get("id"))), []).append((name, ln))
                    state["last_sess"] = own
                if m["method"] not in ("tools/call", "resources/read") or "id" not in m:
                    info["not_calls"] += 1
                    continue
                params = m.get("params") if isinstance(m.get("params"), dict) else {}
                if m["method"] == "resources/read":  # an object read, logged as the door logs one
                    uri = str_or_none(params.get("uri"))
                    args, akey = _args({"uri": uri} if uri is not None else {})
                    tool, obj = "resources/read", uri
                else:
                    args, akey = _args(params.get("arguments") if "arguments" in params else {})
                    tool, obj = str_or_none(params.get("name")), path_object(args)
                row = {"door_session": sess, "agent": None, "ts": ts, "server": None,
                       "tool": tool, "arguments": args, "args_key": akey,
                       "object": obj, "decision": "allow", "meta_call_id": _meta_id(params),
                       "correlation": None if m.get("id") is None else str(m["id"]),
                       "source_file": str(path), "line_no": ln}
                rows.append(row)
                open_calls[(sess, _json.dumps(m.get("id")))] = row
                continue
            key = (sess, _json.dumps(m.get("id")))
            if own is not None:                                # a response in a named session
                row = open_calls.pop(key, None)
                if row is None:                                # its request before the session id was known
                    row = open_calls.pop((None, key[1]), None)
            else:                                              # no session id: the open calls with its id
                same = [k for k in open_calls if k[1] == key[1]]
                if len(same) > 1:                              # in several sessions: the one sent last
                    others = tuple((k[0], open_calls[k]["line_no"]) for k in same[:-1])
                    ambiguous.setdefault((key[1], (same[-1][0], open_calls[same[-1]]["line_no"]), others),
                                         []).append(ln)
                row = open_calls.pop(same[-1]) if same else None
            if row is None:
                pending = init_ids.get(key) or init_ids.get((None, key[1]))
                if pending:                                    # the answer to an initialize: its session
                    name, init_ln = pending.pop()              # (the one sent last, as for a call)
                    if pending:
                        info["notes"].append(
                            f"the initialize response on line {ln} is paired with the request sent last, line "
                            f"{init_ln}; it may answer line {', '.join(str(n) for _, n in pending)} instead "
                            "(same JSON-RPC id, no Mcp-Session-Id on the requests)")
                    res = m.get("result") if isinstance(m.get("result"), dict) else {}
                    si = res.get("serverInfo")
                    if name:
                        clients[sess] = name
                    if isinstance(si, dict) and str_or_none(si.get("name")):
                        servers[sess] = si["name"]
                elif key[1] not in requests:
                    orphan += 1
                info["not_calls"] += 1
                continue
            if ts is not None:
                row["ts_end"] = ts
            err = _result_error(m)
            if err:
                row["error"] = err
                if REFUSAL.search(err):
                    row["decision"], row["rule"] = "deny", err
    if orphan:
        info["notes"].append(f"{orphan} response(s) to no logged request")
    def call_words(s, n):
        return f"session {s!r} (line {n})" if n is not None else f"session {s!r}"

    for (rid, (s, n), others), lns in ambiguous.items():
        known = [x for x in lns if x is not None]
        at = lines_words(known) if len(known) == len(lns) else f"{len(lns)} record(s)"
        info["notes"].append(
            f"response(s) on {at} carry no Mcp-Session-Id and answer JSON-RPC id {rid.decode()}, which open "
            f"calls of several sessions share: paired with the one sent last, {call_words(s, n)}; it may "
            f"answer {', '.join(call_words(*o) for o in others)} instead (the capture does not say which)")


def _mcp_http_finish(rows: list[dict], files: list[tuple[Path, dict]], state: dict) -> None:
    """Agents and servers from every file's ``initialize`` exchanges, synthetic sessions, and
    each file's notes (see :func:`_read_mcp_http`)."""
    clients, servers = state.get("clients", {}), state.get("servers", {})

    def only(known: set) -> str | None:    # a session whose initialize is not in the capture: the
        return known.pop() if len(known) == 1 else None  # capture's one client (server) if it names only one

    # (a client is named by its initialize request, whether or not the capture holds the answer)
    any_client = only(set(clients.values()) | state.get("named", set()))
    any_server = only(set(servers.values()))
    synth: dict[str, int] = {}
    for r in rows:
        sess = r["door_session"]
        r["agent"] = clients.get(sess) or any_client
        r["server"] = servers.get(sess) or any_server
        if sess is None:
            synth[r["source_file"]] = synth.get(r["source_file"], 0) + 1
            r["door_session"] = _synthetic("mcp-http", r["agent"], r["ts"], Path(r["source_file"]))
    left: dict[str, int] = {}
    for r in state.get("open", {}).values():
        left[r["source_file"]] = left.get(r["source_file"], 0) + 1
    for path, info in files:
        info["unfinished"] = left.get(str(path), 0)
        _note_synthetic(info, "this exchange (no Mcp-Session-Id)", synth.get(str(path), 0))
        if any(r["source_file"] == str(path) and r["ts"] is None for r in rows):
            info["notes"].append("exchange records carry no time: ts NaT")


def load_mcp_http(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load raw MCP Streamable HTTP exchanges into ``calls``: one row per ``tools/call`` and
    ``resources/read`` request (the latter as the door logs it: tool ``resources/read``, the
    resource's ``uri`` as its argument and object).

    The response with the same JSON-RPC id (in the same ``Mcp-Session-Id``, or — one without the
    header — the call open with that id, the one sent last when several sessions have one open,
    noted; a plain JSON body or an SSE event) closes it: ``error`` from a JSON-RPC error or an ``isError`` result; ``deny``
    when that text says it was refused (:data:`REFUSAL`), ``rule`` = the text.  ``agent`` /
    ``server`` from ``initialize`` (``clientInfo.name`` / ``serverInfo.name``);
    ``correlation`` = the JSON-RPC id.

    Raises:
        InputError: a path does not exist or a file cannot be read.
    """
    return _load_calls(paths, "mcp-http", _read_mcp_http, finish_files=_mcp_http_finish)


# --------------------------------------------------------------------------- registration

#: The sources this module registers: ``(name, sniff, load, doc)``.
SOURCES = (
    ("agentgateway", sniff_agentgateway, load_agentgateway,
     "agentgateway access log (text k=v or JSON), mcp.method(.name) tools/call lines"),
    ("context-forge", sniff_context_forge, load_context_forge,
     "IBM mcp-context-forge rows: observability spans, tool metrics, structured logs, plugin violations"),
    ("invariant", sniff_invariant, load_invariant, "Invariant gateway traces (messages with tool_calls, annotations)"),
    ("mxcp", sniff_mxcp, load_mxcp, "MXCP audit log JSON Lines (AuditRecord)"),
    ("mcp-http", sniff_mcp_http, load_mcp_http,
     "raw MCP Streamable HTTP exchange: JSON-RPC tools/call and resources/read requests and responses (JSONL)"),
)

for _name, _sniff, _load, _doc in SOURCES:
    register(Source(name=_name, frame="calls", sniff=_sniff, load=_load, doc=_doc))
del _name, _sniff, _load, _doc
