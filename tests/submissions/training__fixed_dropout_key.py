# crafted: the reference, with the definitions below in place of its own
"""Train mode draws its dropout mask from a fixed key, not the one it is given.

classify fails `correct` only (its train-mode cases: one mask for every key); eval_step, in eval mode, is
right.
"""


def classify(params, batch_stats, x, key, train):
    abstract = nnx.eval_shape(lambda: Classifier(nnx.Rngs(0)))
    graphdef, param_state, stat_state = nnx.split(abstract, nnx.Param, nnx.BatchStat)
    nnx.replace_by_pure_dict(param_state, params)
    nnx.replace_by_pure_dict(stat_state, batch_stats)
    model = nnx.merge(graphdef, param_state, stat_state)
    if train:
        model.train()
        logits = model(x, rngs=nnx.Rngs(dropout=0))  # FAULT: the key is ignored
    else:
        model.eval()
        logits = model(x)
    return logits, nnx.to_pure_dict(nnx.state(model, nnx.BatchStat))

