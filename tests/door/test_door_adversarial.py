"""An adversarial trial of the door's decisions: calls the rules should refuse, spelled so that a
naive reading lets them through, and protocol tricks that would make the log lie.

Each scenario asserts the secure outcome: refused (and by which rule, naming which object), or
answered with a clear error, with the log line that says so.  The rules here are the two shapes
people write: a deny list (deny these objects, allow the rest of the data root) and an allow
list (allow ``demo/``, refuse everything else by default).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

from replaybook.door.rules import DEFAULT_DENY, refusal_text, rules_from_dict

ROOT = "/srv/data"

DENY_LIST = {
    "roots": [ROOT],
    "rules": [
        {"id": "deny-dotenv", "decision": "deny", "paths": ["**/.env", "**/.env.*"]},
        {"id": "deny-reference", "decision": "deny", "paths": ["reference", "reference/**", "data://reference/**"]},
        {"id": "deny-private", "decision": "deny", "paths": ["privé", "privé/**"]},
        {"id": "deny-keys", "decision": "deny", "paths": ["**/secrets/**/*.key"]},
        {"id": "allow-small-query", "decision": "allow", "tools": "query",
         "arguments": {"limit": ["[0-9]", "[0-9][0-9]"]}},
        {"id": "allow-search", "decision": "allow", "tools": "search"},
        {"id": "allow-data", "decision": "allow", "methods": ["resources/read"], "paths": ["data://**"]},
        {"id": "allow-the-rest", "decision": "allow", "paths": ["**"]},
    ],
}

ALLOW_LIST = {
    "roots": [ROOT],
    "rules": [
        {"id": "allow-demo", "decision": "allow", "paths": ["demo", "demo/**", "data://demo/**"]},
    ],
}


@pytest.fixture(scope="module")
def deny_list():
    return rules_from_dict(DENY_LIST)


@pytest.fixture(scope="module")
def allow_list():
    return rules_from_dict(ALLOW_LIST)


def _d(rules, args, tool="read_text_file", method="tools/call", **kw):
    dec = rules.decide(method, tool, args, **kw)
    return dec.decision, dec.rule, dec.object


# -- one object, spelled many ways --------------------------------------------------------------

@pytest.mark.parametrize("path, rule, obj", [
    ("demo/../reference/.env", "door:path-traversal", "demo/../reference/.env"),
    ("./reference/.env", "deny-dotenv", "reference/.env"),
    ("reference//.env", "deny-dotenv", "reference/.env"),
    ("reference/./.env", "deny-dotenv", "reference/.env"),
    ("reference/.env/", "deny-dotenv", "reference/.env"),
    ("reference/.env.", "deny-dotenv", "reference/.env."),
    ("/srv/data/reference/.env", "deny-dotenv", "reference/.env"),
    ("/srv/data//reference/./key.txt", "deny-reference", "reference/key.txt"),
    ("/etc/passwd", "door:outside-roots", "/etc/passwd"),
    # a file:// URI is a path, whatever the case of its scheme (RFC 3986: schemes are case-insensitive)
    ("file:///srv/data/reference/.env", "deny-dotenv", "reference/.env"),
    ("FILE:///srv/data/reference/key.txt", "deny-reference", "reference/key.txt"),
    ("File://localhost/etc/passwd", "door:outside-roots", "/etc/passwd"),
    ("file:///srv/data/demo/%2e%2e/reference/key.txt", "door:path-traversal", "/srv/data/demo/../reference/key.txt"),
    ("file:///srv/data/reference%2Fkey.txt", "deny-reference", "reference/key.txt"),
    # percent-encoding, backslashes, case, trailing dots, Unicode forms and look-alikes: servers that
    # decode, run on Windows or macOS, or look names up by their NFC form read the denied object
    ("reference%2Fkey.txt", "deny-reference", "reference%2Fkey.txt"),
    ("reference%252Fkey.txt", "deny-reference", "reference%252Fkey.txt"),
    ("demo/%2Eenv", "deny-dotenv", "demo/%2Eenv"),
    ("reference\\key.txt", "deny-reference", "reference\\key.txt"),
    ("demo\\..\\reference\\key.txt", "door:path-traversal", "demo\\..\\reference\\key.txt"),
    ("REFERENCE/key.txt", "deny-reference", "REFERENCE/key.txt"),
    ("demo/.ENV", "deny-dotenv", "demo/.ENV"),
    ("reference./key.txt", "deny-reference", "reference./key.txt"),
    ("reference /key.txt", "deny-reference", "reference /key.txt"),
    ("prive\u0301/salaries.csv", "deny-private", "prive\u0301/salaries.csv"),  # NFD of privé
    ("\uff52\uff45\uff46\uff45\uff52\uff45\uff4e\uff43\uff45/key.txt", "deny-reference",  # fullwidth letters
     "\uff52\uff45\uff46\uff45\uff52\uff45\uff4e\uff43\uff45/key.txt"),
    ("demo/\uff0e\uff0e/reference/key.txt", "door:path-traversal", "demo/\uff0e\uff0e/reference/key.txt"),
    # NUL: a C library stops reading a path there (reference/key.txt), others fail
    ("reference/key.txt\x00.csv", "door:invalid-path", "reference/key.txt\x00.csv"),
    ("demo/cars.csv\x00", "door:invalid-path", "demo/cars.csv\x00"),
    ("demo/cars%00.csv", "door:invalid-path", "demo/cars%00.csv"),
])
def test_a_denied_object_is_refused_however_it_is_spelled(deny_list, path, rule, obj):
    assert _d(deny_list, {"path": path}) == ("deny", rule, obj)


@pytest.mark.parametrize("path, obj", [
    ("demo/cars.csv", "demo/cars.csv"),
    ("demo/a b.csv", "demo/a b.csv"),
    ("demo/Reference.txt", "demo/Reference.txt"),
    ("/srv/data/demo/caf\u00e9.csv", "demo/caf\u00e9.csv"),
    ("file:///srv/data/demo/a%20b.csv", "demo/a b.csv"),
    ("demo/100%.csv", "demo/100%.csv"),
])
def test_spelling_checks_do_not_refuse_ordinary_objects(deny_list, path, obj):
    assert _d(deny_list, {"path": path}) == ("allow", "allow-the-rest", obj)


SPELLED_GLOBS = {
    "rules": [
        {"id": "deny-private", "decision": "deny", "paths": ["Private/**"]},
        {"id": "deny-cafe", "decision": "deny", "paths": ["cafe\u0301/**"]},  # NFD
        {"id": "deny-secret", "decision": "deny", "paths": ["\uff33ecret/**"]},  # a fullwidth S
        {"id": "deny-logs", "decision": "deny", "paths": ["Logs\\**"]},  # a Windows separator
        {"id": "ask-reports", "decision": "ask", "paths": ["Reports/**"]},
        {"id": "allow-all", "decision": "allow"},
    ],
}


@pytest.mark.parametrize("path, rule", [
    ("Private/key", "deny-private"), ("PRIVATE/key", "deny-private"), ("private/key", "deny-private"),
    ("pRiVaTe\\key", "deny-private"), ("private%2Fkey", "deny-private"),
    ("cafe\u0301/x", "deny-cafe"), ("CAF\u00c9/x", "deny-cafe"), ("caf\u00e9/x", "deny-cafe"),
    ("\uff33ecret/a", "deny-secret"), ("Secret/a", "deny-secret"), ("secret/a", "deny-secret"),
    ("logs/app.log", "deny-logs"), ("LOGS\\app.log", "deny-logs"),
    ("reports/q3.csv", "ask-reports"), ("REPORTS/q3.csv", "ask-reports"),
    ("public/private/key", "allow-all"), ("cafe/x", "allow-all"), ("report/q3.csv", "allow-all"),
])
def test_a_deny_or_ask_glob_catches_its_object_whatever_the_spelling_of_either(path, rule):
    """The glob folded as the object is: a deny glob written with capitals or in NFD catches the
    object in lower case or NFC too, not only another spelling of it."""
    rules = rules_from_dict(SPELLED_GLOBS)
    dec = rules.decide("tools/call", "read_object", {"path": path})
    assert (dec.decision, dec.rule, dec.object) == (rule.split("-")[0], rule, path)


def test_a_home_relative_path_is_decided_where_the_server_expands_it(deny_list, monkeypatch):
    # the reference filesystem server (and any server that inherits the door's environment)
    # reads ~/x from $HOME/x
    monkeypatch.setenv("HOME", "/home/analyst")
    assert _d(deny_list, {"path": "~/.ssh/id_rsa"}) == ("deny", "door:outside-roots", "/home/analyst/.ssh/id_rsa")
    assert _d(deny_list, {"path": "~"}) == ("deny", "door:outside-roots", "/home/analyst")
    monkeypatch.setenv("HOME", "/srv/data/reference")
    assert _d(deny_list, {"path": "~/key.txt"}) == ("deny", "deny-reference", "reference/key.txt")
    assert _d(deny_list, {"path": "demo/~/x"}) == ("allow", "allow-the-rest", "demo/~/x")  # only a leading ~


# -- the object under another name ---------------------------------------------------------------

@pytest.mark.parametrize("args, rule, obj", [
    ({"paths": ["demo/a.csv", "reference/key.txt"]}, "deny-reference", "reference/key.txt"),
    ({"source": "reference/key.txt", "destination": "demo/stolen.txt"}, "deny-reference", "reference/key.txt"),
    ({"source": "demo/a.csv", "destination": "reference/.env"}, "deny-dotenv", "reference/.env"),
    # a server that reads JSON keys case-insensitively (Go's encoding/json, with Unicode folding:
    # U+017F is an s, U+212A a k) takes these as its path argument
    ({"PATH": "reference/key.txt"}, "deny-reference", "reference/key.txt"),
    ({"path": "demo/a.csv", "Path": "reference/key.txt"}, "deny-reference", "reference/key.txt"),
    ({"\u017fource": "reference/key.txt", "destination": "demo/x"}, "deny-reference", "reference/key.txt"),
    # nested: GitHub's push_files takes files[].path
    ({"files": [{"path": "demo/a.csv", "content": "x"}, {"path": "reference/.env", "content": "y"}]},
     "deny-dotenv", "reference/.env"),
    ({"options": {"recursive": True, "path": "reference"}}, "deny-reference", "reference"),
])
def test_every_argument_that_names_an_object_is_decided(deny_list, args, rule, obj):
    assert _d(deny_list, args, tool="search") == ("deny", rule, obj)


def test_a_path_given_as_a_number_is_decided_as_its_text(allow_list):
    assert _d(allow_list, {"table": 7}) == ("deny", DEFAULT_DENY, "7")
    assert _d(allow_list, {"paths": ["demo/a", 7]}) == ("deny", DEFAULT_DENY, "7")


def test_an_argument_condition_holds_for_every_spelling_of_its_name(deny_list):
    assert _d(deny_list, {"limit": 5}, tool="query") == ("allow", "allow-small-query", None)
    assert _d(deny_list, {"limit": 5, "LIMIT": 100000}, tool="query") == ("deny", DEFAULT_DENY, None)
    assert _d(deny_list, {"limit": "-1"}, tool="query") == ("deny", DEFAULT_DENY, None)
    assert _d(deny_list, {"limit": 5.5}, tool="query") == ("deny", DEFAULT_DENY, None)


@pytest.mark.parametrize("decision", ["deny", "ask"])
def test_a_deny_or_ask_argument_condition_holds_for_any_spelling_of_its_name(decision):
    """A server reading keys case-insensitively may take either spelling (Go's encoding/json
    takes the last): a refusal the agent could undo by sending the argument twice is none."""
    rules = rules_from_dict({"rules": [
        {"id": "big-limit", "decision": decision, "tools": "query", "arguments": {"limit": "[0-9][0-9][0-9]*"}},
        {"id": "allow-all", "decision": "allow"}]})
    for args in ({"path": "demo/many.csv", "limit": 150},
                 {"path": "demo/many.csv", "limit": 150, "LIMIT": 1},
                 {"path": "demo/many.csv", "LIMIT": 1, "limit": 150},
                 {"path": "demo/many.csv", "limit": 1, "Limit": 150},
                 {"path": "demo/many.csv", "limit": 1, "\uff4c\uff49\uff4d\uff49\uff54": 150}):  # fullwidth
        assert _d(rules, args, tool="query")[:2] == (decision, "big-limit"), args
    assert _d(rules, {"path": "demo/many.csv", "limit": 1, "LIMIT": 2}, tool="query")[:2] == ("allow", "allow-all")
    assert _d(rules, {"path": "demo/many.csv"}, tool="query")[:2] == ("allow", "allow-all")  # absent: no match


def test_the_documented_limit_rule_takes_digits_only():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "door.md").read_text("utf-8")
    block = re.search(r"```yaml\n(version: 1\nroots:.*?)```", doc, re.S).group(1)
    rules = rules_from_dict(yaml.safe_load(block))
    from datetime import datetime, timezone

    tuesday_noon = datetime(2026, 9, 15, 10, 0, tzinfo=timezone.utc)
    assert rules.decide("tools/call", "query", {"limit": 999}, now=tuesday_noon).decision == "allow"
    for limit in (1000, -1, "-1", "1e9", 1.5, [1], "abc"):
        assert rules.decide("tools/call", "query", {"limit": limit}, now=tuesday_noon).rule == DEFAULT_DENY, limit


# -- resources -------------------------------------------------------------------------------------

@pytest.mark.parametrize("uri, rule, obj", [
    ("data://reference/key.txt", "deny-reference", "data://reference/key.txt"),
    # the MCP SDK's resource templates decode %2F before the server reads the path
    ("data://reference%2Fkey.txt", "deny-reference", "data://reference/key.txt"),
    ("data://demo%2F..%2Freference/key.txt", "door:path-traversal", "data://demo%2F..%2Freference/key.txt"),
    ("data://../reference/key.txt", "door:path-traversal", "data://../reference/key.txt"),
    ("data://demo/%2e%2e/reference/key.txt", "door:path-traversal", "data://demo/%2e%2e/reference/key.txt"),
    ("DATA://Reference/key.txt", "deny-reference", "DATA://Reference/key.txt"),
    ("file:///srv/data/reference/.env", "deny-dotenv", "reference/.env"),
    ("file:///srv/data/demo/../../../etc/passwd", "door:path-traversal", "/srv/data/demo/../../../etc/passwd"),
])
def test_a_resource_read_is_decided_on_the_uri_the_server_resolves(deny_list, uri, rule, obj):
    assert _d(deny_list, {"uri": uri}, tool="resources/read", method="resources/read") == ("deny", rule, obj)


def test_a_decoded_uri_must_be_allowed_too(allow_list):
    assert _d(allow_list, {"uri": "data://demo/a%20b.csv"}, tool="resources/read", method="resources/read") == (
        "allow", "allow-demo", "data://demo/a%20b.csv")
    assert _d(allow_list, {"uri": "data://demo%2Fa.csv"}, tool="resources/read", method="resources/read") == (
        "deny", DEFAULT_DENY, "data://demo%2Fa.csv")


# -- symlinks inside the data root -------------------------------------------------------------------

@pytest.fixture
def disk(tmp_path):
    """A data root whose demo/ holds links out of it: to .env, to reference/, to /etc, a dangling
    one into reference/, and an ordinary link within demo/."""
    root = tmp_path / "data"
    (root / "demo").mkdir(parents=True)
    (root / "reference").mkdir()
    (root / "demo" / "cars.csv").write_text("name,mpg\n")
    (root / "reference" / ".env").write_text("API_KEY=do-not-read\n")
    (root / "reference" / "key.txt").write_text("k\n")
    (root / "demo" / "env").symlink_to("../reference/.env")
    (root / "demo" / "ref").symlink_to(root / "reference")
    (root / "demo" / "etc").symlink_to("/etc")
    (root / "demo" / "later.txt").symlink_to("../reference/later.txt")
    (root / "demo" / "cars-link.csv").symlink_to("cars.csv")
    (tmp_path / "data-link").symlink_to(root)
    return root


def _on_disk(root: Path, spec: dict) -> object:
    spec = dict(spec, roots=[str(root)])
    return rules_from_dict(spec)


@pytest.mark.parametrize("path, rule, obj", [
    ("demo/env", "deny-dotenv", "reference/.env"),
    ("demo/ref/key.txt", "deny-reference", "reference/key.txt"),
    ("demo/ref", "deny-reference", "reference"),
    ("demo/later.txt", "deny-reference", "reference/later.txt"),  # a write through it creates the target
])
def test_a_symlink_is_decided_on_the_object_it_reaches(disk, path, rule, obj):
    rules = _on_disk(disk, DENY_LIST)
    dec = rules.decide("tools/call", "read_text_file", {"path": path}, on_disk=True)
    assert (dec.decision, dec.rule, dec.object, dec.objects) == ("deny", rule, obj, (path, obj))
    absolute = rules.decide("tools/call", "read_text_file", {"path": str(disk / path)}, on_disk=True)
    assert (absolute.decision, absolute.rule, absolute.object) == ("deny", rule, obj)


def test_a_symlink_out_of_the_roots_is_refused_as_outside(disk):
    dec = _on_disk(disk, DENY_LIST).decide("tools/call", "read_text_file", {"path": "demo/etc/passwd"}, on_disk=True)
    assert (dec.decision, dec.rule, dec.object) == ("deny", "door:outside-roots", "/etc/passwd")


def test_an_allow_list_holds_behind_a_symlink(disk):
    rules = _on_disk(disk, ALLOW_LIST)
    dec = rules.decide("tools/call", "read_text_file", {"path": "demo/ref/key.txt"}, on_disk=True)
    assert (dec.decision, dec.rule, dec.object) == ("deny", DEFAULT_DENY, "reference/key.txt")
    ok = rules.decide("tools/call", "read_text_file", {"path": "demo/cars-link.csv"}, on_disk=True)
    assert (ok.decision, ok.rule, ok.object, ok.objects) == ("allow", "allow-demo", "demo/cars-link.csv",
                                                             ("demo/cars-link.csv", "demo/cars.csv"))
    plain = rules.decide("tools/call", "read_text_file", {"path": "demo/cars.csv"}, on_disk=True)
    assert (plain.decision, plain.objects) == ("allow", ("demo/cars.csv",))
    new = rules.decide("tools/call", "write_file", {"path": "demo/new/file.csv"}, on_disk=True)
    assert (new.decision, new.objects) == ("allow", ("demo/new/file.csv",))


def test_a_root_that_is_itself_a_symlink_still_matches(disk):
    rules = _on_disk(disk.parent / "data-link", ALLOW_LIST)
    dec = rules.decide("tools/call", "read_text_file", {"path": "demo/cars.csv"}, on_disk=True)
    assert (dec.decision, dec.object, dec.objects) == ("allow", "demo/cars.csv", ("demo/cars.csv",))
    dec = rules.decide("tools/call", "read_text_file", {"path": "demo/env"}, on_disk=True)
    assert (dec.decision, dec.rule, dec.object) == ("deny", DEFAULT_DENY, "reference/.env")


def test_without_a_local_filesystem_symlinks_are_not_resolved(disk):
    # a remote server (--url): the door's disk is not the server's
    dec = _on_disk(disk, ALLOW_LIST).decide("tools/call", "read_text_file", {"path": "demo/env"})
    assert (dec.decision, dec.objects) == ("allow", ("demo/env",))


# -- hard links inside the data root ----------------------------------------------------------------

@pytest.fixture
def linked(disk):
    """``disk`` with ``demo/notes.txt`` a second name of ``reference/.env`` and ``demo/copy.csv`` of
    ``demo/cars.csv``."""
    os.link(disk / "reference" / ".env", disk / "demo" / "notes.txt")
    os.link(disk / "demo" / "cars.csv", disk / "demo" / "copy.csv")
    return disk


def test_a_hard_link_is_decided_on_every_name_of_its_file(linked):
    rules = _on_disk(linked, DENY_LIST)
    dec = rules.decide("tools/call", "read_text_file", {"path": "demo/notes.txt"}, on_disk=True)
    assert (dec.decision, dec.rule, dec.object, dec.objects) == (
        "deny", "deny-dotenv", "reference/.env", ("demo/notes.txt", "reference/.env"))
    absolute = rules.decide("tools/call", "read_text_file", {"path": str(linked / "demo" / "notes.txt")}, on_disk=True)
    assert (absolute.decision, absolute.rule, absolute.object) == ("deny", "deny-dotenv", "reference/.env")
    # an allow-list must allow every name; two names both allowed pass, and the log names both
    allow = _on_disk(linked, ALLOW_LIST)
    dec = allow.decide("tools/call", "read_text_file", {"path": "demo/notes.txt"}, on_disk=True)
    assert (dec.decision, dec.rule, dec.object) == ("deny", DEFAULT_DENY, "reference/.env")
    ok = allow.decide("tools/call", "read_text_file", {"path": "demo/copy.csv"}, on_disk=True)
    assert (ok.decision, ok.rule, ok.objects) == ("allow", "allow-demo", ("demo/copy.csv", "demo/cars.csv"))
    # not on this disk (a remote server): no names are looked for
    assert allow.decide("tools/call", "read_text_file", {"path": "demo/notes.txt"}).decision == "allow"


def test_a_hard_link_removed_or_made_later_is_seen(linked):
    rules = _on_disk(linked, DENY_LIST)
    ask = lambda: rules.decide("tools/call", "read_text_file", {"path": "demo/notes.txt"}, on_disk=True)  # noqa: E731
    assert ask().decision == "deny"
    (linked / "reference" / ".env").unlink()  # now demo/notes.txt is the file's only name
    dec = ask()
    assert (dec.decision, dec.rule, dec.objects) == ("allow", "allow-the-rest", ("demo/notes.txt",))
    os.link(linked / "demo" / "notes.txt", linked / "reference" / "key2.txt")
    dec = ask()
    assert (dec.decision, dec.rule, dec.object) == ("deny", "deny-reference", "reference/key2.txt")


def test_a_hard_link_whose_names_a_walk_cannot_all_find_is_refused(linked):
    rules = _on_disk(linked, DENY_LIST)
    rules.hard_link_walk_limit = 3
    dec = rules.decide("tools/call", "read_text_file", {"path": "demo/copy.csv"}, on_disk=True)
    assert (dec.decision, dec.rule, dec.object) == ("deny", "door:hard-link-unresolved", "demo/copy.csv")
    assert "could not all look for" in refusal_text("read_text_file", dec.rule)
    # a file whose other name lies outside every root has no other object to decide
    outside = linked.parent / "outside.csv"
    os.link(linked / "demo" / "cars.csv", outside)
    (linked / "demo" / "copy.csv").unlink()
    dec = _on_disk(linked, DENY_LIST).decide("tools/call", "read_text_file", {"path": "demo/cars.csv"}, on_disk=True)
    assert (dec.decision, dec.objects) == ("allow", ("demo/cars.csv",))


# -- end to end: the reference filesystem server reads what the tricks name -----------------------------

NFD_PRIVATE = "prive\u0301/salaries.csv"  # the folder on disk is NFC "privé"


@pytest.fixture
def fs_world(tmp_path, monkeypatch):
    """A data root for the npm filesystem server, with links out of demo/, an NFC folder, and
    $HOME inside reference/ (the server expands ~/ from the environment it inherits)."""
    data = (tmp_path / "data").resolve()
    (data / "demo").mkdir(parents=True)
    (data / "reference").mkdir()
    (data / "priv\u00e9").mkdir()
    (data / "demo" / "cars.csv").write_text("name,mpg\nmazda,21\n")
    (data / "reference" / ".env").write_text("API_KEY=do-not-read\n")
    (data / "reference" / "key.txt").write_text("KEY=do-not-read\n")
    (data / "priv\u00e9" / "salaries.csv").write_text("name,salary\nada,100\n")
    (data / "demo" / "env").symlink_to("../reference/.env")
    (data / "demo" / "ref").symlink_to("../reference")
    os.link(data / "reference" / ".env", data / "demo" / "notes.txt")  # one file, two names
    monkeypatch.setenv("HOME", str(data / "reference"))
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump({**DENY_LIST, "roots": [str(data)]}, allow_unicode=True))
    return {"data": data, "rules": rules, "log_root": tmp_path / "logs"}


TRICKS = [  # (tool, arguments, the secret the server returns for it)
    ("read_text_file", {"path": "demo/env"}, "API_KEY=do-not-read"),
    ("read_text_file", {"path": "demo/ref/key.txt"}, "KEY=do-not-read"),
    ("read_text_file", {"path": NFD_PRIVATE}, "ada,100"),
    ("read_text_file", {"path": "~/key.txt"}, "KEY=do-not-read"),
    ("read_multiple_files", {"paths": ["demo/cars.csv", "demo/env"]}, "API_KEY=do-not-read"),
    ("read_text_file", {"path": "demo/notes.txt"}, "API_KEY=do-not-read"),
]


def _text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def test_the_reference_server_follows_every_trick(npm_fs_server, fs_world):
    """Without the door, each trick reads the secret: the door's refusals below are the only thing
    in the way."""
    from .conftest import run_session

    async def agent(s):
        return [_text(await s.call_tool(name, args)) for name, args, _ in TRICKS]

    got = run_session(["node", str(npm_fs_server), str(fs_world["data"])], agent)
    for (name, args, secret), text in zip(TRICKS, got):
        assert secret in text, (name, args, text)


def test_the_door_refuses_every_trick_in_front_of_the_reference_server(npm_fs_server, fs_world):
    from .conftest import door_cmd, run_session, validate_lines

    async def agent(s):
        out = [await s.call_tool(name, args) for name, args, _ in TRICKS]
        out.append(await s.call_tool("move_file", {"source": "demo/cars.csv", "destination": "demo/ref/cars.csv"}))
        out.append(await s.call_tool("read_text_file", {"path": "demo/cars.csv"}))
        return out

    cmd = door_cmd(fs_world["rules"], fs_world["log_root"], ["node", str(npm_fs_server), str(fs_world["data"])],
                   session="tricks")
    results = run_session(cmd, agent)
    for r in results[:-1]:
        assert r.is_error and "refused by the door" in _text(r) and "do-not-read" not in _text(r)
        assert "ada,100" not in _text(r)
    assert not results[-1].is_error and _text(results[-1]) == "name,mpg\nmazda,21\n"
    assert (fs_world["data"] / "demo" / "cars.csv").is_file() and not (fs_world["data"] / "reference" / "cars.csv").exists()

    lines = validate_lines(fs_world["log_root"] / "analyst" / "tricks.jsonl")
    assert [(o["tool"], o["object"], o["decision"], o["rule"]) for o in lines] == [
        ("read_text_file", "reference/.env", "deny", "deny-dotenv"),
        ("read_text_file", "reference/key.txt", "deny", "deny-reference"),
        ("read_text_file", NFD_PRIVATE, "deny", "deny-private"),
        ("read_text_file", "reference/key.txt", "deny", "deny-reference"),
        ("read_multiple_files", "reference/.env", "deny", "deny-dotenv"),
        ("read_text_file", "reference/.env", "deny", "deny-dotenv"),
        ("move_file", "reference/cars.csv", "deny", "deny-reference"),
        ("read_text_file", "demo/cars.csv", "allow", "allow-the-rest"),
    ]
    # demo/env reaches reference/.env, whose other name is demo/notes.txt
    assert lines[0]["objects"] == ["demo/env", "reference/.env", "demo/notes.txt"]
    assert lines[4]["objects"] == ["demo/cars.csv", "demo/env", "reference/.env", "demo/notes.txt"]
    assert lines[5]["objects"] == ["demo/notes.txt", "reference/.env"]  # the hard link's other name
    assert lines[6]["objects"] == ["demo/cars.csv", "demo/ref/cars.csv", "reference/cars.csv"]
    assert "objects" not in lines[7]


# -- protocol tricks: the door in front of a server that misbehaves on request -------------------------

HOSTILE = Path(__file__).resolve().parent / "hostile_server.py"
PROTOCOL_RULES = """\
version: 1
rules:
  - id: deny-dotenv
    decision: deny
    paths: ["**/.env"]
  - id: ask-before-echoing-private
    decision: ask
    tools: [echo]
    paths: ["private/**"]
  - id: allow-demo
    decision: allow
    tools: [echo, slow, hang, twice, latin1, wedge]
    paths: ["demo", "demo/**"]
  - id: allow-tools
    decision: allow
    tools: [spoof, storm]
