"""Training with Flax NNX and Optax: a small MLP, an Optax chain, a jitted, donating train step.

A Flax NNX model is a Python object (`nnx.Module`) holding its parameters as `nnx.Param`
variables. To jit a train step, split it into a static *graph definition* and a pytree of
arrays, `graphdef, state = nnx.split(model)`, and rebuild it inside the jitted function with
`nnx.merge(graphdef, state)`. Here the parameters cross the grader's wire as a plain nested
dict of arrays (`nnx.to_pure_dict(state)`), and the optimizer state as the list of its leaves
(`jax.tree.leaves(opt_state)`): every function rebuilds the structure it needs inside, from
the fixed model sizes below.

An Optax optimizer is a pair of pure functions, `init(params) -> state` and
`update(grads, state, params) -> (updates, new_state)`; `optax.chain` composes several into
one, applied in order. The train step below is jitted once and DONATES the parameters and the
optimizer state: their buffers are reused for the new ones, so a step holds one copy of the
state, not two, and the arrays you passed in are deleted. A training loop must therefore
always carry on with what the step returned.

A classifier with dropout and batch normalisation (`Classifier`) has state beyond its
parameters: the batch norm's running averages (`nnx.BatchStat`), which cross the wire as a
second nested dict, and a mode, train or eval, that changes what both layers compute.
"""

import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import optax
import orbax.checkpoint as ocp
from flax import nnx

IN, HIDDEN, OUT = 8, 32, 1
"""The model's sizes: x is (batch, IN) float32, y is (batch, OUT) float32."""

MAX_NORM = 1.0
"""The global gradient norm the chain clips to."""


class MLP(nnx.Module):
    """Linear(IN, HIDDEN) -> tanh -> Linear(HIDDEN, OUT)."""

    def __init__(self, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(IN, HIDDEN, rngs=rngs)
        self.out = nnx.Linear(HIDDEN, OUT, rngs=rngs)

    def __call__(self, x):
        return self.out(jnp.tanh(self.hidden(x)))


def init_params(seed):
    """The MLP's parameters for an integer seed, as a nested dict of float32 arrays."""
    return nnx.to_pure_dict(nnx.state(MLP(nnx.Rngs(seed)), nnx.Param))


def make_optimizer():
    """Clip the global gradient norm to MAX_NORM, then Adam on a warmup-cosine schedule.

    The learning rate rises linearly from 0 to 1e-2 over the first 10 steps, then decays along
    a cosine to 1e-3 at step 200 and stays there.
    """
    schedule = optax.warmup_cosine_decay_schedule(0.0, 1e-2, warmup_steps=10, decay_steps=200, end_value=1e-3)
    return optax.chain(optax.clip_by_global_norm(MAX_NORM), optax.adam(schedule))


def _graphdef():
    return nnx.split(nnx.eval_shape(lambda: MLP(nnx.Rngs(0))))[0]


def mse_loss(params, x, y):
    """Mean squared error of the MLP with parameters `params` on (x, y): a float32 scalar.

    `params` is a nested dict shaped like `init_params(0)`: `{"hidden": {"bias": (HIDDEN,),
    "kernel": (IN, HIDDEN)}, "out": {"bias": (OUT,), "kernel": (HIDDEN, OUT)}}`; `x` is
    (n, IN), `y` is (n, OUT). Rebuild the `MLP` around `params` (an abstract model from
    `nnx.eval_shape`, its state filled with `nnx.replace_by_pure_dict`, `nnx.merge`), call it on
    `x`, and average `(prediction - y) ** 2` over every entry.

    Example: with every parameter zero the model predicts 0, so the loss is `mean(y ** 2)`;
    for `y = [[1], [3]]` that is 5.0.
    """
    ### BEGIN SOLUTION
    graphdef = _graphdef()
    state = nnx.state(nnx.eval_shape(lambda: MLP(nnx.Rngs(0))))
    nnx.replace_by_pure_dict(state, params)
    model = nnx.merge(graphdef, state)
    return jnp.mean((model(x) - y) ** 2)
    ### END SOLUTION


def init_opt_state(params):
    """The optimizer state of `make_optimizer()` for `params`, as the list of its leaves.

    `params` is a nested dict as in `mse_loss`. Initialise the chain's state on it and flatten
    that state with `jax.tree.leaves`, in pytree order: 10 arrays here (the clipping keeps no
    state; Adam keeps its step count, then its first and second moments, each shaped like the
    parameters; the schedule keeps a step count of its own).

    Example: for any `params`, the first leaf is Adam's count `0` (int32, shape ()) and the
    next four are zeros shaped like `hidden.bias`, `hidden.kernel`, `out.bias`, `out.kernel`.
    """
    ### BEGIN SOLUTION
    return jax.tree.leaves(make_optimizer().init(params))
    ### END SOLUTION


@jax.jit(donate_argnums=(0, 1))
def train_step(params, opt_leaves, x, y):
    """One optimizer step on the batch (x, y): returns `(new_params, new_opt_leaves, loss)`.

    `params` is a nested dict as in `mse_loss`, `opt_leaves` the list `init_opt_state` returns
    (or a previous step's), `x` (batch, IN) and `y` (batch, OUT) float32. Rebuild the optimizer
    state's structure from `make_optimizer()`, take `mse_loss` and its gradient at `params`,
    let the chain turn the gradient into updates, and apply them. `loss` is the loss BEFORE the
    step; `new_opt_leaves` is the new state's leaves, in the same order.

    The step is jitted once, and donates `params` and `opt_leaves` (`donate_argnums`): the
    outputs reuse their buffers, and the arrays passed in are deleted.

    Example: from a fresh state (`init_opt_state(params)`) the first step's learning rate is 0
    (the warmup starts there), so `new_params` equals `params`, while both step counts in
    `new_opt_leaves` become 1.
    """
    ### BEGIN SOLUTION
    opt = make_optimizer()
    treedef = jax.tree.structure(opt.init(params))
    opt_state = jax.tree.unflatten(treedef, opt_leaves)
    loss, grads = jax.value_and_grad(mse_loss)(params, x, y)
    updates, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), jax.tree.leaves(opt_state), loss
    ### END SOLUTION


