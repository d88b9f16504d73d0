"""Which recorded commands run a check: the runner registry the claims linter reads.

A PR body that says "all tests pass [seq:7]" is backed only when step 7 ran the tests.  A step
that exited 0 after ``echo "1 passed"``, ``true``, ``cat old-output.txt`` or ``ls`` shows nothing
about them, and an agent that wants a reviewer's approval could cite exactly such a step.  This
module reads a step's command line and says what its exit code 0 proves
(:func:`classify_command`, :func:`classify_step`).

It recognises a check by the **program actually executed**, never by words in its output or
arguments (``echo pytest`` prints a word):

* :data:`RUNNERS`: programs (and subcommands) that run tests, builds, lints or type checks —
  ``pytest``, ``python -m pytest``, ``tox``, ``npm test``, ``go test``, ``cargo test`` … — each with
  the kinds of check (:data:`KINDS`) its success shows, and the arguments with which it runs none
  (``pytest --collect-only``, ``--version``);
* :data:`TASK_RUNNERS`: programs that run a named task (``make test``, ``npm run lint``,
  ``gradle check``, ``mvn verify``, ``tox -e lint``), whose kinds come from the task's name
  (:func:`task_kinds`);
* :data:`WRAPPERS`: programs that run the command in their arguments and exit with its exit code
  (``env X=1``, ``timeout 60``, ``uv run``, ``poetry run``, ``npx``, ``bundle exec`` …), which
  are seen through; so are ``bash -c '…'`` and ``sh -c '…'`` (their line is read like the step's
  own), ``python -m MODULE`` and leading ``NAME=value`` assignments;
* :data:`NON_CHECKS`: programs that only print, read or change files (``echo``, ``printf``,
  ``cat``, ``true``, ``ls`` …), which run no check however they exit.

A shell line is split with a small scanner that knows quotes, ``$(…)`` and backticks, at the
operators ``|``, ``&&``, ``||``, ``;``, ``&`` and newlines; each simple command is then split into
words with :mod:`shlex`.  What a line's exit code 0 proves follows bash: ``cd dir && pytest``
proves pytest passed; ``pytest; echo done``, ``pytest || true`` and ``pytest &`` do not; in
``pytest | tee log`` only with ``pipefail`` (the log's ``pipefail`` field, or ``set -o pipefail``
/ ``bash -o pipefail -c`` in the line, or a closing ``; exit ${PIPESTATUS[0]}``) — without it the
exit code is ``tee``'s.  A command that
cannot be parsed (an unclosed quote), a shell ``if``/``for``, a here-document or a program the
registry does not know gives ``unknown``: the linter says it could not tell, and never raises.

A step that exited non-zero is read the other way round (:func:`classify_failure`,
:func:`classify_failed_step`): whose failure can its exit code be?  ``false``, ``exit 1``,
``! pytest`` and ``pytest || false`` fail whatever the tests do; ``pytest | tee log`` without
pipefail fails when ``tee`` does; a runner that exits with one of its :attr:`Runner.aborted` codes
(``pytest`` 2: interrupted, by a collection error or Ctrl-C, before any test ran; 4: a test path it
cannot find; 5: no tests collected) or any step that exited 126 or
127 (:data:`SHELL_EXITS`) ran no check.  Programs that cannot fail on what they are given
(:data:`CANNOT_FAIL`: ``echo``, ``set``) and, after a check in a pipe with pipefail, filters that
fail only on I/O errors (:data:`PIPE_FILTERS`: ``tail``, ``tee``) are not counted as the failure.

Extend the registry by adding a :class:`Runner`, :class:`TaskRunner`, :class:`Wrapper`,
:data:`NON_CHECKS`, :data:`CANNOT_FAIL` or :data:`PIPE_FILTERS` entry; nothing else needs to
change.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import shlex
from dataclasses import dataclass, field
from typing import Iterable, Mapping

__all__ = [
    "TEST",
    "BUILD",
    "LINT",
    "TYPECHECK",
    "KINDS",
    "Runner",
    "TaskRunner",
    "Wrapper",
    "RUNNERS",
    "TASK_RUNNERS",
    "WRAPPERS",
    "NON_CHECKS",
    "CANNOT_FAIL",
    "PIPE_FILTERS",
    "StepCheck",
    "FailureCheck",
    "SHELL_EXITS",
    "task_kinds",
    "classify_command",
    "classify_step",
    "classify_failure",
    "classify_failed_step",
    "ran_no_tests",
    "test_summary_lines",
]

TEST = "test"
BUILD = "build"
LINT = "lint"
TYPECHECK = "typecheck"
#: Every kind of check: what a passing step can show.
KINDS = frozenset({TEST, BUILD, LINT, TYPECHECK})

_NONE: frozenset[str] = frozenset()


def _k(*kinds: str) -> frozenset[str]:
    return frozenset(kinds)


#: Arguments with which any runner only prints something and runs no check (a runner for which one
#: of them means something else lists it in :attr:`Runner.not_info`: ``javac -h DIR``).
_INFO_ARGS: Mapping[str, str] = {"--version": "only prints its version", "--help": "only prints its help",
                                 "-h": "only prints its help"}


@dataclass(frozen=True)
class Runner:
    """A program, or a program's subcommand, whose exit code 0 says a check passed.

    Attributes:
        name: how messages name it (``"pytest"``, ``"go test"``).
        programs: the executable's names, as the command's first word ends (``pytest`` matches
            ``pytest``, ``.venv/bin/pytest``; a Python module run with ``python -m`` counts as
            a program of its name).
        kinds: what its success shows (:data:`KINDS`).
        sub: the subcommands that select this runner, any one of them (``("test", "t")`` for
            ``cargo test``); each may be several words (``"nextest run"``).  Empty: the program
            itself is the runner.
        value_options: options before the subcommand that take the next word as their value
            (``cargo -Z flag test``).
        requires: at least one of these arguments must be given (``black`` checks only with
            ``--check``; without it it rewrites files).
        limits: an argument (``--collect-only``, or ``--no-run`` as ``--no-run`` or
            ``--no-run=…``; with its value, ``--issues-exit-code=0``, only that value, in one
            word or two) that narrows what runs: ``(kinds left, what it does instead)``.
        local_ok: the program is normally run from the checkout (``./gradlew``, ``./manage.py``),
            so a relative path to it does not make it suspect.
        aborted: exit codes with which it stops before checking anything, and what each means
            (``pytest`` exits 5 when it collected no tests, 4 on a usage error such as a test file
            that does not exist, 2 when a collection error or Ctrl-C interrupted it before any test ran): a step that failed with one of them shows no failing check.
        aborted_output: ``(pattern, meaning)`` of lines it prints when it stops before running
            anything (``npm ERR! Missing script: "test"``), as :data:`re.M` regular expressions:
            a failing step whose stored output holds one shows no failing check.  Only read when
            the step's output was stored and hashes to its ``out_sha``.
        flags: its short options that take no value and may be written together: a word of
            them is read as each one (``pytest -qh`` is ``pytest -q -h``).
        not_info: those of :data:`_INFO_ARGS` that mean something else to it (``javac -h DIR``).
        after_dashdash: limits read in the words after ``--``, which it reads too or passes on to
            what it runs (``cargo test -- --list``: libtest's; :data:`_INFO_ARGS` count there as
            well); ``None``: the words after ``--`` are not read.
        env_options: environment variables whose value it reads as more of its arguments
            (``PYTEST_ADDOPTS``, ``GOFLAGS``): set by ``NAME=value``, ``env NAME=value`` or
            ``export NAME=value`` earlier in the line, they are read as if they were given.
        ini_options: options whose value ``addopts=ARGS`` adds arguments as its configuration
            file's ``addopts`` would (``pytest -o addopts=--co``).
        name_filters: options whose value is a regular expression a test's name must match to
            run (``go test -run``): one that no name it can have matches (``-run '^$'``) runs no test.
        name_skips: options whose value is a regular expression of names not to run (``go test
            -skip``): one that every name matches (``-skip .``) runs no test.
        test_names: what every test's name it runs starts with (``Test``, ``Example``, ``Fuzz``
            for ``go test``); empty: any name but the empty one.
        unsure: arguments with which its exit code 0 does not show that any check ran (``jest
            --passWithNoTests`` exits 0 when it finds no test): a passing step is ``unknown``, a
            failing one still shows its failure.
    """

    name: str
    programs: tuple[str, ...]
    kinds: frozenset[str]
    sub: tuple[str, ...] = ()
    value_options: frozenset[str] = _NONE
    requires: frozenset[str] = _NONE
    limits: Mapping[str, tuple[frozenset[str], str]] = field(default_factory=dict)
    local_ok: bool = False
    aborted: Mapping[int, str] = field(default_factory=dict)
    aborted_output: tuple[tuple[str, str], ...] = ()
    flags: str = ""
    not_info: frozenset[str] = _NONE
    after_dashdash: Mapping[str, tuple[frozenset[str], str]] | None = None
    env_options: tuple[str, ...] = ()
    ini_options: frozenset[str] = _NONE
    name_filters: frozenset[str] = _NONE
    name_skips: frozenset[str] = _NONE
    test_names: tuple[str, ...] = ()
    unsure: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TaskRunner:
    """A program that runs named tasks (targets, scripts, goals, environments).

    What its success shows is the union of its tasks' kinds: :func:`task_kinds` of each name,
    unless ``tasks`` names it.  A task whose name says nothing (``make demo``) counts for nothing;
    when no task says anything, the linter cannot tell.

    Attributes:
        name: how messages name it (``"make"``, ``"npm run"``).
        programs: the executable's names (see :class:`Runner`).
        sub: the subcommands that select it (``("run", "run-script")`` for ``npm run``); empty:
            any.
        default: what it shows when no task is named (``make`` builds its default target);
            ``None``: the linter cannot tell.
        value_options: options that take the next word as their value (``make -C DIR``).
        task_options: options whose value names the tasks, comma-separated (``tox -e lint``);
            when it has some, positional words are not tasks.
        first_only: only the first positional word is a task; the rest are its arguments
            (``npm run test -- -u``, ``yarn lint src``).
        ignore: positional words that are neither tasks nor arguments (``tox run``).
        tasks: kinds of particular task names, overriding :func:`task_kinds`.
        without: an argument that keeps a kind from running (``-DskipTests``): the kinds it
            removes.
        exclude_options: options whose value names a task that does not run (``gradle -x test``).
        limits: as in :class:`Runner` (``make -n`` only prints what it would run).
        local_ok: as in :class:`Runner`.
        bare: what it does instead of a check when no task is named and there is no
            ``default`` (``npm run`` only lists the scripts); empty: the linter cannot tell.
        aborted_output: as in :class:`Runner` (``make: *** No rule to make target 'test'.  Stop.``:
            make found no such target, and ran nothing).
    """

    name: str
    programs: tuple[str, ...]
    sub: tuple[str, ...] = ()
    default: frozenset[str] | None = None
    value_options: frozenset[str] = _NONE
    task_options: frozenset[str] = _NONE
    first_only: bool = False
    ignore: frozenset[str] = _NONE
    tasks: Mapping[str, frozenset[str]] = field(default_factory=dict)
    without: Mapping[str, frozenset[str]] = field(default_factory=dict)
    exclude_options: frozenset[str] = _NONE
    limits: Mapping[str, tuple[frozenset[str], str]] = field(default_factory=dict)
    local_ok: bool = False
    bare: str = ""
    aborted_output: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Wrapper:
    """A program that runs the command in its arguments and exits with its exit code.

    Attributes:
        programs: the executable's names.
        sub: the subcommand that makes it a wrapper (``("run",)`` for ``uv run``); empty: always.
        value_options: its options that take the next word as their value (``timeout -k 5``).
        positional: how many words come between its options and the command (``timeout``'s
            duration: 1).
        assignments: ``NAME=value`` words before the command are skipped (``env``).
        prepend: words put before the command (``coverage run -m pytest`` runs
            ``python -m pytest``).
        scripts: the command may name a project script rather than a program (``pdm run test``):
            an unknown name is read as a task name (:func:`task_kinds`).
    """

    programs: tuple[str, ...]
    sub: tuple[str, ...] = ()
    value_options: frozenset[str] = _NONE
    positional: int = 0
    assignments: bool = False
    prepend: tuple[str, ...] = ()
    scripts: bool = False


def _opts(*names: str) -> frozenset[str]:
    return frozenset(names)


_PYTEST_LIMITS = {
    **{a: (_NONE, "only lists tests or fixtures, running none") for a in (
        "--collect-only", "--co", "--collectonly", "--fixtures", "--fixtures-per-test", "--markers", "--setup-plan",
        "--setupplan")},
    **dict.fromkeys(("--setup-only", "--setuponly"),
                    (_NONE, "only sets up and tears down fixtures, running no test")),
    "--cache-show": (_NONE, "only shows the cache's content"),
    **dict.fromkeys(("-V", "-VV"), (_NONE, "only prints its version")),
}
#: libtest's arguments (after ``cargo test --``) with which it runs no test.
_LIBTEST_LIMITS = {"--list": (_NONE, "only lists the tests")}
_GO_LIST = (_NONE, "only lists the tests")
_NO_TESTS_FOUND_OK = "exits 0 also when it finds no test, so its exit code does not show that any ran"
_EXIT_ZERO = (_NONE, "exits 0 whatever it finds")
_CARGO_OPTS = _opts("-Z", "--config", "-C", "--color")
_NPM_OPTS = _opts("--prefix", "-w", "--workspace", "-C", "--dir", "--filter", "-F", "--cwd", "--loglevel")
#: What npm, pnpm and yarn print when the project has no such script, or no package.json at all
#: (npm before 10 writes ``npm ERR!``, npm 10 ``npm error``).
_NPM_ABORTS = (
    (r"^npm (?:ERR!|error) Missing script: ", "the project has no such script"),
    (r"^npm (?:ERR!|error) (?:code ENOENT|enoent)\b.*package\.json", "it finds no package.json"),
    (r"ERR_PNPM_NO_SCRIPT\b|^error Command \"[^\"]*\" not found\.", "the project has no such script"),
    (r"ERR_PNPM_NO_IMPORTER_MANIFEST_FOUND\b", "it finds no package.json"),
)

#: Programs (and subcommands) that run a check.
RUNNERS: tuple[Runner, ...] = (
    # Python
    Runner("pytest", ("pytest", "py.test"), _k(TEST), limits=_PYTEST_LIMITS, flags="hqvxsl",
           after_dashdash=_PYTEST_LIMITS, env_options=("PYTEST_ADDOPTS",), ini_options=_opts("-o", "--override-ini"),
           aborted={2: "it was interrupted before any test ran (an error while collecting the tests, such as an "
                       "import error, or Ctrl-C)",
                    3: "it hits an internal error", 4: "it is given a test path or an option it cannot find",
                    5: "it collects no tests"}),
    Runner("unittest", ("unittest",), _k(TEST), aborted={5: "it runs no tests"}),
    Runner("nose2", ("nose2", "nosetests"), _k(TEST)),
    Runner("trial", ("trial",), _k(TEST)),
    Runner("behave", ("behave",), _k(TEST), limits={"--dry-run": (_NONE, "only lists the steps")}),
    Runner("manage.py test", ("manage.py",), _k(TEST), sub=("test",), local_ok=True),
    Runner("setup.py test", ("setup.py",), _k(TEST), sub=("test",), local_ok=True),
    Runner("setup.py build", ("setup.py",), _k(BUILD), sub=("build", "bdist_wheel", "sdist"), local_ok=True),
    Runner("python -m build", ("build",), _k(BUILD)),
    Runner("ruff check", ("ruff",), _k(LINT), sub=("check",),
           limits={"--exit-zero": _EXIT_ZERO, "-e": _EXIT_ZERO,
                   "--fix-only": (_NONE, "fixes what it can and exits 0 whatever is left")},
           aborted={2: "it stops abnormally (an invalid option or configuration, or an internal error)"}),
    Runner("ruff format --check", ("ruff",), _k(LINT), sub=("format",), requires=_opts("--check")),
    Runner("flake8", ("flake8", "pyflakes", "pycodestyle", "pydocstyle", "pylint", "bandit", "codespell"), _k(LINT),
           limits={"--exit-zero": _EXIT_ZERO}),
    Runner("black --check", ("black",), _k(LINT), requires=_opts("--check")),
    Runner("isort --check", ("isort",), _k(LINT), requires=_opts("--check", "--check-only", "-c")),
    Runner("mypy", ("mypy",), _k(TYPECHECK), limits={"-V": (_NONE, "only prints its version")},
           aborted={2: "it stops on a fatal error (a usage error, a file it cannot read)"}),
    Runner("pyright", ("pyright", "basedpyright", "pytype", "pyre"), _k(TYPECHECK)),
    Runner("dmypy", ("dmypy",), _k(TYPECHECK), sub=("run", "check")),
    Runner("pre-commit run", ("pre-commit", "prek"), _k(LINT, TYPECHECK), sub=("run",)),
    # JavaScript / TypeScript
    Runner("npm test", ("npm", "pnpm", "yarn", "bun"), _k(TEST), sub=("test", "t", "tst"), value_options=_NPM_OPTS,
           aborted_output=_NPM_ABORTS),
    Runner("jest", ("jest", "vitest"), _k(TEST),
           limits={"--listTests": (_NONE, "only lists the tests"), "list": (_NONE, "only lists the tests"),
                   "--showConfig": (_NONE, "only prints its configuration")},
           name_filters=_opts("-t", "--testNamePattern"),
           unsure={"--passWithNoTests": _NO_TESTS_FOUND_OK}),
    # (their -t is no name filter: mocha's and tap's sets a timeout, ava's asks for TAP output)
    Runner("mocha", ("mocha", "ava", "jasmine", "karma", "tap"), _k(TEST),
           limits={"--listTests": (_NONE, "only lists the tests"), "list": (_NONE, "only lists the tests"),
                   "--showConfig": (_NONE, "only prints its configuration")},
           unsure={"--passWithNoTests": _NO_TESTS_FOUND_OK}),
    Runner("playwright test", ("playwright",), _k(TEST), sub=("test",),
           limits={"--list": (_NONE, "only lists the tests")}),
    Runner("cypress run", ("cypress",), _k(TEST), sub=("run",)),
    Runner("ng test", ("ng",), _k(TEST), sub=("test",)),
    Runner("ng build", ("ng",), _k(BUILD), sub=("build",)),
    Runner("ng lint", ("ng",), _k(LINT), sub=("lint",)),
    Runner("deno test", ("deno",), _k(TEST), sub=("test",)),
    Runner("deno lint", ("deno",), _k(LINT), sub=("lint",)),
    Runner("deno check", ("deno",), _k(TYPECHECK), sub=("check",)),
    Runner("eslint", ("eslint",), _k(LINT), aborted={2: "it meets a configuration problem or an internal error"}),
    Runner("stylelint", ("stylelint", "biome", "oxlint", "standard", "xo"), _k(LINT)),
    Runner("prettier --check", ("prettier",), _k(LINT), requires=_opts("--check", "-c", "--list-different", "-l")),
    Runner("tsc", ("tsc", "vue-tsc"), _k(TYPECHECK, BUILD)),
    Runner("flow check", ("flow",), _k(TYPECHECK), sub=("check",)),
    Runner("webpack", ("webpack", "rollup", "esbuild", "parcel"), _k(BUILD)),
    Runner("vite build", ("vite",), _k(BUILD), sub=("build",)),
    # Go, Rust
    Runner("go test", ("go",), _k(TEST, BUILD), sub=("test",),
           limits={**dict.fromkeys(("-list", "--list", "-test.list", "--test.list"), _GO_LIST),
                   "-c": (_k(BUILD), "compiles the tests without running them")},
           env_options=("GOFLAGS",), name_filters=_opts("-run", "--run", "-test.run", "--test.run"),
           name_skips=_opts("-skip", "--skip", "-test.skip", "--test.skip"), test_names=("Test", "Example", "Fuzz")),
    Runner("go build", ("go",), _k(BUILD), sub=("build", "install")),
    Runner("go vet", ("go",), _k(LINT), sub=("vet",)),
    Runner("golangci-lint run", ("golangci-lint",), _k(LINT), sub=("run",),
           limits={"--issues-exit-code=0": (_NONE, "exits 0 whatever issues it finds")}),
    Runner("staticcheck", ("staticcheck", "revive"), _k(LINT)),
    Runner("cargo test", ("cargo",), _k(TEST, BUILD), sub=("test", "t", "nextest run", "miri test"),
           value_options=_CARGO_OPTS,
           limits={"--no-run": (_k(BUILD), "compiles the tests without running them"),
                   "--list": (_NONE, "only lists the tests")},
           after_dashdash=_LIBTEST_LIMITS),
    Runner("cargo build", ("cargo",), _k(BUILD), sub=("build", "b", "install"), value_options=_CARGO_OPTS),
    Runner("cargo check", ("cargo",), _k(BUILD, TYPECHECK), sub=("check", "c"), value_options=_CARGO_OPTS),
    Runner("cargo clippy", ("cargo",), _k(LINT, TYPECHECK), sub=("clippy",), value_options=_CARGO_OPTS),
    Runner("cargo fmt --check", ("cargo",), _k(LINT), sub=("fmt",), value_options=_CARGO_OPTS,
           requires=_opts("--check")),
    # JVM, .NET, Ruby, PHP, Elixir, Swift, C/C++, Bazel
    Runner("dotnet test", ("dotnet",), _k(TEST, BUILD), sub=("test",),
           limits={"--list-tests": (_NONE, "only lists the tests")}),
    Runner("dotnet build", ("dotnet",), _k(BUILD), sub=("build",)),
    Runner("dotnet format --verify-no-changes", ("dotnet",), _k(LINT), sub=("format",),
           requires=_opts("--verify-no-changes")),
    Runner("rspec", ("rspec",), _k(TEST), limits={"--dry-run": (_NONE, "only lists the examples")}),
    Runner("rails test", ("rails",), _k(TEST), sub=("test", "spec"), local_ok=True),
    Runner("rubocop", ("rubocop", "standardrb"), _k(LINT)),
    Runner("phpunit", ("phpunit", "pest", "paratest"), _k(TEST),
           limits={"--list-tests": (_NONE, "only lists the tests")}),
    Runner("phpstan", ("phpstan", "psalm"), _k(TYPECHECK, LINT)),
    Runner("phpcs", ("phpcs",), _k(LINT)),
    Runner("mix test", ("mix",), _k(TEST, BUILD), sub=("test",)),
    Runner("mix compile", ("mix",), _k(BUILD), sub=("compile",)),
    Runner("mix credo", ("mix",), _k(LINT), sub=("credo",)),
    Runner("mix format --check-formatted", ("mix",), _k(LINT), sub=("format",), requires=_opts("--check-formatted")),
    Runner("mix dialyzer", ("mix",), _k(TYPECHECK), sub=("dialyzer",)),
    Runner("swift test", ("swift",), _k(TEST, BUILD), sub=("test",)),
    Runner("swift build", ("swift",), _k(BUILD), sub=("build",)),
    Runner("ctest", ("ctest",), _k(TEST), limits={"-N": (_NONE, "only lists the tests"),
                                                  "--show-only": (_NONE, "only lists the tests")}),
    Runner("meson test", ("meson",), _k(TEST), sub=("test",), limits={"--list": (_NONE, "only lists the tests")}),
    Runner("cmake --build", ("cmake",), _k(BUILD), requires=_opts("--build")),
    Runner("bazel test", ("bazel", "bazelisk"), _k(TEST, BUILD), sub=("test", "coverage")),
    Runner("bazel build", ("bazel", "bazelisk"), _k(BUILD), sub=("build",)),
    Runner("gcc", ("gcc", "g++", "cc", "c++", "clang", "clang++", "javac", "kotlinc", "rustc", "zig"), _k(BUILD),
           not_info=_opts("-h")),  # javac -h DIR writes native headers
    Runner("shellcheck", ("shellcheck", "hadolint", "actionlint", "yamllint", "markdownlint", "ktlint", "detekt",
                          "swiftlint", "clang-tidy", "cppcheck", "tflint"), _k(LINT)),
    Runner("sphinx-build", ("sphinx-build",), _k(BUILD)),
    Runner("mkdocs build", ("mkdocs",), _k(BUILD), sub=("build",)),
    Runner("docker build", ("docker", "podman"), _k(BUILD), sub=("build", "buildx build")),
    Runner("uv build", ("uv", "poetry", "hatch", "flit", "pdm", "rye"), _k(BUILD), sub=("build",)),
)

_MVN_OPTS = _opts("-f", "--file", "-pl", "--projects", "-P", "--activate-profiles", "-s", "--settings", "-gs",
                  "--global-settings", "-T", "--threads", "-rf", "--resume-from", "-l", "--log-file", "-t",
                  "--toolchains", "-D", "--define", "-b", "--builder")
_GRADLE_OPTS = _opts("-p", "--project-dir", "-b", "--build-file", "-c", "--settings-file", "-I", "--init-script",
                     "--tests", "-g", "--gradle-user-home", "--console", "--warning-mode", "--max-workers",
                     "--priority", "-D", "-P", "--project-cache-dir", "--include-build")
_NO_TESTS = _k(TEST)
_DRY_RUN = (_NONE, "only prints what it would run")
#: What GNU make prints, and exits 2 with, when it cannot start: the target (or a file it needs)
#: has no rule, or there is no makefile.  ``make[1]:`` lines are a recipe's own make, not this one.
_MAKE_ABORTS = (
    (r"^g?make: \*\*\* No rule to make target .*Stop\.$", "it has no rule to make the target"),
    (r"^g?make: \*\*\* No targets specified and no makefile found\.", "it finds no makefile"),
)

#: Programs that run named tasks.
TASK_RUNNERS: tuple[TaskRunner, ...] = (
    TaskRunner("make", ("make", "gmake"), default=_k(BUILD),
               value_options=_opts("-C", "--directory", "-f", "--file", "--makefile", "-I", "--include-dir", "-o",
                                   "--old-file", "-W", "--what-if", "-l", "--load-average"),
               limits={"-n": _DRY_RUN, "--dry-run": _DRY_RUN, "--just-print": _DRY_RUN, "--recon": _DRY_RUN,
                       "-q": (_NONE, "only says whether targets are up to date"),
                       "--question": (_NONE, "only says whether targets are up to date"),
                       "-p": (_NONE, "only prints its rules")},
               tasks={"all": _k(BUILD), "install": _NONE}, aborted_output=_MAKE_ABORTS),
    TaskRunner("ninja", ("ninja",), default=_k(BUILD), value_options=_opts("-C", "-f", "-j", "-k", "-l", "-d", "-t"),
               limits={"-n": _DRY_RUN, "-t": (_NONE, "runs a ninja tool, not the build")}, tasks={"all": _k(BUILD)}),
    TaskRunner("npm run", ("npm", "pnpm", "bun"), sub=("run", "run-script", "rum", "urn"), first_only=True,
               value_options=_NPM_OPTS, bare="only lists the scripts", aborted_output=_NPM_ABORTS),
    TaskRunner("yarn", ("yarn",), first_only=True, ignore=_opts("run"), value_options=_NPM_OPTS,
               bare="only installs packages"),
    TaskRunner("pnpm", ("pnpm",), first_only=True, value_options=_NPM_OPTS),
    TaskRunner("composer", ("composer",), first_only=True, ignore=_opts("run", "run-script"),
               value_options=_opts("-d", "--working-dir")),
    TaskRunner("tox", ("tox",), default=_k(TEST, LINT, TYPECHECK), task_options=_opts("-e", "--env", "-f"),
               ignore=_opts("run", "r", "run-parallel", "p"),
               value_options=_opts("-c", "--conf", "--root", "--workdir", "-p", "--parallel", "-x", "--override",
                                   "-m", "--labels"),
               limits={**dict.fromkeys(("-l", "--listenvs", "-a", "list", "l"), (_NONE, "only lists the environments")),
                       "--notest": (_NONE, "only sets up the environments"),
                       "config": (_NONE, "only prints its configuration")}),
    TaskRunner("nox", ("nox",), default=_k(TEST, LINT, TYPECHECK), task_options=_opts("-s", "--session", "--sessions",
                                                                                        "-e"),
               value_options=_opts("-f", "--noxfile", "-p", "--python", "-t", "--tags", "-k"),
               limits={"-l": (_NONE, "only lists the sessions"), "--list": (_NONE, "only lists the sessions"),
                       "--list-sessions": (_NONE, "only lists the sessions")}),
    TaskRunner("mvn", ("mvn", "mvnw", "mvnd"), value_options=_MVN_OPTS, local_ok=True,
               tasks={"test": _k(TEST), "integration-test": _k(TEST, BUILD), "verify": _k(TEST, BUILD),
                      "package": _k(TEST, BUILD), "install": _k(TEST, BUILD), "deploy": _k(TEST, BUILD),
                      "compile": _k(BUILD), "test-compile": _k(BUILD), "validate": _NONE, "clean": _NONE},
               without={"-DskipTests": _NO_TESTS, "-DskipTests=true": _NO_TESTS, "-Dmaven.test.skip=true": _NO_TESTS,
                        "-Dmaven.test.skip": _NO_TESTS}),
    TaskRunner("gradle", ("gradle", "gradlew"), value_options=_GRADLE_OPTS,
               exclude_options=_opts("-x", "--exclude-task"),
               local_ok=True, tasks={"build": KINDS, "check": _k(TEST, LINT), "assemble": _k(BUILD), "clean": _NONE},
               limits={"--dry-run": _DRY_RUN, "-m": _DRY_RUN}),
    TaskRunner("rake", ("rake",), value_options=_opts("-f", "--rakefile", "-C", "--directory"),
               limits={"-T": (_NONE, "only lists the tasks"), "--tasks": (_NONE, "only lists the tasks"),
                       "-n": _DRY_RUN, "--dry-run": _DRY_RUN}),
    TaskRunner("just", ("just",), value_options=_opts("-f", "--justfile", "-d", "--working-directory"),
               limits={"-l": (_NONE, "only lists the recipes"), "--list": (_NONE, "only lists the recipes"),
                       "-n": _DRY_RUN, "--dry-run": _DRY_RUN}),
    TaskRunner("task", ("task",), value_options=_opts("-d", "--dir", "-t", "--taskfile"),
               limits={"-l": (_NONE, "only lists the tasks"), "--list": (_NONE, "only lists the tasks"),
                       "-n": _DRY_RUN, "--dry": _DRY_RUN}),
)

_UV_OPTS = _opts("--with", "--with-editable", "--with-requirements", "--python", "-p", "--extra", "--group",
                 "--only-group", "--no-group", "--package", "--directory", "--project", "--env-file", "--index",
                 "--default-index", "--from", "-w")

#: Programs that run the command in their arguments and exit with its exit code.
WRAPPERS: tuple[Wrapper, ...] = (
    Wrapper(("env",), value_options=_opts("-u", "--unset", "-C", "--chdir", "-S", "--split-string"), assignments=True),
    Wrapper(("timeout", "gtimeout"), value_options=_opts("-s", "--signal", "-k", "--kill-after"), positional=1),
    Wrapper(("nice",), value_options=_opts("-n", "--adjustment")),
    Wrapper(("ionice",), value_options=_opts("-c", "--class", "-n", "--classdata", "-p", "-P", "-u")),
    Wrapper(("nohup", "time", "exec", "command", "builtin", "unbuffer", "chronic", "caffeinate", "catchsegv"),
            value_options=_opts("-a", "-f")),
    Wrapper(("stdbuf",), value_options=_opts("-i", "-o", "-e")),
    Wrapper(("sudo", "doas"), value_options=_opts("-u", "--user", "-g", "--group", "-C", "-D", "--chdir", "-h",
                                                  "-p", "--prompt", "-r", "-t")),
    Wrapper(("xvfb-run",), value_options=_opts("-n", "--server-num", "-s", "--server-args", "-f", "--auth-file",
                                               "-e", "--error-file", "-p", "--xauth-protocol", "-w", "--wait")),
    Wrapper(("xargs",), value_options=_opts("-n", "--max-args", "-I", "-L", "-P", "--max-procs", "-s", "-d",
                                            "--delimiter", "-E", "-a", "--arg-file")),
    Wrapper(("uv",), sub=("run",), value_options=_UV_OPTS),
    Wrapper(("uv",), sub=("tool run",), value_options=_UV_OPTS),
    Wrapper(("uvx",), value_options=_UV_OPTS),
    Wrapper(("pipx",), sub=("run",), value_options=_opts("--spec", "--python")),
    Wrapper(("poetry",), sub=("run",), value_options=_opts("-C", "--directory", "-P", "--project")),
    Wrapper(("pipenv", "rye"), sub=("run",)),
    Wrapper(("pdm",), sub=("run",), value_options=_opts("-p", "--project", "-g"), scripts=True),
    Wrapper(("hatch",), sub=("run",), value_options=_opts("-e", "--env"), scripts=True),
    Wrapper(("pixi",), sub=("run",), value_options=_opts("-e", "--environment", "--manifest-path"), scripts=True),
    Wrapper(("conda", "mamba", "micromamba"), sub=("run",), value_options=_opts("-n", "--name", "-p", "--prefix",
                                                                                 "--cwd")),
    Wrapper(("npx", "bunx"), value_options=_opts("-p", "--package", "--node-options")),
    Wrapper(("npm",), sub=("exec", "x"), value_options=_opts("-p", "--package", "-w", "--workspace")),
    Wrapper(("pnpm",), sub=("exec", "dlx"), value_options=_opts("-C", "--dir", "--filter", "-F")),
    Wrapper(("yarn",), sub=("exec", "dlx"), value_options=_opts("-p", "--package")),
    Wrapper(("bun",), sub=("x",)),
    Wrapper(("bundle",), sub=("exec",), value_options=_opts("--gemfile")),
    Wrapper(("direnv",), sub=("exec",), positional=1),
    Wrapper(("dotenv",), sub=("run",), value_options=_opts("-f", "--file")),
    Wrapper(("coverage",), sub=("run",), value_options=_opts("--source", "--rcfile", "--data-file", "--include",
                                                             "--omit", "--context", "--concurrency"),
            prepend=("python",)),
)

_PRINTS = "only prints"
_READS = "only reads"
#: Programs that run no check, with what they do instead (said in the finding).
NON_CHECKS: Mapping[str, str] = {
    **dict.fromkeys(("echo", "printf", "yes", "pwd", "whoami", "id", "hostname", "uname", "date", "printenv",
                     "which", "whereis", "type", "hash", "alias", "history", "figlet", "banner", "cowsay"),
                    _PRINTS),
    **dict.fromkeys(("cat", "tac", "head", "tail", "less", "more", "nl", "wc", "grep", "egrep", "fgrep", "rg", "ag",
                     "ack", "find", "fd", "ls", "ll", "dir", "tree", "stat", "file", "du", "df", "sort", "uniq",
                     "cut", "tr", "column", "jq", "yq", "diff", "cmp", "comm", "md5sum", "sha1sum", "sha256sum",
                     "shasum", "b2sum", "base64", "xxd", "od", "hexdump", "strings", "realpath", "readlink",
                     "basename", "dirname", "tee", "paste", "join", "fold", "fmt", "expand", "rev", "look", "zcat",
                     "zless", "bat"), _READS),
    **dict.fromkeys(("sed", "awk", "gawk"), "only reads or edits text"),
    **dict.fromkeys(("true", ":"), "does nothing"),
    "false": "only fails",
    "exit": "only exits with the code it is given",
    "return": "only returns the code it is given",
    "sleep": "only waits",
    "wait": "only waits for background jobs",
    **dict.fromkeys(("test", "[", "[["), "only tests a condition (the shell's `test`, not a test runner)"),
    **dict.fromkeys(("cd", "pushd", "popd", "export", "unset", "set", "shopt", "umask", "ulimit", "trap", "read",
                     "shift", "local", "declare", "typeset", "readonly"), "only changes the shell's state"),
    **dict.fromkeys(("touch", "mkdir", "cp", "mv", "rm", "rmdir", "ln", "chmod", "chown", "install", "truncate",
                     "tar", "unzip", "zip", "gzip", "gunzip"), "only creates, copies or removes files"),
}

#: Programs that do not fail on what they are given, only when they cannot write: a step's
#: non-zero exit is not theirs when another program could have failed (``set -e; pytest; echo done``).
CANNOT_FAIL = frozenset({"echo", "printf", "true", ":", "set", "export", "unset", "shopt", "local", "declare",
                         "typeset", "readonly", "umask", "pwd"})
#: Programs that copy or reshape what a pipe gives them and fail only when they cannot read or
#: write it: after a check in a pipe with pipefail, the pipe's non-zero exit is the check's
#: (``pytest | tail -3``, ``pytest | tee log``).  ``grep`` is not one: it fails when nothing matches.
PIPE_FILTERS = frozenset({"tee", "tail", "head", "cat", "tac", "sort", "uniq", "wc", "cut", "tr", "column", "nl",
                          "fold", "fmt", "expand", "rev", "paste", "less", "more", "bat"})

#: Words in a task name that say what it runs (``test:unit``, ``lint-fix``, ``testDebugUnitTest``).
TASK_WORDS: Mapping[str, frozenset[str]] = {
    **dict.fromkeys(("test", "tests", "testing", "spec", "specs", "unittest", "unittests", "unit", "integration",
                     "e2e", "jest", "vitest", "mocha", "pytest", "ctest", "rspec", "phpunit", "py", "pypy",
                     "coverage", "cov", "smoke", "acceptance", "functional", "regression"), _k(TEST)),
    **dict.fromkeys(("lint", "linter", "linting", "eslint", "stylelint", "ruff", "flake8", "pylint", "clippy",
                     "ktlint", "detekt", "checkstyle", "spotless", "rubocop", "credo", "style", "prettier",
                     "black", "isort", "precommit", "pre-commit", "vet", "fmtcheck"), _k(LINT)),
    **dict.fromkeys(("typecheck", "typechecks", "typecheking", "types", "type", "typing", "tsc", "mypy",
                     "pyright", "dialyzer"), _k(TYPECHECK)),
    **dict.fromkeys(("build", "builds", "compile", "assemble", "package", "dist", "bundle", "jar", "wheel",
                     "sdist"), _k(BUILD)),
}
#: Words that make a task a check of whatever else its name says, or of any kind alone (``make check``).
_CHECK_WORDS = frozenset({"check", "checks", "ci", "verify", "validate", "all-checks", "qa"})
#: Words that, without a check word, name a task that rewrites files (``npm run format``).
_REWRITE_WORDS = frozenset({"format", "fmt", "fix", "prettier", "black", "isort"})


def task_kinds(name: str) -> frozenset[str]:
    """What a task of this name runs, from the words in it (:data:`TASK_WORDS`).

    ``test``, ``test:unit``, ``py311`` → tests; ``lint``, ``format:check`` → lint; ``type-check``,
    ``mypy`` → type check; ``build`` → build; ``check``, ``ci``, ``verify`` alone → any kind;
    ``format`` or ``lint:fix`` → nothing (they rewrite files); ``demo`` → nothing.
    """
    words = [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", name)]
    joined = {"".join(p) for p in zip(words, words[1:])}
    checked = any(w in _CHECK_WORDS for w in words)
    if not checked and any(w in _REWRITE_WORDS for w in words):
        return _NONE
    if "type" in words and checked:
        return _k(TYPECHECK)
    kinds: set[str] = set()
    for w in itertools.chain(words, joined):
        if w in ("fmt", "format") and checked:
            kinds.add(LINT)
        kinds |= TASK_WORDS.get(w, _NONE)
        if re.fullmatch(r"py\d+", w):
            kinds.add(TEST)
    if not kinds and checked:
        return KINDS
    return frozenset(kinds)


@dataclass(frozen=True)
class StepCheck:
    """What a recorded command's exit code 0 shows.

    Attributes:
        verdict: ``check`` (a recognised runner's success is proven), ``no_check`` (it is
            known to run no check, or its runner's exit code is hidden), or ``unknown`` (the
            linter cannot tell: an unknown program, an unparseable line).
        kinds: the kinds of check (:data:`KINDS`) the exit code 0 shows; empty unless ``check``.
        runners: the names of the runners whose success it shows (``("pytest",)``).
        reason: why it is ``no_check`` or ``unknown``, in words, naming the program
            (``"`echo` only prints"``); for ``check``, what it runs (``"it runs pytest"``).
        filtered: for ``check``, a test runner's name filter the line gives, which exits 0 also
            when it matches no test (```go test -run TestParse```); empty when none.  Only the
            step's output can show that a test ran (:func:`ran_no_tests`).
        unsure: for ``check``, kinds of check the line may or may not have run, which its exit
            code 0 cannot show (``go test -run TestParse`` builds, but may run no test), ``reason``
            saying why; a claim about one of them cannot be verified.  Empty for most.
    """

    verdict: str
    kinds: frozenset[str] = _NONE
    runners: tuple[str, ...] = ()
    reason: str = ""
    filtered: str = ""
    unsure: frozenset[str] = _NONE


# ----- what one simple command runs ------------------------------------------------------------


@dataclass
class _Prog:
    name: str
    verdict: str  # check | no_check | unknown
    kinds: frozenset[str] = _NONE
    reason: str = ""
    aborted: Mapping[int, str] = field(default_factory=dict)  # Runner.aborted
    aborted_output: tuple[tuple[str, str], ...] = ()  # Runner.aborted_output
    filtered: str = ""  # StepCheck.filtered


@dataclass
class _Seen:
    """What a (part of a) line's exit code 0 proves: programs whose success it shows, and
    programs that ran but whose exit code it hides (with why)."""

    proven: list[_Prog] = field(default_factory=list)
    hidden: list[tuple[_Prog, str]] = field(default_factory=list)
    problem: str | None = None  # the line could not be read


@dataclass(frozen=True)
class _Shell:
    pipefail: bool
    errexit: bool
    pipefail_note: str  # why there is no pipefail, said when a pipe hides a runner
    depth: int = 0
    failed: bool = False  # reading what a non-zero exit shows (else: what exit 0 shows)
    env: tuple[tuple[str, str], ...] = ()  # variables set earlier in the line (export X=1; X=1;)


_MAX_DEPTH = 8
_PYTHON = re.compile(r"(?:python|pypy)(?:\d+(?:\.\d+)*)?[mtw]?(?:\.exe)?|py")
_PY_VALUE_OPTS = _opts("-X", "-W", "--check-hash-based-pycs")
_SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_REDIRECT = re.compile(r"(?:\d+|&)?(?:>>?|<<<|<>|<|>&|<&|>\||&>>?)(.*)", re.S)
_RESERVED = frozenset({"if", "then", "else", "elif", "fi", "while", "until", "for", "do", "done", "case", "esac",
                       "function", "select", "coproc"})
_TOOL_DIRS = frozenset({"bin", ".bin", "Scripts"})


def _basename(word: str) -> str:
    return word.rstrip("/").rsplit("/", 1)[-1]


def _split_options(args: list[str], value_options: Iterable[str]) -> tuple[list[str], list[str]]:
    """``(options, rest)``: the leading options (with their values) and the words after them."""
    vals = frozenset(value_options)
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return args[:i], args[i + 1:]
        if not a.startswith(("-", "+")) or a in ("-", "+"):
            break  # "+" starts an option too: cargo +nightly test
        i += 2 if a in vals else 1
    return args[:i], args[i:]


def _has(args: Iterable[str], names: Iterable[str]) -> str | None:
    """The first of ``names`` given among ``args`` (``--opt`` or ``--opt=value``), else None.
    A name with its value (``--issues-exit-code=0``) matches only that value, in one word or
    two (``--issues-exit-code 0``)."""
    names = list(names)
    args = list(args)
    for i, a in enumerate(args):
        if a == "--":
            return None
        for n in names:
            opt, eq, val = n.partition("=")
            if eq and opt.startswith("-"):
                if a == n or (a == opt and i + 1 < len(args) and args[i + 1] == val):
                    return n
            elif a == n or (n.startswith("-") and a.startswith(n + "=")):
                return n
    return None


def _match_sub(rest: list[str], subs: tuple[str, ...]) -> int:
    """How many words of ``rest`` the matching subcommand takes (0: none matches)."""
    for sub in subs:
        words = sub.split()
        if rest[:len(words)] == words:
            return len(words)
    return 0


def _limit(args: list[str], limits: Mapping[str, tuple[frozenset[str], str]], kinds: frozenset[str], name: str,
           not_info: frozenset[str] = _NONE):
    """Apply ``limits`` and :data:`_INFO_ARGS` (but ``not_info``): ``(kinds left, reason)``."""
    info = _has(args, [a for a in _INFO_ARGS if a not in not_info])
    if info:
        return _NONE, f"`{name} {info}` {_INFO_ARGS[info]}"
    hit = _has(args, limits)
    if hit:
        left, what = limits[hit]
        kinds = kinds & left
        if not kinds:
            return _NONE, f"`{name} {hit}` {what}"
        return kinds, f"`{name} {hit}` {what}"
    return kinds, ""


def _shown(entry: Runner | TaskRunner, prog: str) -> str:
    """The entry's name as the command spelled it: ``yarn test`` for the ``npm test`` runner."""
    first, _, rest = entry.name.partition(" ")
    if len(entry.programs) == 1 or first == prog:
        return entry.name
    return f"{prog} {rest}".strip()


