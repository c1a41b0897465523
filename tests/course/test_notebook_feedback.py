"""What a notebook's grade cell shows: one HTML box per check (`jaxlings.student.boxes`), with the CLI's
line as its plain-text twin, run in a real kernel and rendered in a real browser."""

from __future__ import annotations

import html
from pathlib import Path

import nbformat
import pytest

from helpers.grading import ROOT, SOLUTIONS
from helpers.service import headless_chromium
from jaxlings.course import graded, notebooks
from jaxlings.grading import topics
from jaxlings.grading.results import TestResult
from jaxlings.student import boxes, notebook

SCREENSHOT = ROOT / "docs" / "img" / "notebook-feedback.png"


def result(name: str, score: float, points: float, message: str, **data) -> TestResult:
    """One test as the engine reports it: passed only with the message "passed" (an advisory
    check that found something is "failed" at 0/0, as `TestResult.of` makes it)."""
    status = "passed" if message == "passed" else "failed"
    return TestResult(name, score, points, status, message, "visible", name.replace(":", ".").split("."), data)


KINDS = {
    "pass": result("at_updates.histogram:correct", 2, 2, "passed"),
    "partial": result("at_updates.histogram:speed", 1.2, 2, "x2.1 the reference's time"),
    "fail": result("at_updates.mask_fill:jit", 0, 2, "`jax.jit` fails: NonConcreteBooleanIndexError"),
    "pending": result("at_updates.histogram:speed", 0, 2, "judged on submission: your time 3.1 ms", pending=True),
    "advice": result("prng.dropout:key_reuse", 0, 0, "the key `key` is used twice (line 7)"),
    "waits": result("at_updates.scatter_ops:jit", 0, 1, "not judged until the function is correct", waits=True),
}


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_verdict_has_its_own_box_and_the_clis_line(kind):
    test = KINDS[kind]
    bundle = boxes.bundle(test, "public")
    assert f'class="jaxlings-check jaxlings-{kind}"' in bundle["text/html"]
    said = test.output.removeprefix(boxes.PENDING_PREFIX)  # a pending box's label says that part
    assert html.escape(said, quote=False).split("`")[0] in bundle["text/html"]
    assert bundle["text/plain"].endswith(f": {test.output}") and test.name in bundle["text/plain"]
    assert "break-all" not in bundle["text/html"] and "overflow-wrap:break-word" in bundle["text/html"]


def test_a_failure_reads_as_before_in_plain_text_and_advice_is_not_styled_as_a_pass():
    assert boxes.plain(KINDS["fail"], "public") == (
        "FAILED at_updates.mask_fill:jit [public cases] 0/2: `jax.jit` fails: NonConcreteBooleanIndexError"
    )
    assert boxes.plain(KINDS["pass"], "hidden") == "at_updates.histogram:correct [hidden cases] 2/2: passed"
    styles = {boxes.STYLES[k].band for k in KINDS}
    assert len(styles) == len(KINDS), "each kind of verdict has a colour of its own"


def test_a_message_names_the_notebooks_hint_not_the_shells():
    told = notebook.for_notebook("not implemented yet (stuck? run `grade hint prng.dropout`)")
    assert told == 'not implemented yet (stuck? `jaxlings.hint("dropout")`)'


@pytest.mark.parametrize("name", ["prng", "sharding"])
def test_the_setup_cell_runs_before_the_lesson_so_a_hint_works_from_the_start(name):
    spec = topics.load(name)
    source = graded.insert((SOLUTIONS / f"{name}.py").read_text(), spec)
    nb = notebooks.make_notebook(spec, (ROOT / "course" / "lessons" / f"{name}.md").read_text(), source)
    code = [c for c in nb.cells if c.cell_type == "code"]
    first = code[1] if spec.env else code[0]  # after the settings that must run before JAX starts
    assert first.id == "setup" and f"jaxlings = grader({name!r})" in first.source
    hint_at = next(i for i, c in enumerate(nb.cells) if 'jaxlings.hint("' in c.source and c.cell_type == "markdown")
    assert nb.cells.index(first) < hint_at


