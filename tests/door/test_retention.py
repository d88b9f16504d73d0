"""Retention: ``replaybook prune`` removes exactly the old sessions (and their unshared evidence),
never follows symlinks, skips active and locked files; the retention default comes from config.
Also the call log writer's own guarantees."""

from __future__ import annotations

import fcntl
import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from replaybook.capsule.store import EvidenceStore
from replaybook.door.calllog import CallLog, check_name
from replaybook.door.cli import main, prune as prune_cmd
from replaybook.door.config import parse_duration, retention_setting
from replaybook.door.retention import prune
from replaybook.errors import InputError
from replaybook.sources.door import load_door

NOW = datetime.now(timezone.utc)
OLD_MTIME = time.time() - 90 * 86400


def _line(session: str, ts: datetime, seq: int, digest: str | None = None) -> dict:
    iso = ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    o = {"ts": iso, "ts_end": iso, "seq": seq, "session": session, "agent": "analyst", "tool": "read_object",
         "arguments": {"path": "demo/a"}, "object": "demo/a", "decision": "allow", "rule": "allow-demo"}
    if digest:
        o["response_digest"] = digest
    return o


def _session(root: Path, agent: str, name: str, last: datetime, digests=(), mtime: float | None = OLD_MTIME) -> Path:
    p = root / agent / f"{name}.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    lines = [_line(name, last - timedelta(minutes=5), 1)] + [_line(name, last, i + 2, d) for i, d in enumerate(digests)]
    if not digests:
        lines.append(_line(name, last, 2))
    p.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in lines))
    if mtime is not None:
        os.utime(p, (mtime, mtime))
    return p


@pytest.fixture
def world(tmp_path):
    """A log root with old and new sessions, shared and unshared evidence, and traps."""
    root, ev_root = tmp_path / "logs", tmp_path / "evidence"
    store = EvidenceStore(ev_root)
    only_old, shared, only_new = (store.put(b'{"a":1}'), store.put(b'{"b":2}'), store.put(b'{"c":3}'))
    for d in (only_old, shared, only_new):
        os.utime(store.path(d), (OLD_MTIME, OLD_MTIME))
    s = {
        "old1": _session(root, "analyst", "old1", NOW - timedelta(days=45), [only_old, shared]),
        "old2": _session(root, "deployer", "old2", NOW - timedelta(days=31)),
        "new1": _session(root, "analyst", "new1", NOW - timedelta(days=2), [shared, only_new]),
        "edge": _session(root, "analyst", "edge", NOW - timedelta(days=29)),
        # old content but written a moment ago: a door may be writing it
        "active": _session(root, "analyst", "active", NOW - timedelta(days=60), mtime=None),
    }
    (s["old1"].with_name("old1.run.json")).write_text("{}")
    # traps: a symlink to a file outside the root, a symlinked agent folder, a non-jsonl file
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = _session(outside, "x", "victim", NOW - timedelta(days=400))
    (root / "analyst" / "link.jsonl").symlink_to(victim)
    (root / "linked-agent").symlink_to(victim.parent)
    (root / "analyst" / "notes.txt").write_text("keep me")
    os.utime(root / "analyst" / "notes.txt", (OLD_MTIME, OLD_MTIME))
    return {"root": root, "evidence": ev_root, "store": store, "s": s, "victim": victim,
            "digests": {"only_old": only_old, "shared": shared, "only_new": only_new}}


def test_dry_run_lists_exactly_the_old_sessions_and_removes_nothing(world):
    before = sorted(p for p in world["root"].rglob("*"))
    r = CliRunner().invoke(prune_cmd, ["--log-root", str(world["root"]), "--older-than", "30d", "--dry-run",
                                       "--evidence", str(world["evidence"])])
    assert r.exit_code == 0, r.output
    would = [line for line in r.output.splitlines() if line.startswith("would remove ")]
    assert would == [
        f"would remove {world['s']['old1']} (last call {(NOW - timedelta(days=45)):%Y-%m-%dT%H:%M:%SZ})",
        f"would remove {world['s']['old2']} (last call {(NOW - timedelta(days=31)):%Y-%m-%dT%H:%M:%SZ})",
        f"would remove {world['s']['old1'].with_name('old1.run.json')}",
        f"would remove evidence {world['store'].path(world['digests']['only_old'])}",
    ]
    assert f"skipped {world['s']['active']} (active: modified within the last 60 s: a door may still be writing it)" \
        in r.output
    assert sorted(p for p in world["root"].rglob("*")) == before
    assert world["store"].has(world["digests"]["only_old"])


def test_prune_removes_exactly_those_and_their_unshared_evidence(world):
    rep = prune(world["root"], timedelta(days=30), evidence=world["evidence"])
    assert sorted(s.path for s in rep.removed) == sorted([world["s"]["old1"], world["s"]["old2"]])
    for k, p in world["s"].items():
        assert p.exists() == (k not in ("old1", "old2")), k
    assert not world["s"]["old1"].with_name("old1.run.json").exists()
    assert not (world["root"] / "deployer").exists()  # emptied agent folder goes too
    d = world["digests"]
    store = world["store"]
    assert not store.has(d["only_old"]) and store.has(d["shared"]) and store.has(d["only_new"])
    # nothing outside the root, no symlink, no foreign file touched
    assert world["victim"].exists() and (world["root"] / "analyst" / "link.jsonl").is_symlink()
    assert (world["root"] / "linked-agent").is_symlink() and (world["root"] / "analyst" / "notes.txt").exists()
    assert load_door(world["root"] / "analyst").quarantine.empty
    # idempotent
    assert prune(world["root"], timedelta(days=30), evidence=world["evidence"]).removed == []


