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
