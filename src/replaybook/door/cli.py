"""Click commands of the door feature: ``door``, ``serve-capsule`` and ``prune``.

They are top-level commands of the ``replaybook`` CLI (``cli.add_command(door)`` …).  Until then,
and for spawning from MCP client configs, ``python -m replaybook.door COMMAND …`` runs the same
commands (:func:`main`), with the same exit codes: ``0`` ok, ``2`` bad input, ``1`` internal
error or the upstream server ended the session.
"""

from __future__ import annotations

import os
import sys
import traceback

import click

from ..errors import InputError, ReplaybookError

__all__ = ["door", "serve_capsule", "prune", "door_group", "main"]

_AGENT_ENV = "REPLAYBOOK_DOOR_AGENT"


def _seconds(value: float | None) -> float | None:
    """``--call-timeout``: a finite number of seconds (``nan`` and ``inf`` pass click's range check)."""
    import math

    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a number of seconds greater than 0")
    return value


def _fast_start() -> None:
    """Skip ``rfc3987_syntax`` when jsonschema is first imported in this process.

    jsonschema imports it (if installed) for its ``iri``/``uri`` format checkers, and building its
    grammar costs ~1.5 s — paid by every MCP server start, since MCP clients spawn the door as a
    process.  No door schema uses those formats; without the module jsonschema just does not
    check them.  Only done when jsonschema is not imported yet (never changes a running process).
    """
    if "jsonschema" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]


@click.command("door", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False,
                                         "help_option_names": ["-h", "--help"]})
@click.option("--rules", "rules_path", required=True, type=click.Path(exists=True, dir_okay=False),
              help="Rules file (YAML, door-rules.v1): first match decides, default deny.")
@click.option("--log-root", required=True, type=click.Path(file_okay=False),
              help="Call logs go to LOG_ROOT/<agent>/<session>.jsonl.")
@click.option("--evidence", type=click.Path(file_okay=False), default=None,
              help="Keep every full response here (sha256/<hex>) and log its digest.")
@click.option("--agent", default=None, help=f"Agent name (a folder of the log root; default ${_AGENT_ENV} or 'agent').")
@click.option("--session", default=None, help="Session id (default: door-<UTC time>-<random>).")
@click.option("--server-name", default=None,
              help="Upstream server name in the log (default: its serverInfo.name, else the command's name).")
@click.option("--max-message-bytes", type=click.IntRange(1024), default=16 << 20, show_default=True,
              help="Longest JSON-RPC line accepted from the client.")
@click.option("--call-timeout", type=click.FloatRange(0, min_open=True), default=None, metavar="SECONDS",
              callback=lambda ctx, param, v: _seconds(v),
              help="How long a call waits for the server's answer; then the client gets an error and the call "
                   "is logged as not answered in time (default: no limit).")
@click.option("--cwd", type=click.Path(file_okay=False, exists=True), default=None,
              help="Working folder of the server process.")
@click.option("--url", default=None, metavar="URL",
              help="A remote MCP server's Streamable HTTP endpoint (https://host/mcp), instead of SERVER_CMD.")
@click.option("--header", "headers", multiple=True, metavar="'NAME: VALUE'",
              help="With --url: an HTTP header sent with every request (e.g. 'Authorization: Bearer …'); "
                   "repeatable; never logged.")
@click.option("--header-env", "header_envs", multiple=True, metavar="NAME=VAR",
              help="With --url: header NAME with the value of environment variable VAR (a token kept off "
                   "the command line, which other users of the machine can list); repeatable.")
