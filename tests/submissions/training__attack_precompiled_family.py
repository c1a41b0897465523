"""Attack (compilations done before any window): the stream's whole shape family compiled at import.

`train_step` runs as written, without jit: every operation compiles on its own for the
stream's batch size inside the first call's window, which the `compiles` check weighs (about
four of the reference's compilations against an allowance of one) and fails. But the batch
sizes of that stream are public (16 to 63 rows, read in the student package), and so are the
shapes of the parameters and the optimizer state: at import, threads compile the jitted step
for every one of the 48 sizes, ahead of any clock, and the function then calls the compiled
program for the size it is given. Every call of the stream is a lookup: it read 0 compilations
and took the check's point from a twin that gets none. The grader now runs the stream on a
worker of its own from its start and counts its CPU outside the calls' windows against the
reference's doing the same: the 48 compilations are counted wherever they were done.
With ATTACK = False (the honest twin) nothing is compiled ahead; the step still runs eagerly.
"""

from concurrent.futures import ThreadPoolExecutor

import jax
import jax.numpy as jnp
import optax
from flax import nnx

ATTACK = True
BATCH_SIZES = range(16, 64)  # the public stream family's batch sizes

IN, HIDDEN, OUT = 8, 32, 1


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(IN, HIDDEN, rngs=rngs)
        self.out = nnx.Linear(HIDDEN, OUT, rngs=rngs)

    def __call__(self, x):
        return self.out(jnp.tanh(self.hidden(x)))


def make_optimizer():
    schedule = optax.warmup_cosine_decay_schedule(0.0, 1e-2, warmup_steps=10, decay_steps=200, end_value=1e-3)
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adam(schedule))


def mse_loss(params, x, y):
    abstract = nnx.eval_shape(lambda: MLP(nnx.Rngs(0)))
    graphdef, state = nnx.split(abstract)
    nnx.replace_by_pure_dict(state, params)
    return jnp.mean((nnx.merge(graphdef, state)(x) - y) ** 2)


def _step(params, opt_leaves, x, y):
    opt = make_optimizer()
    treedef = jax.tree.structure(opt.init(params))
    opt_state = jax.tree.unflatten(treedef, opt_leaves)
    loss, grads = jax.value_and_grad(mse_loss)(params, x, y)
    updates, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), jax.tree.leaves(opt_state), loss


def _compiled_family():
    """The jitted step compiled for every batch size of the public family, keyed by size."""
    params = nnx.to_pure_dict(nnx.state(nnx.eval_shape(lambda: MLP(nnx.Rngs(0))), nnx.Param))
    leaves = jax.eval_shape(lambda p: jax.tree.leaves(make_optimizer().init(p)), params)
    jitted = jax.jit(_step)

    def compile_for(n):
        x = jax.ShapeDtypeStruct((n, IN), jnp.float32)
        y = jax.ShapeDtypeStruct((n, OUT), jnp.float32)
        return n, jitted.lower(params, leaves, x, y).compile()

    with ThreadPoolExecutor(4) as pool:
        return dict(pool.map(compile_for, BATCH_SIZES))


PRECOMPILED = _compiled_family() if ATTACK else {}


def train_step(params, opt_leaves, x, y):
    compiled = PRECOMPILED.get(x.shape[0])
    if compiled is not None:
        try:
            return compiled(params, opt_leaves, x, y)
        except (TypeError, ValueError):  # another dtype or structure: run it as written
            pass
    return _step(params, opt_leaves, x, y)
