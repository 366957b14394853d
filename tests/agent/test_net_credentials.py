"""The relay holds Cursor's credentials; the box holds placeholders (docs/security.md).

Real clients in the box (the box's resolver files and its view of the system bundle mounted,
its environment as the jail builds it: ``CURSOR_API_KEY`` a placeholder, the trust variables
on the box's files) talk to a fake of Cursor's service (tests/support/cursor_service.py) through
the wall, HTTP/1.1 and HTTP/2: the key exchange, a bearer-checked unary call, a stream, a
refresh, all succeed, and every token and key the clients see is a placeholder. The attacks a
hostile pull request would try (a placeholder sent to another allowed name, a Host or
:authority that is not the TLS name, an absolute URI, CONNECT over HTTP/2, HTTP/2 coalescing,
a reflection of the key through an echo) get no credential.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_action.agent.contain.box.net import trust
from cursor_agent_action.agent.contain.box.net.ca import RunCa
from cursor_agent_action.agent.contain.box.net.credentials import Credentials
from cursor_agent_action.agent.contain.box.net.placeholders import key_placeholder
from cursor_agent_action.agent.contain.box.net.policy import DEFAULT_DOMAINS, build_policy
from cursor_agent_action.agent.contain.box.net.relay import HOSTS_TEXT, Wall
from cursor_agent_action.agent.contain.box.net.upstream import RunnerProxy
from tests.agent.test_net_upstream import real_proxy
from tests.support.cursor_service import FakeCursor, make_key, with_service
from tests.support.netbox import BoxedRun, Emit, fixed_resolver, loopback_names, run_boxed

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not sys.platform.startswith("linux") or not shutil.which("openssl"),
    reason="network namespaces (root on Linux) and openssl")

CURSOR = ("api2.cursor.sh", "agent.cursor.sh")
OTHER = "elsewhere.example"


@dataclass
class Rig:
    service: FakeCursor
    key: str
    placeholder: str
    ca: RunCa
    test_ca: Path
    port: int

    def secrets(self) -> list[str]:
        """The real key and every token the service handed out."""
        return [self.key, *self.service.issued]


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    key = make_key()
    service = with_service(tmp_path / "service", [*CURSOR, OTHER], key)
    ca = RunCa.make(tmp_path / "run-ca", DEFAULT_DOMAINS)
    try:
        yield Rig(service, key, key_placeholder(key), ca, service.ca.cert, service.port)
    finally:
        service.close()
        ca.destroy()


def _boxed(tmp_path: Path, rig: Rig, commands: dict[str, list[str]], timeout_s: float = 90,
           proxy: RunnerProxy | None = None) -> tuple[dict[str, tuple[int, str]], BoxedRun]:
    """Each command run in the box, as the agent's tools are (the relay through the runner's
    ``proxy`` when there is one)."""
    port = rig.port
    policy = dataclasses.replace(build_policy([f"{name}:{port}" for name in (*CURSOR, OTHER)]),
                                 proxy=proxy)
    files = tmp_path / "box-files"
    files.mkdir(exist_ok=True)
    (files / "resolv.conf").write_text(Wall.resolv_conf_text())
    (files / "hosts").write_text(HOSTS_TEXT)
    # What the runner trusted: its bundle and, for the other name, the test's CA.
    runner_bundle = files / "runner-bundle.pem"
    runner_bundle.write_bytes(Path(trust.base_bundle({})).read_bytes() + rig.test_ca.read_bytes())
    runner_env = {"SSL_CERT_FILE": str(runner_bundle), "NODE_EXTRA_CA_CERTS": str(rig.test_ca)}
    shown = trust.write_files(files, rig.ca.certificate, runner_env)
    env = trust.environment({"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                             "HOME": str(tmp_path), "CURSOR_API_KEY": rig.placeholder,
                             "CAA_PORT": str(port), "CAA_OTHER": OTHER})
    credentials = Credentials(rig.key, rig.placeholder, trust_file=str(rig.test_ca),
                              patterns=DEFAULT_DOMAINS)
    # Through a proxy the relay never resolves the names itself (the proxy does).
    resolve = fixed_resolver({} if proxy else {name: ["127.0.0.1"] for name in (*CURSOR, OTHER)})

    def client(emit: Emit) -> Any:
        return {label: _in_box(files, shown, command, env) for label, command in commands.items()}

    run = run_boxed(policy, client, resolve=resolve, timeout_s=timeout_s,
                    masking=(credentials, rig.ca))
    return {k: (v[0], v[1]) for k, v in run.result.items()}, run


def _in_box(files: Path, shown: dict[str, str], command: list[str],
            env: dict[str, str]) -> tuple[int, str]:
    """``command`` with the box's resolver files and trust files mounted where the jail mounts
    them (its /tmp a tmpfs of its own: the files reached through /mnt once it covers them)."""
    binds = ['mount --bind "$1/resolv.conf" /etc/resolv.conf',
             'mount --bind "$1/hosts" /etc/hosts', 'mount --bind "$1" /mnt',
             "mount -t tmpfs tmpfs /tmp"]
    for target, source in sorted(shown.items()):
        here = f"/mnt/{os.path.basename(source)}"
        if not target.startswith("/etc/"):
            binds.append(f"mkdir -p '{os.path.dirname(target)}' && touch '{target}'")
        binds.append(f"mount --bind '{here}' '{target}'")
    script = " && ".join(binds) + ' && shift && exec "$@"'
    done = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(files), *command],
                          capture_output=True, text=True, timeout=60, env=env, check=False)
    return done.returncode, (done.stdout + done.stderr)[-6000:]


# -- the clients (tests/fixtures/credentials: each prints what it saw as JSON) --------------------

CLIENTS = Path(__file__).resolve().parents[1] / "fixtures" / "credentials"





def _payload(token: str) -> dict[str, Any]:
    part = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))))


def _check_client(label: str, result: tuple[int, str], rig: Rig) -> dict[str, Any]:
    code, output = result
    assert code == 0, (label, output)
    out: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    status, body = out["exchange"][0], out["exchange"][1]
    assert status == 200, (label, out)
    tokens = json.loads(body)
    for token in tokens.values():
        assert token not in rig.service.issued, f"{label}: a real token reached the box"
        assert _payload(token)["exp"] > 0  # a JWT still: its header and payload kept
    assert out["me"][0] == 200, (label, out)
    assert "dev@example.com" in out["me"][1], (label, out)
    if "stream" in out:
        assert out["stream"][0] == 200, (label, out)
        assert "hello|2" in out["stream"][1], (label, out)
        assert "again|0" in out["stream"][1], (label, out)
    for secret in rig.secrets():
        assert secret not in output, f"{label}: a real value reached the box"
    return out


def test_python_clients_exchange_call_and_stream_with_placeholders_only(
        tmp_path: Path, rig: Rig) -> None:
    python = [sys.executable, "-I", str(CLIENTS / "client.py")]
    results, run = _boxed(tmp_path, rig, {"urllib": [*python, "urllib"],
                                          "httpx": [*python, "httpx"]})
    for label in ("urllib", "httpx"):
        out = _check_client(label, results[label], rig)
        assert out["refresh"][0] == 200, (label, out)
        assert out["me again"][0] == 200, (label, out)
        echoed = json.loads(out["echo"][1])
        assert rig.key not in out["echo"][1]  # the echo of the key came back masked
        assert rig.placeholder in json.dumps(echoed["headers"])
    assert json.loads(results["httpx"][1].splitlines()[-1])["exchange"][2] == "HTTP/2"
    protocols = {seen.protocol for seen in rig.service.seen}
    assert protocols == {"h2", "http/1.1"}
    exchanges = [seen for seen in rig.service.seen if seen.path.startswith("/auth/exchange")]
    assert exchanges
    assert all(json.loads(seen.body)["apiKey"] == rig.key for seen in exchanges)
    assert run.mask is not None
    assert run.mask.exchanges == 2
    assert run.mask.requests >= 12
    assert run.mask.certificate_refused == 0
    assert not run.mask.exchange_error


@pytest.mark.skipif(not shutil.which("node"), reason="node is not installed")
def test_node_clients_trust_the_run_ca_through_node_extra_ca_certs(
        tmp_path: Path, rig: Rig) -> None:
    results, _ = _boxed(tmp_path, rig, {mode: ["node", str(CLIENTS / "client.js"), mode]
                                        for mode in ("https", "fetch", "http2")})
    for label, result in results.items():
        _check_client(f"node {label}", result, rig)
    assert any(seen.protocol == "h2" for seen in rig.service.seen)


@pytest.mark.skipif(not shutil.which("curl"), reason="curl is not installed")
def test_curl_http2_trusts_the_run_ca_through_the_boxs_system_bundle(
        tmp_path: Path, rig: Rig) -> None:
    results, _ = _boxed(tmp_path, rig, {"curl": ["sh", str(CLIENTS / "client.sh")]})
    out = _check_client("curl", results["curl"], rig)
    assert out["exchange"][2] == "2"


def test_attacks_get_no_credential(tmp_path: Path, rig: Rig) -> None:
    """Each way a hostile agent would try to have the relay put the key where it can read
    it, or send it elsewhere: the other name gets the placeholder, the misdirected requests
    are refused before anything reaches the service, the echo hands back placeholders."""
    attacks = [sys.executable, "-I", str(CLIENTS / "attacks.py")]
    results, run = _boxed(tmp_path, rig, {"attacks": attacks})
    code, output = results["attacks"]
    assert code == 0, output
    out = json.loads(output.strip().splitlines()[-1])
    for secret in rig.secrets():
        assert secret not in output
    # Another allowed name: passed through (not terminated), the placeholder as it was sent.
    assert " 200 " in out["other name"].split("\r\n")[0], out["other name"]
    other = [seen for seen in rig.service.seen if seen.name == OTHER]
    assert other, rig.service.seen
    assert all(rig.placeholder in seen.body.decode() for seen in other)
    for label in ("host", "absolute"):
        assert out[label].startswith("HTTP/1.1 421 "), (label, out[label])
    assert out["connect h1"].startswith("HTTP/1.1 405 "), out["connect h1"]
    assert out["connect h2"][0] == "405", out["connect h2"]
    assert out["coalesce other"][0] == "421", out["coalesce other"]
    assert out["coalesce cursor"][0] == "421", out["coalesce cursor"]
    # Nothing misdirected reached the service; the echo on Cursor's name came back masked.
    cursor = [seen for seen in rig.service.seen if seen.name != OTHER]
    assert [seen.path for seen in cursor] == ["/echo", "/echo"], cursor
    echo, prompt = sorted(cursor, key=lambda seen: seen.name != "api2.cursor.sh")
    assert dict(echo.headers)["x-key"] == rig.key  # swapped in a header to Cursor ...
    assert out["echo h2"][0] == "200"
    assert rig.placeholder in out["echo h2"][1]  # ... and masked on the way back
    assert echo.body == rig.placeholder.encode()  # a body other than the exchange's: as sent
    assert rig.placeholder.encode() in prompt.body  # a prompt reaches the model as it is
    refused = {entry.kind for entry in run.report.refused}
    assert refused == {"sni-mismatch"}, run.report.refused


def test_the_relay_reaches_cursor_through_the_runners_proxy(tmp_path: Path, rig: Rig) -> None:
    """A self-hosted runner's proxy (proxy.py on loopback, which resolves the names itself:
    added to the runner's /etc/hosts): the relay's TLS to Cursor goes through its tunnel."""
    python = [sys.executable, "-I", str(CLIENTS / "client.py")]
    with loopback_names([*CURSOR, OTHER]), real_proxy(tmp_path) as port:
        proxy = RunnerProxy.from_environ({"HTTPS_PROXY": f"http://127.0.0.1:{port}"})
        results, run = _boxed(tmp_path, rig, {"httpx": [*python, "httpx"]}, proxy=proxy)
    _check_client("httpx", results["httpx"], rig)
    assert run.mask is not None
    assert run.mask.exchanges == 1
    assert run.mask.terminated == 2  # api2 and agent.cursor.sh, each through the proxy


# -- compressed answers (the red team's first finding) ------------------------------------------


def _compressing(always: bool) -> Any:
    """The fake service's answers gzip-compressed when the request asks for gzip (as real
    servers do), or ``always`` (a server that ignores what it was asked)."""
    plain = FakeCursor.answer

    def answer(self: FakeCursor, name: str, method: str, path: str,  # noqa: PLR0917 (its)
               headers: list[tuple[str, str]], body: bytes) -> Any:
        done = plain(self, name, method, path, headers, body)
        asked = {k.lower(): v for k, v in headers}.get("accept-encoding", "")
        if not (always or "gzip" in asked):
            return done
        data = gzip.compress(done.body + b"".join(done.chunks))
        return dataclasses.replace(done, headers=[*done.headers, ("content-encoding", "gzip")],
                                   body=data, chunks=())

    return answer


@pytest.mark.parametrize("always", [False, True], ids=["asked", "unasked"])
@pytest.mark.parametrize("version", ["h1", "h2"])
def test_a_compressed_answer_never_carries_the_key_or_a_token_into_the_box(
    tmp_path: Path, rig: Rig, monkeypatch: pytest.MonkeyPatch, version: str, always: bool
) -> None:
    """The relay swaps values in the bytes it reads: a gzip answer (asked for by the agent, or
    by httpx and Node's fetch by default) carried the real refresh token and the echoed key
    into the box. Now nothing asks for a coding upstream, and a coded answer is refused whole."""
    monkeypatch.setattr(FakeCursor, "answer", _compressing(always))
    results, run = _boxed(tmp_path, rig, {
        "client": [sys.executable, "-I", str(CLIENTS / "coded.py"), version]})
    _, output = results["client"]
    assert [secret for secret in rig.secrets() if secret in output] == []
    if not always:  # asked for by the client only: identity upstream, and all works
        assert rig.placeholder in output, output
        assert "cannot read" not in str(run.mask)


HANG_UP = """
import os, socket, ssl
port = int(os.environ["CAA_PORT"])
for _ in range(3):
    context = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="api2.cursor.sh")
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    with socket.create_connection(("api2.cursor.sh", port), timeout=10) as sock:
        sock.sendall(outgoing.read())  # the ClientHello, then gone before the answer
