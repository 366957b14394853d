"""Runner kinds, said plainly: before choosing, a throwaway process tries the box's namespaces
and mounts; when it cannot, the warning names the real cause and a fix that works there.

A container job (root without CAP_SYS_ADMIN, the default of ``container:`` jobs and of most
Kubernetes pods) is played by ``capsh --drop=cap_sys_admin``: the helper runs as root, the
capability gone from its bounding set. The other rows of docs/security.md's table: GitHub-hosted
(passwordless sudo) and self-hosted without sudo are in tests/agent/test_containment.py; a
non-Linux runner is the platform check below.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cursor_agent_action.agent.contain import isolation, landlock
from cursor_agent_action.agent.contain.probe import ProbeResult
from cursor_agent_action.errors import SetupError
from cursor_agent_action.output_file import parse_output_file
from tests.support.box import TOKEN, Box, make_box
from tests.support.box import agent as _agent
from tests.support.box import seen as _seen
from tests.support.users import TEST_AGENT_USER

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="plays root runners")
CAPSH = shutil.which("capsh") or shutil.which("capsh", path="/usr/sbin:/sbin") or ""
needs_capsh = pytest.mark.skipif(not CAPSH, reason="needs capsh (libcap2-bin)")


@pytest.fixture
def box(monkeypatch: pytest.MonkeyPatch) -> Iterator[Box]:
    """The box world in a directory others may pass through, as a runner's work directory
    (pytest's own base directory is 0700, and other sessions make it so again at any time)."""
    where = Path(tempfile.mkdtemp(prefix=f"{TEST_AGENT_USER}-kinds-"))
    where.chmod(0o711)
    try:
        yield from make_box(where, monkeypatch)
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _in_container(box: Box, *args: str, body: str = "echo ran > $SEEN/ran; id -u > $SEEN/uid",
                  env: dict[str, str] | None = None, closed: bool = False, prompt: str = "x",
                  ) -> subprocess.CompletedProcess[str]:
    """The helper as root without CAP_SYS_ADMIN, as in a container job."""
    if closed:  # the CLI in a directory others cannot enter
        box.base.chmod(box.base.stat().st_mode & ~0o001)
    agent = _agent(box, body)
    helper = [sys.executable, "-I", "-m", "cursor_agent_action", "run", "--agent-bin",
              str(agent), "--working-directory", str(box.workspace), "--prompt", prompt,
              "--output-file", str(box.base / "outputs.txt"), "--summary-file",
              str(box.base / "summary.md"), "--timeout-minutes", "1", *args]  # fmt: skip
    return subprocess.run(
        [CAPSH, "--drop=cap_sys_admin", "--", "-c", shlex.join(helper)],
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}:/usr/sbin:/usr/bin:/sbin:/bin",
             **(env or {})},
        capture_output=True, text=True, timeout=120, check=False,
    )


@ROOT_ONLY
def test_the_probe_makes_the_box_s_namespaces_as_root() -> None:
    assert isolation.probe_box(via_sudo=False).ok


@ROOT_ONLY
@needs_capsh
def test_the_probe_fails_without_cap_sys_admin_at_the_first_namespace() -> None:
    done = subprocess.run([CAPSH, "--drop=cap_sys_admin", "--", "-c",
                           f"{shlex.quote(sys.executable)} -I -m "
                           "cursor_agent_action.agent.contain.probe"],
                          capture_output=True, text=True, timeout=60, check=True)
    found = ProbeResult.from_json(done.stdout)
    assert not found.ok
    assert found.step == "unshare (mount namespace)"
    assert found.errno == 1  # EPERM


