# crafted: the reference, with the definitions below in place of its own
"""One fault per function; its comment names the checks that must fail it (and no other does)."""

import jax.numpy as jnp


def logsumexp(x, axis):
    # correct: written as it reads, `exp` overflows to inf past 88.7 and underflows to 0 below -103
    return jnp.log(jnp.sum(jnp.exp(x), axis=axis))


def variance(x):
    # correct: the one-pass formula; at mean 1e4 both terms are about 1e8 and the difference is noise
    return jnp.mean(x * x, axis=-1) - jnp.mean(x, axis=-1) ** 2


def scale_keep_dtype(x, s):
    # correct: a float32 0-d scale promotes a bfloat16 or float16 `x` to float32 (a Python float does not)
    return x * s


def mixed_matmul(a, b):
    # jit: the operands converted to float32 before the product: the same values, a float32 matmul
    return a.astype(jnp.float32) @ b.astype(jnp.float32)
