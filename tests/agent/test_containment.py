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

from cursor_agent_action.agent.contain import landlock
from cursor_agent_action.cli import main
from cursor_agent_action.output_file import parse_output_file
from tests.support.box import SESSION, TOKEN, Box, as_runner
from tests.support.box import agent as _agent
from tests.support.box import run as _run
from tests.support.box import seen as _seen
from tests.support.standin import processes_of
from tests.support.users import (
    NO_USER_NAMESPACES,
    SUDOERS,
    TEST_AGENT_USER,
    TEST_RUNNER_USER,
    TEST_SUDO_USER,
    ensure_user,
    remove_user,
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
    done = as_runner(unprivileged, box, sudoer, "--isolation", "user")
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
    """Sudo installed, no entry for the runner's user: 'asks for a password', with the sudoers
    line to add (without sudo on the machine: 'not installed', with how to install it); with
    user namespaces turned off, the agent runs under Landlock as the runner's own user
    (uncontained where the kernel has no Landlock)."""
    done = as_runner(unprivileged, box, TEST_RUNNER_USER,
                      wrap=[sys.executable, "-I", "-c", NO_USER_NAMESPACES])
    assert done.returncode == 0, done.stdout + done.stderr
    why, fix = (("sudo asks for a password ('sudo -n' answered: a password is required): the "
                 f"runner's user {TEST_RUNNER_USER} has no sudoers entry, or one without NOPASSWD",
                 "Fix: give the runner's user passwordless sudo: a sudoers line such as "
                 f"'{TEST_RUNNER_USER} ALL=(root) NOPASSWD: ALL'")
                if shutil.which("sudo") else
                ("sudo is not installed", "Fix: install sudo (apt-get install sudo)"))
    if landlock.abi() >= 1:
        assert "::warning title=agent under Landlock%2C no box::Running the agent under " \
               "Landlock as the runner's own user" in done.stdout
        assert f", because the helper is not root and {why}" in done.stdout
    else:
        assert "::warning title=agent not contained::Running the agent without the box, " \
               f"because the helper is not root and {why}" in done.stdout
        assert "Missing protections" in done.stdout
    assert fix in done.stdout  # the whole warning is in the log
    # The annotation is one short line; the whole warning is in the summary too (issue 42).
    (warning,) = [line for line in done.stdout.splitlines()
                  if line.startswith("::warning title=agent")]
    assert len(warning) < 400
    summary = (box.base / "fallback-summary.md").read_text()
    assert fix in summary.replace("\n", " ").replace("\\", "")
    assert max(len(line) for line in summary.splitlines() if not line.startswith("|")) <= 200
    assert (box.seen / "ran").exists()
    outputs = parse_output_file((box.base / "fallback-outputs.txt").read_text())
    assert outputs["conclusion"] == "success"


RUNNER_SECRETS = (".ssh/id_ed25519", ".aws/credentials", ".git-credentials", ".netrc",
                  ".config/gh/hosts.yml", ".docker/config.json", ".npmrc", ".pypirc")
RUNNER_ROOT_SECRETS = (".runner", ".credentials", ".credentials_rsaparams", "_diag/Runner_1.log")


@pytest.mark.parametrize("namespaces", [False], ids=["none-allowed"])
def test_as_a_runner_user_without_sudo_the_agent_is_landlocked_as_that_user(
    box: Box, unprivileged: Path, namespaces: bool
) -> None:
    """The attack, on a self-hosted runner without sudo (a user made for this test, and
    removed): the agent reads the runner's credentials (its home's and the runner's own
    .runner, .credentials, _diag), the file commands, the environment of a process of the
    runner's; writes into the home, the real tree, the runner's _work and /tmp; kills that
    process; leaves a sleeper and a System V segment. Before: it ran as the runner's user on
    the real tree and did all of it. Now each fails, with user namespaces (then in its own
    user, PID, mount and IPC namespaces) and with them turned off (user.max_user_namespaces 0,
    for this run alone: plain Landlock, the summary saying why); its change to its copy comes
    back. (Where a user namespace can be made, this runner gets the whole box in it:
    tests/agent/test_userns_box.py; Landlock in namespaces is its fallback.)"""
    if landlock.abi() < 1:
        pytest.skip("this kernel has no Landlock")
    name = f"{TEST_AGENT_USER}-rnr"[:32]
    marker = f"300.{os.getpid()}"  # the sleeper, found by its command line
    runner_root = box.base / "actions-runner"
    work = runner_root / "_work"
    (work / "repo").mkdir(parents=True)
    planted = Path(f"/tmp/{name}-planted")  # the runner's real /tmp
    commands = box.base / "runner-temp" / "_runner_file_commands"
    commands.mkdir(parents=True)
    github_env = commands / "set_env_1"
    github_env.write_text("KEEP=1\n")
    secrets = [box.home / rel for rel in RUNNER_SECRETS]
    secrets += [runner_root / rel for rel in RUNNER_ROOT_SECRETS]
    for path in secrets:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{TOKEN} {path.name}\n")
    user = ensure_user(name)
    runner_process = subprocess.Popen(  # a process of the runner's: the listener, say
        ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups",
         "sleep", "300"], env={"RUNNER_SECRET": TOKEN, "PATH": "/usr/bin:/bin"})
    reads = "; ".join(f"cat {path} >> $SEEN/read 2>/dev/null" for path in secrets)
    writes = "; ".join(f"echo planted >> {path} 2>/dev/null" for path in (
        box.home / "planted", box.workspace / "src" / "app.py", work / "planted", planted,
        github_env))
    body = (f"{reads}; {writes}; "
            f"cat /proc/{runner_process.pid}/environ >> $SEEN/read 2>/dev/null; "
            f"kill -9 {runner_process.pid} 2>/dev/null; echo $? > $SEEN/signal; "
            f'(setsid sh -c "sleep {marker} &" &); sleep 0.3; '
            "ipcmk -M 4096 > $SEEN/shm 2>&1; "
            "echo landlocked >> README.md; id -u > $SEEN/uid")
    try:
        done = as_runner(unprivileged, box, name, "--preset", "edit", "--summary-file",
                          str(box.base / "summary.md"), body=body,
                          env={"RUNNER_WORKSPACE": str(work / "repo"), "GITHUB_TOKEN": TOKEN,
                               "GITHUB_ENV": str(github_env)},
                          wrap=[] if namespaces else [sys.executable, "-I", "-c",
                                                      NO_USER_NAMESPACES])
        alive = runner_process.poll() is None
        left = [line for line in Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
                if line.split()[7] == str(user.pw_uid)]
        sleepers = [pid for pid in processes_of(name)
                    if marker in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")]
    finally:
        planted.unlink(missing_ok=True)
        runner_process.kill()
        runner_process.wait(timeout=10)
        for pid in processes_of(name):  # before the fix: the sleeper
            os.kill(pid, 9)
        remove_user(name)
    assert done.returncode == 0, done.stdout + done.stderr
    assert int(_seen(box, "uid")) == user.pw_uid  # the runner's own user: no other exists here
    assert TOKEN not in _seen(box, "read"), _seen(box, "read") + done.stdout
    assert alive
    assert _seen(box, "signal").strip() != "0"
    assert not (box.home / "planted").exists()
    assert not (work / "planted").exists()
    assert not planted.exists()
    assert github_env.read_text() == "KEEP=1\n"
    assert (box.workspace / "src" / "app.py").read_text() == "print('hi')\n"
    assert (box.workspace / "README.md").read_text().endswith("landlocked\n")
    assert sleepers == []
    assert "id:" in _seen(box, "shm")
    assert left == []
    outputs = parse_output_file((box.base / "fallback-outputs.txt").read_text())
    assert outputs["conclusion"] == "success"
    assert outputs["files-changed"] == '["README.md"]'
    summary = (box.base / "summary.md").read_text()
    assert f"**Isolation:** landlock as the runner's own user ({name};" in summary
    if namespaces:
        assert "own user, PID, mount and IPC namespaces" in summary
    else:
        assert "no namespaces: user namespaces are turned off (user.max\\_user\\_namespaces " \
               "is 0)" in summary, summary


def _sudo_check_as(venv: Path, user_name: str, *, path: str = "/usr/bin:/bin",
                   no_new_privs: bool = False) -> str:
    """What the helper's sudo check says when ``user_name`` runs it."""
    user = ensure_user(user_name)
    code = ("from cursor_agent_action.agent.contain import sudo; c = sudo.check(); "
            "print(c.state); print(c.why_not); print(c.fix)")
    done = subprocess.run(
        [shutil.which("setpriv") or "setpriv", f"--reuid={user.pw_uid}",
         f"--regid={user.pw_gid}", "--clear-groups", *(["--no-new-privs"] if no_new_privs else []),
         str(venv / "bin" / "python"), "-I", "-c", code],
        env={"PATH": path}, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_sudo_missing_asking_for_a_password_and_refusing_are_told_apart(
    unprivileged: Path, sudoer: str, tmp_path: Path
) -> None:
    """Before: all three said "'sudo -n' does not work (no passwordless sudo ...)". Now each
    its own cause and fix: sudo not on PATH; no sudoers entry (a password is required); an
    entry with NOPASSWD that sudo still refuses (the no-new-privileges flag, as in a container
    started with it)."""
    empty = tmp_path / "no-sudo-here"
    empty.mkdir()
    empty.chmod(0o755)
    missing = _sudo_check_as(unprivileged, TEST_RUNNER_USER, path=str(empty))
    assert missing.startswith("missing\nsudo is not installed")
    assert "install sudo (apt-get install sudo)" in missing
    password = _sudo_check_as(unprivileged, TEST_RUNNER_USER)
    assert password.startswith("password\nsudo asks for a password")
    assert f"'{TEST_RUNNER_USER} ALL=(root) NOPASSWD: ALL'" in password
    refused = _sudo_check_as(unprivileged, sudoer, no_new_privs=True)
    assert refused.startswith("refused\nsudo refused ('sudo -n true' answered: The \"no new "
                              "privileges\" flag is set"), refused
    assert "without the no-new-privileges flag" in refused
    assert _sudo_check_as(unprivileged, sudoer).startswith("works\n")


def test_isolation_user_without_root_or_sudo_fails_before_the_agent_starts(
    box: Box, unprivileged: Path
) -> None:
    """No root, no sudo, and no user namespace (turned off for this run alone)."""
    done = as_runner(unprivileged, box, TEST_RUNNER_USER, "--isolation", "user",
                      wrap=[sys.executable, "-I", "-c", NO_USER_NAMESPACES])
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


@pytest.mark.parametrize("namespaces", [True, False], ids=["user-namespaces", "none-allowed"])
def test_as_the_runners_user_its_temp_and_runtime_files_stay_out_of_reach(
    box: Box, unprivileged: Path, namespaces: bool
) -> None:
    """Red team (R2-3): as the runner's own user, the agent read the runner's mode-600 files
    outside the masked places: a registry login in ``$XDG_RUNTIME_DIR/containers/auth.json``
    (podman's, buildah's and skopeo's default) and files in the real ``/tmp``, ``/var/tmp``
    and ``/dev/shm``. Now those places are closed (its ``TMPDIR`` is its own), with user
    namespaces and without."""
    if landlock.abi() < 1:
        pytest.skip("this kernel has no Landlock")
    name = f"{TEST_AGENT_USER}-r23"[:32]
    user = ensure_user(name)
    runtime = Path(f"/run/user/{user.pw_uid}")
    made_runtime = not runtime.exists()
    planted = {
        "runtime": runtime / "containers" / "auth.json",
        "var-tmp": Path(f"/var/tmp/{name}-secret"),
        "dev-shm": Path(f"/dev/shm/{name}-secret"),
        "tmp": Path(f"/tmp/{name}-secret"),
    }
    try:
        for label, path in planted.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{TOKEN} {label}\n")
            os.chown(path, user.pw_uid, user.pw_gid)
            path.chmod(0o600)
        for directory in (runtime, runtime / "containers"):
            os.chown(directory, user.pw_uid, user.pw_gid)
        runtime.chmod(0o700)
        reads = "; ".join(f"cat {path} >> $SEEN/read 2>&1" for path in planted.values())
        done = as_runner(unprivileged, box, name, "--summary-file",
                          str(box.base / "summary.md"),
                          body=f"{reads}; echo ok > $TMPDIR/mine && cat $TMPDIR/mine > $SEEN/own",
                          env={"XDG_RUNTIME_DIR": str(runtime)},
                          wrap=[] if namespaces else [sys.executable, "-I", "-c",
                                                      NO_USER_NAMESPACES])
    finally:
        for path in planted.values():
            path.unlink(missing_ok=True)
        if made_runtime:
            shutil.rmtree(runtime, ignore_errors=True)
        remove_user(name)
    assert done.returncode == 0, done.stdout + done.stderr
    read = _seen(box, "read")
    assert [label for label in planted if f"{TOKEN} {label}" in read] == [], read
    assert _seen(box, "own").strip() == "ok"  # its own temporary directory works
