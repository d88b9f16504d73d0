"""Third-party MCP gateway logs → the ``calls`` frame.

Six sources, each registered on its own (``replaybook.sources.registry``): ``docker-mcp-gateway``,
``mcpjungle``, ``gatekit``, ``obot``, ``lasso``, ``pomerium``.  Each loader returns a
:class:`~replaybook.frames.LoadResult` whose ``frame`` has exactly the
:data:`~replaybook.frames.CALLS` columns and dtypes (sorted by ``door_session``, ``ts``, ``seq``;
``ts``/``ts_end`` tz-aware UTC; ``duration_ms`` in milliseconds), one row per **tool call**
(``tools/call``) the gateway logged.  Lines that are valid but are not tool calls (startup
messages, ``tools/list``, notifications, policy checks of other targets) become no row and are
counted in ``inputs[i]["not_calls"]``; lines that cannot be read go to the quarantine with file and
line number.  Files are opened read-only; gzip is recognised by magic bytes.

Format origins (field names follow each gateway's source; ``../shared/real/gateway/modelled/``
holds samples written field-for-field from it):

==================  ============================================================================
source              format
==================  ============================================================================
docker-mcp-gateway  ``docker/mcp-gateway``: (a) the ``--log-calls`` lines on stderr
                    (``pkg/interceptors/log_calls.go``): ``  - Calling tool <t> with arguments:
                    <json | "object with N field(s)">``, ``  > Calling tool <t> took: <Go
                    duration>``, ``  - Calling tool (unknown) with method: <m>``, optionally
                    prefixed with an RFC 3339 time (``docker logs -t``); (b) the policy audit
                    JSONL (``pkg/policy/audit.go`` ``AuditEvent``: ``trigger``, ``target_type``,
                    ``server_name``, ``tool_name``, ``result`` allowed/denied,
                    ``outcome_reason``, ``reason``, ``policy_id``, ``client_name``,
                    ``session_id``, ``timestamp``)
mcpjungle           MCPJungle audit log (zap JSON, or zap console ``time<TAB>level<TAB>caller
                    <TAB>msg<TAB>{json}``): ``event_type`` ``mcp_tool_call_start`` then
                    ``mcp_tool_call`` (``success``, ``duration_ms``, ``error``), ``request_id``,
                    ``client_name``, ``server_name``, ``tool_name``
gatekit             Gatekit ``JsonAuditingPlugin`` (``gatekit/plugins/auditing/json_lines.py``):
                    request events (``REQUEST``, ``SECURITY_BLOCK`` …) and response events
                    (``RESPONSE``, ``*_ERROR``) paired by ``(server_name, request_id)``;
                    ``pipeline_outcome`` allowed/blocked, ``pipeline.blocked_at_stage``,
                    ``reason``, ``tool`` (``<server>__<tool>``), ``request_body`` (only with
                    ``include_request_body``; may be ``_truncated``), ``duration_ms``
obot                Obot MCP audit log rows (``MCPAuditLog``: ``createdAt``, ``callType``,
                    ``callIdentifier``, ``sessionID``, ``clientInfo``, ``mcpServerDisplayName``,
                    ``requestBody``, ``responseBody``, ``outcome``, ``processingTimeMs``,
                    ``webhookStatuses``) — one object, a list, ``{"items": […]}`` or JSONL
lasso               Lasso MCP gateway xetrack rows (README example): ``timestamp`` (no zone),
                    ``track_id``, ``capability_name``, ``server_name``, ``capability_type``,
                    ``isError``, ``content_text``; the call's arguments are spread over extra
                    columns
pomerium            Pomerium authorize log lines for MCP (PR #5668): ``mcp-method``,
                    ``mcp-tool``, ``mcp-tool-parameters``, ``allow``/``deny`` with
                    ``allow-why-true``/``deny-why-true``, ``time``
==================  ============================================================================

Mapping decisions
-----------------
* ``door_session``: the gateway's own session id where it logs one (Docker audit ``session_id``,
  Obot ``sessionID``, Lasso ``track_id``).  Otherwise a **synthetic** id
  ``<source>:<agent or "unknown-agent">:<UTC date>`` (``:<file stem>`` when the line has no
  time), noted in ``inputs[i]["notes"]``: one session per client per day, which the join must
  treat as a coarse bucket.
* ``agent``: the client name the gateway logged (``client_name``, ``clientInfo.name``, a
  Pomerium user), else NA.  ``seq``: 1-based order within the session (by time, then file order) —
  no third-party gateway numbers its calls.
* ``tool``: the name the gateway's client called — what follows the client's own
  ``mcp__<gateway>__`` prefix in its transcript, which the join compares.  Gatekit and MCPJungle
  show the tools of all their upstream servers under one server, namespaced ``<server>__<tool>``:
  their calls' ``tool`` is that whole name (``files__read_object``), ``server`` the upstream
  server (``files``) — see ``replaybook.sources._tool_names``.  The others show the upstream
  tool's own name (Obot and Pomerium: one upstream server per endpoint; Docker mcp-gateway
  unprefixed), kept as logged.  A call whose log names no tool stays a call, ``tool`` NA: Docker's
  ``Calling tool (unknown)`` line (``error`` says so), and a policy audit tool event whose
  ``tool_name`` is missing, empty or not text (a refusal all the same; the file's notes name
  its lines).
* ``decision``: ``deny`` when the gateway says it refused (Docker ``result: denied``, Gatekit
  ``pipeline_outcome: blocked``, Obot ``outcome`` denied/blocked or a webhook that denied,
  Pomerium ``deny: true`` or ``allow: false``); ``allow`` otherwise — logs that only record
  forwarded calls (Docker stderr, MCPJungle, Lasso) are all ``allow``.  ``rule``: the policy id /
  stage / webhook, with the gateway's reason text.  ``error``: the gateway's error text for a
  failed call.
* **Arguments**: kept, and keyed with :func:`~replaybook.canonical.canonical_args`, only where the
  gateway logs them whole (Docker stderr JSON, Gatekit ``request_body``, Obot ``requestBody``,
  Pomerium ``mcp-tool-parameters``).  Where it logs none, only a count (Docker ``object with N
  field(s)``, Docker audit, MCPJungle) or a truncated body (Gatekit ``_truncated``):
  ``arguments`` None (truncated: as logged) and ``args_key`` NA — the join falls back to tool +
  time for those calls.  Lasso's arguments are rebuilt from its extra columns (non-null values)
  but ``args_key`` stays NA, since a null argument cannot be told from an absent one.
* ``meta_call_id``: a client tool-use id from the logged request's ``params._meta``
  (keys :data:`~replaybook.sources.door.META_CALL_ID_KEYS`).
* **Docker, both logs loaded together**: a stderr ``Calling tool`` line (with a time) and the
  ``allow`` audit event of the same (named) tool at most :data:`DOCKER_MERGE_WINDOW_S` apart are one call:
  the audit row keeps session/client/decision and takes the stderr arguments and duration; the
  stderr line becomes no row (``inputs[i]["merged_into_audit"]``).

Raises :class:`~replaybook.errors.InputError` for a missing path or an unreadable file.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import orjson
import pandas as pd

from .. import _json
from .._jsonl import (
    Damaged,
    control_repair,
    expand_paths,
    iter_lines,
    iter_objects,
    iter_text_lines,
    json_doc_items,
    line_scores,
    lines_words,
    parse_json,
    quarantine_row,
    read_source,
    split_torn,
    torn_row,
    unreadable_row,
    whole_lines,
)
from .._text import MAX_SHIFT_MS, before_by_ms, deep_safe, float_or_none, str_or_none, to_utc
from ..canonical import canonical_args
from ..frames import CALLS, QUARANTINE, LoadResult
from .door import meta_call_id
from ._tool_names import client_tool
from .registry import Source, register

__all__ = [
    "SYNTHETIC_SESSION_SOURCES",
    "is_synthetic_session",
    "load_docker_gateway",
    "load_mcpjungle",
    "load_gatekit",
    "load_obot",
    "load_lasso",
    "load_pomerium",
    "sniff_docker_gateway",
    "sniff_mcpjungle",
    "sniff_gatekit",
    "sniff_obot",
    "sniff_lasso",
    "sniff_pomerium",
    "go_duration_ms",
    "DOCKER_MERGE_WINDOW_S",
    "SOURCES",
]

_SUFFIXES = (".jsonl", ".json", ".log", ".txt", ".jsonl.gz", ".json.gz", ".log.gz")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


# --------------------------------------------------------------------------- shared helpers

def go_duration_ms(text: str) -> float | None:
    """A Go ``time.Duration`` string (``412.337ms``, ``1.2044s``, ``1m2.5s``, ``850µs``) in ms,
    worked out in decimal and rounded once to the nearest float (``1.2044s`` is 1204.4, not the
    1204.3999999999999 of ``1.2044 * 1000.0``)."""
    from decimal import Decimal

    units = {"ns": Decimal("1e-6"), "us": Decimal("1e-3"), "µs": Decimal("1e-3"), "μs": Decimal("1e-3"),
             "ms": Decimal(1), "s": Decimal(1000), "m": Decimal(60000), "h": Decimal(3600000)}
    parts = re.findall(r"([0-9]*\.?[0-9]+)(ns|us|µs|μs|ms|s|m|h)", text or "")
    if not parts or "".join(n + u for n, u in parts) != text.strip().lstrip("-"):
        return None
    total = float(sum(Decimal(n) * units[u] for n, u in parts))
    return -total if text.strip().startswith("-") else total  # (Go writes a negative one "-1.5s")


def _meta_id(params: Any) -> str | None:
    """The client tool-use id in a logged request's ``params._meta``."""
    return meta_call_id(params.get("_meta") if isinstance(params, dict) else None)


