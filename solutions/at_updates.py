"""Functional array updates with `.at[]`.

JAX arrays are immutable: `x[i] = v` raises. `x.at[i].set(v)` returns a NEW array with the
update applied (under jit, XLA usually performs it in place). The same syntax offers
`add`, `multiply`, `min`, `max`, `get`, ..., and a `mode=` for indices out of bounds:
by default `get` clamps them and `set`/`add` drop them silently; `mode="fill"`,
`mode="clip"` and `mode="drop"` say what you mean.

Lesson: course/lessons/at_updates.md
"""

import jax.numpy as jnp


def scatter_ops(x, idx, vals):
    """Apply one batch of updates to `x` four ways.

    `x` is float32 of shape (n,), `idx` int32 of shape (k,) with DISTINCT indices in [0, n),
    `vals` float32 of shape (k,). Return the tuple `(set, add, min, max)` where, e.g.,
    `add[idx[j]] = x[idx[j]] + vals[j]` and every other entry equals `x`'s.

    Example: x = [1, 2, 3], idx = [2, 0], vals = [10, -1] gives
    set = [-1, 2, 10], add = [0, 2, 13], min = [-1, 2, 3], max = [1, 2, 10].
    """
    ### BEGIN SOLUTION
    at = x.at[idx]
    return at.set(vals), at.add(vals), at.min(vals), at.max(vals)
    ### END SOLUTION


def histogram(x, nbins):
    """Count how often each value 0..nbins-1 occurs in `x`.

    `x` is int32 of any length with values in [0, nbins); `nbins` is a Python int (static
    under jit). Return an int32 array of shape (nbins,). Repeated indices must all count:
    that is what a scatter-add does (`.at[x].add(1)`), and what `.at[x].set(...)` does not.

    Example: `histogram([1, 3, 1, 0], 4)` is `[1, 2, 0, 1]` (integers: exactly).
    """
    ### BEGIN SOLUTION
    return jnp.zeros(nbins, jnp.int32).at[x].add(1)
    ### END SOLUTION


def mask_fill(x, threshold, fill):
    """Replace every entry of `x` greater than `threshold` by `fill`.

    `x` float32 of any shape, `threshold` and `fill` floats (traced under jit). Return an
    array of `x`'s shape and dtype.

    The tutorial's version, `x.at[mask].set(-100.)` with a boolean `mask` (here `x > threshold`
    and `fill`), runs eagerly but not under jit: a boolean mask has a data-dependent number of
    True entries, so its index array has no static shape (NonConcreteBooleanIndexError). Write
    it so that it jits.
    """
    ### BEGIN SOLUTION
    return jnp.where(x > threshold, jnp.asarray(fill, x.dtype), x)
    ### END SOLUTION


def lookup_and_clamp(x, idx, vals, fill):
    """Out-of-bounds indices, handled on purpose.

    `x` float32 (n,), `idx` int32 (k,) with values in [0, n + 5) (some past the end), `vals`
    float32 (k,), `fill` a Python float (static under jit). Return the tuple `(looked_up, clamped)`:
      - `looked_up[j] = x[idx[j]]` if `idx[j] < n`, else `fill`;
      - `clamped` = `x` plus `vals[j]` added at `min(idx[j], n - 1)` for every j
        (repeated indices accumulate).

    Plain `x[idx]` would clamp the reads, and plain `.at[idx].add` would drop the writes:
    the defaults do the opposite of what is asked. Use `mode=`.
    """
    ### BEGIN SOLUTION
    looked_up = x.at[idx].get(mode="fill", fill_value=fill)
    clamped = x.at[idx].add(vals, mode="clip")
    return looked_up, clamped
    ### END SOLUTION
