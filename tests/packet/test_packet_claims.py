"""The claims linter, including the shared packet-claims case (copied into tests/fixtures/packet/claims)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import replaybook
from replaybook.packet import lint_claims
from replaybook.packet.claims import lint_claims_text, mask_code
from replaybook.packet.cli import packet as packet_cli
from replaybook.packet.errors import PacketLogError

CASE = Path(__file__).resolve().parents[1] / "fixtures" / "packet" / "claims"


def test_packet_claims_case_gives_exactly_the_expected_findings():
    expected = json.loads((CASE / "expected.json").read_text())
    report = lint_claims(CASE / "PR_BODY.md", CASE / "session.jsonl")
    assert [{"seq": f.seq, "kind": f.kind} for f in report.findings] == expected["findings"]
    assert report.accepted_steps == expected["accepted"]
    assert expected["exit_code"] == "non-zero" and report.exit_code == 1
    assert [(f.line, f.kind) for f in report.findings] == [(5, "cites_failing_step"), (6, "cites_missing_step")]
    # the unmarked opening sentence is a warning, not a finding
    assert [(w.line, w.kind, w.sentence) for w in report.warnings] == [
        (1, "unsupported_claim", "Fixes the router fallback.")]


def test_cli_json_and_exit_code():
    res = CliRunner().invoke(packet_cli, ["claims", str(CASE / "PR_BODY.md"), str(CASE / "session.jsonl"),
                                          "--format", "json"])
    assert res.exit_code == 1
    out = json.loads(res.output)
    assert [(f["seq"], f["kind"]) for f in out["findings"]] == [(3, "cites_failing_step"), (7, "cites_missing_step")]
    assert out["accepted_steps"] == [1, 2] and out["markers"] == 4


def test_cli_text_names_file_and_line():
    body = str(CASE / "PR_BODY.md")
    res = CliRunner().invoke(packet_cli, ["claims", body, str(CASE / "session.jsonl")])
    assert res.exit_code == 1
    assert f"{body}:5: error: cites_failing_step: [seq:3] cites step 3 (`ruff check src`), which exited 1" in res.output
    assert res.output.splitlines()[-1] == ("claims: 2 finding(s), 1 warning(s); 4 marker(s): 2 accepted (0 with a "
                                           "warning), 2 with a finding; steps cited only by accepted markers: 1, 2; "
                                           "log unchained")


STEPS = {1: 1, 2: 0, 3: 1}


def test_markers_in_code_and_comments_are_ignored():
    body = ("Done.\n\n```\nexample [seq:9]\n```\n\nUse `[seq:8]` like this.\n\n"
            "<!-- cite with [seq:N] -->\n\n~~~~\n[seq:7]\n~~~\n~~~~\n")
    report = lint_claims_text(body, STEPS)
    assert report.markers == 0 and report.findings == []
    masked = mask_code("a `b [seq:1]` c")
    assert masked == "a " + " " * len("`b [seq:1]`") + " c"


@pytest.mark.parametrize("body,line", [
    # <!-- inside a code span is code: the markers after it count
    ("The template parser now escapes `<!--`.\n\nAll tests pass after the fix [seq:3].\n", 3),
    # CommonMark 0.31.2 §6.6: an inline <!-- without --> (in its paragraph) is literal text
    ("A bare <!-- is now escaped. All tests pass [seq:3].\n", 1),
    ("Escapes <!-- now.\n\nAll tests pass [seq:3]. -->\n", 3),
    # a comment block's --> ends it; the rest of its line is shown (<!--> is a whole comment)
    ("  <!-- note --> All tests pass [seq:3].\n", 1),
    ("<!-->All tests pass [seq:3].\n", 1),
    # read left to right: a backtick inside a comment opens no code span
    ("<!-- ` --> All tests pass [seq:3]. `\n", 1),
    # a comment block holding a fence line: the fence is the comment's, the comment ends at -->
    ("<!--\n```\n-->\nAll tests pass [seq:3].\n", 4),
])
def test_a_comment_opener_that_is_no_comment_hides_no_marker(body: str, line: int):
    report = lint_claims_text(body, STEPS)
    assert report.markers == 1 and [(f.line, f.seq, f.kind) for f in report.findings] == [
        (line, 3, "cites_failing_step")]


def test_comments_hide_the_markers_inside_them_as_commonmark_reads_them():
    # §4.6 type 2: a line beginning with <!-- starts an HTML block that runs to --> or the end
    report = lint_claims_text("Done [seq:2].\n<!-- draft\nAll tests pass [seq:3].\n", STEPS)
    assert report.markers == 1 and report.findings == [] and report.accepted_steps == [2]
    # an inline comment closed in its paragraph, across a line end
    report = lint_claims_text("Done <!-- x\n[seq:3] --> and all tests pass [seq:2].\n", STEPS)
    assert report.markers == 1 and report.findings == [] and report.accepted_steps == [2]
    assert mask_code("a `<!--` b <!-- c --> d") == "a " + " " * 6 + " b " + " " * 10 + " d"


@pytest.mark.parametrize("body,markers", [
    # CommonMark 0.31.2 §4.6, §5: an HTML block starts at the start of a line *after* its container
    # markers, runs to --> (across blank lines) and ends with its list item or block quote
    ("- <!--\n  hidden [seq:1]\n\n  -->\n- Tests pass [seq:2]\n", [(5, 2)]),
    ("- <!-- todo [seq:1]\n", []),
    ("> <!--\n> hidden [seq:1]\n", []),
    ("1.  text\n    <!-- c\n\n    [seq:1]\n    -->\n", []),
    ("- > <!--\n  > [seq:1]\n  > -->\n\nok [seq:2]\n", [(5, 2)]),
    # ... and no further: the comment of a list item or a quote ends where the container does
    ("- item\n  <!-- unclosed\n\nTests pass [seq:1]\n", [(4, 1)]),
    ("> <!-- unclosed\n\nTests pass [seq:1]\n", [(3, 1)]),
    ("> <!-- unclosed\n> more\nTests pass [seq:1]\n", [(3, 1)]),
    # an inline comment ends with its paragraph, which a quote's blank line (">") ends
    ("> a <!-- x\n>\n> [seq:1] -->\n", [(3, 1)]),
    ("- text <!-- x\n\n  [seq:1] -->\n", [(3, 1)]),
    # lazy continuation lines stay in the quote's paragraph, and an inline comment spans them
    ("> a <!-- x\n[seq:1] -->\n", []),
])
def test_comments_in_list_items_and_block_quotes_follow_commonmark(body: str, markers: list):
    from replaybook.packet.claims import cited_markers

    assert cited_markers(body) == markers


@pytest.mark.parametrize("body,markers", [
    # CommonMark 0.31.2 §5.2: a list item begins with at most one blank line, so an item with
    # nothing after its marker ends at a blank line, and what follows is outside it
    ("-\n\n  <!--\n[seq:1]\n-->\nTests pass [seq:2]\n", [(6, 2)]),
    ("1.\n\n   <!--\n[seq:1]\n-->\nTests pass [seq:2]\n", [(6, 2)]),
    ("- \n  \n  <!--\n[seq:1]\n", []),
    ("-\n\n  ```\n[seq:1]\n```\nTests pass [seq:2]\n", [(6, 2)]),
    ("-\r\n\r\n  <!--\r\n[seq:1]\r\n-->\r\nTests pass [seq:2]\r\n", [(6, 2)]),
    ("> -\n>\n>   <!--\n> [seq:1]\n", []),
    # an item whose text starts on the next line holds it, and the blank lines after it
    ("-\n  text\n\n  <!-- x\n\n  [seq:1]\n-->\nTests pass [seq:2]\n", [(8, 2)]),
])
def test_an_empty_list_item_ends_at_a_blank_line_as_commonmark_reads_it(body: str, markers: list):
    from replaybook.packet.claims import cited_markers

    assert cited_markers(body) == markers


@pytest.mark.parametrize("body,markers", [
    # a list item numbered other than 1, or with nothing after its marker, cannot interrupt a
    # paragraph (§5.2), but a line outside the paragraph's list item or quote is no part of it:
    # it starts a list, and an inline comment or code span of the paragraph does not reach it
    ("- a <!-- x\n2. b [seq:1] -->\n", [(2, 1)]),
    ("> a <!-- x\n2) b [seq:1] -->\n", [(2, 1)]),
    ("> Tests pass `x\n-\n[seq:1]`\n", [(3, 1)]),
    # in the paragraph's own container it is the paragraph's text
    ("a <!-- x\n2. b [seq:1] -->\n", []),
    ("- a <!-- x\n  2. b [seq:1] -->\n", []),
    ("> a <!-- x\n> 2) b [seq:1] -->\n", []),
])
def test_a_list_item_after_a_paragraph_in_another_container_starts_a_list(body: str, markers: list):
    from replaybook.packet.claims import cited_markers

    assert cited_markers(body) == markers


@pytest.mark.parametrize("body,markers", [
    # a line of = or - under a paragraph makes it a setext heading (§4.3), which ends there: an
    # inline code span or comment opened in the heading does not reach the lines below it
    ("Title `a\n===\nTests pass [seq:1]`\n", [(3, 1)]),
    ("Summary <!-- x\n-\nTests pass [seq:1] -->\n", [(3, 1)]),
    ("> Title `a\n> ==\n> Tests pass [seq:1]`\n", [(3, 1)]),
    # not an underline: indented four spaces, text after it, or a line outside the quote
    ("Title `a\n    ===\n[seq:1]`\n", []),
    ("Title `a\n=== x\n[seq:1]`\n", []),
    ("> Title `a\n===\n[seq:1]`\n", []),
])
def test_a_setext_heading_ends_at_its_underline(body: str, markers: list):
    from replaybook.packet.claims import cited_markers

    assert cited_markers(body) == markers


@pytest.mark.parametrize("body,markers", [
    # a tab after a list item's marker or a quote's ">", or in a line's indentation under an item,
    # is taken by the markers only up to the content's column (§2.2): the rest of it indents the
    # content, and four columns of it make indented code, not a comment block
    (">\t  <!--\n> Tests pass [seq:1]\n", [(2, 1)]),
    ("-\t  <!--\n  Tests pass [seq:1]\n", [(2, 1)]),
    ("- a\n\t  <!--\n\t  Tests pass [seq:1]\n", [(3, 1)]),
    # with less than four columns left it is a comment block
    (">\t <!--\n> [seq:1]\n", []),
    ("- a\n\t <!--\n\t [seq:1]\n", []),
])
def test_a_tab_after_container_markers_indents_the_content_as_commonmark_reads_it(body: str, markers: list):
    from replaybook.packet.claims import cited_markers

    assert cited_markers(body) == markers


@pytest.mark.parametrize("body,markers", [
    # a line indented four columns past its container's content, where it cannot continue a
    # paragraph, is indented code (§4.4): the reader sees a marker there as code, not a citation
    ("Tests pass [seq:1]\n\n    example [seq:2]\n", [(1, 1)]),
    ("- item\n\n      [seq:1]\n", []),
    ("> a\n>\n>     [seq:1]\n", []),
    # under a paragraph it is the paragraph's text
    ("Tests pass\n    [seq:1]\n", [(2, 1)]),
    ("- a\n    [seq:1]\n", [(2, 1)]),
])
def test_markers_in_indented_code_are_not_citations(body: str, markers: list):
    from replaybook.packet.claims import cited_markers

    assert cited_markers(body) == markers


@pytest.mark.parametrize("body,markers", [
    # a list item in a quote continues on lines indented under it counted from the quote's content,
    # wherever the line's ">" stands (up to three spaces in)
    ("> - ```\n   > Tests pass [seq:1]\n", [(2, 1)]),
    ("   > - <!--\n> Tests pass [seq:1]\n", [(2, 1)]),
    ("> - <!--\n   >   [seq:1]\n", []),
    ("   > - <!--\n>   [seq:1]\n", []),
])
def test_a_list_item_in_a_quote_is_continued_under_the_quotes_content(body: str, markers: list):
    from replaybook.packet.claims import cited_markers

    assert cited_markers(body) == markers


@pytest.mark.parametrize("body,markers", [
    # 200 list items nested on one line, then blank lines: each blank line had been matched against
    # every open item (100 kB took 50 s)
    ("- + " * 200 + "a\n" + "\n" * 100_000 + "Tests pass [seq:1]\n", [(100_002, 1)]),
    # 50,000 list items nested on one line (100 kB) had taken 95 s.  Lines nested deeper than
    # markdown-it-py reads (100 levels: a list item counts two) are kept as prose: their markers count
    ("- " * 50_000 + "Tests pass [seq:1]\n\nDone [seq:2]\n", [(1, 1), (3, 2)]),
    ("> " * 50_000 + "Tests pass [seq:1]\n\nDone [seq:2]\n", [(1, 1), (3, 2)]),
    # a paragraph of 100 kB, with a code span and a comment on each line
    ("Tests `x` pass <!-- y --> [seq:1]\n" * 3_000, [(n, 1) for n in range(1, 3_001)]),
])
def test_reading_a_large_or_deeply_nested_body_takes_well_under_a_second_or_two(body: str, markers: list):
    import time

    from replaybook.packet.claims import cited_markers

    start = time.perf_counter()
    assert cited_markers(body) == markers
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize("body,markers", [
    # CommonMark 0.31.2 §2.4: a backslash before ASCII punctuation shows that character, so the
    # reader sees [seq:1] in all of these (the last two had been a malformed marker and no marker)
    ("Tests pass \\[seq:1].\n", [(1, 1)]),
    ("Tests pass \\[seq:1\\] and \\[seq:2\\].\n", [(1, 1), (1, 2)]),
    ("Tests pass [seq:1\\].\n", [(1, 1)]),
    ("Tests pass [seq\\:1].\n", [(1, 1)]),
    # an escaped backtick opens no code span, an escaped "<" no comment (both had hidden the marker)
    ("A literal \\` here, tests pass [seq:1], then `code`.\n", [(1, 1)]),
    ("\\<!-- not a comment: tests pass [seq:1] -->\n", [(1, 1)]),
    ("Tests pass \\<!-- [seq:1] -->.\n", [(1, 1)]),
    # an escaped backslash escapes nothing after it; in a code span a backslash is no escape
    ("A \\\\`[seq:1]` span, and \\\\<!-- [seq:2] --> a comment.\n", []),
    ("`a\\` tests pass [seq:1].\n", [(1, 1)]),
    ("```\n\\[seq:1\\]\n```\n", []),
    # an escaped marker in a list item, a quote, a heading, on a later line of its paragraph
    ("- a\n  tests pass \\[seq:1\\]\n> b\n> tests pass [seq:2\\]\n# Fix [seq\\:3]\n", [(2, 1), (4, 2), (5, 3)]),
])
def test_backslash_escapes_are_read_as_commonmark_reads_them(body: str, markers: list):
    from replaybook.packet.claims import cited_markers

    assert cited_markers(body) == markers


def test_an_escaped_marker_is_judged_as_the_marker_the_reader_sees():
    report = lint_claims_text("All tests pass [seq:3\\]. It works \\[seq:2\\].\nBuilds [seq:\\2].\n", STEPS)
    assert [(f.line, f.seq, f.kind) for f in report.findings] == [
        (1, 3, "cites_failing_step"), (2, None, "malformed_marker")]  # (\2 is no escape: "2" is no punctuation)
    assert report.findings[0].message.startswith("[seq:3] cites step 3")
    assert report.accepted_steps == [2]
    # the masked text blanks an escape's backslash, but not one that begins a line: "\# text" is a
    # sentence, not a heading (a heading is never an unsupported claim)
    assert mask_code("a \\[seq:1\\] `b`\n\\# c\n") == "a  [seq:1 ]    \n\\# c\n"
    assert [(w.line, w.kind) for w in lint_claims_text("\\# Fixes the crash.\n", STEPS).warnings] == [
        (1, "unsupported_claim")]


@pytest.mark.parametrize("body,markers", [
    # later lines of a paragraph: after a line end, a lazy continuation line, a code span across lines
    ("The fix\nworks and\ntests pass [seq:1].\n", [(3, 1)]),
    ("> The fix works\nand tests pass [seq:1].\n", [(2, 1)]),
    ("Run `pytest\n-q`, and\ntests pass [seq:1].\n", [(3, 1)]),
    ("Done <!-- a\nb --> and\ntests pass [seq:1] <!--\nc --> [seq:2]\n", [(3, 1), (4, 2)]),
    # in list items and block quotes, nested
    ("- a\n- b\n  tests pass [seq:1]\n  1. c\n     d [seq:2]\n", [(3, 1), (5, 2)]),
    ("> a\n> > b\n> > c [seq:1]\n>\n> d `e` [seq:2]\n", [(3, 1), (5, 2)]),
    ("- > a `x`\n  > tests pass [seq:1]\n", [(2, 1)]),
    ("1.\ta\n\n\t`b` [seq:1]\n", [(3, 1)]),
    # after a fence, indented code and a comment block
    ("```\n[seq:9]\n```\nTests pass [seq:1].\n", [(4, 1)]),
    ("- ```\n  [seq:9]\n  ```\n  Tests `x` pass [seq:1].\n", [(4, 1)]),
    ("    [seq:9]\n\nTests pass [seq:1].\n", [(3, 1)]),
    ("<!--\n[seq:9]\n-->\n\n> Tests\n> pass `x` [seq:1]\n", [(6, 1)]),
    # CRLF line ends, headings (a closing #-run, a setext underline)
    ("a\r\n`b`\r\nc [seq:1]\r\n", [(3, 1)]),
    ("## Tests pass `x` [seq:1] ##\n", [(1, 1)]),
    ("Tests `a`\n=====\n\nok `b` [seq:2]\n", [(4, 2)]),
])
def test_markers_are_found_on_the_lines_they_are_on(body: str, markers: list):
    from replaybook.packet.claims import cited_markers

    assert cited_markers(body) == markers
    # a finding names the same line
    report = lint_claims_text(body.replace("[seq:2]", "[seq:1]"), {1: 1, 9: 1})
    assert [f.line for f in report.findings] == [line for line, _seq in markers]


@pytest.mark.parametrize("body,markers", [
    # CommonMark 0.31.2 §5.1: a line outside a quote nested in a quote, indented four columns (where
    # no block starts), continues the quote's paragraph; markdown-it-py read it as indented code
    ("> > The fix works\n    <!-- and tests pass [seq:1]\n", [(2, 1)]),
    ("> > The fix works\n    ```\n    and tests pass [seq:1]\n", [(3, 1)]),
    # §5.2: so does a line outside a list item whose text starts five columns in, indented four
    ("1.   The fix works\n    # and tests pass [seq:1]\n", [(2, 1)]),
    ("10.  Fixed\n    <!-- and tests pass [seq:1]\n", [(2, 1)]),
    # ... but a line indented four columns past the item's own text is indented code in it
    ("- a\n\n      [seq:1]\n", []),
    # §6.6: an inline comment runs to the first -->, whatever dashes come before it; markdown-it-py
    # read the first as text and the second as running on to the second -->
    ("Done <!-- draft [seq:1] ----> and tests pass [seq:2].\n", [(1, 2)]),
    ("Done <!-- a ---> tests pass [seq:1] -->.\n", [(1, 1)]),
])
def test_lines_markdown_it_py_reads_otherwise_are_read_as_commonmark_reads_them(body: str, markers: list):
    from replaybook.packet.claims import cited_markers

    assert cited_markers(body) == markers


def test_markers_are_those_commonmark_js_sees_in_500_generated_bodies():
    """Bodies mixing list items, quotes, fences, code spans, comments, HTML blocks, links, images,
    tabs and escapes, with the markers commonmark.js 0.31.2 shows in each (markers.js beside them):
    half of them read wrongly by the hand-written reader this one replaced, or by markdown-it-py alone."""
    from replaybook.packet.claims import cited_markers

    cases = [json.loads(line) for line in (CASE.parent / "commonmark" / "markers.jsonl").read_text().splitlines()]
    assert len(cases) == 500
    wrong = [(c["body"], c["seqs"], got) for c in cases
             if (got := [seq for _line, seq in cited_markers(c["body"])]) != c["seqs"]]
    assert wrong == []


def test_a_body_markdown_it_py_fails_on_is_an_error_naming_it(tmp_path: Path, monkeypatch):
    from replaybook.errors import InputError
    from replaybook.packet import claims

    # markdown-it-py 4.3.0 raises IndexError on a body ending in an HTML block in a list item in a
    # quote, with no line end after it: the body is read with one
    assert claims.cited_markers("Tests pass [seq:1]\n> - <!--\n>") == [(1, 1)]

    class Failing:
        def parse(self, text, env):
            raise IndexError("string index out of range")

    monkeypatch.setattr(claims, "_markdown", lambda: Failing())
    body = tmp_path / "PR_BODY.md"
    body.write_text("Tests pass [seq:1].\n")
    with pytest.raises(InputError, match=r"cannot read the PR body as Markdown: markdown-it-py \S+ failed "
                                         r"\(IndexError: string index out of range\)"):
        lint_claims(body, CASE / "session.jsonl")
    res = CliRunner().invoke(packet_cli, ["claims", str(body), str(CASE / "session.jsonl")])
    assert res.exit_code == 2 and f"error: {body}: cannot read the PR body as Markdown" in res.output
    assert "Traceback" not in res.output


def test_a_marker_beyond_any_seq_a_log_holds_cites_a_missing_step_not_a_crash(tmp_path: Path):
    huge = "9" * 4301  # more digits than int() converts
    report = lint_claims_text(f"All tests pass [seq:{huge}] and [seq:{2**63}] and [seq:{2**63 - 1}].\n", STEPS,
                              log_path="s.jsonl")
    assert [(f.kind, f.seq) for f in report.findings] == [
        ("cites_missing_step", None), ("cites_missing_step", None), ("cites_missing_step", 2**63 - 1)]
    assert report.findings[0].message == (
        "[seq:999999999999…9999 (4301 digits)] cites step 999999999999…9999 (4301 digits), which is in no log: "
        "a seq is at most 9223372036854775807; cite one s.jsonl holds")
    assert report.findings[1].message.startswith(f"[seq:{2**63}] cites step {2**63}, which is in no log")
    assert report.exit_code == 1 and report.steps_with_findings == [2**63 - 1]
    body, log = tmp_path / "PR_BODY.md", tmp_path / "s.jsonl"
    body.write_text(f"All tests pass [seq:{huge}].\n")
    log.write_text('{"seq":1,"cmd":"pytest -q","exit":0}\n')
    res = CliRunner().invoke(packet_cli, ["claims", str(body), str(log)])
    assert res.exit_code == 1 and f"{body}:1: error: cites_missing_step: [seq:999999999999…9999" in res.output
    res = CliRunner().invoke(packet_cli, ["claims", str(body), str(log), "--format", "json"])
    assert res.exit_code == 1 and [(f["kind"], f["seq"]) for f in json.loads(res.output)["findings"]] == [
        ("cites_missing_step", None)]


def test_unclosed_fence_runs_to_the_end():
    report = lint_claims_text("Text [seq:2].\n```python\n[seq:99]\n", STEPS)
    assert report.markers == 1 and report.findings == [] and report.accepted_steps == [2]


def test_a_line_opening_with_inline_triple_backtick_code_is_no_fence(tmp_path: Path):
    """CommonMark: a backtick fence's info string holds no backtick, so ```ruff check src``` at
    the start of a line is inline code.  Read as a fence that never closes, it hid every marker
    after it — the body linted clean, exit 0, with a failing step cited."""
    body = "```ruff check src``` reports nothing [seq:3].\n\nThe benchmark improved [seq:7].\n"
    (tmp_path / "body.md").write_text(body)
    report = lint_claims(tmp_path / "body.md", CASE / "session.jsonl")
    assert report.markers == 2 and report.exit_code == 1
    assert [(f.seq, f.kind) for f in report.findings] == [(3, "cites_failing_step"), (7, "cites_missing_step")]
    # a real fence (an info string without backticks) still hides what it holds, and a tilde
    # fence may hold backticks in its info string
    assert lint_claims_text("```python\n[seq:99]\n```\nText [seq:2].\n", STEPS).markers == 1
    assert lint_claims_text("~~~ `x`\n[seq:99]\n~~~\nText [seq:2].\n", STEPS).markers == 1


@pytest.mark.parametrize("sentence", [
    "The test fails before the fix [seq:1].",
    "Expected failure: the old router drops the request [seq:1].",
    "A failing test pins the bug [seq:3].",
    "It was red before the change [seq:1].",
    "This reproduces the bug [seq:1].",
    "The new test is expected to fail here [seq:3].",
])
def test_expected_failure_phrasings_accept_failing_steps(sentence: str):
    report = lint_claims_text(sentence, STEPS)
    assert report.findings == [] and len(report.accepted_steps) == 1


def test_marker_after_the_full_stop_belongs_to_the_sentence():
    report = lint_claims_text("The test fails before the fix. [seq:1] It passes after it. [seq:2]", STEPS)
    assert report.findings == [] and report.accepted_steps == [1, 2] and report.warnings == []


def test_failing_step_without_the_words_and_malformed_markers_are_findings():
    body = "# Summary\n\nAll green [seq:1]. Also e.g. this [seq:x].\n\n- Lint is clean [seq:2]\n"
    report = lint_claims_text(body, STEPS)
    assert [(f.line, f.kind, f.seq) for f in report.findings] == [
        (3, "cites_failing_step", 1), (3, "malformed_marker", None)]
    assert report.accepted_steps == [2]


def test_unsupported_claims_are_warnings_only():
    body = "## Tests pass\n\nThe cache is 30% faster.\nDoes it work?\nSee the notes.\nIt works [seq:2].\n"
    report = lint_claims_text(body, STEPS)
    assert report.exit_code == 0
    assert [(w.line, w.sentence) for w in report.warnings] == [(3, "The cache is 30% faster.")]


def test_bad_log_names_file_and_line(tmp_path: Path):
    log = tmp_path / "s.jsonl"
    log.write_text('{"seq": 1, "cmd": "a", "exit": 0}\n{"seq": 1, "cmd": "b", "exit": 0}\n')
    with pytest.raises(PacketLogError, match=r"s\.jsonl:2: seq 1 repeats \(first on line 1\)"):
        lint_claims(CASE / "PR_BODY.md", log)
    log.write_text('{"seq": "1", "cmd": "a", "exit": 0}\n')
    res = CliRunner().invoke(packet_cli, ["claims", str(CASE / "PR_BODY.md"), str(log)])
    assert res.exit_code == 2 and f"{log}:1: field 'seq': '1' is not of type 'integer'" in res.output
    res = CliRunner().invoke(packet_cli, ["claims", str(tmp_path / "nope.md"), str(CASE / "session.jsonl")])
    assert res.exit_code == 2 and "cannot read PR body" in res.output


@pytest.mark.parametrize("sentence", [
    "The new tests fail before the fix [seq:2].",
    "It failed on the old code [seq:2].",
    "This reproduces the bug [seq:2].",
    "The suite was red before the change [seq:2].",
    "The new test is expected to fail [seq:2].",
    "The old parser crashed on empty input [seq:2].",
])
def test_a_failure_claim_citing_a_passing_step_is_a_finding(sentence: str):
    report = lint_claims_text(sentence, STEPS, commands={2: "pytest -q"})
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_passing_step_for_failure", 2)]
    assert report.findings[0].message == ("[seq:2] cites step 2 (`pytest -q`), which exited 0, but the sentence "
                                          "says something fails; cite the step that failed")
    assert report.accepted_steps == [] and report.exit_code == 1


@pytest.mark.parametrize("sentence", [
    "The tests fail before the fix and pass after [seq:1][seq:2].",  # the failure half cites step 1
    "The tests no longer fail [seq:2].",
    "Nothing fails after the fix [seq:2].",
    "The check doesn't fail any more [seq:2].",
    "The fix makes the failing test pass [seq:2].",
    "All tests pass [seq:2].",
])
def test_passing_steps_back_sentences_that_claim_no_failure(sentence: str):
    report = lint_claims_text(sentence, STEPS)
    assert report.findings == [] and 2 in report.accepted_steps


@pytest.mark.parametrize("sentence", [
    "Negation: this is not an expected failure [seq:1].",
    "No xfail here, the tests pass [seq:1].",
    "It never fails before the fix [seq:1].",
])
def test_negated_expected_failure_phrases_do_not_accept_a_failing_step(sentence: str):
    report = lint_claims_text(sentence, STEPS)
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_failing_step", 1)]


def test_claims_warn_about_gaps_in_seq(tmp_path: Path):
    log = tmp_path / "s.jsonl"
    log.write_text('{"seq": 1, "cmd": "a", "exit": 1}\n{"seq": 3, "cmd": "b", "exit": 0}\n')
    body = tmp_path / "b.md"
    body.write_text("It passes [seq:3].\n")
    res = CliRunner().invoke(packet_cli, ["claims", str(body), str(log)])
    assert res.exit_code == 0
    assert (f"warning: {log}:2: seq 2 missing before step 3: the recorder numbers steps without gaps, so a line "
            f"was removed from the log") in res.output.splitlines()
    assert res.output.splitlines()[-1] == ("claims: 0 finding(s), 1 warning(s); 1 marker(s): 1 accepted (0 with a "
                                           "warning), 0 with a finding; steps cited only by accepted markers: 3; "
                                           "log unchained")


@pytest.mark.parametrize("sentence", [
    "The test fails before the fix [seq:1] and passes after [seq:3].",
    "The test fails before the fix [seq:1], but passes after [seq:3].",
    "The test fails before the fix [seq:1]; it passes after [seq:3].",
    "The tests fail before the fix and pass after [seq:1][seq:3].",
    "It fails before the fix and passes after [seq:1].",
    "The failing test passes now [seq:3].",
])
def test_a_failing_step_cited_for_a_pass_is_a_finding_though_the_sentence_names_a_failure(sentence: str):
    """An expected-failure phrase excuses only the step its own clause cites."""
    report = lint_claims_text(sentence, STEPS)
    failing = [(f.kind, f.seq) for f in report.findings]
    assert failing == [("cites_failing_step", failing[0][1])] and failing[0][1] in (1, 3)
    assert report.exit_code == 1


def test_each_marker_is_judged_against_the_clause_it_ends():
    report = lint_claims_text("The test fails before the fix [seq:1] and passes after [seq:3].", STEPS,
                              commands={3: "pytest -q"})
    assert [(f.kind, f.seq, f.message) for f in report.findings] == [(
        "cites_failing_step", 3,
        '[seq:3] cites step 3 (`pytest -q`), which exited 1; describe it as an expected failure ("expected '
        'failure", "fails before the fix" …) or cite a passing step (its clause: "passes after")')]
    assert report.accepted_steps == [1]
    report = lint_claims_text("It fails before the fix and passes after [seq:1].", STEPS)
    assert [f.message for f in report.findings] == [
        '[seq:1] cites step 1, which exited 1, but "It fails before the fix; passes after" says something passes '
        'and no step cited there passed; cite the step that passed']


@pytest.mark.parametrize("sentence", [
    "The bug is reproduced [seq:2].",
    "Without the fix the test does not pass [seq:2].",
    "Before the fix the test was broken [seq:2].",
    "The old code gives the wrong mean [seq:2].",
    "Before the fix, the assertion error shows up [seq:2].",
    "The failing test [seq:2] shows the bug.",
    "Before the fix, test_mean fails [seq:2] and after it passes [seq:2].",
    "The test fails before the fix (see [seq:2]).",
    "It fails before the fix and passes after [seq:2][seq:2].",
])
def test_other_failure_wordings_citing_a_passing_step_are_findings(sentence: str):
    report = lint_claims_text(sentence, STEPS)
    assert [(f.kind, f.seq) for f in report.findings][:1] == [("cites_passing_step_for_failure", 2)]


@pytest.mark.parametrize("sentence", [
    "The test fails before the fix [seq:1] and passes after [seq:2].",
    "The tests fail before the fix and pass after [seq:1][seq:2].",
    "The bug is reproduced [seq:1] and fixed [seq:2].",
    "The test fails before the fix [seq:1]; it passes after [seq:2], as expected.",
])
def test_honest_failing_then_passing_sentences_stay_accepted(sentence: str):
    report = lint_claims_text(sentence, STEPS)
    assert report.findings == [] and report.accepted_steps == [1, 2]


# ----- a pass claim needs a step that ran the check ---------------------------------------------

NON_CHECK = Path(__file__).resolve().parents[1] / "fixtures" / "packet" / "non_check"
CMDS = {1: "pytest -q tests/test_router.py", 2: "pytest -q", 3: "ruff check src", 5: "make"}


@pytest.mark.parametrize("cmd,reason", [
    ('echo "1 passed"', "`echo` only prints"),
    ("printf '1 passed'", "`printf` only prints"),
    ("true", "`true` does nothing"),
    ("cat old-output.txt", "`cat` only reads"),
    ("ls", "`ls` only reads"),
    ("pytest --collect-only", "`pytest --collect-only` only lists tests or fixtures, running none"),
    ("pytest -q; echo done", "it runs pytest, but the step's exit code is that of `echo`, which runs after it"),
    ("pytest -q || true", "it runs pytest, but `||` lets the step exit 0 when it fails"),
    # each exits 0 with a failing test in the repository, running none
    ("pytest -h", "`pytest -h` only prints its help"),
    ("pytest -V", "`pytest -V` only prints its version"),
    ("pytest -q --setup-only", "`pytest --setup-only` only sets up and tears down fixtures, running no test"),
    ("PYTEST_ADDOPTS=--collect-only pytest -q",
     "`pytest --collect-only` only lists tests or fixtures, running none (set by `PYTEST_ADDOPTS`)"),
    ("env PYTEST_ADDOPTS=--co pytest",
     "`pytest --co` only lists tests or fixtures, running none (set by `PYTEST_ADDOPTS`)"),
    ("cargo test -- --list", "`cargo test -- --list` only lists the tests"),
    ("go test -run '^$' ./...",
     "it runs go test (`go test -run '^$'` runs no test: the pattern matches no test's name), a build"),
])
def test_all_tests_pass_citing_a_step_that_runs_no_tests_is_a_finding(cmd: str, reason: str):
    report = lint_claims_text("All tests pass [seq:7].", {7: 0}, commands={7: cmd})
    assert [(f.kind, f.severity, f.line, f.seq) for f in report.findings] == [("cites_non_check_step", "error", 1, 7)]
    assert report.findings[0].message == (
        f"[seq:7] cites step 7 (`{cmd}`), which exited 0 but runs no tests: {reason}; \"All tests pass\" needs a "
        f"cited step that runs them (pytest, npm test, go test …)")
    assert report.accepted_steps == [] and report.exit_code == 1


@pytest.mark.parametrize("cmd", [
    "pytest -q", "python -m pytest", "py.test tests", "tox -e py312", "nox -s tests", "python -m unittest",
    "npm test", "pnpm run test", "yarn test", "npx jest", "npx vitest run", "mocha", "go test ./...",
    "cargo test", "cargo nextest run", "mvn test", "mvn verify", "./gradlew test", "gradle check", "make test",
    "make check", "ctest", "rspec", "bundle exec rspec", "phpunit", "dotnet test", "mix test", "bazel test //...",
    "env CI=1 timeout 600 uv run pytest", "poetry run pytest", "bash -c 'cd tests && pytest -q'",
])
def test_all_tests_pass_citing_a_test_runner_is_accepted(cmd: str):
    report = lint_claims_text("All tests pass [seq:7].", {7: 0}, commands={7: cmd})
    assert report.findings == [] and report.warnings == [] and report.accepted_steps == [7]


@pytest.mark.parametrize("sentence,seq", [
    ("Lint is clean [seq:7].", 3),
    ("ruff is happy and the lint passes [seq:7].", 3),
    ("The build passes [seq:7].", 5),
    ("It builds [seq:7].", 5),
    ("The crate compiles cleanly [seq:7].", 5),
    ("mypy is clean [seq:7].", 4),
    ("The type checks pass [seq:7].", 4),
    ("CI is green [seq:7].", 1),
    ("All checks pass [seq:7].", 3),
])
def test_build_lint_and_type_check_claims_need_their_kind_of_runner(sentence: str, seq: int):
    runners = {1: "pytest", 3: "ruff check src", 4: "mypy src", 5: "cargo build"}
    report = lint_claims_text(sentence, {7: 0}, commands={7: runners[seq]})
    assert report.findings == [] and report.accepted_steps == [7]
    report = lint_claims_text(sentence, {7: 0}, commands={7: "echo ok"})
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_non_check_step", 7)]


def test_a_runner_of_another_kind_does_not_back_the_claim():
    report = lint_claims_text("All tests pass [seq:3].", {3: 0}, commands=CMDS)
    assert [f.message for f in report.findings] == [
        '[seq:3] cites step 3 (`ruff check src`), which exited 0 but runs no tests: it runs ruff check, a lint; '
        '"All tests pass" needs a cited step that runs them (pytest, npm test, go test …)']
    report = lint_claims_text("Lint is clean [seq:2].", {2: 0}, commands=CMDS)
    assert [f.message for f in report.findings] == [
        '[seq:2] cites step 2 (`pytest -q`), which exited 0 but runs no lint: it runs pytest, a test runner; '
        '"Lint is clean" needs a cited step that runs one (ruff check, eslint, npm run lint …)']


def test_one_runner_among_the_cited_steps_backs_the_clause():
    steps = {1: 0, 2: 0}
    report = lint_claims_text("All tests pass [seq:1][seq:2].", steps, commands={1: "cd tests", 2: "pytest"})
    assert report.findings == [] and report.accepted_steps == [1, 2]
    # each claim clause needs its own: pytest backs the tests, nothing backs the lint
    report = lint_claims_text("The tests pass and lint is clean [seq:2].", steps, commands={2: "pytest"})
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_non_check_step", 2)]
    assert '"lint is clean" needs' in report.findings[0].message
    report = lint_claims_text("The tests pass [seq:2] and lint is clean [seq:1].", steps,
                              commands={1: "ruff check .", 2: "pytest"})
    assert report.findings == [] and report.accepted_steps == [1, 2]


@pytest.mark.parametrize("sentence", [
    "It passes after the fix [seq:7].",          # names no check: left to the reviewer
    "The config is copied over [seq:7].",        # claims nothing passes
    "The old output shows the bug [seq:7].",     # a failure claim: judged by the failure rules
])
def test_clauses_that_claim_no_passing_check_are_not_held_to_a_runner(sentence: str):
    report = lint_claims_text(sentence, {7: 0, 8: 1}, commands={7: "cat old-output.txt"})
    assert all(f.kind != "cites_non_check_step" for f in report.findings + report.warnings)


def test_a_step_the_linter_cannot_read_is_a_warning_not_a_finding():
    for cmd, reason in [
        ("./scripts/run-tests.sh", "`./scripts/run-tests.sh` is no test, build, lint or type-check runner the "
                                   "linter knows"),
        ('pytest -k "unclosed', "the command line cannot be parsed (no closing double quote)"),
    ]:
        report = lint_claims_text("All tests pass [seq:7].", {7: 0}, commands={7: cmd})
        assert report.findings == [] and report.accepted_steps == [7] and report.exit_code == 0
        assert [(w.kind, w.severity, w.seq) for w in report.warnings] == [("cites_unrecognised_command", "warning", 7)]
        assert report.warnings[0].message == (
            f"[seq:7] cites step 7 (`{cmd}`), which exited 0, but the linter cannot tell whether it runs tests: "
            f"{reason}; \"All tests pass\" needs a cited step that runs them (pytest, npm test, go test …): cite "
            f"one, or check this step yourself")


def test_without_commands_pass_claims_are_not_held_to_a_runner():
    report = lint_claims_text("All tests pass [seq:7].", {7: 0})
    assert report.findings == [] and report.warnings == [] and report.accepted_steps == [7]


def test_lint_claims_reads_argv_shell_and_pipefail_from_the_log(tmp_path: Path):
    log = tmp_path / "session.jsonl"
    lines = [
        {"seq": 1, "cmd": "pytest -q | tee log", "exit": 0, "shell": "bash", "pipefail": True, "argv": None},
        {"seq": 2, "cmd": "pytest -q | tee log", "exit": 0, "shell": "bash", "pipefail": None, "argv": None},
        {"seq": 3, "cmd": "pytest -q | tee log", "exit": 0},  # a seed-format line: pipefail not known
        {"seq": 4, "cmd": "pytest '|' tee", "exit": 0, "argv": ["pytest", "|", "tee"], "shell": None},
    ]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    body = tmp_path / "PR_BODY.md"
    body.write_text("All tests pass [seq:1].\n\nAll tests pass [seq:2].\n\nAll tests pass [seq:3].\n\n"
                    "All tests pass [seq:4].\n")
    report = lint_claims(body, log)
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_non_check_step", 2)]
    assert "(the log records that the line ran without pipefail)" in report.findings[0].message
    assert [(w.kind, w.seq) for w in report.warnings] == [("cites_unrecognised_command", 3)]
    assert "(the log does not record whether the line ran with pipefail)" in report.warnings[0].message
    assert report.accepted_steps == [1, 3, 4]


def test_cli_end_to_end_names_each_step_that_runs_no_check():
    """The packet CLI, run as a program, on a PR body and command log written for this case."""
    body, log = NON_CHECK / "PR_BODY.md", NON_CHECK / "session.jsonl"
    src = Path(replaybook.__file__).resolve().parents[1]  # this checkout's src, for the child process
    res = subprocess.run([sys.executable, "-m", "replaybook.packet.cli", "claims", str(body), str(log)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(src)}, timeout=120)
    assert res.returncode == 1, res.stderr
    lines = res.stdout.splitlines()
    hint = "(pytest, npm test, go test …)"
    assert lines == [
        f'{body}:4: error: cites_non_check_step: [seq:3] cites step 3 (`echo "1 passed"`), which exited 0 but runs '
        f'no tests: `echo` only prints; "All tests pass" needs a cited step that runs them {hint}',
        "    All tests pass [seq:3].",
        f"{body}:5: error: cites_non_check_step: [seq:5] cites step 5 (`pytest -q | tee pytest.log`), which exited "
        f"0 but runs no tests: it runs pytest, but its exit code is lost in the pipe: the step's exit code is "
        f"`tee`'s (the log records that the line ran without pipefail); \"The full suite is green\" needs a cited "
        f"step that runs them {hint}",
        "    The full suite is green [seq:5], and it stays green with the log kept [seq:9].",
        f"{body}:7: error: cites_non_check_step: [seq:4] cites step 4 (`cat old-output.txt`), which exited 0 but "
        f'runs no tests: `cat` only reads; "The test suite passes on the recorded output" needs a cited step that '
        f"runs them {hint}",
        "    The test suite passes on the recorded output [seq:4].",
        f"{body}:9: error: cites_non_check_step: [seq:7] cites step 7 (`true`), which exited 0 but runs no check: "
        f'`true` does nothing; "CI checks pass" needs a cited step that runs one (pytest, npm test, make check …)',
        "    CI checks pass [seq:7].",
        f"{body}:1: warning: unsupported_claim: this sentence reads like a factual claim but cites no step; add "
        f"[seq:N]",
        "    Fixes the router fallback.",
        f"{body}:8: warning: cites_unrecognised_command: [seq:8] cites step 8 (`./scripts/run-tests.sh`), which "
        f"exited 0, but the linter cannot tell whether it runs tests: `./scripts/run-tests.sh` is no test, build, "
        f'lint or type-check runner the linter knows; "The integration tests pass" needs a cited step that runs '
        f"them {hint}: cite one, or check this step yourself",
        "    The integration tests pass [seq:8].",
        "claims: 4 finding(s), 2 warning(s); 9 marker(s): 5 accepted (1 with a warning), 4 with a finding; "
        "steps cited only by accepted markers: 1, 2, 6, 8, 9; log unchained",
    ]
    res = subprocess.run([sys.executable, "-m", "replaybook.packet.cli", "claims", str(body), str(log),
                          "--format", "json"], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(src)}, timeout=120)
    out = json.loads(res.stdout)
    assert res.returncode == 1 and out["exit_code"] == 1
    assert [(f["kind"], f["seq"], f["line"]) for f in out["findings"]] == [
        ("cites_non_check_step", 3, 4), ("cites_non_check_step", 5, 5), ("cites_non_check_step", 4, 7),
        ("cites_non_check_step", 7, 9)]
    assert [(w["kind"], w["seq"]) for w in out["warnings"]] == [("unsupported_claim", None),
                                                                ("cites_unrecognised_command", 8)]


# ----- a failure claim needs a step whose check failed ------------------------------------------

@pytest.mark.parametrize("sentence", [
    "The test failed before the fix [seq:3].",
    "`pytest tests/test_x.py` fails on main [seq:3].",
    "Reproduced the crash [seq:3].",
    "The new test is red on main [seq:3].",
    "This reproduces the bug [seq:3].",
])
def test_a_failure_claim_citing_a_failing_runner_is_accepted(sentence: str):
    report = lint_claims_text(sentence, {3: 1}, commands={3: "pytest -q tests/test_x.py"})
    assert report.findings == [] and report.warnings == [] and report.accepted_steps == [3]


@pytest.mark.parametrize("cmd,exit,reason", [
    ("false", 1, "`false` only fails"),
    ("exit 1", 1, "`exit` only exits with the code it is given"),
    ('echo "1 failed"; exit 1', 1, "`exit` only exits with the code it is given"),
    ('echo "FAILED test_x.py::test_mean"', 1, "`echo` only prints"),
    ("! pytest -q", 1, "it runs pytest, but `!` inverts the exit code: the step failed because pytest passed"),
    ("pytest -q || false", 1, "it runs pytest, but its failure cannot be the step's exit code"),
    ("pytest -q tests/test_x.py", 4, "`pytest` exits 4 when it is given a test path or an option it cannot find, "
                                     "not when a check fails"),
    ("pytest -q tests/test_x.py", 5, "`pytest` exits 5 when it collects no tests, not when a check fails"),
    ("pytest -q", 2, "`pytest` exits 2 when it was interrupted before any test ran (an error while collecting the "
                     "tests, such as an import error, or Ctrl-C), not when a check fails"),
    ("pytest -q", 127, "it exited 127, the shell's 'command not found': pytest did not run"),
    ("pytest --collect-only", 1, "`pytest --collect-only` only lists tests or fixtures, running none"),
    ("ruff check src", 1, "it runs ruff check, a lint"),
])
def test_a_test_failure_claim_citing_a_step_whose_failure_is_no_test_failure_is_a_finding(cmd: str, exit: int,
                                                                                            reason: str):
    report = lint_claims_text("The test fails before the fix [seq:3].", {3: exit}, commands={3: cmd})
    assert [(f.kind, f.severity, f.seq) for f in report.findings] == [("cites_non_check_step", "error", 3)]
    assert report.findings[0].message == (
        f"[seq:3] cites step 3 (`{cmd}`), which exited {exit} but shows no failing test: {reason}; \"The test fails "
        f"before the fix\" needs a cited step whose tests fail (pytest, npm test, go test …)")
    assert report.accepted_steps == [] and report.exit_code == 1


def test_a_failure_claim_naming_no_check_needs_some_check_to_have_failed():
    # "reproduced the crash" names no kind of check: any runner backs it, a no-op does not
    report = lint_claims_text("Reproduced the crash [seq:2].", {2: 1}, commands={2: "exit 1"})
    assert [f.message for f in report.findings] == [
        '[seq:2] cites step 2 (`exit 1`), which exited 1 but shows no failing check: `exit` only exits with the '
        'code it is given; "Reproduced the crash" needs a cited step whose check fails (pytest, npm test, make '
        'check …)']
    for cmd in ("cargo test", "make check", "go vet ./..."):
        assert lint_claims_text("Reproduced the crash [seq:2].", {2: 1}, commands={2: cmd}).accepted_steps == [2]
    # a program the linter does not know (a script that reproduces it): a warning, never a finding
    report = lint_claims_text("The old parser crashed on empty input [seq:2].", {2: 139},
                              commands={2: "python repro.py"})
    assert report.findings == [] and report.accepted_steps == [2]
    assert [w.message for w in report.warnings] == [
        "[seq:2] cites step 2 (`python repro.py`), which exited 139, but the linter cannot tell whether a check "
        "failed: `repro.py` is no test, build, lint or type-check runner the linter knows; \"The old parser crashed "
        "on empty input\" needs a cited step whose check fails (pytest, npm test, make check …): cite one, or check "
        "this step yourself"]


@pytest.mark.parametrize("cmd,pipefail,kind,reason", [
    ("pytest -q | tail -3", True, None, ""),
    ("pytest -q | tee log; exit ${PIPESTATUS[0]}", False, None, ""),
    ("set -e; pytest -q; echo done", False, None, ""),
    ("pytest -q | tee log", False, "cites_non_check_step",
     "it runs pytest, but its exit code is lost in the pipe: the step's exit code is `tee`'s (the log records that "
     "the line ran without pipefail)"),
    ("pytest -q | grep -c passed", True, "cites_unrecognised_command", "its exit code 1 may be `grep`'s rather "
                                                                       "than pytest's"),
    ("cd tests && pytest -q", True, "cites_unrecognised_command", "its exit code 1 may be `cd`'s rather than "
                                                                  "pytest's"),
    ("pytest -q; echo done", False, "cites_non_check_step",
     "it runs pytest, but the step's exit code is that of `echo`, which runs after it"),
])
def test_whose_failure_a_shell_lines_exit_code_is_follows_bash(tmp_path: Path, cmd: str, pipefail: bool,
                                                               kind: str | None, reason: str):
    log = tmp_path / "session.jsonl"
    log.write_text(json.dumps({"seq": 1, "cmd": cmd, "exit": 1, "argv": None, "shell": "bash",
                               "pipefail": pipefail}) + "\n")
    body = tmp_path / "PR_BODY.md"
    body.write_text("The new test fails before the fix [seq:1].\n")
    report = lint_claims(body, log)
    got = [(f.kind, f.message) for f in report.findings + report.warnings]
    if kind is None:
        assert got == [] and report.accepted_steps == [1]
    else:
        assert [k for k, _m in got] == [kind] and f"which exited 1" in got[0][1] and f": {reason}; " in got[0][1]


def test_a_build_or_lint_failure_claim_needs_that_kind_of_runner():
    report = lint_claims_text("The build fails on main [seq:1] and lint is red [seq:2].", {1: 2, 2: 1},
                              commands={1: "make", 2: "ruff check ."})
    assert report.findings == [] and report.accepted_steps == [1, 2]
    report = lint_claims_text("The build fails on main [seq:1].", {1: 1}, commands={1: "pytest -q"})
    assert [f.message for f in report.findings] == [
        '[seq:1] cites step 1 (`pytest -q`), which exited 1 but shows no failing build: it runs pytest, a test '
        'runner; "The build fails on main" needs a cited step whose build fails (make, cargo build, npm run build …)']


def test_a_failure_claim_is_backed_by_one_failing_runner_among_the_cited_steps():
    steps, cmds = {1: 1, 2: 1}, {1: "false", 2: "pytest -q"}
    report = lint_claims_text("The tests fail before the fix [seq:1][seq:2].", steps, commands=cmds)
    assert report.findings == [] and report.accepted_steps == [1, 2]


# ----- "fails with X" / "raises X": X must be in the stored output -----------------------------

def _packet_with_outputs(folder: Path, outputs: dict[int, tuple[int, str, str]]) -> Path:
    """A log in ``folder`` whose steps ``{seq: (exit, cmd, normalized output)}`` stored their
    outputs beside it (none for an empty output)."""
    from replaybook.packet.normalize import out_sha

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "session.outputs").mkdir()
    lines = []
    for seq, (exit, cmd, text) in outputs.items():
        sha = out_sha(text)
        if text:
            (folder / "session.outputs" / f"{sha}.txt").write_text(text)
        lines.append({"seq": seq, "cmd": cmd, "exit": exit, "out_sha": sha, "argv": cmd.split(), "shell": None})
    log = folder / "session.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return log


@pytest.mark.parametrize("sentence", [
    "The test fails with `ZeroDivisionError` before the fix [seq:1].",
    "Before the fix `mean([])` raises ZeroDivisionError [seq:1].",
    'The old code fails with "division by zero" [seq:1].',
    "test_mean failed with ZeroDivisionError [seq:1].",
])
def test_what_a_failure_is_said_to_show_is_found_in_its_stored_output(tmp_path: Path, sentence: str):
    body = tmp_path / "PR_BODY.md"
    body.write_text(sentence + "\n")
    log = _packet_with_outputs(tmp_path / "a", {1: (1, "pytest -q", "F\nE   ZeroDivisionError: division by zero\n"
                                                                      "1 failed in <DUR>")})
    report = lint_claims(body, log)
    assert report.findings == [] and report.accepted_steps == [1]
    log = _packet_with_outputs(tmp_path / "b", {1: (1, "pytest -q", "F\nE   AssertionError: 3 != 4\n1 failed")})
    report = lint_claims(body, log)
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_output_without_text", 1)]
    said = next(t for t in ("ZeroDivisionError", "division by zero") if t in sentence)
    assert report.findings[0].message.startswith(
        f"[seq:1] cites step 1 (`pytest -q`), whose recorded output does not contain \"{said}\", but \"")
    assert report.findings[0].message.endswith("says its failure shows it; cite the step whose output does")


def test_what_a_failure_shows_is_not_checked_without_a_stored_output_or_against_an_edited_one(tmp_path: Path):
    log = _packet_with_outputs(tmp_path / "a", {1: (1, "pytest -q", "E   AssertionError\n1 failed")})
    body = tmp_path / "PR_BODY.md"
    body.write_text("The test fails with `ZeroDivisionError` before the fix [seq:1].\n")
    assert [f.kind for f in lint_claims(body, log).findings] == ["cites_output_without_text"]
    stored = next((tmp_path / "a" / "session.outputs").iterdir())
    stored.write_text("E   ZeroDivisionError\n1 failed")  # edited after recording: not evidence
    assert [(f.kind, f.seq) for f in lint_claims(body, log).findings] == [("cites_edited_output", 1)]
    stored.unlink()
    assert lint_claims(body, log).findings == [] and lint_claims(body, log).accepted_steps == [1]
    # an ordinary wording names nothing to look for
    body.write_text("The test fails with an assertion error before the fix [seq:1].\n")
    log = _packet_with_outputs(tmp_path / "b", {1: (1, "pytest -q", "E   ValueError\n1 failed")})
    assert lint_claims(body, log).findings == []
    # another folder for the outputs
    body.write_text("The test fails with `ValueError` before the fix [seq:1].\n")
    moved = tmp_path / "elsewhere"
    (tmp_path / "b" / "session.outputs").rename(moved)
    assert lint_claims(body, log).findings == []  # nothing stored where the log keeps them
    report = lint_claims(body, log, outputs_dir=moved)
    assert report.findings == [] and report.accepted_steps == [1]
    body.write_text("The test fails with `KeyError` before the fix [seq:1].\n")
    assert [f.kind for f in lint_claims(body, log, outputs_dir=moved).findings] == ["cites_output_without_text"]
    res = CliRunner().invoke(packet_cli, ["claims", str(body), str(log), "--outputs", str(moved)])
    assert res.exit_code == 1 and res.output.splitlines()[0] == (
        f'{body}:1: error: cites_output_without_text: [seq:1] cites step 1 (`pytest -q`), whose recorded output '
        f'does not contain "KeyError", but "The test fails with `KeyError` before the fix" says its failure shows '
        f'it; cite the step whose output does')


_RED = "E   AssertionError: first retry must wait\nE   assert 0 == 1\n1 failed, 1 passed in <DUR>"
_GREEN = "..\n2 passed in <DUR>"


def _said(body: str, outputs: dict[int, str] | None = None) -> list[tuple[str, int, str]]:
    """``(kind, seq, text said missing)`` of each finding for ``body`` against step 1 (pytest, failed,
    :data:`_RED`), step 2 (pytest, passed, :data:`_GREEN`) and step 4 (a script that passed)."""
    outputs = outputs or {1: _RED, 2: _GREEN, 4: "migration 0042: 1 op(s), 0 destructive"}
    report = lint_claims_text(body, {1: 1, 2: 0, 4: 0}, outputs=outputs,
                              commands={1: "pytest -q", 2: "pytest -q", 4: "python migrations/check.py"})
    return [(f.kind, f.seq, f.message.split('does not contain "')[1].split('"')[0]
             if "does not contain" in f.message else "") for f in report.findings]


@pytest.mark.parametrize("wrong, right, text", [
    ("The test fails before the fix with `1 failed, 2 passed` [seq:1].",
     "The test fails before the fix with `1 failed, 1 passed` [seq:1].", "1 failed, 2 passed"),
    ("The test fails on main with `1 failed, 2 passed` [seq:1].",
     "The test fails on main with `1 failed, 1 passed` [seq:1].", "1 failed, 2 passed"),
    ("The test fails before the fix, printing `first retry must not wait` [seq:1].",
     "The test fails before the fix, printing `first retry must wait` [seq:1].", "first retry must not wait"),
    ("The test fails before the fix and prints `first retry must not wait` [seq:1].",
     "The test fails before the fix and prints `first retry must wait` [seq:1].", "first retry must not wait"),
    ('The test fails before the fix and shows "assert 1 == 0" [seq:1].',
     'The test fails before the fix and shows "assert 0 == 1" [seq:1].', "assert 1 == 0"),
    ("Before the fix the test fails; it outputs `retry must not wait` [seq:1].",
     "Before the fix the test fails; it outputs `retry must wait` [seq:1].", "retry must not wait"),
    ("Before the fix the test raises `AssertionError: no wait` [seq:1].",
     "Before the fix the test raises `AssertionError: first retry` [seq:1].", "AssertionError: no wait"),
    ('The test fails before the fix with the message "first retry must not wait" [seq:1].',
     'The test fails before the fix with the message "first retry must wait" [seq:1].', "first retry must not wait"),
    ("Before the fix pytest errors with `ValueError` [seq:1].",
     "Before the fix pytest errors with `AssertionError` [seq:1].", "ValueError"),
    ("Before the fix pytest exits with code 1 and prints `2 failed` [seq:1].",
     "Before the fix pytest exits with code 1 and prints `1 failed` [seq:1].", "2 failed"),
])
def test_a_failure_said_to_show_a_text_is_checked_however_the_clause_words_it(wrong: str, right: str, text: str):
    assert _said(wrong) == [("cites_output_without_text", 1, text)]
    assert _said(right) == []


@pytest.mark.parametrize("body, text", [
    ("Before the fix the test fails with `1 failed, 1 passed` and `first retry must NOT wait` [seq:1].",
     "first retry must NOT wait"),
    ("The test fails before the fix with `first retry must NOT wait` and `1 failed, 1 passed` [seq:1].",
     "first retry must NOT wait"),
    ('It fails with "assert 0 == 1", "first retry must wait" and "2 failed" [seq:1].', "2 failed"),
    ("It fails with `AssertionError: first retry must wait` and `1 failed, 2 passed` [seq:1].",
     "1 failed, 2 passed"),
])
def test_every_text_a_failure_is_said_to_show_must_be_in_its_output(body: str, text: str):
    assert _said(body) == [("cites_output_without_text", 1, text)]
    assert _said(body.replace(text, "1 failed, 1 passed")) == []


@pytest.mark.parametrize("wrong, right, seq, text", [
    ("The migration check prints `no destructive operations` [seq:4].",
     "The migration check prints `0 destructive` [seq:4].", 4, "no destructive operations"),
    ("The migration check reports `1 destructive` [seq:4].",
     "The migration check reports `0 destructive` [seq:4].", 4, "1 destructive"),
    ("The test passes after the fix with `3 passed` [seq:2].",
     "The test passes after the fix with `2 passed` [seq:2].", 2, "3 passed"),
    ("After the fix the tests pass and print `3 passed` [seq:2].",
     "After the fix the tests pass and print `2 passed` [seq:2].", 2, "3 passed"),
    ("The test fails before the fix [seq:1] and passes after with `3 passed` [seq:2].",
     "The test fails before the fix [seq:1] and passes after with `2 passed` [seq:2].", 2, "3 passed"),
])
def test_a_pass_said_to_show_a_text_is_checked_against_its_output(wrong: str, right: str, seq: int, text: str):
    found = _said(wrong)
    assert found == [("cites_output_without_text", seq, text)]
    report = lint_claims_text(wrong, {1: 1, 2: 0, 4: 0}, outputs={1: _RED, 2: _GREEN, 4: "0 destructive"},
                              commands={1: "pytest -q", 2: "pytest -q", 4: "python migrations/check.py"})
    assert report.findings[-1].message.endswith(" says it shows it; cite the step whose output does")
    assert _said(right) == []
    # without a stored output there is nothing to check it against
    assert _said(wrong, {1: _RED}) == []


def test_a_pass_said_to_show_a_text_is_not_judged_by_an_edited_or_missing_output(tmp_path: Path):
    log = _packet_with_outputs(tmp_path / "a", {2: (0, "pytest -q", "..\n2 passed in <DUR>")})
    body = tmp_path / "PR_BODY.md"
    body.write_text("The test passes after the fix with `3 passed` [seq:2].\n")
    assert [(f.kind, f.seq) for f in lint_claims(body, log).findings] == [("cites_output_without_text", 2)]
    stored = next((tmp_path / "a" / "session.outputs").iterdir())
    stored.write_text("...\n3 passed in <DUR>")  # edited after recording to fit the claim
    assert [(f.kind, f.seq) for f in lint_claims(body, log).findings] == [("cites_edited_output", 2)]
    lines = [dict(json.loads(x), stored=True) for x in log.read_text().splitlines()]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    stored.unlink()
    report = lint_claims(body, log)
    assert report.findings == [] and [(w.kind, w.seq) for w in report.warnings] == [("cites_missing_output", 2)]
    assert '"3 passed" in "The test passes after the fix with `3 passed`" is not checked' in report.warnings[0].message


@pytest.mark.parametrize("body", [
    "The test passes with `--strict` [seq:2].",                 # how it ran, not what it printed
    "The tests pass with `PYTHONHASHSEED=0` [seq:2].",
    "The tests pass with `pytest -q` [seq:2].",
    "The test passes with `Python 3.12` [seq:2].",
    "The run shows `pytest -q` [seq:2].",                        # a command, not what it printed
    "The test passes with `tests/unit` on the path [seq:2].",
    "The new test checks that parse('') raises `ValueError` and passes [seq:2].",  # a passing test may
    "The test fails when run with `--strict` [seq:1].",
    "The test no longer prints `first retry must wait` [seq:2].",  # negated
    "Its log `session.jsonl` passes review [seq:2].",             # "log" as a noun
])
def test_texts_that_say_how_a_step_ran_or_are_negated_are_not_looked_for(body: str):
    assert _said(body) == []


def test_raises_alone_describes_a_failing_step_but_is_no_failure_claim():
    report = lint_claims_text("Before the fix, parse('') raises ValueError [seq:1].", {1: 1},
                              commands={1: "pytest -q"})
    assert report.findings == [] and report.accepted_steps == [1]
    # a passing test may check that a call raises: no cites_passing_step_for_failure
    report = lint_claims_text("Now parse('') raises ValueError [seq:2].", {2: 0}, commands={2: "pytest -q"})
    assert report.findings == [] and report.accepted_steps == [2]
    # "the error raised by the parser" names no failure
    report = lint_claims_text("Fixes the error raised by the parser [seq:1].", {1: 1}, commands={1: "pytest -q"})
    assert [f.kind for f in report.findings] == ["cites_failing_step"]


def test_fixing_the_crash_is_no_failure_claim():
    report = lint_claims_text("Fixes the crash on empty input [seq:2].", {2: 0}, commands={2: "pytest -q"})
    assert report.findings == [] and report.accepted_steps == [2]


# ----- a pass claim takes its subject from its sentence, or from the sentence before ------------

@pytest.mark.parametrize("body,held", [
    ("The new test fails before the fix [seq:1] and passes after [seq:2].", True),
    ("The new test fails before the fix. It passes after [seq:2].", True),
    ("- The new test fails before the fix [seq:1].\n- It passes after the fix [seq:2].\n", True),
    ("The build broke on main. Now it works [seq:2].", True),
    ("Lint was red. This passes now [seq:2].", True),
    ("It passes after the fix [seq:2].", False),                      # names nothing, and nothing before
    ("The new test fails before the fix. The fix works [seq:2].", False),  # its own subject: the fix
    ("## Tests\n\nIt passes after the fix [seq:2].\n", False),        # a heading is not a sentence before
])
def test_a_pass_claim_without_a_subject_is_held_to_what_its_sentence_names(body: str, held: bool):
    report = lint_claims_text(body, {1: 1, 2: 0}, commands={1: "pytest -q", 2: "cat old-output.txt"})
    kinds = [(f.kind, f.seq) for f in report.findings]
    assert kinds == ([("cites_non_check_step", 2)] if held else [])
    report = lint_claims_text(body, {1: 1, 2: 0}, commands={1: "pytest -q", 2: "make check"})
    assert report.findings == [] and 2 in report.accepted_steps


def test_a_subject_given_by_inline_code():
    report = lint_claims_text("`pytest tests/test_router.py` fails on main [seq:1] and passes here [seq:2].",
                              {1: 1, 2: 0}, commands={1: "pytest tests/test_router.py", 2: "ruff check ."})
    assert [f.message for f in report.findings] == [
        "[seq:2] cites step 2 (`ruff check .`), which exited 0 but runs no tests: it runs ruff check, a lint; "
        "\"passes here\" needs a cited step that runs them (pytest, npm test, go test …)"]
    report = lint_claims_text("`test_router` is green [seq:2].", {2: 0}, commands={2: "echo ok"})
    assert [f.kind for f in report.findings] == ["cites_non_check_step"]


# ----- exit-status claims: the stated code is compared with the recorded one -------------------

CLI_MISSING = "python -m calc.cli --config missing.cfg"


@pytest.mark.parametrize("sentence,seq,exit,cmd,said", [
    ("pytest exits with code 5 on main [seq:1].", 1, 1, "pytest -q", "exits 5"),
    ("The CLI exits with code 2 when the config is present [seq:6].", 6, 0, "python -m calc.cli --config calc.cfg",
     "exits 2"),
    ("Lint exits with status 0 [seq:9].", 9, 1, "ruff check .", "exits 0"),
    ("The test fails on main with exit code 4 [seq:7].", 7, 1, "python -m pytest -q", "exits 4"),
    ("pytest returns exit code 3 on main [seq:7].", 7, 1, "python -m pytest -q", "exits 3"),
    ("The CLI returns 2 [seq:6].", 6, 0, "python -m calc.cli", "exits 2"),
    ("The CLI exits non-zero on a missing config [seq:6].", 6, 0, "python -m calc.cli", "exits non-zero"),
    ("The CLI exits successfully [seq:5].", 5, 2, CLI_MISSING, "exits 0"),
])
def test_a_stated_exit_code_the_step_did_not_exit_with_is_a_finding(sentence, seq, exit, cmd, said):
    report = lint_claims_text(sentence, {seq: exit}, commands={seq: cmd})
    clause = sentence.replace(f" [seq:{seq}].", "")
    assert [(f.kind, f.severity, f.line, f.seq, f.message) for f in report.findings] == [
        ("cites_wrong_exit_code", "error", 1, seq,
         f"[seq:{seq}] cites step {seq} (`{cmd}`), which exited {exit}, but \"{clause}\" says it {said}; cite the "
         f"step that {said.replace('exits', 'exited')}, or correct the code")]
    assert report.warnings == [] and report.accepted_steps == []


@pytest.mark.parametrize("sentence", [
    "The CLI exits 2 when the config is missing [seq:11].",
    "The CLI exits with code 2 when the config is missing [seq:11].",
    "Its exit code is 2 [seq:11].",
    "The CLI returns 2 [seq:11].",
    "A missing config is an error (exit 2) [seq:11].",
    "The CLI exits non-zero [seq:11].",
    "The CLI exits with `2` on a missing config [seq:11].",
    "With a missing config the exit status is 2 [seq:11].",
])
def test_a_stated_exit_code_that_fits_describes_the_failure_and_needs_no_check_runner(sentence: str):
    report = lint_claims_text(sentence, {11: 2}, commands={11: CLI_MISSING})
    assert report.findings == [] and report.warnings == [] and report.accepted_steps == [11]


def test_exits_with_a_code_span_number_is_a_status_not_output_text(tmp_path: Path):
    log = _packet_with_outputs(tmp_path / "a", {11: (2, CLI_MISSING, "error: calc.cfg: no such file")})
    body = tmp_path / "PR_BODY.md"
    body.write_text("The CLI exits with `2` on a missing config [seq:11].\n")
    report = lint_claims(body, log)
    assert report.findings == [] and report.warnings == [] and report.accepted_steps == [11]
    body.write_text("The CLI exits with `3` on a missing config [seq:11].\n")
    assert [(f.kind, f.line) for f in lint_claims(body, log).findings] == [("cites_wrong_exit_code", 1)]


def test_the_test_exits_1_on_main_is_accepted_and_a_test_claim_with_a_code_is_still_held_to_a_runner():
    report = lint_claims_text("The test exits 1 on main [seq:7].", {7: 1}, commands={7: "python -m pytest -q"})
    assert report.findings == [] and report.accepted_steps == [7]
    report = lint_claims_text("pytest exits with code 5 on main [seq:5].", {5: 5}, commands={5: "pytest -q"})
    assert report.findings == [] and report.accepted_steps == [5]  # true: pytest collected nothing
    # "fails" still claims a failing test: `pytest` exiting 4 ran none, whatever the code says
    report = lint_claims_text("The new test fails before the fix with exit code 4 [seq:2].", {2: 4},
                              commands={2: "pytest -q tests/test_new.py"})
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_non_check_step", 2)]
    report = lint_claims_text("The test fails on main with exit code 1 [seq:7].", {7: 1},
                              commands={7: "python -m pytest -q"})
    assert report.findings == [] and report.accepted_steps == [7]


def test_what_is_not_an_exit_status_is_left_alone():
    # a function's value, an HTTP status, a negation
    for sentence, steps, cmd in [("`mean([1, 3])` returns 2 [seq:3].", {3: 0}, "pytest -q"),
                                 ("The endpoint returns 404 for a missing page [seq:3].", {3: 0}, "pytest -q"),
                                 ("The parser returns 2 items now [seq:3].", {3: 0}, "pytest -q"),
                                 ("It no longer exits 2 with a valid config [seq:6].", {6: 0}, "python -m calc.cli")]:
        report = lint_claims_text(sentence, steps, commands={q: cmd for q in steps})
        assert report.findings == [], sentence
    # "returns 2" about a function cannot excuse a failing step
    report = lint_claims_text("Before the fix, `mean([])` returns 2 [seq:1].", {1: 1}, commands={1: "pytest -q"})
    assert [f.kind for f in report.findings] == ["cites_failing_step"]


def test_a_program_s_exit_status_cited_to_its_tests_is_the_program_s_not_the_step_s():
    # "the CLI exits 2" backed by the tests that check it: pytest's own exit 0 is no mismatch
    report = lint_claims_text("The CLI now exits 2 on a missing config [seq:3].", {3: 0},
                              commands={3: "pytest -q tests/test_cli.py"})
    assert report.findings == [] and report.accepted_steps == [3]
    # cited to the program itself, it is compared
    report = lint_claims_text("The CLI now exits 2 on a missing config [seq:3].", {3: 0},
                              commands={3: "python -m calc.cli --config missing.cfg"})
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_wrong_exit_code", 3)]


def test_an_exit_claim_in_a_group_may_be_about_another_cited_step():
    steps, cmds = {1: 1, 2: 0}, {1: "pytest -q", 2: "pytest -q"}
    report = lint_claims_text("It fails before the fix (exit 1) and passes after [seq:1][seq:2].", steps, commands=cmds)
    assert report.findings == [] and report.accepted_steps == [1, 2]
    report = lint_claims_text("It exits 3 before the fix and passes after [seq:1][seq:2].", steps, commands=cmds)
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_wrong_exit_code", 1)]  # paired with its clause
    report = lint_claims_text("Before and after the fix it exits 3 [seq:1][seq:2].", steps, commands=cmds)
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_wrong_exit_code", 1), ("cites_wrong_exit_code", 2)]


def test_an_exit_status_sentence_without_a_marker_is_an_unsupported_claim():
    report = lint_claims_text("The CLI exits 2 when the config is missing.", {1: 0})
    assert [(w.kind, w.line) for w in report.warnings] == [("unsupported_claim", 1)]


# ----- make and npm that found nothing to run; stored outputs edited after recording ------------

def test_make_test_without_a_makefile_is_no_failing_test(tmp_path: Path):
    log = _packet_with_outputs(tmp_path / "a", {4: (2, "make test", "make: *** No rule to make target 'test'.  Stop.")})
    body = tmp_path / "PR_BODY.md"
    body.write_text("# Probe\n\nTests fail on main [seq:4].\n")
    report = lint_claims(body, log)
    assert [(f.kind, f.line, f.seq, f.message) for f in report.findings] == [
        ("cites_non_check_step", 3, 4,
         "[seq:4] cites step 4 (`make test`), which exited 2 but shows no failing test: `make test` printed "
         "`make: *** No rule to make target 'test'.  Stop.`: it has no rule to make the target, and ran nothing; "
         "\"Tests fail on main\" needs a cited step whose tests fail (pytest, npm test, go test …)")]
    # the same step whose recipe ran failing tests backs the claim
    log = _packet_with_outputs(tmp_path / "b", {4: (2, "make test", "1 failed\nmake: *** [Makefile:2: test] Error 1")})
    report = lint_claims(body, log)
    assert report.findings == [] and report.accepted_steps == [4]


def test_npm_test_without_a_test_script_is_no_failing_test(tmp_path: Path):
    log = _packet_with_outputs(tmp_path / "a", {3: (1, "npm test", 'npm error Missing script: "test"\nnpm error')})
    body = tmp_path / "PR_BODY.md"
    body.write_text("The new test fails before the fix [seq:3].\n")
    assert [(f.kind, f.line, f.seq) for f in lint_claims(body, log).findings] == [("cites_non_check_step", 1, 3)]


def test_an_edited_stored_output_is_a_finding_naming_the_step_not_evidence(tmp_path: Path):
    log = _packet_with_outputs(tmp_path / "a", {1: (1, "pytest -q", "E   AssertionError\n1 failed"),
                                                4: (2, "make test", "make: *** No rule to make target 'test'.  Stop.")})
    outputs = tmp_path / "a" / "session.outputs"
    body = tmp_path / "PR_BODY.md"
    body.write_text("The test fails with `ZeroDivisionError` before the fix [seq:1].\n\nTests fail on main [seq:4].\n")
    assert [(f.kind, f.seq) for f in lint_claims(body, log).findings] == [("cites_output_without_text", 1),
                                                                          ("cites_non_check_step", 4)]
    for stored in outputs.iterdir():  # someone rewrites the evidence to fit the claims
        text = stored.read_text()
        stored.write_text("E   ZeroDivisionError\n1 failed" if "Assertion" in text else "1 failed\nmake: *** Error 1")
    report = lint_claims(body, log)
    path = {q: outputs / f"{json.loads(x)['out_sha']}.txt"
            for x in log.read_text().splitlines() for q in [json.loads(x).get("seq")] if q}
    assert [(f.kind, f.severity, f.line, f.seq, f.message) for f in report.findings] == [
        ("cites_edited_output", "error", 1, 1,
         f"[seq:1] cites step 1 (`pytest -q`), whose stored output {path[1]} no longer hashes to the step's out_sha: "
         f"it was changed after recording, so \"The test fails with `ZeroDivisionError` before the fix\" is not "
         f"judged by it; restore the recorded output, or record the step again"),
        ("cites_edited_output", "error", 3, 4,
         f"[seq:4] cites step 4 (`make test`), whose stored output {path[4]} no longer hashes to the step's out_sha: "
         f"it was changed after recording, so \"Tests fail on main\" is not judged by it; restore the recorded "
         f"output, or record the step again")]
    assert report.exit_code == 1 and report.accepted_steps == []
    # a claim that reads no output is judged as before
    body.write_text("The test fails before the fix [seq:1].\n")
    assert lint_claims(body, log).findings == []


# ----- the summary counts markers and lists steps, each under its own name -----------------------

SUMMARY_BODY = ("- The test fails on main [seq:1].\n"        # accepted
                "- All tests pass [seq:1].\n"                # finding: step 1 failed
                "- All tests pass [seq:2].\n"                # accepted
                "- The fix works [seq:3].\n"                 # accepted
                "- The tests pass [seq:3].\n"               # accepted, with a warning (unknown program)
                "- The benchmark is faster [seq:42].\n")     # finding: no such step
SUMMARY_STEPS = {1: 1, 2: 0, 3: 0}
SUMMARY_CMDS = {1: "pytest -q", 2: "pytest -q", 3: "./demo.sh"}


def test_the_report_counts_markers_and_lists_steps_apart():
    report = lint_claims_text(SUMMARY_BODY, SUMMARY_STEPS, commands=SUMMARY_CMDS)
    assert [(f.kind, f.line, f.seq) for f in report.findings] == [("cites_failing_step", 2, 1),
                                                                  ("cites_missing_step", 6, 42)]
    assert [(w.kind, w.line, w.seq) for w in report.warnings] == [("cites_unrecognised_command", 5, 3)]
    assert report.markers == 6 and len(report.accepted_markers) == 4 and report.markers_with_findings == 2
    assert report.markers_accepted_with_warnings == 1
    assert report.accepted_steps == [2, 3]  # step 1 is cited in a finding too: not listed
    assert report.steps_with_findings == [1, 42]
    out = report.to_dict()
    assert {k: out[k] for k in ("markers", "markers_accepted", "markers_accepted_with_warnings",
                                "markers_with_findings", "accepted_steps", "steps_with_findings")} == {
        "markers": 6, "markers_accepted": 4, "markers_accepted_with_warnings": 1, "markers_with_findings": 2,
        "accepted_steps": [2, 3], "steps_with_findings": [1, 42]}
    assert "accepted" not in out and [(a["line"], a["seq"]) for a in out["accepted_markers"]] == [
        (1, 1), (3, 2), (4, 3), (5, 3)]


def test_the_cli_summary_line_says_what_each_number_counts(tmp_path: Path):
    body = tmp_path / "PR_BODY.md"
    body.write_text(SUMMARY_BODY)
    log = tmp_path / "session.jsonl"
    log.write_text("".join(json.dumps({"seq": q, "cmd": SUMMARY_CMDS[q], "exit": e}) + "\n"
                           for q, e in SUMMARY_STEPS.items()))
    res = CliRunner().invoke(packet_cli, ["claims", str(body), str(log)])
    assert res.exit_code == 1
    assert res.output.splitlines()[-1] == (
        "claims: 2 finding(s), 1 warning(s); 6 marker(s): 4 accepted (1 with a warning), 2 with a finding; "
        "steps cited only by accepted markers: 2, 3; log unchained")


def test_cannot_tell_whether_it_runs_a_check():
    report = lint_claims_text("CI is green [seq:3].", {3: 0}, commands={3: "./demo.sh"})
    assert [w.message for w in report.warnings] == [
        "[seq:3] cites step 3 (`./demo.sh`), which exited 0, but the linter cannot tell whether it runs a check: "
        "`./demo.sh` is no test, build, lint or type-check runner the linter knows; \"CI is green\" needs a cited "
        "step that runs one (pytest, npm test, make check …): cite one, or check this step yourself"]


def test_a_stored_output_the_log_names_but_the_packet_lacks_is_a_warning(tmp_path: Path):
    """The log marks step 1's output stored, but ``session.outputs/`` was not committed: "fails
    with `ZeroDivisionError`" cannot be checked.  That was silent; it is a warning naming the
    file, and the marker is still accepted (nothing contradicts it).  A step the log does not
    mark stored is not looked for."""
    log = _packet_with_outputs(tmp_path / "a", {1: (1, "pytest -q", "E   ZeroDivisionError\n1 failed")})
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    log.write_text("".join(json.dumps({**x, "stored": True}) + "\n" for x in lines))
    stored = next((tmp_path / "a" / "session.outputs").iterdir())
    stored.unlink()
    body = tmp_path / "PR_BODY.md"
    body.write_text("The test fails with `ZeroDivisionError` before the fix [seq:1].\n")
    report = lint_claims(body, log)
    assert report.findings == [] and report.accepted_steps == [1]
    assert [(w.kind, w.seq) for w in report.warnings] == [("cites_missing_output", 1)]
    assert report.warnings[0].message == (
        f"[seq:1] cites step 1 (`pytest -q`), whose output the log marks stored is missing ({stored}), so "
        "\"ZeroDivisionError\" in \"The test fails with `ZeroDivisionError` before the fix\" is not checked; "
        "commit the output folder beside the log")
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))  # not marked stored: nothing to miss
    assert lint_claims(body, log).warnings == []


def test_seq_zero_is_malformed_not_a_step_that_never_ran():
    report = lint_claims_text("Determinism verified [seq:0].", {1: 0})
    assert [(f.kind, f.seq) for f in report.findings] == [("malformed_marker", None)]
    assert report.findings[0].message == ("[seq:0] is not a step number: seq starts at 1; write [seq:N] with N a seq "
                                          "from session.jsonl")


def test_a_seq_the_log_lacks_may_have_run_unrecorded():
    report = lint_claims_text("The full suite passes on CI [seq:9].", {1: 0})
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_missing_step", 9)]
    assert report.findings[0].message == ("[seq:9] cites step 9, which is not in the log (it may have run unrecorded): "
                                          "session.jsonl has no seq 9; record the step, or cite one the log holds")


@pytest.mark.parametrize("marker,hint", [("[seq:3, seq:4]", "[seq:3][seq:4]"), ("[seq:3,4]", "[seq:3][seq:4]"),
                                         ("[seq:2; seq:3 and seq:4]", "[seq:2][seq:3][seq:4]")])
def test_several_steps_in_one_marker_is_malformed_with_a_hint(marker: str, hint: str):
    report = lint_claims_text(f"Tests pass {marker}.", {2: 0, 3: 0, 4: 0})
    assert [(f.kind, f.seq) for f in report.findings] == [("malformed_marker", None)]
    assert report.findings[0].message == (f"{marker} cites several steps in one marker; write one marker per step: "
                                          f"{hint}")


def test_paths_are_shown_with_dot_dot_worked_out(tmp_path: Path):
    (tmp_path / "pr").mkdir()
    (tmp_path / "incident").mkdir()
    (tmp_path / "pr" / "PR_BODY.md").write_text("It passes [seq:9].\n")
    (tmp_path / "pr" / "session.jsonl").write_text('{"seq": 1, "cmd": "pytest", "exit": 0}\n')
    report = lint_claims(tmp_path / "incident" / ".." / "pr" / "PR_BODY.md",
                         tmp_path / "incident" / ".." / "pr" / "session.jsonl")
    assert report.body_path == str(tmp_path / "pr" / "PR_BODY.md")
    assert report.findings[0].message.endswith(f"{tmp_path / 'pr' / 'session.jsonl'} has no seq 9; record the step, "
                                               "or cite one the log holds")


@pytest.mark.parametrize("sentence,cmd,ok", [
    ("Verified with `pytest -q` [seq:4].", "python bench.py", False),
    ("`make test` passes [seq:4].", "make lint", False),
    ("`python bench.py` runs clean [seq:4].", "pytest -q", False),
    ("`pytest -q` passes [seq:4].", "pytest -q tests/test_calc.py", True),
    ("`pytest` passes [seq:4].", "python -m pytest -q", True),
    ("`python -m pytest tests/test_calc.py` passes [seq:4].", "pytest -q tests/test_calc.py", True),
    ("The benchmark prints `elapsed` with `--strict` [seq:4].", "python bench.py", True),  # an option, an output
])
def test_a_command_named_in_a_code_span_must_be_the_cited_steps(sentence: str, cmd: str, ok: bool):
    report = lint_claims_text(sentence, {4: 0}, commands={4: cmd})
    if ok:
        assert [f.kind for f in report.findings] == []
        return
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_other_command", 4)]
    code = sentence.split("`")[1]
    assert report.findings[0].message == (
        f"[seq:4] cites step 4 (`{cmd}`), but \"{sentence.split(' [seq')[0]}\" names `{code}`, which it does not "
        f"run; cite the step that ran `{code}`, or name the command step 4 ran")


def test_a_command_named_for_several_cited_steps_needs_one_of_them_to_run_it():
    steps, cmds = {3: 0, 4: 0}, {3: "pytest -q", 4: "python bench.py"}
    assert lint_claims_text("`pytest -q` passes and the benchmark runs [seq:3][seq:4].", steps,
                            commands=cmds).findings == []
    report = lint_claims_text("`ruff check` is clean [seq:3][seq:4].", steps, commands=cmds)
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_other_command", 3), ("cites_other_command", 4)]
    assert "names `ruff check`, which no step cited there runs" in report.findings[0].message


@pytest.mark.parametrize("cmd,output", [
    ("pytest -q", "tests/test_a.py::test_a\n1 test collected in <DUR>"),        # addopts = "--collect-only"
    ("python -m pytest", "ss\n2 skipped in <DUR>"),                             # a conftest.py skipping all
    ("pytest -q", "no tests ran in <DUR>"),
    ("go test -run TestParse ./...", "ok  \texample.com/p\t0.01s [no tests to run]"),
    ("python -m unittest", "\nRan 0 tests in 0.000s\n\nOK"),
    ("npx jest -t parse", "Test Suites: 2 skipped, 0 of 2 total\nTests:       5 skipped, 5 total\nSnapshots:   0 total"),
    ("npx vitest run -t parse", " Test Files  2 skipped (2)\n      Tests  5 skipped (5)\n"),
])
def test_a_pass_claim_citing_a_runner_whose_output_shows_no_test_ran_is_a_finding(cmd: str, output: str):
    report = lint_claims_text("All tests pass [seq:1].\n", {1: 0}, commands={1: cmd}, outputs={1: output})
    assert [(f.kind, f.seq) for f in report.findings] == [("cites_non_check_step", 1)]
    assert "its output shows it ran no test" in report.findings[0].message
    # the same command whose output shows tests ran backs the claim
    ran = {"pytest -q": "1 passed in <DUR>", "python -m pytest": "2 passed, 1 skipped in <DUR>",
           "go test -run TestParse ./...": "ok  \texample.com/p\t0.01s",
           "python -m unittest": "Ran 2 tests in 0.000s\n\nOK",
           "npx jest -t parse": "Tests:       1 passed, 4 skipped, 5 total\n",
           "npx vitest run -t parse": "      Tests  1 passed | 4 skipped (5)\n"}[cmd]
    report = lint_claims_text("All tests pass [seq:1].\n", {1: 0}, commands={1: cmd}, outputs={1: ran})
    assert report.findings == [] and report.warnings == [] and report.accepted_steps == [1]


def test_a_pass_claim_on_a_name_filter_without_a_stored_output_cannot_be_verified():
    # `go test -run X` exits 0 when X matches no test: without the output, nothing shows one ran
    report = lint_claims_text("All tests pass [seq:1].\n", {1: 0}, commands={1: "go test -run TestParse ./..."})
    assert report.findings == [] and [(w.kind, w.seq) for w in report.warnings] == [
        ("cites_unrecognised_command", 1)]
    assert ("cannot tell whether it runs tests: `go test -run TestParse` exits 0 also when its pattern matches "
            "no test, and the step's output was not stored") in report.warnings[0].message
    # without a filter the exit code is read as before
    report = lint_claims_text("All tests pass [seq:1].\n", {1: 0}, commands={1: "go test ./..."})
    assert report.findings == [] and report.warnings == []


def test_a_recorded_pytest_run_that_addopts_made_collect_only_does_not_back_tests_pass(repo: Path):
    from packet_helpers import PY, git, rec

    (repo / "tests").mkdir()
    (repo / "tests" / "test_a.py").write_text("def test_a():\n    assert False\n")
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "--collect-only -p no:cacheprovider"\n')
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "tests")
    assert rec(repo, PY, "-m", "pytest", "-q", "tests/test_a.py").exit == 0  # the failing test never ran
    (repo / "PR_BODY.md").write_text("All tests pass [seq:1].\n")
    report = lint_claims(repo / "PR_BODY.md", repo / "session.jsonl")
    assert [(f.kind, f.seq, f.line) for f in report.findings] == [("cites_non_check_step", 1, 1)]
    assert "its output shows it ran no test (`1 test collected in" in report.findings[0].message


@pytest.mark.parametrize("cmd", ["npx mocha -t 5000", "mocha -t 5000 test/", "npx tap -t 60 test/"])
def test_a_timeout_option_spelled_like_jests_name_filter_is_not_a_name_filter(cmd: str):
    # mocha's and tap's -t is a timeout: it runs every test, and the exit code shows them passing
    report = lint_claims_text("All tests pass [seq:1].\n", {1: 0}, commands={1: cmd})
    assert report.findings == [] and report.warnings == [] and report.accepted_steps == [1]
    # jest's and vitest's -t is one
    for cmd in ("npx jest -t parse", "npx vitest run -t parse"):
        report = lint_claims_text("All tests pass [seq:1].\n", {1: 0}, commands={1: cmd})
        assert [(w.kind, w.seq) for w in report.warnings] == [("cites_unrecognised_command", 1)]


def test_a_build_claim_on_a_filtered_test_run_is_backed_by_its_exit_code():
    # `go test -run X` builds every package whether or not X matches a test: exit 0 shows the build
    for body in ("The build passes [seq:1].\n", "It compiles [seq:1].\n"):
        report = lint_claims_text(body, {1: 0}, commands={1: "go test -run TestParse ./..."})
        assert report.findings == [] and report.warnings == [] and report.accepted_steps == [1]
    # what it cannot show is that a test ran
    report = lint_claims_text("All tests pass and it builds [seq:1].\n", {1: 0},
                              commands={1: "go test -run TestParse ./..."})
    assert report.findings == [] and [(w.kind, w.seq) for w in report.warnings] == [("cites_unrecognised_command", 1)]
    assert "cannot tell whether it runs tests: `go test -run TestParse` exits 0" in report.warnings[0].message


@pytest.mark.parametrize("cmd,output", [
    ("go test -json -run TestParse ./...", '{"Action":"pass","Package":"example.com/p","Elapsed":0.01}\n'),
    ("npx jest -t parse", "PASS src/parse.test.js\n"),
])
def test_a_name_filter_whose_stored_output_shows_no_summary_cannot_be_verified(cmd: str, output: str):
    # the output was stored, but holds no line of the runner saying whether its filter matched a test
    report = lint_claims_text("All tests pass [seq:1].\n", {1: 0}, commands={1: cmd}, outputs={1: output})
    assert report.findings == [] and [(w.kind, w.seq) for w in report.warnings] == [("cites_unrecognised_command", 1)]
    assert "the step's stored output holds no summary line of it" in report.warnings[0].message


def test_two_lints_at_once_read_code_alike(monkeypatch):
    """The reader is shared by every lint in the process (a workbook or report kernel may lint in two
    threads at once): the first reading in one thread must not find its rules half built by another."""
    import functools
    import threading
    import time

    from markdown_it import ruler

    from replaybook.packet import claims

    monkeypatch.setattr(claims, "_markdown", functools.cache(claims._markdown.__wrapped__))
    claims._markdown()
    build = ruler.Ruler.__compile__

    def slow_build(self):  # (markdown-it-py empties the lists, then fills them: widen that window)
        self.__cache__ = {}
        time.sleep(0.05)
        build(self)

    monkeypatch.setattr(ruler.Ruler, "__compile__", slow_build)
    got: list = []
    threads = [threading.Thread(target=lambda: got.append(claims.cited_markers("Run `[seq:1]`, tests pass [seq:2]\n")))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [[(1, 2)], [(1, 2)]]


@pytest.mark.parametrize("body,markers", [
    # a code span and a fence 30 list items deep, and 60 quotes deep, hide their markers as CommonMark
    # reads them (markdown-it-py's commonmark preset stopped at 20 levels: 10 list items, 20 quotes)
    ("".join("  " * i + "- a\n" for i in range(30)) + "  " * 30 + "Run `[seq:9]`, tests pass [seq:1]\n", [(31, 1)]),
    ("> " * 60 + "```\n" + "> " * 60 + "[seq:9]\n\nTests pass [seq:1]\n", [(4, 1)]),
    ("- " * 49 + "Run `[seq:9]`, tests pass [seq:1]\n", [(1, 1)]),
])
def test_code_nested_in_many_list_items_or_quotes_is_still_code(body: str, markers: list):
    from replaybook.packet.claims import cited_markers

    assert cited_markers(body) == markers


@pytest.mark.parametrize("body,markers", [
    # CommonMark 0.31.2 §4.7: a link reference definition is read out of its paragraph, and a line
    # indented four columns after it goes on with that paragraph; markdown-it-py read the line as
    # indented code, hiding its marker
    ("[docs]: https://example.com/docs\n    and tests pass [seq:1]\n", [(2, 1)]),
    ("> [docs]: /docs\n    and tests pass [seq:1]\n", [(2, 1)]),
    ("- [docs]: /docs\n      and tests pass [seq:1]\n", [(2, 1)]),
    ("[a]: /a\n[b]: /b 'B'\n\tand tests pass [seq:1]\n", [(3, 1)]),
    # ... after a blank line it is indented code
    ("[docs]: /docs\n\n    [seq:1]\n", []),
])
def test_a_line_after_a_link_reference_definition_goes_on_with_its_paragraph(body: str, markers: list):
    from replaybook.packet.claims import cited_markers

    assert cited_markers(body) == markers


@pytest.mark.parametrize("body,markers", [
    # CommonMark 0.31.2 §5.1: a ">" indented four columns goes on with no block quote.  After a
    # paragraph it continues the paragraph lazily (a "<!--" there is text); after anything else the
    # quote ends and the line is indented code.  markdown-it-py kept such lines in the quote
    ("> The fix works\n    > <!-- and tests pass [seq:1]\n", [(2, 1)]),
    ("> # Results\n    > [seq:1]\n", []),
    (">\n\t> [seq:1]\n", []),
    ("- > # Results\n      > [seq:1]\n", []),
    ("> > The fix works\n>     > <!-- and tests pass [seq:1]\n", [(2, 1)]),
    # up to three spaces in, it is the quote's
    ("> # Results\n   > tests pass [seq:1]\n", [(2, 1)]),
])
def test_a_quote_marker_indented_four_columns_does_not_go_on_with_the_quote(body: str, markers: list):
    from replaybook.packet.claims import cited_markers

    assert cited_markers(body) == markers
