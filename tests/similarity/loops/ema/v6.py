import jax.numpy as jnp
from jax import lax


def ema(xs, alpha):
    """Scan over reversed powers: m_t = (1 - a)^t * cumsum(a x_s / (1 - a)^s)."""
    keep = 1.0 - alpha
    steps = jnp.arange(1, xs.shape[0] + 1, dtype=xs.dtype)[:, None]
    scaled = alpha * xs * keep ** (-steps)
    return lax.cumsum(scaled, axis=0) * keep**steps
