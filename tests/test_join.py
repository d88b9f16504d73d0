import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest

from replaybook.canonical import canonical_args
from replaybook.errors import JoinError
from replaybook.frames import CALLS, STEPS
from replaybook.join import join_sessions
from replaybook.sources.claude_code import load_claude_code
from replaybook.sources.door import load_door

FIX = Path(__file__).resolve().parent / "fixtures"
T0 = datetime(2026, 9, 13, 10, 0, tzinfo=timezone.utc)


def steps_frame(rows):
    out = []
    for i, (tid, sec, tool, args, call_id) in enumerate(rows):
        out.append(dict(transcript_id=tid, client="claude-code", seq=i, ts=T0 + timedelta(seconds=sec),
                        kind="tool_call", tool_raw=f"mcp__door__{tool}", server="door", tool=tool,
                        call_id=call_id, arguments=args, args_key=canonical_args(args)))
    return STEPS.build(out)


def calls_frame(rows):
    out = []
    for i, (sess, sec, tool, args, meta) in enumerate(rows):
        out.append(dict(door_session=sess, agent="analyst", seq=i + 1, ts=T0 + timedelta(seconds=sec),
                        tool=tool, arguments=args, args_key=canonical_args(args), object=args.get("path"),
                        decision="allow", rule="r", meta_call_id=meta))
    return CALLS.build(out)


def test_join_trap_case_gives_each_session_its_own_transcript():
    expected = json.loads((FIX / "join_trap" / "expected.json").read_text())
    steps = load_claude_code(FIX / "join_trap" / "transcripts").frame
    calls = load_door(FIX / "join_trap" / "door").frame
    res = join_sessions(steps, calls)
    assert res.assignments() == expected["assignments"]
    assert res.unmatched_transcripts == expected["unmatched_transcripts"]
    s = res.sessions.set_index("door_session")
    assert {k: int(s.loc[k, "agreed"]) for k in s.index} == expected["agreed_steps"]
    # the seed's rule (each session takes its best raw agreement) ties at 3 for session b
    sc = res.scores[res.scores.door_session == "door-sess-b"]
    assert sorted(sc.agreed.tolist()) == [3, 3]
    assert s.loc["door-sess-b", "runner_up"] == "11111111-aaaa-4aaa-8aaa-111111111111"
    assert s.loc["door-sess-b", "runner_up_agreed"] == 3
    # giving b the first transcript would cost 2 agreeing steps overall
    assert s.loc["door-sess-b", "margin"] == 2.0
    assert list(s.status) == ["matched", "matched"]
    assert s.loc["door-sess-a", "share"] == 1.0
    assert s.loc["door-sess-a", "refused"] == 1
    # the door's clock is 400 ms ahead of the transcripts' in this case
    assert res.offset_ms == pytest.approx(400.0)
    assert (res.pairs.delta_ms == 400.0).all() and len(res.pairs) == 8
    assert res.unclaimed_calls.empty and res.unmatched_steps.empty


def test_meta_tool_use_id_decides_over_content_and_time():
    steps = steps_frame([("t1", 0, "read", {"path": "a"}, "toolu_A"), ("t2", 1, "read", {"path": "a"}, "toolu_B")])
    # the door logged toolu_B's id; the times favour t1
    calls = calls_frame([("s1", 0.1, "read", {"path": "a"}, "toolu_B")])
    res = join_sessions(steps, calls)
    assert res.assignments() == {"s1": "t2"}
    assert res.sessions.iloc[0].method == "meta_id"
    assert res.pairs.iloc[0].how == "meta_id"


def test_door_ids_no_transcript_has_are_counted_per_session():
    """A session whose door logged the client's tool-use ids, none of which a loaded transcript
    has, is unmatched for a reason the join can state: its transcript is not among the inputs."""
    steps = steps_frame([("t1", 0, "read", {"path": "a"}, "toolu_A"), ("t1", 1, "read", {"path": "b"}, "toolu_B")])
    calls = calls_frame([("s1", 0.1, "read", {"path": "a"}, "toolu_A"), ("s1", 1.1, "read", {"path": "b"}, None),
                         ("s2", 5.0, "list", {"path": "x"}, "toolu_X"), ("s2", 6.0, "list", {"path": "y"}, "toolu_Y"),
                         ("s2", 7.0, "list", {"path": "x"}, "toolu_X"), ("s3", 9.0, "read", {"path": "q"}, None)])
    s = join_sessions(steps, calls).sessions.set_index("door_session")
    assert s["status"].to_dict() == {"s1": "matched", "s2": "unmatched", "s3": "unmatched"}
    # a repeated id counts once per call that logged it; a call with no logged id never counts
    assert s["unknown_ids"].tolist() == [0, 3, 0]
    assert str(s["unknown_ids"].dtype) == "Int64"


def test_a_transcript_on_another_machines_clock_takes_its_own_offset():
    """Two agents on two machines whose clocks differ from the door's by +30 s and −40 s: the
    common offset (+30 s) left the second one's session unmatched, 70 s off, past the window."""
    st, ca = [], []
    for i in range(6):
        st.append(("t1", i * 10, "read", {"path": f"a{i}"}, None))
        ca.append(("s1", i * 10 + 30, "read", {"path": f"a{i}"}, None))
    for i in range(4):
        st.append(("t2", 200 + i * 10, "read", {"path": f"b{i}"}, None))
        ca.append(("s2", 200 + i * 10 - 40, "read", {"path": f"b{i}"}, None))
    res = join_sessions(steps_frame(st), calls_frame(ca))
    s = res.sessions.set_index("door_session")
    assert res.assignments() == {"s1": "t1", "s2": "t2"}
    assert s["offset_ms"].tolist() == [30000.0, -40000.0] and s["agreed"].tolist() == [6, 4]
    assert s["status"].tolist() == ["matched", "matched"]
    assert sorted(res.pairs.loc[res.pairs.door_session == "s2", "delta_ms"].unique()) == [-40000.0]
    # clocks assumed to agree (max_offset_s=0): none takes an offset, and with a 35 s window only
    # the first machine's calls are near enough
    assert join_sessions(steps_frame(st), calls_frame(ca), max_offset_s=0, window_s=35).assignments() == \
        {"s1": "t1", "s2": None}
    assert join_sessions(steps_frame(st), calls_frame(ca), window_s=35).assignments() == {"s1": "t1", "s2": "t2"}


def test_a_coincidence_at_the_common_offset_does_not_hide_a_transcripts_own_clock():
    """The second machine's agent lists the data root at the moment the first one does (a call
    every agent makes): that one step agreed at the common offset, so its transcript did not
    look for a clock of its own, and its session, 120 s off, stayed unmatched."""
    st, ca = [], []
    for i in range(6):
        st.append(("t1", i * 10, "read", {"path": f"a{i}"}, None))
        ca.append(("s1", i * 10 + 0.3, "read", {"path": f"a{i}"}, None))
    ca.append(("s1", 300.3, "list", {"path": "."}, None))  # the first agent lists, at 300.3 s
    for i in range(5):
        st.append(("t2", 200 + i * 10, "read", {"path": f"b{i}"}, None))
        ca.append(("s2", 200 + i * 10 + 120, "read", {"path": f"b{i}"}, None))
    st.append(("t2", 300, "list", {"path": "."}, None))  # the second, on its own clock, at 300 s
    ca.append(("s2", 420, "list", {"path": "."}, None))
    res = join_sessions(steps_frame(st), calls_frame(ca))
    s = res.sessions.set_index("door_session")
    assert res.assignments() == {"s1": "t1", "s2": "t2"}
    assert s["agreed"].tolist() == [6, 6] and s["offset_ms"].tolist() == [300.0, 120000.0]
    # the coincidence is gone: s1's listing is claimed by no step, t2's listing agrees with s2's
    p = res.pairs
    assert p.loc[p.transcript_id == "t2", "door_session"].unique().tolist() == ["s2"]
    assert sorted(p.loc[p.transcript_id == "t2", "delta_ms"].unique()) == [120000.0]
    assert res.unclaimed_calls["tool"].tolist() == ["list"]
    assert res.unclaimed_calls["door_session"].tolist() == ["s1"]


def test_calls_another_transcript_explains_do_not_hide_a_transcripts_own_clock():
    """A deployer 90 s ahead of the door (4 calls) and a reviewer on the door's clock who reads
    the same file. At the common offset (the reviewer's, +0.3 s) one of the deployer's steps
    lined up with the reviewer's read and one with its own session's last read: 2 of 4, so it
    kept the common clock, agreed once with its own session at −15 s, and called its rule update
    a call the door never saw."""
    cx = [(15.4, "read", {"path": "cfg"}), (40.3, "update", {"path": "cfg", "surge": 1}),
          (65.2, "read", {"path": "secrets"}), (90.1, "read", {"path": "cfg"})]
    st = [("t-deployer", sec - 0.3 + 90, tool, args, None) for sec, tool, args in cx]
    ca = [("s-deployer", sec, tool, args, None) for sec, tool, args in cx]
    rv = [("s-review", 130.3, "read", {"path": "cfg"}), ("s-review", 160.2, "history", {"limit": 5}),
          ("s-review", 170.5, "read", {"path": "defaults"}), ("s-review-2", 250.4, "diff", {"from": 41}),
          ("s-review-2", 270.3, "read", {"path": "cfg"})]
    st += [("t-reviewer", sec - 0.3, tool, args, None) for _, sec, tool, args in rv]
    ca += [(sess, sec, tool, args, None) for sess, sec, tool, args in rv]
    res = join_sessions(steps_frame(st), calls_frame(ca))
    s = res.sessions.set_index("door_session")
    assert res.assignments() == {"s-deployer": "t-deployer", "s-review": "t-reviewer", "s-review-2": "t-reviewer"}
    assert s["agreed"].to_dict() == {"s-deployer": 4, "s-review": 3, "s-review-2": 2}
    assert s["offset_ms"].to_dict() == {"s-deployer": -89700.0, "s-review": 300.0, "s-review-2": 300.0}
    p = res.pairs[res.pairs.transcript_id == "t-deployer"]
    assert p["door_session"].unique().tolist() == ["s-deployer"] and len(p) == 4
    assert p["delta_ms"].unique().tolist() == [-89700.0]
    assert res.unclaimed_calls.empty and res.unmatched_steps.empty


