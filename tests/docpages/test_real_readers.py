"""Differential tests against the real readers: Sphinx with MyST, MkDocs with pymdownx
snippets, Asciidoctor (the JS build) and ``@mdx-js/mdx``. Hypothesis draws pages of attack
forms (directive, role, option, fence and container variants) over paths to planted files;
the page judge decides; the real build then runs on the pages the judge passed. Whatever the
judge passes, the build's output holds no byte of a file planted outside the repository, in
``.git/config``, in an ignored file or in the build's own environment, and no planted code
runs. A control build of every page, unjudged, shows the attacks are real (it leaks).

Each reader builds many pages at once (a handful of builds in all). A reader that is not
installed skips the test with a reason, except in CI (``CI=true``), where ``.ci/run``
installs them and a missing one fails."""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from cursor_agent_action.docpages.judge import Judgement, judge
from tests.docpages.support import view

NODE_DIR = Path(__file__).parent / "node"
BUILD_TIMEOUT_S = 180
PAGES_PER_BUILD = 40
SETTINGS = settings(max_examples=2, deadline=None, database=None,  # a build is slow: no
                    phases=(Phase.explicit, Phase.generate),  # shrinking, the message names

                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


def _need(what: str, found: bool) -> None:
    """Skip (fail in CI, where .ci/run installs every reader) when ``what`` is missing."""
    if found:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is not installed: .ci/run installs it")
    pytest.skip(f"{what} is not installed (pip install -e '.[test]'; npm ci --prefix "
                f"{NODE_DIR} --ignore-scripts)")


def _has_module(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True


def _node_ready(package: str) -> bool:
    return shutil.which("node") is not None and (NODE_DIR / "node_modules" / package).is_dir()


@dataclass
class Plant:
    """A repository beside planted secrets: ``canaries`` are the bytes no output may hold."""

    repo: Path
    outside: Path
    marker: Path
    canaries: dict[str, bytes] = field(repr=False)
    files: dict[str, bytes] = field(repr=False)

    @property
    def env(self) -> dict[str, str]:
        """The builds' environment: the canary is in their /proc/self/environ."""
        return {**os.environ, "CAA_ENVIRON_CANARY": self.canaries["environ"].decode()}

    def forms(self) -> dict[str, list[bytes]]:
        """Each canary as a build may carry it: plain, and base64 at any alignment (data-uri
        embeds a whole file)."""
        found: dict[str, list[bytes]] = {}
        for name, canary in self.canaries.items():
            forms = [canary]
            for shift in range(3):
                data = b"\0" * shift + canary
                encoded = base64.b64encode(data)
                start, end = -(-shift // 3) * 4 + (4 if shift else 0), len(data) // 3 * 4
                if end - start >= 8:
                    forms.append(encoded[start:end])
            found[name] = forms
        return found


@pytest.fixture
def plant(tmp_path: Path) -> Plant:
    tag = secrets.token_hex(8)
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    (repo / "docs" / "img").mkdir(parents=True)
    (repo / ".git").mkdir()
    outside.mkdir()
    canaries = {"outside": f"CAAOUTSIDE{tag}".encode(), "git": f"CAAGITCONFIG{tag}".encode(),
                "ignored": f"CAAIGNORED{tag}".encode(), "environ": f"CAAENVIRON{tag}".encode()}
    (outside / "secret.txt").write_bytes(canaries["outside"] + b"\n")
    (repo / ".git" / "config").write_bytes(b"[http]\n\textraheader = " + canaries["git"] + b"\n")
    (repo / "token.txt").write_bytes(canaries["ignored"] + b"\n")
    marker = tmp_path / "code-ran"
    files = {
        ".gitignore": b"token.txt\nsite/\n_build/\n",
        "README.md": b"# Readme\n\nPlain words.\n",
        "evilmod.py": f"open({str(marker)!r}, 'w').write('ran')\n".encode(),
        "docs/part.rst": b"A part.\n", "docs/part.md": b"A part.\n",
        "docs/part.adoc": b"A part.\n",
        "docs/img/a.png": b"an image, UTF-8 so that a page may include it as text",
    }
    for path, data in files.items():
        (repo / path).write_bytes(data)
    (repo / "out").symlink_to(outside)  # the repository's own link (MkDocs copies docs/)
    return Plant(repo, outside, marker, canaries, files)


PLAIN = {  # pages every build holds, which the judge must pass: the builds prove something
    "docs/plain.rst": ("Plain\n=====\n\n- a *list*\n\n.. note::\n\n   Hi.\n\n"
                       ".. literalinclude:: part.rst\n\n.. image:: img/a.png\n\n"
                       "See :ref:`genindex` and :download:`this <img/a.png>`.\n"),
    "docs/plain.md": ("# Plain\n\n```{note}\nHi.\n```\n\n![a](img/a.png)\n\n"
                      "```{literalinclude} part.md\n```\n"),
    "docs/plain.adoc": "= Plain\n\ninclude::part.adoc[]\n\nimage::img/a.png[]\n",
}


def _passed(plant: Plant, pages: dict[str, str], setup: dict[str, str]) -> tuple[
        dict[str, str], Judgement]:
    """The pages the judge passes, as a change to the planted repository (whose ``setup``
    files, the docs configuration, are its own: in the base)."""
    base = {**plant.files, **{k: v.encode() for k, v in setup.items()}}
    new = {**base, **{k: v.encode() for k, v in pages.items()}}
    verdict = judge(view(new, base, links={"out": str(plant.outside)},
                         ignore=("token.txt",)), sorted(pages))
    flagged = {line.split(":", 1)[0] for line in [*verdict.refused, *verdict.code]}
    return {page: text for page, text in pages.items() if page not in flagged}, verdict


def _build(plant: Plant, pages: dict[str, str], setup: dict[str, str],
           run: Callable[[Path], Path]) -> dict[str, list[str]]:
    """Write ``pages`` into a fresh copy of the repository, build it, and say which canaries
    the output holds, by output file (and ``code`` when the planted code ran)."""
    repo = plant.repo.parent / f"build-{secrets.token_hex(4)}"
    shutil.copytree(plant.repo, repo, symlinks=True)
    for name, text in {**setup, **pages}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    plant.marker.unlink(missing_ok=True)
    output = run(repo)
    found: dict[str, list[str]] = {}
    forms = plant.forms()
    for path in sorted(output.rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            for name, variants in forms.items():
                if any(form in data for form in variants):
                    found.setdefault(name, []).append(str(path.relative_to(output)))
    if plant.marker.exists():
        found["code"] = ["the planted module ran"]
    if "docs/plain.md" in pages or "docs/plain.adoc" in pages:  # the build did build
        built = [path for path in output.rglob("*") if path.is_file() and "plain" in str(
            path.relative_to(output))]
        log = repo / "build.log"
        said = log.read_text().splitlines() if log.exists() else []
        assert any(b"A part." in path.read_bytes() for path in built), [
            "nothing was built", *[line for line in said if "rror" in line or "xception" in line]]
    return found


def _culprits(leaked: dict[str, list[str]], passed: dict[str, str]) -> dict[str, object]:
    """What leaked where, with the passed pages whose names the output files carry."""
    stems = {Path(where).name.split(".")[0] for places in leaked.values() for where in places}
    return {"leaked": {name: places[:5] for name, places in leaked.items()},
            "pages": {page: text for page, text in passed.items() if Path(page).stem in stems}}


# The paths a page may name, as written from docs/ (the page's directory).
def _paths(plant: Plant) -> list[str]:
    return [str(plant.outside / "secret.txt"), "../../outside/secret.txt", "../.git/config",
            "../.GIT/config", "/proc/self/environ", "../token.txt", "../out/secret.txt",
            "../out/../repo/token.txt", "<" + "../" * 14 + "proc/self/environ>",
            "../" * 14 + "proc/self/environ", "part.rst", "../README.md", "img/a.png"]


REST_FORMS: tuple[Callable[[str], str], ...] = (
    lambda p: f".. include:: {p}\n   :literal:\n",
    lambda p: f".. literalinclude:: {p}\n",
    lambda p: f"..  LiteralInclude ::  {p}\n",
    lambda p: f".. inclure:: {p}\n   :literal:\n",
    lambda p: f"- .. literalinclude:: {p}\n",
    lambda p: f":F: .. literalinclude:: {p}\n",
    lambda p: f".. |s| image:: {p}\n\n|s|\n",
    lambda p: f".. image:: {p}\n",
    lambda p: f".. figure:: {p}\n\n   Caption.\n",
    lambda p: f".. raw:: html\n   :fi\\le: {p}\n",
    lambda p: f".. csv-table:: t\n   :file: {p}\n",
    lambda p: f".. literalinclude:: part.rst\n   :diff: {p}\n",
    lambda p: f"Get :download:`it <{p}>`.\n",
    lambda p: f".. include:: {p}\n   :encoding: latin-1\n   :literal:\n",
    lambda p: f".. include::\n   {p}\n   :literal:\n",
    lambda p: f".. note::\n\n   .. literalinclude:: {p}\n",
)
MYST_FORMS: tuple[Callable[[str], str], ...] = (
    lambda p: f"```{{literalinclude}} {p}\n```\n",
    lambda p: f"~~~{{literalinclude}} {p}\n~~~\n",
    lambda p: f":::{{literalinclude}} {p}\n:::\n",
    lambda p: f"> ```{{literalinclude}} {p}\n> ```\n",
    lambda p: f"- ```{{literalinclude}} {p}\n  ```\n",
    lambda p: f"```{{csv-table}}\n---\nfile: {p}\n---\n```\n",
    lambda p: f"```{{raw}} html\n:file: {p}\n```\n",
    lambda p: f"![x]({p})\n",
    lambda p: f'<img src="{p}">\n',
    lambda p: f'<img src="{p.replace(".", "&#46;")}">\n',
    lambda p: f"![x]({p.replace('.', chr(92) + '.')})\n",
    lambda p: f"{{download}}`it <{p}>`\n",
    lambda p: f"[x]({p})\n",
    lambda p: f"```{{eval-rst}}\n.. literalinclude:: {p}\n```\n",
    lambda p: f"```{{include}} {p}\n:literal:\n```\n",
)
WRAPS: tuple[Callable[[str], str], ...] = (
    lambda text: text,
    lambda text: "".join(f"   {line}" if line.strip() else line
                         for line in text.splitlines(keepends=True)),
)


@st.composite
def _sphinx_pages(draw: st.DrawFn, paths: list[str]) -> dict[str, str]:
    pages: dict[str, str] = {}
    for number in range(PAGES_PER_BUILD):
        path = draw(st.sampled_from(paths))
        if draw(st.booleans()):
            form, wrap = draw(st.sampled_from(REST_FORMS)), draw(st.sampled_from(WRAPS))
            pages[f"docs/p{number}.rst"] = f"Page {number}\n=======\n\n" + wrap(form(path))
        else:
            form = draw(st.sampled_from(MYST_FORMS))
            pages[f"docs/p{number}.md"] = f"# Page {number}\n\n" + form(path)
    return pages


SPHINX_SETUP = {
    "docs/conf.py": ("import os, sys\nsys.path.insert(0, os.path.abspath('..'))\n"
                     "extensions = ['myst_parser', 'sphinx.ext.autodoc', 'sphinx.ext.ifconfig']\n"
                     "myst_enable_extensions = ['colon_fence', 'html_image']\n"
                     "source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}\n"
                     "language = 'fr'\nexclude_patterns = ['_build', 'out']\n"),
    "docs/index.rst": "Index\n=====\n\n.. toctree::\n   :glob:\n\n   p*\n",
}


def _sphinx(plant: Plant) -> Callable[[Path], Path]:
    def run(repo: Path) -> Path:
        out = repo / "_build"
        done = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E",
                               str(repo / "docs"), str(out)], cwd=repo, env=plant.env,
                              capture_output=True, timeout=BUILD_TIMEOUT_S, check=False)
        (repo / "build.log").write_bytes(done.stdout + done.stderr)
        return out
    return run


@SETTINGS
@given(data=st.data())
def test_sphinx_with_myst_builds_nothing_planted_from_what_the_judge_passes(
        plant: Plant, data: st.DataObject) -> None:
    _need("Sphinx with MyST", _has_module("sphinx") and _has_module("myst_parser"))
    pages = {**data.draw(_sphinx_pages(_paths(plant))), "docs/plain.rst": PLAIN["docs/plain.rst"],
             "docs/plain.md": PLAIN["docs/plain.md"]}
    passed, verdict = _passed(plant, pages, SPHINX_SETUP)
    assert {"docs/plain.rst", "docs/plain.md"} <= set(passed), verdict
    leaked = _build(plant, passed, SPHINX_SETUP, _sphinx(plant))
    assert leaked == {}, _culprits(leaked, passed)


def test_sphinx_control_build_of_the_attack_pages_leaks(plant: Plant) -> None:
    """Without the judge the same forms leak every planted file: the attacks are real."""
    _need("Sphinx with MyST", _has_module("sphinx") and _has_module("myst_parser"))
    pages = {"docs/p0.rst": "P\n=\n\n.. literalinclude:: ../../outside/secret.txt\n",
             "docs/p1.rst": "P\n=\n\n- .. literalinclude:: ../.git/config\n",
             "docs/p2.md": "# P\n\n~~~{literalinclude} ../token.txt\n~~~\n",
             "docs/p3.rst": "P\n=\n\n.. inclure:: /proc/self/environ\n   :literal:\n",
             "docs/p4.rst": "P\n=\n\n.. automodule:: evilmod\n"}
    leaked = _build(plant, pages, SPHINX_SETUP, _sphinx(plant))
    assert set(leaked) == {"outside", "git", "ignored", "environ", "code"}, leaked
    passed, verdict = _passed(plant, pages, SPHINX_SETUP)
    assert passed == {}, verdict


SNIPPET_FORMS: tuple[Callable[[str], str], ...] = (
    lambda p: f'--8<-- "{p}"\n',
    lambda p: f"---8<--- '{p}'\n",
    lambda p: f"--8<--\n{p}\n--8<--\n",
    lambda p: f"--8<--\ndocs/part.md\n--8<-- \n{p}\n--8<--\n",
    lambda p: f'  --8<-- "{p}"\n',
    lambda p: f'- item\n\n    --8<-- "{p}"\n',
    lambda p: f"![x]({p})\n",
)
MKDOCS_SETUP = {
    "mkdocs.yml": ("site_name: t\ndocs_dir: docs\nmarkdown_extensions:\n"
                   "  - pymdownx.snippets:\n      base_path: ['.']\n"
                   "      restrict_base_path: false\n      check_paths: false\n"),
    "docs/index.md": "# Index\n",
}


@SETTINGS
@given(data=st.data())
def test_mkdocs_with_snippets_builds_nothing_planted_from_what_the_judge_passes(
        plant: Plant, data: st.DataObject) -> None:
    _need("MkDocs with pymdownx", _has_module("mkdocs") and _has_module("pymdownx"))
    # Snippets read from the base path (the repository's top), pages' images from docs/.
    paths = [str(plant.outside / "secret.txt"), "../outside/secret.txt", ".git/config",
             "/proc/self/environ", "token.txt", "out/secret.txt", "docs/part.md",
             "README.md", "../" * 14 + "proc/self/environ", "out/../repo/token.txt"]
    pages = {f"docs/p{n}.md": f"# Page {n}\n\n" + data.draw(st.sampled_from(SNIPPET_FORMS))(
        data.draw(st.sampled_from(paths))) for n in range(PAGES_PER_BUILD)}

    def run(repo: Path) -> Path:
        subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-d", "site"], cwd=repo,
                       env=plant.env, capture_output=True, timeout=BUILD_TIMEOUT_S, check=False)
        return repo / "site"

    pages["docs/plain.md"] = "# Plain\n\n--8<-- \"docs/part.md\"\n\n![a](img/a.png)\n"
    passed, verdict = _passed(plant, pages, MKDOCS_SETUP)
    assert "docs/plain.md" in passed, verdict
    leaked = _build(plant, passed, MKDOCS_SETUP, run)
    assert leaked == {}, _culprits(leaked, passed)
    control = _build(plant, {"docs/c.md": '--8<-- "../outside/secret.txt"\n\n'
                                          '--8<-- ".git/config"\n'}, MKDOCS_SETUP, run)
    assert {"outside", "git"} <= set(control), control


ADOC_FORMS: tuple[Callable[[str], str], ...] = (
    lambda p: f"include::{p}[]\n",
    lambda p: f"include::part b/../{p}[]\n",
    lambda p: f":data-uri:\n\nimage::{p}[]\n",
    lambda p: f"image::{p}[]\n",
    lambda p: f":stylesheet: {p}\n\ntext\n",
    lambda p: f"include::{p}[encoding=utf-16]\n",
    lambda p: f"* item\n+\ninclude::{p}[]\n",
)


@SETTINGS
@given(data=st.data())
def test_asciidoctor_builds_nothing_planted_from_what_the_judge_passes(
        plant: Plant, data: st.DataObject) -> None:
    _need("Asciidoctor (npm asciidoctor)", _node_ready("asciidoctor"))
    paths = [str(plant.outside / "secret.txt"), "../../outside/secret.txt", "../.git/config",
             "/proc/self/environ", "../token.txt", "../out/secret.txt", "part.adoc",
             "img/a.png", "../" * 14 + "proc/self/environ"]
    pages = {f"docs/p{n}.adoc": f"= Page {n}\n" + data.draw(st.sampled_from(ADOC_FORMS))(
        data.draw(st.sampled_from(paths))) for n in range(PAGES_PER_BUILD)}

    def run(repo: Path) -> Path:
        out = repo / "_build"
        out.mkdir()
        listed = sorted(str(path) for path in (repo / "docs").glob("p*.adoc"))
        subprocess.run(["node", str(NODE_DIR / "adoc.mjs"), str(out), *listed], cwd=repo,
                       env=plant.env, capture_output=True, timeout=BUILD_TIMEOUT_S, check=True)
        return out

    pages["docs/plain.adoc"] = PLAIN["docs/plain.adoc"]
    passed, verdict = _passed(plant, pages, {})
    assert "docs/plain.adoc" in passed, verdict
    leaked = _build(plant, passed, {}, run)
    assert leaked == {}, _culprits(leaked, passed)
    control = _build(plant, {"docs/pc.adoc": "= C\n:data-uri:\n\ninclude::a b/../../../"
                                             "outside/secret.txt[]\n\nimage::../.git/config[]\n"},
                     {}, run)
    assert {"outside", "git"} <= set(control), control


ESM = ("export const x = (globalThis.caaRan = 1)",
       "import 'data:text/javascript,globalThis.caaRan=1'",
       "export {default} from 'data:text/javascript,globalThis.caaRan=1;export default 1'")
ESM_WRAPS: tuple[Callable[[str], str], ...] = (
    lambda line: f"{line}\n",
    lambda line: f"```js\n{line}\n```\n",
    lambda line: f"~~~~\n{line}\n~~~~\n",
    lambda line: f"````md\n```\n{line}\n```\n````\n",
    lambda line: f"    {line}\n",
    lambda line: f"   {line}\n",
    lambda line: f"> {line}\n",
    lambda line: f"- {line}\n",
    lambda line: f"\t{line}\n",
    lambda line: f"Text\n{line}\n",
    lambda line: f"## Heading\n{line}\n",
    lambda line: f"1. item\n{line}\n",
    lambda line: f"Text\n\n{line}\n",
    lambda line: f"---\n{line}\n",
    lambda line: f"<div>\n\n{line}\n\n</div>\n",
    lambda line: f"```\n{line}\n",
    lambda line: f"  ```\n{line}\n  ```\n",
    lambda line: f"<!-- a comment -->\n\n{line}\n",
)


@SETTINGS
@given(data=st.data())
def test_mdx_runs_no_code_in_a_page_the_judge_does_not_call_code(
        plant: Plant, data: st.DataObject) -> None:
    """Evaluated as MDX (as Docusaurus compiles a page it reads as MDX), a page runs code of
    its own only if the judge said it is code (the docs preset then never writes it)."""
    _need("@mdx-js/mdx (npm)", _node_ready("@mdx-js/mdx"))
    pages = {f"docs/p{n}.md": f"# Page {n}\n\n" + data.draw(st.sampled_from(ESM_WRAPS))(
        data.draw(st.sampled_from(ESM))) for n in range(PAGES_PER_BUILD)}
    root = plant.repo
    for path, text in pages.items():
        (root / path).write_text(text)
    done = subprocess.run(["node", str(NODE_DIR / "mdx.mjs"), *pages], cwd=root,
                          env=plant.env, capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT_S, check=True)
    ran = {page for page, what in json.loads(done.stdout).items() if what == "ran"}
    _, verdict = _passed(plant, pages, {})
    code = {line.split(":", 1)[0] for line in verdict.code}
    assert ran <= code, {page: pages[page] for page in ran - code}
    assert ran, "no page ran code: the evaluation proved nothing"