@click.option("--no-fsync", is_flag=True, hidden=True, help="Do not fsync log lines (benchmarks only).")
@click.argument("server_cmd", nargs=-1, required=False, type=click.UNPROCESSED)
def door(rules_path: str, log_root: str, evidence: str | None, agent: str | None, session: str | None,
         server_name: str | None, max_message_bytes: int, call_timeout: float | None, cwd: str | None, url: str | None,
         headers: tuple[str, ...], header_envs: tuple[str, ...], no_fsync: bool, server_cmd: tuple[str, ...]) -> None:
    """Put a door in front of the MCP server SERVER_CMD (after `--`), or of the remote one at
    --url: stdio in, stdio (or Streamable HTTP) out.

    Every tools/call and resources/read is decided by the rules, written to the call log
    (flushed and fsync'd) before it is answered, and a refused call is answered with an error
    naming the rule.  initialize, tools/list, resources/list … pass through untouched.
    """
    _fast_start()
    import anyio

    from .calllog import CallLog, new_session_id
    from .proxy import STOP_SIGNALS, run_door, run_door_url, shown_url
    from .rules import load_rules

    if bool(url) == bool(server_cmd):
        raise click.UsageError("give the MCP server either as a command after `--` or as --url URL, not both"
                               if url else "give the MCP server as a command after `--`, or --url URL")
    if cwd and url:
        raise click.UsageError("--cwd goes with a server started as a command, not with --url")
    if (headers or header_envs) and not url:
        raise click.UsageError("--header goes with --url (a server started as a command gets no HTTP headers)")
    sent: dict[str, str] = {}
    if url:
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(url)
        except ValueError as exc:  # e.g. "Invalid IPv6 URL": a '[' without its ']'
            # (not repeated: a URL that cannot be taken apart cannot have its user information and query left out)
            raise click.BadParameter(f"not a URL the door can read ({exc}); the URL is not repeated here",
                                     param_hint="--url") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise click.BadParameter(f"{shown_url(url)!r} is not an http(s) URL", param_hint="--url")
        try:
            port = parts.port  # ValueError: not a number, or above 65535
        except ValueError:
            port = -1
        if port is not None and not 1 <= port <= 65535:
            raise click.BadParameter(f"{shown_url(url)!r} has no valid port (a port is a number from 1 to 65535)",
                                     param_hint="--url")
        given = [(*h.partition(":")[::2], "--header", ":" in h) for h in headers]
        for spec in header_envs:
            name, _, var = spec.partition("=")
            if not var or var not in os.environ:
                raise click.BadParameter(f"expected NAME=VAR with VAR set in the environment ({var or '?'} is not)",
                                         param_hint="--header-env")
            given.append((name, os.environ[var], "--header-env", True))
        for name, value, option, ok in given:
            name, value = name.strip(), value.strip()
            if not ok or not name or any(c.isspace() or not c.isprintable() or not c.isascii() for c in name):
                raise click.BadParameter("expected 'NAME: VALUE': a header name, a colon, its value "
                                         "(the value is not repeated here)", param_hint=option)
            # (a value is never echoed: it is usually a secret)
            if any(c in value for c in "\r\n\0") or not value.isascii() or not value.isprintable():
                raise click.BadParameter(f"the value of header {name!r} holds a line break, a control or a "
                                         "non-ASCII character, which HTTP headers cannot carry (the value is not "
                                         "repeated here)", param_hint=option)
            sent[name] = value
    rules = load_rules(rules_path)
    agent = agent or os.environ.get(_AGENT_ENV) or "agent"
    log = CallLog(log_root, agent, session or new_session_id(), fsync=not no_fsync)
    store = None
    if evidence:
        from ..capsule.store import EvidenceStore

        from .retention import register_log_root

        store = EvidenceStore(evidence)
        try:  # so that `replaybook prune` of another log root keeps what this one references
            warning = register_log_root(evidence, log_root)
            if warning:
                click.echo(f"replaybook door: warning: {warning}", err=True)
        except OSError as exc:
            click.echo(f"replaybook door: cannot record the log root in the evidence store: {exc}", err=True)
    click.echo(f"replaybook door: session {log.session}, log {log.path}"
               + (f", server {shown_url(url)}" if url else ""), err=True)
    try:
        if url:
            ended = anyio.run(lambda: run_door_url(rules, log, url, headers=sent, evidence=store,
                                                   server_name=server_name, max_message_bytes=max_message_bytes,
                                                   call_timeout_s=call_timeout))
        else:
            ended = anyio.run(lambda: run_door(rules, log, list(server_cmd), evidence=store, server_name=server_name,
                                               cwd=cwd, max_message_bytes=max_message_bytes,
                                               call_timeout_s=call_timeout))
    except OSError as exc:
        from .proxy import UpstreamUnreachable

        if isinstance(exc, UpstreamUnreachable):
            raise InputError(str(exc)) from exc
        raise InputError(f"cannot start the MCP server {server_cmd[0]!r}: {exc.strerror or exc}") from exc
    finally:
        log.close()
    if ended == "server":
        click.echo("replaybook door: the MCP server exited", err=True)
        sys.exit(1)
    if ended in STOP_SIGNALS:  # the shell's convention: 128 + the signal's number
        import signal

        click.echo(f"replaybook door: stopped by {ended}; calls still waiting are logged as not answered", err=True)
        sys.exit(128 + getattr(signal, ended).value)


