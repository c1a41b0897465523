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

from jaxlings.grading.checks import Correct, Grad, Jit, Vmap
from jaxlings.grading.requirements import AdvisedAnyPrimitive, AdvisedPrimitive, AvoidsOps, MaxOps
from jaxlings.grading.spec import Case, Edge, Exercise, Topic

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


# -- edge families: each edge case's instances in a graded run (`Edge`), never its public one


def _ints(rng: np.random.Generator, *shape: int, lo: int = -4, hi: int = 5, dtype=F64) -> np.ndarray:
    """Small integers: exact, so that zeros stay exact zeros."""
    return np.asarray(rng.integers(lo, hi, shape), dtype)


def _length(rng: np.random.Generator, lo: int = 1, hi: int = 6) -> int:
    return int(rng.integers(lo, hi))


def _three_vectors(rng: np.random.Generator) -> Case:
    n = _length(rng)
    return Case(tuple(_ints(rng, n) for _ in range(3)))


def _three_scalars(rng: np.random.Generator) -> Case:
    return Case(tuple(np.asarray(rng.integers(-8, 9) / 2, F64) for _ in range(3)))


def _three_float32(rng: np.random.Generator) -> Case:
    shape = (_length(rng), _length(rng))
    return Case(tuple(rng.normal(size=shape).astype(np.float32) for _ in range(3)))


def _polynomial(rng: np.random.Generator, degree: int, x: float | None = None) -> Case:
    at = x if x is not None else rng.integers(-8, 9) / 4
    return Case((_ints(rng, degree + 1), np.asarray(at, F64)))


def _exact_norm(rng: np.random.Generator) -> Case:
    """A vector of integer norm (a Pythagorean pair or triple, signed, shuffled)."""
    entries = [(3, 4), (6, 8), (5, 12), (1, 2, 2), (2, 3, 6), (8, 15)][rng.integers(6)]
    return Case((rng.permutation(np.array(entries, F64) * rng.choice([-1, 1], len(entries))),))


def _one_zero_entry(rng: np.random.Generator) -> Case:
    n = _length(rng, 2)
    x = _ints(rng, n, lo=1, hi=5) * rng.choice([-1, 1], n)
    x[rng.integers(n)] = 0.0
    return Case((x,))


