"""The agent attacks its box; the box holds (issue: contain the agent).

Every test runs the real helper (``cli.main``) as root, so the agent is contained for real: its
own user (the suite's test user), its own PID and mount namespaces, a private home. The agent
is a shell script (what a prompt-injected shell tool could run) that tries one escape, writes
what it saw into a directory any user may write, then ends like the CLI (init, result).

The fallback is tested by running the helper itself as an unprivileged user without sudo.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cursor_agent_action.cli import main
from cursor_agent_action.output_file import parse_output_file
from tests.support.box import SESSION, TOKEN, Box
from tests.support.box import agent as _agent
from tests.support.box import run as _run
from tests.support.box import seen as _seen
from tests.support.standin import SYSTEM_PYTHON, processes_of
from tests.support.users import (
    SUDOERS,
    TEST_AGENT_USER,
    TEST_RUNNER_USER,
    TEST_SUDO_USER,
    ensure_user,
)

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not sys.platform.startswith("linux"),
    reason="containment runs as root on Linux (CI here is root)",
)

def test_the_agent_runs_as_its_own_user_with_a_private_home(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _run(box, capsys, 'id -u > $SEEN/uid; id -G > $SEEN/groups; echo "$HOME" > $SEEN/home;'
                            ' stat -c %a "$HOME" > $SEEN/mode; ls /proc | grep -c "^[0-9]" '
                            '> $SEEN/pids')
    assert out["conclusion"] == "success", out["log"]
    uid = int(_seen(box, "uid"))
    assert uid != 0
    assert uid != os.getuid()
    assert len(_seen(box, "groups").split()) == 1  # its own group only
    home = Path(_seen(box, "home").strip())
    assert home.is_relative_to(box.runner_temp)
    assert _seen(box, "mode").strip() == "700"
    assert int(_seen(box, "pids")) < 10  # its own namespace: its shell, cat, ls, grep
    assert "Isolation: contained" in out["log"]


def test_survivors_of_a_setsid_double_fork_and_a_fork_chain_are_gone(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    """setsid, double fork, then a chain of 1,500 forks whose tip writes later: nothing is
    left when the helper returns, and nothing is written after."""
    chain = box.base / "chain.sh"
    chain.write_text('n=$1; if [ "$n" -gt 0 ]; then setsid sh "$0" $((n - 1)) & exit 0; fi\n'
                     f'sleep 2; echo survived > {box.seen}/survivor\n')
    chain.chmod(0o755)
    out = _run(box, capsys, f"(setsid sh {chain} 1500 &) ; sleep 0.5")
    assert out["conclusion"] == "success", out["log"]
    assert processes_of(TEST_AGENT_USER) == []
    time.sleep(2.5)
    assert not (box.seen / "survivor").exists()


def test_the_agent_cannot_kill_or_see_the_helper_or_read_its_environment(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    body = (f'kill -9 $PPID 2>/dev/null; echo $? > $SEEN/kill; kill -9 {os.getpid()} '
            '2>/dev/null; echo $? > $SEEN/kill-helper; cat /proc/*/environ 2>/dev/null | '
            "tr '\\0' '\\n' > $SEEN/environ; ls /proc > $SEEN/proc")
    out = _run(box, capsys, body)
    assert out["conclusion"] == "success", out["log"]  # the helper lived to write it
    assert _seen(box, "kill").strip() != "0"
    assert _seen(box, "kill-helper").strip() != "0"
    assert TOKEN not in _seen(box, "environ")
    assert "GITHUB_TOKEN" not in _seen(box, "environ")
    assert str(os.getpid()) not in _seen(box, "proc").split()


def test_runner_files_the_venv_and_git_stay_out_of_reach(
    box: Box, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    commands = box.runner_temp / "_runner_file_commands"
    commands.mkdir(parents=True)
    github_env = commands / "set_env_1"
    github_env.write_text("KEEP=1\n")
    monkeypatch.setenv("GITHUB_ENV", str(github_env))
    git_dir = box.workspace / ".git"
    before = _tree(git_dir)
    venv = Path(sys.prefix)
    body = (f"echo BASH_ENV=/tmp/evil >> {github_env} 2>/dev/null; "
            f"touch {venv}/planted 2>/dev/null; "
            "echo '[core] fsmonitor = /tmp/x' >> .git/config 2>/dev/null; "
            "echo evil > .git/hooks/pre-commit 2>/dev/null; "
            "mv .git .git-gone 2>/dev/null; mkdir .git-planted 2>/dev/null; "
            "rm -rf .git 2>/dev/null; echo $? > $SEEN/rm; "
            "git update-index --skip-worktree README.md 2>/dev/null; echo $? > $SEEN/skip")
    out = _run(box, capsys, body)
    assert github_env.read_text() == "KEEP=1\n"
    assert not (venv / "planted").exists()
    assert _tree(git_dir) == before
    assert not (box.workspace / ".git-gone").exists()
    assert _seen(box, "skip").strip() != "0"
    assert out["conclusion"] == "success", out["log"]  # nothing got through: nothing to undo


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"<dir>"
            for p in sorted(root.rglob("*"))}  # fmt: skip


def test_planted_dotfiles_land_in_the_private_home_and_never_run(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = box.seen / "git-ran"
    body = (f"printf '#!/bin/sh\\necho ran > {marker}\\n' > $HOME/evil.sh; chmod +x $HOME/evil.sh;"
            " printf '[core]\\n\\tfsmonitor = '$HOME'/evil.sh\\n[diff]\\n\\texternal = '$HOME"
            "'/evil.sh\\n' >> $HOME/.gitconfig; echo 'sh $HOME/evil.sh' >> $HOME/.bashrc; "
            f"mkdir -p $HOME/.local/bin; cp $HOME/evil.sh $HOME/.local/bin/git;"
            f" printf '[core]\\n\\tfsmonitor = /bin/false\\n' >> {box.home}/.gitconfig"
            " 2>/dev/null; echo changed > src/app.py")
    out = _run(box, capsys, body, "--preset", "edit")
    assert out["conclusion"] == "success", out["log"]
    assert not (box.home / ".gitconfig").exists()
    assert not (box.home / ".bashrc").exists()
    # The home was the box's own: nothing of it is left on the runner.
    agent_home = box.runner_temp / "cursor-agent-action" / "agent-home"
    assert not (agent_home / ".gitconfig").exists()
    assert not (agent_home / ".local/bin/git").exists()
    assert (box.workspace / "src" / "app.py").read_text() == "changed\n"  # via the patch
    # A later step, as the runner's user with its own HOME, runs none of it.
    env = {"HOME": str(box.home), "PATH": f"{agent_home}/.local/bin:/usr/bin:/bin"}
    for args in (["status"], ["diff"], ["-c", "user.name=t", "-c", "user.email=t@e", "commit",
                                        "-qam", "later step"]):  # fmt: skip
        subprocess.run(["/usr/bin/git", *args], cwd=box.workspace, env=env, check=True,
                       capture_output=True, timeout=60)
    assert not marker.exists()


def test_the_workspace_stays_the_runners_and_changes_the_policy_refuses_stay_in_the_box(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    (box.workspace / ".github").mkdir()
    (box.workspace / ".github" / "ci.yml").write_text("on: push\n")
    mode = (box.workspace).stat().st_mode
    body = ("mkdir -p docs && echo new > docs/new.md; echo x >> .github/ci.yml;"
            " mkdir -p .cursor/rules && echo evil > .cursor/rules/x.mdc")
    out = _run(box, capsys, body, "--preset", "docs")
    assert out["conclusion"] == "failure", out["log"]
    assert "every other change of this run, stayed in the box" in out["log"]
    # A protected change fails the run, and nothing of the run comes back, not even docs/.
    assert not (box.workspace / "docs" / "new.md").exists()
    assert (box.workspace / ".github" / "ci.yml").read_text() == "on: push\n"
    assert not (box.workspace / ".cursor" / "rules").exists()
    owners = {p.lstat().st_uid for p in box.workspace.rglob("*")} | {box.workspace.stat().st_uid}
    assert owners == {os.getuid()}
    assert box.workspace.stat().st_mode == mode
    assert box.base.stat().st_mode & 0o777 == 0o755


def test_repository_hooks_are_invisible_during_the_run_and_restored(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    files = {".claude/settings.json": b'{"hooks": {"PreToolUse": []}}\n',
             ".claude/settings.local.json": b'{"hooks": {}}\n',
             ".cursor/hooks.json": b'{"version": 1, "hooks": {}}\n',
             ".cursor/mcp.json": b'{"mcpServers": {}}\n'}
    for name, data in files.items():
        (box.workspace / name).parent.mkdir(exist_ok=True)
        (box.workspace / name).write_bytes(data)
    body = ("ls -a .claude .cursor > $SEEN/listing 2>&1; echo '{}' > .claude/settings.json"
            " 2>/dev/null; echo $? > $SEEN/write")
    out = _run(box, capsys, body)
    # The copy is the agent's to write, but nothing a read-only run writes comes back.
    assert out["conclusion"] == "failure", out["log"]
    assert "stayed in the box" in out["log"]
    listing = _seen(box, "listing")
    assert "settings.json" not in listing
    assert "hooks.json" not in listing
    assert "mcp.json" not in listing
    assert "settings.local.json" not in listing
    for name, data in files.items():
        assert (box.workspace / name).read_bytes() == data


def test_links_planted_in_the_home_cannot_push_the_next_run_out_of_its_box(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    """A first run leaves links where the jail (root) prepares the next run's home: they are
    replaced, nothing outside is chowned, and the next run is contained again."""
    victim = box.base / "victim"
    victim.mkdir()
    plant = (f"rm -rf $HOME/tmp $HOME/.config/cursor; ln -s {victim} $HOME/tmp; "
             f"ln -s {victim} $HOME/.config/cursor")
    first = _run(box, capsys, plant)
    assert first["conclusion"] == "success", first["log"]
    second = _run(box, capsys, "id -u > $SEEN/uid; test -L $HOME/tmp; echo $? > $SEEN/link")
    assert second["conclusion"] == "success", second["log"]
    assert "Isolation: contained" in second["log"]
    assert "not contained" not in second["log"]
    assert victim.stat().st_uid == os.getuid()
    assert _seen(box, "link").strip() == "1"  # a real directory again


def test_no_jail_spec_with_the_api_key_is_left_behind(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    """The jail's spec holds the agent's environment (the API key): gone once the jail read it,
    before the agent starts, so the agent never finds it (and nothing later does)."""
    out = _run(box, capsys, "find / -name 'box-spec.json' 2>/dev/null > $SEEN/found")
    assert out["conclusion"] == "success", out["log"]
    assert _seen(box, "found") == ""
    assert list(box.runner_temp.rglob("box-spec.json")) == []


def test_the_transcript_cannot_be_replaced(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = box.base / "out"
    out_dir.mkdir()
    transcript = out_dir / "transcript.jsonl"
    body = (f"sleep 0.3; echo forged > {transcript} 2>/dev/null; echo $? > $SEEN/write;"
            f" rm -f {transcript} 2>/dev/null")
    out = _run(box, capsys, body, "--transcript", str(transcript))
    assert out["conclusion"] == "success", out["log"]
    assert _seen(box, "write").strip() != "0"
    assert b"forged" not in transcript.read_bytes()
    assert SESSION.encode() in transcript.read_bytes()


def test_cancellation_and_timeout_still_end_a_contained_run(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = _agent(box, "sleep 600")
    output = box.base / "timeout-outputs.txt"
    started = time.monotonic()
    code = main(["run", "--agent-bin", str(agent), "--working-directory", str(box.workspace),
                 "--output-file", str(output), "--summary-file", os.devnull, "--prompt", "x",
                 "--timeout-minutes", "0.02"])
    assert code == 1
    assert parse_output_file(output.read_text())["conclusion"] == "timeout"
    assert time.monotonic() - started < 15
    assert processes_of(TEST_AGENT_USER) == []


# -- the fallback: no root, no sudo -------------------------------------------------------------


@pytest.fixture
def unprivileged(tmp_path: Path) -> Path:
    """A helper venv a user other than root can run, as setup-helper.sh makes it: the system
    Python, the package, its compiled dependency and h11 copied in, under a world-readable
    path."""
    if not SYSTEM_PYTHON:
        pytest.skip("needs a system Python every user can run")
    venv = tmp_path / "helper-venv"
    subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", purelib],
                               capture_output=True, text=True, check=True).stdout.strip())
    shutil.copytree(Path(__file__).resolve().parents[2] / "src" / "cursor_agent_action",
                    site / "cursor_agent_action",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    import h11  # the network wall's relay reads plain HTTP with it (run.txt has it)
    import orjson

    for module in (orjson, h11):
        source = Path(module.__file__ or "").parent
        shutil.copytree(source, site / source.name, ignore=shutil.ignore_patterns("__pycache__"))
    for path in [tmp_path, *tmp_path.parents]:
        if path != Path("/"):
            path.chmod(path.stat().st_mode | 0o001)
    subprocess.run(["chmod", "-R", "a+rX", str(venv)], check=True)
    return venv


def _as_runner(
    venv: Path, box: Box, user_name: str, *args: str
) -> subprocess.CompletedProcess[str]:
    user = ensure_user(user_name)
    subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(box.base),
                    str(box.home)], check=True)  # fmt: skip
    agent = _agent(box, "echo ran > $SEEN/ran; id -u > $SEEN/uid")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(box.home),
           "RUNNER_TEMP": str(box.base / "runner-temp"), "CURSOR_API_KEY": "k_fallback_1234",
           "CURSOR_AGENT_ACTION_AGENT_USER": TEST_AGENT_USER,
           "CURSOR_AGENT_ACTION_BOX_SHARE": str(box.seen)}
    return subprocess.run(
        ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups",
         str(venv / "bin" / "python"), "-I", "-m", "cursor_agent_action", "run", "--agent-bin",
         str(agent), "--working-directory", str(box.workspace), "--prompt", "x", "--output-file",
         str(box.base / "fallback-outputs.txt"), "--summary-file",
         str(box.base / "fallback-summary.md"), *args],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture
def sudoer() -> Iterator[str]:
    """A runner user with passwordless sudo, as on GitHub-hosted runners; its sudoers entry
    goes after the test."""
    if not shutil.which("sudo"):
        pytest.skip("sudo is not installed (.ci/run installs it)")
    rule = SUDOERS / TEST_SUDO_USER
    rule.write_text(f"{TEST_SUDO_USER} ALL=(ALL) NOPASSWD: ALL\n")
    rule.chmod(0o440)
    try:
        yield TEST_SUDO_USER
    finally:
        rule.unlink(missing_ok=True)


def test_a_runner_user_with_passwordless_sudo_gets_the_agent_contained(
    box: Box, unprivileged: Path, sudoer: str
) -> None:
    """The helper stays the runner's user; only the jail runs as root (sudo -n)."""
    done = _as_runner(unprivileged, box, sudoer, "--isolation", "user")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Isolation: contained" in done.stdout
    runner_uid = ensure_user(sudoer).pw_uid
    assert int(_seen(box, "uid")) not in (0, runner_uid)
    owners = {p.lstat().st_uid for p in box.workspace.rglob("*")}
    assert owners == {runner_uid}  # the runner's again, not root's, not the agent's
    # Nothing the box left in RUNNER_TEMP (its empty mount point, the chats it keeps for
    # --resume) is beyond the runner's own clean-up.
    user = ensure_user(sudoer)
    cleanup = subprocess.run(["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
                              "--clear-groups", "rm", "-rf", str(box.base / "runner-temp")],
                             capture_output=True, text=True, timeout=60, check=False)
    assert cleanup.returncode == 0, cleanup.stderr


