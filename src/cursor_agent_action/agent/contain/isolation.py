"""Which box the agent runs in, decided by the helper (the runner's user).

``isolation`` (the action input):

- ``auto`` (default): contain the agent when the runner allows it, else run it as the
  runner's user with a warning that names what is missing and how to get it.
- ``user``: contain it or fail before the agent starts.
- ``none``: run it as the runner's user, in its own process group (documented as unsafe).

Containment (the box, :mod:`.box.root`) needs Linux and root: the helper is root (act,
container jobs), or ``sudo -n`` works without a password (GitHub-hosted runners), and a
throwaway root process (:mod:`.boxprobe`) could make the box's namespaces and mounts (root in a
container without CAP_SYS_ADMIN cannot). The helper itself stays the runner's user; only the
box runs as root, started with ``python -I`` from the helper's venv.

Without root or sudo, where the probe makes a user namespace: the box in it (tier 1a,
:mod:`.box.userbox`); else, with ``auto``, Landlock as the runner's own user (1b, :mod:`.lockdown`).
"""

from __future__ import annotations

import json
import os
import pwd
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from cursor_agent_action.agent.contain import landlock, sudo, userns
from cursor_agent_action.agent.contain.box import limits
from cursor_agent_action.agent.contain.box.contract import (
    BoxLimits,
    BoxSpec,
    BoxStatus,
    ContractError,
)
from cursor_agent_action.agent.contain.box.net.credentials import Credentials
from cursor_agent_action.agent.contain.box.net.ledger import NetEvent
from cursor_agent_action.agent.contain.box.net.policy import NetPolicy
from cursor_agent_action.agent.contain.box.net.walllog import UNCONTAINED_NOTE, EventLines
from cursor_agent_action.agent.contain.held import (
    HIDDEN,
    LANDLOCK_HOLDS,
    NAMESPACES_HOLD,
    RUNNER_LANDLOCK_HOLDS,
    landlock_lacks,
    user_box_label,
)
from cursor_agent_action.agent.contain.probe import box_failure, probe_box
from cursor_agent_action.errors import SetupError, UsageError
from cursor_agent_action.options import setting

MODES = ("auto", "user", "none")
DEFAULT_AGENT_USER = "cursor-agent"
JAIL_EXIT_WAIT_S = 300.0
"""How long the box may take to compute the patch after the agent ended."""
BOX_TMP_BYTES = 1 << 30
"""Size of each of the box's /tmp, /var/tmp and /dev/shm (memory, within the box's limit)."""
BOX_MAX_FILE_BYTES = 100 << 20
"""A larger file (apparent size: sparse too) is neither copied into the box nor read for the
patch (GitHub refuses files over 100 MiB anyway)."""
BOX_MAX_TREE_BYTES = 4 << 30
"""A working tree with more file bytes than this is not copied: the run fails before the agent
starts."""
BOX_WRITE_BYTES = 2 << 30
"""What the agent may add to its copy of the tree."""
BOX_MAX_FILES = 1_000_000
"""A working tree with more entries than this is refused before the agent starts."""
STATUS_BYTES = 256 * 1024
"""The status file's size (as :data:`cursor_agent_action.agent.contain.box.root.STATUS_BYTES`)."""

MISSING_PROTECTIONS = (
    "the agent runs as the runner's own user, on the real working tree: whatever its shell "
    "starts can read this job's files (RUNNER_TEMP, the runner's home, a token the checkout "
    "left in .git/config) and the helper's process, write .git/, ~/.gitconfig, ~/.bashrc, "
    "/tmp and git-ignored files that later steps run, use all the runner's memory, and keep "
    "running after the step (the helper kills what it can find)"
)


