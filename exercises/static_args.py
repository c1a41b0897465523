# Topic `static_args`: replace each `raise NotImplementedError(...)` below with your code.
# Lesson: lessons/static_args.md. Check: `grade check static_args` (re-check on save: `grade watch static_args`).
# Stuck? `grade hint static_args.<function>`. Each docstring ends with what is graded; the rules all
# exercises share are in README.md ("How you are graded").
"""Static arguments: what `jax.jit` compiles for, and how often.

`jax.jit(f)` traces `f` with abstract values (shape and dtype, no numbers) and compiles the
result. The compiled program is cached under a key made of the shapes and dtypes of the
array arguments plus the *values* of the static arguments (`static_argnums` /
`static_argnames`). So:

- a new array value of a known shape reuses the cache; a new shape, or a new value of a
  static argument, traces and compiles again;
- anything that decides a *shape* (a size, a shape tuple, a list of window widths) or a
  Python-level branch must be static: under tracing it has no value to decide with;
- anything that is just data (a fill value, a threshold, a length used in arithmetic) should
  stay traced: made static, every new value costs a compilation;
- static values are dictionary keys, so they must be hashable and compare by value. Lists,
  dicts, NumPy and JAX arrays are not ("ValueError: Non-hashable static arguments are not
  supported"): convert them to tuples of Python scalars first.

Choosing a branch follows the same line. A Python `if` on a static flag is decided while
tracing: each flag value gets its own program holding only its branch. `jax.lax.cond` on a
traced predicate puts both branches in one program and picks one at run time, so a choice that
depends on data never recompiles, and the branch not taken costs nothing.

Shapes also cost compilations outside `jit`: every JAX operation (eager ones included)
compiles once per new input shape. Inputs of many lengths therefore go in *padded to a few
bucket sizes*, with the true length passed as a traced value and used to mask the padding.

The grader counts compilations twice: from JAX's own compilation events, and from the time each
call takes on the grader's clock (a compiling call costs tens of milliseconds, a cached one a
fraction of one).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np


def create_filled(value, shape):
    """An array of shape `shape`, every entry equal to `value`.

    `value` is a Python float, `shape` a tuple of Python ints; return a float32 array of shape
    `shape`. Example: `create_filled(2.5, (2, 3))` is `[[2.5, 2.5, 2.5], [2.5, 2.5, 2.5]]`.

    The output's shape depends on an argument, so under `jax.jit` that argument must be
    static: its value has to be known while tracing. The other one is data: keep it traced,
    so that a new value reuses the compiled program. Jit the function yourself with
    `@functools.partial(jax.jit, static_argnums=...)` (the grader then uses your jit as
    written); left plain, it is jitted with `shape` static.

    Graded (4 points):
      - correct (1): make the output equal the reference's¹, called as written on 3 edge cases
        ("the docstring's example", "a 0-d array", "an empty array"; graded on other inputs of
        each kind) and 2 random cases.
      - jit (1): make it work jitted by the grader (with `shape` static) once it is correct: the
        reference's outputs on the same cases; in its exported program: no host callbacks; no
        re-tracing (one program, exported from the shapes, for new values of those shapes).
      - compiles (2): compile at most 3 times² on a stream of 24 calls, jitted once by the
        grader (with `shape` static), with the reference's outputs (a function whose operations
        compile one by one, without jit, fails).
      ¹ rtol 1e-6, atol 1e-6 for float outputs; integers, booleans and keys exactly. ²
      compilations are counted by JAX's compilation events and by the grader's clock: each slow
      call runs again after the stream, and a call whose first run takes a compilation's time
      more than its replay, or whose replay alone takes half a compilation's, counts as one; 1
      such call forgiven; and the time those calls spend compiling may add up to at most 4.25 of
      the reference's compilations.
    """
    raise NotImplementedError("create_filled: your code here")


def conditional_fn(x, normalize):
    """Normalise the rows of `x`, or not, as a configuration flag says.

    `x` is float32 of shape (n, d); `normalize` is a Python bool fixed for a whole run (a
    setting, not data). Return a float32 (n, d) array: when `normalize` is true, each row
    scaled to unit length, `x * jax.lax.rsqrt(jnp.sum(x * x, axis=-1, keepdims=True) + 1e-6)`;
    otherwise `x` unchanged.
    Example: `conditional_fn(jnp.array([[3., 4.]]), True)` is about `[[0.6, 0.8]]`.

    A flag known before tracing is a static argument, and a plain Python `if` on it picks
    the branch while tracing: each flag value compiles once, into a program that holds only
    its own branch. `jax.lax.cond(normalize, ...)` or `jnp.where(normalize, ...)` would put
    both branches into the program and decide at run time, for a choice that never changes.

    Graded (3 points):
      - correct (1): make the output equal the reference's¹, called as written on 3 edge cases
        ("the docstring's example", "the flag off", "zero rows stay zero"; graded on other
        inputs of each kind) and 2 random cases.
      - jit (2): make it work jitted by the grader (with `normalize` static) once it is correct:
        the reference's outputs on the same cases; in its exported program: no host callbacks;
        no re-tracing (one program, exported from the shapes, for new values of those shapes);
        no `case` (a `lax.cond` or `lax.switch`) and no `select` (a `jnp.where` or
        `lax.select`).
      ¹ rtol 1e-5, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("conditional_fn: your code here")


