"""What publish commits, re-checked: the tree it would commit, compared with HEAD, path by path.

Both ways into publish end here: a patch file (applied with the hardened git to a temporary
index built from HEAD, never to the working tree) and a dirty working tree (read with
:mod:`cursor_agent_action.changeset`, never the repository's index). The tree is then refused,
with every offending path named, when a change:

- lies outside ``allowed-paths`` (when given), whose patterns name files
  (:func:`cursor_agent_action.globs.names`: ``**/*.md`` is no directory named ``notes.md``
  and nothing below one; ``docs/`` or ``docs/**`` names a directory's contents);
- touches a protected path (``protected-paths``, which cover what they name and everything
  below it; the default names ``.github/``, ``.cursor/``,
  ``.claude/``, ``AGENTS.md``, ``CLAUDE.md``, ``.mcp.json`` and ``.cursorrules`` at any depth),
  compared case-folded and normalized (:mod:`cursor_agent_action.protected`: ``.Cursor``,
  a fullwidth dot), or a ``.git*`` name at any depth (``.gitattributes``, ``.gitmodules``,
  ``.GIT/``...: they change how later git commands treat the tree);
- is a symbolic link, unless ``allow-links``; then every link is followed through the links on
  its way (:mod:`cursor_agent_action.links`) and refused when it leaves the repository,
  loops, or leads into ``.git`` or a protected path;
- adds, changes or removes a submodule (a gitlink).
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cursor_agent_action import changeset, safegit
from cursor_agent_action.docpages.judge import Judgement, judge
from cursor_agent_action.docpages.kinds import is_documentation
from cursor_agent_action.docpages.view import from_trees
from cursor_agent_action.errors import GitHubError, PublishRefused
from cursor_agent_action.globs import covers, file_pattern, names, names_directory_only
from cursor_agent_action.links import TreeLinks, parse_ls_tree
from cursor_agent_action.protected import AGENT_DIRS, fold_path, git_name
from cursor_agent_action.runner_io import listing
from cursor_agent_action.worktree import shown_path

DEFAULT_PROTECTED = (
    "**/.github/**",
    "**/.cursor/**",
    "**/.claude/**",
    "**/AGENTS.md",
    "**/CLAUDE.md",
    "**/.mcp.json",
    "**/.cursorrules",
    *(f"**/{d}" for d in AGENT_DIRS),
    "**/GEMINI.md",
    "**/.windsurfrules",
)
_BASE_LINE = re.compile(rb"^# base: ([0-9a-f]{40,64})$", re.MULTILINE)


@dataclass(frozen=True)
class Change:
    """One path of a tree-to-tree diff: modes and object ids before and after."""

    path: str
    old_mode: str
    new_mode: str
    new_oid: str


def _git(repo: Path, *args: str, env: dict[str, str] | None = None, doing: str,
         input: bytes | None = None) -> bytes:
    try:
        return safegit.git(args, repo, env=env, input=input).stdout
    except safegit.GitFailed as exc:
        if exc.timed_out:
            raise GitHubError(f"{doing}: {exc.command} did not finish within "
                              f"{safegit.TIMEOUT_S} s.",
                              "Re-run the job; a busy runner can be slow.") from exc
        if exc.returncode is None:
            raise GitHubError(f"{doing}: cannot run git ({exc}).",
                              "Install git on the runner (GitHub-hosted runners have it).") from exc
        why = exc.detail[: safegit.DETAIL_CHARS] or exc.returncode
        hint = "See git's message; the patch must have been made from this commit."
        raise GitHubError(f"{doing} failed: {why}.", hint) from exc


def blob(repo: Path, oid: str) -> bytes:
    """A blob's bytes, exactly (binary files included)."""
    return _git(repo, "cat-file", "blob", oid, doing=f"reading blob {oid[:12]}")


def blobs(repo: Path, oids: list[str]) -> dict[str, bytes]:
    """Many blobs' bytes in one ``git cat-file --batch`` (one git for a change of any size)."""
    if not oids:
        return {}
    out = _git(repo, "cat-file", "--batch", input="".join(f"{o}\n" for o in oids).encode(),
               doing=f"reading {len(oids)} blob(s)")
    found: dict[str, bytes] = {}
    at = 0
    for oid in oids:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        if len(header) != 3 or header[1] != b"blob":
            raise GitHubError(f"reading blob {oid[:12]} failed: git answered {out[at:end]!r}.",
                              "See git's message; the patch must have been made from this "
                              "commit.")
        size = int(header[2])
        found[oid] = out[end + 1:end + 1 + size]
        at = end + 1 + size + 1  # the content, then a LF
    return found


def patch_base(patch: Path) -> str:
    """The commit a patch of ours was made against (its ``# base:`` header), or ""."""
    with patch.open("rb") as handle:
        head = handle.read(4096)
    match = _BASE_LINE.search(head.split(b"\ndiff --git", 1)[0])
    return match.group(1).decode() if match else ""


def tree_from_patch(repo: Path, head: str, patch: Path) -> str:
    """The tree of ``head`` with ``patch`` applied (in a temporary index: the working tree and
    the repository's index are never touched)."""
    with tempfile.TemporaryDirectory(prefix="caa-index-") as tmp:
        index = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(repo, "read-tree", head, env=index, doing="reading the checked-out commit")
        _git(repo, "apply", "--cached", "--binary", "--allow-empty", "--whitespace=nowarn",
             str(patch.resolve()), env=index, doing=f"applying the patch {patch}")
        return _git(repo, "write-tree", env=index, doing="writing the tree").decode().strip()


