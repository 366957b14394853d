"""Runner kinds, said plainly: before choosing, a throwaway process tries the box's namespaces
and mounts; when it cannot, the warning names the real cause and a fix that works there.

A container job (root without CAP_SYS_ADMIN, the default of ``container:`` jobs and of most
Kubernetes pods) is played by ``capsh --drop=cap_sys_admin``: the helper runs as root, the
capability gone from its bounding set. The other rows of docs/security.md's table: GitHub-hosted
(passwordless sudo) and self-hosted without sudo are in tests/agent/test_containment.py; a
non-Linux runner is the platform check below.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cursor_agent_action.agent.contain import isolation, landlock, probe
from cursor_agent_action.agent.contain.box import seccomp
from cursor_agent_action.agent.contain.probe import ProbeResult
from cursor_agent_action.errors import SetupError
from cursor_agent_action.output_file import parse_output_file
from tests.support.box import CAPSH, TOKEN, Box, in_container, passable_box
from tests.support.box import seen as _seen
from tests.support.users import TEST_AGENT_USER, user_exists

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="plays root runners")
needs_capsh = pytest.mark.skipif(not CAPSH, reason="needs capsh (libcap2-bin)")


@pytest.fixture
def box(monkeypatch: pytest.MonkeyPatch) -> Iterator[Box]:
    """The box world in a directory others may pass through, as a runner's work directory
    (pytest's own base directory is 0700, and other sessions make it so again at any time)."""
    yield from passable_box(monkeypatch, "kinds")


@ROOT_ONLY
def test_the_probe_makes_the_box_s_namespaces_as_root() -> None:
    assert probe.probe_box(via_sudo=False).ok


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
    and the agent under Landlock as its own user (a run that may write: on a copy, whose cost
    the summary says)."""
    done = in_container(box, "--preset", "edit")
    assert done.returncode == 0, done.stdout + done.stderr
    warning = next(line for line in done.stdout.splitlines()
                   if line.startswith("::warning title=agent under Landlock%2C no box::"))
    assert "without CAP_SYS_ADMIN: a container job" in warning
    assert len(warning) < 400  # one short line (issue 42: it was about 1,000 characters)
    assert "as root in a container" not in warning
    assert "The agent is not contained" not in warning  # the title says it once
    whole = (box.base / "summary.md").read_text().replace("\n", " ").replace("\\", "")
    assert "--cap-add SYS_ADMIN" in whole
    assert "no container:" in whole
    assert "no network wall" in whole
    lines = (box.base / "summary.md").read_text().splitlines()
    assert max(len(line) for line in lines if not line.startswith("|")) <= 200
    assert int(_seen(box, "uid")) not in (0, os.getuid())  # its own user
    summary = whole  # one paragraph per fact, wrapped: read as one line, unescaped
    assert "**Isolation:** landlock (user" in summary
    assert "the box cannot be made here: unshare (mount namespace) failed" in summary
    assert "no network wall" in summary
    assert "No network wall: the agent ran under Landlock, not in the box" in summary
    assert "<summary>Network: no wall (Landlock, not the box)</summary>" in summary
    assert "no unix socket (the host's under /run, abstract ones)" in summary
    assert "service-account tokens (/run/secrets, /var/run/secrets)" in summary
    assert re.search(r"on disk, under Landlock: \d+ files \([\d.]+ MiB\) copied in [\d.]+ s",
                     summary)  # what the copy cost, and why
    assert "without the box there is no overlay: it needs CAP" in summary, summary


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
        done = in_container(box, "--preset", "edit", body=body)
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
@needs_capsh
def test_under_landlock_a_change_made_before_the_run_stays_the_base(box: Box) -> None:
    """The copy's base (what of the real tree already differed from HEAD, hashed while root
    copies) keeps changes made before the run out of the agent's: only its own come back."""
    readme = box.workspace / "README.md"
    before = readme.read_text() + "before the run\n"
    readme.write_text(before)
    (box.workspace / "notes.txt").write_text("untracked, before the run\n")
    done = in_container(box, "--preset", "edit",
                         body="echo by the agent >> README.md; echo n > src/new.txt")
    assert done.returncode == 0, done.stdout + done.stderr
    outputs = parse_output_file((box.base / "outputs.txt").read_text())
    assert outputs["files-changed"] == '["README.md","src/new.txt"]'
    patch = Path(outputs["patch-file"]).read_text()
    assert "+by the agent" in patch
    assert "+before the run" not in patch
    assert "notes.txt" not in patch
    assert readme.read_text() == before + "by the agent\n"
    assert (box.workspace / "notes.txt").read_text() == "untracked, before the run\n"


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
    done = in_container(box, "--isolation", "user")
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
    monkeypatch.setattr(probe, "has_cap_sys_admin", lambda: True)
    why, fix = probe.box_failure(ProbeResult(False, "unshare (mount namespace)", 1,
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
    done = in_container(box, body=body)
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
    done = in_container(box, body=body, prompt="ninebytes" * 12_000)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "/files/" in _seen(box, "path"), done.stdout
    assert _seen(box, "head") == "ninebytes"


@ROOT_ONLY
@needs_capsh
@pytest.mark.alone  # it watches /tmp for the Landlock tier's areas: another run's would show
def test_under_landlock_a_cli_the_agent_user_cannot_run_falls_back_before_it_starts(
    box: Box,
) -> None:
    """Said before the agent starts (so auto may still run it another way), not as a failed
    start."""
    areas = set(Path(tempfile.gettempdir()).glob("caa-lockdown-*"))
    done = in_container(box, body="echo ran > $SEEN/ran", closed=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(Path(tempfile.gettempdir()).glob("caa-lockdown-*")) <= areas  # none left
    assert "cannot run the CLI at" in done.stdout
    warning = next(line for line in done.stdout.splitlines()
                   if line.startswith("::warning title=agent not contained::"))
    assert "Running the agent without the box" in warning
    # the fix for where it runs, not a generic one (in the summary: the annotation is short)
    summary = (box.base / "summary.md").read_text().replace("\n", " ").replace("\\", "")
    assert "--cap-add SYS_ADMIN" in summary
    assert _seen(box, "ran") == "ran\n"


# -- the container-job tier attacked: service-account tokens, host sockets, IPC leftovers -------

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
COMPOSE_SECRET = Path("/run/secrets/db_password")


@ROOT_ONLY
@needs_capsh
def test_under_landlock_a_planted_service_account_token_is_out_of_reach(box: Box) -> None:
    """The attack: a pod's world-readable service-account token (Kubernetes mounts it under
    /var/run/secrets) and a Compose secret under /run/secrets, read by the agent. Before: both
    read (Landlock masked neither; the box hides all of /run). Now: both refused, the run fine."""
    if Path("/run/secrets").exists() or Path("/var/run/secrets").exists():
        pytest.skip("this machine has its own /run/secrets: not touched")
    made = [Path("/run/secrets"), Path("/var/run/secrets")]
    try:
        for path in (SERVICE_ACCOUNT, COMPOSE_SECRET):
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            path.write_text(f"{TOKEN}-{path.name}\n")
            path.chmod(0o644)
        body = (f"cat {SERVICE_ACCOUNT} > $SEEN/token 2>/dev/null; "
                f"cat {COMPOSE_SECRET} > $SEEN/secret 2>/dev/null; "
                f"ls -R /run/secrets/ /var/run/secrets/ > $SEEN/listing 2>/dev/null; "
                "id -u > $SEEN/uid")
        done = in_container(box, body=body)
    finally:
        for path in made:
            if path.is_symlink():
                continue
            shutil.rmtree(path, ignore_errors=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert TOKEN not in _seen(box, "token") + _seen(box, "secret")
    assert "token" not in _seen(box, "listing")
    assert int(_seen(box, "uid")) not in (0, os.getuid())  # it did run, as its own user


_CONNECT = r"""
import socket, sys
for name, where in (("path", sys.argv[1]), ("abstract", "\0" + sys.argv[2])):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(3)
        s.connect(where)
        s.sendall(b"from the agent")
        print(name, "connected")
    except OSError as exc:
        print(name, "refused", exc.errno)
a, b = socket.socketpair()
a.sendall(b"x")
print("socketpair", b.recv(1).decode())
"""


@ROOT_ONLY
@needs_capsh
def test_under_landlock_no_unix_socket_outside_can_be_reached(box: Box) -> None:
    """The attack: a world-writable socket under /run (a container runtime's, D-Bus's, a
    database's) and an abstract one, each listening; the agent connects and writes. Before:
    both connected (Landlock does not govern connecting by path, nor abstract names before
    ABI 6). Now: socket(AF_UNIX) is refused to the agent; socketpair, which Node uses for its
    children's stdio and IPC, still works."""
    name = f"caa-{TEST_AGENT_USER}-{os.getpid()}"
    path = Path("/run") / f"{name}.sock"
    got: list[bytes] = []
    listeners = []
    for address in (str(path), "\0" + name):
        server = socket.socket(socket.AF_UNIX)
        server.bind(address)
        server.listen(4)
        server.settimeout(0.2)
        listeners.append(server)
    path.chmod(0o777)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            for server in listeners:
                try:
                    peer, _ = server.accept()
                except OSError:
                    continue
                with peer:
                    peer.settimeout(2)
                    with contextlib.suppress(OSError):
                        got.append(peer.recv(64))

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    script = box.base / "connect.py"
    script.write_text(_CONNECT)
    script.chmod(0o644)
    try:
        done = in_container(box, body=f"/usr/bin/python3 -I {script} {path} {name} "
                                       "> $SEEN/connect 2>&1")
    finally:
        stop.set()
        thread.join(timeout=5)
        for server in listeners:
            server.close()
        path.unlink(missing_ok=True)
    assert done.returncode == 0, done.stdout + done.stderr
    said = _seen(box, "connect")
    assert got == [], said
    assert "path refused" in said, said
    assert "abstract refused" in said, said
    assert "socketpair x" in said, said


def _sysv_of(uid: int) -> list[tuple[str, str]]:
    """System V IPC objects ``uid`` owns or made: (kind, id), from /proc/sysvipc."""
    columns = {"shm": (1, 7, 9), "sem": (1, 4, 6), "msg": (1, 7, 9)}
    found = []
    for kind, (ident, owner, creator) in columns.items():
        for line in Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]:
            fields = line.split()
            if str(uid) in (fields[owner], fields[creator]):
                found.append((kind, fields[ident]))
    return found


_MQ_OPEN = r"""
import ctypes, os
rt = ctypes.CDLL("librt.so.1", use_errno=True)
fd = rt.mq_open(b"/caa-left-behind", os.O_CREAT | os.O_RDWR, 0o666, None)
print("mq_open", "made" if fd >= 0 else f"refused {ctypes.get_errno()}")
"""


@ROOT_ONLY
@needs_capsh
def test_under_landlock_no_ipc_object_the_agent_made_outlives_the_run(box: Box) -> None:
    """The attack: a world-readable System V segment, a semaphore set and a message queue made
    by the agent (no IPC namespace here), plus a POSIX message queue, for the next run on the
    machine. Before: all outlived the run. Now: the System V ones are removed after it, and
    mq_open is refused."""
    agent_uid = pwd.getpwnam(TEST_AGENT_USER).pw_uid if user_exists(TEST_AGENT_USER) else -1
    script = box.base / "mq.py"
    script.write_text(_MQ_OPEN)
    script.chmod(0o644)
    body = ("ipcmk -M 4096 -p 0666 > $SEEN/shm 2>&1; ipcmk -S 1 > $SEEN/sem 2>&1; "
            "ipcmk -Q > $SEEN/msg 2>&1; "
            f"/usr/bin/python3 -I {script} > $SEEN/mq 2>&1; id -u > $SEEN/uid")
    try:
        done = in_container(box, body=body)
        agent_uid = int(_seen(box, "uid") or agent_uid)
        left = _sysv_of(agent_uid)
    finally:
        for kind, ident in _sysv_of(agent_uid):  # on the code before the fix, they stayed
            flag = {"shm": "-m", "sem": "-s", "msg": "-q"}[kind]
            subprocess.run(["ipcrm", flag, ident], check=False, timeout=10)
        subprocess.run(["ipcrm", "-Q", "/caa-left-behind"], check=False, timeout=10,
                       capture_output=True)
        Path("/dev/mqueue/caa-left-behind").unlink(missing_ok=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "id:" in _seen(box, "shm"), _seen(box, "shm")  # the agent made them
    assert "id:" in _seen(box, "msg"), _seen(box, "msg")
    assert left == []
    assert "refused" in _seen(box, "mq"), _seen(box, "mq")


def test_what_a_kernel_cannot_hold_is_said_in_the_summary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Below Landlock ABI 6 (Ubuntu 24.04's 6.8 has 4) the runner's-own-user tier cannot scope
    signals; without a known architecture there is no seccomp filter: the label says each."""
    tier = isolation.Isolation(True, agent_user="runner", landlock=True, own_user=True,
                               why_not="no sudo")
    monkeypatch.setattr(landlock, "abi", lambda: 4)
    assert "on this kernel (Landlock ABI 4, scopes from 6: Linux 6.12) it can signal a " \
           "process of the runner's" in tier.label
    monkeypatch.setattr(landlock, "abi", lambda: 6)
    assert "on this kernel" not in tier.label
    monkeypatch.setattr(seccomp, "supported", lambda: False)
    assert "no seccomp filter for this machine" in tier.label
    container = isolation.Isolation(True, agent_user="agent", landlock=True, why_not="no cap")
    assert "no seccomp filter for this machine" in container.label
    monkeypatch.setattr(landlock, "abi", lambda: 4)
    assert "on this kernel" not in container.label  # its own user: DAC keeps its signals in
