"""Column-wise machinery behind the fast paths of the CloudTrail and S3 access-log loaders.

The per-record reference path (:func:`~._cloud.load_each` with the loader's ``_read_file``)
stays the definition of the output; what is here only makes the same frame cheaper:

* :func:`prefetched_files` — :func:`~._cloud.iter_files` with each file read once, and hashed
  from memory, by a read-ahead thread (:class:`ReadAhead`), then gunzipped, CR-only line ends
  read as line ends (:func:`~._cloud.cr_line_ends`) and line-counted.
  Same ``inputs`` entries, same quarantine rows, same order; an unreadable file raises the
  same :class:`~replaybook.errors.InputError` when its turn comes.
* :class:`Chunks` — the rows of the files, kept as one list per ACCESS column per file
  instead of one dict per row; a file read by the reference path is converted to columns.
* :func:`finish_columns` — :func:`~._cloud.finish` over columns: times parsed in one
  call, rows whose time is not a date-time quarantined (same rows, same order),
  frame built at the final dtypes, sorted the same way.
* :func:`gc_paused` — the cyclic garbage collector paused while millions of container
  objects are created (it would otherwise rescan them over and over; nothing here makes
  cycles).

Gzip: when the ``isal`` package is installed its inflater is used for plain gzip members
(no header CRC, no reserved flags); any stream it does not read to a clean end is re-read with
:mod:`zlib` by :func:`~._cloud.read_input`, so damaged streams give exactly the reference
path's problem text and recovered bytes.
"""

from __future__ import annotations

import gc
import hashlib
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from queue import Full, Queue
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np
import pandas as pd

from .._jsonl import GZIP_MAGIC, expand_paths, quarantine_row
from .._text import time_words
from ..errors import InputError
from ..frames import ACCESS, QUARANTINE, LoadResult
from . import _cloud, _parallel
from ._record import as_dict

try:  # optional: ISA-L inflate is ~1.5x zlib's; results are identical for intact streams
    from isal import isal_zlib as _isal
except ImportError:  # pragma: no cover - depends on the environment
    _isal = None

__all__ = ["prefetched_files", "ReadAhead", "read_disk", "Chunks", "finish_columns", "gc_paused", "gunzip",
           "load_files", "finish_result", "RemoteReader", "Gunzipped"]

_SAFE_INT = 2 ** 53  # ints in [0, this] go straight into an IntegerArray; others via the frame coercer


