# crafted: the reference, with the definitions below in place of its own
"""Eval mode switches the batch norm to its running averages but leaves the dropout on.

classify fails `correct` only (its eval-mode cases); eval_step, built on it, fails `correct` too.
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
        model.set_attributes(use_running_average=True)  # FAULT: the dropout stays in train mode
        logits = model(x, rngs=nnx.Rngs(dropout=key if key is not None else 0))
    return logits, nnx.to_pure_dict(nnx.state(model, nnx.BatchStat))

