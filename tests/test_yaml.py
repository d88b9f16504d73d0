"""The YAML reader for user-written files (replaybook._yaml)."""

import pytest
import yaml

from replaybook import _yaml


def test_a_key_written_twice_is_refused_with_both_lines():
    with pytest.raises(_yaml.DuplicateKeyError) as e:
        _yaml.load("a: 1\nb:\n  c: 1\n  c: 2\n")
    assert (e.value.key, e.value.first_line, e.value.problem_mark.line + 1) == ("c", 3, 4)
    assert e.value.problem == ("key 'c' is written twice (lines 3 and 4); YAML keeps only the last, so what the "
                               "first holds would be ignored: merge them into one")
    assert isinstance(e.value, yaml.YAMLError)


def test_otherwise_it_reads_as_safe_load():
    text = "base: &b {x: 1, y: 2}\nitem: {<<: *b, y: 3}\nlist: [{k: 1}, {k: 2}]\n1: one\n'1': text\n"
    assert _yaml.load(text) == yaml.safe_load(text) == {
        "base": {"x": 1, "y": 2}, "item": {"x": 1, "y": 3}, "list": [{"k": 1}, {"k": 2}], 1: "one", "1": "text"}
    with pytest.raises(yaml.constructor.ConstructorError):
        _yaml.load("!!python/object:os.system {}\n")  # still the safe loader


def test_text_that_looks_like_e_notation_stays_text():
    # (yaml.safe_dump writes '2025e1' unquoted, as YAML 1.1 reads it: a capsule saved so must load back
    # as written; only the manifest's seconds read e-notation as numbers: replaybook.incident)
    import yaml as _pyyaml

    from replaybook import _yaml
    doc = {"policy_version": "2025e1", "rule": "1e4"}
    assert _yaml.load(_pyyaml.safe_dump(doc)) == doc


def test_nesting_too_deep_to_read_is_a_yaml_error_with_its_line():
    """PyYAML's reader recurses: 600 nested lists had raised RecursionError (an internal error,
    exit 1, from `join`/`report` on such a manifest) instead of a YAML error naming the line."""
    text = "title: t\ndescription: " + "[" * 600 + "]" * 600 + "\ntranscripts: [a]\n"
    with pytest.raises(_yaml.NestedTooDeepError) as got:
        _yaml.load(text)
    assert isinstance(got.value, yaml.YAMLError)
    assert got.value.problem_mark.line + 1 == 2
    assert _yaml.describe(got.value).startswith("nested too deeply to read: lists or mappings 601 levels deep (column ")
    node, depth = _yaml.load("a: " + "[" * 50 + "]" * 50)["a"], 1  # (50 levels read as ever)
    while node:
        node, depth = node[0], depth + 1
    assert depth == 50


def test_a_manifest_nested_too_deep_is_bad_input_with_its_line(tmp_path, capsys):
    from replaybook.cli import main

    (tmp_path / "incident.yaml").write_text("title: t\ndescription: " + "[" * 600 + "]" * 600
                                            + "\ntranscripts: [t/]\n")
    assert main(["join", str(tmp_path / "incident.yaml")]) == 2
    err = capsys.readouterr().err
    assert "incident.yaml:2" in err and "lists or mappings 601 levels deep" in err and "internal error" not in err


def _alias_bomb(levels: int = 7) -> str:
    """A manifest whose 9-fold nested aliases stand for 9**(levels + 1) strings."""
    lines = ["title: t", "transcripts: [transcripts/]", "principals:", "  a: &a0 [" + ",".join(['"x"'] * 9) + "]"]
    lines += [f"  b{k}: &a{k} [" + ",".join([f"*a{k - 1}"] * 9) + "]" for k in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def test_aliases_that_expand_beyond_bounds_are_a_yaml_error_with_their_line():
    """A 432-byte manifest of nested aliases stood for 43 million strings: the schema check
    walked them all (22 s, 1.2 GB) and its error wrote them out (25 MB)."""
    with pytest.raises(_yaml.AliasExpansionError) as got:
        _yaml.load(_alias_bomb())
    assert isinstance(got.value, yaml.YAMLError)
    assert got.value.problem_mark.line + 1 == 9  # b5: the first list past the bound
    words = _yaml.describe(got.value)
    assert words.startswith("aliases (*name) repeat 54,480,987 values the text does not write out, over the "
                            "100,000 they may: write the values out (column ")
    assert len(words) < 400
    # a list or mapping that holds itself through an alias
    with pytest.raises(_yaml.AliasExpansionError) as got:
        _yaml.load("title: t\nprincipals: &p\n  a: *p\n")
    assert got.value.problem_mark.line + 1 == 2 and "holds itself" in got.value.problem
    # aliases within bounds read as ever (the same object for each)
    data = _yaml.load(_alias_bomb(4))
    assert len(data["principals"]["b4"]) == 9 and data["principals"]["b4"][0] is data["principals"]["b3"]
    assert _yaml.load("base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n") == {"base": {"x": 1}, "other": {"x": 1, "y": 2}}


def test_an_alias_bomb_manifest_is_bad_input_said_quickly(tmp_path, capsys):
    import time

    from replaybook.cli import main

    (tmp_path / "transcripts").mkdir()
    (tmp_path / "incident.yaml").write_text(_alias_bomb())
    t0 = time.monotonic()
    assert main(["join", str(tmp_path / "incident.yaml")]) == 2
    assert time.monotonic() - t0 < 5
    err = capsys.readouterr().err
    assert "incident.yaml:9" in err and "aliases (*name) repeat" in err and len(err) < 1000


def test_a_schema_error_does_not_write_out_a_huge_value():
    from replaybook._schema import first_error_at, package_schema

    where, message = first_error_at(package_schema("incident.v1.json"),
                                    {"title": "t", "transcripts": ["a"], "principals": ["x" * 10] * 100_000})
    assert where == ["principals"]
    assert len(message) <= 300
    assert message.startswith("['xxxxxxxxxx', ") and message.endswith("is not of type 'object'") and " … " in message
