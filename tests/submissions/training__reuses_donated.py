# crafted: the reference, with the definitions below in place of its own
"""The loop keeps calling the step on the parameters it started from, which the first step donated.

fit fails `trains` with JAX's own error (a buffer that "has been deleted or donated").
"""


def fit(params, x, y, steps, batch_size):
    opt_leaves = init_opt_state(params)
    n = x.shape[0]
    for i in range(steps):
        start = (i * batch_size) % n
        # FAULT: params is never rebound, so the second step gets the arrays the first one donated
        new_params, opt_leaves, _ = train_step(params, opt_leaves, x[start:start + batch_size], y[start:start + batch_size])
    return new_params
