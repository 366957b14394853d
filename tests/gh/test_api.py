"""Rate limits and retries through PyGithub over real sockets, with an injected clock and sleep."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cursor_agent_action.errors import GitHubError, UsageError
from cursor_agent_action.gh.api import Context, GitHub
from cursor_agent_action.gh.ratelimits import Retrier, retry_delay
from tests.support.github_server import TOKEN, GitHubServer

NOW = 1_800_000_000.0


@pytest.fixture
def server() -> Iterator[GitHubServer]:
    with GitHubServer() as gh:
        gh.add_pull("feature")
        yield gh


def client(server: GitHubServer, sleeps: list[float], log: list[str] | None = None) -> GitHub:
    ctx = Context.from_env(server.env())
    retrier = Retrier(sleep=sleeps.append, clock=lambda: NOW)
    return GitHub(ctx, TOKEN, log=(log if log is not None else []).append, retrier=retrier)


def list_pulls(gh: GitHub) -> int:
    return gh.call("listing pull requests", lambda: len(list(gh.repo.get_pulls())))


def test_primary_rate_limit_waits_until_the_reset(server: GitHubServer) -> None:
    server.rate_limit("GET", r"/pulls$", primary=True, reset_in=30, now=NOW)
    sleeps: list[float] = []
    log: list[str] = []
    assert list_pulls(client(server, sleeps, log)) == 1
    assert sleeps == [31.0]  # until the reset, plus a second of slack
    assert log == ["GitHub answered 403; waiting 31 s before retry 1/4."]
    assert len(server.requests_to("GET", r"/pulls$")) == 2


def test_secondary_rate_limit_honours_retry_after(server: GitHubServer) -> None:
    server.rate_limit("GET", r"/pulls$", primary=False, reset_in=7, times=2)
    sleeps: list[float] = []
    assert list_pulls(client(server, sleeps)) == 1
    assert sleeps == [7.0, 7.0]


def test_a_reset_too_far_away_fails_at_once_with_when(server: GitHubServer) -> None:
    server.rate_limit("GET", r"/pulls$", primary=True, reset_in=3600, now=NOW)
    sleeps: list[float] = []
    with pytest.raises(GitHubError) as info:
        list_pulls(client(server, sleeps))
    assert sleeps == []
    assert "rate limit resets in 3601 s, longer than the 300 s we wait" in info.value.message
    assert "Re-run the job after the reset" in info.value.hint


def test_total_wait_is_bounded(server: GitHubServer) -> None:
    server.rate_limit("GET", r"/pulls$", primary=False, reset_in=120, times=10)
    sleeps: list[float] = []
    with pytest.raises(GitHubError, match=r"resets in 120 s.*already waited 240 s"):
        list_pulls(client(server, sleeps))
    assert sleeps == [120.0, 120.0]


def test_attempts_are_bounded(server: GitHubServer) -> None:
    server.rate_limit("GET", r"/pulls$", primary=False, reset_in=1, times=10)
    sleeps: list[float] = []
    with pytest.raises(GitHubError) as info:
        list_pulls(client(server, sleeps))
    assert sleeps == [1.0] * 4
    assert len(server.requests_to("GET", r"/pulls$")) == 5
    assert "GitHub answered 429" in info.value.message
    assert "kept refusing" in info.value.hint


def test_exhausted_primary_rate_limit_says_so_not_permissions(server: GitHubServer) -> None:
    server.rate_limit("GET", r"/pulls$", primary=True, reset_in=0, now=NOW, times=10)
    sleeps: list[float] = []
    with pytest.raises(GitHubError) as info:
        list_pulls(client(server, sleeps))
    assert sleeps == [1.0] * 4
    assert "GitHub answered 403 (API rate limit exceeded" in info.value.message
    assert "kept refusing for 5 attempts" in info.value.hint
    assert "permissions" not in info.value.hint


def test_transient_server_error_is_retried(server: GitHubServer) -> None:
    server.fail("GET", r"/pulls$", 502)
    sleeps: list[float] = []
    assert list_pulls(client(server, sleeps)) == 1
    assert sleeps == [2.0]


def test_plain_403_is_not_retried(server: GitHubServer) -> None:
    server.fail("GET", r"/pulls$", 403, message="Resource not accessible by integration")
    sleeps: list[float] = []
    with pytest.raises(GitHubError, match="403"):
        list_pulls(client(server, sleeps))
    assert sleeps == []
    assert len(server.requests_to("GET", r"/pulls$")) == 1


def test_bad_credentials_401(server: GitHubServer) -> None:
    ctx = Context.from_env(server.env())
    sleeps: list[float] = []
    gh = GitHub(ctx, "ghs_wrong_token_000", log=print, retrier=Retrier(sleep=sleeps.append))
    with pytest.raises(GitHubError) as info:
        list_pulls(gh)
    assert "GitHub answered 401 (Bad credentials)" in info.value.message
    assert "invalid or expired" in info.value.hint
    assert sleeps == []


@pytest.mark.parametrize(("status", "headers", "message", "expected"), [
    (403, {"Retry-After": "12"}, "", 12.0),
    (429, {}, "", 60.0),
    (403, {}, "You have exceeded a secondary rate limit", 60.0),
    (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) - 5)}, "", 1.0),
    (403, {"x-ratelimit-remaining": "12"}, "", None),
    (404, {"retry-after": "3"}, "", None),
    (503, {}, "", 2.0),
])
def test_retry_delay_follows_githubs_documented_order(
    status: int, headers: dict[str, str], message: str, expected: float | None
) -> None:
    assert retry_delay(status, headers, message, NOW) == expected


def test_context_needs_owner_slash_name() -> None:
    with pytest.raises(UsageError, match="GITHUB_REPOSITORY must be 'owner/name'"):
        Context.from_env({"GITHUB_REPOSITORY": "just-a-name"})


def test_scrub_urls_hides_userinfo_and_signed_query_strings() -> None:
    from cursor_agent_action.runner_io import scrub_urls

    text = ("HTTPSConnectionPool(host='h', port=443): Max retries exceeded with url: "
            "/logs/5?sig=AbC%2Fd&se=2026 (Caused by x) https://u:tok@ghe.example/api/v3 Why?")
    assert scrub_urls(text) == (
        "HTTPSConnectionPool(host='h', port=443): Max retries exceeded with url: "
        "/logs/5?*** (Caused by x) https://***@ghe.example/api/v3 Why?")