@click.command("serve-capsule", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("capsule_path", metavar="CAPSULE", type=click.Path(exists=True))
@click.option("--log-root", required=True, type=click.Path(file_okay=False),
              help="The replay's door-format log goes to LOG_ROOT/<agent>/<session>.jsonl.")
@click.option("--agent", default=None, help=f"Agent name (default ${_AGENT_ENV} or 'agent').")
@click.option("--session", default=None, help="Session id (default: replay-<UTC time>-<random>).")
@click.option("--rules", "rules_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="The original door's rules: only to log `object` the same way (roots, path arguments).")
@click.option("--record", type=click.Path(dir_okay=False), default=None,
              help="Run record (replaybook-run/1) path (default: LOG_ROOT/<agent>/<session>.run.json).")
def serve_capsule(capsule_path: str, log_root: str, agent: str | None, session: str | None,
                  rules_path: str | None, record: str | None) -> None:
    """Serve a replay capsule as an MCP server (stdio): answers only from captured evidence.

    Lists the tools seen in CAPSULE (capsule.yaml or its folder) and answers each call by its
    request digest through the forensic harness; anything not captured is an MCP error result
    and a replay_incomplete run record — never a live call.
    """
    _fast_start()
    import anyio

    from ..capsule import load_capsule
    from .calllog import CallLog, new_session_id
    from .replay import CapsuleServer, run_serve_capsule
    from .rules import load_rules

    capsule = load_capsule(capsule_path)
    agent = agent or os.environ.get(_AGENT_ENV) or "agent"
    log = CallLog(log_root, agent, session or new_session_id().replace("door-", "replay-", 1))
    server = CapsuleServer(capsule, log, record_path=record, rules=load_rules(rules_path) if rules_path else None)
    click.echo(f"replaybook serve-capsule: {capsule.operation_id}, session {log.session}, log {log.path}", err=True)
    try:
        anyio.run(run_serve_capsule, server)
    finally:
        log.close()
    rec = server.end()
    click.echo(f"replaybook serve-capsule: run {rec.status}"
               + (f" ({rec.stop_reason})" if rec.stop_reason else "") + f", record {server.record_path}", err=True)


@click.command("prune", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--log-root", required=True, type=click.Path(file_okay=False, exists=True),
              help="The door's log root (<agent>/<session>.jsonl).")
@click.option("--older-than", default=None,
              help="Remove sessions whose last call is older than this (30d, 12h, 1d12h). Default: "
                   "$REPLAYBOOK_DOOR_RETENTION, else [door] retention in replaybook.toml / "
                   "[tool.replaybook.door] retention in pyproject.toml, else 30d.")
@click.option("--dry-run", is_flag=True, help="List what would be removed; remove nothing.")
@click.option("--evidence", type=click.Path(file_okay=False), default=None,
              help="The door's evidence store: also remove objects no remaining session references.")
@click.option("--config", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Read the retention from this replaybook.toml / pyproject.toml.")
def prune(log_root: str, older_than: str | None, dry_run: bool, evidence: str | None, config: str | None) -> None:
    """Delete whole door sessions older than the retention limit, and their unshared evidence.

    Never removes a symlink or anything through one, never touches anything outside the log
    root (and the evidence store's sha256/ folder), skips files modified within the last minute
    or locked by a door, and keeps evidence any kept session references (also through a
    symlink, or in another log root that shares the evidence store).
    """
    from .config import format_duration, parse_duration, retention_setting
    from .retention import prune as do_prune

    if older_than is not None:
        limit, source = parse_duration(older_than), "--older-than"
    else:
        notes: list[str] = []
        limit, source = retention_setting(config, notes=notes)
        for note in notes:
            click.echo(f"replaybook: note: {note}", err=True)
    click.echo(f"retention {format_duration(limit)} (from {source})", err=True)
    report = do_prune(log_root, limit, dry_run=dry_run, evidence=evidence)
    for line in report.lines():
        click.echo(line)


@click.command("hold", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--reason", default=None, help="Why the sessions are held (a case or ticket number); required "
                                              "to place a hold.")
@click.option("--by", default=None, help="Who placed the hold (default: $USER, else the login name of the "
                                          "current user).")
@click.option("--release", is_flag=True, help="Release the hold instead of placing it.")
def hold(paths: tuple[str, ...], reason: str | None, by: str | None, release: bool) -> None:
    """Place (or release) a legal hold on door sessions: prune keeps them and their evidence.

    PATHS are door session files (<agent>/<session>.jsonl), folders of them (a log root, an
    agent's folder: walked for *.jsonl) or an incident.yaml, whose door logs are held. Each
    hold is a file beside its session (<session>.hold: reason, time, who); the session file
    itself is not touched.

    Every file is checked before any hold is written (or released): a session file named
    that cannot be held stops the command with nothing changed. Files of an incident's door
    list that are not door session files (a gateway log, anything not *.jsonl) and gzip'd
    sessions (*.jsonl.gz) met in a folder are not held, each said on stderr: prune removes
    only .jsonl door sessions, so nothing else needs a hold.
    """
    from pathlib import Path

    from .retention import check_holdable, hold_author, place_hold, release_hold

    if not release and not (reason or "").strip():
        raise click.UsageError("--reason is required to place a hold (a case or ticket number: it is kept with it)")
    files: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    not_door = ("not a door session file (*.jsonl): a hold keeps door sessions from `replaybook prune`; "
                "other logs are not pruned by replaybook")
    gzipped = "a gzip'd session (*.jsonl.gz): `replaybook prune` never removes it, so it needs no hold"

    def walk(folder: Path) -> None:
        for q in sorted(folder.rglob("*")):
            if q.is_symlink() or not q.is_file():
                continue
            if q.name.lower().endswith(".jsonl"):
                files.append(q)
            elif q.name.lower().endswith(".jsonl.gz"):
                skipped.append((q, gzipped))

    for raw in paths:
        p = Path(raw)
        if p.is_file() and p.suffix.lower() in (".yaml", ".yml"):
            from ..incident import Incident

            inc = Incident.load(p)
            for group in inc._groups("door").values():
                for f in group:
                    if f.is_dir():
                        walk(f)
                    elif f.name.lower().endswith(".jsonl"):
                        files.append(f)
                    else:  # a gateway's log, a gzip'd session …: prune never removes them
                        skipped.append((f, gzipped if f.name.lower().endswith(".jsonl.gz") else not_door))
        elif p.is_dir():
            walk(p)
        else:
            files.append(p)  # named by the user: it must be a session file (checked below)
    files = list(dict.fromkeys(f.resolve() if not f.is_symlink() else f for f in files))
    for f, why in dict.fromkeys(skipped):
        click.echo(f"not held: {f}: {why}", err=True)
    if not files:
        raise InputError("no door session file (*.jsonl) under " + ", ".join(paths))
    for f in files:  # all or nothing: a file that cannot be held stops the command before any write
        check_holdable(f)
    who = None if release else hold_author(by)
    done = 0
    for f in files:
        if release:
            if release_hold(f):
                click.echo(f"released the hold on {f}")
                done += 1
        else:
            click.echo(f"held {f} ({place_hold(f, reason.strip(), by=who)})")
            done += 1
    if release:
        click.echo(f"{done} session(s) released", err=True)
    else:
        click.echo(f"{done} session(s) held: {reason.strip()} (by: {who or 'unknown'})", err=True)


@click.group("door-tools", context_settings={"help_option_names": ["-h", "--help"]})
def door_group() -> None:
    """replaybook's door commands (also top-level commands of `replaybook`)."""


door_group.add_command(door)
door_group.add_command(serve_capsule)
door_group.add_command(prune)
door_group.add_command(hold)


def main(argv: list[str] | None = None) -> int:
    """``python -m replaybook.door``: run a door command and map errors to exit codes."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        rv = door_group.main(args=argv, prog_name="python -m replaybook.door", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code or 0)
    except click.ClickException as exc:
        exc.show()
        return 2
    except click.exceptions.Abort:
        return 2
    except ReplaybookError as exc:
        click.echo(f"replaybook: error: {exc}", err=True)
        return 2 if isinstance(exc, InputError) else 1
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else 1
    except Exception as exc:  # noqa: BLE001 - a bug: say so
        click.echo(f"replaybook: internal error: {type(exc).__name__}: {exc}", err=True)
        if os.environ.get("REPLAYBOOK_DEBUG"):
            traceback.print_exc()
        return 1
    return rv if isinstance(rv, int) else 0
