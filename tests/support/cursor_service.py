"""A fake of Cursor's service on 127.0.0.1, as much of it as the CLI's credentials touch.

TLS with a test CA of its own (:class:`TestCa`, made with the runner's ``openssl``), one
certificate for every name it serves (Cursor's, and other names a test allows), HTTP/1.1 (h11)
and HTTP/2 (h2) by ALPN. What it answers (the shapes of the public reverse-engineering notes:
ConnectRPC, unary calls as ``application/proto``, streams as ``application/connect+proto`` in
5-byte envelopes, the last one flagged 0x02 with a JSON trailer):

- ``POST /auth/exchange_user_api_key``: the key (``{"apiKey": ...}`` in a JSON body, or
  ``Authorization: Bearer``) for ``{"accessToken", "refreshToken"}``, two HS256 JWTs signed with
  a secret of the service's (``type: api_key_token``, ``exp`` in an hour); 401 for another key.
  ``exchange_answer`` makes it answer otherwise (a 404, a page that is no JSON).
- ``POST /auth/refresh``: a refresh token (Bearer) for a new pair.
- ``POST /aiserver.v1.DashboardService/GetMe``: unary, bearer-checked (the signature
  verified): answers a protobuf message whose field 1 is the caller's e-mail, field 2 a new
  access token (a token handed back later, which the relay must mask too).
- ``POST /agent.v1.AgentService/RunSSE``: streaming, bearer-checked: for each request
  envelope, ``stream_messages`` envelopes of ``stream_bytes`` each, then the end of stream.
- ``POST /auth/session``: bearer-checked: a credential that is no JWT, handed back outside the
  exchange: ``{"sessionToken": <opaque>, "tokenType": "session", "expiresIn": 3600}`` and a
  ``set-cookie: session=<opaque>`` header (random URL-safe base64, as many services' are).
- ``POST /session/use``: answers 200 only when ``x-session-token`` is a session token it
  handed out; says whether the ``cookie`` header holds a session cookie it set.
- ``GET|POST /echo``: the request's headers and body as JSON (a reflection to try).

Every request is recorded (:attr:`FakeCursor.seen`): name, protocol, method, path, headers, body.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import secrets
import ssl
import struct
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h2.config
import h2.connection
import h2.events
import h11

KEY_PREFIX = "crsr_"


def make_key() -> str:
    """A key shaped like Cursor's: ``crsr_`` and 64 hex digits."""
    return KEY_PREFIX + secrets.token_hex(32)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class TestCa:
    """A CA of the test's and one server certificate for ``names``, in ``directory``."""

    directory: Path
    names: Sequence[str]

    def __post_init__(self) -> None:
        d = self.directory
        d.mkdir(parents=True, exist_ok=True)

        def run(*args: str) -> None:
            subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=30)

        run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", str(d / "test-ca.key"), "-out", str(d / "test-ca.pem"), "-days", "2",
            "-subj", "/CN=fake Cursor test CA", "-addext",
            "basicConstraints=critical,CA:true", "-addext", "keyUsage=critical,keyCertSign")
        run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", str(d / "server.key"), "-out", str(d / "server.csr"),
            "-subj", "/CN=fake Cursor")
        sans = ",".join(f"DNS:{name}" for name in self.names)
        (d / "ext.cnf").write_text(f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\n"
                                   "basicConstraints=critical,CA:false\n")
        run("x509", "-req", "-in", str(d / "server.csr"), "-CA", str(d / "test-ca.pem"),
            "-CAkey", str(d / "test-ca.key"), "-CAcreateserial", "-days", "2",
            "-extfile", str(d / "ext.cnf"), "-out", str(d / "server.pem"))

    @property
    def cert(self) -> Path:
        return self.directory / "test-ca.pem"

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.directory / "server.pem", self.directory / "server.key")
        context.set_alpn_protocols(["h2", "http/1.1"])

        def remember(sslobj: Any, name: str | None, _context: ssl.SSLContext) -> None:
            sslobj.sni = name or ""  # the name the client asked for, for the records

        context.sni_callback = remember
        return context


@dataclass
class Seen:
    name: str
    protocol: str
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes


def envelope(data: bytes, flags: int = 0) -> bytes:
    return struct.pack("!BI", flags, len(data)) + data


def envelopes(data: bytes) -> list[tuple[int, bytes]]:
    """The (flags, message) envelopes of a whole Connect stream body."""
    found, at = [], 0
    while at + 5 <= len(data):
        flags, length = struct.unpack_from("!BI", data, at)
        found.append((flags, data[at + 5: at + 5 + length]))
        at += 5 + length
    return found


def proto_string(field_number: int, value: bytes) -> bytes:
    """One length-delimited protobuf field (lengths under 16,384)."""
    length = len(value)
    varint = bytes([length]) if length < 0x80 else bytes([length & 0x7F | 0x80, length >> 7])
    return bytes([field_number << 3 | 2]) + varint + value


