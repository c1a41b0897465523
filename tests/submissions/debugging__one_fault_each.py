"""One fault per function; its comment names the checks that must fail it (and no other does)."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify
from jax.scipy.special import xlogy


def message_bytes(message):
    return np.frombuffer((message or "").encode(), dtype=np.uint8)


def normalize_rows(x, debug):
    # prints: a Python print under `if debug:` runs while JAX traces (once per shape and flag, and
    # showing a tracer, not the count), not on every debug call
    norms = jnp.linalg.norm(x, axis=-1, keepdims=True)
    nonzero = norms > 0
    if debug:
        print(f"normalize_rows: {jnp.sum(~nonzero)} of {x.shape[0]} rows are zero")
    return jnp.where(nonzero, x / jnp.where(nonzero, norms, 1.0), 0.0)


def checked_entropy(p):
    # correct: the checks in the other order, so where both fail the sum's message is reported
    def entropy(p):
        s = jnp.sum(p)
        checkify.check(jnp.abs(s - 1.0) <= 1e-3, "probabilities sum to {s:.4f}", s=s)
        checkify.check(jnp.all(p >= 0), "negative probability at index {i}", i=jnp.argmax(p < 0))
        return -jnp.sum(xlogy(p, p))

    err, h = jax.jit(checkify.checkify(entropy))(p)
    return message_bytes(err.get()), h


def first_nan_step(h0, a, c):
    # correct: argmax of the flags alone, which is 0 (not -1) when no step makes a NaN
    def step(h, ac):
        h = jnp.sqrt(ac[0] * h + ac[1])
        return h, jnp.any(jnp.isnan(h))

    _, bad = jax.lax.scan(step, h0, (a, c))
    return jnp.argmax(bad).astype(jnp.int32)


LEARNING_RATE = 0.05


def fit_loss(w, x, y):
    z = x @ w
    pred = jnp.where(z > 0, jnp.sqrt(z), 0.0)
    return jnp.mean((pred - y) ** 2)


def first_nan_grad(w0, x, y):
    # correct: off by one, the steps counted from 1 (the first step's NaN is reported as 1)
    def step(w, batch):
        g = jax.grad(fit_loss)(w, *batch)
        return w - LEARNING_RATE * g, jnp.any(jnp.isnan(g))

    _, bad = jax.lax.scan(step, w0, (x, y))
    return jnp.where(jnp.any(bad), jnp.argmax(bad) + 1, -1).astype(jnp.int32)


def scoped_mlp(x, W1, b1, W2, b2):
    # jit: one scope nested in the other, hoping a dot in `hidden/readout` counts for both
    with jax.named_scope("hidden"):
        h = jax.nn.relu(x @ W1 + b1)
        with jax.named_scope("readout"):
            return h @ W2 + b2
