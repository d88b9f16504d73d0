"""The door's rules: schema, globs, first match, default deny, windows, built-in refusals."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from replaybook.door.rules import (DEFAULT_DENY, glob_regex, load_rules, refusal_text, rules_from_dict,
                                   rules_schema)
from replaybook.errors import InputError

RULES = {
    "version": 1,
    "roots": ["/srv/data"],
    "rules": [
        {"id": "deny-dotenv", "decision": "deny", "paths": ["**/.env", "**/.env.*"]},
        {"id": "deny-big-query", "decision": "deny", "tools": "query", "arguments": {"limit": ["1????*"]}},
        {"id": "allow-demo", "decision": "allow", "tools": ["list_*", "read_*", "query"], "paths": ["demo", "demo/**"]},
        {"id": "allow-ping", "decision": "allow", "tools": "ping_tool"},
        {"id": "office-hours", "decision": "allow", "tools": "report", "paths": "reports/*.csv",
         "windows": [{"days": ["mon", "tue", "wed", "thu", "fri"], "start": "08:00", "end": "18:00",
                      "tz": "Europe/Paris"}]},
        {"id": "night-batch", "decision": "allow", "tools": "batch", "windows": [{"start": "22:00", "end": "06:00"}]},
        {"id": "res-demo", "decision": "allow", "methods": ["resources/read"], "paths": ["data://demo/**"]},
    ],
}

MON_NOON_PARIS = datetime(2026, 9, 14, 10, 0, tzinfo=timezone.utc)  # 12:00 in Paris
SAT_NOON_PARIS = datetime(2026, 9, 19, 10, 0, tzinfo=timezone.utc)
MON_NIGHT = datetime(2026, 9, 14, 19, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def rules():
    return rules_from_dict(RULES)


def d(rules, tool, args, method="tools/call", now=MON_NOON_PARIS):
    dec = rules.decide(method, tool, args, now=now)
    return dec.decision, dec.rule, dec.object


def test_first_match_decides_and_default_is_deny(rules):
    assert d(rules, "read_object", {"path": "demo/cars.csv"}) == ("allow", "allow-demo", "demo/cars.csv")
    assert d(rules, "read_object", {"path": "demo/.env"}) == ("deny", "deny-dotenv", "demo/.env")
    assert d(rules, "read_object", {"path": ".env"}) == ("deny", "deny-dotenv", ".env")  # **/ may be empty
    assert d(rules, "read_object", {"path": "demo/sub/.env.local"}) == ("deny", "deny-dotenv", "demo/sub/.env.local")
    assert d(rules, "write_object", {"path": "demo/cars.csv"}) == ("deny", DEFAULT_DENY, "demo/cars.csv")
    assert d(rules, "read_object", {"path": "other/x"}) == ("deny", DEFAULT_DENY, "other/x")
    assert d(rules, "ping_tool", {}) == ("allow", "allow-ping", None)
    assert d(rules, "read_object", {}) == ("deny", DEFAULT_DENY, None)  # a paths rule needs an object
    assert d(rules, "query", {"path": "demo/a.csv", "limit": 100000}) == ("deny", "deny-big-query", "demo/a.csv")
    assert d(rules, "query", {"path": "demo/a.csv", "limit": 10}) == ("allow", "allow-demo", "demo/a.csv")


def test_roots_make_paths_relative_and_outside_is_refused(rules):
    assert d(rules, "read_object", {"path": "/srv/data/demo/cars.csv"}) == ("allow", "allow-demo", "demo/cars.csv")
    assert d(rules, "read_object", {"path": "/srv/data/./demo//x"}) == ("allow", "allow-demo", "demo/x")
    assert d(rules, "read_object", {"path": "/etc/passwd"}) == ("deny", "door:outside-roots", "/etc/passwd")
    assert d(rules, "read_object", {"path": "/srv/database/x"})[1] == "door:outside-roots"
    assert d(rules, "read_object", {"path": "file:///srv/data/demo/a%20b.csv"}) == (
        "allow", "allow-demo", "demo/a b.csv")


@pytest.mark.parametrize("path", ["../x", "demo/../reference/.env", "demo/..", "demo\\..\\x", "demo/%2e%2e/x",
                                  "file:///srv/data/demo/../../etc/passwd", "data://demo/../secret"])
def test_traversal_is_refused_before_any_rule(rules, path):
    assert d(rules, "read_object", {"path": path})[1] == "door:path-traversal"


def test_every_object_of_a_call_is_decided(rules):
    dec = rules.decide("tools/call", "fetch_many", {"paths": ["demo/a", "demo/.env"]}, now=MON_NOON_PARIS)
    assert (dec.decision, dec.rule, dec.object, dec.objects) == ("deny", "default-deny", "demo/a",
                                                                 ("demo/a", "demo/.env"))
    dec = rules.decide("tools/call", "read_many", {"paths": ["demo/a", "demo/.env"]}, now=MON_NOON_PARIS)
    assert (dec.decision, dec.rule, dec.object) == ("deny", "deny-dotenv", "demo/.env")
    dec = rules.decide("tools/call", "read_many", {"paths": ["demo/a", "demo/b"]}, now=MON_NOON_PARIS)
    assert (dec.decision, dec.rule, dec.object) == ("allow", "allow-demo", "demo/a")
    dec = rules.decide("tools/call", "list_move", {"source": "demo/a", "destination": "/srv/data/out/b"},
                       now=MON_NOON_PARIS)
    assert (dec.decision, dec.rule, dec.object) == ("deny", "default-deny", "out/b")


def test_time_windows(rules):
    assert d(rules, "report", {"path": "reports/q3.csv"}, now=MON_NOON_PARIS)[:2] == ("allow", "office-hours")
    assert d(rules, "report", {"path": "reports/q3.csv"}, now=SAT_NOON_PARIS)[:2] == ("deny", DEFAULT_DENY)
    assert d(rules, "report", {"path": "reports/q3.csv"}, now=MON_NIGHT)[:2] == ("deny", DEFAULT_DENY)
    assert d(rules, "batch", {}, now=MON_NIGHT)[:2] == ("deny", DEFAULT_DENY)  # 19:00 UTC
    assert d(rules, "batch", {}, now=datetime(2026, 9, 14, 23, 30, tzinfo=timezone.utc))[:2] == ("allow", "night-batch")
    assert d(rules, "batch", {}, now=datetime(2026, 9, 15, 5, 59, tzinfo=timezone.utc))[:2] == ("allow", "night-batch")
    r = rules_from_dict({"rules": [{"id": "w", "decision": "allow", "windows": [
        {"from": "2026-09-01T00:00:00Z", "until": "2026-10-01T00:00:00Z"}]}]})
    assert r.decide("tools/call", "t", {}, now=MON_NOON_PARIS).rule == "w"
    assert r.decide("tools/call", "t", {}, now=datetime(2026, 10, 1, tzinfo=timezone.utc)).rule == DEFAULT_DENY


def test_resources_and_built_in_refusals(rules):
    assert d(rules, "resources/read", {"uri": "data://demo/a"}, "resources/read") == (
        "allow", "res-demo", "data://demo/a")
    assert d(rules, "resources/read", {"uri": "data://other/a"}, "resources/read")[1] == DEFAULT_DENY
    assert rules.decide("tools/call", "read_object", ["x"]).rule == "door:invalid-arguments"
    assert rules.decide("tools/call", "read_object", {"path": "demo/\ufffd"}).rule == "door:invalid-utf8"
    assert rules.decide("tools/call", "read_object", {"path": "demo/a"}, argument_bytes=2 << 20).rule == \
        "door:arguments-too-large"


def test_globs():
    assert glob_regex("demo/*").match("demo/a.csv") and not glob_regex("demo/*").match("demo/a/b.csv")
    assert glob_regex("demo/**").match("demo/a/b.csv") and glob_regex("**").match("x/y")
    assert glob_regex("**/.env").match(".env") and glob_regex("**/.env").match("a/b/.env")
    assert not glob_regex("**/.env").match("a/b.env")
    assert glob_regex("data/?.csv").match("data/a.csv") and not glob_regex("data/?.csv").match("data/ab.csv")
    assert glob_regex("[ab]*.csv").match("a1.csv") and not glob_regex("[!ab]*.csv").match("a1.csv")
    assert glob_regex("a+b(c).csv").match("a+b(c).csv")


def test_refusal_text_names_the_rule():
    assert refusal_text("read_object", "deny-dotenv") == \
        "refused by the door: rule 'deny-dotenv' denies this read_object call"
    assert "no rule allows it" in refusal_text("x", DEFAULT_DENY)
    assert "'..'" in refusal_text("x", "door:path-traversal")


@pytest.mark.parametrize("bad, where", [
    ({"rules": [{"id": "a", "decision": "maybe"}]}, "rules/0/decision"),
    ({"rules": [{"id": "door:x", "decision": "allow"}]}, "rules/0/id"),
    ({"rules": [{"id": "a", "decision": "allow", "paths": []}]}, "rules/0/paths"),
    ({"rules": [{"id": "a", "decision": "allow", "windows": [{"start": "25:00"}]}]}, "rules/0/windows/0/start"),
    ({"rules": [{"id": "a", "decision": "allow", "colour": "red"}]}, "rules/0"),
    ({"rules": [{"id": "a", "decision": "allow"}, {"id": "a", "decision": "deny"}]}, "rules/1/id"),
    ({"rules": [{"id": "a", "decision": "allow", "windows": [{"tz": "Mars/Olympus"}]}]}, "rules/0/windows"),
    ({"roles": []}, "(top level)"),
])
def test_bad_rules_are_refused_naming_the_field(bad, where):
    with pytest.raises(InputError, match=where.replace("(", r"\(").replace(")", r"\)")):
        rules_from_dict(bad, "rules.yaml")


@pytest.mark.parametrize("rid", ["default-deny", "door:mine"])
def test_a_reserved_rule_id_is_said_plainly(rid):
    with pytest.raises(InputError) as e:
        rules_from_dict({"version": 1, "rules": [{"id": rid, "decision": "deny"}]}, "rules.yaml")
    assert str(e.value) == (f"rules.yaml: invalid door rules at rules/0/id: {rid!r} is reserved for the door's own "
                            "decisions (default-deny, door:…); give the rule another id")


def test_yaml_file_with_unquoted_times(tmp_path):
    p = tmp_path / "rules.yaml"
    p.write_text("rules:\n  - id: office\n    decision: allow\n    windows:\n      - {start: 08:00, end: 18:30}\n")
    r = load_rules(p)
    assert (r.rules[0].windows[0].start_min, r.rules[0].windows[0].end_min) == (480, 1110)
    assert rules_schema()["$id"].endswith("door-rules.v1.json")
    (tmp_path / "bad.yaml").write_text("rules: [\n")
    with pytest.raises(InputError, match="not valid YAML"):
        load_rules(tmp_path / "bad.yaml")


def test_a_rules_file_nested_too_deeply_is_bad_input(tmp_path):
    """The door refuses to start on it (exit 2, naming the file), never an internal error."""
    from replaybook.door.cli import main

    p = tmp_path / "rules.yaml"
    p.write_text("version: 1\nrules: []\nx: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(InputError, match="nested too deeply") as e:
        load_rules(p)
    assert e.value.path == str(p)
    assert main(["door", "--rules", str(p), "--log-root", str(tmp_path / "logs"), "--", "true"]) == 2
    assert not (tmp_path / "logs").exists()


@pytest.mark.parametrize("text, key, line", [
    # a second rules list appended to the file silently replaced the first, deny rules and all
    ("version: 1\nrules:\n  - {id: deny-dotenv, decision: deny, paths: ['**/.env']}\n"
     "rules:\n  - {id: allow-all, decision: allow}\n", "rules", 4),
    ("rules:\n  - id: merge\n    decision: deny\n    tools: [merge_pull_request]\n    decision: allow\n",
     "decision", 5),
    ("roots: [/srv/data]\nrules: []\nroots: [/]\n", "roots", 3),
])
def test_a_key_given_twice_in_a_rules_file_is_refused_naming_the_line(tmp_path, text, key, line):
    p = tmp_path / "rules.yaml"
    p.write_text(text)
    with pytest.raises(InputError, match=f"key '{key}' is written twice") as e:
        load_rules(p)
    assert e.value.line_no == line
    # the same key in two rules, or a merge key overridden, is no duplicate
    p.write_text("rules:\n  - &a {id: a, decision: deny, tools: [x]}\n  - {<<: *a, id: b, decision: allow}\n")
    assert [(r.id, r.decision, r.tools) for r in load_rules(p).rules] == [("a", "deny", ("x",)), ("b", "allow", ("x",))]


@pytest.mark.parametrize("instant", ["2026-09-01T00:00:00z", "2026-09-01t00:00:00Z", "2026-09-01t02:00:00+02:00",
                                     "2026-09-01T00:00:00.000000001z"])
def test_a_window_instant_in_any_rfc3339_spelling_is_read(instant):
    """RFC 3339 allows a lower-case ``t`` and ``z``; the schema's date-time check takes them."""
    r = rules_from_dict({"rules": [{"id": "w", "decision": "allow", "windows": [
        {"from": instant, "until": instant.replace("09-01", "10-01")}]}]})
    w = r.rules[0].windows[0]
    assert w.not_before == datetime(2026, 9, 1, tzinfo=timezone.utc)
    assert w.until == datetime(2026, 10, 1, tzinfo=timezone.utc)
    assert r.decide("tools/call", "t", {}, now=MON_NOON_PARIS).rule == "w"
    assert r.decide("tools/call", "t", {}, now=datetime(2026, 8, 31, 23, 59, tzinfo=timezone.utc)).rule == DEFAULT_DENY


