import json
import shlex
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from replaybook.cli import main

FIX = Path(__file__).resolve().parent / "fixtures"
#: when the written incidents below start
T0 = datetime(2026, 9, 13, 10, 0, tzinfo=timezone.utc)


def _iso(t: datetime) -> str:
    """``t`` as the transcripts and door logs write times (UTC, milliseconds, ``Z``)."""
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _incident_dirs(tmp_path: Path) -> tuple[Path, Path]:
    """A transcripts folder and a door log folder (agent ``analyst``) for an incident written here."""
    tr, door = tmp_path / "t", tmp_path / "d" / "analyst"
    tr.mkdir()
    door.mkdir(parents=True)
    return tr, door


def test_join_prints_the_expected_assignment(capsys):
    rc = main(["join", "--transcripts", str(FIX / "join_trap" / "transcripts"),
               "--calls", str(FIX / "join_trap" / "door"), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    expected = json.loads((FIX / "join_trap" / "expected.json").read_text())
    assert rc == 0
    assert out["assignments"] == expected["assignments"]
    assert out["unmatched_transcripts"] == expected["unmatched_transcripts"]
    assert {s["door_session"]: s["agreed"] for s in out["sessions"]} == expected["agreed_steps"]
    assert {s["door_session"]: s["status"] for s in out["sessions"]} == {
        "door-sess-a": "matched", "door-sess-b": "matched"}
    assert out["offset_ms"] == 400.0  # the door's clock runs 0.4 s ahead in this case
    # the margin is a difference of step counts: printed as an integer, not 2.0
    assert [(s["margin"], type(s["margin"])) for s in out["sessions"]] == [(2, int), (2, int)]


def test_join_names_a_skipped_empty_transcript_and_a_loaders_note(tmp_path, capsys):
    """An empty transcript file among the inputs was skipped without a trace in the join's output,
    and what a loader noted of a file (bytes read as U+FFFD, a time without a zone) never reached
    it: both are said on stderr, as `load` says them; the assignment is unchanged."""
    import shutil

    trans = tmp_path / "transcripts"
    shutil.copytree(FIX / "join_trap" / "transcripts", trans)
    (trans / "empty.jsonl").write_bytes(b"")
    third = trans / "33333333-cccc-4ccc-8ccc-333333333333.jsonl"
    lines = third.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"analyst", b"an\xe9lyst", 1)  # (in its cwd)
    third.write_bytes(b"\n".join(lines))
    rc = main(["join", "--transcripts", str(trans), "--calls", str(FIX / "join_trap" / "door"), "--format", "json"])
    got = capsys.readouterr()
    assert rc == 0
    expected = json.loads((FIX / "join_trap" / "expected.json").read_text())
    assert json.loads(got.out)["assignments"] == expected["assignments"]
    assert f"  skipped {trans / 'empty.jsonl'}: empty file\n" in got.err
    assert f"  note {third}: bytes that are not UTF-8 on line 2: read as U+FFFD" in got.err


def test_join_of_an_incident_names_its_skipped_files_too(tmp_path, capsys):
    import shutil

    shutil.copytree(FIX / "join_trap" / "transcripts", tmp_path / "t")
    shutil.copytree(FIX / "join_trap" / "door", tmp_path / "d")
    (tmp_path / "t" / "empty.jsonl").write_bytes(b"")
    (tmp_path / "incident.yaml").write_text("title: t\ntranscripts:\n  - t/\ndoor:\n  - d/\n")
    assert main(["join", str(tmp_path / "incident.yaml"), "--format", "json"]) == 0
    assert "  skipped t/empty.jsonl: empty file\n" in capsys.readouterr().err


def test_join_takes_an_incident_manifest(tmp_path, capsys):
    """Someone who has written a manifest had to repeat its paths as --transcripts/--calls."""
    demo = Path(__file__).resolve().parents[1] / "data" / "demo" / "incident.yaml"
    assert main(["join", str(demo), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["assignments"] == {"door-20260913T100005-a1": "919dc839-23e1-56e5-8bd5-430e87d6a897",
                                  "door-20260913T100052-b7": "3b4173aa-345d-5382-aff0-c40b872f81ae"}
    assert out["window_s"] == 60.0
    assert main(["join", str(demo)]) == 0  # the table says why the third transcript has no session
    assert ("unmatched transcripts: 9c58f26c-cf9c-524b-8de3-1d9c34ca864a (built-in tools only: no door log was "
            "expected to hold its calls)") in capsys.readouterr().out
    assert main(["join", str(demo), "--calls", str(demo.parent / "door")]) == 2
    assert "give an INCIDENT manifest or --transcripts and --calls, not both" in capsys.readouterr().err
    assert main(["join", "--calls", str(demo.parent / "door")]) == 2
    assert "give an INCIDENT manifest, or both --transcripts and --calls" in capsys.readouterr().err
    # a format forced on an incident's inputs was taken and then not applied, without a word
    for opt in ("--transcripts-format", "--calls-format"):
        assert main(["join", str(demo), opt, "codex"]) == 2
        err = capsys.readouterr().err
        assert f"{opt} forces a format on the paths given with --" in err
        assert "an INCIDENT manifest names each input's format ({path, format} entries)" in err
        # an empty value (a shell variable left unset) is a format forced all the same: with paths
        # it is an unknown format (exit 2), so with an INCIDENT it may not pass unsaid
        assert main(["join", str(demo), opt, ""]) == 2
        assert f"{opt} forces a format on the paths given with --" in capsys.readouterr().err
    bad = tmp_path / "incident.yaml"
    bad.write_text("title: x\nwindow_s: sixty\n")
    assert main(["join", str(bad)]) == 2


def _join_tables(out: str) -> list[dict]:
    """The ``join`` table's parts: per part ``{door_session: {column: cell}}``."""
    parts, header = [], None
    for ln in out.splitlines():
        if ln.startswith("door_session"):
            header = ln.split()
            parts.append({})
        elif header is not None and ln.startswith("door-"):
            cells = ln.split()
            assert len(cells) == len(header), ln
            parts[-1][cells[0]] = dict(zip(header, cells))
        else:
            header = None
    return parts


def test_join_table_is_readable(capsys):
    rc = main(["join", "--transcripts", str(FIX / "join_trap" / "transcripts"),
               "--calls", str(FIX / "join_trap" / "door")])
    out = capsys.readouterr().out
    assert rc == 0
    # three parts, none wider than a terminal (one table of 17 columns had been 230 characters)
    assert max(len(ln) for ln in out.splitlines() if ln.startswith("door")) <= 120
    verdicts, evidence, left = _join_tables(out)
    assert "what each link rests on:" in out
    # share as a percentage, margin and offset without a trailing ".0"
    # and what the agreement rests on (method)
    assert [(k, r["share"], r["status"], r["method"], r["offset_ms"], r["calls"]) for k, r in verdicts.items()] == [
        ("door-sess-a", "100%", "matched", "content", "+400", "5"),
        ("door-sess-b", "100%", "matched", "content", "+400", "3")]
    assert [(r["margin"], r["runner_up_agreed"]) for r in evidence.values()] == [("2", "3"), ("2", "3")]
    assert list(left) == ["door-sess-a", "door-sess-b"]
    # the offset says what it holds besides the clocks' difference
    assert ("clock offset (door − transcript): +400 ms, the median over the agreeing pairs (it includes the time a "
            "call takes to reach the door: clocks that agree show a small positive offset); window 60 s") in out
    # sessions no transcript agrees with: their figures are "-", never <NA> or NaN
    rc = main(["join", "--transcripts", str(FIX / "join_trap" / "transcripts"),
               "--calls", str(FIX / "join_trap" / "door"), "--min-agreed", "50"])
    out = capsys.readouterr().out
    assert rc == 0 and "<NA>" not in out and "NaN" not in out
    verdicts, evidence, left = _join_tables(out)
    for k in ("door-sess-a", "door-sess-b"):
        assert [verdicts[k][c] for c in ("transcript_id", "agreed", "share", "status", "method", "offset_ms")] == \
            ["-", "-", "-", "unmatched", "-", "-"]
        assert [evidence[k][c] for c in ("transcript_tool_steps", "margin")] == ["-", "-"]
        assert [left[k][c] for c in ("unmatched_steps", "id_conflicts", "id_mismatches", "unknown_ids")] == \
            ["-", "-", "-", "0"]


def test_join_table_shows_refusals_and_flags_contradicting_tool_use_ids(tmp_path, capsys):
    """id_conflicts had been in the JSON only: the table read 'matched' for a session whose door
    logged a different tool-use id from the transcript's step."""
    import shutil

    door = tmp_path / "door"
    shutil.copytree(FIX / "join_trap" / "door", door)
    f = door / "analyst" / "door-sess-a.jsonl"
    lines = f.read_text().splitlines()
    first = json.loads(lines[0])
    first["meta"] = {"claudecode/toolUseId": "toolu_not_the_transcripts"}
    f.write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n")
    rc = main(["join", "--transcripts", str(FIX / "join_trap" / "transcripts"), "--calls", str(door)])
    cap = capsys.readouterr()
    assert rc == 0
    verdicts, _, left = _join_tables(cap.out)
    assert verdicts["door-sess-a"]["refused"] == "1" and verdicts["door-sess-b"]["refused"] == "0"
    # the logged id contradicts the step it agrees with, and is one no transcript has (the
    # report's unknown_ids)
    assert [[left[k][c] for c in ("id_conflicts", "id_mismatches", "unknown_ids")]
            for k in ("door-sess-a", "door-sess-b")] == [["1", "0", "1"], ["0", "0", "0"]]
    assert ("warning: door session door-sess-a: 1 door call logged a different tool-use id from the transcript "
            "step it agrees with (not counted)") in cap.err
    # unmatched (no transcript may be assigned here) with an id no transcript has: the likely reason is said
    rc = main(["join", "--transcripts", str(FIX / "join_trap" / "transcripts"), "--calls", str(door),
               "--min-agreed", "50"])
    out = capsys.readouterr().out
    assert rc == 0
    assert ("door session door-sess-a: unmatched, and 1 call logged the client's tool-use id that no loaded "
            "transcript has: its transcript is most likely not among the inputs") in out
    assert "door session door-sess-b: unmatched, and" not in out


def test_load_calls_jsonl_and_parquet(tmp_path, capsys):
    rc = main(["load", "calls", str(FIX / "join_trap" / "door")])
    cap = capsys.readouterr()
    rows = [json.loads(x) for x in cap.out.splitlines()]
    assert rc == 0 and len(rows) == 8
    assert rows[0]["ts"].startswith("2026-09-13T10:00:05.600") and rows[0]["arguments"] == '{"path":"demo/"}'
    assert "calls: 8 rows from 2 files" in cap.err and "quarantine: 0 lines" in cap.err
    out = tmp_path / "steps.parquet"
    assert main(["load", "steps", str(FIX / "join_trap" / "transcripts"), "--format", "parquet", "--out", str(out)]) == 0
    df = pd.read_parquet(out)
    assert (df.kind == "tool_call").sum() == 9


def test_exit_codes_and_messages_name_file_and_line(tmp_path, capsys):
    assert main(["load", "calls", str(tmp_path / "missing.jsonl")]) == 2
    assert main(["load", "calls", str(FIX / "join_trap" / "door"), "--format", "parquet"]) == 2
    assert "--out" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"ts": "2026-09-13T10:00:00Z", "session": "s", "tool": "t", "decision": "allow"}\n[1]\n')
    assert main(["load", "calls", str(bad)]) == 0
    assert f"{bad}:2: [invalid] not a JSON object" in capsys.readouterr().err
    (tmp_path / "incident.yaml").write_text("title: x\n")
    assert main(["report", str(tmp_path / "incident.yaml"), "--out", str(tmp_path / "r")]) == 2
    assert "incident.yaml" in capsys.readouterr().err
    assert main(["join", "--transcripts", str(FIX / "join_trap" / "transcripts"),
                 "--calls", str(FIX / "join_trap" / "door"), "--window", "-1"]) == 2
    # said as the option the user gave, before anything is loaded (it had been "window_s must be …")
    assert "Invalid value for '--window': -1.0 is not in the range 0<x<=" in capsys.readouterr().err
    for opt, value in (("--min-agreed", "0"), ("--max-offset", "-5")):
        assert main(["join", "--transcripts", str(FIX / "join_trap" / "transcripts"),
                     "--calls", str(FIX / "join_trap" / "door"), opt, value]) == 2
        assert f"Invalid value for '{opt}'" in capsys.readouterr().err
    # a kernel cannot even start in a second: such a timeout is bad usage, not an internal error
    assert main(["report", str(FIX.parents[1] / "data" / "demo"), "--out", str(tmp_path / "r"),
                 "--timeout", "1"]) == 2
    assert "Invalid value for '--timeout': 1 is not in the range x>=30" in capsys.readouterr().err


def test_join_says_when_sessions_run_on_clocks_of_their_own(tmp_path, capsys):
    """Agents on two machines: one 'clock offset' line stated a figure true of neither."""
    tr, door = _incident_dirs(tmp_path)
    for n, (sid, skew) in enumerate((("aaaaaaaa-0000-4000-8000-00000000000a", 0.4),
                                     ("bbbbbbbb-0000-4000-8000-00000000000b", 95.3))):
        head = f'"sessionId":"{sid}","version":"2.1.90","isSidechain":false'
        lines, calls = [], []
        for i in range(4):
            t = 600 * n + 10 * i
            lines.append(f'{{{head},"uuid":"{sid[:8]}-{i:04d}-4000-8000-000000000000","type":"assistant",'
                         f'"timestamp":"2026-09-13T10:{t // 60:02d}:{t % 60:02d}.000Z","message":{{"id":"m{n}{i}",'
                         f'"role":"assistant","content":[{{"type":"tool_use","id":"toolu_{n}{i}",'
                         f'"name":"mcp__door__read","input":{{"path":"f{n}{i}"}}}}]}},"requestId":"r{n}{i}"}}')
            c = t + skew
            calls.append(json.dumps({"ts": f"2026-09-13T10:{int(c) // 60:02d}:{c % 60:06.3f}Z", "seq": i + 1,
                                     "session": f"door-s{n}", "tool": "read", "arguments": {"path": f"f{n}{i}"},
                                     "decision": "allow"}))
        (tr / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")
        (door / f"s{n}.jsonl").write_text("\n".join(calls) + "\n")
    assert main(["join", "--transcripts", str(tr), "--calls", str(tmp_path / "d")]) == 0
    out = capsys.readouterr().out
    assert "clock offsets (door − transcript) differ by session, from +400 to +95300 ms (offset_ms above)" in out
    verdicts = _join_tables(out)[0]
    assert [verdicts[s]["offset_ms"] for s in ("door-s0", "door-s1")] == ["+400", "+95300"]


def test_load_access_keeps_nanoseconds_and_writes_json_columns_as_text(tmp_path, capsys):
    case = FIX / "cloud" / "gcp-audit-denied" / "data_access.jsonl"
    assert main(["load", "access", str(case), "--source", "gcp.audit"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["ts"] for r in rows] == ["2026-09-13T10:00:05.000000000Z", "2026-09-13T10:01:02.512000000Z",
                                       "2026-09-13T10:01:20.123456789Z"]
    assert json.loads(rows[2]["raw"])["protoPayload"]["status"]["code"] == 7
    out = tmp_path / "a.parquet"
    # the raw records hold empty objects, which pyarrow cannot write as structs
    assert main(["load", "access", str(case), "--source", "gcp.audit", "--format", "parquet", "--out", str(out)]) == 0
    df = pd.read_parquet(out)
    assert str(df.ts.iloc[2]) == "2026-09-13 10:01:20.123456789+00:00"


def test_load_access_sniffs_names_sources_and_reports_skipped_files(capsys):
    from replaybook.cli import main

    case = Path(__file__).parent / "fixtures" / "cloud" / "cloudtrail-tree"
    assert main(["load", "access", "--source", "nope", str(case)]) == 2
    assert "aws.cloudtrail" in capsys.readouterr().err
    assert main(["load", "access", str(case)]) == 0  # sniffed: no --source needed
    err = capsys.readouterr().err
    assert "access: 4 rows from 1 file, 1 more skipped, 1 not recognised (aws.cloudtrail)" in err
    assert "CloudTrail digest file (no Records)" in err
    assert "not read: 1 file no source reads" in err
    assert "expected.json: no source recognised this content" in err and "quarantine: 0 lines" in err


def test_load_steps_reads_each_file_with_its_own_source_and_refuses_the_wrong_frame(capsys):
    # a Codex rollout is not misread as Claude Code; a door log is not a transcript
    from replaybook.cli import main

    fx = Path(__file__).parent / "fixtures"
    assert main(["load", "steps", str(fx / "codex")]) == 0
    err = capsys.readouterr().err
    assert "(codex)" in err and "claude-code" not in err
    assert main(["load", "steps", str(fx / "join_trap" / "door")]) == 2
    assert "no steps input" in capsys.readouterr().err
    assert main(["join", "--transcripts", str(fx / "join_trap" / "door"), "--calls", str(fx / "join_trap" / "transcripts")]) == 2


def test_top_level_help_lists_lazy_commands_without_importing_them():
    # `replaybook --help` must stay instant: the feature groups are described, not imported
    import subprocess
    import sys

    code = ("import sys\nfrom replaybook.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print([m for m in ('replaybook.packet', 'replaybook.capsule', 'replaybook.door', 'pandas') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
    import click

    from replaybook.cli import _LazyGroup, cli

    ctx = click.Context(cli)
    for name, short in _LazyGroup.lazy_help.items():
        own = cli.get_command(ctx, name).get_short_help_str(500)
        assert own.split()[:3] == short.split()[:3], name


def test_load_access_names_valid_lines_of_other_kinds(tmp_path, capsys):
    entry = {"protoPayload": {"@type": "type.googleapis.com/google.cloud.audit.AuditLog",
                              "serviceName": "storage.googleapis.com", "methodName": "storage.objects.get",
                              "resourceName": "projects/_/buckets/b/objects/k",
                              "authenticationInfo": {"principalEmail": "a@example.com"}, "status": {}},
             "timestamp": "2026-09-13T10:00:00Z", "logName": "projects/p/logs/cloudaudit.googleapis.com%2Fdata_access"}
    other = {"textPayload": "a line of another log", "timestamp": "2026-09-13T10:00:01Z", "logName": "projects/p/logs/x"}
    p = tmp_path / "audit.jsonl"
    p.write_text(json.dumps(entry) + "\n" + json.dumps(other) + "\n")
    assert main(["load", "access", str(p)]) == 0
    err = capsys.readouterr().err
    assert "access: 1 row from 1 file (gcp.audit)" in err
    assert f"ignored 1 valid line of other kinds in {p}" in err
    assert "another format" not in err  # it has a record: the format is right


def test_load_says_what_a_loader_noted_of_a_file(tmp_path, capsys):
    """A row kept with a value that could not be read (here a transcript line whose timestamp is
    a number) is said on stderr with its file and line, not only in ``load auto``'s table."""
    line = {"type": "user", "uuid": "u1", "sessionId": "s", "parentUuid": None, "timestamp": 1757757600,
            "message": {"role": "user", "content": "hello"}}
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps(line) + "\n")
    assert main(["load", "steps", str(p)]) == 0
    err = capsys.readouterr().err
    assert (f"  note {p}: 1 line with a timestamp that is empty or not text, kept with the time unknown: "
            "line 1 (1757757600)") in err


def test_a_forced_format_that_reads_nothing_says_so(tmp_path, capsys):
    """A gateway format forced on a file of another kind reads its lines as valid JSON but finds
    no tool call in them: the summary names each such file and suggests another format, and
    when nothing at all was read the command exits 2 (a script must not go on with an empty
    frame) — for load and for join alike."""
    log = FIX / "claude_code" / "flat-agent" / "dddddddd-7777-4777-8777-dddddddddddd.jsonl"
    assert main(["load", "calls", str(log), "--source", "mcpjungle"]) == 2
    err = capsys.readouterr().err
    assert "calls: 0 rows from 1 file (mcpjungle)" in err
    assert f"valid lines of other kinds in {log} (not tool calls); nothing in it was read as mcpjungle: " \
           "is it another format?" in err
    assert "nothing was read as mcpjungle from 1 file holding lines of other kinds" in err.splitlines()[-1]
    assert main(["join", "--transcripts", str(log), "--calls", str(log), "--calls-format", "mcpjungle"]) == 2
    assert "nothing was read as mcpjungle" in capsys.readouterr().err
    # the same file read by the format it is: no complaint
    assert main(["load", "steps", str(log), "--source", "claude-code", "--out", str(tmp_path / "s.jsonl")]) == 0
    assert "other kinds" not in capsys.readouterr().err



def test_jsonl_keeps_slashes_readable_and_exact(tmp_path):
    from replaybook.cli import _frame_out

    values = ["s3://b/k/a.csv", "back\\slash/then", "\\/", "\\\\/x", "plain"]
    out = tmp_path / "rows.jsonl"
    _frame_out(pd.DataFrame({"v": values}), "jsonl", str(out))
    text = out.read_text()
    assert '"s3://b/k/a.csv"' in text and "\\/" not in text.replace("\\\\", "")
    assert [json.loads(x)["v"] for x in text.splitlines()] == values


def test_unmatched_transcripts_are_listed_one_per_line_when_many(capsys):
    rc = main(["join", "--transcripts", str(FIX / "join_trap" / "transcripts"),
               "--calls", str(FIX / "join_trap" / "door"), "--min-agreed", "50"])
    out = capsys.readouterr().out
    assert rc == 0
    tail = out[out.index("unmatched transcripts (3):"):].splitlines()
    assert [t.strip() for t in tail[1:4]] == ["11111111-aaaa-4aaa-8aaa-111111111111",
                                              "22222222-bbbb-4bbb-8bbb-222222222222",
                                              "33333333-cccc-4ccc-8ccc-333333333333 (built-in tools only: no door "
                                              "log was expected to hold its calls)"]  # (its one call is Read)


def test_sources_lists_every_registered_format_under_its_frame(capsys):
    from replaybook.cli import main
    from replaybook.sources import registry

    assert main(["sources"]) == 0
    out = capsys.readouterr().out
    frame = None
    listed = {}
    for line in out.splitlines():
        if not line.startswith(" "):
            frame = line.rstrip(":")
        elif not line.startswith("   "):  # (a wrapped description continues further in)
            listed[line.split()[0]] = frame
    assert listed == {n: registry.get(n).frame for n in registry.names()}
    assert listed["claude-code"] == "steps" and listed["door"] == "calls" and listed["aws.s3_access"] == "access"


def test_load_out_makes_its_folder(tmp_path, capsys):
    # as `report --out` does; it crashed with an internal error (exit 1) after the whole load
    out = tmp_path / "new" / "deeper" / "calls.jsonl"
    assert main(["load", "calls", str(FIX / "join_trap" / "door"), "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 8
    assert main(["load", "auto", str(FIX / "join_trap"), "--out", str(tmp_path / "auto" / "x.jsonl")]) == 0
    assert sorted(p.name for p in (tmp_path / "auto").iterdir()) == ["x.calls.jsonl", "x.steps.jsonl"]
    (tmp_path / "file").write_text("")
    assert main(["load", "calls", str(FIX / "join_trap" / "door"), "--out", str(tmp_path / "file" / "x.jsonl")]) == 2
    assert f"cannot make the folder for {tmp_path / 'file' / 'x.jsonl'}: {tmp_path / 'file'} is a file, not a folder" in \
        " ".join(capsys.readouterr().err.split())


def test_report_out_that_cannot_be_a_folder_is_a_usage_error(tmp_path, capsys):
    # (under a file: it was an internal error, exit 1, from the renderer's mkdir; checked before any kernel)
    (tmp_path / "file").write_text("")
    demo = Path(__file__).resolve().parents[1] / "data" / "demo" / "incident.yaml"
    assert main(["report", str(demo), "--out", str(tmp_path / "file" / "sub")]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and f"cannot make the folder {tmp_path / 'file' / 'sub'}: {tmp_path / 'file'} is a file, not a " \
        "folder" in " ".join(err.split())
    assert not list(tmp_path.glob("**/*.ipynb"))


def test_load_out_never_writes_over_an_input(tmp_path, capsys):
    import hashlib
    import shutil

    door = tmp_path / "door"
    shutil.copytree(FIX / "join_trap" / "door", door)
    logs = sorted(door.rglob("*.jsonl"))
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in logs}
    # the file itself, the file inside a folder given, and (auto) a name the frame suffix makes
    assert main(["load", "calls", str(logs[0]), "--out", str(logs[0])]) == 2
    assert main(["load", "calls", str(door), "--out", str(logs[1])]) == 2
    err = capsys.readouterr().err
    assert "is one of the inputs" in err and "never written over" in err
    stem = logs[0].with_name("x.jsonl")
    logs[0].rename(logs[0].with_name("x.calls.jsonl"))
    renamed = logs[0].with_name("x.calls.jsonl")
    assert main(["load", "auto", str(door), "--out", str(stem)]) == 2
    assert hashlib.sha256(renamed.read_bytes()).hexdigest() == before[logs[0]]
    assert hashlib.sha256(logs[1].read_bytes()).hexdigest() == before[logs[1]]
    # another file is fine
    assert main(["load", "calls", str(door), "--out", str(tmp_path / "out.jsonl")]) == 0


def test_no_rows_is_no_lines(tmp_path, capsys):
    empty = tmp_path / "s.jsonl"
    empty.write_text("")
    assert main(["load", "calls", "--source", "door", str(empty)]) == 0
    assert capsys.readouterr().out == ""  # (pandas had written one blank line: not JSON Lines)


def test_files_no_source_reads_are_listed_apart_from_the_quarantine(capsys):
    """A folder's incident.yaml and data files had been counted as quarantine 'lines', then as
    'whole files … [invalid]' beside real damage; they are not evidence of these kinds."""
    demo = Path(__file__).resolve().parents[1] / "data" / "demo"
    assert main(["join", "--transcripts", str(demo), "--calls", str(demo / "door")]) == 0
    err = capsys.readouterr().err
    assert "not read: 5 files no source reads" in err and "quarantine: 0 lines" in err
    assert f"  {demo / 'incident.yaml'}: an incident manifest, not a log: `replaybook report incident.yaml`" in err


def test_load_writes_arguments_nested_deeper_than_orjson_writes(tmp_path, capsys):
    """A transcript whose tool input nests 600 deep loads, but writing its rows stopped the CLI
    with an internal error (orjson writes 254 levels)."""
    sid = "cccccccc-1111-4111-8111-cccccccccccc"
    deep = "[" * 600 + "]" * 600
    (tmp_path / f"{sid}.jsonl").write_text(
        '{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/p","sessionId":"%s",'
        '"version":"2.1.90","uuid":"00000000-0000-4000-8000-000000000002","timestamp":"2026-09-13T13:00:01.000Z",'
        '"type":"assistant","message":{"model":"m","id":"msg_1","type":"message","role":"assistant","content":'
        '[{"type":"tool_use","id":"toolu_1","name":"mcp__door__lookup","input":{"a":%s}}],"stop_reason":null,'
        '"usage":{"input_tokens":1,"output_tokens":1}},"requestId":"req_1"}\n' % (sid, deep))
    assert main(["load", "steps", str(tmp_path)]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    (call,) = [r for r in rows if r["kind"] == "tool_call"]
    assert call["arguments"] == '{"a":%s}' % deep and call["args_key"] == '{"a":%s}' % deep


def test_report_says_its_findings_and_a_replaced_report_on_stderr(tmp_path, monkeypatch, capsys):
    """`report` had printed only the HTML path: a CI job never heard of set-aside evidence, and a
    second run into the same folder replaced the first report without a word."""
    import replaybook.report.render as render

    out = tmp_path / "r"
    out.mkdir()
    (out / "demo.html").write_text("<p>earlier</p>")
    findings = {"sessions": {"matched": 1, "unmatched": 1}, "unassigned_transcripts": 1, "door_calls": 7,
                "refused_calls": 1,
                "set_aside_lines": 2, "set_aside_files": 0, "unread_files": 1, "unexplained_storage": 3,
                "refused_then_reached": ["s3://b/.env"], "unclaimed_calls": 1, "unmatched_steps": 2, "far_pairs": 1,
                "disagreeing_copies": [["demo/cars.xpt", "demo/cars.parquet"]]}
    sums = (out / "demo.sha256").resolve()
    monkeypatch.setattr(render, "render_report", lambda inc, o, timeout: render.ReportPaths(
        ipynb=out / "demo.ipynb", html=(out / "demo.html").resolve(), findings=findings, checksums=sums))
    demo = Path(__file__).resolve().parents[1] / "data" / "demo" / "incident.yaml"
    assert main(["report", str(demo), "--out", str(out)]) == 0
    got = capsys.readouterr()
    assert got.out == f"{(out / 'demo.html').resolve()}\n"  # stdout: the HTML path alone, for scripts
    assert got.err.splitlines() == [
        f"replaybook: replaced the earlier report demo.html in {out.resolve()}",
        "replaybook: 2 door sessions (1 matched, 1 unmatched); 7 door calls, 1 refused; 1 transcript assigned to no "
        "door session; 2 files reached look like "
        "one dataset but hold different data: demo/cars.xpt, demo/cars.parquet; left unpaired by the join: 1 door "
        "call no step claims and 2 door-bound tool calls with no door call; 1 agreeing pair more than 5 s off its "
        "session's clock offset; 2 lines set aside (see Quarantine); 3 storage requests no door call explains; "
        "refused at the door, reached in storage with no door call: s3://b/.env",
        f"replaybook: every input's SHA-256 is in {sums}; check them with: "
        f"cd {shlex.quote(str(demo.parent))} && sha256sum -c {shlex.quote(str(sums))}"]


def test_join_names_a_clock_further_off_than_it_looks(tmp_path, capsys):
    """An agent whose clock was two hours off (a time zone written as UTC): its session was
    unmatched with nothing to say why; join now names the transcript its calls line up with, at
    what offset, and the --max-offset that joins them."""
    from datetime import timedelta

    t0, iso = T0, _iso
    tr, door = _incident_dirs(tmp_path)
    for n, (sid, skew) in enumerate((("aaaaaaaa-0000-4000-8000-00000000000a", 0.4),
                                     ("bbbbbbbb-0000-4000-8000-00000000000b", 7200.4))):
        head = f'"sessionId":"{sid}","version":"2.1.90","isSidechain":false'
        lines, calls = [], []
        for i in range(4):
            t = t0 + timedelta(seconds=600 * n + 10 * i)
            lines.append(f'{{{head},"uuid":"{sid[:8]}-{i:04d}-4000-8000-000000000000","type":"assistant",'
                         f'"timestamp":"{iso(t)}","message":{{"id":"m{n}{i}",'
                         f'"role":"assistant","content":[{{"type":"tool_use","id":"toolu_{n}{i}",'
                         f'"name":"mcp__door__read","input":{{"path":"f{n}{i}"}}}}]}},"requestId":"r{n}{i}"}}')
            calls.append(json.dumps({"ts": iso(t + timedelta(seconds=skew)), "seq": i + 1, "session": f"door-s{n}",
                                     "tool": "read", "arguments": {"path": f"f{n}{i}"}, "decision": "allow"}))
        (tr / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")
        (door / f"s{n}.jsonl").write_text("\n".join(calls) + "\n")
    args = ["join", "--transcripts", str(tr), "--calls", str(tmp_path / "d")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert ("door session door-s1: unmatched, but 4 of its 4 calls with arguments line up with transcript "
            "bbbbbbbb-0000-4000-8000-00000000000b at a clock offset of +7,200.4 s, beyond --max-offset 300: give "
            "that transcript's clock, --clock-offset bbbbbbbb-0000-4000-8000-00000000000b=7200.4 (or clock_offsets "
            "in the manifest)") in out
    assert main(args + ["--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["far_clocks"] == [{
        "door_session": "door-s1", "transcript_id": "bbbbbbbb-0000-4000-8000-00000000000b", "offset_ms": 7200400.0,
        "steps": 4, "calls_with_args": 4, "max_offset_s": 7202.0, "ambiguous_with": None}]
    assert main(args + ["--max-offset", "7202"]) == 0
    out = capsys.readouterr().out
    verdicts = _join_tables(out)[0]
    assert [verdicts[s]["transcript_id"] for s in ("door-s0", "door-s1")] == [
        "aaaaaaaa-0000-4000-8000-00000000000a", "bbbbbbbb-0000-4000-8000-00000000000b"]
    assert verdicts["door-s1"]["offset_ms"] == "+7200400" and "line up with transcript" not in out
    # the transcript's own clock, as the hint gives it: joined, and the other search unchanged
    assert main(args + ["--clock-offset", "bbbbbbbb-0000-4000-8000-00000000000b=7200.4"]) == 0
    verdicts = _join_tables(capsys.readouterr().out)[0]
    assert verdicts["door-s1"]["transcript_id"] == "bbbbbbbb-0000-4000-8000-00000000000b"
    assert [verdicts[s]["offset_ms"] for s in ("door-s0", "door-s1")] == ["+400", "+7200400"]
    assert main(args + ["--clock-offset", "bbbbbbbb"]) == 2
    assert "give TRANSCRIPT=SECONDS" in capsys.readouterr().err


def test_join_names_a_pair_far_from_its_sessions_offset(tmp_path, capsys):
    """A call logged 20 s after its step was visible only in the report's Clock offset."""
    import json as _json
    import shutil

    shutil.copytree(FIX / "join_trap", tmp_path / "jt")
    log = tmp_path / "jt" / "door" / "analyst" / "door-sess-a.jsonl"
    recs = [_json.loads(x) for x in log.read_text().splitlines()]
    ts = pd.Timestamp(recs[1]["ts"]) + pd.Timedelta(seconds=20)
    recs[1]["ts"] = ts.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    recs[1].pop("ts_end", None)
    log.write_text("".join(_json.dumps(r) + "\n" for r in recs))
    assert main(["join", "--transcripts", str(tmp_path / "jt" / "transcripts"),
                 "--calls", str(tmp_path / "jt" / "door")]) == 0
    far = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("far from")]
    assert len(far) == 1 and far[0].startswith(f"far from its session's offset: door-sess-a #{recs[1]['seq']} ")
    assert "+20,000 ms" in far[0]


def test_join_pairs_a_call_approved_late_and_says_it_waited(tmp_path, capsys):
    """The user took 100 s to approve the agent's read: the door received it then, and the result
    came after.  Beyond the window of the step's time, within it of the result: it agrees."""
    import json as _json
    import shutil

    shutil.copytree(FIX / "join_trap", tmp_path / "jt")
    log = tmp_path / "jt" / "door" / "analyst" / "door-sess-a.jsonl"
    recs = [_json.loads(x) for x in log.read_text().splitlines()]
    assert recs[4]["tool"] == "read_object" and recs[4]["ts"] == "2026-09-13T10:01:20.400Z"
    recs[4]["ts"] = "2026-09-13T10:03:00.400Z"
    log.write_text("".join(_json.dumps(r) + "\n" for r in recs))
    tr = tmp_path / "jt" / "transcripts" / "11111111-aaaa-4aaa-8aaa-111111111111.jsonl"
    lines = tr.read_text().splitlines()
    at = [i for i, x in enumerate(lines) if '"timestamp": "2026-09-13T10:01:20.700Z"' in x]
    assert len(at) == 1 and '"tool_result"' in lines[at[0]]
    lines[at[0]] = lines[at[0]].replace("2026-09-13T10:01:20.700Z", "2026-09-13T10:03:01.000Z")
    tr.write_text("\n".join(lines) + "\n")
    assert main(["join", "--transcripts", str(tmp_path / "jt" / "transcripts"),
                 "--calls", str(tmp_path / "jt" / "door"), "--format", "json"]) == 0
    out = _json.loads(capsys.readouterr().out)
    a = [x for x in out["sessions"] if x["door_session"] == "door-sess-a"][0]
    assert a["agreed"] == 5 and a["unclaimed_calls"] == 0 and a["offset_ms"] == 400.0
    assert main(["join", "--transcripts", str(tmp_path / "jt" / "transcripts"),
                 "--calls", str(tmp_path / "jt" / "door")]) == 0
    far = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("far from")]
    assert far == ["far from its session's offset: door-sess-a #5 read_object (transcript step 14) +100,000 ms: "
                   "the door received this call 100 s after the agent asked for it — it waited (approval?)"]


def test_join_takes_the_incident_folder_as_report_does(capsys):
    demo = Path(__file__).resolve().parents[1] / "data" / "demo"
    assert main(["join", str(demo), "--format", "json"]) == 0
    by_folder = json.loads(capsys.readouterr().out)
    assert main(["join", str(demo / "incident.yaml"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == by_folder
    assert len(by_folder["sessions"]) == 2


def test_join_names_the_sessions_a_wider_max_offset_joined_otherwise(tmp_path, capsys):
    """--max-offset 7200, given to reach one transcript's clock two hours off, also moved the
    common clock offset: another session lost its transcript to an agent's repeat of its calls
    an hour later, and nothing said so."""
    from datetime import timedelta

    t0, iso = T0, _iso
    tr, door = _incident_dirs(tmp_path)
    a, b = "aaaaaaaa-0000-4000-8000-00000000000a", "bbbbbbbb-0000-4000-8000-00000000000b"
    # (transcript, its first step (s), its steps, [(door session, seconds later the door logged each call)])
    for n, (sid, start, n_steps, sessions) in enumerate(((a, 0, 3, [("s1", 0.2), ("s3", 3600.2)]),
                                                         (b, 100, 5, [("s2", 7200.4)]))):
        head = f'"sessionId":"{sid}","version":"2.1.90","isSidechain":false'
        lines = []
        for i in range(n_steps):
            t = t0 + timedelta(seconds=start + 10 * i)
            lines.append(f'{{{head},"uuid":"{sid[:8]}-{i:04d}-4000-8000-000000000000","type":"assistant",'
                         f'"timestamp":"{iso(t)}","message":{{"id":"m{n}{i}",'
                         f'"role":"assistant","content":[{{"type":"tool_use","id":"toolu_{n}{i}",'
                         f'"name":"mcp__door__read","input":{{"path":"{sid[0]}{i}"}}}}]}},"requestId":"r{n}{i}"}}')
            for ds, later in sessions:
                with (door / f"{ds}.jsonl").open("a") as fh:
                    fh.write(json.dumps({"ts": iso(t + timedelta(seconds=later)), "seq": i + 1,
                                         "session": f"door-{ds}", "tool": "read", "arguments": {"path": f"{sid[0]}{i}"},
                                         "decision": "allow"}) + "\n")
        (tr / f"{sid}.jsonl").write_text("\n".join(lines) + "\n")
    args = ["join", "--transcripts", str(tr), "--calls", str(tmp_path / "d")]
    # at the default: door-s1 is a's, and nothing is said about --max-offset
    assert main(args + ["--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["assignments"] == {"door-s1": a, "door-s3": None, "door-s2": None}
    assert out["offset_changes"] == []
    assert main(args) == 0
    assert "(the default)" not in capsys.readouterr().out
    assert main(args + ["--max-offset", "7200"]) == 0
    out = capsys.readouterr().out
    assert [ln for ln in out.splitlines() if "(the default)" in ln] == [
        f"door session door-s1: with --max-offset 300 (the default) it was matched to transcript {a} (3 agreeing "
        "steps, clock offset +0.2 s); at 7200 it is unmatched",
        f"door session door-s3: with --max-offset 300 (the default) it was unmatched; at 7200 it is matched to "
        f"transcript {a} (3 agreeing steps, clock offset +3,600.2 s)",
        f"door session door-s2: with --max-offset 300 (the default) it was unmatched; at 7200 it is matched to "
        f"transcript {b} (5 agreeing steps, clock offset +7,200.4 s): transcript {b} needed the wider search; give "
        f"its clock instead, --clock-offset {b}=7200.4 (or clock_offsets in the manifest), and keep --max-offset "
        "at 300, which leaves every other transcript's search as it was"]
    assert main(args + ["--max-offset", "7200", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["offset_changes"][0] == {
        "door_session": "door-s1", "status": "unmatched", "transcript_id": None, "agreed": None, "offset_ms": None,
        "max_offset_s": 7200.0, "default_status": "matched", "default_transcript": a, "default_agreed": 3,
        "default_offset_ms": 200.0, "default_max_offset_s": 300.0, "clock_transcript": None, "clock_offset_s": None}
    # what it recommends: each transcript in its own session, and nothing to say
    assert main(args + ["--clock-offset", f"{b}=7200.4", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["assignments"] == {"door-s1": a, "door-s3": None, "door-s2": b} and out["offset_changes"] == []


def test_findings_line_names_the_sessions_max_offset_joined_otherwise():
    from replaybook.cli import _findings_line

    f = {"sessions": {"matched": 2, "unmatched": 1}, "door_calls": 11, "refused_calls": 0, "offset_changes": [
        {"door_session": "s1", "status": "unmatched", "transcript_id": None, "default_status": "matched",
         "default_transcript": "t1", "clock_transcript": None, "max_offset_s": 7200.0, "default_max_offset_s": 300.0,
         "clock_offset_s": None},
        {"door_session": "s2", "status": "matched", "transcript_id": "t2", "default_status": "unmatched",
         "default_transcript": None, "clock_transcript": "t2", "max_offset_s": 7200.0, "default_max_offset_s": 300.0,
         "clock_offset_s": 7200.4}]}
    assert _findings_line(f) == (
        "3 door sessions (2 matched, 1 unmatched); 11 door calls, 0 refused; door session s1 matched to transcript "
        "t1 at max_offset_s 300 (the default), unmatched at 7200 (see the report); door session s2 unmatched at "
        "max_offset_s 300 (the default), matched to transcript t2 at 7200; transcript t2's own clock joins it "
        "alone: clock_offsets {t2: 7200.4} (see the report)")


def test_join_names_sub_agents_with_their_parent_and_counts_their_door_calls_as_its(tmp_path, capsys):
    """A sub-agent's transcript is neither assigned a session of its own nor unmatched: join said
    nothing of it. And a conversation whose door calls were all its sub-agent's was called
    "built-in tools only"."""
    import _continued_incident as C

    manifest = C.write_continued_incident(tmp_path / "inc")
    assert main(["join", str(manifest)]) == 0
    out = capsys.readouterr().out
    assert "unmatched transcripts: none\n" in out
    assert (f"sub-agent transcripts, joined as part of their parent's conversation (1): {C.SUB_TRANSCRIPT} "
            f"(of {C.SID})\n") in out
    # the parent itself calls only built-in tools (Task), its sub-agent the door's: a conversation
    # through the door, though no session holds it here
    main_t = C._Writer(False)
    main_t.add("user", 0, {"role": "user", "content": "check the history"})
    main_t.add("assistant", 20, {"model": "m", "id": "msg_task", "type": "message", "role": "assistant",
                                 "content": [{"type": "tool_use", "id": "toolu_task", "name": "Task",
                                              "input": {"prompt": "history"}}]})
    (manifest.parent / "transcripts" / f"{C.SID}.jsonl").write_text("\n".join(main_t.lines) + "\n")
    assert main(["join", "--transcripts", str(manifest.parent / "transcripts"),
                 "--calls", str(manifest.parent / "door"), "--min-agreed", "5"]) == 0
    out = capsys.readouterr().out
    assert f"unmatched transcripts: {C.SID}\n" in out and "built-in tools only" not in out


def test_join_advises_a_sub_agents_clock_that_joins_its_door_session(tmp_path, capsys):
    """A sub-agent calling a second door-fronted server, whose door runs 40.2 s ahead: `join`
    advised --clock-offset with the sub-agent's id, which then changed nothing (the join looked
    only for its parent's id) and the advice came again; and with the session unmatched, the
    sub-agent's calls vanished from the residuals."""
    import _gate_incident as G

    manifest = G.write_gate_incident(tmp_path / "inc")
    assert main(["join", str(manifest)]) == 0
    out = capsys.readouterr().out
    advice = (f"door session gate-g1: unmatched, but 2 of its 2 calls with arguments line up with transcript "
              f"{G.SUB_TRANSCRIPT} at a clock offset of +40.2 s, beyond --max-offset 0: give that transcript's "
              f"clock, --clock-offset {G.SUB_TRANSCRIPT}=40.2 (or clock_offsets in the manifest; a sub-agent of "
              f"{G.SID}: its parent's steps keep their clock)\n")
    assert advice in out
    assert main(["join", str(manifest), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["door_servers"] == ["deploy", "gate"] and d["unmatched_steps"] == 3
    # which steps, not only how many
    rows = d["unmatched_step_rows"]
    assert len(rows) == 3 and all(set(r) == {"transcript_id", "seq", "ts", "tool", "call_id"} for r in rows)
    assert {r["transcript_id"] for r in rows} == {G.SUB_TRANSCRIPT} and all(r["ts"].endswith("Z") for r in rows)
    assert len(d["unclaimed_call_rows"]) == d["unclaimed_calls"]
    assert [(s["door_session"], s["status"], s["transcript_tool_steps"], s["unmatched_steps"]) for s in d["sessions"]] \
        == [("door-d1", "matched", 5, 3), ("gate-g1", "unmatched", None, None)]
    # the advice, followed: both sessions joined, the attempt that failed before the door is left
    assert main(["join", str(manifest), "--format", "json", f"--clock-offset={G.SUB_TRANSCRIPT}=40.2",
                 "--clock-offset=agent-typo=1"]) == 0
    cap = capsys.readouterr()
    d = json.loads(cap.out)
    assert [(s["door_session"], s["transcript_id"], s["offset_ms"], s["continues"]) for s in d["sessions"]] == [
        ("door-d1", G.SID, 150.0, None), ("gate-g1", G.SID, 40200.0, "door-d1")]
    assert d["unmatched_steps"] == 1 and d["far_clocks"] == []
    warning = ("replaybook: warning: clock_offsets names a transcript no input holds: agent-typo; its offset was not "
               "applied (`replaybook load steps` lists each step's transcript_id)\n")
    assert warning in cap.err and d["warnings"] == [warning[len("replaybook: warning: "):-1]]
    # the manifest's clock_offsets, the same way
    manifest = G.write_gate_incident(tmp_path / "inc2", f"clock_offsets:\n  {G.SUB_TRANSCRIPT}: 40.2\n"
                                                        "  agent-typo: 1\n")
    assert main(["join", str(manifest)]) == 0
    cap = capsys.readouterr()
    assert warning in cap.err and "line up with" not in cap.out
    assert main(["join", str(manifest), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [(s["door_session"], s["status"], s["offset_ms"]) for s in d["sessions"]] == [
        ("door-d1", "matched", 150.0), ("gate-g1", "matched", 40200.0)]


def test_join_does_not_call_a_transcript_without_tool_calls_built_in_only(tmp_path, capsys):
    """A transcript holding a prompt and a tool result but no tool call of its own (a resumed
    file whose call went to the original) was called "built-in tools only": it called nothing
    at all."""
    t = tmp_path / "transcripts"
    t.mkdir()
    sid = "44444444-dddd-4ddd-8ddd-444444444444"
    lines = [
        {"type": "user", "uuid": "u1", "sessionId": sid, "timestamp": "2026-09-13T10:00:00Z",
         "message": {"role": "user", "content": "go on"}},
        {"type": "user", "uuid": "u2", "parentUuid": "u1", "sessionId": sid, "timestamp": "2026-09-13T10:00:01Z",
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x",
                                                  "content": "ok"}]}},
    ]
    (t / f"{sid}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    d = tmp_path / "door" / "analyst"
    d.mkdir(parents=True)
    (d / "s1.jsonl").write_text(json.dumps({"ts": "2026-09-13T10:00:05Z", "session": "s1", "agent": "analyst", "seq": 1,
                                            "tool": "read_file", "arguments": {"path": "a"}, "object": "a",
                                            "decision": "allow", "rule": "r"}) + "\n")
    assert main(["join", "--transcripts", str(t), "--calls", str(tmp_path / "door")]) == 0
    out = capsys.readouterr().out
    assert f"unmatched transcripts: {sid} (no tool calls of its own)\n" in out


def test_load_out_takes_its_format_from_the_extension(tmp_path, capsys):
    import pandas as pd

    src = str(FIX / "join_trap" / "transcripts")
    assert main(["load", "steps", src, "--out", str(tmp_path / "steps.csv")]) == 0
    csv = pd.read_csv(tmp_path / "steps.csv")
    assert len(csv) == 32 and "transcript_id" in csv.columns
    assert main(["load", "steps", src, "--out", str(tmp_path / "steps.parquet")]) == 0
    assert len(pd.read_parquet(tmp_path / "steps.parquet")) == 32
    assert main(["load", "steps", src, "--out", str(tmp_path / "steps.json")]) == 0
    assert len(pd.read_json(tmp_path / "steps.json", lines=True)) == 32
    capsys.readouterr()
    assert main(["load", "steps", src, "--out", str(tmp_path / "steps.txt")]) == 0
    assert (f"--out {tmp_path / 'steps.txt'}: its extension '.txt' names no format (.csv, .parquet, .jsonl, .json): "
            "writing JSON Lines, the default (give --format to choose)") in capsys.readouterr().err
    assert len(pd.read_json(tmp_path / "steps.txt", lines=True)) == 32
    # an extension that contradicts --format: a usage error, nothing written
    assert main(["load", "steps", src, "--format", "jsonl", "--out", str(tmp_path / "x.csv")]) == 2
    assert "names csv by its extension but --format is jsonl" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()
    assert main(["load", "steps", src, "--format", "csv", "--out", str(tmp_path / "y.CSV")]) == 0
    assert len(pd.read_csv(tmp_path / "y.CSV")) == 32


def test_load_help_says_the_format_comes_from_out(capsys):
    assert main(["load", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "default: taken from --out's extension" in out


def test_load_calls_says_its_notes_in_words_not_frame_values(capsys):
    """``load calls`` printed "arguments None, args_key NA" where ``load auto`` and the report
    say "no arguments to compare": one wording, with no NA / NaT for a reviewer to decode."""
    gw = FIX / "gateways"
    assert main(["load", "calls", str(gw / "agentgateway"), str(gw / "mcpjungle")]) == 0
    err = capsys.readouterr().err
    assert f"  note {gw / 'agentgateway' / 'access.log'}: the access log records no arguments: no arguments to " \
           "compare\n" in err
    assert "MCPJungle logs no arguments: no arguments to compare" in err
    assert "args_key" not in err and " NA" not in err and "NaT" not in err


def test_a_closed_output_pipe_is_no_internal_error():
    """``replaybook join … | head -1`` exited 1 — an internal error, as the README defines it —
    with no word: click ends a command whose pipe was closed with exit 1.  A reader that took
    what it wanted is no error: exit 0."""
    import os
    import subprocess
    import sys

    r, w = os.pipe()
    os.close(r)  # the reader is gone before the first line
    try:
        got = subprocess.run([sys.executable, "-c", "import sys; from replaybook.cli import main; sys.exit(main())",
                              "join", "--transcripts", str(FIX / "join_trap" / "transcripts"),
                              "--calls", str(FIX / "join_trap" / "door")],
                             stdout=w, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(w)
    assert got.returncode == 0, got.stderr
    assert "internal error" not in got.stderr


def test_a_load_that_read_no_row_but_set_lines_aside_exits_2(tmp_path, capsys):
    """A door log whose every line fails the schema gave 0 rows and exit 0: a script carried on
    with an empty frame.  Now `load` and `join` stop with exit 2 after saying the quarantine; a log
    whose only line is still being written is no error."""
    line = '{"ts":"2026-09-13T10:00:0%dZ","seq":%d,"session":"s1","tool":"read","arguments":{"p":1},"decision":"%s"}'
    bad = tmp_path / "door.jsonl"
    bad.write_text(line % (1, 1, "maybe") + "\n" + line % (2, 2, "perhaps") + "\n")
    assert main(["load", "calls", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2: [invalid] does not match door-call-log v1 at decision: 'perhaps' is not one of" in err
    assert err.endswith(f"{bad}: no calls row was read, and 2 lines in 1 file were set aside as invalid (the "
                        "quarantine says why)\n")
    assert main(["join", "--transcripts", str(FIX / "join_trap" / "transcripts"), "--calls", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1: [invalid]" in err and "no calls row was read" in err

    pending = tmp_path / "pending.jsonl"
    pending.write_text((line % (1, 1, "allow"))[:60])  # (the writer is mid-line)
    assert main(["load", "calls", "--source", "door", str(pending)]) == 0
    assert "(0 invalid, 1 pending: an unterminated last line)" in capsys.readouterr().err
    bad.write_text(line % (1, 1, "maybe") + "\n" + line % (2, 2, "allow") + "\n")
    assert main(["load", "calls", str(bad)]) == 0  # one row read: the quarantine names the other


def test_python_m_replaybook_is_the_replaybook_command(tmp_path):
    """Where the console script is not on PATH, ``python -m replaybook`` runs the same CLI with
    the same exit codes."""
    import subprocess
    import sys

    demo = Path(__file__).resolve().parents[1] / "data" / "demo"
    ok = subprocess.run([sys.executable, "-m", "replaybook", "load", "calls", str(demo / "door"), "--format", "jsonl"],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and len(ok.stdout.splitlines()) >= 5 and "calls:" in ok.stderr
    bad = subprocess.run([sys.executable, "-m", "replaybook", "load", "calls", str(tmp_path / "missing.jsonl")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "missing.jsonl" in bad.stderr


def test_join_of_an_incident_whose_door_log_gave_no_call_exits_2_as_with_paths(tmp_path, capsys):
    """`join INCIDENT` had exited 0 with empty tables when every door line failed the schema,
    while the same files as --transcripts/--calls exited 2."""
    import shutil

    shutil.copytree(FIX / "join_trap" / "transcripts", tmp_path / "t")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "s.jsonl").write_text('{"ts":"2026-09-13T10:00:05.5Z","session":"S","tool":"t",'
                                           '"decision":"perhaps"}\n')
    (tmp_path / "incident.yaml").write_text("title: t\ntranscripts:\n  - t/\ndoor:\n  - d/\n")
    assert main(["join", "--transcripts", str(tmp_path / "t"), "--calls", str(tmp_path / "d")]) == 2
    by_paths = capsys.readouterr().err
    assert main(["join", str(tmp_path / "incident.yaml"), "--format", "json"]) == 2
    err = capsys.readouterr().err
    assert "no calls row was read, and 1 line in 1 file was set aside as invalid" in err
    assert "s.jsonl:1:" in err and "s.jsonl:1:" in by_paths


def test_file_names_holding_control_characters_are_written_out_on_stderr(tmp_path, capsys):
    """A file name's ESC sequences, BEL, CR and newline had reached the terminal raw in `note`,
    `skipped`, quarantine and error lines: they coloured it, set its window title and forged
    lines.  Each is written out, as a log's values already were."""
    name = "s\x1b[31mRED\x1b[0m\x1b]0;pwned\x07\r\n.jsonl"
    (tmp_path / "door").mkdir()
    (tmp_path / "door" / name).write_text(
        '{"ts":"2026-09-13T10:00:05.5Z","session":"S","agent":"a","server":"x","tool":"t","arguments":{},'
        '"object":null,"decision":"allow","rule":"r","rows":null,"bytes":null}\n{not json\n')
    (tmp_path / "door" / ("e\x1b[2J" + ".jsonl")).write_bytes(b"")
    assert main(["load", "calls", str(tmp_path / "door")]) == 0
    err = capsys.readouterr().err
    shown = "s\\x1b[31mRED\\x1b[0m\\x1b]0;pwned\\x07\\r\\n.jsonl"
    assert f"{shown}:2: [invalid]" in err and "e\\x1b[2J.jsonl: empty file" in err
    assert not any(c in err.replace("\n", "") for c in "\x1b\x07\r")
    assert all(line.startswith(("calls:", "quarantine:", "  ")) for line in err.splitlines()), err
    assert main(["join", "--transcripts", str(tmp_path / "door"), "--calls", str(tmp_path / "door")]) == 2
    err = capsys.readouterr().err
    assert "replaybook: error: " in err and shown in err and "\x1b" not in err and "\r" not in err


def test_a_dead_kernels_log_keeps_its_lines_on_stderr(tmp_path, capsys, monkeypatch):
    """The report's error for a dead kernel ends with the kernel's log on purpose: written out as
    one line it had been one unreadable line of literal \\n (each line is still written out, so a
    colour code in the log cannot reach the terminal)."""
    from replaybook.errors import ReportError
    from replaybook.report import render

    demo = Path(__file__).resolve().parents[1] / "data" / "demo" / "incident.yaml"

    def dead(*a, **k):
        raise ReportError("report kernel hung or died: RuntimeError: Kernel died\nthe kernel's log ended:\n"
                          "Traceback (most recent call last):\n  \x1b[31mMemoryError\x1b[0m")

    monkeypatch.setattr(render, "render_report", dead)
    assert main(["report", str(demo), "--out", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert ("replaybook: error: report kernel hung or died: RuntimeError: Kernel died\nthe kernel's log ended:\n"
            "Traceback (most recent call last):\n  \\x1b[31mMemoryError\\x1b[0m\n") in err


def _tool_use_lines(*inputs) -> str:
    """A Claude Code transcript of one tool_use line per input (any JSON value as the input)."""
    base = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/p", "sessionId": "s-1",
            "version": "2.1.42", "type": "assistant"}
    return "".join(json.dumps(dict(
        base, uuid=f"u{i}", timestamp=f"2026-09-13T10:00:0{i}.000Z", requestId=f"r{i}",
        message={"model": "m", "id": f"m{i}", "type": "message", "role": "assistant",
                 "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": inp}]})) + "\n"
        for i, inp in enumerate(inputs, 1))


def test_load_writes_every_arguments_value_as_json_text_whatever_the_other_rows(tmp_path, capsys):
    """A tool input that is not a dict (a string, a number) was written as itself when no other
    row held a dict, as JSON text when one did, and parquet failed with an internal error."""
    (tmp_path / "t.jsonl").write_text(_tool_use_lines("just a string", 42))
    (tmp_path / "u.jsonl").write_text(_tool_use_lines("just a string", {"k": 1}))
    expected = {"t": ['"just a string"', "42"], "u": ['"just a string"', '{"k":1}']}
    for name, args in expected.items():
        assert main(["load", "steps", str(tmp_path / f"{name}.jsonl")]) == 0
        rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        assert [r["arguments"] for r in rows if r["kind"] == "tool_call"] == args
        assert {r["arguments"] for r in rows if r["kind"] != "tool_call"} == {None}
        out = tmp_path / f"{name}.parquet"
        assert main(["load", "steps", str(tmp_path / f"{name}.jsonl"), "--out", str(out)]) == 0
        df = pd.read_parquet(out)
        assert df.loc[df["kind"] == "tool_call", "arguments"].tolist() == args
        assert df.loc[df["kind"] != "tool_call", "arguments"].isna().all()
        out = tmp_path / f"{name}.csv"
        assert main(["load", "steps", str(tmp_path / f"{name}.jsonl"), "--out", str(out)]) == 0
        df = pd.read_csv(out, keep_default_na=False)
        assert df.loc[df["kind"] == "tool_call", "arguments"].tolist() == args


def test_load_jsonl_writes_floats_exactly(tmp_path, capsys):
    """JSON Lines rounded every float to ten significant digits (pandas' to_json): a duration
    of 0.000012345678901 ms was written 0.0000123457 and 1234.56789012345 as 1234.5678901235."""
    durations = [0.000012345678901, 1234.56789012345, 1e-300, 12345678901234567.0]
    (tmp_path / "door.jsonl").write_text("".join(
        json.dumps({"ts": f"2026-09-13T10:00:0{i}Z", "session": "s1", "seq": i, "tool": "t", "decision": "allow",
                    "duration_ms": d}) + "\n" for i, d in enumerate(durations, 1)))
    assert main(["load", "calls", str(tmp_path / "door.jsonl")]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [json.loads(x) for x in lines]
    assert [r["duration_ms"] for r in rows] == durations
    assert '"duration_ms":1234.56789012345,' in lines[1]
    # the rest as before: nine fractional digits, NA as null, no escaped slashes
    assert rows[0]["ts"] == "2026-09-13T10:00:01.000000000Z" and rows[0]["ts_end"] is None
    assert rows[0]["seq"] == 1 and rows[0]["source_file"] == str(tmp_path / "door.jsonl")
    assert "\\/" not in lines[0]


def test_load_out_that_cannot_be_written_is_bad_usage_said_before_loading(tmp_path, capsys, monkeypatch):
    """An --out the system refuses (a name too long, a full device, a read-only folder) ended
    the command with an internal error (exit 1), after the whole frame had been loaded."""
    import os

    monkeypatch.chdir(tmp_path)
    door = str(FIX / "join_trap" / "door")
    long = "a" * 300
    for out in (f"{long}.jsonl", f"{long}/x.jsonl", f"{long}.parquet"):
        for frame in ("calls", "auto"):
            assert main(["load", frame, door, "--out", out]) == 2, (frame, out)
            err = capsys.readouterr().err
            assert "--out" in err and "File name too long" in err, err
            assert "quarantine:" not in err  # refused before anything was loaded
    assert os.listdir(tmp_path) == []
    if os.path.exists("/dev/full"):  # (no space left: met only by the write itself)
        for fmt in ("jsonl", "csv", "parquet"):
            assert main(["load", "calls", door, "--format", fmt, "--out", "/dev/full"]) == 2
            err = capsys.readouterr().err
            assert "--out" in err and "cannot write /dev/full: " in err and "No space left on device" in err
    if os.geteuid() != 0:  # (root writes into a read-only folder)
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        try:
            assert main(["load", "calls", door, "--out", str(ro / "c.jsonl")]) == 2
            err = capsys.readouterr().err
            assert "Permission denied" in err and "quarantine:" not in err
        finally:
            ro.chmod(0o755)


def test_load_out_whose_write_fails_leaves_no_half_written_file(tmp_path, capsys, monkeypatch):
    import errno

    def full(self, *a, **k):
        self.open("w").close()  # the file made, then the disk full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full)
    out = tmp_path / "c.jsonl"
    assert main(["load", "calls", str(FIX / "join_trap" / "door"), "--out", str(out)]) == 2
    assert f"cannot write {out}: No space left on device" in capsys.readouterr().err
    assert not out.exists()


def test_join_takes_the_manifests_min_agreed_unless_the_option_gives_one(tmp_path, capsys):
    """`join INCIDENT` joined at --min-agreed's default 1 whatever the manifest's min_agreed,
    where the report (Incident.join) used the manifest's: two verdicts on one incident."""
    import shutil

    from replaybook.incident import Incident

    inc = tmp_path / "inc"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "demo", inc)
    with open(inc / "incident.yaml", "a") as fh:
        fh.write("min_agreed: 50\n")

    def joined(*more):
        assert main(["join", str(inc / "incident.yaml"), "--format", "json", *more]) == 0
        d = json.loads(capsys.readouterr().out)
        return d["min_agreed"], [s["status"] for s in d["sessions"]]

    report = Incident.load(inc / "incident.yaml").join
    assert joined() == (50, ["unmatched", "unmatched"]) == (report.min_agreed, report.sessions["status"].tolist())
    assert joined("--min-agreed", "1") == (1, ["matched", "matched"])  # the option over the manifest
