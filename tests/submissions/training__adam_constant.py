# crafted: the reference, with the definitions below in place of its own
"""A loop with its own optimizer (off task): Adam at a constant 1e-2 after the same clipping,
not the task's step and schedule. It trains (its loss is lower than the reference's), but its
parameters end elsewhere: `trains` fails it (it passed 197 seeds of 200 at the old bound).
"""

import optax


def fit(params, x, y, steps, batch_size):
    opt = optax.chain(optax.clip_by_global_norm(MAX_NORM), optax.adam(1e-2))

    @jax.jit
    def step(params, state, xb, yb):
        grads = jax.grad(mse_loss)(params, xb, yb)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    state = opt.init(params)
    n = x.shape[0]
    for i in range(steps):
        start = (i * batch_size) % n
        params, state = step(params, state, x[start:start + batch_size], y[start:start + batch_size])
    return params