@pytest.mark.parametrize("instant", ["2026-09-01T00:00:00", "2026-09-01", "2026-09-01 00:00:00Z", "noon",
                                     "2026-02-30T00:00:00Z", "2026-09-01T00:00:00+25:00", "2026-09-01T00:00Z"])
def test_a_window_instant_that_is_no_rfc3339_instant_is_a_rules_error(instant, tmp_path, monkeypatch):
    """Said as a rules-file error naming the field, whether or not jsonschema's date-time
    checker (an optional package) is installed; the door does not start (exit 2)."""
    from replaybook.door.cli import main

    bad = {"rules": [{"id": "w", "decision": "allow", "windows": [{"days": ["mon"]}, {"until": instant}]}]}
    with pytest.raises(InputError, match="rules/0/windows/1/until"):
        rules_from_dict(bad, "rules.yaml")
    from replaybook import _schema

    checked = _schema.first_error
    monkeypatch.setattr(_schema, "first_error", lambda schema, obj: checked(schema, obj, formats=False))
    with pytest.raises(InputError, match="rules/0/windows/1/until: .*RFC 3339"):
        rules_from_dict(bad, "rules.yaml")
    monkeypatch.undo()
    p = tmp_path / "rules.yaml"
    p.write_text(f"rules:\n  - id: w\n    decision: allow\n    windows: [{{until: '{instant}'}}]\n")
    assert main(["door", "--rules", str(p), "--log-root", str(tmp_path / "logs"), "--", "true"]) == 2
    assert not (tmp_path / "logs").exists()


