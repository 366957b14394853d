"""A pull request's changed files split into shards, one agent job each (the Actions matrix).

Each shard holds changed files whose diff entries together stay within a byte budget
(``shard-bytes``), and there are at most ``max-shards`` of them. Files that belong together
are kept together where the budget allows:

- a directory's changed files;
- a renamed file with its source directory's files;
- a test with the code it names (``tests/test_cli.py``, ``cli_test.go``, `cli.test.ts`,
  ``CliTest.java``, ``cli_spec.rb`` with a changed ``cli.*``).

A group over the budget is split into runs of files in path order. Groups are packed, the
largest first, into the least loaded shard (balanced shards: the slowest job sets the wall
time); a small pull request is one shard. Nothing is cut: a file whose diff alone is over the
budget, one GitHub shows no diff for because it is too large, or one no shard has room for
is kept in :attr:`Plan.not_reviewed` with its size and the reason, never dropped.

The plan is data (:class:`Plan`): written by the planning step as JSON, read back by the
agent jobs (their scope) and by the merging review (which files each shard answers for).
"""

from __future__ import annotations

import heapq
import json
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cursor_agent_action.markdown import utf8_len

MAX_SHARDS = 256
"""GitHub runs at most 256 jobs of one matrix."""
DEFAULT_SHARD_BYTES = 200_000
PLAN_VERSION = 1
_TEST_PATTERNS = (
    re.compile(r"^test_(?P<stem>.+)$"),
    re.compile(r"^(?P<stem>.+)_test$"),
    re.compile(r"^(?P<stem>.+)[._]spec$"),
    re.compile(r"^(?P<stem>.+)\.test$"),
    re.compile(r"^(?P<stem>.+?)Tests?$"),
)


@dataclass(frozen=True)
class ChangedFile:
    """One changed file and the text of its entry in a shard's diff."""

    path: str
    status: str = "modified"
    previous_path: str = ""  # a renamed file's old path
    patch: str | None = None  # the hunks; None: no diff shown (binary, or too large)
    additions: int = 0
    deletions: int = 0
    too_large: bool = False  # GitHub shows no diff for a text change this large

    def entry(self) -> str:
        """The file's part of a shard's unified diff."""
        old = self.previous_path or self.path
        head = f"diff --git a/{old} b/{self.path}\n"
        if self.patch is None:
            return head + "(no diff: a binary file, or an empty or renamed-only change)\n"
        return f"{head}--- a/{old}\n+++ b/{self.path}\n{self.patch.rstrip(chr(10))}\n"

    @property
    def size(self) -> int:
        return utf8_len(self.entry())


@dataclass(frozen=True)
class Shard:
    number: int  # 1-based
    files: tuple[str, ...]
    size: int  # bytes of its diff


@dataclass(frozen=True)
class NotReviewed:
    path: str
    size: int  # bytes of its diff (changed lines for a file GitHub shows no diff of)
    reason: str


@dataclass(frozen=True)
class Plan:
    """Which shard reviews which changed file, and which files no shard reviews."""

    shards: tuple[Shard, ...]
    not_reviewed: tuple[NotReviewed, ...] = ()
    shard_bytes: int = DEFAULT_SHARD_BYTES
    head_sha: str = ""
    base_sha: str = ""
    number: int = 0
    changed_files: int = 0  # every changed file, shard or not
    source: str = ""  # where the file list came from
    renamed: dict[str, str] = field(default_factory=dict)  # old path -> new path
    _owner: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def shard_of(self, path: str) -> int:
        """The shard reviewing ``path`` (its new or, for a rename, old path), 0 for none."""
        if not self._owner:
            for shard in self.shards:
                for name in shard.files:
                    self._owner[name] = shard.number
        return self._owner.get(path) or self._owner.get(self.renamed.get(path, ""), 0)

    def matrix(self) -> dict[str, list[int]]:
        """The ``strategy.matrix`` of the agent jobs: one leg per shard."""
        return {"shard": [s.number for s in self.shards]}

    def to_json(self) -> str:
        return json.dumps({
            "version": PLAN_VERSION, "number": self.number, "head_sha": self.head_sha,
            "base_sha": self.base_sha, "changed_files": self.changed_files,
            "shard_bytes": self.shard_bytes, "source": self.source, "renamed": self.renamed,
            "shards": [{"number": s.number, "size": s.size, "files": list(s.files)}
                       for s in self.shards],
            "not_reviewed": [{"path": n.path, "size": n.size, "reason": n.reason}
                             for n in self.not_reviewed]}, indent=1)


