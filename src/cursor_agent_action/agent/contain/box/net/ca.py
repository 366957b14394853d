"""The run's own certificate authority, for the relay's TLS to the agent on Cursor's names.

Made by the box's root side before the agent starts, outside the box: its private key is in a
directory of root's (0700) that the box never shows (the box's area under the helper's state,
masked), on a tmpfs of the root side's own mount namespace where it can, and it is gone with
that namespace when the run ends. The box sees the certificate only (:mod:`.trust`).

The certificate is name-constrained (RFC 5280 Name Constraints, critical): it may vouch for
Cursor's domains only (:func:`permitted_domains`), never for an IP address, and is valid from
a minute before it was made until the run's end (:data:`LIFETIME_S`). A leaf is issued for each
name the agent asks for (its SNI, one of Cursor's names), on first use, with one key of its own.

Made with the runner's ``openssl`` (every GitHub-hosted and most self-hosted Linux runners have
it): it costs nothing at set-up, where a Python library (``cryptography``, 4 MB of wheels)
would add about a second (bench/README.md, "set-up"). ``openssl ca`` is used because it alone,
in the OpenSSL 3.0 of Ubuntu 22.04 and 24.04, sets a validity to the second.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

LIFETIME_S = 6 * 3600 + 600
"""A job lasts at most 6 hours on GitHub's runners; the CA is made when the box starts."""
MAX_LEAVES = 64
"""Names a run may ask for (each one leaf); more is refused (the agent could make the relay
sign names without end)."""
OPENSSL_TIMEOUT_S = 20.0
CA_FILE = "ca.pem"


class CaError(Exception):
    """The CA could not be made, or a leaf not issued (``openssl`` missing or failing)."""


def permitted_domains(patterns: Sequence[str]) -> tuple[str, ...]:
    """The DNS subtrees of the Name Constraints: each pattern's domain (``*.cursor.sh``:
    ``cursor.sh``), without one already under another."""
    domains = sorted({pattern.removeprefix("*.") for pattern in patterns}, key=len)
    kept: list[str] = []
    for domain in domains:
        if not any(domain == other or domain.endswith("." + other) for other in kept):
            kept.append(domain)
    return tuple(kept)


_NO_ADDRESSES = "excluded;IP:0.0.0.0/0.0.0.0, excluded;IP:0:0:0:0:0:0:0:0/0:0:0:0:0:0:0:0"
"""No certificate under the CA may name an IP address (v4 or v6)."""


def _config(directory: Path, domains: Sequence[str]) -> str:
    permitted = ", ".join(f"permitted;DNS:{domain}" for domain in domains)
    return f"""[ca]
default_ca = run

[run]
dir = {directory}
database = $dir/index.txt
new_certs_dir = $dir/issued
rand_serial = yes
default_md = sha256
policy = any
unique_subject = no
copy_extensions = none
email_in_dn = no
preserve = yes

[any]
commonName = supplied

[req]
distinguished_name = dn
prompt = no

[dn]
CN = cursor-agent-action

[authority]
basicConstraints = critical, CA:true, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
nameConstraints = critical, {permitted}, {_NO_ADDRESSES}

[leaf]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = DNS:${{ENV::CAA_LEAF_NAME}}
"""


def _utc(seconds: float) -> str:
    return time.strftime("%Y%m%d%H%M%SZ", time.gmtime(seconds))


