"""The report's inputs as a ``sha256sum`` checksum file, so one command re-checks the evidence.

``render_report`` writes ``<slug>.sha256`` beside the HTML: one line per input file that has a
SHA-256, in GNU coreutils' untagged format (``<hex>  <name>``: the digest, a space, a space for
text mode, the name), with each path as the report's Inputs table shows it — relative to the
manifest's folder, or absolute for a file outside it — so ``cd <manifest folder> && sha256sum -c
<slug>.sha256`` checks every file.

A name holding a backslash, a newline or a carriage return is written as GNU ``sha256sum``
writes it (coreutils manual, "cksum output modes"): the line starts with a backslash, and in
the name ``\\`` becomes ``\\\\``, a newline ``\\n`` and a carriage return ``\\r``; ``sha256sum -c``
reads such a line back to the original name.  Names are written as the bytes the file system
holds (:func:`os.fsencode`), so a name that is not UTF-8 still names its file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable, Mapping

__all__ = ["SUFFIX", "CHECKSUMS_MIME", "checksum_entries", "sha256sum_line", "write_sha256sum"]

#: The checksum file's suffix: ``<slug>.sha256`` beside ``<slug>.html``.
SUFFIX = ".sha256"
#: MIME type of the :func:`checksum_entries` output the report notebook displays (in a cell left
#: out of the HTML); ``render_report`` reads it back from the executed notebook and writes the file.
CHECKSUMS_MIME = "application/vnd.replaybook.checksums+json"

_HEX64 = re.compile(r"[0-9a-f]{64}")
_ESCAPES = {ord("\\"): "\\\\", ord("\n"): "\\n", ord("\r"): "\\r"}


def checksum_entries(inputs: Iterable[Mapping]) -> list[list[str]]:
    """``[[path, sha256 hex], ...]`` of the Inputs rows (:attr:`replaybook.Incident.inputs`)
    that have a SHA-256, in their order; a path listed twice is kept once (its first row).
    Rows without one (a symbolic link, listed and not followed) are left out."""
    out, seen = [], set()
    for r in inputs or ():
        path, sha = r.get("path"), r.get("sha256")
        if not isinstance(path, str) or not isinstance(sha, str) or not _HEX64.fullmatch(sha) or path in seen:
            continue
        seen.add(path)
        out.append([path, sha])
    return out


def sha256sum_line(sha256: str, path: str) -> bytes:
    """One checksum line, ``b"<hex>  <name>\\n"``, escaped as GNU ``sha256sum`` does (see the
    module docstring).

    Raises:
        ValueError: ``sha256`` is not 64 lower-case hex digits, or ``path`` is empty.
    """
    if not _HEX64.fullmatch(sha256 or ""):
        raise ValueError(f"not a SHA-256 hex digest: {sha256!r}")
    if not path:
        raise ValueError("an empty path names no file")
    name = os.fsencode(path)
    if any(c in name for c in b"\\\n\r"):
        escaped = os.fsencode(path.translate(_ESCAPES))
        return b"\\" + sha256.encode("ascii") + b"  " + escaped + b"\n"
    return sha256.encode("ascii") + b"  " + name + b"\n"


def write_sha256sum(entries: Iterable[tuple[str, str] | list[str]], dest: str | Path) -> int:
    """Write ``entries`` (``(path, sha256 hex)`` pairs, as :func:`checksum_entries` gives them)
    to ``dest`` as a ``sha256sum`` checksum file; return the number of lines written.

    The file is written next to ``dest`` and renamed over it, so a reader never sees half a
    list.  Raises ``ValueError`` for a malformed entry (nothing written) and ``OSError`` when the
    folder cannot be written."""
    lines = [sha256sum_line(sha, path) for path, sha in entries]
    dest = Path(dest)
    tmp = dest.with_name(dest.name + ".part")
    try:
        tmp.write_bytes(b"".join(lines))
        os.replace(tmp, dest)
    except OSError:
        tmp.unlink(missing_ok=True)  # (no half-written list left beside the report)
        raise
    return len(lines)
