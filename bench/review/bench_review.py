"""Sharded review benchmark; figures go in bench/README.md ("Review over the matrix").

    python bench/review/bench_review.py [--files 3000] [--lines 150000] [--ms-per-kib 3]

A pull request of ``--files`` files and ``--lines`` changed lines (generated at run time: 60
directories, a test beside every tenth module) is served by the loopback GitHub API
(``tests/support/github_server.py``, pages of 100 as GitHub's files endpoint).

1. Planning: ``pr-context --max-shards N`` end to end (the files read through the API, the
   plan made, each shard's context written), and the planner alone; best of 3.
2. Context bytes per shard (the ``shard-N.md`` files) for 1, 2, 4 and 8 shards.
3. Wall time with 1, 2, 4 and 8 shards: one stand-in CLI per shard started side by side (as
   the matrix runs its jobs on machines of their own), each given its shard's context as its
   prompt, answering about its own shard (``review_scope``) after a time that grows with its
   context (``ms_per_kib``: 3 ms per KiB makes one agent given the whole diff take ~25 s);
   then the merge. Checked: every changed file is in exactly one shard's context.
4. Merge: the review job's own work without the network: every shard's findings read and
   merged (8 shards x 1,000 findings), the 3,000 files' patches mapped and each finding placed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.github_server import GitHubServer  # noqa: E402

from cursor_agent_action import cli  # noqa: E402
from cursor_agent_action.gh import shards  # noqa: E402
from cursor_agent_action.gh.review import merge  # noqa: E402
from cursor_agent_action.gh.review.diffmap import DiffMap, parse_patch  # noqa: E402
from cursor_agent_action.gh.review.placement import place  # noqa: E402
from cursor_agent_action.output_file import parse_output_file  # noqa: E402

_JSON = re.compile(r"```json\n(.*?)\n```", re.S)


def make_files(count: int, lines: int) -> list[dict[str, object]]:
    per = lines // count
    out: list[dict[str, object]] = []
    for i in range(count):
        folder = f"src/pkg{i % 60:02d}"
        name = f"{folder}/test_mod{i - 1}.py" if i % 10 == 9 else f"{folder}/mod{i}.py"
        body = "".join(f"+value_{i}_{n} = compute({n}, {i}) + offset  # line {n}\n"
                       for n in range(per))
        out.append({"filename": name, "status": "added", "additions": per,
                    "patch": f"@@ -0,0 +1,{per} @@\n{body}".rstrip("\n")})
    return out


def best(fn: object, times: int = 3) -> float:
    spent = []
    for _ in range(times):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        spent.append(time.perf_counter() - start)
    return min(spent)


def plan_command(gh: GitHubServer, number: int, work: Path, count: int,
                 budget: int) -> dict[str, str]:
    out = work / f"out-{count}.txt"
    out.write_text("")
    code = cli.main(["pr-context", "--output-file", str(out), "--pr-number", str(number),
                     "--plan-dir", str(work / f"plan-{count}"), "--max-shards", str(count),
                     "--shard-bytes", str(budget)])
    if code != 0:
        raise SystemExit(f"pr-context failed ({code})")
    return parse_output_file(out.read_text())


def run_agents(plan_dir: Path, shards_count: int, ms_per_kib: float, work: Path) -> float:
    """Every shard's stand-in side by side; their answers kept as the artifacts would be."""
    scenario = work / "scenario.json"
    scenario.write_text(json.dumps({"review_scope": True, "ms_per_kib": ms_per_kib}))
    found = work / f"found-{shards_count}"
    start = time.perf_counter()
    running = []
    for number in range(1, shards_count + 1):
        context = plan_dir / f"shard-{number}.md"
        prompt = (f"Your task is in the file {context} (it was too long for the command "
                  "line). Read that whole file first and follow its instructions exactly.")
        running.append((number, subprocess.Popen(
            [sys.executable, "-m", "cursor_agent_action.standin", "--scenario", str(scenario),
             "-p", "--output-format", "text", "--", prompt], stdout=subprocess.PIPE)))
    for number, process in running:
        text, _ = process.communicate(timeout=600)
        match = _JSON.search(text.decode())
        if process.returncode != 0 or match is None:
            raise SystemExit(f"shard {number}'s stand-in failed")
        folder = found / f"code-review-shard-{number}"
        folder.mkdir(parents=True)
        (folder / "findings.json").write_text(match.group(1))
    plan = shards.from_json((plan_dir / "plan.json").read_text())
    answers, gaps, _ = merge.read(plan, str(found))
    merged = merge.merge(plan, answers, gaps)
    if gaps or len({f.path for f in merged.answer.findings}) < shards_count:
        raise SystemExit("a shard's answer is missing from the merge")
    return time.perf_counter() - start


