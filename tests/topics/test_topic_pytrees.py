"""Topic `pytrees`: the reference passes, and for every check a submission that deserves to fail
it fails it, and only it.

Outputs are compared by treedef first: a list for a tuple, a lost static field (aux data) or
a renamed class fails `correct` with both structures named; wrong leaves fail it by shape or
value. `jit`, `grad` and `vmap` each catch what only they can: a Python `if` on a traced
value, a wrong hand-written derivative, a class whose `__post_init__` rejects batched leaves.
"""

import re

import numpy as np
import pytest

from helpers.grading import (
    failing,
    failing_in,
    grade_dir,
    grade_variant,
    reference_solutions,
    short_of_full_marks,
    verdicts,
    write_submission,
)
from jaxlings.grading.compare import shapes

TOPIC = "pytrees"


def mine(result, exercise):
    """The failing tests of one exercise."""
    return failing_in(result, TOPIC, exercise)


@pytest.fixture(scope="module")
def reference(request):
    return reference_solutions(request, TOPIC)


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    return grade_variant(tmp_path_factory, TOPIC, "one_fault_each")


def test_reference_gets_full_marks_with_the_transform_checks(reference):
    assert short_of_full_marks(reference) == set(), [t.output for t in reference.tests if t.score < t.max_score]
    checks = {t.name for t in reference.tests}
    assert {"pytrees.global_norm:grad", "pytrees.dense_grad:vmap", "pytrees.dense_grad:jit"} <= checks
    assert reference.max_score == 22  # every point earned, within the clock's noise (above)


def test_right_answers_written_differently_get_full_marks(crafted):
    # ravel_pytree, jnp.linalg.norm, register_pytree_node_class with aux (activation,), flatten/unflatten
    result = grade_dir(crafted(pytrees="alternatives"), [TOPIC])
    assert short_of_full_marks(result) == set(), [t.output for t in result.tests if t.score < t.max_score]


def test_control_passes(faults):
    assert mine(faults, "param_counts") == set()


def test_list_for_tuple_fails_correct_only(faults):
    assert mine(faults, "tree_arith") == {"pytrees.tree_arith:correct", "pytrees.tree_arith:jit"}
    message = verdicts(faults)["pytrees.tree_arith:correct"][2]
    assert "the output is a list of three, expected a tuple of three (of the same entries)" in message, message


def test_tuple_for_list_fails_correct_only(faults):
    assert mine(faults, "unstack_tree") == {"pytrees.unstack_tree:correct", "pytrees.unstack_tree:jit"}
    message = verdicts(faults)["pytrees.unstack_tree:correct"][2]
    # as many dicts as the case has rows (drawn afresh each run), in words: two in a tuple are a pair
    found = re.search(
        r"the output is (?:a pair of|a tuple of (\w+)) dicts with keys 'n', 'w', expected a list of (\w+) dicts",
        message,
    )
    assert found, message
    assert found.group(2) == (found.group(1) or "two"), message


def test_wrong_leaf_shapes_fail_correct_only(faults):
    assert mine(faults, "stack_trees") == {"pytrees.stack_trees:correct", "pytrees.stack_trees:jit"}
    assert "expected shape" in verdicts(faults)["pytrees.stack_trees:correct"][2]


def test_wrong_derivative_fails_grad_only(faults):
    assert mine(faults, "global_norm") == {"pytrees.global_norm:grad"}
    assert "the gradient" in verdicts(faults)["pytrees.global_norm:grad"][2]


def test_python_if_on_a_traced_value_fails_jit_only(faults):
    assert mine(faults, "weight_decay") == {"pytrees.weight_decay:jit"}
    assert "TracerBoolConversionError" in verdicts(faults)["pytrees.weight_decay:jit"][2]


def test_init_checks_on_leaves_fail_vmap_only(faults):
    assert mine(faults, "dense_grad") == {"pytrees.dense_grad:vmap"}
    assert "jax.vmap" in verdicts(faults)["pytrees.dense_grad:vmap"][2]


def test_lost_aux_data_fails_correct_only(crafted):
    result = grade_dir(crafted(pytrees="lost_aux"), [f"{TOPIC}.dense_grad"])
    assert failing(result) == {"pytrees.dense_grad:correct", "pytrees.dense_grad:jit", "pytrees.dense_grad:vmap"}
    message = verdicts(result)["pytrees.dense_grad:correct"][2]
    assert "an instance of `Dense` whose static fields (its parts that are not arrays) differ" in message, message
    assert "not judged" in verdicts(result)["pytrees.dense_grad:vmap"][2]


