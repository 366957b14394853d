"""The hash-pinned locks the action installs from: requirements/run.txt (the action's own steps)
and requirements/gh.txt (the publish, comment and ci-context sub-actions).

`pip install --require-hashes` fails on the runner when a dependency is missing from a lock or a
pin falls outside the ranges; these checks catch that here first. Regenerate both locks with
requirements/lock.sh.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements"
SETS = ("run", "gh")
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


@pytest.mark.parametrize("name", SETS)
def test_pins_satisfy_the_wanted_ranges(name: str) -> None:
    pins = _pins(REQUIREMENTS / f"{name}.txt")
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


def test_the_run_lock_holds_nothing_the_run_step_does_not_import() -> None:
    """The action's own steps stay small (set-up time): no GitHub client, no build backend."""
    pins = _pins(REQUIREMENTS / "run.txt")
    for heavy in ("pygithub", "cryptography", "pynacl", "hatchling", "requests"):
        assert heavy not in pins


@pytest.mark.parametrize("name", SETS)
def test_lock_is_closed_under_dependencies(name: str) -> None:
    """Every dependency (for this interpreter) of every locked package is locked as well."""
    pins = _pins(REQUIREMENTS / f"{name}.txt")
    missing = set()
    for package in pins:
        try:
            requires = metadata.requires(package) or []
        except metadata.PackageNotFoundError:
            continue  # not installed here (e.g. only for another Python version)
        for requirement in map(Requirement, requires):
            if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
                continue
            if canonicalize_name(requirement.name) not in pins:
                missing.add(f"{requirement.name} (needed by {package})")
    assert not missing, f"not in {name}.txt: {sorted(missing)}; run requirements/lock.sh"
