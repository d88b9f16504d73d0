"""The ``replaybook`` command line. Same public API as the notebooks.

Exit codes: ``0`` success, ``2`` bad usage or bad input (the message names the file and line),
``1`` an internal error (a bug: please report it with the traceback printed by ``--debug``).
"""

from __future__ import annotations

import json
import math
import sys
import traceback
from pathlib import Path

import click
import orjson

from . import _json
from . import __version__
from .errors import InputError, JoinError, ReplaybookError, ReportError

__all__ = ["main", "cli"]

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT = 0, 1, 2


def _json_default(v):
    from collections.abc import Mapping

    return dict(v) if isinstance(v, Mapping) else str(v)  # a lazily parsed ``raw`` record


def _json_text(v, na=None):
    """A JSON-valued cell as JSON text; ``None`` for a missing one (``None``, NaN, ``na``: pandas'
    NA) — a NaN the source wrote as a number (``NumberAsWritten``) is a value, written as sent."""
    if v is None or v is na or (type(v) is float and v != v):
        return None
    return _json.dumps(v, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY,
                        default=_json_default).decode()


def _frame_out(df, fmt: str, out: str | None, spec=None) -> None:
    """Write a canonical frame.  JSON-valued columns (``arguments``, ``objects``, ``raw``: the
    ``object`` columns of ``spec``, by default the spec whose columns ``df`` has) become JSON
    text — every value, whatever the other rows hold (a string argument is written ``"\\"s\\""``,
    a number ``42``, a dict ``{...}``; missing: null), never structs inferred by pyarrow — and
    timestamps keep all nine fractional digits."""
    import pandas as pd

    from .frames import spec_of

    spec = spec if spec is not None else spec_of(df)
    df = df.copy()
    for col in (spec.json_columns if spec is not None else ()):
        df[col] = pd.Series([_json_text(v, pd.NA) for v in df[col].tolist()], index=df.index,
                            dtype=pd.StringDtype("python"))
    if fmt != "parquet":
        for col in df.columns:
            if isinstance(df[col].dtype, pd.DatetimeTZDtype):
                t = df[col].dt.tz_convert("UTC")
                frac = (t.dt.microsecond * 1000 + t.dt.nanosecond).astype("Int64").astype(str).str.zfill(9)
                df[col] = (t.dt.strftime("%Y-%m-%dT%H:%M:%S.") + frac + "Z").where(t.notna(), None)
    from ._guard import writing

    if fmt == "parquet":
        if not out:
            raise click.UsageError("--format parquet needs --out FILE")
        with writing(out):
            df.to_parquet(out, index=False)
        return
    if fmt == "csv":
        text = df.to_csv(index=False)
    elif not len(df):
        text = ""  # no rows, no lines (pandas writes one empty line)
    else:
        text = _json_lines(df)
    if out:
        with writing(out):
            Path(out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def _json_lines(df) -> str:
    """``df``'s rows as JSON Lines, one object a row, keys in column order, NA as ``null``: floats
    in their shortest text that reads back as the same double (pandas' ``to_json`` rounds them to
    ten significant digits: a duration of 0.000012345678901 ms was written 0.0000123457), text as
    it is (no escaped ``/``; ``\\uXXXX`` only for control characters)."""
    names = [str(c) for c in df.columns]
    cols = [df[c].astype(object).where(df[c].notna(), None).tolist() for c in df.columns]
    dumps, opt = orjson.dumps, orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE
    return b"".join(dumps(dict(zip(names, row)), option=opt, default=str) for row in zip(*cols)).decode()


def _say(text: str, *, lines: bool = False) -> None:
    """One line on stderr, its control characters written out (:func:`replaybook._text.one_line`):
    a file name or a log's value holding ESC sequences, CR or a newline could otherwise colour,
    clear or forge the lines around it.  ``lines``: a message of several lines on purpose (a
    dead kernel's log tail), each line written out so."""
    from ._text import one_line

    click.echo("\n".join(map(one_line, text.split("\n"))) if lines else one_line(text), err=True)


def _quarantine_summary(q, records: set[str] | frozenset[str] = frozenset()) -> None:
    """The quarantine on stderr: lines and files a loader set aside, then, apart, the files no
    source read at all (an ``incident.yaml``, a data CSV or a README in a folder given:
    ``loader`` ``auto``), which are not damaged evidence.  A record of a whole-file JSON log
    (its file among ``records``: ``sources._cloud.record_numbered`` of the inputs) is placed as
    ``file record 3``, not as a line (``sources._cloud.quarantine_where``)."""
    from .sources._cloud import quarantine_where

    unread = q[q["line_no"].isna() & (q["loader"] == "auto")] if not q.empty else q
    q = q.drop(index=unread.index) if len(unread) else q
    if len(unread):
        click.echo(f"not read: {_count(len(unread), 'file')} no source reads (not evidence of these kinds, or "
                   "named so on purpose):", err=True)
        for r in unread.head(20).itertuples(index=False):
            _say(f"  {r.source_file}: {r.error}")
        if len(unread) > 20:
            click.echo(f"  … and {len(unread) - 20} more", err=True)
    if q.empty:
        click.echo("quarantine: 0 lines", err=True)
        return
    pending = int((q["kind"] == "pending").sum())
    whole = int(q["line_no"].isna().sum())  # a file set aside as a whole (no source recognised it …)
    lines = len(q) - whole
    extra = f" ({lines - pending} invalid, {pending} pending: an unterminated last line)" if pending else ""
    said = ", ".join(x for x in (_count(lines, "line") + extra if lines else "",
                                 _count(whole, "whole file") if whole else "") if x)
    click.echo(f"quarantine: {said}", err=True)
    for r in q.head(50).itertuples(index=False):
        where, error = quarantine_where(r.source_file, r.line_no, r.error, records)
        _say(f"  {where}: [{r.kind}] {error}")
    if len(q) > 50:
        click.echo(f"  … and {len(q) - 50} more", err=True)


class _LazyGroup(click.Group):
    """A group whose feature subcommands are imported only when used (click's lazy-group recipe),
    so ``replaybook door`` or ``replaybook packet record`` does not pay for pandas and friends."""

    lazy = {
        "packet": "replaybook.packet.cli:packet",
        "capsule": "replaybook.capsule.cli:capsule",
        "door": "replaybook.door.cli:door",
        "serve-capsule": "replaybook.door.cli:serve_capsule",
        "prune": "replaybook.door.cli:prune",
        "hold": "replaybook.door.cli:hold",
    }

    #: one-line help of the lazy commands, so ``replaybook --help`` imports none of them
    #: (a test checks each against the command's own docstring)
    lazy_help = {
        "packet": "Replay packets: evidence a reviewer can re-run.",
        "capsule": "Replay capsules: capture the inputs of an agent run, diff.",
        "door": "Put a door in front of the MCP server SERVER_CMD (after --).",
        "serve-capsule": "Serve a replay capsule as an MCP server (stdio).",
        "prune": "Delete whole door sessions older than the retention period.",
        "hold": "Place (or release) a legal hold on door sessions: prune keeps them.",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.lazy:
                rows.append((name, self.lazy_help[name]))
                continue
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(formatter.width - 6 - max(map(len, self.list_commands(ctx))))))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, name: str):
        if name in self.lazy:
            import importlib

            mod, attr = self.lazy[name].split(":")
            return getattr(importlib.import_module(mod), attr)
        return super().get_command(ctx, name)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="replaybook")
