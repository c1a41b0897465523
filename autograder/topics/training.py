"""Topic `training`: a Flax NNX MLP, an Optax chain (clipping + schedule), a jitted, donating
train step, and a training loop judged by the loss it reaches on the grader's own data.

Parameters cross the wire as nested dicts of float32 arrays, the optimizer state as the list
of its leaves (Adam's count, mu, nu, then the schedule's count), so every sampler below builds
plain NumPy trees of the reference's shapes: IN=8, HIDDEN=32, OUT=1.

The `trains` check (`autograder.checks.trains`) runs the student's `fit` on a dataset the
grader draws: 256 rows of x ~ N(0, 1), targets from a random teacher network with 4 tanh units
(which the student's 32 can represent), standardised to mean 0 and variance 1, so that
predicting the mean scores a loss of 1. The initial parameters are drawn like `nnx.Linear`'s
(LeCun-normal kernels) with a readout scaled by 0.1, so that the initial loss is about 1 on every
seed. The grader computes the loss of the returned parameters itself.
Measured here (2-core CPU, jax 0.10.2, flax 0.12.8, optax 0.2.8; `_fit`'s cases at
`np.random.default_rng([seed, 99])`), the loss of the returned parameters after 200 steps of 32
rows: the reference 0.0016 to 0.079 over 1,000 seeds (median 0.006), from initial losses of
0.87 to 1.15; over 200 seeds, the wrong sign 770 to 990, an optimizer state not carried over
(stale, or re-initialised every step) 0.88 to 1.15, exactly the initial loss (the warmup's
learning rate at count 0 is 0), without clipping 0.0035 to 0.11 (it trains: clipping is
`correct`'s to catch). The bound, 0.2, is x2.5 the worst correct run and x4.3 below the best
broken one (`benchmarks/trains_band.py`; tests/topics/test_topic_training.py shows the band on six
seeds of its own). In
a grading run the reference's `fit` takes about 3 s on the first run (compiling the step) and
0.1 to 0.2 s on the next.

A fit that trains nothing reaches the loss too: the readout by one least-squares solve on the
initial hidden layer, 0.016 to 0.28 over the same 200 seeds (median 0.05; below 0.2 on 199).
So the check also asks where the parameters end (`Trains.max_drift`): their distance from the
reference loop's parameters on the same case, over the distance those travelled from the
initial ones. Over 200 seeds (`benchmarks/trains_band.py`, 2-core CPU, loaded): the
reference's own loop (and the undonated step) 0 exactly; the other batch orders the docstring
allows 0.06 to 0.51 (the blocks backwards 0.068 to 0.506, from the fourth block on 0.060 to
0.472, a fresh block order every epoch 0.077 to 0.467, rows shuffled every epoch 0.133 to
0.440); Adam without the clipping 0.097 to 0.394 (it trains; `correct` catches it); and the fits
that take no optimizer step, every one of them 1 or more: the initial parameters (and the stale
or re-initialised state) 1.000, the least-squares readout 1.006 to 1.605 (ridge 1e-2: 1.006 to
1.579), the hidden layer moved at random as far as the reference moves it, then the readout
solved, 1.290 to 1.606. The bound, 0.7, is x1.38 the worst allowed order and x1.44 below the
nearest shortcut; every allowed loop passes on all 200 seeds, every shortcut fails on all 200.
"""

from __future__ import annotations

import numpy as np

from autograder.checks import Compiles, Correct, Jit, Speed, Trains
from autograder.requirements import Donates
from autograder.spec import Case, Edge, Exercise, Topic

IN, HIDDEN, OUT = 8, 32, 1
TEACHER = 4  # hidden units of the network that makes the targets
FIT_STEPS, FIT_BATCH = 200, 32


def _f32(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * rng.normal(size=shape)).astype(np.float32)


