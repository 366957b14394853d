"""Each finding of the docs checks' red-team round (issue 45) is refused, by the one judge the
run step and publish share; plain documentation still passes. Every case here passed the
deny-list the judge replaced (``docfiles.reads_outside``)."""

from __future__ import annotations

import pytest

from cursor_agent_action.docpages.judge import MAX_PAGE_BYTES
from cursor_agent_action.docpages.kinds import doc_globs, usually_executed
from tests.docpages.support import judged, refused

REPO = {"README.md": "# r\n", "docs/index.rst": "Index\n=====\n", "docs/part.md": "part\n",
        "docs/part.rst": "part\n", "docs/partials/a.adoc": "a\n", "docs/img/a.png": "PNG",
        "examples/demo.py": "print(1)\n", "docs/data.csv": "a,b\n"}


def _refused(page: str, text: str | bytes, **extra: str | bytes) -> list[str]:
    return refused({**REPO, page: text, **extra}, REPO)


# Finding 1: include forms the deny-list missed (12 leaked).
@pytest.mark.parametrize(("page", "text"), [
    ("docs/a.rst", ".. include:: <../../../../../../proc/self/environ>"),  # <...> joined
    ("docs/a.rst", "- .. literalinclude:: ../../../proc/self/environ"),  # in a list item
    ("docs/a.rst", "+-----+\n| .. literalinclude:: ../../etc/passwd |\n+-----+"),  # a cell
    ("docs/a.rst", ":F: .. literalinclude:: ../../etc/passwd"),  # a field body
    ("docs/a.rst", ".. |x| literalinclude:: ../../etc/passwd"),  # a substitution
    ("docs/a.rst", ".. raw:: html\n   :fi\\le: ../../etc/passwd"),  # an escaped option name
    ("docs/a.rst", ".. inclure:: ../../etc/passwd"),  # translated names (language = "fr")
    ("docs/a.rst", ".. einfügen:: part.rst"),
    ("docs/a.rst", ".. インクルード:: part.rst"),
    ("docs/a.md", "~~~{literalinclude} ../../etc/passwd\n~~~"),  # a tilde fence
    ("docs/a.md", "> ```{literalinclude} ../../etc/passwd\n> ```"),  # inside a quote
    ("docs/a.md", "- ```{include} ../../etc/passwd\n  ```"),  # inside a list item
    ("docs/a.md", "```{csv-table}\n---\nfile: ../../etc/passwd\n---\n```"),  # a YAML block
    ("docs/a.adoc", "include::a b/../../../etc/passwd[]"),  # a blank in the target
    ("docs/a.md", "--8<-- \"a\"/../../../etc/passwd\""),  # a quote inside the path
    ("docs/a.md", "--8<--\ndocs/part.md\n--8<-- \n../etc/passwd\n--8<--"),  # closing + blank
])
def test_the_include_forms_that_leaked_are_refused(page: str, text: str) -> None:
    found = _refused(page, text + "\n")
    assert found, text
    assert all(line.startswith(f"{page}:") for line in found)


def test_an_include_that_reads_a_changed_file_as_utf16_is_refused() -> None:
    """``part.txt`` holds the real directive in UTF-16: the option is refused, and so is the
    file itself when it is read (no byte order mark: NUL bytes)."""
    hidden = ".. literalinclude:: ../../etc/passwd\n".encode("utf-16-le")
    found = _refused("docs/a.rst", ".. include:: part.txt\n   :encoding: utf-16\n",
                     **{"docs/part.txt": hidden})
    assert any("not UTF-8" in line and line.startswith("docs/a.rst:1:") for line in found)
    assert any(line.startswith("docs/part.txt:1: holds a NUL byte") for line in found)


def test_a_directive_past_the_first_4_mib_is_not_missed() -> None:
    text = "x" * MAX_PAGE_BYTES + "\n.. literalinclude:: ../../etc/passwd\n"
    assert _refused("docs/a.rst", text) == ["docs/a.rst: over 4 MiB: too large to judge"]


