"""The runner registry: which recorded commands run tests, a build, a lint or a type check."""

from __future__ import annotations

import random
import shlex

import pytest

from replaybook.packet.runners import (BUILD, CANNOT_FAIL, KINDS, LINT, NON_CHECKS, PIPE_FILTERS, RUNNERS, SHELL_EXITS,
                                       TASK_RUNNERS, TEST, TYPECHECK, WRAPPERS, StepCheck, classify_command,
                                       classify_failed_step, classify_failure, classify_step, task_kinds)


@pytest.mark.parametrize("cmd,kind,runner", [
    ("pytest -q tests/test_router.py", TEST, "pytest"),
    ("py.test", TEST, "py.test"),
    ("python -m pytest -x", TEST, "pytest"),
    ("python3.11 -X dev -m pytest", TEST, "pytest"),
    (".venv/bin/pytest -q", TEST, "pytest"),
    ("python -m unittest discover -s tests", TEST, "unittest"),
    ("tox", TEST, "tox"),
    ("tox -e py311", TEST, "tox -e py311"),
    ("tox run -e lint", LINT, "tox -e lint"),
    ("nox -s tests", TEST, "nox -s tests"),
    ("npm test", TEST, "npm test"),
    ("pnpm test", TEST, "pnpm test"),
    ("yarn test", TEST, "yarn test"),
    ("npm run test:unit", TEST, "npm run test:unit"),
    ("npm --prefix web run test", TEST, "npm run test"),
    ("yarn run test", TEST, "yarn test"),
    ("jest --ci", TEST, "jest"),
    ("vitest run", TEST, "vitest"),
    ("mocha test/", TEST, "mocha"),
    ("node_modules/.bin/jest", TEST, "jest"),
    ("go test ./...", TEST, "go test"),
    ("cargo test --workspace", TEST, "cargo test"),
    ("cargo +nightly nextest run", TEST, "cargo test"),
    ("mvn -q test", TEST, "mvn test"),
    ("mvn clean verify", TEST, "mvn clean verify"),
    ("./mvnw -pl core verify", TEST, "mvnw verify"),
    ("gradle test", TEST, "gradle test"),
    ("./gradlew check", TEST, "gradlew check"),
    ("./gradlew :app:testDebugUnitTest", TEST, "gradlew :app:testDebugUnitTest"),
    ("./gradlew app:build", TEST, "gradlew app:build"),
    ("mvn surefire:test", TEST, "mvn surefire:test"),
    ("make test", TEST, "make test"),
    ("make -C build -j 4 check", TEST, "make check"),
    ("ctest --output-on-failure", TEST, "ctest"),
    ("rspec spec/models", TEST, "rspec"),
    ("bundle exec rspec", TEST, "rspec"),
    ("bundle exec rake test", TEST, "rake test"),
    ("phpunit", TEST, "phpunit"),
    ("vendor/bin/phpunit --testsuite unit", TEST, "phpunit"),
    ("dotnet test", TEST, "dotnet test"),
    ("mix test", TEST, "mix test"),
    ("bazel test //...", TEST, "bazel test"),
    ("python manage.py test", TEST, "manage.py test"),
    ("ruff check src", LINT, "ruff check"),
    ("npm run lint", LINT, "npm run lint"),
    ("pre-commit run --all-files", LINT, "pre-commit run"),
    ("cargo clippy -- -D warnings", LINT, "cargo clippy"),
    ("black --check .", LINT, "black --check"),
    ("mypy src", TYPECHECK, "mypy"),
    ("npx tsc --noEmit", TYPECHECK, "tsc"),
    ("make", BUILD, "make"),
    ("cargo build --release", BUILD, "cargo build"),
    ("npm run build", BUILD, "npm run build"),
    ("python -m build", BUILD, "python -m build"),
    ("mvn -DskipTests package", BUILD, "mvn package"),
])
def test_recognised_runners(cmd: str, kind: str, runner: str):
    check = classify_command(cmd)
    assert check.verdict == "check", check
    assert kind in check.kinds and check.runners == (runner,)


