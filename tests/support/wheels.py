"""Wheels made from this dev venv's installed distributions, and locks that pin them: offline
installs that follow the action's rules (pip --require-hashes --no-deps --only-binary :all:).

A wheel holds the files its distribution's RECORD lists under site-packages (no compiled
files, no scripts: pip makes those), its dist-info as installed, a fresh RECORD, and its name
carries the first tag of its WHEEL file, so pip installs it on this interpreter as it would the
original. Nothing is fetched.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

_SKIPPED = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"}


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def repack(name: str, dest: Path) -> Path:
    """A wheel of installed distribution ``name`` in ``dest``."""
    dist = metadata.distribution(name)
    site = Path(str(dist.locate_file(""))).resolve()
    lines = (dist.read_text("WHEEL") or "").splitlines()
    tag = next(line.split(":", 1)[1].strip() for line in lines if line.startswith("Tag:"))
    stem = f"{re.sub(r'[-_.]+', '_', dist.metadata['Name'])}-{dist.version}"
    wheel = dest / f"{stem}-{tag}.whl"
    records: list[str] = []
    info = ""
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in dist.files or []:
            path = Path(str(dist.locate_file(file))).resolve()
            if not path.is_relative_to(site) or path.suffix == ".pyc" or not path.is_file():
                continue
            relative = path.relative_to(site).as_posix()
            if relative.split("/")[0].endswith(".dist-info"):
                info = relative.split("/")[0]
                if path.name in _SKIPPED:
                    continue
            data = path.read_bytes()
            archive.writestr(relative, data)
            records.append(f"{relative},{_record_hash(data)},{len(data)}")
        records.append(f"{info}/RECORD,,")
        archive.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    return wheel


def lock_of(lock: Path, wheels: Path) -> str:
    """A lock for the packages of ``lock`` this interpreter installs, pinned to wheels of this
    venv's versions, made in ``wheels``."""
    lines = []
    names = re.findall(r"^([A-Za-z0-9._-]+==[^\s\\]+(?:\s*;[^\\\n]*)?)", lock.read_text(), re.M)
    for entry in names:
        requirement = Requirement(entry)
        if requirement.marker and not requirement.marker.evaluate():
            continue
        wheel = repack(requirement.name, wheels)
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        version = metadata.version(requirement.name)
        lines.append(f"{canonicalize_name(requirement.name)}=={version} --hash=sha256:{digest}")
    return "\n".join(lines) + "\n"
