"""The agent under Landlock, where the box cannot be made: its own user when this program is
root (a container job, a Kubernetes pod without CAP_SYS_ADMIN), else the runner's own user (a
self-hosted runner without sudo); a private copy (a read-only run: the checkout itself,
read-only), no namespaces.

    python -I -m cursor_agent_action.agent.contain.lockdown SPEC.json   (as root, or the runner)

The spec and the protocol are the box's (:mod:`.box.root`): stdout and stderr are the agent's,
stdin the control channel (``T``: SIGTERM the agent; ``K`` or the pipe closing: kill it all),
the status written in place into the file the helper made. What holds, and what does not:

- the agent runs as its own user (no groups, ``no_new_privs``, no kernel keyrings), on a copy
  of the work tree (no ``.git``) in a directory of its own, with a fresh home and ``/tmp``; the
  copy's patch is made by our hardened git against the real repository, as in the box; a run
  whose policy allows no write is shown the checkout itself instead, read-only, its ``.git``
  directories masked, its attributes checked after the run (:mod:`.inplace`);
- Landlock: it reads everything but the masked places (the runner's home, ``RUNNER_TEMP``, the
  tool cache, ``/root``, the helper's state, the real work tree with its ``.git/config``, the
  service-account tokens in ``/run/secrets`` and ``/var/run/secrets``) and writes only its
  copy, home and ``/tmp``; it cannot signal a process outside its domain (ABI 6+);
- seccomp: no unix socket (pathname or abstract: not the container runtime's, D-Bus's or any
  under ``/run``), no io_uring, no POSIX message queue, no kernel keyrings (:mod:`.box.seccomp`);
  every System V IPC object its user owns or made is removed after the run (:mod:`.hostipc`);
- not held: no PID namespace (what it leaves running is killed by its user id after the run,
  the user being the agent's alone), no network wall (it has the runner's network), the copy is
  on disk, not a sized tmpfs.

As the runner's own user (not root: :func:`run` with ``own_user``) the same, except: no change
of user (Landlock keeps it from the runner's files and, from ABI 6, from signalling the
runner's processes; from ABI 1 from tracing them or reading their ``/proc/PID/environ``);
what it leaves running is killed as this program's descendants (it is their subreaper: an
orphan comes back to it however it forked), never by user id; only the System V objects made
during the run are removed; no process-count limit (it would count the runner's processes).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

from cursor_agent_action import changeset, safegit
from cursor_agent_action.agent.contain import hostipc, inplace, landlock, reap, userns
from cursor_agent_action.agent.contain.box import finish, home, limits, seccomp, storage, tree
from cursor_agent_action.agent.contain.box.contract import BoxSpec, BoxStatus, Listed
from cursor_agent_action.agent.contain.box.libc import die_with_parent, libc, set_subreaper
from cursor_agent_action.agent.contain.box.root import Status, setup_failed, silence_output
from cursor_agent_action.agent.contain.box.user import AgentUser, UserError, agent_user

EXIT_SETUP = 125


class Unsupported(OSError):
    """What this tier needs, the runner cannot give (a subreaper, a CLI its user may run): the
    runner's reason, after which another way of running the agent may be tried. Any other
    failure before the start is final: it may be an earlier agent's doing (a closed directory
    of the checkout or of the chats store: red teams 4 to 6)."""
_POLL_S = 0.2


class Prepared:
    """The agent's area (its copy, home, /tmp, files) and what its process gets."""

    def __init__(self, spec: BoxSpec, agent: AgentUser) -> None:
        self.area = Path(tempfile.mkdtemp(prefix="caa-lockdown-"))
        # where storage.finish finds the copy, the home and the patch's objects
        self.spec = replace(spec, box_dir=str(self.area))
        try:
            self._prepare(self.spec, agent)
        except BaseException:
            self.remove()
            raise

    def _prepare(self, spec: BoxSpec, agent: AgentUser) -> None:
        if spec.view_commit:  # the helper never asks: a commit's view needs the box
            raise ValueError("view-commit needs the box; Landlock shows the checkout")
        # The agent passes through to its own directories only.
        os.chmod(self.area, 0o711)  # noqa: S103
        caps = spec.limits
        real = Path(spec.repo_root)
        top = os.path.realpath(real)
        inside = frozenset(os.path.relpath(mask, top) for mask in map(os.path.realpath,
                                                                       spec.masks)
                           if mask.startswith(f"{top}/"))
        # Shown in place or copied, the real checkout's attributes are checked after the run
        # (Landlock does not govern them: the runner's own user owns it).
        self.snapshot = inplace.take(str(real), max_entries=caps.max_files, skip=inside)
        self.in_place = spec.tree_read_only and spec.storage != "copy"
        why = (inplace.refusal(self.snapshot, abi=landlock.abi(), other_user=os.geteuid() == 0)
               if self.in_place else "")
        if self.in_place and not why and not _can(agent, spec.cwd, os.R_OK | os.X_OK):
            why = "the agent's user cannot reach the working directory (a copy is its own)"
        self.in_place = self.in_place and not why
        if self.in_place:
            self.copy = tree.Copy(storage="in-place", note=(
                f"the checkout itself, read-only, not copied (a read-only run: nothing written "
                f"in the tree could be kept); its {len(self.snapshot.entries):,} entries "
                "checked after the run"))
            (self.area / storage.FINISH_DIR).mkdir(mode=0o700)  # storage.finish: the chats
        else:  # an error copying is final too (run): never the runner's reason
            self._copy(spec, agent, why_not_in_place=why)
        self._areas(spec, agent)

    def _copy(self, spec: BoxSpec, agent: AgentUser, *, why_not_in_place: str) -> None:
        """The private copy of the tree, and its base (what already differed from HEAD)."""
        caps = spec.limits
        real = Path(spec.repo_root)
        # The byte cap first, from the snapshot's sizes (its walk held the entries' cap).
        self.snapshot.within_bytes(max_file_bytes=caps.max_file_bytes,
                                   max_total_bytes=caps.max_total_bytes)
        (self.area / "tree").mkdir()
        (self.area / storage.OBJECTS_DIR).mkdir(mode=0o700, parents=True)  # storage.finish
        with ThreadPoolExecutor(1) as pool:  # the copy's base hashed (by git) as root copies
            base = pool.submit(_base, spec, self.area / storage.OBJECTS_DIR)
            started = time.monotonic()
            self.copy = tree.copy_tree(str(real), str(self.area / "tree"), agent.uid, agent.gid,
                                       max_file_bytes=caps.max_file_bytes,
                                       max_total_bytes=caps.max_total_bytes)
            self.copy.note = copy_note(self.copy, time.monotonic() - started)
            if why_not_in_place:
                self.copy.note += f" (a read-only run, not shown in place: {why_not_in_place})"
            dirty = base.result()
        if dirty is not None:
            self.copy.dirty = dirty
            with contextlib.suppress(changeset.ChangesetError):
                known = {**changeset.head_tree(real), **self.copy.dirty}
                self.copy.absent = [
                    path
                    for path, (mode, _) in known.items()
                    if mode not in ("160000", changeset.ABSENT_MODE) and path not in self.copy.stats
                ]
        os.chmod(self.area / "tree", 0o700)  # the agent's alone, as its home and /tmp

    def _areas(self, spec: BoxSpec, agent: AgentUser) -> None:
        """The agent's home, /tmp and files, its working directory, command and rules."""
        real = Path(spec.repo_root)
        store = Path(spec.chats_store)
        home.make_home(self.area / "home", agent, dict(spec.home_files),
                       store if store.is_dir() else None)
        tmp = self.area / "tmp"
        tmp.mkdir(mode=0o700)
        os.chown(tmp, agent.uid, agent.gid)
        files = self.area / "files"  # root's, readable by the agent's group only
        files.mkdir(mode=0o750)
        root = os.geteuid() == 0
        if root:
            os.chown(files, 0, agent.gid)
        moved: dict[str, str] = {}
        for index, source in enumerate(spec.files):
            copied = files / f"{index}-{Path(source).name}"
            shutil.copyfile(source, copied, follow_symlinks=False)
            if root:
                os.chown(copied, 0, agent.gid)
            copied.chmod(0o640)
            moved[source] = str(copied)
        inside = os.path.relpath(spec.cwd, real)
        self.cwd = (spec.cwd if self.in_place else
                    str(self.area / "tree" / ("" if inside == "." else inside)))
        self.argv = [moved.get(arg, arg) for arg in spec.argv]
        for source, target in moved.items():  # the long prompt's path, inside the instruction
            self.argv = [arg.replace(source, target) for arg in self.argv]
        self.env = {name: _rehome(value, spec.home, str(self.area / "home"))
                    for name, value in spec.env.items()}
        self.env["TMPDIR"] = str(tmp)
        if not self.in_place:  # its copy, all of it; not the real tree
            tree_masks, tree_writable, tree_readable = [str(real)], [str(self.area / "tree")], []
        else:  # the real tree, read only, without its .git directories
            tree_masks = [str(real / path) for path in self.snapshot.git_dirs]
            tree_writable, tree_readable = [], [str(real)]
        rules = landlock.agent_rules(
            masks=[*spec.masks, *landlock.SERVICE_ACCOUNT_SECRETS, *SHARED_TEMP, *tree_masks,
                   str(self.area)],
            writable=[*tree_writable, str(self.area / "home"), str(tmp), *spec.shares],
            readable=[*spec.reveals, str(files), *tree_readable],
        )
        for place in tree_readable:  # listed too where a .git is masked (names, no contents)
            rules.allow(place, landlock.READ_DIR)
        self.ruleset = landlock.make_ruleset(rules, landlock.abi())
        if not _can(agent, self.argv[0], os.X_OK):  # said now, while another way is open
            raise Unsupported(f"the agent's user {agent.name} cannot run the CLI at "
                          f"{self.argv[0]} (a directory on its way is closed to other users)")

    def remove(self) -> None:
        """The area, copy and all (rmtree works on descriptors: no link it holds is followed)."""
        shutil.rmtree(self.area, ignore_errors=True)


