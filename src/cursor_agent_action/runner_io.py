"""All I/O with the Actions runner: log, workflow commands, step outputs, job summary.

Nothing else in the package writes ``GITHUB_OUTPUT`` or ``GITHUB_STEP_SUMMARY`` or prints a
workflow command; everything goes through :class:`Runner`.

References:
- Workflow commands and their escaping:
  https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands
- Multiline outputs with a delimiter (and why the delimiter must be random):
  https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands#multiline-strings
- Step summaries are limited to 1 MiB per step:
  https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands#adding-a-job-summary
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TextIO

from cursor_agent_action.logsafe import neutral
from cursor_agent_action.markdown import INVISIBLE, escape_invisible, shorten
from cursor_agent_action.redact import Redactor

SUMMARY_LIMIT_BYTES = 1024 * 1024
"""GitHub rejects a step summary larger than this."""

# Leave room for whatever a later step of the same job appends to the same file.
SUMMARY_SAFETY_BYTES = 8 * 1024

_OUTPUT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_FLUSH_INTERVAL_S = 0.05
GROUP_TITLE_CHARS = 300
_FLUSH_BYTES = 64 * 1024
TRUNCATION_NOTE = "\n\n> [!WARNING]\n> The summary was cut to stay under GitHub's 1 MiB limit.\n"


LOG_LINE_CHARS = 16 * 1024
"""The longest line the log prints, in characters (at most 64 KiB of UTF-8)."""
AGENT_MARK = "\u2502 "
"""Starts every line of agent-authored text in the log (``│ ``): no line of the helper's own
starts with it, so no agent line can pass for one of ours ("cursor-agent finished: success",
"Isolation: contained"), start a workflow command or a log viewer format (``##[error]``)."""
_LONG_LINE = re.compile(rf"[^\n]{{{LOG_LINE_CHARS - len(AGENT_MARK)}}}(?=[^\n])")
# C0 controls but tab and newline, DEL, C1 controls: shown as \xNN, never written raw (a CR
# could start a new line that the log viewer reads as a command, an ESC drives the terminal).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# The same check on the UTF-8 bytes, ten times faster than the expression over megabytes of
# log: drop the safe ASCII bytes; what is left is C0 controls and DEL (both below 0x80) and
# the bytes of non-ASCII characters, among which a C1 control is its lead byte C2 followed by
# 80-9F (C2 is never a continuation byte, and its continuation byte is never dropped).
_SAFE_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n"
_NON_ASCII = bytes(range(0x80, 0x100))
_C1_UTF8 = re.compile(rb"\xc2[\x80-\x9f]")


def _as_is(text: str) -> str:
    return text


def _wrap(match: re.Match[str]) -> str:
    return match.group(0) + "\n"


def _visible(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group(0)):02x}"


def _shown(text: str, contents: bytes) -> str:
    """``text`` (a log buffer) with every control character and invisible character escaped,
    searching only ``contents`` (the UTF-8 of what is not our own framing) for them first."""
    # Drop the safe ASCII bytes; what is left is C0 controls and DEL (both below 0x80) and the
    # bytes of non-ASCII characters, whole (UTF-8 never uses an ASCII byte inside a character),
    # among which a C1 control is its lead byte C2 followed by 80-9F.
    rest = contents.translate(None, _SAFE_ASCII)
    if not rest:
        return text
    if rest.translate(None, _NON_ASCII) or _C1_UTF8.search(rest) is not None:
        text = _CONTROL.sub(_visible, text)
    if INVISIBLE.search(rest.decode("utf-8", "surrogatepass")):  # bidi, zero-width, ...
        text = escape_invisible(text)
    return text


def has_control(text: str) -> bool:
    """Whether ``text`` holds a character :data:`_CONTROL` matches (C0 but tab and newline,
    DEL, C1)."""
    return has_control_utf8(text.encode("utf-8", "surrogatepass"))


def has_control_utf8(data: bytes) -> bool:
    """:func:`has_control` for a text's UTF-8 bytes (``surrogatepass``)."""
    rest = data.translate(None, _SAFE_ASCII)
    if not rest:
        return False
    return bool(rest.translate(None, _NON_ASCII)) or _C1_UTF8.search(rest) is not None


