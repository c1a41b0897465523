# planted: a mix of v1 and v5 (v1's read, v5's loop of writes)
import jax.numpy as jnp
from jax import lax


def lookup_and_clamp(x, idx, vals, fill):
    n = x.shape[0]
    inside = idx < n
    safe = jnp.where(inside, idx, 0)
    looked_up = jnp.where(inside, x[safe], fill)
    where = jnp.minimum(idx, n - 1)

    def step(i, total):
        return total.at[where[i]].add(vals[i])

    total = lax.fori_loop(0, idx.shape[0], step, x)
    return looked_up, total