def _split_words(value: str) -> list[str]:
    try:
        return shlex.split(value)
    except ValueError:
        return value.split()


def _values(args: list[str], names: Iterable[str]) -> list[str]:
    """The values given to the options ``names`` (``-run X``, ``-run=X``, ``-oX`` for a
    one-letter option), in order, up to ``--``."""
    names = frozenset(names)
    out = []
    for i, a in enumerate(args):
        if a == "--":
            break
        opt, eq, val = a.partition("=")
        if a in names and i + 1 < len(args):
            out.append(args[i + 1])
        elif eq and opt in names:
            out.append(val)
        elif not a.startswith("--") and a[:2] in names and len(a) > 2:
            out.append(a[2:])
    return out


def _extra_args(r: Runner, args: list[str], env: Mapping[str, str]) -> tuple[list[str], str]:
    """Arguments the runner reads besides ``args``: from :attr:`Runner.env_options` set in ``env``
    and ``addopts=`` given to :attr:`Runner.ini_options`; and where they come from, for messages."""
    extra: list[str] = []
    where: list[str] = []
    for var in r.env_options:
        if env.get(var):
            extra += _split_words(env[var])
            where.append(f"`{var}`")
    for val in _values(args, r.ini_options):
        key, eq, more = val.partition("=")
        if eq and key.strip() == "addopts":
            extra += _split_words(more)
            where.append("`addopts`")
    return extra, " and ".join(where)


