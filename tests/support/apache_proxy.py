"""A real authenticated forward proxy on the runner's loopback: Debian's Apache 2.4 with
mod_proxy, Basic authentication and its default ``TraceEnable On`` (installed by ``.ci/run``;
tests skip with the reason when it is missing)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

APACHE = shutil.which("apache2") or "/usr/sbin/apache2"
MODULES = Path("/usr/lib/apache2/modules")
_NEEDED = ("mpm_prefork", "authz_core", "authn_core", "authn_file", "auth_basic", "authz_user",
           "proxy", "proxy_http", "proxy_connect")
MISSING = ("" if os.path.exists(APACHE) and all(
    (MODULES / f"mod_{name}.so").exists() for name in _NEEDED)
    else "Debian's apache2 is not installed (.ci/run installs it)")


@dataclass(frozen=True)
class AuthProxy:
    port: int
    user: str
    password: str
    log: Path

    @property
    def url(self) -> str:
        return f"http://{self.user}:{self.password}@127.0.0.1:{self.port}"

    @property
    def secrets(self) -> tuple[bytes, ...]:
        """The forms in which its credentials could come back."""
        pair = f"{self.user}:{self.password}".encode()
        return pair, base64.b64encode(pair), self.password.encode()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def auth_proxy(connect_ports: list[int]) -> Iterator[AuthProxy]:
    """Apache as a forward proxy that wants ``Proxy-Authorization`` for everything and allows
    ``CONNECT`` to ``connect_ports``; stopped (its process group) and removed afterwards."""
    where = Path(tempfile.mkdtemp(prefix="caa-apache-"))
    where.chmod(0o755)  # Apache's worker runs as nobody and reads the password file
    user, password = "runner", "proxy-pw-" + os.urandom(6).hex()
    digest = base64.b64encode(hashlib.sha1(password.encode()).digest()).decode()  # noqa: S324
    (where / "htpasswd").write_text(f"{user}:{{SHA}}{digest}\n")
    (where / "htpasswd").chmod(0o644)
    port = _free_port()
    modules = "\n".join(f"LoadModule {name}_module {MODULES}/mod_{name}.so" for name in _NEEDED)
    (where / "httpd.conf").write_text(f"""{modules}
ServerName localhost
ServerRoot {where}
DefaultRuntimeDir {where}
PidFile {where}/pid
Listen 127.0.0.1:{port}
User nobody
Group nogroup
ErrorLog {where}/error.log
LogLevel warn
TraceEnable On
ProxyRequests On
AllowCONNECT {' '.join(map(str, connect_ports))}
<Proxy "*">
  AuthType Basic
  AuthName "runner proxy"
  AuthBasicProvider file
  AuthUserFile {where}/htpasswd
  Require valid-user
</Proxy>
""")
    process = subprocess.Popen([APACHE, "-X", "-f", str(where / "httpd.conf")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if process.poll() is not None:
                raise RuntimeError("apache2 did not start: "
                                   + (where / "error.log").read_text(errors="replace"))
            time.sleep(0.1)
        yield AuthProxy(port, user, password, where / "error.log")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)
        process.wait(10)
        shutil.rmtree(where, ignore_errors=True)
