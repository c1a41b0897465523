"""Topic `training`: a Flax NNX MLP, an Optax chain (clipping + schedule), a jitted train step.

UNFINISHED (see tests/test_topic_training.py): the donation requirement and the `trains`
check are not written yet, and the topic is not in ORDER.

Parameters cross the wire as nested dicts of float32 arrays, the optimizer state as the list
of its leaves (Adam's count, mu, nu, then the schedule's count), so every sampler below builds
plain NumPy trees of the reference's shapes: IN=8, HIDDEN=32, OUT=1.
"""

from __future__ import annotations

import numpy as np

from autograder.spec import Case, Exercise, Speed, Stream, Topic

IN, HIDDEN, OUT = 8, 32, 1


def _f32(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * rng.normal(size=shape)).astype(np.float32)


def _params(rng: np.random.Generator) -> dict:
    return {"hidden": {"bias": _f32(rng, HIDDEN, scale=0.1), "kernel": _f32(rng, IN, HIDDEN, scale=IN**-0.5)},
            "out": {"bias": _f32(rng, OUT, scale=0.1), "kernel": _f32(rng, HIDDEN, OUT, scale=HIDDEN**-0.5)}}


def _moments(rng: np.random.Generator, params: dict, positive: bool) -> list[np.ndarray]:
    leaves = [params["hidden"]["bias"], params["hidden"]["kernel"], params["out"]["bias"], params["out"]["kernel"]]
    return [(np.abs(_f32(rng, *a.shape, scale=1e-2)) if positive else _f32(rng, *a.shape, scale=1e-2)) for a in leaves]


def _opt_leaves(rng: np.random.Generator, params: dict) -> list[np.ndarray]:
    count = np.array(rng.integers(0, 100), np.int32)
    return [count, *_moments(rng, params, False), *_moments(rng, params, True), count.copy()]


def _batch(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    x = _f32(rng, n, IN)
    return x, np.sin(x @ _f32(rng, IN, OUT, scale=IN**-0.5)).astype(np.float32)


def _loss(rng: np.random.Generator, size: int) -> Case:
    return Case((_params(rng), *_batch(rng, max(1, size))))


def _init(rng: np.random.Generator, size: int) -> Case:
    return Case((_params(rng),))


def _step(rng: np.random.Generator, size: int) -> Case:
    params = _params(rng)
    return Case((params, _opt_leaves(rng, params), *_batch(rng, max(1, size))))


def _step_stream(rng: np.random.Generator, calls: int) -> list[Case]:
    """Fresh states and batches, all of one shape: one compilation serves them all."""
    n = int(rng.integers(16, 64))
    return [_step(rng, n) for _ in range(calls)]


TOPIC = Topic(
    name="training",
    title="training with Flax NNX and Optax: model, optimizer chain, jitted train step",
    exercises=(
        Exercise(
            name="mse_loss",
            sample=_loss,
            rtol=1e-5,
            atol=1e-6,
            checks={"correct": 1, "jit": 1},
            hints=(
                "The parameters arrive as a plain nested dict; the model is an object. Rebuild the object around them.",
                "`nnx.eval_shape` builds an abstract model, `nnx.split` gives its graphdef and state, "
                "`nnx.replace_by_pure_dict` fills the state, `nnx.merge` rebuilds the module.",
                "Rebuild the MLP from the dict, call it on x, and average the squared difference with y over every entry.",
            ),
        ),
        Exercise(
            name="init_opt_state",
            sample=_init,
            checks={"correct": 1},
            hints=(
                "Optax optimizers are pairs of pure functions; `init` builds the state from the parameters.",
                "`make_optimizer()` gives the chain; `jax.tree.leaves` flattens any pytree to a list.",
                "Initialise the chain's state on the given parameters and return its leaves, in pytree order.",
            ),
        ),
        Exercise(
            name="train_step",
            sample=_step,
            sizes=(1, 4, 32, 128),
            rtol=1e-4,
            atol=1e-5,
            checks={"correct": 2, "jit": 1, "compiles": 1, "speed": 1},
            options={"compiles": Stream(make=_step_stream, max_compiles=1, calls=20, jit=False)},
            speed=Speed(size={"cpu": 4096, "gpu": 65536}, max_reps=31, jit=False),
            hints=(
                "The optimizer state comes as a flat list: you need its tree structure back before Optax can update it.",
                "`jax.tree.structure(opt.init(params))` gives that structure; `jax.value_and_grad`, `opt.update` "
                "and `optax.apply_updates` do the rest.",
                "Rebuild the state, take the loss and its gradient, let the chain turn gradients into updates (it needs "
                "the params too), apply them, and return the new params, the new state's leaves and the loss.",
            ),
        ),
    ),
)