"""


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    """``start(**door_cmd options)``: a door (spoken to over raw pipes) in front of the hostile
    server; ``seen()`` is what that server received, one message each."""
    import sys

    from .conftest import door_cmd
    from .test_faults_load import RawDoor

    rules = tmp_path / "rules.yaml"
    rules.write_text(PROTOCOL_RULES)
    seen_file = tmp_path / "seen.jsonl"
    monkeypatch.setenv("HOSTILE_SERVER_SEEN", str(seen_file))
    doors = []

    def start(session="s", **kw):
        d = RawDoor(door_cmd(rules, tmp_path / "logs", [sys.executable, str(HOSTILE)], session=session, **kw),
                    tmp_path / f"{session}.err")
        doors.append(d)
        return d

    def seen() -> list[dict]:
        import json

        return [json.loads(x) for x in seen_file.read_text().splitlines()] if seen_file.exists() else []

    yield {"start": start, "seen": seen, "log": lambda s="s": tmp_path / "logs" / "analyst" / f"{s}.jsonl",
           "err": lambda s="s": (tmp_path / f"{s}.err").read_text(), "tmp": tmp_path}
    for d in doors:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait(10)


def _calls_seen(seen: list[dict]) -> list[dict]:
    return [m["params"]["arguments"] for m in seen if m.get("method") == "tools/call"]


def test_what_reaches_the_server_is_what_the_door_decided(hostile):
    from .conftest import validate_lines

    door = hostile["start"]()
    # a call before initialize is decided like any other
    door.send_raw(b'{"jsonrpc":"2.0","id":"early","method":"tools/call","params":{"name":"echo",'
                  b'"arguments":{"path":"reference/.env"}}}')
    early = door.recv()
    assert early["id"] == "early" and early["result"]["isError"] and "deny-dotenv" in str(early)
    door.initialize()
    # a key given twice: the door and the server read the same one (the door forwards what it parsed)
    door.send_raw(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo",'
                  b'"arguments":{"path":"reference/.env","path":"demo/a.csv"}}}')
    assert door.recv()["result"]["structuredContent"] == {"received": {"path": "demo/a.csv"}}
    door.send_raw(b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo",'
                  b'"arguments":{"path":"demo/a.csv","path":"reference/.env"}}}')
    assert "deny-dotenv" in str(door.recv())
    door.send_raw(b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","name":"spoof",'
                  b'"arguments":{"path":"reference/.env"}}}')
    assert "deny-dotenv" in str(door.recv())
    # a method spelled in another case, a call sent as a notification, in a batch, with an id of a
    # type JSON-RPC does not allow: refused, never forwarded
    door.send_raw(b'{"jsonrpc":"2.0","id":5,"method":"Tools/Call","params":{"name":"echo",'
                  b'"arguments":{"path":"demo/x"}}}')
    assert door.recv()["error"]["code"] == -32601
    door.send_raw(b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"path":"demo/x"}}}')
    door.send_raw(b'[{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo",'
                  b'"arguments":{"path":"demo/x"}}}]')
    assert door.recv()["error"]["code"] == -32600
    door.send_raw(b'{"jsonrpc":"2.0","id":7.5,"method":"tools/call","params":{"name":"echo",'
                  b'"arguments":{"path":"demo/x"}}}')
    assert door.recv()["error"]["code"] == -32600
    assert door.close() == 0
    assert _calls_seen(hostile["seen"]()) == [{"path": "demo/a.csv"}]
    lines = validate_lines(hostile["log"]())
    assert [(o["tool"], o["object"], o["decision"], o["rule"]) for o in lines] == [
        ("echo", "reference/.env", "deny", "deny-dotenv"),
        ("echo", "demo/a.csv", "allow", "allow-demo"),
        ("echo", "reference/.env", "deny", "deny-dotenv"),
        ("spoof", "reference/.env", "deny", "deny-dotenv"),
        ("Tools/Call", None, "deny", "door:method-not-allowed"),
        ("echo", None, "deny", "door:not-a-request"),
        ("(invalid)", None, "deny", "door:invalid-request"),
        ("echo", None, "deny", "door:not-a-request"),
    ]


def test_an_answer_no_request_waits_for_never_reaches_the_client(hostile):
    from .conftest import validate_lines

    door = hostile["start"]()
    door.initialize()
    # the server answers ids the client will use next, and one it already refused …
    door.request("tools/call", {"name": "echo", "arguments": {"path": "reference/.env"}}, rid=10)
    assert door.recv()["id"] == 10
    door.request("tools/call", {"name": "spoof", "arguments": {"ids": [10, 11, 12]}}, rid=2)
    got = door.recv()
    assert (got["id"], got["result"]["content"][0]["text"]) == (2, "spoof done")
    # … so the refusal of 11 is the only answer to 11, and no spoofed answer is waiting for 12
    door.request("tools/call", {"name": "echo", "arguments": {"path": "reference/.env"}}, rid=11)
    got = door.recv()
    assert got["id"] == 11 and "deny-dotenv" in str(got)
    door.request("ping", rid=12)
    assert door.recv() == {"jsonrpc": "2.0", "id": 12, "result": {}}
    # a call answered twice: the client gets the logged answer only
    first = door.call("twice", {"path": "demo/a"}, rid=3)
    assert first["result"]["content"][0]["text"] == "first"
    door.request("ping", rid=4)
    assert door.recv()["id"] == 4
    assert door.close() == 0
    lines = validate_lines(hostile["log"]())
    assert [(o["seq"], o["tool"], o["decision"], o["rows"]) for o in lines] == [
        (1, "echo", "deny", None), (2, "spoof", "allow", 1), (3, "echo", "deny", None), (4, "twice", "allow", 1)]
    err = hostile["err"]()
    assert "answered id 10, which no request is waiting for" in err and "answered id 3, which" in err


def test_an_answer_naming_its_requests_id_as_text_or_number_is_that_requests(hostile):
    """A server that answers request 5 with id "5" (or request "6" with 6): the MCP SDKs match such
    an answer to its request, so a client had got it when connected directly — behind the door it
    was dropped as an answer to no request, and the client waited forever. It is relayed with
    the id as the client wrote it, and logged as the call's answer."""
    from .conftest import validate_lines

    door = hostile["start"]()
    door.initialize()
    answer = '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"hi"}]}}'
    door.request("tools/call", {"name": "echo", "arguments": {"path": "demo/a"},
                                "_garble": [answer % '"ID_TEXT"']}, rid=5)
    assert door.recv() == {"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": "hi"}]}}
    door.request("tools/call", {"name": "echo", "arguments": {"path": "demo/b"},
                                "_garble": [answer % "ID_TEXT"]}, rid="6")
    assert door.recv()["id"] == "6"
    door.request("ping", {"_garble": ['{"jsonrpc":"2.0","id":"ID_TEXT","result":{}}']}, rid=7)
    assert door.recv() == {"jsonrpc": "2.0", "id": 7, "result": {}}
    assert door.close() == 0
    lines = validate_lines(hostile["log"]())
    assert [(o["arguments"], o["rows"], o["bytes"], o["error"]) for o in lines] == [
        ({"path": "demo/a"}, 1, 2, None), ({"path": "demo/b"}, 1, 2, None)]
    assert "which no request is waiting for" not in hostile["err"]()


