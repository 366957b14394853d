"""The box's storage, in the root side's own mount namespace: made before the agent starts (the
private copy, the real ``.git`` shown read-only with masked config, the fresh home) and read
after it ended (the patch, the chats kept for ``--resume``). Everything here is gone with that
namespace when the root side exits."""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from cursor_agent_action import changeset
from cursor_agent_action.agent.box import gitconfig, home, tree, world
from cursor_agent_action.agent.box.user import AgentUser

_LISTED = 50
MAX_PATCH_SOURCE_BYTES = 256 << 20
"""What the changed files may hold in all: a larger change is no patch a review can read."""
"""How many paths of a kind the status lists (the counts are whole)."""


def prepare(spec: dict[str, Any], agent: AgentUser) -> tuple[world.World, tree.Copy]:
    """In this program's own mount namespace: the box's storage, the copy, the home."""
    caps = spec["limits"]
    area = Path(spec["box_dir"])
    area.mkdir(mode=0o700, exist_ok=True)
    os.chown(area, 0, 0)
    os.chmod(area, 0o700)
    world.make_private()
    world.tmpfs(str(area), size=str(caps["max_total_bytes"] + caps["write_bytes"]), mode=0o700)
    (area / "tree").mkdir()
    copy = tree.copy_tree(spec["repo_root"], str(area / "tree"), agent.uid, agent.gid,
                          max_file_bytes=caps["max_file_bytes"],
                          max_total_bytes=caps["max_total_bytes"])
    masked = area / "git-config"
    masked.mkdir(mode=0o700)
    for index, git_dir in enumerate(copy.git_dirs):
        source, target = Path(spec["repo_root"]) / git_dir, area / "tree" / git_dir
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
    if spec.get("git", True):  # what the tree lacked when copied is no deletion of the agent's
        with contextlib.suppress(changeset.ChangesetError):
            known = {**changeset.head_tree(area / "tree"),
                     **{path: tuple(state) for path, state in spec.get("dirty", {}).items()}}
            copy.absent = [path for path, (mode, _) in known.items()
                           if mode not in ("160000", changeset.ABSENT_MODE)
                           and path not in copy.stats]  # fmt: skip
    store = Path(spec["chats_store"])
    home.make_home(area / "home", agent, spec.get("home_files", {}),
                   store if store.is_dir() else None)
    view = world.World(
        tree=str(area / "tree"), tree_target=spec["repo_root"], home=str(area / "home"),
        home_target=spec["home"], masks=spec["masks"], tmp_size=str(caps["tmp_bytes"]),
        reveals=spec.get("reveals", []), shares=spec.get("shares", []),
        files=spec.get("files", {}),
    )  # fmt: skip
    return view, copy


def finish(spec: dict[str, Any], copy: tree.Copy) -> dict[str, Any]:
    """After the run: the patch of the copy, the chats kept; what the status reports.

    Every temporary file of ours and of our git (a rule file read for the ignore check, a file
    whose name holds a newline, hashed from a copy) is made in the box's own storage: charged to
    its cap, and gone with it however the finish ends (never the runner's /tmp)."""
    area = Path(spec["box_dir"])
    scratch = tempfile.mkdtemp(prefix="finish-", dir=area)  # new, root's, 0700
    tempfile.tempdir = scratch
    os.environ["TMPDIR"] = scratch
    result: dict[str, Any] = {"left_out": copy.left_out[:_LISTED],
                              "left_out_count": len(copy.left_out)}
    with contextlib.suppress(OSError, home.HomeError):
        home.keep_chats(area / "home", Path(spec["chats_store"]),
                        (int(spec["owner"][0]), int(spec["owner"][1])))
    if not spec.get("git", True):
        return result
    copied, real = area / "tree", Path(spec["repo_root"])
    dirty = {path: (mode, oid) for path, (mode, oid) in spec.get("dirty", {}).items()}
    before = changeset.Baseline(dict(copy.stats), dirty)
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
                                        max_file_bytes=spec["limits"]["max_file_bytes"],
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
            changes.skipped += [e.path for e in changes.entries if e.path.startswith(inside)]
            changes.entries = [e for e in changes.entries if not e.path.startswith(inside)]
            # A link that leaves the repository (or leads into .git) fails the run: a later
            # step reading the real tree would read the runner's files through it.
            links_refused, _ = changeset.links(copied, changes)
            # So does a docs page that would make a later build read the runner's files.
            reads = changeset.includes_outside(copied, changes)
            patch = Path(spec["patch_file"])
            changeset.write_patch(copied, changes, patch)
        os.chown(patch, *spec["owner"])
        result.update(
            patch=str(patch), changed=len(changes.entries),
            protected=kept[:_LISTED], protected_count=len(kept),
            too_large=changes.too_large[:_LISTED], too_large_count=len(changes.too_large),
            skipped=changes.skipped[:_LISTED], skipped_count=len(changes.skipped),
            special=changes.special[:_LISTED], special_count=len(changes.special),
            too_long=changes.too_long[:_LISTED], too_long_count=len(changes.too_long),
            left_behind=changes.ignored, links_refused=links_refused[:_LISTED],
            links_refused_count=len(links_refused), includes_refused=reads[:_LISTED],
        )  # fmt: skip
    except (changeset.ChangesetError, OSError, ValueError, subprocess.TimeoutExpired) as exc:
        result["patch_error"] = str(exc)
    return result
