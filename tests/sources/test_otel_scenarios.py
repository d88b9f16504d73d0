"""OpenTelemetry GenAI traces against the shapes exporters write: one scenario per way an export
can differ from the tidy case, each with the rows it must give.

The exports are written here, modelled on the OTLP/JSON encoding (``ExportTraceServiceRequest``:
``resourceSpans[].scopeSpans[].spans[]``, ``AnyValue`` unions, 64-bit integers and nanosecond
times as decimal strings, hex ids — base64 from proto-JSON writers — and the Collector ``file``
exporter's one request per line) and on the GenAI semantic conventions: ``execute_tool`` and MCP
``tools/call`` spans (``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments``
/ ``.result``, opt-in, JSON text or structured), model spans with ``gen_ai.output.messages`` /
``gen_ai.input.messages`` (1.37+) or, before, ``gen_ai.content.completion`` /
``gen_ai.content.prompt`` events holding OpenAI-format messages (≤ 1.26).
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pandas as pd
from _jsonl_fixture import otlp_value

from replaybook._text import TEXT_LIMIT
from replaybook.canonical import canonical_args
from replaybook.frames import STEPS
from replaybook.sources.otel import load_otel

T = "4bf92f3577b34da6a3ce929d0e0e4736"
B = 1_772_359_200_000_000_000  # 2026-03-01T10:00:00Z in ns


value = otlp_value


def attrs(d: dict) -> list:
    return [{"key": k, "value": value(v)} for k, v in d.items()]


def span(sid, name, start_ms, end_ms, a, parent=None, trace=T, events=None, **extra) -> dict:
    sp = {"traceId": trace, "spanId": sid, "name": name, "kind": 1,
          "startTimeUnixNano": str(B + start_ms * 1_000_000), "attributes": attrs(a), **extra}
    if end_ms is not None:
        sp["endTimeUnixNano"] = str(B + end_ms * 1_000_000)
    if parent:
        sp["parentSpanId"] = parent
    if events:
        sp["events"] = [{"timeUnixNano": str(B + t * 1_000_000), "name": n, "attributes": attrs(ea)}
                        for t, n, ea in events]
    return sp


def request(*spans, version="2.1.0") -> dict:
    return {"resourceSpans": [{"resource": {"attributes": attrs({"service.name": "agent", "service.version": version})},
                               "scopeSpans": [{"scope": {"name": "agent"}, "spans": list(spans)}]}]}


def agent(sid="a000000000000001", conv="conv-1", **kw) -> dict:
    a = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": conv, "gen_ai.agent.name": "analyst"}
    return span(sid, "invoke_agent analyst", 0, 60_000, a, **kw)


def tool(sid, start, end, name, args=None, call_id=None, parent="a000000000000001", **a) -> dict:
    at = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, **a}
    if args is not None:
        at["gen_ai.tool.call.arguments"] = args
    if call_id is not None:
        at["gen_ai.tool.call.id"] = call_id
    return span(sid, f"execute_tool {name}", start, end, at, parent)


def chat(sid, start, end, parent="a000000000000001", events=None, **a) -> dict:
    return span(sid, "chat gpt-4.1", start, end, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4.1",
                                                  **a}, parent, events=events)


def write_jsonl(path: Path, reqs: list, tail: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in reqs) + tail, encoding="utf-8")
    return path


def rows(frame: pd.DataFrame, cols) -> list[list]:
    return [[None if pd.isna(v) else v for v in r] for r in frame[cols].itertuples(index=False)]


def calls_of(res) -> pd.DataFrame:
    return res.frame[res.frame["kind"] == "tool_call"]


# ---------------------------------------------------------------------------------------------

def test_arguments_as_json_text_and_structured_give_the_doors_key(tmp_path):
    key = canonical_args({"path": "demo/café.csv", "limit": 10})
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(
        agent(),
        tool("c000000000000001", 100, 200, "read_object", '{ "limit": 10.0, "path": "demo/cafe\\u0301.csv" }', "k1"),
        tool("c000000000000002", 300, 400, "read_object", {"path": "demo/café.csv", "limit": 10}, "k2"),
        tool("c000000000000003", 500, 600, "read_object", {"path": "demo/café.csv", "limit": 10.0}, "k3"))]))
    assert rows(calls_of(res), ["call_id", "tool", "args_key"]) == [["k1", "read_object", key],
                                                                   ["k2", "read_object", key],
                                                                   ["k3", "read_object", key]]


# ---------------------------------------------------------------------------------------------

def test_arguments_that_are_not_json_are_kept_as_text(tmp_path):
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(
        agent(), tool("c000000000000001", 100, 200, "read_object", "{path: demo", "k1"))]))
    assert rows(calls_of(res), ["call_id", "args_key", "text", "arguments"]) == [["k1", None, "{path: demo", None]]
    assert res.inputs[0]["notes"] == ["line 1: span c000000000000001 gen_ai.tool.call.arguments is not JSON; "
                                      "args_key left NA"]
    assert res.quarantine.empty


# ---------------------------------------------------------------------------------------------

def test_children_exported_before_their_parent_still_take_its_conversation(tmp_path):
    """Exporters batch finished spans: children end first, so they are written before the
    ``invoke_agent`` span that carries the conversation id."""
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [
        request(tool("c000000000000001", 100, 200, "read_object", {"path": "a"}, "k1")),
        request(chat("b000000000000001", 10, 90)),
        request(agent())]))
    assert rows(res.frame, ["seq", "line_no", "kind", "transcript_id"]) == [
        [0, 3, "other", "conv-1"], [1, 2, "model_request", "conv-1"], [2, 1, "tool_call", "conv-1"]]


# ---------------------------------------------------------------------------------------------

def test_parallel_calls_asked_for_together_fold_into_their_tool_spans(tmp_path):
    """Two calls in one answer, run side by side: each tool span is the row; the arguments the
    model sent fill a span that did not record them (arguments are opt-in on tool spans)."""
    out = [{"role": "assistant", "parts": [
        {"type": "tool_call", "id": "k1", "name": "read_object", "arguments": {"path": "a"}},
        {"type": "tool_call", "id": "k2", "name": "read_object", "arguments": {"path": "b"}}],
        "finish_reason": "tool_call"}]
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(
        agent(), chat("b000000000000001", 10, 90, **{"gen_ai.output.messages": json.dumps(out)}),
        tool("c000000000000002", 100, 300, "read_object", None, "k2"),
        tool("c000000000000001", 100, 250, "read_object", '{"path":"a"}', "k1"))]))
    assert rows(calls_of(res), ["call_id", "line_type", "args_key", "uuid"]) == [
        ["k2", "execute_tool", '{"path":"b"}', "c000000000000002"],
        ["k1", "execute_tool", '{"path":"a"}', "c000000000000001"]]


# ---------------------------------------------------------------------------------------------

def test_a_tool_error_the_mcp_client_span_records_fails_the_framework_call_around_it(tmp_path):
    """MCP semconv: a CallToolResult with isError sets error.type tool_error (and status ERROR) on
    the MCP client's tools/call span; the framework's execute_tool span around it, which is the
    row, usually records no failure of its own."""
    def mcp_span(sid, parent, start, end, **a):
        return span(sid, "tools/call read_object", start, end,
                    {"mcp.method.name": "tools/call", "gen_ai.tool.name": "read_object",
                     "gen_ai.operation.name": "execute_tool", "mcp.session.id": "sess-9", **a}, parent)
    failed = mcp_span("c100000000000002", "c100000000000001", 120, 280, **{"error.type": "tool_error"})
    failed["status"] = {"code": 2, "message": "access denied: reference/.env"}
    typed_only = mcp_span("c200000000000002", "c200000000000001", 420, 580, **{"error.type": "tool_error"})
    fine = mcp_span("c300000000000002", "c300000000000001", 720, 880)
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(
        agent(),
        tool("c100000000000001", 100, 300, "read_object", {"path": "reference/.env"}, "k1"), failed,
        tool("c200000000000001", 400, 600, "read_object", {"path": "b"}, "k2"), typed_only,
        tool("c300000000000001", 700, 900, "read_object", {"path": "c"}, "k3"), fine)]))
    assert rows(calls_of(res), ["call_id", "client_session_id", "is_error", "result_text"]) == [
        ["k1", "sess-9", True, "access denied: reference/.env"],
        ["k2", "sess-9", True, None],
        ["k3", "sess-9", False, None]]
    assert (res.frame["kind"] == "other").sum() == 3
    # the last attempt decides: a failure retried with success is a success, and the other way round
    lost = mcp_span("c400000000000002", "c400000000000001", 1010, 1050, **{"error.type": "-32001"})
    lost["status"] = {"code": 2, "message": "session not found"}
    retried = mcp_span("c400000000000003", "c400000000000001", 1100, 1180)
    ok_first = mcp_span("c500000000000002", "c500000000000001", 1310, 1350)
    failed_last = mcp_span("c500000000000003", "c500000000000001", 1400, 1480, **{"error.type": "tool_error"})
    failed_last["status"] = {"code": 2, "message": "quota"}
    res = load_otel(write_jsonl(tmp_path / "r.jsonl", [request(
        agent(),
        tool("c400000000000001", 1000, 1200, "read_object", {"path": "a"}, "k4"), retried, lost,
        tool("c500000000000001", 1300, 1500, "read_object", {"path": "b"}, "k5"), failed_last, ok_first)]))
    assert rows(calls_of(res), ["call_id", "is_error", "result_text"]) == [["k4", False, None], ["k5", True, "quota"]]
    # what the outer span lacks comes from the last attempt too, whatever order the export wrote them in
    old_sess = mcp_span("c600000000000002", "c600000000000001", 1610, 1650, **{"mcp.session.id": "sess-OLD",
                                                                               "error.type": "-32001"})
    old_sess["status"] = {"code": 2, "message": "session not found"}
    new_sess = mcp_span("c600000000000003", "c600000000000001", 1700, 1780, **{"mcp.session.id": "sess-NEW",
                                                                               "gen_ai.tool.call.result": "42 rows"})
    for order in ((old_sess, new_sess), (new_sess, old_sess)):
        res = load_otel(write_jsonl(tmp_path / "o.jsonl", [request(
            agent(), tool("c600000000000001", 1600, 1800, "read_object", {"path": "c"}, "k6"), *order)]))
        assert rows(calls_of(res), ["call_id", "is_error", "client_session_id", "result_text"]) == [
            ["k6", False, "sess-NEW", "42 rows"]]


# ---------------------------------------------------------------------------------------------

def test_a_span_exported_twice_counts_once_and_a_cut_line_is_pending(tmp_path):
    req = request(agent(), tool("c000000000000001", 100, 200, "read_object", {"path": "a"}, "k1"))
    p = write_jsonl(tmp_path / "t.jsonl", [req, req], tail=json.dumps(req)[:60])
    res = load_otel(p)
    # (an invoke_agent span with no model span under it is the model request)
    assert rows(res.frame, ["kind", "call_id"]) == [["model_request", None], ["tool_call", "k1"]]
    assert res.inputs[0]["duplicates"] == 2
    assert res.quarantine[["line_no", "kind", "byte_offset"]].values.tolist() == [
        [3, "pending", p.read_bytes().rindex(b"\n") + 1]]


def test_a_span_exported_before_it_ended_counts_as_its_ended_export(tmp_path):
    """An exporter that writes a span while it runs and again once it ends: the first export (no
    end, no status, no result) had been kept and the ended one, with its failure, dropped."""
    running = tool("c000000000000001", 100, None, "mcp__door__put", {"k": 1}, "k1")
    ended = tool("c000000000000001", 100, 400, "mcp__door__put", {"k": 1}, "k1",
                 **{"gen_ai.tool.call.result": "denied by policy"})
    ended["status"] = {"code": 2, "message": "denied"}
    again = json.loads(json.dumps(running))   # the running export written once more, later
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(running), request(ended), request(again)]))
    call = calls_of(res).iloc[0]
    assert (call["line_no"], call["is_error"], call["result_text"]) == (2, True, "denied by policy")
    assert str(call["result_ts"]) == "2026-03-01 10:00:00.400000+00:00"
    assert res.inputs[0]["duplicates"] == 2


# ---------------------------------------------------------------------------------------------

def test_a_huge_result_is_cut_and_surrogates_replaced(tmp_path):
    big = "é" * 50_000
    lines = [json.dumps(request(agent(), tool("c000000000000001", 100, 200, "read_object", {"path": "a"}, "k1",
                                              **{"gen_ai.tool.call.result": big}))),
             json.dumps(request(tool("c000000000000002", 300, 400, "read_object", {"path": "b"}, "k2",
                                     **{"gen_ai.tool.call.result": "bad SURROGATE here"}))).replace(
                 "SURROGATE", "\\udc80")]
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(lines) + "\n")
    res = load_otel(p)
    assert calls_of(res)["result_text"].tolist() == ["é" * TEXT_LIMIT + f" …[+{50_000 - TEXT_LIMIT} chars]",
                                                     "bad \ufffd here"]
    res.frame.to_json(date_format="iso")


# ---------------------------------------------------------------------------------------------

def test_spans_of_no_known_operation_and_other_signals(tmp_path):
    p = write_jsonl(tmp_path / "t.jsonl", [
        request(agent(), span("d000000000000001", "GET /objects", 10, 20, {"http.request.method": "GET"},
                              "a000000000000001"),
                span("d000000000000002", "embeddings m", 30, 40, {"gen_ai.operation.name": "embeddings"},
                     "a000000000000001")),
        {"resourceLogs": [{"scopeLogs": []}]},
        {"somethingElse": 1}])
    res = load_otel(p)
    assert rows(res.frame, ["kind", "line_type"]) == [["model_request", "invoke_agent"], ["other", "GET /objects"],
                                                     ["other", "embeddings"]]
    assert res.inputs[0]["other_signals"] == 1
    assert res.quarantine[["line_no", "error"]].values.tolist() == [
        [3, "not an OTLP trace export request (no resourceSpans)"]]


# ---------------------------------------------------------------------------------------------

def test_one_folder_of_every_export_shape_and_id_spelling(tmp_path):
    """The Collector's JSON Lines, a pretty-printed document (snake_case, integers as numbers),
    and a gzip copy; the same span written with hex ids and again with base64 ids (proto-JSON)
    is one span."""
    write_jsonl(tmp_path / "a.jsonl", [request(agent()), request(tool("c000000000000001", 100, 200, "read_object",
                                                                      {"path": "a"}, "k1"))])
    b64 = lambda h: base64.b64encode(bytes.fromhex(h)).decode()  # noqa: E731
    again = {"resource_spans": [{"scope_spans": [{"spans": [{
        "trace_id": b64(T), "span_id": b64("c000000000000001"), "parent_span_id": b64("a000000000000001"),
        "name": "execute_tool read_object", "start_time_unix_nano": B + 100_000_000,
        "end_time_unix_nano": B + 200_000_000,
        "attributes": [{"key": "gen_ai.operation.name", "value": {"string_value": "execute_tool"}}]}, {
        "trace_id": T.upper(), "span_id": "C000000000000002", "parent_span_id": "A000000000000001",
        "name": "execute_tool list", "start_time_unix_nano": B + 300_000_000, "end_time_unix_nano": B + 400_000_000,
        "attributes": [{"key": "gen_ai.operation.name", "value": {"string_value": "execute_tool"}},
                       {"key": "gen_ai.tool.call.arguments", "value": {"kvlist_value": {"values": [
                           {"key": "n", "value": {"int_value": 2}}]}}}]}]}]}]}
    (tmp_path / "b.json").write_text(json.dumps(again, indent=2))
    (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress((tmp_path / "a.jsonl").read_bytes()))
    res = load_otel(tmp_path)
    assert [(Path(i["path"]).name, i["layout"], i["duplicates"]) for i in res.inputs] == [
        ("a.jsonl", "jsonl", 0), ("b.json", "document", 1), ("c.jsonl.gz", "jsonl", 2)]
    assert rows(res.frame, ["transcript_id", "kind", "tool", "args_key", "uuid"]) == [
        ["conv-1", "model_request", None, None, "a000000000000001"],
        ["conv-1", "tool_call", "read_object", '{"path":"a"}', "c000000000000001"],
        ["conv-1", "tool_call", "list", '{"n":2}', "c000000000000002"]]
    STEPS.validate(res.frame)


# ---------------------------------------------------------------------------------------------

def test_a_sub_agent_invoked_by_an_agent_is_named(tmp_path):
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(
        agent(),
        span("a000000000000002", "invoke_agent researcher", 100, 900,
             {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.id": "agent-r"}, "a000000000000001"),
        tool("c000000000000001", 200, 300, "read_object", {"path": "a"}, "k1", parent="a000000000000002"),
        tool("c000000000000002", 1000, 1100, "read_object", {"path": "b"}, "k2"))]))
    assert rows(calls_of(res), ["call_id", "agent_id", "transcript_id"]) == [["k1", "agent-r", "conv-1"],
                                                                            ["k2", None, "conv-1"]]


# ---------------------------------------------------------------------------------------------

def test_times_as_strings_or_numbers_missing_or_unusable(tmp_path):
    no_end = tool("c000000000000002", 300, None, "read_object", {"path": "b"}, "k2")
    no_start = tool("c000000000000003", 500, 600, "read_object", {"path": "c"}, "k3")
    del no_start["startTimeUnixNano"]
    as_int = tool("c000000000000001", 100, 200, "read_object", {"path": "a"}, "k1")
    for k in ("startTimeUnixNano", "endTimeUnixNano"):
        as_int[k] = int(as_int[k])
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(agent()), request(as_int, no_end), request(no_start)]))
    assert rows(calls_of(res), ["call_id", "is_error"]) == [["k1", False], ["k2", None]]
    assert [str(t) for t in calls_of(res)["ts"]] == ["2026-03-01 10:00:00.100000+00:00",
                                                     "2026-03-01 10:00:00.300000+00:00"]
    assert [str(t) for t in calls_of(res)["result_ts"]] == ["2026-03-01 10:00:00.200000+00:00", "NaT"]
    assert res.quarantine[["line_no", "error"]].values.tolist() == [
        [3, "span without a usable startTimeUnixNano (nanoseconds since 1970, before 2262)"]]


# ---------------------------------------------------------------------------------------------

def test_tool_calls_recorded_only_in_the_models_messages(tmp_path):
    """Instrumentation of the model client alone records no tool spans: the calls the model
    asked for are ``tool_call`` parts of ``gen_ai.output.messages``, and what they returned is a
    ``tool_call_response`` part of the next request's ``gen_ai.input.messages``.  They had given
    no tool_call row, so such a trace could never join a door session."""
    out1 = [{"role": "assistant", "parts": [
        {"type": "text", "content": "Reading both."},
        {"type": "tool_call", "id": "call_1", "name": "mcp__door__read_object", "arguments": {"path": "a"}},
        {"type": "tool_call", "id": "call_2", "name": "list", "arguments": '{"path": "demo/"}'}],
        "finish_reason": "tool_call"}]
    in2 = [{"role": "user", "parts": [{"type": "text", "content": "go"}]}, *out1,
           {"role": "tool", "parts": [{"type": "tool_call_response", "id": " call_1", "response": "region,revenue"},
                                      {"type": "tool_call_response", "id": "call_2",
                                       "response": {"entries": ["a.csv"]}}]}]
    out2 = [{"role": "assistant", "parts": [{"type": "text", "content": "Done."}], "finish_reason": "stop"}]
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(
        agent(),
        chat("b000000000000001", 10, 900, **{"gen_ai.output.messages": out1}),
        chat("b000000000000002", 2000, 2500, **{"gen_ai.input.messages": json.dumps(in2),
                                               "gen_ai.output.messages": json.dumps(out2)}))]))
    f = res.frame
    assert rows(f, ["seq", "kind", "line_type", "tool_raw", "server", "tool", "call_id", "args_key", "result_text",
                    "text", "parent_uuid"]) == [
        [0, "other", "invoke_agent", None, None, None, None, None, None, None, None],
        [1, "model_request", "chat", None, None, None, None, None, None, "Reading both.", "a000000000000001"],
        [2, "tool_call", "chat/tool_call", "mcp__door__read_object", "door", "read_object", "call_1",
         '{"path":"a"}', "region,revenue", None, "b000000000000001"],
        [3, "tool_call", "chat/tool_call", "list", None, "list", "call_2", '{"path":"demo/"}',
         '{"entries":["a.csv"]}', None, "b000000000000001"],
        # the user's message the second request sends (the first recorded no input messages)
        [4, "user_prompt", "chat/user", None, None, None, None, None, None, "go", "b000000000000002"],
        [5, "model_request", "chat", None, None, None, None, None, None, "Done.", "a000000000000001"]]
    calls = calls_of(res)
    assert [str(t) for t in calls["ts"]] == ["2026-03-01 10:00:00.900000+00:00"] * 2
    assert calls["result_ts"].isna().all() and calls["line_no"].tolist() == [1, 1]


def test_a_call_id_a_provider_numbers_per_answer_names_each_call_once(tmp_path):
    """A provider that numbers the calls of each answer from call_0 asks for two different calls
    under the same id: the second (the read that returned the secret) had given no row at all,
    taken for the first seen twice.  Each is a row, with the answer sent back for it."""
    def asks(name, path):
        return [{"role": "assistant", "parts": [{"type": "tool_call", "id": "call_0", "name": name,
                                                 "arguments": {"path": path}}]}]

    def answer(text):
        return [{"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_0", "response": text}]}]

    user = [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
    in2 = user + asks("mcp__door__list", "/") + answer("a.txt")
    in3 = in2 + asks("mcp__door__read", "a.txt") + answer("SECRET")
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(
        agent(),
        chat("b000000000000001", 10, 900, **{"gen_ai.output.messages": json.dumps(asks("mcp__door__list", "/"))}),
        chat("b000000000000002", 2000, 2500, **{"gen_ai.input.messages": json.dumps(in2),
                                               "gen_ai.output.messages": json.dumps(asks("mcp__door__read",
                                                                                         "a.txt"))}),
        # the second request seen again by a framework's own model span: the same call, not a third
        chat("b000000000000004", 2000, 2500, parent="b000000000000002",
             **{"gen_ai.output.messages": json.dumps(asks("mcp__door__read", "a.txt"))}),
        chat("b000000000000003", 4000, 4500, **{"gen_ai.input.messages": json.dumps(in3)}))]))
    calls = calls_of(res)
    assert rows(calls, ["tool", "call_id", "args_key", "result_text"]) == [
        ["list", "call_0", '{"path":"/"}', "a.txt"], ["read", "call_0", '{"path":"a.txt"}', "SECRET"]]
    assert [str(t) for t in calls["ts"]] == ["2026-03-01 10:00:00.900000+00:00", "2026-03-01 10:00:02.500000+00:00"]


def test_a_reused_call_id_whose_first_call_a_tool_span_records_keeps_the_second_call(tmp_path):
    """The framework recorded a tool span for the first call_0 (list) only; the second call_0
    (read) had been taken for the call that span records and gave no row."""
    def asks(name, path):
        return json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "id": "call_0", "name": name,
                                                            "arguments": {"path": path}}]}])

    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(
        agent(),
        chat("b000000000000001", 10, 900, **{"gen_ai.output.messages": asks("mcp__door__list", "/")}),
        tool("c000000000000001", 1000, 1200, "mcp__door__list", '{"path": "/"}', "call_0"),
        chat("b000000000000002", 2000, 2500, **{"gen_ai.output.messages": asks("mcp__door__read", "a.txt")}),
        # the first call seen again in another model span's output: not a third call
        chat("b000000000000003", 2000, 2500, parent="b000000000000002",
             **{"gen_ai.output.messages": asks("mcp__door__list", "/")}))]))
    assert rows(calls_of(res), ["line_type", "tool", "call_id", "args_key"]) == [
        ["execute_tool", "list", "call_0", '{"path":"/"}'], ["chat/tool_call", "read", "call_0", '{"path":"a.txt"}']]


def test_tool_calls_in_the_older_completion_events(tmp_path):
    """Semantic conventions up to 1.26 (and Semantic Kernel, among others) put the content in
    span events: ``gen_ai.content.completion`` with ``gen_ai.completion``, OpenAI messages as
    JSON text; the tool's answer comes back as a ``tool`` message in ``gen_ai.prompt``."""
    completion = [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_9", "type": "function", "function": {"name": "read_object", "arguments": '{"path":"q"}'}}]}]
    prompt = [{"role": "user", "content": "go"}, *completion,
              {"role": "tool", "tool_call_id": "call_9", "content": "q-rows"}]
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(
        agent(),
        chat("b000000000000001", 10, 500,
             events=[(500, "gen_ai.content.completion", {"gen_ai.completion": json.dumps(completion)})]),
        chat("b000000000000002", 1000, 1500,
             events=[(1000, "gen_ai.content.prompt", {"gen_ai.prompt": json.dumps(prompt)}),
                     (1500, "gen_ai.content.completion",
                      {"gen_ai.completion": json.dumps([{"role": "assistant", "content": "q has rows"}])})]))]))
    assert rows(res.frame, ["kind", "tool", "call_id", "args_key", "result_text", "text"]) == [
        ["other", None, None, None, None, None],
        ["model_request", None, None, None, None, None],
        ["tool_call", "read_object", "call_9", '{"path":"q"}', "q-rows", None],
        ["user_prompt", None, None, None, None, "go"],
        ["model_request", None, None, None, None, "q has rows"]]


