"""Topic `primitives`: a new primitive and its rules (impl, abstract eval, lowering, JVP,
transpose, batching), and `jax.custom_jvp` for a function whose chain-rule gradient is NaN.

The task names the primitive (`multiply_add`), so that the grader can look for it in the jaxpr
the student's process reports. That report is ADVISORY (a note, no points): a compiled program
has no trace of a primitive lowered with `mlir.lower_fun` (only its `multiply` and `add`), nor
of `custom_jvp`, and the student's process could fake the jaxpr. What counts is trusted: the
exported program computes the function (`jit`), gradients and batches match (`grad`, `vmap`),
and the batched program binds once on the whole batch (no loop, few operations). The workers run with
64-bit floats on and the cases are float64, so that gradients are compared to 1e-9 (one
float32 edge case checks that the abstract evaluation keeps the input's dtype).
"""

from __future__ import annotations

import numpy as np

from autograder.requirements import AdvisedAnyPrimitive, AdvisedPrimitive, AvoidsOps, MaxOps
from autograder.spec import Case, Exercise, Grad, Topic, Vmap

F64 = np.float64
BINDS = AdvisedPrimitive("multiply_add", "bind `multiply_add_p`; the same arithmetic in jax.numpy is not the primitive")
TIGHT = 1e-9


def _vec(rng: np.random.Generator, n: int, dtype=F64) -> np.ndarray:
    return rng.normal(size=n).astype(dtype)


