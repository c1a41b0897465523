"""`noisy_walk` with the trap its docstring warns of: every step draws from the same key."""

import jax


def noisy_walk(key, x0, n_steps, sigma):
    # wrong values, and a reused key: the step closes over `key` and ignores its own `k`
    def step(x, k):
        x = x + sigma * jax.random.normal(key, x0.shape, x0.dtype)
        return x, x

    return jax.lax.scan(step, x0, jax.random.split(key, n_steps))[1]
