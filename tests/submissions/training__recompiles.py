# crafted: the reference, with the definitions below in place of its own
"""The step builds a new jitted function on every call: right values, one compilation per call.

train_step fails `compiles` and `speed`, and `jit` too: the grader has to jit this plain function
itself, and a jit of its own making donates nothing (Donates).
"""


def train_step(params, opt_leaves, x, y):
    return jax.jit(lambda *a: _step(*a), donate_argnums=(0, 1))(params, opt_leaves, x, y)  # FAULT


def _step(params, opt_leaves, x, y):
    # the reference's step, undecorated
    opt = make_optimizer()
    treedef = jax.tree.structure(opt.init(params))
    opt_state = jax.tree.unflatten(treedef, opt_leaves)
    loss, grads = jax.value_and_grad(mse_loss)(params, x, y)
    updates, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), jax.tree.leaves(opt_state), loss
