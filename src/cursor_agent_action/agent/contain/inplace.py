"""A read-only run without the box: the checkout itself, shown read-only, never copied.

Where nothing the agent writes in the tree could be kept (no ``Write()`` rule: the
``read-only`` preset, which the CLI also runs with its ``workspace_readonly`` sandbox), the
Landlock tiers (:mod:`.lockdown`) show the agent the real tree instead of a copy of it: Landlock
grants reading there and nothing else (no write, truncate, make, remove, rename or link), and
masks every ``.git`` directory (contents unreadable, as the copy has none), so a run costs what
the box's overlay costs, not what the disk charges for a copy of every file.

Landlock does not govern a file's attributes (mode, owner, times): the runner's own user owns
the checkout, and any user may set a link's times to now. Every entry's ``lstat`` (``.git``
included) is taken before the agent starts, and the entries are checked once none of its
processes is left: those an inotify watch set just before the start reports
(:mod:`.attrwatch`), or all of them when it cannot say. An entry whose type, mode, owner, size,
times or inode change time moved is named, put back (mode, owner, modification time) where it
can be, and fails the run. Extended attributes and inode flags cannot be set at all (the
Landlock tiers' seccomp filter).

Not in place (the copy, the summary saying why): a Landlock ABI below 3 (``truncate(2)`` by
path is not governed there), or below 6 as the runner's own user (the agent could kill the
program that checks after it: signals are scoped from 6); a fifo, socket or device in the
tree (the copy leaves them out, never opened); and, the agent being another user than the
tree's, an entry it could not read or a working directory it could not reach (a copy is the
agent's own).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field

from cursor_agent_action.agent.contain.attrwatch import Watch
from cursor_agent_action.agent.contain.box import tree

MIN_ABI = 3
"""Landlock's first ABI that governs ``truncate(2)``."""
OWN_USER_MIN_ABI = 6
"""As the runner's own user: Landlock's first ABI that keeps the agent from signalling the
runner's processes, the one that checks the checkout after it among them."""
SHOWN = 5
"""Entries named in a reason or a failure."""
MAX_WORKERS = 4
"""Processes that walk the tree before the run, at most."""

Key = tuple[int, int, int, int, int, int, int]
"""An entry's ``lstat``: mode (with type), uid, gid, size, mtime, ctime (ns), inode."""


def key_of(info: os.stat_result) -> Key:
    return (info.st_mode, info.st_uid, info.st_gid, info.st_size, info.st_mtime_ns,
            info.st_ctime_ns, info.st_ino)


@dataclass
class Snapshot:
    """Every entry of the tree (relative path -> :data:`Key`), its ``.git`` directories, and
    the watch over it (:meth:`watch_start`)."""

    root: str
    entries: dict[str, Key]
    git_dirs: tuple[str, ...]
    skip: frozenset[str] = frozenset()  # the runner's places inside the tree (masked)
    linked: tuple[str, ...] = ()  # files with another link, maybe outside the tree
    special: tuple[str, ...] = ()  # fifos, sockets, devices, over-long paths (outside .git)
    closed: tuple[str, ...] = ()  # what "others" cannot read (outside .git)
    watch: Watch | None = field(default=None, repr=False)

    def within_bytes(self, *, max_file_bytes: int, max_total_bytes: int) -> None:
        """:class:`tree.CopyTooLarge` when the tree's regular files of at most
        ``max_file_bytes`` (outside ``.git``) hold more than ``max_total_bytes``: the copy's
        cap, as :func:`tree.survey` counts it, from the sizes already taken."""
        inside_git = tuple(f"{path}/" for path in self.git_dirs)
        total = sum(size for path, (mode, _, _, size, *_) in self.entries.items()
                    if stat.S_ISREG(mode) and size <= max_file_bytes
                    and not path.startswith(inside_git) and os.path.basename(path) != ".git")
        if total > max_total_bytes:
            raise tree.too_heavy(max_total_bytes)

    def watch_start(self) -> None:
        """Watch the tree, just before the agent starts (None: :func:`check` walks it all)."""
        directories = [path for path, key in self.entries.items() if stat.S_ISDIR(key[0])]
        self.watch = Watch.start(self.root, directories, self.linked)


