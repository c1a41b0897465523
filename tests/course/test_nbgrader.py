"""The course as nbgrader runs it: real `nbgrader` commands on a copy of course/.

One assignment (`at_updates`, the quickest topic to grade) goes through the whole pipeline:
generate_assignment, autograde of three students (alice hands in the source notebook, i.e.
the solutions; bob the released notebook untouched, i.e. the stubs; carol the solutions with
one function written the tutorial's way, which does not jit), generate_feedback and export.
carol's failed checks through nbgrader must be the ones `grade grade` finds.

The course's rules (course.toml: a due date, 25% off per day started) reach nbgrader through
`grade course nbgrader-dates` (the due date, and alice's one-day extension granted on the
service with `grade course extend`) and the late-penalty plugin: carol hands in 20 hours late
and loses what the service would take off the same submission; alice, 10 hours late with her
extension, loses nothing.
"""

from __future__ import annotations

import csv
import datetime as dt
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from helpers.grading import CLOCK_NOISE, ROOT, grade_dir, short_of_full_marks, write_submission
from jaxlings.grading import topics
from jaxlings.grading.checks.speed import Speed, band_score

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


DUE = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
RULES = f"""
timezone = "Europe/Zurich"
[late]
policy = "per_day"
penalty = 0.25
floor = 0.5
[topics.{TOPIC}]
due = {DUE:%Y-%m-%dT%H:%M:%SZ}
late_until = 2026-12-31T12:00:00Z
"""
HANDED_IN = {"alice": DUE + dt.timedelta(hours=10), "bob": DUE, "carol": DUE + dt.timedelta(hours=20)}


def hand_in(course: Path, student: str, notebook: nbformat.NotebookNode) -> None:
    """The notebook in nbgrader's submitted/ folder, with the time `nbgrader submit` would stamp."""
    folder = course / "submitted" / student / TOPIC
    folder.mkdir(parents=True)
    nbformat.write(notebook, folder / f"{TOPIC}.ipynb")
    (folder / "timestamp.txt").write_text(f"{HANDED_IN[student]:%Y-%m-%d %H:%M:%S.%f} UTC")


def grade(*args: str, cwd: Path, data: Path) -> subprocess.CompletedProcess:
    """`grade ARGS` (a service command) against the service data folder `data`."""
    env = {**os.environ, "JAXLINGS_DATA_DIR": str(data)}
    run = subprocess.run([sys.executable, "-m", "jaxlings", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert run.returncode == 0, f"grade {' '.join(args)}:\n{run.stdout}\n{run.stderr}"
    return run


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
    (course / "course.toml").write_text(RULES)
    nbgrader(course, "generate_assignment", TOPIC)
    service = tmp_path_factory.mktemp("service")
    roster = service / "roster.csv"
    roster.write_text("login,name,email\nalice,Alice,\nbob,Bob,\ncarol,Carol,\n")
    grade("course", "add-students", str(roster), "--out", str(service / "tokens.csv"), cwd=course, data=service)
    grade("course", "extend", "alice", TOPIC, "--days", "1", "--rules", "course.toml", cwd=course, data=service)
    dates = grade("course", "nbgrader-dates", "--rules", "course.toml", "--course-dir", ".", cwd=course, data=service)
    assert "alice has 1 day more" in dates.stdout and f"{TOPIC}: due 2026-12-01 13:00 CET" in dates.stdout
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


def late_penalties(course: Path) -> dict[str, float | None]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {s: gb.find_submission_notebook(TOPIC, TOPIC, s).late_submission_penalty for s in HANDED_IN}


def test_a_late_notebook_loses_what_the_service_takes_off(course):
    from jaxlings.grading import rules

    course_rules = rules.load(course / "course.toml", topics.ORDER)
    carol_keeps = course_rules.window(TOPIC).factor(HANDED_IN["carol"])
    alice_keeps = course_rules.window(TOPIC, dt.timedelta(days=1)).factor(HANDED_IN["alice"])
    assert (carol_keeps, alice_keeps) == (0.75, 1.0)  # a day started at 25% a day; alice within her extension
    raw = {s: sum(score for score, _ in cell_grades(course, s).values()) for s in HANDED_IN}
    penalties = late_penalties(course)
    assert penalties["carol"] == pytest.approx(raw["carol"] * (1 - carol_keeps)) and raw["carol"] > 0
    assert not penalties["alice"] and not penalties["bob"]
    assert scores(course)["carol"][0] == pytest.approx(raw["carol"] * carol_keeps)  # grades.csv: after the penalty


def test_release_strips_solutions_and_hidden_tests(course):
    released = (course / "release" / TOPIC / f"{TOPIC}.ipynb").read_text()
    assert "BEGIN SOLUTION" not in released and "jnp.where(x > threshold" not in released
    assert "HIDDEN TESTS" not in released and 'mode = \\"hidden\\"' not in released
    assert released.count('raise NotImplementedError(\\"your code here\\")') == len(topics.load(TOPIC).exercises)


def short_of_full_cells(course: Path, student: str) -> set[str]:
    """The grade cells (`exercise:check`) of `student` short of full marks, less the `speed` cells
    whose shortfall is the clock's noise: nbgrader keeps only the points, so a speed cell counts
    as noise when it earned at least what a ratio of `CLOCK_NOISE` earns in its band (a CI run
    read 13.93 of 14 for the solutions: one speed cell at about x1.3)."""
    speed = {
        f"{ex.name}:speed": check
        for ex in topics.load(TOPIC).exercises
        for check in ex.checks
        if isinstance(check, Speed)
    }
    short = set()
    for cell, (score, top) in cell_grades(course, student).items():
        name = cell.replace("-", ":")
        if score >= top:
            continue
        band = speed.get(name)
        if band is not None and score >= top * band_score(CLOCK_NOISE, band.full, band.zero) - 1e-9:
            continue
        short.add(name)
    return short


def test_solutions_get_full_marks_and_stubs_zero(course):
    total = sum(ex.points for ex in topics.load(TOPIC).exercises)
    got = scores(course)
    assert got["alice"][1] == total and got["alice"][0] > 0
    assert short_of_full_cells(course, "alice") == set()
    assert got["bob"] == (0, total)
    assert set(got) == {"alice", "bob", "carol"}


def test_one_wrong_function_fails_the_same_checks_as_grade_grade(course, tmp_path):
    through_nbgrader = {f"{TOPIC}.{cell}" for cell in short_of_full_cells(course, "carol")}
    solution = (ROOT / "solutions" / f"{TOPIC}.py").read_text()
    folder = write_submission(tmp_path / "carol", {TOPIC: solution.replace(*WRONG)})
    through_grade = short_of_full_marks(grade_dir(folder, [TOPIC]))
    assert through_nbgrader == through_grade == {f"{TOPIC}.mask_fill:jit"}


def test_feedback_shows_verdicts_but_no_hidden_tests(course):
    for student in ("alice", "bob", "carol"):
        html = (course / "feedback" / student / TOPIC / f"{TOPIC}.html").read_text()
        assert "HIDDEN TESTS" not in html and "hidden&quot;" not in html and '"hidden"' not in html
    carol = (course / "feedback" / "carol" / TOPIC / f"{TOPIC}.html").read_text()
    assert "jaxlings-check jaxlings-fail" in carol and "at_updates.mask_fill:jit" in carol  # its HTML box
    assert "NonConcreteBooleanIndexError" in carol
