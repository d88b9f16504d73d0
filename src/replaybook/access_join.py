"""Join door calls to the cloud's own access log: which storage request did each call cause,
and — first of all — which storage requests did **no** door call cause.

Inputs are the :data:`~replaybook.frames.CALLS` frame (what the door says it did) and the
:data:`~replaybook.frames.ACCESS` frame (what the cloud says happened: CloudTrail, S3 server
access logs, GCP audit logs, Azure Storage logs).  Each storage request is linked to **at most
one** call; a call may explain **many** requests (pagination, retries, a multipart read, a
folder listing followed by reads, a call on several objects).  Calls the door refused
(``decision == "deny"``) never explain an access: the door did not forward them, so a storage
request that matches only a refused call is reported as unexplained, with that call named.

One request, one row
--------------------
The logs may hold one request more than once: CloudTrail delivers every event at least once (the
same ``eventID`` twice, in one delivery file or two), S3 server access logs are best effort and
now and then deliver a record twice, and a bucket with CloudTrail data events *and* a server
access log has every request in both, under the same request id (S3's ``x-amz-request-id``).
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
3. ``principal+object+time`` — ``principals`` maps the call's agent to the cloud principal(s) it
   acts as, one of them matches the access row's ``principal``, the object matches and the time
   fits.  A request made by another principal (or by none the log names: SAS, anonymous)
   is not the agent's, however well object and time fit — the ``why`` says so.
4. ``object+time`` — no principal is known for the call's agent (no ``principals`` mapping, or
   the agent is not in it): object and time only.  Weaker evidence; the ``how`` column says so:
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

* equals the call's URI, or
* is that URI as a folder, or lies under it, and the access is a ``list`` or ``head``: a folder
  listing may page, recurse or stat its entries, and a client of object storage that stats
  ``k`` also looks for ``k/`` — but a **read, write or delete** of an object is only explained
  by a call on that very object, so an object read while the agent was "only listing" stays
  unexplained, or
* is a folder above the call's URI, the call's URI is itself a folder and the access is a
  ``list``: a coarser record of the same listing (GCS audit logs record a listing at bucket
  level, without its prefix).

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
the raw difference.

The result
----------
:class:`AccessJoinResult`: ``links`` (:data:`ACCESS_LINKS`, one row per linked request),
``unexplained`` (the requests no call explains, with ``why`` — sorted so that rows made by a
principal the door's agents use come first, then by time), ``per_call`` (every call with
``access_count``, ``access_bytes``, ``denied_count``), ``duplicates``
(:data:`ACCESS_DUPLICATES`), ``offset_s``.

Errors: :class:`~replaybook.errors.JoinError` for a frame missing required columns, a negative
window or an offset that is not a finite number.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import JoinError
from .frames import ACCESS, ACCESS_DUPLICATES, ACCESS_LINKS, UTC

__all__ = [
    "AccessJoinResult",
    "join_access",
    "map_object",
    "on_storage",
    "source_ip",
    "ACCESS_LINKS",
    "ACCESS_DUPLICATES",
    "LINK_HOWS",
    "TIME_RESOLUTION_S",
    "DEFAULT_WINDOW_S",
    "DEFAULT_LAG_S",
    "DEFAULT_SKEW_S",
    "DEFAULT_MAX_OFFSET_S",
    "MIN_OFFSET_REQUESTS",
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
            seconds, after the clock offset: negative when the request came first) — the last
            refused call started by the request's time, else the first after; NA when there is
            none — rows of door principals first, then by ``ts``.  A request the logs hold twice
            is listed once.
        per_call: one row per door call: ``door_session``, ``seq``, ``agent``, ``ts``,
            ``decision``, ``object``, ``call_uri`` (the object through ``storage_map``, NA when
            unmapped; a call on several objects reaches the others' URIs too),
            ``access_count`` (Int64, requests it explains), ``access_bytes`` (Int64, sum of their
            ``bytes`` that are known; NA when none logged a size), ``denied_count`` (Int64, of
            them refused by storage).
        duplicates: :data:`ACCESS_DUPLICATES`: the access rows that repeat a request another row
            holds (neither linked nor listed as unexplained: the row they repeat stands for them).
        window_s, lag_s, skew_s: the windows used, seconds.
        offset_s: the clock offset taken off every access time before it is compared with the
            calls', seconds: the cloud's clock minus the door's (positive: the door's clock is
            behind).  Measured by :func:`join_access` unless given; 0.0 when none was found.
        offset_requests: how many requests fit a call with ``offset_s`` applied — the evidence
            for a measured offset (0 when ``offset_s`` is 0).
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

    def to_dict(self) -> dict:
        """A JSON-ready summary: counts per tier, unexplained rows (short), duplicates, windows
        and the clock offset."""
        return {
            "window_s": self.window_s,
            "lag_s": self.lag_s,
            "skew_s": self.skew_s,
            "offset_s": self.offset_s,
            "offset_requests": self.offset_requests,
            "links": int(len(self.links)),
            "duplicates": int(len(self.duplicates)),
            "by_how": {k: int(v) for k, v in self.links["how"].value_counts().items()},
            "unexplained": [
                {"access_index": int(r.access_index), "ts": r.ts.isoformat().replace("+00:00", "Z"),
                 "source": r.source, "principal": None if pd.isna(r.principal) else r.principal,
                 "action": r.action, "resource_uri": None if pd.isna(r.resource_uri) else r.resource_uri,
                 "outcome": r.outcome, "why": r.why,
                 "refused_call": None if pd.isna(r.refused_session) else {
                     "door_session": r.refused_session, "seq": None if pd.isna(r.refused_seq) else int(r.refused_seq),
                     "rule": None if pd.isna(r.refused_rule) else r.refused_rule,
                     "since_refusal_s": float(r.since_refusal_s)}}
                for r in self.unexplained.itertuples(index=False)
            ],
        }


def source_ip(raw: Any) -> str | None:
    """The address a storage request came from, as its source logged it: CloudTrail
    ``sourceIPAddress``, S3 server access ``remote_ip``, GCP audit
    ``protoPayload.requestMetadata.callerIp``, Azure storage ``callerIpAddress`` (an Azure
    ``ip:port`` keeps its port); ``None`` when the record has none (or names a service, as
    CloudTrail does for AWS services)."""
    if raw is None:
        return None
    try:
        get = raw.get
    except AttributeError:
        return None
    v = get("sourceIPAddress") or get("remote_ip") or get("callerIpAddress")
    if v is None:
        pp = get("protoPayload")
        if isinstance(pp, dict):
            v = (pp.get("requestMetadata") or {}).get("callerIp")
    if not isinstance(v, str) or not v or v == "-" or v.endswith(".amazonaws.com"):
        return None
    return v


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


def _object_match(access_uri: str | None, access_action: str, call_uri: str | None) -> bool:
    """The access row's resource is what a call on ``call_uri`` reaches (module docstring,
    "Objects")."""
    if not access_uri or not call_uri:
        return False
    if access_uri == call_uri:
        return True
    if access_action in ("list", "head"):
        # a listing or stat of the folder the call names, or of what is in it: the call's URI
        # may name the folder without its slash (an object equal to a storage_map key written
        # so, or a stat that looks for both ``k`` and ``k/``, as file-system clients of object
        # storage do)
        folder = call_uri if call_uri.endswith("/") else call_uri + "/"
        if access_uri.startswith(folder):
            return True
    if access_action == "list" and access_uri.endswith("/") and call_uri.endswith("/") \
            and call_uri.startswith(access_uri):
        return True
    return False


def _principal_match(principal: str | None, patterns: Sequence[str]) -> bool:
    if not principal:
        return False
    return any(principal == p or fnmatch.fnmatchcase(principal, p) for p in patterns)


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
            ``fnmatch`` patterns (``"arn:aws:sts::123456789012:assumed-role/door-reader/*"``).
        window_s: assumed longest call when ``ts_end`` is missing, seconds (≥ 0).
        lag_s: slack after the call's end for ``completed``/``event`` timestamps, seconds (≥ 0).
        skew_s: clock skew allowed between the door and the cloud, seconds (≥ 0), on top of
            the clock offset.
        offset_s: the cloud's clock minus the door's, seconds, taken off every access time;
            ``None`` (default) measures it (module docstring, "Clocks"), ``0`` assumes none.
        max_offset_s: the largest offset measured, seconds (≥ 0; 0 measures none).

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
    _check(calls, _CALL_NEEDS, "calls")
    _check(access, ACCESS.names, "access")
    pats: dict[str, list[str]] = {}
    for agent, p in (principals or {}).items():
        pats[agent] = [p] if isinstance(p, str) else list(p)
    all_patterns = [p for ps in pats.values() for p in ps]

    # -- the calls ------------------------------------------------------------------------------
    c = calls.reset_index(drop=True)
    n_c = len(c)
    c_uri = [map_object(o, storage_map) for o in c["object"]]
    # every URI a call reaches: its object's and, for a call on several objects, the others'
    more = c["objects"] if "objects" in c.columns else None
    c_uris: list[list[str]] = []
    for i in range(n_c):
        us = [c_uri[i]] if c_uri[i] else []
        extra = more.iat[i] if more is not None else None
        if isinstance(extra, (list, tuple)):
            for o in extra:
                u = map_object(o, storage_map)
                if u and u not in us:
                    us.append(u)
        c_uris.append(us)
    c_start = c["ts"].astype(UTC)
    c_end = c["ts_end"].astype(UTC).where(c["ts_end"].notna(), c_start + pd.Timedelta(seconds=window_s))
    start_ns = c_start.to_numpy(dtype="datetime64[ns]").astype(np.int64) if n_c else np.zeros(0, np.int64)
    end_ns = c_end.to_numpy(dtype="datetime64[ns]").astype(np.int64) if n_c else np.zeros(0, np.int64)
    valid = c_start.notna().to_numpy() if n_c else np.zeros(0, bool)
    refused = (c["decision"].astype("string") == "deny").fillna(False).to_numpy(dtype=bool) if n_c else np.zeros(0, bool)
    agents = [None if pd.isna(a) else str(a) for a in c["agent"]] if n_c else []
    seqs = [0 if pd.isna(q) else int(q) for q in c["seq"]]
    sessions = [str(s) for s in c["door_session"]]
    corr = None
    if "correlation" in c.columns:
        corr = [None if pd.isna(x) or x == "" else str(x) for x in c["correlation"]]
    by_token: dict[str, list[int]] = {}
    for i, tok in enumerate(corr or []):
        if tok is not None:
            by_token.setdefault(tok, []).append(i)
    max_span = int(np.max(np.where(valid, end_ns - start_ns, 0))) if n_c else 0
    skew = int(round(skew_s * 1e9))
    lag = int(round(lag_s * 1e9))
    max_off = int(round(max_offset_s * 1e9))

    # calls by the URIs they reach, for the object match (:func:`_object_match`) without a scan
    by_uri: dict[str, list[int]] = {}
    folder_calls: list[tuple[str, int]] = []
    for i, us in enumerate(c_uris):
        for u in us:
            by_uri.setdefault(u, []).append(i)
            if u.endswith("/"):
                folder_calls.append((u, i))
    matched: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}

    def reaching(uri: str | None, action: str) -> tuple[np.ndarray, np.ndarray]:
        """``(calls, their start times)`` of the calls whose objects the access row's resource
        is (:func:`_object_match`), by start time; refused and untimed calls included."""
        key = (uri or "", action)
        got = matched.get(key)
        if got is not None:
            return got
        found: set[int] = set()
        if uri:
            found.update(by_uri.get(uri, ()))
            if action in ("list", "head"):
                cut = uri.find("://") + 3
                while True:  # every folder the resource lies in (or is), as a call may name it
                    cut = uri.find("/", cut) + 1
                    if cut <= 0:
                        break
                    folder = uri[:cut]
                    found.update(by_uri.get(folder, ()))
                    found.update(by_uri.get(folder[:-1], ()))
            if action == "list" and uri.endswith("/"):
                found.update(i for u, i in folder_calls if u.startswith(uri))
        idx = np.array(sorted(i for i in found if any(_object_match(uri, action, u) for u in c_uris[i])),
                       dtype=np.int64)
        st = np.where(valid[idx], start_ns[idx], np.iinfo(np.int64).max) if len(idx) else np.zeros(0, np.int64)
        o = np.argsort(st, kind="stable")
        got = matched[key] = (idx[o], st[o])
        return got

    def principal_ok(i: int, principal: str | None) -> bool:
        ag = agents[i]
        return ag is None or ag not in pats or _principal_match(principal, pats[ag])

    def fits(i: int, t: int, res: int, kind: str) -> bool:
        """The request (logged at ``t``, door clock, within ``res`` ns) fits call ``i``'s window."""
        if not valid[i]:
            return False
        if t > end_ns[i] + (skew if kind == "received" else lag + skew):
            return False
        lo = start_ns[i] - skew
        return t + res > lo if res else t >= lo

    def dist(i: int, t: int, res: int) -> int:
        """How far the request's time lies outside the call's own span (0: within it), ns."""
        return max(0, int(start_ns[i]) - (t + res)) + max(0, t - int(end_ns[i]))

    def rank(i: int, t: int, res: int) -> tuple[int, int, int, int]:
        return dist(i, t, res), abs(t + res // 2 - int(start_ns[i])), seqs[i], i

    def near(uri: str | None, action: str, t: int, res: int) -> np.ndarray:
        """Calls reaching the resource that started early enough to hold ``t``."""
        idx, st = reaching(uri, action)
        lo = np.searchsorted(st, t - max_span - lag - skew, "left")
        hi = np.searchsorted(st, t + res + skew, "right")
        return idx[lo:hi]

    # -- the access rows ------------------------------------------------------------------------
    recs = access[ACCESS.names].to_dict("records")
    labels = list(access.index)
    n_a = len(recs)
    a_ts = access["ts"].astype(UTC)
    a_ns = a_ts.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    a_nat = a_ts.isna().to_numpy()
    kinds = [str(r["time_kind"]) if not pd.isna(r["time_kind"]) else "event" for r in recs]
    uris = [None if pd.isna(r["resource_uri"]) else str(r["resource_uri"]) for r in recs]
    actions = [str(r["action"]) if not pd.isna(r["action"]) else "other" for r in recs]
    whos = [None if pd.isna(r["principal"]) else str(r["principal"]) for r in recs]
    res_ns = [0] * n_a
    for pos, r in enumerate(recs):
        step = TIME_RESOLUTION_S.get(str(r["source"]))
        if step and not a_nat[pos] and a_ns[pos] % int(step * 1e9) == 0:
            res_ns[pos] = int(step * 1e9)

    # the same request twice: a record delivered again, or the request in two logs
    copy_of = [-1] * n_a
    dups: list[dict] = []
    span = int(round((window_s + lag_s + 2 * skew_s) * 1e9))
    seen: dict[tuple, tuple[int, int]] = {}
    for pos in sorted(range(n_a), key=lambda p: (bool(a_nat[p]), 0 if a_nat[p] else int(a_ns[p]), p)):
        rid = recs[pos]["request_id"]
        if a_nat[pos] or pd.isna(rid) or str(rid) in ("", "-"):
            continue
        src = str(recs[pos]["source"])
        key = (_PROVIDER.get(src, src), str(rid), actions[pos], uris[pos])
        prev = seen.get(key)
        if prev is not None and int(a_ns[pos]) - prev[1] <= span:
            copy_of[pos] = prev[0]
            dups.append({"access_index": labels[pos], "same_as": labels[prev[0]], "source": src,
                         "request_id": str(rid), "ts": a_ts.iat[pos],
                         "how": "delivered again" if str(recs[prev[0]]["source"]) == src else "another log"})
        else:
            seen[key] = (pos, int(a_ns[pos]))

    # -- the clock offset ---------------------------------------------------------------------------
    evidence: list[tuple[int, int, str, list[int]]] = []  # (t, resolution, kind, calls) per request
    for pos in range(n_a):
        if copy_of[pos] >= 0 or a_nat[pos] or not on_storage(uris[pos]):
            continue
        t, res = int(a_ns[pos]), res_ns[pos]
        idx, st = reaching(uris[pos], actions[pos])
        lo = np.searchsorted(st, t - max_off - max_span - res, "left")
        hi = np.searchsorted(st, t + max_off, "right")
        if hi - lo > 4 * _OFFSET_CAP:
            continue
        cand = [int(i) for i in idx[lo:hi] if valid[i] and not refused[i] and principal_ok(int(i), whos[pos])]
        if cand and len(cand) <= _OFFSET_CAP:
            evidence.append((t, res, kinds[pos], cand))

    def fitting(off: int) -> int:
        return sum(any(fits(i, t - off, res, kind) for i in cand) for t, res, kind, cand in evidence)

    if offset_s is None:
        off = _measure_offset(evidence, start_ns, end_ns, max_off)
        if off:
            with_off, without = fitting(off), fitting(0)
            if with_off - without < MIN_OFFSET_REQUESTS or with_off < 2 * without:
                off = 0
    else:
        off = int(round(offset_s * 1e9))
    offset_requests = fitting(off) if off else 0

    # the calls the door refused, by object: a storage request on such an object that no call
    # explains is the one to read first (the agent was refused it, and it was reached anyway)
    def _refusal(uri: str | None, action: str, t: int) -> int | None:
        """The refused call on this object the request at ``t`` most likely follows: the last
        one started by ``t`` (clock skew allowed), else the first one after."""
        hits = [int(i) for i in reaching(uri, action)[0] if refused[i] and valid[i]]
        if not hits:
            return None
        before = [i for i in hits if start_ns[i] - skew <= t]
        return (max(before, key=lambda i: (int(start_ns[i]), -i)) if before
                else min(hits, key=lambda i: (int(start_ns[i]), i)))

    # -- each request ---------------------------------------------------------------------------
    linked: list[list] = []  # [pos, call, how, tied calls, t]
    unexplained: list[tuple[object, str, int | None, int | None]] = []  # (label, why, refused call, t)
    for pos in range(n_a):
        if copy_of[pos] >= 0:
            continue
        label, r = labels[pos], recs[pos]
        if a_nat[pos]:
            unexplained.append((label, "no time", None, None))
            continue
        t, res, kind = int(a_ns[pos]) - off, res_ns[pos], kinds[pos]
        uri, action, principal = uris[pos], actions[pos], whos[pos]
        token = None if pd.isna(r["correlation"]) else str(r["correlation"])
        chosen, how, why, pool = None, None, None, []

        tok_calls = by_token.get(token, []) if token is not None else []
        if tok_calls:
            usable = [i for i in tok_calls if not refused[i]]
            if len(tok_calls) == 1 and usable and fits(usable[0], t, res, kind):
                chosen, how, pool = usable[0], "correlation", [usable[0]]
            else:
                pool = [i for i in usable if fits(i, t, res, kind)
                        and any(_object_match(uri, action, u) for u in c_uris[i])]
                if pool:
                    chosen, how = min(pool, key=lambda i: rank(i, t, res)), "correlation+object+time"
                else:
                    sess = sorted({sessions[i] for i in tok_calls})
                    why = (f"correlation {token!r} belongs to door session(s) {', '.join(sess)}, "
                           f"but no allowed call there on this object within the window")
        else:
            tiered: dict[str, list[int]] = {"principal+object+time": [], "object+time": []}
            refused_hits: list[int] = []
            other_principal: list[int] = []  # fits in object and time, but acts as another principal
            for i in near(uri, action, t, res):
                i = int(i)
                if not fits(i, t, res, kind):
                    continue
                ag = agents[i]
                if ag is not None and ag in pats:
                    if not _principal_match(principal, pats[ag]):
                        if not refused[i]:
                            other_principal.append(i)
                        continue
                    tier = "principal+object+time"
                else:
                    tier = "object+time"
                if refused[i]:
                    refused_hits.append(i)
                    continue
                tiered[tier].append(i)
            for tier in ("principal+object+time", "object+time"):
                if tiered[tier]:
                    pool = tiered[tier]
                    chosen, how = min(pool, key=lambda i: rank(i, t, res)), tier
                    break
            if chosen is None:
                why = _why_unexplained(uri, action, t, principal, refused_hits, other_principal,
                                       reaching(uri, action)[0], rank=lambda i: rank(i, t, res),
                                       start_ns=start_ns, valid=valid, c=c, agents=agents,
                                       storage_map=storage_map, any_mapped=bool(by_uri),
                                       all_patterns=all_patterns)
        if chosen is None:
            unexplained.append((label, why or "no door call explains it", _refusal(uri, action, t), t))
            continue
        best = dist(chosen, t, res)
        tied = tuple(sorted((i for i in pool if dist(i, t, res) == best), key=lambda i: (int(start_ns[i]), seqs[i], i)))
        linked.append([pos, chosen, how, tied, t])

    # requests that several calls explain equally well are shared among them in time order: of
    # two reads of one object in one logged second by two sessions, each explains one — not one
    # both while the other explains none
    groups: dict[tuple, list[list]] = {}
    for item in linked:
        if len(item[3]) > 1:
            groups.setdefault((item[2], item[3]), []).append(item)
    for (_, tied), items in groups.items():
        items.sort(key=lambda it: (it[4], it[0]))
        n, m = len(items), len(tied)
        for k, it in enumerate(items):
            it[1] = tied[k * m // n]

    counts = np.zeros(n_c, np.int64)
    bytes_sum = np.zeros(n_c, np.int64)
    bytes_known = np.zeros(n_c, bool)  # some linked request logged its size
    denied = np.zeros(n_c, np.int64)
    links: list[dict] = []
    for pos, chosen, how, tied, _t in linked:
        r = recs[pos]
        counts[chosen] += 1
        b = r["bytes"]
        if not pd.isna(b):
            bytes_sum[chosen] += int(b)
            bytes_known[chosen] = True
        denied[chosen] += int(str(r["outcome"]) == "denied")
        links.append({
            "door_session": c["door_session"].iat[chosen],
            "call_seq": c["seq"].iat[chosen],
            "agent": agents[chosen],
            "access_index": labels[pos],
            "request_id": r["request_id"],
            "source": r["source"],
            "action": r["action"],
            "outcome": r["outcome"],
            "resource_uri": r["resource_uri"],
            "call_uri": next((u for u in c_uris[chosen] if _object_match(uris[pos], actions[pos], u)),
                             c_uri[chosen]),
            "call_ts": c_start.iat[chosen],
            "access_ts": a_ts.iat[pos],
            "time_kind": r["time_kind"],
            "delta_ms": (int(a_ns[pos]) - int(start_ns[chosen])) / 1e6,
            "how": how,
            "candidates": max(len(tied), 1),
        })

    links_df = ACCESS_LINKS.build(links) if links else ACCESS_LINKS.empty()
    if len(links_df):
        links_df = links_df.sort_values(["access_ts", "access_index"], kind="stable").reset_index(drop=True)

    labels_un = [u[0] for u in unexplained]
    un = access.loc[labels_un].reset_index(drop=True) if labels_un else ACCESS.empty()
    un = un[ACCESS.names].copy()
    un.insert(0, "access_index", pd.array(labels_un, dtype="Int64") if labels_un else pd.array([], dtype="Int64"))
    if all_patterns:
        dp = [_principal_match(None if pd.isna(p) else str(p), all_patterns) for p in un["principal"]]
        un["door_principal"] = pd.array(dp, dtype="boolean")
    else:
        un["door_principal"] = pd.array([pd.NA] * len(un), dtype="boolean")
    un["why"] = pd.array([u[1] for u in unexplained], dtype="string")
    ref = [u[2] for u in unexplained]
    rule = c["rule"] if "rule" in c.columns else pd.Series([pd.NA] * n_c, dtype="string")
    un["refused_session"] = pd.array([None if i is None else c["door_session"].iat[i] for i in ref], dtype="string")
    un["refused_seq"] = pd.array([None if i is None else c["seq"].iat[i] for i in ref], dtype="Int64")
    un["refused_rule"] = pd.array([None if i is None or pd.isna(rule.iat[i]) else str(rule.iat[i]) for i in ref],
                                  dtype="string")
    un["since_refusal_s"] = pd.array(
        [np.nan if u[2] is None else (u[3] - int(start_ns[u[2]])) / 1e9 for u in unexplained], dtype="float64")
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
    })
    dup_df = ACCESS_DUPLICATES.build(dups) if dups else ACCESS_DUPLICATES.empty()
    return AccessJoinResult(links=links_df, unexplained=un, per_call=per_call, window_s=float(window_s),
                            lag_s=float(lag_s), skew_s=float(skew_s), duplicates=dup_df,
                            offset_s=off / 1e9, offset_requests=int(offset_requests))


