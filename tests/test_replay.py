import json
import re
import os
from pathlib import Path

import pandas as pd
import pytest

import replaybook
from replaybook.errors import InputError
from replaybook.frames import ACCESS, CALLS
from replaybook.redact import MASK
from replaybook.replay import OutsideDataRoot, ReplayPlan, file_digest, preview, resolve_in_root

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo" / "incident.yaml"


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "root"
    (r / "demo").mkdir(parents=True)
    (r / "reference").mkdir()
    (r / "demo" / "a.csv").write_text("name,api_token,value\nx,tok-123,1\ny,tok-456,2\n")
    (r / "demo" / "notes.txt").write_text("hello\nAWS_SECRET_ACCESS_KEY=abc/def\nkey AKIAABCDEFGHIJKLMNOP\n")
    (r / "reference" / ".env").write_text("PASSWORD=hunter2\n")
    (tmp_path / "outside.txt").write_text("secret outside")
    os.symlink(tmp_path / "outside.txt", r / "demo" / "link.txt")
    return r


def calls(rows):
    out = []
    for i, (tool, obj, decision, rule, digest) in enumerate(rows):
        out.append(dict(door_session="s1", agent="a", seq=i + 1, ts=pd.Timestamp("2026-09-13T10:00:00Z") + pd.Timedelta(seconds=i),
                        tool=tool, arguments={}, args_key="{}", object=obj, decision=decision, rule=rule,
                        object_digest=digest))
    return CALLS.build(out)


def test_confinement_refuses_dotdot_absolute_and_symlinks_out(root):
    assert resolve_in_root(root, "demo/a.csv") == (root / "demo" / "a.csv").resolve()
    for bad in ("../outside.txt", "demo/../../outside.txt", "/etc/passwd", "demo/link.txt", "C:\\x"):
        with pytest.raises(OutsideDataRoot):
            resolve_in_root(root, bad)
    assert preview(root, "demo/link.txt").kind == "outside"
    assert preview(root, "/etc/passwd").kind == "outside"


def test_preview_redacts_secret_values(root):
    p = preview(root, "demo/a.csv")
    assert p.kind == "table" and list(p.table["api_token"]) == [MASK, MASK]
    assert list(p.table["value"]) == [1, 2]
    t = preview(root, "demo/notes.txt")
    assert t.kind == "text" and "abc/def" not in t.text and "AKIAABCDEFGHIJKLMNOP" not in t.text
    assert "hello" in t.text and set(t.redactions) == {"aws_access_key_id", "secret_name"}
    f = preview(root, "demo/")
    assert f.kind == "folder" and list(f.table["name"]) == ["a.csv", "link.txt", "notes.txt"]
    assert f.table.set_index("name").loc["link.txt", "kind"] == "link outside data root"


def test_plan_order_refused_and_changed_since_run(root):
    good = file_digest(root / "demo" / "a.csv")
    plan = ReplayPlan.from_calls(calls([
        ("list_folder", "demo/", "allow", "allow-demo", None),
        ("read_object", "demo/a.csv", "allow", "allow-demo", good),
        ("read_object", "reference/.env", "deny", "no-dotenv", None),
        ("read_object", "demo/notes.txt", "allow", "allow-demo", "sha256:" + "0" * 64),
        ("read_object", "../outside.txt", "allow", "allow-demo", None),
    ]), root)
    assert [s.opens for s in plan.steps] == ["folder", "object", "nothing", "object", "nothing"]
    assert plan.steps[2].note == "refused by rule no-dotenv"
    assert plan.steps[1].changed is False and plan.steps[3].changed is True
    assert plan.steps[3].note == "changed since the run"
    assert plan.steps[4].note == "outside the data root: not opened"
    assert plan.total_ms == 5 * 700
    plan.start()
    shown = []
    while (r := plan.advance()) is not None:
        step, pv = r
        shown.append((step.index, None if pv is None else pv.kind))
    assert shown == [(0, "folder"), (1, "table"), (2, None), (3, None), (4, None)]
    assert [s.state for s in plan.steps] == ["done", "done", "skipped", "skipped", "skipped"]
    assert plan.status == "finished"


def test_stop_halts_playback(root):
    plan = ReplayPlan.from_calls(calls([("list_folder", "demo/", "allow", "r", None)] * 3), root, step_ms=10)
    plan.start()
    plan.advance()
    plan.stop()
    assert plan.advance() is None and plan.status == "stopped" and plan.position == 0
    with pytest.raises(InputError):
        ReplayPlan.from_calls(calls([]), root, step_ms=0)


