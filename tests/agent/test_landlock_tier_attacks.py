"""Red team 5's attacks on the tiers without a box: tier 1b (a runner user without sudo, user
namespaces turned off for that run: Landlock as the runner's own user, who owns the checkout)
and the container-job tier (the helper as root without CAP_SYS_ADMIN: Landlock, the agent a
user of its own). Briefed with README.md and docs/security.md only. Each test asserts what
those documents promise; each failed while its attack worked (before the fixes: the reaper
that reads its descendants from their parents' ``children`` files with no pause between
rounds, seccomp refusing scheduling and limit calls on another process, every exception after
the start written as a failing status and a missing status failing the run, an unreadable
checkout failing it instead of running the agent another way, zombies not counted as live)."""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cursor_agent_action.agent.contain import inplace, landlock
from tests.support.attacks import cleanup_user, outputs_of, runner_run, wait_for
from tests.support.box import CAPSH, EVENTS, Box, passable_box
from tests.support.box import seen as _seen

RUNNER_IN_PLACE = pytest.mark.skipif(
    os.geteuid() != 0 or landlock.abi() < inplace.OWN_USER_MIN_ABI,
    reason="plays a runner user (as root) on a kernel whose Landlock shows a read-only run "
           "the checkout in place (ABI 6)")


@pytest.fixture
def box(monkeypatch: pytest.MonkeyPatch) -> Iterator[Box]:
    yield from passable_box(monkeypatch, "rt5")


HOPPER_C = Path(__file__).parent.parent / "fixtures" / "redteam5" / "hopk.c"
"""The hopper, in C (a fork costs tens of microseconds; in Python, milliseconds). Built by the
test with the runner's gcc; the agent could as well, or bring it."""
GCC = shutil.which("gcc") or ""


def _hopper(box: Box, then: str, pinned_s: float = 9.0, lineages: int = 2,
            reopen: str = "-") -> str:
    """Body lines: the hopper (:data:`HOPPER_C`), started in the background, then ``then``
    (Python, run as ``python3 then.py SEEN`` in the agent's working directory once the lockdown
    is gone)."""
    source = box.base / "hopk.c"
    source.write_text(HOPPER_C.read_text())
    binary = box.base / "hopk"
    subprocess.run([GCC, "-O2", "-static", "-o", str(binary), str(source)], check=True)
    binary.chmod(0o755)
    code = box.base / "then.py"
    code.write_text(then)
    code.chmod(0o644)
    return (f"{binary} $SEEN $PPID {pinned_s} {lineages} {reopen} /usr/bin/python3 {code} $SEEN "
            "</dev/null >/dev/null 2>&1 &\n"
            "while [ ! -s $SEEN/hopping ]; do sleep 0.05; done")