def test_an_agent_repeating_anothers_calls_on_another_clock_keeps_its_own():
    """Two agents make the same four reads; the second's clock is 90 s ahead of the door's and
    it made each read 40 s before the first did. At the common offset all four of its steps
    line up with the first agent's session (50 s off), and the first agent's steps line up with
    the second's session (40 s off): those calls are the first agent's second-best session, and
    still evidence of the second agent's clock."""
    st, ca = [], []
    for i in range(4):
        st.append(("t-a", i * 10, "read", {"path": f"a{i}"}, None))
        ca.append(("s-a", i * 10 + 0.3, "read", {"path": f"a{i}"}, None))
        st.append(("t-b", i * 10 - 40 - 0.3 + 90, "read", {"path": f"a{i}"}, None))
        ca.append(("s-b", i * 10 - 40, "read", {"path": f"a{i}"}, None))
    res = join_sessions(steps_frame(st), calls_frame(ca))
    s = res.sessions.set_index("door_session")
    assert res.assignments() == {"s-a": "t-a", "s-b": "t-b"}
    assert s["agreed"].to_dict() == {"s-a": 4, "s-b": 4}
    assert s["offset_ms"].to_dict() == {"s-a": 300.0, "s-b": -89700.0}
    # (on its own clock the second agent's steps still line up with the first's session, 40 s
    # off, as the first's do with the second's: equally many, so both links say so)
    assert s["status"].tolist() == ["ambiguous", "ambiguous"] and s["margin"].tolist() == [0.0, 0.0]
    assert res.pairs.groupby("transcript_id")["door_session"].unique().map(list).to_dict() == \
        {"t-a": ["s-a"], "t-b": ["s-b"]}


def test_a_retried_call_pairs_with_the_retry_not_the_failed_attempt():
    """The client's first diff failed (the connection closed; the door never logged it) and was
    retried 45 s later; both steps fall in the window of the one door call. The first step by
    time took the call, 45.4 s off, and the session's offset became the median of that and the
    read's +0.3 s: +22.85 s."""
    st = [("t1", 25.0, "diff", {"path": "cfg", "from": 41}, None),  # failed: no door line
          ("t1", 70.1, "diff", {"path": "cfg", "from": 41}, None),  # its retry
          ("t1", 90.0, "read", {"path": "cfg"}, None)]
    ca = [("s1", 70.4, "diff", {"path": "cfg", "from": 41}, None), ("s1", 90.3, "read", {"path": "cfg"}, None)]
    res = join_sessions(steps_frame(st), calls_frame(ca))
    s = res.sessions.set_index("door_session")
    assert s.loc["s1", "agreed"] == 2 and s.loc["s1", "offset_ms"] == 300.0
    assert sorted(zip(res.pairs.step_seq, res.pairs.call_seq)) == [(1, 1), (2, 2)]
    assert res.pairs["delta_ms"].tolist() == [300.0, 300.0]
    assert res.unmatched_steps["seq"].tolist() == [0]


def test_a_call_logged_twice_pairs_its_step_with_the_nearer_and_order_is_kept():
    """More calls than steps: the door logged an earlier identical call of the session that no
    step shows (a client retry below the transcript); the step pairs with the call 0.3 s from it,
    not the first by time. Three steps and two calls: each call takes the step nearest it, in
    order."""
    st = [("t1", 100.0, "read", {"path": "a"}, None), ("t1", 200.0, "list", {"path": "."}, None),
          ("t1", 230.0, "list", {"path": "."}, None), ("t1", 250.0, "list", {"path": "."}, None)]
    ca = [("s1", 60.5, "read", {"path": "a"}, None), ("s1", 100.3, "read", {"path": "a"}, None),
          ("s1", 231.0, "list", {"path": "."}, None), ("s1", 252.0, "list", {"path": "."}, None)]
    res = join_sessions(steps_frame(st), calls_frame(ca), max_offset_s=0)
    assert sorted(zip(res.pairs.step_seq, res.pairs.call_seq)) == [(0, 2), (2, 3), (3, 4)]
    assert sorted(res.pairs["delta_ms"].tolist()) == [300.0, 1000.0, 2000.0]
    assert res.unclaimed_calls["seq"].tolist() == [1]
    assert res.unmatched_steps["seq"].tolist() == [1]


def test_far_clocks_names_a_session_whose_clock_is_beyond_max_offset(monkeypatch):
    import replaybook.join as J

    st = [("t1", i * 10, "read", {"path": f"a{i}"}, None) for i in range(5)]
    ca = [("s1", i * 10 + 0.2, "read", {"path": f"a{i}"}, None) for i in range(5)]
    # t2's machine is an hour behind the door's; s2 holds its calls (and one it never made)
    st += [("t2", 300 + i * 10, "read", {"path": f"b{i}"}, None) for i in range(4)]
    ca += [("s2", 300 + i * 10 + 3600.4, "read", {"path": f"b{i}"}, None) for i in range(4)]
    ca += [("s2", 4000, "read", {"path": "elsewhere"}, None)]
    # t3 shares one call every agent makes with s3, 2 h apart: a coincidence, no clock
    st += [("t3", 100, "list", {"path": "."}, None), ("t3", 110, "read", {"path": "c"}, None)]
    ca += [("s3", 7300, "list", {"path": "."}, None), ("s3", 7310, "read", {"path": "d"}, None)]
    steps, calls = steps_frame(st), calls_frame(ca)
    res = join_sessions(steps, calls)
    assert res.assignments() == {"s1": "t1", "s2": None, "s3": None}
    far = J.far_clocks(steps, calls, res.sessions, max_offset_s=300)
    assert far.to_dict("records") == [dict(door_session="s2", transcript_id="t2", offset_ms=3600400.0, steps=4,
                                           calls_with_args=5, max_offset_s=3602.0, ambiguous_with=None)]
    assert str(far["steps"].dtype) == "Int64" and str(far["door_session"].dtype) == "string"
    # the offset it names joins them
    again = join_sessions(steps, calls, max_offset_s=3602.0)
    assert again.assignments()["s2"] == "t2"
    assert again.sessions.set_index("door_session").loc["s2", "offset_ms"] == 3600400.0
    # within what the join looked at, or past the horizon, nothing is named
    assert J.far_clocks(steps, calls, res.sessions, max_offset_s=4000).empty
    assert J.far_clocks(steps, calls, res.sessions, max_offset_s=300, horizon_s=3000).empty
    # too many pairs to compare: nothing named, rather than a blow-up
    monkeypatch.setattr(J, "_FAR_MERGE_ROWS", 3)
    assert J.far_clocks(steps, calls, res.sessions, max_offset_s=300).empty


def test_a_resumed_transcript_whose_first_file_is_gone_continues_into_its_new_session():
    """A conversation resumed in a new file copies the earlier lines into it. With the first file
    gone, the one transcript holds the calls of two door sessions: the old one (its copied
    history) and the new one. One-to-one, it took the old session, its new calls were reported
    as calls the door never saw, and the new session stayed unmatched."""
    st = [("t-resumed", i * 10, "read", {"path": f"old{i}"}, None) for i in range(5)]
    st += [("t-resumed", 900 + i * 10, "read", {"path": f"new{i}"}, None) for i in range(4)]
    st += [("t-other", 400 + i * 10, "read", {"path": f"x{i}"}, None) for i in range(3)]
    ca = [("door-old", i * 10 + 0.3, "read", {"path": f"old{i}"}, None) for i in range(5)]
    ca += [("door-other", 400 + i * 10 + 0.3, "read", {"path": f"x{i}"}, None) for i in range(3)]
    ca += [("door-new", 900 + i * 10 + 0.3, "read", {"path": f"new{i}"}, None) for i in range(4)]
    ca += [("door-new", 960.3, "list", {"path": "."}, None)]  # one call no step made
    res = join_sessions(steps_frame(st), calls_frame(ca))
    assert res.assignments() == {"door-old": "t-resumed", "door-other": "t-other", "door-new": "t-resumed"}
    s = res.sessions.set_index("door_session")
    assert s.loc["door-new", "continues"] == "door-old" and s["continues"].isna().sum() == 2
    assert s.loc["door-new", "status"] == "matched" and s.loc["door-new", "agreed"] == 4
    assert s.loc["door-new", "share"] == 0.8 and s.loc["door-new", "margin"] == 4.0
    # the continuing session is no alternative to the first: its margin is its own agreement
    # (one-to-one, door-new taking the transcript would have cost only 1 step)
    assert s.loc["door-old", "margin"] == 5.0 and s.loc["door-old", "status"] == "matched"
    assert s.loc["door-old", "unmatched_steps"] == 0 and res.unmatched_steps.empty
    assert res.unclaimed_calls["tool"].tolist() == ["list"]
    assert sorted(res.pairs.loc[res.pairs.door_session == "door-new", "step_seq"]) == [5, 6, 7, 8]
    assert res.unmatched_transcripts == []


def test_no_continuation_for_sessions_at_the_same_time_or_on_one_agreeing_step():
    """Two sessions running at once are two conversations; one agreeing step is no link."""
    st = [("t1", i * 10, "read", {"path": f"a{i}"}, None) for i in range(6)]
    ca = [("s1", i * 10 + 0.3, "read", {"path": f"a{i}"}, None) for i in range(4)]
    # s2 repeats two of t1's calls while s1 still runs (a copy of the agent, a replay): not a continuation
    ca += [("s2", 40.5, "read", {"path": "a4"}, None), ("s2", 50.5, "read", {"path": "a5"}, None),
           ("s2", 20.1, "read", {"path": "zz"}, None)]
    # s3, later, shares one step with t1's calls: one step is no link
    st += [("t1", 500, "list", {"path": "."}, None)]
    ca += [("s3", 500.2, "list", {"path": "."}, None), ("s3", 510, "read", {"path": "q"}, None)]
    res = join_sessions(steps_frame(st), calls_frame(ca))
    assert res.assignments() == {"s1": "t1", "s2": None, "s3": None}
    assert res.sessions["continues"].isna().all()


def test_no_clock_of_its_own_from_calls_another_transcript_explains():
    """A transcript whose own door log is missing, with max_offset_s raised to two hours: its
    first calls repeat another agent's, and at −2 h 2 min they line up with that agent's door
    session. It took that as its own clock and won the session from the agent that made the
    calls, pushing it onto a session of its own, ambiguous."""
    # the analyst's conversation reached the door in two sessions (the door restarted)
    st = [("t-analyst", i * 10, "read", {"path": f"a{i}"}, None) for i in range(4)]
    ca = [("s-analyst", i * 10 + 0.3, "read", {"path": f"a{i}"}, None) for i in range(4)]
    st += [("t-analyst", 600 + i * 10, "read", {"path": f"b{i}"}, None) for i in range(3)]
    ca += [("s-analyst-2", 600 + i * 10 + 0.3, "read", {"path": f"b{i}"}, None) for i in range(3)]
    # the reporter, 2 h ahead, repeats the analyst's first three calls two minutes later
    st += [("t-reporter", 7200 + 120 + i * 10, "read", {"path": f"a{i}"}, None) for i in range(3)]
    st += [("t-reporter", 7200 + 200 + i * 10, "read", {"path": f"r{i}"}, None) for i in range(3)]
    res = join_sessions(steps_frame(st), calls_frame(ca), max_offset_s=8000)
    assert res.assignments() == {"s-analyst": "t-analyst", "s-analyst-2": "t-analyst"}
    s = res.sessions.set_index("door_session")
    assert s.loc["s-analyst", "status"] == "matched" and s.loc["s-analyst", "agreed"] == 4
    assert s.loc["s-analyst-2", "continues"] == "s-analyst"
    assert res.unmatched_transcripts == ["t-reporter"]


