import jax.numpy as jnp
from jax import lax


def ema(xs, alpha):
    out = jnp.zeros_like(xs)

    def body(t, state):
        m, hist = state
        m = (1 - alpha) * m + alpha * xs[t]
        return m, hist.at[t].set(m)

    _, out = lax.fori_loop(0, xs.shape[0], body, (jnp.zeros(xs.shape[-1], xs.dtype), out))
    return out