# Finding 2: reads the deny-list did not look at.
@pytest.mark.parametrize(("page", "text"), [
    ("docs/a.rst", ".. image:: ../../etc/passwd"),
    ("docs/a.rst", ".. figure:: /proc/self/environ"),
    ("docs/a.md", "![x](../../../etc/passwd)"),
    ("docs/a.md", '<img src="../../etc/passwd">'),
    ("docs/a.md", '<img src="&#46;&#46;/&#46;&#46;/etc/passwd">'),  # as MyST decodes it
    ("docs/a.md", "![x](\\.\\./\\.\\./etc/passwd)"),  # CommonMark's escapes
    ("docs/a.rst", "Get :download:`it <../../etc/passwd>`."),
    ("docs/a.md", "Get {download}`it <../../etc/passwd>`."),
    ("docs/a.md", '<b title="`">{download}`../../etc/passwd`'),  # the tag outranks the span
    ("docs/a.md", "\\` {download}`../../etc/passwd` `"),  # an escaped backtick opens none
    ("docs/a.rst", ".. literalinclude:: ../examples/demo.py\n   :diff: ../../etc/passwd"),
    ("docs/a.adoc", ":stylesheet: ../../etc/passwd"),
    ("docs/a.adoc", ":data-uri:\n\nimage::a.png[]"),
    ("docs/a.adoc", "image::../../../etc/passwd[]"),
])
def test_reads_the_deny_list_never_looked_at_are_refused(page: str, text: str) -> None:
    assert _refused(page, text + "\n")


# Finding 3: .git and ignored files.
@pytest.mark.parametrize("text", [
    ".. literalinclude:: ../.git/config",
    ".. literalinclude:: ../.GIT/config",
    ".. literalinclude:: sub/../../.git/config",
    ".. image:: ../.git/config",
    ".. literalinclude:: ../token.txt",  # ignored: a file CI may leave there
    ".. literalinclude:: ../missing.txt",  # not tracked: whatever is there at build time
])
def test_includes_into_git_or_ignored_or_untracked_files_are_refused(text: str) -> None:
    found = refused({**REPO, "docs/a.rst": text + "\n"}, REPO, ignore=("token.txt",))
    assert found
    assert all(line.startswith("docs/a.rst:1:") for line in found)


def test_a_path_through_a_link_is_refused_even_when_the_link_is_old() -> None:
    found = refused({**REPO, "docs/a.rst": ".. literalinclude:: out/../part.rst\n"}, REPO,
                    links={"docs/out": "/etc"})
    assert found == ["docs/a.rst:1: .. literalinclude:: out/../part.rst: 'out/../part.rst' "
                     "goes through the symbolic link docs/out"]


# Finding 4: pages that are code.
@pytest.mark.parametrize(("text", "line"), [
    ("---\nformat: mdx\n---\n# Hi\n", 1),
    ("---\ntitle: x\nformat: 'MDX'\n---\n# Hi\n", 1),
    ("# Hi\n\nexport const run = require('child_process')\n", 3),
    ("import Tabs from '@theme/Tabs'\n\n# Hi\n", 1),
])
def test_markdown_that_docusaurus_compiles_as_mdx_is_code(text: str, line: int) -> None:
    verdict = judged({**REPO, "docs/a.md": text}, REPO)
    assert [entry.split(":")[:2] for entry in verdict.code] == [["docs/a.md", str(line)]]


def test_import_lines_inside_code_fences_are_prose() -> None:
    text = "# JS\n\n```js\nimport x from 'y'\nexport default x\n```\n\n~~~\nimport z\n~~~\n"
    assert judged({**REPO, "docs/a.md": text}, REPO).code == []


def test_the_docs_preset_writes_no_mdx() -> None:
    assert "mdx" not in "".join(doc_globs())
    assert usually_executed(["docs/intro.mdx"]) == ["docs/intro.mdx"]


# Finding 5: the executed list misses common build files.
@pytest.mark.parametrize("path", [
    "build.rs", "crates/x/build.rs", "Cargo.toml", "app/build.gradle", "settings.gradle.kts",
    "gradlew", "pom.xml", "src/App.csproj", "Directory.Build.props", ".pre-commit-config.yaml",
    "pytest.ini", ".envrc", "Justfile", "BUILD.bazel", "meson.build", "overrides/main.html",
    "docs/overrides/partials/footer.html", "docs/notebooks/intro.ipynb",
])
def test_common_build_files_are_on_the_executed_list(path: str) -> None:
    assert usually_executed([path]) == [path]


