"""OpenTelemetry GenAI spans (OTLP JSON) → ``steps`` frame.

Fixtures under ``tests/fixtures/otel`` are ours, modelled on the OTLP/JSON encoding and the
GenAI + MCP semantic conventions:

* ``document/agent_trace.json`` — one pretty-printed export request, trace 4bf9…, 11 spans:
  invoke_agent analyst (conversation conv-77) > chat, execute_tool read_object (> its MCP
  ``tools/call`` client span with ``mcp.session.id``), execute_tool with ERROR status,
  execute_tool without arguments, execute_tool with non-JSON arguments, an HTTP span,
  invoke_agent researcher (> chat), and a second chat;
* ``jsonl/collector_traces.jsonl`` — Collector file exporter lines: spans (no conversation id),
  a metrics request, spans again (one duplicate), a span without ids, not JSON, a cut last line.

Span counts and line numbers were checked with ``jq``/``grep -n``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from replaybook.errors import InputError
from replaybook.frames import STEPS
from replaybook.sources.otel import load_otel, otlp_value, sniff

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "otel"
DOC = FIX / "document" / "agent_trace.json"
JSONL = FIX / "jsonl" / "collector_traces.jsonl"


@pytest.fixture(scope="module")
def doc():
    return load_otel(DOC)


def test_document_spans_to_rows(doc):
    f = doc.frame
    STEPS.validate(f)
    assert len(f) == 11 and f["transcript_id"].eq("conv-77").all()
    assert f["seq"].tolist() == list(range(11))
    assert f["client"].eq("otel").all() and f["client_version"].eq("1.4.2").all()
    # ordered by start time; span objects' lines in the document (grep -n '"spanId"' minus 2)
    assert f["line_no"].tolist() == [27, 73, 132, 179, 238, 283, 312, 347, 376, 405, 440]
    assert f["kind"].tolist() == ["other", "model_request", "tool_call", "other", "tool_call", "tool_call",
                                  "tool_call", "other", "other", "model_request", "model_request"]
    assert doc.quarantine.empty


def test_tool_call_span_fields(doc):
    f = doc.frame
    t = f[f["call_id"] == "call_1"]
    assert t["kind"].tolist() == ["tool_call", "other"]          # the nested tools/call span is folded in
    call = t.iloc[0]
    assert call["arguments"] == {"key": "2025/q3 summary.csv", "bucket": "reports"}
    assert call["args_key"] == '{"bucket":"reports","key":"2025/q3 summary.csv"}'
    assert str(call["ts"]) == "2025-10-01 12:00:03+00:00" and str(call["result_ts"]) == "2025-10-01 12:00:03.500000+00:00"
    assert call["result_text"] == "region,revenue\nEU,100\n" and call["is_error"] == False  # noqa: E712
    # mcp.session.id of the inner MCP client span kept on the call (and on the inner row)
    assert t["client_session_id"].eq("9f1c2a7e-0b7d-4c55-8a1e-3c2d1f0a9b88").all()
    assert call["server"] == "gw.local"                          # MCP span: server.address as last resort
    assert call["uuid"] == "e000000000000001" and call["parent_uuid"] == "a000000000000001"
    assert t.iloc[1]["line_type"] == "execute_tool (nested in span e000000000000001)"


def test_error_missing_and_unparsable_arguments(doc):
    f = doc.frame.set_index("call_id")
    e = f.loc["call_2"]
    assert e["is_error"] == True and e["result_text"] == "access denied by rule no-secrets"  # noqa: E712
    assert str(e["result_ts"] - e["ts"]) == "0 days 00:00:00.004000"
    n = f.loc["call_3"]                      # arguments attribute not recorded (opt-in)
    assert n["arguments"] is None and pd.isna(n["args_key"])
    u = f.loc["call_4"]                      # not JSON: args_key NA, raw text, note
    assert pd.isna(u["args_key"]) and u["text"] == "{bucket: reports"
    assert (u["server"], u["tool"], u["tool_raw"]) == ("door", "stat_object", "mcp__door__stat_object")
    assert doc.inputs[0]["notes"] == ["line 312: span e000000000000004 gen_ai.tool.call.arguments is not JSON; "
                                      "args_key left NA"]


def test_model_requests_and_agents(doc):
    f = doc.frame
    mr = f[f["kind"] == "model_request"]
    assert mr["model"].tolist() == ["gpt-4.1", "gpt-4.1-mini", "gpt-4.1"]
    assert mr["input_tokens"].tolist() == [1200, 300, 1300] and mr["output_tokens"].tolist() == [80, 40, 20]
    assert mr.iloc[0]["message_id"] == "resp_1" and mr.iloc[0]["text"] == "I will read the Q3 summary."
    # invoke_agent spans with model spans below are "other" (their 9999 tokens are not counted)
    ia = f[f["line_type"] == "invoke_agent"]
    assert ia["kind"].tolist() == ["other", "other"]
    # the researcher is invoked by the analyst: a sub-agent
    assert ia["agent_id"].tolist()[1] == "agent-researcher" and pd.isna(ia["agent_id"].tolist()[0])
    assert mr["agent_id"].tolist()[1] == "agent-researcher"


def test_jsonl_lines_duplicates_and_quarantine():
    res = load_otel(JSONL)
    f = res.frame
    info = res.inputs[0]
    assert info["layout"] == "jsonl" and info["other_signals"] == 1 and info["duplicates"] == 1
    assert len(f) == 3 and f["transcript_id"].eq("0af7651916cd43dd8448eb211c80319c").all()
    assert f["kind"].tolist() == ["model_request", "tool_call", "tool_call"]
    assert f["line_no"].tolist() == [1, 1, 3]
    s = f.iloc[1]
    assert s["args_key"] == '{"limit":5,"q":"q3 revenue"}' and s["call_id"] == "toolu_01"
    assert pd.isna(s["server"])                             # not an MCP span, no name prefix
    m = f.iloc[2]
    assert (m["tool"], m["server"], m["client_session_id"]) == ("read_object", "door.local", "sess-2")
    assert m["line_type"] == "tools/call"
    q = res.quarantine
    assert q["line_no"].tolist() == [4, 5, 6] and q["kind"].tolist() == ["invalid", "invalid", "pending"]
    assert q.iloc[0]["error"] == "span without a usable traceId or spanId"


@pytest.mark.parametrize("start", ['"1180591620717411303424"', '"\u00b2"', "-5", '"12a"', '"0"', "0"])
def test_a_start_time_no_timestamp_holds_sets_the_span_aside(tmp_path, start):
    """Past 2262 (a 22-digit string), a superscript digit (str.isdigit accepts it), negative:
    the load had stopped with OutOfBoundsDatetime or ValueError."""
    span = ('{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"chat m",'
            f'"startTimeUnixNano":{start},"endTimeUnixNano":"1759320003000000000"}}')
    p = tmp_path / "t.jsonl"
    p.write_text('{"resourceSpans":[{"scopeSpans":[{"spans":[' + span + "]}]}]}\n")
    res = load_otel(p)
    assert len(res.frame) == 0
    assert res.quarantine[["line_no", "error"]].values.tolist() == [
        [1, "span without a usable startTimeUnixNano (nanoseconds since 1970, before 2262)"]]


def test_an_end_time_of_zero_is_a_span_not_ended(tmp_path):
    """0 is protobuf's default, a time not set: the call had read as finished on 1970-01-01, without error."""
    span = ('{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"execute_tool put",'
            '"startTimeUnixNano":"1759320000000000000","endTimeUnixNano":"0","attributes":['
            '{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},'
            '{"key":"gen_ai.tool.name","value":{"stringValue":"mcp__door__put"}}],"status":{"code":1}}')
    p = tmp_path / "t.jsonl"
    p.write_text('{"resourceSpans":[{"scopeSpans":[{"spans":[' + span + "]}]}]}\n")
    res = load_otel(p)
    row = res.frame.iloc[0]
    assert (row["kind"], row["tool"], str(row["ts"])) == ("tool_call", "put", "2025-10-01 12:00:00+00:00")
    assert pd.isna(row["result_ts"]) and pd.isna(row["is_error"])
    assert res.quarantine.empty


