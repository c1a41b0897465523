"""Topic `precision`: the reference earns full marks, the stubs none, and every check fails the
crafted submission that deserves to fail it, and only it.

The crafted submissions are `tests/submissions/precision__*.py`: `one_fault_each` (the float32
form that reads like the formula: `log(sum(exp(x)))`, the one-pass variance, a scale that
promotes, the operands converted to float32 before the product), `more_faults` (a max-shift
with no guard for rows of `-inf`, a bfloat16 product returned as it is) and `written_differently`
(JAX's own `logsumexp`, Welford's update in a `scan`, the product in float32 rounded once,
`lax.dot_general`: outcomes are graded, not source). The families' own tests (the forms they
must catch, on every instance) run the forms in this process, without a grading.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helpers.grading import EXERCISES, TopicView, grade_dir, grade_variant, reference_solutions, short_of_full_marks
from jaxlings.grading import topics

TOPIC = "precision"
SEEDS = range(40)


@pytest.fixture(scope="module")
def reference(request):
    return reference_solutions(request, TOPIC)


@pytest.fixture(scope="module")
def one_fault_each(tmp_path_factory):
    return grade_variant(tmp_path_factory, TOPIC, "one_fault_each")


@pytest.fixture(scope="module")
def more_faults(tmp_path_factory):
    return grade_variant(tmp_path_factory, TOPIC, "more_faults", [f"{TOPIC}.logsumexp", f"{TOPIC}.mixed_matmul"])


@pytest.fixture(scope="module")
def written_differently(tmp_path_factory):
    return grade_variant(tmp_path_factory, TOPIC, "written_differently")


VIEW = TopicView(TOPIC)
failed, message, data = VIEW.failed, VIEW.message, VIEW.data


# -- the reference and the stubs ---------------------------------------------------------------


def test_reference_gets_full_marks(reference):
    assert short_of_full_marks(reference) == set(), [t.output for t in reference.tests if t.score < t.max_score]


def test_reference_product_is_one_dot_with_no_conversion(reference):
    facts = data(reference, "mixed_matmul", "jit")
    assert facts["ops"].get("dot_general") == 1 and not facts["ops"].get("convert")


def test_stubs_get_zero():
    result = grade_dir(EXERCISES, [TOPIC])
    assert result.score == 0 and result.max_score == 12
    assert all("not implemented yet" in t.output or "not judged until" in t.output for t in result.tests)


def test_written_differently_gets_full_marks(written_differently):
    assert short_of_full_marks(written_differently) == set(), [
        t.output for t in written_differently.tests if t.score < t.max_score
    ]


# -- one fault each ----------------------------------------------------------------------------


def test_naive_logsumexp_fails_correct_on_overflow(one_fault_each):
    assert failed(one_fault_each, "logsumexp") == {"correct", "jit"}
    text = message(one_fault_each, "logsumexp", "correct")
    assert text.startswith("a case like the docstring's example: entries near +-1000 (float32[")
    assert "the largest error is inf" in text


def test_one_pass_variance_fails_correct_at_a_large_mean(one_fault_each):
    assert failed(one_fault_each, "variance") == {"correct", "jit"}
    text = message(one_fault_each, "variance", "correct")
    assert "(tolerance 0.0001 + 0.01·|expected|)" in text, text


def test_promoting_scale_fails_correct_on_the_dtype(one_fault_each):
    assert failed(one_fault_each, "scale_keep_dtype") == {"correct", "jit"}
    text = message(one_fault_each, "scale_keep_dtype", "correct")
    assert "float16 times a float32 0-d array" in text and text.endswith("dtype float32, expected dtype float16")


def test_upcast_before_the_product_fails_jit_only(one_fault_each):
    assert failed(one_fault_each, "mixed_matmul") == {"jit"}
    text = message(one_fault_each, "mixed_matmul", "jit")
    assert "has `convert`" in text and "preferred_element_type=jnp.float32" in text
    assert data(one_fault_each, "mixed_matmul", "jit")["ops"]["convert"] == 2


# -- more faults -------------------------------------------------------------------------------


def test_unguarded_shift_fails_correct_on_a_masked_row(more_faults):
    assert failed(more_faults, "logsumexp") == {"correct", "jit"}
    assert message(more_faults, "logsumexp", "correct").startswith("a row entirely -inf (float32[")
    assert "NaN" in message(more_faults, "logsumexp", "correct")


def test_bfloat16_product_fails_correct(more_faults):
    assert failed(more_faults, "mixed_matmul") == {"correct", "jit"}


def test_bfloat16_product_is_reported_by_its_dtype(more_faults):
    assert message(more_faults, "mixed_matmul", "correct").endswith("dtype bfloat16, expected dtype float32")


# -- the families catch the forms they are built for, on every instance -------------------------


def _instances(exercise: str, label: str):
    ex = topics.load(TOPIC).exercise(exercise)
    edge = next(e for e in ex.edge_cases if e.label == label)
    yield edge.public.args
    for seed in SEEDS:
        yield edge.draw(np.random.default_rng(seed)).args


def _off(got, expected, rtol: float, atol: float) -> bool:
    got, expected = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    with np.errstate(invalid="ignore"):
        return bool((~(np.abs(got - expected) <= atol + rtol * np.abs(expected))).any())


@pytest.mark.parametrize(
    "label",
    [
        "the docstring's example: entries near +-1000",
        "large entries (exp overflows float32)",
        "very negative entries (exp underflows)",
    ],
)
def test_naive_logsumexp_is_not_finite_on_every_instance(label):
    naive = jax.jit(lambda x, axis: jnp.log(jnp.sum(jnp.exp(x), axis=axis)), static_argnums=1)
    for x, axis in _instances("logsumexp", label):
        assert not np.isfinite(np.asarray(naive(x, axis))).all(), (label, x)


def test_one_pass_variance_misses_the_tolerance_by_far_on_every_instance():
    """At mean 5e3 to 2e4: the one-pass form is off by more than 10 times the tolerance in some
    row of every instance, eagerly and jitted; two passes in float32 stay within a hundredth of it."""
    ex = topics.load(TOPIC).exercise("variance")
    one_pass = lambda x: jnp.mean(x * x, axis=-1) - jnp.mean(x, axis=-1) ** 2  # noqa: E731
    two_pass = jax.jit(lambda x: jnp.mean((x - jnp.mean(x, axis=-1, keepdims=True)) ** 2, axis=-1))
    for (x,) in _instances("variance", "mean 1e4, standard deviation 1"):
        exact = np.var(x.astype(np.float64), axis=-1)
        for f in (one_pass, jax.jit(one_pass)):
            assert _off(f(x), exact, 10 * ex.rtol, 10 * ex.atol), x.shape
        assert not _off(two_pass(x), exact, ex.rtol / 100, ex.atol), x.shape