def test_a_late_answer_to_a_cancelled_call_never_settles_the_call_of_its_ids_number(hostile):
    """Calls "5" and 5 in flight, "5" cancelled: the server's late answer to "5" is the cancelled
    call's (not relayed), never call 5's — which would reach the client and the log as 5's result."""
    import time

    from .conftest import validate_lines

    door = hostile["start"]()
    door.initialize()
    door.request("tools/call", {"name": "slow", "arguments": {"path": "demo/a", "seconds": 0.5}}, rid="5")
    door.request("tools/call", {"name": "hang", "arguments": {"path": "demo/b"}}, rid=5)
    door.notify("notifications/cancelled", {"requestId": "5", "reason": "Esc"})
    time.sleep(1.5)
    assert door.call("echo", {"path": "demo/c"}, rid=9)["id"] == 9  # (nothing was relayed before it)
    lines = validate_lines(hostile["log"]())
    assert [(o["arguments"]["path"], o["rows"], o["error"]) for o in lines] == [
        ("demo/a", None, "cancelled by the client before the answer: Esc"), ("demo/c", 1, None)]
    assert "answered id '5', which no request is waiting for" in hostile["err"]()


def test_a_cancelled_passed_through_request_is_not_the_call_of_its_ids_number(hostile):
    """A cancellation of request "5" (a ping passed through) while call 5 is in flight cancels
    the ping only: call 5 is answered and logged with its own result."""
    from .conftest import validate_lines

    door = hostile["start"]()
    door.initialize()
    door.request("tools/call", {"name": "slow", "arguments": {"path": "demo/b", "seconds": 0.5}}, rid=5)
    door.request("ping", {"_garble": []}, rid="5")  # (the server never answers it)
    door.notify("notifications/cancelled", {"requestId": "5", "reason": "gave up the ping"})
    got = door.recv()
    assert got["id"] == 5 and got["result"]["content"][0]["text"] == "slow done"
    lines = validate_lines(hostile["log"]())
    assert [(o["arguments"]["path"], o["rows"], o["error"]) for o in lines] == [("demo/b", 1, None)]