def _files(paths: str | Path | Iterable[str | Path], loader: str,
           inputs: list[dict]) -> Iterator[tuple[Path, bytes, dict]]:
    """``(path, data, inputs entry)`` for each log file named by ``paths`` (folders walked for
    :data:`_SUFFIXES`); each entry, with ``not_calls`` 0 and empty ``notes``, is appended to
    ``inputs`` as its file is read.

    Raises:
        InputError: a path does not exist or a file cannot be read.
    """
    for path in expand_paths(paths, accept=lambda q: q.name.lower().endswith(_SUFFIXES)):
        data, info = read_source(path, loader, f"{loader} log")
        info.update(not_calls=0, notes=info.get("notes", []))  # (read_source's own kept: a cut gzip stream)
        inputs.append(info)
        yield path, data, info


def _load_calls(paths: str | Path | Iterable[str | Path], loader: str,
                read_file: Callable[..., None], *,
                finish_files: Callable[[list[dict], list[tuple[Path, dict]], dict], None] | None = None
                ) -> LoadResult:
    """Load every log file named by ``paths``: ``read_file(path, data, info, rows, quarantine)``
    appends one row dict per call (and quarantine rows); then :func:`_finish`.

    With ``finish_files`` the format pairs records across lines (a request and its response,
    a session's ``initialize`` and its calls), and a rotated log may split a pair over two
    files: the files are read in the time order of their first record (``app.log.1`` before
    ``app.log``), with one ``state`` dict for all of them — ``read_file(path, data, info, rows,
    quarantine, state)`` —, then ``finish_files(rows, [(path, info), …], state)`` finishes
    what spans files.  A log split anywhere then reads as it does whole.

    Raises:
        InputError: a path does not exist or a file cannot be read.
    """
    rows: list[dict] = []
    quarantine: list[dict] = []
    inputs: list[dict] = []
    if finish_files is None:
        for path, data, info in _files(paths, loader, inputs):
            read_file(path, data, info, rows, quarantine)
        return _finish(rows, quarantine, inputs, loader)
    files = list(_files(paths, loader, inputs))
    first = to_utc([_first_time(data) for _, data, _ in files])
    order = sorted(range(len(files)), key=lambda i: (pd.isna(first.iloc[i]),
                                                     first.iloc[i] if not pd.isna(first.iloc[i]) else 0, i))
    state: dict = {}
    for i in order:
        path, data, info = files[i]
        read_file(path, data, info, rows, quarantine, state)
    finish_files(rows, [(files[i][0], files[i][2]) for i in order], state)
    return _finish(rows, quarantine, inputs, loader)


_FIRST_TIME = re.compile(rb'"(?:timestamp|ts|time)"\s*:\s*"([^"\\]{10,40})"')


def _first_time(data: bytes) -> str | None:
    """The first ``timestamp``/``ts``/``time`` text in a log's bytes (where its records start)."""
    m = _FIRST_TIME.search(data)
    return m.group(1).decode("ascii", "replace") if m else None


def _dated(o: dict, key: str, what: str, path: Path, line_no: int | None, loader: str,
           quarantine: list[dict]) -> bool:
    """True when ``o[key]`` is a date-time; otherwise the record goes to ``quarantine`` as
    ``<what> without a valid <key>`` (with its line and compact JSON) and the answer is False."""
    if _valid_ts(o.get(key)):
        return True
    quarantine.append(quarantine_row(path, None, loader, f"{what} without a valid {key}",
                                     line_no=line_no, raw=_json.dumps(o)[:400]))
    return False


def _glued_after_torn(path: Path, line, score: Callable[[dict], float], loader: str,
                      quarantine: list[dict]) -> bytes | None:
    """For a complete line (``line``: :class:`~replaybook._jsonl.Line`) that did not parse: the
    bytes of the whole record glued after a torn start of another, where ``score`` (the format's
    record score) takes it — the torn start set aside in ``quarantine`` — else ``None``.  A text
    log's line reader calls it where :func:`_records` does the same for JSON Lines
    (:func:`~replaybook._jsonl.split_torn`)."""
    if line.error is None or line.pending:
        return None
    torn = split_torn(line.raw, score)
    if torn is None:
        return None
    quarantine.append(torn_row(path, line.line_no, line.offset, line.raw, torn[0], line.error, loader))
    return line.raw[torn[0]:]


