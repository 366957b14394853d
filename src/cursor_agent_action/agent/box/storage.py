"""The box's storage, in the root side's own mount namespace: made before the agent starts (the
private copy, the real ``.git`` shown read-only with masked config, the fresh home) and read
after it ended (the patch, the chats kept for ``--resume``). Everything here is gone with that
namespace when the root side exits."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

from cursor_agent_action import changeset
from cursor_agent_action.agent.box import gitconfig, home, tree, world
from cursor_agent_action.agent.box.contract import BoxSpec, Finished, Listed
from cursor_agent_action.agent.box.user import AgentUser

MAX_PATCH_SOURCE_BYTES = 256 << 20
"""What the changed files may hold in all: a larger change is no patch a review can read."""


def prepare(spec: BoxSpec, agent: AgentUser) -> tuple[world.World, tree.Copy]:
    """In this program's own mount namespace: the box's storage, the copy, the home."""
    caps = spec.limits
    area = Path(spec.box_dir)
    area.mkdir(mode=0o700, exist_ok=True)
    os.chown(area, 0, 0)
    os.chmod(area, 0o700)
    world.make_private()
    world.tmpfs(str(area), size=str(caps.max_total_bytes + caps.write_bytes), mode=0o700)
    (area / "tree").mkdir()
    copy = tree.copy_tree(spec.repo_root, str(area / "tree"), agent.uid, agent.gid,
                          max_file_bytes=caps.max_file_bytes,
                          max_total_bytes=caps.max_total_bytes)
    masked = area / "git-config"
    masked.mkdir(mode=0o700)
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
    if spec.git:  # what the tree lacked when copied is no deletion of the agent's
        with contextlib.suppress(changeset.ChangesetError):
            known = {**changeset.head_tree(area / "tree"),
                     **spec.dirty}
            copy.absent = [path for path, (mode, _) in known.items()
                           if mode not in ("160000", changeset.ABSENT_MODE)
                           and path not in copy.stats]  # fmt: skip
    store = Path(spec.chats_store)
    home.make_home(area / "home", agent, dict(spec.home_files),
                   store if store.is_dir() else None)
    view = world.World(
        tree=str(area / "tree"), tree_target=spec.repo_root, home=str(area / "home"),
        home_target=spec.home, masks=list(spec.masks), tmp_size=str(caps.tmp_bytes),
        reveals=list(spec.reveals), shares=list(spec.shares), files=dict(spec.files))
    return view, copy


def finish(spec: BoxSpec, copy: tree.Copy) -> Finished:
    """After the run: the patch of the copy, the chats kept; what the status reports."""
    area = Path(spec.box_dir)
    left_out = Listed.of(copy.left_out)
    with contextlib.suppress(OSError, home.HomeError):
        home.keep_chats(area / "home", Path(spec.chats_store), spec.owner)
    if not spec.git:
        return Finished(left_out=left_out)
    copied, real = area / "tree", Path(spec.repo_root)
    before = changeset.Baseline(dict(copy.stats), dict(spec.dirty))
    try:
        (area / "objects").mkdir()
        # The real repository, named, never found through the copy: its top-level .git may be
        # a file (a worktree's, a submodule's) that the agent replaced with a link to a git
        # directory of its own making.
        git_dir, common = changeset.git_dirs(real)
        with changeset.separate_objects(area / "objects", common / "objects", git_dir=git_dir,
                                        work_tree=copied):
            # New files the real tree's rules ignore stay in the box too: the copy's own
            # .gitignore files are the agent's to empty, negate or delete.
            changes = changeset.compute(copied, before, left_out=copy.left_out,
                                        absent=copy.absent,
                                        max_file_bytes=spec.limits.max_file_bytes,
                                        ignore_as=real)
            # A protected name fails the run even when a .gitignore (of the agent's own,
            # ignoring itself) keeps it out of the patch.
            kept = [path for path in [*changes.paths, *changes.ignored_paths]
                    if tree.protected(path)]
            changes.entries = [e for e in changes.entries if not tree.protected(e.path)]
            # Nested repositories as copied (a submodule's .git file is the agent's to delete,
            # which would make root's walk enter it): nothing inside them comes back.
            inside = tuple(f"{path}/" for path in tree.nested_repositories(copy))
            changes.skipped += [e.path for e in changes.entries if e.path.startswith(inside)]
            changes.entries = [e for e in changes.entries if not e.path.startswith(inside)]
            size = sum(os.lstat(copied / e.path).st_size for e in changes.entries
                       if not e.deleted)  # fmt: skip
            if size > MAX_PATCH_SOURCE_BYTES:
                raise ValueError(f"the changed files hold {size >> 20} MiB, over the "
                                 f"{MAX_PATCH_SOURCE_BYTES >> 20} MiB a patch may carry")
            patch = Path(spec.patch_file)
            changeset.write_patch(copied, changes, patch)
        os.chown(patch, *spec.owner)
    except (changeset.ChangesetError, OSError, ValueError, subprocess.TimeoutExpired) as exc:
        return Finished(patch_error=str(exc), left_out=left_out)
    return Finished(patch=str(patch), changed=len(changes.entries), protected=Listed.of(kept),
                    too_large_files=Listed.of(changes.too_large),
                    skipped=Listed.of(changes.skipped), left_out=left_out,
                    left_behind=changes.ignored)
