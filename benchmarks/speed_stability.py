"""Speed-verdict stability under load: are the speed points the same every time?

Grades one exercise's speed check `--runs` times (20 by default) for each version named in
`--versions`: the reference against itself, a 2x- and a 10x-slower one (the reference's work
done 2 or 10 times on inputs equal at run time that XLA cannot prove equal, every copy made
before any call, so that a function that donates its inputs works too), and for
`jit_basics.affine` a NumPy twin doing the work twice (`numpy x2`), while `--hogs` processes
keep every core busy. Prints, per version, the points seen, the measured ratio (min / median /
max), the rounds the check timed and the seconds per grading. `--tree` grades with another
checkout's grader (e.g. /work/baseline, to measure before a change), with the same versions.

`--before` times every round the check allows (no early stop: what the check did before rounds
stopped once the band was decided); `--side-by-side` grades two at a time, as `jobs=2` grades
two topics at once, to show that a neighbour does not move the verdict.

    python benchmarks/speed_stability.py [--runs 20] [--hogs 2] [--exercise at_updates.histogram]
                                         [--before] [--side-by-side] [--size N]
                                         [--versions reference,x2,x10] [--tree DIR] [--full 1.25]
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

HERE = Path(__file__).resolve().parent.parent


def _tree() -> Path:
    """The checkout whose grader grades (`--tree DIR` or `--tree=DIR`), read before the imports."""
    for i, arg in enumerate(sys.argv):
        if arg.startswith("--tree="):
            return Path(arg.split("=", 1)[1]).resolve()
        if arg == "--tree" and i + 1 < len(sys.argv):
            return Path(sys.argv[i + 1]).resolve()
    return HERE


ROOT = _tree()
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from device_check import SLOWDOWN, speed_of  # noqa: E402

from jaxlings.grading import topics  # noqa: E402

# `affine` twice in NumPy (the twin): NumPy runs eagerly, so both products are computed.
NUMPY_AFFINE = """

import numpy as _np


def affine(x, W, b):
    x, W, b = _np.asarray(x), _np.asarray(W), _np.asarray(b)
    first, second = x @ W, x @ W
    return first + b + 0 * second[:1]
"""


def variants(topic: str, exercise: str, folder: Path, names: list[str]) -> dict[str, Path]:
    """Version name -> a submission folder holding `<topic>.py` for it, for each of `names`
    (reference, x2, x10, ..., numpy x2)."""
    source = (ROOT / "solutions" / f"{topic}.py").read_text()
    made = {}
    for name in names:
        if name == "reference":
            made[name] = ROOT / "solutions"
            continue
        target = folder / name.replace(" ", "_")
        target.mkdir(parents=True)
        if name == "numpy x2":
            if f"{topic}.{exercise}" != "jit_basics.affine":
                raise SystemExit("the NumPy twin is written for jit_basics.affine only")
            text = source + NUMPY_AFFINE
        else:
            text = f"{source}{SLOWDOWN}{exercise} = _slowed({exercise}, {int(name.lstrip('x'))})\n"
        (target / f"{topic}.py").write_text(text)
        made[name] = target
    return made


def _hog() -> None:
    while True:
        pass


def spec_for(name: str, before: bool, size: int | None = None, all_checks: bool = False, full: float | None = None):
    """The topic spec holding just `name`, with early stopping off for `before`, the CPU
    workload of `size` where given (to try a size before setting it in the topic's spec), the
    band starting at `full` where given (to try a band), and unless `all_checks` only the
    checks `correct` and `speed` (the versions pass the others; the speed check does not depend
    on them, and they cost most of a grading's time)."""
    (spec,) = topics.resolve([name])

    def changed(speed):
        return dataclasses.replace(
            speed,
            margin=float("inf") if before else speed.margin,
            size=speed.size if size is None else {**speed.size, "cpu": size},
            full=speed.full if full is None else full,
        )

    def checks(ex):
        kept = ex.checks if all_checks else tuple(c for c in ex.checks if c.name in ("correct", "speed"))
        return tuple(changed(c) if c.name == "speed" else c for c in kept)

    exercises = tuple(dataclasses.replace(ex, checks=checks(ex)) for ex in spec.exercises)
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
    ap.add_argument("--versions", default="reference,x2,x10", help="comma-separated: reference, xN, numpy x2")
    ap.add_argument("--tree", help="grade with this checkout's grader (read before the imports)")
    ap.add_argument("--full", type=float, help="the band's start (default: the topic's)")
    ap.add_argument(
        "--all-checks", action="store_true", help="grade every check of the exercise, not only correct and speed"
    )
    args = ap.parse_args()
    topic, exercise = args.exercise.split(".")
    spec = spec_for(args.exercise, args.before, args.size, args.all_checks, args.full)
    hogs = [mp.Process(target=_hog, daemon=True) for _ in range(args.hogs)]
    for h in hogs:
        h.start()
    size = next(ex.check("speed").size_for("cpu") for ex in spec.exercises if ex.name == exercise)
    print(
        f"{args.exercise} (CPU size {size}): {args.runs} gradings per version, {args.hogs} hogs, "
        f"{'no early stop' if args.before else 'early stop'}, "
        f"{'two at a time' if args.side_by_side else 'one at a time'}, grader {ROOT}"
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for label, folder in variants(topic, exercise, Path(tmp), args.versions.split(",")).items():
                t0 = time.monotonic()
                with ThreadPoolExecutor(2 if args.side_by_side else 1) as pool:
                    runs = list(pool.map(lambda _, folder=folder: points_ratio_rounds(folder, spec), range(args.runs)))
                points = sorted({p for p, _, _ in runs})
                ratios = [r for _, r, _ in runs if r is not None]
                rounds = [n for _, _, n in runs]
                summary = (
                    f"min {min(ratios):.3f} / median {statistics.median(ratios):.3f} / max {max(ratios):.3f}"
                    if ratios
                    else "no ratio (timed out)"
                )
                print(
                    f"{label:16s} points {points}; ratio {summary}; rounds {min(rounds)}-{max(rounds)} "
                    f"(median {statistics.median(rounds):g}); {(time.monotonic() - t0) / args.runs:.1f} s per grading",
                    flush=True,
                )
    finally:
        for h in hogs:
            h.terminate()


if __name__ == "__main__":
    main()
