"""`grade init`: a student's workspace, laid out from the installed course (as `rustlings init`).

    DIR/README.md             how to work through the course
    DIR/exercises/<topic>.py  the stubs you fill in (checked by `grade check`, sent by `grade submit`)
    DIR/lessons/<topic>.md    the lessons
    DIR/notebooks/<topic>.ipynb  the same topics as notebooks, with grade cells
    DIR/.jaxlings/            your local state: hint levels, last verdicts

A file that exists is never touched: running `grade init` again only adds what is missing
(a new topic of a newer course version, say), so a student's work is never overwritten.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from autograder import paths, topics

README = """\
# My jaxlings workspace

Learn JAX by filling in functions, one topic at a time, in this order:
{order}.

For each topic:

1. read `lessons/<topic>.md` (or open `notebooks/<topic>.ipynb` in JupyterLab);
2. fill in the functions of `exercises/<topic>.py`: each docstring is the task;
3. `grade check <topic>` runs the grader's checks on the public cases, offline, in seconds
   (`grade check <topic>.<function>` for one function; `grade watch <topic>` re-checks on save);
4. stuck? `grade hint <topic>.<function>` (ask again for more);
5. `grade submit` sends your exercises to the course's grader, which runs the hidden cases and
   the speed checks on the grading machine.

Run the `grade` commands in this folder: your progress is kept in `.jaxlings/`.
"""


class WorkspaceError(Exception):
    """The workspace cannot be laid out (the target is a file, a course file is missing)."""


@dataclass
class Laid:
    """What `init` did: the files it created and the ones it left as they were."""

    created: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)


def init(directory: Path) -> Laid:
    """Lay out the workspace in `directory`, adding only what is missing."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise WorkspaceError(f"{directory} exists and is not a folder")
    laid = Laid()
    for topic in topics.ORDER:
        _place(laid, directory / "exercises" / f"{topic}.py", source=paths.exercises_dir() / f"{topic}.py")
        _place(laid, directory / "lessons" / f"{topic}.md", source=paths.lessons_dir() / f"{topic}.md")
        _place(laid, directory / "notebooks" / f"{topic}.ipynb", text=lambda t=topic: _notebook(t))
    _place(laid, directory / "README.md", text=lambda: README.format(order=", ".join(f"`{t}`" for t in topics.ORDER)))
    state = paths.state_dir(directory)
    if not state.exists():
        state.mkdir(parents=True)
        laid.created.append(state)
    return laid


def _place(laid: Laid, target: Path, *, source: Path | None = None, text=None) -> None:
    """Copy `source` (or write `text()`) to `target` unless `target` exists."""
    if target.exists():
        laid.kept.append(target)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if source is not None:
        if not source.is_file():
            raise WorkspaceError(f"the installed course lacks {source}; reinstall the student package")
        shutil.copyfile(source, target)
    else:
        target.write_text(text())
    laid.created.append(target)


def _notebook(topic: str) -> str:
    """The released notebook of `topic`: the package's copy, or (in the repo) made now."""
    folder = paths.notebooks_dir()
    if folder is not None:
        return (folder / f"{topic}.ipynb").read_text()
    from autograder.course import dist  # the repo: build it from the nbgrader source notebook

    return dist.released_notebook(paths.course_dir() / "source" / topic / f"{topic}.ipynb")
