# Topic `training`: replace each `raise NotImplementedError(...)` below with your code.
# Lesson: lessons/training.md. Check: `grade check training` (re-check on save: `grade watch training`).
# Stuck? `grade hint training.<function>`. Each docstring ends with what is graded; the rules all
# exercises share are in README.md ("How you are graded").
"""Training with Flax NNX and Optax: a small MLP, an Optax chain, a jitted, donating train step.

A Flax NNX model is a Python object (`nnx.Module`) holding its parameters as `nnx.Param`
variables. To jit a train step, split it into a static *graph definition* and a pytree of
arrays, `graphdef, state = nnx.split(model)`, and rebuild it inside the jitted function with
`nnx.merge(graphdef, state)`. Here the parameters cross the grader's wire as a plain nested
dict of arrays (`nnx.State.to_pure_dict()`), and the optimizer state as the list of its leaves
(`jax.tree.leaves(opt_state)`): every function rebuilds the structure it needs inside, from
the fixed model sizes below.

An Optax optimizer is a pair of pure functions, `init(params) -> state` and
`update(grads, state, params) -> (updates, new_state)`; `optax.chain` composes several into
one, applied in order. The train step below is jitted once and DONATES the parameters and the
optimizer state: their buffers are reused for the new ones, so a step holds one copy of the
state, not two, and the arrays you passed in are deleted. A training loop must therefore
always carry on with what the step returned.
"""

import jax
import jax.numpy as jnp
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

    Graded (2 points):
      - correct (1): make the output equal the reference's¹, called as written on 1 edge case
        ("zero parameters: the loss is mean(y**2)"; graded on other inputs of each kind) and 4
        random cases.
      - jit (1): make it work jitted by the grader: the same outputs as un-jitted, on the same
        cases; in its exported program: no host callbacks; no re-tracing (one program, exported
        from the shapes, for new values of those shapes).
      ¹ rtol 1e-5, atol 1e-6.
    """
    raise NotImplementedError("mse_loss: your code here")


def init_opt_state(params):
    """The optimizer state of `make_optimizer()` for `params`, as the list of its leaves.

    `params` is a nested dict as in `mse_loss`. Initialise the chain's state on it and flatten
    that state with `jax.tree.leaves`, in pytree order: 10 arrays here (the clipping keeps no
    state; Adam keeps its step count, then its first and second moments, each shaped like the
    parameters; the schedule keeps a step count of its own).

    Example: for any `params`, the first leaf is Adam's count `0` (int32, shape ()) and the
    next four are zeros shaped like `hidden.bias`, `hidden.kernel`, `out.bias`, `out.kernel`.

    Graded (1 point):
      - correct (1): make the output equal the reference's¹, called as written on 4 random
        cases.
      ¹ rtol 1e-6, atol 1e-6.
    """
    raise NotImplementedError("init_opt_state: your code here")


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

    Graded (5 points):
      - correct (2): make `new_params`, `new_opt_leaves` and `loss` equal the reference's¹,
        called as written on 1 edge case ("a fresh state: the first step's learning rate is 0";
        graded on other inputs of each kind) and 4 random cases.
      - jit (1): keep it right under its own `jax.jit` (the decorator the task gives it, as
        called for `correct`); in its exported program: no host callbacks; no re-tracing (one
        program, exported from the shapes, for new values of those shapes); it donates at least
        as many of its inputs as the reference's program does (`donate_argnums`: the outputs
        reuse their buffers).
      - compiles (1): compile at most 1 time² on a stream of 20 calls, called as written, with
        the reference's outputs (a function whose operations compile one by one, without jit,
        fails).
      - speed (1): be about as fast as the reference³: called as written, timed on `params` a
        tree of 4 arrays, `opt_leaves` a tree of 10 arrays, `x` float32[2**14, 8], `y`
        float32[2**14, 1] (`x` float32[2**16, 8], `y` float32[2**16, 1] on the GPU).
      ¹ rtol 1e-4, atol 1e-5. ² compilations are counted by JAX's compilation events and by the
      grader's clock: each slow call runs again after the stream, and a call whose first run
      takes a compilation's time more than its replay, or whose replay alone takes half a
      compilation's, counts as one; 1 such call forgiven; and the time those calls spend
      compiling may add up to at most 1.75 of the reference's compilations. ³ full points up to
      x1.25 the reference's time, none from x10, log-linear between (on a CPU the clock is CPU
      time, and a wall time past x10 scores 0 too).
    """
    raise NotImplementedError("train_step: your code here")


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

    Graded (2 points):
      - trains (2): train as the task says, so that the parameters you return reach a mean
        squared error below 0.2 on the whole dataset (predicting the targets' mean scores about
        1) and are where training ends¹: called as written, 2 runs, each on a dataset and
        initial parameters the grader draws (`params` a tree of 4 arrays, `x` float32[256, 8],
        `y` float32[256, 1], `steps` = 200, `batch_size` = 32).
      ¹ the reference's loop runs from the same initial parameters, and yours must end within
      0.7 of the distance it travelled from them (any batch order the task allows does; a fit
      that takes no optimizer steps does not); a run past max(60 s, 20x the reference's) is
      stopped.
    """
    raise NotImplementedError("fit: your code here")
