"""One fault per function; its comment names the checks that must fail it (and no other does)."""

import jax
import jax.numpy as jnp

_printed = False


def clip_by_norm(g, max_norm):
    # jit: a Python `if` on a traced value (TracerBoolConversionError); right when called directly
    norm = jnp.sqrt(jnp.sum(g * g))
    if norm > max_norm:
        return g * (max_norm / norm)
    return g


def logged_softmax(x):
    # prints: a global flag read at trace time prints the line for the first shape only
    global _printed
    if not _printed:
        print(f"tracing logged_softmax: {x.dtype}{list(x.shape)}")
        _printed = True
    z = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return z / jnp.sum(z, axis=-1, keepdims=True)


def ema_update(count, avg, x, decay):
    # correct: no bias correction
    avg = decay * avg + (1.0 - decay) * x
    return count + 1, avg, avg


def regularized_loss(W, X, Y, l2):
    # jit: `0.0 * penalty` is not dead code, so with l2 = 0 the penalty is still computed
    eye = jnp.eye(W.shape[0], dtype=W.dtype)
    return jnp.mean((X @ W - Y) ** 2) + l2 * jnp.sum((W.T @ W - eye) ** 2)


def bce_with_logits(z, y):
    return jnp.mean(jnp.maximum(z, 0.0) - z * y + jnp.log1p(jnp.exp(-jnp.abs(z))))


def bce_fast(z, y):
    # compiles (and speed, by a small margin next to the inputs' transfer): not jitted, so called as
    # written it runs eagerly: nine operations, each compiled for every new shape and dispatched
    # on every call, each a pass over memory
    return bce_with_logits(z, y)


def affine(x, W, b):
    # speed: a Python loop over the rows, one small matmul dispatch per row
    return jnp.stack([row @ W + b for row in x])
