"""Join transcripts to the door sessions they came from.

Nothing in MCP carries the client's conversation id to the server, so a transcript and a door
session are joined by what both recorded.  A transcript ``tool_call`` step **agrees** with a door
call when

* the door logged the client's tool-use id in ``_meta`` and it equals the step's ``call_id``
  (``how = "meta_id"``: that exact key decides, whatever the times or arguments say), or
* the tool is the same (after the client's ``mcp__<server>__`` prefix is stripped), the
  canonical arguments are equal (:func:`replaybook.canonical_args`) and the door's time, after
  subtracting the estimated clock offset, is within ``window_s`` of the step's time — or, for a
  call that waited, up to the step's result (below) — (``how = "content"``), or
* one side has no arguments to compare (``args_key`` NA: a gateway that logs only a count or a
  hash, a client whose arguments did not parse), and the tool is the same within the window
  (again up to the step's result for a call that waited; ``how = "tool_time"``).  This is weaker evidence —
  the session's ``method`` says so, and the report lowers its confidence.  It pairs, per
  (transcript, session), the steps and calls no content pair of that same transcript and
  session holds: a step whose arguments agree with a call of *another* session still agrees
  here with a call the door logged without arguments (that other session may be given another
  transcript; a transcript keeps one session's pairs, so no step is claimed twice).

A tool result whose tool call's own line is missing from the transcripts (the line was damaged
and set aside, the file was cut before it, a resumed copy dropped it: :func:`orphan_results`)
still proves by its tool-use id which door call it answers: it stands in for its call in the
first tier only (``how = "meta_id"``, ``pairs.step_kind = "tool_result"``), counts in the
agreement like any id pair (``sessions.by_result_id`` says how many), never as an id mismatch
(it names no tool or arguments to contradict), and never among the transcript's tool steps or
their residuals; its time, written when the call ended, reads no clock offset.  A client that
sends the door no tool-use id (Codex) leaves only what the door logged of the answer: such a
result claims the door call it answers by the door's ``error`` text (``how = "result_text"``:
the door's refusal, which is what the agent was shown), by its tool where the result names one
(``result_tool``), or by the size of the answer (``calls.bytes`` equal to the result's
``text_bytes``, ``result_size``), the door handling the call within ``window_s`` of the result's
time (:func:`_result_pairs`) — weaker than an id, and counted the same way.  Like the tool-and-time
tier it is worked out per (transcript, session), before the assignment: only a pair of the
result's own transcript (or a tool-use id, anywhere) holds a call from it; a call whose
arguments agree with another transcript's step, or that another transcript's result claims, is
still this one's to claim (the assignment may give that session this transcript, and keeps one
transcript's pairs per session, so no call is claimed twice).

Within one (transcript, session) pair, steps and calls with the same tool and arguments are
paired in time order, one call per step, so a step repeated twice needs two calls to agree
twice.

**A call that waited.**  A step's ``ts`` is when the model asked for the call (Claude Code: the
assistant message; Gemini CLI: the message's time; Codex: the ``function_call`` line); the door receives
the call only once the client runs it — after the user approved it, which Claude Code, Codex and
Gemini CLI ask for before an MCP tool that is not allowed, and which may take minutes — and
before the step's result is written (``steps.result_ts``).  So a step with a ``result_ts`` agrees
(content and tool-and-time tiers; the tool-use id ignores time already) with a call whose time,
after the offset, lies in [``ts − window_s``, ``result_ts + slack``], the slack being the window
but no more than :data:`FAR_PAIR_MS` (5 s: one clock does not drift further within a session; a
call the door received after the result was written did not wait for that step, and the report
would not say it waited): first every step is paired within the window of its ``ts`` as above;
then a step left without a call within the window of its ``ts`` in *every* session takes, in
time order per (transcript, session, key), one of a session's calls that no step of its
transcript took, lying beyond the window of its ``ts`` and no later than the slack past its
result (:func:`_late_pairs`; one binary search more per step, for its own upper bound).  A step
some session's call answers within the window (content first; in the tool-and-time tier, a
content pair's or its own) did not wait, nor did a step its user declined (its result is the
client's own "the user doesn't want to proceed": :mod:`replaybook.sources._declined`; the client
never ran it): a call of another session in its span is another
agent's, and stays a door call no step claims.  A call within the window of a step's ``ts`` is
so never taken by an earlier step that ran long, and a step repeated twice still needs two
calls.  Such a pair reads no clock: the clock offsets
(common, a transcript's own, the one a session reports, ``JoinResult.offset_ms``) are read from
the pairs within the window of ``ts`` only (a session whose every pair waited reports the offset
applied to them); its time proximity (which breaks ties, ``scores.median_abs_delta_ms``) is the
window's edge, so that it is never nearer than a pair within the window of its step's time — a
call answering a step at once is the usual case, one that waited only a possible one;
:func:`far_pairs` says it waited.

**Clock offset and window.**  The clock offset the join applies (the common one, a transcript's
own, the one the tool-use ids measure) never exceeds ``max_offset_s``; only the offsets the
investigator gives (``clock_offsets``) may.  The window is applied after the offset: a step and
a call agree when their difference lies within ``window_s`` of the applied offset, so one pair's
raw difference may reach ``max_offset_s + window_s`` (a call's own latency, a clock drifting),
and the offset is read from the differences within that reach — but a clock that lies wholly
beyond ``max_offset_s`` (more than a call's travel to the door, a second) is not joined (:func:`far_clocks` names it, with the offset to give),
and a session whose pairs' median offset still lies beyond it (its transcript within the window
of a nearer applied offset) is named in ``JoinResult.notes``, never joined silently.  The **agreement** of a pair is its number of agreeing steps.

Transcripts are then assigned to sessions **one-to-one**, maximising the total agreement over
all sessions (ties broken by time proximity: the smaller median |Δt| wins — summed over the
assignment, each capped at the window), and never below ``min_agreed``.  This is what the naive
"each session takes its best transcript" rule gets wrong when a second session a minute later
repeats some of the first one's calls: both sessions' best transcript is then the first one.

**Exact ties.**  Where assignments are equal in total agreement *and* in summed proximity (two
door sessions with the same calls at the same times, a transcript copied under another id), the
join reports the one that pairs them in order of first activity: going through the door
sessions by their first call (then by id), each takes the transcript earliest by its first tool
step as recorded (then by id) that some best assignment still gives it, and no transcript only
when none does — the earliest session with the earliest transcript.  Proximity is compared
exactly (medians are multiples of 0.5 ms), so float rounding decides nothing, and neither does
the order of the input files or rows.  The tie is still reported: each session it gives a
transcript is ``ambiguous`` with margin 0 (one it leaves without is ``unmatched``).  This holds in groups of sessions and transcripts small enough to be
solved exactly (:data:`_EXACT_MARGIN_LIMIT`); in a larger group (many agents sharing a call,
chained into one) the solver picks among exact ties, the same way for the same ids whatever the
order of the rows (:func:`_settle_ties`).

For each session the result reports the transcript, agreement, share, runner-up, **margin**
(how much the best total agreement drops when this session may not have its transcript: 0 means
an equally good alternative assignment exists), status, clock offset and both residuals.

How it is computed (5 M calls × 2 M steps in seconds, not minutes): every string column is turned
into int64 codes once (by object identity first: the loaders hand the same ``str`` object for
repeated values); calls and steps are ordered by (key, time, row) with one ``np.sort`` of packed
int64 keys each, and each step's window of same-key calls is found by binary search on sorted
needles — no cross join, however many sessions share the same arguments; the time-order pairing
per (transcript, session, key) and the agreement per (transcript, session) are sorts of packed
keys too, with no per-group Python.  Tool-use ids are matched with a polars hash join when
polars is installed (a dependency; checked with Python's own ``==``; a dict look-up otherwise).  The
assignment first fixes the pairs every optimum must contain (see :func:`_match_sparse`).
Independent work runs on a second thread: the tool-use-id match (first of all), the session
codes and the per-session figures as soon as their inputs exist (:class:`_later`), and pairs of
integer jobs side by side (:func:`_together`: the two time indexes, the two window bounds, the
two distinct-pair sorts, the assignment beside the scores table); numpy releases the GIL in
sorts, binary searches and takes. At these sizes fresh memory (page faults) costs as much as the
arithmetic, so large arrays are built or reused in place where they can be.
Calls or steps without a door session / transcript id take part in no agreement.
"""

from __future__ import annotations

import ctypes
import itertools
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import connected_components, min_weight_full_bipartite_matching

from .errors import JoinError

try:  # optional: a faster hash join for tool-use ids
    import polars as pl
except ImportError:  # pragma: no cover
    pl = None
from .frames import CALLS, PAIRS, SESSIONS, STEPS
from .sources._declined import declined_by_user

__all__ = ["JoinResult", "join_sessions", "sub_agent_parents", "resumptions", "orphan_results", "untimed_note",
           "far_pairs", "far_pair_text", "far_clocks",
           "offset_changes", "unknown_clock_offsets", "clock_offsets_warning",
           "offset_change_text", "DEFAULT_WINDOW_S", "DEFAULT_MIN_AGREED", "DEFAULT_MAX_OFFSET_S", "MAX_SECONDS",
           "FAR_PAIR_MS", "OFFSETS_DIFFER_MS", "FAR_CLOCK_HORIZON_S", "GATEWAY_SEPARATORS", "prefixed_alike"]

#: Default agreement window between a transcript step and a door call, seconds.
DEFAULT_WINDOW_S = 60.0
#: Default minimum agreeing steps before a transcript may be assigned to a session.
DEFAULT_MIN_AGREED = 1
#: Default largest clock offset (door − transcript) the join looks for, seconds.
DEFAULT_MAX_OFFSET_S = 300.0
#: the largest window or clock offset a join takes, seconds (about 31 years: a finite number
#: whose milliseconds fit the join's integer arithmetic many times over)
MAX_SECONDS = 1e9
#: Components larger than this (sessions + transcripts) get an approximate margin.
_EXACT_MARGIN_LIMIT = 400


@dataclass
class JoinResult:
    """The outcome of :func:`join_sessions`.

    Attributes:
        sessions: :data:`~replaybook.frames.SESSIONS` frame, one row per door session, ordered
            by start time.
        pairs: :data:`~replaybook.frames.PAIRS` frame: the agreeing (step, call) pairs of the
            assigned (session, transcript) pairs.
        scores: every (door_session, transcript_id) pair with any agreement: columns
            ``door_session``, ``transcript_id`` (string), ``agreed`` (Int64), ``exact`` (Int64,
            agreeing steps matched by tool-use id), ``median_abs_delta_ms`` (float64; a call that
            waited counts as the window, never nearer than a call within it).
        unclaimed_calls: rows of ``calls`` that no step of their session's transcript claims
            (all calls of unmatched sessions), in (door_session, ts) order, indexed by their
            position in ``calls``.
            Built on first access (then kept): see *Residual frames* below.
        unmatched_steps: door-bound ``tool_call`` rows of assigned transcripts that no call of
            their session claims (see ``door_servers``), indexed by their position among the
            ``tool_call`` rows.  Built
            on first access, like ``unclaimed_calls``.
        unmatched_transcripts: transcript ids assigned to no session (a sub-agent's transcript
            is not listed apart from its parent's: see ``sub_agents``).
        sub_agents: ``{sub-agent transcript id: parent transcript id}``
            (:func:`sub_agent_parents`): a sub-agent's steps count as its parent's
            conversation — its tool calls go through the same MCP connections, so the same door
            session — and ``sessions.transcript_id`` names the parent; ``pairs.transcript_id``
            names each step's own transcript.  :meth:`transcripts_of` lists a conversation's.
        offset_ms: the door clock minus the transcript clock, median over all agreeing pairs
            of tool calls within the window of their step's time (ms; a call that waited for the
            user's approval is no clock: where every pair waited, the median offset applied to
            them), or ``None`` when nothing agreed.
        window_s: the window used, seconds.
        min_agreed: the minimum agreement used.
        door_servers: MCP server names (as the clients call the door) the door's calls show are
            behind it: the servers of steps that agree with a call, and of steps with the tool and
            arguments of some door call at any time (its session left unmatched, its clock beyond
            ``max_offset_s``; the same tool where one side logged no arguments); every server
            when there are none.  Steps of other servers and built-in tools never pass the door
            and are not residuals.
        warnings: sentences on what the join was given and could not use: ``clock_offsets``
            entries no transcript has (:func:`clock_offsets_warning`).
        notes: sentences on what the join read otherwise than logged: a door's tool compared
            under the name its clients called, with its server's prefix
            (:func:`_gateway_prefixed`).
        split_ids: the door calls paired with a step by the client's tool-use id that the
            assignment put in no link, so that the call is a door call no step claims (and the
            step, where its conversation has a session, a tool call with no door call) although
            the id proves they are one call — a session too small or too close in time to its
            conversation's other session to be taken as continuing it.  Columns
            ``door_session``, ``call_seq`` (Int64), ``call_row`` (Int64, as ``pairs.call_row``),
            ``call_id`` (the tool-use id), ``transcript_id`` (the step's own transcript),
            ``step_seq`` (Int64), ``conversation`` (the transcript whose conversation the step
            is: its parent's for a sub-agent's) and ``conversation_session`` (the door session
            that conversation was assigned, NA for none); by call row.  Empty when there is none.

    Residual frames: the join knows the residual *rows* (``n_unclaimed_calls``,
    ``n_unmatched_steps``, and per session in ``sessions``); the frames themselves are copies of
    those rows of the input frames (millions of rows on a large incident, of which the report
    shows the first few and the session view one session's), so they are taken from the inputs
    when first read.  The result keeps the two input frames referenced until then: change them
    in place after the join and the residual frames read the changed values.
    """

    sessions: pd.DataFrame
    pairs: pd.DataFrame
    scores: pd.DataFrame
    unmatched_transcripts: list[str]
    offset_ms: float | None
    window_s: float
    min_agreed: int
    door_servers: list[str] = field(default_factory=list)
    sub_agents: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    split_ids: pd.DataFrame = field(default_factory=lambda: _split_ids_frame({}))
    _residuals: "_Residuals | None" = field(default=None, repr=False, compare=False)

    def transcripts_of(self, transcript_id: str) -> list[str]:
        """The transcripts of one conversation: ``transcript_id`` first, then its sub-agents'
        (in ``sub_agents`` order)."""
        return [transcript_id] + [t for t, p in self.sub_agents.items() if p == transcript_id]

    @property
    def unclaimed_calls(self) -> pd.DataFrame:
        """Door calls no step claims (a :data:`~replaybook.frames.CALLS` frame; see the class)."""
        return self._residuals.unclaimed_calls() if self._residuals is not None else CALLS.empty()

    @property
    def unmatched_steps(self) -> pd.DataFrame:
        """Door-bound tool steps no call claims (a :data:`~replaybook.frames.STEPS` frame)."""
        return self._residuals.unmatched_steps() if self._residuals is not None else STEPS.empty()

    @property
    def n_unclaimed_calls(self) -> int:
        """Number of rows of :attr:`unclaimed_calls` (without building the frame)."""
        return len(self._residuals.call_rows) if self._residuals is not None else 0

    @property
    def n_unmatched_steps(self) -> int:
        """Number of rows of :attr:`unmatched_steps` (without building the frame)."""
        return len(self._residuals.step_rows) if self._residuals is not None else 0

    def assignments(self) -> dict[str, str | None]:
        """``{door_session: transcript_id or None}``."""
        return {
            s: (None if pd.isna(t) else str(t))
            for s, t in zip(self.sessions["door_session"], self.sessions["transcript_id"])
        }

    def to_dict(self, max_residuals: int = 1000) -> dict:
        """A JSON-ready summary: assignments, per-session verdicts, residual counts, offset, and
        the residuals themselves — ``unmatched_step_rows`` (``transcript_id``, ``seq``, ``ts``,
        ``tool``, ``call_id``) and ``unclaimed_call_rows`` (``door_session``, ``seq``, ``ts``,
        ``tool``, ``decision``), the first ``max_residuals`` of each (the counts say how many)."""
        sess = []
        for r in self.sessions.itertuples(index=False):
            d = {}
            for k, v in r._asdict().items():
                if isinstance(v, pd.Timestamp):
                    v = v.isoformat().replace("+00:00", "Z")
                elif v is pd.NA or (isinstance(v, float) and np.isnan(v)) or v is pd.NaT:
                    v = None
                elif isinstance(v, np.integer):
                    v = int(v)
                elif isinstance(v, (float, np.floating)):
                    v = float(v)
                    if k == "margin" and v.is_integer():  # a difference of step counts
                        v = int(v)
                d[k] = v
            sess.append(d)
        return {
            "window_s": self.window_s,
            "min_agreed": self.min_agreed,
            "offset_ms": self.offset_ms,
            "assignments": self.assignments(),
            "unmatched_transcripts": list(self.unmatched_transcripts),
            "sessions": sess,
            "unclaimed_calls": self.n_unclaimed_calls,
            "unmatched_steps": self.n_unmatched_steps,
            "unmatched_step_rows": _rows_json(self._residuals.head("steps", max_residuals),
                                              ("transcript_id", "seq", "ts", "tool", "call_id"))
            if self.n_unmatched_steps else [],
            "unclaimed_call_rows": _rows_json(self._residuals.head("calls", max_residuals),
                                              ("door_session", "seq", "ts", "tool", "decision"))
            if self.n_unclaimed_calls else [],
            "door_servers": list(self.door_servers),
            "sub_agents": dict(self.sub_agents),
            "warnings": list(self.warnings),
            "notes": list(self.notes),
            "split_ids": [{k: (None if pd.isna(v) else int(v) if k in ("call_seq", "call_row", "step_seq") else str(v))
                           for k, v in r.items()} for r in self.split_ids.to_dict("records")],
        }


def _rows_json(df: pd.DataFrame, cols: tuple) -> list[dict]:
    """The rows of ``df``'s ``cols`` as JSON-ready dicts (UTC times as ISO 8601 ``…Z``, NA as
    ``None``, integers as ``int``)."""
    out = []
    for r in df[list(cols)].to_dict("records"):
        d = {}
        for k, v in r.items():
            if isinstance(v, pd.Timestamp):
                v = v.isoformat().replace("+00:00", "Z")
            elif v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and np.isnan(v)):
                v = None
            elif isinstance(v, np.integer):
                v = int(v)
            else:
                v = str(v) if not isinstance(v, (int, float, bool)) else v
            d[k] = v
        out.append(d)
    return out


def _split_ids_frame(cols: dict) -> pd.DataFrame:
    """:attr:`JoinResult.split_ids` from its columns (empty without)."""
    out = {}
    for name, dtype in (("door_session", "string"), ("call_seq", "Int64"), ("call_row", "Int64"),
                        ("call_id", "string"), ("transcript_id", "string"), ("step_seq", "Int64"),
                        ("conversation", "string"), ("conversation_session", "string")):
        out[name] = pd.array(cols.get(name, []), dtype=pd.StringDtype("python") if dtype == "string" else dtype)
    return pd.DataFrame(out)


class _Residuals:
    """The residual rows of a join and the frames they come from; each frame is taken once."""

    __slots__ = ("calls", "call_rows", "steps", "step_rows", "step_labels", "_uc", "_us")

    def __init__(self, calls: pd.DataFrame, call_rows: np.ndarray, steps: pd.DataFrame,
                 step_rows: np.ndarray, step_labels: pd.Index):
        self.calls, self.call_rows = calls, call_rows
        self.steps, self.step_rows, self.step_labels = steps, step_rows, step_labels
        self._uc = self._us = None

    def unclaimed_calls(self) -> pd.DataFrame:
        if self._uc is None:
            self._uc = self.calls.take(self.call_rows)
            self.calls = None
        return self._uc

    def unmatched_steps(self) -> pd.DataFrame:
        if self._us is None:
            us = self.steps.take(self.step_rows)
            us.index = self.step_labels
            self._us, self.steps = us, None
        return self._us

    def head(self, which: str, n: int) -> pd.DataFrame:
        """The first ``n`` rows of ``unclaimed_calls`` or ``unmatched_steps`` without taking the
        whole frame (``to_dict`` lists a few of millions)."""
        if which == "calls":
            return self._uc.head(n) if self._uc is not None else self.calls.take(self.call_rows[:n])
        return self._us.head(n) if self._us is not None else self.steps.take(self.step_rows[:n])


#: How an agreeing pair was found (index = code in the arrays below).
HOW_META, HOW_CONTENT, HOW_TOOL_TIME = 0, 1, 2
#: a tool result standing in for its missing call whose tool-use id no door call logged, paired
#: by the door's error text, by its tool, or by the response size the door logged, each at a
#: time within the window (:func:`_result_pairs`)
HOW_RESULT_TEXT, HOW_RESULT_TOOL, HOW_RESULT_SIZE = 3, 4, 5
_HOW_NAMES = ("meta_id", "content", "tool_time", "result_text", "result_tool", "result_size")
#: A session's ``method`` for each set of ``how`` bits: the names joined by "+", None for none.
_METHODS = np.array([("+".join(n for b, n in enumerate(_HOW_NAMES) if bits & (1 << b)) or None)
                     for bits in range(1 << len(_HOW_NAMES))], dtype=object)
_I64_MAX = np.iinfo(np.int64).max
_NAT = np.iinfo(np.int64).min  # NaT as int64 nanoseconds
_EMPTY = np.empty(0, np.int64)


# --- integer building blocks ------------------------------------------------------------------
# Every string column becomes int64 codes once; after that all set work is sorting int64 keys
# with the payload packed into the low bits (numpy's np.sort is several times faster than
# argsort, lexsort or the hash-based np.unique on arrays of this size).


#: below this many values numpy's in-place sort is the quicker (polars' start-up costs more)
_POLARS_SORT_MIN = 100_000


def _sorted(a: np.ndarray) -> np.ndarray:
    """``a`` (a writable int64 array) sorted ascending: the same values ``a.sort()`` leaves,
    as a writable array (``a`` itself, sorted in place, or a new array; ``a`` is then left as
    it was).  Large arrays go to polars, whose sort is about three times numpy's here (2.5×
    on one core; the bench's 5 M keys: 0.12 s against 0.30 s).  Equal int64 values cannot be
    told apart, so the sort's stability does not matter."""
    if pl is None or len(a) < _POLARS_SORT_MIN:
        a.sort()
        return a
    return pl.Series(a).sort().to_numpy(writable=True)


