"""The sentences the course generates for students: stub headers, the notebook's lesson told
the notebook's way, and the "Graded" lists. Each names only paths a workspace has, reads as
English, and says what to do before the numbers."""

from __future__ import annotations

import ast
import re

import pytest

from helpers.grading import ROOT, SOLUTIONS
from jaxlings.course import build, graded, notebooks
from jaxlings.grading import topics
from jaxlings.student import workspace

PATH = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*[\w-]+\.(?:md|py|ipynb))\b")
WORKSPACE = {"README.md", "lessons/{t}.md", "exercises/{t}.py", "notebooks/{t}.ipynb"}


def stub(name: str) -> str:
    spec = topics.load(name)
    return build.make_stub(graded.insert((SOLUTIONS / f"{name}.py").read_text(), spec), name)


def notebook_markdown(name: str) -> str:
    spec = topics.load(name)
    source = graded.insert((SOLUTIONS / f"{name}.py").read_text(), spec)
    nb = notebooks.make_notebook(spec, (ROOT / "course" / "lessons" / f"{name}.md").read_text(), source)
    return "\n\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


def in_workspace(path: str, topic: str) -> bool:
    """Whether `path` (as a student's file names it) is in a workspace `grade init` lays out."""
    return path in {p.format(t=t) for p in WORKSPACE for t in topics.ORDER} or path == f"{topic}.py"


@pytest.mark.parametrize("name", topics.ORDER)
def test_the_stub_header_is_short_and_points_to_what_a_workspace_has(name):
    text = stub(name)
    header = [line for line in text.splitlines()[:10] if line.startswith("#")]
    assert len(header) <= 4, header
    said = " ".join(line[2:] for line in header)
    assert f"lessons/{name}.md" in said and f"`grade check {name}`" in said and f"`grade hint {name}." in said
    assert "README.md" in said and "NotImplementedError" in said
    assert "solutions/" not in text and "course/lessons" not in text
    dangling = [p for p in PATH.findall(text) if not in_workspace(p, name)]
    assert dangling == [], f"exercises/{name}.py names paths a workspace lacks: {dangling}"


def test_the_readme_of_a_workspace_states_the_rules_the_headers_point_to():
    text = workspace._readme()
    assert "## How you are graded" in text
    flat = " ".join(text.split())
    assert " ".join(graded.JIT_CONVENTION.split()) in flat and "rtol" in flat and "count only once `correct`" in flat


@pytest.mark.parametrize("name", topics.ORDER)
def test_the_notebook_tells_the_lesson_the_notebooks_way_in_sentences(name):
    text = notebook_markdown(name)
    assert "course/lessons" not in text and "Lesson: " not in text
    assert "the answer cells below (the functions" not in text and f"`exercises/{name}.py`" not in text
    for replaced in ("the Exercises section below", "the grade cells", "the lesson above"):
        opens = re.search(rf"(?:\A|[.!?]\s+|\n\s*\n|\n\s*[-*]\s+){re.escape(replaced)}", text)
        assert opens is None, f"a sentence opens in lower case: {text[opens.start() : opens.end() + 40]!r}"


def test_your_turn_reads_as_a_sentence():
    text = notebook_markdown("prng")
    assert "The Exercises section below has four functions: `derive_keys`" in text
    assert 'stuck? `jaxlings.hint("dropout")` in a cell of your own.' in text
    assert notebooks.for_notebook("In `exercises/t.py`:", "t") == "In the Exercises section below:"
    assert (
        notebooks.for_notebook("x.\n\n`exercises/t.py` builds one", "t")
        == "x.\n\nThe Exercises section below builds one"
    )


ACTIONS = ("make ", "keep ", "be ", "use ", "compile ", "lay out ", "train ", "return ")


@pytest.mark.parametrize("name", topics.ORDER)
def test_graded_lines_say_what_to_do_and_keep_the_numbers_for_the_last_line(name):
    spec = topics.load(name)
    funcs = {
        f.name: f for f in ast.parse((SOLUTIONS / f"{name}.py").read_text()).body if isinstance(f, ast.FunctionDef)
    }
    for ex in spec.exercises:
        fn = funcs[ex.name]
        found, notes = graded.described(ex, graded.parameters(fn), spec, decorated=bool(fn.decorator_list))
        for check, _, text in found:
            assert text.startswith(ACTIONS), f"{name}.{ex.name}:{check} does not say what to do: {text[:60]!r}"
            assert not re.search(r"\brtol\b|x\d+(\.\d+)? \+ \d|full points up to", text), (name, ex.name, check, text)
            for marker in re.findall(r"[⁰¹²³⁴⁵⁶⁷⁸⁹]+", text):
                assert marker in {graded.superscript(i) for i in range(1, len(notes) + 1)}
        lines = graded.block(ex, graded.parameters(fn), decorated=bool(fn.decorator_list))
        if notes:
            tail = " ".join(line.strip() for line in lines if not line.startswith(("Graded", "  - ", "    ")))
            assert tail.startswith("¹ ") and f"{graded.superscript(len(notes))} " in tail, lines


def test_a_notebooks_grading_note_names_the_topics_own_checks():
    """A notebook changes only with its own topic's checks: its note names those that wait for
    `correct` among them, not the course's."""
    prng, sharding = (graded.notebook_note(topics.load(name)) for name in ("prng", "sharding"))
    assert "`jit` and `speed` count only once `correct` passes" in prng and "`sharding`" not in prng
    assert "`sharding` count only once `correct` passes" in sharding and "`speed`" not in sharding


def test_the_readmes_topic_table_lists_the_specs_topics_and_exercises_in_order():
    rows = [line.split("|") for line in (ROOT / "README.md").read_text().splitlines() if line.startswith("| `")]
    table = {row[1].strip().strip("`"): re.findall(r"`(\w+)`", row[3]) for row in rows}
    assert list(table) == list(topics.ORDER)
    for name in topics.ORDER:
        assert table[name] == [ex.name for ex in topics.load(name).exercises], name


def test_the_coverage_map_names_only_exercises_that_exist_and_every_exercise():
    text = (ROOT / "docs" / "coverage.md").read_text()
    exercises = {f"{name}.{ex.name}" for name in topics.ORDER for ex in topics.load(name).exercises}
    named = set(re.findall(rf"`((?:{'|'.join(topics.ORDER)})\.\w+)`", text))
    assert named - exercises == set(), "docs/coverage.md names exercises no spec has"
    assert exercises - named == set(), "exercises docs/coverage.md does not place"
