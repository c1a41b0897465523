"""PRNG keys: splitting, folding in, and never using a key twice.

JAX has no global random state. Every random function takes a *key*, and the same key always
gives the same numbers. You make new keys from old ones with `jax.random.split` (several
fresh keys from one; the old key is then used up) or `jax.random.fold_in` (a key derived
from a key and an integer, e.g. a step number or a device index, without using the key up).
Derive from any one key by `split` or by `fold_in`, never both: with `jax_threefry_partitionable`
on (JAX's default since 0.5.0, and this course's), the two give the very same keys.

The grader hands every function *typed* keys (`jax.random.key(seed)`, dtype `key<fry>`) and
also runs it under `jax.debug_key_reuse(True)`: the `key_reuse` check (advice, no points of its
own) tells you when a key is consumed twice or unwrapped into legacy raw uint32 data, which
hides reuse from JAX; a reused key also makes the outputs wrong, so `correct` fails. Each
task prescribes exactly how to use the keys, so that your output is bit-for-bit the reference's.

Lesson: course/lessons/prng.md
"""

import jax
import jax.numpy as jnp


def derive_keys(key, n):
    """Derive every key a training run needs from one key: one to initialise, one per step.

    Return a tuple `(init_key, step_keys)` of typed keys: `init_key` of shape `()` and
    `step_keys` of shape `(n,)`, derived exactly so:
      - `init_key, step_root = jax.random.split(key)`;
      - `step_keys[i]` = `jax.random.fold_in(step_root, i)` for i = 0, ..., n-1 (all at once,
        with `jax.vmap` over `jnp.arange(n)`, not a Python loop).

    Key discipline: derive from any one key by `split` or by `fold_in`, never both. `key` is
    used up by its split; fold the step numbers into `step_root`, never into `key` itself:
    with `jax_threefry_partitionable` on (JAX's default since 0.5.0, and this course's),
    `jax.random.fold_in(key, i)` is bit for bit `jax.random.split(key, m)[i]` (any m > i), so
    step 0 would draw the same numbers as `init_key`. (With the setting off, as in older JAX,
    the two differ, but only by luck: the discipline holds either way.)

    `n` is a Python int (static under jit). Example: `derive_keys(jax.random.key(0), 3)`
    returns one key and an array of 3 keys, all 4 of them different.
    """
    ### BEGIN SOLUTION
    init_key, step_root = jax.random.split(key)
    step_keys = jax.vmap(lambda i: jax.random.fold_in(step_root, i))(jnp.arange(n))
    return init_key, step_keys
    ### END SOLUTION


def dropout(key, x, rate):
    """Inverted dropout: zero each entry of `x` with probability `rate`, rescale the rest.

    Draw the keep-mask with one call, `keep = jax.random.bernoulli(key, 1 - rate, x.shape)`,
    and return `x / (1 - rate)` where `keep` is true and `0` elsewhere (same shape and dtype
    as `x`). `rate` is a float in [0, 1) and may be a traced value under jit.

    Example: with rate=0.5, about half the entries of `jnp.ones(1000)` become 0, the rest 2.
    """
    ### BEGIN SOLUTION
    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / (1.0 - rate), jnp.zeros_like(x))
    ### END SOLUTION


def monte_carlo_pi(key, n_trials, n_samples):
    """Estimate pi `n_trials` times independently, each from `n_samples` random points.

    Key discipline: `keys = jax.random.split(key, n_trials)`; trial t splits its key once,
    `kx, ky = jax.random.split(keys[t])`, draws `x = jax.random.uniform(kx, (n_samples,))` and
    `y` likewise from `ky`, and estimates `4 * mean(x**2 + y**2 <= 1)` in float32. Return the
    `(n_trials,)` float32 array of estimates. Run the trials with `jax.vmap`, not a Python loop.

    `n_trials` and `n_samples` are Python ints (static under jit).
    Example: `monte_carlo_pi(jax.random.key(0), 4, 100_000)` is close to `[3.14, 3.14, 3.14, 3.14]`.
    """
    ### BEGIN SOLUTION
    def trial(k):
        kx, ky = jax.random.split(k)
        x = jax.random.uniform(kx, (n_samples,))
        y = jax.random.uniform(ky, (n_samples,))
        return 4.0 * jnp.mean((x**2 + y**2 <= 1.0).astype(jnp.float32))

    return jax.vmap(trial)(jax.random.split(key, n_trials))
    ### END SOLUTION


def noisy_walk(key, x0, n_steps, sigma):
    """A Gaussian random walk: add fresh noise at every step, keeping the whole trajectory.

    Key discipline: `keys = jax.random.split(key, n_steps)`; step t computes
    `x = x + sigma * jax.random.normal(keys[t], x0.shape)`. Return the `(n_steps, *x0.shape)`
    array of the states after steps 1..n_steps (`x0` itself is not included).

    The trap: drawing every step's noise from the same key gives the same noise each step,
    a straight line instead of a walk; `correct` fails, and it and the `key_reuse` check name
    the reused key.
    `n_steps` is a Python int (static under jit); use `jax.lax.scan` over the keys.
    """
    ### BEGIN SOLUTION
    def step(x, k):
        x = x + sigma * jax.random.normal(k, x0.shape, x0.dtype)
        return x, x

    _, path = jax.lax.scan(step, x0, jax.random.split(key, n_steps))
    return path
    ### END SOLUTION