@RUNNER_IN_PLACE
def test_rt5_runner_a_process_that_hops_pids_outlives_the_reaper_and_the_run(
    box: Box, unprivileged: Path,
) -> None:
    """Tier 1b, a read-only run (the checkout in place). reap.kill_descendants reads every
    process's parent from /proc, then kills the descendants it found, round after round. The
    agent leaves a process that forks and lets its parent exit, over and over (a new pid every
    ~100 us; tests/fixtures/redteam5/hopk.c), in two lineages that fork each other anew when
    one is killed; and, since Landlock governs neither sched_setaffinity nor
    sched_setscheduler and the lockdown is the agent's parent and its own uid, it pins the
    lockdown to one CPU at SCHED_IDLE and itself to the other. Each kill then lands on a pid
    that already hopped (a zombie the reaper reaps); after 5 s the reaper gives up. The run
    fails ("could not end everything the agent left behind"), but the hopper lives on after the
    step as the runner's own uid, with the API key in its environment and the runner's
    network: once the lockdown is gone it makes README.md and src writable by every local user,
    after the check, and nothing looks again (the helper is no subreaper of a contained run;
    the agent's environment is an allowlist without RUNNER_TRACKING_ID, which the runner's
    orphan cleanup at the job's end looks for). security.md, tier 1b: "what it leaves running killed
    as the helper's descendants ... every one of them at once each round", README: "nothing it
    starts outlives the step". Severity: high (a process of the agent's outlives the step, the
    job and, on a persistent self-hosted runner, later jobs). Fix: stop before killing: each
    round SIGSTOP every descendant found, rescan until no descendant is found that is not
    stopped (a stopped process cannot fork), then SIGKILL them all; or freeze them in a cgroup
    of their own where the runner's user has a delegated subtree; and refuse (or undo) the
    agent's changes to the lockdown's affinity and policy (a seccomp rule on
    sched_setaffinity/sched_setscheduler/setpriority for a pid other than 0 or the caller's)."""
    suffix = "hop"
    uid = -1
    before: dict[str, os.stat_result] = {}
    then = ("import os, sys, time\n"
            "os.chmod('README.md', 0o777); os.chmod('src', 0o777)\n"
            "open(os.path.join(sys.argv[1], 'changed'), 'w').close()\n"
            "time.sleep(30)\n")

    def prepare() -> None:
        before.update({p: os.lstat(box.workspace / p) for p in ("README.md", "src")})
    try:
        done, uid = runner_run(box, unprivileged, suffix,
                                f"echo started > $SEEN/started\n{_hopper(box, then)}", prepare)
        ended = time.monotonic()
        changed_late = wait_for(box.seen / "changed", 30)
        after = {p: os.lstat(box.workspace / p) for p in before}
        late_s = time.monotonic() - ended
    finally:
        cleanup_user(suffix, uid)
    assert _seen(box, "started"), done.stdout + done.stderr
    changed = [p for p in before
               if stat.S_IMODE(before[p].st_mode) != stat.S_IMODE(after[p].st_mode)]
    summary = " ".join((box.base / "summary.md").read_text().split())
    assert not changed_late, (
        f"conclusion {outputs_of(box).get('conclusion')} "
        f"({summary[summary.find('could not end everything'):][:120]}...); a process of the "
        f"agent outlived the run (pid, hops, seconds: {_seen(box, 'late').strip()}) and "
        f"changed the checkout {late_s:.1f} s after the run ended: {changed}")


def _nested(box: Box) -> Box:
    """The box with its checkout one level deeper, as on GitHub's runners
    (``_work/REPO/REPO``: the checkout's parent holds the checkout alone, RUNNER_TEMP is
    elsewhere)."""
    inner = box.base / "proj" / "repo"
    inner.parent.mkdir()
    box.workspace.rename(inner)
    return dataclasses.replace(box, workspace=inner)


OVERFLOW = ("/usr/bin/python3 -c 'import os\n"
            "for i in range(40000): os.chmod(\"README.md\" if i % 2 else \"src/app.py\", 0o644)'")
"""More attribute events than inotify queues (16,384 by default): the watch overflows, and the
check walks the whole tree instead."""


@RUNNER_IN_PLACE
@pytest.mark.skipif(not GCC, reason="builds the hopper with gcc")
def test_rt5_runner_a_lockdown_that_crashes_in_its_check_leaves_the_agent_s_success_standing(
    box: Box, unprivileged: Path,
) -> None:
    """Tier 1b, a read-only run (the checkout in place), the checkout one level below a
    directory of its own as on GitHub's runners (``_work/REPO/REPO``). The agent makes
    .git/hooks, src and README.md writable by every local user (Landlock does not govern
    modes), then makes 40,000 more attribute changes: the inotify queue overflows, so
    inplace.check walks the whole tree, and its walk starts with ``os.lstat(root)``, the one
    call there not guarded. The agent closes the checkout's parent (``chmod 000 ..``: the
    runner's own directory), leaves the hopper of the test above running, and ends with its
    result. The reaper gives up after 5 s; the check's ``lstat`` raises PermissionError; the
    lockdown dies with a traceback and writes no status: neither the put-back nor "processes
    ... still running" is ever reported. The hopper sees the lockdown gone and opens the parent
    again at once, before the helper looks. The helper finds no status after the agent's
    result, which security.md calls keeping "the agent's own conclusion when its result was
    seen": the run succeeds, and the checkout keeps its world-writable hooks directory (a hook
    any local user plants runs at the next step's git call). security.md, tier 1b: "the real
    checkout's modes, owners and times checked after every run and put back (the run fails)";
    "Fails closed". Severity: high. Fix: after the agent may have run, any exception in the
    lockdown must end in a status that fails the run (wrap everything after the fork in one
    handler that writes ``BoxStatus(True, returncode=None, error=...)``), and the helper must
    fail a run whose box ended without a status when that box is a Landlock tier (the agent's
    own conclusion is not evidence that the check ran); in check(), treat a root that cannot be
    reached as every entry changed; and end the hopping first (see the test above)."""
    box = _nested(box)
    suffix = "crash"
    uid = -1
    paths = (".git/hooks", "src", "README.md")
    then = ("import os, sys\n"
            "open(os.path.join(sys.argv[1], 'reopened'), 'w').close()\n")
    body = (f"{OVERFLOW}\nchmod 777 {' '.join(paths)} && echo changed > $SEEN/changed\n"
            f"{_hopper(box, then, reopen=str(box.workspace.parent))}\n"
            "chmod 000 .. && echo closed > $SEEN/closed")
    before: dict[str, os.stat_result] = {}

    def prepare() -> None:
        before.update({p: os.lstat(box.workspace / p) for p in paths})
    try:
        done, uid = runner_run(box, unprivileged, suffix, body, prepare)
        wait_for(box.seen / "reopened", 30)
    finally:
        box.workspace.parent.chmod(0o755)
        cleanup_user(suffix, uid)
    after = {p: os.lstat(box.workspace / p) for p in before}
    outputs = outputs_of(box)
    summary = " ".join((box.base / "summary.md").read_text().split())
    assert _seen(box, "closed"), done.stdout + done.stderr
    assert _seen(box, "changed"), done.stdout + done.stderr
    changed = [p for p in before
               if stat.S_IMODE(before[p].st_mode) != stat.S_IMODE(after[p].st_mode)]
    assert outputs.get("conclusion") != "success" or not changed, (
        f"the run succeeded ({summary[summary.find('box ended without'):][:160]}...), and the "
        "checkout "
        f"keeps the agent's changes: {changed}")


