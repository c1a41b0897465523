import jax.numpy as jnp
from jax import lax


def lookup_and_clamp(x, idx, vals, fill):
    size = x.shape[0]
    taken = jnp.take(x, idx, mode="fill", fill_value=fill)
    where = jnp.minimum(idx, size - 1)

    def step(i, total):
        return total.at[where[i]].add(vals[i])

    total = lax.fori_loop(0, idx.shape[0], step, x)
    return taken, total
