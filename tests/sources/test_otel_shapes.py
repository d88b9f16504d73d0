"""OTel traces written by OpenLLMetry (Traceloop) and OpenInference (Arize Phoenix)
instrumentations, read into the same steps as the GenAI conventions' spans.

The exports are written here, modelled on the attributes the projects publish:
``opentelemetry-semantic-conventions-ai`` 0.4.x (``traceloop.span.kind``, ``traceloop.entity.*``,
``llm.request.type``, the indexed ``gen_ai.prompt.{i}.*`` / ``gen_ai.completion.{i}.*`` with
``tool_calls.{j}.id|name|arguments``, ``gen_ai.usage.prompt_tokens``), the ``traceloop-sdk``
decorators (``{"args", "kwargs"}`` input) and ``opentelemetry-instrumentation-mcp`` (a client
span ``<tool>.tool`` with ``{"tool_name", "arguments"}`` and ``{"result", "is_error"}``; FastMCP's
server span under ``mcp.server``); OpenInference's ``spec/semantic_conventions.md`` and
``spec/tool_calling.md`` (``openinference.span.kind``, ``tool.name``, ``tool_call.id``,
``input.value`` / ``input.mime_type``, ``output.value``,
``llm.input_messages.{i}.message.*``, ``llm.output_messages.{i}.message.tool_calls.{j}.tool_call.*``,
``llm.model_name``, ``llm.token_count.*``, ``session.id``).  OTLP/JSON as the Collector's ``file``
exporter writes it: one export request per line, ``AnyValue`` unions, times in Unix nanoseconds.
"""

from __future__ import annotations

import json

import pandas as pd
from _jsonl_fixture import otlp_value, write_jsonl

from replaybook.frames import STEPS
from replaybook.sources.otel import load_otel, sniff

T = "5b8efff798038103d269b633813fc60c"
B = 1_772_359_200_000_000_000  # 2026-03-01T10:00:00Z in ns


value = otlp_value


def span(sid, name, start_ms, end_ms, a: dict, parent=None, status=None) -> dict:
    sp = {"traceId": T, "spanId": sid, "name": name, "kind": 1,
          "startTimeUnixNano": str(B + start_ms * 1_000_000), "endTimeUnixNano": str(B + end_ms * 1_000_000),
          "attributes": [{"key": k, "value": value(v)} for k, v in a.items()]}
    if parent:
        sp["parentSpanId"] = parent
    if status:
        sp["status"] = status
    return sp


def request(*spans, service="analyst-app") -> dict:
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": value(service)}]},
                               "scopeSpans": [{"scope": {"name": "traceloop"}, "spans": list(spans)}]}]}


def rows(frame: pd.DataFrame, cols) -> list[list]:
    return [[None if pd.isna(v) else v for v in r] for r in frame[cols].itertuples(index=False)]


def calls_of(res) -> pd.DataFrame:
    return res.frame[res.frame["kind"] == "tool_call"]


def times(col: pd.Series) -> list[str]:
    return [str(t) for t in col]


# --------------------------------------------------------------------------- OpenLLMetry

WF, AG, C1, R1, D1, C2 = ("a000000000000001", "a000000000000002", "b000000000000001", "c000000000000001",
                          "c000000000000002", "b000000000000002")


