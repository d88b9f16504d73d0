"""Door settings read from the environment and config files: the retention limit.

The default ``--older-than`` of ``replaybook prune`` is, first found:

1. the environment variable ``REPLAYBOOK_DOOR_RETENTION`` (e.g. ``14d``);
2. ``[door] retention = "…"`` in ``replaybook.toml``, or ``[tool.replaybook.door] retention = "…"``
   in ``pyproject.toml`` — looked for in the current folder and then each parent folder (the
   first of those files that has the setting wins; ``--config FILE`` names one file instead);
   a ``replaybook.toml`` met on the way that cannot be read (bad TOML, not UTF-8, no
   permission) is an error, as the file ``--config`` names is — it may set a longer retention,
   and falling back to the default would delete what it keeps; a ``pyproject.toml`` that cannot
   be read is another tool's file, so it is passed over, with a note;
3. :data:`DEFAULT_RETENTION` (``30d``).

Durations: a number and a unit — ``s``, ``m``, ``h``, ``d``, ``w`` — optionally several
(``1d12h``); ``0`` alone means no retention at all (everything idle is pruned).
"""

from __future__ import annotations

import os
import re
import tomllib
from datetime import timedelta
from pathlib import Path

from ..errors import InputError

__all__ = ["DEFAULT_RETENTION", "RETENTION_ENV", "parse_duration", "retention_setting", "format_duration"]

#: Retention when nothing configures it.
DEFAULT_RETENTION = "30d"
#: Environment variable that sets the retention.
RETENTION_ENV = "REPLAYBOOK_DOOR_RETENTION"

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_MAX_DAYS = 999_999_999  # timedelta's own limit
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")


def parse_duration(text: str) -> timedelta:
    """``"30d"`` → ``timedelta(days=30)``; ``"1d12h"``, ``"90m"``, ``"2w"``, ``"0"``.

    Raises:
        InputError: not a duration, or longer than a time can be counted back (about 999,999,999 days).
    """
    s = str(text).strip().lower()
    if s in ("0", "0s"):
        return timedelta(0)
    pos, total = 0, 0.0
    for m in _PART.finditer(s):
        if m.start() != pos and s[pos:m.start()].strip():
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos == 0 or s[pos:].strip():
        raise InputError(f"not a duration: {text!r} (use e.g. 30d, 12h, 90m, 1d12h)")
    try:
        return timedelta(seconds=total)
    except OverflowError:
        raise InputError(f"duration too long: {text!r} (at most {_MAX_DAYS} days)") from None


def format_duration(td: timedelta) -> str:
    """``timedelta(days=30)`` → ``30d`` (largest exact unit)."""
    secs = int(td.total_seconds())
    for unit, n in (("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if secs and secs % n == 0:
            return f"{secs // n}{unit}"
    return f"{secs}s"


def _read_toml(path: Path) -> dict:
    """The TOML document of ``path``.

    Raises:
        InputError: it cannot be read, is not UTF-8 or is not valid TOML (naming the line).
    """
    try:
        return tomllib.loads(path.read_text("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"at line (\d+)", str(exc))
        raise InputError(f"cannot read config: not valid TOML: {exc}", path,
                         int(m.group(1)) if m else None) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read config: not UTF-8 text: {exc}", path) from exc
    except OSError as exc:
        raise InputError(f"cannot read config: {exc.strerror or exc}", path) from exc


def _toml_type(v: object) -> str:
    """What a TOML value is, in TOML's words (``an array``, ``a string`` …)."""
    return {list: "an array", str: "a string", bool: "a boolean", int: "an integer",
            float: "a float"}.get(type(v), f"a {type(v).__name__}")


def _from_file(path: Path, data: dict | None = None) -> str | None:
    """The door retention ``path`` sets (``data``: its document, when already read), or
    ``None`` when it sets none.  In a ``pyproject.toml``, a ``tool`` that is not a table is
    another tool's business (nothing of ours is in it); ``tool.replaybook`` is ours.

    Raises:
        InputError: the file cannot be read (:func:`_read_toml`), ``tool.replaybook`` or the
            ``door`` section is not a table, or the setting is not a duration string.
    """
    if data is None:
        data = _read_toml(path)
    if path.name == "pyproject.toml":
        tool = data.get("tool")
        if not isinstance(tool, dict):  # no [tool] table: nothing of ours in it
            return None
        ours = tool.get("replaybook")
        if ours is None:
            return None
        if not isinstance(ours, dict):
            raise InputError(f"tool.replaybook must be a table ([tool.replaybook.door] retention = \"30d\"), "
                             f"got {_toml_type(ours)}", path)
        section, name = ours.get("door"), "tool.replaybook.door"
    else:
        section, name = data.get("door"), "door"
    if section is None:
        return None
    if not isinstance(section, dict):
        raise InputError(f"{name} must be a table ([{name}] retention = \"30d\"), got {_toml_type(section)}", path)
    v = section.get("retention")
    if v is None:
        return None
    if not isinstance(v, (str, int)):
        raise InputError(f"door retention must be a duration string like \"30d\", got {v!r}", path)
    return str(v)


def retention_setting(config: str | Path | None = None, *, cwd: str | Path | None = None,
                      env: dict | None = None, notes: list[str] | None = None) -> tuple[timedelta, str]:
    """The configured retention and where it came from (``env``, a file path, or ``default``).

    ``notes``, when given, gets one line for each ``pyproject.toml`` passed over because it
    could not be read (the CLI prints them on stderr).

    Raises:
        InputError: a setting is not a duration, ``config`` cannot be read, or a
            ``replaybook.toml`` met on the way up cannot be read (naming the file and line).
    """
    env = os.environ if env is None else env
    v = env.get(RETENTION_ENV)
    if v:
        return parse_duration(v), f"${RETENTION_ENV}"
    if config is not None:
        p = Path(config)
        v = _from_file(p)
        if v is not None:
            return parse_duration(v), str(p)
    else:
        here = Path(cwd or Path.cwd()).resolve()
        for folder in (here, *here.parents):
            for name in ("replaybook.toml", "pyproject.toml"):
                p = folder / name
                if p.is_file():
                    if name == "pyproject.toml":
                        try:
                            data = _read_toml(p)
                        except InputError as exc:  # another tool's file: not ours to judge
                            if notes is not None:
                                notes.append(f"{exc} (passed over: a [tool.replaybook.door] retention "
                                             "in it is not read)")
                            continue
                        v = _from_file(p, data)
                    else:
                        v = _from_file(p)  # ours: a file that cannot be read is an error
                    if v is not None:
                        return parse_duration(v), str(p)
    return parse_duration(DEFAULT_RETENTION), "default"
