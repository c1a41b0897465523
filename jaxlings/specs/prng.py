"""Topic `prng`: typed keys, split vs fold_in, consuming keys correctly under jit.

Every task prescribes its key discipline exactly, so outputs are compared bit for bit (or to
float round-off where a reduction order may differ); no check here is statistical, so no
check has a false-fail rate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxlings.grading import workloads
from jaxlings.grading.checks import Correct, Jit, KeyReuse, Speed
from jaxlings.grading.requirements import HloLinesAtMost, OpsDoNotGrow, Requirement
from jaxlings.grading.spec import Case, Edge, Exercise, Key, Topic

# A Python loop over keys, trials or steps: the exported program grows with the loop's count.
# (As written it grows little: JAX lowers every random draw as a call to one shared private
# function; the operations it runs, `n_ops`, and its compiled HLO grow with every step.)
# Measured, smallest size -> largest (operations run; HLO lines at the largest); the OpsDoNotGrow
# limit (x3 + 20) and the HLO limit (x4 + 300 of the reference's lines) in brackets:
#   derive_keys     reference 159 -> 159 (543 lines)    Python loop of fold_in  156 -> 4,823 [488] (10,557 [2,472])
#   monte_carlo_pi  reference 370 -> 376 (1,021 lines)  Python loop of trials   350 -> 4,461 [1,070] (11,810 [4,384])
#   noisy_walk      reference 227 -> 227 (722 lines)    Python loop of steps    219 -> 4,799 [677] (38,499 [3,188])


def no_python_loop(why: str) -> tuple[Requirement, ...]:
    return (OpsDoNotGrow(why), HloLinesAtMost(4.0, 300.0, why))


def _key(rng: np.random.Generator) -> Key:
    return Key(int(rng.integers(0, 2**31)))


def _derive_keys(rng: np.random.Generator, size: int) -> Case:
    return Case((_key(rng), size))


def _dropout(rng: np.random.Generator, size: int) -> Case:
    x = rng.normal(size=(size, 8) if size < 1000 else (size,)).astype(np.float32)
    return Case((_key(rng), x, float(rng.choice([0.1, 0.25, 0.5, 0.9]))))


def _dropout_on_device(key, size: int) -> tuple[Any, Any, float]:
    """`_dropout`'s speed workload made on the device (`jaxlings.grading.workloads`), at rate 0.5."""
    import jax

    k1, k2 = jax.random.split(key)
    return (k1, workloads.uniform(k2, (size,), -2.0, 2.0), 0.5)


def _monte_carlo_pi(rng: np.random.Generator, size: int) -> Case:
    return Case((_key(rng), size, 64 * size))


