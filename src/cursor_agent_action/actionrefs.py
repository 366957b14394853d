"""How a workflow names this action and its sub-actions (``uses:`` lines), and the inputs
each declares, for ``lint`` and ``pin``.

The declared inputs are a copy of the ``inputs:`` of every ``action.yml`` (``""`` is the action
itself, ``publish`` and the rest its sub-actions), kept in ``data/action-inputs.json`` because
the helper is installed without those files; ``tests/test_lint.py`` checks the copy against
them (``python -m tests.test_lint --write`` renews it).
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources

ACTION = "cursor-agent-action/cursor-agent-action"

USES = re.compile(
    r"^(?P<lead>\s*(?:-\s+)?uses:\s*)(?P<quote>['\"]?)"
    r"(?P<action>cursor-agent-action/cursor-agent-action(?:/(?P<sub>[^@\s'\"#]+))?)"
    r"@(?P<ref>[^\s'\"#]*)(?P=quote)(?P<space>\s*)(?P<comment>#.*)?$"
)
"""One ``uses:`` line of this action or a sub-action: its ref and trailing comment apart."""

REPOSITORY = re.compile(
    r"^\s*repository:\s*(['\"]?)cursor-agent-action/cursor-agent-action\1\s*(?:#.*)?$")
"""A checkout's ``repository:`` line naming this action's repository."""

CHECKOUT_REF = re.compile(
    r"^(?P<lead>\s*ref:\s*)(?P<quote>['\"]?)(?P<ref>[^\s'\"#]*)(?P=quote)(?P<space>\s*)"
    r"(?P<comment>#.*)?$")
"""The ``ref:`` line of such a checkout (in the same ``with:``)."""


@functools.lru_cache(maxsize=1)
def declared_inputs() -> dict[str, tuple[str, ...]]:
    """The inputs of the action (``""``) and of each sub-action, by sub-action name."""
    text = resources.files("cursor_agent_action").joinpath("data/action-inputs.json")
    loaded = json.loads(text.read_text(encoding="utf-8"))
    return {str(name): tuple(map(str, inputs)) for name, inputs in loaded.items()}


def action_name(sub: str) -> str:
    """``owner/name`` or ``owner/name/sub``, as a workflow writes it."""
    return f"{ACTION}/{sub}" if sub else ACTION
