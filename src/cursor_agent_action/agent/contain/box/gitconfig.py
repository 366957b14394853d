"""Credentials in a repository's git configuration: found (for the warning) and masked (for the
box).

``actions/checkout`` persists the job's token unless told not to (``persist-credentials:
false``): as an ``http.<url>.extraheader`` in ``.git/config`` or, in newer versions, in a file of
the runner's temporary directory that ``.git/config`` includes. Other places a credential hides:
``credential.*`` helpers, and a URL with a user and password (``https://x:TOKEN@host/...``).

The contained agent sees ``.git`` read-only, with every config file replaced by a masked copy:
the same settings without those keys, without ``include``/``includeIf`` (which read files outside
the repository), with the user part of every URL value removed and without any setting whose
section names a URL with a user part (``url."https://x:TOKEN@host/".insteadOf``). The copy is
written by us; the agent's own git commands read it. Parsing goes through our hardened git
(``git config --list --null --file``), never through a hand-written parser of git's format.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from cursor_agent_action import safegit

_CREDENTIAL_KEY = re.compile(
    r"^(http\..*\.extraheader|http\.extraheader|credential\..*|include\..*|includeif\..*)$"
)
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@")
CONFIG_NAMES = ("config", "config.worktree")
_MAX_CONFIG_BYTES = 1024 * 1024


class GitConfigError(Exception):
    """A config file could not be read by git."""


@dataclass(frozen=True)
class Masked:
    """A config file's masked text and the keys that were dropped or cleaned."""

    text: str
    removed: tuple[str, ...]


def _entries(path: Path) -> list[tuple[str, str]]:
    done = safegit.run(["config", "--file", str(path), "--list", "--null"], path.parent)
    if done.returncode != 0:
        words = " ".join(done.stderr.decode("utf-8", "replace").split())[:300]
        raise GitConfigError(f"git cannot read {path}: {words or done.returncode}")
    entries = []
    for record in done.stdout.split(b"\0"):
        if record:
            key, _, value = record.decode("utf-8", "surrogateescape").partition("\n")
            entries.append((key, value))
    return entries


def _quote(value: str) -> str:
    escaped = (
        value.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\t", "\\t")
        .replace("\b", "\\b")
    )
    return f'"{escaped}"'


def _section_header(section: str, subsection: str | None) -> str:
    if subsection is None:
        return f"[{section}]"
    escaped = subsection.replace("\\", "\\\\").replace('"', '\\"')
    return f'[{section} "{escaped}"]'


def mask(path: Path) -> Masked:
    """The masked text of the config file at ``path`` (see the module docstring)."""
    if path.stat().st_size > _MAX_CONFIG_BYTES:
        raise GitConfigError(f"{path} is larger than 1 MiB")
    removed: list[str] = []
    lines: list[str] = []
    current: tuple[str, str | None] | None = None
    for key, value in _entries(path):
        if _CREDENTIAL_KEY.match(key.lower()):
            removed.append(key)
            continue
        cleaned = _URL_USERINFO.sub(r"\1", value)
        if cleaned != value:
            removed.append(key)
        section, _, rest = key.partition(".")
        subsection, _, name = rest.rpartition(".")
        # A URL in a section's name holds a credential too: url."https://x:TOKEN@host/".insteadOf
        if ("\n" in subsection or "\0" in subsection
                or _URL_USERINFO.sub(r"\1", subsection) != subsection):
            removed.append(key)
            continue
        where = (section, subsection if subsection else None)
        if where != current:
            lines.append(_section_header(*where))
            current = where
        lines.append(f"\t{name} = {_quote(cleaned)}")
    return Masked("\n".join(lines) + "\n", tuple(removed))


def config_files(git_dir: Path, limit: int = 1000) -> list[Path]:
    """Every config file of ``git_dir``: its own, and those of its submodules
    (``modules/**``) and worktrees (``worktrees/*``), where ``actions/checkout`` persists the
    token too; at most ``limit``. Links are not followed."""
    found = [git_dir / name for name in CONFIG_NAMES]
    pending = [git_dir / "modules", git_dir / "worktrees"]
    while pending and len(found) < limit:
        directory = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and entry.name != "objects":
                pending.append(Path(entry.path))
            elif entry.name in CONFIG_NAMES and entry.is_file(follow_symlinks=False):
                found.append(Path(entry.path))
    return found[:limit]


def persisted_credentials(git_dir: Path) -> list[str]:
    """The keys of ``git_dir``'s config files (its submodules' and worktrees' too) that hold or
    bring in a credential."""
    found: list[str] = []
    for path in config_files(git_dir):
        if path.is_file() and not path.is_symlink():
            try:
                found += [key for key in mask(path).removed if key not in found]
            except (GitConfigError, OSError):
                continue
    return found
