"""The agent's changes from what it wrote: the overlay's upper directory compared, path by
path, with the real tree below it (:mod:`.overlay`).

Only the entries the upper directory names are read: a file or link there is hashed, and so is
the real entry at its path; a whiteout, or a file or directory put where the real tree had an
entry of another kind, deletes the real entry (a directory: every file below it); a directory
made anew over a deleted one (opaque) deletes what the real tree had below it that the upper
directory does not hold again. Real entries are found with ``lstat`` one component at a time:
a path whose real parent is a link (the agent replaced a linked directory by one of its own)
has no real entry, and no link of the real tree is ever followed. The real tree is not changed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from cursor_agent_action import changeset
from cursor_agent_action.agent.contain.box.overlay import Written

_DIR, _OTHER = "dir", "other"


class RealTree:
    """Entries of the real tree by repository path, from ``lstat`` alone (see the module
    docstring); directories' answers are kept."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._dirs: dict[str, bool] = {"": True}

    def _is_dir(self, path: str) -> bool:
        if path not in self._dirs:
            parent = os.path.dirname(path)
            info = self.lstat(path) if self._is_dir(parent) else None
            self._dirs[path] = info is not None and stat.S_ISDIR(info.st_mode)
        return self._dirs[path]

    def lstat(self, path: str) -> os.stat_result | None:
        """The real entry at ``path``, or None (none, or a parent is no real directory)."""
        if not self._is_dir(os.path.dirname(path)):
            return None
        try:
            return os.lstat(self.root / path)
        except (FileNotFoundError, NotADirectoryError):
            return None

    def files_below(self, top: str) -> list[str]:
        """Regular files and links below the real directory ``top`` (not inside ``.git``)."""
        found: list[str] = []
        pending = [top]
        while pending:
            here = pending.pop()
            with os.scandir(self.root / here) as listing:
                entries = [
                    (
                        entry.name,
                        entry.is_dir(follow_symlinks=False),
                        entry.is_file(follow_symlinks=False) or entry.is_symlink(),
                    )
                    for entry in listing
                ]
            for name, is_dir, is_file in entries:
                if name == ".git":
                    continue
                if is_dir:
                    pending.append(f"{here}/{name}")
                elif is_file:
                    found.append(f"{here}/{name}")
        return found


def _kind(info: os.stat_result | None) -> str:
    if info is None:
        return ""
    if stat.S_ISDIR(info.st_mode):
        return _DIR
    return "file" if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode) else _OTHER


def _deleted(base: RealTree, wrote: Written) -> set[str]:
    """The real tree's files the upper directory hides: deleted ones (a whiteout), every file
    below a directory it replaced (by a file, or an opaque directory), a file it replaced by a
    directory."""
    deleted: set[str] = set()
    for path in [*wrote.deleted, *wrote.files]:
        info = base.lstat(path)
        if _kind(info) == _DIR:
            deleted.update(base.files_below(path))
        elif _kind(info) == "file" and path in wrote.deleted:
            deleted.add(path)
    for path in wrote.dirs:
        kind = _kind(base.lstat(path))
        if kind == "file":
            deleted.add(path)
        elif kind == _DIR and path in wrote.opaque:
            deleted.update(below for below in base.files_below(path) if below not in wrote.files)
    return deleted


def compute(merged: Path, real: Path, wrote: Written, *, max_file_bytes: int,
            left_out: list[str], max_changed_bytes: int) -> changeset.Changeset:
    """The changes the upper directory ``wrote`` holds, read through the overlay at ``merged``
    (new state) and the real tree at ``real`` (the state before the run: HEAD plus whatever
    already differed from it), as :func:`cursor_agent_action.changeset.compute` reports them:
    only new files that neither the merged tree's nor the real tree's rules ignore. The files
    written may hold ``max_changed_bytes`` in all (their apparent sizes, summed from ``lstat``
    before a byte is read)."""
    head = changeset.head_commit(merged)
    base = RealTree(real)
    never = set(left_out)
    deleted = _deleted(base, wrote)
    too_large = sorted(
        path for path, info in wrote.files.items() if changeset.over_size(info, max_file_bytes)
    )
    new_files = {
        path: info
        for path, info in wrote.files.items()
        if path not in too_large and path not in never
    }
    before: dict[str, os.stat_result] = {}
    for path in sorted((set(new_files) | deleted) - never):
        info = base.lstat(path)
        if _kind(info) == "file" and info is not None:
            if changeset.over_size(info, max_file_bytes):
                too_large.append(path)
                new_files.pop(path, None)
                deleted.discard(path)
            else:
                before[path] = info
    # An untracked file the real tree's rules ignore was never part of its state (as in the
    # helper's baseline): its deletion is none, a file there is new (and ignored).
    head_state = changeset.head_tree(merged, set(new_files) | deleted)
    untracked = [path for path in before if path not in head_state]
    for path in changeset.ignored_in(real, untracked, env={}):
        del before[path]
        deleted.discard(path)
    size = sum(info.st_size for info in new_files.values())  # from lstat, before any read
    if size > max_changed_bytes:
        raise changeset.ChangesetError(f"the changed files hold {size >> 20} MiB, over the "
                                       f"{max_changed_bytes >> 20} MiB a patch may carry")
    old_oids = changeset.hash_paths(real, sorted(before), before)
    new_oids = changeset.hash_paths(merged, sorted(new_files), new_files)
    zero = "0" * len(head)
    absent = (changeset.ABSENT_MODE, zero)
    overlay: dict[str, tuple[str, str]] = {}
    entries: list[changeset.Entry] = []
    for path in sorted((set(new_files) | deleted) - never):
        old = ((changeset.mode_of(before[path]), old_oids[path]) if path in before else absent)
        new = (changeset.mode_of(new_files[path]), new_oids[path]) if path in new_files else absent
        if old != head_state.get(path, absent):
            overlay[path] = old  # the tree already differed from HEAD here before the run
        if old != new:
            entries.append(changeset.Entry(path, *old, *new))
    added = [entry.path for entry in entries if entry.old_mode == changeset.ABSENT_MODE]
    ignored = changeset.ignored_in(merged, added)
    ignored |= changeset.ignored_in(real, [p for p in added if p not in ignored], env={})
    entries = [entry for entry in entries if entry.path not in ignored]
    return changeset.Changeset(head, entries, [], overlay, sorted(too_large), sorted(ignored),
                               special=sorted(wrote.special), too_long=sorted(wrote.too_long))
