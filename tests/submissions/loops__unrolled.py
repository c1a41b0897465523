"""Loops that do not stay rolled loops under jit, each failing `jit` only."""

import jax.numpy as jnp
from jax import lax


def power_iteration(A, x0, n_iters):
    # one `scan` equation in the jaxpr, but unroll=True hands XLA every step: the HLO grows
    def step(i, x):
        y = A @ x
        return y / jnp.linalg.norm(y)

    x = lax.fori_loop(0, n_iters, step, x0 / jnp.linalg.norm(x0), unroll=True)
    return x, x @ (A @ x)


def newton_sqrt(a, tol):
    # right values called directly, but a Python `while` on a computed value: fails under jit
    x, k = a, 0
    while float(jnp.max(jnp.abs(x * x - a) / a)) > tol and k < 100:
        x, k = 0.5 * (x + a / x), k + 1
    return x, jnp.int32(k)