def test_a_declared_clock_offset_joins_that_transcript_and_only_it():
    st = [("t1", i * 10, "read", {"path": f"a{i}"}, None) for i in range(5)]
    ca = [("s1", i * 10 + 0.2, "read", {"path": f"a{i}"}, None) for i in range(5)]
    # t2's machine: 2 h behind the door's; six of its calls, so many that they would outvote t1
    # on the common offset were they read with it
    st += [("t2", 300 + i * 10, "read", {"path": f"b{i}"}, None) for i in range(6)]
    ca += [("s2", 300 + i * 10 + 7200.4, "read", {"path": f"b{i}"}, None) for i in range(6)]
    steps, calls = steps_frame(st), calls_frame(ca)
    assert join_sessions(steps, calls).assignments() == {"s1": "t1", "s2": None}
    for max_offset_s in (300.0, 0.0):
        res = join_sessions(steps, calls, max_offset_s=max_offset_s, clock_offsets={"t2": 7200, "no-such": 5})
        s = res.sessions.set_index("door_session")
        assert res.assignments() == {"s1": "t1", "s2": "t2"}
        assert s["offset_ms"].tolist() == [200.0, 7200400.0] and s["agreed"].tolist() == [5, 6]
    # with max_offset_s raised instead, t2 votes on the common offset and wins it (six steps to
    # five): every transcript's search is widened, and t1 is the one read on a clock of its own
    wide = join_sessions(steps, calls, max_offset_s=8000)
    assert wide.assignments() == {"s1": "t1", "s2": "t2"}
    assert wide.offset_ms == 7200400.0 and wide.sessions["offset_ms"].tolist() == [200.0, 7200400.0]


def test_no_clock_of_its_own_from_a_few_coincidences():
    """A transcript whose own session is not in the door log shares calls every agent makes with
    other sessions: one such call, or a few of its many steps, lined up at some offset, is no
    clock of its own (it stays unmatched)."""
    st = [("t1", i * 10, "read", {"path": f"a{i}"}, None) for i in range(5)]
    ca = [("s1", i * 10 + 1, "read", {"path": f"a{i}"}, None) for i in range(5)]
    # t2: its own calls are not in the log; one generic call lines up with s1's at −120 s
    st += [("t2", 300, "list", {"path": "/"}, None)] + [("t2", 310 + i, "read", {"path": f"x{i}"}, None)
                                                         for i in range(4)]
    ca += [("s1", 180, "list", {"path": "/"}, None)]
    # t3: two of its six steps line up with s3's calls at +100 s, the other four have calls at
    # offsets of their own, each far from the others (−126, −200, +170, +250 s)
    st += [("t3", 500 + i * 5, "read", {"path": f"c{i}"}, None) for i in range(6)]
    ca += [("s3", 600 + i * 5, "read", {"path": f"c{i}"}, None) for i in range(2)]
    ca += [("s4", sec, "read", {"path": f"c{i}"}, None) for i, sec in zip(range(2, 6), (384, 315, 690, 775))]
    res = join_sessions(steps_frame(st), calls_frame(ca))
    assert res.assignments() == {"s1": "t1", "s3": None, "s4": None}
    assert res.unmatched_transcripts == ["t2", "t3"]


def test_window_and_min_agreed_are_respected():
    steps = steps_frame([("t1", 0, "read", {"path": "a"}, None), ("t1", 10, "read", {"path": "b"}, None)])
    calls = calls_frame([("s1", 90, "read", {"path": "a"}, None), ("s1", 100, "read", {"path": "b"}, None)])
    assert join_sessions(steps, calls, max_offset_s=0).sessions.iloc[0].status == "unmatched"
    # the same two calls 90 s late are found once the clock offset is estimated
    res = join_sessions(steps, calls)
    assert res.assignments() == {"s1": "t1"} and res.offset_ms == pytest.approx(90000.0)
    res = join_sessions(steps, calls, min_agreed=3)
    assert res.assignments() == {"s1": None} and res.unmatched_transcripts == ["t1"]
    assert len(res.unclaimed_calls) == 2
    with pytest.raises(JoinError):
        join_sessions(steps, calls, window_s=0)
    # numbers that are not a number of seconds: a clear JoinError, not an overflow deep inside
    for kw in (dict(window_s=float("inf")), dict(window_s=float("nan")), dict(window_s=1e300),
               dict(max_offset_s=float("nan")), dict(max_offset_s=float("inf")), dict(max_offset_s=-5)):
        with pytest.raises(JoinError, match="must be a number of seconds"):
            join_sessions(steps, calls, **kw)
    assert join_sessions(steps, calls, window_s=1e9, max_offset_s=1e9).assignments() == {"s1": "t1"}


def test_repeated_arguments_need_one_call_each():
    steps = steps_frame([("t1", 0, "read", {"path": "a"}, None), ("t1", 5, "read", {"path": "a"}, None),
                         ("t1", 9, "list", {"path": "x"}, None)])
    calls = calls_frame([("s1", 0.2, "read", {"path": "a"}, None)])
    res = join_sessions(steps, calls)
    row = res.sessions.iloc[0]
    assert row.agreed == 1 and row.transcript_tool_steps == 3 and row.unmatched_steps == 2


def test_equal_alternatives_are_ambiguous_and_time_breaks_the_tie():
    steps = steps_frame([("t1", 0, "read", {"path": "a"}, None), ("t2", 30, "read", {"path": "a"}, None)])
    calls = calls_frame([("s1", 28, "read", {"path": "a"}, None)])
    res = join_sessions(steps, calls, max_offset_s=0)
    assert res.assignments() == {"s1": "t2"}
    assert res.sessions.iloc[0].status == "ambiguous" and res.sessions.iloc[0].margin == 0.0


def test_many_sessions_sharing_arguments_stay_one_to_one():
    n = 60
    steps, calls = [], []
    for i in range(n):
        steps += [(f"t{i:02d}", i * 2, "list", {"path": "demo/"}, None),
                  (f"t{i:02d}", i * 2 + 1, "read", {"path": f"f{i}"}, None)]
        calls += [(f"s{i:02d}", i * 2 + 0.3, "list", {"path": "demo/"}, None),
                  (f"s{i:02d}", i * 2 + 1.3, "read", {"path": f"f{i}"}, None)]
    res = join_sessions(steps_frame(steps), calls_frame(calls), max_offset_s=0)
    assert res.assignments() == {f"s{i:02d}": f"t{i:02d}" for i in range(n)}
    assert len(set(res.assignments().values())) == n
    assert (res.sessions.agreed == 2).all()


def test_calls_without_arguments_fall_back_to_tool_and_time():
    steps = steps_frame([("t1", 0, "read", {"path": "a"}, None), ("t1", 20, "list", {"path": "x"}, None),
                         ("t2", 40, "read", {"path": "b"}, None)])
    calls = calls_frame([("s1", 0.5, "read", {}, None), ("s1", 20.5, "list", {"path": "x"}, None)])
    calls.loc[0, "args_key"] = None  # this gateway logged only an argument count
    res = join_sessions(steps, calls, max_offset_s=0)
    row = res.sessions.iloc[0]
    assert res.assignments() == {"s1": "t1"}
    assert row.agreed == 2 and row.method == "content+tool_time"
    assert sorted(res.pairs.how) == ["content", "tool_time"]


def test_a_call_logged_without_arguments_agrees_by_tool_and_time_though_its_step_agrees_by_content_elsewhere():
    """The door logged s1's summarise call without its arguments (too large: only their size).
    Its step's arguments equal those of the other agent's call in s2, 36.5 s later, within the
    window: a content candidate in s2, which the assignment gives t2.  In s1 the step still agrees
    with its call by tool and time; it was left out of that tier for its candidate in s2, and the
    call and the step were reported as never seen by the other side."""
    steps = steps_frame([("t1", 0, "list", {"path": "demo/"}, None),
                         ("t1", 40, "summarise", {"path": "x"}, None),
                         ("t2", 50, "list", {"path": "demo/"}, None),
                         ("t2", 60, "describe", {"path": "y"}, None),
                         ("t2", 76, "summarise", {"path": "x"}, None)])
    calls = calls_frame([("s1", 0.5, "list", {"path": "demo/"}, None),
                         ("s1", 40.5, "summarise", {}, None),
                         ("s2", 50.5, "list", {"path": "demo/"}, None),
                         ("s2", 60.5, "describe", {"path": "y"}, None),
                         ("s2", 76.5, "summarise", {"path": "x"}, None)])
    calls.loc[1, "args_key"] = None  # arguments: null, arguments_bytes: 70000
    res = join_sessions(steps, calls, max_offset_s=0)
    assert res.assignments() == {"s1": "t1", "s2": "t2"}
    s = res.sessions.set_index("door_session")
    assert s.loc["s1", "agreed"] == 2 and s.loc["s1", "method"] == "content+tool_time"
    assert s.loc["s1", "unclaimed_calls"] == 0 and s.loc["s1", "unmatched_steps"] == 0
    assert s.loc["s2", "agreed"] == 3 and s.loc["s2", "method"] == "content"
    # t2's summarise step agrees with s1's call by tool and time too: the runner-up counts it
    assert s.loc["s1", "runner_up"] == "t2" and s.loc["s1", "runner_up_agreed"] == 2
    assert s.loc["s1", "margin"] == 1.0 and s.loc["s2", "margin"] == 1.0
    p = res.pairs.sort_values(["door_session", "call_seq"])
    assert list(zip(p.door_session, p.transcript_id, p.step_seq, p.call_seq, p.how, p.delta_ms)) == [
        ("s1", "t1", 0, 1, "content", 500.0), ("s1", "t1", 1, 2, "tool_time", 500.0),
        ("s2", "t2", 2, 3, "content", 500.0), ("s2", "t2", 3, 4, "content", 500.0),
        ("s2", "t2", 4, 5, "content", 500.0)]
    sc = res.scores.set_index(["door_session", "transcript_id"])["agreed"].to_dict()
    assert sc == {("s1", "t1"): 2, ("s1", "t2"): 2, ("s2", "t2"): 3, ("s2", "t1"): 2}
    assert res.unclaimed_calls.empty and res.unmatched_steps.empty


