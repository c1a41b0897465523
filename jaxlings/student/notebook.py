"""Grading from inside a notebook: what the grade cells of the nbgrader notebooks call.

A topic's notebook (see `jaxlings.course.notebooks`) has one answer cell per exercise and,
after it, one locked grade cell per check. A grade cell asks the kernel's `NotebookGrader` of
its topic for one verdict (it imports what it needs itself, so it works even when run before
the notebook's setup cell):

    from jaxlings.student.notebook import grader
    grader("at_updates").verdict("histogram", "correct", mode)

The grader rebuilds the student's module from what the kernel has run (the topic's stub, with
each exercise's definition replaced by the latest executed cell that defines it), grades the
exercise with the same engine as `grade grade` (workers in their own processes, the
reference never in the kernel), caches the result for that source, and reports the one check
as a box (`jaxlings.student.boxes`: HTML, with the CLI's line as its `text/plain`), then returns the
points earned as a number: nbgrader reads the number a grade cell evaluates to as its partial
credit (0 for a check that earned nothing; nothing at all for one judged on submission).

`mode` is "public" (the fixed cases of `grade check`, replayed from the public expectations:
no reference solution on the student's server) in the released notebook; the hidden block of
the grade cell, which nbgrader strips from the student's copy and restores when it autogrades,
switches it to "hidden" (fresh cases against the live reference, as `grade grade`). Messages
name the student's cell ("cell In [7], line 3"), not the rebuilt module's lines, and the
notebook's way to ask for a hint (`jaxlings.hint("histogram")`, the notebook's `grade hint`),
not the shell's. The notebook's first code cell (after any settings) makes `jaxlings`, so a
hint works from the lesson on; `jaxlings.hint()` with no name gives one for the first
exercise not passed yet.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import tempfile
from functools import cache
from pathlib import Path

from jaxlings import public
from jaxlings.grading import engine, paths, topics
from jaxlings.grading.results import Result, TestResult
from jaxlings.grading.source import defined_names, functions, parse, statement_end
from jaxlings.isolation import bwrap_available
from jaxlings.student import boxes, hints, progress

MODES = ("public", "hidden")

SHELL_HINT = re.compile(r"(?:run )?`grade hint (?:\w+\.)?(\w+)`")
"""The CLI's way to ask for a hint, in a message ("stuck? run `grade hint prng.dropout`")."""


def for_notebook(message: str) -> str:
    """A grader message told the notebook's way: `jaxlings.hint("dropout")`, not `grade hint`."""
    return SHELL_HINT.sub(lambda m: f'`jaxlings.hint("{m[1]}")`', message)


def told_once(test: TestResult, tests: list[TestResult]) -> TestResult:
    """One cause, once: where the exercise is one row (`progress.rows`: a stub), its first check
    says why and each later check's box points to it instead of saying it again."""
    rows = progress.rows(tests)
    if len(rows) == 1 and rows[0].check is None and test is not tests[0]:
        return dataclasses.replace(test, output=f"not implemented yet: see `{tests[0].check}` above")
    return test


def show(bundle: dict[str, str]) -> None:
    """Display a MIME bundle (HTML and its plain twin) as the cell's output."""
    from IPython.display import display

    display(bundle, raw=True)


def top_level_names(source: str) -> set[str]:
    """Names a cell's source binds at module level (defs, classes, assignments); empty if it does not parse."""
    return defined_names(parse(source))


def assemble(stub: str, cells: list[str], exercises: list[str]) -> str:
    """The student's module: `stub` with each exercise's top-level definition replaced by the
    latest cell in `cells` (executed inputs, in order) that defines it.

    A cell that defines several exercises goes in once, at the first of them. An exercise no
    cell defines keeps the stub's definition (which raises NotImplementedError).
    """
    return assemble_with_origins(stub, cells, exercises)[0]


Origin = tuple[int, int] | None
"""Where a line of the assembled module came from: (index of its cell, line in that cell), or
None for a line of the stub."""


def assemble_with_origins(stub: str, cells: list[str], exercises: list[str]) -> tuple[str, list[Origin]]:
    """`assemble`, and each module line's origin (for messages that name the student's cell)."""
    chosen: dict[str, int] = {}
    for index, cell in enumerate(cells):
        for name in top_level_names(cell) & set(exercises):
            chosen[name] = index
    lines: list[tuple[str, Origin]] = [(line, None) for line in stub.splitlines()]
    stub_lines = stub.splitlines()
    edits: list[tuple[int, int, list[tuple[str, Origin]]]] = []
    placed: set[int] = set()
    for fn in functions(parse(stub)):  # in source order, so a shared cell lands at its first exercise
        if fn.name in chosen:
            at = chosen[fn.name]
            body: list[tuple[str, Origin]] = (
                []
                if at in placed
                else [(text, (at, i + 1)) for i, text in enumerate(cells[at].rstrip("\n").splitlines())]
            )
            edits.append((fn.start - 1, statement_end(fn.node, stub_lines), body))
            placed.add(at)
    for start, end, replacement in reversed(edits):
        lines[start:end] = replacement
    return "\n".join(text for text, _ in lines) + "\n", [origin for _, origin in lines]


LINE = re.compile(r"\bline (\d+)\b")


