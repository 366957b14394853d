"""What the GitHub follow-up commands share: environment, token, REST client, retries, errors.

PyGithub does the REST calls, through its public API; every call goes through
:meth:`GitHub.call`, which retries rate limits and transient server errors (bounded in count
and total wait) and turns every failure into one :class:`GitHubError` with a fix-it hint. What
PyGithub has no call for (a job's log, a pull request's raw diff) is one ``GET`` through
:meth:`GitHub.fetch` (httpx), with the same retries and errors.

References:
- Rate limits, ``retry-after`` and ``x-ratelimit-reset``:
  https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api
- GITHUB_TOKEN is read-only for pull requests from forks:
  https://docs.github.com/en/actions/security-for-github-actions/security-guides/automatic-token-authentication#permissions-for-the-github_token
- Default environment variables:
  https://docs.github.com/en/actions/reference/workflows-and-actions/variables#default-environment-variables
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import github
import httpx
import requests

from cursor_agent_action.errors import GitHubError, UsageError
from cursor_agent_action.gh.ratelimits import (
    MAX_ATTEMPTS,
    MAX_TOTAL_WAIT_S,
    RateLimitWaitTooLong,
    Retrier,
    retry_delay,
)
from cursor_agent_action.options import add_option
from cursor_agent_action.runner_io import Runner, scrub_urls

T = TypeVar("T")

DEFAULT_API_URL = "https://api.github.com"
DEFAULT_SERVER_URL = "https://github.com"
COMMENT_LIMIT = 65536
"""GitHub rejects issue/PR comments and PR bodies longer than this many characters."""

_HTTP_TIMEOUT_S = 30


def add_token_option(parser: argparse.ArgumentParser) -> None:
    add_option(
        parser,
        "--token-env",
        default="GITHUB_TOKEN",
        help="name of the environment variable holding the GitHub token",
    )


@dataclass
class Context:
    """The workflow run we are in, from the runner's default environment variables."""

    repository: str
    api_url: str = DEFAULT_API_URL
    server_url: str = DEFAULT_SERVER_URL
    run_id: str = ""
    run_attempt: str = ""
    event_name: str = ""
    event_path: str = ""
    _event: dict[str, Any] | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Context:
        env = os.environ if env is None else env
        repository = env.get("GITHUB_REPOSITORY", "").strip()
        if repository.count("/") != 1 or repository.startswith("/") or repository.endswith("/"):
            raise UsageError(
                f"GITHUB_REPOSITORY must be 'owner/name', got {repository!r}.",
                "Run inside GitHub Actions, or export GITHUB_REPOSITORY=owner/name.",
            )
        return cls(
            repository=repository,
            api_url=(env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"),
            server_url=(env.get("GITHUB_SERVER_URL") or DEFAULT_SERVER_URL).rstrip("/"),
            run_id=env.get("GITHUB_RUN_ID", ""),
            run_attempt=env.get("GITHUB_RUN_ATTEMPT", ""),
            event_name=env.get("GITHUB_EVENT_NAME", ""),
            event_path=env.get("GITHUB_EVENT_PATH", ""),
        )

    @property
    def owner(self) -> str:
        return self.repository.split("/")[0]

    @property
    def event(self) -> dict[str, Any]:
        """The webhook payload of the triggering event ({} when there is none)."""
        if self._event is None:
            self._event = {}
            if self.event_path:
                try:
                    loaded = json.loads(Path(self.event_path).read_text(encoding="utf-8"))
                except (OSError, ValueError) as exc:
                    raise UsageError(
                        f"cannot read the event payload {self.event_path}: {exc}.",
                        "GITHUB_EVENT_PATH must name the JSON file the runner wrote.",
                    ) from exc
                if isinstance(loaded, dict):
                    self._event = loaded
        return self._event

    @property
    def run_url(self) -> str:
        """Link to this workflow run (attempt), or "" outside Actions."""
        if not self.run_id:
            return ""
        url = f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"
        return f"{url}/attempts/{self.run_attempt}" if self.run_attempt else url

    def issue_number(self) -> int | None:
        """The pull request or issue of the triggering event, if any (for ``workflow_run``:
        the run's first pull request, which GitHub omits for runs from forks)."""
        run = self.event.get("workflow_run")
        pulls = run.get("pull_requests") if isinstance(run, dict) else None
        candidates = [self.event.get("pull_request"), self.event.get("issue"),
                      *(pulls if isinstance(pulls, list) else [])]
        for item in candidates:
            if isinstance(item, dict) and isinstance(item.get("number"), int):
                return int(item["number"])
        return None

    def fork_repository(self) -> str:
        """The head repository when the triggering pull request comes from a fork, else ""."""
        pull = self.event.get("pull_request")
        if not isinstance(pull, dict):
            return ""
        head_repo = (pull.get("head") or {}).get("repo") or {}
        name = head_repo.get("full_name") if isinstance(head_repo, dict) else None
        return name if isinstance(name, str) and name != self.repository else ""


def read_token(
    token_env: str, ctx: Context, runner: Runner, env: Mapping[str, str] | None = None
) -> str:
    """The token from ``token_env``, masked before anything can print it (``cli.main`` masks
    only the default names, and ``--token-env`` may name any variable)."""
    env = os.environ if env is None else env
    token = env.get(token_env, "").strip()
    if token:
        runner.mask(token)
        return token
    hint = (
        f"Pass a token in the environment variable {token_env}: in a workflow, "
        f"`env: {token_env}: ${{{{ secrets.GITHUB_TOKEN }}}}` (the sub-actions take "
        "`github-token`, default github.token)."
    )
    raise GitHubError(f"no GitHub token: {token_env} is empty or unset.", hint + fork_note(ctx))


def pr_number(raw: str, ctx: Context) -> int:
    """The pull request ``review`` and ``pr-context`` work on: ``pr-number`` (``#`` allowed),
    else the triggering event's."""
    value = raw.strip().lstrip("#")
    if value:
        if not value.isdigit() or int(value) <= 0:
            raise UsageError(f"pr-number must be a pull request number, got {raw!r}.",
                             "Pass e.g. ${{ github.event.pull_request.number }}.")
        return int(value)
    pull = ctx.event.get("pull_request")
    if isinstance(pull, dict) and isinstance(pull.get("number"), int):
        return int(pull["number"])
    raise UsageError(f"no pull request to review: the {ctx.event_name or 'current'} event has "
                     "none.", "Pass pr-number (e.g. from the agent job's outputs).")


def fork_note(ctx: Context) -> str:
    """Why a write fails in a run for a pull request from a fork, or "" for other runs."""
    fork = ctx.fork_repository()
    if not fork:
        return ""
    return (
        f" This run is for a pull request from the fork {fork}: GitHub gives such runs no "
        "secrets and a read-only GITHUB_TOKEN, whatever `permissions:` says. Do the write in "
        "a separate workflow triggered by `workflow_run` (README: Troubleshooting, GitHub "
        "operations)."
    )


# -- errors ------------------------------------------------------------------------------------


def github_error(
    doing: str,
    status: int,
    message: str,
    ctx: Context,
    *,
    permission: str = "",
    retried: bool = False,
) -> GitHubError:
    """One clear error for a failed REST call, with what to do about it.

    ``permission`` is the ``permissions:`` entry the call needs, e.g. "pull-requests: write";
    ``retried``: the failure was a rate limit or transient error that outlasted the retries.
    """
    text = f"{doing} failed: GitHub answered {status}" + (f" ({message})" if message else "") + "."
    note = fork_note(ctx)
    needs = f"`permissions: {permission}`" if permission else "the permission it needs"
    if retried:
        hint = (
            f"GitHub kept refusing for {MAX_ATTEMPTS} attempts (rate limit or server trouble); "
            "re-run the job later."
        )
    elif status == 401:
        hint = (
            "The token is invalid or expired. Pass a current token (the sub-actions' "
            "`github-token` input, default github.token); a personal access token may have "
            "been revoked."
        )
    elif status == 403:
        hint = (
            f"The token may not do this. Give the job {needs}; for organisation repositories "
            "also check Settings > Actions > General > Workflow permissions and the "
            "'Allow GitHub Actions to create and approve pull requests' box." + note
        )
    elif status == 404:
        hint = (
            f"Check that {ctx.repository} and the number or id are right, and that the token "
            f"can see the repository ({needs}; a token from another repository cannot)."
            + note
        )
    elif status == 422:
        hint = "GitHub rejected the request as invalid; the message above says which field."
    else:
        hint = "See https://www.githubstatus.com/ and re-run the job."
    return GitHubError(text, hint)


def network_error(doing: str, url: str, exc: BaseException) -> GitHubError:
    return GitHubError(
        scrub_urls(f"{doing} failed: cannot reach {url}: {type(exc).__name__}: {exc}."),
        "Check GITHUB_API_URL (GitHub Enterprise Server: https://HOST/api/v3) and the network.",
    )


def rate_limit_error(doing: str, exc: RateLimitWaitTooLong) -> GitHubError:
    return GitHubError(
        f"{doing} failed: GitHub's rate limit resets in {exc.delay:.0f} s, longer than the "
        f"{MAX_TOTAL_WAIT_S:.0f} s we wait (already waited {exc.waited:.0f} s).",
        "Re-run the job after the reset, or use a token with a higher limit (a GitHub App "
        "installation token).",
    )


# -- PyGithub client -------------------------------------------------------------------------


class GitHub:
    """A PyGithub client for one repository; :meth:`call` wraps every request."""

    def __init__(
        self,
        ctx: Context,
        token: str,
        *,
        log: Callable[[str], None],
        retrier: Retrier | None = None,
    ) -> None:
        self.ctx = ctx
        self.token = token
        self.retrier = retrier or Retrier()
        self.retrier.log = log
        # retry=None: PyGithub's own retry sleeps with no bound we control; ours is in call().
        # No write spacing: these commands make a handful of writes, and call() handles a
        # secondary rate limit if one comes.
        self.client = github.Github(
            auth=github.Auth.Token(token),
            base_url=ctx.api_url,
            timeout=_HTTP_TIMEOUT_S,
            retry=None,
            seconds_between_requests=None,
            seconds_between_writes=None,
            lazy=True,
            per_page=100,  # the most GitHub gives: a 3,000-file pull request in 30 pages
        )
        self.repo = self.client.get_repo(ctx.repository)

    def call(self, doing: str, request: Callable[[], T], *, permission: str = "") -> T:
        """Run ``request`` (PyGithub calls; materialise paginated lists inside it)."""
        def failure(exc: BaseException) -> tuple[int, Mapping[str, str], str] | None:
            if isinstance(exc, github.GithubException):
                return exc.status, exc.headers or {}, error_message(exc.data)
            return None

        return self._retried(doing, request, failure, permission=permission,
                             raised=(github.GithubException, requests.RequestException),
                             url=self.ctx.api_url)

    def _retried(self, doing: str, attempt: Callable[[], T],
                 failure: Callable[[BaseException], tuple[int, Mapping[str, str], str] | None],
                 *, permission: str, raised: tuple[type[Exception], ...], url: str) -> T:
        """``attempt`` retried as GitHub's answers say; what it ``raised`` as one
        :class:`GitHubError`: GitHub's answer (``failure`` reads it), or no answer at all."""
        try:
            return self.retrier.run(attempt, failure)
        except RateLimitWaitTooLong as exc:
            raise rate_limit_error(doing, exc) from None
        except raised as exc:
            answer = failure(exc)
            if answer is None:
                raise network_error(doing, url, exc) from None
            status, headers, message = answer
            retried = retry_delay(status, headers, message, self.retrier.clock()) is not None
            raise github_error(
                doing, status, message, self.ctx, permission=permission, retried=retried
            ) from None

    def http(self) -> httpx.Client:
        """A client for :meth:`fetch`: the token, GitHub's headers, redirects followed (httpx
        drops the Authorization header when a redirect leaves the host, as to log storage)."""
        return httpx.Client(follow_redirects=True, timeout=60, headers={
            "Authorization": f"Bearer {self.token}", "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "cursor-agent-action",
        })

    def fetch(self, http: httpx.Client, doing: str, url: str, *, accept: str = "",
              permission: str = "", passes: Container[int] = (),
              stream: bool = False) -> httpx.Response:
        """``GET url`` for what PyGithub has no call for, retried as :meth:`call` retries; an
        error status raises the same :class:`GitHubError`, except those in ``passes``, which
        come back for the caller to read. With ``stream``, the caller closes the response."""
        headers = {"Accept": accept} if accept else {}

        def failure(exc: BaseException) -> tuple[int, Mapping[str, str], str] | None:
            if isinstance(exc, httpx.HTTPStatusError):
                response = exc.response
                return response.status_code, response.headers, _response_message(response)
            return None

        def attempt() -> httpx.Response:
            response = http.send(http.build_request("GET", url, headers=headers), stream=stream)
            if response.status_code >= 400 and response.status_code not in passes:
                response.read()
                response.close()
                response.raise_for_status()
            return response

        return self._retried(doing, attempt, failure, permission=permission,
                             raised=(httpx.HTTPError,), url=url)

    def graphql(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        """A GraphQL request through PyGithub's entry point (``Requester.graphql_query``); an
        answer that carries ``errors`` is returned, not raised: the caller says what they mean
        (PyGithub raises them as a 400, or a 404 for one NOT_FOUND)."""
        try:
            _, data = self.client.requester.graphql_query(query, variables)
        except github.GithubException as exc:
            if exc.status in (400, 404) and isinstance(exc.data, dict) and exc.data.get("errors"):
                return dict(exc.data)
            raise
        return data


def _response_message(response: httpx.Response) -> str:
    try:
        return error_message(response.json())
    except ValueError:
        return ""


def error_message(data: object) -> str:
    """GitHub's error message plus the first validation error, if any."""
    if not isinstance(data, dict):
        return ""
    message = str(data.get("message") or "")
    errors = data.get("errors")
    if isinstance(errors, list) and errors:
        first = errors[0]
        detail = (
            first.get("message") or " ".join(str(first.get(k, "")) for k in ("field", "code"))
            if isinstance(first, dict)
            else first
        )
        if detail:
            message = f"{message}: {detail}" if message else str(detail)
    return message
