import gzip
from pathlib import Path

import pandas as pd
import pytest

import replaybook
from replaybook.cli import main

FIX = Path(__file__).resolve().parent / "fixtures"


def test_load_sniffs_by_content_not_by_name(tmp_path):
    # a door log named .txt, a transcript gzipped under a misleading name, junk named .jsonl
    door = (FIX / "join_trap" / "door" / "analyst" / "door-sess-a.jsonl").read_bytes()
    (tmp_path / "door-log.txt").write_bytes(door)
    tr = (FIX / "join_trap" / "transcripts" / "11111111-aaaa-4aaa-8aaa-111111111111.jsonl").read_bytes()
    (tmp_path / "session.dat").write_bytes(gzip.compress(tr))
    (tmp_path / "junk.jsonl").write_bytes(b"\x00\x01binary\xff" * 10)
    (tmp_path / "empty.jsonl").write_bytes(b"")
    loaded = replaybook.load(tmp_path)
    files = loaded.files.set_index("path")
    assert files.loc[str(tmp_path / "door-log.txt"), "source"] == "door"
    assert files.loc[str(tmp_path / "session.dat"), "source"] == "claude-code"
    assert files.loc[str(tmp_path / "junk.jsonl"), "note"] == "no source recognised this content"
    assert files.loc[str(tmp_path / "empty.jsonl"), "note"] == "empty file"
    # a file no source reads is "unread", not an "invalid" line, where a frame is loaded from it
    from replaybook.loading import load_frame

    q = load_frame(tmp_path, "steps").result.quarantine
    assert list(q.loc[q.source_file == str(tmp_path / "junk.jsonl"), ["kind", "loader"]].itertuples(index=False,
                                                                                                   name=None)) == [("unread", "auto")]
    assert len(loaded["calls"]) == 5 and files.loc[str(tmp_path / "door-log.txt"), "rows"] == 5
    assert (loaded["steps"].kind == "tool_call").sum() == 5


def test_cli_load_auto_prints_per_file_counts(capsys):
    assert main(["load", "auto", str(FIX / "join_trap")]) == 0
    out = capsys.readouterr()
    lines = [line for line in out.out.splitlines() if "door-sess-a.jsonl" in line]
    assert len(lines) == 1 and " door " in lines[0] and " calls " in lines[0]
    assert "calls: 8 rows, 0 quarantined lines" in out.err
    assert "steps: 32 rows" in out.err
    assert "2 files not read as a log or transcript" in out.err  # expected.json and README.md


def test_input_notes_read_as_words():
    from replaybook.loading import _input_note

    assert _input_note({}) is None
    assert _input_note({"skipped": True, "reason": "CloudTrail digest file (no Records)"}) == \
        "skipped: CloudTrail digest file (no Records)"
    assert _input_note({"skipped": True}) == "skipped: no records"
    assert _input_note({"duplicates": 3}) == "3 duplicate lines"
    assert _input_note({"duplicates": 1, "ignored_lines": 2}) == "1 duplicate line; 2 records of other kinds ignored"
    assert _input_note({"ignored_lines": 1}) == "1 record of other kinds ignored"


def test_nothing_for_the_frame_says_what_each_file_was(tmp_path):
    from replaybook.errors import InputError
    from replaybook.loading import load_frame

    (tmp_path / "empty.jsonl").write_bytes(b"")
    with pytest.raises(InputError, match=r"no steps input in .*empty\.jsonl \(empty file\)"):
        load_frame(tmp_path / "empty.jsonl", "steps")
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match=r"no steps input in .*d \(no files in it\)"):
        load_frame(tmp_path / "d", "steps")


def test_door_logs_given_as_transcripts_ask_whether_the_two_were_swapped():
    from replaybook.errors import InputError
    from replaybook.loading import load_frame

    demo = Path(__file__).resolve().parents[1] / "data" / "demo"
    with pytest.raises(InputError) as e:
        load_frame(demo / "door", "steps")
    assert ("; every file there is a door log, not a transcript: were the transcripts and the door logs given "
            "the other way round?; `replaybook load auto PATH`") in str(e.value)
    with pytest.raises(InputError, match="every file there is a transcript, not a door log: were the door logs and "
                                         "the transcripts given the other way round"):
        load_frame(demo / "transcripts", "calls")


