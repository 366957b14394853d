"""Where the API key was during a start of the agent, and what the relay's account of Cursor's
service (:class:`~cursor_agent_action.agent.contain.box.net.credentials.MaskReport`) means
for the run: a failed key exchange fails it (the CLI would wait for a browser sign-in), a
certificate the CLI refused before anything reached Cursor is the one case the run may start
again with the key in the box (``api-key-masking: masked``)."""

from __future__ import annotations

from cursor_agent_action.agent.contain.box.net.credentials import (
    HELD_ASKED,
    HELD_FALLBACK,
    HELD_MASKED,
    HELD_NO_RELAY,
    MASKED,
)
from cursor_agent_action.agent.contain.sandbox import AgentExit
from cursor_agent_action.agent.judge.verdict import Verdict
from cursor_agent_action.options import setting
from cursor_agent_action.stream.keyreport import MaskReport
from cursor_agent_action.stream.record import Cause

SAID = {
    HELD_MASKED: "not in the box: the agent saw a placeholder, the relay held the key",
    HELD_FALLBACK: "in the agent's environment (fallback: {why})",
    HELD_ASKED: "in the agent's environment ({setting} is off)",
    HELD_NO_RELAY: "in the agent's environment (no relay runs here: {why})",
}


FALLBACK_WHY = ("the Cursor CLI refused the relay's certificate before any request reached "
                "Cursor's service, so the agent did nothing")


def fallback_warning() -> str:
    return (f"{FALLBACK_WHY.capitalize()}; running once more with the API key in the agent's "
            f"environment. Set {setting('--key-masking')} to masked-or-fail to fail "
            "instead.")


def mask_of(ended: AgentExit) -> MaskReport | None:
    status = ended.box.status if ended.box is not None else None
    return status.mask if status is not None else None


def falls_back(ended: AgentExit, verdict: Verdict, mode: str, *, mcp_servers: bool) -> bool:
    """The CLI refused the relay's certificate and nothing reached Cursor (so the agent did
    nothing), in the mode that allows one more start with the key in the box, and nothing but
    the CLI can have refused it (:func:`no_fallback`)."""
    mask = mask_of(ended)
    return (mode == MASKED and mask is not None and mask.may_fall_back
            and not verdict.stream.has_result and not verdict.stream.tool_calls
            and not no_fallback(ended, mcp_servers=mcp_servers))


def no_fallback(ended: AgentExit, *, mcp_servers: bool) -> str:
    """Why a refused certificate may not be taken as the CLI's own refusal ("" when it may).

    The relay cannot tell which process in the box refused its certificate. Before the CLI's
    first request, only the CLI runs there (the repository's hooks and MCP servers are set
    aside), unless the workflow configured MCP servers, which the CLI starts first and which
    may run the repository's code. A start that changed the working tree was not the CLI
    refusing at sign-in either. Either way, one more start with the key in the box would hand
    the key to whatever refused: the run fails instead."""
    if mcp_servers:
        return ("the workflow's MCP servers (mcp-config) start with the CLI, so the refusal may "
                "not have been the CLI's")
    status = ended.box.status if ended.box is not None else None
    if status is not None and (status.changed or status.left_behind):
        return "the start changed the working tree, so more than the CLI's sign-in ran"
    return ""


def describe(held: str, why: str = "", mask: MaskReport | None = None) -> str:
    """The summary's words for ``held`` (``credentials.HELD_*``), with what the relay saw."""
    said = SAID.get(held, held).format(why=why or "see the log",
                                       setting=setting("--key-masking"))
    if mask is None or held != HELD_MASKED:
        return said
    return f"{said} ({relay_facts(mask)})"


def relay_facts(mask: MaskReport) -> str:
    """The relay's account in words: the certificate, the exchange, the requests."""
    accepted = (f"the CLI accepted the relay's certificate on {mask.terminated} connection"
                f"{'s' if mask.terminated != 1 else ''}" if mask.terminated else
                "no connection to Cursor's service was made")
    refused = (f", refused it on {mask.certificate_refused}" if mask.certificate_refused
               else "")
    exchange = (f"the key exchange failed: {mask.exchange_error}" if mask.exchange_error else
                f"{mask.exchanges} key exchange{'s' if mask.exchanges != 1 else ''} rewritten")
    return (f"{accepted}{refused}; {exchange}; {mask.requests} request"
            f"{'s' if mask.requests != 1 else ''} to Cursor's service")


def label(verdict: Verdict, ended: AgentExit, held: str, *, why: str = "") -> None:
    """Into ``verdict``: where the key was (``held``, or the fallback the box took)."""
    mask = mask_of(ended)
    if mask is not None and mask.ca_error and held == HELD_MASKED:
        held, why = HELD_FALLBACK, f"no certificate authority on this runner: {mask.ca_error}"
    verdict.api_key_in_box = held
    verdict.api_key_note = describe(held, why, mask)
    verdict.key_relay = mask


def conclude(verdict: Verdict, ended: AgentExit, *, mcp_servers: bool) -> None:
    """A failed exchange or a refused certificate: the run failed because of it (said first,
    after the account of the agent's exit)."""
    mask = mask_of(ended)
    if mask is None:
        return
    if mask.exchange_error:
        verdict.fail(Cause.CREDENTIALS, (
            f"{mask.exchange_error.rstrip('.')}. The Cursor CLI would have waited for a browser "
            "sign-in, so the agent was stopped. Fix: check that api-key is a Cursor API key "
            "(crsr_..., from cursor.com/dashboard, Integrations) and that the secret's name is "
            "right."))
    elif mask.may_fall_back and not verdict.stream.has_result:
        why = no_fallback(ended, mcp_servers=mcp_servers)
        if why:
            verdict.fail(Cause.CREDENTIALS, (
                "A process in the box did not accept the relay's certificate (it holds the API "
                "key for the agent), so nothing reached Cursor's service; the run did not start "
                f"again with the key in the box, because {why}. Fix: run the check in "
                "docs/security.md (Checking the masked key on your runner); if the CLI itself "
                f"refuses, set {setting('--key-masking')} to off."))
            return
        verdict.fail(Cause.CREDENTIALS, (
            "The Cursor CLI did not accept the relay's certificate (it holds the API key for the "
            "agent), so nothing reached Cursor's service and the agent did nothing. Fix: run "
            "the check in docs/security.md (Checking the masked key on your runner); set "
            f"{setting('--key-masking')} to masked (one more start with the key in the box "
            "when this happens) or off."))
