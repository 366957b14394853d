"""The stand-in's answers: the default run with a given answer text, and the turn played when
the CLI is asked to ``--resume`` a chat."""

from __future__ import annotations

from typing import Any

SESSION = "00000000-0000-4000-8000-000000000000"


def answer_lines(text: str, session: str = SESSION,
                 writes: dict[str, str] | None = None) -> list[Any]:
    """A minimal successful run whose answer (final message and result) is ``text``, after a
    write tool call for each of ``writes`` (workspace-relative path -> new content)."""
    cwd = "/workspace"
    calls: list[Any] = []
    for number, (path, content) in enumerate((writes or {}).items(), 1):
        args = {"path": f"{cwd}/{path}", "fileText": content}
        call = {"call_id": f"write-{number}", "session_id": session}
        calls += [
            {"type": "tool_call", "subtype": "started", **call,
             "tool_call": {"writeToolCall": {"args": args}}},
            {"type": "tool_call", "subtype": "completed", **call,
             "tool_call": {"writeToolCall": {"args": args, "result": {"success": {
                 "path": args["path"], "linesCreated": content.count("\n"),
                 "fileSize": len(content.encode("utf-8"))}}}}},
        ]
    return [
        {"type": "system", "subtype": "init", "apiKeySource": "env", "cwd": cwd,
         "session_id": session, "model": "Auto", "permissionMode": "default"},
        *calls,
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
        writes = scenario.get("writes") or {}
        scenario = {**scenario, "lines": answer_lines(str(scenario["answer"]), session, writes),
                    "apply_tool_writes": bool(writes) or scenario.get("apply_tool_writes")}
    return scenario
