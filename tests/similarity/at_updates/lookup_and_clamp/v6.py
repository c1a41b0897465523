import jax.numpy as jnp


def lookup_and_clamp(x, idx, vals, fill):
    n = x.size
    onehot = jnp.arange(n)[None, :] == jnp.minimum(idx, n - 1)[:, None]
    clamped = x + (onehot * vals[:, None]).sum(axis=0)
    valid = (idx < n)[:, None] & (jnp.arange(n)[None, :] == idx[:, None])
    looked = jnp.where(valid.any(axis=1), (valid * x[None, :]).sum(axis=1), fill)
    return looked.astype(x.dtype), clamped
