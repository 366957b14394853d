"""Red team 4's attacks on the tiers without a box, as the runner's own user (tier 1b: a
runner user without sudo, user namespaces turned off for that run, so the agent is the runner's
own uid and the checkout's owner). Each test asserts the safe behaviour; each failed while its
attack worked (before the fixes of issue 48's last stop: the reaper that ends a chain of
processes in one round, the status read through the helper's own descriptor, the real
checkout's attributes checked after every Landlock run, an unreadable checkout failing the run
instead of running the agent uncontained). The container-job tier held against the same
attacks (its agent is another user: it cannot change a mode, and reap.kill_all's kill(-1) as
that uid ended a 300-process chain)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from cursor_agent_action.agent.contain import inplace, landlock
from tests.support.attacks import cleanup_user, outputs_of, runner_run, wait_for
from tests.support.box import Box, passable_box
from tests.support.box import seen as _seen
from tests.support.standin import processes_of
from tests.support.users import TEST_AGENT_USER

RUNNER_LANDLOCK = pytest.mark.skipif(
    os.geteuid() != 0 or landlock.abi() < inplace.MIN_ABI,
    reason="plays a runner user (as root) on a kernel whose Landlock governs truncate")


@pytest.fixture
def box(monkeypatch: pytest.MonkeyPatch) -> Iterator[Box]:
    yield from passable_box(monkeypatch, "rt4")


CHAIN = """
import os, sys, time
seen, depth = sys.argv[1], int(sys.argv[2])
with open(sys.argv[3]) as handle:
    then = handle.read()
for _ in range(depth):
    if os.fork():  # the parent stays (a sleep): its child becomes the reaper's only when it dies
        os.execv("/bin/sleep", ["sleep", "90"])
open(os.path.join(seen, "built"), "w").close()
while not os.path.exists(os.path.join(seen, "t0")):
    time.sleep(0.05)
time.sleep(9)  # past the reaper's 5 s and the check
exec(then)
with open(os.path.join(seen, "late"), "w") as handle:
    handle.write(str(os.getpid()))
