"""Grade the same submission many times, several at once, and count what went wrong.

For an honest submission every grading should be full marks; a loaded machine is where a
grader's own faults show (a worker stopped by a signal, a deadline hit by the grader's load).
Each grading is `grade grade SUBMISSION -t SELECTION --json ...` in a process of its own,
`--parallel` of them at a time; prints each run that lost a point with the tests it lost and
their messages, then the count of runs at full marks and of runs whose messages say a worker
was killed or stopped.

    python benchmarks/repeat_grading.py [--runs 50] [--parallel 3] [--topics training.fit]
        [--submission solutions] [--sandbox on]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEATHS = ("killed by signal", "was stopped", "stopped:")


def grade_once(i: int, args: argparse.Namespace, folder: Path) -> dict:
    """One grading in a process of its own: its score, the tests short of full marks."""
    out = folder / f"run{i}.json"
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "jaxlings", "grade", args.submission, "-t", args.topics]
        + ["--sandbox", args.sandbox, "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    seconds = time.monotonic() - t0
    if not out.exists():
        return {"run": i, "seconds": seconds, "error": (done.stdout + done.stderr)[-500:]}
    result = json.loads(out.read_text())
    lost = [
        (t["name"], t["score"], t["max_score"], t["output"][:300])
        for t in result["tests"]
        if t["score"] < t["max_score"]
    ]
    return {"run": i, "seconds": seconds, "score": result["score"], "lost": lost}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--parallel", type=int, default=3)
    ap.add_argument("--topics", default="training.fit")
    ap.add_argument("--submission", default="solutions")
    ap.add_argument("--sandbox", default="on")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.parallel) as pool:
        rows = list(pool.map(lambda i: grade_once(i, args, Path(tmp)), range(args.runs)))
    for row in rows:
        if row.get("error") or row["lost"]:
            print(json.dumps(row))
    full = sum(1 for r in rows if not r.get("error") and not r["lost"])
    deaths = sum(1 for r in rows if any(d in m for _, _, _, m in r.get("lost", []) for d in DEATHS))
    seconds = sorted(r["seconds"] for r in rows)
    print(
        f"{args.runs} gradings of {args.topics} ({args.submission}, sandbox {args.sandbox}), {args.parallel} at a "
        f"time: {full} at full marks, {deaths} with a worker killed or stopped, "
        f"{sum(1 for r in rows if r.get('error'))} without a result; {seconds[0]:.1f}-{seconds[-1]:.1f} s each"
    )
    return 0 if full == args.runs else 1


if __name__ == "__main__":
    raise SystemExit(main())
