import jax.numpy as jnp


def lookup_and_clamp(x, idx, vals, fill):
    n = x.shape[0]
    got = jnp.take(x, idx, mode="fill", fill_value=fill)
    added = x.at[jnp.clip(idx, 0, n - 1)].add(vals)
    return got, added