def test_a_step_logged_without_arguments_agrees_by_tool_and_time_with_a_call_another_transcript_agrees_with():
    """The mirror case: t1's read step has no arguments to compare (they did not parse); s1's read
    call has arguments that t2's read step, 29.5 s later, has too.  s1 goes to t1, so that content
    candidate is none of s1's pairs, and the call agrees with t1's step by tool and time."""
    steps = steps_frame([("t1", 0, "list", {"path": "demo/"}, None),
                         ("t1", 20, "read", {"path": "a"}, None),
                         ("t2", 40, "list", {"path": "demo/"}, None),
                         ("t2", 45, "describe", {"path": "y"}, None),
                         ("t2", 48, "query", {"sql": "select 1"}, None),
                         ("t2", 50, "read", {"path": "a"}, None)])
    steps.loc[1, "args_key"] = None  # the client's arguments did not parse
    calls = calls_frame([("s1", 0.5, "list", {"path": "demo/"}, None),
                         ("s1", 20.5, "read", {"path": "a"}, None),
                         ("s2", 40.5, "list", {"path": "demo/"}, None),
                         ("s2", 45.5, "describe", {"path": "y"}, None),
                         ("s2", 48.5, "query", {"sql": "select 1"}, None)])
    res = join_sessions(steps, calls, max_offset_s=0)
    assert res.assignments() == {"s1": "t1", "s2": "t2"}
    s = res.sessions.set_index("door_session")
    assert s.loc["s1", "agreed"] == 2 and s.loc["s1", "method"] == "content+tool_time"
    assert s.loc["s1", "unclaimed_calls"] == 0 and s.loc["s1", "unmatched_steps"] == 0
    # t2's read step agrees with s1's call alone, and s1 is t1's: it is t2's one step no call claims
    assert s.loc["s2", "agreed"] == 3 and s.loc["s2", "unmatched_steps"] == 1
    p = res.pairs[res.pairs.door_session == "s1"].sort_values("call_seq")
    assert list(zip(p.step_seq, p.call_seq, p.how)) == [(0, 1, "content"), (1, 2, "tool_time")]
    assert res.unmatched_steps.seq.tolist() == [5]
    assert res.unclaimed_calls.empty


def test_tool_and_time_never_pairs_a_step_with_a_call_whose_arguments_differ():
    """t's read of x agrees by content with s2's call; s1 logged a read of y, then a read without
    arguments.  In s1 the read of x is a tool-and-time candidate of the call without arguments
    and t's read without arguments one of both calls: paired by rank within that group, the read
    of x had taken the read of y (both logged, and they differ) and s1 went to t, matched with
    margin 1, on a pair the arguments contradict.  (s2's call is 0.3 s from its step, s1's pair
    0.1 s: s1 is the nearer of the two equally agreeing sessions, so t is s1's.)"""
    steps = steps_frame([("t", 1, "read", {"p": "x"}, None), ("t", 5, "read", {}, None)])
    steps.loc[1, "args_key"] = None  # (the client's arguments did not parse)
    calls = calls_frame([("s2", 1.3, "read", {"p": "x"}, None), ("s1", 1.2, "read", {"p": "y"}, None),
                         ("s1", 5.1, "read", {}, None)])
    calls.loc[2, "args_key"] = None
    res = join_sessions(steps, calls, max_offset_s=0)
    p = res.pairs
    assert list(zip(p.door_session, p.step_seq, p.call_seq, p.how)) == [("s1", 1, 3, "tool_time")]
    s = res.sessions.set_index("door_session")
    assert s.loc["s1", "agreed"] == 1 and s.loc["s1", "status"] == "ambiguous"
    sc = res.scores.set_index(["door_session", "transcript_id"])["agreed"].to_dict()
    assert sc == {("s1", "t"): 1, ("s2", "t"): 1}


def test_a_step_agrees_by_content_or_by_tool_and_time_in_one_session_never_both():
    """Within one (transcript, session) a step its content pairs hold is not paired again by tool
    and time, nor a call: s1's second read (logged without arguments) stays unclaimed."""
    steps = steps_frame([("t1", 0, "read", {"path": "a"}, None), ("t1", 30, "list", {"path": "x"}, None)])
    calls = calls_frame([("s1", 0.5, "read", {"path": "a"}, None), ("s1", 1.5, "read", {}, None),
                         ("s1", 30.5, "list", {"path": "x"}, None)])
    calls.loc[1, "args_key"] = None
    res = join_sessions(steps, calls, max_offset_s=0)
    row = res.sessions.iloc[0]
    assert row.agreed == 2 and row.method == "content"
    assert res.unclaimed_calls.seq.tolist() == [2]
    assert res.pairs.sort_values("step_seq")["call_seq"].tolist() == [1, 3]


def test_tool_and_time_reads_a_transcript_on_its_own_clock():
    """A second machine's agent, its clock 120 s off: its calls with arguments found its own
    offset, but the two its gateway logged without arguments were still compared at the common
    offset, 120 s away, and left unclaimed."""
    st = [("t1", i * 10, "read", {"path": f"a{i}"}, None) for i in range(5)]
    ca = [("s1", i * 10 + 0.2, "read", {"path": f"a{i}"}, None) for i in range(5)]
    st += [("t2", 300 + i * 10, "read", {"path": f"b{i}"}, None) for i in range(4)]
    ca += [("s2", 300 + i * 10 + 120, "read", {"path": f"b{i}"}, None) for i in range(4)]
    st += [("t2", 350, "query", {"sql": "select 1"}, None), ("t2", 360, "query", {"sql": "select 2"}, None)]
    ca += [("s2", 470.5, "query", {}, None), ("s2", 480.5, "query", {}, None)]
    calls = calls_frame(ca)
    calls.loc[calls["tool"] == "query", "args_key"] = None  # this gateway logs a hash of a query's text
    res = join_sessions(steps_frame(st), calls)
    s = res.sessions.set_index("door_session")
    assert res.assignments() == {"s1": "t1", "s2": "t2"}
    assert s.loc["s2", "agreed"] == 6 and s.loc["s2", "method"] == "content+tool_time"
    p = res.pairs[res.pairs.door_session == "s2"].sort_values("step_seq")
    assert p["how"].tolist() == ["content"] * 4 + ["tool_time"] * 2
    assert p["delta_ms"].tolist() == [120000.0] * 4 + [120500.0] * 2
    assert res.unclaimed_calls.empty


def test_steps_without_arguments_and_calls_without_tool_or_time():
    steps = steps_frame([("t1", 0, "read", {"path": "a"}, None), ("t1", 20, "list", {"path": "x"}, None)])
    steps.loc[0, "args_key"] = None  # the client's arguments did not parse
    calls = calls_frame([("s1", 0.5, "read", {"path": "a"}, None), ("s1", 20.5, "list", {"path": "x"}, None),
                         ("s1", 30, "read", {"path": "a"}, None), ("s1", 31, "read", {"path": "b"}, None)])
    calls.loc[2, "tool"] = None  # a gateway line with no tool name
    calls.loc[3, "ts"] = None  # a gateway line with no time
    res = join_sessions(steps, calls, max_offset_s=0)
    row = res.sessions.iloc[0]
    assert row.agreed == 2 and row.method == "content+tool_time"
    assert sorted(res.unclaimed_calls.seq.tolist()) == [3, 4]


def test_a_large_component_is_matched_sparsely_and_stays_one_to_one(monkeypatch):
    import replaybook.join as j

    monkeypatch.setattr(j, "_EXACT_MARGIN_LIMIT", 10)  # force the sparse path
    n = 40
    steps, calls = [], []
    for i in range(n):  # everyone lists demo/ at about the same time; each reads its own file
        steps += [(f"t{i:02d}", i * 0.5, "list", {"path": "demo/"}, None),
                  (f"t{i:02d}", i * 0.5 + 0.2, "read", {"path": f"f{i}"}, None)]
        calls += [(f"s{i:02d}", i * 0.5 + 0.1, "list", {"path": "demo/"}, None),
                  (f"s{i:02d}", i * 0.5 + 0.3, "read", {"path": f"f{i}"}, None)]
    res = join_sessions(steps_frame(steps), calls_frame(calls), max_offset_s=0)
    assert res.assignments() == {f"s{i:02d}": f"t{i:02d}" for i in range(n)}
    assert (res.sessions.agreed == 2).all() and (res.sessions.margin == 1.0).all()
    assert (res.sessions.status == "matched").all()


def test_residual_frames_are_taken_from_the_inputs_on_first_use_and_counted_without():
    steps = steps_frame([("t1", 0, "read", {"path": "a"}, None), ("t1", 5, "read", {"path": "a"}, None),
                         ("t1", 9, "list", {"path": "x"}, None)])
    calls = calls_frame([("s1", 0.2, "read", {"path": "a"}, None), ("s1", 1, "write", {"path": "z"}, None),
                         ("s2", 3, "read", {"path": "q"}, None)])
    res = join_sessions(steps, calls)
    assert res.assignments() == {"s1": "t1", "s2": None}
    # counts (to_dict, the CLI's json) come from the row positions, before any frame exists
    assert res.n_unclaimed_calls == 2 and res.n_unmatched_steps == 2
    assert res._residuals._uc is None and res._residuals._us is None
    d = res.to_dict()
    assert d["unclaimed_calls"] == 2 and d["unmatched_steps"] == 2
    assert res._residuals._uc is None
    uc = res.unclaimed_calls
    assert uc.tool.tolist() == ["write", "read"] and uc.door_session.tolist() == ["s1", "s2"]
    assert uc.index.tolist() == [1, 2]  # positions in `calls`
    assert res.unclaimed_calls is uc  # taken once, then kept
    um = res.unmatched_steps
    assert um.seq.tolist() == [1, 2] and um.index.tolist() == [1, 2]
    assert list(uc.columns) == list(calls.columns) and list(um.columns) == list(steps.columns)


def test_jobs_run_together_return_in_order_and_raise_the_first_failure_after_all_finish():
    import threading

    from replaybook.join import _together

    names = []

    def job(value):
        def run():
            names.append(threading.current_thread().name)
            return value
        return run

    assert _together(job(1), job("two"), job([3])) == [1, "two", [3]]
    assert names.count(threading.current_thread().name) == 1  # the first ran on the caller's thread
    finished = []

    def slow():
        import time
        time.sleep(0.2)
        finished.append("slow")

    def fail():
        raise JoinError("bad key")

    with pytest.raises(JoinError, match="bad key"):
        _together(fail, slow)
    assert finished == ["slow"]  # the other job was waited for, not abandoned


