"""What the agent user may touch, set up as root before the run and undone after it.

- The agent user: created once (``useradd --system``: no password, no login shell, its own
  group and no other), refused if it exists with uid 0 or with any supplementary group (a
  ``sudo``, ``docker`` or ``adm`` member is not a box).
- Its home: private (mode 0700, the agent's), per job, so ``resume`` finds the chat.
- The workspace: every entry the runner's user owns becomes the agent's, except ``.git`` at any
  depth and the protected top-level directories (``.cursor``, ``.claude``, ``.github``), which
  stay the runner's and so cannot be written. A directory holding such an entry stays the
  runner's too, group-writable by the agent's group with the sticky bit, so the agent can add
  and change its own files there but cannot rename or delete the protected entry (and plant a
  ``.git`` of its own in its place).
- Reachability: each directory above a path the agent must reach (the workspace, its home, the
  CLI) gets the others' traverse bit if it lacks it, and keeps it (see _make_reachable).

After the run every entry the agent user owns in the workspace goes back to the runner's user
(later steps, and the next checkout, must be able to change and delete it), and every mode and
group changed in the workspace is restored. All of it happens with the agent's processes gone:
nothing can race the walk. Links are never followed.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROTECTED_TOP = (".cursor", ".claude", ".github")
"""Top-level directories the agent can read but never write (the permission floor's too)."""
PROTECTED_ANYWHERE = (".git",)
USERADD = "/usr/sbin/useradd"


class AccessError(Exception):
    """The box cannot be set up as asked."""


@dataclass(frozen=True)
class AgentUser:
    name: str
    uid: int
    gid: int


def agent_user(name: str) -> AgentUser:
    """The agent's user, created if missing; refused if it could do more than a box allows."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        done = subprocess.run(
            [USERADD, "--system", "--user-group", "--no-create-home", "--home-dir",
             "/nonexistent", "--shell", "/usr/sbin/nologin", name],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        if done.returncode != 0:
            raise AccessError(f"cannot create the agent user {name!r} with useradd: "
                              f"{done.stderr.strip() or done.returncode}") from None
        entry = pwd.getpwnam(name)
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise AccessError(f"the agent user {name!r} is root or in the root group")
    groups = set(os.getgrouplist(name, entry.pw_gid)) - {entry.pw_gid}
    if groups:
        names = sorted(_group_name(gid) for gid in groups)
        raise AccessError(f"the agent user {name!r} is in other groups ({', '.join(names)}); "
                          "it must have only its own")
    return AgentUser(name, entry.pw_uid, entry.pw_gid)


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


@dataclass
class Access:
    """What :func:`prepare` changed, for :meth:`restore`."""

    workspace: Path
    agent: AgentUser
    owner: tuple[int, int]
    modes: dict[str, int] = field(default_factory=dict)  # path -> mode before
    groups: dict[str, int] = field(default_factory=dict)  # path -> gid before
    restored: bool = False

    def restore(self) -> None:
        """Give the workspace back to the runner's user; undo every mode and group change."""
        if self.restored:
            return
        self.restored = True
        uid, gid = self.owner
        for path in _walk(self.workspace, skip_protected=False):
            info = os.lstat(path)
            if info.st_uid == self.agent.uid or info.st_gid == self.agent.gid:
                # chown clears a file's set-user-ID and set-group-ID bits, also as root.
                new_uid = uid if info.st_uid == self.agent.uid else info.st_uid
                new_gid = gid if info.st_gid == self.agent.gid else info.st_gid
                os.lchown(path, new_uid, new_gid)
        for path, old_gid in self.groups.items():
            os.lchown(path, -1, old_gid)
        for path, mode in reversed(list(self.modes.items())):
            os.chmod(path, mode)


def _walk(root: Path, *, skip_protected: bool) -> list[str]:
    """Every entry below ``root`` (and root), links not followed; without the protected
    entries and what is inside them when ``skip_protected``."""
    found = [str(root)]
    for directory, dirs, files in os.walk(root, followlinks=False):
        at_top = directory == str(root)
        keep = []
        for name in dirs:
            protected = name in PROTECTED_ANYWHERE or (at_top and name in PROTECTED_TOP)
            if skip_protected and protected:
                continue
            keep.append(name)
        dirs[:] = keep
        found += [os.path.join(directory, name) for name in keep]
        found += [
            os.path.join(directory, name) for name in files
            if not (skip_protected and name in PROTECTED_ANYWHERE)
        ]  # fmt: skip
    return found


def _make_reachable(path: Path) -> None:
    """Give the others' traverse bit to each directory above ``path`` (and to ``path`` if it
    is a directory) that lacks it. It stays: a traverse bit lets nobody list or read anything,
    and taking it back while another job's agent (same machine, shared parents) still runs
    would break that job."""
    chain = list(reversed(path.parents)) + ([path] if path.is_dir() else [])
    for parent in chain:
        info = os.stat(parent)
        if not info.st_mode & stat.S_IXOTH:
            os.chmod(parent, stat.S_IMODE(info.st_mode) | stat.S_IXOTH)


def _private_home(home: Path, agent: AgentUser, make: list[Path]) -> None:
    """The home (0700, the agent's) and the directories ``make`` names inside it."""
    home.mkdir(parents=True, exist_ok=True)
    info = os.lstat(home)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise AccessError(f"the agent's home {home} is not a directory")
    os.lchown(home, agent.uid, agent.gid)
    os.chmod(home, 0o700)
    for path in [home / "tmp", *make]:
        if not path.is_relative_to(home):
            raise AccessError(f"{path} is not inside the agent's home {home}")
        for part in reversed([path, *path.parents]):
            if part.is_relative_to(home) and part != home:
                # An earlier run's agent may have left a link (or a file) here, pointing where
                # root must not chown: replace it. Failing instead would let that agent push
                # the next run out of its box (isolation auto falls back).
                if os.path.islink(part) or (os.path.lexists(part) and not part.is_dir()):
                    os.unlink(part)
                part.mkdir(exist_ok=True)
                os.lchown(part, agent.uid, agent.gid)


def _home_files(home: Path, agent: AgentUser, files: dict[str, str | None]) -> None:
    """Root's files in the home (the MCP servers), 0644 and root's: the agent cannot change
    them. ``None`` removes what an earlier run's agent may have left there. Nothing in the home
    is followed: a planted link is replaced like any other entry. The directory holding a file
    is the agent's (the CLI keeps its own files beside it)."""
    for relative, text in files.items():
        path = home / relative
        if relative.startswith("/") or ".." in Path(relative).parts or path.parent == home:
            raise AccessError(f"{relative} is not a file in a directory of the agent's home")
        parent = path.parent
        if os.path.islink(parent) or (os.path.lexists(parent) and not parent.is_dir()):
            os.unlink(parent)
        if not parent.exists():
            parent.mkdir(mode=0o700)
            os.lchown(parent, agent.uid, agent.gid)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)
        if text is not None:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)