@pytest.mark.parametrize("cmd,reason", [
    ('echo "1 passed"', "`echo` only prints"),
    ("printf '1 passed'", "`printf` only prints"),
    ("printf '%s\\n' '===== 12 passed in 0.5s ====='", "`printf` only prints"),
    ("true", "`true` does nothing"),
    (":", "`:` does nothing"),
    ("cat old-output.txt", "`cat` only reads"),
    ("ls -la", "`ls` only reads"),
    ("tail -n 3 .pytest-output.log", "`tail` only reads"),
    ("test -f tests/test_router.py", "`test` only tests a condition (the shell's `test`, not a test runner)"),
    ("echo pytest", "`echo` only prints"),
    ("env", "`env` only prints the environment"),
    ("pytest --collect-only -q", "`pytest --collect-only` only lists tests or fixtures, running none"),
    ("python -m pytest --co", "`pytest --co` only lists tests or fixtures, running none"),
    ("pytest --version", "`pytest --version` only prints its version"),
    ("npm run", "`npm run` only lists the scripts"),
    ("make -n test", "`make -n` only prints what it would run"),
    ("tox list", "`tox list` only lists the environments"),
    ("go test -list . ./...", "`go test -list` only lists the tests"),
])
def test_commands_that_only_print_or_read_run_no_check(cmd: str, reason: str):
    assert classify_command(cmd) == StepCheck("no_check", reason=reason)


@pytest.mark.parametrize("cmd", [
    "env X=1 pytest",
    "env -u HOME CI=1 python -m pytest",
    "timeout 600 pytest -q",
    "timeout -k 5 --signal=TERM 60 pytest",
    "uv run pytest",
    "uv run --with pytest-xdist pytest -n 4",
    "uv run -- python -m pytest",
    "poetry run pytest",
    "pdm run pytest",
    "npx jest",
    "npx --yes vitest run",
    "bash -c 'pytest -q'",
    "bash -lc \"cd tests && pytest\"",
    "sh -c 'timeout 60 uv run pytest'",
    "cd sub && pytest",
    "cd sub; pytest",
    "FOO=1 BAR='a b' pytest",
    "nice -n 5 pytest",
    "time pytest",
    "coverage run -m pytest",
    "python -m coverage run --source src -m pytest",
    "pytest > log.txt 2>&1",
    "pytest -q 2>/dev/null",
    "{ pytest; }",
    "(cd sub && pytest)",
    "pytest && echo done",
    "set -o pipefail; pytest | tee log",
    "set -e; pytest; echo done",
    "bash -o pipefail -c 'pytest | tee log'",
    "bash -euo pipefail -c 'pytest | tee log'",
    "echo start # a comment; then\npytest",
])
def test_wrappers_and_shell_syntax_are_seen_through(cmd: str):
    check = classify_command(cmd, pipefail=False)
    assert check.verdict == "check" and check.kinds == frozenset({TEST}), check


@pytest.mark.parametrize("cmd,reason", [
    ("pytest; echo done", "it runs pytest, but the step's exit code is that of `echo`, which runs after it"),
    ("pytest || true", "it runs pytest, but `||` lets the step exit 0 when it fails"),
    ("pytest || echo failed", "it runs pytest, but `||` lets the step exit 0 when it fails"),
    ("! pytest", "it runs pytest, but `!` inverts its exit code"),
    ("pytest &", "it runs pytest, but it runs in the background (`&`), so the step's exit code is not its"),
    ("set -e; pytest || true", "it runs pytest, but `||` lets the step exit 0 when it fails"),
])
def test_a_runner_whose_exit_code_the_line_hides_shows_nothing(cmd: str, reason: str):
    assert classify_command(cmd, pipefail=True) == StepCheck("no_check", reason=reason)