def _lockdowns(within: Path) -> set[int]:
    """The lockdowns running whose spec is below ``within`` (this test's: other tests of the
    suite run theirs at the same time)."""
    found = set()
    mark = os.fsencode(str(within))
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    command = handle.read()
            except OSError:
                continue
            if b"cursor_agent_action.agent.contain.lockdown" in command and mark in command:
                found.add(int(entry))
    return found


def _close_while_the_lockdown_starts(directory: Path, stop: threading.Event,
                                     closed: list[int]) -> None:
    """A process an earlier step left running (played by a thread of the test): as soon as a
    lockdown of this test's starts, ``directory`` is closed (mode 000) until that lockdown is
    gone."""
    within = directory.parent  # the test's base: RUNNER_TEMP, its spec's place, is there
    while not stop.is_set():
        started = _lockdowns(within)
        if not started:
            time.sleep(0.002)
            continue
        directory.chmod(0)
        closed.extend(started)
        while _lockdowns(within) & started and not stop.is_set():
            time.sleep(0.001)
        directory.chmod(0o755)
        return


@RUNNER_IN_PLACE
def test_rt5_runner_a_checkout_root_it_cannot_reach_makes_the_run_fall_back_uncontained(
    box: Box, unprivileged: Path,
) -> None:
    """Tier 1b, the checkout below a directory of its own (``_work/REPO/REPO``). Red team 4's
    last finding was fixed for a directory below the checkout that cannot be listed
    (tree.Unreadable: the run fails, nothing else is tried); the checkout's own root cannot be
    reached at all when a directory above it is closed (chmod 000: the runner's own, so any
    process of the runner's user may, e.g. one that outlived an earlier agent run: the test
    above), and inplace._gathered's ``os.lstat(root)`` then raises a plain PermissionError.
    lockdown.run reports it as a setup failure that is not ``final``, and under isolation: auto
    the helper runs the agent with no containment at all (run.py: "tier 1a could not be set
    up: tier 1b; else none"). Played by a thread that closes the checkout's parent while the
    lockdown starts (after the helper's own checks of the tree) and opens it again when the
    lockdown is gone. The agent of the second start reads .git/config's token and is the
    runner's uid with no Landlock. security.md: "isolation: auto falls back only when the box
    cannot be set up before the agent starts"; "a checkout the program cannot list now fails the
    run ... and no other way is tried". Severity: medium (it needs a process of the runner's
    user that outlived an earlier step or run, which the first test provides). Fix: every
    failure of the lockdown to read the tree (any OSError of inplace.take, tree.survey or the
    copy, not only a scandir) is final; more generally, once the helper chose a Landlock tier,
    only a failure that is the runner's (no Landlock ABI, no user) may fall back, and that
    only to a tier with Landlock."""
    box = _nested(box)
    suffix = "root"
    uid = -1
    token = "ghs_rt5_unreachable_root_0123456789"
    with (box.workspace / ".git" / "config").open("a") as handle:
        handle.write(f'[http "https://github.com/"]\n\textraheader = basic {token}\n')
    stop, closed = threading.Event(), list[int]()
    watcher = threading.Thread(target=_close_while_the_lockdown_starts,
                               args=(box.workspace.parent, stop, closed), daemon=True)
    try:
        watcher.start()
        done, uid = runner_run(
            box, unprivileged, suffix,
            "cat .git/config > $SEEN/config; id -u > $SEEN/uid; "
            "grep -c Landlock /proc/self/status > $SEEN/landlock; "
            "grep -s Landlock /proc/self/status >> $SEEN/landlock; true")
    finally:
        stop.set()
        watcher.join(10)
        box.workspace.parent.chmod(0o755)
        cleanup_user(suffix, uid)
    log = " ".join((done.stdout + done.stderr).split())
    assert closed, "no lockdown started: " + log[-1500:]
    assert token not in _seen(box, "config"), (
        "the run fell back to no containment and read the token: "
        + log[log.find("Running the agent without the box"):][:400])
    assert _seen(box, "uid") == "", "an agent ran after the lockdown could not be set up"
    assert done.returncode != 0


