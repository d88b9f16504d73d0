"""An incident: a manifest (``incident.yaml``) naming the evidence, loaded into frames.

Example ``incident.yaml`` (paths relative to its folder; globs and folders allowed)::

    title: Analyst agent reported a wrong average mpg
    transcripts:
      - transcripts/                        # sniffed by content: Claude Code, Codex, Gemini, OTel
      - {path: exports/spans.json, format: otel}   # or name the format
    door:
      - door/                               # the door's log root: <agent>/<session>.jsonl
      - {path: gw/audit.log, format: mcpjungle}    # a third-party gateway's log
    access:                                 # optional: the cloud's own access logs
      - cloud/AWSLogs/                      # sniffed by content (CloudTrail, S3, GCP, Azure)
    storage_map: {"demo/": "s3://acme-data/demo/"}
    principals: {analyst: "arn:aws:sts::123456789012:assumed-role/door-reader/*"}
    # storage_clock_ahead_s: -6.0                 # the storage logs' clock 6 s behind the door's
    # storage_clock_ahead_s: {reviewer: -40.2}    # …or per door agent (a door on a host of its own)
    data_root: data/                        # what the door's `object` paths point into
    window_s: 60

The manifest's shape is the JSON Schema ``replaybook/schemas/incident.v1.json``.
"""

from __future__ import annotations

import errno
import math
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from . import _yaml
from ._schema import first_error_at, package_schema
from .errors import InputError, ManifestError
from .frames import ACCESS, CALLS, STEPS, LoadResult
from .join import DEFAULT_MAX_OFFSET_S, DEFAULT_MIN_AGREED, DEFAULT_WINDOW_S, JoinResult, join_sessions
from .sources import registry

__all__ = ["Incident", "load_manifest"]

#: manifest list and what its files are, per frame
_MANIFEST_KEY = {"steps": ("transcripts", "transcripts"), "calls": ("door", "door or gateway call logs"),
                 "access": ("access", "cloud access logs")}
_SPEC = {"steps": STEPS, "calls": CALLS, "access": ACCESS}


def _elsewhere_message(key: str, what: str, found: list[str]) -> str:
    """The error for files listed under ``key`` whose content belongs to another list."""
    return (f"{key}: files that are not {what} ({'; '.join(found[:5])}); move them to the right "
            "list or give {path, format}")


def _line_at(raw: bytes, where: list) -> int | None:
    """The 1-based manifest line of the node at ``where`` (keys and list indexes from the top,
    as a schema error's path gives them), or of the deepest node on the way to it
    (:func:`replaybook._yaml.line_at`)."""
    return _yaml.line_at(raw, where) if where else None


def load_manifest(path: str | Path) -> dict:
    """Read and validate an ``incident.yaml``.

    Args:
        path: the manifest file, or the folder holding ``incident.yaml``.

    Returns:
        The manifest as a dict, with defaults filled in.

    Raises:
        ManifestError: the file is missing, not YAML, or does not match the schema (the message
            names the offending field).
    """
    p = Path(path)
    if p.is_dir():
        p = p / "incident.yaml"
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ManifestError(f"cannot read incident manifest: {exc.strerror or exc}", p) from exc
    try:
        data = _yaml.load(raw)  # YAML's own reading of the bytes: UTF-8, or UTF-16 with its BOM
    except _yaml.DuplicateKeyError as exc:
        raise ManifestError(exc.problem, p, exc.problem_mark.line + 1) from None
    except yaml.reader.ReaderError as exc:
        raise ManifestError("not UTF-8 text (a manifest is UTF-8, or UTF-16 with a byte-order mark): "
                            f"byte {exc.position} ({exc.reason})", p) from None
    except yaml.YAMLError as exc:
        _not_a_manifest(p)
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        raise ManifestError(f"not valid YAML: {_yaml.describe(exc)}", p, None if line is None else line + 1) from exc
    if not isinstance(data, dict):
        _not_a_manifest(p)
    if data is None:
        raise ManifestError("the manifest is empty (it needs title: and transcripts:; door: is optional)", p)
    schema = package_schema("incident.v1.json")
    for key in _SECONDS_KEYS if isinstance(data, dict) else ():  # (e-notation: YAML 1.1 takes 1e4 as text)
        if key in data:
            data[key] = _e_number(data[key])
    if isinstance(data, dict):  # a misspelt key first: the schema would only say what is missing
        import difflib

        for key in data:
            if isinstance(key, str) and key not in schema["properties"]:
                near = difflib.get_close_matches(key, list(schema["properties"]), n=1)
                raise ManifestError(f"unknown key {key!r}" + (f" (did you mean {near[0]!r}?)" if near else
                                                             f"; a manifest takes {', '.join(schema['properties'])}"),
                                    p, _line_of_key(raw, key))
    for key in ("storage_map", "principals", "storage_clock_ahead_s", "clock_offsets"):
        v = data.get(key) if isinstance(data, dict) else None  # (YAML reads `2024:`, `null:` as a number, None)
        bad = next((k for k in v if not isinstance(k, str)), False) if isinstance(v, dict) else False
        if bad is not False:
            shown = "null" if bad is None else str(bad).lower() if isinstance(bad, bool) else str(bad)
            raise ManifestError(f"invalid manifest at {key}: the key {shown} is not text; quote it (\"{shown}\": …)",
                                p, _line_at(raw, [key, bad]) or _line_of_key(raw, key))
    found = first_error_at(schema, data)
    if found is not None:
        where, message = found
        if len(where) == 1 and where[0] in _LIST_KEYS and isinstance(data[where[0]], str):
            # (`transcripts: transcripts/`: one entry written without the list around it)
            message += f"; write it as a list: {where[0]}: [{data[where[0]]}]"
        raise ManifestError(f"invalid manifest at {'/'.join(map(str, where)) or '(top level)'}: {message}",
                            p, _line_at(raw, where) if where else None)
    for key in ("window_s", "max_offset_s", "storage_clock_ahead_s"):  # YAML's .nan passes every bound a schema can set
        v = data.get(key)
        for at, x in (v.items() if isinstance(v, dict) else [(None, v)]):
            if isinstance(x, float) and not math.isfinite(x):
                raise ManifestError(f"invalid manifest at {key}{'' if at is None else '/' + str(at)}: {x} is not a "
                                    "number of seconds", p, _line_of_key(raw, key))
    for tid, v in (data.get("clock_offsets") or {}).items():
        if isinstance(v, float) and not math.isfinite(v):
            raise ManifestError(f"invalid manifest at clock_offsets/{tid}: {v} is not a number of seconds", p,
                                _line_of_key(raw, "clock_offsets"))
    known = registry.names()
    for key, value in data.items():  # a misspelt {path, format}: said here, with its line
        for item in value if isinstance(value, list) else ():
            fmt = item.get("format") if isinstance(item, dict) else None
            if isinstance(fmt, str) and fmt not in known:
                raise ManifestError(f"{key}: unknown format {fmt!r}{registry.did_you_mean(fmt)} "
                                    "(`replaybook sources` lists every format)", p, _line_of_value(raw, key, fmt))
            frame = next((k for k, (list_key, _) in _MANIFEST_KEY.items() if list_key == key), None)
            src = registry.get(fmt) if isinstance(fmt, str) and frame is not None else None
            if src is not None and src.frame != frame:  # a format of another list: said here, with its line
                right = _MANIFEST_KEY.get(src.frame)
                raise ManifestError(
                    f"{key}: format {fmt!r} reads {right[1] if right else src.frame}, not {_MANIFEST_KEY[frame][1]}"
                    + (f": move the entry under {right[0]}:, or name a format of {_MANIFEST_KEY[frame][1]} "
                       f"(`replaybook sources` lists them by frame)" if right else ""),
                    p, _line_of_value(raw, key, fmt))
    data.setdefault("window_s", DEFAULT_WINDOW_S)
    data.setdefault("min_agreed", DEFAULT_MIN_AGREED)
    data.setdefault("max_offset_s", DEFAULT_MAX_OFFSET_S)
    return data


