"""One streamed response split between a session's file and the file resuming it (private).

Claude Code streams one API response over several ``assistant`` lines sharing ``message.id``
and ``requestId``; the loaders merge them, per file, into one ``model_request`` row.  A session
file collected while it was being written can end inside such a response; the resumed session's
file (``claude --resume``) starts with copies of the earlier file's lines — the response's first
lines among them, same ``uuid`` — and goes on with the lines the collected file lacks: the rest
of the same response.  Read file by file, that gave two model requests for one (``usage``
counted twice: 40 then 70 output tokens) and the response's tool calls in two transcripts, so
that no transcript held all the calls a door session logged.

:func:`merge_split_responses` runs on a load's result (both load paths: the fast one in
:func:`~.claude_code.load_claude_code`, the reference one in the tests), after the resume
decisions of :mod:`.claude_code`.  A ``model_request`` row of file ``B`` is the continuation of
the row of an earlier file ``A`` (the first place of the response in the load) when both have
the same ``message_id`` and ``request_id`` (both NA alike) and ``B`` holds a copy of ``A``'s
row's first line (its ``uuid``, set aside as a copy, not a conflict).  Then, as if the lines
were one file's:

* ``A``'s row stays the one model request, at its first line (``uuid``, ``ts``, ``line_no``);
  its ``input_tokens``/``output_tokens`` come from the last line of the response that has a
  ``usage`` object — ``B``'s row's values when one of ``B``'s own lines of it has one; its text
  is the text blocks of ``A``'s lines and then ``B``'s own lines, joined with ``"\\n"``
  (truncated as the loaders truncate); its ``model`` is ``B``'s only when ``A``'s is NA;
* ``B``'s ``model_request`` row is dropped, and ``B``'s ``tool_call`` rows of the response
  join ``A``'s transcript (``transcript_id``; each keeps its ``source_file`` and ``line_no``,
  and its place in the frame, which stays in file order);
* ``seq`` is renumbered, 0-based in frame order, in both transcripts;
* ``B``'s ``inputs`` entry says so (``notes``: ``line <n>: continues the model response …``).

Only the files of such a response are read again (each line of ``A`` and ``B``, to tell the
response's lines and their text), each once, and only when ``B`` copies lines of another file
(its ``duplicates``).  Files are opened read-only.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .._jsonl import parse_json
from .._text import str_or_none

__all__ = ["merge_split_responses"]


def _key(mid: Any, rid: Any) -> tuple:
    return (None if pd.isna(mid) else str(mid), None if pd.isna(rid) else str(rid))


def _lines(path: str) -> list[tuple[int, Any]]:
    """``(line_no, parsed object)`` of each line of ``path`` that is a JSON object."""
    from ._resume import _lines_of

    out = []
    for i, raw in enumerate(_lines_of(path), 1):
        if not raw.strip():
            continue
        o, err = parse_json(raw)
        if err is None and isinstance(o, dict):
            out.append((i, o))
    return out


def _response_key(o: dict) -> tuple | None:
    """The ``(message.id, requestId)`` an ``assistant`` line is grouped by, or ``None``."""
    msg = o.get("message")
    if o.get("type") != "assistant" or not isinstance(msg, dict):
        return None
    mid = str_or_none(msg.get("id"))
    return None if mid is None else (mid, str_or_none(o.get("requestId")))


def _texts(o: dict) -> list[str]:
    """The text of one ``assistant`` line as the loaders collect it for the merged row."""
    content = o["message"].get("content")
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b["text"] for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]


def _own_lines(lines: list[tuple[int, Any]], key: tuple, known: set,
               set_aside: set) -> tuple[list[dict], set, dict]:
    """The lines (:func:`_lines` of a file) that the loader read as its own (not a copy of a
    uuid in ``known`` or met earlier in the file, nor a line in ``set_aside``) holding response
    ``key``; every uuid of the file; and the line number of each uuid's first place in it."""
    own: list[dict] = []
    uuids: set = set()
    where: dict = {}
    for line_no, o in lines:
        u = o.get("uuid")
        u = u if isinstance(u, str) and u else None
        repeat = u is not None and (u in known or u in uuids)
        if u is not None:
            where.setdefault(u, line_no)
            uuids.add(u)
        if repeat or line_no in set_aside:
            continue
        if _response_key(o) == key:
            own.append(o)
    return own, uuids, where