def test_span_times_in_a_smaller_unit_than_nanoseconds_are_read_as_written_and_said(tmp_path):
    """An exporter that writes milliseconds (or seconds, microseconds) where OTLP has nanoseconds
    dates its spans in January 1970; the load had said nothing of it."""
    def span(sid, start):
        return ('{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"' + sid + '","name":"chat m",'
                f'"startTimeUnixNano":"{start}","endTimeUnixNano":"{start + 1000}"}}')
    p = tmp_path / "t.jsonl"
    p.write_text('{"resourceSpans":[{"scopeSpans":[{"spans":[' + span("b7ad6b7169203331", 1759320000000) + "]}]}]}\n"
                 '{"resourceSpans":[{"scopeSpans":[{"spans":[' + span("c7ad6b7169203331", 1759320000000000000)
                 + "]}]}]}\n")
    res = load_otel(p)
    assert [str(t) for t in res.frame["ts"]] == ["1970-01-01 00:29:19.320000+00:00", "2025-10-01 12:00:00+00:00"]
    assert res.inputs[0]["notes"] == [
        "1 span with a startTimeUnixNano before 1970-01-12, read as nanoseconds as OTLP defines it: times written "
        "in seconds, milliseconds or microseconds read as January 1970 — check the exporter: line 1 "
        "('1759320000000')"]
    assert res.quarantine.empty


