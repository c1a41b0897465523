"""Where the course's files are: the reference solutions, the exercises, per-user state."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def solutions_dir() -> Path:
    """The reference solutions (`$JAXLINGS_SOLUTIONS`, else the repo's `solutions/`)."""
    path = Path(os.environ.get("JAXLINGS_SOLUTIONS", PACKAGE_ROOT / "solutions"))
    if not path.is_dir():
        raise FileNotFoundError(
            f"the reference solutions are not at {path}; grading needs them (set JAXLINGS_SOLUTIONS to their folder)"
        )
    return path


def exercises_dir() -> Path:
    """The repo's generated student stubs."""
    return PACKAGE_ROOT / "exercises"


def course_dir() -> Path:
    """The nbgrader course root: lessons, `nbgrader_config.py`, generated source notebooks."""
    return PACKAGE_ROOT / "course"


def state_dir(workdir: Path) -> Path:
    """Per-student state (hint levels, last check results) kept beside their exercises."""
    return workdir / ".jaxlings"