@ROOT_ONLY
@needs_capsh
def test_a_container_job_is_named_with_a_fix_that_works_there(box: Box) -> None:
    """Before: the run tried the box, failed inside it and warned 'run ... as root in a
    container job', the very place it failed. Now: the probe's cause, a fix that works there,
    and the agent under Landlock as its own user."""
    done = _in_container(box)
    assert done.returncode == 0, done.stdout + done.stderr
    warning = next(line for line in done.stdout.splitlines()
                   if line.startswith("::warning title=agent under Landlock%2C no box::"))
    assert "without CAP_SYS_ADMIN: a container job" in warning
    assert "--cap-add SYS_ADMIN" in warning
    assert "no container:" in warning
    assert "no network wall" in warning
    assert "as root in a container" not in warning
    assert "The agent is not contained" not in warning  # the title says it once
    assert int(_seen(box, "uid")) not in (0, os.getuid())  # its own user
    summary = (box.base / "summary.md").read_text()
    assert "**Isolation:** landlock (user" in summary
    assert "the box cannot be made here: unshare (mount namespace) failed" in summary
    assert "no network wall" in summary
    assert "No network wall: the agent ran under Landlock, not in the box" in summary
    assert "**Network:** no wall (Landlock, not the box)" in summary


SECRET_PLACES = {
    "home": "runner-home/.credentials", "temp": "runner-temp/_runner_file_commands/set_env",
    "root": "/root/.caa-t36b-probe", "gitconfig": "work/repo/.git/config",
}


@ROOT_ONLY
@needs_capsh
def test_under_landlock_the_agent_cannot_read_the_runner_s_home_temp_or_tokens(
    box: Box,
) -> None:
    """The attack: the agent reads the runner's home, RUNNER_TEMP (the file commands), a file
    of root's and the checkout's .git/config with a persisted token, then writes into the
    runner's home, a file command, the real .git's hooks and the real tree. Each fails; its
    own change in its copy comes back as the patch. (Proved: with the Landlock tier taken out,
    the same run as root read every one of them.)"""
    places = {name: (Path(where) if where.startswith("/") else box.base.parent / where)
              for name, where in SECRET_PLACES.items()}
    for name, path in places.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if name == "gitconfig":
            with path.open("a") as handle:
                handle.write('[http "https://github.com/"]\n\textraheader = AUTHORIZATION: '
                             f'basic {TOKEN}\n')
        else:
            path.write_text(f"{name}-{TOKEN}\n")
            path.chmod(0o644)
    try:
        reads = "; ".join(f"cat {shlex.quote(str(path))} > $SEEN/{name} 2>/dev/null"
                          for name, path in places.items())
        hook = box.workspace / ".git" / "hooks" / "post-checkout"
        writes = "; ".join(f"echo planted >> {shlex.quote(str(path))} 2>/dev/null" for path in (
            places["home"].parent / "planted", places["temp"], hook,
            box.workspace / "src" / "app.py"))
        body = f"{reads}; {writes}; echo landlocked >> README.md; id -u > $SEEN/uid"
        done = _in_container(box, "--preset", "edit", body=body)
    finally:
        places["root"].unlink(missing_ok=True)
    assert done.returncode == 0, done.stdout + done.stderr
    leaked = {name: _seen(box, name) for name in places if TOKEN in _seen(box, name)}
    assert leaked == {}
    assert not (places["home"].parent / "planted").exists()
    assert "planted" not in places["temp"].read_text()  # no BASH_ENV for later steps
    assert not hook.exists()  # nothing planted in the real .git
    assert (box.workspace / "src" / "app.py").read_text() == "print('hi')\n"
    assert int(_seen(box, "uid")) != 0
    assert (box.workspace / "README.md").read_text().endswith("landlocked\n")
    outputs = parse_output_file((box.base / "outputs.txt").read_text())
    assert outputs["files-changed"] == '["README.md"]'


@ROOT_ONLY
def test_without_landlock_a_root_helper_runs_the_agent_uncontained_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(isolation, "probe_box", lambda via_sudo: ProbeResult(
        False, "unshare (mount namespace)", 1, "unshare (mount namespace) failed"))
    monkeypatch.setattr(landlock, "abi", lambda: 0)
    chosen = isolation.decide("auto")
    assert not chosen.contained
    assert "unshare (mount namespace) failed" in chosen.why_not
    monkeypatch.setattr(landlock, "abi", lambda: 7)
    assert isolation.decide("auto").landlock