def test_an_answer_that_is_not_json_rpc_is_answered_with_an_error_and_logged(hostile):
    import sys
    import time

    from .conftest import validate_lines

    door = hostile["start"]()
    # the server's answer to initialize is not JSON-RPC: the client is told at once, and calls
    # after it do not wait for a server name that is not coming
    door.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "raw-test", "version": "0"},
                                "_garble": ['{"jsonrpc":"2.0","id":ID,"result":[]}']}, rid=1)
    init = door.recv()
    assert (init["id"], init["error"]["code"]) == (1, -32700)
    assert init["error"]["message"].endswith("not valid JSON-RPC (result: Input should be an object)")
    started = time.monotonic()
    broken = door.request("tools/call", {"name": "echo", "arguments": {"path": "demo/a"},
                                         "_garble": ['{"jsonrpc":"2.0","id":ID,"result":"a text"}']}, rid=2)
    got = door.recv()
    assert time.monotonic() - started < 4.0  # the door waits up to 5 s for an initialize in flight
    assert (got["id"], got["error"]["code"]) == (broken, -32700)
    # an error object without a message; an answer naming no result at all
    door.request("tools/call", {"name": "echo", "arguments": {"path": "demo/b"},
                                "_garble": ['{"jsonrpc":"2.0","id":ID,"error":{"code":"x"}}']}, rid="three")
    got = door.recv()
    assert got["id"] == "three" and "error.code: Input should be a valid integer" in got["error"]["message"]
    door.request("tools/call", {"name": "echo", "arguments": {"path": "demo/c"},
                                "_garble": ['{"jsonrpc":"2.0","id":ID}']}, rid=4)
    got = door.recv()
    assert got["id"] == 4 and "(result: Field required)" in got["error"]["message"]
    # what names the id only as another JSON type, inside a nested object, or in a line that is
    # not JSON settles nothing: the call's real answer after them is the one the client gets
    door.request("tools/call", {"name": "echo", "arguments": {"path": "demo/d"}, "_garble": [
        '{"jsonrpc":"2.0","id":"ID_TEXT","result":7}', '{"jsonrpc":"2.0","id":ID.0,"result":7}',
        '{"jsonrpc":"2.0","id":true,"result":7}',
        '{"jsonrpc":"2.0","id":"q","method":12,"params":{"id":ID,"result":7}}',
        '{"jsonrpc":"2.0","id":ID,"result":', "ok"]}, rid=5)
    got = door.recv()
    assert got["id"] == 5 and got["result"]["content"][0]["text"] == "ok"
    door.request("ping", rid=6)
    assert door.recv() == {"jsonrpc": "2.0", "id": 6, "result": {}}
    assert door.close() == 0
    lines = validate_lines(hostile["log"]())
    assert [(o["seq"], o["object"], o["decision"], (o["error"] or "")[:62]) for o in lines] == [
        (1, "demo/a", "allow", "upstream error -32700: the upstream MCP server's answer is not"),
        (2, "demo/b", "allow", "upstream error -32700: the upstream MCP server's answer is not"),
        (3, "demo/c", "allow", "upstream error -32700: the upstream MCP server's answer is not"),
        (4, "demo/d", "allow", ""),
    ]
    assert lines[0]["server"] == Path(sys.executable).name  # no initialize answer named the server
    err = hostile["err"]()
    assert err.count("is not JSON-RPC: answered with an error") == 4
    assert err.count("sent something that is not JSON-RPC (passed over)") == 5
    # what the MCP SDK logs about those lines comes as one line each, never a Python traceback
    assert "Traceback" not in err and 'File "' not in err
    assert "replaybook door: MCP SDK: Failed to parse JSONRPC message from server (ValidationError: " in err


def test_an_id_already_in_flight_is_refused_whatever_the_method(hostile):
    from .conftest import validate_lines

    door = hostile["start"]()
    door.initialize()
    # a call in flight, then a ping with its id: the ping's answer must not be taken for the call's
    door.request("tools/call", {"name": "slow", "arguments": {"path": "demo/a", "seconds": 1}}, rid=20)
    door.request("ping", rid=20)
    refused = door.recv()
    assert refused["id"] == 20 and refused["error"]["code"] == -32600 and "in flight" in refused["error"]["message"]
    slow = door.recv()
    assert slow["id"] == 20 and slow["result"]["content"][0]["text"] == "slow done"
    # a listing in flight, then a call with its id: refused and logged, the listing answered
    door.request("prompts/list", rid=30)
    door.request("tools/call", {"name": "echo", "arguments": {"path": "demo/a"}}, rid=30)
    call = door.recv()
    assert call["id"] == 30 and "door:invalid-request" in call["error"]["message"]
    assert door.recv() == {"jsonrpc": "2.0", "id": 30, "result": {"prompts": []}}
    assert door.close() == 0
    assert [m.get("method") for m in hostile["seen"]() if m.get("id") in (20, 30)] == ["tools/call", "prompts/list"]
    lines = validate_lines(hostile["log"]())
    assert [(o["tool"], o["decision"], o["rule"], o["rows"], o["error"]) for o in lines] == [
        ("slow", "allow", "allow-demo", 1, None),
        ("echo", "deny", "door:invalid-request", None, "request id already in flight")]


