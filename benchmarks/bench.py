"""Where grading time goes (`make bench`): per topic, the workers' start, the reference's
outputs on the cases, and each kind of check, for `grade check` (public expectations replayed)
and for hidden grading (live reference), cold (an empty compilation cache: the first run on a
new machine) and warm (the same run again: the cache holds what the first run compiled).

The header gives the machine's yardstick, a worker's start (`worker_start.py`), to compare
machines by; each run, its wall time and the CPU time the whole machine spent during it (with
`--jobs 2` on two cores, the CPU time over two is the least wall time a submission can take).
Numbers come from the engine's own `extra_data["topics"][topic]["timings"]` (a topic graded in
parts adds up its parts' columns, which ran side by side); "comp.ref" and "comp.stu" are the
seconds XLA spent compiling in the trusted worker (the reference, or in `grade check` the one
that analyses programs) and in the student's, as each worker's JAX reports it (part of the
columns before them, not added to the total); the submission is
the solutions (every check runs), or with `--submission` the stubs or half of each topic done. A
benchmark, not a test: it decides nothing. Each topic's total is its own wall time; with
`--jobs 2` topics overlap, so the run's wall time (first line of each table) is less than their
sum.

`--each` grades every topic in a run of its own, as `grade check TOPIC` does (with `--jobs 2`
the topic's exercises are then graded in two parts side by side, `engine.plan`), each with a
compilation cache of its own (cold: that topic's first check on a new machine); the run's wall
time is then the sum of the topics'.

    .venv/bin/python benchmarks/bench.py [--modes check hidden] [--runs 2] [--jobs N] [--each]
        [--submission solutions|stubs|half] [TOPIC ...]

`make bench` runs it twice, as students and the service grade: `--modes check --each` (each
`grade check TOPIC`) and `--modes hidden` (one submission of the whole course), with the
default jobs (`JAXLINGS_JOBS`, else one per core).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLUMNS = ("start", "cases", "correct", "jit", "speed", "other")
COMPILE = {"reference": "comp.ref", "student": "comp.stu"}  # worker -> column of the seconds XLA compiled there


def write_submission(kind: str, names: list[str], folder: Path) -> Path:
    """The submission to grade: the solutions, the stubs, or "half" (each topic's first half of
    exercises solved, the rest stubs: a student part way through the course)."""
    from jaxlings.course.build import make_stub
    from jaxlings.grading import topics

    if kind != "half":
        return ROOT / ("solutions" if kind == "solutions" else "exercises")
    for name in names:
        exercises = [ex.name for ex in topics.load(name).exercises]
        source = (ROOT / "solutions" / f"{name}.py").read_text()
        (folder / f"{name}.py").write_text(make_stub(source, name, exercises[: len(exercises) // 2]))
    return folder


def run_once(mode: str, names: list[str], jobs: int, submission: Path, each: bool = False):
    """One graded run of `submission` (`each`: one engine run per topic, each with a compilation
    cache of its own, their tests and summaries put together): (result, wall seconds)."""
    from jaxlings import public
    from jaxlings.grading import engine, topics
    from jaxlings.grading.results import Result
    from jaxlings.isolation import bwrap_available

    def grade(selected: list[str]) -> Result:
        if mode == "check":
            return engine.grade(
                submission, topics.resolve(selected, public=True), public=True, answers=public.replay, jobs=jobs
            )
        return engine.grade(
            submission, topics.resolve(selected), reference_dir=ROOT / "solutions", isolate=bwrap_available(), jobs=jobs
        )

    t0 = time.perf_counter()
    if not each:
        return grade(names), time.perf_counter() - t0
    results, cache = [], os.environ["JAXLINGS_COMPILE_CACHE"]
    for name in names:
        os.environ["JAXLINGS_COMPILE_CACHE"] = str(Path(cache) / "each" / name)
        try:
            results.append(grade([name]))
        finally:
            os.environ["JAXLINGS_COMPILE_CACHE"] = cache
    wall = time.perf_counter() - t0
    topics_data = {name: r.extra_data["topics"][name] for name, r in zip(names, results)}
    return Result([t for r in results for t in r.tests], wall, {"topics": topics_data}), wall


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine has spent busy since boot (/proc/stat): the
    difference over a run is what the run cost in CPU, workers and all (nan where unknown)."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return float("nan")
    idle, iowait = fields[3], fields[4] if len(fields) > 4 else 0
    return (sum(fields) - idle - iowait) / os.sysconf("SC_CLK_TCK")


def rows(result) -> dict[str, dict[str, float]]:
    """Topic -> seconds per column, summed over its exercises."""
    table: dict[str, dict[str, float]] = {}
    for topic, summary in result.extra_data["topics"].items():
        timings = summary.get("timings", {})
        row = defaultdict(float, start=timings.get("start", 0.0), parts=timings.get("parts", 1))
        for checks in timings.get("exercises", {}).values():
            for name, seconds in checks.items():
                row[name if name in COLUMNS else "other"] += seconds
        for side, column in COMPILE.items():
            row[column] = timings.get("compile", {}).get(side, {}).get("seconds", 0.0)
        row["total"] = summary["seconds"]
        table[topic] = row
    return table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("topics", nargs="*")
    parser.add_argument("--modes", nargs="+", default=["check", "hidden"], choices=["check", "hidden"])
    parser.add_argument("--runs", type=int, default=2, help="runs per mode: the first is cold, the others warm")
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="topics (or parts of one) graded at a time (default: as `grade` would, one per core)",
    )
    parser.add_argument("--each", action="store_true", help="each topic in a run of its own, as `grade check TOPIC`")
    parser.add_argument(
        "--submission",
        default="solutions",
        choices=["solutions", "stubs", "half"],
        help="what is graded: the solutions (every check runs), the stubs, or half of each topic done",
    )
    args = parser.parse_args()
    from worker_start import worker_start

    from jaxlings.grading import engine, topics

    names = args.topics or list(topics.ORDER)
    args.jobs = args.jobs or engine.default_jobs()
    wall, cpu = worker_start(3)
    print(
        f"machine: {platform.node()}, {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; a worker's start {wall:.2f} s wall, {cpu:.2f} s "
        f"CPU (the machine's yardstick, docs/performance.md); jobs {args.jobs}; {args.submission}; seconds"
    )
    with (
        tempfile.TemporaryDirectory(prefix="jaxlings-bench-cache-") as cache,
        tempfile.TemporaryDirectory(prefix="jaxlings-bench-submission-") as folder,
    ):
        os.environ["JAXLINGS_COMPILE_CACHE"] = cache  # empty: the first run of each mode is cold
        submission = write_submission(args.submission, names, Path(folder))
        for mode in args.modes:
            for i in range(args.runs):
                if i == 0:
                    shutil.rmtree(cache, ignore_errors=True)
                busy = machine_busy_seconds()
                result, wall = run_once(mode, names, args.jobs, submission, args.each)
                busy = machine_busy_seconds() - busy
                label = f"{mode}, {'cold (empty compilation cache)' if i == 0 else 'warm'}"
                print(
                    f"\n{label}: {wall:.1f} s for {len(names)} topics, score {result.score:g}/{result.max_score:g}, "
                    f"load {os.getloadavg()[0]:.1f}, the machine's CPU {busy:.0f} s"
                )
                print(f"{'topic':<12}{'parts':>6}" + "".join(f"{c:>9}" for c in (*COLUMNS, *COMPILE.values(), "total")))
                for topic, row in rows(result).items():
                    print(
                        f"{topic:<12}{row['parts']:>6}"
                        + "".join(f"{row[c]:>9.2f}" for c in (*COLUMNS, *COMPILE.values(), "total")),
                        flush=True,
                    )


if __name__ == "__main__":
    main()
