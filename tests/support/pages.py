"""A job summary as GitHub shows it: its Markdown made HTML by cmark-gfm (the C library GitHub's
own renderer is built on, PyPI ``cmarkgfm``, with GitHub's extensions and its raw-HTML tag
filter), GitHub's alerts (``> [!CAUTION]``) drawn as GitHub draws them, in a page with a
stylesheet of ours that looks like GitHub's; and that page as a picture, taken by headless
Chromium (Debian ``chromium``, installed by ``.ci/run``).

The HTML is exact (golden, compared strictly); the picture depends on the fonts of the machine
that takes it, so it is refreshed by a command (docs/development.md) and only checked for its
presence and its size."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

from tests.support.gfm import render

WIDTH, HEIGHT = 880, 1100
"""A picture's size in pixels (its height chosen per page, below its content): as wide as
GitHub's summary column."""
_ALERT = re.compile(r"<blockquote>\n<p>\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]\n?")
_STYLE = """
body { margin: 0; background: #ffffff; }
.markdown-body { box-sizing: border-box; width: 880px; padding: 16px 24px; color: #1f2328;
  font: 14px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, "DejaVu Sans",
  sans-serif; word-wrap: break-word; }
.markdown-body h2 { font-size: 1.5em; font-weight: 600; margin: 0 0 16px;
  padding-bottom: .3em; border-bottom: 1px solid #d1d9e0; }
.markdown-body h3 { font-size: 1.25em; font-weight: 600; margin: 24px 0 16px; }
.markdown-body p, .markdown-body ul, .markdown-body table, .markdown-body pre,
.markdown-body details, .markdown-body blockquote, .markdown-body .markdown-alert {
  margin: 0 0 16px; }
.markdown-body ul { padding-left: 2em; }
.markdown-body code { font: 85%/1.45 ui-monospace, "SFMono-Regular", Menlo, Consolas,
  "DejaVu Sans Mono", monospace; padding: .2em .4em; background: #818b981f;
  border-radius: 6px; }
.markdown-body pre { padding: 16px; overflow: auto; background: #f6f8fa; border-radius: 6px;
  font: 85%/1.45 ui-monospace, "DejaVu Sans Mono", monospace; }
.markdown-body pre code { padding: 0; background: transparent; font-size: 100%; }
.markdown-body table { border-collapse: collapse; display: block; width: max-content;
  max-width: 100%; overflow: auto; }
.markdown-body th, .markdown-body td { padding: 6px 13px; border: 1px solid #d1d9e0; }
.markdown-body th { font-weight: 600; }
.markdown-body tr:nth-child(2n) { background: #f6f8fa; }
.markdown-body details summary { cursor: pointer; display: list-item; }
.markdown-body blockquote { padding: 0 1em; color: #59636e; border-left: .25em solid #d1d9e0; }
.markdown-body .markdown-alert { padding: 8px 16px; border-left: .25em solid #d1d9e0; }
.markdown-body .markdown-alert > :last-child { margin-bottom: 0; }
.markdown-body .markdown-alert-title { font-weight: 500; margin-bottom: 4px; }
.markdown-alert-note { border-left-color: #0969da !important; }
.markdown-alert-note .markdown-alert-title { color: #0969da; }
.markdown-alert-warning { border-left-color: #9a6700 !important; }
.markdown-alert-warning .markdown-alert-title { color: #9a6700; }
.markdown-alert-caution { border-left-color: #d1242f !important; }
.markdown-alert-caution .markdown-alert-title { color: #d1242f; }
"""


def to_html(markdown: str) -> str:
    """The summary's body as GitHub renders it (raw HTML through GFM's tag filter; alerts)."""
    body = render(markdown)

    parts = _ALERT.split(body)  # [before, kind, after, kind, after, ...]
    out = [parts[0]]
    for kind, after in zip(parts[1::2], parts[2::2], strict=True):
        name = kind.lower()
        out.append(f'<div class="markdown-alert markdown-alert-{name}">\n'
                   f'<p class="markdown-alert-title">{name.capitalize()}</p>\n<p>'
                   + after.replace("</blockquote>", "</div>", 1))
    return "".join(out)


def page(body: str, title: str) -> str:
    """A whole HTML page holding a rendered summary (:func:`to_html`)."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{title}</title><style>{_STYLE}</style></head>\n"
            f'<body><div class="markdown-body">\n{body}</div></body></html>\n')


def chromium() -> str | None:
    """The headless browser's path, or None where it is not installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def picture(html: str, target: Path, *, width: int = WIDTH, height: int = HEIGHT) -> None:
    """``html`` as a PNG of ``width`` x ``height`` pixels at ``target``, by headless Chromium
    (within 120 s; its profile in a temporary directory, removed after)."""
    browser = chromium()
    if browser is None:
        raise RuntimeError("chromium is not installed (apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="caa-page-") as work:
        source = Path(work) / "page.html"
        source.write_text(html, encoding="utf-8")
        shot = Path(work) / "shot.png"
        done = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", "--disable-extensions", "--force-device-scale-factor=1",
             f"--user-data-dir={work}/profile", f"--window-size={width},{height}",
             f"--screenshot={shot}", source.as_uri()],
            capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0 or not shot.exists():
            raise RuntimeError(f"chromium failed ({done.returncode}): {done.stderr[-2000:]}")
        target.write_bytes(shot.read_bytes())


def png_size(data: bytes) -> tuple[int, int]:
    """A PNG's width and height, from its header (ValueError for anything else)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    return width, height
