# planted: a mix of v3 and v6 (v3's one-hot comparison, v6's vmap and count)
import jax
import jax.numpy as jnp


def histogram(x, nbins):
    bins = jnp.arange(nbins, dtype=x.dtype)
    hits = x[:, None] == bins[None, :]

    def count(column):
        return jnp.count_nonzero(column)

    result = jax.vmap(count, in_axes=1)(hits)
    return result.astype("int32")