def _unclustered(args: list[str], flags: str) -> list[str]:
    """``-qh`` as ``-q -h`` when every letter is one of ``flags`` (short options without a value)."""
    if not flags:
        return args
    out = []
    for a in args:
        if len(a) > 2 and a[0] == "-" and a[1] != "-" and all(c in flags for c in a[1:]):
            out.extend(f"-{c}" for c in a[1:])
        else:
            out.append(a)
    return out


_RE_SPECIAL = frozenset(".^$*+?()[]{}|\\")


def _regex_top(pattern: str) -> str:
    """The first ``/``-separated element of a ``go test -run`` pattern (``/`` inside ``[]`` or
    ``()`` does not separate), which is matched against the top-level tests' names."""
    depth, i = 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c in "[(":
            depth += 1
        elif c in "])":
            depth = max(0, depth - 1)
        elif c == "/" and depth == 0:
            return pattern[:i]
        i += 1
    return pattern


def _skips_every_test(pattern: str, prefixes: tuple[str, ...]) -> bool:
    """Whether ``go test -skip pattern`` skips every test: a pattern of one ``/``-separated part
    that matches every top-level name.  A pattern of several parts (``.*/integration``) skips
    subtests only — Go's matcher lets a top-level test whose name matches only the first part
    run, to reach the subtests the rest names — so it never skips them all."""
    top = _regex_top(pattern)
    return top == pattern and _matches_every_name(top, prefixes)


