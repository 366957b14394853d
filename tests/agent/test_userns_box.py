"""The box in an unprivileged user namespace (issue 48, tier 1a): a self-hosted runner's user,
no root and no sudo entry, gets the whole box (user, mount, PID, IPC and network namespaces,
the overlay, the masks, the network wall through the relay outside), played for real: the
helper runs as a user made for the test (and removed), through ``setpriv``.

Before: the same runner got tier 1b (Landlock as its own user), with no network wall, so the
agent reached every loopback service and the summary named Landlock.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from cursor_agent_action.agent.contain import isolation, landlock, sudo, userns
from cursor_agent_action.agent.contain.probe import ProbeResult
from cursor_agent_action.errors import SetupError
from cursor_agent_action.output_file import parse_output_file
from tests.support.box import TOKEN, Box, seen
from tests.support.box import as_runner as box_as_runner
from tests.support.netbox import http_host, loopback_name, servers
from tests.support.standin import processes_of
from tests.support.users import (
    NO_USER_NAMESPACES,
    WORKER,
    ensure_user,
    remove_user,
)

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not sys.platform.startswith("linux"),
    reason="the runner's user is made by root on Linux (CI here is root)",
)

RUNNER = f"caa-i48u-runner-{WORKER}" if WORKER else "caa-i48u-runner"
"""The self-hosted runner's user (made and removed by each test; one per xdist worker)."""
ALLOWED = "caa-i48u-allowed.example"
HOME_SECRETS = (".ssh/id_ed25519", ".aws/credentials", ".git-credentials", ".netrc",
                ".config/gh/hosts.yml", ".docker/config.json", ".npmrc", ".pypirc")
