"""The key never enters the box, end to end: the helper as root, the agent a shell script in
its box that looks for the key everywhere it can (its environment, every process's environment
and arguments under /proc, its home, /tmp, /etc) and uses it as the CLI does (the exchange, a
unary call, a stream) against a fake of Cursor's service on the runner's 127.0.0.1, reached
by its real names (added to the runner's /etc/hosts, restored after)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.box import Box
from tests.support.box import run as _run
from tests.support.box import seen as _seen
from tests.support.cursor_service import FakeCursor, make_key, with_service
from tests.support.netbox import loopback_names

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not sys.platform.startswith("linux") or not shutil.which("openssl"),
    reason="the box runs as root on Linux (CI here is root); the run's CA needs openssl")

NAMES = ("api2.cursor.sh", "agent.cursor.sh", "elsewhere.example")
OTHER = NAMES[2]
PYTHON = shutil.which("python3", path="/usr/bin:/bin") or "python3"
"""The system's Python: the box shows the runner's /usr, not the test's virtual environment."""
CLIENT = Path(__file__).resolve().parents[1] / "fixtures" / "credentials" / "client.py"


@pytest.fixture
def service(box: Box, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCursor]:
    key = make_key()
    monkeypatch.setenv("CURSOR_API_KEY", key)
    fake = with_service(box.base / "service", NAMES, key)
    # The runner trusts the fake service's CA (the relay verifies Cursor's certificate).
    bundle = box.base / "runner-bundle.pem"
    bundle.write_bytes(Path("/etc/ssl/certs/ca-certificates.crt").read_bytes()
                       + fake.ca.cert.read_bytes())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    with loopback_names(NAMES):
        try:
            yield fake
        finally:
            fake.close()


def _forms(value: str) -> list[str]:
    """``value`` as it is, in base64 (both alphabets), hex and reversed."""
    raw = value.encode()
    return [value, base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode(),
            raw.hex(), value[::-1]]


def _looking(box: Box, key: str) -> str:
    """The agent's script: everything it can read that might hold the key, into SEEN; then
    the CLI's calls, with whatever CURSOR_API_KEY it was given."""
    client = box.base / "client.py"
    client.write_text(CLIENT.read_text())
    return (
        "env > $SEEN/env; "
        "for p in /proc/[0-9]*; do cat $p/environ; echo; cat $p/cmdline; echo; done "
        "> $SEEN/proc 2>/dev/null; "
        # the key in two halves: this script itself (shown to the agent) must not hold it
        f"grep -r -a -l -F -e \"$(printf %s%s '{key[:20]}' '{key[20:]}')\" "
        "$HOME /tmp /var/tmp /dev/shm /etc /run > $SEEN/files 2>/dev/null; "
        f"CAA_PORT=$CAA_PORT CAA_OTHER={OTHER} {PYTHON} -I {client} urllib > $SEEN/client 2>&1;"
        " true"
    )


def _run_box(box: Box, capsys: pytest.CaptureFixture[str], service: FakeCursor,
             *args: str) -> dict[str, str]:
    port = service.port
    body = f"CAA_PORT={port}; export CAA_PORT; " + _looking(box, service.key)
    allowed = [arg for name in NAMES for arg in ("--allowed-domains", f"{name}:{port}")]
    return _run(box, capsys, body, *allowed, *args)