def test_a_call_without_an_id_beside_a_tool_span_of_its_name_is_not_counted_twice(tmp_path):
    out = [{"role": "assistant", "parts": [{"type": "tool_call", "name": "read_object", "arguments": {"path": "a"}},
                                           {"type": "tool_call", "name": "list", "arguments": {"path": "b"}}]}]
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(
        agent(), chat("b000000000000001", 10, 90, **{"gen_ai.output.messages": out}),
        tool("c000000000000001", 100, 200, "read_object", {"path": "a"}))]))
    assert rows(calls_of(res), ["line_type", "tool", "args_key"]) == [["chat/tool_call", "list", '{"path":"b"}'],
                                                                     ["execute_tool", "read_object", '{"path":"a"}']]


def test_a_call_with_an_id_beside_a_tool_span_that_records_none_is_not_counted_twice(tmp_path):
    """Tool spans of instrumentations before ``gen_ai.tool.call.id`` record no id: the model's
    ``call_7`` may be that span's call, and two rows for one call would leave one unmatched."""
    out = [{"role": "assistant", "parts": [
        {"type": "tool_call", "id": "call_7", "name": "mcp__door__read_object", "arguments": {"path": "a"}},
        {"type": "tool_call", "id": "call_8", "name": "mcp__door__list", "arguments": {"path": "b"}}]}]
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(
        agent(), chat("b000000000000001", 10, 90, **{"gen_ai.output.messages": out}),
        tool("c000000000000001", 100, 200, "read_object", {"path": "a"}))]))
    assert rows(calls_of(res), ["line_type", "call_id", "tool", "args_key"]) == [
        ["chat/tool_call", "call_8", "list", '{"path":"b"}'], ["execute_tool", None, "read_object", '{"path":"a"}']]


