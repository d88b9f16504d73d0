"""Helper processes for large loads (``sources._parallel``) and the loads that use them
(CloudTrail, S3 access logs, door logs, Claude Code transcripts): the result is the reference path's, whichever process
read which file, and whatever a helper does wrong (raises, dies) only costs time."""

from __future__ import annotations

import gzip
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from replaybook.errors import InputError
from replaybook.sources import _claude_fast, _cloud_fast, _parallel, cloudtrail, door, s3_access
from replaybook.sources.claude_code import load_claude_code
from replaybook.sources._record import SliceRecord

from test_cloud_fast_paths import (  # the equivalence checks of the fast paths
    CT_FIXTURES, S3_FIXTURES, TRICKY, _line, same_ct, same_s3)
from test_claude_fast_equiv import FIX, asst, tr, tu, user
from test_claude_fast_equiv import assert_same as assert_claude_same
from test_door_fast import ACCEPTED, GOOD, REJECTED, _assert_same, _generated, _write, reference_load_door

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="helper processes are forked on Linux only")


@pytest.fixture
def helpers(monkeypatch):
    """Every load is shared with one helper, however small."""
    monkeypatch.setenv(_parallel.ENV, "1")
    monkeypatch.setattr(_parallel, "MIN_BYTES", 0)
    assert _parallel.helpers() == 1


def _chunks(n: int) -> list[int]:
    return list(range(n))


def test_every_chunk_once_in_order_from_either_side():
    out = list(_parallel.front_back(_chunks(40), lambda c: ("here", c), lambda c: ("helper", c * 10), 1))
    assert len(out) == 40
    for i, (kind, value) in enumerate(out):
        assert kind in ("local", "remote")
        assert value == (("here", i) if kind == "local" else ("helper", i * 10))
    kinds = [k for k, _ in out]
    # the caller takes from the front, the helper from the back: one switch at most
    assert kinds == sorted(kinds)


def test_a_chunk_the_helper_cannot_do_is_done_here():
    def remote(c):
        if c % 3 == 0:
            raise ValueError("helper trouble")
        return c * 10

    def local(c):
        return -c - 1  # never None

    out = list(_parallel.front_back(_chunks(30), local, remote, 1))
    for i, (kind, value) in enumerate(out):
        assert value == (-i - 1 if kind == "local" else i * 10)
        if i % 3 == 0:
            assert kind == "local"


def test_a_helper_that_dies_costs_only_time():
    def remote(c):
        os._exit(3)  # the helper process ends abruptly on its first chunk

    out = list(_parallel.front_back(_chunks(12), lambda c: c + 100, remote, 1))
    assert out == [("local", c + 100) for c in range(12)]


def test_an_error_here_stops_the_helpers_and_is_raised():
    def local(c):
        if c == 2:
            raise InputError("cannot read: gone", Path(f"/x/{c}"))
        return c

    with pytest.raises(InputError, match="gone"):
        list(_parallel.front_back(_chunks(200), local, lambda c: c, 1))
    assert multiprocessing.active_children() == []


def test_without_helpers_everything_is_done_here_in_turn():
    seen = []
    it = _parallel.front_back(_chunks(5), lambda c: seen.append(c) or c, lambda c: 1 / 0, 0)
    assert seen == []  # nothing before the iterator is read
    assert list(it) == [("local", c) for c in range(5)]


@pytest.mark.parametrize("raw, expected", [("0", 0), ("2", 2), (" 1 ", 1), ("many", 0), ("-4", 0)])
def test_helpers_from_the_environment(monkeypatch, raw, expected):
    monkeypatch.setenv(_parallel.ENV, raw)
    assert _parallel.helpers() == expected


# -- CloudTrail ----------------------------------------------------------------------------------