def test_a_pipe_shows_the_runner_passed_only_with_pipefail():
    cmd = "pytest -q | tee pytest.log"
    assert classify_command(cmd, shell="bash", pipefail=True).verdict == "check"
    assert classify_command(cmd, shell="bash", pipefail=False) == StepCheck("no_check", reason=(
        "it runs pytest, but its exit code is lost in the pipe: the step's exit code is `tee`'s (the log records "
        "that the line ran without pipefail)"))
    assert classify_command(cmd, shell="sh", pipefail=False).reason.endswith("(`sh` has no pipefail)")
    # a seed-format log does not say: the linter cannot tell
    assert classify_command(cmd) == StepCheck("unknown", reason=(
        "it runs pytest, but its exit code is lost in the pipe: the step's exit code is `tee`'s (the log does "
        "not record whether the line ran with pipefail)"))
    assert classify_command("sh -c 'pytest | tail -3'", pipefail=True).reason.endswith("(`sh` has no pipefail)")
    assert classify_command("bash -c 'pytest | tail -3'", pipefail=True).reason.endswith(
        "(`bash -c` without `-o pipefail`)")
    # the runner last in the pipe decides the exit code whatever pipefail says
    assert classify_command("cat files.txt | xargs pytest").verdict == "check"


@pytest.mark.parametrize("cmd,verdict", [
    ("pytest -q 2>&1 | tee out.txt; exit ${PIPESTATUS[0]}", "check"),
    ('pytest | tee out.txt; [ "${PIPESTATUS[0]}" -eq 0 ]', "check"),
    ("pytest; exit $?", "check"),
    ("pytest | tee out.txt; exit ${PIPESTATUS[1]}", "no_check"),  # tee's
    ("pytest | tee out.txt; exit ${PIPESTATUS[7]}", "no_check"),  # no such part: the step's exit code is exit's
    ("pytest || true; exit $?", "no_check"),
])
def test_a_status_passed_on_by_exit_or_test_decides(cmd: str, verdict: str):
    assert classify_command(cmd, shell="bash", pipefail=False).verdict == verdict


def test_classify_step_reads_pipefail_as_the_log_format_says():
    line = {"seq": 1, "cmd": "pytest | tee log", "exit": 0}
    assert classify_step({**line, "shell": "bash", "pipefail": True}).verdict == "check"
    assert classify_step({**line, "shell": "bash", "pipefail": None}).verdict == "no_check"
    assert classify_step({**line, "shell": "bash"}).verdict == "no_check"  # recorded before the field: without
    assert classify_step(line).verdict == "unknown"  # seed format: not known
    # several arguments ran without a shell: a quoted | is an argument, not a pipe
    argv = {"seq": 2, "cmd": "pytest '|' tee", "exit": 0, "argv": ["pytest", "|", "tee"], "shell": None}
    assert classify_step(argv).runners == ("pytest",)
    assert classify_step({"seq": 3, "cmd": "echo hi", "exit": 0, "argv": ["echo", "hi"]}).verdict == "no_check"


@pytest.mark.parametrize("cmd,reason", [
    ('pytest -k "unclosed', "the command line cannot be parsed (no closing double quote)"),
    ("bash -c 'pytest", "the command line cannot be parsed (no closing single quote)"),
    ("echo $(pytest", "the command line cannot be parsed (no closing `)`)"),
    ("cat <<EOF\n1 passed\nEOF", "the command line cannot be parsed (a here-document)"),
    ("pytest \\", "the command line cannot be parsed (No escaped character)"),
    ("&& pytest", "the command line cannot be parsed (`&&` with no command before it)"),
    ("if pytest; then echo ok; fi", "the line uses the shell's `if`, which the linter does not follow"),
    ("./run_tests.sh", "`./run_tests.sh` is no test, build, lint or type-check runner the linter knows"),
    ("./pytest -q", "`./pytest` is a file in the checkout, not the installed `pytest`"),
    ("python -c 'import pytest; pytest.main()'", "`python -c` runs inline code, which the linter does not read"),
    ("bash run_tests.sh", "`bash run_tests.sh` runs a script, which the linter does not read"),
    ("make demo", "the linter does not know what `make demo` runs: the task's name says nothing about tests, a "
                  "build, a lint or a type check"),
    ("timeout 60", "`timeout` is given no command to run"),
])
def test_what_cannot_be_told_is_unknown(cmd: str, reason: str):
    assert classify_command(cmd, pipefail=True) == StepCheck("unknown", reason=reason)


