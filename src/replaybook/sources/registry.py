"""The source registry: one entry per input format, registered by the module that reads it.

A source module calls :func:`register` at import time with a :class:`Source`: its name, the
canonical frame it yields, a ``sniff`` function and a ``load`` function.  ``sniff`` looks at a
sample of a file's (decompressed) bytes — many lines, never just the first — and returns a
confidence between 0 and 1.  Callers pick a loader by name (:func:`get`) or by content
(:func:`sniff_file`); a file whose content none recognises may still be claimed by its
name, as damaged evidence of the source whose delivery path it sits at (``claims_name``).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable

from ..errors import InputError
from ..frames import LoadResult

__all__ = ["Source", "register", "get", "names", "did_you_mean", "sniff_file", "side_file_of", "SNIFF_BYTES",
           "export_verdicts", "import_verdicts", "VERDICTS_ENV", "prefetch", "claimed_by_name", "NAME_CLAIM"]

#: How much of a file sniffing reads (decompressed), in bytes.
SNIFF_BYTES = 256 * 1024


@dataclass(frozen=True)
class Source:
    """A registered input format.

    Attributes:
        name: short id used on the CLI and in manifests (``claude-code``, ``door``).
        frame: which canonical frame ``load`` yields (``steps`` or ``calls``).
        sniff: ``sniff(sample: bytes) -> float`` confidence in [0, 1] from a file's first bytes
            (:data:`SNIFF_BYTES` of them, decompressed).  A sample as long as that may cut its
            last line; a shorter one is the whole file, so its last line, newline or not, is
            whole (:func:`sniff_file` cuts back to a line end a short sample that is not).
        load: ``load(paths: Iterable[str | Path]) -> LoadResult``; folders are walked.
        doc: where the format comes from (spec, client versions seen).
        side_file: ``side_file(path) -> bool``: a file this source reads *beside* its main files
            (Claude Code's ``agent-<id>.meta.json``); :func:`replaybook.load` reports such files
            as read with their transcript instead of as unrecognised.
        claims_name: ``claims_name(path) -> bool``: ``path`` is where this source's logs are
            delivered (CloudTrail's ``AWSLogs/<account>/CloudTrail/<region>/YYYY/MM/DD/
            <account>_CloudTrail_<region>_….json.gz``; a GCP audit sink's
            ``cloudaudit.googleapis.com/<log>/YYYY/MM/DD/…_S0.json``; an Azure Storage archive's
            ``insights-logs-storageread/…/PT1H.json``), so a file there is its evidence whatever
            its bytes hold.  Only asked when no source recognises the content
            (:func:`sniff_file`): a corrupt gzip stream, text that is not JSON, a delivery whose
            ``Records`` is not a list then reaches this source's loader, which quarantines it as
            damaged, instead of being listed as "not evidence".
    """

    name: str
    frame: str
    sniff: Callable[[bytes], float]
    load: Callable[[Iterable[str | Path]], LoadResult]
    doc: str = ""
    side_file: Callable[[Path], bool] | None = None
    claims_name: Callable[[Path], bool] | None = None


#: The confidence :func:`sniff_file` gives a source that claims a file by its name alone
#: (:attr:`Source.claims_name`) when no source recognises its content: as sure as
#: ``replaybook.loading.MIN_CONFIDENCE`` requires, and below any content verdict that claims it.
NAME_CLAIM = 0.5

_REGISTRY: dict[str, Source] = {}


def register(source: Source) -> Source:
    """Add ``source`` to the registry (a later registration of the same name replaces it).

    Its ``sniff`` and ``load`` run with room for deep nesting (:func:`replaybook._json.nesting_room`):
    a value nested as deep as a JSON parser accepts must give a row or a quarantine row, never a
    ``RecursionError`` out of a recursive walk."""
    from .._json import nesting_room

    source = replace(source, sniff=_judged(nesting_room(source.sniff)), load=nesting_room(source.load))
    _REGISTRY[source.name] = source
    return source


def _judged(sniff: Callable[[bytes], float]) -> Callable[[bytes], float]:
    """``sniff`` that never stops the load: every file is sniffed by every source, so one
    sniffer that cannot judge a sample (a record of shapes it never met: ``"type": {…}``) must
    not fail the load of a file it does not read anyway.  Such a sample scores 0.0: that source
    does not recognise it.  A sample starting with a UTF-8 byte-order mark is judged without it
    (the loaders read past it; a full sample then ends at a line end, as :func:`sniff_file`
    sees to it)."""
    import functools

    @functools.wraps(sniff)
    def run(sample: bytes) -> float:
        if sample[:3] == b"\xef\xbb\xbf":
            sample = _to_line_end(sample, len(sample) < SNIFF_BYTES)
        try:
            return sniff(sample)
        except Exception:  # noqa: BLE001 - a sniffer's bug is "not recognised", never a failed load
            return 0.0

    return run


def get(name: str) -> Source:
    """The source registered as ``name``.

    Raises:
        InputError: no such source; the message lists the known names.
    """
    _load_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise InputError(f"unknown source format {name!r}{did_you_mean(name)}; known: {', '.join(names())}") from None


def did_you_mean(name: str) -> str:
    """`` (did you mean 'claude-code'?)`` for the registered name nearest ``name`` (``_`` read as
    ``-``, case ignored), or ``""`` when none is near."""
    import difflib

    _load_builtin()
    want = name.strip().lower().replace("_", "-")
    if want in _REGISTRY:
        return f" (did you mean {want!r}?)"
    near = difflib.get_close_matches(want, list(_REGISTRY), n=1, cutoff=0.6)
    return f" (did you mean {near[0]!r}?)" if near else ""


def names() -> list[str]:
    """Registered source names, sorted."""
    _load_builtin()
    return sorted(_REGISTRY)


def claimed_by_name(path: str | Path, judges: Iterable[Source] | None = None) -> Source | None:
    """The first of ``judges`` (default: every registered source) whose ``claims_name`` claims
    ``path``: a file at that source's delivery path (:attr:`Source.claims_name`)."""
    _load_builtin()
    p = Path(path)
    for src in (_REGISTRY.values() if judges is None else judges):
        if src.claims_name is not None:
            try:
                if src.claims_name(p):
                    return src
            except Exception:  # noqa: BLE001 - a name that cannot be judged is claimed by no one
                continue
    return None


def side_file_of(path: str | Path) -> Source | None:
    """The source that reads ``path`` as a side file of its main files, if any."""
    _load_builtin()
    p = Path(path)
    for src in _REGISTRY.values():
        if src.side_file is not None and src.side_file(p):
            return src
    return None


#: (BLAKE2b of the bytes read, all sources?) → (the sources that judged them, best or None,
#: score): a sample is judged once per process (see :func:`sniff_file`); a verdict stands only
#: while the same source objects are registered
_SNIFFED: "OrderedDict[tuple, tuple[tuple, Source | None, float]]" = OrderedDict()
_SNIFFED_MAX = 100_000


def sniff_file(path: str | Path, only: Source | None = None) -> tuple[Source | None, float]:
    """Best-matching source for one file by content, with its confidence (``(None, 0.0)`` if
    none); with ``only``, that source's own confidence in the file.

    The verdict is remembered by the digest of the bytes sniffed (sniffers judge nothing else):
    ``replaybook report`` checks every file's list before it loads, and the load would otherwise
    sniff each of an incident's files twice.

    A file whose content no source recognises (below :data:`NAME_CLAIM`) but that sits at a
    source's delivery path (:func:`claimed_by_name`: a CloudTrail delivery file whose gzip
    stream is corrupt) is that source's, at :data:`NAME_CLAIM`: its loader reads what it can
    and quarantines the rest as damaged evidence of that kind.

    Raises:
        OSError: the file cannot be opened or read.
    """
    _load_builtin()
    with open(path, "rb") as fh:
        head = fh.read(SNIFF_BYTES)
    judges = tuple(_REGISTRY.values()) if only is None else (only,)
    key = (hashlib.blake2b(head, digest_size=20).digest(), only is None)
    known = _SNIFFED.get(key)
    if known is not None and len(known[0]) == len(judges) and all(a is b for a, b in zip(known[0], judges)):
        _SNIFFED.move_to_end(key)
        best, score = known[1], known[2]
    else:
        best, score = _judge(head, judges)
        _SNIFFED[key] = (judges, best, score)
        if len(_SNIFFED) > _SNIFFED_MAX:
            _SNIFFED.popitem(last=False)
    if score < NAME_CLAIM:  # (the content names no source: its path may; the verdict above is the content's alone)
        by_name = claimed_by_name(path, judges)
        if by_name is not None:
            return by_name, NAME_CLAIM
    return best, score


#: below this many files not judged yet, :func:`prefetch` judges them in this process alone
PREFETCH_MIN = 512


def prefetch(paths: Iterable[str | Path]) -> None:
    """Judge the files among ``paths`` whose first bytes were not judged yet, sharing the work
    with forked helper processes (:mod:`._parallel`: none for fewer than :data:`PREFETCH_MIN`
    files, or where helpers are off), so that :func:`sniff_file` answers them from memory.
    The verdicts are those :func:`sniff_file` reaches; files that cannot be read are left for
    it to say so."""
    from . import _parallel

    _load_builtin()
    judges = tuple(_REGISTRY.values())
    todo = []
    for p in paths:
        try:
            with open(p, "rb") as fh:
                key = (hashlib.blake2b(fh.read(SNIFF_BYTES), digest_size=20).digest(), True)
        except OSError:
            continue
        known = _SNIFFED.get(key)
        if known is None or len(known[0]) != len(judges) or any(a is not b for a, b in zip(known[0], judges)):
            todo.append(p)
    workers = _parallel.helpers() if len(todo) >= PREFETCH_MIN else 0
    if not workers:
        return
    n = (workers + 1) * 16
    chunks = [todo[i * len(todo) // n:(i + 1) * len(todo) // n] for i in range(n)]

    def local(chunk) -> bool:
        for f in chunk:
            try:
                sniff_file(f)
            except OSError:
                pass
        return True

    def remote(chunk) -> list:
        out = []
        for f in chunk:
            try:
                with open(f, "rb") as fh:
                    head = fh.read(SNIFF_BYTES)
            except OSError:
                continue
            best, score = _judge(head, judges)
            out.append((hashlib.blake2b(head, digest_size=20).digest(), None if best is None else best.name, score))
        return out

    def settle(verdicts: list) -> bool:
        for digest, name, score in verdicts:
            if name is None or name in _REGISTRY:
                _SNIFFED[(digest, True)] = (judges, None if name is None else _REGISTRY[name], score)
        return True

    for _ in _parallel.front_back(chunks, local, remote, workers, settle):
        pass


#: the magic numbers of archive and compression formats no source reads (gzip is read): where
#: each sits, and what it is
_ARCHIVES = ((257, b"ustar\x0000", "a tar archive"), (257, b"ustar  \x00", "a tar archive"),
             (0, b"PK\x03\x04", "a zip archive"),
             (0, b"PK\x05\x06", "a zip archive"), (0, b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
             (0, b"\xfd7zXZ\x00", "an xz-compressed file"), (0, b"BZh", "a bzip2-compressed file"),
             (0, b"\x28\xb5\x2f\xfd", "a zstd-compressed file"))


def archive_kind(head: bytes) -> str | None:
    """What archive or compressed file ``head`` (a file's first bytes, gunzipped when it is
    gzip) starts: ``"a tar archive"`` (POSIX or GNU ``ustar`` magic at byte 257 and a header
    whose checksum holds, or an old V7 header: :func:`_old_tar_header`), zip, 7-Zip, xz, bzip2 or zstd; None for anything else.  A tar of
    transcripts is mostly their text, so without this it sniffed as one transcript holding every
    member (its headers as damaged lines)."""
    for at, magic, kind in _ARCHIVES:
        if head[at:at + len(magic)] == magic:
            if magic == b"BZh" and not head[3:4].isdigit():  # (BZh1…BZh9: text may start "BZh")
                continue
            if at == 257 and not _tar_checksum_ok(head):  # (text that happens to hold "ustar" there)
                continue
            return kind
    if _old_tar_header(head):
        return "a tar archive"
    return None


_OCTAL_FIELD = re.compile(rb"[ 0-7]*[ \x00]*\Z")


def _old_tar_header(head: bytes) -> bool:
    """Whether ``head`` starts with a tar header without the ``ustar`` magic (Unix V7 tar, which
    some tools still write): a member name, octal mode, owner, size and time fields (digits,
    blanks and NULs only: no text has that at bytes 100–147), and a checksum that holds."""
    if len(head) < 512 or head[:1] in (b"", b"\x00"):
        return False
    if any(not _OCTAL_FIELD.match(head[a:b]) for a, b in ((100, 108), (108, 116), (116, 124), (124, 136),
                                                          (136, 148))):
        return False
    return _tar_checksum_ok(head)


def _tar_checksum_ok(head: bytes) -> bool:
    """Whether ``head``'s first 512 bytes are a tar header: its checksum field (bytes 148–155,
    octal) equals the sum of the header's bytes with that field read as spaces (POSIX ustar)."""
    if len(head) < 512:
        return False
    field = head[148:156].replace(b"\x00", b" ").strip()
    try:
        want = int(field, 8)
    except ValueError:
        return False
    return want == sum(head[:148]) + 8 * 32 + sum(head[156:512])


def sample_of(head: bytes) -> bytes:
    """What a file's first bytes (:data:`SNIFF_BYTES` of them) hold: gunzipped as far as they go
    when they start with the gzip magic — a truncated file (a copy cut short, a delivery still
    being written) still shows what it holds, and its loader says it is truncated; a file of
    several gzip members (concatenated deliveries, an empty first member) is read on into the
    next member, as gzip itself reads it — else as they are."""
    return _sample(head)[0]


def _sample(head: bytes) -> tuple[bytes, bool]:
    """``(sample, whole)``: :func:`sample_of` ``head``, and whether that is the whole file's
    content — ``head`` is shorter than :data:`SNIFF_BYTES` (the file ended) and, for gzip, its
    stream ended within it, with room to spare."""
    from .._jsonl import GZIP_MAGIC

    whole = len(head) < SNIFF_BYTES
    if head[:2] != GZIP_MAGIC:
        return head, whole
    import zlib

    out, rest = b"", head
    try:
        while rest[:2] == GZIP_MAGIC and len(out) < SNIFF_BYTES:
            d = zlib.decompressobj(wbits=31)
            out += d.decompress(rest, SNIFF_BYTES - len(out))
            if not d.eof:
                whole = False  # (cut short, or more than the sample holds)
                break
            rest = d.unused_data
    except zlib.error:
        whole = False
    return out, whole and len(out) < SNIFF_BYTES


def _to_line_end(sample: bytes, whole: bool) -> bytes:
    """``sample`` as sniffers judge it: without a leading UTF-8 byte-order mark and — when it is
    not the whole file yet shorter than :data:`SNIFF_BYTES` (a BOM dropped from a full sample, a
    gzip stream cut short or that inflates to less than it reads) — cut back to its last line
    end.  A sample shorter than :data:`SNIFF_BYTES` is then the whole file, or ends with a whole
    line: what the sniffers take it for when they count an unterminated last line
    (:func:`replaybook._jsonl.whole_lines`, ``_cloud.sniff_lines``)."""
    if sample[:3] == b"\xef\xbb\xbf":
        sample = sample[3:]
    if not whole and len(sample) < SNIFF_BYTES and not sample.endswith(b"\n"):
        cut = sample.rfind(b"\n")
        if cut >= 0:
            sample = sample[:cut + 1]
    return sample


def _judge(head: bytes, judges: tuple) -> tuple[Source | None, float]:
    """The best of ``judges`` for a file whose first bytes (:data:`SNIFF_BYTES`) are ``head``."""
    from .._jsonl import sniff_memo

    head, whole = _sample(head)
    if archive_kind(head):  # (its members' text would sniff as one file of the members' format)
        return None, 0.0
    head = _to_line_end(head, whole)  # (every sniffer judges past a BOM: stripped once)
    best, score = None, 0.0
    with sniff_memo():  # each line of the sample parsed once, not once per source
        for src in judges:
            s = src.sniff(head)
            if s > score:
                best, score = src, s
    return best, score


_LOADED = False


def _load_builtin() -> None:
    """Import every module of this package once; each registers its source on import."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    import importlib
    import pkgutil

    from .. import sources

    for mod in pkgutil.iter_modules(sources.__path__):
        if not mod.name.startswith("_") and mod.name != "registry":
            importlib.import_module(f"{sources.__name__}.{mod.name}")
    given = os.environ.get(VERDICTS_ENV)
    if given:
        import_verdicts(given)


#: names a file of verdicts (:func:`export_verdicts`) that this process takes on its first sniff:
#: ``replaybook report`` sniffs every file to check the manifest's lists, and its kernel would
#: otherwise sniff them all again
VERDICTS_ENV = "REPLAYBOOK_SNIFF_VERDICTS"


def export_verdicts(path: str | Path) -> int:
    """Write the verdicts this process reached with every registered source (not those asked
    of one source) to ``path`` as JSON: ``{"sources": [names], "verdicts": [[BLAKE2b hex of the
    bytes judged, source name or null, score], ...]}``.  Returns how many.

    Raises:
        OSError: ``path`` cannot be written.
    """
    import json

    _load_builtin()
    judges = tuple(_REGISTRY.values())
    rows = [[k[0].hex(), None if v[1] is None else v[1].name, v[2]] for k, v in _SNIFFED.items()
            if k[1] and len(v[0]) == len(judges) and all(a is b for a, b in zip(v[0], judges))]
    Path(path).write_text(json.dumps({"sources": [s.name for s in judges], "verdicts": rows}), "utf-8")
    return len(rows)


def import_verdicts(path: str | Path) -> int:
    """Take the verdicts :func:`export_verdicts` wrote (by the digest of the bytes judged, so a
    file changed since is judged afresh), when they were reached by sources of the same names,
    in the same order, as this process has; otherwise none.  Returns how many were taken.  An
    unreadable or malformed file is ignored: every file is then judged here."""
    import json

    try:
        doc = json.loads(Path(path).read_text("utf-8"))
        judges = tuple(_REGISTRY.values())
        if doc.get("sources") != [s.name for s in judges]:
            return 0
        taken = 0
        for digest, name, score in doc["verdicts"]:
            if name is not None and name not in _REGISTRY:
                continue
            _SNIFFED[(bytes.fromhex(digest), True)] = (judges, None if name is None else _REGISTRY[name],
                                                       float(score))
            taken += 1
        return taken
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return 0
