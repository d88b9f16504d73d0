"""The clock offset the join applies never exceeds max_offset_s, and the window on top of it
joins nothing silently beyond it."""
from datetime import datetime, timedelta, timezone

import pytest

from replaybook.canonical import canonical_args
from replaybook.frames import CALLS, STEPS
from replaybook.join import far_clocks, join_sessions

T0 = datetime(2026, 9, 13, 10, 0, tzinfo=timezone.utc)
KEYS = [("list_folder", {"path": "demo/"}), ("describe", {"path": "demo/cars.sas7bdat"}),
        ("summarise", {"path": "demo/cars.sas7bdat", "columns": ["mpg"]}), ("query", {"path": "demo/c.parquet"})]


def frames(skews: dict[str, float], gap: float = 50.0, sessions: int | None = None):
    """Door sessions s0, s1, … each making the same 4 calls 10 s apart, ``gap`` s after the
    previous session; transcript ``t<i>`` is session i's, its clock ``skews[t<i>]`` s behind the
    door's (door − transcript), each call reaching the door 0.4 s after its step."""
    steps, calls = [], []
    n = sessions if sessions is not None else len(skews)
    for i in range(n):
        for j, (tool, args) in enumerate(KEYS):
            t = i * gap + 2 + 10 * j
            calls.append(dict(door_session=f"s{i}", agent="analyst", seq=j + 1, ts=T0 + timedelta(seconds=t + 0.4),
                              tool=tool, arguments=args, args_key=canonical_args(args), object=args["path"],
                              decision="allow", rule="r", meta_call_id=None))
            if f"t{i}" in skews:
                steps.append(dict(transcript_id=f"t{i}", client="claude-code", seq=len(steps),
                                  ts=T0 + timedelta(seconds=t - skews[f"t{i}"]), kind="tool_call",
                                  tool_raw=f"mcp__door__{tool}", server="door", tool=tool, call_id=None,
                                  arguments=args, args_key=canonical_args(args)))
    return STEPS.build(steps), CALLS.build(calls)


def test_a_clock_beyond_max_offset_is_not_reached_through_the_window_of_a_neighbouring_session():
    """Only s1's transcript, 400 s behind: its steps lie 350.4 s from s0's calls, which the
    range read for the offset (max_offset_s + the window) reached, so s0 took s1's transcript at
    +350.4 s with no word of the limit.  Now nothing joins, and the hint names s1 and t1."""
    steps, calls = frames({"t1": 400.0}, sessions=2)
    res = join_sessions(steps, calls)
    assert res.assignments() == {"s0": None, "s1": None}
    assert res.unmatched_transcripts == ["t1"]
    # t1 lines up with s0 at +350.4 s as well as with s1 at +400.4 s: one transcript, one hint,
    # and the other session named, since the times alone cannot tell which is right
    far = far_clocks(steps, calls, res.sessions, max_offset_s=300)
    assert len(far) == 1 and far["transcript_id"].tolist() == ["t1"]
    other = {"s0": "door session s1 (+400.4 s)", "s1": "door session s0 (+350.4 s)"}
    assert far["ambiguous_with"].tolist() == [other[far["door_session"].iat[0]]]


def test_the_far_clock_hint_names_each_sessions_own_transcript_one_to_one():
    """Two sessions with the same calls 50 s apart, both transcripts an hour behind: s1 lines up
    with t0 at −3549.6 s as fully as with t1 at −3599.6 s, and the hint named t0 (the first by
    name) for both; following it joins the wrong transcript.  Both at the offset they share."""
    steps, calls = frames({"t0": -3600.0, "t1": -3600.0})
    res = join_sessions(steps, calls)
    far = far_clocks(steps, calls, res.sessions, max_offset_s=300)
    assert far[["door_session", "transcript_id"]].values.tolist() == [["s0", "t0"], ["s1", "t1"]]
    assert far["offset_ms"].tolist() == [pytest.approx(-3599600.0)] * 2
    assert far["ambiguous_with"].isna().all()


def test_both_transcripts_400_s_off_are_not_joined_at_the_limit_300():
    steps, calls = frames({"t0": 400.0, "t1": 400.0})
    res = join_sessions(steps, calls)
    assert res.assignments() == {"s0": None, "s1": None}
    far = far_clocks(steps, calls, res.sessions, max_offset_s=300)
    assert far[["door_session", "transcript_id"]].values.tolist() == [["s0", "t0"], ["s1", "t1"]]
    # given the clock, both join there
    res = join_sessions(steps, calls, clock_offsets={"t0": 400.4, "t1": 400.4})
    assert res.assignments() == {"s0": "t0", "s1": "t1"}
    assert res.notes == []


def test_a_clock_just_beyond_the_limit_is_hinted_not_left_unexplained():
    """330 s off, limit 300: within limit + window, so the hint (which looked only beyond
    max_offset_s + window_s) said nothing while the join did not reach it either."""
    steps, calls = frames({"t0": 330.0})
    res = join_sessions(steps, calls)
    assert res.assignments() == {"s0": None}
    far = far_clocks(steps, calls, res.sessions, max_offset_s=300)
    assert far["transcript_id"].tolist() == ["t0"] and far["offset_ms"].tolist() == [pytest.approx(330400.0)]


def test_a_session_joined_within_the_window_beyond_the_limit_is_named_in_the_notes():
    """t0 at 290 s sets the offset (the nearer of two equally full spans); t1, 340 s off, lines
    up within the 60 s window of it and joins s1 at +340.4 s: allowed, but never silently."""
    steps, calls = frames({"t0": 290.0, "t1": 340.0})
    res = join_sessions(steps, calls)
    assert res.assignments() == {"s0": "t0", "s1": "t1"}
    off = res.sessions.set_index("door_session")["offset_ms"]
    assert off["s1"] == pytest.approx(340400.0)
    assert len(res.notes) == 1
    assert res.notes[0].startswith("door session s1 was joined to transcript t1 at a clock offset of +340.4 s, "
                                   "beyond max_offset_s 300: the offset applied was +290.4 s")
    assert res.to_dict()["notes"] == res.notes


@pytest.mark.parametrize("skew", [250.0, -250.0])
def test_clocks_within_the_limit_still_join(skew):
    steps, calls = frames({"t0": skew, "t1": skew})
    res = join_sessions(steps, calls)
    assert res.assignments() == {"s0": "t0", "s1": "t1"}
    assert res.offset_ms == pytest.approx(skew * 1000 + 400)
    assert res.notes == []


def test_the_tool_use_ids_offset_is_not_applied_to_the_content_match_beyond_the_limit():
    """The ids' pairs say 400 s; the content match of the other transcript (no ids) may not take
    that offset, since max_offset_s is 300."""
    steps, calls = frames({"t0": 400.0, "t1": 400.0})
    steps = steps.copy()
    calls = calls.copy()
    ids = [f"toolu_{j}" for j in range(4)]
    steps.loc[steps["transcript_id"] == "t0", "call_id"] = ids
    calls.loc[calls["door_session"] == "s0", "meta_call_id"] = ids
    res = join_sessions(steps, calls)
    assert res.assignments() == {"s0": "t0", "s1": None}
    assert res.sessions.set_index("door_session").loc["s0", "method"] == "meta_id"
