"""``cursor-agent-action pin``: a ref of a real (local) repository resolved to its full commit
SHA, through git ls-remote (a file:// URL) or a local clone; only this action's uses: lines
change; an empty, malformed or unknown ref, or a failed lookup, writes nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cursor_agent_action.cli import main

WORKFLOW = """on: push
jobs:
  agent:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2
      - id: agent
        uses: cursor-agent-action/cursor-agent-action@COMMIT_SHA # main as of the day you pin
      - uses: 'cursor-agent-action/cursor-agent-action/publish@COMMIT_SHA'
      - run: echo "uses: cursor-agent-action/cursor-agent-action@COMMIT_SHA stays as it is"
      # uses: cursor-agent-action/cursor-agent-action@COMMIT_SHA (a comment, not a step)
      - uses: someone/cursor-agent-action@COMMIT_SHA
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c",
                           "user.email=t@example.com", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def action(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The action's repository: main, a lightweight tag v1.2.0, an annotated tag v1.3.0."""
    repo = tmp_path / "action"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    _git(repo, "tag", "v1.2.0")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    _git(repo, "tag", "-a", "-m", "release", "v1.3.0")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "three")
    shas = {name: _git(repo, "rev-parse", f"{name}^{{commit}}")
            for name in ("main", "v1.2.0", "v1.3.0")}
    assert _git(repo, "rev-parse", "v1.3.0") != shas["v1.3.0"]  # a tag object, peeled
    return repo, shas


def _pin(tmp_path: Path, *args: str) -> tuple[int, str]:
    workflow = tmp_path / "w.yml"
    if not workflow.exists():
        workflow.write_text(WORKFLOW)
    return main(["pin", *args, str(workflow)]), workflow.read_text()


def test_a_tag_by_ls_remote_pins_only_this_actions_uses_lines(
    tmp_path: Path, action: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    repo, shas = action
    code, text = _pin(tmp_path, "--ref", "v1.3.0", "--source", f"file://{repo}")
    assert code == 0, capsys.readouterr().out
    sha = shas["v1.3.0"]
    expected = WORKFLOW.replace(
        "cursor-agent-action@COMMIT_SHA # main as of the day you pin",
        f"cursor-agent-action@{sha} # v1.3.0").replace(
        "'cursor-agent-action/cursor-agent-action/publish@COMMIT_SHA'",
        f"'cursor-agent-action/cursor-agent-action/publish@{sha}' # v1.3.0")
    assert text == expected
    assert f"2 line(s) changed; this action's uses: lines are at {sha} (v1.3.0)." in (
        capsys.readouterr().out)


def test_a_branch_from_a_local_clone_and_a_sha_that_keeps_the_comment(
    tmp_path: Path, action: tuple[Path, dict[str, str]]
) -> None:
    repo, shas = action
    assert _pin(tmp_path, "--ref", "main", "--source", str(repo))[0] == 0
    code, text = _pin(tmp_path, "--ref", shas["v1.2.0"][:10], "--source", str(repo))
    assert code == 0
    assert f"cursor-agent-action@{shas['v1.2.0']} # {shas['v1.2.0'][:10]}" in text
    code, text = _pin(tmp_path, "--ref", shas["main"])  # a full SHA: no lookup, comment kept
    assert code == 0
    assert f"cursor-agent-action@{shas['main']} # {shas['v1.2.0'][:10]}" in text


@pytest.mark.parametrize(("ref", "expected"), [
    ("", "--ref is empty: there is nothing to pin to."),
    ("  ", "--ref is empty: there is nothing to pin to."),
    ("main; rm -rf ~", "--ref 'main; rm -rf ~' is not a branch, tag or commit name."),
    ("-main", "is not a branch, tag or commit name."),
    ("a..b", "is not a branch, tag or commit name."),
    ("mian", "'mian' is neither a branch nor a tag of file://"),
    ("abc1234", "--ref abc1234 looks like a short SHA, which a remote cannot look up."),
])
def test_a_bad_ref_writes_nothing(tmp_path: Path, action: tuple[Path, dict[str, str]],
                                  capsys: pytest.CaptureFixture[str], ref: str,
                                  expected: str) -> None:
    """The README's old recipe wrote `uses: ...@` (an empty ref) when ls-remote failed."""
    repo, _ = action
    code, text = _pin(tmp_path, f"--ref={ref}", "--source", f"file://{repo}")
    assert (code, text) == (2, WORKFLOW)
    assert expected in capsys.readouterr().out


def test_a_failed_lookup_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    code, text = _pin(tmp_path, "--ref", "main", "--source", f"file://{tmp_path}/gone.git")
    assert (code, text) == (4, WORKFLOW)
    assert f"cannot list the refs of file://{tmp_path}/gone.git" in capsys.readouterr().out
    code, text = _pin(tmp_path, "--ref", "nope", "--source", str(tmp_path))
    assert (code, text) == (2, WORKFLOW)


def test_a_file_without_the_action_is_left_alone_with_a_warning(
    tmp_path: Path, action: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other.yml"
    other.write_text("on: push\njobs: {}\n")
    assert main(["pin", "--source", str(action[0]), str(other)]) == 0
    assert other.read_text() == "on: push\njobs: {}\n"
    assert "does not use cursor-agent-action/cursor-agent-action: nothing to pin there." in (
        capsys.readouterr().out)


def test_a_checkout_of_the_actions_own_repository_is_pinned_too(
    tmp_path: Path, action: tuple[Path, dict[str, str]]
) -> None:
    """monorepo-matrix.yml checks out this action's repository at COMMIT_SHA: pinned with
    the uses: lines, or the job would check out a ref that does not exist. Another
    repository's ref, and a ref: outside that step, stay."""
    repo, shas = action
    workflow = tmp_path / "w.yml"
    text = """jobs:
  a:
    steps:
      - uses: actions/checkout@v4
        with:
          repository: cursor-agent-action/cursor-agent-action
          ref: COMMIT_SHA
          path: .cursor-agent-action
      - uses: actions/checkout@v4
        with:
          repository: someone/else
          ref: COMMIT_SHA
      - uses: cursor-agent-action/cursor-agent-action@COMMIT_SHA
        with:
          ref: COMMIT_SHA
"""
    workflow.write_text(text)
    assert main(["pin", "--source", str(repo), str(workflow)]) == 0
    sha = shas["main"]
    assert workflow.read_text() == text.replace(
        "action\n          ref: COMMIT_SHA", f"action\n          ref: {sha} # main", 1).replace(
        "cursor-agent-action@COMMIT_SHA", f"cursor-agent-action@{sha} # main")


@pytest.mark.parametrize("source", ["--upload-pack=touch {mark};", "ext::sh -c touch% {mark}"])
def test_a_source_is_never_an_option_or_a_command(tmp_path: Path, source: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """--source is a repository to ask, nothing else: not an option of git ls-remote (which
    would run its command), not git's ext:: transport."""
    mark = tmp_path / "ran"
    code, text = _pin(tmp_path, "--ref", "main", f"--source={source.format(mark=mark)}")
    assert (code, text) == (4, WORKFLOW), capsys.readouterr().out
    assert not mark.exists()
