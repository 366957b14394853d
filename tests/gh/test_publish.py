"""publish: real git against a local bare remote, REST against the loopback GitHub server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cursor_agent_action import cli, safegit
from cursor_agent_action.errors import EXIT_GITHUB, EXIT_REFUSED, EXIT_USAGE
from cursor_agent_action.gh.publish import gitops
from cursor_agent_action.output_file import parse_output_file
from tests.support.github_server import READ_ONLY_TOKEN, TOKEN, GitHubServer, error_line


def sh(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True,
                          timeout=30).stdout.strip()


@dataclass
class Workspace:
    repo: Path
    remote: Path
    gh: GitHubServer
    out: Path
    monkeypatch: pytest.MonkeyPatch

    def publish(self, *args: str) -> tuple[int, dict[str, str]]:
        self.out.write_text("")
        code = cli.main(["publish", "--output-file", str(self.out), "--summary-file",
                         str(self.out.with_suffix(".md")), "--working-directory",
                         str(self.repo), *args])
        return code, parse_output_file(self.out.read_text())

    def remote_branch(self, branch: str) -> str:
        return sh(self.remote, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    remote = tmp_path / "remote.git"
    repo = tmp_path / "work"
    sh(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(remote))
    sh(tmp_path, "init", "--quiet", "-b", "feature", str(repo))
    (repo / "README.md").write_text("hello\n")
    (repo / ".gitignore").write_text("*.log\n")
    sh(repo, "add", "-A")
    sh(repo, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-qm", "init")
    sh(repo, "remote", "add", "origin", str(remote))
    sh(repo, "push", "-q", "origin", "feature")
    with GitHubServer() as gh:
        for key, value in gh.env(GITHUB_HEAD_REF="feature", GITHUB_JOB="docs",
                                 GITHUB_EVENT_NAME="pull_request").items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)
        for key in ("BASE", "TITLE", "LABELS", "DRAFT", "PROTECTED_PATHS", "TRANSCRIPT"):
            monkeypatch.delenv(f"CURSOR_AGENT_ACTION_{key}", raising=False)
        yield Workspace(repo, remote, gh, tmp_path / "out.txt", monkeypatch)


def test_nothing_changed_means_no_branch_no_pr_changed_false(ws: Workspace) -> None:
    (ws.repo / "build.log").write_text("ignored files do not count\n")
    code, out = ws.publish()
    assert code == 0
    assert out == {"changed": "false", "branch": "", "commit-sha": "", "pr-number": "",
                   "pr-url": ""}
    assert ws.gh.requests == []
    assert sh(ws.remote, "branch", "--list") == "feature"


def test_changes_are_committed_pushed_and_a_pr_opened_with_labels(ws: Workspace) -> None:
    (ws.repo / "README.md").write_text("hello docs\n")
    (ws.repo / "docs").mkdir()
    (ws.repo / "docs" / "new.md").write_text("new page\n")
    head = sh(ws.repo, "rev-parse", "HEAD")
    code, out = ws.publish("--labels", "docs, bot", "--draft", "--body", "Agent notes")
    assert code == 0, out
    assert out["changed"] == "true"
    assert out["branch"] == "cursor-agent/docs/feature"
    assert ws.remote_branch(out["branch"]) == out["commit-sha"]
    # One commit on top of the checkout, by the bot, with the run trailer; checkout untouched.
    assert sh(ws.remote, "rev-parse", f"{out['commit-sha']}^") == head
    assert sh(ws.remote, "log", "-1", "--format=%an <%ae>", out["commit-sha"]) == (
        "github-actions[bot] <41898282+github-actions[bot]@users.noreply.github.com>")
    message = sh(ws.remote, "log", "-1", "--format=%B", out["commit-sha"])
    assert message.startswith("cursor-agent: changes for feature")
    run_url = "https://github.example/octo/widgets/actions/runs/777/attempts/1"
    assert f"Cursor-Agent-Action-Run: {run_url}" in message
    assert sh(ws.remote, "show", "--name-only", "--format=", out["commit-sha"]).split() == [
        "README.md", "docs/new.md"]
    assert sh(ws.repo, "rev-parse", "HEAD") == head
    assert sh(ws.repo, "status", "--porcelain") != ""  # the working tree keeps the changes
    (create,) = ws.gh.requests_to("POST", r"/pulls$")
    assert create.body["head"] == "cursor-agent/docs/feature"
    assert create.body["base"] == "feature"
    assert create.body["draft"] is True
    assert create.body["body"].startswith("Agent notes")
    assert "actions/runs/777" in create.body["body"]
    pull = ws.gh.state.pulls[int(out["pr-number"])]
    assert out["pr-url"] == pull["html_url"]
    assert [label["name"] for label in pull["labels"]] == ["docs", "bot"]
    summary = ws.out.with_suffix(".md").read_text()
    assert f"pull request #{out['pr-number']}" in summary


@pytest.mark.skipif(sys.platform == "darwin", reason="APFS refuses file names not in UTF-8")
def test_a_file_name_that_is_not_utf8_is_published(ws: Workspace) -> None:
    (ws.repo / os.fsdecode(b"bad\xff.txt")).write_text("made by a shell command\n")
    code, out = ws.publish()
    assert code == 0, out
    names = subprocess.run(["git", "show", "--name-only", "--format=", out["commit-sha"]],
                           cwd=ws.remote, capture_output=True, check=True).stdout
    assert names == b'"bad\\377.txt"\n'  # git quotes the byte it does not print


def test_rerun_updates_the_same_branch_and_pr(ws: Workspace) -> None:
    (ws.repo / "README.md").write_text("first try\n")
    _, first = ws.publish()
    (ws.repo / "README.md").write_text("second try\n")
    ws.monkeypatch.setenv("GITHUB_RUN_ID", "778")
    code, second = ws.publish("--title", "better title")
    assert code == 0
    assert second["pr-number"] == first["pr-number"]
    assert second["commit-sha"] != first["commit-sha"]
    assert ws.remote_branch(second["branch"]) == second["commit-sha"]
    assert len(ws.gh.requests_to("POST", r"/pulls$")) == 1
    (edit,) = ws.gh.requests_to("PATCH", r"/pulls/\d+$")
    assert edit.body["title"] == "better title"
    assert len(ws.gh.state.pulls) == 1


def test_rerun_with_identical_changes_does_not_push_again(ws: Workspace) -> None:
    (ws.repo / "README.md").write_text("same\n")
    _, first = ws.publish()
    reflog_before = sh(ws.remote, "rev-parse", f"refs/heads/{first['branch']}")
    code, second = ws.publish()
    assert code == 0
    assert second["commit-sha"] == first["commit-sha"] == reflog_before
    assert second["pr-number"] == first["pr-number"]
    assert ws.gh.requests_to("PATCH", r"/pulls/") == []  # same title and body: nothing to do


def test_pr_opened_meanwhile_422_already_exists_is_found_and_updated(ws: Workspace) -> None:
    """Another job opens the PR between our list and create: GitHub answers 422."""
    existing = ws.gh.add_pull("cursor-agent/docs/feature", base="feature")
    ws.gh.fail("GET", r"/pulls$", 200, body=[])  # the first list does not see it yet
    (ws.repo / "README.md").write_text("race\n")
    code, out = ws.publish()
    assert code == 0
    assert out["pr-number"] == str(existing)
    assert len(ws.gh.requests_to("POST", r"/pulls$")) == 1
    assert len(ws.gh.requests_to("PATCH", rf"/pulls/{existing}$")) == 1
    assert len(ws.gh.state.pulls) == 1


def test_other_validation_error_is_one_clear_error(ws: Workspace,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    ws.gh.fail("POST", r"/pulls$", 422, body={"message": "Validation Failed", "errors": [
        {"resource": "PullRequest", "field": "base", "code": "invalid"}]})
    (ws.repo / "README.md").write_text("x\n")
    code, _ = ws.publish("--base", "nope")
    assert code == EXIT_GITHUB
    line = error_line(capsys.readouterr().out)
    assert "opening a pull request cursor-agent/docs/feature -> nope failed" in line
    assert "422 (Validation Failed: base invalid)" in line


def test_protected_paths_are_refused_naming_the_files(ws: Workspace,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    (ws.repo / ".github" / "workflows").mkdir(parents=True)
    (ws.repo / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    (ws.repo / ".cursor").mkdir()
    (ws.repo / ".cursor" / "cli.json").write_text("{}\n")
    (ws.repo / "README.md").write_text("fine\n")
    code, out = ws.publish()
    assert code == EXIT_REFUSED  # a policy refusal, not a GitHub failure (4)
    assert out == {}
    said = capsys.readouterr().out
    line = error_line(said)
    refused = "refused to publish: protected paths: .cursor/cli.json, .github/workflows/ci.yml."
    assert refused in line
    assert "::error title=refused to publish::" in said
    summary = ws.out.with_suffix(".md").read_text()
    assert summary.startswith("## ❌ cursor-agent-action: refused to publish\n")
    assert "GitHub operation failed" not in said + summary
    assert ws.gh.requests == []
    assert sh(ws.remote, "branch", "--list") == "feature"


def test_protected_paths_input_replaces_the_default(ws: Workspace) -> None:
    (ws.repo / "docs").mkdir()
    (ws.repo / "docs" / "a.md").write_text("a\n")
    ws.monkeypatch.setenv("CURSOR_AGENT_ACTION_PROTECTED_PATHS", "docs/")
    code, _ = ws.publish()
    assert code == EXIT_REFUSED
    (ws.repo / "docs" / "a.md").unlink()
    (ws.repo / ".github").mkdir()
    (ws.repo / ".github" / "x.md").write_text("x\n")
    code, out = ws.publish("--protected-paths", "none")
    assert code == 0
    assert out["changed"] == "true"


def test_options_come_from_env_vars(ws: Workspace) -> None:
    ws.monkeypatch.setenv("CURSOR_AGENT_ACTION_BRANCH_TEMPLATE", "bot/{workflow}-{run_id}")
    ws.monkeypatch.setenv("CURSOR_AGENT_ACTION_BASE", "main")
    ws.monkeypatch.setenv("CURSOR_AGENT_ACTION_TITLE", "Docs for #{pr_number}")
    ws.monkeypatch.setenv("CURSOR_AGENT_ACTION_DRAFT", "false")
    ws.monkeypatch.setenv("GITHUB_WORKFLOW", "Docs update")
    event = ws.out.with_name("event.json")
    event.write_text('{"pull_request": {"number": 7}}')
    ws.monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    (ws.repo / "README.md").write_text("env\n")
    code, out = ws.publish()
    assert code == 0
    assert out["branch"] == "bot/Docs-update-777"
    (create,) = ws.gh.requests_to("POST", r"/pulls$")
    assert (create.body["title"], create.body["base"], create.body["draft"]) == (
        "Docs for #7", "main", False)


@pytest.mark.parametrize(("args", "needle"), [
    (["--branch-template", "x/{nope}"], "unknown placeholder {nope}"),
    (["--branch-template", "x/{base_ref}"], "placeholder {base_ref} in branch template"),
    (["--branch-template", "bad..name"], "is not a valid branch name"),
    (["--branch-template", "feature"], "is the base branch itself"),
    (["--body", "a", "--body-file", "b"], "give only one of --body, --body-file"),
    (["--draft=maybe"], "ignored explicit argument"),
])
def test_bad_input_fails_before_any_write(ws: Workspace, capsys: pytest.CaptureFixture[str],
                                          args: list[str], needle: str) -> None:
    (ws.repo / "README.md").write_text("changed\n")
    code, _ = ws.publish(*args)
    assert code == EXIT_USAGE
    assert needle in capsys.readouterr().out
    assert ws.gh.requests == []
    assert sh(ws.remote, "branch", "--list") == "feature"


def test_invalid_boolean_env_is_a_usage_error(ws: Workspace,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    ws.monkeypatch.setenv("CURSOR_AGENT_ACTION_DRAFT", "yes please")
    code, _ = ws.publish()
    assert code == EXIT_USAGE
    assert ("draft must be true or false, not 'yes please' (from CURSOR_AGENT_ACTION_DRAFT)"
            in capsys.readouterr().out)


def test_missing_token_fails_before_committing(ws: Workspace,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    ws.monkeypatch.delenv("GITHUB_TOKEN")
    (ws.repo / "README.md").write_text("changed\n")
    code, _ = ws.publish()
    assert code == EXIT_GITHUB
    assert "no GitHub token" in capsys.readouterr().out
    assert sh(ws.remote, "branch", "--list") == "feature"


def test_read_only_token_cannot_open_the_pr(ws: Workspace,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    ws.monkeypatch.setenv("GITHUB_TOKEN", READ_ONLY_TOKEN)
    (ws.repo / "README.md").write_text("changed\n")
    code, _ = ws.publish()
    assert code == EXIT_GITHUB
    line = error_line(capsys.readouterr().out)
    assert "opening a pull request cursor-agent/docs/feature -> feature failed" in line
    assert "403" in line
    assert "pull-requests: write" in line


def test_someone_elses_commit_on_the_bot_branch_is_never_overwritten(
        ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    (ws.repo / "human.txt").write_text("human work\n")
    sh(ws.repo, "add", "human.txt")
    sh(ws.repo, "-c", "user.name=Jane", "-c", "user.email=jane@example.com", "commit", "-qm",
       "by hand")
    sh(ws.repo, "push", "-q", "origin", "HEAD:refs/heads/cursor-agent/docs/feature")
    human = sh(ws.repo, "rev-parse", "HEAD")
    sh(ws.repo, "reset", "-q", "--hard", "HEAD^")
    (ws.repo / "README.md").write_text("agent\n")
    code, _ = ws.publish()
    assert code == EXIT_REFUSED
    line = error_line(capsys.readouterr().out)
    assert "refused to publish: overwriting branch cursor-agent/docs/feature" in line
    assert "by Jane <jane@example.com>" in line
    assert ws.remote_branch("cursor-agent/docs/feature") == human


def test_branch_moved_during_publish_is_a_clear_rejection(
        ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A concurrent push lands between our fetch and our push: force-with-lease refuses."""
    (ws.repo / "README.md").write_text("first\n")
    code, first = ws.publish()
    assert code == 0
    feature = sh(ws.repo, "rev-parse", "HEAD")
    # The remote's upload-pack moves the bot branch right after serving our fetch (its 2nd
    # use, after ls-remote): exactly the window force-with-lease guards.
    counter = tmp_path / "count"
    wrapper = tmp_path / "upload-pack"
    wrapper.write_text(
        "#!/bin/sh\n"
        'git-upload-pack "$@"; status=$?\n'
        f'n=$(cat "{counter}" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "{counter}"\n'
        f'if [ "$n" -eq 2 ]; then git --git-dir="{ws.remote}" update-ref '
        f"refs/heads/{first['branch']} {feature}; fi\n"
        "exit $status\n")
    wrapper.chmod(0o755)
    sh(ws.repo, "config", "remote.origin.uploadpack", str(wrapper))
    (ws.repo / "README.md").write_text("second\n")
    code, _ = ws.publish()
    assert code == EXIT_GITHUB
    line = error_line(capsys.readouterr().out)
    assert "rejected: the branch moved on origin while publishing" in line
    assert "Re-run the job" in line
    assert ws.remote_branch(first["branch"]) == feature  # the concurrent push survives