def test_any_command_line_gives_an_answer_and_never_raises():
    rng = random.Random(20240501)
    alphabet = list("abc pytest echo'\"\\|&;()<>{}$`#!\n=-") + ["bash -c ", "&&", "||", "$(", "<<", "2>&1", " -o "]
    for _ in range(3000):
        cmd = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        for pipefail in (None, True, False):
            check = classify_command(cmd, pipefail=pipefail)
            assert check.verdict in ("check", "no_check", "unknown")
            assert check.verdict == "check" or check.reason


def test_nested_shells_and_wrappers_stop_at_a_depth():
    deep = "pytest"
    for _ in range(12):
        deep = "bash -c " + shlex.quote(deep)
    assert classify_command(deep) == StepCheck("unknown", reason="shells nest too deep to follow")
    assert classify_command("env " * 60 + "pytest") == StepCheck("unknown", reason="wrappers nest too deep to follow")


@pytest.mark.parametrize("name,kinds", [
    ("test", {TEST}), ("test:unit", {TEST}), ("tests", {TEST}), ("py311", {TEST}), ("testDebugUnitTest", {TEST}),
    ("lint", {LINT}), ("format:check", {LINT}), ("check-format", {LINT}), ("ktlintCheck", {LINT}),
    ("type-check", {TYPECHECK}), ("typecheck", {TYPECHECK}), ("mypy", {TYPECHECK}),
    ("build", {BUILD}), ("compileJava", {BUILD}),
    ("check", set(KINDS)), ("ci", set(KINDS)),
    ("format", set()), ("lint:fix", set()), ("demo", set()), ("start", set()),
])
def test_task_names(name: str, kinds: set[str]):
    assert task_kinds(name) == frozenset(kinds)


def test_the_registry_is_consistent():
    """Every entry says what it shows, with known kinds; programs are plain names."""
    for r in RUNNERS:
        assert r.kinds and r.kinds <= KINDS, r
        assert r.programs and all("/" not in p and " " not in p for p in r.programs), r
        for left, what in r.limits.values():
            assert left <= r.kinds and what, r
    for t in TASK_RUNNERS:
        assert t.default is None or t.default <= KINDS, t
        assert all(k <= KINDS for k in t.tasks.values()), t
    for w in WRAPPERS:
        assert w.programs and w.positional >= 0, w
    assert all(reason for reason in NON_CHECKS.values())
    # a program is either a runner, a wrapper or a non-check — never two of them unless by subcommand
    plain_wrappers = {p for w in WRAPPERS if not w.sub for p in w.programs}
    assert not plain_wrappers & set(NON_CHECKS)


# ----- whose failure a non-zero exit is ---------------------------------------------------------

TESTS = frozenset({TEST})


@pytest.mark.parametrize("cmd,exit,pipefail,runners", [
    ("pytest -q", 1, True, ("pytest",)),
    ("python -m pytest -x tests/test_router.py", 1, True, ("pytest",)),
    ("npm test", 1, True, ("npm test",)),
    ("go test ./...", 1, True, ("go test",)),
    ("timeout 600 uv run pytest", 1, True, ("pytest",)),
    ("bash -c 'cd tests; pytest -q'", 1, True, ("pytest",)),
    ("set -e; pytest -q; echo done", 1, True, ("pytest",)),
    ("pytest -q | tail -3", 1, True, ("pytest",)),
    ("pytest -q | tee log | tail -1", 1, True, ("pytest",)),
    ("pytest | tee log; exit ${PIPESTATUS[0]}", 1, False, ("pytest",)),
    ("pytest -q; exit $?", 1, False, ("pytest",)),
    ("tox -e py312 || tox -e py311", 1, True, ("tox -e py311",)),
])
def test_a_failure_that_is_a_test_runners(cmd: str, exit: int, pipefail: bool, runners: tuple[str, ...]):
    check = classify_failure(cmd, exit=exit, shell="bash", pipefail=pipefail).shows(TESTS)
    assert (check.verdict, check.kinds, check.runners) == ("check", TESTS, runners)


