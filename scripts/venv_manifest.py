"""Write or check the integrity manifest of the helper venv (used by setup-helper.sh).

    python3 -I venv_manifest.py write VENV   # after a build: VENV/.manifest, a JSON object
    python3 -I venv_manifest.py check VENV...   # before reuse: exit 0 if each is unchanged

The manifest maps every file of the venv to its sha256 and every symlink to its target, so an
added, removed or edited file (a .pth, a module, a .pyc, bin/python) is a mismatch. Run it with
the base interpreter (-I), never the venv's own: that would run the code being checked. A
venv's extras/ directory is left out: each set in it (extras/schema) is a directory with its own
manifest, checked the same way.

It detects changes made by code that does not know about it (or a damaged cache); code running
as the same user can also rewrite the manifest, so it is no defence against a determined agent:
for that, use ephemeral runners or helper-cache: false (see the README's security section).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

NAME = ".manifest"
_NOT_LISTED = {NAME, ".complete"}  # written after the manifest / the manifest itself
EXTRAS = "extras"
"""A venv's directory of sets added later (the schema support): each has its own manifest."""


def measure(venv: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(venv):
        if dirpath == str(venv) and EXTRAS in dirnames and not (venv / EXTRAS).is_symlink():
            dirnames.remove(EXTRAS)
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            rel = path.relative_to(venv).as_posix()
            if rel in _NOT_LISTED:
                continue
            if path.is_symlink():
                found[rel] = "link:" + os.readlink(path)
            elif path.is_file():
                found[rel] = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
            elif not path.is_dir():
                found[rel] = "other"
    return found


def first_difference(venv: Path) -> str:
    """'' when the venv matches its manifest, else one line naming the first difference."""
    try:
        expected = json.loads((venv / NAME).read_text("utf-8"))
    except (OSError, ValueError):
        return "its manifest is missing or unreadable"
    actual = measure(venv)
    for rel in sorted(set(expected) | set(actual)):
        if expected.get(rel) != actual.get(rel):
            what = "added" if rel not in expected else "removed" if rel not in actual else "changed"
            return f"{json.dumps(rel)} was {what}"  # JSON: a file name cannot break the line
    return ""


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] not in ("write", "check") or (argv[1] == "write" and len(argv) > 3):
        print("usage: venv_manifest.py write VENV | check VENV...", file=sys.stderr)
        return 2
    if argv[1] == "write":
        venv = Path(argv[2])
        (venv / NAME).write_text(json.dumps(measure(venv), sort_keys=True), "utf-8")
        return 0
    for venv in map(Path, argv[2:]):
        difference = first_difference(venv)
        if difference:
            print(difference if venv == Path(argv[2]) else f"{venv.name}/: {difference}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
