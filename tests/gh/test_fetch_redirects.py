"""GitHub.fetch (the raw diff, the jobs' logs) over real sockets: the token goes to the API's
origin only, whatever a redirect names, and a redirect loop ends in one GitHubError."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from cursor_agent_action.errors import GitHubError
from cursor_agent_action.gh.api import Context, GitHub
from cursor_agent_action.gh.ratelimits import Retrier
from tests.support.loopback import serving

TOKEN = "ghs_" + "R3v1ewT0kenNeverLeav3s0000000000000000"
Seen = list[tuple[int, str, str | None]]


def _answering(seen: Seen, answer: Callable[[BaseHTTPRequestHandler], None]) -> type[
        BaseHTTPRequestHandler]:
    """A handler that answers each GET with ``answer(handler)``, every request seen."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append((_port(self), self.path, self.headers.get("Authorization")))
            answer(self)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


def _port(handler: BaseHTTPRequestHandler) -> int:
    address = handler.server.server_address
    assert isinstance(address, tuple)
    return int(address[1])


def _send(handler: BaseHTTPRequestHandler, status: int, location: str = "") -> None:
    handler.send_response(status)
    if location:
        handler.send_header("Location", location)
    body = b"" if location else b"diff --git a/x b/x\n"
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@pytest.fixture
def servers() -> Iterator[tuple[Seen, str, int]]:
    seen: Seen = []
    with serving(_answering(seen, lambda handler: _send(handler, 200))) as other:

        def api(handler: BaseHTTPRequestHandler) -> None:
            port = _port(handler)
            if handler.path == "/loop":
                _send(handler, 302, "/loop")
            elif handler.path == "/other-port":
                _send(handler, 307, f"http://127.0.0.1:{other.port}/blob")
            elif handler.path == "/other-name":  # the same socket by another name: another origin
                _send(handler, 301, f"http://localhost:{port}/here")
            else:
                _send(handler, 200)

        with serving(_answering(seen, api)) as main:
            yield seen, main.url, other.port


def _client(api_url: str) -> GitHub:
    return GitHub(Context("owner/repo", api_url=api_url), TOKEN, log=lambda _line: None,
                  retrier=Retrier(sleep=lambda _s: None))


@pytest.mark.parametrize("path", ["/other-port", "/other-name"])
def test_a_redirect_to_another_origin_gets_no_token(
    servers: tuple[Seen, str, int], path: str
) -> None:
    seen, api_url, _ = servers
    gh = _client(api_url)
    with gh.http() as http:
        response = gh.fetch(http, "reading the diff", api_url + path,
                            accept="application/vnd.github.diff")
    assert response.status_code == 200
    assert response.text.startswith("diff --git")
    assert seen[0] == (int(api_url.rsplit(":", 1)[1]), path, f"Bearer {TOKEN}")
    assert len(seen) == 2
    assert seen[1][2] is None  # the redirect's target: no Authorization


def test_a_redirect_loop_ends_in_one_github_error(servers: tuple[Seen, str, int]) -> None:
    seen, api_url, _ = servers
    gh = _client(api_url)
    with gh.http() as http, pytest.raises(GitHubError, match="TooManyRedirects"):
        gh.fetch(http, "reading the diff", api_url + "/loop")
    assert 1 < len(seen) <= 21  # httpx's cap of 20 redirects; not retried as a transient error