@click.option("--debug", is_flag=True, help="Print tracebacks for internal errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """What did the agent see, in the order it saw it? Load, join and report agent evidence."""
    ctx.obj = {"debug": debug}


@cli.command("load")
@click.argument("frame", type=click.Choice(["steps", "calls", "access", "auto"]))
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--source", "source_name", default=None,
              help="Read every path with this source (e.g. claude-code, door, aws.cloudtrail; "
                   "`replaybook sources` lists them all); default: sniff each file by content.")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv", "parquet"]), default=None,
              help="Output format (default: taken from --out's extension — .csv, .parquet, .jsonl/.json — "
                   "else jsonl).")
@click.option("--out", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write here instead of stdout (required for parquet); its extension chooses the format "
                   "unless --format does, and must not contradict it.")
def load_cmd(frame: str, paths: tuple[str, ...], source_name: str | None, fmt: str | None, out: str | None) -> None:
    """Load PATHS (files or folders) into the canonical FRAME and write its rows.

    FRAME 'auto' sniffs every file's content, loads it with the source that recognises it and
    prints a per-file table (source chosen, rows, quarantined lines); with --out each frame
    is written to OUT with the frame name inserted before the suffix.  The quarantine (lines
    that could not be used, with file and line) goes to stderr.  Without --format the format
    is OUT's extension's (.csv, .parquet, .jsonl or .json: JSON Lines); an extension that
    contradicts --format is a usage error; any other extension is written as JSON Lines, said
    on stderr.  A load that read no row while setting lines aside as invalid exits 2 after
    writing the (empty) frame and the quarantine.
    """
    fmt = _out_format(fmt, out)
    if out:  # made (or refused) before anything is loaded, as `report --out` makes its folder
        from ._guard import check_writable

        o = Path(out)
        targets = [o] if frame != "auto" else [o.with_name(f"{o.stem}.{k}{o.suffix}") for k in ("steps", "calls", "access")]
        _refuse_writing_over_inputs(targets, paths)
        _make_folder(Path(out).parent, f"for {out}")
        for t in targets:  # (a name too long, a read-only folder: said now, not after the whole load)
            check_writable(t)
    if frame == "auto":
        _load_auto(paths, fmt, out)
        return
    got = _load_one(frame, paths, source_name)
    res = got.result
    _frame_out(res.frame, fmt, out)
    used = ", ".join(sorted(set(got.sources.values()))) or "-"
    # files no source recognised have no format: counted apart (the quarantine below names
    # them, except empty ones, named here)
    unread = [i for i in res.inputs if i.get("format") is None]
    skipped = [i for i in res.inputs if i.get("skipped") and i.get("format") is not None]
    n_read = len(res.inputs) - len(skipped) - len(unread)
    links = [i for i in unread if str(i.get("reason") or "").startswith("symbolic link")]
    unread = [i for i in unread if i not in links]
    more = (f", {len(skipped)} more skipped" if skipped else "") + \
        (f", {len(unread)} not recognised" if unread else "") + \
        (f", {_count(len(links), 'symbolic link')} not followed" if links else "")
    n_rows = len(res.frame)
    click.echo(f"{frame}: {n_rows} row{'' if n_rows == 1 else 's'} from {n_read} file{'' if n_read == 1 else 's'}"
               f"{more} ({used})",
               err=True)
    _say_inputs(res.inputs)
    wrong = _other_kinds(frame, res, source_name)
    from .sources._cloud import record_numbered

    _quarantine_summary(res.quarantine, record_numbered(res.inputs))
    if wrong is not None:
        raise wrong
    nothing = _nothing_read(frame, res)
    if nothing is not None:
        raise nothing


def _say_inputs(inputs: list[dict]) -> None:
    """On stderr, each input file a load skipped (``  skipped PATH: why`` — an empty file, a
    copy of another) and what a loader says of a file it read (``  note PATH: …``, in the words
    ``load auto`` and the report use)."""
    from .loading import copy_words, plain_note

    for info in inputs:
        if (info.get("skipped") and info.get("format") is not None) or \
                (info.get("format") is None and info.get("reason") == "empty file"):  # (others: the quarantine's)
            why = (f"same content as {info['same_as']}: read once" if info.get("same_as")
                   else copy_words(info) if info.get("copy_of") else info.get("reason") or "no records")
            _say(f"  skipped {info.get('path')}: {why}")
    for info in inputs:  # (rows kept with a value unknown, bytes read as U+FFFD …)
        for note in info.get("notes") or ():
            _say(f"  note {info.get('path')}: {plain_note(str(note))}")


def _nothing_read(frame: str, res) -> InputError | None:
    """The error (exit 2) for a load that read no ``frame`` row while it set lines aside as
    invalid — a door log whose every line fails the schema: a script must not carry on with an
    empty frame as if all was well.  ``None`` otherwise: rows read, or nothing set aside (an
    empty file, a log whose only line is still being written), or only what a file set aside
    whole explains (a gzip stream cut short, and the cut line after it)."""
    q = res.quarantine
    if len(res.frame) or not len(q):
        return None
    whole = set(q.loc[q["line_no"].isna(), "source_file"].astype(str))  # (a cut gzip stream: said, and expected)
    invalid = q[(q["kind"] == "invalid") & q["line_no"].notna() & ~q["source_file"].astype(str).isin(whole)]
    if not len(invalid):
        return None
    files = invalid["source_file"].astype(str).unique().tolist()
    return InputError(f"no {frame} row was read, and {_count(len(invalid), 'line')} in {_count(len(files), 'file')} "
                      f"{'was' if len(invalid) == 1 else 'were'} set aside as invalid (the quarantine says why)",
                      files[0] if len(files) == 1 else None)


#: ``load --out`` extensions and the format each names
_OUT_FORMATS = {".csv": "csv", ".parquet": "parquet", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl"}


def _out_format(fmt: str | None, out: str | None) -> str:
    """The format ``load`` writes: ``--format`` when given (a ``--out`` extension naming another
    format is a usage error, exit 2: ``steps.csv`` holding JSON Lines went unnoticed), else the
    one ``--out``'s extension names (:data:`_OUT_FORMATS`), else ``jsonl`` — said on stderr
    when ``--out`` has an extension that names none."""
    ext = Path(out).suffix.lower() if out else ""
    named = _OUT_FORMATS.get(ext)
    if fmt is not None:
        if named is not None and named != fmt:
            raise click.UsageError(f"--out {out} names {named} by its extension but --format is {fmt}: "
                                   f"change one of them")
        return fmt
    if named is not None:
        return named
    if out:
        what = f"its extension {ext!r} names no format" if ext else "it has no extension"
        click.echo(f"--out {out}: {what} (.csv, .parquet, .jsonl, .json): writing JSON Lines, the default "
                   "(give --format to choose)", err=True)
    return "jsonl"


def _refuse_writing_over_inputs(targets: list[Path], paths) -> None:
    """Refuse (exit 2) an output file that is one of the input files: the evidence is read,
    never written over (``load calls d.jsonl --out d.jsonl`` had replaced the log)."""
    import stat

    from ._guard import stat_or_refuse, refuse_over_evidence
    from ._jsonl import expand_paths

    existing = [t for t in targets if (st := stat_or_refuse(t, "--out")) is not None and stat.S_ISREG(st.st_mode)]
    if not existing:
        return
    inputs = expand_paths(list(paths), unique=False)
    for t in existing:
        refuse_over_evidence(t, files=inputs)


def _load_one(frame: str, paths, source_name: str | None):
    """One frame from PATHS: with a source, that loader; else every file sniffed by content.
    Files that belong to another frame are named on stderr and left out."""
    from .loading import load_frame

    got = load_frame(list(paths), frame, source=source_name)
    for p, what in got.elsewhere.items():
        _say(f"  left out {p}: it is {what}, not {frame}")
    return got


_RECORDS = {"access": "storage access records", "calls": "tool calls", "steps": "transcript lines"}


def _other_kinds(frame: str, res, forced: str | None = None) -> InputError | None:
    """Name, per file, the valid lines a loader read but left out as not its records (a
    gateway's start-up messages, CloudTrail's management events …); a file whose every line
    was such a line gets a hint that it may be another format.

    Returns the :class:`InputError` for the caller to raise (exit 2: the input is wrong, and a
    script must not carry on with an empty frame) when a format was ``forced`` (``--source``,
    ``--calls-format`` …) and nothing at all was read as it though the files hold lines; else
    ``None``.
    """
    per_file = res.frame["source_file"].value_counts() if "source_file" in res.frame else {}
    nothing = []
    for info in res.inputs:
        n = info.get("ignored_lines") or info.get("not_calls") or 0
        if not n:
            continue
        path = info.get("path")
        line = (f"  ignored {n} valid line{'' if n == 1 else 's'} of other kinds in {path} "
                f"(not {_RECORDS.get(frame, 'records')})")
        if not per_file.get(path, 0) and not info.get("skipped"):
            line += f"; nothing in it was read as {info.get('format') or 'this format'}: is it another " \
                    "format? (`replaybook sources` lists them)"
            nothing.append(path)
        click.echo(line, err=True)
    if forced and nothing and not len(res.frame):
        return InputError(f"nothing was read as {forced} from {_count(len(nothing), 'file')} holding lines "
                          "of other kinds: is it another format? (`replaybook sources` lists them)",
                          nothing[0] if len(nothing) == 1 else None)
    return None


def _count(n: int, noun: str) -> str:
    """``1 file`` / ``5 files``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


#: the ``join`` table, in parts: (title, sessions-frame columns), each part under its title
_JOIN_TABLES = (
    (None, ["door_session", "transcript_id", "calls", "agreed", "share", "status", "method", "offset_ms",
            "refused"]),
    ("what each link rests on", ["door_session", "transcript_tool_steps", "runner_up", "runner_up_agreed",
                                 "margin", "continues"]),
    ("what is left over, and tool-use ids that disagree or that no transcript has",
     ["door_session", "unclaimed_calls", "unmatched_steps", "id_conflicts", "id_mismatches", "unknown_ids"]),
)
_JOIN_NUMERIC = ("calls", "agreed", "transcript_tool_steps", "share", "runner_up_agreed", "margin", "offset_ms",
                 "refused", "unclaimed_calls", "unmatched_steps", "id_conflicts", "id_mismatches", "unknown_ids")


def _text_table(df, numeric: tuple[str, ...] = ()) -> str:
    """A plain-text table: text left-aligned, ``numeric`` columns right-aligned, NA as ``-``,
    control characters written out (:func:`replaybook._text.one_line`)."""
    import pandas as pd

    from ._text import one_line

    def cell(c, v):
        if v is None or v is pd.NA or (isinstance(v, float) and v != v):
            return "-"
        return f"{v:.2f}" if isinstance(v, float) else one_line(v)  # (a log's ESC or newline: written out)

    cols = list(df.columns)
    cells = [[cell(c, v) for c, v in zip(cols, row)] for row in df.itertuples(index=False)]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(cols)]

    def line(vals):
        return "  ".join(v.rjust(w) if c in numeric else v.ljust(w)
                         for c, v, w in zip(cols, vals, widths)).rstrip()

    return "\n".join([line(cols)] + [line(r) for r in cells])


