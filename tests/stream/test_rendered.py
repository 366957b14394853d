"""Each golden summary as GitHub shows it (issue 42): its Markdown rendered by cmark-gfm, in a
GitHub-like page (tests/support/pages.py). The HTML is golden and compared strictly; a few
pages are also kept as pictures, taken by headless Chromium, for the README and for review.

Refresh after an intended change (review the diff of the HTML, look at the pictures):

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/stream/test_rendered.py

With Chromium installed (``.ci/run`` installs it), that also takes the pictures again. Pictures
depend on the machine's fonts: they are checked for presence and size only; the HTML is the
exact check.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.support.pages import HEIGHT, WIDTH, chromium, page, picture, png_size, to_html

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
PAGES = GOLDEN / "pages"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
PICTURES = {"docs-update": 690, "code-review": 520, "left-out": 700, "run-report": 410}
"""The pages kept as pictures, with their heights in pixels (each cut below its content): a
docs update, a code review, an edit run that left paths out, a run stopped at its timeout.
docs-update's is the README's."""
RENDERED = (*PICTURES, "adversarial-injection")
"""The pages kept as HTML: the pictures', and the hostile transcript's (nothing of the agent's
may become an element)."""
MAX_PICTURE_BYTES = 200 * 1024


@pytest.mark.parametrize("name", RENDERED)
def test_each_example_summary_renders_as_its_golden_html(name: str) -> None:
    html = to_html((GOLDEN / f"{name}.summary.md").read_text(encoding="utf-8"))
    target = PAGES / f"{name}.html"
    if UPDATE:
        PAGES.mkdir(exist_ok=True)
        target.write_text(html, encoding="utf-8")
    assert target.exists(), f"{target.name} missing: run UPDATE_GOLDEN=1 pytest {__file__}"
    assert html == target.read_text(encoding="utf-8"), f"{target.name} differs from golden"


def test_nothing_of_the_agent_s_becomes_an_element_as_github_renders_it() -> None:
    """The hostile transcript's summary, rendered: its script, image, link, comment and
    details stay text (only our own folds are elements)."""
    html = to_html((GOLDEN / "adversarial-injection.summary.md").read_text(encoding="utf-8"))
    tags = set(re.findall(r"<([a-z][a-z0-9]*)", html))
    assert tags <= {"h2", "h3", "p", "strong", "em", "code", "pre", "table", "thead", "tbody",
                    "tr", "th", "td", "details", "summary", "ul", "li", "div"}, tags
    assert "<!--" not in html
    assert html.count("<details>") == html.count("</details>")
    assert "<details open" not in html


@pytest.mark.parametrize("name", list(PICTURES))
def test_the_rendered_top_is_the_ten_second_part(name: str) -> None:
    """In the HTML GitHub would show: the heading, what changed and was refused, then only
    tables, alerts or folds; the answer, the task, how it ran and the network folded."""
    body = (PAGES / f"{name}.html").read_text(encoding="utf-8")
    assert body.startswith("<h2>")
    assert re.search(r"<p><strong>Changed:</strong> .* · <strong>Refused:</strong>", body)
    top = body.split("<details>", 1)[0]
    for folded in ("<pre", "Permissions:", "Model:", "Isolation:", "Allowed for this run"):
        assert folded not in top, folded
    labels = re.findall(r"<details><summary>([^<]*)</summary>", body)
    assert any(label.startswith("How it ran") for label in labels)


@pytest.mark.parametrize("name", list(PICTURES))
def test_the_pictures_are_kept_and_small(name: str) -> None:
    target = PAGES / f"{name}.png"
    if UPDATE and chromium():
        picture(page((PAGES / f"{name}.html").read_text(encoding="utf-8"), name), target,
                height=PICTURES[name])
    assert target.exists(), f"{target.name} missing: run UPDATE_GOLDEN=1 pytest {__file__}"
    data = target.read_bytes()
    assert png_size(data) == (WIDTH, PICTURES[name])
    assert len(data) <= MAX_PICTURE_BYTES


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (.ci/run installs it)")
def test_chromium_renders_a_summary_page(tmp_path: Path) -> None:
    """The page renders in a real browser: a picture of the right size that is not blank (a
    blank page of that size compresses to a few hundred bytes)."""
    shot = tmp_path / "page.png"
    picture(page((PAGES / "docs-update.html").read_text(encoding="utf-8"), "docs-update"), shot)
    data = shot.read_bytes()
    assert png_size(data) == (WIDTH, HEIGHT)
    assert len(data) > 10_000
