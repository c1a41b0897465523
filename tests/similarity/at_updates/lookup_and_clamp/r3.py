import jax.numpy as jnp


def lookup_and_clamp(x, idx, vals, fill):
    """Reads past the end give fill; writes past the end land on the last slot."""
    out = x.at[idx].get(mode="fill", fill_value=fill)
    new_x = x.at[jnp.minimum(idx, x.shape[0] - 1)].add(vals)
    return out, new_x
