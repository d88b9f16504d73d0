"""Git state for replay packets: repository root, commit, working-tree digest, replay clones.

The **tree digest** (``tree`` in the log) identifies the *content* of a working tree, whatever
commit it sits on: ``sha256:<hex>`` over the sorted ``(mode, blob id, path)`` of every file git
would see — tracked files as they are on disk (staged or not) and untracked files that are not
ignored.  Two working trees with the same files have the same digest, so a step recorded on
uncommitted changes matches a later commit that holds exactly those changes.  Excluded from the
digest: the session log and its output folder (the recorder writes them while it works) and
*untracked* tool caches that every run rewrites (:data:`CACHE_PARTS`, files ending in
:data:`CACHE_SUFFIXES`).  A tracked cache file counts like any other file: a committed ``.pyc``
can change what runs.

Everything here shells out to ``git`` (≥ 2.20) and never writes to the repository's objects or
refs; ``git status`` runs with ``--no-optional-locks`` so it does not rewrite the index either.
It writes only outside it: :func:`temporary_clone` makes a throwaway clone in a temporary
folder, and :func:`checkout` moves such a clone.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Container, Iterable, Iterator, Mapping

from .errors import PacketError

__all__ = [
    "CACHE_PARTS",
    "CACHE_SUFFIXES",
    "is_cache_path",
    "TreeState",
    "git",
    "repo_root",
    "head_commit",
    "resolve_commit",
    "commit_exists",
    "tree_state",
    "commit_state",
    "differing_paths",
    "entries_state",
    "temporary_clone",
    "temporary_worktree",
    "checkout",
    "clean_git_env",
    "CARRIED_LOCAL_CONFIG",
    "local_line_end_config",
    "effective_line_end_config",
    "line_end_config",
]

#: Path components whose files are tool caches, left out of the tree digest.
CACHE_PARTS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis",
                         ".tox", ".nox"})
#: File name endings left out of the tree digest.
CACHE_SUFFIXES = (".pyc", ".pyo")

#: Environment variables that would point git (or a replayed command) at another repository.
_GIT_REDIRECTS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_OBJECT_DIRECTORY",
                  "GIT_COMMON_DIR", "GIT_NAMESPACE")


def clean_git_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of ``env`` (default ``os.environ``) without variables that redirect git."""
    env = dict(os.environ if env is None else env)
    for k in _GIT_REDIRECTS:
        env.pop(k, None)
    return env


def git(args: list[str], cwd: str | os.PathLike, *, check: bool = True, input: bytes | None = None,
        env: dict[str, str] | None = None) -> bytes:
    """Run ``git ARGS`` in ``cwd`` and return its stdout bytes.

    Raises:
        PacketError: git is not installed, or it exited non-zero while ``check`` is true
            (the message carries git's own stderr).
    """
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True,
                              env=env, stdin=None if input is not None else subprocess.DEVNULL)
    except FileNotFoundError as exc:
        raise PacketError("git is not installed (or not on PATH)") from exc
    except NotADirectoryError as exc:
        raise PacketError(f"not a directory: {cwd}") from exc
    if check and proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip()
        raise PacketError(f"git {' '.join(args[:2])} failed in {cwd}: {msg}")
    return proc.stdout


def repo_root(path: str | os.PathLike) -> Path | None:
    """The top directory of the git working tree containing ``path``, or ``None``."""
    try:
        out = git(["rev-parse", "--show-toplevel"], path, check=False)
    except PacketError:
        return None
    text = out.decode("utf-8", "surrogateescape").strip()
    return Path(text) if text else None


def head_commit(root: str | os.PathLike) -> str | None:
    """The 40-hex commit ``HEAD`` points at, or ``None`` on an unborn branch."""
    out = git(["rev-parse", "--verify", "-q", "HEAD^{commit}"], root, check=False).decode().strip()
    return out or None


def resolve_commit(root: str | os.PathLike, ref: str) -> str:
    """Resolve ``ref`` (a branch, tag, sha …) to a 40-hex commit.

    Raises:
        PacketError: ``ref`` names no commit in this repository.
    """
    out = git(["rev-parse", "--verify", "-q", "--end-of-options", ref + "^{commit}"], root,
              check=False).decode().strip()
    if not out:
        raise PacketError(f"{ref!r} is not a commit in {root}")
    return out