@ROOT_ONLY
@needs_capsh
def test_a_container_job_with_isolation_user_fails_before_the_agent_with_that_fix(
    box: Box,
) -> None:
    done = _in_container(box, "--isolation", "user")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "cannot be contained here: the box cannot be made here" in done.stdout
    assert "--cap-add SYS_ADMIN" in done.stdout
    assert _seen(box, "ran") == ""
    outputs = box.base / "outputs.txt"
    assert not outputs.exists() or "conclusion" not in parse_output_file(outputs.read_text())


def test_a_runner_that_is_not_linux_is_named_with_a_linux_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    chosen = isolation.decide("auto")
    assert not chosen.contained
    assert "this runner is darwin" in chosen.why_not
    assert "runs-on: ubuntu-latest" in chosen.fix
    with pytest.raises(SetupError, match="cannot be contained here") as caught:
        isolation.decide("user")
    assert "ubuntu-latest" in caught.value.hint


def test_a_box_refused_despite_cap_sys_admin_blames_the_profile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(isolation, "has_cap_sys_admin", lambda: True)
    why, fix = isolation.box_failure(ProbeResult(False, "unshare (mount namespace)", 1,
                                                 "unshare (mount namespace) failed"))
    assert "unshare (mount namespace) failed" in why
    assert "seccomp=unconfined" in fix
    assert "--cap-add" not in fix


def test_the_fallback_warning_does_not_stutter() -> None:
    text = isolation.fallback_warning(isolation.Isolation(False, why_not="a reason", fix="do X"))
    assert text.startswith("Running the agent without the box, because a reason.")
    assert "Fix: do X;" in text


@ROOT_ONLY
@needs_capsh
def test_under_landlock_nothing_the_agent_starts_outlives_the_run(box: Box) -> None:
    """No PID namespace here: a double-forked, setsid sleeper is killed by the agent's user id
    after the run (the box fixture checks no process of that user is left)."""
    body = ('(setsid sh -c "sleep 300 & echo \\$! > $SEEN/sleeper" &); sleep 0.3; '
            "id -u > $SEEN/uid")
    done = _in_container(box, body=body)
    assert done.returncode == 0, done.stdout + done.stderr
    sleeper = int(_seen(box, "sleeper"))
    assert not Path(f"/proc/{sleeper}").exists()


@ROOT_ONLY
@needs_capsh
def test_under_landlock_a_long_prompt_is_read_from_its_own_copy(box: Box) -> None:
    """A prompt over the command line's limit goes to a file in the helper's state, which the
    agent cannot reach: it gets a copy of its own, named in its instruction."""
    body = ('path=$(printf "%s" "$*" | grep -o "[^ ]*prompt\\.md" | head -n 1); '
            'echo "$path" > $SEEN/path; head -c 9 "$path" > $SEEN/head')
    done = _in_container(box, body=body, prompt="ninebytes" * 12_000)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "/files/" in _seen(box, "path"), done.stdout
    assert _seen(box, "head") == "ninebytes"


@ROOT_ONLY
@needs_capsh
@pytest.mark.alone  # it counts the Landlock areas every run leaves in the host's /tmp
def test_under_landlock_a_cli_the_agent_user_cannot_run_falls_back_before_it_starts(
    box: Box,
) -> None:
    """Said before the agent starts (so auto may still run it another way), not as a failed
    start."""
    areas = set(Path(tempfile.gettempdir()).glob("caa-lockdown-*"))
    done = _in_container(box, body="echo ran > $SEEN/ran", closed=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(Path(tempfile.gettempdir()).glob("caa-lockdown-*")) <= areas  # none left
    assert "cannot run the CLI at" in done.stdout
    warning = next(line for line in done.stdout.splitlines()
                   if line.startswith("::warning title=agent not contained::"))
    assert "Running the agent without the box" in warning
    assert "--cap-add SYS_ADMIN" in warning  # the fix for where it runs, not a generic one
    assert _seen(box, "ran") == "ran\n"
