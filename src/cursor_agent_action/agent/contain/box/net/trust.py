"""The box's trust store when the relay holds the key: every common client in the box trusts
the run's CA (:mod:`.ca`, name-constrained to Cursor's names) and whatever it trusted before.

- The system bundle's paths that exist on the runner (Debian's, Red Hat's, Alpine's) show the
  runner's bundle (or its ``SSL_CERT_FILE``) with the CA added, read-only: curl, git, OpenSSL
  and Python read it;
- ``SSL_CERT_FILE`` and ``REQUESTS_CA_BUNDLE`` name that bundle (httpx and requests carry a
  bundle of their own otherwise);
- ``NODE_EXTRA_CA_CERTS`` (the CLI runs on Node) names the CA, after the certificates the
  runner's own ``NODE_EXTRA_CA_CERTS`` named.

All are files of root's, shown read-only in the box: the agent can change none of them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

SYSTEM_BUNDLES = (
    "/etc/ssl/certs/ca-certificates.crt",  # Debian, Ubuntu, Alpine
    "/etc/pki/tls/certs/ca-bundle.crt",  # Red Hat, Fedora
    "/etc/ssl/cert.pem",  # Alpine, macOS-like layouts
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
)
BOX_DIR = "/tmp/.cursor-agent-action-trust"  # noqa: S108 - the box's own /tmp, files read-only
BOX_BUNDLE = f"{BOX_DIR}/bundle.pem"
BOX_CA = f"{BOX_DIR}/cursor-ca.pem"
MAX_BUNDLE = 16 << 20


def base_bundle(environ: Mapping[str, str]) -> str:
    """The bundle the box's clients trusted before: the runner's ``SSL_CERT_FILE``, else the
    first system bundle there is ("" when none)."""
    given = environ.get("SSL_CERT_FILE", "")
    for path in (given, *SYSTEM_BUNDLES):
        if path and os.path.isfile(path):
            return path
    return ""


def _read(path: str) -> bytes:
    if not path or not os.path.isfile(path):
        return b""
    with open(path, "rb") as handle:
        data = handle.read(MAX_BUNDLE)
    return data if data.endswith(b"\n") or not data else data + b"\n"


def write_files(directory: Path, ca_pem: bytes, env: Mapping[str, str]) -> dict[str, str]:
    """The trust files in ``directory`` (root's, readable by all), for the agent's ``env``;
    the box's read-only files, target to source (its bind mounts)."""
    bundle = _read(base_bundle(env)) + ca_pem
    node = _read(env.get("NODE_EXTRA_CA_CERTS", "")) + ca_pem
    files = {"bundle.pem": bundle, "cursor-ca.pem": node}
    for name, data in files.items():
        path = directory / name
        path.write_bytes(data)
        path.chmod(0o644)
    shown = {BOX_BUNDLE: str(directory / "bundle.pem"), BOX_CA: str(directory / "cursor-ca.pem")}
    for system in SYSTEM_BUNDLES:
        if os.path.isfile(system) and not os.path.islink(system):
            shown[system] = str(directory / "bundle.pem")
    return shown


def environment(env: Mapping[str, str]) -> dict[str, str]:
    """The agent's environment with the trust variables pointing at the box's files."""
    return {**env, "SSL_CERT_FILE": BOX_BUNDLE, "REQUESTS_CA_BUNDLE": BOX_BUNDLE,
            "NODE_EXTRA_CA_CERTS": BOX_CA}
