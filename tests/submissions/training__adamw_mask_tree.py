# crafted: the reference, with the definitions below in place of its own
"""A right answer written another way: the mask as a literal tree of booleans, not a function.

Full marks on `adamw_step`.
"""


def adamw_step(params, grads, learning_rate, weight_decay):
    mask = {
        "hidden": {"bias": False, "kernel": True},
        "norm": {"bias": False, "scale": False},
        "out": {"bias": False, "kernel": True},
    }
    opt = optax.adamw(learning_rate, weight_decay=weight_decay, mask=mask)
    state = opt.init(params)
    updates, state = opt.update(grads, state, params)
    return optax.apply_updates(params, updates), state