def cached_solve(A, b, x_cached, tol):
    """Solve `A @ x = b`, unless a cached solution is still good enough.

    `A` float32 (n, n) (well conditioned), `b` and `x_cached` float32 (n,), `tol` a float.
    If `jnp.max(jnp.abs(A @ x_cached - b)) <= tol`, return `x_cached`; otherwise return
    `jnp.linalg.solve(A, b)`. Example: with `x_cached` the exact solution and `tol = 1e-3`,
    the answer is `x_cached` and no solve runs.

    Here the choice depends on data: the residual is only known at run time. A Python `if`
    cannot decide on a traced value (TracerBoolConversionError), and arrays cannot be static
    (they are not hashable; if they were, every new matrix would compile anew).
    `jax.lax.cond(pred, true_fn, false_fn, *operands)` keeps both branches in one compiled
    program and runs only the one the predicate picks: the O(n^3) solve costs nothing when
    the cache hits. (`jnp.where` computes both sides, and so does a `cond` whose predicate is
    batched by `jax.vmap`, which turns it into a select.)

    On the speed workload every cached solution is good: only the residual should run.

    Graded (5 points):
      - correct (1): make the output equal the reference's¹, called as written on 2 edge cases
        ("a cache hit", "a cache miss"; graded on other inputs of each kind) and 2 random cases.
      - jit (2): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); a `case` (a
        `lax.cond` or `lax.switch`).
      - speed (2): be about as fast as the reference²: jitted by the grader (as written if it
        fails `jit`), timed on `A` float32[2**11, 2**11], `b` float32[2**11], `x_cached`
        float32[2**11]³; first, one untimed call at that size that the rounds do not make (a
        system whose cached solution is far off, so that the solve runs) must give the
        reference's output, or nothing is timed.
      ¹ rtol 1e-4, atol 1e-4 for float outputs; integers, booleans and keys exactly. ² full
      points up to x1.5 the reference's time, none from x10, log-linear between (on a CPU the
      clock is CPU time, and a wall time past x10 scores 0 too). ³ on the host's CPU, also where
      the grading machine has an accelerator: a cache hit is one matrix-vector product, below a
      TPU's dispatch floor at every size whose solve compiles there.
    """
    raise NotImplementedError("cached_solve: your code here")


