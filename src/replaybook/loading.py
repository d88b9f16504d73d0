"""Load anything: pick each file's format by content and load it into its canonical frame.

:func:`load` walks folders, sniffs every file with every registered source (many lines of
content, gzip recognised by magic bytes — never the extension alone), loads each group of files
with the winning source, and reports which source it chose for each file and why not for the
files it could not place.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import pandas as pd
import yaml

from ._jsonl import GZIP_MAGIC, expand_paths, file_info
from .errors import InputError
from .frames import QUARANTINE, LoadResult
from .sources import registry

__all__ = ["load", "load_frame", "Loaded", "FrameLoad", "MIN_CONFIDENCE"]

#: A source must be at least this sure before it may claim a file.
MIN_CONFIDENCE = 0.5

_SKIP_NAMES = {".DS_Store", "Thumbs.db"}


@dataclass
class Loaded:
    """What :func:`load` found.

    Attributes:
        results: ``{frame name: LoadResult}`` — ``steps``, ``calls``, ``access`` as present.
        files: one row per file considered: ``path`` (string), ``source`` (string, NA when no
            source claimed it), ``frame``, ``confidence`` (float64), ``rows`` (Int64, rows in
            its frame), ``quarantined`` (Int64), ``note`` (why it was not loaded, or what was
            skipped inside it).
    """

    results: dict[str, LoadResult]
    files: pd.DataFrame = field(default_factory=pd.DataFrame)

    def __getitem__(self, frame: str) -> pd.DataFrame:
        """The canonical frame named ``frame`` (``steps``, ``calls``, ``access``)."""
        return self.results[frame].frame

    @property
    def quarantine(self) -> pd.DataFrame:
        """Every quarantined line of every source (:data:`~replaybook.frames.QUARANTINE`)."""
        parts = [r.quarantine for r in self.results.values()]
        return pd.concat(parts, ignore_index=True) if parts else QUARANTINE.empty()


def _walk(paths: Iterable[str | Path], links: list[Path] | None = None) -> list[Path]:
    """Files named by ``paths``: files as given, folders walked (sorted; symlinks, pipes and
    :data:`_SKIP_NAMES` left out; the symlinks and pipes met appended to ``links``), a file named twice
    taken once.  Raises InputError for a missing path."""
    return expand_paths(paths, accept=lambda q: q.name not in _SKIP_NAMES, links=links)


def _link_note(link: Path) -> str:
    """Why a symbolic link (naming its target), or a pipe, socket or device, met in a folder was
    not read."""
    if not link.is_symlink():
        return "not a regular file (a pipe, socket or device): not read"
    try:
        target = os.readlink(link)
    except OSError:
        target = "?"
    return f"symbolic link to {target}: not followed (name the file itself to read it)"


def load(paths: str | Path | Iterable[str | Path], *, min_confidence: float = MIN_CONFIDENCE,
         exclude: set[Path] | frozenset[Path] = frozenset(), not_followed: Iterable[Path] = ()) -> Loaded:
    """Sniff and load files and folders into canonical frames.

    Args:
        paths: files and/or folders (walked recursively; symlinks are not followed: each one
            met is listed in ``files`` with its target and a note).
        min_confidence: the lowest sniff confidence that lets a source claim a file.
        exclude: files (resolved paths) left out of the walk: read elsewhere (an incident's
            ``{path, format}`` entry naming a file its folder entry holds too).
        not_followed: symbolic links met elsewhere and not followed (folders an incident's
            ``**`` glob passed over): listed in ``files`` as the walk's own links are.

    Returns:
        :class:`Loaded` with one :class:`~replaybook.frames.LoadResult` per frame kind and a
        per-file table saying which source was chosen.

    Raises:
        InputError: a path does not exist.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    links: list[Path] = []
    files = _walk(paths, links)
    links += [Path(q) for q in not_followed if Path(q) not in links]
    if exclude:
        files = [f for f in files if f.resolve() not in exclude]
    groups: dict[str, list[Path]] = {}
    table: list[dict] = [{"path": str(q), "note": _link_note(q)} for q in links]
    registry.prefetch(files)  # thousands of files: judged by helper processes too
    for f in files:
        try:
            size = f.stat().st_size
        except OSError as exc:
            table.append({"path": str(f), "note": f"cannot read: {exc.strerror or exc}"})
            continue
        if size == 0:
            table.append({"path": str(f), "note": "empty file"})
            continue
        side = registry.side_file_of(f)
        if side is not None:
            table.append({"path": str(f), "source": side.name, "frame": side.frame,
                          "note": "side file: read with the file it belongs to"})
            continue
        try:
            src, conf = registry.sniff_file(f)
        except OSError as exc:  # (a file of a folder: named directly, the CLI says so before this)
            raise InputError(f"cannot read: {exc.strerror or exc}", f) from None
        if src is None or conf < min_confidence:
            table.append({"path": str(f), "confidence": conf,
                          "note": _unrecognised_note(f)})
            continue
        groups.setdefault(src.name, []).append(f)
        table.append({"path": str(f), "source": src.name, "frame": src.frame, "confidence": conf})
    results: dict[str, LoadResult] = {}
    for name, fs in groups.items():
        src = registry.get(name)
        res = src.load(fs)
        prev = results.get(src.frame)
        results[src.frame] = res if prev is None else LoadResult(
            frame=pd.concat([prev.frame, res.frame], ignore_index=True),
            quarantine=pd.concat([prev.quarantine, res.quarantine], ignore_index=True),
            inputs=prev.inputs + res.inputs,
        )
    results = {k: across_files(k, read_once(v)) for k, v in results.items()}
    df = pd.DataFrame(table, columns=["path", "source", "frame", "confidence", "note"])
    rows, quar, notes = [], [], []
    # per frame: rows and quarantined lines per file, and each file's inputs entry (one pass each:
    # a look-up per file over the whole frame was quadratic, minutes for a door's 15,000 files)
    counts = {k: (res.frame["source_file"].value_counts().to_dict() if len(res.frame) else {},
                  res.quarantine["source_file"].value_counts().to_dict() if len(res.quarantine) else {},
                  {i.get("path"): i for i in reversed(res.inputs)})
              for k, res in results.items()}
    for r in df.itertuples(index=False):
        res = results.get(r.frame) if isinstance(r.frame, str) else None
        if res is None:
            rows.append(None)
            quar.append(None)
            notes.append(r.note)
            continue
        if isinstance(r.note, str) and r.note.startswith("side file"):
            rows.append(0)
            quar.append(0)
            notes.append(r.note)
            continue
        per_file, per_file_q, info_of = counts[r.frame]
        rows.append(int(per_file.get(r.path, 0)))
        quar.append(int(per_file_q.get(r.path, 0)))
        info = info_of.get(r.path, {})  # (reversed above: the first entry of a path, as before)
        notes.append(_input_note(info) or r.note)
    df = df.assign(rows=pd.array(rows, dtype="Int64"), quarantined=pd.array(quar, dtype="Int64"),
                   note=notes)
    df = df.astype({"path": "string", "source": "string", "frame": "string", "confidence": "float64",
                    "note": "string"})
    return Loaded(results=results, files=df[["path", "source", "frame", "confidence", "rows",
                                             "quarantined", "note"]])


