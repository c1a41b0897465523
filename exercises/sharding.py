# Topic `sharding`: replace each `raise NotImplementedError(...)` below with your code.
# Lesson: lessons/sharding.md. Check: `grade check sharding` (re-check on save: `grade watch sharding`).
# Stuck? `grade hint sharding.<function>`. Each docstring ends with what is graded; the rules all
# exercises share are in README.md ("How you are graded").
"""Sharding: laying arrays out over many devices, and computing where the data lives.

A *mesh* arranges the devices in a named grid: `jax.make_mesh((8,), ("data",))` is a row of
8 devices whose one axis is called "data"; `jax.make_mesh((4, 2), ("data", "model"))` is a
4 x 2 grid. A `NamedSharding(mesh, P(...))` says, for each dimension of an array, which mesh
axis splits it (`P` is `jax.sharding.PartitionSpec`):

    P("data", None)   rows split over "data", columns whole      (data parallel)
    P(None, "model")  columns split over "model"                  (tensor parallel)
    P()               nothing split: every device holds it all    (replicated)

Missing trailing entries mean `None`, so `P("data")` and `P("data", None)` are the same
layout for a matrix. `jax.device_put(x, sharding)` lays an array out that way, eagerly, and
inside `jax.jit` on an Explicit mesh (below); `x.sharding` and
`jax.debug.inspect_array_sharding` tell you where an array lives.

Two kinds of mesh axes. Since JAX 0.9.0, `jax.make_mesh` makes *Explicit* axes unless
`axis_types` says otherwise (0.8.1 to 0.8.3 made Auto axes there, with a warning): the sharding
is part of an array's type, every operation computes the sharding of its result from its
inputs', and where that is ambiguous (a matmul whose contracted dimension is split on both
sides) JAX asks you to say where the result goes (`jnp.matmul(a, b, out_sharding=...)`);
`jax.reshard` moves an explicitly sharded array to another layout. `Mesh(devices, names)`
(or `axis_types=(AxisType.Auto, ...)`) makes *Auto* axes: the compiler chooses layouts, and
inside `jax.jit` you steer it with `jax.lax.with_sharding_constraint` (there a `device_put`
of an argument does not: the compiler may keep it whole on every device, and so the work).
This topic uses Explicit meshes.

`jax.shard_map(f, mesh=..., in_specs=..., out_specs=...)` runs `f` once per device on that
device's block of each argument; inside, collectives such as `jax.lax.psum(v, "data")` (sum
over the devices of the "data" axis: an all-reduce) and `jax.lax.all_gather` communicate
explicitly. An Explicit-mesh array must already be laid out as `in_specs` says.

Sharded code lives inside `jax.jit`: the compiler turns one program over whole arrays into
one program per device, with the communication it needs. Every function below is already
jitted; keep the decorators. (Called outside `jit`, each `device_put` onto many devices and
each `shard_map` is dispatched, even compiled, on its own, again and again.)

What changed since the seed tutorial:
  - `PositionalSharding(jax.devices())` is gone (an ImportError on jax 0.10.2): use a mesh and
    `NamedSharding(mesh, P(...))`, where axes have names instead of positions;
  - `jax.experimental.shard_map.shard_map` is deprecated: use `jax.shard_map`, whose
    `check_rep=` became `check_vma=`, and whose `mesh=` may come from `jax.set_mesh`;
  - `jax.pmap` is the old way (one program per device, a new leading axis to map over); it
    is now itself implemented with `jit` and `shard_map`. Write `device_put` + `jit` or
    `shard_map` instead; the grader advises against `pmap` (a note, no points).

The grader runs this topic on the CPU with 8 devices (`JAX_PLATFORMS=cpu`,
`JAX_NUM_CPU_DEVICES=8`), on a laptop and on the grading GPU alike. To try it yourself, set
`os.environ["JAX_NUM_CPU_DEVICES"] = "8"` before `import jax` (or
`jax.config.update("jax_num_cpu_devices", 8)` right after it, before any computation).

Arguments arrive as ordinary single-device arrays; each function lays them out itself.
What the grader checks, besides the values: how each output is laid out (mesh axes and
sizes, PartitionSpec, replication), and, from the COMPILED program (`jax.jit(f).lower(...)
.compile().as_text()`), the collectives (all-gather, all-reduce, ...) and the work each
device does. Moving data between devices is the expensive part of parallel code: an
accidental all-gather gives the right numbers and loses the points.
"""

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

