"""Topic `sharding`: meshes, NamedSharding, data and tensor parallelism, shard_map and psum.

Where it runs. Both workers run on the CPU platform with 8 devices (`JAX_PLATFORMS=cpu`,
`JAX_NUM_CPU_DEVICES=8`, and the older XLA flag as a fallback), on a laptop and on the grading
GPU alike: one GPU cannot hold an 8-device mesh, and the fake-devices setting only affects
the CPU platform. What is graded (values, output layouts, the collectives and per-device
FLOPs of the compiled program) is then the same on every grading machine. There is no speed
check: 8 fake devices share the machine's cores, so times would say nothing about parallel
speed-ups.

How it judges. `correct` compares values; `sharding` compares each output's layout with the
reference's on every case; `jit` reads the compiled HLO of the student's function and of the
reference on the same inputs: no more collectives of any kind than the reference (an
accidental all-gather loses the points), about the same FLOPs per device (computing the whole
batch on every device does too), and `shard_map` where the task asks for it (a
`manual_computation` in the exported program, analysed on the trusted side). `jax.pmap` is
advised against in a note only: it is `jit` of `shard_map` now, so its program is a shard_map's,
and only the student's own process can tell (advisory facts, no points).

Arguments arrive as single-device arrays and each function lays them out itself, so XLA
chooses where the arguments enter the program: "gathering" a freshly placed argument is
compiled into no communication at all (every device already gets the whole argument) but into
replicated work, which the FLOP count sees. Gathering a *computed* array (hidden activations,
a shard_map block) is a real all-gather, which the collective count sees.

Cost. JAX compiles a small resharding program for every single-device argument of every new
shape that enters a sharded program (0.1 to 0.3 s each on a 2-core machine), and again after
the `jit` check clears the caches; that, not the functions, is most of this topic's grading
time, so the exercises keep to few arguments and few distinct shapes. The functions are
jitted in the solution (and so in the stubs): outside `jit` each `shard_map` call would also
be traced and compiled anew.
"""

from __future__ import annotations

import numpy as np

from jaxlings.grading.checks import Compiles, Correct, Jit, Sharding
from jaxlings.grading.requirements import AdvisedNoPmap, CollectivesAtMostReference, FlopsAtMost, UsesAnyOp
from jaxlings.grading.spec import Case, Edge, Exercise, Topic

DEVICES = 8
FEATURES = 6
IN, HIDDEN, OUT = 16, 32, 4  # sharded_train_step's MLP


NO_PMAP = AdvisedNoPmap()
# measured collectives: shard_batch and data_parallel_linear none, global_standardize 2 all-reduce,
# mlp_2d 1 all-reduce, sharded_train_step 2 all-reduce (the loss's and the gradients' partial sums, combined);
# faults gathering the batch or the hidden activations add 1 all-gather, velocities kept replicated 3.
NO_EXTRA_COLLECTIVES = CollectivesAtMostReference(
    "every extra collective moves data between devices that the task does not need to move"
)
# 1.75: an unused "model" axis doubles a device's FLOPs in mlp_2d (measured 68,096 vs 34,816); gathering its
# hidden activations adds 1.5x (50,688), and that fault is the collective count's to report; a replicated
# batch in data_parallel_linear costs 8x (150,530 vs 18,816); in sharded_train_step 3.9x (198,460 vs 51,345 at
# n = 128), where data parallelism over all 8 devices with the parameters replicated costs 1.02x (52,177: the same
# work, other layouts, which is the `sharding` check's to report).
# sharded_train_step's first call compiles the step and one `_multi_slice` program per argument shape that enters it
# split (w1, b1, w2, x, y: the velocities share their parameters'; b2 enters whole): 6 on jax 0.10.2; one more is
# allowed for JAX's own helpers on another version. Measured on 20 calls: a step jitted anew every call reports 25,
# `lr` held static 25. The clock alone does not see the first of those (each call ~0.26 s; the reference's first
# call ~0.7 s, most of it the slicing programs, sets `steady` at ~0.35 s): it rests on JAX's events.
STEP_COMPILES = 7
OWN_SHARE = FlopsAtMost(1.75, 100.0, "each device should compute only its own block, not the whole layer")