def _content_sha(inputs: list[dict], info: dict) -> str | None:
    """For a ``<name>.gz`` input beside which ``<name>`` is an input too (a CloudTrail delivery
    kept both ways), the SHA-256 of its decompressed bytes, which equals the plain file's hash
    when they hold the same text; else ``None`` (the hash on disk decides).  Reads only such
    files again."""
    path = info.get("path")
    if not isinstance(path, str) or not path.endswith(".gz"):
        return None
    plain = path[:-3]
    if not any(i.get("path") == plain for i in inputs):
        return None
    import gzip
    import hashlib
    import zlib

    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(gzip.decompress(fh.read())).hexdigest()
    except (OSError, EOFError, zlib.error):
        return None


def read_once(res: LoadResult) -> LoadResult:
    """``res`` without the rows of an input file whose bytes equal an earlier input's.

    A copy of the same log under another path (``door/`` and a copy of one of its files in
    ``door-backup/``, say; or ``x.json`` beside ``x.json.gz`` holding the same text) would
    otherwise count its calls or events twice.  The earlier file
    (in ``res.inputs`` order) is kept; the copy's rows and quarantine rows (by ``source_file``)
    are left out and its ``inputs`` entry is marked ``skipped``, ``same_as`` the earlier path
    (said as "same content as <earlier path>: read once") — listed, hashed, not read.  Files already
    skipped, and empty ones, are not compared.  Returns ``res`` itself when no two inputs share
    a SHA-256 (one pass over ``res.inputs``; the frame is untouched).
    """
    first: dict[str, str] = {}
    copies: dict[str, str] = {}
    for info in res.inputs:
        sha, path = info.get("sha256"), info.get("path")
        if not sha or path is None or info.get("skipped") or not info.get("bytes"):
            continue
        sha = _content_sha(res.inputs, info) or sha
        if sha in first and first[sha] != path:
            copies[path] = first[sha]
        else:
            first.setdefault(sha, path)
    if not copies:
        return res
    inputs = []
    for info in res.inputs:
        earlier = copies.get(info.get("path")) if not info.get("skipped") else None
        if earlier is not None:
            info = dict(info, skipped=True, same_as=earlier)
        inputs.append(info)
    frame, quarantine = res.frame, res.quarantine
    names = list(copies)
    if len(frame):
        frame = frame[~frame["source_file"].isin(names).to_numpy(bool)].reset_index(drop=True)
    if len(quarantine):
        quarantine = quarantine[~quarantine["source_file"].isin(names).to_numpy(bool)].reset_index(drop=True)
    return LoadResult(frame=frame, quarantine=quarantine, inputs=inputs)