def test_auto_without_root_or_sudo_warns_and_runs(box: Box, unprivileged: Path) -> None:
    done = _as_runner(unprivileged, box, TEST_RUNNER_USER)
    assert done.returncode == 0, done.stdout + done.stderr
    warning = next(line for line in done.stdout.splitlines()
                   if line.startswith("::warning title=agent not contained::"))
    assert warning.startswith("::warning title=agent not contained::Running the agent without "
                              "the box, as the runner's user, on the real working tree, because "
                              "the helper is not root and 'sudo -n' does not work")
    assert len(warning) < 400  # one short line: the whole text is in the summary (issue 42)
    summary = (box.base / "fallback-summary.md").read_text()
    assert "Missing protections" in summary
    assert "Fix: give the runner's user passwordless sudo" in summary.replace("\n", " ")
    assert max(map(len, summary.splitlines())) <= 200
    assert (box.seen / "ran").exists()
    outputs = parse_output_file((box.base / "fallback-outputs.txt").read_text())
    assert outputs["conclusion"] == "success"


def test_isolation_user_without_root_or_sudo_fails_before_the_agent_starts(
    box: Box, unprivileged: Path
) -> None:
    done = _as_runner(unprivileged, box, TEST_RUNNER_USER, "--isolation", "user")
    assert done.returncode == 3
    assert "::error title=setup failed::isolation is user, but the agent cannot be contained" \
           in done.stdout
    assert "Fix:" in done.stdout
    assert not (box.seen / "ran").exists()


