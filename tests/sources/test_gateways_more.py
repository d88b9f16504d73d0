"""``replaybook.sources.gateways_more``: agentgateway, context-forge, Invariant, MXCP, MCP HTTP.

Fixtures under ``tests/fixtures/gateways/<source>/`` are ours, modelled on each project's shapes
(not copies of ``../shared/real``).  Counts checked by hand:

  agentgateway/access.log    grep -c 'mcp.method.name=tools/call' → 3 (lines 2, 3, 4); line 3
                             http.status=403 → deny; line 4 no session/jwt → synthetic; 2 not calls
  context_forge/export.json  2 tool.invoke spans (s2 status error), 1 prompt span, 2 metrics,
                             1 log entry → 2 calls + 1 plugin violation (deny); 4 not calls
  invariant/traces.jsonl     3 tool_calls (2 in trace inv-a1, 1 in inv-b2); block annotation on
                             messages.3 = call_b's result → deny; c1 error "folder not found"
  mxcp/audit.jsonl           types tool, resource, tool, tool, prompt → 3 calls; line 3 deny with
                             [REDACTED] → args_key NA
  mcp_http/exchange.jsonl    tools/call ids 2, x-3, x-4 (a batch), 5 → 4 calls; x-3 error "Forbidden
                             by policy" → deny; 5 unanswered → unfinished 1
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from replaybook.errors import InputError
from replaybook.frames import CALLS
from replaybook.loading import load
from replaybook.sources import gateways_more as gm
from replaybook.sources import registry

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "gateways"


def _cols(frame, *cols):
    sub = frame[list(cols)].astype(object)
    return sub.where(sub.notna(), None).values.tolist()


def test_agentgateway():
    res = gm.load_agentgateway(FIX / "agentgateway" / "access.log")
    f = res.frame
    CALLS.validate(f)
    assert _cols(f, "line_no", "door_session", "agent", "server", "tool", "decision", "duration_ms") == [
        [4, "agentgateway:unknown-agent:2026-09-13", None, "files", "list_objects", "allow", 20.0],
        [2, "s-etl-1", "svc-etl", "warehouse", "query", "allow", 1500.0],
        [3, "s-etl-1", "svc-etl", "files", "read_object", "deny", 1.0]]
    assert f.iloc[0]["error"] == "upstream closed the stream (-32603)" and f.iloc[2]["rule"] == "HTTP 403"
    assert f.iloc[1]["correlation"] == "aa11" and f["args_key"].isna().all() and f["arguments"].isna().all()
    assert str(f.iloc[1]["ts_end"]) == "2026-09-13 10:00:03+00:00"
    assert res.inputs[0]["not_calls"] == 2 and res.quarantine.empty


def test_agentgateway_json_lines_and_bad_lines(tmp_path):
    p = tmp_path / "ag.log"
    p.write_text('{"timestamp":"2026-09-13T10:00:00Z","level":"info","fields":{"mcp.method.name":"tools/call",'
                 '"gen_ai.tool.name":"query","mcp.session.id":"s1","http.status":401,"duration":"2ms"}}\n'
                 "not a log line\n"
                 "2026-09-13T10:00:01Z\tinfo\trequest mcp.method.name=tools/call mcp.error.message=\"cut sho")
    res = gm.load_agentgateway(p)
    assert _cols(res.frame, "door_session", "tool", "decision", "duration_ms") == [["s1", "query", "deny", 2.0]]
    assert res.quarantine["kind"].tolist() == ["invalid", "pending"]


def test_agentgateway_2025_keys(tmp_path):
    """Releases of 2025 log the method as ``mcp.method`` and the tool as ``mcp.resource.name`` (with
    ``mcp.resource=tool``); a JSON line's session id is only in its logged ``mcp-session-id`` header."""
    p = tmp_path / "agw.log"
    json_line = {"level": "info", "time": "2026-09-13T10:00:00.250000Z", "scope": "request", "gateway": "ns/gw",
                 "listener": "http", "route": "ns/mcp", "http.method": "POST", "http.path": "/mcp",
                 "http.status": 200, "trace.id": "ab12", "mcp.method": "tools/call", "mcp.target": "files",
                 "mcp.resource": "tool", "mcp.resource.name": "read_object", "duration": "41ms",
                 "rq.headers.all": {"content-type": "application/json", "Mcp-Session-Id": "s-2025"}}
    p.write_text(json.dumps(json_line) + "\n"
                 + json.dumps({**json_line, "mcp.method": "resources/read", "mcp.resource": "resource",
                               "mcp.resource.name": "file:///a"}) + "\n"
                 + "2026-09-13T10:00:02Z\tinfo\trequest gateway=ns/gw listener=l route=ns/mcp jwt.sub=agent-7 "
                   "protocol=mcp mcp.method=tools/call mcp.resource.name=echo http.path=/mcp http.status=403 "
                   "duration=3ms\n")
    assert gm.sniff_agentgateway(p.read_bytes()) > 0.5
    res = gm.load_agentgateway(p)
    assert _cols(res.frame, "line_no", "door_session", "agent", "server", "tool", "decision", "duration_ms") == [
        [3, "agentgateway:agent-7:2026-09-13", "agent-7", None, "echo", "deny", 3.0],
        [1, "s-2025", None, "files", "read_object", "allow", 41.0]]
    assert res.inputs[0]["not_calls"] == 1 and res.quarantine.empty
    assert load([p]).files["source"].tolist() == ["agentgateway"]


