"""The claims linter: every claim in a PR body must cite a step of the session log that backs it.

Markers are ``[seq:N]`` (``N`` a step's ``seq``), anywhere in the Markdown body except inside
fenced code blocks (```` ``` ```` / ``~~~``), inline code spans and HTML comments.  A marker
placed right after a sentence's full stop (``It passes. [seq:2]``) belongs to that sentence.

Findings (failures — the linter exits non-zero when there is one):

``cites_missing_step``   the marker cites a seq that is not in the log (it may have run unrecorded)
``cites_failing_step``   the cited step exited non-zero and its clause does not describe a
                         failure (:func:`_describes_failure`), or says something passes
                         (:data:`PASS_CLAIM`) while no step cited there passed
``cites_passing_step_for_failure``  its clause says something fails (:data:`FAILURE_CLAIM`)
                         but the cited step exited 0, and no other step cited there failed
``malformed_marker``     ``[seq:…]`` whose content is not a step number
``cites_non_check_step`` its clause says tests (or a build, a lint, a type check) pass, but no
                         passing step cited there runs one, and this step is known not to:
                         ``echo "1 passed"``, ``true``, ``cat old-output.txt``, ``ls``, a runner
                         of another kind (``ruff check`` for "tests pass"), or a runner whose
                         exit code the line hides (``pytest | tee log`` without pipefail,
                         ``pytest || true``), or a test runner whose stored output shows it ran
                         no test (:func:`~.runners.ran_no_tests`: ``1 test collected``, ``no tests
                         ran`` — ``addopts`` or ``PYTEST_ADDOPTS`` the line does not show).  Or its
                         clause says something failed, but no
                         failing step cited there failed because such a check failed, and this
                         step is known not to have: ``false``, ``exit 1``, ``! pytest``, a runner
                         that stopped before checking anything (``pytest`` exiting 5)
``cites_output_without_text``  its clause says the step printed, showed or raised ``X`` — a
                         failure (:data:`FAILS_WITH`: "fails with `ZeroDivisionError`", "raises
                         KeyError"; "fails before the fix with `X`"; :data:`SHOWS_TEXT`: "fails,
                         printing `X`") or a pass ("passes with `3 passed`", "prints `X`") — and
                         the stored outputs of the steps cited there with that outcome do not
                         contain it (:meth:`_Judge.said_texts`); each text listed is checked
                         ("fails with `A` and `B`")
``cites_wrong_exit_code``  its clause says what the step exited with (:data:`EXIT_STATUS`: "exits
                         with code 2", "exit code 4", "exits non-zero", "exits successfully";
                         "the CLI returns 2") and it exited otherwise.  A stated status that fits a
                         failing step describes its failure, and is not held to a check runner:
                         "the CLI exits 2 on a missing config" is about a program's behaviour
``cites_other_command``  its clause names a command in a code span (```pytest -q```, ```make test```,
                         ```python bench.py```) that no step cited there ran: every word of the span
                         but options and launchers (``python -m``, ``uv run``) must be in the step's
                         command (:func:`_runs_command`)
``cites_edited_output``  judging the marker would read the step's stored output ("fails with
                         `X`", a failing ``make test``), and the file no longer hashes to the step's
                         ``out_sha`` (:class:`EditedOutput`): it was changed after recording

Each marker is judged against the clause(s) it cites (:func:`_marker_groups`): adjacent markers
form a group that cites the text since the previous group, split into clauses; with as many
markers as clauses they pair in order.  A failure described in one clause excuses only the steps
of that clause: "fails before the fix [seq:1] and passes after [seq:2]" needs step 2 to pass.

Warnings (reported, never failures):

``unsupported_claim``    a sentence with no marker that reads like a factual claim — it uses a
                         word from :data:`CLAIM_WORDS` (passes, fails, fixes, faster, 30% …).
                         A heuristic: headings and questions are never flagged.
``cites_missing_output``  its clause says the step showed ``X``, the log marks the step's
                         output stored, but the file is not there (:class:`MissingOutput`): ``X``
                         is not checked
``cites_one_step_for_comparison``  its clause compares (:data:`COMPARATIVE`: "improved", "faster",
                         "12% less", "no regressions") but the marker's group cites fewer than two
                         steps of the log: one run has nothing to compare to; cite the baseline too
``cites_figure_not_in_output``  its clause states a figure (:data:`FIGURE`: "under 1ms", "12%") and
                         no cited step's raw output (before normalization) holds that number, or
                         none was stored to check it against
``cites_normalized_text``  its clause quotes text (``prints `elapsed 11.956ms```) that the cited
                         step's stored output holds only once normalized (``elapsed <DUR>``), and
                         its raw output was not stored (older recordings): the figures in the
                         quote are not checked
``cites_unrecognised_command``  as ``cites_non_check_step``, but the linter cannot tell what the
                         step runs (``./run_tests.sh``, ``make demo``, ``python -c …``, a line it
                         cannot parse, a pipe in a log that does not record pipefail), or whose
                         failure its exit code is (``cd tests && pytest``: maybe ``cd``'s), or whether
                         a test ran (``go test -run X`` whose output was not stored, or holds no
                         summary line of the runner: a name filter exits 0 also when it matches
                         nothing)

A pass claim backs a passing step only when the step can show it: a clause about a check
(:data:`CHECK_SUBJECTS` — "all tests pass", "lint is clean", "the build is green", "mypy is
clean", "it compiles", "CI is green", "no tests fail"; a code span holding a runner's command)
needs at least one cited step that exited 0 and ran a runner of that kind.  A failure claim is
held the same way: at least one cited failing step must have failed because a runner of that
kind failed — of any kind when the clause names none ("reproduced the crash").  Which commands
run which checks, and whose failure a step's exit code is, is decided by the program actually
executed, in :mod:`replaybook.packet.runners` (a registry of runners and wrappers): the exit code
of a step that printed "1 passed" proves nothing about the tests.

A clause whose verb has no subject, or only a pronoun ("passes after", "it passes"), is about
what its sentence names, or when the sentence names nothing, about what the sentence before it
names (:class:`_Subject`): "The new test fails before the fix [seq:1] and passes after [seq:2]"
holds step 2 to a test runner.  A pass claim about nothing a check names ("the fix works") is
not held to a runner.

A cited failing step is accepted when its clause says something fails (:data:`FAILURE_CLAIM`),
says what the failure raised (:data:`FAILS_WITH`), or uses an expected-failure phrase
(case-insensitive): "expected failure", "expected to fail", "fails/failed as expected",
"fails/failed/failing before the fix|change|patch", "fails without the fix|change|patch",
"failing test(s)", "red before", "reproduces/reproduced the bug|issue|failure|problem|regression|
crash|error|…", "the bug|issue|… is reproduced", "xfail".  A phrase that is negated ("not an
expected failure", "no xfail here": a negation word among the three words before it, in the same
clause) does not count.
"""

from __future__ import annotations

import bisect
import functools
import os
import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

from ..errors import InputError
from .log import RAW_DIR, ChainFinding, outputs_dir_for, printable, read_log
from .normalize import BUILTIN_RULES, RuleSet
from .normalize import out_sha as normalized_sha
from .redact import redact_command
from .runners import (BUILD, KINDS, LINT, TEST, TYPECHECK, FailureCheck, StepCheck, classify_command,
                      classify_failed_step, classify_failure, classify_step, ran_no_tests,
                      test_summary_lines)

__all__ = [
    "EXPECTED_FAILURE",
    "FAILURE_CLAIM",
    "PASS_CLAIM",
    "FAILS_WITH",
    "SHOWS_TEXT",
    "NEGATIONS",
    "CLAIM_WORDS",
    "CHECK_SUBJECTS",
    "ANY_CHECK",
    "FINDING_KINDS",
    "WARNING_KINDS",
    "Finding",
    "ClaimsReport",
    "lint_claims",
    "lint_claims_text",
    "mask_code",
    "stored_output",
    "read_stored_output",
    "EditedOutput",
    "EXIT_STATUS",
    "COMPARATIVE",
    "FIGURE",
    "read_raw_output",
    "cited_markers",
    "replay_statuses",
    "read_replay_json",
    "ReplayedMarker",
]

# What a failing step can show: "reproduces the bug", "the crash is reproduced".
_TROUBLE = r"(?:bug|issue|failure|problem|regression|crash|error|exception|panic|segfault|hang|leak)"

#: Phrasings that describe a cited non-zero step as an expected failure.
EXPECTED_FAILURE = re.compile(
    r"\bexpected(?:ly)?[ -](?:to[ -])?fail(?:ure|s|ed|ing)?\b"
    r"|\bfail(?:s|ed|ing)?\s+as\s+expected\b"
    r"|\bfail(?:s|ed|ing)?\s+(?:before|without)\s+the\s+(?:fix|change|patch)\b"
    r"|\bfailing\s+tests?\b"
    r"|\bred\s+before\b"
    r"|\breproduc(?:es|ed|ing)?\s+the\s+" + _TROUBLE + r"\b"
    r"|\b" + _TROUBLE + r"\s+(?:is|was|gets|got)\s+reproduced\b"
    r"|\bxfail",
    re.I,
)

#: Phrasings that say something fails: a sentence with one (not negated) claims a failure, so
#: a cited step that exited 0 does not back it.  "failing test(s)" alone is a noun ("the failing
#: test passes now") and is not here.
FAILURE_CLAIM = re.compile(
    r"\bfail(?:s|ed)?\b"
    r"|\b(?:is|are|was|were|still|keeps?|kept)\s+failing\b"
    r"|\bexpected(?:ly)?[ -](?:to[ -])?fail\w*"
    r"|\bxfail\w*"
    r"|\b(?:is|are|was|were|goes|go|went|turns?|turned|stays?|stayed)\s+red\b|\bred\s+(?:before|without)\b"
    r"|\breproduc(?:es|ed|ing)?\s+the\s+" + _TROUBLE + r"\b"
    r"|\b" + _TROUBLE + r"\s+(?:is|was|gets|got)\s+reproduced\b"
    r"|\b(?:is|are|was|were|gets|got)\s+reproduced\b"
    r"|\berror(?:s|ed)\s+out\b|\berrored\b|\bcrash(?:es|ed)\b"
    r"|\b(?:does|do|did|is|are|was|were|will|would|could|can)(?:\s+not|n't)\s+pass\w*"
    r"|\bno\s+longer\s+pass(?:es|ed)?\b"
    r"|\b(?:is|are|was|were|still)\s+broken\b|\bbreaks\b"
    r"|\b(?:gives?|gave|returns?|returned|prints?|printed|produces?|produced|computes?|computed|shows?|showed)"
    r"\s+(?:a\s+|an\s+|the\s+)?(?:wrong|incorrect|bad)\b"
    r"|\b(?:shows?|showed|exposes?|exposed|reveals?|revealed|triggers?|triggered|hits?)\s+the\s+" + _TROUBLE + r"\b"
    r"|\b(?:error|exception|traceback)s?\s+(?:shows?\s+up|showed\s+up|appears?|appeared|(?:is|was)\s+raised)\b",
    re.I,
)

#: Phrasings that say something passes (not negated): a clause with one, citing only failing
#: steps, is not backed ("fails before the fix and passes after [seq:1][seq:2]" with both failing).
PASS_CLAIM = re.compile(
    r"\bpass(?:es|ed|ing)?\b|\bgreen\b|\bsucceed(?:s|ed)?\b|\bworks?\b|\bclean\b",
    re.I,
)

#: Phrasings that say what a failure printed or raised: "fails with X", "raises X", "exits with
#: code 2".  They describe a cited failing step (as :data:`FAILURE_CLAIM` does), and ``X`` — a code
#: span, a quoted text, or a name such as ``ZeroDivisionError`` or ``SIGSEGV`` — must be in the
#: step's stored output.  "raises X" alone is no failure claim: a passing test may check that a
#: call raises.
FAILS_WITH = re.compile(
    r"\b(?:fail(?:s|ed|ing)?|error(?:s|ed)?(?:\s+out)?|crash(?:es|ed)?|exit(?:s|ed)?|die[sd]?|abort(?:s|ed)?"
    r"|panic(?:s|ked)?|stop(?:s|ped)?|breaks?|broke)\s+with\s+(?:an?\s+|the\s+)?(?=\S)"
    r"|\b(?:rais(?:es|ed|ing)|throw(?:s|n|ing)?|threw)\s+(?:an?\s+|the\s+)?"
    r"(?=[\ue000-\uf8ff\"'\u201c`]|[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Fault|Failure)\b)",
    re.I,
)

# Where a quoted text, a code span or a name such as ``ZeroDivisionError`` starts.
_SAID = r"(?=[\ue000-\uf8ff\"'\u201c`]|[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Warning|Fault|Failure)\b)"
# Words between a verb and its "with" ("fails before the fix with X"), none of which makes "with" say
# how the step ran ("fails when run with `--strict`") rather than what it printed.
_GAP = (r"(?:\s+(?!(?:when|whenever|if|unless|run|ran|running|called|invoked|using|used|given|under|built"
        r"|compiled|configured|only|together|along|combined|compared|with)\b)[\w'-]+){0,6}?")
# "the message `X`", "the error "X"": a noun between a verb and the text it names.
_NOUN = r"(?:(?:error|warning|message|line|text|summary|output)\s+)?"

#: Phrasings that say what a step printed or showed, whether it failed or passed: "prints `X`",
#: "printing "X"", "shows `X`", "outputs `X`", "reports `X`", "displays", "logs", "emits".  ``X`` must be
#: in the stored output of a step cited there.  Bare "log", "report", "output" and "display" are
#: nouns too ("the log `session.jsonl`") and are not here.
SHOWS_TEXT = re.compile(
    r"\b(?:print(?:s|ed|ing)?|show(?:s|ed|n|ing)?|output(?:s|ted|ting)|report(?:s|ed|ing)|display(?:s|ed|ing)"
    r"|log(?:s|ged|ging)|emit(?:s|ted|ting))\s+(?:out\s+)?(?:an?\s+|the\s+)?"
    + _NOUN + _SAID,
    re.I,
)

