# crafted: the reference, with the definitions below in place of its own
"""The step is jitted without `donate_argnums`: right values, compiled once, but two copies of the state.

train_step fails `jit` only (Donates); fit trains.
"""


@jax.jit  # FAULT: no donation
def train_step(params, opt_leaves, x, y):
    opt = make_optimizer()
    treedef = jax.tree.structure(opt.init(params))
    opt_state = jax.tree.unflatten(treedef, opt_leaves)
    loss, grads = jax.value_and_grad(mse_loss)(params, x, y)
    updates, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), jax.tree.leaves(opt_state), loss
