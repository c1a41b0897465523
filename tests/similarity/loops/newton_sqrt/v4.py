import jax
import jax.numpy as jnp


def newton_sqrt(a, tol):
    def not_converged(xk):
        x, k = xk
        rel = jnp.abs(jnp.square(x) - a) / a
        return jnp.any(rel > tol) & (k < 100)

    def iterate(xk):
        x, k = xk
        x = jnp.where(True, 0.5 * x + 0.5 * a / x, x)
        return x, k + jnp.int32(1)

    x, k = jax.lax.while_loop(not_converged, iterate, (a.astype(jnp.float32), jnp.int32(0)))
    return x, k.astype(jnp.int32)