def fit(params, x, y, steps, batch_size):
    """Train from `params` for `steps` calls of `train_step` on minibatches of (x, y); return the parameters.

    `params` is a nested dict as in `mse_loss`, `x` (n, IN) and `y` (n, OUT) float32, with n a
    multiple of `batch_size`; `steps` and `batch_size` are Python ints. Start from a fresh
    optimizer state (`init_opt_state`), and at step i train on the `batch_size` rows that start
    at row `(i * batch_size) % n`, in that order: the grader follows your parameters along the
    reference loop's path, so another order, another number of steps or another optimizer ends
    elsewhere. Return the parameters after the last step, a nested dict like `params`.

    `train_step` donates the parameters and the state it is given: carry on with what it
    returns, never with what you passed to it.

    Example: `fit(params, x, y, 0, 32)` returns `params` unchanged; on the grader's datasets
    (256 rows whose targets have variance 1), 200 steps of 32 rows bring the loss from about 1
    to about 0.01.
    """
    ### BEGIN SOLUTION
    opt_leaves = init_opt_state(params)
    n = x.shape[0]
    for i in range(steps):
        start = (i * batch_size) % n
        params, opt_leaves, _ = train_step(params, opt_leaves, x[start:start + batch_size], y[start:start + batch_size])
    return params
    ### END SOLUTION


CLASSES = 4
"""The classifier's classes: its logits are (batch, CLASSES) float32, its labels int32 in [0, CLASSES)."""

DROPOUT_RATE = 0.25
"""The fraction of hidden units the classifier's dropout zeroes in train mode."""

MOMENTUM = 0.9
"""The batch norm's running averages: `running = MOMENTUM * running + (1 - MOMENTUM) * batch`."""