"""


def _chain(box: Box, then: str, depth: int = 1000) -> str:
    """Body lines: a chain of ``depth`` processes, each the parent of the next; the reaper's
    rounds kill one generation each (the top, its only child), so the deepest outlives them
    and runs ``then`` (Python, in the checkout) 9 s after the agent ended."""
    script = box.base / "chain.py"
    script.write_text(CHAIN)
    script.chmod(0o755)
    code = box.base / "then.py"
    code.write_text(then)
    code.chmod(0o644)
    return (f"/usr/bin/python3 {script} $SEEN {depth} {code} </dev/null >/dev/null 2>&1 &\n"
            "while [ ! -e $SEEN/built ]; do sleep 0.1; done; echo > $SEEN/t0")


@RUNNER_LANDLOCK
def test_rt4_runner_a_process_that_outlives_the_reaper_changes_the_checkout_after_the_check(
    box: Box, unprivileged: Path,
) -> None:
    """Tier 1b (the runner's own user, no user namespaces). The agent leaves a chain of 1,000
    processes, each the parent of the next (the upper ones a ``sleep``). reap.kill_descendants
    kills the subreaper's children round by round, one generation each: after its 5 s it gives
    up with most of the chain alive and writes "processes of the agent's user were still
    running" into the status's ``error``; the in-place check runs at once, while they live, and
    the helper never reads ``error`` when the status has a return code: the run succeeds. 9 s
    after the agent ended, the deepest process (still under Landlock, but the files' owner)
    makes README.md world-writable, .git/hooks writable by every local user and .git/config (the
    token's file) readable by all: nothing checks again; and it lives on with the runner's
    network and the API key, and reads what a later step of the job writes into the checkout.
    Safe: the run fails, or nothing outlives it and the checkout is as it was."""
    suffix = "chain"
    uid = -1
    then = ("os.chmod('README.md', 0o777); os.chmod('.git/hooks', 0o777); "
            "os.chmod('.git/config', 0o666)\n"
            "for _ in range(100):\n"
            "    if os.path.exists('src/later.txt'): break\n"
            "    time.sleep(0.1)\n"
            "open(os.path.join(seen, 'stolen'), 'w').write(open('src/later.txt').read())")
    try:
        body = f"echo started > $SEEN/started\n{_chain(box, then)}"
        before: dict[str, os.stat_result] = {}

        def prepare() -> None:
            before.update({p: os.lstat(box.workspace / p) for p in
                           ("README.md", ".git/hooks", ".git/config")})
        done, uid = runner_run(box, unprivileged, suffix, body, prepare)
        outputs = outputs_of(box, "fallback-outputs.txt")
        survivors = processes_of(f"{TEST_AGENT_USER}-{suffix}"[:32])
        # a later step of the job writes a file into the checkout
        (box.workspace / "src" / "later.txt").write_text("a later step's secret\n")
        late = wait_for(box.seen / "late", 30)
        after = {p: os.lstat(box.workspace / p) for p in before}
    finally:
        if uid >= 0:
            cleanup_user(suffix, uid)
    assert _seen(box, "started"), done.stdout + done.stderr
    changed = [p for p in before if stat.S_IMODE(before[p].st_mode)
               != stat.S_IMODE(after[p].st_mode)]
    stolen = _seen(box, "stolen")
    assert outputs.get("conclusion") != "success" or not changed, (
        f"(late={late}, read a later step's file: {stolen!r}) the run succeeded, and a "
        f"process of the agent's changed the checkout after the check: {changed} "
        f"({len(survivors)} of its processes outlived the run)")
    assert survivors == [], f"{len(survivors)} agent processes outlived the run"


@RUNNER_LANDLOCK
def test_rt4_runner_a_status_file_closed_to_its_owner_hides_the_put_back(
    box: Box, unprivileged: Path,
) -> None:
    """Tier 1b: Landlock does not govern a file's mode, and the status file is the runner's
    own. The agent reads the lockdown's command line (/proc/PPID/cmdline: its spec's path, in
    the helper's state directory), closes box-status.json (chmod 000: the lockdown still
    writes it through the descriptor it opened at start, but the helper then reads it by
    path, as its non-root owner, and cannot), and changes the checkout's modes and times. The
    helper finds no status, takes it as "the box ended without a proper status after the
    agent's result" and keeps the agent's own conclusion: success. The in-place check's
    finding (it did put the modes back) never reaches the verdict. Safe: the run fails and
    names the changed entries."""
    suffix = "st"
    uid = -1
    body = ('spec=$(tr "\\0" "\\n" < /proc/$PPID/cmdline | tail -n 1); '
            'echo "$spec" > $SEEN/spec; '
            'chmod 000 "$(dirname "$spec")/box-status.json" && echo closed > $SEEN/closed; '
            "chmod 777 README.md; touch -d 2001-01-01 src/app.py; chmod 700 src")
    try:
        done, uid = runner_run(box, unprivileged, suffix, body)
    finally:
        if uid >= 0:
            cleanup_user(suffix, uid)
    assert _seen(box, "closed"), done.stdout + done.stderr + _seen(box, "spec")
    outputs = outputs_of(box, "fallback-outputs.txt")
    summary = (box.base / "summary.md").read_text()
    assert outputs.get("conclusion") == "failure", (
        f"conclusion {outputs.get('conclusion')}: the agent changed the checkout's modes and "
        "times and the run did not fail")
    assert "The agent changed" in " ".join(summary.split())


def _cap_abi(venv: Path, abi: int) -> None:
    """The helper venv's Landlock capped at ``abi``: what a kernel of that ABI reports (3:
    Linux 6.2 to 6.6; 4: 6.7 to 6.9, Ubuntu 24.04's 6.8 among them; 5: 6.10 and 6.11)."""
    module = next(venv.glob("lib/python3*/site-packages/cursor_agent_action/agent/contain/"
                            "landlock.py"))
    text = module.read_text()
    old = "    return max(int(version), 0)\n"
    assert old in text
    module.write_text(text.replace(old, f"    return min(max(int(version), 0), {abi})\n"))


@RUNNER_LANDLOCK
def test_rt4_runner_below_abi_6_the_copied_run_leaves_the_real_checkout_s_modes_unchecked(
    box: Box, unprivileged: Path,
) -> None:
    """Tier 1b on a kernel whose Landlock is ABI 3 to 5 (Linux 6.2 to 6.11: Ubuntu 24.04's
    6.8 is ABI 4). Before main's 1d5a071 a read-only run was shown the checkout in place there,
    and the agent (the runner's uid, no signal scope) killed the lockdown after printing its
    result: the check never ran and the helper kept the success. Now the tree is copied below
    ABI 6, and no check of the real checkout runs at all: the real tree is masked for reading,
    but Landlock does not govern modes and times, and the agent finds its path (the lockdown's
    command line names its spec in $RUNNER_TEMP/cursor-agent-action/run-*/; the checkout is
    RUNNER_TEMP's sibling). It makes the real README.md world-writable, .git/hooks and src
    writable by every local user (a hook, a module planted by anyone on the machine) and
    back-dates src/app.py: the run succeeds and all of it stays (.git/config alone is guarded:
    its bytes and mode are put back and the run fails). security.md's table promises for this
    tier that "only the checkout's are checked and put back". The same holds for every copied
    run in this tier (a Write() rule, a fifo in the tree) on any kernel. Emulated by capping
    the helper venv's Landlock ABI at 4. Safe: the run fails, and the checkout is as it was."""
    _cap_abi(unprivileged, 4)
    suffix = "k4"
    uid = -1
    body = ('spec=$(tr "\\0" "\\n" < /proc/$PPID/cmdline | tail -n 1); '
            'real="$(dirname "$spec")/../../../repo"; pwd > $SEEN/pwd; '
            'chmod 777 "$real/README.md" "$real/.git/hooks" "$real/src"; '
            'touch -d 2001-01-01 "$real/src/app.py" && echo done > $SEEN/done')
    paths = ("README.md", ".git/hooks", "src", "src/app.py")
    before: dict[str, os.stat_result] = {}

    def prepare() -> None:
        before.update({p: os.lstat(box.workspace / p) for p in paths})
    try:
        done, uid = runner_run(box, unprivileged, suffix, body, prepare)
        after = {p: os.lstat(box.workspace / p) for p in before}
    finally:
        if uid >= 0:
            cleanup_user(suffix, uid)
    assert _seen(box, "pwd").strip() != str(box.workspace), "shown in place: no longer copied"
    assert _seen(box, "done"), done.stdout + done.stderr
    outputs = outputs_of(box, "fallback-outputs.txt")
    changed = [p for p in before if (before[p].st_mode, before[p].st_mtime_ns)
               != (after[p].st_mode, after[p].st_mtime_ns)]
    assert not changed, (
        f"conclusion {outputs.get('conclusion')}; the real checkout keeps the agent's changes "
        f"to its modes and times: {changed}")
    assert outputs.get("conclusion") == "failure"


@RUNNER_LANDLOCK
def test_rt4_runner_a_checkout_it_cannot_read_fails_the_run_instead_of_running_it_uncontained(
    box: Box, unprivileged: Path,
) -> None:
    """Tier 1b, on a kernel whose Landlock is ABI 4 (Ubuntu 24.04; emulated), where a read-only
    run is copied. Red team 4 had a process that outlived one run (now ended: the first test)
    close the checkout's src (chmod 000: Landlock does not govern modes) just before the next
    run's lockdown walked it: its PermissionError was a setup failure ("the box could not be
    set up"), so isolation: auto ran that agent with no containment at all, and it read
    .git/config's token. Played here by closing src before the run, as any earlier step could.
    Safe: what the lockdown cannot read it cannot check, and that is the tree's reason, not the
    runner's: the run fails, and no agent runs uncontained."""
    _cap_abi(unprivileged, 4)
    suffix = "next"
    uid = -1
    token = "ghs_rt4_next_run_token_0123456789"
    with (box.workspace / ".git" / "config").open("a") as handle:
        handle.write(f'[http "https://github.com/"]\n\textraheader = basic {token}\n')
    try:
        done, uid = runner_run(box, unprivileged, suffix,
                                "cat .git/config > $SEEN/config2; id -u > $SEEN/uid2",
                                prepare=lambda: (box.workspace / "src").chmod(0))
    finally:
        (box.workspace / "src").chmod(0o755)
        if uid >= 0:
            cleanup_user(suffix, uid)
    log = " ".join((done.stdout + done.stderr).split())
    assert token not in _seen(box, "config2"), (
        "the run fell back to no containment and read the token: "
        + log[log.find("Running the agent without the box"):][:400])
    assert _seen(box, "uid2") == "", log[-2000:]  # no agent ran at all
    assert done.returncode != 0
    assert "src cannot be listed: Permission denied" in log, log[-2000:]
