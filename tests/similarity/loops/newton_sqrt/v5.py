import jax.numpy as jnp
from jax import lax


def newton_sqrt(a, tol):
    """Carry the residual too, so the condition only compares."""

    def residual(x):
        return jnp.max(jnp.abs(x * x - a) / a)

    def cond_fn(carry):
        _, count, res = carry
        return (res > tol) * (count < 100)

    def body_fn(carry):
        x, count, _ = carry
        nx = (x * x + a) / (2 * x)
        return nx, count + 1, residual(nx)

    x, count, _ = lax.while_loop(cond_fn, body_fn, (a, jnp.int32(0), residual(a)))
    return x, count