def _compact(path: Path, first: int, n: int, *, gz: bool = True) -> Path:
    recs = [{"eventVersion": "1.08", "eventTime": f"2024-05-01T10:{(first + i) % 60:02d}:0{i % 10}Z",
             "eventSource": "s3.amazonaws.com", "eventName": "GetObject",
             "userIdentity": {"type": "AssumedRole",
                              "arn": f"arn:aws:sts::123456789012:assumed-role/analyst/s{first + i}"},
             "resources": [{"type": "AWS::S3::Object", "ARN": f"arn:aws:s3:::data/k{first + i}.csv"}],
             "additionalEventData": {"bytesTransferredOut": 100 + i},
             "requestID": f"R{first + i}"} for i in range(n)]
    text = orjson.dumps({"Records": recs})
    path.write_bytes(gzip.compress(text, mtime=0) if gz else text)
    return path


@pytest.fixture
def slow_here(monkeypatch):
    """This process reads each file 20 ms slower (its helpers do not), so that the helper
    surely reads some; counts the helper's chunks this process takes in."""
    here = os.getpid()
    read, unpack = _cloud_fast.read_disk, _cloud_fast._unpack_group
    taken = []

    def slow(path):
        if os.getpid() == here:
            time.sleep(0.02)
        return read(path)

    def counted(*args, **kwargs):
        taken.append(args[0][0])  # the group's paths
        return unpack(*args, **kwargs)

    monkeypatch.setattr(_cloud_fast, "read_disk", slow)
    monkeypatch.setattr(_cloud_fast, "_unpack_group", counted)
    return taken


def test_cloudtrail_shared_with_a_helper_equals_the_reference(helpers, slow_here, tmp_path):
    files = [_compact(tmp_path / f"{i:02d}.json.gz", i * 7, 7) for i in range(24)]
    res = cloudtrail.load_cloudtrail(tmp_path)
    assert slow_here and slow_here[-1] == [files[-1]]  # the helper read the last file's chunk
    same_ct(tmp_path)
    assert len(res.frame) == 24 * 7
    assert [e["path"] for e in res.inputs] == [str(f) for f in files]
    assert all(e["records"] == 7 for e in res.inputs)
    assert res.frame["raw"].map(type).eq(SliceRecord).all()
    row = res.frame.iloc[0]
    assert row["raw"]["eventName"] == "GetObject" and row["raw"].text.startswith(b'{"eventVersion"')


def test_a_helper_hands_over_gzip_files_as_they_are_on_disk(helpers, slow_here, tmp_path):
    """A gzip delivery file a helper read comes back as its bytes on disk (a tenth of the text);
    its records' raw cells inflate it on first use, to exactly the records' bytes."""
    files = [_compact(tmp_path / f"{i:02d}.json.gz", i * 5, 5) for i in range(12)]
    res = cloudtrail.load_cloudtrail(tmp_path)
    last = res.frame[res.frame["source_file"] == str(files[-1])]["raw"].tolist()
    text = SliceRecord._src.__get__(last[0])
    assert isinstance(text, _cloud_fast.Gunzipped) and text.disk == files[-1].read_bytes()
    assert text._text is None  # nothing inflated at load time
    body = gzip.decompress(files[-1].read_bytes())
    assert [c.text for c in last] == [orjson.dumps(r) for r in orjson.loads(body)["Records"]]
    assert last[2]["requestID"] == "R57"
    assert pickle.loads(pickle.dumps(text))._text is None  # handed over without the inflated copy


def test_cloudtrail_fixtures_shared_with_a_helper(helpers, slow_here):
    """Every shape the fixtures hold — tier 2, LookupEvents, EventBridge, damaged gzip, empty and
    binary files, digest files — in one load: a helper declines what tier 1 does not take, and
    that file is read here in its place."""
    same_ct(CT_FIXTURES)
    assert slow_here


def test_cloudtrail_mixed_with_damaged_and_declined_files(helpers, slow_here, tmp_path):
    for i in range(10):
        _compact(tmp_path / f"a{i:02d}.json.gz", i * 3, 3)
    (tmp_path / "a03.json.gz").write_bytes(gzip.compress(b'{"Records":[{"eventTime": 5}]}'))
    (tmp_path / "a05.json.gz").write_bytes(gzip.compress(b'{"Records": [')[:-6])  # cut short
    (tmp_path / "a07.json").write_bytes(b"")
    (tmp_path / "a08.json").write_bytes(b"\x00\x01binary")
    _compact(tmp_path / "a09.json", 90, 4, gz=False)
    same_ct(tmp_path)
    assert slow_here
    res = cloudtrail.load_cloudtrail(tmp_path)
    assert len(res.quarantine) >= 2
    assert {e["path"].rsplit("/", 1)[1] for e in res.inputs} >= {"a03.json.gz", "a05.json.gz", "a07.json"}