#: A failure said to show ``X`` with words between the verb and "with": "fails before the fix with
#: `X`", "errors on main with "X"", "fails with the message `X`" (:data:`FAILS_WITH` is the verb right
#: before "with" and the text right after it).
_FAILS_LATER_WITH = re.compile(
    r"\b(?:fail(?:s|ed|ing)?|error(?:s|ed)?|crash(?:es|ed)?|exit(?:s|ed)?|die[sd]?|abort(?:s|ed)?"
    r"|panic(?:s|ked)?|stop(?:s|ped)?|breaks?|broke)" + _GAP + r"\s+with\s+(?:an?\s+|the\s+)?" + _NOUN + _SAID,
    re.I,
)

#: A pass said to show ``X``: "passes with `3 passed`", "passes after the fix with `3 passed`",
#: "succeeds with "ok"".  Only a text that reads as a result (:data:`_RESULT_LIKE`) is checked: "passes
#: with `Python 3.12`", "with `--strict`" or "with `pytest -q`" say how or where the step ran.
_PASSES_WITH = re.compile(
    r"\b(?:pass(?:es|ed|ing)?|succeed(?:s|ed|ing)?)" + _GAP + r"\s+with\s+(?:an?\s+|the\s+)?" + _NOUN +
    r"(?=[\ue000-\uf8ff\"'\u201c`])",
    re.I,
)

_EXIT_NUMBER = r"(?:(?P<n>\d{1,3})(?!\.?\d|%)|(?P<span>[\ue000-\uf8ff]))"
_EXIT_VERB = r"\b(?:exit(?:s|ed|ing)?|terminat(?:es|ed|ing))\s+(?:with\s+)?(?:an?\s+|the\s+)?"
_EXIT_NOUN = r"\b(?:(?:exit|return|status)[ _-]?(?:code|status)|returncode|rc)\s*(?:(?:is|was|of|=|==|:)\s*)?" \
             r"(?:still\s+|always\s+|then\s+)?"

#: Phrasings that say what exit status a step ended with: "exits with code 2", "exits 2", "exited
#: with status 0", "exit code 4", "its exit code is 2", "(exit 2)", "return code 2", "exits with
#: `2`" (``n``, or ``span``: a code span holding the number); "exits non-zero", "exits with a
#: non-zero status", "exits with an error", "exit code is non-zero" (``nonzero``); "exits zero",
#: "exits successfully", "exits cleanly" (``zero``).  "returns N" (:data:`_RETURNS`) is weaker: a
#: function returns values too.
EXIT_STATUS = re.compile(
    r"(?:" + _EXIT_VERB + r"(?:(?:exit|return|status|error)\s+)?(?:(?:code|status)\s+)?(?:of\s+)?|" + _EXIT_NOUN + r")"
    + _EXIT_NUMBER
    + r"|(?P<nonzero>" + _EXIT_VERB + r"(?:non[- ]?zero|error|failure)(?:\s+(?:exit\s+)?(?:code|status))?\b"
    r"|" + _EXIT_VERB + r"unsuccessfully\b"
    r"|" + _EXIT_NOUN + r"(?:non[- ]?zero|not\s+0\b|not\s+zero))"
    r"|(?P<zero>" + _EXIT_VERB + r"(?:zero|successfully|cleanly|normally|with\s+success)\b)",
    re.I,
)

#: "returns 2", "the CLI returned 1 when …": an exit status only when the number is not followed by
#: a noun ("returns 2 items") and the clause names a program (:data:`_PROGRAM_WORDS`, or a check
#: such as pytest): "mean() returns 2" says what a function computed.
_RETURNS = re.compile(
    r"\breturn(?:s|ed|ing)?\s+" + _EXIT_NUMBER
    + r"(?=\s*(?:$|[^\w\s]|(?:when|whenever|if|on|for|after|before|with|without|because|since|unless|as|in|under"
      r"|again|now|instead|here|there|and|but|while|once|too|also)\b))",
    re.I,
)
_PROGRAM_WORDS = re.compile(r"\b(?:CLI|command|program|script|binary|executable|process|tool|app|application"
                            r"|daemon|server|service|entry[ -]?point)s?\b", re.I)


@dataclass(frozen=True)
class _ExitClaim:
    """What a clause says a step exited with: ``code`` (a number), or ``nonzero`` / ``zero``."""

    text: str
    code: int | None = None
    nonzero: bool = False
    weak: bool = False  # "returns N"

    def fits(self, exit: int) -> bool:
        if self.code is not None:
            return exit == self.code
        return exit != 0 if self.nonzero else exit == 0

    @property
    def said(self) -> str:
        if self.code is not None:
            return f"exits {self.code}"
        return "exits non-zero" if self.nonzero else "exits 0"


def _exit_matches(clause: str) -> list[re.Match[str]]:
    """The exit-status phrases of ``clause`` (:data:`EXIT_STATUS`, :data:`_RETURNS`), in order."""
    found = list(EXIT_STATUS.finditer(clause))
    for m in _RETURNS.finditer(clause):
        if not any(f.start() <= m.start() < f.end() or m.start() <= f.start() < m.end() for f in found):
            found.append(m)
    return sorted(found, key=lambda m: m.start())


def _exit_claims(clause: str, spans: list[tuple[int, int, str]]) -> list[_ExitClaim]:
    """What ``clause`` says about a step's exit status (not negated: "does not exit 0" says nothing)."""
    out: list[_ExitClaim] = []
    for m in _exit_matches(clause):
        if _negated(clause, m.start()):
            continue
        weak = m.re is _RETURNS
        groups = {"nonzero": None, "zero": None, **m.groupdict()}
        if groups.get("nonzero"):
            out.append(_ExitClaim(m.group(0), nonzero=True))
        elif groups.get("zero"):
            out.append(_ExitClaim(m.group(0), code=0))
        elif groups.get("n") is not None:
            if int(groups["n"]) <= 255:  # "returns 404" is an HTTP status, not an exit code
                out.append(_ExitClaim(m.group(0), code=int(groups["n"]), weak=weak))
        elif groups.get("span"):
            code = _code_of(groups["span"], spans)
            if code and re.fullmatch(r"\d{1,3}", code[0]) and int(code[0]) <= 255:
                out.append(_ExitClaim(m.group(0), code=int(code[0]), weak=weak))
    return out


def _without_exit(clause: str, spans: list[tuple[int, int, str]]) -> str:
    """``clause`` with its exit-status phrases blanked (same length), so that "exits with `2`" is not
    read as output text, nor "fails with exit code 4" as a claim about what the failure printed."""
    out = clause
    for m in _exit_matches(clause):
        if m.groupdict().get("span") and not _exit_claims(m.group(0), spans):
            continue  # "exits with `ValueError`": output text, not a status
        out = out[:m.start()] + " " * (m.end() - m.start()) + out[m.end():]
    return out


#: What a clause that says something passes names as the thing that passes, by kind of check
#: (:data:`replaybook.packet.runners.KINDS`): "all tests pass" → tests, "lint is clean" → lint.
#: A cited step backs such a clause only if one of its runners shows that kind.
CHECK_SUBJECTS: dict[str, re.Pattern[str]] = {
    TEST: re.compile(r"\btests?\b|\btest[ -]?suites?\b|\bsuites?\b|\bspecs?\b|\btest_\w+"
                     r"|\b(?:pytest|unittest|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest)\b", re.I),
    BUILD: re.compile(r"\bbuilds?\b|\bcompil(?:es|ed|ation|er|ing)\b", re.I),
    LINT: re.compile(r"\blint(?:s|er|ers|ing)?\b|\bformat(?:ting)?[ -]check\w*"
                     r"|\b(?:ruff|flake8|pylint|eslint|clippy|rubocop|pre-commit|shellcheck|golangci-lint)\b", re.I),
    TYPECHECK: re.compile(r"\btype[ -]?check(?:s|er|ers|ing|ed)?\b|\b(?:mypy|pyright|tsc|typing)\b", re.I),
}

#: A pass claim about checks in general ("CI is green", "all checks pass", "everything passes"):
#: backed by a runner of any kind, when the clause names no kind of :data:`CHECK_SUBJECTS`.
ANY_CHECK = re.compile(
    r"(?-i:\bCI\b)|(?<!type )(?<!type-)\bchecks?\b|\bgreen\b|\b(?:everything|all)\s+pass(?:es|ed)?\b",
    re.I,
)

#: Verbs that claim a check passed by themselves, at the end of a clause ("it builds", "the
#: crate compiles cleanly", "it type-checks"): a pass claim without a word of :data:`PASS_CLAIM`.
_SELF_PASS = re.compile(
    r"\b(?:builds|compiles|type[ -]?checks)(?:\s+(?:fine|cleanly|successfully|ok|without\s+(?:errors?|warnings?)))?"
    r"\s*$",
    re.I,
)

#: Words that negate a phrase when they stand among the three words before it (same clause).
NEGATIONS = frozenset({"not", "no", "never", "nothing", "none", "nobody", "neither", "nor", "without",
                       "zero", "0", "cannot", "longer"})

_CLAUSE_BREAK = re.compile(r"[,;:()\u2014]|\s-\s|\b(?:but|and|while|whereas|although)\b", re.I)


def _negated(text: str, start: int) -> bool:
    """True when the phrase starting at ``start`` is negated (see :data:`NEGATIONS`)."""
    before = text[:start]
    cut = list(_CLAUSE_BREAK.finditer(before))
    if cut:
        before = before[cut[-1].end():]
    words = re.findall(r"[\w']+", before.lower())[-3:]
    return any(w in NEGATIONS or w.endswith("n't") for w in words)


def _says(pattern: re.Pattern[str], text: str) -> bool:
    """``text`` holds a match of ``pattern`` that is not negated."""
    return any(not _negated(text, m.start()) for m in pattern.finditer(text))


#: Words that make a sentence a factual claim (for ``unsupported_claim`` warnings).
CLAIM_WORDS = re.compile(
    r"\b(?:pass(?:es|ed|ing)?|fail(?:s|ed|ing|ure)?|fix(?:es|ed)?|works?|green|clean|succeed(?:s|ed)?|"
    r"improv(?:es|ed|ement)|faster|slower|speed(?:s|ed)?\s+up|reduc(?:es|ed)|increas(?:es|ed)|"
    r"no\s+longer|resolv(?:es|ed)|verif(?:y|ies|ied)|confirm(?:s|ed)|tested|reproduc(?:es|ed)|"
    r"all\s+tests|benchmark\w*|coverage|regression|broken|errors?)\b"
    r"|\b\d+(?:\.\d+)?\s?%|\b\d+(?:\.\d+)?x\b",
    re.I,
)

#: Finding kinds (failures) and warning kinds.
FINDING_KINDS = ("cites_missing_step", "cites_failing_step", "cites_passing_step_for_failure", "malformed_marker",
                 "cites_non_check_step", "cites_output_without_text", "cites_wrong_exit_code", "cites_edited_output",
                 "cites_other_command")
WARNING_KINDS = ("unsupported_claim", "cites_unrecognised_command", "cites_missing_output",
                 "cites_one_step_for_comparison", "cites_figure_not_in_output", "cites_normalized_text")

#: Wordings that compare two states (before and after a change): "improved", "faster", "30% less",
#: "no regressions", "speeds up".  One step has nothing to compare to: a clause with one, citing
#: fewer than two steps of the log, is a ``cites_one_step_for_comparison`` warning.  "regression
#: test" names a test, and "reproduces the regression" a failure (:data:`EXPECTED_FAILURE`): neither
#: compares.
COMPARATIVE = re.compile(
    r"\b(?:improv(?:e|es|ed|ing|ements?)|faster|slower|quicker|speed(?:s|ed)?[ -]?ups?|speedups?"
    r"|reduc(?:e|es|ed|ing|tions?)|increas(?:e|es|ed|ing)|decreas(?:e|es|ed|ing)|outperform\w*|better|worse"
    r"|regress(?:ion|ions|ed|es)?(?!\s+tests?\b))\b"
    r"|\bby\s+\d+(?:\.\d+)?\s?%|\b\d+(?:\.\d+)?\s?%\s+(?:faster|slower|less|more|fewer|lower|higher|smaller"
    r"|bigger|larger|quicker|better|worse)\b|\b\d+(?:\.\d+)?\s?[x\u00d7](?!\w)",
    re.I,
)

#: A figure a clause states: a number with a unit — ``12%``, ``2x``, ``1ms``, ``0.5 s``, ``3 seconds``,
#: ``40 MB``.  Its number must be in a cited step's raw output (``cites_figure_not_in_output``).
FIGURE = re.compile(
    r"(?<![\w.])(?P<num>\d+(?:\.\d+)?)\s?(?P<unit>%|[x\u00d7](?!\w)|ns\b|us\b|\u00b5s\b|ms\b|s\b|secs?\b"
    r"|seconds?\b|mins?\b|minutes?\b|hours?\b|h\b|[KMGT]i?B\b|[kK]B\b|bytes?\b)",
)

_MARKER = re.compile(r"\[\s*seq\s*:\s*([^\]\n]*)\]", re.I)
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+")
_TABLE_ROW = re.compile(r"^\s*\|")
_QUOTE = re.compile(r"^\s*>\s?")
_ABBREV = {"e.g", "i.e", "etc", "vs", "cf", "fig", "no", "approx", "mr", "mrs", "dr", "al", "ca"}
_SENT_END = re.compile(r"[.!?]+[)\"'*_\]]*(?=\s|$)")


@dataclass(frozen=True)
class Finding:
    """One finding or warning.

    Attributes:
        kind: one of :data:`FINDING_KINDS` or :data:`WARNING_KINDS` (or ``accepted``).
        severity: ``error`` (a finding), ``warning``, or ``accepted``.
        line: 1-based line in the body where the marker (or the sentence) is.
        seq: the cited step, if the finding is about a marker with a number.
        sentence: the sentence concerned, as written (whitespace collapsed).
        message: what is wrong and what to do, in words.
    """

    kind: str
    severity: str
    line: int
    seq: int | None
    sentence: str
    message: str

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return dict(self.__dict__)