def prepare(spec: dict[str, Any], agent: AgentUser) -> Access:
    """Set the box up (see the module docstring); undo with ``Access.restore``."""
    workspace = Path(spec["workspace"])
    owner = (int(spec["owner"][0]), int(spec["owner"][1]))
    access = Access(workspace, agent, owner)
    try:
        _private_home(Path(spec["home"]), agent, [Path(p) for p in spec.get("make", ())])
        _home_files(Path(spec["home"]), agent, spec.get("files", {}))
        for path in [workspace, *map(Path, spec.get("reach", ()))]:
            _make_reachable(path)
        _make_reachable(Path(spec["home"]).parent)
        protected_parents = {str(workspace)}
        for entry in _walk(workspace, skip_protected=False):
            name = os.path.basename(entry)
            if name in PROTECTED_ANYWHERE and entry != str(workspace):
                protected_parents.add(os.path.dirname(entry))
        for entry in _walk(workspace, skip_protected=True):
            info = os.lstat(entry)
            if entry in protected_parents:
                _shared_sticky(entry, info, access)
            elif info.st_uid == owner[0]:
                os.lchown(entry, agent.uid, agent.gid)
    except BaseException:
        access.restore()
        raise
    return access


def _shared_sticky(entry: str, info: os.stat_result, access: Access) -> None:
    """A directory holding a protected entry: the runner's, writable by the agent's group,
    sticky (only an entry's owner may rename or delete it)."""
    access.groups.setdefault(entry, info.st_gid)
    access.modes.setdefault(entry, stat.S_IMODE(info.st_mode))
    os.lchown(entry, -1, access.agent.gid)
    os.chmod(entry, stat.S_IMODE(info.st_mode) | stat.S_IRWXG | stat.S_ISVTX)  # noqa: S103
