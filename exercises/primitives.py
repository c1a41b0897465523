# Topic `primitives`: replace each `raise NotImplementedError(...)` below with your code.
# Lesson: lessons/primitives.md. Check: `grade check primitives` (re-check on save: `grade watch primitives`).
# Stuck? `grade hint primitives.<function>`. Each docstring ends with what is graded; the rules all
# exercises share are in README.md ("How you are graded").
"""Custom primitives: teaching JAX a new operation, rule by rule.

Every `jax.numpy` function is built from *primitives*, the operations that JAX's transformations
know one by one: `mul`, `add`, `sin`, `dot_general`, `scan`, ... `jax.make_jaxpr(f)(x)` lists the
primitives a function binds. Each transformation is a table of rules, one per primitive, and a
new primitive works with a transformation only once you register its rule there:

    from jax.extend.core import Primitive
    from jax.interpreters import ad, batching, mlir

    p = Primitive("name")                        # the name shown in jaxprs
    p.def_impl(f)                                # eager evaluation: compute with jax.numpy
    p.def_abstract_eval(g)                       # shapes and dtypes only: ShapedArray -> ShapedArray
    mlir.register_lowering(p, mlir.lower_fun(f, multiple_results=False))   # under jax.jit
    ad.primitive_jvps[p] = jvp                   # forward mode, and so jax.grad
    ad.primitive_transposes[p] = transpose       # reverse mode of a primitive used linearly
    batching.primitive_batchers[p] = batch       # jax.vmap

`p.bind(*args)` applies the primitive: eagerly it calls the implementation; while tracing it
records one equation `name` in the jaxpr and asks the abstract evaluation for the result's
shape and dtype (`jax.core.ShapedArray(shape, dtype)`); the lowering tells XLA what to compile.

What changed since the seed tutorial. Its `from jax import core, xla` fails (there is no
`jax.xla`), and `jax.core` has no `Primitive` or `primitive_impls` any more:
  - the class is `jax.extend.core.Primitive`, with `def_impl` and `def_abstract_eval`;
  - XLA translation rules were replaced by MLIR lowerings: `mlir.lower_fun(f, ...)` turns a
    `jax.numpy` function into a lowering rule, registered with `mlir.register_lowering`;
  - a batching rule marks an argument without a batch axis by `None`
    (`batching.not_mapped` is gone);
  - a tangent that is known to be zero arrives as a symbolic `ad.Zero` object, not an array
    (`ad.instantiate_zeros(t)` makes it one), and a transpose rule sees the linear inputs it
    must produce cotangents for as `ad.UndefinedPrimal`s (`ad.is_undefined_primal(x)`).

Where the rules go in this file: a library registers them once, at import, right after
creating the primitive. Here the functions you write register the rules they need at the top
of their bodies, so that the file imports while an exercise is unfinished. Registering a rule
again replaces it by the same one in JAX's table: it costs a dictionary write.

Exercises 1 to 3 build one primitive, `multiply_add(x, y, z) = x * y + z` (a fused
multiply-add), and the grader looks for its name, `multiply_add`, in your jaxprs (advice: a
missing name is a note, not lost points, since a compiled program keeps no primitive's name;
the values, gradients and batches are what score). Exercise 4 is the other way to give a
function its own derivative, without a new primitive: `jax.custom_jvp`.

This topic runs with 64-bit floats on (`JAX_ENABLE_X64=1`; in your own session
`jax.config.update("jax_enable_x64", True)` before anything else), and its cases are float64:
gradients are compared tightly.
"""

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

# The primitive of exercises 1-3. Its name is what the grader looks for in your jaxprs.
multiply_add_p = Primitive("multiply_add")