def _matches_no_name(pattern: str, prefixes: tuple[str, ...]) -> bool:
    """Whether the regular expression ``pattern`` can match no test's name: one that matches only
    the empty name (``^$``), or one anchored at the start (``^NONE``) whose leading text no name
    starting with one of ``prefixes`` can begin with.  Anything else may match: False."""
    if not pattern.startswith("^") or "|" in pattern:
        return False
    body = pattern[1:]
    if body in ("$", "\\z", "$$"):
        return True
    if not prefixes:
        return False
    lit = ""
    for i, c in enumerate(body):
        if c in _RE_SPECIAL:
            if c in "*?{" and lit:
                lit = lit[:-1]  # the character before an optional quantifier may be absent
            break
        lit += c
    return bool(lit) and not any(lit.startswith(n) or n.startswith(lit) for n in prefixes)


def _matches_every_name(pattern: str, prefixes: tuple[str, ...]) -> bool:
    """Whether the regular expression ``pattern`` matches every test's name (``.``, ``Test``
    for go's names): it matches within each prefix, and nothing in it looks past what it
    matched (``$``, ``\\b``, lookaheads), so it matches every name that starts so."""
    if not pattern or re.search(r"\$|\\[bBzZ]|\(\?[=!<]", pattern):
        return False
    try:
        rx = re.compile(pattern)
    except re.error:
        return False
    return all(rx.search(n) for n in (prefixes or ("x",)))