@dataclass
class ClaimsReport:
    """The linter's answer for one PR body and one session log.

    Attributes:
        body_path, log_path: the inputs.
        findings: failures, in body order: one per marker with a finding.
        warnings: ``unsupported_claim`` and ``cites_unrecognised_command`` warnings, in body order
            (a marker with a warning is still accepted).
        accepted_markers: the markers that raised no finding, one :class:`Finding` each (kind and
            severity ``accepted``, empty message), in body order.  Each marker is either here or
            has a finding: ``markers == len(accepted_markers) + markers_with_findings``.
        accepted_steps: sorted seqs cited by at least one accepted marker and by no marker with a
            finding (a step cited in an error elsewhere is not listed).
        steps_with_findings: sorted seqs cited by at least one marker with a finding (seqs the log
            does not hold included).
        markers: number of ``[seq:…]`` markers found outside code.
        log_warnings: what is wrong with the log itself without making it unreadable (gaps in
            seq of an unchained log: lines were removed), each naming the file and line; never a
            failure.
        log_chain: the log's chain (:attr:`~.log.SessionLog.chain`): ``chained``, ``unchained``
            or ``damaged``; ``None`` when no log was read.
        log_findings: the damage the chain shows (lines removed, renumbered, edited, the end
            cut off), each a :class:`~.log.ChainFinding` naming a line of the log: failures,
            since a ``[seq:N]`` marker may then name another step than was recorded.
    """

    body_path: str
    log_path: str
    findings: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)
    accepted_markers: list[Finding] = field(default_factory=list)
    accepted_steps: list[int] = field(default_factory=list)
    steps_with_findings: list[int] = field(default_factory=list)
    markers: int = 0
    log_warnings: list[str] = field(default_factory=list)
    log_chain: str | None = None
    log_findings: list[ChainFinding] = field(default_factory=list)
    replayed: list["ReplayedMarker"] | None = None

    def attach_replay(self, statuses: Mapping[int, tuple[str, list[str]]]) -> list["ReplayedMarker"]:
        """Say, for each marker with a step number, how the step it cites replayed, and keep it in
        :attr:`replayed` (body order).

        Args:
            statuses: ``{seq: (status, reasons)}`` from a replay (:func:`replay_statuses`): status
                ``ok``, ``DIVERGED`` or ``UNCHECKED``; a seq the replay did not run is ``not replayed``.

        Returns:
            the :class:`ReplayedMarker` list.  The exit code is not changed: the replay's own verdict
            says whether the packet passes.
        """
        cited = [(f.line, f.seq, f.sentence, f.kind) for f in self.accepted_markers + self.findings
                 if f.seq is not None]
        out = []
        for line, seq, sentence, kind in sorted(cited, key=lambda c: c[0]):
            status, reasons = statuses.get(seq, ("not replayed", []))
            out.append(ReplayedMarker(line, seq, sentence, kind, status, list(reasons)))
        self.replayed = out
        return out

    @property
    def exit_code(self) -> int:
        """1 when there are findings (in the body or in the log's chain), else 0 (warnings never fail)."""
        return 1 if self.findings or self.log_findings else 0

    @property
    def markers_with_findings(self) -> int:
        """How many markers raised a finding (each raises at most one)."""
        return len(self.findings)

    @property
    def markers_accepted_with_warnings(self) -> int:
        """How many accepted markers carry a ``cites_unrecognised_command`` warning."""
        return len({(w.line, w.seq) for w in self.warnings if w.seq is not None})

    def to_dict(self) -> dict:
        """A JSON-ready dict (``--format json``).  ``markers_*`` count markers, ``*_steps`` list seqs."""
        return {"body": self.body_path, "log": self.log_path, "markers": self.markers,
                "markers_accepted": len(self.accepted_markers),
                "markers_accepted_with_warnings": self.markers_accepted_with_warnings,
                "markers_with_findings": self.markers_with_findings,
                "accepted_steps": list(self.accepted_steps),
                "steps_with_findings": list(self.steps_with_findings),
                "findings": [f.to_dict() for f in self.findings],
                "warnings": [w.to_dict() for w in self.warnings],
                "accepted_markers": [a.to_dict() for a in self.accepted_markers],
                "log_warnings": list(self.log_warnings), "log_chain": self.log_chain,
                "log_findings": [{"kind": f.kind, "line": f.line_no, "message": f.message}
                                 for f in self.log_findings],
                "exit_code": self.exit_code,
                **({"replayed": [r.to_dict() for r in self.replayed]} if self.replayed is not None else {})}


@dataclass(frozen=True)
class ReplayedMarker:
    """How the step a marker cites replayed.

    Attributes:
        line: 1-based body line of the marker.
        seq: the step it cites.
        sentence: its sentence, as shown in findings.
        lint: the linter's verdict on the marker: ``accepted`` or a finding kind.
        status: the step's replay status: ``ok``, ``DIVERGED``, ``UNCHECKED``, or ``not replayed``
            (the replay did not run it: not in the log, or the replay stopped first).
        reasons: why the step diverged, from the replay (empty when ok).
    """

    line: int
    seq: int
    sentence: str
    lint: str
    status: str
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """A JSON-ready dict."""
        return {"line": self.line, "seq": self.seq, "sentence": self.sentence, "lint": self.lint,
                "status": self.status, "reasons": list(self.reasons)}


def cited_markers(body: str) -> list[tuple[int, int]]:
    """``(line, seq)`` of every ``[seq:N]`` marker with a step number in a PR body's Markdown, in body
    order, leaving out those in fenced or indented code, inline code and HTML comments (as the linter
    does).  Lines are 1-based.

    Raises:
        InputError: markdown-it-py failed on the body (:func:`mask_code`).
    """
    masked = mask_code(body)
    starts = _line_starts(body)
    return [(_line_of(starts, m.start()), _seq_of(m.group(1).strip())) for m in _MARKER.finditer(masked)
            if _step_number(m.group(1).strip()) and _seq_of(m.group(1).strip()) <= _MAX_SEQ]


def replay_statuses(verdict: object) -> dict[int, tuple[str, list[str]]]:
    """``{seq: (status, reasons)}`` of a replay: a :class:`~.replay.PacketVerdict`, or its JSON dict
    (``replaybook packet replay --format json``)."""
    steps = verdict.get("steps", []) if isinstance(verdict, dict) else getattr(verdict, "steps", [])
    out: dict[int, tuple[str, list[str]]] = {}
    for s in steps:
        get = s.get if isinstance(s, dict) else (lambda k, d=None, s=s: getattr(s, k, d))
        seq, status = get("seq"), get("status")
        if isinstance(seq, int) and isinstance(status, str):
            reasons = get("reasons") or []
            out[seq] = (status, [str(r) for r in reasons] if isinstance(reasons, list) else [])
    return out


def read_replay_json(path: str | os.PathLike) -> dict[int, tuple[str, list[str]]]:
    """:func:`replay_statuses` of a file written by ``replaybook packet replay --format json``.

    Raises:
        InputError: the file cannot be read, is not JSON (naming the line), or is not a replay's
            JSON (no ``steps`` list, or a step without an integer ``seq`` and a text ``status``:
            naming its line).
    """
    import json

    from .. import _yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
        data = json.loads(text)
    except OSError as exc:
        raise InputError(f"cannot read replay result: {exc.strerror or exc}", path) from exc
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"not a replay's JSON: {exc}", path, getattr(exc, "lineno", None)) from exc
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise InputError("not a replay's JSON (write it with: replaybook packet replay session.jsonl "
                         "--format json > replay.json): it has no \"steps\" list", path)
    for i, s in enumerate(data["steps"]):  # (a step it cannot read had silently counted as not replayed)
        seq = s.get("seq") if isinstance(s, dict) else None
        status = s.get("status") if isinstance(s, dict) else None
        if type(seq) is not int or not isinstance(status, str):
            what = ("not an object" if not isinstance(s, dict) else
                    f"its seq {json.dumps(seq)} is not a step number" if type(seq) is not int else
                    f"its status {json.dumps(status)} is not text")  # (in JSON's words: null, true)
            raise InputError(f"not a replay's JSON: steps[{i}]: {what} (write it with: replaybook packet replay "
                             "session.jsonl --format json > replay.json)", path, _yaml.line_at(text, ["steps", i]))
    return replay_statuses(data)


def mask_code(text: str) -> str:
    """``text`` with fenced and indented code blocks, inline code spans and HTML comments blanked
    out, and the backslash of each backslash escape.

    Every masked character becomes a space except newlines, so offsets and line numbers of the
    result are those of ``text``.  The body is read as CommonMark (0.31.2) reads it, by markdown-it-py
    (:func:`_markdown`): code and comments inside list items and block quotes end with them (an
    unclosed fence runs to the end of its container, or of the body outside any); a backtick run
    with no closing run of the same length in its paragraph is literal; a line that begins with
    ``<!--`` (after its container markers: ``- <!--``, ``> <!--``) starts an HTML block, in which
    each comment is masked up to its ``-->`` or, with none, to the end of the block (its list item
    or block quote, or the body), and the rest is shown; elsewhere ``<!--`` is a comment only up to
    a ``-->`` in the same paragraph, and without one it is literal text.  Code spans and comments
    are read left to right, so ``<!--`` inside a code span is code, and a backtick inside a comment
    is comment.

    A backslash before ASCII punctuation is an escape: ``\\``` opens no code span, ``\\<!--`` no
    comment, and ``[seq:3\\]`` is the marker ``[seq:3]`` the reader sees.  An escape that begins a
    line keeps its backslash (``\\# text`` is read on as no heading, ``\\- text`` as no list item).
    In code and HTML a backslash is no escape.

    Where markdown-it-py reads otherwise than CommonMark, the body is read as CommonMark reads it:
    an inline comment ends at its first ``-->`` (:func:`_comment`), and a line that continues a
    paragraph lazily starts no block (:func:`_lazy`), nor ends a link reference definition's
    paragraph (:func:`_reference`), and a ``>`` indented four columns goes on with no quote
    (:func:`_quote`).  Lines nested deeper than markdown-it-py reads (100 levels, where a block quote
    counts one and a list item two: 99 quotes, 49 list items) are kept as prose: their markers count.

    Raises:
        InputError: markdown-it-py failed on the body (a fault of the library, which the message names).
    """
    return _mask(text)[0]


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # (the lines markdown-it-py reads, \r alone included)
_PUNCTUATION = frozenset(string.punctuation)  # what a backslash escapes (CommonMark §2.4)
_READING = "replaybook.claims"  # where the rules below find the _Inline reading a paragraph (markdown-it's env)


class _Inline:
    """What the inline reading of one paragraph or heading found, as offsets into its text
    (markdown-it-py's ``inline`` token content): ``spans`` ``(start, end, content)`` of code spans,
    ``comments`` ``(start, end)`` of HTML comments, ``escapes`` (offsets of escaping backslashes).
    ``bases``: where the text of each image description being read starts in the paragraph's
    (markdown-it-py reads an image's description as a text of its own)."""

    def __init__(self) -> None:
        self.spans: list[tuple[int, int, str]] = []
        self.comments: list[tuple[int, int]] = []
        self.escapes: list[int] = []
        self.bases: list[int] = []
        self._closes: dict[str, int] = {}

    @property
    def base(self) -> int:
        return self.bases[-1] if self.bases else 0

    def last_close(self, src: str) -> int:
        """Where the last ``-->`` of ``src`` starts (-1: none), found once per text."""
        if src not in self._closes:
            self._closes[src] = src.rfind("-->")
        return self._closes[src]


def _recorded(name: str, rule: Callable) -> Callable:
    """markdown-it-py's inline rule ``rule``, which also notes in the :class:`_Inline` reading what
    it read and where: markdown-it-py's inline tokens carry no offsets, but a rule runs with the
    parser at the offset where its token starts, and leaves it where the token ends."""

    def run(state, silent: bool) -> bool:
        reading: _Inline | None = state.env.get(_READING)
        start = state.pos
        if name == "html_inline" and state.src.startswith("<!--", start):
            return _comment(state, silent, reading)
        if silent or reading is None:  # (a look-ahead: nothing is read for good)
            return rule(state, silent)
        if name == "image":  # the description is read as a text of its own, starting after "!["
            reading.bases.append(reading.base + start + 2)
            try:
                return rule(state, silent)
            finally:
                reading.bases.pop()
        if not rule(state, silent):
            return False
        src, end, base = state.src, state.pos, reading.base
        if name == "backticks":
            run_end = start
            while run_end < end and src[run_end] == "`":
                run_end += 1
            if end > run_end:  # (else a run with no closing run: literal backticks)
                n = run_end - start
                reading.spans.append((base + start, base + end, re.sub(r"\s+", " ", src[run_end:end - n]).strip()))
        elif name == "escape":
            if src[start + 1] in _PUNCTUATION:  # (not a hard line break, nor "\a": a backslash shown)
                reading.escapes.append(base + start)
        return True

    return run


def _comment(state, silent: bool, reading: _Inline | None) -> bool:
    """An inline HTML comment as CommonMark 0.31.2 reads it (§6.6): ``<!-->``, ``<!--->``, or ``<!--``
    up to the first ``-->`` in the paragraph; without one, ``<!--`` is text.

    Read here, not by markdown-it-py, whose pattern for a comment (``--`` only before ``>``) reads
    ``<!-- a ---->`` as text, and ``<!-- a ---> b -->`` as one comment up to the second ``-->``."""
    src, start = state.src, state.pos
    last = reading.last_close(src) if reading is not None else src.rfind("-->")
    close = src.find("-->", start + 2, state.posMax) if last >= start + 2 else -1
    if close < 0:
        return False
    if not silent:
        state.push("html_inline", "", 0).content = src[start:close + 3]
        if reading is not None:
            reading.comments.append((reading.base + start, reading.base + close + 3))
    state.pos = close + 3
    return True


_INDENTS = "replaybook.claims.indents"  # (markdown-it's env: where the lists being read stand, in columns)


