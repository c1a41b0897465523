import jax.numpy as jnp
from jax import lax


def histogram(x, nbins):
    def body(i, acc):
        return acc.at[x[i]].add(1)

    start = jnp.zeros(nbins, jnp.int32)
    return lax.fori_loop(0, x.size, body, start)
