# crafted: the reference, with the definitions below in place of its own
"""The step returns the optimizer state it was given, not the new one.

train_step fails `correct` (and so `compiles` and `speed`); fit, built on it, never leaves the warmup's
first learning rate, 0, and fails `trains` at the initial loss.
"""


@jax.jit(donate_argnums=(0, 1))
def train_step(params, opt_leaves, x, y):
    opt = make_optimizer()
    treedef = jax.tree.structure(opt.init(params))
    opt_state = jax.tree.unflatten(treedef, opt_leaves)
    loss, grads = jax.value_and_grad(mse_loss)(params, x, y)
    updates, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_leaves, loss  # FAULT: the old state