_KIND = 0o170000  # stat.S_IFMT's mask
_SHOWN_KINDS = frozenset((stat.S_IFREG, stat.S_IFDIR, stat.S_IFLNK))
_SHORT_PATH = tree.MAX_PATH_BYTES // 4  # characters: no longer in UTF-8 than the cap
_OTHERS_READ, _OTHERS_LIST = 0o004, 0o005


@dataclass
class _Found:
    entries: dict[str, Key] = field(default_factory=dict)
    linked: list[str] = field(default_factory=list)
    git_dirs: list[str] = field(default_factory=list)
    special: list[str] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)  # what "others" cannot read (outside .git)
    counted: int = 0  # entries outside .git, against the cap

    def add(self, path: str, info: os.stat_result, in_git: bool) -> bool:
        """One entry; whether it is a directory to list (called for every entry: kept lean)."""
        mode = info.st_mode
        kind = mode & _KIND
        self.entries[path] = key_of(info)
        if (len(path) > _SHORT_PATH and len(os.fsencode(path)) > tree.MAX_PATH_BYTES) or (
                not in_git and kind not in _SHOWN_KINDS):
            self.special.append(path)
        needed = _OTHERS_LIST if kind == stat.S_IFDIR else _OTHERS_READ
        if mode & needed != needed and kind != stat.S_IFLNK and not in_git and not (
                path.endswith(".git") and os.path.basename(path) == ".git"):
            self.closed.append(path)
        if kind == stat.S_IFDIR:
            if not in_git and path.endswith(".git") and os.path.basename(path) == ".git":
                self.git_dirs.append(path)
            return True
        if info.st_nlink > 1:
            self.linked.append(path)
        return False


def _walk(root: str, skip: frozenset[str],
          on_entry: Callable[[str, os.stat_result], None] | None = None) -> dict[str, Key]:
    """Every entry below ``root`` (``""`` for itself) but ``skip`` and what is below them,
    from listings: one ``lstat`` each, no link followed. ``on_entry`` sees each entry as found,
    a directory before it is listed (it may put it back)."""
    found = _Found()
    top = os.lstat(root)
    if on_entry is not None:
        on_entry("", top)
    found.entries[""] = key_of(top)
    _below(root, [("", False)], skip, found, on_entry=on_entry)
    return found.entries


def _below(root: str, pending: list[tuple[str, bool]], skip: frozenset[str], found: _Found, *,
           on_entry: Callable[[str, os.stat_result], None] | None = None,
           max_entries: int = 0, level: list[tuple[str, bool]] | None = None,
           strict: bool = False) -> None:
    """What is below the directories ``pending`` (relative, and whether inside a ``.git``)
    into ``found``, stopping past ``max_entries`` outside ``.git`` (:class:`tree.CopyTooLarge`);
    with ``level``, only their own entries, the directories among them put there. A directory
    that cannot be listed: :class:`tree.Unreadable` with ``strict`` (before the run); else
    what is below it is missing, and so compared (after it)."""
    while pending:
        relative, in_git = pending.pop()
        try:
            with os.scandir(os.path.join(root, relative) if relative else root) as listing:
                entries = list(listing)
        except OSError as exc:
            if strict:
                raise tree.Unreadable(f"the working tree's {relative or '.'} cannot be "
                                      f"listed: {exc.strerror or exc}") from exc
            continue
        if not in_git and max_entries:
            found.counted += len(entries)
            if found.counted > max_entries:
                raise tree.too_many(max_entries)
        for entry in entries:
            path = f"{relative}/{entry.name}" if relative else entry.name
            if path in skip:
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if on_entry is not None:
                on_entry(path, info)
            if found.add(path, info, in_git):
                (pending if level is None else level).append(
                    (path, in_git or entry.name == ".git"))


