# crafted: the reference, with the definitions below in place of its own
"""The mask is ignored: the filling entries (row 0) count as rows, and every entry divides.

masked_eval fails `correct` only (its `jit` is then not judged).
"""


def masked_eval(params, batch_stats, x, labels, indices, mask):
    def one_batch(rows):
        logits, _ = classify(params, batch_stats, x[rows], None, False)
        losses = optax.softmax_cross_entropy_with_integer_labels(logits, labels[rows])
        return jnp.sum(losses), jnp.sum(jnp.argmax(logits, axis=-1) == labels[rows])

    losses, hits = jax.lax.map(one_batch, indices)  # FAULT: the mask is never read
    return {"loss": jnp.sum(losses) / indices.size, "accuracy": jnp.sum(hits) / indices.size}