def test_work_started_for_later_gives_its_value_or_raises_its_error_when_asked():
    from replaybook.join import _later

    assert _later(lambda: [1, 2]).result() == [1, 2]
    failing = _later(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing.result()


def _with_agents(frame, agents: dict, sessions: dict):
    """Set ``agent_id`` and ``client_session_id`` per transcript (as a Claude Code load gives them)."""
    frame = frame.copy()
    frame["agent_id"] = frame["transcript_id"].map(agents).astype("string")
    frame["client_session_id"] = frame["transcript_id"].map(sessions).astype("string")
    return frame


def test_a_sub_agents_calls_count_for_its_parents_conversation():
    # Claude Code runs a sub-agent (agent-x.jsonl, or P/subagents/agent-x.jsonl) in the same
    # process as its parent P, with the same MCP connections: its door calls are in P's door
    # session.  Counted as a transcript of its own it could not be assigned (one-to-one), and its
    # calls showed as door calls no step claims.
    steps = steps_frame([("P", 0, "list", {"path": "demo/"}, None), ("P", 10, "read", {"path": "a"}, None),
                         ("agent-x", 4, "read", {"path": "b"}, None), ("agent-x", 6, "read", {"path": "c"}, None),
                         ("Q", 100, "read", {"path": "q"}, None), ("agent-y", 101, "read", {"path": "y"}, None)])
    steps = _with_agents(steps, {"agent-x": "x", "agent-y": "y"},
                         {"P": "P", "agent-x": "P", "Q": "Q", "agent-y": "gone"})  # agent-y's parent is not here
    calls = calls_frame([("s1", 0.2, "list", {"path": "demo/"}, None), ("s1", 4.2, "read", {"path": "b"}, None),
                         ("s1", 6.2, "read", {"path": "c"}, None), ("s1", 10.2, "read", {"path": "a"}, None),
                         ("s2", 101.2, "read", {"path": "y"}, None)])
    res = join_sessions(steps, calls, max_offset_s=0)
    assert res.sub_agents == {"agent-x": "P"}
    assert res.transcripts_of("P") == ["P", "agent-x"]
    assert res.assignments() == {"s1": "P", "s2": "agent-y"}
    s1 = res.sessions.set_index("door_session").loc["s1"]
    assert (s1.agreed, s1.transcript_tool_steps, s1.unclaimed_calls, s1.unmatched_steps, s1.share) == (4, 4, 0, 0, 1.0)
    # each pair names the step's own transcript, so (transcript_id, step_seq) finds the step
    p = res.pairs[res.pairs.door_session == "s1"].sort_values("call_seq")
    assert list(zip(p.transcript_id, p.step_seq, p.call_seq)) == [("P", 0, 1), ("agent-x", 2, 2), ("agent-x", 3, 3),
                                                                  ("P", 1, 4)]
    assert res.unmatched_transcripts == ["Q"]  # agent-x is part of P's conversation, not listed apart
    assert res.to_dict()["sub_agents"] == {"agent-x": "P"}
    # without agent ids the same files are separate transcripts, and x's calls go unclaimed
    plain = join_sessions(steps_frame([r for r in [("P", 0, "list", {"path": "demo/"}, None),
                                                   ("P", 10, "read", {"path": "a"}, None),
                                                   ("agent-x", 4, "read", {"path": "b"}, None),
                                                   ("agent-x", 6, "read", {"path": "c"}, None)]]),
                          calls[calls.door_session == "s1"], max_offset_s=0)
    assert plain.sub_agents == {} and int(plain.sessions.iloc[0].unclaimed_calls) == 2


def test_the_session_view_shows_a_sub_agents_steps_in_its_parents_conversation():
    from replaybook.views.session import conversation

    steps = steps_frame([("P", 0, "list", {"path": "demo/"}, None), ("P", 10, "read", {"path": "a"}, None),
                         ("agent-x", 4, "read", {"path": "b"}, None), ("agent-x", 6, "read", {"path": "c"}, None)])
    steps = _with_agents(steps, {"agent-x": "x"}, {"P": "P", "agent-x": "P"})
    steps["seq"] = steps.groupby("transcript_id").cumcount().astype("Int64")  # each file numbers its own steps
    steps.loc[steps["transcript_id"] == "agent-x", "result_text"] = ["b:\n 3 rows", "c: 9 rows"]
    calls = calls_frame([("s1", 0.2, "list", {"path": "demo/"}, None), ("s1", 4.2, "read", {"path": "b"}, None),
                         ("s1", 6.2, "read", {"path": "c"}, None), ("s1", 10.2, "read", {"path": "a"}, None)])
    res = join_sessions(steps, calls, max_offset_s=0)
    conv = conversation(steps, calls, res, "s1")
    # every step, parent's and sub-agent's, in time order, each with the door call it reached
    # (the two files both number their steps from 0: the pair is found by transcript and seq)
    assert list(zip(conv.step_seq, conv.call_seq, conv.status)) == [(0, 1, "reached"), (0, 2, "reached"),
                                                                    (1, 3, "reached"), (1, 4, "reached")]
    assert [lb.split(" · ")[0] for lb in conv.label] == ["list {\"path\":\"demo/\"}  →  door #1: demo/",
                                                        "sub-agent x", "sub-agent x",
                                                        "read {\"path\":\"a\"}  →  door #4: a"]
    assert "unclaimed" not in set(conv.status)
    # what each call got back, as its transcript recorded it (one line), for the view's tooltips
    assert [None if pd.isna(x) else x for x in conv.result] == [None, "b: 3 rows", "c: 9 rows", None]
    from replaybook.views.session import conversation_chart

    tips = [t["title"] for layer in conversation_chart(conv).to_dict()["layer"]
            for t in layer.get("encoding", {}).get("tooltip", [])]
    assert "agent got back" in tips
    assert [None if pd.isna(a) else a for a in conv.agent_id] == [None, "x", "x", None]
    # the report's conversation names the sub-agent in its "who" column
    from replaybook.report import sections as S

    h = S.conversations(steps, calls, res)
    assert h.count("<td>tool call (sub-agent x)</td>") == 2 and h.count("<td>tool call</td>") == 2


def _reviewer_incident():
    """P calls the deploy door (session s1, clocks agreeing); its sub-agent agent-x calls a second
    door-fronted server, gate, whose door (session g1) runs 40.2 s ahead and logs no tool-use
    ids: its first get_change failed before that door saw it, the retry and approve reached it."""
    st = [("P", 0, "read", {"path": "a"}, None), ("P", 10, "read", {"path": "b"}, None),
          ("agent-x", 20, "get_change", {"id": "C1"}, None), ("agent-x", 35, "get_change", {"id": "C1"}, None),
          ("agent-x", 50, "approve", {"id": "C1"}, None)]
    steps = _with_agents(steps_frame(st), {"agent-x": "x"}, {"P": "P", "agent-x": "P"})
    sub = steps["transcript_id"] == "agent-x"
    steps.loc[sub, "server"] = "gate"
    steps.loc[sub, "tool_raw"] = "mcp__gate__" + steps.loc[sub, "tool"]
    calls = calls_frame([("s1", 0.2, "read", {"path": "a"}, None), ("s1", 10.2, "read", {"path": "b"}, None),
                         ("g1", 75.2, "get_change", {"id": "C1"}, None), ("g1", 90.2, "approve", {"id": "C1"}, None)])
    return steps, calls


def test_a_sub_agents_steps_on_a_door_whose_session_is_unmatched_stay_door_bound():
    # door-bound servers had been read from agreeing steps only: with g1 left unmatched (its clock
    # beyond max_offset_s 0), gate counted as a server the door never fronts and the sub-agent's
    # three calls vanished from the residuals (transcript_tool_steps 2, unmatched_steps 0)
    steps, calls = _reviewer_incident()
    res = join_sessions(steps, calls, max_offset_s=0, window_s=10)
    assert res.assignments() == {"s1": "P", "g1": None}
    assert res.door_servers == ["door", "gate"]
    s1 = res.sessions.set_index("door_session").loc["s1"]
    assert (s1.agreed, s1.transcript_tool_steps, s1.unmatched_steps) == (2, 5, 3)
    assert list(zip(res.unmatched_steps.transcript_id, res.unmatched_steps.tool)) == [
        ("agent-x", "get_change"), ("agent-x", "get_change"), ("agent-x", "approve")]
    assert res.n_unclaimed_calls == 2
    # a server whose tools no door call has, and built-in tools, stay outside
    extra = STEPS.build([dict(transcript_id="P", client="claude-code", seq=9, ts=T0 + timedelta(seconds=60),
                              kind="tool_call", tool_raw=raw, server=server, tool=tool, call_id=None,
                              arguments={"q": "x"}, args_key=canonical_args({"q": "x"}))
                         for raw, server, tool in (("mcp__notes__jot", "notes", "jot"), ("Grep", None, "Grep"))])
    more = pd.concat([steps, _with_agents(extra, {}, {"P": "P"})], ignore_index=True)
    res = join_sessions(more, calls, max_offset_s=0, window_s=10)
    assert res.door_servers == ["door", "gate"] and res.n_unmatched_steps == 3
    # a gateway that logs no arguments: the same tool is enough
    bare = calls.assign(args_key=calls["args_key"].where(calls["door_session"] != "g1"))
    res = join_sessions(steps, bare, max_offset_s=0, window_s=10)
    assert res.door_servers == ["door", "gate"] and res.n_unmatched_steps == 3


def test_a_sub_agents_clock_offset_moves_its_own_steps():
    # the sub-agent's id, as far_clocks names it, had been ignored (only a parent's id was looked
    # up); given for the parent instead, it moved the parent's steps off their own door's clock
    steps, calls = _reviewer_incident()
    res = join_sessions(steps, calls, max_offset_s=0, window_s=10, clock_offsets={"agent-x": 40.2})
    s = res.sessions.set_index("door_session")
    # (one conversation in two sessions: of equal agreement, g1's nearer clock keeps the one-to-one link)
    assert res.assignments() == {"s1": "P", "g1": "P"} and s.loc["s1", "continues"] == "g1"
    assert s["agreed"].tolist() == [2, 2] and s["offset_ms"].tolist() == [200.0, 40200.0]
    # the retry pairs with its call; the attempt that failed before the door saw it is left over
    assert (s.loc["s1", "transcript_tool_steps"], s.loc["s1", "unmatched_steps"]) == (5, 1)
    assert list(res.unmatched_steps.seq) == [2]
    assert res.warnings == []
    # a parent's entry moves its sub-agents' steps too, unless they have their own
    res = join_sessions(steps, calls, max_offset_s=0, window_s=10, clock_offsets={"P": 40.2})
    assert res.assignments() == {"s1": None, "g1": "P"}
    res = join_sessions(steps, calls, max_offset_s=0, window_s=10, clock_offsets={"P": 0.2, "agent-x": 40.2})
    assert res.assignments() == {"s1": "P", "g1": "P"}
    assert res.sessions["offset_ms"].tolist() == [200.0, 40200.0]


def test_a_clock_offset_for_a_transcript_no_input_holds_is_named():
    steps, calls = _reviewer_incident()
    res = join_sessions(steps, calls, max_offset_s=0, window_s=10, clock_offsets={"agent-y": 40.2, "agent-x": 40.2})
    assert res.assignments() == {"s1": "P", "g1": "P"}
    assert res.warnings == ["clock_offsets names a transcript no input holds: agent-y; its offset was not applied "
                            "(`replaybook load steps` lists each step's transcript_id)"]
    assert res.to_dict()["warnings"] == res.warnings
    assert join_sessions(steps, calls, clock_offsets={"a": 1, "b": 2}).warnings == [
        "clock_offsets names 2 transcripts no input holds: a, b; their offsets were not applied "
        "(`replaybook load steps` lists each step's transcript_id)"]


def test_a_call_whose_logged_id_contradicts_the_step_is_not_an_agreement():
    """The door logged the client's tool-use id; the transcript says the same call (tool,
    arguments, time) had another id.  The id decides: the pair does not agree on content, and
    the session counts the contradiction (it had been 'High confidence', 3 of 3)."""
    steps = steps_frame([("t1", 0, "read", {"path": "a"}, "toolu_1"), ("t1", 5, "read", {"path": "b"}, "toolu_2"),
                         ("t1", 9, "list", {"path": "x"}, "toolu_other")])
    calls = calls_frame([("s1", 0.2, "read", {"path": "a"}, "toolu_1"), ("s1", 5.2, "read", {"path": "b"}, "toolu_2"),
                         ("s1", 9.2, "list", {"path": "x"}, "toolu_3")])
    res = join_sessions(steps, calls)
    row = res.sessions.iloc[0]
    assert (row.transcript_id, int(row.agreed), int(row.id_conflicts), int(row.unclaimed_calls),
            int(row.unmatched_steps)) == ("t1", 2, 1, 1, 1)
    assert res.pairs["how"].tolist() == ["meta_id", "meta_id"]
    # a step with no id, or a call that logged none, still agrees on content
    steps.loc[2, "call_id"] = None
    row = join_sessions(steps, calls).sessions.iloc[0]
    assert (int(row.agreed), int(row.id_conflicts), row.method) == (3, 0, "meta_id+content")


def test_tool_calls_without_a_usable_time_are_named(tmp_path, capsys):
    """Transcript lines whose timestamp is an epoch number (not the ISO text Claude Code writes)
    load with no time; the join then said 'unmatched' with no reason."""
    import shutil

    from replaybook.cli import main
    from replaybook.join import untimed_note

    steps = steps_frame([("t1", 0, "read", {"path": "a"}, None), ("t1", 5, "read", {"path": "b"}, None)])
    calls = calls_frame([("s1", 0.2, "read", {"path": "a"}, None)])
    assert untimed_note(steps, calls) is None
    steps.loc[1, "ts"] = pd.NaT
    steps["source_file"], steps["line_no"] = "t1.jsonl", pd.array([3, 7], dtype="Int64")
    calls.loc[0, "ts"] = pd.NaT
    calls["source_file"], calls["line_no"] = "s1.jsonl", pd.array([1], dtype="Int64")
    assert untimed_note(steps, calls) == (
        "1 transcript tool call (first: t1.jsonl:7) and 1 door call (first: s1.jsonl:1) carry no usable timestamp "
        "(missing, or not a date-time in the source): they take part in no agreement by content and time")

    # end to end: the join trap's transcripts with epoch-number timestamps on the tool calls
    tr = tmp_path / "t"
    shutil.copytree(FIX / "join_trap" / "transcripts", tr)
    for p in tr.glob("*.jsonl"):
        lines = [json.loads(x) for x in p.read_text().splitlines()]
        for o in lines:
            if o.get("type") == "assistant":
                o["timestamp"] = 1789293605
        p.write_text("".join(json.dumps(o) + "\n" for o in lines))
    assert main(["join", "--transcripts", str(tr), "--calls", str(FIX / "join_trap" / "door")]) == 0
    err = capsys.readouterr().err
    assert "transcript tool calls (first: " in err and "carry no usable timestamp" in err


def _big_int_incident(tmp_path: Path, step_n: str, call_n: str) -> tuple[Path, Path]:
    """A transcript making one door call with ``{"n": <step_n>}`` and a door log of one call
    with ``{"n": <call_n>}`` (numbers spelled as given), a second apart."""
    sid = "bbbbbbbb-1111-4111-8111-bbbbbbbbbbbb"
    tr = tmp_path / "t" / f"{sid}.jsonl"
    tr.parent.mkdir(parents=True)
    head = (f'"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/p","sessionId":"{sid}",'
            f'"version":"2.1.90"')
    tr.write_text(
        f'{{{head},"uuid":"00000000-0000-4000-8000-000000000001","timestamp":"2026-09-13T13:00:00.000Z",'
        f'"type":"user","message":{{"role":"user","content":"go"}}}}\n'
        f'{{{head},"uuid":"00000000-0000-4000-8000-000000000002","timestamp":"2026-09-13T13:00:01.000Z",'
        f'"type":"assistant","message":{{"model":"m","id":"msg_1","type":"message","role":"assistant",'
        f'"content":[{{"type":"tool_use","id":"toolu_1","name":"mcp__door__lookup","input":{{"n":{step_n}}}}}],'
        f'"stop_reason":null,"usage":{{"input_tokens":1,"output_tokens":1}}}},"requestId":"req_1"}}\n')
    door = tmp_path / "d" / "analyst" / "s1.jsonl"
    door.parent.mkdir(parents=True)
    door.write_text(f'{{"ts":"2026-09-13T13:00:02Z","seq":1,"session":"s1","tool":"lookup",'
                    f'"arguments":{{"n":{call_n}}},"decision":"allow"}}\n')
    return tr.parent, door.parent.parent


@pytest.mark.parametrize("fast", [True, False])
def test_integers_beyond_64_bits_compare_exactly(tmp_path, fast):
    """orjson reads such an integer as a float: two numbers that differ in their last digits read
    alike and their calls agreed.  Every loader now reads them exactly, on both paths."""
    from replaybook.sources import door as door_mod
    from replaybook.sources._claude_ref import load_reference

    big = "123456789012345678901234567890"
    # a float literal that long is not exact (a double): it is not the integer, but the double's
    # own exact value, written as the integer it is
    for call_n, agree, key in ((big, True, big), ("123456789012345678901234567891", False, None),
                               (big + ".0", False, "123456789012345677877719597056")):
        sub = tmp_path / call_n
        t_dir, d_dir = _big_int_incident(sub, big, call_n)
        steps = (load_claude_code if fast else load_reference)(t_dir).frame
        calls = (load_door(d_dir) if fast else door_mod._load(d_dir, fast=False)).frame
        tool = steps[steps.kind == "tool_call"].iloc[0]
        assert tool["args_key"] == '{"n":%s}' % big and tool["arguments"] == {"n": int(big)}
        assert calls.loc[0, "args_key"] == '{"n":%s}' % (key or call_n)
        res = join_sessions(steps, calls)
        assert (res.sessions.loc[0, "status"] == "matched") is agree, call_n


def test_tool_use_ids_of_one_client_do_not_set_the_clock_for_the_others():
    """Transcript t1 (a client whose door calls logged its tool-use ids) runs on a machine two
    minutes behind the door; t2 (no ids) runs on the door's clock, and door session s3 repeats
    t2's calls two minutes after s2.  The ids pair t1 whatever the clocks say, so they say
    nothing about t2's clock: t2 belongs to s2.  The ids' offset (120 s) had been used for the
    content match too, and t2 was confidently matched to s3."""
    a = [("list", {"path": "demo/"}), ("read", {"path": "a"}), ("read", {"path": "b"})]
    b = [("query", {"sql": "select 2"}), ("query", {"sql": "select 3"}), ("read", {"path": "y"})]
    steps = steps_frame([("t1", -120 + 10 * i, t, x, f"toolu_{i}") for i, (t, x) in enumerate(a)]
                        + [("t2", 200 + 10 * i, t, x, None) for i, (t, x) in enumerate(b)])
    calls = calls_frame([("s1", 0.3 + 10 * i, t, x, f"toolu_{i}") for i, (t, x) in enumerate(a)]
                        + [("s2", 200.3 + 10 * i, t, x, None) for i, (t, x) in enumerate(b)]
                        + [("s3", 320.3 + 10 * i, t, x, None) for i, (t, x) in enumerate(b)])
    res = join_sessions(steps, calls)
    assert res.assignments() == {"s1": "t1", "s2": "t2", "s3": None}
    s = res.sessions.set_index("door_session")
    assert s.loc["s1", "method"] == "meta_id" and s.loc["s2", "status"] == "matched"
    assert s.loc["s1", "offset_ms"] == pytest.approx(120300.0) and s.loc["s2", "offset_ms"] == pytest.approx(300.0)


@pytest.mark.parametrize("skew", [50, -50, 250])
def test_a_clock_offset_is_found_where_sessions_repeat_the_same_calls_a_minute_apart(skew):
    """Three agents run the same four calls about a minute apart, each at its own pace; the
    transcripts' clock is ``skew`` seconds behind the door's.  Each step's *nearest* same-call
    door call is then often another agent's (a minute minus the skew away), and the median of
    those nearest differences slid every transcript onto its neighbour's session: two wrong
    links reported 'matched' with margin 4.  The offset most steps agree on is the skew."""
    keys = [("list", {"path": "demo/"}), ("read", {"path": "a"}), ("read", {"path": "b"}), ("query", {"sql": "1"})]
    starts = {"0": 0, "1": 70, "2": 140}
    gaps = {"0": [0, 7, 19, 26], "1": [0, 12, 15, 30], "2": [0, 5, 20, 24]}
    st, ca = [], []
    for k in "012":
        for g, (tool, args) in zip(gaps[k], keys):
            st.append((f"t{k}", starts[k] + g - skew, tool, args, None))
            ca.append((f"s{k}", starts[k] + g + 0.4, tool, args, None))
    res = join_sessions(steps_frame(st), calls_frame(ca))
    assert res.assignments() == {"s0": "t0", "s1": "t1", "s2": "t2"}
    assert res.offset_ms == pytest.approx(skew * 1000 + 400)
    assert set(res.sessions.status) == {"matched"}


def test_clocks_the_full_max_offset_apart_are_found_with_the_calls_latency_on_top():
    """max_offset_s bounds how far apart the clocks are; each door call also arrives a little
    after its step (0.3 s here), which the window covers.  A transcript clock exactly 300 s
    behind the door's (the default max_offset_s) was missed: its step−call differences of
    300.3 s lay outside the range searched, and nothing agreed.  The offset applied stays at
    max_offset_s itself (the 0.3 s travel shows as each pair's |Δt|)."""
    keys = [("list", {"path": "demo/"}), ("read", {"path": "a"}), ("read", {"path": "b"}), ("query", {"sql": "1"})]
    steps = steps_frame([("t1", -300 + 10 * i, t, a, None) for i, (t, a) in enumerate(keys)]
                        + [("t2", -300 + 10 * i, t, a, None) for i, (t, a) in enumerate(keys[:3] + [("query", {"sql": "2"})])])
    calls = calls_frame([("s1", 0.3 + 10 * i, t, a, None) for i, (t, a) in enumerate(keys)]
                        + [("s2", 0.3 + 10 * i, t, a, None) for i, (t, a) in enumerate(keys[:3] + [("query", {"sql": "2"})])])
    res = join_sessions(steps, calls)
    assert res.assignments() == {"s1": "t1", "s2": "t2"}
    assert res.offset_ms == pytest.approx(300300.0)
    assert (res.scores.loc[res.scores.agreed == 4, "median_abs_delta_ms"] == 300).all()
    assert res.notes == []  # (a call's travel past the limit is no clock beyond it)
    # (the clocks may not be further apart than asked)
    assert join_sessions(steps, calls, max_offset_s=200).assignments() == {"s1": None, "s2": None}


def test_a_call_paired_by_its_id_but_naming_other_arguments_is_reported():
    """The transcript was edited after the fact: its third step now reads a harmless file, where
    the door logged (with that step's own tool-use id) a read of reference/.env.  The id decides
    the link, but the session had read 'Certain (by tool-use id)' with nothing to say that the
    two records disagree on what was called."""
    from replaybook.report.sections import confidence_sentence

    door_saw = [("list", {"path": "demo/"}), ("read", {"path": "demo/a"}), ("read", {"path": "reference/.env"})]
    transcript_says = door_saw[:2] + [("read", {"path": "demo/readme.txt"})]
    steps = steps_frame([("t1", 10 * i, t, a, f"toolu_{i}") for i, (t, a) in enumerate(transcript_says)])
    calls = calls_frame([("s1", 10 * i + 0.3, t, a, f"toolu_{i}") for i, (t, a) in enumerate(door_saw)])
    res = join_sessions(steps, calls)
    row = res.sessions.iloc[0]
    assert (row.transcript_id, int(row.agreed), row.method) == ("t1", 3, "meta_id")
    assert int(row.id_mismatches) == 1 and int(row.id_conflicts) == 0
    text = confidence_sentence(row.to_dict(), 60)
    assert "Certain" not in text and "Disputed" in text and "other arguments" in text
    # another tool under the step's id is a mismatch too; a call logged without arguments is not
    calls.loc[2, "tool"] = "delete"
    assert int(join_sessions(steps, calls).sessions.iloc[0].id_mismatches) == 1
    calls.loc[2, "tool"], calls.loc[2, "args_key"] = "read", None
    assert int(join_sessions(steps, calls).sessions.iloc[0].id_mismatches) == 0


def test_far_pairs_are_those_more_than_5_s_off_their_sessions_offset():
    from replaybook.frames import PAIRS, SESSIONS
    from replaybook.join import far_pairs

    t = pd.Timestamp("2026-09-13T10:00:00Z")
    pairs = PAIRS.build([dict(door_session="a", transcript_id="t", step_seq=i, call_seq=i + 1, tool="x",
                              args_key="{}", step_ts=t, call_ts=t, delta_ms=d, how="content")
                         for i, d in enumerate([400.0, 450.0, 20_400.0, -6_000.0])])
    sessions = SESSIONS.build([dict(door_session="a", offset_ms=400.0, status="matched")])
    far = far_pairs(pairs, sessions)
    assert far["call_seq"].tolist() == [3, 4] and far["off_by"].tolist() == [20_000.0, -6_400.0]
    assert far_pairs(None, sessions).empty and far_pairs(pairs, None).empty


def _door_log(path: Path, session: str, calls: list[tuple[datetime, str, dict]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"ts": t.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                                        "seq": i + 1, "session": session, "agent": "analyst", "tool": tool,
                                        "arguments": args, "object": args.get("path"), "decision": "allow",
                                        "rule": "allow-demo"}) + "\n"
                            for i, (t, tool, args) in enumerate(calls)))
    return path


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_codex_rollouts_join_their_door_sessions_end_to_end(tmp_path):
    """Two Codex rollouts (arguments as JSON strings, one with a duplicated last line, built-in
    shell calls beside the MCP ones) and two door sessions whose clock runs 300 ms ahead: each
    session gets its own rollout, every door call is claimed, and no step is left over."""
    from replaybook.sources.codex import load_codex

    def rollout(sid: str, start: datetime, calls: list[tuple[str, str, str]], dup_last: bool = False) -> Path:
        lines = [{"timestamp": _iso(start), "type": "session_meta",
                  "payload": {"id": sid, "cli_version": "0.63.0", "source": "cli"}}]
        for i, (name, args, cid) in enumerate(calls):
            t = start + timedelta(seconds=5 * (i + 1))
            lines.append({"timestamp": _iso(t), "type": "response_item",
                          "payload": {"type": "function_call", "name": name, "arguments": args, "call_id": cid}})
            lines.append({"timestamp": _iso(t + timedelta(milliseconds=400)), "type": "response_item",
                          "payload": {"type": "function_call_output", "call_id": cid, "output": "ok"}})
        if dup_last:
            lines.append(lines[-2])
        p = tmp_path / "codex" / f"rollout-2026-09-13T10-00-00-{sid}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("".join(json.dumps(x) + "\n" for x in lines))
        return p

    a, b = "019a0000-0000-7000-8000-00000000000a", "019a0000-0000-7000-8000-00000000000b"
    rollout(a, T0, [("mcp__door__list_folder", '{"path": "demo/"}', "a1"),
                    ("shell", '{"command": ["ls"]}', "a2"),
                    ("mcp__door__describe", '{ "path":"demo/cars.xpt", "rows": 5.0 }', "a3")], dup_last=True)
    rollout(b, T0 + timedelta(seconds=60), [("mcp__door__list_folder", '{"path":"demo/"}', "b1"),
                                            ("mcp__door__describe", '{"rows":5,"path":"demo/cars.parquet"}', "b2")])
    skew = timedelta(milliseconds=300)
    _door_log(tmp_path / "door" / "analyst" / "s-a.jsonl", "s-a", [
        (T0 + timedelta(seconds=5) + skew, "list_folder", {"path": "demo/"}),
        (T0 + timedelta(seconds=15) + skew, "describe", {"path": "demo/cars.xpt", "rows": 5})])
    _door_log(tmp_path / "door" / "analyst" / "s-b.jsonl", "s-b", [
        (T0 + timedelta(seconds=65) + skew, "list_folder", {"path": "demo/"}),
        (T0 + timedelta(seconds=70) + skew, "describe", {"path": "demo/cars.parquet", "rows": 5})])
    steps = load_codex(tmp_path / "codex").frame
    calls = load_door(tmp_path / "door").frame
    res = join_sessions(steps, calls)
    assert res.assignments() == {"s-a": a, "s-b": b}
    s = res.sessions.set_index("door_session")
    assert s["agreed"].tolist() == [2, 2] and s["status"].tolist() == ["matched", "matched"]
    assert s["unclaimed_calls"].tolist() == [0, 0] and s["unmatched_steps"].tolist() == [0, 0]
    assert res.offset_ms == pytest.approx(300.0) and res.door_servers == ["door"]
    assert set(res.pairs["call_id"]) == {"a1", "a3", "b1", "b2"}


