"""Report sections built from synthetic canonical frames (no kernel)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pandas as pd

from replaybook.canonical import canonical_args
import pytest

from replaybook.frames import CALLS, PAIRS, QUARANTINE, SESSIONS, STEPS
from replaybook.report import sections as S

T0 = pd.Timestamp("2026-09-13T10:00:00Z")
XSS = '<script>alert("xss")</script>'


def s(sec: float) -> pd.Timestamp:
    return T0 + pd.Timedelta(seconds=sec)


def st(tid: str, sec: float, path: str) -> dict:
    """A Claude Code ``read`` tool call of ``path``, ``sec`` seconds in (a ``steps`` row)."""
    return dict(transcript_id=tid, client="claude-code", seq=int(sec), ts=s(sec), kind="tool_call",
                tool_raw="mcp__door__read", server="door", tool="read", arguments={"path": path},
                args_key=canonical_args({"path": path}))


def ca(sess: str, sec: float, path: str) -> dict:
    """The door's allowed ``read`` of ``path`` in session ``sess``, ``sec`` seconds in (a ``calls`` row)."""
    return dict(door_session=sess, agent="analyst", seq=int(sec), ts=s(sec), tool="read",
                arguments={"path": path}, args_key=canonical_args({"path": path}), decision="allow")


@pytest.fixture()
def frames():
    steps = STEPS.build([
        dict(transcript_id="t1", seq=0, ts=s(0), kind="user_prompt", text=XSS),
        dict(transcript_id="t1", seq=1, ts=s(1), kind="tool_call", tool="read_object", tool_raw="mcp__door__read_object",
             args_key='{"path":"a"}', call_id="toolu_a"),
        dict(transcript_id="t1", seq=2, ts=s(5), kind="tool_call", tool="read_object", tool_raw="mcp__door__read_object",
             args_key='{"path":".env"}', call_id="toolu_env", result_text="denied " + XSS, is_error=True),
        dict(transcript_id="t1", seq=3, ts=s(9), kind="tool_call", tool="query", tool_raw="mcp__door__query",
             args_key='{"sql":"<b>x</b>"}', call_id="toolu_lost"),
    ])
    calls = CALLS.build([
        dict(door_session="s1", agent="analyst", seq=1, ts=s(1.4), tool="read_object", args_key='{"path":"a"}',
             object="a", decision="allow", rule="allow-demo", rows=32, bytes=2048),
        dict(door_session="s1", agent="analyst", seq=2, ts=s(5.4), tool="read_object", args_key='{"path":".env"}',
             object=".env", decision="deny", rule="no-dotenv"),
        dict(door_session="s1", agent="analyst", seq=3, ts=s(7), tool="list_folder", args_key='{"path":"<i>"}',
             object="<img src=x onerror=alert(1)>", decision="allow", rule="r", rows=1, bytes=9),
        dict(door_session="s2", agent="other", seq=1, ts=s(30), tool="read_object", args_key='{"path":"a"}',
             object="a", decision="allow", rule="allow-demo", rows=32, bytes=2048),
    ])
    pairs = PAIRS.build([
        dict(door_session="s1", transcript_id="t1", step_seq=1, call_seq=1, call_row=0, call_id="toolu_a", tool="read_object",
             args_key='{"path":"a"}', step_ts=s(1), call_ts=s(1.4), delta_ms=400.0, how="content"),
        dict(door_session="s1", transcript_id="t1", step_seq=2, call_seq=2, call_row=1, call_id="toolu_env", tool="read_object",
             args_key='{"path":".env"}', step_ts=s(5), call_ts=s(5.4), delta_ms=400.0, how="content"),
    ])
    sessions = SESSIONS.build([
        dict(door_session="s1", agent="analyst", start=s(1.4), end=s(7), calls=3, refused=1, transcript_id="t1",
             agreed=2, transcript_tool_steps=3, share=2 / 3, runner_up=pd.NA, runner_up_agreed=pd.NA, margin=2.0,
             status="matched", offset_ms=400.0, unclaimed_calls=1, unmatched_steps=1, method="content"),
        dict(door_session="s2", agent="other", start=s(30), end=s(30), calls=1, refused=0, transcript_id=pd.NA,
             agreed=0, transcript_tool_steps=pd.NA, share=0.0, runner_up="t1", runner_up_agreed=1, margin=0.0,
             status="unmatched", offset_ms=None, unclaimed_calls=1, unmatched_steps=0, method=pd.NA),
    ])
    return steps, calls, pairs, sessions


def no_raw_html(h: str) -> None:
    """None of the hostile strings survive as markup."""
    assert "<script>alert" not in h
    assert "<img src=x" not in h
    assert "<b>x</b>" not in h and "<i>" not in h


def test_table_escapes_every_cell():
    df = pd.DataFrame({"a": [XSS, None], "n": [1234567, None]})
    h = S.table(df, [("a", "A <b>", "code"), ("n", "n", "num")])
    no_raw_html(h)
    assert "<wbr/>" in h  # a long unbroken text may wrap at its parts; the text itself is unchanged
    h = h.replace("<wbr/>", "")
    assert "&lt;script&gt;alert(&quot;xss&quot;)&lt;/script&gt;" in h
    assert "A &lt;b&gt;" in h and "1,234,567" in h and h.count("—") == 2


def test_table_shows_yes_or_no_for_flags_not_python_booleans():
    import numpy as np

    df = pd.DataFrame({"f": pd.array([True, False, None], dtype="boolean"), "g": np.array([True, False, True])})
    h = S.table(df, [("f", "f", "text"), ("g", "g", "text")])
    assert "True" not in h and "False" not in h
    assert h.count(">yes<") == 3 and h.count(">no<") == 2 and h.count("—") == 1


def test_table_cuts_long_frames_and_says_so():
    h = S.table(pd.DataFrame({"x": range(30)}), [("x", "x", "num")], max_rows=10)
    assert h.count("<tr>") == 11 and "first 10 of 30 rows" in h


def test_header_counts_read_as_english(frames):
    steps, calls = frames[0], frames[1]
    h = S.header("t", "/x/incident.yaml", steps=steps.head(1), calls=calls.head(1))
    assert "1 transcript, 1 transcript event" in h and "1 door session, 1 door call (" in h
    h = S.header("t", "/x/incident.yaml", steps=steps, calls=calls)
    assert f"{len(steps)} transcript events" in h and f"{len(calls)} door calls" in h
    # a shared report names the manifest by its folder and file, not the investigator's path
    h = S.header("t", "/home/ann/cases/acme-42/incident.yaml")
    assert "<code>acme-42/incident.yaml</code>" in h and "/home/ann" not in h and "quarantine" not in h
    q = _q("t.jsonl", 4, "{")
    assert '<a href="#quarantine">1 quarantine entry</a>' in S.header("t", "i.yaml", quarantine=q)
    assert "2 quarantine entries" in S.header("t", "i.yaml", quarantine=pd.concat([q, q]))
    assert "door's own log" not in S.header("t", "i.yaml", quarantine=q)  # a transcript's line: no alarm
    # a damaged line in the door's own log is named up top: the door writes whole lines
    dq = pd.concat([q, QUARANTINE.build([dict(source_file="door/a/s1.jsonl", line_no=7, kind="invalid",
                                              loader="door", error="not JSON"),
                                         dict(source_file="door/a/s1.jsonl", line_no=9, kind="duplicate",
                                              loader="door", error="repeats")])], ignore_index=True)
    h = html.unescape(re.sub("<[^>]+>", "", S.header("t", "i.yaml", quarantine=dq)))
    assert ("1 damaged line in the door's own log (first: door/a/s1.jsonl:7): the door writes each line whole "
            "before it answers, so a damaged line means the log was changed or cut after it was written, or a "
            "disk fault — worth a look") in h
    # a line that reads as JSON but has a field of the wrong type is not damage: said apart
    wrong = pd.concat([dq, QUARANTINE.build([dict(
        source_file="door/a/s2.jsonl", line_no=2, kind="invalid", loader="door",
        error="does not match door-call-log v1 at seq: '2' is not of type 'integer'")])], ignore_index=True)
    h = html.unescape(re.sub("<[^>]+>", "", S.header("t", "i.yaml", quarantine=wrong)))
    assert "1 damaged line in the door's own log (first: door/a/s1.jsonl:7)" in h
    assert ("1 door log line set aside for a field the format does not allow (first: door/a/s2.jsonl:2: does not "
            "match door-call-log v1 at seq: '2' is not of type 'integer'): each is a call the door logged but the "
            "join cannot use — a log written by another tool, or edited by hand; the call may show as one the door "
            "never saw") in h
    # an input its named format read nothing from is said at the top, linked to Inputs
    inputs = [{"path": "incident.yaml", "format": "manifest"},
              {"path": "t/<a>.jsonl", "format": "gatekit", "read_nothing": True},
              {"path": "door/s.jsonl", "format": "door", "read_nothing": False}]
    h = S.header("t", "i.yaml", inputs=inputs)
    assert ('<strong><a href="#inputs">1 input file</a> read as nothing</strong> by the format the manifest '
            "named for it: <code>t/&lt;a&gt;.jsonl</code> (gatekit)") in h
    assert "read as nothing" not in S.header("t", "i.yaml", inputs=inputs[::2])


def test_header_shows_the_manifests_description_escaped():
    h = S.header("t", "/x/incident.yaml", description="The agent said 19.90 <b>mpg</b>")
    assert "<p><b>The agent said 19.90 &lt;b&gt;mpg&lt;/b&gt;</b></p>" in h
    assert "<p><b>" not in S.header("t", "/x/incident.yaml")


def test_header_escapes_title():
    h = S.header("Incident <script>x</script>", "/a/<b>/incident.yaml", steps=STEPS.empty(), calls=CALLS.empty())
    assert "<script>x" not in h and "Incident &lt;script&gt;x" in h and "&lt;b&gt;" in h
    assert h.startswith("<style")
    assert not re.search(r"url\(|https?://", S.STYLE)


def test_header_flags_contradicting_tool_use_ids_and_counts_the_residuals(frames):
    _, _, _, sessions = frames
    plain = S.header("x", "/a/incident.yaml", sessions=sessions)
    assert "tool-use id" not in plain
    assert ('<a href="#residuals">Left unpaired by the join</a>: 2 door calls no transcript step claims and '
            "1 door-bound tool call with no door call") in plain
    flagged = sessions.assign(id_conflicts=pd.array([2] + [pd.NA] * (len(sessions) - 1), dtype="Int64"))
    h = S.header("x", "/a/incident.yaml", sessions=flagged)
    assert ('<strong><a href="#sessions">2 door calls logged a different tool-use id from the transcript step '
            "it agrees with</a></strong>") in h
    clean = sessions.assign(unclaimed_calls=0, unmatched_steps=0)
    assert "Left unpaired" not in S.header("x", "/a/incident.yaml", sessions=clean)
    # a door call of a joined session carrying a tool-use id no transcript has: a removed line, named up top
    assert sessions.loc[0, "transcript_id"] is not pd.NA
    unknown = sessions.assign(unknown_ids=pd.array([1] + [pd.NA] * (len(sessions) - 1), dtype="Int64"))
    h = html.unescape(re.sub("<[^>]+>", "", S.header("x", "/a/incident.yaml", sessions=unknown)))
    assert (f"1 door call in sessions joined to a transcript logged a client tool-use id no loaded transcript has "
            f"(first in door session {sessions.loc[0, 'door_session']}): a tool call removed from the transcript")in h
    # an unmatched session's count is said in its own sentence, not up top
    lone = sessions.assign(unknown_ids=pd.array([pd.NA] * (len(sessions) - 1) + [3], dtype="Int64"))
    assert pd.isna(sessions["transcript_id"].iloc[-1])
    assert "no loaded transcript has" not in S.header("x", "/a/incident.yaml", sessions=lone)


def test_join_summary_and_confidence(frames):
    steps, calls, _, sessions = frames
    h = S.join_summary(sessions, 60.0)
    assert "Untimed" not in h and "Untimed" not in S.join_summary(sessions, 60.0, steps=steps, calls=calls)
    untimed = steps.assign(ts=steps["ts"].where(steps["seq"] != 2), source_file="t1.jsonl", line_no=5)
    assert ("<b>Untimed:</b> 1 transcript tool call (first: t1.jsonl:5) carries no usable timestamp"
            in S.join_summary(sessions, 60.0, steps=untimed, calls=calls))
    assert "rb-status-matched" in h and "rb-status-unmatched" in h
    assert "67%" in h  # share of s1
    assert "High confidence" not in h  # share 2/3 < 0.9
    assert "Moderate confidence — matched to transcript t1; 2 of 3 calls (67%) agree" in h
    # one of a thing is singular
    assert "1 door call has no matching transcript step" in h
    assert "1 door-bound transcript tool call has no door call" in h
    assert "Door session s2: no transcript agrees with its 1 call well enough" in h
    assert "closest: transcript t1, 1 agreeing step)" in h
    # the tool-use id counts have columns of their own, as in `join`'s table
    evidence = h[h.index("What each link rests on"):h.index("How sure is each link?")]
    heads = re.findall(r"<th[^>]*>(.*?)</th>", evidence)
    # (a column name may wrap after each underscore, so the table fits the page)
    assert heads[-3:] == ['ids contradicting<br><code class="rb-col">id_<wbr/>conflicts</code>',
                          'ids naming other calls<br><code class="rb-col">id_<wbr/>mismatches</code>',
                          'ids no transcript has<br><code class="rb-col">unknown_<wbr/>ids</code>']
    # each heading names the column as `replaybook join` prints it (the sessions frame's name)
    verdicts = h[h.index("Sessions and the join"):h.index("What each link rests on")]
    names = [n.replace("<wbr/>", "") for n in re.findall(r'<code class="rb-col">(.*?)</code>', verdicts)]
    assert names == ["door_session", "agent", "start", "end", "calls", "refused", "transcript_id", "agreed",
                     "share", "status", "method"]
    assert set(names) <= set(sessions.columns)
    given = sessions.assign(unknown_ids=pd.array(list(range(3, 3 + len(sessions))), dtype="Int64"))
    h2 = S.join_summary(given, 60.0)
    evidence = h2[h2.index("What each link rests on"):h2.index("How sure is each link?")]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in re.findall(r"<tr[^>]*>(.*?)</tr>", evidence, re.S)[1:]]
    assert [r[-1] for r in rows] == [str(3 + i) for i in range(len(sessions))]


