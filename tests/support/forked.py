"""A check run through the kernel in a forked child that first restricts itself (Landlock,
seccomp): what it saw comes back as JSON through a pipe; the test process stays as it was."""

from __future__ import annotations

import json
import os
from collections.abc import Callable


def in_child(probe: Callable[[], dict[str, str]], *, before: Callable[[], None]) -> dict[str, str]:
    """``probe()`` in a child that ran ``before()`` (its restriction) first."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - reported through the pipe
        try:
            before()
            os.write(write_end, json.dumps(probe()).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 65536):
        data += chunk
    os.close(read_end)
    os.waitpid(child, 0)
    result: dict[str, str] = json.loads(data)
    return result
