"""A right loop in another order the task allows: the blocks of `batch_size` rows in a fresh
random order every epoch (every row once per epoch). Its parameters end near, not on, the
reference's: `trains` passes (its drift, about 0.1 to 0.3 of the distance the reference's
travelled, is below the bound). The rest is the reference.
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax
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
    return nnx.state(MLP(nnx.Rngs(seed)), nnx.Param).to_pure_dict()


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
    graphdef = _graphdef()
    state = nnx.state(nnx.eval_shape(lambda: MLP(nnx.Rngs(0))))
    nnx.replace_by_pure_dict(state, params)
    model = nnx.merge(graphdef, state)
    return jnp.mean((model(x) - y) ** 2)


def init_opt_state(params):
    """The optimizer state of `make_optimizer()` for `params`, as the list of its leaves.

    `params` is a nested dict as in `mse_loss`. Initialise the chain's state on it and flatten
    that state with `jax.tree.leaves`, in pytree order: 10 arrays here (the clipping keeps no
    state; Adam keeps its step count, then its first and second moments, each shaped like the
    parameters; the schedule keeps a step count of its own).

    Example: for any `params`, the first leaf is Adam's count `0` (int32, shape ()) and the
    next four are zeros shaped like `hidden.bias`, `hidden.kernel`, `out.bias`, `out.kernel`.
    """
    return jax.tree.leaves(make_optimizer().init(params))


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
    opt = make_optimizer()
    treedef = jax.tree.structure(opt.init(params))
    opt_state = jax.tree.unflatten(treedef, opt_leaves)
    loss, grads = jax.value_and_grad(mse_loss)(params, x, y)
    updates, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), jax.tree.leaves(opt_state), loss


def fit(params, x, y, steps, batch_size):
    """Train from `params` for `steps` calls of `train_step` on minibatches of (x, y); return the parameters.

    `params` is a nested dict as in `mse_loss`, `x` (n, IN) and `y` (n, OUT) float32, with n a
    multiple of `batch_size`; `steps` and `batch_size` are Python ints. Start from a fresh
    optimizer state (`init_opt_state`), and at step i train on the `batch_size` rows that start
    at row `(i * batch_size) % n` (any order that visits every row works as well). Return the
    parameters after the last step, a nested dict like `params`.

    `train_step` donates the parameters and the state it is given: carry on with what it
    returns, never with what you passed to it.

    Example: `fit(params, x, y, 0, 32)` returns `params` unchanged; on the grader's datasets
    (256 rows whose targets have variance 1), 200 steps of 32 rows bring the loss from about 1
    to about 0.01.
    """
    opt_leaves = init_opt_state(params)
    n = x.shape[0]
    blocks = n // batch_size
    order = np.random.default_rng(0)
    for i in range(steps):
        if i % blocks == 0:  # a fresh order of the blocks every epoch: every row once per epoch
            perm = order.permutation(blocks)
        start = int(perm[i % blocks]) * batch_size
        params, opt_leaves, _ = train_step(params, opt_leaves, x[start:start + batch_size], y[start:start + batch_size])
    return params
