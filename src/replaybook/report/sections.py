"""Sections of the review report, as self-contained HTML strings.

Each function takes canonical frames (or plain values) and returns an HTML fragment, so the
template notebook's cells are one-liners (``display(HTML(sections.join_summary(...)))``) and the
sections can be tested without running a kernel.

Everything that comes from the evidence — transcript text, tool names, arguments, door objects,
rule ids, file paths, quarantined lines — is HTML-escaped here: a transcript may contain
``<script>`` and the report must show it as text.  The only markup not built here is the
timeline chart (:func:`replaybook.views.charts.chart_html`), whose data travels as escaped JSON.

Times are shown in UTC as ``YYYY-MM-DD HH:MM:SS.mmmZ``; durations and offsets in milliseconds;
``rows`` are counts and ``bytes`` are bytes returned to the agent.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import shlex
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .. import _json
from .._text import SHOW_INVISIBLE
from ..access_join import SECONDS_SPAN_S as _SECONDS_SPAN_S, duration_words as _span
from ..frames import QUARANTINE
from ..join import FAR_PAIR_MS, OFFSETS_DIFFER_MS, far_pair_text, far_pairs, prefixed_alike

__all__ = [
    "STYLE",
    "esc",
    "fmt_ts",
    "table",
    "header",
    "confidence_sentence",
    "with_far_clocks",
    "with_taken_transcripts",
    "with_offset_changes",
    "with_other_doors",
    "other_doors",
    "with_resumed",
    "resumed_from",
    "join_summary",
    "clock_offset",
    "timeline_section",
    "session_calls",
    "all_session_calls",
    "result_cell",
    "what_cell",
    "arguments_laid_out",
    "storage_write_words",
    "conversations",
    "unassigned_transcripts",
    "objects_section",
    "reached_objects",
    "ReachedObjects",
    "refused_calls",
    "inputs_table",
    "quarantine_summary",
    "cloud_log_losses",
    "cloud_loss_words",
    "other_client_links",
    "other_client_words",
    "NO_PRINCIPALS",
    "cannot_prove",
    "residuals",
    "CANNOT_PROVE_TEXT",
    "SUMMARY_MIME",
    "findings",
    "packet_counts",
    "packet_words",
    "packet_section",
    "capsule_words",
    "refused_then_requested",
    "refused_then_other_principal",
]

#: Rows shown per table before it is cut (the note under the table gives the full count).
MAX_ROWS = 1000

#: The report's CSS (no external resources).
STYLE = """<style type="text/css">
.rb-section { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; font-size: 14px; line-height: 1.45; }
.rb-section h1 { font-size: 1.7em; margin: 0.2em 0 0.4em; }
.rb-section h2 { font-size: 1.3em; margin: 1.2em 0 0.4em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.rb-section h3 { font-size: 1.1em; margin: 1em 0 0.3em; }
.rb-section table.rb-table { border-collapse: collapse; margin: 0.4em 0 0.8em; font-size: 12.5px; table-layout: auto; display: block; max-width: 100%; overflow-x: auto; }
.rb-section table.rb-table th, .rb-section table.rb-table td { border: 1px solid #ddd; padding: 3px 6px; text-align: left; vertical-align: top; }
.rb-section table.rb-table th { background: #f4f4f4; font-weight: 600; }
.rb-section table.rb-table td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.rb-section table.rb-table td code, .rb-section code { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; white-space: pre-wrap; overflow-wrap: break-word; background: none; }
.rb-section table.rb-table tr.rb-refused td { background: #fdecea; }
.rb-note { color: #555; font-size: 12.5px; }
th code.rb-col { font-weight: normal; font-size: 10.5px; color: #666; }
.rb-alarm { border-left: 4px solid #b00020; background: #fdf3f2; padding: 2px 10px; margin: 0.5em 0 0.8em; }
.rb-status { display: inline-block; padding: 0 6px; border-radius: 3px; font-weight: 600; }
.rb-status-matched { background: #e6f4ea; color: #1e7e34; }
.rb-status-ambiguous { background: #fff4e5; color: #b35c00; }
.rb-status-unmatched { background: #fdecea; color: #b00020; }
.rb-decision-deny { color: #b00020; font-weight: 600; }
.rb-sentences li { margin: 0.2em 0; }
.rb-result { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere; margin: 0.3em 0 0; }
.rb-section table.rb-table td:has(> .rb-result), .rb-section table.rb-table td:has(> details) { min-width: 16em; }
.rb-section details summary { cursor: pointer; }
.rb-section details summary .rb-result { display: inline; }
</style>"""


# --------------------------------------------------------------------------------------------
# formatting helpers


def _isna(v: Any) -> bool:
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    try:
        return bool(pd.isna(v)) if not isinstance(v, (list, dict, tuple, str)) else False
    except (TypeError, ValueError):
        return False


#: Control characters HTML text may not hold (all of C0 but tab, newline and carriage return,
#: and DEL), shown as ``\xNN`` instead.
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F)}
_CONTROLS.update(SHOW_INVISIBLE)  # (bidirectional controls, zero-width spaces)


def esc(v: Any, limit: int | None = None) -> str:
    """``v`` as escaped HTML text ("—" for missing), cut to ``limit`` characters with "…";
    control characters (evidence can hold any byte) are shown as ``\\xNN``, and bidirectional
    controls and zero-width spaces as ``\\uNNNN`` (:data:`replaybook._text.SHOW_INVISIBLE`)."""
    if _isna(v):
        return "—"
    s = str(v)
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    return html.escape(s.translate(_CONTROLS), quote=True)


#: Where a name or path may wrap in a table cell: after ``_ - / , : . = & ?``, and inside a run of
#: 24 characters with none of them (a digest, a long id).
_BREAK_AT = re.compile(r"(?<=[_\-/,:.=&?])(?=\S)")
_RUN = 24


def _breakable(v: Any, limit: int | None = None) -> str:
    """:func:`esc` with, in a text holding a word longer than 24 characters (arguments, a
    digest, a long path), a line-break opportunity (``<wbr/>``) at :data:`_BREAK_AT` and every 24
    characters of a run without one: a table column wraps there instead of letter by letter
    (names are never cut mid-word, ``overflow-wrap: break-word``).  Written self-closed: the
    HTML export parses the page with BeautifulSoup, whose html.parser builder keeps a list of
    void tags written ``<wbr>`` and searches it at every end tag (a report of 89,000 of them took
    two minutes to convert)."""
    if _isna(v):
        return "—"
    s = str(v)
    if limit is not None and len(s) > limit:
        s = s[: limit - 1] + "…"
    if all(len(w) <= _RUN for w in s.split()):  # short words wrap at their spaces, if any
        return esc(s)
    pieces = [p[i:i + _RUN] for p in _BREAK_AT.split(s) for i in range(0, max(len(p), 1), _RUN)]
    return "<wbr/>".join(esc(p) for p in pieces)


def _prose(v: Any) -> str:
    """:func:`esc` of a sentence, with each word longer than 24 characters (an ARN, a URI, a
    session id) made :func:`_breakable`: the column wraps at the sentence's spaces, and inside
    such a word only, never mid-word elsewhere."""
    if _isna(v):
        return "—"
    return "".join(_breakable(w) if len(w) > _RUN else esc(w) for w in re.split(r"(\s+)", str(v)))


def _line_start(raw: Any) -> Any:
    """A quarantined line's start as the report shows it: ``(binary data)`` when most of it is
    replacement or control characters (a binary file read as text), else the text."""
    if _isna(raw) or not isinstance(raw, str) or not raw:
        return raw
    odd = sum(1 for c in raw if c == "\ufffd" or (ord(c) < 32 and c not in "\t\n\r") or c == "\x7f")
    return "(binary data)" if odd > len(raw) // 4 else raw


def fmt_ts(v: Any) -> str:
    """A UTC timestamp as ``YYYY-MM-DD HH:MM:SS.mmmZ`` (empty string for NaT)."""
    if _isna(v):
        return ""
    ts = pd.Timestamp(v)
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return ts.strftime("%Y-%m-%d %H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


def _duration_words(ms: float) -> str:
    """``400 ms``, ``95.3 s``, ``1 min 35.3 s (95,300 ms)``, ``2 h 0 min (7,200,400 ms)``: a
    non-negative span in words; beyond five minutes in hours and minutes
    (:func:`replaybook.access_join.duration_words`, as every span the report words), the exact
    milliseconds beside them."""
    if ms < 1000:
        return f"{ms:,.0f} ms"
    if ms < 60_000:
        return f"{ms / 1000:,.1f} s"
    if ms / 1000 > _SECONDS_SPAN_S:
        return f"{_span(ms / 1000)} ({ms:,.0f} ms)"
    h, rest = divmod(ms / 1000, 3600)
    m, sec = divmod(rest, 60)
    words = ([f"{int(h):,} h"] if h else []) + [f"{int(m)} min", f"{sec:.1f} s"]
    return f"{' '.join(words)} ({ms:,.0f} ms)"


def _delta_text(ms: float) -> str:
    """A clock difference in words: ``+95.5 s (door clock ahead)`` for 95,500 ms; beyond five
    minutes in hours and minutes (:func:`replaybook.access_join.duration_words`): ``+1 h 0 min
    (door clock ahead)`` for 3,600,400 ms."""
    sign, rest = ("+" if ms >= 0 else "−"), abs(ms) / 1000
    if rest > _SECONDS_SPAN_S:
        return f"{sign}{_span(rest)} (door clock {'ahead' if ms >= 0 else 'behind'})"
    h, rest = divmod(rest, 3600)
    m, sec = divmod(rest, 60)
    parts = ([f"{int(h):,} h"] if h else []) + ([f"{int(m)} min"] if h or m else []) + [f"{sec:.1f} s"]
    return f"{sign}{' '.join(parts)} (door clock {'ahead' if ms >= 0 else 'behind'})"


def _fmt_num(v: Any, fmt: str = "{:,}") -> str:
    if _isna(v):
        return "—"
    if isinstance(v, float) and v.is_integer() and fmt == "{:,}":
        v = int(v)
    return html.escape(fmt.format(v))


def _pct(v: Any) -> str:
    return "—" if _isna(v) else f"{float(v) * 100:.0f}%"


def _cell(v: Any, kind: str) -> tuple[str, str]:
    """(class, inner html) for one cell of :func:`table`."""
    if kind == "num":
        return "num", _fmt_num(v)
    if kind == "ms":
        return "num", _fmt_num(v, "{:,.0f}")
    if kind == "pct":
        return "num", _pct(v)
    if kind == "ts":
        return "", html.escape(fmt_ts(v)) or "—"
    if kind == "code":
        return "", "—" if _isna(v) else f"<code>{_breakable(v, 300)}</code>"
    if kind == "html":  # pre-built, already escaped markup (only from this module)
        return "", str(v)
    if kind == "prose":  # a sentence that is a finding: whole, wrapping at its spaces
        return "", _prose(v)
    if isinstance(v, (bool, np.bool_)):
        return "", "yes" if v else "no"
    return "", esc(v, 300)


#: Characters of a tool result shown before "…" (beyond it, a click shows up to RESULT_LIMIT).
RESULT_PREVIEW = 160
#: Characters of a tool result the report holds at most (the steps frame keeps 4,000).
RESULT_LIMIT = 2000


#: The mark :func:`replaybook._text.truncate` ends a cut frame text with: `` …[+N chars]``.
_CUT_MARK = re.compile(r" …\[\+([0-9]+) chars\]\Z")
#: A door's logged ``bytes`` this many times smaller (or larger) than what the transcript holds
#: for the same call, and at least :data:`_DOOR_BYTES_APART` bytes apart, is named beside the result.
_DOOR_BYTES_RATIO = 4
_DOOR_BYTES_APART = 64 * 1024


def _cut_words(s: str, size: Any) -> tuple[str, str]:
    """(the result text without the frame's cut mark, the sentence saying where it was cut, or
    "" when the report shows it whole).  ``size`` is the full result's size in UTF-8 bytes (the
    ``tool_result`` step's ``text_bytes``), when known."""
    m = _CUT_MARK.search(s)
    kept = s[: m.start()] if m else s
    full = None if _isna(size) else int(size)
    frame_cut = (full is not None and full > len(kept.encode("utf-8", "surrogatepass"))) or (m is not None and full is None)
    report_cut = len(kept) > RESULT_LIMIT
    if not frame_cut and not report_cut:
        return kept, ""
    if frame_cut:
        holds = (f"the transcript holds {full:,} bytes" if full is not None
                 else f"the transcript holds {int(m.group(1)):,} characters more")
        words = (f"(cut here: {holds}; the frame keeps the first {len(kept):,} characters"
                 + (f" and this report shows the first {RESULT_LIMIT:,}" if report_cut else "")
                 + " — <code>replaybook load steps</code> has the frame's, or the transcript itself has the whole)")
    else:
        words = (f"(cut here: this report shows the first {RESULT_LIMIT:,} of {len(kept):,} characters — "
                 "<code>replaybook load steps</code> has them all, as does the transcript)")
    return kept, words


def result_cell(text: Any, is_error: Any = None, size: Any = None, door_bytes: Any = None) -> str:
    """What the agent got back for one tool call, as the transcript recorded it, as escaped
    table-cell markup: the first :data:`RESULT_PREVIEW` characters, the rest (up to
    :data:`RESULT_LIMIT`) behind a click; "error" first when the client marked it an error;
    "—" when the transcript holds no result.

    A cut result says so where it ends, never silently: the report's own cut at
    :data:`RESULT_LIMIT` characters, and the frame's at :data:`~replaybook._text.TEXT_LIMIT`
    (its `` …[+N chars]`` mark, or ``size``, the full result's UTF-8 bytes — the
    ``tool_result`` step's ``text_bytes`` — above what the frame kept), with the full size.
    With the door's logged ``bytes`` for the call (``door_bytes``), a size far from the
    transcript's (:data:`_DOOR_BYTES_RATIO` times, :data:`_DOOR_BYTES_APART` bytes apart) is named."""
    if _isna(text):
        return "—"
    kept, cut = _cut_words(str(text), size)
    mark = '<span class="rb-decision-deny">error:</span> ' if is_error is True or is_error is np.True_ else ""
    apart = ""
    if not _isna(size) and not _isna(door_bytes):
        full, door = int(size), int(door_bytes)
        if abs(full - door) >= _DOOR_BYTES_APART and max(full, door) >= _DOOR_BYTES_RATIO * max(min(full, door), 1):
            apart = (f'<p class="rb-note">The door logged {door:,} bytes for this call; the transcript holds '
                     f"{full:,} bytes: what the agent got back is not what the door measured (something between "
                     "them changed it, or the door counts another thing).</p>")
    if len(kept) <= RESULT_PREVIEW and not cut:
        return f'{mark}<span class="rb-result">{esc(kept)}</span>{apart}'
    return _expandable(f'{mark}<span class="rb-result">{esc(kept, RESULT_PREVIEW)}</span>', kept, cut) + apart


def _expandable(summary: str, body: str, cut: str) -> str:
    """A cell that opens on a click (▶): ``summary`` (markup) shown, ``body`` (text, its first
    :data:`RESULT_LIMIT` characters, as written) behind it, ending with ``cut`` — where and why
    it was cut (:func:`_cut_words`) — when it was."""
    note = f'<span class="rb-note"> … {cut}</span>' if cut else ""
    return (f"<details><summary>{summary}</summary>"
            f'<pre class="rb-result">{esc(body[:RESULT_LIMIT])}{note}</pre></details>')


#: Characters of a prompt, model text or call shown before the rest opens on a click.
WHAT_PREVIEW = 400


def _images_words(images: Any) -> str:
    """``[2 images]`` for a step that carried images (what the model saw beyond the text),
    ``""`` for none."""
    if _isna(images) or int(images) <= 0:
        return ""
    return f"[{int(images):,} image{'' if int(images) == 1 else 's'}]"


def what_cell(text: Any, images: Any = None, size: Any = None, limit: int = WHAT_PREVIEW,
              full: str | None = None) -> str:
    """What a prompt, a model text or a tool call (its tool and arguments, or the free text it
    sent: a patch) said, as escaped table-cell markup: the first ``limit`` characters, the rest
    (up to :data:`RESULT_LIMIT`) behind a click (▶), never silently cut (the frame's cut is
    said, with ``size``, the full text's UTF-8 bytes); ``[N images]`` after it where the step
    carried images (``images``).  ``full``: what the click opens instead of ``text`` itself (a
    call's arguments laid out, :func:`arguments_laid_out`), which also makes the cell open on a
    click.  ``""`` for no text and no images."""
    pics = _images_words(images)
    if _isna(text) or not str(text):
        return f'<span class="rb-note">{pics}</span>' if pics else ""
    kept, cut = _cut_words(str(text), size)
    tail = f' <span class="rb-note">{pics}</span>' if pics else ""
    if len(kept) <= limit and not cut and not full:
        return f"{esc(kept)}{tail}"
    body, body_cut = (kept, cut) if not full else _cut_words(full, None)
    return _expandable(f"{esc(kept, limit)}{tail}", body, body_cut)


def arguments_laid_out(tool: Any, args_key: Any) -> str | None:
    """A tool call's arguments (``args_key``, canonical JSON) laid out for reading when a value
    holds a line break — a shell heredoc, a file's text, a patch —: the tool, then one
    ``key:`` per argument, a text value on the lines after it as written (indented), other
    values as JSON.  ``None`` when no value holds a line break (the JSON reads well as it is)."""
    if _isna(args_key):
        return None
    try:
        args = json.loads(str(args_key))
    except ValueError:
        return None
    if not isinstance(args, dict) or not any(isinstance(v, str) and "\n" in v for v in args.values()):
        return None
    out = [] if _isna(tool) or not str(tool) else [str(tool)]
    for k, v in args.items():
        if isinstance(v, str) and "\n" in v:
            out.append(f"{k}:")
            out.extend("  " + line for line in v.split("\n"))
        else:
            out.append(f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}")
    return "\n".join(out)


def kept_cell(evidence: Any, digest: Any, obj: Any, transcript_text: Any, compare: bool = True) -> str:
    """The response the door kept for a call (``digest`` in ``evidence``), as table-cell markup:
    "—" with no digest; "not kept" when the store lacks it; "damaged" (the bytes no longer hash
    to the digest); else "kept", its first characters behind a click, and, with the transcript's
    record of what the agent got back (``transcript_text``, the step's ``result_text``: at most
    :data:`~replaybook._text.TEXT_LIMIT` characters), whether the two agree — "same as the
    transcript", "the transcript's text is its start" (a long result, cut in the frame),
    or "differs from the transcript" (an edited transcript, or a client that showed the agent
    something else)."""
    from ..capsule.errors import CapsuleError
    from ..replay import evidence_preview, kept_text

    if _isna(digest):
        return "—"
    try:
        pv = evidence_preview(evidence, str(digest), None if _isna(obj) else str(obj), max_bytes=1 << 20)
        full = kept_text(evidence.get(str(digest))).strip() if pv is not None else ""
    except (CapsuleError, OSError) as exc:
        return f'<span class="rb-decision-deny">damaged</span>: {esc(str(exc), 200)}'
    if pv is None:
        return '<span class="rb-note">not kept</span> (the store lacks it)'
    shown = (pv.text or "").strip()  # (secrets redacted: what the page shows; compared unredacted)
    said = ""
    if compare and not _isna(transcript_text):
        t = str(transcript_text).strip()
        kept = full
        if t == kept:
            said = "same as the transcript"
        elif len(t) >= 200 and kept.startswith(t.rstrip("…").rstrip()):
            said = "the transcript's text is its start"
        else:
            said = '<span class="rb-decision-deny">differs from the transcript</span>'
    head = "kept" + (f" · {said}" if said else "")
    return (f'<details><summary>{head}</summary><pre class="rb-result">{esc(shown, RESULT_LIMIT)}</pre>'
            f'<p class="rb-note">{esc(str(digest))}</p></details>')


def table(
    df: pd.DataFrame,
    columns: Sequence[tuple[str, str, str]],
    *,
    max_rows: int = MAX_ROWS,
    row_class: Any = None,
    empty: str = "none",
    names: bool = False,
) -> str:
    """An escaped HTML table.

    Args:
        df: the rows.
        columns: ``(column, heading, kind)``; kind is ``text`` (cut to 300 characters), ``prose``
            (whole: a note that is a finding), ``code`` (monospace), ``num``, ``ms``, ``pct``,
            ``ts`` (UTC time) or ``html`` (trusted markup built in this module).
        max_rows: rows shown; a note gives the full count when more.
        row_class: optional function ``row dict -> css class``.
        empty: text shown when ``df`` has no rows.
        names: also give each heading the frame's column name (small, under it), for a table
            that mirrors a frame a reader also meets in Python or ``replaybook join``'s output.
    """
    if df is None or len(df) == 0:
        return f'<p class="rb-note">{esc(empty)}</p>'
    shown = df.head(max_rows)
    head = "".join(f"<th>{esc(h)}" + (f'<br><code class="rb-col">{_column_name(_frame_name(c))}</code>' if names else "")
                   + "</th>" for c, h, _ in columns)
    body = []
    names = [c for c, _, _ in columns]
    for rec in shown.to_dict("records"):
        cls = row_class(rec) if row_class else ""
        tds = []
        for name, (_, _, kind) in zip(names, columns):
            c, inner = _cell(rec.get(name), kind)
            tds.append(f'<td class="{c}">{inner}</td>' if c else f"<td>{inner}</td>")
        body.append(f'<tr class="{cls}">' + "".join(tds) + "</tr>" if cls else "<tr>" + "".join(tds) + "</tr>")
    note = ""
    if len(df) > max_rows:
        note = f'<p class="rb-note">Showing the first {max_rows:,} of {len(df):,} rows.</p>'
    return f'<table class="rb-table"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>{note}'


def _column_name(name: str) -> str:
    """A frame column's ``name`` under a table heading, escaped, with a line-break opportunity
    after each ``_`` (``unclaimed_<wbr/>calls``): it may wrap there rather than widen the table
    past the page (``<wbr/>`` self-closed, as :func:`_breakable` says why)."""
    return "_<wbr/>".join(esc(part) for part in name.split("_"))


def _frame_name(column: str) -> str:
    """The frame column a display column shows (``status_html`` shows ``status``)."""
    return column[: -len("_html")] if column.endswith("_html") else column


def _not_logged_words(df: pd.DataFrame, i: int) -> str | None:
    """What the door logged in place of row ``i``'s arguments (``calls`` columns
    ``arguments_invalid``, ``arguments_bytes`` + ``arguments_digest``, ``message_bytes``), in
    words; None when it logged none of them."""
    def get(col: str) -> Any:
        return None if col not in df.columns or _isna(df[col].iat[i]) else df[col].iat[i]
    invalid, size, digest, message = (get("arguments_invalid"), get("arguments_bytes"),
                                      get("arguments_digest"), get("message_bytes"))
    if invalid is not None:
        return f"{invalid} (as logged: not an object, so not compared)"
    if size is not None:
        return (f"not logged: {int(size):,} bytes, too large" + (f"; {digest} of them" if digest is not None else "")
                + ", not compared")
    if message is not None:
        return f"not logged: a {int(message):,}-byte message the door could not read as a call"
    return None


def _args_shown(df: pd.DataFrame | None, limit: int = MAX_ROWS) -> pd.DataFrame | None:
    """``df`` with ``args_key`` replaced, for display in its first ``limit`` rows (the rows a table
    shows), by the arguments *as logged*: the ``arguments`` value in its own key order and
    number spelling, then "(compared as …)" with the canonical text the join compared when the
    two differ (key order, ``1.0`` for ``1``, spacing), or "(as logged; not compared)" where a
    loader kept arguments it could not compare (a gateway's redacted or truncated arguments, a
    Codex call whose arguments are not JSON).  A reviewer had seen only the canonical form, never
    what the log holds.  A call whose arguments the door did not log (``arguments`` None) shows
    what it logged instead: the arguments that are not an object (``arguments_invalid``), the
    size and digest of arguments too large to log (``arguments_bytes``, ``arguments_digest``) or
    the size of a line it could not read as a call (``message_bytes``) — a refused call's target
    had read "—", as if the door had logged nothing."""
    if df is None or not len(df) or "args_key" not in df.columns or "arguments" not in df.columns:
        return df
    n = min(len(df), limit + 1)
    shown = df["args_key"].astype(object).to_numpy(copy=True)
    for i in range(n):
        a = df["arguments"].iat[i]
        key = shown[i]
        if a is None or (isinstance(a, float) and math.isnan(a)) or a is pd.NA:
            instead = _not_logged_words(df, i)
            if instead is not None and _isna(key):
                shown[i] = instead
            continue
        try:  # (replaybook._json: exact integers, and room for nesting a parser accepted)
            text = a if isinstance(a, str) else _json.dumps(a, default=str).decode("utf-8")
        except (TypeError, ValueError, RecursionError):
            text = "(not shown: not writable as JSON)"
        if key is None or key is pd.NA or (isinstance(key, float) and math.isnan(key)):
            shown[i] = f"{text} (as logged; not compared)"
        elif text != key:
            shown[i] = f"{text} (compared as {key})"
    return df.assign(args_key=shown)


def _count(n: int, noun: str) -> str:
    """``1 transcript`` / ``2,000 transcripts``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def _section(title: str | None, body: str, level: int = 2, anchor: str | None = None) -> str:
    h = ""
    if title:
        aid = f' id="{esc(anchor)}"' if anchor else ""
        h = f"<h{level}{aid}>{esc(title)}</h{level}>"
    return f'<div class="rb-section">{h}{body}</div>'


def _status_badge(status: Any) -> str:
    s = "unmatched" if _isna(status) else str(status)
    return f'<span class="rb-status rb-status-{esc(s)}">{esc(s)}</span>'


#: The cloud access logs' loaders: what one of their files is called, and what a quarantine row
#: of it sets aside (a line of the line-based logs; of a CloudTrail delivery file, one JSON
#: document, a stretch of it: a record, or all from where it was cut).
_CLOUD_LOGS = {
    "aws.cloudtrail": ("CloudTrail delivery file", "record"),
    "aws.s3_access": ("S3 server access log", "line"),
    "gcp.audit": ("GCP audit log", "line"),
    "azure.storage": ("Azure Storage log", "line"),
}


def cloud_log_losses(quarantine: pd.DataFrame | None, inputs: Sequence[Mapping] = ()) -> list[dict]:
    """What the cloud access logs lost to the quarantine, one dict per file: ``log`` (its
    loader: ``aws.cloudtrail`` …), ``file`` (``source_file`` as the quarantine writes it),
    ``set_aside`` (its quarantine rows, of any kind but ``duplicate``: a repeat is counted once,
    not lost), ``kinds`` ({kind: rows}), ``lines`` (the rows' ``line_no``, NA left out) and
    ``unread`` (nothing of the file was read: its ``inputs`` row,
    :attr:`~replaybook.Incident.inputs`, counts 0 ``records``; without one, every row is
    file-level).  The requests those rows hold are in no count of the access join.  Files in
    quarantine order."""
    if quarantine is None or not len(quarantine) or not {"loader", "kind", "source_file"} <= set(quarantine.columns):
        return []
    q = quarantine[quarantine["loader"].isin(list(_CLOUD_LOGS)) & (quarantine["kind"] != "duplicate")]
    records = {str(r["path"]): r.get("records") for r in inputs if r.get("path") is not None}
    out = []
    for (f, log), g in q.groupby(["source_file", "loader"], sort=False, dropna=False):
        lines = [int(x) for x in g["line_no"].dropna()] if "line_no" in g.columns else []
        # a record of a whole-file JSON document that parsed but could not be used is numbered
        # by record, its error saying so ("record 3: …"); a damaged stretch by its line
        errs = g["error"].tolist() if "error" in g.columns else [None] * len(g)
        nums = g["line_no"].tolist() if "line_no" in g.columns else [None] * len(g)
        recs = [int(n) for n, e in zip(nums, errs)
                if not _isna(n) and isinstance(e, str) and e.startswith(f"record {int(n)}: ")]
        n_read = records.get(str(f))
        out.append({"log": str(log), "file": str(f), "set_aside": int(len(g)),
                    "kinds": {str(k): int(v) for k, v in g["kind"].value_counts(sort=False).items()},
                    "lines": [x for x in lines if x not in recs], "records": recs,
                    "unread": (n_read == 0) if n_read is not None else len(lines) == 0})
    return out


def _where_words(lines: list[int], records: list[int]) -> str:
    """``:3, 5`` (lines), `` record 2, 4`` (records of a whole-file JSON document), both, or
    ``""``; at most five numbers each."""
    def nums(xs: list[int]) -> str:
        return ", ".join(map(str, xs[:5])) + (" …" if len(xs) > 5 else "")

    return (f":{nums(lines)}" if lines else "") + (f"{',' if lines else ''} record{'s' if len(records) > 1 else ''} "
                                                  f"{nums(records)}" if records else "")


def cloud_loss_words(losses: Sequence[Mapping], *, markup: bool = True) -> list[str]:
    """:func:`cloud_log_losses` in words, one sentence per kind of log and whether its files
    were read at all: "1 CloudTrail delivery file could not be read: the requests it holds are
    not counted (``name``)", "2 lines of 1 S3 server access log set aside: the requests on them
    are not counted (``name:3, 5``)", "1 CloudTrail delivery file read only in part (2
    quarantine entries): the requests in what was set aside are not counted (``name:2, 5``)".  Files by name (the path is in Quarantine), the
    first :data:`_NAMED` of them; escaped HTML with ``markup``, plain text without."""
    def code(x: str) -> str:
        return f"<code>{_breakable(x)}</code>" if markup else x

    out = []
    for log, (label, unit) in _CLOUD_LOGS.items():
        mine = [x for x in losses if x["log"] == log]
        for unread in (True, False):
            group = [x for x in mine if bool(x["unread"]) == unread]
            if not group:
                continue
            if unread:
                named = [code(PurePosixPath(x["file"]).name) for x in group]
                head = (f"{_count(len(group), label)} could not be read: the requests "
                        f"{'it holds are' if len(group) == 1 else 'they hold are'} not counted")
            else:
                n = sum(x["set_aside"] for x in group)
                # a whole-file JSON document (an Azure {"records": […]}, a JSON array) numbers its
                # records, not its lines: "name record 3, 4", never "name:3, 4"
                named = [code(PurePosixPath(x["file"]).name + _where_words(x["lines"], x.get("records") or []))
                         for x in group]
                if unit == "line":
                    n_rec = sum(len(x.get("records") or []) for x in group)
                    what = "record" if n_rec == n else "line" if not n_rec else None
                    head = (f"{_count(n, what) if what else f'{n:,} ' + ('entry' if n == 1 else 'entries')} of "
                            f"{_count(len(group), label)} set aside: the requests "
                            f"{'on' if what == 'line' else 'in'} {'it' if n == 1 else 'them'} are not counted")
                else:  # a delivery file is one document: how many records a damaged stretch held is not known
                    head = (f"{_count(len(group), label)} read only in part ({n:,} quarantine "
                            f"{'entry' if n == 1 else 'entries'}): the requests in what was set aside are not "
                            "counted")
            kinds: dict[str, int] = {}
            for x in group:
                for k, v in x["kinds"].items():
                    kinds[k] = kinds.get(k, 0) + v
            if set(kinds) - {"invalid"}:  # pending (an unterminated last line), conflict …
                head += " (" + ", ".join(f"{v:,} {k}" for k, v in kinds.items()) + ")"
            out.append(f"{head} ({', '.join(named[:_NAMED])}"
                       + (f" and {len(named) - _NAMED:,} more" if len(named) > _NAMED else "") + ")")
    return out


def _unmapped_words(unmapped_calls: pd.DataFrame, markup: bool = True) -> str:
    """"2 allowed door calls reach objects no storage_map entry covers: ``a``, ``b``" (the
    objects, each once, the first five)."""
    n = len(unmapped_calls)
    objs = list(dict.fromkeys(str(o) for o in unmapped_calls["object"].dropna()))
    named = ", ".join((f"<code>{_breakable(o)}</code>" if markup else o) for o in objs[:5]) + \
        (f" and {len(objs) - 5:,} more" if len(objs) > 5 else "")
    return (f"{_count(n, 'allowed door call')} {'reaches' if n == 1 else 'reach'} objects no storage_map "
            f"entry covers: {named}")


def other_client_links(links: pd.DataFrame | None) -> list[dict]:
    """The storage requests a door call explains (``links``: ``AccessJoinResult.links``) that were
    made by another principal, or came from another address or user agent, than most of the
    same door session's requests (``other_principal`` / ``other_client`` true): a read someone
    else made at the agent's time, counted as the agent's.  One dict per request, in the links'
    order: ``door_session``, ``seq`` (int or None), ``resource_uri``, ``principal``,
    ``source_ip``, ``user_agent`` (str or None) and ``what`` (``another principal`` or
    ``another address/client``)."""
    if links is None or not len(links) or not {"other_principal", "other_client"} & set(links.columns):
        return []
    out = []
    for r in links.to_dict("records"):
        op, oc = r.get("other_principal"), r.get("other_client")
        if not ((not _isna(op) and bool(op)) or (not _isna(oc) and bool(oc))):
            continue
        out.append({"door_session": str(r["door_session"]),
                    "seq": None if _isna(r.get("call_seq")) else int(r["call_seq"]),
                    "resource_uri": None if _isna(r.get("resource_uri")) else str(r["resource_uri"]),
                    **{k: None if _isna(r.get(k)) else str(r[k]) for k in ("principal", "source_ip", "user_agent")},
                    "what": "another principal" if (not _isna(op) and bool(op)) else "another address/client"})
    return out


def other_client_words(flagged: Sequence[Mapping], markup: bool = True) -> str:
    """:func:`other_client_links` in a sentence: "1 storage request a door call explains came from
    another principal or client than its door session's others: ``s3://…`` by ``arn:…`` (door
    session s seq 4)" — the first three named."""
    def code(v: str) -> str:
        return f"<code>{_breakable(v)}</code>" if markup else v

    named = []
    for f in flagged[:3]:
        who = " ".join(x for x in (f["principal"] and f"by {code(f['principal'])}",
                                   f["source_ip"] and f"from {code(f['source_ip'])}",
                                   f["user_agent"] and f"({esc(f['user_agent']) if markup else f['user_agent']})")
                       if x)
        named.append(f"{code(f['resource_uri'] or '?')} {who} ({f['what']}; door session "
                     f"{esc(f['door_session']) if markup else f['door_session']} seq {f['seq']})")
    n = len(flagged)
    return (f"{_count(n, 'storage request')} a door call explains came from another principal or client than "
            f"{'its' if n == 1 else 'their'} door session's others: " + "; ".join(named)
            + (f" and {n - 3:,} more" if n > 3 else ""))


#: what "the door's own principal" is, said where the report first names it
DOOR_PRINCIPAL = ("the cloud identity the door itself uses to reach storage, as the manifest's principals give it, "
                  "so the cloud log shows the door's role, not the agent's")

#: what the report says when the manifest gives no ``principals`` for an incident with access logs
NO_PRINCIPALS = ("no principals in the manifest: storage requests are linked to door calls by object and time "
                 "alone, so a read anyone made on the agent's object at the agent's time counts as the agent's "
                 "(principals: door agent → the cloud principal it acts as)")


def _refused_row(rec: Mapping) -> str:
    return "rb-refused" if rec.get("decision") == "deny" else ""


# --------------------------------------------------------------------------------------------
# sections


def header(
    title: str,
    incident_path: str | Path,
    *,
    steps: pd.DataFrame | None = None,
    calls: pd.DataFrame | None = None,
    generated_at: datetime | None = None,
    quarantine: pd.DataFrame | None = None,
    inputs: Sequence[Mapping] = (),
    description: str | None = None,
    unexplained: pd.DataFrame | None = None,
    disagreements: Sequence[Mapping] = (),
    sessions: pd.DataFrame | None = None,
    unmapped_calls: pd.DataFrame | None = None,
    sub_agents: Mapping[str, str] | None = None,
    access_links: pd.DataFrame | None = None,
    principals_given: bool | None = None,
    packet: Mapping | None = None,
    storage_writes: Sequence[Mapping] = (),
    capsule: Any = None,
    access_offset_s: float | None = None,
    per_call: pd.DataFrame | None = None,
) -> str:
    """Title block (with the report CSS): incident title, manifest (its folder and file name
    only: a report is shared, the investigator's own paths stay out of it), generation time
    (UTC), counts of transcripts (with ``sessions``: how many a door session was assigned, how
    many are sub-agents of a conversation — ``sub_agents``, ``JoinResult.sub_agents``, found in
    ``steps`` when not given — and how many neither), transcript events, door sessions and door calls, of the
    entries set aside (``quarantine``) when there are any, linked to that section, and of the
    ``inputs`` rows (:attr:`~replaybook.Incident.inputs`) their format read nothing from
    (``read_nothing``: a format forced on the wrong file), linked to Inputs, of the storage requests
    no door call explains (``unexplained``: ``AccessJoinResult.unexplained``), linked to that
    section, with what "the door's own principal" is (:data:`DOOR_PRINCIPAL`), and the objects
    among them the door had refused a call on — each with what the logs show
    (:func:`_refused_objects`: the principal and whether it is the door's own, the time after the
    refusal and beside the door sessions of ``calls``, and, with ``per_call``
    (``AccessJoinResult.per_call``), whether the door allowed any call on the object), its time
    on the door's clock, which a note says when ``access_offset_s`` (the access join's
    storage − door clock offset, seconds: ``AccessJoin.offset_s``) is a second or more, as the
    section's does — with the door calls
    whose objects no ``storage_map`` entry covers (``unmapped_calls``:
    ``AccessJoinResult.unmapped_calls``) beside them, of the cloud log files and lines the
    quarantine holds (:func:`cloud_log_losses`: the requests in them are in no count), of the
    linked requests another principal or client made (``access_links``:
    ``AccessJoinResult.links``, :func:`other_client_links`), a note when ``principals_given`` is
    false (:data:`NO_PRINCIPALS`), of the objects the agent reached that look like copies of one dataset but hold
    different data (``disagreements``: :attr:`ReachedObjects.disagreements`), linked to that
    section, of the objects the agent read that the storage's own log holds a later write of
    (``storage_writes``: :attr:`ReachedObjects.storage_writes`, :func:`storage_write_words`), from the join's ``sessions`` frame (``SESSIONS``) the door calls whose logged tool-use
    id contradicts the transcript (``id_conflicts``, ``id_mismatches``, linked to the sessions),
    the sessions a ``max_offset_s`` other than the default joined otherwise (the columns
    :func:`with_offset_changes` adds, linked to the sessions) and the residual
    counts (``unclaimed_calls``, ``unmatched_steps``, linked to the residuals), what the replay
    packet's claims linter found in the PR body (``packet``: :meth:`~replaybook.Incident.packet_summary`,
    :func:`packet_words`, linked to the packet section), the replay capsule's verdict and decision
    (``capsule``: :meth:`~replaybook.Incident.capsule_section`, :func:`capsule_words`, linked to its
    section), and the manifest's ``description``."""
    when = generated_at or datetime.now(timezone.utc)
    manifest = Path(incident_path).resolve()  # relative: to the working directory (the report's: its folder)
    shown = Path(manifest.parent.name, manifest.name)
    facts = [f"Manifest: <code>{esc(shown.as_posix())}</code>",
             f"Generated: {esc(fmt_ts(pd.Timestamp(when)))}"]
    if steps is not None:
        n_t = steps["transcript_id"].nunique()
        linked = ""
        if sessions is not None and len(sessions) and n_t:
            linked = _assigned_words(steps, sessions, sub_agents)
        facts.append(f"{_count(n_t, 'transcript')}{linked}, {_count(len(steps), 'transcript event')}")
    if calls is not None:
        facts.append(f"{_count(calls['door_session'].nunique(), 'door session')}, "
                     f"{_count(len(calls), 'door call')} ({int((calls['decision'] == 'deny').sum()):,} refused)")
    if quarantine is not None and len(quarantine):
        unread = (quarantine["line_no"].isna() & (quarantine["loader"] == "auto")).to_numpy(dtype=bool) \
            if {"line_no", "loader"} <= set(quarantine.columns) else np.zeros(len(quarantine), bool)
        n, n_unread = int((~unread).sum()), int(unread.sum())
        if n:
            facts.append(f'<a href="#quarantine">{n:,} quarantine {"entry" if n == 1 else "entries"}</a>: '
                         "input set aside, not used")
        if n_unread:  # (a README beside the logs is not damaged evidence)
            facts.append(f'<a href="#quarantine">{_count(n_unread, "file")} in no format replaybook reads</a>: '
                         "not read")
        # the door writes whole lines, each fsync'd before it answers: a damaged one is not a
        # half-written tail but a log changed or cut after the fact (or a disk fault)
        if {"loader", "kind"} <= set(quarantine.columns):
            dq = quarantine[(quarantine["loader"] == "door") & (quarantine["kind"] == "invalid")]
            # a line that reads as JSON but breaks the format (a field of the wrong type: a writer's
            # mistake, or a log not written by replaybook's door) is not damage
            schema = dq["error"].astype(str).str.startswith("does not match door-call-log").to_numpy(bool) \
                if "error" in dq.columns else np.zeros(len(dq), bool)
            damaged, wrong = dq[~schema], dq[schema]
            if len(damaged):
                first = damaged.iloc[0]
                facts.append(f'<strong><a href="#quarantine">{_count(len(damaged), "damaged line")} in the door\'s own '
                             f"log</a></strong> (first: <code>{esc(first['source_file'])}:{esc(first['line_no'])}"
                             "</code>): the door writes each line whole before it answers, so a damaged line means "
                             "the log was changed or cut after it was written, or a disk fault — worth a look")
            if len(wrong):
                first = wrong.iloc[0]
                facts.append(f'<strong><a href="#quarantine">{_count(len(wrong), "door log line")} set aside for a '
                             f"field the format does not allow</a></strong> (first: <code>{esc(first['source_file'])}:"
                             f"{esc(first['line_no'])}</code>: {esc(str(first['error']), 200)}): each is a call the "
                             "door logged but the join cannot use — a log written by another tool, or edited by hand; "
                             "the call may show as one the door never saw")
    unmapped = False
    if unexplained is not None and len(unexplained):  # AccessJoinResult.unexplained: the alarm, up top
        from ..access_join import on_storage

        on = [on_storage(u) for u in unexplained["resource_uri"]]
        n_st = sum(on)
        by_door = int(sum(o and not _isna(d) and bool(d) for d, o in zip(unexplained["door_principal"], on)))
        from ..access_join import UNMAPPED

        unmapped = n_st and all(w == UNMAPPED for w, o in zip(unexplained["why"], on) if o)
        if unmapped:  # (not an alarm about the evidence: the manifest cannot match anything)
            facts.append(f'<a href="#access">{_count(n_st, "storage request")} could not be checked against the '
                         "door</a>: no door call's object maps to a storage URI. Add <code>storage_map</code> to "
                         "the manifest (door object prefix → storage URI prefix)")
        elif n_st:
            facts.append(f'<strong><a href="#access">{_count(n_st, "storage request")} no door call explains</a>'
                         "</strong>" + (f" ({by_door:,} made with the door's own principal: {DOOR_PRINCIPAL})"
                                        if by_door else ""))
        reached, tried = refused_then_requested(unexplained)
        # the times from the refusal and from the door sessions' calls are on the door's clock; the
        # section's table sets them beside the storage log's own request times: with the clocks
        # apart, say so here as the section does
        clock = _storage_clock_words(access_offset_s)

        def on_doors_clock(hit: pd.DataFrame) -> str:
            if not clock or not hit["since_refusal_s"].notna().any():
                return ""
            off = float(access_offset_s)
            return (f"; the times measured from door calls are on the door's clock: {clock}, so a request time the "
                    f"storage log wrote reads {_span(off)} {'later' if off > 0 else 'earlier'} than it was on "
                    "the door's clock")

        # what the logs show, and no more: whose credentials, when beside the door sessions, and
        # whether the door allowed any call on the object — not who sent it (a request "reached
        # anyway" had read as the agent getting round the door)
        for hit, how in ((reached, "reached"), (tried, "tried")):
            if len(hit):
                n_obj = hit["resource_uri"].nunique()
                facts.append(f'<strong><a href="#access">{_count(n_obj, "object")} the door refused '
                             f"{'was' if n_obj == 1 else 'were'} {how} in storage with no door call behind "
                             f"{'it' if n_obj == 1 else 'them'}</a></strong>: "
                             f"{_refused_objects(hit, calls=calls, per_call=per_call)}"
                             + ("" if hit is reached else f" ({_tried_words(hit)})")
                             + "; the logs name the credentials used, not who used them" + on_doors_clock(hit))
        others = refused_then_other_principal(unexplained)
        if len(others):  # a fact of its own: not the agent's credentials (who used them, no log says)
            n_obj = others["resource_uri"].nunique()
            facts.append(f'<a href="#access">{_count(n_obj, "object")} the door refused '
                         f"{'was' if n_obj == 1 else 'were'} requested in storage by another principal</a>: "
                         f"{_refused_objects(others, calls=calls, per_call=per_call)} — not the agent's principal; "
                         "the logs name the credentials used, not who used them" + on_doors_clock(others))
    if unexplained is not None and unmapped_calls is not None and len(unmapped_calls) and not (
            len(unexplained) and unmapped):  # (all unmapped: the storage_map advice above says it)
        head, _, objs = _unmapped_words(unmapped_calls).partition(": ")
        facts.append(f'<strong><a href="#access">{head}</a></strong>: {objs}. A request they made is listed as one '
                     "no door call explains; add their folders to <code>storage_map</code>")
    flagged = other_client_links(access_links)
    if flagged:  # a read someone else made, counted as a door call's: up top, not only in a table cell
        head, _, rest = other_client_words(flagged).partition(": ")
        facts.append(f'<strong><a href="#access">{head}</a></strong>: {rest}')
    if principals_given is False and unexplained is not None:
        head, _, rest = NO_PRINCIPALS.partition(": ")
        facts.append(f'<a href="#access">{head[0].upper() + head[1:]}</a>: {esc(rest)}')
    losses = cloud_log_losses(quarantine, inputs)
    if losses:  # the storage counts above leave these out: say so beside them
        facts.append('<strong><a href="#quarantine">Cloud access logs the join could not read whole</a></strong>: '
                     + "; ".join(cloud_loss_words(losses)))
    if sessions is not None and len(sessions):
        def total(col: str) -> int:
            return int(pd.to_numeric(sessions[col], errors="coerce").fillna(0).sum()) if col in sessions else 0

        ic = total("id_conflicts")
        if ic:  # a tamper signal: up top, not only inside a sentence of the join section
            facts.append(f'<strong><a href="#sessions">{_count(ic, "door call")} logged a different tool-use id '
                         "from the transcript step it agrees with</a></strong>: an edited or copied transcript, or "
                         "another client's call, would look like this")
        if "unknown_ids" in sessions.columns and "transcript_id" in sessions.columns:
            # (an unmatched session's own sentence says its transcript is likely missing)
            linked = sessions[sessions["transcript_id"].notna()]
            uk = int(pd.to_numeric(linked["unknown_ids"], errors="coerce").fillna(0).sum())
            if uk:
                first = linked[pd.to_numeric(linked["unknown_ids"], errors="coerce").fillna(0) > 0].iloc[0]
                facts.append(f'<strong><a href="#sessions">{_count(uk, "door call")} in sessions joined to a '
                             f"transcript logged a client tool-use id no loaded transcript has</a></strong> (first "
                             f"in door session <code>{esc(first['door_session'])}</code>): a tool call removed from "
                             "the transcript, or a call another client made, would look like this")
        im = total("id_mismatches")
        if im:  # the same tamper signal, the other way round
            facts.append(f'<strong><a href="#sessions">{_count(im, "door call")} paired by the client\'s tool-use id '
                         f"{'names' if im == 1 else 'name'} another tool or other arguments than the transcript "
                         "step with that id</a></strong>: an edited transcript or door log would look like this")
        if "default_status" in sessions.columns:  # a max_offset_s other than the default moved some verdicts
            moved = sessions[sessions["default_status"].notna()]
            if len(moved):
                r0 = moved.iloc[0]
                facts.append(f'<strong><a href="#sessions">max_offset_s {float(r0["max_offset_s"]):g} joined '
                             f'{_count(len(moved), "door session")} otherwise than the default '
                             f'({float(r0["default_max_offset_s"]):g} s) would</a></strong>: '
                             + esc(", ".join(str(d) for d in moved["door_session"][:_NAMED]))
                             + (f" and {len(moved) - _NAMED:,} more" if len(moved) > _NAMED else "")
                             + "; each one's sentence says how")
        # (unmatched_steps is the transcript's: sessions that continue one conversation repeat it)
        uc, us = total("unclaimed_calls"), transcript_total(sessions, "unmatched_steps")
        if uc or us:
            parts = ([f"{_count(uc, 'door call')} no transcript step claims"] if uc else []) + \
                    ([f"{_count(us, 'door-bound tool call')} with no door call"] if us else [])
            facts.append(f'<a href="#residuals">Left unpaired by the join</a>: {" and ".join(parts)}')
    for d in disagreements:  # copies of one dataset that disagree: the likeliest cause of a wrong figure
        objs = ", ".join(f"<code>{esc(o['object'])}</code> ({'?' if o['rows'] is None else format(o['rows'], ',')} rows)"
                         for o in d["objects"])
        what = " and ".join(w for w, on in (("rows", d["rows_differ"]), ("columns", d["columns_differ"])) if on) \
            or "values"  # (same rows and columns: a figure changed)
        facts.append(f'<strong><a href="#objects">{len(d["objects"])} files the agent reached look like one dataset '
                     f"but hold different {what}</a></strong>: {objs}")
    if storage_writes:  # the file may not be what the agent read: as much a cause as copies that disagree
        head, _, rest = storage_write_words(storage_writes).partition(": ")
        facts.append(f'<strong><a href="#objects">{esc(head)}</a></strong>: {esc(rest)}')
    pw = packet_words(packet)
    if pw:  # a false claim in the PR body is as much a finding as a call the door never saw
        head, _, rest = pw.partition(": ")
        link = f'<a href="#packet">{esc(head[0].upper() + head[1:])}</a>: {esc(rest)}'
        pc = packet_counts(packet)
        facts.append(f"<strong>{link}</strong>" if pc.get("findings") or pc.get("edited_outputs") else link)
    cw = capsule_words(capsule)
    if cw:  # what replaying the incident from its capsule showed: the incident's own answer
        head, _, rest = cw.partition(": ")
        link = f'<a href="#capsule">{esc(head[0].upper() + head[1:])}</a>: {esc(rest)}'
        facts.append(f"<strong>{link}</strong>" if _capsule_diverged(capsule) else link)
    unread = [r for r in inputs if r.get("read_nothing")]
    if unread:
        facts.append(f'<strong><a href="#inputs">{_count(len(unread), "input file")}</a> read as nothing</strong> '
                     "by the format the manifest named for "
                     + ("it" if len(unread) == 1 else "them") + ": "
                     + ", ".join(f"<code>{esc(str(r['path']))}</code> ({esc(str(r.get('format')))})"
                                 for r in unread[:5]))
    # (a transcript is one conversation: an incident's transcripts need not be one agent's)
    intro = ("<p>What each agent conversation saw, in the order it saw it: each transcript, one conversation, set "
             "beside the door's (MCP gateway's) record of every call the door decided. All times are UTC.</p>")
    if description and not _isna(description):  # the investigator's own summary, from the manifest
        intro = f"<p><b>{esc(description)}</b></p>" + intro
    return STYLE + _section(None, f"<h1>{esc(title)}</h1>" + intro
                            + "<ul>" + "".join(f"<li>{f}</li>" for f in facts) + "</ul>")


def storage_write_words(writes: Sequence[Mapping], *, named: int = 5) -> str:
    """The objects the agent read that the storage's own log holds a later write (or delete) of
    (:attr:`ReachedObjects.storage_writes`) in one plain sentence: "1 object the agent read was
    written in storage afterwards: readmissions/q3.csv (storage.objects.create by jane.doe@… at
    09:20:11.000 UTC, door clock; first read by door-… #2 at 09:00:08.700 UTC) (see What the agent
    reached)"; an object written more than once after (``writes``) has each write, in time
    order, with its principal — the agent's own and a person's — and says the file as it is now
    is what the last left (:func:`replaybook.replay.named_writes`: beyond a few, each principal's
    last); the first ``named`` objects named, the count of the others given.  "" when none."""
    if not writes:
        return ""

    def hm(ts: Any) -> str:
        return pd.Timestamp(ts).tz_convert("UTC").strftime("%H:%M:%S.%f")[:-3] + " UTC"

    def one(w: Mapping) -> str:
        return ((w.get("operation") or "write") + (f" by {w['principal']}" if w.get("principal") else "")
                + f" at {hm(w['ts'])}, door clock" + (f", {w['logged_at']}" if w.get("logged_at") else "")
                + ("" if w.get("door_call") is None else f", the agent's own: door call {w['door_call']}"
                   if w["door_call"] else ", no door call explains it"))

    def item(o: Mapping) -> str:
        ws = list(o.get("writes") or [o])
        if len(ws) == 1:
            return f"{o['object']} ({one(ws[0])}; first read by {o['who']} at {hm(o['first'])})"
        from ..replay import named_writes

        shown, n_more = named_writes(ws, key=lambda w: (w.get("principal"), None if w.get("door_call") is None
                                                        else bool(w["door_call"])))
        last = ws[-1]
        return (f"{o['object']} (first read by {o['who']} at {hm(o['first'])}; written {len(ws):,} times since"
                + (", each principal's last named" if n_more else "") + ": "
                + "; then ".join(one(w) for w in shown)
                + f" — the file on disk now is the last of these, {last.get('operation') or 'write'}"
                + (f" by {last['principal']}" if last.get("principal") else "") + f" at {hm(last['ts'])})")

    items = [item(w) for w in writes[:named]]
    more = f" and {len(writes) - named:,} more" if len(writes) > named else ""
    n = len(writes)
    return (f"{_count(n, 'object')} the agent read {'was' if n == 1 else 'were'} written in storage afterwards"
            f": {'; '.join(items)}{more} — what the agent read need not be the file as it is now "
            "(see What the agent reached)")


def _assigned_words(steps: pd.DataFrame, sessions: pd.DataFrame, sub_agents: Mapping[str, str] | None) -> str:
    """The header's words after "N transcripts": how many a door session was assigned, how many
    are a sub-agent's (counted with their parent's conversation, ``sub_agents``: sub-agent
    transcript → parent; from :func:`replaybook.join.sub_agent_parents` when ``None``) and how
    many neither (linked to the section that shows them); ``""`` when a session was assigned
    each transcript."""
    if sub_agents is None:
        from ..join import sub_agent_parents

        sub_agents = sub_agent_parents(steps)
    every = set(steps["transcript_id"].dropna().astype(str))
    # distinct transcripts: one conversation can reach the door in several sessions (continues)
    assigned = set(sessions["transcript_id"].dropna().astype(str)) & every
    subs = {t: str(p) for t, p in sub_agents.items() if t in every and t not in assigned}
    sub_in = sum(p in assigned for p in subs.values())
    sub_out = len(subs) - sub_in
    none = len(every - assigned - set(subs))
    if not sub_in and not sub_out and not none:
        return ""
    parts = [f"{len(assigned):,} assigned to a door session"]
    if sub_in:
        parts.append(f"{sub_in:,} {'a sub-agent' if sub_in == 1 else 'sub-agents'} of "
                     f"{'an assigned one' if sub_in == 1 else 'assigned ones'}")
    words = ", ".join(parts)
    if none:
        # (each part a count of its own, so that they add up to the total before the bracket)
        of = (f", and {sub_out:,} {'a sub-agent' if sub_out == 1 else 'sub-agents'} of "
              f"{'that one' if none == 1 else 'those'}" if sub_out else "")
        words += f'; <a href="#unassigned">{none:,} to none</a>{of}'
    return f" ({words})"


def transcript_total(sessions: pd.DataFrame, col: str) -> int:
    """The sum of a transcript's column of the join's ``SESSIONS`` frame (``unmatched_steps``,
    ``transcript_tool_steps``: counts of the assigned transcript's steps) over the transcripts
    the sessions were assigned, each counted once: door sessions that continue one conversation
    (``continues``) repeat their transcript's counts, and a sum over sessions counted its steps
    once per session.  0 without the column."""
    if col not in sessions or not len(sessions):
        return 0
    once = sessions[sessions["transcript_id"].notna()].drop_duplicates("transcript_id")
    return int(pd.to_numeric(once[col], errors="coerce").fillna(0).sum())


def confidence_sentence(row: Mapping, window_s: float | None = None) -> str:
    """One plain-language sentence (plain text, not HTML) on how far a session's link to its
    transcript can be trusted, from a ``SESSIONS`` row; where a ``max_offset_s`` other than the
    default joined the session otherwise (the columns :func:`with_offset_changes` adds), a second
    sentence says how (:func:`replaybook.join.offset_change_text`)."""
    out = _confidence_sentence(row, window_s)
    if not _isna(row.get("default_status")):
        from ..join import offset_change_text

        text = offset_change_text(row)
        out += f" {text[:1].upper()}{text[1:]}."
    return out


def _confidence_sentence(row: Mapping, window_s: float | None = None) -> str:
    ds = row.get("door_session")
    calls = 0 if _isna(row.get("calls")) else int(row["calls"])
    agreed = 0 if _isna(row.get("agreed")) else int(row["agreed"])
    tid = row.get("transcript_id")
    status = row.get("status")
    share = row.get("share")
    margin = row.get("margin")
    method = "" if _isna(row.get("method")) else str(row["method"])
    runner = row.get("runner_up")
    runner_agreed = row.get("runner_up_agreed")
    within = f" within {window_s:g} s" if window_s else ""

    cont = row.get("continues")
    if not _isna(tid) and not _isna(cont):
        rests = ("by the client's own tool-use ids" if "meta_id" in method else
                 "on tool and arguments at the same time: likely, not proof")
        other = row.get("other_door")
        resumed = row.get("resumes_transcript")
        if not _isna(resumed):  # (with_resumed: its transcript resumes the earlier session's)
            through = ("" if _isna(other) else f", through a second door — its calls are {other}")
            return (f"Door session {ds}: continues door session {cont}'s conversation: its transcript {tid} resumes "
                    f"transcript {resumed}, door session {cont}'s (a conversation resumed in a new file), and "
                    f"{agreed} of {_count(calls, 'call')} agree with it ({rests}); the two sessions ran one after the "
                    f"other{through}.")
        if not _isna(other):  # (with_other_doors: another door agent or server than the first session's)
            return (f"Door session {ds}: continues transcript {tid}, whose earlier calls are door session {cont}'s: "
                    f"{agreed} of {_count(calls, 'call')} agree ({rests}), through a second door — its calls are "
                    f"{other}: another door (a sub-agent's tools, or another MCP server, behind a door of its own) "
                    "in the same conversation, not a door that restarted.")
        return (f"Door session {ds}: continues transcript {tid}, whose earlier calls are door session {cont}'s: "
                f"{agreed} of {_count(calls, 'call')} agree ({rests}), and the two sessions ran one after the "
                "other — a door "
                "that restarted mid-conversation looks like this, and so does a conversation resumed in a new file "
                "whose earlier file is not among the inputs (its copy of the history holds the earlier session's "
                "calls).")
    if _isna(tid) or status == "unmatched":
        base = (f"Door session {ds}: no transcript agrees with its {_count(calls, 'call')} well enough to be "
                f"assigned, so nothing here says which conversation made them")
        if not _isna(runner) and not _isna(runner_agreed) and int(runner_agreed) > 0:
            base += f" (closest: transcript {runner}, {_count(int(runner_agreed), 'agreeing step')})"
        uk = row.get("unknown_ids")
        if not _isna(uk) and int(uk):
            base += (f"; the door logged the client's own tool-use id on {_count(int(uk), 'call')} and no loaded "
                     f"transcript has {'it' if int(uk) == 1 else 'any of them'}: this conversation's transcript is "
                     "most likely not among the inputs")
        elif not _isna(row.get("taken_transcript")):  # (with_taken_transcripts)
            base = (f"Door session {ds}: not assigned a transcript, though its calls agree with transcript "
                    f"{row['taken_transcript']} ({int(row['taken_agreed']):,} of {calls:,}), which is assigned to "
                    f"door session {row['taken_by']}: one transcript is joined to one session — if both logs "
                    "record the same calls (a gateway in front of the door), list one of them in the manifest")
        elif not _isna(row.get("far_transcript")):
            base += (f"; its calls line up with transcript {row['far_transcript']} "
                     f"({int(row['far_steps']):,} of its {int(row['far_calls']):,} calls with arguments) at a clock "
                     f"offset of {_delta_text(float(row['far_offset_ms']))}, further than the join looks "
                     f"(max_offset_s {_fmt_num(row.get('far_looked_s'), '{:g}')} s): to join them, give that "
                     f"transcript's clock in the manifest (clock_offsets: {{{row['far_transcript']}: "
                     f"{float(row['far_offset_ms']) / 1000:.1f}}}) — a wider max_offset_s widens the search for "
                     "every transcript, and one whose steps repeat another agent's calls may still not be found")
        elif (_isna(runner) or _isna(runner_agreed) or not int(runner_agreed)) and _isna(row.get("default_transcript")):
            # (a transcript the default max_offset_s joined it to: the sentence after this one says so)
            base += ("; either its transcript is not among the inputs, or the agent's clock was further from the "
                     "door's than the join looks (max_offset_s in the manifest, 300 s unless set)")
        return base + "."
    if status == "ambiguous":
        alt = (f"; transcript {runner} explains it about as well ({_count(int(runner_agreed), 'agreeing step')})"
               if not _isna(runner) and not _isna(runner_agreed) else "")
        return (f"Door session {ds}: ambiguous. Transcript {tid} agrees on {agreed} of {_count(calls, 'call')}, but an "
                f"equally good assignment exists (margin {_fmt_num(margin, '{:g}')}){alt}; treat the link as unproven.")
    share_f = 0.0 if _isna(share) else float(share)
    margin_f = 0.0 if _isna(margin) else float(margin)
    # what the content agreement compared: arguments too, or (a gateway that logs none) tool and time only
    tool_time_only = "tool_time" in method and "content" not in method
    # (some pairs by tool and time: "same canonical arguments" would claim arguments the log lacks)
    compared = ("tool" if tool_time_only else "tool and, where the log holds them, canonical arguments"
                if "tool_time" in method else "tool and canonical arguments")
    ic = row.get("id_conflicts")
    n_ic = 0 if _isna(ic) else int(ic)
    im = row.get("id_mismatches")
    n_im = 0 if _isna(im) else int(im)
    if n_ic:  # a logged tool-use id contradicts the transcript: no level of confidence holds
        level = f"Disputed: {_count(n_ic, 'tool-use id')} {'contradicts' if n_ic == 1 else 'contradict'} the link"
        how = ("for some calls the door logged the client's own tool-use ids, and they match the transcript's"
               if "meta_id" in method else f"same {compared}, at times{within}")
    elif n_im:  # the ids prove the link, but the two records disagree on what was called
        level = (f"Disputed: {_count(n_im, 'door call')} with the transcript's own tool-use "
                 f"{'id names' if n_im == 1 else 'ids name'} another tool or other arguments")
        how = "the door logged the client's own tool-use ids, and they match the transcript's"
    elif "meta_id" in method:
        level = "Certain (by tool-use id)"  # above "High confidence": the ids prove the link
        how = ("the door logged the client's own tool-use ids, and they match the transcript's"
               if method == "meta_id" else
               "for some calls the door logged the client's own tool-use ids, and they match the transcript's; "
               f"the others agree on {'tool' if 'content' not in method else 'tool, canonical arguments'} "
               f"and time{within}")
    elif share_f >= 0.9 and margin_f >= 2 and agreed >= 3 and not tool_time_only:
        level = "High confidence"
        how = f"same {compared}, at times{within}"
    elif share_f >= 0.5 and margin_f >= 1 and agreed >= 2:
        level = "Moderate confidence"
        how = f"same {compared}, at times{within}"
    else:
        level = "Weak"
        how = f"only a few calls share {'tool and time' if tool_time_only else 'tool, arguments and time'}{within}"
    s = (f"Door session {ds}: {level} — matched to transcript {tid}; {agreed} of {_count(calls, 'call')} "
         f"({_pct(share)}) agree ({how})")
    br = row.get("by_result_id")
    n_br = 0 if _isna(br) else int(br)
    if n_br:
        # (by its tool-use id; or, from a client that sends the door none, by what the door logged)
        by_what = [w for k, w in (("result_text", "the error text the door logged"), ("result_tool", "tool"),
                                  ("result_size", "the size of the door's answer")) if k in method]
        by = ("the tool-use id of a tool result" if not by_what else
              f"a tool result (by {' or '.join(by_what)}, at that time: its client sends the door no tool-use id)")
        s += (f"; {n_br:,} of them {'is' if n_br == 1 else 'are'} claimed by {by} "
              "whose tool call's own line is missing from the transcript (damaged, cut or dropped: the "
              "conversation shows where), so the door's record is all that says what was called")
    if margin_f > 0:
        s += (f"; without this link the best assignment would agree on {_fmt_num(margin_f, '{:g}')} fewer "
              f"step{'' if margin_f == 1 else 's'}")
    if level == "Moderate confidence" and agreed < 3:
        s += f"; only {_count(int(agreed), 'agreeing step')} — little evidence either way"
    if "meta_id" not in method and not tool_time_only and level in ("High confidence", "Moderate confidence"):
        s += ("; the door logged no tool-use ids for these calls, so the link rests on content: likely, "
              "not proof of the same conversation")
    if tool_time_only:
        s += ("; the gateway logged no arguments, so arguments were not compared: agreement on tool and time "
              "alone is weaker evidence")
    elif "tool_time" in method:
        s += ("; some calls agree on tool and time only (the log holds no arguments for them: a gateway that "
              "logs none, or calls whose arguments the door did not log, too large or not an object), which is "
              "weaker evidence")
    if n_im:
        s += (f"; but {_count(n_im, 'door call')} paired by tool-use id {'names' if n_im == 1 else 'name'} another "
              "tool or other arguments than the transcript's step with that id: an edited transcript or door log "
              "would look like this; compare the two in the conversation")
    uk = row.get("unknown_ids")
    n_uk = 0 if _isna(uk) else int(uk)
    if n_uk:  # a line removed from the transcript, or a call another client made in this session
        s += (f"; but {_count(n_uk, 'door call')} of this session logged a client tool-use id that neither this "
              f"transcript nor any other loaded one has: a tool call removed from the transcript, or a call another "
              f"client made through this session, would look like this")
    if n_ic:
        n = n_ic
        s += (f"; but {_count(n, 'door call')} {'agrees' if n == 1 else 'agree'} with a step of this transcript on "
              f"tool, arguments and time while the door logged a different tool-use id from the step's, so "
              f"{'it is' if n == 1 else 'they are'} not counted: an edited or copied transcript, or another "
              "client's call, would look like this")
    residual = []
    uc = row.get("unclaimed_calls")
    us = row.get("unmatched_steps")
    if not _isna(uc) and int(uc):
        residual.append(f"{_count(int(uc), 'door call')} {'has' if int(uc) == 1 else 'have'} no matching "
                        "transcript step")
    if not _isna(us) and int(us):
        residual.append(f"{_count(int(us), 'door-bound transcript tool call')} {'has' if int(us) == 1 else 'have'} "
                        "no door call")
    if residual:
        s += "; " + " and ".join(residual)
    return s + "."


def _set_aside_after(t: pd.DataFrame, quarantine: pd.DataFrame | None) -> str:
    """The quarantined lines of ``t``'s files that come after every line read from the file
    (``line N of FILE (error)``, joined), or ``""``."""
    if quarantine is None or not len(quarantine) or not len(t):
        return ""
    last = t.groupby(t["source_file"].astype(str))["line_no"].max()
    q = quarantine[quarantine["line_no"].notna() & quarantine["source_file"].astype(str).isin(last.index)]
    said = []
    for f, ln, err in zip(q["source_file"].astype(str), q["line_no"].astype(int), q["error"]):
        if ln > int(last[f]):
            said.append(f"line {ln:,} of {Path(f).name} ({err})")
    return "; ".join(said)


#: a section about the conversation when no door session has a transcript (titled, anchored)
_NO_CONVERSATION = ('<div class="rb-section"><h2 id="{anchor}">{title}</h2><p class="rb-note">No door session has a '
                    "transcript assigned, so there is no conversation to set beside the door's calls here. Transcripts "
                    'the join assigned to no session are shown, each in order, in '
                    '<a href="#unassigned">Transcripts no door session explains</a>.</p></div>')


#: the start of the caveat Claude Code writes as a user line before a local command's lines
_LOCAL_CAVEAT = "Caveat: The messages below were generated by the user while running local commands."
#: a user line made only of a local command's output, which Claude Code writes as a prompt
_LOCAL_OUTPUT = re.compile(r"\s*(?:<(local-command-stdout|local-command-stderr|bash-stdout|bash-stderr|"
                           r"local-command-caveat)>.*?</\1>\s*)+", re.S)
_COMMAND_TAG = re.compile(r"<(command-name|command-message|command-args|bash-input)>(.*?)</\1>", re.S)


def _prompt_words(text: Any, images: Any = None) -> tuple[str | None, bool]:
    """What a ``user_prompt`` row asked, for a quote, and whether it is a command:
    ``(text, False)`` for a prompt as written; ``("/clear", True)`` for a line of Claude Code's
    command tags (``<command-name>``, ``<command-args>``), ``("! ls", True)`` for a shell
    command the user ran (``<bash-input>``); ``("[1 image]", False)`` for an image with no text;
    ``(None, False)`` for what the user did not write to the agent — Claude Code's caveat before
    local commands, a local command's output (``<local-command-stdout>``, ``<bash-stdout>`` …),
    an empty line."""
    t = "" if _isna(text) else str(text)
    s = t.strip()
    if not s or s.startswith(_LOCAL_CAVEAT) or _LOCAL_OUTPUT.fullmatch(t):
        return (_images_words(images) or None), False
    tags = list(_COMMAND_TAG.finditer(s))
    if tags and not _COMMAND_TAG.sub("", s).strip():
        got = {m.group(1): m.group(2).strip() for m in tags}
        if got.get("bash-input"):
            return f"! {got['bash-input']}", True
        if got.get("command-name"):
            return " ".join(x for x in (got["command-name"], got.get("command-args", "")) if x), True
    return t, False


#: the title of :func:`asked_and_answered`'s section
ASKED_TITLE = "What each conversation was asked, and what it answered"

#: door sessions (and conversations) a report shows in full; the others are listed by name, so
#: an incident of thousands of sessions stays a page a browser opens
MAX_SESSIONS = 50

#: the prompts :func:`asked_and_answered` quotes per conversation (the first ones; the others are
#: counted): a long interactive conversation's every prompt is in the conversation section
ASKED_PROMPTS = 5


def _more_conversations(skipped: list[str], max_sessions: int) -> str:
    """The note under a section that shows ``max_sessions`` conversations: how many more there
    are, the first 200 of their door session ids (escaped), and where to see them."""
    more = f" and {len(skipped) - 200:,} more" if len(skipped) > 200 else ""
    return (f'<p class="rb-note">{_count(len(skipped), "more conversation")} not shown here (this report '
            f"shows {max_sessions}, sessions with a refused call first): door sessions "
            + esc(", ".join(skipped[:200])) + more + ". The workbook's session view shows any of them.</p>")


def asked_and_answered(steps: pd.DataFrame, sessions: pd.DataFrame, *, limit: int = 600,
                       quarantine: pd.DataFrame | None = None, calls: pd.DataFrame | None = None,
                       unassigned: Sequence[str] | None = None, named: int = 5,
                       max_sessions: int = MAX_SESSIONS, prompts: int = ASKED_PROMPTS,
                       sub_agents: Mapping[str, str] | None = None) -> str:
    """What happened, conversation by conversation, before how the join found it: per door
    session with a transcript, what the user asked (the first ``prompts`` prompts, in order, the
    count of the others given) and the agent's last text answer, quoted from the transcript
    (escaped, truncated to ``limit`` characters), so the report states the question and the
    answer in plain text.  At most ``max_sessions`` conversations, chosen and ordered as
    :func:`conversations` chooses them (past ``max_sessions``, sessions with a refused call
    first); the others are named.

    ``calls`` (a :data:`~replaybook.frames.CALLS` frame), when given: under each question, the
    door calls of the conversation's door sessions — how many the door allowed and the objects
    they reached, and each call it refused with its tool, object, call number and rule (the
    first ``named`` of each, the count of the others given); a session the join could not pair
    for sure (``status`` ambiguous) is said to be so, with the transcript that agrees as well.
    ``unassigned`` (the transcripts no
    door session was assigned, ``JoinResult.unmatched_transcripts``), when given: a closing note
    names them, each with its first prompt and its tool calls (built-in ones never pass through a
    door), and links to the section that shows them — an incident's transcripts need not all be
    the conversations the door saw; ``sub_agents`` (sub-agent transcript → parent,
    ``JoinResult.sub_agents``): a sub-agent's calls are counted with its parent's.  With no
    conversation to show (no door log, or no door session paired with a transcript) the note
    follows the line that says so.

    ``quarantine`` (a :data:`~replaybook.frames.QUARANTINE` frame, ``source_file`` as the loaders
    wrote it: :attr:`~replaybook.Incident.loaded_quarantine`), when given: lines of the
    transcript's files set aside after every line read from them (a last line cut mid-write)
    are named under the answer — the final answer may be in one of them."""
    if sessions is None or not len(sessions):  # (what each transcript was asked, all the same)
        return _with_note(_NO_CONVERSATION.format(title=ASKED_TITLE, anchor="asked"),
                          _unassigned_note(steps, unassigned, named=named, sub_agents=sub_agents, above=False))
    items = []
    rows = sessions.to_dict("records")
    # one conversation per transcript: the sessions that continue it are named with its first
    more_of: dict[str, list[str]] = {}
    apart = resumed_from(sessions)  # (a resumed file's own conversation: asked and answered apart)
    for r in rows:
        if not _isna(r.get("continues")) and str(r["door_session"]) not in apart:
            more_of.setdefault(str(r["continues"]), []).append(str(r["door_session"]))
    # each session's calls, found once (an incident can hold thousands of sessions)
    by_session = {} if calls is None else {
        str(k): g for k, g in calls.groupby(calls["door_session"].astype("string"), sort=False, dropna=True)}
    rows = [r for r in rows if not _isna(r.get("transcript_id"))
            and (_isna(r.get("continues")) or str(r["door_session"]) in apart)]
    skipped: list[str] = []
    if len(rows) > max_sessions:  # (as the conversation section chooses, so the two read side by side)
        if calls is not None:
            refused = set(calls.loc[calls["decision"] == "deny", "door_session"].dropna().astype(str))
        else:
            refused = {str(r["door_session"]) for r in rows if not _isna(r.get("refused")) and int(r["refused"])}
        rows = sorted(rows, key=lambda r: str(r["door_session"]) not in refused)  # (stable)
        skipped = [str(r["door_session"]) for r in rows[max_sessions:]]
        rows = rows[:max_sessions]
    for r in rows:
        tid = r.get("transcript_id")
        t = steps[(steps["transcript_id"] == tid) & steps["agent_id"].isna()]
        pr = t[t["kind"] == "user_prompt"]
        words = [_prompt_words(x, i)[0] for x, i in zip(pr["text"], pr["images"] if "images" in pr else [None] * len(pr))]
        said = [w for w in words if w is not None]
        answers = t[(t["kind"] == "model_request") & t["text"].notna()]["text"].tolist()
        asked = "".join(f"<blockquote>{esc(p, limit)}</blockquote>" for p in said[:prompts]) or \
            '<p class="rb-note">no prompt in the transcript</p>'
        if len(said) > prompts:
            asked += (f'<p class="rb-note">and {len(said) - prompts:,} more prompts: every one is in '
                      '<a href="#conversation">The conversation, in order</a>.</p>')
        if len(words) > len(said):  # (not what the user asked: said where every line is shown)
            n = len(words) - len(said)
            asked += (f'<p class="rb-note">{_count(n, "line")} Claude Code wrote for local commands (a caveat, a '
                      f"command's output) or left empty {'is' if n == 1 else 'are'} not quoted here; "
                      '<a href="#conversation">The conversation, in order</a> shows them.</p>')
        answered = f"<blockquote>{esc(answers[-1], limit)}</blockquote>" if answers else \
            '<p class="rb-note">no text answer in the transcript</p>'
        after = _set_aside_after(steps[steps["transcript_id"] == tid], quarantine)
        if after:
            answered += (f'<p class="rb-note">{"A later line" if answers else "But a line"} of the transcript was set '
                         f"aside, after every line read from its file: {esc(after)}. "
                         f"{'A later answer' if answers else 'The answer'} may be in it — see Quarantine.</p>")
        names = [str(r["door_session"])] + more_of.get(str(r["door_session"]), [])
        own = [by_session[n] for n in names if n in by_session]
        door = "" if calls is None else \
            f"<p>{_door_calls_words(pd.concat(own) if own else calls.iloc[0:0], names, named=named)}</p>"
        # a link the join could not prove: the calls under this question may be another's
        unsure = "" if r.get("status") != "ambiguous" else (
            " (ambiguous: " + ("another transcript" if _isna(r.get("runner_up")) else
                               f"transcript <code>{esc(r['runner_up'])}</code>")
            + " agrees with the door session as well; these door calls may be its)")
        items.append(f"<h3>Door session{'' if len(names) == 1 else 's'} "
                     + ", ".join(f"<code>{esc(n)}</code>" for n in names)
                     + f" · transcript <code>{esc(tid)}</code>{unsure}</h3><p>Asked:</p>{asked}{door}"
                     f"<p>Answered (last text):</p>{answered}")
    if not items:
        return _with_note(_NO_CONVERSATION.format(title=ASKED_TITLE, anchor="asked"),
                          _unassigned_note(steps, unassigned, named=named, sub_agents=sub_agents, above=False))
    others = _unassigned_note(steps, unassigned, named=named, sub_agents=sub_agents)
    if skipped:
        items.append(_more_conversations(skipped, max_sessions))
    intro = ("<p>Each transcript is one conversation, and an incident's transcripts need not be one agent's. The "
             "door's log does not say which conversation made a call: the join links each door session to the "
             "transcript whose tool calls agree with it, and each heading below names the pair (how sure each link "
             'is: <a href="#sessions">Sessions and the join</a>).</p>')
    return _section(ASKED_TITLE, intro + "".join(items) + others, anchor="asked")


def _door_calls_words(calls: pd.DataFrame, door_sessions: Sequence[str], *, named: int = 5) -> str:
    """One conversation's door calls in a sentence (HTML): ``Door calls: 5 — 4 allowed, reaching
    demo/, demo/cars.xpt, demo/cars.parquet; 1 refused: read_object reference/.env (#5, rule
    no-dotenv).``  With more than one door session each call number is named with its session;
    the first ``named`` objects and refused calls are named, the count of the others given."""
    c = calls[calls["door_session"].astype("string").isin([str(d) for d in door_sessions]).fillna(False)]
    if not len(c):
        return "Door calls: none in the door's log."
    c = c.sort_values(["ts", "door_session", "seq"], kind="stable")
    dec = c["decision"].astype("string")
    allowed, refused = c[dec.eq("allow").fillna(False)], c[dec.eq("deny").fillna(False)]
    asked = int(dec.eq("ask").fillna(False).sum())
    several = len(door_sessions) > 1

    def more(n: int) -> str:
        return f" and {n - named:,} more" if n > named else ""

    parts = []
    if len(allowed):
        objs = list(dict.fromkeys(str(o) for o in allowed["object"] if not _isna(o)))
        parts.append(f"{len(allowed):,} allowed" + (", reaching " + ", ".join(f"<code>{esc(o)}</code>"
                                                                              for o in objs[:named]) + more(len(objs))
                                                    if objs else ""))
    if len(refused):
        said = []
        for r in refused.head(named).to_dict("records"):
            what = " ".join(f"<code>{esc(x)}</code>" for x in (r.get("tool"), r.get("object")) if not _isna(x))
            where = (f"{esc(r['door_session'])} " if several else "") + ("" if _isna(r.get("seq")) else f"#{r['seq']}")
            why = "" if _isna(r.get("rule")) else f"rule <code>{esc(r['rule'])}</code>"
            inside = ", ".join(x for x in (where.strip(), why) if x)
            said.append((what or "a call") + (f" ({inside})" if inside else ""))
        parts.append(f"{len(refused):,} refused: " + "; ".join(said) + more(len(refused)))
    if asked:
        parts.append(f"{asked:,} on which a rule asked the user, the answer not logged")
    unknown = len(c) - len(allowed) - len(refused) - asked
    if unknown:  # (a gateway line that logs no decision)
        parts.append(f"{unknown:,} with no decision logged")
    if len(allowed) == len(c):  # (nothing refused or asked: "4 — 4 allowed" says it twice)
        return f"Door calls: {len(c):,}, all {parts[0][len(f'{len(allowed):,} '):]}."
    return f"Door calls: {len(c):,} — " + "; ".join(parts) + "."


def _with_note(section: str, note: str) -> str:
    """``section`` (one ``<div>``) with ``note`` added at its end."""
    return section[: -len("</div>")] + note + "</div>" if note else section


def _unassigned_note(steps: pd.DataFrame, unassigned: Sequence[str] | None, *, named: int = 5,
                     sub_agents: Mapping[str, str] | None = None, above: bool = True) -> str:
    """A note naming the transcripts no door session was assigned (HTML; ``""`` when none), each
    with its first prompt (cut to 120 characters) and its tool calls, its sub-agents' among them
    (``sub_agents``: sub-agent transcript → parent, ``JoinResult.sub_agents``) — built-in ones
    never pass through a door — linked to the section that shows them step by step; ``above``:
    the section shows conversations above the note (it says these are not among them)."""
    ids = [str(t) for t in (unassigned or ()) if not _isna(t)]
    if not ids or steps is None or not len(steps):
        return ""
    said = []
    for tid in ids[:named]:
        t = steps[steps["transcript_id"] == tid]
        pr = t[t["kind"] == "user_prompt"]
        words = [_prompt_words(x, i) for x, i in zip(pr["text"], pr["images"] if "images" in pr else [None] * len(pr))]
        # its first words to the agent; else the first command the user ran
        prompts = [w for w, cmd in words if w is not None and not cmd] or [w for w, _ in words if w is not None]
        subs = [x for x, p in (sub_agents or {}).items() if p == tid]
        tc = steps[steps["transcript_id"].isin([tid] + subs) & steps["kind"].eq("tool_call")]
        mcp = int(tc["server"].notna().sum()) if "server" in tc.columns else len(tc)
        theirs = subs and tc["transcript_id"].isin(subs).any()
        tools = ("no tool call" if not len(tc) else
                 f"{_count(len(tc), 'tool call')}" + (", its sub-agents' among them" if theirs else "")
                 + (" to built-in tools only (they never pass through a door)" if not mcp else
                    f", {mcp:,} of them to {'an MCP server' if mcp == 1 else 'MCP servers'}"))
        said.append(f"<code>{esc(tid)}</code> (" + (f"asked “{esc(prompts[0], 120)}”; " if prompts else "")
                    + f"{tools})")
    n = len(ids)
    return (f'<p class="rb-note">{_count(n, "transcript")} no door session was assigned'
            + (f", so {'it is' if n == 1 else 'they are'} not among the conversations above" if above else "")
            + ": " + "; ".join(said)
            + (f" and {n - named:,} more" if n > named else "")
            + f'. {"Its" if n == 1 else "Their"} steps are in <a href="#unassigned">Transcripts no door session '
              "explains</a>.</p>")


def _door_words(agents: Sequence[str], servers: Sequence[str]) -> str:
    """``agent reviewer, server review-gate`` (``agents a, b``; no servers: the agent alone)."""
    out = f"agent{'' if len(agents) == 1 else 's'} {', '.join(agents)}" if agents else "no agent logged"
    return out + (f", server{'' if len(servers) == 1 else 's'} {', '.join(servers)}" if servers else "")


def other_doors(sessions: pd.DataFrame | None, calls: pd.DataFrame | None) -> dict[str, str]:
    """The door sessions that continue another's conversation through another door, and both
    doors in words (:func:`_doors_apart`): ``agent reviewer, server review-gate, where door
    session X's calls are agent deployer, server deploy-config``."""
    return {ds: f"{mine}, where door session {cont}'s calls are {theirs}"
            for ds, (mine, cont, theirs) in _doors_apart(sessions, calls).items()}


def _doors_apart(sessions: pd.DataFrame | None, calls: pd.DataFrame | None) -> dict[str, tuple[str, str, str]]:
    """The door sessions that continue another's conversation (``sessions.continues``) through
    another door: their calls' door agent, or the MCP servers they reached, differ from the
    continued session's (a sub-agent's tools behind a door of their own, a second MCP server
    with its own door).  ``{door_session: (its door in words, the continued session, that
    session's door in words)}``, a door in words as ``agent reviewer, server review-gate``.  A
    session on the same door (a door restarted mid-conversation, a resumed conversation) is not
    in it; nor is anything without ``calls``.  Servers are compared only where both sessions
    logged them."""
    if sessions is None or calls is None or not len(sessions) or not len(calls) \
            or "continues" not in sessions.columns or not sessions["continues"].notna().any():
        return {}

    cont_of = sessions[sessions["continues"].notna()]
    need = {str(x) for x in cont_of["door_session"]} | {str(x) for x in cont_of["continues"]}
    mine = calls[calls["door_session"].astype("string").isin(need)]  # (once: not a pass per session)
    doors: dict[str, tuple[set, set]] = {}
    for ds, agent, server in zip(mine["door_session"].astype(str), mine["agent"] if "agent" in mine else
                                 [None] * len(mine), mine["server"] if "server" in mine else [None] * len(mine)):
        a, sv = doors.setdefault(ds, (set(), set()))
        if not _isna(agent):
            a.add(str(agent))
        if not _isna(server):
            sv.add(str(server))

    def door(session: str) -> tuple[list[str], list[str]]:
        a, sv = doors.get(session, (set(), set()))
        return sorted(a), sorted(sv)

    out = {}
    for ds, cont in zip(sessions["door_session"], sessions["continues"]):
        if _isna(cont):
            continue
        (a1, s1), (a0, s0) = door(str(ds)), door(str(cont))
        if (a1 and a0 and a1 != a0) or (s1 and s0 and s1 != s0):
            out[str(ds)] = (_door_words(a1, s1), str(cont), _door_words(a0, s0))
    return out


def with_other_doors(sessions: pd.DataFrame, calls: pd.DataFrame | None) -> pd.DataFrame:
    """``sessions`` with ``other_door`` (string; NA for the others): for each session that
    continues another's conversation through another door, :func:`other_doors`'s words, as the
    confidence sentences read them.  Unchanged (no new column) when there is none."""
    found = other_doors(sessions, calls)
    if not found:
        return sessions
    return sessions.assign(other_door=pd.array([found.get(str(d)) for d in sessions["door_session"]],
                                               dtype="string"))


def resumed_from(sessions: pd.DataFrame | None) -> dict[str, str]:
    """``{door session: the transcript its own transcript resumes}`` for the sessions that
    continue another session whose transcript is another (``sessions.continues``: a
    conversation resumed in a new file, both files among the inputs —
    :func:`replaybook.join.resumptions`).  Such a session's conversation is its own transcript's,
    shown apart; a session continuing one of the same transcript (a door that restarted, a
    resumed file whose first file is missing) is shown with the first."""
    if sessions is None or not len(sessions) or "continues" not in sessions.columns \
            or not sessions["continues"].notna().any():
        return {}
    tid = dict(zip(sessions["door_session"].astype(str), sessions["transcript_id"]))
    out = {}
    for ds, cont in zip(sessions["door_session"].astype(str), sessions["continues"]):
        if _isna(cont):
            continue
        mine, theirs = tid.get(ds), tid.get(str(cont))
        if not _isna(mine) and not _isna(theirs) and str(mine) != str(theirs):
            out[ds] = str(theirs)
    return out


def with_resumed(sessions: pd.DataFrame) -> pd.DataFrame:
    """``sessions`` with ``resumes_transcript`` (string; NA for the others): for each session that
    continues another whose transcript its own resumes (:func:`resumed_from`), that transcript,
    as the confidence sentences read it.  Unchanged (no new column) when there is none."""
    found = resumed_from(sessions)
    if not found:
        return sessions
    return sessions.assign(resumes_transcript=pd.array([found.get(str(d)) for d in sessions["door_session"]],
                                                       dtype="string"))


def with_far_clocks(sessions: pd.DataFrame, steps: pd.DataFrame, calls: pd.DataFrame, *, max_offset_s: float,
                    window_s: float = 60.0) -> pd.DataFrame:
    """``sessions`` (the join's ``SESSIONS`` frame) with what :func:`replaybook.join.far_clocks`
    finds for its unmatched sessions, as columns the confidence sentences read:
    ``far_transcript`` (string), ``far_offset_ms`` (float64, ms), ``far_steps`` and ``far_calls``
    (Int64), ``far_max_offset_s`` (float64, seconds: what to set) and ``far_looked_s`` (float64:
    the ``max_offset_s`` the join was given); NA for the other sessions.  Unchanged (no new
    columns) when no session has such a clock."""
    from ..join import far_clocks

    if sessions is None or not len(sessions):
        return sessions
    far = far_clocks(steps, calls, sessions, max_offset_s=max_offset_s, window_s=window_s)
    if not len(far):
        return sessions
    f = far.set_index("door_session")
    ds = sessions["door_session"]
    # (where another transcript or session lines up as well, no one transcript is named: following
    # the hint could join the wrong one; the times alone cannot tell)
    f = f[f["ambiguous_with"].isna()]
    if not len(f):
        return sessions
    return sessions.assign(far_transcript=ds.map(f["transcript_id"]), far_offset_ms=ds.map(f["offset_ms"]),
                           far_steps=ds.map(f["steps"]), far_calls=ds.map(f["calls_with_args"]),
                           far_max_offset_s=ds.map(f["max_offset_s"]), far_looked_s=float(max_offset_s))


#: seconds within which two logs' records of one call are taken for the same call (a gateway
#: in front of the door logs it a few milliseconds apart)
_SAME_CALL_S = 5.0


def with_taken_transcripts(sessions: pd.DataFrame, calls: pd.DataFrame, pairs: pd.DataFrame | None, *,
                           window_s: float = 60.0) -> pd.DataFrame:
    """``sessions`` (the join's ``SESSIONS`` frame) with, per unmatched session whose calls repeat
    the paired calls of a session the join assigned a transcript (the same tool, or one with a
    gateway's server prefix: :func:`replaybook.join.prefixed_alike`), the same arguments where both logged
    them, within ``window_s``; one call for one, at least two and half of the session's calls,
    their times a median of at most :data:`_SAME_CALL_S` apart — the same calls, not a rerun of
    them): ``taken_transcript`` (that transcript), ``taken_by`` (that session) and
    ``taken_agreed`` (Int64: how many of its calls repeat one); NA for the other sessions.  Two
    logs of the same calls (a gateway in front of the door) look like this: the join gives one
    transcript to one session, so the second log's session stays unmatched.  Unchanged (no new
    columns) when there is none."""
    if sessions is None or not len(sessions) or pairs is None or not len(pairs) or calls is None or not len(calls):
        return sessions
    assigned = sessions[sessions["transcript_id"].notna()].set_index("door_session")["transcript_id"]
    paired = calls.iloc[pairs["call_row"].astype(int).to_numpy()][["door_session", "tool", "args_key", "ts"]]
    paired = paired[paired["door_session"].isin(assigned.index)]
    win = pd.Timedelta(seconds=float(window_s or 60.0))
    found = {}
    for ds in sessions.loc[sessions["transcript_id"].isna(), "door_session"]:
        mine = calls[calls["door_session"] == ds]
        best = None
        valid = int((mine["ts"].notna() & mine["tool"].notna()).sum())
        for other, theirs in paired.groupby("door_session", sort=False):
            n, used, gaps = 0, set(), []
            for tool, args, ts in zip(mine["tool"], mine["args_key"], mine["ts"]):
                if _isna(ts) or _isna(tool):
                    continue
                near = theirs[((theirs["ts"] - ts).abs() <= win) & ~theirs.index.isin(list(used))]
                # (a gateway that logs no arguments: tool and time, as the join compares it)
                same = near if _isna(args) else near[near["args_key"].isna() | (near["args_key"] == args)]
                t = str(tool)
                same = same[[prefixed_alike(str(x), t) for x in same["tool"]]]  # (the join's own rule)
                if len(same):  # one call of theirs for one of mine: the nearest
                    gap = (same["ts"] - ts).abs()
                    used.add(gap.idxmin())
                    gaps.append(gap.min().total_seconds())
                    n += 1
            # the same calls logged twice are logged at the same moments, most of them: a session
            # that repeats another's calls later (a second agent, a rerun) is not this
            if (n >= max(2, -(-valid // 2)) and float(np.median(gaps)) <= _SAME_CALL_S
                    and (best is None or n > best[2])):
                best = (str(assigned[other]), str(other), n)
        if best:
            found[ds] = best
    if not found:
        return sessions
    ds = sessions["door_session"]
    return sessions.assign(taken_transcript=ds.map({k: v[0] for k, v in found.items()}).astype("string"),
                           taken_by=ds.map({k: v[1] for k, v in found.items()}).astype("string"),
                           taken_agreed=ds.map({k: v[2] for k, v in found.items()}).astype("Int64"))


def with_offset_changes(sessions: pd.DataFrame, steps: pd.DataFrame, calls: pd.DataFrame, *, max_offset_s: float,
                        window_s: float = 60.0, min_agreed: int = 1,
                        clock_offsets: Mapping[str, float] | None = None) -> pd.DataFrame:
    """``sessions`` (the join's ``SESSIONS`` frame, joined at ``max_offset_s``) with what
    :func:`replaybook.join.offset_changes` finds when ``max_offset_s`` is not the default: for
    each door session the default would have joined otherwise, ``max_offset_s`` and
    ``default_max_offset_s`` (float64, seconds), ``default_status``, ``default_transcript``
    (string), ``default_agreed`` (Int64), ``default_offset_ms`` (float64, ms),
    ``clock_transcript`` (string) and ``clock_offset_s`` (float64, seconds), as the confidence
    sentences, the header and :func:`findings` read them; NA for the other sessions.  Unchanged
    (no new columns, and no second join) at the default ``max_offset_s``, or when no session
    changed.  The other arguments are the join's own (``window_s``, ``min_agreed``,
    ``clock_offsets``: the manifest's)."""
    from ..join import offset_changes

    if sessions is None or not len(sessions):
        return sessions
    ch = offset_changes(steps, calls, sessions, max_offset_s=max_offset_s, window_s=window_s,
                        min_agreed=min_agreed, clock_offsets=clock_offsets)
    if not len(ch):
        return sessions
    f = ch.set_index("door_session")
    ds = sessions["door_session"]
    return sessions.assign(**{c: ds.map(f[c]).astype(f[c].dtype)
                              for c in ("max_offset_s", "default_max_offset_s", "default_status", "default_transcript",
                                        "default_agreed", "default_offset_ms", "clock_transcript", "clock_offset_s")})


def join_summary(sessions: pd.DataFrame, window_s: float | None = None, *, steps: pd.DataFrame | None = None,
                 calls: pd.DataFrame | None = None, max_offset_s: float | None = None) -> str:
    """Sessions and the join: one row per door session (``SESSIONS`` frame) — transcript,
    agreement, share, runner-up, margin, status, method, clock offset (ms), residual counts and
    the tool-use id counts — followed by one confidence sentence per session; with ``steps`` and ``calls``, a
    note on tool calls that carry no usable time (:func:`replaybook.join.untimed_note`), and with
    ``max_offset_s`` (seconds, as the join was given) too, an unmatched session whose calls line
    up with an unassigned transcript at a clock offset beyond it says so, and what to set
    (:func:`replaybook.join.far_clocks`)."""
    if sessions is None or len(sessions) == 0:
        return _section("Sessions and the join", '<p class="rb-note">No door sessions in this incident.</p>',
                        anchor="sessions")
    if steps is not None and calls is not None and max_offset_s is not None and "far_transcript" not in sessions:
        sessions = with_far_clocks(sessions, steps, calls, max_offset_s=max_offset_s, window_s=window_s or 60.0)
    if calls is not None and "other_door" not in sessions:  # a conversation that reached a second door
        sessions = with_other_doors(sessions, calls)
    if "resumes_transcript" not in sessions:  # a conversation resumed in a new file, both files given
        sessions = with_resumed(sessions)
    df = sessions.copy()
    df["status_html"] = df["status"].map(_status_badge)
    # two tables, each fitting the page: the verdicts, then what each link rests on
    cols = [
        ("door_session", "door session", "code"), ("agent", "agent", "text"),
        ("start", "first call", "ts"), ("end", "last call ended", "ts"), ("calls", "calls", "num"),
        ("refused", "refused", "num"), ("transcript_id", "transcript", "code"),
        ("agreed", "agreed", "num"), ("share", "share", "pct"),
        ("status_html", "status", "html"), ("method", "method", "text"),
    ]
    evidence = [
        ("door_session", "door session", "code"), ("transcript_tool_steps", "transcript tool steps", "num"),
        ("runner_up", "runner-up", "code"), ("runner_up_agreed", "runner-up agreed", "num"),
        ("margin", "margin", "num"), ("continues", "continues session", "code"), ("offset_ms", "offset (ms)", "ms"),
        ("unclaimed_calls", "unclaimed calls", "num"), ("unmatched_steps", "steps without call", "num"),
        ("id_conflicts", "ids contradicting", "num"), ("id_mismatches", "ids naming other calls", "num"),
        ("unknown_ids", "ids no transcript has", "num"),
    ]
    if "by_result_id" in sessions.columns and sessions["by_result_id"].fillna(0).astype(int).any():
        # (only where some tool call's own line is missing: a result's id claims its door call)
        evidence.insert(2, ("by_result_id", "claimed by a result", "num"))
    win = f" (window {window_s:g} s)" if window_s else ""
    n_s = len(sessions)
    n_m = int((sessions["status"] == "matched").sum())
    n_a = int((sessions["status"] == "ambiguous").sum())
    if n_m + n_a == 0:
        verdict = (f"<p><b>No door session is linked to a transcript</b> ({_count(n_s, 'door session')}): nothing "
                   "here says which conversation made any door call.</p>")
    else:
        verdict = (f"<p><b>{n_m:,} of {_count(n_s, 'door session')} matched to a transcript</b>"
                   + (f", {n_a:,} ambiguous" if n_a else "") + ".</p>")
    intro = verdict + (f"<p>Each door session is assigned at most one transcript, one-to-one, maximising the total "
             f"number of agreeing steps{esc(win)}. <b>share</b> = agreed ÷ calls; <b>margin</b> = how many "
             f"agreeing steps the best assignment loses if this session may not have its transcript "
             f"(0 means an equally good alternative exists).</p>")
    sentences = _sentences(sessions, window_s)
    if steps is not None and calls is not None:
        from ..join import untimed_note

        note = untimed_note(steps, calls)
        if note:
            intro += f'<p class="rb-note"><b>Untimed:</b> {esc(note)}.</p>'
    intro += ('<p class="rb-note">Under each heading, the column\'s name in <code>replaybook join</code>\'s '
              "output and in the <code>sessions</code> frame (<code>incident.join.sessions</code>).</p>")
    shared = ""
    if "continues" in sessions.columns and sessions["continues"].notna().any():
        # (the transcript's counts, on each of its sessions' rows: not to be added up)
        shared = ('<p class="rb-note"><b>transcript tool steps</b> and <b>steps without call</b> count the '
                  "transcript's own steps: door sessions that continue one conversation (<b>continues "
                  "session</b>) share its transcript and show the same counts, which belong to the "
                  "conversation once.</p>")
    return _section("Sessions and the join", intro + table(df, cols, names=True)
                    + "<h3>What each link rests on</h3>" + table(df, evidence, names=True) + shared
                    + f'<h3>How sure is each link?</h3>{sentences}',
                    anchor="sessions")


#: sessions named one by one in a sentence or list before "and N more"
_NAMED = 20


def _sentences(sessions: pd.DataFrame, window_s: float | None = None, *, cap: int = 200) -> str:
    """:func:`confidence_sentence` of each session as a list.  Above ``cap`` sessions, the
    sessions no transcript step agrees with at all (``unmatched``, nothing agreed, no runner-up)
    are one sentence naming the first :data:`_NAMED` of them, and at most ``cap`` others have
    their own (an incident of thousands of door sessions had thousands of identical lines)."""
    rows = sessions.to_dict("records")
    if len(rows) <= cap:
        return '<ul class="rb-sentences">' + "".join(f"<li>{esc(confidence_sentence(r, window_s))}</li>"
                                                    for r in rows) + "</ul>"

    def alone(r) -> bool:
        return (r.get("status") == "unmatched" and (_isna(r.get("agreed")) or not r.get("agreed"))
                and _isna(r.get("runner_up")) and _isna(r.get("default_status")))

    lonely = [str(r["door_session"]) for r in rows if alone(r)]
    others = [r for r in rows if not alone(r)]
    out = "".join(f"<li>{esc(confidence_sentence(r, window_s))}</li>" for r in others[:cap])
    if len(others) > cap:
        out += f"<li>… and {len(others) - cap:,} more door sessions with a candidate transcript (see the table above).</li>"
    if lonely:
        out += (f"<li><b>{_count(len(lonely), 'door session')}</b> agree with no transcript step at all "
                f"(unmatched): {esc(', '.join(lonely[:_NAMED]))}"
                + (f" and {len(lonely) - _NAMED:,} more" if len(lonely) > _NAMED else "") + ".</li>")
    return f'<ul class="rb-sentences">{out}</ul>'


def _offsets_differ_words(timed: pd.DataFrame) -> str:
    """Why door sessions' clock offsets (``timed``: ``SESSIONS`` rows with an ``offset_ms``)
    differ by more than :data:`~replaybook.join.OFFSETS_DIFFER_MS`, in words: sessions of one transcript were written
    on one clock, the transcript's, so there the doors' clocks differ; sessions of different
    transcripts through one door (its ``agent``) whose offsets differ point at the agents'
    clocks.  Where neither shows, both are named as possible."""
    off = pd.to_numeric(timed["offset_ms"], errors="coerce")
    tr = timed["transcript_id"].astype("string")
    why = []
    for t, g in off.groupby(tr, sort=False, dropna=True):
        if len(g) > 1 and float(g.max() - g.min()) > OFFSETS_DIFFER_MS:
            lo, hi = timed.loc[g.idxmin(), "door_session"], timed.loc[g.idxmax(), "door_session"]
            why.append(f"door sessions {lo} ({g.min():+,.0f} ms) and {hi} ({g.max():+,.0f} ms) are both transcript "
                       f"{t}'s, written on one clock, so it is the doors' clocks that differ (doors on different "
                       "machines, or a door clock set between them)")
    door = timed["agent"].astype("string").fillna("") if "agent" in timed.columns else pd.Series("", index=timed.index)
    agents = any(len(m) > 1 and float(m.max() - m.min()) > OFFSETS_DIFFER_MS
                 for m in (g.groupby(tr.loc[g.index], dropna=True).median() for _, g in off.groupby(door)))
    if agents:
        why.append("transcripts whose calls reached one door were written on clocks that differ by more than a "
                   "call's travel time (agents on different machines)")
    if not why:
        why.append("their transcripts, or the doors their calls reached, run on clocks that differ by more than a "
                   "call's travel time (agents or doors on different machines)")
    return "; ".join(why[:5]) + (f"; and {len(why) - 5:,} more" if len(why) > 5 else "")


def clock_offset(offset_ms: float | None, sessions: pd.DataFrame | None = None,
                 pairs: pd.DataFrame | None = None, *, steps: pd.DataFrame | None = None,
                 calls: pd.DataFrame | None = None) -> str:
    """The estimated clock offset (door clock − transcript clock, ms; median over agreeing
    pairs), overall and per session, with the spread of ``pairs.delta_ms`` when given.  Without
    an offset, and given ``steps`` and ``calls``, the two time ranges (transcript tool calls,
    door calls), and whether they overlap at all."""
    if offset_ms is None or _isna(offset_ms):
        body = ("<p>No transcript step agrees with any door call, so the offset between the door's clock "
                "and the transcripts' clocks cannot be estimated.</p>")
        if steps is not None and calls is not None and len(steps) and len(calls):
            st = steps.loc[steps["kind"] == "tool_call", "ts"].dropna()
            ct = calls["ts"].dropna()
            if len(st) and len(ct):
                apart = st.max() < ct.min() or ct.max() < st.min()
                body += (f"<p>The transcripts' tool calls run from {esc(fmt_ts(st.min()))} to {esc(fmt_ts(st.max()))}; "
                         f"the door's calls from {esc(fmt_ts(ct.min()))} to {esc(fmt_ts(ct.max()))}"
                         + (": <b>the two do not overlap at all</b> — are these logs of the same incident?</p>"
                            if apart else ".</p>"))
        return _section("Clock offset", body, anchor="offset")
    off = float(offset_ms)
    direction = "later than" if off > 0 else ("earlier than" if off < 0 else "the same as")
    own = (sessions["offset_ms"].dropna() if sessions is not None and len(sessions) and "offset_ms" in sessions.columns
           else pd.Series(dtype="float64"))
    differ = len(own) > 1 and float(own.max() - own.min()) > OFFSETS_DIFFER_MS
    if differ:  # (no one figure holds for all: the median over every pair is at most some sessions')
        # a session whose pairs are most of them has the median for its own offset: say whose it is
        near = [str(k) for k, v in zip(sessions.loc[own.index, "door_session"], own)
                if abs(float(v) - off) <= OFFSETS_DIFFER_MS / 2] if "door_session" in sessions.columns else []
        whose = ("an offset no one session has" if not near else
                 f"door session {esc(near[0])}'s offset, not every session's" if len(near) == 1 else
                 f"the offset of {len(near):,} of the {len(own):,} sessions, not every session's")
        body = (f"<p>The sessions' clocks differ (below): over every agreeing pair the door's clock reads a median "
                f"of {abs(off):,.0f} ms {direction} the transcripts' clocks, {whose}. Each "
                "session's own offset includes the time a call takes to travel from the client to the door; times "
                "in this report are shown as each side logged them, not corrected.</p>")
    else:
        body = (f"<p>The door's clock reads <b>{abs(off):,.0f} ms</b> {direction} the transcripts' clocks "
                f"(median of door time − transcript time over all agreeing pairs). This includes the time "
                f"a call takes to travel from the client to the door, so a small positive value is expected; "
                f"times in this report are shown as each side logged them, not corrected.</p>")
    if pairs is not None and len(pairs):
        # (the tool calls' pairs: a result standing in for its missing call was written when it ended)
        timed = ((pairs["step_kind"] != "tool_result").fillna(True).to_numpy(bool) if "step_kind" in pairs.columns
                 else np.ones(len(pairs), bool))
        d = pairs.loc[timed, "delta_ms"].dropna()
        n_res = int((~timed).sum())
        if len(d):
            body += (f'<p class="rb-note">Spread over {len(d):,} pairs: min {d.min():,.0f} ms, '
                     f"median {d.median():,.0f} ms, max {d.max():,.0f} ms"
                     + (f" (not counted: {_count(n_res, 'tool result')} standing in for "
                        f"{'its' if n_res == 1 else 'their'} missing tool call, written when the call ended)"
                        if n_res else "") + ".</p>")
    if sessions is not None and len(sessions):
        own = sessions["offset_ms"].dropna() if "offset_ms" in sessions.columns else pd.Series(dtype="float64")
        if differ:
            body += (f"<p><b>The sessions' offsets differ, from {own.min():+,.0f} ms to {own.max():+,.0f} ms</b>: "
                     f"{esc(_offsets_differ_words(sessions.loc[own.index]))}. The figure above is the median over "
                     "every pair; each session's pairs are measured from its own offset, in the table below.</p>")
        shown = sessions
        if "by_result_id" in sessions.columns and "agreed" in sessions.columns:
            # the pairs the offset is read from: a call a result's id claims has no time of its own
            by_res = pd.to_numeric(sessions["by_result_id"], errors="coerce").fillna(0)
            shown = sessions.assign(agreed=pd.to_numeric(sessions["agreed"], errors="coerce") - by_res)
            if int(by_res.sum()):
                body += (f'<p class="rb-note">The pairs below are those the offsets are read from, as the spread '
                         f"above: {_count(int(by_res.sum()), 'door call')} claimed by a tool result "
                         "(its tool call's line missing) count among a session's agreed calls, not here.</p>")
        body += table(shown, [("door_session", "door session", "code"), ("transcript_id", "transcript", "code"),
                              ("offset_ms", "offset (ms)", "ms"), ("agreed", "pairs", "num")])
        body += _far_pairs(pairs, sessions)
    return _section("Clock offset", body, anchor="offset")


def _far_pairs(pairs: pd.DataFrame | None, sessions: pd.DataFrame, far_ms: float = FAR_PAIR_MS) -> str:
    """:func:`far_pairs` as a table; "" when there are none.  The spread line gives only the max:
    this says which pair it is."""
    far = far_pairs(pairs, sessions, far_ms)
    if not len(far):
        return ""
    n = len(far)
    cols = [("door_session", "door session", "code"), ("call_seq", "call seq", "num"),
            ("step_seq", "step", "num"), ("tool", "tool", "code"), ("args_key", "arguments", "code"),
            ("step_ts", "transcript time (UTC)", "ts"), ("call_ts", "door time (UTC)", "ts"),
            ("off_by", "off the session's offset (ms)", "ms")]
    waited = far["waited"].to_numpy(bool)
    if waited.any():  # (the door received it between the agent's asking and the result: say so plainly)
        far = far.assign(reading=[far_pair_text(o, True) if w else "" for o, w in zip(far["off_by"], waited)])
        cols.append(("reading", "what it says", "prose"))
    return (f'<p><b>{_count(n, "agreeing pair")} lie{"s" if n == 1 else ""} more than {far_ms / 1000:g} s from '
            f"{'its' if n == 1 else 'their'} session's offset</b>. One clock does not drift that far within a session: such a pair is a "
            "call that waited (for an approval, say) before the door logged it, a retry, or another call with "
            "the same tool and arguments that the join took for this one. Compare the two times below"
            + (f"; {_count(int(waited.sum()), 'call')} reached the door after the agent asked for "
               f"{'it' if waited.sum() == 1 else 'them'} and before {'its' if waited.sum() == 1 else 'their'} "
               "result was written: it waited, most likely for the user's approval"
               if waited.any() else "") + ".</p>"
            + table(far, cols))


def timeline_section(steps: pd.DataFrame, calls: pd.DataFrame, pairs: pd.DataFrame | None = None,
                     access: pd.DataFrame | None = None, *, access_links: pd.DataFrame | None = None,
                     access_duplicates: pd.DataFrame | None = None, max_marks: int = 5000,
                     offset_ms: float | None = None, access_offset_s: float | None = None,
                     sessions: pd.DataFrame | None = None) -> str:
    """The transcript-vs-door timeline (:func:`replaybook.views.charts.timeline`) embedded as an
    offline HTML fragment (Vega JavaScript inlined); with ``access`` a third lane of cloud
    storage requests, linked to the door calls that explain them (``access_links``), each
    request drawn once (the rows ``access_duplicates`` names repeat another: left out).

    Each lane is drawn at its own log's times.  With ``offset_ms`` (the join's clock offset,
    door − transcript, ms: ``JoinResult.offset_ms``) or ``access_offset_s`` (the access join's,
    cloud − door, seconds: ``AccessJoin.offset_s``) of a second or more, a note says which way
    the lines joining the lanes lean and why, so a storage request drawn before the door call
    that explains it does not read as one that came first."""
    from ..views.charts import chart_html, timeline

    if access is not None and access_duplicates is not None and len(access_duplicates):
        access = access.drop(index=[i for i in access_duplicates["access_index"] if i in access.index])
    chart = timeline(steps, calls, pairs, access, access_links=access_links, max_marks=max_marks)
    note = ('<p class="rb-note">Dots: transcript events (prompts, model requests, tool calls) and door calls '
            "(green allowed, red cross refused). Lines join each transcript tool call to the door call it agrees "
            "with. Hover for details; drag or scroll to zoom in time.</p>")
    if access is not None and len(access):
        note += ('<p class="rb-note">Squares in the storage lane: the cloud\'s own access log. Dashed lines join a '
                 "door call to the storage requests it explains; requests no door call explains have a row of "
                 "their own at the top, titled “cloud storage access no door call explains”.</p>")
    note += _lane_clocks_note(offset_ms, access_offset_s if access is not None and len(access) else None, sessions)
    return _section("Timeline", note + chart_html(chart), anchor="timeline")


def _lane_clocks_note(offset_ms: float | None, access_offset_s: float | None,
                      sessions: pd.DataFrame | None = None) -> str:
    """Which way the timeline's lines lean, when the lanes' clocks differ by a second or more
    (``offset_ms``: door − transcript, ms; ``access_offset_s``: cloud − door, seconds); when the
    door sessions' own offsets (``sessions.offset_ms``) differ, by each session's, not the
    median."""
    said = []
    own = (sessions["offset_ms"].dropna() if sessions is not None and len(sessions) and "offset_ms" in sessions.columns
           else pd.Series(dtype="float64"))
    if len(own) > 1 and float(own.max() - own.min()) > OFFSETS_DIFFER_MS:
        said.append(f"the door's clock reads from {own.min():+,.0f} to {own.max():+,.0f} ms off the transcripts', by "
                    "session (<a href=\"#offset\">clock offset</a>), so a line from a tool call to its door call leans "
                    "by its own session's offset")
    elif offset_ms is not None and not _isna(offset_ms) and abs(float(offset_ms)) >= 1000:
        off = float(offset_ms)
        said.append(f"the door's clock reads {_duration_words(abs(off))} {'ahead of' if off > 0 else 'behind'} the "
                    f"transcripts' (<a href=\"#offset\">clock offset</a>), so a line from a tool call to its door call "
                    f"leans {'forward' if off > 0 else 'back'} by that much")
    if access_offset_s is not None and not _isna(access_offset_s) and abs(float(access_offset_s)) >= 1:
        ms = float(access_offset_s) * 1000
        said.append(f"the storage log's clock reads {_duration_words(abs(ms))} {'ahead of' if ms > 0 else 'behind'} "
                    f"the door's, so a dashed line from a door call to a storage request it explains leans "
                    f"{'forward' if ms > 0 else 'back'} by that much (the access join took the difference off "
                    "before comparing times)")
    if not said:
        return ""
    return ('<p class="rb-note">Each lane is drawn at its own log\'s times: ' + "; ".join(said) + ".</p>")


def _with_rows(calls: pd.DataFrame, keep: pd.Series) -> pd.DataFrame:
    """The ``keep`` rows of ``calls``, each with ``frame_row``: its position in ``calls`` (the join's
    ``pairs.call_row``)."""
    mask = keep.to_numpy(dtype=bool, na_value=False)
    return calls[mask].assign(frame_row=np.flatnonzero(mask))


def _result_bytes(steps: pd.DataFrame) -> pd.Series:
    """Per ``tool_call`` row of ``steps`` (its index), the full size in UTF-8 bytes of the result the
    transcript recorded for it: the ``text_bytes`` of its ``tool_result`` row (same transcript,
    same ``call_id``) — the call's ``result_text`` is that row's text, cut to
    :data:`~replaybook._text.TEXT_LIMIT` characters.  NA when unknown.

    Where a transcript gives one ``call_id`` to several calls (a Codex or OTel provider that
    numbers each answer's calls from ``call_0``), a call's result is the first one after it
    (by ``seq``) before the id's next call; an id of one call takes its first result wherever
    it lies (results can come before their call in a resumed transcript)."""
    tc = steps[steps["kind"] == "tool_call"]
    if not {"call_id", "text_bytes"} <= set(steps.columns) or not len(tc):
        return pd.Series(pd.NA, index=tc.index, dtype="Int64")
    keys = ["transcript_id", "call_id"]
    rs = steps.loc[(steps["kind"] == "tool_result") & steps["call_id"].notna(), [*keys, "seq", "text_bytes"]]
    got = tc[keys].merge(rs.drop_duplicates(keys, keep="first").drop(columns="seq"), on=keys, how="left")["text_bytes"]
    got = pd.Series(got.to_numpy(), index=tc.index).astype("Int64")
    known = tc[keys].notna().all(axis=1) & tc["seq"].notna()
    reused = tc[known].duplicated(keys, keep=False)
    if reused.any():  # each call of a reused id: the first result after it
        calls = tc[known][reused][[*keys, "seq"]].astype({"seq": "int64"}).assign(row=lambda d: d.index)
        res = rs[rs["seq"].notna()].astype({"seq": "int64"})
        res = res.merge(calls[keys].drop_duplicates(), on=keys)  # (results of the reused ids)
        took = pd.merge_asof(res.sort_values("seq"), calls.sort_values("seq").rename(columns={"seq": "call_seq"}),
                             left_on="seq", right_on="call_seq", by=keys, direction="backward",
                             allow_exact_matches=False).dropna(subset=["row"])
        took = took.drop_duplicates("row", keep="first")
        got.loc[calls["row"]] = pd.NA
        got.loc[took["row"].astype("int64").to_numpy()] = took["text_bytes"].to_numpy()
    return got


def _matched_steps(pairs: pd.DataFrame | None, steps: pd.DataFrame | None) -> pd.DataFrame:
    """(door_session, call_row) → call_id, step_seq, transcript, and the step's result text and its
    full size (``step_result_bytes``: :func:`_result_bytes`).

    ``call_row`` is the call's position in the ``calls`` frame the join was given (a damaged or
    merged log can repeat a ``seq``, so the number alone may name two calls)."""
    if pairs is None or len(pairs) == 0:
        return pd.DataFrame(columns=["door_session", "call_row", "step_call_id", "step_seq", "step_transcript"])
    m = pairs[["door_session", "call_row", "call_id", "step_seq", "transcript_id"]].rename(
        columns={"call_id": "step_call_id", "transcript_id": "step_transcript"})
    if steps is not None and len(steps) and "result_text" in steps.columns:
        st = steps.loc[steps["kind"] == "tool_call", ["transcript_id", "seq", "result_text", "is_error"]].rename(
            columns={"transcript_id": "step_transcript", "seq": "step_seq", "result_text": "step_result"})
        st = st.assign(step_result_bytes=_result_bytes(steps))
        if "step_kind" in pairs.columns and (pairs["step_kind"] == "tool_result").any():
            # a result standing in for its missing tool call (the join's pairs.step_kind): its own text
            rs = steps.loc[steps["kind"] == "tool_result", ["transcript_id", "seq", "text", "is_error"]].rename(
                columns={"transcript_id": "step_transcript", "seq": "step_seq", "text": "step_result"})
            rs = rs.assign(step_result_bytes=steps.loc[rs.index, "text_bytes"] if "text_bytes" in steps.columns
                           else pd.NA)
            is_res = (pairs["step_kind"] == "tool_result").fillna(False).to_numpy(bool)
            m = pd.concat([m[~is_res].merge(st, on=["step_transcript", "step_seq"], how="left"),
                           m[is_res].merge(rs, on=["step_transcript", "step_seq"], how="left")])
        else:
            m = m.merge(st, on=["step_transcript", "step_seq"], how="left")
    return m


def session_calls(calls: pd.DataFrame, pairs: pd.DataFrame | None, door_session: str, *,
                  steps: pd.DataFrame | None = None, max_rows: int = MAX_ROWS,
                  quarantine: pd.DataFrame | None = None, evidence: Any = None) -> str:
    """What one door session's calls reached, in time order (then ``seq``): time, tool, object,
    decision, rule, rows, bytes, the error the door logged, arguments, the seq of the transcript
    step the join matched to each call ("—" when none) and what that step got back, as the
    transcript recorded it (:func:`result_cell`).  Each line of the session's log files that
    ``quarantine`` (``source_file`` as the loaders wrote it, as in ``calls``) set aside is a row
    of its own, decision "set aside", before the first call read from a later line.  With
    ``evidence`` (the capsule's :class:`~replaybook.capsule.store.EvidenceStore`:
    :func:`replaybook.views.session.evidence_store`), a column says whether the door kept each
    call's response and whether the transcript's record of it agrees (:func:`kept_cell`)."""
    # in time order: a door that restarted numbers its calls from 1 again, and by number its two
    # runs interleave (the number is still the first column)
    c = _with_rows(calls, calls["door_session"] == door_session).sort_values(
        ["ts", "seq"], kind="stable", na_position="last")
    m = _matched_steps(pairs, steps)
    m = m[m["door_session"] == door_session].drop(columns=["door_session"])
    c = c.merge(m, left_on="frame_row", right_on="call_row", how="left")
    if "step_result" in c.columns:
        sizes = c["step_result_bytes"] if "step_result_bytes" in c.columns else [None] * len(c)
        door = c["bytes"] if "bytes" in c.columns else [None] * len(c)
        c["got_back"] = [result_cell(t, e, n, b) for t, e, n, b in zip(c["step_result"], c["is_error"], sizes, door)]
    else:
        c["got_back"] = "—"
    c = _args_shown(c, max_rows)
    step_col = ("step_seq", "step", "num")
    if steps is not None and "step_transcript" in c.columns and "agent_id" in steps.columns:
        # a sub-agent numbers its steps from 0 too: its steps are named as its own
        agents = steps.loc[steps["agent_id"].notna(), ["transcript_id", "agent_id"]].drop_duplicates("transcript_id")
        agent_of = dict(zip(agents["transcript_id"].astype(str), agents["agent_id"].astype(str)))
        if agent_of and c["step_transcript"].astype("string").isin(list(agent_of)).fillna(False).any():
            c["step_shown"] = [None if _isna(q) else f"{int(q)} (sub-agent {agent_of[str(t)]})"
                               if not _isna(t) and str(t) in agent_of else str(int(q))
                               for q, t in zip(c["step_seq"], c["step_transcript"])]
            step_col = ("step_shown", "step", "text")
    cols = [("seq", "seq", "num"), ("ts", "time (UTC)", "ts"), ("tool", "tool", "code"),
            ("object", "object", "code"), ("decision", "decision", "text"), ("rule", "rule", "code"),
            ("rows", "rows returned", "num"), ("bytes", "bytes", "num"), ("error", "door error", "text"),
            ("args_key", "arguments", "code"), step_col,
            ("got_back", "what the agent got back", "html")]
    if "approval" in c.columns and c["approval"].notna().any():  # a rule asked the user: their answer
        cols.insert(6, ("approval", "the user, asked", "text"))
    if evidence is not None and "response_digest" in c.columns and c["response_digest"].notna().any():
        texts = c["step_result"] if "step_result" in c.columns else [None] * len(c)
        c["kept"] = [kept_cell(evidence, d, o, t) for d, o, t in zip(c["response_digest"], c["object"], texts)]
        cols.append(("kept", "response the door kept", "html"))
    agent = c["agent"].dropna().iloc[0] if len(c) and c["agent"].notna().any() else None
    sub = _count(len(c), "call") + (f", agent {agent}" if agent is not None else "")
    shared = c["seq"].value_counts()
    shared = sorted(int(k) for k in shared[shared > 1].index)
    if shared:
        nums = ", ".join(f"#{k}" for k in shared[:10]) + (f" and {len(shared) - 10:,} more" if len(shared) > 10 else "")
        sub += (f"; {nums} {'is' if len(shared) == 1 else 'are each'} carried by more than one call: the door "
                "restarted and numbered its calls from 1 again, or its logs were merged — the rows are in time "
                "order, and a number alone does not name one call")
    if quarantine is not None and len(quarantine) and len(c):
        placed = [(str(f), int(ln)) if not (_isna(f) or _isna(ln)) else None
                  for f, ln in zip(c["source_file"], c["line_no"])]
        c = _insert_set_aside(c, placed, {p[0] for p in placed if p is not None}, quarantine,
                              {"decision": "set aside", "got_back": ""}, "error")
    return _section(f"Door session {door_session}",
                    f'<p class="rb-note">{esc(sub)}</p>' + table(c, cols, max_rows=max_rows, row_class=_refused_row),
                    level=3)


def all_session_calls(calls: pd.DataFrame, pairs: pd.DataFrame | None, sessions: pd.DataFrame | None = None, *,
                      steps: pd.DataFrame | None = None, max_rows: int = MAX_ROWS,
                      quarantine: pd.DataFrame | None = None, max_sessions: int = MAX_SESSIONS,
                      evidence: Any = None) -> str:
    """:func:`session_calls` for every door session (in ``sessions`` order when given), each with
    the lines of its files ``quarantine`` set aside.  Above ``max_sessions`` sessions, those with
    a transcript come first, then those with a refused call; the first ``max_sessions`` are
    shown in full and the others in one table (session, agent, calls, refused, first and last
    call, UTC)."""
    if sessions is not None and len(sessions):
        order = list(sessions["door_session"])
    else:
        order = list(pd.unique(calls.sort_values("ts")["door_session"].dropna()))
    rest = pd.DataFrame()
    if len(order) > max_sessions:
        refused = set(calls.loc[calls["decision"] == "deny", "door_session"].dropna().astype(str))
        linked = (set(sessions.loc[sessions["transcript_id"].notna(), "door_session"].astype(str))
                  if sessions is not None and len(sessions) else set())
        # a transcript's sessions first (what the agent under review did), then refusals
        order = sorted(order, key=lambda s: (str(s) not in linked, str(s) not in refused))  # (stable)
        order, more = order[:max_sessions], order[max_sessions:]
        c = calls[calls["door_session"].isin(more)]
        rest = (c.assign(refused=c["decision"].eq("deny"))
                .groupby("door_session", sort=False)
                .agg(agent=("agent", "first"), calls=("seq", "size"), refused=("refused", "sum"),
                     first=("ts", "min"), last=("ts", "max"))
                .reindex(more).reset_index())
    parts = [session_calls(calls, pairs, s, steps=steps, max_rows=max_rows, quarantine=quarantine, evidence=evidence)
             for s in order]
    intro = ("<p>Per door session, every call in the door's order: what it reached (object), what the door "
             "decided and returned, the transcript tool call the join matched it to and what the agent got back, "
             "as its transcript recorded it (a long result opens on a click, ▶). Refused calls are "
             "highlighted.</p>")
    if not parts:
        intro += '<p class="rb-note">No door calls.</p>'
    if len(rest):
        parts.append(_section(
            f"{_count(len(rest), 'more door session')}, not shown call by call",
            f"<p>This report shows {max_sessions} sessions call by call (those with a transcript first, "
            "then those with a refused call). The calls of these are in the workbook's session view, and in "
            "<code>replaybook load calls</code>.</p>"
            + table(rest, [("door_session", "door session", "code"), ("agent", "agent", "code"),
                           ("calls", "calls", "num"), ("refused", "refused", "num"),
                           ("first", "first call (UTC)", "ts"), ("last", "last call (UTC)", "ts")],
                    max_rows=max_rows), level=3))
    return _section("What each call reached", intro + "".join(parts), anchor="calls")


_WHO = {"user": "user", "model": "model", "tool call": "tool call", "door": "door (no step)"}


def _who(role: str, agent_id: Any) -> str:
    """``tool call`` / ``tool call (sub-agent a1b2)``: the "who" cell of a conversation row."""
    return role if _isna(agent_id) else f"{role} (sub-agent {agent_id})"


def conversations(steps: pd.DataFrame, calls: pd.DataFrame, join: Any, *, max_rows: int = MAX_ROWS,
                  limit: int = 400, quarantine: pd.DataFrame | None = None,
                  max_sessions: int = MAX_SESSIONS) -> str:
    """Per door session with a transcript, the conversation in the order the agent lived it
    (:func:`replaybook.views.session.conversation`): each prompt, each model request with its
    text (cut to ``limit`` characters), each tool call with what the door decided and reached
    and what the agent got back (:func:`result_cell`), a sub-agent's steps among its parent's,
    and door calls no step claims at their time.  Each line of the transcript's files that
    ``quarantine`` (:data:`~replaybook.frames.QUARANTINE`, ``source_file`` as the loaders wrote
    it, as in ``steps``: :attr:`replaybook.Incident.loaded_quarantine`) set aside is a row of its own where
    the line stood (before the first step read from a later line of that file): a reader of the
    conversation sees that something is missing there.  At most ``max_sessions`` conversations
    (sessions with a refused call first); the others are named.  Empty when no session has a
    transcript."""
    from ..views.session import conversation

    if join is None or not len(join.sessions):
        return ""
    if not join.sessions["transcript_id"].notna().any():
        return _NO_CONVERSATION.format(title="The conversation, in order", anchor="conversation")
    results = None
    if len(steps) and "result_text" in steps.columns:
        tc = steps[steps["kind"] == "tool_call"]
        results = {(str(t), int(q)): (x, e, a, n) for t, q, x, e, a, n in
                   zip(tc["transcript_id"], tc["seq"], tc["result_text"], tc["is_error"], tc["args_key"],
                       _result_bytes(steps))
                   if not _isna(q)}
    parts = []
    # a session that continues another's transcript is in that conversation (the door restarted;
    # a resumed conversation): the conversation is shown once, under its first session
    # (a session whose transcript resumes the continued session's is that file's conversation,
    # shown apart, its sentence naming the session it continues)
    apart = resumed_from(join.sessions)
    linked = [r for r in join.sessions.to_dict("records") if not _isna(r.get("transcript_id"))
              and (_isna(r.get("continues")) or str(r["door_session"]) in apart)]
    more_of = {}
    second = _doors_apart(join.sessions, calls)  # continuing sessions behind another door
    if "continues" in join.sessions.columns:
        for a, b in zip(join.sessions["continues"], join.sessions["door_session"]):
            if not _isna(a) and str(b) not in apart:
                more_of.setdefault(str(a), []).append(str(b))
    skipped: list[str] = []
    if len(linked) > max_sessions:
        refused = set(calls.loc[calls["decision"] == "deny", "door_session"].dropna().astype(str))
        linked = sorted(linked, key=lambda r: str(r["door_session"]) not in refused)  # (stable)
        skipped = [str(r["door_session"]) for r in linked[max_sessions:]]
        linked = linked[:max_sessions]
    for r in linked:
        conv = conversation(steps, calls, join, r["door_session"])
        if conv is None or not len(conv):
            continue
        got, what, who = [], [], []
        full = _step_texts(steps, conv)  # (the conversation's own cells are cut and spaced for a chart)
        for c in conv.to_dict("records"):
            lane = c["lane"]
            who.append(_who(_WHO.get(lane, lane), c["agent_id"]))
            key = (str(c["transcript_id"]), int(c["step_seq"])) \
                if not _isna(c["step_seq"]) and not _isna(c["transcript_id"]) else None
            text, images, size = full.get(key, (None, None, None))
            if lane == "tool call" and c.get("call_missing"):  # only its result remains
                what.append(esc(_missing_call_text(c, steps, quarantine)))
                res = _result_of(steps, c["transcript_id"], c["step_seq"])
                got.append(result_cell(*res) if res is not None else "—")
            elif lane == "tool call":
                res = results.get(key) if results is not None and key is not None else None
                # the whole arguments; a call whose input is free text (Codex's apply_patch): that text
                args = res[2] if res is not None and not _isna(res[2]) else text if not _isna(text) else c["text"]
                what.append(what_cell(f"{c['tool'] or ''} {args or ''}".strip(),
                                      full=arguments_laid_out(c["tool"], args)))
                got.append((result_cell(res[0], res[1], res[3]) if res is not None else "—") + _images_after(images))
            elif lane == "door":
                what.append(esc(f"{c['tool'] or ''} {c['text'] or ''}".strip()))
                got.append("—")
            else:
                if _isna(text) and not c["text"]:
                    what.append(esc("(request to the model)" if lane == "model" else "")
                                + (f' <span class="rb-note">{_images_words(images)}</span>' if _images_words(images)
                                   else ""))
                else:
                    what.append(what_cell(c["text"] if _isna(text) else text, images, size))
                got.append("")
        # a call "the door never saw" where the door's log of the session has a damaged line: say so
        conv = conv.assign(reach=_on_damaged_door_lines(conv, calls, quarantine))
        # the door's own call number beside what it reached: the door tables and the objects
        # section name calls by it ("door-…-a1 #2"), the conversation by the transcript's step
        conv = conv.assign(who=who, what=what, got_back=got,
                           door=[("" if _isna(c.get("call_session")) or c["call_session"] == str(r["door_session"])
                                  else f"door session {c['call_session']} ")
                                 + (f"#{int(c['call_seq'])} " if not _isna(c["call_seq"]) else "") + c["reach"]
                                 if not _isna(c["reach"]) else ("" if lane in ("user", "model") else "—")
                                 for c, lane in zip(conv.to_dict("records"), conv["lane"])])
        # a model request without text only called tools: its calls are the rows that follow
        conv = conv[~((conv["lane"] == "model") & conv["text"].fillna("").eq(""))]
        conv = _with_set_aside(conv, steps, r["transcript_id"], quarantine)
        body = table(conv, [("step_seq", "step", "num"), ("ts", "time (UTC)", "ts"), ("who", "who", "text"),
                            ("what", "what", "html"), ("door", "what the door decided and reached", "text"),
                            ("got_back", "what the agent got back", "html")],
                     max_rows=max_rows, row_class=lambda rec: "rb-refused" if rec.get("status") == "refused" else "")
        off = r.get("offset_ms")
        clock = "" if _isna(off) or abs(float(off)) < 1 else (
            f"; the door's clock reads {_duration_words(abs(float(off)))} {'later' if off > 0 else 'earlier'} for this "
            f"session, so its table below shows these calls that much {'later' if off > 0 else 'earlier'}")
        more = more_of.get(str(r["door_session"]), [])
        again = [m for m in more if m not in second]  # (the same door: restarted, or resumed)
        then = "".join(
            f"; the conversation went on in door session{'' if len(ms) == 1 else 's'} {', '.join(ms)} ({why})"
            for ms, why in ((again, "the door restarted, or the conversation was resumed"),
                            ([m for m in more if m in second],
                             "a second door in the same conversation: " + "; ".join(
                                 f"{m}'s calls are {second[m][0]}" for m in more if m in second)))
            if ms) + (", whose calls are named by session" if more else "")
        ds_ = str(r["door_session"])
        if ds_ in apart:  # a resumed file's own part; its earlier part is another session's conversation
            then += (f"; it resumes transcript {apart[ds_]}: the conversation's earlier part is door session "
                     f"{r['continues']}'s")
        later = [d for d, c in zip(join.sessions["door_session"].astype(str), join.sessions.get(
            "continues", pd.Series([None] * len(join.sessions)))) if d in apart and str(c) == ds_]
        if later:
            then += (f"; the conversation was resumed in a new file, its later part door session"
                     f"{'' if len(later) == 1 else 's'} {', '.join(later)}'s")
        parts.append(_section(f"Door session {', '.join([str(r['door_session'])] + more)} · transcript "
                              f"{r['transcript_id']}",
                              f'<p class="rb-note">{esc(_count(len(conv), "row"))}, in time order on the '
                              f"transcript's clock{esc(clock)}{esc(then)}</p>" + body,
                              level=3))
    if not parts:
        return _NO_CONVERSATION.format(title="The conversation, in order", anchor="conversation")
    if skipped:
        parts.append(_more_conversations(skipped, max_sessions))
    intro = ("<p>What each agent was asked, what it said, what it called and what it got back, in the order it "
             "happened, from its transcript; beside each tool call, what the door decided and reached (<b>step</b> "
             "is the transcript's step number, as in the tables below; <b>#N</b> beside what the door reached is "
             f"the door's own call number). Model text is cut to {limit} characters; "
             "model requests that only called tools show as those calls; a long result opens on a click (▶).</p>")
    intro += ('<p class="rb-note">Times here are each transcript\'s own clock. A door call no step claims is '
              "placed at its door time moved onto the transcript's clock by its session's "
              '<a href="#offset">clock offset</a> (each session has its own: agents, or doors, on different '
              "machines run on different clocks).</p>")
    return _section("The conversation, in order", intro + "".join(parts), anchor="conversation")


def _result_of(steps: pd.DataFrame, transcript_id: Any, seq: Any) -> tuple | None:
    """(text, is_error, text_bytes) of the ``tool_result`` step ``seq`` of ``transcript_id``, or None."""
    if _isna(transcript_id) or _isna(seq):
        return None
    r = steps[(steps["transcript_id"] == transcript_id) & (steps["seq"] == int(seq)) & (steps["kind"] == "tool_result")]
    size = r["text_bytes"].iloc[0] if len(r) and "text_bytes" in r.columns else None
    return (r["text"].iloc[0], r["is_error"].iloc[0], size) if len(r) else None


def missing_call_where(steps: pd.DataFrame, transcript_id: Any, seq: Any,
                       quarantine: pd.DataFrame | None) -> tuple[str, list[int]] | None:
    """Where the tool call of the ``tool_result`` step ``seq`` of ``transcript_id`` stood, when its
    own line is missing: ``(file, line numbers)`` of the lines ``quarantine`` set aside in the
    result's file after the last line a step of the transcript was read from and before the
    result's line (the call's line comes before its result's: one of them held it); None when
    no line there was set aside (the file was cut before the call, or a resumed copy dropped
    it), or the result's file and line are not known."""
    if quarantine is None or not len(quarantine) or _isna(transcript_id) or _isna(seq):
        return None
    mine = steps[steps["transcript_id"] == transcript_id]
    r = mine[(mine["seq"] == int(seq)) & (mine["kind"] == "tool_result")]
    if not len(r) or _isna(r["source_file"].iloc[0]) or _isna(r["line_no"].iloc[0]):
        return None
    f, ln = str(r["source_file"].iloc[0]), int(r["line_no"].iloc[0])
    before = mine.loc[(mine["source_file"] == f) & (mine["line_no"] < ln), "line_no"].dropna()
    after = int(before.max()) if len(before) else 0
    q = quarantine[(quarantine["source_file"].astype(str) == f) & quarantine["line_no"].notna()]
    lines = sorted(int(x) for x in q["line_no"] if after < int(x) < ln)
    return (f, lines) if lines else None


def _step_texts(steps: pd.DataFrame, conv: pd.DataFrame) -> dict:
    """``{(transcript_id, seq): (text, images, text_bytes)}`` of the steps a conversation's rows
    come from (``conv``: :func:`replaybook.views.session.conversation`'s frame): their whole text
    as the frame keeps it, for the report's cells."""
    if steps is None or not len(steps) or conv is None or not len(conv) or "transcript_id" not in conv.columns:
        return {}
    mine = steps[steps["transcript_id"].isin(conv["transcript_id"].dropna().astype(str).unique())]
    cols = [mine[k] if k in mine.columns else pd.Series([None] * len(mine), index=mine.index)
            for k in ("text", "images", "text_bytes")]
    return {(str(t), int(q)): (x, i, b) for t, q, x, i, b in zip(mine["transcript_id"], mine["seq"], *cols)
            if not _isna(q)}


def _images_after(images: Any) -> str:
    """``[N images]`` under a result cell for a tool result that carried images, else ``""``."""
    pics = _images_words(images)
    return f'<br><span class="rb-note">{pics}</span>' if pics else ""


def _missing_call_text(c: Mapping, steps: pd.DataFrame, quarantine: pd.DataFrame | None) -> str:
    """The "what" cell of a conversation row whose tool call's own line is missing (only its
    result remains: ``call_missing``): the call as the door logged it, where the result's
    tool-use id names a door call, and where the call's line is (:func:`missing_call_where`); the
    row's ``reach`` (the door column) says which door call, if any, logged the id otherwise."""
    at = missing_call_where(steps, c["transcript_id"], c["step_seq"], quarantine)
    if at is not None:
        name = Path(at[0]).name
        where = ("the tool call's line is damaged: " + ", ".join(f"{name}:{n}" for n in at[1])
                 + (" (one of these lines, set aside: see Quarantine)" if len(at[1]) > 1 else " (set aside: see Quarantine)"))
    else:
        where = ("the tool call's line is missing from the transcript (no line before its result was set aside: the "
                 "file was cut before it, or a resumed copy dropped it)")
    if not _isna(c.get("call_row")):
        from ..views.session import tie_text
        return (f"{c['tool'] or ''} {c['text'] or ''}".strip()
                + f" — as the door logged it: {where}; {tie_text(c.get('tied_by') or 'meta_id')}")
    tool = "" if _isna(c.get("tool")) else f"{c['tool']} "
    return f"{tool}(a tool call only its result shows) — {where}"


def _with_set_aside(conv: pd.DataFrame, steps: pd.DataFrame, transcript_id: Any,
                    quarantine: pd.DataFrame | None) -> pd.DataFrame:
    """``conv`` (rows of :func:`conversations`) with a row for each quarantined line of the
    transcript's files (:func:`_insert_set_aside`)."""
    if quarantine is None or not len(quarantine) or not len(conv):
        return conv
    mine = steps[steps["transcript_id"] == transcript_id]
    where = {int(s_): (str(f), int(ln)) for s_, f, ln in zip(mine["seq"], mine["source_file"], mine["line_no"])
             if not (_isna(s_) or _isna(f) or _isna(ln))}
    placed = [where.get(int(x)) if not _isna(x) else None for x in conv["step_seq"]]
    return _insert_set_aside(conv, placed, set(mine["source_file"].dropna().astype(str)), quarantine,
                             {"lane": "set aside", "who": "—", "door": "", "got_back": "", "status": "set aside"},
                             "what")


def _insert_set_aside(rows: pd.DataFrame, placed: list, files: set[str], quarantine: pd.DataFrame | None,
                      fill: Mapping[str, Any], text_col: str) -> pd.DataFrame:
    """``rows`` with a row for each ``quarantine`` line (``source_file`` as the loaders wrote it)
    of one of ``files``, placed before the first row read from a later line of the same file
    (``placed[i]``: ``(file, line_no)`` row ``i`` was read from, or None), at the end when none
    is.  The new rows hold ``fill`` and, in ``text_col``, which line was set aside and why."""
    if quarantine is None or not len(quarantine) or not files:
        return rows
    q = quarantine[quarantine["line_no"].notna()]
    q = q[q["source_file"].astype(str).isin(files)]
    if not len(q):
        return rows
    records = rows.to_dict("records")
    extra: dict[int, list[dict]] = {}
    for f, ln, kind, err in sorted(zip(q["source_file"].astype(str), q["line_no"].astype(int), q["kind"], q["error"]),
                                   key=lambda t: (t[0], t[1])):
        at = next((i for i, pl in enumerate(placed) if pl is not None and pl[0] == f and pl[1] > ln), len(records))
        # (a pending line's error already says it is unterminated: not said twice)
        what = (f"line {ln:,} of {Path(f).name} was set aside{'' if kind == 'pending' else f' ({kind})'}: "
                f"{err} — see Quarantine; what it held is not shown here")
        extra.setdefault(at, []).append({**{k: None for k in rows.columns}, **fill, text_col: what})
    out: list[dict] = []
    for i in range(len(records) + 1):
        out.extend(extra.get(i, []))
        if i < len(records):
            out.append(records[i])
    return pd.DataFrame(out, columns=rows.columns)


def unassigned_transcripts(steps: pd.DataFrame, transcript_ids: Sequence[str], *, max_rows: int = MAX_ROWS,
                           max_transcripts: int = 50, limit: int = 400,
                           sub_agents: Mapping[str, str] | None = None) -> str:
    """What each transcript no door session was assigned to asked, said, called and got back,
    in time order, from its own record (a transcripts-only incident, or one whose door log
    misses these sessions): per transcript (at most ``max_transcripts``, earliest first) every
    prompt, every model text (cut to ``limit`` characters) and every tool call with what it got
    back (:func:`result_cell`), its sub-agents' steps (``sub_agents``: sub-agent transcript →
    parent, ``JoinResult.sub_agents``) among them.  Empty when there are none."""
    ids = [t for t in transcript_ids if not _isna(t)]
    if not ids or steps is None or not len(steps):
        return ""
    starts = steps.groupby("transcript_id")["ts"].min()
    far = pd.Timestamp.max.tz_localize("UTC")
    ids = sorted(ids, key=lambda t: (starts.get(t, pd.NaT) if not _isna(starts.get(t, pd.NaT)) else far, t))
    parts = []
    for tid in ids[:max_transcripts]:
        members = [tid] + [t for t, p in (sub_agents or {}).items() if p == tid]
        t = steps[steps["transcript_id"].isin(members)]
        # a result whose call is not in the transcript (its line damaged, or in the file this one
        # resumes) is what the agent got back all the same: a row of its own
        own_calls = set(t.loc[t["kind"] == "tool_call", "call_id"].dropna().astype(str))
        orphan = (t["kind"] == "tool_result") & ~t["call_id"].astype("string").isin(own_calls).fillna(False)
        t = t[(t["kind"].isin(["user_prompt", "tool_call"]))
              | ((t["kind"] == "model_request") & t["text"].notna() & t["text"].fillna("").ne(""))
              | orphan.to_numpy(bool)]
        t = t.assign(member=t["transcript_id"].map({m: i for i, m in enumerate(members)}), _row=t.index).sort_values(
            ["ts", "member", "seq"], kind="stable", na_position="last")
        who, what, got = [], [], []
        sizes = _result_bytes(steps[steps["transcript_id"].isin(members)])
        for r in t.to_dict("records"):
            if r["kind"] == "tool_result":  # (its call is not in this transcript)
                who.append(_who("tool result", r.get("agent_id")))
                tool = r["tool"] if not _isna(r["tool"]) else r.get("tool_raw")
                what.append(esc(f"{'' if _isna(tool) else str(tool) + ': '}a result whose call is not in this "
                                "transcript" + ("" if _isna(r["call_id"]) else f" (tool-use id {r['call_id']})")))
                got.append(result_cell(r["text"], r["is_error"], r.get("text_bytes")) + _images_after(r.get("images")))
            elif r["kind"] == "tool_call":
                who.append(_who("tool call", r.get("agent_id")))
                tool = r["tool"] if not _isna(r["tool"]) else r.get("tool_raw")
                # a call whose input is free text (Codex's apply_patch) has no arguments: its text
                args = r["args_key"] if not _isna(r["args_key"]) else r.get("text")
                what.append(what_cell(f"{'' if _isna(tool) else tool} {'' if _isna(args) else args}".strip(),
                                      limit=limit, full=arguments_laid_out(tool, r["args_key"])))
                got.append(result_cell(r["result_text"], r["is_error"], sizes.get(r["_row"]))
                           + _images_after(r.get("images")))
            else:
                who.append(_who("user" if r["kind"] == "user_prompt" else "model", r.get("agent_id")))
                what.append(what_cell(r["text"], r.get("images"), r.get("text_bytes"), limit=limit))
                got.append("")
        t = t.assign(who=who, what=what, got_back=got)
        n_calls = int((t["kind"] == "tool_call").sum())
        mcp = t.loc[t["kind"] == "tool_call", "server"].notna().sum() if "server" in t else n_calls
        builtin_only = (" — built-in tools only: they never pass through a door, so no door log was expected "
                        "to hold them" if n_calls and not mcp else "")
        if mcp and "server" in t:  # calls a door could have decided, which no door log among the inputs holds
            servers = sorted(t.loc[t["kind"] == "tool_call", "server"].dropna().astype(str).unique())
            builtin_only = (f" — {mcp:,} of them to MCP server{'' if len(servers) == 1 else 's'} "
                            f"{', '.join(servers[:5])}{' …' if len(servers) > 5 else ''}, which no door session "
                            "among the inputs holds: if a door stood in front of "
                            f"{'it' if len(servers) == 1 else 'them'}, its log of this conversation is missing")
        body = table(t, [("seq", "step", "num"), ("ts", "time (UTC)", "ts"), ("who", "who", "text"),
                         ("what", "what", "html"), ("got_back", "what the agent got back", "html")],
                     max_rows=max_rows, empty="Nothing the agent was asked, said or called.")
        parts.append(_section(f"Transcript {tid}",
                              f'<p class="rb-note">{esc(_count(len(t), "row"))}, {esc(_count(n_calls, "tool call"))}, '
                              f"in time order{esc(builtin_only)}</p>" + body, level=3))
    intro = ("<p>Transcripts no door session was assigned to: what each agent was asked, what it said, what it "
             "called and what it got back, in order, from its own transcript. No door record confirms their MCP calls. "
             f"A prompt, model text or call longer than {limit} characters, and a long result, opens on a click "
             "(▶).</p>")
    if len(ids) > max_transcripts:
        intro += f'<p class="rb-note">Showing the first {max_transcripts} of {len(ids):,} transcripts.</p>'
    return _section("Transcripts no door session explains", intro + "".join(parts), anchor="unassigned")


class ReachedObjects:
    """The objects allowed door calls reached, opened once for the report (:func:`reached_objects`).

    Attributes:
        rows: one dict per object, first reached first (``object``, ``first``, ``who``, ``last``
            (door session → ``(ts, seq, tool)`` of its last call on the object), ``calls``,
            ``kind``, ``bytes``, ``rows``, ``columns``, ``sha256``, ``same``, ``note``,
            ``storage_write``: the first write or delete the cloud's own log holds on its storage
            after the first call reached it — ``{ts (door clock), principal, operation,
            logged_at[, door_call]}`` — or None; ``storage_writes``: every such write, in time
            order: the last is the one the file as it is now reflects).
        storage_writes: ``{object, first, who, ts, principal, operation, logged_at, writes}`` per
            row with a ``storage_write`` (first reached first): the first later write's fields,
            and ``writes``, every later write in time order (the agent's own and any other
            principal's): what the header and the findings name.
        previews: ``(object, inner HTML)`` of each object's first rows or lines.
        total: how many distinct objects the calls reached (``rows`` holds at most ``max_objects``).
        disagreements: :func:`replaybook.replay.copies_that_disagree` of ``rows``; with a data root, each group also
            has ``differences``: per other file, ``(first file, other file, rows only the first
            holds, rows only the other holds)`` (:func:`replaybook.replay.table_difference`,
            counting repeats; groups whose files cannot be compared have none).
    """

    def __init__(self, rows: list[dict], previews: list[tuple[str, str]], total: int,
                 column_sets: dict[str, tuple], data_root: Any = None) -> None:
        self.rows, self.previews, self.total = rows, previews, total
        self.storage_writes = [{"object": r["object"], "first": r["first"], "who": r["who"], **r["storage_write"],
                                "writes": list(r.get("storage_writes") or [r["storage_write"]])}
                               for r in rows if r.get("storage_write")]
        from ..replay import copies_that_disagree

        self.disagreements = copies_that_disagree(rows, column_sets, data_root)


def reached_objects(calls: pd.DataFrame, data_root: Any, *, max_objects: int = 100,
                    max_rows: int = 10, storage_writes: Any = None) -> ReachedObjects | None:
    """Open, once, each object an allowed door call reached (first reached first; at most
    ``max_objects``) read-only inside ``data_root`` (:func:`replaybook.replay.preview`, secrets
    redacted): its size, its rows where the file says (Parquet, SAS, Stata, JSON), its columns,
    its SHA-256 now and whether that equals the ``object_digest`` the door logged, and its first
    ``max_rows`` rows or lines.  Refused calls open nothing.  ``None`` without a data root.
    Its ``note`` says what shows the file changed since the first call that reached it, as the
    workbook's preview of that call does (:func:`replaybook.replay.as_now_caveat`: the size the
    door logged, a later write among ``calls``, and, given ``storage_writes``
    (:class:`replaybook.replay.StorageWrites`), a later write in the cloud's own log).
    What :func:`objects_section` shows and the header's alarm about copies that disagree read."""
    from ..replay import LaterWrites, as_now_caveat, file_digest, preview, resolve_in_root

    if data_root is None:
        return None
    c = calls[(calls["decision"] == "allow") & calls["object"].notna()]
    c = c.sort_values(["ts", "door_session", "seq"], kind="stable", na_position="last")
    rows: list[dict] = []
    previews: list[tuple[str, str]] = []
    column_sets: dict[str, tuple] = {}
    grouped = c.groupby("object", sort=False)
    later = LaterWrites(calls)
    for obj, g in list(grouped)[:max_objects]:
        pv = preview(data_root, str(obj), max_rows=max_rows)
        now = None
        if pv.kind in ("table", "text", "binary"):
            try:
                now = file_digest(resolve_in_root(data_root, str(obj)))  # "sha256:<hex>", as the door logs it
            except Exception:  # noqa: BLE001 - outside the root or unreadable: no digest
                now = None
        logged = sorted({str(d) for d in g["object_digest"].dropna()}) if "object_digest" in g else []
        same = "—" if not logged or now is None else ("yes" if logged == [now] else "no: it changed")
        first = g.iloc[0]
        # every later write in the cloud's own log, the agent's and anyone else's: the last is the file now
        sws = [] if storage_writes is None else storage_writes.all_after(obj, first["ts"])
        sw = sws[0] if sws else None
        changed = None if pv.kind not in ("table", "text", "binary", "folder") else as_now_caveat(
            tool=first["tool"], logged_bytes=first.get("bytes"), size_now=pv.size, kind=pv.kind, obj=obj,
            later_write=later.after(obj, first["ts"]), door_session=first["door_session"], none_if_plain=True,
            storage_writes=sws)
        cols = None
        if pv.kind == "table" and pv.table is not None:
            column_sets[str(obj)] = tuple(map(str, pv.table.columns))
            cols = ", ".join(column_sets[str(obj)])
        rows.append({"object": str(obj), "first": first["ts"], "who": f"{first['door_session']} #{first['seq']}",
                     "last": {str(k): (x["ts"].iloc[-1], x["seq"].iloc[-1],
                                       None if _isna(x["tool"].iloc[-1]) else str(x["tool"].iloc[-1]))
                              for k, x in g.groupby("door_session", sort=False)},
                     "calls": len(g), "kind": pv.kind, "bytes": pv.size, "rows": pv.rows, "columns": cols,
                     "sha256": None if now is None else now.removeprefix("sha256:"), "same": same,
                     "note": " ".join(n for n in (pv.text if pv.kind not in ("table", "text", "folder") else None,
                                                  changed) if n) or None,
                     "storage_write": None if sw is None else _write_dict(sw),
                     "storage_writes": [_write_dict(w) for w in sws]})
        if pv.kind in ("table", "folder") and pv.table is not None:
            kinds = {k: "num" if pd.api.types.is_numeric_dtype(pv.table[k]) and k == "bytes" else "text"
                     for k in pv.table.columns}
            # labels as text: a JSON or Excel table's headers may be numbers (2020, 2021), and the
            # cells are looked up by label
            shown = pv.table.astype(object).set_axis([str(k) for k in pv.table.columns], axis=1)
            inner = table(shown, [(str(k), str(k), kinds[k]) for k in pv.table.columns],
                          max_rows=max_rows)
        elif pv.kind == "text" and pv.text:
            inner = f'<pre class="rb-result">{esc(pv.text)}</pre>'
        else:
            inner = ""
        if inner:
            previews.append((str(obj), inner))
    return ReachedObjects(rows, previews, grouped.ngroups, column_sets, data_root)


def _write_dict(w: tuple) -> dict:
    """A :meth:`replaybook.replay.StorageWrites.after` write as ``{ts, principal, operation,
    logged_at[, door_call]}``."""
    return {"ts": w[0], "principal": w[1], "operation": w[2], "logged_at": w[3],
            **({"door_call": w[4]} if len(w) > 4 and w[4] is not None else {})}


def _on_damaged_door_lines(conv: pd.DataFrame, calls: pd.DataFrame, quarantine: pd.DataFrame | None) -> list:
    """``conv["reach"]`` (:func:`replaybook.views.session.conversation`), with each door-bound
    call no door call agrees with (``status`` "door never saw") said otherwise where the door's
    log file of the conversation's calls holds a line ``quarantine`` set aside (``source_file``
    as in ``calls``): between the lines of the door calls the conversation shows before and
    after it, "the door logged a call here on a damaged line (``file:2``, set aside: see
    Quarantine) — likely this one" (and which ``seq`` is missing, when the two calls' numbers
    leave one out); elsewhere in the file, that the call may be on it.  The door writes every
    call it decides, so a call on a damaged line is not one it never saw."""
    reach = list(conv["reach"])
    if (quarantine is None or not len(quarantine) or "status" not in conv.columns
            or not conv["status"].eq("door never saw").any() or not {"source_file", "line_no"} <= set(calls.columns)):
        return reach
    q = quarantine[quarantine["loader"].astype("string").eq("door").fillna(False).to_numpy(bool)
                   & quarantine["line_no"].notna().to_numpy(bool)] if "loader" in quarantine.columns else quarantine
    if not len(q):
        return reach
    damaged: dict[str, list[int]] = {}
    for f, ln in zip(q["source_file"], q["line_no"]):
        damaged.setdefault(str(f), []).append(int(ln))
    rows = conv["call_row"].tolist()
    where = [None if _isna(r) else (str(calls["source_file"].iat[int(r)]), calls["line_no"].iat[int(r)],
                                    calls["seq"].iat[int(r)]) for r in rows]
    files = {w[0] for w in where if w is not None and w[0] in damaged}
    for i, status in enumerate(conv["status"]):
        if status != "door never saw":
            continue
        before = next((w for w in reversed(where[:i]) if w is not None and w[0] in files), None)
        after = next((w for w in where[i + 1:] if w is not None and w[0] in files
                      and (before is None or w[0] == before[0])), None)
        f = (before or after or (None,))[0] or (sorted(files)[0] if len(files) == 1 else None)
        if f is None:
            continue
        lo = -1 if before is None or _isna(before[1]) else int(before[1])
        hi = math.inf if after is None or _isna(after[1]) else int(after[1])
        between = [ln for ln in damaged[f] if lo < ln < hi]
        name = PurePosixPath(f).name
        if between:
            gap = ""
            if before is not None and after is not None and not _isna(before[2]) and not _isna(after[2]) \
                    and int(after[2]) - int(before[2]) == 2:
                gap = f"; door call #{int(before[2]) + 1} is missing from the session's calls"
            reach[i] = (f"the door logged a call here on a damaged line ({name}:"
                        f"{', '.join(map(str, between))}, set aside: see Quarantine) — likely this one{gap}: what "
                        "the door decided for it cannot be read")
        else:
            reach[i] = (f"no door call agrees with it, but the door's log of this session has a damaged line "
                        f"({name}:{', '.join(map(str, sorted(damaged[f])[:5]))}, set aside: see Quarantine): "
                        "it may be on it")
    return reach


def _disagreement_sentence(d: Mapping) -> str:
    """One group of :func:`replaybook.replay.copies_that_disagree` in words (HTML): each file, its rows (and
    columns, when those differ) and the call that first reached it."""
    parts = []
    for o in d["objects"]:
        what = f"{o['rows']:,} rows" if o["rows"] is not None else "rows not known"
        if d["columns_differ"] and o["columns"] is not None:
            what += f" in {_count(len(o['columns']), 'column')} ({esc(', '.join(o['columns']))})"
        parts.append(f"<code>{esc(o['object'])}</code>: {what}, first reached by <code>{esc(o['who'])}</code>")
    said = "; ".join(parts)
    if d.get("values_differ") and not d.get("rows_differ") and not d.get("columns_differ"):
        said += (" — the same number of rows and the same columns, but <b>different values</b> in some rows "
                 "(a copy that was not updated looks like this)")
    # which copy each session's last figure most likely came from: the one it reached last
    last: dict[str, tuple] = {}
    for o in d["objects"]:
        for sess, (ts, seq, tool) in (o.get("last") or {}).items():
            if _isna(ts):
                continue
            if sess not in last or ts > last[sess][0]:
                last[sess] = (ts, seq, tool, o["object"])
    if last:
        ordered = sorted(last.items(), key=lambda kv: kv[1][0])
        each = "; ".join(f"<code>{esc(sess)}</code> → <code>{esc(obj)}</code> (#{esc(seq)}"
                         + (f", {esc(tool)}" if tool else "") + ")"
                         for sess, (ts, seq, tool, obj) in ordered[:_NAMED])
        if len(ordered) > _NAMED:
            each += f"; and {len(ordered) - _NAMED:,} more door sessions"
        said += (f". Of these, the one each door session reached last: {each}. The logs do not say which file a "
                 "figure came from — a sub-agent's call counts in its parent's session — so set the answer beside "
                 "each file's data (the rows below)")
    return said


def _differences_html(d: Mapping, *, show: int = 5) -> str:
    """How the files of one :func:`replaybook.replay.copies_that_disagree` group differ, row by row (the first
    ``show`` rows each way), from its ``differences``."""
    out = []
    for a, b, only_a, only_b in d.get("differences", ()):
        col = only_b.attrs.get("differs_in")
        if col is not None:  # the one column that differs, and by what factor, said first
            f = only_b.attrs.get("factor")
            by = (f" — each value in <code>{esc(b)}</code> is <b>×{f:,.10g}</b> the one in <code>{esc(a)}</code> (a "
                  "unit or scale mistake, such as a percentage written as a fraction, looks like this)"
                  if f is not None else "")
            out.append(f"<p><code>{esc(a)}</code> and <code>{esc(b)}</code> hold the same rows but for one column, "
                       f"<code>{esc(col)}</code>{by}.</p>")
        for holder, other, extra in ((b, a, only_b), (a, b, only_a)):
            if not len(extra):
                continue
            cols = [(str(c), str(c), "text") for c in extra.columns]
            rep = int(extra.attrs.get("repeated", 0))
            if rep == len(extra):  # every one is also in the other file: copies, not new rows
                said = (f"holds {_count(len(extra), 'row')} more than <code>{esc(other)}</code>: each is also in "
                        f"<code>{esc(other)}</code>, so these are <b>repeated rows</b> (the file holds them "
                        "twice or more)")
            elif rep:
                said = (f"holds {_count(len(extra), 'row')} more than <code>{esc(other)}</code>: {rep:,} repeat rows "
                        f"both hold, {len(extra) - rep:,} are not in <code>{esc(other)}</code> at all")
            else:
                said = f"holds {_count(len(extra), 'row')} that <code>{esc(other)}</code> does not hold at all"
            out.append(f"<p><code>{esc(holder)}</code> {said}{':' if len(extra) <= show else f'; the first {show}:'}</p>"
                       + table(extra.head(show).astype(object), cols, max_rows=show))
        if not len(only_a) and not len(only_b):
            out.append(f"<p><code>{esc(a)}</code> and <code>{esc(b)}</code> hold the same rows over the columns "
                       "both have: they differ in their other columns.</p>")
    return "".join(out)


def objects_section(calls: pd.DataFrame, data_root: Any, *, max_objects: int = 100, max_rows: int = 10,
                    reached: ReachedObjects | None = None) -> str:
    """What the agent reached, as it is on disk now: per object an allowed door call reached
    (first reached first; at most ``max_objects``), the calls that reached it, what it is
    (:func:`replaybook.replay.preview`, read-only inside ``data_root``, secrets redacted),
    its size, its rows where the file says (Parquet, SAS, Stata, JSON), its columns, its
    SHA-256 now and whether that equals the ``object_digest`` the door logged; then, behind a
    click, its first ``max_rows`` rows or lines.  Refused calls open nothing.  The files are
    today's: without a logged digest nothing shows they are what the agent read.  Objects that
    look like copies of one dataset but disagree (:func:`replaybook.replay.copies_that_disagree`) are named first.
    ``reached``: the objects already opened by :func:`reached_objects` (then ``calls``,
    ``data_root``, ``max_objects`` and ``max_rows`` are not read again)."""
    title = "What the agent reached, as it is now"
    if reached is None:
        if data_root is None:
            return _section(title, '<p class="rb-note">The incident names no data root, so the objects the door '
                            "calls reached are not opened here.</p>", anchor="objects")
        reached = reached_objects(calls, data_root, max_objects=max_objects, max_rows=max_rows)
    if not reached.rows:
        return _section(title, '<p class="rb-note">No allowed door call reached an object.</p>', anchor="objects")
    body = ""
    if reached.disagreements:
        # a copy written after the agent read it differs by that write, not (only) as a stale copy
        written = {str(w["object"]) for w in (getattr(reached, "storage_writes", None) or ())}
        written |= {str(r["object"]) for r in reached.rows if r.get("note") and "a later call wrote to it" in r["note"]}

        def since(d: Mapping) -> str:
            objs = [str(o["object"]) for o in d["objects"] if str(o["object"]) in written]
            if not objs:
                return ""
            return (" <b>Written after the agent read it:</b> " + ", ".join(f"<code>{esc(o)}</code>" for o in objs)
                    + " (see its note below): the rows compared are the files as they are now, so part of the "
                    "difference may be that write, not what the agent read.")
        items = "".join(f"<li>{_disagreement_sentence(d)}.{since(d)}{_differences_html(d)}</li>"
                        for d in reached.disagreements)
        body += ('<div class="rb-alarm"><p><b>Copies that disagree.</b> The agent reached files that look like one '
                 f"dataset in different formats, but they hold different data now:</p><ul>{items}</ul>"
                 "<p>A figure computed from one does not hold for the other. The conversation above shows which "
                 "result each call returned and which one the answer used.</p></div>")
    df = pd.DataFrame(reached.rows)
    body += ('<p class="rb-note">Opened now, read-only, inside the data root (secrets redacted): these are the files '
             "as they are today. Where the gateway logged a digest of the object it read (<code>object_digest</code>; "
             "replaybook's own door logs the digest of its whole answer instead), <b>same as logged</b> says whether "
             "the file is still that; without one, nothing here shows the agent read this content. The <b>note</b> "
             "says what shows a file changed since the call that first reached it. <b>Data rows now</b> are the "
             "records a table reader finds in the file (a CSV's header not counted); the door's <b>rows returned</b> "
             "(each session's calls, above) counts the records of its answer, or the lines of a text answer — a CSV "
             "read as text counts its header too — so the two may differ by one where nothing changed.</p>")
    body += table(df, [("object", "object", "code"), ("first", "first reached (UTC)", "ts"),
                       ("who", "by call", "code"), ("calls", "calls", "num"), ("kind", "what it is", "text"),
                       ("bytes", "bytes", "num"), ("rows", "data rows now", "num"), ("columns", "columns", "text"),
                       ("sha256", "SHA-256 now", "code"), ("same", "same as logged", "text"), ("note", "note", "prose")],
                  max_rows=len(reached.rows))
    if reached.total > len(reached.rows):
        body += f'<p class="rb-note">Showing the first {len(reached.rows):,} of {reached.total:,} objects.</p>'
    if reached.previews:
        body += "<h3>What each holds (first rows or lines)</h3>" + "".join(
            f"<details><summary><code>{esc(obj)}</code></summary>{inner}</details>" for obj, inner in reached.previews)
    return _section(title, body, anchor="objects")


def refused_calls(calls: pd.DataFrame, pairs: pd.DataFrame | None = None, *,
                  steps: pd.DataFrame | None = None, max_rows: int = MAX_ROWS) -> str:
    """Every call the door refused (``decision == "deny"``), with its rule and, when the join
    matched it, the transcript's tool-use id and the result text the agent was shown."""
    r = _with_rows(calls, calls["decision"] == "deny").sort_values(["ts", "door_session", "seq"])
    if len(r) == 0:
        return _section("Refused calls", "<p>The door refused no call.</p>", anchor="refused")
    m = _matched_steps(pairs, steps).drop(columns=["door_session"])
    r = r.merge(m, left_on="frame_row", right_on="call_row", how="left")
    r = _args_shown(r, max_rows)
    cols = [("door_session", "door session", "code"), ("seq", "seq", "num"), ("ts", "time (UTC)", "ts"),
            ("tool", "tool", "code"), ("object", "object", "code"), ("rule", "rule", "code"),
            ("args_key", "arguments", "code"), ("error", "error", "text"),
            ("step_seq", "step", "num"), ("step_call_id", "transcript tool-use id", "code")]
    if "approval" in r.columns and r["approval"].notna().any():  # a rule that asks: the user's answer
        cols.insert(6, ("approval", "the user, asked", "text"))
    if "step_result" in r.columns:
        cols.append(("step_result", "what the agent was shown", "code"))
    body = (f"<p>The door refused {_count(len(r), 'call')}. A refusal shows the agent asked; it does not show "
            f"what the agent did next — read the conversation above from the matched <b>step</b> on.</p>"
            + table(r, cols, max_rows=max_rows, row_class=_refused_row))
    return _section("Refused calls", body, anchor="refused")


#: Input files listed one by one; past it the table lists the first that matter (the manifest,
#: then files with a note) and a summary per folder and format counts them all.
MAX_INPUT_ROWS = 200
#: Rows of that summary at most: past it, files in deeper folders are counted in their ancestor.
MAX_FOLDER_ROWS = 60


def inputs_table(inputs: Iterable[Mapping], *, checksums: str | None = None,
                 max_rows: int = MAX_INPUT_ROWS) -> str:
    """Every input file given, with its format, size (bytes), line count, SHA-256 (hex) and,
    when any file has one, a note (a skipped file's reason), so the report can be tied to the
    exact evidence.

    Args:
        inputs: :attr:`replaybook.Incident.inputs` rows (``path``, ``format``, ``bytes``,
            ``lines``, ``sha256``, ``note``), the manifest first.
        checksums: the file name of the ``sha256sum`` checksum file written beside the report
            (:mod:`replaybook.report.checksums`), named in the section; ``None`` when there is none.
        max_rows: files listed one by one.  More than that: the table lists the first
            ``max_rows`` of the manifest, the files with a note, then the others (each group in
            its order in ``inputs``), a summary per folder and format (files, bytes, lines)
            counts all of them, and a note says how many are not listed and where they are.
    """
    df = pd.DataFrame(list(inputs or []))
    if df.empty:
        return _section("Inputs", '<p class="rb-note">No input files.</p>', anchor="inputs")
    cols = [("path", "path", "code"), ("format", "format", "text"), ("bytes", "bytes", "num"),
            ("lines", "lines", "num"), ("sha256", "SHA-256", "code")]
    if "note" in df.columns and df["note"].notna().any():
        cols.append(("note", "note", "text"))  # skipped files and what a loader left out
    body = ("<p>Every file this report was built from. Recompute a file's SHA-256 (<code>sha256sum</code>, run in "
            "the manifest's folder: paths are relative to it, or absolute for files outside it) to "
            "check that it is the same evidence. The data files the door's calls reached are listed with their "
            'SHA-256 now under <a href="#objects">what the agent reached</a>.</p>' + _checksums_note(df, checksums))
    if len(df) <= max_rows:
        return _section("Inputs", body + table(df, cols, max_rows=len(df)), anchor="inputs")
    first, folders = _inputs_first(df, max_rows), _inputs_by_folder(df)
    body += (_inputs_cut_note(df, first, checksums)
             + "<h3>Per folder and format</h3>"
             + table(folders, [("folder", "folder", "code"), ("format", "format", "text"), ("files", "files", "num"),
                               ("bytes", "bytes", "num"), ("lines", "lines", "num")], max_rows=len(folders))
             + f"<h3>The first {len(first):,} files</h3>" + table(first, cols, max_rows=len(first)))
    return _section("Inputs", body, anchor="inputs")


def _checksums_note(df: pd.DataFrame, checksums: str | None) -> str:
    """The paragraph naming the checksum file (``""`` without one): how to check every input at
    once, and how many inputs have no SHA-256 to check (symbolic links, not followed)."""
    if not checksums:
        return ""
    no_sha = int(df["sha256"].isna().sum()) if "sha256" in df.columns else len(df)
    left_out = (f" ({_count(no_sha, 'file')} without a SHA-256 — a symbolic link is listed, not followed — "
                f"{'is' if no_sha == 1 else 'are'} not in it)") if no_sha else ""
    return (f"<p><code>{esc(checksums)}</code>, written beside this report, holds every file's SHA-256 in "
            f"<code>sha256sum</code>'s format{left_out}: to check them all, run <code>sha256sum -c "
            f"path/to/{esc(checksums)}</code> in the manifest's folder.</p>")


def _input_rank(df: pd.DataFrame) -> np.ndarray:
    """Per Inputs row, 0 for the manifest, 1 for a file with a note (skipped, set aside, read
    once), 2 for the others."""
    manifest = (df["format"] == "manifest").to_numpy(dtype=bool) if "format" in df.columns else np.zeros(len(df), bool)
    noted = df["note"].notna().to_numpy(dtype=bool) if "note" in df.columns else np.zeros(len(df), bool)
    return np.where(manifest, 0, np.where(noted, 1, 2))


def _inputs_first(df: pd.DataFrame, max_rows: int) -> pd.DataFrame:
    """The ``max_rows`` Inputs rows a long list shows: the manifest, then the files with a note,
    then the others, each group in its order in ``df``."""
    order = np.argsort(_input_rank(df), kind="stable")
    return df.iloc[order[:max(0, max_rows)]]


def _inputs_cut_note(df: pd.DataFrame, first: pd.DataFrame, checksums: str | None) -> str:
    """The paragraph above a cut Inputs list: how many files in all (bytes, lines), which of them
    the table lists, how many it does not, and where the full list is."""
    rank, shown = _input_rank(df), _input_rank(first)
    parts = []
    if (shown == 0).any():
        parts.append("the manifest")
    n_noted, k_noted = int((rank == 1).sum()), int((shown == 1).sum())
    if k_noted:
        parts.append(f"the {_count(n_noted, 'file')} with a note (skipped, set aside, …)" if k_noted == n_noted
                     else f"the first {k_noted:,} of the {n_noted:,} files with a note (skipped, set aside, …)")
    k_rest = int((shown == 2).sum())
    if k_rest:
        parts.append(f"then {_count(k_rest, 'other')} in the order of the full list")
    hidden = len(df) - len(first)
    where = (f"every file, with its SHA-256, is in <code>{esc(checksums)}</code> beside this report, and "
             if checksums else "")
    return (f"<p>This incident has {_count(len(df), 'input file')} ({_fmt_num(_sum(df, 'bytes'))} bytes, "
            f"{_fmt_num(_sum(df, 'lines'))} lines): too many to list one by one. The summary below counts every "
            f"file per folder and format; the table after it lists {len(first):,}: {', '.join(parts)}. "
            f"<b>{_count(hidden, 'file')} {'is' if hidden == 1 else 'are'} not listed here</b>: {where}"
            f"the workbook's <code>Incident.inputs</code> lists each one's format, bytes, lines and note.</p>")


def _numbers(df: pd.DataFrame, col: str) -> np.ndarray:
    """A numeric Inputs column (``bytes``, ``lines``) as floats, NaN where missing (or all NaN
    when ``df`` has no such column)."""
    if col not in df.columns:
        return np.full(len(df), np.nan)
    return pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _sum(df: pd.DataFrame, col: str) -> float:
    """The sum of a numeric Inputs column, missing values left out; NaN when none is known."""
    return pd.Series(_numbers(df, col)).sum(min_count=1)


def _folder_parts(path: Any) -> tuple[str, ...]:
    """The folders of an Inputs path, outermost first: ``door/analyst/s.jsonl`` → ``("door",
    "analyst")``, an absolute path's starting with ``"/"``; ``()`` for a file in the manifest's
    folder."""
    return PurePosixPath(str(path)).parent.parts if not _isna(path) else ()


def _inputs_by_folder(df: pd.DataFrame, max_groups: int = MAX_FOLDER_ROWS) -> pd.DataFrame:
    """One row per folder and format: ``folder`` (``.`` for the manifest's own), ``format``
    (``—`` when no source read the file), ``files``, ``bytes`` and ``lines`` (sums of the known
    values; NaN when none is known), sorted by folder then format.

    Each file counts in its own folder, unless that makes more than ``max_groups`` rows: then
    folders deeper than the deepest level that fits are counted in their ancestor at that
    level, written ``<folder>/**``."""
    parts = [_folder_parts(p) for p in df["path"]]
    fmt = (df["format"].astype(object).where(df["format"].notna(), "—") if "format" in df.columns
           else pd.Series(["—"] * len(df), index=df.index, dtype=object))
    depth = max((len(p) for p in parts), default=0)
    while depth > 1 and len({(p[:depth], f) for p, f in zip(parts, fmt)}) > max_groups:
        depth -= 1
    deeper = {p[:depth] for p in parts if len(p) > depth}
    folder = [(str(PurePosixPath(*p[:depth])) if p else ".") + ("/**" if p[:depth] in deeper else "")
              for p in parts]
    g = pd.DataFrame({"folder": folder, "format": fmt.to_numpy(), "bytes": _numbers(df, "bytes"),
                      "lines": _numbers(df, "lines")})
    return (g.groupby(["folder", "format"], sort=True)
            .agg(files=("folder", "size"), bytes=("bytes", lambda s: s.sum(min_count=1)),
                lines=("lines", lambda s: s.sum(min_count=1)))
            .reset_index())


def quarantine_summary(quarantine: pd.DataFrame, *, max_rows: int = 50) -> str:
    """Lines the loaders set aside (``QUARANTINE`` frame): counts per file, loader and kind
    (``invalid`` / ``pending`` / ``conflict`` / ``duplicate``), then the first ``max_rows`` lines with
    the reason and the line's start (escaped).  Files no source reads at all (``loader`` ``auto``,
    no line number: a README or a data CSV in a folder given as transcripts) are not damaged
    evidence: they are named apart, after the lines, and not counted with them."""
    q = quarantine if quarantine is not None else QUARANTINE.empty()
    unread_mask = (q["line_no"].isna() & (q["loader"] == "auto")).to_numpy(dtype=bool) if len(q) else None
    unread = q[unread_mask] if unread_mask is not None else q.iloc[:0]
    q = q[~unread_mask] if unread_mask is not None else q
    tail = ""
    if len(unread):
        tail = (f"<h3>Files not read</h3><p>{_count(len(unread), 'file')} given for this incident "
                f"{'is' if len(unread) == 1 else 'are'} in no format replaybook reads (not evidence of these kinds, "
                f"or named so on purpose; {'it is' if len(unread) == 1 else 'they are'} listed in Inputs with "
                f"{'its' if len(unread) == 1 else 'their'} SHA-256). Nothing was taken from "
                f"{'it' if len(unread) == 1 else 'them'}.</p>"
                + table(unread.sort_values("source_file"), [("source_file", "file", "code"), ("error", "why", "text")],
                        max_rows=max_rows))
    if len(q) == 0:
        return _section("Quarantine", "<p>Nothing was set aside: no input line was damaged or unreadable. "
                        "Valid records of other kinds a loader left out are named in Inputs.</p>" + tail,
                        anchor="quarantine")
    g = (q.groupby(["source_file", "loader", "kind"], dropna=False, observed=True)
         .size().reset_index(name="lines"))
    whole = int(q["line_no"].isna().sum()) if "line_no" in q.columns else 0
    what = " and ".join(p for p in (_count(len(q) - whole, "input line") if len(q) > whole else "",
                                    _count(whole, "whole file") if whole else "") if p)
    body = (f"<p>{what} could not be used and {'was' if len(q) == 1 else 'were'} set aside (never "
            f"silently dropped). <b>invalid</b>: unusable; <b>pending</b>: an unterminated last line, probably still "
            f"being written.</p>"
            + table(g, [("source_file", "file", "code"), ("loader", "loader", "text"), ("kind", "kind", "text"),
                        ("lines", "lines", "num")])
            + "<h3>Set-aside lines</h3>"
            + table(q.sort_values(["source_file", "line_no"]).assign(raw=lambda d: d["raw"].map(_line_start)),
                    [("source_file", "file", "code"), ("line_no", "line", "num"), ("kind", "kind", "text"),
                     ("error", "why", "text"), ("raw", "line starts", "code")], max_rows=max_rows)
            + tail)
    return _section("Quarantine", body, anchor="quarantine")


def _synthetic_sessions(sessions: pd.DataFrame | None) -> pd.DataFrame | None:
    if sessions is None or not len(sessions):
        return None
    from ..sources.gateways import is_synthetic_session

    return sessions[[is_synthetic_session(s) for s in sessions["door_session"]]]


#: The fixed part of "what the join cannot prove".
CANNOT_PROVE_TEXT = (
    "The join links a transcript to a door session only through what both sides recorded: the tool, "
    "its canonical arguments and the time (or, where the door logged it, the client's tool-use id).",
    "Two agents making the same call with the same arguments within the window look alike; a link resting "
    "on a few such calls (low share, margin 0) is a hypothesis, not a fact.",
    "The door records decisions and sizes (rows, bytes), never the data itself. What the agent got back is "
    "shown from its own transcript (cut to its first characters), which the door cannot confirm: it shows what "
    "the client recorded, not what the data source sent.",
    "Transcripts are written by the client on the agent's machine; the door log is written by the gateway. "
    "Neither is signed here: the SHA-256 list ties the report to these files, not to what happened.",
    "Built-in tools and MCP servers that do not pass through the door never appear in the door log, so "
    "their steps are not residuals; anything the agent did outside both records is invisible.",
    "An agreeing pair shows a call was made and answered; it does not show the model read or used the result.",
    "A session that continues another's transcript (its calls agree with that transcript's later steps, and the "
    "two sessions ran one after the other) is read as one conversation that reached the door twice; an agent "
    "that replayed another's calls later, whose own transcript is missing, would look the same.",
    "Each transcript's clock offset is read from the calls it agrees with; one far beyond max_offset_s is only "
    "named, not applied, since widening the search for every transcript can let a transcript whose own session "
    "is missing claim calls another agent made.",
)


def access_section(result: Any, access: pd.DataFrame | None, *, max_rows: int = 200,
                   quarantine: pd.DataFrame | None = None, inputs: Sequence[Mapping] = ()) -> str:
    """Cloud access the door did not explain, then what each call reached in storage.

    Args:
        result: an :class:`~replaybook.access_join.AccessJoinResult` (or ``None``: the incident
            names no access logs, and the section says so).
        access: the ACCESS frame the result was built from.
        quarantine: the incident's quarantine (``source_file`` as :attr:`~replaybook.Incident.inputs`
            writes paths): the cloud log files and lines set aside are named beside the counts,
            which leave their requests out (:func:`cloud_log_losses`).
        inputs: :attr:`~replaybook.Incident.inputs`: which files were read at all, and the path
            each request's file is shown by (else its name).

    Each request no door call explains is shown with what cites it: its source, request id
    (labelled ``event id`` for a CloudTrail event told by its ``eventID``, ``insert id`` for a
    GCP audit entry's; a CloudTrail ``eventID`` beside a ``requestID``), the file and line (a delivery file's record) it was read from,
    and the other records of the same request (``result.duplicates``: in another log, or
    delivered again).
    """
    if result is None:
        return _section("Cloud access", '<p class="rb-note">The incident names no cloud access logs, so '
                        "nothing here checks the door's record against the storage's own.</p>", anchor="access")
    from ..access_join import on_storage

    un_all = _with_principal_names(result.unexplained)
    n_access = 0 if access is None else len(access)
    n_storage = 0 if access is None else sum(map(on_storage, access["resource_uri"]))
    # storage requests, and any event made with the door's own principal, come first; other
    # services' events (IAM, STS, compute … in the same trail) no door call could explain
    first = np.array([on_storage(u) or dp is True for u, dp in zip(un_all["resource_uri"], un_all["door_principal"])],
                     dtype=bool)  # (an empty list would select no columns)
    un = un_all[first]
    others = un_all[~first]
    n_other = n_access - n_storage
    held = (f"<b>{_count(n_access, 'event')}</b>: <b>{n_storage:,}</b> on storage (objects and buckets, what the "
            f"door's calls reach) and {n_other:,} on other services" if n_other else
            f"<b>{_count(n_access, 'storage request')}</b> (on objects and buckets, what the door's calls reach)")
    dups = getattr(result, "duplicates", None)
    if dups is not None and len(dups):
        again = int((dups["how"] == "delivered again").sum())
        held += (f"; {len(dups):,} of these {'record repeats' if len(dups) == 1 else 'records repeat'} a request "
                 "another one holds ("
                 + ", ".join(x for x in (f"{again:,} delivered twice" if again else "",
                                         f"{len(dups) - again:,} the same request in another log"
                                         if len(dups) - again else "") if x)
                 + f") and {'is' if len(dups) == 1 else 'are'} counted once")
    unmapped = len(result.per_call) and not result.per_call["call_uri"].notna().any()
    alarm = ('<p class="rb-alarm"><b>No door call\'s object maps to a storage URI</b>, so no storage request '
             "below could be matched to a call, and each is listed as unexplained. Add <code>storage_map</code> to "
             "the manifest: door object prefix → storage URI prefix (<code>demo/: s3://acme-data/demo/</code>).</p>"
             if unmapped and n_storage else "")
    # counted as the header, the findings and `replaybook access` count them: storage requests;
    # another service's events made with the door's principal are listed with them, counted apart
    n_un_storage = int(sum(map(on_storage, un["resource_uri"])))
    n_un_door_other = len(un) - n_un_storage
    # a principals key naming no door agent applies to nothing: said before the counts it may change
    alarm += "".join(f'<p class="rb-alarm"><b>Warning:</b> {esc(w)}.</p>'
                     for w in getattr(result, "warnings", None) or ())
    body = alarm + (f"<p>The cloud's own access logs hold {held}. Door calls explain "
            f"<b>{_count(len(result.links), 'storage request')}</b>. <b>{_count(n_un_storage, 'storage request')} "
            f"{'matches' if n_un_storage == 1 else 'match'} no door call</b>"
            + (f", and {_count(n_un_door_other, 'request')} to other services made with the door's own principal"
               if n_un_door_other else "")
            + ", listed below (requests made with the door's own principal first, then by time). Look at these "
            "first: a request made with the door's own principal and no door call behind it means someone or "
            "something reached the data around the door.</p>")
    losses = cloud_log_losses(quarantine, inputs)
    if losses:  # the counts above leave these requests out
        body += ('<p class="rb-alarm"><b>Not in these counts</b>: ' + "; ".join(cloud_loss_words(losses))
                 + '. What each line held is in <a href="#quarantine">Quarantine</a>; a request in it may be '
                 "one no door call explains.</p>")
    um = getattr(result, "unmapped_calls", None)
    if um is not None and len(um) and not unmapped:
        head, _, objs = _unmapped_words(um).partition(": ")
        calls_named = ", ".join(f"session {esc(r.door_session)} seq {esc(r.seq)}" for r in um.head(5).itertuples())
        body += (f'<p class="rb-alarm"><b>{head}</b>: {objs} ({calls_named}'
                 + (f" and {len(um) - 5:,} more" if len(um) > 5 else "")
                 + "). No request can be matched to them, so a request they made is listed below as one no door "
                 "call explains, its why naming the nearest of them. Add their folders to <code>storage_map</code> "
                 "(door object prefix → storage URI prefix).</p>")
    # where each came from (address, client): the same as the requests door calls explain points
    # at the door's side — the server behind it, or its host — rather than credentials used elsewhere
    from ..access_join import source_ip

    explained = access.loc[result.links["access_index"].dropna().astype("int64").unique()] \
        if access is not None and len(result.links) else None
    door_ips = set() if explained is None else {x for x in map(source_ip, explained["raw"]) if x}
    door_uas = set() if explained is None else {str(x) for x in explained["user_agent"].dropna()}
    un = un.copy()
    ips = [source_ip(r) for r in un["raw"]] if len(un) else []
    uas = [None if _isna(x) else str(x) for x in un["user_agent"]] if len(un) else []
    un["origin"] = [("—" if not (ip or ua) else f"<code>{_breakable(' · '.join(x for x in (ip, ua) if x), 300)}</code>")
                    + ("<br><b>same address and client as the requests door calls explain</b>: consistent with "
                       "a request from the door's side (the server behind it, or its host) rather than credentials "
                       "used elsewhere — not proof: a client names itself, and an address can be shared"
                       if ip and ip in door_ips and ua in door_uas else "")
                    for ip, ua in zip(ips, uas)]
    body += _refused_then_reached(un, getattr(result, "offset_s", None))
    body += "<h3>Requests no door call explains</h3>"
    shown = un.head(max_rows)
    shown = shown if not len(shown) else shown.assign(
        request=_request_cells(shown, access, dups, inputs),
        operation=[("—" if _isna(op) else f"<code>{_breakable(op)}</code>") + ("" if _isna(a) else f"<br>{esc(a)}")
                   for op, a in zip(shown["action_raw"], shown["action"])],
        result=[esc(o) + ("" if _isna(b) else f"<br>{_fmt_num(b)} bytes") for o, b in zip(shown["outcome"], shown["bytes"])],
        why_html=[_prose(w) for w in shown["why"]])
    body += table(shown, [("ts", "time (UTC)", "ts"), ("request", "request: source, id, where logged", "html"),
                          ("principal", "principal", "code"), ("door_principal", "door's principal", "text"),
                          ("operation", "operation", "html"), ("resource_uri", "resource", "code"),
                          ("result", "outcome", "html"), ("origin", "from (address · client)", "html"),
                          ("why_html", "why no call explains it", "html")],
                  max_rows=max_rows, row_class=lambda r: "rb-refused" if r.get("door_principal") is True else "",
                  empty="None: every storage request in the log is explained by a door call.")
    if len(un) > max_rows:
        body += f'<p class="rb-note">Showing the first {max_rows:,} of {len(un):,} rows.</p>'
    if len(others):
        counts = (others.assign(n=1).groupby(["source", "action_raw", "principal"], dropna=False, sort=False)
                  .agg(n=("n", "size"), first=("ts", "min"), last=("ts", "max")).reset_index()
                  .sort_values(["n", "first"], ascending=[False, True], kind="stable"))
        body += (f"<h3>Other cloud events ({_count(len(others), 'event')}, not on storage)</h3>"
                 '<p class="rb-note">Events of other services in the same logs (roles assumed, instances '
                 "described …): no door call could explain them, since the door's tools reach storage. "
                 "Counted by operation and principal.</p>")
        body += table(counts, [("source", "source", "text"), ("action_raw", "operation", "code"),
                               ("principal", "principal", "code"), ("n", "events", "num"),
                               ("first", "first (UTC)", "ts"), ("last", "last (UTC)", "ts")],
                      max_rows=50)
    by_how = result.links["how"].value_counts() if len(result.links) else pd.Series(dtype="int64")
    if len(by_how):
        body += "<h3>How requests were linked to calls</h3><ul>" + "".join(
            f"<li><code>{esc(k)}</code>: {int(v):,}</li>" for k, v in by_how.items()) + "</ul>"
    body += "<h3>What each door call reached in storage</h3>"
    body += table(result.per_call, [("door_session", "door session", "code"), ("seq", "seq", "num"),
                                    ("ts", "time (UTC)", "ts"), ("object", "object", "code"),
                                    ("decision", "decision", "text"), ("call_uri", "storage URI", "code"),
                                    ("access_count", "requests", "num"), ("access_bytes", "bytes (storage)", "num"),
                                    ("denied_count", "denied by storage", "num"),
                                    ("note", "whose requests", "text")],
                  max_rows=max_rows, row_class=_refused_row)
    off = float(getattr(result, "offset_s", 0.0) or 0.0)
    if off:
        body += ('<p class="rb-note"><b>Clock offset</b>: the door\'s clock was '
                 f"{abs(off):,.1f} s {'behind' if off > 0 else 'ahead of'} the cloud's — "
                 + ("as the manifest gives it (storage_clock_ahead_s); "
                    f"{_count(int(getattr(result, 'offset_requests', 0)), 'request')} line up with their calls once "
                    if getattr(result, "offset_given", False) else
                    f"measured on {_count(int(getattr(result, 'offset_requests', 0)), 'request')} that line up with "
                    "their calls once ")
                 + "it is taken off — and every storage time was compared with the door's after taking it off. "
                 "The times shown are as each log wrote them.</p>")
    doors = getattr(result, "door_offsets", None)
    if doors is not None and len(doors):
        items = []
        for r in doors.itertuples():
            ahead = f"{abs(float(r.offset_s)):,.1f} s {'behind' if float(r.offset_s) > 0 else 'ahead of'} the cloud's"
            if r.applied:
                items.append(f"<li>door agent <code>{esc(r.agent)}</code>: its door's clock was {ahead} — "
                             + ("as the manifest gives it (storage_clock_ahead_s)" if r.given else "measured")
                             + f"; {_count(int(r.requests), 'request')} made by its calls line up once it is taken "
                             "off, and its calls were compared at it</li>")
            else:
                items.append(f"<li>door agent <code>{esc(r.agent)}</code>: {_count(int(r.requests), 'request')} made "
                             f"by its calls would line up if its door's clock was {ahead} — too few more than at the "
                             "common offset to take it; if that door's host is known to run off, give it: "
                             f"<code>storage_clock_ahead_s: {{{esc(r.agent)}: {float(r.offset_s):.1f}}}</code></li>")
        body += ('<p class="rb-note"><b>Doors on clocks of their own</b> (a door on a host of its own):</p><ul>'
                 + "".join(items) + "</ul>")
    body += ('<p class="rb-note">Windows: storage time may precede the door by '
             f"{result.skew_s:g} s (clock skew) and a completed request may end up to {result.lag_s:g} s after the "
             "door answered. Access logs arrive late (CloudTrail about 5 minutes, S3 server access logs within "
             "hours, best effort): a call near the end of the logs with no request may only be undelivered.</p>")
    return _section("Cloud access the door did not explain", body, anchor="access")


#: How a request's own source is named where another log holds it too.
_SOURCE_NAMES = {"aws.cloudtrail": "CloudTrail", "aws.s3_access": "the S3 server access log",
                 "gcp.audit": "the GCP audit log", "azure.storage": "the Azure Storage log"}


def _where_logged(source: Any, source_file: Any, line_no: Any, inputs: Mapping[str, list[str]],
                  records: frozenset[str] | set[str] = frozenset()) -> str:
    """``<code>file</code> line 6``, or ``record 2`` of a whole-file JSON document (a CloudTrail
    delivery file, a GCP array as ``gcloud logging read --format=json`` writes it: its records
    numbered by the loader, ``numbered: "record"`` in its Inputs row, whose path is among
    ``records``): the file by its name (CloudTrail and S3 name each log file uniquely), or by
    its path as Inputs shows it when two inputs share that name (found by its trailing path);
    never the investigator's own path.  A file Inputs does not list is taken for records when
    it is a CloudTrail file not named as JSON Lines."""
    if _isna(source_file):
        return "file not known"
    f = str(source_file)
    name = PurePosixPath(f.replace("\\", "/")).name
    same = inputs.get(name, ())
    row = max((r for r in same if f == r or f.endswith("/" + r)), key=len, default=None)
    shown = name if len(same) < 2 else (row or name)
    if row is not None:
        unit = "record" if row in records else "line"
    else:
        unit = ("record" if str(source) == "aws.cloudtrail"
                and not name.endswith((".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")) else "line")
    return f"<code>{_breakable(shown)}</code>" + ("" if _isna(line_no) else f" {unit} {int(line_no):,}")


def _with_principal_names(un: pd.DataFrame) -> pd.DataFrame:
    """``un`` with each ``principal`` shown as ``id (name)`` where the log gave a readable name
    beside the id (``principal_name``: an Azure requester's UPN beside its object id)."""
    if "principal_name" not in un.columns or not un["principal_name"].notna().any():
        return un
    return un.assign(principal=pd.array(
        [p if _isna(nm) else (nm if _isna(p) else f"{p} ({nm})") for p, nm in zip(un["principal"], un["principal_name"])],
        dtype="string"))


def _request_cells(un: pd.DataFrame, access: pd.DataFrame | None, dups: pd.DataFrame | None,
                   inputs: Sequence[Mapping]) -> list[str]:
    """For each unexplained request (``AccessJoinResult.unexplained`` rows): what cites it —
    its source, request id labelled as what it is (:func:`~replaybook.access_join.request_id_kind`:
    ``event id`` for a CloudTrail event told by its ``eventID``, ``insert id`` for a GCP
    audit entry's) and a CloudTrail record's ``eventID`` beside its request id, the file and line it was
    read from, and where the logs hold it again (``dups``: ``ACCESS_DUPLICATES`` rows whose
    ``same_as`` is the request's ``access_index``; their file and line from ``access``)."""
    by_name: dict[str, list[str]] = {}
    for r in inputs:
        if r.get("path"):
            by_name.setdefault(PurePosixPath(str(r["path"])).name, []).append(str(r["path"]))
    records = {str(r["path"]) for r in inputs if r.get("path") and r.get("numbered") == "record"}
    again: dict[int, list] = {}
    if dups is not None and len(dups) and access is not None:
        for d in dups.itertuples(index=False):
            if _isna(d.same_as) or d.access_index not in access.index:
                continue
            a = access.loc[d.access_index]
            again.setdefault(int(d.same_as), []).append((d.how, d.source, a.get("source_file"), a.get("line_no")))
    out = []
    from ..access_join import request_id_kind

    for r in un.to_dict("records"):
        raw = r.get("raw")  # (a dict, or a SourceRecord: a mapping parsed on first use)
        event_id = raw.get("eventID") if isinstance(raw, Mapping) and r.get("source") == "aws.cloudtrail" else None
        kind = request_id_kind(r.get("source"), raw, r.get("request_id"))  # ("event id": no requestID)
        if kind == "event id":
            event_id = None  # (the same id: said once, as what it is)
        parts = [esc(r.get("source")),
                 (f"{kind} —" if _isna(r.get("request_id")) else f"{kind} <code>{_breakable(r['request_id'])}</code>")
                 + (f", eventID <code>{_breakable(event_id)}</code>" if isinstance(event_id, str) and event_id else ""),
                 _where_logged(r.get("source"), r.get("source_file"), r.get("line_no"), by_name, records)]
        idx = r.get("access_index")
        for how, src, f, ln in ([] if _isna(idx) else again.get(int(idx), [])):
            where = _where_logged(src, f, ln, by_name, records)
            parts.append(f"<b>also in {esc(_SOURCE_NAMES.get(str(src), str(src)))}</b>: {where}"
                         if how == "another log" else f"<b>delivered again</b>: {where}")
        out.append("<br>".join(parts))
    return out


def refused_then_requested(unexplained: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The storage requests no door call explains on an object the door had refused a call on
    (``AccessJoinResult.unexplained`` rows with ``refused_session``), split by what storage
    answered: ``(reached, tried)``.  ``reached``: ``outcome`` ``allowed`` — the request got what
    the door kept from the agent.  ``tried``: every other outcome (``denied``, ``error``, or none
    logged) — the request reached nothing, but someone tried the object the door refused.  Both
    keep the rows' columns and order; empty frames without ``refused_session``."""
    if unexplained is None or "refused_session" not in unexplained.columns or not len(unexplained):
        empty = unexplained.iloc[0:0] if unexplained is not None else pd.DataFrame()
        return empty, empty
    hit = unexplained[unexplained["refused_session"].notna().to_numpy(bool) & ~_other_principal(unexplained)]
    allowed = hit["outcome"].astype("string").eq("allowed").fillna(False).to_numpy(bool)
    return hit[allowed], hit[~allowed]


def _other_principal(unexplained: pd.DataFrame) -> np.ndarray:
    """Per row: the request carries a principal that is not the refused call's agent's
    (``refused_agents_principal`` False; False where that is not known)."""
    if "refused_agents_principal" not in unexplained.columns:
        return np.zeros(len(unexplained), bool)
    return unexplained["refused_agents_principal"].eq(False).fillna(False).to_numpy(bool)


def refused_then_other_principal(unexplained: pd.DataFrame | None) -> pd.DataFrame:
    """The storage requests no door call explains on an object the door had refused the agent,
    made by another principal than the refused call's agent acts as
    (``AccessJoinResult.unexplained`` rows with ``refused_session`` and
    ``refused_agents_principal`` False: the manifest's ``principals`` say whose the agent's
    are) — made with another principal's credentials, however soon after the refusal: not the
    agent's own access, so not in :func:`refused_then_requested`, but a fact of its own (whoever
    used those credentials — a person, another job, an agent that had them — no log here says).
    The rows' columns and order; an empty frame when there are none."""
    if unexplained is None or "refused_session" not in unexplained.columns or not len(unexplained):
        return unexplained.iloc[0:0] if unexplained is not None else pd.DataFrame()
    return unexplained[unexplained["refused_session"].notna().to_numpy(bool) & _other_principal(unexplained)]


def _refused_objects(hit: pd.DataFrame, named: int = 5, *, calls: pd.DataFrame | None = None,
                     per_call: pd.DataFrame | None = None) -> str:
    """The objects of refused-then-requested rows (HTML), each with what the logs show of its
    first request: the operation, the principal and whose it is (``door_principal``: the door's
    own — :data:`DOOR_PRINCIPAL` —, one the manifest gives the door for another agent than the
    refused call's (``refused_agents_principal`` False), or none the manifest gives the door;
    nothing when the manifest names no principals), the time from the refusal and the refused call; with
    ``calls`` (a CALLS frame), when that was beside the door sessions of the refused call's
    agent (:func:`_beside_sessions`); with ``per_call`` (``AccessJoinResult.per_call``), whether
    the door allowed any call on the object.  ``<code>s3://b/.env</code> (GetObject by
    <code>arn:…</code>, the door's own principal; 111 s after the refusal in door session
    <code>s1</code> #5, rule <code>no-dotenv</code>; after every door session had ended: the last
    door call ended 111 s before; the door allowed no call on this object)``; the first
    ``named``.  Who sent a request no log says: the principal is whose credentials it carried."""
    from ..access_join import _delta_words

    out = []
    first = hit.drop_duplicates("resource_uri")
    for r in first.head(named).to_dict("records"):
        op = r.get("action_raw") if not _isna(r.get("action_raw")) else r.get("action")
        who = "" if _isna(r.get("principal")) else f" by <code>{esc(r['principal'])}</code>"
        dp, own = r.get("door_principal"), r.get("refused_agents_principal")
        # (a principal the manifest gives the door for another agent is not this agent's door's)
        whose = ("" if _isna(dp) or not who else ", not a principal the manifest gives the door" if not bool(dp) else
                 ", a principal the manifest gives the door for another agent, not the refused call's agent"
                 if not _isna(own) and not bool(own) else ", the door's own principal")
        parts = [f"{esc(op or 'a request')}{who}{whose}"]
        since = r.get("since_refusal_s")
        if not _isna(since):
            where = "" if _isna(r.get("refused_session")) else (
                f" in door session <code>{esc(r['refused_session'])}</code>"
                + ("" if _isna(r.get("refused_seq")) else f" #{esc(r['refused_seq'])}")
                + ("" if _isna(r.get("refused_rule")) else f", rule <code>{esc(r['refused_rule'])}</code>"))
            parts.append(f"{_delta_words(float(since))} the refusal{where}")
            beside = _beside_sessions(calls, r.get("refused_session"), r.get("refused_seq"), float(since))
            if beside:
                parts.append(esc(beside))
        allowed = _allowed_on(per_call, r.get("resource_uri"))
        if allowed:
            parts.append(esc(allowed))
        out.append(f"<code>{esc(r['resource_uri'])}</code> ({'; '.join(parts)})")
    more = f" and {len(first) - named:,} more" if len(first) > named else ""
    return ", ".join(out) + more


def _beside_sessions(calls: pd.DataFrame | None, session: Any, seq: Any, since_s: float) -> str:
    """When a request came beside the door sessions, in words: the request's time is the refused
    call's (``session``, ``seq``) start plus ``since_s`` seconds (the access join's, on that
    call's door clock), set against the span of each door session of the same door agent (first
    call's start to last call's end, ``ts_end`` else ``ts``: one door's clock) — ``while door
    session s1 was running (between its first and last call)``, ``after every door session had
    ended: the last door call ended 111 s before``, ``before any door session began: 3.0 s before
    the first door call``, ``between door sessions, none running: the last door call before it
    ended 2 min before``.  Sessions of another agent are left out (another door may keep
    another clock), and the agent is named when the calls have more than one.  ``""`` without
    ``calls`` or when the refused call or its time is not among them."""
    from ..access_join import duration_words

    if calls is None or not len(calls) or _isna(session) or _isna(seq) or not {"door_session", "seq", "ts"} <= set(
            calls.columns):
        return ""
    ds = calls["door_session"].astype("string")
    at = np.flatnonzero((ds == str(session)).fillna(False).to_numpy(bool)
                        & (pd.to_numeric(calls["seq"], errors="coerce") == int(seq)).fillna(False).to_numpy(bool))
    if not len(at) or _isna(calls["ts"].iat[at[0]]):
        return ""
    t = pd.Timestamp(calls["ts"].iat[at[0]]) + pd.Timedelta(seconds=since_s)
    agents = calls["agent"].astype("string") if "agent" in calls.columns else pd.Series(pd.NA, index=calls.index,
                                                                                            dtype="string")
    agent = agents.iat[at[0]]
    same = calls[(agents.isna() if _isna(agent) else agents.eq(agent)).fillna(False).to_numpy(bool)]
    end = same["ts_end"].fillna(same["ts"]) if "ts_end" in same.columns else same["ts"]
    spans = pd.DataFrame({"session": same["door_session"].astype("string"), "start": same["ts"],
                          "end": end}).dropna(subset=["start"]).groupby("session").agg(start=("start", "min"),
                                                                                       end=("end", "max"))
    if not len(spans):
        return ""
    whose = ("" if agents.nunique(dropna=False) <= 1 else
             " with no agent logged" if _isna(agent) else f" of agent {agent}")
    running = spans[(spans["start"] <= t) & (spans["end"] >= t)]
    if len(running):
        names = list(running.index.astype(str))
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3:,} more" if len(names) > 3 else "")
        return (f"while door session{'' if len(names) == 1 else 's'} {shown} {'was' if len(names) == 1 else 'were'} "
                f"running (between {'its' if len(names) == 1 else 'their'} first and last call)")
    if t > spans["end"].max():
        gap = duration_words((t - spans["end"].max()).total_seconds())
        if len(spans) == 1:
            return f"after door session {spans.index[0]}{whose} had ended: its last call ended {gap} before"
        return f"after every door session{whose} had ended: the last door call ended {gap} before"
    if t < spans["start"].min():
        return (f"before any door session{whose} began: "
                f"{duration_words((spans['start'].min() - t).total_seconds())} before the first door call")
    gap = duration_words((t - spans.loc[spans["end"] < t, "end"].max()).total_seconds())
    return f"between door sessions{whose}, none running: the last door call before it ended {gap} before"


def _allowed_on(per_call: pd.DataFrame | None, uri: Any) -> str:
    """Whether the door allowed any call on the storage object ``uri`` (``per_call``:
    ``AccessJoinResult.per_call``, each call's object through ``storage_map`` as ``call_uri``):
    ``the door allowed no call on this object``, or ``the door allowed 2 calls on this object
    (first: door session s1 #3), none that explains this request``; ``""`` without ``per_call``."""
    if per_call is None or _isna(uri) or not {"call_uri", "decision"} <= set(per_call.columns):
        return ""
    on = per_call[per_call["call_uri"].astype("string").eq(str(uri)).fillna(False).to_numpy(bool)
                  & per_call["decision"].astype("string").eq("allow").fillna(False).to_numpy(bool)]
    if not len(on):
        return "the door allowed no call on this object"
    on = on.sort_values("ts", kind="stable") if "ts" in on.columns else on
    f = on.iloc[0]
    first = f"door session {f['door_session']}" + ("" if _isna(f.get("seq")) else f" #{f['seq']}")
    return f"the door allowed {_count(len(on), 'call')} on this object (first: {first}), none that explains this request"


#: How a refused object's request that reached nothing ended, by ``outcome``.
_TRIED_OUTCOMES = {"denied": "denied by storage", "error": "failed in storage (an error)"}


def _tried_words(tried: pd.DataFrame) -> str:
    """What storage answered the requests of :func:`refused_then_requested`'s ``tried`` and
    whose principal they carried, in words: ``denied by storage, so nothing was reached; with
    the door's own principal``."""
    said = [None if _isna(o) else _TRIED_OUTCOMES.get(str(o)) for o in tried["outcome"]]
    outs = list(dict.fromkeys(o or "no outcome logged" for o in said))
    reached = ("so nothing was reached" if all(said) else
               "so what was reached is not known where no outcome is logged")
    dp = [None if _isna(v) else bool(v) for v in tried["door_principal"]] if "door_principal" in tried else []
    whose = ("; with the door's own principal" if dp and all(v is True for v in dp) else
             "; by another principal than the door's" if dp and all(v is False for v in dp) else
             "; some with the door's own principal" if any(v is True for v in dp) else "")
    return f"{' or '.join(outs)}, {reached}{whose}"


def _storage_clock_words(offset_s: Any) -> str:
    """The storage log's clock against the door's, for a time from a refusal (measured on the
    door's clock) shown beside times the storage log wrote: ``the storage log's clock reads 40 s
    behind the door's (Clock offset, below)`` for ``offset_s`` −39.7 (the access join's storage −
    door offset, seconds); ``""`` when it is under a second, NA or ``None``."""
    if offset_s is None or _isna(offset_s) or abs(float(offset_s)) < 1:
        return ""
    return (f"the storage log's clock reads {_span(float(offset_s))} "
            f"{'ahead of' if float(offset_s) > 0 else 'behind'} the door's (Clock offset, below)")


def _refused_then_reached(un: pd.DataFrame, offset_s: Any = None) -> str:
    """The storage requests no door call explains on objects the door had refused a call on
    (``AccessJoinResult.unexplained`` rows with ``refused_session``; ``origin`` already HTML), in
    two parts (:func:`refused_then_requested`): those storage allowed — the agent was refused
    the object, and it was reached anyway — and those it denied (or that failed): tried, not
    reached, a finding all the same; then, apart, those another principal than the agent's made
    (:func:`refused_then_other_principal`).  ``offset_s``: the access join's storage − door clock
    offset, seconds: when it is a second or more, each part says that **when** is measured on
    the door's clock, while the request time is as the storage log wrote it — a request 40 s
    "after" a refusal had shown a time before the refusal's, with nothing beside it to say why."""
    reached, tried = refused_then_requested(un)
    out = ""
    clock = _storage_clock_words(offset_s)
    moved = ("" if not clock else
             f" <b>when</b> is on the door's clock: {clock}, and each request time is shown as the storage log "
             f"wrote it, so set beside the refused call's time it reads {_span(float(offset_s))} "
             f"{'later' if float(offset_s) > 0 else 'earlier'} than it was on the door's clock.")
    for got, hit in ((True, reached), (False, tried), (None, refused_then_other_principal(un))):
        if not len(hit):
            continue
        from ..access_join import _delta_words

        hit = hit.assign(
            refused=[f"<code>{esc(sess)}</code> seq {esc(seq)}" + ("" if _isna(rule) else f", rule <code>{esc(rule)}</code>")
                     for sess, seq, rule in zip(hit["refused_session"], hit["refused_seq"], hit["refused_rule"])],
            when=[_delta_words(float(d)) + " the refusal" for d in hit["since_refusal_s"]])
        objs = hit["resource_uri"].nunique()
        it, them = ("it" if objs == 1 else "them"), ("it" if len(hit) == 1 else "them")
        if got is None:
            out += ("<h3>Refused at the door, requested in storage by another principal</h3>"
                    f"<p>The door refused the agent {_count(objs, 'object')}, and <b>{_count(len(hit), 'storage request')}"
                    f"</b> by another principal than the agent's requested {it}, with no door call behind {them}. "
                    "The door's refusal binds the agent's principal, not this one: whoever held this principal's "
                    "credentials (a person, another job — or anyone, the agent included, who had them) touched "
                    "what the agent was refused; the logs name the credentials used, not who used them. "
                    "<b>when</b> says how long after the refusal.</p>")
        elif got:
            out += ("<h3>Refused at the door, reached in storage with no door call</h3>"
                    f"<p>The door refused the agent {_count(objs, 'object')}, and <b>{_count(len(hit), 'storage request')}"
                    f"</b> reached {it} anyway, with no door call behind {them}. Whoever sent each request (its "
                    "principal, address and client) reached what the door kept from the agent.</p>")
        else:
            out += ("<h3>Refused at the door, tried in storage with no door call</h3>"
                    f"<p>The door refused the agent {_count(objs, 'object')}, and <b>{_count(len(hit), 'storage request')}"
                    f"</b> tried {it} anyway, with no door call behind {them}: {esc(_tried_words(hit))}. A finding "
                    "all the same: whoever sent each request (its principal, address and client) tried to reach what "
                    "the door kept from the agent.</p>")
        if moved:
            out += f'<p class="rb-note">{moved.strip()}</p>'
        out += table(hit, [("resource_uri", "object", "code"), ("refused", "refused call", "html"),
                           ("ts", "request time (UTC)", "ts"), ("when", "when", "text"),
                           ("principal", "principal", "code"), ("door_principal", "door's principal", "text"),
                           ("action_raw", "operation", "code"), ("outcome", "outcome", "text"),
                           ("bytes", "bytes", "num"), ("origin", "from (address · client)", "html")],
                     max_rows=MAX_ROWS, row_class=lambda r: "rb-refused")
    return out


def capsule_words(section: Any) -> str:
    """The replay capsule in one sentence, ``""`` without one (plain text; the caller escapes
    it): with the three runs (a :class:`~replaybook.capsule.report.CapsuleSection`), what the
    forensic replay and today's live run showed and the decision — ``"replay capsule: forensic
    replay reproduced, live run diverged at checkpoint 12; suggested decision:
    incident_explained_by_service_catalogue_drift"`` (``reviewer's decision`` where the manifest
    gives one); with fewer (an :class:`~replaybook.capsule.report.InventorySection`), the
    capsule's completeness and the runs a verdict still needs."""
    if section is None:
        return ""
    verdict = getattr(section, "verdict", None)
    if isinstance(verdict, Mapping) and isinstance(verdict.get("replay_verdict"), Mapping):
        v = verdict["replay_verdict"]
        who = "reviewer's decision" if str(getattr(section, "decision", "")).startswith("Reviewer's") \
            else "suggested decision"
        return (f"replay capsule: forensic replay {v.get('forensic_verdict')}, live run {v.get('live_verdict')}; "
                f"{who}: {v.get('reviewer_decision')}")
    missing = list(getattr(section, "missing", []) or [])
    words = f"replay capsule: {getattr(section, 'completeness', 'not verified')}"
    if missing:
        words += f"; no verdict without the {' and '.join(missing)} run{'' if len(missing) == 1 else 's'}"
    return words


def _capsule_diverged(section: Any) -> bool:
    """The capsule's forensic replay or live run diverged, or it is not complete: said in bold."""
    verdict = getattr(section, "verdict", None)
    if isinstance(verdict, Mapping) and isinstance(verdict.get("replay_verdict"), Mapping):
        v = verdict["replay_verdict"]
        return (not v.get("capsule_complete") or not str(v.get("forensic_verdict")).startswith("reproduced")
                or not str(v.get("live_verdict")).startswith("reproduced"))
    return getattr(section, "completeness", None) != "complete"


def packet_counts(summary: Mapping | None) -> dict:
    """What the findings line and the header say of a replay packet, from
    :func:`replaybook.packet.packet_summary` (``{}`` without a packet): ``steps`` and
    ``failing_steps`` (recorded steps, those with a non-zero exit), ``findings``, ``warnings``,
    ``markers`` and ``accepted_markers`` (the PR body's ``[seq:N]`` markers, and those accepted; ``None``
    when the manifest names no body), ``chain`` (``chained`` / ``unchained`` / ``damaged``) and
    ``verdict`` (a replay's ``PASS`` / ``DIVERGED`` / ``UNRUNNABLE``; ``None``: no replay is run
    for the report) and ``edited_outputs`` (the seqs whose stored output no longer hashes to the
    step's ``out_sha``: changed after recording)."""
    if not summary:
        return {}
    c = summary.get("counts") or {}
    edited = sorted(int(q) for q, o in (summary.get("outputs") or {}).items() if o.get("edited"))
    return {"steps": c.get("steps"), "failing_steps": c.get("failing_steps"), "findings": c.get("findings"),
            "warnings": c.get("warnings"), "markers": c.get("markers"),
            "accepted_markers": c.get("accepted_markers"), "chain": summary.get("chain"),
            "verdict": summary.get("verdict"), "edited_outputs": edited}


def packet_words(summary: Mapping | None) -> str:
    """The replay packet in one sentence, ``""`` without one: with a PR body, ``"replay packet: 5
    findings, 0 warnings, 6 of 11 markers accepted in the PR body"`` (``[seq:N]`` markers, the word
    ``replaybook packet claims`` uses); without, the recorded
    steps and that no PR body was linted; a damaged log chain, stored outputs changed after
    recording, and a replay verdict when there is one.  Plain text (the caller escapes it)."""
    c = packet_counts(summary)
    if not c:
        return ""
    if c.get("findings") is not None:
        words = (f"{_count(c['findings'], 'finding')}, {_count(c.get('warnings') or 0, 'warning')}, "
                 f"{c.get('accepted_markers') or 0:,} of {_count(c.get('markers') or 0, 'marker')} accepted "
                 "in the PR body")
    else:
        words = (f"{_count(c.get('steps') or 0, 'recorded step')}, no PR body named: no claims checked")
    if c.get("chain") == "damaged":
        words += "; the session log's chain is damaged"
    if c.get("edited_outputs"):  # evidence changed after it was recorded: as much a finding as a false claim
        n = len(c["edited_outputs"])
        words += (f"; {_count(n, 'stored output')} changed after recording (seq "
                  f"{', '.join(map(str, c['edited_outputs']))})")
    if c.get("verdict"):
        words += f"; replay {c['verdict']}"
    return "replay packet: " + words


def packet_section(summary: Mapping | None, steps: pd.DataFrame | None = None) -> str:
    """The replay packet: its recorded steps (start time, commit, exit codes, output hashes, the
    transcript tool call that recorded each where ``steps`` holds it:
    :func:`replaybook.packet.links.recording_calls`),
    their stored outputs, and the PR body's ``[seq:N]`` claims checked against them (from
    :func:`replaybook.packet.packet_summary`), or an empty string when there is no packet."""
    if not summary:
        return ""
    c = summary.get("counts", {})
    log_path = _shown_path(summary.get("log_path") or "session.jsonl")
    body_path = _shown_path(summary.get("body_path")) if summary.get("body_path") else None
    # as the CI job runs it (docs/packets.md): the PR head must hold what the last step ran on,
    # a PR body written beside the log after the last step aside
    same_dir = body_path is not None and os.path.dirname(body_path) == os.path.dirname(log_path)
    replay_cmd = (f"replaybook packet replay {shlex.quote(log_path)}"
                  + (f" --body {shlex.quote(body_path)}" if body_path else "") + " --require-head"
                  + (f" --head-ignore {shlex.quote(os.path.basename(body_path))}" if same_dir else ""))
    if summary.get("verdict"):
        replayed = f"Replayed in a clean checkout: {esc(summary.get('headline') or summary['verdict'])}."
    else:
        replayed = (f"This report does not replay them: run <code>{esc(replay_cmd)}</code> in the repository to "
                    "re-run them in a clean checkout. Its verdict (PASS, DIVERGED or UNRUNNABLE) and the steps that "
                    "diverged are printed there"
                    + (", with the claims that cite them," if body_path else "") + " and are not in this report.")
    body = (f"<p>{c.get('steps', 0)} recorded steps ({c.get('failing_steps', 0)} with a non-zero exit — a "
            f"failing-then-passing pair is often the best evidence). {replayed}</p>")
    chain = summary.get("chain")
    chain_words = {"chained": "intact — every line carries the digest of the line before it, and none was removed, "
                              "renumbered or edited",
                   "unchained": "unchained — the log carries no digest chain (an older or hand-written log): lines "
                                "removed from it show only as gaps in seq",
                   "damaged": "DAMAGED — lines were removed, renumbered or edited, or its end cut off (the findings "
                              "below name them)"}.get(chain)
    if chain_words:
        body += f"<p>Session log chain: {esc(chain_words)}.</p>"
    transcript_steps = steps
    steps = summary["steps"]
    outputs = summary.get("outputs") or {}
    from ..packet.links import recording_calls

    by = recording_calls(steps, transcript_steps)
    dirty_paths = steps["dirty_paths"] if "dirty_paths" in steps.columns else [None] * len(steps)
    steps = steps.assign(at=[_commit_cell(c, d, p) for c, d, p in zip(steps["commit"], steps["dirty"], dirty_paths)],
                         by=["—" if b is None else f"<code>{esc(b[0])}</code> step {b[1]}" for b in by]) \
        if len(steps) else steps.assign(at=pd.Series(dtype=object), by=pd.Series(dtype=object))
    cols = [("seq", "seq", "num"), ("ts", "started (UTC)", "ts"), ("cmd", "command", "code"),
            ("cwd", "cwd", "code"), ("at", "commit", "html"), ("exit", "exit", "num"),
            ("out_sha", "output SHA-256", "code"), ("duration_ms", "ms", "num"), ("replay_status", "replay", "text")]
    if any(b is not None for b in by):
        cols.insert(3, ("by", "recorded by the agent's call", "html"))
        n = sum(b is not None for b in by)
        body += (f"<p>{n} of {len(by)} steps were recorded by a tool call in the transcripts (a shell call running "
                 "<code>replaybook packet record</code> or <code>rec</code> with the step's command, up to 2 minutes "
                 "before it started): the call is named beside the step"
                 + ("; the others were run outside the agent's calls the transcripts hold" if n < len(by) else "")
                 + ".</p>")
    body += table(steps, cols, row_class=lambda r: "rb-refused" if r.get("exit") not in (0, None) else "")
    body += _stored_outputs(steps, outputs)
    claims = summary.get("claims")
    if claims is not None and len(claims):
        body += (f"<h3>Claims in the PR body</h3><p>{_count(c.get('findings') or 0, 'finding')}, "
                 f"{_count(c.get('warnings') or 0, 'warning')}, {c.get('accepted_markers') or 0:,} of "
                 f"{_count(c.get('markers') or 0, '[seq:N] marker')} accepted.</p>")
        body += table(claims, [("line_no", "line", "num"), ("status", "status", "text"), ("kind", "kind", "code"),
                               ("seq", "cites seq", "num"), ("step_exit", "step exit", "num"),
                               ("sentence", "sentence", "text"), ("message", "what is wrong", "prose")],
                      row_class=lambda r: "rb-refused" if r.get("status") == "finding" else "")
    return _section("Replay packet", body, anchor="packet")


def _shown_path(p: Any) -> str:
    """A packet file's path as the report shows it: relative to the working directory — the
    manifest's folder when ``replaybook report`` renders it, so the manifest's own path — when
    the two share a folder below the root, else as given."""
    p = str(p)
    try:
        common = os.path.commonpath([os.getcwd(), os.path.abspath(p)])
    except ValueError:  # (another drive)
        return p
    return p if common == os.path.dirname(common) else os.path.relpath(p)  # (only the root is its own parent)


def _commit_cell(commit: Any, dirty: Any, paths: Any = None) -> str:
    """A step's commit (first 12 hex digits) and whether the working tree had uncommitted
    changes, with the paths the log names (HTML): ``<code>3f2a…</code><br>uncommitted changes:
    <code>calc.py</code>``; "—" when not recorded."""
    c = "—" if _isna(commit) else f"<code>{esc(str(commit)[:12])}</code>"
    if _isna(dirty) or not bool(dirty):
        return c
    return c + "<br>uncommitted changes" + ("" if _isna(paths) or not str(paths) else f": <code>{esc(paths, 200)}</code>")


#: what a stored output shows in the report: its first lines, up to this many characters
_OUTPUT_SHOWN = 4000


def _stored_outputs(steps: pd.DataFrame, outputs: Mapping) -> str:
    """The stored normalized output of each step that has one (``outputs``: the packet
    summary's), each in a collapsed block: what the claims rest on, readable without the
    repository.  An output edited after recording (it no longer hashes to the step's
    ``out_sha``) or missing is said so, and not shown."""
    if not outputs:
        return ""
    cmds = dict(zip(steps["seq"].tolist(), steps["cmd"].tolist()))
    parts = []
    for seq, o in sorted(outputs.items()):
        name = PurePosixPath(str(o.get("path") or "")).name
        head = f"seq {int(seq)}: <code>{esc(cmds.get(seq), 120)}</code> — <code>{esc(name)}</code>"
        text = o.get("text")
        if text is None:
            why = ("changed after it was recorded: it no longer hashes to the step's output SHA-256, so it is not shown"
                   if o.get("edited") else "not in the outputs folder")
            parts.append(f"<li>{head}: {why}</li>")
            continue
        cut = text if len(text) <= _OUTPUT_SHOWN else text[:_OUTPUT_SHOWN]
        more = "" if cut is text else f"\n…[{len(text) - _OUTPUT_SHOWN:,} more characters in the file]"
        parts.append(f"<li><details><summary>{head} ({len(text.encode('utf-8')):,} bytes)</summary>"
                     f'<pre class="rb-result">{esc(cut)}{esc(more)}</pre></details></li>')
    return ("<h3>Stored outputs</h3><p>What each step printed, normalized as its output SHA-256 was taken "
            "(the recorder stores it beside the session log):</p><ul>" + "".join(parts) + "</ul>")


def capsule_section(incident: Any, section: Any = None) -> str:
    """The replay capsule's verdict block, inventory and divergence record (the incident's
    ``capsule`` entry; ``section``: :meth:`~replaybook.Incident.capsule_section` when the caller
    has it already), or an empty string when the incident names no capsule."""
    if not getattr(incident, "has_capsule", False):
        return ""
    sec = section if section is not None else incident.capsule_section()
    # (the section's own heading carries the anchor the header's link and the contents use)
    return _section(None, sec.html().replace("<h2>", '<h2 id="capsule">', 1))


def residuals(
    *,
    unclaimed_calls: pd.DataFrame | None,
    unmatched_steps: pd.DataFrame | None,
    unmatched_transcripts: Sequence[str] | None,
    sessions: pd.DataFrame | None,
    split_ids: pd.DataFrame | None = None,
    max_rows: int = 200,
) -> str:
    """The join's residuals, as a section ("Residuals: what the join left unpaired", anchor
    ``residuals``): door calls no transcript step claims (``unclaimed_calls``, a
    :data:`~replaybook.frames.CALLS` frame) — those among them that a step's tool-use id names
    (``split_ids``, :attr:`replaybook.join.JoinResult.split_ids`) named with that step —, door-bound
    transcript tool calls with no door call
    (``unmatched_steps``, a :data:`~replaybook.frames.STEPS` frame), transcripts assigned to no
    session, door sessions a gateway did not name (one client-day, possibly several
    conversations), and sessions whose assignment is ambiguous or missing (``sessions``, the
    join's sessions frame).  Each table shows at most ``max_rows`` rows."""
    body = ('<p class="rb-note">What one side recorded and the other did not. Each row is a lead, not a '
            'finding: see <a href="#cannot-prove">What the join cannot prove</a> for why a pair can be '
            "missing.</p>")
    no_door = sessions is None or not len(sessions)
    nothing = "No door calls in this incident (none listed, or none read from what was: see Inputs): nothing to compare."
    body += "<h3>Door calls no transcript step claims</h3>"
    body += table(_args_shown(unclaimed_calls, max_rows),
                  [("door_session", "door session", "code"), ("seq", "seq", "num"), ("ts", "time (UTC)", "ts"),
                   ("tool", "tool", "code"), ("object", "object", "code"), ("decision", "decision", "text"),
                   ("args_key", "arguments", "code")],
                  max_rows=max_rows, row_class=_refused_row,
                  empty=nothing if no_door else "None: every door call of an assigned session has a matching "
                                                "transcript step.")
    if split_ids is not None and len(split_ids):
        body += ('<p class="rb-note">Of these, the calls below carry the tool-use id of a transcript step: the id '
                 "proves they are one call, but the join put them in no link (the session is not taken as "
                 "continuing the step's conversation: too few of its calls agree with it, or it ran at the same "
                 "time as that conversation's session), so the call is listed here and the step, where its "
                 "conversation has a door session, below.</p>")
        shown = split_ids.assign(conversation_session=split_ids["conversation_session"].fillna("(none)"))
        body += table(shown, [("door_session", "door session", "code"), ("call_seq", "seq", "num"),
                              ("call_id", "tool-use id", "code"), ("transcript_id", "transcript", "code"),
                              ("step_seq", "step seq", "num"),
                              ("conversation_session", "that conversation's door session", "code")],
                      max_rows=max_rows)
    body += "<h3>Transcript tool calls with no door call</h3>"
    shown_steps = _args_shown(unmatched_steps, max_rows)
    step_cols = [("transcript_id", "transcript", "code"), ("seq", "step seq", "num"), ("ts", "time (UTC)", "ts"),
                 ("tool_raw", "tool", "code"), ("call_id", "tool-use id", "code"), ("args_key", "arguments", "code"),
                 ("is_error", "error result", "text")]
    # a call its user declined never ran, so no door had it: no lead (sources._declined; the client
    # writes the same result for a call its user stopped while it ran, hence "or stopped")
    from ..sources._declined import declined_by_user

    declined = declined_by_user(unmatched_steps) if unmatched_steps is not None else np.zeros(0, bool)
    if declined.any():
        n = int(declined.sum())
        body += (f'<p class="rb-note">{n:,} of these {"was" if n == 1 else "were"} declined or stopped by the '
                 "agent's user (the transcript holds the client's own result for such a call, such as \"The user "
                 "doesn't want to proceed …\"): a call declined when the client asked never ran, so no door call "
                 "is expected; the client writes the same result for a call stopped while it ran, which may "
                 "have reached the door.</p>")
        shown_steps = shown_steps.assign(declined=np.where(declined, "declined or stopped by its user", None))
        step_cols.append(("declined", "its transcript says", "text"))
    body += table(shown_steps, step_cols,
                  max_rows=max_rows,
                  empty=nothing if no_door else (
                      "None: every door-bound tool call of an assigned transcript reached the door."
                      if sessions["transcript_id"].notna().any() else
                      "Not checked: no transcript is assigned to a door session, so no transcript's tool calls "
                      "are held against a door log here (see Transcripts no door session explains)."))
    body += "<h3>Transcripts assigned to no door session</h3>"
    ut = list(unmatched_transcripts or [])
    body += ("<ul>" + "".join(f"<li><code>{esc(t)}</code></li>" for t in ut) + "</ul>"
             '<p class="rb-note">Each is shown as a conversation in '
             '<a href="#unassigned">Transcripts no door session explains</a>.</p>') if ut else \
        '<p class="rb-note">None: every transcript was assigned to a door session.</p>'
    synth = _synthetic_sessions(sessions)
    if synth is not None and len(synth):
        body += "<h3>Door sessions the gateway did not name</h3>"
        body += ('<p class="rb-note">The gateway that wrote these calls logs no session id, so each row below '
                 "is one client's calls over one UTC day. It may hold several conversations, but the join links "
                 "each door session to one transcript: calls of the other conversations appear above as "
                 "unclaimed, and their transcripts as assigned to no session.</p>")
        body += table(synth, [("door_session", "door session", "code"), ("calls", "calls", "num"),
                              ("transcript_id", "linked transcript", "code"), ("agreed", "agreed", "num"),
                              ("unclaimed_calls", "unclaimed calls", "num")], max_rows=max_rows)
    body += "<h3>Ambiguous and unmatched door sessions</h3>"
    weak = sessions[sessions["status"].isin(["ambiguous", "unmatched"])] if sessions is not None and len(sessions) \
        else None
    if weak is not None and len(weak):
        body += _sentences(weak)
    elif sessions is None or not len(sessions):
        body += ('<p class="rb-note">No door sessions: this incident holds no door or gateway log, so nothing '
                 "here confirms what any tool call reached.</p>")
    else:
        body += ('<p class="rb-note">None is ambiguous or unmatched: every door session is matched to a transcript. '
                 'How far each link can be trusted (by tool-use id: proof; by content alone: likely, not proof) is '
                 'said in <a href="#sessions">How sure is each link?</a>.</p>')
    return _section("Residuals: what the join left unpaired", body, anchor="residuals")


def cannot_prove() -> str:
    """What the join cannot prove, in general (:data:`CANNOT_PROVE_TEXT`), as a section (anchor
    ``cannot-prove``); this incident's own residuals are :func:`residuals`."""
    body = "<ul>" + "".join(f"<li>{esc(t)}</li>" for t in CANNOT_PROVE_TEXT) + "</ul>"
    body += ('<p class="rb-note">This incident\'s unpaired calls and tool calls are listed in '
             '<a href="#residuals">Residuals: what the join left unpaired</a>.</p>')
    return _section("What the join cannot prove", body, anchor="cannot-prove")


#: MIME type of the :func:`findings` output the report notebook displays (in a cell left out of
#: the HTML); ``render_report`` reads it back from the executed notebook.
SUMMARY_MIME = "application/vnd.replaybook.findings+json"


def findings(sessions: pd.DataFrame, calls: pd.DataFrame, quarantine: pd.DataFrame,
             unexplained: pd.DataFrame | None = None, *, join: Any = None,
             disagreements: Sequence[Mapping] = (), inputs: Sequence[Mapping] = (),
             unmapped_calls: pd.DataFrame | None = None, access_links: pd.DataFrame | None = None,
             principals_given: bool | None = None, packet: Mapping | None = None,
             storage_writes: Sequence[Mapping] = (), capsule: Any = None) -> dict:
    """The report's findings as counts, for a terminal or a CI job that does not open the HTML.

    Args:
        sessions: ``JoinResult.sessions``.
        calls: the ``calls`` frame.
        quarantine: the quarantine (:data:`~replaybook.frames.QUARANTINE`).
        unexplained: ``AccessJoinResult.unexplained``, or ``None`` without access logs.
        join: the :class:`~replaybook.join.JoinResult`, for what it left unpaired and the pairs
            far from their session's clock offset (:data:`FAR_PAIR_MS`).
        disagreements: :attr:`ReachedObjects.disagreements`.
        inputs: :attr:`~replaybook.Incident.inputs` (which cloud log files were read at all).
        unmapped_calls: ``AccessJoinResult.unmapped_calls``, or ``None`` without access logs.
        access_links: ``AccessJoinResult.links``, or ``None`` without access logs.
        principals_given: the manifest gives ``principals`` (``None`` without access logs).
        packet: :meth:`~replaybook.Incident.packet_summary`, or ``None`` without a replay packet.
        storage_writes: :attr:`ReachedObjects.storage_writes`.

    Returns:
        ``{"sessions": {status: count}, "door_calls": int, "refused_calls": int,
        "set_aside_lines": int (damaged or pending lines), "set_aside_files": int (files set aside
        whole, not counting files no source reads), "unread_files": int (files no source reads),
        "unassigned_transcripts": int (transcripts no door session was assigned; 0 without
        ``join``), "unexplained_storage": int or None (storage requests — on ``s3://``, ``gs://``,
        ``az://`` resources — no door call explains; None without access logs), "unexplained_other":
        int or None (the other cloud events no door call explains: IAM, compute …, which no door
        call reaches), "refused_then_reached": [resource URIs the door had refused that a request
        storage allowed reached anyway], "refused_then_tried": [resource URIs the door had refused
        that a request tried and storage denied (or failed): nothing reached],
        "refused_then_tried_words": str or None (what storage answered those and whose principal
        they carried, :func:`refused_then_requested`), "refused_then_other_principal": [resource
        URIs the door had refused the agent that another principal than the agent's requested,
        :func:`refused_then_other_principal`],
        "unclaimed_calls": int, "unmatched_steps": int (door calls no step claims, door-bound tool
        calls with no door call; 0 without ``join``), "far_pairs": int (agreeing pairs more than
        :data:`FAR_PAIR_MS` off their session's offset), "far_clocks": [{door_session,
        transcript_id, offset_s} per unmatched session whose calls line up with a transcript
        beyond max_offset_s; ``sessions`` from :func:`with_far_clocks`], "offset_changes": [{door_session,
        status, transcript_id, default_status, default_transcript, max_offset_s, default_max_offset_s,
        clock_transcript, clock_offset_s} per door session a max_offset_s other than the default joined
        otherwise; ``sessions`` from :func:`with_offset_changes`], "disagreeing_copies": [[object, ...] per
        group of files that look like one dataset but hold different data], "storage_written_after_read":
        [{object, principal, operation, ts (door clock, ISO), first_read_by} per object the agent read that
        the storage's own log holds a later write or delete of: the first such write; with ``writes``,
        [{principal, operation, ts}] in time order, when there were several — the last is the file now],
        "storage_written_words": str or None
        (:func:`storage_write_words`), "cloud_log_losses": [{log,
        file, set_aside, kinds, lines, unread} per cloud log file the quarantine holds lines of
        (:func:`cloud_log_losses`): the requests in them are in no count], "cloud_log_loss_words": [the
        same in sentences, :func:`cloud_loss_words`], "unmapped_calls": [{door_session, seq, object} per
        allowed door call whose object no storage_map entry covers], "other_client_links": [the
        linked requests another principal or client made, :func:`other_client_links`],
        "no_principals": bool (access logs, and no ``principals`` to tell the agent's requests
        from others'), "packet": {:func:`packet_counts`} or None (no replay packet), "packet_words":
        str or None (:func:`packet_words`)}``.
    """
    q = quarantine if quarantine is not None else QUARANTINE.empty()
    unread = q["line_no"].isna() & (q["loader"] == "auto") if len(q) else pd.Series([], dtype=bool)
    whole = q["line_no"].isna() if len(q) else pd.Series([], dtype=bool)
    out = {
        "sessions": {str(k): int(v) for k, v in sessions["status"].value_counts().items()} if len(sessions) else {},
        "unassigned_transcripts": int(len(join.unmatched_transcripts)) if join is not None else 0,
        "door_calls": int(len(calls)),
        "refused_calls": int((calls["decision"] == "deny").sum()) if len(calls) else 0,
        "set_aside_lines": int((~whole).sum()),
        "set_aside_files": int((whole & ~unread).sum()),
        "unread_files": int(unread.sum()),
        "unexplained_storage": None,
        "unexplained_other": None,
        "refused_then_reached": [],
        "refused_then_tried": [],
        "refused_then_tried_words": None,
        "refused_then_other_principal": [],
        "unclaimed_calls": 0,
        "unmatched_steps": 0,
        "far_pairs": 0,
        "disagreeing_copies": [[str(o["object"]) for o in d["objects"]] for d in disagreements],
        "storage_written_after_read": [
            {"object": str(w["object"]), "principal": None if _isna(w.get("principal")) else str(w["principal"]),
             "operation": None if _isna(w.get("operation")) else str(w["operation"]),
             "ts": pd.Timestamp(w["ts"]).tz_convert("UTC").isoformat(), "first_read_by": str(w["who"]),
             **({"writes": [{"principal": None if _isna(x.get("principal")) else str(x["principal"]),
                             "operation": None if _isna(x.get("operation")) else str(x["operation"]),
                             "ts": pd.Timestamp(x["ts"]).tz_convert("UTC").isoformat()} for x in w["writes"]]}
                if len(w.get("writes") or ()) > 1 else {})}
            for w in storage_writes],
        "storage_written_words": storage_write_words(storage_writes) or None,
        "cloud_log_losses": cloud_log_losses(q, inputs),
        "cloud_log_loss_words": cloud_loss_words(cloud_log_losses(q, inputs), markup=False),
        "other_client_links": other_client_links(access_links),
        "no_principals": principals_given is False and unexplained is not None,
        "unmapped_calls": [{"door_session": str(r["door_session"]),
                            "seq": None if _isna(r["seq"]) else int(r["seq"]), "object": str(r["object"])}
                           for r in unmapped_calls.to_dict("records")] if unmapped_calls is not None else [],
        # unmatched sessions whose clock lies beyond max_offset_s (sessions from with_far_clocks)
        "far_clocks": [{"door_session": str(r["door_session"]), "transcript_id": str(r["far_transcript"]),
                        "offset_s": round(float(r["far_offset_ms"]) / 1000, 1)}
                       for r in sessions.to_dict("records") if not _isna(r.get("far_transcript"))]
        if "far_transcript" in sessions.columns else [],
        # sessions a max_offset_s other than the default joined otherwise (sessions from with_offset_changes)
        "offset_changes": [
            {"door_session": str(r["door_session"]),
             **{k: (None if _isna(r.get(k)) else str(r[k])) for k in ("status", "transcript_id", "default_status",
                                                                       "default_transcript", "clock_transcript")},
             "max_offset_s": float(r["max_offset_s"]), "default_max_offset_s": float(r["default_max_offset_s"]),
             "clock_offset_s": None if _isna(r.get("clock_offset_s")) else round(float(r["clock_offset_s"]), 1)}
            for r in sessions.to_dict("records") if not _isna(r.get("default_status"))]
        if "default_status" in sessions.columns else [],
        "packet": packet_counts(packet) or None,
        "packet_words": packet_words(packet) or None,
        "capsule_words": capsule_words(capsule) or None,
    }
    if join is not None:
        out["unclaimed_calls"] = int(len(join.unclaimed_calls))
        out["unmatched_steps"] = int(len(join.unmatched_steps))
        out["far_pairs"] = int(len(far_pairs(join.pairs, join.sessions)))
    if unexplained is not None:
        from ..access_join import on_storage

        on = [on_storage(u) for u in unexplained["resource_uri"]]
        out["unexplained_storage"] = int(sum(on))
        out["unexplained_other"] = int(len(on) - sum(on))
        reached, tried = refused_then_requested(unexplained)
        out["refused_then_reached"] = sorted({str(u) for u in reached["resource_uri"].dropna()})
        out["refused_then_tried"] = sorted({str(u) for u in tried["resource_uri"].dropna()})
        out["refused_then_tried_words"] = _tried_words(tried) if len(tried) else None
        others = refused_then_other_principal(unexplained)
        out["refused_then_other_principal"] = sorted({str(u) for u in others["resource_uri"].dropna()})
    return out

