# crafted: the reference, with the definitions below in place of its own
"""Right answers written differently from the reference: all must pass, on the CPU and where
the speed rounds run on an accelerator (their outputs there are compared with the CPU's)."""


def dropout(key, x, rate):
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return x * keep.astype(x.dtype) / (1.0 - rate)


def monte_carlo_pi(key, n_trials, n_samples):
    def trial(k):
        kx, ky = jax.random.split(k)
        points = jnp.stack([jax.random.uniform(kx, (n_samples,)), jax.random.uniform(ky, (n_samples,))])
        inside = jnp.sum(points**2, axis=0) <= 1.0
        return 4.0 * jnp.count_nonzero(inside) / n_samples

    return jax.vmap(trial)(jax.random.split(key, n_trials)).astype(jnp.float32)
