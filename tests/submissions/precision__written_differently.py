"""Right answers written differently from the reference: all must pass (outcomes, not source)."""

import jax
import jax.numpy as jnp
from jax import lax


def logsumexp(x, axis):
    # JAX's own
    return jax.nn.logsumexp(x, axis=axis)


def variance(x):
    # Welford's running mean and sum of squared deviations, one column at a time
    def step(carry, xi):
        n, mean, m2 = carry
        n = n + 1.0
        delta = xi - mean
        mean = mean + delta / n
        return (n, mean, m2 + delta * (xi - mean)), None

    zeros = jnp.zeros(x.shape[0], x.dtype)
    (n, _, m2), _ = lax.scan(step, (jnp.zeros((), x.dtype), zeros, zeros), x.T)
    return m2 / n


def scale_keep_dtype(x, s):
    # the product in float32, rounded once to x's dtype
    return (x.astype(jnp.float32) * s).astype(x.dtype)


def mixed_matmul(a, b):
    return lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32)
