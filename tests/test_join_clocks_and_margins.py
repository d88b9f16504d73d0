"""Two join rules on mixed clocks and crowded incidents.

* A transcript the tool-use ids pair runs on the clock those pairs measure: its calls the door
  logged without the id are found on that clock, not at the common offset read from the other
  transcripts (another machine's, when most of them run there).
* A session's margin never says "sure" when its transcript agrees as well with another session,
  however large the connected group of sessions sharing calls is (the sparse path's margin
  looked at the session's other transcripts only).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from replaybook.canonical import canonical_args
from replaybook.frames import CALLS, STEPS
from replaybook.join import _EXACT_MARGIN_LIMIT, join_sessions

T0 = datetime(2026, 9, 13, 10, 0, tzinfo=timezone.utc)


def _steps(rows):
    return STEPS.build([dict(transcript_id=t, client="claude-code", seq=i, ts=T0 + timedelta(seconds=s),
                             kind="tool_call", tool_raw=f"mcp__door__{tool}", server="door", tool=tool,
                             call_id=cid, arguments=a, args_key=canonical_args(a))
                        for i, (t, s, tool, a, cid) in enumerate(rows)])


def _calls(rows):
    return CALLS.build([dict(door_session=ss, agent="analyst", seq=i + 1, ts=T0 + timedelta(seconds=s), tool=tool,
                             arguments=a, args_key=canonical_args(a), object=a.get("path"), decision="allow",
                             rule="r", meta_call_id=m) for i, (ss, s, tool, a, m) in enumerate(rows)])


def _two_machines(ids_for: int, b_steps: int = 8):
    """Agent A on the door's clock (calls 0.3 s after their steps; the door logged the client's id
    for its first ``ids_for`` calls of 6); agent B on a machine 240 s behind, no ids."""
    st, ca = [], []
    for i in range(6):
        st.append(("tA", i * 10, "read", {"path": f"a{i}"}, f"toolu_a{i}"))
        ca.append(("sA", i * 10 + 0.3, "read", {"path": f"a{i}"}, f"toolu_a{i}" if i < ids_for else None))
    for i in range(b_steps):
        st.append(("tB", 100 + i * 10, "read", {"path": f"b{i}"}, None))
        ca.append(("sB", 100 + i * 10 + 240, "read", {"path": f"b{i}"}, None))
    return _steps(st), _calls(ca)


def test_calls_logged_without_the_id_are_found_on_the_clock_the_ids_measure():
    r = join_sessions(*_two_machines(ids_for=4))
    assert r.sessions.set_index("door_session").loc["sB", "offset_ms"] == 240000.0
    s = r.sessions.set_index("door_session")
    assert s.loc["sA", "transcript_id"] == "tA" and s.loc["sB", "transcript_id"] == "tB"
    assert int(s.loc["sA", "agreed"]) == 6 and s.loc["sA", "offset_ms"] == 300.0
    assert int(s.loc["sA", "unclaimed_calls"]) == 0 and int(s.loc["sA", "unmatched_steps"]) == 0
    a = r.pairs[r.pairs["door_session"] == "sA"].sort_values("call_seq")
    assert a["how"].tolist() == ["meta_id"] * 4 + ["content"] * 2
    assert a["delta_ms"].tolist() == [300.0] * 6  # (door − transcript, ms)
    assert r.n_unclaimed_calls == 0 and r.n_unmatched_steps == 0


def test_the_ids_clock_reaches_steps_a_gateway_logged_without_arguments():
    st, ca = _two_machines(ids_for=4)
    ca = ca.copy()
    last = ca.index[(ca["door_session"] == "sA") & ca["meta_call_id"].isna()]
    ca.loc[last, ["arguments", "args_key"]] = None  # (a count or a hash was logged, not the arguments)
    r = join_sessions(st, ca)
    s = r.sessions.set_index("door_session")
    assert int(s.loc["sA", "agreed"]) == 6 and int(s.loc["sA", "unclaimed_calls"]) == 0
    assert sorted(r.pairs.loc[r.pairs["door_session"] == "sA", "how"]) == ["meta_id"] * 4 + ["tool_time"] * 2


def test_without_ids_the_transcript_is_left_to_its_own_clock_search():
    # (the same incident with no ids: A agrees with none of its steps at B's clock, and finds its own)
    r = join_sessions(*_two_machines(ids_for=0))
    s = r.sessions.set_index("door_session")
    assert s.loc["sA", "transcript_id"] == "tA" and int(s.loc["sA", "agreed"]) == 6


def _crowd(background: int):
    """Transcript tq agrees 7/7 with its session sq1 (+0.3 s) and with sq2, a rerun of the same
    calls 20 s later whose transcript is not given; ``background`` other agents each make one
    call every agent makes (one list of ".") besides their own, chaining everything into one
    connected group."""
    st, ca = [], []
    for i in range(6):
        st.append(("tq", i * 5, "read", {"path": f"q{i}"}, None))
        ca.append(("sq1", i * 5 + 0.3, "read", {"path": f"q{i}"}, None))
        ca.append(("sq2", i * 5 + 20.3, "read", {"path": f"q{i}"}, None))
    st.append(("tq", 31, "list_folder", {"path": "."}, None))
    ca.append(("sq1", 31.3, "list_folder", {"path": "."}, None))
    ca.append(("sq2", 51.3, "list_folder", {"path": "."}, None))
    for b in range(background):
        t0 = 2 + (b % 40)
        st.append((f"tb{b}", t0, "list_folder", {"path": "."}, None))
        ca.append((f"sb{b}", t0 + 0.3, "list_folder", {"path": "."}, None))
        for i in range(2):
            st.append((f"tb{b}", t0 + 1 + i, "read", {"path": f"b{b}_{i}"}, None))
            ca.append((f"sb{b}", t0 + 1.3 + i, "read", {"path": f"b{b}_{i}"}, None))
    return _steps(st), _calls(ca)


def test_a_transcript_two_sessions_share_equally_is_ambiguous_in_a_small_group():
    r = join_sessions(*_crowd(background=3))
    s = r.sessions.set_index("door_session")
    assert s.loc["sq1", "transcript_id"] == "tq" and s.loc["sq1", "status"] == "ambiguous"
    assert float(s.loc["sq1", "margin"]) == 0.0 and s.loc["sq2", "status"] == "unmatched"


def test_a_transcript_two_sessions_share_equally_is_ambiguous_in_a_large_group():
    n = _EXACT_MARGIN_LIMIT  # (more nodes than the exact margins are computed for)
    r = join_sessions(*_crowd(background=n))
    s = r.sessions.set_index("door_session")
    assert s.loc["sq1", "transcript_id"] == "tq" and s.loc["sq1", "status"] == "ambiguous"
    # its margin: its 7 agreeing steps less the 7 tq agrees with sq2, as the exact path gives it
    assert float(s.loc["sq1", "margin"]) == 0.0 and s.loc["sq2", "status"] == "unmatched"
    # every background agent keeps its own transcript, each sure of it
    bg = s.loc[[f"sb{b}" for b in range(n)]]
    assert (bg["transcript_id"] == [f"tb{b}" for b in range(n)]).all()
    assert (bg["status"] == "matched").all()


def test_one_late_id_pair_is_no_clock_for_steps_that_agree_already():
    """The door logged the id of one call only, which reached it two minutes late (the user
    approved it then): its other five steps agree at the common offset and stay paired there."""
    st, ca = [], []
    for i in range(6):
        st.append(("tA", i * 200, "read", {"path": f"a{i}"}, f"toolu_{i}"))
        ca.append(("sA", i * 200 + (120 if i == 0 else 0.3), "read", {"path": f"a{i}"}, "toolu_0" if i == 0 else None))
    r = join_sessions(_steps(st), _calls(ca))
    s = r.sessions.set_index("door_session").loc["sA"]
    assert (int(s["agreed"]), int(s["unclaimed_calls"]), int(s["unmatched_steps"])) == (6, 0, 0)
    assert r.pairs.sort_values("call_seq")["how"].tolist() == ["meta_id"] + ["content"] * 5


def test_two_id_pairs_are_needed_for_a_clock():
    # (the two-machine incident with one id pair only: A's other steps are left to its own clock search)
    r = join_sessions(*_two_machines(ids_for=1))
    s = r.sessions.set_index("door_session")
    assert s.loc["sA", "transcript_id"] == "tA" and int(s.loc["sA", "agreed"]) == 6


def test_the_ids_clock_reaches_a_transcript_whose_other_steps_have_no_arguments():
    """Its other steps logged no arguments (a client whose arguments did not parse): nothing of it
    agrees at the common offset, so the ids' clock is taken, and the tool-and-time tier finds them."""
    st, ca = _two_machines(ids_for=3)
    st = st.copy()
    idless = st.index[(st["transcript_id"] == "tA") & (st["seq"] >= 3)]
    st.loc[idless, ["arguments", "args_key"]] = None
    r = join_sessions(st, ca)
    s = r.sessions.set_index("door_session").loc["sA"]
    assert (int(s["agreed"]), int(s["unclaimed_calls"]), int(s["unmatched_steps"])) == (6, 0, 0)
    assert r.pairs.loc[r.pairs["door_session"] == "sA"].sort_values("call_seq")["how"].tolist() == \
        ["meta_id"] * 3 + ["tool_time"] * 3
