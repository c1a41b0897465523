"""A student's submission for topic prng (bundled for `make demo`): some right, some not."""

import jax
import jax.numpy as jnp


def derive_keys(key, n):
    init_key, step_root = jax.random.split(key)
    step_keys = jnp.stack([jax.random.fold_in(step_root, i) for i in range(n)])  # a Python loop: right keys, a program that grows with n
    return init_key, step_keys


def dropout(key, x, rate):
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), 0.0).astype(x.dtype)


def monte_carlo_pi(key, n_trials, n_samples):
    estimates = []
    for k in jax.random.split(key, n_trials):  # a Python loop over trials: correct, but slow to trace
        kx, ky = jax.random.split(k)
        x = jax.random.uniform(kx, (n_samples,))
        y = jax.random.uniform(ky, (n_samples,))
        estimates.append(4.0 * jnp.mean((x**2 + y**2 <= 1.0).astype(jnp.float32)))
    return jnp.stack(estimates)


def noisy_walk(key, x0, n_steps, sigma):
    def step(x, _):
        x = x + sigma * jax.random.normal(key, x0.shape)  # the trap: the same key every step
        return x, x

    _, path = jax.lax.scan(step, x0, None, length=n_steps)
    return path
