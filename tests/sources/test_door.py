import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from replaybook.errors import InputError
from replaybook.frames import CALLS
from replaybook.sources import door
from replaybook.sources.door import door_schema, load_door

FIX = Path(__file__).resolve().parents[1] / "fixtures"


def _write(tmp_path, name, lines, newline_at_end=True):
    p = tmp_path / "analyst" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + ("\n" if newline_at_end else "")
    p.write_text(text, encoding="utf-8")
    return p


GOOD = {"ts": "2026-09-13T10:00:05.600Z", "seq": 1, "session": "s1", "agent": "analyst",
        "tool": "list_folder", "arguments": {"path": "demo/"}, "object": "demo/",
        "decision": "allow", "rule": "allow-demo", "rows": 3, "bytes": 412}


def test_join_trap_door_logs_load_into_calls():
    res = load_door(FIX / "join_trap" / "door")
    CALLS.validate(res.frame)
    assert len(res.frame) == 8 and res.quarantine.empty
    a = res.frame[res.frame.door_session == "door-sess-a"]
    assert list(a.seq) == [1, 2, 3, 4, 5]
    assert list(a.decision) == ["allow"] * 4 + ["deny"]
    assert a.iloc[4].rule == "no-dotenv" and a.iloc[4].object == "reference/.env"
    assert a.iloc[2].args_key == '{"columns":["mpg","cyl"],"path":"demo/cars.sas7bdat"}'
    assert str(a.iloc[0].ts) == "2026-09-13 10:00:05.600000+00:00"
    assert {i["sha256"] for i in res.inputs} == {
        hashlib.sha256(p.read_bytes()).hexdigest() for p in (FIX / "join_trap" / "door" / "analyst").glob("*.jsonl")
    }


def test_bad_lines_are_quarantined_with_line_numbers(tmp_path):
    lines = [
        json.dumps(GOOD),
        "not json",
        json.dumps(["a list"]),
        json.dumps({**GOOD, "decision": "maybe"}),
        json.dumps({**GOOD, "rows": -1}),
        json.dumps({**GOOD, "ts": "2026-13-45T99:00:00Z"}),
        json.dumps({k: v for k, v in GOOD.items() if k != "session"}),
        json.dumps({**GOOD, "seq": 2, "meta": {"claudecode/toolUseId": "toolu_1"}, "duration_ms": 12.5}),
        '{"ts": "2026-09-13T10:00:09Z", "sess',
    ]
    p = _write(tmp_path, "s1.jsonl", lines, newline_at_end=False)
    res = load_door(tmp_path)
    assert list(res.frame.seq) == [1, 2]
    assert res.frame.iloc[1].meta_call_id == "toolu_1"
    assert res.frame.iloc[1].duration_ms == 12.5
    q = res.quarantine.set_index("line_no")
    assert sorted(q.index) == [2, 3, 4, 5, 6, 7, 9]
    assert (q.loc[[2, 3, 4, 5, 6, 7], "kind"] == "invalid").all()
    assert q.loc[9, "kind"] == "pending"
    assert "decision" in q.loc[4, "error"]
    assert "session" in q.loc[7, "error"]
    assert "ts" in q.loc[6, "error"]
    assert (q["source_file"] == str(p)).all()


def test_duration_from_ts_end_and_agent_from_folder(tmp_path):
    row = {k: v for k, v in GOOD.items() if k != "agent"}
    row["ts_end"] = "2026-09-13T10:00:05.850Z"
    _write(tmp_path, "s1.jsonl", [json.dumps(row)])
    res = load_door(tmp_path)
    assert res.frame.iloc[0].agent == "analyst"
    assert res.frame.iloc[0].duration_ms == pytest.approx(250.0)


def test_input_files_are_not_modified(tmp_path):
    p = _write(tmp_path, "s1.jsonl", [json.dumps(GOOD), "garbage"])
    before = (p.read_bytes(), p.stat().st_mtime_ns)
    load_door(p)
    assert (p.read_bytes(), p.stat().st_mtime_ns) == before


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_door(tmp_path / "nope")


