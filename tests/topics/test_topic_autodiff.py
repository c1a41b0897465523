"""Topic `autodiff`: the reference earns full marks with the figures its spec states, and every
check fails the submission that deserves to fail it, and only it.

The crafted submissions are `tests/submissions/autodiff__*.py`: `one_fault_each` and
`more_faults` (a fault per function: wrong argnums, reverse mode for a tall Jacobian, a
materialised Hessian, the naive distance whose gradient is NaN, a custom backward rule that
drops its cotangent, a forgotten or misplaced stop_gradient, first-order MAML, a Python loop or
jacrev over the examples, a deep gradient with no checkpoint or with a policy that saves
everything), `alternatives` (right answers written differently: full marks), and `hostile` (a
Hessian or Jacobian built inside `lax.map`, whose FLOP count XLA reports for one trip; a
gradient "made finite" by cutting it off; a loop over one jitted helper; backpropagation
truncated between checkpointed layers). Every verdict here is a count (FLOPs, operations, temp
bytes of the exported program) or a value, never a time.
"""

from __future__ import annotations

import pytest

from helpers.grading import TopicView, failing, grade_variant, reference_solutions, short_of_full_marks

TOPIC = "autodiff"


@pytest.fixture(scope="module")
def reference(request):
    return reference_solutions(request, TOPIC)


@pytest.fixture(scope="module")
def one_fault_each(tmp_path_factory):
    return grade_variant(tmp_path_factory, TOPIC, "one_fault_each")


@pytest.fixture(scope="module")
def more_faults(tmp_path_factory):
    names = [
        f"{TOPIC}.{e}" for e in ("loss_and_grads", "hvp", "pair_energy", "td_loss", "per_example_grads", "remat_grad")
    ]
    return grade_variant(tmp_path_factory, TOPIC, "more_faults", names)


@pytest.fixture(scope="module")
def alternatives(tmp_path_factory):
    return grade_variant(tmp_path_factory, TOPIC, "alternatives")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    names = [f"{TOPIC}.{e}" for e in ("tall_jacobian", "hvp", "pair_energy", "per_example_grads", "remat_grad")]
    return grade_variant(tmp_path_factory, TOPIC, "hostile", names)


VIEW = TopicView(TOPIC)
failed, message, data = VIEW.failed, VIEW.message, VIEW.data


# -- the reference ---------------------------------------------------------------------------


def test_reference_gets_full_marks(reference):
    assert short_of_full_marks(reference) == set(), [t.output for t in reference.tests if t.score < t.max_score]


def test_reference_jacobian_and_hvp_cost_a_few_passes(reference):
    # tall_jacobian at n = 3, h = 64, m = 256: three forward passes through two matmuls, about
    # 2 * 3 * (64 * 3 + 256 * 64) FLOPs, far below the m = 256 pullbacks of reverse mode
    jac = data(reference, "tall_jacobian", "jit")
    assert jac["flops"] == jac["reference_flops"] < 3 * 2 * 3 * (64 * 3 + 256 * 64)
    # hvp at d = 128, n = 256: a few passes over X (2 n d FLOPs each), far below d of them
    h = data(reference, "hvp", "jit")
    assert h["flops"] == h["reference_flops"] < 8 * 2 * 256 * 128
    assert "while" not in h["ops"] and "while" not in jac["ops"]


def test_reference_gradient_keeps_only_the_layer_inputs(reference):
    # remat_grad at L = 16, n = 64, d = 32, k = 128: 16 layer inputs (n, d) of 8 KiB, 128 KiB,
    # plus one layer's recomputation; every layer's (n, k) activations would be 512 KiB alone
    facts = data(reference, "remat_grad", "jit")
    assert facts["temp_bytes"] == facts["reference_temp_bytes"] < 16 * 64 * 128 * 4
    assert facts["temp_bytes"] > 16 * 64 * 32 * 4


def test_reference_per_example_program_does_not_grow(reference):
    facts = data(reference, "per_example_grads", "jit")
    assert facts["n_ops"] == facts["n_ops_other"] == facts["reference_n_ops"]


# -- one fault each ----------------------------------------------------------------------------


def test_wrong_argnums_fails_correct_only(one_fault_each, more_faults):
    assert failed(one_fault_each, "loss_and_grads") == {"correct", "jit"}
    assert "`output[1]` is an array, expected a pair of arrays" in message(one_fault_each, "loss_and_grads", "correct")
    assert failed(more_faults, "loss_and_grads") == {"correct", "jit"}


def test_reverse_mode_for_a_tall_jacobian_fails_jit_on_flops(one_fault_each):
    assert failed(one_fault_each, "tall_jacobian") == {"jit"}
    assert "FLOPs" in message(one_fault_each, "tall_jacobian", "jit")
    facts = data(one_fault_each, "tall_jacobian", "jit")
    assert facts["flops"] > 50 * facts["reference_flops"]  # measured x86: 256 pullbacks against 3 pushes


def test_materialised_hessian_fails_jit_on_flops(one_fault_each, more_faults):
    for result in (one_fault_each, more_faults):  # jax.hessian, then jacfwd of grad
        assert failed(result, "hvp") == {"jit"}
        assert "FLOPs" in message(result, "hvp", "jit")
        facts = data(result, "hvp", "jit")
        assert facts["flops"] > 50 * facts["reference_flops"]  # measured x85 at d = 128


def test_naive_distance_has_a_nan_gradient_and_fails_grad_only(one_fault_each):
    assert failed(one_fault_each, "pair_energy") == {"grad"}
    assert "NaN" in message(one_fault_each, "pair_energy", "grad")


