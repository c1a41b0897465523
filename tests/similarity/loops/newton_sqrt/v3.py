import jax.numpy as jnp
from jax import lax

MAX_STEPS = 100


def _converged(x, a, tol):
    return jnp.max(jnp.abs(x * x - a) / a) <= tol


def newton_sqrt(a, tol):
    def go_on(c):
        return jnp.logical_not(_converged(c[0], a, tol)) & (c[1] < MAX_STEPS)

    def refine(c):
        y = 0.5 * (c[0] + a / c[0])
        return y, c[1] + 1

    y, n = lax.while_loop(go_on, refine, (a, jnp.zeros((), jnp.int32)))
    return y, n