@contextmanager
def gc_paused():
    """Pause the cyclic garbage collector for the block (restored as it was, also on error).

    The objects made meanwhile (a million raw records the frame keeps) are then handed to the
    oldest generation as they are (``gc.freeze()`` + ``gc.unfreeze()``: two list splices, no
    scan), instead of the collector's next run scanning them all as young objects.  Nothing is
    kept alive longer than its references keep it; the caller's own young objects are promoted
    with them."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


# -- reading ---------------------------------------------------------------------------------

def _isal_gunzip(disk: bytes) -> bytes | None:
    """All gzip members of ``disk`` inflated with ISA-L, or ``None`` when any member is not a
    plain intact one (the caller then uses the zlib reference reader)."""
    out: list[bytes] = []
    rest = disk
    while rest[:2] == GZIP_MAGIC:
        if len(rest) < 18 or rest[2] != 8 or rest[3] & 0xE2:  # deflate; no FHCRC, no reserved bits
            return None
        d = _isal.decompressobj(16 + 15)
        try:
            out.append(d.decompress(rest))
        except Exception:  # noqa: BLE001 - any complaint: let zlib say it in its own words
            return None
        if not d.eof:
            return None
        rest = d.unused_data
    if rest.strip(b"\x00"):  # (bytes after the stream that are not gzip: the reference reader says so)
        return None
    return b"".join(out) if len(out) != 1 else out[0]


def gunzip(path: Path, disk: bytes) -> tuple[bytes, str | None]:
    """``(decompressed bytes, problem)`` of a file's bytes exactly as
    :func:`~._cloud.read_input` gives them (bytes without the gzip magic are returned as they
    are)."""
    if disk[:2] != GZIP_MAGIC:
        return disk, None
    if _isal is not None:
        data = _isal_gunzip(disk)
        if data is not None:
            return data, None
    _size, data, problem = _cloud.read_input_bytes(disk)
    return data, problem


def _count_lines(data: bytes) -> int:
    if not data:
        return 0
    first = data.find(b"\n")  # memchr: a delivery file is one line (or one and a newline)
    if first < 0 or first == len(data) - 1:
        return 1
    n = int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == 10))
    return n + (0 if data[-1:] == b"\n" else 1)


def read_disk(path: Path) -> tuple[bytes, str]:
    """``(bytes on disk, their sha256 hex)`` of one file (run by the :class:`ReadAhead` thread:
    reading and hashing release the GIL).

    Raises:
        InputError: the file cannot be opened or read.
    """
    try:
        with open(path, "rb") as fh:
            disk = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path) from exc
    return disk, hashlib.sha256(disk).hexdigest()


class ReadAhead(threading.Thread):
    """Reads and hashes ``files`` in order (:func:`read_disk`) ahead of the parsing thread,
    handing ``(path, bytes on disk, sha256 hex)`` — or ``(path, exception, None)``, then it
    stops — to :attr:`out`.  One thread for the whole load, not a task per file: each hand-over
    of the GIL costs the parsing thread, and a file then costs only three (open, read, hash;
    gunzip and the numpy scans stay in the parsing thread for the same reason).  It stays at
    most :data:`AHEAD` files ahead (a folder of logs larger than memory is read as it is
    parsed), and stops within 0.1 s of :attr:`stop` being set."""

    AHEAD = 4

    def __init__(self, files: list[Path]):
        super().__init__(name="replaybook-read-ahead", daemon=True)
        self.files = files
        self.out: Queue = Queue(maxsize=self.AHEAD)
        self.stop = False

    def _put(self, item: tuple) -> bool:
        while not self.stop:
            try:
                self.out.put(item, timeout=0.1)
                return True
            except Full:
                continue
        return False

    def run(self) -> None:
        for path in self.files:
            if self.stop:
                return
            try:
                disk, sha = read_disk(path)
            except BaseException as exc:  # noqa: BLE001 - raised in the parsing thread, in turn
                self._put((path, exc, None))
                return
            if not self._put((path, disk, sha)):
                return


def prefetched_files(paths: str | Path | Iterable[str | Path], loader: str, inputs: list[dict],
                     quarantine: list[dict], prepare: Callable[[bytes], tuple[int, Any]] | None = None,
                     ) -> Iterator[tuple[Path, bytes, dict, Any]]:
    """:func:`~._cloud.iter_files` plus ``prepare``: ``(path, data, inputs entry, extra)`` for
    each file that holds text.  Each file is read once, and hashed from memory, by a
    :class:`ReadAhead` thread; it is gunzipped here.  ``prepare(data)``, when given, returns
    ``(lines, extra)`` for the decompressed bytes (so a loader that scans the bytes anyway
    counts the lines in the same pass); without it the lines are counted here and ``extra``
    is ``None``.

    Raises:
        InputError: a path does not exist, or a file cannot be opened or read (raised when
            that file's turn comes, as the reference reader does).
    """
    files = expand_paths(paths, accept=lambda q: not q.name.startswith("."))
    if not files:
        return
    reader = ReadAhead(files)
    reader.start()
    try:
        for _ in files:
            path, disk, sha = reader.out.get()
            if sha is None:
                raise disk
            data, problem = gunzip(path, disk)
            size = len(disk)
            del disk
            lf = _cloud.cr_line_ends(data)
            if lf is not None:
                data = lf
            lines, extra = prepare(data) if prepare is not None else (_count_lines(data), None)
            yield from _entry(path, (size, sha, data, problem, lines, extra), loader, inputs, quarantine,
                              lf is not None)
    finally:
        reader.stop = True
        reader.join()


def _entry(path: Path, read: tuple, loader: str, inputs: list[dict], quarantine: list[dict],
           cr_line_ends: bool = False):
    """:func:`~._cloud.iter_files`' bookkeeping for one file read by :func:`prefetched_files`
    (``cr_line_ends``: its CRs were read as line ends, :func:`~._cloud.cr_line_ends`)."""
    size, sha, data, problem, lines, extra = read
    info = _cloud.input_entry(path, size, data, loader, problem, sha256=sha, lines=lines)
    if cr_line_ends:
        _cloud.note_cr_line_ends(info)
    inputs.append(info)
    if problem:
        quarantine.append(quarantine_row(path, None, loader, problem))
    if not data or data.isspace():
        if not problem:
            info["skipped"], info["reason"] = True, "empty file"
        return
    if _cloud.looks_binary(data):
        quarantine.append(quarantine_row(path, None, loader, "not a text log (binary data)",
                                         offset=0, raw=data[:200]))
        return
    yield path, data, info, extra


# -- rows as columns -------------------------------------------------------------------------

class Chunks:
    """The rows of a load, one block of column lists per file, in file order.

    Every block has a list per ACCESS column except ``ts``, which holds the time *strings*
    (ISO 8601 as the reference path's rows have them) until :func:`finish_columns`.
    """

    def __init__(self) -> None:
        self.blocks: list[dict[str, list]] = []

    def add(self, block: dict[str, list] | None) -> None:
        """Append one file's block (ACCESS column name → a list, all of one length; a column
        the block lacks is all NA); ``None`` or a block of no rows adds nothing."""
        if block is None:
            return
        n = len(block["ts"])
        if n:
            for c in ACCESS.names:
                if c not in block:
                    block[c] = [None] * n
            self.blocks.append(block)

    @staticmethod
    def block_of_rows(rows: list[dict]) -> dict[str, list] | None:
        """The block of row dicts made by a reference ``_read_file`` (``ts`` still a string),
        or ``None`` for no rows."""
        return {c: [r[c] for r in rows] for c in ACCESS.names} if rows else None

    def column(self, name: str) -> list:
        """One column over all blocks."""
        if len(self.blocks) == 1:
            return self.blocks[0][name]
        out: list = []
        for b in self.blocks:
            out.extend(b[name])
        return out


def _string_array(values: list) -> pd.arrays.StringArray:
    return pd.array(_object_array(values), dtype=pd.StringDtype("python"))


def _object_array(values: list) -> np.ndarray:
    return np.fromiter(values, dtype=object, count=len(values))


def _int_column(values: list):
    """Int64 column as the reference path builds it; values outside ``[0, 2**53]`` (or not
    ints) take the frame coercer's exact route from an object column."""
    n = len(values)
    kinds = set(map(type, values))
    if kinds <= {int, type(None)}:
        if kinds == {type(None)}:
            return pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool))
        obj = np.asarray(values, dtype=object) if None in kinds or type(None) in kinds else None
        try:
            if obj is None:
                data = np.asarray(values, dtype=np.int64)
                mask = np.zeros(n, dtype=bool)
            else:
                mask = np.asarray(obj == None, dtype=bool)  # noqa: E711 - elementwise
                obj[mask] = 0
                data = obj.astype(np.int64)
        except OverflowError:
            data = None
        if data is not None and (not n or (data.min() >= 0 and data.max() <= _SAFE_INT)):
            return pd.arrays.IntegerArray(data, mask)
    return pd.Series(values, dtype="object")


