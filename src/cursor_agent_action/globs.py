"""Path globs as the permission tokens write them, shared by the policy and publish's checks."""

from __future__ import annotations

import functools
import re


@functools.lru_cache(maxsize=1024)  # the same few globs, checked against every changed file
def glob_to_regex(glob: str) -> re.Pattern[str]:
    """A regex for a permission glob, with minimatch-style ``**``, ``*``, ``?`` and ``{a,b}``.

    ``**/`` matches any number of directories (also none), ``*`` and ``?`` stay within one path
    segment. It is our conservative model of the CLI's matcher, used for our own checks.
    """
    out: list[str] = []
    i = 0
    depth = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "{":
            out.append("(?:")
            depth += 1
            i += 1
        elif glob[i] == "}" and depth:
            out.append(")")
            depth -= 1
            i += 1
        elif glob[i] == "," and depth:
            out.append("|")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    if depth:  # an unclosed brace is a literal brace
        return re.compile(re.escape(glob))
    return re.compile("".join(out), re.DOTALL)
