"""Where the course's files are: the reference solutions, the exercises, lessons, notebooks,
per-user state.

Two layouts: the repo (the grader's side: `solutions/`, `exercises/`, `course/`) and the
student package, which carries the student's files inside the package
(`jaxlings/student_files/`: `exercises/`, `lessons/`, `notebooks/`) and no solutions.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
"""The `jaxlings` package."""
PACKAGE_ROOT = PACKAGE_DIR.parent
"""The folder holding it: the repo, or site-packages in the student package."""
STUDENT_FILES = PACKAGE_DIR / "student_files"
"""The student's files inside the student package (absent in the repo)."""


def has_grader() -> bool:
    """Whether the hidden grader is here (the repo), not just the student package."""
    return (PACKAGE_ROOT / "jaxlings" / "specs" / "prng.py").is_file() and (PACKAGE_ROOT / "solutions").is_dir()


def solutions_dir() -> Path:
    """The reference solutions (`$JAXLINGS_SOLUTIONS`, else the repo's `solutions/`)."""
    path = Path(os.environ.get("JAXLINGS_SOLUTIONS", PACKAGE_ROOT / "solutions"))
    if not path.is_dir():
        raise FileNotFoundError(
            f"the reference solutions are not at {path}: hidden grading runs on the course's grader, "
            "which has them (set JAXLINGS_SOLUTIONS there to their folder)"
        )
    return path


def _student_or_repo(student: str, repo: Path) -> Path:
    packaged = STUDENT_FILES / student
    return packaged if packaged.is_dir() else repo


def exercises_dir() -> Path:
    """The generated student stubs (the package's copy, else the repo's `exercises/`)."""
    return _student_or_repo("exercises", PACKAGE_ROOT / "exercises")


def lessons_dir() -> Path:
    """The lessons, one markdown file per topic."""
    return _student_or_repo("lessons", PACKAGE_ROOT / "course" / "lessons")


def notebooks_dir() -> Path | None:
    """The released notebooks (stubs, no hidden tests): in the student package only; the repo
    makes them with `jaxlings.course.dist.released_notebook`."""
    path = STUDENT_FILES / "notebooks"
    return path if path.is_dir() else None


def course_dir() -> Path:
    """The nbgrader course root: lessons, `nbgrader_config.py`, generated source notebooks."""
    return PACKAGE_ROOT / "course"


def state_dir(workdir: Path) -> Path:
    """Per-student state (hint levels, last check results) kept beside their exercises: the
    nearest `.jaxlings/` at or above `workdir` (a notebook runs in `notebooks/`), else a new one
    in `workdir`."""
    workdir = Path(workdir).resolve()
    for folder in (workdir, *workdir.parents):
        if (folder / ".jaxlings").is_dir():
            return folder / ".jaxlings"
    return workdir / ".jaxlings"
