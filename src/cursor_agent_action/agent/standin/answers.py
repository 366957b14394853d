"""The stand-in's answers: the default run with a given answer text, and the turn played when
the CLI is asked to ``--resume`` a chat."""

from __future__ import annotations

from typing import Any

SESSION = "00000000-0000-4000-8000-000000000000"


def answer_lines(text: str, session: str = SESSION) -> list[Any]:
    """A minimal successful run whose answer (final message and result) is ``text``."""
    return [
        {"type": "system", "subtype": "init", "apiKeySource": "env", "cwd": "/workspace",
         "session_id": session, "model": "Auto", "permissionMode": "default"},
        {"type": "assistant", "message": {"role": "assistant",
                                          "content": [{"type": "text", "text": text}]},
         "session_id": session},
        {"type": "result", "subtype": "success", "duration_ms": 1200, "duration_api_ms": 1200,
         "is_error": False, "result": text, "session_id": session,
         "request_id": "00000000-0000-4000-8000-000000000001"},
    ]  # fmt: skip


def turn(scenario: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """The scenario for this invocation: with ``--resume ID`` and a ``resume`` key, that
    sub-scenario (its keys over the outer ones, ``record`` kept); an ``answer`` key becomes
    the default lines."""
    if options.get("resume") and isinstance(scenario.get("resume"), dict):
        scenario = {**{k: v for k, v in scenario.items() if k in ("record",)},
                    **scenario["resume"]}
    if "answer" in scenario and not {"lines", "transcript", "chunks"} & scenario.keys():
        session = options["resume"] if isinstance(options.get("resume"), str) else SESSION
        scenario = {**scenario, "lines": answer_lines(str(scenario["answer"]), session)}
    return scenario
