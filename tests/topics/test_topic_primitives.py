"""Topic `primitives`: the reference passes (and its rules agree with finite differences),
right answers written differently pass, and for every check a submission that deserves to
fail it fails it, and only it.

Every verdict asserted here rests on values and counts (the operations of the exported
program, analysed on the trusted side), never on wall time. Whether the primitive is bound, and
whether a custom derivative is used, is read from the jaxpr the student's process reports: that
is advice (a note in the message, no points), since a compiled program shows neither and the
student's process could fake the jaxpr.
"""

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from helpers.grading import (
    ROOT,
    SOLUTIONS,
    SUBMISSIONS,
    extra_data,
    failing,
    failing_in,
    grade_dir,
    grade_variant,
    reference_solutions,
    short_of_full_marks,
    verdicts,
    write_submission,
)

TOPIC = "primitives"


def mine(result, exercise):
    """The failing tests of one exercise."""
    return failing_in(result, TOPIC, exercise)


def data(result, name):
    """The measured figures of one test."""
    return extra_data(result, f"{TOPIC}.{name}")


def message(result, name):
    return verdicts(result)[f"{TOPIC}.{name}"][2]


def graded(tmp_path_factory, variant):
    return grade_variant(tmp_path_factory, TOPIC, variant)


@pytest.fixture(scope="module")
def reference(request):
    return reference_solutions(request, TOPIC)


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    return graded(tmp_path_factory, "one_fault_each")


@pytest.fixture(scope="module")
def shortcuts(tmp_path_factory):
    return graded(tmp_path_factory, "shortcuts")


def test_reference_gets_full_marks_and_binds_its_primitive(reference):
    assert short_of_full_marks(reference) == set(), [t.output for t in reference.tests if t.score < t.max_score]
    assert reference.max_score == 19  # every point earned, within the clock's noise (above)
    assert data(reference, "multiply_add:jit")["advisory"]["primitives"] == {"multiply_add": 1}
    for ex in ("poly_eval", "axpy"):
        assert data(reference, f"{ex}:jit")["advisory"]["primitives"]["multiply_add"] == 1
    assert data(reference, "safe_norm:jit")["advisory"]["primitives"]["custom_jvp_call"] == 1
    assert "advice" not in message(reference, "multiply_add:jit") + message(reference, "safe_norm:jit")
    batched = data(reference, "axpy:vmap")
    assert batched["advisory"]["primitives"]["multiply_add"] == 1
    assert batched["n_ops"] == batched["reference_n_ops"] <= 6 and "while" not in batched["ops"]


def test_reference_rules_agree_with_finite_differences():
    """The reference's JVP and transpose rules against central differences in float64 (first
    and second order, forward and reverse mode), its batching rule against a loop, and the
    norm's gradient finite (zero) at zero."""
    script = textwrap.dedent(f"""
        import importlib.util
        import jax, jax.numpy as jnp, numpy as np
        from jax.test_util import check_grads
        assert jax.config.jax_enable_x64
        spec = importlib.util.spec_from_file_location("ref", {str(SOLUTIONS / "primitives.py")!r})
        ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)
        rng = np.random.default_rng(0)
        c, x = jnp.asarray(rng.normal(size=6)), jnp.asarray(0.7)
        np.testing.assert_allclose(ref.poly_eval(c, x), np.polyval(c, 0.7), rtol=1e-12)
        check_grads(ref.poly_eval, (c, x), order=2, modes=("fwd", "rev"), eps=1e-5)
        np.testing.assert_allclose(jax.grad(ref.poly_eval, 1)(c, x), np.polyval(np.polyder(c), 0.7), rtol=1e-12)
        a, v, w = jnp.asarray(1.5), jnp.asarray(rng.normal(size=5)), jnp.asarray(rng.normal(size=5))
        check_grads(ref.axpy, (a, v, w), order=2, modes=("fwd", "rev"))
        check_grads(ref.safe_norm, (v,), order=2, modes=("fwd", "rev"))
        assert (jax.grad(ref.safe_norm)(jnp.zeros(4)) == 0).all()
        A, X = jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=(5, 3)))
        batched = jax.vmap(ref.axpy, in_axes=(0, 1, None))(A, X, w)
        np.testing.assert_allclose(batched, np.stack([A[i] * X[:, i] + w for i in range(3)]), rtol=1e-12)
        print("ok")
    """)
    env = {**os.environ, "JAX_ENABLE_X64": "1", "JAX_PLATFORMS": "cpu"}
    run = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]