def test_schema_ships_in_the_package_and_sniff_recognises_the_format():
    s = door_schema()
    assert s["required"] == ["ts", "session", "tool", "decision"]
    assert s["properties"]["decision"]["enum"] == ["allow", "deny", "ask"]
    sample = (FIX / "join_trap" / "door" / "analyst" / "door-sess-a.jsonl").read_bytes()
    assert door.sniff(sample) > 0.9
    assert door.sniff(b'{"type": "user", "message": {}}\n') == 0.0


def test_optional_fields_are_checked_as_strictly_as_the_schema(tmp_path):
    ok = {**GOOD, "v": 1, "duration_ms": 3.5, "response_digest": "sha256:" + "a" * 64,
          "object_digest": "sha256:" + "b" * 64, "correlation": "door-analyst", "method": "tools/call"}
    lines = [json.dumps(ok),
             json.dumps({**ok, "response_digest": "sha256:XYZ"}),
             json.dumps({**ok, "v": 2}),
             json.dumps({**ok, "duration_ms": -1})]
    _write(tmp_path, "s1.jsonl", lines)
    res = load_door(tmp_path)
    assert len(res.frame) == 1 and res.frame.iloc[0].correlation == "door-analyst"
    assert res.frame.iloc[0].object_digest == "sha256:" + "b" * 64
    assert sorted(res.quarantine.line_no) == [2, 3, 4]
    assert "response_digest" in res.quarantine.set_index("line_no").loc[2, "error"]


def test_arguments_nested_past_the_decoders_depth_are_quarantined_not_a_crash(tmp_path):
    """msgspec's fast decoding raised RecursionError out of the load (exit 1) on a line whose
    arguments nest ~1,200 deep; the file now goes the per-line way, which sets the line aside."""
    deep = "[" * 1200 + "]" * 1200
    line2 = json.dumps({**GOOD, "seq": 2}).replace('"arguments": {"path": "demo/"}', f'"arguments": {{"a": {deep}}}')
    assert deep in line2
    p = _write(tmp_path, "s1.jsonl", [json.dumps(GOOD), line2, json.dumps({**GOOD, "seq": 3})])
    res = load_door(p)
    assert list(res.frame.seq) == [1, 3]
    assert list(zip(res.quarantine.line_no, res.quarantine.error)) == [(2, "invalid JSON: nested too deeply")]


def test_a_file_name_that_is_not_utf8_is_a_clear_error(tmp_path):
    import os

    folder = tmp_path / "analyst"
    folder.mkdir()
    name = os.fsdecode(b"sess\xff\xfe.jsonl")
    (folder / name).write_text(json.dumps(GOOD) + "\n")
    with pytest.raises(InputError, match=r"sess\\xff\\xfe.jsonl: the file name is not valid UTF-8"):
        load_door(tmp_path)


def test_a_line_logged_twice_is_one_call_and_a_duplicate_quarantine_row(tmp_path):
    """A log shipper that delivered a line twice: the copy had read as a second call no transcript
    step claims — as if the agent did something its transcript hides."""
    d = tmp_path / "door" / "analyst"
    d.mkdir(parents=True)
    line = ('{"ts":"2026-09-13T10:00:01.000Z","seq":%d,"session":"s1","tool":"read","arguments":{"path":"%s"},'
            '"decision":"%s"}')
    lines = [line % (1, "a", "allow"), line % (2, "b", "allow"), line % (2, "b", "allow"),
             line % (3, "c", "allow"), line % (3, "c", "deny")]  # #3: the same call decided two ways
    log = d / "s1.jsonl"
    log.write_text("\n".join(lines) + "\n")
    for fast in (True, False):
        res = door._load([tmp_path / "door"], fast=fast)
        assert res.frame["seq"].tolist() == [1, 2, 3, 3]
        assert res.frame["line_no"].tolist() == [1, 2, 4, 5]
        assert res.frame["decision"].tolist() == ["allow", "allow", "allow", "deny"]
        q = res.quarantine
        assert q[["line_no", "kind"]].values.tolist() == [[3, "duplicate"]]
        assert q["source_file"].tolist() == [str(log)]
        assert q["error"].iloc[0].startswith("repeats the call logged at line 2 in every field")
        assert res.inputs[0]["duplicates"] == 1
    # a copy of the whole log in another folder: every call counted once, each copy line named
    other = tmp_path / "door-copy" / "analyst"
    other.mkdir(parents=True)
    (other / "s1.jsonl").write_text("\n".join(lines) + "\n")
    res = load_door([tmp_path / "door", tmp_path / "door-copy"])
    assert res.frame["seq"].tolist() == [1, 2, 3, 3]
    assert (res.quarantine["kind"] == "duplicate").sum() == 6  # the copy's 5 lines, and line 3


