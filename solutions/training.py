"""Training with Flax NNX and Optax: a small MLP, an Optax chain, a jitted, donating train step.

A Flax NNX model is a Python object (`nnx.Module`) holding its parameters as `nnx.Param`
variables. To jit a train step, split it into a static *graph definition* and a pytree of
arrays, `graphdef, state = nnx.split(model)`, and rebuild it inside the jitted function with
`nnx.merge(graphdef, state)`. Here the parameters cross the grader's wire as a plain nested
dict of arrays (`nnx.State.to_pure_dict()`), and the optimizer state as the list of its leaves
(`jax.tree.leaves(opt_state)`): every function rebuilds the structure it needs inside, from
the fixed model sizes below.
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
    """Clip the global gradient norm to MAX_NORM, then Adam on a warmup-cosine schedule."""
    schedule = optax.warmup_cosine_decay_schedule(0.0, 1e-2, warmup_steps=10, decay_steps=200, end_value=1e-3)
    return optax.chain(optax.clip_by_global_norm(MAX_NORM), optax.adam(schedule))


def _graphdef():
    return nnx.split(nnx.eval_shape(lambda: MLP(nnx.Rngs(0))))[0]


def mse_loss(params, x, y):
    """Mean squared error of the MLP with parameters `params` (nested dict) on (x, y): a scalar."""
    ### BEGIN SOLUTION
    graphdef = _graphdef()
    state = nnx.state(nnx.eval_shape(lambda: MLP(nnx.Rngs(0))))
    nnx.replace_by_pure_dict(state, params)
    model = nnx.merge(graphdef, state)
    return jnp.mean((model(x) - y) ** 2)
    ### END SOLUTION


def init_opt_state(params):
    """The leaves (a list of arrays) of `make_optimizer().init(params)`."""
    ### BEGIN SOLUTION
    return jax.tree.leaves(make_optimizer().init(params))
    ### END SOLUTION


@jax.jit(donate_argnums=(0, 1))
def train_step(params, opt_leaves, x, y):
    """One optimizer step: returns (new_params, new_opt_leaves, loss before the step).

    Jitted once, donating params and opt_leaves (their buffers are reused for the outputs).
    """
    ### BEGIN SOLUTION
    opt = make_optimizer()
    treedef = jax.tree.structure(opt.init(params))
    opt_state = jax.tree.unflatten(treedef, opt_leaves)
    loss, grads = jax.value_and_grad(mse_loss)(params, x, y)
    updates, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), jax.tree.leaves(opt_state), loss
    ### END SOLUTION