def _notebook() -> nbformat.NotebookNode:
    """A small notebook as a student runs it: the setup cell, a hint asked before any given code,
    a stub (scatter_ops) and a solution (histogram) of at_updates, and prng's dropout reusing
    its key, each followed by its grade cells."""
    at_updates = topics.load("at_updates")
    cells = [notebooks.SETUP_CELL.format(topic="at_updates"), 'jaxlings.hint("histogram")']
    cells += ["import jax\nimport jax.numpy as jnp"]
    cells += ['def scatter_ops(x, idx, vals):\n    raise NotImplementedError("scatter_ops: your code here")']
    cells += [grade_cell("at_updates", "scatter_ops", c.name) for c in at_updates.exercise("scatter_ops").checks]
    solution = (SOLUTIONS / "at_updates.py").read_text()
    cells += [_function(solution, "histogram")]
    cells += [grade_cell("at_updates", "histogram", c.name) for c in at_updates.exercise("histogram").checks]
    cells += [
        "def dropout(key, x, rate):\n"
        "    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)\n"
        "    noise = jax.random.normal(key, x.shape)  # the same key again\n"
        "    return jnp.where(keep, x / (1.0 - rate), 0.0) + 0 * noise"
    ]
    cells += [grade_cell("prng", "dropout", "key_reuse")]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def grade_cell(topic: str, exercise: str, check: str) -> str:
    return f'from jaxlings.student.notebook import grader\ngrader("{topic}").verdict("{exercise}", "{check}", "public")'


def _function(source: str, name: str) -> str:
    """One function of a solution module, its solution markers dropped."""
    lines = source.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {name}("))
    end = next((i for i in range(start + 1, len(lines)) if lines[i] and not lines[i][0].isspace()), len(lines))
    return "\n".join(line for line in lines[start:end] if "SOLUTION" not in line).rstrip()


@pytest.mark.slow  # grades three exercises in a real kernel (workers and all): about a minute on 2 cores
def test_grade_cells_show_html_boxes_in_a_real_kernel_and_browser(tmp_path):
    from nbclient import NotebookClient

    nb = _notebook()
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    shown = [o for c in nb.cells for o in c.outputs if o.output_type == "display_data"]
    assert not [o for c in nb.cells for o in c.outputs if o.output_type == "error" or o.get("name") == "stderr"]
    kinds = [o.data["text/html"].split('class="jaxlings-check jaxlings-')[1].split('"')[0] for o in shown]
    assert kinds == ["hint", "fail", "waits", "pass", "pass", "pending", "advice"], kinds
    plain = [o.data["text/plain"] for o in shown]
    assert plain[2].endswith("not implemented yet: see `correct` above")  # one cause, said once
    assert plain[0].startswith("HINT at_updates.histogram hint 1/")
    assert plain[1].startswith("FAILED at_updates.scatter_ops:correct [public cases] 0/2: not implemented yet")
    assert 'jaxlings.hint("scatter_ops")' in plain[1] and "grade hint" not in plain[1]
    results = [
        next((o.data["text/plain"] for o in c.outputs if o.output_type == "execute_result"), None) for c in nb.cells
    ]
    assert "0.0" in results and "2.0" in results  # nbgrader's partial credit: 0 for a failure

    page = tmp_path / "feedback.html"
    page.write_text(
        '<html><body style="margin:16px;width:860px;background:#fff">'
        + "".join(o.data["text/html"] for o in shown)
        + "</body></html>"
    )
    with headless_chromium() as browser:
        tab = browser.new_page(viewport={"width": 900, "height": 700})
        tab.goto(page.as_uri())
        for kind in ("hint", "fail", "waits", "pass", "pending", "advice"):
            assert tab.locator(f".jaxlings-check.jaxlings-{kind}").count() >= 1, kind
        bands = tab.evaluate(
            "() => [...document.querySelectorAll('.jaxlings-check')].map(e => getComputedStyle(e).borderLeftColor)"
        )
        assert len(set(bands)) == 6  # hint, fail, waits, pass, pending, advice: each distinct
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(SCREENSHOT), full_page=True)
    png = Path(SCREENSHOT).read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 20_000, "the screenshot is blank or tiny"


def test_a_hint_without_a_name_is_for_the_first_exercise_not_passed_yet():
    assert notebook.NotebookGrader("at_updates").first_unfinished() == "scatter_ops"
