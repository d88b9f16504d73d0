"""A tool call the user approved late still agrees with its door call.

A step's ``ts`` is when the model asked for the call; the door receives it only once the client
runs it, after the user approved it — two minutes later is common.  The step's ``result_ts``
bounds when the call can have reached the door: a call within the window of ``ts``, or after it
and before ``result_ts`` (give or take the window, at most 5 s), agrees with it.
"""

from __future__ import annotations

from datetime import timedelta

import pandas as pd
import pytest

from replaybook.join import join_sessions
from test_join import T0, calls_frame, steps_frame

A, B, C, D = {"path": "a"}, {"path": "b"}, {"path": "c"}, {"path": "d"}


def with_results(steps: pd.DataFrame, result_s: dict[int, float]) -> pd.DataFrame:
    """``steps`` with ``result_ts`` set (seconds after T0) on the rows of ``result_s``."""
    rts = [T0 + timedelta(seconds=result_s[i]) if i in result_s else None for i in range(len(steps))]
    return steps.assign(result_ts=pd.Series(rts, dtype="object").pipe(pd.to_datetime, utc=True)
                        .astype(steps["result_ts"].dtype))


def _late_write():
    steps = with_results(steps_frame([("t1", 0, "read", A, None), ("t1", 10, "read", B, None),
                                      ("t1", 20, "write", C, None), ("t1", 300, "read", D, None)]), {2: 146})
    calls = calls_frame([("s1", 0.3, "read", A, None), ("s1", 10.3, "read", B, None),
                         ("s1", 145, "write", C, None), ("s1", 300.3, "read", D, None)])
    return steps, calls


def test_a_call_approved_two_minutes_late_agrees_with_its_step():
    steps, calls = _late_write()
    res = join_sessions(steps, calls)
    s = res.sessions.iloc[0]
    assert res.assignments() == {"s1": "t1"}
    assert int(s.agreed) == 4 and int(s.unclaimed_calls) == 0 and int(s.unmatched_steps) == 0
    assert res.n_unclaimed_calls == 0 and res.n_unmatched_steps == 0
    late = res.pairs[res.pairs.tool == "write"].iloc[0]
    assert late.how == "content" and late.delta_ms == 125_000.0
    # the wait is no clock: the offsets are read from the pairs within the window of their step
    assert s.offset_ms == 300.0 and res.offset_ms == 300.0
    assert res.pairs.step_result_ts.tolist()[2] == T0 + timedelta(seconds=146)


@pytest.mark.parametrize("result_s", [None, 10.0, 20.0])
def test_without_a_result_time_after_the_step_the_window_of_the_step_alone_decides(result_s):
    """No result time, or one at or before the step's own (a clock that stepped back): nothing
    bounds a wait, so the write's call at 145 s agrees with no step and stays unclaimed."""
    steps, calls = _late_write()
    steps["result_ts"] = steps["result_ts"].where(steps["seq"] < 0)  # (no result time)
    if result_s is not None:
        steps.loc[2, "result_ts"] = T0 + timedelta(seconds=result_s)
    res = join_sessions(steps, calls)
    assert int(res.sessions.iloc[0].agreed) == 3
    assert res.unclaimed_calls.tool.tolist() == ["write"] and res.unmatched_steps.tool.tolist() == ["write"]


@pytest.mark.parametrize("window_s,after_s,agrees", [(60.0, 4.5, True), (60.0, 5.5, False), (60.0, 30.0, False),
                                                    (60.0, 59.5, False), (2.0, 1.5, True), (2.0, 2.5, False)])
def test_a_call_the_door_received_after_the_steps_result_did_not_wait_for_it(window_s, after_s, agrees):
    """The door receives a call before the client writes its result: a call beyond the window of
    the step's time agrees only up to the result, give or take the window but no more than 5 s
    (FAR_PAIR_MS: one clock does not drift further within a session) — the reading far_pairs and
    the report give it.  A call half a minute after the result is another call, left unclaimed."""
    from replaybook.join import far_pairs

    steps, calls = _late_write()
    calls.loc[2, "ts"] = T0 + timedelta(seconds=146 + after_s)
    res = join_sessions(steps, calls, window_s=window_s)
    assert int(res.sessions.iloc[0].agreed) == (4 if agrees else 3)
    assert res.unclaimed_calls.tool.tolist() == ([] if agrees else ["write"])
    assert far_pairs(res.pairs, res.sessions).waited.tolist() == ([True] if agrees else [])


def test_a_call_the_window_before_the_step_still_agrees_and_not_earlier():
    steps, calls = _late_write()
    calls.loc[2, "ts"] = T0 + timedelta(seconds=20 - 59)
    assert int(join_sessions(steps, calls).sessions.iloc[0].agreed) == 4
    calls.loc[2, "ts"] = T0 + timedelta(seconds=20 - 61)
    assert int(join_sessions(steps, calls).sessions.iloc[0].agreed) == 3


