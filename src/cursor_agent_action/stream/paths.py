"""Paths as the job summary shows them: relative to the agent's workspace where they can be."""

from __future__ import annotations

import functools
import ntpath
import posixpath
import re
from collections.abc import Callable

_WINDOWS_PATH = re.compile(r"^[A-Za-z]:[\\/]|^\\\\")


def _canonical(path: str) -> str:
    # macOS reports /tmp and /var as /private/tmp and /private/var (they are symlinks).
    return path[len("/private") :] if path.startswith("/private/") else path


@functools.lru_cache(maxsize=4096)  # agents touch the same few files again and again
def workspace_relative(path: str, cwd: str) -> str:
    """``path`` relative to the workspace ``cwd`` with ``/`` separators; paths outside the
    workspace stay absolute (normalized)."""
    windows = bool(_WINDOWS_PATH.match(cwd) or _WINDOWS_PATH.match(path))
    normpath: Callable[[str], str] = ntpath.normpath if windows else posixpath.normpath
    isabs: Callable[[str], bool] = ntpath.isabs if windows else posixpath.isabs
    norm = normpath(path)
    if not isabs(norm):
        return norm.replace("\\", "/")
    if not cwd:
        return norm.replace("\\", "/")
    base = _canonical(normpath(cwd))
    full = _canonical(norm)
    if windows:
        base, full = base.replace("\\", "/"), full.replace("\\", "/")
        same = full.lower() == base.lower()
        inside = full.lower().startswith(base.lower().rstrip("/") + "/")
    else:
        same = full == base
        inside = full.startswith(base.rstrip("/") + "/")
    if same:
        return "."
    if inside:
        return full[len(base.rstrip("/")) + 1 :]
    return full.replace("\\", "/") if windows else norm
