# crafted: the reference, with the definitions below in place of its own
"""More faults, one per function here; its comment names the checks that must fail it."""

import jax.numpy as jnp


def logsumexp(x, axis):
    # correct: shifted by the maximum with no guard, so a row entirely -inf computes -inf - (-inf), NaN
    m = jnp.max(x, axis=axis, keepdims=True)
    return jnp.log(jnp.sum(jnp.exp(x - m), axis=axis)) + jnp.squeeze(m, axis)


def mixed_matmul(a, b):
    # correct: a bfloat16 product, returned as it is (bfloat16, not float32)
    return a @ b
