"""What a test runner's own output says failed: the failing tests by name, or the command that
failed, in a log with no GitHub step in it (a plain pytest, jest, npm, go test, cargo, make or
unittest log, as a user saves it) as well as inside a failed step's lines.

Lines are read one at a time (``ci-context`` streams job logs), already cleaned of timestamps
and terminal colours; each names at most one failure. What a runner prints is text from the
code under test: the names are data, shown in code spans, never acted on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_FAILURES = 20
_MAX_NAME = 200

# (runner, pattern): the pattern's first group is the failing test or command. Runners that
# print a test twice (pytest's progress and its summary) are read once per name.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # pytest: the short summary (`-rf`, on by default) and the verbose progress.
    ("pytest", re.compile(r"^(?:FAILED|ERROR) (\S+\.py(?:::.+?)?)(?: - .*)?$")),
    ("pytest", re.compile(r"^(\S+\.py::\S+) (?:FAILED|ERROR)\b")),
    # unittest: "FAIL: test_add (tests.test_calc.TestCalc.test_add)".
    ("unittest", re.compile(r"^(?:FAIL|ERROR): (\w+ \([\w.]+\))$")),
    # go test: "--- FAIL: TestAdd (0.00s)", subtests indented.
    ("go test", re.compile(r"^\s*--- FAIL: (\S+)")),
    # cargo test: "test calc::tests::add ... FAILED".
    ("cargo test", re.compile(r"^test (\S+) \.\.\. FAILED$")),
    # jest and vitest: "\u25cf Suite \u203a test", then the file: "FAIL src/calc.test.js"
    # (vitest: "\u00d7" or "\u276f" before it).
    ("jest", re.compile("^\\s*\u25cf (?!Test suite failed to run|Console\\b)(.+?)\\s*$")),
    ("jest", re.compile("^\\s*(?:FAIL|\u00d7|\u276f)\\s+(\\S+\\.(?:test|spec)\\.[cm]?[jt]sx?)\\b")),
    # rspec: "rspec ./spec/calc_spec.rb:4 # Calc adds".
    ("rspec", re.compile(r"^rspec (\./\S+:\d+)")),
    # the command that failed: npm's, make's.
    ("npm", re.compile(r"^npm (?:ERR!|error) command (?:sh|bash|cmd\.exe) (?:-c|/d /s /c) (.+)$")),
    ("make", re.compile(r"^make(?:\[\d+\])?: \*\*\* \[(?:\S+:\d+: )?([^\]]+)\] Error \d+")),
)
# go test names the package of a failing test last ("FAIL\tgithub.com/x/calc\t0.01s"): a
# package alone is named only when no test of it was.
_GO_PACKAGE = re.compile(r"^FAIL\t(\S+)")


@dataclass(frozen=True)
class Failing:
    runner: str  # pytest, unittest, go test, cargo test, jest, rspec, npm, make
    name: str  # the test (tests/test_calc.py::test_add, TestAdd, Suite > test) or command

    @property
    def is_command(self) -> bool:
        return self.runner in ("npm", "make")


class FailureFinder:
    """The failures named in the lines fed so far, in the order first seen, at most
    :data:`MAX_FAILURES` (then only counted)."""

    def __init__(self, limit: int = MAX_FAILURES) -> None:
        self.limit = limit
        self.found: dict[Failing, None] = {}
        self.more = 0
        self._packages: dict[str, None] = {}

    def feed(self, line: str) -> None:
        for runner, pattern in _PATTERNS:
            match = pattern.match(line)
            name = match.group(1).strip()[:_MAX_NAME] if match else ""
            if name:
                self._add(Failing(runner, name))
                return
        package = _GO_PACKAGE.match(line)
        if package:
            self._packages[package.group(1)[:_MAX_NAME]] = None

    def _add(self, failing: Failing) -> None:
        if failing in self.found:
            return
        if len(self.found) >= self.limit:
            self.more += 1
            return
        self.found[failing] = None

    @property
    def failures(self) -> list[Failing]:
        """Tests first (a command failed because they did), then commands; a go package
        only when no go test was named."""
        found = list(self.found)
        tests = [f for f in found if not f.is_command]
        if not any(f.runner == "go test" for f in tests):
            tests += [Failing("go test", f"package {p}") for p in self._packages]
        return tests + [f for f in found if f.is_command]


def failures_in(text: str) -> list[Failing]:
    """The failures a whole log names (lines as ``ci-context`` cleans them, by the caller)."""
    finder = FailureFinder()
    for line in text.splitlines():
        finder.feed(line)
    return finder.failures


def describe(failures: list[Failing], more: int = 0) -> str:
    """One line naming them: ``pytest: tests/a.py::test_x, tests/b.py::test_y (and 2 more)``;
    "" for none."""
    if not failures:
        return ""
    runner = failures[0].runner
    shown = [f.name for f in failures if f.runner == runner][:3]
    rest = len(failures) - len(shown) + more
    return f"{runner}: {', '.join(shown)}" + (f" (and {rest} more)" if rest else "")
