"""Each function fails exactly one check (or is right, as a control)."""

import jax
import jax.numpy as jnp


def derive_keys(key, n):
    # wrong values: split AND fold_in on the same key (the step numbers folded into `key`, not
    # into `step_root`), so step_keys[i] is split(key)[i]: step 0 collides with init_key.
    # jit-able, and no reuse for the checker to see (fold_in uses no key up).
    init_key, _ = jax.random.split(key)
    step_keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(n))
    return init_key, step_keys


def dropout(key, x, rate):
    # right values, but reuse hidden behind legacy raw uint32 keys
    raw = jax.random.key_data(key)
    keep = jax.random.bernoulli(jax.random.wrap_key_data(raw), 1.0 - rate, x.shape)
    noise = jax.random.normal(jax.random.wrap_key_data(raw), ())  # the same key again, unseen by the checker
    return jnp.where(keep, x / (1.0 - rate), jnp.zeros_like(x)) + 0.0 * noise


def monte_carlo_pi(key, n_trials, n_samples):
    # right values, but the parent key is consumed again after being split
    def trial(k):
        kx, ky = jax.random.split(k)
        x = jax.random.uniform(kx, (n_samples,))
        y = jax.random.uniform(ky, (n_samples,))
        return 4.0 * jnp.mean((x**2 + y**2 <= 1.0).astype(jnp.float32))

    keys = jax.random.split(key, n_trials)
    _ = jax.random.uniform(key)
    return jax.vmap(trial)(keys)


def noisy_walk(key, x0, n_steps, sigma):
    # control: right
    def step(x, k):
        x = x + sigma * jax.random.normal(k, x0.shape, x0.dtype)
        return x, x

    return jax.lax.scan(step, x0, jax.random.split(key, n_steps))[1]
