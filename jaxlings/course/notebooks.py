"""The nbgrader source notebook of a topic, generated from its lesson, solution and spec.

`course/source/<topic>/<topic>.ipynb` reads top to bottom as:

1. the topic's worker settings, when it has any (a locked cell that runs before JAX starts);
   then the setup cell, which makes `jaxlings` (the notebook's grader: `jaxlings.hint(...)`),
   so that a hint works from the lesson on;
2. the lesson, `course/lessons/<topic>.md`: its prose as markdown cells, its python blocks
   as code cells to run, its shell directions told the notebook's way (`for_notebook`);
3. the exercises: the solution module's docstring, its given code as locked cells, and per
   exercise a markdown heading with the checks and points, the answer cell (the solution
   function, its docstring ending with the Graded list generated from the spec, with
   nbgrader's solution markers; `nbgrader generate_assignment` cuts it to a stub), and one
   locked grade cell per check worth that check's points.

A grade cell calls `jaxlings.student.notebook.NotebookGrader.verdict`, the same engine as
`grade grade`; its hidden-tests block switches it from the public cases to the hidden ones
and is stripped from the students' copy. Cell ids are fixed, so a rebuild is byte-identical.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from jaxlings.course import graded
from jaxlings.grading.source import functions, parse_trusted, statement_end
from jaxlings.grading.spec import Topic
from jaxlings.student import notebook

FENCE = re.compile(r"^```python\n(.*?)^```\n?", re.S | re.M)

GRADING_NOTE = """\
**How this notebook is graded.** Write each function in its answer cell, run it, then run the
grade cells below it. A grade cell runs one check on your function, in separate worker
processes, with the same engine as `grade check`: here on the public cases, and when your
instructor autogrades, on fresh hidden cases and edge cases. It shows one box per check, with
the points earned: green passed, amber partly passed, red failed (with the reason), blue judged
on submission (speed: here it shows your own time), purple advice (no points), grey waiting for
another check to pass. Keep any helper your function needs inside its answer cell: the grader
rebuilds your module from the answer cells you last ran. Stuck? `jaxlings.hint("<function>")`
in a cell of your own gives a hint (ask again for the next one).\
"""

SETUP_CELL = """\
# Run this cell first: it sets up this notebook's grader. Stuck on an exercise? Run
# jaxlings.hint("<function>") in a cell of your own (ask again for the next hint).
from jaxlings.student.notebook import grader

jaxlings = grader({topic!r})"""

GRADE_CELL = """\
# {check} ({points:g} {unit}): {summary}
from jaxlings.student.notebook import grader
mode = "public"
### BEGIN HIDDEN TESTS
mode = "hidden"
### END HIDDEN TESTS
grader("{topic}").verdict("{exercise}", "{check}", mode)"""

EXERCISES_BELOW = "the Exercises section below"

CLI_TO_NOTEBOOK = (
    (r"`exercises/{topic}\.py`", EXERCISES_BELOW),
    (r"`grade check {topic}`", "the grade cells under each answer cell"),
    (r"`grade check`'s", "the grade cells'"),
    (r"`grade hint {topic}\.(\w+)`", r'`jaxlings.hint("\1")` in a cell of your own'),
    (r"\(or any\s+other\s+`{topic}\.<exercise>`\)", "(or any other function's name)"),
    (r"`grade hint`", '`jaxlings.hint("<function>")`'),
    (r"^Lesson: course/lessons/{topic}\.md\n?", ""),
    (r"`?course/lessons/{topic}\.md`?", "the lesson above"),
)
"""The lesson's and the module docstring's command-line directions, told the notebook's way (a
notebook student has no shell, and the lesson is the notebook's first part). A replacement that
opens a sentence is capitalised (`for_notebook`)."""

SENTENCE_START = re.compile(r"(?:\A\s*|[.!?]\s+|\n\s*\n\s*|\n\s*[-*]\s+)\Z")
"""The text before a sentence's first word: nothing, a full stop, a blank line or a bullet."""


class NotebookError(Exception):
    """The lesson or the solution cannot make a notebook (missing lesson, clashing names)."""


def nbgrader_meta(
    grade_id: str, *, grade: bool = False, solution: bool = False, locked: bool = False, points: float | None = None
) -> dict[str, dict[str, Any]]:
    """nbgrader's cell metadata (schema version 3)."""
    meta = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def lesson_cells(lesson: str) -> list[tuple[str, str]]:
    """The lesson as ("markdown" | "code", source) pieces, in order."""
    pieces, at = [], 0
    for block in FENCE.finditer(lesson):
        if text := lesson[at : block.start()].strip():
            pieces.append(("markdown", text))
        pieces.append(("code", block[1].rstrip()))
        at = block.end()
    if text := lesson[at:].strip():
        pieces.append(("markdown", text))
    return pieces


