"""More faults, one per function: what each fails is in its comment."""

import jax
import jax.numpy as jnp
import numpy as np


# control: right
def create_filled(value, shape):
    return jnp.full(shape, value, jnp.float32)


# jnp.where on a static flag: right values, both branches computed -> fails jit
def conditional_fn(x, normalize):
    return jnp.where(normalize, x * jax.lax.rsqrt(jnp.sum(x * x, axis=-1, keepdims=True) + 1e-6), x)


# jnp.where computes both sides: no cond, and the solve always runs -> fails jit and speed
def cached_solve(A, b, x_cached, tol):
    return jnp.where(jnp.max(jnp.abs(A @ x_cached - b)) <= tol, x_cached, jnp.linalg.solve(A, b))


# the padding is zeroed but counted: mean and variance over all m entries -> fails correct
@jax.jit
def standardize_padded(x, n):
    mask = jnp.arange(x.shape[0]) < n
    data = jnp.where(mask, x, 0.0)
    z = (data - jnp.mean(data)) / jnp.sqrt(jnp.var(data) + 1e-5)
    return jnp.where(mask, z, 0.0)


@jax.jit
def _kernel(x, n):
    mask = jnp.arange(x.shape[0]) < n
    mean = jnp.sum(jnp.where(mask, x, 0.0)) / n
    centred = jnp.where(mask, x - mean, 0.0)
    return centred / jnp.sqrt(jnp.sum(centred * centred) / n + 1e-5)


# one bucket for every length, 2**21: a single compilation, but thousands of times the work and the
# transfers of the largest bucket on every call -> fails speed
def standardize(x):
    n = x.shape[0]
    padded = np.zeros(1 << 21, np.float32)
    padded[:n] = np.asarray(x)
    return np.asarray(_kernel(padded, n))[:n]


def _sums_impl(x, widths):
    c = jnp.concatenate([jnp.zeros(1, x.dtype), jnp.cumsum(x)])
    return tuple(c[w:] - c[:-w] for w in widths)


_sums = jax.jit(_sums_impl, static_argnums=1)


# `tuple(widths)` of an array is a tuple of JAX scalars, unhashable too -> fails correct (and compiles)
def window_sums(x, widths):
    return _sums(x, tuple(widths))