def _params(rng: np.random.Generator, readout: float = 1.0) -> dict:
    return {
        "hidden": {"bias": _f32(rng, HIDDEN, scale=0.1), "kernel": _f32(rng, IN, HIDDEN, scale=IN**-0.5)},
        "out": {
            "bias": _f32(rng, OUT, scale=0.1 * readout),
            "kernel": _f32(rng, HIDDEN, OUT, scale=readout * HIDDEN**-0.5),
        },
    }


def _zero_params() -> dict:
    return {
        "hidden": {"bias": np.zeros(HIDDEN, np.float32), "kernel": np.zeros((IN, HIDDEN), np.float32)},
        "out": {"bias": np.zeros(OUT, np.float32), "kernel": np.zeros((HIDDEN, OUT), np.float32)},
    }


def _leaves(params: dict) -> list[np.ndarray]:
    return [params["hidden"]["bias"], params["hidden"]["kernel"], params["out"]["bias"], params["out"]["kernel"]]


def _moments(rng: np.random.Generator, params: dict, positive: bool) -> list[np.ndarray]:
    return [
        (np.abs(_f32(rng, *a.shape, scale=1e-2)) if positive else _f32(rng, *a.shape, scale=1e-2))
        for a in _leaves(params)
    ]


def _opt_leaves(rng: np.random.Generator, params: dict) -> list[np.ndarray]:
    count = np.array(rng.integers(0, 100), np.int32)
    return [count, *_moments(rng, params, False), *_moments(rng, params, True), count.copy()]


def _fresh_leaves(params: dict) -> list[np.ndarray]:
    zeros = [np.zeros_like(a) for a in _leaves(params)]
    return [np.array(0, np.int32), *zeros, *[z.copy() for z in zeros], np.array(0, np.int32)]


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


def _fit(rng: np.random.Generator, size: int) -> Case:
    """A training run: initial parameters (readout x0.1: an initial loss near 1), `size` rows of
    x ~ N(0, 1) and standardised targets from a random 4-unit tanh teacher, the steps and batch."""
    params = _params(rng, readout=0.1)
    x = _f32(rng, size, IN)
    teacher = np.tanh(x.astype(np.float64) @ rng.normal(size=(IN, TEACHER)) * IN**-0.5) @ rng.normal(
        size=(TEACHER, OUT)
    )
    y = ((teacher - teacher.mean()) / teacher.std()).astype(np.float32)
    return Case((params, x, y, FIT_STEPS, FIT_BATCH))


_X2 = np.array([[0.5] * IN, [-1.0] * IN], np.float32)
_EXAMPLE_PARAMS = _params(np.random.default_rng(7))


# -- edge families: each edge case's instances in a graded run (`Edge`), never its public one


def _zero_model(rng: np.random.Generator) -> Case:
    """Zero parameters: the loss is mean(y**2), whatever x."""
    n = int(rng.integers(1, 5))
    return Case(
        (
            _zero_params(),
            (rng.integers(-4, 5, (n, IN)) / 2).astype(np.float32),
            rng.integers(-4, 5, (n, OUT)).astype(np.float32),
        )
    )


def _fresh_step(rng: np.random.Generator) -> Case:
    """A freshly initialised optimizer state (count 0, zero moments) on drawn parameters and batch."""
    params = _params(rng)
    return Case((params, _fresh_leaves(params), *_batch(rng, int(rng.integers(4, 33)))))


