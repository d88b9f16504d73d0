"""A door log that repeats a call number within one session (a door that restarted and numbered
its calls from 1 again; two logs merged) must not attach a transcript step to the wrong call.

Session ``s`` has two calls numbered 2: the first allowed, the second (after the restart)
refused.  The transcript made both, one minute apart.  Naming calls by number had shown the
first step as refused (the last call of that number won) and doubled rows in the report's
tables (a merge on the number matched each step to both calls)."""

from datetime import datetime, timedelta, timezone

import pandas as pd

from replaybook.canonical import canonical_args
from replaybook.frames import CALLS, STEPS
from replaybook.join import join_sessions
from replaybook.report import sections as S
from replaybook.views.session import conversation, door_table

T0 = datetime(2026, 9, 13, 10, 0, tzinfo=timezone.utc)
ARGS = {"path": "demo/cars.xpt"}


def _frames():
    steps = STEPS.build([
        dict(transcript_id="t", client="claude-code", seq=i, ts=T0 + timedelta(seconds=sec), kind="tool_call",
             tool_raw=f"mcp__door__{tool}", server="door", tool=tool, call_id=f"toolu_{i}", arguments=args,
             args_key=canonical_args(args), result_text=result)
        for i, (sec, tool, args, result) in enumerate([
            (0, "list_objects", {"path": "demo"}, "cars.xpt"),
            (5, "describe", ARGS, "32 rows, 11 columns"),
            (65, "describe", ARGS, "refused: no-xpt-after-restart"),
        ])])
    # the door's log: an unrelated session first, so a call's row differs from its position in
    # its own session
    calls = CALLS.build([
        dict(door_session=sess, agent="analyst", seq=seq, ts=T0 + timedelta(seconds=sec, milliseconds=300),
             tool=tool, arguments=args, args_key=canonical_args(args), object=args.get("path"),
             decision=decision, rule=rule, rows=rows)
        for sess, seq, sec, tool, args, decision, rule, rows in [
            ("other", 1, 300, "list_objects", {"path": "elsewhere"}, "allow", "r", 1),
            ("s", 1, 0, "list_objects", {"path": "demo"}, "allow", "allow-demo", 1),
            ("s", 2, 5, "describe", ARGS, "allow", "allow-demo", 32),
            ("s", 2, 65, "describe", ARGS, "deny", "no-xpt-after-restart", None),
        ]])
    return steps, calls


def test_pairs_name_each_call_by_its_row():
    steps, calls = _frames()
    res = join_sessions(steps, calls)
    p = res.pairs.sort_values("step_seq")
    assert list(p["call_seq"]) == [1, 2, 2]
    assert list(p["call_row"]) == [1, 2, 3]
    assert str(p["call_row"].dtype) == "Int64"
    # the row names the call: its time is the pair's call_ts
    assert list(calls["ts"].iloc[p["call_row"].tolist()]) == list(p["call_ts"])


def test_conversation_attaches_each_step_to_its_own_call_of_a_repeated_number():
    steps, calls = _frames()
    res = join_sessions(steps, calls)
    conv = conversation(steps, calls, res, "s")
    tool_rows = conv[conv["lane"] == "tool call"]
    assert list(tool_rows["step_seq"]) == [0, 1, 2]
    assert list(tool_rows["call_seq"]) == [1, 2, 2]
    assert list(tool_rows["call_row"]) == [1, 2, 3]
    # the step of the first #2 was allowed; the one after the restart was refused
    assert list(tool_rows["status"]) == ["reached", "reached", "refused"]
    assert list(tool_rows["rule"]) == ["allow-demo", "allow-demo", "no-xpt-after-restart"]
    assert list(tool_rows["rows"].astype("float64").fillna(-1)) == [1, 32, -1]
    assert (conv["lane"] != "door").all()  # every call is claimed: no unclaimed door row


def test_door_table_marks_both_calls_of_a_repeated_number_claimed():
    steps, calls = _frames()
    res = join_sessions(steps, calls)
    t = door_table(calls, res, "s")
    assert list(t["seq"]) == [1, 2, 2]
    assert list(t["claimed"]) == [True, True, True]
    assert list(t["note"]) == ["", "2 calls carry #2", "2 calls carry #2; refused by rule no-xpt-after-restart"]


def test_an_unclaimed_call_of_a_repeated_number_stays_a_door_row():
    steps, calls = _frames()
    steps = steps.iloc[:2].reset_index(drop=True)  # the transcript ends before the restart
    res = join_sessions(steps, calls)
    conv = conversation(steps, calls, res, "s")
    door = conv[conv["lane"] == "door"]
    assert list(door["call_seq"]) == [2] and list(door["call_row"]) == [3]
    assert list(door["status"]) == ["unclaimed"] and list(door["decision"]) == ["deny"]
    tool_rows = conv[conv["lane"] == "tool call"]
    assert list(tool_rows["status"]) == ["reached", "reached"]
    assert list(door_table(calls, res, "s")["claimed"]) == [True, True, False]


def _table_rows(html: str) -> list[str]:
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [r for r in body.split("<tr")[1:]]


def test_report_tables_give_each_call_of_a_repeated_number_its_own_step():
    steps, calls = _frames()
    res = join_sessions(steps, calls)
    html = S.session_calls(calls, res.pairs, "s", steps=steps)
    rows = _table_rows(html)
    assert len(rows) == 3  # not 5: a merge on the number had matched each #2 to both steps
    assert "32 rows, 11 columns" in rows[1] and "no-xpt-after-restart" not in rows[1]
    assert "refused: no-xpt-after-restart" in rows[2] and "32 rows, 11 columns" not in rows[2]
    refused = _table_rows(S.refused_calls(calls, res.pairs, steps=steps))
    assert len(refused) == 1
    assert "toolu_2" in refused[0] and "toolu_1" not in refused[0]


def test_pairs_rows_follow_the_frame_given_even_with_a_gapped_index():
    steps, calls = _frames()
    calls.index = pd.Index([10, 20, 30, 40])  # a filtered or concatenated frame keeps its labels
    res = join_sessions(steps, calls)
    conv = conversation(steps, calls, res, "s")
    tool_rows = conv[conv["lane"] == "tool call"]
    assert list(tool_rows["call_row"]) == [1, 2, 3]
    assert list(tool_rows["status"]) == ["reached", "reached", "refused"]


def test_report_session_table_keeps_a_restarted_doors_runs_in_time_order():
    """By number, a restarted door's two runs interleaved (1, 1, 2, 2 …) with nothing said."""
    steps, calls = _frames()
    res = join_sessions(steps, calls)
    html = S.session_calls(calls, res.pairs, "s", steps=steps)
    rows = _table_rows(html)
    times = [r.split("</td>")[1] for r in rows]
    assert times == sorted(times) and len(rows) == 3
    assert ("3 calls, agent analyst; #2 is carried by more than one call: the door restarted and numbered its "
            "calls from 1 again, or its logs were merged — the rows are in time order, and a number alone does "
            "not name one call") in html
