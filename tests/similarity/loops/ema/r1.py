import jax.numpy as jnp
from jax import lax


def ema(xs, alpha):
    def step(m, x):
        m_new = alpha * x + (1.0 - alpha) * m
        return m_new, m_new

    m0 = jnp.zeros(xs.shape[1:], dtype=xs.dtype)
    _, ms = lax.scan(step, m0, xs)
    return ms
