# crafted: the reference, with the definitions below in place of its own
"""Train mode returns the running averages it was given, not the moved ones.

classify fails `correct` only (its train-mode cases' `new_batch_stats`); eval_step is right.
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
        model.eval()
        logits = model(x)
    return logits, batch_stats  # FAULT: the statistics the call moved are dropped