def _runner(prog: str, args: list[str], env: Mapping[str, str] | None = None, failed: bool = False) -> _Prog | None:
    for r in RUNNERS:
        if prog not in r.programs:
            continue
        _opts_before, rest = _split_options(args, r.value_options)
        if r.sub:
            n = _match_sub(rest, r.sub)
            if not n:
                continue
            after = rest[n:]
        else:
            after = args
        if r.requires and not _has(args, r.requires):
            continue
        name = _shown(r, prog)
        extra, where = _extra_args(r, after, env or {})
        if "--" in after and r.after_dashdash is not None:
            cut = after.index("--")
            own, passed = after[:cut], after[cut + 1:]
        else:
            own, passed = after, []
        own = _unclustered(own, r.flags)
        kinds, why = _limit(own, r.limits, r.kinds, name, r.not_info)
        if kinds and extra:
            kinds, why_extra = _limit(_unclustered(extra, r.flags), r.limits, kinds, name, r.not_info)
            if why_extra:
                why = f"{why_extra} (set by {where})"
        if kinds and passed:
            kinds, why_passed = _limit(_unclustered(passed, r.flags), r.after_dashdash or {}, kinds, f"{name} --",
                                       r.not_info)
            why = why_passed or why
        filtered = ""
        if kinds & _k(TEST) and (r.name_filters or r.name_skips):
            words = [*extra, *own]
            runs = _values(words, r.name_filters)
            skips = _values(words, r.name_skips)
            opt = next((o for o in sorted(r.name_filters)
                        if any(w == o or w.startswith(o + "=") for w in words)), "")
            if runs and _matches_no_name(_regex_top(runs[-1]), r.test_names):
                kinds = kinds - _k(TEST)
                why = f"`{name} {opt} {shlex.quote(runs[-1])}` runs no test: the pattern matches no test's name"
            elif any(_skips_every_test(x, r.test_names) for x in skips):
                kinds = kinds - _k(TEST)
                x = next(x for x in skips if _skips_every_test(x, r.test_names))
                why = f"`{name} -skip {shlex.quote(x)}` runs no test: the pattern matches every test's name"
            elif runs:
                filtered = f"`{name} {opt} {shlex.quote(runs[-1])}`"
        if not kinds:
            return _Prog(name, "no_check", reason=why)
        unsure = _has([*extra, *own], r.unsure)
        if unsure and not failed:
            return _Prog(name, "unknown", reason=f"`{name} {unsure}` {r.unsure[unsure]}")
        return _Prog(name, "check", kinds, reason=why, aborted=r.aborted, aborted_output=r.aborted_output,
                     filtered=filtered)
    return None


def _task_runner(prog: str, args: list[str]) -> _Prog | None:
    for t in TASK_RUNNERS:
        if prog not in t.programs:
            continue
        values = t.value_options | t.task_options | t.exclude_options
        if t.sub:
            _before, rest = _split_options(args, values)
            n = _match_sub(rest, t.sub)
            if not n:
                continue
            args = rest[n:]  # this entry answers from here on: the loop ends with a return
        tasks: list[str] = []
        task_opt = ""
        excluded: list[str] = []
        positional: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            if a == "--":
                break
            opt, eq, val = a.partition("=")
            if a.startswith("-") and a != "-":
                if opt in t.task_options or opt in t.exclude_options:
                    if not eq:
                        i += 1
                        val = args[i] if i < len(args) else ""
                    (tasks if opt in t.task_options else excluded).extend(v for v in val.split(",") if v)
                    task_opt = task_opt or (opt if opt in t.task_options else "")
                elif a in values:
                    i += 1
                elif len(a) == 2 and a[1] == "j" and i + 1 < len(args) and args[i + 1].isdigit():
                    i += 1  # make -j 4
            elif not (prog in ("make", "gmake") and _ASSIGN.match(a)) and a not in t.ignore:
                positional.append(a)
                if t.first_only:
                    break
            i += 1
        if not t.task_options:
            tasks = positional
        shown = _shown(t, prog)
        name = f"{shown} {task_opt} {','.join(tasks)}" if task_opt else f"{shown} {' '.join(tasks)}".strip()
        kinds, why = _limit(args, t.limits, KINDS, shown)
        if not kinds:
            return _Prog(name, "no_check", reason=why)
        if t.task_options and positional:
            return _Prog(name, "unknown", reason=f"the linter does not know what `{shown} {positional[0]}` runs")
        if not tasks:
            if t.default is None and t.bare:
                return _Prog(name, "no_check", reason=f"`{name}` {t.bare}")
            if t.default is None:
                return _Prog(name, "unknown", reason=f"`{name}` runs its default task, which the linter cannot see")
            kinds = t.default
        else:
            kinds = frozenset().union(*(_kinds_of_task(t, x) for x in tasks))
        if t.without:
            for arg, drop in t.without.items():
                if arg in args:
                    kinds -= drop
        for x in excluded:
            kinds -= _kinds_of_task(t, x) & _k(TEST)
        if not kinds:
            if not tasks:
                return _Prog(name, "unknown", reason=f"`{name}` runs nothing the linter recognises as a check")
            return _Prog(name, "unknown", reason=f"the linter does not know what `{name}` runs: the task's name "
                                                 f"says nothing about tests, a build, a lint or a type check")
        return _Prog(name, "check", kinds, aborted_output=t.aborted_output)
    return None


def _kinds_of_task(t: TaskRunner, task: str) -> frozenset[str]:
    """A task's kinds: ``t.tasks`` by its name (a task path ``:app:build`` or goal
    ``surefire:test`` by its last part), else :func:`task_kinds` of the whole name
    (``spotless:check``, ``test:unit``)."""
    if task in t.tasks:
        return t.tasks[task]
    base = task.rsplit(":", 1)[-1]
    if base in t.tasks:
        return t.tasks[base]
    return task_kinds(task)


def _env_wrapper_changes(args: list[str], env: dict[str, str]) -> None:
    """Apply what ``env ARGS`` does to the environment of the command it runs: ``-i`` (or ``-``)
    empties it, ``-u NAME`` removes a variable, ``NAME=value`` sets one."""
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-i", "--ignore-environment", "-"):
            env.clear()
        elif a in ("-u", "--unset") and i + 1 < len(args):
            env.pop(args[i + 1], None)
            i += 1
        elif a.startswith("--unset="):
            env.pop(a.partition("=")[2], None)
        elif a.startswith("-u") and len(a) > 2:
            env.pop(a[2:], None)
        elif a in ("-C", "--chdir", "-S", "--split-string"):
            i += 1
        elif a == "--":
            pass
        elif _ASSIGN.match(a):
            _assign(a, env)
        elif not a.startswith("-"):
            return
        i += 1


def _assign(word: str, env: dict[str, str]) -> None:
    """``NAME=value`` or ``NAME+=value`` into ``env``."""
    name, _eq, value = word.partition("=")
    if name.endswith("+"):
        name = name[:-1]
        value = env.get(name, "") + value
    env[name] = value


def _wrapper(prog: str, args: list[str]) -> tuple[Wrapper, list[str]] | None:
    for w in WRAPPERS:
        if prog not in w.programs:
            continue
        rest = args
        if w.sub:
            _before, rest = _split_options(args, w.value_options)
            n = _match_sub(rest, w.sub)
            if not n:
                continue
            rest = rest[n:]
        _o, rest = _split_options(rest, w.value_options)
        if w.assignments:
            while rest and _ASSIGN.match(rest[0]):
                rest = rest[1:]
            _o, rest = _split_options(rest, w.value_options)
        rest = rest[w.positional:]
        return w, [*w.prepend, *rest] if rest else []
    return None


