"""A hostile pull request's agent attacks the box, round two (issue: the agent's world is
private, and the box fails closed). One test per class of attack; each ran against the box of
the day before (the agent owned the real tree, root walked it after) and got through.

The agent is a shell script run by the real helper as root, so the box is real: its own user,
namespaces, a private copy of the tree. It reports what it saw in ``SEEN``, the one directory
the test shares with it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cursor_agent_action.agent.contain import process
from cursor_agent_action.agent.contain.box.contract import BoxStatus
from cursor_agent_action.agent.contain.isolation import STATUS_BYTES, Jail, decide, jail_for
from cursor_agent_action.agent.judge import leftout
from cursor_agent_action.cli import main
from tests.support.box import Box, left_cgroups
from tests.support.box import agent as _agent
from tests.support.box import run as _run
from tests.support.box import seen as _seen
from tests.support.clock import HeldClock, has_line
from tests.support.standin import SYSTEM_PYTHON

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not sys.platform.startswith("linux"),
    reason="the box runs as root on Linux (CI here is root)",
)


def _commit(box: Box, *paths: str) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "add", *paths], cwd=box.workspace, check=True)
    subprocess.run([*git, "commit", "-qm", "more"], cwd=box.workspace, check=True)


def _starts(box: Box) -> list[str]:
    return _seen(box, "starts").split()


# -- fail closed -------------------------------------------------------------------------------


def test_an_agent_that_ignores_sigterm_after_its_result_is_killed_and_never_run_again(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI lingers after its result, deaf to SIGTERM: the box kills it; the run is the
    agent's own conclusion, and nothing starts the agent again (uncontained or not)."""
    body = ("id -u >> $SEEN/starts; trap '' TERM; "
            "( cat <<'EOF'\n" + "\n".join(json.dumps(e) for e in (
                {"type": "system", "subtype": "init", "session_id": "s", "model": "m"},
                {"type": "result", "subtype": "success", "is_error": False, "result": "Done.",
                 "session_id": "s"})) + "\nEOF\n); sleep 30")
    started = time.monotonic()
    out = _run(box, capsys, body, "--max-retries", "2")
    assert out["conclusion"] == "success", out["log"] + out["summary"]
    assert time.monotonic() - started < 25
    assert len(_starts(box)) == 1
    assert int(_starts(box)[0]) != os.getuid()
    assert "not contained" not in out["log"]


