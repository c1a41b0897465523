import jax
import jax.numpy as jnp


def ema(xs, alpha):
    def step(prev, x_t):
        cur = jnp.asarray(alpha) * x_t + (1.0 - jnp.asarray(alpha)) * prev
        return cur, cur

    zero = xs[0] * 0
    return jax.lax.scan(step, zero, xs)[1]