@RUNNER_IN_PLACE
def test_rt5_runner_prlimit_on_the_lockdown_ends_the_reaper_and_the_check_and_the_run_succeeds(
    box: Box, unprivileged: Path,
) -> None:
    """Tier 1b, a read-only run. prlimit(2) lets a process set the limits of another whose
    real, effective and saved ids are its own, and Landlock has no hook for it (it scopes
    ptrace and signals, not prlimit), nor does the Landlock tiers' seccomp filter refuse it.
    The lockdown is the agent's parent and the runner's uid, like the agent. The agent makes
    .git/hooks, src and README.md writable by every local user, leaves a ``setsid`` process
    behind, and sets the lockdown's RLIMIT_NOFILE to 3 (``prlimit --pid $PPID``) before it
    prints its result. When the agent ends, reap.kill_descendants's first ``listdir("/proc")``
    fails with EMFILE: the lockdown dies with a traceback before it kills anything, before the
    check, and without a status. The helper keeps the agent's own conclusion ("the box ended
    without a proper status after the agent's result"): the run succeeds, the checkout keeps
    its world-writable hooks directory, and the agent's process lives on after the step. No
    timing, no gcc: three shell commands. The same works on the helper itself (RLIMIT_NOFILE,
    RLIMIT_AS, RLIMIT_FSIZE of the runner's other processes). security.md, tier 1b: "the real
    checkout's modes ... checked after every run and put back (the run fails)", "what it leaves
    running killed", "Fails closed". Severity: high. Fix: refuse prlimit64 on another pid in
    the Landlock tiers' seccomp filter (pid argument not 0; or refuse it altogether, the CLI
    does not need it; also sched_setaffinity, sched_setscheduler, setpriority and
    sched_setattr on another pid: the first test), make the lockdown set its own limits back
    (or check them) before it reaps, and fail a Landlock run whose lockdown wrote no status
    (see the second test)."""
    suffix = "prl"
    uid = -1
    paths = (".git/hooks", "src", "README.md")
    body = (f"chmod 777 {' '.join(paths)} && echo changed > $SEEN/changed\n"
            'setsid sh -c "sleep 8; echo alive > $SEEN/alive" </dev/null >/dev/null 2>&1 &\n'
            "prlimit --pid $PPID --nofile=3:3 && echo limited > $SEEN/limited")
    before: dict[str, os.stat_result] = {}

    def prepare() -> None:
        before.update({p: os.lstat(box.workspace / p) for p in paths})
    try:
        done, uid = runner_run(box, unprivileged, suffix, body, prepare)
        alive = wait_for(box.seen / "alive", 20)
    finally:
        cleanup_user(suffix, uid)
    assert _seen(box, "changed"), done.stdout + done.stderr
    assert not _seen(box, "limited"), "prlimit on the lockdown went through"  # now: EPERM
    after = {p: os.lstat(box.workspace / p) for p in before}
    changed = [p for p in before
               if stat.S_IMODE(before[p].st_mode) != stat.S_IMODE(after[p].st_mode)]
    outputs = outputs_of(box)
    summary = " ".join((box.base / "summary.md").read_text().split())
    assert outputs.get("conclusion") != "success" or not changed, (
        f"the run succeeded ({summary[summary.find('box ended without'):][:160]}...); the "
        f"checkout keeps the agent's changes {changed}; its setsid process outlived the run: "
        f"{alive}")
    assert not alive, "the agent's setsid process outlived the run"


