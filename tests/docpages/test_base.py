"""Only what the change brings is judged: a construct already in the base version of the page,
with the same text, is the repository's own and passes; its paths are judged every time."""

from __future__ import annotations

from tests.docpages.support import refused

PAGE = """API
===

.. autoclass:: click.Command
   :members:

.. click:example::

    import click

.. jupyter-execute::

    print("hi")

Some prose with a typo: teh end.
"""


def test_a_typo_fix_on_a_page_full_of_its_own_extension_directives_passes() -> None:
    assert refused({"docs/api.rst": PAGE.replace("teh", "the")}, {"docs/api.rst": PAGE}) == []


def test_an_extension_directive_the_change_brings_is_refused_with_its_line() -> None:
    changed = PAGE + "\n.. automodule:: antigravity\n"
    assert refused({"docs/api.rst": changed}, {"docs/api.rst": PAGE}) == [
        "docs/api.rst:17: .. automodule:: antigravity: directive 'automodule' is not on the "
        "inert list (a docs toolchain could act on it)"]


def test_a_changed_option_of_the_pages_own_directive_is_new_text() -> None:
    changed = PAGE.replace(":members:", ":members:\n   :imported-members:")
    (line,) = refused({"docs/api.rst": changed}, {"docs/api.rst": PAGE})
    assert line.startswith("docs/api.rst:4: .. autoclass:: click.Command :members: "
                           ":imported-members:: directive 'autoclass'")


def test_the_same_directive_in_another_page_is_not_this_pages_own() -> None:
    found = refused({"docs/api.rst": PAGE, "docs/new.rst": ".. autoclass:: click.Command\n"
                     "   :members:\n"}, {"docs/api.rst": PAGE})
    assert [line.split(":")[:2] for line in found] == [["docs/new.rst", "1"]]


def test_an_unknown_option_on_an_inert_directive_is_refused() -> None:
    (line,) = refused({"docs/a.rst": ".. note::\n   :evil: yes\n\n   Hi.\n"})
    assert "option :evil: of note is not on the inert list" in line


def test_an_old_include_is_judged_again_when_what_it_names_changes() -> None:
    """The include was there; the change makes the file it names ignored-and-untracked (a
    build may leave a token there): refused although the directive is the page's own."""
    page = ".. literalinclude:: ../notes.txt\n"
    base = {"docs/a.rst": page, "notes.txt": "x\n"}
    new = {"docs/a.rst": page + "\nMore prose.\n"}
    found = refused(new, base, ignore=("notes.txt",))
    assert all(line.startswith("docs/a.rst:1:") for line in found)
    assert any("names no file" in line for line in found)
    assert any("notes.txt is ignored by git" in line for line in found)


def test_jinja_counts_only_where_the_docs_config_names_a_template_plugin() -> None:
    page = "# Hi\n\nRun `${{ github.token }}` here: {{ config.extra }}\n"
    assert refused({"docs/a.md": page, "mkdocs.yml": "site_name: x\n"}) == []
    with_macros = {"docs/a.md": page, "mkdocs.yml": "plugins:\n  - macros\n"}
    found = refused(with_macros, {"mkdocs.yml": "plugins:\n  - macros\n"})
    assert len(found) == 2
    assert all("jinja" in line for line in found)
    assert refused(with_macros, {**with_macros, "docs/a.md": page + "old\n"}) == []


def test_an_exec_fence_is_refused_unless_it_is_the_pages_own() -> None:
    fence = '```python exec="on"\nimport os\n```\n'
    assert refused({"docs/a.md": fence})
    assert refused({"docs/a.md": fence + "More.\n"}, {"docs/a.md": fence}) == []


def test_plain_fences_are_directives_where_the_myst_config_says_so() -> None:
    """``myst_fence_as_directive`` runs ```` ```name ```` as a directive; a fence whose info
    is a pandoc attribute list (``{ .sh .no-copy }``) is code for MyST."""
    page = "# Hi\n\n```literalinclude ../../etc/passwd\n```\n\n``` { .sh .no-copy }\nls\n```\n"
    assert refused({"docs/a.md": page, "docs/conf.py": "x = 1\n"}) == []
    found = refused({"docs/a.md": page, "docs/conf.py": "myst_fence_as_directive = ['x']\n"})
    assert found == ["docs/a.md:3: ```literalinclude ../../etc/passwd: '../../etc/passwd' "
                     "leaves the repository"]


def test_a_changed_body_of_the_pages_own_executing_directive_is_new_code() -> None:
    """``click:example`` and ``jupyter-execute`` run their body in the build: the header the
    same, a body the change writes is refused."""
    changed = PAGE.replace('print("hi")', 'import os; os.system("id")')
    (line,) = refused({"docs/api.rst": changed}, {"docs/api.rst": PAGE})
    assert line.startswith("docs/api.rst:11: .. jupyter-execute::: directive 'jupyter-execute'")
    fence = "# Hi\n\n```{jupyter-execute}\nprint(1)\n```\n\nText.\n"
    assert refused({"docs/a.md": fence.replace("Text", "More text")}, {"docs/a.md": fence}) == []
    (line,) = refused({"docs/a.md": fence.replace("print(1)", "import os")},
                      {"docs/a.md": fence})
    assert line.startswith("docs/a.md:3: ```{jupyter-execute}: directive 'jupyter-execute'")


def test_a_placeholder_in_inline_code_is_no_role() -> None:
    """`cursor/docs/{head_ref}` is code, not the role {head_ref} (MyST reads no role in a
    code span); outside one it is a role, unknown."""
    assert refused({"docs/a.md": "Branch: `cursor/docs/{head_ref}`, ``{x}`y` ``.\n"}) == []
    (line,) = refused({"docs/a.md": "Branch: {head_ref}`main`.\n"})
    assert "role 'head_ref' is not on the inert list" in line


def test_a_new_include_of_an_unchanged_file_judges_that_file_whole() -> None:
    """A test fixture of the repository holds hostile directives; a page that newly includes
    it brings them into the docs build. An include the base already had reads the file as
    before."""
    files = {"tests/fixtures/evil.rst": ".. literalinclude:: /etc/passwd\n",
             "docs/ok.rst": ".. note:: Hi.\n"}
    found = refused({**files, "docs/a.rst": ".. include:: ../tests/fixtures/evil.rst\n"}, files)
    assert any(line.startswith("tests/fixtures/evil.rst:1:") for line in found)
    assert refused({**files, "docs/a.rst": ".. include:: ok.rst\n"}, files) == []
    page = ".. include:: ../tests/fixtures/evil.rst\n"
    old = {**files, "docs/a.rst": page}
    assert refused({**old, "docs/a.rst": page + "\nMore.\n"}, old) == []