# -- keys the schema does not name, meta ids that are not text: loaded, and said in a note ---------

def _both(p):
    """load_door and the per-line path; their frames and inputs must agree."""
    fast, slow = load_door(p), door._load(p, fast=False)
    assert fast.frame.equals(slow.frame)
    assert fast.inputs == slow.inputs
    return fast


def test_misspelt_keys_are_named_with_the_key_they_probably_mean(tmp_path):
    typo = {k: v for k, v in GOOD.items() if k != "object"}
    typo.update({"seq": 3, "objet": "demo/a.csv", "respone_digest": "sha256:" + "0" * 64})
    p = _write(tmp_path, "s.jsonl", [json.dumps(GOOD), json.dumps({**GOOD, "seq": 2}), json.dumps(typo),
                                     json.dumps({**GOOD, "seq": 4, "zzqx": 1})])
    res = _both(p)
    assert len(res.frame) == 4 and len(res.quarantine) == 0  # extra keys are allowed: loaded, not set aside
    row = res.frame[res.frame["seq"] == 3].iloc[0]
    assert pd.isna(row["object"]) and pd.isna(row["response_digest"])
    assert res.inputs[0]["notes"] == [
        "unknown keys not read: 'objet' (did you mean 'object'?) on line 3; "
        "'respone_digest' (did you mean 'response_digest'?) on line 3; 'zzqx' on line 4 — the schema allows "
        "keys it does not name (a newer door's), so those lines are loaded without them"]


def test_an_unknown_key_on_many_lines_names_the_first_five_and_the_count(tmp_path):
    lines = [json.dumps({**GOOD, "seq": i, "sesion_id": "x"}) for i in range(1, 9)]
    res = _both(_write(tmp_path, "s.jsonl", lines))
    assert res.inputs[0]["notes"][0].startswith(
        "unknown keys not read: 'sesion_id' (did you mean 'session'?) on lines 1, 2, 3, 4, 5 … (8 lines) — ")


def test_a_file_of_known_keys_has_no_note_and_takes_the_fast_path(tmp_path, monkeypatch):
    from replaybook.sources import _door_fast

    taken = []
    real = _door_fast.decode_file
    monkeypatch.setattr(_door_fast, "decode_file", lambda *a: taken.append(real(*a)) or taken[-1])
    res = load_door(_write(tmp_path, "s.jsonl", [json.dumps(GOOD), json.dumps({**GOOD, "seq": 2})]))
    assert taken == [True] and "notes" not in res.inputs[0]


def test_the_known_keys_are_the_schemas():
    assert set(door_schema()["properties"]) == door._KNOWN_FAST


def test_a_tool_use_id_that_is_not_text_is_named_and_not_read(tmp_path):
    p = _write(tmp_path, "s.jsonl", [json.dumps(GOOD),
                                     json.dumps({**GOOD, "seq": 2, "meta": {"claudecode/toolUseId": 12345}}),
                                     json.dumps({**GOOD, "seq": 3, "meta": {"toolUseId": True, "call_id": "c3"}})])
    res = _both(p)
    assert len(res.frame) == 3 and len(res.quarantine) == 0
    ids = res.frame["meta_call_id"].tolist()
    assert pd.isna(ids[1]) and ids[2] == "c3"
    assert res.inputs[0]["notes"] == [
        "line 2: meta 'claudecode/toolUseId' is not text (12345): the call cannot be joined by tool-use id",
        "line 3: meta 'toolUseId' is not text (true): the tool-use id is read from another meta key"]