def test_a_format_forced_on_a_binary_file_is_refused_naming_the_file(tmp_path):
    # sniffed, such a file is "not recognised"; forced, it is the user's contradiction to fix
    from replaybook.errors import InputError
    from replaybook.loading import load_frame

    junk = tmp_path / "x.jsonl"
    junk.write_bytes(bytes(range(256)) * 12)
    with pytest.raises(InputError, match=r"x\.jsonl: not a text file \(binary data\): it cannot be read as door"):
        load_frame(junk, "calls", source="door")
    gz = tmp_path / "y.jsonl.gz"
    gz.write_bytes(gzip.compress(bytes(range(256)) * 12))
    with pytest.raises(InputError, match="not a text file"):
        load_frame(gz, "steps", source="claude-code")
    text = tmp_path / "z.jsonl"
    text.write_text("{bad\n")
    got = load_frame(text, "steps", source="claude-code")  # text with a damaged line: quarantined, not refused
    assert got.result.quarantine["line_no"].tolist() == [1]


def test_a_file_named_twice_or_copied_is_read_once(tmp_path, capsys):
    # a folder and a file in it both given, and a copy of that file under another folder: the
    # door calls count once (they counted twice, halving every session's share), the copy is
    # listed with its hash and why it was not read
    src = FIX / "join_trap" / "door" / "analyst"
    door = tmp_path / "door" / "analyst"
    door.mkdir(parents=True)
    for f in src.iterdir():
        (door / f.name).write_bytes(f.read_bytes())
    n_a = len((door / "door-sess-a.jsonl").read_bytes().splitlines())
    n_b = len((door / "door-sess-b.jsonl").read_bytes().splitlines())
    backup = tmp_path / "backup"
    backup.mkdir()
    (backup / "door-sess-a.jsonl").write_bytes((door / "door-sess-a.jsonl").read_bytes())

    loaded = replaybook.load([tmp_path / "door", door / "door-sess-a.jsonl", backup])
    assert len(loaded["calls"]) == n_a + n_b
    assert loaded["calls"]["door_session"].value_counts().to_dict() == {"door-sess-a": n_a, "door-sess-b": n_b}
    files = loaded.files.set_index("path")
    assert list(files.index).count(str(door / "door-sess-a.jsonl")) == 1
    copy = files.loc[str(backup / "door-sess-a.jsonl")]
    assert copy["rows"] == 0
    assert copy["note"] == f"same content as {door / 'door-sess-a.jsonl'}: read once"

    # the CLI, with the same folder twice
    assert main(["load", "calls", str(tmp_path / "door"), str(tmp_path / "door")]) == 0
    assert len(capsys.readouterr().out.splitlines()) == n_a + n_b

    # a manifest listing the folder, one of its files and the copy
    (tmp_path / "incident.yaml").write_text(
        "title: t\ntranscripts: []\ndoor: [door/, door/analyst/door-sess-a.jsonl, backup/]\n")
    inc = replaybook.Incident.load(tmp_path / "incident.yaml")
    assert len(inc.calls) == n_a + n_b
    notes = {r["path"]: r["note"] for r in inc.inputs}
    # (the report's paths are relative to the manifest's folder, the earlier file's too)
    assert notes["backup/door-sess-a.jsonl"] == "same content as door/analyst/door-sess-a.jsonl: read once"


def test_a_byte_order_mark_does_not_set_the_first_line_aside(tmp_path):
    # a log saved by a Windows editor starts with EF BB BF: its first line (a transcript's
    # prompt) was quarantined as invalid JSON
    tr = FIX / "join_trap" / "transcripts" / "11111111-aaaa-4aaa-8aaa-111111111111.jsonl"
    door = FIX / "join_trap" / "door" / "analyst" / "door-sess-a.jsonl"
    (tmp_path / "t").mkdir()
    (tmp_path / "d" / "analyst").mkdir(parents=True)
    (tmp_path / "t" / tr.name).write_bytes(b"\xef\xbb\xbf" + tr.read_bytes())
    (tmp_path / "d" / "analyst" / door.name).write_bytes(b"\xef\xbb\xbf" + door.read_bytes())
    plain = replaybook.load([tr, door])
    marked = replaybook.load([tmp_path / "t", tmp_path / "d"])
    for frame in ("steps", "calls"):
        assert marked.results[frame].quarantine.empty
        a = plain[frame].drop(columns=["source_file"])
        b = marked[frame].drop(columns=["source_file"])
        pd.testing.assert_frame_equal(a, b)
    notes = marked.files.set_index("path")["note"]
    assert notes[str(tmp_path / "d" / "analyst" / door.name)] == "starts with a UTF-8 byte-order mark (read past)"


