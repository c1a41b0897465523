# crafted: the reference, with the definitions below in place of its own
"""The loop re-initialises the optimizer state before every step: Adam's count never leaves 0.

train_step is right; fit stays at the warmup's first learning rate, 0, and fails `trains` at the
initial loss.
"""


def fit(params, x, y, steps, batch_size):
    opt_leaves = init_opt_state(params)
    n = x.shape[0]
    for i in range(steps):
        opt_leaves = init_opt_state(params)  # FAULT: a fresh state every step
        start = (i * batch_size) % n
        params, opt_leaves, _ = train_step(params, opt_leaves, x[start:start + batch_size], y[start:start + batch_size])
    return params