def _noisy_walk(rng: np.random.Generator, size: int) -> Case:
    x0 = rng.normal(size=(max(1, size // 4), 3)).astype(np.float32)
    return Case((_key(rng), x0, size, float(rng.uniform(0.1, 2.0))))


# -- edge families: each edge case's instances in a graded run (`Edge`), never its public one


def _rate_zero(rng: np.random.Generator) -> Case:
    """rate 0: every entry kept, unscaled."""
    shape = tuple(int(d) for d in rng.integers(1, 7, int(rng.integers(1, 3))))
    return Case((_key(rng), rng.normal(size=shape).astype(np.float32), 0.0))


def _half_small(rng: np.random.Generator) -> Case:
    """rate 0.5 on a small 2-D array of distinct entries."""
    r, c = int(rng.integers(1, 5)), int(rng.integers(2, 6))
    return Case((_key(rng), rng.permutation(r * c).astype(np.float32).reshape(r, c), 0.5))


TOPIC = Topic(
    name="prng",
    title="PRNG keys",
    exercises=(
        Exercise(
            name="derive_keys",
            sample=_derive_keys,
            sizes=(1, 2, 5, 64),
            static_argnums=(1,),
            outputs=("init_key", "step_keys"),
            checks=(
                Correct(3),
                Jit(1, requirements=no_python_loop("fold in all indices at once with jax.vmap, not a Python loop")),
                KeyReuse(),
            ),
            hints=(
                "Two jobs, two tools, two different keys: one `split` of `key` gives the init key and a root for the "
                "steps; every step key is then folded in from that root. Nothing is derived from `key` after its split.",
                "`jax.random.split(key)` without a count returns an array of two keys, which unpacks like a pair; "
                "`jax.random.fold_in(k, i)` derives one key from a key and an integer; `jax.vmap` maps a function of one "
                "index over `jnp.arange(n)`.",
                "The step keys come from a function of one index that closes over the root (only the index is mapped), "
                "so vmapping it gives shape `(n,)`. Return `(init_key, step_keys)` in that order. If your first step key "
                "equals your init key, you folded into `key` instead of the root.",
            ),
        ),
        Exercise(
            name="dropout",
            sample=_dropout,
            edge_cases=(
                Edge(Case((Key(7), np.ones((4, 4), np.float32), 0.0), "rate 0 keeps everything"), _rate_zero),
                Edge(
                    Case((Key(11), np.arange(12, dtype=np.float32).reshape(3, 4), 0.5), "rate 0.5, small"), _half_small
                ),
            ),
            checks=(
                Correct(3),
                Jit(1),
                Speed(1, size={"cpu": 1 << 20, "gpu": 1 << 25, "tpu": 1 << 27}, generate=_dropout_on_device),
                KeyReuse(),
            ),
            hints=(
                "One key, one draw: the whole mask comes from a single random call with the key as given.",
                "`jax.random.bernoulli(key, p, shape)` is True with probability `p`, here the keep probability; "
                "`jnp.where` then picks between the rescaled entry and 0.",
                "Per entry the answer is the rescaled entry where the mask keeps it and zero elsewhere. The usual slips: "
                "drawing with `rate` instead of `1 - rate` (that keeps the dropped ones), splitting `key` first (another "
                "mask), and a zero or scale whose dtype changes the result's: it must keep `x`'s dtype.",
            ),
        ),
        Exercise(
            name="monte_carlo_pi",
            sample=_monte_carlo_pi,
            sizes=(1, 3, 16),
            static_argnums=(1, 2),
            # A point on the circle's edge may count differently where XLA fuses x**2 + y**2 differently (one
            # in a few million, seen with a Python loop): rtol 1e-4 lets one such point per trial of the speed
            # workload (16,384 samples: 4 / 16384 / pi = 7.8e-5) through; a wrong key discipline is off by ~0.4%.
            rtol=1e-4,
            atol=1e-5,
            checks=(
                Correct(3),
                Jit(
                    1,
                    requirements=no_python_loop(
                        "run the trials with jax.vmap; a Python loop repeats the trial's code once per trial"
                    ),
                ),
                Speed(1, size={"cpu": 256, "gpu": 4096, "tpu": 2048}),
                KeyReuse(),
            ),
            hints=(
                "Write one trial as a function of one key, then run it on many keys at once.",
                "`jax.random.split(key, n_trials)` makes one key per trial; `jax.vmap(trial)` maps a one-key function "
                "over an array of keys.",
                "The inner function takes one key and returns one scalar estimate; inside it, follow the docstring's key "
                "discipline step by step (one split, one draw per key). Averaging a boolean needs a cast to float32 "
                "first. Mapped over `n_trials` keys it returns the `(n_trials,)` estimates.",
            ),
        ),
        Exercise(
            name="noisy_walk",
            sample=_noisy_walk,
            sizes=(1, 4, 33),
            static_argnums=(2,),
            rtol=1e-5,
            atol=1e-5,
            # A TPU's normal draws differ from the CPU's by up to 3.5e-5 (of 1) each, and a walk adds
            # them up: 9.3e-5 after 200 steps at sigma 0.5, past 5e-5 where the walk nears 0
            # (benchmarks/results/2026-12-06-tpu-v5e-grading.md). By sqrt(steps) * sigma, the speed
            # workload's 2048 steps at sigma up to 2 reach about 2e-3.
            accelerator_tolerance={"tpu": (5e-4, 5e-3)},
            checks=(
                Correct(3),
                Jit(
                    1,
                    requirements=no_python_loop(
                        "loop with jax.lax.scan; a Python loop repeats the step's code once per step"
                    ),
                ),
                Speed(1, size={"cpu": 2048, "gpu": 8192, "tpu": 2048}),
                KeyReuse(),
            ),
            hints=(
                "Each step needs its own key. Make all of them before the loop starts.",
                "`jax.random.split(key, n_steps)` makes all the keys up front; `jax.lax.scan(f, init, xs)` feeds `f` one "
                "row of `xs` per iteration, in order.",
                "The scan step receives the carry and one row of `xs`, and returns `(new carry, this step's output)`; scan "
                "stacks the outputs. Here the state is both. Pass the keys as `xs` and draw from the one the step "
                "receives: a key the step closes over is the same key at every step, reused.",
            ),
        ),
    ),
)