def test_a_locked_session_is_skipped(world):
    fd = os.open(world["s"]["old2"], os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        rep = prune(world["root"], timedelta(days=30))
        assert [s.path for s in rep.removed] == [world["s"]["old1"]]
        assert {s.path: s.status for s in rep.sessions}[world["s"]["old2"]] == "locked"
        assert world["s"]["old2"].exists()
    finally:
        os.close(fd)


def test_a_running_door_log_is_never_pruned(tmp_path):
    log = CallLog(tmp_path / "logs", "analyst", "live")
    log.write(_line("live", NOW - timedelta(days=99), 1))
    os.utime(log.path, (OLD_MTIME, OLD_MTIME))
    try:
        rep = prune(tmp_path / "logs", timedelta(days=1))
        assert rep.removed == [] and rep.sessions[0].status == "locked"
    finally:
        log.close()
    assert [s.path for s in prune(tmp_path / "logs", timedelta(days=1)).removed] == [log.path]


def test_retention_default_comes_from_env_then_config_files(tmp_path, monkeypatch):
    monkeypatch.delenv("REPLAYBOOK_DOOR_RETENTION", raising=False)
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    assert retention_setting(cwd=sub, env={}) == (timedelta(days=30), "default")
    (tmp_path / "pyproject.toml").write_text('[tool.replaybook.door]\nretention = "14d"\n')
    assert retention_setting(cwd=sub, env={}) == (timedelta(days=14), str(tmp_path / "pyproject.toml"))
    (tmp_path / "a" / "replaybook.toml").write_text('[door]\nretention = "1w"\n')
    assert retention_setting(cwd=sub, env={})[0] == timedelta(days=7)
    assert retention_setting(cwd=sub, env={"REPLAYBOOK_DOOR_RETENTION": "12h"}) == (timedelta(hours=12),
                                                                                   "$REPLAYBOOK_DOOR_RETENTION")
    (tmp_path / "bad.toml").write_text('[door]\nretention = "soon"\n')
    with pytest.raises(InputError, match="not a duration"):
        retention_setting(tmp_path / "bad.toml", env={})
    # the CLI uses it when --older-than is not given
    root = tmp_path / "logs"
    _session(root, "analyst", "s10", NOW - timedelta(days=10))
    monkeypatch.setenv("REPLAYBOOK_DOOR_RETENTION", "7d")
    r = CliRunner().invoke(prune_cmd, ["--log-root", str(root), "--dry-run"])
    assert r.exit_code == 0 and "would remove" in r.output
    assert "retention 1w (from $REPLAYBOOK_DOOR_RETENTION)" in r.output
    monkeypatch.setenv("REPLAYBOOK_DOOR_RETENTION", "30d")
    assert "would remove" not in CliRunner().invoke(prune_cmd, ["--log-root", str(root), "--dry-run"]).output


def test_durations_and_bad_input(tmp_path):
    assert parse_duration("30d") == timedelta(days=30)
    assert parse_duration("1d12h") == timedelta(days=1, hours=12)
    assert parse_duration("90m") == timedelta(minutes=90) and parse_duration("2w") == timedelta(weeks=2)
    assert parse_duration("0") == timedelta(0)
    for bad in ("", "30", "d30", "3x", "30d junk", "-1d"):
        with pytest.raises(InputError):
            parse_duration(bad)
    assert main(["prune", "--log-root", str(tmp_path), "--older-than", "soon"]) == 2
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    with pytest.raises(InputError, match="symlink"):
        prune(link, timedelta(days=1))


def test_a_session_log_ending_in_a_torn_line_is_continued_on_a_line_of_its_own(tmp_path):
    """A door killed mid-line (or a session id used again) left a torn last line: the next
    door's first line must not be glued onto it — the torn line stays one damaged line, the new
    line is whole and loads."""
    from replaybook.sources.door import load_door

    f = tmp_path / "analyst" / "s1.jsonl"
    f.parent.mkdir()
    whole = orjson.dumps(_line("s1", NOW, 1)) + b"\n"
    f.write_bytes(whole + b'{"ts": "2026-')
    log = CallLog(tmp_path, "analyst", "s1")
    assert log.next_seq() == 2
    log.write(_line("s1", NOW, 2))
    log.write(_line("s1", NOW, 3))
    log.close()
    assert f.read_bytes().split(b"\n")[1:] == [b'{"ts": "2026-', orjson.dumps(_line("s1", NOW, 2)),
                                               orjson.dumps(_line("s1", NOW, 3)), b""]
    res = load_door(f)
    assert list(res.frame["seq"]) == [1, 2, 3] and list(res.quarantine["line_no"]) == [2]
    # a file that ends in a whole line gains no empty line
    log = CallLog(tmp_path, "analyst", "s2")
    log.write(_line("s2", NOW, 1))
    log.close()
    log = CallLog(tmp_path, "analyst", "s2")
    log.write(_line("s2", NOW, 2))
    log.close()
    assert (tmp_path / "analyst" / "s2.jsonl").read_bytes().count(b"\n\n") == 0


def test_a_session_log_removed_or_replaced_under_the_door_goes_on_in_a_new_file(tmp_path, capsys):
    """An agent with a shell removes the door's log mid-session: later lines must reach a file at
    the log path, not the removed one no reader will find."""
    from replaybook.sources.door import load_door

    log = CallLog(tmp_path, "analyst", "s1")
    f = log.path
    log.write(_line("s1", NOW, 1))
    f.unlink()
    log.write(_line("s1", NOW, 2))
    assert "was removed or replaced while the door ran (it held 1 line(s) this door wrote, no longer at that " \
        "path)" in capsys.readouterr().err
    assert list(load_door(f).frame["seq"]) == [2]
    # replaced by another file (moved aside, a copy put back): the lines go on at the path
    f.rename(tmp_path / "aside.jsonl")
    f.write_bytes(b"")
    log.write(_line("s1", NOW, 3))
    log.close()
    assert "(it held 1 line(s) this door wrote" in capsys.readouterr().err  # (this file's, not the session's 2)
    assert list(load_door(f).frame["seq"]) == [3]
    assert list(load_door(tmp_path / "aside.jsonl").frame["seq"]) == [2]
    # replaced by a symlink: refused, as at the start (the door then forwards nothing)
    log = CallLog(tmp_path, "analyst", "s1")
    log.write(_line("s1", NOW, 4))
    f.unlink()
    f.symlink_to(tmp_path / "aside.jsonl")
    with pytest.raises(InputError, match="cannot open"):
        log.write(_line("s1", NOW, 5))
    log.close()
    assert list(load_door(tmp_path / "aside.jsonl").frame["seq"]) == [2]


def test_a_fifo_at_the_log_path_is_refused_and_never_blocks_the_door(tmp_path):
    """A FIFO planted at the log path — before the door starts, or in place of its log mid-session —
    would take the lines (fsync fails on it) and then block the door's event loop once its pipe
    is full, past any signal: it is refused as not a regular file."""
    log = CallLog(tmp_path, "analyst", "s1")
    log.path.parent.mkdir(parents=True)
    os.mkfifo(log.path)
    with pytest.raises(InputError, match="not a regular file"):
        log.write(_line("s1", NOW, 1))
    log.path.unlink()
    log.write(_line("s1", NOW, 1))
    log.path.unlink()
    os.mkfifo(log.path)
    for seq in (2, 3):
        with pytest.raises(InputError, match="not a regular file"):
            log.write(_line("s1", NOW, seq))
    log.close()


def test_a_log_path_that_cannot_be_looked_at_keeps_the_file_the_door_has(tmp_path, monkeypatch, capsys):
    """Only a log that is gone counts as removed: when the path cannot be looked at for another
    reason (its folder made unreadable), the door goes on writing to the file it has open."""
    from replaybook.sources.door import load_door

    log = CallLog(tmp_path, "analyst", "s1")
    log.write(_line("s1", NOW, 1))
    real_stat = os.stat

    def refused(path, *a, **kw):
        if Path(path) == log.path:
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *a, **kw)

    monkeypatch.setattr(os, "stat", refused)
    log.write(_line("s1", NOW, 2))
    monkeypatch.undo()
    log.close()
    assert list(load_door(log.path).frame["seq"]) == [1, 2]
    assert "removed or replaced" not in capsys.readouterr().err  # (the file was never taken for gone)