def _load_auto(paths: tuple[str, ...], fmt: str, out: str | None) -> None:
    from .loading import load

    import os

    loaded = load(list(paths))
    if not len(loaded.files):
        raise InputError(f"no files in {', '.join(paths)}")
    files = loaded.files.copy()
    if len(files) > 1:  # long absolute paths made the table unreadable: show them under their common folder
        absolute = [os.path.abspath(p) for p in files["path"]]
        base = os.path.commonpath(absolute)
        if base not in absolute:
            click.echo(f"(paths under {base})")
            files["path"] = [os.path.relpath(p, base) for p in absolute]
    click.echo(_text_table(files, numeric=("confidence", "rows", "quarantined")))
    for name, res in loaded.results.items():
        click.echo(f"{name}: {_count(len(res.frame), 'row')}, {_count(len(res.quarantine), 'quarantined line')}",
                   err=True)
        if out:
            o = Path(out)
            _frame_out(res.frame, fmt, str(o.with_name(f"{o.stem}.{name}{o.suffix}")))
    from .sources._cloud import record_numbered

    _quarantine_summary(loaded.quarantine,
                        record_numbered(i for res in loaded.results.values() for i in res.inputs))
    unread = loaded.files[loaded.files["source"].isna()]
    links = int(unread["note"].fillna("").str.startswith("symbolic link").sum())
    unknown = len(unread) - links
    if unknown:
        click.echo(f"{_count(unknown, 'file')} not read as a log or transcript (the note column says what each is, "
                   "where it can tell)", err=True)
    if links:
        click.echo(f"{_count(links, 'symbolic link')} not followed (see the note column)", err=True)
    skipped = int(loaded.files["note"].fillna("").str.startswith("skipped:").sum())
    if skipped:
        click.echo(f"{_count(skipped, 'file')} recognised but holding no records (see the note column)", err=True)


@cli.command("sources")
def sources_cmd() -> None:
    """List the input formats replaybook reads, by frame.

    Each name is what --source, --transcripts-format, --calls-format and a manifest's
    {path, format} take; beside it, where the format comes from.
    """
    from .sources import registry

    by_frame: dict[str, list] = {}
    for name in registry.names():
        src = registry.get(name)
        by_frame.setdefault(src.frame, []).append(src)
    import shutil
    import textwrap

    width = max(map(len, registry.names()))
    text_width = max(40, shutil.get_terminal_size((100, 24)).columns - width - 4)
    for frame in ("steps", "calls", "access"):
        click.echo(f"{frame}:")
        for src in by_frame.get(frame, []):
            lines = textwrap.wrap(src.doc, text_width) or [""]
            click.echo(f"  {src.name:<{width}}  {lines[0]}")
            for more in lines[1:]:
                click.echo(f"  {'':<{width}}  {more}")


@cli.command("join")
@click.argument("incident", required=False, type=click.Path(exists=True))
@click.option("--transcripts", "transcripts", multiple=True, type=click.Path(exists=True),
              help="Transcript file or folder (Claude Code, Codex, Gemini, OTel; sniffed by content). Repeatable.")
@click.option("--calls", "calls", multiple=True, type=click.Path(exists=True),
              help="Door call log file or log root, or a gateway's log (sniffed by content). Repeatable.")
@click.option("--transcripts-format", default=None, help="Read every transcript with this source (`replaybook sources` lists them).")
@click.option("--calls-format", default=None, help="Read every call log with this source (`replaybook sources` lists them).")
@click.option("--window", type=click.FloatRange(0, 1e9, min_open=True), default=None,
              help="Agreement window, seconds.  [default: the manifest's window_s, else 60]")
@click.option("--min-agreed", type=click.IntRange(min=1), default=None,
              help="Never assign a transcript with fewer agreeing steps.  [default: the manifest's min_agreed, "
                   "else 1]")
@click.option("--max-offset", type=click.FloatRange(0, 1e9), default=None,
              help="Largest clock offset between transcript and door to look for before matching, "
                   "seconds (0: assume the clocks agree). The offset printed is measured afterwards "
                   "from the agreeing pairs, so it can be as large as --window even with 0.  Other "
                   "than 300, the join also runs at 300 and names each door session joined otherwise.  "
                   "[default: the manifest's max_offset_s, else 300]")
@click.option("--format", "fmt", type=click.Choice(["json", "table"]), default="table", show_default=True)
@click.option("--clock-offset", "clock_offset", multiple=True, metavar="TRANSCRIPT=SECONDS",
              help="A transcript whose clock you know is off: door clock − transcript clock, seconds "
                   "(repeatable; added to the manifest's clock_offsets). Joined at it whatever --max-offset. "
                   "A sub-agent's id moves its steps alone; an id no transcript has is named on stderr.")
