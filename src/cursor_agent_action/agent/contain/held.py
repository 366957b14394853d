"""What each tier without the box holds and does not hold, in the user's words: the label, the
warning and the job summary say it (:mod:`.isolation`), with what this machine's kernel cannot
hold (:func:`landlock_lacks`)."""

from __future__ import annotations

import platform

from cursor_agent_action.agent.contain import landlock
from cursor_agent_action.agent.contain.box import seccomp

HIDDEN = ("the runner's home, RUNNER_TEMP, the tool cache, /root, the helper's state or the "
          "service-account tokens (/run/secrets, /var/run/secrets)")
LANDLOCK_HOLDS = ("no unix socket (the host's under /run, abstract ones), io_uring or POSIX "
                  "message queue; the System V IPC objects it made removed after the run")
LANDLOCK_LACKS = ("no PID namespace (what it leaves running is killed by its user id), no "
                  "network wall (it has the runner's network), no IPC namespace (System V "
                  "objects others left open to all are in reach)")
RUNNER_LANDLOCK_HOLDS = (f"{LANDLOCK_HOLDS}; no tracing of, or reading /proc/PID/environ "
                         "of, the runner's processes; no_new_privs (no sudo, no set-user-ID "
                         "program); what it leaves running is killed as the helper's "
                         "descendants")
RUNNER_LANDLOCK_LACKS = ("its own user (it is the runner's: files the runner's user may read "
                         "outside the masked places it may read too), no PID namespace, no "
                         "network wall (it has the runner's network), no IPC namespace, no "
                         "process-count limit")
NAMESPACES_HOLD = ("it sees and signals only its own processes, whatever the kernel's "
                   "Landlock ABI, and all of them end with the run; its IPC objects are its own "
                   "and go with it")
RUNNER_NAMESPACES_LACK = ("its own user (it is the runner's: what that user may read outside "
                          "the masked places it may read), no network namespace or wall (it "
                          "has the runner's network), no process-count limit")

USER_BOX_HOLDS = ("its own user, PID, mount and IPC namespaces; a network namespace behind the "
                  "wall (the relay runs outside, as the runner's user) unless the network is "
                  "open, then no unix socket; no capability, no_new_privs, seccomp")
USER_BOX_LACKS = ("a user of its own (it is the runner's uid, with that user's supplementary "
                  "groups: nothing of the runner's is writable in its view and the runner's "
                  "home and directory are masked, but a file outside them that the runner's "
                  "user alone may read it may read too), a cgroup (memory is bounded per "
                  "process)")


def landlock_lacks(*, own_user: bool = False, namespaces: bool = False) -> str:
    """What a Landlock tier does not hold, with what this machine's kernel cannot hold."""
    lacks = (RUNNER_NAMESPACES_LACK if namespaces else
             RUNNER_LANDLOCK_LACKS if own_user else LANDLOCK_LACKS)
    if own_user and not namespaces and (version := landlock.abi()) < 6:
        lacks += (f"; on this kernel (Landlock ABI {version}, scopes from 6: Linux 6.12) it can "
                  "signal a process of the runner's found by its pid, the helper's included "
                  "(not all at once: kill(-1) is refused)")
    if not seccomp.supported():
        lacks += (f"; no seccomp filter for this machine ({platform.machine()}): unix sockets, "
                  "io_uring, POSIX message queues and kernel keyrings are in reach")
    return lacks


def user_box_label(agent_user: str, why: str) -> str:
    """The label of the box in a user namespace (tier 1a, :mod:`.box.userbox`)."""
    return (f"contained in a user namespace (the runner's own user {agent_user}; "
            f"{USER_BOX_HOLDS}; a private view of the repository, home and /tmp; no access to "
            f"{HIDDEN}; not held: {USER_BOX_LACKS}; {why})")


def user_box_warning(agent_user: str, why: str, fix: str) -> str:
    """Its warning: what holds, what does not, the fix that gives the agent a user of its own."""
    return (f"Running the agent in the box inside a user namespace, as the runner's own user "
            f"({agent_user}), because {why}. It runs in {USER_BOX_HOLDS}, on a private view of "
            f"the repository with its own home and /tmp, with no access to {HIDDEN}; not held: "
            f"{USER_BOX_LACKS}. Fix: {fix}.")