def _utc(chunks: Chunks) -> pd.arrays.DatetimeArray:
    """``to_utc(chunks.column("ts")).array``, cheaper: a block whose times are all ASCII text
    of one width is converted arithmetically where it has the common ``…THH:MM:SS[.f]Z``
    shape (:func:`~._times.parse_parts`, exact where it takes a value), the rest by
    :func:`~replaybook._text.to_utc`."""
    from ._times import parse_parts

    parts: list = []
    counts: list[int] = []
    for b in chunks.blocks:
        values = b["ts"]
        counts.append(len(values))
        part: Any = values
        try:
            width = len(values[0])
            if width and (np.fromiter(map(len, values), dtype=np.int64, count=len(values)) == width).all():
                text = "".join(values)
                if text.isascii():
                    part = (width, text)
        except TypeError:  # a value that is not text: to_utc decides
            pass
        parts.append(part)
    ns, _given = parse_parts(parts, counts)
    return pd.Series(ns.view("datetime64[ns]")).dt.tz_localize("UTC").array


def finish_columns(chunks: Chunks, quarantine: list[dict], inputs: list[dict], loader: str) -> LoadResult:
    """:func:`~._cloud.finish` for rows kept as columns: same frame, quarantine and counts.

    Times are parsed with :func:`~replaybook._text.to_utc` in one call, as there; a row
    whose time does not parse is quarantined (file, line, ``raw`` as compact JSON) in row
    order after everything the files themselves quarantined.  The frame is sorted by ``ts``,
    ``source_file``, ``line_no`` (stable) and each ``inputs`` entry gets ``records``.

    Raises:
        FrameError: a value cannot take its column's dtype (as the reference path would).
    """
    n = sum(len(b["ts"]) for b in chunks.blocks)
    if not n:
        return finish_result(ACCESS.empty(), quarantine, inputs)
    ts_text = chunks.column("ts")
    ts = _utc(chunks)
    bad = np.asarray(pd.isna(ts))
    cols: dict[str, Any] = {}
    keep = None
    if bad.any():
        keep = ~bad
        source_file, line_no, raw = chunks.column("source_file"), chunks.column("line_no"), chunks.column("raw")
        by_record = _cloud.record_numbered(inputs)
        for i in np.flatnonzero(bad).tolist():
            numbered = {"numbered": "record"} if source_file[i] in by_record else {}
            quarantine.append(quarantine_row(
                source_file[i], None, loader,
                _cloud.record_error(numbered, line_no[i], f"time {ts_text[i]!r} {time_words(ts_text[i])}"), line_no=line_no[i],
                raw=_cloud.json_preview(as_dict(raw[i]))[:400] if raw[i] is not None else None))
        ts = ts[keep]
    if keep is not None and not keep.any():
        return finish_result(ACCESS.empty(), quarantine, inputs)
    idx = np.flatnonzero(keep) if keep is not None else None

    def take(values: list) -> list:
        return values if idx is None else [values[i] for i in idx.tolist()]

    files = take(chunks.column("source_file"))
    names = sorted(set(files))
    rank = {f: i for i, f in enumerate(names)}
    file_codes = np.fromiter(map(rank.__getitem__, files), dtype=np.int64, count=len(files))
    line_no = take(chunks.column("line_no"))
    # the reference's frame.sort_values(["ts", "source_file", "line_no"], kind="stable"):
    # np.lexsort is a stable sort on the last key first
    order = np.lexsort((np.asarray(line_no, dtype=np.int64), file_codes, np.asarray(ts.asi8)))
    if (order == np.arange(len(order))).all():
        order = None
    for c in ACCESS.columns:
        values = ts if c.name == "ts" else take(chunks.column(c.name))
        if c.name == "ts":
            arr = ts
        elif c.dtype == "string":
            arr = _string_array(values)
        elif c.dtype == "Int64":
            arr = _int_column(values)
        elif c.dtype == "object":
            arr = _object_array(values)
        else:  # pragma: no cover - ACCESS has no other dtypes today
            arr = pd.Series(values, dtype="object")
        if order is not None:
            arr = arr.take(order) if not isinstance(arr, pd.Series) else arr.iloc[order].reset_index(drop=True)
        cols[c.name] = arr
    return finish_result(ACCESS.build(cols), quarantine, inputs, file_codes, names)


