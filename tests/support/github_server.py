"""A loopback stand-in for the parts of GitHub's REST API the follow-up commands call.

Two threaded HTTP servers on 127.0.0.1: the API (``api_url``) and a log storage
(``storage_url``) that job-log requests redirect to, as GitHub does. Payloads follow the shapes
GitHub documents (only the fields clients read, plus ``url``/``html_url``). Every request is
recorded; faults can be queued per method and path.

    with GitHubServer() as gh:
        gh.add_run(...); env = gh.env()
        ...
        assert gh.requests_to("POST", "/pulls")
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, TypeVar

from tests.support import github_git
from tests.support.loopback import serving

TOKEN = "ghs_testtoken0123456789"
READ_ONLY_TOKEN = "ghs_readonly0123456789"
REPO = "octo/widgets"
BOT = "github-actions[bot]"
T = TypeVar("T")
_CREATED = "2026-11-22T01:00:00Z"


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    authorization: list[str] = field(default_factory=list)  # every Authorization header sent


@dataclass
class Fault:
    method: str
    path: re.Pattern[str]
    status: int
    headers: dict[str, str]
    body: Any
    times: int
    accept: str = ""  # only requests whose Accept header holds this


@dataclass
class _State:
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    jobs: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    logs: dict[int, bytes | int] = field(default_factory=dict)  # bytes, or an HTTP status
    storage_gone: set[int] = field(default_factory=set)  # redirected, but the blob is gone
    pull_files: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    diff_too_large: set[int] = field(default_factory=set)  # the diff media type answers 406
    reviews: dict[int, dict[str, Any]] = field(default_factory=dict)
    review_comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    statuses: list[dict[str, Any]] = field(default_factory=list)  # commit statuses, oldest first


class GitHubServer:
    def __init__(self, repository: str = REPO, *, per_page_max: int = 100) -> None:
        self.repository = repository
        self.per_page_max = per_page_max
        self.tokens = {TOKEN}
        self.read_only_tokens = {READ_ONLY_TOKEN}
        self.login = BOT  # who the tokens act as: the author of what they create
        self.git_dir: Path | None = None  # a bare repository: git refs and GraphQL commits
        self.signed_commits: set[str] = set()  # commits "GitHub" made (and signed)
        self.permissions: dict[str, str] = {}  # login -> collaborator permission
        # token -> the `permissions:` scopes it lacks (e.g. {"statuses"}): GitHub answers 403
        self.withheld: dict[str, set[str]] = {}
        # Called with the branch after a ref is created or moved: e.g. a push that races.
        self.after_ref_update: Callable[[str], None] | None = None
        self.state = _State()
        self.requests: list[Recorded] = []
        self.storage_requests: list[Recorded] = []
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        self._ids = itertools.count(1000)
        self._servers = contextlib.ExitStack()
        self.api_url = self.storage_url = ""  # while it serves
        self.server_url = "https://github.example"

    def __enter__(self) -> GitHubServer:
        with contextlib.ExitStack() as servers:
            self.api_url = servers.enter_context(serving(_make_handler(self, storage=False))).url
            self.storage_url = servers.enter_context(
                serving(_make_handler(self, storage=True))).url
            self._servers = servers.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        self._servers.close()

    def env(self, token: str = TOKEN, **extra: str) -> dict[str, str]:
        """The runner's default variables pointing at this server."""
        return {
            "GITHUB_API_URL": self.api_url,
            "GITHUB_SERVER_URL": self.server_url,
            "GITHUB_REPOSITORY": self.repository,
            "GITHUB_RUN_ID": "777",
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_TOKEN": token,
            **extra,
        }

    # -- faults and assertions ---------------------------------------------------------------

    def fail(
        self,
        method: str,
        path_regex: str,
        status: int,
        *,
        message: str = "",
        headers: dict[str, str] | None = None,
        body: Any = None,
        times: int = 1,
        accept: str = "",
    ) -> None:
        """Answer the next ``times`` matching requests (``accept``: only those whose Accept
        header holds it) with ``status`` (and ``body``, default GitHub's error shape)."""
        if body is None:
            body = {"message": message or _REASONS.get(status, "error"),
                    "documentation_url": "https://docs.github.com/rest"}
        with self._lock:
            self._faults.append(
                Fault(method, re.compile(path_regex), status, headers or {}, body, times,
                      accept)
            )

    def rate_limit(self, method: str, path_regex: str, *, primary: bool, reset_in: int = 0,
                   times: int = 1, now: float = 0.0) -> None:
        """Queue a primary (403, x-ratelimit-remaining: 0) or secondary (429) rate limit."""
        if primary:
            self.fail(method, path_regex, 403, message="API rate limit exceeded for installation.",
                      headers={"x-ratelimit-remaining": "0", "x-ratelimit-limit": "5000",
                               "x-ratelimit-reset": str(int(now) + reset_in)}, times=times)
        else:
            self.fail(method, path_regex, 429,
                      message="You have exceeded a secondary rate limit.",
                      headers={"retry-after": str(reset_in)}, times=times)

    def status_of(self, sha: str, context: str) -> dict[str, Any] | None:
        """The newest status of ``context`` on commit ``sha`` (what GitHub shows), or None."""
        with self._lock:
            found = [s for s in self.state.statuses
                     if s["_sha"] == sha and s["context"] == context]
        return found[-1] if found else None

    def requests_to(self, method: str, path_regex: str) -> list[Recorded]:
        pattern = re.compile(path_regex)
        with self._lock:
            return [r for r in self.requests if r.method == method and pattern.search(r.path)]

    # -- data --------------------------------------------------------------------------------

    def _url(self, path: str) -> str:
        return f"{self.api_url}/repos/{self.repository}{path}"

    def _html(self, path: str) -> str:
        return f"{self.server_url}/{self.repository}{path}"

    def add_issue(self, title: str = "An issue", body: str = "", *, login: str = "octocat",
                  labels: tuple[str, ...] = ()) -> int:
        with self._lock:
            number = next(self._numbers)
            self.state.issues[number] = self._issue(number, title, body, login)
            self.state.issues[number]["labels"] = [{"name": n, "color": "ededed"}
                                                   for n in labels]
            return number

    def add_comment(self, number: int, body: str, *, login: str = BOT) -> int:
        """A comment on issue or pull request ``number`` written by ``login``."""
        with self._lock:
            return int(self._comment(number, body, login)["id"])

    def _comment(self, number: int, body: str, login: str) -> dict[str, Any]:
        comment_id = next(self._ids)
        comment = {
            "id": comment_id, "_issue": number, "body": body, "user": _user(login),
            "url": self._url(f"/issues/comments/{comment_id}"),
            "html_url": self._html(f"/issues/{number}#issuecomment-{comment_id}"),
            "issue_url": self._url(f"/issues/{number}"),
            "created_at": _CREATED, "updated_at": _CREATED,
        }
        self.state.comments[comment_id] = comment
        return comment

    def _issue(self, number: int, title: str, body: str,
               login: str = "octocat") -> dict[str, Any]:
        return {
            "id": next(self._ids), "number": number, "title": title, "body": body,
            "state": "open", "labels": [], "user": _user(login),
            "url": self._url(f"/issues/{number}"), "html_url": self._html(f"/issues/{number}"),
            "comments_url": self._url(f"/issues/{number}/comments"),
            "created_at": _CREATED, "updated_at": _CREATED,
        }

    def add_pull(self, head: str, base: str = "main", *, head_repo: str = "",
                 head_sha: str = "") -> int:
        """An existing PR (e.g. the one a workflow runs for)."""
        with self._lock:
            pull = self._create_pull(
                {"head": head, "base": base, "title": f"PR {head}", "body": ""},
                head_repo or self.repository,
            )
            if head_sha:
                pull["head"]["sha"] = head_sha
            return int(pull["number"])

    def _create_pull(self, data: dict[str, Any], head_repo: str) -> dict[str, Any]:
        number = next(self._numbers)
        head_ref = str(data["head"]).split(":")[-1]
        issue = self._issue(number, str(data.get("title", "")), str(data.get("body") or ""))
        pull = {
            **issue,
            "url": self._url(f"/pulls/{number}"), "html_url": self._html(f"/pull/{number}"),
            "issue_url": self._url(f"/issues/{number}"), "draft": bool(data.get("draft")),
            "head": {"ref": head_ref, "sha": "0" * 40,
                     "label": f"{head_repo.partition('/')[0]}:{head_ref}",
                     "repo": {"full_name": head_repo}},
            "base": {"ref": data["base"], "sha": "1" * 40, "label": f"{self.repository}",
                     "repo": {"full_name": self.repository}},
            "merged": False, "mergeable": None,
        }
        self.state.issues[number] = {**issue, "pull_request": {"url": pull["url"]}}
        self.state.pulls[number] = pull
        return pull

    def set_pull_files(self, number: int, files: list[dict[str, Any]]) -> None:
        """The changed files of pull request ``number`` (``filename``, ``status``, ``patch``
        (omitted: binary or too large), ``previous_filename``), as ``GET /pulls/{n}/files``
        lists them. Setting them again is a new push: a review comment whose line is no longer
        in the diff becomes outdated (``line`` null), as on GitHub."""
        with self._lock:
            self.state.pull_files[number] = [
                {"sha": "f" * 40, "status": "modified", "additions": 1, "deletions": 0,
                 "changes": 1, **f} for f in files]
            for comment in self.state.review_comments.values():
                if comment["_pull"] == number and comment["line"] is not None:
                    lines = _diff_lines(self.state.pull_files[number], comment["path"])
                    if (comment["side"], comment["line"]) not in lines:
                        comment["line"] = None

    def pull_diff(self, number: int) -> str:
        """The pull request's unified diff (the ``application/vnd.github.diff`` media type)."""
        out = []
        for f in self.state.pull_files.get(number, []):
            old = f.get("previous_filename", f["filename"])
            out.append(f"diff --git a/{old} b/{f['filename']}\n")
            if "patch" not in f:
                out.append(f"Binary files a/{old} and b/{f['filename']} differ\n")
                continue
            out.append(f"--- a/{old}\n+++ b/{f['filename']}\n{f['patch']}\n")
        return "".join(out)

    def add_run(
        self,
        jobs: list[dict[str, Any]],
        *,
        head_sha: str = "a" * 40,
        head_branch: str = "feature",
        pull_numbers: tuple[int, ...] = (),
        head_repo: str = "",
        conclusion: str = "failure",
    ) -> int:
        """A completed workflow run; ``jobs`` entries: name, conclusion, steps
        [(name, conclusion, started, completed)], log (bytes or an HTTP status)."""
        with self._lock:
            run_id = next(self._ids)
            self.state.runs[run_id] = {
                "id": run_id, "name": "CI", "run_number": 12, "run_attempt": 1,
                "event": "pull_request", "status": "completed", "conclusion": conclusion,
                "head_branch": head_branch, "head_sha": head_sha,
                "url": self._url(f"/actions/runs/{run_id}"),
                "html_url": self._html(f"/actions/runs/{run_id}"),
                "jobs_url": self._url(f"/actions/runs/{run_id}/jobs"),
                "logs_url": self._url(f"/actions/runs/{run_id}/logs"),
                "pull_requests": [
                    {"number": n, "url": self._url(f"/pulls/{n}"),
                     "head": {"ref": head_branch, "sha": head_sha},
                     "base": {"ref": "main", "sha": "1" * 40}} for n in pull_numbers
                ],
                "head_repository": {"full_name": head_repo or self.repository},
                "repository": {"full_name": self.repository},
                "created_at": _CREATED, "updated_at": _CREATED,
            }
            job_list = []
            for job in jobs:
                job_id = next(self._ids)
                job_list.append({
                    "id": job_id, "run_id": run_id, "name": job["name"], "status": "completed",
                    "conclusion": job.get("conclusion", "failure"),
                    "url": self._url(f"/actions/jobs/{job_id}"),
                    "html_url": self._html(f"/actions/runs/{run_id}/job/{job_id}"),
                    "started_at": _CREATED, "completed_at": _CREATED, "head_sha": head_sha,
                    "steps": [
                        {"name": name, "status": "completed", "conclusion": result, "number": i,
                         "started_at": start, "completed_at": end}
                        for i, (name, result, start, end) in enumerate(job.get("steps", []), 1)
                    ],
                })
                self.state.logs[job_id] = job.get("log", b"")
            self.state.jobs[run_id] = job_list
            return run_id

    def job_ids(self, run_id: int) -> list[int]:
        return [job["id"] for job in self.state.jobs[run_id]]


