# crafted: the reference, with the definitions below in place of its own
"""The right batches, but jitted with the epoch static: one compilation per epoch.

epoch_batches fails `jit` only: its program cannot be exported for an epoch it was not given.
"""

import functools


@functools.partial(jax.jit, static_argnums=(1, 2, 3))  # FAULT: the epoch is a value, not a shape
def epoch_batches(key, epoch, n, batch_size):
    order = jax.random.permutation(jax.random.fold_in(key, epoch), n)
    batches = -(-n // batch_size)
    padded = jnp.zeros(batches * batch_size, jnp.int32).at[:n].set(order)
    mask = jnp.arange(batches * batch_size) < n
    return padded.reshape(batches, batch_size), mask.reshape(batches, batch_size)