def _measure_offset(evidence: list[tuple[int, int, str, list[int]]], start_ns: np.ndarray, end_ns: np.ndarray,
                    max_off: int) -> int:
    """The clock offset (ns, cloud − door) that puts the most requests within the span of a
    call that could have made them, or 0.

    Each request (``t``, logged within ``res`` ns) fits call ``i`` for the offsets
    ``[t − end_i, t + res − start_i]`` (no skew or lag: the calls' own spans, so the estimate is
    sharp); the offsets where the most requests fit form one or more stretches, and the
    stretch nearest 0 gives its middle — 0 when it holds 0, or when nothing is within
    ``max_off``.  :func:`join_access` then applies it only when it fits enough requests more
    than no offset does (:data:`MIN_OFFSET_REQUESTS`).
    """
    if not evidence or max_off <= 0:
        return 0
    events: list[tuple[int, int]] = []  # (offset, 0 = a request starts fitting, 1 = stops)
    for t, res, _kind, cand in evidence:
        spans = sorted((max(t - int(end_ns[i]), -max_off), min(t + res - int(start_ns[i]), max_off)) for i in cand)
        merged: list[list[int]] = []
        for a, b in spans:
            if a > b:
                continue
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        for a, b in merged:
            events.append((a, 0))
            events.append((b, 1))
    if not events:
        return 0
    events.sort()
    cur = best = 0
    stretches: list[list] = []
    for x, kind in events:
        if kind == 0:
            cur += 1
            if cur > best:
                best, stretches = cur, [[x, None]]
            elif cur == best:
                stretches.append([x, None])
        else:
            if cur == best and stretches and stretches[-1][1] is None:
                stretches[-1][1] = x
            cur -= 1
    a, b = min(((a, b) for a, b in stretches if b is not None),
               key=lambda s: 0 if s[0] <= 0 <= s[1] else min(abs(s[0]), abs(s[1])))
    if a <= 0 <= b:
        return 0
    return (a + b) // 2