TOPIC = Topic(
    name="training",
    title="training with Flax NNX and Optax: model, optimizer chain, jitted donating train step, training loop",
    exercises=(
        Exercise(
            name="mse_loss",
            sample=_loss,
            edge_cases=(
                Edge(
                    Case(
                        (_zero_params(), _X2, np.array([[1.0], [3.0]], np.float32)),
                        "zero parameters: the loss is mean(y**2)",
                    ),
                    _zero_model,
                ),
            ),
            rtol=1e-5,
            atol=1e-6,
            checks=(Correct(1), Jit(1)),
            hints=(
                "The parameters arrive as a plain nested dict, but the model is an object. Rebuild an object around "
                "the dict rather than writing the layers' arithmetic by hand.",
                "`nnx.eval_shape(lambda: MLP(nnx.Rngs(0)))` builds a model without allocating it; `nnx.split` gives "
                "its graphdef and state; `nnx.replace_by_pure_dict(state, params)` fills the state in place; "
                "`nnx.merge(graphdef, state)` gives a callable module.",
                "The state has the same nesting as the dict, so filling it needs no renaming. The loss is one mean over "
                "every entry of the squared residual (not a sum, not one value per row).",
            ),
        ),
        Exercise(
            name="init_opt_state",
            sample=_init,
            checks=(Correct(1),),
            hints=(
                "Optax optimizers are pairs of pure functions; `init` builds the state from the parameters, and the "
                "state is an ordinary pytree (named tuples of arrays).",
                "`make_optimizer()` gives the chain; `jax.tree.leaves` flattens any pytree to a list.",
                "Do not sort, filter or rename anything: `train_step` rebuilds the state from the leaves in the order "
                "`jax.tree.leaves` gives them, and the clipping's empty state simply has no leaves.",
            ),
        ),
        Exercise(
            name="train_step",
            sample=_step,
            sizes=(1, 4, 32, 128),
            edge_cases=(
                Edge(
                    Case(
                        (_EXAMPLE_PARAMS, _fresh_leaves(_EXAMPLE_PARAMS), *_batch(np.random.default_rng(8), 16)),
                        "a fresh state: the first step's learning rate is 0",
                    ),
                    _fresh_step,
                ),
            ),
            outputs=("new_params", "new_opt_leaves", "loss"),
            rtol=1e-4,
            atol=1e-5,
            checks=(
                Correct(2),
                Jit(
                    1,
                    requirements=(
                        Donates(
                            why="the step replaces the parameters and the optimizer state: donating them "
                            "lets the new ones take the old ones' memory"
                        ),
                    ),
                ),
                Compiles(1, make=_step_stream, max_compiles=1, calls=20, jit=False),
                Speed(1, size={"cpu": 16384, "gpu": 65536}, max_reps=31, jit=False),
            ),
            # reference: 14 of its 16 inputs donated (4 parameters, 10 state leaves; not x, y); the same step
            # jitted by the grader (no donate_argnums): 0
            hints=(
                "The optimizer state comes as a flat list, but Optax updates a tree: get its structure back first. A "
                "freshly initialised state of the same optimizer has exactly that structure.",
                "`jax.tree.structure` and `jax.tree.unflatten` turn leaves back into a tree; `jax.value_and_grad` "
                "gives the loss and the gradient in one pass; `opt.update(grads, state, params)` returns the updates "
                "and the new state, and `optax.apply_updates` adds the updates to the parameters.",
                "Optax's updates already point downhill (the learning rate and the sign are inside them): apply them as "
                "they are. Return the NEW state's leaves, in the same order as the ones you were given, and the loss "
                "measured at the parameters you were given.",
            ),
        ),
        Exercise(
            name="fit",
            sample=_fit,
            sizes=(),  # no value-by-value cases: the `trains` check draws its own runs
            checks=(Trains(2, size=256, max_loss=0.2, max_drift=0.7, runs=2),),
            hints=(
                "A training loop is ordinary Python around the jitted step: the training state is the parameters and "
                "the optimizer's state, and every step replaces both.",
                "`init_opt_state(params)` gives the fresh state. `x[start:start + batch_size]` with Python ints is a "
                "batch of one fixed shape, so the step compiles once for the whole loop.",
                "Rebind both names to what each step returns: the step donates its inputs, so the arrays you passed "
                'are gone (a buffer that "has been deleted or donated" means the loop used one again). Return the '
                "parameters only.",
            ),
        ),
    ),
)