def test_an_otel_trace_joins_its_door_session_end_to_end(tmp_path):
    """An OTel trace whose framework recorded execute_tool spans for some calls (arguments as
    JSON text) and only the model's tool_call parts for another joins the door session that
    logged the three calls."""
    from replaybook.sources.otel import load_otel

    base = int(T0.timestamp() * 1e9)

    def v(x):
        return {"stringValue": x} if isinstance(x, str) else {"intValue": str(x)}

    def span(sid, name, start_s, end_s, attrs, parent="a000000000000001"):
        return {"traceId": "5bf92f3577b34da6a3ce929d0e0e4736", "spanId": sid, "parentSpanId": parent, "name": name,
                "startTimeUnixNano": str(base + int(start_s * 1e9)), "endTimeUnixNano": str(base + int(end_s * 1e9)),
                "attributes": [{"key": k, "value": v(x)} for k, x in attrs.items()]}

    out = json.dumps([{"role": "assistant", "parts": [
        {"type": "tool_call", "id": "call_3", "name": "mcp__door__summarise",
         "arguments": {"path": "demo/cars.xpt", "columns": ["mpg"]}}]}])
    spans = [
        {**span("a000000000000001", "invoke_agent analyst", 0, 60, {"gen_ai.operation.name": "invoke_agent",
                                                                    "gen_ai.conversation.id": "conv-9"}),
         "parentSpanId": ""},
        span("c000000000000001", "execute_tool list_folder", 5, 5.2,
             {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "mcp__door__list_folder",
              "gen_ai.tool.call.id": "call_1", "gen_ai.tool.call.arguments": '{"path": "demo/"}'}),
        span("c000000000000002", "execute_tool describe", 10, 10.3,
             {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "describe",
              "gen_ai.tool.call.id": "call_2", "gen_ai.tool.call.arguments": '{"path":"demo/cars.xpt"}'}),
        span("b000000000000001", "chat gpt-4.1", 12, 14.9, {"gen_ai.operation.name": "chat",
                                                            "gen_ai.output.messages": out}),
    ]
    p = tmp_path / "otel" / "trace.jsonl"
    p.parent.mkdir()
    p.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}) + "\n")
    skew = timedelta(milliseconds=150)
    _door_log(tmp_path / "door" / "analyst" / "s-o.jsonl", "s-o", [
        (T0 + timedelta(seconds=5) + skew, "list_folder", {"path": "demo/"}),
        (T0 + timedelta(seconds=10) + skew, "describe", {"path": "demo/cars.xpt"}),
        (T0 + timedelta(seconds=15) + skew, "summarise", {"columns": ["mpg"], "path": "demo/cars.xpt"})])
    steps = load_otel(p).frame
    res = join_sessions(steps, load_door(tmp_path / "door").frame)
    s = res.sessions.iloc[0]
    assert (s["transcript_id"], s["agreed"], s["status"], s["unclaimed_calls"]) == ("conv-9", 3, "matched", 0)
    assert sorted(res.pairs["call_id"]) == ["call_1", "call_2", "call_3"]
    assert res.offset_ms == pytest.approx(150.0, abs=100)


