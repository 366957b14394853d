"""A local download server for install tests, and Cursor CLI package archives to serve.

``DownloadServer`` is a threaded ``http.server`` on 127.0.0.1 (tests/support/loopback.py)
serving files from a dict. Each request takes the next failure mode from a plan (then
``default_mode``), so a test can script "503 twice, then success". Modes:

- ``ok``: 200 with the file (404 if there is no such file)
- ``503``/``500``/``403``/``404``/``429``: that status, no body
- ``truncated``: 200 announcing the full Content-Length, half the body, then close
- ``garbage``: 200 with bytes that are neither gzip nor tar
- ``slow``: wait up to ``slow_seconds`` before answering (the client should time out)
- ``drop``: close the connection without any response
"""

from __future__ import annotations

import contextlib
import gzip
import http.server
import io
import tarfile
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType

from tests.support.loopback import serving


class DownloadServer:
    def __init__(self, *, slow_seconds: float = 5.0) -> None:
        self.files: dict[str, bytes] = {}
        self.plan: list[str] = []
        self.default_mode = "ok"
        self.slow_seconds = slow_seconds
        self.requests: list[str] = []
        self._arrived = threading.Condition()
        self._release = threading.Event()
        self._serving = contextlib.ExitStack()
        self.url = ""  # while it serves

    def __enter__(self) -> DownloadServer:
        self.url = self._serving.enter_context(serving(self._handler_class())).url
        self._serving.callback(self.release_slow)  # a waiting request answers, then it stops
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._serving.close()

    def release_slow(self) -> None:
        """Let every waiting ``slow`` request answer now."""
        self._release.set()

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> bool:
        """Block until ``count`` requests arrived (or the timeout passed)."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.requests) >= count, timeout)

    def _next_mode(self, path: str) -> str:
        with self._arrived:
            self.requests.append(path)
            self._arrived.notify_all()
            return self.plan.pop(0) if self.plan else self.default_mode

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass  # keep test output quiet

            def _send(self, status: int, body: bytes, length: int | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body) if length is None else length))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                mode = server._next_mode(self.path)
                body = server.files.get(self.path)
                if mode == "slow":
                    server._release.wait(server.slow_seconds)
                    mode = "ok"
                if mode == "drop":
                    self.close_connection = True
                elif mode.isdigit():
                    self._send(int(mode), b"")
                elif body is None:
                    self._send(404, b"no such file")
                elif mode == "truncated":
                    self.close_connection = True
                    self._send(200, body[: len(body) // 2], length=len(body))
                elif mode == "garbage":
                    self._send(200, b"<html>this is not a tar.gz</html>\n" * 64)
                else:
                    self._send(200, body)

        return Handler


@dataclass
class Entry:
    """One archive member: a file (``data``), a directory, a symlink or a hard link."""

    name: str
    data: bytes = b""
    mode: int = 0o644
    kind: str = "file"  # file | dir | symlink | hardlink | fifo
    target: str = ""


def fake_cli_script(version: str) -> bytes:
    """A stand-in ``cursor-agent`` that prints its version like the real one."""
    return f'#!/bin/sh\necho "{version}"\n'.encode()


def package_entries(version: str, *, prefix: str = "dist-package/") -> list[Entry]:
    """A whole package like the vendor's: launcher, its own node, code, an internal link."""
    return [
        Entry(prefix.rstrip("/"), kind="dir", mode=0o755) if prefix else Entry(".", kind="dir"),
        Entry(f"{prefix}cursor-agent", fake_cli_script(version), mode=0o755),
        Entry(f"{prefix}node", kind="dir", mode=0o755),
        Entry(f"{prefix}node/bin/node", b"#!/bin/sh\nexit 0\n", mode=0o755),
        Entry(f"{prefix}index.js", b"console.log('agent')\n"),
        Entry(f"{prefix}node_modules/pkg/cli.js", b"module.exports = 1\n"),
        Entry(f"{prefix}node_modules/.bin/pkg", kind="symlink", target="../pkg/cli.js"),
    ]


def make_archive(entries: Iterable[Entry]) -> bytes:
    """A real tar.gz with exactly these members (no safety checks: tests build bad ones too).
    The same members give the same bytes (no time in the gzip header), so the same package
    served twice has one SHA-256, as the vendor's does."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w") as tar:
        for entry in entries:
            info = tarfile.TarInfo(entry.name)
            info.mode = entry.mode
            info.type = {
                "file": tarfile.REGTYPE,
                "dir": tarfile.DIRTYPE,
                "symlink": tarfile.SYMTYPE,
                "hardlink": tarfile.LNKTYPE,
                "fifo": tarfile.FIFOTYPE,
            }[entry.kind]
            info.linkname = entry.target
            info.size = len(entry.data) if entry.kind == "file" else 0
            tar.addfile(info, io.BytesIO(entry.data) if entry.kind == "file" else None)
    return buffer.getvalue()


def package_path(version: str, os_name: str = "linux", arch: str = "x64") -> str:
    return f"/lab/{version}/{os_name}/{arch}/agent-cli-package.tar.gz"


def serve_package(server: DownloadServer, version: str, entries: list[Entry] | None = None) -> str:
    """Serve a package for linux/x64; returns its URL path."""
    path = package_path(version)
    server.files[path] = make_archive(entries if entries is not None else package_entries(version))
    return path