def test_tool_and_time_agree_with_a_late_call_the_door_logged_without_arguments():
    steps, calls = _late_write()
    calls["args_key"] = pd.array([None] * len(calls), dtype="string")
    res = join_sessions(steps, calls)
    assert int(res.sessions.iloc[0].agreed) == 4 and res.n_unclaimed_calls == 0
    assert set(res.pairs.how) == {"tool_time"}
    assert res.pairs[res.pairs.tool == "write"].delta_ms.tolist() == [125_000.0]


def test_a_long_running_read_does_not_take_a_later_repeats_call():
    """Two identical reads: the first waits for approval until 130 s (its result at 131 s), the
    second asked at 100 s runs at once (100.3 s).  Each takes its own call: the first the one at
    130 s, though the second's call lies within the first's span too."""
    steps = with_results(steps_frame([("t1", 0, "list", A, None), ("t1", 10, "read", B, None),
                                      ("t1", 100, "read", B, None)]), {1: 131, 2: 101})
    calls = calls_frame([("s1", 0.3, "list", A, None), ("s1", 100.3, "read", B, None),
                         ("s1", 130, "read", B, None)])
    res = join_sessions(steps, calls)
    got = sorted(zip(res.pairs.step_seq, res.pairs.call_seq))
    assert got == [(0, 1), (1, 3), (2, 2)]
    assert res.n_unclaimed_calls == 0 and res.n_unmatched_steps == 0


@pytest.mark.parametrize("calls_at,want", [((10.3, 100.3), [(1, 2), (2, 3)]), ((100.3,), [(2, 2)])])
def test_a_long_running_read_keeps_its_own_call_and_leaves_the_later_repeat_its_own(calls_at, want):
    """Two identical reads, the first long-running: the door received it at once (10.3 s) but its
    result came at 131 s; the second asked at 100 s ran at once.  The later call (100.3 s) lies
    within the first read's span, but the second read is nearer: it keeps it — also where the
    first read's own call is not in the log."""
    steps = with_results(steps_frame([("t1", 0, "list", A, None), ("t1", 10, "read", B, None),
                                      ("t1", 100, "read", B, None)]), {1: 131, 2: 101})
    calls = calls_frame([("s1", 0.3, "list", A, None)] + [("s1", t, "read", B, None) for t in calls_at])
    res = join_sessions(steps, calls)
    assert sorted(zip(res.pairs.step_seq, res.pairs.call_seq)) == [(0, 1), *want]
    assert res.unmatched_steps.seq.tolist() == ([] if len(calls_at) == 2 else [1])
    assert res.sessions.iloc[0].offset_ms == 300.0


def test_a_repeated_step_needs_two_calls_however_long_it_waited():
    steps = with_results(steps_frame([("t1", 0, "list", A, None), ("t1", 10, "read", B, None),
                                      ("t1", 20, "read", B, None)]), {1: 200, 2: 200})
    calls = calls_frame([("s1", 0.3, "list", A, None), ("s1", 150, "read", B, None)])
    res = join_sessions(steps, calls)
    assert int(res.sessions.iloc[0].agreed) == 2 and res.n_unmatched_steps == 1
    # (the one call goes to the step it is nearer: the second, asked 130 s before it, not 140 s)
    assert res.pairs.step_seq.tolist() == [0, 2]


@pytest.mark.parametrize("t2_at,t2_result", [(90, None), (148, 151)])
def test_a_call_within_the_window_of_a_steps_time_is_nearer_than_one_that_waited(t2_at, t2_result):
    """Two transcripts each agree on s1's one write at 120 s (149.7 s, on the transcripts'
    clock): t1's step asked at 0 s and its result came at 150 s — the call lies in that span, so
    it may have waited; t2's asked at 90 s (no result time) or at 148 s (result at 151 s), within
    the window.  A call within the window of a step's time is the usual case; one that waited is
    only possible: it is no nearer than the window's edge, so t2 is the nearer — the link stays
    ambiguous (margin 0), t1's step a tool call with no door call.  (A third agent's session sets
    the clock offset: 300 ms.)"""
    call_at = 120 if t2_at == 90 else 150
    steps = with_results(steps_frame([("t1", 0, "write", C, None), ("t2", t2_at, "write", C, None),
                                      ("t3", 0, "read", A, None), ("t3", 5, "read", B, None),
                                      ("t3", 9, "read", D, None)]), {0: 150 if t2_at == 90 else 200}
                         | ({1: t2_result} if t2_result else {}))
    calls = calls_frame([("s1", call_at, "write", C, None), ("s2", 0.3, "read", A, None),
                         ("s2", 5.3, "read", B, None), ("s2", 9.3, "read", D, None)])
    res = join_sessions(steps, calls)
    assert res.offset_ms == 300.0
    sc = res.scores[res.scores.door_session == "s1"].set_index("transcript_id")
    near = round((call_at - 0.3 - t2_at) * 1000)
    assert sc.loc["t1", "median_abs_delta_ms"] == 60_000.0 and sc.loc["t2", "median_abs_delta_ms"] == near
    assert res.assignments() == {"s1": "t2", "s2": "t3"}
    s = res.sessions.set_index("door_session")
    assert s.loc["s1", "status"] == "ambiguous" and s.loc["s1", "margin"] == 0.0
    assert res.pairs[res.pairs.door_session == "s1"].step_seq.tolist() == [1]