def test_the_servers_own_question_cannot_answer_the_doors(hostile):
    """A server sends the client an elicitation with the id the door's question will have; the
    user approves the server's harmless question and declines the door's."""
    import json

    from .conftest import validate_lines

    door = hostile["start"]()
    params = {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
              "clientInfo": {"name": "raw-test", "version": "0"}}
    door.request("initialize", params, rid=1)
    door.recv()
    door.notify("notifications/initialized")
    benign = {"message": "Shall I use metric units?", "requestedSchema": {"type": "object", "properties": {
        "approve": {"type": "boolean"}}}}
    door.request("tools/call", {"name": "storm", "arguments": {
        "count": 1, "method": "elicitation/create", "id": "replaybook-door-ask-1", "params": benign}}, rid=2)
    servers = door.recv()
    assert servers["method"] == "elicitation/create" and servers["params"]["message"] == benign["message"]
    door.request("tools/call", {"name": "echo", "arguments": {"path": "private/salaries.csv"}}, rid=3)
    doors = door.recv()
    assert doors["method"] == "elicitation/create" and "ask-before-echoing-private" in doors["params"]["message"]
    for question, approve in ((servers, True), (doors, False)):
        door.send_raw(json.dumps({"jsonrpc": "2.0", "id": question["id"], "result": {
            "action": "accept", "content": {"approve": approve}}}).encode())
    answers = {m["id"]: m for m in (door.recv(), door.recv())}
    assert answers[3]["result"]["isError"] and "the user declined it" in str(answers[3])
    assert answers[2]["result"]["content"][0]["text"] == "1 answers"
    assert door.close() == 0
    assert {"path": "private/salaries.csv"} not in _calls_seen(hostile["seen"]())
    lines = validate_lines(hostile["log"]())
    assert sorted((o["tool"], o["decision"], o.get("approval") or "") for o in lines) == [
        ("echo", "deny", "declined"), ("storm", "allow", "")]


def test_a_server_to_client_request_storm_passes_and_calls_are_still_decided(hostile):
    import json

    door = hostile["start"]()
    door.initialize()
    door.request("tools/call", {"name": "storm", "arguments": {"count": 500}}, rid=2)
    n = 0
    while True:
        m = door.recv()
        if "method" in m:
            n += 1
            door.send_raw(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"roots": []}}).encode())
            continue
        break
    assert (n, m["id"], m["result"]["content"][0]["text"]) == (500, 2, "500 answers")
    assert "deny-dotenv" in str(door.call("echo", {"path": "reference/.env"}, rid=3))
    assert door.close() == 0


def test_a_client_that_hangs_up_mid_call_leaves_the_call_logged(hostile):
    from .conftest import validate_lines

    door = hostile["start"]()
    door.initialize()
    door.request("tools/call", {"name": "hang", "arguments": {"path": "demo/a"}}, rid=2)
    door.request("tools/call", {"name": "slow", "arguments": {"path": "demo/b", "seconds": 0.5}}, rid=3)
    assert door.close() == 0  # stdin closed with both in flight
    lines = validate_lines(hostile["log"]())
    assert sorted((o["tool"], o["decision"], o["rows"], o["error"]) for o in lines) == [
        ("hang", "allow", None, "the client closed the connection before the answer"),
        ("slow", "allow", 1, None)]  # answered within the door's grace period: logged as answered


def test_a_call_the_server_does_not_answer_within_the_call_timeout_is_answered_and_logged(hostile):
    """Without a bound, a server that never answers one call left the client waiting forever.
    With --call-timeout, the call is logged as not answered in time, the client gets a JSON-RPC
    error (-32001), the server a notifications/cancelled for it, and an answer that comes after
    that is dropped and said on stderr — it does not reach the client as another call's."""
    import time

    from .conftest import validate_lines

    door = hostile["start"](extra=["--call-timeout", "0.5"])
    door.initialize()
    t0 = time.monotonic()
    door.request("tools/call", {"name": "hang", "arguments": {"path": "demo/a"}}, rid=2)
    door.request("tools/call", {"name": "slow", "arguments": {"path": "demo/b", "seconds": 1.5}}, rid=3)
    got = sorted([door.recv(timeout=5), door.recv(timeout=5)], key=lambda m: m["id"])
    assert time.monotonic() - t0 < 1.4  # (before the slow answer)
    assert [(m["id"], m["error"]["code"]) for m in got] == [(2, -32001), (3, -32001)]
    assert "did not answer within 0.5 s" in got[0]["error"]["message"]
    time.sleep(1.5)  # the slow call's late answer comes, and is dropped
    ok = door.call("echo", {"path": "demo/c"}, rid=4)
    assert ok["result"]["structuredContent"] == {"received": {"path": "demo/c"}}
    assert door.close() == 0
    lines = validate_lines(hostile["log"]())
    assert [(o["tool"], o["decision"], o["rows"], o["error"]) for o in lines] == [
        ("hang", "allow", None, "no answer from the upstream MCP server within 0.5 s (--call-timeout): "
                                "the client was answered with an error"),
        ("slow", "allow", None, "no answer from the upstream MCP server within 0.5 s (--call-timeout): "
                                "the client was answered with an error"),
        ("echo", "allow", 1, None)]
    assert all(500 <= o["duration_ms"] < 1400 for o in lines[:2])
    cancels = [m["params"] for m in hostile["seen"]() if m.get("method") == "notifications/cancelled"]
    assert [c["requestId"] for c in cancels] == [2, 3]
    assert "the MCP server answered id 3 after the door's --call-timeout (0.5 s): dropped" in hostile["err"]()


def test_the_call_timeout_answers_every_call_when_the_server_stops_reading(hostile):
    """A server stuck for good stops reading its stdin.  The door's notifications/cancelled for
    the first call that timed out could then not be delivered, and waiting to deliver it held back
    every later call's timeout: the calls behind it were never answered nor logged, and the client
    waited forever — the very case --call-timeout is for."""
    import signal
    import time

    from .conftest import validate_lines

    door = hostile["start"](extra=["--call-timeout", "0.5"])
    door.initialize()
    door.request("tools/call", {"name": "wedge", "arguments": {"path": "demo/a"}}, rid=2)
    time.sleep(0.2)  # (the server has stopped reading: the next call fills its stdin's pipe)
    door.request("tools/call", {"name": "echo", "arguments": {"path": "demo/b", "pad": "p" * 300_000}}, rid=3)
    door.request("tools/call", {"name": "echo", "arguments": {"path": "demo/c"}}, rid=4)
    got = sorted(((m := door.recv(timeout=5))["id"], m["error"]["code"]) for _ in range(3))
    assert got == [(2, -32001), (3, -32001), (4, -32001)]
    door.proc.send_signal(signal.SIGTERM)
    assert door.proc.wait(20) == 143
    lines = validate_lines(hostile["log"]())
    assert [(o["tool"], o["error"]) for o in lines] == [
        (tool, "no answer from the upstream MCP server within 0.5 s (--call-timeout): the client was answered "
               "with an error") for tool in ("wedge", "echo", "echo")]
    assert "Traceback" not in hostile["err"]()


def test_a_timed_out_calls_id_used_again_by_a_request_passed_through_gets_its_answer(hostile):
    """After a call timed out, its id was kept to drop the server's late answer — ahead of a request
    passed through (``tools/list``) that used the id again, whose answer was then dropped in its
    place: the client waited forever.  An id used again is the new request's, as for a call."""
    door = hostile["start"](extra=["--call-timeout", "0.3"])
    door.initialize()
    door.request("tools/call", {"name": "hang", "arguments": {"path": "demo/a"}}, rid=2)
    assert door.recv(timeout=5)["error"]["code"] == -32001
    door.request("tools/list", rid=2)
    ans = door.recv(timeout=5)
    assert ans["id"] == 2 and [t["name"] for t in ans["result"]["tools"]][:3] == ["echo", "spoof", "storm"]
    assert door.close() == 0


def test_many_calls_timing_out_as_their_answers_come_get_one_answer_and_one_line_each(hostile):
    """Calls whose answers come at the moment their time is up (and others never answered): each
    gets exactly one answer — the server's or the door's timeout error — and one log line that
    says which, never both nor none."""
    from .conftest import validate_lines

    door = hostile["start"](extra=["--call-timeout", "0.5"])
    door.initialize()
    n = 60
    for i in range(n):
        if i % 3 == 0:
            door.request("tools/call", {"name": "hang", "arguments": {"path": f"demo/{i}"}}, rid=10 + i)
        else:
            door.request("tools/call", {"name": "slow", "arguments": {"path": f"demo/{i}", "seconds": 0.5}},
                         rid=10 + i)
    got = [door.recv(timeout=10) for _ in range(n)]
    with pytest.raises(TimeoutError):
        door.recv(timeout=1.5)  # (no second answer to any call)
    assert sorted(m["id"] for m in got) == list(range(10, 10 + n))
    timed_out = {m["id"] for m in got if "error" in m}
    assert all(m["error"]["code"] == -32001 for m in got if "error" in m)
    assert {10 + i for i in range(0, n, 3)} <= timed_out
    assert door.close() == 0
    lines = validate_lines(hostile["log"]())
    assert len(lines) == n
    by_path = {o["arguments"]["path"]: o for o in lines}
    for i in range(n):
        o = by_path[f"demo/{i}"]
        if 10 + i in timed_out:
            assert o["error"].startswith("no answer from the upstream MCP server within 0.5 s") and o["rows"] is None
        else:
            assert o["error"] is None and o["rows"] == 1


def test_a_call_the_client_cancelled_is_not_timed_out_too(hostile):
    """A call the client cancels before its time is up is logged once, as cancelled: its timeout
    later neither answers the client nor writes a second line."""
    from .conftest import validate_lines

    door = hostile["start"](extra=["--call-timeout", "0.4"])
    door.initialize()
    door.request("tools/call", {"name": "hang", "arguments": {"path": "demo/a"}}, rid=2)
    door.notify("notifications/cancelled", {"requestId": 2, "reason": "user pressed Esc"})
    with pytest.raises(TimeoutError):
        door.recv(timeout=1.2)
    assert door.call("echo", {"path": "demo/b"}, rid=3)["result"]["structuredContent"] == {
        "received": {"path": "demo/b"}}
    assert door.close() == 0
    lines = validate_lines(hostile["log"]())
    assert [(o["tool"], o["error"]) for o in lines] == [
        ("hang", "cancelled by the client before the answer: user pressed Esc"), ("echo", None)]