def _block_rule(name: str, rule: Callable) -> Callable:
    """markdown-it-py's block rule ``rule`` (one that may end a paragraph), which, asked whether a
    line starts its block (``silent``), says no for a line that continues a paragraph lazily
    (:func:`_lazy`); a list also notes where it stands while it is read."""

    def run(state, start: int, end: int, silent: bool) -> bool:
        if silent:
            return False if _lazy(state, start) else rule(state, start, end, silent)
        if name != "list":
            return rule(state, start, end, silent)
        indents = state.env.setdefault(_INDENTS, [])
        indents.append(state.blkIndent)
        try:
            return rule(state, start, end, silent)
        finally:
            indents.pop()

    return run


def _lazy(state, line: int) -> bool:
    """The line continues a paragraph lazily (CommonMark 0.31.2 §5.1, §5.2): it is outside the list
    item or block quote holding the paragraph, and indented four columns or more past the start of
    the container it is in, where no block starts.

    markdown-it-py misses it in two cases, reading the line as the start of a block (a comment
    block, a fence, a heading, a list item) that ends the paragraph, and then as indented code: in a
    block quote inside a block quote (``> > a`` then ``    <!-- x``: the outer quote marks the line
    lazy, ``sCount`` -1, and forgets its indentation), and under a list item whose text starts five
    columns in or more (``1.   a`` then ``    # x``: the line is measured from the item's text, not
    from where the list stands)."""
    indent = state.sCount[line]
    if indent < 0:
        return True
    if indent >= state.blkIndent:
        return False
    base = next((i for i in reversed(state.env.get(_INDENTS, ())) if i <= indent), 0)
    return indent - base >= 4


def _reference(rule: Callable) -> Callable:
    """markdown-it-py's rule for a link reference definition, which leaves the definition to the
    paragraph holding it when the line after it continues that paragraph lazily (CommonMark 0.31.2
    §4.7: a definition is read out of a paragraph): ``[foo]: /url`` then ``    text`` is the definition
    and the text ``text``; markdown-it-py ended the definition there and read ``text`` as indented
    code (or outside the block quote holding the definition)."""

    def run(state, start: int, end: int, silent: bool) -> bool:
        if not rule(state, start, end, silent):
            return False
        line = state.line
        if not silent and line < state.lineMax and not state.isEmpty(line) \
                and (_lazy(state, line) or state.sCount[line] - state.blkIndent >= 4):
            state.line = start  # (the paragraph rule reads it, definition and all: as prose)
            return False
        return True

    return run


def _quote(rule: Callable) -> Callable:
    """markdown-it-py's block quote rule, for which a ``>`` indented four columns or more past where
    the quote stands does not go on with the quote (CommonMark 0.31.2 §5.1: up to three spaces): such
    a line continues the quote's paragraph lazily, or is indented code after it; markdown-it-py read
    ``>`` then ``    > <!-- [seq:1]`` as a comment block in the quote, ``# h`` then ``    > [seq:1]``
    as a marker in it."""

    def run(state, start: int, end: int, silent: bool) -> bool:
        if silent:
            return rule(state, start, end, silent)
        moved: list[tuple[int, int]] = []
        line = start + 1
        while line < end and not state.isEmpty(line):  # (an empty line ends the quote)
            if state.sCount[line] - state.blkIndent >= 4 and state.src[state.bMarks[line] + state.tShift[line]] == ">":
                moved.append((line, state.tShift[line]))
                state.tShift[line] = 0  # (the rule then sees the blanks before it, not a ">")
            line += 1
        try:
            return rule(state, start, end, silent)
        finally:
            for line, shift in moved:
                state.tShift[line] = shift

    return run


@functools.cache
def _markdown():
    """The CommonMark reader: markdown-it-py's ``commonmark`` preset, whose inline rules for code spans,
    raw HTML, backslash escapes and images also note where what they read is (:func:`_recorded`).
    Paragraphs are read by :func:`_mask` itself (the core ``inline`` rule is off)."""
    from markdown_it import MarkdownIt, rules_block, rules_inline

    md = MarkdownIt("commonmark")
    # the preset stops reading at 20 levels of tokens, and each list takes two (the list, its item): a
    # code span 10 lists deep was read as prose.  100 is markdown-it's own default, and takes about 320
    # frames of Python's 1000 at its deepest
    md.options["maxNesting"] = 100
    for name, rule in (("backticks", rules_inline.backtick), ("html_inline", rules_inline.html_inline),
                       ("escape", rules_inline.escape), ("image", rules_inline.image)):
        md.inline.ruler.at(name, _recorded(name, rule))
    for block in list(md.block.ruler.__rules__):  # (the rules that may end a paragraph)
        if block.alt:
            md.block.ruler.at(block.name, _block_rule(block.name, block.fn), {"alt": list(block.alt)})
    md.block.ruler.at("reference", _reference(rules_block.reference))
    md.block.ruler.at("blockquote", _quote(md.block.ruler.__rules__[md.block.ruler.__find__("blockquote")].fn),
                      {"alt": list(md.block.ruler.__rules__[md.block.ruler.__find__("blockquote")].alt)})
    md.core.ruler.disable("inline")
    # each ruler builds its lists of rules on first use, emptied while it fills them: built here, before
    # the reader is shared, a second thread's first lint does not see them empty and read no code
    for ruler in (md.core.ruler, md.block.ruler, md.inline.ruler, md.inline.ruler2):
        ruler.getRules("")
    return md


def _mask(text: str) -> tuple[str, list[tuple[int, int, str]]]:
    """:func:`mask_code`'s text, and the inline code spans it blanked: ``(start, end, content)``
    (``content`` with its whitespace collapsed), in body order.

    Raises:
        InputError: markdown-it-py failed on the body (a fault of the library, saying which).
    """
    md = _markdown()
    out = list(text)

    def blank(a: int, b: int) -> None:
        for i in range(a, b):
            if out[i] != "\n":
                out[i] = " "

    starts: list[int] = []  # each line's offset, and its text without the line end (NUL read as U+FFFD)
    lines: list[str] = []
    for m in _LINE.finditer(text):
        starts.append(m.start())
        lines.append(m.group(0).rstrip("\r\n").replace("\0", "\ufffd"))

    def end_of(line: int) -> int:
        return starts[line] + len(lines[line])

    spans: list[tuple[int, int, str]] = []
    # (a final line end changes nothing CommonMark reads, and markdown-it-py 4.3.0 fails without one
    # on a body ending in a list item's HTML block inside a quote: "> - <!--" then ">")
    try:
        tokens = md.parse(text if text.endswith(("\n", "\r")) or not text else text + "\n", {})
        readings = {k: _Inline() for k, tok in enumerate(tokens) if tok.type == "inline"}
        for k, reading in readings.items():
            md.inline.parse(tokens[k].content, md, {_READING: reading}, [])
    except Exception as exc:  # (IndexError, RuntimeError: the library's own faults, never the body's)
        import markdown_it

        raise InputError(f"cannot read the PR body as Markdown: markdown-it-py {markdown_it.__version__} failed "
                         f"({type(exc).__name__}: {exc}); please report it with the body") from exc
    for k, tok in enumerate(tokens):
        if tok.map is None:
            continue
        first, stop = tok.map
        if tok.type in ("fence", "code_block"):  # whole lines, with their container markers
            blank(starts[first], end_of(stop - 1))
        elif tok.type == "html_block":  # raw HTML is shown, but for its comments
            end = end_of(stop - 1)
            i = text.find("<!--", starts[first], end)
            while i >= 0:
                close = text.find("-->", i + 2, end)  # (<!--> and <!---> close at once)
                blank(i, close + 3 if close >= 0 else end)
                i = text.find("<!--", close + 3, end) if close >= 0 else -1
        elif tok.type == "inline":
            atx = k > 0 and tokens[k - 1].type == "heading_open" and tokens[k - 1].markup.startswith("#")
            spans += _mask_inline(readings[k], tok.content, range(first, stop), atx, starts, lines, out, blank)
    return "".join(out), spans


def _mask_inline(reading: _Inline, content: str, lines_at: range, atx: bool, starts: list[int], lines: list[str],
                 out: list[str], blank: Callable[[int, int], None]) -> list[tuple[int, int, str]]:
    """Blank in ``out`` what ``reading`` found in the inline text ``content`` of a paragraph or heading
    on body lines ``lines_at`` (code spans, HTML comments, escaping backslashes), and return its code
    spans as body offsets."""
    if not (reading.spans or reading.comments or reading.escapes):
        return []
    begins: list[int] = []  # where each line of content starts in it,
    heads: list[int] = []  # where its text (blanks aside) starts in it,
    at: list[int] = []  # and where that text is in the body
    i = 0
    for line, offset, part in _placed(content.split("\n"), lines_at, atx, lines):
        kept = part.lstrip(_blanks())
        begins.append(i)
        heads.append(i + len(part) - len(kept))
        at.append(starts[line] + offset)
        i += len(part) + 1

    def body(c: int) -> int:
        n = bisect.bisect_right(begins, c) - 1
        return at[n] + max(c - heads[n], 0)

    for a, b in reading.comments:
        blank(body(a), body(b - 1) + 1)
    line_heads = set(heads)
    for e in reading.escapes:
        if e not in line_heads:  # (kept at a line's start: "\# text" is no heading to what reads the sentences)
            out[body(e)] = " "
    found = [(body(a), body(b - 1) + 1, content_) for a, b, content_ in reading.spans]
    for a, b, _c in found:
        blank(a, b)
    return found


def _placed(parts: list[str], lines_at: range, atx: bool, lines: list[str]) -> list[tuple[int, int, str]]:
    """``(body line, offset in it, part)``: where each line ``part`` of a paragraph's or heading's inline
    text starts (blanks aside) in the body lines ``lines_at`` that hold it.

    markdown-it-py gives that text without the markers of its containers and the blanks that start
    its lines, trimmed at both ends (lines of blanks alone included): each of its lines, blanks
    aside, is the end of a body line (the last one before its trailing blanks), and a heading's the
    text after its ``#`` run.  The first line where they all fit is taken."""
    trim = _blanks()
    kept = [part.strip(trim) if n == len(parts) - 1 else part.lstrip(trim) for n, part in enumerate(parts)]

    def offset(n: int, s: str) -> int:
        if atx:
            h = s.find("#")
            while 0 <= h < len(s) and s[h] == "#":
                h += 1
            return s.find(kept[n], max(h, 0))
        end = len(s.rstrip(trim)) if n == len(parts) - 1 else len(s)
        return end - len(kept[n]) if s.startswith(kept[n], end - len(kept[n])) else -1

    for first in range(lines_at.start, max(lines_at.stop - len(parts), lines_at.start) + 1):
        where: list[int] = []
        for n in range(min(len(parts), len(lines) - first)):
            where.append(offset(n, lines[first + n]))
            if where[-1] < 0:
                break
        if len(where) == len(parts) and where[-1] >= 0:
            return [(first + n, p, part) for n, (p, part) in enumerate(zip(where, parts))]
    # (not met: the text is read from the first line on, each part where it last shows)
    return [(line, max(lines[line].rfind(kept[n]), 0), part)
            for n, (line, part) in enumerate(zip(range(lines_at.start, len(lines)), parts))]


@functools.cache
def _blanks() -> str:
    """The blanks markdown-it-py trims from a paragraph's text (CommonMark's)."""
    from markdown_it.common.utils import MD_TRIM_CHARS

    return MD_TRIM_CHARS


_CODE_MARK = 0xE000  # inline code span k stands in a clause as chr(_CODE_MARK + k) (a private-use character)
_CODE_MARKS = re.compile("[\ue000-\uf8ff]")


def _mark_code(masked: str, spans: list[tuple[int, int, str]]) -> str:
    """``masked`` with the first character of inline code span k turned into ``chr(0xE000 + k)``,
    so a clause can name a command or a test by code (```pytest tests/test_x.py` fails on main``)
    while its words, markers and offsets stay those of the masked text."""
    out = list(masked)
    for k, (a, _b, _content) in enumerate(spans[:0x1900]):
        out[a] = chr(_CODE_MARK + k)
    return "".join(out)


def _code_of(text: str, spans: list[tuple[int, int, str]]) -> list[str]:
    """The contents of the inline code spans that stand in ``text`` (see :func:`_mark_code`)."""
    return [spans[ord(m.group(0)) - _CODE_MARK][2] for m in _CODE_MARKS.finditer(text)
            if ord(m.group(0)) - _CODE_MARK < len(spans)]


def _unmark(text: str, spans: list[tuple[int, int, str]]) -> str:
    """``text`` with each code span mark written back as the span (`` `content` ``)."""
    def put(m: re.Match[str]) -> str:
        k = ord(m.group(0)) - _CODE_MARK
        return f"`{spans[k][2]}`" if k < len(spans) else ""
    return _CODE_MARKS.sub(put, text)


@dataclass
class _Sentence:
    start: int
    end: int
    line: int
    heading: bool
    markers: list[tuple[int, str, int]] = field(default_factory=list)  # (offset, content, line)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())
    return starts


def _line_of(starts: list[int], offset: int) -> int:
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1


def _blocks(masked: str) -> list[tuple[int, int, bool, bool]]:
    """``(start, end, heading, table)`` text blocks: paragraphs, list items, headings, table rows."""
    blocks: list[tuple[int, int, bool, bool]] = []
    cur: list[int] | None = None  # [start, end]
    pos = 0
    for line in masked.splitlines(keepends=True):
        body = _QUOTE.sub("", line)
        end = pos + len(line.rstrip("\n"))
        if not body.strip():
            cur = None
        elif _HEADING.match(body) or _TABLE_ROW.match(body):
            blocks.append((pos, end, bool(_HEADING.match(body)), bool(_TABLE_ROW.match(body))))
            cur = None
        elif cur is None or _LIST_ITEM.match(body):
            cur = [pos, end]
            blocks.append((pos, end, False, False))
        else:
            cur[1] = end
            blocks[-1] = (cur[0], end, False, False)
        pos += len(line)
    return blocks