def test_backward_rule_that_drops_the_cotangent_fails_grad_only(more_faults):
    assert failed(more_faults, "pair_energy") == {"grad"}
    assert "values are off" in message(more_faults, "pair_energy", "grad")


def test_stop_gradient_forgotten_or_misplaced_fails_grad_only(one_fault_each, more_faults):
    for result in (one_fault_each, more_faults):
        assert failed(result, "td_loss") == {"grad"}
        assert "values are off" in message(result, "td_loss", "grad")


def test_first_order_maml_fails_grad_only(one_fault_each):
    assert failed(one_fault_each, "maml_loss") == {"grad"}
    # on the docstring's example the full gradient is -0.5 and first-order MAML says -1; hidden
    # grading draws other instances of that edge and random cases, where the two differ as well
    assert "values are off" in message(one_fault_each, "maml_loss", "grad")


def test_python_loop_over_examples_fails_jit_on_growth(one_fault_each):
    assert failed(one_fault_each, "per_example_grads") == {"jit"}
    assert "grows with the input" in message(one_fault_each, "per_example_grads", "jit")
    facts = data(one_fault_each, "per_example_grads", "jit")
    assert facts["n_ops"] > 10 * facts["n_ops_other"]  # measured 47 -> 1,423 for n = 2 -> 64


def test_jacrev_over_the_batch_fails_jit_on_flops(more_faults):
    assert failed(more_faults, "per_example_grads") == {"jit"}
    facts = data(more_faults, "per_example_grads", "jit")
    assert "FLOPs" in message(more_faults, "per_example_grads", "jit")
    assert facts["flops"] > 20 * facts["reference_flops"]  # measured x45 at n = 64


def test_gradient_without_checkpoint_fails_jit_on_memory_only(one_fault_each):
    assert failed(one_fault_each, "remat_grad") == {"jit"}
    assert "bytes of temporary memory" in message(one_fault_each, "remat_grad", "jit")
    facts = data(one_fault_each, "remat_grad", "jit")
    assert facts["temp_bytes"] > 4 * facts["reference_temp_bytes"]  # measured x5.2 on the CPU


def test_checkpointed_layers_in_a_loop_that_indexes_the_stack_fail_jit_naming_the_loop(tmp_path_factory):
    graded = grade_variant(tmp_path_factory, TOPIC, "remat_fori", [f"{TOPIC}.remat_grad"])
    assert failing(graded) == {"autodiff.remat_grad:jit"}, failing(graded)
    said = TopicView(TOPIC).message(graded, "remat_grad", "jit")
    assert "bytes of temporary memory" in said and "fori_loop" in said, said
    facts = TopicView(TOPIC).data(graded, "remat_grad", "jit")
    assert 2.5 * facts["reference_temp_bytes"] < facts["temp_bytes"] < 4 * facts["reference_temp_bytes"], facts


def test_checkpoint_with_a_save_everything_policy_fails_jit_on_memory_only(more_faults):
    assert failed(more_faults, "remat_grad") == {"jit"}
    assert "bytes of temporary memory" in message(more_faults, "remat_grad", "jit")
    facts = data(more_faults, "remat_grad", "jit")
    assert facts["temp_bytes"] > 4 * facts["reference_temp_bytes"]  # the same program as no checkpoint


# -- right answers written differently --------------------------------------------------------


def test_alternatives_get_full_marks(alternatives):
    # by-hand gradients, vmap of jvp, reverse-over-reverse, the double where, closures
    assert failing(alternatives) == set(), [t.output for t in alternatives.tests if t.score < t.max_score]


def test_nested_checkpoints_fit_the_memory_budget(alternatives):
    facts = data(alternatives, "remat_grad", "jit")
    assert facts["temp_bytes"] < 2 * facts["reference_temp_bytes"]  # measured x1.27 (8 blocks of 4 layers)


def test_other_hvp_orders_cost_the_same_flops(alternatives):
    facts = data(alternatives, "hvp", "jit")
    assert facts["flops"] < 1.1 * facts["reference_flops"]


# -- hostile ---------------------------------------------------------------------------------


def test_work_hidden_in_a_loop_escapes_the_flop_count_but_not_the_no_loop_rule(hostile):
    for exercise in ("tall_jacobian", "hvp"):
        assert failed(hostile, exercise) == {"jit"}
        facts = data(hostile, exercise, "jit")
        # XLA's cost analysis counts one trip: within the FLOP bound, caught by the loop alone
        assert facts["flops"] < 2.0 * facts["reference_flops"]
        assert facts["ops"]["while"] >= 1 and "`while`" in message(hostile, exercise, "jit")


def test_gradient_cut_off_to_look_finite_fails_grad(hostile):
    assert failed(hostile, "pair_energy") == {"grad"}
    assert "values are off" in message(hostile, "pair_energy", "grad")


def test_loop_over_a_jitted_helper_still_grows(hostile):
    assert failed(hostile, "per_example_grads") == {"jit"}
    facts = data(hostile, "per_example_grads", "jit")
    assert facts["n_ops"] > 10 * facts["n_ops_other"]


def test_backpropagation_truncated_between_layers_fails_correct_and_nothing_else_is_judged(hostile):
    # checkpointed, so within the memory budget; but the gradient of every layer but the last is
    # off, and a wrong function earns nothing for its program
    assert failed(hostile, "remat_grad") == {"correct", "jit"}
    assert "`grads['W1']`: " in message(hostile, "remat_grad", "correct")
    assert "not judged until the function is correct" in message(hostile, "remat_grad", "jit")