@pytest.mark.parametrize("row, expect", [
    (dict(door_session="a", calls=10, agreed=10, transcript_id="t", status="matched", share=1.0, margin=5.0,
          method="content"), "High confidence"),
    # content alone is a strong lead, not proof of the same conversation: said where the verdict is
    (dict(door_session="a", calls=10, agreed=10, transcript_id="t", status="matched", share=1.0, margin=5.0,
          method="content"), "agree on 5 fewer steps; the door logged no tool-use ids for these calls, so the link "
                             "rests on content: likely, not proof of the same conversation."),
    (dict(door_session="a", calls=10, agreed=10, transcript_id="t", status="matched", share=1.0, margin=5.0,
          method="meta_id+content"), "Certain (by tool-use id) — matched to transcript t; 10 of 10 calls (100%) "
                                     "agree (for some calls the door logged the client's own tool-use ids, and they "
                                     "match the transcript's; the others agree on tool, canonical arguments and time "
                                     "within 60 s)"),
    (dict(door_session="a", calls=10, agreed=10, transcript_id="t", status="matched", share=1.0, margin=5.0,
          method="meta_id"), "agree (the door logged the client's own tool-use ids, and they match the transcript's)"),
    # a call agreeing on everything but the id the door logged: said, not counted
    (dict(door_session="a", calls=10, agreed=9, transcript_id="t", status="matched", share=0.9, margin=5.0,
          method="content", id_conflicts=1), "; but 1 door call agrees with a step of this transcript on tool, "
                                             "arguments and time while the door logged a different tool-use id from the "
                                             "step's, so it is not counted: an edited or copied transcript, or another "
                                             "client's call, would look like this"),
    # … and the verdict says so first: never "Certain" or "High confidence" beside a contradicting id
    (dict(door_session="a", calls=10, agreed=9, transcript_id="t", status="matched", share=0.9, margin=5.0,
          method="meta_id+content", id_conflicts=1), "Door session a: Disputed: 1 tool-use id contradicts the link "
                                                     "— matched to transcript t; 9 of 10 calls (90%) agree (for some "
                                                     "calls the door logged the client's own tool-use ids"),
    (dict(door_session="a", calls=10, agreed=8, transcript_id="t", status="matched", share=0.8, margin=5.0,
          method="content", id_conflicts=2), "Disputed: 2 tool-use ids contradict the link — matched to transcript "
                                             "t; 8 of 10 calls (80%) agree (same tool and canonical arguments"),
    # the door logged an id no transcript has in a matched session: a removed line, said beside the verdict
    (dict(door_session="a", calls=10, agreed=9, transcript_id="t", status="matched", share=0.9, margin=5.0,
          method="meta_id", unknown_ids=1), "; but 1 door call of this session logged a client tool-use id that "
                                            "neither this transcript nor any other loaded one has: a tool call removed "
                                            "from the transcript, or a call another client made through this session, "
                                            "would look like this"),
    (dict(door_session="a", calls=10, agreed=2, transcript_id="t", status="matched", share=0.2, margin=1.0,
          method="content"), "Weak"),
    (dict(door_session="a", calls=10, agreed=3, transcript_id="t", status="ambiguous", share=0.3, margin=0.0,
          runner_up="u", runner_up_agreed=3, method="content"), "ambiguous"),
    # a gateway that logs no arguments: tool and time only, never called an argument match
    (dict(door_session="a", calls=10, agreed=10, transcript_id="t", status="matched", share=1.0, margin=5.0,
          method="tool_time"), "Moderate confidence — matched to transcript t; 10 of 10 calls (100%) agree "
                              "(same tool, at times within 60 s); without this link the best assignment would "
                              "agree on 5 fewer steps; the gateway logged no arguments, so arguments were not compared"),
    (dict(door_session="a", calls=10, agreed=2, transcript_id="t", status="matched", share=0.2, margin=1.0,
          method="tool_time"), "Weak — matched to transcript t; 2 of 10 calls (20%) agree (only a few calls share "
                               "tool and time within 60 s)"),
    # unmatched, and the door logged ids no loaded transcript has: the likely reason is said
    (dict(door_session="a", calls=4, agreed=None, transcript_id=None, status="unmatched", unknown_ids=3),
     "Door session a: no transcript agrees with its 4 calls well enough to be assigned, so nothing here says which "
     "conversation made them; the door logged the client's own tool-use id on 3 calls and no loaded transcript has "
     "any of them: this conversation's transcript is most likely not among the inputs."),
    (dict(door_session="a", calls=4, agreed=None, transcript_id=None, status="unmatched", unknown_ids=0),
     "Door session a: no transcript agrees with its 4 calls well enough to be assigned, so nothing here says which "
     "conversation made them; either its transcript is not among the inputs, or the agent's clock was further from "
     "the door's than the join looks (max_offset_s in the manifest, 300 s unless set)."),
    (dict(door_session="a", calls=4, agreed=None, transcript_id=None, status="unmatched", unknown_ids=0,
          runner_up="t", runner_up_agreed=1),
     "no transcript agrees with its 4 calls well enough to be assigned, so nothing here says which conversation "
     "made them (closest: transcript t, 1 agreeing step)."),
])
def test_confidence_levels(row, expect):
    text = S.confidence_sentence(row, 60)
    assert expect in text and text.endswith(".")


def test_clock_offset(frames):
    _, _, pairs, sessions = frames
    h = S.clock_offset(400.0, sessions, pairs)
    assert "400 ms</b> later than" in h and "Spread over 2 pairs" in h
    assert "cannot be estimated" in S.clock_offset(None)
    assert "earlier than" in S.clock_offset(-1500.0)
    assert "from their session" not in h  # both pairs sit on the session's offset


def test_clock_offset_says_when_sessions_run_on_clocks_of_their_own():
    """Two agents on two machines: the median over every pair is neither machine's offset."""
    from replaybook.frames import SESSIONS

    sessions = SESSIONS.build([dict(door_session="s1", transcript_id="t1", offset_ms=30000.0, agreed=6),
                               dict(door_session="s2", transcript_id="t2", offset_ms=-40000.0, agreed=4)])
    h = S.clock_offset(30000.0, sessions)
    assert "<b>The sessions' offsets differ, from -40,000 ms to +30,000 ms</b>" in h
    assert ("transcripts whose calls reached one door were written on clocks that differ by more than a call's "
            "travel time (agents on different machines)") in html.unescape(h)
    # two transcripts through two doors: either clock may be off
    doors = sessions.assign(agent=["analyst", "reviewer"])
    assert ("their transcripts, or the doors their calls reached, run on clocks that differ by more than a call's "
            "travel time (agents or doors on different machines)") in html.unescape(S.clock_offset(30000.0, doors))
    same = SESSIONS.build([dict(door_session="s1", transcript_id="t1", offset_ms=400.0, agreed=6),
                           dict(door_session="s2", transcript_id="t2", offset_ms=900.0, agreed=4)])
    assert "offsets differ" not in S.clock_offset(400.0, same)  # within a call's travel time
    # +400 and +2,000 ms (a Codex and a Gemini agent on two machines): the median over every pair,
    # +1,200 ms, was given as "the door's clock" — an offset no session has
    two = same.assign(offset_ms=[400.0, 2000.0])
    h = html.unescape(re.sub("<[^>]+>", "", S.clock_offset(1200.0, two)))
    assert ("The sessions' clocks differ (below): over every agreeing pair the door's clock reads a median of "
            "1,200 ms later than the transcripts' clocks, an offset no one session has.") in h
    assert "The sessions' offsets differ, from +400 ms to +2,000 ms" in h
    # +40,300 ms (4 pairs) and -39,700 ms (3 pairs): the median over every pair is s1's own offset,
    # and "an offset no one session has" sat above a table whose first row has it
    apart = same.assign(offset_ms=[40300.0, -39700.0])
    h = html.unescape(re.sub("<[^>]+>", "", S.clock_offset(40300.0, apart)))
    assert "no one session has" not in h
    assert ("a median of 40,300 ms later than the transcripts' clocks, door session s1's offset, not every "
            "session's.") in h


def test_clock_offset_names_a_pair_far_from_its_sessions_offset(frames):
    """A pair 20 s off its session's offset showed only as "max 20,400 ms" in the spread line:
    the reader could not tell which call it was."""
    _, _, pairs, sessions = frames
    pairs = pairs.copy()
    pairs.loc[1, ["call_ts", "delta_ms"]] = [s(25.4), 20400.0]
    h = S.clock_offset(400.0, sessions, pairs)
    assert "max 20,400 ms" in h
    assert "<b>1 agreeing pair lies more than 5 s from its session's offset</b>" in h
    far = h[h.index("more than 5 s"):]
    cells = [re.sub("<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", far)]
    assert cells == ["s1", "2", "2", "read_object", '{&quot;path&quot;:&quot;.env&quot;}',
                     "2026-09-13 10:00:05.000Z", "2026-09-13 10:00:25.400Z", "20,000"]


def test_session_calls_lists_what_each_call_reached(frames):
    steps, calls, pairs, sessions = frames
    h = S.session_calls(calls, pairs, "s1", steps=steps)
    assert "rows returned" in re.findall(r"<th[^>]*>(.*?)</th>", h)
    no_raw_html(h)
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", h)[1:]
    assert len(rows) == 3
    # the matched step's seq (the step itself, with its tool-use id, is in the conversation section)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in rows]
    assert cells[0][10] == "1" and "2,048" in rows[0] and "2026-09-13 10:00:01.400Z" in rows[0]
    assert cells[1][10] == "2" and "no-dotenv" in rows[1]
    assert '<tr class="rb-refused">' in h and h.count("rb-refused") == 1
    assert "&lt;img src=x onerror=alert(1)&gt;" in rows[2] and "toolu" not in rows[2]
    all_h = S.all_session_calls(calls, pairs, sessions, steps=steps)
    assert all_h.index("Door session s1") < all_h.index("Door session s2")


def test_refused_calls_show_what_the_agent_was_shown(frames):
    steps, calls, pairs, _ = frames
    h = S.refused_calls(calls, pairs, steps=steps)
    no_raw_html(h)
    h = h.replace("<wbr/>", "")
    assert "refused 1 call." in h and "toolu_env" in h and "no-dotenv" in h
    row = re.findall(r"<td[^>]*>(.*?)</td>", re.findall(r"<tr[^>]*>(.*?)</tr>", h)[1])
    assert row[8] == "2"  # the matched step, as numbered in the conversation
    assert "denied &lt;script&gt;alert(&quot;xss&quot;)&lt;/script&gt;" in h
    assert "refused no call" in S.refused_calls(calls[calls.decision != "deny"], pairs)


def test_inputs_table_lists_sha256():
    sha = "ab" * 32
    h = S.inputs_table([{"path": "t/<x>.jsonl", "sha256": sha, "bytes": 7023, "lines": 12, "format": "claude-code"}])
    h = h.replace("<wbr/>", "")  # (break opportunities in a long digest are not text)
    assert sha in h and "7,023" in h and "t/&lt;x&gt;.jsonl" in h


