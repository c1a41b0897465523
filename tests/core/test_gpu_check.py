"""`benchmarks/gpu_check.py` (`make gpu-check`) runs on whatever backend it finds: here, the CPU,
for one speed-checked exercise, so that the script works the day it meets the grading GPU.
The slowed versions really are slower (ratios within one run, never wall times)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from helpers.grading import ROOT


@pytest.mark.slow
def test_gpu_check_ranks_the_reference_and_its_slowed_versions():
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "gpu_check.py"),
            "--exercises",
            "jit_basics.bce_fast",
            "--no-course",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    rows = {
        m.group(1).strip(): (float(m.group(2)), float(m.group(3)))
        for m in re.finditer(
            r"^jit_basics\.bce_fast\s+(reference|x2 slower|x10 slower)\s+([\d.]+)\s+([\d.]+)/", run.stdout, re.M
        )
    }
    assert set(rows) == {"reference", "x2 slower", "x10 slower"}, run.stdout
    (ref, ref_points), (x2, _), (x10, x10_points) = rows["reference"], rows["x2 slower"], rows["x10 slower"]
    assert x10 > 2 * ref and x10 > x2, run.stdout
    assert ref_points == 1 and x10_points < ref_points, run.stdout
    assert re.search(r"ms\s+\d+", run.stdout)  # the workload against the dispatch floor
    assert "gpu check done" in run.stdout
