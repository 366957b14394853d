"""Pull request bodies and comment texts: from a file, the text itself, a transcript or the
run's final message, always fitted to GitHub's size limit."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from cursor_agent_action.errors import UsageError
from cursor_agent_action.markdown import escape_invisible, fence
from cursor_agent_action.options import add_option
from cursor_agent_action.redact import Redactor


def fit(text: str, limit: int, note: str = "\n\n*(cut to fit GitHub's size limit)*\n") -> str:
    """``text`` cut to at most ``limit`` characters, with a note when cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(note))] + note[: limit]


def add_body_options(parser: argparse.ArgumentParser, what: str) -> None:
    """The four ways to give the text of a ``what`` (read by :func:`compose_body`)."""
    add_option(parser, "--transcript", default="",
               help=f"saved transcript: the {what} is the run's compact summary")
    add_option(parser, "--final-message", default="",
               help="the run step's final-message output: shown fenced, so none of the "
               "agent's Markdown, HTML or @mentions renders")
    add_option(parser, "--body", default="",
               help=f"{what}: trusted Markdown you wrote, rendered as is (never agent "
               "output: use --transcript or --final-message for that)")
    add_option(parser, "--body-file", default="",
               help=f"file with the {what}: trusted Markdown, like --body")


def compose_body(
    *,
    transcript: str,
    final_message: str,
    body: str,
    body_file: str,
    links: Mapping[str, str],
    max_chars: int,
    redact: Redactor,
) -> str:
    """Markdown for a PR body or comment from exactly one source, plus links, within max_chars.

    ``redact`` (``Runner.redact``) removes secrets from every text before it is cut, escaped
    or fenced, so a cut cannot leave part of a secret behind; the Markdown built from them is
    only put through the redactor's one-for-one last net (``Redactor.net``), which cannot
    move a fence.

    Agent text (a saved transcript, rendered by ``summary.render_compact``, or the run's
    ``final-message``) is shown inert: fenced, so no heading, link, image, HTML or @mention of
    it renders. ``body``/``body_file`` are trusted Markdown the workflow author wrote: they
    render as they are, so they must never carry agent output.
    """
    given = [name for name, value in (("--transcript", transcript),
                                      ("--final-message", final_message), ("--body", body),
                                      ("--body-file", body_file)) if value]
    if len(given) > 1:
        raise UsageError(
            f"give only one of {', '.join(given)}.",
            "Use --transcript (or --final-message) for a run's output, --body-file or --body "
            "for your own text.",
        )
    if transcript:
        # Imported here: publish and comment work without it when no transcript is given.
        from cursor_agent_action.stream import engine  # noqa: PLC0415
        from cursor_agent_action.stream.render import report, summary  # noqa: PLC0415

        path = Path(transcript)
        if not path.is_file():
            raise UsageError(
                f"transcript {transcript} does not exist.",
                "Pass the run step's transcript-file output.",
            )
        # Redacted whole before render_compact cuts the final message (the stream redacts
        # only long segments as they come).
        run = report.redacted(engine.load_report(path, redact=redact), redact)
        compact: str = summary.render_compact(run, max_chars=max_chars, links=dict(links))
        return _shown(redact.net(compact))
    footer = "".join(f"\n\n[{name}]({url})" for name, url in links.items() if url)
    room = max_chars - len(footer)
    if final_message:
        lead = "**The agent's final message:**\n\n"
        # Escaped and cut before fencing (a cut fence would let the rest render); +1: the cut
        # text may need the newline fence() adds.
        message = escape_invisible(redact(final_message))
        overhead = len(lead) + len(fence(message)) - len(message) + 1
        cut = fit(message.rstrip(), room - overhead,
                  note="\n... (cut to fit GitHub's size limit)")
        return lead + fence(cut).rstrip("\n") + footer
    text = body
    if body_file:
        try:
            text = Path(body_file).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(
                f"cannot read --body-file {body_file}: {exc.strerror}.",
                "Pass a Markdown file the job wrote.",
            ) from exc
    # Your own Markdown, not ours: redacted as the text it is (nothing of ours is in it yet).
    return (fit(_shown(redact(text)).rstrip(), room) + footer).lstrip("\n")


def _shown(markdown: str) -> str:
    """Invisible characters (bidi overrides, zero-width ones) escaped, but the zero-width
    spaces ``markdown.inline`` puts in itself to break autolinks (a compact summary's agent
    text was escaped, and counted, by the Markdown containers already)."""
    return escape_invisible(markdown, keep="\u200b")