def test_call_log_writer(tmp_path):
    log = CallLog(tmp_path, "analyst", "s1")
    assert [log.next_seq(), log.next_seq()] == [1, 2]
    log.write(_line("s1", NOW, 1))
    log.write(_line("s1", NOW, 2))
    with pytest.raises(InputError, match="locked"):
        CallLog(tmp_path, "analyst", "s1").write(_line("s1", NOW, 3))
    log.close()
    resumed = CallLog(tmp_path, "analyst", "s1")
    assert resumed.next_seq() == 3  # a resumed session continues numbering
    resumed.close()
    target = tmp_path / "elsewhere.jsonl"
    target.write_text("")
    (tmp_path / "analyst" / "trap.jsonl").symlink_to(target)
    with pytest.raises(InputError, match="cannot open"):
        CallLog(tmp_path, "analyst", "trap").write(_line("trap", NOW, 1))
    assert target.read_text() == ""
    for bad in ("../x", ".hidden", "a/b", "", "x" * 200):
        with pytest.raises(InputError):
            check_name(bad, "agent")


def test_evidence_an_unreadable_session_may_reference_is_kept(world, monkeypatch):
    """A session prune cannot read (another user's file, an I/O error) may reference any
    evidence object: removing the old sessions' objects would orphan its lines."""
    import replaybook.door.retention as retention

    real = retention._open_nofollow

    def refuse_new1(path):
        if Path(path) == world["s"]["new1"]:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(retention, "_open_nofollow", refuse_new1)
    rep = prune(world["root"], timedelta(days=30), evidence=world["evidence"])
    assert sorted(s.path for s in rep.removed) == sorted([world["s"]["old1"], world["s"]["old2"]])
    assert {s.path: s.status for s in rep.sessions}[world["s"]["new1"]] == "unreadable"
    assert rep.evidence_removed == []
    assert all(world["store"].has(d) for d in world["digests"].values())
    assert any("kept all evidence" in line for line in rep.lines())


