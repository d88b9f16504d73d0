"""Join door calls to the cloud's own access log: which storage request did each call cause,
and — first of all — which storage requests did **no** door call cause.

Inputs are the :data:`~replaybook.frames.CALLS` frame (what the door says it did) and the
:data:`~replaybook.frames.ACCESS` frame (what the cloud says happened: CloudTrail, S3 server
access logs, GCP audit logs, Azure Storage logs).  Each storage request is linked to **at most
one** call; a call may explain **many** requests (pagination, retries, a multipart read, a
folder listing followed by reads, a call on several objects).  Calls the door refused
(``decision == "deny"``) never explain an access: the door did not forward them, so a storage
request that matches only a refused call is reported as unexplained, with that call named.
A refused call is set beside a request only when both are the same kind of operation
(:func:`operation_kinds_agree`): a refused write (``put_object``, a tool :func:`replaybook.replay.writes`
names a write) beside a storage write or delete, a refused read or listing beside a read,
listing or stat.  A refused write does not make the agent's read of the same object, which the
door may have allowed on a line now damaged, a read "the door refused".

One request, one row
--------------------
The logs may hold one request more than once: CloudTrail delivers every event at least once (the
same ``eventID`` twice, in one delivery file or two), S3 server access logs are best effort and
now and then deliver a record twice, and a bucket with CloudTrail data events *and* a server
access log has every request in both, under the same request id (S3's ``x-amz-request-id``; a
CloudTrail event without a ``requestID`` carries its ``eventID`` as its request id).
Rows of one provider with the same request id, action and resource, no further apart than a call
may last (``window_s + lag_s + 2·skew_s``), are one request: the first (by time, then row order)
stands for it, and the others are listed in ``duplicates`` — never linked (one request cannot be
explained twice, or by two calls through its two records), never counted twice.

Tiers (the first that links wins)
---------------------------------
1. ``correlation`` — the access row's ``correlation`` (role session name / ``sourceIdentity``,
   a GCS ``x-goog-custom-audit-*`` value, Azure ``x-ms-client-request-id``) equals the
   ``correlation`` of exactly one door call, and the time fits that call's window.  The door
   logs ``correlation`` where it propagated a token; without one, this tier is skipped.
2. ``correlation+object+time`` — the token is shared by several calls (a per-session token such
   as a role session name): the candidates are those calls, decided by object and time.  When a
   token matches calls but none fits, the row is **not** offered to other sessions' calls.

   In both, where ``principals`` names the call's agent's principals, the request must be made
   by one of them: a token is only as good as who may set it (a role session name is whatever
   the caller of ``AssumeRole`` chose), so another principal's request carrying it is
   unexplained, and its ``why`` names the principal.
3. ``principal+object+time`` — ``principals`` maps the call's agent to the cloud principal(s) it
   acts as, one of them matches the access row's ``principal``, the object matches and the time
   fits.  A request made by another principal (or by none the log names: SAS, anonymous)
   is not the agent's, however well object and time fit — the ``why`` says so.
   ``principals["*"]`` (:data:`ANY_AGENT`) is the principal(s) of every agent without an entry
   of its own, and of the calls that name no agent (a gateway that logs no client).
4. ``object+time`` — no principal is known for the call's agent (no ``principals`` mapping, or
   the agent is in neither it nor ``"*"``): object and time only.  Weaker evidence; the ``how`` column says so:
   another principal's request on the same object at the same moment is taken for the call's.

Among several candidates of one tier, the call whose own span (``ts`` … ``ts_end``) the
request's time lies in, or nearest to, wins (then the nearest start, the lower ``seq``).  When
several calls fit a request equally well — two sessions reading one object within one logged
second — ``links.candidates`` says how many, and the requests that fit the same calls equally
well are shared among them in time order (the first request to the first call …): every call
gets its share rather than one all of them, which of the two got which is not known.

Objects
-------
A call's ``object`` (``demo/cars.sas7bdat``) is mapped to a storage URI through ``storage_map``
(``{"demo/": "s3://acme-data/demo/"}``) by :func:`map_object`: each entry maps a folder of the
door's paths, whole segments at a time, the longest matching entry wins, the folder itself maps
whether the door logged it as ``demo/`` or ``demo`` (the door normalises paths), the data root
``.`` maps to the folder the entries share, an object that already is a ``s3://`` / ``gs://`` /
``az://`` URI is used as is, and an object that nothing maps is never matched.  A call that
names several objects (the door logs them as ``objects``: ``read_multiple_files``, a move's
source and destination) reaches each of them.  An access row matches a call when its
``resource_uri``, for one of the call's URIs,

* equals the call's URI, or is its folder marker (``s3://acme-data/demo/newdir/`` for a call on
  ``demo/newdir``: the door logs a folder without its slash, and a client creates, reads or
  deletes a folder of object storage as the object ``newdir/``; its write or delete only for a
  call that changes objects — a listing of ``demo/newdir`` creates no folder), or
* is that URI as a folder, or lies under it, or is the call's folder written without its
  slash (``s3://acme-data/demo`` for ``s3://acme-data/demo/``: ``aws s3 ls s3://acme-data/demo``
  lists ``prefix=demo``), and the access is a ``list`` or ``head``: a folder listing may page,
  recurse or stat its entries, and a client of object storage that stats ``k`` also looks for
  ``k/`` (and ``k`` before ``k/``) — but a **read, write or delete** of an object is only
  explained by a call on that very object, so an object read while the agent was "only
  listing" stays unexplained, or
* is a folder above the call's URI, the call's URI is itself a folder and the access is a
  ``list``: a coarser record of the same listing (GCS audit logs record a listing at bucket
  level, without its prefix) — but never a request that names no bucket (``s3://``, CloudTrail's
  ``ListBuckets``: it lists the account's buckets, which no listing of a folder does), or
* is a folder above the call's URI, the access is a batch whose record names no object
  (:data:`KEYLESS_BATCHES`: CloudTrail logs an S3 multi-object delete, ``DeleteObjects``, with
  its bucket only) and the call changes objects (a tool :func:`replaybook.replay.writes` names a
  write, ``delete_object``): the door call that deleted ``demo/tmp/a.csv`` explains the
  ``DeleteObjects`` on ``s3://acme-data/`` it caused, where a read or a listing never does.  Which
  keys the batch deleted the record does not say (S3 server access logs do: one record per key).

Time windows
------------
Each source's ``ts`` means something different (``access.time_kind``), so the window does too.
Let ``start`` = the call's ``ts`` (door received it) and ``end`` = its ``ts_end`` (door
answered), or ``start + window_s`` when the door did not log an end.  Clocks of the door host
and the cloud may disagree by up to ``skew_s`` after the clock offset (below) is taken off the
access time ``t``:

==========  ==============================================  ==========================================
time_kind   sources                                         an access at ``t`` fits a call when
==========  ==============================================  ==========================================
received    S3 server access logs, Azure Storage logs       start − skew_s ≤ t ≤ end + skew_s
completed   CloudTrail ``eventTime``                        start − skew_s ≤ t ≤ end + lag_s + skew_s
event       GCP audit ``timestamp``                         start − skew_s ≤ t ≤ end + lag_s + skew_s
==========  ==============================================  ==========================================

CloudTrail ``eventTime`` and S3 server access log times are whole seconds (the fraction is
dropped: :data:`TIME_RESOLUTION_S`): a request logged at ``t`` happened in ``[t, t + 1 s)``, and
fits when that second overlaps the window — so ``skew_s`` is clock disagreement only, not
clock disagreement plus the lost fraction.  Both ends of a window are in it.

A request that storage *received* must have been sent while the call was open; one that
*completed* can finish a little after the door answered (a streamed read the door cut short, a
retry): ``lag_s``.  Delivery delay — CloudTrail files arrive about 5 minutes after the event,
S3 server access logs within hours, best effort; GCP and Azure within minutes — does not move
these timestamps, but it does mean the newest access rows may not have been delivered yet when
the logs were collected: a call near the end of the logs with ``access_count == 0`` is not proof
of absence, and neither is one whose request's record was lost (best effort).

Clocks
------
A door host whose clock is off by more than ``skew_s`` would leave every request of the
incident unexplained.  Unless ``offset_s`` is given, the offset (the cloud's clock minus the
door's) is measured: each request could have been made by the calls on its object (principal
permitting) within ``max_offset_s``, and fits each for a range of offsets; the offset that fits
the most requests within their calls' own spans is taken (the middle of that range; of several,
the nearest 0).  It is applied only when it fits at least :data:`MIN_OFFSET_REQUESTS` requests
more than no offset does, and at least twice as many: one request a few seconds before a call
looks the same as a skewed clock, and a few requests made by someone else a while after the
agent's must not move a clock that already lines up the rest.  ``offset_s`` and
``offset_requests`` (the requests it lines up) are on the result; ``delta_ms`` in ``links`` is
the raw difference.  An offset measured but not applied — two requests a few seconds before
their calls fit a clock as well as an early request — is on the result too
(``offset_unapplied_s``): where the user knows the storage clock is off, they give it
(``offset_s``; the manifest's ``storage_clock_ahead_s``), and it is taken as it is.

Doors on clocks of their own
----------------------------
Two door agents may run on two hosts, one of them with a clock of its own (a conversation whose
sub-agent reaches a second MCP server behind another door).  Unless ``offset_s`` is given, each
agent's offset is also measured over the requests its calls could have made, the same way, and
an agent whose offset differs from the common one takes it when it lines up at least
:data:`MIN_OFFSET_REQUESTS` more of its requests than the common one does, and twice as many;
its calls are then compared at it.  ``door_offsets_s`` gives an agent's offset (the manifest's
``storage_clock_ahead_s`` as a mapping of agents).  ``door_offsets`` on the result lists them,
and the offsets measured but not taken.  ``delta_ms`` stays the raw difference.

Whose requests
--------------
A linked request is compared with the other requests **the same door session's calls explain
in the same log** (``source``): ``other_principal`` when its principal is not the one most of
them carry (without ``principals``, object and time link someone else's read made during the
agent's; with them, another role session of a role the pattern names), ``other_client`` when its
source address (:func:`source_ip`, compared without a client's TCP port: :func:`address_host`)
or user agent is not the one most of those **by the same principal** came from (the agent's
own role session, used from another machine or tool).  A request stays linked — object, time
and principal fit — but ``per_call.note`` names it.  Only a value more common than every other
is a reference: where two or more are as common (a session with one request from each of two
principals) the flag is NA — which was the agent's is not known — and the note names them.

The result
----------
:class:`AccessJoinResult`: ``links`` (:data:`ACCESS_LINKS`, one row per linked request),
``unexplained`` (the requests no call explains, with ``why`` — sorted so that rows made by a
principal the door's agents use come first, then by time), ``per_call`` (every call with
``access_count``, ``access_bytes``, ``denied_count``), ``duplicates``
(:data:`ACCESS_DUPLICATES`), ``offset_s``, ``unmapped_calls`` (the calls the door did not refuse
whose object no ``storage_map`` entry covers: while there are any, the ``why`` of a request no
call on its object explains names the nearest of them — the request may be its, missed by the
map).

How it is computed
------------------
The join works on whole columns, so that an incident of a million storage requests joins in
seconds: text becomes integer codes (each distinct object, URI, principal and token is looked at
once), the calls on each storage URI are sorted by start so that each request's candidates are
one range search, and each choice — the best-ranked candidate, the calls tied with it, the
refused call a request follows, the nearest call named in a ``why`` — is a sort of (request,
call) pairs, taken a chunk of requests at a time so that the pairs' memory stays bounded.  Python
runs once per request only to write the ``why`` of a request no call explains.  The tests hold
it to the same rules written one request at a time (``tests/_access_join_reference.py``).

Errors: :class:`~replaybook.errors.JoinError` for a frame missing required columns, a negative
window or an offset that is not a finite number.
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import JoinError
from .frames import ACCESS, ACCESS_DUPLICATES, ACCESS_LINKS, UTC
from .replay import writes
from .sources import cloudtrail as _ct, s3_access as _s3

__all__ = [
    "AccessJoinResult",
    "join_access",
    "map_object",
    "on_storage",
    "source_ip",
    "request_id_kind",
    "REQUEST_ID_KINDS",
    "address_host",
    "ACCESS_LINKS",
    "ACCESS_DUPLICATES",
    "LINK_HOWS",
    "ANY_AGENT",
    "principals_naming_no_agent",
    "principals_warning",
    "settings_matching_nothing",
    "TIME_RESOLUTION_S",
    "DEFAULT_WINDOW_S",
    "DEFAULT_LAG_S",
    "DEFAULT_SKEW_S",
    "DEFAULT_MAX_OFFSET_S",
    "MIN_OFFSET_REQUESTS",
    "duration_words",
    "operation_kinds_agree",
]

#: How long a call may have lasted when the door logged no ``ts_end``, seconds.
DEFAULT_WINDOW_S = 60.0
#: How long after the door answered a *completed*/*event* timestamp may fall, seconds.
DEFAULT_LAG_S = 5.0
#: Clock disagreement allowed between the door host and the cloud, seconds (both directions).
DEFAULT_SKEW_S = 2.0
#: The largest clock offset between the door and the cloud that is measured, seconds.
DEFAULT_MAX_OFFSET_S = 300.0
#: Requests a measured clock offset must line up with their calls, beyond those that fit
#: without it, before it is applied (fewer cannot tell a clock from requests made early or late).
MIN_OFFSET_REQUESTS = 3
#: A request with more calls than this on its object within the offset range does not inform
#: the clock offset (an object every call reads tells nothing about which call was whose).
_OFFSET_CAP = 64

#: Values of ``links.how``, strongest first.
LINK_HOWS = ("correlation", "correlation+object+time", "principal+object+time", "object+time")

#: The ``principals`` key for every door agent without an entry of its own, and for calls that
#: name no agent.
ANY_AGENT = "*"

#: Storage operations whose record names the bucket (or a folder) but not the objects,
#: ``(source, action_raw)``, as each source's module declares them (``KEYLESS_BATCH_ACTIONS``):
#: S3's multi-object delete, which CloudTrail logs without its keys and the server access log
#: as one bucket-level line besides a line per key.
KEYLESS_BATCHES = frozenset(
    {(_ct.SOURCE, a) for a in _ct.KEYLESS_BATCH_ACTIONS} | {(_s3.SOURCE, a) for a in _s3.KEYLESS_BATCH_ACTIONS})

#: The precision of each source's ``ts``, seconds: CloudTrail ``eventTime`` and S3 server
#: access log times are whole seconds (the fraction is dropped), so a request logged at second
#: ``t`` happened in ``[t, t + 1 s)``.  Sources not named here (GCP audit: nanoseconds; Azure
#: Storage: 100 ns) are taken as exact, and so is any row whose time has a fraction.
TIME_RESOLUTION_S = {"aws.cloudtrail": 1.0, "aws.s3_access": 1.0}

#: Sources that name one provider's requests with one request id: an S3 request's
#: ``x-amz-request-id`` is CloudTrail's ``requestID`` and the server access log's request ID.
_PROVIDER = {"aws.cloudtrail": "aws", "aws.s3_access": "aws", "gcp.audit": "gcp", "azure.storage": "azure"}


_CALL_NEEDS = ("door_session", "seq", "ts", "ts_end", "agent", "object", "decision")

#: ``why`` of a storage request when no door call's object maps to a storage URI (a manifest
#: without ``storage_map``, or one none of the door's objects starts with): nothing could be matched.
UNMAPPED = ("no door call's object maps to a storage URI (no storage_map entry covers them), so no "
            "request could be matched to a call")
_SCHEMES = ("s3://", "gs://", "az://")


@dataclass
class AccessJoinResult:
    """The outcome of :func:`join_access`.

    Attributes:
        links: :data:`ACCESS_LINKS` frame, ordered by ``access_ts``.
        unexplained: the access rows no call explains: the ACCESS columns plus ``access_index``
            (Int64, row label in the given frame), ``door_principal`` (boolean: the row's
            principal is one the ``principals`` mapping gives a door agent; NA without a
            mapping), ``why`` (string) and, when the door refused a call on the same object,
            that call: ``refused_session`` (string), ``refused_seq`` (Int64), ``refused_rule``
            (string) and ``since_refusal_s`` (float64, the request's time minus the call's,
            seconds, after the clock offset: negative when the request came first) and
            ``refused_agents_principal`` (boolean: the request carries a principal the refused
            call's agent acts as; False: another principal's — not the agent getting round the
            door; NA where that agent's principals are not known) — the last refused call of the
            same kind of operation (:func:`operation_kinds_agree`) started by the request's
            time, else the first after; NA when there is none — rows of door principals first,
            then by ``ts``.  A request the logs hold twice
            is listed once.
        per_call: one row per door call: ``door_session``, ``seq``, ``agent``, ``ts``,
            ``decision``, ``object``, ``call_uri`` (the object through ``storage_map``, NA when
            unmapped; a call on several objects reaches the others' URIs too),
            ``access_count`` (Int64, requests it explains), ``access_bytes`` (Int64, sum of their
            ``bytes`` that are known; NA when none logged a size), ``denied_count`` (Int64, of
            them refused by storage).
        duplicates: :data:`ACCESS_DUPLICATES`: the access rows that repeat a request another row
            holds (neither linked nor listed as unexplained: the row they repeat stands for them).
        unmapped_calls: the door calls the door did not refuse that name an object no
            ``storage_map`` entry covers (:func:`map_object` gives none: a manifest entry that
            misses a folder, or a typo in one), which therefore explain no request:
            ``door_session``, ``seq`` (Int64), ``agent``, ``ts`` (UTC), ``decision`` and
            ``object`` (string: the first object the call names that nothing maps), in the
            calls' order.  A request no call explains while such calls exist may be one of
            theirs: its ``why`` names the nearest.
        window_s, lag_s, skew_s: the windows used, seconds.
        offset_s: the clock offset taken off every access time before it is compared with the
            calls', seconds: the cloud's clock minus the door's (positive: the door's clock is
            behind).  Measured by :func:`join_access` unless given; 0.0 when none was found.
        offset_requests: how many requests fit a call with ``offset_s`` applied — the evidence
            for a measured offset (0 when ``offset_s`` is 0).
        offset_given: ``offset_s`` was given (the manifest's ``storage_clock_ahead_s``, the
            ``access`` command's ``--storage-clock-ahead``), not measured.
        offset_unapplied_s, offset_unapplied_requests: an offset that was measured but not
            applied — it lines up too few requests more than no offset does
            (:data:`MIN_OFFSET_REQUESTS`) — seconds, cloud − door, and how many requests fit
            with it; ``None`` and 0 otherwise.  Where the storage clock is known to be off,
            give it as ``offset_s``.
        door_offsets: the door agents compared at an offset of their own (a door on another
            host's clock; module docstring, "Doors on clocks of their own"), one row each:
            ``agent`` (string), ``offset_s`` (float64, seconds, the cloud's clock minus that
            door's), ``requests`` (Int64, the agent's requests that fit a call at it),
            ``given`` (bool: ``door_offsets_s`` gave it), ``applied`` (bool: False for an offset
            measured that lines up too few requests more than the common one to be taken).
        warnings: what in the options applies to nothing, in sentences: ``principals`` keys that
            name no agent of the calls, with the agents the calls have
            (:func:`principals_warning`), and ``storage_map`` prefixes or ``principals`` patterns
            no request in the access logs has (:func:`settings_matching_nothing`); empty when there
            is none.
    """

    links: pd.DataFrame
    unexplained: pd.DataFrame
    per_call: pd.DataFrame
    window_s: float
    lag_s: float
    skew_s: float
    duplicates: pd.DataFrame = field(default_factory=lambda: ACCESS_DUPLICATES.empty())
    offset_s: float = 0.0
    offset_requests: int = 0
    unmapped_calls: pd.DataFrame = field(default_factory=lambda: _unmapped_frame(pd.DataFrame(), np.zeros(0, object)))
    offset_given: bool = False
    offset_unapplied_s: float | None = None
    offset_unapplied_requests: int = 0
    door_offsets: pd.DataFrame = field(default_factory=lambda: _door_offsets_frame([], {}, {}))
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """A JSON-ready summary: counts per tier, unexplained rows (short) — ``unexplained`` the
        storage requests, ``unexplained_other`` the other services' events (:func:`on_storage`),
        as ``replaybook access`` and the report count them — duplicates, windows and the clock
        offsets.  ``line_no`` is a record's number in a whole-file JSON log (a CloudTrail
        delivery file, a JSON array), its line elsewhere; ``request_id_kind`` says what
        ``request_id`` is (:func:`request_id_kind`: ``event id`` for a CloudTrail event told by
        its ``eventID``)."""
        def short(r) -> dict:
            return {"access_index": int(r.access_index), "ts": r.ts.isoformat().replace("+00:00", "Z"),
                    "source": r.source, "principal": None if pd.isna(r.principal) else r.principal,
                    "principal_name": None if pd.isna(getattr(r, "principal_name", None)) else r.principal_name,
                    "action": r.action, "resource_uri": None if pd.isna(r.resource_uri) else r.resource_uri,
                    "outcome": r.outcome, "why": r.why,
                    "request_id": None if pd.isna(r.request_id) else r.request_id,
                    "request_id_kind": request_id_kind(r.source, getattr(r, "raw", None), r.request_id),
                    "source_file": None if pd.isna(r.source_file) else r.source_file,
                    "line_no": None if pd.isna(r.line_no) else int(r.line_no),
                    "refused_call": None if pd.isna(r.refused_session) else {
                        "door_session": r.refused_session,
                        "seq": None if pd.isna(r.refused_seq) else int(r.refused_seq),
                        "rule": None if pd.isna(r.refused_rule) else r.refused_rule,
                        "since_refusal_s": float(r.since_refusal_s),
                        "agents_principal": None if pd.isna(r.refused_agents_principal)
                        else bool(r.refused_agents_principal)}}

        rows = list(self.unexplained.itertuples(index=False))
        stored = [on_storage(None if pd.isna(r.resource_uri) else r.resource_uri) for r in rows]
        return {
            "window_s": self.window_s,
            "lag_s": self.lag_s,
            "skew_s": self.skew_s,
            "offset_s": self.offset_s,
            "offset_requests": self.offset_requests,
            "offset_given": self.offset_given,
            "offset_unapplied_s": self.offset_unapplied_s,
            "offset_unapplied_requests": self.offset_unapplied_requests,
            "warnings": list(self.warnings),
            "door_offsets": [{"agent": r.agent, "offset_s": float(r.offset_s), "requests": int(r.requests),
                              "given": bool(r.given), "applied": bool(r.applied)}
                             for r in self.door_offsets.itertuples()],
            "links": int(len(self.links)),
            "duplicates": int(len(self.duplicates)),
            "by_how": {k: int(v) for k, v in self.links["how"].value_counts().items()},
            "unexplained": [short(r) for r, on in zip(rows, stored) if on],
            "unexplained_other": [short(r) for r, on in zip(rows, stored) if not on],
        }


def source_ip(raw: Any) -> str | None:
    """The address a storage request came from, as its source logged it: CloudTrail
    ``sourceIPAddress``, S3 server access ``remote_ip``, GCP audit
    ``protoPayload.requestMetadata.callerIp``, Azure storage ``callerIpAddress`` or (a
    Storage Analytics log line) ``requester-ip-address`` (an Azure ``ip:port`` keeps its port);
    ``None`` when the record has none (or names a service, as CloudTrail does for AWS
    services)."""
    if raw is None:
        return None
    try:
        get = raw.get
    except AttributeError:
        return None
    v = get("sourceIPAddress") or get("remote_ip") or get("callerIpAddress") or get("requester-ip-address")
    if v is None:
        pp = get("protoPayload")
        if isinstance(pp, dict):
            v = (pp.get("requestMetadata") or {}).get("callerIp")
    if not isinstance(v, str) or not v or v == "-" or v.endswith(".amazonaws.com"):
        return None
    return v


#: What an access row's ``request_id`` holds, as output labels it (:func:`request_id_kind`).
REQUEST_ID_KINDS = ("request id", "event id", "insert id")


def request_id_kind(source: Any, raw: Any, request_id: Any) -> str:
    """What an access row's ``request_id`` is — the label output gives it (one of
    :data:`REQUEST_ID_KINDS`) — from the row's ``source``, ``raw`` record and ``request_id``:

    * ``event id``: a CloudTrail event without a ``requestID`` (a service event, a console
      sign-in) is told by its ``eventID``, the id CloudTrail gives the event — no request's id;
    * ``insert id``: a GCP audit entry's ``insertId``, the log entry's own id (audit entries
      carry no request id);
    * ``request id`` otherwise (CloudTrail's ``requestID``, the S3 server access log's Request
      ID, Azure's ``x-ms-request-id``), and wherever ``raw`` does not show which (``None``, not
      a mapping, a record whose ``eventID`` / ``insertId`` is not ``request_id``)."""
    if raw is None or not isinstance(request_id, str) or not request_id:
        return "request id"
    try:
        get = raw.get
    except AttributeError:
        return "request id"
    if source == "aws.cloudtrail":
        if getattr(raw, "parsed", True) is False and _names_request_id(raw.text, request_id):
            return "request id"  # (a compact delivery file's record, told without parsing it)
        rid = get("requestID") or get("requestId")
        if not (isinstance(rid, str) and rid) and get("eventID") == request_id:
            return "event id"
    elif source == "gcp.audit" and get("insertId") == request_id:
        return "insert id"
    return "request id"


def _names_request_id(text: Any, request_id: str) -> bool:
    """Whether a CloudTrail record's source text (a :class:`~.sources._record.SourceRecord`'s,
    compact JSON as delivered) writes ``"requestID":"<request_id>"``: then its ``request_id`` is
    its ``requestID``, told in a substring search instead of parsing the record (about 130 µs a
    record, for every row of a large result).  ``False`` says only "not told so": the caller
    parses."""
    for key in ('"requestID":"', '"requestId":"'):
        needle = f'{key}{request_id}"'
        if (needle.encode("utf-8", "surrogatepass") if isinstance(text, (bytes, bytearray))
                else needle) in text:
            return True
    return False


#: an address logged with the client's TCP port (Azure's ``callerIpAddress`` / Storage
#: Analytics' ``requester-ip-address``): ``10.0.0.1:50112``, ``[2001:db8::7]:50112``
_WITH_PORT = re.compile(r"^(?:(\d{1,3}(?:\.\d{1,3}){3})|\[([0-9A-Fa-f:.]+)\]):\d{1,5}$")


def address_host(address: str | None) -> str | None:
    """The host of a source address as :func:`source_ip` gives it, without the client's TCP
    port (``10.0.0.1:50112`` → ``10.0.0.1``, ``[2001:db8::7]:50112`` → ``2001:db8::7``); any
    other value as it is.  A client's every connection comes from a port of its own, so two
    requests are from one address when their hosts are one."""
    if not isinstance(address, str):
        return address
    m = _WITH_PORT.match(address)
    return (m.group(1) or m.group(2)) if m else address


def on_storage(resource_uri: object) -> bool:
    """An access row's ``resource_uri`` names a storage object or bucket (``s3://``, ``gs://``,
    ``az://``): something a door call can reach.  Other rows (IAM, STS, compute … events in the
    same trail) no door call can explain."""
    return isinstance(resource_uri, str) and resource_uri.startswith(_SCHEMES)


def map_object(obj: object, storage_map: Mapping[str, str] | None) -> str | None:
    """A door ``object`` as a storage URI; ``None`` when nothing maps it.

    An object that already is a ``s3://``/``gs://``/``az://`` URI is used as it is (such URIs
    name keys as they are, unencoded, as the AWS CLI and gsutil write them).  Otherwise each
    ``storage_map`` entry maps a **folder** (or one object) of the door's paths onto a storage
    prefix, whole path segments at a time, and the longest entry that matches wins:

    * ``"demo/": "s3://acme-data/demo/"`` maps ``demo/cars.csv`` to ``s3://acme-data/demo/cars.csv``
      and the folder itself — ``demo/``, or ``demo`` as the door logs it (it normalises paths:
      a listing of ``demo/`` is logged as ``demo``) — to ``s3://acme-data/demo/``;
    * an entry written without slashes, ``"data": "s3://acme-data/warehouse"``, maps ``data``
      to ``s3://acme-data/warehouse`` and ``data/cars.csv`` to
      ``s3://acme-data/warehouse/cars.csv``, but not ``database.csv``: an entry never maps part
      of a name;
    * ``""`` maps the data root; without it, the data root (``.``, as the door logs a listing of
      it) maps to the folder every entry's target shares with its path — ``s3://acme-data/``
      for the two above (``demo/`` → ``…/demo/``) — when the entries agree on one.

    A key written with a slash and its target without one (or the other way round) still maps
    folder to folder.
    """
    if not isinstance(obj, str) or not obj:
        return None
    if obj.startswith(_SCHEMES):
        return obj
    smap = storage_map or {}
    path = "" if obj in (".", "./") else obj
    best: str | None = None
    for prefix in smap:
        if _covers(prefix, path) and (best is None or len(prefix.rstrip("/")) > len(best.rstrip("/"))):
            best = prefix
    if best is None:
        return _root_target(smap) if path == "" else None
    target = smap[best]
    folder = best == "" or best.endswith("/")
    key = best.rstrip("/")
    if path == best or (folder and path == key):
        return (target if target.endswith("/") else target + "/") if folder else target
    rest = path[len(key):].lstrip("/") if key else path
    return (target if target.endswith("/") else target + "/") + rest


def _covers(prefix: str, path: str) -> bool:
    """``storage_map`` key ``prefix`` maps door path ``path`` (whole segments; ``""`` maps all)."""
    if prefix == "":
        return True
    key = prefix.rstrip("/")
    return path == prefix or path == key or path.startswith(key + "/")


def _root_target(smap: Mapping[str, str]) -> str | None:
    """The storage folder of the data root, when every entry's target ends with the entry's own
    path (``demo/`` → ``s3://acme-data/demo/``) and they all put the root in one place
    (``s3://acme-data/``); else ``None`` (an entry that maps its folder elsewhere says the data
    root is not one storage folder)."""
    roots = set()
    for prefix, target in smap.items():
        key = prefix.strip("/")
        t = target.rstrip("/")
        if not key or not t.endswith("/" + key):
            return None
        roots.add(t[:-len(key)])
    return roots.pop() if len(roots) == 1 else None


def _principal_match(principal: str | None, patterns: Sequence[str]) -> bool:
    if not principal:
        return False
    return any(principal == p or fnmatch.fnmatchcase(principal, p) for p in patterns)


#: how :func:`_specificity` ranks an exact principal: above every pattern
_EXACT = 1 << 30


def _specificity(principal: str | None, patterns: Sequence[str]) -> int:
    """How closely ``patterns`` name ``principal``: -1 when none matches, :data:`_EXACT` for
    the principal written out, else the most characters a matching pattern gives literally
    (``*``, ``?`` and ``[…]`` classes not counted)."""
    if not principal:
        return -1
    best = -1
    for p in patterns:
        if principal == p:
            return _EXACT
        if fnmatch.fnmatchcase(principal, p):
            best = max(best, _literal_chars(p))
    return best


def _literal_chars(pattern: str) -> int:
    """The characters of an ``fnmatch`` pattern that stand for themselves: not ``*``, ``?`` or a
    ``[…]`` class, read as :func:`fnmatch.translate` reads one (``]`` right after ``[`` or
    ``[!`` belongs to the class; a ``[`` that no ``]`` closes is itself)."""
    n, i, count = len(pattern), 0, 0
    while i < n:
        c = pattern[i]
        i += 1
        if c in "*?":
            continue
        if c == "[":
            j = i
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j < n:  # a class: one character of several, not a literal one
                i = j + 1
                continue
        count += 1
    return count


def _check(df: pd.DataFrame, needs: Sequence[str], what: str) -> None:
    missing = [c for c in needs if c not in df.columns]
    if missing:
        raise JoinError(f"{what} frame lacks columns {missing}")


def join_access(
    calls: pd.DataFrame,
    access: pd.DataFrame,
    *,
    storage_map: Mapping[str, str] | None = None,
    principals: Mapping[str, str | Sequence[str]] | None = None,
    window_s: float = DEFAULT_WINDOW_S,
    lag_s: float = DEFAULT_LAG_S,
    skew_s: float = DEFAULT_SKEW_S,
    offset_s: float | None = None,
    max_offset_s: float = DEFAULT_MAX_OFFSET_S,
    door_offsets_s: Mapping[str, float] | None = None,
) -> AccessJoinResult:
    """Link door calls to the cloud access rows they caused (see the module docstring).

    Args:
        calls: a :data:`~replaybook.frames.CALLS` frame; its ``correlation`` column, where a
            door logged one, enables the correlation tiers; its ``objects`` column, where a
            call names several objects, lets the call explain requests on each.
        access: an :data:`~replaybook.frames.ACCESS` frame (any index; ``access_index`` refers
            to its row labels).
        storage_map: door object prefix → storage URI prefix, e.g.
            ``{"demo/": "s3://acme-data/demo/"}`` (:func:`map_object`).
        principals: agent name → the cloud principal(s) it acts as: exact strings or
            ``fnmatch`` patterns (``"arn:aws:sts::123456789012:assumed-role/door-reader/*"``);
            the key ``"*"`` (:data:`ANY_AGENT`): those of every agent without an entry of its
            own, including calls with no ``agent``.  A key naming no agent of the calls applies
            to nothing (:func:`principals_naming_no_agent` names them).  A principal that
            several entries match is the one of the entry that names it most closely (an exact
            string over a pattern, then the pattern with the most literal characters; every
            entry counts, the ``"*"`` one and one naming no agent of the calls too); entries
            that name it equally closely each have it.
        window_s: assumed longest call when ``ts_end`` is missing, seconds (≥ 0).
        lag_s: slack after the call's end for ``completed``/``event`` timestamps, seconds (≥ 0).
        skew_s: clock skew allowed between the door and the cloud, seconds (≥ 0), on top of
            the clock offset.
        offset_s: the cloud's clock minus the door's, seconds, taken off every access time;
            ``None`` (default) measures it (module docstring, "Clocks"), ``0`` assumes none.
        max_offset_s: the largest offset measured, seconds (≥ 0; 0 measures none).
        door_offsets_s: door agent → the cloud's clock minus **that agent's door's** clock,
            seconds (a door on a host of its own): its calls are compared at that offset, not
            ``offset_s``.  Agents not named whose requests line up at an offset of their own
            take it, as the common one is measured (module docstring, "Doors on clocks of their
            own"), unless ``offset_s`` is given.

    Returns:
        :class:`AccessJoinResult`.

    Raises:
        JoinError: a frame lacks required columns, a window is negative or an offset is not
            a finite number of seconds.
    """
    for name, v in (("window_s", window_s), ("lag_s", lag_s), ("skew_s", skew_s), ("max_offset_s", max_offset_s)):
        if not (v >= 0) or not math.isfinite(v):
            raise JoinError(f"{name} must be a number of seconds ≥ 0, got {v!r}")
    if offset_s is not None and not (isinstance(offset_s, (int, float)) and math.isfinite(offset_s)):
        raise JoinError(f"offset_s must be a finite number of seconds, got {offset_s!r}")
    for agent, v in (door_offsets_s or {}).items():
        if isinstance(v, bool) or not (isinstance(v, (int, float)) and math.isfinite(v)):
            raise JoinError(f"door_offsets_s[{agent!r}] must be a finite number of seconds, got {v!r}")
    _check(calls, _CALL_NEEDS, "calls")
    _check(access, ACCESS.names, "access")
    pats: dict[str, list[str]] = {}
    for agent, p in (principals or {}).items():
        pats[agent] = [p] if isinstance(p, str) else list(p)
    all_patterns = [p for ps in pats.values() for p in ps]

    # -- the calls ------------------------------------------------------------------------------
    c = calls.reset_index(drop=True)
    n_c = len(c)
    c_uri, cu_call, cu_uri, uris_of_calls = _call_uris(c, storage_map)
    unmapped_obj = _unmapped_objects(c, storage_map)
    c_start = c["ts"].astype(UTC)
    c_end = c["ts_end"].astype(UTC).where(c["ts_end"].notna(), c_start + pd.Timedelta(seconds=window_s))
    start_ns = c_start.to_numpy(dtype="datetime64[ns]").astype(np.int64) if n_c else np.zeros(0, np.int64)
    end_ns = c_end.to_numpy(dtype="datetime64[ns]").astype(np.int64) if n_c else np.zeros(0, np.int64)
    valid = c_start.notna().to_numpy() if n_c else np.zeros(0, bool)
    refused = ((c["decision"].astype("string") == "deny").fillna(False).to_numpy(dtype=bool) if n_c
               else np.zeros(0, bool))
    agent_code, agent_names = _coded(c["agent"], str)
    seqs = _by_value(c["seq"], int, 0, np.int64)
    c_kind = _call_kinds(c)
    tok_names: list[str] = []
    c_tok = np.full(n_c, -1, np.int64)
    if "correlation" in c.columns:
        c_tok, tok_names = _coded(c["correlation"], str, drop_empty=True)
    max_span = int(np.max(np.where(valid, end_ns - start_ns, 0))) if n_c else 0
    skew = int(round(skew_s * 1e9))
    lag = int(round(lag_s * 1e9))
    max_off = int(round(max_offset_s * 1e9))
    # the principals each agent acts as (None: unknown); the last entry: calls naming no agent (code -1)
    agent_pats = [pats.get(a, pats.get(ANY_AGENT)) for a in agent_names] + [pats.get(ANY_AGENT)]
    in_pats = np.array([p is not None for p in agent_pats], bool)[agent_code]

    # -- the access rows ------------------------------------------------------------------------
    n_a = len(access)
    labels = access.index.to_numpy()
    a_ts = access["ts"].astype(UTC)
    a_ns = a_ts.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    a_nat = a_ts.isna().to_numpy()
    received = _by_value(access["time_kind"], lambda v: str(v) == "received", False, bool)
    uri_code, uri_names = _coded(access["resource_uri"], str)
    act_code, act_names = _coded(access["action"], str, na="other")
    # a batch whose record names only its bucket or folder: an action of its own, so that its key
    # reaches the calls on the objects under that folder (_Relation)
    batch = np.zeros(n_a, bool)
    if n_a and "action_raw" in access.columns:
        raw_act = access["action_raw"].astype("string").fillna("")
        src_txt = access["source"].astype("string").fillna("")
        for src, name in KEYLESS_BATCHES:
            batch |= ((src_txt == src) & (raw_act == name)).to_numpy(dtype=bool)
        batch &= access["resource_uri"].astype("string").str.endswith("/").fillna(False).to_numpy(dtype=bool)
    act_logged = act_code   # (one request in two logs is told by the action each log gives it)
    if batch.any():
        act_code = np.where(batch, len(act_names), act_code)
        act_names = act_names + [_BATCH]
    a_kind = np.array([_ACTION_KIND.get(a, _ANY_KIND) for a in act_names], np.int64)[act_code] \
        if n_a else np.zeros(0, np.int64)
    who_code, who_names = _coded(access["principal"], str)
    src_code, src_names = _coded(access["source"], str, na="<NA>")
    step = np.array([int(TIME_RESOLUTION_S.get(s, 0) * 1e9) for s in src_names], np.int64)[src_code] \
        if n_a else np.zeros(0, np.int64)
    res_ns = np.where((step > 0) & ~a_nat & (a_ns % np.maximum(step, 1) == 0), step, 0)
    # each row's (resource, action): the unit the object match is decided for
    key, key_uri, key_act = _keys(uri_code, act_code, len(act_names))
    key_uri_names = [uri_names[x] if x >= 0 else None for x in key_uri]
    key_act_names = [act_names[x] for x in key_act]
    tok_of_row = np.full(n_a, -1, np.int64)
    if tok_names:
        t_code, t_names = _coded(access["correlation"], str)
        where_tok = {tok: i for i, tok in enumerate(tok_names)}
        tok_of_row = np.array([where_tok.get(s, -1) for s in t_names] + [-1], np.int64)[t_code]

    # the same request twice: a record delivered again, or the request in two logs
    span = int(round((window_s + lag_s + 2 * skew_s) * 1e9))
    copy_of = _duplicates(access["request_id"], src_code, src_names, act_logged, uri_code, a_ns, a_nat, span)
    dup_pos = np.flatnonzero(copy_of >= 0)
    dup_pos = dup_pos[np.lexsort((dup_pos, a_ns[dup_pos]))]
    src_of = np.array(src_names, dtype=object)[src_code] if n_a else np.zeros(0, dtype=object)
    dups = None
    if len(dup_pos):
        dups = ACCESS_DUPLICATES.build({
            "access_index": _ints(labels[dup_pos]), "same_as": _ints(labels[copy_of[dup_pos]]),
            "source": _text(src_of[dup_pos]),
            "request_id": _text(_by_value(access["request_id"].iloc[dup_pos], str, None)), "ts": a_ts.iloc[dup_pos],
            "how": _text(np.where(src_of[copy_of[dup_pos]] == src_of[dup_pos], "delivered again", "another log")),
        })

    # -- which calls reach which (resource, action) -----------------------------------------------
    rel = _Relation(key_uri_names, key_act_names, uris_of_calls)
    tables = _CallTables(cu_call, cu_uri, valid, refused, start_ns)
    several_uris = np.bincount(cu_call, minlength=n_c) > 1  # a call may meet a request on two of its URIs
    dedupe = several_uris if several_uris.any() else None
    principal_ok = _PrincipalMatch(agent_names, agent_pats, who_names, pats.values())

    def pairs(rows: np.ndarray, lo: np.ndarray, hi: np.ndarray, indexed: bool = True,
              cap: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(position in ``rows``, call) for each row's calls on its resource that started in
        ``[lo, hi]`` (ns); only the matches the object index finds unless ``indexed`` is False;
        none for a row with more than ``cap`` on one of its call URIs."""
        ptr, ru = (rel.ptr, rel.u) if indexed else (rel.ptr_all, rel.u_all)
        return tables.pairs(ptr, ru, key[rows], lo, hi, dedupe=dedupe, n_calls=n_c, cap=cap)

    # a write or delete of a folder marker (``demo/newdir/``) that is not itself one of the URIs
    # of a call on ``demo/newdir``: a change no listing or read of that folder made
    where_uri = {u: j for j, u in enumerate(uris_of_calls)}
    marker_k = np.array([bool(u) and u.endswith("/") and u not in _SCHEMES and u[:-1] in where_uri
                         for u in key_uri_names] + [False], bool)
    exact_k = np.array([where_uri.get(u, -1) if u else -1 for u in key_uri_names] + [-1], np.int64)
    call_has = set((cu_call.astype(np.int64) * max(len(uris_of_calls), 1) + cu_uri.astype(np.int64)).tolist())

    def batch_ok(row: np.ndarray, call: np.ndarray) -> np.ndarray:
        """A keyless batch (``row``) is only a call's that changes objects (or whose tool is not
        known); so is a write or delete of a folder marker that only its folder's call reaches
        (a listing of ``demo/newdir`` does not create or delete ``demo/newdir/``); every other
        request, any call's its object matches."""
        ok = ~batch[row] | (c_kind[call] != _READ)
        k = key[row] if len(row) else np.zeros(0, np.int64)
        chk = marker_k[k] & (a_kind[row] == _CHANGE) & (c_kind[call] == _READ)
        if chk.any():
            at = np.flatnonzero(chk)
            code = call[at].astype(np.int64) * max(len(uris_of_calls), 1) + exact_k[k[at]]
            ok[at] &= np.array([exact_k[k[i]] >= 0 and int(q) in call_has for i, q in zip(at, code)], bool)
        return ok

    def fits(call: np.ndarray, t: np.ndarray, res: np.ndarray, recv: np.ndarray) -> np.ndarray:
        """The requests (logged at ``t``, door clock, within ``res`` ns) fit the calls' windows."""
        s, e = start_ns[call], end_ns[call]
        lo = s - skew
        return valid[call] & (t <= e + np.where(recv, skew, lag + skew)) & np.where(res > 0, t + res > lo, t >= lo)

    def dist(call: np.ndarray, t: np.ndarray, res: np.ndarray) -> np.ndarray:
        """How far each request's time lies outside its call's own span (0: within it), ns."""
        return np.maximum(0, start_ns[call] - (t + res)) + np.maximum(0, t - end_ns[call])

    def rank(call: np.ndarray, t: np.ndarray, res: np.ndarray) -> tuple:
        """Sort keys of the candidates, weakest last: outside the span, from its start, seq, row."""
        return dist(call, t, res), np.abs(t + res // 2 - start_ns[call]), seqs[call], call

    # -- the clock offset ---------------------------------------------------------------------------
    on_store = np.array([on_storage(u) for u in key_uri_names] + [False], bool)[key] if n_a else np.zeros(0, bool)
    ev_rows = np.flatnonzero((copy_of < 0) & ~a_nat & on_store)

    def evidence(rows: np.ndarray, reach: int = max_off):
        """The requests that inform the offset (``_OFFSET_CAP`` or fewer calls that could have
        made them within ``reach``, ns: ``max_off``, or a given offset beyond it): (position in
        ``rows``, call) pairs."""
        t, res = a_ns[rows], res_ns[rows]
        req, call = pairs(rows, t - reach - max_span - res, t + reach, cap=4 * _OFFSET_CAP)
        n_near = np.bincount(req, minlength=len(rows))
        ok = (n_near[req] <= 4 * _OFFSET_CAP) & ~refused[call] & batch_ok(rows[req], call)
        req, call = req[ok], call[ok]
        ok = principal_ok(agent_code[call], in_pats[call], who_code[rows[req]])
        req, call = req[ok], call[ok]
        n_cand = np.bincount(req, minlength=len(rows))
        keep = n_cand[req] <= _OFFSET_CAP
        return req[keep], call[keep]

    def fitting(offs: list[int]) -> list[int]:
        """How many evidence requests fit a call with each offset in ``offs`` taken off."""
        counts = [0] * len(offs)
        reach = max([max_off, *(abs(o) for o in offs)])  # (an offset given beyond max_off: its calls too)
        for rows in _chunks(ev_rows):
            req, call = evidence(rows, reach)
            t, res, recv = a_ns[rows][req], res_ns[rows][req], received[rows][req]
            for j, o in enumerate(offs):
                counts[j] += int(np.count_nonzero(np.bincount(req[fits(call, t - o, res, recv)],
                                                              minlength=len(rows))))
        return counts

    def offset_spans() -> list[tuple[np.ndarray, np.ndarray]]:
        """Each evidence request's offsets that put it within a call's own span, merged."""
        merged = []
        for rows in _chunks(ev_rows):
            req, call = evidence(rows)
            t, res = a_ns[rows][req], res_ns[rows][req]
            merged.append(_offset_spans(req, np.maximum(t - end_ns[call], -max_off),
                                        np.minimum(t + res - start_ns[call], max_off), max_off))
        return merged

    off = offset_requests = 0
    unapplied: tuple[float | None, int] = (None, 0)
    if offset_s is None:
        if max_off > 0 and len(ev_rows):
            off = _measure_offset(offset_spans())
            if off:
                offset_requests, without = fitting([off, 0])
                if offset_requests - without < MIN_OFFSET_REQUESTS or offset_requests < 2 * without:
                    if offset_requests > without:
                        unapplied = (off / 1e9, int(offset_requests))
                    off = offset_requests = 0
    else:
        off = int(round(offset_s * 1e9))
        if off and len(ev_rows):
            (offset_requests,) = fitting([off])

    # -- doors on clocks of their own: each agent's calls at its door's offset ------------------
    given_door = {agent_names.index(a): int(round(float(v) * 1e9))
                  for a, v in (door_offsets_s or {}).items() if a in agent_names}
    door_off: dict[int, tuple[int, int, bool]] = {}  # agent code → (offset ns, requests fitting, given)
    door_unapplied: dict[int, tuple[int, int]] = {}
    if offset_s is None and max_off > 0 and len(ev_rows) and len(agent_names) > 1:
        door_off, door_unapplied = _door_clocks(
            ev_rows, evidence, fits, a_ns, res_ns, received, start_ns, end_ns, agent_code, len(agent_names), off,
            max_off, skip=set(given_door))
    if given_door:
        at = np.full(len(agent_names), off, np.int64)
        for a, o in given_door.items():
            at[a] = o
        reach = max([max_off, abs(off), *(abs(o) for o in given_door.values())])  # (given beyond max_off too)
        (n_fit,) = _door_fitting(ev_rows, lambda rows: evidence(rows, reach), fits, a_ns, res_ns, received,
                                 agent_code, np.array(sorted(given_door)), at)
        for a, o in given_door.items():
            door_off[a] = (o, int(n_fit[a]), True)
    start_raw = start_ns
    if any(o != off for o, _, _ in door_off.values()):
        shift = np.zeros(len(agent_names) + 1, np.int64)
        for a, (o, _, _) in door_off.items():
            shift[a] = o - off  # (a call at door time T was at T + o on the cloud's clock: T + o − off on the common)
        start_ns = start_ns + shift[agent_code]
        end_ns = end_ns + shift[agent_code]
        tables = _CallTables(cu_call, cu_uri, valid, refused, start_ns)

    # -- each request ---------------------------------------------------------------------------
    # per token (and -1: none): how many calls carry it, the first that does
    n_tok = np.append(np.bincount(c_tok[c_tok >= 0], minlength=len(tok_names)), 0)
    tok_first = np.full(len(tok_names) + 1, -1, np.int64)
    has_tok = np.flatnonzero(c_tok >= 0)
    first_of = np.unique(c_tok[has_tok], return_index=True)
    tok_first[first_of[0]] = has_tok[first_of[1]]
    out = _Outcome()
    for rows in _chunks(np.flatnonzero((copy_of < 0) & ~a_nat)):
        t, res, recv, tok = a_ns[rows] - off, res_ns[rows], received[rows], tok_of_row[rows]

        # a token one call carries: that call, if it fits — and, where the agent's principals are
        # known, if one of them made the request (a role session name is whatever the caller
        # of AssumeRole chose: another account's request under the same name is not the call's)
        one = np.flatnonzero(n_tok[tok] == 1)
        i0 = tok_first[tok[one]]
        fit0 = ~refused[i0] & fits(i0, t[one], res[one], recv[one])
        mine0 = principal_ok(agent_code[i0], in_pats[i0], who_code[rows[one]])
        ok = fit0 & mine0
        out.link(rows[one[ok]], i0[ok], LINK_HOWS.index("correlation"))
        out.unexplained(rows[one[fit0 & ~mine0]], _TOKEN_PRINCIPAL, i0[fit0 & ~mine0])
        out.unexplained(rows[one[~fit0]], _TOKEN)

        # a token several calls carry: those calls, by object and time (and principal, as above)
        many = np.flatnonzero(n_tok[tok] > 1)
        rq, call = pairs(rows[many], t[many] - max_span - lag - skew, t[many] + res[many] + skew, indexed=False)
        tt, rr = t[many][rq], res[many][rq]
        fit = (c_tok[call] == tok[many][rq]) & ~refused[call] & fits(call, tt, rr, recv[many][rq]) \
            & batch_ok(rows[many][rq], call)
        mine = principal_ok(agent_code[call], in_pats[call], who_code[rows[many][rq]])
        ok = fit & mine
        got = out.choose(rows[many], rq[ok], call[ok], tt[ok], rr[ok], LINK_HOWS.index("correlation+object+time"),
                         rank, start_ns, seqs)
        other = fit & ~mine & ~got[rq]
        r_req, r_call, _ = out.pick(rq[other], call[other], tt[other], rr[other], rank)
        out.unexplained(rows[many][r_req], _TOKEN_PRINCIPAL, r_call)
        left = ~got
        left[r_req] = False
        out.unexplained(rows[many[left]], _TOKEN)

        # no token, or one no call carries: principal (where the agent's is known), object, time
        rest = np.flatnonzero(tok < 0)
        rq, call = pairs(rows[rest], t[rest] - max_span - lag - skew, t[rest] + res[rest] + skew)
        tt, rr = t[rest][rq], res[rest][rq]
        ok = fits(call, tt, rr, recv[rest][rq]) & batch_ok(rows[rest][rq], call)
        rq, call, tt, rr = rq[ok], call[ok], tt[ok], rr[ok]
        known = in_pats[call]  # the call's agent acts as principals the mapping names
        agrees = principal_ok(agent_code[call], known, who_code[rows[rest][rq]])
        other = ~agrees & ~refused[call]
        # (a refused call under a keyless batch's folder is no sign the batch reached its object)
        hit = agrees & refused[call] & _kinds_agree(c_kind[call], a_kind[rows[rest][rq]]) & ~batch[rows[rest][rq]]
        usable = agrees & ~refused[call]
        tier = np.where(known, 0, 1)
        best = np.full(len(rest), 2, np.int64)
        np.minimum.at(best, rq[usable], tier[usable])
        pool = usable & (tier == best[rq])
        hows = np.array([LINK_HOWS.index("principal+object+time"), LINK_HOWS.index("object+time"), -1])
        got = out.choose(rows[rest], rq[pool], call[pool], tt[pool], rr[pool], hows[best], rank, start_ns, seqs)
        # unexplained: first where a refused call fits, then where a call fits but not its principal
        left = ~got
        for case, which in ((_REFUSED, hit), (_PRINCIPAL, other)):
            sel = which & left[rq]
            r_req, r_call, _ = out.pick(rq[sel], call[sel], tt[sel], rr[sel], rank)
            out.unexplained(rows[rest][r_req], case, r_call)
            left[r_req] = False
        out.unexplained(rows[rest][left], _REST)
    out.unexplained(np.flatnonzero((copy_of < 0) & a_nat), _NO_TIME)

    link_pos, link_call, link_how, link_cands = out.links(a_ns)

    counts = np.bincount(link_call, minlength=n_c).astype(np.int64)
    b_known = access["bytes"].notna().to_numpy()
    b_val = np.zeros(n_a, np.int64)
    if b_known.any():
        b_val[b_known] = access["bytes"][b_known].astype("int64").to_numpy()
    bytes_sum = np.zeros(n_c, np.int64)
    np.add.at(bytes_sum, link_call, b_val[link_pos])
    bytes_known = np.zeros(n_c, bool)
    bytes_known[link_call[b_known[link_pos]]] = True
    denied_row = _by_value(access["outcome"], lambda v: str(v) == "denied", False, bool)
    denied = np.bincount(link_call[denied_row[link_pos]], minlength=n_c).astype(np.int64)

    # whose requests they were: each against the rest of its door session's (see _clients)
    sess_code, _ = _coded(c["door_session"], str)
    clients, client_refs = _clients(who_code[link_pos], who_names, src_code[link_pos],
                                    [source_ip(v) for v in access["raw"].iloc[link_pos]],
                                    access["user_agent"].iloc[link_pos], sess_code[link_call], a_ns[link_pos])
    n_other_p = np.bincount(link_call[clients["other_principal"].fillna(False).to_numpy(dtype=bool)], minlength=n_c)
    n_other_c = np.bincount(link_call[clients["other_client"].fillna(False).to_numpy(dtype=bool)], minlength=n_c)
    notes = call_notes(n_c, link_call, counts, clients, client_refs)
    if len(link_pos):
        # the URI of the call's the request is on: the first of the call's URIs it matches
        first_uri = rel.first_match(key[link_pos], link_call, cu_call, cu_uri)
        call_uri = np.where(first_uri >= 0, np.array(uris_of_calls + [None], dtype=object)[first_uri],
                            c_uri[link_call])
        links_df = ACCESS_LINKS.build({
            "door_session": c["door_session"].iloc[link_call],
            "call_seq": c["seq"].iloc[link_call],
            "agent": _text(np.array(agent_names + [None], dtype=object)[agent_code[link_call]]),
            "access_index": _ints(labels[link_pos]),
            "request_id": access["request_id"].iloc[link_pos],
            "source": access["source"].iloc[link_pos],
            "action": access["action"].iloc[link_pos],
            "outcome": access["outcome"].iloc[link_pos],
            "resource_uri": access["resource_uri"].iloc[link_pos],
            "call_uri": _text(call_uri),
            "call_ts": c_start.iloc[link_call],
            "access_ts": a_ts.iloc[link_pos],
            "time_kind": access["time_kind"].iloc[link_pos],
            "delta_ms": (a_ns[link_pos] - start_raw[link_call]) / 1e6,
            "how": _text(np.array(LINK_HOWS, dtype=object)[link_how]),
            "candidates": _ints(np.maximum(link_cands, 1)),
            **clients,
        })
        links_df = links_df.sort_values(["access_ts", "access_index"], kind="stable").reset_index(drop=True)
    else:
        links_df = ACCESS_LINKS.empty()

    # -- the requests no call explains ----------------------------------------------------------
    un_pos, un_case, un_call = out.unexplained_rows()
    t_un = a_ns[un_pos] - off
    timed = un_case != _NO_TIME
    ref = np.full(len(un_pos), -1, np.int64)
    # the refusal a request follows: a refused call of the same kind of operation (a read beside
    # a refused read, a write or delete beside a refused write; an operation of no known kind
    # beside either)
    u_kind = a_kind[un_pos]
    for kind in (_READ, _CHANGE, _ANY_KIND):
        # (not a keyless batch: which objects it reached is not known, so no refusal is set beside it)
        sel = np.flatnonzero(timed & (u_kind == kind) & ~batch[un_pos])
        if len(sel):
            ok = refused & _kinds_agree(c_kind, np.full(n_c, kind, np.int64))
            ref[sel] = _refusals(rel, _CallTables(cu_call, cu_uri, valid, ok, start_ns, only_refused=True,
                                                  uniq=tables.uniq), key[un_pos[sel]], t_un[sel], skew)
    rest = un_case == _REST
    rest_rows = np.flatnonzero(rest)
    nearest = np.full(len(un_pos), -1, np.int64)
    nearest[rest_rows] = _nearest(rel, tables, key[un_pos[rest_rows]], t_un[rest_rows])
    b_rest = rest_rows[batch[un_pos[rest_rows]]]
    if len(b_rest):  # a keyless batch: the nearest call that changes objects under its folder
        changes = _CallTables(cu_call, cu_uri, valid, c_kind != _READ, start_ns, only_refused=True, uniq=tables.uniq)
        nearest[b_rest] = _nearest(rel, changes, key[un_pos[b_rest]], t_un[b_rest])
    # a folder marker's write or delete: not near a call that only read or listed its folder
    m_rest = rest_rows[marker_k[key[un_pos[rest_rows]]] & (a_kind[un_pos[rest_rows]] == _CHANGE)
                       & ~batch[un_pos[rest_rows]] & (nearest[rest_rows] >= 0)]
    if len(m_rest):
        keep = batch_ok(un_pos[m_rest], nearest[m_rest])
        redo = m_rest[~keep]
        for k in np.unique(key[un_pos[redo]]):  # the calls that change objects, or hold the marker itself
            at = redo[key[un_pos[redo]] == k]
            own = np.zeros(n_c, bool)
            if exact_k[k] >= 0:
                own[cu_call[cu_uri == exact_k[k]]] = True
            fit = _CallTables(cu_call, cu_uri, valid, (c_kind != _READ) | own, start_ns, only_refused=True,
                              uniq=tables.uniq)
            nearest[at] = _nearest(rel, fit, key[un_pos[at]], t_un[at])
    door_principal = None
    if all_patterns:
        door_principal = np.array([_principal_match(p, all_patterns) for p in who_names] + [False], bool)
    unmapped = (unmapped_obj != None) & ~refused  # noqa: E711 (an object array: elementwise)
    why = _why_texts(un_pos, un_case, un_call, nearest, t_un, c=c, agent_names=agent_names, agent_code=agent_code,
                     start_ns=start_ns, who_code=who_code, who_names=who_names, key=key, key_uri_names=key_uri_names,
                     tok_of_row=tok_of_row, tok_names=tok_names, c_tok=c_tok, storage_map=storage_map,
                     any_mapped=bool(len(cu_call)), door_principal=door_principal,
                     unmapped=(unmapped, unmapped_obj, valid), reach_ns=max_span + lag + skew, batch=batch)

    un = access.iloc[un_pos].reset_index(drop=True) if len(un_pos) else ACCESS.empty()
    un = un[ACCESS.names].copy()
    un.insert(0, "access_index", pd.array(labels[un_pos], dtype="Int64") if len(un_pos)
              else pd.array([], dtype="Int64"))
    if all_patterns:
        un["door_principal"] = pd.array(door_principal[who_code[un_pos]], dtype="boolean")
    else:
        un["door_principal"] = pd.array([pd.NA] * len(un), dtype="boolean")
    un["why"] = pd.array(why, dtype="string")
    has_ref = ref >= 0
    ref_session = np.full(len(ref), None, dtype=object)
    ref_seq = np.full(len(ref), None, dtype=object)
    ref_rule = np.full(len(ref), None, dtype=object)
    since = np.full(len(ref), np.nan)
    own = np.full(len(ref), None, dtype=object)
    if has_ref.any():
        i = ref[has_ref]
        # whose principal the request carries, against the refused call's agent's (None: not known)
        agrees = principal_ok(agent_code[i], in_pats[i], who_code[un_pos[has_ref]])
        own[has_ref] = np.where(in_pats[i], agrees, None)
        ref_session[has_ref] = c["door_session"].to_numpy(dtype=object)[i]
        ref_seq[has_ref] = c["seq"].to_numpy(dtype=object)[i]
        if "rule" in c.columns:
            ref_rule[has_ref] = _by_value(c["rule"].iloc[i], str, None)
        since[has_ref] = (t_un[has_ref] - start_ns[i]) / 1e9
    un["refused_session"] = pd.array(ref_session, dtype="string")
    un["refused_seq"] = pd.array(ref_seq, dtype="Int64")
    un["refused_rule"] = pd.array(ref_rule, dtype="string")
    un["since_refusal_s"] = pd.array(since, dtype="float64")
    un["refused_agents_principal"] = pd.array(own, dtype="boolean")
    if len(un):
        un = un.assign(_k=~un["door_principal"].fillna(False).astype(bool)).sort_values(
            ["_k", "ts", "access_index"], kind="stable").drop(columns="_k").reset_index(drop=True)

    per_call = pd.DataFrame({
        "door_session": c["door_session"].astype("string"),
        "seq": c["seq"].astype("Int64"),
        "agent": c["agent"].astype("string"),
        "ts": c_start,
        "decision": c["decision"].astype("string"),
        "object": c["object"].astype("string"),
        "call_uri": pd.array(c_uri, dtype="string"),
        "access_count": pd.array(counts, dtype="Int64"),
        # no size logged (CloudTrail without bytesTransferredOut): unknown, not 0 bytes
        "access_bytes": pd.arrays.IntegerArray(bytes_sum, ~bytes_known),
        "denied_count": pd.array(denied, dtype="Int64"),
        "other_principal_count": pd.array(n_other_p.astype(np.int64), dtype="Int64"),
        "other_client_count": pd.array(n_other_c.astype(np.int64), dtype="Int64"),
        "note": pd.array(notes, dtype="string"),
    })
    dup_df = dups if dups is not None else ACCESS_DUPLICATES.empty()
    return AccessJoinResult(links=links_df, unexplained=un, per_call=per_call, window_s=float(window_s),
                            lag_s=float(lag_s), skew_s=float(skew_s), duplicates=dup_df,
                            offset_s=off / 1e9, offset_requests=int(offset_requests),
                            unmapped_calls=_unmapped_frame(c.iloc[np.flatnonzero(unmapped)], unmapped_obj[unmapped]),
                            offset_given=offset_s is not None, offset_unapplied_s=unapplied[0],
                            offset_unapplied_requests=unapplied[1],
                            door_offsets=_door_offsets_frame(agent_names, door_off, door_unapplied),
                            warnings=[w for w in (principals_warning(c, principals),) if w]
                            + settings_matching_nothing(access, storage_map, principals))


# -- the join's building blocks ---------------------------------------------------------------------
#
# join_access works on whole columns: text columns become integer codes (each distinct value
# handled once), each request's candidate calls are found by sorted range searches over the calls
# on each storage URI, and each choice is a sort of (request, call) pairs.  Python runs once per
# distinct value (object, URI, principal, token) and, for the requests no call explains, once per
# request to write its ``why``.

#: Storage requests joined at a time: bounds the memory their candidate (request, call) pairs take.
_CHUNK_ROWS = 100_000

# what explains an unexplained request's ``why``
_NO_TIME, _TOKEN, _REFUSED, _PRINCIPAL, _REST, _TOKEN_PRINCIPAL = range(6)

# the kind of operation of a call or a request: a read (a listing and a stat too), a change
# (a write or delete), or not known (matches either)
_ANY_KIND, _READ, _CHANGE = -1, 0, 1
#: the join's own action for a keyless batch (:data:`KEYLESS_BATCHES`; ``access.action`` stays ``delete``)
_BATCH = "delete (batch, objects not logged)"
_ACTION_KIND = {"read": _READ, "list": _READ, "head": _READ, "write": _CHANGE, "delete": _CHANGE, _BATCH: _CHANGE}


def operation_kinds_agree(tool: Any, action: Any) -> bool:
    """Whether a door call's ``tool`` and a storage request's ``action`` (``access.action``) are
    the same kind of operation: both change the object (a tool :func:`replaybook.replay.writes`
    names a write — ``put_object``, ``delete_object`` — and a ``write`` or ``delete``), or both
    do not (any other tool, and a ``read``, ``list`` or ``head``).  A call with no tool, or a
    request whose action is ``other`` or missing, agrees with either: what it did is not known.
    A refused call is set beside a request only when they agree."""
    ck = _ANY_KIND if tool is None or pd.isna(tool) else _CHANGE if writes(tool) else _READ
    ak = _ANY_KIND if action is None or pd.isna(action) else _ACTION_KIND.get(str(action), _ANY_KIND)
    return bool(_kinds_agree(np.array([ck]), np.array([ak]))[0])


def _call_kinds(c: pd.DataFrame) -> np.ndarray:
    """Each call's kind of operation (``_READ``, ``_CHANGE``, ``_ANY_KIND`` without a tool)."""
    if "tool" not in c.columns or not len(c):
        return np.full(len(c), _ANY_KIND, np.int64)
    code, names = _coded(c["tool"], str)
    kinds = np.array([_CHANGE if writes(t) else _READ for t in names] + [_ANY_KIND], np.int64)
    return kinds[code]


def _kinds_agree(call_kind: np.ndarray, req_kind: np.ndarray) -> np.ndarray:
    """Elementwise: the call's and the request's kinds agree (either not known, or equal)."""
    return (call_kind == _ANY_KIND) | (req_kind == _ANY_KIND) | (call_kind == req_kind)


def _chunks(rows: np.ndarray):
    """``rows`` in slices of :data:`_CHUNK_ROWS`."""
    step = max(1, int(_CHUNK_ROWS))
    for i in range(0, len(rows), step):
        yield rows[i:i + step]


def _text(values: np.ndarray) -> pd.arrays.StringArray:
    """Python strings (None for NA) as a text column, without pandas guessing their type."""
    return pd.array(np.asarray(values, dtype=object), dtype=pd.StringDtype("python"))


def _ints(values: np.ndarray):
    """Row labels or counts as an ``Int64`` column (labels that are not integers left to the
    frame's own conversion)."""
    values = np.asarray(values)
    return pd.array(values, dtype="Int64") if values.dtype.kind in "iu" else values


def _spans(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every position of the ranges ``[lo[j], hi[j])``: (``j``, position), ``j`` ascending."""
    n = np.maximum(np.asarray(hi, np.int64) - lo, 0)
    owner = np.repeat(np.arange(len(n), dtype=np.int64), n)
    if not owner.size:
        return owner, owner.copy()
    first = np.cumsum(n) - n
    return owner, np.asarray(lo, np.int64)[owner] + (np.arange(owner.size, dtype=np.int64) - first[owner])


def _run_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Where each run of equal values in ``sorted_keys`` begins (boolean mask)."""
    first = np.ones(len(sorted_keys), bool)
    first[1:] = sorted_keys[1:] != sorted_keys[:-1]
    return first


def _coded(values, fn, *, na: str | None = None, drop_empty: bool = False) -> tuple[np.ndarray, list]:
    """Integer codes of a column: ``(codes, names)`` with ``names[code] == fn(value)`` (values
    ``fn`` makes equal share a code); NA (and ``""`` when ``drop_empty``) is ``-1``, or the code
    of ``na`` when given."""
    codes, uniq = pd.factorize(values)
    names: list = []
    where: dict = {}
    remap = np.full(len(uniq) + 1, -1, np.int64)
    for j, v in enumerate(np.asarray(uniq, dtype=object).tolist()):
        if drop_empty and isinstance(v, str) and v == "":
            continue
        name = fn(v)
        remap[j] = where.setdefault(name, len(names))
        if remap[j] == len(names):
            names.append(name)
    if na is not None:
        remap[-1] = where.setdefault(na, len(names))
        if remap[-1] == len(names):
            names.append(na)
    return remap[np.asarray(codes, np.int64)], names


def _by_value(values, fn, na, dtype=object) -> np.ndarray:
    """``fn(value)`` for each row of a column, computed once per distinct value; ``na`` for NA."""
    codes, uniq = pd.factorize(values)
    out = np.empty(len(uniq) + 1, dtype=dtype)
    out[:-1] = [fn(v) for v in np.asarray(uniq, dtype=object).tolist()]
    out[-1] = na
    return out[np.asarray(codes, np.int64)]


def _combine(*codes: np.ndarray) -> np.ndarray:
    """One code per distinct tuple of the given code columns (each ≥ -1)."""
    key = np.zeros(len(codes[0]), np.int64)
    for cc in codes:
        cc = np.asarray(cc, np.int64) + 1
        if len(cc):
            key = pd.factorize(key * (int(cc.max()) + 1) + cc)[0].astype(np.int64)
    return key


def _keys(uri_code: np.ndarray, act_code: np.ndarray, n_act: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's (resource, action) as one code: ``(key, resource code of each key, action
    code of each key)``."""
    n_act = max(n_act, 1)
    key, uniq = pd.factorize((uri_code + 1) * n_act + act_code)
    uniq = np.asarray(uniq, np.int64)
    return np.asarray(key, np.int64), uniq // n_act - 1, uniq % n_act


def _call_uris(c: pd.DataFrame, storage_map) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """The storage URIs each call reaches: its object's (:func:`map_object`) and, for a call on
    several objects, the others', in that order, without repeats.

    Returns ``(c_uri, call, uri, uris)``: ``c_uri`` the object's URI per call (None when
    unmapped); one (``call``, ``uri`` code) pair per URI a call reaches, by call and then in the
    call's order; ``uris`` the URI of each code.
    """
    codes, uniq = pd.factorize(c["object"])
    codes = np.asarray(codes, np.int64)
    mapped = [map_object(o, storage_map) for o in uniq]
    c_uri = np.array(mapped + [None], dtype=object)[codes]
    where: dict[str, int] = {}
    first = np.array([where.setdefault(m, len(where)) if m else -1 for m in mapped] + [-1], np.int64)[codes]
    calls = [np.flatnonzero(first >= 0)]
    uris = [first[first >= 0]]
    order = [np.zeros(len(calls[0]), np.int64)]
    if "objects" in c.columns:
        more = c["objects"].to_numpy(dtype=object)
        ex: list[tuple[int, int, int]] = []
        for i in np.flatnonzero(pd.notna(more)):
            extra = more[i]
            if not isinstance(extra, (list, tuple)):
                continue
            us = [c_uri[i]] if c_uri[i] else []
            for o in extra:
                u = map_object(o, storage_map)
                if u and u not in us:
                    us.append(u)
            for r in range(1 if c_uri[i] else 0, len(us)):
                ex.append((int(i), where.setdefault(us[r], len(where)), r))
        if ex:
            arr = np.array(ex, np.int64)
            calls.append(arr[:, 0])
            uris.append(arr[:, 1])
            order.append(arr[:, 2])
    call, uri, rank = np.concatenate(calls), np.concatenate(uris), np.concatenate(order)
    o = np.lexsort((rank, call))
    return c_uri, call[o], uri[o], list(where)


def _unmapped_objects(c: pd.DataFrame, storage_map) -> np.ndarray:
    """For each call: the first object it names (its ``object``, then its ``objects``) that no
    ``storage_map`` entry maps (:func:`map_object` gives ``None``), or ``None`` (every object it
    names maps, or it names none)."""
    if not len(c):
        return np.zeros(0, dtype=object)

    def missed(o: object) -> str | None:
        return o if isinstance(o, str) and o and map_object(o, storage_map) is None else None

    codes, uniq = pd.factorize(c["object"])
    out = np.array([missed(o) for o in uniq] + [None], dtype=object)[np.asarray(codes, np.int64)]
    if "objects" in c.columns:
        more = c["objects"].to_numpy(dtype=object)
        for i in np.flatnonzero(pd.notna(more)):
            if out[i] is None and isinstance(more[i], (list, tuple)):
                out[i] = next((m for m in map(missed, more[i]) if m is not None), None)
    return out


def _unmapped_frame(c: pd.DataFrame, objs: np.ndarray) -> pd.DataFrame:
    """:attr:`AccessJoinResult.unmapped_calls` of the calls ``c`` (their rows) and the object of
    each that nothing maps."""
    def col(name: str, dtype: str):
        return (c[name].astype(dtype).reset_index(drop=True) if name in c.columns
                else pd.Series(pd.array([None] * len(c), dtype=dtype)))

    return pd.DataFrame({
        "door_session": col("door_session", "string"), "seq": col("seq", "Int64"), "agent": col("agent", "string"),
        "ts": c["ts"].astype(UTC).reset_index(drop=True) if "ts" in c.columns
        else pd.Series(pd.array([pd.NaT] * len(c), dtype=UTC)),
        "decision": col("decision", "string"), "object": pd.array(np.asarray(objs, dtype=object), dtype="string"),
    })


class _Relation:
    """Which call URIs each (resource, action) key reaches, as CSR arrays by key.

    A resource matches a call's URI (module docstring, "Objects") when it is that URI; or the
    action is a listing or stat and the resource starts with the URI as a folder (the URI, with
    a ``/`` added when it has none); or the action is a listing of a folder and the URI is a
    folder under it; or the action is a keyless batch (``_BATCH``) on a folder and the URI lies
    under it (which calls may explain it — those that change objects — is decided per call by
    ``join_access``).  ``ptr_all``/``u_all`` hold every match, ``ptr``/``u`` the matches the
    object tiers use: for the folder rule only folders whose ``/`` lies after the resource's
    ``scheme://`` (the object tiers look calls up by the folders the resource lies in; the token
    tier tests the object itself, so it uses every match)."""

    def __init__(self, key_uri: list, key_act: list[str], uris: list[str]) -> None:
        n_k, n_u = len(key_uri), len(uris)
        self.n_u = max(n_u, 1)
        ks: list[np.ndarray] = [np.zeros(0, np.int64)]
        us: list[np.ndarray] = [np.zeros(0, np.int64)]
        ind: list[np.ndarray] = [np.zeros(0, bool)]
        if n_k and n_u:
            u_arr = np.array(uris, dtype=object)
            # the resource is the call's URI
            pos = pd.Index(u_arr, dtype=object).get_indexer(np.array(key_uri, dtype=object))
            hit = np.flatnonzero(pos >= 0)
            ks.append(hit)
            us.append(pos[hit].astype(np.int64))
            ind.append(np.ones(len(hit), bool))
            # the folder marker of the call's URI (``demo/newdir/`` for a call on ``demo/newdir``:
            # the door logs a folder without its slash); its write or delete only a call that
            # changes objects explains (``batch_ok`` in ``join_access``)
            mk = [k for k in range(n_k) if key_uri[k] and key_uri[k].endswith("/") and key_uri[k] not in _SCHEMES]
            if mk:
                pos = pd.Index(u_arr, dtype=object).get_indexer(np.array([key_uri[k][:-1] for k in mk], dtype=object))
                hit = np.flatnonzero(pos >= 0)
                ks.append(np.array(mk, np.int64)[hit])
                us.append(pos[hit].astype(np.int64))
                ind.append(np.ones(len(hit), bool))
            # a listing or stat of the call's URI as a folder, or of what lies under it
            lh = [k for k in range(n_k) if key_uri[k] and key_act[k] in ("list", "head")]
            if lh:
                # the call's folder written without its slash (``prefix=demo`` for ``demo/``, as
                # ``aws s3 ls s3://acme-data/demo`` sends it; a stat of ``demo`` before ``demo/``)
                bare = [k for k in lh if not key_uri[k].endswith("/") and key_uri[k] + "/" not in _SCHEMES]
                if bare:
                    pos = pd.Index(u_arr, dtype=object).get_indexer(
                        np.array([key_uri[k] + "/" for k in bare], dtype=object))
                    hit = np.flatnonzero(pos >= 0)
                    ks.append(np.array(bare, np.int64)[hit])
                    us.append(pos[hit].astype(np.int64))
                    ind.append(np.ones(len(hit), bool))
                names = sorted({key_uri[k] for k in lh})
                s_of = {s: i for i, s in enumerate(names)}
                s_arr = np.array(names, dtype=object)
                folders = [u if u.endswith("/") else u + "/" for u in uris]
                lo = np.searchsorted(s_arr, np.array(folders, dtype=object), "left")
                hi = np.searchsorted(s_arr, np.array([f[:-1] + "0" for f in folders], dtype=object), "left")
                u_own, s_idx = _spans(lo, hi)  # '/' + 1 == '0': [f, f[:-1] + '0') holds what starts with f
                cut = np.array([s.find("://") + 3 for s in names], np.int64)
                f_len = np.array([len(f) for f in folders], np.int64)
                found = f_len[u_own] - 1 >= cut[s_idx]
                lh_arr = np.array(lh, np.int64)
                lh_s = np.array([s_of[key_uri[k]] for k in lh], np.int64)
                o = np.argsort(lh_s, kind="stable")
                lh_arr, lh_s = lh_arr[o], lh_s[o]
                s_ptr = np.searchsorted(lh_s, np.arange(len(names) + 1))
                p_own, p_idx = _spans(s_ptr[s_idx], s_ptr[s_idx + 1])
                ks.append(lh_arr[p_idx])
                us.append(u_own[p_own])
                ind.append(found[p_own])
            # a listing of a folder above a call's folder; a keyless batch on a folder: every object
            # under it — never a request that names no bucket (``s3://``: ListBuckets lists buckets,
            # not what a listing of one of them lists)
            for acts, only_folders in (("list", True), (_BATCH, False)):
                kf = [k for k in range(n_k) if key_uri[k] and key_act[k] == acts and key_uri[k].endswith("/")
                      and key_uri[k] not in _SCHEMES]
                cand = [j for j, u in enumerate(uris) if u.endswith("/") or not only_folders]
                if kf and cand:
                    k_own, u_own = _under([key_uri[k] for k in kf], cand, uris)
                    ks.append(np.array(kf, np.int64)[k_own])
                    us.append(u_own)
                    ind.append(np.ones(len(k_own), bool))
        comb = np.concatenate(ks) * self.n_u + np.concatenate(us)
        found_by_index = np.concatenate(ind)
        o = np.argsort(comb, kind="stable")
        comb, found_by_index = comb[o], found_by_index[o]
        starts = np.flatnonzero(_run_starts(comb))
        self.comb_all = comb[starts]
        indexed = np.logical_or.reduceat(found_by_index, starts) if len(starts) else np.zeros(0, bool)
        k_all, self.u_all = self.comb_all // self.n_u, self.comb_all % self.n_u
        self.ptr_all = np.searchsorted(k_all, np.arange(n_k + 1))
        self.u = self.u_all[indexed]
        self.ptr = np.searchsorted(k_all[indexed], np.arange(n_k + 1))

    def first_match(self, keys: np.ndarray, calls: np.ndarray, cu_call: np.ndarray, cu_uri: np.ndarray) -> np.ndarray:
        """For each (key, call): the first of the call's URIs (in its order) the key's resource
        matches, or -1."""
        out = np.full(len(keys), -1, np.int64)
        c_ptr = np.searchsorted(cu_call, np.arange(int(calls.max(initial=-1)) + 2))
        own, idx = _spans(c_ptr[calls], c_ptr[calls + 1])
        if not len(own) or not len(self.comb_all):
            return out
        q = keys[own] * self.n_u + cu_uri[idx]
        at = np.minimum(np.searchsorted(self.comb_all, q), len(self.comb_all) - 1)
        hit = self.comb_all[at] == q
        h_own, h_uri = own[hit], cu_uri[idx][hit]
        first = _run_starts(h_own)
        out[h_own[first]] = h_uri[first]
        return out


def _under(folders: list[str], cand: list[int], uris: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each (folder, URI) pair of a URI of ``cand`` (indices into ``uris``) that lies under one of
    ``folders`` (each ending in ``/``): ``(index into folders, index into uris)``."""
    order = sorted(cand, key=lambda j: uris[j])
    arr = np.array([uris[j] for j in order], dtype=object)
    lo = np.searchsorted(arr, np.array(folders, dtype=object), "left")
    hi = np.searchsorted(arr, np.array([f[:-1] + "0" for f in folders], dtype=object), "left")  # '/' + 1 == '0'
    f_own, idx = _spans(lo, hi)
    return f_own, np.array(order, np.int64)[idx]


class _CallTables:
    """The timed calls on each storage URI, sorted by (URI, start, row), for range searches by
    time: ``comb`` = URI code × (distinct starts + 1) + rank of the start."""

    def __init__(self, cu_call: np.ndarray, cu_uri: np.ndarray, valid: np.ndarray, refused: np.ndarray,
                 start_ns: np.ndarray, only_refused: bool = False, uniq: np.ndarray | None = None) -> None:
        self._args = (cu_call, cu_uri, valid, refused, start_ns)
        keep = valid[cu_call] & (refused[cu_call] if only_refused else True)
        cc, uu = cu_call[keep], cu_uri[keep]
        o = np.lexsort((cc, start_ns[cc], uu))
        self.call, u = cc[o], uu[o]
        self.start = start_ns[self.call]
        self.uniq = np.unique(start_ns[valid]) if uniq is None else uniq
        self.m1 = len(self.uniq) + 1
        self.comb = u * self.m1 + np.searchsorted(self.uniq, self.start)

    def refused_only(self) -> "_CallTables":
        """The same tables of the refused calls only."""
        return _CallTables(*self._args, only_refused=True, uniq=self.uniq)

    def at_most(self, u: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Position after the last call on URI ``u`` started by ``t`` (inclusive)."""
        return np.searchsorted(self.comb, u * self.m1 + np.searchsorted(self.uniq, t, "right"), "left")

    def at_least(self, u: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Position of the first call on URI ``u`` started at ``t`` or later."""
        return np.searchsorted(self.comb, u * self.m1 + np.searchsorted(self.uniq, t, "left"), "left")

    def segment(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where the calls on URI ``u`` lie."""
        return (np.searchsorted(self.comb, u * self.m1, "left"),
                np.searchsorted(self.comb, (u + 1) * self.m1, "left"))

    def pairs(self, ptr: np.ndarray, ru: np.ndarray, keys: np.ndarray, lo: np.ndarray, hi: np.ndarray, *,
              dedupe: np.ndarray | None, n_calls: int, cap: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(j, call) for the calls on the URIs key ``keys[j]`` reaches (``ptr``/``ru``) that
        started within ``[lo[j], hi[j]]``, each call once (``dedupe``: the calls on several URIs,
        which may be found twice); none for a ``j`` with more than ``cap`` calls in range on one
        URI."""
        own, r_idx = _spans(ptr[keys], ptr[keys + 1])
        u = ru[r_idx]
        p_lo, p_hi = self.at_least(u, lo[own]), self.at_most(u, hi[own])
        if cap is not None and len(own):
            over = np.zeros(len(keys), bool)
            over[own[p_hi - p_lo > cap]] = True
            keep = ~over[own]
            own, p_lo, p_hi = own[keep], p_lo[keep], p_hi[keep]
        j, p = _spans(p_lo, p_hi)
        req, call = own[j], self.call[p]
        if dedupe is not None and len(req):
            several = dedupe[call] & ((ptr[keys + 1] - ptr[keys])[req] > 1)  # found on two URIs: one candidate
            if several.any():
                sub = np.flatnonzero(several)
                _, first = np.unique(req[sub] * n_calls + call[sub], return_index=True)
                keep = np.ones(len(req), bool)
                keep[sub] = False
                keep[sub[first]] = True
                req, call = req[keep], call[keep]
        return req, call


def _whose(agent: str | None) -> str:
    """Whose principals a request was not made by: the call's agent, or ``"*"``'s for a call that
    names none."""
    if agent is None:
        return 'one principals["*"] gives the door\'s calls that name no agent'
    return f"a principal the door's agent {agent} acts as"


def principals_naming_no_agent(calls: pd.DataFrame, principals: Mapping[str, Any] | None) -> tuple[list[str], list[str], int]:
    """The ``principals`` keys that name no agent of ``calls`` (``"*"`` aside: it needs none),
    in the mapping's order, with what the calls have: ``(keys, agents, calls_without_agent)`` —
    the calls' agents sorted, and how many calls name no agent.  Such a key applies to nothing,
    so ``replaybook access`` and ``report`` warn of it (:func:`principals_warning`)."""
    col = calls["agent"] if "agent" in calls.columns else pd.Series([], dtype="string")
    named = col.dropna().astype(str)
    agents = sorted(set(named[named != ""]))
    keys = [k for k in (principals or {}) if k != ANY_AGENT and k not in agents]
    return keys, agents, int(len(col) - len(named[named != ""]))


def principals_warning(calls: pd.DataFrame, principals: Mapping[str, Any] | None) -> str | None:
    """One sentence on the ``principals`` keys that name no door agent, or None when every key
    names one: ``principals names no agent the door calls have: unknown-agent (they apply to
    nothing); the calls' agents: analyst, and 3 calls name no agent (principals["*"] applies to
    those)``."""
    keys, agents, none = principals_naming_no_agent(calls, principals)
    if not keys:
        return None
    have = ", ".join(agents) if agents else "none named"
    s = (f"principals names {'an agent' if len(keys) == 1 else 'agents'} no door call has: "
         f"{', '.join(keys)} ({'it applies' if len(keys) == 1 else 'they apply'} to nothing); "
         f"the calls' agents: {have}")
    if none:
        s += (f", and {none} call{'s' if none != 1 else ''} name{'' if none != 1 else 's'} no agent "
              f'(principals["*"] gives the principal of every agent without an entry of its own, and of those)')
    return s


def settings_matching_nothing(access: pd.DataFrame, storage_map: Mapping[str, str] | None,
                              principals: Mapping[str, Any] | None) -> list[str]:
    """One sentence per ``storage_map`` storage prefix that no request's ``resource_uri`` starts
    with (nor a listing's of a folder above it: a GCS audit log's bucket-level listing), and per
    ``principals`` pattern that no request's principal matches — a typo (a blank at the end, a
    missing ``*``) then joins nothing while the result looks like a finding; a pattern written as
    an IAM role's ARN, or with GCP IAM's ``serviceAccount:`` prefix, is told what the logs name
    (:func:`_principal_hint`).  Nothing when ``access`` is empty.  Each distinct URI and
    principal is looked at once."""
    if access is None or not len(access):
        return []
    out: list[str] = []
    uris = [u for u in pd.unique(access["resource_uri"].dropna().astype(str))]
    # a GCS audit log's listing of a folder above the prefix reaches the calls on it too (it
    # records a listing at bucket level, whatever its prefix: "Objects" in the module docstring);
    # an S3 or Azure listing names its prefix, so a bucket-level one there hides no typo
    listed = access["resource_uri"].where((access["action"].astype("string") == "list")
                                          & (access["source"].astype("string") == "gcp.audit"))
    above = [u for u in pd.unique(listed.dropna().astype(str)) if u.endswith("/") and u not in _SCHEMES]
    for prefix, target in (storage_map or {}).items():
        if isinstance(target, str) and not any(u.startswith(target) for u in uris) \
                and not any(target.startswith(u) for u in above):
            hint = " (a blank at its end?)" if target != target.strip() else ""
            out.append(f"storage_map {prefix!r} → {target!r} names a storage prefix no request in the access logs "
                       f"has{hint}: no call on those objects can be linked")
    who = [w for w in pd.unique(access["principal"].dropna().astype(str))]
    for agent, ps in (principals or {}).items():
        for p in ([ps] if isinstance(ps, str) else list(ps)):
            if isinstance(p, str) and not any(_principal_match(w, [p]) for w in who):
                hint = " (a blank at its end or start?)" if p != p.strip() else _principal_hint(p)
                out.append(f"principals {agent!r}: {p!r} matches no principal in the access logs{hint}: every "
                           "request of that agent's reads as another principal's")
    return out


#: an IAM role's ARN, ``arn:aws:iam::<account>:role/[<path>/]<name>``
_IAM_ROLE = re.compile(r"^arn:(aws[a-z-]*):iam::([0-9]{12}|\*):role/(?:[^*?\[]*/)?([^/]+)$")


def _principal_hint(pattern: str) -> str:
    """What a ``principals`` entry that matches nothing may have meant, in parentheses (``""``
    when nothing is known): an IAM role's ARN names the role, while CloudTrail and the S3
    server access log name each request by the role session that made it; GCP audit logs name
    a service account by its e-mail, without IAM's ``serviceAccount:`` prefix."""
    m = _IAM_ROLE.match(pattern)
    if m:
        part, account, role = m.groups()
        return (f" (an IAM role's requests are logged by its role sessions, "
                f"'arn:{part}:sts::{account}:assumed-role/{role}/<session name>': "
                f"give 'arn:{part}:sts::{account}:assumed-role/{role}/*')")
    for prefix in ("serviceAccount:", "user:"):
        if pattern.startswith(prefix) and len(pattern) > len(prefix):
            return (f" (a GCP audit log's principalEmail has no {prefix!r} prefix: "
                    f"{pattern[len(prefix):]!r}?)")
    return ""


class _PrincipalMatch:
    """Whether a request's principal is one the call's agent acts as (``principals``), decided
    once per (agent, principal)."""

    def __init__(self, agent_names: list[str], agent_pats: list, who_names: list[str],
                 every_pats: Sequence[Sequence[str]] = ()) -> None:
        self.agent_pats, self.who_names = agent_pats, who_names
        self.every_pats = [list(ps) for ps in every_pats]
        self.n = len(who_names) + 1
        self.memo: dict[int, bool] = {}
        self.best: dict[int, int] = {}

    def __call__(self, agent: np.ndarray, known: np.ndarray, who: np.ndarray) -> np.ndarray:
        """True where the agent's principals are not known (``known`` False) or ``who`` is one."""
        out = np.ones(len(agent), bool)
        k = np.flatnonzero(known)
        if len(k):
            inv, uniq = pd.factorize(agent[k] * self.n + (who[k] + 1))
            out[k] = np.array([self._match(int(x)) for x in uniq], bool)[inv]
        return out

    def _match(self, x: int) -> bool:
        """The agent's principals name the request's principal, and no other ``principals``
        entry names it more closely (an exact principal over a pattern, a longer pattern over a
        shorter one: ``…/door-reader/ops-*`` is ops's, not the ``…/door-reader/*`` of another
        agent); entries that name it equally closely each have it."""
        if x not in self.memo:
            a, w = divmod(x, self.n)
            who = self.who_names[w - 1] if w else None
            mine = _specificity(who, self.agent_pats[a])
            if mine >= 0 and w not in self.best:
                self.best[w] = max((_specificity(who, ps) for ps in self.every_pats), default=-1)
            self.memo[x] = mine >= 0 and mine >= self.best[w]
        return self.memo[x]


def _duplicates(request_id: pd.Series, src_code: np.ndarray, src_names: list[str], act_code: np.ndarray,
                uri_code: np.ndarray, a_ns: np.ndarray, a_nat: np.ndarray, span: int) -> np.ndarray:
    """For each access row, the row it repeats (same provider, request id, action and resource,
    no more than ``span`` ns after the row that stands for the request), or -1."""
    n = len(a_ns)
    copy_of = np.full(n, -1, np.int64)
    rid = np.asarray(pd.factorize(request_id)[0], np.int64)
    blank = request_id.isin(["", "-"]).to_numpy(dtype=bool)
    rows = np.flatnonzero((rid >= 0) & ~a_nat & ~blank)
    if not len(rows):
        return copy_of
    prov = pd.factorize(np.array([_PROVIDER.get(s, s) for s in src_names], dtype=object))[0][src_code[rows]]
    g = _combine(prov, rid[rows], act_code[rows], uri_code[rows])
    several = np.bincount(g)[g] > 1  # only ids seen more than once can repeat
    rows, g = rows[several], g[several]
    o = np.lexsort((rows, a_ns[rows], g))  # each request's rows together, in time order
    rows, g = rows[o], g[o]
    tt = a_ns[rows]
    first = _run_starts(g)
    gid = np.cumsum(first) - 1
    anchor = np.flatnonzero(first)
    end = np.append(anchor[1:], len(rows))
    uniq = np.unique(tt)
    m1 = len(uniq) + 1
    comb = gid * m1 + np.searchsorted(uniq, tt)
    # the row standing for a request takes the rows up to span after it; the next row, if any,
    # stands for a request of its own (one pass per such row of the request with the most)
    while len(anchor):
        nxt = np.searchsorted(comb, gid[anchor] * m1 + np.searchsorted(uniq, tt[anchor] + span, "right"), "left")
        own, j = _spans(anchor + 1, nxt)
        copy_of[rows[j]] = rows[anchor[own]]
        more = nxt < end
        anchor, end = nxt[more], end[more]
    return copy_of


def _offset_spans(req: np.ndarray, a: np.ndarray, b: np.ndarray, max_off: int,
                  keys: bool = False) -> tuple[np.ndarray, ...]:
    """Each request's offsets ``[a, b]`` (one per candidate call; ``-max_off ≤ a``), merged per
    request where they overlap or touch: ``(starts, ends)`` of the merged stretches (and, with
    ``keys``, each stretch's request)."""
    keep = a <= b
    req, a, b = req[keep], a[keep], b[keep]
    if not len(req):
        return (a, b, req) if keys else (a, b)
    width = 2 * max_off + 1
    if int(req.max()) < (1 << 62) // width:  # by request, then start (the order of equal starts does not matter)
        o = np.argsort(req * width + (a + max_off))
    else:
        o = np.lexsort((a, req))
    req, a, b = req[o], a[o], b[o]
    first = _run_starts(req)
    reach = pd.Series(b).groupby(req).cummax().to_numpy()  # the furthest end so far in the request
    prev = np.empty_like(reach)
    prev[1:] = reach[:-1]
    starts = np.flatnonzero(first | (a > prev))
    if keys:
        return a[starts], np.maximum.reduceat(b, starts), req[starts]
    return a[starts], np.maximum.reduceat(b, starts)


def _door_clocks(ev_rows, evidence, fits, a_ns, res_ns, received, start_ns, end_ns, agent_code, n_agents: int,
                 off: int, max_off: int, skip: set) -> tuple[dict, dict]:
    """Door agents whose requests line up at a clock offset of their own (a door on another
    host): ``({agent code: (offset ns, requests fitting, False)}, {agent code: (offset ns,
    requests fitting)} measured but not applied)``.

    Per agent (not in ``skip``), the offset is measured as the common one is
    (:func:`_measure_offset`) over the evidence requests paired with that agent's calls, and
    taken when it differs from the common ``off`` and lines up at least
    :data:`MIN_OFFSET_REQUESTS` more of them than ``off`` does, and twice as many.  One pass to
    measure, one to count, whatever the number of agents.
    """
    by_agent: dict[int, list] = {}
    for rows in _chunks(ev_rows):
        req, call = evidence(rows)
        ag = agent_code[call]
        ok = ag >= 0
        req, call, ag = req[ok], call[ok], ag[ok]
        t, res = a_ns[rows][req], res_ns[rows][req]
        a, b, k = _offset_spans(ag * len(rows) + req, np.maximum(t - end_ns[call], -max_off),
                                np.minimum(t + res - start_ns[call], max_off), max_off, keys=True)
        g = k // max(len(rows), 1)
        for x in np.unique(g).tolist():
            if x not in skip:
                m = g == x
                by_agent.setdefault(x, []).append((a[m], b[m]))
    cand = np.full(n_agents, off, np.int64)
    for x, spans in by_agent.items():
        cand[x] = _measure_offset(spans)
    moved = np.flatnonzero(cand != off)
    if not len(moved):
        return {}, {}
    own, common = _door_fitting(ev_rows, evidence, fits, a_ns, res_ns, received, agent_code, moved,
                                cand, np.full(n_agents, off, np.int64))
    taken, unapplied = {}, {}
    for x in moved.tolist():
        if own[x] - common[x] >= MIN_OFFSET_REQUESTS and own[x] >= 2 * common[x]:
            taken[x] = (int(cand[x]), int(own[x]), False)
        elif own[x] > common[x]:
            unapplied[x] = (int(cand[x]), int(own[x]))
    return taken, unapplied


def _door_fitting(ev_rows, evidence, fits, a_ns, res_ns, received, agent_code, agents: np.ndarray,
                  *offsets: np.ndarray) -> list[np.ndarray]:
    """For each of ``offsets`` (int64 ns per agent code), how many evidence requests of the
    ``agents`` (agent codes) fit a call of that agent with the agent's offset taken off: an
    int64 count per agent code, one array per ``offsets``."""
    n = len(offsets[0])
    counts = [np.zeros(n, np.int64) for _ in offsets]
    want = np.zeros(n + 1, bool)
    want[agents] = True
    for rows in _chunks(ev_rows):
        req, call = evidence(rows)
        ag = agent_code[call]
        ok = want[ag]
        req, call, ag = req[ok], call[ok], ag[ok]
        t, res, recv = a_ns[rows][req], res_ns[rows][req], received[rows][req]
        for j, o in enumerate(offsets):
            hit = fits(call, t - o[ag], res, recv)
            k = np.unique(ag[hit] * len(rows) + req[hit])
            counts[j] += np.bincount(k // max(len(rows), 1), minlength=n)[:n]
    return counts


def _door_offsets_frame(agent_names: list, taken: dict, unapplied: dict) -> pd.DataFrame:
    """:attr:`AccessJoinResult.door_offsets` from the agents' offsets (see there)."""
    rows = [(agent_names[a], o / 1e9, n, bool(given), True) for a, (o, n, given) in taken.items()]
    rows += [(agent_names[a], o / 1e9, n, False, False) for a, (o, n) in unapplied.items()]
    rows.sort(key=lambda r: (not r[4], r[0]))  # taken first, by agent
    return pd.DataFrame({
        "agent": pd.array([r[0] for r in rows], dtype="string"),
        "offset_s": pd.array([r[1] for r in rows], dtype="float64"),
        "requests": pd.array([r[2] for r in rows], dtype="Int64"),
        "given": pd.array([r[3] for r in rows], dtype="bool"),
        "applied": pd.array([r[4] for r in rows], dtype="bool"),
    })


def _measure_offset(merged: list[tuple[np.ndarray, np.ndarray]]) -> int:
    """The clock offset (ns, cloud − door) that puts the most requests within the span of a
    call that could have made them, or 0.

    Each request fits call ``i`` for the offsets ``[t − end_i, t + res − start_i]`` (no skew or
    lag: the calls' own spans, so the estimate is sharp), within ``max_off`` — ``merged`` holds
    these, merged per request (:func:`_offset_spans`); the offsets where the most requests fit
    form one or more stretches, and the stretch nearest 0 gives its middle — 0 when it holds 0,
    or when nothing is within ``max_off``.  :func:`join_access` then applies it only when it
    fits enough requests more than no offset does (:data:`MIN_OFFSET_REQUESTS`).
    """
    a = np.sort(np.concatenate([m[0] for m in merged])) if merged else np.zeros(0, np.int64)
    b = np.sort(np.concatenate([m[1] for m in merged])) if merged else np.zeros(0, np.int64)
    if not len(a):
        return 0
    # sweep the offsets upwards, a stretch starting before one ending at the same offset: after
    # the i-th start, i + 1 have started and those ending before it have ended
    closing = np.searchsorted(b, a, "left")
    fitting = np.arange(1, len(a) + 1) - closing
    j = np.flatnonzero(fitting == fitting.max())
    lo, hi = a[j], b[closing[j]]  # the most requests fit from a start to the next end
    near = np.where((lo <= 0) & (hi >= 0), 0, np.minimum(np.abs(lo), np.abs(hi)))
    k = int(np.argmin(near))
    lo, hi = int(lo[k]), int(hi[k])
    if lo <= 0 <= hi:
        return 0
    return (lo + hi) // 2


class _Outcome:
    """The join's verdicts as they are reached, chunk by chunk: links (with the calls tied for
    them) and unexplained requests (with what explains their ``why``)."""

    def __init__(self) -> None:
        self._links: list[tuple[np.ndarray, ...]] = []
        self._ties: list[tuple[np.ndarray, np.ndarray]] = []
        self._un: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def link(self, pos: np.ndarray, call: np.ndarray, how: int) -> None:
        """Requests at ``pos`` explained by ``call``, no other call as well."""
        self._links.append((pos, call, np.full(len(pos), how, np.int64), np.ones(len(pos), np.int64)))

    def unexplained(self, pos: np.ndarray, case: int, call: np.ndarray | None = None) -> None:
        """Requests at ``pos`` no call explains; ``case`` says why, ``call`` is the call the
        ``why`` names (a refused call, or one whose principal differs)."""
        self._un.append((pos, np.full(len(pos), case, np.int64), np.full(len(pos), -1, np.int64)
                         if call is None else call))

    @staticmethod
    def pick(req: np.ndarray, call: np.ndarray, t: np.ndarray, res: np.ndarray, rank) -> tuple[np.ndarray, ...]:
        """The best-ranked candidate of each request: ``(requests, their calls, pair index)``."""
        if not len(req):
            return req, call, req
        keys = rank(call, t, res)
        o = np.lexsort(tuple(reversed(keys)) + (req,))
        chosen = o[_run_starts(req[o])]
        return req[chosen], call[chosen], chosen

    def choose(self, pos: np.ndarray, req: np.ndarray, call: np.ndarray, t: np.ndarray, res: np.ndarray,
               how, rank, start_ns: np.ndarray, seqs: np.ndarray) -> np.ndarray:
        """Link each request (``pos[req]``) to its best-ranked candidate; note the candidates
        tied with it (as near its time).  Returns which of ``pos`` were linked."""
        got = np.zeros(len(pos), bool)
        reqs, chosen_call, chosen = self.pick(req, call, t, res, rank)
        if not len(reqs):
            return got
        got[reqs] = True
        d = rank(call, t, res)[0]
        best = np.zeros(len(pos), np.int64)
        best[reqs] = d[chosen]
        tied = d == best[req]
        n_tied = np.bincount(req[tied], minlength=len(pos))
        hows = np.full(len(reqs), how, np.int64) if np.ndim(how) == 0 else np.asarray(how)[reqs]
        self._links.append((pos[reqs], chosen_call, hows, n_tied[reqs]))
        several = tied & (n_tied[req] > 1)
        if several.any():
            tq, tc = req[several], call[several]
            o = np.lexsort((tc, seqs[tc], start_ns[tc], tq))
            self._ties.append((pos[tq[o]], tc[o]))
        return got

    def links(self, a_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(pos, call, how, candidates)`` by row position; requests several calls explain
        equally well are shared among them (module docstring)."""
        if not self._links:
            z = np.zeros(0, np.int64)
            return z, z, z, z
        pos, call, how, cands = (np.concatenate(x) for x in zip(*self._links))
        o = np.argsort(pos, kind="stable")
        pos, call, how, cands = pos[o], call[o], how[o], cands[o]
        if self._ties:
            t_pos = np.concatenate([x[0] for x in self._ties])
            t_call = np.concatenate([x[1] for x in self._ties])
            starts = np.flatnonzero(_run_starts(t_pos))
            m = np.diff(np.append(starts, len(t_pos)))
            r_pos = t_pos[starts]
            at = np.searchsorted(pos, r_pos)
            r_how = how[at]
            group = np.zeros(len(starts), np.int64)
            n_groups = 0
            for size in np.unique(m):  # requests tied among the same calls, in the same tier
                sel = np.flatnonzero(m == size)
                block = np.column_stack([r_how[sel]] + [t_call[starts[sel] + k] for k in range(size)])
                _, inv = np.unique(block, axis=0, return_inverse=True)
                inv = np.asarray(inv).reshape(-1)
                group[sel] = inv + n_groups
                n_groups += int(inv.max()) + 1
            # in time order, the k-th of a group's n requests takes the (k·m // n)-th of its m calls
            o = np.lexsort((r_pos, a_ns[r_pos], group))
            new = _run_starts(group[o])
            first = np.flatnonzero(new)
            which = np.cumsum(new) - 1
            k = np.arange(len(o)) - first[which]
            n = np.diff(np.append(first, len(o)))[which]
            call[at[o]] = t_call[starts[o] + k * m[o] // n]
        return pos, call, how, cands

    def unexplained_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(pos, case, call)`` of the unexplained requests by row position."""
        if not self._un:
            z = np.zeros(0, np.int64)
            return z, z, z
        pos, case, call = (np.concatenate(x) for x in zip(*self._un))
        o = np.argsort(pos, kind="stable")
        return pos[o], case[o], call[o]


def _refusals(rel: _Relation, refused: _CallTables, keys: np.ndarray, t: np.ndarray, skew: int) -> np.ndarray:
    """For each request (``keys``, ``t`` on the door's clock): the refused call on its object it
    most likely follows — the last one started by ``t`` (clock skew allowed; the lowest row of
    those that started together), else the first one after — or -1."""
    out = np.full(len(keys), -1, np.int64)
    own, r_idx = _spans(rel.ptr[keys], rel.ptr[keys + 1])
    u = rel.u[r_idx]
    lo, hi = refused.segment(u)
    some = hi > lo
    own, u, lo = own[some], u[some], lo[some]
    if not len(own):
        return out
    p = refused.at_most(u, t[own] + skew) - 1
    before = p >= lo
    b_own, b_u = own[before], u[before]
    b_at = refused.at_least(b_u, refused.start[p[before]])
    b_call, b_start = refused.call[b_at], refused.start[b_at]
    ch = np.lexsort((b_call, -b_start, b_own))
    ch = ch[_run_starts(b_own[ch])]
    out[b_own[ch]] = b_call[ch]
    after = out[own] < 0
    a_own, a_call, a_start = own[after], refused.call[lo[after]], refused.start[lo[after]]
    ch = np.lexsort((a_call, a_start, a_own))
    ch = ch[_run_starts(a_own[ch])]
    out[a_own[ch]] = a_call[ch]
    return out


def _nearest(rel: _Relation, tables: _CallTables, keys: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each request: the timed call on its object (at any time) that started nearest ``t``
    (of two as near, the earlier; of calls that started together, the lowest row), or -1."""
    out = np.full(len(keys), -1, np.int64)
    own, r_idx = _spans(rel.ptr[keys], rel.ptr[keys + 1])
    u = rel.u[r_idx]
    lo, hi = tables.segment(u)
    some = hi > lo
    own, u, lo, hi = own[some], u[some], lo[some], hi[some]
    if not len(own):
        return out
    p = tables.at_most(u, t[own]) - 1
    before = p >= lo
    l_at = tables.at_least(u[before], tables.start[p[before]])  # the lowest row of those that started then
    after = p + 1 < hi
    c_own = np.concatenate((own[before], own[after]))
    c_call = np.concatenate((tables.call[l_at], tables.call[p[after] + 1]))
    c_start = tables.start[np.concatenate((l_at, p[after] + 1))]
    ch = np.lexsort((c_call, c_start, np.abs(t[c_own] - c_start), c_own))
    ch = ch[_run_starts(c_own[ch])]
    out[c_own[ch]] = c_call[ch]
    return out


def _why_texts(un_pos: np.ndarray, un_case: np.ndarray, un_call: np.ndarray, nearest: np.ndarray,
               t_un: np.ndarray, *, c: pd.DataFrame, agent_names: list[str], agent_code: np.ndarray,
               start_ns: np.ndarray, who_code: np.ndarray, who_names: list[str], key: np.ndarray,
               key_uri_names: list, tok_of_row: np.ndarray, tok_names: list[str], c_tok: np.ndarray,
               storage_map, any_mapped: bool, door_principal: np.ndarray | None,
               unmapped: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
               reach_ns: int | None = None, batch: np.ndarray | None = None) -> list[str]:
    """Why no call explains each unexplained request, in words (one line of Python per request:
    what it refers to was found for all of them at once).  ``unmapped``: which calls the door
    did not refuse name an object nothing maps, that object, and which calls have a time;
    ``reach_ns``: how far from a call's start a request it explains can lie (the longest call,
    the lag and the skew, ns); ``batch``: the access rows that are keyless batches
    (:data:`KEYLESS_BATCHES`), whose ``nearest`` is a call that changes objects."""
    sess = c["door_session"].to_numpy(dtype=object)
    unmapped_words = None
    if unmapped is not None and any_mapped and unmapped[0].any():
        unmapped_words = _UnmappedNearest(*unmapped, start_ns, sess, c["seq"].to_numpy(dtype=object),
                                          reach_ns=reach_ns)
    seq = c["seq"].to_numpy(dtype=object)
    decision = c["decision"].to_numpy(dtype=object)
    rule = c["rule"].to_numpy(dtype=object) if "rule" in c.columns else None
    targets = list((storage_map or {}).values())
    token_why: dict[int, str] = {}
    if (un_case == _TOKEN).any():
        sessions: dict[int, set] = {}
        has = np.flatnonzero(c_tok >= 0)
        for code, s in zip(c_tok[has].tolist(), sess[has]):
            sessions.setdefault(code, set()).add(str(s))
        for code, ss in sessions.items():
            token_why[code] = (f"correlation {tok_names[code]!r} belongs to door session(s) "
                               f"{', '.join(sorted(ss))}, but no allowed call there on this object within the window")
    outside: dict[str, bool] = {}
    out: list[str] = []

    def nearest_words(near: int, t: int) -> str:
        near_rule = rule[near] if rule is not None else None
        what = (f", which the door refused{'' if pd.isna(near_rule) else f' (rule {near_rule})'}"
                if str(decision[near]) != "allow" else "")
        return (f"(nearest: session {sess[near]} seq {seq[near]}{what}, "
                f"{_delta_words((t - int(start_ns[near])) / 1e9)} that call)")

    for pos, case, i, near, t in zip(un_pos.tolist(), un_case.tolist(), un_call.tolist(), nearest.tolist(),
                                     t_un.tolist()):
        if case == _NO_TIME:
            out.append("no time")
        elif case == _TOKEN:
            out.append(token_why[int(tok_of_row[pos])])
        elif case == _REFUSED:
            out.append(f"only a call the door refused matches (session {sess[i]} seq {seq[i]}): the door says it "
                       f"did not forward it")
        elif case == _TOKEN_PRINCIPAL:
            w = who_code[pos]
            who = who_names[w] if w >= 0 and who_names[w] else "no principal the log names"
            out.append(f"its correlation {tok_names[int(tok_of_row[pos])]!r} is a door call's (session {sess[i]} seq "
                       f"{seq[i]}), but the request was made by {who}, not "
                       f"{_whose(agent_names[agent_code[i]] if agent_code[i] >= 0 else None)}")
        elif case == _PRINCIPAL:
            w = who_code[pos]
            who = who_names[w] if w >= 0 and who_names[w] else "no principal the log names"
            on = ("changing objects under this bucket or folder" if batch is not None and batch[pos]
                  else "on this object")
            out.append(f"a door call {on} fits the time (session {sess[i]} seq {seq[i]}), but the request "
                       f"was made by {who}, not {_whose(agent_names[agent_code[i]] if agent_code[i] >= 0 else None)}")
        elif batch is not None and batch[pos]:
            uri = key_uri_names[key[pos]]
            why = (f"a multi-object delete (DeleteObjects) logged with its bucket only, {uri}: which objects it "
                   "deleted the record does not say; no door call that changes objects under it")
            if near >= 0:
                why += f" within the time window {nearest_words(near, t)}"
            if door_principal is not None and not door_principal[who_code[pos]]:
                why += "; the principal is not one the door's agents use"
            out.append(why)
        else:
            uri = key_uri_names[key[pos]]
            if uri is None:
                out.append("no resource in the access record")
            elif near < 0:
                if uri not in outside:
                    outside[uri] = bool(targets) and not any(uri.startswith(tg) or tg.startswith(uri)
                                                             for tg in targets)
                out.append("resource outside every storage_map target: no door call can reach it" if outside[uri]
                           else UNMAPPED if not any_mapped else "no door call on this object"
                           if unmapped_words is None else unmapped_words(t))
            else:
                why = f"no door call on this object within the time window {nearest_words(near, t)}"
                if door_principal is not None and not door_principal[who_code[pos]]:
                    why += "; the principal is not one the door's agents use"
                out.append(why)
    return out


#: slack beyond a call's reach before an unmapped call is called too far to be a request's (ns)
_REACH_MARGIN_NS = 60 * 10**9


class _UnmappedNearest:
    """The ``why`` of a request no call on its object explains while some calls the door did
    not refuse name objects no ``storage_map`` entry covers: the request may be one of theirs,
    so the nearest of them (by start, door clock; of two as near, the earlier; of calls that
    started together, the lowest row) is named.  When even the nearest lies farther from the
    request than ``reach_ns`` (a request a call explains lies no farther from its start), the
    map is not what is missing: that is said instead."""

    def __init__(self, unmapped: np.ndarray, objs: np.ndarray, valid: np.ndarray, start_ns: np.ndarray,
                 sess: np.ndarray, seq: np.ndarray, reach_ns: int | None = None) -> None:
        self.reach_ns = reach_ns
        self.n = int(unmapped.sum())
        timed = np.flatnonzero(unmapped & valid)
        self.calls = timed[np.lexsort((timed, start_ns[timed]))]
        self.starts = start_ns[self.calls]
        self.objs, self.sess, self.seq = objs, sess, seq

    def __call__(self, t: int) -> str:
        head = (f"no door call on this object, but {self.n:,} allowed door call{'' if self.n == 1 else 's'} "
                f"{'reaches' if self.n == 1 else 'reach'} objects no storage_map entry covers")
        if not len(self.calls):
            return head + " (none has a time): storage_map may miss this object"
        p = int(np.searchsorted(self.starts, t, "right"))
        best = None
        if p > 0:  # the last start by t: the lowest row of the calls that started then
            best = int(np.searchsorted(self.starts, self.starts[p - 1], "left"))
        if p < len(self.starts) and (best is None or self.starts[p] - t < t - self.starts[best]):
            best = p
        i = int(self.calls[best])
        gap = t - int(self.starts[best])
        near = (f"nearest: session {self.sess[i]} seq {self.seq[i]} on {self.objs[i]}, "
                f"{_delta_words(gap / 1e9)} that call")
        if self.reach_ns is not None and abs(gap) > self.reach_ns + _REACH_MARGIN_NS:
            return f"{head}, none of them within this request's time window ({near})"
        return f"{head} ({near}): storage_map may miss this object"


#: Up to this many seconds a span is said in seconds (``111 s``); beyond it in minutes and hours.
SECONDS_SPAN_S = 300.0


def duration_words(seconds: float) -> str:
    """A span of time in words, by its size (the sign is dropped): ``2.5 s`` (one decimal below
    10 s), ``111 s`` (whole seconds up to :data:`SECONDS_SPAN_S`, 5 min), ``41 min``, ``8 h 11 min``,
    ``2 d 3 h 5 min`` (to the nearest minute beyond): a gap of hours read in seconds
    (``29,468 s``) is a number to work out, not a time."""
    a = abs(float(seconds))
    if a < 10:
        return f"{a:.1f} s"
    if a <= SECONDS_SPAN_S:
        return f"{a:,.0f} s"
    d, rest = divmod(int(round(a / 60)), 24 * 60)
    h, m = divmod(rest, 60)
    return " ".join(([f"{d:,} d"] if d else []) + ([f"{h} h"] if d or h else []) + [f"{m} min"])


def _delta_words(seconds: float) -> str:
    """``111 s after`` / ``2.5 s before`` / ``8 h 11 min after`` (:func:`duration_words`)."""
    return f"{duration_words(seconds)} {'after' if seconds >= 0 else 'before'}"


# -- whose requests: principal, address and client against the rest of the door session ---------------

def _most_common(group: np.ndarray, value: np.ndarray, names: list) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the value code most rows of its group carry, of those that carry one (``value``
    ≥ 0) — ``-1`` where two values are as common, or no row of the group carries one — and, for
    the rows of a group where two or more values are as common, those values' names (sorted,
    joined by `` / ``; ``None`` elsewhere)."""
    out = np.full(len(group), -1, np.int64)
    tied = np.full(len(group), None, dtype=object)
    known = value >= 0
    if not known.any():
        return out, tied
    g, v = group[known], value[known]
    m = int(v.max()) + 1
    pair, n = np.unique(g * m + v, return_counts=True)
    pg, pv = pair // m, pair % m
    o = np.lexsort((-n, pg))  # by group, the most common first
    pg, pv, n = pg[o], pv[o], n[o]
    starts = _run_starts(pg)
    first = np.flatnonzero(starts)
    nxt = np.minimum(first + 1, len(pg) - 1)
    alone = (first + 1 >= len(pg)) | (pg[nxt] != pg[first]) | (n[nxt] < n[first])
    n_groups = int(group.max()) + 1
    ref = np.full(n_groups, -1, np.int64)
    ref[pg[first]] = np.where(alone, pv[first], -1)
    which = np.cumsum(starts) - 1  # each pair's group, as an index into first
    top = (n == n[first][which]) & ~alone[which]
    by_group: dict[int, list[str]] = {}
    for gg, vv in zip(pg[top].tolist(), pv[top].tolist()):
        by_group.setdefault(gg, []).append(names[vv])
    text = np.full(n_groups, None, dtype=object)
    for gg, vs in by_group.items():
        text[gg] = " / ".join(sorted(vs))
    return ref[group], text[group]


#: an AWS role session's principal: ``arn:aws:sts::<account>:assumed-role/<role>/<session name>``
#: (CloudTrail ``userIdentity.arn``, an S3 server access log's requester)
_ROLE_SESSION = re.compile(r"^(arn:aws[a-z-]*:sts::[0-9]*:assumed-role/[^/]+)/.+$")


def _renewals(p_code: np.ndarray, p_names: list, group: np.ndarray, ns: np.ndarray,
              client: np.ndarray) -> tuple[np.ndarray, list]:
    """Principal codes with one role's sessions used **one after another, from one client**
    in a group merged.

    An SDK that renews assumed-role credentials names each renewal's role session anew
    (botocore's ``botocore-session-<epoch>``, a door's ``<agent>-<n>``): an agent running longer
    than its credentials reads under several role sessions of one role, each after the last,
    from the same address with the same user agent.  Per group (``group``: a code per row) and
    role, the role's sessions are taken in order of their first request (``ns``, int64 ns); each
    continues the earliest chain that ended (last request) before it began and whose requests
    came from the same clients (``client``: a code per row for address and user agent, -1
    unknown, which fits any), or starts one.  A chain of two or more sessions is one principal,
    named ``<role>/<first session> … <last session>, one role session after another``.  Sessions
    used at once, or from another client (another holder of the role), stay apart.  Another
    holder's read between two renewals from the agent's very address and client joins the chain:
    those look the same.  Returns ``(codes, names)``: the codes (-1 stays -1) into ``names``,
    which extends ``p_names``.
    """
    names = list(p_names)
    role_of = [m.group(1) if isinstance(n, str) and (m := _ROLE_SESSION.match(n)) else None for n in p_names]
    if not (p_code >= 0).any() or not any(role_of):
        return p_code, names
    role_names = sorted({r for r in role_of if r is not None})
    role_code = np.array([role_names.index(r) if r is not None else -1 for r in role_of] + [-1], np.int64)
    r = role_code[p_code]
    rows = np.flatnonzero((p_code >= 0) & (r >= 0))
    if not len(rows):
        return p_code, names
    gp = pd.DataFrame({"g": group[rows], "role": r[rows], "p": p_code[rows], "t": ns[rows], "c": client[rows]})
    span = gp.groupby(["g", "role", "p"], sort=True).agg(lo=("t", "min"), hi=("t", "max"))
    n_roles = span.groupby(level=["g", "role"]).size()
    several = n_roles[n_roles > 1].index
    if not len(several):
        return p_code, names
    known = gp[gp["c"] >= 0]
    clients = known.groupby(["g", "p"])["c"].agg(lambda c: frozenset(c.tolist())).to_dict()
    out = p_code.copy()
    merged: dict[tuple, int] = {}
    span = span.reset_index().sort_values(["g", "role", "lo", "hi", "p"], kind="stable")
    span = span.set_index(["g", "role"]).loc[several].reset_index()
    for (g, _role), part in span.groupby(["g", "role"], sort=False):
        chains: list[list] = []  # [sessions, last end, clients]
        for p, lo, hi in zip(part["p"].tolist(), part["lo"].tolist(), part["hi"].tolist()):
            mine = clients.get((g, p), frozenset())
            for ch in chains:
                if ch[1] < lo and (not mine or not ch[2] or mine & ch[2]):
                    ch[0].append(p)
                    ch[1] = hi
                    ch[2] = ch[2] | mine
                    break
            else:
                chains.append([[p], hi, mine])
        for ps, _, _ in chains:
            if len(ps) < 2:
                continue
            label = tuple(ps)
            if label not in merged:
                merged[label] = len(names)
                names.append(f"{p_names[ps[0]]} … {p_names[ps[-1]].rsplit('/', 1)[1]}, one role session after another")
            out[(group == g) & np.isin(p_code, ps)] = merged[label]
    return out, names


def _clients(p_code: np.ndarray, p_names: list, src_code: np.ndarray, ip: list, user_agent,
             session: np.ndarray, ns: np.ndarray | None = None) -> tuple[dict, dict]:
    """The links' ``principal``, ``source_ip``, ``user_agent``, ``other_principal`` and
    ``other_client`` columns (one value per link, in the order given), and what each was
    compared with (``ref_principal``, ``ref_ip``, ``ref_ua``: the reference, ``None`` where there
    is none; ``tied_principal``, ``tied_ip``, ``tied_ua``: where values were as common, their
    names; object arrays).  The principal (``p_code`` into ``p_names``), the source and the door
    session come as integer codes (-1: none); the address and the user agent as the values.
    Addresses are compared by host (:func:`address_host`: ``10.0.0.1:50112`` and
    ``10.0.0.1:50113`` are one address); ``source_ip`` keeps each as logged.

    The reference is what most of the **same door session's** linked requests **in the same
    log** (``source``) carry: the principal among all of them; the address and the user agent
    among those made by the same principal.  A value is flagged (True) when it differs from the
    reference; a request naming no principal differs from one; an unknown address or user agent
    is compared with nothing (False).  Where two or more values are as common there is no
    reference: NA — which of them was the agent's is not known.  With the requests' times
    (``ns``, int64 ns), one role's sessions used one after another are one principal
    (:func:`_renewals`: renewed credentials).
    """
    logged_ip = pd.Series(np.asarray(ip, dtype=object), dtype=object)
    # compared by host: the port a client's connection came from is not another client
    ip_code, ip_names = _coded(logged_ip.map(address_host), str)
    ua_code, ua_names = _coded(user_agent, str)
    by_log = _combine(session, src_code)
    who, who_names = p_code, p_names
    if ns is not None:
        client = np.where((ip_code < 0) & (ua_code < 0), -1, _combine(ip_code, ua_code))
        who, who_names = _renewals(p_code, p_names, by_log, ns, client)
    ref_p, tie_p = _most_common(by_log, who, who_names)
    other_p = (ref_p >= 0) & (who != ref_p)
    na_p = tie_p != None  # noqa: E711 (elementwise)
    by_who = _combine(by_log, who)
    ref_ip, tie_ip = _most_common(by_who, ip_code, ip_names)
    ref_ua, tie_ua = _most_common(by_who, ua_code, ua_names)
    other_c = ((ip_code >= 0) & (ref_ip >= 0) & (ip_code != ref_ip)) | \
        ((ua_code >= 0) & (ref_ua >= 0) & (ua_code != ref_ua))
    na_c = ~other_c & (((ip_code >= 0) & (tie_ip != None)) | ((ua_code >= 0) & (tie_ua != None)))  # noqa: E711

    def named(codes: np.ndarray, names: list) -> np.ndarray:
        return np.array(list(names) + [None], dtype=object)[codes]

    cols = {"principal": _text(named(p_code, p_names)),
            "source_ip": _text(np.array([None if v is None or v is pd.NA else v for v in logged_ip], dtype=object)),
            "user_agent": _text(named(ua_code, ua_names)),
            "other_principal": pd.arrays.BooleanArray(other_p & ~na_p, na_p),
            "other_client": pd.arrays.BooleanArray(other_c, na_c)}
    return cols, {"ref_principal": named(ref_p, who_names), "ref_ip": named(ref_ip, ip_names),
                  "ref_ua": named(ref_ua, ua_names), "tied_principal": tie_p, "tied_ip": tie_ip, "tied_ua": tie_ua}


def _client_words(ip: str | None, ua: str | None) -> str:
    return ", ".join(x for x in (ip, ua) if x) or "unknown"


def call_notes(n_calls: int, link_call: Sequence[int], counts: Sequence[int], cols: Mapping, refs: Mapping,
               *, limit: int = 3) -> list[str | None]:
    """Per call (by position): what its linked requests show that the rest of its door session's
    do not — ``"1 of its 2 requests came from another address/client (203.0.113.66, curl/8.4.0)
    than most of its door session's requests by that principal in that log (198.51.100.20,
    boto3/1.35)"``, the same for another principal, and where the session's requests name no
    usual one (values as common: ``other_client`` / ``other_principal`` NA) which they are — or
    ``None``.  ``link_call`` gives each link's call; ``cols`` and ``refs`` are :func:`_clients`'
    two answers, in the same order.  At most ``limit`` values are named."""
    def flags(values) -> tuple[np.ndarray, np.ndarray]:
        b = pd.array(list(values) if isinstance(values, list) else values, dtype="boolean")
        return b.fillna(False).to_numpy(dtype=bool), np.asarray(b.isna(), dtype=bool)

    (oc, oc_na), (op, op_na) = flags(cols["other_client"]), flags(cols["other_principal"])
    flagged = np.flatnonzero(oc | op | oc_na | op_na)

    def at(values) -> list:  # the flagged links' values, None for NA
        return [None if v is None or v is pd.NA else v for v in np.asarray(values, dtype=object)[flagged].tolist()]

    ip, ua, who, r_ip, r_ua, r_p, t_ip, t_ua, t_p = (at(x) for x in (
        cols["source_ip"], cols["user_agent"], cols["principal"], refs["ref_ip"], refs["ref_ua"],
        refs["ref_principal"], refs["tied_ip"], refs["tied_ua"], refs["tied_principal"]))
    found: dict[int, dict[str, set]] = {}
    n_c: dict[int, int] = {}
    n_p: dict[int, int] = {}
    for j, k in enumerate(flagged.tolist()):
        i = int(link_call[k])
        d = found.setdefault(i, {"c": set(), "cr": set(), "p": set(), "pr": set(), "ct": set(), "pt": set()})
        n_c[i] = n_c.get(i, 0) + bool(oc[k])
        n_p[i] = n_p.get(i, 0) + bool(op[k])
        if oc[k]:
            d["c"].add(_client_words(ip[j], ua[j]))
            d["cr"].add(_client_words(r_ip[j], r_ua[j]))
        elif oc_na[k]:
            if ip[j] is not None and t_ip[j] is not None:
                d["ct"].add(f"addresses {t_ip[j]}")
            if ua[j] is not None and t_ua[j] is not None:
                d["ct"].add(f"user agents {t_ua[j]}")
        if op[k]:
            d["p"].add(who[j] if who[j] is not None else "no principal the log names")
            d["pr"].add(r_p[j])
        elif op_na[k]:
            d["pt"].add(t_p[j])

    def some(values: set) -> str:
        v = sorted(values)
        return "; ".join(v[:limit]) + (f"; {len(v) - limit} more" if len(v) > limit else "")

    out: list[str | None] = [None] * n_calls
    for i, d in found.items():
        total = int(counts[i])
        parts = []
        if n_c[i]:
            parts.append(f"{n_c[i]} of its {total} request{'' if total == 1 else 's'} came from another "
                         f"address/client ({some(d['c'])}) than most of its door session's requests by that principal "
                         f"in that log ({some(d['cr'])})")
        if d["ct"]:
            parts.append(f"its door session's requests by that principal in that log came as often from one address "
                         f"or user agent as from another ({some(d['ct'])}): which were the agent's is not known")
        if n_p[i]:
            parts.append(f"{n_p[i]} of its {total} request{'' if total == 1 else 's'} "
                         f"{'was' if n_p[i] == 1 else 'were'} made by another principal ({some(d['p'])}) than most of "
                         f"its door session's requests in that log ({some(d['pr'])})")
        if d["pt"]:
            parts.append(f"its door session's requests in that log were made as often by one principal as by another "
                         f"({some(d['pt'])}): which were the agent's is not known")
        out[i] = "; ".join(parts)
    return out
