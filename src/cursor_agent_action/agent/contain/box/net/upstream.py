"""The runner's own proxy (a self-hosted runner's ``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY``),
used by the relay itself: the agent's environment holds no proxy variables, and nothing in the
box is a proxy.

For each allowed destination the relay opens ``CONNECT name:port`` to the HTTPS proxy (TLS and
other protocols), or sends its own composed request in absolute form to the HTTP proxy (plain
HTTP) when that proxy takes no credentials. ``NO_PROXY`` (names and domains, ``*`` for all)
sends a name direct. Lower-case names win over upper-case ones, as curl reads them. Only
``http://`` proxies are spoken to; a user and password in the URL become ``Proxy-Authorization:
Basic`` on the relay's own ``CONNECT`` (:func:`tunnel`) and nowhere else: plain HTTP through a
proxy with credentials is tunnelled to the far end as well (a request that carries the agent's
method, target and fields never carries them: a ``TRACE`` answered by the proxy would echo
them to the agent).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

NAMES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
         "ALL_PROXY", "all_proxy")
"""The variables the agent's environment never holds when the wall is up."""
MAX_ANSWER = 16 * 1024


class ProxyError(OSError):
    """The runner's proxy refused or failed a tunnel (a failed connection, not a refusal)."""


@dataclass(frozen=True)
class Proxy:
    """One proxy server: where it is and its ``Proxy-Authorization`` value (b"": none)."""

    host: str
    port: int
    authorization: str = ""

    @classmethod
    def parse(cls, url: str) -> Proxy | None:
        """An ``http://[user:password@]host[:port]`` URL (a bare ``host:port`` too), or
        None when unset or of another scheme."""
        url = url.strip()
        if not url:
            return None
        parts = urlsplit(url if "://" in url else f"http://{url}")
        try:
            port = parts.port or 80
        except ValueError:
            return None
        if parts.scheme.lower() != "http" or not parts.hostname:
            return None
        authorization = ""
        if parts.username is not None:
            pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            authorization = "Basic " + base64.b64encode(pair.encode()).decode()
        return cls(parts.hostname, port, authorization)


@dataclass(frozen=True)
class RunnerProxy:
    """The runner's proxies for HTTPS (tunnels) and HTTP (forwarded requests), and the names
    that go direct."""

    https: Proxy | None = None
    http: Proxy | None = None
    no_proxy: tuple[str, ...] = field(default=())

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> RunnerProxy | None:
        def value(name: str) -> str:
            return environ.get(name.lower()) or environ.get(name) or ""

        https = Proxy.parse(value("HTTPS_PROXY") or value("ALL_PROXY"))
        http = Proxy.parse(value("HTTP_PROXY") or value("ALL_PROXY"))
        if https is None and http is None:
            return None
        no_proxy = tuple(
            entry.strip().lstrip(".").lower()
            for entry in value("NO_PROXY").split(",")
            if entry.strip()
        )
        return cls(https, http, no_proxy)

    def direct(self, name: str) -> bool:
        """``NO_PROXY`` sends ``name`` direct."""
        name = name.lower().rstrip(".")
        return any(entry == "*" or name == entry.split(":")[0]
                   or name.endswith("." + entry.split(":")[0]) for entry in self.no_proxy)

    def to_json(self) -> dict[str, Any]:
        def one(proxy: Proxy | None) -> dict[str, Any] | None:
            return None if proxy is None else {"host": proxy.host, "port": proxy.port,
                                               "authorization": proxy.authorization}
        return {"https": one(self.https), "http": one(self.http),
                "no_proxy": list(self.no_proxy)}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> RunnerProxy | None:
        if not data:
            return None

        def one(entry: dict[str, Any] | None) -> Proxy | None:
            return None if not entry else Proxy(str(entry["host"]), int(entry["port"]),
                                                str(entry.get("authorization", "")))
        return cls(one(data.get("https")), one(data.get("http")),
                   tuple(str(entry) for entry in data.get("no_proxy", ())))


def forward_prefix(name: str, port: int) -> bytes:
    """What goes before an origin-form target for the HTTP proxy (absolute form)."""
    return f"http://{name}{'' if port == 80 else f':{port}'}".encode()


async def tunnel(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, proxy: Proxy,
                 name: str, port: int) -> None:
    """``CONNECT name:port`` on a connection to ``proxy``; raises :class:`ProxyError` unless
    it answers 2xx (what follows the answer's head is the far end's)."""
    authority = f"{name}:{port}"
    head = f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"
    if proxy.authorization:
        head += f"Proxy-Authorization: {proxy.authorization}\r\n"
    writer.write(head.encode() + b"\r\n")
    await writer.drain()
    try:
        answer = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
        raise ProxyError(f"the runner's proxy gave no answer to CONNECT {authority}") from exc
    status = answer.split(b"\r\n", 1)[0].split(b" ")
    if len(answer) > MAX_ANSWER or len(status) < 2 or not status[1].startswith(b"2"):
        raise ProxyError(f"the runner's proxy answered CONNECT {authority} with "
                         f"{b' '.join(status[1:])[:80].decode('latin-1')}")