def join_cmd(incident, transcripts, calls, transcripts_format, calls_format, window, min_agreed, max_offset,
             fmt, clock_offset) -> None:
    """Assign transcripts to door sessions one-to-one and say how sure each assignment is.

    Give an INCIDENT manifest or its folder (its transcripts, door logs, window_s and
    max_offset_s), or --transcripts and --calls.
    """
    import pandas as pd

    from .join import DEFAULT_MAX_OFFSET_S, DEFAULT_MIN_AGREED, join_sessions

    offsets: dict[str, float] = {}
    for item in clock_offset:
        tid, eq, sec = item.rpartition("=")[0], "=" in item, item.rpartition("=")[2]
        try:
            value = float(sec)
        except ValueError:
            value = float("nan")
        if not eq or not tid or value != value or abs(value) > 1e9:
            raise click.BadParameter(f"{item!r}: give TRANSCRIPT=SECONDS, e.g. 9c58f26c-…=7200", param_hint="--clock-offset")
        offsets[tid] = value
    inc = _incident_or_paths(incident, {"--transcripts": transcripts, "--calls": calls},
                             {"--transcripts-format": transcripts_format, "--calls-format": calls_format})
    if inc is not None:
        steps, calls_f = inc.steps, inc.calls
        for kind in ("steps", "calls"):  # as for --transcripts/--calls: an empty frame is no all-clear
            res = inc.loaded(kind)
            wrong = _nothing_read(kind, res)
            if wrong is not None:
                from .sources._cloud import record_numbered

                _quarantine_summary(res.quarantine, record_numbered(res.inputs))
                raise wrong
        _say_incident_inputs(inc, ("steps", "calls"))
        set_aside_rows = inc.quarantine  # (every input of the incident: its access logs too)
        set_aside = int(len(set_aside_rows))
        window = inc.window_s if window is None else window
        min_agreed = int(inc.manifest["min_agreed"]) if min_agreed is None else min_agreed
        max_offset = float(inc.manifest["max_offset_s"]) if max_offset is None else max_offset
        offsets = {**(inc.manifest.get("clock_offsets") or {}), **offsets}
    else:
        steps, calls_f, set_aside_rows = _load_two(("steps", transcripts, transcripts_format),
                                                   ("calls", calls, calls_format))
        set_aside = int(len(set_aside_rows))
    window = 60.0 if window is None else window
    min_agreed = DEFAULT_MIN_AGREED if min_agreed is None else min_agreed
    max_offset = DEFAULT_MAX_OFFSET_S if max_offset is None else max_offset
    res = join_sessions(steps, calls_f, window_s=window, min_agreed=min_agreed, max_offset_s=max_offset,
                        clock_offsets=offsets or None)
    for warning in res.warnings:  # e.g. a --clock-offset for a transcript no input holds: not applied
        click.echo(f"replaybook: warning: {warning}", err=True)
    for note in res.notes:  # e.g. a gateway's tool compared under the prefixed name its clients call
        click.echo(f"replaybook: note: {note}", err=True)
    from .join import far_clocks, offset_change_text, offset_changes

    far = far_clocks(steps, calls_f, res.sessions, max_offset_s=max_offset, window_s=window)
    # sessions a --max-offset other than the default joined otherwise (another join, only then)
    changed = offset_changes(steps, calls_f, res.sessions, max_offset_s=max_offset, window_s=window,
                             min_agreed=min_agreed, clock_offsets=offsets or None)
    if fmt == "json":
        d = res.to_dict()
        d["quarantine"] = set_aside
        # unmatched sessions whose calls line up with a transcript beyond --max-offset
        d["far_clocks"] = _json_records(far)
        d["offset_changes"] = _json_records(changed)
        click.echo(json.dumps(d, indent=2, ensure_ascii=False))
    else:
        view = res.sessions.astype(object)
        view["share"] = [None if pd.isna(v) else f"{v:.0%}" for v in view["share"]]
        view["margin"] = [None if pd.isna(v) else f"{v:g}" for v in view["margin"]]
        view["offset_ms"] = [None if pd.isna(v) else f"{v:+.0f}" for v in view["offset_ms"]]
        # three tables, each fitting a terminal (one held 17 columns, 230 characters wide), as the
        # report splits its own; the column names are the sessions frame's (the JSON's keys)
        for title, cols in _JOIN_TABLES:
            if title:
                click.echo(f"\n{title}:")
            click.echo(_text_table(view[cols], numeric=_JOIN_NUMERIC))
        # a transcript of built-in tools only called nothing through a door: not a missing link
        door_bound = set(steps.loc[(steps["kind"] == "tool_call") & steps["server"].notna(),
                                   "transcript_id"].astype(str)) if len(steps) else set()
        # a sub-agent's door calls are its parent's conversation's (join.sub_agent_parents)
        door_bound |= {res.sub_agents[t] for t in door_bound if t in res.sub_agents}
        calling = set(steps.loc[steps["kind"] == "tool_call", "transcript_id"].astype(str)) if len(steps) else set()
        ut = [t if t in door_bound else
              f"{t} (built-in tools only: no door log was expected to hold its calls)" if t in calling else
              f"{t} (no tool calls of its own)" for t in res.unmatched_transcripts]
        if len(ut) <= 2:  # ("; ": a note in brackets is its own transcript's)
            click.echo(f"\nunmatched transcripts: {'; '.join(ut) or 'none'}")
        else:  # one per line: a comma list of ids wraps unreadably in a terminal
            click.echo(f"\nunmatched transcripts ({len(ut)}):\n" + "\n".join(f"  {t}" for t in ut))
        if res.sub_agents:  # counted with their parent: neither assigned a session of their own nor unmatched
            subs = [f"{t} (of {p})" for t, p in res.sub_agents.items()]
            click.echo(f"sub-agent transcripts, joined as part of their parent's conversation ({len(subs)}): "
                       + "; ".join(subs[:20]) + (f" and {len(subs) - 20:,} more" if len(subs) > 20 else ""))
        lost = res.sessions[(res.sessions["status"] == "unmatched") & (res.sessions["unknown_ids"] > 0)]
        for r in lost.head(20).itertuples(index=False):
            click.echo(f"door session {r.door_session}: unmatched, and {_count(int(r.unknown_ids), 'call')} logged "
                       "the client's tool-use id that no loaded transcript has: its transcript is most likely not "
                       "among the inputs")
        if len(lost) > 20:
            click.echo(f"… and {len(lost) - 20:,} more such door sessions (the unknown_ids column)")
        # a call and a step one tool-use id ties, in no link: both residuals, named together
        split = res.split_ids
        for r in split.head(20).itertuples(index=False):
            conv = (f"transcript {r.transcript_id}" if r.transcript_id == r.conversation else
                    f"transcript {r.transcript_id} (of {r.conversation}'s conversation)")
            why = ("its conversation is assigned to no door session" if pd.isna(r.conversation_session) else
                   f"its conversation is door session {r.conversation_session}'s, which {r.door_session} was not "
                   "taken to continue (too few of its calls agree, or the two ran at the same time); the step is "
                   "listed as a tool call with no door call")
            click.echo(f"tool-use id {r.call_id}: door session {r.door_session} #{r.call_seq} and step {r.step_seq} of "
                       f"{conv} are one call, yet in no link: the call is listed as unclaimed, and {why}")
        if len(split) > 20:
            click.echo(f"… and {len(split) - 20:,} more such calls (split_ids in the JSON)")
        for r in far.head(20).itertuples(index=False):
            parent = res.sub_agents.get(r.transcript_id)
            # (a sub-agent's entry moves its own steps only: its parent's stay on their clock)
            whose = (f"; a sub-agent of {parent}: its parent's steps keep their clock" if parent else "")
            amb = getattr(r, "ambiguous_with", None)
            if isinstance(amb, str) and amb:  # (another lines up as well: naming one could join the wrong one)
                click.echo(f"door session {r.door_session}: unmatched; {r.steps} of its {r.calls_with_args} calls "
                           f"with arguments line up with transcript {r.transcript_id} at a clock offset of "
                           f"{r.offset_ms / 1000:+,.1f} s, beyond --max-offset {max_offset:g}, but as well with "
                           f"{amb}: the times alone cannot tell which is its transcript; give the right one's "
                           "clock (--clock-offset TRANSCRIPT=SECONDS, or clock_offsets in the manifest)")
                continue
            click.echo(f"door session {r.door_session}: unmatched, but {r.steps} of its {r.calls_with_args} calls "
                       f"with arguments line up with transcript {r.transcript_id} at a clock offset of "
                       f"{r.offset_ms / 1000:+,.1f} s, beyond --max-offset {max_offset:g}: give that transcript's "
                       f"clock, --clock-offset {r.transcript_id}={r.offset_ms / 1000:.1f} (or clock_offsets in the "
                       f"manifest{whose})")
        for r in changed.head(20).to_dict("records"):
            click.echo(f"door session {r['door_session']}: {offset_change_text(r, cli=True)}")
        if len(changed) > 20:
            click.echo(f"… and {len(changed) - 20:,} more door sessions joined otherwise than at --max-offset "
                       f"{float(changed['default_max_offset_s'].iloc[0]):g} (the default; the JSON lists them)")
        off = "n/a" if res.offset_ms is None else f"{res.offset_ms:+.0f} ms"
        from .join import OFFSETS_DIFFER_MS, far_pair_text, far_pairs

        own = res.sessions["offset_ms"].dropna()
        if len(own) > 1 and float(own.max() - own.min()) > OFFSETS_DIFFER_MS:  # agents on machines of their own
            click.echo(f"clock offsets (door − transcript) differ by session, from {own.min():+.0f} to "
                       f"{own.max():+.0f} ms (offset_ms above): {off} is the median over every pair; "
                       f"window {res.window_s:g} s")
        else:
            click.echo(f"clock offset (door − transcript): {off}, the median over the agreeing pairs (it includes "
                       f"the time a call takes to reach the door: clocks that agree show a small positive offset); "
                       f"window {res.window_s:g} s")

        for r in far_pairs(res.pairs, res.sessions).head(20).itertuples(index=False):
            click.echo(f"far from its session's offset: {r.door_session} #{r.call_seq} {r.tool} "
                       f"(transcript step {r.step_seq}) {r.off_by:+,.0f} ms: {far_pair_text(r.off_by, r.waited)}")
        # per session: what its tool-use ids say (column, level, what the counted calls did)
        for col, level, what in _ID_NOTES:
            for ds, n in zip(res.sessions["door_session"], res.sessions[col].fillna(0).astype(int)):
                if n:
                    click.echo(f"{level}: door session {ds}: {n} door call{'' if n == 1 else 's'} {what}", err=True)
    if incident is not None and inc.has_access:
        import shlex

        click.echo(f"note: the manifest names cloud access logs; `replaybook access {shlex.quote(str(incident))}` "
                   "compares them with the door (the storage requests no door call explains)", err=True)
    from .join import untimed_note

    note = untimed_note(steps, calls_f)
    if note:
        click.echo(f"note: {note}", err=True)
    _quarantine_summary(set_aside_rows)


#: ``join``'s lines on a session's tool-use ids: (sessions column, level, what its calls did)
_ID_NOTES = (
    ("id_conflicts", "warning", "logged a different tool-use id from the transcript step it agrees with (not "
     "counted): an edited or copied transcript, or another client's call, would look like this"),
    ("id_mismatches", "warning", "paired by the client's tool-use id named another tool or other arguments than the "
     "transcript step with that id (counted: the id decides): an edited transcript or door log would look like this"),
    ("by_result_id", "note", "claimed by the tool-use id of a tool result whose tool call's own line is missing from "
     "the transcript, or (a client that sends the door no tool-use id) by the error text, tool or answer size the "
     "door logged at the result's time (damaged, cut or dropped; counted, and the door's record says what was "
     "called)"),
)


def _load_two(first: tuple, second: tuple, *, inputs: list | None = None) -> tuple:
    """Load two lists of paths, each ``(kind, paths, format)``, into their frames: ``(first
    frame, second frame, both quarantines concatenated)``; both loads' ``inputs`` entries are
    appended to ``inputs`` when given, and the files skipped and the loaders' notes are said on
    stderr (:func:`_say_inputs`).  A list that gave no row while lines were set aside as invalid
    is an error (:func:`_nothing_read`), its quarantine said first.  Raises the error :func:`_other_kinds` gives when a list
    holds files of the other kind (two lists swapped)."""
    import pandas as pd

    loaded = [(kind, _load_one(kind, paths, fmt).result, fmt) for kind, paths, fmt in (first, second)]
    for kind, res, fmt in loaded:
        wrong = _other_kinds(kind, res, fmt) or _nothing_read(kind, res)
        if wrong is not None:
            from .sources._cloud import record_numbered

            _quarantine_summary(res.quarantine, record_numbered(res.inputs))
            raise wrong
    (_, a, _), (_, b, _) = loaded
    _say_inputs([*a.inputs, *b.inputs])  # (an empty transcript skipped had left no trace in the join's output)
    if inputs is not None:
        inputs.extend([*a.inputs, *b.inputs])
    return a.frame, b.frame, pd.concat([a.quarantine, b.quarantine], ignore_index=True)