# -- S3 server access logs -----------------------------------------------------------------------

def test_s3_shared_with_a_helper_equals_the_reference(helpers, slow_here, tmp_path):
    files = []
    for i in range(16):
        minute = f"13/Sep/2026:10:{i:02d}:{i % 60:02d} +0000"
        lines = [_line(i * 10 + j, time=minute, key=f"demo/k{i}-{j}.csv") for j in range(10)]
        p = tmp_path / f"2026-09-13-10-{i:02d}-00-ABCDEF{i:02d}"
        p.write_text("\n".join(lines) + "\n")
        files.append(p)
    same_s3(tmp_path)
    assert slow_here and slow_here[-1] == [files[-1]]  # the helper read the last file's chunk
    res = s3_access.load_s3_access(tmp_path)
    assert len(res.frame) == 160 and [e["records"] for e in res.inputs] == [10] * 16
    assert res.frame["raw"].iloc[-1].text == _line(159, time="13/Sep/2026:10:15:15 +0000",
                                                   key="demo/k15-9.csv").encode()


def test_s3_fixtures_and_tricky_lines_shared_with_a_helper(helpers, slow_here, tmp_path):
    """Files a helper declines — lines the fast path leaves to the reference (quarantined or
    not), extra fields, damaged files — are read here in their place."""
    for i, (name, line) in enumerate(sorted(TRICKY.items())):
        (tmp_path / f"{i:02d}-{name}").write_text(_line(1) + "\n" + line + "\n" + _line(2) + "\n")
    same_s3([*S3_FIXTURES, tmp_path])
    assert slow_here


@pytest.mark.parametrize("bad", [1, 6])
def test_cloudtrail_unreadable_file_raises_in_its_turn(helpers, tmp_path, monkeypatch, bad):
    """A file that cannot be read raises the sequential load's error, whichever process met it
    first (the helper takes the last files: it declines it and it is read here in turn)."""
    for i in range(8):
        _compact(tmp_path / f"f{i}.json.gz", i, 2)
    read = _cloud_fast.read_disk

    def failing(path):
        if path.name in (f"f{bad}.json.gz", "f7.json.gz"):
            raise InputError("cannot read: Input/output error", path)
        return read(path)

    monkeypatch.setattr(_cloud_fast, "read_disk", failing)
    with pytest.raises(InputError, match=f"f{bad}") as err:
        cloudtrail.load_cloudtrail(tmp_path)
    assert "f7" not in str(err.value)  # the first one in order, not the last
    assert multiprocessing.active_children() == []


def test_helper_results_are_settled_here_and_come_in_order():
    settled = []

    def settle(value):
        settled.append(value)
        return ("settled", value)

    out = list(_parallel.front_back(_chunks(30), lambda c: c, lambda c: c * 10, 1, settle))
    for i, (kind, value) in enumerate(out):
        assert value == (i if kind == "local" else ("settled", i * 10))
    assert sorted(settled) == [value[1] for kind, value in out if kind == "remote"]  # each once


def test_no_temporary_folder_means_no_helpers(monkeypatch):
    def refuse(*a, **k):
        raise PermissionError("read-only file system")

    monkeypatch.setattr(_parallel.tempfile, "mkdtemp", refuse)
    assert list(_parallel.front_back(_chunks(4), lambda c: c, lambda c: 1 / 0, 1)) == \
        [("local", c) for c in range(4)]


