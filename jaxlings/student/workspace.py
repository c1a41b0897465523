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
import textwrap
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from jaxlings.grading import checks, paths, topics

JIT_CONVENTION = (
    "Write plain functions: the grader calls them as written for `correct` (where the exercise has a `jit` check "
    "it tries its own `jax.jit` first, which compiles faster, and calls the function as written when that fails or "
    "differs: a function that is right as written is judged right), and applies `jax.jit` itself for "
    '`jit` (with the static arguments the docstring names) and for the checks that say "jitted by the grader"; '
    "a function you jit yourself is used as it is. Decorate a function only where its task says so (a check that "
    'says "called as written" times or counts it as you wrote it).'
)
"""The one statement of how the grader calls students' functions (this README, notebooks)."""

TOLERANCE = (
    "A float output matches when |got - expected| <= atol + rtol·|expected| in every entry (NaN where the "
    "reference has NaN); integers, booleans and keys must be equal."
)


def after_correct(kinds: Collection[str] | None = None) -> str:
    """Which checks wait for `correct`, from the checks' own declarations: of `kinds` (check
    names: a topic's own, so that its notebook changes only with its checks), else of all."""
    needs = [
        f"`{name}`"
        for name, kind in checks.KINDS.items()
        if "correct" in kind.requires and not kind.advisory and (kinds is None or name in kinds)
    ]
    if not needs:
        return ""
    words = needs[0] if len(needs) == 1 else f"{', '.join(needs[:-1])} and {needs[-1]}"
    return f"{words} count{'s' if len(needs) == 1 else ''} only once `correct` passes."


def grading_rules() -> str:
    """How every exercise is graded, for students to read once (the README's section; each
    stub's header points to it)."""
    return (
        'Each function\'s docstring ends with its "Graded" list: what to do for each check, its points, and a last '
        f"line of the exact numbers (tolerances, limits, time bands). {JIT_CONVENTION} {TOLERANCE} {after_correct()} "
        "Advice (a check worth no points, such as `key_reuse`) is shown apart and never costs points. "
        "`grade check` runs the public cases offline and shows your own time for `speed`, which is judged on "
        "submission, on the grading machine."
    )


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

Working in the notebook instead? Its answer cells are graded by its own grade cells, but the
commands above read `exercises/<topic>.py`: they tell you when the notebook holds answers the
file does not, and `grade take-notebook <topic>` copies them into the file (the file as it was
is kept in `.jaxlings/backups/` first).

## How you are graded

{rules}
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
    _place(laid, directory / "README.md", text=_readme)
    state = paths.state_dir(directory)
    if not state.exists():
        state.mkdir(parents=True)
        laid.created.append(state)
    return laid


def _readme() -> str:
    """The workspace's README: the loop, and the grading rules wrapped for reading."""
    rules = "\n".join(textwrap.wrap(grading_rules(), 96, break_on_hyphens=False, break_long_words=False))
    return README.format(order=", ".join(f"`{t}`" for t in topics.ORDER), rules=rules)


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
    from jaxlings.course import dist  # the repo: build it from the nbgrader source notebook

    return dist.released_notebook(paths.course_dir() / "source" / topic / f"{topic}.ipynb")
