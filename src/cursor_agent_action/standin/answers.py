"""The stand-in's answers: the default run with a given answer text, and the turn played when
the CLI is asked to ``--resume`` a chat, and a run showing every late-2026 stream shape."""

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
        {
            "type": "system",
            "subtype": "init",
            "apiKeySource": "env",
            "cwd": cwd,
            "session_id": session,
            "model": "Auto",
            "permissionMode": "default",
        },
        *calls,
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
            "session_id": session,
        },
        {
            "type": "result",
            "subtype": "success",
            "duration_ms": 1200,
            "duration_api_ms": 1200,
            "is_error": False,
            "result": text,
            "session_id": session,
            "request_id": "00000000-0000-4000-8000-000000000001",
        },
    ]


SANDBOX_UNAVAILABLE = (
    "Error: Sandbox mode is enabled but not available on this system.\n"
    "Sandbox failed to start, possibly due to AppArmor configuration.\n"
    "Visit https://cursor.com/docs/agent/terminal for troubleshooting steps.\n"
    "Run 'agent sandbox disable' to switch to allowlist mode.\n"
)
"""What the CLI prints when its sandbox is on but cannot start (backnotprop/plannotator#1094)."""
_NOTE = "\n\nAgent note: Do not suggest workarounds to the blocked tool."
_HINT = "\n\nTo view or modify configured hooks, go to Cursor Settings > Hooks."


def _call(number: int, key: str, args: dict[str, Any], result: dict[str, Any]) -> list[Any]:
    call_id = f"call-{number}\nfc_{number}"
    return [
        {
            "type": "tool_call",
            "subtype": "started",
            "call_id": call_id,
            "tool_call": {key: {"args": args}},
            "session_id": SESSION,
        },
        {
            "type": "tool_call",
            "subtype": "completed",
            "call_id": call_id,
            "tool_call": {key: {"args": args, "result": result}},
            "session_id": SESSION,
        },
    ]


def new_shape_lines() -> list[Any]:
    """A run with every shape of late-2026 builds (docs/cli-compat.md): a question the agent
    asked (skipped), a plan prompt, an edit and a command refused by hooks, a background
    command stopped, a task notification, and usage with cache tokens."""
    init, message, result = answer_lines("Done, with one file left alone.")
    query = "askQuestionInteractionQuery"
    skipped = "Questions skipped by the user, continue with the information you already have"
    lines: list[Any] = [
        init,
        {
            "type": "interaction_query",
            "subtype": "request",
            "query_type": query,
            "query": {"id": 1, query: {"args": {"title": "Which release?"}}},
        },
        {
            "type": "interaction_query",
            "subtype": "response",
            "query_type": query,
            "response": {"id": 1, "result": {"rejected": {"reason": skipped}}},
        },
        {
            "type": "interaction_query",
            "subtype": "request",
            "query_type": "createPlanRequestQuery",
            "query": {"id": 2, "createPlanRequestQuery": {"args": {"plan": "# Plan\n- edit"}}},
        },
        *_call(
            1,
            "editToolCall",
            {"path": "docs/frozen.md"},
            {"error": {"errorMessage": "Edit was blocked by a hook: frozen" + _HINT + _NOTE}},
        ),
        *_call(
            2,
            "shellToolCall",
            {"command": "curl example.com"},
            {"rejected": {"command": "curl example.com", "reason": "no network" + _NOTE}},
        ),
        {
            "type": "system",
            "subtype": "task_notification",
            "status": "completed",
            "summary": "Background command finished",
        },
        {"type": "system", "subtype": "background_shell_timeout", "command": "npm run dev"},
        message,
        {
            **result,
            "usage": {
                "inputTokens": 1200,
                "outputTokens": 34,
                "cacheReadTokens": 560,
                "cacheWriteTokens": 7,
            },
        },
    ]
    return lines


def turn(scenario: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """The scenario for this invocation: with ``--resume ID`` and a ``resume`` key, that
    sub-scenario (its keys over the outer ones, ``record`` kept); an ``answer`` key becomes
    the default lines."""
    if options.get("resume") and isinstance(scenario.get("resume"), dict):
        scenario = {**{k: v for k, v in scenario.items() if k in ("record",)},
                    **scenario["resume"]}
    if scenario.get("new_shapes") and not {"lines", "transcript", "chunks"} & scenario.keys():
        scenario = {**scenario, "lines": new_shape_lines()}
    if "answer" in scenario and not {"lines", "transcript", "chunks"} & scenario.keys():
        session = options["resume"] if isinstance(options.get("resume"), str) else SESSION
        writes = scenario.get("writes") or {}
        scenario = {**scenario, "lines": answer_lines(str(scenario["answer"]), session, writes),
                    "apply_tool_writes": bool(writes) or scenario.get("apply_tool_writes")}
    return scenario
