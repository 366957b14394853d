"""The box's storage, in the root side's own mount namespace: made before the agent starts (the
private copy, the real ``.git`` shown read-only with masked config, the fresh home) and read
after it ended (the patch, the chats kept for ``--resume``). Everything here is gone with that
namespace when the root side exits."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import tempfile
from pathlib import Path

from cursor_agent_action import changeset, safegit
from cursor_agent_action.agent.contain.box import (
    commitview,
    gitconfig,
    home,
    overlay,
    tree,
    upper,
    world,
)
from cursor_agent_action.agent.contain.box.contract import BoxSpec, Finished, Listed
from cursor_agent_action.agent.contain.box.user import AgentUser

MAX_PATCH_SOURCE_BYTES = 256 << 20
"""What the changed files may hold in all: a larger change is no patch a review can read."""
FINISH_DIR = "finish"
"""In the box's area: the finish's own storage (a tmpfs in the box; a directory under
Landlock)."""
OBJECTS_DIR = f"{FINISH_DIR}/objects"
"""The patch's objects (the real repository's are only read)."""


def prepare(spec: BoxSpec, agent: AgentUser) -> tuple[world.World, tree.Copy]:
    """In this program's own mount namespace: the box's storage (the overlay over the real
    tree, else the copy: :func:`_overlay`, :func:`_copy`), the real ``.git`` entries shown
    read-only over it, the home."""
    caps = spec.limits
    area = Path(spec.box_dir)
    area.mkdir(mode=0o700, exist_ok=True)
    os.chown(area, os.geteuid(), os.getegid())  # root's; in a user namespace, the runner's
    os.chmod(area, 0o700)
    world.make_private()
    real = spec.repo_root
    if spec.view_commit:
        copy = _commit(spec, agent, area)
    elif spec.storage == "copy":
        copy = _copy(spec, agent, area, "the copy was asked for (CURSOR_AGENT_ACTION_BOX_STORAGE)")
    else:
        found = tree.survey(real, max_entries=caps.max_files)  # the cap before anything costs
        try:
            copy = _overlay(spec, agent, area, found)
        except (overlay.OverlayError, world.WorldError, OSError) as exc:
            _unmount_all(area)
            copy = _copy(spec, agent, area, f"no id-mapped overlay here ({exc})")
    if copy.storage != "commit":  # a commit's view has no repository in it
        _show_git(spec, area, copy)
    # The finish's own storage (the patch's objects, our temporary files) on a tmpfs of its
    # own, made now: the agent may fill its own.
    (area / FINISH_DIR).mkdir(mode=0o700)
    world.tmpfs(str(area / FINISH_DIR), size=str(2 * MAX_PATCH_SOURCE_BYTES), mode=0o700)
    (area / OBJECTS_DIR).mkdir(mode=0o700)
    if spec.git and copy.storage == "copy":
        with contextlib.suppress(changeset.ChangesetError):
            # The copy's base: what of the real tree already differed from HEAD (hashed
            # here, for the fallback only: the overlay's patch needs no base but the tree).
            git_dir, common = safegit.git_dirs(Path(real))
            with changeset.separate_objects(area / OBJECTS_DIR, common / "objects",
                                            git_dir=git_dir, work_tree=Path(real)):
                copy.dirty = changeset.baseline(Path(real)).dirty
            # What the tree lacked when copied is no deletion.
            known = {**changeset.head_tree(area / "tree"), **copy.dirty}
            copy.absent = [
                path
                for path, (mode, _) in known.items()
                if mode not in ("160000", changeset.ABSENT_MODE) and path not in copy.stats
            ]
    store = Path(spec.chats_store)
    home.make_home(area / "home", agent, dict(spec.home_files),
                   store if store.is_dir() else None)
    view = world.World(
        tree=str(area / "tree"), tree_target=spec.repo_root, home=str(area / "home"),
        home_target=spec.home, masks=list(spec.masks), tmp_size=str(caps.tmp_bytes),
        reveals=list(spec.reveals), shares=list(spec.shares), files=dict(spec.files),
        sockets=world.host_sockets())  # still on the runner's network namespace
    return view, copy


def _unmount_all(area: Path) -> None:
    """What a failed overlay left mounted in the box's area, unmounted (this namespace only)."""
    for name in ("tree", "lower", ""):
        with contextlib.suppress(OSError, world.WorldError):
            world.unmount(str(area / name) if name else str(area))