def test_the_agent_cannot_change_the_mcp_servers_the_workflow_gave_it(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    """mcp-config lands in the agent's home as root's file: the agent reads it, cannot write
    it in place, and what it plants at that place (after moving it aside) is gone before the
    next run, which sees no MCP file at all without mcp-config."""
    config = '{"mcpServers": {"docs": {"url": "http://127.0.0.1:9/mcp"}}}'
    body = ('cat $HOME/.cursor/mcp.json > $SEEN/read; '
            'echo \'{"mcpServers": {"evil": {"command": "sh"}}}\' > $HOME/.cursor/mcp.json '
            '2>/dev/null; echo $? > $SEEN/write; '
            'mv $HOME/.cursor $HOME/.cursor-aside && mkdir $HOME/.cursor && '
            'echo \'{"mcpServers": {"evil": {"command": "sh"}}}\' > $HOME/.cursor/mcp.json')
    out = _run(box, capsys, body, "--mcp-config", config)
    assert out["conclusion"] == "success", out["log"]
    assert '"docs"' in _seen(box, "read")
    assert _seen(box, "write").strip() != "0"
    out = _run(box, capsys, 'cat $HOME/.cursor/mcp.json > $SEEN/next 2>/dev/null; true')
    assert out["conclusion"] == "success", out["log"]
    assert _seen(box, "next") == ""