class Classifier(nnx.Module):
    """Linear(IN, HIDDEN) -> BatchNorm -> relu -> Dropout(DROPOUT_RATE) -> Linear(HIDDEN, CLASSES).

    Call it as `model(x, rngs=...)`: the dropout draws its mask from the `rngs` given to the call
    (none is needed in eval mode, where dropout does nothing).
    """

    def __init__(self, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(IN, HIDDEN, rngs=rngs)
        self.norm = nnx.BatchNorm(HIDDEN, momentum=MOMENTUM, rngs=rngs)
        self.dropout = nnx.Dropout(DROPOUT_RATE)
        self.out = nnx.Linear(HIDDEN, CLASSES, rngs=rngs)

    def __call__(self, x, rngs=None):
        return self.out(self.dropout(nnx.relu(self.norm(self.hidden(x))), rngs=rngs))


def init_classifier(seed):
    """The classifier's `(params, batch_stats)` for an integer seed, two nested dicts of float32 arrays.

    `params` holds the `nnx.Param`s: `{"hidden": {"bias", "kernel"}, "norm": {"bias", "scale"},
    "out": {"bias", "kernel"}}`; `batch_stats` the batch norm's running averages (`nnx.BatchStat`):
    `{"norm": {"mean": (HIDDEN,), "var": (HIDDEN,)}}`, zeros and ones when fresh.
    """
    model = Classifier(nnx.Rngs(seed))
    return nnx.to_pure_dict(nnx.state(model, nnx.Param)), nnx.to_pure_dict(nnx.state(model, nnx.BatchStat))


def classify(params, batch_stats, x, key, train):
    """The classifier's logits on `x`, in train or eval mode: returns `(logits, new_batch_stats)`.

    `params` and `batch_stats` are nested dicts shaped like `init_classifier(0)`'s, `x` is
    (n, IN) float32, `key` a PRNG key, `train` a Python bool (static). Rebuild the `Classifier`
    around the two dicts (split an abstract model into its graphdef, its `nnx.Param`s and its
    `nnx.BatchStat`s, fill each with its dict, merge), then:

    - `train=True` (`model.train()`): the batch norm normalises with the batch's own mean and
      (biased) variance per feature and moves its running averages toward them (MOMENTUM); the
      dropout zeroes each hidden unit with probability DROPOUT_RATE and scales the rest by
      `1 / (1 - DROPOUT_RATE)`, its mask drawn from the call's `rngs=nnx.Rngs(dropout=key)`
      (a fresh `nnx.Rngs` made from `key` for this call, so one key gives one mask).
    - `train=False` (`model.eval()`): the batch norm normalises with the running averages and
      leaves them as they are; no dropout, and `key` is not used.

    `logits` is (n, CLASSES) float32; `new_batch_stats` is the model's batch statistics after
    the call, a dict shaped like `batch_stats` (equal to it in eval mode).

    Example: from fresh statistics (mean 0, var 1), a train-mode call on a batch whose hidden
    pre-activations have mean `m` and variance `v` per feature returns `mean = 0.1 * m` and
    `var = 0.9 + 0.1 * v` (to 1e-6), and two keys give two different `logits`; an eval-mode
    call returns `batch_stats` unchanged and the same `logits` for every key.
    """
    ### BEGIN SOLUTION
    abstract = nnx.eval_shape(lambda: Classifier(nnx.Rngs(0)))
    graphdef, param_state, stat_state = nnx.split(abstract, nnx.Param, nnx.BatchStat)
    nnx.replace_by_pure_dict(param_state, params)
    nnx.replace_by_pure_dict(stat_state, batch_stats)
    model = nnx.merge(graphdef, param_state, stat_state)
    if train:
        model.train()
        logits = model(x, rngs=nnx.Rngs(dropout=key))
    else:
        model.eval()
        logits = model(x)
    return logits, nnx.to_pure_dict(nnx.state(model, nnx.BatchStat))
    ### END SOLUTION


def eval_step(params, batch_stats, x, labels):
    """The classifier's metrics on a labelled batch, in eval mode: `{"loss": ..., "accuracy": ...}`.

    `params`, `batch_stats` and `x` are as in `classify`, `labels` is (n,) int32 with values in
    [0, CLASSES). Compute the logits in eval mode (running averages, no dropout), then two
    float32 scalars: `loss`, the softmax cross-entropy of the logits against the integer labels
    averaged over the n rows, and `accuracy`, the fraction of rows whose largest logit is at the
    label's index.

    Example: with the `out` kernel zero and `out.bias = [0, 0, 0, log 3]` every row's logits are
    that bias, so every row predicts class 3 with probability 1/2 and each other class with 1/6.
    For `labels = [3, 0]` the accuracy is 0.5 and the loss `(log 2 + log 6) / 2`, about 1.2425.
    """
    ### BEGIN SOLUTION
    logits, _ = classify(params, batch_stats, x, None, False)
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    accuracy = jnp.mean(jnp.argmax(logits, axis=-1) == labels)
    return {"loss": loss, "accuracy": accuracy}
    ### END SOLUTION


def epoch_batches(key, epoch, n, batch_size):
    """One epoch's minibatches of an n-row dataset, as row indices and a mask: returns `(indices, mask)`.

    `key` is a PRNG key, the same for the whole run; `epoch` an integer (traced under jit: one
    program serves every epoch); `n` and `batch_size` Python ints (static). The epoch's order of
    the rows is `jax.random.permutation(jax.random.fold_in(key, epoch), n)`: a new order every
    epoch, the same one whenever the same epoch is asked again. Cut it into `-(-n // batch_size)`
    batches of `batch_size` in that order; the last batch, when n is not a multiple of
    `batch_size`, is filled up with row 0. `indices` is (batches, batch_size) int32, the row
    numbers; `mask` (batches, batch_size) bool, True where an entry is one of the epoch's n rows
    and False where it only fills the last batch.

    Example: `epoch_batches(jax.random.key(0), 3, 5, 2)` gives 3 batches; `indices.ravel()[:5]`
    is the epoch's order of the rows 0..4, `indices[2, 1] == 0` and `mask` is
    `[[True, True], [True, True], [True, False]]`.
    """
    ### BEGIN SOLUTION
    order = jax.random.permutation(jax.random.fold_in(key, epoch), n)
    batches = -(-n // batch_size)
    padded = jnp.zeros(batches * batch_size, jnp.int32).at[:n].set(order)
    mask = jnp.arange(batches * batch_size) < n
    return padded.reshape(batches, batch_size), mask.reshape(batches, batch_size)
    ### END SOLUTION


def masked_eval(params, batch_stats, x, labels, indices, mask):
    """The classifier's metrics over the rows that `indices` and `mask` lay out in batches: `{"loss": ..., "accuracy": ...}`.

    `params` and `batch_stats` are as in `classify`, `x` (n, IN) float32 and `labels` (n,) int32
    a dataset, `indices` and `mask` (batches, batch_size), int32 and bool, as `epoch_batches`
    makes them, of some of the dataset's rows (each real entry a different row; the filling
    entries, False in `mask`, name row 0). Evaluate one batch at a time with `jax.lax.map` over
    the batches (the memory of one batch's activations, whatever the dataset's size): each
    batch's eval-mode logits on its rows, as in `eval_step`. Then the two float32 scalars over
    the real entries only, each row once: `loss`, the mean softmax cross-entropy, and
    `accuracy`, the fraction predicted right.

    Example: with `indices = [[4, 1], [2, 0]]` and `mask = [[True, True], [True, False]]` the
    metrics are those of `eval_step` on the rows 4, 1 and 2: the filling 0 never counts.
    """
    ### BEGIN SOLUTION
    def one_batch(batch):
        rows, real = batch
        logits, _ = classify(params, batch_stats, x[rows], None, False)
        losses = optax.softmax_cross_entropy_with_integer_labels(logits, labels[rows])
        hits = real & (jnp.argmax(logits, axis=-1) == labels[rows])
        return jnp.sum(jnp.where(real, losses, 0.0)), jnp.sum(hits)

    losses, hits = jax.lax.map(one_batch, (indices, mask))
    count = jnp.sum(mask)
    return {"loss": jnp.sum(losses) / count, "accuracy": jnp.sum(hits) / count}
    ### END SOLUTION


class NormMLP(nnx.Module):
    """Linear(IN, HIDDEN) -> LayerNorm -> tanh -> Linear(HIDDEN, OUT): kernels, biases and a norm's scale."""

    def __init__(self, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(IN, HIDDEN, rngs=rngs)
        self.norm = nnx.LayerNorm(HIDDEN, rngs=rngs)
        self.out = nnx.Linear(HIDDEN, OUT, rngs=rngs)

    def __call__(self, x):
        return self.out(jnp.tanh(self.norm(self.hidden(x))))


def adamw_step(params, grads, learning_rate, weight_decay):
    """One AdamW step from a fresh optimizer state, with the weight decay on the kernels only: returns `(new_params, opt_state)`.

    `params` and `grads` are nested dicts shaped like `NormMLP`'s parameters,
    `nnx.to_pure_dict(nnx.state(NormMLP(nnx.Rngs(0)), nnx.Param))`: `{"hidden": {"bias": (HIDDEN,),
    "kernel": (IN, HIDDEN)}, "norm": {"bias": (HIDDEN,), "scale": (HIDDEN,)}, "out": {"bias":
    (OUT,), "kernel": (HIDDEN, OUT)}}`, float32; `learning_rate` and `weight_decay` are Python
    floats. Build `optax.adamw` with these two and its other settings left at their defaults,
    with weight decay applied to the two kernels and to nothing else (no bias, neither of the
    norm's parameters), initialise its state on `params`, take one update with `grads`, and
    apply it. Return the new parameters (a dict like `params`) and the optimizer's state after
    the step, as Optax returns it (a tuple of its parts).

    Example: with every gradient zero, Adam's part of the update is zero, so only the decay
    moves anything: each kernel becomes `kernel * (1 - learning_rate * weight_decay)` (to
    1e-6) and every bias and the norm's scale stay exactly as they were.
    """
    ### BEGIN SOLUTION
    def decay_mask(tree):
        return jax.tree_util.tree_map_with_path(lambda path, _: path[-1].key == "kernel", tree)

    opt = optax.adamw(learning_rate, weight_decay=weight_decay, mask=decay_mask)
    state = opt.init(params)
    updates, state = opt.update(grads, state, params)
    return optax.apply_updates(params, updates), state
    ### END SOLUTION


def resume_training(checkpoint, x, y, steps, batch_size):
    """Restore a training state from an Orbax checkpoint and train on from it: returns `(restored, losses)`.

    The checkpoint was written by Orbax's standard handler with OCDBT off
    (`ocp.StandardCheckpointHandler(use_ocdbt=False)`: a Zarr folder per array; Orbax's
    default, OCDBT on, writes one combined store instead, and `StandardCheckpointer` restores
    either) from `state = {"params": ..., "opt_state": ..., "step": ...}`: the MLP's parameters (a nested
    dict as in `mse_loss`), the optimizer state's leaves (a list as `init_opt_state` returns)
    and the number of steps taken so far (an int32 scalar). `checkpoint` holds that
    directory's files, as a dict from each file's path relative to the directory (`"_METADATA"`,
    `"params.hidden.kernel/.zarray"`, ...) to its bytes, a uint8 array. `x` (n, IN) and `y`
    (n, OUT) are float32, n a multiple of `batch_size`; `steps` and `batch_size` are Python ints.

    Write the files into a fresh temporary directory (`tempfile`), restore the state with a
    `StandardCheckpointer` into an abstract target (the shapes and dtypes of a fresh state,
    `jax.ShapeDtypeStruct`s, nothing allocated), then call `train_step` `steps` times, carrying
    on from the restored step: the i-th call is training step `s = step + i`, on the
    `batch_size` rows that start at row `(s * batch_size) % n`. Return `restored`, the state
    exactly as restored (a dict of the three entries above), and `losses`, the `steps` losses
    `train_step` returned, a float32 array.

    `train_step` donates what it is given: train a copy of the restored arrays, or `restored`
    is deleted by the first step.

    Example: a checkpoint saved by a run of `train_step` after 30 steps, resumed for 20 steps
    on the same data, gives the losses that the same run would have printed at steps 30 to 49
    had it never stopped (to 1e-6).
    """
    ### BEGIN SOLUTION
    directory = Path(tempfile.mkdtemp()) / "checkpoint"
    for name, data in checkpoint.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jax.device_get(data).tobytes())
    fresh = init_params(0)
    abstract = jax.eval_shape(
        lambda: {"params": fresh, "opt_state": init_opt_state(fresh), "step": jnp.zeros((), jnp.int32)}
    )
    with ocp.StandardCheckpointer() as checkpointer:
        restored = checkpointer.restore(directory, abstract)
    params = jax.tree.map(jnp.copy, restored["params"])
    opt_leaves = [jnp.copy(a) for a in restored["opt_state"]]
    n = x.shape[0]
    losses = []
    for i in range(steps):
        start = ((int(restored["step"]) + i) * batch_size) % n
        params, opt_leaves, loss = train_step(params, opt_leaves, x[start:start + batch_size], y[start:start + batch_size])
        losses.append(loss)
    return restored, jnp.stack(losses) if losses else jnp.zeros((0,), jnp.float32)
    ### END SOLUTION
