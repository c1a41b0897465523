"""Speed-check stability under load: are the speed points the same every time?

Grades the reference `histogram` and a slow Python-loop `histogram` (a loop over the bins)
N times each while other processes keep every core busy, and prints the speed points and
the measured time ratios (min / median / max) of each. Usage:

    python benchmarks/speed_stability.py [--runs 10] [--hogs 2] [--exercise at_updates.histogram]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import tempfile
import textwrap
import time
from pathlib import Path

from autograder import engine, topics

ROOT = Path(__file__).resolve().parent.parent
SLOW = '''
import jax.numpy as jnp

def histogram(x, nbins):
    h = jnp.zeros(nbins, jnp.int32)
    for b in range(nbins):  # a Python loop over the bins: one pass over x per bin
        h = h.at[b].set(jnp.sum(x == b, dtype=jnp.int32))
    return h
'''


def _hog() -> None:
    while True:
        pass


def speed_of(folder: Path, name: str) -> tuple[float, float | None]:
    result = engine.grade(folder, topics.resolve([name]), reference_dir=ROOT / "solutions")
    (test,) = [t for t in result.tests if t.check == "speed"]
    return test.score, test.extra_data.get("ratio")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--hogs", type=int, default=mp.cpu_count())
    ap.add_argument("--exercise", default="at_updates.histogram")
    args = ap.parse_args()
    hogs = [mp.Process(target=_hog, daemon=True) for _ in range(args.hogs)]
    for h in hogs:
        h.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            slow = Path(tmp)
            (slow / "at_updates.py").write_text(textwrap.dedent(SLOW))
            for label, folder in (("reference", ROOT / "solutions"), ("python loop", slow)):
                t0 = time.monotonic()
                runs = [speed_of(folder, args.exercise) for _ in range(args.runs)]
                points = sorted({p for p, _ in runs})
                ratios = [r for _, r in runs if r is not None]
                summary = (f"min {min(ratios):.3f} / median {statistics.median(ratios):.3f} / max {max(ratios):.3f}"
                           if ratios else "no ratio (timed out)")
                print(f"{label:12s} speed points over {args.runs} runs: {points}; ratio {summary}; "
                      f"{(time.monotonic() - t0) / args.runs:.1f} s per grading")
    finally:
        for h in hogs:
            h.terminate()


if __name__ == "__main__":
    main()
