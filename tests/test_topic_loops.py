"""Topic `loops`: the reference passes, right answers written differently pass, and for every
check a submission that deserves to fail it fails it, and only it.

`jit` verdicts here rest on counts (jaxpr equations at two trip counts, compiled HLO lines,
primitives), never on the compile-time requirement, which is wall time: the assertions name
the counted reason, and the compile-time figures are only reported.
"""


import pytest

from autograder.requirements import CompileTimeAtMost, HloLinesAtMost, judge_all
from autograder.topics import loops
from conftest import SOLUTIONS, extra_data, failing, failing_in, grade_dir, grade_variant, verdicts

TOPIC = "loops"


def mine(result, exercise):
    """The failing tests of one exercise."""
    return failing_in(result, TOPIC, exercise)


def data(result, name):
    """The measured figures of one test."""
    return extra_data(result, f"{TOPIC}.{name}")


def graded(tmp_path_factory, variant, names):
    return grade_variant(tmp_path_factory, "loops", variant, names)


@pytest.fixture(scope="module")
def reference():
    return grade_dir(SOLUTIONS, [TOPIC])


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    return graded(tmp_path_factory, "one_fault_each", [TOPIC])


@pytest.fixture(scope="module")
def unrolled(tmp_path_factory):
    return graded(tmp_path_factory, "unrolled", [f"{TOPIC}.power_iteration", f"{TOPIC}.newton_sqrt"])


def test_reference_gets_full_marks_and_its_loops_do_not_grow(reference):
    assert failing(reference) == set(), [t.output for t in reference.tests if t.score < t.max_score]
    assert reference.score == reference.max_score == 16
    assert "loops.rnn_loss:grad" in {t.name for t in reference.tests}
    for ex in ("power_iteration", "ema", "newton_sqrt", "rnn_loss"):
        facts = data(reference, f"{ex}:jit")
        assert facts["n_eqns"] == facts["n_eqns_other"] == facts["reference_n_eqns"]


def test_right_answers_written_differently_get_full_marks(crafted):
    # fori_loop with unroll=4, a preallocated trajectory, the residual in the loop state,
    # fori_loop with Python-int bounds under jax.grad
    result = grade_dir(crafted(loops="alternatives"), [TOPIC])
    assert failing(result) == set(), [t.output for t in result.tests if t.score < t.max_score]


def test_python_for_loop_fails_jit_only(faults):
    assert mine(faults, "power_iteration") == {"loops.power_iteration:jit"}
    message = verdicts(faults)["loops.power_iteration:jit"][2]
    assert "none of scan, while" in message and "grows with the input" in message
    facts = data(faults, "power_iteration:jit")
    assert facts["n_eqns"] > 10 * facts["n_eqns_other"]
    assert facts["hlo_lines"] > 10 * facts["reference_hlo_lines"]


def test_wrong_values_fail_correct_only(faults):
    assert mine(faults, "ema") == {"loops.ema:correct"}
    assert "values are off" in verdicts(faults)["loops.ema:correct"][2]


def test_fixed_count_loop_where_the_count_is_unknown_fails_jit_only(faults):
    assert mine(faults, "newton_sqrt") == {"loops.newton_sqrt:jit"}
    assert "has no `while`" in verdicts(faults)["loops.newton_sqrt:jit"][2]


def test_while_loop_where_grad_is_needed_fails_grad_only(faults):
    assert mine(faults, "rnn_loss") == {"loops.rnn_loss:grad"}
    assert "Reverse-mode differentiation does not work" in verdicts(faults)["loops.rnn_loss:grad"][2]


def test_unroll_true_fails_jit_on_the_hlo_alone(unrolled):
    assert mine(unrolled, "power_iteration") == {"loops.power_iteration:jit"}
    message = verdicts(unrolled)["loops.power_iteration:jit"][2]
    assert "compiled HLO has" in message
    assert "grows with the input" not in message and "none of" not in message
    facts = data(unrolled, "power_iteration:jit")
    assert facts["n_eqns"] == facts["n_eqns_other"]


def test_python_while_on_a_value_fails_jit_only(unrolled):
    assert mine(unrolled, "newton_sqrt") == {"loops.newton_sqrt:jit"}
    message = verdicts(unrolled)["loops.newton_sqrt:jit"][2]
    assert "ConcretizationTypeError" in message or "TracerBoolConversionError" in message


# The requirements on counted figures alone (no worker): measured on this 2-core CPU for power
# iteration at 200 steps (reference: 15 equations, 163 HLO lines, 0.1-0.5 s to compile).
ROLLED = {"primitives": {"scan": 1}, "n_eqns": 15, "n_eqns_other": 15, "hlo_lines": 163, "compile_seconds": 0.12}


def test_loop_requirements_pass_a_rolled_loop_on_a_busy_machine():
    busy = {**ROLLED, "compile_seconds": 1.45}  # the student's compile 12x slower than the reference's
    assert judge_all(loops.stays_a_loop("lax.fori_loop"), busy, ROLLED) == []
    with_unroll_8 = {**ROLLED, "hlo_lines": 356}
    assert judge_all(loops.stays_a_loop("lax.fori_loop"), with_unroll_8, ROLLED) == []


@pytest.mark.parametrize("changed, caught_by", [
    ({"primitives": {}, "n_eqns": 1207, "n_eqns_other": 19, "hlo_lines": 5507, "compile_seconds": 2.1}, 4),
    ({"hlo_lines": 5514, "compile_seconds": 3.3}, 2),
    ({"hlo_lines": 5514}, 1),
], ids=["python loop", "unroll=True", "unroll=True, compiled as fast as the reference"])
def test_loop_requirements_catch_unrolled_loops(changed, caught_by):
    assert len(judge_all(loops.stays_a_loop("lax.fori_loop"), {**ROLLED, **changed}, ROLLED)) == caught_by


def test_hlo_and_compile_time_limits_are_relative_to_the_reference():
    assert HloLinesAtMost(4, 300).judge({"hlo_lines": 952}, {"hlo_lines": 163}) is None
    assert "953 lines" in HloLinesAtMost(4, 300, "why").judge({"hlo_lines": 953}, {"hlo_lines": 163})
    assert HloLinesAtMost().judge({}, {"hlo_lines": 1}) is None
    assert CompileTimeAtMost(4, 1).judge({"compile_seconds": 1.4}, {"compile_seconds": 0.1}) is None
