"""Rules that ask: the door asks the agent's user through MCP elicitation before the call.

The client is the SDK's ``ClientSession`` with an elicitation callback (it then declares the
``elicitation`` capability, as Claude Code does); the upstream is the fixture server."""

from __future__ import annotations

import pytest

from replaybook.sources.door import load_door

from .conftest import door_cmd, fixture_server_cmd, run_session, validate_lines

RULES = """\
version: 1
rules:
  - id: deny-dotenv
    decision: deny
    paths: ["**/.env"]
  - id: ask-before-reading
    decision: ask
    tools: [read_object]
    paths: ["demo/**"]
  - id: allow-demo
    decision: allow
    tools: [list_folder, query]
    paths: ["demo", "demo/**"]
"""


def _session(cmd, fn, answer=None):
    """Run ``fn(session)`` through the door; ``answer(message) -> ElicitResult`` (or an awaitable
    of one) makes the client one that can be asked (``None``: a client without elicitation).
    Returns ``(fn's result, the questions asked)``."""
    asked: list[str] = []

    async def on_elicit(ctx, params):
        asked.append(params.message)
        got = answer(params.message)
        return await got if hasattr(got, "__await__") else got

    kw = {"elicitation_callback": on_elicit} if answer is not None else {}
    return run_session(cmd, fn, **kw), asked


@pytest.fixture
def ask_rules(tmp_path):
    p = tmp_path / "rules.yaml"
    p.write_text(RULES)
    return p


def _calls(s):
    async def run():
        out = []
        for name, args in [("read_object", {"path": "demo/notes.txt"}), ("read_object", {"path": "demo/cars.csv"}),
                           ("list_folder", {"path": "demo"}), ("read_object", {"path": "reference/.env"})]:
            out.append(await s.call_tool(name, args))
        return out
    return run()


def test_the_user_approves_one_read_and_declines_another(tmp_path, data_root, ask_rules):
    import mcp_types as types

    def answer(message):
        ok = "notes.txt" in message
        return types.ElicitResult(action="accept", content={"approve": ok})

    log_root = tmp_path / "door"
    out, asked = _session(door_cmd(ask_rules, log_root, fixture_server_cmd(data_root), session="s"), _calls, answer)
    # asked twice (the two reads under demo/), never for the listing or the refused .env
    assert asked == ["The door's rule 'ask-before-reading' asks before this call: allow read_object on "
                     'demo/notes.txt? Arguments: {"path":"demo/notes.txt"}',
                     "The door's rule 'ask-before-reading' asks before this call: allow read_object on "
                     'demo/cars.csv? Arguments: {"path":"demo/cars.csv"}']
    assert not out[0].is_error and out[0].content[0].text == "cars from 1974\n"
    assert out[1].is_error and out[1].content[0].text == (
        "refused by the door: rule 'ask-before-reading' asks the user before this read_object call, and the user "
        "declined it")
    assert not out[2].is_error and out[3].is_error and "deny-dotenv" in out[3].content[0].text
    lines = validate_lines(log_root / "analyst" / "s.jsonl")
    got = sorted((o["seq"], o["object"], o["decision"], o["rule"], o.get("approval")) for o in lines)
    assert got == [(1, "demo/notes.txt", "allow", "ask-before-reading", "approved"),
                   (2, "demo/cars.csv", "deny", "ask-before-reading", "declined"),
                   (3, "demo", "allow", "allow-demo", None),
                   (4, "reference/.env", "deny", "deny-dotenv", None)]
    calls = load_door(log_root).frame.sort_values("seq")
    assert calls["approval"].tolist()[:2] == ["approved", "declined"] and calls["approval"].isna().tolist()[2:] == [True, True]
    assert int(calls.loc[calls["seq"] == 1, "rows"].iloc[0]) == 1  # the approved read was answered and measured


def test_a_client_that_cannot_be_asked_is_refused_and_a_dismissal_too(tmp_path, data_root, ask_rules):
    import mcp_types as types

    log_root = tmp_path / "door"
    out, asked = _session(door_cmd(ask_rules, log_root, fixture_server_cmd(data_root), session="s"), _calls)
    assert asked == [] and out[0].is_error and out[0].content[0].text.endswith(
        "and the client cannot ask its user (no elicitation support)")
    lines = {o["seq"]: o for o in validate_lines(log_root / "analyst" / "s.jsonl")}
    assert (lines[1]["decision"], lines[1]["approval"]) == ("deny", "unavailable")

    log2 = tmp_path / "door2"
    out, asked = _session(door_cmd(ask_rules, log2, fixture_server_cmd(data_root), session="s"), _calls,
                             lambda m: types.ElicitResult(action="cancel"))
    assert len(asked) == 2 and out[0].is_error and out[0].content[0].text.endswith("the user dismissed the question")
    assert {o["seq"]: o.get("approval") for o in validate_lines(log2 / "analyst" / "s.jsonl")} == {
        1: "cancelled", 2: "cancelled", 3: None, 4: None}