def _overlay(spec: BoxSpec, agent: AgentUser, area: Path, found: tree.Survey) -> tree.Copy:
    """The real tree as the lower layer of an overlay at ``area/tree`` (:mod:`.overlay`); the
    upper and work directories on the box's tmpfs, which holds what the agent writes."""
    caps = spec.limits
    world.tmpfs(str(area), size=str(caps.write_bytes), mode=0o700, inodes=caps.max_files)
    layers = [area / name for name in ("lower", "upper", "work", "tree")]
    for path in layers:
        path.mkdir(mode=0o700)
    lower, written, work, merged = layers
    info = os.stat(spec.repo_root)
    os.chown(written, agent.uid, agent.gid)
    os.chmod(written, stat.S_IMODE(info.st_mode) & 0o1777 | 0o700)
    overlay.mount_lower(spec.repo_root, str(lower), owner=(info.st_uid, info.st_gid),
                        agent=(agent.uid, agent.gid))
    overlay.mount_overlay(str(lower), str(written), str(work), str(merged))
    kind = ("an overlay in the box's user namespace" if overlay.unprivileged() else
            "an id-mapped overlay")
    for special in found.special:  # fifos, sockets, devices: not in the box, as in the copy
        with contextlib.suppress(OSError):
            os.unlink(merged / special)
    return tree.Copy(git_dirs=found.git_dirs, git_files=found.git_files,
                     left_out=found.special, storage="overlay",
                     note=(f"{kind} over the repository (nothing copied; "
                           f"{found.entries:,} entries)"))


def _copy(spec: BoxSpec, agent: AgentUser, area: Path, why: str) -> tree.Copy:
    """The private copy of the tree at ``area/tree`` (:mod:`.tree`): the fallback. Its caps
    are checked from ``lstat`` before anything is copied."""
    caps = spec.limits
    tree.survey(spec.repo_root, max_entries=caps.max_files, count_bytes=True,
                max_file_bytes=caps.max_file_bytes, max_total_bytes=caps.max_total_bytes)
    world.tmpfs(str(area), size=str(caps.max_total_bytes + caps.write_bytes), mode=0o700,
                inodes=caps.max_files + (caps.max_files >> 1))
    (area / "tree").mkdir()
    copy = tree.copy_tree(spec.repo_root, str(area / "tree"), agent.uid, agent.gid,
                          max_file_bytes=caps.max_file_bytes,
                          max_total_bytes=caps.max_total_bytes)
    copy.note = f"a copy of the repository ({copy.files:,} files): {why}"
    return copy


