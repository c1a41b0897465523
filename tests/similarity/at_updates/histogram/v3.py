import jax.numpy as jnp


def histogram(x, nbins):
    """One-hot rows, summed down the columns."""
    bins = jnp.arange(nbins)
    hits = x[:, None] == bins[None, :]
    return jnp.sum(hits, axis=0, dtype=jnp.int32)
