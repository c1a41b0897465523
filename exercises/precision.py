# Topic `precision`: replace each `raise NotImplementedError(...)` below with your code.
# Lesson: lessons/precision.md. Check: `grade check precision` (re-check on save: `grade watch precision`).
# Stuck? `grade hint precision.<function>`. Each docstring ends with what is graded; the rules all
# exercises share are in README.md ("How you are graded").
"""Numerical precision: float32 by default, stable formulas, promotion and weak types, bfloat16.

JAX computes in float32 unless told otherwise: with the `jax_enable_x64` flag off (the default,
and how the grader runs), a float64 request is silently truncated to float32. float32 keeps
about 7 significant digits and overflows past 3.4e38, so `exp(89)` is already `inf`. Each
exercise below is one way that bites, and its fix:

- **Overflow and underflow** (`logsumexp`): `log(sum(exp(x)))` written as it reads gives `inf`
  for entries past 88 and `-inf` for entries below -104, where the answer is an ordinary
  number. Shifting by the maximum first computes the same value without leaving float32's range.
- **Cancellation** (`variance`): `mean(x**2) - mean(x)**2` subtracts two numbers of 1e8 to get
  one of order 1 when the data's mean is 1e4; float32 spaces numbers near 1e8 by 8, so every
  digit of the answer is lost. Subtracting the mean first (two passes) keeps them.
- **Promotion and weak types** (`scale_keep_dtype`): a Python scalar is *weakly typed* and
  takes the array's dtype (`bf16_array * 2.5` stays bfloat16), but a scalar *array* has a dtype
  of its own, and `bfloat16 * float32` (or `float16 * float32`) promotes to float32. Code that
  means to keep a reduced dtype says so.
- **Mixed precision** (`mixed_matmul`): bfloat16 operands (half the bytes; a TPU's matrix
  unit multiplies bfloat16 natively) with float32 accumulation and output, asked of the dot
  itself with `preferred_element_type`, not by converting the operands first.

Lesson: lessons/precision.md
"""

import jax.numpy as jnp


