"""A second fault per function; each comment names the checks that must fail it."""

import jax
import jax.numpy as jnp
import numpy as np


def message_bytes(message):
    return np.frombuffer((message or "").encode(), dtype=np.uint8)


def normalize_rows(x, debug):
    # jit and prints: jax.debug.print whatever the flag, so the debug=False program still calls
    # back to the host (it cannot be exported) and prints on the calls that should be quiet
    norms = jnp.sqrt(jnp.sum(x * x, axis=-1, keepdims=True))
    nonzero = norms > 0
    jax.debug.print("normalize_rows: {} of {} rows are zero", jnp.sum(~nonzero), x.shape[0])
    return jnp.where(nonzero, x / jnp.where(nonzero, norms, 1.0), 0.0)


def checked_entropy(p):
    # correct: no validation at all: the message is always empty
    from jax.scipy.special import xlogy

    return message_bytes(None), -jnp.sum(xlogy(p, p))


def first_nan_step(h0, a, c):
    # jit: a Python loop over the steps, unrolled while tracing (one copy of the step per t)
    h, first = h0, jnp.int32(-1)
    for t in range(a.shape[0]):
        h = jnp.sqrt(a[t] * h + c[t])
        first = jnp.where((first < 0) & jnp.any(jnp.isnan(h)), t, first).astype(jnp.int32)
    return first


LEARNING_RATE = 0.05


def fit_loss(w, x, y):
    z = x @ w
    pred = jnp.where(z > 0, jnp.sqrt(z), 0.0)
    return jnp.mean((pred - y) ** 2)


def first_nan_grad(w0, x, y):
    # jit: right answers from a Python loop over the steps, unrolled while tracing (a copy of the
    # step, gradient included, per t)
    w, first = w0, jnp.int32(-1)
    for t in range(x.shape[0]):
        g = jax.grad(fit_loss)(w, x[t], y[t])
        first = jnp.where((first < 0) & jnp.any(jnp.isnan(g)), t, first).astype(jnp.int32)
        w = w - LEARNING_RATE * g
    return first


def scoped_mlp(x, W1, b1, W2, b2):
    # jit: right values, no named scopes at all
    return jax.nn.relu(x @ W1 + b1) @ W2 + b2