def _not_a_manifest(p: Path) -> None:
    """Raise ManifestError naming what ``p`` is when a source reads it (a transcript or log given
    where the manifest goes); return when none does."""
    try:
        src, conf = registry.sniff_file(p)
    except OSError:
        return
    from .loading import MIN_CONFIDENCE

    if src is not None and conf >= MIN_CONFIDENCE:
        raise ManifestError(f"this is a {src.name} file ({src.frame}), not an incident manifest: name it under "
                            f"{_MANIFEST_KEY[src.frame][0]}: in an incident.yaml, or read it with "
                            f"`replaybook load {src.frame} {p.name}`", p)


def _line_of_value(raw: bytes, key: str, value: str) -> int | None:
    """The 1-based manifest line of the first scalar ``value`` under top-level ``key``."""
    try:
        node = yaml.compose(raw)
    except yaml.YAMLError:
        return None
    for k, v in getattr(node, "value", []) or []:
        if getattr(k, "value", None) != key:
            continue
        stack = [v]
        while stack:
            n = stack.pop(0)
            if isinstance(n, yaml.ScalarNode) and n.value == value:
                return n.start_mark.line + 1
            if isinstance(n, yaml.SequenceNode):
                stack.extend(n.value)
            elif isinstance(n, yaml.MappingNode):
                stack.extend(x for pair in n.value for x in pair)
    return None


def _line_of_key(raw: bytes, key: str) -> int | None:
    """The 1-based line of the manifest where top-level ``key`` is written, if YAML can say."""
    try:
        node = yaml.compose(raw)
    except yaml.YAMLError:
        return None
    for k, _v in getattr(node, "value", []) or []:
        if getattr(k, "value", None) == key:
            return k.start_mark.line + 1
    return None


def _unlookable(path) -> str | None:
    """Why the system cannot look ``path`` up — a NUL character in it, a name longer than the
    file system allows, a folder on the way that may not be searched — or ``None`` when it can
    (whether or not anything is there).  ``Path.exists()`` and its kin raise on these
    (``ValueError``, ``OSError``), which had ended a command with an internal error."""
    for look in (os.lstat, os.stat):
        try:
            look(path)
        except ValueError:
            return "a path cannot hold a NUL character"
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
                return exc.strerror or str(exc)
    return None


def _is_glob(base: Path, pattern: str) -> bool:
    """Whether manifest entry ``pattern`` (relative to ``base``) is a glob: it has ``*``, ``?`` or
    ``[`` and names no existing file or folder as written (``run[1].jsonl`` is that file when
    it exists, not a glob matching ``run1.jsonl``)."""
    return any(ch in pattern for ch in "*?[") and not os.path.lexists(os.path.normpath(base / pattern))


def _glob(pattern: str) -> list[str]:
    """The paths ``pattern`` (absolute) matches: ``*``, ``?``, ``[…]`` and ``**`` (any depth),
    names starting with ``.`` only by a part starting with ``.``, as :func:`glob.glob` with
    ``recursive=True`` — but a ``**`` part does not enter a symbolic link to a folder, as a
    folder entry's walk does not (``t/a -> .`` had read ``t/a/a/…/x.jsonl`` down to the
    system's limit, and two such links never ended).  A link the pattern matches is listed; a
    ``*`` part enters one (one level).  (wcmatch's ``GLOBSTAR`` without ``FOLLOW``: Python
    3.11's own glob cannot be told not to follow links.)"""
    from wcmatch import glob as wglob

    return [os.path.normpath(p) for p in wglob.glob(pattern, flags=wglob.GLOBSTAR)]


def _links_not_entered(pattern: str) -> list[Path]:
    """The symbolic links to folders a ``**`` of ``pattern`` (absolute) passed over without
    entering (:func:`_glob`) whose folder holds a file named as the pattern's last part asks
    (``t/**/*.jsonl`` and a link ``t/old -> /archive`` holding ``a.jsonl``): evidence the glob
    did not read, listed like a folder walk's links (sorted; ``[]`` without ``**``).  Each link is
    looked into one level: a link inside it is not followed either."""
    from wcmatch import glob as wglob

    parts = Path(pattern).parts
    if "**" not in parts[:-1]:
        return []
    first = next(i for i, part in enumerate(parts) if any(ch in part for ch in "*?["))
    scope = os.path.join(*parts[:parts.index("**") + 1])  # the links a "**" would have entered
    out: list[Path] = []
    for folder, dirs, files in os.walk(os.path.join(*parts[:first]) if first else os.sep):
        for name in dirs + files:
            p = os.path.join(folder, name)
            if (os.path.islink(p) and os.path.isdir(p) and wglob.globmatch(p, scope, flags=wglob.GLOBSTAR)
                    and wglob.glob(os.path.join(wglob.escape(p), "**", parts[-1]), flags=wglob.GLOBSTAR)):
                out.append(Path(p))
    return sorted(out)


