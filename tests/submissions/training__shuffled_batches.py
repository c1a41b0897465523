# crafted: the reference, with the definitions below in place of its own
"""A loop in another batch order than the task's: the blocks of `batch_size` rows in a fresh
random order every epoch (every row once per epoch). It trains, and its parameters end near,
not on, the reference's (a drift of about 0.1 to 0.5 of the distance the reference's
travelled): the task fixes the order, and `trains` fails it. The rest is the reference.
"""

import numpy as np


def fit(params, x, y, steps, batch_size):
    opt_leaves = init_opt_state(params)
    n = x.shape[0]
    blocks = n // batch_size
    order = np.random.default_rng(0)
    for i in range(steps):
        if i % blocks == 0:  # a fresh order of the blocks every epoch: every row once per epoch
            perm = order.permutation(blocks)
        start = int(perm[i % blocks]) * batch_size
        params, opt_leaves, _ = train_step(params, opt_leaves, x[start:start + batch_size], y[start:start + batch_size])
    return params