def multiply_add(x, y, z):
    """A new primitive: `x * y + z`, eagerly and under `jax.jit`.

    `x`, `y`, `z` are arrays of one shape and one float dtype; return `x * y + z`, of that shape
    and dtype, computed by binding `multiply_add_p` (`multiply_add_p.bind(x, y, z)`). Before the
    bind, give the primitive
      - an implementation (what an eager bind computes; use `jax.numpy`),
      - an abstract evaluation (the output's `jax.core.ShapedArray`, from the inputs' shapes and
        dtypes alone; raise a TypeError when they disagree), and
      - a lowering, so that `jax.jit` can compile it: `mlir.lower_fun` of the implementation.

    Example: multiply_add([1., 2., 3.], [4., 5., 6.], [1., 1., 1.]) is [5., 11., 19.] (exactly), and
    `jax.make_jaxpr(multiply_add)(x, y, z)` shows one equation, `multiply_add`.

    Graded (4 points):
      - correct (2): make the output equal the reference's¹, called as written on 3 edge cases
        ("the docstring's example", "0-d operands", "float32 operands stay float32"; graded on
        other inputs of each kind) and 3 random cases.
      - jit (2): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); (advice, no points:
        the jaxpr binds `multiply_add`).
      ¹ rtol 1e-6, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("multiply_add: your code here")


def poly_eval(coeffs, x):
    """Differentiating through the primitive: a JVP rule, and a transpose rule for `jax.grad`.

    `coeffs` is a float64 vector of n >= 1 coefficients, highest degree first (as in
    `numpy.polyval`), and `x` a float64 scalar (0-d array). Return p(x), a 0-d float64 array,
    by Horner's rule with one `multiply_add` per coefficient:

        acc = 0;  for c in coeffs:  acc = multiply_add(acc, x, c)

    (a Python loop or `jax.lax.scan` over `coeffs`, your choice). So that `jax.grad` works with
    respect to both `coeffs` and `x`, first register two rules for `multiply_add_p`:
      - a JVP rule `jvp(primals, tangents) -> (out, out_dot)`, the tangent written with
        `multiply_add` itself: d(x*y + z) = multiply_add(x_dot, y, multiply_add(x, y_dot, z_dot)).
        A tangent that is known to be zero arrives as an `ad.Zero`: `ad.instantiate_zeros` it;
      - a transpose rule `transpose(ct, x, y, z) -> (ct_x, ct_y, ct_z)`. In the tangent above
        the primitive is used linearly: z and one of x, y are unknowns (`ad.UndefinedPrimal`),
        the other factor is a known array. Return the cotangent of each unknown input (an
        array of its shape), and None for a known one. `jax.grad` differentiates forward with
        your JVP rule, then runs this rule backwards through every linear `multiply_add`.

    Example: poly_eval([1., 2., 3.], 0.5) is 4.25 (exactly); its gradient with respect to (coeffs, x)
    is ([0.25, 0.5, 1.], 3.0).

    Graded (5 points):
      - correct (1): make the output equal the reference's¹, called as written on 3 edge cases
        ("the docstring's example", "a constant polynomial", "at x = 0"; graded on other inputs
        of each kind) and 3 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); (advice, no points:
        the jaxpr binds `multiply_add`).
      - grad (3): make `jax.grad` with respect to `coeffs` and `x` equal the reference's
        gradient¹ on every case.
      ¹ rtol 1e-9, atol 1e-9 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("poly_eval: your code here")


def axpy(alpha, x, y):
    """Batching the primitive: a rule for `jax.vmap`, with no loop over the batch.

    `alpha` is a float64 scalar (0-d array), `x` and `y` float64 vectors of one length. Return
    `alpha * x + y` with ONE `multiply_add` (broadcast `alpha` to `x`'s shape first).

    The grader calls `jax.vmap(axpy, in_axes=(0, 1, None))`: a batch of alphas, a batch of x's
    stacked along their LAST axis, and one y shared by the whole batch. `vmap` then binds
    `multiply_add_p` on batched arguments and asks for its batching rule, which you register:
    `batch(args, dims) -> (out, out_dim)`, where `dims[i]` is the axis of `args[i]` that holds
    the batch, or None when `args[i]` has none. Move every batch axis to the front
    (`jnp.moveaxis`), give the unbatched arguments a leading axis of the batch's size
    (`jnp.broadcast_to`), bind the primitive ONCE on the whole batch, and say where the
    output's batch axis is.

    Example: axpy(2., [1., 2.], [10., 10.]) is [12., 14.] (exactly).

    Graded (5 points):
      - correct (1): make the output equal the reference's¹, called as written on 1 edge case
        ("the docstring's example"; graded on other inputs of each kind) and 3 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); (advice, no points:
        the jaxpr binds `multiply_add`).
      - vmap (3): make `jax.vmap(axpy, in_axes=(0, 1, None))` over a batch of 8 cases equal the
        reference's¹; the batched program, jitted: no `while` loop (`lax.fori_loop`, `lax.scan`,
        `lax.while_loop`); at most 40 operations (no Python loop unrolled into it); (advice, no
        points: the jaxpr binds `multiply_add`).
      ¹ rtol 1e-9, atol 1e-9 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("axpy: your code here")


def safe_norm(x):
    """A custom derivative for a numerically delicate function: the norm at zero.

    `x` is a float64 vector. Return its Euclidean norm `sqrt(sum(x**2))`, a 0-d float64 array,
    whose gradient is `x / norm` where the norm is positive and ZERO at `x = 0`.

    Differentiating `jnp.sqrt(jnp.sum(x**2))` (or `jnp.linalg.norm`) by the chain rule gives
    `(1 / (2 * sqrt(0))) * 0` = `inf * 0` = NaN at zero, and one NaN gradient poisons a whole
    training step (the lesson's section "The norm at zero" shows it, and why a `jnp.where`
    around the result does not help). Decorate the computation with `jax.custom_jvp` and give
    it its own JVP rule (`@f.defjvp`): out_dot = `vdot(x, x_dot) / norm`, and 0 where the norm is 0 (divide by
    `jnp.where(norm > 0, norm, 1)` so that no NaN is ever computed). `jax.custom_vjp`, with
    forward and backward functions, is accepted too.

    Example: safe_norm([3., 4.]) is 5. with gradient [0.6, 0.8] (to float64 rounding: 3 / 5 gives
    0.6000000000000001); safe_norm([0., 0.]) is 0. with gradient [0., 0.].

    Graded (5 points):
      - correct (1): make the output equal the reference's¹, called as written on 3 edge cases
        ("the docstring's example", "the zero vector", "one zero entry"; graded on other inputs
        of each kind) and 3 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); (advice, no points:
        the jaxpr binds `custom_jvp_call` or `custom_vjp_call`).
      - grad (3): make `jax.grad` with respect to `x` equal the reference's gradient¹ on every
        case.
      ¹ rtol 1e-9, atol 1e-9 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("safe_norm: your code here")