def test_bytes_that_are_not_utf8_from_either_side_are_said_on_stderr(hostile):
    """The MCP SDK's stdio transport reads a server's bytes that are not UTF-8 as U+FFFD without a
    word, and the door passed a client's such bytes (in a message it does not decide) on the same
    way: the agent got, or the server was sent, other text than was written, and nothing said so."""
    from .conftest import validate_lines

    door = hostile["start"]()
    door.initialize()
    got = door.call("latin1", {"path": "demo/a", "text": "caf\u00e9 cr\u00e8me"}, rid=2)
    assert got["result"]["content"][0]["text"] == "caf\ufffd cr\ufffdme"  # (what the SDK made of it)
    ok = door.call("echo", {"path": "demo/b"}, rid=3)  # (nothing to say about this one)
    assert ok["result"]["structuredContent"] == {"received": {"path": "demo/b"}}
    door.send_raw(b'{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":"\xff"}}')
    assert door.recv()["id"] == 4
    assert door.close() == 0
    err = hostile["err"]()
    assert ("the MCP server's answer to id 2 (call 1, latin1) held 2 bytes that are not UTF-8: the MCP SDK read "
            "them as U+FFFD, which the client gets in their place") in err
    assert "id 3" not in err
    assert ("the client's request 'ping' (id 4) held bytes that are not UTF-8: passed on with U+FFFD in their "
            "place") in err
    assert [m.get("params") for m in hostile["seen"]() if m.get("method") == "ping"] == [{"x": "\ufffd"}]
    assert len(validate_lines(hostile["log"]())) == 2


def test_the_door_still_relays_when_the_sdks_stdio_parameters_cannot_take_its_codec_handler(hostile, monkeypatch):
    """The door gives the MCP SDK's stdio client a codec error handler of its own by copying the
    SDK's ``StdioServerParameters`` (a pydantic model) without validation.  An SDK whose
    parameters are no longer such a model made the door die with a Python traceback before
    relaying anything; it must fall back to the SDK's own ``replace``, and say that such bytes
    then go unsaid."""
    import os

    shim = hostile["tmp"] / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import dataclasses, pathlib\n"
        "import mcp.client.stdio as s\n"
        "@dataclasses.dataclass\n"
        "class StdioServerParameters:\n"
        "    command: str\n"
        "    args: list = dataclasses.field(default_factory=list)\n"
        "    env: dict | None = None\n"
        "    cwd: str | pathlib.Path | None = None\n"
        "    encoding: str = 'utf-8'\n"
        "    encoding_error_handler: str = 'strict'\n"
        "s.StdioServerParameters = StdioServerParameters\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(shim), *filter(None, [os.environ.get("PYTHONPATH")])]))
    door = hostile["start"]()
    door.initialize()
    got = door.call("latin1", {"path": "demo/a", "text": "caf\u00e9"}, rid=2)
    assert got["result"]["content"][0]["text"] == "caf\ufffd"  # ("replace", as the SDK reads it)
    assert door.close() == 0
    err = hostile["err"]()
    assert "Traceback" not in err and "internal error" not in err
    assert ("this MCP SDK's stdio client cannot be given the door's codec error handler: bytes from the server "
            "that are not UTF-8 are read as U+FFFD and not said") in err
    assert "held 1 byte" not in err


def test_a_server_that_dies_leaves_no_request_unanswered(hostile, monkeypatch):
    """The server exits with a call and a passed-through request (prompts/list) in flight: the
    call is logged, and both are answered with the reason — the passed-through one had been left
    unanswered, its client seeing only a closed pipe — and the door exits 1."""
    import os
    import signal
    import time

    from .conftest import validate_lines

    pidfile = hostile["tmp"] / "server.pid"
    monkeypatch.setenv("HOSTILE_SERVER_PID", str(pidfile))
    door = hostile["start"]()
    door.initialize()
    door.request("tools/call", {"name": "hang", "arguments": {"path": "demo/a"}}, rid=2)
    door.request("prompts/list", rid=3)  # (answered after a second)
    time.sleep(0.3)
    os.kill(int(pidfile.read_text()), signal.SIGKILL)
    got = sorted([door.recv(), door.recv()], key=lambda m: m["id"])
    assert [(m["id"], m["error"]["message"]) for m in got] == [
        (2, "the upstream MCP server exited before answering"), (3, "the upstream MCP server exited before answering")]
    assert door.close() == 1
    lines = validate_lines(hostile["log"]())
    assert [(o["object"], o["error"]) for o in lines] == [
        ("demo/a", "the upstream MCP server closed the connection before answering")]


def test_a_call_the_client_cancels_is_logged_as_cancelled_at_once(hostile):
    """A server that honours notifications/cancelled never answers the call (the MCP SDKs do
    not): its line is written when the client cancels, not at the end of the session, and the
    door does not wait for that answer on the way down."""
    import time

    from .conftest import validate_lines

    door = hostile["start"]()
    door.initialize()
    door.request("tools/call", {"name": "hang", "arguments": {"path": "demo/a"}}, rid=2)
    door.request("tools/call", {"name": "hang", "arguments": {"path": "demo/b"}}, rid=3)
    door.notify("notifications/cancelled", {"requestId": 2, "reason": "the user pressed Esc"})
    door.notify("notifications/cancelled", {"requestId": "3"})  # (the SDKs read "3" as id 3 too)
    assert door.call("echo", {"path": "demo/c"}, rid=4)["result"]["structuredContent"] == {
        "received": {"path": "demo/c"}}
    lines = validate_lines(hostile["log"]())
    assert [(o["seq"], o["arguments"], o["decision"], o["rows"], o["error"]) for o in lines] == [
        (1, {"path": "demo/a"}, "allow", None, "cancelled by the client before the answer: the user pressed Esc"),
        (2, {"path": "demo/b"}, "allow", None, "cancelled by the client before the answer"),
        (3, {"path": "demo/c"}, "allow", 1, None)]
    t0 = time.monotonic()
    assert door.close() == 0
    assert time.monotonic() - t0 < 4  # (the door waits up to 5 s for calls still unanswered)
    assert len(validate_lines(hostile["log"]())) == 3
    cancels = [m["params"] for m in hostile["seen"]() if m.get("method") == "notifications/cancelled"]
    assert cancels == [{"requestId": 2, "reason": "the user pressed Esc"}, {"requestId": "3"}]  # passed on


def test_a_line_the_door_cannot_read_is_answered_to_its_own_top_level_id(hostile):
    """The id an over-long or broken line is answered to is the member of its top-level object,
    wherever the client writes it (the TypeScript MCP SDK writes it after params, past the bytes
    the door keeps of an over-long line) — never an argument named id, which would answer another
    request of the client's and leave this one waiting."""
    import json

    door = hostile["start"](extra=["--max-message-bytes", "2000"])
    door.initialize()
    pad = "z" * 5000
    for rid, args in [(7, {"path": "demo/a", "text": pad}), (8, {"id": 3, "path": "demo/a", "text": pad})]:
        door.send_raw(json.dumps({"method": "tools/call", "params": {"name": "echo", "arguments": args},
                                  "jsonrpc": "2.0", "id": rid}).encode())
        got = door.recv()
        assert (got["id"], got["error"]["code"]) == (rid, -32600)
        assert "door:message-too-large" in got["error"]["message"]
    door.send_raw(json.dumps({"jsonrpc": "2.0", "id": "nine", "method": "tools/call", "params": {
        "name": "echo", "arguments": {"id": 4, "method": "ping", "text": pad}}}).encode())
    assert door.recv()["id"] == "nine"
    door.send_raw(b'{"method":"tools/call","params":{"name":"echo","arguments":{"id":4,"x":tru}},"jsonrpc":"2.0","id":10}')
    broken = door.recv()
    assert (broken["id"], broken["error"]["code"]) == (10, -32700)
    door.send_raw(b'{"method":"tools/call","params":{"arguments":{"id":4,"x":"' + b"q" * 5000 + b'"')  # cut short
    assert door.recv()["id"] is None  # (its own id is nowhere: JSON-RPC's null, not the argument's 4)
    assert door.close() == 0


def test_a_call_cancelled_while_its_user_is_asked_is_never_passed_on(hostile):
    """The user approving after the agent gave the call up must not run it: the call is refused
    (approval cancelled), the question withdrawn, and the late answer reaches no server."""
    import json

    from .conftest import validate_lines

    door = hostile["start"]()
    door.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
                                "clientInfo": {"name": "raw-test", "version": "0"}}, rid=1)
    door.recv()
    door.notify("notifications/initialized")
    door.request("tools/call", {"name": "echo", "arguments": {"path": "private/x"}}, rid=5)
    question = door.recv()
    assert question["method"] == "elicitation/create"
    door.notify("notifications/cancelled", {"requestId": 5, "reason": "gave up"})
    withdrawn = door.recv()
    assert withdrawn["method"] == "notifications/cancelled"
    assert withdrawn["params"]["requestId"] == question["id"]
    door.send_raw(json.dumps({"jsonrpc": "2.0", "id": question["id"],
                              "result": {"action": "accept", "content": {"approve": True}}}).encode())
    assert door.call("echo", {"path": "demo/a"}, rid=6)["id"] == 6  # (the cancelled call got no answer)
    assert door.close() == 0
    assert _calls_seen(hostile["seen"]()) == [{"path": "demo/a"}]
    assert [m for m in hostile["seen"]() if "method" not in m] == []  # the late answer stayed with the door
    lines = validate_lines(hostile["log"]())
    assert [(o["arguments"], o["decision"], o["rule"], o.get("approval"), o["error"]) for o in lines] == [
        ({"path": "private/x"}, "deny", "ask-before-echoing-private", "cancelled",
         "cancelled by the client before the answer: gave up"),
        ({"path": "demo/a"}, "allow", "allow-demo", None, None)]


# -- a log that cannot be written, evidence that cannot be kept ----------------------------------------

