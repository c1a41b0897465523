# crafted: the reference, with the definitions below in place of its own
"""A loop that takes half the steps it is asked for (off task): its loss is low, but its
parameters end 0.12 to 0.30 of the way back along the reference loop's path, where the
cosine schedule still moves them. `trains` fails it (it passed every seed at the old bound).
"""


def fit(params, x, y, steps, batch_size):
    opt_leaves = init_opt_state(params)
    n = x.shape[0]
    for i in range(steps // 2):
        start = (i * batch_size) % n
        params, opt_leaves, _ = train_step(params, opt_leaves, x[start:start + batch_size], y[start:start + batch_size])
    return params