def test_the_users_prompts_from_the_messages_each_request_sends(tmp_path):
    """Each request sends the conversation so far: a user message is a prompt the first time a
    request of its conversation holds it, so "go on" typed twice is two prompts and the history
    sent again is none; another conversation's same words are its own prompt."""
    def said(*texts):
        msgs = []
        for t in texts:
            msgs.append({"role": "user", "parts": [{"type": "text", "content": t}]})
            msgs.append({"role": "assistant", "parts": [{"type": "text", "content": "…"}]})
        return json.dumps(msgs[:-1])
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(
        agent(),
        chat("b000000000000001", 100, 200, **{"gen_ai.input.messages": said("Summarise Q3")}),
        chat("b000000000000002", 300, 400, **{"gen_ai.input.messages": said("Summarise Q3", "go on")}),
        chat("b000000000000003", 500, 600, **{"gen_ai.input.messages": said("Summarise Q3", "go on", "go on")}),
        agent("a000000000000002", conv="conv-2"),
        chat("b000000000000004", 700, 800, parent="a000000000000002",
             **{"gen_ai.input.messages": said("Summarise Q3")}))]))
    p = res.frame[res.frame["kind"] == "user_prompt"]
    assert rows(p, ["transcript_id", "seq", "text", "parent_uuid", "line_type"]) == [
        ["conv-1", 1, "Summarise Q3", "b000000000000001", "chat/user"],
        ["conv-1", 3, "go on", "b000000000000002", "chat/user"],
        ["conv-1", 5, "go on", "b000000000000003", "chat/user"],
        ["conv-2", 1, "Summarise Q3", "b000000000000004", "chat/user"]]
    assert [str(t) for t in p["ts"]] == ["2026-03-01 10:00:00.100000+00:00", "2026-03-01 10:00:00.300000+00:00",
                                         "2026-03-01 10:00:00.500000+00:00", "2026-03-01 10:00:00.700000+00:00"]


