"""What the repository holds: no build artefacts. A wheel, an sdist, ``dist/``, ``build/`` or
an ``*.egg-info`` directory committed by mistake (``pip wheel``/``pip download`` in the work
tree, then ``git add -A``) is a binary nobody reviews; the suite makes the wheels it needs
(tests/support/wheels.py) and ``.gitignore`` keeps them out."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTEFACT = re.compile(r"(?i)(\.whl|\.tar\.gz|\.tgz|\.egg)$|(^|/)(dist|build)/|\.egg-info(/|$)")


def _tracked() -> list[str]:
    done = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                          check=False, timeout=60)
    if done.returncode != 0:
        pytest.skip("not a git checkout: nothing tracked to check")
    return [name for name in done.stdout.decode("utf-8", "replace").split("\0") if name]


def test_no_build_artefact_is_committed() -> None:
    found = [name for name in _tracked() if ARTEFACT.search(name)]
    assert not found, f"build artefacts are committed (git rm them): {found}"


@pytest.mark.parametrize("name", ["h11-0.16.0-py3-none-any.whl", "dist/pkg-1.0.tar.gz",
                                  "build/lib/x.py", "src/pkg.egg-info/PKG-INFO", "x.tgz"])
def test_gitignore_keeps_build_artefacts_out(name: str) -> None:
    done = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", "--no-index", name],
                          capture_output=True, check=False, timeout=60)
    assert done.returncode == 0, f".gitignore does not keep {name} out"
