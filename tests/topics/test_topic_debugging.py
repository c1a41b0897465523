"""Topic `debugging`: the reference earns full marks, and every check fails the crafted
submission that deserves to fail it, and only it.

The crafted submissions are `tests/submissions/debugging__*.py`: `one_fault_each` and
`more_faults` (one fault per function each), `written_differently` (right answers written
another way: outcomes are graded, not source) and `attack` (attempts to pass without doing
what is measured). Every verdict here is an outcome: lines read off the worker's stdout by the
grader, exported programs that do or do not exist, message bytes, indices and gradients
compared with the reference's, scope names read from the exported program's locations.
"""

from __future__ import annotations

import pytest

from autograder.requirements import InScope
from helpers.grading import TopicView, failing, grade_variant, reference_solutions, short_of_full_marks

TOPIC = "debugging"


@pytest.fixture(scope="module")
def reference(request):
    return reference_solutions(request, TOPIC)


@pytest.fixture(scope="module")
def one_fault_each(tmp_path_factory):
    return grade_variant(tmp_path_factory, TOPIC, "one_fault_each")


@pytest.fixture(scope="module")
def more_faults(tmp_path_factory):
    return grade_variant(tmp_path_factory, TOPIC, "more_faults")


@pytest.fixture(scope="module")
def written_differently(tmp_path_factory):
    return grade_variant(tmp_path_factory, TOPIC, "written_differently")


@pytest.fixture(scope="module")
def attack(tmp_path_factory):
    names = [f"{TOPIC}.{e}" for e in ("normalize_rows", "checked_entropy", "scoped_mlp")]
    return grade_variant(tmp_path_factory, TOPIC, "attack", names)


VIEW = TopicView(TOPIC)
failed, message, data = VIEW.failed, VIEW.message, VIEW.data


# -- the reference ---------------------------------------------------------------------------


def test_reference_gets_full_marks(reference):
    assert short_of_full_marks(reference) == set(), [t.output for t in reference.tests if t.score < t.max_score]


def test_reference_prints_on_every_debug_call(reference):
    # 7 of the stream's 12 calls have debug=True; 4 of them reuse a compilation and print anyway
    prints = data(reference, "normalize_rows", "prints")
    assert prints["calls"] == 12 and prints["printing_calls"] == prints["lines"] == 7
    assert prints["reference_traces"] == 4  # (2 shapes) x (debug on, off)
    assert "prints at run time" in message(reference, "normalize_rows", "prints")


def test_reference_keeps_its_loop(reference):
    loop = data(reference, "first_nan_step", "jit")
    assert loop["n_ops"] == loop["n_ops_other"] and loop["loops"] == 1  # T = 100 and T = 1: one loop


# -- one fault each ----------------------------------------------------------------------------


def test_trace_time_print_fails_prints_only(one_fault_each):
    assert failed(one_fault_each, "normalize_rows") == {"prints"}
    assert "JitTracer" in message(one_fault_each, "normalize_rows", "prints")


def test_checks_in_the_wrong_order_fail_correct(one_fault_each):
    assert failed(one_fault_each, "checked_entropy") == {"correct"}
    assert "both checks fail" in message(one_fault_each, "checked_entropy", "correct")


def test_argmax_alone_fails_correct_only(one_fault_each):
    assert failed(one_fault_each, "first_nan_step") == {"correct"}
    assert "no NaN" in message(one_fault_each, "first_nan_step", "correct")


def test_naive_norm_fails_grad_only(one_fault_each):
    assert failed(one_fault_each, "path_length") == {"grad"}
    assert "NaN" in message(one_fault_each, "path_length", "grad")


def test_nested_scopes_fail_jit_only(one_fault_each):
    assert failed(one_fault_each, "scoped_mlp") == {"jit"}
    assert "`hidden/readout`" in message(one_fault_each, "scoped_mlp", "jit")


# -- more faults -------------------------------------------------------------------------------