def solution_pieces(source: str, exercises: list[str]) -> tuple[str, list[tuple[str | None, str]]]:
    """The module docstring, and the module after it as (exercise name or None, source) pieces.

    Each top-level statement takes the comments and blank lines above it; consecutive given
    statements (imports, constants, registrations) merge into one piece.
    """
    tree = parse_trusted(source, "the solution")
    lines = source.splitlines()
    body = tree.body
    docstring = ast.get_docstring(tree) or ""
    if docstring:
        start, body = body[0].end_lineno, body[1:]
    else:
        start = 0
    named = {id(fn.node): fn.name for fn in functions(tree) if fn.name in exercises}
    pieces: list[tuple[str | None, str]] = []
    for node in body:
        name = named.get(id(node))
        end = statement_end(node, lines)
        text = "\n".join(lines[start:end]).strip("\n")
        start = end
        if name is None and pieces and pieces[-1][0] is None:
            pieces[-1] = (None, pieces[-1][1] + "\n" + text)
        else:
            pieces.append((name, text))
    return docstring, pieces


def opens_sentence(before: str) -> bool:
    """Whether text that follows `before` opens a sentence."""
    return bool(SENTENCE_START.search(before[-8:] if len(before) > 8 else "\n\n" + before))


def for_notebook(markdown: str, topic: str) -> str:
    """Markdown with its command-line directions told the notebook's way, each replacement
    capitalised where it opens a sentence ("`exercises/prng.py` has ..." -> "The Exercises
    section below has ...")."""
    for pattern, replacement in CLI_TO_NOTEBOOK:
        regex = re.compile(pattern.format(topic=topic), re.M)

        def told(m: re.Match[str], replacement: str = replacement) -> str:
            text = m.expand(replacement)
            if text and opens_sentence(m.string[: m.start()]):
                text = text[0].upper() + text[1:]
            return text

        markdown = regex.sub(told, markdown)
    return markdown


def make_notebook(topic: Topic, lesson: str, solution: str) -> nbformat.NotebookNode:
    """The nbgrader source notebook of `topic`."""
    names = [ex.name for ex in topic.exercises]
    cells = []

    def add(cell, cell_id: str):
        cell.id = cell_id
        cells.append(cell)

    if topic.env:
        env = "".join(f"os.environ[{k!r}] = {v!r}\n" for k, v in topic.env.items())
        add(
            new_code_cell(
                f"# This topic's settings, the grader's too: they must run before JAX starts.\nimport os\n{env}".rstrip(),
                metadata=nbgrader_meta("settings", locked=True),
            ),
            "settings",
        )
    add(new_code_cell(SETUP_CELL.format(topic=topic.name), metadata=nbgrader_meta("setup", locked=True)), "setup")
    for i, (kind, text) in enumerate(lesson_cells(lesson)):
        if kind == "code" and (clash := notebook.top_level_names(text) & set(names)):
            raise NotebookError(f"lesson {topic.name}: a code block defines {sorted(clash)}, an exercise's name")
        if kind == "markdown":
            text = for_notebook(text, topic.name)
        add(new_markdown_cell(text) if kind == "markdown" else new_code_cell(text), f"lesson-{i:02d}")

    docstring, pieces = solution_pieces(solution, names)
    if not pieces or pieces[0][0] is not None:
        raise NotebookError(f"solutions/{topic.name}.py must start with given code (its imports) before its exercises")
    intro = for_notebook(docstring, topic.name)
    add(new_markdown_cell(f"## Exercises\n\n{intro}\n\n{GRADING_NOTE}\n\n{graded.notebook_note(topic)}"), "exercises")
    given = 0
    for name, text in pieces:
        if name is None:
            add(new_code_cell(text, metadata=nbgrader_meta(f"given-{given}", locked=True)), f"given-{given}")
            given += 1
            continue
        ex = topic.exercise(name)
        number = names.index(name) + 1
        rows = "\n".join(f"| `{c.name}` | {c.points:g} | {c.summary} |" for c in ex.checks)
        add(
            new_markdown_cell(
                f"### Exercise {number}: `{name}` ({ex.points:g} points)\n\n"
                f"| check | points | what it checks |\n|---|---|---|\n{rows}"
            ),
            f"{name}-task",
        )
        add(new_code_cell(text, metadata=nbgrader_meta(name, solution=True)), name)
        for check in ex.checks:
            source = GRADE_CELL.format(
                check=check.name,
                points=check.points,
                unit="point" if check.points == 1 else "points",
                summary=check.summary,
                exercise=name,
                topic=topic.name,
            )
            add(
                new_code_cell(
                    source, metadata=nbgrader_meta(f"{name}-{check.name}", grade=True, locked=True, points=check.points)
                ),
                f"{name}-{check.name}",
            )
    missing = set(names) - {n for n, _ in pieces if n}
    if missing:
        raise NotebookError(f"solutions/{topic.name}.py does not define {sorted(missing)} at top level")
    nb = new_notebook(
        cells=cells,
        metadata={
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
    )
    nbformat.validate(nb)
    return nb


def render(topic: Topic, lesson_path: Path, solution: str) -> str:
    """The notebook file's text (what `grade build` writes and `--check` compares)."""
    if not lesson_path.is_file():
        raise NotebookError(f"topic {topic.name} has no lesson at {lesson_path}")
    return nbformat.writes(make_notebook(topic, lesson_path.read_text(), solution)) + "\n"
