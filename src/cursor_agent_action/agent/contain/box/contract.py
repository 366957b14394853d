"""The contract between the helper (the runner's user) and the box's root side.

:class:`BoxSpec` goes in (the helper writes it, 0600: it holds the agent's environment), and
:class:`BoxStatus` comes back (the root side writes it in place into a file the helper made).
Both travel as JSON with a :data:`VERSION`: a root side from another version of the action is
refused instead of misread. Nothing else reads either file, and nothing reads them by key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from cursor_agent_action.agent.contain.box.net.credentials import Credentials
from cursor_agent_action.agent.contain.box.net.policy import NetPolicy
from cursor_agent_action.stream.keyreport import MaskReport
from cursor_agent_action.stream.wallreport import NetReport

VERSION = 2
"""2: the network report is a :class:`NetReport` (with ``why``), refused when no object."""
LISTED = 50
"""How many paths of a kind the status lists (the counts are whole)."""
STORAGES = ("auto", "copy")
"""``auto``: an id-mapped overlay over the real tree where the kernel has one, else a copy;
``copy``: always the copy (tests force the fallback with it; nor is a read-only run shown in
place under Landlock)."""


class ContractError(ValueError):
    """A spec or status that is not of this version's shape."""


@dataclass(frozen=True)
class BoxLimits:
    """The box's sizes, in bytes (:mod:`cursor_agent_action.agent.contain.isolation` sets them)."""

    memory_bytes: int
    tmp_bytes: int
    max_file_bytes: int
    max_total_bytes: int
    write_bytes: int
    max_files: int


@dataclass(frozen=True)
class BoxSpec:
    """What the helper asks of the root side: whom to run, how, on which tree, within what."""

    user: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str
    repo_root: str
    home: str
    box_dir: str
    chats_store: str
    status_file: str
    patch_file: str
    network_events: str
    limits: BoxLimits
    home_files: Mapping[str, str | None] = field(default_factory=dict)
    masks: tuple[str, ...] = ()
    reveals: tuple[str, ...] = ()
    shares: tuple[str, ...] = ()
    files: Mapping[str, str] = field(default_factory=dict)
    git: bool = True
    network: NetPolicy | None = None
    storage: str = "auto"
    namespaces: bool = False
    """Landlock as the runner's user: inside its own user, PID, mount and IPC namespaces."""
    credentials: Credentials | None = None
    """The key the relay holds (``env`` has its placeholder); None: the key, if any, in env."""
    view_commit: str = ""
    """A commit whose tree the box shows instead of the checkout (``view-commit``): written
    from the objects (:mod:`.commitview`), no patch comes back."""
    view_skip: tuple[str, ...] = ()
    """With ``view_commit``: the configuration and instruction files left out at any depth."""
    view_files: tuple[str, ...] = ()
    """With ``view_commit``: files of ours (relative to ``cwd``, in the real tree) put at the
    same place in the view (the run's policy file)."""
    tree_read_only: bool = False
    """Nothing the agent writes in the tree can be kept (no ``Write()`` rule): the Landlock
    tiers show it the checkout itself, read-only, instead of a copy
    (:mod:`cursor_agent_action.agent.contain.inplace`)."""
    owner: tuple[int, int] = (-1, -1)
    """Who wrote the spec file (the helper): set by the root side from the file's owner."""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["network"] = self.network.to_json() if self.network is not None else None
        data["credentials"] = (self.credentials.to_json() if self.credentials is not None
                               else None)
        return {"version": VERSION, **data}

    @classmethod
    def from_json(cls, data: object) -> BoxSpec:
        body = _versioned(data, "spec")
        try:
            network = body.pop("network", None)
            credentials = body.pop("credentials", None)
            sizes = body.pop("limits")
            limits = BoxLimits(**{f.name: int(sizes[f.name]) for f in fields(BoxLimits)})
            spec = cls(**body, limits=limits,
                       network=NetPolicy.from_json(network) if network else None,
                       credentials=Credentials.from_json(credentials) if credentials else None)
            return replace(
                spec, argv=tuple(map(str, spec.argv)), masks=tuple(spec.masks),
                reveals=tuple(spec.reveals), shares=tuple(spec.shares),
                view_skip=tuple(spec.view_skip), view_files=tuple(spec.view_files),
                owner=(int(spec.owner[0]), int(spec.owner[1])))
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise ContractError(f"the box's spec is not of version {VERSION}: {exc}") from exc

    @classmethod
    def take(cls, path: Path) -> BoxSpec:
        """The spec the helper wrote at ``path``, read and removed (the agent's environment, its
        API key, is not left on disk); its :attr:`owner` is the file's."""
        info = path.stat()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        finally:
            path.unlink()
        return replace(cls.from_json(data), owner=(info.st_uid, info.st_gid))


