"""Shared pytest configuration. Reusable helpers live in ``tests/support/``."""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from xdist.remote import Producer
from xdist.scheduler import LoadGroupScheduling
from xdist.scheduler.protocol import Scheduling

from cursor_agent_action.agent.contain.isolation import DEFAULT_AGENT_USER
from cursor_agent_action.agent.launch.invocation import SHARE_VARIABLE
from tests.support.act import HELPER_VENVS
from tests.support.turns import run_directory, turn
from tests.support.users import (
    TEST_AGENT_USER,
    WORKER,
    remove_session_users,
    remove_suite_users,
    user_exists,
)

# What a test must never inherit from the shell or from a real Actions runner (our own CI runs
# the suite inside one): runner files a command would write to, credentials it would mask, and
# every option's environment variable. Tests set what they need themselves.
_INHERITED = (
    "CURSOR_API_KEY", "GITHUB_TOKEN", "GH_TOKEN", "INPUT_API_KEY",
    "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STATE",
    "GITHUB_EVENT_PATH", "RUNNER_TEMP", "RUNNER_TOOL_CACHE",
)  # fmt: skip
_INHERITED_PREFIXES = ("CURSOR_AGENT_ACTION_", "CURSOR_CLI_")

# Hypothesis (parsers, globs, redaction, the stream's fast paths): in CI (CI=true, as GitHub
# Actions sets it) every property runs 500 examples (the counts tests set one by one ran from
# 150 to 1,000; 1,000 for all would cost four times the old total), while developing 100. No
# test sets its own count: `--hypothesis-profile ci` runs CI's here. No deadline: examples are
# generated work, not waits, and a loaded machine would fail them at random.
settings.register_profile("ci", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=100, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") == "true" else "dev")


@pytest.fixture(autouse=True)
def hermetic_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name in _INHERITED or name.startswith(_INHERITED_PREFIXES):
            monkeypatch.delenv(name)
    # The suite plays a runner (its log is read as a runner reads it, masks included); a test
    # of a run outside Actions unsets this.
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    # A contained agent runs as this user (created by the jail), removed after the session.
    monkeypatch.setenv("CURSOR_AGENT_ACTION_AGENT_USER", TEST_AGENT_USER)
    # The stand-in CLI records what it saw in tmp_path/standin: the one directory a contained
    # agent shares with the tests (tests/support/standin.make_standin).
    monkeypatch.setenv(SHARE_VARIABLE, str(tmp_path / "standin"))


@pytest.fixture(scope="session", autouse=True)
def helper_venvs(tmp_path_factory: pytest.TempPathFactory) -> Generator[Path, None, None]:
    """Where the run's helper venvs are built once by content key (tests/support/act.py
    seed_helper_venv): one directory for all workers of one run and the scripts they start."""
    base = tmp_path_factory.getbasetemp()
    directory = (base.parent if WORKER else base) / "helper-venvs"
    before = os.environ.get(HELPER_VENVS)
    os.environ[HELPER_VENVS] = str(directory)
    yield directory
    if before is None:
        os.environ.pop(HELPER_VENVS, None)
    else:
        os.environ[HELPER_VENVS] = before


ONE_WORKER_MODULES = frozenset({"tests/test_examples_act.py", "tests/test_action_act.py",
                                "tests/test_examples_fork.py"})
"""Modules that run whole on one worker (``--dist loadgroup``, the default): their module
fixtures are costly (an act world, a shared workflow run of ~40 s) and a second worker would
build them again. pytest-xdist's own ``xdist_group`` mark cannot do it here: xdist 3.8 appends
the group to ``item._nodeid``, which pytest 9.2 no longer reads, so its groups are ignored."""


class _OneWorkerModules(LoadGroupScheduling):
    """xdist's group scheduling, with each of :data:`ONE_WORKER_MODULES` one unit of work."""

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return module if module in ONE_WORKER_MODULES else super()._split_scope(nodeid)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Two workers a core (at most 16): much of the suite's time is spent waiting on the
    processes it starts (act, the box, git, servers), so one worker a core left the cores idle
    a third of the time (on this project's 2-core machine: 6 min 24 s with 2 workers, 5 min
    21 s with 4, the same 3,077 tests passing). ``-n N`` or PYTEST_XDIST_AUTO_NUM_WORKERS
    still choose."""
    chosen = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "")
    return int(chosen) if chosen.isdigit() else min(2 * (os.cpu_count() or 1), 16)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> Scheduling | None:
    return _OneWorkerModules(config, log) if config.getvalue("dist") == "loadgroup" else None


_DEFAULT_USER_EXISTED: list[bool] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    # The action's default user goes at the end only if this session made it (a test that
    # forgot to name the suite's user); one that was there before is someone else's.
    _DEFAULT_USER_EXISTED.append(user_exists(DEFAULT_AGENT_USER))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Every OS user the session made goes when it ends, also after failures or an interrupt
    (tests/support/users.py): a worker's own, and in the controller of a parallel run (or a
    serial run) every user of this suite's workers with any sudoers entry, even a crashed
    worker's. A user that cannot be removed is named, not raised: the result stands."""
    default = () if _DEFAULT_USER_EXISTED[:1] != [False] else (DEFAULT_AGENT_USER,)
    problems = remove_session_users(default)
    if not WORKER:
        problems += remove_suite_users()
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for problem in dict.fromkeys(problems):
        line = f"warning: a test user is left on this machine: {problem}"
        if reporter is not None:
            reporter.write_line(line, yellow=True)
        else:
            print(line, file=sys.stderr)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """A test marked ``alone`` runs with no other test of the run beside it (its setup,
    call and teardown); the others share the machine (tests/support/turns.py)."""
    directory = run_directory(item.config.option.basetemp)
    if directory is None:
        return (yield)
    with turn(directory, alone=item.get_closest_marker("alone") is not None):
        return (yield)


def _utf8(text: str) -> str:
    """``text`` as a parallel worker can send it: a stray byte a test printed (a file name that
    is not UTF-8, read back as a surrogate) written as its escape."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, pytest.TestReport,
                                                               pytest.TestReport]:
    """A report whose captured output or failure holds a lone surrogate crashed the xdist
    worker that sent it (execnet sends UTF-8 only) and ended the whole run."""
    report = yield
    report.sections = [(title, _utf8(text)) for title, text in report.sections]
    if report.longrepr is not None:
        text = str(report.longrepr)
        if _utf8(text) != text:
            report.longrepr = _utf8(text)
    return report
