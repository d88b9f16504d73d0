"""Third-party MCP gateway logs → ``calls`` frame, and sniffing across every fixture.

Fixtures under ``tests/fixtures/gateways`` are ours, modelled on each gateway's source (see the
module doc of ``replaybook.sources.gateways``) — not copies of ``../shared/real``.  Per-file call
counts and line numbers below were checked by hand (``grep -n``, ``jq``).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from replaybook.errors import InputError
from replaybook.frames import CALLS
from replaybook.sources import gateways as gw
from replaybook.sources import registry

FIXROOT = Path(__file__).resolve().parents[1] / "fixtures"
FIX = FIXROOT / "gateways"


def _cols(frame, *cols):
    """Rows of ``cols`` as plain lists, NA as None."""
    sub = frame[list(cols)].astype(object)
    return sub.where(sub.notna(), None).values.tolist()


def test_docker_stderr_and_audit_merge():
    res = gw.load_docker_gateway(FIX / "docker")
    f = res.frame
    CALLS.validate(f)
    # stderr: 4 call lines (3, 5, 6, 8); audit: 3 tool invocations (lines 1, 2, 6)
    # the stderr read_object at 12:00:03.1 folds into the allowed audit event at 12:00:03 (sess-d1)
    assert len(f) == 6
    sess = f[f["door_session"] == "sess-d1"]
    assert _cols(sess, "seq", "decision", "tool", "line_no") == [
        [1, "allow", "read_object", 1], [2, "deny", "read_object", 2]]
    a = sess.iloc[0]
    assert a["agent"] == "claude-code" and a["server"] == "files" and a["rule"] == "allow-reports"
    assert a["args_key"] == '{"bucket":"reports","key":"2025/q3 summary.csv"}'     # from the stderr line
    assert a["duration_ms"] == pytest.approx(412.337)
    assert str(a["ts"]) == "2025-10-01 12:00:03+00:00"                             # 14:00:03+02:00 in UTC
    assert sess.iloc[1]["rule"] == "no-secrets — bucket 'secrets' is not allowed"
    info = {i["layout"]: i for i in res.inputs}
    assert info["stderr"]["merged_into_audit"] == 1 and info["stderr"]["not_calls"] == 2
    assert info["stderr"]["unfinished"] == 1
    assert info["audit"]["not_calls"] == 2                                         # a list trigger, a server target
    q = res.quarantine
    assert sorted(zip(q["source_file"].str.rsplit("/", n=1).str[-1], q["line_no"], q["kind"])) == [
        ("gateway-stderr.log", 9, "invalid"), ("gateway-stderr.log", 10, "pending"),
        ("policy-audit.jsonl", 4, "invalid"), ("policy-audit.jsonl", 7, "invalid")]


def test_docker_stderr_alone():
    res = gw.load_docker_gateway(FIX / "docker" / "gateway-stderr.log")
    f = res.frame
    assert f["line_no"].tolist() == [3, 5, 6, 8]
    assert f["door_session"].eq("docker-mcp-gateway:unknown-agent:2025-10-01").all()
    assert f["seq"].tolist() == [1, 2, 3, 4] and f["decision"].eq("allow").all()
    lo = f.iloc[1]                                      # "object with 2 field(s)": no arguments
    assert lo["arguments"] is None and pd.isna(lo["args_key"])
    assert lo["duration_ms"] == pytest.approx(1204.4)
    assert str(lo["ts_end"]) == "2025-10-01 12:00:05.204400+00:00"
    assert pd.isna(f.iloc[3]["tool"]) and f.iloc[3]["error"] == "tool name not logged (method tools/call)"
    assert gw.go_duration_ms("1m2.5s") == pytest.approx(62500.0) and gw.go_duration_ms("850µs") == 0.85
    assert gw.go_duration_ms("soon") is None
    # worked out in decimal (1.2044 * 1000.0 is 1204.3999999999999), and a negative one stays negative
    assert gw.go_duration_ms("1.2044s") == 1204.4 and gw.go_duration_ms("1m2.5s") == 62500.0
    assert gw.go_duration_ms("-1.5s") == -1500.0


def test_docker_stderr_without_times(tmp_path):
    p = tmp_path / "stderr.log"
    p.write_text("  - Calling tool a with arguments: {}\n  > Calling tool a took: 2ms\n")
    f = gw.load_docker_gateway(p).frame
    assert f["ts"].isna().all() and f.iloc[0]["door_session"] == "docker-mcp-gateway:unknown-agent:stderr.log"
    assert f.iloc[0]["args_key"] == "{}" and f.iloc[0]["duration_ms"] == 2.0


def test_mcpjungle():
    res = gw.load_mcpjungle(FIX / "mcpjungle")
    f = res.frame
    CALLS.validate(f)
    assert len(f) == 4
    cc = f[f["agent"] == "claude-code"]
    assert cc["door_session"].eq("mcpjungle:claude-code:2025-10-01").all()
    # r-1 and r-2 overlap; paired by request_id, not by order
    assert _cols(cc, "tool", "duration_ms", "line_no") == [
        ["files__read_object", 413.0, 2], ["files__list_objects", 100.0, 3]]
    assert str(cc.iloc[0]["ts_end"]) == "2025-10-01 12:00:03.527000+00:00"
    un = f[f["agent"].isna()]
    # a failure with no start line: ts = completion − 21 ms; console lines (ANSI) paired by name
    assert _cols(un, "tool", "error", "line_no") == [
        ["files__read_object", "upstream: access denied", 7], ["files__stat_object", None, 8]]
    assert str(un.iloc[0]["ts"]) == "2025-10-01 12:00:05+00:00"
    assert f["args_key"].isna().all() and f["decision"].eq("allow").all()
    assert res.inputs[0]["not_calls"] == 2 and res.inputs[0]["unfinished"] == 0
    assert res.quarantine["line_no"].tolist() == [6]


def test_gatekit():
    res = gw.load_gatekit(FIX / "gatekit")
    f = res.frame
    CALLS.validate(f)
    assert f["line_no"].tolist() == [3, 4, 8, 10]
    # the names the client called (Gatekit namespaces each upstream server's tools), server apart
    assert f["tool"].tolist() == ["files__read_object", "files__list_objects", "files__read_object",
                                  "files__stat_object"]
    assert f["server"].eq("files").all()
    a = f.iloc[0]
    assert a["args_key"] == '{"bucket":"reports","key":"2025/q3 summary.csv"}'
    assert a["meta_call_id"] == "toolu_01AbC" and a["duration_ms"] == 413.0
    assert pd.isna(f.iloc[1]["args_key"]) and f.iloc[1]["arguments"] is None       # no request_body
    b = f.iloc[2]                                                                  # blocked, truncated body
    assert b["decision"] == "deny" and pd.isna(b["args_key"]) and b["arguments"]["bucket"] == "secrets"
    assert b["rule"] == "basic_secrets_filter — [basic_secrets_filter] secret pattern in request"
    assert b["error"] == "blocked by policy"
    assert f.iloc[3]["error"] == "upstream timeout" and f.iloc[3]["args_key"] == '{"bucket":"reports","key":"a.csv"}'
    assert f["door_session"].eq("gatekit:unknown-agent:2025-10-01").all()
    info = res.inputs[0]
    # initialize (1), tools/list (2), the orphan UPSTREAM_ERROR response (9), a notification (12);
    # the blocked request (8) never got a response
    assert info["not_calls"] == 4 and info["unfinished"] == 1
    assert "line 9: response without a logged request; not a call row" in info["notes"]
    assert res.quarantine["line_no"].tolist() == [7]


def test_obot():
    res = gw.load_obot(FIX / "obot")
    f = res.frame
    CALLS.validate(f)
    # 4 rows in {"items": [...]}: 3 tools/call, 1 resources/read; object lines via grep -n '"id": 200'
    assert f["line_no"].tolist() == [3, 53, 112] and res.inputs[0]["not_calls"] == 1
    a, b, c = (f.iloc[i] for i in range(3))
    assert (a["door_session"], a["agent"], a["server"], a["tool"]) == ("obot-sess-1", "claude-code", "Files", "read_object")
    assert a["args_key"] == '{"bucket":"reports","key":"2025/q3 summary.csv"}' and a["meta_call_id"] == "toolu_01XyZ"
    assert a["decision"] == "allow" and a["duration_ms"] == 413.0
    assert b["decision"] == "deny" and b["rule"] == "secrets-guard: denied (secrets bucket)"
    assert b["error"] == "request rejected by webhook secrets-guard"
    assert c["door_session"] == "obot:cursor:2025-10-02" and pd.isna(c["args_key"])


def test_lasso_and_pomerium():
    la = gw.load_lasso(FIX / "lasso")
    f = la.frame
    assert f["line_no"].tolist() == [2, 19] and f["door_session"].eq("quiet-otter-0001").all()
    assert f.iloc[0]["arguments"] == {"path": "."} and f["args_key"].isna().all()
    assert f.iloc[1]["arguments"] == {"paths": ["a.txt", "b.txt"]} and f.iloc[1]["error"] == "Error: b.txt not found"
    assert str(f.iloc[0]["ts"]) == "2025-04-17 17:12:48.233126+00:00" and la.inputs[0]["not_calls"] == 1
    po = gw.load_pomerium(FIX / "pomerium")
    g = po.frame
    assert g["line_no"].tolist() == [1, 3] and g["decision"].tolist() == ["allow", "deny"]
    assert g["rule"].tolist() == ["email-ok, mcp-tool-ok", "mcp-tool-denied"]
    assert g["door_session"].eq("pomerium:alice@example.com:2025-10-01").all()
    assert str(g.iloc[0]["ts"]) == "2025-10-01 12:00:03+00:00"                    # 08:00:03-04:00
    assert g.iloc[0]["args_key"] == '{"bucket":"reports","key":"2025/q3 summary.csv"}'
    assert po.inputs[0]["not_calls"] == 2


def test_gzip_read_only_and_errors(tmp_path):
    src = FIX / "gatekit" / "gatekit_audit.jsonl"
    p = tmp_path / "audit.jsonl.gz"
    p.write_bytes(gzip.compress(src.read_bytes()))
    before = (p.read_bytes(), p.stat().st_mtime_ns)
    assert len(gw.load_gatekit(p).frame) == 4
    assert (p.read_bytes(), p.stat().st_mtime_ns) == before
    for load in (gw.load_docker_gateway, gw.load_mcpjungle, gw.load_gatekit, gw.load_obot, gw.load_lasso,
                 gw.load_pomerium):
        with pytest.raises(InputError, match="no such file"):
            load(tmp_path / "missing.log")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    r = gw.load_obot(empty)
    CALLS.validate(r.frame)
    assert r.frame.empty and r.quarantine.empty


# --------------------------------------------------------------------------- sniffing

MINE = ("codex", "otel", "gemini", "docker-mcp-gateway", "mcpjungle", "gatekit", "obot", "lasso", "pomerium",
        "agentgateway", "context-forge", "invariant", "mxcp", "mcp-http")
OWNER = {
    "codex": "codex", "otel": "otel", "gemini": "gemini",
    "gateways/docker": "docker-mcp-gateway", "gateways/mcpjungle": "mcpjungle", "gateways/gatekit": "gatekit",
    "gateways/obot": "obot", "gateways/lasso": "lasso", "gateways/pomerium": "pomerium",
    "gateways/agentgateway": "agentgateway", "gateways/context_forge": "context-forge",
    "gateways/invariant": "invariant", "gateways/mxcp": "mxcp", "gateways/mcp_http": "mcp-http",
    "claude_code": "claude-code", "join_trap/transcripts": "claude-code", "join_trap/door": "door", "door": "door",
}


def _owner(p: Path) -> str | None:
    rel = p.relative_to(FIXROOT).as_posix()
    if p.name == "expected.json" or p.name.endswith(".meta.json") or p.suffix == ".md":
        return None
    for prefix in sorted(OWNER, key=len, reverse=True):
        if rel.startswith(prefix + "/"):
            return OWNER[prefix]
    return None


def _head(p: Path) -> bytes:
    head = p.read_bytes()[: registry.SNIFF_BYTES]
    if head[:2] == b"\x1f\x8b":
        try:
            head = gzip.decompress(p.read_bytes())[: registry.SNIFF_BYTES]
        except (OSError, EOFError):
            head = b""
    return head


def test_every_sniff_over_every_fixture_the_right_one_wins():
    names = registry.names()
    assert set(MINE) <= set(names)
    files = sorted(p for p in FIXROOT.rglob("*") if p.is_file())
    owned = 0
    for p in files:
        head = _head(p)
        scores = {n: registry.get(n).sniff(head) for n in names}
        owner = _owner(p)
        if owner is None:                     # not a format of ours (others' fixtures, side files)
            assert all(scores[n] < 0.5 for n in MINE), (p, {n: scores[n] for n in MINE})
            continue
        owned += 1
        best = max(scores, key=scores.get)
        assert best == owner and scores[owner] >= 0.6, (p, scores)
        assert all(s < 0.5 for n, s in scores.items() if n != owner), (p, scores)
        if owner in MINE:
            assert registry.sniff_file(p)[0].name == owner
    assert owned >= 30


def test_every_synthetic_session_is_recognised_and_counted():
    # each gateway that logs no session id makes up <source>:<agent>:<day>; is_synthetic_session
    # must know every one of them (the report flags them), and each file's note counts them
    import re

    from replaybook.loading import load

    calls = load([FIXROOT / "gateways"]).results["calls"]
    flagged = calls.frame[[gw.is_synthetic_session(s) for s in calls.frame["door_session"]]]
    noted = sum(int(re.match(r"(\d+) call", n).group(1))
                for i in calls.inputs for n in i.get("notes", []) if "synthetic door_session" in n)
    assert len(flagged) == noted == 22
    assert {s.split(":")[0] for s in flagged["door_session"]} == {
        "agentgateway", "context-forge", "docker-mcp-gateway", "gatekit", "mcpjungle", "mxcp", "obot", "pomerium"}
    assert not gw.is_synthetic_session("door-20260913T100000-ab12")
    assert not gw.is_synthetic_session("sess-42") and not gw.is_synthetic_session(None)
    with pytest.raises(AssertionError):
        gw._synthetic("a-new-gateway", None, "2026-09-13T10:00:00Z", Path("x"))


@pytest.mark.parametrize("time", ["2025", "2025-10-01", "2025-10-01T12Z", "2025-10-01T12:00Z"])
def test_a_year_or_a_date_alone_is_no_time_of_a_call(tmp_path, time):
    # "time": "2025" had been read as 2025-01-01T00:00:00Z — a call placed at New Year's midnight
    # with no note; a line whose time is not a full date-time is set aside with its line
    line = ('{"level":"info","service":"authorize","mcp-method":"tools/call","mcp-tool":"describe_table",'
            '"mcp-tool-parameters":{},"allow":true,"deny":false,"time":"%s"}' % time)
    good = line.replace(f'"time":"{time}"', '"time":"2025-10-01T12:00:03Z"')
    p = tmp_path / "pomerium.json"
    p.write_text(line + "\n" + good + "\n")
    res = registry.get("pomerium").load([p])
    assert _cols(res.frame, "line_no", "tool") == [[2, "describe_table"]]
    assert str(res.frame["ts"].iloc[0]) == "2025-10-01 12:00:03+00:00"
    assert res.quarantine[["line_no", "error"]].values.tolist() == [[1, "log line without a valid time"]]


def test_a_docker_tool_event_naming_no_tool_is_kept_as_a_call_with_the_tool_unknown(tmp_path):
    # a denied policy-audit tool event whose tool_name was empty or missing had been counted as
    # "not a call" and vanished: a refusal with no row and no quarantine
    ev = {"trigger": "invoke", "target_type": "tool", "server_name": "files", "result": "denied",
          "outcome_reason": "policy_rule", "reason": "bucket secrets is not allowed", "client_name": "a",
          "timestamp": "2025-10-01T12:00:04Z"}
    lines = [{**ev, "tool_name": ""}, ev, {**ev, "tool_name": 5, "result": "allowed"},
             {**ev, "tool_name": "read_object", "timestamp": "2025-10-01T12:00:05Z"},
             {**ev, "tool_name": "", "trigger": "list"}]
    p = tmp_path / "audit.jsonl"
    p.write_text("".join(json.dumps(o) + "\n" for o in lines))
    res = gw.load_docker_gateway(p)
    CALLS.validate(res.frame)
    assert _cols(res.frame, "line_no", "tool", "server", "decision", "rule", "door_session") == [
        [1, None, "files", "deny", "policy_rule — bucket secrets is not allowed", "docker-mcp-gateway:a:2025-10-01"],
        [2, None, "files", "deny", "policy_rule — bucket secrets is not allowed", "docker-mcp-gateway:a:2025-10-01"],
        [3, None, "files", "allow", "policy_rule — bucket secrets is not allowed", "docker-mcp-gateway:a:2025-10-01"],
        [4, "read_object", "files", "deny", "policy_rule — bucket secrets is not allowed",
         "docker-mcp-gateway:a:2025-10-01"]]
    assert res.quarantine.empty and res.inputs[0]["not_calls"] == 1  # the list event
    assert ('tool events whose tool_name is missing, empty or not text ("", missing, 5) on lines 1, 2, 3: kept as '
            "calls with the tool unknown (tool NA)") in res.inputs[0]["notes"]


BOM = b"\xef\xbb\xbf"


def test_a_byte_order_mark_does_not_lose_the_first_line_of_a_text_log(tmp_path):
    # a log saved by a Windows editor starts with a UTF-8 BOM: the first line is still a record,
    # at its line, and its byte offset stays the file's (the BOM is 3 bytes)
    stderr = tmp_path / "stderr.log"
    stderr.write_bytes(BOM + b'  - Calling tool read_object with arguments: {"bucket":"secrets","key":"k.txt"}\n'
                       b"  > Calling tool read_object took: 412ms\n"
                       b"  - Calling tool list with arguments: {}\n")
    res = gw.load_docker_gateway(stderr)
    assert _cols(res.frame, "tool", "line_no", "duration_ms", "object") == [
        ["read_object", 1, 412.0, "secrets/k.txt"], ["list", 3, None, None]]
    assert res.quarantine.empty and res.inputs[0]["not_calls"] == 0 and res.inputs[0]["unfinished"] == 1
    # a cut first line is placed after the BOM
    stderr.write_bytes(BOM + b'  - Calling tool read_object with arguments: {"bucket":"sec')
    q = gw.load_docker_gateway(stderr).quarantine
    assert q[["line_no", "byte_offset", "kind"]].values.tolist() == [[1, 3, "pending"]]
    assert q["raw"].iloc[0].startswith("  - Calling tool")

    # MCPJungle's zap console lines
    console = tmp_path / "jungle.log"
    console.write_bytes(
        BOM + b'2025-10-01T14:00:06.001+0200\tINFO\tmcp/proxy.go:210\tMCP tool call started\t{"service": "mcpjungle", '
        b'"event_type": "mcp_tool_call_start", "request_id": "r1", "client_name": "a", "server_name": "files", '
        b'"tool_name": "stat_object"}\n'
        b'2025-10-01T14:00:06.050+0200\tINFO\tmcp/proxy.go:244\tMCP tool call completed\t{"service": "mcpjungle", '
        b'"event_type": "mcp_tool_call", "request_id": "r1", "client_name": "a", "server_name": "files", '
        b'"tool_name": "stat_object", "success": true, "duration_ms": 49}\n')
    res = gw.load_mcpjungle(console)
    assert _cols(res.frame, "tool", "agent", "line_no", "duration_ms") == [["files__stat_object", "a", 1, 49.0]]
    assert res.quarantine.empty and res.inputs[0]["not_calls"] == 0 and res.inputs[0]["unfinished"] == 0


def test_an_unterminated_last_console_line_cut_in_its_message_is_pending(tmp_path):
    # MCPJungle's console line: time, level, caller, message, then its fields as JSON; cut inside the
    # message it still matches a console line (with no fields): pending, not counted as no call
    start = (b'2025-10-01T14:00:06.001+0200\tINFO\tmcp/proxy.go:210\tMCP tool call started\t{"service": "mcpjungle", '
             b'"event_type": "mcp_tool_call_start", "request_id": "r1", "client_name": "a", "server_name": "files", '
             b'"tool_name": "stat_object"}')
    p = tmp_path / "jungle.log"
    p.write_bytes(start + b"\n" + start.replace(b"r1", b"r2")[:45])
    res = gw.load_mcpjungle(p)
    assert _cols(res.frame, "line_no", "tool") == [[1, "files__stat_object"]]
    assert res.quarantine[["line_no", "byte_offset", "kind"]].values.tolist() == [[2, len(start) + 1, "pending"]]
    assert res.inputs[0]["not_calls"] == 0 and res.inputs[0]["unfinished"] == 1
    # ending with its fields' closing brace, the line was written whole: a call, newline or not
    p.write_bytes(start + b"\n" + start.replace(b"r1", b"r2"))
    res = gw.load_mcpjungle(p)
    assert _cols(res.frame, "line_no", "tool") == [[1, "files__stat_object"], [2, "files__stat_object"]]
    assert res.quarantine.empty and res.inputs[0]["not_calls"] == 0