def _inputs(n_door: int, *, noted_every: int = 0) -> list[dict]:
    """Inputs rows of a manifest, ``n_door`` door logs in three agents' folders (every
    ``noted_every``-th with a note) and a transcript folder beside them, as
    :attr:`replaybook.Incident.inputs` gives them."""
    rows = [{"path": "incident.yaml", "format": "manifest", "bytes": 120, "lines": 6, "sha256": "0" * 64, "note": None}]
    for i in range(n_door):
        rows.append({"path": f"door/agent-{i % 3}/s{i:04d}.jsonl", "format": "door", "bytes": 200 + i, "lines": 1 + i % 4,
                     "sha256": f"{i:064x}", "note": "1 line set aside (see Quarantine)"
                     if noted_every and i % noted_every == noted_every - 1 else None})
    for i in range(n_door // 2):
        rows.append({"path": f"transcripts/t{i:04d}.jsonl", "format": "claude-code", "bytes": 900 + i, "lines": 7,
                     "sha256": f"{i + 10**6:064x}", "note": None})
    return rows


def _rows(h: str, after: str) -> list[list[str]]:
    """The text of each body row of the first table after ``after`` in ``h``."""
    part = h[h.index(after):]
    part = part[:part.index("</table>")]
    return [[re.sub("<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
            for r in re.findall(r"<tr>(.*?)</tr>", part, re.S) if "<td" in r]


def test_a_short_inputs_list_shows_every_file_in_its_order():
    rows = _inputs(S.MAX_INPUT_ROWS // 3)
    assert len(rows) <= S.MAX_INPUT_ROWS
    h = S.inputs_table(rows).replace("<wbr/>", "")
    shown = _rows(h, "<table")
    assert [r[0] for r in shown] == [r["path"] for r in rows]
    assert "Per folder and format" not in h and "not listed here" not in h


def test_a_long_inputs_list_shows_the_manifest_then_noted_files_then_the_rest_up_to_the_cap():
    """17,000 input files made a 6 MB table; past the cap the table lists the files that matter
    first and a summary per folder and format counts them all."""
    rows = _inputs(3 * S.MAX_INPUT_ROWS, noted_every=40)
    noted = [r["path"] for r in rows if r["note"]]
    h = S.inputs_table(rows, checksums="case.sha256").replace("<wbr/>", "")
    no_raw_html(h)
    shown = _rows(h, "files</h3>")
    assert len(shown) == S.MAX_INPUT_ROWS
    rest = [r["path"] for r in rows[1:] if not r["note"]][:S.MAX_INPUT_ROWS - 1 - len(noted)]
    assert [r[0] for r in shown] == ["incident.yaml", *noted, *rest]
    text = re.sub("<[^>]+>", "", h)
    hidden = len(rows) - S.MAX_INPUT_ROWS
    assert (f"the table after it lists {S.MAX_INPUT_ROWS:,}: the manifest, the {len(noted)} files with a note "
            f"(skipped, set aside, …), then {len(rest)} others in the order of the full list.") in text
    assert f"{hidden:,} files are not listed here: every file, with its SHA-256, is in case.sha256 beside this report" in text
    assert f"This incident has {len(rows):,} input files ({sum(r['bytes'] for r in rows):,} bytes, " \
           f"{sum(r['lines'] for r in rows):,} lines)" in text
    # the summary counts every file, per folder and format
    expect = {}
    for r in rows:
        key = (r["path"].rpartition("/")[0] or ".", r["format"])
        f, b, n = expect.get(key, (0, 0, 0))
        expect[key] = (f + 1, b + r["bytes"], n + r["lines"])
    summary = _rows(h, "Per folder and format")
    assert {(r[0], r[1]): tuple(int(x.replace(",", "")) for x in r[2:]) for r in summary} == expect
    assert [r[0] for r in summary] == sorted(r[0] for r in summary)


def test_more_noted_files_than_the_cap_fill_it_in_their_order():
    rows = _inputs(3 * S.MAX_INPUT_ROWS, noted_every=2)
    noted = [r["path"] for r in rows if r["note"]]
    h = S.inputs_table(rows, max_rows=50).replace("<wbr/>", "")
    assert [r[0] for r in _rows(h, "files</h3>")] == ["incident.yaml", *noted[:49]]
    text = re.sub("<[^>]+>", "", h)
    assert f"the manifest, the first 49 of the {len(noted)} files with a note (skipped, set aside, …)." in text
    # no checksum file named: the workbook is where the full list is
    assert f"{len(rows) - 50:,} files are not listed here: the workbook's Incident.inputs lists each one" in text


def test_the_inputs_summary_counts_deep_folders_in_their_ancestor_when_they_are_too_many():
    """A CloudTrail tree has a folder per region and day: one summary row per folder would be a
    long table again."""
    rows = [{"path": "incident.yaml", "format": "manifest", "bytes": 50, "lines": 3, "sha256": "0" * 64}]
    days = [(region, day) for region in ("eu-west-1", "us-east-1") for day in range(1, 31)]
    for region, day in days:
        for k in range(3):
            rows.append({"path": f"AWSLogs/1234/CloudTrail/{region}/2026/09/{day:02d}/f{k}.json", "format": "aws.cloudtrail",
                         "bytes": 1000 + day, "lines": 1, "sha256": "1" * 64})
    rows.append({"path": "/elsewhere/door/s.jsonl", "format": None, "bytes": None, "lines": None, "sha256": None,
                 "note": "skipped: a symbolic link"})
    by = {(r["folder"], r["format"]): r for r in S._inputs_by_folder(pd.DataFrame(rows), max_groups=10).to_dict("records")}
    assert set(by) == {(".", "manifest"), ("/elsewhere/door", "—"),
                       ("AWSLogs/1234/CloudTrail/eu-west-1/2026/09/**", "aws.cloudtrail"),
                       ("AWSLogs/1234/CloudTrail/us-east-1/2026/09/**", "aws.cloudtrail")}
    eu = by[("AWSLogs/1234/CloudTrail/eu-west-1/2026/09/**", "aws.cloudtrail")]
    assert eu["files"] == 3 * len([d for d in days if d[0] == "eu-west-1"])
    assert eu["bytes"] == sum(r["bytes"] for r in rows if "eu-west-1" in r["path"])
    assert by[("/elsewhere/door", "—")]["files"] == 1 and pd.isna(by[("/elsewhere/door", "—")]["bytes"])
    # room for every folder: each in its own
    full = S._inputs_by_folder(pd.DataFrame(rows), max_groups=len(days) + 2)
    assert len(full) == len(days) + 2 and not full["folder"].str.endswith("**").any()


def test_inputs_name_the_checksum_file_and_what_it_leaves_out():
    rows = _inputs(3)
    rows.append({"path": "door/link.jsonl", "format": None, "bytes": None, "lines": None, "sha256": None,
                 "note": "skipped: symbolic link to /x (not followed)"})
    text = re.sub("<[^>]+>", "", S.inputs_table(rows, checksums="a&b.sha256"))
    assert ("a&amp;b.sha256, written beside this report, holds every file's SHA-256 in sha256sum's format (1 file "
            "without a SHA-256 — a symbolic link is listed, not followed — is not in it): to check them all, run "
            "sha256sum -c path/to/a&amp;b.sha256 in the manifest's folder.") in text
    assert "sha256sum -c" not in S.inputs_table(rows)


def _q(source_file, line_no, raw, *, kind="invalid", error="invalid JSON"):
    """A QUARANTINE frame of one row per call of this (concatenate several)."""
    return QUARANTINE.build([dict(source_file=source_file, line_no=line_no, byte_offset=0, kind=kind,
                                  loader="claude-code", error=error, raw=raw)])


def test_quarantine_summary_escapes_raw_lines():
    q = pd.concat([_q("t.jsonl", 4, '{"a": <img src=x onerror=alert(1)>', error="not JSON"),
                   _q("t.jsonl", 9, '{"b":', kind="pending", error="unterminated last line")],
                  ignore_index=True)
    h = S.quarantine_summary(q)
    no_raw_html(h)
    assert "2 input lines could not be used and were set aside" in h and "&lt;img src=x" in h and "pending" in h
    assert "Nothing was set aside: no input line was damaged or unreadable" in S.quarantine_summary(QUARANTINE.empty())


def test_files_no_source_reads_are_named_apart_not_called_invalid_lines():
    """A README in a transcripts folder had been counted among "quarantine entries" in the header
    and listed as an ``invalid`` set-aside input in Quarantine: it is not damaged evidence."""
    unread = QUARANTINE.build([dict(source_file="transcripts/README.md", kind="unread", loader="auto",
                                    error="no source recognised this content")])
    h = S.quarantine_summary(unread)
    text = html.unescape(re.sub("<[^>]+>", "", h))
    assert "Nothing was set aside: no input line was damaged or unreadable" in text
    assert "1 file given for this incident is in no format replaybook reads" in text
    assert "transcripts/README.md" in text and "invalid" not in text and "could not be used" not in text
    both = S.quarantine_summary(pd.concat([_q("t.jsonl", 4, "{"), unread], ignore_index=True))
    text = html.unescape(re.sub("<[^>]+>", "", both))
    assert "1 input line could not be used and was set aside" in text and "whole file" not in text
    assert "Files not read" in text
    head = html.unescape(re.sub("<[^>]+>", "", S.header("t", "i.yaml", quarantine=unread)))
    assert "quarantine entr" not in head and "1 file in no format replaybook reads: not read" in head
    head = html.unescape(re.sub("<[^>]+>", "", S.header("t", "i.yaml", quarantine=pd.concat([_q("t.jsonl", 4, "{"), unread]))))
    assert "1 quarantine entry: input set aside" in head and "1 file in no format replaybook reads" in head


def test_residuals_have_their_own_section_and_the_caveats_point_to_it(frames):
    steps, calls, pairs, sessions = frames
    unclaimed = calls[(calls.door_session == "s2") | (calls.seq == 3)]
    unmatched = steps[steps.call_id == "toolu_lost"]
    h = S.residuals(unclaimed_calls=unclaimed, unmatched_steps=unmatched, unmatched_transcripts=["t9<script>"],
                    sessions=sessions)
    no_raw_html(h)
    assert 'id="residuals"' in h and "Residuals: what the join left unpaired" in h
    assert not any(S.esc(t) in h for t in S.CANNOT_PROVE_TEXT)  # results, not caveats
    caveats = S.cannot_prove()
    assert 'id="cannot-prove"' in caveats and 'href="#residuals"' in caveats
    for t in S.CANNOT_PROVE_TEXT:
        assert S.esc(t) in caveats
    assert "toolu_lost" in h and "{&quot;sql&quot;:&quot;&lt;b&gt;x&lt;/b&gt;&quot;}" in h
    assert "t9&lt;script&gt;" in h
    assert "Door session s2: no transcript agrees" in h
    empty = S.residuals(unclaimed_calls=CALLS.empty(), unmatched_steps=STEPS.empty(), unmatched_transcripts=[],
                           sessions=sessions.iloc[:1])
    assert "None: every door call" in empty and "None is ambiguous or unmatched: every door session is matched to a transcript" in empty
    # no door log at all: not "every door session is matched"
    none = S.residuals(unclaimed_calls=CALLS.empty(), unmatched_steps=STEPS.empty(), unmatched_transcripts=["t1"],
                          sessions=sessions.iloc[:0])
    assert "every door session is matched" not in none and "No door sessions: this incident holds no door" in none
    assert "None: every door" not in none and none.count("No door calls in this incident (none listed, or none read from what was: see Inputs): nothing to compare.") == 2


def test_residuals_say_which_steps_without_a_door_call_their_user_declined(frames):
    """A tool call the user declined never ran, so its missing door call is no lead: the table of
    transcript tool calls with no door call says so for each, from Claude Code's own result — which
    it writes for a call stopped while it ran too, so the note does not claim it never ran."""
    steps, calls, pairs, sessions = frames
    unmatched = steps[steps.call_id.isin(["toolu_lost", "toolu_env"])].copy()
    unmatched["client"] = "claude-code"
    unmatched.loc[unmatched.call_id == "toolu_lost", ["is_error", "result_text"]] = [
        True, "The user doesn't want to proceed with this tool use. The tool use was rejected " + XSS]
    h = S.residuals(unclaimed_calls=CALLS.empty(), unmatched_steps=unmatched, unmatched_transcripts=[],
                    sessions=sessions)
    no_raw_html(h)
    assert "1 of these was declined or stopped by the agent's user" in h
    assert "a call declined when the client asked never ran" in h and "may have reached the door" in h
    assert h.count("declined or stopped by its user") == 1 and "its transcript says" in h
    row = re.search(r"<tr[^>]*>(?:(?!</tr>).)*toolu_lost(?:(?!</tr>).)*</tr>", h, re.S).group(0)
    assert "declined or stopped by its user" in row
    # an error of the tool's own is not a declined call, and no column is added when none is
    unmatched.loc[unmatched.call_id == "toolu_lost", "result_text"] = "Error: no such table"
    h = S.residuals(unclaimed_calls=CALLS.empty(), unmatched_steps=unmatched, unmatched_transcripts=[],
                    sessions=sessions)
    assert "declined" not in h and "its transcript says" not in h


def test_timeline_section_embeds_an_offline_chart(frames):
    steps, calls, pairs, _ = frames
    h = S.timeline_section(steps, calls, pairs)
    assert 'class="replaybook-chart"' in h and h.count("<script") == 2
    assert not re.search(r"<script[^>]*\bsrc\s*=", h)
    assert "<script>alert" not in h and "\\u003cscript\\u003ealert" in h


def test_asked_and_answered_quotes_the_transcript_escaped():
    import replaybook
    from pathlib import Path

    from replaybook.report import sections as S

    inc = replaybook.Incident.load(Path(__file__).resolve().parents[2] / "data" / "demo" / "incident.yaml")
    h = S.asked_and_answered(inc.steps, inc.join.sessions)
    assert h.count("What is the average mpg of the cars in demo/?") == 2
    assert "The average mpg of the cars in demo/ is 19.90." in h  # from the stale Parquet copy
    assert "The average mpg is 20.35 (from cars.xpt)." in h
    steps = inc.steps.copy()
    steps.loc[steps.kind == "user_prompt", "text"] = "<script>alert(1)</script>"
    assert "<script>" not in S.asked_and_answered(steps, inc.join.sessions)


def test_what_happened_comes_conversation_by_conversation_with_its_door_calls_and_the_transcripts_left_out():
    """The demo's first screen showed two join tables before anything about the conversations,
    and said "the agent" where a third, unrelated transcript sat in the incident.  The section
    that opens the report now gives each conversation's question, its door calls (the refused
    one named, with its rule) and its answer, and names the transcript no door session was
    assigned with what it was asked and that its one call was to a built-in tool."""
    import replaybook

    inc = replaybook.Incident.load(Path(__file__).resolve().parents[2] / "data" / "demo" / "incident.yaml")
    h = S.asked_and_answered(inc.steps, inc.join.sessions, calls=inc.calls, unassigned=inc.join.unmatched_transcripts)
    blocks = re.sub(r"</?(p|blockquote|h\d)\b[^>]*>", " ", h)  # (a block's end is a space; inline tags are not)
    text = re.sub(r"\s+", " ", html.unescape(re.sub("<[^>]+>", "", blocks)))
    assert "<h2 id=\"asked\">What each conversation was asked, and what it answered</h2>" in h
    assert ("Each transcript is one conversation, and an incident's transcripts need not be one agent's. The door's "
            "log does not say which conversation made a call") in text
    first = text.index("Door session door-20260913T100005-a1 · transcript 919dc839-23e1-56e5-8bd5-430e87d6a897")
    second = text.index("Door session door-20260913T100052-b7 · transcript 3b4173aa-345d-5382-aff0-c40b872f81ae")
    one, two = text[first:second], text[second:]
    assert ("Asked: What is the average mpg of the cars in demo/? Door calls: 5 — 4 allowed, reaching demo/, "
            "demo/cars.xpt, demo/cars.parquet; 1 refused: read_object reference/.env (#5, rule no-dotenv). "
            "Answered (last text): The average mpg of the cars in demo/ is 19.90.") in one
    assert ("Door calls: 4, all allowed, reaching demo/, demo/cars.xpt. Answered (last text): The average mpg is "
            "20.35 (from cars.xpt).") in two
    assert ("1 transcript no door session was assigned, so it is not among the conversations above: "
            "9c58f26c-cf9c-524b-8de3-1d9c34ca864a (asked “Rename the variables in utils.py”; 1 tool call to built-in "
            "tools only (they never pass through a door)). Its steps are in Transcripts no door session explains.") \
        in two
    assert '<a href="#unassigned">' in h and '<a href="#sessions">' in h
    # without the calls and the unassigned transcripts: the question and the answer alone, as before
    bare = S.asked_and_answered(inc.steps, inc.join.sessions)
    assert "Door calls" not in bare and "no door session was assigned" not in bare


def test_a_conversations_door_calls_name_sessions_cap_the_lists_and_count_asked_calls():
    """Two door sessions of one conversation (the door restarted): each refused call is named with
    its session; past ``named`` objects and refusals, the others are counted; a call a rule asked
    about with no outcome logged is counted apart."""
    rows = [dict(door_session="d1", agent="a", seq=i, ts=s(i), tool="read", object=f"f{i}.csv", decision="allow")
            for i in range(1, 8)]
    rows += [dict(door_session="d2", agent="a", seq=i, ts=s(20 + i), tool="read", object=f"secret{i}",
                  decision="deny", rule="no-secrets") for i in range(1, 4)]
    rows += [dict(door_session="d2", agent="a", seq=9, ts=s(40), tool="write", object="out.csv", decision="ask",
                  rule="ask-first"),
             dict(door_session="d3", agent="a", seq=1, ts=s(50), tool="read", object="x", decision="deny")]
    calls = CALLS.build(rows)
    words = html.unescape(re.sub("<[^>]+>", "", S._door_calls_words(calls, ["d1", "d2"], named=2)))
    assert words == ("Door calls: 11 — 7 allowed, reaching f1.csv, f2.csv and 5 more; 3 refused: read secret1 "
                     "(d2 #1, rule no-secrets); read secret2 (d2 #2, rule no-secrets) and 1 more; 1 on which a rule "
                     "asked the user, the answer not logged.")
    assert html.unescape(re.sub("<[^>]+>", "", S._door_calls_words(calls, ["d3"]))) == \
        "Door calls: 1 — 1 refused: read x (#1)."
    assert S._door_calls_words(calls, ["nothing"]) == "Door calls: none in the door's log."


def test_residuals_name_sessions_a_gateway_did_not_name(frames):
    # a gateway logging no session id gives one synthetic session per client per day: the report
    # must say it may hold several conversations, and list it; named sessions are not listed
    steps, calls, pairs, sessions = frames
    synth = sessions.copy()
    synth.loc[0, "door_session"] = "mcpjungle:claude-code:2026-09-13"
    h = S.residuals(unclaimed_calls=CALLS.empty(), unmatched_steps=STEPS.empty(), unmatched_transcripts=[],
                       sessions=synth)
    assert "Door sessions the gateway did not name" in h
    assert "mcpjungle:claude-code:2026-09-13" in h.replace("<wbr/>", "") and "several conversations" in h
    plain = S.residuals(unclaimed_calls=CALLS.empty(), unmatched_steps=STEPS.empty(), unmatched_transcripts=[],
                           sessions=sessions)
    assert "did not name" not in plain


def test_binary_quarantined_lines_and_control_characters_never_reach_the_html_raw():
    q = pd.concat([_q("junk.jsonl", 1, "\ufffd\x00\x1b\ufffd\ufffd\x01ab"), _q("t.jsonl", 2, '{"a": "bell\x07"')],
                  ignore_index=True)
    h = S.quarantine_summary(q)
    assert "(binary data)" in h and "\x00" not in h and "\x1b" not in h and "\x07" not in h
    assert "bell\\x07" in h  # a stray control character in a text line is shown escaped


def test_bidirectional_controls_cannot_disguise_a_name():
    """U+202E had been written as is: "evil\u202egnp.S7.exe" showed as "evilexe.7S.png" in the
    path, prompt and argument cells."""
    h = S.esc("evil\u202egnp.S7.exe \u2066x\u2069 \u200b \ufeff")
    assert h == "evil\\u202egnp.S7.exe \\u2066x\\u2069 \\u200b \\ufeff"
    assert S.esc("\U0001f468\u200d\U0001f469") == "\U0001f468\u200d\U0001f469"  # (emoji keep their joiner)


def test_quarantine_summary_counts_whole_files_apart_from_lines():
    q = _q("junk.jsonl", None, "\\x00\\x01", error="not a text file (binary data)")
    assert "1 whole file could not be used and was set aside" in S.quarantine_summary(q)
    q = pd.concat([q, _q("t.jsonl", 4, "{", error="not JSON")], ignore_index=True)
    assert "1 input line and 1 whole file could not be used and were set aside" in S.quarantine_summary(q)


def test_session_calls_show_what_the_agent_got_back(frames):
    steps, calls, pairs, _ = frames
    long = "row " * 600  # 2,400 characters: a preview, the rest behind a click, cut at RESULT_LIMIT
    steps = steps.copy()
    steps.loc[steps["seq"] == 1, "result_text"] = long
    calls = calls.copy()
    calls.loc[calls["seq"] == 3, "error"] = "upstream timed out <b>x</b>"
    h = S.session_calls(calls, pairs, "s1", steps=steps)
    no_raw_html(h)
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", h)[1:]
    # the matched call's result, as its transcript recorded it
    assert "<details><summary>" in rows[0] and f">{'row ' * 39}row…</span></summary>" in rows[0]
    assert ("row " * 500 + '<span class="rb-note"> … (cut here: this report shows the first 2,000 of 2,400 '
            "characters") in rows[0] and ("row " * 501) not in rows[0]
    # the refused call: what the client was shown, marked as an error, escaped
    assert '<span class="rb-decision-deny">error:</span>' in rows[1]
    assert "denied &lt;script&gt;alert(&quot;xss&quot;)&lt;/script&gt;" in rows[1]
    # the door's own error for a call; a call no step claims got back nothing the report knows of
    assert "upstream timed out &lt;b&gt;x&lt;/b&gt;" in rows[2] and rows[2].endswith("<td>—</td>")


def _huge_result(steps: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """``steps`` with call ``toolu_a``'s result 200,000 characters of hostile text, as a loader keeps
    it: cut to TEXT_LIMIT characters in the frame, its full size in ``text_bytes`` of the result row."""
    from replaybook._text import truncate

    text, size = truncate(("<b>x</b>" + "P9999,2026-07-01,5\n") * 8000)
    steps = steps.copy()
    steps.loc[steps["call_id"] == "toolu_a", "result_text"] = text
    res = STEPS.build([dict(transcript_id="t1", seq=10, ts=s(1.5), kind="tool_result", call_id="toolu_a",
                            text=text, text_bytes=size)])
    return pd.concat([steps, res], ignore_index=True), size


def test_a_result_cut_in_the_frame_says_so_where_it_ends(frames):
    """A 5 MB result had been shown as its first 2,000 characters, ending mid-line with nothing to
    say that the transcript holds more (the frame's " …[+N chars]" mark was past the report's cut)."""
    from replaybook.join import join_sessions

    steps, calls, pairs, _ = frames
    steps, size = _huge_result(steps)
    assert size == 216_000
    cut = ("(cut here: the transcript holds 216,000 bytes; the frame keeps the first 4,000 characters and this "
           "report shows the first 2,000 — <code>replaybook load steps</code> has the frame's, or the transcript "
           "itself has the whole)")
    h = S.session_calls(calls, pairs, "s1", steps=steps)
    no_raw_html(h)
    row = re.findall(r"<tr[^>]*>(.*?)</tr>", h, re.S)[1]
    assert cut in row and "chars]" not in row
    # the door measured 2,048 bytes for the call: the two sizes are named together
    assert "The door logged 2,048 bytes for this call; the transcript holds 216,000 bytes" in row
    h = S.conversations(steps, calls, join_sessions(steps, calls))
    no_raw_html(h)
    assert cut in h
    h = S.unassigned_transcripts(steps, ["t1"])
    no_raw_html(h)
    assert cut in h
    # a result the frame holds whole, under the report's limit, is not marked
    assert "cut here" not in S.result_cell("short", None, 5) and "cut here" not in S.result_cell("x" * 500, None, 500)
    # the frame's mark alone (a loader that kept no size) still says the text was cut
    assert "(cut here: the transcript holds 7 characters more" in S.result_cell("abc …[+7 chars]")


def test_unassigned_transcripts_show_what_they_called_and_got_back(frames):
    steps = frames[0].copy()
    steps.loc[steps["seq"] == 1, "result_text"] = "32 rows"
    extra = STEPS.build([dict(transcript_id="t1", seq=4, ts=s(6), kind="model_request", text="It is 19.90."),
                         dict(transcript_id="t1", seq=5, ts=s(7), kind="model_request"),  # only called tools
                         dict(transcript_id="t0", seq=0, ts=s(-5), kind="user_prompt", text="earlier")])
    steps = pd.concat([steps, extra], ignore_index=True)
    h = S.unassigned_transcripts(steps, ["t1", "t0"])
    no_raw_html(h)
    assert 'id="unassigned"' in h and "5 rows, 3 tool calls" in h
    assert h.index("Transcript t0") < h.index("Transcript t1")  # earliest first, as on the timeline
    t1 = h[h.index("Transcript t1"):]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", t1)[1:]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in rows]
    # in time order: the prompt (escaped), the calls with what they got back, the model's text
    assert [(c[0], c[2]) for c in cells] == [("0", "user"), ("1", "tool call"), ("2", "tool call"), ("4", "model"),
                                             ("3", "tool call")]
    assert cells[0][3] == "&lt;script&gt;alert(&quot;xss&quot;)&lt;/script&gt;"
    assert "32 rows" in cells[1][4] and "error:" in cells[2][4] and cells[4][4] == "—"
    assert cells[3][3] == "It is 19.90." and cells[4][3] == 'query {&quot;sql&quot;:&quot;&lt;b&gt;x&lt;/b&gt;&quot;}'
    assert S.unassigned_transcripts(steps, []) == ""


def test_a_patch_images_and_a_long_prompt_are_shown_not_dropped():
    """A Codex apply_patch call read "apply_patch" and its result — the patch it sent (free text:
    no arguments) was missing; a prompt with two images said nothing of them; and a long prompt
    was cut at 400 characters with nothing to open.  The patch is in the call's cell, the images
    are counted, and the rest of a long text opens on a click."""
    long = "we see task A " + "x" * 600 + " THE END"
    patch = "*** Begin Patch\n*** Add File: gamma.txt\n+synthetic\n*** End Patch"
    steps = STEPS.build([
        dict(transcript_id="t9", seq=0, ts=s(0), kind="user_prompt", text=long, images=2, text_bytes=len(long)),
        dict(transcript_id="t9", seq=1, ts=s(1), kind="tool_call", tool="apply_patch", tool_raw="apply_patch",
             call_id="c1", text=patch, result_text="Done!", images=0),
        dict(transcript_id="t9", seq=2, ts=s(2), kind="tool_call", tool="view_image", tool_raw="view_image",
             call_id="c2", args_key='{"path":"a.png"}', result_text="", images=1)])
    h = S.unassigned_transcripts(steps, ["t9"])
    no_raw_html(h)
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", h, re.S)[1:]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r, re.S) for r in rows]
    prompt, call, image_call = cells
    assert prompt[3].startswith("<details><summary>we see task A xxx") and '<span class="rb-note">[2 images]</span>' in prompt[3]
    assert "THE END" in prompt[3].split("</summary>", 1)[1]          # the rest, behind the click
    assert "THE END" not in prompt[3].split("</summary>", 1)[0]
    assert call[3] == "apply_patch *** Begin Patch\n*** Add File: gamma.txt\n+synthetic\n*** End Patch"
    assert "Done!" in call[4]
    assert image_call[4].endswith('<br><span class="rb-note">[1 image]</span>')
    assert S.what_cell(None) == "" and S.what_cell("", images=3) == '<span class="rb-note">[3 images]</span>'


def test_a_calls_multi_line_arguments_open_laid_out():
    """A Bash heredoc read as one JSON line full of literal \\n.  The cell keeps the call's
    canonical JSON as its summary, and the click opens the arguments laid out: the text as
    written, line by line; arguments without a line break stay as they are."""
    heredoc = "cat > notes.md <<'EOF'\n# Notes\n- first\nEOF"
    key = json.dumps({"command": heredoc, "timeout": 5}, separators=(",", ":"), sort_keys=True)
    assert S.arguments_laid_out("Bash", key) == ("Bash\ncommand:\n  cat > notes.md <<'EOF'\n  # Notes\n  - first\n"
                                                 "  EOF\ntimeout: 5")
    assert S.arguments_laid_out("Bash", '{"command":"ls -la"}') is None
    assert S.arguments_laid_out("Bash", "not json") is None
    steps = STEPS.build([dict(transcript_id="t8", seq=0, ts=s(0), kind="tool_call", tool="Bash", tool_raw="Bash",
                              call_id="c1", args_key=key, result_text="ok")])
    h = S.unassigned_transcripts(steps, ["t8"])
    cell = re.findall(r"<td[^>]*>(.*?)</td>", re.findall(r"<tr[^>]*>(.*?)</tr>", h, re.S)[1], re.S)[3]
    summary, body = cell.split("</summary>", 1)
    assert summary == "<details><summary>Bash " + html.escape(key)
    assert body.startswith('<pre class="rb-result">Bash\ncommand:\n  cat &gt; notes.md &lt;&lt;&#x27;EOF&#x27;\n  # Notes')


def test_a_transcript_holding_only_a_result_shows_it():
    """A second, damaged copy of a session kept one line of its own: a tool result whose call's
    line is in the other copy.  Its section said "0 rows … Nothing the agent was asked, said or
    called" about a transcript that holds what the agent got back."""
    steps = STEPS.build([dict(transcript_id="nul2", seq=0, ts=s(0), kind="tool_result", tool="list_folder",
                              tool_raw="mcp__door__list_folder", call_id="toolu_011d", is_error=False,
                              text="cars.parquet\ncars.xpt", text_bytes=21, images=0)])
    h = S.unassigned_transcripts(steps, ["nul2"])
    assert "1 row, 0 tool calls" in h and "Nothing the agent was asked" not in h
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", h, re.S)[1:]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r, re.S) for r in rows]
    assert cells[0][2] == "tool result"
    assert cells[0][3] == "list_folder: a result whose call is not in this transcript (tool-use id toolu_011d)"
    assert "cars.parquet\ncars.xpt" in cells[0][4]


def test_conversations_lay_out_what_the_agent_saw_in_order(frames):
    from replaybook.join import join_sessions

    steps, calls, _, _ = frames
    steps = steps.copy()
    steps.loc[steps["seq"] == 1, "result_text"] = "32 rows"
    extra = STEPS.build([dict(transcript_id="t1", seq=4, ts=s(6), kind="model_request", text="It is 19.90."),
                         dict(transcript_id="t1", seq=5, ts=s(8), kind="model_request")])  # only called tools: no row
    steps = pd.concat([steps, extra], ignore_index=True)
    res = join_sessions(steps, calls, max_offset_s=0)
    h = S.conversations(steps, calls, res)
    no_raw_html(h)
    assert 'id="conversation"' in h and "Door session s1 · transcript t1" in h
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", h)[1:]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in rows]
    # in time order: the prompt, two calls (a refusal among them), the model's text, the door's call
    # no step claims (at its time on the transcript's clock), a call of no door server
    assert [(c[0], c[2]) for c in cells] == [("0", "user"), ("1", "tool call"), ("2", "tool call"), ("4", "model"),
                                             ("—", "door (no step)"), ("3", "tool call")]
    cells = [c[1:] for c in cells]  # (the step column checked)
    assert cells[0][2].startswith("&lt;script&gt;")
    assert cells[1][2] == 'read_object {&quot;path&quot;:&quot;a&quot;}' and "32 rows" in cells[1][4]
    assert cells[1][3].startswith("#1 a · allow (allow-demo)")  # the door's own call number, as its tables use
    assert "REFUSED by rule no-dotenv" in cells[2][3] and "error:" in cells[2][4] and 'class="rb-refused"' in h
    assert cells[3][2] == "It is 19.90." and cells[3][4] == ""
    assert cells[5][2] == 'query {&quot;sql&quot;:&quot;&lt;b&gt;x&lt;/b&gt;&quot;}' and cells[5][3] == "not a door tool"
    # whose clock: the door's runs 400 ms later for this session, and its conversation says so (each
    # session's own offset: agents on different machines run on different clocks)
    assert res.offset_ms == 400.0 and res.sessions["offset_ms"].tolist()[0] == 400.0
    text = re.sub("<[^>]+>", "", html.unescape(h))
    assert ("in time order on the transcript's clock; the door's clock reads 400 ms later for this session, so its "
            "table below shows these calls that much later") in text
    assert "Times here are each transcript's own clock." in text
    assert S.conversations(steps, calls.iloc[0:0], join_sessions(steps, calls.iloc[0:0])) == ""


def test_objects_section_opens_what_allowed_calls_reached_and_compares_digests(tmp_path):
    import hashlib

    root = tmp_path / "data"
    (root / "demo").mkdir(parents=True)
    pd.DataFrame({"mpg": [float(i) for i in range(35)]}).to_parquet(root / "demo" / "cars.parquet")
    (root / "demo" / "notes.txt").write_text("AWS_SECRET_ACCESS_KEY=abcd1234abcd1234abcd1234abcd1234abcd1234\nhello\n")
    (root / "reference").mkdir()
    (root / "reference" / ".env").write_text("TOKEN=never-opened\n")
    digest = "sha256:" + hashlib.sha256((root / "demo" / "notes.txt").read_bytes()).hexdigest()
    calls = CALLS.build([
        dict(door_session="s1", seq=1, ts=s(1), tool="query", object="demo/cars.parquet", decision="allow"),
        dict(door_session="s1", seq=2, ts=s(2), tool="read", object="demo/notes.txt", decision="allow",
             object_digest=digest),
        dict(door_session="s1", seq=3, ts=s(3), tool="read", object="reference/.env", decision="deny", rule="no-dotenv"),
        dict(door_session="s1", seq=4, ts=s(4), tool="read", object="../outside.txt", decision="allow"),
        dict(door_session="s1", seq=5, ts=s(5), tool="query", object="demo/cars.parquet", decision="allow",
             object_digest="sha256:" + "0" * 64),
    ])
    h = S.objects_section(calls, root)
    no_raw_html(h)
    assert 'id="objects"' in h and "never-opened" not in h and "reference/.env" not in h  # refused: not opened
    assert "abcd1234abcd1234" not in h  # the preview is redacted
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in re.findall(r"<tr[^>]*>(.*?)</tr>", h.split("<h3>")[0])[1:]]
    by = {re.sub("<[^>]+>", "", r[0]): r for r in rows}
    assert list(by) == ["demo/cars.parquet", "demo/notes.txt", "../outside.txt"]
    assert by["demo/cars.parquet"][3] == "2" and by["demo/cars.parquet"][6] == "35"  # calls, data rows now
    # the file's data rows and the door's rows returned (a CSV read as text: its header too) are
    # told apart, where "rows" beside "rows in the file" read as a change where there was none
    heads = re.findall(r"<th[^>]*>(.*?)</th>", h)
    assert heads[6] == "data rows now" and "rows" not in heads[:6] + heads[7:]
    assert "may differ by one where nothing changed" in h
    assert by["demo/cars.parquet"][9] == "no: it changed"  # the door logged another digest
    assert by["demo/notes.txt"][9] == "yes" and by["demo/notes.txt"][4] == "text"
    assert re.sub("<[^>]+>", "", by["demo/notes.txt"][8]) == digest.removeprefix("sha256:")  # the hash now
    assert by["../outside.txt"][4] == "outside"
    assert "The incident names no data root" in S.objects_section(calls, None)


def test_objects_section_says_what_shows_a_file_changed_since_the_call_that_first_reached_it(tmp_path):
    """The agent read a rule (the door logged 59 bytes), then updated it: the row showed the file
    as it is now (58 bytes) with no word, where the workbook's preview of the read says it changed."""
    root = tmp_path / "data"
    (root / "rules").mkdir(parents=True)
    (root / "rules" / "app.yaml").write_text("x" * 57 + "\n")
    (root / "rules" / "db.yaml").write_text("y" * 19 + "\n")
    (root / "rules" / "old.yaml").write_text("z" * 9 + "\n")
    calls = CALLS.build([
        dict(door_session="s1", seq=1, ts=s(1), tool="read_text_file", object="rules/app.yaml", decision="allow",
             bytes=59),
        dict(door_session="s1", seq=2, ts=s(2), tool="update_deployment_rule", object="rules/app.yaml",
             decision="allow", bytes=38),
        dict(door_session="s1", seq=3, ts=s(3), tool="read_text_file", object="rules/db.yaml", decision="allow",
             bytes=20),
        dict(door_session="s1", seq=4, ts=s(4), tool="read_text_file", object="rules/old.yaml", decision="allow",
             bytes=10),
        dict(door_session="s2", seq=1, ts=s(5), tool="write_file", object="rules/old.yaml", decision="allow"),
    ])
    reached = S.reached_objects(calls, root)
    note = {r["object"]: r["note"] for r in reached.rows}
    assert note == {
        "rules/app.yaml": "Shown as it is on disk now, not as the call read it; the door logged 59 bytes for this "
                          "call; the file is 58 bytes now: it has changed since; a later call wrote to it "
                          "(update_deployment_rule #2 at 10:00:02.000 UTC).",
        "rules/db.yaml": None,  # the size the door logged, no later write: nothing to say
        "rules/old.yaml": "Shown as it is on disk now, not as the call read it; a later call wrote to it (write_file "
                          "#1 in door session s2 at 10:00:05.000 UTC), so it has changed since this call."}
    h = html.unescape(re.sub("<[^>]+>", "", S.objects_section(calls, root, reached=reached)))
    assert "the file is 58 bytes now: it has changed since; a later call wrote to it (update_deployment_rule #2" in h


def test_header_raises_storage_requests_no_door_call_explains():
    import replaybook

    inc = replaybook.Incident.load(Path(__file__).resolve().parents[2] / "data" / "demo" / "incident.yaml")
    h = S.header("t", "/x/incident.yaml", unexplained=inc.access_join.unexplained, calls=inc.calls,
                 per_call=inc.access_join.per_call)
    # "the door's own principal" is said what it is where the report first names it
    assert ('<strong><a href="#access">2 storage requests no door call explains</a></strong> '
            "(1 made with the door's own principal: the cloud identity the door itself uses to reach storage, as the "
            "manifest's principals give it, so the cloud log shows the door's role, not the agent's)") in h
    assert "no door call explains" not in S.header("t", "/x/incident.yaml", unexplained=inc.access_join.unexplained.iloc[:0])
    # the wrong average: which copy each session read last, so which one its figure came from
    o = S.objects_section(inc.calls, inc.data_root)
    assert ("Of these, the one each door session reached last: <code>door-20260913T100005-a1</code> → "
            "<code>demo/cars.parquet</code> (#4, query); <code>door-20260913T100052-b7</code> → "
            "<code>demo/cars.xpt</code> (#4, query). The logs do not say which file a figure came from — a "
            "sub-agent's call counts in its parent's session — so set the answer beside each file's data (the rows "
            "below).") in o
    # the demo's story: the agent was refused reference/.env, and the door's role read it 111 s
    # later, once every door session had ended; it had read as the agent getting round the door
    text = html.unescape(re.sub("<[^>]+>", "", h))
    assert ("1 object the door refused was reached in storage with no door call behind it: "
            "s3://acme-data/reference/.env (GetObject by "
            "arn:aws:sts::123456789012:assumed-role/door-reader/door-analyst, the door's own principal; 111 s after the refusal in door session door-20260913T100005-a1 #5, rule "
            "no-dotenv; after every door session had ended: the last door call ended 111 s before; the door allowed no "
            "call on this object); the logs name the credentials used, not who used them") in text
    assert "anyway" not in text
    # the request's time beside the door sessions: the refusal at 10:01:21.030, the last call's end
    # (door-…-b7 #4) at 10:01:21.330, the read at 10:03:12 (on the door's clock: the offset is under 1 s)
    env = inc.access_join.unexplained.iloc[0]
    assert (env["refused_seq"], round(env["since_refusal_s"], 1), abs(inc.access_join.offset_s) < 1) == (5, 111.0, True)
    assert inc.calls["ts_end"].max() == pd.Timestamp("2026-09-13T10:01:21.330Z")
    a = S.access_section(inc.access_join, inc.access)
    no_raw_html(a)
    top = a.split("<h3>Refused at the door, reached in storage with no door call</h3>")[1].split("<h3>")[0]
    assert "The door refused the agent 1 object, and <b>1 storage request</b> reached it anyway" in top
    cells = [re.sub("<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", top)]
    assert cells[:4] == ["s3://acme-data/reference/.env", "door-20260913T100005-a1 seq 5, rule no-dotenv",
                         "2026-09-13 10:03:12.000Z", "111 s after the refusal"]


def test_copies_of_one_shape_that_disagree_in_a_value_are_named(tmp_path):
    """A stale copy: sales/q3.csv and sales/q3.parquet hold the same regions and columns, but one
    figure differs (AMER 3.9 vs 4.4). Comparing row counts and columns alone had found nothing."""
    root = tmp_path / "data"
    (root / "sales").mkdir(parents=True)
    q3 = pd.DataFrame({"region": ["AMER", "EMEA", "APAC"], "revenue_m": [3.9, 4.1, 2.2]})
    q3.to_csv(root / "sales" / "q3.csv", index=False)
    q3.assign(revenue_m=[4.4, 4.1, 2.2]).to_parquet(root / "sales" / "q3.parquet")
    q3.to_json(root / "sales" / "q2.json", orient="records")  # agrees with q2.parquet
    q3.to_parquet(root / "sales" / "q2.parquet")
    objs = ["sales/q3.csv", "sales/q3.parquet", "sales/q2.json", "sales/q2.parquet"]
    calls = CALLS.build([dict(door_session="s1", seq=i + 1, ts=s(i), tool="read", object=o, decision="allow")
                         for i, o in enumerate(objs)])
    reached = S.reached_objects(calls, root)
    (d,) = reached.disagreements
    assert (d["folder"], d["stem"]) == ("sales", "q3")
    assert d["values_differ"] and not d["rows_differ"] and not d["columns_differ"]
    ((a, b, only_a, only_b),) = d["differences"]
    assert (a, b) == ("sales/q3.csv", "sales/q3.parquet")
    assert only_a.to_dict("records") == [{"region": "AMER", "revenue_m": 3.9}]
    assert only_b.to_dict("records") == [{"region": "AMER", "revenue_m": 4.4}]
    h = re.sub("<[^>]+>", "", S.objects_section(calls, root, reached=reached))
    assert ("sales/q3.csv: 3 rows, first reached by s1 #1; sales/q3.parquet: 3 rows, first reached by s1 #2 — the "
            "same number of rows and the same columns, but different values in some rows") in h
    head = S.header("t", tmp_path / "incident.yaml", disagreements=reached.disagreements)
    facts = [re.sub("<[^>]+>", "", li) for li in re.findall(r"<li>(.*?)</li>", head)]
    assert "2 files the agent reached look like one dataset but hold different values: sales/q3.csv (3 rows), " \
           "sales/q3.parquet (3 rows)" in facts
    # without a data root to read them, only rows and columns are compared
    from replaybook.replay import copies_that_disagree

    assert copies_that_disagree(reached.rows) == []


def test_copies_of_one_dataset_that_disagree_are_named(tmp_path):
    """The demo's wrong average: the agent described cars.xpt (32 rows) and computed from
    cars.parquet (35 rows).  Files of one name in one folder that hold different rows or columns
    are named in the objects section and in the header; agreeing copies, other folders and
    files of other names are not."""
    root = tmp_path / "data"
    (root / "demo").mkdir(parents=True)
    (root / "other").mkdir()
    base = pd.DataFrame({"model": [f"m{i}" for i in range(32)], "mpg": [float(i) for i in range(32)]})
    extra = pd.concat([base, base.head(3)], ignore_index=True)
    extra.to_parquet(root / "demo" / "cars.parquet")
    base.to_json(root / "demo" / "cars.json", orient="records")
    base.to_parquet(root / "demo" / "same.parquet")          # agrees with same.json
    base.to_json(root / "demo" / "same.json", orient="records")
    base[["mpg"]].to_parquet(root / "demo" / "cols.parquet")  # same rows, fewer columns
    base.to_json(root / "demo" / "cols.json", orient="records")
    extra.to_parquet(root / "other" / "cars.parquet")        # another folder: not a copy
    objs = ["demo/cars.json", "demo/cars.parquet", "demo/same.parquet", "demo/same.json",
            "demo/cols.parquet", "demo/cols.json", "other/cars.parquet"]
    calls = CALLS.build([dict(door_session="s1", seq=i + 1, ts=s(i), tool="read", object=o, decision="allow")
                         for i, o in enumerate(objs)])
    reached = S.reached_objects(calls, root)
    got = {(d["folder"], d["stem"]): d for d in reached.disagreements}
    assert sorted(got) == [("demo", "cars"), ("demo", "cols")]
    cars = got[("demo", "cars")]
    assert cars["rows_differ"] and not cars["columns_differ"]
    assert [(o["object"], o["rows"], o["who"]) for o in cars["objects"]] == [
        ("demo/cars.json", 32, "s1 #1"), ("demo/cars.parquet", 35, "s1 #2")]
    cols = got[("demo", "cols")]
    assert cols["columns_differ"] and not cols["rows_differ"]
    assert [o["columns"] for o in cols["objects"]] == [("mpg",), ("model", "mpg")]
    # how they differ, row by row: the Parquet copy holds the first three rows a second time
    ((a, b, only_a, only_b),) = cars["differences"]
    assert (a, b, len(only_a)) == ("demo/cars.json", "demo/cars.parquet", 0)
    assert only_b["model"].tolist() == ["m0", "m1", "m2"]
    ((_, _, ca, cb),) = cols["differences"]
    assert len(ca) == len(cb) == 0  # same rows over "mpg", the one column both have

    h = S.objects_section(calls, root, reached=reached)
    assert h == S.objects_section(calls, root)  # opened again: the same section
    alarm = h.split('<div class="rb-alarm">')[1].split("</div>")[0]
    items = [re.sub("<[^>]+>", "", li) for li in re.findall(r"<li>(.*?)</li>", alarm)]
    # (a sub-agent's call counts in its parent's session: "likely comes from that file" had named
    # the file a sub-agent read last as the source of the main agent's figure)
    last = (". The logs do not say which file a figure came from — a sub-agent's call counts in its parent's "
            "session — so set the answer beside each file's data (the rows below).")
    assert [i.split("demo/cars.parquet holds")[0].split("demo/cols.parquet and")[0] for i in items] == [
        "demo/cars.json: 32 rows, first reached by s1 #1; demo/cars.parquet: 35 rows, first reached by s1 #2. "
        "Of these, the one each door session reached last: s1 → demo/cars.parquet (#2, read)" + last,
        "demo/cols.parquet: 32 rows in 1 column (mpg), first reached by s1 #5; demo/cols.json: "
        "32 rows in 2 columns (model, mpg), first reached by s1 #6. "
        "Of these, the one each door session reached last: s1 → demo/cols.json (#6, read)" + last]
    assert ("demo/cars.parquet holds 3 rows more than demo/cars.json: each is also in demo/cars.json, so these "
            "are repeated rows (the file holds them twice or more):") in items[0]
    assert ("demo/cols.parquet and demo/cols.json hold the same rows over the columns both have: they differ "
            "in their other columns.") in items[1]
    head = S.header("t", tmp_path / "incident.yaml", disagreements=reached.disagreements)
    facts = [re.sub("<[^>]+>", "", li) for li in re.findall(r"<li>(.*?)</li>", head)]
    assert "2 files the agent reached look like one dataset but hold different rows: demo/cars.json (32 rows), " \
           "demo/cars.parquet (35 rows)" in facts
    assert 'href="#objects"' in head

    # nothing to say when the copies agree, and no alarm without any
    same = calls[calls["object"].isin(["demo/same.parquet", "demo/same.json"])]
    assert S.reached_objects(same, root).disagreements == []
    assert "rb-alarm" not in S.objects_section(same, root)
    assert "look like one dataset" not in S.header("t", tmp_path / "incident.yaml")

    # a copy written after the agent read it: its difference may be that write
    reached.storage_writes = [{"object": "demo/cars.json", "first": None, "who": "s1 #1", "ts": None,
                               "principal": "p", "operation": "PutObject", "logged_at": "t.json:1"}]
    alarm = S.objects_section(calls, root, reached=reached).split('<div class="rb-alarm">')[1].split("</div>")[0]
    items = [re.sub("<[^>]+>", "", li) for li in re.findall(r"<li>(.*?)</li>", alarm)]
    assert ("Written after the agent read it: demo/cars.json (see its note below): the rows compared are the files "
            "as they are now, so part of the difference may be that write, not what the agent read.") in items[0]
    assert "Written after" not in items[1]


def test_data_stem_drops_the_format_and_a_compression_suffix():
    from replaybook.replay import _data_stem

    assert [_data_stem(n) for n in ("cars.parquet", "cars.csv.gz", "cars.sas7bdat", "cars", ".env",
                                      "a.b.csv", "x.tar.gz", "v1.2")] == [
        "cars", "cars", "cars", "cars", ".env", "a.b", "x", "v1"]


def test_a_report_where_nothing_matched_says_so(frames):
    """Codex rollouts beside gateway logs of other days: no session has a transcript.  The
    conversation sections had rendered empty, the residuals said 'None: every tool call
    reached the door', and no line said that nothing matched."""
    from replaybook.join import join_sessions

    steps, calls, _, _ = frames
    far = calls.assign(ts=calls["ts"] + pd.Timedelta(days=400))
    res = join_sessions(steps, far, max_offset_s=0)
    assert res.sessions["transcript_id"].isna().all()
    assert "<b>No door session is linked to a transcript</b> (2 door sessions)" in S.join_summary(res.sessions, 60)
    for h in (S.conversations(steps, far, res), S.asked_and_answered(steps, res.sessions)):
        assert "No door session has a transcript assigned" in h and 'href="#unassigned"' in h
    h = S.residuals(unclaimed_calls=res.unclaimed_calls, unmatched_steps=res.unmatched_steps,
                       unmatched_transcripts=res.unmatched_transcripts, sessions=res.sessions)
    assert "Not checked: no transcript is assigned to a door session" in h and "None: every door-bound" not in h
    h = S.clock_offset(res.offset_ms, res.sessions, res.pairs, steps=steps, calls=far)
    assert "the two do not overlap at all" in h and "2026-09-13" in h
    # with a match, the headline counts it
    _, _, _, sessions = frames
    assert "<b>1 of 2 door sessions matched to a transcript</b>." in S.join_summary(sessions, 60)


def test_arguments_a_gateway_logged_but_could_not_compare_are_shown():
    """A refused call's target, in arguments the gateway truncated (args_key NA), had read '—'."""
    t = pd.Timestamp("2025-10-01T12:00:00Z")
    calls = CALLS.build([dict(door_session="g", seq=1, ts=t, tool="read_object", decision="deny", rule="r",
                              arguments={"bucket": "secrets", "key": "keys.txt"}),
                         dict(door_session="g", seq=2, ts=t, tool="list", decision="allow", arguments=None)])
    h = S.refused_calls(calls)
    assert "{&quot;bucket&quot;:&quot;secrets&quot;,&quot;key&quot;:&quot;keys.txt&quot;} (as logged; not compared)" \
        in re.sub("<wbr/>", "", h)
    h = re.sub("<wbr/>", "", S.session_calls(calls, None, "g"))
    assert "(as logged; not compared)" in h and h.count("(as logged; not compared)") == 1  # none for no arguments


def test_what_the_door_logged_instead_of_arguments_is_shown():
    """A refused call whose arguments were not an object (``["/etc/shadow"]``) or too large to log
    had read "—" in both tables: the door's record of its target, or of its size and digest, was
    in the frame and not on the page."""
    t = pd.Timestamp("2026-11-20T14:00:00Z")
    calls = CALLS.build([
        dict(door_session="g", seq=1, ts=t, tool="write_file", decision="deny", rule="door:arguments-too-large",
             arguments=None, arguments_bytes=2_500_000, arguments_digest="sha256:" + "ab" * 32),
        dict(door_session="g", seq=2, ts=t, tool="read_file", decision="deny", rule="door:invalid-arguments",
             arguments=None, arguments_invalid='["/etc/shadow"]'),
        dict(door_session="g", seq=3, ts=t, tool="list", decision="allow", arguments=None)])
    for h in (S.refused_calls(calls), S.session_calls(calls, None, "g")):
        h = html.unescape(re.sub("<wbr/>", "", h))
        assert '["/etc/shadow"] (as logged: not an object, so not compared)' in h
        assert f"not logged: 2,500,000 bytes, too large; sha256:{'ab' * 32} of them, not compared" in h
    h = html.unescape(re.sub("<wbr/>", "", S.session_calls(calls, None, "g")))
    assert h.count("not logged") == 1 and h.count("not an object") == 1  # nothing for a gateway that logs none


def test_arguments_are_shown_as_logged_with_what_the_join_compared():
    """Tables had shown only the canonical text: a reviewer never saw the log's own
    ``{"sql": …, "limit": 1.0}``, nor that the pair matched only after canonical form."""
    t = pd.Timestamp("2025-10-01T12:00:00Z")
    logged = {"sql": "select 1", "limit": 1.0}
    calls = CALLS.build([dict(door_session="g", seq=1, ts=t, tool="query", decision="allow", arguments=logged,
                              args_key=canonical_args(logged)),
                         dict(door_session="g", seq=2, ts=t, tool="list", decision="allow", arguments={"path": "a"},
                              args_key='{"path":"a"}')])
    h = re.sub("<wbr/>", "", S.session_calls(calls, None, "g"))
    assert ("{&quot;sql&quot;:&quot;select 1&quot;,&quot;limit&quot;:1.0} (compared as "
            "{&quot;limit&quot;:1,&quot;sql&quot;:&quot;select 1&quot;})") in h
    assert "<code>{&quot;path&quot;:&quot;a&quot;}</code>" in h  # the same either way: shown once


def test_an_unassigned_transcript_of_built_in_tools_only_is_not_a_lead():
    """A fresh reader took the demo's unrelated transcript (one built-in Read) for a call the door
    should have seen; its heading now says built-in tools never pass through a door."""
    import replaybook

    inc = replaybook.Incident.load(Path(__file__).resolve().parents[2] / "data" / "demo" / "incident.yaml")
    h = S.unassigned_transcripts(inc.steps, inc.join.unmatched_transcripts, sub_agents=inc.join.sub_agents)
    assert "1 tool call, in time order — built-in tools only: they never pass through a door" in h
    mcp = inc.steps.assign(server=inc.steps["server"].fillna("door"))  # the same calls made over MCP
    h = S.unassigned_transcripts(mcp, inc.join.unmatched_transcripts, sub_agents=inc.join.sub_agents)
    assert "built-in tools only" not in h
    # calls a door could have decided, with no door session holding them: the door log of this
    # conversation may be missing — said, where "No door record confirms" had left it unsaid
    assert ("1 tool call, in time order — 1 of them to MCP server door, which no door session among the inputs "
            "holds: if a door stood in front of it, its log of this conversation is missing") in html.unescape(h)


def test_without_storage_map_the_report_says_nothing_could_be_matched(tmp_path):
    """A manifest without storage_map (optional) had made every storage request an alarm,
    "made with the door's own principal" and "no door call on this object", the ones the
    door's calls caused too."""
    import replaybook

    demo = Path(__file__).resolve().parents[2] / "data" / "demo"
    text = (demo / "incident.yaml").read_text()
    text = re.sub(r"storage_map:\n(  .*\n)+", "", text)
    for key in ("transcripts/", "door/", "cloud/", "data/"):
        text = text.replace(f"  - {key}", f"  - {demo}/{key}").replace(f"data_root: {key}", f"data_root: {demo}/{key}")
    (tmp_path / "incident.yaml").write_text(text)
    inc = replaybook.Incident.load(tmp_path / "incident.yaml")
    assert "storage_map" not in inc.manifest
    h = S.header("t", "/x/incident.yaml", unexplained=inc.access_join.unexplained)
    assert '<a href="#access">10 storage requests could not be checked against the door</a>' in h
    assert "no door call explains" not in h
    a = S.access_section(inc.access_join, inc.access)
    assert "<b>No door call's object maps to a storage URI</b>" in a
    assert "no door call&#x27;s object maps to a storage URI (no storage_map entry covers them)" in a


@pytest.mark.parametrize("linked", [False, True], ids=["folder", "folder-via-symlink"])
def test_a_set_aside_line_is_marked_where_it_stood_in_the_conversation(tmp_path, linked):
    """A damaged transcript line had left no mark in the conversation: steps 0, 2, 5, 7 read as
    complete.  Its row now stands where the line did, naming it and why — also when the
    manifest names the transcripts through a symbolic link (the Inputs path is the resolved one,
    so a match by path suffix had lost the row)."""
    import shutil

    import replaybook

    demo = Path(__file__).resolve().parents[2] / "data" / "demo"
    inc_dir = tmp_path / "demo"
    shutil.copytree(demo, inc_dir)
    if linked:
        (inc_dir / "transcripts").rename(inc_dir / "kept")
        (inc_dir / "transcripts").symlink_to("kept")
    tr = inc_dir / "transcripts" / "919dc839-23e1-56e5-8bd5-430e87d6a897.jsonl"
    lines = tr.read_text().splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if '"tool_use"' in ln and "cars.parquet" in ln)
    lines[at] = lines[at][: len(lines[at]) // 2] + "\n"  # the query's call, cut off mid-line
    tr.write_text("".join(lines))
    inc = replaybook.Incident.load(inc_dir / "incident.yaml")
    h = S.conversations(inc.steps, inc.calls, inc.join, quarantine=inc.loaded_quarantine)
    no_raw_html(h)
    sess = h.split("transcript 919dc839")[1].split("<h3")[0]
    cells = [re.sub("<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", sess)]
    marker = next(i for i, c in enumerate(cells) if c.startswith(f"line {at + 1} of 919dc839"))
    assert "was set aside (invalid): invalid JSON" in cells[marker]
    assert "see Quarantine" in cells[marker]
    # it stands before the steps read from later lines: the refused .env read comes after it
    assert any("reference/.env" in c for c in cells[marker:]) and not any("reference/.env" in c for c in cells[:marker])


def test_a_set_aside_door_line_is_marked_in_its_sessions_table(tmp_path):
    """A damaged line of a door session's log showed only under Quarantine; the session's table
    read as complete, calls 1, 2, 4 (seq 3 was the damaged line)."""
    import shutil

    import replaybook

    demo = Path(__file__).resolve().parents[2] / "data" / "demo"
    inc_dir = tmp_path / "demo"
    shutil.copytree(demo, inc_dir)
    log = inc_dir / "door" / "analyst" / "door-20260913T100005-a1.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines[2] = lines[2][:40] + "\n"  # call 3, cut off
    log.write_text("".join(lines))
    inc = replaybook.Incident.load(inc_dir / "incident.yaml")
    h = S.all_session_calls(inc.calls, inc.join.pairs, inc.join.sessions, steps=inc.steps,
                            quarantine=inc.loaded_quarantine)
    no_raw_html(h)
    sess = h.split("Door session door-20260913T100005-a1")[1].split("<h3")[0]
    rows = [[re.sub("<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
            for r in re.findall(r"<tr[^>]*>(.*?)</tr>", sess, re.S)]
    rows = [r for r in rows if r]
    assert [r[0] for r in rows] == ["1", "2", "—", "4", "5"]
    marker = rows[2]
    assert "set aside" in marker
    assert any(c.startswith("line 3 of door-20260913T100005-a1.jsonl was set aside (invalid)") for c in marker)
    assert "4 calls, agent analyst" in sess  # the count stays the calls'


def test_an_incident_of_many_sessions_shows_max_sessions_in_full_and_lists_the_rest():
    """2,620 door sessions wrote 114 MB of call tables: a report no browser opens, whose HTML
    conversion ran for over ten minutes.  Sessions with a refusal come first."""
    rows = [dict(door_session=f"d{i:02d}", agent="a", seq=k, ts=s(i * 10 + k), tool="read_object",
                 args_key='{"path":"x"}', object="x", decision="deny" if (i, k) == (7, 2) else "allow", rule="r")
            for i in range(12) for k in (1, 2)]
    calls = CALLS.build(rows)
    h = S.all_session_calls(calls, None, None, max_sessions=5)
    shown = re.findall(r"<h3[^>]*>Door session (d\d\d)</h3>", h)
    assert shown == ["d07", "d00", "d01", "d02", "d03"]
    rest = h[h.index("7 more door sessions, not shown call by call"):]
    cells = [re.sub("<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", rest)]
    assert cells[:6] == ["d04", "a", "2", "0", "2026-09-13 10:00:41.000Z", "2026-09-13 10:00:42.000Z"]
    assert [c for c in cells if re.fullmatch(r"d\d\d", c)] == ["d04", "d05", "d06", "d08", "d09", "d10", "d11"]


def test_conversations_past_max_sessions_are_named_not_drawn():
    from replaybook.join import join_sessions

    steps = STEPS.build([dict(transcript_id=f"t{i}", seq=0, ts=s(i * 100), kind="tool_call", tool="read_object",
                              tool_raw="mcp__door__read_object", args_key=f'{{"path":"p{i}"}}', call_id=f"toolu_{i}")
                         for i in range(4)])
    calls = CALLS.build([dict(door_session=f"d{i}", agent="a", seq=1, ts=s(i * 100 + 0.3), tool="read_object",
                              args_key=f'{{"path":"p{i}"}}', object=f"p{i}",
                              decision="deny" if i == 2 else "allow", rule="r") for i in range(4)])
    res = join_sessions(steps, calls)
    h = S.conversations(steps, calls, res, max_sessions=2)
    assert re.findall(r"<h3[^>]*>Door session (d\d) · transcript", h) == ["d2", "d0"]
    assert ("2 more conversations not shown here (this report shows 2, sessions with a refused call first): "
            "door sessions d1, d3.") in h


def test_many_sessions_put_the_transcripts_sessions_first_and_fold_the_lonely_ones():
    """At 3,000 door sessions the one session matched to a transcript was not shown call by call
    (49 refused door-only sessions went first), and "How sure is each link?" had 3,002 lines."""
    rows = [dict(door_session=f"d{i:03d}", agent="a", seq=1, ts=s(i), tool="read_object", args_key="{}",
                 object="x", decision="deny" if i % 2 else "allow", rule="r") for i in range(300)]
    calls = CALLS.build(rows)
    sessions = SESSIONS.build([dict(door_session=f"d{i:03d}", agent="a", start=s(i), end=s(i), calls=1,
                                    refused=i % 2, transcript_id="t" if i == 250 else pd.NA,
                                    agreed=1 if i == 250 else 0, transcript_tool_steps=1 if i == 250 else pd.NA,
                                    share=1.0 if i == 250 else float("nan"), runner_up=pd.NA, runner_up_agreed=pd.NA,
                                    margin=1.0 if i == 250 else float("nan"), status="matched" if i == 250 else "unmatched",
                                    offset_ms=float("nan"), unclaimed_calls=0, unmatched_steps=0, method="content")
                               for i in range(300)])
    h = S.all_session_calls(calls, None, sessions, max_sessions=3)
    assert re.findall(r"<h3[^>]*>Door session (d\d+)</h3>", h) == ["d250", "d001", "d003"]
    j = S.join_summary(sessions, 60)
    sure = re.sub("<[^>]+>", "", j[j.index("How sure is each link?"):])
    assert sure.count("door session") < 30
    assert ("299 door sessions agree with no transcript step at all (unmatched): d000, d001, d002, d003, d004, "
            "d005, d006, d007, d008, d009, d010, d011, d012, d013, d014, d015, d016, d017, d018, d019 and 279 more.") \
        in sure


def test_the_header_says_how_many_transcripts_no_session_was_assigned():
    """"3 transcripts" read as three linked; the one assigned to no session was found only far
    down, under Transcripts no door session explains."""
    import replaybook

    inc = replaybook.Incident.load(Path(__file__).resolve().parents[2] / "data" / "demo" / "incident.yaml")
    h = S.header(inc.title, inc.path, steps=inc.steps, calls=inc.calls, sessions=inc.join.sessions)
    assert ('3 transcripts (2 assigned to a door session; <a href="#unassigned">1 to none</a>), '
            "35 transcript events") in h


def test_an_unmatched_session_names_a_clock_further_off_than_the_join_looked():
    """Its sentence had said only 'either its transcript is not among the inputs, or the agent's
    clock was further from the door's than the join looks'."""
    from replaybook.canonical import canonical_args
    from replaybook.join import join_sessions

    steps = STEPS.build([st("t1", i, f"a{i}") for i in range(3)] + [st("t2", 100 + i, f"b{i}") for i in range(3)])
    calls = CALLS.build([ca("s1", i + 0.2, f"a{i}") for i in range(3)]
                        + [ca("s2", 100 + i - 5400.5, f"b{i}") for i in range(3)])
    res = join_sessions(steps, calls)
    assert res.assignments() == {"s1": "t1", "s2": None}
    h = S.join_summary(res.sessions, 60.0, steps=steps, calls=calls, max_offset_s=300.0)
    assert ("Door session s2: no transcript agrees with its 3 calls well enough to be assigned, so nothing here "
            "says which conversation made them; its calls line up with transcript t2 (3 of its 3 calls with "
            "arguments) at a clock offset of −1 h 30 min (door clock behind), further than the join looks "
            "(max_offset_s 300 s): to join them, give that transcript's clock in the manifest (clock_offsets: "
            "{t2: -5400.5}) — a wider max_offset_s widens the search for every transcript, and one whose steps "
            "repeat another agent's calls may still not be found.") in html.unescape(h)
    # without max_offset_s, the sentence stays as it was
    assert "line up with transcript" not in S.join_summary(res.sessions, 60.0, steps=steps, calls=calls)
    # the residuals' sentence for the same session says the same (the report passes both the
    # sessions with_far_clocks gives)
    sess = S.with_far_clocks(res.sessions, steps, calls, max_offset_s=300.0)
    assert sess.set_index("door_session").loc["s2", "far_max_offset_s"] == 5402.0
    r = html.unescape(S.residuals(unclaimed_calls=res.unclaimed_calls, unmatched_steps=res.unmatched_steps,
                                  unmatched_transcripts=res.unmatched_transcripts, sessions=sess))
    assert "its calls line up with transcript t2 (3 of its 3 calls with arguments)" in r
    assert list(S.with_far_clocks(res.sessions, steps, calls, max_offset_s=6000.0).columns) == list(res.sessions.columns)
    # and `replaybook report` prints it among the findings
    f = S.findings(sess, calls, QUARANTINE.empty(), join=res)
    assert f["far_clocks"] == [{"door_session": "s2", "transcript_id": "t2", "offset_s": -5400.5}]
    assert S.findings(res.sessions, calls, QUARANTINE.empty(), join=res)["far_clocks"] == []
    from replaybook.cli import _findings_line

    assert ("door session s2 unmatched: its calls line up with transcript t2 at -5,400.5 s, beyond max_offset_s "
            "(see the report)") in _findings_line(f)


def test_a_continued_conversation_is_shown_once_naming_each_calls_session():
    from replaybook.canonical import canonical_args
    from replaybook.join import join_sessions

    def st(sec, path):
        return dict(transcript_id="t", client="claude-code", seq=int(sec), ts=s(sec), kind="tool_call",
                    tool_raw="mcp__door__read", server="door", tool="read", arguments={"path": path},
                    args_key=canonical_args({"path": path}))

    def ca(sess, sec, path):
        return dict(door_session=sess, agent="analyst", seq=int(sec), ts=s(sec + 0.3), tool="read",
                    arguments={"path": path}, args_key=canonical_args({"path": path}), object=path,
                    decision="allow", rule="r")

    steps = STEPS.build([st(i, f"old{i}") for i in range(3)] + [st(600 + i, f"new{i}") for i in range(3)])
    calls = CALLS.build([ca("A", i, f"old{i}") for i in range(3)] + [ca("B", 600 + i, f"new{i}") for i in range(3)])
    res = join_sessions(steps, calls)
    assert res.sessions.set_index("door_session").loc["B", "continues"] == "A"
    h = html.unescape(S.conversations(steps, calls, res))
    assert h.count("<h3") == 1 and "Door session A, B · transcript t" in h
    assert "the conversation went on in door session B (the door restarted, or the conversation was resumed)" in h
    assert "read {\"path\":\"old0\"}" in h and "door session B #600" in h
    sent = S.confidence_sentence(res.sessions.set_index("door_session").loc["B"].to_dict() | {"door_session": "B"})
    assert sent.startswith("Door session B: continues transcript t, whose earlier calls are door session A's: "
                           "3 of 3 calls agree (on tool and arguments at the same time: likely, not proof), and "
                           "the two sessions ran one after the other")


@pytest.mark.parametrize("ms, words", [(400.0, "400 ms"), (45_300.0, "45.3 s"), (95_300.0, "1 min 35.3 s (95,300 ms)"), (120_000.0, "2 min 0.0 s (120,000 ms)"),
                                       (7_200_400.0, "2 h 0 min (7,200,400 ms)"), (29_468_000.0, "8 h 11 min (29,468,000 ms)")])
def test_a_clock_difference_reads_in_words(ms, words):
    """'the door's clock reads 7,199,500 ms earlier' was hard to read for a machine two hours off."""
    assert S._duration_words(ms) == words


def _offset_case():
    """t1 and the door agree on the clock; t2's machine is two hours ahead (its transcript's
    clock two hours behind the door's); s3 repeats t1's calls an hour later, without its own
    transcript."""
    steps = STEPS.build([st("t1", 10 * i, f"a{i}") for i in range(3)]
                        + [st("t2", 100 + 10 * i, f"b{i}") for i in range(5)])
    calls = CALLS.build([ca("s1", 10 * i + 0.2, f"a{i}") for i in range(3)]
                        + [ca("s2", 100 + 10 * i + 7200.4, f"b{i}") for i in range(5)]
                        + [ca("s3", 3600 + 10 * i + 0.2, f"a{i}") for i in range(3)])
    return steps, calls


def test_a_session_a_wider_max_offset_joined_otherwise_says_so():
    """With max_offset_s 7200 (to reach t2's clock), s1 lost t1 to s3 and its sentence said only
    that no transcript agrees with it."""
    from replaybook.cli import _findings_line
    from replaybook.join import join_sessions

    steps, calls = _offset_case()
    res = join_sessions(steps, calls, max_offset_s=7200)
    sess = S.with_offset_changes(res.sessions, steps, calls, max_offset_s=7200)
    text = html.unescape(S.join_summary(sess, 60.0))
    assert ("Door session s1: no transcript agrees with its 3 calls well enough to be assigned, so nothing here says "
            "which conversation made them. With max_offset_s 300 (the default) it was matched to transcript t1 "
            "(3 agreeing steps, clock offset +0.2 s); at 7200 it is unmatched.") in text
    assert ("With max_offset_s 300 (the default) it was unmatched; at 7200 it is matched to transcript t2 (5 agreeing "
            "steps, clock offset +7,200.4 s): transcript t2 needed the wider search; give its clock instead, "
            "clock_offsets: {t2: 7200.4} in the manifest, and keep max_offset_s at 300, which leaves every other "
            "transcript's search as it was.") in text
    assert text.count("(the default)") == 3
    h = html.unescape(S.header("x", "incident.yaml", steps=steps, calls=calls, sessions=sess))
    assert ("max_offset_s 7200 joined 3 door sessions otherwise than the default (300 s) would</a></strong>: "
            "s1, s3, s2; each one's sentence says how") in h
    f = S.findings(sess, calls, QUARANTINE.empty(), join=res)
    assert [(c["door_session"], c["default_transcript"], c["transcript_id"], c["clock_transcript"],
             c["clock_offset_s"]) for c in f["offset_changes"]] == [
        ("s1", "t1", None, None, None), ("s3", None, "t1", None, None), ("s2", None, "t2", "t2", 7200.4)]
    assert ("door session s1 matched to transcript t1 at max_offset_s 300 (the default), unmatched at 7200 "
            "(see the report)") in _findings_line(f)
    # at the default, or a wider search that changes nothing: no column, no sentence, no finding
    at_default = join_sessions(steps, calls)
    same = S.with_offset_changes(at_default.sessions, steps, calls, max_offset_s=300)
    assert list(same.columns) == list(at_default.sessions.columns)
    assert "(the default)" not in html.unescape(S.join_summary(same, 60.0))
    assert S.findings(same, calls, QUARANTINE.empty(), join=at_default)["offset_changes"] == []
    only = (steps[steps["transcript_id"] == "t1"], calls[calls["door_session"] == "s1"])
    wide_only = join_sessions(*only, max_offset_s=7200)
    assert list(S.with_offset_changes(wide_only.sessions, *only, max_offset_s=7200).columns) == \
        list(wide_only.sessions.columns)


def test_timeline_says_which_way_the_lines_lean_when_clocks_differ(frames):
    steps, calls, pairs, _ = frames
    h = S.timeline_section(steps, calls, pairs, offset_ms=6100.0)
    assert ("Each lane is drawn at its own log's times: the door's clock reads 6.1 s ahead of the transcripts' "
            '(<a href="#offset">clock offset</a>), so a line from a tool call to its door call leans forward by '
            "that much.") in h
    # the storage lane's clock is named only when there is a storage lane
    assert "storage log's clock" not in S.timeline_section(steps, calls, pairs, offset_ms=6100.0, access_offset_s=-5.9)
    note = S._lane_clocks_note(-2_000.0, -5.9)
    assert "the door's clock reads 2.0 s behind the transcripts'" in note and "leans back by that much;" in note
    assert ("the storage log's clock reads 5.9 s behind the door's, so a dashed line from a door call to a storage "
            "request it explains leans back by that much (the access join took the difference off before comparing "
            "times).") in note
    # under a second, the lines' lean is not worth a word
    assert S._lane_clocks_note(750.0, 0.4) == "" and S._lane_clocks_note(None, None) == ""
    assert "Each lane is drawn" not in S.timeline_section(steps, calls, pairs)
    # sessions on clocks of their own (+400 and +2,000 ms): not "leans forward by 1.2 s", the median
    from replaybook.frames import SESSIONS

    two = SESSIONS.build([dict(door_session="s1", transcript_id="t1", offset_ms=400.0, agreed=3),
                          dict(door_session="s2", transcript_id="t2", offset_ms=2000.0, agreed=3)])
    note = S._lane_clocks_note(1200.0, None, two)
    assert ("the door's clock reads from +400 to +2,000 ms off the transcripts', by session (<a href=\"#offset\">clock "
            "offset</a>), so a line from a tool call to its door call leans by its own session's offset") in note
    assert "1.2 s" not in note


def _continued(unmatched: int = 1) -> pd.DataFrame:
    """Two door sessions of one conversation: the door restarted, ``d2`` continues ``d1``'s
    transcript ``t1``; each row carries the transcript's own counts, as the join gives them."""
    return SESSIONS.build([
        dict(door_session="d1", agent="a", start=s(0), end=s(10), calls=2, refused=0, transcript_id="t1", agreed=2,
             transcript_tool_steps=5, share=1.0, margin=2.0, status="matched", offset_ms=300.0, unclaimed_calls=0,
             unmatched_steps=unmatched, method="meta_id"),
        dict(door_session="d2", agent="a", start=s(60), end=s(70), calls=2, refused=0, transcript_id="t1",
             agreed=2, transcript_tool_steps=5, share=1.0, margin=2.0, status="matched", offset_ms=300.0,
             unclaimed_calls=0, unmatched_steps=unmatched, method="meta_id", continues="d1"),
    ])


def test_the_header_counts_a_continued_conversations_unpaired_tool_call_once():
    """The header said "2 door-bound tool calls with no door call" where the residuals listed one:
    a conversation that reached the door in two sessions (a door restart) had its one unmatched
    step summed once per session."""
    sessions = _continued()
    h = S.header("x", "/a/incident.yaml", sessions=sessions)
    assert '<a href="#residuals">Left unpaired by the join</a>: 1 door-bound tool call with no door call' in h
    # with an unclaimed door call in each session too: those are the sessions' own, each counted
    both = sessions.assign(unclaimed_calls=pd.array([1, 2], dtype="Int64"))
    assert ("3 door calls no transcript step claims and 1 door-bound tool call with no door call"
            in S.header("x", "/a/incident.yaml", sessions=both))
    assert S.transcript_total(sessions, "unmatched_steps") == 1
    assert S.transcript_total(sessions, "transcript_tool_steps") == 5
    # two conversations, one unassigned session: each transcript once, NA left out
    other = SESSIONS.build([dict(door_session="d3", calls=1, transcript_id="t2", transcript_tool_steps=3,
                                 unmatched_steps=2, status="matched"),
                            dict(door_session="d4", calls=1, status="unmatched")])
    assert S.transcript_total(pd.concat([sessions, other], ignore_index=True), "unmatched_steps") == 3
    assert S.transcript_total(pd.concat([sessions, other], ignore_index=True), "transcript_tool_steps") == 8
    # the sessions table says the shared counts are the conversation's, not each session's
    note = "door sessions that continue one conversation"
    assert note in S.join_summary(sessions, 60.0) and note not in S.join_summary(sessions.head(1), 60.0)


def _with_sub_agent(steps: pd.DataFrame, parent: str, agent: str = "ab12") -> pd.DataFrame:
    """``steps`` and a sub-agent's transcript (``agent-<agent>``) whose rows name ``parent``."""
    sub = STEPS.build([
        dict(transcript_id=f"agent-{agent}", seq=0, ts=s(2), kind="user_prompt", text="look", agent_id=agent,
             client_session_id=parent),
        dict(transcript_id=f"agent-{agent}", seq=1, ts=s(3), kind="tool_call", tool="read_object",
             tool_raw="mcp__door__read_object", args_key='{"path":"b"}', agent_id=agent, client_session_id=parent),
    ])
    return pd.concat([steps, sub], ignore_index=True)


def test_the_header_counts_a_sub_agent_with_its_parents_conversation(frames):
    """"3 transcripts (2 assigned to a door session; 1 to none)" while the page said no transcript
    was assigned to none: the third was a sub-agent of an assigned transcript."""
    steps, calls, _, sessions = frames
    steps = _with_sub_agent(steps.assign(client_session_id="t1"), "t1")
    h = S.header("x", "/a/incident.yaml", steps=steps, calls=calls, sessions=sessions)
    assert "2 transcripts (1 assigned to a door session, 1 a sub-agent of an assigned one), 6 transcript events" in h
    assert "to none" not in h
    # the join's own sub_agents, given: the same words
    assert "1 a sub-agent of an assigned one)" in S.header("x", "i.yaml", steps=steps, sessions=sessions,
                                                           sub_agents={"agent-ab12": "t1"})
    # a transcript no session was assigned, with a sub-agent of its own: both "to none", as one conversation
    lone = STEPS.build([dict(transcript_id="t9", seq=0, ts=s(40), kind="user_prompt", text="hi")])
    more = _with_sub_agent(pd.concat([steps, lone], ignore_index=True), "t9", agent="cd34")
    h = S.header("x", "/a/incident.yaml", steps=more, sessions=sessions)
    assert ('4 transcripts (1 assigned to a door session, 1 a sub-agent of an assigned one; '
            '<a href="#unassigned">1 to none</a>, and 1 a sub-agent of that one)') in h
    # every transcript assigned a session: no words in brackets
    assert "1 transcript, " in S.header("x", "i.yaml", steps=frames[0], sessions=sessions)


def _two_doors(b_agent: str = "reviewer", b_server: str = "review-gate", b_late: float = 40.0):
    """One transcript whose tools reached two doors: door session A (agent analyst, server
    files) for its first calls, B (``b_agent``, ``b_server``, its clock ``b_late`` seconds
    later than A's) for its later ones — a sub-agent's tools behind a door of their own."""
    from replaybook.canonical import canonical_args
    from replaybook.join import join_sessions

    def st(sec, path, server):
        return dict(transcript_id="t", client="claude-code", seq=int(sec), ts=s(sec), kind="tool_call",
                    tool_raw=f"mcp__{server}__read", server=server, tool="read", arguments={"path": path},
                    args_key=canonical_args({"path": path}))

    def ca(sess, agent, server, sec, path):
        return dict(door_session=sess, agent=agent, server=server, seq=int(sec), ts=s(sec), tool="read",
                    arguments={"path": path}, args_key=canonical_args({"path": path}), object=path,
                    decision="allow", rule="r")

    steps = STEPS.build([st(i, f"old{i}", "files") for i in range(3)]
                        + [st(600 + i, f"new{i}", b_server) for i in range(3)])
    calls = CALLS.build([ca("A", "analyst", "files", i + 0.3, f"old{i}") for i in range(3)]
                        + [ca("B", b_agent, b_server, 600 + i + b_late + 0.3, f"new{i}") for i in range(3)])
    return steps, calls, join_sessions(steps, calls)


def test_a_conversation_that_reached_a_second_door_is_not_called_a_restart():
    """A conversation whose later calls went through another door (another agent, another MCP
    server) had been told as "a door that restarted mid-conversation looks like this", and the
    two sessions' clock offsets as transcripts written on different machines — while both are
    one transcript's, so the doors' clocks differ."""
    steps, calls, res = _two_doors()
    sess = res.sessions.set_index("door_session")
    assert sess.loc["B", "continues"] == "A"
    assert (sess.loc["A", "offset_ms"], sess.loc["B", "offset_ms"]) == (300.0, 40_300.0)
    doors = "agent reviewer, server review-gate, where door session A's calls are agent analyst, server files"
    assert S.other_doors(res.sessions, calls) == {"B": doors}

    j = html.unescape(S.join_summary(res.sessions, res.window_s, steps=steps, calls=calls))
    sent = re.search(r"<li>(Door session B: .*?)</li>", j).group(1)
    assert sent == ("Door session B: continues transcript t, whose earlier calls are door session A's: 3 of 3 calls "
                    "agree (on tool and arguments at the same time: likely, not proof), through a second door — its "
                    f"calls are {doors}: another door (a sub-agent's tools, or another MCP server, behind a door of "
                    "its own) in the same conversation, not a door that restarted.")
    assert "restarted mid-conversation" not in j

    h = re.sub("<[^>]+>", "", html.unescape(S.conversations(steps, calls, res)))
    assert ("the conversation went on in door session B (a second door in the same conversation: B's calls are "
            "agent reviewer, server review-gate), whose calls are named by session") in h
    assert "the door restarted" not in h

    c = re.sub("<[^>]+>", "", html.unescape(S.clock_offset(res.offset_ms, res.sessions, res.pairs)))
    assert ("The sessions' offsets differ, from +300 ms to +40,300 ms: door sessions A (+300 ms) and B (+40,300 ms) "
            "are both transcript t's, written on one clock, so it is the doors' clocks that differ (doors on "
            "different machines, or a door clock set between them). The figure above") in c
    assert "agents on different machines" not in c

    from replaybook.views.session import session_caveats

    assert session_caveats(res, "B", calls=calls)[0] == (
        f"Continues door session A's conversation (transcript t) through a second door: its calls are {doors}.")


def test_a_conversation_through_one_door_still_reads_as_a_restart():
    """The same conversation through one door (same agent, same server): a restart or a
    resumed conversation, as before."""
    steps, calls, res = _two_doors(b_agent="analyst", b_server="files", b_late=0.0)
    assert res.sessions.set_index("door_session").loc["B", "continues"] == "A"
    assert S.other_doors(res.sessions, calls) == {}
    j = html.unescape(S.join_summary(res.sessions, res.window_s, steps=steps, calls=calls))
    assert "a door that restarted mid-conversation looks like this" in j and "second door" not in j
    h = re.sub("<[^>]+>", "", html.unescape(S.conversations(steps, calls, res)))
    assert "the conversation went on in door session B (the door restarted, or the conversation was resumed)" in h


def test_an_otel_mcp_call_the_door_never_logged_is_said_to_be_one(tmp_path):
    # an MCP tools/call span naming no server (no mcp.server.name, no server.address) had been
    # "not a door tool": a call past the door went unreported, and the session counted no tool steps
    import json

    from replaybook.join import join_sessions
    from replaybook.sources.door import load_door
    from replaybook.sources.otel import load_otel

    from conftest import otel_tool_span as span

    (tmp_path / "t.json").write_text(json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [
        span("b000000000000001", 10, "read_file", {"path": "rules.yaml"}),
        span("b000000000000002", 20, "update_rule", {"path": "rules.yaml", "set": {"migrate": True}})]}]}]}))
    (tmp_path / "door").mkdir()
    (tmp_path / "door" / "d1.jsonl").write_text(json.dumps(
        {"ts": "2026-11-30T14:00:10.050Z", "seq": 1, "session": "d1", "agent": "coder", "tool": "read_file",
         "arguments": {"path": "rules.yaml"}, "object": "rules.yaml", "decision": "allow", "rule": "r"}) + "\n")
    steps, calls = load_otel(tmp_path / "t.json").frame, load_door(tmp_path / "door").frame
    res = join_sessions(steps, calls)
    s = res.sessions.iloc[0]
    assert (s.agreed, s.transcript_tool_steps, s.unmatched_steps) == (1, 2, 1)
    text = html.unescape(re.sub("<[^>]+>", "", S.conversations(steps, calls, res)))
    assert "the door never saw this call" in text and "not a door tool" not in text
    assert "not through the door" not in text