def _sentences(masked: str, starts: list[int]) -> list[_Sentence]:
    out: list[_Sentence] = []
    for b_start, b_end, heading, table in _blocks(masked):
        spans: list[tuple[int, int]] = []
        s = b_start
        if not (heading or table):
            for m in _SENT_END.finditer(masked, b_start, b_end):
                word = re.search(r"([\w.]+)$", masked[s:m.start()])
                w = word.group(1).lower().rstrip(".") if word else ""
                if w in _ABBREV or (len(w) == 1 and w.isalpha()):
                    continue
                spans.append((s, m.end()))
                s = m.end()
        if s < b_end and masked[s:b_end].strip():
            spans.append((s, b_end))
        block_sents: list[_Sentence] = []
        for a, z in spans:
            lead = len(masked[a:z]) - len(masked[a:z].lstrip())
            a += lead
            sent = _Sentence(a, z, _line_of(starts, a), heading)
            for m in _MARKER.finditer(masked, a, z):
                sent.markers.append((m.start(), m.group(1).strip(), _line_of(starts, m.start())))
            rest = _MARKER.sub("", masked[a:z])
            if block_sents and sent.markers and not re.search(r"\w", rest):
                block_sents[-1].markers.extend(sent.markers)  # "It passes. [seq:2]"
                block_sents[-1].end = z
                continue
            if block_sents and sent.markers:
                # "It fails before the fix. [seq:1] It passes …": leading markers cite the sentence before
                lead_end = re.match(r"(?:\s*" + _MARKER.pattern + r")+", masked[a:z], re.I)
                if lead_end:
                    moved = [m for m in sent.markers if m[0] < a + lead_end.end()]
                    block_sents[-1].markers.extend(moved)
                    sent.markers = [m for m in sent.markers if m[0] >= a + lead_end.end()]
                    a += lead_end.end()
                    a += len(masked[a:z]) - len(masked[a:z].lstrip())
                    sent.start, sent.line = a, _line_of(starts, a)
            block_sents.append(sent)
        out.extend(block_sents)
    return out


def _display(text: str) -> str:
    text = _LIST_ITEM.sub("", _QUOTE.sub("", text), count=1)
    text = re.sub(r"^\s*#{1,6}\s*", "", text)
    return printable(re.sub(r"\s+", " ", text).strip())


_CLAUSE_SPLIT = re.compile(r"[;()\u2014]|\s-\s|\b(?:and|but|while|whereas|although|though|yet)\b", re.I)
_GROUP_GLUE = re.compile(r"[\s,]*")


def _claim_clauses(text: str) -> list[str]:
    """The clauses of ``text`` (split at ``;``, parentheses, dashes, and/but/while …) that say
    something: a pass ("it builds" too), a failure, what a step printed, or another claim word.
    "(see" or "as shown in" are dropped.  A part that is only quoted texts or code spans continues
    the clause before it when that one ends with one: "fails with `A` and `B`" is one clause, which
    says the failure showed both."""
    out: list[str] = []
    kept_last = False
    for part in _CLAUSE_SPLIT.split(text):
        part = _MARKER.sub(" ", part).strip(" ,.:")
        if part and out and kept_last and _TEXTS_ONLY.fullmatch(part) and re.search(_TEXT_END, out[-1]):
            out[-1] += " and " + part
            continue
        kept_last = bool(part and (CLAIM_WORDS.search(part) or FAILURE_CLAIM.search(part)
                                   or EXPECTED_FAILURE.search(part) or PASS_CLAIM.search(part)
                                   or _SELF_PASS.search(part) or FAILS_WITH.search(part) or SHOWS_TEXT.search(part)
                                   or _exit_matches(part) or COMPARATIVE.search(part) or FIGURE.search(part)))
        if kept_last:
            out.append(part)
    return out


# A part of a sentence that is only code spans or quoted texts ("`B`", ""B", "C""), and the end of one.
_ONE_TEXT = r"(?:[\ue000-\uf8ff]\s*|\"[^\"\n]{1,200}\"|\u201c[^\u201d\n]{1,200}\u201d)"
_TEXTS_ONLY = re.compile(_ONE_TEXT + r"(?:[\s,]*" + _ONE_TEXT + r")*")
_TEXT_END = r"(?:[\ue000-\uf8ff]\s*|[\"\u201d])$"


def _marker_groups(masked: str, sent: _Sentence) -> list[tuple[list[tuple[int, str, int]], list[str]]]:
    """The sentence's markers in groups, each with the clauses it cites.

    Markers next to each other (``[seq:1][seq:2]``, ``[seq:1], [seq:2]``) form one group.  A group
    cites the text since the previous group (or the sentence start); the last group also cites
    the text after it ("[seq:1] fails before the fix").  That text is split into clauses.
    """
    groups: list[list[tuple[int, str, int]]] = []
    ends: list[int] = []
    for marker in sent.markers:
        m = _MARKER.match(masked, marker[0])
        end = m.end() if m else marker[0]
        if groups and _GROUP_GLUE.fullmatch(masked[ends[-1]:marker[0]]):
            groups[-1].append(marker)
            ends[-1] = end
        else:
            groups.append([marker])
            ends.append(end)
    out = []
    prev = sent.start
    for i, (group, end) in enumerate(zip(groups, ends)):
        text = masked[prev:group[0][0]]
        if i == len(groups) - 1:
            text += " ; " + masked[end:sent.end]
        out.append((group, _claim_clauses(text)))
        prev = end
    return out


def _named_kinds(text: str, spans: list[tuple[int, int, str]]) -> frozenset[str]:
    """The kinds of check ``text`` names: by word (:data:`CHECK_SUBJECTS`: "the tests", "lint",
    "mypy"), by inline code (```pytest tests/test_x.py``` runs tests; ```test_router``` names
    one), or in general (:data:`ANY_CHECK`: "CI", "checks", "green" → every kind)."""
    kinds = {k for k, pattern in CHECK_SUBJECTS.items() if pattern.search(text)}
    for code in _code_of(text, spans):
        check = classify_command(code, pipefail=True)
        if check.verdict == "check":
            kinds |= check.kinds
        elif " " not in code:
            kinds |= {k for k, pattern in CHECK_SUBJECTS.items() if pattern.search(code)}
    if not kinds and ANY_CHECK.search(text):
        return KINDS
    return frozenset(kinds)


#: Words that may stand between a clause's start, or its pronoun subject, and its verb without
#: being a subject of their own ("and now passes", "it still fails", "is green after the fix").
_FILLER = frozenset({"and", "but", "so", "then", "now", "still", "also", "again", "only", "already", "even",
                     "is", "are", "was", "were", "be", "been", "does", "do", "did", "has", "have", "had", "will",
                     "would", "can", "could", "should", "must", "which", "that", "who", "as", "expected",
                     "consistently", "cleanly", "reliably", "indeed", "correctly", "first", "finally"})
#: Subjects that refer to what an earlier clause or sentence named ("It passes after the fix").
_PRONOUNS = frozenset({"it", "they", "this", "that", "these", "those", "both", "all", "each", "them"})
_VERBS = (PASS_CLAIM, _SELF_PASS, FAILURE_CLAIM, EXPECTED_FAILURE, FAILS_WITH)


def _borrows_subject(clause: str) -> bool:
    """The clause has no subject of its own before its verb, or only a pronoun: "passes after
    the fix", "and it still fails", "this now passes" — but not "the fix works"."""
    starts = [m.start() for pattern in _VERBS for m in pattern.finditer(clause)]
    if not starts:
        return False
    words = re.findall(r"[\w'\ue000-\uf8ff]+", clause[:min(starts)].lower())
    while words and words[-1] in _FILLER:
        words.pop()
    return not words or words[-1] in _PRONOUNS


@dataclass(frozen=True)
class _Subject:
    """What a sentence names: its own kinds of check, and those of the sentence before it (for a
    sentence that refers to it: "The new test fails before the fix. It passes after [seq:2].")."""

    sentence: frozenset[str] = frozenset()
    before: frozenset[str] = frozenset()

    def of(self, clause: str, spans: list[tuple[int, int, str]]) -> frozenset[str]:
        """The kinds of check ``clause`` is about: those it names; else, when its subject is a
        pronoun or missing, those its sentence names, else those of the sentence before."""
        own = _named_kinds(clause, spans)
        if own or not _borrows_subject(clause):
            return own
        return self.sentence or self.before


def _claimed_checks(clause: str, subject: _Subject, spans: list[tuple[int, int, str]]) -> frozenset[str]:
    """The kinds of check a clause says passed: empty unless it says something passes (a word of
    :data:`PASS_CLAIM` or "it builds", or every failure word negated: "no tests fail") and says
    nothing fails, and names what passes (:meth:`_Subject.of`); a clause that names nothing, in a
    sentence that names nothing, claims no check."""
    if _says(FAILURE_CLAIM, clause):
        return frozenset()
    if not (_says(PASS_CLAIM, clause) or _says(_SELF_PASS, clause) or FAILURE_CLAIM.search(clause)):
        return frozenset()
    return subject.of(clause, spans)


def _describes_failure(clause: str) -> bool:
    """The clause says something fails (:data:`FAILURE_CLAIM`), describes an expected failure
    (:data:`EXPECTED_FAILURE`) or says what a failure raised (:data:`FAILS_WITH`), not negated."""
    return any(_says(pattern, clause) for pattern in (FAILURE_CLAIM, EXPECTED_FAILURE, FAILS_WITH))


def _claimed_failures(clause: str, subject: _Subject, spans: list[tuple[int, int, str]]) -> frozenset[str]:
    """The kinds of check a clause says failed: those it is about (:meth:`_Subject.of`), or any
    kind when it names none ("reproduces the crash": some check must have failed); empty when
    it describes no failure."""
    if not _describes_failure(clause):
        return frozenset()
    return subject.of(clause, spans) or KINDS


_QUOTED = re.compile(r"\"([^\"\n]{1,200})\"|'([^'\n]{1,200})'|\u201c([^\u201d\n]{1,200})\u201d")
_NAME = re.compile(r"[A-Za-z_][\w.]*[\w]")


_AND_TEXT = re.compile(r"\s*(?:,\s*(?:and\s+)?|and\s+|as\s+well\s+as\s+)(?=[\ue000-\uf8ff\"'\u201c])")


def _said_texts(clause: str, spans: list[tuple[int, int, str]],
                patterns: Iterable[re.Pattern[str]]) -> list[str]:
    """What a clause says a step printed, showed or raised: the code span, quoted text or name right
    after a match of one of ``patterns`` ("fails with", "raises", "prints" …), and every code span or
    quoted text listed after it ("fails with `A` and `B`", "prints "A", "B" and "C"").  A name only
    when it cannot be an ordinary word (``ZeroDivisionError``, ``SIGSEGV``, ``errno.ENOENT``; not "an
    assertion error")."""
    out: list[str] = []
    for pattern in patterns:
        for m in pattern.finditer(clause):
            if _negated(clause, m.start()):
                continue
            rest = clause[m.end():]
            while True:
                code = _CODE_MARKS.match(rest)
                q = None if code else _QUOTED.match(rest)
                if code:
                    out.extend(_code_of(code.group(0), spans))
                    rest = rest[code.end():].lstrip(" ")  # the rest of the masked span is blanks
                elif q:
                    out.append(next(g for g in q.groups() if g is not None))
                    rest = rest[q.end():]
                else:
                    n = _NAME.match(rest)
                    if n and (re.search(r"[a-z][A-Z]", n.group(0)) or re.fullmatch(r"[A-Z][A-Z0-9_]{2,}", n.group(0))
                              or "." in n.group(0) or "_" in n.group(0)):
                        out.append(n.group(0))
                    break
                more = _AND_TEXT.match(rest)
                if not more:
                    break
                rest = rest[more.end():]
    return [t for t in dict.fromkeys(t.strip() for t in out) if t]


def _failure_texts(clause: str, spans: list[tuple[int, int, str]]) -> list[str]:
    """What a clause that describes a failure says it printed or raised: "fails with X", "fails
    before the fix with X", "raises X", "printing X", "and prints X" (:data:`FAILS_WITH`,
    :data:`SHOWS_TEXT`), each text listed after it too (:func:`_said_texts`)."""
    return _said_texts(clause, spans, (FAILS_WITH, _FAILS_LATER_WITH, SHOWS_TEXT))


def _output_like(text: str) -> bool:
    """``text`` can be what a step printed, not how it ran: no option (``--strict``), no variable
    setting (``FOO=1``), no check's command (``pytest -q``)."""
    return not (text.startswith("-") or re.match(r"[A-Za-z_]\w*=", text)
                or classify_command(text).verdict == "check")


# A check's result: a count ("3 passed", "0 errors") or a word such as passed, ok, success, clean.
_RESULT_LIKE = re.compile(r"\d+\s+[A-Za-z]|\b(?:pass\w*|ok|success\w*|succeed\w*|clean|green|errors?|warnings?"
                          r"|fail\w*|issues?|done)\b", re.I)


def _pass_texts(clause: str, spans: list[tuple[int, int, str]]) -> list[str]:
    """What a clause that says something passed says it printed or showed: "prints `ok`"
    (:data:`SHOWS_TEXT`), "passes with `3 passed`" (:data:`_PASSES_WITH`, a result only); not "raises
    X" (a passing test may check that a call raises)."""
    texts = _said_texts(clause, spans, (SHOWS_TEXT,))
    texts += [t for t in _said_texts(clause, spans, (_PASSES_WITH,)) if _RESULT_LIKE.search(t)]
    return [t for t in dict.fromkeys(texts) if _output_like(t)]


#: How messages name each kind of check: (noun, a runner of it, runners to suggest).
_KIND_WORDS = {TEST: ("tests", "a test runner", "pytest, npm test, go test"),
               BUILD: ("build", "a build", "make, cargo build, npm run build"),
               LINT: ("lint", "a lint", "ruff check, eslint, npm run lint"),
               TYPECHECK: ("type check", "a type check", "mypy, pyright, tsc")}
