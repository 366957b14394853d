"""Ordinary clients through the wall, as the agent's tools run them (the box's resolver files
mounted, names resolved by the box's resolver): curl over http, https and ``--http2``,
Python's urllib, httpx, git over https (a dumb HTTP server), pip (a simple index), npm (a
package tarball), node's fetch; a websocket over
TLS (``wss://``) passes, one over plain HTTP (``ws://``) is refused. Each with the relay
going direct and through a real runner's proxy (proxy.py) on loopback.

The servers listen on the runner's 127.0.0.1 under a name added to the runner's /etc/hosts
(the proxy resolves it by itself), restored byte for byte after.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.server
import io
import json
import os
import shutil
import ssl
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_action.agent.contain.box.net.policy import NetPolicy, build_policy
from cursor_agent_action.agent.contain.box.net.relay import HOSTS_TEXT, Wall
from cursor_agent_action.agent.contain.box.net.upstream import RunnerProxy
from tests.agent.test_net_upstream import real_proxy
from tests.support.loopback import serving
from tests.support.netbox import Emit, loopback_name, run_boxed, self_signed

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not sys.platform.startswith("linux"),
                                reason="network namespaces: root on Linux (CI here is root)")
NAME = "caa-net-clients.example"
GIT = ["git", "-c", "protocol.version=2", "-c", "init.defaultBranch=main"]


@pytest.fixture(scope="module")
def hosts_name() -> Iterator[str]:
    with loopback_name(NAME) as name:
        yield name


def _site(root: Path) -> Path:
    """A directory to serve: hello.txt and a bare repository git clones over dumb HTTP."""
    site = root / "site"
    work = root / "work"
    site.mkdir()
    (site / "hello.txt").write_text("hello through the wall\n")
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example"}
    subprocess.run([*GIT, "init", "-q", str(work)], check=True, env=env)
    (work / "README").write_text("cloned\n")
    subprocess.run([*GIT, "-C", str(work), "add", "README"], check=True, env=env)
    subprocess.run([*GIT, "-C", str(work), "commit", "-qm", "one"], check=True, env=env)
    subprocess.run([*GIT, "clone", "-q", "--bare", str(work), str(site / "repo.git")],
                   check=True, env=env)
    subprocess.run([*GIT, "-C", str(site / "repo.git"), "update-server-info"], check=True,
                   env=env)
    _packages(site)
    return site


def _packages(site: Path) -> None:
    """A wheel behind a simple index (pip) and a package tarball (npm)."""
    wheel = site / "tinypkg_caa-0.1-py3-none-any.whl"
    info = "tinypkg_caa-0.1.dist-info"
    files = {"tinypkg_caa/__init__.py": "",
             f"{info}/METADATA": "Metadata-Version: 2.1\nName: tinypkg-caa\nVersion: 0.1\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}
    record = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in {**files, f"{info}/RECORD": record}.items():
            archive.writestr(name, text)
    index = site / "simple" / "tinypkg-caa"
    index.mkdir(parents=True)
    (index / "index.html").write_text(f'<a href="../../{wheel.name}">{wheel.name}</a>\n')
    package = json.dumps({"name": "tinypkg-caa", "version": "0.1.0"}).encode()
    with tarfile.open(site / "tinypkg-caa-0.1.0.tgz", "w:gz") as archive:
        entry = tarfile.TarInfo("package/package.json")
        entry.size = len(package)
        archive.addfile(entry, io.BytesIO(package))


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Files, and a websocket echo of one frame at /ws."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path != "/ws":
            super().do_GET()
            return
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1(  # noqa: S324 - RFC 6455 names SHA-1
            (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        head = self.rfile.read(2)
        length = head[1] & 0x7F
        mask = self.rfile.read(4)
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(length)))
        self.wfile.write(bytes([0x81, len(data)]) + data)
        self.wfile.flush()
        self.close_connection = True


@contextlib.contextmanager
def _serve(site: Path, context: ssl.SSLContext | None) -> Iterator[int]:
    def handler(*args: Any) -> _Handler:
        return _Handler(*args, directory=str(site))

    with serving(handler, tls=context, quiet=True) as server:  # quiet: a refused ws is reset
        yield server.port


def _in_box(files: Path, command: list[str], env: dict[str, str]) -> tuple[int, str]:
    """``command`` with the box's resolv.conf and hosts mounted, as the agent's tools run."""
    script = ('mount --bind "$1/resolv.conf" /etc/resolv.conf && '
              'mount --bind "$1/hosts" /etc/hosts && shift && exec "$@"')
    done = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(files), *command],
                          capture_output=True, text=True, timeout=60, env=env, check=False)
    return done.returncode, (done.stdout + done.stderr)[-2000:]


def _matrix(tmp_path: Path, policy: NetPolicy) -> dict[str, tuple[int, str]]:
    cert, key = self_signed(tmp_path, NAME)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    files = tmp_path / "resolver"
    files.mkdir()
    (files / "resolv.conf").write_text(Wall.resolv_conf_text())
    (files / "hosts").write_text(HOSTS_TEXT)
    site = _site(tmp_path)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "SSL_CERT_FILE": str(cert), "NODE_EXTRA_CA_CERTS": str(cert),
           "GIT_SSL_CAINFO": str(cert), "GIT_CONFIG_NOSYSTEM": "1"}
    with _serve(site, None) as plain, _serve(site, context) as secure:
        policy = NetPolicy(build_policy([f"{NAME}:{plain}", f"{NAME}:{secure}"]).rules,
                           proxy=policy.proxy)
        http, https = f"http://{NAME}:{plain}", f"https://{NAME}:{secure}"
        python = [sys.executable, "-I", "-c"]
        commands = {
            "curl http": ["curl", "-sSf", f"{http}/hello.txt"],
            "curl https": ["curl", "-sSf", "--cacert", str(cert), f"{https}/hello.txt"],
            "curl --http2 http": ["curl", "-sSf", "--http2", f"{http}/hello.txt"],
            "curl --http2 https": ["curl", "-sSf", "--http2", "--cacert", str(cert),
                                   f"{https}/hello.txt"],
            "urllib": [*python, "import urllib.request, sys; sys.stdout.write(urllib.request."
                       f"urlopen('{https}/hello.txt').read().decode())"],
            "httpx": [*python, f"import httpx; print(httpx.get('{https}/hello.txt', "
                      f"verify='{cert}').text)"],
            "git https": [*GIT, "clone", "-q", f"{https}/repo.git", str(tmp_path / "clone")],
            "pip": [sys.executable, "-I", "-m", "pip", "download", "-q", "--no-deps",
                    "--no-cache-dir", "--disable-pip-version-check", "--cert", str(cert),
                    "--index-url", f"{https}/simple/", "-d", str(tmp_path / "pip"),
                    "tinypkg-caa"],
            "wss": [*python, _WSS.format(port=secure, name=NAME, cert=cert, tls=True)],
            "ws": [*python, _WSS.format(port=plain, name=NAME, cert=cert, tls=False)],
        }
        if shutil.which("node"):
            commands["node fetch"] = ["node", "-e", f"fetch('{https}/hello.txt')"
                                      ".then(r => r.text()).then(t => process.stdout.write(t))"]
        if shutil.which("npm"):
            commands["npm"] = ["npm", "install", "--silent", "--no-audit", "--no-fund",
                               "--prefix", str(tmp_path / "npm"), "--cafile", str(cert),
                               "--registry", f"{https}/", f"{https}/tinypkg-caa-0.1.0.tgz"]

        def client(emit: Emit) -> Any:
            return {label: _in_box(files, command, env) for label, command in commands.items()}

        run = run_boxed(policy, client, timeout_s=120)
    results: dict[str, tuple[int, str]] = {k: tuple(v) for k, v in run.result.items()}
    results["git clone"] = (0, (tmp_path / "clone" / "README").read_text()) if (
        tmp_path / "clone" / "README").exists() else (1, "no clone")
    results["pip file"] = (0, "") if list((tmp_path / "pip").glob("*.whl")) else (1, "none")
    installed = tmp_path / "npm" / "node_modules" / "tinypkg-caa" / "package.json"
    results["npm file"] = (0, "") if installed.exists() or "npm" not in results else (1, "none")
    results["refused"] = (0, repr(run.report.refused))
    return results


_WSS = """
import base64, os, socket, ssl, sys
sock = socket.create_connection(('{name}', {port}), timeout=10)
if {tls}:
    sock = ssl.create_default_context(cafile='{cert}').wrap_socket(sock, server_hostname='{name}')
