"""Topic `loops`: the reference passes, right answers written differently pass, and for every
check a submission that deserves to fail it fails it, and only it.

`jit` verdicts here rest on counts of the exported program, analysed on the trusted side
(operations run at two trip counts, compiled HLO lines, StableHLO ops, while loops and their
known trip counts), never on the compile-time requirement, which is wall time: the assertions
name the counted reason, and the compile-time figures are only reported.
"""

import pytest

from helpers.grading import (
    extra_data,
    failing_in,
    grade_dir,
    grade_variant,
    reference_solutions,
    short_of_full_marks,
    verdicts,
)
from jaxlings.grading.requirements import CompileTimeAtMost, DataDependentLoop, HloLinesAtMost, OpsDoNotGrow, judge_all
from jaxlings.specs import loops

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
def reference(request):
    return reference_solutions(request, TOPIC)


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    return graded(tmp_path_factory, "one_fault_each", [TOPIC])


@pytest.fixture(scope="module")
def unrolled(tmp_path_factory):
    return graded(tmp_path_factory, "unrolled", [f"{TOPIC}.power_iteration", f"{TOPIC}.newton_sqrt"])


def test_reference_gets_full_marks_and_its_loops_do_not_grow(reference):
    assert short_of_full_marks(reference) == set(), [t.output for t in reference.tests if t.score < t.max_score]
    assert reference.max_score == 16  # every point earned, within the clock's noise (above)
    assert "loops.rnn_loss:grad" in {t.name for t in reference.tests}
    for ex in ("power_iteration", "ema", "newton_sqrt", "rnn_loss"):
        facts = data(reference, f"{ex}:jit")
        assert facts["n_ops"] == facts["n_ops_other"] == facts["reference_n_ops"], ex
        assert facts["ops"]["while"] == facts["loops"] == 1, ex
    # the fixed trip counts are known to XLA; newton_sqrt's depends on the data
    assert [data(reference, f"{ex}:jit")["counted_loops"] for ex in ("power_iteration", "ema", "rnn_loss")] == [1, 1, 1]
    assert data(reference, "newton_sqrt:jit")["counted_loops"] == 0


def test_right_answers_written_differently_get_full_marks(crafted):
    # fori_loop with unroll=4, a preallocated trajectory, the residual in the loop state,
    # fori_loop with Python-int bounds under jax.grad
    result = grade_dir(crafted(loops="alternatives"), [TOPIC])
    assert short_of_full_marks(result) == set(), [t.output for t in result.tests if t.score < t.max_score]


def test_python_for_loop_fails_jit_only(faults):
    assert mine(faults, "power_iteration") == {"loops.power_iteration:jit"}
    message = verdicts(faults)["loops.power_iteration:jit"][2]
    assert "has no `while`" in message and "grows with the input" in message and "compiled HLO has" in message
    facts = data(faults, "power_iteration:jit")
    assert "while" not in facts["ops"] and facts["loops"] == 0
    assert facts["n_ops"] > 10 * facts["n_ops_other"]
    assert facts["hlo_lines"] > 10 * facts["reference_hlo_lines"]


def test_wrong_values_fail_correct_only(faults):
    assert mine(faults, "ema") == {"loops.ema:correct", "loops.ema:jit"}
    assert "values are off" in verdicts(faults)["loops.ema:correct"][2]


def test_fixed_count_loop_where_the_count_is_unknown_fails_jit_only(faults):
    assert mine(faults, "newton_sqrt") == {"loops.newton_sqrt:jit"}
    message = verdicts(faults)["loops.newton_sqrt:jit"][2]
    assert "no data-dependent loop" in message and "fixed before it starts" in message
    facts = data(faults, "newton_sqrt:jit")
    assert facts["loops"] == facts["counted_loops"] == 1  # a fori_loop of 100: a while, with a known trip count


def test_while_loop_where_grad_is_needed_fails_grad_only(faults):
    assert mine(faults, "rnn_loss") == {"loops.rnn_loss:grad"}
    assert "Reverse-mode differentiation does not work" in verdicts(faults)["loops.rnn_loss:grad"][2]


def test_unroll_true_fails_jit_on_the_exported_program(unrolled):
    # one `scan` equation in the jaxpr, but the exported program holds every step: no while,
    # operations growing with the trip count, and the compiled HLO as large as a Python loop's
    assert mine(unrolled, "power_iteration") == {"loops.power_iteration:jit"}
    message = verdicts(unrolled)["loops.power_iteration:jit"][2]
    assert "has no `while`" in message and "grows with the input" in message and "compiled HLO has" in message
    facts = data(unrolled, "power_iteration:jit")
    assert "while" not in facts["ops"] and facts["loops"] == 0
    assert facts["n_ops"] > 10 * facts["n_ops_other"]
    assert facts["hlo_lines"] > 10 * facts["reference_hlo_lines"]


