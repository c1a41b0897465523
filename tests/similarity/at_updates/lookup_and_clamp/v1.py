import jax.numpy as jnp


def lookup_and_clamp(x, idx, vals, fill):
    n = x.shape[0]
    inside = idx < n
    safe = jnp.where(inside, idx, 0)
    looked_up = jnp.where(inside, x[safe], fill)
    clamped = x.at[jnp.minimum(idx, n - 1)].add(vals)
    return looked_up, clamped
