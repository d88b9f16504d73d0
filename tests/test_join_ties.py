"""Exact ties in the join's assignment: equal agreement and equal time proximity.

Where two assignments are equally good on both counts, the join reports the one that pairs door
sessions and transcripts in order of their first activity — the earliest door session (first
call) with the earliest transcript (first tool step), ids deciding between equal times — and
calls every session of the tie ``ambiguous`` with margin 0.  The answer must not depend on how
the ids happen to sort nor on the order of the input rows.
"""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest

from replaybook.join import join_sessions
from test_join import calls_frame, steps_frame

A, B, Z = {"path": "a"}, {"path": "b"}, {"path": "zzz"}


def _tied_copies(s_early: str, s_late: str, t_early: str, t_late: str):
    """Two sessions with the same calls at the same times, two transcripts with the same steps:
    every session agrees with every transcript on 2 steps at 0 ms.  Only what comes before tells
    them apart: ``s_early`` first made a call no transcript has (at 1 s), ``t_early`` first made a
    step no door call has (at 2 s)."""
    steps = steps_frame([(t_early, 2, "list", Z, None),
                         (t_early, 10, "read", A, None), (t_early, 20, "list", B, None),
                         (t_late, 10, "read", A, None), (t_late, 20, "list", B, None)])
    calls = calls_frame([(s_early, 1, "ping", {}, None),
                         (s_early, 10, "read", A, None), (s_early, 20, "list", B, None),
                         (s_late, 10, "read", A, None), (s_late, 20, "list", B, None)])
    return steps, calls


@pytest.mark.parametrize("s_names,t_names", list(product([("s1", "s2"), ("s2", "s1")],
                                                         [("t1", "t2"), ("t2", "t1")])))
def test_exact_tie_pairs_the_earliest_session_with_the_earliest_transcript_whatever_the_ids(s_names, t_names):
    (s_early, s_late), (t_early, t_late) = s_names, t_names
    steps, calls = _tied_copies(s_early, s_late, t_early, t_late)
    res = join_sessions(steps, calls, max_offset_s=0)
    assert res.assignments() == {s_early: t_early, s_late: t_late}
    s = res.sessions.set_index("door_session")
    assert s.loc[[s_early, s_late], "margin"].tolist() == [0.0, 0.0]
    assert s.loc[[s_early, s_late], "status"].tolist() == ["ambiguous", "ambiguous"]
    assert s.loc[[s_early, s_late], "agreed"].tolist() == [2, 2]


@pytest.mark.parametrize("seed", range(4))
def test_exact_tie_outcome_does_not_depend_on_the_order_of_input_rows(seed):
    steps, calls = _tied_copies("s2", "s1", "t1", "t2")
    rng = np.random.default_rng(seed)
    steps = steps.iloc[rng.permutation(len(steps))].reset_index(drop=True)
    calls = calls.iloc[rng.permutation(len(calls))].reset_index(drop=True)
    res = join_sessions(steps, calls, max_offset_s=0)
    assert res.assignments() == {"s2": "t1", "s1": "t2"}


@pytest.mark.parametrize("early,late", [("sa", "sb"), ("sb", "sa")])
def test_one_transcript_two_identical_sessions_goes_to_the_earlier_session(early, late):
    steps = steps_frame([("t1", 10, "read", A, None), ("t1", 20, "list", B, None)])
    calls = calls_frame([(early, 1, "ping", {}, None), (early, 10, "read", A, None), (early, 20, "list", B, None),
                         (late, 10, "read", A, None), (late, 20, "list", B, None)])
    res = join_sessions(steps, calls, max_offset_s=0)
    assert res.assignments() == {early: "t1", late: None}
    s = res.sessions.set_index("door_session")
    assert s.loc[early, "status"] == "ambiguous" and s.loc[early, "margin"] == 0.0
    assert s.loc[late, "status"] == "unmatched"


@pytest.mark.parametrize("first,second", [("copy-a", "copy-b"), ("copy-b", "copy-a")])
def test_byte_for_byte_copies_of_a_transcript_go_by_id(first, second):
    """Two copies of one transcript under different ids: same steps, same times — the id decides
    (the one that sorts first), whatever order the copies were read in."""
    rows = [(10, "read", A, None), (20, "list", B, None)]
    steps = steps_frame([(first, *r) for r in rows] + [(second, *r) for r in rows])
    calls = calls_frame([("s1", 10, "read", A, None), ("s1", 20, "list", B, None)])
    res = join_sessions(steps, calls, max_offset_s=0)
    assert res.assignments() == {"s1": "copy-a"}
    assert res.unmatched_transcripts == ["copy-b"]
    assert res.sessions.status.tolist() == ["ambiguous"] and res.sessions.margin.tolist() == [0.0]