def test_an_answer_cut_mid_write_is_named_under_asked_and_answered(tmp_path):
    # the transcript's last line (the final answer) cut mid-write: the report said "no text
    # answer in the transcript" with no pointer to the line set aside; a later cut line under an
    # earlier answer is named too, and a pending line is not called unterminated twice
    import shutil

    import replaybook
    from replaybook.report import sections as S

    demo = Path(__file__).resolve().parents[2] / "data" / "demo"
    shutil.copytree(demo, tmp_path / "demo")
    inc0 = replaybook.Incident.load(tmp_path / "demo" / "incident.yaml")
    tid = inc0.join.sessions["transcript_id"].dropna().iloc[0]
    f = Path(inc0.steps.loc[inc0.steps["transcript_id"] == tid, "source_file"].iloc[0])
    lines = f.read_bytes().split(b"\n")
    assert lines[-1] == b""
    last = max(i for i, ln in enumerate(lines) if b'"type": "text"' in ln or b'"type":"text"' in ln)
    assert b'"assistant"' in lines[last]
    f.write_bytes(b"\n".join(lines[:last]) + b"\n" + lines[last][: len(lines[last]) // 2])  # cut, unterminated
    inc = replaybook.Incident.load(tmp_path / "demo" / "incident.yaml")
    h = S.asked_and_answered(inc.steps, inc.join.sessions, quarantine=inc.loaded_quarantine)
    said = (f"line {last + 1:,} of {f.name} (unterminated last line (still being written?)). "
            "A later answer may be in it — see Quarantine.")
    assert "A later line of the transcript was set aside, after every line read from its file: " + said in h
    assert h.count("see Quarantine") == 1
    assert "set aside" not in S.asked_and_answered(inc.steps, inc.join.sessions)  # (no quarantine given)
    conv = S.conversations(inc.steps, inc.calls, inc.join, quarantine=inc.loaded_quarantine)
    assert f"line {last + 1:,} of {f.name} was set aside: unterminated last line (still being written?)" in conv
    assert "unterminated: still being written?" not in conv


def test_a_sub_agents_step_is_named_as_its_own_in_what_each_call_reached(frames):
    # the parent's step 1 and the sub-agent's step 1 both read "1" in the step column
    steps, calls, pairs, _ = frames
    steps = _with_sub_agent(steps.assign(client_session_id="t1"), "t1")
    calls = pd.concat([calls, CALLS.build([dict(door_session="s1", agent="analyst", seq=4, ts=s(3.3),
                                                tool="read_object", args_key='{"path":"b"}', object="b",
                                                decision="allow")])], ignore_index=True)
    pairs = pd.concat([pairs, PAIRS.build([dict(door_session="s1", transcript_id="agent-ab12", step_seq=1, call_seq=4,
                                                call_row=4, tool="read_object", args_key='{"path":"b"}', step_ts=s(3),
                                                call_ts=s(3.3), delta_ms=300.0, how="content")])], ignore_index=True)
    h = S.session_calls(calls, pairs, "s1", steps=steps)
    heads = re.findall(r"<th[^>]*>(.*?)</th>", h)
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", r) for r in re.findall(r"<tr[^>]*>(.*?)</tr>", h)[1:]]
    step = [re.sub("<[^>]+>", "", r[heads.index("step")]) for r in rows]
    assert step == ["1", "1 (sub-agent ab12)", "2", "—"]
    # without a sub-agent's step among them: plain numbers, as before
    h = S.session_calls(frames[1], frames[2], "s1", steps=frames[0])
    assert "sub-agent" not in h


def test_the_response_the_door_kept_is_set_beside_what_the_transcript_recorded(tmp_path):
    # the report showed only the transcript's record of what the agent got back; the capsule's
    # store holds the door's own copy of each response, which the workbook showed and the
    # report did not — nor whether the two agree
    import shutil

    import replaybook
    from replaybook.views.session import evidence_store

    demo = Path(__file__).resolve().parents[2] / "data" / "capsule-demo"
    shutil.copytree(demo, tmp_path / "cd")
    inc = replaybook.Incident.load(tmp_path / "cd" / "incident.yaml")
    store = evidence_store(inc)[0]
    res = inc.join
    s = res.sessions["door_session"].iloc[0]

    def kept_column(steps, calls=inc.calls):
        h = S.session_calls(calls, res.pairs, s, steps=steps, evidence=store)
        heads = re.findall(r"<th[^>]*>(.*?)</th>", h)
        assert heads[-1] == "response the door kept"
        rows = [re.findall(r"<td[^>]*>(.*?)</td>", r, re.S) for r in re.findall(r"<tr[^>]*>(.*?)</tr>", h, re.S)[1:]]
        return [re.sub("<[^>]+>", "", r[-1]) for r in rows]

    col = kept_column(inc.steps)
    assert [c.split("{")[0] for c in col] == ["kept · same as the transcript"] * 4
    assert "«redacted»" in col[0] and all("sha256:" in c for c in col)  # shown redacted, compared as kept
    # the transcript's record edited: said to differ
    steps = inc.steps.copy()
    i = steps.index[steps["kind"].eq("tool_call") & steps["result_text"].notna()][1]
    steps.loc[i, "result_text"] = '{"owner": "someone-else"}'
    assert sum(c.startswith("kept · differs from the transcript") for c in kept_column(steps)) == 1
    # a digest the store lacks, and an object whose bytes no longer hash to its digest
    calls = inc.calls.copy()
    first = calls.index[(calls["door_session"] == s) & calls["response_digest"].notna()]
    calls.loc[first[0], "response_digest"] = "sha256:" + "0" * 64
    col = kept_column(inc.steps, calls)
    assert col[0] == "not kept (the store lacks it)"
    victim = store.path(str(inc.calls.loc[first[1], "response_digest"]))
    victim.chmod(0o644)
    victim.write_bytes(b'{"tampered": true}')
    assert kept_column(inc.steps)[1].startswith("damaged:")
    # without a store: no such column
    assert "response the door kept" not in S.session_calls(inc.calls, res.pairs, s, steps=inc.steps)


def test_a_session_whose_calls_agree_with_a_taken_transcript_says_so(frames):
    """A gateway log and a door log of the same calls in one manifest: the gateway's session was
    told "either its transcript is not among the inputs, or the agent's clock was further…",
    while the transcript was loaded and agreed — it was assigned to the door's session."""
    steps, calls, pairs, sessions = frames
    gw = CALLS.build([dict(door_session="gw", agent="gateway", seq=1, ts=s(1.42), tool="read_object",
                           decision="allow"),  # (a gateway that logs no arguments)
                      dict(door_session="gw", agent="gateway", seq=2, ts=s(5.42), tool="door_read_object",
                           decision="allow")])
    calls = pd.concat([calls, gw], ignore_index=True)
    sessions = pd.concat([sessions, SESSIONS.build([dict(door_session="gw", agent="gateway", calls=2, refused=0,
                                                         status="unmatched", unclaimed_calls=2)])],
                         ignore_index=True)
    got = S.with_taken_transcripts(sessions, calls, pairs, window_s=60)
    row = got[got["door_session"] == "gw"].iloc[0]
    assert (row["taken_transcript"], row["taken_by"], row["taken_agreed"]) == ("t1", "s1", 2)
    assert got.loc[got["door_session"] == "s1", "taken_transcript"].isna().all()  # (the assigned one: nothing)
    said = S.confidence_sentence(row.to_dict(), 60)
    assert said == ("Door session gw: not assigned a transcript, though its calls agree with transcript t1 (2 of 2), "
                    "which is assigned to door session s1: one transcript is joined to one session — if both logs "
                    "record the same calls (a gateway in front of the door), list one of them in the manifest.")
    assert "not among the inputs" not in said
    # a session that repeats those calls 50 s later (the join trap's second agent) is not the same
    # calls logged twice: it keeps the plain sentence; so does one sharing a single call
    later = gw.assign(door_session="rerun", ts=gw["ts"] + pd.Timedelta(seconds=50))
    one = gw.iloc[:1].assign(door_session="one")
    calls2 = pd.concat([calls, later, one], ignore_index=True)
    sessions2 = pd.concat([sessions, SESSIONS.build([
        dict(door_session="rerun", agent="gateway", calls=2, refused=0, status="unmatched", unclaimed_calls=2),
        dict(door_session="one", agent="gateway", calls=1, refused=0, status="unmatched", unclaimed_calls=1)])],
        ignore_index=True)
    got = S.with_taken_transcripts(sessions2, calls2, pairs, window_s=60).set_index("door_session")
    assert got.loc["gw", "taken_transcript"] == "t1"
    assert pd.isna(got.loc["rerun", "taken_transcript"]) and pd.isna(got.loc["one", "taken_transcript"])


def test_a_tool_and_time_link_does_not_blame_a_gateway_for_arguments_the_door_did_not_log():
    """A session whose calls partly agree on tool and time only had been told "their gateway
    logged no arguments", though the log was the door's own, which had left out arguments too
    large to keep."""
    from replaybook.report.sections import confidence_sentence

    row = {"door_session": "d1", "status": "matched", "transcript_id": "t1", "agreed": 5, "calls": 5,
           "transcript_tool_steps": 5, "share": 1.0, "runner_up": None, "margin": 5, "method": "content,tool_time"}
    s = confidence_sentence(row, 60.0)
    assert ("some calls agree on tool and time only (the log holds no arguments for them: a gateway that logs none, "
            "or calls whose arguments the door did not log, too large or not an object)") in s
    assert "their gateway logged no arguments" not in s
    # nor are those calls said to agree on "same tool and canonical arguments": the log holds none
    assert "5 of 5 calls (100%) agree (same tool and, where the log holds them, canonical arguments, at times" in s
    assert "(same tool and canonical arguments" not in s


def test_a_call_id_numbered_per_answer_gives_each_call_its_own_result_size():
    """A provider that numbers each answer's calls from call_0 (Codex, OTel) gives one id to
    several calls; every call's "what the agent got back" size had been the first call's."""
    from replaybook.report.sections import _result_bytes

    steps = pd.DataFrame({
        "transcript_id": ["t"] * 7 + ["u"] * 2,
        "kind": ["tool_call", "tool_result", "tool_call", "tool_result", "tool_call", "tool_result", "tool_call",
                 "tool_call", "tool_result"],
        "call_id": ["call_0", "call_0", "call_0", "call_0", "call_1", "call_1", "call_0", "call_0", "call_0"],
        "seq": pd.array([0, 1, 2, 3, 4, 5, 6, 1, 0], dtype="Int64"),
        "text_bytes": pd.array([None, 5, None, 6000, None, 7, None, None, 9], dtype="Int64")})
    got = _result_bytes(steps)
    # t: list → 5 bytes, read → 6000, call_1 → 7, a third call_0 not answered → unknown;
    # u: one call whose result the file holds before it (a resumed copy) → that result
    assert got.index.tolist() == [0, 2, 4, 6, 7]
    assert got.astype(object).where(got.notna(), None).tolist() == [5, 6000, 7, None, 9]


def test_asked_and_answered_past_max_sessions_names_the_rest_and_stays_small():
    """The report's first section listed every conversation: at 2,000 door sessions it was 2.7 MB
    of HTML and took 26 s, where every other section shows ``MAX_SESSIONS`` and names the rest.
    It now shows as many as the conversation section does, in its order (a refused call first),
    and names the others with where to see them."""
    from replaybook.join import join_sessions

    n = 7
    steps = STEPS.build([r for i in range(n) for r in (
        dict(transcript_id=f"t{i}", seq=0, ts=s(i * 100 - 1), kind="user_prompt", text=f"question {i}"),
        dict(transcript_id=f"t{i}", seq=1, ts=s(i * 100), kind="tool_call", tool="read_object",
             tool_raw="mcp__door__read_object", server="door", args_key=f'{{"path":"p{i}"}}', call_id=f"toolu_{i}"),
        dict(transcript_id=f"t{i}", seq=2, ts=s(i * 100 + 5), kind="model_request", text=f"answer {i}"))])
    calls = CALLS.build([dict(door_session=f"d{i}", agent="a", seq=1, ts=s(i * 100 + 0.3), tool="read_object",
                              args_key=f'{{"path":"p{i}"}}', object=f"p{i}", decision="deny" if i == 4 else "allow",
                              rule="r") for i in range(n)])
    res = join_sessions(steps, calls)
    h = S.asked_and_answered(steps, res.sessions, calls=calls, max_sessions=3)
    assert re.findall(r"<h3>Door session <code>(d\d)</code> · transcript", h) == ["d4", "d0", "d1"]
    assert "answer 2" not in h and "question 6" not in h
    text = html.unescape(re.sub("<[^>]+>", "", h))
    assert ("4 more conversations not shown here (this report shows 3, sessions with a refused call first): "
            "door sessions d2, d3, d5, d6. The workbook's session view shows any of them.") in text
    # the conversation section shows the same ones, so the two read side by side
    conv = S.conversations(steps, calls, res, max_sessions=3)
    assert re.findall(r"<h3[^>]*>Door session (d\d) · transcript", conv) == ["d4", "d0", "d1"]
    assert S.MAX_SESSIONS == 50 and "max_sessions" in S.asked_and_answered.__code__.co_varnames


def test_asked_and_answered_cuts_a_long_run_of_prompts():
    """Every prompt of a conversation was quoted: an interactive session of 400 prompts put 400
    quotes on the report's first screen.  The first few are quoted and the others counted."""
    steps = STEPS.build([dict(transcript_id="t1", seq=i, ts=s(i), kind="user_prompt", text=f"prompt number {i}")
                         for i in range(400)]
                        + [dict(transcript_id="t1", seq=400, ts=s(400), kind="model_request", text="done")])
    sessions = SESSIONS.build([dict(door_session="d1", agent="a", start=s(0), end=s(1), calls=1, refused=0,
                                    transcript_id="t1", status="matched")])
    h = S.asked_and_answered(steps, sessions)
    assert h.count("<blockquote>") == S.ASKED_PROMPTS + 1  # (the answer's quote)
    assert "prompt number 0" in h and f"prompt number {S.ASKED_PROMPTS - 1}<" in h and "prompt number 399" not in h
    assert (f"and {400 - S.ASKED_PROMPTS:,} more prompts: every one is in "
            '<a href="#conversation">The conversation, in order</a>') in h


def test_an_unassigned_transcripts_sub_agent_calls_count_toward_its_mcp_calls():
    """A conversation whose only own call started a sub-agent (Task), the sub-agent calling the
    door's MCP tool, was said to have made '1 tool call to built-in tools only (they never pass
    through a door)': the sub-agent's file is a transcript of its own, which the note did not
    count.  Its calls are the conversation's, as in Transcripts no door session explains."""
    from replaybook.join import join_sessions

    steps = STEPS.build([
        dict(transcript_id="t2", client_session_id="t2", seq=0, ts=s(0), kind="tool_call", tool="read_object",
             tool_raw="mcp__door__read_object", server="door", args_key='{"path":"a"}', call_id="toolu_a"),
        dict(transcript_id="p1", client_session_id="p1", seq=0, ts=s(100), kind="user_prompt", text="Check the data"),
        dict(transcript_id="p1", client_session_id="p1", seq=1, ts=s(101), kind="tool_call", tool="Task",
             tool_raw="Task", arguments={"prompt": "read the env"}, args_key='{"prompt":"read the env"}',
             call_id="toolu_task"),
        dict(transcript_id="agent-x", client_session_id="p1", agent_id="x", seq=0, ts=s(102), kind="user_prompt",
             text="read the env"),
        dict(transcript_id="agent-x", client_session_id="p1", agent_id="x", seq=1, ts=s(103), kind="tool_call",
             tool="read_object", tool_raw="mcp__door__read_object", server="door", args_key='{"path":".env"}',
             call_id="toolu_env"),
    ])
    calls = CALLS.build([dict(door_session="d1", agent="a", seq=1, ts=s(0.3), tool="read_object",
                              args_key='{"path":"a"}', object="a", decision="allow")])
    res = join_sessions(steps, calls)
    assert res.unmatched_transcripts == ["p1"] and res.sub_agents == {"agent-x": "p1"}
    h = S.asked_and_answered(steps, res.sessions, calls=calls, unassigned=res.unmatched_transcripts,
                             sub_agents=res.sub_agents)
    text = html.unescape(re.sub("<[^>]+>", "", h))
    assert "built-in tools only" not in text
    assert "p1 (asked “Check the data”; 2 tool calls, its sub-agents' among them, 1 of them to an MCP server)" in text


CAVEAT = ("Caveat: The messages below were generated by the user while running local commands. DO NOT respond to "
          "these messages or otherwise consider them in your response unless the user explicitly asks you to.")


def test_the_first_section_quotes_what_the_user_asked_not_claude_codes_local_command_lines():
    """Claude Code writes a local command (/clear, /context, a ``!`` shell command) as user lines:
    a caveat, the command in tags, its output.  Three of ten real transcripts begin so, and the
    first section quoted the caveat as what the conversation was asked ('asked “Caveat: The
    messages below …”'), and an empty prompt as an empty quote.  The command is named as typed,
    the caveat, the output and empty lines are left out (and counted); the conversation section
    still shows every line."""
    lines = [CAVEAT, "<command-name>/clear</command-name>\n  <command-message>clear</command-message>\n"
             "  <command-args></command-args>", "<local-command-stdout>\x1b[1mContext\x1b[22m</local-command-stdout>",
             "<local-command-caveat>" + CAVEAT + "</local-command-caveat>", "<bash-input>uv run ty check</bash-input>",
             "<bash-stdout>warning: unbound</bash-stdout><bash-stderr></bash-stderr>", "  ",
             "<command-message>init is analyzing your codebase…</command-message>\n<command-name>/init</command-name>",
             "What is the average mpg?"]
    rows = [dict(transcript_id=tid, seq=i, ts=s(i), kind="user_prompt", text=x)
            for tid in ("t1", "t9") for i, x in enumerate(lines)]
    rows += [dict(transcript_id="t1", seq=20, ts=s(20), kind="user_prompt", text="", images=1),
             dict(transcript_id="t1", seq=21, ts=s(21), kind="model_request", text="20.35")]
    steps = STEPS.build(rows)
    sessions = SESSIONS.build([dict(door_session="d1", agent="a", start=s(0), end=s(1), calls=1, refused=0,
                                    transcript_id="t1", status="matched")])
    h = S.asked_and_answered(steps, sessions, unassigned=["t9"], prompts=10)
    quotes = [html.unescape(q) for q in re.findall(r"<blockquote>(.*?)</blockquote>", h, re.S)]
    assert quotes == ["/clear", "! uv run ty check", "/init", "What is the average mpg?", "[1 image]", "20.35"]
    assert "Caveat" not in h and "local-command" not in h and "bash-stdout" not in h
    text = re.sub(r"\s+", " ", html.unescape(re.sub("<[^>]+>", "", h)))
    assert ("5 lines Claude Code wrote for local commands (a caveat, a command's output) or left empty are not "
            "quoted here; The conversation, in order shows them.") in text
    assert "t9 (asked “What is the average mpg?”; no tool call)" in text  # (its first words to the agent)


def test_with_no_conversation_paired_the_first_section_still_names_what_each_transcript_was_asked():
    """An incident of transcripts with no door log (or a door log none of them agrees with)
    opened with 'No door session has a transcript assigned' and nothing of what any transcript
    was asked: the note naming them was built and dropped."""
    steps = STEPS.build([dict(transcript_id="t1", seq=0, ts=s(0), kind="user_prompt", text="Rename <b>x</b>"),
                         dict(transcript_id="t1", seq=1, ts=s(1), kind="tool_call", tool="Edit", tool_raw="Edit")])
    lonely = SESSIONS.build([dict(door_session="d1", agent="a", start=s(0), end=s(1), calls=1, refused=0,
                                  status="unmatched")])
    for sessions in (SESSIONS.empty(), None, lonely):
        h = S.asked_and_answered(steps, sessions, unassigned=["t1"])
        text = html.unescape(re.sub("<[^>]+>", "", h))
        assert "No door session has a transcript assigned" in text
        assert ("1 transcript no door session was assigned: t1 (asked “Rename <b>x</b>”; 1 tool call to built-in "
                "tools only (they never pass through a door)). Its steps are in Transcripts no door session "
                "explains.") in text
        assert "<b>x</b>" not in h and 'id="asked"' in h


def test_the_first_section_says_when_a_conversations_door_session_is_an_unproven_link():
    """Two transcripts agree equally with one door session (ambiguous): the first section put the
    session's door calls, a refused one among them, under one transcript's question as if they
    were its own, and only Sessions and the join, further down, said the link is unproven."""
    steps = STEPS.build([dict(transcript_id="t1", seq=0, ts=s(0), kind="user_prompt", text="q1"),
                         dict(transcript_id="t1", seq=2, ts=s(3), kind="model_request", text="a1")])
    calls = CALLS.build([dict(door_session="d1", agent="a", seq=1, ts=s(1), tool="read_object", object=".env",
                              decision="deny", rule="no-dotenv")])
    sessions = SESSIONS.build([dict(door_session="d1", agent="a", start=s(1), end=s(1), calls=1, refused=1,
                                    transcript_id="t1", agreed=1, runner_up="t2", runner_up_agreed=1, margin=0.0,
                                    status="ambiguous")])
    h = S.asked_and_answered(steps, sessions, calls=calls)
    text = re.sub(r"\s+", " ", html.unescape(re.sub("<[^>]+>", " ", h)))
    assert ("Door session d1 · transcript t1 (ambiguous: transcript t2 agrees with the door session as well; "
            "these door calls may be its)") in text
    matched = S.asked_and_answered(steps, sessions.assign(status="matched", margin=1.0), calls=calls)
    assert "ambiguous" not in matched


def test_a_conversations_door_calls_with_no_decision_logged_are_counted():
    """A gateway line with no decision read 'Door calls: 2 — .' (and one allowed call beside such
    a line, '2 — 1 allowed', the other unaccounted for)."""
    def words(*decs):
        c = CALLS.build([dict(door_session="d", agent="a", seq=i + 1, ts=s(i), tool="t", object="o", decision=d)
                         for i, d in enumerate(decs)])
        return S._door_calls_words(c, ["d"])
    assert words(None, None) == "Door calls: 2 — 2 with no decision logged."
    assert words("allow", None) == "Door calls: 2 — 1 allowed, reaching <code>o</code>; 1 with no decision logged."
    assert words("allow", "allow") == "Door calls: 2, all allowed, reaching <code>o</code>."