def _gathered(root: str, skip: frozenset[str], max_entries: int) -> _Found:
    """The whole tree into a :class:`_Found`: the top level here, the directories below it
    shared among forked workers, one a processor (at most :data:`MAX_WORKERS`: an ``lstat``
    costs a system call and the object Python makes of it, and both run on every core)."""
    found = _Found()
    found.entries[""] = key_of(os.lstat(root))
    directories: list[tuple[str, bool]] = []
    _below(root, [("", False)], skip, found, max_entries=max_entries, level=directories,
           strict=True)
    workers = min(MAX_WORKERS, len(os.sched_getaffinity(0)), len(directories))
    shares = [directories[index::workers] for index in range(workers)] or [[]]
    children = [_fork_walker(root, share, skip, max_entries) for share in shares[1:]]
    _below(root, shares[0], skip, found, max_entries=max_entries, strict=True)
    errors = []
    for pid, reader in children:
        with os.fdopen(reader, "rb") as pipe:
            data = pipe.read()
        os.waitpid(pid, 0)
        try:
            # our own forked worker's answer, never the agent's (it has not started)
            entries, linked, git_dirs, special, closed, counted, error = marshal.loads(  # noqa: S302
                data)
        except (EOFError, ValueError, TypeError):
            entries, linked, git_dirs, special, closed, counted, error = (
                {}, [], [], [], [], 0, "no answer")
        found.entries.update(entries)
        found.linked += linked
        found.git_dirs += git_dirs
        found.special += special
        found.closed += closed
        found.counted += counted
        errors += [error] if error else []
    if found.counted > max_entries or any(error.startswith("CopyTooLarge:")
                                          for error in errors):
        raise tree.too_many(max_entries)
    if errors:  # a worker's Unreadable (or it gave no answer)
        raise tree.Unreadable(errors[0].partition(": ")[2] or errors[0])
    return found


def _fork_walker(root: str, share: list[tuple[str, bool]], skip: frozenset[str],
                 max_entries: int) -> tuple[int, int]:
    """A forked worker walking below ``share``; its pid and the pipe its answer comes by."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - a forked child, answering through the pipe
        try:
            os.close(reader)
            part = _Found()
            error = ""
            try:
                _below(root, share, skip, part, max_entries=max_entries, strict=True)
            except (OSError, tree.CopyTooLarge) as exc:
                error = f"{type(exc).__name__}: {exc}"
            data = marshal.dumps((part.entries, part.linked, part.git_dirs, part.special,
                                  part.closed, part.counted, error))
            while data:
                data = data[os.write(writer, data):]
        finally:
            os._exit(0)
    os.close(writer)
    return pid, reader


def take(root: str, *, max_entries: int, skip: frozenset[str] = frozenset()) -> Snapshot:
    """The tree's snapshot (before every run without the box: the checkout's attributes are
    checked after it, shown in place or copied). ``skip``: relative paths of places masked from
    the agent that others write during the run (the helper's state, the runner's temporary
    directory). Raises :class:`tree.CopyTooLarge` past ``max_entries`` (``.git`` uncounted),
    and :class:`tree.Unreadable` for a directory this program cannot list: what it cannot
    read, it cannot check."""
    try:
        found = _gathered(root, skip, max_entries)
    except (tree.CopyTooLarge, tree.Unreadable):
        raise
    except OSError as exc:  # its top, closed or gone (a process an earlier step left)
        raise tree.Unreadable(f"the working tree {root} cannot be read: "
                              f"{exc.strerror or exc}") from exc
    top = found.entries[""][0]
    closed = found.closed + (["."] if top & _OTHERS_LIST != _OTHERS_LIST else [])
    return Snapshot(root, found.entries, tuple(found.git_dirs), skip, tuple(found.linked),
                    special=tuple(found.special), closed=tuple(sorted(closed)))


def refusal(snapshot: Snapshot, *, abi: int, other_user: bool) -> str:
    """Why a read-only run cannot be shown the tree in place (one line for the summary), or
    ``""``. ``other_user``: the agent is not the tree's owner (it reads as "others")."""
    if abi < MIN_ABI:
        return (f"this kernel's Landlock (ABI {abi}) does not govern truncating a file by "
                f"its path (ABI {MIN_ABI}, Linux 6.2)")
    if not other_user and abi < OWN_USER_MIN_ABI:
        return (f"this kernel's Landlock (ABI {abi}) does not keep the agent, as the runner's "
                "own user, from signalling the program that checks the checkout after it "
                f"(ABI {OWN_USER_MIN_ABI}, Linux 6.12)")
    if snapshot.special:
        return (f"the tree holds fifos, sockets, devices or over-long paths, which the copy "
                f"leaves out: {_named(list(snapshot.special))}")
    if other_user and snapshot.closed:
        return (f"the agent's user could not read everything there (the copy is its own): "
                f"{_named(list(snapshot.closed))}")
    return ""


