"""What changed in a working tree against its HEAD commit, as git objects and as a binary patch,
computed without trusting anything in the tree.

Never the repository's own index (``skip-worktree``, ``assume-unchanged`` and a doctored index
cannot hide a change): the tree is read from disk and compared with ``HEAD``'s tree
(``git ls-tree``). File contents are hashed with ``git hash-object --no-filters`` (no clean
filter, no ``.gitattributes`` conversion: the bytes on disk are what is compared and
published), links by their target, and only regular files and links count (a fifo or device is
never read). New files that ``.gitignore`` ignores stay out, as ``git add --all`` would leave
them. The patch is ``git diff --cached --binary`` of a temporary index built from HEAD plus these
entries, with no external diff and no textconv. Every git call goes through :mod:`.safegit`.

A :class:`Baseline` taken before the agent runs makes the comparison cheap afterwards: only paths
whose ``lstat`` changed (the inode change time cannot be set by an unprivileged process), paths
that were already different from HEAD, and new or removed paths are hashed. Without one every
file is hashed.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from cursor_agent_action import safegit
from cursor_agent_action.docpages.judge import Judgement
from cursor_agent_action.docpages.judge import judge as judge_pages
from cursor_agent_action.docpages.kinds import is_documentation
from cursor_agent_action.docpages.view import from_trees
from cursor_agent_action.links import judge, parse_ls_tree
from cursor_agent_action.protected import protected_name
from cursor_agent_action.worktree import (
    MAX_RULES_TOTAL_BYTES,
    Unread,
    read_regular,
    walk,
)

ABSENT_MODE = "000000"
PATCH_HEADER = b"# cursor-agent-action patch (apply with: git apply --binary)\n"
StatKey = tuple[int, int, int, int, int]  # mode, size, inode, mtime, ctime


ChangesetError = safegit.GitFailed
"""git failed, or the tree is not a repository with a commit: git's one error, by the name the
callers of this module know it."""


@dataclass(frozen=True)
class Entry:
    """One changed path: its mode and object before (HEAD) and after (the working tree)."""

    path: str  # repository-relative, "/" separated (surrogate-escaped if not UTF-8)
    old_mode: str
    old_oid: str
    new_mode: str
    new_oid: str

    @property
    def deleted(self) -> bool:
        return self.new_mode == ABSENT_MODE


@dataclass
class Baseline:
    """The working tree before the run: every path's ``lstat``, and the paths already unlike
    HEAD with their ``(mode, oid)`` then (:data:`ABSENT_MODE` for a path HEAD has and the
    tree did not)."""

    stats: dict[str, StatKey]
    dirty: dict[str, tuple[str, str]]


@dataclass
class Changeset:
    """The changes against the tree before the run (HEAD, plus what was already unlike HEAD
    then: ``overlay``), the commit they are against, and what could not be represented."""

    head: str
    entries: list[Entry]
    skipped: list[str] = field(default_factory=list)  # nested repositories, what is in them
    overlay: dict[str, tuple[str, str]] = field(default_factory=dict)
    too_large: list[str] = field(default_factory=list)  # not read: over the size cap
    ignored_paths: list[str] = field(default_factory=list)  # new files .gitignore keeps out
    special: list[str] = field(default_factory=list)  # fifos, sockets, devices: never opened
    too_long: list[str] = field(default_factory=list)  # paths over MAX_PATH_BYTES: not read

    @property
    def paths(self) -> list[str]:
        return [entry.path for entry in self.entries]

    @property
    def ignored(self) -> int:
        return len(self.ignored_paths)


_OBJECTS: contextvars.ContextVar[Mapping[str, str]] = contextvars.ContextVar(
    "objects", default=MappingProxyType({}))


@contextlib.contextmanager
def separate_objects(objects: Path, alternate: Path, *, git_dir: Path | None = None,
                     work_tree: Path | None = None) -> Iterator[None]:
    """Inside: new objects go to ``objects`` (``alternate``, the repository's own object store,
    is only read). For a repository whose ``.git`` is read-only, as in the agent's box. With
    ``git_dir`` and ``work_tree``, git uses that repository for that tree and never looks for a
    ``.git`` in the tree (where the agent could have put one of its own)."""
    env = {"GIT_OBJECT_DIRECTORY": str(objects),
           "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(alternate)}
    if git_dir is not None and work_tree is not None:
        env.update(GIT_DIR=str(git_dir), GIT_WORK_TREE=str(work_tree))
    token = _OBJECTS.set(env)
    try:
        yield
    finally:
        _OBJECTS.reset(token)


def _git(repo: Path, *args: str, env: dict[str, str] | None = None,
         input: bytes | None = None) -> bytes:
    try:
        return safegit.git(args, repo, env={**_OBJECTS.get(), **(env or {})}, input=input).stdout
    except safegit.GitFailed as exc:
        if exc.returncode is not None and exc.returncode < 0:  # SIGBUS or SIGKILL: the box's
            raise ChangesetError(f"{exc} (over the box's memory or storage)",  # storage or
                                 command=exc.command, detail=exc.detail,  # memory ran out
                                 returncode=exc.returncode) from exc
        raise


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def _encode(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def repository_root(path: Path) -> Path | None:
    """The top of the work tree ``path`` is in, or None (not a repository, or no git)."""
    try:
        return safegit.toplevel(path)
    except safegit.GitFailed:
        return None


def head_commit(repo: Path) -> str:
    """The commit checked out in ``repo``; inside :func:`separate_objects`, of the repository
    it names (never of a ``.git`` the agent put in the tree)."""
    return safegit.head_commit(repo, env=_OBJECTS.get())


def head_tree(repo: Path, paths: Iterable[str] | None = None) -> dict[str, tuple[str, str]]:
    """``path -> (mode, oid)`` of every entry in HEAD (gitlinks included); with ``paths``, of
    the files and links among them only (literal names, 500 a call: nothing else is listed)."""
    listed = None if paths is None else sorted(set(paths))
    calls = [["-r", "HEAD"]] if listed is None else [
        ["HEAD", "--", *listed[start:start + 500]] for start in range(0, len(listed), 500)]
    entries: dict[str, tuple[str, str]] = {}
    for call in calls:
        out = _git(repo, "ls-tree", "-z", "--full-tree", *call,
                   env={"GIT_LITERAL_PATHSPECS": "1"})
        for record in out.split(b"\0"):
            meta, _, path = record.partition(b"\t")
            mode, kind, oid = meta.decode().split(" ") if record else ("", "tree", "")
            if kind != "tree":  # a directory named in ``paths`` (-r lists none)
                entries[_decode(path)] = (mode, oid)
    return entries


def stat_key(info: os.stat_result) -> StatKey:
    return (info.st_mode, info.st_size, info.st_ino, info.st_mtime_ns, info.st_ctime_ns)


def baseline(repo: Path) -> Baseline:
    """Before the agent runs: every path's ``lstat``, and the paths already unlike HEAD with
    their state then (so a change made before the run is the base, not the agent's). Found by
    hashing the tree, not with ``git status``: that would run the clean filters a planted
    ``.git/config`` names, and trust an index whose flags can hide a change."""
    head = head_tree(repo)
    tree = walk(repo, Unread())
    hashed = hash_paths(repo, sorted(tree), tree)
    state = {
        path: (mode_of(tree[path]), oid)
        for path, oid in hashed.items()
        if head.get(path) != (mode_of(tree[path]), oid)
    }
    new = [path for path in state if path not in head]
    for path in ignored_in(repo, new):
        del state[path]
    for path, (mode, oid) in head.items():
        if path not in tree and mode != "160000":
            state[path] = (ABSENT_MODE, "0" * len(oid))
    return Baseline({path: stat_key(info) for path, info in tree.items()}, state)


def mode_of(info: os.stat_result) -> str:
    if stat.S_ISLNK(info.st_mode):
        return "120000"
    return "100755" if info.st_mode & stat.S_IXUSR else "100644"


def over_size(info: os.stat_result, max_bytes: int | None) -> bool:
    """A regular file larger than ``max_bytes`` (None: no cap)."""
    return max_bytes is not None and stat.S_ISREG(info.st_mode) and info.st_size > max_bytes


def hash_paths(repo: Path, paths: list[str], tree: dict[str, os.stat_result]) -> dict[str, str]:
    """Object ids of ``paths`` as they are on disk, written to the object store."""
    if not paths:
        return {}
    with tempfile.TemporaryDirectory(prefix="caa-links-") as tmp:
        sources: list[bytes] = []
        for index, path in enumerate(paths):
            if stat.S_ISLNK(tree[path].st_mode):  # a link's blob is its target
                copy = Path(tmp) / str(index)
                copy.write_bytes(os.fsencode(os.readlink(repo / path)))
                sources.append(os.fsencode(str(copy)))
            elif "\n" in path:  # --stdin-paths is one path a line: hash a copy instead
                copy = Path(tmp) / str(index)
                copy.write_bytes((repo / path).read_bytes())
                sources.append(os.fsencode(str(copy)))
            else:  # "./": a line that starts with a quote is unquoted by git ("\057etc...")
                sources.append(b"./" + _encode(path))
        out = _git(repo, "hash-object", "-w", "--no-filters", "--stdin-paths",
                   input=b"\n".join(sources) + b"\n")
    oids = out.decode().split()
    if len(oids) != len(paths):
        raise safegit.GitFailed("git hash-object did not hash every file",
                                command="git hash-object")
    return dict(zip(paths, oids, strict=True))


def _git_dir_env(repo: Path, env: Mapping[str, str]) -> dict[str, str]:
    """``env`` naming the repository of ``repo`` by ``GIT_DIR`` (as given, or found)."""
    if "GIT_DIR" in env:
        return dict(env)
    out = _git(repo, "rev-parse", "--absolute-git-dir", env=dict(env))
    return {**env, "GIT_DIR": _decode(out.strip())}


def ignored_in(repo: Path, paths: Iterable[str], env: dict[str, str] | None = None) -> set[str]:
    """Which of the new ``paths`` the ignore rules of the work tree ``repo`` ignore (its
    ``.gitignore`` files, ``info/exclude``); ``env`` instead of the separate objects' (``{}``:
    ``repo`` is a tree of its own, as the box's real tree).

    git never opens a file of ``repo`` here: the ``.gitignore`` files on the way to each path
    are read by :func:`read_regular` (a fifo the agent named ``.gitignore`` would hold git's
    read forever; a link, a socket or a device is no rule file either) into a directory of our
    own, and git checks the paths against that copy."""
    listed = list(paths)
    if not listed:
        return set()
    git_env = _git_dir_env(repo, _OBJECTS.get() if env is None else env)
    directories = {""}
    for path in listed:
        parts = path.split("/")[:-1]
        directories.update("/".join(parts[:end]) for end in range(1, len(parts) + 1))
    total = 0
    with tempfile.TemporaryDirectory(prefix="caa-ignore-") as rules:
        for directory in sorted(directories):
            data = read_regular(os.path.join(repo, directory, ".gitignore"))
            total += len(data or b"")
            if total > MAX_RULES_TOTAL_BYTES:
                raise ChangesetError(
                    f"the .gitignore files on the way to the new files hold over "
                    f"{MAX_RULES_TOTAL_BYTES >> 20} MiB (over the box's limit for rules)")
            if data is not None:
                target = Path(rules, directory)
                target.mkdir(parents=True, exist_ok=True)
                (target / ".gitignore").write_bytes(data)
        done = safegit.git(["check-ignore", "--no-index", "-z", "--stdin"], Path(rules),
                           env={**git_env, "GIT_WORK_TREE": rules},
                           input=b"\0".join(map(_encode, listed)) + b"\0", ok=(0, 1))
    return {_decode(raw) for raw in done.stdout.split(b"\0") if raw}


def compute(repo: Path, before: Baseline | None, *, left_out: Iterable[str] = (),
            absent: Iterable[str] = (), max_file_bytes: int | None = None,
            ignore_as: Path | None = None, max_changed_bytes: int | None = None) -> Changeset:
    """What differs between HEAD and the work tree of ``repo`` (its top directory).

    ``left_out``: paths never in this tree (left out of the box's copy): not read, not counted
    as deleted. ``absent``: paths the tree lacked from the start (set aside before the copy):
    their absence is no deletion, a file there is new. A file over ``max_file_bytes`` (its
    apparent size: sparse files too) is not read: it is listed in ``too_large`` and stays out
    of the changes. ``ignore_as``: another work tree whose ignore rules also keep new files
    out (the box's real tree: the copy's own ``.gitignore`` files are the agent's to change)."""
    head = head_commit(repo)
    base = head_tree(repo)
    overlay = {} if before is None else dict(before.dirty)
    for path, state in overlay.items():  # the tree as it was before the run
        if state[0] == ABSENT_MODE:
            base.pop(path, None)
        else:
            base[path] = state
    unread = Unread()
    tree = walk(repo, unread)
    too_large = sorted(path for path, info in tree.items() if over_size(info, max_file_bytes))
    for path in [*too_large, *left_out]:
        tree.pop(path, None)
        base.pop(path, None)
    for path in absent:
        base.pop(path, None)
    if before is None:
        candidates = set(tree)
    else:
        candidates = {path for path, info in tree.items()
                      if before.stats.get(path) != stat_key(info)}
    inside_nested = tuple(f"{path}/" for path in unread.nested)
    to_hash = sorted(path for path in candidates if path in tree)
    if max_changed_bytes is not None:  # from lstat, before a byte is read
        size = sum(tree[path].st_size for path in to_hash)
        if size > max_changed_bytes:
            raise ChangesetError(f"the changed files hold {size >> 20} MiB, over the "
                                 f"{max_changed_bytes >> 20} MiB a patch may carry")
    hashed = hash_paths(repo, to_hash, tree)
    entries: list[Entry] = []
    for path, oid in hashed.items():
        mode = mode_of(tree[path])
        old_mode, old_oid = base.get(path, (ABSENT_MODE, "0" * len(oid)))
        if (old_mode, old_oid) != (mode, oid):
            entries.append(Entry(path, old_mode, old_oid, mode, oid))
    for path, (mode, oid) in base.items():
        if path not in tree and mode != "160000" and not path.startswith(inside_nested):
            entries.append(Entry(path, mode, oid, ABSENT_MODE, "0" * len(oid)))
    new = [entry.path for entry in entries if entry.old_mode == ABSENT_MODE]
    ignored = ignored_in(repo, new)
    if ignore_as is not None:
        ignored |= ignored_in(ignore_as, [path for path in new if path not in ignored], env={})
    entries = sorted((e for e in entries if e.path not in ignored), key=lambda e: e.path)
    return Changeset(head, entries, sorted(unread.nested), overlay, too_large, sorted(ignored),
                     sorted(unread.special), sorted(unread.too_long))


def build_tree(repo: Path, index: dict[str, str], head: str, entries: Iterable[Entry]) -> str:
    """Write the tree of HEAD with ``entries`` applied (in the temporary ``index``)."""
    _git(repo, "read-tree", head, env=index)
    lines = b"".join(  # mode 0 removes the path (its object id is not read)
        (f"{e.new_mode} {e.new_oid}\t" if not e.deleted else f"0 {'0' * len(head)}\t").encode()
        + _encode(e.path) + b"\0"
        for e in entries
    )
    if lines:
        _git(repo, "update-index", "-z", "--index-info", env=index, input=lines)
    return _git(repo, "write-tree", env=index).decode().strip()


def links(repo: Path, changes: Changeset) -> tuple[list[str], list[str]]:
    """The new or changed symbolic links of ``changes``, judged in the tree they make
    (:func:`cursor_agent_action.links.judge`): ``(refused, kept)``, each ``"path -> target"``.
    The tree is read from git's objects only (``ls-tree``, ``cat-file``): nothing on disk."""
    changed = [entry.path for entry in changes.entries if entry.new_mode == "120000"]
    if not changed:
        return [], []
    before = [Entry(path, "", "", mode, oid) for path, (mode, oid) in changes.overlay.items()]
    with tempfile.TemporaryDirectory(prefix="caa-index-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        tree = build_tree(repo, index, changes.head, [*before, *changes.entries])
    raw = _git(repo, "ls-tree", "-r", "-z", "--full-tree", tree)
    found = parse_ls_tree(raw, lambda oid: _git(repo, "cat-file", "blob", oid))
    return judge(found, changed, lambda path: bool(protected_name(path)))


def pages(repo: Path, changes: Changeset) -> Judgement:
    """The changed documentation pages of ``repo`` judged (:mod:`cursor_agent_action.docpages`):
    in the tree the change makes, against HEAD, read from git's objects only (nothing on
    disk but the ``.gitignore`` files, read as :func:`ignored_in` reads them)."""
    changed = [entry.path for entry in changes.entries if not entry.deleted]
    if not any(is_documentation(path) for path in changed):
        return Judgement()
    before = [Entry(path, "", "", mode, oid) for path, (mode, oid) in changes.overlay.items()]
    with tempfile.TemporaryDirectory(prefix="caa-index-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        tree = build_tree(repo, index, changes.head, [*before, *changes.entries])
    view = from_trees(lambda name: _git(repo, "ls-tree", "-r", "-z", "--full-tree", name),
                      lambda oids: safegit.blobs(repo, oids, env=_OBJECTS.get()), new_tree=tree,
                      base_tree=changes.head, changed=changed,
                      ignored=lambda paths: ignored_in(repo, paths),
                      preload=[path for path in changed if is_documentation(path)])
    return judge_pages(view, changed)


def write_patch(repo: Path, changes: Changeset, destination: Path) -> int:
    """Write the binary patch of ``changes``: from the tree before the run to the tree after;
    its size in bytes. The header names the commit; when the tree already differed from it
    before the run, the header says so (the patch then applies on top of those changes)."""
    before = [Entry(path, "", "", mode, oid) for path, (mode, oid) in changes.overlay.items()]
    with tempfile.TemporaryDirectory(prefix="caa-index-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        old_tree = build_tree(repo, index, changes.head, before)
        new_tree = build_tree(repo, index, changes.head, [*before, *changes.entries])
        # Off the tree: git reads no .gitattributes of the tree (a fifo there would hold it;
        # a tree-to-tree diff needs none), only the repository's own info/attributes.
        off_tree = Path(tmp) / "off-tree"
        off_tree.mkdir()
        env = {**_git_dir_env(repo, _OBJECTS.get()), "GIT_WORK_TREE": str(off_tree)}
        patch = _git(off_tree, "diff", "--binary", "--full-index", "--no-renames",
                     "--no-ext-diff", "--no-textconv", "--no-color", old_tree, new_tree, env=env)
    header = PATCH_HEADER + f"# base: {changes.head}\n".encode()
    if changes.overlay:
        header += (f"# note: {len(changes.overlay)} path(s) already differed from the base "
                   "before the run; the patch is against that state\n").encode()
    data = header + b"\n" + patch
    fd = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return len(data)