_KIND_ORDER = (TEST, BUILD, LINT, TYPECHECK)


def _kind_words(kinds: frozenset[str]) -> tuple[str, str]:
    """``(noun, examples)`` for messages: ``("tests", "pytest, npm test, go test")``."""
    if kinds == KINDS:
        return "check", "pytest, npm test, make check"
    ordered = [k for k in _KIND_ORDER if k in kinds]
    return " or ".join(_KIND_WORDS[k][0] for k in ordered), ", ".join(_KIND_WORDS[k][2] for k in ordered)


def _runs(check: StepCheck) -> str:
    """What a step runs, for a message: its reason, and the kinds of its runners."""
    if check.verdict == "check":
        return f"{check.reason}, " + " and ".join(_KIND_WORDS[k][1] for k in _KIND_ORDER if k in check.kinds)
    return check.reason


@dataclass
class _Judge:
    """What judging the markers needs besides the marker and its clauses."""

    report: ClaimsReport
    accepted: set[int]
    steps: dict[int, int]
    commands: dict[int, str]
    log_path: str
    checks: Mapping[int, StepCheck]
    failures: Mapping[int, FailureCheck]
    outputs: Mapping[int, object]  # str | EditedOutput | None
    spans: list[tuple[int, int, str]]
    raw_outputs: Mapping[int, object] = field(default_factory=dict)  # str | EditedOutput | MissingOutput | None

    def raw(self, seq: int) -> str | None:
        """Step ``seq``'s stored raw output (redacted, not normalized), when it was stored and hashes
        to the step's ``raw_sha``; its ANSI colours and carriage-return redraws are removed, as
        normalization removes them."""
        out = self.raw_outputs.get(seq)
        return _plain(out) if isinstance(out, str) else None

    def holds(self, q: int, text: str) -> str | None:
        """How step ``q``'s stored outputs hold ``text`` (whitespace runs compared as one space):
        ``"raw"`` (its raw output, or its normalized one, holds it as written), ``"normalized"``
        (only its normalized output holds ``text`` normalized the same way: ``elapsed 11.956ms`` as
        ``elapsed <DUR>``; only when no raw output was stored) or ``None``."""
        want = _ws(text)
        raw, norm = self.raw(q), self.text(q)
        if any(want in _ws(out) for out in (raw, norm) if out is not None):
            return "raw"
        if raw is None and norm is not None:
            quoted = _ws(_NORMALIZER.normalize(text).text)
            if quoted and quoted in _ws(norm):
                return "normalized"
        return None

    def shown(self, clause: str) -> str:
        return _display(_unmark(clause, self.spans))

    def unbacked_pass(self, seq: int, mine: list[str], cited: list[int],
                      subject: _Subject) -> tuple[str, str, str] | None:
        """``(kind, severity, message after "which")`` for passing step ``seq`` when a clause it
        cites says a check passed and no passing step cited there ran one of that kind; else None:
        ``cites_non_check_step`` (error) when the step is known to run no such check,
        ``cites_unrecognised_command`` (warning) when the linter cannot tell.

        Each clause needs one backing step among the cited passing ones, not every one.  A step
        whose command is not known (``lint_claims_text`` without it) could back anything.
        """
        checks, steps = self.checks, self.steps
        if seq not in checks:
            return None
        passing = [q for q in cited if steps.get(q) == 0]
        for clause in mine:
            wanted = _claimed_checks(_without_exit(clause, self.spans), subject, self.spans)
            if not wanted or any(q not in checks for q in passing):
                continue
            if any(checks[q].verdict == "check" and checks[q].kinds & wanted for q in passing):
                continue
            check = checks[seq]
            clause = self.shown(clause)
            noun, examples = _kind_words(wanted)
            pronoun = "them" if noun == "tests" else "one"
            if check.verdict == "unknown" or check.unsure & wanted:
                runs = noun if noun == "tests" else f"a {noun}"
                return ("cites_unrecognised_command", "warning",
                        f"exited 0, but the linter cannot tell whether it runs {runs}: {check.reason}; \"{clause}\" "
                        f"needs a cited step that runs {pronoun} ({examples} …): cite one, or check this step "
                        f"yourself")
            return ("cites_non_check_step", "error",
                    f"exited 0 but runs no {noun}: {_runs(check)}; \"{clause}\" needs a cited step that runs "
                    f"{pronoun} ({examples} …)")
        return None

    def unbacked_failure(self, seq: int, mine: list[str], cited: list[int],
                         subject: _Subject) -> tuple[str, str, str] | None:
        """As :meth:`unbacked_pass`, for failing step ``seq`` and the clauses that say something
        failed: at least one failing step cited there must have failed because a check of the
        kind they name failed (:meth:`~.runners.FailureCheck.shows`), not because of ``false``,
        ``exit 1``, ``! pytest`` or a runner that ran nothing (``pytest`` exiting 5)."""
        failures, steps = self.failures, self.steps
        if seq not in failures:
            return None
        failing = [q for q in cited if steps.get(q, 0) != 0]
        for clause in mine:
            wanted = _claimed_failures(_without_exit(clause, self.spans), subject, self.spans)
            if not wanted or any(q not in failures for q in failing):
                continue
            if any(failures[q].shows(wanted).verdict == "check" and failures[q].shows(wanted).kinds & wanted
                   for q in failing):
                continue
            check = failures[seq].shows(wanted)
            clause = self.shown(clause)
            noun, examples = _kind_words(wanted)
            one, fail = ("test", "fail") if noun == "tests" else (noun, "fails")
            code = steps[seq]
            if check.verdict == "unknown":
                return ("cites_unrecognised_command", "warning",
                        f"exited {code}, but the linter cannot tell whether a {one} failed: {check.reason}; "
                        f"\"{clause}\" needs a cited step whose {noun} {fail} ({examples} …): cite one, or check "
                        f"this step yourself")
            return ("cites_non_check_step", "error",
                    f"exited {code} but shows no failing {one}: {_runs(check)}; \"{clause}\" needs a cited step "
                    f"whose {noun} {fail} ({examples} …)")
        return None

    def text(self, seq: int) -> str | None:
        """Step ``seq``'s stored output, when it was stored and hashes to the step's ``out_sha``."""
        out = self.outputs.get(seq)
        return out if isinstance(out, str) else None

    def said_texts(self, seq: int, mine: list[str], cited: list[int]) -> list[tuple[str, str, list[int]]]:
        """``(clause, text, steps)`` for each text a clause of ``mine`` says step ``seq`` printed,
        showed or raised, with the cited steps whose stored output must hold it.  A clause that
        describes a failure speaks of the failing steps cited there (:func:`_failure_texts`); one that
        says something passed, of the passing ones (:func:`_pass_texts`: "passes with `3 passed`");
        one that says neither ("the check prints `0 destructive`"), of every step cited there.  A
        clause about the other outcome than step ``seq``'s says nothing of it."""
        failing = self.steps[seq] != 0
        out: list[tuple[str, str, list[int]]] = []
        for clause in mine:
            plain = _without_exit(clause, self.spans)
            if _describes_failure(plain):
                texts = _failure_texts(plain, self.spans) if failing else []
                pool = [q for q in cited if self.steps.get(q, 0) != 0]
            elif _says(PASS_CLAIM, plain):
                texts = [] if failing else _pass_texts(plain, self.spans)
                pool = [q for q in cited if self.steps.get(q, 1) == 0]
            else:
                texts = [t for t in _said_texts(plain, self.spans, (SHOWS_TEXT,)) if _output_like(t)]
                pool = [q for q in cited if q in self.steps]
            out.extend((clause, text, pool) for text in texts)
        return out

    def reads_edited(self, seq: int, mine: list[str], cited: list[int], subject: _Subject) -> str | None:
        """The message after "whose" when judging step ``seq`` for ``mine`` would read its stored
        output — a clause says what the step showed ("fails with `X`", "prints `X`"), or says a check
        failed and the failing step's runner tells by its output whether it ran at all (``make
        test``) — and that output was changed after recording (:class:`EditedOutput`), or, when a
        clause says what it showed or states a figure, its raw output was; else None."""
        out = self.outputs.get(seq)
        if not isinstance(out, EditedOutput):
            raw = self.raw_outputs.get(seq)
            if not isinstance(raw, EditedOutput):
                return None
            said = next((clause for clause, _text, _pool in self.said_texts(seq, mine, cited)), None)
            if said is None:  # (a figure the clause states is looked for in the raw output too)
                said = next((c for c in mine if FIGURE.search(_without_exit(c, self.spans))), None)
            if said is None:
                return None
            return (f"raw output {printable(raw.path)} no longer hashes to the step's raw_sha: it was changed after "
                    f"recording, so \"{self.shown(said)}\" is not judged by it; restore the recorded output, or "
                    f"record the step again")
        said = next((clause for clause, _text, _pool in self.said_texts(seq, mine, cited)), None)
        if said is None and self.steps[seq] != 0 and seq in self.failures and self.failures[seq].reads_output:
            plain = [_without_exit(c, self.spans) for c in mine]
            said = next((c for c, p in zip(mine, plain) if _claimed_failures(p, subject, self.spans)), None)
        if said is None:
            return None
        return (f"stored output {printable(out.path)} no longer hashes to the step's out_sha: it was changed after "
                f"recording, so \"{self.shown(said)}\" is not judged by it; restore the recorded output, or record the "
                f"step again")

    def missing_text(self, seq: int, mine: list[str], cited: list[int]) -> str | None:
        """The message after "whose" for step ``seq`` when a clause says it printed, showed or
        raised ``X`` (:meth:`said_texts`: "fails with `ZeroDivisionError`", "fails before the fix,
        printing `X`", "passes with `3 passed`") and no step cited there for it whose output is
        stored holds ``X``; None when one does, or when step ``seq``'s output is not stored."""
        if self.text(seq) is None:
            return None
        failing = self.steps[seq] != 0
        for clause, text, pool in self.said_texts(seq, mine, cited):
            if any(self.holds(q, text) for q in pool):
                continue
            return (f"recorded output does not contain \"{printable(text)}\", but \"{self.shown(clause)}\" says "
                    f"{'its failure shows' if failing else 'it shows'} it; cite the step whose output does")
        return None

    def normalized_only(self, seq: int, mine: list[str], cited: list[int]) -> str | None:
        """The message after "whose" when a text a clause says step ``seq`` showed is held by the
        stored outputs only once normalized (:meth:`holds`): its figures are not checked; else None."""
        for clause, text, pool in self.said_texts(seq, mine, cited):
            found = [self.holds(q, text) for q in pool]
            if "normalized" in found and "raw" not in found:
                shown = _NORMALIZER.normalize(text).text
                raw = self.raw_outputs.get(seq)
                why = (f"its raw output is missing ({printable(raw.path)})" if isinstance(raw, MissingOutput)
                       else "its raw output was not stored")
                return (f"stored output holds \"{printable(text)}\" only normalized, as \"{printable(shown)}\" "
                        f"(\"{self.shown(clause)}\"), and {why}: what normalization "
                        f"replaced (durations, times, paths) is not checked; record with --store-output again "
                        f"to keep the raw output")
        return None

    def comparison(self, seq: int, mine: list[str], group_steps: list[int]) -> str | None:
        """The message after "which" when a clause of ``mine`` compares (:data:`COMPARATIVE`:
        "improved 12%", "faster", "no regressions") and the marker's group cites fewer than two
        steps of the log: one run has nothing to compare to; else None."""
        if len({q for q in group_steps if q in self.steps}) >= 2:
            return None
        for clause in mine:
            plain = EXPECTED_FAILURE.sub(lambda m: " " * len(m.group(0)), _without_exit(clause, self.spans))
            m = COMPARATIVE.search(plain)
            if m:
                return (f"is the only step cited, but \"{self.shown(clause)}\" compares (\"{m.group(0)}\"): one run "
                        f"has nothing to compare to; cite the baseline step too ([seq:A][seq:B], the run before "
                        f"the change and the run after it)")
        return None

    def figure(self, seq: int, mine: list[str], cited: list[int]) -> str | None:
        """The message after "whose" when a clause of ``mine`` states a figure (:data:`FIGURE`:
        "under 1ms", "12%") whose number no cited step's raw output holds, or that cannot be
        checked (no output stored, or only the normalized one, where durations are ``<DUR>``);
        else None.  Numbers are compared by value (``12`` is ``12.0``)."""
        pool = [q for q in cited if q in self.steps]
        for clause in mine:
            plain = _without_exit(clause, self.spans)
            for m in FIGURE.finditer(plain):
                said = m.group(0)
                value = float(m.group("num"))
                outs = [(self.raw(q), self.text(q)) for q in pool]
                if any(value in _numbers(raw) for raw, _norm in outs if raw is not None):
                    continue
                if any(value in _numbers(norm) for raw, norm in outs if raw is None and norm is not None):
                    continue
                raws = [raw for raw, _norm in outs if raw is not None]
                if raws:
                    figures = list(dict.fromkeys(f.group(0) for raw in raws for f in FIGURE.finditer(raw)))[:3]
                    seen = (f" (the figures it shows: {', '.join(figures)})" if figures else
                            " (it shows no figure with a unit)")
                    return (f"raw output has no {m.group('num')}{seen}, but \"{self.shown(clause)}\" states "
                            f"\"{said}\"; quote the figure the step printed, or cite the step that printed it")
                missing = [r for r in (self.raw_outputs.get(q) for q in pool) if isinstance(r, MissingOutput)]
                if missing and any(norm is not None for _raw, norm in outs):
                    return (f"raw output is missing ({printable(missing[0].path)}) and its normalized output has no "
                            f"{m.group('num')} (normalization replaces durations and times), so \"{said}\" in "
                            f"\"{self.shown(clause)}\" is not checked; commit the output folder beside the log")
                if any(norm is not None for _raw, norm in outs):
                    return (f"raw output was not stored and its normalized output has no {m.group('num')} "
                            f"(normalization replaces durations and times), so \"{said}\" in \"{self.shown(clause)}\" "
                            f"is not checked; record with --store-output again to keep the raw output")
                return (f"output was not stored, so \"{said}\" in \"{self.shown(clause)}\" is not checked; record "
                        f"the step with --store-output")
        return None

    def missing_file(self, seq: int, mine: list[str], cited: list[int]) -> str | None:
        """The message after "whose" for step ``seq`` when a clause says it showed ``X``
        (:meth:`said_texts`), the log marks the step's output stored but its file is missing
        (:class:`MissingOutput`: the output folder was not committed), and no step cited there for
        it has a stored output to check ``X`` against; else None."""
        out = self.outputs.get(seq)
        if not isinstance(out, MissingOutput):
            return None
        for clause, text, pool in self.said_texts(seq, mine, cited):
            if any(self.text(q) is not None for q in pool):
                continue
            return (f"output the log marks stored is missing ({printable(out.path)}), so \"{printable(text)}\" "
                    f"in \"{self.shown(clause)}\" is not checked; commit the output folder beside the log")
        return None

    def exit_claims(self, seq: int, clause: str) -> list[_ExitClaim]:
        """What ``clause`` says step ``seq`` exited with; "returns N" only when the clause names a
        program ("the CLI returns 2", "pytest returns 5"), not a function's value ("mean() returns
        2").  Nothing when the clause is about a program ("the CLI exits 2 on a missing config")
        and names no check, while step ``seq`` ran tests: the status is the tested program's, not
        the step's."""
        claims = _exit_claims(clause, self.spans)
        if not claims:
            return claims
        program, named = _PROGRAM_WORDS.search(clause), _named_kinds(clause, self.spans)
        if program and not named and TEST in self.step_kinds(seq):
            return []
        if not (program or named):
            claims = [c for c in claims if not c.weak]
        return claims

    def step_kinds(self, seq: int) -> frozenset[str]:
        """The kinds of check step ``seq`` is known to have run (its exit code a runner's)."""
        code = self.steps.get(seq)
        if code == 0 and seq in self.checks:
            check = self.checks[seq]
        elif code not in (0, None) and seq in self.failures:
            check = self.failures[seq].shows(KINDS)
        else:
            return frozenset()
        return check.kinds if check.verdict == "check" else frozenset()

    def other_command(self, seq: int, mine: list[str], cited: list[int]) -> str | None:
        """The message after "but" when a clause of ``mine`` names a command in a code span
        (```pytest -q```: a check runner, or a program such as ``python``, ``make``, ``./x.sh``) that no
        step cited there ran (:func:`_runs_command`); None when one did, or a cited command is unknown."""
        pool = [q for q in cited if q in self.steps]
        if any(q not in self.commands for q in pool):
            return None
        for clause in mine:
            said = {t for _c, t, _p in self.said_texts(seq, [clause], cited)}
            for code in _code_of(clause, self.spans):
                if code in said or not _names_command(code):
                    continue
                if any(_runs_command(self.commands[q], code) for q in pool):
                    continue
                return (f"\"{self.shown(clause)}\" names `{printable(code)}`, which "
                        + ("it does not run" if len(pool) == 1 else "no step cited there runs")
                        + f"; cite the step that ran `{printable(code)}`, or name the command step {seq} ran")
        return None

    def wrong_exit(self, seq: int, mine: list[str], cited: list[int], paired: bool) -> str | None:
        """The message for step ``seq`` when a clause it cites says it exited with a status it did
        not ("exits with code 5" for a step that exited 1); None when every such claim fits it, or
        (markers that each cite all the clauses) fits another step cited there."""
        code = self.steps[seq]
        for clause in mine:
            for claim in self.exit_claims(seq, clause):
                if claim.fits(code):
                    continue
                if not paired and any(q != seq and q in self.steps and claim.fits(self.steps[q])
                                      and self.exit_claims(q, clause) for q in cited):
                    continue
                return (f"exited {code}, but \"{self.shown(clause)}\" says it {claim.said}; cite the step that "
                        f"{claim.said.replace('exits', 'exited')}, or correct the code")
        return None

    def group(self, group: list[tuple[int, str, int]], clauses: list[str], shown: str, subject: _Subject) -> None:
        """Judge each marker of a group against the clause(s) it cites.

        When the group has as many markers as claim clauses, the n-th marker cites the n-th clause
        ("fail before the fix and pass after [seq:1][seq:2]"); otherwise every marker cites all the
        group's clauses.  A failing step is backed by a clause that describes its failure
        (:func:`_describes_failure`), unless the clauses also say something passes and no step of the
        group passed, and only when a step of the group failed because a check failed
        (:meth:`unbacked_failure`) with what the clause says it showed (:meth:`missing_text`); a
        passing step is not backed when the clauses say something fails and no step of the group
        failed, nor when they say a check passed and no passing step of the group ran one
        (:meth:`unbacked_pass`).
        """
        report, steps, commands, log_path = self.report, self.steps, self.commands, self.log_path
        numbered = [_seq_of(c) for _o, c, _l in group if _step_number(c)]
        paired = len(group) > 1 and len(numbered) == len(group) == len(clauses)
        for k, (_off, content, line) in enumerate(group):
            report.markers += 1
            if not _step_number(content) or _seq_of(content) == 0:
                report.findings.append(Finding("malformed_marker", "error", line, None, shown,
                                               _malformed(content, log_path)))
                continue
            seq = _seq_of(content)
            what = f"step {seq}" + (f" (`{printable(redact_command(commands[seq])[0])}`)"
                                    if seq in commands else "")
            mine = [clauses[k]] if paired else clauses
            cited = [seq] if paired else numbered
            plain = [_without_exit(c, self.spans) for c in mine]  # exit-status phrases are judged apart
            claims_failure = any(_says(FAILURE_CLAIM, c) for c in plain)
            claims_pass = any(_says(PASS_CLAIM, c) and not _says(FAILURE_CLAIM, c) for c in plain)
            some_failed = any(steps.get(q, 0) != 0 for q in cited)
            some_passed = any(steps.get(q, 1) == 0 for q in cited)
            said = "; ".join(self.shown(c) for c in mine)
            if seq > _MAX_SEQ:  # (no step number: the row has none)
                n = content.lstrip("0")
                n = n if len(n) <= 40 else f"{n[:12]}…{n[-4:]} ({len(n)} digits)"
                report.findings.append(Finding(
                    "cites_missing_step", "error", line, None, shown,
                    f"[seq:{n}] cites step {n}, which is in no log: a seq is at most {_MAX_SEQ}; cite one "
                    f"{log_path} holds"))
                continue
            if seq not in steps:
                report.findings.append(Finding(
                    "cites_missing_step", "error", line, seq, shown,
                    f"[seq:{seq}] cites step {seq}, which is not in the log (it may have run unrecorded): "
                    f"{log_path} has no seq {seq}; record the step, or cite one the log holds"))
                continue
            other = self.other_command(seq, mine, cited)
            if other is not None:
                report.findings.append(Finding("cites_other_command", "error", line, seq, shown,
                                               f"[seq:{seq}] cites {what}, but {other}"))
                continue
            wrong = self.wrong_exit(seq, mine, cited, paired)
            if wrong is not None:
                report.findings.append(Finding("cites_wrong_exit_code", "error", line, seq, shown,
                                               f"[seq:{seq}] cites {what}, which {wrong}"))
                continue
            # "the CLI exits 2 [seq:5]": the clause states the failure it cites (a behaviour, held to no runner)
            states_exit = steps[seq] != 0 and any(claim.fits(steps[seq]) for c in mine
                                                  for claim in self.exit_claims(seq, c))
            describes_failure = states_exit or any(_describes_failure(c) for c in plain)
            if steps[seq] != 0 and not describes_failure:
                report.findings.append(Finding(
                    "cites_failing_step", "error", line, seq, shown,
                    f"[seq:{seq}] cites {what}, which exited {steps[seq]}; describe it as an expected "
                    f"failure (\"expected failure\", \"fails before the fix\" …) or cite a passing step"
                    + (f" (its clause: \"{said}\")" if mine else "")))
                continue
            if steps[seq] != 0 and claims_pass and not some_passed:
                report.findings.append(Finding(
                    "cites_failing_step", "error", line, seq, shown,
                    f"[seq:{seq}] cites {what}, which exited {steps[seq]}, but \"{said}\" says "
                    f"something passes and no step cited there passed; cite the step that passed"))
                continue
            if steps[seq] == 0 and claims_failure and not some_failed:
                report.findings.append(Finding(
                    "cites_passing_step_for_failure", "error", line, seq, shown,
                    f"[seq:{seq}] cites {what}, which exited 0, but the sentence says something fails; "
                    f"cite the step that failed"))
                continue
            # what the step is said to show: its stored output must be the recorded one, and hold
            # every text the clause names (a failing step's failure, a passing step's result)
            edited = self.reads_edited(seq, mine, cited, subject)
            if edited is not None:
                report.findings.append(Finding("cites_edited_output", "error", line, seq, shown,
                                               f"[seq:{seq}] cites {what}, whose {edited}"))
                continue
            gap = (self.unbacked_failure if steps[seq] != 0 else self.unbacked_pass)(seq, mine, cited, subject)
            missing = self.missing_text(seq, mine, cited) if gap is None or gap[1] != "error" else None
            if missing is not None:
                report.findings.append(Finding("cites_output_without_text", "error", line, seq, shown,
                                               f"[seq:{seq}] cites {what}, whose {missing}"))
                continue
            lost = self.missing_file(seq, mine, cited) if gap is None or gap[1] != "error" else None
            if lost is not None:
                report.warnings.append(Finding("cites_missing_output", "warning", line, seq, shown,
                                               f"[seq:{seq}] cites {what}, whose {lost}"))
            if gap is not None:
                kind, severity, message = gap
                finding = Finding(kind, severity, line, seq, shown, f"[seq:{seq}] cites {what}, which {message}")
                if severity == "error":
                    report.findings.append(finding)
                    continue
                report.warnings.append(finding)
            for kind, message in (("cites_normalized_text", self.normalized_only(seq, mine, cited)),
                                  ("cites_one_step_for_comparison", self.comparison(seq, mine, numbered)),
                                  ("cites_figure_not_in_output", self.figure(seq, mine, cited))):
                if message is not None:
                    joint = "which" if kind == "cites_one_step_for_comparison" else "whose"
                    report.warnings.append(Finding(kind, "warning", line, seq, shown,
                                                   f"[seq:{seq}] cites {what}, {joint} {message}"))
            self.accepted.add(seq)
            report.accepted_markers.append(Finding("accepted", "accepted", line, seq, shown, ""))


