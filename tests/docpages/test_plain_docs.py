"""A plain documentation change passes: prose, headings, lists, code blocks, tables, links and
images of the docs folder, on pages that already hold their project's own extension
directives. Shown on this repository's own docs and on pages written here in the style of a
Sphinx project (click: MyST with ``eval-rst``, autodoc, ``click:example``) and of an MkDocs
project (Material for MkDocs: admonitions, tabs, snippets, annotations, icons). The same
change on the real projects is measured by bench/docpages (bench/README.md)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cursor_agent_action.docpages.judge import markup_of
from cursor_agent_action.docpages.kinds import is_documentation
from tests.docpages.support import judged

ROOT = Path(__file__).resolve().parents[2]
SECTION = {
    "markdown": ("\n\n## A plain section\n\nSome *prose*, a [link](https://example.com), a "
                 "[page](index.md) and `code`.\n\n- one\n- two\n\n```python\nprint('hi')\n"
                 "```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n![an image]({image})\n"),
    "rest": ("\n\nA plain section\n~~~~~~~~~~~~~~~\n\nSome *prose* with a `link "
             "<https://example.com>`_, :ref:`a label <x>` and ``code``.\n\n- one\n- two\n\n"
             ".. code-block:: python\n\n   print('hi')\n\n+---+---+\n| a | b |\n+---+---+\n\n"
             ".. image:: {image}\n\n.. note::\n\n   Mind the gap.\n"),
}


def _tracked() -> dict[str, bytes]:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    return {name: (ROOT / name).read_bytes() for name in names
            if name and (ROOT / name).is_file() and not (ROOT / name).is_symlink()}


def test_a_plain_change_to_every_page_of_this_repositorys_docs_passes() -> None:
    base = _tracked()
    base["docs/img/flow.png"] = b"PNG"
    pages = [p for p in base if is_documentation(p) and p.startswith(("docs/", "README"))]
    assert len(pages) > 10
    new = dict(base)
    for page in pages:
        image = "img/flow.png" if page.startswith("docs/") else "docs/img/flow.png"
        new[page] = base[page] + SECTION["markdown"].format(image=image).encode()
    verdict = judged(new, base)
    assert verdict.refused == []
    assert verdict.code == []


CLICK_STYLE_MD = """# Commands and Groups

```{currentmodule} click
```

The {class}`Group` is a {class}`~click.Command` that holds others; see {ref}`nesting`.

```{eval-rst}
.. click:example::

    @click.group()
    def cli():
        pass

.. click:run::

    invoke(cli, args=["--help"])
```

```{eval-rst}
.. autoclass:: click.Group
   :members:
```

:::{versionchanged} 8.2
Groups are lazy.
:::

::::{tab-set}
:::{tab-item} pip
```console
$ pip install click
```
:::
::::

![logo](_static/click-logo.png)
"""
CLICK_STYLE_RST = """API
===

.. module:: click

.. autofunction:: command

.. autoclass:: Context
   :members:

.. versionadded:: 8.0
   The :attr:`~Context.show_default` flag.

.. literalinclude:: ../examples/repo/repo.py
   :language: python
   :lines: 1-20

See :doc:`quickstart` and :meth:`Context.invoke`.
"""
MATERIAL_STYLE = """# Setting up tags

!!! note "Requires MkDocs 1.5"

    Tags need the [built-in tags plugin][tags].

=== "mkdocs.yml"

    ``` yaml title="mkdocs.yml"
    plugins:
      - tags # (1)!
    ```

    1.  Enable it first.

--8<-- "docs/snippets/requirements.md"

<div class="grid cards" markdown>

-   :material-clock-fast:{ .lg .middle } __Set up in 5 minutes__

    [:octicons-arrow-right-24: Getting started](getting-started.md)

</div>

{ .annotate }

  [tags]: ../plugins/tags.md
  [getting started]: getting-started.md#installation
"""
STYLES = {
    "docs/commands.md": CLICK_STYLE_MD, "docs/api.rst": CLICK_STYLE_RST,
    "docs/setup/tags.md": MATERIAL_STYLE,
}
OTHERS = {
    "docs/_static/click-logo.png": "PNG", "examples/repo/repo.py": "import click\n",
    "docs/quickstart.rst": "Q\n=\n", "docs/snippets/requirements.md": "Needs x.\n",
    "docs/plugins/tags.md": "# Tags\n", "docs/setup/getting-started.md": "# Go\n",
    "docs/img/flow.png": "PNG", "docs/setup/img/flow.png": "PNG", "mkdocs.yml": "site_name: x\n",
}


@pytest.mark.parametrize("page", sorted(STYLES))
def test_a_plain_change_on_a_page_full_of_its_projects_extensions_passes(page: str) -> None:
    base = {**OTHERS, **STYLES}
    markup = markup_of(page)
    changed = STYLES[page].replace("Groups are lazy", "Groups are loaded lazily").replace(
        "Enable it first", "Enable the plugin first") + SECTION[markup].format(image="img/flow.png")
    verdict = judged({**base, page: changed}, base)
    assert verdict.refused == []
    assert verdict.code == []


@pytest.mark.parametrize("page", ["docs/api.rst", "docs/commands.md"])
def test_the_same_pages_written_new_by_the_change_are_refused_for_their_extensions(
        page: str) -> None:
    """Not vacuous: the extension directives pass above only as the page's own (Material's
    syntax, admonitions, tabs, annotations, snippets of the repository, is inert: it passes
    new as well)."""
    refused = judged({**OTHERS, page: STYLES[page]}, OTHERS).refused
    assert any("autoclass" in line for line in refused)
    assert judged({**OTHERS, "docs/setup/tags.md": MATERIAL_STYLE}, OTHERS).refused == []