def merge_job(files: list[dict[str, object]], plan: shards.Plan, work: Path,
              per_shard: int = 1000) -> float:
    found = work / "found-merge"
    for shard in plan.shards:
        items = [{"path": shard.files[n % len(shard.files)], "line": 1 + n % 40,
                  "severity": ("critical", "major", "minor", "nit")[n % 4],
                  "title": f"Finding {n} of shard {shard.number}", "body": "Look here. " * 20}
                 for n in range(per_shard)]
        folder = found / f"s-shard-{shard.number}"
        folder.mkdir(parents=True)
        (folder / "findings.json").write_text(json.dumps(
            {"summary": "x", "verdict": "comment", "findings": items}))

    def once() -> None:
        answers, gaps, _ = merge.read(plan, str(found))
        merged = merge.merge(plan, answers, gaps)
        diff = DiffMap()
        for item in files:
            diff.add(parse_patch(str(item["filename"]), str(item["patch"])))
        place(merged.answer.findings, diff)

    return best(once)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--lines", type=int, default=150_000)
    parser.add_argument("--ms-per-kib", type=float, default=3.0)
    args = parser.parse_args()
    files = make_files(args.files, args.lines)
    total = sum(len(str(f["patch"])) for f in files)
    print(f"pull request: {len(files)} files, {args.lines:,} changed lines, "
          f"{total:,} bytes of patches")
    with tempfile.TemporaryDirectory(prefix="bench-review-") as tmp, GitHubServer() as gh:
        work = Path(tmp)
        for key, value in gh.env().items():
            os.environ[key] = value
        number = gh.add_pull("big", head_sha="c" * 40)
        gh.set_pull_files(number, files)
        changed = [shards.ChangedFile(str(f["filename"]), "added", "", str(f["patch"]),
                                      int(str(f["additions"]))) for f in files]
        entries = sum(c.size for c in changed)
        widest = max(c.size for c in changed)

        def budget(count: int) -> int:  # `count` balanced shards hold it all
            return entries // count + 2 * widest

        planner = best(lambda: shards.plan(changed, shard_bytes=budget(8), max_shards=8))
        print(f"planner alone (8 shards): {planner * 1000:.0f} ms")
        walls = {}
        for count in (1, 2, 4, 8):
            start = time.perf_counter()
            outputs = plan_command(gh, number, work, count, budget(count))
            spent = time.perf_counter() - start
            plan_dir = Path(outputs["plan-dir"])
            plan = shards.from_json((plan_dir / "plan.json").read_text())
            placed = sorted(n for s in plan.shards for n in s.files)
            if placed != sorted(str(f["filename"]) for f in files) or plan.not_reviewed:
                raise SystemExit(f"{count} shards: not every changed file is in one shard")
            sizes = [(plan_dir / f"shard-{s.number}.md").stat().st_size for s in plan.shards]
            walls[count] = run_agents(plan_dir, len(plan.shards), args.ms_per_kib, work)
            print(f"{count} shard(s): planning (pr-context, API to files) {spent:.2f} s; "
                  f"context per shard {min(sizes):,}-{max(sizes):,} bytes; wall time "
                  f"{walls[count]:.1f} s ({walls[count] / walls[1]:.2f} of one job)")
        plan = shards.from_json((work / "plan-8" / "plan.json").read_text())
        spent = merge_job(files, plan, work)
        print(f"merge (8 shards x 1,000 findings, {len(files)} patches mapped, findings "
              f"placed): {spent:.2f} s")
        ok = walls[8] <= walls[1] / 4 and spent <= 2.0
        print("goals met" if ok else "GOALS NOT MET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