def tree_from_work_tree(repo: Path, head: str) -> str:
    """The tree of the working tree as it is, read from disk (not the index)."""
    try:
        changes = changeset.compute(repo, None)
        with tempfile.TemporaryDirectory(prefix="caa-index-") as tmp:
            return changeset.build_tree(
                repo, {"GIT_INDEX_FILE": str(Path(tmp) / "index")}, head, changes.entries
            )
    except changeset.ChangesetError as exc:
        raise GitHubError(f"reading the working tree failed: {exc}.",
                          "Check that working-directory is a git checkout with a commit.") from exc


def changes(repo: Path, old_tree: str, new_tree: str) -> list[Change]:
    """What differs between two trees, path by path (no renames: a delete and an add)."""
    raw = _git(repo, "diff", "--raw", "-z", "--no-renames", "--no-ext-diff", "--no-textconv",
               "--full-index", "--abbrev=64", old_tree, new_tree, doing="comparing the trees")
    fields = raw.split(b"\0")
    found: list[Change] = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if not meta.startswith(b":"):
            continue
        old_mode, new_mode, _old_oid, new_oid, _status = meta[1:].decode().split(" ")
        found.append(Change(path.decode("utf-8", "surrogateescape"), old_mode, new_mode, new_oid))
    return found


def tree_links(repo: Path, tree: str) -> TreeLinks:
    """Every link of ``tree`` with its target, and every path in it."""
    raw = _git(repo, "ls-tree", "-r", "-z", "--full-tree", tree, doing="listing the new tree")
    return parse_ls_tree(raw, lambda oid: blob(repo, oid))


def problems(
    repo: Path, found: list[Change], *, allowed: list[str], protected: list[str],
    tree: str, allow_links: bool = False, judged: Judgement | None = None,
) -> dict[str, list[str]]:
    """Every refused path, by reason (empty: nothing refused). ``tree`` (the new tree) is read
    when ``allow_links`` and a link changed, and for the documentation pages (``judged``: their
    judgement already made, :func:`pages`)."""
    allowed = [p for p in allowed if p.strip()]
    protected_folded = [fold_path(file_pattern(p)) for p in protected if p.strip()]
    refused: dict[str, list[str]] = {}

    def refuse(reason: str, path: str) -> None:
        refused.setdefault(reason, []).append(shown_path(path))

    def is_protected(path: str) -> bool:  # the path, what is below it, or a directory above
        folded = fold_path(path)
        return covers(protected_folded, folded) or covers(protected_folded, folded + "/-")

    judged = judged or pages(repo, found, tree)
    for read in judged.refused:  # a docs page a later build would act on
        refused.setdefault("documentation constructs not known to be inert, or naming a path "
                           "outside the repository's tracked files", []).append(read)
    links: TreeLinks | None = None
    for change in found:
        path = change.path
        if allowed and not names(allowed, path):
            near = [p.strip() for p in allowed if names_directory_only(p, path)]
            refuse(f"outside allowed-paths ({near[0]!r} names files, not what is below a "
                   f"directory of that name: write '{near[0].rstrip('/')}/**' for that)"
                   if near else "outside allowed-paths", path)
        if is_protected(path):
            refuse("protected paths", path)
        if git_name(path):
            refuse(".git files (they change how git treats the tree)", path)
        if "160000" in (change.old_mode, change.new_mode):
            refuse("submodule changes", path)
        if change.new_mode == "120000" and not allow_links:
            refuse("symbolic links (set allow-links to publish links)", path)
        elif change.new_mode == "120000":
            links = links or tree_links(repo, tree)
            if why := links.verdict(path, is_protected):
                refuse("symbolic links that leave the repository or lead into protected paths",
                       f"{path} -> {links.links[path]} ({why})")
    return refused


def pages(repo: Path, found: list[Change], tree: str) -> Judgement:
    """The changed documentation pages of ``tree`` judged against HEAD
    (:mod:`cursor_agent_action.docpages`: the run step's rule)."""
    changed = [c.path for c in found if c.new_mode in ("100644", "100755", "120000")]
    if not any(is_documentation(path) for path in changed):
        return Judgement()
    view = from_trees(
        lambda name: _git(repo, "ls-tree", "-r", "-z", "--full-tree", name,
                          doing="listing the tree"),
        lambda oid: blob(repo, oid), new_tree=tree, base_tree="HEAD", changed=changed,
        ignored=lambda paths: changeset.ignored_in(repo, paths, env={}))
    return judge(view, changed)


def refusal(refused: dict[str, list[str]]) -> PublishRefused:
    """One refusal that names every refused path, by reason."""
    parts = [f"{reason}: {listing(paths, 50)}" for reason, paths in refused.items()]
    return PublishRefused(
        f"refused to publish: {'; '.join(parts)}. Nothing was pushed.",
        "Review these changes by hand. Widen allowed-paths (or narrow protected-paths) only if "
        "the change is really intended; .git files, submodules and links that leave the "
        "repository or lead into protected paths are never published.",
    )
