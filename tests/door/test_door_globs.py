"""Path globs are matched in time linear in the object's length: an object is the agent's to
choose, and a backtracking regex takes minutes on a 64 KiB path for a glob with two ``**``."""

from __future__ import annotations

import random
import re

from replaybook.door.rules import glob_match, glob_regex, rules_from_dict


def test_a_long_path_is_decided_in_time_proportional_to_its_length():
    deny_list = rules_from_dict({"rules": [{"id": "deny-keys", "decision": "deny", "paths": ["**/secrets/**/*.key"]},
                                           {"id": "allow-the-rest", "decision": "allow", "paths": ["**"]}]})
    # "**/secrets/**/*.key" as a backtracking regex takes minutes on this object, hours at 1 MiB
    path = "demo/" + "secrets/" * 20_000 + "x.txt"
    dec = deny_list.decide("tools/call", "read_text_file", {"path": path})
    assert (dec.decision, dec.rule, dec.object) == ("allow", "allow-the-rest", path)
    dec = deny_list.decide("tools/call", "read_text_file", {"path": "demo/" + "secrets/" * 20_000 + "x.key"})
    assert (dec.decision, dec.rule) == ("deny", "deny-keys")
    assert deny_list.decide("tools/call", "read_text_file", {"path": "demo/" + "a" * 200_000}).rule == "allow-the-rest"


def test_the_linear_glob_matcher_agrees_with_the_regex():
    rng = random.Random(20261013)
    atoms = ["a", "b", "/", ".", "*", "**", "**/", "?", "[ab]", "[!a]"]
    for _ in range(3000):
        pattern = "".join(rng.choice(atoms) for _ in range(rng.randint(1, 7)))
        pattern = re.sub(r"\*{3,}", "**", pattern)
        for _ in range(8):
            text = "".join(rng.choice("ab/.") for _ in range(rng.randint(0, 9)))
            assert glob_match(pattern, text) == bool(glob_regex(pattern).match(text)), (pattern, text)