_LOCAL = ("read as UTC; RFC 3339 requires an offset — if the door wrote local time its calls are off by the "
          "zone's offset")


def test_ts_without_a_time_zone_is_read_as_utc_and_noted_with_its_line(tmp_path):
    lines = [GOOD, {**GOOD, "seq": 2, "ts": "2026-09-13T11:00:08.300"},
             {**GOOD, "seq": 3, "ts": "2026-09-13T12:00:09+02:00", "ts_end": "2026-09-13T10:00:09.500"},
             {**GOOD, "seq": 4, "ts": "2026-02-30T10:00:05"}]  # not a date at all: quarantined, not noted
    res = _both(_write(tmp_path, "s.jsonl", [json.dumps(o) for o in lines]))
    assert list(res.frame["seq"]) == [1, 3, 2]
    assert str(res.frame.loc[res.frame["seq"] == 2, "ts"].iloc[0]) == "2026-09-13 11:00:08.300000+00:00"
    assert list(res.quarantine["line_no"]) == [4]
    assert res.inputs[0]["notes"] == [
        f"ts without a time zone on line 2 ('2026-09-13T11:00:08.300'): {_LOCAL}",
        f"ts_end without a time zone on line 3 ('2026-09-13T10:00:09.500'): {_LOCAL}"]


def test_every_ts_with_a_zone_gives_no_note(tmp_path):
    lines = [GOOD, {**GOOD, "seq": 2, "ts": "2026-09-13T12:00:08+02:00"}, {**GOOD, "seq": 3, "ts": "2026-09-13t10:00:09z"},
             {**GOOD, "seq": 4, "ts": "2026-09-13T10:00:10.5-0130", "ts_end": None}]
    res = _both(_write(tmp_path, "s.jsonl", [json.dumps(o) for o in lines]))
    assert len(res.frame) == 4 and "notes" not in res.inputs[0]


def test_many_zoneless_lines_are_named_with_a_count(tmp_path):
    lines = [json.dumps({**GOOD, "seq": i, "ts": f"2026-09-13T10:00:{i:02d}.000"}) for i in range(1, 8)]
    res = _both(_write(tmp_path, "s.jsonl", lines))
    assert res.inputs[0]["notes"] == [
        "ts without a time zone on lines 1, 2, 3, 4, 5 … (7 lines) ('2026-09-13T10:00:01.000', "
        f"'2026-09-13T10:00:02.000', '2026-09-13T10:00:03.000', …): {_LOCAL}"]


