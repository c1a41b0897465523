"""Each function fails exactly one check of topic `loops`."""

import jax.numpy as jnp
from jax import lax


def power_iteration(A, x0, n_iters):
    # right values, but a Python loop: unrolled under jit, n_iters copies of the step
    x = x0 / jnp.linalg.norm(x0)
    for _ in range(n_iters):
        y = A @ x
        x = y / jnp.linalg.norm(y)
    return x, x @ (A @ x)


def ema(xs, alpha):
    # wrong values: the weights of the new value and of the old average swapped
    def step(m, x):
        m = (1 - alpha) * x + alpha * m
        return m, m

    return lax.scan(step, jnp.zeros_like(xs[0]), xs)[1]


def newton_sqrt(a, tol):
    # right values, but a fixed 100 passes that stop updating once converged: no while loop
    def body(i, state):
        x, k = state
        going = (jnp.max(jnp.abs(x * x - a) / a) > tol) & (k < 100)
        return jnp.where(going, 0.5 * (x + a / x), x), k + going.astype(jnp.int32)

    return lax.fori_loop(0, 100, body, (a, jnp.int32(0)))


def rnn_loss(W, xs):
    # right values and a rolled loop, but a while_loop: jax.grad cannot go through it
    def cond(state):
        return state[0] < xs.shape[0]

    def body(state):
        t, h, total = state
        h = jnp.tanh(W @ h + xs[t])
        return t + 1, h, total + jnp.sum(h**2)

    _, _, total = lax.while_loop(cond, body, (0, jnp.zeros(W.shape[0], xs.dtype), jnp.float32(0)))
    return total / xs.size
