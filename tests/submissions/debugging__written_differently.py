"""Right answers written differently from the reference: all must pass (outcomes, not source)."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify


def message_bytes(message):
    return np.frombuffer((message or "").encode(), dtype=np.uint8)


@jax.jit
def _safe_norms(x):
    s = jnp.sum(x * x, axis=-1, keepdims=True)
    return jnp.where(s > 0, jnp.sqrt(jnp.where(s > 0, s, 1.0)), 0.0)


def normalize_rows(x, debug):
    # jax.debug.callback with a Python print, behind the static flag: prints at run time too
    norms = _safe_norms(x)
    if debug:
        jax.debug.callback(lambda z, n: print(f"normalize_rows: {z} of {n} rows are zero"),
                           jnp.count_nonzero(norms == 0), x.shape[0])
    return jnp.where(norms > 0, x / jnp.maximum(norms, 1e-30), 0.0)


def _entropy_with_checks(p):
    checkify.check(jnp.all(p >= 0), "negative probability at index {i}", i=jnp.argmax(p < 0))
    s = jnp.sum(p)
    checkify.check(jnp.abs(s - 1.0) <= 1e-3, "probabilities sum to {s:.4f}", s=s)
    return -jnp.sum(jax.scipy.special.xlogy(p, p))


_checked = checkify.checkify(jax.jit(_entropy_with_checks))  # built once, checkify outside the jit


def checked_entropy(p):
    err, h = _checked(p)
    return message_bytes(err.get()), h


def first_nan_step(h0, a, c):
    # a fori_loop carrying the index found so far
    def body(t, carry):
        h, first = carry
        h = jnp.sqrt(a[t] * h + c[t])
        first = jnp.where((first < 0) & jnp.isnan(h).any(), t, first)
        return h, first

    return jax.lax.fori_loop(0, a.shape[0], body, (h0, jnp.int32(-1)))[1]


LEARNING_RATE = 0.05


def fit_loss(w, x, y):
    z = x @ w
    pred = jnp.where(z > 0, jnp.sqrt(z), 0.0)
    return jnp.mean((pred - y) ** 2)


def first_nan_grad(w0, x, y):
    # a fori_loop carrying the step found so far, with value_and_grad (the value unused)
    def body(t, carry):
        w, first = carry
        _, g = jax.value_and_grad(fit_loss)(w, x[t], y[t])
        first = jnp.where((first < 0) & ~jnp.all(g == g), t, first)  # NaN is the value unequal to itself
        return w - LEARNING_RATE * g, first

    return jax.lax.fori_loop(0, x.shape[0], body, (w0, jnp.int32(-1)))[1]


def scoped_mlp(x, W1, b1, W2, b2):
    # both scopes inside an outer "mlp" scope would fail (the paths are exact); beside each other,
    # the products written with jnp.einsum (which names a scope of its own inside each: JAX's, not
    # the student's) and with the bias and relu written out
    with jax.named_scope("hidden"):
        h = jnp.maximum(jnp.einsum("nk,kh->nh", x, W1) + b1, 0.0)
    with jax.named_scope("readout"):
        out = jnp.einsum("nh,hm->nm", h, W2) + b2
    return out
