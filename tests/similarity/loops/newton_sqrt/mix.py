# planted: a mix of v3 and v6 (v3's condition and helper, v6's update)
import jax
import jax.numpy as jnp
from jax import lax

MAX_STEPS = 100


def _converged(x, a, tol):
    return jnp.max(jnp.abs(x * x - a) / a) <= tol


def newton_sqrt(a, tol):
    def go_on(c):
        return jnp.logical_not(_converged(c[0], a, tol)) & (c[1] < MAX_STEPS)

    def halve(pair):
        root, it = pair
        return jax.numpy.mean(jnp.stack([root, a / root]), axis=0), it + 1

    y, n = lax.while_loop(go_on, halve, (a, jnp.zeros((), jnp.int32)))
    return y, n