def test_a_retention_longer_than_a_date_can_count_is_bad_input(tmp_path):
    (tmp_path / "logs").mkdir()
    for limit in ("99999999999d", "9999999999w", "1000000000d", "800000d"):
        assert main(["prune", "--log-root", str(tmp_path / "logs"), "--older-than", limit, "--dry-run"]) == 2, limit
    with pytest.raises(InputError, match="too long"):
        parse_duration("99999999999d")
    with pytest.raises(InputError, match="before year 1"):
        prune(tmp_path / "logs", timedelta(days=800000))


def test_a_session_under_a_legal_hold_is_kept_with_its_evidence_until_released(world, tmp_path):
    # an incident under review: prune deleted its door log and evidence like any other once
    # they were old enough; a hold keeps both, whatever their age, until it is released
    from replaybook.door.cli import hold as hold_cmd
    from replaybook.door.retention import hold_path

    old1 = world["s"]["old1"]
    r = CliRunner().invoke(hold_cmd, [str(old1)])
    assert r.exit_code == 2 and "--reason is required" in r.output
    r = CliRunner().invoke(hold_cmd, [str(old1), "--reason", "INC-4711 wrong Q3 figure", "--by", "reviewer"])
    assert r.exit_code == 0, r.output
    held = orjson.loads(hold_path(old1).read_bytes())
    assert held["reason"] == "INC-4711 wrong Q3 figure" and held["by"] == "reviewer" and held["session"] == "old1.jsonl"
    before = old1.read_bytes()
    r = CliRunner().invoke(prune_cmd, ["--log-root", str(world["root"]), "--older-than", "30d",
                                       "--evidence", str(world["evidence"])])
    assert r.exit_code == 0, r.output
    assert (f"kept {old1} (legal hold: INC-4711 wrong Q3 figure; last call "
            f"{(NOW - timedelta(days=45)):%Y-%m-%dT%H:%M:%SZ})") in r.output
    assert "1 session(s) and 0 evidence object(s) removed (1 old enough kept under a legal hold)" in r.output
    assert old1.read_bytes() == before and old1.with_name("old1.run.json").exists()
    assert not world["s"]["old2"].exists()  # the others go as before
    d = world["digests"]
    assert world["store"].has(d["only_old"]) and world["store"].has(d["shared"])  # its evidence stays
    # a hold file that cannot be read still holds
    hold_path(old1).write_bytes(b"\x00not json")
    assert [s.status for s in prune(world["root"], timedelta(days=30)).sessions if s.path == old1] == ["held"]
    # released: the next prune removes it and its evidence
    r = CliRunner().invoke(hold_cmd, [str(world["root"]), "--release"])
    assert r.exit_code == 0 and f"released the hold on {old1}" in r.output and not hold_path(old1).exists()
    rep = prune(world["root"], timedelta(days=30), evidence=world["evidence"])
    assert [s.path for s in rep.removed] == [old1] and not world["store"].has(d["only_old"])


def test_hold_takes_an_incident_and_holds_its_door_logs(tmp_path):
    from replaybook.door.cli import hold as hold_cmd
    from replaybook.door.retention import hold_path

    root = tmp_path / "inc"
    a = _session(root / "door", "analyst", "s1", NOW - timedelta(days=90))
    b = _session(root / "door", "deployer", "s2", NOW - timedelta(days=90))
    (root / "t").mkdir()
    (root / "t" / "c.jsonl").write_text('{"type": "user", "uuid": "u1", "sessionId": "c", "timestamp": '
                                         '"2026-09-13T10:00:00Z", "message": {"role": "user", "content": "hi"}}\n')
    (root / "incident.yaml").write_text("title: t\ntranscripts: [t/]\ndoor: [door/]\n")
    r = CliRunner().invoke(hold_cmd, [str(root / "incident.yaml"), "--reason", "INC-1"])
    assert r.exit_code == 0, r.output
    assert hold_path(a).exists() and hold_path(b).exists()
    assert [s.status for s in prune(root / "door", timedelta(days=30)).sessions] == ["held", "held"]
    # the incident still loads its door logs alone: a hold file is not a log
    from replaybook.incident import Incident

    inc = Incident.load(root / "incident.yaml")
    assert len(inc.calls) == 4 and inc.quarantine.empty
    r = CliRunner().invoke(hold_cmd, [str(tmp_path / "inc" / "door" / "analyst" / "nothing"), "--reason", "x"])
    assert r.exit_code == 2


def test_a_gzipped_session_is_read_for_its_evidence_and_never_removed(world):
    import gzip

    d = world["digests"]
    old1 = world["s"]["old1"]
    # the only session referencing `only_old` besides old1: archived, gzip'd, by another tool
    gz = old1.with_name("archived.JSONL.GZ")
    gz.write_bytes(gzip.compress(old1.read_bytes()))
    os.utime(gz, (OLD_MTIME, OLD_MTIME))
    r = CliRunner().invoke(prune_cmd, ["--log-root", str(world["root"]), "--older-than", "30d",
                                       "--evidence", str(world["evidence"])])
    assert r.exit_code == 0, r.output
    assert gz.exists() and not old1.exists()
    assert world["store"].has(d["only_old"])  # the gzip'd session still references it
    assert (f"kept {gz} (gzip'd session: prune removes only .jsonl sessions a door may hold a lock on; "
            "the evidence it references kept)") in r.output
    # a damaged gzip stream is unreadable: no evidence goes
    gz.write_bytes(gzip.compress(b"x" * 100)[:-12])
    rep = prune(world["root"], timedelta(days=30), evidence=world["evidence"])
    assert {s.path: s.status for s in rep.sessions}[gz] == "unreadable"
    assert gz.exists()


