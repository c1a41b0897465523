# crafted: the reference, with the definitions below in place of its own
"""AdamW with the weight decay on every parameter: biases and the norm's scale decay too.

The optimizer state has no masked part (an empty state where the reference's is masked), and
every bias and the norm's scale shrink by lr * wd: fails `correct`, and only it.
"""


def adamw_step(params, grads, learning_rate, weight_decay):
    opt = optax.adamw(learning_rate, weight_decay=weight_decay)  # FAULT: no mask
    state = opt.init(params)
    updates, state = opt.update(grads, state, params)
    return optax.apply_updates(params, updates), state

