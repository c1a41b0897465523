# crafted: the reference, with the definitions below in place of its own
"""eval_step calls the classifier in train mode (batch statistics, dropout with a fixed key).

eval_step fails `correct` only; classify is right.
"""


def eval_step(params, batch_stats, x, labels):
    logits, _ = classify(params, batch_stats, x, jax.random.key(0), True)  # FAULT: train mode
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    accuracy = jnp.mean(jnp.argmax(logits, axis=-1) == labels)
    return {"loss": loss, "accuracy": accuracy}

