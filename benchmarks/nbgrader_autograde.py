"""How long `nbgrader autograde` takes per topic notebook, on a copy of course/.

For each topic: generate_assignment, hand in the source notebook (the reference solutions) as
one student's submission, and time `nbgrader autograde`. Prints one row per topic: seconds,
and the score nbgrader recorded (full marks expected).

    .venv/bin/python benchmarks/nbgrader_autograde.py [TOPIC ...]
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def nbgrader(course: Path, *args: str) -> None:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run([str(BIN / "nbgrader"), *args], cwd=course, env=env, capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"nbgrader {' '.join(args)} failed:\n{run.stderr[-3000:]}")


def main(names: list[str]) -> None:
    sys.path.insert(0, str(ROOT))
    from jaxlings.grading import topics

    print(f"{'topic':<12} {'autograde s':>11} {'score':>12}")
    for name in names or list(topics.ORDER):
        with tempfile.TemporaryDirectory() as tmp:
            course = Path(tmp)
            shutil.copy(ROOT / "course" / "nbgrader_config.py", course)
            shutil.copytree(ROOT / "course" / "source" / name, course / "source" / name)
            nbgrader(course, "generate_assignment", name)
            (course / "submitted" / "student" / name).mkdir(parents=True)
            shutil.copy(course / "source" / name / f"{name}.ipynb", course / "submitted" / "student" / name)
            nbgrader(course, "db", "student", "add", "student")
            t0 = time.monotonic()
            nbgrader(course, "autograde", name)
            seconds = time.monotonic() - t0
            nbgrader(course, "export")
            with open(course / "grades.csv") as f:
                row = next(csv.DictReader(f))
            print(f"{name:<12} {seconds:>11.1f} {row['score']:>6}/{row['max_score']:<6}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