def finish_result(frame: pd.DataFrame, quarantine: list[dict], inputs: list[dict],
                  file_codes: np.ndarray | None = None, names: Sequence[str] = ()) -> LoadResult:
    """The :class:`~replaybook.frames.LoadResult` of a fast cloud load: each ``inputs`` entry
    gets ``records``, its rows counted from ``file_codes`` (each row's file, an index into
    ``names``; no codes: no rows, every count 0), and the quarantine's raw text is redacted as
    the reference path redacts it."""
    counts = np.bincount(file_codes, minlength=len(names)) if file_codes is not None else None
    rank = {f: i for i, f in enumerate(names)}
    for info in inputs:
        i = rank.get(info["path"])
        info["records"] = int(counts[i]) if counts is not None and i is not None else 0
    for q in quarantine:
        if isinstance(q.get("raw"), str):
            q["raw"] = _cloud.redact_text(q["raw"])
    return LoadResult(frame=frame, quarantine=QUARANTINE.build(quarantine), inputs=inputs)


class Gunzipped:
    """A gzip file's text, held as its bytes on disk and inflated on first use (then kept):
    ``text[a:b]`` is ``gunzip(path, disk)[0][a:b]``.  A load's helper ships this instead of
    the inflated text (a tenth of the bytes to hand over and to keep in memory); ``raw`` cells
    slice it (:class:`~._record.SliceRecord`).  Only made for a stream the helper inflated
    whole and without a problem, so inflating it again gives the same bytes."""

    __slots__ = ("path", "disk", "_text")

    def __init__(self, path: Path, disk: bytes):
        self.path = path
        self.disk = disk
        self._text: bytes | None = None

    def __getitem__(self, key):
        text = self._text
        if text is None:
            text = self._text = gunzip(self.path, self.disk)[0]
        return text[key]

    def __reduce__(self):  # pickled (to the calling process) as the bytes on disk only
        return (Gunzipped, (self.path, self.disk))