def test_cli_load_calls_says_which_ts_has_no_time_zone(tmp_path):
    from click.testing import CliRunner

    from replaybook.cli import cli

    p = _write(tmp_path, "s.jsonl", [json.dumps(GOOD), json.dumps({**GOOD, "seq": 2, "ts": "2026-09-13T11:00:08.300"})])
    r = CliRunner().invoke(cli, ["load", "calls", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert f"note {p}: ts without a time zone on line 2 ('2026-09-13T11:00:08.300'): {_LOCAL}" in r.stderr


def test_a_zoneless_ts_without_a_fraction_is_read_and_noted_like_one_with(tmp_path):
    # '2026-09-13T10:00:00' (a door writing strftime('%Y-%m-%dT%H:%M:%S')) was quarantined — every
    # call lost — while '…T10:00:00.5' was read as UTC with the note
    lines = [{**GOOD, "seq": 1, "ts": "2026-09-13T10:00:00"}, {**GOOD, "seq": 2, "ts": "2026-09-13T10:00:01.5"},
             {**GOOD, "seq": 3, "ts": "2026-09-13T10:00"}]  # (no seconds: not an RFC 3339 time even with a zone)
    res = _both(_write(tmp_path, "s.jsonl", [json.dumps(o) for o in lines]))
    assert list(res.frame["seq"]) == [1, 2]
    assert str(res.frame["ts"].iloc[0]) == "2026-09-13 10:00:00+00:00"
    assert res.inputs[0]["notes"] == [
        f"ts without a time zone on lines 1, 2 ('2026-09-13T10:00:00', '2026-09-13T10:00:01.5'): {_LOCAL}"]
    assert list(res.quarantine["line_no"]) == [3]


@pytest.mark.parametrize("fast", [True, False])
def test_an_end_before_the_start_gives_no_negative_duration(tmp_path, fast):
    """``ts_end`` an hour before ``ts`` (a clock set back mid-call): the call is kept, its
    duration is not derived (it was -3,600,000 ms, said nowhere), and the file's note says why;
    a duration the door logged itself stays as logged."""
    base = {"ts": "2026-09-13T10:00:05.750Z", "session": "s1", "agent": "analyst", "server": "files",
            "tool": "read_object", "arguments": {"path": "a"}, "decision": "allow", "rule": "r"}
    p = tmp_path / "door.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in (
        {**base, "seq": 1, "ts_end": "2026-09-13T09:00:05.750Z"},
        {**base, "seq": 2, "ts_end": "2026-09-13T09:00:05.750Z", "duration_ms": 12},
        {**base, "seq": 3, "ts_end": "2026-09-13T10:00:05.870Z"})))
    res = door._load([p], fast=fast)
    assert res.frame["seq"].tolist() == [1, 2, 3]
    assert res.frame["duration_ms"].tolist()[1:] == [12.0, 120.0] and pd.isna(res.frame["duration_ms"].iat[0])
    assert res.inputs[0]["notes"] == ["ts_end before ts on line 1 (a clock set back during the call?): "
                                      "duration_ms left NA"]


def test_a_number_no_double_holds_is_quoted_as_written(tmp_path):
    # (the schema's message quoted the value by its repr: "NumberAsWritten('1e400') is not of type …")
    p = tmp_path / "door.jsonl"
    p.write_text('{"ts": "2026-09-13T10:00:05Z", "session": "s1", "tool": "t", "decision": "allow", "bytes": 1e400}\n')
    res = load_door(p)
    assert res.frame.empty
    assert res.quarantine["error"].tolist() == [
        "does not match door-call-log v1 at bytes: 1e400 is not of type 'integer', 'null'"]


@pytest.mark.parametrize("fast", [True, False])
def test_bytes_that_are_not_utf8_are_said_where_they_are_read_as_replacements(tmp_path, fast):
    """A Latin-1 byte in a call's arguments: the call is read (its byte as U+FFFD), and its file's
    note names the line — its arguments no longer equal the step's, and the join's residual had
    no word on why."""
    good = {"ts": "2026-09-13T10:00:05Z", "session": "s1", "tool": "describe", "decision": "allow", "seq": 1}
    p = tmp_path / "door.jsonl"
    p.write_bytes(json.dumps(good).encode() + b"\n"
                  + json.dumps({**good, "seq": 2, "arguments": {"path": "demo/cXrs.xpt"}}).encode().replace(b"X", b"\xe4")
                  + b"\n")
    res = door._load([p], fast=fast)
    assert res.frame["arguments"].tolist()[1] == {"path": "demo/c\ufffdrs.xpt"} and res.quarantine.empty
    assert res.inputs[0]["notes"] == ["bytes that are not UTF-8 on line 2: read as U+FFFD (\ufffd), so a call's "
                                      "arguments or object there is not exactly as written"]
    p.write_bytes(json.dumps(good, ensure_ascii=False).encode() + b"\n")
    assert door._load([p], fast=fast).inputs[0].get("notes") is None


def test_a_door_line_whose_time_is_beyond_a_frames_range_says_it_might_be(tmp_path):
    """A door line stamped year 9999 had been set aside as "not an RFC 3339 date-time" alone."""
    import json

    from replaybook.sources.door import load_door

    p = tmp_path / "d" / "s.jsonl"
    p.parent.mkdir()
    p.write_text(json.dumps({"ts": "9999-12-31T23:59:05.500Z", "session": "S", "agent": "a", "server": "x",
                             "tool": "t", "arguments": {}, "object": None, "decision": "allow", "rule": "r",
                             "rows": None, "bytes": None}) + "\n")
    res = load_door(p.parent)
    assert len(res.frame) == 0
    assert res.quarantine["error"].tolist() == [
        "ts or ts_end is not an RFC 3339 date-time, or is one beyond the times a frame holds "
        "(1677-09-21 to 2262-04-11 UTC)"]