def test_the_agent_finds_no_key_in_its_box_yet_the_cli_calls_succeed(
        box: Box, capsys: pytest.CaptureFixture[str], service: FakeCursor) -> None:
    """Before: the agent read the key in its environment (and /proc/self/environ)."""
    out = _run_box(box, capsys, service)
    assert out["conclusion"] == "success", out["log"]
    seen = "\n".join(_seen(box, name) for name in ("env", "proc", "files", "client"))
    for secret in [service.key, *service.issued]:
        for form in _forms(secret):
            assert form not in seen, "the agent found a real value in its box"
    env = dict(line.split("=", 1) for line in _seen(box, "env").splitlines() if "=" in line)
    placeholder = env["CURSOR_API_KEY"]
    assert len(placeholder) == len(service.key)
    assert placeholder.startswith("crsr_")
    assert set(placeholder[5:]) <= set("0123456789abcdef")
    assert _seen(box, "files").strip() == ""
    client = json.loads(_seen(box, "client").strip().splitlines()[-1])
    assert client["exchange"][0] == 200, client
    assert client["me"][0] == 200, client
    assert client["stream"][0] == 200, client
    assert "again|2" in client["stream"][1]
    exchanged = [seen for seen in service.seen if seen.path.startswith("/auth/exchange")]
    assert json.loads(exchanged[0].body)["apiKey"] == service.key  # the relay swapped it in
    # The key sent to another allowed name arrives as the placeholder it was.
    assert client["other"][0] == 200, client
    other = [seen for seen in service.seen if seen.name == OTHER]
    assert [seen.body.decode() for seen in other] == [placeholder]
    assert out["api-key-in-box"] == "no"
    assert "placeholder" in out["summary"]


def test_off_puts_the_key_in_the_box_and_says_so(
        box: Box, capsys: pytest.CaptureFixture[str], service: FakeCursor) -> None:
    out = _run_box(box, capsys, service, "--key-masking", "off")
    assert out["conclusion"] == "success", out["log"]
    assert f"CURSOR_API_KEY={service.key}" in _seen(box, "env")
    assert out["api-key-in-box"] == "yes-asked"
    assert "key-masking is off" in out["summary"]


def test_a_failed_exchange_stops_the_run_at_once_with_what_failed(
        box: Box, capsys: pytest.CaptureFixture[str], service: FakeCursor) -> None:
    """Cursor answers the exchange with a page that is no JSON (the CLI would fall back to a
    browser sign-in, a hang in CI): the agent is stopped, the run fails saying so."""
    from tests.support.cursor_service import Answer

    service.exchange_answer = Answer(404, [("content-type", "text/html")], b"<html>gone</html>")
    port = service.port
    client = box.base / "client.py"
    client.write_text(CLIENT.read_text())
    body = (f"CAA_PORT={port} {PYTHON} -I {client} urllib > $SEEN/client 2>&1; "
            "sleep 50")  # as the CLI waiting for a browser sign-in
    allowed = [arg for name in NAMES for arg in ("--allowed-domains", f"{name}:{port}")]
    started = time.monotonic()
    out = _run(box, capsys, body, *allowed)
    assert time.monotonic() - started < 30  # not the agent's 50 s, nor the 1-minute timeout
    assert out["conclusion"] == "failure", out["log"]
    assert "key exchange with HTTP 404" in out["summary"], out["summary"] + out["log"]
    assert "browser" in out["summary"]


def _refusing(box: Box, service: FakeCursor) -> str:
    """An agent whose client trusts only the runner's bundle (not the run's CA): it refuses
    the relay's certificate, and the agent ends without a result."""
    client = box.base / "client.py"
    client.write_text(CLIENT.read_text())
    bundle = box.base / "runner-bundle.pem"
    return (f"CAA_PORT={service.port} SSL_CERT_FILE={bundle} {PYTHON} -I {client} urllib "
            "> $SEEN/client 2>&1 || exit 1")


def test_a_refused_certificate_starts_the_agent_once_more_with_the_key_and_says_so(
        box: Box, capsys: pytest.CaptureFixture[str], service: FakeCursor) -> None:
    allowed = [arg for name in NAMES for arg in ("--allowed-domains", f"{name}:{service.port}")]
    out = _run(box, capsys, _refusing(box, service), *allowed)
    assert out["conclusion"] == "success", out["log"]
    assert out["api-key-in-box"] == "yes-fallback"
    assert "refused the relay's certificate" in out["log"]
    assert "fallback" in out["summary"]
    exchanged = [seen for seen in service.seen if seen.path.startswith("/auth/exchange")]
    assert len(exchanged) == 1  # the second start, straight to the service with its key


def _refusing_after(box: Box, service: FakeCursor, first: str) -> str:
    """An agent that runs ``first`` on its first start (the key masked), then refuses the
    certificate; on any later start it writes the key it holds into the tree (what hostile
    code would do once the key is in the box)."""
    return ('n=$(ls $SEEN | grep -c start); echo "$CURSOR_API_KEY" > $SEEN/start$n; '
            f'if [ "$n" = 0 ]; then {first} {_refusing(box, service)}; fi; '
            'printf %s "$CURSOR_API_KEY" | gzip -c | base64 -w0 > notes.txt')