@dataclass(frozen=True)
class Listed:
    """Paths of one kind: the first :data:`LISTED` of them and how many there were."""

    paths: tuple[str, ...] = ()
    count: int = 0

    @classmethod
    def of(cls, paths: Sequence[str]) -> Listed:
        return cls(tuple(paths[:LISTED]), len(paths))


@dataclass(frozen=True)
class BoxStatus:
    """What the root side reports: whether the agent started, how it ended, its changes.

    ``started`` false: the box could not be set up, the only case in which the helper may run
    the agent another way. ``returncode`` None after a start: the box fails closed."""

    started: bool
    returncode: int | None = None
    error: str = ""
    too_large: bool = False  # not started: the tree is over the box's cap
    final: bool = False  # not started for a reason of the tree's (over the cap, unreadable):
    # the agent is not run another way
    limits: str = ""
    storage: str = ""  # which storage the tree had, and why (one line for the summary)
    network: NetReport | None = None  # the wall's report (box.net.ledger)
    mask: MaskReport | None = None  # what the relay saw of Cursor's service, when it held the key
    patch: str = ""
    patch_error: str = ""
    changed: int = 0
    protected: Listed = Listed()
    too_large_files: Listed = Listed()
    skipped: Listed = Listed()  # inside nested repositories
    special: Listed = Listed()  # fifos, sockets, devices: never opened
    too_long: Listed = Listed()  # paths over 3,072 bytes: not read
    left_out: Listed = Listed()
    left_behind: int = 0  # new or changed files .gitignore ignores, kept in the box
    links_refused: Listed = Listed()  # "path -> target (why)": links out of the repository
    includes_refused: Listed = Listed()  # docs pages that would read outside the repository
    put_back: Listed = Listed()  # a read-only run's checkout: entries it changed, put back

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["network"] = self.network.to_json() if self.network is not None else None
        data["mask"] = self.mask.to_json() if self.mask is not None else None
        return {"version": VERSION, **data}

    def encoded(self, limit: int) -> bytes:
        """The JSON, under ``limit`` bytes: the lists and the network report dropped first."""
        data = json.dumps(self.to_json(), ensure_ascii=True).encode()
        if len(data) < limit:
            return data
        short = BoxStatus(self.started, self.returncode, self.error[:4096], self.too_large,
                          self.final, self.limits, self.storage, None, self.mask, self.patch,
                          self.patch_error[:4096],
                          self.changed, Listed((), self.protected.count),
                          links_refused=Listed((), self.links_refused.count),
                          includes_refused=Listed(self.includes_refused.paths[:5],
                                                  self.includes_refused.count),
                          put_back=Listed(self.put_back.paths[:5], self.put_back.count))
        return json.dumps(short.to_json(), ensure_ascii=True).encode()

    @classmethod
    def from_json(cls, data: object) -> BoxStatus:
        body = _versioned(data, "status")
        try:
            _lists(body)
            network = body.pop("network", None)
            mask = body.pop("mask", None)
            status = cls(**body, network=None if network is None else NetReport.from_json(network),
                         mask=MaskReport.from_json(mask) if isinstance(mask, dict) else None)
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise ContractError(f"the box's status is not of version {VERSION}: {exc}") from exc
        if not isinstance(status.started, bool) or not isinstance(status.returncode,
                                                                 int | None):
            raise ContractError("the box's status has no start flag or a return code that is "
                                "no number")
        return status


@dataclass(frozen=True)
class Finished:
    """What the root side's finish (a child process of its own) reports: the patch and what
    stayed in the box, merged into the :class:`BoxStatus`."""

    patch: str = ""
    patch_error: str = ""
    changed: int = 0
    protected: Listed = Listed()
    too_large_files: Listed = Listed()
    skipped: Listed = Listed()
    special: Listed = Listed()
    too_long: Listed = Listed()
    left_out: Listed = Listed()
    left_behind: int = 0
    links_refused: Listed = Listed()
    includes_refused: Listed = Listed()

    def into(self, status: BoxStatus) -> BoxStatus:
        return replace(status, **{f.name: getattr(self, f.name) for f in fields(self)})

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, data: object) -> Finished:
        body = _versioned(data, "finish")
        try:
            _lists(body)
            return cls(**body)
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise ContractError(f"the box's finish is not of version {VERSION}: {exc}") from exc


def _lists(body: dict[str, Any]) -> None:
    """The :class:`Listed` fields of ``body``, from their JSON, in place."""
    for name in ("protected", "too_large_files", "skipped", "special", "too_long", "left_out",
                 "links_refused", "includes_refused", "put_back"):
        if name in body:
            value = body[name]
            body[name] = Listed(tuple(str(p) for p in value["paths"]), int(value["count"]))


def _versioned(data: object, what: str) -> dict[str, Any]:
    if not isinstance(data, dict) or data.get("version") != VERSION:
        found = data.get("version") if isinstance(data, dict) else type(data).__name__
        raise ContractError(f"the box's {what} is of version {found!r}, not {VERSION}")
    return {key: value for key, value in data.items() if key != "version"}
