"""The box's tree made from one commit's objects (``view-commit``), never from a checkout.

For a pull request from a fork the runner checks out the base; the fork's head is fetched as
objects only. Root, in the box's mount namespace, has our hardened git read that commit's tree
(:mod:`cursor_agent_action.safegit`: no hooks, no fsmonitor, no attributes, no filters:
``ls-tree`` and ``cat-file --batch`` never run a driver), run as the runner's user who fetched
the objects (root never parses them), and writes it straight into the box's tmpfs, owned by
the agent. No file of the head is ever written on the runner's disk (its
objects stay compressed in the object store), and nothing of it is interpreted on the way in:
a ``.gitattributes`` filter, ``.gitmodules`` or hook directory is one more file the agent may
read.

What the view leaves out: the paths the caller names in ``skip`` at any depth, case-folded
(the helper passes the configuration and instruction files the CLI reads, and the agent tools'
whole configuration directories: a fork's ``.cursor/``, ``.claude/``, hooks, rules are never
the agent's; the policy the helper wrote for this run is put at the working directory
instead), and every symbolic link named as a directory above one of them (a link ``.claude ->
cfg`` would show ``cfg/settings.json`` as ``.claude/settings.json``), counted in
:attr:`tree.Copy.skipped_config`; and, named in :attr:`tree.Copy.left_out`:

- a path with an empty, ``.``, ``..`` or ``.git`` component (git refuses such trees; a forged
  one is refused here too);
- files over ``max_file_bytes``, paths over :data:`tree.MAX_PATH_BYTES`;
- submodules (a gitlink is an empty directory: its commit is not in this repository).

Symbolic links are made as links, last (after every file and directory, so no path is ever
created through one); inside the box they lead only where the agent could read anyway.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from cursor_agent_action import safegit
from cursor_agent_action.agent.contain.box import tree
from cursor_agent_action.protected import fold, fold_path

_CHUNK = 1 << 20
_READ_TIMEOUT_S = 600
_MAX_LINK_BYTES = 4095
"""A link target longer than Linux takes (or empty) is left out."""
BLOB_MODES = {"100644": 0o644, "100755": 0o755}
LINK_MODE = "120000"
GITLINK_MODE = "160000"


class ViewError(ValueError):
    """The commit's tree could not be read (no such commit, a broken object)."""


@dataclass(frozen=True)
class Entry:
    """One entry of ``git ls-tree -r -l``."""

    mode: str
    oid: str
    size: int  # -1: a gitlink
    path: str


def _as(reader: tuple[int, int]) -> dict[str, Any]:
    """How a git of ours takes the reader's identity: root reads the fork's objects as the
    runner's user who fetched them (no root parser of attacker bytes), never with root's
    groups; as itself when it is that user already (or not root)."""
    if os.geteuid() != 0 or reader[0] in (-1, 0):
        return {}
    return {"user": reader[0], "group": reader[1], "extra_groups": []}


def entries(repo: Path, commit: str, reader: tuple[int, int] = (-1, -1), *,
            limit: int | None = None) -> list[Entry]:
    """Every entry of ``commit``'s tree, recursively (directories implied), read as
    ``reader`` (uid, gid) as git lists them; past ``limit`` entries, git is stopped and
    :class:`tree.CopyTooLarge` raised (a tree of a few hundred bytes of objects can list
    billions of paths: never held whole)."""
    with tempfile.TemporaryFile() as errors:
        try:
            lister = subprocess.Popen(
                safegit.argv(["ls-tree", "-r", "-z", "-l", "--full-tree",
                              f"{commit}^{{tree}}"], repo),
                cwd=repo, env=safegit.environment(), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=errors, **_as(reader))
        except OSError as exc:
            raise ViewError(f"git ls-tree could not read the commit {commit}: {exc}") from exc
        assert lister.stdout is not None  # noqa: S101 - stdout=PIPE
        watchdog = threading.Timer(_READ_TIMEOUT_S, lister.kill)  # reading is bounded in time
        watchdog.start()
        try:
            found = _listed(lister.stdout, commit, limit)
            code = lister.wait()
        finally:
            watchdog.cancel()
            if lister.poll() is None:
                lister.kill()
                lister.wait()
            lister.stdout.close()
        if code != 0:
            errors.seek(0)
            raise ViewError(f"the commit {commit} could not be read from the repository's "
                            f"objects ({safegit.words(errors.read(65536))[:600]}); fetch it "
                            f"first (git fetch origin {commit})")
    return found