@dataclass(frozen=True)
class RemoteReader:
    """How helper processes read a format's ordinary files for :func:`load_files`.

    Attributes:
        pack: ``pack(path, data, info, extra, shipped) -> (columns, source)`` in a helper
            (``info``: the file's ``inputs`` entry, which it may add to; ``extra``: what the
            load's ``prepare`` returned; ``shipped``: what to hand over in place of ``data``,
            a :class:`Gunzipped` for a gzip file): the file's rows as column lists (name →
            list, all of one length) plus whatever (picklable) the calling process needs to
            make the ``raw`` cells (the text and the records' places in it), or ``None`` when
            the calling process must read the file (its usual way: a file with anything to
            quarantine is always left to it).
        unpack: ``unpack(path, columns, source) -> block`` in the calling process: the block
            the format's fast reader returns for that file (see :class:`Chunks`).
        strings: the columns that hold only ``str`` or ``None`` (sent as Arrow strings; any
            other column is sent as a pickled list).
    """

    pack: Callable[[Path, bytes, dict, Any, Any], tuple[dict[str, list], Any] | None]
    unpack: Callable[[Path, dict[str, list], Any], dict[str, list]]
    strings: tuple[str, ...]


def load_files(paths: str | Path | Iterable[str | Path], loader: str,
               read_file: Callable[[Path, bytes, dict, list[dict], Any], dict | None],
               finish: Callable[[list[dict], list[dict], list[dict]], LoadResult],
               remote: RemoteReader | None = None,
               prepare: Callable[[bytes], tuple[int, Any]] | None = None) -> LoadResult:
    """The loader shape shared by the CloudTrail and S3 fast paths: each file is read once
    (:func:`prefetched_files`, with ``prepare``); ``read_file(path, data, inputs entry,
    quarantine, extra)`` returns its block (or ``None``: nothing to add), and
    ``finish(blocks, quarantine, inputs)`` makes the result of all blocks, in file order.

    With ``remote``, a load of at least :data:`~._parallel.MIN_BYTES` on disk is shared with
    helper processes (:mod:`._parallel`): they read chunks of files from the back with
    ``remote.pack``, this process reads from the front; a file a helper declines is read here
    in its turn.  The blocks, inputs entries and quarantine rows are the same, in the same
    order.

    Raises:
        InputError: a path does not exist, or a file cannot be opened or read.
    """
    files = expand_paths(paths, accept=lambda q: not q.name.startswith("."))
    quarantine: list[dict] = []
    inputs: list[dict] = []
    blocks: list[dict] = []

    def read_here(group: list[Path]) -> tuple[list[dict], list[dict], list[dict]]:
        found: list[dict] = []
        put_aside: list[dict] = []
        made: list[dict] = []
        for path, data, info, extra in prefetched_files(group, loader, found, put_aside, prepare):
            block = read_file(path, data, info, put_aside, extra)
            if block is not None:
                made.append(block)
        return found, put_aside, made

    workers = _parallel.helpers() if remote is not None else 0
    groups = _parallel.groups(files, workers) if workers else [files]
    with gc_paused():
        for kind, value in _parallel.front_back(
                groups, read_here, lambda group: _pack_group(group, loader, remote, prepare), workers,
                lambda packed: _settle_group(packed, remote)):
            if kind == "remote":
                value = _unpack_group(value, read_here)
            found, put_aside, made = value
            inputs.extend(found)
            quarantine.extend(put_aside)
            blocks.extend(made)
        return finish(blocks, quarantine, inputs)