def test_load_door_walks_gzipped_logs_in_any_case(tmp_path):
    import gzip

    for name in ("lo/a/s.jsonl.gz", "up/a/S.JSONL.GZ"):
        p = tmp_path / name
        p.parent.mkdir(parents=True)
        p.write_bytes(gzip.compress(b"".join(orjson.dumps(_line("s", NOW, i)) + b"\n" for i in (1, 2, 3))))
        res = load_door(p.parent.parent)
        assert len(res.frame) == 3 and [i["path"] for i in res.inputs] == [str(p)]


def _incident_with_gateway_log(tmp_path):
    root = tmp_path / "inc"
    a = _session(root / "door", "analyst", "s1", NOW - timedelta(days=90))
    gw = root / "gateway" / "agentgateway.log"
    gw.parent.mkdir(parents=True)
    gw.write_text('{"level":"info","msg":"started"}\n')
    (root / "t").mkdir()
    (root / "t" / "c.jsonl").write_text('{"type": "user", "uuid": "u1", "sessionId": "c", "timestamp": '
                                         '"2026-09-13T10:00:00Z", "message": {"role": "user", "content": "hi"}}\n')
    (root / "incident.yaml").write_text("title: t\ntranscripts: [t/]\ndoor: [door/, gateway/agentgateway.log]\n")
    return root, a, gw


def test_hold_skips_an_incidents_gateway_log_with_a_word_and_holds_its_sessions(tmp_path, monkeypatch):
    from replaybook.door.cli import hold as hold_cmd
    from replaybook.door.retention import hold_path

    root, a, gw = _incident_with_gateway_log(tmp_path)
    monkeypatch.delenv("USER", raising=False)
    monkeypatch.setenv("LOGNAME", "reviewer-from-logname")
    r = CliRunner().invoke(hold_cmd, [str(root / "incident.yaml"), "--reason", "INC-2"])
    assert r.exit_code == 0, r.output
    assert r.stderr.splitlines() == [
        f"not held: {gw}: not a door session file (*.jsonl): a hold keeps door sessions from `replaybook prune`; "
        "other logs are not pruned by replaybook",
        "1 session(s) held: INC-2 (by: reviewer-from-logname)"]
    assert orjson.loads(hold_path(a).read_bytes())["by"] == "reviewer-from-logname"
    assert not hold_path(gw).exists() and not list(gw.parent.glob("*.hold"))
    r = CliRunner().invoke(hold_cmd, [str(root / "incident.yaml"), "--release"])
    assert r.exit_code == 0, r.output
    assert f"not held: {gw}: not a door session file" in r.stderr and not hold_path(a).exists()


def test_hold_writes_nothing_when_a_named_file_cannot_be_held(tmp_path):
    from replaybook.door.cli import hold as hold_cmd
    from replaybook.door.retention import hold_path

    root, a, gw = _incident_with_gateway_log(tmp_path)
    for args in ([str(a), str(gw), "--reason", "INC-3"], [str(a), str(gw), "--release"]):
        r = CliRunner().invoke(hold_cmd, args)
        assert r.exit_code != 0 and "a hold is placed on a door session file" in str(r.exception)
        assert not hold_path(a).exists()
    # released alike: a hold already there stays when a named file cannot be released
    CliRunner().invoke(hold_cmd, [str(a), "--reason", "INC-3"])
    r = CliRunner().invoke(hold_cmd, [str(a), str(gw), "--release"])
    assert r.exit_code != 0 and hold_path(a).exists()


def test_a_hold_without_a_reason_is_refused_by_the_cli_and_the_api(tmp_path):
    from replaybook.door.cli import hold as hold_cmd
    from replaybook.door.retention import hold_path, place_hold
    from replaybook.errors import InputError

    root, a, gw = _incident_with_gateway_log(tmp_path)
    for reason in ("", "  \t "):
        r = CliRunner().invoke(hold_cmd, [str(a), "--reason", reason])
        assert r.exit_code == 2 and "--reason is required" in r.output
        with pytest.raises(InputError, match="a hold needs a reason"):
            place_hold(a, reason)
        assert not hold_path(a).exists()
    assert orjson.loads(place_hold(a, "INC-9").read_bytes())["reason"] == "INC-9"


def test_hold_author_falls_back_to_the_login_name(monkeypatch):
    import getpass

    from replaybook.door.retention import hold_author

    monkeypatch.delenv("USER", raising=False)
    monkeypatch.setattr(getpass, "getuser", lambda: "uid-name")
    assert hold_author() == "uid-name" and hold_author(" alice ") == "alice"

    def no_name():
        raise OSError("no username set in the environment")

    monkeypatch.setattr(getpass, "getuser", no_name)
    assert hold_author() is None


