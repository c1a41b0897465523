import jax.numpy as jnp
from jax import lax


def newton_sqrt(a, tol):
    def cond(carry):
        x, k = carry
        err = jnp.max(jnp.abs(x * x - a) / a)
        return jnp.logical_and(err > tol, k < 100)

    def body(carry):
        x, k = carry
        return 0.5 * (x + a / x), k + 1

    return lax.while_loop(cond, body, (a, jnp.int32(0)))