def test_a_damaged_line_error_reads_as_english():
    from replaybook._jsonl import parse_json

    # the parser's "Unterminated string starting at" got a second "at"
    assert parse_json(b'{"a": "open') == (None, "invalid JSON: Unterminated string starting at column 7")
    assert parse_json(b'{"a" 1}') == (None, "invalid JSON: Expecting ':' delimiter at column 6")
    assert parse_json(b'{"a":\n "b}') == (None, "invalid JSON: Unterminated string starting at line 2 column 2 "
                                                "of the record")


def test_a_truncated_gzip_is_read_as_what_it_holds_and_said_to_be_truncated(tmp_path, capsys):
    # a copy cut short: it sniffed as "no source recognised this content", hiding the reason
    src = next((FIX / "cloud" / "cloudtrail-tree" / "AWSLogs").rglob("*_CloudTrail_eu-west-1_*.json.gz"))
    disk = src.read_bytes()
    cut = tmp_path / src.name
    cut.write_bytes(disk[: len(disk) // 2])
    from replaybook.sources import registry

    assert registry.sniff_file(cut)[0].name == registry.sniff_file(src)[0].name == "aws.cloudtrail"
    assert main(["load", "access", str(cut)]) == 0
    err = capsys.readouterr().err
    assert "truncated gzip stream: it ends before its end marker" in err and "no source recognised" not in err


def test_a_gzip_of_several_members_sniffs_as_what_it_holds(tmp_path, capsys):
    """gzip reads concatenated members as one stream; sniffing read the first only, so a log
    split mid-line into two members (or behind an empty member) was 'no source recognised'."""
    import gzip

    from replaybook.sources import registry

    log = next((FIX / "join_trap" / "door").rglob("*.jsonl"))
    data = log.read_bytes()
    cut = len(data) // 3 + 5
    split = tmp_path / "split.jsonl.gz"
    split.write_bytes(gzip.compress(data[:cut]) + gzip.compress(data[cut:]))
    empty_first = tmp_path / "empty-first.jsonl.gz"
    empty_first.write_bytes(gzip.compress(b"") + gzip.compress(data))
    for p in (split, empty_first):
        assert registry.sniff_file(p)[0].name == "door"
        assert main(["load", "calls", str(p)]) == 0
    assert capsys.readouterr().err.count(f"calls: {len(data.splitlines())} rows from 1 file (door)") == 2


def test_a_delivery_file_cut_short_keeps_its_complete_records(tmp_path):
    # {"Records": [...]} stopped mid-write (or a truncated gzip): the whole file was set aside,
    # though all but its last record are whole
    import json as _json

    from replaybook.sources.cloudtrail import load_cloudtrail

    src = next((FIX / "cloud" / "cloudtrail-tree" / "AWSLogs").rglob("*_CloudTrail_eu-west-1_*.json.gz"))
    records = _json.loads(gzip.decompress(src.read_bytes()))["Records"]
    doc = _json.dumps({"Records": records * 3}, indent=2).encode()
    whole = load_cloudtrail([_write(tmp_path / "whole.json", doc)])
    n = len(whole.frame)
    assert n == 3 * len(records) > 3
    # cut inside the last record but one: every record before it is read, the rest said
    last_two = doc.rindex(b'"eventVersion"', 0, doc.rindex(b'"eventVersion"'))
    cut = doc[:last_two + 20]
    for name, body in (("cut.json", cut), ("cut.json.gz", gzip.compress(doc)[: len(gzip.compress(cut))])):
        res = load_cloudtrail([_write(tmp_path / name, body)])
        got = len(res.frame)
        assert 0 < got <= n - 2, (name, got)
        first = load_cloudtrail([_write(tmp_path / f"first-{name}.json",
                                        _json.dumps({"Records": (records * 3)[:got]}, indent=2).encode())])
        pd.testing.assert_frame_equal(res.frame.drop(columns=["source_file", "raw"]),
                                      first.frame.drop(columns=["source_file", "raw"]))
        errors = res.quarantine["error"].tolist()
        assert any(f"document cut short or damaged after {got:,} complete records (those are read)" in e
                   for e in errors), errors


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def test_a_delivery_kept_both_plain_and_gzipped_is_read_once(tmp_path, capsys):
    # x.json beside x.json.gz with the same text: every event counted twice (different bytes on
    # disk, so the hash on disk did not tell)
    src = next((FIX / "cloud" / "cloudtrail-tree" / "AWSLogs").rglob("*_CloudTrail_eu-west-1_*.json.gz"))
    (tmp_path / "x.json.gz").write_bytes(src.read_bytes())
    (tmp_path / "x.json").write_bytes(gzip.decompress(src.read_bytes()))
    one = replaybook.load([src])
    both = replaybook.load([tmp_path])
    assert len(both["access"]) == len(one["access"]) > 0
    notes = both.files.set_index("path")["note"]
    assert notes[str(tmp_path / "x.json.gz")] == f"same content as {tmp_path / 'x.json'}: read once"
    # a different text under the gz name is not a copy
    (tmp_path / "x.json").write_bytes(gzip.decompress(src.read_bytes()).replace(b"eu-west-1", b"eu-west-2"))
    assert len(replaybook.load([tmp_path])["access"]) == 2 * len(one["access"])
    assert main(["load", "access", str(tmp_path)]) == 0


def test_utf16_text_is_said_to_be_utf16_not_unrecognised(tmp_path, capsys):
    """A log saved as UTF-16 (a Windows editor's "Unicode") read as 'no source recognised', or
    with --source as 'not a text file (binary data)'."""
    log = next((FIX / "join_trap" / "door").rglob("*.jsonl"))
    wide = tmp_path / "calls.jsonl"
    wide.write_bytes(log.read_text().encode("utf-16"))
    assert main(["load", "calls", str(wide)]) == 2
    assert "UTF-16 text: replaybook reads UTF-8 (a copy converted with `iconv -f UTF-16 -t UTF-8` will read)" \
        in capsys.readouterr().err
    assert main(["load", "calls", "--source", "door", str(wide)]) == 2
    assert capsys.readouterr().err == (f"replaybook: error: {wide}: UTF-16 text: replaybook reads UTF-8 (a copy "
                                       "converted with `iconv -f UTF-16 -t UTF-8` will read); it cannot be read as "
                                       "door as it is\n")


def test_a_file_with_cr_only_line_ends_is_said_to_be_one(tmp_path):
    """Read as one unterminated line, it had been quarantined as 'still being written?'."""
    from replaybook.sources.claude_code import load_claude_code
    from replaybook.sources.door import load_door

    door = next((FIX / "join_trap" / "door").rglob("*.jsonl")).read_text()
    tr = next((FIX / "join_trap" / "transcripts").rglob("*.jsonl")).read_text()
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "s.jsonl").write_text(door.replace("\n", "\r"))
    (tmp_path / "t.jsonl").write_text(tr.replace("\n", "\r"))
    for res in (load_door(tmp_path / "d"), load_claude_code(tmp_path / "t.jsonl")):
        assert len(res.frame) == 0
        assert res.quarantine[["line_no", "kind"]].values.tolist() == [[1, "invalid"]]
        assert res.quarantine["error"].iloc[0].startswith("the lines end in CR only (no LF)")
    # a real unterminated last line is still 'pending'
    (tmp_path / "d" / "s.jsonl").write_text(door + '{"ts": "2026-09-13T10:00:09Z", "sess')
    q = load_door(tmp_path / "d").quarantine
    assert q["kind"].tolist() == ["pending"]


def test_one_session_id_in_two_gateways_logs_is_two_sessions(tmp_path, capsys):
    """A door log and an obot audit log that both call a session 'obot-sess-1' had merged into
    one door session (one conversation to the join); a format's own rotated logs stay one."""
    import json
    import shutil

    from replaybook import Incident
    from replaybook.loading import load

    shutil.copytree(FIX / "gateways" / "obot", tmp_path / "obot")
    (tmp_path / "door" / "analyst").mkdir(parents=True)
    line = {"ts": "2025-10-01T12:00:09Z", "seq": 1, "session": "obot-sess-1", "agent": "analyst",
            "tool": "read_object", "arguments": {"path": "a"}, "decision": "allow"}
    (tmp_path / "door" / "analyst" / "obot-sess-1.jsonl").write_text(json.dumps(line) + "\n")
    calls = load([tmp_path]).results["calls"]
    got = calls.frame.groupby("door_session")["source_file"].agg(lambda s: sorted({p.split("/")[-2] for p in s}))
    assert got.to_dict() == {"door:obot-sess-1": ["analyst"], "obot:cursor:2025-10-02": ["obot"],
                             "obot:obot-sess-1": ["obot"]}
    notes = {i["path"].split("/")[-2]: i.get("sessions_renamed") for i in calls.inputs}
    assert notes == {"analyst": ["door:obot-sess-1"], "obot": ["obot:obot-sess-1"]}
    (tmp_path / "incident.yaml").write_text("title: t\ntranscripts: []\ndoor: [door/, obot/]\n")
    inc = Incident.load(tmp_path)
    assert sorted(inc.calls["door_session"].unique()) == ["door:obot-sess-1", "obot:cursor:2025-10-02",
                                                          "obot:obot-sess-1"]
    assert any("another gateway's log uses its session id too: read as door:obot-sess-1" in (i["note"] or "")
               for i in inc.inputs)
    # two rotated door logs of one session are one session
    (tmp_path / "door" / "analyst" / "obot-sess-1.1.jsonl").write_text(json.dumps({**line, "seq": 2}) + "\n")
    shutil.rmtree(tmp_path / "obot")
    calls = load([tmp_path / "door"]).results["calls"].frame
    assert calls["door_session"].unique().tolist() == ["obot-sess-1"] and len(calls) == 2


def test_a_loaders_own_notes_reach_the_inputs_table_in_plain_words():
    from replaybook.loading import _input_note

    """Gateway loaders note what a log lacks (no zone, no arguments, made-up sessions); the
    notes had been kept but shown nowhere."""
    note = _input_note({"notes": ["Invariant message timestamps carry no zone: read as UTC",
                                  "MCPJungle logs no arguments: arguments None, args_key NA",
                                  "exchange records carry no time: ts NaT"]})
    assert note == ("Invariant message timestamps carry no zone: read as UTC; MCPJungle logs no arguments: no "
                    "arguments to compare; exchange records carry no time: time unknown")


def test_symbolic_links_in_a_folder_are_listed_not_passed_over(tmp_path, capsys):
    """A folder's symbolic links are not followed (evidence stays the files named); they had
    been left out without a word, and a folder of links only said "no files in it"."""
    door = FIX / "join_trap" / "door" / "analyst" / "door-sess-a.jsonl"
    (tmp_path / "real.jsonl").write_bytes(door.read_bytes())
    (tmp_path / "link.jsonl").symlink_to("real.jsonl")
    (tmp_path / "dangling.jsonl").symlink_to(tmp_path / "gone.jsonl")
    loaded = replaybook.load(tmp_path)
    files = loaded.files.set_index("path")
    assert files.loc[str(tmp_path / "link.jsonl"), "note"] == \
        "symbolic link to real.jsonl: not followed (name the file itself to read it)"
    assert files.loc[str(tmp_path / "dangling.jsonl"), "note"].startswith(
        f"symbolic link to {tmp_path / 'gone.jsonl'}: not followed")
    assert len(loaded["calls"]) == 5  # the file, once
    assert main(["load", "calls", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "calls: 5 rows from 1 file, 2 symbolic links not followed (door)" in err
    assert f"  {tmp_path / 'link.jsonl'}: symbolic link to real.jsonl: not followed" in err


def test_a_folders_manifest_and_data_files_are_named_for_what_they_are():
    """``load auto`` on an incident folder had called its incident.yaml and Parquet data "no
    source recognised this content", as if they were damaged logs."""
    demo = Path(__file__).resolve().parents[1] / "data" / "demo"
    files = replaybook.load(demo).files.set_index("path")
    assert files.loc[str(demo / "incident.yaml"), "note"] == (
        "an incident manifest, not a log: `replaybook report incident.yaml` or `replaybook join incident.yaml` reads it")
    assert files.loc[str(demo / "data" / "demo" / "cars.parquet"), "note"] == (
        "a Parquet data file: replaybook reads logs and transcripts, not data files")
    assert files.loc[str(demo / "data" / "demo" / "cars.xpt"), "note"] == (
        "a SAS transport (XPORT) data file: replaybook reads logs and transcripts, not data files")
    # a text file, and YAML that is not a manifest, keep the plain words
    assert files.loc[str(demo / "data" / "demo" / "README.txt"), "note"] == "no source recognised this content"


def test_a_sas_dataset_is_named_for_what_it_is(tmp_path, capsys):
    from replaybook.cli import main

    (tmp_path / "cars.sas7bdat").write_bytes(b"\x00" * 12 + bytes.fromhex("c2ea8160b31411cfbd92080009c7318c181f1011")
                                             + b"\x00" * 2000)
    files = replaybook.load(tmp_path).files
    assert list(files["note"]) == ["a SAS dataset (sas7bdat): replaybook reads logs and transcripts, not data files"]
    main(["load", "auto", str(tmp_path)])
    assert "1 file not read as a log or transcript (the note column says what each is, where it can tell)" in \
        capsys.readouterr().err


def test_an_archive_of_transcripts_is_named_not_read_as_one_transcript(tmp_path):
    """A tar of transcripts is mostly their text: it sniffed as one Claude Code transcript holding
    every member's lines (its headers quarantined as torn records), and the join went wrong."""
    import io
    import tarfile
    import zipfile

    demo = Path(__file__).resolve().parents[1] / "data" / "demo" / "transcripts"
    members = sorted(demo.glob("*.jsonl"))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for f in members:
            tar.add(f, arcname=f"transcripts/{f.name}")
    (tmp_path / "t.tar").write_bytes(buf.getvalue())
    (tmp_path / "t.tar.gz").write_bytes(gzip.compress(buf.getvalue()))
    with zipfile.ZipFile(tmp_path / "t.zip", "w") as z:
        for f in members:
            z.write(f, f.name)
    files = replaybook.load(tmp_path).files.set_index("path")
    how = "extract it and name the files it holds (replaybook reads files, not archives)"
    assert files["note"].to_dict() == {str(tmp_path / "t.tar"): f"a tar archive: {how}",
                                       str(tmp_path / "t.tar.gz"): f"a tar archive: {how}",
                                       str(tmp_path / "t.zip"): f"a zip archive: {how}"}
    assert files["source"].isna().all()
    m = tmp_path / "incident.yaml"
    m.write_text("title: t\ntranscripts:\n  - t.tar.gz\n")
    assert main(["join", str(m)]) == 2
    # text that holds "ustar" where a tar header has its magic is no archive (the header's checksum says so)
    from replaybook.sources.registry import archive_kind
    first = members[0].read_bytes()
    assert archive_kind(first[:257] + b"ustar\x0000" + first[265:]) is None
    assert archive_kind(b"x" * 257 + b"ustar\x0000" + b"y" * 300) is None
    assert archive_kind(buf.getvalue()[:512]) == "a tar archive"


def _v7(header: bytes) -> bytes:
    """A ustar header made a Unix V7 one: no magic, version, owner names, devices or prefix
    (bytes 257–511 NUL), its checksum written again (six octal digits, NUL, space)."""
    h = bytearray(header[:257] + bytes(255))
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\x00 " % sum(h)
    return bytes(h)


def test_an_old_v7_tar_of_transcripts_is_named_not_read(tmp_path):
    """A tar without the ``ustar`` magic (V7, still written by some tools) sniffed as a transcript
    holding every member: its headers are now known by their fields and checksum."""
    import io
    import tarfile

    demo = Path(__file__).resolve().parents[1] / "data" / "demo" / "transcripts"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for f in sorted(demo.glob("*.jsonl")):
            tar.add(f, arcname=f.name)
    data = bytearray(buf.getvalue())
    at = 0
    while at + 512 <= len(data) and any(data[at:at + 512]):  # each member: its header, then its blocks
        size = int(data[at + 124:at + 136].strip(b"\x00 ") or b"0", 8)
        data[at:at + 512] = _v7(bytes(data[at:at + 512]))
        at += 512 + (size + 511) // 512 * 512
    with tarfile.open(fileobj=io.BytesIO(bytes(data))) as tar:  # (still a tar to tar itself)
        assert len(tar.getnames()) == 3
    (tmp_path / "old.tar").write_bytes(bytes(data))
    files = replaybook.load(tmp_path).files.set_index("path")
    assert files.loc[str(tmp_path / "old.tar"), "note"] == (
        "a tar archive: extract it and name the files it holds (replaybook reads files, not archives)")

    from replaybook.sources.registry import archive_kind

    assert archive_kind(bytes(data[:512])) == "a tar archive"
    broken = bytearray(data[:512])
    broken[0] ^= 1  # (a header whose checksum fails is no header)
    assert archive_kind(bytes(broken)) is None
    for f in sorted(demo.glob("*.jsonl")):  # text has no octal fields at bytes 100–147
        assert archive_kind(f.read_bytes()[:4096]) is None
    long_name = bytearray(_v7(bytes(data[:512])))  # a member name of exactly 100 bytes: no NUL in it
    long_name[:100] = b"n" * 100
    long_name[148:156] = b" " * 8
    long_name[148:156] = b"%06o\x00 " % sum(long_name)
    assert archive_kind(bytes(long_name)) == "a tar archive"


def test_yaml_that_is_not_a_manifest_keeps_the_plain_words(tmp_path):
    (tmp_path / "rules.yaml").write_text("title: x\nrules: []\n")
    (tmp_path / "broken.yml").write_text("title: [\n")
    (tmp_path / "wide.yaml").write_bytes(b"\xff\xfe" + "title: t\ntranscripts: []\n".encode("utf-16-le"))
    notes = replaybook.load(tmp_path).files.set_index("path")["note"]
    assert notes[str(tmp_path / "rules.yaml")] == "no source recognised this content"
    assert notes[str(tmp_path / "broken.yml")] == "no source recognised this content"
    assert notes[str(tmp_path / "wide.yaml")].startswith("UTF-16")


def test_a_byte_identical_copy_of_a_transcript_keeps_its_name(tmp_path):
    """A backup copy of a transcript whose first line is bookkeeping (no uuid: a queue-operation)
    had renamed the transcript to <folder>/<stem> — its uuid-less lines made it look like a second
    transcript of that name — though the copy itself is read once."""
    import json

    from replaybook.loading import load_frame

    sid = "d34754bb-6a64-59aa-bfee-e088082c69c0"
    lines = [{"type": "queue-operation", "operation": "enqueue", "timestamp": "2026-09-13T10:00:00.000Z",
              "sessionId": sid},
             {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": sid, "timestamp": "2026-09-13T10:00:01.000Z",
              "message": {"role": "user", "content": "hello"}}]
    for folder in ("projects", "backup"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    alone = load_frame(tmp_path / "projects", "steps").result
    both = load_frame([tmp_path / "projects", tmp_path / "backup"], "steps").result
    assert set(alone.frame["transcript_id"]) == set(both.frame["transcript_id"]) == {sid}
    assert len(both.frame) == len(alone.frame) == 2
    assert [i.get("same_as") for i in both.inputs] == [None, str(tmp_path / "projects" / f"{sid}.jsonl")]


def test_one_transcript_id_in_two_formats_is_read_as_two_transcripts():
    # a Codex rollout and an OTel export of the same conversation (the spans'
    # gen_ai.conversation.id is the rollout's session id) merged into one transcript whose step
    # numbers collided: calls shown with another's arguments and results
    from replaybook.frames import STEPS, LoadResult
    from replaybook.loading import _input_note, transcripts_apart

    tid = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    rows = [dict(transcript_id=tid, seq=i, ts="2026-11-30T14:00:0%dZ" % i, kind="tool_call", tool="list_folder",
                 source_file=f, line_no=i + 1) for f in ("rollout.jsonl", "spans.json") for i in range(2)]
    rows.append(dict(transcript_id="other", seq=0, ts="2026-11-30T14:00:09Z", kind="user_prompt",
                     source_file="spans.json", line_no=9))
    inputs = [{"path": "rollout.jsonl", "format": "codex"}, {"path": "spans.json", "format": "otel"}]
    res = transcripts_apart(LoadResult(frame=STEPS.build(rows), inputs=inputs))
    assert res.frame["transcript_id"].tolist() == [tid, tid, f"otel:{tid}", f"otel:{tid}", "other"]
    assert res.inputs[1]["transcripts_renamed"] == [f"otel:{tid}"] and "transcripts_renamed" not in res.inputs[0]
    assert _input_note(res.inputs[1]) == ("a transcript of another format has its id too (one conversation, recorded "
                                          f"twice?): read apart as otel:{tid}")
    # one format's files sharing an id (a resumed session) stay one transcript
    same = [dict(r, source_file="rollout.jsonl") for r in rows[:4]]
    one = LoadResult(frame=STEPS.build(same), inputs=inputs[:1])
    assert transcripts_apart(one) is one


def test_a_result_stamped_before_its_call_is_noted_on_the_file():
    # a Codex function_call_output moved above its call (14:00:04.000 against 14:00:04.600) was
    # paired by its id without a word
    from replaybook.frames import STEPS, LoadResult
    from replaybook.loading import results_before_calls

    rows = [dict(transcript_id="t", seq=0, ts="2026-11-30T14:00:04.600Z", result_ts="2026-11-30T14:00:04.000Z",
                 kind="tool_call", call_id="call_cx_2", source_file="r.jsonl", line_no=8),
            dict(transcript_id="t", seq=1, ts="2026-11-30T14:00:05Z", result_ts="2026-11-30T14:00:06Z",
                 kind="tool_call", call_id="call_cx_3", source_file="r.jsonl", line_no=9)]
    res = results_before_calls(LoadResult(frame=STEPS.build(rows), inputs=[{"path": "r.jsonl", "format": "codex"}]))
    assert res.inputs[0]["notes"] == [
        "line 8: the result of tool call call_cx_2 is stamped 0.600 s before the call (14:00:04.000 against "
        "14:00:04.600): the file is out of order or was edited — paired by its id all the same"]
    ok = LoadResult(frame=STEPS.build(rows[1:]), inputs=[{"path": "r.jsonl"}])
    assert results_before_calls(ok) is ok


@pytest.mark.parametrize("rel,forced,is_", [
    ("claude_code/claude-streaming-split/66666666-ffff-4fff-8fff-666666666666.jsonl", "codex", "claude-code"),
    ("claude_code/claude-streaming-split/66666666-ffff-4fff-8fff-666666666666.jsonl", "gemini", "claude-code"),
    ("codex/envelope/rollout-2025-09-13T10-00-00-0199aaaa-0000-7000-8000-000000000001.jsonl", "claude-code",
     "codex"),
])
def test_a_forced_source_on_another_sources_file_is_noted(rel, forced, is_):
    """``--source codex`` on a Claude Code transcript gave nine rows of kind ``other`` with no time,
    and a Codex rollout read as Claude Code gave 23 rows, each without a word: the rows are kept
    (the user asked for that source), and the file's note says what its content is."""
    from replaybook.loading import load_frame

    got = load_frame(FIX / rel, "steps", source=forced).result
    assert got.inputs[0]["notes"][-1] == (
        f"read as {forced}, as asked, but its content is {is_} (steps): its rows may be empty or wrong "
        "(`replaybook load auto PATH` reads each file with the source its content names)")
    own = load_frame(FIX / rel, "steps", source=is_).result
    assert not [n for i in own.inputs for n in i.get("notes") or [] if "as asked" in n]
    assert len(own.frame) and len(got.frame)


def test_a_forced_source_note_reaches_the_cli(capsys):
    path = FIX / "claude_code" / "claude-streaming-split" / "66666666-ffff-4fff-8fff-666666666666.jsonl"
    assert main(["load", "steps", "--source", "codex", str(path)]) == 0
    err = capsys.readouterr().err
    assert f"  note {path}: read as codex, as asked, but its content is claude-code (steps)" in err


def test_codex_prompt_history_given_to_load_points_at_the_rollouts(tmp_path):
    """Codex CLI's ``~/.codex/history.jsonl`` (each prompt's text, codex-rs message_history) had
    been "no source recognised this content": it now says what it is and where the
    conversations are; a file of other lines with a ``text`` is not taken for it."""
    sid = "0199a1b2-0000-7000-8000-000000000001"
    (tmp_path / "history.jsonl").write_text(
        f'{{"session_id":"{sid}","ts":1757750400,"text":"list demo/"}}\n'
        f'{{"conversation_id":"{sid}","ts":1757750460,"text":"average mpg?"}}\n')
    (tmp_path / "notes.jsonl").write_text(f'{{"session_id":"{sid}","ts":"yesterday","text":"x"}}\n')
    files = replaybook.load(tmp_path).files.set_index("path")
    assert files.loc[str(tmp_path / "history.jsonl"), "note"] == (
        "Codex CLI's prompt history (~/.codex/history.jsonl: each prompt's text alone, no tool calls): the "
        "conversations are the rollouts under ~/.codex/sessions/YYYY/MM/DD/")
    assert files.loc[str(tmp_path / "notes.jsonl"), "note"] == "no source recognised this content"


def test_a_packet_session_log_given_to_load_is_named_as_such(tmp_path):
    """``load auto`` over a PR's folder said "no source recognised this content" of the replay
    packet's session log, replaybook's own format: it now says which commands read it."""
    src = FIX / "packet" / "claims" / "session.jsonl"
    (tmp_path / "session.jsonl").write_bytes(src.read_bytes())
    (tmp_path / "other.jsonl").write_text('{"seq": 1, "cmd": "x", "exit": 0}\n{"seq": 2, "note": "x"}\n')
    files = replaybook.load(tmp_path).files.set_index("path")
    assert files.loc[str(tmp_path / "session.jsonl"), "note"] == (
        "a replay packet's session log: `replaybook packet claims PR_BODY.md session.jsonl` or `replaybook packet "
        "replay session.jsonl` reads it (an incident names it under packet: log:)")
    assert files.loc[str(tmp_path / "other.jsonl"), "note"] == "no source recognised this content"