def _why_unexplained(uri: str | None, action: str, t: int, principal: str | None, refused_hits: list[int],
                     other_principal: list[int], same: np.ndarray, *, rank, start_ns: np.ndarray,
                     valid: np.ndarray, c: pd.DataFrame, agents: list, storage_map, any_mapped: bool,
                     all_patterns: list[str]) -> str:
    """Why no call explains an access row (``t`` on the door's clock; ``same``: the calls on
    its object at any time)."""
    if refused_hits:
        i = min(refused_hits, key=rank)
        return (f"only a call the door refused matches (session {c['door_session'].iat[i]} "
                f"seq {c['seq'].iat[i]}): the door says it did not forward it")
    if other_principal:
        i = min(other_principal, key=rank)
        who = principal if principal else "no principal the log names"
        return (f"a door call on this object fits the time (session {c['door_session'].iat[i]} seq "
                f"{c['seq'].iat[i]}), but the request was made by {who}, not a principal the door's agent "
                f"{agents[i]} acts as")
    if uri is None:
        return "no resource in the access record"
    same = [int(i) for i in same if valid[i]]
    targets = list((storage_map or {}).values())
    if not same and targets and not any(uri.startswith(tg) or tg.startswith(uri) for tg in targets):
        return "resource outside every storage_map target: no door call can reach it"
    if not same and not any_mapped:
        return UNMAPPED
    if not same:
        return "no door call on this object"
    i = min(same, key=lambda i: abs(t - int(start_ns[i])))
    near_rule = c["rule"].iat[i] if "rule" in c.columns else None
    what = (f", which the door refused{'' if pd.isna(near_rule) else f' (rule {near_rule})'}"
            if str(c["decision"].iat[i]) != "allow" else "")
    why = (f"no door call on this object within the time window (nearest: session "
           f"{c['door_session'].iat[i]} seq {c['seq'].iat[i]}{what}, "
           f"{_delta_words((t - int(start_ns[i])) / 1e9)} that call)")
    if all_patterns and not _principal_match(principal, all_patterns):
        why += "; the principal is not one the door's agents use"
    return why


def _delta_words(seconds: float) -> str:
    """``111 s after`` / ``2.5 s before`` (one decimal below 10 s, whole seconds above)."""
    a = abs(seconds)
    amount = f"{a:.1f}" if a < 10 else f"{a:,.0f}"
    return f"{amount} s {'after' if seconds >= 0 else 'before'}"