def _records(path: Path, data: bytes, loader: str, quarantine: list[dict],
             list_keys: tuple[str, ...] = (), tables: tuple[str, ...] = (),
             score: Callable[[dict], float] | None = None) -> Iterator[tuple[int | None, dict]]:
    """JSON records of a file: JSON Lines, one object, a JSON array, or ``{<list_key>: [...]}``.

    ``score``: the format's record score (the sniffer's, > 0 for one of its records): in JSON
    Lines, a record glued to the torn start of another is read where the score takes it
    (:func:`~replaybook._jsonl.split_torn`), the torn start set aside.

    Yields ``(line_no, object)``; unusable lines/elements are quarantined.  A document that is
    valid but for raw control characters (a NUL byte, an unescaped tab in a string) yields its
    other elements; each element holding one is a quarantine row naming its index, line, byte
    offset and the character (:func:`~replaybook._jsonl.control_repair`); in one object holding
    lists under ``tables`` (an export of several tables), each of their elements is such an
    element, and the object is yielded with the others.
    """
    stripped = data.strip()
    first = stripped.split(b"\n", 1)[0].strip()
    doc: Any = None
    whole = False
    rep = None
    if stripped[:1] in (b"{", b"["):
        try:
            doc = _json.loads(stripped)   # one document (pretty or not); JSON Lines fail at line 2
            whole = True
        except orjson.JSONDecodeError as refused:
            # what orjson refuses and JSON allows (a lone-surrogate escape, 1e400) in one document
            # whose first line is not "{" alone: still one document, not lines to set aside
            try:
                if first not in (b"{", b"[") and "unexpected content after document" in str(refused):
                    raise ValueError("JSON Lines")  # (one value per line: read line by line below)
                doc = _json.loads_lenient(stripped.decode("utf-8", "surrogateescape"))
                whole = True
            except (json.JSONDecodeError, ValueError) as exc:
                rep = control_repair(data) if isinstance(exc, json.JSONDecodeError) else None
                if rep is not None:  # valid but for raw control characters: read around them
                    doc, whole = rep.doc, True
                elif first in (b"{", b"["):      # a pretty document that does not parse
                    quarantine.append(quarantine_row(
                        path, None, loader, f"JSON document is not valid JSON: {getattr(exc, 'msg', exc)}",
                        line_no=getattr(exc, "lineno", None), raw=data[:400]))
                    return
    if whole:
        text = data.decode("utf-8", "replace")
        if isinstance(doc, dict):
            key = next((k for k in list_keys if isinstance(doc.get(k), list)), None)
            if key is None and rep is None:
                yield 1 + data[: len(data) - len(data.lstrip())].count(b"\n"), deep_safe(doc)
                return
            if key is None and any(isinstance(doc.get(k), list) for k in tables):
                yield 1 + data[: len(data) - len(data.lstrip())].count(b"\n"), _tables_around_damage(
                    path, loader, quarantine, rep, doc, tables)
                return
            items, p = (doc[key], (key, "*")) if key is not None else ([doc], ())
        elif isinstance(doc, list):
            items, p = doc, ("*",)
        else:
            quarantine.append(quarantine_row(path, None, loader, f"not a JSON object or list ({type(doc).__name__})",
                                             line_no=1, raw=data[:400]))
            return
        if rep is not None:
            yield from _around_damage(path, loader, quarantine, rep, p)
            return
        try:
            lines = [ln for ln, _o, _v in json_doc_items(text, p)]
        except ValueError:
            lines = []
        if len(lines) != len(items):
            lines = [None] * len(items)
        for ln, it in zip(lines, items):
            if isinstance(it, dict):
                yield ln, deep_safe(it)
            else:
                quarantine.append(quarantine_row(path, None, loader, f"not a JSON object ({type(it).__name__})",
                                                 line_no=ln, raw=_json.dumps(it)[:400]))
        return
    accept = None if score is None else (lambda o: score(o) > 0)
    for line in iter_objects(path, data, loader, quarantine, accept=accept):
        yield line.line_no, deep_safe(line.obj)


def _around_damage(path: Path, loader: str, quarantine: list[dict], rep: Any,
                   p: tuple) -> Iterator[tuple[int | None, dict]]:
    """:func:`_records`' elements of a document that is valid but for raw control characters
    (``rep``, a :class:`~replaybook._jsonl.ControlRepair`; ``p`` the elements' path, ``()`` for
    the document itself)."""
    what = "the document" if not p else f'element {{}} of "{p[0]}"' if p[0] != "*" else "element {} of the array"
    try:
        elements, outside = rep.elements(p, exact=True)
    except (ValueError, RecursionError):
        elements, outside = [], []
    for d in outside:
        quarantine.append(quarantine_row(path, None, loader, d.reason(f"{len(elements):,} elements"),
                                         line_no=d.line_no, offset=d.offset, raw=d.raw))
    for k, (ln, off, it) in enumerate(elements):
        if isinstance(it, Damaged):
            quarantine.append(quarantine_row(path, None, loader, it.reason(what.format(k + 1)),
                                             line_no=ln, offset=off, raw=it.raw))
        elif isinstance(it, dict):
            yield ln, deep_safe(it)
        else:
            quarantine.append(quarantine_row(path, None, loader, f"not a JSON object ({type(it).__name__})",
                                             line_no=ln, raw=_json.dumps(it)[:400]))


def _tables_around_damage(path: Path, loader: str, quarantine: list[dict], rep: Any, doc: dict,
                          tables: tuple[str, ...]) -> dict:
    """``doc`` (one object of several tables, read around raw control characters) with each list
    under ``tables`` holding only its elements that hold none; the others are quarantine rows."""
    present = tuple(k for k in tables if isinstance(doc.get(k), list))
    out = deep_safe({k: v for k, v in doc.items() if k not in present})
    try:
        every, outside = rep.elements((present, "*"), exact=True)
    except (ValueError, RecursionError):
        every, outside = [], []
    for d in outside:
        quarantine.append(quarantine_row(path, None, loader, d.reason(f"{len(every):,} table rows"),
                                         line_no=d.line_no, offset=d.offset, raw=d.raw))
    for k in present:
        try:
            elements, _ = rep.elements((k, "*"), exact=True)
        except (ValueError, RecursionError):
            elements = []
        kept = out[k] = []
        for i, (ln, off, it) in enumerate(elements):
            if isinstance(it, Damaged):
                quarantine.append(quarantine_row(path, None, loader, it.reason(f'element {i + 1} of "{k}"'),
                                                 line_no=ln, offset=off, raw=it.raw))
            else:
                kept.append(it)
    return out


def _valid_ts(v: Any) -> bool:
    return isinstance(v, str) and not pd.isna(to_utc([v]).iloc[0])


def _day(ts: Any) -> str | None:
    if not isinstance(ts, str):
        return None
    t = to_utc([ts]).iloc[0]
    return None if pd.isna(t) else t.strftime("%Y-%m-%d")


#: Gateways whose logs may carry no session id; their calls get a synthetic ``door_session``
#: ``<source>:<agent or unknown-agent>:<UTC date or file name>`` (one per client per day).
SYNTHETIC_SESSION_SOURCES = frozenset({
    "docker-mcp-gateway", "mcpjungle", "gatekit", "obot", "lasso", "pomerium",
    "agentgateway", "context-forge", "invariant", "mxcp", "mcp-http",
})


def is_synthetic_session(door_session: Any) -> bool:
    """True when ``door_session`` is an id replaybook made up for a gateway that logs none
    (:data:`SYNTHETIC_SESSION_SOURCES`).  Such a session is a client's calls over a day: it may
    hold several conversations, so a one-to-one link to one transcript covers only part of it."""
    if not isinstance(door_session, str) or door_session.count(":") < 2:
        return False
    return door_session.split(":", 1)[0] in SYNTHETIC_SESSION_SOURCES


def _synthetic(source: str, agent: str | None, ts: Any, path: Path) -> str:
    if source not in SYNTHETIC_SESSION_SOURCES:  # keep is_synthetic_session true for every one made
        raise AssertionError(f"{source} missing from SYNTHETIC_SESSION_SOURCES")
    return f"{source}:{agent or 'unknown-agent'}:{_day(ts) or path.name}"


def _args(v: Any) -> tuple[Any, str | None]:
    if isinstance(v, dict):
        return v, canonical_args(v)
    return None, None