SHARED_TEMP = ("/tmp", "/var/tmp", "/dev/shm", "/run/user")  # noqa: S108 - closed, not used
"""The machine's shared temporary places and every user's runtime directory: closed to the
agent (its ``TMPDIR`` is a directory of its own). Without a mount namespace there is no private
``/tmp`` to give; as the runner's own user, the runner's files there (a registry login in
``$XDG_RUNTIME_DIR/containers/auth.json``, another step's temporary files) would be the
agent's to read (the runner's ``XDG_RUNTIME_DIR``, wherever it is, is among the helper's
masks). A tool that writes to ``/tmp`` by name, not through ``TMPDIR``, fails here."""


def _base(spec: BoxSpec, objects: Path) -> dict[str, tuple[str, str]] | None:
    """What of the real tree already differs from HEAD: the copy's base, as storage.prepare
    finds it (``None``: no git, or none found). Runs beside the copy, in a thread: the hashing
    is git's, in a process of its own."""
    if not spec.git:
        return None
    real = Path(spec.repo_root)
    try:
        git_dir, common = safegit.git_dirs(real)
        with changeset.separate_objects(objects, common / "objects", git_dir=git_dir,
                                        work_tree=real):
            return changeset.baseline(real).dirty
    except changeset.ChangesetError:
        return None