def in_cells(message: str, origins: list[Origin], numbers: list[int]) -> str:
    """`message` with "line N" of the assembled module told as the student's cell and line
    ("cell In [7], line 3"); `numbers[i]` is the execution count of cell i."""

    def told(m: re.Match[str]) -> str:
        n = int(m[1])
        origin = origins[n - 1] if 0 < n <= len(origins) else None
        if origin is None:
            return f"line {n} of the given code"
        cell, line = origin
        return f"cell In [{numbers[cell]}], line {line}"

    return LINE.sub(told, message)


def executed_cells() -> list[tuple[int, str]]:
    """The inputs the running IPython kernel has executed, oldest first, with their execution
    counts (the numbers Jupyter shows as In [n])."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise RuntimeError("jaxlings' notebook grader runs inside a Jupyter kernel")
    return [(n, cell) for n, cell in enumerate(shell.user_ns.get("In", [])) if n and cell]


class NotebookGrader:
    """Verdicts for one topic's grade cells.

    Each exercise is graded on its own (as `grade grade --topics TOPIC.EXERCISE` would), once
    per distinct module source and mode: a grade cell right after exercise 1's answer must not
    wait for exercises the student has not reached, and the cells of one exercise share one
    grading.
    """

    def __init__(self, topic: str):
        self.topic = topics.load_public(topic)
        self._results: dict[tuple[str, str, str], Result] = {}

    def module_source(self) -> tuple[str, list[Origin], list[int]]:
        """The student's module as the kernel has it now, each line's origin, and the cells'
        execution counts."""
        stub = (paths.exercises_dir() / f"{self.topic.name}.py").read_text()
        numbers, cells = zip(*executed_cells()) if executed_cells() else ((), ())
        source, origins = assemble_with_origins(stub, list(cells), [ex.name for ex in self.topic.exercises])
        return source, origins, list(numbers)

    def hint(self, exercise: str | None = None, level: int | None = None) -> None:
        """Show the next hint for `exercise` (as `grade hint`; `level` jumps to one). `exercise`
        may be "topic.exercise" too; without it, the first exercise not passed yet in this kernel."""
        name = (exercise or self.first_unfinished()).removeprefix(f"{self.topic.name}.")
        ex = self.topic.exercise(name)
        lvl, text = hints.next_hint(Path.cwd(), self.topic.name, ex, level)
        more = " (ask again for the next one)" if lvl < len(ex.hints) else ""
        show(boxes.note_bundle("hint", f"{self.topic.name}.{name} hint {lvl}/{len(ex.hints)}", f"{text}{more}"))

    def first_unfinished(self) -> str:
        """The first exercise with no result in this kernel where every pointed check passed."""
        known = progress.statuses(t for r in self._results.values() for t in r.tests)
        first = progress.next_unfinished([self.topic], known)
        return first[1] if first else self.topic.exercises[0].name

    def result(self, source: str, exercise: str, mode: str) -> Result:
        """One exercise's result for this module source and mode (graded on first use)."""
        key = (hashlib.sha256(source.encode()).hexdigest(), exercise, mode)
        if key not in self._results:
            hidden = mode == "hidden"
            [spec] = topics.resolve([f"{self.topic.name}.{exercise}"], public=not hidden)
            with tempfile.TemporaryDirectory(prefix="jaxlings-nb-") as tmp:
                (Path(tmp) / f"{self.topic.name}.py").write_text(source)
                if hidden:  # nbgrader autograde, on the course's grader: the live reference
                    self._results[key] = engine.grade(
                        Path(tmp), [spec], reference_dir=paths.solutions_dir(), isolate=bwrap_available()
                    )
                else:  # the student's copy: the public expectations, no reference needed
                    self._results[key] = engine.grade(Path(tmp), [spec], public=True, answers=public.replay)
        return self._results[key]

    def test(self, exercise: str, check: str, mode: str = "public") -> TestResult:
        """The graded test `<topic>.<exercise>:<check>` of the kernel's current module."""
        if mode not in MODES:
            raise ValueError(f"mode is one of {MODES}, not {mode!r}")
        self.topic.exercise(exercise)
        name = f"{self.topic.name}.{exercise}:{check}"
        source, origins, numbers = self.module_source()
        tests = self.result(source, exercise, mode).tests
        for test in tests:
            if test.name == name:
                test.output = for_notebook(in_cells(test.output, origins, numbers))
                return told_once(test, [t for t in tests if t.exercise == exercise])
        raise KeyError(f"{self.topic.name}.{exercise} has no check {check!r}")

    def verdict(self, exercise: str, check: str, mode: str = "public") -> float | None:
        """Report one check: display its box and return the points earned (nbgrader's partial
        credit: 0 when it earned none), or None for a check judged on submission (nbgrader then
        reads the cell as passed; `grade check` shows such a check as pending too). No
        exception: a traceback would show the grade cell's source, hidden block included, in
        the students' feedback."""
        try:
            test = self.test(exercise, check, mode)
        except FileNotFoundError as exc:  # hidden grading where the reference solutions are not
            show(boxes.note_bundle("fail", f"{self.topic.name}.{exercise}:{check}", f"NOT GRADED: {exc}"))
            return 0.0
        show(boxes.bundle(test, mode))
        if test.pending:
            return None
        return test.score


@cache
def grader(topic: str) -> NotebookGrader:
    """The kernel's one grader of `topic` (what every grade cell and the setup cell use)."""
    return NotebookGrader(topic)
