import jax.numpy as jnp
from jax import lax


def newton_sqrt(a, tol):
    def keep_going(carry):
        guess, steps = carry
        residual = jnp.abs(guess**2 - a) / a
        return jnp.logical_and(residual.max() > tol, steps < 100)

    def newton(carry):
        guess, steps = carry
        return (guess + a / guess) / 2, steps + 1

    return lax.while_loop(keep_going, newton, (a, jnp.array(0, jnp.int32)))
