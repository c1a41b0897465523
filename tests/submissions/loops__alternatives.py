"""Right answers written differently from the reference: each earns full marks."""

import jax.numpy as jnp
from jax import lax


def power_iteration(A, x0, n_iters):
    # a small unroll: the loop stays a loop whose body holds 4 steps
    def step(i, x):
        y = jnp.dot(A, x)
        return y / jnp.sqrt(jnp.sum(y * y))

    x = lax.fori_loop(0, n_iters, step, x0 / jnp.linalg.norm(x0), unroll=4)
    return x, jnp.dot(x, jnp.dot(A, x))


def ema(xs, alpha):
    # fori_loop filling a preallocated trajectory, and the update written as m + alpha (x - m)
    def step(t, state):
        m, out = state
        m = m + alpha * (xs[t] - m)
        return m, out.at[t].set(m)

    _, out = lax.fori_loop(0, xs.shape[0], step, (jnp.zeros(xs.shape[1], xs.dtype), jnp.zeros_like(xs)))
    return out


def newton_sqrt(a, tol):
    # the residual carried in the loop state instead of recomputed by the condition
    def residual(x):
        return jnp.max(jnp.abs(x * x - a) / a)

    def not_done(state):
        x, k, r = state
        return (r > tol) & (k < 100)

    def update(state):
        x, k, _ = state
        x = 0.5 * (x + a / x)
        return x, k + 1, residual(x)

    x, k, _ = lax.while_loop(not_done, update, (a, jnp.int32(0), residual(a)))
    return x, k


def rnn_loss(W, xs):
    # fori_loop with Python-int bounds is a scan: reverse-mode differentiable
    def step(t, state):
        h, total = state
        h = jnp.tanh(W @ h + xs[t])
        return h, total + jnp.sum(h**2)

    _, total = lax.fori_loop(0, xs.shape[0], step, (jnp.zeros(W.shape[0], xs.dtype), jnp.float32(0)))
    return total / xs.size