def escape_data(value: str) -> str:
    """Escape the message part of a workflow command (``%``, CR, LF)."""
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    """Escape a property value of a workflow command (also ``:`` and ``,``)."""
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def one_line(value: str, limit: int = 200) -> str:
    """Flatten untrusted text for use inside a single log line or title."""
    # Most values (a path, a command) are flat already: printable, single-spaced, trimmed.
    if not (value.isprintable() and "  " not in value and value[:1] != " " and value[-1:] != " "):
        value = " ".join(escape_invisible(value).split())  # U+2028 shown, not a space
    return shorten(value, limit)  # as it is when short enough


def listing(paths: Sequence[str], limit: int = 20) -> str:
    """The first ``limit`` of ``paths`` (sorted), comma-separated, then "and N more"."""
    shown = ", ".join(sorted(paths)[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


# Credentials a URL may carry: "user:token@" and query strings (a signed log-storage URL's
# signature). HTTP libraries put URLs into their exception messages.
_URL_USERINFO = re.compile(r"(?<=://)[^/\s@'\"]+@")
_URL_QUERY = re.compile(r"\?[\w.~%-]+=[^\s'\")]*")


def scrub_urls(text: str) -> str:
    """``text`` with URL credentials and query strings replaced by ``***``."""
    return _URL_QUERY.sub("?***", _URL_USERINFO.sub("***@", text))


def random_token() -> str:
    """128 random bits as 32 hex digits, from the OS (what ``secrets.token_hex(16)`` returns,
    without importing ``secrets`` and what it loads: this runs at every start-up)."""
    return os.urandom(16).hex()


def new_delimiter(value: str) -> str:
    """A heredoc delimiter that does not occur in ``value``: ``ghadelimiter_`` and 128 random
    bits (GitHub's toolkit uses a UUID the same way)."""
    while True:
        delimiter = f"ghadelimiter_{random_token()}"
        if delimiter not in value:
            return delimiter


def format_output(name: str, value: str) -> str:
    """One ``GITHUB_OUTPUT`` entry in the multiline form, with a fresh delimiter."""
    if not _OUTPUT_NAME.match(name):
        raise ValueError(f"invalid output name {name!r}")
    delimiter = new_delimiter(value)
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed, or no such method
        return False


def readable_outputs(output_path: Path) -> Path:
    """Where a run off a runner lists its outputs as ``name=value`` lines: beside the runner's
    file (``outputs.txt`` -> ``outputs.readable.txt``)."""
    return output_path.with_name(f"{output_path.stem}.readable{output_path.suffix or '.txt'}")


def _readable(value: str) -> str:
    """One line: backslashes, newlines and carriage returns escaped as in C."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


class Runner:
    """The runner-facing side of a command: log, workflow commands, outputs, summary.

    ``output_file``/``summary_file`` default to ``GITHUB_OUTPUT``/``GITHUB_STEP_SUMMARY`` from
    ``env``; when neither is set (a local run) outputs and summary are simply not written.
    """

    def __init__(
        self,
        *,
        stdout: TextIO | None = None,
        env: Mapping[str, str] | None = None,
        output_file: str | os.PathLike[str] | None = None,
        summary_file: str | os.PathLike[str] | None = None,
        secrets: Iterable[str] = (),
        terminal: bool | None = None,
    ) -> None:
        env = os.environ if env is None else env
        self._out = stdout if stdout is not None else sys.stdout
        # A person at a terminal, not a runner: groups, annotations and masks rendered as
        # plain text (no workflow command syntax), outputs also as a readable list.
        self.terminal = (env.get("GITHUB_ACTIONS") != "true" and _isatty(self._out)
                         if terminal is None else terminal)
        # Only a runner reads ::add-mask::; anywhere else (a pipe, a file) the line would only
        # print the secret it names.
        self.masks_read = env.get("GITHUB_ACTIONS") == "true"
        # Off a runner (a terminal, or piped into a file or a pager) the outputs are also
        # written as a readable list: nobody reads the runner's delimited format there.
        self.lists_outputs = not self.masks_read or self.terminal
        output = output_file if output_file is not None else env.get("GITHUB_OUTPUT") or None
        summary = summary_file if summary_file is not None else env.get("GITHUB_STEP_SUMMARY")
        self.output_path: Path | None = Path(output) if output else None
        self.summary_path: Path | None = Path(summary) if summary else None
        self.redact = Redactor()
        self._stop_token = random_token()  # see untrusted()
        # Log entries, three strings each: our own framing before and after (workflow
        # commands, stop-commands lines: never a secret, a control or foreign text) and,
        # between, the content (every third string from the second: ``_buffer[1::3]``).
        self._buffer: list[str] = []
        self._buffered = 0
        self._last_flush = time.monotonic()
        self._outputs_written: dict[str, str] = {}
        for value in secrets:
            self.mask(value)

    # -- log ------------------------------------------------------------------------------

    def _write(self, head: str, content: str, tail: str = "") -> None:
        """Buffer a log entry: ``content`` between our own ``head`` and ``tail`` (constants
        and random tokens only: tests/test_logsafe.py checks every call)."""
        self._buffer += (head, content, tail)
        self._buffered += len(head) + len(content) + len(tail)
        if self._buffered >= _FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Write everything buffered to the log now, every known secret replaced by ``***``.

        This is the log's one redaction pass, over each buffered entry's content: an entry is
        never split, so a secret inside one is always found, and no match reaches into our
        framing (a BEGIN in one entry and an END in the next would take the stop-commands
        lines between with them). Whoever cuts or splits text before it is written (a title
        cut to length, a long text logged in pieces) redacts it first. Then every content
        goes through :func:`~cursor_agent_action.logsafe.neutral`, so no text we did not
        write is read by the runner as a workflow command, in either of its forms.
        """
        if self._buffer:
            # The searches on the contents' UTF-8 bytes, made once: the hints' literal scans
            # and the control check run faster there than on text that our titles' arrows
            # make two bytes a character.
            parts = self._buffer
            contents = "".join(parts[1::3]).encode("utf-8", "surrogatepass")
            found = self.redact.finds_utf8(contents)
            if found or b"##[" in contents or b"::" in contents:  # else neutral changes nothing
                redact = self.redact if found else _as_is
                for index in range(1, len(parts), 3):
                    parts[index] = neutral(redact(parts[index]))
            text = "".join(parts)
            # Never a raw control byte (ESC, BEL, CR, C1...) nor an invisible character (a bidi
            # override, a zero-width space, a line separator).
            self._out.write(_shown(text, contents))
            self._buffer.clear()
            self._buffered = 0
        with contextlib.suppress(OSError, ValueError):
            self._out.flush()
        self._last_flush = time.monotonic()

    def maybe_flush(self) -> None:
        """Flush if the log has been held back for more than 50 ms (batching under load)."""
        if self._buffer and time.monotonic() - self._last_flush >= _FLUSH_INTERVAL_S:
            self.flush()

    def log(self, line: str) -> None:
        """A line of our own text, which may quote text we did not write (a name, a path, a
        reason): secrets redacted and the whole line :func:`neutral` at flush."""
        self._write("", line, "\n")

    def untrusted(self, text: str) -> None:
        """Print agent-authored text so that no line of it can act as a workflow command or
        pass for one of our own lines: each starts with :data:`AGENT_MARK`."""
        if len(text) > LOG_LINE_CHARS - len(AGENT_MARK):  # no log line over 64 KiB
            text = _LONG_LINE.sub(_wrap, text)
        # One random token for the whole run: the agent cannot read the log while it runs,
        # and a text that holds the token gets a new one, so no text can end its own block.
        token = self._stop_token
        while token in text:
            token = self._stop_token = random_token()
        body = text[:-1] if text.endswith("\n") else text  # the text ends its own line
        marked = AGENT_MARK + body.replace("\n", "\n" + AGENT_MARK) if "\n" in body else (
            AGENT_MARK + body)
        if self.terminal:  # no runner reads it; controls are still escaped at flush
            self._write("", marked, "\n")
            return
        self._write(f"::stop-commands::{token}\n", marked, f"\n::{token}::\n")

    def command(self, name: str, message: str = "", **properties: str) -> None:
        """A raw workflow command with escaped properties and message."""
        props = ",".join(
            f"{key}={escape_property(neutral(self.redact(value)))}"
            for key, value in properties.items()
        )
        head = f"{name} {props}" if props else name
        if self.terminal:
            title = properties.get("title")
            label = f"{name}: {title}" if title else name
            self._write("", f"{label}: {self.redact(message)}", "\n")
            return
        self._write(f"::{head}::", escape_data(self.redact(message)), "\n")

    def mask(self, value: str) -> None:
        """Mask a secret in the job log (each line of it) and redact it everywhere we write."""
        self.flush()  # what was buffered before is redacted with the old list
        added = self.redact.add(value)
        if self.terminal or not self.masks_read:  # redacted all the same; no runner reads it
            return
        # Written at once and never through the redactor (it would mask the mask): nothing
        # printed later may reveal it.
        self._out.write("".join(f"::add-mask::{escape_data(piece)}\n" for piece in added))
        self.flush()

    def error(self, message: str, *, title: str | None = None) -> None:
        self.command("error", message, **({"title": title} if title else {}))

    def warning(self, message: str, *, title: str | None = None) -> None:
        self.command("warning", message, **({"title": title} if title else {}))

    def notice(self, message: str, *, title: str | None = None) -> None:
        self.command("notice", message, **({"title": title} if title else {}))

    def _group_title(self, title: str) -> str:
        if len(title) > GROUP_TITLE_CHARS:  # redacted before the cut can split a secret
            return escape_data(one_line(self.redact(title), GROUP_TITLE_CHARS))
        # Once per tool call: a flat title (one_line would return it as it is, and it holds no
        # CR or LF) needs only its % escaped.
        if title.isprintable() and "  " not in title and title[:1] != " " and title[-1:] != " ":
            return title.replace("%", "%25") if "%" in title else title
        return escape_data(one_line(title, GROUP_TITLE_CHARS))

    @contextlib.contextmanager
    def group(self, title: str) -> Iterator[None]:
        """A collapsible log group. ``title`` may be untrusted: it is flattened and escaped."""
        title = self._group_title(title)
        if self.terminal:
            self._write("▸ ", title.replace("%25", "%"), "\n")
            yield
            return
        self._write("::group::", title, "\n")
        try:
            yield
        finally:
            self._write("::endgroup::\n", "")

    def entry(self, title: str) -> None:
        """A group with nothing in it: one line in the log, like a group's title."""
        title = self._group_title(title)
        if self.terminal:
            self._write("▸ ", title.replace("%25", "%"), "\n")
            return
        self._write("::group::", title, "\n::endgroup::\n")

    # -- outputs --------------------------------------------------------------------------

    def set_outputs(self, outputs: Mapping[str, str]) -> None:
        """Append step outputs, each with a fresh random delimiter; values are redacted."""
        entries = {name: self.redact(value) for name, value in outputs.items()}
        self._outputs_written.update(entries)
        if self.output_path is None:
            return
        text = "".join(format_output(name, value) for name, value in entries.items())
        with self.output_path.open("a", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        if self.lists_outputs:
            readable_outputs(self.output_path).write_text("".join(
                f"{name}={_readable(value)}\n" for name, value in self._outputs_written.items()
            ), encoding="utf-8")

    @property
    def outputs(self) -> dict[str, str]:
        """Every output set so far (also when no output file is configured)."""
        return dict(self._outputs_written)

    # -- summary --------------------------------------------------------------------------

    def summary_budget(self) -> int:
        """Bytes the job summary of this step may still grow by."""
        used = 0
        if self.summary_path is not None:
            with contextlib.suppress(OSError):
                used = self.summary_path.stat().st_size
        return max(0, SUMMARY_LIMIT_BYTES - SUMMARY_SAFETY_BYTES - used)

    def append_summary(self, markdown: str) -> bool:
        """Append Markdown to the job summary, cut to the budget.

        Every text in ``markdown`` that we did not write was redacted as text before it was
        escaped or fenced (the caller's part); the whole is only put through the one-for-one
        safety net (:meth:`Redactor.net`), which cannot move a fence. Returns False when no
        summary file is configured.
        """
        if self.summary_path is None:
            return False
        # Invisible characters escaped, but the zero-width spaces markdown.inline() puts in
        # itself to break autolinks (it escapes the agent's own before).
        data = escape_invisible(self.redact.net(markdown), keep="\u200b").encode("utf-8")
        budget = self.summary_budget()
        if len(data) > budget:
            note = TRUNCATION_NOTE.encode("utf-8")
            cut = data[: max(0, budget - len(note))].decode("utf-8", errors="ignore")
            data = cut.encode("utf-8") + note if budget >= len(note) else b""
        with self.summary_path.open("ab") as handle:
            handle.write(data)
        return True
