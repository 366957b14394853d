"""The agent's OS user: created once (no password, no login shell, its own group and no other),
refused if it exists with uid 0 or with any supplementary group (a ``sudo``, ``docker`` or
``adm`` member is not a box)."""

from __future__ import annotations

import grp
import os
import pwd
import subprocess
from dataclasses import dataclass

USERADD = "/usr/sbin/useradd"
_NO_LOGIN = ("--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin")


class UserError(Exception):
    """The agent's user cannot be had as the box needs it."""


@dataclass(frozen=True)
class AgentUser:
    name: str
    uid: int
    gid: int
    keeps_groups: bool = False  # the runner's own user in a user namespace (:mod:`.userbox`)


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def agent_user(name: str) -> AgentUser:
    """The agent's user, created if missing; refused if it could do more than a box allows."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        try:  # a group of that name left behind (userdel can leave it): the user joins it
            group = ["--gid", grp.getgrnam(name).gr_name]
        except KeyError:
            group = ["--user-group"]
        argv = [USERADD, "--system", *group, *_NO_LOGIN, name]
        done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
        if done.returncode != 0:
            raise UserError(f"cannot create the agent user {name!r} with useradd: "
                            f"{done.stderr.strip() or done.returncode}") from None
        entry = pwd.getpwnam(name)
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise UserError(f"the agent user {name!r} is root or in the root group")
    groups = set(os.getgrouplist(name, entry.pw_gid)) - {entry.pw_gid}
    if others := [member for member in grp.getgrgid(entry.pw_gid).gr_mem if member != name]:
        raise UserError(f"the agent user's group has other members ({', '.join(others)}); "
                        "it must be the agent's alone")
    if groups:
        names = sorted(_group_name(gid) for gid in groups)
        raise UserError(f"the agent user {name!r} is in other groups ({', '.join(names)}); "
                        "it must have only its own")
    return AgentUser(name, entry.pw_uid, entry.pw_gid)
