"""How long `grade check TOPIC` takes cold, per topic: a fresh process, as a student types it.

For every topic (default: `topics.ORDER`), in a fresh `grade init` workspace whose exercises are
the reference solutions (`solutions/<topic>.py` copied in), runs `grade check TOPIC` as a
command line in a new process, twice: first with an empty compilation cache (the student's
first check of that topic ever: everything compiles) and then again (the cache warm: every
later check). Each run's wall time, the CPU seconds of the command and every worker it waited
for, and the machine's load are recorded, with the machine's yardstick
(`benchmarks/worker_start.py`: one worker's start) taken before and after, since these
machines differ by up to 3x.

`--tree PATH` runs the grader of another checkout (a `git worktree` of an earlier commit, for
"before" figures): its `jaxlings` on PYTHONPATH, this venv's interpreter. The target (issue
29): at most 5 s for every topic on 2 cores.

    .venv/bin/python benchmarks/check_times.py [--tree PATH] [--json out.json] [--runs 1] [TOPIC ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 5.0

YARDSTICK = """
import json, sys
sys.path.insert(0, sys.argv[1])
from worker_start import worker_start
print(json.dumps(worker_start(int(sys.argv[2]))))
"""


def tree_env(tree: Path, cache: Path | None = None) -> dict[str, str]:
    """The environment that runs `tree`'s grader (its package first on the path), with the
    compilation cache under `cache` (a folder of this run's own) when given."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXLINGS_")}
    env["PYTHONPATH"] = str(tree)
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
    env.setdefault("COLUMNS", "160")
    return env


def grade(tree: Path, *argv: str, cwd: Path, env: dict[str, str]) -> tuple[float, float, int, str]:
    """Run `grade ARGV...` from `tree` in `cwd`: (wall s, CPU s of it and its waited-for
    children, exit status, output)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "jaxlings", *argv], cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode, done.stdout + done.stderr


def workspace(tree: Path, folder: Path, env: dict[str, str]) -> None:
    """A fresh `grade init` workspace in `folder` with the reference solutions as the exercises."""
    _, _, code, out = grade(tree, "init", str(folder), cwd=folder.parent, env=env)
    if code != 0:
        raise SystemExit(f"grade init failed:\n{out}")
    for solution in (tree / "solutions").glob("*.py"):
        target = folder / "exercises" / solution.name
        if target.exists():
            shutil.copyfile(solution, target)


def yardstick(tree: Path, runs: int = 3) -> dict[str, float]:
    """One worker's start on an empty module, median wall and CPU seconds (`worker_start.py`)."""
    done = subprocess.run(
        [sys.executable, "-c", YARDSTICK, str(ROOT / "benchmarks"), str(runs)],
        env=tree_env(tree),
        capture_output=True,
        text=True,
        check=True,
    )
    wall, cpu = json.loads(done.stdout.strip().splitlines()[-1])
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}


def score_of(output: str) -> str:
    """The `Total: ...` line of a check's output (its points, and those judged on submission), or '?'."""
    for line in output.splitlines():
        if line.strip().startswith("Total:"):
            return line.split("Total:")[1].split("(")[0].strip()
    return "?"


def time_topic(tree: Path, topic: str, runs: int) -> dict[str, object]:
    """`grade check TOPIC` in a fresh workspace with its own empty cache, then warm (`runs` each
    after the first)."""
    with tempfile.TemporaryDirectory(prefix="jaxlings-check-times-", ignore_cleanup_errors=True) as tmp:
        env = tree_env(tree, Path(tmp) / "cache")
        folder = Path(tmp) / "ws"
        workspace(tree, folder, env)
        row: dict[str, object] = {"topic": topic}
        for label in ["cold"] + ["warm"] * runs:
            load = os.getloadavg()[0]
            wall, cpu, code, out = grade(tree, "check", topic, cwd=folder, env=env)
            entry = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "load": round(load, 2), "exit": code}
            row.setdefault(label, []).append(entry)  # type: ignore[union-attr]
            row["score"] = score_of(out)
            if code not in (0, 1):
                row["error"] = out[-2000:]
        return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose grader runs (default: this one)")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    parser.add_argument("--runs", type=int, default=1, help="warm runs per topic after the cold one")
    parser.add_argument("topics", nargs="*")
    args = parser.parse_args()
    tree = args.tree.resolve()
    sys.path.insert(0, str(tree))
    from jaxlings.grading import topics

    names = args.topics or list(topics.ORDER)
    stick_before = yardstick(tree)
    print(
        f"tree {tree}; yardstick (one worker's start): {stick_before['wall_s']:.2f} s wall, {stick_before['cpu_s']:.2f} s CPU"
    )
    print(f"{'topic':<12} {'cold s':>7} {'CPU s':>6} {'warm s':>7} {'CPU s':>6} {'load':>5}  score")
    rows = []
    for name in names:
        row = time_topic(tree, name, args.runs)
        cold, warm = row["cold"][0], row["warm"]  # type: ignore[index]
        warm_wall = statistics.median(w["wall_s"] for w in warm)  # type: ignore[union-attr]
        warm_cpu = statistics.median(w["cpu_s"] for w in warm)  # type: ignore[union-attr]
        flag = "" if max(cold["wall_s"], warm_wall) <= TARGET_S else "  > 5 s"  # type: ignore[index]
        print(
            f"{name:<12} {cold['wall_s']:>7.2f} {cold['cpu_s']:>6.1f} {warm_wall:>7.2f} {warm_cpu:>6.1f} "  # type: ignore[index]
            f"{cold['load']:>5.1f}  {row['score']}{flag}",  # type: ignore[index]
            flush=True,
        )
        if "error" in row:
            print(row["error"], file=sys.stderr)
        rows.append(row)
    stick_after = yardstick(tree)
    print(f"yardstick after: {stick_after['wall_s']:.2f} s wall, {stick_after['cpu_s']:.2f} s CPU")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "tree": str(tree),
                    "cores": os.cpu_count(),
                    "yardstick_before": stick_before,
                    "yardstick_after": stick_after,
                    "target_s": TARGET_S,
                    "topics": rows,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