@dataclass(frozen=True)
class Isolation:
    """The decision: ``contained`` or not, how root is had, and why not when not."""

    contained: bool
    via_sudo: bool = False
    why_not: str = ""
    agent_user: str = DEFAULT_AGENT_USER
    fix: str = ""  # uncontained: what would contain the agent on this runner
    landlock: bool = False  # contained by Landlock, not the box (agent.contain.lockdown)
    own_user: bool = False  # Landlock as the runner's own user (no root, no sudo)
    namespaces: bool = False  # own_user, in its own user, PID, mount and IPC namespaces
    no_namespaces: str = ""  # own_user without them: why (from the probe), and the fix
    user_box: bool = False  # the box in an unprivileged user namespace (box.userbox): tier 1a

    def landlock_fallback(self, reason: str) -> Isolation:
        """Tier 1b, in namespaces, where tier 1a's box could not be set up."""
        return Isolation(True, agent_user=self.agent_user, fix=self.fix, landlock=True,
                         own_user=True, namespaces=True, why_not=f"{self.why_not}, and the box "
                         f"in a user namespace could not be set up ({reason.rstrip('.')})")

    @property
    def warning_title(self) -> str:
        return "agent in a user namespace, no root" if self.user_box else (
            "agent under Landlock, no box")

    @property
    def runner_lacks(self) -> str:
        """What the runner's-own-user tier does not hold here."""
        if self.namespaces:
            return landlock_lacks(own_user=True, namespaces=True)
        return f"{landlock_lacks(own_user=True)}; no namespaces: {self.no_namespaces}"

    @property
    def walled(self) -> bool:
        """In the box, behind its network wall (Landlock has none)."""
        return self.contained and not self.landlock

    @property
    def wall_mode(self) -> str:
        """The record's network mode when there is no wall."""
        return "landlock" if self.landlock else "uncontained"

    @property
    def label(self) -> str:
        """For the log and the job summary."""
        if self.user_box:
            return user_box_label(self.agent_user, self.why_not)
        if self.own_user:
            spaces = (f"own user, PID, mount and IPC namespaces ({NAMESPACES_HOLD}); "
                      if self.namespaces else "")
            return (f"landlock as the runner's own user ({self.agent_user}; {spaces}"
                    f"{LANDLOCK_TREE}, home and /tmp; no access to {HIDDEN}; "
                    f"{RUNNER_LANDLOCK_HOLDS}; not held: {self.runner_lacks}; {self.why_not})")
        if self.landlock:
            return (f"landlock (user {self.agent_user}; {LANDLOCK_TREE}, home "
                    f"and /tmp; no access to {HIDDEN}; {LANDLOCK_HOLDS}; not held: "
                    f"{landlock_lacks()}; {self.why_not})")
        if self.contained:
            return (f"contained (user {self.agent_user}; own PID, mount and IPC namespaces; a "
                    "private view of the repository, home and /tmp)")
        return f"none (the agent ran as the runner's user: {self.why_not})"


LANDLOCK_TREE = ("a private copy of the repository (a read-only run: the checkout itself, "
                 "read-only)")
"""The tree under Landlock (agent/contain/inplace.py says when a read-only run still copies)."""


def decide(requested: str, agent_user: str = DEFAULT_AGENT_USER) -> Isolation:
    """The isolation for ``requested`` (one of :data:`MODES`) on this machine: with root (or
    passwordless sudo), only once a throwaway process made the box's namespaces and mounts."""
    if requested not in MODES:
        raise UsageError(f"isolation must be one of {', '.join(MODES)}, not {requested!r}.",
                         "Use auto (the default), user or none.")
    if requested == "none":
        return Isolation(False, why_not="isolation is none")
    if not sys.platform.startswith("linux"):
        why = f"the box needs Linux namespaces (this runner is {sys.platform})"
        fix = "run the job on a GitHub-hosted Linux runner (runs-on: ubuntu-latest)"
    elif (root := os.geteuid() == 0) or (sudo_check := sudo.check()).works:
        found = probe_box(via_sudo=not root)
        if found.ok:
            return Isolation(True, via_sudo=not root, agent_user=agent_user)
        why, fix = box_failure(found)
        if root and requested == "auto" and landlock.abi() >= 1:
            return Isolation(True, agent_user=agent_user, why_not=why, fix=fix, landlock=True)
    else:
        why = f"the helper is not root and {sudo_check.why_not}"
        fix = f"{sudo_check.fix}, or run the job on a GitHub-hosted Linux runner"
        spaces = probe_box(via_sudo=False, user_namespace=True)
        if spaces.ok:  # tier 1a: the box in a user namespace of the runner's user
            return Isolation(True, agent_user=_runner_name(), why_not=why, fix=fix,
                             user_box=True)
        no_box, no_box_fix = userns.why_not(spaces.error or spaces.step)
        if requested == "auto" and landlock.abi() >= 1:  # tier 1b: Landlock
            return Isolation(True, agent_user=_runner_name(), why_not=why, fix=fix,
                             landlock=True, own_user=True,
                             no_namespaces=f"{no_box} (fix: {no_box_fix})")
        why = f"{why}, and {no_box}"
        fix = f"{fix}; or {no_box_fix}"
    if requested == "user":
        raise SetupError(f"isolation is user, but the agent cannot be contained here: {why}.",
                         f"{fix[0].upper()}{fix[1:]}; or set isolation to auto (run "
                         "uncontained, with a warning) or none.")
    return Isolation(False, why_not=why, fix=fix)