@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_door_stopped_by_a_signal_logs_its_calls_in_flight_and_stops_its_server(hostile, monkeypatch, signame):
    import signal
    import time

    from .conftest import validate_lines

    pidfile = hostile["tmp"] / "server.pid"
    monkeypatch.setenv("HOSTILE_SERVER_PID", str(pidfile))
    door = hostile["start"]()
    door.initialize()
    assert door.call("echo", {"path": "demo/a"}, rid=2)["result"]["isError"] is False
    door.request("tools/call", {"name": "hang", "arguments": {"path": "demo/b"}}, rid=3)
    door.request("tools/call", {"name": "hang", "arguments": {"path": "demo/c"}}, rid=4)
    door.request("ping", rid=5)
    assert door.recv()["id"] == 5  # both calls are with the server by now
    server = int(pidfile.read_text())
    door.proc.send_signal(getattr(signal, signame))
    assert door.proc.wait(30) == 128 + getattr(signal, signame).value
    lines = validate_lines(hostile["log"]())
    assert [(o["seq"], o["object"], o["error"]) for o in lines] == [
        (1, "demo/a", None),
        (2, "demo/b", f"the door was stopped ({signame}) before the answer"),
        (3, "demo/c", f"the door was stopped ({signame}) before the answer"),
    ]
    assert f"stopped by {signame}" in hostile["err"]()
    deadline = time.monotonic() + 10
    while Path(f"/proc/{server}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # (the door has reaped it: its /proc entry goes once it is waited for)
    assert not Path(f"/proc/{server}").exists(), "the MCP server outlived the door"


def test_a_refusal_in_progress_when_the_door_is_stopped_is_logged(hostile):
    """A call refused while the door waits for the server to name itself (an initialize still
    unanswered) is in no table of calls in flight: the signal that stops the door must not
    lose its line."""
    import signal
    import time

    from .conftest import validate_lines

    door = hostile["start"]()
    door.request("ping", rid=0)
    assert door.recv()["id"] == 0  # (the door is up, its signal handlers in place)
    door.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "raw-test", "version": "0"}, "_garble": []}, rid=1)
    door.request("tools/call", {"name": "echo", "arguments": {"path": "reference/.env"}}, rid=2)
    time.sleep(1.0)  # (the door waits up to 5 s for the initialize answer before it writes the refusal)
    door.proc.send_signal(signal.SIGTERM)
    assert door.proc.wait(30) == 128 + signal.SIGTERM.value
    lines = validate_lines(hostile["log"]())
    assert [(o["seq"], o["object"], o["decision"], o["rule"]) for o in lines] == [
        (1, "reference/.env", "deny", "deny-dotenv")]


def test_no_line_sent_after_the_stop_signal_is_decided(hostile):
    """A client that keeps sending refusals after SIGTERM (each one waits for the server's name,
    where the stop reaches it) must not keep the door deciding: it stops at the line in hand."""
    import signal
    import threading
    import time

    from .conftest import validate_lines

    door = hostile["start"]()
    door.request("ping", rid=0)
    assert door.recv()["id"] == 0  # (the door is up, its signal handlers in place)
    door.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "raw-test", "version": "0"}, "_garble": []}, rid=1)
    line = (b'{"jsonrpc":"2.0","id":"r%d","method":"tools/call","params":{"name":"echo",'
            b'"arguments":{"path":"reference/.env"}}}\n')
    flooding = threading.Event()
    flooding.set()

    def flood():
        n = 0
        while flooding.is_set():
            try:
                door.proc.stdin.write(line % n)
                door.proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                return
            n += 1
            time.sleep(0.0005)

    drain = threading.Thread(target=lambda: door.proc.stdout.read(), daemon=True)
    drain.start()
    sender = threading.Thread(target=flood, daemon=True)
    sender.start()
    time.sleep(0.5)
    door.proc.send_signal(signal.SIGTERM)
    try:
        assert door.proc.wait(20) == 128 + signal.SIGTERM.value  # (it went on while the client sent)
    finally:
        flooding.clear()
    assert len(validate_lines(hostile["log"]())) <= 2


def test_the_doors_signal_handlers_leave_an_ignored_signal_ignored_and_give_back_the_ones_before():
    """The door's handlers replaced every disposition it found: a SIGHUP ignored by whoever started
    the door (``nohup``) stopped it all the same, and a program running :func:`run_door` lost its
    own handlers afterwards (SIGTERM then killed it outright)."""
    import os
    import signal
    import types as pytypes

    import anyio

    from replaybook.door.proxy import _stop_signals

    def mine(signum, frame):
        raise AssertionError("the program's own handler ran while the door's was in place")

    door = pytypes.SimpleNamespace(stopped_by=None, _stop_scope=None)
    saved = {s: signal.getsignal(s) for s in (signal.SIGHUP, signal.SIGTERM)}
    seen = {}

    async def main():
        with _stop_signals(door):
            seen["term"] = signal.getsignal(signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGHUP)
            await anyio.sleep(0.1)
            seen["stopped_by"] = door.stopped_by

    try:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, mine)
        anyio.run(main)
        after = signal.getsignal(signal.SIGHUP), signal.getsignal(signal.SIGTERM)
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
    assert seen["term"] is not mine  # (the door's, while it runs)
    assert seen["stopped_by"] is None  # an ignored SIGHUP stays ignored
    assert after == (signal.SIG_IGN, mine)


def test_the_doors_signal_handlers_give_back_an_asyncio_programs_own_handler():
    """A program on asyncio that set its own SIGTERM handler on its loop
    (``loop.add_signal_handler``) and ran the door: on the way out the door set the signal's
    Python-level handler back (asyncio's, which only wakes the loop) but not the loop's handler,
    so SIGTERM did nothing at all afterwards — neither the program's handler nor the default."""
    import asyncio
    import os
    import signal
    import types as pytypes

    from replaybook.door.proxy import _stop_signals

    ran = []
    saved = signal.getsignal(signal.SIGTERM)

    async def main():
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, ran.append, "mine")
        door = pytypes.SimpleNamespace(stopped_by=None, _stop_scope=None)
        try:
            with _stop_signals(door):
                os.kill(os.getpid(), signal.SIGTERM)
                await asyncio.sleep(0.1)
                assert door.stopped_by == "SIGTERM" and ran == []  # (the door's, while it runs)
                raise RuntimeError("the door ends by an exception")
        except RuntimeError:
            pass
        os.kill(os.getpid(), signal.SIGTERM)
        await asyncio.sleep(0.1)
        loop.remove_signal_handler(signal.SIGTERM)

    try:
        asyncio.run(main())
    finally:
        signal.signal(signal.SIGTERM, saved)
    assert ran == ["mine"]


def test_a_second_signal_does_not_cut_the_wind_down_short(hostile):
    """Ctrl-C twice: the second signal must not kill the door half-way through logging the
    calls in flight (300 here), nor turn into a traceback."""
    import signal
    import time

    from .conftest import validate_lines

    door = hostile["start"]()
    door.initialize()
    for i in range(300):
        door.request("tools/call", {"name": "hang", "arguments": {"path": f"demo/h{i}"}}, rid=10 + i)
    door.request("ping", rid=5)
    assert door.recv()["id"] == 5
    door.proc.send_signal(signal.SIGINT)
    time.sleep(0.005)
    door.proc.send_signal(signal.SIGINT)
    assert door.proc.wait(30) == 128 + signal.SIGINT.value
    lines = validate_lines(hostile["log"]())
    assert len(lines) == 300 and {o["error"] for o in lines} == {"the door was stopped (SIGINT) before the answer"}
    assert "Traceback" not in hostile["err"]()


def test_no_call_is_forwarded_while_the_log_cannot_be_opened(hostile):
    (hostile["tmp"] / "logs").mkdir()
    (hostile["tmp"] / "logs" / "analyst").write_text("a file where the agent's log folder should be")
    door = hostile["start"]()
    door.initialize()
    for rid, args in ((2, {"path": "demo/a"}), (3, {"path": "reference/.env"})):
        ans = door.call("echo", args, rid=rid)
        assert ans["error"]["code"] == -32603 and "door:log-failed" in ans["error"]["message"]
    assert door.close() == 0
    assert _calls_seen(hostile["seen"]()) == []  # the server never acted on a call it could not log
    err = hostile["err"]()
    assert "cannot open the call log" in err
    assert err.count("a call log line that could not be written: ") == 2
    assert '"rule":"door:log-failed"' in err and '"rule":"deny-dotenv"' in err


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs a POSIX file size limit")
def test_a_log_that_fails_mid_session_keeps_whole_lines_and_stops_forwarding(hostile, monkeypatch):
    import resource
    import subprocess

    from .conftest import validate_lines

    limit = 4000  # bytes any file the door writes may grow to: the log fills up after a few lines

    real_popen = subprocess.Popen

    def limited(*a, **kw):
        kw["preexec_fn"] = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        return real_popen(*a, **kw)

    monkeypatch.setattr(subprocess, "Popen", limited)
    door = hostile["start"]()
    monkeypatch.setattr(subprocess, "Popen", real_popen)
    door.initialize()
    answered = 0
    for rid in range(2, 40):
        ans = door.call("echo", {"path": f"demo/{rid}.csv", "pad": "x" * 200}, rid=rid)
        if "error" in ans:
            break
        answered += 1
    assert 3 <= answered < 30 and "door:log-failed" in ans["error"]["message"]
    failed_at = rid
    for rid in (100, 101):  # the log is still full: refused, and never forwarded
        later = door.call("echo", {"path": f"demo/{rid}.csv"}, rid=rid)
        assert "door:log-failed" in later["error"]["message"]
    assert door.close() == 0
    seen = [a["path"] for a in _calls_seen(hostile["seen"]())]
    assert seen == [f"demo/{r}.csv" for r in range(2, failed_at + 1)]  # the last one was answered, not logged
    log = hostile["log"]()
    assert log.stat().st_size <= limit and log.read_bytes().endswith(b"\n")
    lines = validate_lines(log)  # whole lines only: the line cut off by the limit was taken back
    assert [o["object"] for o in lines] == [f"demo/{r}.csv" for r in range(2, failed_at)]
    err = hostile["err"]()
    said = "replaybook door: a call log line that could not be written: "
    held = [line[len(said):] for line in err.splitlines() if line.startswith(said)]
    import json

    assert [(json.loads(h)["object"], json.loads(h)["rule"]) for h in held] == [
        (f"demo/{failed_at}.csv", "allow-demo"), ("demo/100.csv", "door:log-failed"), ("demo/101.csv", "door:log-failed")]


def test_an_answer_that_cannot_be_kept_as_evidence_is_not_given_and_says_why(hostile):
    import hashlib

    from replaybook.door.results import evidence_bytes

    from .conftest import validate_lines

    ev = hostile["tmp"] / "evidence"
    (ev / "sha256").mkdir(parents=True)
    # an object planted under the digest of the answer to come, holding other bytes
    answer = {"content": [{"type": "text", "text": '{"path": "demo/a"}'}], "isError": False,
              "structuredContent": {"received": {"path": "demo/a"}}}
    planted = ev / "sha256" / hashlib.sha256(evidence_bytes(answer)).hexdigest()
    planted.write_text("{}")
    door = hostile["start"](evidence=ev)
    door.initialize()
    bad = door.call("echo", {"path": "demo/a"}, rid=2)
    assert bad["error"]["code"] == -32603 and "door:evidence-failed" in bad["error"]["message"]
    ok = door.call("echo", {"path": "demo/b"}, rid=3)  # the door lives on
    assert ok["result"]["structuredContent"] == {"received": {"path": "demo/b"}}
    assert "deny-dotenv" in str(door.call("echo", {"path": "reference/.env"}, rid=4))
    assert door.close() == 0
    lines = validate_lines(hostile["log"]())
    assert [(o["object"], o["decision"], o["rows"], "response_digest" in o) for o in lines] == [
        ("demo/a", "allow", None, False), ("demo/b", "allow", 1, True), ("reference/.env", "deny", None, False)]
    assert lines[0]["error"].startswith("not answered: the door could not keep the answer as evidence: ")
    assert planted.read_text() == "{}"


