"""Topic `training`: a Flax NNX MLP, an Optax chain (clipping + schedule), a jitted, donating
train step, and a training loop judged by the loss it reaches on the grader's own data; then a
classifier with BatchNorm and Dropout in train and eval mode, its evaluation step, an epoch's
batches drawn from keys with the last one masked and evaluated batch by batch, one AdamW step
with the decay masked, and training resumed from an Orbax checkpoint.

The classifier's exercises (`classify`, `eval_step`) are judged by `correct` alone (and `jit`):
its cases hold both modes and, in train mode, several keys (the edge families guarantee it in
every run), so a key ignored in train mode, dropout or batch statistics in eval mode, and running
averages left unmoved each change an output the reference's are compared with. The running
averages are drawn away from the fresh ones (mean 0, var 1) and from any batch's statistics.

Parameters cross the wire as nested dicts of float32 arrays, the optimizer state as the list
of its leaves (Adam's count, mu, nu, then the schedule's count), so every sampler below builds
plain NumPy trees of the reference's shapes: IN=8, HIDDEN=32, OUT=1.

The `trains` check (`jaxlings.grading.checks.trains`) runs the student's `fit` on a dataset the
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
initial ones. The task fixes the loop, its batch order included, so a right loop ends on the
reference's. Over 200 seeds (`benchmarks/trains_band.py`, 2-core CPU, loaded): the reference's
own loop, the undonated step and the loop around a step written another way (the loss summed
then divided, the gradient apart, the updates added leaf by leaf) 0 exactly; loops that train
but not as the task says: a quarter more steps 0.018 to 0.048 (the cosine's last steps barely
move), half the steps 0.121 to 0.296, Adam without the clipping 0.097 to 0.394, Adam at a
constant 1e-2 0.272 to 0.753; over 40 seeds, the batches in another order 0.065 to 0.506 (the
blocks backwards, from the fourth on, a fresh block order or row order every epoch), full-batch
steps 0.45 to 1.15, RMSprop 0.66 to 1.03, SGD with momentum 0.72 to 0.98; and the fits that
take no optimizer step, every one of them 1 or more: the initial parameters (and the stale or
re-initialised state) 1.000, the least-squares readout 1.006 to 1.605 (ridge 1e-2: 1.006 to
1.579), the hidden layer moved at random as far as the reference moves it, then the readout
solved, 1.290 to 1.606. The bound, 0.1, passes the task's loop on every seed, with room for
rounding on another platform (not measured yet on the TPU), and fails half the steps, Adam at
a constant rate, full-batch steps, RMSprop and SGD on every seed; another batch order and Adam
without the clipping (`correct`'s to catch on `train_step`) on nearly every seed.

The data pipeline (`epoch_batches`, `masked_eval`) is judged by `correct` and `jit`. The task
fixes the epoch's order (`fold_in(key, epoch)`, then `permutation`), so the outputs compare
exactly; the random cases draw the key and the epoch (an order that ignores the epoch, or
batches that drop the partial last one, differ), and the epoch stays a value (a `jit` that holds
it static cannot be exported for an epoch it was not given). `masked_eval`'s cases lay out a
subset of the dataset's rows (`size` of `size + 3`) in batches of a size fixed per size (one
shape for the `jit` check's two samples), with a partial last batch at every size but the
smallest: the filling row 0 counted, rows outside the layout counted, or a mean of the batches'
means each show. Its `jit` asks for a loop over the batches (`UsesOp("while")`: `lax.map`), so
that the right values computed on every batch at once lose that point alone.

`adamw_step` is judged by `correct` on both outputs: the new parameters, and Optax's state after
the step, whose structure shows the mask (Adam's state, a masked part around the decay's empty
state, the learning rate's empty state). No mask leaves a plain empty state in the middle (a
structure the message describes); Adam with an L2 term in the kernels' gradients has no middle
part at all, and its kernels are off too (Adam normalises the penalty: the largest gap per
kernel 0.02 to 0.06 on three draws); the mask inverted has the reference's structure, and every
bias and the norm's parameters off by lr * wd * |w| (lr * wd >= 1e-3 on every draw, biases
N(0, 0.5); the largest gap per leaf 5.9e-4 to 1.3e-2 on three draws, against atol 1e-6 +
rtol 1e-5). tests/topics/test_topic_training.py grades each.

`resume_training` gets the files of an Orbax checkpoint the grader wrote (`checkpoint_files`: a
subprocess of the grader's own Python with JAX and Orbax, about 2.5 s a case on this machine),
of a state drawn at random for each case: parameters, Adam's moments and a step count. The
student's worker writes them under its private /tmp (the sandbox's only writable directory)
and restores them. What `correct` verifies, from outputs against the reference's: that the
state returned is the one in the files, every leaf (a submission that never reads them cannot
know the drawn values), and that the losses continue from it: with the restored moments and
schedule position (a fresh optimizer state after the first loss: off) and from the restored step
(never a multiple of the dataset's 4 blocks, so batches restarted at row 0 are other rows). What
it cannot verify: that the files were read with Orbax rather than by hand (the checkpoint is
written without OCDBT, one zarr folder per array, which a reader of the format could parse
alone), and anything about saving: what the student writes stays in its private /tmp, which the
grader never reads, so a round trip of the student's own (save, then restore) and the same state
kept in memory look alike; the lesson shows saving, the grade covers restoring.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from jaxlings.grading import workloads
from jaxlings.grading.checks import Compiles, Correct, Jit, Speed, Trains
from jaxlings.grading.requirements import Donates, UsesOp
from jaxlings.grading.spec import Case, Edge, Exercise, Key, Topic

IN, HIDDEN, OUT = 8, 32, 1
CLASSES = 4  # the classifier's outputs (`classify`, `eval_step`)
TEACHER = 4  # hidden units of the network that makes the targets
FIT_STEPS, FIT_BATCH = 200, 32


def _f32(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * rng.normal(size=shape)).astype(np.float32)


def _params(rng: np.random.Generator, readout: float = 1.0) -> dict[str, dict[str, np.ndarray]]:
    return {
        "hidden": {"bias": _f32(rng, HIDDEN, scale=0.1), "kernel": _f32(rng, IN, HIDDEN, scale=IN**-0.5)},
        "out": {
            "bias": _f32(rng, OUT, scale=0.1 * readout),
            "kernel": _f32(rng, HIDDEN, OUT, scale=readout * HIDDEN**-0.5),
        },
    }


def _zero_params() -> dict[str, dict[str, np.ndarray]]:
    return {
        "hidden": {"bias": np.zeros(HIDDEN, np.float32), "kernel": np.zeros((IN, HIDDEN), np.float32)},
        "out": {"bias": np.zeros(OUT, np.float32), "kernel": np.zeros((HIDDEN, OUT), np.float32)},
    }


def _leaves(params: dict[str, dict[str, np.ndarray]]) -> list[np.ndarray]:
    return [params["hidden"]["bias"], params["hidden"]["kernel"], params["out"]["bias"], params["out"]["kernel"]]


def _moments(rng: np.random.Generator, params: dict[str, dict[str, np.ndarray]], positive: bool) -> list[np.ndarray]:
    return [
        (np.abs(_f32(rng, *a.shape, scale=1e-2)) if positive else _f32(rng, *a.shape, scale=1e-2))
        for a in _leaves(params)
    ]


def _opt_leaves(rng: np.random.Generator, params: dict[str, dict[str, np.ndarray]]) -> list[np.ndarray]:
    count = np.array(rng.integers(0, 100), np.int32)
    return [count, *_moments(rng, params, False), *_moments(rng, params, True), count.copy()]


def _fresh_leaves(params: dict[str, dict[str, np.ndarray]]) -> list[np.ndarray]:
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


def _step_on_device(key, size: int) -> tuple[dict[str, dict[str, Any]], list[Any], Any, Any]:
    """`_step`'s speed workload made on the device (`jaxlings.grading.workloads`): parameters, an Adam
    state (second moments positive) and a batch of `size` rows, each leaf uniform."""
    import jax

    keys = iter(jax.random.split(key, 16))

    def draw(shape: tuple[int, ...], low: float, high: float):
        return workloads.uniform(next(keys), shape, low, high)

    params = {
        "hidden": {"bias": draw((HIDDEN,), -0.125, 0.125), "kernel": draw((IN, HIDDEN), -0.5, 0.5)},
        "out": {"bias": draw((OUT,), -0.125, 0.125), "kernel": draw((HIDDEN, OUT), -0.25, 0.25)},
    }
    leaves = _leaves(params)
    moments = [draw(a.shape, -(2.0**-7), 2.0**-7) for a in leaves] + [draw(a.shape, 0.0, 2.0**-7) for a in leaves]
    counts = [workloads.integers(next(keys), (), 0, 100) for _ in range(2)]
    return (params, [counts[0], *moments, counts[1]], draw((size, IN), -2.0, 2.0), draw((size, OUT), -1.0, 1.0))


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


# -- the classifier (`classify`, `eval_step`): Linear -> BatchNorm -> relu -> Dropout -> Linear


def _key(rng: np.random.Generator) -> Key:
    return Key(int(rng.integers(0, 2**31)))


def _classifier_params(rng: np.random.Generator) -> dict[str, dict[str, np.ndarray]]:
    return {
        "hidden": {"bias": _f32(rng, HIDDEN, scale=0.1), "kernel": _f32(rng, IN, HIDDEN, scale=IN**-0.5)},
        "norm": {"bias": _f32(rng, HIDDEN, scale=0.1), "scale": (1 + _f32(rng, HIDDEN, scale=0.1))},
        "out": {"bias": _f32(rng, CLASSES, scale=0.1), "kernel": _f32(rng, HIDDEN, CLASSES, scale=HIDDEN**-0.5)},
    }


def _batch_stats(rng: np.random.Generator) -> dict[str, dict[str, np.ndarray]]:
    """Running averages away from the fresh ones (and from any batch's), so that using the batch's
    statistics in eval mode, or not moving these in train mode, shows in the outputs."""
    return {"norm": {"mean": _f32(rng, HIDDEN, scale=0.3), "var": np.exp(_f32(rng, HIDDEN, scale=0.3))}}


def _fresh_stats() -> dict[str, dict[str, np.ndarray]]:
    return {"norm": {"mean": np.zeros(HIDDEN, np.float32), "var": np.ones(HIDDEN, np.float32)}}


def _classify(rng: np.random.Generator, size: int) -> Case:
    """A batch of `size` rows in either mode (each mode a compilation): the edge cases below hold
    each mode at least once in every run."""
    train = bool(rng.integers(2))
    return Case((_classifier_params(rng), _batch_stats(rng), _f32(rng, size, IN), _key(rng), train))


def _labels(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, CLASSES, n).astype(np.int32)


def _eval(rng: np.random.Generator, size: int) -> Case:
    return Case((_classifier_params(rng), _batch_stats(rng), _f32(rng, size, IN), _labels(rng, size)))


_TRAIN_BATCH = 4
"""The smallest batch `classify` is graded on. In train mode the batch norm divides by the batch's
own spread, which two rows can make tiny: there the reference's own jitted and un-jitted logits
rounded apart by up to x87 of the tolerance (15 of 150 random 2-row cases failed), so a right
function lost `jit` in about one grading in ten. From 4 rows the worst of 1,050 draws is x0.09
(`benchmarks/classify_rounding.py`, with and without `--batch 2`)."""


def _train_fresh(rng: np.random.Generator) -> Case:
    """Train mode from fresh statistics (mean 0, var 1): dropout drawn from the key, batch statistics."""
    return Case(
        (_classifier_params(rng), _fresh_stats(), _f32(rng, int(rng.integers(_TRAIN_BATCH, 9)), IN), _key(rng), True)
    )


def _drawn_stats(train: bool) -> Callable[[np.random.Generator], Case]:
    """Drawn running averages in one mode: train mode moves them toward the batch's; eval mode
    normalises with them, no dropout, the key not used."""

    def make(rng: np.random.Generator) -> Case:
        n = int(rng.integers(_TRAIN_BATCH, 33))
        return Case((_classifier_params(rng), _batch_stats(rng), _f32(rng, n, IN), _key(rng), train))

    return make


def _classifier_example(key: int, train: bool) -> tuple[Any, ...]:
    """The public instance of the drawn-statistics edges: the same model, statistics and batch in both modes."""
    return (
        _EXAMPLE_CLASSIFIER,
        _batch_stats(np.random.default_rng(14)),
        _f32(np.random.default_rng(15), 8, IN),
        Key(key),
        train,
    )


def _constant_classifier(rng: np.random.Generator) -> Case:
    """A zero readout kernel: every row's logits are the readout bias, distinct integers, so every
    row predicts the bias's argmax and the accuracy is the share of labels equal to it."""
    params = _classifier_params(rng)
    params["out"] = {
        "bias": rng.permutation(CLASSES).astype(np.float32),
        "kernel": np.zeros((HIDDEN, CLASSES), np.float32),
    }
    n = int(rng.integers(2, 9))
    return Case((params, _batch_stats(rng), _f32(rng, n, IN), _labels(rng, n)))


_EXAMPLE_CLASSIFIER = _classifier_params(np.random.default_rng(11))
_EXAMPLE_EVAL = {
    **_classifier_params(np.random.default_rng(12)),
    "out": {
        "bias": np.array([0.0, 0.0, 0.0, np.log(3.0)], np.float32),
        "kernel": np.zeros((HIDDEN, CLASSES), np.float32),
    },
}


# -- the data pipeline (`epoch_batches`, `masked_eval`): epochs, shuffles, a last batch masked


def _layout(rows: np.ndarray, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """`rows` in batches of `batch_size`, the last filled up with row 0, and the mask of the real
    entries: what `epoch_batches` returns for an order."""
    batches = -(-len(rows) // batch_size)
    indices = np.zeros(batches * batch_size, np.int32)
    indices[: len(rows)] = rows
    mask = np.arange(batches * batch_size) < len(rows)
    return indices.reshape(batches, batch_size), mask.reshape(batches, batch_size)


def _epoch(rng: np.random.Generator, size: int) -> Case:
    """`size` rows in batches of 2 to 65 (more than the rows at the smallest sizes: one partial
    batch), a drawn key and epoch."""
    batch_size = int(rng.integers(2, min(size, 64) + 2))
    return Case((_key(rng), int(rng.integers(0, 1000)), size, batch_size))


def _epoch_ragged(rng: np.random.Generator) -> Case:
    """The docstring's example's structure: whole batches, then a partial one."""
    batch_size = int(rng.integers(2, 7))
    n = batch_size * int(rng.integers(1, 4)) + int(rng.integers(1, batch_size))
    return Case((_key(rng), int(rng.integers(0, 1000)), n, batch_size))


def _epoch_whole_batches(rng: np.random.Generator) -> Case:
    batch_size = int(rng.integers(1, 9))
    return Case((_key(rng), int(rng.integers(0, 1000)), batch_size * int(rng.integers(1, 6)), batch_size))


def _epoch_one_partial(rng: np.random.Generator) -> Case:
    n = int(rng.integers(1, 8))
    return Case((_key(rng), int(rng.integers(0, 1000)), n, n + int(rng.integers(1, 5))))


def _eval_batch_size(size: int) -> int:
    """The batch size of `masked_eval`'s random cases: fixed per size (two samples of a size have
    one shape, as the `jit` check's trusted samples must), a partial last batch at every size
    but the smallest."""
    return max(2, int(np.sqrt(size)) + 1)


def _masked(rng: np.random.Generator, size: int) -> Case:
    """A dataset of `size + 3` rows, `size` of them drawn (a new subset and order each time) and
    laid out in batches: rows the layout leaves out must not count, nor the filling row 0."""
    n = size + 3
    rows = rng.permutation(n)[:size]
    return Case(
        (
            _classifier_params(rng),
            _batch_stats(rng),
            _f32(rng, n, IN),
            _labels(rng, n),
            *_layout(rows, _eval_batch_size(size)),
        )
    )


def _masked_drawn(whole: bool) -> Callable[[np.random.Generator], Case]:
    """Every entry real (`whole`), or one batch only, partial."""

    def make(rng: np.random.Generator) -> Case:
        n = int(rng.integers(2, 12))
        if whole:
            batch_size = int(rng.integers(1, min(n, 4) + 1))
            rows = rng.permutation(n)[: batch_size * int(rng.integers(1, n // batch_size + 1))]
        else:
            rows = rng.permutation(n)[: int(rng.integers(1, n + 1))]
            batch_size = len(rows) + int(rng.integers(1, 4))
        return Case(
            (_classifier_params(rng), _batch_stats(rng), _f32(rng, n, IN), _labels(rng, n), *_layout(rows, batch_size))
        )

    return make


_EXAMPLE_MASKED = _layout(np.array([4, 1, 2]), 2)


# -- adamw_step: the parameters of NormMLP (Linear -> LayerNorm -> tanh -> Linear), as nnx names them


def _norm_params(rng: np.random.Generator) -> dict[str, dict[str, np.ndarray]]:
    """Kernels LeCun-normal, biases and the norm's bias N(0, 0.5), the norm's scale 1 + N(0, 0.1):
    every decayed or undecayed entry far from 0, so a decay put on the wrong leaves shows."""
    return {
        "hidden": {"bias": _f32(rng, HIDDEN, scale=0.5), "kernel": _f32(rng, IN, HIDDEN, scale=IN**-0.5)},
        "norm": {"bias": _f32(rng, HIDDEN, scale=0.5), "scale": 1 + _f32(rng, HIDDEN, scale=0.1)},
        "out": {"bias": _f32(rng, OUT, scale=0.5), "kernel": _f32(rng, HIDDEN, OUT, scale=HIDDEN**-0.5)},
    }


_LEARNING_RATES = (0.01, 0.03, 0.1)
_WEIGHT_DECAYS = (0.1, 0.3, 1.0)  # lr * wd >= 1e-3: a wrongly (un)decayed bias moves by ~5e-4, atol is 1e-6


def _adamw(rng: np.random.Generator, size: int) -> Case:
    params = _norm_params(rng)
    grads = {
        k: {n: _f32(rng, *a.shape, scale=10.0 ** rng.uniform(-3, 0)) for n, a in v.items()} for k, v in params.items()
    }
    return Case((params, grads, float(rng.choice(_LEARNING_RATES)), float(rng.choice(_WEIGHT_DECAYS))))


def _adamw_zero_grads(rng: np.random.Generator) -> Case:
    """Zero gradients: only the decay moves anything (kernels shrink, the rest stays)."""
    params = _norm_params(rng)
    grads = {k: {n: np.zeros_like(a) for n, a in v.items()} for k, v in params.items()}
    return Case((params, grads, float(rng.choice(_LEARNING_RATES)), float(rng.choice(_WEIGHT_DECAYS))))


_ADAMW_EXAMPLE = _norm_params(np.random.default_rng(11))


# -- resume_training: an Orbax checkpoint written by a trusted process of the grader's own

RESUME_ROWS, RESUME_BATCH = 64, 16

# Run as `python -c _WRITER STATE.npz DIRECTORY` (JAX on the CPU): the state, its entries named
# "params/<layer>/<name>", "opt_state/<i>" and "step" in the file, saved to DIRECTORY by Orbax's
# standard handler, without OCDBT: one folder per array, named by its path, so that the same
# state gives the same files (OCDBT names its data files at random).
_WRITER = """
import sys
import numpy as np
import orbax.checkpoint as ocp
data = np.load(sys.argv[1])
params = {}
for name in data.files:
    if name.startswith("params/"):
        _, layer, leaf = name.split("/")
        params.setdefault(layer, {})[leaf] = data[name]
n = sum(1 for name in data.files if name.startswith("opt_state/"))
state = {"params": params, "opt_state": [data[f"opt_state/{i}"] for i in range(n)], "step": data["step"]}
with ocp.Checkpointer(ocp.StandardCheckpointHandler(use_ocdbt=False)) as checkpointer:
    checkpointer.save(sys.argv[2], args=ocp.args.StandardSave(state))
"""


def checkpoint_files(state: dict[str, Any]) -> dict[str, np.ndarray]:
    """An Orbax checkpoint of `state` (`{"params", "opt_state", "step"}`, NumPy), as `{relative
    path: uint8 array of its bytes}`: written by Orbax in a process of its own (the grader's
    process never imports JAX), then read back. A function of `state` alone, as a sampler's case
    must be: the two save times in `_CHECKPOINT_METADATA` are set to 0, and `commit_success.txt`
    (a marker for object stores, which names the directory) is left out; Orbax restores without it."""
    with tempfile.TemporaryDirectory(prefix="jaxlings-checkpoint-") as tmp:
        arrays = {f"params/{k}/{n}": a for k, v in state["params"].items() for n, a in v.items()}
        arrays |= {f"opt_state/{i}": a for i, a in enumerate(state["opt_state"])}
        np.savez(Path(tmp) / "state.npz", step=state["step"], **arrays)
        directory = Path(tmp) / "checkpoint"
        done = subprocess.run(
            [sys.executable, "-c", _WRITER, str(Path(tmp) / "state.npz"), str(directory)],
            env={**os.environ, "JAX_PLATFORMS": "cpu"},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"writing the checkpoint failed: {done.stderr[-2000:]}")
        metadata = directory / "_CHECKPOINT_METADATA"
        saved = json.loads(metadata.read_text())
        metadata.write_text(json.dumps(saved | {"init_timestamp_nsecs": 0, "commit_timestamp_nsecs": 0}))
        return {
            str(f.relative_to(directory)): np.frombuffer(f.read_bytes(), np.uint8).copy()
            for f in sorted(directory.rglob("*"))
            if f.is_file() and f.name != "commit_success.txt"
        }


def _resume(rng: np.random.Generator, size: int) -> Case:
    """A state nobody trained (drawn parameters and moments, a step count under 100), saved by
    Orbax; a dataset; `size` steps to continue. The step count is never a multiple of the
    dataset's 4 blocks, so a loop that restarts the batches at row 0 trains on other rows."""
    params = _params(rng)
    leaves = _opt_leaves(rng, params)
    blocks = RESUME_ROWS // RESUME_BATCH
    step = np.array(blocks * rng.integers(0, 25) + rng.integers(1, blocks), np.int32)
    leaves[0], leaves[-1] = step.copy(), step.copy()  # Adam's count and the schedule's
    state = {"params": params, "opt_state": leaves, "step": step}
    return Case((checkpoint_files(state), *_batch(rng, RESUME_ROWS), size, RESUME_BATCH))


TOPIC = Topic(
    name="training",
    title="training with Flax NNX and Optax: model, optimizer chain, jitted donating train step, training loop, "
    "train and eval modes, evaluation, AdamW, checkpoints",
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
                Speed(
                    1,
                    size={"cpu": 16384, "gpu": 65536, "tpu": 1 << 22},
                    max_reps=31,
                    jit=False,
                    generate=_step_on_device,
                ),
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
            checks=(Trains(2, size=256, max_loss=0.2, max_drift=0.1, runs=2),),
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
        Exercise(
            name="classify",
            sample=_classify,
            sizes=(4, 7, 16, 64),  # at least `_TRAIN_BATCH` rows: smaller batches round apart jitted and not
            static_argnums=(4,),
            edge_cases=(
                Edge(
                    Case(
                        (_EXAMPLE_CLASSIFIER, _fresh_stats(), _f32(np.random.default_rng(13), 6, IN), Key(3), True),
                        "train mode from fresh statistics",
                    ),
                    _train_fresh,
                ),
                Edge(Case(_classifier_example(4, True), "train mode: the running averages move"), _drawn_stats(True)),
                Edge(
                    Case(_classifier_example(5, False), "eval mode: running averages, no dropout"), _drawn_stats(False)
                ),
            ),
            outputs=("logits", "new_batch_stats"),
            rtol=1e-5,
            atol=1e-5,
            checks=(Correct(2), Jit(1)),
            hints=(
                "Two modes, two behaviours of the same layers: in train mode the batch norm learns from the batch and "
                "the dropout needs randomness; in eval mode both are fixed functions. NNX keeps the mode on the layers "
                "themselves, and the batch statistics are variables of their own kind, beside the parameters.",
                "`nnx.split(abstract_model, nnx.Param, nnx.BatchStat)` gives a graphdef and one state per kind; "
                "`nnx.replace_by_pure_dict` fills each, `nnx.merge` takes them all. `model.train()` and `model.eval()` "
                "switch every Dropout and BatchNorm inside; the model's call takes `rngs=`.",
                "The new statistics are read back from the model after the call, as a plain dict of its "
                "`nnx.BatchStat` state. The key becomes the call's randomness only in train mode, through a fresh "
                "`nnx.Rngs` with a `dropout` stream made from it: any other key, or a split of it, draws another mask.",
            ),
        ),
        Exercise(
            name="eval_step",
            sample=_eval,
            sizes=(2, 5, 16, 64),
            edge_cases=(
                Edge(
                    Case(
                        (
                            _EXAMPLE_EVAL,
                            _batch_stats(np.random.default_rng(16)),
                            _f32(np.random.default_rng(17), 2, IN),
                            np.array([3, 0], np.int32),
                        ),
                        "a constant classifier: every row predicts the readout bias's argmax",
                    ),
                    _constant_classifier,
                ),
            ),
            rtol=1e-5,
            atol=1e-6,
            checks=(Correct(1), Jit(1)),
            hints=(
                "Evaluation measures the model as it will be used: eval mode, so the answer depends on the inputs "
                "alone, and one number per metric for the whole batch.",
                "Your `classify` gives the logits in eval mode (the key is then unused). "
                "`optax.softmax_cross_entropy_with_integer_labels(logits, labels)` gives one loss per row; "
                "`jnp.argmax(..., axis=-1)` picks each row's class.",
                "Both metrics are means over the n rows: the per-row losses, and the per-row comparisons of the "
                "predicted class with the label (a boolean of shape (n,), made float). Return them in a dict with the "
                "keys `loss` and `accuracy`.",
            ),
        ),
        Exercise(
            name="epoch_batches",
            sample=_epoch,
            sizes=(3, 10, 100, 1000),
            static_argnums=(2, 3),
            edge_cases=(
                Edge(Case((Key(0), 3, 5, 2), "the docstring's example"), _epoch_ragged),
                Edge(Case((Key(1), 0, 8, 4), "whole batches only: no entry masked"), _epoch_whole_batches),
                Edge(Case((Key(2), 7, 3, 5), "fewer rows than one batch"), _epoch_one_partial),
            ),
            checks=(Correct(1), Jit(1)),
            hints=(
                "One key for the whole run, a new order every epoch: make the epoch's key from the run's key and the "
                "epoch number, then shuffle the row numbers 0..n-1 with it.",
                "`jax.random.fold_in(key, epoch)` gives the epoch's key (`epoch` may be traced: one program for every "
                "epoch, so never make it static); `jax.random.permutation(epoch_key, n)` gives the order.",
                "`-(-n // batch_size)` batches: put the order into int32 zeros of that many times `batch_size` "
                "(`.at[:n].set(order)`), reshape to (batches, batch_size); the mask is `jnp.arange(...) < n`, "
                "reshaped the same.",
            ),
        ),
        Exercise(
            name="masked_eval",
            sample=_masked,
            sizes=(2, 5, 16, 64),
            edge_cases=(
                Edge(
                    Case(
                        (
                            _EXAMPLE_CLASSIFIER,
                            _batch_stats(np.random.default_rng(18)),
                            _f32(np.random.default_rng(19), 6, IN),
                            np.array([0, 1, 2, 3, 0, 1], np.int32),
                            *_EXAMPLE_MASKED,
                        ),
                        "the docstring's example: rows 4, 1, 2 and one filling entry",
                    ),
                    _masked_drawn(False),
                ),
                Edge(
                    Case(
                        (
                            _EXAMPLE_CLASSIFIER,
                            _batch_stats(np.random.default_rng(20)),
                            _f32(np.random.default_rng(21), 5, IN),
                            _labels(np.random.default_rng(22), 5),
                            *_layout(np.array([3, 0, 4, 1]), 2),
                        ),
                        "whole batches only: no entry masked",
                    ),
                    _masked_drawn(True),
                ),
            ),
            rtol=1e-5,
            atol=1e-6,
            checks=(
                Correct(2),
                Jit(1, requirements=(UsesOp("while", "one batch at a time: `jax.lax.map` over the batches"),)),
            ),
            hints=(
                "Each real entry is one row, counted once; the filling entries are there only to make the last batch "
                "whole. Evaluate batch by batch, keep sums, and divide once at the end.",
                "`jax.lax.map(one_batch, (indices, mask))` calls `one_batch` on one batch's row numbers and mask at a "
                "time; inside, `x[rows]` and `labels[rows]` gather the batch and your `classify(..., None, False)` "
                "gives its eval-mode logits.",
                "In each batch, sum the per-row losses and the right predictions where the mask is True (`jnp.where`, "
                "or `&` with the mask); outside the map, divide both totals by `mask.sum()`. A mean of the batches' "
                "means would weigh the short last batch like a full one.",
            ),
        ),
        Exercise(
            name="adamw_step",
            sample=_adamw,
            edge_cases=(
                Edge(
                    Case(
                        (
                            _ADAMW_EXAMPLE,
                            {k: {n: np.zeros_like(a) for n, a in v.items()} for k, v in _ADAMW_EXAMPLE.items()},
                            0.1,
                            0.5,
                        ),
                        "zero gradients: only the kernels move, by the decay",
                    ),
                    _adamw_zero_grads,
                ),
            ),
            outputs=("new_params", "opt_state"),
            rtol=1e-5,
            atol=1e-6,
            checks=(Correct(2), Jit(1)),
            hints=(
                "AdamW is Adam plus a decay of the parameters themselves, added to the update after Adam's "
                "normalisation (decoupled), not to the gradient before it. A bias or a norm's scale sets an offset or "
                "a gain, not a complexity: pulling it to 0 only hurts, so the decay is masked off them.",
                "`optax.adamw(learning_rate, weight_decay=..., mask=...)` takes the mask as a tree of booleans shaped "
                "like the parameters (True: decayed), or as a function from the parameters to such a tree. "
                "`jax.tree_util.tree_map_with_path` gives each leaf's path; the last entry's `.key` is its name.",
                "The answer is `init` on the parameters, one `update(grads, state, params)` (AdamW needs the "
                "parameters to decay them), and `optax.apply_updates`. The state you return has a masked part "
                "in it: that is where the mask shows.",
            ),
        ),
        Exercise(
            name="resume_training",
            sample=_resume,
            sizes=(3, 10),  # steps to continue; every case is one checkpoint written by Orbax
            outputs=("restored", "losses"),
            rtol=1e-5,
            atol=1e-6,
            checks=(Correct(2),),
            hints=(
                "Restoring needs a target: Orbax reads the arrays, but you say what tree they go into and what "
                "shapes and dtypes to expect. A fresh state of the same model and optimizer has exactly that form.",
                "`tempfile.mkdtemp()` gives a directory you may write (the files' names contain folders: create "
                "them). `jax.eval_shape` turns a function that builds a fresh state into `ShapeDtypeStruct`s; "
                "`ocp.StandardCheckpointer().restore(directory, target)` fills them from the files.",
                "The step counter is part of the state: the batches continue from it, not from 0. Train copies "
                "(`jnp.copy`) of the restored arrays, since `train_step` deletes what it is given, and return the "
                "restored state itself with the stacked losses.",
            ),
        ),
    ),
)