def _runner_name() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def landlock_warning(isolation: Isolation) -> str:
    """The warning for ``auto`` under Landlock: what holds, what does not, the fix."""
    if isolation.own_user:
        spaces = (f" in its own user, PID, mount and IPC namespaces ({NAMESPACES_HOLD})"
                  if isolation.namespaces else "")
        return (f"Running the agent under Landlock as the runner's own user{spaces}, because "
                f"{isolation.why_not}. It runs on {LANDLOCK_TREE} with its own home and /tmp, "
                f"with no access to {HIDDEN} (Landlock); {RUNNER_LANDLOCK_HOLDS} (seccomp); "
                f"not held: {isolation.runner_lacks}: it can reach anything the runner "
                f"can on the network. Fix: {isolation.fix}.")
    return (f"Running the agent under Landlock instead of the box, because "
            f"{isolation.why_not}. It runs as its own user on {LANDLOCK_TREE}, with no access "
            f"to {HIDDEN} (Landlock); {LANDLOCK_HOLDS} (seccomp); "
            f"not held: {landlock_lacks()}: it can reach anything the runner can (the cloud "
            "metadata address, services on the runner's loopback, any host). Fix: "
            f"{isolation.fix}; set isolation: user to fail instead.")


def fallback_warning(isolation: Isolation) -> str:
    """The warning for ``auto`` without containment: the real cause, what is lost, a fix that
    works on this runner."""
    fix = isolation.fix or ("run on a GitHub-hosted Linux runner, or give the runner's user "
                            "passwordless sudo")
    return (f"Running the agent without the box, because {isolation.why_not}. Missing "
            f"protections: {MISSING_PROTECTIONS}; {UNCONTAINED_NOTE}. Fix: {fix}; set "
            "isolation: user to fail instead of running uncontained.")


@dataclass
class BoxResult:
    """What the box reported after the agent ran (None: no status of this version)."""

    returncode: int | None
    status: BoxStatus | None

    @property
    def patch(self) -> Path | None:
        return Path(self.status.patch) if self.status is not None and self.status.patch else None


