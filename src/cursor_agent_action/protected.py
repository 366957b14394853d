"""Names no agent may write at any depth, compared the way a file system might compare them.

Shared by the permission floor (``agent/guards/permissions.py``: the deny rules and the check
after the run) and publish (``gh/publish/patchcheck.py``). A name is protected when its *folded*
form is one of the names below, so ``docs/.Cursor/hooks.json``,
``src/<U+FF0E>claude/settings.json`` (a fullwidth dot), ``.GITHUB/workflows/x.yml``,
``pkg/AGENTS.md`` and ``.g<U+200C>it/config`` are all caught.
Folding is deliberately wider than any one file system:

- NFKC (compatibility forms: fullwidth letters and dots, ligatures);
- default-ignorable code points removed (HFS+ ignores some of them in names, so
  ``.g<U+200C>it`` *is* ``.git`` there; git's own ``is_hfs_dotgit`` does the same);
- case folded, then combining marks dropped (so ``.GİT``, whose folding is ``.gi̇t``, is
  ``.git`` too: no file system treats it so, but refusing costs nothing);
- trailing dots and spaces removed (NTFS drops them: ``.git.`` is ``.git``), and git's 8.3
  short name ``git~1`` counts as ``.git``.
"""

from __future__ import annotations

import functools
import re
import unicodedata

AGENT_DIRS: tuple[str, ...] = (".gemini", ".clinerules", ".windsurf", ".junie", ".kiro", ".roo",
                               ".amazonq")
"""Other coding agents' rules and settings (Gemini, Cline, Windsurf, Junie, Kiro, Roo, Amazon
Q): a change there is a standing instruction to the next agent that works on the repository."""
AGENT_FILES: tuple[str, ...] = ("gemini.md", ".windsurfrules")
PROTECTED_DIRS: tuple[str, ...] = (".cursor", ".claude", ".github", ".git", *AGENT_DIRS)
"""Directories whose contents configure the agent, other agents, CI or git (at any depth)."""
PROTECTED_FILES: tuple[str, ...] = ("agents.md", "claude.md", ".mcp.json", ".cursorrules",
                                    *AGENT_FILES)
"""Files (folded names) an agent reads as instructions or commands (at any depth)."""
GIT_PREFIX = ".git"
"""A file whose name starts with it (``.gitattributes``, ``.gitmodules``...) changes how git
treats the tree."""

# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt), which covers the format
# characters (Cf) that render as nothing, plus the variation selectors and Hangul fillers.
IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


@functools.lru_cache(maxsize=4096)
def fold(name: str) -> str:
    """One path component as the widest file system would compare it (see the module doc)."""
    if name.isascii():  # the common case: only case and NTFS's trailing dots and spaces
        folded = name.lower().rstrip(". ")
    else:
        text = IGNORABLE.sub("", unicodedata.normalize("NFKC", name)).casefold()
        text = unicodedata.normalize("NFKD", text)
        text = "".join(ch for ch in text if not unicodedata.combining(ch))
        folded = unicodedata.normalize("NFKC", text).rstrip(". ")
    return ".git" if folded == "git~1" else folded


def fold_path(path: str) -> str:
    """Every component of a ``/``-separated path folded."""
    return "/".join(fold(part) for part in path.split("/"))


def protected_name(path: str) -> str:
    """The first protected component of ``path`` (as written), or ``""`` when none is.

    A protected directory anywhere in the path; as the last component, a protected file name
    or a ``.git*`` name.
    """
    parts = path.split("/")
    for part in parts[:-1]:
        if fold(part) in PROTECTED_DIRS:
            return part
    last = fold(parts[-1])
    if last in PROTECTED_DIRS or last in PROTECTED_FILES or last.startswith(GIT_PREFIX):
        return parts[-1]
    return ""


def git_name(path: str) -> str:
    """The component of ``path`` that makes it a git file, or ``""``: a ``.git`` directory
    anywhere, or a last component starting with ``.git`` (``.gitattributes``...)."""
    parts = path.split("/")
    for part in parts[:-1]:
        if fold(part) == ".git":
            return part
    return parts[-1] if fold(parts[-1]).startswith(GIT_PREFIX) else ""
