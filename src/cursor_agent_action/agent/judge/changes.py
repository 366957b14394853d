"""What the agent changed, as the run step hands it on: the checked patch and ``files-changed``.

Before the agent starts, :meth:`ChangeTracker.start` takes a baseline of the repository the
workspace is in; afterwards :meth:`ChangeTracker.finish` computes the changes against the commit
the agent started from (:mod:`cursor_agent_action.changeset`: never the repository's index,
never a filter, every git call hardened) and writes the binary patch. ``files-changed`` comes
from the same computation, cross-checked with what the write tools reported, and checked
against the policy.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cursor_agent_action import changeset, safegit
from cursor_agent_action.agent.contain.box.contract import BoxStatus
from cursor_agent_action.agent.contain.box.upper import RealTree
from cursor_agent_action.agent.guards.permissions import Policy
from cursor_agent_action.agent.judge import leftout
from cursor_agent_action.agent.judge.verdict import Verdict
from cursor_agent_action.docpages.judge import Judgement
from cursor_agent_action.docpages.kinds import usually_executed
from cursor_agent_action.keyscan import KeyScan
from cursor_agent_action.runner_io import listing
from cursor_agent_action.stream.record import Cause, LeftOut
from cursor_agent_action.worktree import shown_path

PATCH_NAME = "changes.patch"
ABSENT = (changeset.ABSENT_MODE, "")
"""A path the tree did not have before the run (its object id filled in when compared)."""


@dataclass
class Handoff:
    """The run's changes as outputs: the patch file ("" without one) and whether anything
    changed; ``message`` says why there is no patch."""

    patch_file: str
    changed: bool
    message: str = ""
    code_pages: list[str] = field(default_factory=list)  # "path:line: why" (MDX)


@dataclass
class Applied:
    """What became of the box's patch in the real working tree."""

    refused: list[str]  # protected paths the box did not give back (the first few)
    notes: list[str]
    error: str = ""  # the patch could not be applied (nothing was)
    refused_count: int = 0
    links_refused: list[str] = field(default_factory=list)  # "path -> target (why)"
    links_refused_count: int = 0
    includes_refused: list[str] = field(default_factory=list)  # "path: directive"
    left_out: list[LeftOut] = field(default_factory=list)  # what stayed in the box, and why
    left_out_count: int = 0
    key_found: list[str] = field(default_factory=list)  # "path (form)": nothing was applied