def test_pause_holds_the_step_and_resume_goes_on_from_it(root):
    plan = ReplayPlan.from_calls(calls([
        ("list_folder", "demo/", "allow", "allow-demo", None),
        ("read_object", "demo/a.csv", "allow", "allow-demo", None),
        ("read_object", "reference/.env", "deny", "no-dotenv", None),
        ("read_object", "demo/notes.txt", "ask", "ask-notes", None),
        ("read_object", "demo/notes.txt", "allow", "allow-demo", None),
    ]), root)
    assert plan.pause() is False and plan.status == "idle"  # nothing to pause before start
    plan.start()
    plan.advance(), plan.advance()
    assert plan.pause() is True and plan.status == "paused"
    assert plan.advance() is None and plan.position == 1  # paused: no further, nothing lost
    assert [s.state for s in plan.steps] == ["done", "current", "pending", "pending", "pending"]
    # one step at a time: the refused step and the asked one open nothing
    step, pv = plan.step_forward()
    assert (step.index, pv, step.state) == (2, None, "current") and plan.steps[1].state == "done"
    step, pv = plan.step_forward()
    assert (step.index, pv) == (3, None) and plan.steps[2].state == "skipped"
    step, pv = plan.step_forward()
    assert (step.index, pv.kind, pv.path) == (4, "text", "demo/notes.txt")
    # bounded at the last step: stepping does not finish playback
    assert plan.step_forward() is None and plan.position == 4 and plan.status == "paused"
    step, pv = plan.step_back()
    assert (step.index, pv) == (3, None) and [s.state for s in plan.steps][3:] == ["current", "pending"]
    for want in (2, 1, 0):
        assert plan.step_back()[0].index == want
    assert plan.step_back() is None and plan.position == 0  # bounded at the first step
    assert [s.state for s in plan.steps] == ["current"] + ["pending"] * 4
    step, pv = plan.step_forward()
    assert (step.index, pv.kind) == (1, "table") and plan.done == 1
    # resumed: on from the step it is on, not from the first
    assert plan.resume() is True and plan.resume() is False
    assert plan.step_forward() is None and plan.step_back() is None  # only while paused
    assert [r[0].index for r in iter(plan.advance, None)] == [2, 3, 4]
    assert plan.status == "finished" and plan.pause() is False
    assert [s.state for s in plan.steps] == ["done", "done", "skipped", "skipped", "done"]


def test_stop_while_paused_ends_playback_and_start_begins_again(root):
    plan = ReplayPlan.from_calls(calls([("list_folder", "demo/", "allow", "r", None)] * 3), root)
    plan.start()
    plan.advance(), plan.advance()
    plan.pause()
    plan.stop()
    assert plan.status == "stopped" and plan.resume() is False and plan.step_forward() is None
    assert plan.advance() is None and plan.position == 1
    plan.start()
    assert plan.position == -1 and [s.state for s in plan.steps] == ["pending"] * 3
    assert plan.advance()[0].index == 0


def test_demo_session_replay_never_opens_the_refused_env():
    inc = replaybook.Incident.load(DEMO)
    first = inc.join.sessions.door_session.iloc[0]
    plan = ReplayPlan.from_calls(inc.calls, inc.data_root, door_session=first)
    assert [s.object for s in plan.steps] == ["demo/", "demo/cars.xpt", "demo/cars.xpt", "demo/cars.parquet",
                                              "reference/.env"]
    plan.start()
    opened = [r[1].path for r in iter(plan.advance, None) if r[1] is not None]
    assert opened == ["demo/", "demo/cars.xpt", "demo/cars.xpt", "demo/cars.parquet"]
    assert plan.steps[-1].state == "skipped" and plan.steps[-1].refused