def _incident_or_paths(incident, paths: dict[str, tuple], formats: dict[str, str | None] | None = None):
    """The :class:`~replaybook.incident.Incident` an INCIDENT argument names, its inputs checked
    as ``report`` checks them (each warning to stderr); ``None`` when the lists of paths
    (``{option: paths}``) are given instead.  ``formats``: ``{format option: value}`` of the
    options that force a format on those paths (``--calls-format``), which an incident does not
    take.  Raises click.UsageError for both or neither, or a format forced on an incident."""
    names = " and ".join(paths)
    if incident is not None and any(paths.values()):
        raise click.UsageError(f"give an INCIDENT manifest or {names}, not both")
    forced = [opt for opt, value in (formats or {}).items() if value is not None]  # ("" too: forced, unknown)
    if incident is not None and forced:  # (it had been taken, then not applied, without a word)
        opt = forced[0]
        raise click.UsageError(f"{opt} forces a format on the paths given with {opt.removesuffix('-format')}; "
                               "an INCIDENT manifest names each input's format ({path, format} entries)")
    if incident is None:
        if not all(paths.values()):
            raise click.UsageError(f"give an INCIDENT manifest, or both {names}")
        return None
    from .incident import Incident

    inc = Incident.load(incident)
    for warning in inc.check_inputs():  # the same checks as `report`, before anything is loaded
        click.echo(f"replaybook: warning: {warning}", err=True)
    return inc


def _say_incident_inputs(inc, frames: tuple[str, ...]) -> None:
    """:func:`_say_inputs` for an incident's files read into ``frames`` (and those no source
    read): each one skipped or noted, in the incident's words for it (the Inputs section's
    ``note``), its path as the manifest's folder sees it."""
    from .sources import registry

    for info in inc.loaded_inputs():
        note, fmt = info.get("note"), info.get("format")
        if not note or fmt == "manifest" or info.get("side_of"):
            continue
        try:
            if fmt is not None and registry.get(fmt).frame not in frames:
                continue
        except InputError:  # (a format no source has: said, not judged)
            pass
        word, _, rest = str(note).partition(": ")
        if word == "skipped" and rest:
            _say(f"  skipped {info.get('path')}: {rest}")
        else:
            _say(f"  note {info.get('path')}: {note}")


def _pairs_option(items, what: str, example: str, param: str) -> dict[str, list[str]]:
    """``KEY=VALUE`` options (repeatable) as ``{key: [values]}``; bad usage names the option."""
    out: dict[str, list[str]] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key or not value:
            raise click.BadParameter(f"{item!r}: give {what}, e.g. {example}", param_hint=param)
        out.setdefault(key, []).append(value)
    return out


def _where(path, line_no, base: Path, records: set[str] = frozenset()) -> str:
    """``file:line`` of an access row, the file relative to ``base`` when it lies under it;
    ``file record N`` for a file in ``records`` (read as a whole-file JSON document, its
    ``line_no`` the record's index: :attr:`~replaybook.incident.Incident.access_record_files`)."""
    import os

    import pandas as pd

    from .sources._cloud import numbered

    if path is None or pd.isna(path):
        return "-"
    p = str(path)
    by_record = p in records
    try:
        rel = os.path.relpath(p, base)
        if not rel.startswith(".."):
            p = rel
    except ValueError:
        pass
    return numbered(p, line_no, [p] if by_record else ())


def _iso(ts) -> str | None:
    import pandas as pd

    if ts is None or pd.isna(ts):
        return None
    return pd.Timestamp(ts).tz_convert("UTC").isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _clock_ahead_option(values: tuple[str, ...]) -> tuple[float | None, dict[str, float]]:
    """``--storage-clock-ahead`` values (``SECONDS`` or ``AGENT=SECONDS``; ``*=SECONDS`` is the
    common one, as ``"*"`` is in the manifest's ``storage_clock_ahead_s``) → (the common offset
    or ``None``, {agent: seconds}).  Raises click.BadParameter naming the bad value."""
    common: float | None = None
    doors: dict[str, float] = {}
    for v in values:
        agent, _, num = v.rpartition("=") if "=" in v else ("", "", v)
        try:
            x = float(num)
        except ValueError:
            x = float("nan")
        if not math.isfinite(x) or abs(x) > 1e9 or (v.count("=") and not agent):
            raise click.BadParameter(f"{v!r}: give SECONDS (a number, -1e9 to 1e9) or AGENT=SECONDS",
                                     param_hint="--storage-clock-ahead")
        if agent and agent != "*":
            doors[agent] = x
        else:
            common = x
    return common, doors


def _offset_words(res, given_by: str, door_given_by: dict[str, str] | None = None) -> str:
    """The clock offset the access join used, and whether it was measured or given, in words
    (and each door agent's own, where one has; ``door_given_by``: agent → where it was given)."""
    words = _common_offset_words(res, given_by)
    for r in res.door_offsets.itertuples():
        if r.applied:
            how = f"as given ({(door_given_by or {}).get(r.agent, given_by)})" if r.given else "measured"
            words += (f"\n  door agent {r.agent}'s door: {r.offset_s:+,.3f} s, {how}: "
                      f"{_count(int(r.requests), 'request')} made by its calls line up at it")
        else:
            words += (f"\n  door agent {r.agent}'s door: {_count(int(r.requests), 'request')} made by its calls would "
                      f"line up at {r.offset_s:+,.3f} s, too few more than at the common offset to take it; if that door's "
                      f"clock is known to be off, give it: --storage-clock-ahead {r.agent}={r.offset_s:.1f} "
                      f"(storage_clock_ahead_s: {{{r.agent}: {r.offset_s:.1f}}} in the manifest)")
    return words


def _common_offset_words(res, given_by: str) -> str:
    """The common clock offset in words."""
    from .access_join import MIN_OFFSET_REQUESTS

    off = res.offset_s
    head = "clock offset (storage − door, the access join's offset_s)"
    if res.offset_given and not off:
        return f"{head}: 0 s, as given ({given_by}): the clocks are taken to agree (within {res.skew_s:g} s)"
    if res.offset_given:
        return (f"{head}: {off:+,.3f} s, as given ({given_by}); {_count(res.offset_requests, 'request')} "
                "line up with their calls at it")
    if off:
        return (f"{head}: {off:+,.3f} s, measured: {_count(res.offset_requests, 'request')} line up with their calls "
                "at it")
    if res.offset_unapplied_s is not None:
        u = res.offset_unapplied_s
        return (f"{head}: none taken. {_count(res.offset_unapplied_requests, 'request')} would line up with their "
                f"calls at {u:+,.3f} s, too few to measure a clock by (it must line up {MIN_OFFSET_REQUESTS} more "
                "than no offset does, and twice as many); if the storage logs' clock is known to be that far off, "
                f"give it: --storage-clock-ahead {u:.1f} (storage_clock_ahead_s: {u:.1f} in the manifest)")
    from .access_join import DEFAULT_MAX_OFFSET_S

    return (f"{head}: none (no offset within ±{DEFAULT_MAX_OFFSET_S:g} s lines up more requests with their calls "
            "than the clocks as they are; a storage clock further off is not looked for: give it with "
            "--storage-clock-ahead SECONDS)")


@cli.command("access")
@click.argument("incident", required=False, type=click.Path(exists=True))
@click.option("--calls", "calls", multiple=True, type=click.Path(exists=True),
              help="Door call log file or log root, or a gateway's log (sniffed by content). Repeatable.")
@click.option("--access", "access_paths", multiple=True, type=click.Path(exists=True),
              help="Cloud access logs: CloudTrail, S3 server access, GCP audit, Azure storage (sniffed by "
                   "content). Repeatable.")
@click.option("--calls-format", default=None, help="Read every call log with this source (`replaybook sources` lists them).")
@click.option("--access-format", default=None, help="Read every access log with this source.")
@click.option("--storage-map", "storage_map", multiple=True, metavar="DOOR_PREFIX=STORAGE_URI",
              help="Map a folder of the door's object paths onto a storage prefix, e.g. "
                   "demo/=s3://acme-data/demo/ (repeatable; over the manifest's storage_map).")
@click.option("--principal", "principal", multiple=True, metavar="AGENT=PRINCIPAL",
              help="A cloud principal (exact or fnmatch pattern) the door agent AGENT acts as (repeatable; "
                   "over the manifest's principals; AGENT '*': every agent without one of its own, and calls "
                   "that name no agent).")
