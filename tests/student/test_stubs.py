"""Stubs are read from the submitted file (`jaxlings.grading.stubs`) and graded with no call and no
reference work: the reader's rules, its claim checked against Python running the stubs, and the
engine's verdicts on all-stub, half-done and stub-faking submissions."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from helpers.grading import EXERCISES, SOLUTIONS, grade_dir, short_of_full_marks, write_submission
from jaxlings.course.build import make_stub
from jaxlings.grading import engine, stubs, topics
from jaxlings.grading.checks import KINDS

ALL = topics.resolve(None)


def find(source: str, names=("f",)) -> dict[str, str]:
    return stubs.find(textwrap.dedent(source), list(names))


def test_every_generated_stub_reads_as_one_and_no_solution_does():
    for topic in ALL:
        names = [ex.name for ex in topic.exercises]
        assert set(find((EXERCISES / f"{topic.name}.py").read_text(), names)) == set(names), topic.name
        assert find((SOLUTIONS / f"{topic.name}.py").read_text(), names) == {}, topic.name


def test_a_partly_done_module_reads_as_stubs_exactly_where_it_is_not_done():
    for topic in ALL:
        names = [ex.name for ex in topic.exercises]
        partly = make_stub((SOLUTIONS / f"{topic.name}.py").read_text(), topic.name, names[::2])
        assert set(find(partly, names)) == set(names[1::2]), topic.name


@pytest.mark.parametrize(
    "source, message",
    [
        ('def f(x):\n    """Doc."""\n    raise NotImplementedError("f: your code here")\n', "f: your code here"),
        ("def f(x):\n    raise NotImplementedError\n", ""),
        ("def f(x):\n    raise NotImplementedError()\n", ""),
        ('import jax\n\n@jax.jit\ndef f(x):\n    raise NotImplementedError("later")\n', "later"),
        ('import jax\n\n@jax.jit(donate_argnums=(0,))\ndef f(x):\n    raise NotImplementedError("x")\n', "x"),
    ],
)
def test_a_stub_is_read_with_its_message(source, message):
    assert find(source) == {"f": message}


@pytest.mark.parametrize(
    "source",
    [
        "def f(x):\n    y = 1\n    raise NotImplementedError\n",  # code before the raise
        "def f(x):\n    raise NotImplementedError from None\n",
        'def f(x):\n    raise NotImplementedError(f"{x}")\n',  # message not constant
        "def f(x):\n    raise NotImplementedError('a', 'b')\n",
        "def f(x):\n    raise ValueError('your code here')\n",
        "import functools\n\n@functools.cache\ndef f(x):\n    raise NotImplementedError\n",
        "import jax\nimport jax.numpy\n\n@jax.jit\ndef f(x):\n    raise NotImplementedError\n",  # `jax` bound twice
        "from jax import jit\n\n@jit\ndef f(x):\n    raise NotImplementedError\n",
        "def f(x):\n    raise NotImplementedError\n\nf = abs\n",  # rebound
        "def f(x):\n    raise NotImplementedError\n\ndef g():\n    global f\n",
        "def f(x):\n    raise NotImplementedError\n\nfrom math import *\n",  # may rebind anything
        "NotImplementedError = ValueError\n\ndef f(x):\n    raise NotImplementedError\n",
        "def f(x):\n    raise NotImplementedError\n\nimport os as f\n",
        "async def f(x):\n    raise NotImplementedError\n",
        "class C:\n    def f(self):\n        raise NotImplementedError\n",
        "def f(x):\n    raise NotImplementedError\n\ndef g(\n",  # does not parse
    ],
)
def test_anything_else_is_graded_by_calling_it(source):
    assert find(source) == {}


def test_the_readers_claim_holds_when_python_runs_the_stubs():
    """Every function read as a stub in `exercises/` raises NotImplementedError with the message
    read, when imported and called (under `jax.jit` too): the reader says what a call would."""
    script = textwrap.dedent("""
        import importlib.util, inspect, json, sys
        import jax
        out = {}
        for path, names in json.loads(sys.argv[1]).items():
            spec = importlib.util.spec_from_file_location("m_" + path.split("/")[-1][:-3], path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            for name in names:
                fn = getattr(module, name)
                args = [1.0] * len(inspect.signature(fn).parameters)
                for call in (fn, jax.jit(fn)):
                    try:
                        call(*args)
                        raised = None
                    except NotImplementedError as exc:
                        raised = str(exc)
                    except Exception as exc:
                        raised = type(exc).__name__
                    out.setdefault(name, []).append(raised)
        print(json.dumps(out))
    """)
    read = {
        str(EXERCISES / f"{t.name}.py"): find((EXERCISES / f"{t.name}.py").read_text(), [ex.name for ex in t.exercises])
        for t in ALL
        if t.name != "ising"
    }  # NetKet's import alone is seconds; its stubs are plain
    run = subprocess.run(
        [sys.executable, "-c", script, json.dumps({p: list(r) for p, r in read.items()})],
        capture_output=True,
        text=True,
        timeout=300,
        env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stderr[-2000:]
    raised = json.loads(run.stdout.strip().splitlines()[-1])
    assert sum(map(len, read.values())) == len(raised) > 40
    for found in read.values():
        for name, message in found.items():
            assert raised[name] == [message, message], (name, raised[name])


# -- the engine ---------------------------------------------------------------------------------


@pytest.mark.slow  # graded_stubs grades every topic: ~15 s on a 2-core CPU
def test_an_all_stub_topic_starts_no_reference_and_makes_no_call(graded_stubs):
    for topic in ALL:
        entry = graded_stubs.extra_data["topics"][topic.name]
        assert entry["platform"] == {}, topic.name  # the trusted worker never started
        assert all(checks == {} for checks in entry["timings"]["exercises"].values()), topic.name
    assert all(t.extra_data.get("stub") for t in graded_stubs.tests)


def half_done(folder, topic: str, solved: list[str]):
    """`topic`'s stubs with the functions `solved` as the reference solution has them."""
    return write_submission(folder, {topic: make_stub((SOLUTIONS / f"{topic}.py").read_text(), topic, solved)})


@pytest.mark.slow  # grades one topic: ~10 s
def test_a_half_done_topic_grades_its_work_and_skips_its_stubs(tmp_path):
    done = ["scatter_ops", "histogram"]
    result = grade_dir(half_done(tmp_path / "sub", "at_updates", done), ["at_updates"])
    solved = [t for t in result.tests if t.exercise in done]
    stubbed = [t for t in result.tests if t.exercise not in done]
    assert solved and stubbed
    assert short_of_full_marks(result) == {t.name for t in stubbed}
    assert not any(t.extra_data.get("stub") for t in solved)
    for t in stubbed:
        assert t.score == 0 and t.extra_data["stub"]
        expected = (
            "not judged until the function is correct"
            if "correct" in KINDS[t.check].requires
            else f"not implemented yet (stuck? run `grade hint at_updates.{t.exercise}`)"
        )
        assert t.output == expected
    timings = result.extra_data["topics"]["at_updates"]["timings"]["exercises"]
    assert "cases" in timings["scatter_ops"] and timings["mask_fill"] == {}


@pytest.mark.slow  # grades one topic: ~10 s
def test_a_stub_made_right_at_import_still_scores_nothing(tmp_path):
    """Hostile: the file shows a stub, and the module swaps in the reference's function when it
    is imported. The grader goes by the file it was given and never calls the stub, so the
    swap earns nothing: looking like a stub can only cost points."""
    solution = (SOLUTIONS / "at_updates.py").read_text().replace("def histogram(", "def _real_histogram(")
    source = solution + textwrap.dedent("""

        def histogram(x, nbins):
            raise NotImplementedError("histogram: your code here")


        globals()["histogram"] = _real_histogram
    """)
    assert stubs.find(source, ["histogram"]) == {"histogram": "histogram: your code here"}
    result = grade_dir(write_submission(tmp_path / "sub", {"at_updates": source}), ["at_updates"])
    assert {t.name for t in result.tests if t.exercise == "histogram"} <= short_of_full_marks(result)
    assert all(t.extra_data.get("stub") for t in result.tests if t.exercise == "histogram")
    assert not any(t.extra_data.get("stub") for t in result.tests if t.exercise != "histogram")


def test_a_stub_weighs_nothing_in_the_order_topics_start_in():
    """Side by side, the longest topics start first; a topic's stubs do not make it long."""
    ising = topics.load("ising")
    assert engine.estimated_cost(ising, EXERCISES / "ising.py") == 0
    assert engine.estimated_cost(ising, SOLUTIONS / "ising.py") == engine.estimated_cost(ising) > 15