def _listed(out: IO[bytes], commit: str, limit: int | None) -> list[Entry]:
    """The records ``git ls-tree -z -l`` writes to ``out``, at most ``limit`` of them."""
    found: list[Entry] = []
    rest = b""
    while chunk := out.read(_CHUNK):
        *records, rest = (rest + chunk).split(b"\0")
        for record in records:
            if limit is not None and len(found) >= limit:
                raise tree.CopyTooLarge(f"the commit {commit[:12]} holds more than "
                                        f"{limit:,} files (the box's cap)")
            meta, _, raw = record.partition(b"\t")
            mode, _kind, oid, size = meta.decode("ascii").split()
            found.append(Entry(mode, oid, -1 if size == "-" else int(size),
                               raw.decode("utf-8", "surrogateescape")))
    return found


def _unsafe(path: str) -> bool:
    """A component git never checks out: empty, ``.``, ``..`` or ``.git`` in any case."""
    return any(part in ("", ".", "..") or fold(part) == ".git" for part in path.split("/"))


def _ancestors(skip: frozenset[str]) -> frozenset[str]:
    """Every directory above a skipped path (``.claude`` for ``.claude/settings.json``): a
    link there would make the skipped path lead into the fork's own files."""
    return frozenset("/".join(parts[:end]) for parts in (path.split("/") for path in skip)
                     for end in range(1, len(parts)))


def _configuration(path: str, skip: frozenset[str]) -> bool:
    """Whether ``path`` is, or is inside, a skipped name (folded) below any directory."""
    folded = [fold(part) for part in path.split("/")]
    # A skipped name at any depth: the whole path (".cursor/mcp.json") or a directory of one
    # (".cursor/rules/x.mdc"), from any directory down.
    return any("/".join(folded[start:end]) in skip
               for start in range(len(folded)) for end in range(start + 1, len(folded) + 1))


def build(repo: Path, commit: str, target: Path, owner: tuple[int, int], *,
          skip: Iterable[str], max_file_bytes: int, max_total_bytes: int,
          max_files: int, reader: tuple[int, int] = (-1, -1)) -> tree.Copy:
    """Write ``commit``'s tree into the empty directory ``target`` (see the module
    docstring); everything made is owned by ``owner``; git reads the objects as ``reader``.
    :class:`tree.CopyTooLarge` past the caps (checked from the listing, before anything is
    written)."""
    listed = entries(repo, commit, reader, limit=max_files)
    skipped = frozenset(fold_path(path) for path in skip)
    linked = skipped | _ancestors(skipped)  # a link named so would lead into a skipped place
    made = tree.Copy(storage="commit")
    blobs: list[Entry] = []
    links: list[Entry] = []
    for entry in listed:
        if _configuration(entry.path, linked if entry.mode == LINK_MODE else skipped):
            made.skipped_config += 1
        elif (_unsafe(entry.path) or len(os.fsencode(entry.path)) > tree.MAX_PATH_BYTES
                or (entry.mode in BLOB_MODES and entry.size > max_file_bytes)):
            made.left_out.append(entry.path)
        elif entry.mode in BLOB_MODES:
            blobs.append(entry)
        elif entry.mode == LINK_MODE and 0 < entry.size <= _MAX_LINK_BYTES:
            links.append(entry)
        elif entry.mode == GITLINK_MODE:
            directory(target, entry.path, owner)
        else:
            made.left_out.append(entry.path)
    total = sum(entry.size for entry in blobs)
    if total > max_total_bytes:
        raise tree.CopyTooLarge(f"the commit {commit[:12]} holds {total:,} bytes in files, more "
                                f"than the box's {max_total_bytes:,}")
    os.chown(target, *owner)
    os.chmod(target, 0o755)  # noqa: S103 (the tree's top, as a checkout's)
    _each_blob(repo, reader, blobs, lambda entry, out, size: _write_file(
        target, entry, out, size, owner))
    contents: dict[str, bytes] = {}
    _each_blob(repo, reader, links, lambda entry, out, size: contents.__setitem__(
        entry.oid, _read_exactly(out, size, entry.path)))
    for entry in links:
        parent = directory(target, os.path.dirname(entry.path), owner)
        place = parent / os.path.basename(entry.path)
        if os.path.lexists(place):
            made.left_out.append(entry.path)
            continue
        os.symlink(contents[entry.oid], place)
        os.lchown(place, *owner)
    made.files, made.bytes = len(blobs), total
    return made