def test_a_question_left_unanswered_when_the_client_leaves_is_logged_refused(tmp_path, data_root, ask_rules):
    """The client hangs up while its user has not answered: the call is not lost from the log."""
    import json
    import subprocess

    log_root = tmp_path / "door"
    p = subprocess.Popen(door_cmd(ask_rules, log_root, fixture_server_cmd(data_root), session="s"),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(o):
        p.stdin.write(json.dumps(o).encode() + b"\n")
        p.stdin.flush()

    def receive():
        return json.loads(p.stdout.readline())

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "1"}}})
        assert receive()["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "read_object", "arguments": {"path": "demo/notes.txt"}}})
        q = receive()
        assert q["method"] == "elicitation/create" and q["params"]["requestedSchema"]["required"] == ["approve"]
        p.stdin.close()  # no answer: the client is gone
        assert p.wait(30) == 0
    finally:
        p.kill()
        p.stdout.close()
    (line,) = validate_lines(log_root / "analyst" / "s.jsonl")
    assert (line["decision"], line["rule"], line["approval"]) == ("deny", "ask-before-reading", "timed_out")
    assert line["error"] == "no answer to the rule's question: the client closed the connection before the answer"


def test_a_refusal_of_any_object_beats_a_question():
    from replaybook.door.rules import rules_from_dict

    r = rules_from_dict({"version": 1, "rules": [
        {"id": "ask-a", "decision": "ask", "paths": ["a/**"]},
        {"id": "no-b", "decision": "deny", "paths": ["b/**"]},
        {"id": "ok", "decision": "allow", "paths": ["c/**"]}]})
    assert r.decide("tools/call", "copy", {"src": "a/x", "dst": "b/y"}).rule == "no-b"
    d = r.decide("tools/call", "copy", {"src": "c/x", "dst": "a/y"})
    assert (d.decision, d.rule, d.object) == ("ask", "ask-a", "a/y")


def test_the_report_says_what_the_user_answered():
    """The refused-calls table and the conversation's door cell carry the answer."""
    import pandas as pd

    from replaybook.frames import CALLS
    from replaybook.report import sections as S
    from replaybook.views.session import _reach

    t = pd.Timestamp("2026-09-13T10:00:00Z")
    calls = CALLS.build([
        dict(door_session="s", seq=1, ts=t, tool="read_object", object="demo/a", decision="allow",
             rule="ask-first", approval="approved", rows=3, bytes=10),
        dict(door_session="s", seq=2, ts=t, tool="read_object", object="demo/b", decision="deny",
             rule="ask-first", approval="timed_out"),
        dict(door_session="s", seq=3, ts=t, tool="read_object", object="x/.env", decision="deny", rule="no-env")])
    h = S.refused_calls(calls)
    assert "<th>the user, asked</th>" in h and ">timed_out<" in h
    h = S.session_calls(calls, None, "s")  # an approved call reads as asked and approved, not a plain allow
    assert "<th>the user, asked</th>" in h and ">approved<" in h
    rows = list(calls.itertuples(index=False))
    assert _reach(rows[0]) == "demo/a · allow (ask-first, the user was asked: approved) · 3 rows · 10 B"
    assert _reach(rows[1]) == "demo/b · REFUSED by rule ask-first, the user was asked: timed out · nothing returned"
    assert _reach(rows[2]) == "x/.env · REFUSED by rule no-env · nothing returned"


def test_the_call_timeout_counts_from_when_the_approved_call_is_passed_on(tmp_path, data_root, ask_rules):
    """--call-timeout bounds the wait for the server's answer, not the user's: a call the user
    approves after longer than the timeout is passed on and answered, and logged once."""
    import anyio
    import mcp_types as types

    async def answer(message):
        await anyio.sleep(1.0)
        return types.ElicitResult(action="accept", content={"approve": True})

    async def one(s):
        return await s.call_tool("read_object", {"path": "demo/notes.txt"})

    log_root = tmp_path / "door"
    out, asked = _session(door_cmd(ask_rules, log_root, fixture_server_cmd(data_root), session="t",
                                   extra=["--call-timeout", "0.4"]), one, answer)
    assert len(asked) == 1 and not out.is_error and out.content[0].text == "cars from 1974\n"
    lines = validate_lines(log_root / "analyst" / "t.jsonl")
    assert [(o["decision"], o["approval"], o["error"], o["rows"]) for o in lines] == [("allow", "approved", None, 1)]
