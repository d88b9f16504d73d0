"""The gateway loaders against ``../shared/real/gateway`` (read in place, never copied).

``modelled/`` holds samples written field-for-field from each gateway's source; ``lasso_…json``
and ``pomerium_…json`` are the projects' own published examples.  Counts checked BY HAND:

  docker stderr   grep -c -- '- Calling tool' → 3 calls (one "(unknown)"), grep -c '> Calling' → 2
  docker audit    jq '[.target_type,.trigger,.result,.session_id]' → 3 tool invokes, allowed 1,
                  denied 2, no session_id
  mcpjungle       event_type: 2 mcp_tool_call_start (lines 1, 4 — line 4 a zap console line),
                  2 mcp_tool_call (lines 2, 3); line 3 failed with no start → 3 calls
  gatekit         REQUEST 1 / RESPONSE 1 (same request_id) + SECURITY_BLOCK abc-2 → 2 calls
  obot            1 row, callType tools/call, sessionID 9f1c2a7e-…
  lasso           1 row, capability_type tool, track_id mottled-stingray-0411, isError 0
  pomerium        1 line, mcp-method tools/call, allow true, deny false, time -04:00
The other five modelled files are read by ``replaybook.sources.gateways_more`` (counts in
``tests/real/test_gateways_real.py::NEW_EXPECTED`` below, checked by hand too).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

from replaybook.frames import CALLS
from replaybook.sources import gateways as gw
from replaybook.sources import gateways_more as gm
from replaybook.sources import registry

pytestmark = pytest.mark.real

GATEWAYS = ("docker-mcp-gateway", "mcpjungle", "gatekit", "obot", "lasso", "pomerium",
            "agentgateway", "context-forge", "invariant", "mxcp", "mcp-http")
OWNERS = {
    "modelled/docker_mcp_gateway_stderr.log": "docker-mcp-gateway",
    "modelled/docker_mcp_gateway_policy_audit_events.jsonl": "docker-mcp-gateway",
    "modelled/mcpjungle_audit.log": "mcpjungle",
    "modelled/gatekit_audit.jsonl": "gatekit",
    "modelled/obot_mcp_audit_log_row.json": "obot",
    "lasso_xetrack_events_row__readme_example.json": "lasso",
    "pomerium_authorize_log_mcp__pr5668_example.json": "pomerium",
    "modelled/agentgateway_access_log.txt": "agentgateway",
    "modelled/context_forge_rows.json": "context-forge",
    "modelled/invariant_gateway_trace_messages.json": "invariant",
    "modelled/mxcp_audit.jsonl": "mxcp",
    "modelled/mcp_streamable_http_exchange.jsonl": "mcp-http",
}
LOADERS = {"docker-mcp-gateway": gw.load_docker_gateway, "mcpjungle": gw.load_mcpjungle, "gatekit": gw.load_gatekit,
           "obot": gw.load_obot, "lasso": gw.load_lasso, "pomerium": gw.load_pomerium,
           "agentgateway": gm.load_agentgateway, "context-forge": gm.load_context_forge,
           "invariant": gm.load_invariant, "mxcp": gm.load_mxcp, "mcp-http": gm.load_mcp_http}
# (calls, deny, quarantined, args_keys non-NA, distinct door_sessions)
EXPECTED = {
    "modelled/docker_mcp_gateway_stderr.log": (3, 0, 0, 1, 1),
    "modelled/docker_mcp_gateway_policy_audit_events.jsonl": (3, 2, 0, 0, 2),
    "modelled/mcpjungle_audit.log": (3, 0, 0, 0, 1),
    "modelled/gatekit_audit.jsonl": (2, 1, 0, 1, 1),
    "modelled/obot_mcp_audit_log_row.json": (1, 0, 0, 1, 1),
    "lasso_xetrack_events_row__readme_example.json": (1, 0, 0, 0, 1),
    "pomerium_authorize_log_mcp__pr5668_example.json": (1, 0, 0, 1, 1),
    # checked by hand:
    #  agentgateway  grep -c 'mcp.method.name=tools/call' → 2, both http.status=200 (no deny), one
    #                mcp.error.message; both mcp.session.id 9f1c2a7e-… → 1 session; no arguments logged
    #  context-forge jq '.observability_spans[] | select(.name=="tool.invoke")' → 1 span (the metric and
    #                log rows describe the same call); plugin_violation_example → 1 deny; 2 sessions
    #                (unknown-agent:2025-10-01, alice@example.com:<file name>: the violation has no time)
    #  invariant     jq '[.messages[].tool_calls[]?] | length' → 1; annotation guardrail.action block on
    #                messages.1 (its tool result) → deny; arguments an object → keyed
    #  mxcp          jq -c '[.type,.policy_decision]' → tool allow, tool deny; line 1 input_json has
    #                "[REDACTED]" → args_key NA, line 2 keyed; no session → 1 synthetic session
    #  mcp-http      jq -c 'select(.body.method=="tools/call") | .body.id' → 1, "abc-2", 4; the abc-2 result
    #                isError "AccessDenied: not allowed" → deny; id 4 a JSON-RPC error (unknown tool) → allow
    #                with error; all three keyed; Mcp-Session-Id 9f1c2a7e-… → 1 session
    "modelled/agentgateway_access_log.txt": (2, 0, 0, 0, 1),
    "modelled/context_forge_rows.json": (2, 1, 0, 0, 2),
    "modelled/invariant_gateway_trace_messages.json": (1, 1, 0, 1, 1),
    "modelled/mxcp_audit.jsonl": (2, 1, 0, 1, 1),
    "modelled/mcp_streamable_http_exchange.jsonl": (4, 1, 0, 4, 1),
}


@pytest.fixture(scope="module")
def gw_dir(real_dir: Path) -> Path:
    d = real_dir / "gateway"
    assert d.is_dir(), f"{d} missing from the shared evidence folder"
    return d


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_real_gateway_counts(gw_dir, rel):
    calls, deny, quarantined, keyed, sessions = EXPECTED[rel]
    path = gw_dir / rel
    before = (path.stat().st_mtime_ns, path.read_bytes())
    res = LOADERS[OWNERS[rel]](path)
    f = res.frame
    CALLS.validate(f)
    assert len(f) == calls and (f["decision"] == "deny").sum() == deny
    assert len(res.quarantine) == quarantined
    assert f["args_key"].notna().sum() == keyed and f["door_session"].nunique() == sessions
    assert (path.stat().st_mtime_ns, path.read_bytes()) == before
    assert registry.sniff_file(path)[0].name == OWNERS[rel]


def test_real_gateway_values(gw_dir):
    m = gw_dir / "modelled"
    d = gw.load_docker_gateway(m / "docker_mcp_gateway_stderr.log").frame
    assert d["tool"].tolist()[:2] == ["read_object", "read_object"] and pd.isna(d["tool"].tolist()[2])
    assert d["duration_ms"].tolist()[:2] == pytest.approx([412.337, 1204.4])
    assert d.iloc[0]["args_key"] == '{"bucket":"reports","key":"2025/q3 summary.csv"}' and pd.isna(d.iloc[1]["args_key"])
    a = gw.load_docker_gateway(m / "docker_mcp_gateway_policy_audit_events.jsonl").frame
    assert sorted(a["door_session"].unique()) == ["docker-mcp-gateway:example-agent:2025-10-01",
                                                  "docker-mcp-gateway:unknown-agent:2025-10-01"]
    assert a.set_index("line_no").loc[2, "rule"] == "policy_rule — bucket 'secrets' is not allowed"
    assert a.set_index("line_no").loc[3, "error"] == "policy service unreachable"
    j = gw.load_mcpjungle(m / "mcpjungle_audit.log").frame
    assert j["line_no"].tolist() == [1, 3, 4]
    assert j["tool"].tolist() == ["files__read_object", "files__read_object", "files__list_objects"]
    # +0200 offsets in UTC; line 1 + line 2 are one call of 412 ms
    assert str(j.iloc[0]["ts"]) == "2025-10-01 12:00:03.114000+00:00" and j.iloc[0]["duration_ms"] == 412.0
    assert j.iloc[1]["error"] == "access denied" and pd.isna(j.iloc[2]["ts_end"])
    g = gw.load_gatekit(m / "gatekit_audit.jsonl").frame
    assert g["tool"].tolist() == ["files__read_object", "files__read_object"] and g["server"].eq("files").all()
    assert g.iloc[0]["duration_ms"] == 413.0 and g.iloc[1]["decision"] == "deny"
    assert pd.isna(g.iloc[1]["args_key"])                           # request_body _truncated
    o = gw.load_obot(m / "obot_mcp_audit_log_row.json").frame.iloc[0]
    assert (o["door_session"], o["agent"], o["tool"]) == ("9f1c2a7e-0b7d-4c55-8a1e-3c2d1f0a9b88", "example-agent",
                                                          "read_object")
    assert o["args_key"] == '{"bucket":"reports","key":"2025/q3 summary.csv"}' and o["duration_ms"] == 413.0
    la = gw.load_lasso(gw_dir / "lasso_xetrack_events_row__readme_example.json").frame.iloc[0]
    assert (la["door_session"], la["server"], la["tool"]) == ("mottled-stingray-0411", "filesystem", "list_directory")
    assert la["arguments"] == {"path": "."} and pd.isna(la["args_key"]) and pd.isna(la["error"])
    po = gw.load_pomerium(gw_dir / "pomerium_authorize_log_mcp__pr5668_example.json").frame.iloc[0]
    assert (po["tool"], po["decision"], po["rule"]) == ("describe_table", "allow", "email-ok, mcp-tool-ok")
    assert po["args_key"] == '{"table_name":"Categories"}' and str(po["ts"]) == "2025-06-24 21:40:41+00:00"


def test_docker_logs_merge_over_real_samples(gw_dir):
    """The real stderr sample has no times, so nothing can fold into the audit events."""
    m = gw_dir / "modelled"
    res = gw.load_docker_gateway([m / "docker_mcp_gateway_stderr.log", m / "docker_mcp_gateway_policy_audit_events.jsonl"])
    assert len(res.frame) == 6 and all("merged_into_audit" not in i for i in res.inputs)


def _head(p: Path) -> bytes:
    data = p.read_bytes()[: registry.SNIFF_BYTES]
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(p.read_bytes())[: registry.SNIFF_BYTES]
        except (OSError, EOFError):
            data = b""
    return data


def test_every_registered_sniff_over_every_real_file(real_dir):
    """Every registered sniff runs over every real file: the owner wins; our sniffs claim nothing else."""
    names = registry.names()
    assert set(GATEWAYS) <= set(names)
    for p in sorted(q for q in real_dir.rglob("*") if q.is_file() and q.suffix != ".md"):
        rel = p.relative_to(real_dir).as_posix()
        head = _head(p)
        scores = {n: registry.get(n).sniff(head) for n in names}
        owner = OWNERS.get(rel.removeprefix("gateway/")) if rel.startswith("gateway/") else None
        if owner is not None:
            assert max(scores, key=scores.get) == owner, (rel, scores)
            assert all(s < 0.5 for n, s in scores.items() if n != owner), (rel, scores)
        else:
            assert all(scores[n] < 0.5 for n in GATEWAYS), (rel, {n: scores[n] for n in GATEWAYS})


def test_real_new_gateway_values(gw_dir):
    """Values of the five sources of ``gateways_more`` over the modelled samples (checked by hand)."""
    m = gw_dir / "modelled"
    ag = gm.load_agentgateway(m / "agentgateway_access_log.txt").frame
    assert _rows(ag, "door_session", "agent", "server", "tool", "duration_ms", "decision") == [
        ["9f1c2a7e-0b7d-4c55-8a1e-3c2d1f0a9b88", "agent-42", "files", "read_object", 412.0, "allow"],
        ["9f1c2a7e-0b7d-4c55-8a1e-3c2d1f0a9b88", "agent-42", "files", "read_object", 3.0, "allow"]]
    assert pd.isna(ag.iloc[0]["error"]) and ag.iloc[1]["error"] == "Unknown tool: read_secret (-32602)"
    assert str(ag.iloc[0]["ts"]) == "2025-10-01 12:00:03.114512+00:00" and ag["arguments"].isna().all()
    cf = gm.load_context_forge(m / "context_forge_rows.json")
    f = cf.frame.sort_values("decision").reset_index(drop=True)
    assert _rows(f, "door_session", "tool", "decision", "duration_ms") == [
        ["context-forge:unknown-agent:2025-10-01", "read_object", "allow", 413.0],
        ["context-forge:alice@example.com:context_forge_rows.json", "read_object", "deny", None]]
    assert f.iloc[1]["rule"] == ("UnifiedPDPPlugin: PDP_DENY — Policy decision: DENY — "
                                 "bucket 'secrets' denied for role analyst")
    assert f.iloc[0]["correlation"] == "0af7651916cd43dd8448eb211c80319c" and cf.inputs[0]["not_calls"] == 2
    inv = gm.load_invariant(m / "invariant_gateway_trace_messages.json").frame.iloc[0]
    assert (inv["door_session"], inv["agent"], inv["server"], inv["tool"]) == (
        "inv-5b0f0c3e9a2d4e6f8a1b2c3d4e5f6a7b", "example-agent", "files-server", "read_object")
    assert inv["args_key"] == '{"bucket":"reports","key":"2025/q3 summary.csv"}'
    assert inv["object"] == "reports/2025/q3 summary.csv" and inv["rule"] == "g-1 — secret pattern detected"
    assert str(inv["ts"]) == "2025-10-01 14:00:03.101223+00:00" and inv["duration_ms"] == pytest.approx(413.684)
    mx = gm.load_mxcp(m / "mxcp_audit.jsonl").frame
    assert _rows(mx, "door_session", "decision", "rule", "error", "args_key") == [
        ["mxcp:unknown-agent:2025-10-01", "allow", None, None, None],
        ["mxcp:unknown-agent:2025-10-01", "deny", "Blocked by policy", "Policy enforcement failed",
         '{"bucket":"secrets","key":"keys.txt"}']]
    assert mx.iloc[0]["arguments"]["api_key"] == "[REDACTED]"
    h = gm.load_mcp_http(m / "mcp_streamable_http_exchange.jsonl")
    assert _rows(h.frame, "line_no", "agent", "server", "tool", "decision", "error") == [
        [5, "example-agent", "files-server", "read_object", "allow", None],
        [7, "example-agent", "files-server", "read_object", "deny", "AccessDenied: not allowed"],
        [9, "example-agent", "files-server", "resources/read", "allow", None],   # an object read, as the door logs one
        [11, "example-agent", "files-server", "no_such_tool", "allow", "Unknown tool: no_such_tool (-32602)"]]
    assert h.frame["ts"].isna().all() and h.inputs[0]["unfinished"] == 0
    assert h.frame.iloc[3]["args_key"] == "{}"
    assert (h.frame.iloc[2]["object"], h.frame.iloc[2]["args_key"]) == (
        "s3://reports/2025/readme.md", '{"uri":"s3://reports/2025/readme.md"}')


def _rows(frame, *cols):
    sub = frame[list(cols)].astype(object)
    return sub.where(sub.notna(), None).values.tolist()


def test_every_gateway_names_the_object_its_arguments_name(gw_dir):
    """The same {bucket, key} arguments gave 'reports/2025/q3 summary.csv' in some gateway
    loaders and no object in others (obot, gatekit, Docker stderr), so those calls had no
    storage link."""
    from replaybook.loading import load_frame

    f = load_frame([gw_dir], "calls").result.frame
    named = [(a, o) for a, o in zip(f["arguments"], f["object"])
             if isinstance(a, dict) and isinstance(a.get("bucket"), str) and isinstance(a.get("key"), str)]
    assert len(named) >= 8
    assert all(o == f"{a['bucket']}/{a['key']}" for a, o in named), named