_REASONS = {401: "Bad credentials", 403: "Resource not accessible by integration",
            404: "Not Found", 410: "Gone", 422: "Validation Failed",
            500: "Internal Server Error", 502: "Bad Gateway"}


class _Missing(Exception):
    """The resource a request names does not exist: 404."""


def _need(value: T | None) -> T:
    if value is None:
        raise _Missing
    return value


def _user(login: str) -> dict[str, Any]:
    return {"login": login, "id": 1, "type": "Bot" if login.endswith("[bot]") else "User"}


def _make_handler(server: GitHubServer, *, storage: bool) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        gh = server
        is_storage = storage

    return Handler


class _Handler(BaseHTTPRequestHandler):
    gh: GitHubServer
    is_storage: bool
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def _send(self, status: int, payload: Any = None, headers: dict[str, str] | None = None,
              raw: bytes | None = None) -> None:
        data = raw if raw is not None else json.dumps(payload).encode() if payload is not None \
            else b""
        self.send_response(status)
        content_type = "text/plain" if raw is not None else "application/json; charset=utf-8"
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        parsed = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        smart_git = parsed.path.endswith(("/info/refs", "/git-receive-pack"))
        body = json.loads(raw) if raw and not smart_git else None
        record = Recorded(method, parsed.path, query, dict(self.headers.items()), body,
                          self.headers.get_all("Authorization") or [])
        gh = self.gh
        with gh._lock:
            (gh.storage_requests if self.is_storage else gh.requests).append(record)
        if self.is_storage:
            self._storage(parsed.path)
            return
        if smart_git:  # git over HTTPS: GitHub's answer when the token may not push
            self._send(403, raw=b"Permission to octo/widgets.git denied to github-actions[bot].")
            return
        with gh._lock:
            for fault in gh._faults:
                if (fault.times > 0 and fault.method == method and fault.path.search(parsed.path)
                        and fault.accept in self.headers.get("Accept", "")):
                    fault.times -= 1
                    self._send(fault.status, fault.body, fault.headers)
                    return
        auth = self.headers.get("Authorization", "")
        token = auth.split(" ", 1)[1] if " " in auth else ""
        if token not in gh.tokens | gh.read_only_tokens:
            self._send(401, {"message": "Bad credentials"})
            return
        if method != "GET" and (token in gh.read_only_tokens or _scope(parsed.path)
                                in gh.withheld.get(token, set())):
            self._send(403, {"message": "Resource not accessible by integration"})
            return
        if parsed.path == "/graphql" and method == "POST":
            with gh._lock:
                self._graphql(body)
            return
        prefix = f"/repos/{gh.repository}"
        if not parsed.path.startswith(prefix):
            self._send(404, {"message": "Not Found"})
            return
        with gh._lock:
            try:
                self._route(method, parsed.path[len(prefix):], query, body)
            except _Missing:
                self._send(404, {"message": "Not Found"})

    def _storage(self, path: str) -> None:
        match = re.fullmatch(r"/logs/(\d+)", path)
        job_id = int(match.group(1)) if match else 0
        log = self.gh.state.logs.get(job_id)
        if isinstance(log, bytes) and job_id not in self.gh.state.storage_gone:
            self._send(200, raw=log)
        else:
            self._send(404, raw=b"<Error><Code>BlobNotFound</Code></Error>")

    def _graphql(self, body: Any) -> None:
        query = str((body or {}).get("query", ""))
        if "minimizeComment" in query:
            self._send(200, _minimize(self.gh, body["variables"]["id"], query))
            return
        if "createCommitOnBranch" not in query or self.gh.git_dir is None:
            self._send(200, {"errors": [{"message": "unsupported query"}]})
            return
        given = body["variables"]["input"]
        self._send(200, github_git.create_commit_on_branch(
            self.gh.git_dir, self.gh.repository, given, self.gh.signed_commits))

    def _git_refs(self, method: str, path: str, body: Any) -> bool:
        """git/refs and collaborator permissions; False when ``path`` is neither."""
        gh = self.gh
        if match := re.fullmatch(r"/collaborators/([^/]+)/permission", path):
            login = urllib.parse.unquote(match.group(1))
            if method != "GET" or login not in gh.permissions:
                self._send(404, {"message": "Not Found"})
            else:
                level = gh.permissions[login]
                self._send(200, {"permission": level, "role_name": level, "user": _user(login)})
            return True
        ref_path = re.fullmatch(r"/git/refs?/heads/(.+)", path)
        if not (path == "/git/refs" or ref_path) or gh.git_dir is None:
            return False
        if method == "POST":
            name = str(body["ref"]).removeprefix("refs/heads/")
            if github_git.ref(gh.git_dir, name) is not None:
                self._send(422, {"message": "Reference already exists"})
                return True
            github_git.set_ref(gh.git_dir, name, body["sha"])
            if gh.after_ref_update:
                gh.after_ref_update(name)
        else:
            name = urllib.parse.unquote(ref_path.group(1)) if ref_path else ""
            if github_git.ref(gh.git_dir, name) is None:
                self._send(404, {"message": "Not Found"})
                return True
            if method == "PATCH":
                if not github_git.commit_exists(gh.git_dir, body["sha"]):
                    self._send(422, {"message": "Object does not exist"})
                    return True
                github_git.set_ref(gh.git_dir, name, body["sha"])
                if gh.after_ref_update:
                    gh.after_ref_update(name)
        sha = github_git.ref(gh.git_dir, name)
        self._send(201 if method == "POST" else 200, {
            "ref": f"refs/heads/{name}", "node_id": "REF_1",
            "url": f"{gh.api_url}/repos/{gh.repository}/git/refs/heads/{name}",
            "object": {"sha": sha, "type": "commit", "url": ""}})
        return True

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> None:
        gh, state = self.gh, self.gh.state
        if (self._git_refs(method, path, body) or _pull_reviews(self, method, path, query, body)
                or _statuses(self, method, path, query, body)):
            return
        routes: list[tuple[str, str]] = [
            ("GET", r""), ("GET", r"/pulls"), ("POST", r"/pulls"), ("GET", r"/pulls/(\d+)"),
            ("PATCH", r"/pulls/(\d+)"), ("GET", r"/issues/(\d+)"), ("POST", r"/issues"),
            ("GET", r"/issues"), ("PATCH", r"/issues/(\d+)"),
            ("POST", r"/issues/(\d+)/labels"), ("GET", r"/issues/(\d+)/comments"),
            ("POST", r"/issues/(\d+)/comments"), ("PATCH", r"/issues/comments/(\d+)"),
            ("GET", r"/actions/runs/(\d+)"), ("GET", r"/actions/runs/(\d+)/jobs"),
            ("GET", r"/actions/jobs/(\d+)/logs"),
        ]
        for verb, pattern in routes:
            match = re.fullmatch(pattern, path)
            if verb == method and match:
                break
        else:
            self._send(404, {"message": "Not Found"})
            return
        arg = int(match.group(1)) if match.groups() else 0
        key = (method, pattern)
        if key == ("GET", r""):
            owner = gh.repository.split("/")[0]
            self._send(200, {"id": 1, "full_name": gh.repository, "name": gh.repository.split(
                "/")[1], "owner": _user(owner), "default_branch": "main",
                "url": f"{gh.api_url}/repos/{gh.repository}", "private": False})
        elif key == ("GET", r"/pulls"):
            pulls = [p for p in state.pulls.values()
                     if query.get("state", "open") in ("all", p["state"])
                     and ("head" not in query or query["head"] == p["head"]["label"])
                     and ("base" not in query or query["base"] == p["base"]["ref"])]
            self._page(pulls, query)
        elif key == ("POST", r"/pulls"):
            head = str(body["head"])
            label = head if ":" in head else f"{gh.repository.split('/')[0]}:{head}"
            if any(p["head"]["label"] == label and p["base"]["ref"] == body["base"]
                   and p["state"] == "open" for p in state.pulls.values()):
                self._send(422, {"message": "Validation Failed", "errors": [{
                    "resource": "PullRequest", "code": "custom",
                    "message": f"A pull request already exists for {label}."}]})
                return
            self._send(201, gh._create_pull(body, gh.repository))
        elif key in (("GET", r"/pulls/(\d+)"), ("PATCH", r"/pulls/(\d+)")):
            pull = _need(state.pulls.get(arg))
            if method == "PATCH":
                for name in ("title", "body", "state", "base"):
                    if name in body:
                        pull[name] = body[name] if name != "base" else {**pull["base"],
                                                                        "ref": body["base"]}
            self._send(200, pull)
        elif key == ("GET", r"/issues/(\d+)"):
            self._send(200, _need(state.issues.get(arg)))
        elif key == ("POST", r"/issues"):
            number = next(gh._numbers)
            state.issues[number] = gh._issue(number, body["title"], body.get("body", ""),
                                             gh.login)
            state.issues[number]["labels"] = [{"name": n, "color": "ededed"}
                                              for n in body.get("labels", [])]
            self._send(201, state.issues[number])
        elif key == ("GET", r"/issues"):
            wanted = {n for n in query.get("labels", "").split(",") if n}
            self._page([i for i in state.issues.values()
                        if query.get("state", "open") in ("all", i["state"])
                        and wanted <= {label["name"] for label in i["labels"]}], query)
        elif key == ("PATCH", r"/issues/(\d+)"):
            issue = _need(state.issues.get(arg))
            issue.update({k: body[k] for k in ("title", "body", "state") if k in body})
            self._send(200, issue)
        elif key == ("POST", r"/issues/(\d+)/labels"):
            issue = _need(state.issues.get(arg))
            names = body["labels"] if isinstance(body, dict) else body
            for name in names:
                if name not in [label["name"] for label in issue["labels"]]:
                    issue["labels"].append({"name": name, "color": "ededed"})
            if arg in state.pulls:
                state.pulls[arg]["labels"] = issue["labels"]
            self._send(200, issue["labels"])
        elif key == ("GET", r"/issues/(\d+)/comments"):
            _need(state.issues.get(arg))
            self._page([c for c in state.comments.values() if c["_issue"] == arg], query)
        elif key == ("POST", r"/issues/(\d+)/comments"):
            _need(state.issues.get(arg))
            self._send(201, gh._comment(arg, body["body"], gh.login))
        elif key == ("PATCH", r"/issues/comments/(\d+)"):
            edited = _need(state.comments.get(arg))
            edited["body"] = body["body"]
            self._send(200, edited)
        elif key == ("GET", r"/actions/runs/(\d+)"):
            self._send(200, _need(state.runs.get(arg)))
        elif key == ("GET", r"/actions/runs/(\d+)/jobs"):
            self._page(_need(state.jobs.get(arg)), query, wrap="jobs")
        else:  # job logs: a redirect to the storage, as GitHub does
            log = state.logs.get(arg)
            if log is None or isinstance(log, int):
                status = log if isinstance(log, int) else 404
                self._send(status, {"message": _REASONS.get(status, "error")})
                return
            self._send(302, headers={"Location": f"{gh.storage_url}/logs/{arg}?sig=abc"})

    def _page(self, items: list[dict[str, Any]], query: dict[str, str], wrap: str = "") -> None:
        per_page = min(int(query.get("per_page", 30)), self.gh.per_page_max)
        page = int(query.get("page", 1))
        chunk = items[(page - 1) * per_page: page * per_page]
        chunk = [{k: v for k, v in item.items() if not k.startswith("_")} for item in chunk]
        headers = {}
        if page * per_page < len(items):
            next_query = urllib.parse.urlencode({**query, "page": page + 1})
            path = urllib.parse.urlsplit(self.path).path
            headers["Link"] = f'<{self.gh.api_url}{path}?{next_query}>; rel="next"'
        payload: Any = {"total_count": len(items), wrap: chunk} if wrap else chunk
        self._send(200, payload, headers)