def test_unregistered_class_fails_correct_and_nothing_else_is_judged(crafted):
    result = grade_dir(crafted(pytrees="unregistered"), [f"{TOPIC}.dense_grad"])
    assert result.score == 0
    v = verdicts(result)
    assert "not a valid JAX type" in v["pytrees.dense_grad:correct"][2]
    assert "not judged until the function is correct" in v["pytrees.dense_grad:jit"][2]
    assert "not judged" in v["pytrees.dense_grad:vmap"][2]


CLASS_VARIANTS = {
    "static field as a leaf": (
        """
        import dataclasses, functools, jax, jax.numpy as jnp

        @functools.partial(jax.tree_util.register_dataclass, data_fields=["w", "b", "activation"], meta_fields=[])
        @dataclasses.dataclass
        class Dense:
            w: jax.Array
            b: jax.Array
            activation: str

            def __call__(self, x):
                z = x @ self.w + self.b
                return {"relu": jax.nn.relu, "tanh": jnp.tanh, "linear": lambda z: z}[self.activation](z)

        def dense_grad(w, b, x, y, activation):
            return jax.grad(lambda layer: jnp.mean((layer(x) - y) ** 2))(Dense(w, b, activation))
    """,
        "is not a valid JAX type",
    ),
    "another class name": (
        """
        import dataclasses, jax, jax.numpy as jnp

        @jax.tree_util.register_dataclass
        @dataclasses.dataclass
        class Layer:
            w: jax.Array
            b: jax.Array
            activation: str = dataclasses.field(metadata=dict(static=True))

            def __call__(self, x):
                z = x @ self.w + self.b
                return {"relu": jax.nn.relu, "tanh": jnp.tanh, "linear": lambda z: z}[self.activation](z)

        def dense_grad(w, b, x, y, activation):
            return jax.grad(lambda layer: jnp.mean((layer(x) - y) ** 2))(Layer(w, b, activation))
    """,
        "an instance of `Layer`, expected an instance of `Dense`",
    ),
}


@pytest.mark.parametrize("variant", sorted(CLASS_VARIANTS))
def test_class_registered_the_wrong_way_fails_correct(tmp_path, variant):
    source, words = CLASS_VARIANTS[variant]
    result = grade_dir(write_submission(tmp_path, {TOPIC: source}), [f"{TOPIC}.dense_grad"])
    assert "pytrees.dense_grad:correct" in failing(result)
    assert words in verdicts(result)["pytrees.dense_grad:correct"][2]


def test_numpy_inside_and_shape_based_mask(tmp_path):
    folder = write_submission(
        tmp_path,
        {
            TOPIC: """
        import jax, jax.numpy as jnp, numpy as np

        def tree_arith(x, y, alpha):
            # NumPy on the leaves: fine eagerly, a TracerArrayConversionError under jit
            dot = np.float32(sum(np.vdot(a, b) for a, b in zip(jax.tree.leaves(x), jax.tree.leaves(y))))
            return jax.tree.map(jnp.add, x, y), jax.tree.map(lambda l: alpha * l, x), dot

        def weight_decay(params, rate):
            # decays every matrix, embedding tables included: wrong leaves, same shapes
            return jax.tree.map(lambda l: l * (1 - rate) if l.ndim == 2 else l, params)
    """
        },
    )
    result = grade_dir(folder, [f"{TOPIC}.tree_arith", f"{TOPIC}.weight_decay"])
    assert failing(result) == {"pytrees.tree_arith:jit", "pytrees.weight_decay:correct", "pytrees.weight_decay:jit"}
    assert "TracerArrayConversionError" in verdicts(result)["pytrees.tree_arith:jit"][2]
    assert "values are off" in verdicts(result)["pytrees.weight_decay:correct"][2]


def test_tree_arguments_are_described_by_shape_never_by_value():
    tree = {"w": np.array([[1.5, 2.5]], np.float32), "blocks": [np.int32(7), (np.zeros(3),)]}
    text = shapes((tree, 0.5))
    assert text == "({'w': float32[1, 2], 'blocks': [int32[], (float64[3],)]}, 0.5)"
    assert "1.5" not in text and "7" not in text
