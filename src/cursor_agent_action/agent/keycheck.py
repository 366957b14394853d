"""``check-key-masking``: the check a user runs once on a real runner with a real key, to see
that the relay can hold the key for the Cursor CLI there (docs/security.md, "Checking the masked
key on your runner"). The real CLI cannot be downloaded where this action is built and tested,
so this is how masked mode is confirmed against Cursor's service itself.

It runs the CLI as ``run`` does, contained behind the wall with ``api-key-masking:
masked-or-fail`` (no fallback: the check is whether masking works), read-only, with a trivial
prompt and no retries, and prints three answers from the relay's account of the run:

1. whether the CLI accepted the relay's certificate;
2. whether the key exchange was rewritten (the key swapped in, the tokens masked);
3. whether the model answered.

Exit 0 when all three hold, 1 when one does not.
"""

from __future__ import annotations

import argparse
import dataclasses
import os

from cursor_agent_action.agent.contain.box.net.credentials import MASKED_OR_FAIL
from cursor_agent_action.agent.contain.cancel import stop_on_signals
from cursor_agent_action.agent.launch.run_options import add_run_options, options_from_args
from cursor_agent_action.agent.run import execute
from cursor_agent_action.runner_io import Runner
from cursor_agent_action.stream.keyreport import MaskReport
from cursor_agent_action.stream.record import Conclusion, RunReport

PROMPT = "Reply with the single word OK and do nothing else."


def answers(report: RunReport) -> list[tuple[str, bool, str]]:
    """The check's three answers: (question, held, how it went)."""
    mask = report.key_relay or MaskReport()
    accepted = mask.terminated > 0 and mask.certificate_refused == 0
    answered = report.conclusion is Conclusion.SUCCESS and bool(report.stream.result_text)
    return [
        ("The CLI accepted the relay's certificate", accepted,
         f"{mask.terminated} connections terminated, {mask.certificate_refused} refused"
         + (f"; the box kept the key: {report.api_key_note}" if report.api_key_in_box
            not in ("", "no") else "")),
        ("The key exchange was rewritten", mask.exchanges > 0 and not mask.exchange_error,
         mask.exchange_error or f"{mask.exchanges} exchanges, {mask.requests} requests"),
        ("The model answered", answered,
         report.stream.result_text[:80] if answered else report.failure_reason[:300]),
    ]


def configure(parser: argparse.ArgumentParser) -> None:
    add_run_options(parser)
    parser.set_defaults(prompt=PROMPT, preset="read-only", max_retries=0,
                        key_masking=MASKED_OR_FAIL, isolation="user")


def command(args: argparse.Namespace, runner: Runner) -> int:
    options = dataclasses.replace(options_from_args(args), key_masking=MASKED_OR_FAIL,
                                  max_retries=0)
    with stop_on_signals() as stop:
        report = execute(options, runner, os.environ, stop)
    found = answers(report)
    for question, held, how in found:
        runner.log(f"{'yes' if held else 'NO '}  {question}: {how}")
    return 0 if all(held for _, held, _ in found) else 1
