"""Replay: reopen, in order, what the agent opened — and nothing it was refused.

A :class:`ReplayPlan` is the ordered list of a door session's calls, each turned into a
:class:`ReplayStep` that knows what to open: a folder the agent listed, an object it read or
queried.  A refused call opens nothing.  The plan is a plain object with a small state machine
(``idle → running ⇄ paused → finished | stopped``); the workbook's widget drives it with a timer
(:data:`DEFAULT_STEP_MS` per step) and renders what :meth:`ReplayPlan.advance` returns.  Paused,
it moves one step at a time (:meth:`ReplayPlan.step_forward`, :meth:`ReplayPlan.step_back`) and
resumes from the step it is on.  Replay asks nothing of the door's rules: it only follows the log.

Every path is resolved by :func:`resolve_in_root`, which refuses anything that would leave the
incident's data root (``..``, absolute paths, symlinks pointing outside).  Previews
(:func:`preview`) redact secret-looking values (:mod:`replaybook.redact`).  Where the door logged
a digest of the object it read (``object_digest``) and the file on disk now hashes differently,
the step says *changed since the run* instead of pretending to show what the agent saw.
Those digests are remembered while the file's ``stat`` is unchanged (:func:`file_digest`), so
a Replay run again over the same objects reads none of them again.

A file opened from the data root is the file as it is *now*, not as the call read it: every
preview of a call says so (:func:`as_now_caveat`), and says plainly when something shows it has
changed since — the door logged a different size for the call, or a later call in the incident
wrote to the same object (:func:`writes`, :class:`LaterWrites`).  Where an evidence store (a
capsule's) holds the response the door kept for the call (its ``response_digest``), Replay
shows that response instead (:func:`evidence_preview`): that is what the call got.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import re
import stat
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterable, Mapping, Sequence

import pandas as pd

from .errors import InputError, ReplaybookError
from .redact import redact_frame, redact_text

__all__ = [
    "copies_that_disagree",
    "table_difference",
    "DEFAULT_STEP_MS",
    "OutsideDataRoot",
    "UnresolvablePath",
    "ReplayStep",
    "ReplayPlan",
    "Preview",
    "resolve_in_root",
    "preview",
    "file_digest",
    "clear_digest_cache",
    "DIGEST_CACHE_SIZE",
    "WRITE_VERBS",
    "writes",
    "LaterWrites",
    "StorageWrites",
    "as_now_caveat",
    "named_writes",
    "evidence_preview",
    "kept_text",
    "kept_or_now",
]

#: Time Replay spends on each step, milliseconds.
DEFAULT_STEP_MS = 700

#: Tools whose object is a folder to list; others open their object as a file.
FOLDER_TOOLS = frozenset({"list_folder", "list_directory", "list", "ls", "list_objects", "list_dir"})

#: The first word of a tool name that makes it a write (:func:`writes`).  The door logs no
#: effect of its own (its rules decide allow / ask / deny, not read / write), so Replay goes by
#: the tool's name: ``update_deployment_rule``, ``write_file``, ``delete_object`` write;
#: ``read_config``, ``diff_rule``, ``list_rule_history`` — and any verb not listed here — do not.
WRITE_VERBS = frozenset({
    "add", "alter", "append", "apply", "commit", "create", "delete", "deploy", "drop", "edit", "insert",
    "merge", "modify", "move", "mv", "overwrite", "patch", "post", "push", "put", "remove", "rename",
    "replace", "reset", "restore", "revert", "rm", "save", "set", "truncate", "update", "upload",
    "upsert", "write"})


def writes(tool) -> bool:
    """The tool writes to its object, by its name: its first word (``update`` of
    ``update_deployment_rule``; camelCase and ``-``/``.`` split like ``_``; a client's
    ``mcp__server__`` prefix and a ``server/`` prefix dropped) is one of :data:`WRITE_VERBS`.
    A name that does not say is not counted as a write (Replay then says it *opens* the object)."""
    if tool is None or _na(tool):
        return False
    name = str(tool).split("/")[-1].split("__")[-1]
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    first = re.split(r"[_\-.\s]+", name.strip("_-. "), maxsplit=1)[0]
    return first in WRITE_VERBS


class LaterWrites:
    """The allowed write calls (:func:`writes`) of a calls frame, by object, to ask which call
    wrote to an object after a given time (across every door session of the incident).

    Args:
        calls: a :data:`~replaybook.frames.CALLS` frame (``ts`` UTC, ``door_session``, ``seq``,
            ``tool``, ``object``, ``decision``).
    """

    def __init__(self, calls: pd.DataFrame):
        self._by_object: dict[str, list[tuple]] = {}
        self._ts: dict[str, list] = {}
        if calls is None or not len(calls):
            return
        c = calls[(calls["decision"].astype("string") == "allow").fillna(False).to_numpy(bool)
                  & calls["object"].notna().to_numpy(bool) & calls["ts"].notna().to_numpy(bool)]
        c = c[[writes(t) for t in c["tool"]]] if len(c) else c
        for r in c.sort_values(["ts", "seq"], kind="stable").itertuples(index=False):
            self._by_object.setdefault(str(r.object), []).append(
                (pd.Timestamp(r.ts), str(r.door_session), None if _na(r.seq) else int(r.seq), str(r.tool)))

    def after(self, obj, ts) -> tuple | None:
        """The first write to ``obj`` strictly after ``ts``: ``(ts, door_session, seq, tool)``,
        or ``None``."""
        if obj is None or _na(obj) or ts is None or _na(ts):
            return None
        ws = self._by_object.get(str(obj))
        if not ws:
            return None
        i = bisect.bisect_right(self._times(str(obj)), pd.Timestamp(ts))
        return ws[i] if i < len(ws) else None

    def _times(self, obj: str) -> list:
        """The write times of ``obj``, sorted (remembered: a long session asks for every step)."""
        got = self._ts.get(obj)
        if got is None:
            got = self._ts[obj] = [w[0] for w in self._by_object[obj]]
        return got


class StorageWrites:
    """The writes and deletes the cloud's own logs hold on the storage an object maps to, to ask
    which one came after a given time — whoever made it (a person's edit, a pipeline's reload, the
    agent through another path): what shows the object changed after the agent read it, where no
    door call wrote to it.

    Args:
        access: an :data:`~replaybook.frames.ACCESS` frame (``ts`` UTC, ``action``,
            ``resource_uri``, ``outcome``, ``principal``, ``principal_name``, ``action_raw``,
            ``source_file``, ``line_no``, ``request_id``); only ``write``/``delete`` rows storage
            allowed count, and a request two records hold (one request id on one resource: in
            CloudTrail and the server access log, or delivered twice) counts once — its first
            record, and the door call that explains either copy.
        storage_map: the incident's ``storage_map`` (door object → storage URI,
            :func:`replaybook.access_join.map_object`).
        offset_s: the cloud's clock minus the door's, seconds
            (:attr:`replaybook.access_join.AccessJoinResult.offset_s`): taken off each request's
            time before it is compared with a call's.
        links: the access join's links (``access_index``, ``door_session``, ``call_seq``): which
            door call explains each write.
        records: the ``source_file`` values whose ``line_no`` is a record's place in a
            whole-file JSON document, not a line
            (:attr:`replaybook.incident.Incident.access_record_files`): where such a write is
            logged reads ``file record N``, not ``file:N``.
    """

    def __init__(self, access: pd.DataFrame | None, storage_map: dict | None, offset_s: float = 0.0,
                 links: pd.DataFrame | None = None, records: Iterable[str] = ()):
        self._map = storage_map or {}
        # with the access join's links: which door call explains each write (the agent's own),
        # "" for a write none explains (someone else, or the agent around the door)
        by_call = None
        if links is not None:
            by_call = {int(i): f"{d} #{q}" for i, d, q in zip(links["access_index"], links["door_session"],
                                                            links["call_seq"]) if not _na(i)}
        self._by_uri: dict[str, list[tuple]] = {}
        records = {str(r) for r in records}
        if access is None or not len(access) or not self._map:
            return
        a = access[access["action"].astype("string").isin(["write", "delete"]).fillna(False).to_numpy(bool)
                   & (access["outcome"].astype("string") == "allowed").fillna(False).to_numpy(bool)
                   & access["ts"].notna().to_numpy(bool) & access["resource_uri"].notna().to_numpy(bool)]
        shift = pd.Timedelta(seconds=float(offset_s or 0.0))
        name = a["principal_name"] if "principal_name" in a.columns else pd.Series([None] * len(a), index=a.index)
        rid = a["request_id"] if "request_id" in a.columns else pd.Series([None] * len(a), index=a.index)
        # one request, one write: a bucket with CloudTrail data events and a server access log
        # holds each request in both (and a log may deliver a record twice), under one request id
        seen: dict[tuple, int] = {}
        order = a.assign(_label=a.index).sort_values(["ts", "_label"], kind="stable")
        for label, ts, uri, who, nm, op, f, ln, r in zip(order.index, order["ts"], order["resource_uri"],
                                                         order["principal"], name.loc[order.index],
                                                         order["action_raw"], order["source_file"], order["line_no"],
                                                         rid.loc[order.index]):
            door = None if by_call is None else by_call.get(int(label), "")
            ws = self._by_uri.setdefault(str(uri), [])
            key = None if _na(r) or str(r) in ("", "-") else (str(uri), str(r))
            if key is not None and key in seen:
                i = seen[key]
                if door and not ws[i][4]:  # the copy a door call explains: the agent's own
                    ws[i] = ws[i][:4] + (door,)
                continue
            shown = (None if _na(who) else str(who)) if _na(nm) else (str(nm) if _na(who) else f"{who} ({nm})")
            where = (None if _na(f) else os.path.basename(str(f))
                     + ("" if _na(ln) else f" record {int(ln)}" if str(f) in records else f":{int(ln)}"))
            if key is not None:
                seen[key] = len(ws)
            ws.append((pd.Timestamp(ts) - shift, shown, None if _na(op) else str(op), where, door))

    def after(self, obj, ts) -> tuple | None:
        """The first allowed storage write or delete on ``obj``'s storage URI strictly after
        ``ts`` (the door's clock): ``(ts on the door's clock, principal shown, operation, where
        logged — ``file:line``, or ``file record N`` for a file among ``records`` —, door call)``
        — the door call that explains it (``"<session> #<seq>"``), ``""`` when none does,
        ``None`` without ``links`` —, or ``None`` (also when ``obj`` maps to no URI)."""
        if obj is None or _na(obj) or ts is None or _na(ts) or not self._by_uri:
            return None
        from .access_join import map_object

        uri = map_object(str(obj), self._map)
        ws = self._by_uri.get(uri) if uri else None
        if not ws:
            return None
        i = bisect.bisect_right([w[0] for w in ws], pd.Timestamp(ts))
        return ws[i] if i < len(ws) else None

    def all_after(self, obj, ts) -> list[tuple]:
        """Every allowed storage write or delete on ``obj``'s storage URI strictly after ``ts``
        (the door's clock), in time order, each as :meth:`after` gives one — the agent's own and
        everyone else's: the last is the one the file as it is now reflects (unless a write the
        logs do not hold came after).  ``[]`` when there is none or ``obj`` maps to no URI."""
        if obj is None or _na(obj) or ts is None or _na(ts) or not self._by_uri:
            return []
        from .access_join import map_object

        uri = map_object(str(obj), self._map)
        ws = self._by_uri.get(uri) if uri else None
        if not ws:
            return []
        return ws[bisect.bisect_right([w[0] for w in ws], pd.Timestamp(ts)):]


#: suffixes of table files that are text: a tool that reads such a file whole answers its bytes
_TEXT_TABLES = (".csv", ".tsv", ".json", ".jsonl", ".ndjson", ".txt")


def as_now_caveat(*, tool=None, logged_bytes=None, size_now=None, later_write: tuple | None = None,
                  door_session: str | None = None, kind: str = "text", damaged: str | None = None,
                  none_if_plain: bool = False, storage_write: tuple | None = None, obj=None,
                  storage_writes: Sequence[tuple] | None = None, digest_differs: bool = False) -> str | None:
    """What a preview of a call's object must say about when the file is from (plain text).

    Always: the file is shown as it is now, not as the call read it (or, for a write, as it is
    now, after it).  Then, plainly, what shows it has changed since: ``later_write`` (from
    :meth:`LaterWrites.after`: ``the agent's update_deployment_rule call #2 wrote to it at
    14:00:40.300 UTC``, naming its session when it is not ``door_session``), and the size the
    door logged for the call (``bytes``) against ``size_now`` (bytes on disk) when they differ,
    and ``storage_write`` (from :meth:`StorageWrites.after`: the cloud's log holds a write to its
    storage after the call, by whom and where it is logged); ``storage_writes`` (from
    :meth:`StorageWrites.all_after`, given instead): every such write in time order — the agent's
    and a person's — each by whom, and which one the file as it is now reflects (the last).
    The door's ``bytes`` is the size of the answer, compared for a file (``kind`` ``text``,
    ``table`` or ``binary``, as :func:`preview` found it; not a folder).  For a text file (a
    table whose ``obj`` is a CSV, TSV or JSON file included) and a tool that reads its object whole (``read_…``, ``get_…``, ``cat``…), a different size says the
    file changed; otherwise it is said as a difference only (a diff, a summary, a table's rows as
    JSON or a write's answer is not the file).  ``damaged``: why a response the door kept could
    not be shown (:func:`evidence_preview` raised), said first.  ``none_if_plain``: ``None`` when
    there is nothing to say beyond the first sentence (for a table whose every file is today's).
    ``digest_differs``: the file's bytes no longer hash to the ``object_digest`` the door logged
    for the call (a file, not a folder) — it has changed since, said before the sizes.
    """
    wrote = writes(tool)
    if kind == "table" and obj is not None and not _na(obj) and str(obj).lower().endswith(_TEXT_TABLES):
        kind = "text"  # a CSV read whole is its text: a different size says it changed
    parts = ["Shown as it is on disk now, not as the call read it" if not wrote else
             "Shown as it is on disk now: this call wrote to it, and the file may have changed again since"]
    lb = None if logged_bytes is None or _na(logged_bytes) else int(logged_bytes)
    said_changed = False
    if digest_differs and kind in ("text", "table", "binary"):
        parts.append("its bytes no longer hash to the digest the door logged for this call, so it has changed since")
        said_changed = True
    if kind in ("text", "table", "binary") and lb is not None and size_now is not None and lb != int(size_now):
        said = f"the door logged {lb:,} bytes for this call; the file is {int(size_now):,} bytes now"
        if said_changed:
            pass  # (the digest said it)
        elif wrote:
            said += " (a write's answer is not the file: no sign it changed)"
        elif kind == "text" and _reads_whole(tool):
            said += ": it has changed since"
            said_changed = True
        else:
            said += f" (what {tool} answered need not be the file itself: no sign it changed)"
        parts.append(said)
    if later_write is not None:
        wts, wds, wseq, wtool = later_write
        where = "" if door_session is not None and wds == str(door_session) else f" in door session {wds}"
        when = pd.Timestamp(wts).tz_convert("UTC").strftime("%H:%M:%S.%f")[:-3]
        parts.append(f"a later call wrote to it ({wtool} #{wseq}{where} at {when} UTC)"
                     + ("" if said_changed else ", so it has changed since this call"))
        said_changed = True
    sws = list(storage_writes) if storage_writes is not None else [storage_write] if storage_write is not None else []
    if len(sws) == 1:
        parts.append(f"the storage's own log holds a later {_storage_write_words(sws[0])}"
                     + ("" if said_changed else ", so it has likely changed since this call"))
    elif sws:
        shown, n_more = named_writes(sws)
        parts.append(f"the storage's own log holds {len(sws):,} later writes of it"
                     + (f" ({n_more:,} not named here: each principal's last is)" if n_more else "")
                     + ": " + "; then ".join(_storage_write_words(w, first=False) for w in shown)
                     + f" — the file on disk now is the last of these, {sws[-1][2] or 'write'}"
                     + (f" by {sws[-1][1]}" if sws[-1][1] else "")
                     + f" at {pd.Timestamp(sws[-1][0]).tz_convert('UTC').strftime('%H:%M:%S.%f')[:-3]} UTC "
                     "(unless a write the logs do not hold came after)")
    if none_if_plain and len(parts) == 1 and not damaged:
        return None
    return (f"{damaged[:1].upper()}{damaged[1:]}. " if damaged else "") + "; ".join(parts) + "."


def _storage_write_words(w: tuple, *, first: bool = True) -> str:
    """One :meth:`StorageWrites.after` write in words: ``PutObject of it by jane@… at
    09:20:00.000 UTC (door clock), trail.json:4, which no door call explains`` (without ``of
    it`` when not ``first``)."""
    sts, who, op, at, *rest = w
    door = rest[0] if rest else None
    when = pd.Timestamp(sts).tz_convert("UTC").strftime("%H:%M:%S.%f")[:-3]
    by_door = ("" if door is None else f", the agent's own: door call {door} explains it" if door
               else ", which no door call explains")
    return (f"{op or 'write'}{' of it' if first else ''}{f' by {who}' if who else ''} at {when} UTC (door clock)"
            f"{f', {at}' if at else ''}{by_door}")


#: At most this many later storage writes of one object are named one by one; beyond it, the
#: last of each principal's (:func:`named_writes`).
NAMED_WRITES = 4


def named_writes(writes: Sequence, key=None) -> tuple[list, int]:
    """Which of an object's later writes (time order) to name: all of them up to
    :data:`NAMED_WRITES`, else the last write of each principal (the agent's own through the
    door apart from the same principal's that no door call explains), in time order — the last
    write of all is always among them.  ``key``: a write's ``(principal, door call)``; by default
    a :meth:`StorageWrites.after` tuple's.  Returns ``(named, how many are not)``."""
    ws = list(writes)
    if len(ws) <= NAMED_WRITES:
        return ws, 0
    key = key or (lambda w: (w[1], bool(w[4]) if len(w) > 4 and w[4] is not None else None))
    last: dict = {}
    for i, w in enumerate(ws):
        last[key(w)] = i
    keep = sorted(last.values())
    return [ws[i] for i in keep], len(ws) - len(keep)


#: First words of a tool whose answer is its object's content (a different size then means a
#: different file): ``read_config``, ``get_file``, ``cat``.
_READS_WHOLE = frozenset({"read", "get", "cat", "open", "fetch", "download", "load"})


def _reads_whole(tool) -> bool:
    if tool is None or _na(tool):
        return False
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(tool).split("/")[-1].split("__")[-1]).lower()
    return re.split(r"[_\-.\s]+", name.strip("_-. "), maxsplit=1)[0] in _READS_WHOLE


def evidence_preview(store, digest, obj: str | None, *, max_lines: int = 40, max_bytes: int = 64 * 1024,
                     where: str = "the evidence store") -> "Preview | None":
    """The response the door kept for a call (``response_digest`` in ``store``, an
    :class:`~replaybook.capsule.store.EvidenceStore`), as a ``text`` :class:`Preview` — what the
    call got, not the file as it is now: the text blocks of the JSON-RPC ``result`` (joined), or
    the kept JSON itself; secrets redacted.  Its ``caveat`` names the digest and ``where`` it
    was found.  ``None`` when there is no store or digest, or the store does not hold it.

    Raises:
        replaybook.capsule.errors.CapsuleError: the stored object cannot be read or its bytes do
            not hash to ``digest`` (``IntegrityError``); :func:`kept_or_now` says so in the pane.
    """
    if store is None or digest is None or _na(digest) or not store.has(str(digest)):
        return None
    import json

    data = store.get(str(digest))
    whole = kept_text(data, max_bytes)
    lines = whole[:max_bytes].splitlines()
    text = "\n".join(lines[:max_lines])
    red, fired = redact_text(text)
    short = str(digest)[:19] + "…"
    return Preview("text", "" if obj is None else str(obj), text=red, size=len(data), redactions=fired,
                   source="evidence", cut=len(lines) > max_lines or len(whole) > max_bytes or len(data) > max_bytes,
                   caveat=f"The response the door kept for this call ({short}, in {where}): what the call got, "
                          "not the file as it is now.")

def kept_text(data: bytes, max_bytes: int | None = None) -> str:
    """The text of a kept MCP response (the bytes a door kept under ``response_digest``): its
    ``result``'s text blocks joined with newlines, as a client shows them to the model; the JSON
    itself (its first ``max_bytes``, decoded) when it has none.  Not redacted."""
    import json

    text = (data if max_bytes is None else data[:max_bytes]).decode("utf-8", "replace")
    try:
        doc = json.loads(data)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("content"), list):
        texts = [b.get("text") for b in doc["content"] if isinstance(b, dict) and isinstance(b.get("text"), str)]
        if texts:
            text = "\n".join(texts)
    return text


def kept_or_now(data_root, obj, *, tool=None, logged_bytes=None, later_write=None, door_session=None,
                evidence=None, response_digest=None, evidence_where: str = "the evidence store",
                object_digest=None) -> "Preview":
    """What a call's preview shows: the response the door kept (:func:`evidence_preview`) when
    ``evidence`` holds ``response_digest`` and the tool does not write; else ``obj`` as it is now
    (:func:`preview`) with :func:`as_now_caveat` — which says so first when the kept response
    could not be read or is damaged (its bytes no longer hash to the digest), and that the file
    has changed since when it no longer hashes to ``object_digest`` (the digest the door logged
    of the object the call read, ``sha256:<hex>``; :func:`file_digest`)."""
    from .capsule.errors import CapsuleError

    damaged = None
    if evidence is not None and not writes(tool):
        try:
            kept = evidence_preview(evidence, response_digest, obj, where=evidence_where)
        except (CapsuleError, OSError) as exc:
            kept = None
            damaged = f"the response the door kept for this call could not be shown ({exc})"
        if kept is not None:
            return kept
    if data_root is None:
        return Preview("missing", "" if obj is None else str(obj), text="the incident names no data root",
                       caveat=None if damaged is None else f"{damaged[:1].upper()}{damaged[1:]}.")
    pv = preview(data_root, obj)
    differs = False
    if pv.kind in ("text", "table", "binary") and object_digest is not None and not _na(object_digest):
        try:
            differs = file_digest(resolve_in_root(data_root, obj)) != str(object_digest)
        except (OSError, OutsideDataRoot):  # (not a regular file, gone since: nothing to compare)
            differs = False
    if pv.kind in ("text", "table", "binary", "folder"):
        pv.caveat = as_now_caveat(tool=tool, logged_bytes=logged_bytes, size_now=pv.size, later_write=later_write, obj=obj,
                                  door_session=door_session, kind=pv.kind, damaged=damaged, digest_differs=differs)
    elif damaged:
        pv.caveat = f"{damaged[:1].upper()}{damaged[1:]}."
    return pv


def _whole(read):
    """A reader that loads the whole file: its first ``n`` rows and how many rows it holds."""
    def head_and_rows(p, n):
        df = read(p)
        return df.head(n), len(df)
    return head_and_rows


def _first(read):
    """A reader that stops after ``n`` rows (the file's row count is not known)."""
    return lambda p, n: (read(p, n), None)


#: text tables up to this size (bytes) are read through once more to count their rows
COUNT_ROWS_UP_TO = 64 * 2**20


def _counted(read, count):
    """A reader that stops after ``n`` rows, then counts the file's rows with ``count(path)``
    when the file is at most :data:`COUNT_ROWS_UP_TO` bytes (else the count is not known)."""
    def head_and_rows(p, n):
        head = read(p, n)
        return head, (count(p) if Path(p).stat().st_size <= COUNT_ROWS_UP_TO else None)
    return head_and_rows


def _csv_rows(p, sep: str = ",") -> int:
    """Data rows of a delimited text file as pandas reads it: quoted line breaks stay inside
    their row, blank lines are not rows, the first row is the header."""
    import csv

    with open(p, newline="", encoding="utf-8", errors="replace") as fh:
        rows = sum(1 for r in csv.reader(fh, delimiter=sep) if r)
    return max(rows - 1, 0)


def _jsonl_rows(p) -> int:
    """Non-blank lines of a JSON Lines file."""
    with open(p, "rb") as fh:
        return sum(1 for line in fh if line.strip())


def _small(read):
    """A reader that loads the whole file, refusing one over :data:`COUNT_ROWS_UP_TO` bytes
    (JSON cannot be read in part: a 2 GB file would fill the kernel's memory)."""
    whole = _whole(read)

    def head_and_rows(p, n):
        size = Path(p).stat().st_size
        if size > COUNT_ROWS_UP_TO:
            raise ValueError(f"{size:,} bytes is too large to read whole for a preview")
        return whole(p, n)
    return head_and_rows


def _parquet_head(p, n):
    """The first ``n`` rows of a Parquet file, read batch by batch (never the whole file), and
    its row count from the footer."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = pq.ParquetFile(p)
    batches, got = [], 0
    for b in f.iter_batches(batch_size=max(int(n), 1)):
        batches.append(b)
        got += b.num_rows
        if got >= n:
            break
    t = pa.Table.from_batches(batches, schema=f.schema_arrow) if batches else f.schema_arrow.empty_table()
    return t.slice(0, n).to_pandas(), f.metadata.num_rows


def _sas_head(fmt: str):
    """The first ``n`` rows of a SAS file (read chunk by chunk) and its row count from the header."""
    def head_and_rows(p, n):
        with pd.read_sas(p, format=fmt, encoding="infer", chunksize=max(int(n), 1)) as r:
            rows = getattr(r, "row_count", None) if fmt == "sas7bdat" else getattr(r, "nobs", None)
            return r.read(n), rows
    return head_and_rows


def _stata_head(p, n):
    """The first ``n`` rows of a Stata file; its rows counted by reading it whole only up to
    :data:`COUNT_ROWS_UP_TO` bytes."""
    if Path(p).stat().st_size <= COUNT_ROWS_UP_TO:
        return _whole(pd.read_stata)(p, n)
    with pd.read_stata(p, iterator=True) as r:
        return r.read(n), None


#: suffix → ``reader(path, n) -> (first n rows, rows in the file or None)``; none of them reads
#: a large file whole
_TABLE_READERS = {
    ".csv": _counted(lambda p, n: pd.read_csv(p, nrows=n), _csv_rows),
    ".tsv": _counted(lambda p, n: pd.read_csv(p, sep="\t", nrows=n), lambda p: _csv_rows(p, "\t")),
    ".parquet": _parquet_head,
    ".json": _small(pd.read_json),
    ".jsonl": _counted(lambda p, n: pd.read_json(p, lines=True, nrows=n), _jsonl_rows),
    ".xlsx": _first(lambda p, n: pd.read_excel(p, nrows=n)),
    ".xls": _first(lambda p, n: pd.read_excel(p, nrows=n)),
    ".sas7bdat": _sas_head("sas7bdat"),
    ".xpt": _sas_head("xport"),
    ".dta": _stata_head,
}


class OutsideDataRoot(ReplaybookError):
    """A path would resolve outside the incident's data root (``..``, absolute, symlink out)."""


class UnresolvablePath(OutsideDataRoot):
    """A path no file can have or that cannot be resolved (a NUL byte, a symlink loop): it cannot
    be placed inside the data root, so it is treated as outside it and never opened."""


def resolve_in_root(data_root: str | Path, obj: str) -> Path:
    """Resolve a door ``object`` path inside ``data_root``, refusing anything that leaves it.

    Args:
        data_root: the incident's data root folder.
        obj: the object as the door logged it (POSIX-style, relative to the data root).

    Returns:
        The resolved absolute path (which may not exist).

    Raises:
        OutsideDataRoot: ``obj`` is absolute, contains ``..``, or resolves (through symlinks)
            outside ``data_root``.
        UnresolvablePath: (an :class:`OutsideDataRoot`) ``obj`` holds a NUL byte or runs into a
            symlink loop.
    """
    if obj is None or str(obj).strip() == "":
        raise OutsideDataRoot("empty object path")
    s = str(obj)
    pp = PurePosixPath(s.replace("\\", "/"))
    # a Windows drive (C:\x, C:/x, C:): a name that merely holds a colon second (a:b.csv, legal
    # on POSIX) is a file in the data root — it had been refused as "an absolute path"
    drive = len(s) > 1 and s[1] == ":" and s[0].isascii() and s[0].isalpha() and (len(s) == 2 or s[2] in "/\\")
    if pp.is_absolute() or s.startswith(("/", "\\")) or drive:
        raise OutsideDataRoot(f"{s!r} is an absolute path; Replay opens only paths inside the data root")
    if ".." in pp.parts:
        raise OutsideDataRoot(f"{s!r} climbs out with '..'; Replay opens only paths inside the data root")
    if "\x00" in s:
        raise UnresolvablePath(f"{s!r} holds a NUL byte: no file on disk has that name")
    root = Path(data_root).resolve()
    try:
        target = (root / Path(*pp.parts)).resolve() if pp.parts else root
    except (OSError, RuntimeError) as exc:  # a symlink loop (RuntimeError before Python 3.13)
        raise UnresolvablePath(f"{s!r} cannot be resolved: {exc}") from None
    if target != root and root not in target.parents:
        raise OutsideDataRoot(f"{s!r} resolves to {target}, outside the data root {root} (a symlink?)")
    return target


#: Digests already computed, newest last: :func:`file_digest` key → ``sha256:<hex>``.
_DIGESTS: "OrderedDict[tuple, str]" = OrderedDict()
_DIGESTS_LOCK = threading.Lock()
#: How many digests :func:`file_digest` remembers (an entry is ~200 bytes; the least recently
#: used goes first).
DIGEST_CACHE_SIZE = 65_536


#: A file whose status last changed less than this long ago (ns) is hashed but its digest not
#: remembered: the file system stamps times with a coarse clock, so a write in the same tick
#: right after the hash would leave ``mtime`` and ``ctime`` as they were (git's "racily clean").
RECENT_NS = 2 * 10**9


def _digest_key(path: str, st: os.stat_result) -> tuple:
    """What must be unchanged for a remembered digest to stand: the path, the file's device and
    inode, its size, and its modification and status-change times (ns)."""
    return (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _sha256_of(fh) -> str:
    """``sha256:<hex>`` of everything ``fh`` (a binary file) holds from where it is, read 1 MiB
    at a time."""
    h = hashlib.sha256()
    for chunk in iter(lambda: fh.read(1 << 20), b""):
        h.update(chunk)
    return "sha256:" + h.hexdigest()


def file_digest(path: str | Path, *, cache: bool = True) -> str:
    """``sha256:<hex>`` of a file's bytes (read-only, streamed).

    A digest is remembered (for the life of the process, up to :data:`DIGEST_CACHE_SIZE`) under
    the file's absolute path, device, inode, size, ``st_mtime_ns`` and ``st_ctime_ns``: asked
    again while ``stat`` says all of these are the same, it is answered without reading the
    file, so a second Replay over the same objects hashes nothing.  A file written since — in
    place or replaced, even to the same size — is read again: writing changes its ``ctime``,
    which (unlike ``mtime``, which ``touch -d``, ``cp -p`` or ``rsync -t`` put back) no call
    can set back.  Not remembered: a file that changed while it was hashed, or whose times are
    less than :data:`RECENT_NS` old (a write in the same clock tick would not show in them).

    Args:
        path: the file.
        cache: ``False`` reads the file whatever is remembered (and remembers nothing).

    Raises:
        OSError: ``path`` cannot be read, or is not a regular file (a named pipe is opened
            without waiting for a writer, and refused).
    """
    p = os.path.abspath(os.fspath(path))
    st = os.stat(p)
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"{path} is not a regular file: not read")
    if cache:
        with _DIGESTS_LOCK:
            hit = _DIGESTS.get(_digest_key(p, st))
            if hit is not None:
                _DIGESTS.move_to_end(_digest_key(p, st))
                return hit
    # O_NONBLOCK: had the file become a named pipe since the stat, opening it would wait for a writer
    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with os.fdopen(fd, "rb") as fh:
        before = os.fstat(fh.fileno())
        if not stat.S_ISREG(before.st_mode):
            raise OSError(f"{path} is not a regular file: not read")
        digest = _sha256_of(fh)
        after = os.fstat(fh.fileno())
    settled = time.time_ns() - max(after.st_ctime_ns, after.st_mtime_ns) >= RECENT_NS
    if cache and settled and _digest_key(p, before) == _digest_key(p, after):
        with _DIGESTS_LOCK:
            _DIGESTS[_digest_key(p, after)] = digest
            while len(_DIGESTS) > DIGEST_CACHE_SIZE:
                _DIGESTS.popitem(last=False)
    return digest


def clear_digest_cache() -> None:
    """Forget every digest :func:`file_digest` remembers."""
    with _DIGESTS_LOCK:
        _DIGESTS.clear()


@dataclass
class Preview:
    """What Replay or the object pane shows for one object.

    Attributes:
        kind: ``folder`` (``table`` lists entries), ``table`` (head of a data file), ``text``
            (first lines), ``binary`` (size only), ``missing``, ``refused``, ``asked`` (a call
            whose rule asked the user), ``outside``.
        path: the object path as logged.
        table: a DataFrame for ``folder``/``table`` kinds (secrets redacted), else ``None``.
        text: the text for ``text`` kind (redacted) or an explanation for the others.
        size: bytes on disk, if a file.
        redactions: names of the redaction rules that fired.
        rows: for ``table``, the rows the whole file holds: from Parquet's footer and SAS
            headers; JSON files (up to :data:`COUNT_ROWS_UP_TO` bytes; larger ones are not
            read) are read whole; Stata files up to that size are read whole, and CSV, TSV and
            JSON Lines files counted; ``None`` otherwise (larger text tables and Stata files,
            Excel: read only as far as the preview).  No preview reads a large file whole.
        source: ``disk`` (the file as it is now, in the data root) or ``evidence`` (the response
            the door kept for the call: :func:`evidence_preview`; ``size`` is then its bytes).
        caveat: what the pane says about when this is from (:func:`as_now_caveat`), or ``None``.
        cut: for ``text``, the text is the first lines (``max_lines``, ``max_bytes``) of more.
    """

    kind: str
    path: str
    table: pd.DataFrame | None = None
    text: str | None = None
    size: int | None = None
    redactions: list[str] = field(default_factory=list)
    rows: int | None = None
    source: str = "disk"
    caveat: str | None = None
    cut: bool = False


def preview(data_root: str | Path, obj: str, *, max_rows: int = 20, max_lines: int = 40,
            max_bytes: int = 64 * 1024) -> Preview:
    """Open ``obj`` read-only inside ``data_root`` and return a redacted :class:`Preview`.

    A folder gives its entries (name, kind, bytes); CSV/TSV/Parquet/JSON/JSONL/Excel/SAS/Stata
    files give their first ``max_rows`` rows (via pandas); other text files — and those whose
    table pandas cannot read (a JSON file holding one object) — their first ``max_lines`` lines
    (at most ``max_bytes``); anything else only its size.  Paths outside the
    data root give ``kind="outside"`` and are never opened; nor is anything but a regular file
    or folder (a named pipe, socket or device: ``kind="binary"``, never read).  A folder's entry
    whose name is not UTF-8 is listed with its bytes written out (``caf\\xe9.txt``).
    """
    try:
        path = resolve_in_root(data_root, obj)
    except UnresolvablePath as exc:
        return Preview("missing", str(obj), text=str(exc))
    except OutsideDataRoot as exc:
        return Preview("outside", str(obj), text=str(exc))
    if not _exists(path):
        return Preview("missing", str(obj), text="not on disk now")
    if path.is_dir():
        rows = []
        # os.scandir: the kind of each entry comes with its name (one stat a file, for its size,
        # none a folder); a Path a name, asked is_symlink, is_dir and stat, had taken 7 s over a
        # folder of 100,000 files, the kernel deaf to Stop and Escape meanwhile
        with os.scandir(path) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            name = _shown_name(e.name)
            try:
                link = e.is_symlink()
                if link and not _inside(data_root, Path(e.path)):
                    rows.append({"name": name, "kind": "link outside data root", "bytes": None})
                    continue
                is_dir = e.is_dir()
                rows.append({"name": name + ("/" if is_dir else ""),
                             "kind": "folder" if is_dir else "file",
                             "bytes": None if is_dir else e.stat().st_size})
            except (OSError, RuntimeError):  # a dangling link, a link loop
                rows.append({"name": name, "kind": "broken link" if e.is_symlink() else "unreadable",
                             "bytes": None})
        return Preview("folder", str(obj), table=pd.DataFrame(rows, columns=["name", "kind", "bytes"]))
    size = path.stat().st_size
    if not path.is_file():  # opening a named pipe would wait for a writer: the kernel would hang
        return Preview("binary", str(obj), size=size,
                       text="not a regular file (a named pipe, socket or device): not opened")
    reader = _TABLE_READERS.get(path.suffix.lower())
    failed = None
    if reader is not None:
        try:
            df, n_rows = reader(path, max_rows)
            return Preview("table", str(obj), table=redact_frame(df), size=size, rows=n_rows)
        except Exception as exc:  # a damaged data file still gets a preview of what it is
            failed = exc  # (a JSON file holding one object, not records, is text to show)
    with open(path, "rb") as fh:
        head = fh.read(max_bytes)
    if b"\x00" in head[:8192]:
        return Preview("binary", str(obj), size=size, text=f"binary file, {size} bytes" if failed is None else
                       f"binary file, {size} bytes: could not read as a table ({type(failed).__name__}: {failed})")
    text = head.decode("utf-8", "replace")
    lines = text.splitlines()
    text = "\n".join(lines[:max_lines])
    red, fired = redact_text(text)
    return Preview("text", str(obj), text=red, size=size, redactions=fired,
                   cut=len(lines) > max_lines or size > len(head))


def _shown_name(name: str) -> str:
    """A file name as a folder's listing shows it: the bytes of a name that is not UTF-8 (which
    Python holds as lone surrogates, no text a table or a page can carry) written out as
    ``\\xNN`` — ``caf\\xe9.txt`` for a Latin-1 ``café.txt``."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _data_stem(name: str) -> str:
    """``cars`` for ``cars.parquet``, ``cars.csv.gz``, ``cars.sas7bdat``; the name itself without
    a suffix."""
    stem = name
    for _ in range(2):
        head, dot, tail = stem.rpartition(".")
        if not dot or not head or not tail or len(tail) > 9:
            break
        stem = head
        if tail.lower() not in ("gz", "bz2", "xz", "zst", "zip"):
            break
    return stem


def copies_that_disagree(rows: Sequence[Mapping], column_sets: Mapping[str, tuple] | None = None,
                         data_root: str | Path | None = None) -> list[dict]:
    """Objects that look like one dataset in different files — same folder, same name up to the
    format suffix (``demo/cars.parquet``, ``demo/cars.xpt``) — but hold different data now: a
    different number of rows (where the files say), different columns, or — with ``data_root``,
    read with :func:`table_difference` — different values in the rows (a stale copy: the same
    shape, one figure changed).  An agent that described one and computed from the other gives
    a wrong figure; this names them.

    Args:
        rows: :attr:`ReachedObjects.rows` (``object``, ``kind``, ``rows``, ``who``).
        column_sets: object → its column names (tables only).
        data_root: the incident's data root: the files are compared row by row (read-only).

    Returns:
        One dict per such group: ``folder`` and ``stem`` (str), ``objects`` (list of dicts with
        ``object``, ``rows`` (int or None), ``columns`` (tuple or None), ``who`` (the first call
        that reached it, ``<door_session> #<seq>``) and, when ``rows`` give it, ``last`` (door
        session → ``(ts, seq, tool)`` of its last call on the object)), ``rows_differ``,
        ``columns_differ`` and ``values_differ`` (bool; the last False without ``data_root``)
        and, with ``data_root``, ``differences``: per other file, ``(first file, other file,
        rows only the first holds, rows only the other holds)`` (files that cannot be compared
        have none).  Empty when no two tables of one name disagree.
    """
    column_sets = column_sets or {}
    groups: dict[tuple[str, str], list[Mapping]] = {}
    for r in rows:
        if r.get("kind") != "table":
            continue
        folder, _, name = str(r["object"]).rstrip("/").rpartition("/")
        groups.setdefault((folder, _data_stem(name)), []).append(r)
    out = []
    for (folder, stem), g in groups.items():
        if len(g) < 2:
            continue
        counts = {int(r["rows"]) for r in g if r.get("rows") is not None and not _na(r.get("rows"))}
        cols = {frozenset(column_sets[r["object"]]) for r in g if r["object"] in column_sets}
        rows_differ, columns_differ = len(counts) > 1, len(cols) > 1
        extra: dict = {}
        values_differ = False
        if data_root is not None:
            first, *others = [str(r["object"]) for r in g]
            diffs = [(first, o, *d) for o in others if (d := table_difference(data_root, first, o)) is not None]
            values_differ = any(len(d[2]) or len(d[3]) for d in diffs)
            extra["differences"] = diffs
        if rows_differ or columns_differ or values_differ:
            out.append({"folder": folder, "stem": stem, "rows_differ": rows_differ, "columns_differ": columns_differ,
                        "values_differ": values_differ,
                        "objects": [{"object": str(r["object"]),
                                     "rows": None if r.get("rows") is None or _na(r.get("rows")) else int(r["rows"]),
                                     "columns": column_sets.get(r["object"]), "who": r.get("who"),
                                     "last": r.get("last")} for r in g], **extra})
    return out


def table_difference(data_root: str | Path, a: str, b: str, *, max_rows: int = 200_000
                     ) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The rows two data files of the data root do not share, counting repeats: ``(rows of a
    beyond what b holds, rows of b beyond what a holds)``, over the columns both have, in file
    order (a row ``a`` holds twice and ``b`` once is in the first frame once).  Values compare
    across formats: numbers as floats (rounded to 9 places: a SAS file's 21 equals a Parquet
    file's 21.0), text with surrounding blanks stripped (SAS pads).  Read-only inside the data
    root, secrets redacted.  ``None`` when either is not a table the previews read, holds more
    than ``max_rows`` rows, or the two share no column."""
    frames = []
    for obj in (a, b):
        try:
            path = resolve_in_root(data_root, obj)
        except OutsideDataRoot:
            return None
        reader = _TABLE_READERS.get(path.suffix.lower())
        if reader is None or not _exists(path) or not path.is_file():
            return None
        try:
            df, _ = reader(path, max_rows + 1)
        except Exception:  # noqa: BLE001 - not readable as a table: nothing to compare
            return None
        if len(df) > max_rows:
            return None
        frames.append(df.reset_index(drop=True))
    fa, fb = frames
    cols = [c for c in fa.columns if c in fb.columns]
    if not cols:
        return None

    def keys(df: pd.DataFrame) -> list[tuple]:
        parts = []
        for c in cols:
            v = df[c]
            if pd.api.types.is_numeric_dtype(v) and not pd.api.types.is_bool_dtype(v):
                parts.append([None if pd.isna(x) else round(float(x), 9) for x in v])
            else:
                parts.append([None if _na(x) else (x.decode("utf-8", "replace") if isinstance(x, bytes) else str(x)).strip()
                              for x in v])
        return list(zip(*parts))

    ka, kb = keys(fa), keys(fb)

    def beyond(k1: list[tuple], k2: list[tuple]) -> list[int]:
        left = Counter(k2)
        out = []
        for i, k in enumerate(k1):
            if left[k] > 0:
                left[k] -= 1
            else:
                out.append(i)
        return out

    ia, ib = beyond(ka, kb), beyond(kb, ka)
    only_a = redact_frame(fa.loc[ia, cols].reset_index(drop=True))
    only_b = redact_frame(fb.loc[ib, cols].reset_index(drop=True))
    # how many of them the other file holds too (fewer times): repeated rows, not new ones
    sa, sb = set(ka), set(kb)
    only_a.attrs["repeated"] = sum(ka[i] in sb for i in ia)
    only_b.attrs["repeated"] = sum(kb[i] in sa for i in ib)
    if ia and len(ka) == len(kb):
        _one_column(ka, kb, cols, only_a, only_b)
    return only_a, only_b


def _one_column(ka: list[tuple], kb: list[tuple], cols: list, only_a: pd.DataFrame, only_b: pd.DataFrame) -> None:
    """When two files of as many rows differ in one column only (the rows are equal without
    it), name it in both frames' ``attrs`` (``differs_in``) and, for numbers that differ by one
    factor throughout (a percentage written as a fraction: ×100), that factor (``factor``, b ÷ a)."""
    for j, c in enumerate(cols):
        rest_a = Counter(k[:j] + k[j + 1:] for k in ka)
        if rest_a != Counter(k[:j] + k[j + 1:] for k in kb):
            continue
        only_a.attrs["differs_in"] = only_b.attrs["differs_in"] = str(c)
        pairs: dict[tuple, list] = {}
        for k in ka:
            pairs.setdefault(k[:j] + k[j + 1:], [[], []])[0].append(k[j])
        for k in kb:
            pairs[k[:j] + k[j + 1:]][1].append(k[j])
        ratios = set()
        for va, vb in pairs.values():
            for x, y in zip(va, vb):
                if x == y:
                    continue
                if not isinstance(x, float) or not isinstance(y, float) or x == 0:
                    return
                ratios.add(round(y / x, 9))
        if len(ratios) == 1:
            only_a.attrs["factor"] = only_b.attrs["factor"] = ratios.pop()
        return


def _na(x) -> bool:
    try:
        return bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


def _exists(p: Path) -> bool:
    """``p`` exists; ``False`` for a name the file system cannot hold (too long)."""
    try:
        return p.exists()
    except (OSError, ValueError):
        return False


def _inside(root: str | Path, p: Path) -> bool:
    r = Path(root).resolve()
    t = p.resolve()
    return t == r or r in t.parents


@dataclass
class ReplayStep:
    """One step of a Replay.

    Attributes:
        index: 0-based position in the plan.
        door_session, call_seq: which door call this is.
        ts: when the door received the call, UTC.
        tool, object, decision, rule: as the door logged them.
        opens: ``folder``, ``object``, ``writes`` (a tool that writes to its object,
            :func:`writes`: the file is shown as it is now, after the write) or ``nothing``
            (refused calls, calls with no object, objects outside the data root), ``response``
            (nothing to open, but the response the door kept is shown: ``kept``).
        note: why a step opens nothing or differs (``refused by rule no-dotenv``, ``changed
            since the run``, ``outside the data root``, ``cannot be resolved`` (a NUL byte, a
            symlink loop), ``not on disk now``).
        changed: the recorded ``object_digest`` differs from the file now (``None``: unknown).
        logged_bytes: the size of the answer the door logged for the call (``bytes``), or ``None``.
        response_digest: the digest of the response the door kept (``response_digest``), or ``None``.
        kept: the plan's evidence store holds the response the door kept for this call (shown
            instead of the file; ``opens`` is ``response`` when there is no file to open).
        later_write: the first allowed write to the same object after this call, anywhere in the
            incident's calls (:meth:`LaterWrites.after`: ``(ts, door_session, seq, tool)``), or ``None``.
        state: ``pending``, ``current``, ``done`` or ``skipped`` (refused / nothing to open).
    """

    index: int
    door_session: str
    call_seq: int | None  # (None: a call the log gave no number, as a frame built by hand may)
    ts: pd.Timestamp
    tool: str
    object: str | None
    decision: str
    rule: str | None
    opens: str
    note: str | None = None
    changed: bool | None = None
    recorded_digest: str | None = None
    logged_bytes: int | None = None
    response_digest: str | None = None
    later_write: tuple | None = None
    kept: bool = False
    state: str = "pending"

    @property
    def refused(self) -> bool:
        """The door did not allow this call (Replay shows it crossed out and opens nothing): refused,
        or an ``ask`` whose outcome the log does not record (its note says so)."""
        return self.decision != "allow"

    @property
    def asked(self) -> bool:
        """The door logged ``ask``: a rule asked the agent's user and the log does not say what
        they answered.  Nothing is opened (:attr:`refused` is true), but it is not counted or
        shown as a refusal: the sessions list and the session's header do not count it either."""
        return self.decision == "ask"


class ReplayPlan:
    """The ordered steps of one door session's Replay and where the playback is.

    Build with :meth:`from_calls`.  Drive with :meth:`start`, then :meth:`advance` every
    :attr:`step_ms` milliseconds until it returns ``None``; :meth:`stop` halts it (Escape), and
    the next :meth:`start` begins again from the first step.  :meth:`pause` holds it on the
    current step; paused, :meth:`step_forward` and :meth:`step_back` move one step (never past
    the first or the last), and :meth:`resume` lets :meth:`advance` go on from where it is.

    Attributes:
        steps: the steps in the door's order (ts, then seq).
        data_root: the incident's data root.
        step_ms: milliseconds per step.
        status: ``idle``, ``running``, ``paused``, ``stopped`` or ``finished``.
        position: index of the current step, or -1 before the first.
    """

    def __init__(self, steps: list[ReplayStep], data_root: str | Path | None, step_ms: int = DEFAULT_STEP_MS,
                 evidence=None, evidence_where: str = "the evidence store"):
        if step_ms <= 0:
            raise InputError(f"step_ms must be positive, got {step_ms}")
        #: an :class:`~replaybook.capsule.store.EvidenceStore` holding the responses the door
        #: kept (a capsule's), or ``None``; ``evidence_where`` names it in the pane
        self.evidence = evidence
        self.evidence_where = evidence_where
        self.steps = steps
        self.data_root = Path(data_root) if data_root is not None else None
        self.step_ms = int(step_ms)
        self.status = "idle"
        self.position = -1
        self._refused_prefix: list[int] | None = None

    @classmethod
    def from_calls(cls, calls: pd.DataFrame, data_root: str | Path | None, *,
                   door_session: str | None = None, step_ms: int = DEFAULT_STEP_MS, evidence=None,
                   evidence_where: str = "the evidence store") -> "ReplayPlan":
        """Plan the Replay of one door session from a :data:`~replaybook.frames.CALLS` frame.

        Args:
            calls: the calls frame (all sessions or one): a write to a step's object after the
                step, in any session of ``calls``, is the step's ``later_write``.
            data_root: the incident's data root (``None``: nothing can be opened).
            door_session: which session; required when ``calls`` holds several.
            step_ms: milliseconds per step (default 700).
            evidence: an :class:`~replaybook.capsule.store.EvidenceStore` of the responses the
                door kept (a capsule's): a step whose ``response_digest`` it holds shows that
                response (:func:`evidence_preview`), not the file now.
            evidence_where: how the pane names that store (``the capsule's evidence store``).

        Raises:
            InputError: several sessions and none chosen, or an unknown session.
        """
        sessions = list(dict.fromkeys(calls["door_session"].astype(str)))
        if door_session is None:
            if len(sessions) != 1:
                raise InputError(f"choose a door session: {', '.join(sessions) or 'none in the log'}")
            door_session = sessions[0]
        elif door_session not in sessions:
            raise InputError(f"no door session {door_session!r}")
        c = calls[calls["door_session"] == door_session].sort_values(["ts", "seq"], kind="stable")
        steps = []
        memo: dict = {}  # object → where it resolves and what is there (a session repeats objects)
        later = LaterWrites(calls)
        for i, r in enumerate(c.itertuples(index=False)):
            obj = None if pd.isna(r.object) else str(r.object)
            digest = getattr(r, "object_digest", None)
            digest = None if digest is None or pd.isna(digest) else str(digest)
            nbytes = getattr(r, "bytes", None)
            resp = getattr(r, "response_digest", None)
            step = ReplayStep(index=i, door_session=door_session, call_seq=None if _na(r.seq) else int(r.seq), ts=r.ts,
                              tool=str(r.tool), object=obj, decision=str(r.decision),
                              rule=None if pd.isna(r.rule) else str(r.rule), opens="nothing",
                              recorded_digest=digest, logged_bytes=None if _na(nbytes) else int(nbytes),
                              response_digest=None if resp is None or _na(resp) else str(resp),
                              later_write=later.after(obj, r.ts) if str(r.decision) == "allow" else None)
            cls._classify(step, data_root, memo)
            if (evidence is not None and step.response_digest and not step.refused and step.opens not in
                    ("writes", "folder") and not writes(step.tool) and evidence.has(step.response_digest)):
                step.kept = True
                if step.opens == "nothing":  # no file to open (no object, no data root): the answer still shows
                    step.opens = "response"
            steps.append(step)
        return cls(steps, data_root, step_ms, evidence=evidence, evidence_where=evidence_where)

    @staticmethod
    def _look(data_root: str | Path, obj: str, memo: dict | None) -> tuple:
        """``(note, path, is_dir, is_file)`` of ``obj`` in the data root: ``note`` says why it
        cannot be opened (``None`` when it can); remembered in ``memo`` by object."""
        got = memo.get(obj) if memo is not None else None
        if got is None:
            try:
                path = resolve_in_root(data_root, obj)
            except UnresolvablePath:
                got = ("cannot be resolved: not opened", None, False, False)
            except OutsideDataRoot:
                got = ("outside the data root: not opened", None, False, False)
            else:
                got = (None, path, path.is_dir(), path.is_file()) if _exists(path) else \
                    ("not on disk now", path, False, False)
            if memo is not None:
                memo[obj] = got
        return got

    @staticmethod
    def _classify(step: ReplayStep, data_root: str | Path | None, memo: dict | None = None) -> None:
        if step.decision == "ask":  # (the log does not say what the user answered: nothing is opened)
            step.note = (f"the rule {step.rule} asked the user" if step.rule else "a rule asked the user") + \
                "; the log does not say what they answered"
            return
        if step.refused:
            step.note = f"refused by rule {step.rule}" if step.rule else "refused"
            return
        if not step.object:
            step.note = "the call reached no object"
            return
        if data_root is None:
            step.note = "the incident names no data root"
            return
        note, path, is_dir, is_file = ReplayPlan._look(data_root, step.object, memo)
        if note is not None:
            step.note = note
            return
        step.opens = "folder" if is_dir or step.tool in FOLDER_TOOLS else ("writes" if writes(step.tool) else "object")
        if step.recorded_digest and is_file:
            step.changed = file_digest(path) != step.recorded_digest
            if step.changed:
                step.note = "changed since the run"

    # -- playback -------------------------------------------------------------------------
    def start(self) -> None:
        """Begin (or restart) playback from the first step."""
        for s in self.steps:
            s.state = "pending"
        self.position = -1
        self.status = "running" if self.steps else "finished"

    def advance(self) -> tuple[ReplayStep, Preview | None] | None:
        """Move to the next step and return it with what to show.

        Returns:
            ``(step, preview)`` — ``preview`` is ``None`` for a step that opens nothing (refused,
            no object, outside the data root, changed since the run) — or ``None`` when the
            plan is not running (finished, stopped, paused; paused, the position is kept).  The
            preview is the response the door kept for the call when :attr:`evidence` holds it
            (``source="evidence"``), else the file as it is now, its ``caveat`` saying so
            (:func:`as_now_caveat`).
        """
        if self.status != "running":
            return None
        if 0 <= self.position < len(self.steps):
            self._tick(self.steps[self.position])
        self.position += 1
        if self.position >= len(self.steps):
            self.status = "finished"
            return None
        return self._show(self.steps[self.position])

    @staticmethod
    def _tick(step: ReplayStep) -> None:
        """Mark a step playback has gone past: ``done``, or ``skipped`` when it opened nothing."""
        step.state = "done" if step.kept or (step.opens != "nothing" and not step.changed) else "skipped"

    def _show(self, step: ReplayStep) -> tuple[ReplayStep, Preview | None]:
        """Make ``step`` the current one and say what it shows (``None``: it opens nothing)."""
        step.state = "current"
        if step.kept:
            return step, self.preview_of(step)
        if step.opens == "nothing" or step.changed or self.data_root is None:
            return step, None
        return step, self.preview_of(step)

    def preview_of(self, step: ReplayStep) -> Preview:
        """What a step shows: the kept response (:func:`evidence_preview`) when :attr:`evidence`
        holds it and the call did not write, else its object as it is now with the caveat of
        :func:`as_now_caveat`."""
        return kept_or_now(self.data_root, step.object, tool=step.tool, logged_bytes=step.logged_bytes,
                           later_write=step.later_write, door_session=step.door_session,
                           evidence=self.evidence if step.kept else None, response_digest=step.response_digest,
                           evidence_where=self.evidence_where)

    def stop(self) -> None:
        """Halt playback where it is (the current step keeps its state); running or paused, it
        is ``stopped``: :meth:`resume` no longer applies and :meth:`start` begins again."""
        if self.status in ("running", "paused"):
            self.status = "stopped"

    def pause(self) -> bool:
        """Hold a running playback on its current step (``paused``): :meth:`advance` moves no
        further until :meth:`resume`.  Returns ``False`` (and changes nothing) unless running."""
        if self.status != "running":
            return False
        self.status = "paused"
        return True

    def resume(self) -> bool:
        """Let a paused playback go on from the step it is on (the next :meth:`advance` shows
        the step after it), not from the first.  Returns ``False`` unless paused."""
        if self.status != "paused":
            return False
        self.status = "running"
        return True

    def step_forward(self) -> tuple[ReplayStep, Preview | None] | None:
        """Paused: make the next step current (the one left ticked off, as :meth:`advance` does)
        and return it with what to show, as :meth:`advance` does; a refused step still opens
        nothing.  ``None`` when not paused or already on the last step (playback stays there:
        stepping never finishes it)."""
        if self.status != "paused" or self.position >= len(self.steps) - 1:
            return None
        if self.position >= 0:
            self._tick(self.steps[self.position])
        self.position += 1
        return self._show(self.steps[self.position])

    def step_back(self) -> tuple[ReplayStep, Preview | None] | None:
        """Paused: make the step before the current one current again (the one left goes back
        to ``pending``) and return it with what to show, as :meth:`advance` does.  ``None`` when
        not paused or on the first step (or before it)."""
        if self.status != "paused" or self.position <= 0 or self.position >= len(self.steps):
            return None
        self.steps[self.position].state = "pending"
        self.position -= 1
        return self._show(self.steps[self.position])

    def to_frame(self) -> pd.DataFrame:
        """The plan as a table: index, call_seq, ts (UTC), tool, object, decision, rule, opens,
        note, state."""
        return pd.DataFrame([{
            "index": s.index, "call_seq": s.call_seq, "ts": s.ts, "tool": s.tool, "object": s.object,
            "decision": s.decision, "rule": s.rule, "opens": s.opens, "note": s.note, "state": s.state,
        } for s in self.steps])

    # -- where playback is, for a panel that shows only part of the plan ---------------------
    def refused_before(self, i: int) -> int:
        """How many of the steps before index ``i`` (``steps[:i]``, ``i`` clamped to 0…n) the door
        refused (an ``ask`` whose outcome the log does not record is not counted:
        :attr:`ReplayStep.asked`).  Counted once per plan (the steps' decisions do not change),
        then O(1)."""
        if self._refused_prefix is None or len(self._refused_prefix) != len(self.steps) + 1:
            acc, prefix = 0, [0]
            for s in self.steps:
                acc += s.refused and not s.asked
                prefix.append(acc)
            self._refused_prefix = prefix
        return self._refused_prefix[max(0, min(int(i), len(self.steps)))]

    @property
    def refused(self) -> int:
        """How many steps of the whole plan the door refused."""
        return self.refused_before(len(self.steps))

    @property
    def done(self) -> int:
        """How many steps playback has ticked off (``done`` or ``skipped``): those before the
        current one, all of them once finished, none before :meth:`start`."""
        return max(0, min(self.position, len(self.steps)))

    @property
    def total_ms(self) -> int:
        """How long a full playback takes, milliseconds."""
        return self.step_ms * len(self.steps)