def _scope(path: str) -> str:
    """The ``permissions:`` scope a write to ``path`` needs, where a test can withhold it."""
    return "statuses" if re.fullmatch(r"/repos/[^/]+/[^/]+/statuses/[^/]+", path) else ""


_STATES = ("error", "failure", "pending", "success")


def _statuses(handler: _Handler, method: str, path: str, query: dict[str, str],
              body: Any) -> bool:
    """Commit statuses: ``POST /statuses/{sha}``, ``GET /commits/{ref}/statuses`` (newest
    first) and the combined ``GET /commits/{ref}/status``; False for any other path. Checked as
    GitHub checks them: the state, a description of at most 140 characters, a commit that
    exists (when the server has a git directory)."""
    gh = handler.gh
    made = re.fullmatch(r"/statuses/([^/]+)", path)
    listed = re.fullmatch(r"/commits/([^/]+)/(statuses|status)", path)
    if made and method == "POST":
        sha = urllib.parse.unquote(made[1])
        problem = ("" if body.get("state") in _STATES else
                   f"state is not included in the list {list(_STATES)}")
        if len(body.get("description") or "") > 140:
            problem = "description is too long (maximum is 140 characters)"
        if not re.fullmatch(r"[0-9a-f]{40}", sha) or (
                gh.git_dir is not None and not github_git.commit_exists(gh.git_dir, sha)):
            problem = f"No commit found for SHA: {sha}"
        if problem:
            handler._send(422, {"message": "Validation Failed", "errors": [problem]})
            return True
        status_id = next(gh._ids)
        status = {"id": status_id, "node_id": f"SC_{status_id}", "_sha": sha,
                  "state": body["state"], "description": body.get("description"),
                  "target_url": body.get("target_url"),
                  "context": body.get("context") or "default", "creator": _user(gh.login),
                  "url": gh._url(f"/statuses/{sha}"), "created_at": _CREATED,
                  "updated_at": _CREATED}
        gh.state.statuses.append(status)
        handler._send(201, {k: v for k, v in status.items() if not k.startswith("_")})
        return True
    if not (listed and method == "GET"):
        return False
    sha = urllib.parse.unquote(listed[1])
    mine = [s for s in reversed(gh.state.statuses) if s["_sha"] == sha]
    if listed[2] == "statuses":
        handler._page(mine, query)
        return True
    latest = list({s["context"]: s for s in reversed(mine)}.values())  # newest per context
    states = {s["state"] for s in latest}
    combined = ("failure" if states & {"error", "failure"} else
                "pending" if not latest or "pending" in states else "success")
    handler._send(200, {"state": combined, "sha": sha, "total_count": len(latest),
                        "statuses": [{k: v for k, v in s.items() if not k.startswith("_")}
                                     for s in latest]})
    return True


