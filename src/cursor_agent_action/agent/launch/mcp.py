"""``mcp-config``: MCP servers configured by the workflow, and only by the workflow.

The value is the CLI's own ``mcp.json`` format (``{"mcpServers": {name: server}}``), written
as JSON or YAML. It is checked here (against :data:`SCHEMA` with ``jsonschema``), then written
as JSON, as the user-level ``~/.cursor/mcp.json`` of the agent's private home for this run
alone, and the run gets
``--approve-mcps`` so the CLI starts exactly these servers. A repository's own
``.cursor/mcp.json`` stays set aside; a file an earlier run's agent left in the home is removed
before every run, with or without ``mcp-config``.

Secrets: a server's ``env`` and ``headers`` refer to them as ``${env:NAME}``; each such NAME
must be listed in ``pass-env`` (so the decision to hand a secret to the agent's side stays in
one input), and its value is masked like the API key. Calling a server's tools still needs an
``Mcp(server:tool)`` allow token: the floor denies every MCP tool otherwise.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cursor_agent_action.agent.guards.permissions import Policy
from cursor_agent_action.agent.launch import json_yaml
from cursor_agent_action.agent.launch.output_schema import describe, sorted_errors
from cursor_agent_action.errors import UsageError
from cursor_agent_action.runner_io import Runner

HOME_FILE = ".cursor/mcp.json"
"""Where the CLI reads user-level MCP servers, relative to its HOME."""
CONFIG_LIMIT = 64 * 1024
_ENV_REF = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")
_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["mcpServers"],
    "additionalProperties": False,
    "properties": {
        "mcpServers": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"pattern": "^[A-Za-z0-9_-]{1,64}$"},
            "additionalProperties": {
                "type": "object",
                "oneOf": [{"required": ["command"]}, {"required": ["url"]}],
                "properties": {
                    "command": {"type": "string", "minLength": 1},
                    "args": {"type": "array", "items": {"type": "string"}},
                    "env": _STRINGS,
                    "url": {"type": "string", "pattern": "^https?://"},
                    "headers": _STRINGS,
                    "type": {"enum": ["stdio", "sse", "http", "streamable-http"]},
                },
                "additionalProperties": False,
            },
        }
    },
}


@dataclass(frozen=True)
class McpConfig:
    """A checked ``mcp-config``: the file's text, the server names, the ``${env:NAME}``
    names its servers use."""

    text: str
    servers: tuple[str, ...]
    env_names: tuple[str, ...]
    urls: tuple[str, ...] = ()  # of the URL servers: their hosts pass the network wall


def parse_mcp_config(text: str, pass_env: Sequence[str]) -> McpConfig | None:
    """The checked config, or None for an empty input. Raises :class:`UsageError`."""
    if not text.strip():
        return None
    json_yaml.require_schema_support("mcp-config")
    config = json_yaml.load(text, "mcp-config", limit=CONFIG_LIMIT, hint=(
        'Give the CLI\'s mcp.json format (as JSON or YAML), only the servers this run needs: '
        '{"mcpServers": {"name": {"command": "...", "args": [...]}}}.'))
    from jsonschema import Draft202012Validator  # noqa: PLC0415 - lazy: ~60 ms, only with a schema

    errors = sorted_errors(Draft202012Validator(SCHEMA), config)
    if errors:
        raise UsageError(f"mcp-config is not a valid MCP configuration: {describe(errors[0])}.",
                         'Each server under "mcpServers" (a name of letters, digits, "_" and '
                         '"-") needs "command" (with "args", "env") or "url" (with "headers").')
    servers = config["mcpServers"]
    names = sorted(
        {
            name
            for server in servers.values()
            for field in ("env", "headers")
            for value in server.get(field, {}).values()
            for name in _ENV_REF.findall(value)
        }
    )
    missing = [name for name in names if name not in pass_env]
    if missing:
        raise UsageError(f"mcp-config refers to ${{env:{missing[0]}}}, which pass-env does not "
                         "list.", f"Add {', '.join(missing)} to pass-env (and set it on the "
                         "step with env:), so the secret reaches the agent's side on purpose.")
    urls = tuple(server["url"] for _, server in sorted(servers.items()) if "url" in server)
    return McpConfig(json.dumps(config, indent=2) + "\n", tuple(sorted(servers)), tuple(names),
                     urls)


def unreachable_servers(config: McpConfig, policy: Policy) -> list[str]:
    """Servers no ``Mcp(...)`` allow token names: the agent cannot call their tools."""
    return [name for name in config.servers if not policy.names_mcp_server(name)]


def announce_servers(config: McpConfig, policy: Policy, runner: Runner,
                     environ: Mapping[str, str]) -> None:
    """Before the run: mask the secrets the servers get; warn about a secret that is not set
    and about servers the agent cannot call; name the servers in the log."""
    missing = unreachable_servers(config, policy)
    for name in config.env_names:
        if value := environ.get(name, ""):
            runner.mask(value)
        else:
            runner.warning(f"mcp-config refers to ${{env:{name}}}, but {name} is not set on "
                           "this step. Fix: set it with env: (from a secret).",
                           title="MCP secret not set")
    if missing:
        runner.warning(f"mcp-config starts {', '.join(missing)}, but no allow token names "
                       f"{'it' if len(missing) == 1 else 'them'}, so every one of "
                       f"{'its' if len(missing) == 1 else 'their'} tools is denied. Fix: allow "
                       f"the tools the agent needs, e.g. Mcp({missing[0]}:TOOL_NAME).",
                       title="MCP server not allowed")
    runner.log(f"MCP servers from mcp-config: {', '.join(config.servers)}.")
