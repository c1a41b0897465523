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
  `err.get()` (the message, or None) or `err.throw()`. It works under `jax.jit`; with
  `errors=checkify.nan_checks`, `index_checks`, `div_checks` it adds JAX's own checks on every
  operation (`checked_entropy`).
- **NaNs.** `jax.config.update("jax_debug_nans", True)` raises `FloatingPointError` at the
  first operation that produces a NaN (re-running a jitted function op by op to find it): a
  debugging switch, slow, never left on. Inside a loop you can also record, step by step,
  whether the state is still finite (`first_nan_step`). The classic NaN of all is a gradient:
  `jnp.linalg.norm` at zero has a finite value and a NaN derivative, and `jnp.where` does not
  save you unless the unsafe branch never sees the unsafe input (`path_length`).
- **Names.** `jax.named_scope("hidden")` prefixes the names of the operations it encloses, and
  those names stay in the lowered program's locations (`jit(f)/hidden/dot_general`), in XLA's
  HLO and in profiles (`scoped_mlp`). `jax.profiler.TraceAnnotation` marks a span of host time
  in a profile instead; it leaves the program unchanged.

`jax.disable_jit()` runs jitted code eagerly, one operation at a time, so that ordinary
`print` and `pdb` work again; `jax.devices()[0].memory_stats()` reports device memory (None on
the CPU). The lesson shows both.
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
      - jit (1): make it work jitted by the grader (with `debug` static): the same outputs as
        un-jitted, on the same cases; in its exported program: no host callbacks; no re-tracing
        (one program, exported from the shapes, for new values of those shapes).
      - prints (2): make every call print exactly what the reference prints on that call (read
        from your process's stdout): jitted once by the grader (with `debug` static) and called
        on a stream of 12 inputs from cold caches.
      ¹ rtol 1e-5, atol 1e-6.
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
      ¹ rtol 1e-5, atol 1e-6.
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

    `jax.config.update("jax_debug_nans", True)` would stop at the `sqrt` that makes the NaN,
    but only tells you the operation, and slows everything; here the program finds the step
    itself: carry the state through `jax.lax.scan`, emit one "has a NaN" flag per step, and
    turn the flags into an index. `jnp.argmax` of an all-False array is 0, not -1.

    Graded (4 points):
      - correct (2): make the output equal the reference's¹, called as written on 4 edge cases
        ("the docstring's example: step 1", "the docstring's example: no NaN", "a NaN in h0";
        graded on other inputs of each kind; 1 more hidden) and 4 random cases.
      - jit (2): make it work jitted by the grader: the same outputs as un-jitted, on the same
        cases; in its exported program: no host callbacks; no re-tracing (one program, exported
        from the shapes, for new values of those shapes); it does not grow with the input².
      ¹ rtol 1e-6, atol 1e-6. ² at the largest case at most x3 + 20 the operations of the
      smallest: a loop stays a loop, a Python loop is unrolled.
    """
    raise NotImplementedError("first_nan_step: your code here")


def path_length(points):
    """The length of a polyline, with a gradient that stays finite where points repeat.

    `points` is float32 of shape (n, d): n points in d dimensions, visited in order. Return the
    float32 scalar `sum_i ||points[i+1] - points[i]||` (Euclidean norms; 0 for n = 1).
    Example: `[[0, 0], [3, 4], [3, 4]]` has length 5 (a segment of length 5, then one of
    length 0).

    `jnp.linalg.norm` (or `sqrt(sum(d**2))`) is right for the value and wrong for the gradient
    where a segment has length 0: the derivative of sqrt at 0 is infinite, times a zero it is
    NaN, and one NaN poisons the whole gradient. Here a zero-length segment must contribute 0
    to the gradient. `jnp.where(len2 > 0, jnp.sqrt(len2), 0.)` alone does not help: the
    gradient flows through both branches, and 0 * NaN is NaN. The unsafe branch must never see
    the unsafe input (select a safe input first, then select the output: "the double where").

    Graded (4 points):
      - correct (1): make the output equal the reference's¹, called as written on 4 edge cases
        ("the docstring's example: a repeated point", "a single point", "every point the same",
        "a unit square"; graded on other inputs of each kind) and 4 random cases.
      - jit (1): make it work jitted by the grader: the same outputs as un-jitted, on the same
        cases; in its exported program: no host callbacks; no re-tracing (one program, exported
        from the shapes, for new values of those shapes).
      - grad (2): make `jax.grad` with respect to `points` equal the reference's gradient¹ on
        every case.
      ¹ rtol 1e-5, atol 1e-5.
    """
    raise NotImplementedError("path_length: your code here")


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
      - jit (2): make it work jitted by the grader: the same outputs as un-jitted, on the same
        cases; in its exported program: no host callbacks; no re-tracing (one program, exported
        from the shapes, for new values of those shapes); a `dot_general` directly inside the
        named scope `hidden` (that exact path); a `dot_general` directly inside the named scope
        `readout` (that exact path).
      ¹ rtol 1e-5, atol 1e-5.
    """
    raise NotImplementedError("scoped_mlp: your code here")
