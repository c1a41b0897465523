"""Topic `precision`: float32 by default, overflow and cancellation, promotion and weak types,
bfloat16 with float32 accumulation.

Every verdict here is `correct` on edge families built to break the float32 form that reads
like the formula (and `jit`'s program for the mixed-precision product); nothing is timed. What
the edges catch, measured (jax 0.10.2, CPU, x64 off, 300 instances of each family):

- `logsumexp`: `log(sum(exp(x)))` is `inf` on every instance of the large-entries families
  (entries of 200 or more; `exp` overflows float32 past 88.7) and `-inf` on the very negative
  one (entries below -200; `exp` underflows below -103), each with two entries or more along
  the axis (for one, XLA simplifies `log(exp(x))` to `x`); the max-shifted form without a
  guard is NaN on a row that is entirely `-inf`.
- `variance`: on data of mean +-5e3 to +-2e4 and standard deviation 0.5 to 2, 16 to 1024 values
  per row, the one-pass `mean(x**2) - mean(x)**2` is off by at least 53 % of the variance on
  every instance (its worst row; up to 400 times it), the reference's two passes by at most
  2.1e-5 against float64, Welford's running update by at most 1.5e-3, a shift by the first entry
  by 2.1e-5: the tolerance, a hundredth of the variance (rtol 1e-2), passes every stable method
  and fails the one-pass formula by x50 at least.
- `scale_keep_dtype`: `x * s` with `s` a float32 0-d array returns float32 for a float16 `x`
  (a dtype mismatch); with a Python float it keeps `x`'s dtype (weak typing), so the cases hold
  both. Values are compared at rtol 1e-2: rounding `s` to `x`'s dtype first, or multiplying in
  float32 and rounding once, differ by an ulp of `x`'s dtype at most (float16: 2**-10 relative;
  the same tolerance holds bfloat16's 2**-7).
- `mixed_matmul`: a bfloat16 result fails on its dtype. Converting the operands to float32
  before the product gives the same values (bfloat16 products are exact in float32; measured
  1.8e-5 relative apart at k = 128, summation order), so `jit` reads the program instead:
  one `dot_general`, and no `convert` (the reference's program is the single `dot_general` of
  bfloat16 operands with a float32 result; an upcast adds two converts, a bfloat16 product
  converted afterwards one, which XLA's CPU compiler folds back into the float32 product, so
  its values pass).
"""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np
from numpy.typing import DTypeLike

from jaxlings.grading.checks import Correct, Jit
from jaxlings.grading.requirements import AvoidsOps, UsesOp
from jaxlings.grading.spec import Case, Edge, Exercise, Topic

BF16 = np.dtype(ml_dtypes.bfloat16)


def _f32(rng: np.random.Generator, *shape: int, scale: float = 1.0, loc: float = 0.0) -> np.ndarray:
    return (loc + scale * rng.normal(size=shape)).astype(np.float32)


def _logsumexp(rng: np.random.Generator, size: int) -> Case:
    """x (size, 7), reduced along axis 1 at odd sizes and 0 at even ones."""
    return Case((_f32(rng, size, 7, scale=3.0), 1 if size % 2 else 0))


def _variance(rng: np.random.Generator, size: int) -> Case:
    """Rows of 32 values of mean within a few units of 0 and spread 0.5 to 2."""
    loc = rng.normal(scale=2.0, size=(size, 1))
    return Case(((loc + rng.uniform(0.5, 2.0, (size, 1)) * rng.normal(size=(size, 32))).astype(np.float32),))


# (x's dtype, whether s is a Python float) by size: the largest the case the exported program
# is taken from, float16 times a float32 0-d array; bfloat16 follows the same promotion rules.
SCALE_KINDS = {1: (np.float32, False), 3: (BF16, True), 17: (np.float32, True), 100: (np.float16, False)}


