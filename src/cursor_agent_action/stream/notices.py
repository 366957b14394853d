"""What the CLI tells besides tool calls: the agent's questions and the prompts it raised
(``interaction_query``), and the ``system`` notices of newer builds (``background_shell_timeout``,
``task_notification``), read leniently and described in words a reviewer understands.

Shapes (docs/cli-compat.md): a request names its ``query_type`` and carries the query under
``query.<query_type>`` (``args`` holding the plan, question or command); the response carries
the answer under ``response`` (or ``result``), e.g. ``{"webFetchRequestResponse": {"approved":
{}}}`` or ``{"rejected": {"reason": "Questions skipped by the user, ..."}}``: a headless run
answers nobody's question, the CLI skips it itself. Fields can be missing or of another type;
nothing here trusts one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cursor_agent_action.stream.toolcalls import json_dict, json_str

INTERACTIONS_KEPT = 200
"""The most questions and prompts a record keeps (the transcript has every one)."""
NOTICES_KEPT = 200
"""The most system notices a record keeps."""
_TEXT_KEYS = (
    "title",
    "question",
    "prompt",
    "plan",
    "command",
    "url",
    "query",
    "text",
    "message",
    "description",
)
_ANSWERS = ("approved", "rejected", "accepted", "denied", "skipped", "answered", "cancelled")
_NOTICE_KEYS = ("command", "summary", "message", "description", "text", "output_file")
_LABELS = {
    "askQuestionInteractionQuery": "question",
    "askQuestionRequestQuery": "question",
    "createPlanRequestQuery": "plan for approval",
    "shellRequestQuery": "shell command approval",
    "webFetchRequestQuery": "web fetch approval",
    "webSearchRequestQuery": "web search approval",
    "mcpRequestQuery": "MCP tool approval",
}


@dataclass(slots=True)
class Interaction:
    """A question or prompt the agent raised, and how it was answered."""

    query_type: str
    query_id: str
    text: str  # the question, plan, command or URL (agent-authored: untrusted)
    answer: str = ""  # "approved", "rejected", ...; "" while no response came
    reason: str = ""  # the response's reason, e.g. why a question was skipped

    @property
    def label(self) -> str:
        return interaction_label(self.query_type)


@dataclass(slots=True)
class Notice:
    """A ``system`` event other than ``init``: its subtype, status and what it is about."""

    subtype: str
    status: str
    text: str


def interaction_label(query_type: str) -> str:
    """``question``, ``plan for approval``, ...; an unknown query type as it was sent."""
    return _LABELS.get(query_type) or query_type or "interaction"


def _first_text(args: dict[str, Any]) -> str:
    for key in _TEXT_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
    questions = args.get("questions")
    if isinstance(questions, list):
        texts = [_first_text(q) if isinstance(q, dict) else json_str(q) for q in questions]
        return "\n".join(text for text in texts if text)
    return ""


def query_fields(obj: dict[str, Any], query_type: str) -> tuple[str, str]:
    """A request's query id and text (the question, plan, command or URL)."""
    query = json_dict(obj.get("query"))
    inner = json_dict(query.get(query_type))
    if not inner:
        inner = next((value for value in query.values() if isinstance(value, dict)), {})
    args = json_dict(inner.get("args")) or inner
    return _id(query.get("id")), _first_text(args)


def answer_fields(obj: dict[str, Any]) -> tuple[str, str, str]:
    """A response's query id, answer (``approved``, ``rejected``, ...) and reason."""
    response = json_dict(obj.get("response")) or json_dict(obj.get("result"))
    found = _answer(response)
    if found is None:  # one level down: {"webFetchRequestResponse": {"approved": {}}}
        below = (_answer(value) for value in response.values() if isinstance(value, dict))
        found = next((answer for answer in below if answer is not None), None)
    answer, reason = found or ("", "")
    return _id(response.get("id")), answer, reason


def _answer(value: dict[str, Any]) -> tuple[str, str] | None:
    for key in _ANSWERS:
        if key in value:
            detail = value[key]
            reason = _first_text(detail) if isinstance(detail, dict) else json_str(detail)
            if isinstance(detail, dict):
                reason = json_str(detail.get("reason")) or reason
            return key, reason
    return None


def _id(value: object) -> str:
    if isinstance(value, bool):
        return ""
    return str(value) if isinstance(value, (int, str)) else ""


def notice_fields(obj: dict[str, Any]) -> tuple[str, str]:
    """A system notice's status and text (the command, summary or message it carries)."""
    status = json_str(obj.get("status"))
    for key in _NOTICE_KEYS:
        value = obj.get(key)
        if isinstance(value, str) and value.strip():
            return status, value
    return status, ""


def describe_interaction(item: Interaction) -> str:
    """How it was answered, in words: ``skipped (…)``, ``approved``, ``no answer recorded``."""
    if not item.answer:
        return "no answer recorded"
    if item.answer == "rejected" and item.label == "question":
        answer = "skipped (a headless run answers no questions)"
    else:
        answer = item.answer
    return f"{answer}: {item.reason}" if item.reason else answer


def describe_notice(notice: Notice) -> str:
    """One sentence on a system notice (its text is shown apart, as untrusted)."""
    if notice.subtype == "background_shell_timeout":
        return (
            "a background command was still running when the agent finished and was "
            "stopped (timed out)"
        )
    if notice.subtype == "task_notification":
        return f"task notification ({notice.status})" if notice.status else "task notification"
    return f"system event {notice.subtype or '(no subtype)'}"


def add_request(kept: list[Interaction], query_type: str, query_id: str, text: str) -> bool:
    """Keep a request (False: :data:`INTERACTIONS_KEPT` reached, left out)."""
    if len(kept) >= INTERACTIONS_KEPT:
        return False
    kept.append(Interaction(query_type, query_id, text))
    return True


def add_response(
    kept: list[Interaction], query_type: str, query_id: str, answer: str, reason: str
) -> bool:
    """Answer the request it responds to: the unanswered one with its id, else the latest
    unanswered of its type, else the latest unanswered; a response to no kept request is kept
    on its own (False: left out, the cap reached)."""
    open_ = [item for item in reversed(kept) if not item.answer]
    match = (
        next((item for item in open_ if query_id and item.query_id == query_id), None)
        or next((item for item in open_ if item.query_type == query_type), None)
        or (open_[0] if open_ and not query_id else None)
    )
    if match is None:
        if not add_request(kept, query_type, query_id, ""):
            return False
        match = kept[-1]
    match.answer, match.reason = answer or "answered", reason
    return True