def _rows(size: int) -> int:
    return DEVICES * size


def _shard_batch(rng: np.random.Generator, size: int) -> Case:
    n = _rows(size)
    images = rng.normal(size=(n, 4, 4, 3)).astype(np.float32)
    return Case((images, rng.integers(0, 10, size=n).astype(np.int32)))


def _data_parallel_linear(rng: np.random.Generator, size: int) -> Case:
    n, d_in, d_out = _rows(size), 24, 12
    return Case(
        (
            rng.normal(size=(n, d_in)).astype(np.float32),
            rng.normal(size=(d_in, d_out)).astype(np.float32),
            rng.normal(size=d_out).astype(np.float32),
        )
    )


def _global_standardize(rng: np.random.Generator, size: int) -> Case:
    n, f = _rows(size), FEATURES
    scale, offset = rng.uniform(0.5, 2.0, size=f), rng.uniform(-3.0, 3.0, size=f)
    return Case(((rng.normal(size=(n, f)) * scale + offset).astype(np.float32),))


def _mlp_2d(rng: np.random.Generator, size: int) -> Case:
    n, d, h = _rows(size), 16, 32
    shapes = ((n, d), (d, h), (h,), (h, d), (d,))
    return Case(tuple(rng.normal(size=s).astype(np.float32) for s in shapes))


def _mlp_params(rng: np.random.Generator, scale: float = 1.0) -> dict[str, np.ndarray]:
    """The MLP's four leaves (sharded_train_step), LeCun-scaled weights; `scale` for a velocity."""
    shapes = {"w1": (IN, HIDDEN), "b1": (HIDDEN,), "w2": (HIDDEN, OUT), "b2": (OUT,)}
    fan = {"w1": IN**-0.5, "b1": 0.1, "w2": HIDDEN**-0.5, "b2": 0.1}
    return {k: (rng.normal(size=s) * fan[k] * scale).astype(np.float32) for k, s in shapes.items()}


def _train_step_rows(rng: np.random.Generator, n: int) -> Case:
    x = rng.normal(size=(n, IN)).astype(np.float32)
    y = rng.normal(size=(n, OUT)).astype(np.float32)
    return Case((_mlp_params(rng), _mlp_params(rng, 0.5), x, y, float(rng.uniform(0.01, 0.2))))


def _train_step(rng: np.random.Generator, size: int) -> Case:
    """Random parameters, velocities (half their scale), a batch of 8 * size rows, a learning rate."""
    return _train_step_rows(rng, _rows(size))


def _train_step_stream(rng: np.random.Generator, calls: int) -> list[Case]:
    """Fresh parameters, state, batch and learning rate for every call, all of one shape."""
    n = _rows(int(rng.integers(1, 5)))
    return [_train_step_rows(rng, n) for _ in range(calls)]


def _zeros_like_mlp() -> dict[str, np.ndarray]:
    return {k: np.zeros_like(v) for k, v in _mlp_params(np.random.default_rng(0)).items()}


def _far_from_zero() -> np.ndarray:
    """Features near 100 with unit spread: the one-pass variance loses most of its digits."""
    return (np.random.default_rng(100).normal(size=(64, FEATURES)) + 100.0).astype(np.float32)


# -- edge families: each edge case's instances in a graded run (`Edge`), never its public one


def _zero_model(rng: np.random.Generator) -> Case:
    """Zero parameters and velocities, 8 rows: the prediction is 0 and only b2 has a gradient, -2 * (the
    sum of y's column) / (8 * OUT) per entry (small integer targets and inputs, a learning rate of k / 16)."""
    x = rng.integers(-3, 4, (DEVICES, IN)).astype(np.float32)
    y = rng.integers(-3, 4, (DEVICES, OUT)).astype(np.float32)
    return Case((_zeros_like_mlp(), _zeros_like_mlp(), x, y, float(rng.integers(1, 5)) / 16))


def _sixteen(rng: np.random.Generator) -> Case:
    """n = 16 (two rows per device): small integer images, labels 0..9."""
    return Case((rng.integers(-50, 51, (16, 4, 4, 3)).astype(np.float32), rng.integers(0, 10, 16).astype(np.int32)))