def test_right_answers_written_differently_get_full_marks(tmp_path):
    """Rules registered at import, a Python loop, a JVP in jax.numpy (no transpose needed),
    `batching.bdim_at_front`, and `jax.custom_vjp`."""
    folder = tmp_path / "submission"
    folder.mkdir()
    shutil.copyfile(SUBMISSIONS / f"{TOPIC}__written_differently.py", folder / f"{TOPIC}.py")
    result = grade_dir(folder, [TOPIC])
    assert short_of_full_marks(result) == set(), [t.output for t in result.tests if t.score < t.max_score]
    assert data(result, "safe_norm:jit")["advisory"]["primitives"]["custom_vjp_call"] == 1


def test_plain_jax_numpy_keeps_the_points_with_advice(faults):
    # the compiled program of x * y + z is the primitive's: only the (advisory) jaxpr tells them apart
    assert mine(faults, "multiply_add") == set()
    assert "(advice, no points: the jaxpr has no `multiply_add`" in message(faults, "multiply_add:jit")
    assert "multiply_add" not in data(faults, "multiply_add:jit")["advisory"]["primitives"]


def test_wrong_transpose_fails_grad_only(faults):
    assert mine(faults, "poly_eval") == {f"{TOPIC}.poly_eval:grad"}
    # the first wrong case may have one wrong entry ("the value is off") or several
    assert re.search(r"values? (is|are) off", message(faults, "poly_eval:grad"))


def test_missing_batching_rule_fails_vmap_only(faults):
    assert mine(faults, "axpy") == {f"{TOPIC}.axpy:vmap"}
    assert "Batching rule for 'multiply_add' not implemented" in message(faults, "axpy:vmap")


def test_chain_rule_formula_as_custom_rule_gives_nan_and_fails_grad_only(faults):
    assert mine(faults, "safe_norm") == {f"{TOPIC}.safe_norm:grad"}
    assert "NaN" in message(faults, "safe_norm:grad") and "zero vector" in message(faults, "safe_norm:grad")


def test_missing_lowering_fails_jit_only(shortcuts):
    assert mine(shortcuts, "multiply_add") == {f"{TOPIC}.multiply_add:jit"}
    assert "MLIR translation rule for primitive 'multiply_add' not found" in message(shortcuts, "multiply_add:jit")


def test_missing_transpose_rule_fails_grad_only(shortcuts):
    assert mine(shortcuts, "poly_eval") == {f"{TOPIC}.poly_eval:grad"}
    assert "Transpose rule" in message(shortcuts, "poly_eval:grad")


def test_python_loop_over_the_batch_fails_vmap_only(shortcuts):
    assert mine(shortcuts, "axpy") == {f"{TOPIC}.axpy:vmap"}
    batched = data(shortcuts, "axpy:vmap")
    assert batched["advisory"]["primitives"]["multiply_add"] == 8  # one bind per example of the batch of 8
    assert batched["n_ops"] > 40 and "compiled program has" in message(shortcuts, "axpy:vmap")
    assert "operations" in message(shortcuts, "axpy:vmap")


def test_finite_gradient_without_a_custom_derivative_keeps_the_points_with_advice(shortcuts):
    assert mine(shortcuts, "safe_norm") == set()
    assert "(advice, no points: the jaxpr has none of custom_jvp_call" in message(shortcuts, "safe_norm:jit")


def test_wrong_abstract_eval_fails_jit_and_naive_norm_fails_grad(tmp_path):
    """An abstract evaluation that always says float32: eager is right, jit cannot lower it.
    The textbook norm: NaN gradient at zero (grad), and no custom derivative (advice on jit)."""
    folder = write_submission(
        tmp_path,
        {
            TOPIC: """
        import jax, jax.numpy as jnp
        from jax.extend.core import Primitive
        from jax.interpreters import mlir

        multiply_add_p = Primitive("multiply_add")

        def multiply_add(x, y, z):
            fma = lambda x, y, z: x * y + z
            multiply_add_p.def_impl(fma)
            multiply_add_p.def_abstract_eval(lambda x, y, z: jax.core.ShapedArray(x.shape, jnp.float32))
            mlir.register_lowering(multiply_add_p, mlir.lower_fun(fma, multiple_results=False))
            return multiply_add_p.bind(x, y, z)

        def safe_norm(x):
            return jnp.linalg.norm(x)
    """
        },
    )
    result = grade_dir(folder, [f"{TOPIC}.multiply_add", f"{TOPIC}.safe_norm"])
    assert failing(result) == {f"{TOPIC}.multiply_add:jit", f"{TOPIC}.safe_norm:grad"}
    assert "(advice, no points: the jaxpr has none of custom_jvp_call" in message(result, "safe_norm:jit")
    assert "f32" in message(result, "multiply_add:jit") or "float32" in message(result, "multiply_add:jit")
    assert "NaN" in message(result, "safe_norm:grad")