def _expand(base: Path, pattern: str, manifest: Path, key: str) -> list[Path]:
    """The files (or folder) ``pattern`` under manifest list ``key`` names.

    Raises:
        ManifestError: it matches nothing, does not exist or is an empty folder (with the
            manifest line that names it)."""
    def error(message: str) -> ManifestError:
        try:
            line = _line_of_value(manifest.read_bytes(), key, pattern)
        except OSError:
            line = None
        return ManifestError(message, manifest, line)

    full = Path(os.path.normpath(base / pattern))  # no "a/../b" in the paths a report shows
    why = _unlookable(full)
    if why is not None:
        raise error(f"{key}: {pattern!r} cannot be looked up: {why}")
    if _is_glob(base, pattern):
        found = sorted(Path(p) for p in _glob(str(full)))
        if not found:
            raise error(f"{key}: {pattern!r} matches no file")
        for q in found:  # (glob lists a symbolic link whatever it points to)
            if q.is_symlink() and not q.exists():
                raise error(f"{key}: {pattern!r} matches {q}, a symbolic link to {os.readlink(q)}, which does "
                            "not exist")
        return found
    if not full.exists():
        if full.is_symlink():
            raise error(f"{key}: {pattern!r} is a symbolic link to {os.readlink(full)}, which does not exist")
        raise error(f"{key}: {pattern!r} does not exist (looked for {full})")
    if full.is_dir() and not any(q.is_file() for q in full.rglob("*")):
        # like a glob that matches nothing: a listed source with no evidence in it is a mistake
        # to say, not a clean result ("0 requests") to report
        raise error(f"{key}: {pattern!r} is an empty folder: no file in it to read")
    return [full]


#: the manifest's keys that hold a list of paths, globs or ``{path, format}`` entries
_LIST_KEYS = ("transcripts", "door", "access")

#: the manifest's keys that hold seconds (a number, or a mapping of names to numbers)
_SECONDS_KEYS = ("window_s", "max_offset_s", "storage_clock_ahead_s", "clock_offsets")

#: a number in e-notation YAML 1.1 leaves as text (no dot, or no sign in the exponent): 1e4, 1.5e3
_E_NUMBER = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+")


def _e_number(value: Any) -> Any:
    """``value`` with a text that is a number in e-notation (``"1e4"``) read as that number, in a
    mapping's values too; anything else as it is.  YAML 1.2 and JSON read ``max_offset_s: 1e4``
    as a number; PyYAML follows YAML 1.1, and the manifest had been refused as "'1e4' is not of
    type 'number'".  Only the keys that hold seconds are read so, so that no text elsewhere (a
    title, a path, a transcript id) changes type."""
    if isinstance(value, str) and _E_NUMBER.fullmatch(value.strip()):
        return float(value)
    if isinstance(value, dict):
        return {k: _e_number(v) if isinstance(v, str) else v for k, v in value.items()}
    return value


def storage_clock_ahead(value) -> tuple[float | None, dict[str, float]]:
    """The manifest's ``storage_clock_ahead_s`` → ``(offset_s, door_offsets_s)`` for
    :func:`~replaybook.access_join.join_access`: a number is the storage logs' clock ahead of
    every door's (seconds); a mapping gives it per door agent (a door on a host of its own),
    ``"*"`` for the rest; absent, ``(None, {})``: measured."""
    if value is None:
        return None, {}
    if isinstance(value, dict):
        common = value.get("*")
        return (None if common is None else float(common)), {str(k): float(v) for k, v in value.items() if k != "*"}
    return float(value), {}


@dataclass
class EvidencePlaces:
    """Where an incident's evidence is (:meth:`Incident.evidence_places`).

    Attributes:
        files: every file the manifest names — itself, the transcripts, door and access logs its
            entries and globs match, the packet's log and body, the capsule and its run records.
        folders: folders whose every file is evidence, at any depth: a folder a list names, the
            capsule's folder (its evidence store), the data root (the objects the agent reached).
        holding: folders a glob's files sit in (a file written there sits among the logs).
        patterns: the lists' glob patterns as absolute paths (a file written where one matches
            would be read as evidence next time).
        runs: the capsule's run records that exist, by role (``incident``, ``forensic``,
            ``live``; also among ``files``).
    """

    files: list[Path]
    folders: list[Path]
    holding: list[Path]
    patterns: list[str]
    runs: dict[str, Path] = field(default_factory=dict)


