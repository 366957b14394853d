"""gh/testlog.py: the failing tests or command a test runner's own output names, for each
runner a user's CI is likely to run, and never more than it can show."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cursor_agent_action.gh.testlog import (
    MAX_FAILURES,
    Failing,
    FailureFinder,
    describe,
    failures_in,
)

CASES = [
    ("pytest", "tests/test_calc.py .F.  [100%]\n"
     "FAILED tests/test_calc.py::test_add - assert -1 == 3\n"
     "FAILED tests/test_calc.py::test_sub[1-2] - x\n",
     ["tests/test_calc.py::test_add", "tests/test_calc.py::test_sub[1-2]"]),
    ("pytest", "tests/test_calc.py::test_add FAILED    [ 50%]\n"
     "FAILED tests/test_calc.py::test_add - assert -1 == 3\n", ["tests/test_calc.py::test_add"]),
    ("pytest", "ERROR tests/test_io.py - ModuleNotFoundError: No module named 'x'\n",
     ["tests/test_io.py"]),
    ("unittest", "FAIL: test_add (tests.test_calc.TestCalc.test_add)\n",
     ["test_add (tests.test_calc.TestCalc.test_add)"]),
    ("go test", "=== RUN   TestAdd\n--- FAIL: TestAdd (0.00s)\n    calc_test.go:8: got -1\n"
     "FAIL\nFAIL\tgithub.com/u/calc\t0.002s\n", ["TestAdd"]),
    ("go test", "FAIL\tgithub.com/u/calc [build failed]\n", ["package github.com/u/calc"]),
    ("cargo test", "running 2 tests\ntest tests::sub ... ok\ntest tests::add ... FAILED\n"
     "error: test failed, to rerun pass `--lib`\n", ["tests::add"]),
    ("jest", " FAIL  src/calc.test.js\n  ● calc \u203a adds two numbers\n\n    expect(received)\n"
     "  ● Console\n", ["src/calc.test.js", "calc \u203a adds two numbers"]),
    ("rspec", "rspec ./spec/calc_spec.rb:4 # Calc adds\n", ["./spec/calc_spec.rb:4"]),
    ("npm", "npm error code 1\nnpm error command failed\nnpm error command sh -c jest --ci\n",
     ["jest --ci"]),
    ("make", "make: *** [Makefile:12: check] Error 2\n", ["check"]),
]


@pytest.mark.parametrize(("runner", "log", "names"), CASES, ids=[c[0] for c in CASES])
def test_each_runner_names_its_failures(runner: str, log: str, names: list[str]) -> None:
    found = failures_in(log)
    assert [f.name for f in found] == names
    assert found[0].runner == runner


def test_tests_come_before_the_command_that_ran_them() -> None:
    log = ("> calc@1.0.0 test\n> jest\n FAIL src/a.test.ts\n"
           "npm ERR! command sh -c jest\n")
    found = failures_in(log)
    assert found == [Failing("jest", "src/a.test.ts"), Failing("npm", "jest")]
    assert describe(found) == "jest: src/a.test.ts (and 1 more)"


def test_a_log_of_passing_tests_names_nothing() -> None:
    log = ("collected 3 items\ntests/test_calc.py ...  [100%]\n3 passed in 0.01s\nok  \t"
           "github.com/u/calc\t0.002s\ntest tests::add ... ok\n PASS  src/a.test.js\n")
    assert failures_in(log) == []
    assert describe([]) == ""


def test_past_the_limit_failures_are_counted_not_kept() -> None:
    finder = FailureFinder()
    for n in range(MAX_FAILURES + 7):
        finder.feed(f"FAILED tests/test_x.py::test_{n} - boom")
    assert len(finder.failures) == MAX_FAILURES
    assert finder.more == 7
    assert describe(finder.failures, finder.more).endswith(f"(and {MAX_FAILURES + 4} more)")


@given(st.lists(st.text(max_size=400), max_size=60))
def test_any_lines_are_read_without_error_and_within_bounds(lines: list[str]) -> None:
    finder = FailureFinder()
    for line in lines:
        finder.feed(line)
    failures = finder.failures
    assert len([f for f in failures if not f.name.startswith("package ")]) <= MAX_FAILURES
    assert all(len(f.name) <= 200 and f.name for f in failures)
    assert len(describe(failures, finder.more)) <= 3 * 200 + 200