def _finish(rows: list[dict], quarantine: list[dict], inputs: list[dict], loader: str) -> LoadResult:
    """Rows → a sorted CALLS frame; ``seq`` numbered per session by time, then file order.  A row
    whose gateway logs no object gets the one its arguments name (``path_object``: a path-like
    argument, or ``<bucket>/<key>``), as every gateway loader's rows then do — a call with no
    object had no storage link."""
    from .gateways_more import path_object

    for r in rows:
        if not r.get("object") and isinstance(r.get("arguments"), dict):
            r["object"] = path_object(r["arguments"])
    ts = to_utc([r.get("ts") for r in rows])  # (RFC 3339 in either case: "…t12:00:03z" too)
    te = to_utc([r.get("ts_end") for r in rows])
    frame = CALLS.build([{**r, "ts": None, "ts_end": None} for r in rows])
    if not len(frame):
        return LoadResult(frame=frame, quarantine=QUARANTINE.build(quarantine), inputs=inputs)
    frame["ts"] = ts.array
    frame["ts_end"] = te.array
    # (a logged duration that is negative, not finite or beyond MAX_SHIFT_MS gives no end time)
    missing = frame["ts_end"].isna() & frame["ts"].notna() & frame["duration_ms"].between(0, MAX_SHIFT_MS)
    frame.loc[missing, "ts_end"] = frame.loc[missing, "ts"] + pd.to_timedelta(
        frame.loc[missing, "duration_ms"], unit="ms")
    need = frame["duration_ms"].isna() & frame["ts_end"].notna() & frame["ts"].notna()
    frame.loc[need, "duration_ms"] = (frame.loc[need, "ts_end"] - frame.loc[need, "ts"]).dt.total_seconds() * 1000.0
    frame["_order"] = range(len(frame))
    frame = frame.sort_values(["door_session", "ts", "_order"], kind="stable", na_position="last")
    frame["seq"] = (frame.groupby("door_session", dropna=False).cumcount() + 1).astype("Int64")
    frame = frame.drop(columns="_order").reset_index(drop=True)
    return LoadResult(frame=frame, quarantine=QUARANTINE.build(quarantine), inputs=inputs)


def _note_synthetic(info: dict, source: str, n: int) -> None:
    if n:
        info["notes"].append(f"{n} call(s) with a synthetic door_session ({source} logs no session id): "
                             "<source>:<agent>:<UTC date>, one per client per day")


def _mean_score(scores: list[float]) -> float:
    """0.95 × the mean of ``scores`` (rounded to 3 places); 0.0 for none."""
    return round(0.95 * sum(scores) / len(scores), 3) if scores else 0.0


def _doc_or_lines(sample: bytes, rec_score: Callable[[dict], float], list_keys: tuple[str, ...] = (),
                  frag: tuple[bytes, ...] = ()) -> float:
    """Score a sample that is JSONL, one object, a list, or ``{key: [...]}`` of records."""
    stripped = sample.strip()
    first = stripped.split(b"\n", 1)[0].strip()
    if stripped[:1] == b"[" or (stripped[:1] == b"{" and (first == b"{" or b"\n" not in stripped)):
        try:
            doc = _json.loads(stripped)
        except orjson.JSONDecodeError:
            doc = None
            if frag and all(f in sample for f in frag):
                return 0.7
        if isinstance(doc, dict):
            key = next((k for k in list_keys if isinstance(doc.get(k), list)), None)
            doc = doc[key] if key else [doc]
        if isinstance(doc, list):
            return _mean_score([rec_score(r) if isinstance(r, dict) else 0.0 for r in doc[:100]])
        return 0.0
    return _mean_score(line_scores(sample, rec_score))


# --------------------------------------------------------------------------- Docker mcp-gateway

_TS_PREFIX = r"(?:(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d))\s+)?"
_D_CALL = re.compile(_TS_PREFIX + r"\s*-\s+Calling tool (?P<tool>\S+) with arguments: (?P<args>.*?)\s*$")
_D_DONE = re.compile(_TS_PREFIX + r"\s*>\s+Calling tool (?P<tool>\S*) took: (?P<dur>\S+)\s*$")
_D_UNKNOWN = re.compile(_TS_PREFIX + r"\s*-\s+Calling tool \(unknown\) with method: (?P<method>\S+)\s*$")
_D_COUNT = re.compile(r"^object with \d+ field\(s\)$")


def _docker_audit_score(o: dict) -> float:
    keys = {"trigger", "target_type", "result", "server_name"}
    if keys <= o.keys() and o.get("result") in ("allowed", "denied"):
        return 1.0
    return 0.0


def sniff_docker_gateway(sample: bytes) -> float:
    """Confidence that ``sample`` is Docker mcp-gateway stderr (``--log-calls``) or its policy audit JSONL."""
    lines = [ln for ln in sample.split(b"\n")[:400] if ln.strip()]
    if not lines:
        return 0.0
    text_hits = 0
    for ln in lines:
        s = ln.decode("utf-8", "replace")
        if _D_CALL.match(s) or _D_DONE.match(s) or _D_UNKNOWN.match(s):
            text_hits += 1
    if text_hits:
        return round(min(0.95, 0.7 + 0.25 * text_hits / len(lines)), 3)
    return _mean_score(line_scores(sample, _docker_audit_score))


def _docker_stderr(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict]) -> None:
    open_calls: dict[str, list[dict]] = {}
    counted_only = 0
    unfinished = 0
    for n, start, raw, last in iter_text_lines(data):  # (a byte-order mark read past)
        s = _ANSI.sub("", raw.decode("utf-8", "replace"))
        if not s.strip():
            continue
        m = _D_CALL.match(s)
        if m:
            args_text = m.group("args")
            args, key = None, None
            if _D_COUNT.match(args_text):
                counted_only += 1
            else:
                obj, err = parse_json(args_text.encode("utf-8", "replace"))
                if err is None and isinstance(obj, dict):
                    args, key = deep_safe(obj), canonical_args(deep_safe(obj))
                elif err is None and obj is None:
                    args, key = {}, canonical_args({})
                elif last:
                    quarantine.append(quarantine_row(path, None, "docker-mcp-gateway",
                                                     "unterminated last line (still being written?)", kind="pending",
                                                     line_no=n, offset=start, raw=raw))
                    continue
                else:
                    info["notes"].append(f"line {n}: arguments are neither JSON nor a field count; args_key NA")
            tool = m.group("tool")
            row = {"door_session": _synthetic("docker-mcp-gateway", None, m.group("ts"), path), "agent": None,
                   "ts": m.group("ts"), "tool": tool, "arguments": args, "args_key": key, "decision": "allow",
                   "source_file": str(path), "line_no": n}
            rows.append(row)
            open_calls.setdefault(tool, []).append(row)
            continue
        m = _D_DONE.match(s)
        if m:
            q = open_calls.get(m.group("tool"))
            if q:
                row = q.pop(0)
                row["duration_ms"] = go_duration_ms(m.group("dur"))
                if m.group("ts"):
                    row["ts_end"] = m.group("ts")
            else:
                quarantine.append(quarantine_row(path, None, "docker-mcp-gateway",
                                                 "completion line without a matching call line", line_no=n,
                                                 raw=raw))
            continue
        m = _D_UNKNOWN.match(s)
        if m:
            rows.append({"door_session": _synthetic("docker-mcp-gateway", None, m.group("ts"), path), "agent": None,
                         "ts": m.group("ts"), "tool": None, "arguments": None, "args_key": None,
                         "decision": "allow", "error": f"tool name not logged (method {m.group('method')})",
                         "source_file": str(path), "line_no": n})
            continue
        if last and "Calling tool" in s:
            quarantine.append(quarantine_row(path, None, "docker-mcp-gateway",
                                             "unterminated last line (still being written?)", kind="pending",
                                             line_no=n, offset=start, raw=raw))
            continue
        info["not_calls"] += 1
    unfinished = sum(len(q) for q in open_calls.values())
    info["unfinished"] = unfinished
    if counted_only:
        info["notes"].append(f"{counted_only} call(s) logged only an argument count: arguments None, args_key NA")
    if unfinished:
        info["notes"].append(f"{unfinished} call(s) have no 'took' line: the call failed (the interceptor logs no "
                             "completion on error) or was still running")
    if rows:
        info["notes"].append("stderr call lines carry no session or client; ts is NaT unless the lines are "
                             "prefixed with a time (docker logs -t)")


_MISSING = object()  # a key the record does not have


