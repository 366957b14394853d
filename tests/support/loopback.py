"""One HTTP server on 127.0.0.1 for a test: :func:`serving`.

Every test server of the suite starts here, so each stops the same way and quickly:
``serve_forever`` looks for the stop request every :data:`POLL_SECONDS` (the standard library's
default, half a second, was paid once per server per test), the handler threads are daemons
(a client that hangs cannot hold the test), and the socket is closed after the last request.
"""

from __future__ import annotations

import contextlib
import ssl
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

POLL_SECONDS = 0.02
Handler = type[BaseHTTPRequestHandler] | Callable[..., BaseHTTPRequestHandler]


class LoopbackServer(ThreadingHTTPServer):
    """A threaded HTTP server on 127.0.0.1, on a port of the kernel's choosing."""

    daemon_threads = True
    quiet = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not self.quiet:
            super().handle_error(request, client_address)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def serving(handler: Handler, *, tls: ssl.SSLContext | None = None,
            quiet: bool = False) -> Iterator[LoopbackServer]:
    """``handler`` served on loopback until the block ends (HTTPS with ``tls``); ``quiet``
    drops the traceback the standard library prints for a connection that ended badly (a test
    that resets connections on purpose)."""
    server = LoopbackServer(("127.0.0.1", 0), handler)
    server.quiet = quiet
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, args=(POLL_SECONDS,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