@dataclass
class Incident:
    """One incident's evidence, loaded into canonical frames.

    Build with :meth:`load`.  Frames are loaded on first access and cached.

    Attributes:
        path: the manifest file (absolute).
        manifest: the validated manifest dict.
        given: the manifest's path as the user named it (errors name it so), or ``None``.
    """

    path: Path
    manifest: dict
    given: Path | None = None
    _results: dict = field(default_factory=dict, repr=False)
    _forced: dict = field(default_factory=dict, repr=False)
    _unentered: dict = field(default_factory=dict, repr=False)  # key → links a "**" did not enter

    @classmethod
    def load(cls, path: str | Path) -> "Incident":
        """Read ``incident.yaml`` (or a folder holding one) and check that its inputs exist.

        Raises:
            ManifestError: see :func:`load_manifest`; also when a named path matches nothing, or
                ``data_root`` is not a folder.  (The capsule's files are checked by
                :meth:`check_inputs`: ``capsule build`` loads an incident before its capsule exists.)
        """
        p = Path(path)
        if p.is_dir():
            if not (p / "incident.yaml").is_file():
                others = sorted(q.name for q in p.iterdir() if q.suffix in (".yaml", ".yml") and q.is_file())
                raise ManifestError(
                    "this folder holds no incident.yaml: "
                    + (f"give one of its manifests ({', '.join(others[:5])}) by name, or " if others else "")
                    + "write an incident.yaml naming its transcripts and door logs (README: Using it on your "
                    "own incident), or join its files without one (`replaybook join --transcripts DIR "
                    "--calls DIR`); `replaybook load auto` shows what each file in it is", p)
            p = p / "incident.yaml"
        inc = cls(path=p.resolve(), manifest=load_manifest(p), given=p)
        for key in ("transcripts", "door", "access"):  # fail early on missing inputs
            inc._groups(key)
            inc._forced_files(key)
        d = inc.manifest.get("data_root")
        why = _unlookable(inc.root / d) if d else None
        if why is not None:
            raise ManifestError(f"data_root {d!r} cannot be looked up: {why}", p,
                                _line_of_key(p.read_bytes(), "data_root"))
        if d and not (inc.root / d).is_dir():  # a typo would read as every object deleted since
            raise ManifestError(f"data_root {d!r} is not a folder (looked for {(inc.root / d).resolve()})", p,
                                _line_of_key(p.read_bytes(), "data_root"))
        return inc

    # -- manifest fields ------------------------------------------------------------------
    @property
    def shown(self) -> Path:
        """The manifest's path as errors name it: as the user gave it (so every error about one
        manifest names it the same way), else :attr:`path`."""
        return self.given if self.given is not None else self.path

    @property
    def root(self) -> Path:
        """The manifest's folder; relative paths in the manifest start here."""
        return self.path.parent

    @property
    def title(self) -> str:
        """The incident's title."""
        return self.manifest["title"]

    @property
    def data_root(self) -> Path | None:
        """Folder the door's ``object`` paths point into, or ``None`` if the manifest has none."""
        d = self.manifest.get("data_root")
        return (self.root / d).resolve() if d else None

    @property
    def window_s(self) -> float:
        """The join window, seconds."""
        return float(self.manifest["window_s"])

    def _groups(self, key: str) -> dict[str | None, list[Path]]:
        """``{format or None: paths}`` of one manifest list; ``None`` means sniff each file."""
        groups: dict[str | None, list[Path]] = {}
        for item in self.manifest.get(key, []):
            if isinstance(item, str):
                pattern, fmt = item, None
            else:
                pattern, fmt = item["path"], item.get("format")
            found = _expand(self.root, pattern, self.shown, key)
            groups.setdefault(fmt, []).extend(found)
            if _is_glob(self.root, pattern):
                links = self._unentered.setdefault(key, [])
                # (a link a later part of the pattern names is entered: t/**/runs/*.jsonl reads
                # t/runs/x.jsonl through t/runs -> /archive/runs, which is then no link not followed)
                links.extend(q for q in _links_not_entered(str(Path(os.path.normpath(self.root / pattern))))
                             if q not in links and q not in found and not any(q in f.parents for f in found))
        return groups

    def _forced_files(self, key: str) -> dict[Path, str]:
        """``{file (resolved): format}`` for the files the ``{path, format}`` entries of list
        ``key`` name (folders walked, globs expanded).  An entry read by content (a folder, a
        glob) that holds one of them leaves it to the entry naming its format, so that a file
        named by two entries is read once, by the format the user named.

        Raises:
            ManifestError: two entries force different formats on one file (naming both lines:
                which one is meant cannot be told); an entry matches nothing (with its line)."""
        if key in self._forced:
            return self._forced[key]
        from ._jsonl import expand_paths

        owner: dict[Path, tuple[str, int]] = {}
        for at, item in enumerate(self.manifest.get(key, [])):
            if isinstance(item, str) or not item.get("format"):
                continue
            fmt = item["format"]
            try:
                files = expand_paths(_expand(self.root, item["path"], self.shown, key), unique=False)
            except InputError as exc:
                raise self._input_error(key, exc) from None
            for f in files:
                r = f.resolve()
                had = owner.setdefault(r, (fmt, at))
                if had[0] != fmt:
                    raw = self.path.read_bytes()
                    first, second = _line_at(raw, [key, had[1]]), _line_at(raw, [key, at])
                    raise ManifestError(
                        f"{key}: {self._shown(str(r))} is named by two entries forcing different formats: "
                        f"{had[0]!r} (line {first}) and {fmt!r} (line {second}); name it with one format",
                        self.shown, second)
        self._forced[key] = {r: fmt for r, (fmt, _at) in owner.items()}
        return self._forced[key]

    def check_inputs(self) -> list[str]:
        """Sniff every file the manifest lists — nothing is loaded — and raise what loading
        would raise for a file in the wrong list, before anything is loaded (``replaybook
        report`` runs this before it starts a kernel).

        Returns:
            warnings, one per file forced to a format (``{path, format}``) that sniffs as
            another one with confidence while its own format does not recognise it (it will
            likely load as nothing): the user asked for that format, so it is not refused.

        Raises:
            ManifestError: a ``{path, format}`` format yields another frame, a file's content
                belongs in another list (the same message as when loading), a file the
                manifest names on its own (not by a glob or folder) is in no known format, or a
                file the manifest's ``capsule`` or ``packet`` names does not exist (with the line
                naming it).
            CapsuleFormatError: the capsule's ``capsule.yaml`` or a run record the manifest
                names is malformed (file and line named).
        """
        from .loading import MIN_CONFIDENCE, _walk

        # the packet's files: a missing one with its manifest line, first (nothing to read for it)
        self._packet_paths()
        warnings: list[str] = []
        for kind, (key, what) in _MANIFEST_KEY.items():
            named = set()  # files the manifest names one by one (not by a glob or a folder)
            for item in self.manifest.get(key, []):
                pattern = item if isinstance(item, str) else item["path"]
                if isinstance(item, str) and not _is_glob(self.root, pattern):
                    full = Path(os.path.normpath(self.root / pattern))
                    if full.is_file():
                        named.add(full)
            named_with_format = self._forced_files(key)
            for fmt, paths in self._groups(key).items():
                forced = registry.get(fmt) if fmt is not None else None
                if forced is not None and forced.frame != kind:
                    raise ManifestError(f"{key}: format {fmt!r} yields {forced.frame}, not {what}", self.shown)
                elsewhere = []
                first_elsewhere = None
                walked = _walk(paths)
                registry.prefetch(walked)  # thousands of files: judged by helper processes too
                for f in walked:
                    if forced is None and named_with_format and f.resolve() in named_with_format:
                        continue  # read by the format its own entry names
                    try:
                        if f.stat().st_size == 0 or registry.side_file_of(f) is not None:
                            continue
                    except OSError:
                        continue  # loading says so, with the file's name
                    try:
                        src, conf = registry.sniff_file(f)
                    except OSError:
                        continue  # loading says so, with the file's name
                    if (src is None or conf < MIN_CONFIDENCE) and f in named:
                        from .loading import _unrecognised_note

                        what_it_is = _unrecognised_note(f)
                        raise ManifestError(
                            f"{key}: {self._shown(str(f))}: " + (
                                f"{what_it_is}" if what_it_is != "no source recognised this content" else
                                "no format replaybook reads recognises this file (`replaybook sources` lists "
                                "them; {path, format} forces one)"),
                            self.shown, self._line_of_entry(key, f))
                    if src is None or conf < MIN_CONFIDENCE or src is forced:
                        continue
                    if forced is None and src.frame != kind:
                        elsewhere.append(f"{f}: {src.name} ({src.frame})")
                        first_elsewhere = first_elsewhere or f
                    elif forced is not None and registry.sniff_file(f, only=forced)[1] < MIN_CONFIDENCE:
                        warnings.append(f"{key}: {f} is forced to {fmt} but reads as {src.name} ({src.frame}); "
                                        f"{fmt} may find nothing in it")
                if elsewhere:
                    raise ManifestError(_elsewhere_message(key, what, elsewhere), self.shown,
                                        self._line_of_entry(key, Path(first_elsewhere)))
            self._check_entries_hold(kind)
        # the capsule's files: a missing one with its manifest line, a malformed one with its own
        named = self._capsule_paths()
        if named is not None:  # read now (a few small files), or the notebook stops on them minutes in
            from .capsule.model import load_capsule
            from .capsule.runs import load_run

            load_capsule(named[0])
            for run in named[1].values():
                load_run(run)
        return warnings

    def _line_of_entry(self, key: str, f: Path) -> int | None:
        """The manifest line of the first ``key`` entry that names file ``f`` (the file itself, a
        folder holding it, or a glob matching it); else the line of ``key``."""
        import fnmatch

        raw = self.path.read_bytes()
        for item in self.manifest.get(key) or []:
            pattern = item if isinstance(item, str) else item.get("path") if isinstance(item, dict) else None
            if not isinstance(pattern, str):
                continue
            full = os.path.normpath(self.root / pattern)
            target = os.path.normpath(f if f.is_absolute() else self.root / f)
            if target == full or target.startswith(full.rstrip(os.sep) + os.sep) or fnmatch.fnmatch(target, full):
                return _line_of_value(raw, key, pattern) or _line_of_key(raw, key)
        return _line_of_key(raw, key)

    def _check_entries_hold(self, kind: str) -> None:
        """Raise ManifestError when an entry of the list for ``kind`` that is read by content (not
        ``{path, format}``) names only files no source recognises: a folder of notes named under
        ``transcripts:`` would otherwise report "0 transcripts" as if the agent had left none."""
        from .loading import MIN_CONFIDENCE, _unrecognised_note, _walk

        key, what = _MANIFEST_KEY[kind]

        def unread_only(files: list[Path]) -> list[Path]:
            """``files`` when no source recognises any of them, else []."""
            for f in files:
                try:
                    if f.stat().st_size == 0 or registry.side_file_of(f) is not None:
                        return []  # an empty file (a session just begun) or a side file: not nothing
                    src, conf = registry.sniff_file(f)
                except OSError:
                    return []  # loading says so, with the file's name
                if src is not None and conf >= MIN_CONFIDENCE:
                    return []
            return files

        forced = self._forced_files(key)
        for item in self.manifest.get(key, []):
            if not isinstance(item, str):
                continue
            unread = unread_only([f for f in _walk(_expand(self.root, item, self.shown, key))
                                  if not forced or f.resolve() not in forced])
            if unread:
                n = len(unread)
                shown = "; ".join(f"{f.name}: {_unrecognised_note(f)}" for f in unread[:3])
                raise ManifestError(
                    f"{key}: {item!r} holds no {what} replaybook reads ({n} file{'' if n == 1 else 's'}: "
                    f"{shown}{'; …' if n > 3 else ''}); `replaybook load auto` shows what each file is",
                    self.shown, _line_of_value(self.path.read_bytes(), key, item))

    # -- frames ---------------------------------------------------------------------------
    def _input_error(self, key: str, exc: InputError) -> ManifestError:
        """``exc`` (a file of the ``key`` list that cannot be read) as the manifest's error: the
        file as the manifest's folder sees it, and the line of the entry naming it."""
        if not exc.path:
            return ManifestError(f"{key}: {exc.message}", self.shown)
        where = self._shown(str(Path(exc.path).resolve())) + (f":{exc.line_no}" if exc.line_no else "")
        return ManifestError(f"{key}: {where}: {exc.message}", self.shown, self._line_of_entry(key, Path(exc.path)))

    def check_packet_log(self) -> None:
        """Read the packet's session log as the report's notebook will (nothing without a packet),
        so that a malformed line is bad input named with its line before the kernel starts, not a
        notebook that fails half-way (``replaybook report`` calls this after :meth:`check_inputs`;
        ``join`` and ``access``, which do not read the packet, do not).

        Raises:
            ManifestError: a file the manifest's ``packet`` names does not exist.
            PacketLogError: the session log has a malformed line (file and line named)."""
        packet = self._packet_paths()
        if packet is not None:
            from .packet.log import read_log

            read_log(packet[0])

    def read_inputs(self, kind: str) -> list[dict]:
        """The ``inputs`` entries of the files a source read into frame ``kind`` (``steps``,
        ``calls``, ``access``): not skipped (empty, a copy of another) and in a known format.
        Loads that frame if it is not loaded yet.

        Raises:
            ManifestError: as loading the frame does."""
        return [i for i in self._load(kind).inputs if i.get("format") and not i.get("skipped")]

    def listed_files(self, *keys: str) -> list[Path]:
        """The files the manifest's lists ``keys`` (``transcripts``, ``door``, ``access``) name,
        globs and folders expanded — nothing read or hashed (what :attr:`inputs` lists, cheaply).

        Raises:
            ManifestError: an entry matches nothing (with its line)."""
        from ._jsonl import expand_paths

        out: list[Path] = []
        for key in keys:
            for paths in self._groups(key).values():
                try:
                    out.extend(expand_paths(paths, unique=False))
                except InputError as exc:
                    raise self._input_error(key, exc) from None
        return out

    def evidence_places(self) -> "EvidencePlaces":
        """Where this incident's evidence is, for a command about to write a file (nothing is read
        or hashed): see :class:`EvidencePlaces`.

        Raises:
            ManifestError: a ``transcripts``/``door``/``access`` entry matches nothing (with its
                line).  The packet's and the capsule's files count as far as they exist."""
        places = EvidencePlaces(files=[self.path], folders=[], holding=[], patterns=[])
        for key in ("transcripts", "door", "access"):
            for item in self.manifest.get(key, []):
                pattern = item if isinstance(item, str) else item["path"]
                globbed = _is_glob(self.root, pattern)
                if globbed:
                    places.patterns.append(str(Path(os.path.normpath(self.root / pattern))))
                for q in _expand(self.root, pattern, self.shown, key):
                    if q.is_dir():
                        places.folders.append(q)
                    else:
                        places.files.append(q)
                        if globbed and q.parent not in places.holding:
                            places.holding.append(q.parent)
        # (the packet's and the capsule's files as far as they exist: `capsule build` and
        # `capsule incident-run` are how some of them come to be)
        packet = self.manifest.get("packet") or {}
        for key in ("log", "body"):
            if packet.get(key) and (self.root / packet[key]).is_file():
                places.files.append(Path(os.path.normpath(self.root / packet[key])))
        capsule = self.manifest.get("capsule") or {}
        if capsule.get("path"):
            cap = Path(os.path.normpath(self.root / capsule["path"]))
            cap = cap / "capsule.yaml" if cap.is_dir() else cap
            if cap.is_file():
                places.files.append(cap)
                places.folders.append(cap.parent)
        places.runs = {k: Path(os.path.normpath(self.root / v)) for k, v in (capsule.get("runs") or {}).items()
                       if (self.root / v).is_file()}
        places.files.extend(places.runs.values())
        if self.data_root is not None:
            places.folders.append(self.data_root)
        return places

    def loaded(self, kind: str) -> LoadResult:
        """The whole load of one frame — ``"steps"``, ``"calls"`` or ``"access"``: its frame,
        quarantine and ``inputs`` entries (paths as the loader read them) — loaded on first use.

        Raises:
            ManifestError: see :meth:`load`; InputError: a listed file cannot be read."""
        return self._load(kind)

    def _load(self, kind: str) -> LoadResult:
        if kind in self._results:
            return self._results[kind]
        key, what = _MANIFEST_KEY[kind]
        parts = []
        groups = self._groups(key)
        links = self._unentered.get(key, [])
        if links and None not in groups:
            groups[None] = []  # (every entry names its format: the links are listed all the same)
        for fmt, paths in groups.items():
            if not paths and not (fmt is None and links):
                continue
            if fmt is not None:
                src = registry.get(fmt)
                if src.frame != kind:
                    raise ManifestError(f"{key}: format {fmt!r} yields {src.frame}, not {what}", self.shown)
                try:
                    parts.append(src.load(paths))
                except InputError as exc:
                    raise self._input_error(key, exc) from None
                continue
            from .loading import load_frame

            try:  # (a file an entry names with its format is read by that format alone)
                got = load_frame(paths, kind, require=False, exclude=set(self._forced_files(key)),
                                 not_followed=links)
            except InputError as exc:
                raise self._input_error(key, exc) from None
            if got.elsewhere:
                raise ManifestError(_elsewhere_message(key, what, [f"{p}: {v}" for p, v in got.elsewhere.items()]),
                                    self.shown, self._line_of_entry(key, Path(next(iter(got.elsewhere)))))
            parts.append(got.result)
        from .loading import across_files

        res = across_files(kind, _concat(parts, _SPEC[kind]))  # (as replaybook.load: one rule for both)
        self._results[kind] = res
        return res

    @property
    def steps(self) -> pd.DataFrame:
        """All transcripts as one :data:`~replaybook.frames.STEPS` frame."""
        return self._load("steps").frame

    @property
    def calls(self) -> pd.DataFrame:
        """All door logs as one :data:`~replaybook.frames.CALLS` frame."""
        return self._load("calls").frame

    @property
    def access(self) -> pd.DataFrame:
        """All cloud access logs as one :data:`~replaybook.frames.ACCESS` frame (empty when the
        manifest names none)."""
        return self._load("access").frame

    @property
    def access_record_files(self) -> set[str]:
        """The cloud access logs read as whole-file JSON documents (an array as ``gcloud logging
        read --format=json`` writes it, a CloudTrail delivery file …), as the ``source_file`` of
        their :attr:`access` rows: their ``line_no`` is the record's place among the file's
        records, not a line (``sources._cloud.numbered`` words it ``record N``)."""
        from .sources._cloud import record_numbered

        return record_numbered(self._load("access").inputs) if self.has_access else set()

    @property
    def has_access(self) -> bool:
        """The manifest names cloud access logs."""
        return bool(self.manifest.get("access"))

    @property
    def quarantine(self) -> pd.DataFrame:
        """Every line set aside by any loader (:data:`~replaybook.frames.QUARANTINE`), its
        ``source_file`` written as :attr:`inputs` writes paths."""
        return self.quarantine_of("steps", "calls", "access")

    def quarantine_of(self, *frames: str) -> pd.DataFrame:
        """:attr:`quarantine` of the loaders of ``frames`` only (``"steps"``, ``"calls"``,
        ``"access"``): what ``replaybook access`` reports, without loading the transcripts."""
        q = pd.concat([self._load(k).quarantine for k in frames], ignore_index=True)
        if len(q):
            shown = {p: self._shown(p) for p in q["source_file"].unique()}  # one look-up per file
            q["source_file"] = pd.array([shown[p] for p in q["source_file"]], dtype="string")
        return q

    @property
    def loaded_quarantine(self) -> pd.DataFrame:
        """:attr:`quarantine` with ``source_file`` as the loaders wrote it: the path as read,
        the same string as the ``source_file`` of :attr:`steps` and :attr:`calls` rows of that
        file (for matching a set-aside line to the rows around it)."""
        return pd.concat([self._load(k).quarantine for k in ("steps", "calls", "access")], ignore_index=True)

    def _shown(self, path) -> str:
        """``path`` relative to the manifest folder when inside it, else as given (a symbolic
        link by where it is, not where it points)."""
        if not isinstance(path, str):
            return path
        try:
            p = Path(path)
            p = p.parent.resolve() / p.name if p.is_symlink() else p.resolve()
            return str(p.relative_to(self.root))
        except (ValueError, OSError):
            return path

    @property
    def inputs(self) -> list[dict]:
        """The manifest, then every file it names: ``path`` (relative to the manifest folder
        when inside it), ``sha256`` (hex, of the bytes on disk), ``bytes``, ``lines``,
        ``format`` (``manifest`` for the manifest; ``None`` when no source read a file),
        ``note`` (why a file was skipped, what a loader left out, or ``None``) and, for the
        files, ``read_nothing`` (its format found no record among its lines) and, for a cloud log
        read as a whole-file JSON document, ``numbered: "record"`` (:attr:`access_record_files`).  The manifest
        is evidence too: it sets the window, the storage mapping and the principals.  A file a
        loader read beside an input (a sub-agent's ``agent-<id>.meta.json``) is evidence as
        well: its row follows that input's, with ``side_of`` (the input's path, written as
        ``path``), so the report lists it and its ``.sha256`` file checks it.  The replay packet's
        files come next (:meth:`packet_inputs`): the report's packet section is built from them;
        then the replay capsule's (:meth:`capsule_inputs`), which its section is built from.

        Raises:
            ManifestError: a file the manifest's ``packet`` or ``capsule`` names does not exist.
            CapsuleFormatError: the capsule's ``capsule.yaml`` is malformed."""
        return self.loaded_inputs() + self.packet_inputs() + self.capsule_inputs()

    def loaded_inputs(self) -> list[dict]:
        """:attr:`inputs` without the replay packet's and capsule's files: the manifest, then
        the files its ``transcripts``, ``door`` and ``access`` lists name, with their side files
        (``capsule build`` reads the door logs here, before the capsule it writes exists)."""
        from ._jsonl import file_info

        data = self.path.read_bytes()
        out = [dict(file_info(self.path, len(data), data, "manifest"), path=self.path.name, note=None)]
        q = self.quarantine
        set_aside = q["source_file"].value_counts().to_dict() if len(q) else {}
        for kind in ("steps", "calls", "access"):
            res = self._load(kind)
            rows = res.frame["source_file"].value_counts().to_dict() if len(res.frame) else {}
            for r in res.inputs:
                out.append(self._input_row(r, rows, set_aside))
                for side in r.get("side_files") or ():
                    out.append(dict(side, path=self._shown(side["path"]), side_of=self._shown(side["side_of"]),
                                    read_nothing=False))
        return out

    def _packet_paths(self) -> tuple[Path, Path | None] | None:
        """The packet's session log and PR body (``None`` for none) as the manifest names them
        (``..`` parts worked out), or ``None`` without a packet.

        Raises:
            ManifestError: a named file does not exist or is not a file, naming the path as the
                manifest gives it, the path looked for, and the manifest line that names it
                (``incident.yaml:9``), as for the capsule's files; :meth:`check_inputs` calls this
                before the report's kernel starts."""
        spec = self.manifest.get("packet")
        if not spec:
            return None
        log = Path(os.path.normpath(self.root / spec["log"]))
        body = Path(os.path.normpath(self.root / spec["body"])) if spec.get("body") else None
        for key, p in (("log", log), ("body", body)):
            why = None if p is None else _unlookable(p)
            if p is None or (why is None and p.is_file()):
                continue
            what = (f"cannot be looked up: {why}" if why is not None else "does not exist" if not p.exists()
                    else "is not a file")
            raise ManifestError(f"packet: {key}: {spec[key]!r} {what} (looked for {p})", self.shown,
                                _line_at(self.path.read_bytes(), ["packet", key]))
        return log, body

    def packet_inputs(self) -> list[dict]:
        """The replay packet's files as :attr:`inputs` rows (``[]`` without a packet): the session
        log (format ``packet session log``), the PR body (``packet PR body``) and every file of the
        log's stored-outputs folder (``session.outputs/`` beside ``session.jsonl``, format
        ``packet stored output``; the claims linter reads a cited step's output there, and in its
        ``raw/`` sub-folder, whose files are listed the same way), each with
        ``path`` (relative to the manifest's folder, else absolute), ``sha256``, ``bytes``,
        ``lines`` and ``note``.  A symbolic link in that folder is listed with its target and no
        SHA-256, not followed; a sub-folder is listed with a note and not read.

        Raises:
            ManifestError: a file the manifest's ``packet`` names does not exist.
        """
        from ._jsonl import file_info
        from .loading import _link_note
        from .packet.log import RAW_DIR, outputs_dir_for

        named = self._packet_paths()
        if named is None:
            return []
        log, body = named

        def row(p: Path, fmt: str) -> dict:
            data = p.read_bytes()
            return dict(file_info(p, len(data), data, fmt), path=self._shown(str(p.resolve())), note=None,
                        read_nothing=False)

        out = [row(log, "packet session log")]
        if body is not None:
            out.append(row(body, "packet PR body"))
        outs = outputs_dir_for(log)
        raw_dir = outs / RAW_DIR
        listed = sorted(outs.iterdir()) if outs.is_dir() else []
        if raw_dir.is_dir() and not raw_dir.is_symlink():  # outputs before normalization: the linter reads them too
            listed = [p for p in listed if p != raw_dir] + sorted(raw_dir.iterdir())
        if listed:
            for p in listed:
                shown = self._shown(str(p.parent.resolve() / p.name))
                if p.is_symlink():
                    out.append({"path": shown, "sha256": None, "bytes": None, "lines": None,
                                "format": "packet stored output", "note": _link_note(p), "read_nothing": False})
                elif p.is_file():
                    out.append(row(p, "packet stored output"))
                else:
                    out.append({"path": shown, "sha256": None, "bytes": None, "lines": None, "format": None,
                                "note": "a folder inside the packet's stored outputs: not read",
                                "read_nothing": False})
        return out

    def capsule_inputs(self) -> list[dict]:
        """The replay capsule's files as :attr:`inputs` rows (``[]`` without a capsule): its
        ``capsule.yaml`` (format ``capsule manifest``), the run records the manifest names
        (``capsule run record``, note: the run's role), and every evidence object
        ``capsule.yaml`` references that verification re-hashes (``capsule evidence object``,
        note: what it is, e.g. ``call toolu_…``), each with ``path`` (relative to the manifest's
        folder, else absolute), ``sha256`` (of the bytes on disk), ``bytes``, ``lines`` and
        ``note``.  An object the store lacks, one whose file cannot be read (the note gives the
        system's reason), or a link leading out of the store (never read), is listed with a note
        and no SHA-256; a damaged one with the SHA-256 of its bytes and a note.
        Objects of the store that ``capsule.yaml`` does not reference (another capsule's) are not
        this capsule's evidence and are left out.

        Raises:
            ManifestError: a file the manifest's ``capsule`` names does not exist.
            CapsuleFormatError: ``capsule.yaml`` is malformed.
        """
        from ._jsonl import file_info
        from .capsule.model import load_capsule
        from .capsule.verify import verify_capsule

        named = self._capsule_paths()
        if named is None:
            return []
        cap_path, runs = named

        def row(p: Path, fmt: str, note: str | None = None) -> dict:
            data = p.read_bytes()
            return dict(file_info(p, len(data), data, fmt), path=self._shown(str(p.resolve())), note=note,
                        read_nothing=False)

        out = [row(cap_path, "capsule manifest")]
        out.extend(row(p, "capsule run record", f"the {role} run") for role, p in runs.items())
        cap = load_capsule(cap_path)
        store = cap.store()
        objects = verify_capsule(cap, store).objects
        seen: set[str] = set()
        for r in objects.itertuples(index=False):
            if r.what == "unreferenced" or r.digest in seen:
                continue
            seen.add(r.digest)
            p = store.path(r.digest)
            shown = self._shown(str(p))
            if r.status == "outside":
                out.append({"path": shown, "sha256": None, "bytes": None, "lines": None,
                            "format": "capsule evidence object", "read_nothing": False,
                            "note": f"{r.what}: a link out of the evidence store ({store.outside(r.digest)}): "
                                    "not read, not this capsule's evidence"})
            elif r.status == "unreadable":
                out.append({"path": shown, "sha256": None, "bytes": None, "lines": None,
                            "format": "capsule evidence object", "read_nothing": False,
                            "note": f"{r.what}: in the evidence store, but cannot be read: {r.reason}"})
            elif r.status == "missing" or not p.is_file():
                out.append({"path": shown, "sha256": None, "bytes": None, "lines": None,
                            "format": "capsule evidence object", "read_nothing": False,
                            "note": f"{r.what}: not in the evidence store"})
            else:
                out.append(row(p, "capsule evidence object", r.what if r.status == "ok" else
                               f"{r.what}: does not hash to its recorded digest {r.digest}"))
        return out

    def _input_row(self, r: dict, rows: dict, set_aside: dict) -> dict:
        """One file's Inputs row (see :attr:`inputs`): ``rows`` and ``set_aside`` count its
        frame's rows and the quarantine's lines per file."""
        from .loading import _input_note

        d = dict(r)
        d.pop("side_files", None)  # (rows of their own: see inputs)
        read_nothing = (d.get("format") is not None and not d.get("skipped") and not rows.get(d["path"])
                        and (d.get("ignored_lines") or d.get("not_calls")))
        d["path"] = self._shown(d["path"])
        for key in ("same_as", "copy_of"):
            if d.get(key):
                d[key] = self._shown(d[key])
        notes = [n for n in (_input_note(d),) if n]
        if read_nothing:  # e.g. a {path, format} forcing a gateway format on a transcript
            notes.append(f"nothing in it was read as {d['format']}: is it another format?")
        d["read_nothing"] = bool(read_nothing)
        n_q = set_aside.get(d["path"], 0)
        if n_q and d.get("format") is not None:  # (a file no source read is set aside whole)
            notes.append(f"{n_q} line{'' if n_q == 1 else 's'} set aside (see Quarantine)")
        d["note"] = "; ".join(notes) or None
        return d

    @cached_property
    def join(self) -> JoinResult:
        """The transcript ↔ door-session join with the manifest's window and thresholds."""
        return join_sessions(self.steps, self.calls, window_s=self.window_s,
                             min_agreed=int(self.manifest["min_agreed"]),
                             max_offset_s=float(self.manifest["max_offset_s"]),
                             clock_offsets=self.manifest.get("clock_offsets"))


    @cached_property
    def access_join(self):
        """Door calls ↔ cloud access events (:class:`~replaybook.access_join.AccessJoinResult`),
        or ``None`` when the manifest names no access logs."""
        if not self.has_access:
            return None
        from .access_join import join_access

        # the storage logs' clock as the user knows it (cloud − door), else measured
        ahead, doors = storage_clock_ahead(self.manifest.get("storage_clock_ahead_s"))
        return join_access(self.calls, self.access, storage_map=self.manifest.get("storage_map"),
                           principals=self.manifest.get("principals"), offset_s=ahead,
                           door_offsets_s=doors or None)


    @property
    def has_packet(self) -> bool:
        """The manifest names a replay packet (``packet: {log, body}``)."""
        return bool(self.manifest.get("packet"))

    def packet_summary(self) -> dict | None:
        """The replay packet's steps and claims (:func:`replaybook.packet.packet_summary`), or
        ``None`` when the manifest names no packet.  Runs nothing.

        Raises:
            ManifestError: a named file does not exist.
            PacketLogError: the session log is malformed (file and line named).
        """
        named = self._packet_paths()
        if named is None:
            return None
        from .packet import packet_summary

        return packet_summary(*named)

    @property
    def has_capsule(self) -> bool:
        """The manifest names a replay capsule."""
        return bool(self.manifest.get("capsule"))

    def _capsule_paths(self) -> tuple[Path, dict[str, Path]] | None:
        """The capsule's ``capsule.yaml`` and its run records (``{role: path}``, in the
        manifest's order) as the manifest names them, or ``None`` without a capsule.

        Raises:
            ManifestError: a named file does not exist or is not a file (with the manifest line
                that names it)."""
        spec = self.manifest.get("capsule")
        if not spec:
            return None
        cap = Path(os.path.normpath(self.root / spec["path"]))
        runs = {k: Path(os.path.normpath(self.root / v)) for k, v in (spec.get("runs") or {}).items()}
        for where, given, p in [(["capsule", "path"], spec["path"], cap),
                                *((["capsule", "runs", k], spec["runs"][k], q) for k, q in runs.items())]:
            why = _unlookable(p)
            if why is None and (p.is_file() or (p.is_dir() and where[-1] == "path"
                                                and (p / "capsule.yaml").is_file())):
                continue
            what = (f"cannot be looked up: {why}" if why is not None else "does not exist" if not p.exists()
                    else "is not a file")
            raise ManifestError(f"{': '.join(where)}: {given!r} {what} (looked for {p})", self.shown,
                                _line_at(self.path.read_bytes(), where))
        return (cap / "capsule.yaml" if cap.is_dir() else cap), runs

    def capsule_section(self):
        """The capsule's review section (:class:`~replaybook.capsule.report.CapsuleSection`, or
        :class:`~replaybook.capsule.report.InventorySection` without all three runs):
        verdict block, inventory, divergence record — or ``None`` when the manifest names no
        capsule.  Without all three runs (incident, forensic, live) only verification is shown.

        Raises:
            ManifestError: a named capsule or run file does not exist.
        """
        spec = self.manifest.get("capsule")
        if not spec:
            return None
        from .capsule.report import review_section
        from .capsule.runs import load_run

        cap, runs = self._capsule_paths()
        if set(runs) != {"incident", "forensic", "live"}:  # what is there, and what a verdict still needs
            from .capsule.report import inventory_section

            return inventory_section(cap, {k: load_run(v) for k, v in runs.items()})
        return review_section(cap, load_run(runs["incident"]), load_run(runs["forensic"]),
                              load_run(runs["live"]), reviewer_decision=spec.get("reviewer_decision"))


def _concat(parts: list[LoadResult], spec) -> LoadResult:
    """The parts of one frame (one per format group of a manifest list) as one load, a file
    listed twice or copied under another path read once (:func:`~replaybook.loading.read_once`)."""
    from .loading import read_once

    if not parts:
        return LoadResult(frame=spec.empty())
    if len(parts) == 1:
        return read_once(parts[0])
    frame = pd.concat([p.frame for p in parts], ignore_index=True)
    return read_once(LoadResult(frame=frame,
                                quarantine=pd.concat([p.quarantine for p in parts], ignore_index=True),
                                inputs=[i for p in parts for i in p.inputs]))


