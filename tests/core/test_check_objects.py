"""Checks as typed objects (`jaxlings.grading.check`): a spec's mistakes fail when it is built,
with a message naming the check and the field (and, through the topic loader, the topic and the
exercise); the engine orders checks by what they require; a new check is one class."""

from __future__ import annotations

import importlib.util
import textwrap
from dataclasses import dataclass

import numpy as np
import pytest

from helpers.grading import SOLUTIONS, TEST_LIMITS
from jaxlings.grading import engine, topics
from jaxlings.grading.checks import (
    KINDS,
    Check,
    Compiles,
    Correct,
    Grad,
    Jit,
    KeyReuse,
    SpecError,
    Speed,
    Vmap,
    ordered,
    waiting_for,
)
from jaxlings.grading.results import Outcome
from jaxlings.grading.spec import Case, Exercise, Topic

HINTS = ("a nudge", "the API")


def _sample(rng, size):
    return Case((rng.standard_normal(size).astype(np.float32),))


def exercise(*checks: Check, name: str = "double") -> Exercise:
    return Exercise(name=name, sample=_sample, checks=checks, hints=HINTS, sizes=(2,))


def test_a_misspelt_option_fails_naming_the_check_the_option_and_the_close_one():
    with pytest.raises(SpecError, match=r"Grad has no option 'argnum' \(did you mean 'argnums'\?\); its options are"):
        Grad(3, argnum=(0,))


def test_a_missing_option_fails_naming_it():
    with pytest.raises(SpecError, match=r"Compiles: .*max_compiles"):
        Compiles(2, make=lambda rng, n: [])


def test_an_option_of_the_wrong_type_fails_naming_it():
    with pytest.raises(SpecError, match=r"Grad: option 'argnums' must be a tuple, not int 0"):
        Grad(1, argnums=0)
    with pytest.raises(SpecError, match=r"option 'size' entry 'cpu' must be a whole number, not str"):
        Speed(1, size={"cpu": "big"})
    with pytest.raises(SpecError, match="option 'requirements' entry 0 must be"):
        Jit(1, requirements=("no loops",))
    with pytest.raises(SpecError, match="option 'in_axes' entry 1 must be a whole number or None"):
        Vmap(1, in_axes=(0, "batch"))


def test_right_options_build_and_compare_by_value():
    assert Grad(3, argnums=(0, 1)) == Grad(3, argnums=(0, 1)) != Grad(2, argnums=(0, 1))
    assert Vmap(1, in_axes=(0, None)).batch == 5


def test_an_advisory_check_worth_points_fails():
    assert KeyReuse().points == 0
    with pytest.raises(SpecError, match=r"KeyReuse is advisory .* must be worth 0 points, not 1"):
        KeyReuse(1)


def test_an_exercise_refuses_a_check_it_cannot_grade():
    with pytest.raises(SpecError, match="double: the speed check requires correct"):
        exercise(Speed(1, size={"cpu": 8}))
    with pytest.raises(SpecError, match="double: a check is listed twice"):
        exercise(Correct(1), Correct(2))
    with pytest.raises(SpecError, match=r"double: Speed: option 'size' must give the CPU's workload"):
        exercise(Correct(1), Speed(1, size={"gpu": 8}))
    with pytest.raises(SpecError, match="must be a tuple of check objects"):
        Exercise(name="double", sample=_sample, checks={"correct": 1}, hints=HINTS)


def test_an_exercises_fields_are_validated_as_a_checks_options_are():
    """One mechanism (`grading.options`) for both: a mistyped field fails at import, naming it."""
    with pytest.raises(SpecError, match=r"double: option 'rtol' must be a number, not str '1e-5'"):
        Exercise(name="double", sample=_sample, checks=(Correct(1),), hints=HINTS, rtol="1e-5")
    with pytest.raises(SpecError, match=r"double: option 'sizes' entry 1 must be a whole number, not float 2.5"):
        Exercise(name="double", sample=_sample, checks=(Correct(1),), hints=HINTS, sizes=(1, 2.5))
    with pytest.raises(SpecError, match=r"double: option 'sample' must be a function, not str"):
        Exercise(name="double", sample="_sample", checks=(Correct(1),), hints=HINTS)
    assert Exercise(name="double", sample=_sample, checks=(Correct(1),), hints=HINTS, rtol=1, atol=0).rtol == 1


