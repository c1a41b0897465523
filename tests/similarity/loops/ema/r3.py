import jax.numpy as jnp
from jax import lax


def ema(xs, alpha):
    init = jnp.zeros((xs.shape[1],), jnp.float32)

    def f(carry, x_t):
        out = carry * (1 - alpha) + x_t * alpha
        return out, out

    _, history = lax.scan(f, init, xs)
    return history