def _multiply_add(rng: np.random.Generator, size: int) -> Case:
    shape = (size,) if size < 50 else (size // 10, 10)
    return Case(tuple(rng.normal(size=shape).astype(F64) for _ in range(3)))


def _poly_eval(rng: np.random.Generator, size: int) -> Case:
    return Case((_vec(rng, size), np.asarray(rng.uniform(-1.2, 1.2), F64)))


def _axpy(rng: np.random.Generator, size: int) -> Case:
    return Case((np.asarray(rng.normal(), F64), _vec(rng, size), _vec(rng, size)))


def _safe_norm(rng: np.random.Generator, size: int) -> Case:
    return Case((_vec(rng, size),))


def _arr(*values: float, dtype=F64) -> np.ndarray:
    return np.array(values, dtype)


TOPIC = Topic(
    name="primitives",
    title="Custom primitives and custom derivatives",
    env={"JAX_ENABLE_X64": "1"},
    exercises=(
        Exercise(
            name="multiply_add",
            sample=_multiply_add,
            sizes=(3, 30, 200),
            edge_cases=(
                Case((_arr(1, 2, 3), _arr(4, 5, 6), _arr(1, 1, 1)), "the docstring's example"),
                Case((np.asarray(2.0), np.asarray(-3.0), np.asarray(0.5)), "0-d operands"),
                Case(tuple(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4) + k for k in range(3)),
                     "float32 operands stay float32"),
            ),
            requirements=(BINDS,),
            checks={"correct": 2, "jit": 2},
            hints=(
                "A primitive is an empty name until you register rules for it: one to compute eagerly, one for "
                "shapes and dtypes while tracing, one for XLA under jit. Then `multiply_add_p.bind(x, y, z)`.",
                "`multiply_add_p.def_impl(f)` with f computing x * y + z in jax.numpy; `def_abstract_eval(g)` with g "
                "returning `jax.core.ShapedArray(x.shape, x.dtype)`; `mlir.register_lowering(multiply_add_p, "
                "mlir.lower_fun(f, multiple_results=False))`.",
                "def fma(x, y, z): return x * y + z;  multiply_add_p.def_impl(fma);  multiply_add_p.def_abstract_eval("
                "lambda x, y, z: jax.core.ShapedArray(x.shape, x.dtype));  mlir.register_lowering(multiply_add_p, "
                "mlir.lower_fun(fma, multiple_results=False));  return multiply_add_p.bind(x, y, z)",
            ),
        ),
        Exercise(
            name="poly_eval",
            sample=_poly_eval,
            sizes=(1, 3, 40),
            edge_cases=(
                Case((_arr(1, 2, 3), np.asarray(0.5)), "the docstring's example"),
                Case((_arr(7), np.asarray(-2.0)), "a constant polynomial"),
                Case((_arr(2, 0, -1, 0), np.asarray(0.0)), "at x = 0"),
            ),
            rtol=TIGHT,
            atol=TIGHT,
            requirements=(BINDS,),
            checks={"correct": 1, "jit": 1, "grad": 3},
            options={"grad": Grad(argnums=(0, 1), rtol=TIGHT, atol=TIGHT)},
            hints=(
                "jax.grad linearizes (your JVP rule, which uses multiply_add on tangents) and then transposes "
                "every linear multiply_add (your transpose rule). Register both in `ad.primitive_jvps` and "
                "`ad.primitive_transposes` before the loop.",
                "JVP: instantiate the three tangents with `ad.instantiate_zeros`, return (multiply_add(x, y, z), "
                "multiply_add(x_dot, y, multiply_add(x, y_dot, z_dot))). Transpose: `ad.is_undefined_primal(v)` "
                "tells which inputs are unknown; the cotangent of x is ct * y, of y is ct * x, of z is ct.",
                "def transpose(ct, x, y, z): ct = ad.instantiate_zeros(ct); return (ct * y if "
                "ad.is_undefined_primal(x) else None, ct * x if ad.is_undefined_primal(y) else None, ct if "
                "ad.is_undefined_primal(z) else None);  then acc = jnp.zeros_like(x) and "
                "acc = multiply_add(acc, x, c) for each c (or jax.lax.scan).",
            ),
        ),
        Exercise(
            name="axpy",
            sample=_axpy,
            sizes=(2, 17, 100),
            edge_cases=(Case((np.asarray(2.0), _arr(1, 2), _arr(10, 10)), "the docstring's example"),),
            rtol=TIGHT,
            atol=TIGHT,
            requirements=(BINDS,),
            checks={"correct": 1, "jit": 1, "vmap": 3},
            options={"vmap": Vmap(in_axes=(0, 1, None), batch=8, requirements=(
                AdvisedPrimitive("multiply_add", "the batching rule must bind the primitive on the whole batch"),
                AvoidsOps(("while",), "bind the primitive once on the whole batch, not in a loop"),
                # measured (batch of 8): the reference and a right variant 5 operations, a Python
                # loop over the batch (primitives__shortcuts) 298
                MaxOps(40, "bind the primitive once on the whole batch; a Python loop over the batch "
                           "adds operations for every example"),
            ))},
            hints=(
                "vmap asks your batching rule for the batched result, given the batched arguments and where "
                "each one's batch axis is (None: that argument is the same for the whole batch).",
                "Register `batching.primitive_batchers[multiply_add_p] = rule`; in the rule, `jnp.moveaxis(a, d, 0)` "
                "for a batched argument, `jnp.broadcast_to(a, (size, *a.shape))` for an unbatched one, then one bind.",
                "def rule(args, dims): size = next(a.shape[d] for a, d in zip(args, dims) if d is not None); "
                "front = [jnp.broadcast_to(a, (size, *a.shape)) if d is None else jnp.moveaxis(a, d, 0) for a, d in "
                "zip(args, dims)]; return multiply_add(*front), 0",
            ),
        ),
        Exercise(
            name="safe_norm",
            sample=_safe_norm,
            sizes=(2, 3, 50),
            edge_cases=(
                Case((_arr(3, 4),), "the docstring's example"),
                Case((_arr(0, 0, 0),), "the zero vector"),
                Case((_arr(0, -2),), "one zero entry"),
            ),
            rtol=TIGHT,
            atol=TIGHT,
            requirements=(AdvisedAnyPrimitive(("custom_jvp_call", "custom_vjp_call"),
                                              "give the norm its own derivative with jax.custom_jvp (or jax.custom_vjp)"),),
            checks={"correct": 1, "jit": 1, "grad": 3},
            options={"grad": Grad(argnums=(0,), rtol=TIGHT, atol=TIGHT)},
            hints=(
                "The value is easy; the chain rule's derivative is not: at x = 0 it multiplies 0 by the infinite "
                "slope of sqrt. Tell JAX the derivative yourself.",
                "`@jax.custom_jvp` on a function computing the norm, then `@norm.defjvp` on a rule "
                "`(primals, tangents) -> (norm, vdot(x, x_dot) / norm)` that never divides by zero.",
                "n = norm(x); return n, jnp.vdot(x, x_dot) / jnp.where(n > 0, n, 1.0)",
            ),
        ),
    ),
)
