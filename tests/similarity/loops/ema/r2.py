import jax
import jax.numpy as jnp


def ema(xs, alpha):
    """Scan over the time axis, carrying the running average."""

    def body(avg, row):
        avg = (1 - alpha) * avg + alpha * row
        return avg, avg

    return jax.lax.scan(body, jnp.zeros_like(xs[0]), xs)[1]
