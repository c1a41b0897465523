import jax.numpy as jnp
from jax import lax


def newton_sqrt(a, tol):
    def running(s):
        return (jnp.max(jnp.abs(s[0] * s[0] - a) / a) > tol) & (s[1] < 100)

    def newton_step(s):
        return 0.5 * (s[0] + a / s[0]), s[1] + 1

    return lax.while_loop(running, newton_step, (a, jnp.int32(0)))