def test_an_agent_that_stops_itself_is_killed_at_the_timeout_and_never_run_again(
    box: Box, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The 3 s deadline counts from the agent's start (its mark in SEEN), not the box's.
    monkeypatch.setattr(process, "time", HeldClock(has_line(box.seen / "starts")))
    out = _run(box, capsys, "id -u >> $SEEN/starts; kill -STOP $$", "--timeout-minutes", "0.05",
               "--max-retries", "2")
    assert out["conclusion"] == "timeout", out["log"]
    assert len(_starts(box)) == 1
    assert "not contained" not in out["log"]


def test_a_box_that_ends_without_a_status_fails_the_run_and_never_falls_back(
    box: Box, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The root side dies after the agent started (killed, out of memory, disk full): no
    status. Before, isolation auto then started the agent again as the runner's user, with
    the job's tokens in reach. Now the run fails and the agent is not started again."""
    real = Jail.command

    def dying(self: Jail) -> list[str]:  # the real box, killed once the agent has started
        argv = real(self)
        return ["sh", "-c", 'exec 3<&0; "$@" <&3 & sleep 1.5; kill -9 $!; exit 137', "box",
                *argv]

    monkeypatch.setattr(Jail, "command", dying)
    try:
        out = _run(box, capsys, "cat /proc/self/cgroup > $SEEN/cgroup; id -u >> $SEEN/starts; "
                   "sleep 20")
    finally:  # the killed root side could not remove the box's cgroup: the test does
        if (box.seen / "cgroup").exists():
            for path in left_cgroups(box):
                path.rmdir()
    assert out["conclusion"] == "failure", out["log"]
    assert "box ended without a proper status" in out["log"]
    assert "not contained" not in out["log"]
    assert len(_starts(box)) <= 1  # the one contained start, if it got that far
    assert all(int(uid) != os.getuid() for uid in _starts(box))


def test_the_status_file_is_written_in_place_so_a_full_disk_cannot_starve_it(
    tmp_path: Path,
) -> None:
    """The helper makes and fills the status file before the box starts; the box overwrites
    it in place (no new block is needed) and the helper reads it back whole."""
    jail = jail_for(decide("auto"), state_dir=tmp_path, repo_root=tmp_path, cwd=tmp_path,
                    home=tmp_path / "home", argv=["x"], env={}, masks=[])
    jail.command()
    assert jail.status_file.stat().st_size == STATUS_BYTES
    fd = os.open(jail.status_file, os.O_WRONLY)
    os.pwrite(fd, json.dumps(BoxStatus(True, returncode=3).to_json()).encode(), 0)
    os.close(fd)
    assert jail.result(0, stopped=False).returncode == 3


# -- nothing outside the patch comes back --------------------------------------------------------


def test_links_the_agent_swaps_in_never_make_root_touch_what_they_point_at(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    """Root restored the mode of a nested repository's parent after the run, through a
    directory above it that the agent owned and had swapped for a link: the mode landed on the
    link's target (chained with a second run, a setuid binary). No walk of root's follows the
    agent's tree now: the canary outside keeps its modes and owner through two runs."""
    canary = box.base / "canary"
    (canary / "nested").mkdir(parents=True)
    (canary / "nested").chmod(0o700)  # root would restore nested's 0o775 onto it
    (canary / "tool").write_text("#!/bin/sh\n")
    (canary / "tool").chmod(0o700)
    (box.workspace / "deep" / "nested" / ".git").mkdir(parents=True)
    (box.workspace / "deep" / "nested").chmod(0o775)
    (box.workspace / "deep" / "nested" / "file.txt").write_text("x\n")
    _commit(box, "deep/nested/file.txt")
    swap = (f"mv deep deep-old; ln -s {canary} deep; chmod 4777 deep/tool 2>/dev/null;"
            f" ln -s {canary}/tool tool-link")
    for _ in range(2):
        _run(box, capsys, swap, "--preset", "edit")
    info = (canary / "tool").stat()
    assert oct(info.st_mode & 0o7777) == "0o700"
    assert info.st_uid == os.getuid()
    assert oct((canary / "nested").stat().st_mode & 0o7777) == "0o700"


def test_a_hard_link_in_the_tree_changes_nothing_outside_it(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    outside = box.seen / "outside.txt"  # a file the agent may write, outside the tree
    outside.write_text("outside\n")
    outside.chmod(0o666)
    before = outside.stat()
    out = _run(box, capsys, f"ln {outside} linked.txt 2>> $SEEN/ln-error; echo $? > $SEEN/ln",
               "--preset", "edit")
    assert out["conclusion"] == "success", out["log"]
    assert _seen(box, "ln").strip() != "0"  # another filesystem: no hard link at all
    after = outside.stat()
    assert (after.st_uid, after.st_mode, outside.read_text()) == (
        before.st_uid, before.st_mode, "outside\n")


def test_an_ignored_file_the_agent_leaves_never_runs_in_a_later_step(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    """The agent compiles its own code as the .pyc of a module it pretends to leave alone
    (git ignores __pycache__): a later step importing the module ran it as the runner."""
    if not SYSTEM_PYTHON:
        pytest.skip("needs a system Python")
    (box.workspace / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    (box.workspace / "src" / "app.py").write_text("VALUE = 1\n")
    _commit(box, ".gitignore", "src/app.py")
    marker = box.seen / "pyc-ran"
    evil = (f"import py_compile, importlib.util; open('/tmp/m.py', 'w').write("
            f"\"open('{marker}', 'w').write('ran')\\n\"); py_compile.compile('/tmp/m.py', "
            "cfile=importlib.util.cache_from_source('src/app.py'), "
            "invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)")
    (box.base / "evil.py").write_text(evil)
    out = _run(box, capsys, f"{SYSTEM_PYTHON} {box.base / 'evil.py'}", "--preset", "edit")
    assert out["conclusion"] == "success", out["log"] + out["summary"]
    assert not list(box.workspace.rglob("*.pyc"))
    assert "1 new or changed file(s) that .gitignore ignores were left in the box" in (
        out["summary"])
    # The later step, as the runner, imports the module.
    subprocess.run([SYSTEM_PYTHON, "-c", "import app"], cwd=box.workspace / "src", check=True,
                   timeout=60)
    assert not marker.exists()


def test_nothing_the_agent_leaves_in_tmp_or_other_shared_places_outlives_the_run(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    name = f"caa-leftover-{os.getpid()}"
    places = ["/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/crash"]
    body = "; ".join(f"echo x > {place}/{name} 2>/dev/null" for place in places)
    out = _run(box, capsys, body + "; true")
    assert out["conclusion"] == "success", out["log"]
    assert [place for place in places if os.path.lexists(f"{place}/{name}")] == []


# -- what it can read ----------------------------------------------------------------------------


def test_a_token_the_checkout_persisted_is_masked_and_warned_about(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    token = "ghs_persisted_checkout_token_0123456789"
    config = box.workspace / ".git" / "config"
    original = config.read_bytes()
    with config.open("a") as handle:
        handle.write(f'[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic {token}\n'
                     f'[remote "origin"]\n\turl = https://x-access-token:{token}@github.com/o/r\n'
                     '[credential]\n\thelper = store\n')
    body = ("cat .git/config > $SEEN/config; git config --list > $SEEN/list 2>&1;"
            " echo '[core]' >> .git/config 2>/dev/null; echo $? > $SEEN/write")
    out = _run(box, capsys, body)
    assert out["conclusion"] == "success", out["log"]
    seen = _seen(box, "config") + _seen(box, "list")
    assert token not in seen
    assert "extraheader" not in seen
    assert "credential.helper=store" not in seen
    assert "https://github.com/o/r" in seen  # the remote stays, without its user and password
    assert _seen(box, "write").strip() != "0"
    assert config.read_bytes().startswith(original)
    assert "::warning title=credential in .git/config::" in out["log"]
    assert "persist-credentials: false" in out["log"]


def test_the_runners_temp_files_home_and_tool_cache_are_out_of_sight(
    box: Box, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets = {
        box.runner_temp / "_runner_file_commands" / "set_env_1": "TOKEN=runner-temp-secret\n",
        box.runner_temp / "_github_workflow" / "event.json": '{"secret": "event-secret"}\n',
        box.home / ".ssh" / "id_rsa": "home-secret\n",
        box.base.parent / "toolcache" / "node" / "secret.txt": "cache-secret\n",
    }
    for path, text in secrets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o644)
        for parent in path.parents:
            if parent == box.base.parent.parent:
                break
            parent.chmod(parent.stat().st_mode | 0o005)
    monkeypatch.setenv("RUNNER_TOOL_CACHE", str(box.base.parent / "toolcache"))
    body = "; ".join(f"cat {path} >> $SEEN/read 2>/dev/null" for path in secrets) + "; true"
    out = _run(box, capsys, body)
    assert out["conclusion"] == "success", out["log"]
    assert "secret" not in _seen(box, "read")


def test_the_home_is_new_every_run_but_the_chats_resume_needs(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    plant = ("mkdir -p $HOME/.cursor/chats/w/c $HOME/.claude; "
             "echo '{\"hooks\": {}}' > $HOME/.cursor/hooks.json; "
             "echo '{\"type\": \"insecure_none\"}' > $HOME/.cursor/sandbox.json; "
             "echo '{\"hooks\": {}}' > $HOME/.claude/settings.json; echo x > $HOME/.bashrc; "
             "echo chat > $HOME/.cursor/chats/w/c/store.db; "
             "ln -s /etc/shadow $HOME/.cursor/chats/w/c/link")
    assert _run(box, capsys, plant)["conclusion"] == "success"
    look = ("ls -A $HOME $HOME/.cursor > $SEEN/home 2>&1; cat $HOME/.cursor/sandbox.json "
            "> $SEEN/sandbox 2>&1; cat $HOME/.cursor/chats/w/c/store.db > $SEEN/chat 2>&1; "
            "test -e $HOME/.cursor/chats/w/c/link; echo $? > $SEEN/link")
    assert _run(box, capsys, look)["conclusion"] == "success"
    home = _seen(box, "home")
    assert "hooks.json" not in home
    assert ".claude" not in home
    assert ".bashrc" not in home
    assert "insecure_none" not in _seen(box, "sandbox")
    assert _seen(box, "chat") == "chat\n"
    assert _seen(box, "link").strip() == "1"


# -- bounded -----------------------------------------------------------------------------------


def test_deep_and_long_paths_end_in_a_clear_result_not_a_traceback(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    body = ("d=deep; i=0; while [ $i -lt 1800 ]; do d=$d/d; i=$((i+1)); done; "
            "mkdir -p $d 2>/dev/null; cd deep && for i in $(seq 1 1800); do mkdir d 2>/dev/null"
            " ; cd d || break; done; echo x > leaf; cd $OLDPWD; "
            "n=$(printf 'n%.0s' $(seq 1 250)); p=long; for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14"
            " 15 16 17; do p=$p/$n; done; mkdir -p $p 2>/dev/null; true")
    started = time.monotonic()
    out = _run(box, capsys, body, "--preset", "edit")
    assert time.monotonic() - started < 60
    assert "Traceback" not in out["log"]
    assert out["conclusion"] in ("success", "failure"), out["log"]
    owners = {p.lstat().st_uid for p in box.workspace.rglob("*")}
    assert owners <= {os.getuid()}


def test_a_48_gib_sparse_file_is_left_out_quickly(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    out = _run(box, capsys, "truncate -s 48G big.bin; echo ok > small.txt", "--preset", "edit")
    assert time.monotonic() - started < 30
    assert out["conclusion"] == "success", out["log"]
    assert {"path": "big.bin", "reason": leftout.TOO_LARGE} in json.loads(out["left-out"])
    assert f"| `big.bin` | {leftout.TOO_LARGE} |" in out["summary"]
    assert not (box.workspace / "big.bin").exists()
    assert (box.workspace / "small.txt").read_text() == "ok\n"


def test_the_box_has_a_memory_limit(box: Box, capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(box, capsys, "cat /proc/self/cgroup > $SEEN/cgroup")
    assert out["conclusion"] == "success", out["log"]
    assert "caa-box-" in _seen(box, "cgroup")  # memory and processes, v1 or v2


def test_a_working_tree_over_the_cap_fails_before_the_agent_starts_without_a_fallback(
    box: Box, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("cursor_agent_action.agent.contain.isolation.BOX_MAX_TREE_BYTES", 4)  # copy
    agent = _agent(box, "id -u >> $SEEN/starts")
    code = main(["run", "--agent-bin", str(agent), "--working-directory", str(box.workspace),
                 "--output-file", str(box.base / "outputs.txt"), "--summary-file", os.devnull,
                 "--prompt", "x", "--max-tree-files", "2"])
    log = capsys.readouterr().out
    assert code != 0
    assert "more than 2 files and directories" in log
    assert "Make the working tree smaller" in log
    assert "raise the input max-tree-files" in log
    assert _starts(box) == []


# -- what does come back, comes back whole ---------------------------------------------------


def test_the_checked_patch_brings_back_every_kind_of_change_and_applies_on_a_fresh_clone(
    box: Box, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (box.workspace / "run.sh").write_text("#!/bin/sh\n")
    (box.workspace / "gone.txt").write_text("bye\n")
    _commit(box, "run.sh", "gone.txt")
    body = ("chmod +x run.sh; rm gone.txt; printf '\\000\\001\\377binary' > blob.bin; "
            "ln -s src/app.py link; printf x > \"$(printf 'odd\\nname')\"; "
            "printf y > \"$(printf 'bad\\377byte')\"; echo changed >> README.md")
    out = _run(box, capsys, body, "--preset", "edit")
    assert out["conclusion"] == "success", out["log"]
    work = box.workspace
    assert os.access(work / "run.sh", os.X_OK)
    assert not (work / "gone.txt").exists()
    assert (work / "blob.bin").read_bytes() == b"\0\1\377binary"
    assert os.readlink(work / "link") == "src/app.py"
    assert (work / "odd\nname").read_text() == "x"
    assert (work / os.fsdecode(b"bad\xffbyte")).read_text() == "y"
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(work), str(clone)], check=True)
    subprocess.run(["git", "apply", "--binary", out["patch-file"]], cwd=clone, check=True)
    for path in ("run.sh", "blob.bin", "README.md", "odd\nname", os.fsdecode(b"bad\xffbyte")):
        assert (clone / path).read_bytes() == (work / path).read_bytes(), path
    assert os.access(clone / "run.sh", os.X_OK)
    assert not (clone / "gone.txt").exists()
    assert os.readlink(clone / "link") == "src/app.py"


# -- round three: what a tester found in this box, and holds now -------------------------------


def _quoted(path: str) -> str:
    """A file name git's --stdin-paths would have read as ``path`` (C-quoted, no slash)."""
    return '"' + path.replace("/", "\\057") + '"'


def test_a_quoted_file_name_never_makes_roots_git_read_another_file(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    """``"\\057etc\\057shadow".md`` was hashed by root as /etc/shadow: its bytes became a new
    file in the patch and the real tree. Each path now reaches git as ``./path``."""
    canary = box.base.parent / "root-only"
    canary.write_text("root-only-canary\n")
    canary.chmod(0o600)
    name = _quoted(str(canary)) + ".md"
    out = _run(box, capsys, f"printf agent > '{name}'", "--preset", "docs")
    assert out["conclusion"] == "success", out["log"]
    assert (box.workspace / name).read_text() == "agent"
    assert "root-only-canary" not in Path(out["patch-file"]).read_text(errors="replace")


def test_a_committed_quoted_name_puts_no_runner_file_in_the_objects_the_box_reads(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    token = "ghs_committed_quoted_name_token_0123456789"
    with (box.workspace / ".git" / "config").open("a") as handle:
        handle.write(f'[http "https://github.com/"]\n\textraheader = basic {token}\n')
    (box.workspace / _quoted(".git/config")).write_text("decoy\n")
    _commit(box, _quoted(".git/config"))
    (box.workspace / _quoted(".git/config")).write_text("decoy changed\n")  # hashed before
    search = ("import glob, zlib, sys\nfor p in glob.glob('.git/objects/??/*'):\n"
              "    d = zlib.decompress(open(p, 'rb').read())\n"
              f"    print('found' if b'{token}' in d else '', end='')\n")
    (box.base / "search.py").write_text(search)
    out = _run(box, capsys, f"{SYSTEM_PYTHON or 'python3'} {box.base / 'search.py'} > $SEEN/found")
    assert out["conclusion"] == "success", out["log"]
    assert _seen(box, "found") == ""


def test_a_submodules_persisted_token_is_masked_too(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    token = "ghs_submodule_persisted_token_0123456789"
    module = box.workspace / ".git" / "modules" / "lib"
    module.mkdir(parents=True)
    (module / "config").write_text(
        f'[core]\n\tbare = false\n[http "https://github.com/"]\n\textraheader = basic {token}\n')
    out = _run(box, capsys, "cat .git/modules/lib/config > $SEEN/config 2>&1")
    assert out["conclusion"] == "success", out["log"]
    assert token not in _seen(box, "config")
    assert "bare" in _seen(box, "config")
    assert ".git/modules/lib" in out["log"] or "extraheader" in out["log"]  # the warning


def test_the_agent_has_no_kernel_keyring_to_read_or_leave_a_key_in(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    if not SYSTEM_PYTHON:
        pytest.skip("needs a system Python")
    probe = ("import ctypes, platform\nlibc = ctypes.CDLL(None, use_errno=True)\n"
             "nr = {'x86_64': 248, 'aarch64': 217}[platform.machine()]\n"
             "r = libc.syscall(nr, b'user', b'planted', b'v', 1, ctypes.c_long(-4))\n"
             "print(r, ctypes.get_errno())\n")
    (box.base / "keys.py").write_text(probe)
    out = _run(box, capsys, f"{SYSTEM_PYTHON} {box.base / 'keys.py'} > $SEEN/keys 2>&1")
    assert out["conclusion"] == "success", out["log"]
    assert _seen(box, "keys").split() == ["-1", str(38)]  # ENOSYS


def test_chat_directories_carried_to_the_next_run_are_bounded(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    plant = "mkdir -p $HOME/.cursor/chats && cd $HOME/.cursor/chats && seq 1 3000 | xargs mkdir"
    assert _run(box, capsys, plant)["conclusion"] == "success"
    out = _run(box, capsys, "ls $HOME/.cursor/chats | wc -l > $SEEN/count")
    assert out["conclusion"] == "success", out["log"]
    assert 0 < int(_seen(box, "count")) <= 2000


def test_a_quoted_name_of_a_fifo_neither_hangs_nor_crashes_the_box(
    box: Box, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    out = _run(box, capsys, "mkfifo pipe; printf x > '\"pipe\"'", "--preset", "edit")
    assert time.monotonic() - started < 60
    assert out["conclusion"] == "success", out["log"]
    assert (box.workspace / '"pipe"').read_text() == "x"


def test_a_runners_unix_socket_outside_run_cannot_be_connected_to(
        box: Box, capsys: pytest.CaptureFixture[str]) -> None:
    """Red team (R2-7): a world-writable socket of a service on the runner outside ``/run``
    (a database's under ``/var/lib``): before, the agent connected to it from the box and
    talked both ways, past the network wall (a read-only view does not stop ``connect``).
    Now every socket bound on the runner is covered in the box's view."""
    where = Path(f"/var/lib/caa-test-socket-{os.getpid()}")
    where.mkdir(mode=0o755)
    path = where / "service.sock"
    server = socket.socket(socket.AF_UNIX)
    got: list[bytes] = []
    try:
        server.bind(str(path))
        path.chmod(0o777)  # world-writable, as such services make them
        server.listen(1)
        server.settimeout(20)

        def accept() -> None:
            try:
                conn, _ = server.accept()
                conn.sendall(b"HOST-SERVICE\n")
                got.append(conn.recv(100))
                conn.close()
            except OSError:
                pass

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        client = (f"{SYSTEM_PYTHON} -c \"import socket; s=socket.socket(socket.AF_UNIX); "
                  f"s.connect('{path}'); s.sendall(b'from-box'); print(s.recv(100))\" "
                  "> $SEEN/socket 2>&1; ls -l " + str(path) + " >> $SEEN/socket 2>&1")
        out = _run(box, capsys, client)
    finally:
        server.close()
        shutil.rmtree(where, ignore_errors=True)
    assert out["conclusion"] == "success", out["log"]
    seen = _seen(box, "socket")
    assert got == [], "the box reached the runner's socket"
    assert "HOST-SERVICE" not in seen
    assert "Connection refused" in seen or "Errno" in seen, seen


def test_a_runners_socket_gone_before_it_is_covered_fails_nothing() -> None:
    """The runner's sockets are listed before the box's network namespace exists and covered
    later; one that went in between (another job's, ended) made the box's set-up fail, and
    ``isolation: auto`` then ran the agent uncontained (seen under CI with four workers: a
    canary outside the tree changed). Now a socket that is gone is nothing to cover."""
    from unittest import mock

    from cursor_agent_action.agent.contain.box import world
    from cursor_agent_action.agent.contain.box.libc import libc
    from tests.support.forked import in_child

    gone = f"/var/lib/caa-test-gone-{os.getpid()}.sock"

    def enter() -> None:
        if libc().unshare(0x00020000) != 0:  # CLONE_NEWNS: the mounts stay in this child
            os._exit(3)
        world.make_private()

    def cover() -> dict[str, str]:
        socket_like = os.stat_result((0o140777, 0, 0, 1, 0, 0, 0, 0, 0, 0))
        real_lstat = os.lstat
        with mock.patch("os.lstat", side_effect=lambda path: (
                socket_like if path == gone else real_lstat(path))):
            try:
                world.cover_sockets([gone], [])
            except world.WorldError as exc:
                return {"error": str(exc)}
        return {"error": ""}

    assert in_child(cover, before=enter) == {"error": ""}