@dataclass
class RunCa:
    """One run's CA in ``directory`` (root's, 0700): its certificate (PEM), and leaves."""

    directory: Path
    certificate: bytes
    not_after: float
    openssl: str

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._contexts: dict[tuple[str, tuple[str, ...]], ssl.SSLContext] = {}
        self._leaves: dict[str, Path] = {}

    @classmethod
    def make(cls, directory: Path, patterns: Sequence[str], *,
             lifetime_s: float = LIFETIME_S) -> RunCa:
        """A new CA in ``directory`` (made 0700 if it does not exist; it must hold nothing) for
        Cursor's ``patterns``. Raises :class:`CaError`."""
        openssl = shutil.which("openssl")
        if openssl is None:
            raise CaError("no openssl on the runner's PATH (it makes the run's certificate "
                          "authority)")
        directory.mkdir(mode=0o700, exist_ok=True)
        directory.chmod(0o700)
        if any(directory.iterdir()):
            raise CaError(f"{directory} is not empty")
        (directory / "issued").mkdir(mode=0o700)
        (directory / "index.txt").write_bytes(b"")
        (directory / "openssl.cnf").write_text(
            _config(directory, permitted_domains(patterns)), encoding="utf-8")
        now = time.time()
        ca = cls(directory, b"", now + lifetime_s, openssl)
        for key in ("ca.key", "leaf.key"):
            ca._openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-out", str(directory / key))
        ca._openssl("req", "-new", "-config", str(directory / "openssl.cnf"), "-key",
                    str(directory / "ca.key"), "-out", str(directory / "ca.csr"))
        ca._openssl("req", "-new", "-config", str(directory / "openssl.cnf"), "-key",
                    str(directory / "leaf.key"), "-out", str(directory / "leaf.csr"))
        ca._openssl("ca", "-batch", "-notext", "-selfsign", "-config",
                    str(directory / "openssl.cnf"), "-keyfile", str(directory / "ca.key"),
                    "-in", str(directory / "ca.csr"), "-extensions", "authority",
                    "-subj", "/CN=cursor-agent-action run CA (Cursor's names only)",
                    "-startdate", _utc(now - 60), "-enddate", _utc(ca.not_after),
                    "-out", str(directory / CA_FILE), leaf="-")
        ca.certificate = (directory / CA_FILE).read_bytes()
        return ca

    def _openssl(self, *args: str, leaf: str = "-") -> None:
        env = {"PATH": os.environ.get("PATH", os.defpath), "CAA_LEAF_NAME": leaf,
               "OPENSSL_CONF": str(self.directory / "openssl.cnf")}
        try:
            done = subprocess.run([self.openssl, *args], env=env, capture_output=True,
                                  check=False, timeout=OPENSSL_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CaError(f"openssl {args[0]} failed: {exc}") from exc
        if done.returncode != 0:
            last = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            raise CaError(f"openssl {args[0]} failed: {last[0][:200]}")

    def leaf(self, name: str) -> Path:
        """The certificate file of ``name`` (issued on first use; at most
        :data:`MAX_LEAVES`). Raises :class:`CaError`. Thread-safe."""
        with self._lock:
            found = self._leaves.get(name)
            if found is not None:
                return found
            if len(self._leaves) >= MAX_LEAVES:
                raise CaError(f"over {MAX_LEAVES} names asked for")
            path = self.directory / "issued" / f"{name}.pem"
            self._openssl("ca", "-batch", "-notext", "-config", str(self.directory / "openssl.cnf"),
                          "-cert", str(self.directory / CA_FILE), "-keyfile",
                          str(self.directory / "ca.key"), "-in",
                          str(self.directory / "leaf.csr"), "-extensions", "leaf",
                          "-subj", "/CN=cursor-agent-action relay",
                          "-startdate", _utc(time.time() - 60), "-enddate", _utc(self.not_after),
                          "-out", str(path), leaf=name)
            self._leaves[name] = path
            return path

    def server_context(self, name: str, alpn: Sequence[str]) -> ssl.SSLContext:
        """A server context for the agent's connection to ``name``, offering ``alpn`` (the one
        protocol the far end chose, or none)."""
        key = (name, tuple(alpn))
        with self._lock:
            found = self._contexts.get(key)
        if found is not None:
            return found
        certificate = self.leaf(name)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(certificate, self.directory / "leaf.key")
        if alpn:
            context.set_alpn_protocols(list(alpn))
        with self._lock:
            self._contexts[key] = context
        return context

    def destroy(self) -> None:
        """The key and every file gone (the tmpfs, where there is one, goes with the mount
        namespace)."""
        with contextlib.suppress(OSError):
            shutil.rmtree(self.directory)