def copy_note(copy: tree.Copy, seconds: float) -> str:
    """The summary's line on the copy: what it cost, and why there is one."""
    how = (f"{copy.cloned:,} of them cloned copy-on-write" if copy.cloned else
           "their data copied: this file system has no copy-on-write clones")
    return (f"a copy of the repository on disk, under Landlock: {copy.files:,} files "
            f"({copy.bytes / 2**20:,.1f} MiB) copied in {seconds:.1f} s ({how}); without the "
            "box there is no overlay: it needs CAP_SYS_ADMIN or a user namespace, and a copy "
            "costs what the disk charges for every file")


def _can(agent: AgentUser, path: str, mode: int) -> bool:
    """Whether ``agent`` may access ``path`` as ``mode`` asks (asked as that user, in a
    child)."""
    child = os.fork()
    if child == 0:  # pragma: no cover - a forked child, answering by its exit code
        try:
            _become(agent)
            os._exit(0 if os.access(path, mode) else 1)
        finally:
            os._exit(1)
    _, status = os.waitpid(child, 0)
    return status == 0


def _become(agent: AgentUser) -> None:
    """Take ``agent``'s identity, no other group (as root; already it as the runner's user)."""
    if os.geteuid() != 0:
        return
    os.setgroups([])
    os.setresgid(agent.gid, agent.gid, agent.gid)
    os.setresuid(agent.uid, agent.uid, agent.uid)


def _rehome(value: str, old: str, new: str) -> str:
    return new + value[len(old):] if value == old or value.startswith(old + "/") else value


def _exec_agent(prepared: Prepared, agent: AgentUser, box_limits: limits.Limits) -> None:
    """In the agent's process (never returns)."""
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        if os.geteuid() == 0:  # the agent's user alone: its count is the agent's processes
            resource.setrlimit(resource.RLIMIT_NPROC,
                               (limits.MAX_PROCESSES, limits.MAX_PROCESSES))
        box_limits.per_process()
        _become(agent)
        if os.getuid() != agent.uid or os.geteuid() != agent.uid:
            raise OSError("the agent's identity could not be set")
        # After the change of identity (which clears it): the CLI dies if we do.
        die_with_parent()
        landlock.restrict_self(prepared.ruleset)  # sets no_new_privs first
        seccomp.install(libc(), host_ipc=False,  # no unix socket, io_uring or mqueue
                        truncate_by_path=landlock.abi() < inplace.MIN_ABI)
        os.closerange(3, 65536)
        os.umask(0o022)
        os.chdir(prepared.cwd)
        os.execve(prepared.argv[0], prepared.argv, prepared.env)  # noqa: S606 - no shell
    except BaseException as exc:  # in a forked child: report and leave, never unwind
        with contextlib.suppress(OSError):
            os.write(2, f"cursor-agent-action: cannot start the agent: {exc}\n".encode())
        os._exit(127)


