"""What one worker's start costs (a benchmark, not a test): wall and CPU seconds from spawning a
worker on an empty module to its greeting, and the import of the libraries every worker loads.

Every topic graded starts two workers (the student's and the trusted one), and a whole-course
grading starts 24, so their start is a fixed cost of every `grade check` and every submission.
It is where `ml_dtypes` 0.7.0 was found to cost 0.46 s of each start (pyproject pins <0.7).

    .venv/bin/python benchmarks/worker_start.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

IMPORTS = ("ml_dtypes", "jax", "flax.nnx, optax", "netket")


def import_seconds(module: str) -> float:
    """Wall seconds of `import module` in a fresh interpreter, less the interpreter's own start."""

    def run(code: str) -> float:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        return time.perf_counter() - t0

    return run(f"import numpy; import {module}") - run("import numpy")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from importlib import metadata

    print(f"ml_dtypes {metadata.version('ml_dtypes')}, jax {metadata.version('jax')}")
    for module in IMPORTS:
        print(f"import {module:<16} {statistics.median(import_seconds(module) for _ in range(3)):.2f} s")
    wall, cpu = worker_start(args.runs)
    print(
        f"worker start: wall {wall:.2f} s, CPU {cpu:.2f} s (median of {args.runs}; CPU from the worker's cgroup, "
        "nan without one)"
    )


def worker_start(runs: int) -> tuple[float, float]:
    """Median wall and CPU seconds of a worker's start on an empty module: the machine's speed
    in the unit that dominates a grading's fixed cost (`bench.py` prints it as its yardstick)."""
    from jaxlings.isolation import WorkerProcess

    with tempfile.TemporaryDirectory() as tmp:
        module = Path(tmp) / "empty_module.py"
        module.write_text("x = 1\n")
        walls, cpus = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            worker = WorkerProcess(module, "empty_module")
            walls.append(time.perf_counter() - t0)
            worker.close()
            cpus.append(worker.cpu_seconds() or float("nan"))
    return statistics.median(walls), statistics.median(cpus)


if __name__ == "__main__":
    main()
