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


def path_length(points):
    # a zero-length segment's gradient set by a custom_jvp of the norm
    @jax.custom_jvp
    def norm(v):
        return jnp.sqrt(jnp.sum(v * v))

    @norm.defjvp
    def _(primals, tangents):
        (v,), (dv,) = primals, tangents
        n = norm(v)
        return n, jnp.where(n > 0, jnp.vdot(v, dv) / jnp.where(n > 0, n, 1.0), 0.0)

    return jnp.sum(jax.vmap(norm)(jnp.diff(points, axis=0)))


def scoped_mlp(x, W1, b1, W2, b2):
    # both scopes inside an outer "mlp" scope would fail (the paths are exact); beside each other,
    # with the bias and relu written out
    with jax.named_scope("hidden"):
        h = jnp.maximum(jnp.dot(x, W1) + b1, 0.0)
    with jax.named_scope("readout"):
        out = jnp.dot(h, W2) + b2
    return out
