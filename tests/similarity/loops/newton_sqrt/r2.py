import jax
import jax.numpy as jnp


def newton_sqrt(a, tol):
    def keep_going(state):
        x, count = state
        worst = (jnp.abs(x**2 - a) / a).max()
        return (worst > tol) & (count < 100)

    def step(state):
        x, count = state
        x = (x + a / x) * 0.5
        return x, count + 1

    x, count = jax.lax.while_loop(keep_going, step, (a, jnp.array(0, dtype=jnp.int32)))
    return x, count