RUNNER_ROOT_SECRETS = (".runner", ".credentials", ".credentials_rsaparams", "_diag/Runner_1.log")
TIER = "**Isolation:** contained in a user namespace (the runner's own user"


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A test's directory outside pytest's own (``/tmp/pytest-of-root`` is made 0700 again
    whenever any pytest session on the machine starts: the runner's user would lose its way
    to its files mid-run), world-traversable, removed after."""
    path = Path(tempfile.mkdtemp(prefix="caa-i48u-test-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def runner_user() -> Iterator[str]:
    """The runner's user: no sudo entry, no group but its own; removed after the test, with
    anything it left running."""
    ensure_user(RUNNER)
    try:
        yield RUNNER
    finally:
        for pid in processes_of(RUNNER):
            os.kill(pid, 9)
        remove_user(RUNNER)


def as_runner(venv: Path, box: Box, name: str, body: str, *args: str,
              env: dict[str, str] | None = None,
              wrap: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """The helper's ``run`` as the runner's user ``name`` (no sudo), the agent ``body``."""
    return box_as_runner(venv, box, name, "--timeout-minutes", "1", *args, body=body,
                         env={"LC_ALL": "C.UTF-8", "CURSOR_API_KEY": "k_userns_1234",
                              **(env or {})}, wrap=wrap, prefix="")


def fetch(target: str, port: int) -> str:
    """Shell that asks ``target:port`` for / over HTTP (bash's /dev/tcp: no curl needed)."""
    return (f"bash -c 'exec 3<>/dev/tcp/{target}/{port} && printf \"GET / HTTP/1.1\\r\\nHost: "
            f"{target}\\r\\nConnection: close\\r\\n\\r\\n\" >&3 && timeout 5 cat <&3' ")


@dataclass(frozen=True)
class Planted:
    """The runner's files the agent goes for: credentials, and places it must not write."""

    secrets: list[Path]
    writes: list[Path]
    github_env: Path
    runner_root: Path
    seen: str


def plant(box: Box) -> Planted:
    """The runner's credentials (its home's, and its own directory's .runner, .credentials,
    _diag), a file command, and the places the agent will try to write."""
    runner_root = box.base / "actions-runner"
    work = runner_root / "_work"
    (work / "repo").mkdir(parents=True)
    commands = box.base / "runner-temp" / "_runner_file_commands"
    commands.mkdir(parents=True)
    github_env = commands / "set_env_1"
    github_env.write_text("KEEP=1\n")
    secrets = [box.home / rel for rel in HOME_SECRETS]
    secrets += [runner_root / rel for rel in RUNNER_ROOT_SECRETS]
    for path in secrets:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{TOKEN} {path.name}\n")
    writes = [box.home / "planted", work / "planted", Path(f"/tmp/{RUNNER}-planted"),
              github_env, runner_root / ".runner"]
    return Planted(secrets, writes, github_env, runner_root, str(box.seen))


def attack(planted: Planted, victim: int) -> str:
    """Shell that reads every secret and the environment of the runner's process ``victim``
    into $SEEN/read, writes every place, and signals ``victim``."""
    reads = "; ".join(f"cat {path} >> $SEEN/read 2>/dev/null" for path in planted.secrets)
    writes = "; ".join(f"echo planted >> {path} 2>/dev/null" for path in planted.writes)
    # In a user and mount namespace of its own making, it holds every capability: it unmounts
    # the masks over the runner's home and directory (the kernel keeps them: locked).
    home = planted.secrets[0].parents[1]
    unmount = "; ".join(f"umount -l {path}" for path in ("/tmp", home, planted.runner_root))
    nested = (f"unshare -Urm sh -c '{unmount}; {reads.replace('$SEEN', planted.seen)}' "
              "2>> $SEEN/nested")
    return (f"{reads}; {writes}; cat /proc/{victim}/environ >> $SEEN/read 2>/dev/null; "
            f"kill -9 {victim} 2>/dev/null; echo $? > $SEEN/signal; {nested}; "
            "echo $? >> $SEEN/nested")


def held(box: Box, planted: Planted) -> None:
    """Nothing of the attack got through."""
    assert TOKEN not in seen(box, "read"), seen(box, "read")
    assert "umount" in seen(box, "nested"), seen(box, "nested")  # it tried, and was refused
    assert seen(box, "signal").strip() != "0"
    assert not any(path.exists() for path in planted.writes[:3])
    assert planted.github_env.read_text() == "KEEP=1\n"
    assert (planted.runner_root / ".runner").read_text() == f"{TOKEN} .runner\n"


def test_a_runner_without_sudo_gets_the_whole_box_in_a_user_namespace(
    box: Box, unprivileged: Path, runner_user: str
) -> None:
    """The attack, on a self-hosted runner without sudo: the agent reads the runner's
    credentials (its home's, and the runner's own .runner, .credentials, _diag), writes into
    the runner's home, its _work, /tmp and the file commands, reaches a service on the
    runner's loopback, and the environment of a process of the runner's. Each fails; the
    allowed name is reached through the relay; its change comes back and is applied; the
    summary names the tier. Before: tier 1b, with no network wall (the loopback service
    answered) and the summary naming Landlock."""
    planted = plant(box)
    user = ensure_user(runner_user)
    runner_process = subprocess.Popen(  # a process of the runner's: the listener, say
        ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups",
         "sleep", "300"], env={"RUNNER_SECRET": TOKEN, "PATH": "/usr/bin:/bin"})
    try:
        with loopback_name(ALLOWED), servers(http_host, http_host) as (allowed, other):
            body = (f"{attack(planted, runner_process.pid)}; "
                    f"{fetch('127.0.0.1', other.port)} > $SEEN/loopback 2>&1; "
                    f"{fetch(ALLOWED, allowed.port)} > $SEEN/allowed 2>&1; "
                    "echo boxed >> README.md; id -u > $SEEN/uid; true")
            done = as_runner(unprivileged, box, runner_user, body, "--preset", "edit",
                             "--allowed-domains", f"{ALLOWED}:{allowed.port}",
                             env={"GITHUB_TOKEN": TOKEN, "GITHUB_ENV": str(planted.github_env),
                                  "RUNNER_WORKSPACE": str(planted.runner_root / "_work/repo")})
            reached_other, reached_allowed = other.connections, allowed.connections
        alive = runner_process.poll() is None
    finally:
        planted.writes[2].unlink(missing_ok=True)
        runner_process.kill()
        runner_process.wait(timeout=10)
    assert done.returncode == 0, done.stdout + done.stderr
    assert reached_other == 0, seen(box, "loopback")  # before: the runner's loopback answered
    summary = (box.base / "summary.md").read_text()
    assert TIER in summary, summary
    assert "an overlay in the box's user namespace" in summary  # not the copy
    assert int(seen(box, "uid")) == user.pw_uid  # the runner's own uid, mapped to itself
    held(box, planted)
    assert alive
    assert "host=" not in seen(box, "loopback")
    assert reached_allowed == 1, seen(box, "allowed") + done.stdout
    assert f"host={ALLOWED}" in seen(box, "allowed")
    assert (box.workspace / "README.md").read_text() == "# demo\nboxed\n"
    owners = {path.lstat().st_uid for path in box.workspace.rglob("*")}
    assert owners == {user.pw_uid}  # the change applied as the runner's user
    outputs = parse_output_file((box.base / "outputs.txt").read_text())
    assert outputs["conclusion"] == "success"
    assert outputs["files-changed"] == '["README.md"]'
    assert processes_of(runner_user) == []