@pytest.mark.parametrize("cmd,exit,pipefail,verdict,reason", [
    ("false", 1, True, "no_check", "`false` only fails"),
    ("exit 3", 3, True, "no_check", "`exit` only exits with the code it is given"),
    ("pytest -q && false", 1, True, "unknown", "its exit code 1 may be `false`'s rather than pytest's"),
    ("! pytest -q", 1, True, "no_check", "it runs pytest, but `!` inverts the exit code: the step failed because "
                                         "pytest passed"),
    ("pytest -q & wait", 1, True, "no_check", "it runs pytest, but it runs in the background (`&`), so the step's "
                                              "exit code is not its"),
    ("pytest -q | tee log", 1, False, "no_check", "it runs pytest, but its exit code is lost in the pipe: the "
                                                  "step's exit code is `tee`'s (the log records that the line ran "
                                                  "without pipefail)"),
    ("pytest -q", 2, True, "no_check", "`pytest` exits 2 when it was interrupted before any test ran (an error "
                                       "while collecting the tests, such as an import error, or Ctrl-C), not when "
                                       "a check fails"),
    ("pytest -q tests/test_new.py", 4, True, "no_check", "`pytest` exits 4 when it is given a test path or an "
                                                         "option it cannot find, not when a check fails"),
    ("python -m unittest", 5, True, "no_check", "`unittest` exits 5 when it runs no tests, not when a check fails"),
    ("pytset -q", 127, True, "unknown", "`pytset` is no test, build, lint or type-check runner the linter knows"),
    ("pytest -q", 127, True, "no_check", "it exited 127, the shell's 'command not found': pytest did not run"),
    ("cd tests && pytest", 1, True, "unknown", "its exit code 1 may be `cd`'s rather than pytest's"),
    ("pytest | grep -q FAILED", 1, True, "unknown", "its exit code 1 may be `grep`'s rather than pytest's"),
    ("cat in.txt | pytest", 1, True, "unknown", "its exit code 1 may be `cat`'s rather than pytest's"),
    ("pytest | tee log", 1, None, "unknown", "the log does not record whether the line ran with pipefail, so whose "
                                             "exit code the step's is cannot be told"),
    ("if pytest; then exit 1; fi", 1, True, "unknown", "the line uses the shell's `if`, which the linter does not "
                                                       "follow"),
    ("ruff check . && mypy src", 1, True, "check", "it runs ruff check, mypy"),
])
def test_a_failure_that_is_no_test_runners(cmd: str, exit: int, pipefail: bool | None, verdict: str, reason: str):
    check = classify_failure(cmd, exit=exit, shell=None if pipefail is None else "bash",
                             pipefail=pipefail).shows(TESTS)
    assert (check.verdict, check.reason) == (verdict, reason)
    if verdict == "check":
        assert not check.kinds & TESTS  # runners of other kinds: the failure shows no test failing


def test_a_failure_of_one_kind_among_runners_of_two_is_told_apart():
    failure = classify_failure("ruff check . && pytest", exit=1, shell="bash", pipefail=True)
    assert failure.shows(TESTS).verdict == "unknown"
    assert failure.shows(frozenset({TEST, LINT})).verdict == "check"
    assert failure.shows(KINDS).runners == ("ruff check", "pytest")


def test_classify_failed_step_reads_the_log_line():
    line = {"seq": 3, "cmd": "pytest -q | tee log", "exit": 1, "argv": None, "shell": "bash", "pipefail": True}
    assert classify_failed_step(line).shows(TESTS).verdict == "check"
    assert classify_failed_step({**line, "pipefail": None}).shows(TESTS).verdict == "no_check"
    line = {"seq": 3, "cmd": "pytest '!' x", "exit": 1, "argv": ["pytest", "!", "x"], "shell": None}
    assert classify_failed_step(line).shows(TESTS).runners == ("pytest",)  # no shell: `!` is an argument
    assert classify_failed_step({"seq": 1, "cmd": "pytest -q", "exit": 5}).shows(TESTS).verdict == "no_check"