def _docker_audit(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict]) -> None:
    synth = 0
    nameless: list[tuple[int | None, Any]] = []  # (line, tool_name as logged) of tool events naming no tool
    for ln, o in _records(path, data, "docker-mcp-gateway", quarantine, score=_docker_audit_score):
        if o.get("target_type") != "tool" or o.get("trigger") not in (None, "invoke", "call", "tools/call"):
            info["not_calls"] += 1
            continue
        if not _dated(o, "timestamp", "audit event", path, ln, "docker-mcp-gateway", quarantine):
            continue
        tool = str_or_none(o.get("tool_name"))
        if tool is None:  # a call all the same (a denied one is a refusal): kept with the tool unknown
            nameless.append((ln, o.get("tool_name", _MISSING)))
        agent = str_or_none(o.get("client_name")) or str_or_none(o.get("actor_name"))
        sess = str_or_none(o.get("session_id"))
        if sess is None:
            synth += 1
        result = o.get("result")
        reason = str_or_none(o.get("reason"))
        policy = str_or_none(o.get("policy_id")) or str_or_none(o.get("outcome_reason"))
        rule = " — ".join(x for x in (policy, reason) if x) or None
        rows.append({"door_session": sess or _synthetic("docker-mcp-gateway", agent, o.get("timestamp"), path),
                     "agent": agent, "ts": o["timestamp"], "server": str_or_none(o.get("server_name")),
                     "tool": tool, "arguments": None, "args_key": None,
                     "decision": "deny" if result == "denied" else "allow", "rule": rule,
                     "error": reason if o.get("outcome_reason") == "policy_error" else None,
                     "source_file": str(path), "line_no": ln})
    _note_synthetic(info, "the Docker policy audit", synth)
    if nameless:
        lines = [n for n, _ in nameless if n is not None]
        where = lines_words(lines) if len(lines) == len(nameless) else f"{len(nameless)} events"
        shown = ", ".join(dict.fromkeys("missing" if v is _MISSING else json.dumps(v, ensure_ascii=False)[:40]
                                        for _, v in nameless))
        info["notes"].append(f"tool events whose tool_name is missing, empty or not text ({shown}) on {where}: "
                             "kept as calls with the tool unknown (tool NA)")
    if any(r["source_file"] == str(path) for r in rows):
        info["notes"].append("the policy audit logs no arguments: arguments None, args_key NA")