def test_a_named_pipe_in_the_data_root_does_not_hang_preview_or_replay(root):
    """Opening a FIFO blocks until something writes to it: a pipe copied into the evidence hung
    the kernel the moment Replay or a click reached it."""
    import threading

    for name in ("pipe", "pipe.csv"):
        os.mkfifo(root / "demo" / name)
    plan = ReplayPlan.from_calls(calls([("read_object", "demo/pipe", "allow", None, None),
                                        ("read_object", "demo/pipe.csv", "allow", None, None)]), root)
    plan.start()
    got = []
    t = threading.Thread(target=lambda: got.extend(iter(plan.advance, None)), daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "preview blocked on a named pipe"
    assert [(pv.kind, "not a regular file" in pv.text) for _, pv in got] == [("binary", True)] * 2
    with pytest.raises(OSError, match="not a regular file"):
        file_digest(root / "demo" / "pipe")  # the report hashes what it previews


def test_paths_the_file_system_cannot_resolve_open_nothing_and_raise_nothing(root):
    """A NUL byte in a logged object, a name too long for the file system, a symlink loop, or a
    dangling link in a listed folder raised from the plan (the session's tab did not open) or
    from the folder preview."""
    os.symlink("loop", root / "demo" / "loop")
    os.symlink("gone.csv", root / "demo" / "dangling")
    objs = ["demo/nul\x00.csv", "demo/" + "a" * 300, "demo/loop", "demo/"]
    plan = ReplayPlan.from_calls(calls([("read_object", o, "allow", None, None) for o in objs]), root)
    assert [s.opens for s in plan.steps] == ["nothing", "nothing", "nothing", "folder"]
    assert [s.note for s in plan.steps][:3] == ["cannot be resolved: not opened", "not on disk now",
                                                "cannot be resolved: not opened"]
    for o in objs[:3]:
        assert preview(root, o).kind == "missing"
    listing = preview(root, "demo/").table.set_index("name")
    assert listing.loc["dangling", "kind"] == listing.loc["loop", "kind"] == "broken link"
    assert listing.loc["a.csv", "kind"] == "file"


def test_a_folder_holding_a_name_that_is_not_utf8_is_listed(tmp_path):
    """A folder holding a file whose name is not UTF-8 (Latin-1 ``café.txt``) made the listing
    raise UnicodeEncodeError (pandas' string columns hold no lone surrogate): Replay stopped
    at the folder's step and clicking it opened nothing."""
    from replaybook.views import session as S

    (tmp_path / "d").mkdir()
    with open(os.path.join(os.fsencode(tmp_path / "d"), b"caf\xe9.txt"), "wb") as fh:
        fh.write(b"hi\n")
    (tmp_path / "d" / "plain.txt").write_text("x")
    pv = preview(tmp_path, "d")
    assert pv.kind == "folder"
    assert pv.table.to_dict("records") == [{"name": "caf\\xe9.txt", "kind": "file", "bytes": 3},
                                           {"name": "plain.txt", "kind": "file", "bytes": 1}]
    assert "caf\\xe9.txt" in S.preview_html(pv)
    calls = CALLS.build([dict(door_session="s1", agent="a", seq=1, ts=pd.Timestamp("2026-09-13T10:00:00Z"),
                              tool="list_folder", arguments={}, args_key="{}", object="d", decision="allow")])
    plan = ReplayPlan.from_calls(calls, tmp_path)
    plan.start()
    step, shown = plan.advance()
    assert step.opens == "folder" and shown.table["name"].tolist() == ["caf\\xe9.txt", "plain.txt"]


def test_a_name_with_a_colon_second_is_a_file_in_the_data_root_and_a_drive_is_not(tmp_path):
    """``a:b.csv`` — a legal POSIX name — had been refused as "an absolute path": Replay said
    the agent's object lay outside the data root and opened nothing."""
    (tmp_path / "a:b.csv").write_text("k,v\n1,2\n")
    assert resolve_in_root(tmp_path, "a:b.csv") == (tmp_path / "a:b.csv").resolve()
    pv = preview(tmp_path, "a:b.csv")
    assert pv.kind == "table" and pv.table.to_dict("records") == [{"k": 1, "v": 2}]
    for bad in ("C:\\x", "C:/x", "c:", "/etc/passwd"):
        with pytest.raises(OutsideDataRoot, match="absolute path"):
            resolve_in_root(tmp_path, bad)


def test_a_large_folder_is_listed_without_asking_each_entry_three_times(tmp_path, monkeypatch):
    """A folder's listing asked each entry, as a Path, is_symlink, is_dir and stat: 7 s over a
    folder of 100,000 files, every time a Replay step or a click opened it, the kernel deaf to
    Stop and Escape meanwhile.  The entries' kinds still come out as before."""
    import pathlib

    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    for i in range(200):
        (d / f"f{i:03}.txt").write_text("x" * i)
    (d / "in.txt").symlink_to(d / "f005.txt")
    (d / "out").symlink_to(tmp_path.parent)
    (d / "gone").symlink_to(d / "nowhere")
    asked = []
    for m in ("stat", "is_dir", "is_symlink", "lstat"):
        real = getattr(pathlib.Path, m)
        monkeypatch.setattr(pathlib.Path, m, lambda self, *a, _r=real, _m=m, **k: (asked.append(_m), _r(self, *a, **k))[1])
    pv = preview(tmp_path, "d")
    assert len(asked) < 20, len(asked)  # the folder itself, not its 204 entries
    t = pv.table.set_index("name")
    assert len(t) == 204 and t.loc["f007.txt"].tolist() == ["file", 7]
    assert t.loc["sub/"].tolist()[0] == "folder" and t.loc["in.txt"].tolist() == ["file", 5]
    assert t.loc["out", "kind"] == "link outside data root" and t.loc["gone", "kind"] == "broken link"


def test_preview_counts_the_rows_of_text_tables(tmp_path):
    """A CSV beside a Parquet copy had 'rows in the file —', so the two could not be compared."""
    from replaybook import replay

    (tmp_path / "a.csv").write_text('name,note\nx,"two\nlines"\n\ny,z\nw,v\n')  # a quoted line break, a blank line
    (tmp_path / "a.tsv").write_text("name\tn\nx\t1\ny\t2\n")
    (tmp_path / "a.jsonl").write_text('{"a":1}\n\n{"a":2}\n{"a":3}\n')
    got = {n: replay.preview(tmp_path, n, max_rows=1) for n in ("a.csv", "a.tsv", "a.jsonl")}
    assert {n: (p.kind, p.rows, len(p.table)) for n, p in got.items()} == {
        "a.csv": ("table", 3, 1), "a.tsv": ("table", 2, 1), "a.jsonl": ("table", 3, 1)}
    assert len(pd.read_csv(tmp_path / "a.csv")) == 3  # as pandas counts them
    big = replay.COUNT_ROWS_UP_TO
    try:
        replay.COUNT_ROWS_UP_TO = 10  # larger files are not read through again
        assert replay.preview(tmp_path, "a.csv").rows is None
    finally:
        replay.COUNT_ROWS_UP_TO = big


def test_previews_never_read_a_large_data_file_whole(tmp_path, monkeypatch):
    """A Parquet, SAS or JSON file was read whole to show its first rows: Replay reaching a 2 GB
    file filled the kernel's memory."""
    import pyarrow.parquet as pq

    from replaybook import replay

    pd.DataFrame({"a": range(1000)}).to_parquet(tmp_path / "big.parquet", row_group_size=100)
    (tmp_path / "big.json").write_text(pd.DataFrame({"a": range(1000)}).to_json(orient="records"))
    xpt = ROOT / "data" / "demo" / "data" / "demo" / "cars.xpt"
    (tmp_path / "big.xpt").write_bytes(xpt.read_bytes())
    whole = []
    monkeypatch.setattr(pq, "read_table", lambda *a, **k: whole.append(a) or pytest.fail("read whole"))
    real_read_sas = pd.read_sas
    monkeypatch.setattr(pd, "read_sas", lambda p, **k: real_read_sas(p, **k) if k.get("chunksize")
                        else pytest.fail("SAS file read whole"))
    monkeypatch.setattr(replay, "COUNT_ROWS_UP_TO", 1000)  # "large" for this test
    got = {n: replay.preview(tmp_path, n, max_rows=3) for n in ("big.parquet", "big.json", "big.xpt")}
    assert (got["big.parquet"].kind, got["big.parquet"].rows, len(got["big.parquet"].table)) == ("table", 1000, 3)
    assert got["big.parquet"].table["a"].tolist() == [0, 1, 2]
    assert (got["big.xpt"].kind, got["big.xpt"].rows, len(got["big.xpt"].table)) == ("table", 32, 3)
    # (too large to make a table of without reading it whole: its first bytes, as text)
    assert got["big.json"].kind == "text" and got["big.json"].text.startswith('[{"a":0},{"a":1}')
    assert whole == []


def test_table_difference_counts_repeats_and_compares_across_formats(tmp_path):
    from replaybook.replay import table_difference

    a = pd.DataFrame({"name": ["x ", "y", "z"], "n": [1.0, 2.0, 3.0], "only_a": [0, 0, 0]})
    b = pd.DataFrame({"name": ["x", "y", "y", "w"], "n": [1, 2, 2, 4]})
    a.to_parquet(tmp_path / "a.parquet")
    b.to_csv(tmp_path / "b.csv", index=False)
    only_a, only_b = table_difference(tmp_path, "a.parquet", "b.csv")
    # compared over name and n; "x " equals "x" (padding), 1.0 equals 1; y once in a, twice in b
    assert only_a.to_dict("list") == {"name": ["z"], "n": [3.0]}
    assert only_b.to_dict("list") == {"name": ["y", "w"], "n": [2, 4]}
    assert (only_a.attrs["repeated"], only_b.attrs["repeated"]) == (0, 1)  # y: a repeat; w, z: new
    assert table_difference(tmp_path, "a.parquet", "a.parquet")[0].empty
    assert table_difference(tmp_path, "a.parquet", "../outside.csv") is None
    assert table_difference(tmp_path, "a.parquet", "b.csv", max_rows=3) is None  # b holds 4
    (tmp_path / "c.csv").write_text("other\n1\n")
    assert table_difference(tmp_path, "a.parquet", "c.csv") is None  # no column in common


def _rewrite_keeping_size_and_mtime(path: Path, data: bytes) -> None:
    """Write ``data`` (the file's size) over ``path`` in place and put its times back, as
    ``touch -d`` after an edit would: only ``ctime`` shows the write."""
    st = path.stat()
    assert len(data) == st.st_size
    with open(path, "r+b") as fh:
        fh.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_mtime_ns == st.st_mtime_ns and path.stat().st_ino == st.st_ino


def test_a_second_replay_hashes_nothing_it_already_hashed_and_a_changed_file_again(root, hashed):
    """Each Replay hashed every object with a logged digest again, the same file once per call
    that reached it: a session reading a 3 MiB file 3 times read 9 MiB at each Replay."""
    big = root / "demo" / "big.bin"
    big.write_bytes(bytes(range(256)) * (3 * 4096))  # 3 MiB
    size = big.stat().st_size
    good_big, good_csv = file_digest(big, cache=False), file_digest(root / "demo" / "a.csv", cache=False)
    hashed.clear()
    log = calls([("read_object", "demo/big.bin", "allow", "r", good_big),
                 ("read_object", "demo/a.csv", "allow", "r", good_csv),
                 ("read_object", "demo/big.bin", "allow", "r", good_big),
                 ("read_object", "demo/big.bin", "allow", "r", good_big)])
    first = ReplayPlan.from_calls(log, root)
    assert sorted(hashed) == [("a.csv", 45), ("big.bin", size)]  # each file once, not once per call
    assert [s.changed for s in first.steps] == [False] * 4
    hashed.clear()
    second = ReplayPlan.from_calls(log, root)
    assert hashed == [] and [s.changed for s in second.steps] == [False] * 4

    # the big file edited to the same size with its mtime put back: ctime shows it, hashed again
    data = bytearray(big.read_bytes())
    data[size // 2] ^= 0xFF
    _rewrite_keeping_size_and_mtime(big, bytes(data))
    third = ReplayPlan.from_calls(log, root)
    assert hashed == [("big.bin", size)]
    assert [s.changed for s in third.steps] == [True, False, True, True]
    assert third.steps[0].note == "changed since the run"
    hashed.clear()
    ReplayPlan.from_calls(log, root)
    assert hashed == []  # the new digest is remembered in turn

    # replaced by a copy of its first bytes (another inode): hashed again, and unchanged again
    tmp = root / "demo" / "big.new"
    tmp.write_bytes(bytes(range(256)) * (3 * 4096))
    os.replace(tmp, big)
    assert [s.changed for s in ReplayPlan.from_calls(log, root).steps] == [False, False, False, False]
    assert hashed == [("big.bin", size)]


def test_a_file_written_a_moment_ago_is_hashed_each_time(root, hashed, monkeypatch):
    """A write in the same clock tick as the hash leaves mtime and ctime as they were, so the
    digest of a file whose times are that recent is not remembered."""
    from replaybook import replay

    monkeypatch.setattr(replay, "RECENT_NS", 3600 * 10**9)  # everything is "recent"
    f = root / "demo" / "a.csv"
    assert file_digest(f) == file_digest(f)
    assert [n for n, _ in hashed] == ["a.csv", "a.csv"]
    monkeypatch.setattr(replay, "RECENT_NS", 0)
    hashed.clear()
    file_digest(f), file_digest(f), file_digest(f, cache=False)
    assert [n for n, _ in hashed] == ["a.csv", "a.csv"]  # the second from memory; cache=False reads


def test_the_digests_remembered_are_bounded(root, hashed, monkeypatch):
    from replaybook import replay

    monkeypatch.setattr(replay, "DIGEST_CACHE_SIZE", 2)
    files = [root / "demo" / n for n in ("a.csv", "notes.txt")] + [root / "reference" / ".env"]
    for f in files:
        file_digest(f)
    assert len(replay._DIGESTS) == 2
    hashed.clear()
    file_digest(files[2]), file_digest(files[0])  # the newest remembered, the oldest forgotten
    assert [n for n, _ in hashed] == ["a.csv"]


def test_a_json_file_holding_one_object_is_shown_as_text_and_a_damaged_parquet_says_why(tmp_path):
    """``changes/CHG-1042.json`` holds one JSON object, not records: pandas cannot make a table
    of it, and the preview had called it binary with pandas' own error.  It is text, shown as
    text (redacted); a damaged Parquet file is binary and says it could not be read as a table."""
    (tmp_path / "changes").mkdir()
    (tmp_path / "changes" / "CHG-1042.json").write_text(
        json.dumps({"change": "CHG-1042", "rule": "deploy-window", "approved_by": None, "api_key": "sk-live-abc123"},
                   indent=2))
    pv = preview(tmp_path, "changes/CHG-1042.json")
    assert pv.kind == "text" and pv.size == (tmp_path / "changes" / "CHG-1042.json").stat().st_size
    assert '"change": "CHG-1042"' in pv.text and "sk-live-abc123" not in pv.text
    (tmp_path / "broken.parquet").write_bytes(b"PAR1\x00\x01\x02garbage")
    pv = preview(tmp_path, "broken.parquet")
    assert pv.kind == "binary" and pv.text.startswith("binary file, 14 bytes: could not read as a table (ArrowInvalid")


def test_a_later_storage_write_to_what_the_agent_read_is_named_with_who_made_it(tmp_path):
    """The ledger the agent read was rewritten in storage by a person 20 minutes later: the
    report's "What the agent reached" said only that sizes differed, never that the cloud's own
    log holds that write, by whom."""
    import shutil

    import replaybook
    from replaybook.replay import StorageWrites, as_now_caveat
    from replaybook.report import sections as S

    demo = Path(__file__).resolve().parents[1] / "data" / "demo"
    shutil.copytree(demo, tmp_path / "demo")
    inc = replaybook.Incident.load(tmp_path / "demo" / "incident.yaml")
    c = inc.calls[(inc.calls["decision"] == "allow") & inc.calls["object"].astype("string").str.startswith("demo/")
                  .fillna(False)].sort_values("ts").iloc[0]
    obj, read_at = str(c["object"]), c["ts"]
    offset = inc.access_join.offset_s
    uri = "s3://acme-data/" + obj
    write = {"ts": read_at + pd.Timedelta(minutes=20) + pd.Timedelta(seconds=offset), "source": "aws.cloudtrail",
             "principal": "arn:aws:sts::123456789012:assumed-role/data-platform-nightly-reload-pipeline/j.doe@hospital.example.org", "action": "write", "action_raw": "PutObject",
             "resource_uri": uri, "outcome": "allowed", "source_file": "/x/trail.json", "line_no": 4}
    before = dict(write, ts=read_at - pd.Timedelta(minutes=5), line_no=3)
    denied = dict(write, ts=read_at + pd.Timedelta(minutes=1), outcome="denied", line_no=5)
    access = pd.concat([inc.access, ACCESS.build([before, denied, write])], ignore_index=True)
    w = StorageWrites(access, inc.manifest["storage_map"], offset)
    got = w.after(obj, read_at)
    assert got is not None and got[1:4] == ("arn:aws:sts::123456789012:assumed-role/data-platform-nightly-reload-pipeline/j.doe@hospital.example.org", "PutObject", "trail.json:4")
    assert got[0] == read_at + pd.Timedelta(minutes=20)
    assert w.after(obj, read_at + pd.Timedelta(minutes=30)) is None
    assert w.after("reference/other.csv", read_at) is None
    said = as_now_caveat(tool=c["tool"], storage_write=got, none_if_plain=True)
    when = (read_at + pd.Timedelta(minutes=20)).strftime("%H:%M:%S.%f")[:-3]
    assert ("the storage's own log holds a later PutObject of it by arn:aws:sts::123456789012:assumed-role/data-platform-nightly-reload-pipeline/j.doe@hospital.example.org at "
            f"{when} UTC (door clock), trail.json:4, so it has likely changed since this call.") in said
    reached = S.reached_objects(inc.calls, inc.data_root, storage_writes=w)
    note = next(r["note"] for r in reached.rows if r["object"] == obj)
    assert "later PutObject of it by arn:aws:sts::123456789012:assumed-role/data-platform-nightly-reload-pipeline/j.doe@hospital.example.org" in note
    assert all("PutObject" not in (r["note"] or "") for r in reached.rows if r["object"] != obj)
    # the whole note in the section (the table's "text" kind had cut it at 300 characters, the
    # rest nowhere in the HTML), and the write up top and in the findings
    shown = S.objects_section(inc.calls, inc.data_root, reached=reached)
    text = re.sub("<[^>]+>", "", shown).replace("&#x27;", "'")
    assert note.endswith(", so it has likely changed since this call.") and len(note) > 300 and note in text
    assert reached.storage_writes == [{"object": obj, "first": read_at, "who": f"{c['door_session']} #{c['seq']}",
                                       "ts": read_at + pd.Timedelta(minutes=20),
                                       "principal": "arn:aws:sts::123456789012:assumed-role/data-platform-nightly-reload-pipeline/j.doe@hospital.example.org",
                                       "operation": "PutObject", "logged_at": "trail.json:4",
                                       "writes": [{"ts": read_at + pd.Timedelta(minutes=20),
                                                   "principal": "arn:aws:sts::123456789012:assumed-role/data-platform-nightly-reload-pipeline/j.doe@hospital.example.org",
                                                   "operation": "PutObject", "logged_at": "trail.json:4"}]}]
    first = read_at.strftime("%H:%M:%S.%f")[:-3]
    words = (f"1 object the agent read was written in storage afterwards: {obj} (PutObject by "
             f"arn:aws:sts::123456789012:assumed-role/data-platform-nightly-reload-pipeline/j.doe@hospital.example.org at {when} UTC, door clock, trail.json:4; first read by "
             f"{c['door_session']} #{c['seq']} at {first} UTC) — what the agent read need not be the file as it is "
             "now (see What the agent reached)")
    assert S.storage_write_words(reached.storage_writes) == words
    head = S.header("t", "/x/incident.yaml", storage_writes=reached.storage_writes)
    assert '<a href="#objects">1 object the agent read was written in storage afterwards</a>' in head
    assert words.partition(": ")[2].replace("—", "") in re.sub("<[^>]+>", "", head).replace("—", "")
    found = S.findings(inc.join.sessions, inc.calls, inc.quarantine, storage_writes=reached.storage_writes)
    assert found["storage_written_after_read"] == [
        {"object": obj, "principal": "arn:aws:sts::123456789012:assumed-role/data-platform-nightly-reload-pipeline/j.doe@hospital.example.org", "operation": "PutObject",
         "ts": (read_at + pd.Timedelta(minutes=20)).isoformat(), "first_read_by": f"{c['door_session']} #{c['seq']}"}]
    assert found["storage_written_words"] == words


def test_a_csv_read_whole_whose_size_differs_is_said_to_have_changed():
    """read_text_file on a CSV (previewed as a table) was hedged "what read_text_file answered
    need not be the file itself", where the README says a whole read's size shows a change."""
    from replaybook.replay import as_now_caveat

    said = as_now_caveat(tool="read_text_file", logged_bytes=728, size_now=729, kind="table", obj="q3/readmissions.csv")
    assert "the door logged 728 bytes for this call; the file is 729 bytes now: it has changed since" in said
    hedged = as_now_caveat(tool="read_text_file", logged_bytes=728, size_now=729, kind="table", obj="q3/r.parquet")
    assert "need not be the file itself" in hedged
    assert "need not be the file itself" in as_now_caveat(tool="summarize", logged_bytes=1, size_now=2, kind="table",
                                                          obj="q3/readmissions.csv")


def test_copies_differing_in_one_column_by_one_factor_are_said_so(tmp_path):
    """A CSV holding drift as fractions beside a Parquet file holding percentages: the report
    said "different values in some rows" where one column differed, by ×100 throughout."""
    from replaybook.replay import table_difference
    from replaybook.report import sections as S

    a = pd.DataFrame({"feature": ["age", "income", "zip", "tenure"], "drift_pct": [30.0, 12.5, 0.4, 7.0]})
    a.to_parquet(tmp_path / "drift.parquet")
    a.assign(drift_pct=a["drift_pct"] / 100).to_csv(tmp_path / "drift.csv", index=False)
    only_a, only_b = table_difference(tmp_path, "drift.parquet", "drift.csv")
    assert len(only_a) == len(only_b) == 4
    assert only_b.attrs["differs_in"] == "drift_pct" and only_b.attrs["factor"] == 0.01
    h = S._differences_html({"differences": [("drift.parquet", "drift.csv", only_a, only_b)]})
    assert ("<code>drift.parquet</code> and <code>drift.csv</code> hold the same rows but for one column, "
            "<code>drift_pct</code> — each value in <code>drift.csv</code> is <b>×0.01</b> the one in "
            "<code>drift.parquet</code>") in h
    # two columns differing, or no single factor: no such sentence
    a.assign(drift_pct=a["drift_pct"] + 1, feature=a["feature"] + "x").to_csv(tmp_path / "two.csv", index=False)
    oa, ob = table_difference(tmp_path, "drift.parquet", "two.csv")
    assert "differs_in" not in ob.attrs
    a.assign(drift_pct=a["drift_pct"] + 1).to_csv(tmp_path / "shift.csv", index=False)
    oa, ob = table_difference(tmp_path, "drift.parquet", "shift.csv")
    assert ob.attrs["differs_in"] == "drift_pct" and "factor" not in ob.attrs


def test_a_later_storage_write_says_whether_a_door_call_explains_it(tmp_path):
    """The header named who wrote the file after the agent read it, but not whether it was the
    agent's own write through the door or one no door call explains."""
    from replaybook.replay import StorageWrites, as_now_caveat
    from replaybook.report import sections as S

    t0 = pd.Timestamp("2026-10-05T09:00:00Z")
    access = ACCESS.build([
        {"ts": t0 + pd.Timedelta(minutes=20), "source": "gcp.audit", "principal": "jane@h.org", "action": "write",
         "action_raw": "storage.objects.create", "resource_uri": "gs://b/q3.csv", "outcome": "allowed",
         "source_file": "/x/data_access.jsonl", "line_no": 4},
        {"ts": t0 + pd.Timedelta(minutes=30), "source": "gcp.audit", "principal": "door@h.org", "action": "write",
         "action_raw": "storage.objects.create", "resource_uri": "gs://b/r.csv", "outcome": "allowed",
         "source_file": "/x/data_access.jsonl", "line_no": 5}])
    links = pd.DataFrame({"access_index": [1], "door_session": ["door-1"], "call_seq": [7]})
    w = StorageWrites(access, {"": "gs://b/"}, 0.0, links=links)
    jane, door = w.after("q3.csv", t0), w.after("r.csv", t0)
    assert jane[4] == "" and door[4] == "door-1 #7"
    assert "by jane@h.org at 09:20:00.000 UTC (door clock), data_access.jsonl:4, which no door call explains" in \
        as_now_caveat(tool="read_file", storage_write=jane)
    assert "the agent's own: door call door-1 #7 explains it" in as_now_caveat(tool="read_file", storage_write=door)
    assert StorageWrites(access, {"": "gs://b/"}).after("q3.csv", t0)[4] is None  # (no links: not said)
    words = S.storage_write_words([{"object": "q3.csv", "first": t0, "who": "door-1 #2", "ts": jane[0],
                                    "principal": jane[1], "operation": jane[2], "logged_at": jane[3],
                                    "door_call": jane[4]}])
    assert "data_access.jsonl:4, no door call explains it; first read by door-1 #2" in words


def test_every_later_storage_write_is_named_in_time_order_and_the_last_is_the_file_now(tmp_path):
    """The agent read a deployment rule, wrote it through the door, and a person rolled it back
    eight hours later: the header and the note named only the agent's own write, not the one the
    file on disk now holds.  The agent's write, logged by CloudTrail and the server access log
    under one request id, is one write."""
    from replaybook.frames import CALLS
    from replaybook.replay import StorageWrites, as_now_caveat
    from replaybook.report import sections as S

    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "pay.yaml").write_text("weight: 5\n")
    t0 = pd.Timestamp("2026-11-30T23:10:12Z")
    calls = CALLS.build([{"door_session": "d", "agent": "deployer", "seq": 2, "ts": t0, "ts_end": t0,
                          "tool": "get_object", "object": "rules/pay.yaml", "decision": "allow", "arguments": {}}])
    agent, alice = "arn:aws:sts::1:assumed-role/door/deployer", "arn:aws:sts::1:assumed-role/sre/alice"
    put = {"action": "write", "resource_uri": "s3://cfg/rules/pay.yaml", "outcome": "allowed"}
    access = ACCESS.build([
        {**put, "ts": t0 + pd.Timedelta(seconds=29), "source": "aws.s3_access", "principal": agent,
         "action_raw": "REST.PUT.OBJECT", "request_id": "R1", "source_file": "/x/s3log", "line_no": 4},
        {**put, "ts": t0 + pd.Timedelta(seconds=30), "source": "aws.cloudtrail", "principal": agent,
         "action_raw": "PutObject", "request_id": "R1", "source_file": "/x/ct.json", "line_no": 4},
        {**put, "ts": t0 + pd.Timedelta(hours=8, minutes=33), "source": "aws.cloudtrail", "principal": alice,
         "action_raw": "PutObject", "request_id": "R2", "source_file": "/x/ct2.json", "line_no": 2}])
    links = pd.DataFrame({"access_index": [0], "door_session": ["d"], "call_seq": [5]})
    w = StorageWrites(access, {"rules/": "s3://cfg/rules/"}, 0.0, links=links)
    got = w.all_after("rules/pay.yaml", t0)
    assert [(x[1], x[2], x[4]) for x in got] == [(agent, "REST.PUT.OBJECT", "d #5"), (alice, "PutObject", "")]
    assert w.all_after("rules/pay.yaml", t0 + pd.Timedelta(hours=9)) == [] and w.all_after("other", t0) == []

    note = as_now_caveat(tool="get_object", storage_writes=got)
    assert ("the storage's own log holds 2 later writes of it: REST.PUT.OBJECT by " + agent
            + " at 23:10:41.000 UTC (door clock), s3log:4, the agent's own: door call d #5 explains it; then PutObject by "
            + alice + " at 07:43:12.000 UTC (door clock), ct2.json:2, which no door call explains — the file on disk "
            "now is the last of these, PutObject by " + alice + " at 07:43:12.000 UTC") in note

    reached = S.reached_objects(calls, tmp_path, storage_writes=w)
    assert [x["principal"] for x in reached.storage_writes[0]["writes"]] == [agent, alice]
    words = S.storage_write_words(reached.storage_writes)
    assert words.startswith("1 object the agent read was written in storage afterwards: rules/pay.yaml (first read "
                            "by d #2 at 23:10:12.000 UTC; written 2 times since: REST.PUT.OBJECT by " + agent)
    assert ("; then PutObject by " + alice + " at 07:43:12.000 UTC, door clock, ct2.json:2, no door call explains "
            "it — the file on disk now is the last of these, PutObject by " + alice + " at 07:43:12.000 UTC)") in words
    found = S.findings(pd.DataFrame({"status": []}), calls, None, storage_writes=reached.storage_writes)
    assert [x["principal"] for x in found["storage_written_after_read"][0]["writes"]] == [agent, alice]


def test_many_later_writes_name_each_principals_last():
    """A pipeline reloading a file hourly: beyond a few writes, each principal's last is named
    (the last of all among them), and how many are not."""
    from replaybook.replay import named_writes

    t = pd.Timestamp("2026-01-01T00:00:00Z")
    ws = [(t + pd.Timedelta(hours=i), "etl", "PutObject", None, "") for i in range(6)]
    ws.insert(2, (t + pd.Timedelta(hours=1, minutes=30), "agent", "PutObject", None, "d #5"))
    shown, more = named_writes(ws)
    assert [(x[1], x[0].hour) for x in shown] == [("agent", 1), ("etl", 5)] and more == 5
    assert named_writes(ws[:3]) == (ws[:3], 0)


def test_a_later_write_in_a_whole_file_json_log_is_placed_by_record_not_line():
    """A CloudTrail delivery file is one JSON document: its rows' ``line_no`` is the record's
    place in it, and the report said ``…json.gz:3`` — a line the file does not have.  A file
    among ``records`` is cited as ``record 3``; one not among them keeps ``file:line``."""
    from replaybook.replay import StorageWrites

    t0 = pd.Timestamp("2026-10-05T09:00:00Z")
    ct = "/x/AWSLogs/1/CloudTrail/eu-west-1/2026/10/05/1_CloudTrail_eu-west-1_20261005T0920Z_a.json.gz"
    access = ACCESS.build([
        {"ts": t0 + pd.Timedelta(minutes=20), "source": "aws.cloudtrail", "principal": "arn:aws:iam::1:user/jane",
         "action": "write", "action_raw": "PutObject", "resource_uri": "s3://cfg/rules/a.yaml", "outcome": "allowed",
         "source_file": ct, "line_no": 3},
        {"ts": t0 + pd.Timedelta(minutes=30), "source": "aws.s3_access", "principal": "arn:aws:iam::1:user/jane",
         "action": "write", "action_raw": "REST.PUT.OBJECT", "resource_uri": "s3://cfg/rules/b.yaml",
         "outcome": "allowed", "source_file": "/x/s3/cfg-2026-10-05-09-30-00-AB", "line_no": 3}])
    w = StorageWrites(access, {"rules/": "s3://cfg/rules/"}, 0.0, records=[ct])
    assert w.after("rules/a.yaml", t0)[3] == "1_CloudTrail_eu-west-1_20261005T0920Z_a.json.gz record 3"
    assert w.after("rules/b.yaml", t0)[3] == "cfg-2026-10-05-09-30-00-AB:3"
    assert StorageWrites(access, {"rules/": "s3://cfg/rules/"}).after("rules/a.yaml", t0)[3].endswith(".json.gz:3")