def test_any_failing_command_line_gives_an_answer_and_never_raises():
    rng = random.Random(20240502)
    alphabet = list("abc pytest echo'\"\\|&;()<>{}$`#!\n=-") + ["bash -c ", "&&", "||", "$(", "<<", "2>&1", " -o "]
    for _ in range(2000):
        cmd = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        for pipefail in (None, True, False):
            check = classify_failure(cmd, exit=rng.choice((1, 2, 5, 127)), pipefail=pipefail).shows(KINDS)
            assert check.verdict in ("check", "no_check", "unknown")
            assert check.reason


def test_the_failure_registry_is_consistent():
    for r in RUNNERS:
        assert all(code not in (0, *SHELL_EXITS) and what for code, what in r.aborted.items()), r
    assert not CANNOT_FAIL & {p for r in RUNNERS for p in r.programs}
    assert PIPE_FILTERS <= set(NON_CHECKS) and "grep" not in PIPE_FILTERS


# ----- arguments that make a runner's exit code prove nothing; output that shows it ran nothing -----

@pytest.mark.parametrize("cmd,reason", [
    ("ruff check --exit-zero .", "`ruff check --exit-zero` exits 0 whatever it finds"),
    ("ruff check -e src", "`ruff check -e` exits 0 whatever it finds"),
    ("ruff check --fix-only .", "`ruff check --fix-only` fixes what it can and exits 0 whatever is left"),
    ("flake8 --exit-zero src", "`flake8 --exit-zero` exits 0 whatever it finds"),
    ("pylint --exit-zero pkg", "`pylint --exit-zero` exits 0 whatever it finds"),
    ("bandit -r src --exit-zero", "`bandit --exit-zero` exits 0 whatever it finds"),
    ("golangci-lint run --issues-exit-code=0 ./...",
     "`golangci-lint run --issues-exit-code=0` exits 0 whatever issues it finds"),
    ("golangci-lint run --issues-exit-code 0 ./...",
     "`golangci-lint run --issues-exit-code=0` exits 0 whatever issues it finds"),
])
def test_a_flag_that_makes_the_exit_code_zero_proves_no_lint(cmd: str, reason: str):
    assert classify_command(cmd, pipefail=True) == StepCheck("no_check", reason=reason)


def test_eslint_max_warnings_and_plain_lints_still_prove_a_lint():
    for cmd in ("eslint --max-warnings 0 .", "ruff check .", "flake8 src", "mypy --strict src",
                "golangci-lint run --issues-exit-code=3 ./...", "golangci-lint run --issues-exit-code 1"):
        assert classify_command(cmd, pipefail=True).verdict == "check", cmd


MAKE_NO_TARGET = "make: *** No rule to make target 'test'.  Stop.\n"


@pytest.mark.parametrize("cmd,exit,output,reason", [
    ("make test", 2, MAKE_NO_TARGET,
     "`make test` printed `make: *** No rule to make target 'test'.  Stop.`: it has no rule to make the target, "
     "and ran nothing"),
    ("make check", 2, "make: *** No targets specified and no makefile found.  Stop.\n",
     "`make check` printed `make: *** No targets specified and no makefile found.  Stop.`: it finds no makefile, "
     "and ran nothing"),
    ("npm test", 1, 'npm ERR! Missing script: "test"\nnpm ERR!\nnpm ERR! To see a list of scripts, run:\n',
     '`npm test` printed `npm ERR! Missing script: "test"`: the project has no such script, and ran nothing'),
    ("npm run test:unit", 1, 'npm error Missing script: "test:unit"\n',
     '`npm run test:unit` printed `npm error Missing script: "test:unit"`: the project has no such script, '
     'and ran nothing'),
    ("npm test", 254, "npm ERR! code ENOENT\nnpm ERR! enoent Could not read package.json: Error: ENOENT\n",
     "`npm test` printed `npm ERR! enoent Could not read package.json: Error: ENOENT`: it finds no package.json, "
     "and ran nothing"),
])
def test_make_or_npm_that_found_nothing_to_run_shows_no_failing_test(cmd: str, exit: int, output: str, reason: str):
    check = classify_failure(cmd, exit=exit, pipefail=True, output=output).shows(frozenset({TEST}))
    assert check == StepCheck("no_check", reason=reason)
    # without the output, make's exit 2 (also its code for a failing recipe) is taken for the tests'
    failure = classify_failure(cmd, exit=exit, pipefail=True)
    assert failure.reads_output and failure.shows(frozenset({TEST})).verdict == "check"


