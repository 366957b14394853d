"""What counts as documentation, and which files are usually executed: one list, with a reason
per entry, for the ``docs`` preset (what it may write, what it never may), publish's warning
(a change it lets through that holds files a build or test run executes) and
docs/permissions.md (generated from here).

A docs toolchain reads prose but *runs* its configuration: Sphinx executes ``conf.py`` and the
extensions under ``_ext/``, pytest imports any ``conftest.py`` it finds below the directory it
starts in, MkDocs hooks and plugins are Python named in ``mkdocs.yml``, npm runs the scripts of
``package.json``, Read the Docs runs the commands of ``.readthedocs.yaml`` and installs what
``requirements.txt`` names. A change that claims to be documentation must hold none of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from cursor_agent_action.globs import covers, names

DOC_TYPES: tuple[tuple[str, str], ...] = (
    ("md,markdown", "Markdown"),
    ("mdx", "MDX (Markdown with components)"),
    ("rst", "reStructuredText"),
    ("adoc,asciidoc", "AsciiDoc"),
    ("txt", "plain text"),
)
"""Documentation by extension: ``(extensions, what)``."""
IMAGE_TYPES = "png,jpg,jpeg,gif,svg,webp,avif,ico"
"""Images a page shows, by extension."""

EXECUTED: tuple[tuple[str, str], ...] = (
    ("**/*.{py,pyw,pth}", "Python: `conftest.py` (pytest loads it), Sphinx's `conf.py` and "
                          "extensions, MkDocs hooks, setup scripts; a `.pth` runs at start-up"),
    ("**/_ext/**", "Sphinx extensions, whatever their file names"),
    ("**/*.{js,cjs,mjs,jsx,ts,cts,mts,tsx}", "JavaScript and TypeScript: docs site configs "
                                             "(`docusaurus.config.js`, VitePress), plugins"),
    ("**/{Makefile,GNUmakefile,makefile,*.mk,make.bat}", "make (Sphinx's `make html`)"),
    ("**/{mkdocs,zensical}.{yml,yaml}", "MkDocs configuration: the hooks and plugins it names "
                                        "run"),
    ("**/.readthedocs.{yml,yaml}", "Read the Docs: the build commands it runs"),
    ("**/{package.json,package-lock.json,.npmrc,.yarnrc*,pnpm-*.yaml}",
     "npm, yarn and pnpm: scripts run on install and build, and where packages come from"),
    ("**/*{requirements,constraints}*.{txt,in}", "pip installs what they name (a docs build's "
                                                 "packages; `test-requirements.txt` too)"),
    ("**/{requirements,constraints}/**", "pip requirement files kept in a directory"),
    ("**/test*.txt", "pytest collects `test*.txt` as doctests by default: `>>>` lines run"),
    ("**/{pyproject.toml,setup.cfg,tox.ini,noxfile.py,Pipfile}", "Python builds and test runs: "
                                                                 "build hooks, commands"),
    ("**/{Gemfile,Rakefile,*.rb,_config.yml}", "Ruby: Jekyll plugins and configuration, rake, "
                                               "bundler"),
    ("**/CMakeLists.txt", "CMake runs it"),
    ("**/{Dockerfile,*.dockerfile,Containerfile}", "container builds"),
    ("**/*.{sh,bash,zsh,fish,ps1,psm1,bat,cmd}", "shell scripts"),
)
"""Files usually executed by a build, a test run or a docs toolchain: ``(pattern, why)``."""


def doc_globs(*, images: bool = True) -> tuple[str, ...]:
    """The ``**/*.{...}`` globs of documentation files (and images)."""
    extensions = ",".join(ext for exts, _ in DOC_TYPES for ext in exts.split(","))
    return (f"**/*.{{{extensions}}}", *((f"**/*.{{{IMAGE_TYPES}}}",) if images else ()))


def executed_globs() -> tuple[str, ...]:
    return tuple(pattern for pattern, _ in EXECUTED)


def is_documentation(path: str) -> bool:
    """Whether ``path`` is a documentation file by its extension (images are not)."""
    return names(doc_globs(images=False), path)


def usually_executed(paths: Iterable[str]) -> list[str]:
    """The paths among ``paths`` that a build, a test run or a docs toolchain usually executes
    (or that sit below a directory of such a name)."""
    globs = executed_globs()
    return [path for path in paths if covers(globs, path)]


# A directive that makes a docs build copy another file into the page, by toolchain: reST and
# Sphinx (include, literalinclude, and raw or csv-table with :file:), MyST fences, AsciiDoc,
# the MkDocs snippets extension. Its target is what a build reads, as the builder's user.
# docutils reads directive and option names in any case, takes blanks before "::" and a path
# argument over the more indented lines below, joined (its ``directives.path``).
_INCLUDES = re.compile(
    r"^(?P<indent>[ \t]*)(?:\.\.[ \t]+(?:include|literalinclude)[ \t]*::|:file:)(?P<rst>.*)$"
    r"|^[ \t]*(?:`{3,}|:{3,})[ \t]*\{(?:include|literalinclude)\}[ \t]*(?P<myst>\S.*?)[ \t]*$"
    r"|include::(?P<adoc>[^\[\s]+)\["
    r"|-{1,2}8<-{1,2}[ \t]*[\"'](?P<snippet>[^\"'\n]+)[\"']",
    re.MULTILINE | re.IGNORECASE,
)
MAX_SCANNED_BYTES = 4 << 20
"""A documentation file is searched for include directives up to this size."""


MAX_ARGUMENT_LINES = 64
"""A reST path argument over more lines than this is not followed: it is refused."""


def _argument(text: str, match: re.Match[str]) -> tuple[str | None, str]:
    """A reST path argument or option value as docutils reads it: the rest of the line, then
    each more indented line below up to a blank line or an option, every line stripped and
    joined (None: over :data:`MAX_ARGUMENT_LINES`); and the directive as shown (its lines,
    blanks collapsed). Reads only the lines it takes."""
    lines = [match.group("rst").strip()]
    deeper = len(match.group("indent").expandtabs()) + 1
    start = match.end() + 1
    while start < len(text) and len(lines) <= MAX_ARGUMENT_LINES:
        end = text.find("\n", start)
        line = text[start : len(text) if end < 0 else end]
        body = line.strip()
        if not body or body.startswith(":") or len(line.expandtabs()) - len(
                line.lstrip(" \t").expandtabs()) < deeper:
            break
        lines.append(body)
        start = len(text) if end < 0 else end + 1
    shown = " ".join(" ".join(line.split()) for line in [match.group(0), *lines[1:]])
    return (None if len(lines) > MAX_ARGUMENT_LINES else "".join(lines)), shown


def reads_outside(path: str, text: str) -> list[str]:
    """The include directives of the documentation file ``path`` (repository-relative) whose
    target leaves the repository: an absolute path (Sphinx reads ``/x`` from its source
    directory, docutils and others from ``/``: either way refused), a URL-like or home path,
    ``..`` past the top, or an AsciiDoc attribute (the builder resolves it). Each as
    ``"path: directive target"``. docutils' own ``<name>`` includes are fine."""
    found: list[str] = []
    for match in _INCLUDES.finditer(text):
        if match.group("rst") is not None:
            argument, shown = _argument(text, match)
            if argument is None:
                found.append(f"{path}: {shown[:200]}")
                continue
            target = argument
        else:
            target = next(group for name, group in match.groupdict().items()
                          if group is not None and name != "indent")
            shown = match.group(0).strip()
        depth = 0 if match.group("snippet") is not None else path.count("/")  # from the top
        if target.startswith("<") and target.endswith(">"):
            continue
        parts = target.replace("\\", "/").split("/")
        level, leaves = depth, False
        for part in parts:
            level += -1 if part == ".." else 0 if part in ("", ".") else 1
            leaves = leaves or level < 0
        attribute = match.group("adoc") is not None and "{" in target
        if leaves or attribute or target.startswith(("/", "~", "\\")) \
                or ":" in target.split("/")[0]:
            found.append(f"{path}: {shown[:200]}")
    return found
