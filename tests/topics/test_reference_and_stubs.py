"""The two anchors of every topic: the reference solutions earn full marks on every check, and
the generated stubs earn zero on every check, each with a "not implemented" message."""

import pytest

from helpers.grading import SOLUTIONS, grade_dir, short_of_full_marks
from jaxlings.grading import topics
from jaxlings.grading.checks import KINDS


@pytest.mark.slow  # graded_solutions grades every topic: ~230 s on a 2-core CPU
def test_solutions_get_full_marks_on_every_check(graded_solutions):
    assert short_of_full_marks(graded_solutions) == set(), [
        t.output for t in graded_solutions.tests if t.score < t.max_score
    ]
    assert graded_solutions.max_score > 0


@pytest.mark.slow  # graded_solutions grades every topic: ~230 s on a 2-core CPU
def test_every_declared_check_is_graded(graded_solutions):
    expected = {
        f"{t.name}.{ex.name}:{c}"
        for t in topics.resolve(None)
        for ex in t.exercises
        for c in (c.name for c in ex.checks)
    }
    assert {t.name for t in graded_solutions.tests} == expected


@pytest.mark.slow  # graded_stubs grades every topic: ~75 s on a 2-core CPU
def test_stubs_get_zero_with_not_implemented(graded_stubs):
    assert graded_stubs.score == 0
    for t in graded_stubs.tests:
        if "correct" in KINDS[t.check].requires:
            assert "not judged until the function is correct" in t.output
        else:  # the checks that call the function themselves: correct, jit, and topic checks such as vmc
            assert "not implemented yet" in t.output, t
            assert f"grade hint {t.topic}.{t.exercise}" in t.output


def test_public_mode_is_reproducible_and_hidden_mode_is_not():
    public_a = grade_dir(SOLUTIONS, ["at_updates.scatter_ops"], public=True)
    public_b = grade_dir(SOLUTIONS, ["at_updates.scatter_ops"], public=True)
    hidden = grade_dir(SOLUTIONS, ["at_updates.scatter_ops"])
    assert public_a.extra_data["seed"] == public_b.extra_data["seed"] == 0
    assert hidden.extra_data["seed"] != 0 and hidden.extra_data["mode"] == "hidden"
    assert public_a.score == hidden.score == public_a.max_score