@jax.jit
def standardize_padded(x, n):
    """Standardise the first `n` entries of a padded array; zero the padding.

    `x` is float32 of shape (m,): its first `n` entries are data, the rest padding with
    arbitrary values; `n` is an int with 1 <= n <= m. Over the data entries,
    `mean = sum(data) / n` and `var = sum((data - mean) ** 2) / n`. Return a float32 (m,)
    array holding `(data - mean) / jnp.sqrt(var + 1e-5)` in its first `n` entries and 0 in
    the rest. Example: `standardize_padded(jnp.array([1., 2., 3., 100.]), 3)` is about
    `[-1.2247, 0., 1.2247, 0.]`.

    The function is jitted and `n` is *not* static: one compiled program serves every length
    up to m. So `x[:n]` is out (its shape would depend on a traced value): build a mask,
    `jnp.arange(m) < n`, and let it keep the padding out of every sum.

    Graded (3 points):
      - correct (1): make the output equal the reference's¹, called as written on 3 edge cases
        ("the docstring's example", "no padding", "one data entry"; graded on other inputs of
        each kind) and 3 random cases.
      - jit (2): keep it right under its own `jax.jit` (the decorator the task gives it, as
        called for `correct`); in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("standardize_padded: your code here")


def standardize(x):
    """Standardise a 1-D array of any length, compiling only once per bucket of lengths.

    `x` is float32 of shape (n,), 1 <= n <= 1000, a new length at nearly every call. Return
    the float32 (n,) array that `standardize_padded` computes on the data entries.

    Jitted on `x` itself, every new length would compile anew. Instead pad `x` to a bucket,
    the smallest power of two >= n, and call the jitted `standardize_padded(padded, n)`: a
    stream of random lengths in 1..1000 then compiles at most 11 programs (sizes 1 to 1024).
    Every JAX operation on an array of a new shape compiles, eager ones too (`jnp.pad(x, ...)`,
    `out[:n]`): do the padding and the final cut on the host, with NumPy
    (`np.asarray(x)`; a jitted function accepts NumPy arrays; `np.asarray(out)[:n]`).

    The speed workload is streams of 100 calls of recurring lengths (after a warm-up stream), so
    it measures what each call costs, such as padding far beyond its bucket.

    Graded (4 points):
      - correct (1): make the output equal the reference's¹, called as written on 1 edge case
        ("the docstring's example"; graded on other inputs of each kind) and 5 random cases.
      - compiles (2): compile at most 11 times² on a stream of 100 calls, called as written,
        with the reference's outputs (a function whose operations compile one by one, without
        jit, fails).
      - speed (1): be about as fast as the reference³: called as written, timed on a stream of
        100 calls of various shapes; first, one untimed call at that size that the rounds do not
        make (drawn as the random cases are) must give the reference's output, or nothing is
        timed.
      ¹ rtol 1e-5, atol 1e-5 for float outputs; integers, booleans and keys exactly. ²
      compilations are counted by JAX's compilation events and by the grader's clock: each slow
      call runs again after the stream, and a call whose first run takes a compilation's time
      more than its replay, or whose replay alone takes half a compilation's, counts as one; 2
      such calls forgiven; and the time those calls spend compiling may add up to at most 14.75
      of the reference's compilations. ³ full points up to x1.5 the reference's time, none from
      x10, log-linear between (on a CPU the clock is CPU time, and a wall time past x10 scores 0
      too).
    """
    raise NotImplementedError("standardize: your code here")


@functools.partial(jax.jit, static_argnums=1)
def _window_sums(x, widths):
    """Given: the sums of every window of each width in `widths`, a tuple of Python ints
    (static: the output shapes depend on it)."""
    c = jnp.concatenate([jnp.zeros(1, x.dtype), jnp.cumsum(x)])
    return tuple(c[w:] - c[:-w] for w in widths)


def window_sums(x, widths):
    """Sliding-window sums for widths that arrive as a list or as an array.

    `x` is int32 of shape (n,); `widths` holds three ints in 1..n and arrives as a Python list
    or as an int32 array (read from a configuration file). Return the tuple that the jitted
    `_window_sums(x, widths)` above returns: for each width w, the int32 array of shape
    (n - w + 1,) whose entry i is `x[i] + ... + x[i + w - 1]`.
    Example: `window_sums(jnp.array([1, 2, 3, 4]), [1, 2, 4])` is `([1, 2, 3, 4], [3, 5, 7], [10])`.

    `_window_sums` takes `widths` as a static argument, and static arguments are dictionary
    keys: a list or an array raises "Non-hashable static arguments are not supported", and so
    does a tuple of JAX scalars. Hand it a tuple of Python ints, which hashes and compares by
    value, so that equal widths find the program compiled for them. Read an array's values with
    `.tolist()` (a transfer, no compilation).

    Graded (3 points):
      - correct (1): make the output equal the reference's¹, called as written on 2 edge cases
        ("the docstring's example", "widths as an array"; graded on other inputs of each kind)
        and 2 random cases.
      - compiles (2): compile at most 3 times² on a stream of 12 calls, called as written, with
        the reference's outputs (a function whose operations compile one by one, without jit,
        fails).
      ¹ rtol 1e-6, atol 1e-6 for float outputs; integers, booleans and keys exactly. ²
      compilations are counted by JAX's compilation events and by the grader's clock: each slow
      call runs again after the stream, and a call whose first run takes a compilation's time
      more than its replay, or whose replay alone takes half a compilation's, counts as one; 1
      such call forgiven; and the time those calls spend compiling may add up to at most 4.25 of
      the reference's compilations.
    """
    raise NotImplementedError("window_sums: your code here")