def _in_sorted(a: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Which of ``q`` (int64) occur in ``a`` (int64, ascending): a bool array like ``q``, by
    binary search (no hash set of ``a``)."""
    if not len(a):
        return np.zeros(len(q), bool)
    pos = np.searchsorted(a, q)
    np.minimum(pos, len(a) - 1, out=pos)
    return a[pos] == q


def _together(*jobs):
    """The results of the callables ``jobs``, run at once: the first on this thread, each other
    on a thread of its own.  For numpy work on large integer arrays (sorts, binary searches,
    takes), which releases the GIL: on two cores two such jobs take about the time of one.
    The results do not depend on how the jobs interleave; an exception in any job is raised
    here once all have finished."""
    if len(jobs) == 1:
        return [jobs[0]()]
    out: list = [None] * len(jobs)
    err: list = [None] * len(jobs)

    def run(i):
        try:
            out[i] = jobs[i]()
        except BaseException as exc:  # noqa: BLE001 - re-raised below, on the caller's thread
            err[i] = exc

    threads = [threading.Thread(target=run, args=(i,), name="replaybook-join") for i in range(1, len(jobs))]
    for t in threads:
        t.start()
    try:
        run(0)
    finally:
        for t in threads:
            t.join()
    for e in err:
        if e is not None:
            raise e
    return out


class _later(threading.Thread):
    """``fn()`` started now on a thread of its own; :meth:`result` waits for its value (or
    raises its exception).  For work that holds the GIL little or in turns with the caller's
    (object passes beside integer sorts); the value does not depend on the interleaving."""

    def __init__(self, fn):
        super().__init__(name="replaybook-join", daemon=True)
        self._fn, self._value, self._error = fn, None, None
        self.start()

    def run(self) -> None:
        try:
            self._value = self._fn()
        except BaseException as exc:  # noqa: BLE001 - raised by result(), on the caller's thread
            self._error = exc

    def result(self):
        self.join()
        if self._error is not None:
            raise self._error
        return self._value


def _objects(col: pd.Series) -> np.ndarray:
    """The column's values as an object ndarray (no copy for python-backed strings)."""
    arr = col.array
    if isinstance(arr.dtype, pd.StringDtype) and arr.dtype.storage == "python":
        return np.asarray(arr)
    return col.to_numpy(dtype=object)


def _address_view(values: np.ndarray) -> np.ndarray | None:
    """The object addresses held by an object array, as an int64 view of its buffer (``None``
    if not a plain 1-D one).  Valid while ``values`` is; copy it before ``values`` goes.

    The array keeps every object alive while the caller holds it, so equal addresses mean the
    same object; nothing is dereferenced.
    """
    if values.dtype != object or values.ndim != 1 or values.itemsize != 8 or not values.flags.c_contiguous:
        return None
    if not len(values):
        return _EMPTY
    raw = (ctypes.c_int64 * len(values)).from_address(values.ctypes.data)
    return np.frombuffer(raw, dtype=np.int64)


def _addresses(values: np.ndarray) -> np.ndarray | None:
    """:func:`_address_view` copied: the object addresses held by an object array, as int64."""
    view = _address_view(values)
    return None if view is None else view.copy()


def _codes(values: np.ndarray, sort: bool = False, runs: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(values, sort=sort)`` of an object array: (int64 codes, object uniques), NA → -1.

    The result is identical; the work is less.  Loaders hand the *same* ``str`` object for
    repeated values (canonical argument keys, tool names, agents), so when a sample shows that,
    the objects' addresses are factorized first (integer hashing) and only one object per address
    is hashed by value.  With ``runs``, runs of equal adjacent values (a session's calls, a
    transcript's steps) are collapsed first.
    """
    n = len(values)
    if runs and n > 1:
        brk = np.empty(n, bool)
        brk[0] = True
        try:
            np.not_equal(values[1:], values[:-1], out=brk[1:])
        except TypeError:  # pd.NA compares as NA: no run shortcut
            brk = None
        if brk is not None:
            heads = np.flatnonzero(brk)
            if 4 * len(heads) < n:
                hc, u = _codes(values[heads], sort)
                return np.repeat(hc, np.diff(np.r_[heads, n])), u
    return _codes_parts([values], sort)


def _codes_parts(parts: list[np.ndarray], sort: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_codes` of ``np.concatenate(parts)``, without building that object array when the
    objects are shared (only their addresses are concatenated)."""
    n = sum(len(p) for p in parts)
    views = [_address_view(p) for p in parts] if n >= 4096 else [None]
    if all(v is not None for v in views):
        ptr = np.concatenate(views)  # one fresh array (memory is the cost here, not arithmetic)
        del views
        sample = np.arange(0, n, n // 2048)
        if len(np.unique(ptr[sample])) <= 2 * len(pd.unique(_take_parts(parts, sample))) + 8:
            # drop the low 4 bits (zero in 16-byte aligned addresses) for better hashing; still
            # one value per object, since two live objects (each ≥ 16 bytes) start ≥ 16 apart
            ptr >>= 4
            pc, pu = pd.factorize(ptr)
            del ptr
            # codes are numbered in order of first appearance: code j first appears where the
            # running maximum reaches j
            first = np.searchsorted(np.maximum.accumulate(pc), np.arange(len(pu)), "left")
            oc, u = pd.factorize(_take_parts(parts, first), sort=sort)
            if not sort and len(u) == len(pu):  # one object per value: the codes are the same
                return pc.astype(np.int64, copy=False), np.asarray(u, dtype=object)
            return oc.astype(np.int64)[pc], np.asarray(u, dtype=object)
    values = parts[0] if len(parts) == 1 else np.concatenate(parts)
    c, u = pd.factorize(values, sort=sort)
    return c.astype(np.int64), np.asarray(u, dtype=object)


def _take_parts(parts: list[np.ndarray], idx: np.ndarray) -> np.ndarray:
    """``np.concatenate(parts)[idx]`` for ascending ``idx``."""
    if len(parts) == 1:
        return parts[0][idx]
    out, start = [], 0
    for p in parts:
        lo, hi = np.searchsorted(idx, [start, start + len(p)])
        out.append(p[idx[lo:hi] - start])
        start += len(p)
    return np.concatenate(out)


def _equals(values: np.ndarray, const: str) -> np.ndarray:
    """``values == const`` elementwise for an object array (NA → False)."""
    try:
        return np.equal(values, const).astype(bool, copy=False)
    except TypeError:  # pd.NA compares as NA
        c, u = _codes(values)
        return np.array([isinstance(x, str) and x == const for x in u] + [False], bool)[c]


def _isna_str(col: pd.Series) -> np.ndarray:
    """``col.isna()`` as a bool array; for python-backed strings by the NA object's address."""
    arr = col.array
    if isinstance(arr.dtype, pd.StringDtype) and arr.dtype.storage == "python" and arr.dtype.na_value is pd.NA:
        values = np.asarray(arr)
        ptr = _address_view(values)
        if ptr is not None:  # a python StringArray holds only str objects and the pd.NA singleton
            return ptr == id(pd.NA)
    return col.isna().to_numpy(bool)


def _ns(ts: pd.Series) -> np.ndarray:
    """UTC timestamps → int64 nanoseconds since the epoch (NaT → min int64)."""
    return ts.astype("datetime64[ns, UTC]").to_numpy(dtype="datetime64[ns]").view("int64")


def _stable_order(key: np.ndarray) -> np.ndarray:
    """``np.argsort(key, kind="stable")`` of an int64 array, by one ``np.sort`` of (key, position)
    packed into int64 when the key's range leaves room for the position bits."""
    n = len(key)
    if n < 2:
        return np.arange(n)
    lo, hi = int(key.min()), int(key.max())
    b = (n - 1).bit_length()
    if hi - lo < (1 << (62 - b)):
        packed = key - lo
        packed <<= b
        packed |= np.arange(n)
        packed = _sorted(packed)
        packed &= (1 << b) - 1
        return packed
    return np.argsort(key, kind="stable")


class _KeyTime:
    """Items (ascending row numbers ``idx``) ordered by (key, time, row), for window look-ups.

    ``item[p]``, ``keys(p)``, ``times(p)``: row, key and time at position ``p`` of that order.
    Positions order items of one key by time then row, which is the rank order the join pairs by.
    (Key and time are taken for the positions asked: each full array of this size costs fresh
    memory, and fresh memory is most of the cost here.)
    """

    def __init__(self, idx: np.ndarray, key: np.ndarray, ms: np.ndarray, n_keys: int):
        n = len(idx)
        t = ms[idx]
        tord = _stable_order(t)
        self.t_sorted = t[tord]
        del t
        self.bits = b = max(n, 1).bit_length()  # time ranks 0..n
        if n_keys >= (1 << (62 - b)):
            raise JoinError(f"too many distinct (tool, arguments) keys to index ({n_keys})")
        rows = idx[tord]  # rows in time order
        del tord
        packed = key[rows]
        packed <<= b
        packed |= np.arange(n)
        packed = _sorted(packed)
        self.packed = packed
        self.trank = packed & ((1 << b) - 1)  # each position's rank in time order
        self.item = rows[self.trank]

    def keys(self, pos: np.ndarray) -> np.ndarray:
        """The keys at positions ``pos``."""
        return self.packed[pos] >> self.bits

    def times(self, pos: np.ndarray) -> np.ndarray:
        """The times (ms) at positions ``pos``."""
        return self.t_sorted[self.trank[pos]]

    def ranges(self, key: np.ndarray, lo_ms: np.ndarray, hi_ms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions ``[lo, hi)`` of the items with ``key`` and ``lo_ms ≤ time ≤ hi_ms`` (elementwise)."""
        return self._ranges(key, np.searchsorted(self.t_sorted, lo_ms, "left"),
                            np.searchsorted(self.t_sorted, hi_ms, "right"))

    def window(self, other: "_KeyTime", lo_shift: int, hi_shift: int,
               extra: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        """:meth:`ranges` for every position of ``other``: its key, its time + ``lo_shift`` …
        + ``hi_shift``.  The time look-ups run in ``other``'s time order (sorted needles).  With
        ``extra`` (int64 ms ≥ 0 per position of ``other``), also each position's own upper end,
        its time + ``extra`` + ``hi_shift``: returns ``(lo, hi, hi2)`` (its needles nearly in
        order, the extras being small beside the times' spread)."""
        base = other.packed >> other.bits
        base <<= self.bits

        def bound(shift, side: str) -> np.ndarray:
            r = np.searchsorted(self.t_sorted, other.t_sorted + shift, side)[other.trank]
            r |= base
            return np.searchsorted(self.packed, r, "left")
        if extra is None:
            lo, hi = _together(lambda: bound(lo_shift, "left"), lambda: bound(hi_shift, "right"))
            return lo, hi

        def own_bound() -> np.ndarray:
            by_time = np.empty(len(extra), np.int64)
            by_time[other.trank] = extra  # (in time order, as the needles)
            by_time += hi_shift
            return bound(by_time, "right")
        return tuple(_together(lambda: bound(lo_shift, "left"), lambda: bound(hi_shift, "right"), own_bound))

    def upper(self, key: np.ndarray, hi_ms: np.ndarray) -> np.ndarray:
        """The end (exclusive) of :meth:`ranges`' positions alone: after the items with ``key`` and
        time ≤ ``hi_ms`` (elementwise; ``hi_ms`` need not be sorted)."""
        return np.searchsorted(self.packed, (key << self.bits) | np.searchsorted(self.t_sorted, hi_ms, "right"),
                               "left")

    def _ranges(self, key: np.ndarray, r_lo: np.ndarray, r_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        base = key << self.bits
        return (np.searchsorted(self.packed, base | r_lo, "left"),
                np.searchsorted(self.packed, base | r_hi, "left"))


def _expand(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (i, j) with ``lo[i] ≤ j < hi[i]``, ordered by i then j."""
    counts = hi - lo
    total = int(counts.sum())
    if total == 0:
        return _EMPTY, _EMPTY
    rows = np.repeat(np.arange(len(lo)), counts)
    first = np.cumsum(counts)
    first -= counts  # where each i's pairs start
    np.subtract(lo, first, out=first)
    cols = np.repeat(first, counts)
    del first
    cols += np.arange(total)
    return rows, cols


def _distinct_sorted(major: np.ndarray, minor: np.ndarray, n_minor: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (major, minor) pairs (both ≥ 0, ``minor < n_minor``), sorted."""
    if not len(major):
        return _EMPTY, _EMPTY
    b = max(n_minor - 1, 1).bit_length()
    if int(major.max()) < (1 << (63 - b)):
        key = major << b
        key |= minor
        key = _sorted(key)
        keep = np.empty(len(key), bool)
        keep[0] = True
        np.not_equal(key[1:], key[:-1], out=keep[1:])
        key = key[keep]
        high = key >> b
        key &= (1 << b) - 1
        return high, key
    o = np.lexsort((minor, major))
    mj, mn = major[o], minor[o]
    keep = np.r_[True, (mj[1:] != mj[:-1]) | (mn[1:] != mn[:-1])]
    return mj[keep], mn[keep]


def _least_per_group(cols: list[np.ndarray], sizes: list[int], n_group: int) -> list[np.ndarray]:
    """Of the rows of the columns ``cols`` (non-negative int64 arrays of one length, each below
    its ``sizes`` entry, no two rows equal in every column), the least of each group of rows
    equal in the first ``n_group`` columns, comparing column by column (``n_group = 0``: every
    row).  Returns columns like ``cols``, those rows in that order.  One sort of the columns
    packed into int64 keys when they fit in 63 bits, ``np.lexsort`` otherwise."""
    n = len(cols[0])
    if not n:
        return [_EMPTY for _ in cols]
    bits = [max(int(z) - 1, 1).bit_length() for z in sizes]
    if sum(bits) <= 63:
        key = cols[0].astype(np.int64)
        for c, b in zip(cols[1:], bits[1:]):
            key <<= b
            key |= c
        key = _sorted(key)
        if n_group:
            g = key >> sum(bits[n_group:])
            first = np.empty(n, bool)
            first[0] = True
            np.not_equal(g[1:], g[:-1], out=first[1:])
            del g
            key = key[first]
        out = []
        for b in reversed(bits):
            out.append(key & ((1 << b) - 1))
            key >>= b
        return out[::-1]
    o = np.lexsort(cols[::-1])
    out = [c[o] for c in cols]
    if n_group:
        first = np.zeros(n, bool)
        first[0] = True
        for c in out[:n_group]:
            first[1:] |= c[1:] != c[:-1]
        out = [c[first] for c in out]
    return out


def _rank_pair(cs: np.ndarray, cc: np.ndarray, S: _KeyTime, C: _KeyTime, t_codes: np.ndarray,
               s_codes: np.ndarray, n_sx: int, off: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Pair candidate steps and calls one-to-one in time order within (transcript, session, key).

    ``cs``/``cc`` are the candidate pairs' positions in ``S`` (steps) and ``C`` (calls); a group is
    one (transcript, session, key), its steps and calls each in (time, row) order.  Where a
    group has as many steps as calls, the i-th step pairs with the i-th call.  Where one side
    has more (a step that failed before the door logged it, then its retry), every item of the
    shorter side pairs with one of the longer, in order, so that the summed |call time − step
    time − ``off``| (ms) is least; of equally near choices, the earliest items of the longer
    side (:func:`_ordered_nearest`).  Returns the paired positions ordered by (transcript,
    session, key, step rank).  Integer sorts for the groups of equal sides; per-group work only
    for the others.
    """
    if not len(cs):
        return _EMPTY, _EMPTY
    pc = t_codes[S.item][cs]
    pc *= n_sx
    pc += s_codes[C.item][cc]
    (p1, sp), (p2, cp) = _together(lambda: _distinct_sorted(pc, cs, len(S.item)),
                                   lambda: _distinct_sorted(pc, cc, len(C.item)))
    del pc
    b1, b2 = _together(lambda: _group_starts(p1, S.keys(sp)), lambda: _group_starts(p2, C.keys(cp)))
    if len(b1) != len(b2):  # both sides see the same groups in the same order
        raise AssertionError("join: candidate groups differ between steps and calls")
    n1 = np.diff(np.r_[b1, len(sp)])
    n2 = np.diff(np.r_[b2, len(cp)])
    rank = np.arange(len(sp))
    rank -= np.repeat(b1, n1)
    at = np.repeat(b2, n1)
    at += rank  # each step's call: the one of its rank
    odd = np.flatnonzero(n1 != n2)
    if len(odd):
        at[np.repeat(n1 > n2, n1)] = -1  # (steps left over: those the groups below do not pick)
        more = n1[odd] > n2[odd]
        for g_, st_long in ((odd[more], True), (odd[~more], False)):
            if not len(g_):
                continue
            (l_b, l_n, s_b, s_n) = (b1[g_], n1[g_], b2[g_], n2[g_]) if st_long else (b2[g_], n2[g_], b1[g_], n1[g_])
            extra = l_n - s_n
            band = extra <= _BAND
            # (the usual few more on one side: all such groups at once, those with about as many
            # more together, so each pass is as wide as its groups need, not the widest)
            for lo, hi in _BAND_PASSES:
                sel = (extra >= lo) & (extra <= hi)
                if not sel.any():
                    continue
                li, si = _spans(l_b[sel], l_n[sel]), _spans(s_b[sel], s_n[sel])
                lt = S.times(sp[li]) + off if st_long else C.times(cp[li])
                stt = C.times(cp[si]) if st_long else S.times(sp[si]) + off
                pick = li[_ordered_nearest_many(lt, l_n[sel], stt, s_n[sel])]
                if st_long:
                    at[pick] = si
                else:
                    at[si] = pick
            for g in g_[~band].tolist():  # (many more on one side: rare, one at a time)
                a1, a2 = int(b1[g]), int(b2[g])
                m1, m2 = int(n1[g]), int(n2[g])
                st = S.times(sp[a1:a1 + m1]) + off
                ct = C.times(cp[a2:a2 + m2])
                if m1 > m2:  # more steps: each call takes one
                    at[a1 + _ordered_nearest(st, ct)] = a2 + np.arange(m2)
                else:  # more calls: each step takes one
                    at[a1:a1 + m1] = a2 + _ordered_nearest(ct, st)
    ok = at >= 0
    return sp[ok], cp[at[ok]]


#: groups whose longer side has at most this many more items than the shorter are paired all at
#: once (:func:`_ordered_nearest_many`); others one at a time (:func:`_ordered_nearest`)
_BAND = 16
#: the groups paired all at once, in passes by how many more items their longer side has
_BAND_PASSES = ((1, 1), (2, 4), (5, _BAND))
_FAR = np.int64(1) << 60  # (a cost no pairing reaches)


def _spans(start: np.ndarray, count: np.ndarray) -> np.ndarray:
    """The positions ``start[g] … start[g] + count[g] − 1`` of every ``g``, in order."""
    total = int(count.sum())
    first = np.cumsum(count) - count
    out = np.repeat(start - first, count)
    out += np.arange(total)
    return out


def _ordered_nearest_many(long: np.ndarray, n: np.ndarray, short: np.ndarray, m: np.ndarray) -> np.ndarray:
    """:func:`_ordered_nearest` for many groups at once.

    ``long``/``short``: int64 times, group after group (``n[g]``/``m[g]`` of group ``g``, each
    ascending, ``n ≥ m ≥ 1``, ``n − m`` at most :data:`_BAND`).  Returns, for every item of
    ``short`` in order, the index into ``long`` of the item it pairs with.  The least cost of
    pairing a group's short items k… with its long items k + j… is kept for j = 0 … n − m (a
    band), item k of every group at once, from the groups' last items backwards; then the
    choices are read forwards, each the first of the least.
    """
    d = n - m
    width = int(d.max()) + 1
    jj = np.arange(width)
    order = np.argsort(-m, kind="stable")  # (the groups still pairing at each layer: a prefix)
    l0 = (np.cumsum(n) - n)[order]
    s0 = (np.cumsum(m) - m)[order]
    mo, do = m[order], d[order]
    in_band = jj[None, :] <= do[:, None]
    f = np.where(in_band, 0, _FAR)
    layers = []
    for r in range(int(mo[0])):  # layer r: each group's short item m − 1 − r
        na = int(np.searchsorted(-mo, -r, "left"))  # groups with m > r
        k = mo[:na] - 1 - r
        li = (l0[:na] + k)[:, None] + jj[None, :]
        ok = in_band[:na]
        li[~ok] = 0
        g = np.abs(long[li] - short[s0[:na] + k][:, None])
        g += f[:na]
        g[~ok] = _FAR
        np.minimum(g, _FAR, out=g)
        layers.append(g)
        f = np.minimum.accumulate(g[:, ::-1], axis=1)[:, ::-1]
    out = np.empty(len(short), np.int64)
    j = np.zeros(len(mo), np.int64)
    for r in range(len(layers) - 1, -1, -1):
        g = layers[r].copy()
        na = len(g)
        g[jj[None, :] < j[:na, None]] = _FAR + 1  # (no earlier than the last choice)
        jp = np.argmin(g, axis=1)
        j[:na] = jp
        k = mo[:na] - 1 - r
        out[s0[:na] + k] = l0[:na] + k + jp
    return out


def _ordered_nearest(long: np.ndarray, short: np.ndarray) -> np.ndarray:
    """Indices ``i_0 < i_1 < …`` into ``long`` (int64 times, ascending), one per item of
    ``short`` (ascending, no longer than ``long``), least in Σ|long[i_k] − short[k]|; of equal
    sums the lexicographically smallest.  O(len(long) · len(short)), vectorised along ``long``.
    """
    n, m = len(long), len(short)
    if m == 1:
        return np.array([int(np.argmin(np.abs(long - short[0])))], np.int64)  # (the first of equals)
    inf = np.int64(1) << 60
    # f[k][i]: the least cost of pairing short[k:] with items of long[i:]; g[k][i]: taking long[i]
    g = np.empty((m, n), np.int64)
    nxt = np.zeros(n + 1, np.int64)  # f[m]
    for k in range(m - 1, -1, -1):
        gk = np.abs(long - short[k])
        gk += nxt[1:]
        g[k] = gk
        f = np.minimum.accumulate(gk[::-1])[::-1]
        nxt = np.empty(n + 1, np.int64)
        nxt[:n] = np.minimum(f, inf)
        nxt[n] = inf
    out = np.empty(m, np.int64)
    i = 0
    for k in range(m):
        i += int(np.argmin(g[k, i:]))  # (the first taking the least)
        out[k] = i
        i += 1
    return out


def _group_starts(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Indices where the pair (a, b) differs from the previous entry (and 0)."""
    change = np.empty(len(a), bool)
    change[0] = True
    np.not_equal(a[1:], a[:-1], out=change[1:])
    change[1:] |= b[1:] != b[:-1]
    return np.flatnonzero(change)


def _group_median(g: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per distinct ``g`` (int64 ≥ 0, sorted): the group, its size and the median of ``v`` (int64)
    as pandas' groupby median gives it (mean of the two middle values)."""
    n = len(g)
    if not n:
        return _EMPTY, _EMPTY, np.empty(0, "float64")
    vmin = int(v.min())
    span = int(v.max()) - vmin + 1
    if (int(g.max()) + 1) * span < (1 << 63):
        key = g * span
        key += v - vmin  # (the check above bounds this sum, not g * span + v)
        key = _sorted(key)
        gs = key // span
        vs = gs * span
        np.subtract(key, vs, out=vs)
        vs += vmin
    else:
        o = np.lexsort((v, g))
        gs, vs = g[o], v[o]
    starts = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1]])
    sizes = np.diff(np.r_[starts, n])
    lo = vs[starts + (sizes - 1) // 2].astype("float64")
    hi = vs[starts + sizes // 2].astype("float64")
    return gs[starts], sizes, (lo + hi) / 2


def _nearest_offset(C: _KeyTime, key: np.ndarray, ms: np.ndarray, max_offset_ms: int) -> float | None:
    """Median door−transcript offset (ms) from each step's nearest same-key call in ``C`` within
    ``max_offset_ms`` (of two equally near calls the earlier one); ``None`` when no step has one."""
    n = len(C.item)
    if not n or not len(key):
        return None
    r = np.searchsorted(C.t_sorted, ms, "left")
    pos = np.searchsorted(C.packed, (key << C.bits) | r, "left")  # first call of the key at or after ms
    nxt = np.minimum(pos, n - 1)
    prv = np.maximum(pos - 1, 0)
    d_next = C.times(nxt) - ms
    d_prev = C.times(prv) - ms
    ok_next = (pos < n) & (C.keys(nxt) == key) & (d_next <= max_offset_ms)
    ok_prev = (pos > 0) & (C.keys(prv) == key) & (-d_prev <= max_offset_ms)
    use_prev = ok_prev & (~ok_next | (-d_prev <= d_next))
    d = np.where(use_prev, d_prev, d_next)[ok_prev | ok_next]
    return float(np.median(d)) if len(d) else None


#: the width (ms) of the span of step−call differences the clock offset is read from
_OFFSET_SPAN_MS = 2000
#: how far past ``max_offset_s`` (ms) the differences of a clock the join still takes may lie: the
#: call's travel to the door, which every step−call difference includes (far less than a second);
#: the offset applied is then ``±max_offset_s`` itself
_TRAVEL_MS = 1000
#: a step with more same-key calls than this within the offset range does not inform the offset
_OFFSET_CAP = 64


def _mode_offset(C: _KeyTime, key: np.ndarray, ms: np.ndarray, max_offset_ms: int,
                 limit_ms: int | None = None) -> float | None:
    """The door−transcript clock offset (ms) most steps agree on, or ``None`` when no step has a
    same-key call in ``C`` within ``max_offset_ms``.

    ``limit_ms`` (default ``max_offset_ms``) bounds the offset itself: the differences are read
    out to ``max_offset_ms`` (the clocks' limit plus the window: a call's latency comes on top
    of the clocks' difference), but only spans whose middle lies within ``limit_ms`` (plus
    :data:`_TRAVEL_MS`, a call's travel to the door) of 0 may win, and the median is brought
    back to ``±limit_ms`` — an offset beyond the clocks' limit is never returned, ``None`` when
    every span lies beyond it.

    Every difference (call time − step time) between a step (``key``, ``ms``: int64 arrays) and a
    same-key call within ``max_offset_ms`` counts; the :data:`_OFFSET_SPAN_MS` span holding the
    most differences wins (of equally full ones, the nearest to 0) and the offset is their
    median.  Not each step's *nearest* call: where agents repeat the same calls a minute apart,
    a step's nearest call is often another agent's, and the median of those slides every
    transcript onto a neighbour's session; the true offset lines up every step with its own
    call.  Steps with more than :data:`_OFFSET_CAP` such calls (a call every client makes all the
    time) tell little and cost much: they are left out, unless every step has that many, when
    :func:`_nearest_offset` decides.
    """
    if not len(C.item) or not len(key):
        return None
    limit = max_offset_ms if limit_ms is None else min(limit_ms, max_offset_ms)
    lo, hi = C.ranges(key, ms - max_offset_ms, ms + max_offset_ms)
    few = hi - lo <= _OFFSET_CAP
    if not few.any():  # only calls every client makes all the time: the nearest must do
        o = _nearest_offset(C, key, ms, max_offset_ms)
        return None if o is None or abs(o) > limit + _TRAVEL_MS else float(np.clip(o, -limit, limit))
    r, c = _expand(lo[few], hi[few])
    if not len(r):
        return None
    ms = ms[few]
    d = C.times(c)
    d -= ms[r]
    d = _sorted(d)
    end = np.searchsorted(d, d + _OFFSET_SPAN_MS, "right")
    full = end - np.arange(len(d))
    mid_all = (d + d[end - 1]) / 2
    full[np.abs(mid_all) > limit + _TRAVEL_MS] = 0  # (a clock beyond the limit: never the offset)
    if not full.max():
        return None
    cand = np.flatnonzero(full == full.max())
    i = int(cand[np.argmin(np.abs(mid_all[cand]))])
    return float(np.clip(np.median(d[i:end[i]]), -limit, limit))


#: a transcript takes a clock offset of its own (:func:`_own_clocks`) only when at least this
#: share of its steps that have a same-key call in range line up at that offset
OWN_CLOCK_SHARE = 0.5

#: how many tool-use id pairs a transcript's clock needs before its other steps are sought there
#: (:func:`_id_clocks`)
ID_CLOCK_MIN_PAIRS = 2


def _own_clocks(C: _KeyTime, q: np.ndarray, k_s: np.ndarray, s_ms: np.ndarray, t_codes: np.ndarray,
                n_t: int, off: int, reach_ms: int, window_ms: int,
                min_steps: int, agreed: np.ndarray,
                claimed: np.ndarray | None = None,
                limit_ms: int | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """Clock offsets of their own for transcripts run on another clock than the others.

    ``q`` are the steps (rows, ascending) of the transcripts that may be on a clock of their
    own: fewer than :data:`OWN_CLOCK_SHARE` of their steps with arguments agreed at the common
    offset ``off`` (``agreed``: each transcript's content pairs there, by transcript code, less
    those in a session another transcript explains better: :func:`_explains`).
    Per transcript, every difference (call time − step time) to a same-key call of ``C``
    within ``reach_ms`` counts, and the :data:`_OFFSET_SPAN_MS` span holding the most wins (of
    equally full ones, the nearest to ``off``), as :func:`_mode_offset` reads the common one.
    A transcript takes that span's median as its own offset when the span holds at least
    ``min_steps`` differences, :data:`OWN_CLOCK_SHARE` of its steps that have any such call,
    and more than the transcript's pairs at the common offset, and lies more than
    ``window_ms`` from ``off`` (nearer, the common offset would have found it).  Calls
    ``claimed`` (a bool per call row: paired at the common offset with a transcript that is not
    a candidate here, in the session it explains best — its calls in a second session may be
    another agent's, on another clock, repeated) are not counted: a call another transcript
    explains on the common clock is no evidence of a second clock (a transcript whose own
    session is not in the log had taken an offset from calls another agent made with the same
    arguments, once ``max_offset_s`` was raised to reach them).  Two agents on
    two machines whose clocks differ by more than the window had left the second one's
    sessions unmatched; a step or two agreeing at the common offset by coincidence (a call
    every agent makes, at the same moment) had kept a transcript from looking at all.

    As for :func:`_mode_offset`, the differences are read out to ``reach_ms`` but an offset
    lies within ``limit_ms`` of 0 (default ``reach_ms``): spans whose middle lies beyond it
    (and :data:`_TRAVEL_MS`) do not count, and the median is brought back to ``±limit_ms``.

    Returns ``(steps, offsets)``: the rows of ``q`` of the transcripts that took an offset, and
    each one's offset (int64 ms, door − transcript); ``None`` when no transcript did (or the
    range is too large to pack: beyond any real clock, ~2**40 ms).
    """
    if not len(q) or not len(C.item):
        return None
    ms = s_ms[q]
    lo, hi = C.ranges(k_s[q], ms - reach_ms, ms + reach_ms)
    few = (hi - lo <= _OFFSET_CAP) & (hi > lo)
    if not few.any():
        return None
    qi = np.flatnonzero(few)
    r, c = _expand(lo[qi], hi[qi])
    if claimed is not None:
        free = ~claimed[C.item[c]]
        r, c = r[free], c[free]
        if not len(r):
            return None
    g = t_codes[q[qi[r]]]
    d = C.times(c)
    d -= ms[qi[r]]
    span = 2 * reach_ms + _OFFSET_SPAN_MS + 1
    if n_t * span >= (1 << 62):
        return None
    packed = g * span + (d + reach_ms)
    order = np.argsort(packed, kind="stable")
    packed, g, d = packed[order], g[order], d[order]
    end = np.searchsorted(packed, packed + _OFFSET_SPAN_MS, "right")  # (never past its transcript)
    full = end - np.arange(len(packed))
    mid = (d + d[end - 1]) // 2
    limit = reach_ms if limit_ms is None else min(limit_ms, reach_ms)
    full[np.abs(mid) > limit + _TRAVEL_MS] = 0  # (a clock beyond the limit: never its own offset)
    # per transcript the fullest span, of equally full ones the nearest to the common offset
    best = np.lexsort((np.abs(mid - off), -full, g))
    first = np.ones(len(best), bool)
    first[1:] = g[best][1:] != g[best][:-1]
    best = best[first]
    t_best = g[best]
    steps_with_calls = np.bincount(t_codes[q[qi[np.unique(r)]]], minlength=n_t)[t_best]
    n_full = full[best]
    own = np.array([float(np.median(d[i:e])) for i, e in zip(best.tolist(), end[best].tolist())]) \
        if len(best) else np.zeros(0)
    own = np.clip(own, -limit, limit)
    ok = ((n_full >= min_steps) & (n_full >= OWN_CLOCK_SHARE * steps_with_calls) & (n_full > agreed[t_best])
          & (np.abs(own - off) > window_ms))
    if not ok.any():
        return None
    t_off = np.zeros(n_t, np.int64)
    took = np.zeros(n_t, bool)
    t_off[t_best[ok]] = np.round(own[ok]).astype(np.int64)
    took[t_best[ok]] = True
    rows = q[took[t_codes[q]]]
    return rows, t_off[t_codes[rows]]


def _id_clocks(ex_si: np.ndarray, ex_ci: np.ndarray, s_ms: np.ndarray, c_ms: np.ndarray, s_ok: np.ndarray,
               c_ok: np.ndarray, t_codes: np.ndarray, n_t: int, off: int, max_offset_ms: int,
               few_agree: np.ndarray) -> np.ndarray | None:
    """The clock the tool-use ids measure, per transcript, for its steps no id paired.

    ``ex_si``/``ex_ci``: the id pairs (step row, call row); a transcript's offset is the median of
    their differences (call time − step time, ms, both timed).  It is taken when at least
    :data:`ID_CLOCK_MIN_PAIRS` pairs measure it, it differs from the common offset ``off`` and
    lies within ``max_offset_ms`` of 0, and the transcript's other steps do not already agree at
    the common offset (``few_agree``, per transcript code: fewer than :data:`OWN_CLOCK_SHARE` of
    its steps with arguments did, as for :func:`_own_clocks`, or it has none) — one call the user approved two
    minutes late is no clock.  Returns an int64 offset per transcript code (index -1: no
    transcript), :data:`_NAT` where none is taken, or None when no transcript takes one.  A door
    that logs the client's id for some calls only had left the transcript's other calls to be
    found at the common offset — another machine's clock, when most transcripts come from there —
    and beyond the window from it both sides stayed unpaired.
    """
    if not len(ex_si) or max_offset_ms <= 0:
        return None
    timed = s_ok[ex_si] & c_ok[ex_ci]
    if not timed.any():
        return None
    g = t_codes[ex_si][timed]
    d = c_ms[ex_ci][timed] - s_ms[ex_si][timed]
    o = np.argsort(g, kind="stable")
    ts, n_pairs, med = _group_median(g[o], d[o])
    med = np.round(med).astype(np.int64)
    take = ((n_pairs >= ID_CLOCK_MIN_PAIRS) & (med != off) & (np.abs(med) <= max_offset_ms)
            & few_agree[ts])
    if not take.any():
        return None
    t_off = np.full(n_t + 1, _NAT, np.int64)
    t_off[ts[take]] = med[take]
    return t_off


def _explains(pt: np.ndarray, ps: np.ndarray, dt: np.ndarray, n_sx: int) -> tuple[np.ndarray, np.ndarray]:
    """Which of the pairs (transcript code ``pt``, session code ``ps``, ``dt`` = |Δt| after the
    offset, int64 ms) a session's own transcript explains.

    Pairs are counted per (transcript, session), and one (transcript, session) is better than
    another with more pairs, or as many and a smaller summed |Δt| (nearer on average).  A
    session's best transcript is the best of its (transcript, session) counts — none when two
    are equally good; a transcript's best sessions are the best of its own.  Returns two bool
    arrays over the pairs: ``not_outdone`` (its session has no best transcript, or this one:
    pairs in a session another transcript explains better are not) and ``mutual`` (this
    transcript is its session's best, and that session one of its best: the session it is most
    likely joined to).  Pairs with no session (code < 0) are ``not_outdone`` and not ``mutual``.
    Linear when the pairs come ordered by (transcript, session), as :func:`_window_pairs` gives
    them; a sort otherwise.
    """
    keep = np.ones(len(pt), bool)
    mutual = np.zeros(len(pt), bool)
    has = (ps >= 0) & (pt >= 0)
    if not has.any():
        return keep, mutual
    code = pt[has] * n_sx + ps[has]
    d = dt[has]
    back = None
    if len(code) > 1 and (code[1:] < code[:-1]).any():
        back = np.argsort(code, kind="stable")
        code, d = code[back], d[back]
    starts = np.flatnonzero(np.r_[True, code[1:] != code[:-1]])
    n = np.diff(np.r_[starts, len(code)])
    tot = np.add.reduceat(d, starts)
    g = code[starts]
    gt, gs = g // n_sx, g % n_sx

    def tops(o: np.ndarray, key: np.ndarray):
        """Per run of equal ``key[o]``: each group's run start, the run's most pairs and, of
        those, least summed |Δt|, and whether the group (in ``o`` order) is one of the best."""
        k = key[o]
        first = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        size = np.diff(np.r_[first, len(k)])
        nn = n[o]
        most = np.repeat(np.maximum.reduceat(nn, first), size)
        tt = np.where(nn == most, tot[o], np.iinfo(np.int64).max)
        least = np.repeat(np.minimum.reduceat(tt, first), size)
        return first, size, (nn == most) & (tt == least)

    # per session (the groups in session order): its best transcript, none when two are as good
    o = _stable_order(gs)
    first, size, is_best = tops(o, gs)
    n_best = np.add.reduceat(is_best.astype(np.int64), first)
    sole = is_best & np.repeat(n_best == 1, size)
    owner = np.full(n_sx, -1, np.int64)
    owner[gs[o][sole]] = gt[o][sole]
    # per transcript (the groups come in transcript order): is this one of its best sessions
    ident = np.arange(len(gt))
    _, _, top = tops(ident, gt)
    g_mutual = (owner[gs] == gt) & top
    po = np.repeat(owner[gs], n)
    k = (po < 0) | (po == np.repeat(gt, n))
    mu = np.repeat(g_mutual, n)
    if back is not None:
        k2, mu2 = np.empty_like(k), np.empty_like(mu)
        k2[back], mu2[back] = k, mu
        k, mu = k2, mu2
    keep[has] = k
    mutual[has] = mu
    return keep, mutual


def _unvetoed(cs: np.ndarray, cc: np.ndarray, S: _KeyTime, C: _KeyTime, veto) -> tuple[np.ndarray, np.ndarray]:
    """The candidate pairs (positions in ``S``/``C``) ``veto`` (:class:`_IdVeto`, or None) allows."""
    if veto is not None and len(cc):
        m = veto.call_has_id[C.item][cc]  # (flags by position: one gather of rows, not one per candidate)
        if m.any():
            idx = np.flatnonzero(m)
            bad = veto(S.item[cs[idx]], C.item[cc[idx]])
            if bad is not None:
                keep = np.ones(len(cs), bool)
                keep[idx[bad]] = False
                cs, cc = cs[keep], cc[keep]
    return cs, cc


def _window_pairs(S: _KeyTime, C: _KeyTime, off: int, window_ms: int, t_codes: np.ndarray,
                  s_codes: np.ndarray, n_sx: int, veto=None,
                  reach_ms: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Content agreement of the steps in ``S`` with the calls in ``C``: equal key,
    |Δt − off| ≤ window, paired in time order per (transcript, session, key).  Then, with
    ``reach_ms`` (per step row: how far past the window of its time a call that waited may lie,
    ms, 0 for none: up to its result, give or take the window but no more than
    :data:`FAR_PAIR_MS`), the calls that waited (:func:`_late_pairs`): a step left without a
    call within the window of its time (in any session) takes one of a session's calls no step
    of its transcript took, with ``window < Δt − off ≤ window + reach``.  Returns (step rows, call rows): the window's pairs ordered by (transcript,
    session, key, rank), then the waiting ones.  ``veto(step rows, call rows)``, when given,
    marks candidate pairs that may not agree (:class:`_IdVeto`)."""
    w = reach_ms[S.item] if reach_ms is not None else None  # (per position)
    if w is not None and w.any():
        lo, hi, hi2 = C.window(S, off - window_ms, off + window_ms, w)
    else:
        (lo, hi), hi2 = C.window(S, off - window_ms, off + window_ms), None
    cs, cc = _expand(lo, hi)
    del lo
    cs, cc = _unvetoed(cs, cc, S, C, veto)
    sp, cp = _rank_pair(cs, cc, S, C, t_codes, s_codes, n_sx, off)
    del cs, cc
    d = C.times(cp)
    d -= S.times(sp)
    d -= off
    np.abs(d, out=d)
    keep = d <= window_ms
    del d
    sp, cp = sp[keep], cp[keep]
    if hi2 is not None:
        # (the part of each step's range past the window: from its end to the step's result)
        xp = np.flatnonzero(hi2 > hi)
        if len(xp):
            xs, xc = _expand(hi[xp], hi2[xp])
            xs = xp[xs]
            xs, xc = _unvetoed(xs, xc, S, C, veto)
            ls, lc = _late_pairs(xs, xc, sp, cp, S, C, t_codes, s_codes, n_sx, off)
            if len(ls):
                sp, cp = np.concatenate([sp, ls]), np.concatenate([cp, lc])
    return S.item[sp], C.item[cp]


def _late_pairs(xs: np.ndarray, xc: np.ndarray, ps: np.ndarray, pc: np.ndarray, S: _KeyTime, C: _KeyTime,
                t_codes: np.ndarray, s_codes: np.ndarray, n_sx: int, off,
                barred: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The pairs of calls that waited (for the user's approval) before the door received them.

    ``xs``/``xc``: candidate pairs (positions in ``S``/``C``) whose call lies beyond the window of
    its step's time and no later than the step's result (give or take the window, at most
    :data:`FAR_PAIR_MS`); ``ps``/``pc``: the pairs the window of the steps' times gave
    (positions); ``barred`` (bool per step row, or None): steps that have a call within the window
    of their time otherwise (another tier's).  A candidate stays only where neither side is paired
    already: the step with no call within the window of its time in any session (it has its call,
    which did not wait: a call of another session in its span is another agent's), the call with
    no step of that transcript.  Those are paired in time order per (transcript, session, key) as
    :func:`_rank_pair` pairs (``off``: the clock offset, ms), and only candidate pairs are kept.  Returns the pairs' positions."""
    if not len(xs):
        return _EMPTY, _EMPTY
    n_tx = int(t_codes.max()) + 2 if len(t_codes) else 1
    if barred is not None:
        free = ~barred[S.item[xs]]
        xs, xc = xs[free], xc[free]
    if len(ps) and len(xs):
        mark = np.zeros(len(S.item), bool)
        mark[ps] = True
        free = ~mark[xs]
        mark = np.zeros(len(C.item), bool)
        mark[xc] = True
        m = mark[pc]
        taken = _sorted(pc[m] * n_tx + (t_codes[S.item[ps[m]]] + 1))
        free &= ~_in_sorted(taken, xc * n_tx + (t_codes[S.item[xs]] + 1))
        xs, xc = xs[free], xc[free]
    if not len(xs):
        return _EMPTY, _EMPTY
    sp, cp = _rank_pair(xs, xc, S, C, t_codes, s_codes, n_sx, off)
    n_cp = max(len(C.item), 1)
    ok = _in_sorted(_sorted(xs * n_cp + xc), sp * n_cp + cp)
    return sp[ok], cp[ok]


class _IdVeto:
    """Candidate pairs whose ids contradict: the door logged the client's tool-use id for the
    call (``meta_call_id``) and the step has a tool-use id (``call_id``), and they differ.  The
    client's own id decides (an exact match would have paired them already), so such a pair
    may not agree on content or time; it is kept in :attr:`found` (step positions, call rows)
    to be reported.  Costs two boolean gathers when no candidate call logged an id."""

    def __init__(self, step_has_id: np.ndarray, step_ids: np.ndarray, call_has_id: np.ndarray,
                 call_ids: np.ndarray) -> None:
        self.step_has_id, self.step_ids = step_has_id, step_ids
        self.call_has_id, self.call_ids = call_has_id, call_ids
        self.found: list[tuple[np.ndarray, np.ndarray]] = []

    def __call__(self, si: np.ndarray, ci: np.ndarray) -> np.ndarray | None:
        m = self.call_has_id[ci]
        if not m.any():
            return None
        m &= self.step_has_id[si]
        idx = np.flatnonzero(m)
        if not len(idx):
            return None
        a, b = self.step_ids[si[idx]], self.call_ids[ci[idx]]
        try:
            differ = np.not_equal(a, b).astype(bool, copy=False)  # (a C loop over the str pairs)
        except TypeError:
            differ = np.fromiter((x != y for x, y in zip(a, b)), bool, len(idx))
        if not differ.any():
            return None
        bad = np.zeros(len(si), bool)
        bad[idx[differ]] = True
        self.found.append((si[idx[differ]], ci[idx[differ]]))
        return bad

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Every vetoed (step position, call row), each once."""
        if not self.found:
            return _EMPTY, _EMPTY
        si = np.concatenate([f[0] for f in self.found])
        ci = np.concatenate([f[1] for f in self.found])
        return si, ci


def _first_equal(a: np.ndarray, b: np.ndarray, a_rows: np.ndarray,
                 b_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each string of ``a`` equal to some string of ``b``: (its row, the row of the first such
    ``b``), ordered by ``a``'s rows (both row arrays ascending; no NA); third, the rows of ``b``
    equal to no string of ``a`` (ascending).

    A hash join in polars when it is installed; the pairs it finds are then checked with Python's
    own ``==`` and on any doubt (a string polars cannot take, a mismatch) the exact dict
    look-up decides instead.
    """
    if pl is not None and len(a) and len(b):
        try:
            left = pl.DataFrame({"id": pl.Series(a, dtype=pl.String), "i": np.arange(len(a))})
            right = pl.DataFrame({"id": pl.Series(b, dtype=pl.String), "j": np.arange(len(b))})
            hit = left.join(right, on="id", how="inner").select("i", "j")
            bits = max(len(b) - 1, 1).bit_length()
            key = (hit["i"].to_numpy().astype(np.int64) << bits) | hit["j"].to_numpy().astype(np.int64)
            key = _sorted(key)  # by a's row, then b's: the first b of each a leads
            i = key >> bits
            b_hit = np.zeros(len(b), bool)
            b_hit[key & ((1 << bits) - 1)] = True
            first = np.empty(len(key), bool)
            first[:1] = True
            np.not_equal(i[1:], i[:-1], out=first[1:])
            key = key[first]
            i, j = key >> bits, key & ((1 << bits) - 1)
        except Exception:  # noqa: BLE001 - e.g. a lone surrogate polars cannot encode
            i = None
        if i is not None and bool(np.all(np.equal(a[i], b[j]).astype(bool))):
            return a_rows[i], b_rows[j], b_rows[~b_hit]
    first = dict(zip(b[::-1].tolist(), b_rows[::-1].tolist()))
    ci = np.fromiter(map(first.get, a, itertools.repeat(-1)), np.int64, len(a))
    have = ci >= 0
    in_a = set(a.tolist())
    b_miss = np.fromiter((v not in in_a for v in b.tolist()), bool, len(b))
    return a_rows[have], ci[have], b_rows[b_miss]


def _str_take(uniques: np.ndarray, codes: np.ndarray):
    """Python-backed string array of ``uniques[codes]`` (validates the uniques only)."""
    return pd.array(uniques, dtype=pd.StringDtype("python")).take(codes)


def orphan_results(steps: pd.DataFrame, *, kinds: np.ndarray | None = None,
                   is_call: np.ndarray | None = None) -> np.ndarray:
    """Which rows of ``steps`` are tool results whose tool call's own line is missing: a
    ``tool_result`` row with a transcript and a tool-use id (``call_id``) that no ``tool_call``
    row of any loaded transcript carries — the call's line was damaged and set aside, the file
    was cut before it, or a resumed copy dropped it.  The join pairs such a result with the door
    call that logged its id (``how = "meta_id"``, ``pairs.step_kind = "tool_result"``), and with
    nothing else: it names no arguments, and its time is when the call ended.

    Returns a bool array, one per row of ``steps`` (all False when no row is one: one pass over
    ``kind`` and ``call_id``).  ``kinds`` / ``is_call``: the ``kind`` column's objects and
    ``kind == "tool_call"``, when the caller has them already."""
    n = len(steps)
    if kinds is None:
        kinds = _objects(steps["kind"])
    out = _equals(kinds, "tool_result")
    if not out.any():
        return out
    out &= ~_isna_str(steps["call_id"]) & ~_isna_str(steps["transcript_id"])
    if not out.any():
        return out
    if is_call is None:
        is_call = _equals(kinds, "tool_call")
    cid = _objects(steps["call_id"])
    call_rows = is_call & ~_isna_str(steps["call_id"])
    r = np.flatnonzero(out)
    # most results follow their call within a few lines of the same file: compare those first
    # (object ==, no hashing), and look the few others up among every tool call
    have = np.zeros(len(r), bool)
    rid = cid[r]
    for k in range(1, _NEAR_CALL + 1):
        j = r - k
        ok = (j >= 0) & ~have
        ok[ok] &= call_rows[j[ok]]
        if not ok.any():
            continue
        have[ok] = np.equal(cid[j[ok]], rid[ok]).astype(bool, copy=False)
        if have.all():
            break
    if not have.all():
        rest = np.flatnonzero(~have)
        called = cid[call_rows]
        if len(rest) <= _NEAR_CALL:
            for i in rest.tolist():
                have[i] = bool(np.equal(called, rid[i]).astype(bool, copy=False).any())
        else:
            have[rest] = pd.Series(rid[rest], dtype=object).isin(pd.Index(called, dtype=object)).to_numpy(bool)
    out = np.zeros(n, bool)
    out[r[~have]] = True
    return out


#: how many lines before a tool result :func:`orphan_results` compares directly with its id
_NEAR_CALL = 8


def _door_times(rows: np.ndarray, off: int, t_own: np.ndarray | None, t_codes: np.ndarray, s_ms: np.ndarray,
              declared: np.ndarray | None, declared_ms: np.ndarray | None) -> np.ndarray:
    """Step times (ms) of ``rows`` on the door's clock: the common offset ``off``, a transcript's
    own (``t_own``), or the one the investigator declared."""
    out = s_ms[rows] + (off if t_own is None else t_own[t_codes[rows]])
    if declared is not None:
        out = np.where(declared[rows], s_ms[rows] + declared_ms[rows], out)
    return out


#: the prefix the door puts before the text of a tool result that says it failed (its ``error``)
DOOR_TOOL_ERROR = "tool error: "
_TRUNCATED = re.compile(r" …\[\+[0-9,]+ chars\]$")


def _texts_agree(result_text, error) -> bool:
    """Whether a transcript's result text is the text the door logged as the call's ``error``
    (``"tool error: "`` + the result's first text block, cut at 500 characters with ``…``; or the
    error itself): equal, or one the start of the other where either was cut (the transcript's
    text past ``TEXT_LIMIT``: `` …[+N chars]``)."""
    if not isinstance(result_text, str) or not isinstance(error, str) or not result_text.strip():
        return False
    t = result_text
    cut_t = _TRUNCATED.search(t)
    if cut_t:
        t = t[:cut_t.start()]
    for e in (error[len(DOOR_TOOL_ERROR):] if error.startswith(DOOR_TOOL_ERROR) else None, error):
        if e is None or not e:
            continue
        cut_e = e.endswith("…")
        if cut_e:
            e = e[:-1]
        if t == e or (cut_e and t.startswith(e)) or (cut_t and e.startswith(t)) or \
                (cut_e and cut_t and (t.startswith(e) or e.startswith(t))):
            return True
    return False


def _result_pairs(r_idx: np.ndarray, r_door: np.ndarray, r_text: np.ndarray, r_bytes: np.ndarray, r_tool: np.ndarray,
                  r_t: np.ndarray, c_idx: np.ndarray, held: np.ndarray, n_tx: int, c_ms: np.ndarray,
                  c_end_ns: np.ndarray, c_error: np.ndarray, c_bytes: np.ndarray, c_tool: np.ndarray,
                  c_session: np.ndarray, window_ms: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Door calls claimed by tool results whose call's own line is missing and whose tool-use id
    no door call logged (a client that sends the door none, as Codex; or a door that logs no
    ``_meta``).  ``r_idx``: those results (step positions), ``r_door`` their times on the door's
    clock (ms: the result was written when its call ended), ``r_text`` / ``r_bytes`` / ``r_tool``
    their text, its full UTF-8 size and tool code (-1: unknown, the name was on the lost line),
    ``r_t`` their transcript codes; ``c_idx``: the calls no tool-use id pairs (ascending rows);
    ``held``: sorted int64 keys ``call × n_tx + transcript`` of the calls a pair of that
    transcript holds already (content, tool and time) — a call is taken for the results of that
    transcript only: another transcript's pair, or another transcript's result claiming it,
    leaves it free here (the one-to-one assignment keeps one transcript's pairs per session).

    A result and a call are candidates when the door was handling the call within ``window_ms``
    of the result (``ts − window ≤ result ≤ end + window``, ``end`` its ``ts_end`` or ``ts``) and

    * ``result_text``: the call's ``error`` is the result's text (the door's refusal, or a failed
      call's text: :func:`_texts_agree`) — the call's tool, when the result names one, the same;
    * ``result_tool``: the result names the call's tool, and the call logged no error;
    * ``result_size``: the result names no tool, the call logged no error, and the bytes the door
      sent back (``calls.bytes``, the text blocks' size) equal the result's text size (> 0).

    A call that logged an error is claimed only by a result with its text.  Per result and door
    session the strongest candidate is kept (``result_text`` first), then the nearest in time;
    each call goes to one result of each transcript (the strongest, nearest claim).  Returns
    ``(step positions, call rows, how codes)``, by result, then call time and row.

    A result searches only the calls it could claim: those of the tool it names, or (naming
    none) those that logged an error and those of its size, each by a (key, time) index; the
    choices are sorts of packed int64 keys.  The work grows with the calls of a result's tool in
    its window (every door session's: its output, one claim per result and session, may be as
    large), not with every call in the window."""
    if not len(r_idx) or not len(c_idx):
        return _EMPTY, _EMPTY, _EMPTY
    n_c = len(c_ms)
    cs = c_ms[c_idx]
    ce = np.where(c_end_ns[c_idx] != _NAT, c_end_ns[c_idx] // 1_000_000, cs)
    np.maximum(ce, cs, out=ce)
    c_end = np.zeros(n_c, np.int64)  # (when the door was done with each call, ms: once per call)
    c_end[c_idx] = ce
    longest = int((ce - cs).max())
    lo_ms, hi_ms = r_door - window_ms - longest, r_door + window_ms
    c_err = np.zeros(n_c, bool)  # (whether each call logged an error)
    c_err[c_idx] = np.fromiter((isinstance(e, str) for e in c_error[c_idx]), bool, len(c_idx))
    # (each call's rank in (time, row) order, and back: the order a result lists its candidates)
    by_rank = c_idx[np.argsort(cs, kind="stable")]
    rank = np.empty(n_c, np.int64)
    rank[by_rank] = np.arange(len(c_idx))
    # each result meets only the calls it could claim, in its window: those of the tool it names,
    # or (naming none) those with an error, and those without one that sent back its size — one
    # (key, time) index each, so a busy log's other tools and sizes are never candidates
    named = r_tool >= 0
    found = []  # (results, calls)

    def search(rs: np.ndarray, rows: np.ndarray, key: np.ndarray, r_key: np.ndarray, n_keys: int):
        if not len(rs) or not len(rows):
            return
        ix = _KeyTime(rows, key, c_ms, n_keys)
        lo, hi = ix.ranges(r_key, lo_ms[rs], hi_ms[rs])
        a, pos = _expand(lo, hi)
        if len(a):
            found.append((rs[a], ix.item[pos]))
    c_tool_ok = c_idx[c_tool[c_idx] >= 0]
    if named.any() and len(c_tool_ok):
        rs = np.flatnonzero(named)
        n_tools = int(c_tool[c_tool_ok].max()) + 1
        rs = rs[r_tool[rs] < n_tools]
        search(rs, c_tool_ok, c_tool, r_tool[rs], n_tools)
    if not named.all():
        rs = np.flatnonzero(~named)
        search(rs, c_idx[c_err[c_idx]], np.zeros(n_c, np.int64), np.zeros(len(rs), np.int64), 1)
        sized = c_idx[~c_err[c_idx]]
        sized = sized[c_bytes[sized] > 0]
        rs = rs[r_bytes[rs] > 0]
        if len(rs) and len(sized):
            sizes, b_code = np.unique(c_bytes[sized], return_inverse=True)
            key = np.zeros(n_c, np.int64)
            key[sized] = b_code.reshape(-1)
            at = np.minimum(np.searchsorted(sizes, r_bytes[rs]), len(sizes) - 1)
            rs_in = sizes[at] == r_bytes[rs]
            search(rs[rs_in], sized, key, at[rs_in].astype(np.int64), len(sizes))
    if not found:
        return _EMPTY, _EMPTY, _EMPTY
    ri = np.concatenate([f[0] for f in found])
    ci = np.concatenate([f[1] for f in found])
    del found
    near = c_end[ci] >= r_door[ri] - window_ms
    ri, ci = ri[near], ci[near]
    if len(held) and len(ri):  # (a call a pair of the result's own transcript holds)
        # most held calls are held by one transcript: compare with it, and look up only the
        # candidates whose call several hold
        h_c, h_t = held // n_tx, held % n_tx
        holder = np.full(n_c, -1, np.int64)  # the transcript holding each call; -2: several
        holder[h_c] = h_t
        several = np.r_[(h_c[1:] == h_c[:-1]) & (h_t[1:] != h_t[:-1]), False]
        holder[h_c[several]] = -2
        hc = holder[ci]
        free = hc != r_t[ri]
        many = np.flatnonzero(hc == -2)
        if len(many):
            q = ci[many] * n_tx
            q += r_t[ri[many]]
            free[many] = ~_in_sorted(held, q)
        ri, ci = ri[free], ci[free]
    # (as arrays: every claim a result could make in a busy log is a candidate here — all the
    # calls of its tool in the window, of every session — and only an error's text needs Python)
    err = c_err[ci]
    tier = np.where(r_tool[ri] >= 0, 1, 2)
    if err.any():
        e_at = np.flatnonzero(err)
        ok = np.fromiter((_texts_agree(r_text[a], c_error[c]) for a, c in zip(ri[e_at].tolist(),
                                                                               ci[e_at].tolist())),
                         bool, len(e_at))
        tier[e_at] = 0
        ok_all = np.ones(len(ri), bool)
        ok_all[e_at] = ok
        ri, ci, tier = ri[ok_all], ci[ok_all], tier[ok_all]
    if not len(ri):
        return _EMPTY, _EMPTY, _EMPTY
    dist = np.minimum(np.abs(r_door[ri] - c_ms[ci]), np.abs(r_door[ri] - c_end[ci]))
    n_r, n_ranks, d_max = len(r_idx), len(c_idx), int(dist.max()) + 1
    # per result and door session its strongest, nearest candidate (of equal ones the first in
    # time and row)
    sess = c_session[ci].astype(np.int64)
    ri, sess, tier, dist, k = _least_per_group(
        [ri, sess, tier, dist, rank[ci]], [n_r, int(sess.max()) + 1, 3, d_max, n_ranks], 2)
    del sess
    # each call to the strongest, nearest result of each transcript claiming it
    k, _, tier, dist, ri = _least_per_group(
        [k, r_t[ri].astype(np.int64), tier, dist, ri], [n_ranks, n_tx, 3, d_max, n_r], 2)
    # by result, then call time and row
    ri, k, tier = _least_per_group([ri, k, tier], [n_r, n_ranks, 3], 0)
    how = np.array([HOW_RESULT_TEXT, HOW_RESULT_TOOL, HOW_RESULT_SIZE], np.int8)[tier]
    return r_idx[ri].astype(np.int64), by_rank[k].astype(np.int64), how


def sub_agent_parents(steps: pd.DataFrame) -> dict[str, str]:
    """``{sub-agent transcript id: parent transcript id}`` for the transcripts of ``steps`` that
    a sub-agent wrote: every row carries an ``agent_id`` and names one ``client_session_id``,
    which is another transcript of ``steps`` — Claude Code's ``agent-<id>.jsonl`` (2.0.x) and
    ``<session>/subagents/agent-<id>.jsonl`` (2.1.x) files, whose parent is the
    ``<session>.jsonl`` transcript.  (Inline sidechain lines are in their parent's file
    already.)

    A sub-agent file whose parent transcript is not among ``steps`` belongs to the transcript
    that carries its parent's conversation, when exactly one does: a main-agent transcript
    holding the ``Task`` / ``Agent`` tool call (no MCP server) that started it — the call's
    ``prompt`` argument is the sub-agent's first prompt, as Claude Code writes it — which is
    what a conversation resumed in a new file holds when the file it resumed is not given (its
    copy of the history has the call).  With no such transcript, or several, it stays a
    transcript of its own.  Empty when no row has an ``agent_id`` (one pass over that column)."""
    if not len(steps):
        return {}
    agent_na = _isna_str(steps["agent_id"])
    if agent_na.all():
        return {}
    tid = _objects(steps["transcript_id"])
    main = set(pd.unique(tid[agent_na]).tolist())  # transcripts with a main-agent row
    every = set(pd.unique(tid).tolist())
    sub = pd.DataFrame({"t": tid[~agent_na], "c": _objects(steps["client_session_id"])[~agent_na]})
    sub = sub[~sub["t"].isin(main)].drop_duplicates()
    out: dict[str, str] = {}
    absent: list[str] = []  # sub-agent files whose parent transcript is not given
    for t, c in sub.groupby("t", sort=False)["c"]:
        vals = c.tolist()
        if not isinstance(t, str) or any(isinstance(v, str) and v == t for v in vals):
            continue
        if len(vals) == 1 and isinstance(vals[0], str) and vals[0] in every:
            out[t] = vals[0]
        elif not any(isinstance(v, str) and v in every for v in vals):
            absent.append(t)
    if absent:
        out.update(_task_carriers(steps, absent, agent_na, tid))
    return out


#: the Claude Code tools that start a sub-agent (its first prompt is their ``prompt`` argument)
SUB_AGENT_TOOLS = ("Task", "Agent")


def _task_carriers(steps: pd.DataFrame, subs: list[str], agent_na: np.ndarray, tid: np.ndarray) -> dict[str, str]:
    """``{sub-agent transcript: the one main-agent transcript holding the Task/Agent call that
    started it}`` (see :func:`sub_agent_parents`), for the sub-agent transcripts ``subs``.  A
    sub-agent's first prompt is its ``user_prompt`` row of least ``seq``; a prompt truncated in
    the frame (``text_bytes`` above its text's) matches a call whose prompt starts with it."""
    kinds = _objects(steps["kind"])
    tools = _objects(steps["tool"])
    is_task = _equals(kinds, "tool_call") & agent_na & _isna_str(steps["server"])
    is_task &= pd.Series(tools, dtype=object).isin(SUB_AGENT_TOOLS).to_numpy(bool)
    if not is_task.any():
        return {}
    holders: dict[str, set] = {}  # prompt → transcripts holding a call with it
    for t, args in zip(tid[is_task], _objects(steps["arguments"])[is_task]):
        prompt = args.get("prompt") if isinstance(args, dict) else None
        if isinstance(prompt, str) and isinstance(t, str):
            holders.setdefault(prompt, set()).add(t)
    first = steps[pd.Series(tid, dtype=object).isin(subs).to_numpy(bool) & _equals(kinds, "user_prompt")]
    first = first.sort_values("seq", kind="stable").drop_duplicates("transcript_id")
    out: dict[str, str] = {}
    for t, text, n_bytes in zip(first["transcript_id"], first["text"], first["text_bytes"]):
        if not isinstance(text, str):
            continue
        cut = not pd.isna(n_bytes) and int(n_bytes) > len(text.encode("utf-8", "surrogatepass"))
        found = set().union(*(h for p, h in holders.items() if p == text or (cut and p.startswith(text))))
        if len(found) == 1:
            out[str(t)] = next(iter(found))
    return out


def _declared_clocks(clock_offsets: Mapping[str, float] | None, own: np.ndarray,
                     conv: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The investigator's ``clock_offsets`` (transcript id → door clock − transcript clock,
    seconds) per step: ``(declared, ms)``, a bool and an int64 ms per step, for steps of
    transcript ``own`` in conversation ``conv`` (its parent's id for a sub-agent's step:
    :func:`sub_agent_parents`).  A step takes its own transcript's entry, else its
    conversation's: a parent's entry moves its sub-agents' steps too, and a sub-agent's moves only
    its own — a sub-agent whose calls reach another door (another MCP server's, on another
    machine's clock) than its parent's needs an offset its parent's steps do not.  ``None``
    without entries."""
    if not clock_offsets:
        return None
    ms = {str(t): int(round(float(sec) * 1000)) for t, sec in clock_offsets.items()}
    v = pd.Series(own, dtype=object).map(ms)
    if not ms.keys().isdisjoint(set(pd.unique(conv).tolist())):
        v = v.fillna(pd.Series(conv, dtype=object).map(ms))
    declared = v.notna().to_numpy(bool)
    return declared, np.where(declared, v.fillna(0).to_numpy("float64"), 0).astype(np.int64)


def unknown_clock_offsets(steps: pd.DataFrame, clock_offsets: Mapping[str, float] | None) -> list[str]:
    """The transcript ids of ``clock_offsets`` that no row of ``steps`` has (a typo, a file not
    among the inputs), in the mapping's order: the join cannot apply them, and says so
    (``JoinResult.warnings``).  Empty without ``clock_offsets``."""
    if not clock_offsets:
        return []
    have = set(pd.unique(_objects(steps["transcript_id"])).tolist()) if len(steps) else set()
    return [str(t) for t in clock_offsets if str(t) not in have]


def clock_offsets_warning(unknown: list[str]) -> str:
    """A sentence naming the ``clock_offsets`` entries (``--clock-offset``) no transcript has
    (:func:`unknown_clock_offsets`): ``clock_offsets names a transcript no input holds: t9; its
    offset was not applied (…)``."""
    names = ", ".join(unknown[:10]) + (f" and {len(unknown) - 10:,} more" if len(unknown) > 10 else "")
    one = len(unknown) == 1
    return (f"clock_offsets names {'a transcript' if one else f'{len(unknown):,} transcripts'} no input holds: "
            f"{names}; {'its offset was' if one else 'their offsets were'} not applied (`replaybook load steps` "
            "lists each step's transcript_id)")


def untimed_note(steps: pd.DataFrame, calls: pd.DataFrame) -> str | None:
    """A sentence on the transcript tool calls and door calls that carry no usable time (``ts``
    NaT: a timestamp missing or not a date-time in the source) — they can agree with nothing by
    content, which otherwise only shows as an unexplained 'unmatched' — naming the first of each
    by file and line; ``None`` when every one has a time."""
    parts, total = [], 0
    for what, df, kind in (("transcript tool call", steps, "tool_call"), ("door call", calls, None)):
        if not len(df) or "ts" not in df:
            continue
        rows = df[df["ts"].isna()] if kind is None else df[(df["kind"] == kind) & df["ts"].isna()]
        if not len(rows):
            continue
        first = rows.iloc[0]
        where = f"{first['source_file']}:{first['line_no']}" if "source_file" in rows else "?"
        n = len(rows)
        total += n
        parts.append(f"{n:,} {what}{'' if n == 1 else 's'} (first: {where})")
    if not parts:
        return None
    one = total == 1
    return (" and ".join(parts) + f" {'carries' if one else 'carry'} no usable timestamp (missing, or not a "
            f"date-time in the source): {'it takes' if one else 'they take'} part in no agreement by content and time")


def join_sessions(
    steps: pd.DataFrame,
    calls: pd.DataFrame,
    *,
    window_s: float = DEFAULT_WINDOW_S,
    min_agreed: int = DEFAULT_MIN_AGREED,
    max_offset_s: float = DEFAULT_MAX_OFFSET_S,
    clock_offsets: Mapping[str, float] | None = None,
) -> JoinResult:
    """Assign transcripts to door sessions one-to-one and report how sure each assignment is.

    Args:
        steps: a :data:`~replaybook.frames.STEPS` frame (``kind == "tool_call"`` rows are
            used, and ``tool_result`` rows whose call's own line is missing
            (:func:`orphan_results`): by their tool-use id, else by the door's error text, their
            tool or the answer's size and time (:func:`_result_pairs`); columns used:
            ``transcript_id``, ``seq``, ``ts``, ``result_ts`` (a call that waited for its approval
            reaches the door before it), ``server``, ``tool``, ``args_key``,
            ``call_id``, and for those results ``text`` and ``text_bytes``).
        calls: a :data:`~replaybook.frames.CALLS` frame.
        window_s: agreement window in seconds (> 0), applied after the clock offset: around the
            step's ``ts``; a call that waited (for the user's approval) before the door received
            it agrees up to the step's ``result_ts``, give or take the window but no more than
            :data:`FAR_PAIR_MS`.
        min_agreed: a transcript is never assigned with fewer agreeing steps than this (≥ 1).
        max_offset_s: how far apart (seconds) the two clocks may be: no clock offset the join
            applies (the common one, a transcript's own, the ids' one) lies beyond it.  The
            offset is estimated from the differences between steps and same-tool,
            same-arguments door calls within this range plus ``window_s`` (a call's own latency
            comes on top of the clocks' difference) — but only an offset within ``max_offset_s``
            is taken — as the one most steps agree on (:func:`_mode_offset`), among the steps
            and calls the tool-use ids left unpaired (the ids' own pairs give it only when those
            give none: another client's transcripts may run on another clock).  A transcript
            fewer than half of whose steps agree at that offset (fewer than two by id) may take one of its
            own in the same range (an agent on another machine: :func:`_own_clocks`); one two or
            more ids pair takes their median for its other steps (:func:`_id_clocks`).  ``0``
            assumes the clocks agree.  Other than the default, it moves more than the clock it
            was set for: :func:`offset_changes` names the sessions it joined otherwise.
        clock_offsets: transcript id → its clock offset as the investigator knows it (door clock
            − transcript clock, seconds; a machine set to another time zone as UTC: ``7200``),
            whatever ``max_offset_s``: that transcript (with its sub-agents) takes it as its own,
            takes no part in reading the common offset, and its pairs are found there (as
            :func:`far_clocks` suggests, without widening the search for every transcript).  A
            sub-agent's id gives its own steps that offset, and its parent's gives it the
            parent's when it has none of its own (:func:`_declared_clocks`); ids no step has are
            not applied and are named in ``JoinResult.warnings``.

    Returns:
        :class:`JoinResult`.

    Raises:
        JoinError: ``window_s`` not in (0, :data:`MAX_SECONDS`], ``max_offset_s`` not in
            [0, :data:`MAX_SECONDS`] (NaN and infinity included), ``min_agreed`` < 1, a frame lacks its columns, or (beyond
            any real incident: ~2^31 rows) too many distinct keys to index.

    Cost: integer codes for every string column once, then sorts of packed int64 keys — about
    O((S + C) log C + candidates), no per-session Python (5 M calls × 2 M steps: 5–6.5 s and
    ~1.3 GB on the project's two-core bench machine).  Independent parts run on two threads
    (:func:`_together`); the result does not depend on how they interleave.  Rows whose door
    session or transcript id is missing take part in no agreement (their calls stay unclaimed).
    """
    if not 0 < window_s <= MAX_SECONDS:  # (NaN fails too)
        raise JoinError(f"window_s must be a number of seconds above 0 and at most {MAX_SECONDS:g}, got {window_s}")
    if not 0 <= max_offset_s <= MAX_SECONDS:
        raise JoinError(f"max_offset_s must be a number of seconds from 0 to {MAX_SECONDS:g}, got {max_offset_s}")
    if min_agreed < 1:
        raise JoinError(f"min_agreed must be at least 1, got {min_agreed}")
    for spec, df in ((STEPS, steps), (CALLS, calls)):
        missing = [c for c in spec.names if c not in df.columns]
        if missing:
            raise JoinError(f"{spec.name} frame lacks columns {missing}")
    window_ms = int(round(window_s * 1000))
    calls = calls.reset_index(drop=True)
    n_c = len(calls)

    # 2 (started first: the longest side job). exact pairs by the client's tool-use id logged
    # in _meta, over every step row; tool_call rows with a transcript and calls with a session
    # are kept below, on this thread
    meta_col, cid_all = calls["meta_call_id"], steps["call_id"]

    def id_matches() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(step row, call row) of each step whose call_id some call logged, with the first
        such call; by step row.  Third, the rows of the calls whose logged id no step has."""
        meta_na = _isna_str(meta_col)
        if meta_na.all():
            return _EMPTY, _EMPTY, _EMPTY
        mi = np.flatnonzero(~meta_na)
        cid_na = _isna_str(cid_all)
        if cid_na.all():
            return _EMPTY, _EMPTY, mi
        ai = np.flatnonzero(~cid_na)
        return _first_equal(_objects(cid_all)[ai], _objects(meta_col)[mi], ai, mi)

    id_later = _later(id_matches)

    # 1. integer codes.  Tool and argument codes are shared by steps and calls.
    session_objs = _objects(calls["door_session"])
    sessions_later = _later(lambda: _codes(session_objs, sort=True, runs=True))  # beside the tool codes
    tool_all, tool_u = _codes_parts([_objects(steps["tool"]), _objects(calls["tool"])])
    kinds = _objects(steps["kind"])
    is_call = _equals(kinds, "tool_call")
    # a tool result whose tool call's own line is missing takes part by its tool-use id alone (so
    # only where some door call logged one)
    orphan_rows = orphan_results(steps, kinds=kinds, is_call=is_call)
    sel_mask = is_call & (tool_all[:len(steps)] >= 0)
    if orphan_rows.any():
        sel_mask |= orphan_rows
    sel = np.flatnonzero(sel_mask)
    whole = len(sel) == len(steps)
    n_st = len(sel)
    orphan = orphan_rows[sel] if orphan_rows.any() else None  # by position among the selected rows

    def scol(name: str) -> np.ndarray:  # a steps column's objects, selected rows only
        v = _objects(steps[name])
        return v if whole else v[sel]

    # a sub-agent's steps are its parent's conversation (same MCP connections, same door session)
    parents = sub_agent_parents(steps)
    conv = scol("transcript_id")
    if parents:
        mapped = pd.Series(conv).map(parents).to_numpy(dtype=object)
        moved = pd.notna(mapped)
        conv = np.where(moved, mapped, conv)
    t_codes, t_names = _codes(conv, sort=True, runs=True)
    s_codes, s_names = sessions_later.result()
    del sessions_later
    n_t, n_s = len(t_names), len(s_names)
    n_sx = max(n_s, 1)
    tool_s = tool_all[:len(steps)] if whole else tool_all[:len(steps)][sel]
    tool_c = tool_all[len(steps):]
    notes = _gateway_prefixed(tool_s, tool_c, tool_u, calls["server"])  # (tool_c in place: a view)
    args_all, args_u = _codes_parts([scol("args_key"), _objects(calls["args_key"])])
    noargs = args_all < 0
    s_noargs, c_noargs = noargs[:n_st], noargs[n_st:]
    # the key compares tool + arguments, a missing argument key spelled as "{}" (in place:
    # fresh memory is much of the cost at these sizes)
    brace = np.flatnonzero(_equals(args_u, "{}"))
    args_all[noargs] = brace[0] if len(brace) else len(args_u)
    tool_sc = tool_all if whole else np.concatenate([tool_s, tool_c])
    valid = tool_sc >= 0
    comb = tool_sc * (len(args_u) + 1)
    comb += args_all
    del args_all
    n_keys = max(len(tool_u) * (len(args_u) + 1), 1)

    def keys_in_order_of_appearance() -> np.ndarray:
        """The key codes numbered in order of first appearance (steps, then calls)."""
        k = np.full(n_st + n_c, -1, np.int64)
        k[valid] = pd.factorize(comb[valid])[0]
        return k

    if n_keys < (1 << (61 - max(n_st, n_c, 1).bit_length())):  # the code pair itself is the key
        k_all = comb  # (later reads of comb read valid entries only)
        k_all[~valid] = -1
    else:
        k_all = keys_in_order_of_appearance()
        n_keys = max(int(k_all.max()) + 1, 1)
    k_s, k_c = k_all[:n_st], k_all[n_st:]

    st_ts = steps["ts"] if whole else steps["ts"].iloc[sel]
    s_ns, c_ns = _ns(st_ts), _ns(calls["ts"])
    s_ms, c_ms = s_ns // 1_000_000, c_ns // 1_000_000
    s_ok = (s_ns != _NAT) & (t_codes >= 0)
    if orphan is not None:  # (no tool, no arguments: nothing to compare but the id)
        s_ok &= ~orphan
    # how long each step waited for its result (ms; 0 without one): the door receives a call only
    # once the client runs it, after the user approved it, and before its result is written
    r_ns = _ns(steps["result_ts"] if whole else steps["result_ts"].iloc[sel])
    wait_ms = np.where(s_ok & (r_ns != _NAT) & (r_ns > s_ns), r_ns // 1_000_000 - s_ms, 0)
    del r_ns
    if orphan is not None:
        wait_ms[orphan] = 0
    # a call its user declined never ran: no door received it, however long the user took to say no
    # (a call stopped while it ran reads alike: one that waited for approval then loses its late pair)
    wait_ms[declined_by_user(steps if whole else steps.iloc[sel])] = 0
    np.minimum(wait_ms, int(MAX_SECONDS * 1000), out=wait_ms)
    if not wait_ms.any():
        wait_ms = None
    # how far past the window of its time a call that waited may lie (ms): up to the step's result,
    # give or take the window but no more than FAR_PAIR_MS (one clock does not drift further within
    # a session) — a call the door received after the result was written did not wait for it
    late_reach = None
    if wait_ms is not None:
        late_reach = np.maximum(wait_ms + min(window_ms, int(FAR_PAIR_MS)) - window_ms, 0)
        if not late_reach.any():
            late_reach = None
    c_ok = (c_ns != _NAT) & (tool_c >= 0) & (s_codes >= 0)  # some gateways log neither

    ts_end_col, decision_col, agent_col = calls["ts_end"], calls["decision"], calls["agent"]
    server_objs = scol("server")

    def call_figures() -> tuple:
        """What the report needs from the calls and steps alone, whatever agrees: the calls'
        (door_session, ts) order, per-session start, end, refusals and agent, the steps'
        server codes.  (Run beside the window pairing: mostly object work holding the GIL
        beside integer work releasing it.)"""
        # calls in (door_session, ts) order, NA sessions and NaT last: the loaders' usual order
        cs_key = s_codes if not n_c or s_codes.min() >= 0 else np.where(s_codes >= 0, s_codes, n_s)
        c_nat = c_ns == _NAT
        cts_key = np.where(c_nat, _I64_MAX, c_ns) if c_nat.any() else c_ns
        del c_nat
        calls_sorted = bool(np.all((cs_key[1:] > cs_key[:-1])
                                   | ((cs_key[1:] == cs_key[:-1]) & (cts_key[1:] >= cts_key[:-1]))))
        c_rank = None
        if not calls_sorted:  # each call's place in that order
            c_rank = np.empty(n_c, np.int64)
            c_rank[np.lexsort((cts_key, cs_key))] = np.arange(n_c)
        # per-session figures over the calls, in session order (calls without a session: none)
        if calls_sorted:
            order = None
            so = cs_key
        else:
            order = _stable_order(cs_key)
            so = cs_key[order]
        first = np.searchsorted(so, np.arange(n_s), "left")
        n_valid = int(np.searchsorted(so, n_s, "left"))
        counts = np.bincount(s_codes[s_codes >= 0], minlength=n_s)

        def seg(a):
            return (a if order is None else a[order])[:n_valid]

        def seg_reduce(ufunc, a):
            return ufunc.reduceat(seg(a), first) if n_s else np.empty(0, np.int64)

        start_ns = seg_reduce(np.minimum, cts_key)  # NaT counted as the latest
        start_ns[start_ns == _I64_MAX] = _NAT
        last_ns = seg_reduce(np.maximum, c_ns)
        end_ns = seg_reduce(np.maximum, _ns(ts_end_col))
        later = (end_ns != _NAT) & (last_ns != _NAT) & (end_ns > last_ns)
        end_ns = np.where(later, end_ns, last_ns)
        is_deny = _equals(_objects(decision_col), "deny")
        refused = np.bincount(cs_key[is_deny], minlength=n_s + 1)[:n_s]
        ag_first = seg_reduce(np.minimum, np.where(_isna_str(agent_col), n_c, np.arange(n_c)))
        agent = np.array([None] * n_s, dtype=object)
        has_ag = ag_first < n_c
        agent[has_ag] = _objects(agent_col)[ag_first[has_ag]]
        srv_c, srv_u = _codes(server_objs)
        return cs_key, cts_key, c_rank, counts, start_ns, end_ns, refused, agent, srv_c, srv_u

    figures_later = _later(call_figures)  # beside the time indexes and the window pairing

    # exact pairs: each step takes the first call logging its id, each call the first step
    # claiming it
    si_, ci_, unknown_id_rows = id_later.result()
    del id_later
    if len(si_) and not whole:  # step rows → positions among the tool_call rows
        at = np.full(len(steps), -1, np.int64)
        at[sel] = np.arange(n_st)
        si_ = at[si_]
        ci_ = ci_[si_ >= 0]
        si_ = si_[si_ >= 0]
    have = (t_codes[si_] >= 0) & (s_codes[ci_] >= 0)
    si_, ci_ = si_[have], ci_[have]
    o = _stable_order(ci_)
    firsts = o[np.r_[True, ci_[o][1:] != ci_[o][:-1]]] if len(o) else _EMPTY
    keep = np.zeros(len(ci_), bool)
    keep[firsts] = True
    ex_si, ex_ci = si_[keep], ci_[keep]
    del si_, ci_, o, firsts, keep, have
    ex_step = np.zeros(n_st, bool)
    ex_step[ex_si] = True
    ex_call = np.zeros(n_c, bool)
    ex_call[ex_ci] = True

    # 3. content candidates (steps/calls already matched exactly are out of the running)
    s_idx = np.flatnonzero(s_ok & ~ex_step)
    c_free = c_ok & ~ex_call
    c_tool_idx = np.flatnonzero(c_free & c_noargs)
    c_idx = np.flatnonzero(c_free & ~c_noargs)
    exact_offset = None
    if len(ex_si):  # exact pairs measure their own transcripts' offset directly
        d = c_ms[ex_ci] - s_ms[ex_si]
        d = d[s_ok[ex_si] & c_ok[ex_ci]]
        if len(d):
            exact_offset = float(np.median(d))
    max_offset_ms = int(max_offset_s * 1000)
    s_args_idx = s_idx[~s_noargs[s_idx]]
    # the clocks the investigator gave (clock_offsets), per step: those steps are found on their
    # own clock only, and do not vote on the common offset or look for a clock of their own
    dec = _declared_clocks(clock_offsets, scol("transcript_id"), conv)
    declared, declared_ms = dec if dec is not None else (None, None)
    s_common_idx = s_args_idx if declared is None else s_args_idx[~declared[s_args_idx]]
    # calls and steps with arguments by (key, time, row)
    C, S = _together(lambda: _KeyTime(c_idx, k_c, c_ms, n_keys),
                     lambda: _KeyTime(s_common_idx, k_s, s_ms, n_keys))
    # the content match's offset is measured on what it matches: the steps and calls the ids left
    # (ids pair whatever the clocks say, and another client's transcripts may run on another
    # clock); the ids' offset only where those give none
    offset = None
    t_own = None  # each transcript's offset, where one took a clock of its own
    if max_offset_ms > 0 and len(s_idx) and len(c_idx):
        pick = np.arange(len(s_idx))
        if declared is not None:  # (their clocks are known: they do not vote on the others')
            pick = pick[~declared[s_idx]]
        if len(pick) > 20000:
            pick = np.random.default_rng(0).choice(pick, 20000, replace=False)
        q = s_idx[pick]
        # (clocks up to max_offset apart, and each call up to a window after or before its step;
        # the offset itself never beyond max_offset)
        offset = _mode_offset(C, k_s[q], s_ms[q], max_offset_ms + window_ms, max_offset_ms)
    if offset is None:  # (the ids' offset too stays within max_offset for the content match, but for a
        # call's travel to the door, which it measures: max_offset 0 still lets calls arrive 150 ms late)
        offset = (0.0 if exact_offset is None else exact_offset if abs(exact_offset) <= max_offset_ms + _TRAVEL_MS
                  else float(np.clip(exact_offset, -max_offset_ms, max_offset_ms)))
    off = int(round(offset))
    # a call whose logged tool-use id differs from the step's may not agree on content
    step_has_id = ~_isna_str(cid_all)
    veto = None
    if (meta_has_id := ~_isna_str(meta_col)).any() and step_has_id.any():
        veto = _IdVeto(step_has_id if whole else step_has_id[sel], scol("call_id"), meta_has_id,
                       _objects(meta_col))
    msi, mci = _window_pairs(S, C, off, window_ms, t_codes, s_codes, n_sx, veto, late_reach)
    parts = [(msi, mci, HOW_CONTENT, off)]  # (step rows, call rows, how, offset: ms or per pair)
    # transcripts on a clock of their own (another machine): fewer than OWN_CLOCK_SHARE of their
    # steps agreed at the common offset, and fewer than two by id; each may take its own (its pairs then
    # measure time from that offset, and replace its pairs at the common one)
    own = None
    few_agree = None  # per transcript code: fewer than OWN_CLOCK_SHARE of its steps agreed at the common offset
    if max_offset_ms > 0 and len(s_common_idx):
        # a pair in a session another transcript explains better at the common offset (the other
        # agent's own session, its calls repeated by this one) is no sign of this one's clock
        # (read from the pairs within the window of their step's time: a call that waited for the
        # user's approval is no clock)
        wsi, wci = msi, mci
        if late_reach is not None:
            near = c_ms[mci] - s_ms[msi] - off <= window_ms
            wsi, wci = msi[near], mci[near]
        mine_pair, own_session = _explains(t_codes[wsi], s_codes[wci], np.abs(c_ms[wci] - s_ms[wsi] - off), n_sx)
        agreed_t = np.bincount(t_codes[wsi][mine_pair], minlength=n_t + 1)
        # (a transcript whose every step has its clock from the investigator has none here)
        with_args_t = np.bincount(t_codes[s_common_idx], minlength=n_t + 1)
        # (none of its other steps has arguments: nothing agrees at the common offset either)
        few_agree = (agreed_t < OWN_CLOCK_SHARE * with_args_t) | (with_args_t == 0)
        maybe = few_agree.copy()
        # the ids tell its clock (_id_clocks) where enough timed id pairs measure it
        timed_ids = s_ok[ex_si] & c_ok[ex_ci]
        maybe[np.bincount(t_codes[ex_si][timed_ids], minlength=n_t + 1) >= ID_CLOCK_MIN_PAIRS] = False
        q = s_common_idx[maybe[t_codes[s_common_idx]]]
        claimed = None
        if len(q):
            strong = ~maybe[t_codes[wsi]] & own_session
            if strong.any():
                claimed = np.zeros(n_c, bool)
                claimed[wci[strong]] = True
        own = _own_clocks(C, q, k_s, s_ms, t_codes, n_t, off, max_offset_ms + window_ms, window_ms,
                          max(min_agreed, 2), agreed_t, claimed, max_offset_ms)
    # a transcript the tool-use ids pair runs on the clock they measure: its other steps are found
    # there (disjoint from _own_clocks' transcripts: those have no id pairs)
    if few_agree is None:  # (no step with arguments beside the ids' pairs: nothing agreed at the common offset)
        few_agree = np.ones(n_t + 1, bool)
    t_ids = _id_clocks(ex_si, ex_ci, s_ms, c_ms, s_ok, c_ok, t_codes, n_t, off, max_offset_ms, few_agree)
    if t_ids is not None:
        r_ids = t_ids[t_codes[s_common_idx]]
        has = r_ids != _NAT
        if has.any():
            rows = s_common_idx[has]
            if own is None:
                own = (rows, r_ids[has])
            else:
                rows = np.concatenate([own[0], rows])
                order = np.argsort(rows, kind="stable")
                own = (rows[order], np.concatenate([own[1], r_ids[has]])[order])
    if own is not None or t_ids is not None:
        t_own = np.full(n_t + 1, off, np.int64)  # (index -1: a step of no transcript)
        if t_ids is not None:  # (also for a transcript whose other steps logged no arguments)
            t_own[t_ids != _NAT] = t_ids[t_ids != _NAT]
    if own is not None:
        rows, offs = own
        moved = np.zeros(n_t + 1, bool)
        moved[t_codes[rows]] = True
        t_own[t_codes[rows]] = offs
        if moved[t_codes[msi]].any():  # its pairs at the common offset were coincidences
            keep = ~moved[t_codes[msi]]
            msi, mci = msi[keep], mci[keep]
            parts[0] = (msi, mci, HOW_CONTENT, off)
    if declared is not None:  # the offsets the investigator gave, beside those read
        mine = s_args_idx[declared[s_args_idx]]
        if len(mine):
            rows = mine if own is None else np.concatenate([own[0], mine])
            offs = declared_ms[mine] if own is None else np.concatenate([own[1], declared_ms[mine]])
            order = np.argsort(rows, kind="stable")
            own = (rows[order], offs[order])
    if own is not None:
        rows, offs = own
        shifted = s_ms.copy()
        shifted[rows] += offs  # on the door's clock: the pairs are then found at offset 0
        S_own = _KeyTime(rows, k_s, shifted, n_keys)
        osi, oci = _window_pairs(S_own, C, 0, window_ms, t_codes, s_codes, n_sx, veto, late_reach)
        del S_own
        parts.append((osi, oci, HOW_CONTENT, (shifted[osi] - s_ms[osi])))
        del shifted
    cs_key, cts_key, c_rank, counts, start_ns, end_ns, refused, agent, srv_c, srv_u = figures_later.result()
    del figures_later
    del C, S
    if len(c_tool_idx) or s_noargs[s_idx].any():
        # tool + time only, where one side logged no arguments (a gateway that logs a count or a
        # hash; a client whose arguments did not parse), per (transcript, session) among the steps
        # and calls no content pair of that same (transcript, session) holds.  A step whose
        # arguments agree with a call of another session is free here: the one-to-one assignment
        # may give that session another transcript, and the step's only call is then this one.
        # (Each transcript keeps one session's pairs, and a session continuing it lies apart in
        # time, so no step is claimed twice.)  The content pairs (at the common offset, and at
        # a transcript's own) as sorted (step, session) and (call, transcript) keys:
        c_si = np.concatenate([p[0] for p in parts]).astype(np.int64)
        c_ci = np.concatenate([p[1] for p in parts]).astype(np.int64)
        taken_ss = c_si * n_sx
        taken_ss += s_codes[c_ci]
        taken_ss = _sorted(taken_ss)
        n_tx = n_t + 1
        taken_ct = c_ci * n_tx
        taken_ct += t_codes[c_si]
        taken_ct = _sorted(taken_ct)
        del c_si, c_ci
        kt_all = np.full(n_st + n_c, -1, np.int64)  # tool-only keys
        ktc_, ktu_ = pd.factorize(tool_sc[valid])
        kt_all[valid] = ktc_
        kt_s, kt_c = kt_all[:n_st], kt_all[n_st:]
        n_tkeys = max(len(ktu_), 1)
        # step times on the door's clock: the common offset, or a transcript's own
        s_door = s_ms + (off if t_own is None else t_own[t_codes])
        if declared is not None:  # (also a declared step without arguments)
            s_door[declared] = s_ms[declared] + declared_ms[declared]
        S2 = _KeyTime(s_idx, kt_s, s_door, n_tkeys)
        C2 = _KeyTime(_sorted(np.concatenate([c_tool_idx, c_idx])), kt_c, c_ms, n_tkeys)
        spos = np.full(n_st, -1, np.int64)
        spos[S2.item] = np.arange(len(S2.item))
        cpos = np.full(n_c, -1, np.int64)
        cpos[C2.item] = np.arange(len(C2.item))
        cands, waits = [], []
        for ss, cc, by_step in ((s_idx, c_tool_idx, True), (s_idx[s_noargs[s_idx]], c_idx, False)):
            if len(ss) and len(cc):
                CA = _KeyTime(cc, kt_c, c_ms, n_tkeys)
                lo, hi = CA.ranges(kt_s[ss], s_door[ss] - window_ms, s_door[ss] + window_ms)
                found = [(_expand(lo, hi), cands)]
                if late_reach is not None:  # (past the window: a call that waited for its approval)
                    xp = np.flatnonzero(late_reach[ss] > 0)
                    hi2 = CA.upper(kt_s[ss[xp]], s_door[ss[xp]] + late_reach[ss[xp]] + window_ms)
                    more = hi2 > hi[xp]
                    r, c = _expand(hi[xp][more], hi2[more])
                    found.append(((xp[more][r], c), waits))
                for (r, c), into in found:
                    # (a call without arguments holds no content pair, nor does a step without: only
                    # the other side's can be taken)
                    if by_step and len(taken_ss):
                        q = ss[r] * n_sx
                        q += s_codes[CA.item[c]]
                        free = ~_in_sorted(taken_ss, q)
                        r, c = r[free], c[free]
                    elif not by_step and len(taken_ct):
                        q = CA.item[c] * n_tx
                        q += t_codes[ss[r]]
                        free = ~_in_sorted(taken_ct, q)
                        r, c = r[free], c[free]
                    if veto is not None:
                        bad = veto(ss[r], CA.item[c])
                        if bad is not None:
                            r, c = r[~bad], c[~bad]
                    into.append((spos[ss[r]], cpos[CA.item[c]]))
        if cands or waits:
            sp, cp = _EMPTY, _EMPTY
            if cands:
                all_sp, all_cp = np.concatenate([x[0] for x in cands]), np.concatenate([x[1] for x in cands])
                sp, cp = _rank_pair(all_sp, all_cp, S2, C2, t_codes, s_codes, n_sx)
                # a group pairs its steps and calls by rank: a step with arguments and a call with
                # other arguments (each a candidate with another item of the group), or a pair the
                # ids veto, may meet there — no agreement: only a candidate pair is kept
                n_cp = max(len(C2.item), 1)
                cand_key = all_sp * n_cp
                cand_key += all_cp
                pair_key = sp * n_cp
                pair_key += cp
                keep = np.abs(c_ms[C2.item[cp]] - s_door[S2.item[sp]]) <= window_ms
                keep &= _in_sorted(_sorted(cand_key), pair_key)
                sp, cp = sp[keep], cp[keep]
            if waits:  # a step the window left without a call of any session: one that waited
                # (nor one with a content pair within the window of its time)
                near_content = np.zeros(n_st, bool)
                for p_si_, p_ci_, _h, p_off in parts:
                    d_ = c_ms[p_ci_] - s_ms[p_si_]
                    d_ -= p_off
                    near_content[p_si_[np.abs(d_) <= window_ms]] = True
                ls, lc = _late_pairs(np.concatenate([x[0] for x in waits]), np.concatenate([x[1] for x in waits]),
                                     sp, cp, S2, C2, t_codes, s_codes, n_sx, 0, near_content)
                sp, cp = np.concatenate([sp, ls]), np.concatenate([cp, lc])
            m2s, m2c = S2.item[sp], C2.item[cp]
            parts.append((m2s, m2c, HOW_TOOL_TIME, off if t_own is None and declared is None
                          else s_door[m2s] - s_ms[m2s]))
    if orphan is not None:
        # a tool result whose call's own line is missing, and whose tool-use id no door call logged
        # (a client that sends the door none: Codex), by what the door logged of the answer
        r_idx = np.flatnonzero(orphan & ~ex_step & (s_ns != _NAT) & (t_codes >= 0))
        if len(r_idx):
            # a call is taken for a result only by a pair of the result's own transcript (as
            # (call, transcript) keys; a call lies in one session, so per (transcript, session)):
            # a call whose arguments agree with a step of another transcript, or that another
            # transcript's result claims, is still this one's to claim — the one-to-one assignment
            # may give its session this transcript.  A call a tool-use id pairs is taken everywhere.
            n_tx = n_t + 1
            held = _EMPTY
            if parts:
                held = np.concatenate([p[1] for p in parts]).astype(np.int64) * n_tx
                held += t_codes[np.concatenate([p[0] for p in parts])]
                held = _sorted(held)
            r_door = _door_times(r_idx, off, t_own, t_codes, s_ms, declared, declared_ms)
            rows_r = r_idx if whole else sel[r_idx]
            r_bytes = steps["text_bytes"].to_numpy("float64", na_value=np.nan)[rows_r]
            r_tool = tool_s[r_idx]
            c_error = _objects(calls["error"])
            c_bytes = calls["bytes"].to_numpy("float64", na_value=np.nan)
            # (only the calls some result could claim: an error logged, a tool a result names, a
            # size a result without one has — whole columns, before any window is searched)
            could = c_ok & ~ex_call
            could &= ~_isna_str(calls["error"]) | np.isin(tool_c, r_tool[r_tool >= 0]) | \
                np.isin(c_bytes, r_bytes[(r_tool < 0) & (r_bytes > 0)])
            rsi, rci, rhow = _result_pairs(
                r_idx, r_door, _objects(steps["text"])[rows_r], r_bytes, r_tool, t_codes[r_idx],
                np.flatnonzero(could), held, n_tx, c_ms, _ns(ts_end_col), c_error, c_bytes, tool_c, s_codes,
                window_ms)
            for h in (HOW_RESULT_TEXT, HOW_RESULT_TOOL, HOW_RESULT_SIZE):
                k = rhow == h
                if k.any():
                    parts.append((rsi[k], rci[k], h, off if t_own is None and declared is None
                                  else _door_times(rsi[k], off, t_own, t_codes, s_ms, declared, declared_ms) - s_ms[rsi[k]]))
    if len(ex_si):
        parts.append((ex_si, ex_ci, HOW_META, off))
    m_si = np.concatenate([p[0] for p in parts]).astype(np.int64)
    m_ci = np.concatenate([p[1] for p in parts]).astype(np.int64)
    m_how = np.concatenate([np.full(len(p[0]), p[2], np.int8) for p in parts])
    m_t, m_s = t_codes[m_si], s_codes[m_ci]
    m_d = c_ms[m_ci]  # after the offset: ~0 when in step
    m_d -= s_ms[m_si]
    if len(parts) > 1 and any(not isinstance(p[3], int) for p in parts):
        m_d -= np.concatenate([np.broadcast_to(np.int64(p[3]), len(p[0])) for p in parts])
    else:
        m_d -= off

    # a call that waited (for the user's approval) beyond the window of its step's time: the
    # content and tool-and-time pairs that lie there (:func:`_late_pairs`)
    m_late = (m_d > window_ms) & ((m_how == HOW_CONTENT) | (m_how == HOW_TOOL_TIME))
    if late_reach is None:  # (none waited: every such pair lies within the window)
        m_late[:] = False
    m_prox = np.abs(m_d)
    # (its time proximity: the window's edge — a call within the window of a step's time is the
    # usual case, one that waited only a possible one: never the nearer of the two)
    m_prox[m_late] = window_ms

    # 4. agreement per (transcript, session): count, tool-use id matches, median |Δt|
    pcode = m_t * n_sx
    pcode += m_s
    upc, agreed, med = _group_median(pcode, m_prox)
    exact_n = np.bincount(np.searchsorted(upc, pcode[m_how == HOW_META]), minlength=len(upc)).astype(np.int64)
    sc_t, sc_s = upc // n_sx, upc % n_sx

    # 5. one-to-one assignment, maximising agreement; ties by time proximity.
    el = agreed >= min_agreed

    first_steps: list[np.ndarray] = []

    def first_step_ns(codes: np.ndarray) -> np.ndarray:
        """Each of the transcript ``codes``' first tool step as recorded (its sub-agents' included),
        ns; NaT (_NAT) when none has a time.  Worked out for every transcript at once (one pass
        over the steps), the first time the assignment meets a tie, and only then."""
        if not first_steps:
            out = np.full(n_t, _I64_MAX, np.int64)
            rows = np.flatnonzero((s_ns != _NAT) & (t_codes >= 0))
            np.minimum.at(out, t_codes[rows], s_ns[rows])
            out[out == _I64_MAX] = _NAT
            first_steps.append(out)
        return first_steps[0][codes]

    def scores_frame() -> pd.DataFrame:
        """scores: by door session, then agreement (descending), then transcript."""
        amax = int(agreed.max()) if len(agreed) else 0
        so_ = _stable_order(sc_s * (amax + 1) + (amax - agreed)) if len(agreed) else _EMPTY
        return pd.DataFrame({
            # (each name validated once, then taken)
            "door_session": pd.array(s_names, dtype="string").take(sc_s[so_]),
            "transcript_id": pd.array(t_names, dtype="string").take(sc_t[so_]),
            "agreed": pd.array(agreed[so_], dtype="Int64"),
            "exact": pd.array(exact_n[so_], dtype="Int64"),
            "median_abs_delta_ms": med[so_].astype("float64"),
        })

    (assign_arr, mg), scores = _together(
        lambda: _assign(sc_s[el], sc_t[el], agreed[el].astype("float64"), med[el], n_s, n_t, window_ms,
                        start_ns, first_step_ns),
        scores_frame)

    # a session the one-to-one assignment left out may continue a transcript another session has
    continues = np.full(n_s, -1, np.int64)
    if len(sc_s):
        cont = _continuations(assign_arr, sc_s, sc_t, agreed, exact_n, counts, m_s, m_t, m_si, s_ms, start_ns,
                              end_ns, min_agreed)
        if cont:
            first_of = np.full(n_t, -1, np.int64)
            first_of[assign_arr[assign_arr >= 0]] = np.flatnonzero(assign_arr >= 0)
            assign_arr = assign_arr.copy()
            for s_, t_ in cont.items():
                assign_arr[s_] = t_
                continues[s_] = first_of[t_]
    # a session assigned a transcript that resumes another's continues that one's session: the
    # same conversation, resumed in a new file (its copy of the history kept with the first file)
    resumed = np.full(n_s, -1, np.int64)
    if n_s > 1 and (assign_arr >= 0).sum() > 1:
        resumed = _resumed_sessions(resumptions(steps), assign_arr, continues, t_names, start_ns, end_ns)

    # 6. per-session report
    has_t = assign_arr >= 0
    in_pair = assign_arr[m_s] == m_t
    p_si, p_ci, p_s, p_t, p_how = m_si[in_pair], m_ci[in_pair], m_s[in_pair], m_t[in_pair], m_how[in_pair]
    p_late, p_rel = m_late[in_pair], m_d[in_pair]
    p_dint = c_ms[p_ci] - s_ms[p_si]
    # pairs ordered by (door_session, call_ts); equal ones keep their order of discovery: tier
    # (content, tool_time, meta_id), then key (numbered in order of first appearance), rank
    fo = _stable_order(p_ci if c_rank is None else c_rank[p_ci])
    if len(fo) > 1:
        a_s, a_t = cs_key[p_ci[fo]], cts_key[p_ci[fo]]
        if np.any((a_s[1:] == a_s[:-1]) & (a_t[1:] == a_t[:-1])):
            pos = np.arange(len(p_ci))
            tier = np.array([5, 0, 1, 2, 3, 4])[p_how]  # content, tool_time, result_*, meta_id
            k_first = np.where(p_how == HOW_CONTENT, keys_in_order_of_appearance()[p_si], 0)
            discovered = np.lexsort((pos, k_first, p_s, p_t, tier))
            m_rank = np.empty(len(pos), np.int64)
            m_rank[discovered] = pos
            fo = np.lexsort((m_rank, cts_key[p_ci], cs_key[p_ci]))
    p_si, p_ci, p_s, p_t, p_how, p_dint, p_late, p_rel = (x[fo] for x in (p_si, p_ci, p_s, p_t, p_how, p_dint,
                                                                          p_late, p_rel))
    p_delta = p_dint.astype("float64")
    st_rows = p_si if whole else sel[p_si]
    agreeing = np.zeros(n_st, bool)
    agreeing[m_si] = True
    seen = np.zeros(len(srv_u) + 1, bool)
    seen[srv_c[agreeing]] = True
    # and a server a step has a door call's tool and arguments on, whenever that call was: its
    # session left unmatched (a clock beyond max_offset_s), its steps are still door-bound ones the
    # join left unpaired, not steps the door never saw
    rest = np.flatnonzero(~seen[srv_c] & (srv_c >= 0) & (k_s >= 0))
    if len(rest):
        seen[srv_c[rest[_has_door_call(rest, k_s, tool_s, s_noargs, k_c, tool_c, c_noargs,
                                       s_codes >= 0, len(tool_u))]]] = True
    door_servers = sorted({str(u) for u in srv_u[seen[:-1]]})
    pairs = PAIRS.build({
        "door_session": _str_take(s_names, p_s),
        # each step's own transcript (a sub-agent's file), so (transcript_id, step_seq) names the step
        "transcript_id": steps["transcript_id"].array.take(st_rows) if parents else _str_take(t_names, p_t),
        "step_seq": steps["seq"].array.take(st_rows),
        "call_seq": calls["seq"].array.take(p_ci),
        "call_row": p_ci,
        "call_id": steps["call_id"].array.take(st_rows),
        "tool": steps["tool"].array.take(st_rows),
        "args_key": steps["args_key"].array.take(st_rows),
        "step_ts": steps["ts"].array.take(st_rows),
        "call_ts": calls["ts"].array.take(p_ci),
        "delta_ms": p_delta,
        "how": _str_take(np.asarray(_HOW_NAMES, dtype=object), p_how.astype(np.int64)),
        "step_kind": steps["kind"].array.take(st_rows),
        "step_result_ts": steps["result_ts"].array.take(st_rows),
    })
    # the pairs whose step is a tool result standing in for its missing tool call
    p_orphan = orphan[p_si] if orphan is not None else np.zeros(len(p_si), bool)

    # residuals: calls no step claims; door-bound steps of assigned transcripts no call claims
    claimed_call = np.zeros(n_c, bool)
    claimed_call[p_ci] = True
    claimed_step = np.zeros(n_st, bool)
    claimed_step[p_si] = True
    if door_servers:
        in_door = np.array([str(u) in door_servers for u in srv_u] + [False], bool)
        door_bound = in_door[srv_c]
    else:
        door_bound = srv_c >= 0
    # a step a door call claims went through the door, whatever server it names (none: a client
    # that records no server for its MCP calls): it counts among its transcript's tool steps
    door_bound |= claimed_step
    if orphan is not None:  # (a result is no tool step: the transcript's own counts stay as they were)
        door_bound &= ~orphan
    t_assigned = np.zeros(n_t, bool)
    t_assigned[assign_arr[has_t]] = True
    step_in_assigned = t_assigned[t_codes] & (t_codes >= 0)
    unmatched_mask = door_bound & step_in_assigned & ~claimed_step

    unclaimed_n = np.bincount(cs_key[~claimed_call], minlength=n_s + 1)[:n_s]

    n_agreed = np.bincount(p_s, minlength=n_s) if n_s else np.zeros(0, np.int64)
    off_ms = np.full(n_s, np.nan)
    # (a result was written after its call ran: its time says when the call ended, not when it was
    # made, so the clock offset is read from the tool calls' pairs)
    timed = ~p_orphan
    # (nor from a call that waited for the user's approval: no clock either; a session whose every
    # pair waited shows the offset applied to them)
    clocked = timed & ~p_late
    if clocked.any():
        ps_, _, pmed = _group_median(p_s[clocked].astype(np.int64), p_dint[clocked])
        off_ms[ps_] = pmed
    only_waited = timed & p_late
    only_waited[only_waited] &= np.isnan(off_ms[p_s[only_waited]])
    if only_waited.any():
        ps_, _, pmed = _group_median(p_s[only_waited].astype(np.int64), (p_dint - p_rel)[only_waited])
        off_ms[ps_] = pmed
    by_result = np.bincount(p_s[p_orphan], minlength=n_s)[:n_s] if n_s else np.zeros(0, np.int64)
    how_bits = np.zeros(n_s, np.int64)
    if len(p_s):
        np.bitwise_or.at(how_bits, p_s, (1 << p_how.astype(np.int64)))
    # calls of a session whose content agrees with a step of its transcript but whose ids differ
    id_conflicts = np.zeros(n_s, np.int64)
    if veto is not None:
        v_si, v_ci = veto.pairs()
        mine = (s_codes[v_ci] >= 0) & (t_codes[v_si] >= 0)
        v_si, v_ci = v_si[mine], v_ci[mine]
        mine = assign_arr[s_codes[v_ci]] == t_codes[v_si]
        v_ci = np.unique(v_ci[mine])
        id_conflicts = np.bincount(s_codes[v_ci], minlength=n_s)[:n_s]
    # calls paired with their step by its own tool-use id that name another tool or other arguments
    # (where both sides logged them): the id decides, but the transcript or the log was changed
    on_id = p_how == HOW_META
    m_si_, m_ci_ = p_si[on_id], p_ci[on_id]
    # (a result standing in for its missing call names no tool or arguments to contradict, unless
    # its client wrote the tool's name on the result too)
    other_tool = (tool_c[m_ci_] >= 0) & (tool_s[m_si_] >= 0) & (tool_s[m_si_] != tool_c[m_ci_])
    other_args = ~s_noargs[m_si_] & ~c_noargs[m_ci_] & (k_s[m_si_] != k_c[m_ci_])
    id_mismatches = np.bincount(p_s[on_id][other_tool | other_args], minlength=n_s)[:n_s]
    # calls that logged a client tool-use id no loaded step has: whose transcript is not here
    uid_s = s_codes[unknown_id_rows]
    unknown_ids = np.bincount(uid_s[uid_s >= 0], minlength=n_s)[:n_s]
    tool_steps_t = np.bincount(t_codes[door_bound & (t_codes >= 0)], minlength=n_t)
    unmatched_t = np.bincount(t_codes[unmatched_mask], minlength=n_t)
    r_t, r_agreed = _runners_up(sc_s, sc_t, agreed, med, assign_arr)
    if (continues >= 0).any():
        # a continuing session, and the session it continues: its agreement minus the next-best
        # transcript's (the one-to-one margin counted the continuing sessions as alternatives to
        # the first, which they are not: they are the same conversation)
        mg = mg.copy()
        c_ = np.unique(np.concatenate([np.flatnonzero(continues >= 0), continues[continues >= 0]]))
        mg[c_] = n_agreed[c_] - r_agreed[c_]
    tcode = np.where(has_t, assign_arr, 0)
    status = np.where(~has_t, "unmatched", "matched").astype(object)
    status[has_t & (mg <= 0)] = "ambiguous"

    def utc(ns: np.ndarray) -> pd.Series:
        return pd.Series(ns.view("datetime64[ns]")).dt.tz_localize("UTC")

    def int_na(values: np.ndarray, mask: np.ndarray):
        return pd.arrays.IntegerArray(values.astype(np.int64), ~mask)

    calls_f = counts.astype("float64")
    sessions = SESSIONS.build({
        "door_session": _str_take(s_names, np.arange(n_s)),
        "agent": agent,
        "start": utc(start_ns),
        "end": utc(end_ns),
        "calls": int_na(counts, np.ones(n_s, bool)),
        "refused": int_na(refused, np.ones(n_s, bool)),
        "transcript_id": np.where(has_t, t_names[tcode] if n_t else None, None),
        "agreed": int_na(n_agreed, has_t),
        "transcript_tool_steps": int_na(tool_steps_t[tcode] if n_t else np.zeros(n_s, np.int64), has_t),
        "share": np.where(has_t, n_agreed / np.maximum(calls_f, 1), np.nan),
        "runner_up": np.where(r_t >= 0, t_names[np.maximum(r_t, 0)] if n_t else None, None),
        "runner_up_agreed": int_na(r_agreed, r_t >= 0),
        "margin": mg,
        "status": status,
        "offset_ms": np.where(has_t, off_ms, np.nan),
        "unclaimed_calls": int_na(unclaimed_n, np.ones(n_s, bool)),
        "unmatched_steps": int_na(unmatched_t[tcode] if n_t else np.zeros(n_s, np.int64), has_t),
        "method": np.where(has_t, _METHODS[how_bits], None),
        "id_conflicts": int_na(id_conflicts, has_t),
        "id_mismatches": int_na(id_mismatches, has_t),
        "unknown_ids": int_na(unknown_ids, np.ones(n_s, bool)),
        "by_result_id": int_na(by_result, has_t),
        "continues": np.where(continues >= 0, s_names[np.maximum(continues, 0)] if n_s else None,
                              np.where(resumed >= 0, s_names[np.maximum(resumed, 0)] if n_s else None, None)),
    })
    if len(sessions):
        sessions = sessions.sort_values(["start", "door_session"], kind="stable").reset_index(drop=True)
    notes = notes + _beyond_max_offset(p_s, p_t, p_how, p_dint, clocked & (True if declared is None
                                                                          else ~declared[p_si]),
                                       s_names, t_names, max_offset_ms, off, t_own, window_ms)
    assigned_names = set(t_names[assign_arr[has_t]].tolist())
    if whole:
        all_t = [str(t) for t in t_names]
    else:
        all_t = sorted({str(t) for t in _codes(_objects(steps["transcript_id"]), sort=True, runs=True)[1]
                        if not pd.isna(t) and t not in parents})
    offset_all = (float(np.median(p_delta[clocked])) if clocked.any() else
                  float(np.median((p_dint - p_rel)[timed])) if timed.any() else None)
    unclaimed_rows = np.flatnonzero(~claimed_call)
    if c_rank is not None and len(unclaimed_rows):
        unclaimed_rows = unclaimed_rows[_stable_order(c_rank[unclaimed_rows])]
    um_pos = np.flatnonzero(unmatched_mask)
    # pairs by tool-use id the assignment put in no link, their call left unclaimed: both sides a
    # residual with one id, which proves they are one call (named, not hidden)
    lost = (m_how == HOW_META) & ~in_pair
    lost[lost] &= ~claimed_call[m_ci[lost]]
    split = {}
    if lost.any():
        l_si, l_ci = m_si[lost], m_ci[lost]
        o_ = np.argsort(l_ci, kind="stable")
        l_si, l_ci = l_si[o_], l_ci[o_]
        l_rows = l_si if whole else sel[l_si]
        session_of_t = np.full(n_t, -1, np.int64)
        own = has_t & (continues < 0)
        session_of_t[assign_arr[own]] = np.flatnonzero(own)
        cs_ = session_of_t[t_codes[l_si]]
        split = {"door_session": s_names[s_codes[l_ci]], "call_seq": calls["seq"].array.take(l_ci),
                 "call_row": l_ci, "call_id": steps["call_id"].array.take(l_rows),
                 "transcript_id": steps["transcript_id"].array.take(l_rows),
                 "step_seq": steps["seq"].array.take(l_rows),
                 "conversation": t_names[t_codes[l_si]],
                 "conversation_session": np.where(cs_ >= 0, s_names[np.maximum(cs_, 0)], None)}
    return JoinResult(
        sessions=sessions,
        pairs=pairs,
        scores=scores,
        _residuals=_Residuals(calls, unclaimed_rows, steps, um_pos if whole else sel[um_pos],
                              pd.RangeIndex(n_st).take(um_pos)),
        unmatched_transcripts=[t for t in all_t if t not in assigned_names],
        offset_ms=offset_all,
        window_s=float(window_s),
        min_agreed=int(min_agreed),
        door_servers=door_servers,
        sub_agents=parents,
        warnings=[clock_offsets_warning(unknown)] if (unknown := unknown_clock_offsets(steps, clock_offsets)) else [],
        notes=notes,
        split_ids=_split_ids_frame(split),
    )


#: what gateways put between an upstream server's name and its tool's name in the names their
#: clients call: agentgateway ``{target}_{tool}`` when it multiplexes targets
#: (``crates/agentgateway/src/mcp/routing.rs``, ``DELIMITER``), Gatekit and MCPJungle
#: ``{server}__{tool}``; ``-`` and ``.`` for gateways that slug names (SEP-986 allows both in
#: tool names)
GATEWAY_SEPARATORS = ("__", "_", "-", ".")


def prefixed_alike(a: str, b: str) -> bool:
    """``a`` and ``b`` name one tool, one of them with a gateway's server prefix
    (:data:`GATEWAY_SEPARATORS`: ``files_read_file`` and ``read_file``), or are equal."""
    if a == b:
        return True
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return any(long_.endswith(sep + short) and len(long_) > len(sep + short) for sep in GATEWAY_SEPARATORS)


def _gateway_prefixed(tool_s: np.ndarray, tool_c: np.ndarray, tool_u: np.ndarray, servers: pd.Series) -> list[str]:
    """Compare a door call under the name its client called, where a gateway showed its upstream
    servers' tools prefixed with the server's name and logged the tool unprefixed.

    A call of server ``S`` logged as tool ``T`` (a name no step calls) is compared as
    ``S<sep>T`` when exactly one such name (``sep`` in :data:`GATEWAY_SEPARATORS`) is a tool
    some step calls.  ``tool_c`` (the calls' tool codes into ``tool_u``, shared with the steps'
    ``tool_s``) is changed in place.  Returns one sentence per (server, tool) so read, for
    :attr:`JoinResult.notes`; the calls frame itself is not changed.  Costs two ``bincount``
    calls when every call's tool is one some step calls."""
    n = len(tool_u)
    if not n or not len(tool_c):
        return []
    called = np.bincount(tool_s[tool_s >= 0], minlength=n) > 0
    logged = np.bincount(tool_c[tool_c >= 0], minlength=n) > 0
    lonely = logged & ~called
    if not lonely.any():
        return []
    rows = np.flatnonzero((tool_c >= 0) & lonely[np.maximum(tool_c, 0)])
    by_name = {tool_u[c]: int(c) for c in np.flatnonzero(called)}
    srv_codes, srv_u = pd.factorize(_objects(servers)[rows])  # (NA: -1)
    pair = srv_codes.astype(np.int64) * n + tool_c[rows]
    notes = []
    for key in np.unique(pair[srv_codes >= 0]).tolist():
        server, code = srv_u[key // n], key % n
        if not isinstance(server, str) or not server:
            continue
        tool = tool_u[code]
        hits = [by_name[name] for name in dict.fromkeys(f"{server}{sep}{tool}" for sep in GATEWAY_SEPARATORS)
                if name in by_name]
        if len(hits) != 1:  # none, or two spellings called (which one is this?): as logged
            continue
        tool_c[rows[pair == key]] = hits[0]
        notes.append(f"door calls of server {server!r} logged as tool {tool!r} were compared as "
                     f"{tool_u[hits[0]]!r}, the name the transcripts call it by (a gateway that shows each "
                     "server's tools prefixed with the server's name)")
    return sorted(notes)


def _beyond_max_offset(p_s: np.ndarray, p_t: np.ndarray, p_how: np.ndarray, p_dint: np.ndarray, timed: np.ndarray,
                       s_names: np.ndarray, t_names: np.ndarray, max_offset_ms: int, off: int,
                       t_own: np.ndarray | None, window_ms: int) -> list[str]:
    """Notes on the door sessions joined at a clock offset beyond ``max_offset_ms``.

    The offset the join applies never exceeds ``max_offset_s``, but a pair agrees within
    ``window_s`` of it, so a transcript whose clock lies up to the window beyond the limit is
    still joined where it lines up near the applied offset.  Per session, the median
    door − transcript difference (ms) of its content and tool-and-time pairs (``p_*``: the
    assigned pairs' session and transcript codes, ``how`` and difference; ``timed``: pairs
    that read a clock — not a result's time, not a transcript whose clock the investigator
    gave); a session whose median lies beyond ``max_offset_ms`` (and :data:`_TRAVEL_MS`, a
    call's travel to the door, which every difference includes) is named, with the offset
    applied to its transcript (``off``, or its own from ``t_own``).  Pairs by tool-use id
    decide whatever the clocks say and are not read.  Sorted sentences, none when no session is
    beyond."""
    keep = timed & (p_how != HOW_META)
    if not keep.any():
        return []
    g, _, med = _group_median(p_s[keep].astype(np.int64), p_dint[keep])
    notes = []
    for s_, m_ in zip(g.tolist(), med.tolist()):
        if abs(m_) <= max_offset_ms + _TRAVEL_MS:  # (a call's travel to the door on top)
            continue
        t_ = int(p_t[keep][p_s[keep] == s_][0])
        applied = off if t_own is None else int(t_own[t_])
        notes.append(f"door session {s_names[s_]} was joined to transcript {t_names[t_]} at a clock offset of "
                     f"{m_ / 1000:+,.1f} s, beyond max_offset_s {max_offset_ms / 1000:g}: the offset applied was "
                     f"{applied / 1000:+,.1f} s and its calls lie within the {window_ms / 1000:g} s window of it; "
                     "if that transcript's clock is this far off, give it (clock_offsets), else the join may be "
                     "wrong")
    return sorted(notes)


def _has_door_call(rows: np.ndarray, k_s: np.ndarray, tool_s: np.ndarray, s_noargs: np.ndarray, k_c: np.ndarray,
                   tool_c: np.ndarray, c_noargs: np.ndarray, c_ok: np.ndarray, n_tools: int) -> np.ndarray:
    """For the steps ``rows``: whether some door call (of a session: ``c_ok``), at any time,
    could agree with it but for the clocks — the same tool and arguments (``k_s``/``k_c``), or
    the same tool where the call or the step logged no arguments.  Only the calls of the steps'
    tools are looked at (one pass over the calls' tool codes; the steps are those of servers no
    step agreed on, whose tools are mostly no door call's), each call's key among the steps'
    distinct keys."""
    t = tool_s[rows]
    wanted = np.zeros(n_tools + 1, bool)  # (index -1: a call without a tool)
    wanted[t] = True
    ci = np.flatnonzero(wanted[tool_c] & c_ok)
    has_call = np.zeros(len(rows), bool)
    if not len(ci):
        return has_call
    bare = c_noargs[ci]
    with_args = ~s_noargs[rows]
    if with_args.any() and not bare.all():
        u = np.unique(k_s[rows[with_args]])
        at = pd.Index(u).get_indexer(k_c[ci[~bare]])  # (a hash look-up: 5x a binary search's speed here)
        hit = np.zeros(len(u), bool)
        hit[at[at >= 0]] = True
        has_call[with_args] = hit[np.searchsorted(u, k_s[rows[with_args]])]
    # tools a call without arguments was logged under; tools any call was
    tool_bare = np.zeros(n_tools + 1, bool)
    tool_bare[tool_c[ci[bare]]] = True
    tool_any = np.zeros(n_tools + 1, bool)
    tool_any[tool_c[ci]] = True
    has_call |= np.where(with_args, tool_bare[t], tool_any[t])
    return has_call


#: a door session continues a transcript assigned to another session (:func:`_continuations`)
#: only when at least this share of its calls agree with that transcript's steps
CONTINUE_SHARE = 0.5


def _continuations(assign: np.ndarray, sc_s: np.ndarray, sc_t: np.ndarray, agreed: np.ndarray,
                   exact: np.ndarray, counts: np.ndarray, m_s: np.ndarray, m_t: np.ndarray, m_si: np.ndarray,
                   s_ms: np.ndarray, start_ns: np.ndarray, end_ns: np.ndarray, min_agreed: int) -> dict[int, int]:
    """Door sessions that continue a transcript the one-to-one assignment gave another session.

    One conversation can reach the door in two sessions one after the other: the door (or the
    MCP connection) restarted mid-conversation, or a resumed conversation whose earlier file is
    not among the inputs carries the earlier session's calls in its copy of the history.  One-to-
    one, the second session was left unmatched and the transcript's steps that agree with it
    were reported as calls the door never saw.

    An unassigned session ``s`` continues transcript ``t`` when ``t`` agrees with it best (no
    other transcript as well), on at least ``max(min_agreed, 2)`` steps — or ``min_agreed``
    when one of them agrees by the client's tool-use id, which proves the conversation (a
    session of one call resumed in a new file) — and :data:`CONTINUE_SHARE` of its calls, and
    both ``s``'s calls (first to last) and ``t``'s steps that agree with ``s`` lie apart in time
    from those of every other session of ``t`` (the assigned one and continuations taken
    before, by agreement, then session code): two sessions running at once are two
    conversations, not one continued.

    Args:
        assign: per session code, its transcript code or -1 (the one-to-one assignment).
        sc_s, sc_t, agreed: the (session, transcript) agreements; exact: how many of each
            agree by tool-use id.
        counts: calls per session code.
        m_s, m_t, m_si: every agreeing pair's session code, transcript code and step row.
        s_ms: step times, ms; start_ns, end_ns: each session's first and last call, ns.

    Returns:
        ``{session code: transcript code}`` of the continuing sessions.
    """
    free = assign < 0
    if not free.any() or not len(sc_s):
        return {}
    taken = np.zeros(int(max(sc_t.max(), assign.max())) + 1, bool)
    taken[assign[~free]] = True
    e = free[sc_s] & taken[sc_t] & (agreed >= CONTINUE_SHARE * counts[sc_s])
    e &= (agreed >= max(min_agreed, 2)) | ((exact > 0) & (agreed >= min_agreed))
    if not e.any():
        return {}
    es, et, ea = sc_s[e], sc_t[e], agreed[e]
    # each session's best transcript among all it agrees with (a tie: none)
    top = np.zeros(len(assign), np.int64)
    np.maximum.at(top, sc_s, agreed)
    best_n = np.bincount(sc_s[agreed == top[sc_s]], minlength=len(assign))
    keep = (ea == top[es]) & (best_n[es] == 1)
    es, et, ea = es[keep], et[keep], ea[keep]
    if not len(es):
        return {}
    # step-time ranges of each transcript's agreement with its sessions (assigned or candidate)
    sess_of = {int(t): [int(x) for x in np.flatnonzero(assign == t)] for t in np.unique(et)}
    want = np.zeros(len(assign), bool)
    want[es] = True
    for ss in sess_of.values():
        want[ss] = True
    mask = want[m_s] & np.isin(m_t, et)
    rng = pd.DataFrame({"t": m_t[mask], "s": m_s[mask], "ms": s_ms[m_si[mask]]}).groupby(["t", "s"])["ms"].agg(
        ["min", "max"])
    spans = {k: (int(v[0]), int(v[1])) for k, v in zip(rng.index, rng.to_numpy())}

    def apart(a: tuple[int, int], b: tuple[int, int]) -> bool:
        return a[1] < b[0] or b[1] < a[0]

    out: dict[int, int] = {}
    for i in np.lexsort((es, -ea)):
        s_, t_ = int(es[i]), int(et[i])
        mine = spans.get((t_, s_))
        if mine is None:
            continue
        ok = True
        for other in sess_of[t_]:
            theirs = spans.get((t_, other))
            if theirs is None or not apart(mine, theirs) or not apart(
                    (int(start_ns[s_]), int(end_ns[s_])), (int(start_ns[other]), int(end_ns[other]))):
                ok = False
                break
        if ok:
            out[s_] = t_
            sess_of[t_].append(s_)
    return out


def resumptions(steps: pd.DataFrame) -> dict[str, str]:
    """``{transcript: the transcript it resumes}``: a conversation resumed in a new file (Claude
    Code ``--resume`` / ``--continue``) starts with copies of the earlier file's lines, which the
    loader keeps with the earlier transcript (the first place of a uuid keeps the line), so the
    resumed transcript's first line of its own — its first main-agent row with a ``uuid`` —
    names as ``parent_uuid`` a line of the transcript it resumes.  A first line that names
    nothing (a fresh conversation), or a line of its own transcript, resumes nothing; two
    transcripts that would resume each other resume nothing.  Claude Code transcripts only
    (``client``): another client's ``parent_uuid`` means another thing (an OTel parent span).
    One pass over ``uuid`` and
    ``transcript_id``; the uuids are looked up only when some first line names a parent."""
    if not len(steps) or "parent_uuid" not in steps.columns:
        return {}
    main = _isna_str(steps["agent_id"]) & ~_isna_str(steps["uuid"])
    rows = np.flatnonzero(main)
    if not len(rows):
        return {}
    tid = _objects(steps["transcript_id"])[rows]
    # each transcript's first row: the heads of runs of one transcript, the first head of each
    heads = np.ones(len(rows), bool)
    try:
        np.not_equal(tid[1:], tid[:-1], out=heads[1:])
    except TypeError:  # pd.NA compares as NA: every row a head
        pass
    h = np.flatnonzero(heads)
    hc, _ = _codes(tid[h])
    _, at = np.unique(hc, return_index=True)
    at = at[hc[at] >= 0]
    first = rows[h[at]]
    first = first[_equals(_objects(steps["client"])[first], "claude-code")]  # (Claude Code's resume)
    par = _objects(steps["parent_uuid"])[first]
    named = ~_isna_str(pd.Series(par, dtype=object))
    if not named.any():
        return {}
    first, par = first[named], par[named]
    uuids = _objects(steps["uuid"])[rows]
    hit = pd.Series(uuids, dtype=object).isin(set(par.tolist())).to_numpy(bool, copy=True)
    hit[hit] = _equals(_objects(steps["client"])[rows[hit]], "claude-code")
    owner: dict = {}
    for u, t in zip(uuids[hit].tolist(), tid[hit].tolist()):
        owner.setdefault(u, t)  # (the first place of a uuid: the line the loader kept)
    all_tid = _objects(steps["transcript_id"])
    out = {}
    for r, p_ in zip(first.tolist(), par.tolist()):
        t, o = all_tid[r], owner.get(p_)
        if isinstance(t, str) and isinstance(o, str) and o != t:
            out[t] = o
    return {t: o for t, o in out.items() if out.get(o) != t}


def _resumed_sessions(resumes: dict[str, str], assign: np.ndarray, continues: np.ndarray, t_names: np.ndarray,
                      start_ns: np.ndarray, end_ns: np.ndarray) -> np.ndarray:
    """Per session code, the session it continues as a resumed conversation (-1: none): a
    session assigned (one-to-one, continuing nothing) a transcript that resumes another
    (:func:`resumptions`, followed back to the nearest transcript with a session of its own)
    continues that transcript's session when it began after that session's last call ended."""
    out = np.full(len(assign), -1, np.int64)
    if not resumes:
        return out
    code = {str(t): i for i, t in enumerate(t_names.tolist())}
    own = (assign >= 0) & (continues < 0)
    session_of = np.full(len(t_names), -1, np.int64)
    session_of[assign[own]] = np.flatnonzero(own)
    for t in resumes:  # (the resumed transcripts: few)
        s_ = int(session_of[code[t]]) if t in code else -1
        if s_ < 0:
            continue
        seen = {t}
        while t in resumes and resumes[t] not in seen:
            t = resumes[t]
            seen.add(t)
            first = session_of[code[t]] if t in code else -1
            if first >= 0:
                if first != s_ and start_ns[s_] != _NAT and end_ns[first] != _NAT and start_ns[s_] > end_ns[first]:
                    out[s_] = first
                break
    return out


def _runners_up(sc_s, sc_t, agreed, med, assign_arr) -> tuple[np.ndarray, np.ndarray]:
    """Per session code: the best-agreeing transcript other than the assigned one (-1: none) and
    its agreement; ties by smaller median |Δt|, then transcript code."""
    n_s = len(assign_arr)
    r_t = np.full(n_s, -1, np.int64)
    r_a = np.zeros(n_s, np.int64)
    other = sc_t != assign_arr[sc_s]
    if not other.any():
        return r_t, r_a
    s, t, a, m = sc_s[other], sc_t[other], agreed[other], med[other]
    top = np.zeros(n_s, np.int64)
    np.maximum.at(top, s, a)
    best = a == top[s]  # usually one per session; order those by median |Δt|, then transcript
    s, t, a, m = s[best], t[best], a[best], m[best]
    o = np.lexsort((t, m, s))
    s, t, a = s[o], t[o], a[o]
    first = np.r_[True, s[1:] != s[:-1]]
    r_t[s[first]] = t[first]
    r_a[s[first]] = a[first]
    return r_t, r_a


def _assign(s: np.ndarray, t: np.ndarray, agreed: np.ndarray, med: np.ndarray, n_s: int, n_t: int,
            window_ms: int, s_first: np.ndarray | None = None,
            t_first=None) -> tuple[np.ndarray, np.ndarray]:
    """Maximum-agreement one-to-one assignment per connected component of the score graph.

    ``s``, ``t``, ``agreed``, ``med``: one entry per eligible (session, transcript) pair.
    Weights are agreeing steps minus a time-proximity penalty that sums to less than one step
    over any assignment, so agreement always decides and proximity only breaks ties.  Small
    components (≤ ``_EXACT_MARGIN_LIMIT`` nodes) are solved densely and get exact margins: the
    best total agreement minus the best total when this session may not keep its transcript.
    Where a small component holds a session of margin 0, the assignments equal in agreement *and*
    in summed proximity (exactly: :func:`_settle_ties`) are ordered by first activity:
    ``s_first`` (per session code, its first call, ns; NaT: :data:`_NAT`) and ``t_first`` (a
    function of an array of transcript codes giving each one's first tool step, ns, the same way;
    called only where such a tie is found), ids (codes) between equal times.
    Larger ones (many sessions repeating the same calls at the same time chain into one) are
    solved as a sparse bipartite matching — never a dense matrix — after fixing the pairs every
    optimum contains (:func:`_match_sparse`); their margin is the assigned agreement minus the
    best alternative on either side: another transcript's agreement with that session, or that
    transcript's with another session (a transcript two sessions share equally — a rerun of the
    same calls whose own transcript is not given — is never reported sure).

    Returns ``assign`` (per session code: transcript code or -1) and ``margin`` (float64, NaN
    where unassigned).
    """
    assign = np.full(n_s, -1, np.int64)
    margin = np.full(n_s, np.nan)
    if not len(s):
        return assign, margin
    graph = coo_matrix((np.ones(len(s)), (s, n_s + t)), shape=(n_s + n_t, n_s + n_t))
    _, labels = connected_components(graph, directed=False)
    comp_of = labels[s]
    order = _stable_order(comp_of)
    co = comp_of[order]
    bounds = np.flatnonzero(np.r_[True, co[1:] != co[:-1], True])
    sizes = np.diff(bounds)
    single = order[bounds[:-1][sizes == 1]]  # one session, one transcript: nothing to decide
    assign[s[single]] = t[single]
    margin[s[single]] = agreed[single]
    for a_, b_ in zip(bounds[:-1][sizes > 1], bounds[1:][sizes > 1]):
        idx = order[a_:b_]
        cs, ct, ca, cm = s[idx], t[idx], agreed[idx], med[idx]
        ss, rows = np.unique(cs, return_inverse=True)
        tt, cols = np.unique(ct, return_inverse=True)
        penalty = np.minimum(cm / max(window_ms, 1), 1.0) / (len(ss) + 1)
        weight = ca - penalty
        if len(ss) + len(tt) <= _EXACT_MARGIN_LIMIT:
            agr = np.zeros((len(ss), len(tt)))
            agr[rows, cols] = ca
            w = np.zeros((len(ss), len(tt)))
            w[rows, cols] = weight
            r, c = linear_sum_assignment(w, maximize=True)
            best = {int(x): int(y) for x, y in zip(r, c) if agr[x, y] > 0}
            total = sum(agr[x, y] for x, y in best.items())
            mg_of = {}
            for x, y in best.items():
                mg_of[x] = _margin_without(agr, x, y, total)
            if s_first is not None and t_first is not None and any(v <= 0 for v in mg_of.values()):
                # an equally good alternative: which of the tied assignments is reported is the
                # rule's, not the solver's (its float weights, the order of the ids)
                p_int = np.minimum(np.rint(cm * 2), 2 * max(window_ms, 1))  # (a median is a multiple of 0.5 ms)
                settled = _settle_ties(rows, cols, ca, p_int, best, mg_of, _first_key(s_first[ss]),
                                       _first_key(t_first(tt)))
                if settled is not None:
                    mg_of = {x: mg_of[x] if best.get(x) == y else _margin_without(agr, x, y, total)
                             for x, y in settled.items()}
                    best = settled
            for x, y in best.items():
                assign[ss[x]] = tt[y]
                margin[ss[x]] = mg_of[x]
            continue
        chosen = _match_sparse(rows, cols, weight, len(ss), len(tt))
        # margin per assigned row: its agreement minus the best alternative on either side —
        # another transcript's with this session, or this transcript's with another session
        is_chosen = cols == chosen[rows]
        got = np.zeros(len(ss))
        got[rows[is_chosen]] = ca[is_chosen]
        alt = np.zeros(len(ss))
        np.maximum.at(alt, rows[~is_chosen], ca[~is_chosen])
        alt_t = np.zeros(len(tt))
        np.maximum.at(alt_t, cols[~is_chosen], ca[~is_chosen])
        x = np.flatnonzero(chosen >= 0)
        assign[ss[x]] = tt[chosen[x]]
        margin[ss[x]] = got[x] - np.maximum(alt[x], alt_t[chosen[x]])
    return assign, margin


def _margin_without(agr: np.ndarray, x: int, y: int, total: float) -> float:
    """How much the best total agreement of the dense matrix ``agr`` drops when row ``x`` may not
    have column ``y`` (``total``: the best total)."""
    w2 = agr.copy()
    w2[x, y] = 0
    r2, c2 = linear_sum_assignment(w2, maximize=True)
    return float(total - w2[r2, c2].sum())


def _first_key(first_ns: np.ndarray) -> np.ndarray:
    """First-activity times (ns) as an order key: NaT (:data:`_NAT`) after every time."""
    return np.where(first_ns == _NAT, _I64_MAX, first_ns)


def _settle_ties(rows: np.ndarray, cols: np.ndarray, agreed: np.ndarray, penalty: np.ndarray,
                 best: dict[int, int], margin: dict[int, float], row_first: np.ndarray,
                 col_first: np.ndarray) -> dict[int, int] | None:
    """The one of the exactly tied best assignments of a small component the join reports.

    ``rows``, ``cols``, ``agreed``, ``penalty``: the component's edges (row and column indexes,
    agreeing steps, the proximity penalty in whole units: twice the median |Δt|, ms, at most
    twice the window); ``best``: an assignment maximising the total agreement (row → column), with
    ``margin`` per row of it; ``row_first``, ``col_first``: each row's and column's first activity
    (int64, ns; NaT already after every time).  Assignments are compared by total agreement, then
    by total penalty (the smaller), in integers, so that two whose medians add up alike tie
    whatever float sums would say.  Among those tied on both, the rule: going through the rows
    (door sessions) in order of first activity, then index (their id's order), each takes the
    column (transcript) earliest in first activity, then index, that some best assignment still
    gives it — no column only when none does.  A row whose margin is above 0 keeps its column
    (every best assignment has it).  Each check solves the rest of the component once; only
    components with a tie get here.  Returns the assignment (row → column), or ``None`` when the
    integer weights would pass float64's exact range (2**53: nothing real comes near).
    """
    nr, nc = int(rows.max()) + 1, int(cols.max()) + 1
    big = float(penalty.max()) * min(nr, nc) + 1  # more than any assignment's summed penalty
    w = np.zeros((nr, nc))
    w[rows, cols] = agreed * big - penalty
    if np.sort(w.max(axis=1))[::-1][:nc].sum() * 2 >= 2.0 ** 53:
        return None

    def value(rs: np.ndarray, cs: np.ndarray) -> float:
        if not len(rs) or not len(cs):
            return 0.0
        sub = w[np.ix_(rs, cs)]
        r, c = linear_sum_assignment(sub, maximize=True)
        return float(sub[r, c].sum())

    free_r, free_c = np.ones(nr, bool), np.ones(nc, bool)
    out = {}
    for x, y in best.items():  # in every best assignment: nothing to choose
        if margin[x] > 0:
            out[x] = y
            free_r[x] = free_c[y] = False
    opt = value(np.flatnonzero(free_r), np.flatnonzero(free_c))
    col_order = np.lexsort((np.arange(nc), col_first))
    for x in np.lexsort((np.arange(nr), row_first)).tolist():
        if not free_r[x]:
            continue
        free_r[x] = False
        rest_r = np.flatnonzero(free_r)
        for y in col_order[(w[x, col_order] > 0) & free_c[col_order]].tolist():
            free_c[y] = False
            got = w[x, y] + value(rest_r, np.flatnonzero(free_c))
            if got == opt:
                out[x] = y
                opt -= w[x, y]
                break
            free_c[y] = True
    return out


def _top2(group: np.ndarray, w: np.ndarray, edge: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """For edges sorted by (group, weight descending): each group's best edge (-1: none) and its
    second-best weight (0.0: none)."""
    best = np.full(n, -1, np.int64)
    second = np.zeros(n)
    if not len(group):
        return best, second
    first = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    best[group[first]] = edge[first]
    nxt = first + 1
    nxt = nxt[nxt < len(group)]
    nxt = nxt[group[nxt] == group[nxt - 1]]
    second[group[nxt]] = w[nxt]
    return best, second


def _match_sparse(rows: np.ndarray, cols: np.ndarray, weight: np.ndarray, nr: int, nc: int) -> np.ndarray:
    """Rows (sessions) matched to columns (transcripts) maximising Σ (weight + 1) over matched
    edges, each row free to stay unmatched (a dummy column of weight ``eps``), as
    ``scipy.sparse.csgraph.min_weight_full_bipartite_matching`` solves it.

    First, edges every optimum contains are fixed and their rows and columns removed, repeatedly:
    an edge whose gain over leaving its row unmatched exceeds the best other gain at its row plus
    the best other gain at its column (by more than rounding could blur) is in every optimal
    matching — swapping it in for those two can only gain.  Agreement graphs are mostly such
    edges (a session's own transcript agrees far more than a stranger sharing a few popular
    calls); when they settle every row the optimum is unique and the solver is not needed.  If
    anything stays contested the solver runs on the whole component, exactly as without this
    step.  Returns the column per row (-1).
    """
    eps = 1e-9
    gain = weight + 1.0 - eps  # what an edge adds over leaving its row on its dummy column
    chosen = np.full(nr, -1, np.int64)
    row_gone = np.zeros(nr, bool)
    col_gone = np.zeros(nc, bool)
    active = np.ones(len(rows), bool)
    g_rank = np.empty(len(gain), np.int64)  # rank by gain, descending
    g_rank[np.argsort(-gain, kind="stable")] = np.arange(len(gain))
    by_row = _stable_order(rows * len(gain) + g_rank)
    by_col = _stable_order(cols * len(gain) + g_rank)
    while True:
        er, ec = by_row[active[by_row]], by_col[active[by_col]]
        if not len(er):
            break
        best_r, second_r = _top2(rows[er], gain[er], er, nr)
        best_c, second_c = _top2(cols[ec], gain[ec], ec, nc)
        e = best_r[best_r >= 0]
        e = e[best_c[cols[e]] == e]
        dom = e[gain[e] > second_r[rows[e]] + second_c[cols[e]] + 1e-6]
        if not len(dom):
            break
        chosen[rows[dom]] = cols[dom]
        row_gone[rows[dom]] = True
        col_gone[cols[dom]] = True
        active &= ~(row_gone[rows] | col_gone[cols])
    if active.any():
        # something is contested: solve the whole component as given, so that where several
        # matchings are equally good the solver picks the same one it always did
        m = csr_matrix((np.r_[weight + 1.0, np.full(nr, eps)],
                        (np.r_[rows, np.arange(nr)], np.r_[cols, nc + np.arange(nr)])),
                       shape=(nr, nc + nr))
        r, c = min_weight_full_bipartite_matching(m, maximize=True)
        chosen = np.full(nr, -1, np.int64)
        real = c < nc
        chosen[r[real]] = c[real]
    return chosen


#: a pair whose door − transcript time differs from its session's offset by more than this (ms)
#: is named under the clock offset: one clock cannot drift that far within a session
FAR_PAIR_MS = 5000.0
#: door sessions whose clock offsets (ms) differ by more than this are said to run on clocks of
#: their own, and no one offset is given for all: a call's travel to the door takes far less
OFFSETS_DIFFER_MS = 1000.0


def far_pairs(pairs: pd.DataFrame | None, sessions: pd.DataFrame | None,
              far_ms: float = FAR_PAIR_MS) -> pd.DataFrame:
    """The agreeing pairs (``JoinResult.pairs`` rows; of tool calls: a result standing in for
    its missing call was written when the call ended) whose ``delta_ms`` lies more than
    ``far_ms`` (ms) from their door session's ``offset_ms`` (``JoinResult.sessions``), with
    ``off_by`` (float64 ms: ``delta_ms`` − the session's offset: how long after the agent asked
    for it the door received the call, on one clock) and ``waited`` (bool: the door received it
    after the agent asked and, on the transcript's clock, no more than ``far_ms`` after the
    step's result was written, ``step_result_ts`` — the call waited, for the user's approval most
    likely, rather than a clock drifting or another call with the same tool and arguments being
    taken for it), by session and call seq; empty when there are none."""
    if pairs is None or not len(pairs) or sessions is None or "offset_ms" not in sessions.columns:
        return pd.DataFrame(columns=[*(pairs.columns if pairs is not None else ()), "off_by", "waited"])
    if "step_kind" in pairs.columns:  # (a result's time is when its call ended: no clock reading)
        pairs = pairs[(pairs["step_kind"] != "tool_result").fillna(True).to_numpy(bool)]
    off = sessions.set_index("door_session")["offset_ms"].astype("float64")
    session_off = pairs["door_session"].map(off).astype("float64")
    p = pairs.assign(off_by=pairs["delta_ms"].astype("float64") - session_off)
    waited = np.zeros(len(p), bool)
    if "step_result_ts" in p.columns and len(p):
        # the door's time on the transcript's clock, against the result's time (ms)
        door_ms = (_ns(p["call_ts"]) // 1_000_000).astype("float64") - session_off.to_numpy()
        res_ns = _ns(p["step_result_ts"])
        ok = (res_ns != _NAT) & (_ns(p["call_ts"]) != _NAT)
        waited = ok & (p["off_by"].to_numpy() > 0) & (door_ms <= (res_ns // 1_000_000) + far_ms)
    p = p.assign(waited=waited)
    return p[p["off_by"].abs() > far_ms].sort_values(["door_session", "call_seq"])


def far_pair_text(off_by_ms: float, waited: bool) -> str:
    """What a pair :func:`far_pairs` names says, in words: for one that ``waited``, "the door
    received this call N s after the agent asked for it — it waited (approval?)"; else that it
    is a call that waited, a retry, or another call with the same tool and arguments."""
    if waited:
        return (f"the door received this call {off_by_ms / 1000:,.0f} s after the agent asked for it — "
                "it waited (approval?)")
    return "a call that waited, a retry, or another call with the same tool and arguments"


#: how far apart :func:`far_clocks` looks for clocks, seconds (a day: a clock set to another time
#: zone, or a day off, is the far case a reviewer meets)
FAR_CLOCK_HORIZON_S = 86_400.0
#: the span of differences one clock offset reads from, ms (as the join's own estimate)
_FAR_SPAN_MS = 2_000
#: the most (call, step) pairs of equal tool and arguments :func:`far_clocks` compares
_FAR_MERGE_ROWS = 5_000_000


def far_clocks(steps: pd.DataFrame, calls: pd.DataFrame, sessions: pd.DataFrame, *, max_offset_s: float,
               window_s: float = DEFAULT_WINDOW_S, horizon_s: float = FAR_CLOCK_HORIZON_S,
               min_steps: int = 2) -> pd.DataFrame:
    """Unmatched door sessions whose calls line up with an unassigned transcript at a clock
    offset beyond what the join applies (``max_offset_s``), up to ``horizon_s``.

    The join reads the clock offset within ``max_offset_s``; an agent whose clock was further
    off (another time zone set as UTC, a machine a day wrong) leaves its session unmatched with
    nothing to say why.  This looks, for each ``unmatched`` session of ``sessions``
    (``JoinResult.sessions``), at the differences between its calls' times and the times of
    same-tool, same-arguments (``args_key``) tool calls of transcripts the join assigned to no
    session, and finds the :data:`_FAR_SPAN_MS` span of differences holding the most steps, as
    the join reads an offset.  A session is listed when that span holds at least ``min_steps``
    distinct steps and half of the session's calls with arguments, and lies beyond
    ``max_offset_s`` (nearer, the join would have applied it; ``window_s`` is kept for callers:
    the join never applies an offset beyond ``max_offset_s``, the window only lets a pair lie
    that far from the offset applied).  Sessions and transcripts are then paired one-to-one
    (:func:`_far_one_to_one`: most steps, then the offset most of them share), so that two
    sessions repeating the same calls are not both given one transcript's clock; where the
    times cannot tell, ``ambiguous_with`` says which others line up as well.  Where the
    unmatched sessions' calls and the unassigned transcripts' steps share so many keys that
    more than :data:`_FAR_MERGE_ROWS` pairs would be compared, nothing is listed.

    Returns:
        DataFrame, one row per such session, by door session: ``door_session`` (string),
        ``transcript_id`` (string), ``offset_ms`` (float64, door clock − transcript clock, the
        span's median), ``steps`` (Int64: steps lined up there), ``calls_with_args`` (Int64:
        the session's calls with arguments), ``max_offset_s`` (float64: a whole
        ``max_offset_s``, seconds, just past the offset: the join reads offsets up to it),
        ``ambiguous_with`` (string: the other transcripts or sessions that line up as well,
        ``"transcript T (+x s)"`` or ``"door session S (+x s)"`` joined by ``"; "``; NA when
        none).
    """
    cols = {"door_session": "string", "transcript_id": "string", "offset_ms": "float64", "steps": "Int64",
            "calls_with_args": "Int64", "max_offset_s": "float64"}
    empty = pd.DataFrame({c: pd.Series(dtype=t) for c, t in {**cols, "ambiguous_with": "string"}.items()})
    if sessions is None or not len(sessions) or not len(steps) or not len(calls):
        return empty
    unmatched = sessions.loc[sessions["status"] == "unmatched", "door_session"].dropna().astype(str)
    assigned = set(sessions["transcript_id"].dropna().astype(str))
    c = calls[calls["door_session"].astype("string").isin(set(unmatched)).fillna(False)
              & calls["args_key"].notna() & calls["ts"].notna() & calls["tool"].notna()]
    st = steps[(steps["kind"] == "tool_call") & steps["args_key"].notna() & steps["ts"].notna()
               & ~steps["transcript_id"].astype("string").isin(assigned).fillna(True)]
    if not len(c) or not len(st):
        return empty
    # (calls × steps of each shared key: a call every agent makes, thousands of times, could make
    # that product huge; past _FAR_MERGE_ROWS this hint is not worth it, and nothing is listed)
    kc = (c["tool"].astype(str) + "\0" + c["args_key"].astype(str)).value_counts()
    ks = (st["tool"].astype(str) + "\0" + st["args_key"].astype(str)).value_counts()
    if int((kc * ks.reindex(kc.index, fill_value=0)).sum()) > _FAR_MERGE_ROWS:
        return empty
    with_args = c.groupby(c["door_session"].astype(str)).size()
    left = pd.DataFrame({"door_session": c["door_session"].astype(str).to_numpy(),
                         "tool": c["tool"].astype(str).to_numpy(), "args_key": c["args_key"].astype(str).to_numpy(),
                         "c_ns": _ns(c["ts"])})
    right = pd.DataFrame({"transcript_id": st["transcript_id"].astype(str).to_numpy(),
                          "tool": st["tool"].astype(str).to_numpy(), "args_key": st["args_key"].astype(str).to_numpy(),
                          "step": np.arange(len(st)), "s_ns": _ns(st["ts"])})
    m = left.merge(right, on=["tool", "args_key"])
    if not len(m):
        return empty
    d = (m["c_ns"].to_numpy() - m["s_ns"].to_numpy()) // 1_000_000
    near = max_offset_s * 1000  # (the join applies no offset beyond it: see join_sessions)
    keep = (np.abs(d) <= horizon_s * 1000) & (np.abs(d) > near)
    m = m.loc[keep, ["door_session", "transcript_id", "step"]].assign(d=d[keep])
    rows = []
    for (ds, tid), g in m.sort_values("d", kind="stable").groupby(["door_session", "transcript_id"], sort=True):
        dv, sv = g["d"].to_numpy(), g["step"].to_numpy()
        end = np.searchsorted(dv, dv + _FAR_SPAN_MS, "right")
        n = np.array([len(np.unique(sv[i:e])) for i, e in enumerate(end.tolist())])
        i = int(np.argmax(n))
        steps_n, calls_n = int(n[i]), int(with_args[ds])
        if steps_n >= max(min_steps, 2) and steps_n >= 0.5 * calls_n:
            off = float(np.median(dv[i:end[i]]))
            rows.append((ds, tid, off, steps_n, calls_n, float(np.ceil(abs(off) / 1000) + 1)))
    if not rows:
        return empty
    return _far_one_to_one(pd.DataFrame(rows, columns=list(cols)), cols)


def _far_one_to_one(cand: pd.DataFrame, cols: dict) -> pd.DataFrame:
    """One transcript per session and one session per transcript among :func:`far_clocks`'
    candidate rows: the most steps lined up in all, then the offsets that agree best with the
    one most candidates share (the fullest :data:`_FAR_SPAN_MS` span of their offsets, when
    one span is fullest: machines set alike).  A row for which another candidate is as good —
    the same steps, as near that offset (or no such offset), its transcript or session left
    unpicked — names the others in ``ambiguous_with`` (``"transcript T (+x s)"``, ``"door
    session S (+x s)"``, joined by ``"; "``): the times alone cannot tell which is right."""
    offs = np.sort(cand["offset_ms"].to_numpy(float))
    fill = np.searchsorted(offs, offs + _FAR_SPAN_MS, "right") - np.arange(len(offs))
    best = np.flatnonzero(fill == fill.max())
    c = None
    if fill.max() >= 2 and len({float(np.median(offs[i:i + fill[i]])) for i in best}) == 1:
        c = float(np.median(offs[best[0]:best[0] + fill[best[0]]]))
    dist = np.zeros(len(cand)) if c is None else np.abs(cand["offset_ms"].to_numpy(float) - c)
    dist = np.floor(dist / _FAR_SPAN_MS)  # (within one span: as near)
    ss, ts = pd.factorize(cand["door_session"])[0], pd.factorize(cand["transcript_id"])[0]
    big = float(dist.max() + 1) * 4
    cost = np.full((ss.max() + 1, ts.max() + 1), 1e18)
    cost[ss, ts] = -cand["steps"].to_numpy(float) * big * (len(cand) + 1) + dist
    r, k = linear_sum_assignment(cost)
    pick = {(int(a), int(b)) for a, b in zip(r, k) if cost[a, b] < 1e17}
    used_s, used_t = {a for a, _ in pick}, {b for _, b in pick}
    keep, amb = [], []
    steps_v = cand["steps"].to_numpy()
    for i in range(len(cand)):
        if (ss[i], ts[i]) not in pick:
            continue
        others = []
        for j in range(len(cand)):
            if j == i or steps_v[j] < steps_v[i] or dist[j] > dist[i]:
                continue
            if ss[j] == ss[i] and ts[j] not in used_t:
                others.append(f"transcript {cand['transcript_id'].iat[j]} ({cand['offset_ms'].iat[j] / 1000:+.1f} s)")
            elif ts[j] == ts[i] and ss[j] not in used_s:
                others.append(f"door session {cand['door_session'].iat[j]} ({cand['offset_ms'].iat[j] / 1000:+.1f} s)")
        keep.append(i)
        amb.append("; ".join(others) if others else None)
    out = cand.iloc[keep].assign(ambiguous_with=amb)
    out = out.sort_values("door_session", kind="stable").reset_index(drop=True)
    return out.astype({**cols, "ambiguous_with": "string"})


def offset_changes(steps: pd.DataFrame, calls: pd.DataFrame, sessions: pd.DataFrame, *, max_offset_s: float,
                   window_s: float = DEFAULT_WINDOW_S, min_agreed: int = DEFAULT_MIN_AGREED,
                   clock_offsets: Mapping[str, float] | None = None,
                   default_max_offset_s: float = DEFAULT_MAX_OFFSET_S) -> pd.DataFrame:
    """The door sessions whose verdict a ``max_offset_s`` other than the default changed.

    ``max_offset_s`` moves more than the one clock it was set for: the common clock offset is
    read from every transcript's steps within it, so a wider search can settle on coincidental
    same-tool, same-arguments pairs far off (another agent repeating the calls an hour later)
    and take a session's transcript away, or give it to another session, with nothing to say
    so; a narrower one leaves a session whose agent's clock needs an offset unmatched.  This
    joins ``steps`` and ``calls`` again at ``default_max_offset_s`` (same ``window_s``,
    ``min_agreed`` and ``clock_offsets``) and compares each door session's status and
    transcript with ``sessions`` (``JoinResult.sessions`` of the join at ``max_offset_s``).
    When ``max_offset_s`` is the default nothing is joined and the frame is empty.

    A transcript linked only at the wider of the two settings, at a clock offset the narrower
    one does not apply (beyond its ``max_offset_s``), and assigned to no session
    at the narrower one, is the transcript that needed the wider search: it is named in
    ``clock_transcript``, since giving its own clock (``clock_offsets``) joins it at the
    narrower setting and leaves every other transcript's search as it was.

    Returns:
        DataFrame, one row per door session whose ``status`` or ``transcript_id`` differs, in
        the order of ``sessions``: ``door_session``, ``status``, ``transcript_id`` (string),
        ``agreed`` (Int64), ``offset_ms`` (float64, ms, door − transcript) — the session at
        ``max_offset_s`` (float64, seconds) — then ``default_status``, ``default_transcript``
        (string), ``default_agreed`` (Int64), ``default_offset_ms`` (float64, ms) — the same
        session at ``default_max_offset_s`` (float64, seconds) — and ``clock_transcript``
        (string) with ``clock_offset_s`` (float64, seconds, door − transcript: what to give it
        under ``clock_offsets``), NA where no transcript of the row needed the wider search.

    Raises:
        JoinError: as :func:`join_sessions`.
    """
    cols = {"door_session": "string", "status": "string", "transcript_id": "string", "agreed": "Int64",
            "offset_ms": "float64", "max_offset_s": "float64", "default_status": "string",
            "default_transcript": "string", "default_agreed": "Int64", "default_offset_ms": "float64",
            "default_max_offset_s": "float64", "clock_transcript": "string", "clock_offset_s": "float64"}
    empty = pd.DataFrame({c: pd.Series(dtype=t) for c, t in cols.items()})
    if float(max_offset_s) == float(default_max_offset_s) or sessions is None or not len(sessions):
        return empty
    base = join_sessions(steps, calls, window_s=window_s, min_agreed=min_agreed,
                         max_offset_s=default_max_offset_s, clock_offsets=clock_offsets).sessions
    keep = ["door_session", "status", "transcript_id", "agreed", "offset_ms"]
    now = sessions[keep].astype({"door_session": "string", "status": "string", "transcript_id": "string"})
    was = base[keep].astype({"door_session": "string", "status": "string", "transcript_id": "string"}).rename(
        columns={"status": "default_status", "transcript_id": "default_transcript", "agreed": "default_agreed",
                 "offset_ms": "default_offset_ms"})
    m = now.merge(was, on="door_session", how="left", sort=False)
    same_t = (m["transcript_id"] == m["default_transcript"]).fillna(
        m["transcript_id"].isna() & m["default_transcript"].isna())
    same_s = (m["status"] == m["default_status"]).fillna(m["status"].isna() & m["default_status"].isna())
    m = m[~(same_t & same_s)].reset_index(drop=True)
    if not len(m):
        return empty
    wider = float(max_offset_s) > float(default_max_offset_s)
    # the side of the wider search, and the transcripts the narrower one assigned
    t_wide, off_wide = (("transcript_id", "offset_ms") if wider else ("default_transcript", "default_offset_ms"))
    narrow_sessions = base if wider else sessions
    reach_ms = min(float(max_offset_s), float(default_max_offset_s)) * 1000  # (the narrower one applies no more)
    assigned = set(narrow_sessions["transcript_id"].dropna().astype(str))
    tw, ow = m[t_wide], m[off_wide].astype("float64")
    needed = (tw.notna() & (ow.abs() > reach_ms) & ~tw.astype(str).isin(assigned)).fillna(False).to_numpy(bool)
    m["clock_transcript"] = tw.where(needed)
    m["clock_offset_s"] = (ow / 1000).where(needed)
    m["max_offset_s"] = float(max_offset_s)
    m["default_max_offset_s"] = float(default_max_offset_s)
    return m[list(cols)].astype(cols)


def _verdict_text(status, tid, agreed, offset_ms) -> str:
    """A session's verdict in a few words: ``matched to transcript T (3 agreeing steps, clock
    offset +0.2 s)``, ``ambiguous (…)`` or ``unmatched``."""
    if pd.isna(tid) or status == "unmatched" or pd.isna(status):
        return "unmatched"
    n = 0 if pd.isna(agreed) else int(agreed)
    what = f"{n:,} agreeing step{'' if n == 1 else 's'}"
    if not pd.isna(offset_ms):
        what += f", clock offset {float(offset_ms) / 1000:+,.1f} s"
    if status == "ambiguous":
        return f"ambiguous: transcript {tid} ({what}), with an equally good alternative"
    return f"matched to transcript {tid} ({what})"


def offset_change_text(row: Mapping, *, cli: bool = False) -> str:
    """One row of :func:`offset_changes` in words (plain text, no full stop), as ``replaybook
    join`` prints it (``cli``: options named as its flags) and the report's sentence for the
    session ends: ``with max_offset_s 300 (the default) it was matched to transcript t1 (3
    agreeing steps, clock offset +0.2 s); at 7200 it is unmatched``, and where a transcript
    needed the wider search, how to give its clock instead."""
    name = "--max-offset" if cli else "max_offset_s"
    dflt, given = float(row["default_max_offset_s"]), float(row["max_offset_s"])
    out = (f"with {name} {dflt:g} (the default) it was "
           f"{_verdict_text(row['default_status'], row['default_transcript'], row['default_agreed'], row['default_offset_ms'])}"
           f"; at {given:g} it is "
           f"{_verdict_text(row['status'], row['transcript_id'], row['agreed'], row['offset_ms'])}")
    tid = row.get("clock_transcript")
    if tid is None or pd.isna(tid):
        return out
    sec = float(row["clock_offset_s"])
    give = (f"--clock-offset {tid}={sec:.1f} (or clock_offsets in the manifest)" if cli
            else f"clock_offsets: {{{tid}: {sec:.1f}}} in the manifest")
    if given > dflt:
        return (out + f": transcript {tid} needed the wider search; give its clock instead, {give}, and keep "
                f"{name} at {dflt:g}, which leaves every other transcript's search as it was")
    return (out + f": transcript {tid} needs a clock offset that {name} {given:g} does not look for; to join it "
            f"at {given:g}, give its clock, {give}")