def traceloop_trace() -> list[dict]:
    """``traceloop-sdk`` workflow > agent > OpenAI chat (asks for read_object and list_objects),
    the MCP instrumentation's read_object call, a denied delete_object call, and a second chat
    that sends both answers back (list_objects has no tool span: the MCP client was not
    instrumented for it)."""
    chat1 = span(C1, "openai.chat", 100, 900, {
        "llm.request.type": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024-08-06", "gen_ai.response.id": "chatcmpl-1",
        "gen_ai.usage.prompt_tokens": 812, "gen_ai.usage.completion_tokens": 41, "llm.usage.total_tokens": 853,
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "You are an analyst.",
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Summarise Q3 revenue",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.finish_reason": "tool_calls",
        "gen_ai.completion.0.tool_calls.0.id": "call_a", "gen_ai.completion.0.tool_calls.0.name": "read_object",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"bucket": "reports", "key": "2025/q3.csv"}',
        "gen_ai.completion.0.tool_calls.1.id": "call_b", "gen_ai.completion.0.tool_calls.1.name": "list_objects",
        "gen_ai.completion.0.tool_calls.1.arguments": '{"prefix": "2025/"}'}, AG)
    read = span(R1, "read_object.tool", 1000, 1450, {
        "traceloop.span.kind": "tool", "traceloop.entity.name": "read_object",
        "traceloop.entity.input": json.dumps({"tool_name": "read_object",
                                              "arguments": {"key": "2025/q3.csv", "bucket": "reports"}}),
        "traceloop.entity.output": json.dumps({"result": "region,revenue\nEU,100"})}, AG, {"code": 1})
    delete = span(D1, "delete_object.tool", 1500, 1520, {
        "traceloop.span.kind": "tool", "traceloop.entity.name": "delete_object",
        "traceloop.entity.input": json.dumps({"tool_name": "delete_object", "arguments": {"key": "2025/q3.csv"}}),
        "traceloop.entity.output": json.dumps({"result": "access denied by rule no-deletes", "is_error": True})},
        AG, {"code": 2, "message": "access denied by rule no-deletes"})
    chat2 = span(C2, "openai.chat", 2000, 2600, {
        "llm.request.type": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.response.id": "chatcmpl-2",
        "gen_ai.usage.prompt_tokens": 990, "gen_ai.usage.completion_tokens": 12,
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "You are an analyst.",
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Summarise Q3 revenue",
        "gen_ai.prompt.2.role": "assistant",
        "gen_ai.prompt.2.tool_calls.0.id": "call_a", "gen_ai.prompt.2.tool_calls.0.name": "read_object",
        "gen_ai.prompt.2.tool_calls.0.arguments": '{"bucket": "reports", "key": "2025/q3.csv"}',
        "gen_ai.prompt.3.role": "tool", "gen_ai.prompt.3.tool_call_id": "call_a",
        "gen_ai.prompt.3.content": "region,revenue\nEU,100",
        "gen_ai.prompt.4.role": "tool", "gen_ai.prompt.4.tool_call_id": "call_b",
        "gen_ai.prompt.4.content": "2025/q2.csv\n2025/q3.csv",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "EU revenue was 100.",
        "gen_ai.completion.0.finish_reason": "stop"}, AG)
    wf = span(WF, "analyst.workflow", 0, 3000, {
        "traceloop.span.kind": "workflow", "traceloop.entity.name": "analyst",
        "traceloop.entity.input": json.dumps({"args": ["Summarise Q3 revenue"], "kwargs": {}})})
    ag = span(AG, "analyst.agent", 50, 2900, {"traceloop.span.kind": "agent", "traceloop.entity.name": "analyst"},
              WF)
    # the SDK exports spans as they end: children first
    return [request(chat1, read, delete), request(chat2), request(ag, wf)]


def test_openllmetry_spans_give_model_requests_tool_calls_and_results(tmp_path):
    res = load_otel(write_jsonl(tmp_path / "traces.jsonl", traceloop_trace()))
    f = res.frame
    STEPS.validate(f)
    assert f["transcript_id"].eq(T).all() and f["client"].eq("otel").all()
    assert rows(f, ["seq", "line_no", "kind", "line_type", "uuid"]) == [
        [0, 3, "other", "traceloop:workflow", WF],
        [1, 3, "other", "traceloop:agent", AG],
        [2, 1, "user_prompt", "traceloop:chat/user", None],
        [3, 1, "model_request", "traceloop:chat", C1],
        [4, 1, "tool_call", "traceloop:chat/tool_call", None],
        [5, 1, "tool_call", "traceloop:tool", R1],
        [6, 1, "tool_call", "traceloop:tool", D1],
        [7, 2, "model_request", "traceloop:chat", C2],       # sends the prompt again: no second prompt row
    ]
    up = f[f["kind"] == "user_prompt"].iloc[0]
    assert (up["text"], up["text_bytes"], up["parent_uuid"], str(up["ts"])) == (
        "Summarise Q3 revenue", 20, C1, "2026-03-01 10:00:00.100000+00:00")
    mr = f[f["kind"] == "model_request"]
    assert rows(mr, ["model", "message_id", "input_tokens", "output_tokens", "text", "agent_id"]) == [
        ["gpt-4o", "chatcmpl-1", 812, 41, None, None],
        ["gpt-4o", "chatcmpl-2", 990, 12, "EU revenue was 100.", None]]
    assert rows(calls_of(res), ["tool", "call_id", "args_key", "result_text", "is_error", "parent_uuid"]) == [
        ["list_objects", "call_b", '{"prefix":"2025/"}', "2025/q2.csv\n2025/q3.csv", None, C1],
        ["read_object", None, '{"bucket":"reports","key":"2025/q3.csv"}', "region,revenue\nEU,100", False, AG],
        ["delete_object", None, '{"key":"2025/q3.csv"}', "access denied by rule no-deletes", True, AG]]
    c = calls_of(res)
    # the model asked for read_object (call_a) and the MCP span recorded it: one row, not two
    assert times(c["ts"]) == ["2026-03-01 10:00:00.900000+00:00", "2026-03-01 10:00:01+00:00",
                              "2026-03-01 10:00:01.500000+00:00"]
    assert times(c["result_ts"]) == ["NaT", "2026-03-01 10:00:01.450000+00:00", "2026-03-01 10:00:01.520000+00:00"]
    assert c["arguments"].tolist()[1] == {"key": "2025/q3.csv", "bucket": "reports"}
    assert res.quarantine.empty and res.inputs[0]["notes"] == []