def test_a_session_named_in_upper_case_is_held_and_pruned_like_any_other(world):
    # the loaders read UP4.JSONL as a session, but prune and hold did not see it: its evidence
    # was removed as referenced by nothing, and a hold on it was refused
    from replaybook.door.cli import hold as hold_cmd
    from replaybook.door.retention import hold_path

    d = world["digests"]
    up = _session(world["root"], "analyst", "UP4", NOW - timedelta(days=90), [d["only_new"]])
    up = up.rename(up.with_name("UP4.JSONL"))
    os.utime(up, (OLD_MTIME, OLD_MTIME))
    r = CliRunner().invoke(hold_cmd, [str(world["root"] / "analyst"), "--reason", "INC-9"])
    assert r.exit_code == 0, r.output
    assert f"held {up}" in r.output and hold_path(up).name == "UP4.hold"
    rep = prune(world["root"], timedelta(days=30), evidence=world["evidence"])
    assert [s.status for s in rep.sessions if s.path == up] == ["held"]
    CliRunner().invoke(hold_cmd, [str(up), "--release"])
    world["s"]["new1"].unlink()  # (the other session referencing only_new)
    rep = prune(world["root"], timedelta(days=30), evidence=world["evidence"])
    assert up in [s.path for s in rep.removed] and not world["store"].has(d["only_new"])


