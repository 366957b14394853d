"""extra-args: passed one per line, before '--'; every row of the refusal table refused."""

from __future__ import annotations

import pytest

from cursor_agent_action.agent.launch.extra_args import REFUSED, parse_extra_args, with_extra_args
from cursor_agent_action.errors import UsageError


@pytest.mark.parametrize(("names", "value", "reason"), REFUSED)
def test_every_row_of_the_refusal_table_is_refused_in_every_spelling(
    names: tuple[str, ...], value: str | None, reason: str
) -> None:
    for name in names:
        for text in (f"{name}\n{value or 'x'}", f"{name}={value or 'x'}"):
            with pytest.raises(UsageError, match="is refused") as error:
                parse_extra_args(text)
            assert reason in error.value.message
            assert error.value.hint == "Remove it from extra-args."


def test_a_value_only_refused_for_one_value_is_allowed_otherwise() -> None:
    assert parse_extra_args("--sandbox\nenabled") == ("--sandbox", "enabled")
    with pytest.raises(UsageError, match="--sandbox disabled is refused"):
        parse_extra_args("--sandbox=disabled")


def test_allowed_arguments_go_before_the_prompt_separator_unparsed() -> None:
    args = parse_extra_args("  --stream-partial-output \n\n--mode\nplan; rm -rf /\n")
    assert args == ("--stream-partial-output", "--mode", "plan; rm -rf /")
    argv = with_extra_args(["cli", "-p", "--", "the prompt"], args)
    assert argv == ["cli", "-p", "--stream-partial-output", "--mode", "plan; rm -rf /", "--",
                    "the prompt"]  # fmt: skip


@pytest.mark.parametrize("text", ["--", "--mode\x07"])
def test_a_separator_or_a_control_character_is_refused(text: str) -> None:
    with pytest.raises(UsageError):
        parse_extra_args(text)