@click.option("--storage-clock-ahead", "clock_ahead", multiple=True, metavar="[AGENT=]SECONDS",
              help="How far the storage logs' clock runs ahead of the door's, seconds (negative: behind; the "
                   "access join's offset_s, storage − door). Taken instead of measuring one.  AGENT=SECONDS: "
                   "ahead of that door agent's door (a door on a host of its own; '*=SECONDS': every other "
                   "agent's, as SECONDS); repeatable.  "
                   "[default: the manifest's storage_clock_ahead_s, else measured]")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def access_cmd(incident, calls, access_paths, calls_format, access_format, storage_map, principal, clock_ahead,
               fmt) -> None:
    """Compare the door's calls with the storage's own access logs: the clock offset, the storage
    requests no door call explains, and what each call reached.

    Give an INCIDENT manifest or its folder (its door logs, access logs, storage_map, principals
    and storage_clock_ahead_s), or --calls and --access.
    """
    import pandas as pd

    from .access_join import join_access, request_id_kind, source_ip
    from .incident import storage_clock_ahead

    smap_cli = {k: v[-1] for k, v in _pairs_option(storage_map, "DOOR_PREFIX=STORAGE_URI", "demo/=s3://acme-data/demo/",
                                                   "--storage-map").items()}
    for k, v in smap_cli.items():
        if not v.startswith(("s3://", "gs://", "az://")):
            raise click.BadParameter(f"{k}={v}: a storage URI starts with s3://, gs:// or az://",
                                     param_hint="--storage-map")
    princ_cli = _pairs_option(principal, "AGENT=PRINCIPAL", "analyst='arn:aws:sts::123456789012:assumed-role/r/*'",
                              "--principal")
    ahead_cli, doors_cli = _clock_ahead_option(clock_ahead)
    inc = _incident_or_paths(incident, {"--calls": calls, "--access": access_paths},
                             {"--calls-format": calls_format, "--access-format": access_format})
    if inc is not None:
        if not inc.has_access:
            raise InputError("the manifest names no cloud access logs (access:): there is nothing to compare the "
                             "door with", inc.path)
        calls_f, access_f, set_aside_rows = inc.calls, inc.access, inc.quarantine_of("calls", "access")
        _say_incident_inputs(inc, ("calls", "access"))
        if not inc.read_inputs("access"):  # (an access list of empty or unknown files had given "0 unexplained": all clear)
            raise InputError("no cloud access log was read from the manifest's access: list (its files are empty "
                             "or in no format replaybook reads: `replaybook load auto PATH` shows what each is); "
                             "there is nothing to compare the door with", inc.path)
        smap = {**(inc.manifest.get("storage_map") or {}), **smap_cli}
        princ = {**(inc.manifest.get("principals") or {}), **princ_cli}
        m_ahead, m_doors = storage_clock_ahead(inc.manifest.get("storage_clock_ahead_s"))
        given_by = ("--storage-clock-ahead" if ahead_cli is not None else
                    "storage_clock_ahead_s in the manifest")
        ahead = ahead_cli if ahead_cli is not None else m_ahead
        doors = {**m_doors, **doors_cli}
        door_given_by = {a: "--storage-clock-ahead" if a in doors_cli else "storage_clock_ahead_s in the manifest"
                         for a in doors}
        base, records = inc.root, inc.access_record_files
        access_inputs = [dict(i, path=inc._shown(i["path"])) if i.get("path") is not None else i
                         for i in inc.loaded("access").inputs]
    else:
        from .sources._cloud import record_numbered

        read: list[dict] = []
        calls_f, access_f, set_aside_rows = _load_two(("calls", calls, calls_format),
                                                      ("access", access_paths, access_format), inputs=read)
        smap, princ, given_by, base = smap_cli, princ_cli, "--storage-clock-ahead", Path.cwd()
        ahead, doors = ahead_cli, doors_cli
        door_given_by = {a: "--storage-clock-ahead" for a in doors}
        records = record_numbered(read)
        access_inputs = read
    # what the cloud logs lost to the quarantine: the requests there are in no count below (a
    # CloudTrail delivery file that could not be read, lines of a server access log set aside)
    from ._text import one_line
    from .report.sections import cloud_log_losses, cloud_loss_words

    not_counted = cloud_loss_words(cloud_log_losses(set_aside_rows, access_inputs), markup=False)
    unknown = sorted(set(doors) - set(calls_f["agent"].dropna().astype(str)))
    if unknown:
        raise click.BadParameter(f"no door call has agent {', '.join(map(repr, unknown))}: a door clock is given "
                                 "per door agent (the calls' agent column)", param_hint="--storage-clock-ahead")
    res = join_access(calls_f, access_f, storage_map=smap or None, principals=princ or None, offset_s=ahead,
                      door_offsets_s=doors or None)
    for warning in res.warnings:  # a principals key (or --principal AGENT) naming no door agent applies to nothing
        click.echo(f"replaybook: warning: {warning}", err=True)

    unique = access_f.index.is_unique  # access_index names rows by label (the loaders' are positions)
    also: dict[int, list[str]] = {}  # the other rows that hold the same request
    if unique and len(res.duplicates):
        held = access_f.loc[res.duplicates["access_index"].to_numpy(), ["source_file", "line_no"]]
        for same_as, f, n in zip(res.duplicates["same_as"].tolist(), held["source_file"], held["line_no"]):
            also.setdefault(int(same_as), []).append(_where(f, n, base, records))
    raws = (access_f["raw"].loc[res.unexplained["access_index"].to_numpy()].tolist() if unique
            else [None] * len(res.unexplained))
    un_rows = []
    for r, raw in zip(res.unexplained.itertuples(index=False), raws):
        un_rows.append({
            "ts": _iso(r.ts), "principal": None if pd.isna(r.principal) else r.principal,
            "principal_name": None if pd.isna(getattr(r, "principal_name", None)) else r.principal_name,
            "action": r.action, "action_raw": None if pd.isna(r.action_raw) else r.action_raw,
            "resource_uri": None if pd.isna(r.resource_uri) else r.resource_uri,
            "source_ip": source_ip(raw), "user_agent": None if pd.isna(r.user_agent) else r.user_agent,
            "outcome": None if pd.isna(r.outcome) else r.outcome,
            "error_code": None if pd.isna(r.error_code) else r.error_code,
            "why": r.why, "request_id": None if pd.isna(r.request_id) else r.request_id,
            "request_id_kind": request_id_kind(r.source, r.raw, r.request_id), "source": r.source,
            "logged_at": _where(r.source_file, r.line_no, base, records),
            "also_logged_at": also.get(int(r.access_index), []),
            "access_index": int(r.access_index),
            "refused_call": None if pd.isna(r.refused_session) else {
                "door_session": r.refused_session, "seq": None if pd.isna(r.refused_seq) else int(r.refused_seq),
                "rule": None if pd.isna(r.refused_rule) else r.refused_rule,
                "since_refusal_s": float(r.since_refusal_s)}})
    # storage requests, as the report counts them; other services' events (IAM, compute …) apart
    from .access_join import on_storage

    other_rows = [u for u in un_rows if not on_storage(u["resource_uri"])]
    un_rows = [u for u in un_rows if on_storage(u["resource_uri"])]
    # linked requests whose principal or client is not the session's usual one (or no usual one)
    lk = res.links
    odd = lk[lk["other_principal"].fillna(True) | lk["other_client"].fillna(True)] if len(lk) else lk
    odd_files = (access_f.loc[odd["access_index"].to_numpy(), ["source_file", "line_no", "raw"]]
                 if unique and len(odd) else None)
    flagged = []
    for j, r in enumerate(odd.itertuples(index=False)):
        flagged.append({
            "ts": _iso(r.access_ts), "door_session": r.door_session, "call_seq": None if pd.isna(r.call_seq)
            else int(r.call_seq), "action": r.action, "resource_uri": r.resource_uri,
            "principal": None if pd.isna(r.principal) else r.principal,
            "source_ip": None if pd.isna(r.source_ip) else r.source_ip,
            "user_agent": None if pd.isna(r.user_agent) else r.user_agent,
            "other_principal": None if pd.isna(r.other_principal) else bool(r.other_principal),
            "other_client": None if pd.isna(r.other_client) else bool(r.other_client),
            "request_id": None if pd.isna(r.request_id) else r.request_id,
            "request_id_kind": request_id_kind(r.source, None if odd_files is None else odd_files["raw"].iat[j],
                                               r.request_id),
            "how": r.how,
            "logged_at": "-" if odd_files is None else _where(odd_files["source_file"].iat[j],
                                                              odd_files["line_no"].iat[j], base, records),
            "access_index": int(r.access_index)})
    pc = res.per_call
    if fmt == "json":
        d = {"offset": {"offset_s": res.offset_s, "given": res.offset_given,
                        "requests": res.offset_requests, "unapplied_s": res.offset_unapplied_s,
                        "unapplied_requests": res.offset_unapplied_requests,
                        "doors": res.to_dict()["door_offsets"]},
             "window_s": res.window_s, "lag_s": res.lag_s, "skew_s": res.skew_s,
             "unexplained": un_rows,
             "not_counted": not_counted,
             "unexplained_other": other_rows,
             "links": int(len(res.links)),
             "by_how": {k: int(v) for k, v in res.links["how"].value_counts().items()},
             "other_principal": int(res.links["other_principal"].sum()),
             "other_client": int(res.links["other_client"].sum()),
             "duplicates": int(len(res.duplicates)),
             "warnings": list(res.warnings),
             "flagged": flagged,
             "calls": _json_records(pc.assign(ts=[_iso(t) for t in pc["ts"]])),
             "quarantine": int(len(set_aside_rows))}
        click.echo(json.dumps(d, indent=2, ensure_ascii=False))
    else:
        click.echo(_offset_words(res, given_by, door_given_by))
        limit = 200
        click.echo(f"\nstorage requests no door call explains: {len(un_rows):,}")
        for words in not_counted:  # (beside the count, as the report says it: "… could not be read: …")
            click.echo(f"not in this count: {one_line(words)}")
        order = _UNEXPLAINED_ORDER if princ else _UNEXPLAINED_ORDER_NO_PRINCIPALS
        shared = _shared_why(un_rows)
        if un_rows:
            click.echo(order)
            if not smap and len(calls_f):  # every request is unexplained for this one reason: say it once, up top
                click.echo("why: no storage_map is given, so no door call's object maps to a storage URI and no "
                           "request can be matched to a call — give --storage-map DOOR_PREFIX=STORAGE_URI (or "
                           "storage_map: in the manifest), e.g. --storage-map demo/=s3://acme-data/demo/")
                shared = None if len({u["why"] for u in un_rows}) > 1 else ""
        _unexplained_out(un_rows, limit, shared_why=shared)
        if other_rows:
            click.echo(f"\nother cloud events no door call explains (not on storage: no door call reaches them): "
                       f"{len(other_rows):,}")
            click.echo(order)
            _unexplained_out(other_rows, limit, shared_why=_shared_why(other_rows))
        by_how = ", ".join(f"{k} {int(v):,}" for k, v in res.links["how"].value_counts().items())
        click.echo(f"\ndoor calls and the storage requests they explain ({_count(len(res.links), 'link')}"
                   f"{f': {by_how}' if by_how else ''}; {_count(len(res.duplicates), 'row')} repeating a request "
                   "another row holds, counted once):")
        view = pc.astype(object).assign(ts=[_iso(t) for t in pc["ts"]])
        cols = ["door_session", "seq", "ts", "decision", "object", "access_count", "access_bytes", "denied_count",
                "other_principal_count", "other_client_count"]
        click.echo(_text_table(view[cols].head(limit),
                               numeric=("seq", "access_count", "access_bytes", "denied_count",
                                        "other_principal_count", "other_client_count")))
        if len(pc) > limit:
            click.echo(f"… and {len(pc) - limit:,} more door calls (--format json lists them all)")
        noted = pc[pc["note"].notna()]
        for r in noted.head(limit).itertuples(index=False):
            click.echo(f"door session {r.door_session} seq {'-' if pd.isna(r.seq) else int(r.seq)}: {r.note}")
        if len(noted) > limit:
            click.echo(f"… and {len(noted) - limit:,} more door calls with a note (--format json lists them all)")
        if flagged:
            click.echo(f"\nlinked requests by another principal or client than the rest of their door session's, or "
                       f"where it has no usual one ({len(flagged):,}):")
            for f in flagged[:limit]:
                what = "; ".join(w for w, on in (("another principal", f["other_principal"]),
                                                 ("no usual principal", f["other_principal"] is None),
                                                 ("another address/client", f["other_client"]),
                                                 ("no usual address/client", f["other_client"] is None)) if on)
                client = ", ".join(x for x in (f["source_ip"], f["user_agent"]) if x) or "(not logged)"
                click.echo(f"  {f['ts']}  {f['action']}  {f['resource_uri']}  -> session {f['door_session']} seq "
                           f"{f['call_seq']}: {what}; {f['principal'] or '(no principal)'}, {client}; "
                           f"{f['request_id_kind']} {f['request_id'] or '-'}; {f['logged_at']}")
            if len(flagged) > limit:
                click.echo(f"  … and {len(flagged) - limit:,} more (--format json lists them all)")
    _quarantine_summary(set_aside_rows, records)


