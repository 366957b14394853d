"""The agent's texts withheld when one of them holds the API key in some form.

Checked after the run, before the one report is made (:mod:`cursor_agent_action.keyscan`): the
transcript file, the final message and result, the structured answer, and what the summary
would show of the tool calls, questions and notices. A hit fails the run; the transcript is
emptied (the workflow uploads it as an artifact), the answer outputs and their file are blank,
and the report keeps the run's counts and ids but none of the agent's words. The failure names
where the key was found, never the key.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path

from cursor_agent_action.agent.judge.verdict import Verdict
from cursor_agent_action.keyscan import Hit, KeyScan
from cursor_agent_action.runner_io import listing
from cursor_agent_action.stream.notices import Interaction, Notice
from cursor_agent_action.stream.record import Cause, ToolCallRecord

CHUNK = 4 * 1024 * 1024
"""The transcript is searched a piece at a time, the pieces overlapping by :data:`OVERLAP`."""
OVERLAP = 64 * 1024
WITHHELD = "(withheld: it holds the API key in some form; see the run's failure)"


def withhold_key(verdict: Verdict, keys: KeyScan, transcript: Path,
                 structured: dict[str, str]) -> dict[str, str]:
    """Search what the run hands on for the key; on a hit, fail the run and withhold the
    agent's texts. Returns the structured outputs to write (blank on a hit)."""
    if not keys:
        return structured
    stream = verdict.stream
    texts = {
        "the final message": stream.final_message,
        "the result": stream.result_text,
        "the structured output": verdict.structured_output,
        "the tool calls": "\n".join(_call_texts(verdict)),
        "the files changed": "\n".join(verdict.files_changed),
    }
    found = keys.text_hits(texts)
    if (form := _search_file(keys, transcript)) is not None:
        found.append(Hit("the transcript", form))
    if not found:
        return structured
    with contextlib.suppress(OSError):
        transcript.write_bytes(b"")
    if structured.get("structured-output-file"):
        with contextlib.suppress(OSError):
            Path(structured["structured-output-file"]).unlink()
    verdict.stream = dataclasses.replace(
        stream, final_message=WITHHELD if stream.final_message else "",
        result_text=WITHHELD if stream.result_text else "", tool_calls=(), interactions=(),
        notices=(), files_changed=())
    verdict.files_changed = []
    verdict.structured_output = ""
    where = listing([str(hit) for hit in found])
    verdict.fail(Cause.KEY, (
        f"The agent's output holds the API key, in some form, in {where}: "
        "the transcript was emptied and the final message, result, structured output, tool "
        "calls and files changed are withheld from the outputs and this summary. Fix: revoke "
        "the key (cursor.com, dashboard) if the job log may have shown it, and find out why "
        "the agent wrote it (the prompt, the repository's instructions); docs/security.md "
        "says where runs hold the key."))
    return dict.fromkeys(structured, "")


def _call_texts(verdict: Verdict) -> Iterator[str]:
    """What the summary could show of the tool calls, questions and notices."""
    stream = verdict.stream
    items: list[ToolCallRecord | Interaction | Notice] = [
        *stream.tool_calls, *stream.interactions, *stream.notices]
    for item in items:
        for field in dataclasses.fields(item):
            if isinstance(value := getattr(item, field.name), str):
                yield value


def _search_file(keys: KeyScan, path: Path) -> str | None:
    """The form of the key the file holds, read in overlapping pieces (a transcript can be
    large), or None (also when it cannot be read: then nothing of it is handed on either)."""
    try:
        with path.open("rb") as stream:
            tail = b""
            while piece := stream.read(CHUNK):
                text = (tail + piece).decode("utf-8", "replace")
                if (form := keys.find(text)) is not None:
                    return form
                tail = piece[-OVERLAP:]
    except OSError:
        return None
    return None
