"""The seed's mistakes, one per function: what each fails is in its comment."""

import jax
import jax.numpy as jnp
import numpy as np


# jitted without static_argnums: `shape` is traced, jnp.full cannot use it -> fails correct, jit, compiles
@jax.jit
def create_filled(value, shape):
    return jnp.full(shape, value, jnp.float32)


# jitted without static_argnums: a Python `if` on a tracer -> fails correct and jit
@jax.jit
def conditional_fn(x, normalize):
    if normalize:
        return x * jax.lax.rsqrt(jnp.sum(x * x, axis=-1, keepdims=True) + 1e-6)
    return x


# a Python `if` on a computed value: fine eagerly, TracerBoolConversionError under jit -> fails jit
def cached_solve(A, b, x_cached, tol):
    if jnp.max(jnp.abs(A @ x_cached - b)) <= tol:
        return x_cached
    return jnp.linalg.solve(A, b)


# slicing with `n`: fine eagerly, a traced shape under jit -> fails jit
def standardize_padded(x, n):
    data = x[:n]
    z = (data - jnp.mean(data)) / jnp.sqrt(jnp.var(data) + 1e-5)
    return jnp.zeros_like(x).at[:n].set(z)


@jax.jit
def _exact(x):
    return (x - jnp.mean(x)) / jnp.sqrt(jnp.var(x) + 1e-5)


# no bucketing: the jitted kernel sees every length -> fails compiles
def standardize(x):
    return _exact(x)


def _sums_impl(x, widths):
    c = jnp.concatenate([jnp.zeros(1, x.dtype), jnp.cumsum(x)])
    return tuple(c[w:] - c[:-w] for w in widths)


_sums = jax.jit(_sums_impl, static_argnums=1)


# the list (or array) handed straight to a static argument -> fails correct (and compiles)
def window_sums(x, widths):
    return _sums(x, widths)