def test_a_recipes_own_make_failing_or_a_failing_test_run_is_still_a_failing_test():
    for output in ("make[1]: *** No rule to make target 'fixtures'.  Stop.\nmake: *** [Makefile:3: test] Error 2\n",
                   "FAILED tests/test_x.py::test_a\nmake: *** [Makefile:2: test] Error 1\n"):
        check = classify_failure("make test", exit=2, pipefail=True, output=output).shows(frozenset({TEST}))
        assert check.verdict == "check" and check.runners == ("make test",), output
    assert not classify_failure("pytest -q", exit=1, pipefail=True).reads_output
    step = {"seq": 4, "cmd": "make test", "exit": 2, "argv": ["make", "test"], "shell": None}
    assert classify_failed_step(step, output=MAKE_NO_TARGET).shows(frozenset({TEST})).verdict == "no_check"


# ----- arguments that make a test runner run no test and exit 0 ---------------------------------

#: Commands that run no test yet exit 0 (checked against the real pytest below), with the reason.
RUN_NO_TEST = [
    ("pytest -h", "`pytest -h` only prints its help"),
    ("pytest -V", "`pytest -V` only prints its version"),
    ("pytest -qh", "`pytest -h` only prints its help"),
    ("pytest -q --setup-only", "`pytest --setup-only` only sets up and tears down fixtures, running no test"),
    ("pytest -q --setuponly", "`pytest --setuponly` only sets up and tears down fixtures, running no test"),
    ("pytest -q --setupplan", "`pytest --setupplan` only lists tests or fixtures, running none"),
    ("pytest -q --collectonly", "`pytest --collectonly` only lists tests or fixtures, running none"),
    ("pytest -q --cache-show", "`pytest --cache-show` only shows the cache's content"),
    ("pytest -q -- --co", "`pytest -- --co` only lists tests or fixtures, running none"),
    ("PYTEST_ADDOPTS=--collect-only pytest -q",
     "`pytest --collect-only` only lists tests or fixtures, running none (set by `PYTEST_ADDOPTS`)"),
    ("env PYTEST_ADDOPTS=--co pytest",
     "`pytest --co` only lists tests or fixtures, running none (set by `PYTEST_ADDOPTS`)"),
    ("export PYTEST_ADDOPTS=-h; pytest -q", "`pytest -h` only prints its help (set by `PYTEST_ADDOPTS`)"),
    ("PYTEST_ADDOPTS='-q --co' bash -c 'pytest'",
     "`pytest --co` only lists tests or fixtures, running none (set by `PYTEST_ADDOPTS`)"),
    ("pytest -q -o addopts=--co", "`pytest --co` only lists tests or fixtures, running none (set by `addopts`)"),
    ("pytest --override-ini=addopts=--setup-plan",
     "`pytest --setup-plan` only lists tests or fixtures, running none (set by `addopts`)"),
]


