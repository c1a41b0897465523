import jax
import jax.numpy as jnp


def ema(xs, alpha):
    beta = 1 - alpha

    def combine(left, right):
        a1, b1 = left
        a2, b2 = right
        return a1 * a2, a2 * b1 + b2

    coeffs = jnp.full(xs.shape, beta, xs.dtype)
    _, result = jax.lax.associative_scan(combine, (coeffs, alpha * xs))
    return result