def test_spans_that_are_not_a_list_are_named(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"resourceSpans":[{"scopeSpans":[{"spans":5}]}]}\n{"resourceSpans":7}\n')
    q = load_otel(p).quarantine
    assert q[["line_no", "error"]].values.tolist() == [
        [1, "spans is not a list (int): no span of it can be read"],
        [2, "resourceSpans is not a list (int): no span of it can be read"]]


def test_whole_folder_and_gzip(tmp_path):
    gz = tmp_path / "t.jsonl.gz"
    gz.write_bytes(gzip.compress(JSONL.read_bytes()))
    res = load_otel([FIX, gz])
    assert len(res.inputs) == 3
    # the gz copy repeats the JSONL spans: all duplicates
    assert res.inputs[2]["duplicates"] == 4 and len(res.frame) == 14


def test_snake_case_base64_ids_and_array_document(tmp_path):
    p = tmp_path / "export.json"
    req = {"resource_spans": [{"scope_spans": [{"spans": [{
        "trace_id": "S/kvNXezTaajzpKdDg5HNg==", "span_id": "AAAAAAAAAAE=", "name": "execute_tool x",
        "start_time_unix_nano": 1759320000000000000, "end_time_unix_nano": 1759320001000000000,
        "attributes": [{"key": "gen_ai.operation.name", "value": {"string_value": "execute_tool"}},
                       {"key": "gen_ai.tool.call.arguments",
                        "value": {"kvlist_value": {"values": [{"key": "n", "value": {"int_value": "2"}}]}}}],
        "status": {"code": "STATUS_CODE_ERROR"}}]}]}]}
    p.write_text(json.dumps([req]))
    f = load_otel(p).frame
    row = f.iloc[0]
    assert row["transcript_id"] == "4bf92f3577b34da6a3ce929d0e0e4736" and row["uuid"] == "0000000000000001"
    assert row["tool"] == "x" and row["args_key"] == '{"n":2}' and row["is_error"] == True  # noqa: E712


def test_otlp_value():
    assert otlp_value({"intValue": "42"}) == 42
    assert otlp_value({"arrayValue": {"values": [{"stringValue": "a"}, {"boolValue": True}]}}) == ["a", True]
    assert otlp_value({"kvlistValue": {"values": [{"key": "k", "value": {"doubleValue": 1.5}}]}}) == {"k": 1.5}
    assert otlp_value({}) is None
    # a value of the wrong shape anywhere inside is None as a whole (it had raised TypeError)
    assert otlp_value({"arrayValue": {"values": 5}}) is None
    assert otlp_value({"arrayValue": {"values": [{"intValue": "1"}, {"kvlistValue": {"values": True}}]}}) is None
    assert otlp_value({"intValue": 1.5}) is None and otlp_value({"boolValue": 1}) is None
    assert otlp_value({"foo": 1}) is None          # no AnyValue field: malformed, None as a whole