def _ws(text: str) -> str:
    return re.sub(r"\s+", " ", text)


#: The built-in rules, for a quoted text checked against a normalized output only.
_NORMALIZER = RuleSet()


def _plain(raw: str) -> str:
    """A raw output without ANSI colours and carriage-return redraws (what a terminal shows)."""
    for rule in BUILTIN_RULES:
        if rule.name in ("ansi", "carriage_return"):
            raw, _changed = rule.apply(raw)
    return raw


def _numbers(text: str) -> set[float]:
    """The values of the numbers in ``text`` (``11.956ms`` → 11.956; digits inside words not)."""
    return {float(n) for n in re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\d])", text)}


# Programs whose name in a code span makes the span a command line ("`python bench.py`"), beside the
# check runners the registry knows ("`pytest -q`").
_PROGRAMS = frozenset({"python", "python3", "py", "node", "make", "npm", "npx", "pnpm", "yarn", "cargo", "go", "bash",
                       "sh", "ruby", "java", "uv", "poetry", "tox", "nox", "deno", "bun", "dotnet", "gradle", "mvn"})
# Launchers a span may put before the program it runs ("`python -m pytest`" names pytest).
_LAUNCHERS = (("python", "-m"), ("python3", "-m"), ("uv", "run"), ("poetry", "run"), ("pipenv", "run"), ("npx",),
              ("pdm", "run"), ("hatch", "run"))


def _words(command: str) -> list[str]:
    import shlex

    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def _names_command(code: str) -> bool:
    """A code span is a command line: a check runner's (``pytest -q``), or one starting with a
    program of :data:`_PROGRAMS` or a ``./`` path — not an option, a name or an output text."""
    words = _words(code)
    if not words or words[0].startswith("-") or re.match(r"[A-Za-z_]\w*=", words[0]):
        return False
    first = os.path.basename(words[0])
    if words[0].startswith("./") or re.sub(r"[\d.]+$", "", first) in _PROGRAMS:
        return True
    return classify_command(code).verdict == "check"


def _runs_command(cmd: str, code: str) -> bool:
    """Step command ``cmd`` runs what code span ``code`` names: every word of the span that is not an
    option or a launcher (``python -m``, ``uv run``) is a word of the step's command, or a word's
    file name (``pytest -q`` is run by ``python -m pytest -q tests/``; ``make test`` is not ``make lint``)."""
    words = _words(code)
    for launcher in _LAUNCHERS:
        if len(words) > len(launcher) and [re.sub(r"[\d.]+$", "", w) for w in words[:len(launcher)]] == list(launcher):
            words = words[len(launcher):]
            break
    have = set()
    for w in _words(cmd):
        have |= {w, os.path.basename(w), re.sub(r"[\d.]+$", "", os.path.basename(w))}
    wanted = [w for w in words if not w.startswith("-")]
    return all(w in have or os.path.basename(w) in have for w in wanted)


def _malformed(content: str, log_path: str) -> str:
    """The message for a ``[seq:…]`` marker whose content is no step number (``0`` included: seq is
    1-based), with a hint when it lists several steps (``[seq:3, seq:4]``, ``[seq:3,4]``)."""
    if content.isascii() and content.isdigit():
        return f"[seq:{content}] is not a step number: seq starts at 1; write [seq:N] with N a seq from {log_path}"
    several = [p.strip() for p in re.split(r"[,;]|\s+and\s+", re.sub(r"(?i)\bseq\s*:\s*", "", content))]
    if len(several) > 1 and all(_step_number(p) for p in several):
        return (f"[seq:{content}] cites several steps in one marker; write one marker per step: "
                + "".join(f"[seq:{p}]" for p in several))
    return f"[seq:{content}] is not a step number; write [seq:N] with N a seq from {log_path}"