def _offset_case():
    """t1's agent and the door agree on the clock; t2's machine is two hours ahead of its
    transcript's (a time zone written as UTC); s3 repeats t1's three calls an hour later, and
    its own transcript is not among the inputs."""
    st = [("t1", i * 10, "read", {"path": f"a{i}"}, None) for i in range(3)]
    ca = [("s1", i * 10 + 0.2, "read", {"path": f"a{i}"}, None) for i in range(3)]
    st += [("t2", 100 + i * 10, "read", {"path": f"b{i}"}, None) for i in range(5)]
    ca += [("s2", 100 + i * 10 + 7200.4, "read", {"path": f"b{i}"}, None) for i in range(5)]
    ca += [("s3", 3600 + i * 10 + 0.2, "read", {"path": f"a{i}"}, None) for i in range(3)]
    return steps_frame(st), calls_frame(ca)


def test_a_wider_max_offset_names_the_sessions_it_joined_otherwise():
    """max_offset_s 7200, set to reach t2's clock, also moved the common offset to +2 h: t1's
    own session s1 fell unmatched and t1 went to s3, an hour later, with no message."""
    import replaybook.join as J

    steps, calls = _offset_case()
    res = join_sessions(steps, calls)
    assert res.assignments() == {"s1": "t1", "s3": None, "s2": None}
    # at the default nothing is joined again, and nothing is named
    assert J.offset_changes(steps, calls, res.sessions, max_offset_s=300).empty
    wide = join_sessions(steps, calls, max_offset_s=7200)
    assert wide.assignments() == {"s1": None, "s3": "t1", "s2": "t2"}
    ch = J.offset_changes(steps, calls, wide.sessions, max_offset_s=7200)
    assert [{k: (None if pd.isna(v) else v) for k, v in r.items()} for r in ch.to_dict("records")] == [
        dict(door_session="s1", status="unmatched", transcript_id=None, agreed=None, offset_ms=None,
             max_offset_s=7200.0, default_status="matched", default_transcript="t1", default_agreed=3,
             default_offset_ms=200.0, default_max_offset_s=300.0, clock_transcript=None, clock_offset_s=None),
        dict(door_session="s3", status="matched", transcript_id="t1", agreed=3, offset_ms=3600200.0,
             max_offset_s=7200.0, default_status="unmatched", default_transcript=None, default_agreed=None,
             default_offset_ms=None, default_max_offset_s=300.0, clock_transcript=None, clock_offset_s=None),
        dict(door_session="s2", status="matched", transcript_id="t2", agreed=5, offset_ms=7200400.0,
             max_offset_s=7200.0, default_status="unmatched", default_transcript=None, default_agreed=None,
             default_offset_ms=None, default_max_offset_s=300.0, clock_transcript="t2", clock_offset_s=7200.4)]
    assert ch.dtypes.astype(str).to_dict() == {
        "door_session": "string", "status": "string", "transcript_id": "string", "agreed": "Int64",
        "offset_ms": "float64", "max_offset_s": "float64", "default_status": "string",
        "default_transcript": "string", "default_agreed": "Int64", "default_offset_ms": "float64",
        "default_max_offset_s": "float64", "clock_transcript": "string", "clock_offset_s": "float64"}
    assert [J.offset_change_text(r) for r in ch.to_dict("records")] == [
        "with max_offset_s 300 (the default) it was matched to transcript t1 (3 agreeing steps, clock offset "
        "+0.2 s); at 7200 it is unmatched",
        "with max_offset_s 300 (the default) it was unmatched; at 7200 it is matched to transcript t1 (3 agreeing "
        "steps, clock offset +3,600.2 s)",
        "with max_offset_s 300 (the default) it was unmatched; at 7200 it is matched to transcript t2 (5 agreeing "
        "steps, clock offset +7,200.4 s): transcript t2 needed the wider search; give its clock instead, "
        "clock_offsets: {t2: 7200.4} in the manifest, and keep max_offset_s at 300, which leaves every other "
        "transcript's search as it was"]
    # what it recommends joins both, each to its own session
    assert join_sessions(steps, calls, clock_offsets={"t2": 7200.4}).assignments() == {
        "s1": "t1", "s3": None, "s2": "t2"}
    # a wider search that joins every session as the default does names none
    only = steps[steps["transcript_id"] == "t1"]
    near = calls[calls["door_session"] == "s1"]
    assert join_sessions(only, near, max_offset_s=7200).assignments() == {"s1": "t1"}
    assert J.offset_changes(only, near, join_sessions(only, near, max_offset_s=7200).sessions,
                            max_offset_s=7200).empty