def test_a_lower_case_z_starts_the_door(tmp_path, capsys):
    from replaybook.door.cli import main

    p = tmp_path / "rules.yaml"
    p.write_text("rules:\n  - id: w\n    decision: allow\n    windows: [{from: '2026-01-01T00:00:00z'}]\n")
    assert load_rules(p).rules[0].windows[0].not_before == datetime(2026, 1, 1, tzinfo=timezone.utc)
    main(["door", "--rules", str(p), "--log-root", str(tmp_path / "logs"), "--", "true"])  # (a server that exits)
    err = capsys.readouterr().err
    assert "replaybook door: session door-" in err and "internal error" not in err  # the door started


@pytest.mark.parametrize("key, read_as", [("on", "True"), ("yes", "True"), ("off", "False"), ("5", "5"),
                                          ("1.5", "1.5"), ("null", "None"), ("~", "None")])
def test_an_argument_name_yaml_reads_as_no_text_refuses_the_rules_file(tmp_path, key, read_as):
    """``on:`` is True to YAML: a rule on it would match no call's argument, and crashed the
    door at the first call.  The door refuses to start (exit 2), naming the rule and the key."""
    from replaybook.door.cli import main

    p = tmp_path / "rules.yaml"
    p.write_text(f"rules:\n  - id: deny-dry-run-off\n    decision: deny\n    tools: deploy\n"
                 f"    arguments:\n      {key}: 'x'\n  - {{id: allow-all, decision: allow}}\n")
    with pytest.raises(InputError) as e:
        load_rules(p)
    assert str(e.value) == (
        f"{p}: invalid door rules at rules/0/arguments: rule 'deny-dry-run-off' has the argument name {read_as}, "
        "which YAML reads as no text (an unquoted on, off, yes, no, true, false, null, ~ or number); "
        "quote it as the call spells it (e.g. 'on': …)")
    assert main(["door", "--rules", str(p), "--log-root", str(tmp_path / "logs"), "--", "true"]) == 2
    assert not (tmp_path / "logs").exists()
    p.write_text(p.read_text().replace(f"{key}: 'x'", f"'{key}': 'x'"))
    rules = load_rules(p)
    assert rules.decide("tools/call", "deploy", {key: "x"}).rule == "deny-dry-run-off"
    assert rules.decide("tools/call", "deploy", {key: "y"}).rule == "allow-all"


