# crafted: the reference, with the definitions below in place of its own
"""The right metrics, but every batch evaluated at once, with no loop over the batches: the
activations of the whole layout in memory together.

masked_eval fails `jit` only (its program has no loop).
"""


def masked_eval(params, batch_stats, x, labels, indices, mask):
    rows, real = indices.ravel(), mask.ravel()  # FAULT: no `lax.map` over the batches
    logits, _ = classify(params, batch_stats, x[rows], None, False)
    losses = optax.softmax_cross_entropy_with_integer_labels(logits, labels[rows])
    hits = real & (jnp.argmax(logits, axis=-1) == labels[rows])
    count = jnp.sum(real)
    return {"loss": jnp.sum(jnp.where(real, losses, 0.0)) / count, "accuracy": jnp.sum(hits) / count}
