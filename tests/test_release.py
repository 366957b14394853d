"""scripts/release.sh: a release is a fixed annotated tag plus the moving major tag, made only
from a clean tree whose version and CHANGELOG agree; every refusal is one clear line."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.name=Release", "-c", "user.email=release@example.com"]


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def _project(tmp_path: Path, version: str, changelog: str) -> Path:
    repo = tmp_path / "project"
    (repo / "scripts").mkdir(parents=True)
    (repo / "src" / "cursor_agent_action").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "release.sh", repo / "scripts" / "release.sh")
    (repo / "src" / "cursor_agent_action" / "__init__.py").write_text(
        f'"""x"""\n\n__version__ = "{version}"\n')
    (repo / "CHANGELOG.md").write_text(changelog)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "release")
    return repo


def _release(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "scripts/release.sh", *args], cwd=repo, capture_output=True,
                          text=True, check=False, timeout=60)


def test_a_release_tags_the_version_and_moves_the_major_tag(tmp_path: Path) -> None:
    repo = _project(tmp_path, "1.2.3", "# Changelog\n\n## v1.2.3 - 2026-11-24\n\n- x\n")
    checked = _release(repo, "--dry-run", "v1.2.3")
    assert checked.returncode == 0, checked.stderr
    assert _git(repo, "tag") == ""  # a dry run tags nothing
    done = _release(repo, "v1.2.3")
    assert done.returncode == 0, done.stderr
    head = _git(repo, "rev-parse", "HEAD")
    assert _git(repo, "rev-parse", "v1.2.3^{commit}") == head
    assert _git(repo, "cat-file", "-t", "v1.2.3") == "tag"  # annotated
    assert _git(repo, "rev-parse", "v1^{commit}") == head
    # The next release moves v1, and never v1.2.3.
    (repo / "src" / "cursor_agent_action" / "__init__.py").write_text('__version__ = "1.3.0"\n')
    (repo / "CHANGELOG.md").write_text("## v1.3.0 - 2026-12-01\n\n## v1.2.3 - 2026-11-24\n")
    _git(repo, "commit", "-qam", "1.3.0")
    assert _release(repo, "v1.3.0").returncode == 0
    assert _git(repo, "rev-parse", "v1^{commit}") == _git(repo, "rev-parse", "HEAD")
    assert _git(repo, "rev-parse", "v1.2.3^{commit}") == head


@pytest.mark.parametrize(("version", "changelog", "args", "dirty", "message"), [
    ("1.2.3", "## v1.2.3 - 2026-11-24\n", ["1.2.3"], False, "is not vMAJOR.MINOR.PATCH"),
    ("1.2.3", "## v1.2.3 - 2026-11-24\n", ["v1.2"], False, "is not vMAJOR.MINOR.PATCH"),
    ("1.2.3", "## v1.2.3 - 2026-11-24\n", ["v1.2.3"], True, "working tree is not clean"),
    ("1.2.2", "## v1.2.3 - 2026-11-24\n", ["v1.2.3"], False, "__version__ '1.2.2', not '1.2.3'"),
    ("1.2.3", "## Unreleased\n", ["v1.2.3"], False, "CHANGELOG.md has no heading"),
    ("1.2.3", "## v1.2.3 - 2026-11-24\n", [], False, "usage: scripts/release.sh"),
])  # fmt: skip
def test_a_release_is_refused_with_the_reason(
    tmp_path: Path, version: str, changelog: str, args: list[str], *, dirty: bool, message: str,
) -> None:
    repo = _project(tmp_path, version, changelog)
    if dirty:
        (repo / "CHANGELOG.md").write_text(changelog + "\nmore\n")
    refused = _release(repo, *args)
    assert refused.returncode == 2
    assert message in refused.stderr
    assert _git(repo, "tag") == ""


def test_an_existing_release_is_never_moved(tmp_path: Path) -> None:
    repo = _project(tmp_path, "1.2.3", "## v1.2.3 - 2026-11-24\n")
    assert _release(repo, "v1.2.3").returncode == 0
    _git(repo, "commit", "-q", "--allow-empty", "-m", "later")
    refused = _release(repo, "v1.2.3")
    assert refused.returncode == 2
    assert "tag v1.2.3 exists already" in refused.stderr