def test_python_while_on_a_value_fails_jit_only(unrolled):
    assert mine(unrolled, "newton_sqrt") == {"loops.newton_sqrt:jit"}
    message = verdicts(unrolled)["loops.newton_sqrt:jit"][2]
    assert "ConcretizationTypeError" in message or "TracerBoolConversionError" in message


# The requirements on counted figures alone (no worker): facts of exported programs of power
# iteration, measured on this 2-core CPU (see jaxlings/specs/loops.py): the reference has one
# while loop with a known trip count and 21 operations at 2 and at 200 steps, 172 HLO lines at
# 200, and compiles in 0.1-0.5 s.
ROLLED = {
    "ops": {"while": 1},
    "n_ops": 21,
    "n_ops_other": 21,
    "hlo_lines": 172,
    "loops": 1,
    "counted_loops": 1,
    "compile_seconds": 0.12,
}


def test_loop_requirements_pass_a_rolled_loop_on_a_busy_machine():
    busy = {**ROLLED, "compile_seconds": 1.45}  # the student's compile 12x slower than the reference's
    assert judge_all(loops.stays_a_loop("lax.fori_loop"), busy, ROLLED) == []
    # unroll=4: fully unrolled at 2 steps (25 operations, no while), 4 copies of the body at 200
    with_unroll_4 = {**ROLLED, "n_ops": 44, "n_ops_other": 25, "hlo_lines": 261}
    assert judge_all(loops.stays_a_loop("lax.fori_loop"), with_unroll_4, ROLLED) == []


@pytest.mark.parametrize(
    "changed, caught_by",
    [
        (
            {
                "ops": {},
                "n_ops": 1609,
                "n_ops_other": 25,
                "hlo_lines": 5513,
                "loops": 0,
                "counted_loops": 0,
                "compile_seconds": 4.0,
            },
            4,
        ),
        (
            {
                "ops": {},
                "n_ops": 1809,
                "n_ops_other": 27,
                "hlo_lines": 5522,
                "loops": 0,
                "counted_loops": 0,
                "compile_seconds": 5.1,
            },
            4,
        ),
        ({"ops": {}, "n_ops": 1809, "n_ops_other": 27, "hlo_lines": 5522, "loops": 0, "counted_loops": 0}, 3),
        ({"n_ops": 1809, "n_ops_other": 27}, 1),
        ({"hlo_lines": 5522}, 1),
    ],
    ids=[
        "python loop",
        "unroll=True",
        "unroll=True, compiled as fast as the reference",
        "operations growing alone",
        "HLO lines alone",
    ],
)
def test_loop_requirements_catch_unrolled_loops(changed, caught_by):
    assert len(judge_all(loops.stays_a_loop("lax.fori_loop"), {**ROLLED, **changed}, ROLLED)) == caught_by


def test_ops_do_not_grow_allows_a_small_unroll_and_no_more():
    # default margin x3 + 20 of the smallest size's operations: 25 -> 95
    assert OpsDoNotGrow().judge({"n_ops": 95, "n_ops_other": 25}, {}) is None
    assert "25 operations for the small case, 96" in OpsDoNotGrow("why").judge({"n_ops": 96, "n_ops_other": 25}, {})
    assert OpsDoNotGrow().judge({"n_ops": 96}, {}) is None  # no figure at the small size: nothing to judge


def test_data_dependent_loop_asks_for_a_trip_count_xla_does_not_know():
    # newton_sqrt: the reference's while_loop (1 loop, 0 counted), a fori_loop of 100 passes (1, 1)
    assert DataDependentLoop().judge({"loops": 1, "counted_loops": 0}, {}) is None
    assert "runs a number of steps fixed before it starts" in DataDependentLoop().judge(
        {"loops": 1, "counted_loops": 1}, {}
    )
    assert "it has no loop" in DataDependentLoop().judge({"loops": 0, "counted_loops": 0}, {})
    assert DataDependentLoop().judge({"loops": 2, "counted_loops": 1}, {}) is None


def test_hlo_and_compile_time_limits_are_relative_to_the_reference():
    assert HloLinesAtMost(4, 300).judge({"hlo_lines": 988}, {"hlo_lines": 172}) is None
    assert "989 lines" in HloLinesAtMost(4, 300, "why").judge({"hlo_lines": 989}, {"hlo_lines": 172})
    assert HloLinesAtMost().judge({}, {"hlo_lines": 1}) is None
    assert CompileTimeAtMost(4, 1).judge({"compile_seconds": 1.4}, {"compile_seconds": 0.1}) is None
