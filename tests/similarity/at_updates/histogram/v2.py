import jax.numpy as jnp


def histogram(x, nbins):
    # bincount knows the answer already; length keeps the shape static
    return jnp.bincount(x, length=nbins).astype(jnp.int32)