def test_with_user_namespaces_off_the_runner_falls_back_to_landlock_and_says_why(
    box: Box, unprivileged: Path, runner_user: str
) -> None:
    """user.max_user_namespaces 0 (for this run alone): tier 1b, the summary naming the
    sysctl and its fix; ``isolation: user`` fails before the agent starts."""
    if landlock.abi() < 1:
        pytest.skip("this kernel has no Landlock")
    wrap = [sys.executable, "-I", "-c", NO_USER_NAMESPACES]
    done = as_runner(unprivileged, box, runner_user, "echo ran > $SEEN/ran; echo lock >> README.md",
                     "--preset", "edit", wrap=wrap)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = (box.base / "summary.md").read_text()
    assert f"**Isolation:** landlock as the runner's own user ({runner_user};" in summary
    assert "no namespaces: user namespaces are turned off (user.max\\_user\\_namespaces is 0)" \
        in summary, summary
    assert "user.max\\_user\\_namespaces to a positive number" in summary
    assert (box.workspace / "README.md").read_text() == "# demo\nlock\n"
    (box.seen / "ran").unlink()
    refused = as_runner(unprivileged, box, runner_user, "echo ran > $SEEN/ran", "--isolation",
                        "user", wrap=wrap)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert "isolation is user, but the agent cannot be contained here" in refused.stdout
    assert "user namespaces are turned off (user.max_user_namespaces is 0)" in refused.stdout
    assert not (box.seen / "ran").exists()


def test_isolation_user_holds_on_a_runner_without_sudo_when_a_user_namespace_can_be_made(
    box: Box, unprivileged: Path, runner_user: str
) -> None:
    """Before: ``isolation: user`` failed on every runner without root or sudo. Now the box in
    a user namespace counts: the run succeeds, contained."""
    done = as_runner(unprivileged, box, runner_user, "echo ran > $SEEN/ran", "--isolation",
                     "user")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (box.seen / "ran").exists()
    assert TIER in (box.base / "summary.md").read_text()