@pytest.mark.parametrize("cmd,reason", [
    *RUN_NO_TEST,
    ("cargo test -- --list", "`cargo test -- --list` only lists the tests"),
    ("cargo test -q -- --help", "`cargo test -- --help` only prints its help"),
    ("cargo test -h", "`cargo test -h` only prints its help"),
    ("jest --showConfig", "`jest --showConfig` only prints its configuration"),
    ("npx jest -t '^$'", "`jest -t '^$'` runs no test: the pattern matches no test's name"),
    ("mypy -V", "`mypy -V` only prints its version"),
])
def test_arguments_that_make_a_runner_run_no_test_prove_none(cmd: str, reason: str):
    assert classify_command(cmd, pipefail=False) == StepCheck("no_check", reason=reason)
    assert classify_failure(cmd, exit=1, pipefail=False).shows(frozenset({TEST})).verdict == "no_check"


@pytest.mark.parametrize("cmd,pattern", [
    ("go test -run '^$' ./...", "-run '^$'"),
    ("go test -run=^$ -bench . ./...", "-run '^$'"),
    ("go test -test.run '^NONE$' ./...", "-test.run '^NONE$'"),
    ("go test -run '^$/sub' ./...", "-run '^$/sub'"),
    ("GOFLAGS=-run=^$ go test ./...", "-run '^$'"),
    ("go test -skip . ./...", "-skip ."),
])
def test_go_test_with_a_pattern_that_selects_no_test_only_builds(cmd: str, pattern: str):
    check = classify_command(cmd, pipefail=False)
    assert check.verdict == "check" and check.kinds == frozenset({BUILD}), check
    assert f"`go test {pattern}` runs no test" in check.reason


@pytest.mark.parametrize("cmd", [
    "pytest -rah", "pytest -k foo", "pytest -x -s -vv", "pytest -o xfail_strict=true", "pytest -- tests/",
    "PYTEST_ADDOPTS=-x pytest", "env -u PYTEST_ADDOPTS pytest", "PYTEST_ADDOPTS=--co env -i pytest",
    "export PYTEST_ADDOPTS=--co; unset PYTEST_ADDOPTS; pytest",
    "PYTEST_ADDOPTS=--co; echo hi && cd tests && env -i pytest",
    "go test -run TestFoo ./...", "go test -run '^TestFoo$' ./...", "go test -run '^T' ./...",
    "go test -skip TestFoo ./...",
    "go test -skip 'Foo$' ./...", "go test -skip '.*/integration' ./...", "go test -skip './slow' ./...",
    "cargo test -- --nocapture", "cargo test -- --test-threads 1", "npx jest -t parser",
    "ctest -V",
])
def test_arguments_that_still_run_tests_are_not_taken_for_none(cmd: str):
    check = classify_command(cmd, pipefail=False)
    assert check.verdict == "check" and TEST in check.kinds, check


def test_javac_h_writes_headers_and_still_builds():
    check = classify_command("javac -h build/headers Foo.java")
    assert check.verdict == "check" and check.kinds == frozenset({BUILD})


def test_jest_pass_with_no_tests_cannot_show_that_tests_ran_but_its_failure_is_a_test_failure():
    check = classify_command("npx jest --passWithNoTests", pipefail=False)
    assert check == StepCheck("unknown", reason="`jest --passWithNoTests` exits 0 also when it finds no test, so its "
                                                "exit code does not show that any ran")
    failed = classify_failure("npx jest --passWithNoTests", exit=1, pipefail=False).shows(frozenset({TEST}))
    assert failed.verdict == "check" and failed.runners == ("jest",)


def test_the_pytest_arguments_taken_for_no_test_run_none_with_the_real_pytest(tmp_path):
    """Each pytest line of RUN_NO_TEST exits 0 on a repository whose only test fails."""
    import os
    import subprocess
    import sys

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_x.py").write_text("def test_x():\n    assert False\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "pytest"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m pytest "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    ran = subprocess.run(["bash", "-c", "pytest -q"], cwd=repo, env=env, capture_output=True, text=True)
    assert ran.returncode == 1, ran.stdout  # the test fails when it runs
    for cmd, _reason in RUN_NO_TEST:
        ran = subprocess.run(["bash", "-c", cmd], cwd=repo, env=env, capture_output=True, text=True)
        assert ran.returncode == 0 and "1 failed" not in ran.stdout, (cmd, ran.stdout[-500:], ran.stderr[-500:])