def _row_per_device(rng: np.random.Generator) -> Case:
    """8 rows, one per device; each feature's 8 values distinct even integers (a nonzero spread)."""
    f = int(rng.integers(1, FEATURES + 1))
    cols = [2 * rng.choice(np.arange(-20, 21), size=DEVICES, replace=False) for _ in range(f)]
    return Case((np.stack(cols, axis=1).astype(np.float32),))


def _near(rng: np.random.Generator) -> Case:
    """Features between 80 and 120 with unit spread, 32 to 80 rows."""
    n = DEVICES * int(rng.integers(4, 11))
    return Case(((rng.normal(size=(n, FEATURES)) + rng.uniform(80.0, 120.0, FEATURES)).astype(np.float32),))


TOPIC = Topic(
    name="sharding",
    title="Sharding: meshes, data and tensor parallelism, shard_map",
    env={
        "JAX_PLATFORMS": "cpu",
        "JAX_NUM_CPU_DEVICES": str(DEVICES),
        "XLA_FLAGS": f"--xla_force_host_platform_device_count={DEVICES}",
    },
    platform="cpu",
    platform_reason=f"its meshes need {DEVICES} devices: the host's CPU split in {DEVICES}, the same on every machine",
    exercises=(
        Exercise(
            name="shard_batch",
            sample=_shard_batch,
            sizes=(2, 16),
            edge_cases=(
                Edge(
                    Case(
                        (np.arange(16 * 48, dtype=np.float32).reshape(16, 4, 4, 3), np.arange(16, dtype=np.int32)),
                        "the docstring's example, n = 16",
                    ),
                    _sixteen,
                ),
            ),
            checks=(Correct(1), Jit(1, requirements=(NO_PMAP, NO_EXTRA_COLLECTIVES)), Sharding(2)),
            outputs=("images", "labels"),
            hints=(
                "Two steps: describe the devices as a mesh with one named axis, then say which dimension of each "
                "array is split over that axis.",
                "`jax.make_mesh(axis_shapes, axis_names)` builds the mesh (all `jax.device_count()` devices on one "
                "axis); `NamedSharding(mesh, P('data'))` splits the first dimension; `jax.device_put` lays an array "
                "(or a tuple of them) out that way.",
                "Three steps: a one-axis mesh over every device, one sharding that cuts only the leading dimension "
                "(dimensions a spec leaves out stay whole, so one spec fits arrays of any rank), and one placement of "
                "both arrays together. No `pmap`, no reshaping.",
            ),
        ),
        Exercise(
            name="data_parallel_linear",
            sample=_data_parallel_linear,
            sizes=(1, 5, 32),
            checks=(
                Correct(1),
                Jit(2, requirements=(NO_PMAP, NO_EXTRA_COLLECTIVES, OWN_SHARE)),
                Sharding(1),
            ),
            rtol=1e-4,
            atol=1e-4,
            hints=(
                "Split the batch, copy the parameters: lay x out first, then let the product inherit x's layout.",
                "`NamedSharding(mesh, P('data', None))` for x, `NamedSharding(mesh, P())` for w and b; on a mesh from "
                "`jax.make_mesh`, `x @ w + b` is then computed block by block and stays sharded.",
                "Place x by rows and the parameters replicated, then write the plain layer formula on the placed arrays: "
                "no `out_sharding`, no sharding constraint, no reshard. Replicating x instead still gives the right "
                "numbers, but every device then does the whole batch.",
            ),
        ),
        Exercise(
            name="global_standardize",
            sample=_global_standardize,
            sizes=(8, 32),
            edge_cases=(
                Edge(
                    Case(
                        (np.arange(0, 16, 2, dtype=np.float32).reshape(8, 1),),
                        "the docstring's example, one row per device",
                    ),
                    _row_per_device,
                ),
                Edge(Case((_far_from_zero(),), "features near 100"), _near),
            ),
            # a shard_map is an `sdy.manual_computation` under Shardy, SPMDFullToShardShape custom calls under GSPMD
            checks=(
                Correct(2),
                Jit(
                    2,
                    requirements=(
                        UsesAnyOp(
                            ("manual_computation", "SPMDFullToShardShape"),
                            "write the per-device code with jax.shard_map",
                        ),
                        NO_PMAP,
                        NO_EXTRA_COLLECTIVES,
                    ),
                ),
                Sharding(1),
            ),
            rtol=1e-4,
            atol=1e-4,
            hints=(
                "Each device can sum its own rows; only the sums need to travel. Mean first, then the spread around "
                "it.",
                "`jax.shard_map(local, mesh=mesh, in_specs=..., out_specs=...)` with `P('data', None)` on both sides; "
                "inside `local`, `jax.lax.psum(v, 'data')` sums a per-device value over all devices. `jax.device_put` "
                "x to that layout before calling it.",
                "Inside the per-device function each statistic is a local column sum, made global by one `psum` and "
                "divided by the whole batch's size (a block only knows its own rows: take the size from the full "
                "array, outside). Mean first, then the variance of the deviations the same way, then the docstring's "
                "formula. Two psums, no all_gather.",
            ),
        ),
        Exercise(
            name="mlp_2d",
            sample=_mlp_2d,
            sizes=(1, 16),
            checks=(
                Correct(2),
                Jit(2, requirements=(NO_PMAP, NO_EXTRA_COLLECTIVES, OWN_SHARE)),
                Sharding(1),
            ),
            rtol=1e-4,
            atol=1e-4,
            hints=(
                "Split the first layer's weights by columns and the second's by rows: then the hidden activations "
                "never need to move, and only the output's partial sums are added up across 'model'.",
                "`jax.make_mesh((4, 2), ('data', 'model'))`; a `PartitionSpec` names, per dimension, the mesh axis "
                "that cuts it (`None`: whole). `x` is cut by rows over 'data'; each weight and bias is cut over "
                "'model' along its hidden dimension, if it has one. A product whose result sharding is ambiguous "
                "needs `out_sharding=`.",
                "Once the five arrays are placed, the first layer is the ordinary expression (its sharding follows "
                "from the operands); only the second product needs `jnp.matmul(..., out_sharding=...)`, rows over "
                "'data' and columns whole. Add `b2` after that product.",
            ),
        ),
        Exercise(
            name="sharded_train_step",
            sample=_train_step,
            sizes=(1, 16),
            edge_cases=(
                Edge(
                    Case(
                        (
                            _zeros_like_mlp(),
                            _zeros_like_mlp(),
                            np.ones((DEVICES, IN), np.float32),
                            np.ones((DEVICES, OUT), np.float32),
                            0.1,
                        ),
                        "the docstring's example: a zero model and state, targets 1",
                    ),
                    _zero_model,
                ),
            ),
            outputs=("new_params", "new_opt_state", "loss"),
            checks=(
                Correct(2),
                Jit(2, requirements=(NO_PMAP, NO_EXTRA_COLLECTIVES, OWN_SHARE)),
                Sharding(2),
                Compiles(1, make=_train_step_stream, max_compiles=STEP_COMPILES, calls=20, jit=False),
            ),
            rtol=1e-4,
            atol=1e-5,
            hints=(
                "Three kinds of arrays, three layouts: the batch is cut by rows, each weight along its hidden "
                "dimension (as in `mlp_2d`), and each velocity exactly like the parameter it belongs to. Lay them "
                "out first, then write the step as you would on one device.",
                "One dict of `NamedSharding`s keyed like `params` serves both trees: `jax.device_put((params, "
                "opt_state), (layout, layout))` inside the jitted function. `jax.value_and_grad` gives the loss and "
                "the gradients (laid out like the parameters on an Explicit mesh); `jax.tree.map` applies the update "
                "leaf by leaf; `jax.reshard(tree, layout)` declares the layout of what you return.",
                "The second product's result is ambiguous, as in `mlp_2d`: `jnp.matmul(hidden, w2, "
                "out_sharding=...)` with the batch's layout. Update the velocity first, then move each parameter by "
                "`lr` times its NEW velocity, and return the loss measured before the step. Keep `@jax.jit`, and "
                "never mark `lr` static: each new learning rate would compile the step again.",
            ),
        ),
    ),
)