def test_context_forge():
    res = gm.load_context_forge(FIX / "context_forge" / "export.json")
    f = res.frame
    CALLS.validate(f)
    assert _cols(f, "door_session", "agent", "tool", "decision", "duration_ms", "error") == [
        ["context-forge:etl@acme.test:2026-09-13", "etl@acme.test", "query", "allow", 400.0, None],
        ["context-forge:etl@acme.test:2026-09-13", "etl@acme.test", "read_object", "deny", None, None],
        ["context-forge:unknown-agent:2026-09-13", None, "read_object", "allow", 50.0, "timeout"]]
    assert f.iloc[1]["rule"] == "UnifiedPDPPlugin: PDP_DENY — Policy decision: DENY — path .env denied"
    assert f["args_key"].isna().all() and res.inputs[0]["call_table"] == "span"
    assert res.inputs[0]["not_calls"] == 4 and res.quarantine.empty


def test_context_forge_metrics_only_jsonl(tmp_path):
    """Without spans, each tool_metrics row is a call; ts = completion − response_time."""
    p = tmp_path / "metrics.jsonl"
    p.write_text('{"id":1,"tool_id":"t-9","timestamp":"2026-09-13T10:00:01+00:00","response_time":0.5,'
                 '"is_success":false,"error_message":"boom"}\n')
    f = gm.load_context_forge(p).frame
    assert _cols(f, "tool", "error", "duration_ms") == [["t-9", "boom", 500.0]]
    assert str(f.iloc[0]["ts"]) == "2026-09-13 10:00:00.500000+00:00"


def test_invariant():
    res = gm.load_invariant(FIX / "invariant" / "traces.jsonl")
    f = res.frame
    CALLS.validate(f)
    assert _cols(f, "door_session", "agent", "server", "tool", "object", "decision", "rule", "error",
                 "correlation") == [
        ["inv-a1", "claude-code", "warehouse", "query", None, "allow", None, None, "call_a"],
        ["inv-a1", "claude-code", "warehouse", "read_object", "demo/.env", "deny", "no-secrets — secret in output",
         None, "call_b"],
        ["inv-b2", "codex", "files", "list_folder", "reports/", "allow", None, "folder not found", "c1"]]
    assert f["args_key"].tolist() == ['{"sql":"select count(*) from cars"}', '{"path":"demo/.env"}',
                                      '{"path":"reports/"}']          # string arguments parsed too
    assert f["duration_ms"].tolist() == [300.0, 500.0, 200.0] and f["seq"].tolist() == [1, 2, 1]