def across_files(frame: str, res: LoadResult) -> LoadResult:
    """What a load of ``frame`` (``steps``, ``calls`` …) needs once all its files are read, the
    same for ``replaybook.load`` and an incident: a door session id two gateway formats share
    told apart (:func:`sessions_apart`); a transcript id two formats share told apart
    (:func:`transcripts_apart`) and results stamped before their calls noted
    (:func:`results_before_calls`).  Other frames as given."""
    if frame == "calls":
        return sessions_apart(res)
    if frame == "steps":
        return results_before_calls(transcripts_apart(res))
    return res


def _apart_by_format(res: LoadResult, col: str, note_key: str, *, keep_first: bool) -> LoadResult:
    """``res`` with each ``col`` value that files of different formats share renamed
    ``<format>:<value>`` in the rows of every format (``keep_first``: but the first, in
    ``inputs`` order), each such file's ``inputs`` entry naming the new values under
    ``note_key``; ``res`` itself when no value is shared across formats."""
    f = res.frame
    if not len(f) or col not in f.columns:
        return res
    fmt_of = {i.get("path"): i.get("format") for i in res.inputs if i.get("format")}
    fmt = f["source_file"].map(fmt_of)
    per = pd.DataFrame({"v": f[col], "fmt": fmt}).dropna().drop_duplicates()
    if not per["v"].duplicated().any():
        return res
    shared = set(per.loc[per["v"].duplicated(keep=False), "v"])
    mask = f[col].isin(shared).fillna(False).to_numpy(bool).copy()
    if keep_first:
        order = {x: k for k, x in enumerate(dict.fromkeys(i.get("format") for i in res.inputs if i.get("format")))}
        first = per.assign(o=per["fmt"].map(order)).sort_values("o").drop_duplicates("v").set_index("v")["fmt"]
        mask &= fmt.to_numpy(object) != f[col].map(first).to_numpy(object)
    if not mask.any():
        return res
    vals = f[col].astype(object).copy()
    vals[mask] = (fmt[mask].astype(str) + ":" + f.loc[mask, col].astype(str)).to_numpy()
    frame = f.assign(**{col: pd.array(vals.to_numpy(), dtype=f[col].dtype)})
    renamed: dict[str, list[str]] = {}
    for path, v, m in zip(f["source_file"], f[col], mask):
        if m and v not in renamed.setdefault(path, []):
            renamed[path].append(v)
    inputs = [dict(i, **{note_key: [f"{i.get('format')}:{x}" for x in renamed[i.get("path")]]})
              if renamed.get(i.get("path")) else i for i in res.inputs]
    return LoadResult(frame=frame, quarantine=res.quarantine, inputs=inputs)