def _step_number(content: str) -> bool:
    """A marker's content is a step number: ASCII digits only (``[seq:²]``, ``[seq:３]`` are not:
    int() refuses the first and the log's ``seq`` is never written the second way)."""
    return content.isascii() and content.isdigit()


#: The largest seq a log line may hold (a 64-bit integer: :func:`.log.read_log` refuses larger).
_MAX_SEQ = 2**63 - 1


def _seq_of(content: str) -> int:
    """The value of a marker's step number (:func:`_step_number`), or ``_MAX_SEQ + 1`` for any
    beyond :data:`_MAX_SEQ`: such a step is in no log, and thousands of digits are more than int()
    converts (it raised ValueError)."""
    digits = content.lstrip("0")
    if len(digits) > len(str(_MAX_SEQ)):
        return _MAX_SEQ + 1
    return min(int(digits or "0"), _MAX_SEQ + 1)


def _text(output: object) -> str | None:
    return output if isinstance(output, str) else None


class _Lazy(Mapping[int, object]):
    """``{seq: value}`` worked out when a marker first cites the step: reading a command line
    takes a fraction of a millisecond, and a long log's uncited steps need none."""

    def __init__(self, keys: Iterable[int], work: Callable[[int], object]) -> None:
        self._keys = list(keys)
        self._known = set(self._keys)
        self._work = work
        self._done: dict[int, object] = {}

    def __getitem__(self, seq: int) -> object:
        if seq not in self._known:
            raise KeyError(seq)
        if seq not in self._done:
            self._done[seq] = self._work(seq)
        return self._done[seq]

    def __contains__(self, seq: object) -> bool:
        return seq in self._known

    def __iter__(self) -> Iterator[int]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


def lint_claims_text(body: str, steps: dict[int, int], *, body_path: str = "PR_BODY.md",
                     log_path: str = "session.jsonl", commands: dict[int, str] | None = None,
                     checks: Mapping[int, StepCheck] | None = None,
                     failures: Mapping[int, FailureCheck] | None = None,
                     outputs: Mapping[int, str | None] | None = None,
                     raw_outputs: Mapping[int, object] | None = None) -> ClaimsReport:
    """Lint a PR body's text against ``{seq: exit code}``.

    Args:
        body: the Markdown text.
        steps: exit code of every step in the log, by seq.
        body_path, log_path: names used in messages.
        commands: ``{seq: cmd}`` for messages, and to tell which steps run a check (optional;
            without it, and without ``checks`` and ``failures``, claims are not held to a runner).
        checks: ``{seq: StepCheck}``: what each step's exit 0 shows
            (:func:`replaybook.packet.runners.classify_step` of each log line, which also reads its
            ``argv``, ``shell`` and ``pipefail``); by default each of ``commands`` read as a shell
            line whose pipefail is not known.
        failures: ``{seq: FailureCheck}``: what each failing step's exit code shows
            (:func:`replaybook.packet.runners.classify_failed_step`); by default each of
            ``commands`` read as ``checks`` are.
        outputs: ``{seq: text}``: each step's stored normalized output, ``None`` (or absent) when
            it is not stored, an :class:`EditedOutput` when it no longer hashes to the step's
            ``out_sha`` (:func:`read_stored_output`); a clause that says a failure showed ``X`` is
            checked against it, and so is a failing ``make test`` or ``npm test`` (did it find the
            target?).  A marker whose judging would read an edited output is a
            ``cites_edited_output`` finding.
        raw_outputs: ``{seq: text}``: each step's stored output before normalization (redacted),
            ``None`` or absent when not stored, an :class:`EditedOutput` when changed after
            recording, a :class:`MissingOutput` when the log names it and it is gone
            (:func:`read_raw_output`).  A quoted text is found in
            it or in ``outputs``; a figure ("under 1ms", "12%") is checked against it.  Without it a
            quote found in ``outputs`` only once normalized is a ``cites_normalized_text`` warning.

    Returns:
        :class:`ClaimsReport`.

    Raises:
        InputError: markdown-it-py failed on the body (naming ``body_path``).
    """
    commands = commands or {}
    if checks is None:
        checks = _Lazy(commands, lambda seq: classify_command(commands[seq]))
    outputs = outputs or {}
    if failures is None:
        failures = _Lazy((q for q in commands if q in steps),
                         lambda seq: classify_failure(commands[seq], exit=steps[seq], output=_text(outputs.get(seq))))
    raws = raw_outputs or {}
    by_command = checks
    checks = _Lazy(by_command, lambda seq: _what_ran(by_command[seq], steps.get(seq), outputs.get(seq), raws.get(seq)))
    try:
        masked, spans = _mask(body)
    except InputError as exc:
        raise InputError(exc.message, body_path) from exc
    marked = _mark_code(masked, spans)
    starts = _line_starts(body)
    report = ClaimsReport(body_path, log_path)
    judge = _Judge(report, set(), steps, commands, log_path, checks, failures, outputs, spans, raw_outputs or {})
    before: frozenset[str] = frozenset()
    for sent in _sentences(marked, starts):
        shown = _display(body[sent.start:sent.end])
        text = marked[sent.start:sent.end]
        named = _named_kinds(_MARKER.sub(" ", text), spans)
        if not sent.markers:
            if (not sent.heading and not shown.rstrip().endswith("?") and len(shown.split()) >= 2
                    and (CLAIM_WORDS.search(text) or EXIT_STATUS.search(text))):
                report.warnings.append(Finding(
                    "unsupported_claim", "warning", sent.line, None, shown,
                    "this sentence reads like a factual claim but cites no step; add [seq:N]"))
        else:
            subject = _Subject(named, frozenset() if sent.heading else before)
            for group, clauses in _marker_groups(marked, sent):
                judge.group(group, clauses, shown, subject)
        # what the next sentence's "it" refers to: what this one names, or what it referred to
        before = frozenset() if sent.heading else (named or before) if _borrows_subject(text) else named
    report.findings.sort(key=lambda f: f.line)  # stable: markers keep their order within a line
    flagged = {f.seq for f in report.findings if f.seq is not None}
    report.steps_with_findings = sorted(flagged)
    report.accepted_steps = sorted(judge.accepted - flagged)
    return report


def _what_ran(check: StepCheck, exit: int | None, output: object, raw: object) -> StepCheck:
    """What a passing step's exit code 0 shows once its stored output is read: a test runner whose
    output says it ran no test (:func:`~.runners.ran_no_tests`: told to run nothing by what the
    command line does not show, ``addopts`` or ``PYTEST_ADDOPTS``) shows no test passed; a test
    runner given a name filter (``go test -run X``) whose output was not stored, or holds no summary
    line of the runner (:func:`~.runners.test_summary_lines`: ``go test -json``), is ``unknown`` about
    tests (:attr:`~.runners.StepCheck.unsure`: it exits 0 also when the filter matches nothing),
    and still shows what else it runs (``go test``'s build).  ``check`` itself otherwise."""
    if exit != 0 or check.verdict != "check" or TEST not in check.kinds:
        return check
    text = output if isinstance(output, str) else _plain(raw) if isinstance(raw, str) else None
    if text is None:
        if check.filtered:
            return _unsure_of_tests(check, "the step's output was not stored (record with --store-output) to show "
                                           "that one ran")
        return check
    why = ran_no_tests(check, text)
    if why is None:
        if check.filtered and not test_summary_lines(check, text):
            return _unsure_of_tests(check, "the step's stored output holds no summary line of it (`2 passed`, `ok  "
                                           "example.com/p`) that shows one ran")
        return check
    reason = f"it runs {', '.join(check.runners)}, but {why}"
    kinds = check.kinds - {TEST}
    return StepCheck("check", kinds, check.runners, reason) if kinds else StepCheck("no_check", reason=reason)


def _unsure_of_tests(check: StepCheck, why: str) -> StepCheck:
    """``check`` of a step whose name filter may have matched no test, ``why`` nothing shows one
    ran: ``unknown`` about tests, still showing what else it runs (``go test``'s build)."""
    reason = f"{check.filtered} exits 0 also when its pattern matches no test, and {why}"
    kinds = check.kinds - {TEST}
    return StepCheck("check", kinds, check.runners, reason, unsure=frozenset({TEST})) if kinds \
        else StepCheck("unknown", reason=reason)


@dataclass(frozen=True)
class MissingOutput:
    """A step the log marks ``stored`` whose output file is not there (the output folder was not
    committed, or the file was removed).  ``path`` is the file looked for."""

    path: str


@dataclass(frozen=True)
class EditedOutput:
    """A step's stored output that no longer hashes to the step's ``out_sha``: it was changed after
    recording.  ``path`` is the file (``session.outputs/<out_sha>.txt``)."""

    path: str


def read_stored_output(outputs_dir: str | os.PathLike, out_sha: object) -> str | EditedOutput | None:
    """A step's stored normalized output (``<outputs_dir>/<out_sha>.txt``) when it hashes to
    ``out_sha``, as the replay checks it; :class:`EditedOutput` when the file is there but does not
    (it was edited after recording, or something that is not a file — a folder, a pipe — took its
    place); ``None`` when ``out_sha`` is no SHA-256 hex or the file is not there or cannot be read.
    A checkout that turned ``\\n`` into ``\\r\\n`` is read back as ``\\n``."""
    if not isinstance(out_sha, str) or not re.fullmatch(r"[0-9a-f]{64}", out_sha):
        return None
    path = Path(outputs_dir) / f"{out_sha}.txt"
    if path.exists() and not path.is_file():  # (a folder, a pipe put in its place: not read, not missing)
        return EditedOutput(str(path))
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    try:
        text = raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return EditedOutput(str(path))  # the recorder writes UTF-8: these bytes are not what it wrote
    for candidate in (text, text.replace("\r\n", "\n")):
        if normalized_sha(candidate) == out_sha:
            return candidate
    return EditedOutput(str(path))


def read_raw_output(outputs_dir: str | os.PathLike, raw_sha: object) -> str | EditedOutput | MissingOutput | None:
    """A step's stored output before normalization (``<outputs_dir>/raw/<raw_sha>.txt``, written by
    ``record --store-output``) when it hashes to ``raw_sha``; :class:`EditedOutput` when the file is
    there but does not (edited after recording, not UTF-8, or something that is not a file in its
    place); :class:`MissingOutput` when the log names it and it is not there; ``None`` when
    ``raw_sha`` is no SHA-256 hex (older logs have none) or it cannot be read."""
    if not isinstance(raw_sha, str) or not re.fullmatch(r"[0-9a-f]{64}", raw_sha):
        return None
    path = Path(outputs_dir) / RAW_DIR / f"{raw_sha}.txt"
    if not path.exists():
        return MissingOutput(str(path))
    if not path.is_file():
        return EditedOutput(str(path))
    try:
        text = path.read_bytes().decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return EditedOutput(str(path))
    except OSError:
        return None
    for candidate in (text, text.replace("\r\n", "\n")):
        if normalized_sha(candidate) == raw_sha:
            return candidate
    return EditedOutput(str(path))


def stored_output(outputs_dir: str | os.PathLike, out_sha: object) -> str | None:
    """:func:`read_stored_output`'s text, or ``None`` when it is not there, cannot be read, or does
    not hash to ``out_sha`` (it was edited after recording)."""
    out = read_stored_output(outputs_dir, out_sha)
    return out if isinstance(out, str) else None


def lint_claims(body_path: str | os.PathLike, log_path: str | os.PathLike, *,
                outputs_dir: str | os.PathLike | None = None) -> ClaimsReport:
    """Lint the PR body at ``body_path`` against the session log at ``log_path``.

    The log only needs ``seq``, ``cmd`` and ``exit`` per line (seed-format logs work); a line's
    ``argv``, ``shell`` and ``pipefail``, when present, tell how its command ran (:func:`classify_step`,
    :func:`classify_failed_step`).  Stored outputs are read from ``outputs_dir`` (default:
    ``session.outputs/`` beside the log), for clauses that say what a failure showed.  Damage the
    log's chain shows is in ``log_findings`` (failures); its state in ``log_chain``.

    Raises:
        InputError: the body cannot be read.
        PacketLogError: the log cannot be read or a line is malformed (file and line named).
    """
    # paths are shown as given, with "." and ".." parts worked out (incident/../pr-repo → pr-repo)
    body_path = Path(os.path.normpath(body_path))
    log_path = os.path.normpath(log_path)
    if outputs_dir is not None:
        outputs_dir = os.path.normpath(outputs_dir)
    try:
        body = body_path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read PR body: {exc.strerror or exc}", body_path) from exc
    log = read_log(log_path)
    by_seq = log.by_seq()
    outputs = Path(outputs_dir) if outputs_dir is not None else outputs_dir_for(log_path)
    def step_output(seq: int):
        got = read_stored_output(outputs, by_seq[seq].get("out_sha"))
        out_sha = by_seq[seq].get("out_sha")
        if got is None and by_seq[seq].get("stored") is True and isinstance(out_sha, str) \
                and not (outputs / f"{out_sha}.txt").exists():
            return MissingOutput(str(outputs / f"{out_sha}.txt"))
        return got

    stored = _Lazy(by_seq, step_output)
    report = lint_claims_text(
        body, {s.seq: s.exit for s in log.steps}, body_path=str(body_path), log_path=str(log_path),
        commands={s.seq: s.cmd for s in log.steps},
        checks=_Lazy(by_seq, lambda seq: classify_step(by_seq[seq].raw)),
        failures=_Lazy((q for q, s in by_seq.items() if s.exit != 0),
                       lambda seq: classify_failed_step(by_seq[seq].raw, output=_text(stored[seq]))),
        outputs=stored,
        raw_outputs=_Lazy(by_seq, lambda seq: read_raw_output(outputs, by_seq[seq].get("raw_sha"))))
    report.log_warnings = log.gap_warnings()
    report.log_chain = log.chain
    report.log_findings = list(log.chain_findings)
    return report