def test_a_collector_file_of_every_signal_whose_spans_come_late_is_still_read_as_otel(tmp_path):
    """The Collector's file exporter shared by a logs, a metrics and a traces pipeline writes all
    three to one file: when its first 256 KB held only logs, no source had recognised it and its
    spans (the agent's tool calls) were never read."""
    from replaybook.sources.registry import SNIFF_BYTES, sniff_file

    log = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [
        {"timeUnixNano": "1759320000000000000", "body": {"stringValue": "x" * 2000}}]}]}]})
    p = tmp_path / "otel.jsonl"
    p.write_text((log + "\n") * (SNIFF_BYTES // len(log) + 5) + JSONL.read_text().splitlines()[0] + "\n")
    src, score = sniff_file(p)
    assert src is not None and src.name == "otel" and score == 0.6
    res = load_otel(p)
    assert res.frame[["kind", "tool", "call_id"]].astype(object).where(res.frame.notna(), None).values.tolist() == [
        ["model_request", None, None], ["tool_call", "search_docs", "toolu_01"]]
    assert res.inputs[0]["other_signals"] == SNIFF_BYTES // len(log) + 5
    assert sniff(b'{"resourceMetrics": []}\n{"resourceLogs": []}\n') == 0.6
    assert sniff(b'{"resourceLogs": []}\n{"Records": []}\n{"a": 1}\n') == 0.0   # not all export requests


def test_sniff_and_errors(tmp_path):
    assert sniff(DOC.read_bytes()) >= 0.95 and sniff(JSONL.read_bytes()) >= 0.95
    assert sniff(DOC.read_bytes()[:2000]) >= 0.9            # a cut document still shows its keys
    assert sniff(b'{"trace_id": "x", "span_id": "y"}\n') == 0.0
    with pytest.raises(InputError, match="no such file"):
        load_otel(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "resourceSpans": [\n    {"scopeSpans": \n')
    res = load_otel(bad)
    assert res.frame.empty and res.quarantine.iloc[0]["line_no"] == 4
    assert res.quarantine.iloc[0]["error"].startswith("OTLP JSON document is not valid JSON")


def test_a_surrogate_escape_inside_the_arguments_text_is_replaced(tmp_path):
    """``gen_ai.tool.call.arguments`` is JSON text; a ``\\udc80`` escape in it parsed to a lone
    surrogate in the ``arguments`` cell, and writing the frame (``replaybook load steps --format
    jsonl``) stopped with an internal error."""
    span = ('{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"execute_tool x",'
            '"startTimeUnixNano":"1759320000000000000","endTimeUnixNano":"1759320001000000000","attributes":['
            '{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},'
            '{"key":"gen_ai.tool.call.arguments","value":{"stringValue":"{\\"p\\":\\"a\\\\udc80b\\"}"}}]}')
    p = tmp_path / "t.jsonl"
    p.write_text('{"resourceSpans":[{"scopeSpans":[{"spans":[' + span + "]}]}]}\n")
    row = load_otel(p).frame.iloc[0]
    assert row["arguments"] == {"p": "a\ufffdb"} and row["args_key"] == '{"p":"a\ufffdb"}'


@pytest.mark.parametrize("attr, value, what", [
    ("gen_ai.conversation.id", '{"intValue":"7"}', "is not text (7): not read"),
    ("gen_ai.tool.name", '{"intValue":"42"}', "is not text (42): not read"),
    ("gen_ai.usage.input_tokens", '{"stringValue":"many"}', 'is not a whole number ("many"): not read')])
def test_a_gen_ai_attribute_of_the_wrong_type_is_named(tmp_path, attr, value, what):
    # a conversation id that is a number moved the span to its trace's transcript, a token count
    # "many" became NaN: left out without a word
    span = ('{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"chat m",'
            '"startTimeUnixNano":"1759320000000000000","endTimeUnixNano":"1759320003000000000",'
            '"attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},'
            f'{{"key":"{attr}","value":{value}}}]}}')
    p = tmp_path / "t.jsonl"
    p.write_text('{"resourceSpans":[{"scopeSpans":[{"spans":[' + span + "]}]}]}\n")
    res = load_otel(p)
    assert len(res.frame) >= 1  # the span keeps its row
    assert res.quarantine[["line_no", "error"]].values.tolist() == [[1, f"span b7ad6b7169203331: {attr} {what}"]]