def test_a_narrower_max_offset_names_the_session_it_left_unmatched():
    """max_offset_s 0 (the clocks agree) leaves a session whose agent's clock is 2 min behind
    unmatched; the default had joined it, and its transcript's own clock joins it at 0 too."""
    import replaybook.join as J

    st = [("t1", i * 10, "read", {"path": f"a{i}"}, None) for i in range(3)]
    ca = [("s1", i * 10 + 0.2, "read", {"path": f"a{i}"}, None) for i in range(3)]
    st += [("t2", 100 + i * 10, "read", {"path": f"b{i}"}, None) for i in range(4)]
    ca += [("s2", 100 + i * 10 + 120.5, "read", {"path": f"b{i}"}, None) for i in range(4)]
    steps, calls = steps_frame(st), calls_frame(ca)
    zero = join_sessions(steps, calls, max_offset_s=0)
    assert zero.assignments() == {"s1": "t1", "s2": None}
    ch = J.offset_changes(steps, calls, zero.sessions, max_offset_s=0)
    assert ch[["door_session", "status", "default_status", "default_transcript", "default_agreed",
               "clock_transcript", "clock_offset_s"]].astype(object).to_dict("records") == [
        dict(door_session="s2", status="unmatched", default_status="matched", default_transcript="t2",
             default_agreed=4, clock_transcript="t2", clock_offset_s=120.5)]
    assert J.offset_change_text(ch.iloc[0], cli=True) == (
        "with --max-offset 300 (the default) it was matched to transcript t2 (4 agreeing steps, clock offset "
        "+120.5 s); at 0 it is unmatched: transcript t2 needs a clock offset that --max-offset 0 does not look "
        "for; to join it at 0, give its clock, --clock-offset t2=120.5 (or clock_offsets in the manifest)")
    assert join_sessions(steps, calls, max_offset_s=0, clock_offsets={"t2": 120.5}).assignments() == {
        "s1": "t1", "s2": "t2"}


def test_order_keeping_nearest_choice_all_at_once_equals_one_at_a_time_and_every_choice():
    """The groups whose sides differ are paired all at once; each group's choice is the one of
    every order-keeping choice with the least summed distance, of equal sums the earliest."""
    from itertools import combinations

    import numpy as np

    from replaybook.join import _ordered_nearest, _ordered_nearest_many
    rng = np.random.default_rng(7)
    for _ in range(300):
        groups = []
        for _ in range(int(rng.integers(1, 5))):
            m = int(rng.integers(1, 5))
            n = m + int(rng.integers(1, 4))
            groups.append((np.sort(rng.integers(0, 15, n)), np.sort(rng.integers(0, 15, m))))
        got = _ordered_nearest_many(np.concatenate([g[0] for g in groups]), np.array([len(g[0]) for g in groups]),
                                    np.concatenate([g[1] for g in groups]), np.array([len(g[1]) for g in groups]))
        base = at = 0
        for long, short in groups:
            every = min(combinations(range(len(long)), len(short)),
                        key=lambda ks: (sum(abs(int(long[k]) - int(b)) for k, b in zip(ks, short)), ks))
            assert list(got[at:at + len(short)] - base) == list(every) == list(_ordered_nearest(long, short))
            base += len(long)
            at += len(short)


def test_a_step_a_door_call_claims_is_a_door_bound_step_whatever_server_it_names():
    # a client that records no server for its MCP calls (server NA): two steps agreed with the
    # door's calls, yet transcript_tool_steps said 0, since only named servers were door-bound
    steps = steps_frame([("t1", 0, "read", {"path": "a"}, None), ("t1", 5, "read", {"path": "b"}, None),
                         ("t1", 9, "update", {"path": "r"}, None)])
    steps["server"] = pd.array([pd.NA] * 3, dtype="string")
    steps["tool_raw"] = steps["tool"]
    calls = calls_frame([("s1", 0.2, "read", {"path": "a"}, None), ("s1", 5.2, "read", {"path": "b"}, None)])
    res = join_sessions(steps, calls)
    s1 = res.sessions.set_index("door_session").loc["s1"]
    assert (s1.agreed, s1.transcript_tool_steps, s1.unmatched_steps) == (2, 2, 0)
    assert res.door_servers == []
    # the OTel loader's marker for an MCP tools/call span that names no server: the door's server,
    # so the call the door never logged is a residual
    steps["server"] = pd.array(["(unnamed MCP server)"] * 3, dtype="string")
    res = join_sessions(steps, calls)
    s1 = res.sessions.set_index("door_session").loc["s1"]
    assert (s1.agreed, s1.transcript_tool_steps, s1.unmatched_steps) == (2, 3, 1)
    assert res.door_servers == ["(unnamed MCP server)"]
    assert res.unmatched_steps[["tool", "args_key"]].values.tolist() == [["update", '{"path":"r"}']]


def test_a_call_whose_arguments_the_door_did_not_log_never_agrees_on_arguments(tmp_path):
    """A door line with ``arguments: null`` (too large to log: only their size and digest) was
    loaded as ``{}`` and agreed by content with a step whose arguments were ``{}``; it holds no
    arguments to compare, so only tool and time (or a logged tool-use id) may pair it."""
    log = tmp_path / "door" / "analyst" / "s1.jsonl"
    log.parent.mkdir(parents=True)
    base = {"session": "s1", "agent": "analyst", "tool": "read", "object": None, "decision": "deny",
            "rule": "door:arguments-too-large", "arguments": None, "arguments_bytes": 2_000_000,
            "arguments_digest": "sha256:" + "a" * 64}
    lines = [{**base, "seq": 1, "ts": "2026-09-13T10:00:00.100Z"},
             {**base, "seq": 2, "ts": "2026-09-13T10:00:20.100Z", "meta": {"claudecode/toolUseId": "toolu_2"}}]
    log.write_text("".join(json.dumps(o) + "\n" for o in lines))
    calls = load_door(tmp_path / "door").frame
    assert calls["args_key"].isna().all()
    steps = steps_frame([("t1", 0, "read", {}, "toolu_1"), ("t1", 20, "read", {"path": "big"}, "toolu_2")])
    res = join_sessions(steps, calls, max_offset_s=0)
    assert res.assignments() == {"s1": "t1"}
    p = res.pairs.sort_values("call_seq")
    assert p["how"].tolist() == ["tool_time", "meta_id"]
    assert res.sessions.iloc[0].method != "content"
