import jax.numpy as jnp


def lookup_and_clamp(x, idx, vals, fill):
    """Pad x with one fill slot at the end, then read with clipped indices."""
    padded = jnp.concatenate([x, jnp.array([fill], dtype=x.dtype)])
    read_at = jnp.clip(idx, 0, x.size)
    out = padded[read_at]
    acc = jnp.zeros_like(x).at[jnp.clip(idx, 0, x.size - 1)].add(vals)
    return out, x + acc
