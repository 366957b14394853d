"""Which entries of a tree may have changed during a run, without walking it again: an inotify
watch on every directory (and on every file with another link elsewhere), set before the agent
starts, read after it ends (:mod:`.inplace`).

A directory's watch reports what happens to its entries by name (their attributes, contents,
creation, removal, renaming) and to itself; a change made through a link in a directory that
is not watched is reported by the file's own watch. A change the kernel did not report, or
could not queue, makes the answer "unknown" (``None``): the caller walks the whole tree then.
The watch is made by this program (the agent never holds its descriptor), from listings it
already made: nothing is followed (``IN_DONT_FOLLOW``), and where one cannot be set (the
user's watch limit, ``fs.inotify.max_user_watches``), there is none and the answer is
"unknown".
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import struct
from collections.abc import Iterable

from cursor_agent_action.agent.contain.box.libc import libc

_MODIFY, _ATTRIB, _MOVED_FROM, _MOVED_TO = 0x2, 0x4, 0x40, 0x80
_CREATE, _DELETE, _DELETE_SELF, _MOVE_SELF = 0x100, 0x200, 0x400, 0x800
_OVERFLOW, _ONLYDIR, _DONT_FOLLOW = 0x4000, 0x1000000, 0x2000000
_NONBLOCK, _CLOEXEC = 0o4000, 0o2000000
_CHANGES = (_MODIFY | _ATTRIB | _MOVED_FROM | _MOVED_TO | _CREATE | _DELETE | _DELETE_SELF
            | _MOVE_SELF)
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then the name, NUL-padded
MAX_EVENT_BYTES = 64 * 1024 * 1024
"""Read at most this much: past it, the answer is "unknown" (a full walk)."""


class Watch:
    """The watch over ``root``'s ``directories`` and ``files`` (relative paths; ``""`` is
    ``root``). :meth:`start` makes it; :meth:`changed` reads it once and closes it."""

    def __init__(self, fd: int, places: dict[int, str]) -> None:
        self.fd, self.places = fd, places

    @classmethod
    def start(cls, root: str, directories: Iterable[str], files: Iterable[str] = (),
              ) -> Watch | None:
        """None where inotify is missing or a watch cannot be set (then nothing is kept)."""
        lib = libc()
        fd = int(lib.inotify_init1(_NONBLOCK | _CLOEXEC))
        if fd < 0:
            return None
        places: dict[int, str] = {}
        try:
            for relative, extra in [*((path, _ONLYDIR) for path in directories),
                                    *((path, 0) for path in files)]:
                path = os.path.join(root, relative) if relative else root
                wd = int(lib.inotify_add_watch(fd, os.fsencode(path),
                                               ctypes.c_uint32(_CHANGES | _DONT_FOLLOW | extra)))
                if wd < 0:
                    os.close(fd)
                    return None
                places[wd] = relative
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, places)

    def changed(self) -> set[str] | None:
        """The relative paths reported changed (an entry, or a watched place itself); None
        when the kernel's queue overflowed or an event named no watch of ours."""
        try:
            data = bytearray()
            while len(data) <= MAX_EVENT_BYTES:
                try:
                    chunk = os.read(self.fd, 1 << 16)
                except BlockingIOError:
                    break
                if not chunk:
                    break
                data += chunk
            else:
                return None
            return self.parse(bytes(data))
        finally:
            with contextlib.suppress(OSError):
                os.close(self.fd)

    def parse(self, data: bytes) -> set[str] | None:
        """The paths the events in ``data`` name (None: see :meth:`changed`)."""
        found: set[str] = set()
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _, length = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size:offset + _EVENT.size + length].rstrip(b"\0")
            offset += _EVENT.size + length
            if mask & _OVERFLOW or wd not in self.places:
                return None
            place = self.places[wd]
            if name:
                text = os.fsdecode(name)
                found.add(f"{place}/{text}" if place else text)
            else:
                found.add(place)
        return found
