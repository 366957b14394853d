"""``cursor-agent-action summarize TRANSCRIPT``: the live run's report from a saved transcript.

Same code path as ``run``: the transcript goes through :class:`~.stream.engine.StreamProcessor`, the
log goes to stdout, the job summary and step outputs to the runner's files. Exit 0 when the
conclusion is ``success``, 1 otherwise, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from cursor_agent_action.errors import EXIT_OK, EXIT_RUN_FAILED, UsageError
from cursor_agent_action.options import add_flag, add_option
from cursor_agent_action.runner_io import Runner
from cursor_agent_action.stream.engine import open_transcript, process_stream
from cursor_agent_action.stream.record import Conclusion
from cursor_agent_action.stream.render.report import report


def default_result_dir() -> Path:
    """``$RUNNER_TEMP/cursor-agent-action`` on a runner, a fresh temporary directory elsewhere."""
    runner_temp = os.environ.get("RUNNER_TEMP")
    if runner_temp:
        return Path(runner_temp) / "cursor-agent-action"
    return Path(tempfile.mkdtemp(prefix="cursor-agent-action-"))


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "transcript",
        metavar="TRANSCRIPT",
        help="stream-json transcript saved from 'cursor-agent --output-format stream-json' "
        "(- reads standard input)",
    )
    add_flag(parser, "--verbose", default=False,
             help="print every tool call's full output in the log")
    add_option(parser, "--result-dir", help="directory for the result-file output",
               default_help="$RUNNER_TEMP/cursor-agent-action, or a new temporary directory")


def _refuse_binary(path: Path) -> None:
    """A file that is plainly not text (NUL bytes at its start) is refused with one clear
    error instead of being reported as thousands of malformed lines."""
    try:
        with path.open("rb") as handle:
            head = handle.read(8192)
    except OSError:
        return  # open_transcript reports it
    if b"\0" in head:
        raise UsageError(f"{path} is binary data, not a stream-json transcript.",
                         "Pass the file saved from cursor-agent --output-format stream-json "
                         "(the run step's transcript-file output, or its artifact).")


def command(args: argparse.Namespace, runner: Runner) -> int:
    path = Path(args.transcript)
    if args.transcript != "-":
        _refuse_binary(path)
    result_dir = Path(args.result_dir) if args.result_dir else default_result_dir()
    with open_transcript(path) as source:
        run = process_stream(source, runner, verbose=args.verbose,
                             transcript_file="" if args.transcript == "-" else str(path))
    report(run, runner, result_dir=result_dir)
    return EXIT_OK if run.conclusion is Conclusion.SUCCESS else EXIT_RUN_FAILED