TAIL_INIT = """
import os, sys
child = os.fork()
if child == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status = os.waitpid(child, 0)  # its own child only: like tail -f /dev/null, no orphan's
sys.exit(os.waitstatus_to_exitcode(status))
"""
"""PID 1 of a job container as GitHub starts it (``--entrypoint tail ... -f /dev/null``): it
never waits for the orphans re-parented to it, so each stays a zombie."""


def _container_run(box: Box, body: str, prefix: str) -> str:
    """The helper as root without CAP_SYS_ADMIN (the container-job tier), as a shell command
    line; its outputs in ``{prefix}outputs.txt``."""
    script = box.base / f"{prefix}agent.sh"
    script.write_text("#!/bin/sh\n"
                      'for arg in "$@"; do [ "$arg" = --help ] && { echo "  --trust"; exit 0; }; '
                      f"done\nSEEN={box.seen}\n{body}\n"
                      f"cat <<'EOF'\n{EVENTS}\nEOF\n")
    script.chmod(0o755)
    helper = [sys.executable, "-I", "-m", "cursor_agent_action", "run", "--agent-bin",
              str(script), "--working-directory", str(box.workspace), "--prompt", "x",
              "--output-file", str(box.base / f"{prefix}outputs.txt"), "--summary-file",
              str(box.base / f"{prefix}summary.md"), "--timeout-minutes", "1"]
    return shlex.join([CAPSH, "--drop=cap_sys_admin", "--", "-c", shlex.join(helper)])


@pytest.mark.skipif(os.geteuid() != 0 or landlock.abi() < 1 or not CAPSH
                    or not shutil.which("unshare"),
                    reason="plays a container job (root, capsh, unshare) on a Landlock kernel")
def test_rt5_container_zombies_under_a_job_container_s_init_fail_every_later_run(
    box: Box,
) -> None:
    """The container-job tier, in a container as GitHub makes it: PID 1 is ``tail -f
    /dev/null``, which reaps nothing (played by a PID namespace whose init waits for its own
    child only). The lockdown is no subreaper there (only as the runner's own user), so what
    the agent leaves running is re-parented to PID 1; reap.kill_all kills it by the agent's uid,
    and it stays a zombie of PID 1 for the container's life. kill_all counts processes by the
    ``Uid:`` of /proc/N/status, zombies included: it gives up after 5 s, and the run fails
    ("could not end everything the agent left behind"). So does every later run in that job
    container with the same agent user, although their agents leave nothing: the first run's
    agent (one ``setsid sleep &``, or a CLI that leaves a language server) makes the action
    unusable for the rest of the job, with an error that blames the later agents. security.md's
    table for this tier: "nothing it starts outlives the run" (true: they are dead) but the
    runs fail closed for nothing. Severity: low (availability; it fails closed). Fix: count
    only processes that are not zombies (state Z in /proc/N/stat) in reap.kill_all, or make the
    lockdown a subreaper in this tier too and reap what it kills."""
    box.workspace.chmod(0o755)
    first = _container_run(box, "setsid sleep 60 </dev/null >/dev/null 2>&1 &", "first-")
    second = _container_run(box, "echo ran > $SEEN/second", "second-")
    done = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-I", "-c", TAIL_INIT,
         "/bin/sh", "-c", f"{first}; {second}"],
        env={**os.environ, "PATH": f"{Path(sys.executable).parent}:/usr/sbin:/usr/bin:/sbin:/bin"},
        capture_output=True, text=True, timeout=180, check=False)
    assert _seen(box, "second"), done.stdout[-3000:] + done.stderr[-3000:]
    first_out = outputs_of(box, "first-outputs.txt")
    second_out = outputs_of(box, "second-outputs.txt")
    second_summary = " ".join((box.base / "second-summary.md").read_text().split())
    assert second_out.get("conclusion") == "success", (
        f"the first run: {first_out.get('conclusion')}; the second run, whose agent left "
        f"nothing: {second_out.get('conclusion')}: "
        f"{second_summary[second_summary.find('could not end'):][:200]}")
