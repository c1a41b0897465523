# crafted: the reference, with the definitions below in place of its own
"""Eval mode switches the dropout off but leaves the batch norm on the batch's statistics.

classify fails `correct` only (its eval-mode cases: the batch's statistics, and the running averages
moved); eval_step, built on it, fails `correct` too.
"""


def classify(params, batch_stats, x, key, train):
    abstract = nnx.eval_shape(lambda: Classifier(nnx.Rngs(0)))
    graphdef, param_state, stat_state = nnx.split(abstract, nnx.Param, nnx.BatchStat)
    nnx.replace_by_pure_dict(param_state, params)
    nnx.replace_by_pure_dict(stat_state, batch_stats)
    model = nnx.merge(graphdef, param_state, stat_state)
    if train:
        model.train()
        logits = model(x, rngs=nnx.Rngs(dropout=key))
    else:
        model.set_attributes(deterministic=True)  # FAULT: the batch norm still uses the batch's statistics
        logits = model(x)
    return logits, nnx.to_pure_dict(nnx.state(model, nnx.BatchStat))