def merge_split_responses(res) -> None:
    """Merge, in ``res`` (a Claude Code :class:`~replaybook.frames.LoadResult`, changed in
    place), each response split between a session's file and a file resuming it (see the module
    docstring).  Nothing happens unless two files hold a model request of the same response."""
    from ._claude_ref import _trunc

    f = res.frame
    # a file that copies no line of another (no ``duplicates``) continues no response begun
    # elsewhere (see below): with none, there is nothing to look for (no pass over the frame)
    if not len(f) or not any(i.get("duplicates") for i in res.inputs):
        return
    is_mr = (f["kind"] == "model_request").to_numpy(bool) & f["message_id"].notna().to_numpy(bool)
    if not is_mr.any():
        return
    mr = f.loc[is_mr, ["message_id", "request_id"]]
    twice = mr.duplicated(keep=False).to_numpy(bool)   # (NA equal to NA, as the loaders group)
    if not twice.any():
        return
    mr = mr[twice]
    keys = pd.Series([_key(m, r) for m, r in zip(mr["message_id"], mr["request_id"])], index=mr.index)
    q = res.quarantine
    set_aside: dict[str, set] = {}
    if len(q):
        for sf, ln in zip(q["source_file"].astype(object), q["line_no"].astype(object)):
            if not pd.isna(ln):
                set_aside.setdefault(str(sf), set()).add(int(ln))
    info_of = {str(i.get("path")): i for i in res.inputs}
    # a file that copies no line of another (no ``duplicates``) continues no response begun
    # elsewhere: only files that do are read again, each once (unrelated files sharing message
    # ids, as tools writing fixed ids do, had each been read again for every shared id)
    copies = {p for p, i in info_of.items() if i.get("duplicates")}
    parsed: dict[str, list] = {}

    def lines_of(path: str) -> list:
        if path not in parsed:
            parsed[path] = _lines(path)
        return parsed[path]

    drop: list = []
    relabel: dict = {}   # row → transcript_id
    touched: set = set()
    for key, idx in keys.groupby(keys, sort=False).groups.items():
        if len(idx) < 2:
            continue
        first = idx[0]
        a_file = str(f.at[first, "source_file"])
        a_uuid = f.at[first, "uuid"]
        if pd.isna(a_uuid) or len({str(f.at[i, "source_file"]) for i in idx}) < len(idx):
            continue
        if not any(str(f.at[b, "source_file"]) in copies for b in idx[1:]):
            continue
        known: set = set()     # the uuids of the files the response was read from so far
        a_own, a_uuids, _ = _own_lines(lines_of(a_file), key, set(), set_aside.get(a_file, set()))
        known |= a_uuids
        lines = list(a_own)
        tokens = (f.at[first, "input_tokens"], f.at[first, "output_tokens"])
        model = f.at[first, "model"]
        merged = False
        for b in idx[1:]:
            b_file = str(f.at[b, "source_file"])
            if b_file not in copies:
                continue
            b_own, b_uuids, where = _own_lines(lines_of(b_file), key, known, set_aside.get(b_file, set()))
            at = where.get(str(a_uuid))
            if at is None or at in set_aside.get(b_file, set()):
                continue   # not a resumed copy of the response's start: two responses stay two
            usage_here = False
            has_usage = any(isinstance(o["message"].get("usage"), dict) for o in b_own)
            if has_usage:
                b_out = f.at[b, "output_tokens"]  # (the final count: the larger, of equal ones B's)
                if pd.isna(tokens[1]) or (not pd.isna(b_out) and b_out >= tokens[1]):
                    tokens = (f.at[b, "input_tokens"], b_out)
                    usage_here = True
            if pd.isna(model):
                model = f.at[b, "model"]
            lines += b_own
            known |= b_uuids
            tid = f.at[first, "transcript_id"]
            calls = f.index[(f["source_file"] == b_file).to_numpy(bool)
                            & (f["kind"] == "tool_call").to_numpy(bool)
                            & (f["message_id"] == key[0]).fillna(False).to_numpy(bool)
                            & (f["request_id"].isna() if key[1] is None
                               else (f["request_id"] == key[1]).fillna(False)).to_numpy(bool)]
            for c in calls:
                relabel[c] = tid
            drop.append(b)
            touched.update((str(tid), str(f.at[b, "transcript_id"])))
            info = info_of.get(b_file)
            if info is not None:
                rid = "no requestId" if key[1] is None else f"requestId {key[1]}"
                usage_from = ("here" if usage_here else "there: its count is the larger" if has_usage
                              else "there: no line here has a count")
                info.setdefault("notes", []).append(
                    f"line {int(f.at[b, 'line_no'])}: continues model response {key[0]} ({rid}) begun at "
                    f"line {int(f.at[first, 'line_no'])} of transcript {tid}, whose lines this file starts by "
                    f"copying: one model request there (usage from {usage_from}; {len(calls)} of its tool "
                    "calls read here)")
            merged = True
        if not merged:
            continue
        texts = [t for o in lines for t in _texts(o)]
        text, nbytes = _trunc("\n".join(texts) if texts else None)
        f.at[first, "text"] = pd.NA if text is None else text
        f.at[first, "text_bytes"] = pd.NA if nbytes is None else nbytes
        f.at[first, "input_tokens"], f.at[first, "output_tokens"] = tokens
        f.at[first, "model"] = model
    if not drop:
        return
    for c, tid in relabel.items():
        f.at[c, "transcript_id"] = tid
    f = f.drop(index=drop).reset_index(drop=True)
    mine = f["transcript_id"].astype(object).isin(touched).to_numpy(bool)
    f.loc[mine, "seq"] = f[mine].groupby("transcript_id", sort=False).cumcount().astype("Int64")
    res.frame = f
