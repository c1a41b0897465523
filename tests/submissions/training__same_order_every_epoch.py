# crafted: the reference, with the definitions below in place of its own
"""Every epoch shuffles with the run's key itself: the same order every epoch.

epoch_batches fails `correct` only (its `jit` is then not judged).
"""


def epoch_batches(key, epoch, n, batch_size):
    order = jax.random.permutation(key, n)  # FAULT: the epoch is not folded into the key
    batches = -(-n // batch_size)
    padded = jnp.zeros(batches * batch_size, jnp.int32).at[:n].set(order)
    mask = jnp.arange(batches * batch_size) < n
    return padded.reshape(batches, batch_size), mask.reshape(batches, batch_size)