@contextlib.contextmanager
def runner_service(user: str, address: str) -> Iterator[str]:
    """A service of the runner's user on the unix socket ``address`` (a path, made 0600, or
    ``\\0name``, abstract) that answers one connection with ``runner-secret``; yields the
    agent's shell that connects to it and writes what it got into $SEEN/unix."""
    entry = ensure_user(user)
    listener = subprocess.Popen(
        ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups",
         sys.executable, "-I", "-c",
         f"import os, socket; s = socket.socket(socket.AF_UNIX); s.bind({address!r}); "
         f"{address!r}.startswith('/') and os.chmod({address!r}, 0o600); s.listen(); "
         "print('up', flush=True); s.settimeout(60); c, _ = s.accept(); "
         "c.sendall(b'runner-secret'); c.close()"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout is not None
        assert listener.stdout.readline() == "up\n"
        yield ("python3 -I -c \"import socket; s = socket.socket(socket.AF_UNIX); "
               f"s.connect({address!r}); print(s.recv(64))\" > $SEEN/unix 2>&1; true")
    finally:
        listener.kill()
        listener.wait(timeout=10)


def test_on_an_open_network_the_box_in_a_user_namespace_reaches_no_unix_socket_of_the_host(
    box: Box, unprivileged: Path, runner_user: str
) -> None:
    """With ``network: open`` the box has no network namespace, so the host's abstract unix
    sockets are in the agent's (shared) namespace, and it is the runner's uid: a service of
    the runner's listening there (a user bus, an agent socket) answers it. Before: it
    connected. Now the box's seccomp filter refuses every unix socket there (as in the
    Landlock tiers); the run itself succeeds."""
    with runner_service(runner_user, f"\0caa-i48u-abstract-{os.getpid()}") as body:
        done = as_runner(unprivileged, box, runner_user, body, "--network", "open")
    assert done.returncode == 0, done.stdout + done.stderr
    assert TIER in (box.base / "summary.md").read_text()
    assert "runner-secret" not in seen(box, "unix")
    assert "Permission denied" in seen(box, "unix"), seen(box, "unix")


KNOBS = ("MAX_USER_NAMESPACES", "UNPRIVILEGED_CLONE", "APPARMOR_RESTRICT")


@pytest.mark.parametrize(("knob", "value", "why_fix"), [
    ("MAX_USER_NAMESPACES", "0", ("user namespaces are turned off (user.max_user_namespaces is "
                                  "0)", "set the sysctl user.max_user_namespaces to a positive")),
    ("UNPRIVILEGED_CLONE", "0", ("(kernel.unprivileged_userns_clone is 0)",
                                 "set the sysctl kernel.unprivileged_userns_clone to 1")),
    ("APPARMOR_RESTRICT", "1", ("AppArmor restricts unprivileged user namespaces (Ubuntu 23.10 "
                                "and later, 24.04 included", "set the sysctl kernel.apparmor_"
                                "restrict_unprivileged_userns to 0, or load an AppArmor profile")),
], ids=["max-user-namespaces", "debian-clone", "ubuntu-apparmor"])
def test_where_no_user_namespace_can_be_made_the_reason_and_its_fix_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, knob: str, value: str,
    why_fix: tuple[str, str],
) -> None:
    """Each setting that keeps the runner's user from the box in a user namespace, named with
    its fix: in the 1b tier's summary (``auto``) and in the error of ``isolation: user``. The
    helper is played without root or sudo; the probe answers as it does on such a machine."""
    why, fix = why_fix
    (tmp_path / knob).write_text(f"{value}\n")
    with monkeypatch.context() as patch:
        _no_root_no_sudo_no_namespace(patch, tmp_path, knob)
        chosen = isolation.decide("auto")
    assert chosen.own_user
    assert chosen.landlock
    assert not chosen.user_box
    assert why in chosen.no_namespaces
    assert fix in chosen.no_namespaces
    assert "mounting a tmpfs failed: Permission denied" in chosen.label
    with monkeypatch.context() as patch:
        _no_root_no_sudo_no_namespace(patch, tmp_path, knob)
        with pytest.raises(SetupError) as raised:
            isolation.decide("user")
    assert why in raised.value.message
    assert fix in raised.value.hint