# -- arguments the door did not log: unknown (NA), never {} ---------------------------------------

DIGEST = "sha256:" + hashlib.sha256(b'{"path":"demo/a.csv","pad":"xxxxxxxxxx"}').hexdigest()
NOT_LOGGED = [
    # as the door writes them (proxy.Door._decide_request, _bad_line)
    {**GOOD, "seq": 1, "tool": "read_object", "arguments": None, "object": None, "decision": "deny",
     "rule": "door:arguments-too-large", "rows": None, "bytes": None, "arguments_bytes": 41,
     "arguments_digest": DIGEST},
    {**GOOD, "seq": 2, "tool": "read_object", "arguments": None, "object": None, "decision": "deny",
     "rule": "door:invalid-arguments", "rows": None, "bytes": None,
     "arguments_invalid": ["demo/a.csv", {"b": 1, "a": 1.0}]},
    {**GOOD, "seq": 3, "tool": "(invalid)", "arguments": None, "object": None, "decision": "deny",
     "rule": "door:message-too-large", "rows": None, "bytes": None, "message_bytes": 16777300},
    {**GOOD, "seq": 4, "tool": "read_object", "arguments": {}, "object": None},  # a call without arguments
]


@pytest.mark.parametrize("invalid", [True, False], ids=["per-line", "fast"])
def test_arguments_the_door_did_not_log_load_as_unknown_with_what_it_logged_instead(tmp_path, invalid):
    lines = NOT_LOGGED if invalid else [o for o in NOT_LOGGED if "arguments_invalid" not in o]
    res = _both(_write(tmp_path, "s.jsonl", [json.dumps(o) for o in lines]))
    assert "notes" not in res.inputs[0] and len(res.quarantine) == 0  # keys this door writes: all read
    f = res.frame.set_index("seq")
    assert f.loc[1, "arguments"] is None and pd.isna(f.loc[1, "args_key"])
    assert f.loc[1, "arguments_bytes"] == 41 and f.loc[1, "arguments_digest"] == DIGEST
    assert f.loc[3, "arguments"] is None and pd.isna(f.loc[3, "args_key"]) and f.loc[3, "message_bytes"] == 16777300
    assert f.loc[4, "arguments"] == {} and f.loc[4, "args_key"] == "{}"  # {} is a call without arguments
    assert pd.isna(f.loc[4, "arguments_bytes"]) and pd.isna(f.loc[4, "arguments_digest"])
    assert pd.isna(f.loc[4, "message_bytes"]) and pd.isna(f.loc[4, "arguments_invalid"])
    if invalid:
        assert f.loc[2, "arguments"] is None and pd.isna(f.loc[2, "args_key"])
        assert f.loc[2, "arguments_invalid"] == '["demo/a.csv",{"a":1,"b":1}]'  # canonical JSON text
    CALLS.validate(res.frame)
    assert str(res.frame["arguments_bytes"].dtype) == "Int64" and str(res.frame["message_bytes"].dtype) == "Int64"


def test_keys_for_arguments_not_logged_are_checked_by_the_schema(tmp_path):
    bad = [{**GOOD, "seq": 1, "arguments_bytes": -1}, {**GOOD, "seq": 2, "arguments_digest": "md5:00"},
           {**GOOD, "seq": 3, "message_bytes": "17"}, {**GOOD, "seq": 4, "arguments_bytes": 2.5}]
    res = _both(_write(tmp_path, "s.jsonl", [json.dumps(o) for o in bad]))
    assert res.frame.empty and res.quarantine["line_no"].tolist() == [1, 2, 3, 4]
    assert all("door-call-log v1" in e for e in res.quarantine["error"])
