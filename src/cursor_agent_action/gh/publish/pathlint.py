"""``lint``'s check of publish's ``allowed-paths`` and ``protected-paths``, before any run:
a pattern that can never match, a bare directory in the allow-list (which names files), an
allowed pattern that names only protected paths (publish refuses them whatever it allows), and
one that names nothing the agent's preset may write (every change would be refused).

Each finding is one line naming the input, the pattern and the fix. A value given as an
expression is read only when it is ``${{ env.NAME }}`` of a literal workflow or job ``env``;
any other expression (and an agent step whose ``permissions`` is one) is left unchecked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cursor_agent_action.agent.guards.permissions import DEFAULT_PRESET, build_policy, parse_tokens
from cursor_agent_action.errors import UsageError
from cursor_agent_action.gh.publish.patchcheck import DEFAULT_PROTECTED
from cursor_agent_action.globs import covers, literal_prefix, never_matches, overlap
from cursor_agent_action.options import lines

_ENV_REF = re.compile(r"^\s*\$\{\{\s*env\.([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}\s*$")
_GLOB_META = re.compile(r"[*?{]")


@dataclass(frozen=True)
class AgentStep:
    line: int
    preset: str  # "" when the workflow gives it as an expression
    allow: str


@dataclass(frozen=True)
class PublishStep:
    allowed: tuple[int, str | None] | None  # (line, value; None: an expression) or not given
    protected: tuple[int, str | None] | None


def resolve(value: str, env: Mapping[str, str]) -> str | None:
    """A ``with:`` value as the step gets it: literal, or ``${{ env.NAME }}`` of a literal env;
    None for any other expression."""
    if match := _ENV_REF.match(value):
        value = env.get(match.group(1), "${{")
    return None if "${{" in value else value


def _writes(agents: Sequence[AgentStep]) -> tuple[list[str], str] | None:
    """The Write globs the workflow's agent steps may use, and how to name them (the presets);
    None when unknown (no agent step, or a preset given as an expression)."""
    if not agents or any(not a.preset for a in agents):
        return None
    globs: list[str] = []
    try:
        for agent in agents:
            policy = build_policy(agent.preset, parse_tokens(agent.allow))
            globs += [t[len("Write("):-1] for t in policy.allow if t.startswith("Write(")]
    except UsageError:  # the run says what is wrong with them
        return None
    presets = " and ".join(sorted({f"`permissions: {a.preset}` (line {a.line})"
                                   for a in agents}))
    return globs, presets


def _bare_directory(pattern: str, root: Path | None, writes: list[str] | None) -> bool:
    if _GLOB_META.search(pattern) or pattern.endswith("/"):
        return False
    if root is not None and (root / pattern.lstrip("/")).is_dir():
        return True
    return writes is not None and not any(overlap(pattern, w) for w in writes) and any(
        overlap(pattern.rstrip("/") + "/**", w) for w in writes)


def _patterns(text: str | None) -> list[tuple[int, str]]:
    """(line offset, pattern) of each non-blank line."""
    return [(n, line.strip()) for n, line in enumerate((text or "").splitlines()) if line.strip()]


def check_publish(step: PublishStep, agents: Sequence[AgentStep],
                  root: Path | None) -> list[tuple[int, str]]:
    """(line, message) of each problem of one publish step's path inputs."""
    found: list[tuple[int, str]] = []
    protected_line, protected_text = step.protected or (0, "\n".join(DEFAULT_PROTECTED))
    protected = None if protected_text is None else (
        [] if protected_text.strip().lower() == "none" else lines([protected_text]))
    for offset, pattern in _patterns(protected_text if step.protected and protected else ""):
        if why := never_matches(pattern):
            found.append((protected_line + offset,
                          f"publish `protected-paths`: `{pattern}` can never match ({why}): "
                          "write it relative to the repository's top, e.g. `secrets/**`; as "
                          "written it protects nothing."))
    if step.allowed is None or step.allowed[1] is None:
        return found
    line, text = step.allowed[0], step.allowed[1]
    known = _writes(agents)
    writes = known[0] if known else None
    if known and not writes:
        return [*found, (line, f"publish `allowed-paths`: the agent runs with {known[1]}, "
                               "which writes nothing, so there is nothing to publish: give the "
                               "agent step `permissions: docs` or `edit`.")]
    for offset, pattern in _patterns(text):
        line = step.allowed[0] + offset
        if why := never_matches(pattern):
            found.append((line, f"publish `allowed-paths`: `{pattern}` can never match "
                          f"({why}): write it relative to the repository's top with `/`, "
                          "e.g. `docs/**/*.md`."))
        elif _bare_directory(pattern, root, writes):
            name = pattern.strip("/")
            found.append((line, f"publish `allowed-paths`: `{pattern}` names a file called "
                          f"`{name}`, not what is below that directory (an allow-list names "
                          f"files): write `{name}/` or `{name}/**`."))
        elif protected and (prefix := literal_prefix(pattern)) and covers(protected, prefix):
            by = next(p for p in protected if covers([p], prefix))
            found.append((line, f"publish `allowed-paths`: `{pattern}` names only protected "
                          f"paths (`{by}` in protected-paths), which publish refuses whatever "
                          "allowed-paths says: remove it, or narrow `protected-paths` if the "
                          "agent must change them."))
        elif known and writes and not any(overlap(pattern, w) for w in writes):
            found.append((line, f"publish `allowed-paths`: `{pattern}` names nothing the "
                          f"agent may write with {known[1]}, so every change it allows would "
                          "be refused: name files the preset writes (e.g. `**/*.md` for "
                          "docs), or widen the agent's `permissions` or `allow`."))
    return found


def agent_preset(given: Mapping[str, str]) -> tuple[str, str]:
    """(preset, allow) of an agent step's ``with:`` ("" preset: given as an expression)."""
    preset = given.get("permissions", DEFAULT_PRESET).strip() or DEFAULT_PRESET
    return ("" if "${{" in preset else preset), given.get("allow", "")