EPS = 1e-5
MOMENTUM = 0.9


@jax.jit
def shard_batch(images, labels):
    """Place a batch data-parallel: split its batch dimension over every device.

    `images` is float32 of shape (n, h, w, c) and `labels` int32 of shape (n,), with n a
    multiple of the number of devices. Build a 1-D mesh of all devices with one axis named
    "data" (`jax.make_mesh((jax.device_count(),), ("data",))`) and return the pair
    `(images, labels)`, values unchanged, each laid out with its FIRST (batch) dimension split
    over "data" and every other dimension whole: device i holds the i-th block of n/8 images
    and the same block of labels, so that each device can work on its examples alone.

    Example: with 8 devices and n = 16, every device holds 2 images and their 2 labels;
    `[s.data.shape for s in labels.addressable_shards]` is eight times `(2,)`.

    Graded (4 points):
      - correct (1): make `images` and `labels` equal the reference's¹, called as written on 1
        edge case ("the docstring's example, n = 16"; graded on other inputs of each kind) and 2
        random cases.
      - jit (1): keep it right under its own `jax.jit` (the decorator the task gives it, as
        called for `correct`); in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); no more collectives
        of any kind (all-gather, all-reduce, ...) than the reference's; (advice, no points: no
        `jax.pmap`).
      - sharding (2): lay out each of `images` and `labels` over the devices as the reference's
        (the blocks each dimension is split into, replication), on a fresh input of each size
        (read from the exported program run by the grader).
      ¹ rtol 1e-6, atol 1e-6 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("shard_batch: your code here")


@jax.jit
def data_parallel_linear(x, w, b):
    """A data-parallel linear layer: every device multiplies its own rows of the batch.

    `x` is float32 (n, d_in) with n a multiple of the number of devices, `w` float32
    (d_in, d_out), `b` float32 (d_out,). Return `x @ w + b`, float32 (n, d_out), with its rows
    split over the "data" axis of a 1-D mesh of all devices (`P("data", None)`): the output
    stays sharded, ready for the next layer.

    Data parallelism splits the batch and REPLICATES the parameters: place `x` with rows over
    "data", and `w` and `b` with `P()` (every device holds all of them). Then each device
    computes its block of rows on its own, with no communication at all; on an Explicit mesh
    the product's sharding follows from its operands'.

    The trap: gathering the batch back onto every device (for example with a sharding
    constraint that replicates `x` before the product) gives the same numbers, but every
    device then does the whole batch's work. The grader reads the compiled program: each device's FLOPs must stay
    near the reference's (1/8 of the layer), and no collective may appear.

    Graded (4 points):
      - correct (1): make the output equal the reference's¹, called as written on 3 random
        cases.
      - jit (2): keep it right under its own `jax.jit` (the decorator the task gives it, as
        called for `correct`); in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); no more collectives
        of any kind (all-gather, all-reduce, ...) than the reference's; XLA's FLOP count at most
        about the reference's²; (advice, no points: no `jax.pmap`).
      - sharding (1): lay out the output over the devices as the reference's (the blocks each
        dimension is split into, replication), on a fresh input of each size (read from the
        exported program run by the grader).
      ¹ rtol 1e-4, atol 1e-4 for float outputs; integers, booleans and keys exactly. ² at most
      x1.75 + 100 the reference's on the same inputs.
    """
    raise NotImplementedError("data_parallel_linear: your code here")


@jax.jit
def global_standardize(x):
    """Standardize every feature with the statistics of the WHOLE batch, per device, with shard_map.

    `x` is float32 (n, f), n a multiple of the number of devices. Return
    `(x - mean) / sqrt(var + 1e-5)`, float32 (n, f), where, for each feature (column), `mean`
    and `var` (the population variance: divide by n) are taken over all n rows, not over one
    device's rows. The output's rows are split over "data" (`P("data", None)`), like the input.

    This is synchronised batch normalisation. Write the per-device function `local(xb)`, which
    sees only its block `xb` of n/8 rows, and run it with
    `jax.shard_map(local, mesh=mesh, in_specs=P("data", None), out_specs=P("data", None))`
    on `x` laid out that way (`jax.device_put` first: on an Explicit mesh shard_map wants its
    input already placed as `in_specs` says). Inside `local`, `jax.lax.psum(v, "data")` sums
    `v` over all devices. Compute the global mean first (the psum of the column sums, over n),
    then the global variance as the psum of the squared deviations from that mean, over n.
    The one-pass formula mean(x**2) - mean(x)**2 loses most digits when a feature sits far
    from zero, and one graded case has features near 100.

    Example: a single column 0, 2, 4, ..., 14 (n = 8, one row per device) has mean 7 and
    variance 21; the first output row is -7 / sqrt(21.00001) = -1.5275...

    The reference's compiled program has two all-reduces; all-gathering the batch to compute the
    statistics on every device adds an all-gather.

    Graded (5 points):
      - correct (2): make the output equal the reference's¹, called as written on 2 edge cases
        ("the docstring's example, one row per device", "features near 100"; graded on other
        inputs of each kind) and 2 random cases.
      - jit (2): keep it right under its own `jax.jit` (the decorator the task gives it, as
        called for `correct`); in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); a `jax.shard_map`;
        no more collectives of any kind (all-gather, all-reduce, ...) than the reference's;
        (advice, no points: no `jax.pmap`).
      - sharding (1): lay out the output over the devices as the reference's (the blocks each
        dimension is split into, replication), on a fresh input of each size (read from the
        exported program run by the grader).
      ¹ rtol 1e-4, atol 1e-4 for float outputs; integers, booleans and keys exactly.
    """
    raise NotImplementedError("global_standardize: your code here")


@jax.jit
def mlp_2d(x, w1, b1, w2, b2):
    """One MLP block on a 2-D (data, model) mesh: batch over "data", hidden units over "model".

    Shapes: `x` (n, d), `w1` (d, h), `b1` (h,), `w2` (h, d), `b2` (d,), all float32, with n a
    multiple of 4 and h a multiple of 2. Return `relu(x @ w1 + b1) @ w2 + b2`, float32 (n, d),
    with rows split over "data" and whole on each "model" device (`P("data", None)`).

    Use the 8 devices as `mesh = jax.make_mesh((4, 2), ("data", "model"))` and lay the
    parameters out the Megatron way:
      - `x` rows over "data" (`P("data", None)`);
      - `w1` COLUMNS over "model" (`P(None, "model")`), `b1` likewise (`P("model")`): the
        hidden activations `relu(x @ w1 + b1)` then come out `P("data", "model")` with no
        communication, each device holding its rows and its half of the hidden units;
      - `w2` ROWS over "model" (`P("model", None)`), `b2` replicated (`P()`): each device's
        half of the hidden units times its half of `w2` is a partial sum of the output, and
        one all-reduce over "model" adds the two halves.
    On an Explicit mesh a product whose contracted dimension is split on both sides is
    ambiguous, so say where it goes:
    `jnp.matmul(hidden, w2, out_sharding=NamedSharding(mesh, P("data", None)))`.

    Leaving "model" unused doubles each device's work; the reference's compiled program has one
    all-reduce, and gathering the hidden activations adds an all-gather.

    Graded (5 points):
      - correct (2): make the output equal the reference's¹, called as written on 2 random
        cases.
      - jit (2): keep it right under its own `jax.jit` (the decorator the task gives it, as
        called for `correct`); in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); no more collectives
        of any kind (all-gather, all-reduce, ...) than the reference's; XLA's FLOP count at most
        about the reference's²; (advice, no points: no `jax.pmap`).
      - sharding (1): lay out the output over the devices as the reference's (the blocks each
        dimension is split into, replication), on a fresh input of each size (read from the
        exported program run by the grader).
      ¹ rtol 1e-4, atol 1e-4 for float outputs; integers, booleans and keys exactly. ² at most
      x1.75 + 100 the reference's on the same inputs.
    """
    raise NotImplementedError("mlp_2d: your code here")


@jax.jit
def sharded_train_step(params, opt_state, x, y, lr):
    """One training step of a two-layer MLP, laid out on a 4 x 2 (data, model) mesh.

    `params` is a dict of float32 arrays `{"w1": (d, h), "b1": (h,), "w2": (h, k), "b2": (k,)}`,
    `opt_state` the optimizer's state: one velocity per parameter, a dict of the same keys and
    shapes; `x` (n, d) and `y` (n, k) float32 are a batch, with n a multiple of 4 and h of 2;
    `lr` is the learning rate (a float). The model is `pred = relu(x @ w1 + b1) @ w2 + b2`, the
    loss `mean((pred - y) ** 2)` over all n * k entries. Take the loss and its gradient `g` at
    `params`, then one step of SGD with momentum (`MOMENTUM` = 0.9), leaf by leaf:

        v_new = MOMENTUM * v + g          p_new = p - lr * v_new

    and return `(new_params, new_opt_state, loss)`: two dicts like `params`, and the loss
    BEFORE the step, a float32 scalar.

    The layout is the point. On `mesh = jax.make_mesh((4, 2), ("data", "model"))`:
      - the batch `x`, `y`: rows over "data" (`P("data", None)`);
      - the parameters the Megatron way, as in `mlp_2d`: `w1` columns over "model"
        (`P(None, "model")`), `b1` over "model", `w2` rows over "model" (`P("model", None)`),
        `b2` replicated (`P()`);
      - each velocity EXACTLY like its parameter: the update is then elementwise on blocks
        each device already holds, and the state costs each device about half a replicated
        one's memory;
      - the outputs declared: `new_params` and `new_opt_state` in those same layouts (so that
        the next step takes them as they come), `loss` replicated.
    Lay the arguments out at the top of the function (`jax.device_put` inside `jit`: what
    `jax.jit(..., in_shardings=...)` does for a step jitted at a script's top level), declare
    the outputs' layouts at its end (`jax.reshard`: `out_shardings=`), and keep the
    decorator: the step compiles once, and later calls with the same shapes reuse it. On an
    Explicit mesh the gradient of each parameter comes out laid out like the parameter; the
    second product needs `out_sharding=`, as in `mlp_2d`.

    Example: with every parameter and velocity zero, `y` all ones (n = 8, k = 4) and
    `lr = 0.1`, the prediction is 0 and the loss 1.0; only `b2` has a gradient, -0.5 per entry
    (2 * (0 - 1) / 32, summed over 8 rows), so `new_opt_state["b2"]` is -0.5 everywhere,
    `new_params["b2"]` 0.05, and every other leaf stays 0.

    The grader compares the three outputs with the reference's, each output's layout
    (`new_params["w1"]` split by columns into 2 blocks, ...), the compiled program's
    collectives (the reference's: the all-reduces of the loss and of the gradients' partial
    sums, no all-gather) and FLOPs per device (a batch left whole on every device does 4
    times the work), and how often a stream of calls compiles: once for the step, plus one
    small slicing program per argument shape that enters it split.

    Graded (7 points):
      - correct (2): make `new_params`, `new_opt_state` and `loss` equal the reference's¹,
        called as written on 1 edge case ("the docstring's example: a zero model and state,
        targets 1"; graded on other inputs of each kind) and 2 random cases.
      - jit (2): keep it right under its own `jax.jit` (the decorator the task gives it, as
        called for `correct`); in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); no more collectives
        of any kind (all-gather, all-reduce, ...) than the reference's; XLA's FLOP count at most
        about the reference's²; (advice, no points: no `jax.pmap`).
      - sharding (2): lay out each of `new_params`, `new_opt_state` and `loss` over the devices
        as the reference's (the blocks each dimension is split into, replication), on a fresh
        input of each size (read from the exported program run by the grader).
      - compiles (1): compile at most 7 times³ on a stream of 20 calls, called as written, with
        the reference's outputs (a function whose operations compile one by one, without jit,
        fails).
      ¹ rtol 1e-4, atol 1e-5 for float outputs; integers, booleans and keys exactly. ² at most
      x1.75 + 100 the reference's on the same inputs. ³ compilations are counted by JAX's
      compilation events and by the grader's clock: each slow call runs again after the stream,
      and a call whose first run takes a compilation's time more than its replay, or whose
      replay alone takes half a compilation's, counts as one; 1 such call forgiven; and the time
      those calls spend compiling may add up to at most 9.25 of the reference's compilations.
    """
    raise NotImplementedError("sharded_train_step: your code here")