def logsumexp(x, axis):
    """`log(sum(exp(x), axis))`, without overflow or underflow.

    `x` is a float32 array of any shape, `axis` a Python int (static under jit). Return the
    float32 array of `x`'s shape without `axis`, where each entry is the log of the sum of the
    exponentials along `axis` (`jax.nn.logsumexp` computes it; write it yourself).

    Written as it reads, it fails in float32: `exp(1000.0)` is `inf`, so a row of entries near
    1000 gives `inf` instead of about 1000, and `exp(-1000.0)` is 0, so a row near -1000 gives
    `log(0) = -inf`. Since `log(sum(exp(x))) = m + log(sum(exp(x - m)))` for any `m`, take for
    `m` the maximum along `axis`: every `exp` is then at most 1, and at least one is exactly 1.
    One more edge: a row that is entirely `-inf` (every entry masked out) has the answer `-inf`
    (the log of a sum of zeros), not NaN, which `-inf - (-inf)` would give.

    Example: `logsumexp(jnp.array([[1000.0, 1000.0], [-1000.0, -1000.0]]), 1)` is
    `[1000.6932, -999.3068]` (`1000 + log 2` and `-1000 + log 2`, in float32).

    Graded (3 points):
      - correct (2): make the output equal the reference's¹, called as written on 4 edge cases
        ("the docstring's example: entries near +-1000", "large entries (exp overflows
        float32)", "very negative entries (exp underflows)", "a row entirely -inf"; graded on
        other inputs of each kind) and 4 random cases.
      - jit (1): make it work jitted by the grader (with `axis` static) once it is correct: the
        reference's outputs on the same cases; in its exported program: no host callbacks; no
        re-tracing (one program, exported from the shapes, for new values of those shapes).
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("logsumexp: your code here")


def variance(x):
    """The variance of each row, accurate in float32 whatever the data's mean.

    `x` is float32 of shape (m, n), n >= 1. Return the float32 array of shape (m,) whose entry
    i is `mean((x[i] - mean(x[i])) ** 2)` (the population variance: divided by n, not n - 1).

    The one-pass formula `mean(x ** 2) - mean(x) ** 2` is the same in exact arithmetic and
    useless in float32 when the mean is large against the spread: for data of mean 1e4 and
    standard deviation 1, both terms are about 1e8, where float32's neighbouring numbers are 8
    apart, and their difference (the variance, about 1) is rounding noise, sometimes negative.
    Subtract each row's mean first, then square (two passes over the data), or update a running
    mean and sum of squared deviations (Welford's method).

    Example: `variance(jnp.array([[10000.0, 10001.0, 10002.0]]))` is `[0.6666667]`; the one-pass
    formula gives rounding noise there (0.0 called as written, -5.02 jitted, on the course's CPU).

    The tolerance is the point of the exercise: a hundredth of the variance (rtol 1e-2, below).
    Any stable method lies far inside it in float32 (two passes: within 2e-5 of float64 on the
    grader's data of mean 1e4; Welford's update within 1.5e-3), while the one-pass formula
    misses it by 50 times or more there.

    Graded (3 points):
      - correct (2): make the output equal the reference's¹, called as written on 3 edge cases
        ("the docstring's example", "mean 1e4, standard deviation 1", "constant rows: variance
        0"; graded on other inputs of each kind) and 4 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      ¹ rtol 0.01, atol 1e-4 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("variance: your code here")


def scale_keep_dtype(x, s):
    """`x * s` in `x`'s dtype, whatever `s` is.

    `x` is an array of float dtype (float16 or float32 here; bfloat16 follows the same rules),
    `s` a scale: either a Python float or a float32 array of shape () (a 0-d array; a NumPy
    float64 scalar becomes one when JAX takes it with x64 off). Return `x * s` with `x`'s shape
    and `x`'s dtype.

    JAX's promotion rules decide the dtype of `x * s`: a Python float is *weakly typed*, so
    `float16_array * 2.5` stays float16; a float32 array is not, and `float16 * float32` is
    float32 (`jnp.result_type` shows the rule). Code that keeps a model in a reduced precision
    must not let a scale coming from elsewhere (a schedule, a config, NumPy) promote it
    silently to float32, which doubles its memory and, on an accelerator, its time.

    Example: for `x = jnp.ones(3, jnp.float16)`, `scale_keep_dtype(x, 2.5)` and
    `scale_keep_dtype(x, jnp.float32(2.5))` are both `float16[3]` arrays of 2.5.

    Graded (3 points):
      - correct (2): make the output equal the reference's¹, called as written on 3 edge cases
        ("the docstring's example: float16 times a float32 0-d array", "float16 times a Python
        float", "float32 times a 0-d array"; graded on other inputs of each kind) and 4 random
        cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      ¹ rtol 0.01, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("scale_keep_dtype: your code here")


def mixed_matmul(a, b):
    """A bfloat16 matrix product accumulated and returned in float32.

    `a` is bfloat16 (n, k) and `b` bfloat16 (k, m). Return the float32 (n, m) array `a @ b`,
    computed from the bfloat16 operands as they are, with the sums of products accumulated in
    float32.

    This is how mixed-precision training multiplies: weights and activations are stored in
    bfloat16 (half the bytes of float32; a TPU's matrix unit multiplies bfloat16 natively),
    while each sum of k products is kept in float32, since bfloat16's 8 bits of mantissa
    (about 2 to 3 significant digits) would lose most of a long sum. `a @ b` alone returns
    bfloat16, rounding every entry to those 8 bits; converting `a` and `b` to float32 first
    multiplies in float32, reading twice the bytes. Ask the dot itself for a float32 result:
    `jnp.dot`, `jnp.matmul`, `jnp.einsum` and `lax.dot_general` take
    `preferred_element_type=jnp.float32`.

    Example: with `a = jnp.full((1, 3), 1.0078125, jnp.bfloat16)` (1 + 2**-7, exact in
    bfloat16) and `b = jnp.ones((3, 1), jnp.bfloat16)`, the answer is `[[3.0234375]]`; in
    bfloat16 it would be rounded to `[[3.03125]]`.

    Graded (3 points):
      - correct (1): make the output equal the reference's¹, called as written on 2 edge cases
        ("the docstring's example", "long sums: k = 2048"; graded on other inputs of each kind)
        and 4 random cases.
      - jit (2): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); a `dot_general`; no
        `convert`.
      ¹ rtol 1e-4, atol 1e-4 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("mixed_matmul: your code here")
