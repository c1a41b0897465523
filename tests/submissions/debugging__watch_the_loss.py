"""Faults the other crafted submissions lack; each comment names the checks that must fail it."""

import jax
import jax.numpy as jnp

LEARNING_RATE = 0.05


def fit_loss(w, x, y):
    z = x @ w
    pred = jnp.where(z > 0, jnp.sqrt(z), 0.0)
    return jnp.mean((pred - y) ** 2)


def first_nan_grad(w0, x, y):
    # correct: watches the loss instead of the gradient. The loss is finite at the step whose
    # gradient is NaN, and stays finite after the update has put NaNs in the weights (NaN > 0 is
    # False, so fit_loss predicts 0 there too): this reports -1 wherever the answer is a step
    def step(w, batch):
        loss, g = jax.value_and_grad(fit_loss)(w, *batch)
        return w - LEARNING_RATE * g, jnp.isnan(loss)

    _, bad = jax.lax.scan(step, w0, (x, y))
    return jnp.where(jnp.any(bad), jnp.argmax(bad), -1).astype(jnp.int32)


def scoped_mlp(x, W1, b1, W2, b2):
    # jit: the first product computed before its scope opens, so only the bias and the relu are in
    # "hidden" and its `dot_general` lies in no named scope
    xw = x @ W1
    with jax.named_scope("hidden"):
        h = jax.nn.relu(xw + b1)
    with jax.named_scope("readout"):
        return h @ W2 + b2
