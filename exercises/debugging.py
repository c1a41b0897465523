# Topic `debugging`: replace each `raise NotImplementedError(...)` below with your code.
# Lesson: lessons/debugging.md. Check: `grade check debugging` (re-check on save: `grade watch debugging`).
# Stuck? `grade hint debugging.<function>`. Each docstring ends with what is graded; the rules all
# exercises share are in README.md ("How you are graded").
"""Debugging: printing from compiled code, checks that survive jit, NaNs and where they start,
and names that follow your code into the compiled program.

A jitted function is a compiled program, so the usual tools stop working inside it: a Python
`print` runs once, while JAX traces, and shows tracers; a Python `assert` on a traced value
raises; a NaN gives no error, it just spreads. JAX has a tool for each:

- **`jax.debug.print`** (and `jax.debug.callback`) stage a host callback into the program: it
  prints on every call, with the runtime values. The price is a round trip to the host on each
  call, and a program that `jax.export` cannot serialize (the grader refuses it in finished
  code). Put it behind a static flag, so that with the flag off it is not in the program at all
  (`normalize_rows`).
- **`checkify`** (`from jax.experimental import checkify`) turns `checkify.check(pred, msg)`
  into an error *value* that the program returns: `err, out = checkify.checkify(f)(x)`, then
  `err.get()` (the message, or None) or `err.throw()`. It works under `jax.jit`
  (`checked_entropy`). `errors=checkify.index_checks`, `div_checks` or `nan_checks` add JAX's
  own checks on every operation; `nan_checks` also reports the NaNs that `jnp.where` throws
  away (`xlogy(0, 0)` computes `0 * log 0` before selecting 0), so it flags a right
  `checked_entropy`: check the values you return instead.
- **NaNs.** `jax.config.update("jax_debug_nans", True)` raises `FloatingPointError` when a
  jitted function returns a NaN, after re-running it op by op to find the first operation that
  makes one: a debugging switch, slow, never left on. Inside a loop the program can also find
  the step itself, by recording whether each step's state holds a NaN (`first_nan_step`). The
  most common NaN is in a gradient, where the loss is finite: find the first training step
  whose gradient holds one (`first_nan_grad`).
- **Names.** `jax.named_scope("hidden")` prefixes the names of the operations it encloses, and
  those names stay in the lowered program's locations (`jit(f)/hidden/dot_general`), in XLA's
  HLO and in profiles (`scoped_mlp`). `jax.profiler.TraceAnnotation` marks a span of host time
  in a profile instead; it leaves the program unchanged.

`jax.disable_jit()` runs jitted code eagerly, one operation at a time, so that ordinary
`print` and `pdb` work again; `jax.debug.breakpoint()` opens a debugger inside the compiled
program instead. `jax.devices()[0].memory_stats()` reports device memory (None on the CPU), and
`jax.profiler.device_memory_profile()` what holds it (a pprof profile). The lesson shows them.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify
from jax.scipy.special import xlogy


def message_bytes(message):
    """A checkify message (a str, or None when no check failed) as a uint8 array of its UTF-8
    bytes (given): the grader compares arrays, and an empty array means "no error"."""
    return np.frombuffer((message or "").encode(), dtype=np.uint8)


LEARNING_RATE = 0.05  # the step size of `first_nan_grad`'s gradient descent (given)


def fit_loss(w, x, y):
    """The loss of one training step of `first_nan_grad` (given): the mean squared error of
    the prediction `sqrt(x @ w)` against `y`, with `w` (d,), `x` (n, d), `y` (n,). Where
    `x @ w <= 0` the square root is undefined; `jnp.where` predicts 0 there, so the loss stays
    finite, but its gradient is NaN (the square root's derivative at the dropped input is NaN,
    and the backward pass multiplies it by the zero the select sends back)."""
    z = x @ w
    pred = jnp.where(z > 0, jnp.sqrt(z), 0.0)
    return jnp.mean((pred - y) ** 2)


def normalize_rows(x, debug):
    """Scale each row of `x` to unit Euclidean norm, and report zero rows at run time when asked.

    `x` is float32 of shape (n, d); `debug` is a Python bool, static under jit (a separate
    program for each value). Return `x / ||x_i||` row by row, same shape and dtype, where a
    row of zeros stays zeros (no NaN).

    With `debug=True`, also print on EVERY call, from inside the program, exactly one line:

        normalize_rows: {zero} of {n} rows are zero

    where `zero` is the number of rows whose norm is 0 (an int32 computed from `x`) and `n` is
    the number of rows. Example: `normalize_rows(jnp.array([[3., 4.], [0., 0.]]), True)`
    returns `[[0.6, 0.8], [0., 0.]]` and prints `normalize_rows: 1 of 2 rows are zero`; under
    `jax.jit(normalize_rows, static_argnums=1)` it prints that again on every call, not only
    on the first. With `debug=False` it prints nothing, and the program must hold no callback
    at all: the debugging costs nothing once switched off.

    A Python `print` here would run only while JAX traces (once per shape); `jax.debug.print`
    runs in the compiled program, with the values of this call. It takes a format string and
    the values (`{}` fields are filled with the runtime values).

    Graded (4 points):
      - correct (1): make the output equal the reference's¹, called as written on 3 edge cases
        ("the docstring's example, debug on", "all rows zero, debug off", "one row"; graded on
        other inputs of each kind) and 4 random cases.
      - jit (1): make it work jitted by the grader (with `debug` static) once it is correct: the
        reference's outputs on the same cases; in its exported program (exported with `debug` =
        False): no host callbacks; no re-tracing (one program, exported from the shapes, for new
        values of those shapes).
      - prints (2): make every call print exactly what the reference prints on that call (read
        from your process's stdout): jitted once by the grader (with `debug` static) and called
        on a stream of 12 inputs from cold caches.
      ¹ rtol 1e-5, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("normalize_rows: your code here")


def checked_entropy(p):
    """The entropy of a probability vector, with its inputs validated by `checkify`.

    `p` is float32 of shape (n,). Compute, with `jax.experimental.checkify`, under `jax.jit`:

    1. `checkify.check` that every entry is >= 0, with the message
       `"negative probability at index {i}"`, `i` the index of the FIRST negative entry;
    2. then `checkify.check` that `s = jnp.sum(p)` is within 1e-3 of 1 (`|s - 1| <= 1e-3`),
       with the message `"probabilities sum to {s:.4f}"`;
    3. the entropy `h = -sum(xlogy(p, p))` (`jax.scipy.special.xlogy`, so that 0 log 0 = 0
       and a negative entry gives NaN), float32 scalar.

    Return `(message_bytes(err.get()), h)`, with `message_bytes` given above: the message of
    the first failed check as checkify words it, or an empty array when all checks pass.
    Example: for `p = [0.5, 0.5]` the message is empty and `h = 0.6931472` (log 2, to 1e-6);
    for `p = [0.5, -0.5]` the message is "negative probability at index 1 (`check` failed)"
    (both checks fail; the first one is reported) and `h` is NaN; for `p = [0.3, 0.3]` it is
    "probabilities sum to 0.6000 (`check` failed)".

    `checkify.check` cannot run under a plain `jax.jit` (JAX refuses to stage it):
    `checkify.checkify(f)` makes the check part of what the function returns, an `Error`, and
    the program stays jittable (`jax.jit(checkify.checkify(f))` or the other way round).
    `err.get()` is Python, on the concrete result, after the jitted call. (A function defined
    inside `checked_entropy` is a new function on every call, so its jit compiles on every call:
    in a training loop, build the checkified, jitted function once, at module level.)

    Graded (3 points):
      - correct (3): make `message` and `h` equal the reference's¹, called as written on 5 edge
        cases ("the docstring's example, valid", "the docstring's example, both checks fail",
        "the docstring's example, the sum is off", "zeros in a valid vector (0 log 0 = 0)";
        graded on other inputs of each kind; 1 more hidden) and 6 random cases.
      ¹ rtol 1e-5, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("checked_entropy: your code here")


def first_nan_step(h0, a, c):
    """Run a recurrence and report the first step whose state holds a NaN.

    `h0` is float32 (d,), `a` and `c` float32 (T, d). The recurrence is, for t = 0 .. T-1,

        h_{t+1} = sqrt(a[t] * h_t + c[t])      (elementwise)

    and a negative argument makes a NaN, which every later step carries along. Return the
    int32 scalar `t` of the first step whose result `h_{t+1}` has a NaN in any entry (so 0
    when `h0` itself holds one), or -1 when no step produces one.

    Example: `h0 = [1.]`, `a = [[1.], [1.], [1.]]`, `c = [[3.], [-5.], [1.]]`: step 0 gives 2,
    step 1 gives sqrt(-3) = NaN, so the answer is 1; with `c = [[3.], [1.], [1.]]` it is -1.

    `jax.config.update("jax_debug_nans", True)` would stop at the `sqrt` that makes the NaN
    and point at its line, but not say at which step, and it slows everything; here the program
    finds the step itself: carry the state through `jax.lax.scan`, emit one "has a NaN" flag
    per step, and turn the flags into an index. `jnp.argmax` of an all-False array is 0, not -1.

    Graded (4 points):
      - correct (2): make the output equal the reference's¹, called as written on 4 edge cases
        ("the docstring's example: step 1", "the docstring's example: no NaN", "a NaN in h0";
        graded on other inputs of each kind; 1 more hidden) and 4 random cases.
      - jit (2): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); it does not grow
        with the input².
      ¹ rtol 1e-6, atol 1e-6 for float outputs; integers, booleans and keys exactly. ² at the
      largest case at most x3 + 20 the operations of the smallest: a loop stays a loop, a Python
      loop is unrolled.
    """
    raise NotImplementedError("first_nan_step: your code here")


def first_nan_grad(w0, x, y):
    """Train by gradient descent and report the first step whose gradient holds a NaN.

    `w0` is float32 (d,), the initial weights; `x` float32 (T, n, d) and `y` float32 (T, n)
    are T batches of n examples. Step t = 0 .. T-1 takes the gradient of the given `fit_loss`
    on batch t and moves the weights against it, with the given `LEARNING_RATE`:

        g_t = grad of fit_loss(w_t, x[t], y[t]) with respect to w_t
        w_{t+1} = w_t - LEARNING_RATE * g_t

    Return the int32 scalar index t of the first step whose gradient `g_t` has a NaN in any
    entry, or -1 when no step's gradient has one.

    Example: `w0 = [1., 1.]`, `x = [[[40., 40.]], [[1., 1.]], [[1., 1.]]]` (T = 3 batches of
    one example) and `y = [[0.], [0.], [0.]]`. Step 0 sees `x @ w = 80`; its gradient is
    `[40., 40.]` (to 1e-5), which moves the weights to `[-1., -1.]`. Step 1 sees `x @ w = -2`:
    its loss is 0, finite, and its gradient `[nan, nan]`. The answer is 1. With
    `x[0] = [[1., 1.]]` instead, the weights stay positive and the answer is -1.

    The loss never shows it: it is finite at the step whose gradient is NaN, and it stays
    finite once the update has put NaNs in the weights (`NaN > 0` is False, so `fit_loss`'s
    `jnp.where` predicts 0 for them too, and the loss is `mean(y**2)`). Watch the gradient.
    `jax.config.update("jax_debug_nans", True)` stops at the operation that makes the first
    NaN and points at its line, which is how to find the cause; here the program finds the
    step itself, in one compiled loop (a Python loop over the steps would put a copy of the
    step in the program for every t).

    Graded (4 points):
      - correct (2): make the output equal the reference's¹, called as written on 6 edge cases
        ("the docstring's example: NaN the step after an outlier", "the docstring's example: no
        NaN", "NaN at step 0", "NaN at the last step", "an outlier at the last step: no NaN",
        "no outlier: the weights slide to 0"; graded on other inputs of each kind) and 4 random
        cases.
      - jit (2): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); it does not grow
        with the input².
      ¹ rtol 1e-6, atol 1e-6 for float outputs; integers, booleans and keys exactly. ² at the
      largest case at most x3 + 20 the operations of the smallest: a loop stays a loop, a Python
      loop is unrolled.
    """
    raise NotImplementedError("first_nan_grad: your code here")


def scoped_mlp(x, W1, b1, W2, b2):
    """A two-layer perceptron whose layers are named in the compiled program.

    `x` is float32 (n, k), `W1` (k, h), `b1` (h,), `W2` (h, m), `b2` (m,). Return the (n, m)
    float32 array `relu(x @ W1 + b1) @ W2 + b2`. Example: with `W1 = 0`, `b1 = 0` and `b2 =
    [1., 2.]`, every row of the output is `[1., 2.]` (to 1e-5).

    Compute the first layer (`x @ W1 + b1` and the relu) inside `jax.named_scope("hidden")`
    and the second (`@ W2 + b2`) inside `jax.named_scope("readout")`: two scopes side by side,
    neither nested in the other nor in any other scope. JAX prefixes the name of every
    operation staged inside a scope, and the names survive lowering: the exported StableHLO
    program's locations read `jit(scoped_mlp)/hidden/dot_general`, and so do XLA's HLO
    metadata and the profiler's trace, which is how you find your layer in a profile.

    Graded (3 points):
      - correct (1): make the output equal the reference's¹, called as written on 1 edge case
        ("the docstring's example: W1 = 0, b1 = 0"; graded on other inputs of each kind) and 4
        random cases.
      - jit (2): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); a `dot_general` in
        the named scope `hidden` itself (that exact path: not inside another scope of yours, nor
        in one of yours nested in it); a `dot_general` in the named scope `readout` itself (that
        exact path: not inside another scope of yours, nor in one of yours nested in it).
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("scoped_mlp: your code here")