def test_an_mcp_tool_call_that_names_no_server_is_still_an_mcp_call(tmp_path):
    """The MCP conventions require ``mcp.method.name`` and ``gen_ai.tool.name`` on a tools/call span;
    ``server.address`` is only recommended and ``mcp.server.name`` is no convention at all.  Such a
    span had ``server`` NA, which the join read as a built-in tool: a call the door never logged
    went unreported."""
    mcp = {"mcp.method.name": "tools/call", "mcp.session.id": "m-1"}
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(
        agent(),
        tool("b000000000000001", 1_000, 1_100, "update_rule", '{"path": "r.yaml"}', "c1", **mcp),
        tool("b000000000000002", 2_000, 2_100, "read_file", '{"path": "a"}', "c2",
             **{**mcp, "server.address": "gw.local"}),
        tool("b000000000000003", 3_000, 3_100, "read_file", '{"path": "b"}', "c3",
             **{**mcp, "mcp.server.name": "files"}),
        tool("b000000000000004", 4_000, 4_100, "summarise", '{"n": 1}', "c4"),       # no MCP attribute
        # a framework's execute_tool around the MCP client's own tools/call span, which names no server
        tool("b000000000000005", 5_000, 5_300, "list_dir", '{"path": "."}', "c5"),
        span("b000000000000006", "tools/call list_dir", 5_050, 5_250,
             {"mcp.method.name": "tools/call", "gen_ai.tool.name": "list_dir"}, "b000000000000005"),
    )]))
    t = calls_of(res)
    assert rows(t, ["call_id", "server", "tool"]) == [
        ["c1", "(unnamed MCP server)", "update_rule"], ["c2", "gw.local", "read_file"],
        ["c3", "files", "read_file"], ["c4", None, "summarise"], ["c5", "(unnamed MCP server)", "list_dir"]]


