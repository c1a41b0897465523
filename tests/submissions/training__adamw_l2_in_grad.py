# crafted: the reference, with the definitions below in place of its own
"""Adam with an L2 term added to the kernels' gradients (coupled), instead of AdamW's decoupled decay.

The penalty passes through Adam's normalisation, so the kernels move by lr * sign(g + wd * w)
instead of lr * (sign(g) + wd * w); the state has no masked part: fails `correct`, and only it.
"""


def adamw_step(params, grads, learning_rate, weight_decay):
    opt = optax.adam(learning_rate)  # FAULT: L2 in the gradient, not a decoupled decay
    grads = jax.tree_util.tree_map_with_path(
        lambda path, g, p: g + weight_decay * p if path[-1].key == "kernel" else g, grads, params
    )
    state = opt.init(params)
    updates, state = opt.update(grads, state, params)
    return optax.apply_updates(params, updates), state

