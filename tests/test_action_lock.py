"""The hash-pinned locks the action installs from: requirements/run.txt (the action's own steps),
requirements/schema.txt (added to the run set only for output-schema and mcp-config) and
requirements/gh.txt (the publish, comment, ci-context and gate sub-actions).

`pip install --require-hashes` fails on the runner when a dependency is missing from a lock or a
pin falls outside the ranges; these checks catch that here first. Regenerate the locks with
requirements/lock.sh.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.github_server import GitHubServer

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements"
SETS = ("run", "schema", "gh")
INSTALLED_WITH = {"schema": ("run",)}
"""The schema set goes into the run venv: its lock holds only what run.txt does not."""
LEFT_OUT = {"gh": {"cryptography", "pycparser"}}
"""Dependencies lock.sh leaves out on purpose (see there); tested below to be unused."""
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)==(?P<version>[^\s;\\]+)(?P<marker>\s*;[^\\]*)?")


def _pins(lock: Path) -> dict[str, list[str]]:
    pins: dict[str, list[str]] = {}
    for line in lock.read_text().splitlines():
        match = _PIN.match(line)
        if match:
            pins.setdefault(canonicalize_name(match["name"]), []).append(match["version"])
    return pins


def _entries(lock: Path) -> list[str]:
    """Each requirement of the lock with its continuation lines joined."""
    text = lock.read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def _wanted(name: str) -> list[Requirement]:
    """The requirements of ``requirements/<name>.in``, following ``-r`` includes."""
    found: list[Requirement] = []
    for raw in (REQUIREMENTS / f"{name}.in").read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("-r "):
            found += _wanted(line[3:].strip().removesuffix(".in"))
        elif line:
            found.append(Requirement(line))
    return found


@pytest.mark.parametrize("name", SETS)
def test_every_entry_is_an_exact_pin_with_hashes(name: str) -> None:
    entries = _entries(REQUIREMENTS / f"{name}.txt")
    assert entries
    for entry in entries:
        assert _PIN.match(entry), entry
        assert re.search(r"--hash=sha256:[0-9a-f]{64}", entry), entry


def _installed(name: str) -> dict[str, list[str]]:
    """The pins a venv of set ``name`` ends up with."""
    pins = _pins(REQUIREMENTS / f"{name}.txt")
    for other in INSTALLED_WITH.get(name, ()):
        pins.update(_pins(REQUIREMENTS / f"{other}.txt"))
    return pins


@pytest.mark.parametrize("name", SETS)
def test_pins_satisfy_the_wanted_ranges(name: str) -> None:
    pins = _installed(name)
    for requirement in _wanted(name):
        versions = pins.get(canonicalize_name(requirement.name))
        assert versions, f"{requirement.name} is not in {name}.txt: run requirements/lock.sh"
        for version in versions:
            assert requirement.specifier.contains(version, prereleases=True), (
                f"{requirement.name}=={version} is outside {requirement.specifier}"
            )


def test_the_wanted_ranges_are_the_projects() -> None:
    """The .in files ask for what pyproject.toml declares, with the same bounds."""
    declared = {
        canonicalize_name(r.name): r.specifier
        for r in map(Requirement, metadata.requires("cursor-agent-action") or [])
        if not r.marker or "extra" not in str(r.marker)
    }
    for name in SETS:
        for requirement in _wanted(name):
            assert declared.get(canonicalize_name(requirement.name)) == requirement.specifier


def test_every_package_the_code_imports_is_declared() -> None:
    """No package reaches the code only as another's dependency (``requests`` through PyGithub):
    each third-party import of src/ is a distribution pyproject.toml names."""
    declared = {canonicalize_name(Requirement(r).name)
                for r in metadata.requires("cursor-agent-action") or []
                if "extra" not in str(Requirement(r).marker or "")}
    owners = metadata.packages_distributions()
    imported: set[str] = set()
    for path in (ROOT / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module.split(".")[0])
    third_party = {name for name in imported - set(sys.stdlib_module_names)
                   if name != "cursor_agent_action"}
    assert {"github", "httpx", "tenacity", "requests"} <= third_party  # the check reads imports
    missing = {name: owners.get(name) for name in third_party
               if not {canonicalize_name(d) for d in owners.get(name, [])} & declared}
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"


def test_the_run_lock_holds_nothing_the_run_step_does_not_import() -> None:
    """The action's own steps stay small (set-up time): no GitHub client, no build backend,
    and no schema support (for the few runs that use it, schema.txt)."""
    pins = _pins(REQUIREMENTS / "run.txt")
    # (PyYAML is the run's: the documentation pages' judge reads MyST's YAML option blocks.)
    for heavy in ("pygithub", "cryptography", "pynacl", "hatchling", "requests", "jsonschema",
                  "rpds-py", "referencing", "attrs"):  # fmt: skip
        assert heavy not in pins


def test_the_schema_lock_adds_only_what_the_run_lock_lacks() -> None:
    """It is installed beside the run venv's packages (pip --target): a package in both would
    be installed twice, in two versions if the pins ever differed."""
    run, schema = _pins(REQUIREMENTS / "run.txt"), _pins(REQUIREMENTS / "schema.txt")
    assert {"jsonschema", "referencing"} <= set(schema)
    assert not set(run) & set(schema)


def test_the_gh_lock_needs_no_schema_support() -> None:
    """The sub-actions never read output-schema or mcp-config."""
    pins = _pins(REQUIREMENTS / "gh.txt")
    assert "pygithub" in pins
    assert not set(pins) & set(_pins(REQUIREMENTS / "schema.txt"))
    assert not set(pins) & LEFT_OUT["gh"]


@pytest.mark.parametrize("name", SETS)
def test_lock_is_closed_under_dependencies(name: str) -> None:
    """Every dependency (for this interpreter) of every locked package is locked as well, but
    for what lock.sh leaves out on purpose."""
    pins = _installed(name)
    missing = set()
    for package in pins:
        try:
            requires = metadata.requires(package) or []
        except metadata.PackageNotFoundError:
            continue  # not installed here (e.g. only for another Python version)
        for requirement in map(Requirement, requires):
            if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
                continue
            if canonicalize_name(requirement.name) in LEFT_OUT.get(name, set()):
                continue
            if canonicalize_name(requirement.name) not in pins:
                missing.add(f"{requirement.name} (needed by {package})")
    assert not missing, f"not in {name}.txt: {sorted(missing)}; run requirements/lock.sh"


_WITHOUT = """
import importlib.abc, pkgutil, sys