def sessions_apart(res: LoadResult) -> LoadResult:
    """``res`` (a ``calls`` load) with a door session id that logs of *different* gateway formats
    both use (``sess-1`` in a Docker MCP gateway log and in an agentgateway log, say) told apart:
    those rows' ``door_session`` becomes ``<format>:<id>`` (re-sorted by session, time, seq) and
    each such file's ``inputs`` entry says so (``sessions_renamed``).  Two gateways' calls had
    merged into one session, joined as one conversation.  Files of one format sharing an id
    are one gateway's rotated logs and stay together.  Returns ``res`` itself when no id is
    shared across formats."""
    out = _apart_by_format(res, "door_session", "sessions_renamed", keep_first=False)
    if out is res:
        return res
    frame = out.frame.sort_values(["door_session", "ts", "seq"], kind="stable", na_position="last").reset_index(drop=True)
    return LoadResult(frame=frame, quarantine=out.quarantine, inputs=out.inputs)


def transcripts_apart(res: LoadResult) -> LoadResult:
    """``res`` (a ``steps`` load) with a transcript id that files of *different* formats both
    use told apart: a Codex rollout and an OTel export of the same conversation (the spans'
    ``gen_ai.conversation.id`` is the rollout's session id) had merged into one transcript whose
    step numbers collided — its calls shown with another's arguments and results.  The rows of
    every format but the first (in ``inputs`` order) become ``<format>:<id>`` (``seq`` as read,
    per file) and each such file's ``inputs`` entry says so (``transcripts_renamed``); both then
    take part in the join as two transcripts, and the report shows each.  Returns ``res``
    itself when no id is shared across formats."""
    return _apart_by_format(res, "transcript_id", "transcripts_renamed", keep_first=True)


def results_before_calls(res: LoadResult) -> LoadResult:
    """``res`` (a ``steps`` load) with a note on each file holding a tool call whose result is
    stamped before the call itself (``result_ts`` < ``ts``): a transcript written out of order,
    or edited — the call paired all the same, by its id, so nothing else would say it.  The
    frame is unchanged; the file's ``inputs`` entry gets the note (the first three, with the
    count).  Returns ``res`` itself when there is none."""
    f = res.frame
    if not len(f) or "result_ts" not in f.columns:
        return res
    bad = f[(f["kind"] == "tool_call").to_numpy(bool) & (f["result_ts"] < f["ts"]).fillna(False).to_numpy(bool)]
    if not len(bad):
        return res
    said: dict[str, list[str]] = {}
    for path, ln, cid, ts, rts in zip(bad["source_file"], bad["line_no"], bad["call_id"], bad["ts"], bad["result_ts"]):
        said.setdefault(str(path), []).append(
            f"line {ln}: the result of tool call {cid if not pd.isna(cid) else '(no id)'} is stamped "
            f"{(ts - rts).total_seconds():,.3f} s before the call ({rts:%H:%M:%S.%f}"[:-3] + f" against {ts:%H:%M:%S.%f}"[:-3]
            + "): the file is out of order or was edited — paired by its id all the same")
    inputs = []
    for info in res.inputs:
        mine = said.get(str(info.get("path")))
        if mine:
            text = "; ".join(mine[:3]) + (f" (and {len(mine) - 3:,} more)" if len(mine) > 3 else "")
            info = dict(info, notes=[*(info.get("notes") or []), text])
        inputs.append(info)
    return LoadResult(frame=f, quarantine=res.quarantine, inputs=inputs)


