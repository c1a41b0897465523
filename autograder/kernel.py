"""Grading from inside a notebook: what the grade cells of the nbgrader notebooks call.

A topic's notebook (see `autograder.notebooks`) has one answer cell per exercise and, after
it, one locked grade cell per check. A grade cell asks a `NotebookGrader` for one verdict:

    jaxlings.verdict("histogram", "correct", mode)

The grader rebuilds the student's module from what the kernel has run (the topic's stub, with
each exercise's definition replaced by the latest executed cell that defines it), grades the
exercise with the same engine as `grade grade` (workers in their own processes, the
reference never in the kernel), caches the result for that source, and reports the one check:
full or partial points are returned as a number (nbgrader reads a number a grade cell
evaluates to as its partial credit); no points write the grader's message to stderr, which
nbgrader scores 0.

`mode` is "public" (the fixed cases of `grade check`) in the released notebook; the hidden
block of the grade cell, which nbgrader strips from the student's copy and restores when it
autogrades, switches it to "hidden" (fresh cases, as `grade grade`).
"""

from __future__ import annotations

import ast
import hashlib
import sys
import tempfile
from pathlib import Path

from autograder import engine, paths, topics
from autograder.results import Result, TestResult
from autograder.sandbox import bwrap_available

MODES = ("public", "hidden")


def top_level_names(source: str) -> set[str]:
    """Names a cell's source binds at module level (defs, classes, assignments); empty if it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def statement_end(node: ast.stmt, lines: list[str]) -> int:
    """The line after `node`'s last, counting the indented comments that trail a block (the
    AST ends a def at its last statement, before a closing `### END SOLUTION`)."""
    end = node.end_lineno
    while end < len(lines) and lines[end][:1] in (" ", "\t") and lines[end].strip():
        end += 1
    return end


def assemble(stub: str, cells: list[str], exercises: list[str]) -> str:
    """The student's module: `stub` with each exercise's top-level definition replaced by the
    latest cell in `cells` (executed inputs, in order) that defines it.

    A cell that defines several exercises goes in once, at the first of them. An exercise no
    cell defines keeps the stub's definition (which raises NotImplementedError).
    """
    chosen: dict[str, int] = {}
    for index, cell in enumerate(cells):
        for name in top_level_names(cell) & set(exercises):
            chosen[name] = index
    lines = stub.splitlines()
    edits: list[tuple[int, int, list[str]]] = []
    placed: set[int] = set()
    for node in ast.parse(stub).body:  # in source order, so a shared cell lands at its first exercise
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in chosen:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
            cell = chosen[node.name]
            edits.append((start, statement_end(node, lines),
                          [] if cell in placed else cells[cell].rstrip("\n").splitlines()))
            placed.add(cell)
    for start, end, replacement in reversed(edits):
        lines[start:end] = replacement
    return "\n".join(lines) + "\n"


def executed_cells() -> list[str]:
    """The inputs the running IPython kernel has executed, oldest first."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise RuntimeError("jaxlings' notebook grader runs inside a Jupyter kernel")
    return [cell for cell in shell.user_ns.get("In", [])[1:] if cell]


class NotebookGrader:
    """Verdicts for one topic's grade cells.

    Each exercise is graded on its own (as `grade grade --topics TOPIC.EXERCISE` would), once
    per distinct module source and mode: a grade cell right after exercise 1's answer must not
    wait for exercises the student has not reached, and the cells of one exercise share one
    grading.
    """

    def __init__(self, topic: str):
        self.topic = topics.load(topic)
        self._results: dict[tuple[str, str, str], Result] = {}

    def module_source(self) -> str:
        """The student's module as the kernel has it now."""
        stub = (paths.exercises_dir() / f"{self.topic.name}.py").read_text()
        return assemble(stub, executed_cells(), [ex.name for ex in self.topic.exercises])

    def result(self, source: str, exercise: str, mode: str) -> Result:
        """One exercise's result for this module source and mode (graded on first use)."""
        key = (hashlib.sha256(source.encode()).hexdigest(), exercise, mode)
        if key not in self._results:
            [spec] = topics.resolve([f"{self.topic.name}.{exercise}"])
            with tempfile.TemporaryDirectory(prefix="jaxlings-nb-") as tmp:
                (Path(tmp) / f"{self.topic.name}.py").write_text(source)
                hidden = mode == "hidden"
                self._results[key] = engine.grade(Path(tmp), [spec], reference_dir=paths.solutions_dir(),
                                                  public=not hidden, isolate=hidden and bwrap_available())
        return self._results[key]

    def test(self, exercise: str, check: str, mode: str = "public") -> TestResult:
        """The graded test `<topic>.<exercise>:<check>` of the kernel's current module."""
        if mode not in MODES:
            raise ValueError(f"mode is one of {MODES}, not {mode!r}")
        self.topic.exercise(exercise)
        name = f"{self.topic.name}.{exercise}:{check}"
        for test in self.result(self.module_source(), exercise, mode).tests:
            if test.name == name:
                return test
        raise KeyError(f"{self.topic.name}.{exercise} has no check {check!r}")

    def verdict(self, exercise: str, check: str, mode: str = "public") -> float | None:
        """Report one check: print its message and return the points earned (nbgrader's
        partial credit), or, when it earned none, write the message to stderr and return None
        (nbgrader scores a grade cell with stderr output 0). No exception: a traceback would
        show the grade cell's source, hidden block included, in the students' feedback."""
        try:
            test = self.test(exercise, check, mode)
        except FileNotFoundError as exc:  # no reference solutions on this server
            print(f"NOT GRADED {self.topic.name}.{exercise}:{check}: {exc}", file=sys.stderr)
            return None
        line = f"{test.name} [{mode} cases] {test.score:g}/{test.max_score:g}: {test.output}"
        if test.max_score > 0 and test.score <= 0:
            print(f"FAILED {line}", file=sys.stderr)
            return None
        print(line)
        return test.score