# Unicode, byte order marks.
@pytest.mark.parametrize(("data", "why"), [
    (b"\xff\xfe" + ".. include:: x\n".encode("utf-16-le"), "UTF-16 byte order mark"),
    (b"\xfe\xff" + ".. include:: x\n".encode("utf-16-be"), "UTF-16 byte order mark"),
    (b"\xff\xfe\x00\x00" + "x".encode("utf-32-le"), "UTF-32 byte order mark"),
    (b"ok\n\xc0\xaf\n", "not valid UTF-8"),
])
def test_pages_that_are_not_utf8_are_refused(data: bytes, why: str) -> None:
    (line,) = _refused("docs/a.rst", data)
    assert line.startswith("docs/a.rst:")
    assert why in line


# What the deny-list refused stays refused (its own tests, ported).
@pytest.mark.parametrize(("page", "text"), [
    ("docs/a.rst", ".. include:: /proc/self/environ"),
    ("docs/a.rst", ".. literalinclude:: ../../../home/runner/.bashrc"),
    ("docs/a.rst", ".. raw:: html\n   :file: /etc/passwd"),
    ("docs/a.md", "```{include} ../../x\n```"),
    ("docs/a.adoc", "include::/etc/hosts[]"),
    ("docs/a.md", '--8<-- "../secret"'),
    ("docs/a.rst", ".. Include:: /proc/self/environ"),
    ("docs/a.rst", "..  LITERALINCLUDE:: /proc/self/environ"),
    ("docs/a.rst", ".. include ::   /proc/self/environ"),
    ("docs/a.rst", ".. include::\n   /proc/self/environ"),
    ("docs/a.rst", ".. include:: ../\n   ../../home/runner/.bashrc"),
    ("docs/a.rst", ".. raw:: html\n   :FILE: /etc/passwd"),
    ("docs/a.rst", ".. raw:: html\n   :file: ../\n      ../../etc/passwd"),
    ("docs/a.adoc", "include::{base}/passwd[]"),
    ("docs/a.md", '---8<--- "/etc/passwd"'),
    ("docs/a.md", "--8<--\ndocs/part.md\n/etc/passwd\n--8<--"),
    ("docs/a.md", "-8<-\n../../home/runner/.bashrc"),
])
def test_what_the_deny_list_refused_stays_refused(page: str, text: str) -> None:
    assert _refused(page, text + "\n")


@pytest.mark.parametrize(("page", "text"), [
    ("docs/a.md", "--8<--\ndocs/part.md\n--8<--\nSee: the text after a block is no file name"),
    ("docs/a.rst", ".. include:: ../README.md"),
    ("docs/a.rst", ".. include:: part.rst\n   :literal:"),
    ("docs/a.rst", "   .. include:: part.rst\n   Note: text after it, not its argument"),
    ("docs/a.rst", ".. include:: <isonum.txt>"),
    ("docs/a.adoc", "include::partials/a.adoc[]"),
    ("docs/a.md", '--8<-- "docs/part.md"'),
    ("docs/a.rst", ".. literalinclude:: ../examples/demo.py\n   :language: python"),
    ("docs/a.rst", ".. image:: /img/a.png"),  # Sphinx: from the source directory
    ("docs/a.rst", ".. csv-table:: Data\n   :file: data.csv\n   :header-rows: 1"),
])
def test_includes_of_the_repositorys_own_files_pass(page: str, text: str) -> None:
    assert _refused(page, text + "\n") == []


def test_a_parsed_include_of_a_changed_file_judges_that_file_in_the_includers_markup() -> None:
    """``part.inc`` is no documentation file by its name, but the page reads it as reST."""
    found = _refused("docs/a.rst", ".. include:: part.inc\n",
                     **{"docs/part.inc": ".. automodule:: os\n"})
    assert found == ["docs/part.inc:1: .. automodule:: os: directive 'automodule' is not on "
                     "the inert list (a docs toolchain could act on it)"]


def test_a_page_may_show_the_repositorys_code_but_not_a_build_file_the_change_brings() -> None:
    page = ".. literalinclude:: ../examples/demo.py\n"
    assert _refused("docs/a.rst", page) == []
    found = _refused("docs/a.rst", page, **{"examples/demo.py": "import os\n"})
    assert found == ["docs/a.rst:1: .. literalinclude:: ../examples/demo.py: examples/demo.py "
                     "is a file builds execute (the executed list)"]
