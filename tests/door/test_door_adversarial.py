"""An adversarial trial of the door's decisions: calls the rules should refuse, spelled so that a
naive reading lets them through, and protocol tricks that would make the log lie.

Each scenario asserts the secure outcome: refused (and by which rule, naming which object), or
answered with a clear error, with the log line that says so.  The rules here are the two shapes
people write: a deny list (deny these objects, allow the rest of the data root) and an allow
list (allow ``demo/``, refuse everything else by default).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from replaybook.door.rules import DEFAULT_DENY, rules_from_dict

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
        ("move_file", "reference/cars.csv", "deny", "deny-reference"),
        ("read_text_file", "demo/cars.csv", "allow", "allow-the-rest"),
    ]
    assert lines[0]["objects"] == ["demo/env", "reference/.env"]
    assert lines[4]["objects"] == ["demo/cars.csv", "demo/env", "reference/.env"]
    assert lines[5]["objects"] == ["demo/cars.csv", "demo/ref/cars.csv", "reference/cars.csv"]
    assert "objects" not in lines[6]
