"""Every code block of every lesson runs on today's JAX, so the text cannot rot."""

import subprocess
import sys
from pathlib import Path

import pytest

from helpers.grading import ROOT
from jaxlings.course import notebooks

LESSONS = sorted((ROOT / "course" / "lessons").glob("*.md"))


def code_of(lesson: Path) -> str:
    """The lesson's python blocks, in order, as one script (later blocks use earlier names)."""
    return "\n\n".join(notebooks.FENCE.findall(lesson.read_text()))


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_code_runs(lesson, tmp_path):
    script = code_of(lesson)
    assert script.strip(), f"{lesson.name} has no python blocks"
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"{lesson.name}:\n{run.stderr[-3000:]}"


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_points_to_its_exercises(lesson):
    assert f"exercises/{lesson.stem}.py" in lesson.read_text()


def test_lesson_figures_script_measures_a_lesson():
    """`benchmarks/lesson_figures.py`, which the lessons' figures come from, still runs: one
    quick lesson, every line `<lesson> | <figure> | <value>` under a header naming the machine."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "lesson_figures.py"), "pytrees"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.strip().splitlines()
    assert lines[0].startswith("# machine:") and "jax" in lines[0]
    figures = [line.split(" | ") for line in lines[1:]]
    assert figures and all(len(f) == 3 and f[0] == "pytrees" for f in figures)
