"""The generated nbgrader notebooks, and how a notebook kernel rebuilds a student's module."""

from __future__ import annotations

import ast

import nbformat
import pytest

from helpers.grading import ROOT, SOLUTIONS
from jaxlings.course import build, graded, notebooks
from jaxlings.grading import topics
from jaxlings.student import notebook

STUB = '''import jax


def f(x):
    """Doc."""
    raise NotImplementedError("f: your code here")


@jax.jit
def g(x):
    raise NotImplementedError("g: your code here")
    # a trailing comment of g


CONSTANT = 3
'''


def test_assemble_takes_the_latest_cell_that_defines_each_exercise():
    cells = ["def f(x):\n    return 1", "print('trying')", "def f(x):\n    return 2", "def g(x): return f(x)"]
    module = notebook.assemble(STUB, cells, ["f", "g"])
    namespace: dict = {}
    exec(compile(module, "m", "exec"), namespace)
    assert namespace["f"](0) == 2 and namespace["g"](0) == 2 and namespace["CONSTANT"] == 3
    assert "@jax.jit" not in module and "trailing comment" not in module and "print('trying')" not in module


def test_assemble_keeps_the_stub_for_exercises_never_run_and_ignores_broken_cells():
    module = notebook.assemble(STUB, ["def g(:", "helper = 1\ndef g(x):\n    return helper"], ["f", "g"])
    assert 'raise NotImplementedError("f: your code here")' in module
    assert "helper = 1" in module and "def g(:" not in module
    ast.parse(module)


def test_assemble_places_a_cell_defining_two_exercises_once():
    module = notebook.assemble(STUB, ["def f(x):\n    return 1\n\ndef g(x):\n    return 2"], ["f", "g"])
    assert module.count("def f(") == 1 and module.count("def g(") == 1
    assert module.index("def f(") < module.index("CONSTANT = 3")


@pytest.mark.parametrize("name", topics.ORDER)
def test_notebook_has_an_answer_cell_and_a_grade_cell_per_check(name):
    spec = topics.load(name)
    nb = nbformat.read(ROOT / "course" / "source" / name / f"{name}.ipynb", as_version=4)
    nbformat.validate(nb)
    meta = {c.id: c.metadata.get("nbgrader") for c in nb.cells}
    lesson = [c.source for c in nb.cells if c.id.startswith("lesson-") and c.cell_type == "code"]
    assert lesson == [
        b.rstrip() for b in notebooks.FENCE.findall((ROOT / "course" / "lessons" / f"{name}.md").read_text())
    ]
    graded = {}
    for ex in spec.exercises:
        answer = next(c for c in nb.cells if c.id == ex.name)
        assert meta[ex.name]["solution"] and not meta[ex.name]["grade"] and not meta[ex.name]["locked"]
        assert "### BEGIN SOLUTION" in answer.source and f"def {ex.name}(" in answer.source
        for check, points in ((c.name, c.points) for c in ex.checks):
            cell = next(c for c in nb.cells if c.id == f"{ex.name}-{check}")
            m = meta[cell.id]
            assert m["grade"] and m["locked"] and not m["solution"] and m["points"] == points
            assert (
                "### BEGIN HIDDEN TESTS" in cell.source
                and f'grader("{name}").verdict("{ex.name}", "{check}", mode)' in cell.source
            )
            graded[cell.id] = points
    all_points = sum(m["points"] for m in meta.values() if m and m["grade"])
    assert all_points == sum(graded.values()) == sum(ex.points for ex in spec.exercises)


@pytest.mark.parametrize("name", topics.ORDER)
def test_given_and_answer_cells_rebuild_the_solution_module(name):
    """What the kernel assembles from the notebook's answer cells is the solution itself."""
    spec = topics.load(name)
    nb = nbformat.read(ROOT / "course" / "source" / name / f"{name}.ipynb", as_version=4)
    answers = [c.source for c in nb.cells if (c.metadata.get("nbgrader") or {}).get("solution")]
    stub = (ROOT / "exercises" / f"{name}.py").read_text()
    module = notebook.assemble(stub, answers, [ex.name for ex in spec.exercises])
    solution = graded.insert((SOLUTIONS / f"{name}.py").read_text(), spec)  # with its generated Graded lists
    solution = build.for_workspace(solution)  # and its paths as a workspace has them, as in the stub
    assert ast.dump(ast.parse(module)) == ast.dump(ast.parse(solution))


def test_a_lesson_block_may_not_define_an_exercise(tmp_path):
    spec = topics.load("at_updates")
    lesson = tmp_path / "at_updates.md"
    lesson.write_text("# Lesson\n\n```python\ndef histogram(x):\n    return x\n```\n\nSee `exercises/at_updates.py`.\n")
    with pytest.raises(notebooks.NotebookError, match="histogram"):
        notebooks.render(spec, lesson, (SOLUTIONS / "at_updates.py").read_text())


def test_a_topic_without_a_lesson_is_a_build_error(tmp_path):
    (tmp_path / "course" / "lessons").mkdir(parents=True)  # a course with no lessons in it
    with pytest.raises(build.BuildError, match="no lesson"):
        build.build(SOLUTIONS, tmp_path / "ex", tmp_path / "course", check=True)


def test_messages_name_the_students_cell_not_the_rebuilt_modules_line():
    cells = ["import jax", "def g(x):\n    y = 1\n    raise ValueError(y)"]
    module, origins = notebook.assemble_with_origins(STUB, cells, ["f", "g"])
    line = module.splitlines().index("    raise ValueError(y)") + 1
    told = notebook.in_cells(f"ValueError: 1 (at line {line}: raise ValueError(y))", origins, [3, 7])
    assert told == "ValueError: 1 (at cell In [7], line 3: raise ValueError(y))"
    assert notebook.in_cells("at line 1: x", origins, [3, 7]) == "at line 1 of the given code: x"


@pytest.mark.parametrize("name", topics.ORDER)
def test_notebook_lessons_give_the_notebooks_way_not_shell_commands(name):
    nb = nbformat.read(ROOT / "course" / "source" / name / f"{name}.ipynb", as_version=4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert f"grade check {name}" not in text and "grade hint" not in text and f"`exercises/{name}.py`:" not in text
    assert 'jaxlings.hint("' in text
