"""Refuse an output path that would write over evidence (private; used by the command lines).

Every input — a transcript, a door log, a session log, a capsule and its evidence store — is
evidence: replaybook opens it read-only and never writes over it.  A command that writes a file
(``load --out``, ``capsule incident-run --out``, ``capsule build --out``, ``packet replay --junit``)
checks its path here
first: ``capsule incident-run --out capsule/capsule.yaml`` had replaced the capsule it had just
read, ``packet replay --junit session.jsonl`` the session log, and ``packet replay --head-ignore
PR_BODY.md --junit PR_BODY.md`` the PR body (the packet's files are listed by
``replaybook.packet.cli._packet_files``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

import click

__all__ = ["refuse_over_evidence"]


def refuse_over_evidence(out: str | Path, *, files: Iterable[str | Path] = (), folders: Iterable[str | Path] = (),
                         option: str = "--out") -> None:
    """Raise :class:`click.BadParameter` (exit 2) when ``out`` is one of ``files`` (the same
    file on disk: symbolic and hard links and relative paths seen through) or lies inside one of
    ``folders`` (an evidence store, stored outputs), or is a hard link to a file in one of them;
    otherwise return.

    Args:
        out: the output file a command is about to write.
        files: input files (missing ones are passed over).
        folders: folders whose every file is evidence (missing ones are passed over).
        option: the option that named ``out``, for the message.
    """
    target = Path(out)
    if target.exists():
        for f in files:
            try:
                same = os.path.samefile(f, target)
            except OSError:
                continue
            if same:
                raise click.BadParameter(f"{out} is one of the inputs ({f}); input files are never written over: "
                                         "choose another file", param_hint=option)
    where = target.resolve()
    roots = [Path(f) for f in folders if Path(f).is_dir()]
    for root in roots:
        full = root.resolve()
        if where == full or full in where.parents:
            raise click.BadParameter(f"{out} is inside {root}, whose files are evidence and never written over: "
                                     "choose another place", param_hint=option)
    try:
        st = target.stat()
    except OSError:
        return
    if st.st_nlink > 1 and target.is_file():  # (a hard link elsewhere to a file in a protected folder)
        for root in roots:
            for dirpath, _dirs, names in os.walk(root):
                for name in names:
                    try:
                        other = os.stat(os.path.join(dirpath, name))
                    except OSError:
                        continue
                    if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                        raise click.BadParameter(
                            f"{out} is a hard link to {os.path.join(dirpath, name)}, inside {root}, whose files are "
                            "evidence and never written over: choose another place", param_hint=option)
