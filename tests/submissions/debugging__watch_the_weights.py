"""A fault of `first_nan_grad` the other crafted submissions lack; its comment names the check
that must fail it."""

import jax
import jax.numpy as jnp

LEARNING_RATE = 0.05


def fit_loss(w, x, y):
    z = x @ w
    pred = jnp.where(z > 0, jnp.sqrt(z), 0.0)
    return jnp.mean((pred - y) ** 2)


def first_nan_grad(w0, x, y):
    # correct: flags the weights each step starts from, so it reports the step after the NaN has
    # propagated into them (a step late, or -1 when the NaN gradient is the last step's), and a NaN
    # gradient at step 0 as step 1
    def step(w, batch):
        g = jax.grad(fit_loss)(w, *batch)
        return w - LEARNING_RATE * g, jnp.any(jnp.isnan(w))

    _, bad = jax.lax.scan(step, w0, (x, y))
    return jnp.where(jnp.any(bad), jnp.argmax(bad), -1).astype(jnp.int32)
