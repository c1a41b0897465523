"""Topic `debugging`: the reference earns full marks, and every check fails the crafted
submission that deserves to fail it, and only it.

The crafted submissions are `tests/submissions/debugging__*.py`: `one_fault_each` and
`more_faults` (one fault per function each), `watch_the_loss` and `watch_the_weights` (the
faults left over: `first_nan_grad` watching the wrong thing, `scoped_mlp` with a product outside
its scope), `written_differently` (right answers written another way: outcomes are graded, not
source) and `attack` (attempts to pass without doing what is measured). Every verdict here is an
outcome: lines read off the worker's stdout by the grader, exported programs that do or do not
exist, message bytes and indices compared with the reference's, scope names read from the
exported program's locations.
"""

from __future__ import annotations

import re

import pytest

from helpers.grading import TopicView, failing, grade_variant, reference_solutions, short_of_full_marks
from jaxlings.grading.requirements import InScope

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
def watch_the_loss(tmp_path_factory):
    names = [f"{TOPIC}.{e}" for e in ("first_nan_grad", "scoped_mlp")]
    return grade_variant(tmp_path_factory, TOPIC, "watch_the_loss", names)


@pytest.fixture(scope="module")
def watch_the_weights(tmp_path_factory):
    return grade_variant(tmp_path_factory, TOPIC, "watch_the_weights", [f"{TOPIC}.first_nan_grad"])


@pytest.fixture(scope="module")
def written_differently(tmp_path_factory):
    return grade_variant(tmp_path_factory, TOPIC, "written_differently")


@pytest.fixture(scope="module")
def attack(tmp_path_factory):
    names = [f"{TOPIC}.{e}" for e in ("normalize_rows", "checked_entropy", "first_nan_grad", "scoped_mlp")]
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
    for exercise in ("first_nan_step", "first_nan_grad"):
        loop = data(reference, exercise, "jit")
        assert loop["n_ops"] == loop["n_ops_other"] and loop["loops"] == 1  # T = 100 and T = 1: one loop


# -- one fault each ----------------------------------------------------------------------------


def test_trace_time_print_fails_prints_only(one_fault_each):
    assert failed(one_fault_each, "normalize_rows") == {"prints"}
    assert "JitTracer" in message(one_fault_each, "normalize_rows", "prints")


def test_checks_in_the_wrong_order_fail_correct(one_fault_each):
    assert failed(one_fault_each, "checked_entropy") == {"correct"}
    assert "both checks fail" in message(one_fault_each, "checked_entropy", "correct")


def test_argmax_alone_fails_correct_only(one_fault_each):
    assert failed(one_fault_each, "first_nan_step") == {"correct", "jit"}
    assert "no NaN" in message(one_fault_each, "first_nan_step", "correct")


def test_steps_counted_from_one_fail_correct_only(one_fault_each):
    assert failed(one_fault_each, "first_nan_grad") == {"correct", "jit"}
    # a hidden run grades another instance of the docstring's example's edge, and says so
    text = message(one_fault_each, "first_nan_grad", "correct")
    assert text.startswith("a case like the docstring's example: NaN the step after an outlier (")
    assert re.search(r": your value, \d+, is 1 above the reference's; exact equality is required$", text), text


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


def test_unrolled_training_loop_fails_jit_only(more_faults):
    assert failed(more_faults, "first_nan_grad") == {"jit"}
    facts = data(more_faults, "first_nan_grad", "jit")
    assert facts["n_ops"] > 10 * facts["n_ops_other"]


def test_no_scopes_fail_jit_only(more_faults):
    assert failed(more_faults, "scoped_mlp") == {"jit"}
    text = message(more_faults, "scoped_mlp", "jit")
    assert "(of the program's `dot_general`s, 2 in no named scope, none in `hidden`)" in text


# -- watching the wrong thing ----------------------------------------------------------------


def test_watching_the_loss_fails_correct_only(watch_the_loss):
    # the loss stays finite at a NaN gradient and after it: -1 wherever the answer is a step
    assert failed(watch_the_loss, "first_nan_grad") == {"correct", "jit"}
    assert "your value, -1, is " in message(watch_the_loss, "first_nan_grad", "correct")


def test_watching_the_weights_fails_correct_only(watch_the_weights):
    assert failed(watch_the_weights, "first_nan_grad") == {"correct", "jit"}