#: the order ``access`` lists requests no door call explains in (``AccessJoinResult.unexplained``'s)
_UNEXPLAINED_ORDER = ("(those made with a principal the door's agents use, as the principals say, first; then in "
                      "time order)")
#: … and without ``principals``, which cannot tell the agent's requests from others'
_UNEXPLAINED_ORDER_NO_PRINCIPALS = ("(in time order: no principals are given, so the door's own requests cannot be "
                                    "told from others' — --principal AGENT=PRINCIPAL, or principals: in the manifest)")


def _shared_why(rows: list[dict]) -> str | None:
    """The ``why`` every one of ``rows`` gives, when there are several and it is one (said once)."""
    whys = {u["why"] for u in rows}
    return whys.pop() if len(rows) > 1 and len(whys) == 1 else None


def _unexplained_out(rows: list[dict], limit: int, *, shared_why: str | None = None) -> None:
    """``access``'s text for requests no door call explains (its JSON ``unexplained`` entries):
    per request its time, action (an ``other`` one with the log's own name for it: ``other
    (GetBucketAcl)``) and resource, then one labelled line a fact, the refused
    call on its object (and whether storage let the request through) last.  A ``shared_why``
    (every request's reason, :func:`_shared_why`) is said once before them, not on each."""
    from ._text import one_line
    from .access_join import duration_words

    if shared_why:  # ("" : said already, by the caller)
        click.echo(f"why, for all {len(rows):,}: {shared_why}")
    for u in rows[:limit]:
        # (every text the storage logged, written out: an ESC sequence or a newline in a key or a
        # user agent had coloured, cleared or forged the lines around it)
        u = {k: one_line(v) if isinstance(v, str) else v for k, v in u.items()}
        if isinstance(u.get("refused_call"), dict):
            u["refused_call"] = {k: one_line(v) if isinstance(v, str) else v for k, v in u["refused_call"].items()}
        if u.get("also_logged_at"):
            u["also_logged_at"] = [one_line(x) for x in u["also_logged_at"]]
        action = u["action"]
        if action == "other" and u.get("action_raw"):  # ("other" says nothing: the log's own name does)
            action = f"other ({u['action_raw']})"
        click.echo(f"\n{u['ts'] or '(no time)'}  {action}  {u['resource_uri'] or '(no resource)'}")
        client = ", ".join(x for x in (u["source_ip"], u["user_agent"]) if x)
        outcome = (u["outcome"] or "(not logged)") + (f" (code {u['error_code']})" if u["error_code"] else "")
        who = u["principal"] or "(none the log names)"
        if u.get("principal_name"):  # (an Azure requester's UPN beside its object id)
            who = f"{u['principal']} ({u['principal_name']})" if u["principal"] else u["principal_name"]
        for label, value in (("principal", who),
                             ("from", client or "(not logged)"), ("outcome", outcome),
                             ("why", None if shared_why is not None else u["why"]),
                             (u.get("request_id_kind") or "request id", u["request_id"] or "-"),
                             ("logged at", u["logged_at"] + (f" (also {', '.join(u['also_logged_at'])})"
                                                             if u["also_logged_at"] else ""))):
            if value is not None:
                click.echo(f"  {label:<11} {value}")
        rc = u["refused_call"]
        if rc:
            rule = "" if rc["rule"] is None else f" (rule {rc['rule']})"
            got = ("; storage allowed this request: it reached what the door refused" if u["outcome"] == "allowed"
                   else "; storage denied this request: it reached nothing, but someone tried what the door refused"
                   if u["outcome"] == "denied" else
                   "; this request failed in storage (an error): it reached nothing, but someone tried what the door "
                   "refused" if u["outcome"] == "error" else
                   "; the log gives no outcome: whether it reached what the door refused is not known")
            click.echo(f"  {'refused':<11} the door refused session {rc['door_session']} seq {rc['seq']}"
                       f"{rule} on this object, "
                       f"{duration_words(rc['since_refusal_s'])} {'before' if rc['since_refusal_s'] >= 0 else 'after'} "
                       f"this request{got}")
    if len(rows) > limit:
        click.echo(f"\n… and {len(rows) - limit:,} more (--format json lists them all)")


