import jax
import jax.numpy as jnp


def newton_sqrt(a, tol):
    limit = jnp.int32(100)
    inv_a = 1.0 / a

    def worse_than_tol(pair):
        root, it = pair
        bad = jnp.abs(root * root * inv_a - 1.0) > tol
        return bad.any() & (it < limit)

    def halve(pair):
        root, it = pair
        return jax.numpy.mean(jnp.stack([root, a / root]), axis=0), it + 1

    return jax.lax.while_loop(worse_than_tol, halve, (a, jnp.int32(0)))