def test_an_attribute_value_of_the_wrong_shape_is_read_as_absent_and_quarantined(tmp_path):
    # {"arrayValue": {"values": 5}} had crashed the whole load (TypeError: 'int' object is not
    # iterable); every AnyValue field is checked for the type the JSON encoding gives it
    bad = [{"arrayValue": {"values": 5}}, {"arrayValue": {"values": None}}, {"arrayValue": {"values": True}},
           {"arrayValue": {"values": 1.5}}, {"kvlistValue": {"values": [7]}}, {"bytesValue": 5},
           {"arrayValue": {"values": [{"kvlistValue": {"values": "x"}}]}}, {"boolValue": "yes"}]
    reqs = []
    for i, b in enumerate(bad):
        sp = tool(f"b00000000000000{i}", 0, 10, "read_object", parent=None, call_id=f"call_{i}")
        sp["attributes"].append({"key": "foo", "value": b})
        sp["events"] = [{"timeUnixNano": str(B), "name": "ev", "attributes": [{"key": "e", "value": b}]}]
        reqs.append(request(sp))
    reqs[0]["resourceSpans"][0]["resource"]["attributes"].append({"key": "r", "value": {"bytesValue": [1]}})
    path = write_jsonl(tmp_path / "bad.jsonl", reqs)
    res = load_otel(path)
    f = res.frame
    assert f["call_id"].tolist() == [f"call_{i}" for i in range(8)]      # every span keeps its row
    assert f["tool"].eq("read_object").all() and f["kind"].eq("tool_call").all()
    q = res.quarantine
    assert q["source_file"].eq(str(path)).all()
    got = list(zip(q["line_no"], q["error"]))
    assert (1, "resource attribute r has a malformed value (bytesValue is not base64 text (list)): "
               "read as absent") in got
    assert (1, "span b000000000000000: foo has a malformed value (arrayValue.values is not a list (int)): "
               "read as absent") in got
    assert (1, "span b000000000000000: event ev attribute e has a malformed value (arrayValue.values is not a "
               "list (int)): read as absent") in got
    assert (3, "span b000000000000002: foo has a malformed value (arrayValue.values is not a list (bool)): "
               "read as absent") in got
    assert (4, "span b000000000000003: foo has a malformed value (arrayValue.values is not a list (float)): "
               "read as absent") in got
    assert (5, "span b000000000000004: foo has a malformed value (kvlistValue.values[0] is not a key and value "
               "(int)): read as absent") in got
    assert (6, "span b000000000000005: foo has a malformed value (bytesValue is not base64 text (int)): "
               "read as absent") in got
    assert (7, "span b000000000000006: foo has a malformed value (arrayValue.values[0]: kvlistValue.values is "
               "not a list (str)): read as absent") in got
    assert (8, "span b000000000000007: foo has a malformed value (boolValue is not true or false (str)): "
               "read as absent") in got
    assert not any(ln == 2 for ln, _ in got)      # values null: an empty list, as the JSON encoding reads it
    assert len(q) == 1 + 2 * 7
    assert json.loads(q[q["line_no"].eq(1) & q["error"].str.startswith("span")]["raw"].iloc[0]) == \
        {"arrayValue": {"values": 5}}


