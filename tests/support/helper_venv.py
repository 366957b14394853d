"""A helper venv a user other than root can run, as setup-helper.sh makes it: the system Python,
the package, its compiled dependency and h11 copied in, under a world-readable path (for the
runs as an unprivileged runner user; bench/box uses it too)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "src" / "cursor_agent_action"


def make_helper_venv(venv: Path, python: str) -> Path:
    """The venv at ``venv``, made with ``python`` (a system Python every user can run)."""
    subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = Path(subprocess.run([str(venv / "bin" / "python"), "-c", purelib],
                               capture_output=True, text=True, check=True).stdout.strip())
    shutil.copytree(SOURCE, site / "cursor_agent_action",
                    ignore=shutil.ignore_patterns("__pycache__"))
    import h2  # the relay reads HTTP/2 to Cursor's service with it (run.txt has it)
    import h11  # the network wall's relay reads plain HTTP with it (run.txt has it)
    import hpack
    import hyperframe
    import orjson
    import yaml  # the documentation pages' judge reads MyST's YAML option blocks (run.txt)

    for module in (orjson, h11, h2, hpack, hyperframe, yaml):
        source = Path(module.__file__ or "").parent
        shutil.copytree(source, site / source.name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["chmod", "-R", "a+rX", str(venv)], check=True)
    return venv
