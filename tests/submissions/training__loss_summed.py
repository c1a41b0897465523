# crafted: the reference, with the definitions below in place of its own
"""The loss sums the per-row cross-entropies instead of averaging them.

eval_step fails `correct` only.
"""


def eval_step(params, batch_stats, x, labels):
    logits, _ = classify(params, batch_stats, x, None, False)
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).sum()  # FAULT: not a mean
    accuracy = jnp.mean(jnp.argmax(logits, axis=-1) == labels)
    return {"loss": loss, "accuracy": accuracy}