_KILLED_LOAD = """
import sys, time
from replaybook.sources import _cloud_fast, _parallel, cloudtrail
_parallel.MIN_BYTES = 0
read = _cloud_fast.read_disk
here = _parallel.os.getpid()
pauses = [float(sys.argv[2])]  # the caller's first file, then 0.2 s each; the helper's 0.05 s

def slow(path):
    time.sleep((pauses.pop() if pauses else 0.2) if _parallel.os.getpid() == here else 0.05)
    return read(path)

_cloud_fast.read_disk = slow
cloudtrail.load_cloudtrail(sys.argv[1])
"""


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")  # a zombie waiting for its new parent to reap it has ended


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
@pytest.mark.parametrize("when", ["working", "done"])
def test_a_killed_load_leaves_no_helper_and_no_copies(tmp_path, how, when):
    """However the loading process ends — while its helper still reads files, or after the
    helper has handed everything over and only the caller still works — the helper ends too and
    removes the folder of results (copies of the evidence) instead of running on as an orphan
    or leaving them behind."""
    logs = tmp_path / "logs"
    logs.mkdir()
    for i in range(30):
        _compact(logs / f"f{i:02d}.json.gz", i * 2, 2)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), _parallel.ENV: "1"}
    pause = "0.2" if when == "working" else "20"  # "done": the helper finishes long before the caller
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_LOAD, str(logs), pause], env=env)
    try:
        deadline = time.monotonic() + 30
        while not list(scratch.glob("replaybook-load-*/[0-9]*")):  # the helper has delivered
            assert proc.poll() is None and time.monotonic() < deadline, "the load never shared its files"
            time.sleep(0.02)
        helpers = _children(proc.pid)
        assert helpers, "no helper process found"
        if when == "done":
            time.sleep(3)  # 29 files at 0.05 s: the helper is through, the caller still at its first
            assert proc.poll() is None and list(scratch.glob("replaybook-load-*"))
        os.kill(proc.pid, how)
        proc.wait(10)
        deadline = time.monotonic() + 10
        while (not all(map(_gone, helpers)) or list(scratch.iterdir())) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(map(_gone, helpers)), "a helper outlived the load"
        assert list(scratch.iterdir()) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- door logs -------------------------------------------------------------------------------------

@pytest.fixture
def door_shared(monkeypatch):
    """This process reads each door log 20 ms slower (its helpers do not), so that a helper
    surely reads some; lists the kinds of the groups as they come back."""
    here = os.getpid()
    read, front_back = door.read_source, _parallel.front_back
    kinds = []

    def slow(*args, **kwargs):
        if os.getpid() == here:
            time.sleep(0.02)
        return read(*args, **kwargs)

    def spy(*args, **kwargs):
        for kind, value in front_back(*args, **kwargs):
            kinds.append(kind)
            yield kind, value

    monkeypatch.setattr(door, "read_source", slow)
    monkeypatch.setattr(_parallel, "front_back", spy)
    return kinds


def test_door_logs_shared_with_a_helper_equal_the_reference(helpers, door_shared, tmp_path):
    """Groups of files read whole in a helper — the fast path's and the per-line path's files,
    quarantined lines, sessions spanning files and groups — merge into the sequential frame."""
    for name, line in {**REJECTED, **ACCEPTED}.items():
        _write(tmp_path, f"agent/{name}.jsonl", [GOOD, line])
    _generated(tmp_path, 11, 30)
    _assert_same(door.load_door(tmp_path), reference_load_door(tmp_path), notes=False)
    assert "remote" in door_shared and door_shared[0] == "local"
    assert len(door_shared) > 8  # one group per file or so: sessions cross group boundaries


@pytest.mark.parametrize("bad", ["a03", "a13"])
def test_door_unreadable_file_raises_in_its_turn(helpers, door_shared, tmp_path, monkeypatch, bad):
    for i in range(16):
        _write(tmp_path, f"agent/a{i:02d}.jsonl", [{**GOOD, "session": f"s{i}"}])
    read = door.read_source

    def failing(path, *args, **kwargs):
        if path.stem in (bad, "a15"):
            raise InputError("cannot read: Input/output error", path)
        return read(path, *args, **kwargs)

    monkeypatch.setattr(door, "read_source", failing)
    with pytest.raises(InputError, match=bad):
        door.load_door(tmp_path)
    assert multiprocessing.active_children() == []