def _diff_lines(files: list[dict[str, Any]], path: str) -> dict[tuple[str, int], int]:
    """(side, line) -> hunk of ``path``'s patch: the lines GitHub lets a comment sit on.
    Written apart from the action's own parser, so a test checks one against the other."""
    found: dict[tuple[str, int], int] = {}
    patch = next((f.get("patch") for f in files if f["filename"] == path), None) or ""
    hunk, old, new = -1, 0, 0
    for text in patch.splitlines():
        header = re.match(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@", text)
        if header:
            hunk, old, new = hunk + 1, int(header[1]), int(header[2])
        elif hunk >= 0 and text[:1] in ("+", "-", " "):
            if text[0] in "+ ":
                found[("RIGHT", new)] = hunk
                new += 1
            if text[0] in "- ":
                found[("LEFT", old)] = hunk
                old += 1
    return found


def _review_error(files: list[dict[str, Any]], comment: dict[str, Any]) -> str:
    """GitHub's 422 message for a review comment it would not take, or ""."""
    lines = _diff_lines(files, comment["path"])
    side = comment.get("side", "RIGHT")
    hunk = lines.get((side, comment["line"]))
    if hunk is None:
        return "Pull request review thread line must be part of the diff"
    if "start_line" in comment:
        start_side = comment.get("start_side", side)
        if lines.get((start_side, comment["start_line"])) != hunk or any(
                lines.get((side, n)) != hunk
                for n in range(comment["start_line"], comment["line"] + 1)):
            return "Pull request review thread start line must be in the same hunk as the line"
    return ""


def _pull_reviews(handler: _Handler, method: str, path: str, query: dict[str, str],
                  body: Any) -> bool:
    """Files, the diff media type, reviews and review comments of pull requests; False when
    ``path`` is none of them."""
    gh, state = handler.gh, handler.gh.state
    match = re.fullmatch(r"/pulls/(\d+)(/files|/reviews|/comments|/reviews/(\d+))?", path)
    if not match or (match[2] is None and (method != "GET" or "diff" not in handler.headers.get(
            "Accept", ""))):
        return False
    number = int(match[1])
    pull = state.pulls.get(number)
    if pull is None:
        handler._send(404, {"message": "Not Found"})
        return True
    what = match[2]
    if what is None:  # GET with Accept: application/vnd.github.diff
        if number in state.diff_too_large:
            handler._send(406, {"message": "Sorry, the diff exceeded the maximum number of "
                                "lines (20000)", "errors": [{"code": "too_large"}]})
        else:
            handler._send(200, raw=gh.pull_diff(number).encode())
        return True
    files = state.pull_files.get(number, [])
    if (method, what) == ("GET", "/files"):
        handler._page(files, query)
    elif (method, what) == ("GET", "/reviews"):
        handler._page([r for r in state.reviews.values() if r["_pull"] == number], query)
    elif (method, what) == ("GET", "/comments"):
        handler._page([c for c in state.review_comments.values() if c["_pull"] == number],
                      query)
    elif (method, what) == ("POST", "/reviews"):
        own = {"APPROVE": "approve", "REQUEST_CHANGES": "request changes on"}.get(
            body.get("event", ""))
        if own and pull["user"]["login"] == gh.login:
            handler._send(422, {"message": "Unprocessable Entity",
                                "errors": [f"Review Can not {own} your own pull request"]})
            return True
        problems = [p for c in body.get("comments", []) if (p := _review_error(files, c))]
        if any(len(text) > 65536 for text in
               [body.get("body", ""), *(c["body"] for c in body.get("comments", []))]):
            problems.append("body is too long (maximum is 65536 characters)")
        if problems:
            handler._send(422, {"message": "Unprocessable Entity", "errors": problems[:1]})
            return True
        review_id = next(gh._ids)
        state_name = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED"}.get(
            body.get("event", ""), "COMMENTED")
        review = {"id": review_id, "node_id": f"PRR_{review_id}", "_pull": number,
                  "user": _user(gh.login), "body": body.get("body", ""), "state": state_name,
                  "commit_id": body.get("commit_id"), "submitted_at": _CREATED,
                  "html_url": gh._html(f"/pull/{number}#pullrequestreview-{review_id}"),
                  "pull_request_url": pull["url"]}
        state.reviews[review_id] = review
        for given in body.get("comments", []):
            comment_id = next(gh._ids)
            state.review_comments[comment_id] = {
                "id": comment_id, "node_id": f"PRRC_{comment_id}", "_pull": number,
                "_minimized": "", "pull_request_review_id": review_id, "user": _user(gh.login),
                "path": given["path"], "line": given["line"],
                "side": given.get("side", "RIGHT"), "start_line": given.get("start_line"),
                "start_side": given.get("start_side"), "body": given["body"],
                "html_url": gh._html(f"/pull/{number}#discussion_r{comment_id}"),
                "created_at": _CREATED, "updated_at": _CREATED}
        handler._send(200, {k: v for k, v in review.items() if not k.startswith("_")})
    elif method == "PUT" and match[3]:
        review = _need(state.reviews.get(int(match[3])))
        review["body"] = body["body"]
        handler._send(200, {k: v for k, v in review.items() if not k.startswith("_")})
    else:
        handler._send(404, {"message": "Not Found"})
    return True


def _minimize(gh: GitHubServer, node_id: str, query: str) -> dict[str, Any]:
    """GraphQL ``minimizeComment`` on a review comment (by node id)."""
    found = next((c for c in gh.state.review_comments.values() if c["node_id"] == node_id),
                 None)
    if found is None:
        return {"data": {"minimizeComment": None}, "errors": [
            {"type": "NOT_FOUND", "message": f"Could not resolve to a node with the global id of "
             f"'{node_id}'"}]}
    classifier = re.search(r"classifier:\s*([A-Z_]+)", query)
    found["_minimized"] = classifier[1] if classifier else "?"
    return {"data": {"minimizeComment": {"minimizedComment": {"isMinimized": True}}}}


def error_line(log: str) -> str:
    """The one ``::error`` line a failed command printed (fails when there is not exactly one)."""
    (line,) = [ln for ln in log.splitlines() if ln.startswith("::error")]
    return line