_NOTE_WORDS = (("arguments None, args_key NA", "no arguments to compare"),
               ("arguments as logged, args_key NA", "arguments kept as logged but not compared"),
               ("args_key left NA", "its arguments cannot be compared"),
               ("; args_key NA", ": its arguments cannot be compared"), ("args_key NA", "arguments not compared"),
               ("ts is NaT", "the time is unknown"), ("ts NaT", "time unknown"), ("tool left NA", "tool unknown"))


def plain_note(note: str) -> str:
    """A loader's note (an ``inputs`` entry's ``notes`` item) in a reviewer's words: the frame's
    ``NA``/``NaT`` spelled out ("arguments None, args_key NA" → "no arguments to compare"), as
    ``load auto``, ``load <frame>`` and the report's Inputs say it."""
    for a, b in _NOTE_WORDS:
        note = note.replace(a, b)
    return note


def copy_words(info: dict) -> str:
    """Why an earlier copy of a transcript (an ``inputs`` entry with ``copy_of``: a snapshot
    whose lines begin a later file of the same name) was not read, in words."""
    n = info.get("lines") or 0
    return (f"an earlier copy of {info['copy_of']}: its {n:,} line{'' if n == 1 else 's'} begin that file, "
            "and are read there")


def _input_note(info: dict) -> str | None:
    """What a loader said of one input file, in words (``skipped: CloudTrail digest file``,
    ``3 duplicate lines``, ``2 records of other kinds ignored``, a loader's own notes), or ``None``."""
    parts = []
    if info.get("same_as"):
        return f"same content as {info['same_as']}: read once"
    if info.get("copy_of"):
        return f"skipped: {copy_words(info)}"
    if info.get("skipped"):
        parts.append(f"skipped: {info.get('reason') or 'no records'}")
    other = info.get("ignored_lines") or info.get("not_calls")  # (cloud / gateway loaders)
    dups = info.get("duplicates")
    if info.get("resumes") and dups:  # (Claude Code: a conversation resumed in a new file)
        parts.append(f"resumes transcript {info['resumes']}: starts with copies of its lines "
                     f"({dups:,} line{'' if dups == 1 else 's'}, counted once)")
        dups = None
    for n, what in ((dups, "duplicate line"), (other, "record of other kinds")):
        if n:
            parts.append(f"{n} {what}" if n == 1 else f"{n} {what.replace('line', 'lines', 1).replace('record ', 'records ', 1)}")
    if parts and not info.get("skipped") and other:
        parts[-1] += " ignored"
    if info.get("bom"):
        parts.append("starts with a UTF-8 byte-order mark (read past)")
    for note in info.get("notes") or ():  # what a loader says of the file (no zone, no arguments …)
        parts.append(plain_note(str(note)))
    if info.get("transcripts_renamed"):
        parts.append("a transcript of another format has its id too (one conversation, recorded twice?): read "
                     "apart as " + ", ".join(info["transcripts_renamed"][:3])
                     + (" …" if len(info["transcripts_renamed"]) > 3 else ""))
    if info.get("sessions_renamed"):
        parts.append("another gateway's log uses its session id too: read as "
                     + ", ".join(info["sessions_renamed"][:3]) + (" …" if len(info["sessions_renamed"]) > 3 else ""))
    return "; ".join(parts) or None