def commit_exists(root: str | os.PathLike, sha: str) -> bool:
    """True when the commit ``sha`` is in the repository at ``root``."""
    return subprocess.run(["git", "cat-file", "-e", sha + "^{commit}"], cwd=root, capture_output=True,
                          stdin=subprocess.DEVNULL, env=clean_git_env()).returncode == 0


@dataclass(frozen=True)
class TreeState:
    """The content of a working tree at one moment.

    Attributes:
        digest: ``sha256:<hex>`` (see the module doc).
        changed: paths (root-relative, POSIX) that differ from ``HEAD`` — modified, added,
            deleted or untracked — after exclusions.  Empty means a clean tree.
        entries: ``{path: (mode, blob id)}`` of the files the digest covers (after exclusions),
            so two states can be compared file by file (:func:`differing_paths`).
    """

    digest: str
    changed: tuple[str, ...]
    entries: Mapping[str, tuple[str, str]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def dirty(self) -> bool:
        """True when the tree has uncommitted changes (after exclusions)."""
        return bool(self.changed)


def is_cache_path(path: str) -> bool:
    """True when ``path`` (root-relative, POSIX) is a tool-cache file: under a :data:`CACHE_PARTS`
    folder or ending in :data:`CACHE_SUFFIXES`.  Only *untracked* cache files are left out of a
    digest: a committed ``.pyc`` is a file like any other (Python may run it)."""
    parts = path.rstrip("/").split("/")
    return any(p in CACHE_PARTS for p in parts) or path.endswith(CACHE_SUFFIXES)


def _excluded(path: str, excludes: tuple[str, ...], tracked: Container[str] = frozenset()) -> bool:
    if path not in tracked and is_cache_path(path):
        return True
    return any(path == e or path.startswith(e.rstrip("/") + "/") for e in excludes)


def _mode_of(st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "120000"
    if stat.S_ISDIR(st.st_mode):
        return "160000"
    return "100755" if st.st_mode & 0o111 else "100644"


def tree_state(root: str | os.PathLike, excludes: Iterable[str] = (), *,
               env: dict[str, str] | None = None) -> TreeState:
    """Digest the working tree at ``root`` (see the module doc).

    Args:
        root: the working tree's top directory.
        excludes: root-relative POSIX paths (files or folders) to leave out, e.g. the log.
        env: environment for git (default: the current one).

    Raises:
        PacketError: git failed.
    """
    excl = _excludes(excludes)
    root = Path(root)
    entries: dict[str, tuple[str, str]] = {}
    for rec in git(["ls-files", "-s", "-z"], root, env=env).split(b"\0"):
        if not rec:
            continue
        meta, _, path_b = rec.partition(b"\t")
        mode, sha, _stage = meta.decode().split(" ")
        entries[path_b.decode("utf-8", "surrogateescape")] = (mode, sha)
    tracked = frozenset(entries)
    status = git(["--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=all",
                  "--no-renames", "--ignore-submodules=none"], root, env=env)
    changed: set[str] = set()
    for rec in status.split(b"\0"):
        if len(rec) < 4:
            continue
        path = rec[3:].decode("utf-8", "surrogateescape")
        if not _excluded(path, excl, tracked):
            changed.add(path.rstrip("/"))
    to_hash: list[str] = []
    for path in sorted(changed):
        full = root / path
        try:
            st = full.lstat()
        except FileNotFoundError:
            entries.pop(path, None)
            continue
        if stat.S_ISLNK(st.st_mode):
            target = os.readlink(full).encode("utf-8", "surrogateescape")
            entries[path] = ("120000", hashlib.sha1(b"blob %d\0" % len(target) + target).hexdigest())
        elif stat.S_ISDIR(st.st_mode):
            entries[path] = ("160000", "dir")
        else:
            entries[path] = (_mode_of(st), "")
            to_hash.append(path)
    if to_hash:
        shas = git(["hash-object", "--stdin-paths"], root, env=env,
                   input="\n".join(to_hash).encode("utf-8", "surrogateescape") + b"\n").split()
        for path, sha in zip(to_hash, shas):
            entries[path] = (entries[path][0], sha.decode())
    digest, kept = _digest(entries, excl, tracked)
    return TreeState(digest, tuple(sorted(changed)), kept)


def _excludes(excludes: Iterable[str]) -> tuple[str, ...]:
    return tuple(e.strip("/") for e in excludes if e and e.strip("/") not in ("", "."))


def _digest(entries: Mapping[str, tuple[str, str]], excl: tuple[str, ...],
            tracked: Container[str]) -> tuple[str, dict]:
    """``(sha256:<hex>, kept entries)`` over the entries not excluded (see the module doc);
    ``tracked`` are the paths git tracks, which are never left out as caches."""
    h = hashlib.sha256()
    kept: dict[str, tuple[str, str]] = {}
    for path in sorted(entries):
        if _excluded(path, excl, tracked):
            continue
        mode, sha = kept[path] = entries[path]
        h.update(f"{mode} {sha} ".encode() + path.encode("utf-8", "surrogateescape") + b"\0")
    return "sha256:" + h.hexdigest(), kept


def commit_state(repo: str | os.PathLike, commit: str, excludes: Iterable[str] = (), *,
                 env: dict[str, str] | None = None) -> TreeState:
    """The :class:`TreeState` a clean checkout of ``commit`` would have, read from git's objects
    (``git ls-tree -r``) without checking anything out.  ``changed`` is empty.

    Raises:
        PacketError: git failed (``commit`` is not in the repository).
    """
    entries: dict[str, tuple[str, str]] = {}
    out = git(["ls-tree", "-r", "-z", "--full-tree", commit], repo, env=env if env is not None else clean_git_env())
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, _, path_b = rec.partition(b"\t")
        mode, _kind, sha = meta.decode().split(" ")
        entries[path_b.decode("utf-8", "surrogateescape")] = (mode, sha)
    digest, kept = _digest(entries, _excludes(excludes), entries)  # every file of a commit is tracked
    return TreeState(digest, (), kept)


def entries_state(entries: Mapping[str, tuple[str, str]]) -> TreeState:
    """The :class:`TreeState` of exactly these ``{path: (mode, blob id)}`` entries (taken from
    another state's ``entries``, so already without excluded paths), e.g. a state with some files
    swapped for another state's.  ``changed`` is empty."""
    digest, kept = _digest(entries, (), entries)  # nothing left to leave out
    return TreeState(digest, (), kept)


def differing_paths(a: TreeState, b: TreeState) -> list[str]:
    """Sorted paths present in one state and not the other, or with another mode or content."""
    return sorted(p for p in set(a.entries) | set(b.entries) if a.entries.get(p) != b.entries.get(p))


#: Settings copied from the reviewer's repository into a replay clone, so that a step which commits
#: runs as it would there.  Nothing else of its configuration is: no hooks, no ``core.hooksPath``,
#: no filters, no aliases.
_COPIED_CONFIG = ("user.name", "user.email")

#: Settings of the repository's own config (``.git/config``) carried into a replay clone before its
#: checkout: how git writes line ends into the files it checks out and reads them back.  They name
#: no program, and without them a step reading a file sees other bytes than it did when recorded.
#: The user's and the system's config need no copy: the clone reads them as the repository does.
CARRIED_LOCAL_CONFIG = ("core.autocrlf", "core.eol", "core.safecrlf", "core.checkRoundtripEncoding")

#: :data:`CARRIED_LOCAL_CONFIG` as ``git config --get-regexp`` matches them (git lowercases the
#: section and variable names it reads)
_LINE_END_KEYS = r"^core\.(autocrlf|eol|safecrlf|checkroundtripencoding)$"


def _config_items(raw: bytes, scoped: bool) -> list[tuple[str | None, str, str]]:
    """``(scope, key, value)`` of ``git config [--show-scope] --null --get-regexp`` output, in
    the order git read them (the last one of a key is the one in force), the key named as in
    :data:`CARRIED_LOCAL_CONFIG`.  A key written without a value (``[core] autocrlf``: git's
    boolean true) is ``"true"``; an empty value (``autocrlf =``: false) stays ``""``."""
    names = {k.lower(): k for k in CARRIED_LOCAL_CONFIG}
    parts = raw.split(b"\0")[:-1]  # (every item ends with NUL)
    out = []
    step = 2 if scoped else 1
    for i in range(0, len(parts) - step + 1, step):
        scope = parts[i].decode("utf-8", "surrogateescape") if scoped else None
        key, nl, value = parts[i + step - 1].partition(b"\n")
        name = names.get(key.decode("utf-8", "surrogateescape").lower())
        if name is not None:
            out.append((scope, name, value.decode("utf-8", "surrogateescape") if nl else "true"))
    return out


def local_line_end_config(repo: str | os.PathLike) -> dict[str, str]:
    """The line-end settings (:data:`CARRIED_LOCAL_CONFIG`) the repository's own config
    (``.git/config``) sets: ``{name: value}`` as git reads them — a key written without a value
    (``[core]`` ``autocrlf``, git's boolean true) is ``"true"``, an empty value (false) ``""``;
    the last one set wins.  Empty when none is set or the config cannot be read."""
    raw = git(["config", "--local", "--null", "--get-regexp", _LINE_END_KEYS], repo, check=False,
              env=clean_git_env())
    return {name: value for _scope, name, value in _config_items(raw, scoped=False)}


def effective_line_end_config(path: str | os.PathLike) -> dict[str, str]:
    """The line-end settings (:data:`CARRIED_LOCAL_CONFIG`) in force in the repository at ``path``,
    as its checkouts read them: from every config git reads there — its own (with the files it
    includes), its worktree's (``config.worktree``), the user's global one (with an
    ``[includeIf "gitdir:…"]`` matching that repository), the system's — ``{name: value}``, the
    last one set winning, values as :func:`local_line_end_config` gives them.  Empty when none is
    set or the config cannot be read."""
    raw = git(["config", "--null", "--get-regexp", _LINE_END_KEYS], path, check=False, env=clean_git_env())
    return {name: value for _scope, name, value in _config_items(raw, scoped=False)}


def line_end_config(worktree: str | os.PathLike) -> dict[str, dict | None]:
    """Each line-end setting (:data:`CARRIED_LOCAL_CONFIG`, in that order) as git reads it in
    ``worktree`` — its own config, the user's global config, the system's, ``GIT_CONFIG_*`` in
    the environment: ``{"value": <as git reads it, as in local_line_end_config>, "scope":
    <where git read it: local, global, system, worktree or command; None where git cannot say:
    before 2.26 it has no --show-scope>}``, or ``None`` when it is not set (git's default)."""
    raw = git(["config", "--show-scope", "--null", "--get-regexp", _LINE_END_KEYS], worktree, check=False,
              env=clean_git_env())
    items = _config_items(raw, scoped=True)
    if not items:  # (none set — or a git before 2.26, which refuses --show-scope and prints nothing)
        raw = git(["config", "--null", "--get-regexp", _LINE_END_KEYS], worktree, check=False, env=clean_git_env())
        items = _config_items(raw, scoped=False)
    out: dict[str, dict | None] = dict.fromkeys(CARRIED_LOCAL_CONFIG)
    for scope, name, value in items:
        out[name] = {"value": value, "scope": scope}
    return out


def local_config_not_carried(repo: str | os.PathLike) -> list[str]:
    """What the repository's own config sets that a replay clone does not have and that can change
    what a step sees: one message per filter (``filter.<name>.clean|smudge|process``), text
    conversion for diffs (``diff.<name>.textconv``), attributes file (``core.attributesFile`` in
    ``.git/config``, or ``.git/info/attributes``).  Each of these runs a program or picks one, and a
    replay never runs a program the packet's repository names (only the packet's steps), so none
    is carried over (:data:`CARRIED_LOCAL_CONFIG` is).  Empty when nothing is set, or the config
    cannot be read."""
    env = clean_git_env()
    raw = git(["config", "--local", "--null", "--get-regexp", r"^(filter|diff)\.|^core\.attributesfile$"],
              repo, check=False, env=env)
    found: dict[tuple[str, str], list[str]] = {}
    for item in raw.split(b"\0"):
        key = item.split(b"\n", 1)[0].decode("utf-8", "surrogateescape")
        section, _, rest = key.partition(".")
        name, _, var = rest.rpartition(".")
        if section == "filter" and name and var in ("clean", "smudge", "process"):
            found.setdefault(("filter", name), []).append(var)
        elif section == "diff" and name and var == "textconv":
            found.setdefault(("diff", name), []).append(var)
        elif key.lower() == "core.attributesfile":
            found.setdefault(("core", "attributesFile"), [])
    out = []
    for (section, name), kinds in found.items():
        if section == "filter":
            out.append(f"this repository's own config (.git/config) sets filter.{name} ({', '.join(sorted(set(kinds)))}); "
                       "the replay's clean clone does not run it (a filter runs a program, and the replay runs only "
                       "the packet's steps): files it converts are checked out as committed, and a step reading them "
                       "may diverge")
        elif section == "diff":
            out.append(f"this repository's own config (.git/config) sets diff.{name}.textconv; the replay's clean clone "
                       "does not run it: a step running git diff or git log -p shows those files as committed")
        else:
            out.append("this repository's own config (.git/config) sets core.attributesFile; the replay's clean clone "
                       "does not read it: the attributes it gives (line ends, filters) do not apply there")
    info = git(["rev-parse", "--git-path", "info/attributes"], repo, check=False, env=env).strip()
    path = Path(repo) / info.decode("utf-8", "surrogateescape") if info else None
    try:
        held = path is not None and any(
            line.strip() and not line.lstrip().startswith(b"#") for line in path.read_bytes().splitlines())
    except OSError:
        held = False
    if held:
        out.append("this repository has attributes in .git/info/attributes; the replay's clean clone does not read "
                   "them: the line ends and filters they give do not apply there")
    return out


@contextmanager
def temporary_clone(repo: str | os.PathLike, commit: str) -> Iterator[Path]:
    """A clean checkout of ``commit``, detached, in a throwaway clone in a temporary folder.

    The clone (``git clone --shared --no-checkout``) reads the repository's objects through
    ``objects/info/alternates`` — read-only: objects never change, and any object a step writes
    goes to the clone — so it takes no copy of them and is quick whatever the repository's size.
    It shares nothing else with the repository: it has its own config (git never copies a
    repository's local config or hooks into a clone; only :data:`_COPIED_CONFIG` and, from the
    repository's config, the line-end settings of :data:`CARRIED_LOCAL_CONFIG` are set, before
    the checkout, where the repository reads them otherwise than the clone would — from its own
    config, a file it includes, its worktree's config, a conditional include of the user's
    (:func:`effective_line_end_config`; :func:`line_end_config` says which the clone then has);
    :func:`local_config_not_carried` says what is left out), its own
    refs (copies of the repository's branches and tags, so ``git describe`` and branch names work
    as they do there) and no remote, so a replayed step that runs ``git config``, ``git tag``,
    ``git branch -f``, ``git push`` or installs a hook changes only the clone.  Unlike a
    ``git worktree`` it registers nothing in the repository: a replay that is killed leaves at most
    a folder in the temporary directory.

    The folder is removed when the block exits, however it exits.

    Raises:
        PacketError: the clone could not be made, or ``commit`` could not be checked out.
    """
    tmp = Path(tempfile.mkdtemp(prefix="replaybook-replay-"))
    wt = tmp / "worktree"
    env = clean_git_env()
    try:
        git(["clone", "--shared", "--no-checkout", "--quiet", "--", str(Path(repo).resolve()), str(wt)],
            tmp, env=env)
        git(["fetch", "--quiet", "--no-tags", "--update-head-ok", "origin",
             "+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"], wt, env=env)
        git(["remote", "remove", "origin"], wt, env=env)
        for key in _COPIED_CONFIG:
            value = git(["config", "--get", key], repo, check=False, env=env).rstrip(b"\n")
            if value:
                git(["config", key, value.decode("utf-8", "surrogateescape")], wt, env=env)
        # each setting the repository reads otherwise than the clone would: a value from its own
        # config, a file it includes, its worktree's config, or a conditional include of the
        # user's that names the repository's folder (the clone's is another)
        have = effective_line_end_config(wt)
        for key, value in effective_line_end_config(repo).items():  # (a bare "autocrlf" as true, "" as "")
            if have.get(key) != value:
                git(["config", key, value], wt, env=env)
        git(["checkout", "--detach", "--quiet", commit], wt, env=env)
        yield wt
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


#: The former name of :func:`temporary_clone` (it made a ``git worktree``, which shares the
#: repository's config, refs and hooks with the replayed commands).
temporary_worktree = temporary_clone


def checkout(worktree: str | os.PathLike, commit: str) -> None:
    """Move a replay clone to ``commit`` (keeping untracked files and local changes).

    Raises:
        PacketError: git refused (e.g. local changes would be overwritten).
    """
    git(["checkout", "--detach", "--quiet", commit], worktree, env=clean_git_env())
