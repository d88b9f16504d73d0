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
