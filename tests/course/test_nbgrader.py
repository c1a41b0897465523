"""The course as nbgrader runs it: real `nbgrader` commands on a copy of course/.

One assignment (`at_updates`, the quickest topic to grade) goes through the whole pipeline:
generate_assignment, autograde of three students (alice hands in the source notebook, i.e.
the solutions; bob the released notebook untouched, i.e. the stubs; carol the solutions with
one function written the tutorial's way, which does not jit), generate_feedback and export.
carol's failed checks through nbgrader must be the ones `grade grade` finds.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import topics
from helpers.grading import ROOT, failing, grade_dir, write_submission

pytestmark = pytest.mark.slow

TOPIC = "at_updates"
WRONG = (
    "    return jnp.where(x > threshold, jnp.asarray(fill, x.dtype), x)",
    "    return x.at[x > threshold].set(fill)",
)


def nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    """Run one nbgrader command in the course root, with this environment's tools on PATH."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    run = subprocess.run(
        [str(Path(sys.executable).parent / "nbgrader"), *args],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, f"nbgrader {' '.join(args)}:\n{run.stdout[-3000:]}\n{run.stderr[-5000:]}"
    return run


def hand_in(course: Path, student: str, notebook: nbformat.NotebookNode) -> None:
    folder = course / "submitted" / student / TOPIC
    folder.mkdir(parents=True)
    nbformat.write(notebook, folder / f"{TOPIC}.ipynb")


def with_wrong_mask_fill(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook with `mask_fill`'s answer written as the seed tutorial wrote it."""
    notebook = nbformat.from_dict(notebook)
    [cell] = [c for c in notebook.cells if c.get("id") == "mask_fill"]
    assert WRONG[0] in cell.source
    cell.source = cell.source.replace(*WRONG)
    return notebook


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """A course root that has been through generate_assignment, autograde, feedback, export."""
    course = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "course" / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "course" / "source" / TOPIC, course / "source" / TOPIC)
    nbgrader(course, "generate_assignment", TOPIC)
    source = nbformat.read(course / "source" / TOPIC / f"{TOPIC}.ipynb", as_version=4)
    released = nbformat.read(course / "release" / TOPIC / f"{TOPIC}.ipynb", as_version=4)
    hand_in(course, "alice", source)
    hand_in(course, "bob", released)
    hand_in(course, "carol", with_wrong_mask_fill(source))
    for student in ("alice", "bob", "carol"):
        nbgrader(course, "db", "student", "add", student)
    nbgrader(course, "autograde", TOPIC)
    nbgrader(course, "generate_feedback", TOPIC)
    nbgrader(course, "export")
    return course


def scores(course: Path) -> dict[str, tuple[float, float]]:
    with open(course / "grades.csv") as f:
        return {row["student_id"]: (float(row["score"]), float(row["max_score"])) for row in csv.DictReader(f)}


def cell_grades(course: Path, student: str) -> dict[str, tuple[float, float]]:
    """Grade cell id -> (score, max) from nbgrader's gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        notebook = gb.find_submission_notebook(TOPIC, TOPIC, student)
        return {g.name: (g.score, g.max_score) for g in notebook.grades if g.cell_type == "code"}


def test_release_strips_solutions_and_hidden_tests(course):
    released = (course / "release" / TOPIC / f"{TOPIC}.ipynb").read_text()
    assert "BEGIN SOLUTION" not in released and "jnp.where(x > threshold" not in released
    assert "HIDDEN TESTS" not in released and 'mode = \\"hidden\\"' not in released
    assert released.count('raise NotImplementedError(\\"your code here\\")') == len(topics.load(TOPIC).exercises)


def test_solutions_get_full_marks_and_stubs_zero(course):
    total = sum(ex.points for ex in topics.load(TOPIC).exercises)
    got = scores(course)
    assert got["alice"] == (total, total)
    assert got["bob"] == (0, total)
    assert set(got) == {"alice", "bob", "carol"}


def test_one_wrong_function_fails_the_same_checks_as_grade_grade(course, tmp_path):
    through_nbgrader = {
        f"{TOPIC}.{cell.replace('-', ':')}"
        for cell, (score, top) in cell_grades(course, "carol").items()
        if score < top
    }
    solution = (ROOT / "solutions" / f"{TOPIC}.py").read_text()
    folder = write_submission(tmp_path / "carol", {TOPIC: solution.replace(*WRONG)})
    through_grade = failing(grade_dir(folder, [TOPIC]))
    assert through_nbgrader == through_grade == {f"{TOPIC}.mask_fill:jit"}


def test_feedback_shows_verdicts_but_no_hidden_tests(course):
    for student in ("alice", "bob", "carol"):
        html = (course / "feedback" / student / TOPIC / f"{TOPIC}.html").read_text()
        assert "HIDDEN TESTS" not in html and "hidden&quot;" not in html and '"hidden"' not in html
    carol = (course / "feedback" / "carol" / TOPIC / f"{TOPIC}.html").read_text()
    assert "jaxlings-check jaxlings-fail" in carol and "at_updates.mask_fill:jit" in carol  # its HTML box
    assert "NonConcreteBooleanIndexError" in carol
