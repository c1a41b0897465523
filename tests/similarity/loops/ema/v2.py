import jax.numpy as jnp


def ema(xs, alpha):
    """Closed form: m_t = sum_s alpha (1 - alpha)^(t - s) x_s, as one matrix product."""
    T = xs.shape[0]
    t = jnp.arange(T)
    lags = t[:, None] - t[None, :]
    decay = jnp.where(lags >= 0, alpha * (1.0 - alpha) ** jnp.maximum(lags, 0), 0.0)
    return (decay @ xs).astype(xs.dtype)
