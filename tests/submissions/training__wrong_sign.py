# crafted: the reference, with the definitions below in place of its own
"""Gradient ascent: the step negates Optax's updates (which already point downhill).

train_step fails `correct` (and so `compiles` and `speed`, judged only once correct); fit, built on
it, drives the loss up by orders of magnitude and fails `trains`.
"""


@jax.jit(donate_argnums=(0, 1))
def train_step(params, opt_leaves, x, y):
    opt = make_optimizer()
    treedef = jax.tree.structure(opt.init(params))
    opt_state = jax.tree.unflatten(treedef, opt_leaves)
    loss, grads = jax.value_and_grad(mse_loss)(params, x, y)
    updates, opt_state = opt.update(grads, opt_state, params)
    return optax.apply_updates(params, jax.tree.map(lambda u: -u, updates)), jax.tree.leaves(opt_state), loss  # FAULT