class PlanError(ValueError):
    """A plan file that is not one of ours."""


def from_json(text: str) -> Plan:
    """A plan written by :meth:`Plan.to_json`; anything else is a :class:`PlanError`."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise PlanError(f"not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("version") != PLAN_VERSION:
        raise PlanError(f"not a version {PLAN_VERSION} review plan")
    shards: list[Shard] = []
    seen: set[str] = set()
    for index, item in enumerate(_list(data, "shards"), 1):
        if not isinstance(item, dict) or item.get("number") != index:
            raise PlanError(f"shard {index} is not numbered {index}")
        files = tuple(_strings(item.get("files"), f"shard {index}'s files"))
        if seen & set(files):
            raise PlanError(f"shard {index} names a file another shard has")
        seen.update(files)
        shards.append(Shard(index, files, _int(item.get("size"), "size")))
    gaps = []
    for item in _list(data, "not_reviewed"):
        if not isinstance(item, dict):
            raise PlanError("not_reviewed holds a non-object")
        gaps.append(NotReviewed(str(item.get("path", "")), _int(item.get("size"), "size"),
                                str(item.get("reason", ""))))
    renamed = data.get("renamed", {})
    if not isinstance(renamed, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                for k, v in renamed.items()):
        raise PlanError("renamed is not a map of paths")
    return Plan(tuple(shards), tuple(gaps), _int(data.get("shard_bytes"), "shard_bytes"),
                str(data.get("head_sha") or ""), str(data.get("base_sha") or ""),
                _int(data.get("number"), "number"), _int(data.get("changed_files"), "files"),
                str(data.get("source") or ""), renamed)


def _list(data: dict[str, Any], key: str) -> list[Any]:
    value = data.get(key)
    if not isinstance(value, list):
        raise PlanError(f"{key} is not a list")
    return value


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise PlanError(f"{what} are not a list of paths")
    return value


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PlanError(f"{what} is not a count")
    return value


# -- planning ----------------------------------------------------------------------------------


def plan(files: Sequence[ChangedFile], *, shard_bytes: int, max_shards: int,
         unlisted: Sequence[NotReviewed] = ()) -> Plan:
    """Shards of at most ``shard_bytes`` each, at most ``max_shards`` of them."""
    if not 1 <= max_shards <= MAX_SHARDS:
        raise ValueError(f"max_shards must be 1..{MAX_SHARDS}")
    gaps = list(unlisted)
    units: list[list[ChangedFile]] = []
    sizes = {f.path: f.size for f in files}
    fitting = []
    for file in files:
        if file.too_large:
            gaps.append(NotReviewed(file.path, file.additions + file.deletions,
                                    "GitHub shows no diff for it: too large (changed lines)"))
        elif sizes[file.path] > shard_bytes:
            gaps.append(NotReviewed(file.path, sizes[file.path],
                                    f"its diff alone is over shard-bytes ({shard_bytes:,})"))
        else:
            fitting.append(file)
    for group in _groups(fitting):
        units += _split(group, sizes, shard_bytes)
    units.sort(key=lambda u: (-sum(sizes[f.path] for f in u), u[0].path))
    total = sum(sizes[f.path] for f in fitting)
    count = min(max_shards, max(1, -(-total // shard_bytes)))
    while True:
        bins, left = _pack(units, sizes, count, shard_bytes)
        if not left or count >= max_shards:
            break
        count += 1
    if left:  # no room in max-shards shards: single files may still fit a gap
        singles = sorted((f for u in left for f in u), key=lambda f: (-sizes[f.path], f.path))
        bins, rest = _pack([[f] for f in singles], sizes, count, shard_bytes, bins)
        gaps += [NotReviewed(u[0].path, sizes[u[0].path],
                             f"no room left in max-shards ({max_shards}) shards of "
                             f"shard-bytes ({shard_bytes:,})") for u in rest]
    made = sorted((sorted(f.path for f in b) for b in bins if b), key=lambda names: names[0])
    shards = tuple(Shard(i, tuple(names), sum(sizes[n] for n in names))
                   for i, names in enumerate(made, 1))
    return Plan(shards, tuple(sorted(gaps, key=lambda g: g.path)), shard_bytes,
                changed_files=len(files) + len(unlisted),
                renamed={f.previous_path: f.path for f in files if f.previous_path})


def _pack(units: list[list[ChangedFile]], sizes: dict[str, int], count: int, budget: int,
          start: list[list[ChangedFile]] | None = None
          ) -> tuple[list[list[ChangedFile]], list[list[ChangedFile]]]:
    """Each unit (largest first) into the least loaded of ``count`` bins when it fits there;
    (the bins, the units that fit nowhere)."""
    bins: list[list[ChangedFile]] = [list(b) for b in start] if start else [[] for _ in
                                                                            range(count)]
    heap = [(sum(sizes[f.path] for f in b), i) for i, b in enumerate(bins)]
    heapq.heapify(heap)
    left = []
    for unit in units:
        size = sum(sizes[f.path] for f in unit)
        load, index = heap[0]
        if load + size > budget:
            left.append(unit)
            continue
        bins[index].extend(unit)
        heapq.heapreplace(heap, (load + size, index))
    return bins, left


def _split(group: list[ChangedFile], sizes: dict[str, int], budget: int
           ) -> list[list[ChangedFile]]:
    """The group whole when it fits the budget, else runs of its files in path order."""
    if sum(sizes[f.path] for f in group) <= budget:
        return [group]
    runs: list[list[ChangedFile]] = [[]]
    load = 0
    for file in sorted(group, key=lambda f: f.path):
        if runs[-1] and load + sizes[file.path] > budget:
            runs.append([])
            load = 0
        runs[-1].append(file)
        load += sizes[file.path]
    return runs


def _groups(files: list[ChangedFile]) -> list[list[ChangedFile]]:
    """Files that belong together: one directory, a rename and its source directory, a test
    and the code it names."""
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        root = key
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[key] != root:  # path compression
            parent[key], key = root, parent[key]
        return root

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    code: dict[str, list[str]] = {}
    for file in files:
        union("f:" + file.path, "d:" + posixpath.dirname(file.path))
        if file.previous_path:
            union("f:" + file.path, "d:" + posixpath.dirname(file.previous_path))
        stem = _stem(file.path)
        if tested_name(file.path) is None:
            code.setdefault(stem.casefold(), []).append(file.path)
    for file in files:
        named = tested_name(file.path)
        if named is not None and named.casefold() in code:
            best = max(code[named.casefold()], key=lambda c: _shared(c, file.path))
            union("f:" + file.path, "f:" + best)
    groups: dict[str, list[ChangedFile]] = {}
    for file in files:
        groups.setdefault(find("f:" + file.path), []).append(file)
    return list(groups.values())


def _stem(path: str) -> str:
    name = posixpath.basename(path)
    return name.split(".", 1)[0] if not name.startswith(".") else name


def tested_name(path: str) -> str | None:
    """The name of the code a test file tests (``tests/test_cli.py``: ``cli``), else None."""
    name = posixpath.basename(path)
    base = name.rsplit(".", 1)[0] if "." in name[1:] else name
    for pattern in _TEST_PATTERNS:
        match = pattern.match(base)
        if match and match.group("stem"):
            return match.group("stem")
    return None


def _shared(a: str, b: str) -> int:
    """Leading path segments ``a`` and ``b`` share."""
    count = 0
    for x, y in zip(a.split("/"), b.split("/"), strict=False):
        if x != y:
            break
        count += 1
    return count
