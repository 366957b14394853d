"""Work run in a forked child that may first restrict itself (Landlock, seccomp, a network
namespace): what it saw comes back as JSON through a pipe; the calling process stays as it was.
The tests' kernel checks and the network bench use it."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TypeVar, cast

T = TypeVar("T")


def _nothing() -> None:
    return None


def in_child(probe: Callable[[], T], *, before: Callable[[], None] = _nothing) -> T:
    """``probe()`` in a child that ran ``before()`` (its restriction) first, as the JSON
    round trip gives it back (tuples come back as lists)."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - reported through the pipe
        os.close(read_end)
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
    return cast(T, json.loads(data))
