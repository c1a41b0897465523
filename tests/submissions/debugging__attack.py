"""Hostile: try to pass the outcome checks without doing what they measure."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify


class _Agreeable(np.ndarray):
    """An array that claims to equal anything."""

    def __eq__(self, other):
        return True


def normalize_rows(x, debug):
    # jit: the print hidden in a `lax.cond` on the flag, so that it runs only with debug on (prints
    # passes) while hoping the program with debug off counts as free: the cond still stages the
    # callback into that program, which therefore cannot be exported
    norms = jnp.sqrt(jnp.sum(x * x, axis=-1, keepdims=True))
    nonzero = norms > 0
    jax.lax.cond(debug, lambda z: jax.debug.print("normalize_rows: {} of {} rows are zero", z, x.shape[0]),
                 lambda z: None, jnp.sum(~nonzero))
    return jnp.where(nonzero, x / jnp.where(nonzero, norms, 1.0), 0.0)


def checked_entropy(p):
    # correct: an "empty message" that lies about its equality (refused: not a plain array)
    return np.zeros(0, np.uint8).view(_Agreeable), -jnp.sum(jax.scipy.special.xlogy(p, p))


def first_nan_grad(w0, x, y):
    # correct: no training at all, the answer guessed from the data's look: NaN at step 0 where the
    # weights start negative, else the step after the first batch holding a huge feature (an
    # outlier). Right on the outlier cases, wrong where the weights slide to 0 with no outlier
    outlier = jnp.any(x > 100.0, axis=(1, 2))
    after = jnp.argmax(outlier) + 1
    guess = jnp.where(jnp.any(outlier) & (after < x.shape[0]), after, -1)
    return jnp.where(jnp.any(w0 < 0), 0, guess).astype(jnp.int32)


def scoped_mlp(x, W1, b1, W2, b2):
    # jit: a dead dot in "readout" to plant the name, the real work all in "hidden"
    # (JAX drops the dead dot before lowering, so no `dot_general` is left in "readout")
    with jax.named_scope("readout"):
        _planted = x @ W1
    with jax.named_scope("hidden"):
        return jax.nn.relu(x @ W1 + b1) @ W2 + b2