def test_a_framework_tool_around_the_mcp_call_and_the_servers_span_are_one_call(tmp_path):
    """A ``traceloop-sdk`` ``@tool`` (positional arguments: no names recorded) wraps the MCP
    instrumentation's client span, and the server's FastMCP spans join the trace through the
    ``traceparent`` the client puts in ``_meta``: one call, seen by three spans.  The outer span is
    the row; the MCP spans give it the arguments by name and the server's name."""
    ag = span(AG, "analyst.agent", 0, 5000, {"traceloop.span.kind": "agent", "traceloop.entity.name": "analyst"})
    outer = span("c000000000000010", "read_object.tool", 100, 900, {
        "traceloop.span.kind": "tool", "traceloop.entity.name": "read_object",
        "traceloop.entity.input": json.dumps({"args": ["reports", "2025/q3.csv"], "kwargs": {}}),
        "traceloop.entity.output": json.dumps("region,revenue\nEU,100")}, AG)
    client = span("c000000000000011", "read_object.tool", 110, 890, {
        "traceloop.span.kind": "tool", "traceloop.entity.name": "read_object",
        "traceloop.entity.input": json.dumps({"tool_name": "read_object",
                                              "arguments": {"bucket": "reports", "key": "2025/q3.csv"}}),
        "traceloop.entity.output": json.dumps({"result": "region,revenue\nEU,100"})}, "c000000000000010")
    server = span("c000000000000012", "mcp.server", 200, 800, {
        "traceloop.span.kind": "server", "traceloop.entity.name": "mcp.server",
        "traceloop.workflow.name": "door.mcp"}, "c000000000000011")
    served = span("c000000000000013", "read_object.tool", 210, 790, {
        "traceloop.span.kind": "tool", "traceloop.entity.name": "read_object", "traceloop.workflow.name": "door.mcp",
        "traceloop.entity.input": json.dumps({"tool_name": "read_object",
                                              "arguments": {"bucket": "reports", "key": "2025/q3.csv"}}),
        "traceloop.entity.output": json.dumps([{"type": "text", "content": "region,revenue\nEU,100"}])},
        "c000000000000012")
    kw = span("c000000000000020", "summarise.tool", 1000, 1100, {
        "traceloop.span.kind": "tool", "traceloop.entity.name": "summarise",
        "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"text": "EU,100", "words": 5}}),
        "traceloop.entity.output": json.dumps({"summary": "EU: 100"})}, AG)
    pos = span("c000000000000030", "lookup.tool", 1200, 1300, {
        "traceloop.span.kind": "tool", "traceloop.entity.name": "lookup",
        "traceloop.entity.input": json.dumps({"args": ["EU"], "kwargs": {}})}, AG)
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(served, server), request(client, outer, kw, pos, ag)]))
    f = res.frame
    assert rows(f, ["kind", "line_type", "tool", "server", "args_key", "result_text", "text"]) == [
        ["other", "traceloop:agent", None, None, None, None, None],
        ["tool_call", "traceloop:tool", "read_object", "door", '{"bucket":"reports","key":"2025/q3.csv"}',
         "region,revenue\nEU,100", None],
        ["other", "traceloop:tool (nested in span c000000000000010)", "read_object", None, None, None, None],
        ["other", "traceloop:server", None, None, None, None, None],
        ["other", "traceloop:tool (nested in span c000000000000010)", "read_object", None, None, None, None],
        ["tool_call", "traceloop:tool", "summarise", None, '{"text":"EU,100","words":5}', '{"summary": "EU: 100"}',
         None],
        ["tool_call", "traceloop:tool", "lookup", None, None, None, '{"args": ["EU"], "kwargs": {}}'],
    ]
    assert res.inputs[0]["notes"] == [
        "line 2: span c000000000000030 traceloop.entity.input holds positional arguments (their names are not "
        "recorded); kept as text, args_key left NA"]
    assert res.quarantine.empty


