"""Canonical frames: the one source of truth for every DataFrame replaybook produces.

Each frame is declared as a :class:`FrameSpec` — an ordered tuple of :class:`Column` with a
pandas dtype and a description.  Loaders build rows as plain dicts and call
:meth:`FrameSpec.build`; everything downstream (join, views, report, CLI) relies on the columns
and dtypes declared here.  Timestamps are always tz-aware UTC (``datetime64[ns, UTC]``).

Frames
------
``STEPS``       one row per transcript event (Claude Code and other agent clients)
``CALLS``       one row per call the door (MCP gateway) decided
``QUARANTINE``  one row per input line a loader could not use, or a pending last line

The dtype vocabulary: ``string`` (pandas ``StringDtype``, NA for missing), ``Int64`` and
``boolean`` (nullable), ``float64``, ``datetime64[ns, UTC]``, and ``object`` for JSON values
(``arguments`` holds the parsed dict).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from .errors import FrameError

__all__ = [
    "Column",
    "FrameSpec",
    "LoadResult",
    "STEPS",
    "CALLS",
    "QUARANTINE",
    "PAIRS",
    "SESSIONS",
    "ACCESS",
    "ACCESS_LINKS",
    "ACCESS_DUPLICATES",
    "ACCESS_ACTIONS",
    "ACCESS_OUTCOMES",
    "STEP_KINDS",
    "JOIN_STATUSES",
    "DECISIONS",
]

UTC = "datetime64[ns, UTC]"

#: Values of ``steps.kind``.
STEP_KINDS = (
    "user_prompt",  # a user-turn message the model received: typed by the user (or a sub-agent's task
                    # prompt), or written there by the client — a slash command or `!` command and its
                    # output, a caveat or skill text (Claude Code `isMeta`): the model saw each as the user's
    "model_request",  # one request to the model: all streamed lines of one message.id+requestId
    "tool_call",  # one tool_use block
    "tool_result",  # one tool_result block
    "summary",  # a compaction / summary line
    "system",  # system lines (hooks, turn durations, compaction boundaries)
    "other",  # every other line type (bookkeeping, line types newer than this loader)
)

#: Values of ``sessions.status`` (the join's verdict per door session).
JOIN_STATUSES = ("matched", "ambiguous", "unmatched")

#: Values of ``access.action``.
ACCESS_ACTIONS = ("read", "list", "head", "write", "delete", "other")

#: Values of ``access.outcome``.
ACCESS_OUTCOMES = ("allowed", "denied", "error")

#: Values of ``calls.decision``.
DECISIONS = ("allow", "deny", "ask")


@dataclass(frozen=True)
class Column:
    """One column of a canonical frame: its name, pandas dtype and meaning (with units)."""

    name: str
    dtype: str
    doc: str


@dataclass(frozen=True)
class FrameSpec:
    """An ordered, documented set of columns.

    Attributes:
        name: the frame's name (``steps``, ``calls``, ``quarantine``).
        columns: the columns, in output order.
        doc: one paragraph on what one row is.
    """

    name: str
    columns: tuple[Column, ...]
    doc: str

    @property
    def names(self) -> list[str]:
        """Column names in order."""
        return [c.name for c in self.columns]

    @property
    def json_columns(self) -> list[str]:
        """Names of the columns holding JSON values (dtype ``object``: ``arguments``, ``objects``,
        ``raw``), in order: a value there is any JSON value — a dict, a list, a string, a number."""
        return [c.name for c in self.columns if c.dtype == "object"]

    @property
    def dtypes(self) -> dict[str, str]:
        """``{column: dtype}`` in order."""
        return {c.name: c.dtype for c in self.columns}

    def empty(self) -> pd.DataFrame:
        """A frame with no rows and every column at its dtype."""
        return self.build([])

    def build(self, rows: Iterable[Mapping] | Mapping[str, list] | pd.DataFrame) -> pd.DataFrame:
        """Build a frame from row dicts, a dict of equal-length column lists, or a DataFrame.

        Missing columns become NA; a column that is not in the spec is an error.

        Timestamps may be given as ``pandas.Timestamp``, ``datetime`` or ISO 8601 strings; they
        are converted to UTC.  Returns a DataFrame with exactly :attr:`names`, at
        :attr:`dtypes`, and a fresh ``RangeIndex``.

        Raises:
            FrameError: a row has a key that is not a column, or a value cannot take its dtype.
        """
        if isinstance(rows, pd.DataFrame):
            df = rows
        elif isinstance(rows, Mapping):
            extra = set(rows) - set(self.names)
            if extra:
                raise FrameError(f"{self.name}: unknown columns {sorted(extra)}")
            given = {k: _as_series(v) for k, v in rows.items()}
            lengths = {len(v) for v in given.values()}
            if len(lengths) > 1:
                raise FrameError(f"{self.name}: columns have different lengths {sorted(lengths)}")
            return self._from_columns(given, lengths.pop() if lengths else 0)
        else:
            # column lists straight from the dicts: DataFrame.from_records would infer float64
            # for an integer column holding None and round counts above 2**53
            rows = list(rows)
            keys = dict.fromkeys(k for r in rows for k in r)
            return self.build({k: [r.get(k) for r in rows] for k in keys})
        extra = set(df.columns) - set(self.names)
        if extra:
            raise FrameError(f"{self.name}: unknown columns {sorted(extra)}")
        return self._from_columns({k: df[k] for k in df.columns}, len(df))

    def _from_columns(self, given: Mapping[str, pd.Series], n: int) -> pd.DataFrame:
        out = {}
        for c in self.columns:
            col = given[c.name] if c.name in given else pd.Series([None] * n, dtype="object")
            try:
                out[c.name] = _coerce(col, c.dtype)
            except (TypeError, ValueError, OverflowError) as exc:
                raise FrameError(f"{self.name}.{c.name}: cannot convert to {c.dtype}: {exc}") from exc
        return pd.DataFrame(out, index=pd.RangeIndex(n), copy=False)

    def validate(self, df: pd.DataFrame) -> None:
        """Check that ``df`` has exactly this spec's columns and dtypes.

        Raises:
            FrameError: naming the first missing, extra or mistyped column.
        """
        if list(df.columns) != self.names:
            missing = [n for n in self.names if n not in df.columns]
            extra = [n for n in df.columns if n not in self.names]
            raise FrameError(f"{self.name}: columns differ (missing {missing}, extra {extra})")
        for c in self.columns:
            if str(df[c.name].dtype) != str(pd.Series([], dtype=_pandas_dtype(c.dtype)).dtype):
                raise FrameError(f"{self.name}.{c.name}: dtype {df[c.name].dtype}, expected {c.dtype}")

    def describe(self) -> pd.DataFrame:
        """The spec itself as a frame (``column``, ``dtype``, ``meaning``) for docs and notebooks."""
        return pd.DataFrame(
            [(c.name, c.dtype, c.doc) for c in self.columns], columns=["column", "dtype", "meaning"]
        )


def _pandas_dtype(dtype: str):
    return pd.StringDtype("python") if dtype == "string" else dtype


def _as_series(v) -> pd.Series:
    """A column given to :meth:`FrameSpec.build`: Series and typed arrays keep their dtype (no
    copy); plain lists become ``object`` Series to be coerced."""
    if isinstance(v, pd.Series):
        return v.reset_index(drop=True)
    if isinstance(v, (np.ndarray, pd.api.extensions.ExtensionArray, pd.Index)):
        return pd.Series(v, copy=False)
    return pd.Series(v, dtype="object")


def _coerce(col: pd.Series, dtype: str) -> pd.Series:
    col = col.reset_index(drop=True)
    if dtype != "string" and str(col.dtype) == dtype:
        return col  # already at its dtype: pass through without a copy
    if dtype == UTC:
        if pd.api.types.is_datetime64_any_dtype(col.dtype):
            col = col.dt.tz_localize("UTC") if col.dt.tz is None else col.dt.tz_convert("UTC")
            return col.astype(UTC)
        return pd.to_datetime(col, utc=True, format="ISO8601", errors="raise").astype(UTC)
    if dtype == "object":
        return col.astype("object")
    if dtype == "string":
        if isinstance(col.dtype, pd.StringDtype) and col.dtype.storage == "python":
            return col
        try:
            return pd.Series(pd.array(np.asarray(col, dtype=object), dtype=pd.StringDtype("python")))
        except (TypeError, ValueError):  # non-str values (numbers): convert them to text
            col = col.astype("object").where(col.notna(), None)
            return col.astype(pd.StringDtype("python"))
    if dtype in ("Int64", "boolean"):
        col = col.astype("object").where(col.notna(), None)
        return col.astype(dtype)
    return col.astype(dtype)


def _cols(*specs: tuple[str, str, str]) -> tuple[Column, ...]:
    return tuple(Column(*s) for s in specs)


STEPS = FrameSpec(
    "steps",
    _cols(
        ("transcript_id", "string", "id of the transcript file (Claude Code: the file stem, a session UUID or agent-<id>)"),
        ("client", "string", "agent client that wrote it: claude-code, codex, otel …"),
        ("client_version", "string", "client version from the line (Claude Code `version`), if any"),
        ("client_session_id", "string", "the client's own session id (Claude Code `sessionId`)"),
        ("agent_id", "string", "sub-agent id for sidechain/sub-agent lines; NA for the main agent"),
        ("seq", "Int64", "0-based order of the event within its transcript (file order after merging)"),
        ("ts", UTC, "when the client wrote the event, UTC; NaT where the line carries no timestamp"),
        ("kind", "string", "one of STEP_KINDS"),
        ("line_type", "string", "the raw line type (`user`, `assistant`, `progress`, … or `type/subtype`)"),
        ("tool_raw", "string", "tool name as the client called it (`mcp__door__read_object`)"),
        ("server", "string", "MCP server name split from `mcp__<server>__<tool>`; NA for built-in tools"),
        ("tool", "string", "tool name without the client's MCP prefix (`read_object`)"),
        ("call_id", "string", "the tool-use id (`toolu_…`) on tool_call and tool_result rows"),
        ("arguments", "object", "tool_call: the arguments dict as the model sent them"),
        ("args_key", "string", "tool_call: canonical JSON of `arguments` (replaybook.canonical_args)"),
        ("result_ts", UTC, "tool_call: when its result was written, UTC"),
        ("is_error", "boolean", "tool_call/tool_result: the result was flagged as an error"),
        ("result_text", "string", "tool_call: the result's text (truncated to TEXT_LIMIT chars); a command's output "
                                  "(Codex shell/exec_command) with a non-zero exit code as its first line "
                                  "`Exit code: N` (is_error true; exit code 0: the output alone, is_error false)"),
        ("images", "Int64", "tool_call/tool_result/user_prompt: number of image blocks"),
        ("text", "string", "prompt, model text, summary or result text (truncated to TEXT_LIMIT chars)"),
        ("text_bytes", "Int64", "size of the full, untruncated text in UTF-8 bytes"),
        ("model", "string", "model_request: the model name"),
        ("message_id", "string", "model_request/tool_call: the API message id"),
        ("request_id", "string", "model_request/tool_call: the API request id"),
        ("input_tokens", "Int64", "model_request: input tokens (from the streamed copy with the final, largest output count; never summed)"),
        ("output_tokens", "Int64", "model_request: output tokens (the final, largest count of the streamed copies; never summed)"),
        ("uuid", "string", "the line's uuid (first line's uuid for a merged model request)"),
        ("parent_uuid", "string", "the line's parentUuid"),
        ("source_file", "string", "path of the file the event was read from"),
        ("line_no", "Int64", "1-based line number in source_file (first line for merged events)"),
    ),
    "One row per transcript event: prompts, model requests, tool calls, tool results, other lines.",
)

CALLS = FrameSpec(
    "calls",
    _cols(
        ("door_session", "string", "the door's session id (one log file per agent per session)"),
        ("agent", "string", "the agent name the door knows the caller by"),
        ("seq", "Int64", "the door's own 1-based call number within the session"),
        ("ts", UTC, "when the door received the call, UTC"),
        ("ts_end", UTC, "when the door answered, UTC (NaT if not logged)"),
        ("duration_ms", "float64", "ts_end − ts in milliseconds, or the logged duration"),
        ("server", "string", "the upstream MCP server name, if logged"),
        ("tool", "string", "the MCP tool name (no client prefix)"),
        ("arguments", "object", "the call's arguments dict; None where the log holds them as unknown (the door "
                                "logged `arguments: null`: too large, not an object, a line it could not read "
                                "as a call) — never `{}`, which is a call without arguments"),
        ("args_key", "string", "canonical JSON of `arguments` (replaybook.canonical_args); NA where `arguments` "
                               "is None, so the join never agrees on arguments it was not given"),
        ("arguments_bytes", "Int64", "arguments too large to log (refused, `door:arguments-too-large`): their size "
                                     "in bytes as compact JSON (UTF-8, keys as the client sent them); NA otherwise"),
        ("arguments_digest", "string", "with arguments_bytes: sha256:<hex> of those same bytes (the arguments "
                                       "themselves are not logged)"),
        ("arguments_invalid", "string", "arguments that are not a JSON object (refused, `door:invalid-arguments`), "
                                        "as canonical JSON text (a list, a string …), when the door logged them"),
        ("message_bytes", "Int64", "a client line the door could not take as a request (too large, not "
                                   "JSON-RPC, nested too deep): its size in bytes; NA for every other call"),
        ("object", "string", "the object the call reached (a path, a table, a URI)"),
        ("objects", "object", "every object the call reaches, when it names more than one (a tuple of str, as the "
                              "door logged them: `read_multiple_files`, a move's source and destination); NA "
                              "otherwise"),
        ("decision", "string", "the door's decision: one of DECISIONS"),
        ("approval", "string", "when the deciding rule asks the user: their answer (approved, declined, cancelled, "
                               "timed_out, unavailable, failed), which made the decision allow or deny"),
        ("rule", "string", "id of the rule that decided"),
        ("rows", "Int64", "rows returned to the agent"),
        ("bytes", "Int64", "bytes returned to the agent"),
        ("meta_call_id", "string", "client tool-use id from the request's `_meta` (e.g. `claudecode/toolUseId`)"),
        ("correlation", "string", "token the door propagated to storage (role session name, audit header, request id)"),
        ("error", "string", "error text when the upstream call failed"),
        ("response_digest", "string", "sha256:<hex> of the full response, when the door kept evidence"),
        ("object_digest", "string", "sha256:<hex> of the object as the door read it, if logged"),
        ("source_file", "string", "path of the door log file"),
        ("line_no", "Int64", "1-based line number in source_file"),
    ),
    "One row per tool call the door decided, in the door's own words. Never the data itself.",
)

QUARANTINE = FrameSpec(
    "quarantine",
    _cols(
        ("source_file", "string", "the file the line came from"),
        ("line_no", "Int64", "1-based line number where the unusable text starts"),
        ("byte_offset", "Int64", "offset of that text's first byte in the file"),
        ("kind", "string", "`invalid` (unusable line), `pending` (unterminated last line: still being written), "
                           "`conflict` (repeats another line's id with different content: the first is kept), "
                           "`duplicate` (a door log line repeating an earlier call in every field: counted "
                           "once) or `unread` (a whole file given for a frame that no source recognised, "
                           "`loader` `auto`, no line number: not evidence of these kinds, not damage)"),
        ("loader", "string", "the loader that set it aside (claude-code, door, …)"),
        ("error", "string", "why, in words"),
        ("raw", "string", "the line's start (200 chars, surrogate-safe)"),
    ),
    "One row per input line a loader could not use. Loaders never drop a line silently.",
)

PAIRS = FrameSpec(
    "pairs",
    _cols(
        ("door_session", "string", "the door session"),
        ("transcript_id", "string", "the transcript the step is in: the one assigned to that session, "
                                    "or one of its sub-agents' (JoinResult.sub_agents)"),
        ("step_seq", "Int64", "steps.seq of the agreeing tool_call (or of the tool_result standing in for "
                              "it: `step_kind`)"),
        ("call_seq", "Int64", "calls.seq of the agreeing door call"),
        ("call_row", "Int64", "0-based position of that call in the `calls` frame given to the join "
                              "(`calls.iloc[call_row]`): names the call even where a damaged or merged log "
                              "repeats a seq within a session"),
        ("call_id", "string", "the transcript's tool-use id"),
        ("tool", "string", "tool name (no client prefix)"),
        ("args_key", "string", "canonical arguments both sides share"),
        ("step_ts", UTC, "when the transcript wrote the tool call (its result, for `step_kind` "
                         "`tool_result`), UTC"),
        ("call_ts", UTC, "when the door received the call, UTC"),
        ("delta_ms", "float64", "call_ts − step_ts in milliseconds (positive: door clock later)"),
        ("how", "string", "`meta_id` (the door logged the client's tool-use id), `content` (tool + args + "
                          "window) or `tool_time` (tool + window: the gateway logged no arguments); for a "
                          "`step_kind` `tool_result` whose tool-use id no door call logged (a client that sends "
                          "the door none: Codex), `result_text` (the door's `error` is the result's text), "
                          "`result_tool` (the result names the call's tool) or `result_size` (the door's "
                          "`bytes` equal the result's `text_bytes`), each with the door handling the call within "
                          "the window of the result's time (join._result_pairs)"),
        ("step_kind", "string", "`tool_call`, or `tool_result`: the tool call's own line is missing from the "
                                "transcript (damaged and set aside, a file cut before it, a resumed copy that "
                                "dropped it), and the result claims the call: by its tool-use id, logged by the door "
                                "(`how` `meta_id`), or else by what the door logged of the answer (`how` "
                                "`result_text`, `result_tool`, `result_size`); `tool` and `args_key` NA unless "
                                "the result names them"),
        ("step_result_ts", UTC, "when the transcript wrote the tool call's result (steps.result_ts), UTC; NA "
                                "without one.  The door receives a call only once the client runs it — after "
                                "the user approved it — and before that result: a call the join pairs beyond "
                                "the window of `step_ts` waited, and lies before this time (give or take "
                                "the window, at most 5 s)"),
    ),
    "One row per agreeing (transcript tool call, door call) pair within an assigned session.",
)

SESSIONS = FrameSpec(
    "sessions",
    _cols(
        ("door_session", "string", "the door session id"),
        ("agent", "string", "the agent name the door logged"),
        ("start", UTC, "first call, UTC"),
        ("end", UTC, "last call (its ts_end when logged), UTC"),
        ("calls", "Int64", "door calls in the session"),
        ("refused", "Int64", "calls the door refused (decision deny)"),
        ("transcript_id", "string", "the transcript assigned one-to-one (or, see `continues`, the one this "
                                    "session continues); NA when unmatched"),
        ("agreed", "Int64", "steps of that transcript agreeing with this session's calls (a tool result "
                            "standing in for its missing call counted: `by_result_id`)"),
        ("transcript_tool_steps", "Int64", "door-bound tool_call steps in that transcript: those of a server behind "
                                           "the door (`JoinResult.door_servers`) and every step a door call claims"),
        ("share", "float64", "agreed / calls in the session (0–1)"),
        ("runner_up", "string", "the transcript with the next-best agreement with this session"),
        ("runner_up_agreed", "Int64", "its agreeing steps"),
        ("margin", "float64", "how much the best one-to-one total agreement drops if this session "
                              "may not have its transcript (0 means an equally good alternative exists); for "
                              "a session that continues another's transcript, or is continued (`continues`), "
                              "its agreement minus the runner-up's"),
        ("status", "string", "one of JOIN_STATUSES"),
        ("offset_ms", "float64", "estimated door clock − transcript clock, median over agreeing pairs, ms"),
        ("unclaimed_calls", "Int64", "door calls no step of the assigned transcript claims"),
        ("unmatched_steps", "Int64", "tool steps of the assigned transcript with no door call"),
        ("method", "string", "what the agreement rests on: `meta_id`, `content`, `tool_time` joined by `+`"),
        ("id_conflicts", "Int64", "door calls that agree with a tool call of the assigned transcript on tool, "
                                  "arguments and time but logged a different tool-use id from the step's: not "
                                  "counted as agreeing (an edited or copied transcript, another client)"),
        ("id_mismatches", "Int64", "door calls paired with a tool call of the assigned transcript by its own "
                                   "tool-use id whose tool or arguments differ from the step's: counted (the id "
                                   "decides), but the transcript or the door's log does not say what was called"),
        ("unknown_ids", "Int64", "door calls that logged a client tool-use id (``meta_call_id``) that no step of "
                                 "any loaded transcript has: that conversation's transcript is not among the "
                                 "inputs (or another client made the call)"),
        ("by_result_id", "Int64", "of `agreed`, door calls claimed by a tool result standing in for its call, "
                                  "by its tool-use id or (a client that sends the door none) by the door's error "
                                  "text, tool or answer size at its time (pairs.how): the tool call's own line is "
                                  "missing from the transcript (pairs.step_kind `tool_result`); not counted in "
                                  "`transcript_tool_steps` or `unmatched_steps`"),
        ("continues", "string", "the door session this one continues: its transcript is that session's "
                                "(assigned one-to-one), and the two ran one after the other — a door that "
                                "restarted mid-conversation, or a resumed conversation whose earlier file is "
                                "not among the inputs (join.CONTINUE_SHARE); NA otherwise"),
    ),
    "One row per door session with the join's verdict: which transcript, how sure, what is left over.",
)

ACCESS = FrameSpec(
    "access",
    _cols(
        ("ts", UTC, "when the storage service says the request happened, UTC (see time_kind)"),
        ("time_kind", "string", "what ts means: `received` (S3 server access log, Azure storage log), "
                                "`completed` (CloudTrail eventTime), `event` (GCP audit timestamp)"),
        ("source", "string", "aws.cloudtrail, aws.s3_access, gcp.audit, azure.storage"),
        ("principal", "string", "who made the request (ARN, service account, object id)"),
        ("principal_type", "string", "role, user, service, anonymous, … as the source says"),
        ("principal_name", "string", "a readable name the log gives beside the principal's id (Azure: the "
                                     "requester's UPN, where principal is its object id); NA otherwise"),
        ("action", "string", "one of ACCESS_ACTIONS"),
        ("action_raw", "string", "the source's own operation name (GetObject, storage.objects.get …)"),
        ("resource_uri", "string", "s3://bucket/key, gs://bucket/key, az://account/container/blob"),
        ("outcome", "string", "one of ACCESS_OUTCOMES; NA where the log gives no outcome (an S3 line whose status is '-' with no error code)"),
        ("error_code", "string", "the source's error code (AccessDenied, 7 …), if any"),
        ("bytes", "Int64", "bytes sent to the requester"),
        ("rows", "Int64", "items listed / rows returned, where the source says"),
        ("request_id", "string", "the source's request id (CloudTrail: requestID, else the event's eventID; "
                                 "GCP audit: the entry's insertId); which one a row holds is read from its "
                                 "source and raw record (access_join.request_id_kind: `request id`, `event id`, "
                                 "`insert id`), as output labels it"),
        ("user_agent", "string", "the client's user agent"),
        ("correlation", "string", "a correlation token the door propagated (role session name, "
                                  "source identity, custom audit field, client request id)"),
        ("raw", "object", "the source record as parsed, for drill-down: a dict, or a "
                          "SourceRecord (a read-only mapping equal to that dict, parsed from the "
                          "record's exact source text on first use; ``.text`` holds that text)"),
        ("source_file", "string", "path of the log file"),
        ("line_no", "Int64", "1-based line (or record index for whole-file JSON: the file's inputs entry "
                             "says numbered: record) in source_file"),
    ),
    "One row per cloud storage request from the cloud's own access logs.",
)

#: What :func:`replaybook.access_join.join_access` returns: which door call explains which
#: storage request, and which requests repeat another (one request the logs hold twice).
ACCESS_LINKS = FrameSpec(
    "access_links",
    tuple(Column(*c) for c in (
        ("door_session", "string", "the door session of the explaining call"),
        ("call_seq", "Int64", "calls.seq of the explaining call"),
        ("agent", "string", "the call's agent"),
        ("access_index", "Int64", "row label of the access row in the `access` frame given"),
        ("request_id", "string", "the access row's request id"),
        ("source", "string", "the access row's source (aws.cloudtrail …)"),
        ("action", "string", "the access row's action"),
        ("outcome", "string", "the access row's outcome"),
        ("resource_uri", "string", "the access row's resource_uri"),
        ("call_uri", "string", "the call's object mapped through storage_map"),
        ("call_ts", UTC, "when the door received the call, UTC"),
        ("access_ts", UTC, "the access row's ts, UTC"),
        ("time_kind", "string", "what access_ts means (received / completed / event)"),
        ("delta_ms", "float64", "access_ts − call_ts in milliseconds (positive: storage after the door), "
                                "before the clock offset is taken off"),
        ("how", "string", "one of LINK_HOWS"),
        ("candidates", "Int64", "calls that explain the request equally well: same tier, its time as near "
                                "each one's span (1: no other call could take it as well; more: the "
                                "pairing among them is by time order, see join_access)"),
        ("principal", "string", "the access row's principal"),
        ("source_ip", "string", "the address the request came from, as its log records it "
                                "(access_join.source_ip; NA when the log names none)"),
        ("user_agent", "string", "the access row's user agent"),
        ("other_principal", "boolean", "the request was made by another principal (or none the log names) "
                                       "than the one most of the same door session's requests in the same "
                                       "log carry; NA when two or more principals are as common there (which "
                                       "was the agent's is not known)"),
        ("other_client", "boolean", "the request came from another source address or user agent than the "
                                    "one most of the same door session's requests by the same principal in "
                                    "the same log came from (each compared only where both are known); NA "
                                    "when two or more are as common there and this one is one of them"),
    )),
    "One row per access row a door call explains (each access row at most once).",
)

ACCESS_DUPLICATES = FrameSpec(
    "access_duplicates",
    tuple(Column(*c) for c in (
        ("access_index", "Int64", "row label of the repeating access row in the `access` frame given"),
        ("same_as", "Int64", "row label of the row it repeats, the one the join counts"),
        ("source", "string", "the repeating row's source"),
        ("request_id", "string", "the request id both rows carry"),
        ("ts", UTC, "the repeating row's ts, UTC"),
        ("how", "string", "`delivered again` (the same log delivered the record twice: CloudTrail delivers "
                          "an event at least once, S3 server access logs are best effort) or `another log` "
                          "(the same request in two logs: CloudTrail data events and the S3 server access log)"),
    )),
    "One row per access row that repeats a storage request another row already holds.",
)


def spec_of(df: pd.DataFrame) -> FrameSpec | None:
    """The canonical spec whose columns ``df`` has, in order; ``None`` for any other frame."""
    names = list(df.columns)
    for spec in (STEPS, CALLS, ACCESS, QUARANTINE, PAIRS, SESSIONS, ACCESS_LINKS, ACCESS_DUPLICATES):
        if spec.names == names:
            return spec
    return None


@dataclass
class LoadResult:
    """What a loader returns: the canonical frame, its quarantine and the inputs it read.

    Attributes:
        frame: the canonical frame (``STEPS`` or ``CALLS`` shaped).
        quarantine: ``QUARANTINE``-shaped rows for lines set aside.
        inputs: one dict per file read: ``path``, ``sha256`` (hex), ``bytes``, ``lines``, ``format``.
    """

    frame: pd.DataFrame
    quarantine: pd.DataFrame = field(default_factory=QUARANTINE.empty)
    inputs: list[dict] = field(default_factory=list)

    def __post_init__(self) -> None:
        # every loader's quarantine leaves here with the canonical columns and dtypes
        try:
            QUARANTINE.validate(self.quarantine)
        except FrameError:
            self.quarantine = QUARANTINE.build(self.quarantine.reset_index(drop=True))

    @property
    def invalid(self) -> pd.DataFrame:
        """Quarantine rows of kind ``invalid``."""
        return self.quarantine[self.quarantine["kind"] == "invalid"]

    @property
    def pending(self) -> pd.DataFrame:
        """Quarantine rows of kind ``pending`` (an unterminated last line)."""
        return self.quarantine[self.quarantine["kind"] == "pending"]