class LeftOut(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in sys.argv[1].split(","):
            raise ModuleNotFoundError(f"No module named {name!r} (not in the lock)", name=name)
        return None

sys.meta_path.insert(0, LeftOut())
try:
    import cryptography
except ModuleNotFoundError:
    pass
else:
    sys.exit("the left-out packages are still importable")
import cursor_agent_action.gh
for module in pkgutil.walk_packages(cursor_agent_action.gh.__path__, "cursor_agent_action.gh."):
    __import__(module.name)
from cursor_agent_action import cli
sys.exit(cli.main(sys.argv[2:]))
"""


def test_the_gh_set_works_without_what_its_lock_leaves_out(tmp_path: Path) -> None:
    """With cryptography and pycparser unimportable (as in a gh venv), every module of the gh
    wing imports, and a comment is posted through PyGithub to the loopback GitHub API."""
    out = tmp_path / "out.txt"
    with GitHubServer() as gh:
        number = gh.add_issue()
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("GITHUB_", "CURSOR_AGENT_ACTION_"))}  # fmt: skip
        env.update(gh.env(GITHUB_WORKFLOW="Docs", GITHUB_JOB="publish"))
        done = subprocess.run(
            [sys.executable, "-c", _WITHOUT, ",".join(sorted(LEFT_OUT["gh"])), "comment",
             "--number", str(number), "--body", "posted without them", "--output-file", str(out)],
            env=env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        bodies = [comment["body"] for comment in gh.state.comments.values()]
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(bodies) == 1
    assert "posted without them" in bodies[0]
