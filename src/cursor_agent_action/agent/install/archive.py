"""Unpacking the CLI package: every member checked before anything is written."""

from __future__ import annotations

import hashlib
import os
import posixpath
import tarfile
import zlib
from pathlib import Path
from typing import NoReturn

from cursor_agent_action.agent.install import untar
from cursor_agent_action.errors import InstallError

EXECUTABLE = "cursor-agent"
HAS_DATA_FILTER = hasattr(tarfile, "data_filter")
"""Whether this Python's tarfile has ``filter="data"`` (3.10.12+, 3.11.4+, 3.12+); without it
:mod:`.untar` writes the members with the same refusals."""
_FILTER_ERRORS: tuple[type[Exception], ...] = (
    (getattr(tarfile, "FilterError"),) if HAS_DATA_FILTER else ())  # noqa: B009 - 3.11.4+
MAX_UNPACKED_BYTES = 4 * 1024**3


def _bad_archive(url: str, problem: str) -> NoReturn:
    raise InstallError(
        f"the package from {url} is not a valid Cursor CLI package: {problem}.",
        "Re-run the job; if it persists, check --base-url or pin another version.",
    )


def _outside(normalized: str) -> bool:
    return normalized.startswith("/") or normalized == ".." or normalized.startswith("../")


def _check_members(members: list[tarfile.TarInfo], url: str) -> None:
    """Refuse traversal, escaping links, special files and members behind a link."""
    links: set[str] = set()
    total = 0
    for member in members:
        name = posixpath.normpath(member.name)
        if name == "." and member.isdir():
            continue
        if _outside(name) or name == ".":
            _bad_archive(url, f"member {member.name!r} points outside the package")
        parts = name.split("/")
        if any("/".join(parts[:i]) in links for i in range(1, len(parts))):
            _bad_archive(url, f"member {member.name!r} lies behind a symbolic link")
        if member.issym() or member.islnk():
            base = posixpath.dirname(name) if member.issym() else ""
            target = posixpath.normpath(posixpath.join(base, member.linkname))
            if member.linkname.startswith("/") or _outside(target):
                _bad_archive(url, f"link {member.name!r} -> {member.linkname!r} escapes it")
            links.add(name)
        elif not (member.isfile() or member.isdir()):
            _bad_archive(url, f"member {member.name!r} is a device or pipe")
        total += member.size
        if total > MAX_UNPACKED_BYTES:
            _bad_archive(url, f"it unpacks to more than {MAX_UNPACKED_BYTES} bytes")


def unpack(archive: Path, dest: Path, url: str) -> Path:
    """Unpack the archive into ``dest``; returns the package root (holding ``cursor-agent``)."""
    dest.mkdir()
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = tar.getmembers()
            _check_members(members, url)
            if HAS_DATA_FILTER:
                tar.extractall(dest, members=members, filter="data")
            else:  # Python 3.10.0-3.10.11 and 3.11.0-3.11.3: the same checks, ours
                untar.extract(tar, members, dest)
    except (untar.UnsafeMember, *_FILTER_ERRORS) as exc:  # type: ignore[misc]
        _bad_archive(url, f"unsafe member: {exc}")
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        _bad_archive(url, f"cannot unpack it as tar.gz ({type(exc).__name__}: {exc})")
    entries = list(dest.iterdir())
    # The vendor's package has one top-level directory (dist-package/); some are flat.
    candidates = [dest, *(entries if len(entries) == 1 and entries[0].is_dir() else [])]
    for root in candidates:
        exe = root / EXECUTABLE
        if exe.is_file() and os.access(exe, os.X_OK):
            return root
    _bad_archive(url, f"no executable {EXECUTABLE} at its top level")




def tree_digest(root: Path, *, skip: str) -> str:
    """SHA-256 over an unpacked package: every path (sorted), its kind, a file's executable
    bit and contents, a link's target; ``skip`` (a top-level name) is left out. The install
    records it in its marker and a cache hit recomputes it, so a cached CLI whose files changed
    after the download was verified is never run."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):  # never follows links
        dirnames.sort()
        base = Path(dirpath)
        for name in sorted([*filenames, *(d for d in dirnames if (base / d).is_symlink())]):
            path = base / name
            rel = path.relative_to(root).as_posix()
            if rel == skip:
                continue
            if path.is_symlink():
                digest.update(f"L {rel}\0{os.readlink(path)}\0".encode())
                continue
            contents = hashlib.sha256()
            with path.open("rb") as handle:
                while chunk := handle.read(1024 * 1024):
                    contents.update(chunk)
            executable = "x" if os.access(path, os.X_OK) else "-"
            digest.update(f"F {rel}\0{executable}{contents.hexdigest()}\0".encode())
        for name in dirnames:
            if not (base / name).is_symlink():
                digest.update(f"D {(base / name).relative_to(root).as_posix()}\0".encode())
    return digest.hexdigest()