def test_mxcp():
    res = gm.load_mxcp(FIX / "mxcp" / "audit.jsonl")
    f = res.frame
    CALLS.validate(f)
    assert _cols(f, "line_no", "tool", "decision", "rule", "error", "args_key", "object") == [
        [1, "query", "allow", None, None, '{"sql":"select 1"}', None],
        [3, "read_object", "deny", "dotenv files are blocked", "Policy enforcement failed", None, "demo/.env"],
        [4, "query", "allow", None, "Catalog Error: Table nope does not exist", '{"sql":"select * from nope"}', None]]
    assert f.iloc[1]["arguments"] == {"path": "demo/.env", "token": "[REDACTED]"}
    assert f["door_session"].unique().tolist() == ["mxcp:unknown-agent:2026-09-13"]
    assert res.inputs[0]["not_calls"] == 2


def test_mcp_http():
    res = gm.load_mcp_http(FIX / "mcp_http" / "exchange.jsonl")
    f = res.frame
    CALLS.validate(f)
    assert _cols(f, "line_no", "door_session", "agent", "server", "tool", "decision", "meta_call_id",
                 "correlation") == [
        [3, "sess-42", "claude-code", "warehouse", "read_object", "allow", "toolu_01abc", "2"],
        [5, "sess-42", "claude-code", "warehouse", "read_object", "deny", None, "x-3"],
        [5, "sess-42", "claude-code", "warehouse", "query", "allow", None, "x-4"],
        [7, "sess-42", "claude-code", "warehouse", "query", "allow", None, "5"]]
    assert f["duration_ms"].tolist()[:3] == [300.0, 10.0, 10.0] and pd.isna(f.iloc[3]["ts_end"])
    assert f.iloc[1]["rule"] == f.iloc[1]["error"] == "Forbidden by policy no-dotenv (-32001)"
    assert f.iloc[0]["object"] == "demo/cars.csv" and f["args_key"].notna().all()
    assert res.inputs[0]["unfinished"] == 1 and res.inputs[0]["not_calls"] == 2


def test_mcp_http_bare_jsonrpc_lines(tmp_path):
    """JSON-RPC messages alone (no envelope): no session id → synthetic session, ts NaT; an error
    that does not say refused stays allow."""
    p = tmp_path / "rpc.jsonl"
    p.write_text('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"query","arguments":{"sql":"x"}}}\n'
                 '{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"internal error"}}\n')
    assert registry.sniff_file(p)[0].name == "mcp-http"
    f = gm.load_mcp_http(p).frame
    assert _cols(f, "door_session", "decision", "error") == [["mcp-http:unknown-agent:rpc.jsonl", "allow",
                                                              "internal error (-32603)"]]


@pytest.mark.parametrize("load", [gm.load_agentgateway, gm.load_context_forge, gm.load_invariant, gm.load_mxcp,
                                  gm.load_mcp_http])
def test_gzip_empty_and_missing(tmp_path, load):
    src = {gm.load_agentgateway: "agentgateway/access.log", gm.load_context_forge: "context_forge/export.json",
           gm.load_invariant: "invariant/traces.jsonl", gm.load_mxcp: "mxcp/audit.jsonl",
           gm.load_mcp_http: "mcp_http/exchange.jsonl"}[load]
    plain = FIX / src
    gz = tmp_path / (plain.name + ".gz")
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    a, b = load(plain).frame, load(gz).frame
    assert len(a) == len(b) > 0 and a["tool"].tolist() == b["tool"].tolist()
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    r = load(empty)
    CALLS.validate(r.frame)
    assert r.frame.empty
    with pytest.raises(InputError):
        load(tmp_path / "missing.jsonl")


def test_path_object():
    assert gm.path_object({"bucket": "b", "key": "k/x.csv"}) == "b/k/x.csv"
    assert gm.path_object({"file_path": "/etc/hosts", "x": 1}) == "/etc/hosts"
    assert gm.path_object({"sql": "select 1"}) is None and gm.path_object(None) is None


