"""requirements/action.txt, the hash-pinned lock the action installs its helper from.

`pip install --require-hashes` fails on the runner when a dependency is missing from the lock or
a pin falls outside pyproject's ranges; these checks catch that here first. Regenerate the lock
with requirements/lock.sh.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "action.txt"
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)==(?P<version>[^\s;\\]+)(?P<marker>\s*;[^\\]*)?")


def _pins() -> dict[str, list[str]]:
    pins: dict[str, list[str]] = {}
    for line in LOCK.read_text().splitlines():
        match = _PIN.match(line)
        if match:
            pins.setdefault(canonicalize_name(match["name"]), []).append(match["version"])
    return pins


def _entries() -> list[str]:
    """Each requirement of the lock with its continuation lines joined."""
    text = LOCK.read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def _runtime_requirements() -> list[Requirement]:
    requires = metadata.requires("cursor-agent-action") or []
    return [r for r in map(Requirement, requires) if not r.marker or "extra" not in str(r.marker)]


def test_every_entry_is_an_exact_pin_with_hashes() -> None:
    entries = _entries()
    assert entries
    for entry in entries:
        assert _PIN.match(entry), entry
        assert re.search(r"--hash=sha256:[0-9a-f]{64}", entry), entry


def test_pins_satisfy_the_projects_dependency_ranges() -> None:
    pins = _pins()
    for requirement in _runtime_requirements():
        versions = pins.get(canonicalize_name(requirement.name))
        assert versions, f"{requirement.name} is not in {LOCK.name}: run requirements/lock.sh"
        for version in versions:
            assert requirement.specifier.contains(version, prereleases=True), (
                f"{requirement.name}=={version} is outside {requirement.specifier}"
            )


def test_build_backend_is_pinned_within_the_build_requirement() -> None:
    """The helper is built with --no-build-isolation: its backend comes from the lock too."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    build = re.search(r'^requires = \["(?P<req>hatchling[^"]*)"\]', pyproject, re.M)
    assert build, "pyproject.toml's build-system.requires changed: update this test"
    requirement = Requirement(build["req"])
    (version,) = _pins()["hatchling"]
    assert requirement.specifier.contains(version)


def test_lock_is_closed_under_dependencies() -> None:
    """Every dependency (for this interpreter) of every locked package is locked as well."""
    pins = _pins()
    missing = set()
    for name in pins:
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue  # not installed here (e.g. only for another Python version)
        for requirement in map(Requirement, requires):
            if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
                continue
            if canonicalize_name(requirement.name) not in pins:
                missing.add(f"{requirement.name} (needed by {name})")
    assert not missing, f"not in {LOCK.name}: {sorted(missing)}; run requirements/lock.sh"
