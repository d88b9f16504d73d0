"""Normalization rules: each built-in rule on its own example, fired names, project rules, versions."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from replaybook.packet.errors import RulesError
from replaybook.packet.normalize import BUILTIN_RULES, BUILTIN_VERSION, RuleSet, decode_output, load_rules, normalize, out_sha

CASES = [
    ("ansi", "\x1b[32mPASSED\x1b[0m", "PASSED"),
    ("carriage_return", "progress 10%\rprogress 100%\r\nnext", "progress 100%\nnext"),
    ("tmp_path", "wrote /tmp/pytest-of-u/pytest-7/x.txt: ok", "wrote <TMP>: ok"),
    ("iso_timestamp", "at 2024-05-01T12:34:56.789+00:00 and 2024-05-01 12:34:56Z", "at <TS> and <TS>"),
    ("hex_address", "<Foo object at 0x7f3a2c1b4d90> flags 0x1f", "<Foo object at 0xADDR> flags 0x1f"),
    ("pytest_duration", "3 passed in 0.12s", "3 passed in <DUR>"),
    ("pytest_duration", "1 failed in 75.01s (0:01:15)", "1 failed in <DUR>"),
    ("duration", "took 12ms, then 0.5s, then 3 seconds", "took <DUR>, then <DUR>, then <DUR>"),
    ("local_port", "listening on 127.0.0.1:54321 and localhost:8000, [::1]:8080",
     "listening on 127.0.0.1:<PORT> and localhost:<PORT>, [::1]:<PORT>"),
    ("pid", "worker pid 1234 / PID=99 / pid: 7", "worker pid <PID> / PID=<PID> / pid: <PID>"),
    ("whitespace", "a  \n\n\nb\t\n", "a\nb"),
]


@pytest.mark.parametrize("rule,text,expected", CASES)
def test_each_builtin_rule(rule: str, text: str, expected: str):
    got = normalize(text)
    assert got.text == expected
    assert rule in got.fired


@pytest.mark.parametrize("text,expected", [
    ("FAILED 3 tests\r", "FAILED 3 tests"),  # a trailing \r is no redraw: the line stays
    ("ok\r\r\n", "ok"),
    ("ok\r\r\nnext\r", "ok\nnext"),
    ("10%\r50%\r100%\r", "100%"),  # the last redraw, not the first text
    ("\r\rdone", "done"),
    ("10%\r    \r", ""),  # cleared with spaces: that is a redraw, of nothing
])
def test_a_bare_carriage_return_at_the_end_of_a_line_keeps_the_text_before_it(text: str, expected: str):
    got = normalize(text)
    assert got.text == expected and "carriage_return" in got.fired


def test_a_changed_line_ending_in_a_carriage_return_hashes_differently():
    a, b = normalize("checksum OK\r"), normalize("checksum MISMATCH: binary tampered\r")
    assert (a.text, b.text) == ("checksum OK", "checksum MISMATCH: binary tampered")
    assert a.sha256 != b.sha256 != normalize("").sha256


@pytest.mark.parametrize("a,b", [
    ("deleted data/tmp/customers.db", "deleted data/tmp/audit-log.db"),  # a relative path
    ("GET https://api.example.com/tmp/public -> 200", "GET https://api.example.com/tmp/../admin -> 200"),
    ("cache at ~/tmp/a", "cache at ~/tmp/b"),
])
def test_a_tmp_folder_that_does_not_start_a_path_is_compared(a: str, b: str):
    assert (normalize(a).text, normalize(b).text) == (a, b)
    assert normalize(a).sha256 != normalize(b).sha256


def test_a_repository_folder_named_tmp_is_compared(tmp_path: Path):
    got = normalize(f"wrote {tmp_path}/repo/tmp/cache.db", root=tmp_path / "repo")
    assert got.text == "wrote <ROOT>/tmp/cache.db" and "tmp_path" not in got.fired


@pytest.mark.parametrize("text,expected", [
    ("/tmp/pytest-7/x.txt exists", "<TMP> exists"),
    ('File "/tmp/x.py", line 3', 'File "<TMP>", line 3'),
    ("PATH=/usr/bin:/tmp/venv/bin", "PATH=/usr/bin:<TMP>"),
    ("open file:///tmp/report/index.html", "open file://<TMP>"),
    ("(/var/tmp/a) [/private/var/folders/xy/T/b]", "(<TMP>) [<TMP>]"),
    ("ok\n/tmp/b", "ok\n<TMP>"),
    # a ".." leaves the temporary folder: only the folder's part is rewritten, where it went is kept
    ("read /tmp/../etc/passwd", "read <TMP>/../etc/passwd"),
    ("wrote /tmp/pytest-7/../../home/u/.ssh/id", "wrote <TMP>/../../home/u/.ssh/id"),
    ("/tmp/pytest-7/../../x.txt: ok", "<TMP>/../../x.txt: ok"),
    ("cd /tmp/..", "cd <TMP>/.."),
    # a name holding two dots is no ".." step
    ("x /tmp/a..b/c", "x <TMP>"),
])
def test_a_temporary_path_is_rewritten_where_a_path_starts_and_keeps_where_a_dotdot_leads(text: str, expected: str):
    got = normalize(text)
    assert got.text == expected and "tmp_path" in got.fired


@pytest.mark.parametrize("text", [
    "/tmp/pytest-7/../x.txt: ok",                 # /tmp/x.txt
    "/tmp/pytest-7/work/../out-81723.json: ok",   # a file of the run's own folder, named at random
    "/tmp/tmpk2j3/../tmpk2j3-lock: ok",
    "/tmp/a/../../tmp/b: ok",                     # out and back in
    "/tmp/a/b/..: ok",
])
def test_a_temporary_path_whose_dotdot_steps_stay_in_the_temporary_folder_is_a_temporary_path(text: str):
    # the same command run in another temporary folder prints other names there: they compare equal
    got = normalize(text)
    assert got.text == "<TMP>: ok" and "tmp_path" in got.fired
    assert normalize("/tmp/pytest-9/work/../out-11111.json").sha256 == normalize("/tmp/pytest-7/work/../out-81723.json").sha256


def test_outputs_reaching_different_files_through_a_temporary_folder_hash_differently():
    a, b = normalize("read /tmp/../etc/passwd"), normalize("read /tmp/../etc/shadow")
    assert a.sha256 != b.sha256
    # the run-to-run part before the ".." still compares equal
    assert normalize("/tmp/pytest-7/../x").sha256 == normalize("/tmp/pytest-9/../x").sha256


def test_outputs_that_differ_only_in_bytes_that_are_not_utf8_hash_differently():
    a, b = decode_output(b"status \xff done\n"), decode_output(b"status \xfe done\n")
    assert (a, b) == ("status \udcff done\n", "status \udcfe done\n")
    assert normalize(a).sha256 != normalize(b).sha256
    assert normalize(a).sha256 == out_sha("status \udcff done") == hashlib.sha256(b"status \xed\xb3\xbf done").hexdigest()
    # valid UTF-8 decodes as before, so its hashes do not move
    assert decode_output("caf\u00e9 \u2713".encode()) == "caf\u00e9 \u2713"
    assert normalize(decode_output(b"ok \xef\xbf\xbd")).sha256 != normalize(decode_output(b"ok \xff")).sha256


def test_structural_text_is_left_alone():
    text = "test_router.py::test_fallback FAILED\nassert 41 == 42\nversion 1.2.3, 10 items, 2 users"
    got = normalize(text)
    assert got.text == text and got.fired == ()


def test_root_rule_replaces_the_repository_path(tmp_path: Path):
    text = f"rootdir: {tmp_path}/repo\nfile {tmp_path}/repo/a.py"
    got = normalize(text, root=tmp_path / "repo")
    assert got.text == "rootdir: <ROOT>\nfile <ROOT>/a.py" and got.fired[0] == "root"


def test_rules_are_documented_in_order():
    names = [r.name for r in BUILTIN_RULES]
    assert names[0] == "ansi" and names[-1] == "whitespace"
    assert names.index("root") < names.index("tmp_path")
    assert names.index("pytest_duration") < names.index("duration")


def test_project_rules_from_pyproject_change_the_version(tmp_path: Path):
    assert load_rules(tmp_path).version == BUILTIN_VERSION == "2"  # no pyproject.toml
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.replaybook.normalize]\n'
        'rules = [{ name = "request_id", pattern = "req-[0-9a-f]{8}", replace = "req-<ID>" }]\n')
    rules = load_rules(tmp_path)
    assert rules.version.startswith("2+project.") and len(rules.version) == len("2+project.") + 12
    got = rules.normalize("served req-deadbeef in 3ms")
    assert got.text == "served req-<ID> in <DUR>" and got.fired == ("duration", "request_id")
    other = RuleSet(rules.project_rules[:0])
    assert other.version == "2"


@pytest.mark.parametrize("body,message,line", [
    ('[tool.replaybook.normalize]\nrules = [{ name = "ansi", pattern = "x", replace = "" }]\n',
     "rule name 'ansi' is already used by a built-in rule", 2),
    ('[tool.replaybook.normalize]\nrules = [\n  { name = "bad", pattern = "(", replace = "" },\n]\n',
     "rules[0] (bad): bad pattern", 3),
    ('[tool.replaybook.normalize]\nrules = [{ name = "x", pattern = "a" }]\n',
     "[tool.replaybook.normalize].rules[0]: 'replace' is a required property", 1),
    ('[tool.replaybook.normalize\n', "not valid TOML", 1),
])
def test_bad_project_rules_name_file_and_line(tmp_path: Path, body: str, message: str, line: int):
    (tmp_path / "pyproject.toml").write_text(body)
    with pytest.raises(RulesError) as ei:
        load_rules(tmp_path)
    assert message in str(ei.value)
    assert ei.value.path == str(tmp_path / "pyproject.toml") and ei.value.line_no == line


def test_a_project_rule_that_replaces_the_whole_output_is_named(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaybook.normalize]\nrules = [\n'
        '  { name = "everything", pattern = "(?s).+", replace = "ok" },\n'
        '  { name = "request_id", pattern = "req-[0-9a-f]{8}", replace = "req-<ID>" },\n]\n')
    rules = load_rules(tmp_path)
    got = rules.normalize("TOTALLY DIFFERENT OUTPUT\nline 2\n")
    assert got.text == "ok" and got.swallowed == ("everything",) and "everything" in got.fired
    assert rules.normalize("").swallowed == ()  # nothing to swallow
    assert [r.matches_anything() for r in rules.project_rules] == [True, False]
    lines = RuleSet(tuple(r for r in rules.project_rules if r.name == "request_id"))
    assert lines.normalize("req-deadbeef").swallowed == ("request_id",)  # all of this output, though
    assert lines.normalize("served req-deadbeef").swallowed == ()


def test_rules_errors_can_name_the_file_by_its_commit(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaybook.normalize]\nrules = [{ name = "x", pattern = "(", replace = "" }]\n')
    with pytest.raises(RulesError) as ei:
        load_rules(tmp_path, label="pyproject.toml at commit 0123456789ab")
    assert str(ei.value).startswith("pyproject.toml at commit 0123456789ab:2: [tool.replaybook.normalize].rules[0] (x)")


def _project(*rules: tuple[str, str, str]) -> RuleSet:
    from replaybook.packet.normalize import Rule

    return RuleSet(tuple(Rule(n, "", pattern=p, replace=r, source="project") for n, p, r in rules))


@pytest.mark.parametrize("rules,expected", [
    ([("tail", r"(?s)(?<=\A.).*", "")], ("tail",)),                    # leaves "m"
    ([("words", r"\w+", "w")], ("words",)),                              # leaves "w: w.w\nw"
    ([("first_half", "[a-m]", ""), ("second_half", "[n-z]", "")], ("first_half", "second_half")),  # together
    ([("numbers", r"[0-9]+(\.[0-9]+)?", "<N>")], ()),                    # a number in a sentence: compared
])
def test_a_project_rule_that_leaves_almost_nothing_is_named(rules, expected):
    got = _project(*rules).normalize("mean: 5.0\nwarning: this goes to stderr\ndone")
    assert got.swallowed == expected