def _no_root_no_sudo_no_namespace(patch: pytest.MonkeyPatch, tmp_path: Path, knob: str) -> None:
    """The helper without root or sudo, the probe failing as where ``knob`` forbids it."""
    for name in KNOBS:
        patch.setattr(userns, name, tmp_path / (name if name == knob else f"{name}-absent"))
    failed = ProbeResult(False, "mounting a tmpfs", 13,
                         "mounting a tmpfs failed: Permission denied")
    patch.setattr(isolation, "probe_box", lambda **_: failed)
    patch.setattr(sudo, "check", lambda: sudo.SudoCheck(sudo.PASSWORD, "no"))
    patch.setattr(os, "geteuid", lambda: 4242)
    patch.setattr(landlock, "abi", lambda: 6)


def test_a_timed_out_agent_in_the_user_namespace_box_leaves_nothing_running(
    box: Box, unprivileged: Path, runner_user: str
) -> None:
    """The agent outlives its time and leaves a ``setsid`` double-forked sleeper: the run ends
    as a timeout within moments, and no process of the runner's user is left (the PID
    namespace's end takes them all, though they share the runner's uid)."""
    marker = f"301.{os.getpid()}"
    body = (f'(setsid sh -c "sleep {marker} &" &); sleep 0.3; echo started > $SEEN/started; '
            "sleep 300")
    started = time.monotonic()
    done = as_runner(unprivileged, box, runner_user, body, "--timeout-minutes", "0.03")
    took = time.monotonic() - started
    left = processes_of(runner_user)
    assert seen(box, "started") == "started\n", done.stdout + done.stderr
    assert done.returncode == 1, done.stdout + done.stderr
    outputs = parse_output_file((box.base / "outputs.txt").read_text())
    assert outputs["conclusion"] == "timeout"
    assert took < 30
    assert left == []


def test_a_socket_of_the_runner_s_own_outside_the_masks_is_out_of_the_agent_s_reach(
    box: Box, unprivileged: Path, runner_user: str
) -> None:
    """The agent is the runner's uid, so a service of the runner's listening on a unix socket
    of mode 0600 (a rootless daemon's, an agent's) would answer it: file permissions cannot
    stand between the two. Here the socket is in a directory the box shows again beneath a mask
    (the stand-in CLI's, revealed read-only under the masked /tmp). Before: the box skipped
    sockets under a mask and the agent read the service's answer. Now it is covered in the
    agent's view; the run succeeds."""
    user = ensure_user(runner_user)
    service = box.base / "runner-service"
    service.mkdir()
    os.chown(service, user.pw_uid, user.pw_gid)
    with runner_service(runner_user, str(service / "socket")) as body:
        done = as_runner(unprivileged, box, runner_user, body)
    assert done.returncode == 0, done.stdout + done.stderr
    assert TIER in (box.base / "summary.md").read_text()
    assert "runner-secret" not in seen(box, "unix"), seen(box, "unix")
    assert "Connection refused" in seen(box, "unix"), seen(box, "unix")


def test_where_the_box_in_a_user_namespace_cannot_be_set_up_auto_falls_to_landlock(
    box: Box, unprivileged: Path, runner_user: str
) -> None:
    """The probe made a user namespace, but the box could not be built: RUNNER_TEMP (where the
    agent's home goes) is reached through a symbolic link the box shows (in the CLI's directory),
    and the box refuses to make a mount point through a link. ``auto`` runs tier 1b instead,
    in its own namespaces, the summary saying why; the change comes back."""
    (box.base / "rt-real").mkdir()
    (box.base / "rt-link").symlink_to(box.base / "rt-real")
    done = as_runner(unprivileged, box, runner_user, "echo fell >> README.md", "--preset",
                     "edit", env={"RUNNER_TEMP": str(box.base / "rt-link" / "temp")})
    assert done.returncode == 0, done.stdout + done.stderr
    summary = (box.base / "summary.md").read_text()
    assert f"**Isolation:** landlock as the runner's own user ({runner_user}; own user, PID, " \
           "mount and IPC namespaces" in summary, summary
    assert "and the box in a user namespace could not be set up (" in summary.replace("\n", " ")
    assert "is a symbolic link" in summary.replace("\n", " ")
    assert (box.workspace / "README.md").read_text() == "# demo\nfell\n"