# --------------------------------------------------------------------------- OpenInference

OA, OL1, OT1, OL2, OR, OL3 = ("d000000000000001", "d000000000000002", "d000000000000003", "d000000000000004",
                              "d000000000000005", "d000000000000006")


def openinference_trace() -> list[dict]:
    """An AGENT (``session.id`` sess-9) > LLM asking for call_1 > its TOOL span > LLM sending
    call_1's answer back and asking for call_2 (no TOOL span records it) > a researcher AGENT
    whose LLM span holds call_2's answer."""
    agent = span(OA, "analyst", 0, 9000, {"openinference.span.kind": "AGENT", "agent.name": "analyst",
                                          "session.id": "sess-9", "input.value": "Summarise Q3 revenue"})
    llm1 = span(OL1, "ChatCompletion", 100, 800, {
        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-2024-08-06", "llm.provider": "openai",
        "llm.token_count.prompt": 700, "llm.token_count.completion": 30, "llm.token_count.total": 730,
        "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": "You are an analyst.",
        "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": "Summarise Q3 revenue",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_1",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "mcp__door__read_object",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments":
            '{"bucket": "reports", "key": "2025/q3.csv"}'}, OA)
    tool1 = span(OT1, "mcp__door__read_object", 900, 1300, {
        "openinference.span.kind": "TOOL", "tool.name": "mcp__door__read_object", "tool_call.id": "call_1",
        "tool.parameters": json.dumps({"type": "object", "properties": {"bucket": {"type": "string"}}}),
        "input.value": '{"key": "2025/q3.csv", "bucket": "reports"}', "input.mime_type": "application/json",
        "output.value": "region,revenue\nEU,100", "output.mime_type": "text/plain"}, OA)
    llm2 = span(OL2, "ChatCompletion", 1400, 2000, {
        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-2024-08-06",
        "llm.token_count.prompt": 760, "llm.token_count.completion": 25,
        "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": "You are an analyst.",
        "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": "Summarise Q3 revenue",
        "llm.input_messages.2.message.role": "assistant",
        "llm.input_messages.2.message.tool_calls.0.tool_call.id": "call_1",
        "llm.input_messages.2.message.tool_calls.0.tool_call.function.name": "mcp__door__read_object",
        "llm.input_messages.2.message.tool_calls.0.tool_call.function.arguments":
            '{"bucket": "reports", "key": "2025/q3.csv"}',
        "llm.input_messages.3.message.role": "tool", "llm.input_messages.3.message.tool_call_id": "call_1",
        "llm.input_messages.3.message.content": "region,revenue\nEU,100",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.contents.0.message_content.type": "text",
        "llm.output_messages.0.message.contents.0.message_content.text": "Checking the list too.",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_2",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "mcp__door__list_objects",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"prefix": "2025/"}'}, OA)
    researcher = span(OR, "researcher", 2100, 8000, {"openinference.span.kind": "AGENT", "agent.name": "researcher"},
                      OA)
    llm3 = span(OL3, "ChatCompletion", 2200, 3000, {
        "openinference.span.kind": "LLM", "llm.model_name": "gpt-4o-mini",
        "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "Find Q2 too",
        "llm.input_messages.1.message.role": "tool", "llm.input_messages.1.message.tool_call_id": "call_2",
        "llm.input_messages.1.message.name": "mcp__door__list_objects",
        "llm.input_messages.1.message.content": "2025/q2.csv",
        "llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "Q2 found."},
        OR)
    return [request(llm1, tool1, llm2), request(llm3, researcher), request(agent)]


def test_openinference_spans_give_model_requests_tool_calls_and_results(tmp_path):
    res = load_otel(write_jsonl(tmp_path / "phoenix.jsonl", openinference_trace()))
    f = res.frame
    STEPS.validate(f)
    assert f["transcript_id"].eq("sess-9").all()             # session.id of the AGENT, inherited
    assert rows(f, ["seq", "kind", "line_type", "model", "input_tokens", "output_tokens", "text", "agent_id"]) == [
        [0, "other", "openinference:AGENT", None, None, None, None, None],
        [1, "user_prompt", "openinference:LLM/user", None, None, None, "Summarise Q3 revenue", None],
        [2, "model_request", "openinference:LLM", "gpt-4o-2024-08-06", 700, 30, None, None],
        [3, "tool_call", "openinference:TOOL", None, None, None, None, None],
        [4, "model_request", "openinference:LLM", "gpt-4o-2024-08-06", 760, 25, "Checking the list too.", None],
        [5, "tool_call", "openinference:LLM/tool_call", None, None, None, None, None],
        [6, "other", "openinference:AGENT", None, None, None, None, "researcher"],
        [7, "user_prompt", "openinference:LLM/user", None, None, None, "Find Q2 too", "researcher"],  # its task
        [8, "model_request", "openinference:LLM", "gpt-4o-mini", None, None, "Q2 found.", "researcher"],
    ]
    c = calls_of(res)
    assert rows(c, ["tool_raw", "server", "tool", "call_id", "args_key", "result_text", "is_error", "uuid",
                    "parent_uuid"]) == [
        ["mcp__door__read_object", "door", "read_object", "call_1", '{"bucket":"reports","key":"2025/q3.csv"}',
         "region,revenue\nEU,100", False, OT1, OA],
        ["mcp__door__list_objects", "door", "list_objects", "call_2", '{"prefix":"2025/"}', "2025/q2.csv", None,
         None, OL2]]
    assert times(c["ts"]) == ["2026-03-01 10:00:00.900000+00:00", "2026-03-01 10:00:02+00:00"]
    assert times(c["result_ts"]) == ["2026-03-01 10:00:01.300000+00:00", "NaT"]
    assert res.quarantine.empty and res.inputs[0]["notes"] == []


def test_openinference_tool_arguments_by_where_they_were_recorded(tmp_path):
    """``tool_call.function.arguments`` first, then ``input.value``, then ``tool.parameters`` —
    which the specification makes the tool's schema, so a JSON Schema there is no arguments."""
    def tool(sid, start, a):
        return span(sid, "read_object", start, start + 50, {"openinference.span.kind": "TOOL",
                                                             "tool.name": "read_object", **a})
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(
        tool("e000000000000001", 0, {"tool_call.function.arguments": '{"key": "a"}', "input.value": '{"key": "x"}'}),
        tool("e000000000000002", 100, {"input.value": '{"key": "b"}'}),               # no mime type: JSON anyway
        tool("e000000000000003", 200, {"tool.parameters": '{"key": "c"}', "tool.call_id": "k3"}),
        tool("e000000000000004", 300, {"tool.parameters": json.dumps(
            {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]})}),
        tool("e000000000000005", 400, {"input.value": "read a", "input.mime_type": "text/plain"}),
        tool("e000000000000006", 500, {"tool_call.function.arguments": "{key: e"}),
        tool("e000000000000007", 600, {"input.value": "{key: f", "input.mime_type": "application/json",
                                       "tool.id": "k7"}),
    )]))
    assert rows(calls_of(res), ["call_id", "args_key", "text"]) == [
        [None, '{"key":"a"}', None], [None, '{"key":"b"}', None], ["k3", '{"key":"c"}', None],
        [None, None, None], [None, None, "read a"], [None, None, "{key: e"], ["k7", None, "{key: f"]]
    assert res.inputs[0]["notes"] == [
        "line 1: span e000000000000005 input.value is text, not an arguments object; kept as text, args_key left NA",
        "line 1: span e000000000000006 tool_call.function.arguments is not JSON; args_key left NA",
        "line 1: span e000000000000007 input.value is text, not an arguments object; kept as text, args_key left NA"]
    assert res.quarantine[["line_no", "kind", "error", "raw"]].values.tolist() == [
        [1, "invalid", "span e000000000000007: input.value is not JSON though input.mime_type says application/json",
         '"{key: f"']]