def _scale(rng: np.random.Generator, dtype: DTypeLike, python: bool, *shape: int) -> Case:
    x = rng.normal(size=shape).astype(dtype)
    s = float(rng.choice([-1, 1]) * rng.uniform(0.125, 8.0))
    return Case((x, s if python else np.array(s, np.float32)))


def _scale_keep_dtype(rng: np.random.Generator, size: int) -> Case:
    dtype, python = SCALE_KINDS[size]
    return _scale(rng, dtype, python, size, 3)


def _mixed_matmul(rng: np.random.Generator, size: int) -> Case:
    """a (n, 4n) and b (4n, m) in bfloat16, b scaled so that the outputs are of order 1."""
    n, k, m = size, 4 * size, max(1, size // 2)
    return Case((rng.normal(size=(n, k)).astype(BF16), (rng.normal(size=(k, m)) * k**-0.5).astype(BF16)))


# -- edge families: each edge case's instances in a graded run (`Edge`), never its public one


def _rows_near(rng: np.random.Generator) -> Case:
    """The docstring's example's structure: rows of entries near +-c (c of 200 to 5000, small
    integer offsets), reduced along axis 1."""
    r, n = int(rng.integers(2, 5)), int(rng.integers(2, 7))
    signs = np.array([1, -1] + list(rng.choice([-1, 1], r - 2)))[:, None]
    x = signs * rng.integers(200, 5000, (r, 1)) + rng.integers(0, 4, (r, n))
    return Case((x.astype(np.float32), 1))


def _large_3d(rng: np.random.Generator) -> Case:
    """Entries of 200 or more (exp overflows float32 past 88.7) in three dimensions, axis 0 or 2,
    at least two entries along it (XLA simplifies `log(exp(x))` to `x` for one)."""
    axis = int(rng.choice([0, 2]))
    shape = [int(d) for d in rng.integers(1, 5, 3)]
    shape[axis] = int(rng.integers(2, 5))
    x = rng.integers(200, 3000) + rng.integers(0, 8, shape)
    return Case((x.astype(np.float32), axis))


def _very_negative(rng: np.random.Generator) -> Case:
    """Entries of -200 or less (exp underflows to 0 below -103), reduced along axis 0 (two
    entries or more)."""
    r, c = int(rng.integers(2, 6)), int(rng.integers(1, 5))
    x = -rng.integers(200, 3000) - rng.integers(0, 8, (r, c))
    return Case((x.astype(np.float32), 0))


def _masked_row(rng: np.random.Generator) -> Case:
    """Some rows entirely -inf (the answer: -inf), the others ordinary, along axis 1; at least
    one of each."""
    r, c = int(rng.integers(2, 6)), int(rng.integers(1, 6))
    x = rng.integers(-4, 5, (r, c)).astype(np.float32)
    masked = rng.random(r) < 0.5
    masked[0], masked[-1] = True, False
    x[masked] = -np.inf
    return Case((x, 1))


def _consecutive(rng: np.random.Generator) -> Case:
    """The docstring's example's structure: consecutive integers from c of 5,000 to 20,000 (exact
    in float32), a row or a few."""
    r, n = int(rng.integers(1, 4)), int(rng.integers(3, 9))
    start = rng.integers(5000, 20000, (r, 1))
    return Case(((start + np.arange(n)).astype(np.float32),))


def _large_mean(rng: np.random.Generator) -> Case:
    """Mean +-5e3 to +-2e4, standard deviation 0.5 to 2, 16 to 1024 values per row."""
    r, c = int(rng.integers(1, 5)), int(rng.integers(16, 1025))
    mean = float(rng.choice([-1, 1]) * rng.uniform(5e3, 2e4))
    return Case((_f32(rng, r, c, scale=float(rng.uniform(0.5, 2.0)), loc=mean),))


def _constant_rows(rng: np.random.Generator) -> Case:
    """Every row one integer of up to 10,000 repeated: variance 0."""
    r, c = int(rng.integers(1, 4)), int(rng.integers(2, 65))
    return Case((np.repeat(rng.integers(-10000, 10001, (r, 1)), c, axis=1).astype(np.float32),))


def _scale_like(dtype: DTypeLike, python: bool) -> Callable[[np.random.Generator], Case]:
    def make(rng: np.random.Generator) -> Case:
        return _scale(rng, dtype, python, *(int(d) for d in rng.integers(1, 5, int(rng.integers(1, 3)))))

    return make


def _bf16_steps(rng: np.random.Generator) -> Case:
    """The docstring's example's structure: a's entries 1 + j/128 (exact in bfloat16), b's
    ones, k of 3 to 9, so that the float32 sums are exact and bfloat16 would round them."""
    n, k, m = int(rng.integers(1, 4)), int(rng.integers(3, 10)), int(rng.integers(1, 4))
    a = 1.0 + rng.integers(1, 8, (n, k)) / 128
    return Case((a.astype(BF16), np.ones((k, m), BF16)))


def _long_sums(rng: np.random.Generator) -> Case:
    """k of 1,024 to 4,096: sums far longer than bfloat16's 8 bits can hold."""
    n, k, m = int(rng.integers(1, 5)), int(rng.integers(1024, 4097)), int(rng.integers(1, 5))
    return Case((rng.normal(size=(n, k)).astype(BF16), (rng.normal(size=(k, m)) * k**-0.5).astype(BF16)))


BF16_STEP = np.full((1, 3), 1.0078125, BF16)

MIXED = (
    UsesOp("dot_general", "multiply with one dot (`jnp.dot`, `@`, `jnp.einsum`, `lax.dot_general`)"),
    AvoidsOps(
        ("convert",),
        "multiply the bfloat16 operands as they are and ask the dot for a float32 result "
        "(`preferred_element_type=jnp.float32`): converting the operands to float32 first makes it a float32 "
        "product, which reads twice the bytes (and on a TPU runs below the bfloat16 rate), and converting a "
        "bfloat16 product afterwards rounds it first",
    ),
)

TOPIC = Topic(
    name="precision",
    title="Numerical precision: float32, stable formulas, promotion and weak types, bfloat16",
    exercises=(
        Exercise(
            name="logsumexp",
            sample=_logsumexp,
            sizes=(1, 4, 17, 100),
            static_argnums=(1,),
            edge_cases=(
                Edge(
                    Case(
                        (np.array([[1000.0, 1000.0], [-1000.0, -1000.0]], np.float32), 1),
                        "the docstring's example: entries near +-1000",
                    ),
                    _rows_near,
                ),
                Edge(
                    Case((np.full((2, 1, 3), 500.0, np.float32), 0), "large entries (exp overflows float32)"),
                    _large_3d,
                ),
                Edge(
                    Case((np.array([[-300.0], [-301.0]], np.float32), 0), "very negative entries (exp underflows)"),
                    _very_negative,
                ),
                Edge(
                    Case((np.array([[-np.inf, -np.inf], [0.0, 1.0]], np.float32), 1), "a row entirely -inf"),
                    _masked_row,
                ),
            ),
            rtol=1e-5,
            atol=1e-5,
            checks=(Correct(2), Jit(1)),
            hints=(
                "`exp` of anything above 88.7 is `inf` in float32, and of anything below -103 is 0. The answer is an "
                "ordinary number in both cases: the trouble is only in the intermediate values.",
                "`log(sum(exp(x))) = m + log(sum(exp(x - m)))` for any `m`. With `m` the maximum along `axis` (taken "
                "with `keepdims=True`, so that it broadcasts), every `exp` lies in (0, 1].",
                "Three steps: the maximum along `axis`, kept as a dimension and replaced by 0 where it is not finite "
                "(a row of `-inf` would otherwise compute `-inf - (-inf)`, NaN); the log of the sum of the shifted "
                "exponentials; plus the maximum with its kept axis squeezed out.",
            ),
        ),
        Exercise(
            name="variance",
            sample=_variance,
            edge_cases=(
                Edge(
                    Case((np.array([[10000.0, 10001.0, 10002.0]], np.float32),), "the docstring's example"),
                    _consecutive,
                ),
                Edge(
                    Case(
                        (_f32(np.random.default_rng(1), 2, 256, loc=1e4),),
                        "mean 1e4, standard deviation 1",
                    ),
                    _large_mean,
                ),
                Edge(Case((np.full((1, 5), 3000.0, np.float32),), "constant rows: variance 0"), _constant_rows),
            ),
            rtol=1e-2,
            atol=1e-4,
            checks=(Correct(2), Jit(1)),
            hints=(
                "`mean(x ** 2) - mean(x) ** 2` subtracts two numbers of about 1e8 when the mean is 1e4; float32 has "
                "no digits left for their difference. Avoid ever forming a large number whose small part you need.",
                "Centre the data first: `x - mean(x)` is of the size of the spread, not of the mean, and its squares "
                "lose nothing. `keepdims=True` on the mean lets it broadcast against the rows.",
                "Two passes along the last axis: one for each row's mean, one for the mean of the squared deviations "
                "from it (divided by n, not n - 1). `jnp.var` does the same; Welford's running update is another "
                "stable way.",
            ),
        ),
        Exercise(
            name="scale_keep_dtype",
            sample=_scale_keep_dtype,
            edge_cases=(
                Edge(
                    Case(
                        (np.ones(3, np.float16), np.array(2.5, np.float32)),
                        "the docstring's example: float16 times a float32 0-d array",
                    ),
                    _scale_like(np.float16, False),
                ),
                Edge(
                    Case((np.array([1.5, -0.25], np.float16), 4.0), "float16 times a Python float"),
                    _scale_like(np.float16, True),
                ),
                Edge(
                    Case((np.array([1.0, 2.0], np.float32), np.array(0.5, np.float32)), "float32 times a 0-d array"),
                    _scale_like(np.float32, False),
                ),
            ),
            sizes=tuple(SCALE_KINDS),
            rtol=1e-2,
            atol=1e-6,
            checks=(Correct(2), Jit(1)),
            hints=(
                "Your output's dtype must be `x`'s. What is `(float16 array * float32 0-d array).dtype`? "
                "`jnp.result_type` answers without computing anything.",
                "A Python float is weakly typed and adopts the array's dtype; an array (0-d included) has a dtype "
                "of its own, and the wider one wins. `jnp.asarray(v, dtype=...)` or `.astype(...)` gives a value "
                "the dtype you choose.",
                "One line: give the scale `x`'s dtype first, then multiply. That covers both kinds of scale (a "
                "Python float converts too), and the product of two arrays of one dtype keeps it.",
            ),
        ),
        Exercise(
            name="mixed_matmul",
            sample=_mixed_matmul,
            sizes=(1, 3, 17, 64),
            edge_cases=(
                Edge(Case((BF16_STEP, np.ones((3, 1), BF16)), "the docstring's example"), _bf16_steps),
                Edge(
                    Case(
                        (
                            np.random.default_rng(2).normal(size=(2, 2048)).astype(BF16),
                            (np.random.default_rng(3).normal(size=(2048, 2)) / 45.25).astype(BF16),
                        ),
                        "long sums: k = 2048",
                    ),
                    _long_sums,
                ),
            ),
            rtol=1e-4,
            atol=1e-4,
            checks=(Correct(1), Jit(2, requirements=MIXED)),
            hints=(
                "The result must be float32 while the operands stay bfloat16: which argument of the matmul functions "
                "says what dtype the dot accumulates and returns?",
                "`jnp.dot`, `jnp.matmul`, `jnp.einsum` and `lax.dot_general` all take `preferred_element_type`. "
                "`a @ b` on bfloat16 operands returns bfloat16; `.astype` on the operands or the result adds a "
                "conversion to the program.",
                "One call: the dot of `a` and `b` as given, with `preferred_element_type=jnp.float32`; no conversion "
                "before or after it.",
            ),
        ),
    ),
)