def test_unconditional_debug_print_fails_jit_and_prints(more_faults):
    assert failed(more_faults, "normalize_rows") == {"jit", "prints"}
    assert "calls back to the host" in message(more_faults, "normalize_rows", "jit")
    assert "should print nothing" in message(more_faults, "normalize_rows", "prints")
    assert data(more_faults, "normalize_rows", "prints")["printing_calls"] == 12


def test_no_validation_fails_correct(more_faults):
    assert failed(more_faults, "checked_entropy") == {"correct"}


def test_python_loop_fails_jit_only(more_faults):
    assert failed(more_faults, "first_nan_step") == {"jit"}
    facts = data(more_faults, "first_nan_step", "jit")
    assert facts["n_ops"] > 10 * facts["n_ops_other"]


def test_where_on_the_output_alone_fails_grad_only(more_faults):
    assert failed(more_faults, "path_length") == {"grad"}


def test_no_scopes_fail_jit_only(more_faults):
    assert failed(more_faults, "scoped_mlp") == {"jit"}
    assert "(the scopes it has: none)" in message(more_faults, "scoped_mlp", "jit")


# -- written differently: outcomes, not source -----------------------------------------------


def test_other_right_answers_pass(written_differently):
    # debug.callback instead of debug.print, checkify outside the jit, fori_loop instead of scan,
    # a custom_jvp norm, jnp.dot and jnp.maximum
    assert failing(written_differently) == set(), [t.output for t in written_differently.tests if t.score < t.max_score]


# -- attacks -----------------------------------------------------------------------------------


def test_print_hidden_in_a_cond_is_still_in_the_program(attack):
    assert failed(attack, "normalize_rows") == {"jit"}


def test_lying_message_array_is_refused(attack):
    assert failed(attack, "checked_entropy") == {"correct"}
    assert "not a numeric array" in message(attack, "checked_entropy", "correct")


def test_dead_code_cannot_plant_a_scope(attack):
    assert failed(attack, "scoped_mlp") == {"jit"}
    assert "`readout`" in message(attack, "scoped_mlp", "jit")


# -- the fact and the requirement themselves ------------------------------------------------------


def _scopes(fn, *args) -> dict:
    """The `scopes` fact of `fn`'s exported program, as the trusted side reads it."""
    import jax
    from jax import export

    from autograder.worker import program

    return program.inspect_module(export.export(jax.jit(fn))(*args).mlir_module())["scopes"]


def test_scopes_are_read_from_locations():
    import jax
    import jax.numpy as jnp

    def mlp(x, w1, w2):
        with jax.named_scope("hidden"):
            h = jax.nn.relu(x @ w1)
        with jax.named_scope("readout"):
            with jax.named_scope("inner"):
                return jnp.sum(h @ w2)

    args = (jnp.ones((4, 3)), jnp.ones((3, 5)), jnp.ones((5, 2)))
    forward = _scopes(mlp, *args)
    assert forward["hidden"] == {"call": 1, "dot_general": 1}  # the call is jax.nn.relu's jit
    assert forward["readout/inner"]["dot_general"] == 1 and "readout" not in forward
    backward = _scopes(jax.grad(mlp, argnums=1), *args)  # transpose(jvp(hidden)) reads hidden
    assert backward["hidden"]["dot_general"] == 2 and backward["readout/inner"]["dot_general"] == 1
    assert _scopes(lambda x: x @ x.T, jnp.ones((2, 2))) == {}


# -- the requirement itself ----------------------------------------------------------------------


def test_in_scope_reads_exact_paths():
    req = InScope("hidden", "dot_general")
    assert req.judge({"scopes": {"hidden": {"dot_general": 1}}}, {}) is None
    assert req.judge({"scopes": {"mlp/hidden": {"dot_general": 1}}}, {}) is not None
    assert req.judge({"scopes": {"hidden": {"add": 3}}}, {}) is not None
    assert req.judge({}, {}) is not None