def test_token_counts_written_as_digits_are_read_and_those_past_64_bits_are_quarantined(tmp_path):
    # "12" as a stringValue passed the type check yet was read as NA; an intValue past int64 was
    # accepted by the check and NA in the row, with no quarantine row either way (value() writes
    # text as stringValue, integers as intValue digits)
    reqs = [request(chat("c000000000000001", 0, 10, parent=None, **{
                "gen_ai.conversation.id": "conv-1", "gen_ai.usage.input_tokens": "12",
                "gen_ai.usage.output_tokens": " 34 "})),
            request(chat("c000000000000002", 20, 30, parent=None, **{
                "gen_ai.conversation.id": "conv-1", "gen_ai.usage.input_tokens": 7,
                "gen_ai.usage.output_tokens": 99999999999999999999})),
            request(chat("c000000000000003", 40, 50, parent=None, **{
                "gen_ai.conversation.id": "conv-1", "gen_ai.usage.input_tokens": "1.5",
                "gen_ai.usage.output_tokens": "\u00b2"}))]
    path = write_jsonl(tmp_path / "tokens.jsonl", reqs)
    res = load_otel(path)
    f = res.frame
    assert f["uuid"].tolist() == ["c000000000000001", "c000000000000002", "c000000000000003"]
    assert f["input_tokens"].tolist()[:2] == [12, 7] and pd.isna(f["input_tokens"].iloc[2])
    assert f["output_tokens"].iloc[0] == 34 and f["output_tokens"].iloc[1:].isna().all()
    q = res.quarantine
    assert q["source_file"].eq(str(path)).all()
    assert list(zip(q["line_no"], q["error"])) == [
        (2, "span c000000000000002: gen_ai.usage.output_tokens is beyond what a 64-bit integer holds "
            "(99999999999999999999): not read"),
        (3, 'span c000000000000003: gen_ai.usage.input_tokens is not a whole number ("1.5"): not read'),
        (3, 'span c000000000000003: gen_ai.usage.output_tokens is not a whole number ("\u00b2"): not read')]