def test_far_pairs_say_plainly_that_a_call_waited():
    from replaybook.join import far_pair_text, far_pairs

    steps, calls = _late_write()
    res = join_sessions(steps, calls)
    far = far_pairs(res.pairs, res.sessions)
    assert far.tool.tolist() == ["write"] and far.off_by.tolist() == [124_700.0] and far.waited.tolist() == [True]
    assert far_pair_text(124_700.0, True) == ("the door received this call 125 s after the agent asked for it — "
                                              "it waited (approval?)")
    # a call logged after its step's result and more than 5 s beyond it did not wait for that step
    late = res.pairs.copy()
    late["step_result_ts"] = late["step_ts"] + pd.Timedelta(seconds=1)
    assert far_pairs(late, res.sessions).waited.tolist() == [False]
    assert far_pairs(late.drop(columns="step_result_ts"), res.sessions).waited.tolist() == [False]


def test_the_report_and_join_say_a_far_pair_waited(tmp_path, capsys):
    import re

    from replaybook.report import sections as S

    steps, calls = _late_write()
    res = join_sessions(steps, calls)
    h = S.clock_offset(res.offset_ms, res.sessions, res.pairs)
    text = re.sub(r"\s+", " ", re.sub("<[^>]+>", "", h))
    assert "1 call reached the door after the agent asked for it and before its result was written" in text
    cells = [re.sub("<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", h[h.index("more than 5 s"):])]
    assert cells[-1] == "the door received this call 125 s after the agent asked for it — it waited (approval?)"
    assert cells[2:4] == ["2", "write"]


@pytest.mark.parametrize("door_args", [True, False])
def test_a_step_the_door_received_at_once_takes_no_other_sessions_call_as_waited(door_args):
    """t1's write reached s1 at once (2 s after the agent asked) and ran long: its result came at
    200 s.  s2, another agent's session (its transcript not given), wrote the same at 150 s, inside
    that span.  The step has its call within the window of its time: it did not wait, and s2's
    write is no pair of it.  s1 stays t1's, sure as before (margin 1); s2 is unmatched, its write
    a door call no step claims — also where the door logged no arguments (tool and time)."""
    steps = with_results(steps_frame([("t1", 20, "write", C, None), ("t3", 0, "read", A, None),
                                      ("t3", 5, "read", B, None), ("t3", 9, "read", D, None)]), {0: 200})
    calls = calls_frame([("s1", 22.3, "write", C, None), ("s2", 150, "write", C, None),
                         ("s3", 0.3, "read", A, None), ("s3", 5.3, "read", B, None), ("s3", 9.3, "read", D, None)])
    if not door_args:
        calls.loc[calls.tool == "write", "args_key"] = pd.NA
    res = join_sessions(steps, calls)
    assert res.assignments() == {"s1": "t1", "s2": None, "s3": "t3"}
    s = res.sessions.set_index("door_session")
    assert s.loc["s1", "status"] == "matched" and s.loc["s1", "margin"] == 1.0
    assert pd.isna(s.loc["s1", "runner_up"]) and pd.isna(s.loc["s2", "runner_up"])
    assert res.scores[["door_session", "transcript_id"]].values.tolist() == [["s1", "t1"], ["s3", "t3"]]
    assert res.unclaimed_calls.door_session.tolist() == ["s2"]


@pytest.mark.parametrize("said", [
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
    "the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how "
    "to proceed.",
    "The user doesn't want to take this action right now. STOP what you are doing and wait for the user to tell "
    "you how to proceed.",
    # a sub-agent's call its user declined (Claude Code 2.1: the sub-agent is told to try another way)
    "Permission for this tool use was denied. The tool use was rejected (eg. if it was a file edit, the new_string "
    "was NOT written to the file). Try a different approach or report the limitation to complete your task.",
    "Permission for this tool use was denied. The tool use was rejected (eg. if it was a file edit, the new_string "
    "was NOT written to the file). The user said:\nnot that table",
])
def test_a_call_its_user_declined_takes_no_call_that_came_while_they_were_asked(said):
    """Claude Code writes its own error result when the user says no: the call never ran, so a door
    call of that session with the same tool and arguments that came while the user was being asked
    is another agent's and stays a call no step claims; the declined step stays without a door
    call (the report says why)."""
    steps, calls = _late_write()
    steps = steps.assign(client="claude-code")
    steps.loc[2, ["is_error", "result_text"]] = [True, said]
    res = join_sessions(steps, calls)
    s = res.sessions.iloc[0]
    assert res.assignments() == {"s1": "t1"} and int(s.agreed) == 3
    assert res.unclaimed_calls["seq"].tolist() == [3] and res.unmatched_steps["seq"].tolist() == [2]
    # an error of the tool's own (the call ran) still waited for its approval
    steps.loc[2, "result_text"] = "Error: refused by rule no-writes"
    assert int(join_sessions(steps, calls).sessions.iloc[0].agreed) == 4
    # another client's wording is not read as Claude Code's
    steps.loc[2, ["client", "result_text"]] = ["codex", said]
    assert int(join_sessions(steps, calls).sessions.iloc[0].agreed) == 4
