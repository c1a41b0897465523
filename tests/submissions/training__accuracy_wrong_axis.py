# crafted: the reference, with the definitions below in place of its own
"""The accuracy compares a column of predictions (argmax with keepdims) with the row of labels: an (n, n)
table, averaged whole.

eval_step fails `correct` only (it jits: the same wrong values).
"""


def eval_step(params, batch_stats, x, labels):
    logits, _ = classify(params, batch_stats, x, None, False)
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    accuracy = jnp.mean(jnp.argmax(logits, axis=-1, keepdims=True) == labels)  # FAULT: (n, 1) against (n,)
    return {"loss": loss, "accuracy": accuracy}