@dataclass
class Jail:
    """One contained start of the agent: the spec, the command, the control pipe, the status."""

    isolation: Isolation
    state_dir: Path
    spec: BoxSpec
    _events: tuple[int, EventLines] = field(  # read so far, the line splitter
        default_factory=lambda: (0, EventLines()))
    _status_fd: int = -1  # the status file, kept open from its making: read through it

    @property
    def spec_file(self) -> Path:
        return self.state_dir / "box-spec.json"

    @property
    def status_file(self) -> Path:
        return self.state_dir / "box-status.json"

    @property
    def patch_file(self) -> Path:
        return self.state_dir / "box-changes.patch"

    def command(self) -> list[str]:
        """Written the spec (0600: it holds the agent's environment) and the status file (made
        and filled now: the box writes it in place, even on a full disk); the box's argv."""
        self.patch_file.unlink(missing_ok=True)
        self.status_file.unlink(missing_ok=True)
        (self.state_dir / "box-network.jsonl").unlink(missing_ok=True)
        self._events = (0, EventLines())
        self._close_status()
        fd = os.open(self.status_file, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                     0o600)
        os.pwrite(fd, b" " * STATUS_BYTES, 0)
        # Read back through this descriptor, not by name: as the runner's own user (tier
        # 1b), the agent may change the file's mode (Landlock does not govern it) but not this.
        self._status_fd = fd
        fd = os.open(self.spec_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(self.spec.to_json(), handle)
        program = ("cursor_agent_action.agent.contain.lockdown" if self.isolation.landlock
                   else "cursor_agent_action.agent.contain.box.userbox" if self.isolation.user_box
                   else "cursor_agent_action.agent.contain.box.root")
        argv = [sys.executable, "-I", "-m", program, str(self.spec_file)]
        return ["sudo", "-n", "--", *argv] if self.isolation.via_sudo else argv

    def network_events(self) -> list[NetEvent]:
        """What the wall reported live since the last call (its first refusals)."""
        path = self.state_dir / "box-network.jsonl"
        done, lines = self._events
        try:
            with path.open("rb") as handle:
                handle.seek(done)
                data = handle.read(1 << 20)
        except OSError:
            return []
        self._events = (done + len(data), lines)
        return lines.feed(data)

    def _close_status(self) -> None:
        if self._status_fd >= 0:
            os.close(self._status_fd)
            self._status_fd = -1

    @staticmethod
    def send(control: IO[bytes] | None, what: bytes) -> None:
        """``T`` (stop the agent) or ``K`` (kill everything) to the box."""
        if control is None or control.closed:
            return
        try:
            control.write(what)
            control.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def result(self, jail_code: int | None, *, stopped: bool) -> BoxResult:
        """What the box reported. Raises :class:`ContainmentFailed` only when the box says the
        agent never started (and nobody stopped it: a cancelled run is not run again), and
        :class:`BoxFailed` for anything else without a status: once the agent may have run,
        the box fails closed."""
        try:
            data = (os.pread(self._status_fd, STATUS_BYTES + 1, 0) if self._status_fd >= 0
                    else self.status_file.read_bytes())
            status: BoxStatus | None = BoxStatus.from_json(json.loads(data.strip() or b"{}"))
        except (OSError, ValueError, ContractError):
            status = None
        finally:
            self._close_status()
            self.spec_file.unlink(missing_ok=True)
        if status is not None and not status.started and status.mask is not None and (
                status.mask.ca_error):  # never a reason to run the agent with less
            raise SetupError(f"the relay could not hold the API key: {status.error}.",
                             "Install openssl on the runner (it makes the run's certificate "
                             f"authority), or set {setting('--key-masking')} to masked (the "
                             "key in the box when there is no CA) or off.")
        if status is not None and not status.started and not stopped:
            raise ContainmentFailed(status.error or "the box could not be set up",
                                    cap=status.too_large, final=status.final)
        if status is not None and status.returncode is not None:
            return BoxResult(status.returncode, status)
        reason = (status.error if status is not None else "") or (
            f"the box ended with code {jail_code} and wrote no status (killed, or out of "
            "memory or disk)")
        raise BoxFailed(reason, status)


class ContainmentFailed(SetupError):
    """The box could not be set up; the agent was not started."""

    title = "containment failed"

    def __init__(self, reason: str, *, cap: bool = False, final: bool = False) -> None:
        fix = ("Make the working tree smaller, e.g. check out fewer files (a sparse "
               "checkout), or raise the input max-tree-files (default "
               f"{BOX_MAX_FILES:,} files and directories); where the box has no overlay it also "
               f"copies at most {BOX_MAX_TREE_BYTES >> 30} GiB."
               if cap else
               "Look for what an earlier step may have left: a directory of the checkout or of "
               "the action's chats store (under RUNNER_TEMP) closed to the runner's user; give "
               "it back (`chmod -R u+rwX`) or check out again. After such a failure the agent "
               "is never run another way."
               if final else
               "Check that the runner allows root (or passwordless sudo), PID and mount "
               "namespaces; set isolation to none to run uncontained (unsafe).")
        super().__init__(f"the agent could not be contained: {reason.rstrip('.')}.", fix)
        self.reason = reason
        self.cap = cap
        self.final = final or cap  # no other way of running the agent is tried


class BoxFailed(Exception):
    """The box ended without a proper status after the agent may have run: a failed run,
    never a reason to run the agent another way."""

    def __init__(self, reason: str, status: BoxStatus | None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


def jail_for(
    isolation: Isolation, *, state_dir: Path, repo_root: Path, cwd: Path, home: Path,
    argv: Sequence[str], env: Mapping[str, str], masks: Sequence[Path],
    reveals: Sequence[Path] = (), shares: Sequence[Path] = (),
    files: Mapping[str, str | None] | None = None,
    git: bool = True,
    network: NetPolicy | None = None, storage: str = "auto", max_files: int = BOX_MAX_FILES,
    credentials: Credentials | None = None, view_commit: str = "",
    view_skip: Sequence[str] = (), view_files: Sequence[str] = (),
    tree_read_only: bool = False,
) -> Jail:
    """The box that runs ``argv`` in ``cwd`` as the agent user, on its own view of the work
    tree at ``repo_root`` (``tree_read_only``: nothing it writes there can be kept)."""
    prompt = state_dir / "prompt.md"
    spec = BoxSpec(
        user=isolation.agent_user, argv=tuple(argv), env=dict(env), cwd=str(cwd),
        repo_root=str(repo_root), home=str(home), box_dir=str(state_dir / "box"),
        chats_store=str(state_dir.parent / "agent-chats"),
        status_file=str(state_dir / "box-status.json"),
        patch_file=str(state_dir / "box-changes.patch"),
        network_events=str(state_dir / "box-network.jsonl"),
        limits=BoxLimits(memory_bytes=limits.default_memory_bytes(), tmp_bytes=BOX_TMP_BYTES,
                         max_file_bytes=BOX_MAX_FILE_BYTES, max_total_bytes=BOX_MAX_TREE_BYTES,
                         write_bytes=BOX_WRITE_BYTES, max_files=max_files),
        home_files=dict(files or {}),
        masks=tuple(sorted({str(path) for path in masks})),
        reveals=tuple(sorted({str(path) for path in reveals})),
        shares=tuple(sorted({str(path) for path in shares if path.is_dir()})),
        files={str(prompt): str(prompt)} if prompt.exists() else {},
        git=git, network=network, storage=storage, namespaces=isolation.namespaces,
        credentials=credentials, view_commit=view_commit, view_skip=tuple(view_skip),
        view_files=tuple(view_files), tree_read_only=tree_read_only,
    )
    return Jail(isolation, state_dir, spec)