def _python(args: list[str]) -> tuple[list[str] | None, str]:
    """``python ARGS`` → the words of what it runs (``-m pytest -q`` → ``pytest -q``), or
    ``(None, why)`` when that cannot be told."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-m" or (a.startswith("-m") and len(a) > 2 and not a.startswith("--")):
            mod = args[i + 1] if a == "-m" and i + 1 < len(args) else a[2:]
            if not mod:
                return None, "`python -m` names no module"
            rest = args[i + 2:] if a == "-m" else args[i + 1:]
            return [mod.split(".")[0] if mod.endswith(".__main__") else mod, *rest], ""
        if a == "-c" or (a.startswith("-c") and not a.startswith("--")):
            return None, "`python -c` runs inline code, which the linter does not read"
        if a.startswith("-") and a != "-":
            i += 2 if a in _PY_VALUE_OPTS else 1
            continue
        return args[i:], ""
    return None, "`python` with no script runs no check"


def _shell_line(words: list[str], sh: _Shell) -> tuple[str | None, _Shell, str]:
    """``bash [opts] -c LINE`` → ``(LINE, its shell state, "")``; else ``(None, _, why)``."""
    prog = _basename(words[0])
    pipefail = False
    errexit = False
    line = None
    args = words[1:]
    if prog == "busybox" and args and args[0] in _SHELLS:
        prog, args = args[0], args[1:]
    i = 0
    has_c = False
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        opt = _shell_options(args, i, pipefail, errexit)
        if opt is not None:
            has_c = has_c or "c" in a[1:]
            i, pipefail, errexit = opt
            continue
        if a.startswith("--"):
            i += 1
            continue
        break
    rest = args[i:]
    if has_c:
        if not rest:
            return None, sh, f"`{prog} -c` is given no command"
        line = rest[0]
    elif rest:
        return None, sh, f"`{prog} {rest[0]}` runs a script, which the linter does not read"
    else:
        return None, sh, f"`{prog}` with no command reads its commands from stdin"
    has_pipefail = prog in ("bash", "zsh", "ksh", "mksh")
    note = "" if pipefail else (f"`{prog} -c` without `-o pipefail`" if has_pipefail else f"`{prog}` has no pipefail")
    return line, _Shell(pipefail and has_pipefail, errexit, note, sh.depth + 1, sh.failed, sh.env), ""


def _identify(words: list[str], sh: _Shell) -> _Seen:
    """What the simple command ``words`` (redirections removed) proves when it exits 0."""
    words = list(words)
    assigned = False
    env = dict(sh.env)
    while words and _ASSIGN.match(words[0]):
        _assign(words[0], env)
        words = words[1:]
        assigned = True
    if not words:
        return _Seen([_Prog("assignment", "no_check", reason="it only sets shell variables")] if assigned else [])
    script_names = False
    for _ in range(40):
        first = words[0]
        prog = _basename(first)
        if prog in _SHELLS:
            if sh.depth >= _MAX_DEPTH:
                return _Seen([_Prog(prog, "unknown", reason="shells nest too deep to follow")])
            line, inner, why = _shell_line(words, dataclasses.replace(sh, env=tuple(env.items())))
            if line is None:
                return _Seen([_Prog(prog, "unknown", reason=why)])
            return _analyse_failure(line, inner) if inner.failed else _analyse(line, inner)
        if _PYTHON.fullmatch(prog):
            nxt, why = _python(words[1:])
            if nxt is None:
                return _Seen([_Prog("python", "unknown", reason=why)])
            words = nxt
            continue
        wrapped = _wrapper(prog, words[1:])
        if wrapped:
            w, inner_words = wrapped
            if not inner_words:
                if prog == "env":
                    return _Seen([_Prog("env", "no_check", reason=f"`env` {_PRINTS} the environment")])
                return _Seen([_Prog(prog, "unknown", reason=f"`{prog}` is given no command to run")])
            if prog == "command" and _has(words[1:2], ("-v", "-V")):
                return _Seen([_Prog("command -v", "no_check", reason=f"`command -v` {_PRINTS} where a program is")])
            script_names = script_names or w.scripts
            if w.assignments:
                _env_wrapper_changes(words[1:], env)
            words = inner_words
            continue
        break
    else:
        return _Seen([_Prog(_basename(words[0]), "unknown", reason="wrappers nest too deep to follow")])
    first = words[0]
    prog = _basename(first)
    args = words[1:]
    found = _runner(prog, args, env, sh.failed) or _task_runner(prog, args)
    if found is None and script_names and "/" not in first and "." not in first and task_kinds(first):
        found = _Prog(f"the project's script `{first}`", "check", task_kinds(first))  # pdm run test
    if found is None and prog in NON_CHECKS:
        found = _Prog(prog, "no_check", reason=f"`{prog}` {NON_CHECKS[prog]}")
    if found is None:
        return _Seen([_Prog(prog, "unknown", reason=f"`{first}` is no test, build, lint or type-check runner the "
                                                   f"linter knows")])
    if "/" in first and not first.startswith(("/", "~")) and found.verdict != "unknown":
        parent = first.rstrip("/").rsplit("/", 2)
        runner_local = any(prog in r.programs and r.local_ok for r in (*RUNNERS, *TASK_RUNNERS))
        if not runner_local and (len(parent) < 2 or parent[-2] not in _TOOL_DIRS):
            return _Seen([_Prog(prog, "unknown", reason=f"`{first}` is a file in the checkout, not the installed "
                                                        f"`{prog}`")])
    return _Seen([found])


# ----- shell lines ------------------------------------------------------------------------------


_OPS = ("&&", "||", "|&", ";;", "|", ";", "&", "\n")


def _scan(line: str) -> list[tuple[str, str]]:
    """Split a shell line at its top-level operators: ``[(kind, text)]`` with kind ``word`` (a
    simple command's text) or ``op``.  Quotes, ``$(…)``, ``${…}`` and backticks are kept whole.

    Why not a library: ``shlex`` (used for each simple command's words, :func:`_words`) splits
    at the operators inside ``$(pytest | tee log)`` too in its ``punctuation_chars`` mode, and
    ``bashlex`` is GPL-3.0; this scanner only finds where one command ends and the next begins.

    Raises:
        ValueError: an unclosed quote or substitution, or a here-document.
    """
    out: list[tuple[str, str]] = []
    buf: list[str] = []
    stack: list[str] = []  # ' " ( { `
    i, n = 0, len(line)

    def flush() -> None:
        out.append(("word", "".join(buf)))
        buf.clear()

    while i < n:
        ch = line[i]
        top = stack[-1] if stack else None
        if top == "'":
            buf.append(ch)
            if ch == "'":
                stack.pop()
            i += 1
            continue
        if ch == "\\" and i + 1 < n:
            buf.append(line[i:i + 2])
            i += 2
            continue
        if top == "`":
            buf.append(ch)
            if ch == "`":
                stack.pop()
            i += 1
            continue
        if top == '"':
            if ch == '"':
                stack.pop()
            elif line.startswith("$(", i):
                stack.append("(")
                buf.append("$")
                i += 1
                ch = "("
            elif line.startswith("${", i):
                stack.append("{")
                buf.append("$")
                i += 1
                ch = "{"
            elif ch == "`":
                stack.append("`")
            buf.append(ch)
            i += 1
            continue
        # top level, or inside $( ) / ${ }
        if ch in "'\"`":
            stack.append(ch)
            buf.append(ch)
            i += 1
            continue
        if ch in "$<>" and line.startswith("(", i + 1):
            stack.append("(")
            buf.append(line[i:i + 2])
            i += 2
            continue
        if ch == "$" and line.startswith("{", i + 1):
            stack.append("{")
            buf.append("${")
            i += 2
            continue
        if top == "(":
            if ch == "(":
                stack.append("(")
            elif ch == ")":
                stack.pop()
            buf.append(ch)
            i += 1
            continue
        if top == "{":
            if ch == "}":
                stack.pop()
            buf.append(ch)
            i += 1
            continue
        if ch == "#" and (not buf or buf[-1][-1:].isspace()):
            j = line.find("\n", i)
            i = n if j < 0 else j
            continue
        if ch == "<" and line.startswith("<<", i) and not line.startswith("<<<", i):
            raise ValueError("a here-document")
        if ch in "()":
            buf.append(" ")  # a subshell: read as if its commands stood in the line
            i += 1
            continue
        prev = buf[-1][-1:] if buf else ""
        if ch == "|" and prev == ">":
            buf.append(ch)  # >| clobber redirection
            i += 1
            continue
        if ch == "&" and (prev in (">", "<") or line.startswith(">", i + 1)):
            buf.append(ch)  # 2>&1, &>file
            i += 1
            continue
        op = next((o for o in _OPS if line.startswith(o, i)), None)
        if op:
            flush()
            out.append(("op", ";" if op == ";;" else op))
            i += len(op)
            continue
        buf.append(ch)
        i += 1
    if stack:
        closing = {"'": "single quote", '"': "double quote", "(": "`)`", "{": "`}`", "`": "backtick"}[stack[-1]]
        raise ValueError(f"no closing {closing}")
    flush()
    return out


def _words(text: str) -> list[str]:
    """The words of one simple command, without redirections (``> log``, ``2>&1``)."""
    raw = shlex.split(text)
    out = []
    skip = False
    for w in raw:
        if skip:
            skip = False
            continue
        m = _REDIRECT.fullmatch(w)
        if m:
            skip = not m.group(1)
            continue
        out.append(w)
    return out


@dataclass
class _Pipeline:
    negated: bool
    parts: list[_Seen]
    names: list[str]
    shell: _Shell
    words: list[list[str]] = field(default_factory=list)
    status_of: int | None = None  # the part whose exit code a later `exit ${PIPESTATUS[k]}` passes on


def _not_the_pipes_status(p: _Pipeline, k: int) -> str:
    """Why part ``k`` of pipeline ``p`` does not give the step's exit code ("" when it can):
    ``${PIPESTATUS[n]}`` names another part, or, without pipefail, only the last part counts."""
    if p.status_of is not None and k != p.status_of:
        return f"the step's exit code is `{p.names[p.status_of]}`'s (`${{PIPESTATUS[{p.status_of}]}}`)"
    if p.status_of is None and k < len(p.parts) - 1 and not p.shell.pipefail:
        return (f"its exit code is lost in the pipe: the step's exit code is `{p.names[-1]}`'s"
                + (f" ({p.shell.pipefail_note})" if p.shell.pipefail_note else ""))
    return ""


def _pipeline_seen(p: _Pipeline) -> tuple[list[_Prog], list[tuple[_Prog, str]]]:
    """What the pipeline's exit code 0 proves: ``(proven, hidden)``."""
    proven: list[_Prog] = []
    hidden: list[tuple[_Prog, str]] = []
    for k, part in enumerate(p.parts):
        hidden.extend(part.hidden)
        why = "`!` inverts its exit code" if p.negated else _not_the_pipes_status(p, k)
        if why:
            hidden.extend((q, why) for q in part.proven)
        else:
            proven.extend(part.proven)
    return proven, hidden


def _parse(line: str, sh: _Shell) -> list[tuple[list[tuple[str | None, _Pipeline]], str]] | _Seen:
    """The line as lists (separated by ``;``, ``&``, newlines) of and-or lists (``&&``, ``||``)
    of pipelines, each simple command identified; a :class:`_Seen` with ``problem`` when it
    cannot be read."""
    try:
        tokens = _scan(line)
    except ValueError as exc:
        return _Seen(problem=f"the command line cannot be parsed ({exc})")
    lists: list[tuple[list[tuple[str | None, _Pipeline]], str]] = []
    andor: list[tuple[str | None, _Pipeline]] = []
    cur: _Pipeline | None = None
    pending: str | None = None
    state = sh
    for kind, text in tokens:
        if kind == "word":
            try:
                words = _words(text)
            except ValueError as exc:
                return _Seen(problem=f"the command line cannot be parsed ({exc})")
            negated = False
            while words and words[0] in ("!", "{"):
                negated, words = negated != (words[0] == "!"), words[1:]
            while words and words[-1] == "}":
                words = words[:-1]
            while words and words[0] == "time":
                words = words[2:] if words[1:2] == ["-p"] else words[1:]
            if not words:
                continue
            reserved = next((w for w in words[:1] if w in _RESERVED), None)
            if reserved:
                return _Seen(problem=f"the line uses the shell's `{reserved}`, which the linter does not follow")
            if words[0] == "set":
                state = _set_builtin(words[1:], state)
            state = _env_builtin(words, state)
            seen = _identify(words, state)
            if seen.problem:
                return seen
            name = _basename(words[0])
            if cur is None:
                cur = _Pipeline(negated, [seen], [name], state, [words])
                andor.append((pending, cur))
                pending = None
            else:
                cur.parts.append(seen)
                cur.names.append(name)
                cur.words.append(words)
        elif text in ("|", "|&"):
            if cur is None:
                return _Seen(problem=f"the command line cannot be parsed (`{text}` with no command before it)")
        elif text in ("&&", "||"):
            if cur is None:
                return _Seen(problem=f"the command line cannot be parsed (`{text}` with no command before it)")
            cur = None
            pending = text
        else:  # ; & newline
            if andor:
                lists.append((andor, text))
            cur, andor, pending = None, [], None
    if andor:
        lists.append((andor, ""))
    return lists


def _analyse(line: str, sh: _Shell) -> _Seen:
    """What a shell line's exit code 0 proves (bash's rules for lists, and-or lists, pipes)."""
    lists = _parse(line, sh)
    if isinstance(lists, _Seen):
        return lists
    _pass_on_status(lists)
    return _walk_lists(lists, _proven_pipelines, _pipeline_seen,
                       lambda ops: "`||` lets the step exit 0 when it fails" if "||" in ops
                       else "its exit code does not decide the step's")


def _walk_lists(lists, decides, seen_in, why_last) -> _Seen:
    """Walk a parsed shell line's lists: ``decides(ops, final, errexit)`` gives the indexes of the
    pipelines of an and-or list whose outcome can be the step's, ``seen_in(pipeline)`` the
    programs of one pipeline that count and those that cannot (with why), and
    ``why_last(ops)`` says why a pipeline of the last list does not count.  Programs of
    pipelines that cannot decide go to ``hidden`` with the reason."""
    out = _Seen()
    last = lists[-1][0][-1][1].names[-1] if lists else ""
    for idx, (andor, sep) in enumerate(lists):
        final = idx == len(lists) - 1 and sep != "&"
        errexit = andor[-1][1].shell.errexit and sep != "&"
        ops = [op for op, _p in andor]
        deciding = decides(ops, final, errexit)
        for k, (_op, p) in enumerate(andor):
            counted, hidden = seen_in(p)
            out.hidden.extend(hidden)
            if k in deciding:
                out.proven.extend(counted)
                continue
            if sep == "&":
                why = "it runs in the background (`&`), so the step's exit code is not its"
            elif idx < len(lists) - 1:
                why = f"the step's exit code is that of `{last}`, which runs after it"
            else:
                why = why_last(ops)
            out.hidden.extend((q, why) for q in counted if q.name != "!")
    return out


_STATUS = re.compile(r"\$\?|\$\{\?\}|\$\{PIPESTATUS\[(\d+)\]\}")


def _pass_on_status(lists: list[tuple[list[tuple[str | None, _Pipeline]], str]]) -> None:
    """``pytest | tee log; exit ${PIPESTATUS[0]}`` (or ``exit $?``, ``[ ${PIPESTATUS[0]} -eq 0 ]``,
    ``test $? -eq 0``) passes the earlier command's exit code on as the step's: drop the last
    list and let the one before it decide, through the pipe part it names."""
    if len(lists) < 2 or lists[-2][1] not in (";", "\n"):
        return
    andor, _sep = lists[-1]
    if len(andor) != 1 or len(andor[0][1].words) != 1 or andor[0][1].negated:
        return
    words = andor[0][1].words[0]
    if words[:1] == ["exit"] and len(words) == 2:
        ref = words[1]
    elif (words[:1] in (["test"], ["["], ["[["]) and len(words) >= 4 and words[2] in ("-eq", "=", "==")
          and words[3] == "0" and words[4:] in ([], ["]"], ["]]"])):
        ref = words[1]
    else:
        return
    m = _STATUS.fullmatch(ref)
    if not m:
        return
    before = lists[-2][0][-1][1]
    if m.group(1) is not None:
        if int(m.group(1)) >= len(before.parts):
            return
        before.status_of = int(m.group(1))
    lists.pop()


def _env_builtin(words: list[str], sh: _Shell) -> _Shell:
    """``export NAME=value``, ``declare -x NAME=value``, a command of assignments alone (``NAME=value;``)
    and ``unset NAME`` change the variables the rest of the line sees."""
    if words[0] in ("export", "declare", "typeset", "local", "readonly"):
        assigns, removed = [w for w in words[1:] if _ASSIGN.match(w)], []
    elif all(_ASSIGN.match(w) for w in words):
        assigns, removed = words, []
    elif words[0] == "unset":
        assigns, removed = [], [w for w in words[1:] if not w.startswith("-")]
    else:
        return sh
    env = dict(sh.env)
    for w in assigns:
        _assign(w, env)
    for name in removed:
        env.pop(name, None)
    return dataclasses.replace(sh, env=tuple(env.items()))


def _set_builtin(args: list[str], sh: _Shell) -> _Shell:
    """``set -e`` / ``set -o pipefail`` / ``set -euo pipefail`` change how the rest of the line runs."""
    pipefail, errexit = sh.pipefail, sh.errexit
    i = 0
    while i < len(args):
        opt = _shell_options(args, i, pipefail, errexit)
        if opt is None:
            i += 1
        else:
            i, pipefail, errexit = opt
    return dataclasses.replace(sh, pipefail=pipefail, errexit=errexit)


def _shell_options(args: list[str], i: int, pipefail: bool, errexit: bool) -> tuple[int, bool, bool] | None:
    """A shell's short options at ``args[i]`` (``-e``, ``-o pipefail``, ``-euo pipefail``,
    ``+o errexit``: each ``o`` takes the next word as an option name), as ``sh`` and ``set`` read
    them: ``(index after them, pipefail, errexit)``; ``None`` when ``args[i]`` is no such word."""
    a = args[i]
    if not re.fullmatch(r"[-+][a-zA-Z]+", a):
        return None
    on = a[0] == "-"
    if "e" in a[1:]:
        errexit = on
    n_o = a.count("o")
    names = args[i + 1:i + 1 + n_o]
    if "pipefail" in names:
        pipefail = on
    if "errexit" in names:
        errexit = on
    return i + 1 + n_o, pipefail, errexit


def _proven_pipelines(ops: list[str | None], final: bool, errexit: bool) -> set[int]:
    """Indexes of the pipelines of an and-or list (``a && b || c``) that ran and succeeded in
    every way the list can run that is allowed: for the line's last list, every way that ends in
    exit 0; for an earlier one under ``set -e``, every way that does not stop the shell; for an
    earlier one without it, none."""
    n = len(ops)
    if not final and not errexit:
        return set()
    if "||" not in ops:  # a && b && c: exit 0 means all ran and passed; under set -e only a lone one
        return set(range(n)) if final or n == 1 else set()
    if n > 12:
        return set()  # too many to enumerate; prove nothing
    proven = set(range(n))
    any_allowed = False
    for outcome in itertools.product((True, False), repeat=n):
        ran = [False] * n
        status = None
        for k in range(n):
            if k == 0 or (ops[k] == "&&" and status) or (ops[k] == "||" and not status):
                ran[k] = True
                status = outcome[k]
        if final:
            allowed = bool(status)
        else:
            allowed = not (ran[-1] and not outcome[-1])
        if not allowed:
            continue
        any_allowed = True
        proven -= {k for k in range(n) if not (ran[k] and outcome[k])}
    return proven if any_allowed else set()


# ----- what a non-zero exit shows ---------------------------------------------------------------


def _failing_pipelines(ops: list[str | None], final: bool, errexit: bool) -> set[int]:
    """Indexes of the pipelines of an and-or list whose failure can be the step's non-zero exit:
    for the line's last list, the last pipeline that ran in every way the list can end non-zero;
    for an earlier list under ``set -e``, its last pipeline (bash exempts the others of an
    ``&&``/``||`` list from ``-e``); for an earlier list without it, none."""
    n = len(ops)
    if not final and not errexit:
        return set()
    if not final:
        return {n - 1}
    if n > 12:
        return set(range(n))  # too many to enumerate; any may have failed
    out: set[int] = set()
    for outcome in itertools.product((True, False), repeat=n):
        status, last = True, 0
        for k in range(n):
            if k == 0 or (ops[k] == "&&" and status) or (ops[k] == "||" and not status):
                status, last = outcome[k], k
        if not status:
            out.add(last)
    return out


def _pipeline_failers(p: _Pipeline) -> tuple[list[_Prog], list[tuple[_Prog, str]]]:
    """Whose failure a failing pipeline's exit code can be: ``(candidates, hidden)``."""
    if p.negated:
        ran = [q.name for part in p.parts for q in part.proven]
        why = f"`!` inverts the exit code: the step failed because {' | '.join(ran) or 'the command'} passed"
        hidden = [h for part in p.parts for h in part.hidden]
        hidden += [(q, why) for part in p.parts for q in part.proven]
        return [_Prog("!", "no_check", reason=why)], hidden
    cands: list[_Prog] = []
    hidden: list[tuple[_Prog, str]] = []
    for k, part in enumerate(p.parts):
        hidden.extend(part.hidden)
        why = _not_the_pipes_status(p, k)
        if why:
            hidden.extend((q, why) for q in part.proven)
        else:
            # with pipefail, `pytest | tail -3` fails because pytest did: tail fails only on I/O errors
            cands.extend(q for q in part.proven if not (k and p.shell.pipefail and q.name in PIPE_FILTERS))
    return cands, hidden


def _analyse_failure(line: str, sh: _Shell) -> _Seen:
    """Whose failure a shell line's non-zero exit can be (bash's rules for lists, and-or lists,
    pipes): ``proven`` holds every program whose failure may be the step's exit code, ``hidden``
    the programs that ran but whose failure cannot be it."""
    sh = dataclasses.replace(sh, failed=True)
    lists = _parse(line, sh)
    if isinstance(lists, _Seen):
        return lists
    _pass_on_status(lists)
    return _walk_lists(lists, _failing_pipelines, _pipeline_failers,
                       lambda ops: "its failure cannot be the step's exit code")


#: Exit codes a shell gives when it could not run a command at all: a step that failed with one
#: shows no failing check, whatever it was meant to run.
SHELL_EXITS: Mapping[int, str] = {126: "the shell's 'found but cannot be executed'",
                                  127: "the shell's 'command not found'"}


@dataclass(frozen=True)
class FailureCheck:
    """What a recorded step's non-zero exit shows: whose failure its exit code can be.

    Attributes:
        exit: the step's exit code.
        candidates: ``(name, verdict, kinds, reason)`` of every program whose failure may be the
            step's exit code (``verdict`` as in :class:`StepCheck`; a runner that exited with one
            of its :attr:`Runner.aborted` codes, or any program with a :data:`SHELL_EXITS` code,
            is ``no_check``).
        hidden: ``(name, why)`` of the runners that ran but whose failure cannot be the step's
            exit code (``pytest | tee log`` without pipefail: the exit code is ``tee``'s).
        problem: why the line cannot be read, or why the linter cannot tell whose exit code it is
            (a pipe in a log that does not record pipefail); ``None`` otherwise.
        reads_output: some candidate runner tells by its output whether it stopped before running
            anything (:attr:`Runner.aborted_output`: ``make test`` without a ``test`` target): the
            verdict depends on the step's stored output.
    """

    exit: int
    candidates: tuple[tuple[str, str, frozenset[str], str], ...] = ()
    hidden: tuple[tuple[str, str], ...] = ()
    problem: str | None = None
    reads_output: bool = False

    def shows(self, kinds: frozenset[str]) -> StepCheck:
        """Whether the non-zero exit shows a failing check of one of ``kinds``, as a
        :class:`StepCheck`: ``check`` when every candidate is a runner of one of them (its
        ``kinds`` those the runners share with ``kinds``), or when every candidate is a runner
        but of other kinds (its ``kinds`` theirs: the failure shows another check); ``unknown``
        when the line cannot be read, when some candidate is such a runner and another is not
        (``cd tests && pytest``: the exit code may be ``cd``'s), or when a candidate is a program
        the linter does not know; ``no_check`` when no candidate is a runner (``false``, ``exit 1``,
        ``! pytest``, ``pytest`` exiting 5)."""
        if self.problem:
            return StepCheck("unknown", reason=self.problem)
        if not self.candidates:
            name, why = self.hidden[0] if self.hidden else ("", "")
            return StepCheck("no_check", reason=f"it runs {name}, but {why}" if name else "it runs nothing")
        runners = [c for c in self.candidates if c[1] == "check"]
        fit = [c for c in runners if c[2] & kinds]
        names = tuple(dict.fromkeys(c[0] for c in runners))
        if fit and len(fit) == len(self.candidates):
            return StepCheck("check", frozenset().union(*(c[2] & kinds for c in fit)), names,
                             "it runs " + ", ".join(names))
        if fit:
            other = next(c for c in self.candidates if c not in fit)
            return StepCheck("unknown", reason=f"its exit code {self.exit} may be `{other[0]}`'s rather than "
                                               f"{fit[0][0]}'s")
        unknown = [c for c in self.candidates if c[1] == "unknown"]
        if unknown:
            return StepCheck("unknown", reason=unknown[0][3])
        if runners and len(runners) == len(self.candidates):
            return StepCheck("check", frozenset().union(*(c[2] for c in runners)), names, "it runs " + ", ".join(names))
        if self.hidden:
            name, why = self.hidden[0]
            return StepCheck("no_check", reason=f"it runs {name}, but {why}")
        return StepCheck("no_check", reason=next(c[3] for c in self.candidates if c[1] == "no_check"))


def _aborted_by_output(p: _Prog, output: str | None) -> str | None:
    """The reason a runner's failure shows no failing check, from a line of ``output`` it prints
    when it stops before running anything (:attr:`Runner.aborted_output`); None when there is none."""
    if output is None:
        return None
    for pattern, meaning in p.aborted_output:
        m = re.search(pattern, output, re.M)
        if m:
            line = output[output.rfind("\n", 0, m.start()) + 1:].split("\n", 1)[0].strip()
            return f"`{p.name}` printed `{line[:120]}`: {meaning}, and ran nothing"
    return None


def _failure(seen: _Seen, exit: int, output: str | None = None) -> FailureCheck:
    if seen.problem:
        return FailureCheck(exit, problem=seen.problem)
    proven = [p for p in seen.proven if p.name not in CANNOT_FAIL] or seen.proven  # `set -e; pytest; echo done`
    cands = []
    for p in proven:
        stopped = _aborted_by_output(p, output) if p.verdict == "check" else None
        if p.verdict == "check" and exit in SHELL_EXITS:
            cands.append((p.name, "no_check", _NONE, f"it exited {exit}, {SHELL_EXITS[exit]}: {p.name} did not run"))
        elif p.verdict == "check" and exit in p.aborted:
            cands.append((p.name, "no_check", _NONE, f"`{p.name}` exits {exit} when {p.aborted[exit]}, not when a "
                                                     f"check fails"))
        elif stopped:
            cands.append((p.name, "no_check", _NONE, stopped))
        else:
            cands.append((p.name, p.verdict, p.kinds, p.reason))
    hidden = tuple(dict.fromkeys((p.name, why) for p, why in seen.hidden if p.verdict == "check"))
    reads = any(p.verdict == "check" and p.aborted_output for p in proven)
    return FailureCheck(exit, tuple(cands), hidden, reads_output=reads)


def classify_failure(cmd: str, *, exit: int, argv: list[str] | None = None, shell: str | None = None,
                     pipefail: bool | None = None, output: str | None = None) -> FailureCheck:
    """What a recorded command's non-zero exit ``exit`` shows: whose failure it can be.

    Args:
        cmd, argv, shell, pipefail: as for :func:`classify_command`.
        exit: the step's exit code (not 0).
        output: the step's stored normalized output, when it was stored and hashes to the step's
            ``out_sha``; ``make test`` that printed ``make: *** No rule to make target 'test'.  Stop.``
            ran no test (:attr:`Runner.aborted_output`).  ``None``: not known.

    A failure claim ("the test fails before the fix") is backed only when the failure is a
    runner's: ``false``, ``exit 1``, ``echo "1 failed"; exit 1``, ``! pytest``, ``pytest || false``
    and ``pytest | tee log`` without pipefail fail whatever the tests do, and ``pytest`` exiting 4
    or 5 ran no test (:attr:`Runner.aborted`).  See :meth:`FailureCheck.shows`.  Never raises.
    """
    if argv:
        return _failure(_identify([str(a) for a in argv], _Shell(False, False, "", 0, True)), exit, output)
    if pipefail is None:
        without = _failure(_analyse_failure(cmd, _Shell(False, False, "the log does not record whether the line "
                                                                      "ran with pipefail", 0)), exit, output)
        with_pf = _failure(_analyse_failure(cmd, _Shell(True, False, "", 0)), exit, output)
        if with_pf.candidates != without.candidates:
            return FailureCheck(exit, problem="the log does not record whether the line ran with pipefail, so whose "
                                              "exit code the step's is cannot be told")
        return without
    note = ("`sh` has no pipefail" if shell == "sh" else "the log records that the line ran without pipefail") \
        if not pipefail else ""
    return _failure(_analyse_failure(cmd, _Shell(bool(pipefail) and shell != "sh", False, note, 0)), exit, output)


def classify_failed_step(step: Mapping, output: str | None = None) -> FailureCheck:
    """:func:`classify_failure` of a session-log line (a dict, or a ``LogStep``'s ``raw``), read
    as :func:`classify_step` reads it; ``output`` as for :func:`classify_failure`."""
    argv = step.get("argv")
    exit = int(step.get("exit", 1))
    if isinstance(argv, list) and argv:
        return classify_failure(str(step.get("cmd", "")), exit=exit, argv=[str(a) for a in argv], output=output)
    return classify_failure(str(step.get("cmd", "")), exit=exit, shell=step.get("shell"),
                            pipefail=_logged_pipefail(step), output=output)


# ----- the public answer ------------------------------------------------------------------------


def _verdict(seen: _Seen) -> StepCheck:
    if seen.problem:
        return StepCheck("unknown", reason=seen.problem)
    runners = [p for p in seen.proven if p.verdict == "check"]
    if runners:
        names = tuple(dict.fromkeys(p.name for p in runners))
        narrowed = [p.reason for p in runners if p.reason]  # `go test -c` only compiles
        return StepCheck("check", frozenset().union(*(p.kinds for p in runners)), names,
                         "it runs " + ", ".join(names) + (f" ({'; '.join(narrowed)})" if narrowed else ""),
                         filtered=next((p.filtered for p in runners if p.filtered), ""))
    hidden = [(p, why) for p, why in seen.hidden if p.verdict == "check"]
    unknown = [p for p in seen.proven if p.verdict == "unknown"]
    if unknown:
        return StepCheck("unknown", reason=unknown[0].reason)
    if hidden:
        p, why = hidden[0]
        return StepCheck("no_check", reason=f"it runs {p.name}, but {why}")
    no_check = [p for p in seen.proven if p.verdict == "no_check"]
    if no_check:
        return StepCheck("no_check", reason=no_check[0].reason)
    return StepCheck("no_check", reason="it runs nothing")


def classify_command(cmd: str, *, argv: list[str] | None = None, shell: str | None = None,
                     pipefail: bool | None = None) -> StepCheck:
    """What the recorded command's exit code 0 shows: which checks passed, or why none did.

    Args:
        cmd: the command line as logged.
        argv: the recorded argument list (several arguments, run without a shell); when given,
            ``cmd`` is not parsed as a shell line (its ``|`` would be an argument).
        shell: ``bash`` or ``sh`` for a shell line, as logged; None when not recorded.
        pipefail: ``True``: the line ran with ``pipefail``; ``False``: it did not (the log says
            so); ``None``: the log does not say.  A runner whose exit code a pipe may hide then
            gives ``unknown``.

    Never raises: a line that cannot be read gives ``unknown`` with the reason.
    """
    if argv:
        seen = _identify([str(a) for a in argv], _Shell(False, False, "", 0))
        return _verdict(seen)
    if pipefail is None:
        with_pf = _verdict(_analyse(cmd, _Shell(True, False, "", 0)))
        without = _verdict(_analyse(cmd, _Shell(False, False, "the log does not record whether the line ran "
                                                            "with pipefail", 0)))
        if with_pf.verdict == "check" and without.verdict != "check":
            return StepCheck("unknown", reason=without.reason)
        return without
    note = ("`sh` has no pipefail" if shell == "sh" else "the log records that the line ran without pipefail") \
        if not pipefail else ""
    return _verdict(_analyse(cmd, _Shell(bool(pipefail) and shell != "sh", False, note, 0)))


def classify_step(step: Mapping) -> StepCheck:
    """:func:`classify_command` of a session-log line (a dict, or a ``LogStep``'s ``raw``).

    ``argv`` (not null) means the step ran without a shell.  ``pipefail`` is read as the log
    format says: ``true`` — with it; ``null``, ``false`` or absent on a line that records its
    ``shell`` — without it; absent on a line that records neither (a seed-format log) — not known.
    """
    argv = step.get("argv")
    if isinstance(argv, list) and argv:
        return classify_command(str(step.get("cmd", "")), argv=[str(a) for a in argv])
    return classify_command(str(step.get("cmd", "")), shell=step.get("shell"), pipefail=_logged_pipefail(step))


def _logged_pipefail(step: Mapping) -> bool | None:
    """``pipefail`` as a session-log line records it: ``true`` — with it; ``null``, ``false`` or
    absent on a line that records its ``shell`` — without it; absent on a line that records
    neither (a seed-format log) — not known (``None``)."""
    if step.get("pipefail") is True:
        return True
    if "pipefail" in step or step.get("shell") is not None:
        return False
    return None


# ----- what a passing test runner's output says it ran -------------------------------------------

# pytest's last line: "3 passed, 1 skipped in 0.12s", "no tests ran in 0.01s", "5 tests collected in
# 0.01s", "2/7 tests collected (5 deselected) in 0.01s" (normalized: "in <DUR>"), between "=" rules
_PYTEST_SUMMARY = re.compile(
    r"^=*\s*(?P<body>(?:no tests ran|\d+(?:/\d+)? tests? collected(?: \(\d+ deselected\))?"
    r"|\d+ [a-z]+(?:, \d+ [a-z]+)*))\s+in\s+(?:<DUR>|\d+(?:\.\d+)?s)(?![\w.]).*$", re.M)
_PYTEST_RAN = re.compile(r"\b[1-9]\d* (?:passed|failed|xfailed|xpassed|errors?)\b")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in\b.*$", re.M)
_GO_RESULT = re.compile(r"^(?:ok|\?|FAIL)\s+\S+\s.*$", re.M)
_GO_NOTHING = re.compile(r"\[no tests to run\]|\[no test files\]")
_CARGO_RUNNING = re.compile(r"^running (\d+) tests?$", re.M)
# jest: "Tests:       1 failed, 4 skipped, 5 total"; vitest: "      Tests  1 failed | 4 skipped (5)"
_JS_TESTS = re.compile(r"^(?:Tests:[ \t]+(?P<j>(?:\d+ [a-z]+, )*\d+ total)"
                       r"|[ \t]*Tests[ \t]{2,}(?P<v>\d+ [a-z]+(?: \| \d+ [a-z]+)*) \(\d+\)).*$", re.M)
_JS_RAN = re.compile(r"\b[1-9]\d* (?:passed|failed)\b")


def ran_no_tests(check: StepCheck, output: str | None) -> str | None:
    """Why a passing step's ``output`` shows that its test runner ran no test, naming the line that
    says so; ``None`` when it shows a test ran, or says nothing either way (no summary line of the
    runner, no output).

    Read for ``pytest`` (its last line: ``no tests ran``, ``5 tests collected`` with
    ``--collect-only``, only skipped or deselected tests), ``unittest`` (``Ran 0 tests``), ``go
    test`` (every package ``[no tests to run]`` or ``[no test files]``), ``cargo test`` (every
    ``running 0 tests``), ``jest`` (``Tests: 5 skipped, 5 total``) and ``vitest`` (``Tests  5
    skipped (5)``).  A run of the runners of ``check`` (:attr:`StepCheck.runners`) that is
    told to run nothing by what the command line does not show — ``addopts`` in ``pyproject.toml``
    or ``pytest.ini``, a variable exported before the recording (``PYTEST_ADDOPTS``), a name filter
    that matches no test — exits 0 and says so there.  ``output`` is the step's stored output,
    normalized or raw.
    """
    lines, ran, causes = _test_summary(check, output)
    if not lines or ran:
        return None
    return (f"its output shows it ran no test (`{lines[-1]}`; {' or '.join(causes)} can make it run none and "
            f"exit 0)")


def test_summary_lines(check: StepCheck, output: str | None) -> list[str]:
    """The summary lines of the test runners of ``check`` in a step's ``output`` (``2 passed in
    0.12s``, ``ok  example.com/p  0.01s``), each telling whether tests ran, in output order; empty
    when it holds none this module reads (:func:`ran_no_tests`) or ``check`` runs no test."""
    return _test_summary(check, output)[0]


def _test_summary(check: StepCheck, output: str | None) -> tuple[list[str], bool, list[str]]:
    """(the runners' summary lines, whether one shows a test ran, what can make them run none)."""
    if not output or check.verdict != "check" or TEST not in check.kinds:
        return [], False, []
    names = set(check.runners)
    lines: list[str] = []  # the runners' result lines, each saying whether tests ran
    causes: list[str] = []
    ran = False
    if names & {"pytest", "py.test"}:
        for m in _PYTEST_SUMMARY.finditer(output):
            lines.append(m.group(0).strip("= \t"))
            ran |= bool(_PYTEST_RAN.search(m.group("body")))
        causes.append("an `addopts` in pyproject.toml, pytest.ini, tox.ini or setup.cfg, PYTEST_ADDOPTS exported "
                      "before the recording, or a conftest.py that skips every test")
    if "unittest" in names:
        for m in _UNITTEST_RAN.finditer(output):
            lines.append(m.group(0).strip())
            ran |= m.group(1) != "0"
        causes.append("a `-k` pattern or a discovery pattern that matches no test")
    if "go test" in names:
        for m in _GO_RESULT.finditer(output):
            lines.append(re.sub(r"\s+", " ", m.group(0).strip()))
            ran |= not _GO_NOTHING.search(m.group(0))
        causes.append("a `-run` pattern that matches no test's name, or GOFLAGS exported before the recording")
    if names & {"cargo test", "cargo nextest run", "cargo miri test"}:
        for m in _CARGO_RUNNING.finditer(output):
            lines.append(m.group(0).strip())
            ran |= m.group(1) != "0"
        causes.append("a name filter that matches no test")
    if names & {"jest", "vitest"}:
        for m in _JS_TESTS.finditer(output):
            lines.append(re.sub(r"\s+", " ", m.group(0).strip()))
            ran |= bool(_JS_RAN.search(m.group("j") or m.group("v")))
        causes.append("a `-t` pattern that matches no test's name, or a configuration that skips every test")
    return lines, ran, causes