class ChangeTracker:
    """The baseline before the run and the changes after it, for one workspace."""

    def __init__(self, workspace: Path, *, contained: bool = False,
                 keys: KeyScan | None = None) -> None:
        """``contained``: the agent runs in the box, which makes its patch against the real tree
        as it stands; nothing of the tree is hashed or kept here, only the paths the box's
        patches touch (:meth:`apply_box`). Else (or after :meth:`uncontained`) every file is
        hashed now, as the base of the changes after the run. ``keys``: the API key's forms,
        looked for in every patch before it is applied or handed on."""
        self.workspace = workspace
        self.keys = keys if keys is not None else KeyScan(())
        self.repo = changeset.repository_root(workspace)
        # The repository's own config files (where fsmonitor, hooks and filter drivers live),
        # also of a repository with no commit yet. A linked worktree's git dir has only its
        # config.worktree: git reads ``config`` in the common dir, shared by every worktree.
        self.git_config_files: list[Path] = []
        try:
            git_dir, common = safegit.git_dirs(workspace)
        except (safegit.GitFailed, safegit.GitNotFound):
            pass
        else:
            self.git_config_files = list(dict.fromkeys((
                common / "config", common / "config.worktree", git_dir / "config.worktree")))
        self.baseline: changeset.Baseline | None = None
        self.touched: dict[str, tuple[str, str]] = {}  # path -> its state before the run
        self.problem = ""
        self.applied_box = False  # a box's patch was applied to this tree
        if self.repo is not None:
            try:
                changeset.head_commit(self.repo)
            except changeset.ChangesetError as exc:
                self.problem = str(exc)
                self.repo = None
        if not contained:
            self.uncontained()

    def uncontained(self) -> None:
        """The agent runs on the real tree: its base, every file hashed (once)."""
        if self.repo is None or self.baseline is not None:
            return
        try:
            self.baseline = changeset.baseline(self.repo)
        except changeset.ChangesetError as exc:
            self.problem = str(exc)
            self.repo = None

    def finish(self, verdict: Verdict, patch_dir: Path, ignore: set[Path]) -> Handoff:
        """Compute the changes, write the patch, and set ``Verdict.files_changed``."""
        if self.repo is None:
            why = f" ({self.problem})" if self.problem else ""
            message = (f"{self.workspace} is not a git work tree with a commit{why}: "
                       "files-changed lists only what the write tools reported, and there is "
                       "no patch.")
            verdict.notes.append(message)
            return Handoff("", bool(verdict.files_changed), message)
        try:
            changes = (changeset.compute(self.repo, self.baseline) if self.baseline is not None
                       else _touched_changes(self.repo, self.touched))
        except (changeset.ChangesetError, OSError) as exc:
            message = (f"The changes could not be computed: {exc}. files-changed lists only "
                       "what the write tools reported, and there is no patch.")
            verdict.notes.append(message)
            return Handoff("", bool(verdict.files_changed), message)
        skip = {
            os.path.relpath(path, self.repo) for path in ignore if path.is_relative_to(self.repo)
        }
        changes.entries = [entry for entry in changes.entries if entry.path not in skip]
        kinds: list[tuple[list[str], Callable[[str], str]]] = [
            (changes.too_long, leftout.too_long), (changes.special, lambda _: leftout.SPECIAL),
            (changes.skipped, lambda _: leftout.NESTED)]
        left = leftout.gather(kinds, lambda path: self._relative(self.repo or Path(), path))
        verdict.leave_out(left, len(left))
        _cross_check(verdict, {self._relative(self.repo, entry.path) for entry in changes.entries})
        try:
            links_refused, links_kept = changeset.links(self.repo, changes)
        except changeset.ChangesetError as exc:
            links_refused, links_kept = [f"(the links could not be read: {exc})"], []
        if links_kept:
            verdict.notes.append(_links_note(links_kept))
        if links_refused:
            verdict.fail(Cause.REFUSED_CHANGES, links_failure(
                links_refused, len(links_refused), contained=self.applied_box))
        try:
            pages = changeset.pages(self.repo, changes)
        except (changeset.ChangesetError, OSError) as exc:
            pages = Judgement([f"(the documentation pages could not be read: {exc})"])
        if pages.refused:
            verdict.fail(Cause.REFUSED_CHANGES,
                         includes_failure(pages.refused, contained=self.applied_box))
        patch = patch_dir / PATCH_NAME
        changeset.write_patch(self.repo, changes, patch)
        if found := self.keys.patch_hits(patch.read_bytes()):
            patch.unlink()
            message = key_failure([str(hit) for hit in found], applied=not self.applied_box)
            verdict.fail(Cause.KEY, message)
            return Handoff("", False, message, code_pages=pages.code)
        return Handoff(str(patch), bool(changes.entries), code_pages=pages.code)

    def apply_box(self, status: BoxStatus) -> Applied:
        """Apply the patch the box made (our hardened git, as the runner's user) to the real
        tree (protected paths are not in it: ``box.tree.protected``, they stay in the box, and
        when there were any, nothing is applied: the run fails);
        what the box left behind is said in the notes. What the policy does not allow is
        applied and fails the run (:func:`check_policy`), as for an uncontained run."""
        notes = _left_behind(status)
        left, left_count = leftout.of_box(status, lambda path: (
            self._relative(self.repo, path) if self.repo else shown_path(path)))
        # The protected paths, as the left-out list already shows them (one mapping of each).
        refused = ([entry.path for entry in left if entry.reason == leftout.PROTECTED]
                   if self.repo else [])
        count = status.protected.count
        links_count = status.links_refused.count
        reads = list(status.includes_refused.paths)
        if (self.repo is None or not status.patch or not status.changed
                or count or links_count or status.includes_refused.count):  # a protected
            # change, a link out or an include out fails the run: nothing of it comes back
            return Applied(refused, notes, refused_count=count,
                           links_refused=list(status.links_refused.paths),
                           links_refused_count=links_count, includes_refused=reads,
                           left_out=left, left_out_count=left_count)
        try:
            found = self.keys.patch_hits(Path(status.patch).read_bytes())
        except OSError as exc:
            return Applied([], notes, f"the patch could not be read: {exc}",
                           left_out=left, left_out_count=left_count)
        if found:  # the key, in some form: nothing of this patch is applied
            return Applied([], notes, key_found=[str(hit) for hit in found], left_out=left,
                           left_out_count=left_count)
        try:
            done = safegit.run(["apply", "--numstat", "-z", status.patch], self.repo)
            if done.returncode != 0:
                raise changeset.ChangesetError("git apply --numstat failed")
            self._note_touched(self.repo, done.stdout)
        except (changeset.ChangesetError, OSError) as exc:
            return Applied([], notes, f"the patch's paths could not be read: {exc}",
                           left_out=left, left_out_count=left_count)
        # Checked whole first: a patch git cannot apply leaves the tree as it was.
        done = safegit.run(["apply", "--check", "--binary", "--whitespace=nowarn",
                            status.patch], self.repo)
        if done.returncode == 0:
            done = safegit.run(["apply", "--binary", "--whitespace=nowarn", status.patch],
                               self.repo)
            self.applied_box = True  # tried: the tree may have changed, the check must hold
        if done.returncode != 0:
            words = " ".join(done.stderr.decode("utf-8", "replace").split())[:600]
            return Applied([], notes, f"git apply failed: {words or done.returncode}",
                           left_out=left, left_out_count=left_count)
        return Applied(refused, notes, refused_count=count, left_out=left,
                       left_out_count=left_count)

    def _note_touched(self, repo: Path, numstat: bytes) -> None:
        """Before a box's patch is applied: the state of each path it touches (``numstat``:
        ``git apply --numstat -z`` of it) that no earlier patch touched, as the base of the
        run's changes (hashed: only these paths)."""
        paths = [
            os.fsdecode(line.split(b"\t", 2)[2])
            for line in numstat.split(b"\0")
            if line.count(b"\t") >= 2
        ]
        real = RealTree(repo)
        found: dict[str, os.stat_result] = {}
        for path in paths:
            if path in self.touched:
                continue
            info = real.lstat(path)
            if info is not None and (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
                found[path] = info
            else:
                self.touched[path] = ABSENT
        oids = changeset.hash_paths(repo, sorted(found), found)
        self.touched.update(
            {path: (changeset.mode_of(info), oids[path]) for path, info in found.items()}
        )

    def _relative(self, repo: Path, path: str) -> str:
        """A repository path as files-changed shows it: relative to the workspace."""
        full = os.path.join(repo, path)
        return shown_path(os.path.relpath(full, self.workspace).replace(os.sep, "/"))


def _touched_changes(repo: Path, touched: dict[str, tuple[str, str]]) -> changeset.Changeset:
    """The run's changes when only the box's patches changed the tree: each path they touched,
    from its state before the first to its state now (nothing else is read)."""
    head = changeset.head_commit(repo)
    head_state = changeset.head_tree(repo, touched)
    real = RealTree(repo)
    now: dict[str, os.stat_result] = {}
    for path in touched:
        info = real.lstat(path)
        if info is not None and (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
            now[path] = info
    oids = changeset.hash_paths(repo, sorted(now), now)
    zero = "0" * len(head)
    absent = (changeset.ABSENT_MODE, zero)
    entries, overlay = [], {}
    for path, before in sorted(touched.items()):
        old = before if before != ABSENT else absent
        new = (changeset.mode_of(now[path]), oids[path]) if path in now else absent
        if old != head_state.get(path, absent):
            overlay[path] = old
        if old != new:
            entries.append(changeset.Entry(path, *old, *new))
    return changeset.Changeset(head, entries, overlay=overlay)


def _links_note(kept: list[str]) -> str:
    return (f"{len(kept)} symbolic link(s) in the change, each staying inside the repository: "
            f"{listing(kept)}.")


def _left_behind(status: BoxStatus) -> list[str]:
    """The box's notes on what stayed in it that the agent did not make (the paths it made
    that did not come back: :func:`.leftout.of_box`): ignored files, paths never copied."""
    notes = []
    if status.left_behind:
        notes.append(f"{status.left_behind} new or changed file(s) that .gitignore ignores were "
                     "left in the box: they never reach the working tree or the patch.")
    if status.left_out.count:
        notes.append(f"{status.left_out.count} path(s) of the repository were not copied into "
                     "the box (over 100 MiB, a path over 3,072 bytes, a fifo, socket or "
                     "device): the agent never saw them, and the patch never touches them: "
                     f"{listing([shown_path(p) for p in status.left_out.paths])}.")
    return notes


def _cross_check(verdict: Verdict, changed: set[str]) -> None:
    """``files_changed`` becomes what the tree shows; a mismatch with the tools is noted."""
    reported = set(verdict.files_changed)
    inside = {path for path in reported if not path.startswith("/")}
    by_shell = sorted(changed - reported)
    unseen = sorted(inside - changed)
    outside = sorted(path for path in reported if path.startswith("/"))
    verdict.files_changed = sorted(changed | set(outside))
    if by_shell:
        verdict.notes.append(
            f"{len(by_shell)} file(s) changed in the working tree without a write tool "
            f"(e.g. through the shell): {listing(by_shell)}."
        )
    if unseen:
        verdict.notes.append(
            f"{len(unseen)} file(s) reported written by a tool show no change in the working "
            f"tree (same content, reverted, or ignored by .gitignore): {listing(unseen)}."
        )


def check_policy(verdict: Verdict, policy: Policy, code_pages: list[str] | None = None
                 ) -> list[str]:
    """Fail the run if the workspace changed where the policy does not allow writing, or (under
    read-only and docs) if a write tool wrote outside the workspace; the warnings to annotate.

    With ``--force`` the CLI enforces only the deny list, and a shell command can write files
    without any write tool, so the allow list is checked here, after the fact.
    """
    warnings: list[str] = []
    denied = [
        path for path in verdict.files_changed
        if not path.startswith("/") and not policy.permits_write(path)
    ]
    if denied:
        executed = usually_executed(denied) if policy.preset == "docs" else []
        fix = ("Fix: review and revert them before publishing, or allow them explicitly with the "
               "allow input (e.g. Write(src/**)).")
        if executed:
            fix = (f"{listing(executed)}: builds, test runs or docs toolchains execute such "
                   "files, and the docs preset never writes them. Fix: review and revert them "
                   "before publishing; for a task that must change them, use permissions: edit "
                   "with allow tokens naming them.")
        verdict.fail(Cause.POLICY, (
            f"The agent changed {len(denied)} file(s) that the {policy.preset} policy does not "
            f"allow writing: {listing(denied)}. {fix}"
        ))
    if code_pages and policy.preset == "docs":
        verdict.fail(Cause.POLICY, (
            f"The agent wrote {len(code_pages)} page(s) Docusaurus compiles as MDX, which is "
            f"code (its imports, exports and {{...}} run in the docs build): "
            f"{listing(code_pages)}. The docs preset never writes such pages. Fix: review and "
            "revert them before publishing; a Docusaurus site should set `markdown.format: "
            "'detect'` (docs/security.md)."))
    outside = [path for path in verdict.files_changed if path.startswith("/")]
    if outside:
        message = (
            f"The agent wrote {len(outside)} file(s) outside the working directory: "
            f"{listing(outside)}. They are not in the patch, and a later step may read them."
        )
        if policy.preset in ("read-only", "docs"):
            verdict.fail(Cause.POLICY, f"{message} Fix: nothing outside the working directory "
                         f"may be written under the {policy.preset} preset; review what the "
                         "agent ran.")
        else:
            verdict.notes.append(message)
            warnings.append(message)
    return warnings


def includes_failure(reads: list[str], *, contained: bool) -> str:
    """The run's failure for documentation pages refused by :mod:`cursor_agent_action.
    docpages` (a construct not known to be inert, a path that leaves the repository)."""
    where = ("Nothing of this run was applied." if contained else
             "The agent ran uncontained, so they are in the working tree now: remove them "
             "before any later step builds the docs.")
    return (f"The agent wrote {len(reads)} documentation construct(s) that are not known to "
            f"be inert or name a path outside the repository's tracked files: "
            f"{listing(reads, 10)}. A later docs build could run them, or copy the runner's "
            f"files (its environment, its home, .git/config) into the pages it makes. {where} "
            "Fix: review what the agent ran (the transcript); a documentation change uses only "
            "the constructs listed in docs/permissions.md, the page's own, and files of the "
            "repository.")


def links_failure(refused: list[str], count: int, *, contained: bool) -> str:
    """The run's failure for links that leave the repository or lead into ``.git``."""
    where = ("They, and every other change of this run, stayed in the box: the working tree and "
             "the patch have none of them." if contained else
             "The agent ran uncontained, so they are in the working tree now: remove them before "
             "any later step reads it.")
    return (f"The agent made {count} symbolic link(s) that leave the repository or lead into "
            f".git: {listing(refused)}. A later step reading the tree (a docs build, an "
            f"upload, a comment) would read the runner's files through them. {where} Fix: "
            "review what the agent ran (the transcript); links must stay inside the "
            "repository.")



def key_failure(where: list[str], *, applied: bool) -> str:
    """The failure of a patch that holds the API key in some form (``where``: "path (form)",
    never the key): nothing of it was handed on; ``applied``: the agent wrote in the real tree
    (no box), which still holds the change."""
    kept = (" The working tree still holds the change (the agent was not in a box): do not "
            "commit it." if applied else " Nothing of it was applied to the working tree.")
    return (f"The agent's changes hold the API key, in some form, in {listing(where)}: the "
            f"patch was withheld and nothing was handed on.{kept} Fix: revoke the key "
            "(cursor.com, dashboard) if the job log or an artifact may have shown it, and review "
            "what the agent ran (the transcript); api-key-masking: masked (the default) keeps the "
            "key out of the box where the box runs (docs/security.md).")