def test_a_product_outside_its_scope_fails_jit_only(watch_the_loss):
    assert failed(watch_the_loss, "scoped_mlp") == {"jit"}
    text = message(watch_the_loss, "scoped_mlp", "jit")
    assert "1 in `readout`, 1 in no named scope" in text and 'inside `jax.named_scope("hidden")`' in text


# -- written differently: outcomes, not source -----------------------------------------------


def test_other_right_answers_pass(written_differently):
    # debug.callback instead of debug.print, checkify outside the jit, fori_loop instead of scan
    # (twice, with value_and_grad in the second), jnp.einsum (its own scope inside the student's)
    # and jnp.maximum
    assert failing(written_differently) == set(), [t.output for t in written_differently.tests if t.score < t.max_score]


# -- attacks -----------------------------------------------------------------------------------


def test_print_hidden_in_a_cond_is_still_in_the_program(attack):
    assert failed(attack, "normalize_rows") == {"jit"}


def test_lying_message_array_is_refused(attack):
    assert failed(attack, "checked_entropy") == {"correct"}
    assert "not a numeric array" in message(attack, "checked_entropy", "correct")


def test_guessing_the_nan_step_from_the_data_fails_correct(attack):
    # right where an outlier batch breaks training, wrong where the weights slide to 0 without one
    assert failed(attack, "first_nan_grad") == {"correct", "jit"}
    assert "the weights slide to 0" in message(attack, "first_nan_grad", "correct")


def test_dead_code_cannot_plant_a_scope(attack):
    assert failed(attack, "scoped_mlp") == {"jit"}
    assert "`readout`" in message(attack, "scoped_mlp", "jit")


# -- the fact and the requirement themselves ------------------------------------------------------


def _scopes(fn, *args) -> dict:
    """The `scopes` fact of `fn`'s exported program, as the trusted side reads it."""
    import jax
    from jax import export

    from jaxlings.worker import program

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
    assert req.judge({"scopes": {"hidden/readout": {"dot_general": 1}}}, {}) is not None
    assert req.judge({"scopes": {"hidden": {"add": 3}}}, {}) is not None
    assert req.judge({}, {}) is not None


def test_in_scope_counts_the_scopes_jax_opens_inside_the_students():
    import jax
    import jax.numpy as jnp

    req = InScope("hidden", "dot_general")

    def einsum_inside(x, w):
        with jax.named_scope("hidden"):
            return jnp.einsum("nk,kh->nh", x, w)  # jnp.einsum names a scope after its subscripts

    def checkpoint_inside(x, w):
        with jax.named_scope("hidden"):
            return jax.checkpoint(jnp.matmul)(x, w)

    def outside(x, w):
        xw = x @ w
        with jax.named_scope("hidden"):
            return jnp.tanh(xw)

    args = (jnp.ones((4, 3)), jnp.ones((3, 5)))
    assert _scopes(einsum_inside, *args) == {"hidden/nk,kh->nh": {"dot_general": 1}}
    for fn in (einsum_inside, checkpoint_inside):
        assert req.judge({"scopes": _scopes(fn, *args), "ops": {"dot_general": 1}}, {}) is None, fn.__name__
    problem = req.judge({"scopes": _scopes(outside, *args), "ops": {"dot_general": 1}}, {})
    assert problem is not None and "1 in no named scope" in problem
    # a scope of the student's own inside hers does not count
    assert req.judge({"scopes": {"hidden/layer": {"dot_general": 1}}}, {}) is not None
    assert "1 in `hidden/layer`" in req.judge({"scopes": {"hidden/layer": {"dot_general": 1}}}, {})


# -- the Graded list says which program is exported ------------------------------------------------


def test_the_graded_list_names_the_exported_flag():
    from jaxlings.course import graded
    from jaxlings.grading.topics import load

    ex = load(TOPIC).exercise("normalize_rows")
    jit_line = {name: text for name, _, text in graded.items(ex, ["x", "debug"])}["jit"]
    assert "in its exported program (exported with `debug` = False)" in jit_line


def test_static_values_refuses_a_sampler_that_draws_the_flag():
    import numpy as np

    from jaxlings.grading.check import SpecError
    from jaxlings.grading.checks import Correct, Jit
    from jaxlings.grading.spec import Case, Exercise

    def sample(rng, size):
        return Case((np.ones((size, 2), np.float32), bool(rng.integers(2))))

    with pytest.raises(SpecError, match="static_values"):
        Exercise(
            name="f",
            sample=sample,
            static_argnums=(1,),
            checks=(Correct(1), Jit(1, static_values=True)),
            hints=("a", "b"),
        )