def load_docker_gateway(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load Docker mcp-gateway logs (stderr ``--log-calls`` lines and/or policy audit JSONL) into ``calls``.

    Each file is read as stderr text when its lines are ``Calling tool`` lines, else as audit JSONL.
    Stderr calls are paired with their ``took`` line by tool name, in order (``duration_ms``).

    Returns:
        :class:`~replaybook.frames.LoadResult` (``inputs[i]``: ``not_calls``, ``unfinished``,
        ``layout`` (``stderr``/``audit``), ``notes``).

    Raises:
        InputError: a path does not exist or a file cannot be read.
    """
    stderr_rows: list[dict] = []
    audit_rows: list[dict] = []
    quarantine: list[dict] = []
    inputs: list[dict] = []
    by_path: dict[str, dict] = {}
    for path, data, info in _files(paths, "docker-mcp-gateway", inputs):
        head = data[:256 * 1024]
        text_like = any(_D_CALL.match(s) or _D_DONE.match(s) or _D_UNKNOWN.match(s)
                        for s in (_ANSI.sub("", x.decode("utf-8", "replace")) for x in head.split(b"\n")[:400]))
        if text_like or not data.strip()[:1] in (b"{", b"["):
            info["layout"] = "stderr"
            _docker_stderr(path, data, info, stderr_rows, quarantine)
        else:
            info["layout"] = "audit"
            _docker_audit(path, data, info, audit_rows, quarantine)
        by_path[str(path)] = info
    stderr_rows = _docker_merge(stderr_rows, audit_rows, by_path)
    left: dict[str, int] = {}
    for r in stderr_rows:
        left[r["source_file"]] = left.get(r["source_file"], 0) + 1
    for p, info in by_path.items():
        if info.get("layout") == "stderr":
            _note_synthetic(info, "the Docker gateway's call log", left.get(p, 0))
    return _finish(audit_rows + stderr_rows, quarantine, inputs, "docker-mcp-gateway")


#: How far apart (seconds) a stderr ``Calling tool`` line and its policy audit event may be.
DOCKER_MERGE_WINDOW_S = 2.0


def _docker_merge(stderr_rows: list[dict], audit_rows: list[dict], by_path: dict[str, dict]) -> list[dict]:
    """Fold stderr call lines into the allowed audit event of the same call, when both logs are loaded.

    A stderr line (it has a time) and an ``allow`` audit event agree when the tool is the same and
    they are at most :data:`DOCKER_MERGE_WINDOW_S` apart; each audit event takes the nearest
    unclaimed stderr line.  The audit row keeps its session, client and decision and gains the
    stderr line's arguments, ``args_key``, ``ts_end`` and ``duration_ms``; the stderr line becomes
    no row (``inputs[i]["merged_into_audit"]`` of its file).  Returns the stderr rows left.
    """
    if not stderr_rows or not audit_rows:
        return stderr_rows
    s_ts = to_utc([r.get("ts") for r in stderr_rows])
    a_ts = to_utc([r.get("ts") for r in audit_rows])
    taken: set[int] = set()
    for ai, a in enumerate(audit_rows):
        if a["decision"] != "allow" or a.get("tool") is None or pd.isna(a_ts.iloc[ai]):
            continue  # (an event naming no tool is not matched by time alone)
        best, best_d = None, None
        for si, srow in enumerate(stderr_rows):
            if si in taken or srow.get("tool") != a.get("tool") or pd.isna(s_ts.iloc[si]):
                continue
            d = abs((s_ts.iloc[si] - a_ts.iloc[ai]).total_seconds())
            if d <= DOCKER_MERGE_WINDOW_S and (best_d is None or d < best_d):
                best, best_d = si, d
        if best is None:
            continue
        taken.add(best)
        srow = stderr_rows[best]
        for k in ("arguments", "args_key", "ts_end", "duration_ms"):
            if srow.get(k) is not None:
                a[k] = srow[k]
        info = by_path.get(srow["source_file"])
        if info is not None:
            info["merged_into_audit"] = info.get("merged_into_audit", 0) + 1
    return [r for i, r in enumerate(stderr_rows) if i not in taken]


# --------------------------------------------------------------------------- MCPJungle

_ZAP_CONSOLE = re.compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\S+)\t(?P<level>\S+)\t(?:(?P<caller>\S+\.go:\d+)\t)?"
                          r"(?P<msg>[^\t{]*?)\s*(?:\t(?P<ctx>\{.*\}))?\s*$")


def _mcpjungle_score(o: dict) -> float:
    if o.get("service") == "mcpjungle":
        return 1.0 if o.get("event_type") in ("mcp_tool_call_start", "mcp_tool_call") else 0.7
    if o.get("event_type") in ("mcp_tool_call_start", "mcp_tool_call") and "tool_name" in o and "server_name" in o:
        return 0.9
    return 0.0


def _mcpjungle_record(o: dict) -> bool:
    """Whether a JSON object is a top-level record of MCPJungle's zap JSON log (a torn line's
    glued record: :func:`~replaybook._jsonl.split_torn`)."""
    return _mcpjungle_score(o) > 0


def _mcpjungle_line(raw: bytes, exact: bool = True) -> tuple[dict | None, str | None]:
    """``(record, ts)`` of one MCPJungle log line (zap JSON or console); ``(None, None)`` if neither.
    ``exact=False`` (the sniffer: it reads only strings) reads integers beyond 64 bits as floats."""
    return _mcpjungle_parts(raw, exact)[:2]


def _mcpjungle_parts(raw: bytes, exact: bool = True) -> tuple[dict | None, str | None, bool]:
    """:func:`_mcpjungle_line`'s ``(record, ts)`` and whether the line ends with its record's closing
    brace — a zap JSON record, or a console line's context object —, so was written whole: a
    console line cut inside its message still reads as one."""
    obj, err = parse_json(raw, exact)
    if err is None and isinstance(obj, dict):
        return obj, obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else (
            obj.get("ts") if isinstance(obj.get("ts"), str) else None), True
    s = _ANSI.sub("", raw.decode("utf-8", "replace"))
    m = _ZAP_CONSOLE.match(s)
    if not m:
        return None, None, False
    rec: dict = {"msg": m.group("msg"), "level": m.group("level")}
    closed = False
    if m.group("ctx"):
        ctx, cerr = parse_json(m.group("ctx").encode("utf-8"))
        if cerr is None and isinstance(ctx, dict):
            rec.update(ctx)
            closed = True
    return rec, m.group("ts"), closed


def sniff_mcpjungle(sample: bytes) -> float:
    """Confidence that ``sample`` is an MCPJungle (zap JSON or console) audit log."""
    parts = whole_lines(sample)  # (the last line too when the sample is the whole file)
    scores = []
    for raw in parts[:200]:
        if not raw.strip():
            continue
        rec, _ts = _mcpjungle_line(raw.strip(), exact=False)
        scores.append(_mcpjungle_score(rec) if rec else 0.0)
    if not scores or max(scores) < 0.9:
        return 0.0
    return round(0.95 * sum(scores) / len(scores), 3)


def _read_mcpjungle(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict]) -> None:
    """The calls of one MCPJungle audit log (see :func:`load_mcpjungle`)."""
    open_calls: dict[tuple, list[dict]] = {}
    n_calls = 0
    for line in iter_lines(data):
        rec, ts, closed = _mcpjungle_parts(line.raw.strip())
        if rec is None:  # a zap JSON record cut off mid-write, a whole one glued to it: that one is read
            glued = _glued_after_torn(path, line, _mcpjungle_record, "mcpjungle", quarantine)
            if glued is not None:
                rec, ts = _mcpjungle_line(glued)
        if rec is None or (line.pending and not closed):
            # (an unterminated last console line that does not end with its context object: cut
            # anywhere, it still reads as a line — still being written?)
            why = "neither a zap JSON nor a zap console line"
            if line.error is not None and line.raw.lstrip()[:1] == b"{":  # (a damaged JSON line: say how)
                why += f" ({line.error})"
            quarantine.append(unreadable_row(path, line, "mcpjungle", why))
            continue
        rec = deep_safe(rec)
        et = rec.get("event_type")
        if et not in ("mcp_tool_call_start", "mcp_tool_call"):
            info["not_calls"] += 1
            continue
        if not _valid_ts(ts):
            quarantine.append(quarantine_row(path, line, "mcpjungle", "audit line without a valid timestamp"))
            continue
        agent = str_or_none(rec.get("client_name"))
        rid = str_or_none(rec.get("request_id"))
        server, tool = client_tool(str_or_none(rec.get("server_name")), str_or_none(rec.get("tool_name")))
        key = ("rid", rid) if rid else ("name", agent, server, tool)
        if et == "mcp_tool_call_start":
            row = {"door_session": _synthetic("mcpjungle", agent, ts, path), "agent": agent, "ts": ts,
                   "server": server, "tool": tool,
                   "arguments": None, "args_key": None, "decision": "allow",
                   "source_file": str(path), "line_no": line.line_no}
            rows.append(row)
            n_calls += 1
            open_calls.setdefault(key, []).append(row)
            continue
        q = open_calls.get(key)
        dur = float_or_none(rec.get("duration_ms"))
        if q:
            row = q.pop(0)
            row["ts_end"] = ts
            row["duration_ms"] = dur
        else:
            t = before_by_ms(ts, dur)  # (no usable duration: the end time is all the log gives)
            start = ts if t is None else t.isoformat()
            row = {"door_session": _synthetic("mcpjungle", agent, ts, path), "agent": agent, "ts": start,
                   "ts_end": ts, "duration_ms": dur, "server": server,
                   "tool": tool, "arguments": None, "args_key": None,
                   "decision": "allow", "source_file": str(path), "line_no": line.line_no}
            rows.append(row)
            n_calls += 1
        if rec.get("success") is False:
            row["error"] = str_or_none(rec.get("error")) or "call failed (success: false)"
    info["unfinished"] = sum(len(q) for q in open_calls.values())
    _note_synthetic(info, "MCPJungle", n_calls)
    if n_calls:
        info["notes"].append("MCPJungle logs no arguments: arguments None, args_key NA")


def load_mcpjungle(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load MCPJungle audit logs (zap JSON or console lines) into ``calls``.

    A ``mcp_tool_call_start`` opens a call (``ts``, ``line_no``); the next ``mcp_tool_call`` for the
    same ``request_id`` (or, when empty, the same client/server/tool, in order) closes it
    (``ts_end``, ``duration_ms``, ``error`` when ``success`` is false).  A completion without a
    start becomes a call of its own (``ts`` = completion − duration).  ``tool`` is the name the
    client called, MCPJungle's canonical ``<server>__<tool>`` (``server_name``, ``tool_name``
    joined; see ``_tool_names``).  MCPJungle logs no session id and no arguments: synthetic
    ``door_session``, ``arguments`` None, ``args_key`` NA.

    Raises:
        InputError: a path does not exist or a file cannot be read.
    """
    return _load_calls(paths, "mcpjungle", _read_mcpjungle)


# --------------------------------------------------------------------------- Gatekit

_GK_RESPONSE = frozenset({"RESPONSE", "ERROR", "UPSTREAM_ERROR", "PARSE_ERROR", "INVALID_REQUEST_ERROR",
                          "METHOD_NOT_FOUND_ERROR", "INVALID_PARAMS_ERROR", "INTERNAL_ERROR",
                          "APPLICATION_ERROR"})


def _gatekit_score(o: dict) -> float:
    if {"event_type", "pipeline_outcome", "server_name"} <= o.keys() and ("security_evaluated" in o or "pipeline" in o):
        return 1.0
    return 0.0


def sniff_gatekit(sample: bytes) -> float:
    """Confidence that ``sample`` is a Gatekit JSON Lines audit log."""
    return _mean_score(line_scores(sample, _gatekit_score))


def _truncated(body: Any) -> bool:
    if isinstance(body, str):
        return True
    if isinstance(body, dict):
        if body.get("_truncated") is True:
            return True
        return any(_truncated_value(v) for v in body.values())
    return False


def _truncated_value(v: Any) -> bool:
    if isinstance(v, str):
        return v.endswith("...[truncated]")
    if isinstance(v, dict):
        return v.get("_truncated") is True or any(_truncated_value(x) for x in v.values())
    if isinstance(v, list):
        return any(_truncated_value(x) for x in v)
    return False