# --------------------------------------------------------------------------- bad values, other shapes

def test_values_of_the_wrong_type_are_quarantined_and_the_span_keeps_its_row(tmp_path):
    bad_llm = span("f000000000000001", "openai.chat", 0, 500, {
        "llm.request.type": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.prompt_tokens": "lots", "gen_ai.usage.completion_tokens": 7,
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"key": "a"}',            # a call without a name
        "gen_ai.completion.0.tool_calls.1.id": "call_9", "gen_ai.completion.0.tool_calls.1.name": "read_object",
        "gen_ai.completion.0.tool_calls.1.arguments": '{"key": "b"}'})
    bad_kind = span("f000000000000002", "mystery", 600, 700, {"openinference.span.kind": 7,
                                                              "session.id": "sess-1"})
    bad_oi = span("f000000000000003", "ChatCompletion", 800, 900, {
        "openinference.span.kind": "LLM", "llm.model_name": ["gpt-4o"], "llm.token_count.completion": -3,
        "llm.input_messages.first.message.role": "user",
        "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "hi"})
    bad_tool = span("f000000000000004", "stat_object", 1000, 1100, {
        "openinference.span.kind": "TOOL", "tool.name": 42, "tool_call.id": {"id": 1}, "input.value": '{"key": "c"}'})
    p = write_jsonl(tmp_path / "t.jsonl", [request(bad_llm), "not json", request(bad_kind, bad_oi, bad_tool)])
    res = load_otel(p)
    assert rows(res.frame, ["line_no", "kind", "line_type", "tool", "call_id", "args_key", "model",
                            "input_tokens", "output_tokens"]) == [
        [1, "model_request", "traceloop:chat", None, None, None, "gpt-4o", None, 7],
        [1, "tool_call", "traceloop:chat/tool_call", "read_object", "call_9", '{"key":"b"}', None, None, None],
        [3, "other", "mystery", None, None, None, None, None, None],
        [3, "user_prompt", "openinference:LLM/user", None, None, None, None, None, None],
        [3, "model_request", "openinference:LLM", None, None, None, None, None, None],
        [3, "tool_call", "openinference:TOOL", "stat_object", None, '{"key":"c"}', None, None, None],
    ]
    assert res.frame["transcript_id"].eq("sess-1").all()        # the trace's session.id
    assert res.quarantine[["line_no", "error"]].values.tolist() == [
        [2, "invalid JSON: Expecting value at column 1"],
        [1, "span f000000000000001: gen_ai.usage.prompt_tokens is not a token count (a whole number, 0 or more)"],
        [1, "span f000000000000001: gen_ai.completion.0.tool_calls.0.name is missing or not text: a tool call "
            "without a name cannot be counted"],
        [3, "span f000000000000002: openinference.span.kind is not text (int)"],
        [3, "span f000000000000003: llm.model_name is not text (list)"],
        [3, "span f000000000000003: llm.token_count.completion is not a token count (a whole number, 0 or more)"],
        [3, "span f000000000000003: llm.input_messages.first.message.role is not "
            "llm.input_messages.<index>.<field> (its index is no number)"],
        [3, "span f000000000000004: tool.name is not text (int)"],
        [3, "span f000000000000004: tool_call.id is not a call id (text)"],
    ]
    assert res.quarantine["raw"].tolist()[1:] == ['"lots"', '{"arguments":"{\\"key\\": \\"a\\"}"}', "7", '["gpt-4o"]',
                                                  "-3", '"user"', "42", '{"id":1}']
    assert res.quarantine["source_file"].eq(str(p)).all()


def test_anthropic_content_blocks_completions_requests_and_embeddings(tmp_path):
    """OpenLLMetry's Anthropic instrumentation writes a message's content blocks as JSON text
    (``tool_use`` in the history, ``tool_result`` in a user message) and the answer's calls as
    ``tool_calls.{j}``; a completions request's prompt is ``gen_ai.prompt.{i}.user``."""
    chat1 = span("b000000000000011", "anthropic.chat", 0, 400, {
        "llm.request.type": "chat", "gen_ai.request.model": "claude-sonnet-4-5",
        "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Read a",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Reading.",
        "gen_ai.completion.0.tool_calls.0.id": "toolu_1", "gen_ai.completion.0.tool_calls.0.name": "read_object",
        "gen_ai.completion.0.tool_calls.0.arguments": '{"key": "a"}'})
    chat2 = span("b000000000000012", "anthropic.chat", 1000, 1400, {
        "llm.request.type": "chat", "gen_ai.request.model": "claude-sonnet-4-5",
        "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Read a",
        "gen_ai.prompt.1.role": "assistant", "gen_ai.prompt.1.content": json.dumps([
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_1", "name": "read_object", "input": {"key": "a"}}]),
        "gen_ai.prompt.2.role": "user", "gen_ai.prompt.2.content": json.dumps([
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "a-rows"}]}]),
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "a has rows."})
    comp = span("b000000000000013", "openai.completion", 2000, 2100, {
        "llm.request.type": "completion", "gen_ai.request.model": "gpt-3.5-turbo-instruct",
        "gen_ai.prompt.0.user": "Say hi", "gen_ai.completion.0.content": "hi", "gen_ai.usage.prompt_tokens": 2})
    emb = span("b000000000000014", "openai.embeddings", 3000, 3050, {
        "llm.request.type": "embedding", "gen_ai.request.model": "text-embedding-3-small",
        "gen_ai.prompt.0.content": "a-rows"})
    res = load_otel(write_jsonl(tmp_path / "t.jsonl", [request(chat1, chat2, comp, emb)]))
    assert rows(res.frame, ["kind", "line_type", "tool", "call_id", "args_key", "result_text", "text",
                            "input_tokens"]) == [
        ["user_prompt", "traceloop:chat/user", None, None, None, None, "Read a", None],
        ["model_request", "traceloop:chat", None, None, None, None, "Reading.", None],
        ["tool_call", "traceloop:chat/tool_call", "read_object", "toolu_1", '{"key":"a"}', "a-rows", None, None],
        ["model_request", "traceloop:chat", None, None, None, None, "a has rows.", None],   # the result: no prompt
        ["user_prompt", "traceloop:completion/user", None, None, None, None, "Say hi", None],
        ["model_request", "traceloop:completion", None, None, None, None, "hi", 2],
        ["other", "traceloop:embedding", None, None, None, None, None, None],
    ]
    assert res.quarantine.empty


def test_sniff_knows_the_exports_of_every_shape(tmp_path):
    tl = write_jsonl(tmp_path / "tl.jsonl", traceloop_trace())
    oi = write_jsonl(tmp_path / "oi.jsonl", openinference_trace())
    assert sniff(tl.read_bytes()) == 0.97 and sniff(oi.read_bytes()) == 0.97
    plain = write_jsonl(tmp_path / "p.jsonl", [request(span("a000000000000009", "GET /", 0, 1,
                                                            {"http.method": "GET"}))])
    assert sniff(plain.read_bytes()) == 0.95


def test_any_value_in_any_attribute_of_these_shapes_loads(tmp_path):
    """Each attribute of both traces replaced by a value of each other type (one attribute per
    copy of the trace, all copies in one file): no load stops, every span keeps its row, and what
    could not be read is in the quarantine with its line, not lost."""
    odd = [{"x": 1}, [1, "a"], 7, -1, True, 1.5, "", "[{", '{"args": 1}', "null"]
    for name, trace in (("tl", traceloop_trace()), ("oi", openinference_trace())):
        n_spans = sum(len(req["resourceSpans"][0]["scopeSpans"][0]["spans"]) for req in trace)
        keys = sorted({a["key"] for req in trace for sp in req["resourceSpans"][0]["scopeSpans"][0]["spans"]
                       for a in sp["attributes"]})
        for i, v in enumerate(odd):
            copies = []
            for j, k in enumerate(keys):
                changed = json.loads(json.dumps(trace).replace(T, f"{j:032x}"))
                for req in changed:
                    for sp in req["resourceSpans"][0]["scopeSpans"][0]["spans"]:
                        for a in sp["attributes"]:
                            if a["key"] == k:
                                a["value"] = value(v)
                copies.extend(changed)
            res = load_otel(write_jsonl(tmp_path / f"{name}{i}.jsonl", copies))
            STEPS.validate(res.frame)
            assert res.frame["uuid"].notna().sum() == n_spans * len(keys), v     # one row per span
            assert res.quarantine["line_no"].notna().all(), v
            assert res.quarantine["error"].str.startswith("span ").all(), v
            if v == 7:   # a kind, a name, a role or a content that is a number: said, not dropped
                assert len(res.quarantine) >= 3, res.quarantine["error"].tolist()
