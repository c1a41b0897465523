# Topic `at_updates`: replace each `raise NotImplementedError(...)` below with your code.
# Lesson: lessons/at_updates.md. Check: `grade check at_updates` (re-check on save: `grade watch at_updates`).
# Stuck? `grade hint at_updates.<function>`. Each docstring ends with what is graded; the rules all
# exercises share are in README.md ("How you are graded").
"""Functional array updates with `.at[]`.

JAX arrays are immutable: `x[i] = v` raises. `x.at[i].set(v)` returns a NEW array with the
update applied (under jit, XLA usually performs it in place). The same syntax offers
`add`, `multiply`, `min`, `max`, `get`, ..., and a `mode=` for indices out of bounds:
by default `get` clamps them and `set`/`add` drop them silently; `mode="fill"`,
`mode="clip"` and `mode="drop"` say what you mean.

Lesson: lessons/at_updates.md
"""

import jax.numpy as jnp


def scatter_ops(x, idx, vals):
    """Apply one batch of updates to `x` four ways.

    `x` is float32 of shape (n,), `idx` int32 of shape (k,) with DISTINCT indices in [0, n),
    `vals` float32 of shape (k,). Return the tuple `(set, add, min, max)` where, e.g.,
    `add[idx[j]] = x[idx[j]] + vals[j]` and every other entry equals `x`'s.

    Example: x = [1, 2, 3], idx = [2, 0], vals = [10, -1] gives
    set = [-1, 2, 10], add = [0, 2, 13], min = [-1, 2, 3], max = [1, 2, 10].

    Graded (3 points):
      - correct (2): make `set`, `add`, `min` and `max` equal the reference's¹, called as
        written on 1 edge case ("the docstring's example"; graded on other inputs of each kind)
        and 4 random cases.
      - jit (1): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); at most 200
        operations (no Python loop unrolled into it).
      ¹ rtol 1e-6, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("scatter_ops: your code here")


def histogram(x, nbins):
    """Count how often each value 0..nbins-1 occurs in `x`.

    `x` is int32 of any length with values in [0, nbins); `nbins` is a Python int (static
    under jit). Return an int32 array of shape (nbins,). Repeated indices must all count:
    that is what a scatter-add does (`.at[x].add(1)`), and what `.at[x].set(...)` does not.

    Example: `histogram([1, 3, 1, 0], 4)` is `[1, 2, 0, 1]` (integers: exactly).

    Graded (5 points):
      - correct (2): make the output equal the reference's¹, called as written on 2 edge cases
        ("the docstring's example", "all values equal"; graded on other inputs of each kind) and
        4 random cases.
      - jit (1): make it work jitted by the grader (with `nbins` static) once it is correct: the
        reference's outputs on the same cases; in its exported program: no host callbacks; no
        re-tracing (one program, exported from the shapes, for new values of those shapes); a
        `scatter-add` (an `.at[...].add`).
      - speed (2): be about as fast as the reference²: jitted by the grader (with `nbins`
        static; as written if it fails `jit`), timed on `x` int32[2**20], `nbins` = 256 (`x`
        int32[2**24] on a GPU).
      ¹ rtol 1e-6, atol 1e-6 for float outputs; integers, booleans and keys exactly. ² full
      points up to x1.25 the reference's time, none from x10, log-linear between (on a CPU the
      clock is CPU time, and a wall time past x10 scores 0 too).
    """
    raise NotImplementedError("histogram: your code here")


def mask_fill(x, threshold, fill):
    """Replace every entry of `x` greater than `threshold` by `fill`.

    `x` float32 of any shape, `threshold` and `fill` floats (traced under jit). Return an
    array of `x`'s shape and dtype.

    The tutorial's version, `x.at[mask].set(-100.)` with a boolean `mask` (here `x > threshold`
    and `fill`), runs eagerly but not under jit: a boolean mask has a data-dependent number of
    True entries, so its index array has no static shape (NonConcreteBooleanIndexError). Write
    it so that it jits.

    Graded (3 points):
      - correct (1): make the output equal the reference's¹, called as written on 2 edge cases
        ("the tutorial's mask example", "ties are not greater"; graded on other inputs of each
        kind) and 4 random cases.
      - jit (2): make it work jitted by the grader once it is correct: the reference's outputs
        on the same cases; in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes).
      ¹ rtol 1e-6, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("mask_fill: your code here")


def lookup_and_clamp(x, idx, vals, fill):
    """Out-of-bounds indices, handled on purpose.

    `x` float32 (n,), `idx` int32 (k,) with values in [0, n + 5) (some past the end), `vals`
    float32 (k,), `fill` a Python float (static under jit). Return the tuple `(looked_up, clamped)`:
      - `looked_up[j] = x[idx[j]]` if `idx[j] < n`, else `fill`;
      - `clamped` = `x` plus `vals[j]` added at `min(idx[j], n - 1)` for every j
        (repeated indices accumulate).

    Plain `x[idx]` would clamp the reads, and plain `.at[idx].add` would drop the writes:
    the defaults do the opposite of what is asked. Use `mode=`.

    Graded (3 points):
      - correct (2): make `looked_up` and `clamped` equal the reference's¹, called as written on
        1 edge case ("n = 1"; graded on other inputs of each kind) and 4 random cases.
      - jit (1): make it work jitted by the grader (with `fill` static) once it is correct: the
        reference's outputs on the same cases; in its exported program: no host callbacks; no
        re-tracing (one program, exported from the shapes, for new values of those shapes); at
        most 200 operations (no Python loop unrolled into it).
      ¹ rtol 1e-6, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("lookup_and_clamp: your code here")
