# crafted: the reference, with the definitions below in place of its own
"""AdamW with the mask the wrong way round: biases and the norm's parameters decay, kernels do not.

The state's structure is the reference's (a masked part is there); the values are not: fails
`correct`, and only it.
"""


def adamw_step(params, grads, learning_rate, weight_decay):
    def decay_mask(tree):
        return jax.tree_util.tree_map_with_path(lambda path, _: path[-1].key != "kernel", tree)  # FAULT: inverted

    opt = optax.adamw(learning_rate, weight_decay=weight_decay, mask=decay_mask)
    state = opt.init(params)
    updates, state = opt.update(grads, state, params)
    return optax.apply_updates(params, updates), state

