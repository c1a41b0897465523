"""Each function fails exactly the check(s) named in its comment."""

import functools

import jax
import jax.numpy as jnp
import numpy as np


# `value` made static too: every new value compiles anew -> fails jit (re-tracing) and compiles
@functools.partial(jax.jit, static_argnums=(0, 1))
def create_filled(value, shape):
    return jnp.full(shape, value, jnp.float32)


# lax.cond on a static flag: right values, but both branches in the program -> fails jit
def conditional_fn(x, normalize):
    def scaled(x):
        return x * jax.lax.rsqrt(jnp.sum(x * x, axis=-1, keepdims=True) + 1e-6)

    return jax.lax.cond(normalize, scaled, lambda x: x, x)


# the solve runs before the cond, on every call: a cond, but no work saved -> fails speed
def cached_solve(A, b, x_cached, tol):
    solved = jnp.linalg.solve(A, b)
    return jax.lax.cond(jnp.max(jnp.abs(A @ x_cached - b)) <= tol, lambda: x_cached, lambda: solved)


def _standardize_body(x, n):
    mask = jnp.arange(x.shape[0]) < n
    mean = jnp.sum(jnp.where(mask, x, 0.0)) / n
    centred = jnp.where(mask, x - mean, 0.0)
    return centred / jnp.sqrt(jnp.sum(centred * centred) / n + 1e-5)


# `n` made static: right values, but every new length re-traces -> fails jit
standardize_padded = jax.jit(_standardize_body, static_argnums=1)

_kernel = jax.jit(_standardize_body)


# linear buckets of 32 (32 sizes up to 1024) instead of powers of two -> fails compiles
def standardize(x):
    n = x.shape[0]
    padded = np.zeros(32 * -(-n // 32), np.float32)
    padded[:n] = np.asarray(x)
    return np.asarray(_kernel(padded, n))[:n]


class _ById:
    """A "hashable wrapper" that hashes and compares by identity (object's defaults)."""

    def __init__(self, widths):
        self.widths = tuple(np.asarray(widths).tolist())


@functools.partial(jax.jit, static_argnums=1)
def _sums(x, config):
    c = jnp.concatenate([jnp.zeros(1, x.dtype), jnp.cumsum(x)])
    return tuple(c[w:] - c[:-w] for w in config.widths)


# a fresh wrapper object per call never equals the last one: a compilation per call -> fails compiles
def window_sums(x, widths):
    return _sums(x, _ById(widths))