def _read_gatekit(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict],
                  state: dict) -> None:
    """The calls of one Gatekit audit log (see :func:`load_gatekit`); requests still open are
    kept in ``state`` for a response in the next file of a rotated log."""
    open_calls: dict[tuple, list[dict]] = state.setdefault("open", {})
    n_calls = truncated = no_body = 0
    for ln, o in _records(path, data, "gatekit", quarantine, score=_gatekit_score):
        et = str_or_none(o.get("event_type"))  # (an object there is no event type: not a response)
        if o.get("method") != "tools/call" and not (et in _GK_RESPONSE and o.get("method") in (None, "")):
            info["not_calls"] += 1
            continue
        if not _dated(o, "timestamp", "audit event", path, ln, "gatekit", quarantine):
            continue
        server = str_or_none(o.get("server_name"))
        key = (server, json.dumps(o.get("request_id")))
        pipe = o.get("pipeline") if isinstance(o.get("pipeline"), dict) else {}
        blocked = o.get("pipeline_outcome") == "blocked" or pipe.get("pipeline_outcome") == "blocked"
        stage = str_or_none(pipe.get("blocked_at_stage")) or (
            str_or_none(pipe.get("completed_by")) if blocked else None)
        reason = str_or_none(o.get("reason"))
        err = str_or_none(o.get("error_message"))
        if et in _GK_RESPONSE:
            q = open_calls.get(key)
            if not q:
                info["not_calls"] += 1
                info["notes"].append(f"line {ln}: response without a logged request; not a call row")
                continue
            row = q.pop(0)
            row["ts_end"] = o["timestamp"]
            dur = float_or_none(o.get("duration_ms"))
            if dur is not None:
                row["duration_ms"] = dur
        else:
            server, tool = client_tool(server, str_or_none(o.get("tool")))
            body = o.get("request_body")
            args, akey = None, None
            if body is None:
                no_body += 1
            elif _truncated(body):
                truncated += 1
                args = body.get("arguments") if isinstance(body, dict) and isinstance(body.get("arguments"), dict) else None
            else:
                args, akey = _args(body.get("arguments") if isinstance(body, dict) else None)
                if args is None and isinstance(body, dict) and "arguments" not in body:
                    args, akey = {}, canonical_args({})
            row = {"door_session": _synthetic("gatekit", None, o["timestamp"], path), "agent": None,
                   "ts": o["timestamp"], "server": server, "tool": tool, "arguments": args, "args_key": akey,
                   "decision": "allow", "meta_call_id": _meta_id(body),
                   "source_file": str(path), "line_no": ln}
            rows.append(row)
            n_calls += 1
            open_calls.setdefault(key, []).append(row)
        if blocked:
            row["decision"] = "deny"
        if blocked or stage:
            parts = [x for x in (stage, reason) if x]
            if parts:
                row["rule"] = " — ".join(parts)
        if err and o.get("response_status", "error") == "error":
            row["error"] = err
    _note_synthetic(info, "Gatekit", n_calls)
    if no_body:
        info["notes"].append(f"{no_body} call(s) without request_body (include_request_body off): "
                             "arguments None, args_key NA")
    if truncated:
        info["notes"].append(f"{truncated} call(s) with a truncated request_body: arguments as logged, "
                             "args_key NA")


def load_gatekit(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load Gatekit JSON Lines audit logs into ``calls``.

    Request events of ``tools/call`` open a call (``ts``, ``line_no``, arguments from
    ``request_body.arguments``); the response event with the same ``(server_name, request_id)``
    closes it (``ts_end``, ``duration_ms``, ``error_message``).  ``tool`` is the name the client
    called, with Gatekit's ``<server>__`` namespace (``files__list_folder``, however the Gatekit
    version logged it; see ``_tool_names``), ``server`` the upstream server (``server_name``).  ``decision`` is ``deny`` when either event's ``pipeline_outcome``
    is ``blocked``; ``rule`` = the blocking stage and the reason.  Gatekit logs no session id or
    client: synthetic ``door_session``.

    Raises:
        InputError: a path does not exist or a file cannot be read.
    """
    return _load_calls(paths, "gatekit", _read_gatekit, finish_files=_gatekit_unfinished)


def _gatekit_unfinished(rows: list[dict], files: list[tuple[Path, dict]], state: dict) -> None:
    """Each file's count of requests no response closed, in any file of the load."""
    left = Counter(r["source_file"] for q in state.get("open", {}).values() for r in q)
    for path, info in files:
        info["unfinished"] = left.get(str(path), 0)


# --------------------------------------------------------------------------- Obot

_OBOT_LIST_KEYS = ("items", "auditLogs", "data", "logs")
_DENY_WORDS = ("denied", "deny", "blocked", "rejected", "forbidden")


def _obot_score(o: dict) -> float:
    if "callType" in o and ("callIdentifier" in o or "mcpID" in o) and ("createdAt" in o or "sessionID" in o):
        return 1.0
    return 0.0


def sniff_obot(sample: bytes) -> float:
    """Confidence that ``sample`` holds Obot MCP audit log rows (object, list, ``{items}`` or JSONL)."""
    return _doc_or_lines(sample, _obot_score, _OBOT_LIST_KEYS, frag=(b'"callType"', b'"callIdentifier"'))


def _read_obot(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict]) -> None:
    """The calls of one Obot audit export (see :func:`load_obot`)."""
    synth = 0
    for ln, o in _records(path, data, "obot", quarantine, _OBOT_LIST_KEYS, score=_obot_score):
        if o.get("callType") != "tools/call":
            info["not_calls"] += 1
            continue
        if not _dated(o, "createdAt", "audit row", path, ln, "obot", quarantine):
            continue
        ci = o.get("clientInfo") if isinstance(o.get("clientInfo"), dict) else {}
        agent = str_or_none(ci.get("name")) or str_or_none(o.get("userAgent"))
        sess = str_or_none(o.get("sessionID"))
        if sess is None:
            synth += 1
        req = o.get("requestBody") if isinstance(o.get("requestBody"), dict) else None
        params = req.get("params") if req and isinstance(req.get("params"), dict) else None
        if params is not None:
            args, akey = _args(params.get("arguments") if "arguments" in params else {})
        else:
            args, akey = None, None
        outcome = str_or_none(o.get("outcome"))
        hooks = o.get("webhookStatuses")
        if hooks is not None and not isinstance(hooks, list):
            info["notes"].append(f"line {ln}: webhookStatuses is not a list ({type(hooks).__name__}): "
                                 "no webhook's verdict read for that call")
            hooks = None
        hooks = [h for h in (hooks or []) if isinstance(h, dict)]
        deny = (outcome or "").lower() in _DENY_WORDS or o.get("responseStatus") in (401, 403) or any(
            str(h.get("status", "")).lower() in _DENY_WORDS for h in hooks)
        acted = [h for h in hooks if str(h.get("status", "")).lower() not in ("", "success", "allowed", "ok")]
        rule = "; ".join(f"{h.get('name')}: {h.get('status')}" + (f" ({h['message']})" if str_or_none(h.get("message"))
                                                                  else "") for h in acted) or None
        resp = o.get("responseBody") if isinstance(o.get("responseBody"), dict) else {}
        error = None
        if isinstance(resp.get("error"), dict):
            error = str_or_none(resp["error"].get("message")) or _json.dumps(resp["error"]).decode()
        elif isinstance(resp.get("result"), dict) and resp["result"].get("isError") is True:
            error = "tool result isError"
        elif outcome and outcome.lower() not in ("success", "succeeded", "ok") and not deny:
            error = f"outcome: {outcome}"
        tool = str_or_none(o.get("callIdentifier")) or (str_or_none(params.get("name")) if params else None)
        rows.append({"door_session": sess or _synthetic("obot", agent, o["createdAt"], path), "agent": agent,
                     "ts": o["createdAt"], "duration_ms": float_or_none(o.get("processingTimeMs")),
                     "server": str_or_none(o.get("mcpServerDisplayName")) or str_or_none(o.get("mcpID")), "tool": tool,
                     "arguments": args, "args_key": akey, "decision": "deny" if deny else "allow",
                     "rule": rule, "meta_call_id": _meta_id(params), "error": error,
                     "source_file": str(path), "line_no": ln})
    _note_synthetic(info, "this Obot export", synth)