TOPIC = Topic(
    name="primitives",
    title="Custom primitives and custom derivatives",
    env={"JAX_ENABLE_X64": "1"},
    platform="cpu",
    platform_reason="its cases are float64 (derivatives checked to float64 round-off), which a TPU does not compute",
    exercises=(
        Exercise(
            name="multiply_add",
            sample=_multiply_add,
            sizes=(3, 30, 200),
            edge_cases=(
                Edge(Case((_arr(1, 2, 3), _arr(4, 5, 6), _arr(1, 1, 1)), "the docstring's example"), _three_vectors),
                Edge(Case((np.asarray(2.0), np.asarray(-3.0), np.asarray(0.5)), "0-d operands"), _three_scalars),
                Edge(
                    Case(
                        tuple(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4) + k for k in range(3)),
                        "float32 operands stay float32",
                    ),
                    _three_float32,
                ),
            ),
            checks=(Correct(2), Jit(2, requirements=(BINDS,))),
            hints=(
                "A primitive is an empty name until you register rules for it: one to compute eagerly, one for shapes "
                "and dtypes while tracing, one for XLA under jit. Applying it is `bind` on the primitive, with the "
                "operands.",
                "`multiply_add_p.def_impl` takes a jax.numpy function of (x, y, z); `def_abstract_eval` takes a "
                "function of the inputs' abstract values that returns a `jax.core.ShapedArray(shape, dtype)`; "
                "`mlir.register_lowering` takes the primitive and `mlir.lower_fun(impl, multiple_results=False)`.",
                "Write the implementation once and reuse it for the eager rule and for the lowering. The abstract "
                "rule compares the three shapes and dtypes, raises `TypeError` on a mismatch and otherwise describes "
                "the output. Register all three, then bind: computing `x * y + z` directly gives the numbers but no "
                "`multiply_add` in the jaxpr.",
            ),
        ),
        Exercise(
            name="poly_eval",
            sample=_poly_eval,
            sizes=(1, 3, 40),
            edge_cases=(
                Edge(
                    Case((_arr(1, 2, 3), np.asarray(0.5)), "the docstring's example"),
                    lambda rng: _polynomial(rng, _length(rng, 1, 5)),
                ),
                Edge(Case((_arr(7), np.asarray(-2.0)), "a constant polynomial"), lambda rng: _polynomial(rng, 0)),
                Edge(
                    Case((_arr(2, 0, -1, 0), np.asarray(0.0)), "at x = 0"),
                    lambda rng: _polynomial(rng, _length(rng, 0, 5), 0.0),
                ),
            ),
            rtol=TIGHT,
            atol=TIGHT,
            checks=(
                Correct(1),
                Jit(1, requirements=(BINDS,)),
                Grad(3, argnums=(0, 1), rtol=TIGHT, atol=TIGHT),
            ),
            hints=(
                "jax.grad linearizes (your JVP rule, which uses multiply_add on tangents) and then transposes every "
                "linear multiply_add (your transpose rule). Register both in `ad.primitive_jvps` and "
                "`ad.primitive_transposes` before the loop.",
                "JVP: `ad.instantiate_zeros` turns each symbolic-zero tangent into an array; the primal output is one "
                "`multiply_add`, the tangent is the product rule written with nested `multiply_add`s (the docstring "
                "spells it out). Transpose: `ad.is_undefined_primal(v)` tells which inputs are the unknowns.",
                "Transpose: in the linear program, the output is linear in each unknown input (z, and x or y while "
                "the other is known); each unknown's cotangent is the output's cotangent sent back through that "
                "linear map, shaped like the input, and a known input gets None. Instantiate the cotangent first. "
                "Then Horner from zeros shaped like x, one `multiply_add` per coefficient, in a Python loop or a "
                "`lax.scan` over the coefficients.",
            ),
        ),
        Exercise(
            name="axpy",
            sample=_axpy,
            sizes=(2, 17, 100),
            edge_cases=(
                Edge(
                    Case((np.asarray(2.0), _arr(1, 2), _arr(10, 10)), "the docstring's example"),
                    lambda rng: Case((np.asarray(rng.integers(-8, 9) / 2, F64), *_three_vectors(rng).args[:2])),
                ),
            ),
            rtol=TIGHT,
            atol=TIGHT,
            checks=(
                Correct(1),
                Jit(1, requirements=(BINDS,)),
                Vmap(
                    3,
                    in_axes=(0, 1, None),
                    batch=8,
                    requirements=(
                        AdvisedPrimitive(
                            "multiply_add", "the batching rule must bind the primitive on the whole batch"
                        ),
                        AvoidsOps(("while",), "bind the primitive once on the whole batch, not in a loop"),
                        # measured (batch of 8): the reference and a right variant 5 operations, a Python
                        # loop over the batch (primitives__shortcuts) 298
                        MaxOps(
                            40,
                            "bind the primitive once on the whole batch; a Python loop over the batch "
                            "adds operations for every example",
                        ),
                    ),
                ),
            ),
            hints=(
                "vmap asks your batching rule for the batched result, given the batched arguments and where each "
                "one's batch axis is (None: that argument is the same for the whole batch).",
                "Register `batching.primitive_batchers[multiply_add_p] = rule`; in the rule, `jnp.moveaxis` brings a "
                "batched argument's axis to the front, and `jnp.broadcast_to` gives an unbatched one a leading axis "
                "of the batch's size.",
                "The rule: find the batch size, bring every argument to one layout (batch axis in front; unbatched "
                "ones broadcast to it), one `multiply_add` on the lot, and report where the output's batch axis is. "
                "`axpy` itself needs `alpha` at `x`'s shape before its single `multiply_add`.",
            ),
        ),
        Exercise(
            name="safe_norm",
            sample=_safe_norm,
            sizes=(2, 3, 50),
            edge_cases=(
                Edge(Case((_arr(3, 4),), "the docstring's example"), _exact_norm),
                Edge(Case((_arr(0, 0, 0),), "the zero vector"), lambda rng: Case((np.zeros(_length(rng), F64),))),
                Edge(Case((_arr(0, -2),), "one zero entry"), _one_zero_entry),
            ),
            rtol=TIGHT,
            atol=TIGHT,
            checks=(
                Correct(1),
                Jit(
                    1,
                    requirements=(
                        AdvisedAnyPrimitive(
                            ("custom_jvp_call", "custom_vjp_call"),
                            "give the norm its own derivative with jax.custom_jvp (or jax.custom_vjp)",
                        ),
                    ),
                ),
                Grad(3, argnums=(0,), rtol=TIGHT, atol=TIGHT),
            ),
            hints=(
                "The value is easy; the chain rule's derivative is not: at x = 0 it multiplies 0 by the infinite "
                "slope of sqrt. Tell JAX the derivative yourself.",
                "Decorate the norm function with `jax.custom_jvp`, then register its rule with that function's `.defjvp` "
                "decorator; the rule maps `(primals, tangents)` to `(primal_out, tangent_out)`, the tangent being "
                "`vdot(x, x_dot) / norm`.",
                "In the rule, get the norm by calling the decorated function, and divide by a denominator that "
                "`jnp.where` replaces by 1 where the norm is 0, so no NaN is ever formed. A `where` applied after the "
                "division still leaks NaN into the gradient through the side it discards.",
            ),
        ),
    ),
)