def test_sessions_in_subfolders_are_read_held_and_pruned_like_any_other(world, tmp_path):
    # `load calls` and `hold` walk a log root recursively, but prune looked at
    # <root>/<agent>/*.jsonl only: the evidence of a held session in <agent>/archive/ was removed
    from replaybook.door.cli import hold as hold_cmd

    d, root = world["digests"], world["root"]
    kept = _session(root, "analyst/archive", "kept", NOW - timedelta(days=90), [d["only_old"]])
    gone = _session(root, "analyst/archive/2020", "gone", NOW - timedelta(days=90))
    young = _session(root, "deployer/archive", "young", NOW - timedelta(days=3), [d["only_new"]])
    top = _session(root, ".", "top", NOW - timedelta(days=90))
    # a linked folder is read at any depth (and a link back up does not loop)
    deep = _session(tmp_path / "outside2", "a/b", "deep", NOW - timedelta(days=1), [d["shared"]])
    (root / "analyst" / "ext").symlink_to(tmp_path / "outside2")
    (tmp_path / "outside2" / "a" / "up").symlink_to(tmp_path / "outside2")
    world["s"]["new1"].unlink()  # the only other session referencing shared and only_new
    r = CliRunner().invoke(hold_cmd, [str(kept), "--reason", "INC-1"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(prune_cmd, ["--log-root", str(root), "--older-than", "30d",
                                       "--evidence", str(world["evidence"])])
    assert r.exit_code == 0, r.output
    assert f"kept {kept} (legal hold: INC-1; last call {(NOW - timedelta(days=90)):%Y-%m-%dT%H:%M:%SZ})" in r.output
    assert f"removed {gone} (last call {(NOW - timedelta(days=90)):%Y-%m-%dT%H:%M:%SZ})" in r.output
    assert f"removed {top} (last call {(NOW - timedelta(days=90)):%Y-%m-%dT%H:%M:%SZ})" in r.output
    assert f"skipped {root / 'analyst' / 'ext'} (symlink: not removed, the evidence it references kept)" in r.output
    assert "4 session(s) and 0 evidence object(s) removed (1 old enough kept under a legal hold)" in r.output
    assert kept.exists() and young.exists() and deep.exists()
    assert not gone.exists() and not gone.parent.exists() and not top.exists() and root.is_dir()
    assert not world["s"]["old1"].exists() and not world["s"]["old2"].exists()
    store = world["store"]
    assert store.has(d["only_old"]) and store.has(d["only_new"]) and store.has(d["shared"])
    rep = prune(root, timedelta(days=30), evidence=world["evidence"])
    assert {s.path: s.status for s in rep.sessions}[kept] == "held"
    assert {s.path: s.status for s in rep.sessions}[root / "analyst" / "ext" / "a" / "b" / "deep.jsonl"] == "linked"
    # released, it goes with its evidence
    CliRunner().invoke(hold_cmd, [str(kept), "--release"])
    rep = prune(root, timedelta(days=30), evidence=world["evidence"])
    assert [s.path for s in rep.removed] == [kept] and not store.has(d["only_old"])
    assert store.has(d["only_new"]) and store.has(d["shared"])


def test_a_subfolder_prune_cannot_list_keeps_all_evidence(world, monkeypatch):
    import replaybook.door.retention as retention

    d, root = world["digests"], world["root"]
    hidden = root / "analyst" / "archive"
    _session(root, "analyst/archive", "kept", NOW - timedelta(days=1), [d["only_old"]])
    real = os.scandir

    def refuse(path):
        if Path(path) == hidden:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(retention.os, "scandir", refuse)
    rep = prune(root, timedelta(days=30), evidence=world["evidence"])
    assert sorted(s.path for s in rep.removed) == sorted([world["s"]["old1"], world["s"]["old2"]])
    assert rep.evidence_removed == [] and world["store"].has(d["only_old"])
    assert f"skipped {hidden} (unreadable: the folder could not be listed: Permission denied)" in rep.lines()
    assert "kept all evidence: a session that could not be read may still reference it" in rep.lines()


def test_another_log_roots_sessions_in_subfolders_keep_their_evidence(world, tmp_path):
    from replaybook.door.retention import register_log_root

    d = world["digests"]
    other = tmp_path / "other"
    _session(other, "analyst/archive", "b", NOW - timedelta(days=400), [d["only_old"]])
    register_log_root(world["evidence"], other)
    rep = prune(world["root"], timedelta(days=30), evidence=world["evidence"])
    assert world["s"]["old1"] in [s.path for s in rep.removed]
    assert [s.path for s in rep.shared_sessions] == [other / "analyst" / "archive" / "b.jsonl"]
    assert world["store"].has(d["only_old"]) and rep.evidence_removed == []


def test_a_replaybook_toml_that_cannot_be_read_is_an_error_not_the_default(tmp_path, monkeypatch, capsys):
    # it was passed over, and prune fell back to 30d: it deleted sessions the file kept for 365d
    monkeypatch.delenv("REPLAYBOOK_DOOR_RETENTION", raising=False)
    monkeypatch.chdir(tmp_path)
    cfg = tmp_path / "replaybook.toml"
    cfg.write_text('[door]\nretention = "365d"\n\n[report]\ntitle = Q3 review\n')
    s = _session(tmp_path / "logs", "analyst", "s", NOW - timedelta(days=60))
    with pytest.raises(InputError) as e:
        retention_setting(cwd=tmp_path, env={})
    assert e.value.path == str(cfg) and e.value.line_no == 5
    assert str(e.value) == f"{cfg}:5: cannot read config: not valid TOML: Invalid value (at line 5, column 9)"
    assert main(["prune", "--log-root", str(tmp_path / "logs")]) == 2
    assert s.exists()
    assert f"replaybook: error: {cfg}:5: cannot read config: not valid TOML" in capsys.readouterr().err
    # a setting in it that is no duration string is an error too (it had been passed over)
    cfg.write_text('[door]\nretention = ["365d"]\n')
    with pytest.raises(InputError, match="must be a duration string"):
        retention_setting(cwd=tmp_path, env={})
    cfg.write_bytes(b'[door]\nretention = "365d" # \xff\n')
    with pytest.raises(InputError, match="not UTF-8"):
        retention_setting(cwd=tmp_path, env={})
    cfg.unlink()
    # a pyproject.toml is another tool's file: one that does not parse is passed over, said on stderr
    (tmp_path / "pyproject.toml").write_text('[project]\nname = oops\n')
    notes: list[str] = []
    assert retention_setting(cwd=tmp_path, env={}, notes=notes) == (timedelta(days=30), "default")
    assert notes == [f"{tmp_path / 'pyproject.toml'}:2: cannot read config: not valid TOML: Invalid value "
                     "(at line 2, column 8) (passed over: a [tool.replaybook.door] retention in it is not read)"]
    assert main(["prune", "--log-root", str(tmp_path / "logs"), "--dry-run"]) == 0
    err = capsys.readouterr().err
    assert f"replaybook: note: {tmp_path / 'pyproject.toml'}:2: cannot read config" in err
    assert "retention 30d (from default)" in err


def test_a_pyproject_whose_tool_or_tool_replaybook_is_no_table(tmp_path, monkeypatch, capsys):
    # the chained .get() met a list: prune ended in an internal error (AttributeError), exit 1
    monkeypatch.delenv("REPLAYBOOK_DOOR_RETENTION", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    py = tmp_path / "pyproject.toml"
    py.write_text('[tool]\nreplaybook = ["door"]\n')
    with pytest.raises(InputError) as e:
        retention_setting(cwd=tmp_path, env={})
    assert str(e.value) == (f'{py}: tool.replaybook must be a table ([tool.replaybook.door] retention = "30d"), '
                            "got an array")
    assert main(["prune", "--log-root", str(tmp_path / "logs"), "--dry-run"]) == 2
    assert "replaybook: error: " + str(e.value) in capsys.readouterr().err
    py.write_text('[tool.replaybook]\ndoor = "14d"\n')
    with pytest.raises(InputError, match=r'tool.replaybook.door must be a table .*got a string'):
        retention_setting(cwd=tmp_path, env={})
    # `tool` itself that is no table: not ours, passed over
    py.write_text('tool = "poetry"\n')
    assert retention_setting(cwd=tmp_path, env={}) == (timedelta(days=30), "default")
    assert retention_setting(py, env={}) == (timedelta(days=30), "default")
    assert main(["prune", "--log-root", str(tmp_path / "logs"), "--dry-run"]) == 0
    # [door] in replaybook.toml that is no table
    (tmp_path / "replaybook.toml").write_text('door = 7\n')
    with pytest.raises(InputError, match=r'door must be a table \(\[door\] retention = "30d"\), got an integer'):
        retention_setting(cwd=tmp_path, env={})


def test_a_log_root_sharing_the_store_that_is_missing_keeps_all_evidence(world, tmp_path):
    # an unmounted log root was read as empty: the evidence its sessions reference was removed,
    # and the report said it had been read
    from replaybook.door.retention import register_log_root

    d, ev = world["digests"], world["evidence"]
    mnt = tmp_path / "mnt" / "B"
    _session(mnt, "analyst", "b", NOW - timedelta(days=1), [d["only_old"]])
    register_log_root(ev, mnt)
    mnt.rename(mnt.with_name("B.off"))  # unmounted
    rep = prune(world["root"], timedelta(days=30), evidence=ev)
    assert sorted(s.path for s in rep.removed) == sorted([world["s"]["old1"], world["s"]["old2"]])
    assert rep.evidence_removed == [] and world["store"].has(d["only_old"])
    lines = rep.lines()
    assert (f"could not read {mnt}, a log root that shares the evidence store (it does not exist: not mounted, "
            f"moved or deleted?): no evidence is removed while it cannot be read (its sessions may reference "
            f"any object; if it is gone for good, remove its record from {ev / 'log-roots'})") in lines
    assert not any(line.startswith(f"read {mnt} too") for line in lines)
    assert "kept all evidence: a session that could not be read may still reference it" in lines
    # a file where the root was is no log root either
    mnt.write_text("")
    rep = prune(world["root"], timedelta(days=30), evidence=ev)
    assert any(f"could not read {mnt}, a log root that shares the evidence store (it is not a folder)" in line
               for line in rep.lines())
    mnt.unlink()
    # mounted again: it is read, and what it references is kept while the rest goes
    mnt.with_name("B.off").rename(mnt)
    _session(world["root"], "deployer", "old3", NOW - timedelta(days=90), [d["only_old"]])
    rep = prune(world["root"], timedelta(days=30), evidence=ev)
    assert f"read {mnt} too (it shares the evidence store): kept the evidence its sessions reference" in rep.lines()
    assert world["store"].has(d["only_old"])


def test_a_log_root_sharing_the_store_now_on_another_device_keeps_all_evidence(world, tmp_path):
    """A volume not mounted leaves its mount point: an empty folder of the device below it. It
    had read as a log root with no sessions, so the evidence its door's sessions reference was
    removed. The record names the device the root was on; a root found on another is not read as
    empty, and a door started on it does not record it anew."""
    import hashlib
    import os

    from replaybook.door.retention import register_log_root

    d, ev = world["digests"], world["evidence"]
    mnt = tmp_path / "mnt" / "B"
    mnt.mkdir(parents=True)
    register_log_root(ev, mnt)
    record = ev / "log-roots" / hashlib.sha256(os.fsencode(os.path.realpath(mnt))).hexdigest()
    here = os.stat(mnt).st_dev
    assert record.read_bytes() == os.fsencode(os.path.realpath(mnt)) + b"\0dev=%d" % here
    record.write_bytes(os.fsencode(os.path.realpath(mnt)) + b"\0dev=%d" % (here + 1))  # (recorded when mounted)
    rep = prune(world["root"], timedelta(days=30), evidence=ev)
    assert sorted(s.path for s in rep.removed) == sorted([world["s"]["old1"], world["s"]["old2"]])
    assert rep.evidence_removed == [] and world["store"].has(d["only_old"])
    assert any(line.startswith(f"could not read {mnt}, a log root that shares the evidence store (it is on another "
                               "device than when its door recorded it: a volume not mounted (its empty mount "
                               "point)?)") for line in rep.lines())
    assert "kept all evidence: a session that could not be read may still reference it" in rep.lines()
    # a door started on the empty mount point does not make it the root (the volume's sessions
    # would lose their evidence at the next prune): the record stays, and the door is told why
    warning = register_log_root(ev, mnt)
    assert warning == (f"{os.path.realpath(mnt)} is on another device than the evidence store recorded for it "
                       f"({record}): a volume not mounted yet? prune keeps all evidence while it is so; if the log "
                       "root moved for good, remove that record and start the door again")
    assert record.read_bytes().endswith(b"\0dev=%d" % (here + 1))
    # moved for good: the record removed, the next door records the root where it is now
    record.unlink()
    assert register_log_root(ev, mnt) is None
    assert record.read_bytes().endswith(b"\0dev=%d" % here)
    _session(world["root"], "deployer", "old3", NOW - timedelta(days=90), [d["only_old"]])
    rep = prune(world["root"], timedelta(days=30), evidence=ev)
    assert f"read {mnt} too (it shares the evidence store): kept the evidence its sessions reference" in rep.lines()
    # a record written before devices were recorded (the path alone) is read as before
    record.write_bytes(os.fsencode(os.path.realpath(mnt)))
    rep = prune(world["root"], timedelta(days=30), evidence=ev, dry_run=True)
    assert f"read {mnt} too (it shares the evidence store): kept the evidence its sessions reference" in rep.lines()


def test_another_log_root_inside_this_one_is_read_as_its_own_never_pruned_here(tmp_path):
    """``logs/`` and ``logs/team/`` both recorded in one evidence store: pruning ``logs/`` had
    walked into ``logs/team/``, removed its door's old session, then the emptied folder — the
    other log root itself — while saying it had read that root for its references; every later
    prune found the root gone and removed no evidence at all."""
    from replaybook.door.retention import register_log_root

    logs, team, ev = tmp_path / "logs", tmp_path / "logs" / "team", tmp_path / "ev"
    store = EvidenceStore(ev)
    mine, theirs = store.put(b'{"a":1}'), store.put(b'{"b":2}')
    for d in (mine, theirs):
        os.utime(store.path(d), (OLD_MTIME, OLD_MTIME))
    a1 = _session(logs, "analyst", "a1", NOW - timedelta(days=400), [mine])
    b1 = _session(team, "agent", "b1", NOW - timedelta(days=400), [theirs])
    register_log_root(ev, logs)
    register_log_root(ev, team)
    for _ in range(2):
        rep = prune(logs, timedelta(days=30), evidence=ev)
        assert b1.exists() and team.is_dir()
        assert not a1.exists() and not store.path(mine).exists()
        assert store.path(theirs).exists()
        assert [s.path for s in rep.shared_sessions] == [b1]
        assert not any(s.status == "unreadable" for s in [*rep.sessions, *rep.shared_sessions])
    # pruned as a root of its own, its session goes (and its evidence)
    prune(team, timedelta(days=30), evidence=ev)
    assert not b1.exists() and not store.path(theirs).exists()