@dataclass
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    chunks: Sequence[bytes] = ()  # streamed after ``body``, each in its own write


@dataclass
class FakeCursor:
    """The service (see the module docstring), listening on 127.0.0.1 until :meth:`close`."""

    ca: TestCa
    key: str
    email: str = "dev@example.com"
    stream_messages: int = 3
    stream_bytes: int = 64
    exchange_answer: Answer | None = None
    seen: list[Seen] = field(default_factory=list)
    issued: list[str] = field(default_factory=list)  # every token handed out

    def __post_init__(self) -> None:
        self._secret = secrets.token_bytes(32)
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    # -- tokens ---------------------------------------------------------------------------

    def token(self, kind: str = "api_key_token") -> str:
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        payload = _b64(json.dumps({"sub": "user_1", "type": kind, "exp": int(time.time()) + 3600,
                                   "jti": secrets.token_hex(8)}).encode())
        signature = hmac.new(self._secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        token = f"{header}.{payload}.{_b64(signature)}"
        with self._lock:
            self.issued.append(token)
        return token

    def opaque(self) -> str:
        """A credential that is no JWT (recorded with the tokens handed out)."""
        token = secrets.token_urlsafe(32)
        with self._lock:
            self.issued.append(token)
        return token

    def valid(self, token: str, kind: str = "api_key_token") -> bool:
        parts = token.split(".")
        if len(parts) != 3:
            return False
        signature = hmac.new(self._secret, f"{parts[0]}.{parts[1]}".encode(),
                             hashlib.sha256).digest()
        if not hmac.compare_digest(_b64(signature), parts[2]):
            return False
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        return bool(payload.get("type") == kind and payload.get("exp", 0) > time.time())

    # -- answers --------------------------------------------------------------------------

    def answer(self, name: str, method: str, path: str, headers: list[tuple[str, str]],
               body: bytes) -> Answer:
        lower = {k.lower(): v for k, v in headers}
        bearer = lower.get("authorization", "").removeprefix("Bearer ").strip()
        json_type = [("content-type", "application/json")]
        if path == "/echo":
            echoed = json.dumps({"headers": headers, "body": body.decode("utf-8", "replace"),
                                 "name": name}).encode()
            return Answer(200, json_type, echoed)
        if path in ("/session/use", "/auth/session") and method == "POST":
            return self._session(path, lower)
        if path == "/auth/exchange_user_api_key" and method == "POST":
            return self._exchange(bearer, body)
        if path == "/auth/refresh" and method == "POST":
            if not self.valid(bearer, "refresh"):
                return Answer(401, json_type, b'{"error":"invalid refresh token"}')
            pair = {"accessToken": self.token(), "refreshToken": self.token("refresh")}
            return Answer(200, json_type, json.dumps(pair).encode())
        if not self.valid(bearer):
            return Answer(401, json_type, b'{"code":"unauthenticated","message":"bad token"}')
        if path == "/aiserver.v1.DashboardService/GetMe":
            message = proto_string(1, self.email.encode()) + proto_string(2, self.token().encode())
            return Answer(200, [("content-type", "application/proto")], message)
        if path == "/agent.v1.AgentService/RunSSE":
            requests = envelopes(body)
            chunks = []
            for _, message in requests:
                for i in range(self.stream_messages):
                    data = (message + b"|" + str(i).encode()).ljust(self.stream_bytes, b".")
                    chunks.append(envelope(data))
            chunks.append(envelope(b"{}", 0x02))
            return Answer(200, [("content-type", "application/connect+proto")], b"", chunks)
        return Answer(404, json_type, b'{"code":"not_found"}')

    def _exchange(self, bearer: str, body: bytes) -> Answer:
        """The key (JSON body or bearer) for a pair of tokens."""
        json_type = [("content-type", "application/json")]
        if self.exchange_answer is not None:
            return self.exchange_answer
        try:
            sent = json.loads(body or b"{}").get("apiKey", "")
        except (ValueError, AttributeError):
            sent = ""
        if self.key not in (sent, bearer):
            return Answer(401, json_type, b'{"error":"invalid api key"}')
        pair = {"accessToken": self.token(), "refreshToken": self.token("refresh")}
        return Answer(200, json_type, json.dumps(pair).encode())

    def _session(self, path: str, lower: dict[str, str]) -> Answer:
        """A session: handed out (a bearer checked), or used (see the module docstring)."""
        json_type = [("content-type", "application/json")]
        if path == "/auth/session":
            if not self.valid(lower.get("authorization", "").removeprefix("Bearer ").strip()):
                return Answer(401, json_type, b'{"code":"unauthenticated"}')
            said = {"sessionToken": self.opaque(), "tokenType": "session", "expiresIn": 3600}
            return Answer(200, [*json_type, ("set-cookie", f"session={self.opaque()}; Path=/; "
                                                           "HttpOnly; Secure")],
                          json.dumps(said).encode())
        with self._lock:
            issued = set(self.issued)
        cookies = dict(part.strip().partition("=")[::2]
                       for part in lower.get("cookie", "").split(";") if "=" in part)
        if lower.get("x-session-token", "") not in issued:
            return Answer(401, json_type, b'{"error":"invalid session token"}')
        said = {"ok": True, "cookie": cookies.get("session", "") in issued}
        return Answer(200, json_type, json.dumps(said).encode())

    def _record(self, seen: Seen) -> None:
        with self._lock:
            self.seen.append(seen)

    # -- serving --------------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(
            self._serve, "127.0.0.1", 0, ssl=self.ca.server_context()))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._server.close)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sslobj = writer.get_extra_info("ssl_object")
        name = getattr(sslobj, "sni", "") if sslobj is not None else ""
        try:
            if sslobj is not None and sslobj.selected_alpn_protocol() == "h2":
                await self._h2(name, reader, writer)
            else:
                await self._h1(name, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _h1(self, name: str, reader: asyncio.StreamReader,
                  writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER)
        while True:
            request: Any = None
            body = bytearray()
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    conn.receive_data(await reader.read(65536))
                    continue
                if isinstance(event, h11.ConnectionClosed):
                    return
                if isinstance(event, h11.Request):
                    request = event
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
            headers = [(k.decode(), v.decode()) for k, v in request.headers]
            method, path = request.method.decode(), request.target.decode()
            self._record(Seen(name, "http/1.1", method, path, headers, bytes(body)))
            answer = self.answer(name, method, path, headers, bytes(body))
            length = len(answer.body) + sum(len(c) for c in answer.chunks)
            writer.write(conn.send(h11.Response(status_code=answer.status, headers=[
                *answer.headers, ("content-length", str(length))])))
            writer.write(conn.send(h11.Data(data=answer.body)) if answer.body else b"")
            for chunk in answer.chunks:
                writer.write(conn.send(h11.Data(data=chunk)))
                await writer.drain()
            writer.write(conn.send(h11.EndOfMessage()))
            await writer.drain()
            if conn.our_state is h11.MUST_CLOSE:
                return
            conn.start_next_cycle()

    async def _h2(self, name: str, reader: asyncio.StreamReader,
                  writer: asyncio.StreamWriter) -> None:
        conn = h2.connection.H2Connection(h2.config.H2Configuration(
            client_side=False, header_encoding="utf-8"))
        conn.initiate_connection()
        writer.write(conn.data_to_send())
        streams: dict[int, tuple[list[tuple[str, str]], bytearray]] = {}
        pending: dict[int, list[bytes]] = {}
        while True:
            data = await reader.read(65536)
            if not data:
                return
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.RequestReceived):
                    streams[event.stream_id] = ([(str(k), str(v)) for k, v in event.headers],
                                                bytearray())
                elif isinstance(event, h2.events.DataReceived):
                    streams[event.stream_id][1].extend(event.data)
                    conn.acknowledge_received_data(event.flow_controlled_length,
                                                   event.stream_id)
                elif isinstance(event, h2.events.StreamEnded):
                    headers, body = streams.pop(event.stream_id)
                    pseudo = dict(h for h in headers if h[0].startswith(":"))
                    plain = [h for h in headers if not h[0].startswith(":")]
                    authority = pseudo.get(":authority", "")
                    self._record(Seen(name, "h2", pseudo.get(":method", ""),
                                      pseudo.get(":path", ""),
                                      [(":authority", authority), *plain], bytes(body)))
                    answer = self.answer(name, pseudo.get(":method", ""),
                                         pseudo.get(":path", ""),
                                         [(":authority", authority), *plain], bytes(body))
                    conn.send_headers(event.stream_id, [(":status", str(answer.status)),
                                                        *answer.headers])
                    pending[event.stream_id] = [answer.body, *answer.chunks, b""]
            self._h2_send(conn, pending)
            writer.write(conn.data_to_send())
            await writer.drain()

    @staticmethod
    def _h2_send(conn: h2.connection.H2Connection, pending: dict[int, list[bytes]]) -> None:
        for stream_id in list(pending):
            parts = pending[stream_id]
            while parts:
                if len(parts) == 1:  # the end
                    conn.end_stream(stream_id)
                    parts.clear()
                    break
                data = parts[0]
                room = min(conn.local_flow_control_window(stream_id),
                           conn.max_outbound_frame_size)
                if data and room <= 0:
                    break
                conn.send_data(stream_id, data[:room])
                if room < len(data):
                    parts[0] = data[room:]
                else:
                    parts.pop(0)
            if not parts:
                del pending[stream_id]


def with_service(directory: Path, names: Sequence[str], key: str,
                 **options: Any) -> FakeCursor:
    """A test CA for ``names`` in ``directory`` and the service behind it."""
    return FakeCursor(TestCa(directory, names), key, **options)