_WIDE_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
              (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


def _wide_text(path: str | Path) -> str | None:
    """The words for a file saved as UTF-16 or UTF-32 (by its byte-order mark; a Windows editor's
    "Unicode"): replaybook reads UTF-8, and the file is not damaged, only encoded otherwise.
    ``None`` for any other file."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError:
        return None
    for bom, name in _WIDE_BOMS:
        if head.startswith(bom):
            return (f"{name} text: replaybook reads UTF-8 (a copy converted with "
                    f"`iconv -f {name} -t UTF-8` will read)")
    return None


#: keys of an incident manifest (schemas/incident.v1.json) that name evidence
_MANIFEST_KEYS = frozenset({"transcripts", "door", "access"})


#: the first 32 bytes of every SAS7BDAT file (the format as read by pandas.read_sas and readstat)
_SAS7BDAT_MAGIC = (b"\x00" * 12 + b"\xc2\xea\x81\x60\xb3\x14\x11\xcf\xbd\x92\x08\x00"
                   b"\x09\xc7\x31\x8c\x18\x1f\x10\x11")


def _unrecognised_note(path: str | Path) -> str:
    """Why no source read ``path``, in words: a UTF-16/32 file (:func:`_wide_text`), an incident
    manifest (a YAML mapping with ``title`` and one of ``transcripts``/``door``/``access``: the
    user meant ``replaybook report`` or ``join``), a data file — Parquet (its ``PAR1`` magic), a
    SAS transport file (XPORT v5/v8: its ``HEADER RECORD*******LIB…`` first record) or a SAS
    dataset (``.sas7bdat``: its 32-byte magic number) —, Codex CLI's prompt history, a replay
    packet's session log, or "no source recognised this content"."""
    wide = _wide_text(path)
    if wide:
        return wide
    from .sources.codex import is_prompt_history
    from .sources.registry import SNIFF_BYTES, archive_kind, sample_of

    p = Path(path)
    try:
        with open(p, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
            packed = archive_kind(head) or archive_kind(sample_of(head))
            if packed:
                return f"{packed}: extract it and name the files it holds (replaybook reads files, not archives)"
            kind = ("a Parquet data file" if head[:4] == b"PAR1"
                    else "a SAS transport (XPORT) data file" if head.startswith(b"HEADER RECORD*******LIB")
                    else "a SAS dataset (sas7bdat)" if head[:32] == _SAS7BDAT_MAGIC else None)
            if kind:
                return f"{kind}: replaybook reads logs and transcripts, not data files"
            if is_prompt_history(sample_of(head)):
                return ("Codex CLI's prompt history (~/.codex/history.jsonl: each prompt's text alone, no tool "
                        "calls): the conversations are the rollouts under ~/.codex/sessions/YYYY/MM/DD/")
            if _packet_log_sample(sample_of(head)):
                return (f"a replay packet's session log: `replaybook packet claims PR_BODY.md {p.name}` or "
                        f"`replaybook packet replay {p.name}` reads it (an incident names it under packet: log:)")
            if p.suffix.lower() in (".yaml", ".yml") and p.stat().st_size <= 1 << 20:
                fh.seek(0)
                doc = yaml.safe_load(fh.read().decode("utf-8"))
                if isinstance(doc, dict) and "title" in doc and _MANIFEST_KEYS & set(doc):
                    return (f"an incident manifest, not a log: `replaybook report {p.name}` "
                            f"or `replaybook join {p.name}` reads it")
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError):
        pass
    return "no source recognised this content"


def _packet_log_sample(sample: bytes) -> bool:
    """Whether a file's first lines are a replay packet's session log (``replaybook packet
    record``'s lines: ``seq``, ``cmd`` and ``exit``, and its ``trailer``), every one of them."""
    from ._jsonl import sample_objects

    _n, objs = sample_objects(sample, limit=20)
    return bool(objs) and all({"seq", "cmd", "exit"} <= o.keys() or set(o) == {"trailer"} for o in objs) \
        and any("cmd" in o for o in objs)


def _binary_file(path: str | Path) -> bool:
    """``path`` is a regular file whose first 8 KiB (gzip: its decompressed start) hold NUL
    bytes or mostly control bytes (:func:`~replaybook.sources._cloud.looks_binary`)."""
    from .sources._cloud import looks_binary

    p = Path(path)
    if not p.is_file():
        return False
    try:
        with open(p, "rb") as fh:
            head = fh.read(8192)
            if head[:2] == GZIP_MAGIC:
                import gzip
                import zlib

                fh.seek(0)
                try:
                    head = gzip.GzipFile(fileobj=fh).read(8192)
                except (OSError, EOFError, zlib.error):
                    return False  # a damaged gzip stream: the loader says so, with its own words
    except OSError:
        return False  # unreadable: the loader raises its own error
    return looks_binary(head)


def _unread_entry(path: str, note: str | None) -> dict:
    """The ``inputs`` entry of a file no source read: its hash and size, no format, and why
    (``skipped``/``reason``, as a loader's skipped files have them)."""
    if Path(path).is_symlink() or not Path(path).is_file():  # not followed (or a pipe): nothing read or hashed
        return {"path": str(path), "sha256": None, "bytes": None, "lines": None, "format": None,
                "skipped": True, "reason": note}
    info = file_info(path, Path(path).stat().st_size, b"", None)
    info.update(lines=None, skipped=True, reason=note or "no source recognised this content")
    return info


_SPECS = ("steps", "calls", "access")


@dataclass
class FrameLoad:
    """What :func:`load_frame` loaded into one frame.

    Attributes:
        result: the frame's :class:`~replaybook.frames.LoadResult`; its quarantine also holds one
            whole-file row (``loader`` ``auto``, kind ``unread``, no line number) per file no source
            recognised: not damaged evidence, and not counted as set-aside lines.
        sources: the source chosen for each loaded file, ``{path: source name}``.
        elsewhere: files recognised as another frame's input, ``{path: "source (frame)"}`` —
            not loaded here.
    """

    result: LoadResult
    sources: dict[str, str] = field(default_factory=dict)
    elsewhere: dict[str, str] = field(default_factory=dict)


def _note_forced_misfits(res: LoadResult, src: registry.Source) -> None:
    """Note each file a forced source read although its content is another source's: a Claude
    Code transcript read with ``--source codex`` gave rows of kind ``other`` with no time and
    no word why.  A file is noted when another source claims it by content (confidence at least
    :data:`MIN_CONFIDENCE`) and ``src``'s own sniffer does not; its rows are kept (the user
    asked), and the note names what it is.  Only a file that gave no row (for ``steps``: no row
    but ``other`` and ``system`` ones, all a reader of the wrong format makes) is sniffed, so a
    forced load of files read well costs nothing more."""
    f = res.frame
    if "kind" in f.columns and "source_file" in f.columns:  # steps: what only a wrong reader leaves is "other"
        f = f[~f["kind"].isin(["other", "system"])]
    read_well = set(f["source_file"].astype(str)) if "source_file" in f.columns else set()
    files = [i for i in res.inputs if i.get("path") and not i.get("skipped") and not i.get("side_of")
             and str(i["path"]) not in read_well and Path(i["path"]).is_file()]
    for info in files:
        try:  # (the source's own judge first: only a file it doubts is judged by all of them)
            if registry.sniff_file(info["path"], only=src)[1] >= MIN_CONFIDENCE:
                continue
            best, score = registry.sniff_file(info["path"])
            if best is None or best is src or score < MIN_CONFIDENCE:
                continue
        except OSError:  # (read a moment ago: the loader has said what it could)
            continue
        info.setdefault("notes", []).append(
            f"read as {src.name}, as asked, but its content is {best.name} ({best.frame}): its rows may be empty "
            "or wrong (`replaybook load auto PATH` reads each file with the source its content names)")


def load_frame(paths: str | Path | Iterable[str | Path], frame: str, *, source: str | None = None,
               require: bool = True, exclude: set[Path] | frozenset[Path] = frozenset(),
               not_followed: Iterable[Path] = ()) -> FrameLoad:
    """Load files and folders into one canonical ``frame`` (``steps``, ``calls`` or ``access``).

    With ``source`` that source loads every path (its own folder walk); a file whose content is
    another source's is read all the same and noted (:func:`_note_forced_misfits`).  Without, each file is
    sniffed by content as :func:`load` does and loaded by the source that recognises it, so a
    Codex rollout given as a transcript, or a gateway log given as a door log, is read by its own
    loader instead of being misread as the default format.

    With ``require=False`` paths that hold nothing for ``frame`` (only empty files, say) give
    an empty frame instead of an error.  Files in ``exclude`` (resolved paths) are not read
    when sniffing (:func:`load`); links in ``not_followed`` are listed as not followed (:func:`load`).

    Raises:
        InputError: a path does not exist; ``source`` is unknown or yields another frame; with
            ``require``, no file gave anything for ``frame`` (the message says what the files
            were instead).
    """
    if frame not in _SPECS:
        raise InputError(f"unknown frame {frame!r} (steps, calls or access)")
    if isinstance(paths, (str, Path)):
        paths = [paths]
    paths = list(paths)
    if source is not None:
        src = registry.get(source)
        if src.frame != frame:
            raise InputError(f"source {source!r} yields {src.frame}, not {frame}")
        for p in paths:  # a format forced on a file that is not text at all: the user's to fix
            wide = _wide_text(p) if Path(p).is_file() else None
            if wide:
                raise InputError(f"{wide}; it cannot be read as {source} as it is", p)
            if _binary_file(p):
                raise InputError(f"not a text file (binary data): it cannot be read as {source}", p)
        res = read_once(src.load(paths))
        if not res.inputs:
            raise InputError(f"source {source!r} found no input files in {', '.join(map(str, paths))}")
        _note_forced_misfits(res, src)
        return FrameLoad(result=res, sources={i["path"]: source for i in res.inputs if "path" in i})
    loaded = load(paths, exclude=exclude, not_followed=not_followed)
    files = loaded.files
    mine = files[files["frame"] == frame]
    other = files[files["frame"].notna() & (files["frame"] != frame)]
    unknown = files[files["source"].isna()]
    elsewhere = {r.path: f"{r.source} ({r.frame})" for r in other.itertuples(index=False)}
    res = loaded.results.get(frame)
    if res is None and not require:
        from .frames import ACCESS, CALLS, STEPS

        res = LoadResult(frame={"steps": STEPS, "calls": CALLS, "access": ACCESS}[frame].empty())
    if res is None:
        found = list(elsewhere.items()) + [(r.path, r.note or "not recognised")
                                           for r in unknown.itertuples(index=False)]
        if len(found) == 1 and [str(p) for p in paths] == [found[0][0]]:
            what = found[0][1]  # the one file given: its path is said already
        else:
            what = "; ".join(f"{p}: {v}" for p, v in found[:5]) or "no files in it"
        if len(found) > 5:
            what += f"; … {len(found) - 5} more"
        words = {"steps": "transcript", "calls": "door log", "access": "cloud access log"}
        kinds = set(other["frame"].astype(str))
        swapped = ""
        if len(kinds) == 1 and not len(unknown) and frame in words and (k := kinds.pop()) in words:
            swapped = (f"; every file there is a {words[k]}, not a {words[frame]}: were the {words[frame]}s and "
                       f"the {words[k]}s given the other way round?")
        raise InputError(f"no {frame} input in {', '.join(map(str, paths))} ({what}){swapped}; "
                         f"`replaybook load auto PATH` shows what each file is")
    nl = [{"source_file": r.path, "kind": "unread", "loader": "auto", "error": r.note}
          for r in unknown.itertuples(index=False) if r.note != "empty file"]
    if len(unknown):
        # files given for this frame that no source recognised are evidence too: listed with
        # their hash and why nothing was read from them
        unread = [_unread_entry(r.path, r.note) for r in unknown.itertuples(index=False)]
        res = LoadResult(frame=res.frame, quarantine=pd.concat([res.quarantine, QUARANTINE.build(nl)],
                                                               ignore_index=True) if nl else res.quarantine,
                         inputs=res.inputs + unread)
    return FrameLoad(result=res, sources={r.path: r.source for r in mine.itertuples(index=False)},
                     elsewhere=elsewhere)
