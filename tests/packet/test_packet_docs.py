"""docs/packets.md documents every log field and every built-in normalization rule."""

from __future__ import annotations

from pathlib import Path

from replaybook.packet.claims import FINDING_KINDS, WARNING_KINDS
from replaybook.packet.log import LOG_FIELDS
from replaybook.packet.normalize import BUILTIN_RULES, BUILTIN_VERSION

DOC = Path(__file__).resolve().parents[2] / "docs" / "packets.md"


def test_docs_list_every_field_and_rule():
    text = DOC.read_text()
    for f in LOG_FIELDS:
        assert f"| `{f.name}` |" in text, f.name
    for r in BUILTIN_RULES:
        assert f"| `{r.name}` |" in text, r.name
    assert f"version {BUILTIN_VERSION}" in text
    assert "replaybook packet replay session.jsonl" in text and "replaybook packet claims PR_BODY.md" in text


def test_the_ci_command_is_the_same_in_the_readme_and_sources_rec_sh_with_the_chosen_python():
    text = DOC.read_text()
    readme = (DOC.parents[1] / "README.md").read_text()
    ci = "replaybook packet replay session.jsonl --require-head --head-ignore PR_BODY.md --junit packet-junit.xml"
    assert f"- run: {ci}" in text and ci in readme
    assert "source \"$(python3 -c" not in text
    assert 'source "$("${REPLAYBOOK_PYTHON:-python3}" -c \'import replaybook.packet as p; print(p.REC_SH)\')"' in text


def test_docs_list_every_claims_finding_and_warning():
    text = DOC.read_text()
    for kind in FINDING_KINDS:
        assert f"| `{kind}` | finding |" in text, kind
    for kind in WARNING_KINDS:
        assert f"| `{kind}` | warning |" in text, kind


def test_docs_list_every_program_of_the_secret_argument_table():
    from replaybook.packet.redact import SECRET_ARGS

    text = DOC.read_text()
    section = text[text.index("* **Passwords of known programs.**"):text.index("Replay redacts the same way")]
    for entry in SECRET_ARGS:
        assert f"`{entry.name}`" in section, entry.name
        for program in entry.programs[:1]:
            assert f"`{program}" in section, program


def test_docs_list_every_kind_of_damage_to_the_chain():
    from replaybook.packet.log import CHAIN_KINDS

    text = DOC.read_text()
    section = text[text.index("### The chain"):text.index("### The tree digest")]
    for kind in CHAIN_KINDS:
        assert f"| `{kind}` |" in section, kind


def test_the_rec_sh_example_sets_the_python_that_has_replaybook():
    """After `make demo` replaybook is only in the checkout's venv: the example must say so."""
    text = DOC.read_text()
    example = text[text.index("export SESSION_LOG=session.jsonl"):]
    example = example[:example.index("```")]
    assert example.index("export REPLAYBOOK_PYTHON=<checkout>/.venv/bin/python") < example.index("source ")


def test_project_rules_apply_to_the_whole_output_as_documented(tmp_path):
    from replaybook.packet.normalize import load_rules

    text = DOC.read_text()
    assert "It is applied once to the **whole** output" in text and "(?m)^req-" in text
    (tmp_path / "pyproject.toml").write_text(
        '[tool.replaybook.normalize]\nrules = [{ name = "a", pattern = "^req-\\\\d+", replace = "req-N" },'
        ' { name = "b", pattern = "(?m)^id-\\\\d+", replace = "id-N" }]\n')
    out = load_rules(tmp_path).normalize("req-1 id-1\nreq-2\nid-2").text
    assert out == "req-N id-1\nreq-2\nid-N"  # ^ is the output's start unless (?m)