def test_an_argument_name_that_is_no_text_is_refused_in_a_mapping_too():
    with pytest.raises(InputError, match=r"rules/1/arguments: rule 'b' has the argument name 7,"):
        rules_from_dict({"rules": [{"id": "a", "decision": "allow", "arguments": {"x": "1"}},
                                   {"id": "b", "decision": "deny", "arguments": {"x": "1", 7: "1"}}]}, "rules.yaml")


@pytest.mark.parametrize("obj", ["reports/.ENV", "reports\\.env", "reports/.env.", "reports%2F.env"])
def test_folding_never_widens_an_allow_rule_ahead_of_a_deny(obj):
    """An ``allow`` glob that matches nothing as written (``./reports/**``, ``reports%2F**``) had
    matched once folded, and, met first in the folded comparison, let ``reports/.ENV`` past the
    later ``deny **/.env`` that catches every other spelling of ``.env``."""
    from replaybook.door.rules import rules_from_dict

    for glob in ("./reports/**", "reports%2F**"):
        r = rules_from_dict({"rules": [
            {"id": "proj", "decision": "allow", "tools": "read_file", "paths": [glob]},
            {"id": "no-env", "decision": "deny", "paths": ["**/.env"]},
            {"id": "rest", "decision": "allow", "tools": "read_file"}]})
        d = r.decide("tools/call", "read_file", {"path": obj})
        assert (d.decision, d.rule) == ("deny", "no-env"), (glob, obj)
        assert r.decide("tools/call", "read_file", {"path": "reports/a.txt"}).rule == "rest"