def _pack_group(group: list[Path], loader: str, remote: RemoteReader,
                prepare: Callable[[bytes], tuple[int, Any]] | None = None) -> tuple:
    """In a helper: ``(group, entries, counts, columns, sources)`` for ``group`` — per file its
    ``inputs`` entry (``None``: declined, to be read by the calling process) and row count,
    the accepted files' columns concatenated (Arrow strings where
    :attr:`RemoteReader.strings` says, else lists), and per accepted file its ``source``."""
    import pyarrow as pa

    entries: list[dict | None] = []
    counts: list[int] = []
    cols: dict[str, list] = {}
    sources: list[Any] = []
    for path in group:
        try:
            disk, sha = read_disk(path)
        except InputError:
            entries.append(None)
            counts.append(0)
            continue
        data, problem = gunzip(path, disk)
        found = None
        # (a file whose lines end in CR only is left to the calling process, which reads it so)
        if not problem and data and not data.isspace() and not _cloud.looks_binary(data) \
                and _cloud.cr_line_ends(data) is None:
            lines, extra = prepare(data) if prepare is not None else (_count_lines(data), None)
            info = _cloud.input_entry(path, len(disk), data, loader, None, sha256=sha, lines=lines)
            found = remote.pack(path, data, info, extra, Gunzipped(path, disk) if data is not disk else data)
        if found is None:
            entries.append(None)
            counts.append(0)
            continue
        columns, source = found
        n = len(next(iter(columns.values()))) if columns else 0
        entries.append(info)
        counts.append(n)
        for k, v in columns.items():
            cols.setdefault(k, []).extend(v)
        sources.append(source)
    packed: dict[str, Any] = {}
    for k, v in cols.items():
        if k in remote.strings:
            try:
                packed[k] = pa.array(v, type=pa.string())
                continue
            except (pa.ArrowException, TypeError, ValueError, UnicodeError):
                pass
        packed[k] = v
    return group, entries, counts, packed, sources


def _settle_group(value: tuple, remote: RemoteReader) -> tuple:
    """In the calling process, as soon as a helper's :func:`_pack_group` result is found (any
    order): the accepted files' blocks made; a declined file is left as ``None`` for
    :func:`_unpack_group` to read in its turn."""
    paths, entries, counts, packed, sources = value
    columns = {k: (v.to_numpy(zero_copy_only=False).tolist() if not isinstance(v, list) else v)
               for k, v in packed.items()}
    blocks: list[dict | None] = []
    at = 0
    taken = iter(sources)
    for path, info, n in zip(paths, entries, counts):
        if info is None:
            blocks.append(None)
            continue
        blocks.append(remote.unpack(path, {k: v[at:at + n] for k, v in columns.items()}, next(taken)))
        at += n
    return paths, entries, blocks


def _unpack_group(settled: tuple, read_here: Callable) -> tuple[list[dict], list[dict], list[dict]]:
    """In the calling process, in the group's turn: a settled helper result
    (:func:`_settle_group`) as ``read_here`` would have returned it — a declined file is read
    here, in its place."""
    paths, entries, blocks = settled
    found: list[dict] = []
    put_aside: list[dict] = []
    out: list[dict] = []
    for path, info, block in zip(paths, entries, blocks):
        if info is None:
            more = read_here([path])
            found.extend(more[0])
            put_aside.extend(more[1])
            out.extend(more[2])
            continue
        found.append(info)
        out.append(block)
    return found, put_aside, out
