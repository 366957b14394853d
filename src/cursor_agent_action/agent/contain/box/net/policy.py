"""Which names and ports the agent may reach, and which addresses those names may resolve to.

Sources, in the order they are listed: the Cursor CLI's own domains (:data:`DEFAULT_DOMAINS`,
port 443), the ``allowed-domains`` input (one ``host`` or ``*.domain`` a line, optional
``:port``, else ports 443 and 80) and the hosts of ``mcp-config``'s URL servers (their URL's
port). ``*.example.com`` matches every name under example.com, not example.com itself.

Addresses (:mod:`.addresses`): the link-local range (cloud metadata services live there) and
the other metadata addresses are never reachable. Private ranges and loopback are reachable only
for a name listed exactly (no wildcard) in ``allowed-domains`` or ``mcp-config``: a self-hosted
mirror. A default or wildcard name that resolves to one is refused, so a public name pointed at
the runner's own network cannot open it.

The policy travels to the jail (root) in its spec file: :meth:`NetPolicy.to_json`,
:meth:`NetPolicy.from_json`.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from cursor_agent_action.agent.contain.box.net import addresses
from cursor_agent_action.agent.contain.box.net.upstream import RunnerProxy
from cursor_agent_action.errors import UsageError
from cursor_agent_action.options import setting

DEFAULT_PORTS: tuple[int, ...] = (443, 80)
SOURCE_DEFAULT = "default"
SOURCE_INPUT = "allowed-domains"
SOURCE_MCP = "mcp-config"
MAX_RULES = 1000
DEFAULT_DOMAINS = (
    # https://cursor.com/docs/enterprise/network-configuration (the names a proxy must pass);
    # api2/api3/api5.cursor.sh are the API and sign-in hosts the CLI is seen using.
    "*.cursor.sh",
    "*.cursor-cdn.com",
    "*.cursorapi.com",
    # The install script and downloads (https://cursor.com/install): the CLI's update check.
    "cursor.com",
    "downloads.cursor.com",
)
_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")
_PORT = re.compile(r"^[0-9]{1,5}$")


def normalise(name: str) -> str:
    """A DNS name as the policy compares it: lower case, no trailing dot."""
    return name.strip().rstrip(".").lower()


_NUMBER = re.compile(r"(0x[0-9a-f]*|[0-9]+)", re.IGNORECASE)
"""A part of an address as the C library's ``inet_aton`` reads it (decimal, octal after a
0, hexadecimal after 0x): ``0x7f.1``, ``2130706433`` and ``0177.0.0.1`` are 127.0.0.1 to
the system resolver."""


def is_ip_literal(host: str) -> bool:
    """An address, in any form the system resolver reads as one (also a name whose last
    label is a number: no top-level domain is)."""
    host = host.strip("[]").rstrip(".")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        parts = host.split(".")
        if not host or parts[-1].isdigit():
            return bool(host)
        if len(parts) <= 4 and all(_NUMBER.fullmatch(part) for part in parts):
            return True
        try:
            socket.inet_aton(host)
        except (OSError, ValueError):
            return False
    return True


def valid_name(name: str) -> bool:
    """A host name of LDH labels (``_`` allowed), at most 253 characters, not an address."""
    labels = name.split(".")
    return (
        0 < len(name) <= 253
        and all(_LABEL.match(label) for label in labels)
        and not is_ip_literal(name)
    )


@dataclass(frozen=True)
class Rule:
    """One allowed pattern: an exact name or ``*.domain``, on some ports, from a source."""

    pattern: str
    ports: tuple[int, ...]
    source: str

    @property
    def wildcard(self) -> bool:
        return self.pattern.startswith("*.")

    def matches(self, name: str) -> bool:
        if self.wildcard:
            return name.endswith(self.pattern[1:]) and len(name) > len(self.pattern) - 1
        return name == self.pattern

    def describe(self) -> str:
        return f"{self.pattern}:{','.join(map(str, self.ports))}"


@dataclass(frozen=True)
class NetPolicy:
    """The rules of one run; ``unreachable``: MCP URLs the wall cannot let through (an IP
    address for a host), which the run warns about."""

    rules: tuple[Rule, ...]
    unreachable: tuple[str, ...] = field(default=())
    proxy: RunnerProxy | None = None  # the runner's own, used by the relay (not the agent)

    def allows_name(self, name: str) -> bool:
        """Some rule matches ``name`` (on some port): the resolver answers it."""
        name = normalise(name)
        return any(rule.matches(name) for rule in self.rules)

    def allows(self, name: str, port: int) -> bool:
        name = normalise(name)
        return any(rule.matches(name) and port in rule.ports for rule in self.rules)

    def explicit(self, name: str) -> bool:
        """The workflow listed exactly this name (not through a wildcard, not by default)."""
        name = normalise(name)
        return any(rule.pattern == name and rule.source != SOURCE_DEFAULT for rule in self.rules)

    def address_allowed(self, address: str, name: str) -> bool:
        """May the relay connect to ``address`` for ``name``: never a metadata or link-local
        address; a private or loopback one only for an :meth:`explicit` name."""
        verdict = addresses.judge(address)
        return verdict == addresses.GLOBAL or (
            verdict == addresses.LOCAL_ONLY and self.explicit(name))

    def ports(self) -> tuple[int, ...]:
        """Every port some rule allows (the relay listens on each)."""
        return tuple(sorted({port for rule in self.rules for port in rule.ports}))

    def to_json(self) -> dict[str, Any]:
        return {
            "rules": [
                {"pattern": r.pattern, "ports": list(r.ports), "source": r.source}
                for r in self.rules
            ],
            "unreachable": list(self.unreachable),
            "proxy": self.proxy.to_json() if self.proxy else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NetPolicy:
        rules = tuple(
            Rule(str(r["pattern"]), tuple(int(p) for p in r["ports"]), str(r["source"]))
            for r in data["rules"]
        )
        return cls(rules, tuple(str(url) for url in data.get("unreachable", ())),
                   RunnerProxy.from_json(data.get("proxy")))


def _bad(line: str, why: str) -> UsageError:
    name = setting("--allowed-domains")
    return UsageError(f"{name}: {line!r} {why}.",
                      f"List one name a line in {name}: 'example.com', '*.example.com' (every "
                      "name under it), optionally with ':PORT' (default ports 443 and 80).")


def parse_line(line: str, source: str = SOURCE_INPUT) -> Rule:
    """One ``allowed-domains`` line as a rule. Raises :class:`UsageError` naming the input."""
    text = line.strip()
    if "://" in text or "/" in text:
        raise _bad(text, "is a URL, not a name (no scheme, no path)")
    if any(c.isspace() for c in text):
        raise _bad(text, "holds a space: one name a line")
    host, ports = text, DEFAULT_PORTS
    if text.count(":") == 1:
        host, port = text.split(":")
        if not _PORT.match(port) or not 0 < int(port) < 65536:
            raise _bad(text, "has a port that is not a number from 1 to 65535")
        ports = (int(port),)
    elif ":" in text:
        raise _bad(text, "is an IPv6 address: the wall lets the agent out by name only")
    host = normalise(host)
    wildcard = host.startswith("*.")
    bare = host[2:] if wildcard else host
    if is_ip_literal(bare):
        raise _bad(text, "is an IP address: the wall lets the agent out by name only (give "
                   "the host's name)")
    if "*" in bare or not valid_name(bare):
        raise _bad(text, "is not a host name ('*' only as the first label, as in "
                   "*.example.com; letters, digits, '-' and '_')")
    if wildcard and "." not in bare:
        raise _bad(text, "would allow a whole top-level domain: name the domain "
                   "(*.example.com)")
    return Rule(host, ports, source)


def parse_allowed_domains(texts: Iterable[str]) -> tuple[Rule, ...]:
    """The rules of ``allowed-domains`` lines (blank lines and ``#`` comments skipped)."""
    rules = []
    for text in texts:
        for raw in text.splitlines():
            line = raw.split("#", 1)[0].strip()
            if line:
                rules.append(parse_line(line))
    if len(rules) > MAX_RULES:
        name = setting("--allowed-domains")
        raise UsageError(f"{name} lists {len(rules)} names, over {MAX_RULES}.",
                         f"Use wildcards (*.example.com) to keep {name} short.")
    return tuple(rules)


def mcp_rules(urls: Sequence[str]) -> tuple[tuple[Rule, ...], tuple[str, ...]]:
    """Rules for the hosts of MCP URL servers, and the URLs no rule can serve (IP hosts)."""
    rules: list[Rule] = []
    unreachable: list[str] = []
    for url in urls:
        try:
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            unreachable.append(url)
            continue
        host = normalise(parts.hostname or "")
        if not valid_name(host):
            unreachable.append(url)
            continue
        rules.append(Rule(host, (port,), SOURCE_MCP))
    return tuple(rules), tuple(unreachable)


def build_policy(allowed_domains: Iterable[str], mcp_urls: Sequence[str] = ()) -> NetPolicy:
    """The run's policy: the CLI's domains, then ``allowed-domains``, then MCP hosts."""
    defaults = tuple(Rule(pattern, (443,), SOURCE_DEFAULT) for pattern in DEFAULT_DOMAINS)
    mcp, unreachable = mcp_rules(mcp_urls)
    return NetPolicy(defaults + parse_allowed_domains(allowed_domains) + mcp, unreachable)
