"""The box's finish, run by the root side once no agent process is left: the patch and the chats
(:func:`.storage.finish`) in a child process inside the box's cgroup (its memory limit holds for
our git too), within :data:`FINISH_LIMIT_S`, and never longer than the helper: when the control
pipe closes (the helper gone, or the job cancelled) the child's process group is killed at once,
and the child dies with the root side (a parent-death signal)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal

from cursor_agent_action.agent.contain.box import limits, storage, tree
from cursor_agent_action.agent.contain.box.contract import BoxSpec, ContractError, Finished, Listed
from cursor_agent_action.agent.contain.box.libc import die_with_parent

FINISH_LIMIT_S = 240
"""The patch and the chats after the run, at most (the helper waits 300 s for the box)."""


def bounded(spec: BoxSpec, copy: tree.Copy, box_limits: limits.Limits) -> Finished:
    """:func:`storage.finish` (the patch, the chats) in a child process inside the box's
    cgroup (its memory limit holds for our git too) and within :data:`FINISH_LIMIT_S`: what it
    reports, or why it could not. It ends with the helper: when the control pipe (stdin) closes
    (the helper gone, or stopping) the child's process group is killed at once, and the child
    dies with this program (a parent-death signal)."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - a forked child, reported through the pipe
        try:
            os.close(read_end)
            os.setpgid(0, 0)
            die_with_parent()
            if os.getppid() == 1:  # this program is already gone
                os._exit(1)
            with contextlib.suppress(OSError):
                box_limits.enter(os.getpid())
            signal.alarm(FINISH_LIMIT_S)
            data = json.dumps(storage.finish(spec, copy).to_json()).encode()
            while data:
                data = data[os.write(write_end, data):]
        finally:
            os._exit(0)
    os.close(write_end)
    answer = b""
    helper_gone = False
    watched = [read_end, 0]
    try:
        while read_end in watched:
            ready, _, _ = select.select(watched, [], [], FINISH_LIMIT_S)
            if not ready:
                break
            if 0 in ready and not os.read(0, 64):  # the helper closed the pipe, or is gone
                helper_gone = True
                break
            if read_end in ready:
                chunk = os.read(read_end, 65536)
                answer += chunk
                if not chunk:
                    watched.remove(read_end)
    finally:  # also when SIGTERM ends the root side here: nothing of the finish outlives it
        os.close(read_end)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child, signal.SIGKILL)  # git it started, if it was cut short
        _, code = os.waitpid(child, 0)
    if helper_gone:
        return Finished(patch_error="the helper stopped while the box made the patch (the run "
                                    "was cancelled or ended): nothing was brought back")
    with contextlib.suppress(ValueError, ContractError):
        return Finished.from_json(json.loads(answer))
    how = f"signal {os.WTERMSIG(code)}" if os.WIFSIGNALED(code) else f"code {os.WEXITSTATUS(code)}"
    return Finished(patch_error=f"making the patch ended with {how} (over {FINISH_LIMIT_S} s, "
                                "or out of the box's memory)", left_out=Listed.of(copy.left_out))