def test_an_integer_call_id_is_read_as_its_digits_and_a_note_says_so(tmp_path):
    # the id was kept as "42" while a quarantine row said it "is not text (42): not read"
    path = write_jsonl(tmp_path / "ids.jsonl", [
        request(tool("d000000000000001", 0, 10, "mcp__door__read", parent=None, call_id=42)),
        request(tool("d000000000000002", 20, 30, "mcp__door__read", parent=None, call_id=1.5)),
        request(tool("d000000000000003", 40, 50, "mcp__door__read", parent=None, call_id=True))])
    res = load_otel(path)
    f = res.frame
    assert f["uuid"].tolist() == ["d000000000000001", "d000000000000002", "d000000000000003"]
    assert f["call_id"].iloc[0] == "42" and f["call_id"].iloc[1:].isna().all()
    assert f["server"].eq("door").all() and f["tool"].eq("read").all()
    assert res.inputs[0]["notes"] == [
        "line 1: span d000000000000001 gen_ai.tool.call.id is a number (42), not text: read as the call id '42'"]
    # a value that is no id is left out, and the quarantine row says so (it had been kept as "1.5", "True")
    assert list(zip(res.quarantine["line_no"], res.quarantine["error"])) == [
        (2, "span d000000000000002: gen_ai.tool.call.id is not text (1.5): not read"),
        (3, "span d000000000000003: gen_ai.tool.call.id is not text (true): not read")]