# -- Claude Code transcripts -----------------------------------------------------------------------

def _session(i: int) -> list[bytes]:
    """One transcript: a prompt, a tool call (result in a later line) and an answer."""
    return [user(f"u{i}", f"question {i}", sessionId=f"s{i}"),
            asst(f"a{i}", f"m{i}", f"r{i}", [tu(f"toolu_{i}", "mcp__door__read", {"path": f"f{i}.csv"})],
                 usage={"output_tokens": i}, sessionId=f"s{i}"),
            user(f"t{i}", [tr(f"toolu_{i}", f"{i} rows")], sessionId=f"s{i}"),
            asst(f"b{i}", f"n{i}", f"q{i}", [{"type": "text", "text": f"answer {i}"}], sessionId=f"s{i}")]


@pytest.fixture
def transcripts_shared(monkeypatch):
    """This process reads each transcript 20 ms slower (its helpers do not); records whether
    each helper group was taken (True) or parsed here again (False)."""
    here = os.getpid()
    read, absorb = _claude_fast.read_file, _claude_fast.Load.absorb
    taken = []

    def slow(path):
        if os.getpid() == here:
            time.sleep(0.02)
        return read(path)

    def spy(self, state):
        got = absorb(self, state)
        taken.append(got)
        return got

    monkeypatch.setattr(_claude_fast, "read_file", slow)
    monkeypatch.setattr(_claude_fast.Load, "absorb", spy)
    return taken


def test_transcripts_shared_with_a_helper_equal_the_reference(helpers, transcripts_shared, tmp_path):
    """Groups parsed in a helper are taken as they are (rows, pairing by tool-use id across
    groups, quarantine); a group holding a resumed session's copy of earlier lines is parsed
    here again, so that the copy is skipped as the sequential load skips it."""
    root = tmp_path / "proj"
    root.mkdir()
    for i in range(14):
        lines = _session(i)
        if i == 12:  # resumed from transcript 2: its lines copied first
            lines = _session(2) + lines
        if i == 13:  # a damaged line, and the result of transcript 11's call
            lines = lines + [b'{"type": "user", "uuid": ', user("late", [tr("toolu_11", "late")])]
        (root / f"{i:02d}.jsonl").write_bytes(b"".join(ln + b"\n" for ln in lines))
    assert_claude_same(root)
    assert True in transcripts_shared and False in transcripts_shared
    res = load_claude_code(root)
    dup = next(e for e in res.inputs if e["path"].endswith("12.jsonl"))
    assert dup["duplicates"] == 4
    assert len(res.quarantine) == 1 and res.quarantine["line_no"].tolist() == [5]


def test_transcript_fixtures_shared_with_a_helper(helpers, transcripts_shared):
    assert_claude_same(FIX / "claude_code")
    assert transcripts_shared


def test_cr_line_ends_and_nul_lines_shared_with_a_helper(helpers, slow_here, tmp_path):
    """Files whose lines end in CR only are left to this process (read with CR as the line end),
    and a file with a NUL in a line is read with only that line set aside — the same result,
    inputs notes included, as the reference."""
    for i in range(12):
        lines = [_line(i * 10 + j, key=f"demo/c{i}-{j}.csv") for j in range(5)]
        if i % 3 == 0:
            text = "\r".join(lines) + "\r"
        elif i % 3 == 1:
            text = "\n".join(lines[:2] + [lines[2].replace(" ", "\x00 ", 1)] + lines[3:]) + "\n"
        else:
            text = "\n".join(lines) + "\n"
        (tmp_path / f"{i:02d}").write_text(text)
    same_s3(tmp_path)
    assert slow_here
    res = s3_access.load_s3_access(tmp_path)
    assert len(res.frame) == 12 * 5 - 4 and len(res.quarantine) == 4
    assert list(res.quarantine["line_no"]) == [3] * 4
    assert [bool(e.get("notes")) for e in res.inputs] == [i % 3 == 0 for i in range(12)]