@pytest.mark.parametrize("how", ["changes the tree", "mcp-config"])
def test_a_refusal_the_cli_alone_cannot_have_made_never_puts_the_key_in_the_box(
        box: Box, capsys: pytest.CaptureFixture[str], service: FakeCursor, how: str) -> None:
    """Red team (R2-1): any process in the box can refuse the relay's certificate. Before,
    a first start that wrote into the tree (or an MCP server the CLI starts first) refused it,
    the run started again with the real key in the box, and the key left in the patch in a
    form no scan knows (gzip). Now only a start that can have been the CLI's sign-in alone
    falls back: no MCP servers, the tree untouched."""
    allowed = [arg for name in NAMES for arg in ("--allowed-domains", f"{name}:{service.port}")]
    first, extra = ("echo planted > planted.txt;", []) if how == "changes the tree" else (
        "", ["--mcp-config", '{"mcpServers": {"tools": {"command": "true"}}}'])
    out = _run(box, capsys, _refusing_after(box, service, first), *allowed, *extra)
    assert _seen(box, "start1") == "", "a second start got the real key"
    assert out["conclusion"] == "failure", out["log"]
    assert out["api-key-in-box"] == "no"
    assert "did not start again with the key in the box" in out["log"]
    assert service.key not in (box.workspace / "notes.txt").read_text() \
        if (box.workspace / "notes.txt").exists() else True


def test_masked_or_fail_fails_when_the_certificate_is_refused(
        box: Box, capsys: pytest.CaptureFixture[str], service: FakeCursor) -> None:
    allowed = [arg for name in NAMES for arg in ("--allowed-domains", f"{name}:{service.port}")]
    out = _run(box, capsys, _refusing(box, service), *allowed, "--key-masking",
               "masked-or-fail")
    assert out["conclusion"] == "failure", out["log"]
    assert "did not accept the relay's certificate" in out["summary"]
    assert out["api-key-in-box"] == "no"
    assert service.seen == []  # nothing reached Cursor's service


def test_check_key_masking_answers_its_three_questions(
        box: Box, capsys: pytest.CaptureFixture[str], service: FakeCursor) -> None:
    """The check a user runs on a real runner, here against the fake service: the CLI (the
    stand-in's client) accepted the relay's certificate, the exchange was rewritten, the
    model answered."""
    from cursor_agent_action.cli import main
    from tests.support.box import agent

    script = agent(box, f"CAA_PORT={service.port} {PYTHON} -I {box.base / 'client.py'} urllib "
                        "> $SEEN/client 2>&1 || exit 1")
    (box.base / "client.py").write_text(CLIENT.read_text())
    allowed = [arg for name in NAMES for arg in ("--allowed-domains", f"{name}:{service.port}")]
    code = main(["check-key-masking", "--agent-bin", str(script), "--working-directory",
                 str(box.workspace), "--summary-file", os.devnull, *allowed])
    log = capsys.readouterr().out
    assert code == 0, log
    assert "yes  The CLI accepted the relay's certificate" in log
    assert "yes  The key exchange was rewritten: 1 exchanges" in log
    assert "yes  The model answered: Done." in log


def test_check_key_masking_says_which_answer_failed(
        box: Box, capsys: pytest.CaptureFixture[str], service: FakeCursor) -> None:
    from cursor_agent_action.cli import main
    from tests.support.box import agent

    script = agent(box, _refusing(box, service))
    allowed = [arg for name in NAMES for arg in ("--allowed-domains", f"{name}:{service.port}")]
    code = main(["check-key-masking", "--agent-bin", str(script), "--working-directory",
                 str(box.workspace), "--summary-file", os.devnull, *allowed])
    log = capsys.readouterr().out
    assert code == 1, log
    assert ("NO   The CLI accepted the relay's certificate: 0 connections terminated, "
            "1 refused") in log
    assert "NO   The model answered" in log