def _make_folder(folder: Path, what: str) -> None:
    """Make ``folder`` (and its parents) for ``--out``, or raise a usage error naming what is in
    the way (a file where a folder must be: the system's own words are "File exists")."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        blocker = next((a for a in (folder, *folder.parents) if a.exists() and not a.is_dir()), None)
        why = f"{blocker} is a file, not a folder" if blocker is not None else (exc.strerror or str(exc))
        raise click.BadParameter(f"cannot make the folder {what}: {why}", param_hint="--out") from None


@cli.command("report")
@click.argument("incident", type=click.Path(exists=True))
@click.option("--out", "out_dir", type=click.Path(file_okay=False), required=True,
              help="Folder for the executed notebook and the HTML.")
@click.option("--timeout", type=click.IntRange(min=30), default=600, show_default=True,
              help="Seconds a notebook cell may run before the kernel counts as hung.")
def report_cmd(incident: str, out_dir: str, timeout: int) -> None:
    """Render the review report of INCIDENT (an incident.yaml or its folder) to self-contained HTML."""
    from .incident import Incident

    # the manifest, its inputs and which list each file belongs in: checked before a kernel starts
    inc = Incident.load(incident)
    for warning in inc.check_inputs():
        click.echo(f"replaybook: warning: {warning}", err=True)
    inc.check_packet_log()  # (its notebook reads it: a malformed line is bad input, said here)
    _refuse_report_over_evidence(inc, incident, out_dir)
    _make_folder(Path(out_dir).expanduser(), str(out_dir))  # (a usage error, before any kernel starts)
    from .report.render import render_report

    slug_html = [p for p in Path(out_dir).glob("*.html")] if Path(out_dir).is_dir() else []
    try:
        paths = render_report(incident, out_dir, timeout=timeout)
    except OSError as exc:  # the disk refused a report file (render_report removed what it wrote)
        from ._guard import cannot_write

        raise cannot_write(exc.filename or out_dir, exc) from None
    if paths.html in [p.resolve() for p in slug_html]:
        click.echo(f"replaybook: replaced the earlier report {paths.html.name} in {paths.html.parent}", err=True)
    if paths.findings:
        click.echo(f"replaybook: {_findings_line(paths.findings)}", err=True)
        for warning in paths.findings.get("join_warnings") or ():  # e.g. a clock_offsets entry not applied
            click.echo(f"replaybook: warning: {warning}", err=True)
        for warning in paths.findings.get("access_warnings") or ():  # e.g. a principals key naming no agent
            click.echo(f"replaybook: warning: {warning}", err=True)
        for note in paths.findings.get("join_notes") or ():  # e.g. a gateway's tool read under its prefixed name
            click.echo(f"replaybook: note: {note}", err=True)
    if paths.checksums:
        click.echo(f"replaybook: {_checksums_line(incident, paths.checksums)}", err=True)
    click.echo(str(paths.html))


def _refuse_report_over_evidence(inc, incident: str, out_dir: str) -> None:
    """Exit 2 when the report's files would land on evidence: onto a file the incident reads,
    inside a folder it reads or describes (a transcripts folder, the data root, a capsule's), or
    where one of its globs would read them as evidence next time.  (A report written into the
    transcripts folder had listed its own notebook among the inputs, and a second run had
    written over the first one's files, which that run had just read as transcripts.)"""
    import fnmatch

    from ._guard import refuse_over_evidence
    from .report.render import report_files

    places = inc.evidence_places()
    folder = Path(out_dir).expanduser()
    if folder.resolve() in [p.resolve() for p in places.holding]:
        raise click.BadParameter(f"{out_dir} holds the incident's logs, which are evidence: a report beside "
                                 "them would sit among them; choose another place", param_hint="--out")
    for out in report_files(incident, out_dir):
        refuse_over_evidence(out, files=places.files, folders=places.folders)
        where = str(out.resolve())
        for pattern in places.patterns:
            if fnmatch.fnmatchcase(where, pattern):
                raise click.BadParameter(f"{out} matches {pattern}, which the incident reads as evidence: "
                                         "choose another place", param_hint="--out")


def _json_records(df) -> list[dict]:
    """A frame's rows as JSON-ready dicts: numpy scalars as Python numbers, NA as ``None``."""
    import pandas as pd

    return [{k: (None if v is None or (not isinstance(v, (list, dict)) and pd.isna(v))
                 else v.item() if hasattr(v, "item") else v) for k, v in r.items()}
            for r in df.astype(object).to_dict("records")]


def _checksums_line(incident: str | Path, checksums: Path) -> str:
    """Where the report's checksum file is and the command that checks every input with it
    (paths in it are relative to the manifest's folder), for the terminal."""
    import shlex

    inc = Path(incident).expanduser().resolve()
    folder = inc if inc.is_dir() else inc.parent
    return (f"every input's SHA-256 is in {checksums}; check them with: "
            f"cd {shlex.quote(str(folder))} && sha256sum -c {shlex.quote(str(checksums))}")


def _findings_line(f: dict) -> str:
    """The report's findings (``report.sections.findings``) in one line for the terminal."""
    sess = f.get("sessions") or {}
    parts = [f"{_count(sum(sess.values()), 'door session')}"
             + (f" ({', '.join(f'{v:,} {k}' for k, v in sorted(sess.items()))})" if sess else ""),
             f"{_count(f.get('door_calls', 0), 'door call')}, {f.get('refused_calls', 0):,} refused"]
    if f.get("unassigned_transcripts"):
        parts.append(f"{_count(f['unassigned_transcripts'], 'transcript')} assigned to no door session")
    for fc in (f.get("far_clocks") or [])[:5]:  # an unmatched session the join could not reach
        parts.append(f"door session {fc['door_session']} unmatched: its calls line up with transcript "
                     f"{fc['transcript_id']} at {fc['offset_s']:+,.1f} s, beyond max_offset_s (see the report)")
    def verdict(status, tid):
        return ("unmatched" if tid is None or status == "unmatched" else
                f"matched to transcript {tid}" if status == "matched" else f"{status} (transcript {tid})")

    oc = f.get("offset_changes") or []
    for c in oc[:5]:  # a session max_offset_s joined otherwise than the default would
        parts.append(f"door session {c['door_session']} {verdict(c['default_status'], c['default_transcript'])} at "
                     f"max_offset_s {c['default_max_offset_s']:g} (the default), {verdict(c['status'], c['transcript_id'])} "
                     f"at {c['max_offset_s']:g}"
                     + (f"; transcript {c['clock_transcript']}'s own clock joins it alone: clock_offsets "
                        f"{{{c['clock_transcript']}: {c['clock_offset_s']:.1f}}}" if c.get("clock_transcript") else "")
                     + " (see the report)")
    if len(oc) > 5:
        parts.append(f"{len(oc) - 5:,} more door sessions joined otherwise than at the default max_offset_s")
    for group in f.get("disagreeing_copies") or []:  # the likeliest cause of a wrong figure: up front
        parts.append(f"{len(group)} files reached look like one dataset but hold different data: "
                     + ", ".join(group[:4]) + (" …" if len(group) > 4 else ""))
    uc, us = f.get("unclaimed_calls", 0), f.get("unmatched_steps", 0)
    if uc or us:
        parts.append("left unpaired by the join: " + " and ".join(
            x for x in (_count(uc, "door call") + " no step claims" if uc else "",
                        _count(us, "door-bound tool call") + " with no door call" if us else "") if x))
    if f.get("far_pairs"):
        parts.append(f"{_count(f['far_pairs'], 'agreeing pair')} more than 5 s off its session's clock offset")
    lines, files = f.get("set_aside_lines", 0), f.get("set_aside_files", 0)
    if lines or files:
        parts.append(" and ".join(x for x in (_count(lines, "line") if lines else "",
                                              _count(files, "whole file") if files else "") if x)
                     + " set aside (see Quarantine)")
    un = f.get("unexplained_storage")
    if un:
        parts.append(f"{_count(un, 'storage request')} no door call explains")
    other = f.get("unexplained_other")
    if other:  # (the report's "Other cloud events": IAM, compute … in the same logs)
        parts.append(f"{_count(other, 'other cloud event')} (not on storage) no door call explains")
    um = f.get("unmapped_calls") or []
    if um:  # their requests are among the unexplained: a storage_map that misses a folder
        objs = list(dict.fromkeys(c["object"] for c in um))
        parts.append(f"{_count(len(um), 'allowed door call')} {'reaches' if len(um) == 1 else 'reach'} objects no "
                     f"storage_map entry covers: {', '.join(objs[:3])}" + (f" and {len(objs) - 3} more" if len(objs) > 3
                                                                          else ""))
    flagged = f.get("other_client_links") or []
    if flagged:  # a read someone else made, counted as a door call's
        from .report.sections import other_client_words

        parts.append(other_client_words(flagged, markup=False))
    if f.get("no_principals"):
        from .report.sections import NO_PRINCIPALS

        parts.append(NO_PRINCIPALS)
    parts.extend(f.get("cloud_log_loss_words") or [])  # requests the counts above leave out
    for key, how in (("refused_then_reached", "reached in storage with no door call"),
                     ("refused_then_tried", "tried in storage with no door call"),
                     ("refused_then_other_principal", "requested in storage by another principal")):
        hit = f.get(key) or []
        words = f.get("refused_then_tried_words") if key == "refused_then_tried" else None
        if hit:
            parts.append(f"refused at the door, {how}{f' ({words})' if words else ''}: {', '.join(hit[:3])}"
                         + (f" and {len(hit) - 3} more" if len(hit) > 3 else ""))
    if f.get("packet_words"):  # the PR body's claims checked against the packet's log (a CI job reads this)
        parts.append(f["packet_words"])
    if f.get("capsule_words"):  # what replaying the incident from its capsule showed
        parts.append(f["capsule_words"])
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Console entry point: run the CLI and map errors to exit codes (0 ok, 2 input, 1 internal)."""
    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    stdout = sys.stdout  # click swaps it for a wrapper only when the output pipe was closed
    try:
        rv = cli.main(args=argv, prog_name="replaybook", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code or 0)
    except click.ClickException as exc:  # usage errors
        exc.show()
        return EXIT_INPUT
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        return EXIT_INPUT
    except ReplaybookError as exc:
        _say(f"replaybook: error: {exc}", lines=isinstance(exc, ReportError))  # (a kernel's log: its lines)
        return EXIT_INPUT if isinstance(exc, (InputError, JoinError)) else EXIT_INTERNAL
    except BrokenPipeError:
        return EXIT_OK
    except SystemExit:
        # click ends a command whose output pipe was closed (`replaybook join … | head`) with
        # sys.exit(1) after swapping sys.stdout for a wrapper that ignores the broken pipe
        # (click.core.Command.main, errno EPIPE): the reader took what it wanted, no internal error
        if sys.stdout is not stdout:
            return EXIT_OK
        raise
    except Exception as exc:  # a bug
        _say(f"replaybook: internal error: {type(exc).__name__}: {exc}")
        if debug:
            traceback.print_exc()
        else:
            click.echo("(run with --debug for the traceback)", err=True)
        return EXIT_INTERNAL
    # a command that ends with ctx.exit(n) returns n here (standalone_mode=False)
    return rv if isinstance(rv, int) else EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