print("hung up")
"""


def test_a_client_that_hangs_up_in_the_handshake_is_no_refusal(
    tmp_path: Path, rig: Rig
) -> None:
    """A refusal of the relay's certificate is what lets a masked run start again with the key
    in the box: a hang-up, which any program in the box can make, must not count as one (the
    red team's fourth finding)."""
    results, run = _boxed(tmp_path, rig, {"hang": [sys.executable, "-I", "-c", HANG_UP]})
    assert "hung up" in results["hang"][1], results["hang"][1]
    assert run.mask is not None
    assert run.mask.certificate_refused == 0
    assert not run.mask.may_fall_back


# -- credentials that are no JWT --------------------------------------------------------------


@pytest.mark.parametrize("version", ["h1", "h2"])
def test_a_credential_that_is_no_jwt_never_reaches_the_box(
        tmp_path: Path, rig: Rig, version: str) -> None:
    """The agent reads what Cursor hands back outside the exchange: a ``sessionToken`` field
    holding an opaque token (random URL-safe base64, no JWT) and a session cookie. Before, only
    the exchange's fields and JWT-shaped values were masked: both reached the box as they are.
    Now the box sees placeholders of the same length and alphabet, and a later request carrying
    them (a header, a cookie) reaches Cursor with the real values."""
    results, run = _boxed(tmp_path, rig, {
        "agent": [sys.executable, "-I", str(CLIENTS / "opaque.py"), version]})
    code, output = results["agent"]
    assert code == 0, output
    out = json.loads(output.strip().splitlines()[-1])
    status, body, cookie, protocol = out["session"]
    assert status == 200, out
    assert protocol == ("HTTP/2" if version == "h2" else "HTTP/1.1")
    opaque = [token for token in rig.service.issued if "." not in token]
    assert len(opaque) == 2, rig.service.issued  # the session token and the cookie's
    assert [secret for secret in rig.secrets() if secret in output] == []
    seen = json.loads(body)["sessionToken"]
    assert len(seen) == len(opaque[0])
    assert set(seen) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert cookie.startswith("session=")
    assert cookie.endswith("; Path=/; HttpOnly; Secure")
    # Used again through the relay: Cursor gets the real values back.
    assert out["use"][0] == 200, out
    assert json.loads(out["use"][1]) == {"ok": True, "cookie": True}
    used = [seen for seen in rig.service.seen if seen.path == "/session/use"]
    assert [dict(seen.headers)["x-session-token"] for seen in used] == [opaque[0]]
    assert run.mask is not None
    assert not run.mask.exchange_error