def test_push_token_goes_in_one_header_and_never_into_git_config(
        ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    """Over HTTP: exactly one Authorization header (checkout's persisted one is reset)."""
    import base64

    ws.monkeypatch.setenv("GITHUB_SERVER_URL", ws.gh.api_url)
    sh(ws.repo, "remote", "set-url", "origin", f"{ws.gh.api_url}/octo/widgets.git")
    sh(ws.repo, "config", f"http.{ws.gh.api_url}/.extraheader", "AUTHORIZATION: basic c3RhbGU=")
    (ws.repo / "README.md").write_text("http\n")
    code, _ = ws.publish()
    assert code == EXIT_GITHUB
    line = error_line(capsys.readouterr().out)
    assert "403" in line
    assert "contents: write" in line
    (probe, *_) = ws.gh.requests_to("GET", r"/info/refs$")
    expected = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    assert probe.authorization == [f"basic {expected}"]
    config = (ws.repo / ".git" / "config").read_text()
    assert TOKEN not in config
    assert expected not in config


def test_no_hook_runs_with_the_token_in_its_environment(ws: Workspace, tmp_path: Path) -> None:
    """A hook in the work tree (core.hooksPath, as husky sets it) must not see the token."""
    leak = tmp_path / "leak.txt"
    hooks = ws.repo / ".husky"
    hooks.mkdir()
    for name in ("pre-push", "reference-transaction", "post-checkout"):
        (hooks / name).write_text(f'#!/bin/sh\nenv >> "{leak}"\n')
        (hooks / name).chmod(0o755)
    sh(ws.repo, "config", "core.hooksPath", ".husky")
    (ws.repo / "README.md").write_text("hooked\n")
    code, out = ws.publish("--protected-paths", ".github/**")
    assert code == 0
    assert ws.remote_branch(out["branch"]) == out["commit-sha"]
    assert not leak.exists()


def test_token_never_appears_in_any_git_command_line(ws: Workspace, tmp_path: Path) -> None:
    """argv is world-readable (/proc/PID/cmdline): every git call is recorded by a shim."""
    import base64
    import shutil

    real_git = shutil.which("git")
    shim_dir = tmp_path / "shim"
    shim_dir.mkdir()
    argv_log = tmp_path / "argv.log"
    (shim_dir / "git").write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{argv_log}"\nexec "{real_git}" "$@"\n')
    (shim_dir / "git").chmod(0o755)
    # git is never looked up on PATH (safegit): the shim stands in for the git it found.
    ws.monkeypatch.setattr(safegit, "git_executable", lambda: str(shim_dir / "git"))
    (ws.repo / "README.md").write_text("argv\n")
    code, _ = ws.publish()
    assert code == 0
    calls = argv_log.read_text()
    assert "push" in calls
    assert "ls-remote" in calls
    assert TOKEN not in calls
    assert base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode() not in calls


def test_token_environment_for_git_is_scoped_to_the_server() -> None:
    env = gitops.auth_env("https://github.example/", "tok")
    assert env["GIT_CONFIG_KEY_1"] == "http.https://github.example/.extraheader"
    assert env["GIT_CONFIG_VALUE_0"] == ""


def test_pr_body_is_the_compact_summary_of_the_transcript(ws: Workspace) -> None:
    from tests.gh.test_comment import TRANSCRIPT

    transcript = ws.out.with_name("t.jsonl")
    transcript.write_text(TRANSCRIPT)
    (ws.repo / "README.md").write_text("docs\n")
    code, _ = ws.publish("--transcript", str(transcript))
    assert code == 0
    (create,) = ws.gh.requests_to("POST", r"/pulls$")
    assert "The docs now describe the new flag." in create.body["body"]
    assert "actions/runs/777" in create.body["body"]


def test_missing_transcript_is_a_usage_error(ws: Workspace,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    (ws.repo / "README.md").write_text("docs\n")
    code, _ = ws.publish("--transcript", str(ws.out.with_name("missing.jsonl")))
    assert code == EXIT_USAGE
    assert "missing.jsonl does not exist" in capsys.readouterr().out
    assert sh(ws.remote, "branch", "--list") == "feature"


def test_final_message_body_is_fenced(ws: Workspace) -> None:
    (ws.repo / "README.md").write_text("docs\n")
    code, _ = ws.publish("--final-message", "# Done\nthanks @mallory")
    assert code == 0
    (create,) = ws.gh.requests_to("POST", r"/pulls$")
    assert create.body["body"].startswith(
        "**The agent's final message:**\n\n```text\n# Done\nthanks @mallory\n```\n\n"
        "[Workflow run](https://github.example/octo/widgets/actions/runs/777")


def test_pull_request_from_a_fork_with_its_read_only_token_is_one_clear_error(
        ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    """GitHub gives a fork's pull_request run a read-only token: the push is refused (403),
    nothing lands, and the one error names the fork and the workflow_run way out."""
    ws.monkeypatch.setenv("GITHUB_TOKEN", READ_ONLY_TOKEN)
    ws.monkeypatch.setenv("GITHUB_SERVER_URL", ws.gh.api_url)
    event = ws.out.with_name("event.json")
    event.write_text('{"pull_request": {"number": 7, "head": {"ref": "feature", "repo": '
                     '{"full_name": "forker/widgets"}}, "base": {"repo": '
                     '{"full_name": "octo/widgets"}}}}')
    ws.monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    sh(ws.repo, "remote", "set-url", "origin", f"{ws.gh.api_url}/octo/widgets.git")
    (ws.repo / "README.md").write_text("from a fork\n")
    code, out = ws.publish()
    assert code == EXIT_GITHUB
    assert out == {}
    line = error_line(capsys.readouterr().out)
    assert "403" in line
    assert "pull request from the fork forker/widgets" in line
    assert "read-only" in line
    assert "workflow_run" in line
    assert ws.gh.requests_to("POST", r"/git-receive-pack$") == []
    assert ws.gh.requests_to("POST", r"/pulls$") == []
    assert sh(ws.remote, "branch", "--list") == "feature"


def test_git_errors_and_the_log_never_show_a_token_or_its_basic_credential(
        ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    """The token is masked in both forms git may reveal; a remote URL's user:token@ (not a
    registered secret) is cut from the error."""
    import base64

    ws.monkeypatch.setenv("GITHUB_SERVER_URL", ws.gh.api_url)
    remote = ws.gh.api_url.replace("://", "://x-access-token:pat_other_0123@") + "/octo/w.git"
    (ws.repo / "README.md").write_text("http\n")
    code, _ = ws.publish("--remote", remote)
    assert code == EXIT_GITHUB
    log = capsys.readouterr().out
    basic = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
    assert log.startswith(f"::add-mask::{TOKEN}\n::add-mask::{basic}\n")
    line = error_line(log)
    assert "on http://***@127.0.0.1:" in line
    assert "pat_other_0123" not in log


@pytest.mark.parametrize("make", ["missing", "file"])
def test_working_directory_that_is_not_a_directory_is_named(
        ws: Workspace, capsys: pytest.CaptureFixture[str], tmp_path: Path, make: str) -> None:
    """Not "git is not installed": subprocess reports a missing cwd as FileNotFoundError too."""
    where = tmp_path / "nope"
    if make == "file":
        where.write_text("not a directory\n")
    code = cli.main(["publish", "--output-file", str(ws.out), "--working-directory", str(where)])
    assert code == EXIT_USAGE
    line = error_line(capsys.readouterr().out)
    assert f"the directory {where} does not exist or is not a directory. Fix: Set " \
           "working-directory" in line
    assert "git is not installed" not in line
    assert ws.gh.requests == []


def test_git_failure_message_is_a_sentence_before_the_fix(
        ws: Workspace, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    code = cli.main(["publish", "--output-file", str(ws.out), "--working-directory", str(plain)])
    assert code == EXIT_GITHUB
    line = error_line(capsys.readouterr().out)
    assert "not a git repository (or any of the parent directories): .git. Fix: Run in a " \
           "checked-out repository" in line


def test_missing_token_is_reported_before_an_empty_placeholder(
        ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    ws.monkeypatch.delenv("GITHUB_TOKEN")
    ws.monkeypatch.delenv("GITHUB_JOB")  # the default branch template's {job} is empty too
    (ws.repo / "README.md").write_text("changed\n")
    code, _ = ws.publish()
    assert code == EXIT_GITHUB
    line = error_line(capsys.readouterr().out)
    assert "no GitHub token: GITHUB_TOKEN is empty or unset." in line
    assert "placeholder" not in line


def test_fsmonitor_planted_in_git_config_never_runs(ws: Workspace, tmp_path: Path) -> None:
    """The agent may write .git/config; core.fsmonitor names a command git runs on status and
    add, with publish's environment (which holds the push token)."""
    marker = tmp_path / "fsmonitor-ran.txt"
    script = tmp_path / "monitor.sh"
    script.write_text(f'#!/bin/sh\nenv >> "{marker}"\nexit 1\n')
    script.chmod(0o755)
    sh(ws.repo, "config", "core.fsmonitor", str(script))
    sh(ws.repo, "-c", "core.fsmonitor=false", "status")  # the plant itself must not fire
    (ws.repo / "README.md").write_text("monitored\n")
    sh(ws.repo, "status")  # proof the plant works: plain git runs it
    assert marker.exists()
    marker.unlink()
    code, out = ws.publish()
    assert code == 0
    assert ws.remote_branch(out["branch"]) == out["commit-sha"]
    assert not marker.exists()


def test_system_git_config_is_ignored(ws: Workspace, tmp_path: Path) -> None:
    """GIT_CONFIG_NOSYSTEM: a system config (here one that hides every change) is not read."""
    ignore_all = tmp_path / "ignore-all"
    ignore_all.write_text("*\n")
    system = tmp_path / "system.gitconfig"
    system.write_text(f"[core]\n\texcludesFile = {ignore_all}\n")
    ws.monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(system))
    (ws.repo / "new.txt").write_text("untracked, hidden by the system config\n")
    assert sh(ws.repo, "status", "--porcelain") == ""  # plain git reads it
    code, out = ws.publish()
    assert code == 0
    assert out["changed"] == "true"
    assert sh(ws.remote, "show", "--name-only", "--format=", out["commit-sha"]) == "new.txt"


def test_publishing_in_the_agents_job_warns_unless_allowed(
    ws: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run step's state directory in this job's RUNNER_TEMP means the agent ran here."""
    (ws.repo / "README.md").write_text("same job\n")
    runner_temp = tmp_path / "runner-temp"
    ws.monkeypatch.setenv("RUNNER_TEMP", str(runner_temp))
    code, _ = ws.publish()
    assert code == 0
    assert "publish in the agent" not in capsys.readouterr().out
    (runner_temp / "cursor-agent-action" / "run-abc").mkdir(parents=True)
    code, _ = ws.publish()
    assert code == 0
    warned = capsys.readouterr().out
    assert "::warning title=publish in the agent's job::publish runs in the same job" in warned
    assert "patch-file" in warned
    code, _ = ws.publish("--allow-same-job")
    assert "publish in the agent" not in capsys.readouterr().out
