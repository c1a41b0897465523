"""Speed-verdict stability under load: are the speed points the same every time?

Grades one exercise's speed check `--runs` times (20 by default) for three versions: the
reference against itself, a 2x-slower and a 10x-slower one (built as in `gpu_check.py`), while
`--hogs` processes keep every core busy. Prints, per version, the points seen, the measured
ratio (min / median / max), the rounds the check timed and the seconds per grading.

`--before` times every round the check allows (no early stop: what the check did before rounds
stopped once the band was decided); `--side-by-side` grades two at a time, as `jobs=2` grades
two topics at once, to show that a neighbour does not move the verdict.

    python benchmarks/speed_stability.py [--runs 20] [--hogs 2] [--exercise at_updates.histogram]
                                         [--before] [--side-by-side] [--size N]
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from autograder import topics  # noqa: E402
from gpu_check import speed_of, variants  # noqa: E402


def _hog() -> None:
    while True:
        pass


def spec_for(name: str, before: bool, size: int | None = None):
    """The topic spec holding just `name`, with early stopping off for `before`, and the CPU
    workload of `size` where given (to try a size before setting it in the topic's spec)."""
    (spec,) = topics.resolve([name])
    if not before and size is None:
        return spec

    def changed(speed):
        return dataclasses.replace(speed, margin=float("inf") if before else speed.margin,
                                   size=speed.size if size is None else {**speed.size, "cpu": size})

    exercises = tuple(dataclasses.replace(ex, speed=changed(ex.speed)) for ex in spec.exercises)
    return dataclasses.replace(spec, exercises=exercises)


def points_ratio_rounds(folder: Path, spec) -> tuple[float, float | None, int]:
    """(points, ratio, rounds) of one grading (without the sandbox, as before)."""
    data = speed_of(folder, spec, isolate=False)
    return data["points"], data.get("ratio"), data.get("reps", 0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--hogs", type=int, default=mp.cpu_count())
    ap.add_argument("--exercise", default="at_updates.histogram")
    ap.add_argument("--before", action="store_true", help="no early stop (every round the check allows)")
    ap.add_argument("--side-by-side", action="store_true", help="two gradings at a time")
    ap.add_argument("--size", type=int, help="the CPU speed workload's size (default: the topic's)")
    args = ap.parse_args()
    topic, exercise = args.exercise.split(".")
    spec = spec_for(args.exercise, args.before, args.size)
    hogs = [mp.Process(target=_hog, daemon=True) for _ in range(args.hogs)]
    for h in hogs:
        h.start()
    size = next(ex.speed.size_for("cpu") for ex in spec.exercises if ex.name == exercise)
    print(f"{args.exercise} (CPU size {size}): {args.runs} gradings per version, {args.hogs} hogs, "
          f"{'no early stop' if args.before else 'early stop'}, {'two at a time' if args.side_by_side else 'one at a time'}")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for label, folder in variants(topic, exercise, Path(tmp)).items():
                t0 = time.monotonic()
                with ThreadPoolExecutor(2 if args.side_by_side else 1) as pool:
                    runs = list(pool.map(lambda _: points_ratio_rounds(folder, spec), range(args.runs)))
                points = sorted({p for p, _, _ in runs})
                ratios = [r for _, r, _ in runs if r is not None]
                rounds = [n for _, _, n in runs]
                summary = (f"min {min(ratios):.3f} / median {statistics.median(ratios):.3f} / max {max(ratios):.3f}"
                           if ratios else "no ratio (timed out)")
                print(f"{label:16s} points {points}; ratio {summary}; rounds {min(rounds)}-{max(rounds)} "
                      f"(median {statistics.median(rounds):g}); {(time.monotonic() - t0) / args.runs:.1f} s per grading",
                      flush=True)
    finally:
        for h in hogs:
            h.terminate()


if __name__ == "__main__":
    main()
