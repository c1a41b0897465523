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


def path_length(points):
    # grad: one `where` on the output only; the sqrt still sees the zero, and 0 * inf is NaN
    seg = points[1:] - points[:-1]
    len2 = jnp.sum(seg * seg, axis=-1)
    return jnp.sum(jnp.where(len2 > 0, jnp.sqrt(len2), 0.0))


def scoped_mlp(x, W1, b1, W2, b2):
    # jit: right values, no named scopes at all
    return jax.nn.relu(x @ W1 + b1) @ W2 + b2
