"""`benchmarks/bench.py` (`make bench`) runs and prints its table: each topic checked in a run
of its own, a heavy one in parts on the spare job slot, the scores those of the solutions. The
figures themselves decide nothing and are not asserted."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from helpers.grading import ROOT


@pytest.mark.slow
def test_bench_prints_each_topics_row_and_its_parts():
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench.py"),
            "--modes",
            "check",
            "--runs",
            "1",
            "--each",
            "--jobs",
            "2",
            "primitives",
            "jit_basics",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"^check, cold \(empty compilation cache\): [\d.]+ s for 2 topics", run.stdout, re.M), run.stdout
    header = next(line.split() for line in run.stdout.splitlines() if line.startswith("topic"))
    rows = {
        line.split()[0]: dict(zip(header, line.split()))
        for line in run.stdout.splitlines()
        if line.split()[:1] in (["primitives"], ["jit_basics"])
    }
    parts = {topic: int(row["parts"]) for topic, row in rows.items()}
    assert parts == {"primitives": 1, "jit_basics": 2}, run.stdout  # light: whole; heavy: two parts
    assert all(float(row["comp.stu"]) > 0 for row in rows.values()), run.stdout  # a cold check compiles