def _commit(spec: BoxSpec, agent: AgentUser, area: Path) -> tree.Copy:
    """The tree of ``spec.view_commit`` at ``area/tree``, written from the real repository's
    objects (:mod:`.commitview`): the checkout is not shown at all. The policy file the helper
    wrote for this run (at the working directory) is put at its place in the view."""
    caps = spec.limits
    world.tmpfs(str(area), size=str(caps.max_total_bytes + caps.write_bytes), mode=0o700,
                inodes=caps.max_files + (caps.max_files >> 1))
    (area / "tree").mkdir()
    owner = (agent.uid, agent.gid)
    copy = commitview.build(Path(spec.repo_root), spec.view_commit, area / "tree", owner,
                            skip=spec.view_skip, max_file_bytes=caps.max_file_bytes,
                            max_total_bytes=caps.max_total_bytes, max_files=caps.max_files,
                            reader=spec.owner)  # the runner's user parses the fork's objects
    where = os.path.relpath(spec.cwd, spec.repo_root)
    if where.startswith(".."):
        raise commitview.ViewError("the working directory is outside the repository")
    place = commitview.directory(area / "tree", "" if where == "." else where, owner)
    for relative in spec.view_files:  # ours, from the real tree (regular files only)
        fd = os.open(Path(spec.cwd) / relative, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise commitview.ViewError(f"{relative} is not a regular file")
            data = os.read(fd, 1 << 20)
        finally:
            os.close(fd)
        # The commit's own entries on the way (a link or file named .cursor) give way to ours.
        here = place
        for part in relative.split("/")[:-1]:
            here = here / part
            if here.is_symlink() or (here.exists() and not here.is_dir()):
                here.unlink()
        parent = commitview.directory(place, os.path.dirname(relative), owner)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(parent / os.path.basename(relative))
        made = os.open(parent / os.path.basename(relative),
                       os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            os.write(made, data)
        finally:
            os.close(made)
    skipped = (f"; {copy.skipped_config:,} configuration and instruction files of its own "
               "left out" if copy.skipped_config else "")
    copy.note = (f"commit {spec.view_commit[:12]}'s tree ({copy.files:,} files{skipped}), "
                 "written from the repository's objects: the checkout is not in the box, and no "
                 "file of the commit is written on the runner's disk")
    return copy


def _show_git(spec: BoxSpec, area: Path, copy: tree.Copy) -> None:
    """The real ``.git`` directories and files at their places in the box's tree, read-only,
    the directories' config files masked (:mod:`.gitconfig`)."""
    masked = area / "git-config"
    masked.mkdir(mode=0o700)
    for path in copy.git_files if copy.storage == "overlay" else []:
        fd = os.open(Path(spec.repo_root) / path, os.O_PATH | os.O_NOFOLLOW)
        try:
            world.bind(fd, str(area / "tree" / path), read_only=True)
        finally:
            os.close(fd)
    for index, git_dir in enumerate(copy.git_dirs):
        source, target = Path(spec.repo_root) / git_dir, area / "tree" / git_dir
        fd = os.open(source, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            world.bind(fd, str(target), read_only=True)
        finally:
            os.close(fd)
        for number, config in enumerate(gitconfig.config_files(target)):
            if config.is_file() and not config.is_symlink():
                replacement = masked / f"{index}-{number}"
                replacement.write_text(gitconfig.mask(config).text, encoding="utf-8")
                replacement.chmod(0o644)
                fd = os.open(replacement, os.O_PATH)
                try:
                    world.bind(fd, str(config), read_only=True)
                finally:
                    os.close(fd)


def finish(spec: BoxSpec, copy: tree.Copy) -> Finished:
    """After the run: the patch of what the agent wrote, the chats kept; what the status
    reports.

    Every temporary file of ours and of our git (a rule file read for the ignore check, a file
    whose name holds a newline, hashed from a copy) is made in the box's own storage for the
    finish (:data:`FINISH_DIR`, a tmpfs of its own in the box): charged to its cap, and gone with
    it however the finish ends (never the runner's /tmp)."""
    area = Path(spec.box_dir)
    scratch = tempfile.mkdtemp(prefix="finish-", dir=area / FINISH_DIR)  # new, root's, 0700
    tempfile.tempdir = scratch
    os.environ["TMPDIR"] = scratch
    left_out = Listed.of(copy.left_out)
    with contextlib.suppress(OSError, home.HomeError):
        home.keep_chats(area / "home", Path(spec.chats_store), spec.owner)
    if not spec.git or spec.view_commit or copy.storage == "in-place":
        # a commit's view, and a read-only run's checkout shown in place, hand nothing back
        return Finished(left_out=left_out)
    copied, real = area / "tree", Path(spec.repo_root)
    before = changeset.Baseline(dict(copy.stats), dict(copy.dirty))
    try:
        # The real repository, named, never found through the copy: its top-level .git may be
        # a file (a worktree's, a submodule's) that the agent replaced with a link to a git
        # directory of its own making.
        git_dir, common = safegit.git_dirs(real)
        with changeset.separate_objects(area / OBJECTS_DIR, common / "objects", git_dir=git_dir,
                                        work_tree=copied):
            # New files the real tree's rules ignore stay in the box too: the copy's own
            # .gitignore files are the agent's to empty, negate or delete.
            if copy.storage == "overlay":  # only what the agent wrote is read
                changes = upper.compute(copied, real, overlay.written(str(area / "upper")),
                                        max_file_bytes=spec.limits.max_file_bytes,
                                        left_out=copy.left_out,
                                        max_changed_bytes=MAX_PATCH_SOURCE_BYTES)
            else:
                changes = changeset.compute(copied, before, left_out=copy.left_out,
                                            absent=copy.absent,
                                            max_file_bytes=spec.limits.max_file_bytes,
                                            ignore_as=real,
                                            max_changed_bytes=MAX_PATCH_SOURCE_BYTES)
            # A protected name fails the run even when a .gitignore (of the agent's own,
            # ignoring itself) keeps it out of the patch.
            kept = [path for path in [*changes.paths, *changes.ignored_paths]
                    if tree.protected(path)]
            changes.entries = [e for e in changes.entries if not tree.protected(e.path)]
            # Nested repositories as copied (a submodule's .git file is the agent's to delete,
            # which would make root's walk enter it): nothing inside them comes back.
            inside = tuple(f"{path}/" for path in tree.nested_repositories(copy))
            # Nor does anything below a path the box left out (a file over the size cap, a
            # fifo): the agent never saw what is there, and applying q/f over a real file q
            # would replace it, or fail half-way.
            inside += tuple(f"{path}/" for path in [*copy.left_out, *changes.too_large])
            changes.skipped += [e.path for e in changes.entries if e.path.startswith(inside)]
            changes.entries = [e for e in changes.entries if not e.path.startswith(inside)]
            # A link that leaves the repository (or leads into .git) fails the run: a later
            # step reading the real tree would read the runner's files through it.
            links_refused, _ = changeset.links(copied, changes)
            # So does a docs page a later build could act on, or read the runner's files with.
            reads = changeset.pages(copied, changes).refused
            patch = Path(spec.patch_file)
            changeset.write_patch(copied, changes, patch)
        os.chown(patch, *spec.owner)
    except (changeset.ChangesetError, OSError, ValueError, subprocess.TimeoutExpired) as exc:
        return Finished(patch_error=str(exc), left_out=left_out)
    return Finished(patch=str(patch), changed=len(changes.entries), protected=Listed.of(kept),
                    too_large_files=Listed.of(changes.too_large),
                    skipped=Listed.of(changes.skipped), special=Listed.of(changes.special),
                    too_long=Listed.of(changes.too_long), left_out=left_out,
                    left_behind=changes.ignored, links_refused=Listed.of(links_refused),
                    includes_refused=Listed.of(reads))
