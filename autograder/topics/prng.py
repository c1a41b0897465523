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
                "For `folded`, write a function of one index `i` that folds `i` into `key`, and `jax.vmap` it over "
                "`jnp.arange(n)`: `key` is closed over, only the index is mapped. Return the pair in the order (split, "
                "folded).",
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
                "`jax.random.bernoulli(key, p, shape)` is True with probability `p`, here the keep probability; "
                "`jnp.where` then picks between the rescaled entry and 0.",
                "Where `keep` is true the output is `x` scaled by `1 / (1 - rate)`, elsewhere 0; build the zeros from `x` "
                "(`jnp.zeros_like`) so the result keeps `x`'s dtype. Use `key` as given: splitting it first changes the "
                "mask.",
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
                "`jax.random.split(key, n_trials)` makes one key per trial; `jax.vmap(trial)` maps a one-key function "
                "over an array of keys.",
                "Inside `trial`, split its key once into `kx, ky`, draw `n_samples` uniforms from each, and take 4 times "
                "the mean of the float32 indicator that the point lies in the unit circle. Then vmap `trial` over the "
                "split keys: the result has shape `(n_trials,)`.",
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
                "`jax.random.split(key, n_steps)` makes all the keys up front; `jax.lax.scan(f, init, xs)` feeds `f` one "
                "row of `xs` per iteration, in order.",
                "The step takes `(x, k)` and returns the new state twice, as `(carry, output)`, so scan stacks the states "
                "into the path. Draw the noise with `x0`'s shape and dtype, scale it by `sigma`, and return scan's second "
                "result (`x0` is not in it).",
            ),
        ),
    ),
)