def directory(target: Path, relative: str, owner: tuple[int, int]) -> Path:
    """``target/relative`` as a directory, each missing component made (0755, ``owner``'s);
    an existing component that is not a directory (never a link: links come last) fails."""
    here = target
    for part in [p for p in relative.split("/") if p]:
        here = here / part
        try:
            os.mkdir(here, 0o755)
            os.chown(here, *owner)
        except FileExistsError:
            if not os.path.isdir(here) or os.path.islink(here):
                raise ViewError(f"{relative} is both a file and a directory in the commit's "
                                "tree") from None
    return here


def _header(out: IO[bytes], oid: str) -> int:
    line = out.readline()
    parts = line.split()
    if len(parts) != 3 or parts[1] != b"blob":
        raise ViewError(f"the object {oid[:12]} of the commit's tree is no blob: git answered "
                        f"{line[:200]!r}")
    return int(parts[2])


def _read_exactly(out: IO[bytes], size: int, path: str) -> bytes:
    data = out.read(size)
    if len(data) != size:
        raise ViewError(f"git ended while reading {path}")
    return data


def _write_file(target: Path, entry: Entry, out: IO[bytes], size: int,
                owner: tuple[int, int]) -> None:
    """The blob's ``size`` bytes from ``out`` into its new file (never opened through a link:
    ``O_EXCL|O_NOFOLLOW``, and no link exists yet)."""
    parent = directory(target, os.path.dirname(entry.path), owner)
    fd = os.open(parent / os.path.basename(entry.path),
                 os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 BLOB_MODES[entry.mode])
    try:
        left = size
        while left > 0:
            chunk = _read_exactly(out, min(left, _CHUNK), entry.path)
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
            left -= len(chunk)
        os.fchown(fd, *owner)
        os.fchmod(fd, BLOB_MODES[entry.mode])
    finally:
        os.close(fd)


def _each_blob(repo: Path, reader: tuple[int, int], blobs: list[Entry],
               take: Callable[[Entry, IO[bytes], int], None]) -> None:
    """Each blob streamed from one ``git cat-file --batch`` (run as ``reader``) to ``take``
    (the entry, the stream, the blob's size: ``take`` reads exactly that many bytes)."""
    if not blobs:
        return
    process = subprocess.Popen(safegit.argv(["cat-file", "--batch"], repo), cwd=repo,
                               env=safegit.environment(), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               **_as(reader))
    if process.stdin is None or process.stdout is None:  # pragma: no cover (pipes asked for)
        raise ViewError("git cat-file started without its pipes")
    try:
        for entry in blobs:
            process.stdin.write(f"{entry.oid}\n".encode())
            process.stdin.flush()
            take(entry, process.stdout, _header(process.stdout, entry.oid))
            process.stdout.read(1)  # the LF after the content
    finally:
        process.stdin.close()
        process.stdout.close()
        try:
            process.wait(timeout=_READ_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