def test_a_status_of_the_wrong_shape_is_quarantined_and_leaves_is_error_unknown(tmp_path):
    # "status": "ERROR" (a string, not a Status object) had given is_error False with nothing said
    spans = []
    for i, st in enumerate(["ERROR", {"code": "BROKEN"}, {"code": [2]}, {"code": True}, {"code": "STATUS_CODE_ERROR"},
                            {"code": 1}, {"code": 2, "message": 5}, None]):
        sp = tool(f"e00000000000000{i}", i * 10, i * 10 + 5, "read_object", parent=None, call_id=f"call_{i}")
        if st is not None:
            sp["status"] = st
        spans.append(request(sp))
    # a call whose last nested attempt (the MCP client span) has an unreadable status
    outer = tool("e000000000000008", 100, 120, "read_object", parent=None, call_id="call_8")
    inner = span("e000000000000009", "tools/call read_object", 101, 119,
                 {"mcp.method.name": "tools/call", "gen_ai.tool.name": "read_object"}, parent="e000000000000008",
                 status="ERROR")
    spans.append(request(outer, inner))
    path = write_jsonl(tmp_path / "status.jsonl", spans)
    res = load_otel(path)
    t = calls_of(res)
    assert rows(t, ["call_id", "is_error"]) == [
        ["call_0", None], ["call_1", None], ["call_2", None], ["call_3", None], ["call_4", True],
        ["call_5", False], ["call_6", True], ["call_7", False], ["call_8", None]]
    assert list(zip(res.quarantine["line_no"], res.quarantine["error"])) == [
        (1, "span e000000000000000: status is not an object ('ERROR'): not read, so whether the span failed "
            "is unknown"),
        (2, "span e000000000000001: status.code is not a status code ('BROKEN'): not read, so whether the span "
            "failed is unknown"),
        (3, "span e000000000000002: status.code is not a status code ([2]): not read, so whether the span failed "
            "is unknown"),
        (4, "span e000000000000003: status.code is not a status code (true): not read, so whether the span "
            "failed is unknown"),
        (7, "span e000000000000006: status.message is not text (5): not read"),
        (9, "span e000000000000009: status is not an object ('ERROR'): not read, so whether the span failed "
            "is unknown")]
    assert json.loads(res.quarantine["raw"].iloc[0]) == "ERROR"


def test_an_any_value_with_no_known_field_is_malformed_but_an_empty_one_is_unset(tmp_path):
    # {"foo": 1} had been read as None with nothing said; {} is OTLP's unset value: absent, no row
    sp = tool("f000000000000001", 0, 10, "read_object", parent=None, call_id="call_1")
    sp["attributes"] += [{"key": "foo", "value": {"foo": 1}},
                         {"key": "gen_ai.tool.call.arguments", "value": {"valu": "{}", "x": 1, "y": 2, "z": 3}},
                         {"key": "deep", "value": {"arrayValue": {"values": [{"stringValue": "a"}, {"foo": 1}]}}},
                         {"key": "unset", "value": {}},
                         {"key": "unset_inside", "value": {"arrayValue": {"values": [{}, {"intValue": "2"}]}}},
                         {"key": "no_value"}]
    path = write_jsonl(tmp_path / "anyvalue.jsonl", [request(sp)])
    res = load_otel(path)
    assert rows(res.frame, ["call_id", "arguments", "is_error"]) == [["call_1", None, False]]
    assert list(zip(res.quarantine["line_no"], res.quarantine["error"])) == [
        (1, "span f000000000000001: foo has a malformed value (no AnyValue field: foo): read as absent"),
        (1, "span f000000000000001: gen_ai.tool.call.arguments has a malformed value (no AnyValue field: "
            "valu, x, y, …): read as absent"),
        (1, "span f000000000000001: deep has a malformed value (arrayValue.values[1]: no AnyValue field: foo): "
            "read as absent")]
    assert json.loads(res.quarantine["raw"].iloc[0]) == {"foo": 1}


def test_load_otel_called_directly_reads_a_request_nested_a_thousand_deep(tmp_path):
    # the registry runs loaders with room for deep nesting; load_otel called directly had stopped
    # with RecursionError at the interpreter's default limit (deep_safe on a JSON Lines request,
    # the document reader's walk on a .json document)
    import sys

    import replaybook

    deep = "[" * 1000 + "]" * 1000
    sp = tool("d000000000000001", 0, 10, "read_object", parent=None, call_id="call_1")
    sp["extra"] = "@@"
    line = json.dumps(request(sp)).replace('"@@"', deep)
    other = json.dumps(request(tool("d000000000000002", 20, 30, "list", parent=None, call_id="call_2")))
    (tmp_path / "deep.jsonl").write_text(line + "\n" + other + "\n", encoding="utf-8")
    (tmp_path / "deep.json").write_text(json.dumps(request(sp), indent=1).replace('"@@"', deep), encoding="utf-8")
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)   # (the interpreter's default)
    try:
        for name, n in (("deep.jsonl", 2), ("deep.json", 1)):
            res = load_otel(tmp_path / name)
            assert sys.getrecursionlimit() == 1000      # restored on return
            assert rows(res.frame, ["uuid", "call_id", "tool"]) == [
                ["d000000000000001", "call_1", "read_object"], ["d000000000000002", "call_2", "list"]][:n]
            assert res.quarantine.empty
            via = replaybook.load(tmp_path / name).results["steps"]
            pd.testing.assert_frame_equal(res.frame, via.frame)
    finally:
        sys.setrecursionlimit(old)