key = base64.b64encode(os.urandom(16)).decode()
sock.sendall(('GET /ws HTTP/1.1\\r\\nHost: {name}:{port}\\r\\nUpgrade: websocket\\r\\n'
              'Connection: Upgrade\\r\\nSec-WebSocket-Version: 13\\r\\nSec-WebSocket-Key: '
              + key + '\\r\\n\\r\\n').encode())
answer = b''
while b'\\r\\n\\r\\n' not in answer:
    chunk = sock.recv(4096)
    if not chunk:
        sys.exit('closed: ' + answer.decode('latin-1'))
    answer += chunk
if b' 101 ' not in answer.split(b'\\r\\n')[0]:
    sys.exit('no upgrade: ' + answer.decode('latin-1'))
sock.sendall(bytes([0x81, 0x80 | 4]) + bytes(4) + b'ping')
print(sock.recv(100)[2:].decode())
"""

EXPECTED_OK = ("curl http", "curl https", "curl --http2 http", "curl --http2 https", "urllib",
               "httpx", "git https", "wss", "node fetch", "pip", "npm")
QUIET = ("wss", "git https", "pip", "npm")


def _check(results: dict[str, tuple[int, str]]) -> None:
    for label in EXPECTED_OK:
        if label not in results:
            continue
        code, out = results[label]
        assert code == 0, (label, out)
        assert label in QUIET or "hello through the wall" in out, (label, out)
    assert results["wss"][1].strip() == "ping"
    assert results["git clone"] == (0, "cloned\n")
    assert results["pip file"][0] == 0
    assert results["npm file"][0] == 0
    assert results["ws"][0] != 0  # a plain-HTTP upgrade is refused
    assert "protocol upgrade" in results["refused"][1]


def test_clients_reach_their_servers_through_the_wall(tmp_path: Path, hosts_name: str) -> None:
    _check(_matrix(tmp_path, build_policy([])))


def test_clients_reach_their_servers_through_the_wall_and_the_runners_proxy(
        tmp_path: Path, hosts_name: str) -> None:
    with real_proxy(tmp_path) as port:
        proxy = RunnerProxy.from_environ({"HTTPS_PROXY": f"http://127.0.0.1:{port}",
                                          "HTTP_PROXY": f"http://127.0.0.1:{port}"})
        _check(_matrix(tmp_path, NetPolicy((), proxy=proxy)))