# -- retention: prune removes what it should, and nothing else ---------------------------------------------

@pytest.fixture
def kept_world(tmp_path):
    """A log root whose one old session shares evidence with sessions prune must keep: one reached
    through a symlinked session file, one in a symlinked agent folder, one by object_digest."""
    from datetime import timedelta

    from replaybook.capsule.store import EvidenceStore

    from .test_retention import NOW, OLD_MTIME, _session

    root, ev = tmp_path / "logs", tmp_path / "evidence"
    store = EvidenceStore(ev)
    d = {k: store.put(f'{{"{k}":1}}'.encode()) for k in ("only_old", "via_link", "via_agent_link", "as_object")}
    for digest in d.values():
        os.utime(store.path(digest), (OLD_MTIME, OLD_MTIME))
    old = _session(root, "analyst", "old", NOW - timedelta(days=90), list(d.values()))
    elsewhere = tmp_path / "elsewhere"
    linked = _session(elsewhere, "a", "linked", NOW - timedelta(days=1), [d["via_link"]])
    (root / "analyst" / "linked.jsonl").symlink_to(linked)
    _session(elsewhere, "b", "in-linked-folder", NOW - timedelta(days=1), [d["via_agent_link"]])
    (root / "auditor").symlink_to(elsewhere / "b")
    recent = _session(root, "analyst", "recent", NOW - timedelta(days=1))
    with open(recent, "ab") as fh:  # a kept line that names the object it read by digest
        fh.write(b'{"ts":"2026-01-01T00:00:00Z","session":"recent","tool":"t","decision":"allow","object_digest":"'
                 + d["as_object"].encode() + b'"}\n')
    os.utime(recent, (OLD_MTIME, OLD_MTIME))
    return {"root": root, "evidence": ev, "store": store, "d": d, "old": old, "linked": linked, "tmp": tmp_path}


def test_prune_keeps_evidence_a_kept_session_references_even_through_a_symlink(kept_world):
    from datetime import timedelta

    from replaybook.door.retention import prune

    w = kept_world
    rep = prune(w["root"], timedelta(days=30), evidence=w["evidence"])
    assert [s.path for s in rep.removed] == [w["old"]] and not w["old"].exists()
    assert {k: w["store"].has(v) for k, v in w["d"].items()} == {
        "only_old": False, "via_link": True, "via_agent_link": True, "as_object": True}
    assert rep.evidence_removed == [w["store"].path(w["d"]["only_old"])]
    assert w["linked"].exists() and (w["root"] / "analyst" / "linked.jsonl").is_symlink()
    assert (w["root"] / "auditor").is_symlink()


def test_prune_reads_no_fifo_behind_a_symlink_and_then_keeps_all_evidence(kept_world):
    from datetime import timedelta

    from replaybook.door.retention import prune

    w = kept_world
    fifo = w["tmp"] / "fifo"
    os.mkfifo(fifo)
    (w["root"] / "analyst" / "pipe.jsonl").symlink_to(fifo)  # opening it to read would wait forever
    rep = prune(w["root"], timedelta(days=30), evidence=w["evidence"])
    assert [s.path for s in rep.removed] == [w["old"]]
    assert rep.evidence_removed == [] and all(w["store"].has(v) for v in w["d"].values())
    assert any("kept all evidence" in line for line in rep.lines())


def test_prune_never_removes_through_a_symlinked_object_or_folder(kept_world):
    from datetime import timedelta

    from replaybook.door.retention import prune

    w = kept_world
    victim = w["tmp"] / "victim.bin"
    victim.write_text("not evidence")
    obj = w["store"].path(w["d"]["only_old"])
    os.chmod(obj, 0o644)
    obj.unlink()
    obj.symlink_to(victim)  # the doomed object is a symlink to a file outside the store
    (w["old"].with_name("old.run.json")).symlink_to(victim)
    rep = prune(w["root"], timedelta(days=30), evidence=w["evidence"])
    assert [s.path for s in rep.removed] == [w["old"]] and rep.evidence_removed == [] and rep.other_removed == []
    assert obj.is_symlink() and victim.read_text() == "not evidence"
    # a store whose sha256/ folder is a symlink: nothing in it is removed
    other = w["tmp"] / "other-store"
    other.mkdir()
    hexname = w["d"]["via_link"][7:]
    (other / hexname).write_text("x")
    fake = w["tmp"] / "fake-evidence"
    fake.mkdir()
    (fake / "sha256").symlink_to(other)
    from .test_retention import NOW, _session

    _session(w["root"], "analyst", "old2", NOW - timedelta(days=90), [w["d"]["via_link"]])
    (w["root"] / "analyst" / "linked.jsonl").unlink()
    rep = prune(w["root"], timedelta(days=30), evidence=fake)
    assert rep.evidence_removed == [] and (other / hexname).read_text() == "x"


def test_prune_keeps_evidence_another_log_root_still_references(tmp_path, data_root, rules_file):
    """Two log roots, one evidence store (content-addressed: the same answer is one object)."""
    from datetime import timedelta

    from replaybook.capsule.store import EvidenceStore
    from replaybook.door.retention import prune

    from .conftest import door_cmd, fixture_server_cmd, run_session, validate_lines
    from .test_retention import NOW, OLD_MTIME, _session

    ev, team_a, team_b = tmp_path / "evidence", tmp_path / "logs-a", tmp_path / "logs-b"

    async def agent(s):
        return await s.call_tool("read_object", {"path": "demo/notes.txt"})

    run_session(door_cmd(rules_file, team_b, fixture_server_cmd(data_root), evidence=ev, session="b1"), agent)
    (line,) = validate_lines(team_b / "analyst" / "b1.jsonl")
    digest = line["response_digest"]
    store = EvidenceStore(ev)
    os.utime(store.path(digest), (OLD_MTIME, OLD_MTIME))
    # team A's old session got the same answer
    old = _session(team_a, "analyst", "a-old", NOW - timedelta(days=90), [digest])
    rep = prune(team_a, timedelta(days=30), evidence=ev)
    assert [s.path for s in rep.removed] == [old] and not old.exists()
    assert store.has(digest) and rep.evidence_removed == []
    assert rep.shared_roots == [team_b.resolve()]
    assert f"read {team_b.resolve()} too (it shares the evidence store): kept the evidence its sessions reference" \
        in rep.lines()


def test_a_session_replaced_while_prune_runs_is_kept_and_so_is_all_evidence(kept_world, monkeypatch):
    from datetime import timedelta

    import replaybook.door.retention as retention

    w = kept_world
    newer = w["tmp"] / "newer.jsonl"
    newer.write_text(w["old"].read_text().replace("old", "newer"))
    real_scan = retention._scan

    def scan_then_swap(fd):
        got = real_scan(fd)
        if os.fstat(fd).st_ino == os.stat(w["old"]).st_ino:
            os.replace(newer, w["old"])  # a door (or a person) puts another file in its place
        return got

    monkeypatch.setattr(retention, "_scan", scan_then_swap)
    rep = retention.prune(w["root"], timedelta(days=30), evidence=w["evidence"])
    assert {s.path: s.status for s in rep.sessions}[w["old"]] == "changed"
    assert "newer" in w["old"].read_text()
    assert rep.evidence_removed == [] and all(w["store"].has(v) for v in w["d"].values())
    assert f"skipped {w['old']} (changed: it was replaced while prune held it: what replaced it is left alone)" \
        in rep.lines()


def test_the_clients_roots_do_not_move_the_server_off_the_rules_roots(npm_fs_server, fs_world, tmp_path):
    """The reference server replaces its folders with the roots the client lists (MCP roots;
    Claude Code lists its working directory): a relative path then names a file the door's
    rules (relative to their roots) never decided on."""
    import anyio
    import mcp_types as types

    from .conftest import door_cmd, run_session

    project = tmp_path / "project"
    (project / "demo").mkdir(parents=True)
    (project / "demo" / "cars.csv").write_text("from the project folder\n")

    def session(cmd):
        asked = anyio.Event()

        async def roots(ctx):
            asked.set()
            return types.ListRootsResult(roots=[types.Root(uri=project.as_uri())])

        async def agent(s):
            await asked.wait()
            folders = []
            for _ in range(20):  # the server updates its folders a moment after the answer
                folders.append(_text(await s.call_tool("list_allowed_directories", {})))
                if str(project) in folders[-1]:
                    break
                await anyio.sleep(0.1)
            return folders[-1], _text(await s.call_tool("read_text_file", {"path": "demo/cars.csv"}))

        return run_session(cmd, agent, list_roots_callback=roots)

    folders, text = session(["node", str(npm_fs_server), str(fs_world["data"])])
    assert str(project) in folders and text == "from the project folder\n"  # without the door, it moves

    rules = tmp_path / "allow-all.yaml"
    rules.write_text(yaml.safe_dump({"roots": [str(fs_world["data"])], "rules": [
        {"id": "allow-all", "decision": "allow", "paths": ["**"]},
        {"id": "allow-listing", "decision": "allow", "tools": "list_allowed_directories"}]}))
    folders, text = session(door_cmd(rules, fs_world["log_root"], ["node", str(npm_fs_server), str(fs_world["data"])],
                                     session="roots"))
    assert str(project) not in folders and str(fs_world["data"]) in folders
    assert text == "name,mpg\nmazda,21\n"


def test_the_clients_roots_pass_when_they_are_the_rules_roots(tmp_path):
    from replaybook.door.calllog import CallLog
    from replaybook.door.proxy import Door

    data = tmp_path / "data"
    data.mkdir()
    door = Door(rules_from_dict({"roots": [str(data)], "rules": []}), CallLog(tmp_path / "logs", "a", "s"))
    door.on_disk = True
    assert door._roots_agree({"roots": [{"uri": data.as_uri()}]})
    assert door._roots_agree({"roots": [{"uri": data.as_uri() + "/"}, ]})
    assert door._roots_agree({"roots": []})  # (the reference server then keeps its folders)
    assert not door._roots_agree({"roots": [{"uri": (tmp_path / "project").as_uri()}]})
    assert not door._roots_agree({"roots": [{"uri": data.as_uri()}, {"uri": (tmp_path / "more").as_uri()}]})
    assert not door._roots_agree({"roots": [{"name": "no uri"}]})
    anywhere = Door(rules_from_dict({"rules": []}), CallLog(tmp_path / "logs", "a", "s2"))
    assert anywhere._roots_agree({"roots": [{"uri": (tmp_path / "project").as_uri()}]})  # the rules claim no roots
    assert not (tmp_path / "logs").exists()