def _named(paths: list[str]) -> str:
    more = f" and {len(paths) - SHOWN:,} more" if len(paths) > SHOWN else ""
    return ", ".join(paths[:SHOWN]) + more


def check(snapshot: Snapshot) -> list[str]:
    """After the run (no process of the agent's left): the entries that changed, each put back
    as it was where it can be (mode, owner, times; a directory before it is listed, so a
    closed one is entered again). Empty: the tree is as it was. Only what the watch reports
    is looked at, unless it cannot say."""
    entries = snapshot.entries
    changed: list[str] = []

    def put_back(path: str, info: os.stat_result) -> None:
        before = entries.get(path)
        if before is None or key_of(info) == before:
            return
        changed.append(path or ".")
        if before[6] != info.st_ino or stat.S_IFMT(before[0]) != stat.S_IFMT(info.st_mode):
            return  # another entry now: named, not touched
        with contextlib.suppress(OSError):
            _restore(os.path.join(snapshot.root, path) if path else snapshot.root, info, before)

    reported = snapshot.watch.changed() if snapshot.watch is not None else None
    if reported is None:
        after = _walk(snapshot.root, snapshot.skip, on_entry=put_back)
        changed += [path for path in entries if path not in after]
        changed += [path for path in after if path not in entries]
        return sorted(set(changed))
    # each entry reported, and the directory it is in (whose own times its change moved)
    reported |= {os.path.dirname(path) for path in reported}
    for path in sorted(reported):  # a directory before what is in it
        if any(path == place or path.startswith(f"{place}/") for place in snapshot.skip):
            continue
        try:
            info = os.lstat(os.path.join(snapshot.root, path) if path else snapshot.root)
        except OSError:
            if path in entries:
                changed.append(path or ".")  # gone
            continue
        if path not in entries:
            changed.append(path)  # new
        put_back(path, info)
    return sorted(set(changed))


def _restore(path: str, now: os.stat_result, before: Key) -> None:
    """Mode, owner and times of the entry at ``path`` as they were, through a descriptor of
    the entry itself (opened without following a link, checked to be the same inode); of a
    link (no mode of its own), its owner and times, by its name (the agent is gone)."""
    if stat.S_ISLNK(now.st_mode):
        if (now.st_uid, now.st_gid) != before[1:3]:
            os.chown(path, before[1], before[2], follow_symlinks=False)
        os.utime(path, ns=(now.st_atime_ns, before[4]), follow_symlinks=False)
        return
    fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if os.fstat(fd).st_ino != now.st_ino:
            return
        here = f"/proc/self/fd/{fd}"
        if (now.st_uid, now.st_gid) != before[1:3]:
            os.chown(here, before[1], before[2])
        os.chmod(here, stat.S_IMODE(before[0]))  # after chown, which may clear set-id bits
        os.utime(here, ns=(now.st_atime_ns, before[4]))
    finally:
        os.close(fd)


def failure(paths: list[str], count: int) -> str:
    """The run's failure for :func:`check`'s findings (``count`` of them, ``paths`` the first
    ones), in the user's words."""
    more = f" and {count - len(paths):,} more" if count > len(paths) else ""
    return (f"The agent changed {count:,} entr{'y' if count == 1 else 'ies'} of the real "
            f"checkout by their attributes (mode, owner or times), which Landlock leaves open "
            f"but no run may change (its changes come back only as the patch): "
            f"{_named(paths)}{more}. Each was put back as it was where it could be (mode, "
            "owner, modification time). Fix: review what the agent ran (the transcript); run "
            "it where the box can be made (root or passwordless sudo, or a user namespace), "
            "whose mounts keep the checkout out of its reach.")
