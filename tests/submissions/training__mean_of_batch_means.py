# crafted: the reference, with the definitions below in place of its own
"""Each batch's mean over its real rows, then the mean of those: the short last batch weighs as
much as a full one.

masked_eval fails `correct` only (right wherever every batch is full).
"""


def masked_eval(params, batch_stats, x, labels, indices, mask):
    def one_batch(batch):
        rows, real = batch
        logits, _ = classify(params, batch_stats, x[rows], None, False)
        losses = optax.softmax_cross_entropy_with_integer_labels(logits, labels[rows])
        hits = real & (jnp.argmax(logits, axis=-1) == labels[rows])
        count = jnp.sum(real)
        return jnp.sum(jnp.where(real, losses, 0.0)) / count, jnp.sum(hits) / count

    losses, accuracies = jax.lax.map(one_batch, (indices, mask))
    return {"loss": jnp.mean(losses), "accuracy": jnp.mean(accuracies)}  # FAULT: a mean of means