def _kill_everything(agent: AgentUser, own_user: bool) -> bool:
    return reap.kill_descendants() if own_user else reap.kill_all(agent.uid)


def _wait(child: int, agent: AgentUser, own_user: bool) -> int:
    """Relay the helper's control bytes until the agent ends; its wait status."""
    stdin_open = True
    while True:
        ready, _, _ = select.select([0] if stdin_open else [], [], [], _POLL_S)
        if ready:
            data = os.read(0, 64)
            if b"T" in data:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child, signal.SIGTERM)
            if not data or b"K" in data:
                _kill_everything(agent, own_user)
                stdin_open = bool(data)
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            return status


def _runner_user() -> AgentUser:
    return AgentUser(pwd.getpwuid(os.getuid()).pw_name, os.getuid(), os.getgid())


def run(spec: BoxSpec, status: Status) -> int:
    """Prepare, run, finish; the exit code of this program. Not root: the agent is the
    runner's own user (this program's)."""
    prepared: Prepared | None = None
    own_user = os.geteuid() != 0
    try:
        agent = _runner_user() if own_user else agent_user(spec.user)
        # What the agent leaves running comes back to this program, which reaps it (under a
        # job container's init that reaps nothing, its zombies would stay).
        if not set_subreaper() and own_user:
            raise Unsupported("this program cannot be the subreaper of the agent's processes")
        prepared = Prepared(spec, agent)
        box_limits = limits.create(f"caa-lockdown-{os.getpid()}",
                                   spec.limits.memory_bytes)
    except (UserError, home.HomeError, tree.CopyTooLarge, landlock.LandlockError, OSError,
            KeyError, ValueError, TypeError) as exc:
        if prepared is not None:
            prepared.remove()
        status.write(setup_failed(exc, final=not isinstance(
            exc, (Unsupported, UserError, landlock.LandlockError))))
        return EXIT_SETUP
    before_ipc = hostipc.objects_of(agent.uid) if own_user else set()  # the runner's stay
    prepared.snapshot.watch_start()  # the real checkout, watched from now on
    child = os.fork()
    if child == 0:
        with contextlib.suppress(OSError):
            box_limits.enter(os.getpid())
        if spec.namespaces and own_user:
            userns.run_as_init(lambda: _exec_agent(prepared, agent, box_limits))
        _exec_agent(prepared, agent, box_limits)
    os.close(prepared.ruleset)
    try:
        result = _after(prepared, agent, child, before_ipc=before_ipc, box_limits=box_limits)
    except BaseException as exc:  # never no status once the agent ran: the helper fails it
        status.write(BoxStatus(True, error=f"the box failed after the run: "
                                           f"{type(exc).__name__}: {exc}"))
        with contextlib.suppress(OSError):
            box_limits.remove()
        prepared.remove()  # nothing of the run's area is left behind
        raise
    status.write(result)
    return 0


def _after(prepared: Prepared, agent: AgentUser, child: int, *,
           before_ipc: set[hostipc.IpcObject], box_limits: limits.Limits) -> BoxStatus:
    """Once the agent has started: wait for it, end what it left, check the checkout, finish;
    the status."""
    own_user = os.geteuid() != 0
    code = _wait(child, agent, own_user)
    gone = _kill_everything(agent, own_user)
    kept = hostipc.remove_left(agent.uid, before_ipc)  # as root: its user's alone, all of them
    errors = [*([] if gone else ["processes of the agent's user were still running after the "
                                 "run"]),
              *([f"System V IPC objects of the agent's user could not be removed: {kept}"]
                if kept else [])]
    try:
        put_back = inplace.check(prepared.snapshot)
    except OSError as exc:  # its top, closed or gone: what cannot be read cannot be checked
        put_back = []
        errors.append(f"the checkout could not be checked after the run: {exc}")
    silence_output()
    result = BoxStatus(
        True, limits=box_limits.label, storage=prepared.copy.note,
        returncode=os.waitstatus_to_exitcode(code), error="; ".join(errors),
        put_back=Listed.of(put_back))
    # The box's own bounded finish: in the cgroup, within its limit, and ended at once when the
    # helper closes the control pipe (an alarm killed this program and left the copy behind).
    result = finish.bounded(prepared.spec, prepared.copy, box_limits).into(result)
    box_limits.remove()
    prepared.remove()
    return result


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -I -m cursor_agent_action.agent.contain.lockdown SPEC\n")
        return 2
    spec = BoxSpec.take(Path(args[0]))
    return run(spec, Status(spec.status_file))


if __name__ == "__main__":
    sys.exit(main())
