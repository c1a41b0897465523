# crafted: the reference, with the definitions below in place of its own
"""The rows that do not fill a whole batch are dropped: n // batch_size batches, no mask needed.

epoch_batches fails `correct` only: fewer batches than asked, and every row of a short epoch lost.
"""


def epoch_batches(key, epoch, n, batch_size):
    order = jax.random.permutation(jax.random.fold_in(key, epoch), n)
    batches = n // batch_size  # FAULT: the partial last batch is dropped
    kept = order[: batches * batch_size]
    return kept.reshape(batches, batch_size), jnp.ones((batches, batch_size), bool)
