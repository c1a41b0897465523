import jax
import jax.numpy as jnp


def histogram(x, nbins):
    weights = jnp.ones(x.shape[0], jnp.int32)
    return jax.ops.segment_sum(weights, x, num_segments=nbins)
