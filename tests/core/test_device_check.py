"""`benchmarks/device_check.py` (`make device-check`) runs on whatever device it finds: here, the
CPU (and the CPU played as an exclusive device), for one speed-checked exercise, so that the
script works the day it meets the grading accelerator. The slowed versions really are slower
(ratios within one run, never wall times)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from helpers.grading import ROOT


@pytest.mark.slow
@pytest.mark.parametrize("setting", ["cpu", "exclusive"])
def test_device_check_ranks_the_reference_and_its_slowed_versions(setting, tmp_path):
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "device_check.py"),
            "--exercises",
            "jit_basics.bce_fast",
            "--no-course",
            "--device",
            setting,
            "--json",
            str(tmp_path / "check.json"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    rows = {
        m.group(1).strip(): (float(m.group(2)), float(m.group(3)))
        for m in re.finditer(
            r"^jit_basics\.bce_fast\s+(reference|x2|x10)\s+x([\d.]+)-[\d.]+\s+([\d.]+)-", run.stdout, re.M
        )
    }
    assert set(rows) == {"reference", "x2", "x10"}, run.stdout
    (ref, ref_points), (x2, _), (x10, x10_points) = rows["reference"], rows["x2"], rows["x10"]
    assert x10 > 2 * ref and x10 > x2, run.stdout
    assert ref_points == 1 and x10_points < ref_points, run.stdout
    assert re.search(r"ms\s+\d+", run.stdout)  # the workload against the dispatch floor
    assert "device check done" in run.stdout
    runs = json.loads((tmp_path / "check.json").read_text())["runs"]
    assert [r.get("opens", 0) for r in runs] == ([2, 2, 2] if setting == "exclusive" else [0, 0, 0])


@pytest.mark.slow
def test_device_survey_runs_here(tmp_path):
    """`benchmarks/device_survey.py` is run on an accelerator, where a broken line costs a session
    its device time: here it runs on the CPU, small, and says what it measured."""
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "device_survey.py"),
            "--out",
            str(tmp_path),
            "--skip",
            "opens",
            "--reps",
            "1",
            "--exercises",
            "at_updates.histogram,prng.monte_carlo_pi",
            "--sizes",
            "64",
            "--deadline",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = json.loads((tmp_path / "speed.json").read_text())
    histogram = next(r for r in rows if r.get("exercise") == "at_updates.histogram")
    assert histogram["inputs_same_on_cpu"] and histogram["round_x2_ms"] > 0 and "error" not in histogram
    assert (tmp_path / "tolerance.json").exists() and "wrote speed.json" in (tmp_path / "survey.log").read_text()
    assert histogram["compile_s"] > 0 and histogram["digest_compile_s"] > 0  # what compiling costs


def test_compile_probe_runs_here(tmp_path):
    """`benchmarks/compile_probe.py` (run on an accelerator) compiles each row in both threefry
    layouts and says so, here on the CPU at a small size."""
    out = tmp_path / "probe.jsonl"
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "compile_probe.py"), "--out", str(out)]
        + ["--rows", "prng.monte_carlo_pi:4x64,prng.noisy_walk:3x2", "--partitionable", "both"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["row"], r["partitionable"]) for r in rows] == [
        ("prng.monte_carlo_pi:4x64", True),
        ("prng.monte_carlo_pi:4x64", False),
        ("prng.noisy_walk:3x2", True),
        ("prng.noisy_walk:3x2", False),
    ]
    assert all(r["compile_s"] > 0 and r["device"] for r in rows)