def test_the_topic_loader_names_the_topic_file_line_and_exercise(tmp_path):
    path = tmp_path / "broken_topic.py"
    path.write_text(
        textwrap.dedent("""
        from jaxlings.grading.checks import Correct, Grad
        from jaxlings.grading.spec import Case, Exercise, Topic

        TOPIC = Topic("broken", "Broken", exercises=(
            Exercise(
                name="first",
                sample=lambda rng, n: Case(()),
                checks=(Correct(1),),
                hints=("a", "b"),
            ),
            Exercise(
                name="second",
                sample=lambda rng, n: Case(()),
                checks=(Correct(1), Grad(2, grads=(0,))),
                hints=("a", "b"),
            ),
        ))
    """)
    )
    spec = importlib.util.spec_from_file_location("broken_topic", path)
    with pytest.raises(SpecError) as caught:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert topics.where(caught.value, path) == ", exercise second (broken_topic.py line 15)"


def test_every_topic_builds_and_every_check_kind_is_registered():
    assert set(KINDS) == {
        "correct",
        "jit",
        "speed",
        "key_reuse",
        "grad",
        "vmap",
        "compiles",
        "sharding",
        "prints",
        "vmc",
        "trains",
    }
    for name in topics.ORDER:
        for ex in topics.load(name).exercises:
            assert ordered(ex.checks)[0].name in ("correct", "vmc", "trains"), (name, ex.name)


def test_checks_run_after_what_they_require_or_read_and_otherwise_as_declared():
    checks = (Speed(1, size={"cpu": 8}), KeyReuse(), Jit(1), Correct(1))
    assert [c.name for c in ordered(checks)] == ["correct", "jit", "speed", "key_reuse"]
    assert waiting_for(Speed(1, size={"cpu": 8}), {"correct": False}) == "not judged until the function is correct"
    assert waiting_for(Speed(1, size={"cpu": 8}), {"correct": True}) is None


@pytest.fixture
def halves():
    """A check defined in a test, as a new check would be in its own module: the engine, the
    planner and the result need nothing else. Unregistered afterwards (`KINDS` is the process's)."""

    @dataclass(frozen=True, kw_only=True)
    class Halves(Check):
        factor: float = 2.0

        name = "halves_test_only"
        summary = "the output is twice the input"
        requires = ("correct",)

        def describe(self, ex, words):
            return f"the output is {self.factor:g} times the input."

        def run(self, ctx):
            got = ctx.student.call("call", fn=ctx.exercise.name, args=ctx.cases[0].args)["out"]
            doubled = np.asarray(got["leaves"][0]["data"])
            ok = np.allclose(doubled, self.factor * ctx.cases[0].args[0])
            return Outcome.ok("twice") if ok else Outcome.fail(f"not {self.factor:g} times the input")

    yield Halves
    KINDS.pop(Halves.name, None)


@pytest.mark.slow
def test_a_new_check_is_one_class(tmp_path, halves):
    """Defined in a fixture and used in a spec: registered, ordered after `correct`, run by the
    engine, failing a submission that deserves it and passing one that does not."""
    Halves = halves
    assert KINDS["halves_test_only"] is Halves
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    (solutions / "doubling.py").write_text("def double(x):\n    return 2 * x\n")
    topic = Topic("doubling", "Doubling", exercises=(exercise(Halves(2), Correct(1)),))
    for source, want in (("def double(x):\n    return 2 * x\n", 2.0), ("def double(x):\n    return 2 * x\n", 0.0)):
        submission = tmp_path / f"sub{want}"
        submission.mkdir()
        (submission / "doubling.py").write_text(source)
        factor = 2.0 if want else 3.0
        spec = Topic("doubling", "Doubling", exercises=(exercise(Halves(2, factor=factor), Correct(1)),))
        result = engine.grade(submission, [spec], reference_dir=solutions, seed=1, limits=TEST_LIMITS)
        names = [t.check for t in result.tests]
        assert names == ["correct", "halves_test_only"]
        assert result.tests[1].score == want, result.tests[1].output
    assert topic.exercises[0].points == 3
    assert SOLUTIONS.is_dir()


@pytest.mark.parametrize("missing", ["describe", "run"])
def test_a_check_without_describe_or_run_is_refused_when_its_class_is_defined(missing):
    body = {
        "name": "incomplete_test_only",
        "summary": "never registered",
        "describe": lambda self, ex, words: "something.",
        "run": lambda self, ctx: Outcome.ok(),
    }
    del body[missing]
    with pytest.raises(TypeError, match=f"must define `{missing}`"):
        type("Incomplete", (Check,), body)
    assert "incomplete_test_only" not in KINDS
