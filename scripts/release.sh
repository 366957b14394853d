#!/usr/bin/env bash
# Tag a release: an annotated vX.Y.Z on HEAD, and the major tag vX moved to it. Local only:
# pushing is left to you (docs/releasing.md). --dry-run checks without tagging.
set -euo pipefail

fail() {
  echo "release: $*" >&2
  exit 2
}

dry=0
if [[ "${1:-}" == "--dry-run" ]]; then
  dry=1
  shift
fi
[[ $# -eq 1 ]] || fail "usage: scripts/release.sh [--dry-run] vX.Y.Z"
version="$1"
[[ "$version" =~ ^v([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] ||
  fail "$version is not vMAJOR.MINOR.PATCH (e.g. v1.2.3)"
major="v${BASH_REMATCH[1]}"

cd "$(git rev-parse --show-toplevel)"
[[ -z "$(git status --porcelain)" ]] || fail "the working tree is not clean: commit or stash first"
if git rev-parse -q --verify "refs/tags/$version" >/dev/null; then
  fail "tag $version exists already: a release is never moved"
fi
code_version="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' src/cursor_agent_action/__init__.py)"
[[ "$code_version" == "${version#v}" ]] ||
  fail "src/cursor_agent_action/__init__.py has __version__ '$code_version', not '${version#v}': set it first"
grep -Eq "^## ${version//./\\.} - [0-9]{4}-[0-9]{2}-[0-9]{2}\$" CHANGELOG.md ||
  fail "CHANGELOG.md has no heading '## $version - YYYY-MM-DD': move the Unreleased notes under it"

head="$(git rev-parse HEAD)"
if ((dry)); then
  echo "release: ready: $version would tag ${head:0:12}, and $major would move to it"
  exit 0
fi
git tag -a "$version" -m "cursor-agent-action $version"
git tag -f "$major" "$head" >/dev/null
echo "release: tagged $version and moved $major to ${head:0:12}. Push them with:"
echo "  git push origin $version && git push --force origin $major"
