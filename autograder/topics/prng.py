"""Topic `prng`: typed keys, split vs fold_in, consuming keys correctly under jit.

Every task prescribes its key discipline exactly, so outputs are compared bit for bit (or to
float round-off where a reduction order may differ); no check here is statistical, so no
check has a false-fail rate.
"""

from __future__ import annotations

import numpy as np

from autograder.requirements import HloLinesAtMost, OpsDoNotGrow, Requirement

# A Python loop over keys, trials or steps: the exported program grows with the loop's count.
# (As written it grows little: JAX lowers every random draw as a call to one shared private
# function; the operations it runs, `n_ops`, and its compiled HLO grow with every step.)
# Measured, smallest size -> largest (operations run; HLO lines at the largest); the OpsDoNotGrow
# limit (x3 + 20) and the HLO limit (x4 + 300 of the reference's lines) in brackets:
#   derive_keys     reference 155 -> 155 (495 lines)    Python loop of fold_in  152 -> 4,819 [476] (10,376 [2,280])
#   monte_carlo_pi  reference 370 -> 376 (1,021 lines)  Python loop of trials   350 -> 4,461 [1,070] (11,810 [4,384])
#   noisy_walk      reference 227 -> 227 (722 lines)    Python loop of steps    219 -> 4,799 [677] (38,499 [3,188])


def no_python_loop(why: str) -> tuple[Requirement, ...]:
    return (OpsDoNotGrow(why), HloLinesAtMost(4.0, 300.0, why))
from autograder.spec import Case, Exercise, Key, Speed, Topic


def _key(rng: np.random.Generator) -> Key:
    return Key(int(rng.integers(0, 2**31)))


def _derive_keys(rng: np.random.Generator, size: int) -> Case:
    return Case((_key(rng), size))


def _dropout(rng: np.random.Generator, size: int) -> Case:
    x = rng.normal(size=(size, 8) if size < 1000 else (size,)).astype(np.float32)
    return Case((_key(rng), x, float(rng.choice([0.1, 0.25, 0.5, 0.9]))))


def _monte_carlo_pi(rng: np.random.Generator, size: int) -> Case:
    return Case((_key(rng), size, 64 * size))


def _noisy_walk(rng: np.random.Generator, size: int) -> Case:
    x0 = rng.normal(size=(max(1, size // 4), 3)).astype(np.float32)
    return Case((_key(rng), x0, size, float(rng.uniform(0.1, 2.0))))


TOPIC = Topic(
    name="prng",
    title="PRNG keys",
    exercises=(
        Exercise(
            name="derive_keys",
            sample=_derive_keys,
            sizes=(1, 2, 5, 64),
            static_argnums=(1,),
            requirements=no_python_loop("fold in all indices at once with jax.vmap, not a Python loop"),
            checks={"correct": 3, "jit": 1, "key_reuse": 0},
            hints=(
                "You need two different ways of making n keys from one: one that uses the key up, and one that does not.",
                "`jax.random.split(key, n)` gives the first array; `jax.random.fold_in(key, i)` gives one key of the second.",
                "folded = jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.arange(n)); return split, folded",
            ),
        ),
        Exercise(
            name="dropout",
            sample=_dropout,
            edge_cases=(
                Case((Key(7), np.ones((4, 4), np.float32), 0.0), "rate 0 keeps everything"),
                Case((Key(11), np.arange(12, dtype=np.float32).reshape(3, 4), 0.5), "rate 0.5, small"),
            ),
            checks={"correct": 3, "jit": 1, "speed": 1, "key_reuse": 0},
            speed=Speed(size={"cpu": 1 << 20, "gpu": 1 << 25}),
            hints=(
                "One key, one draw: the whole mask comes from a single random call with the key as given.",
                "`jax.random.bernoulli(key, 1 - rate, x.shape)` is True where an entry is kept; `jnp.where` picks.",
                "keep = jax.random.bernoulli(key, 1.0 - rate, x.shape); return jnp.where(keep, x / (1.0 - rate), 0)  (mind the dtype)",
            ),
        ),
        Exercise(
            name="monte_carlo_pi",
            sample=_monte_carlo_pi,
            sizes=(1, 3, 16),
            static_argnums=(1, 2),
            requirements=no_python_loop("run the trials with jax.vmap; a Python loop repeats the trial's code once per trial"),
            rtol=1e-5,
            atol=1e-5,
            checks={"correct": 3, "jit": 1, "speed": 1, "key_reuse": 0},
            speed=Speed(size={"cpu": 256, "gpu": 4096}),
            hints=(
                "Write one trial as a function of one key, then run it on many keys at once.",
                "`jax.random.split(key, n_trials)` makes the trial keys; `jax.vmap(trial)(keys)` runs them all.",
                "def trial(k): kx, ky = split(k); x = uniform(kx, (n,)); y = uniform(ky, (n,)); "
                "return 4 * jnp.mean((x**2 + y**2 <= 1).astype(jnp.float32))",
            ),
        ),
        Exercise(
            name="noisy_walk",
            sample=_noisy_walk,
            sizes=(1, 4, 33),
            static_argnums=(2,),
            requirements=no_python_loop("loop with jax.lax.scan; a Python loop repeats the step's code once per step"),
            rtol=1e-5,
            atol=1e-5,
            checks={"correct": 3, "jit": 1, "speed": 1, "key_reuse": 0},
            speed=Speed(size={"cpu": 2048, "gpu": 8192}),
            hints=(
                "Each step needs its own key. Make all of them before the loop starts.",
                "`keys = jax.random.split(key, n_steps)`, then `jax.lax.scan(step, x0, keys)` hands step t its key.",
                "def step(x, k): x = x + sigma * jax.random.normal(k, x0.shape, x0.dtype); return x, x",
            ),
        ),
    ),
)