def load_obot(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load Obot MCP audit log rows into ``calls`` (``callType`` ``tools/call`` rows only).

    ``door_session`` = ``sessionID`` (the MCP session), ``agent`` = ``clientInfo.name``;
    ``duration_ms`` = ``processingTimeMs``; arguments from ``requestBody.params.arguments``.
    ``decision`` ``deny`` when ``outcome`` or a webhook status says denied/blocked/rejected or
    ``responseStatus`` is 401/403; ``rule`` names the webhooks that acted (with their message);
    ``error`` from ``responseBody.error``, a result with ``isError``, or a non-success outcome.

    Raises:
        InputError: a path does not exist or a file cannot be read.
    """
    return _load_calls(paths, "obot", _read_obot)


# --------------------------------------------------------------------------- Lasso

_LASSO_FIXED = frozenset({"timestamp", "track_id", "meta", "call_id", "capability_name", "content_type",
                          "content_annotations", "response_type", "server_name", "capability_type", "isError",
                          "content_text", "content_data", "content_mime_type", "content_uri"})


def _lasso_score(o: dict) -> float:
    return 1.0 if {"track_id", "capability_name", "capability_type"} <= o.keys() else 0.0


def sniff_lasso(sample: bytes) -> float:
    """Confidence that ``sample`` holds Lasso MCP gateway xetrack event rows (list or JSONL)."""
    return _doc_or_lines(sample, _lasso_score, ("events", "rows"), frag=(b'"track_id"', b'"capability_name"'))


def _read_lasso(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict]) -> None:
    """The calls of one Lasso event log (see :func:`load_lasso`)."""
    n = 0
    for ln, o in _records(path, data, "lasso", quarantine, ("events", "rows"), score=_lasso_score):
        if o.get("capability_type") != "tool":
            info["not_calls"] += 1
            continue
        if not _dated(o, "timestamp", "row", path, ln, "lasso", quarantine):
            continue
        args = {k: v for k, v in o.items() if k not in _LASSO_FIXED and v is not None}
        is_err = o.get("isError") not in (None, 0, False, "0", "false")
        rows.append({"door_session": str_or_none(o.get("track_id")) or _synthetic("lasso", None, o["timestamp"], path),
                     "agent": None, "ts": o["timestamp"], "server": str_or_none(o.get("server_name")),
                     "tool": str_or_none(o.get("capability_name")), "arguments": args, "args_key": None,
                     "decision": "allow",
                     "error": (str_or_none(o.get("content_text")) or "isError") if is_err else None,
                     "source_file": str(path), "line_no": ln})
        n += 1
    if n:
        info["notes"].append("Lasso timestamps carry no zone: read as UTC")
        info["notes"].append("arguments rebuilt from Lasso's extra columns (null values dropped); args_key NA")


def load_lasso(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load Lasso MCP gateway xetrack rows into ``calls`` (``capability_type`` ``tool`` rows).

    ``door_session`` = ``track_id``; ``ts`` = ``timestamp`` read as UTC (Lasso writes no zone —
    noted); ``error`` = ``content_text`` when ``isError``.  Arguments are rebuilt from the columns
    that are not Lasso's own (non-null values), ``args_key`` NA (see the module doc).

    Raises:
        InputError: a path does not exist or a file cannot be read.
    """
    return _load_calls(paths, "lasso", _read_lasso)


# --------------------------------------------------------------------------- Pomerium

#: Pomerium's own services: their log lines (``http-request`` …) share a file with the MCP
#: authorize lines, usually far outnumbering them.
_POMERIUM_SERVICES = ("proxy", "authorize", "authenticate", "databroker", "all")


def _pomerium_score(o: dict) -> float:
    if "mcp-method" in o and ("allow" in o or "deny" in o):
        return 1.0
    if o.get("service") == "authorize" and "allow" in o and "deny" in o:
        return 0.5
    if o.get("service") in _POMERIUM_SERVICES and "level" in o:
        return 0.7  # another line of Pomerium's own (sniff_pomerium still needs one MCP line)
    return 0.0


def sniff_pomerium(sample: bytes) -> float:
    """Confidence that ``sample`` holds Pomerium authorize log lines for MCP."""
    scores = line_scores(sample, _pomerium_score)
    if not scores:
        return _doc_or_lines(sample, _pomerium_score)
    if max(scores) < 1.0:
        return 0.0
    return round(0.95 * sum(scores) / len(scores), 3)


def _read_pomerium(path: Path, data: bytes, info: dict, rows: list[dict], quarantine: list[dict]) -> None:
    """The calls of one Pomerium authorize log (see :func:`load_pomerium`)."""
    n = 0
    for ln, o in _records(path, data, "pomerium", quarantine, score=_pomerium_score):
        if o.get("mcp-method") != "tools/call":
            info["not_calls"] += 1
            continue
        if not _dated(o, "time", "log line", path, ln, "pomerium", quarantine):
            continue
        agent = str_or_none(o.get("user")) or str_or_none(o.get("email")) or str_or_none(o.get("user-id"))
        deny = o.get("deny") is True or o.get("allow") is False
        why = o.get("deny-why-true") if deny else o.get("allow-why-true")
        rule = ", ".join(str(x) for x in why) if isinstance(why, list) and why else None
        args, akey = _args(o.get("mcp-tool-parameters"))
        if args is None and "mcp-tool-parameters" not in o:
            info["notes"].append(f"line {ln}: no mcp-tool-parameters; args_key NA")
        rows.append({"door_session": _synthetic("pomerium", agent, o["time"], path), "agent": agent,
                     "ts": o["time"], "server": str_or_none(o.get("server-name")),
                     "tool": str_or_none(o.get("mcp-tool")),
                     "arguments": args, "args_key": akey, "decision": "deny" if deny else "allow",
                     "rule": rule, "source_file": str(path), "line_no": ln})
        n += 1
    _note_synthetic(info, "Pomerium", n)


def load_pomerium(paths: str | Path | Iterable[str | Path]) -> LoadResult:
    """Load Pomerium authorize log lines into ``calls`` (``mcp-method`` ``tools/call`` lines).

    ``decision`` ``deny`` when ``deny`` is true or ``allow`` is false; ``rule`` = the
    ``deny-why-true`` (denied) or ``allow-why-true`` (allowed) reasons; arguments from
    ``mcp-tool-parameters``.  Pomerium logs no MCP session id: synthetic ``door_session`` per user
    (``user``/``email``/``user-id`` when logged) per day.

    Raises:
        InputError: a path does not exist or a file cannot be read.
    """
    return _load_calls(paths, "pomerium", _read_pomerium)


# --------------------------------------------------------------------------- registration

#: The sources this module registers: ``(name, sniff, load, doc)``.
SOURCES = (
    ("docker-mcp-gateway", sniff_docker_gateway, load_docker_gateway,
     "Docker mcp-gateway: --log-calls stderr lines and the policy audit JSONL (pkg/policy/audit.go)"),
    ("mcpjungle", sniff_mcpjungle, load_mcpjungle, "MCPJungle audit log (zap JSON or console lines)"),
    ("gatekit", sniff_gatekit, load_gatekit, "Gatekit JSON Lines audit plugin (REQUEST/RESPONSE events)"),
    ("obot", sniff_obot, load_obot, "Obot MCP audit log rows (JSON object, list, {items} or JSONL)"),
    ("lasso", sniff_lasso, load_lasso, "Lasso MCP gateway xetrack event rows (JSON list or JSONL)"),
    ("pomerium", sniff_pomerium, load_pomerium, "Pomerium authorize log lines with mcp-method (zerolog JSON)"),
)

for _name, _sniff, _load, _doc in SOURCES:
    register(Source(name=_name, frame="calls", sniff=_sniff, load=_load, doc=_doc))
del _name, _sniff, _load, _doc