def _mcp_lines(*records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def _call(sess, rid, bucket, key):
    return {"dir": "c2s", "http": {"headers": {"Mcp-Session-Id": sess} if sess else {}},
            "body": {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                     "params": {"name": "read_object", "arguments": {"bucket": bucket, "key": key}}}}


def _answer(rid, text, is_error, sess=None):
    return {"dir": "s2c", "http": {"status": 200, "headers": {"Mcp-Session-Id": sess} if sess else {}},
            "body": {"jsonrpc": "2.0", "id": rid,
                     "result": {"content": [{"type": "text", "text": text}], "isError": is_error}}}


def test_mcp_http_a_response_without_a_session_id_open_in_two_sessions_answers_the_last_sent_and_says_so(tmp_path):
    # two clients, each numbering from 1, both with call 1 open; a response without Mcp-Session-Id
    # had been pinned to the session of the record before it, silently.  It answers the call sent
    # last, and the file's notes say which other call it may answer
    p = tmp_path / "mcp.jsonl"
    p.write_text(_mcp_lines(_call("sess-A", 1, "secrets", "keys.txt"), _call("sess-B", 1, "reports", "q3.csv"),
                            _answer(1, "AccessDenied: not allowed", True), _answer(1, "ok", False)))
    res = gm.load_mcp_http(p)
    assert _cols(res.frame, "door_session", "object", "decision", "error") == [
        ["sess-A", "secrets/keys.txt", "allow", None],
        ["sess-B", "reports/q3.csv", "deny", "AccessDenied: not allowed"]]
    info = res.inputs[0]
    assert info["unfinished"] == 0
    assert [n for n in info["notes"] if "Mcp-Session-Id" in n] == [
        "response(s) on line 3 carry no Mcp-Session-Id and answer JSON-RPC id 1, which open calls of several "
        "sessions share: paired with the one sent last, session 'sess-B' (line 2); it may answer session "
        "'sess-A' (line 1) instead (the capture does not say which)"]


def test_mcp_http_a_call_left_open_by_a_client_that_went_away_does_not_take_a_later_refusal(tmp_path):
    # sess-A's call 1 was never answered (its client was killed); sess-B's call 1, sent later, is
    # refused: the refusal is sess-B's, not lost to a tie with the stale call
    p = tmp_path / "mcp.jsonl"
    p.write_text(_mcp_lines(_call("sess-A", 1, "secrets", "keys.txt"), _call("sess-B", 1, "reports", "q3.csv"),
                            _answer(1, "Access denied: not allowed", True), _call("sess-B", 2, "reports", "q4.csv"),
                            _answer(2, "ok", False)))
    res = gm.load_mcp_http(p)
    assert _cols(res.frame, "door_session", "object", "decision", "error") == [
        ["sess-A", "secrets/keys.txt", "allow", None],
        ["sess-B", "reports/q3.csv", "deny", "Access denied: not allowed"],
        ["sess-B", "reports/q4.csv", "allow", None]]
    assert res.inputs[0]["unfinished"] == 1
    assert [n for n in res.inputs[0]["notes"] if "Mcp-Session-Id" in n][0].endswith(
        "it may answer session 'sess-A' (line 1) instead (the capture does not say which)")


def test_mcp_http_a_response_without_a_session_id_answers_the_only_call_open_with_its_id(tmp_path):
    # sess-A's call 1 is open alone (sess-B's call 1 already answered in its session): the
    # header-less response is sess-A's, though sess-B's record came last
    p = tmp_path / "mcp.jsonl"
    p.write_text(_mcp_lines(_call("sess-A", 1, "secrets", "keys.txt"), _call("sess-B", 1, "reports", "q3.csv"),
                            _answer(1, "ok", False, sess="sess-B"), _call("sess-B", 2, "reports", "q4.csv"),
                            _answer(1, "AccessDenied: not allowed", True)))
    res = gm.load_mcp_http(p)
    assert _cols(res.frame, "door_session", "object", "decision", "error") == [
        ["sess-A", "secrets/keys.txt", "deny", "AccessDenied: not allowed"],
        ["sess-B", "reports/q3.csv", "allow", None], ["sess-B", "reports/q4.csv", "allow", None]]
    assert res.inputs[0]["unfinished"] == 1
    assert not any("Mcp-Session-Id" in n for n in res.inputs[0]["notes"])


def test_a_byte_order_mark_does_not_lose_the_first_line_of_an_access_log(tmp_path):
    # a UTF-8 BOM before the first line (a Windows editor's save): that line is still a call
    lines = (FIX / "agentgateway" / "access.log").read_bytes().splitlines(keepends=True)[1:]  # (a call first)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "access.log").write_bytes(b"".join(lines))
    (tmp_path / "b" / "access.log").write_bytes(b"\xef\xbb\xbf" + b"".join(lines))
    plain, res = gm.load_agentgateway(tmp_path / "a"), gm.load_agentgateway(tmp_path / "b")
    assert _cols(res.frame, "tool", "server", "line_no") == [
        ["list_objects", "files", 3], ["query", "warehouse", 1], ["read_object", "files", 2]]
    cols = [c for c in plain.frame.columns if c != "source_file"]
    assert res.frame[cols].astype(str).equals(plain.frame[cols].astype(str))
    assert res.quarantine.empty and res.inputs[0]["not_calls"] == plain.inputs[0]["not_calls"] == 1


def test_an_unterminated_last_text_line_is_pending_not_a_call(tmp_path):
    # the last line is still being written: its k=v pairs, cut anywhere, still read
    # (mcp.target=fi) — so it is set aside as pending, never a call to a server 'fi'
    call = ("2025-10-01T12:00:0{s}Z\tinfo\trequest gateway=default/gw listener=mcp route=default/mcp "
            "http.status=200 jwt.sub=agent-42 protocol=mcp mcp.method.name=tools/call mcp.target=files "
            "gen_ai.tool.name=read_object mcp.session.id=s1 duration=412ms")
    whole = call.format(s="3.114512") + "\n"
    p = tmp_path / "access.log"
    cut = call.format(s="5.020001")
    cut = cut[:cut.index("mcp.target=") + len("mcp.target=fi")]
    p.write_text(whole + cut)
    res = gm.load_agentgateway(p)
    assert _cols(res.frame, "line_no", "server", "tool", "duration_ms") == [[1, "files", "read_object", 412.0]]
    assert res.quarantine[["line_no", "byte_offset", "kind", "error"]].values.tolist() == [
        [2, len(whole), "pending", "unterminated last line (still being written?)"]]
    assert res.inputs[0]["not_calls"] == 0
    # an unterminated last line cut before its MCP fields: pending too, not a line of another kind
    p.write_text(whole + call.format(s="5.020001")[:60])
    res = gm.load_agentgateway(p)
    assert len(res.frame) == 1 and res.quarantine["kind"].tolist() == ["pending"] and res.inputs[0]["not_calls"] == 0
    # a JSON line that parses is whole, newline or not: a call
    p.write_text(whole + json.dumps({"level": "info", "time": "2025-10-01T12:00:05Z", "mcp.method.name": "tools/call",
                                     "mcp.target": "files", "gen_ai.tool.name": "stat", "duration": "3ms"}))
    res = gm.load_agentgateway(p)
    assert _cols(res.frame, "line_no", "tool") == [[2, "stat"], [1, "read_object"]] and res.quarantine.empty


def _initialize(rid, client):
    return {"dir": "c2s", "http": {"headers": {}},
            "body": {"jsonrpc": "2.0", "id": rid, "method": "initialize",
                     "params": {"protocolVersion": "2025-06-18", "clientInfo": {"name": client}}}}


def _initialized(rid, sess, server):
    return {"dir": "s2c", "http": {"status": 200, "headers": {"Mcp-Session-Id": sess}},
            "body": {"jsonrpc": "2.0", "id": rid, "result": {"serverInfo": {"name": server}}}}


def test_mcp_http_a_second_clients_initialize_opens_its_own_session_not_the_one_before(tmp_path):
    # the initialize request carries no Mcp-Session-Id (the server names the session in its
    # answer); it had been read as in the session before it, so the first session's calls took
    # the second client's name and the second session the first's
    p = tmp_path / "mcp.jsonl"
    p.write_text(_mcp_lines(_initialize(0, "agent-one"), _initialized(0, "S1", "srv-one"),
                            _call("S1", 1, "b", "a.csv"), _answer(1, "ok", False, sess="S1"),
                            _initialize(0, "agent-two"), _initialized(0, "S2", "srv-two"),
                            _call("S2", 1, "b", "b.csv"), _answer(1, "ok", False, sess="S2")))
    res = gm.load_mcp_http(p)
    assert _cols(res.frame, "door_session", "agent", "server", "object") == [
        ["S1", "agent-one", "srv-one", "b/a.csv"], ["S2", "agent-two", "srv-two", "b/b.csv"]]
    assert res.inputs[0]["not_calls"] == 4 and res.inputs[0]["unfinished"] == 0


def test_mcp_http_a_session_whose_initialize_is_not_captured_is_named_only_when_the_capture_has_one_client(tmp_path):
    one = tmp_path / "one.jsonl"
    one.write_text(_mcp_lines(_initialize(0, "agent-one"), _initialized(0, "S1", "srv-one"),
                              _call("S9", 1, "b", "c.csv")))
    assert _cols(gm.load_mcp_http(one).frame, "door_session", "agent", "server") == [["S9", "agent-one", "srv-one"]]
    two = tmp_path / "two.jsonl"
    two.write_text(_mcp_lines(_initialize(0, "agent-one"), _initialized(0, "S1", "srv-one"),
                              _initialize(0, "agent-two"), _initialized(0, "S2", "srv-one"),
                              _call("S9", 1, "b", "c.csv")))
    assert _cols(gm.load_mcp_http(two).frame, "door_session", "agent", "server") == [["S9", None, "srv-one"]]


def test_mcp_http_two_initialize_requests_open_at_once_pair_the_last_sent_and_say_so(tmp_path):
    p = tmp_path / "mcp.jsonl"
    p.write_text(_mcp_lines(_initialize(0, "agent-one"), _initialize(0, "agent-two"),
                            _initialized(0, "S2", "srv"), _initialized(0, "S1", "srv"),
                            _call("S1", 1, "b", "a.csv"), _call("S2", 1, "b", "b.csv")))
    res = gm.load_mcp_http(p)
    assert _cols(res.frame, "door_session", "agent") == [["S1", "agent-one"], ["S2", "agent-two"]]
    assert "the initialize response on line 3 is paired with the request sent last, line 2; it may answer " \
           "line 1 instead (same JSON-RPC id, no Mcp-Session-Id on the requests)" in res.inputs[0]["notes"]


def test_mcp_http_a_capture_of_requests_alone_names_its_one_client(tmp_path):
    # a capture that holds the client's requests but not the server's answers (the initialize
    # answer names the session): its one client, named by its initialize request, had been lost
    # (agent NA, the synthetic session "unknown-agent") since a client was read off the answer alone
    p = tmp_path / "mcp.jsonl"
    p.write_text(_mcp_lines(_initialize(0, "claude-code"), _call("S1", 1, "b", "a.csv")))
    assert _cols(gm.load_mcp_http(p).frame, "door_session", "agent") == [["S1", "claude-code"]]
    p.write_text(_mcp_lines(_initialize(0, "claude-code"), _call(None, 1, "b", "a.csv")))
    assert _cols(gm.load_mcp_http(p).frame, "door_session", "agent") == [["mcp-http:claude-code:mcp.jsonl",
                                                                         "claude-code"]]
    # two clients named, neither session's initialize answered: neither name is guessed
    p.write_text(_mcp_lines(_initialize(0, "agent-one"), _call("S1", 1, "b", "a.csv"),
                            _initialize(0, "agent-two"), _call("S2", 1, "b", "b.csv")))
    assert _cols(gm.load_mcp_http(p).frame, "door_session", "agent") == [["S1", None], ["S2", None]]
