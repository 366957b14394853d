"""The box without root: the whole box inside an unprivileged user namespace (tier 1a).

    python -I -m cursor_agent_action.agent.contain.box.userbox SPEC.json

Started by the helper, as the runner's own user, where the helper is neither root nor has
passwordless sudo (a self-hosted runner) and the probe could make a user namespace
(:func:`..isolation.decide`). The same program as :mod:`.root`, with the same spec, status
and control pipe, after one first step: this process enters a new user namespace that maps
only the runner's own uid and gid to themselves (``setgroups`` denied: :mod:`..userns`).
Inside it, it holds every capability over what that namespace owns, and makes what the root
box makes:

- its own mount namespace: the overlay over the working tree (``userxattr``, Linux 5.11+; no id
  map: the agent is the tree's owner, so the upper directory holds the runner's own files),
  else the copy; the real ``.git`` read-only with masked config; a fresh home; masks over the
  runner's home and directory (``.runner``, ``.credentials*``, ``_diag``), the file-command and
  temporary folders; private ``/tmp``, ``/var/tmp``, ``/dev/shm``; every other mount read-only;
- PID, IPC and network namespaces for the agent; the network wall's sockets bound in the box's
  network namespace by a thread of this program (:meth:`.net.jailside.BoxNetwork.enter_beside`),
  the relay running from the runner's own network namespace, as the runner's user: the only
  way out, by name, as in the root box;
- the agent started as the runner's uid: ``execve`` of a non-root uid drops every capability
  of the namespace; ``no_new_privs``; the box's seccomp filter.

What differs from the root box, and is said in the summary (:mod:`..held`): the agent is the
runner's own uid (inside the box nothing of the runner's is writable and its secrets are
masked, but it keeps the runner user's supplementary groups: an unprivileged user namespace
cannot drop them); memory is bounded per process (no cgroup can be made without root).

The patch is computed as in the root box, from the overlay's upper directory, by this program
after the agent's namespace is gone; the helper applies it as the runner's user.
"""

from __future__ import annotations

import os
import pwd
import sys
from pathlib import Path

from cursor_agent_action.agent.contain import userns
from cursor_agent_action.agent.contain.box import root
from cursor_agent_action.agent.contain.box.contract import BoxSpec, BoxStatus
from cursor_agent_action.agent.contain.box.user import AgentUser


def own_user() -> AgentUser:
    """The runner's own user, as the agent (its groups kept: see the module docstring)."""
    uid, gid = os.getuid(), os.getgid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = str(uid)
    return AgentUser(name, uid, gid, keeps_groups=True)


def run(spec: BoxSpec, status: root.Status) -> int:
    """Enter the user namespace, then the root box's program (:func:`.root.run`)."""
    agent = own_user()
    try:
        userns.enter()
    except userns.UserNamespaceError as exc:
        why, fix = userns.why_not(str(exc))
        status.write(BoxStatus(False, error=f"{why} (fix: {fix})"))
        return root.EXIT_SETUP
    return root.run(spec, status, own_user=agent)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or os.geteuid() == 0:
        sys.stderr.write("usage (as the runner's user, not root): python -I -m "
                         "cursor_agent_action.agent.contain.box.userbox SPEC\n")
        return 2
    spec = BoxSpec.take(Path(args[0]))
    return run(spec, root.Status(spec.status_file))


if __name__ == "__main__":
    sys.exit(main())
