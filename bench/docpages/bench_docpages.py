"""The page judge on real documentation: a plain change to every page of a repository's docs.

    .venv/bin/python bench/docpages/bench_docpages.py <repository or bare git dir>... [--docs docs]

For every documentation page under ``--docs`` at HEAD, a plain change is made in memory (a
word in the second half of the page edited, and a section appended with prose, a link, a list,
a code block, a table and an image of the docs folder) and judged against HEAD, as the run
step and publish judge it; the page's own constructs (its extension directives) are in the
base. Prints, per repository, the pages judged, the pages refused (each refusal), the
constructs that passed only as the page's own, and the time. Nothing is written to the
repository: the tree is read with git."""

from __future__ import annotations

import argparse
import os
import posixpath
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection
from pathlib import Path

from cursor_agent_action.docpages import inert, judge
from cursor_agent_action.docpages.kinds import IMAGE_TYPES, is_documentation
from cursor_agent_action.docpages.view import TreeView, parse_tree

IMAGES = tuple(f".{ext}" for ext in IMAGE_TYPES.split(","))


def _git(repo: str, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", f"--git-dir={repo}", *args], input=data, check=True,
                          capture_output=True).stdout


def _git_dir(path: str) -> str:
    inner = Path(path, ".git")
    return str(inner) if inner.exists() else path


def _ignored(repo: str, entries: dict[str, tuple[str, str]]
             ) -> Callable[[Collection[str]], set[str]]:
    """The ignore rules of the tree's .gitignore files, checked as changeset.ignored_in does."""
    rules = tempfile.mkdtemp(prefix="caa-bench-ignore-")
    for path, (_, oid) in entries.items():
        if posixpath.basename(path) == ".gitignore":
            target = Path(rules, path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(_git(repo, "cat-file", "blob", oid))
    subprocess.run(["git", "init", "-q", rules], check=True)

    def ignored(paths: Collection[str]) -> set[str]:
        done = subprocess.run(["git", "-C", rules, "check-ignore", "--no-index", "-z",
                               "--stdin"], input="\0".join(paths).encode(),
                              capture_output=True, check=False)
        return {p for p in done.stdout.decode().split("\0") if p}
    return ignored


def _plain(page: str, images: list[str]) -> str:
    """A plain section in the page's markup, showing an image of the docs folder."""
    here = posixpath.dirname(page)
    image = posixpath.relpath(images[0], here) if images else ""
    if page.endswith((".md", ".markdown")):
        return ("\n\n## A plain section\n\nSome *prose* with a [link](https://example.com) and "
                "`code`.\n\n- one\n- two\n\n```python\nprint('hi')\n```\n\n| a | b |\n"
                "|---|---|\n| 1 | 2 |\n" + (f"\n![an image]({image})\n" if image else ""))
    if page.endswith((".adoc", ".asciidoc")):
        return ("\n\n== A plain section\n\nSome *prose* with a https://example.com[link].\n\n"
                "* one\n* two\n\n[source,python]\n----\nprint('hi')\n----\n"
                + (f"\nimage::{image}[an image]\n" if image else ""))
    return ("\n\nA plain section\n~~~~~~~~~~~~~~~\n\nSome *prose* with a `link "
            "<https://example.com>`_ and ``code``.\n\n- one\n- two\n\n.. code-block:: python\n\n"
            "   print('hi')\n\n+---+---+\n| a | b |\n+---+---+\n"
            + (f"\n.. image:: {image}\n" if image else ""))


def _typo(text: str) -> str:
    """``text`` with a word of its second half changed (" the " to " this "): an edit in
    the middle of the page, wherever it falls (inside an extension directive's body too)."""
    at = text.find(" the ", len(text) // 2)
    return text if at < 0 else text[:at] + " this " + text[at + 5:]


def measure(path: str, docs: str) -> None:
    repo = _git_dir(path)
    entries = parse_tree(_git(repo, "ls-tree", "-r", "-z", "--full-tree", "HEAD"))
    pages = sorted(p for p in entries if p.startswith(f"{docs}/") and is_documentation(p))
    images = sorted(p for p in entries if p.startswith(f"{docs}/") and p.endswith(IMAGES))
    blobs = {p: _git(repo, "cat-file", "blob", entries[p][1]) for p in entries
             if p in pages or posixpath.basename(p) in judge.CONFIGS}

    def base(name: str) -> bytes | None:
        if name in blobs:
            return blobs[name]
        mode, oid = entries.get(name, ("", ""))
        return _git(repo, "cat-file", "blob", oid) if mode.startswith("100") else None

    new = {p: (_typo(blobs[p].decode("utf-8", "replace")) + _plain(p, images)).encode()
           for p in pages}
    view = TreeView({p: m for p, (m, _) in entries.items()}, frozenset(pages),
                    lambda name: new.get(name) or base(name), base, _ignored(repo, entries))
    started = time.perf_counter()
    verdict = judge.judge(view, pages)
    took = time.perf_counter() - started
    own = _own(view, pages)
    refused_pages = sorted({line.split(":", 1)[0] for line in verdict.refused})
    print(f"{path} ({_git(repo, 'rev-parse', '--short', 'HEAD').decode().strip()}): "
          f"{len(pages)} pages, {sum(len(new[p]) for p in pages) >> 10} KiB judged in "
          f"{took:.2f} s; refused {len(refused_pages)}; code pages {len(verdict.code)}; "
          f"constructs passed as the page's own: {own}")
    for line in verdict.refused + verdict.code:
        print(f"  {line[:200]}")


def _own(view: TreeView, pages: list[str]) -> str:
    """How many constructs of the base pages are not on the inert list, by name."""
    counts: dict[str, int] = {}
    known = {**inert.names(inert.DIRECTIVES), **inert.names(inert.ROLES)}
    for page in pages:
        text = (view.read_base(page) or b"").decode("utf-8", "replace")
        for construct in judge.constructs(text, judge.markup_of(page), False):
            if construct.kind in ("directive", "role") and construct.name not in known:
                counts[construct.name] = counts.get(construct.name, 0) + 1
    top = sorted(counts.items(), key=lambda item: -item[1])[:8]
    return f"{sum(counts.values())} ({', '.join(f'{n} x{c}' for n, c in top)})"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repositories", nargs="+")
    parser.add_argument("--docs", default="docs")
    args = parser.parse_args(argv)
    for path in args.repositories:
        measure(os.path.abspath(path), args.docs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
