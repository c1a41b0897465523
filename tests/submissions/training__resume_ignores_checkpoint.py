# crafted: the reference, with the definitions below in place of its own
"""Attack: never reads the checkpoint; trains on from a state of its own making.

Without reading the files nothing tells it the saved parameters, moments or step (the grader
draws them at random for every case): fails `correct`, and only it.
"""


def resume_training(checkpoint, x, y, steps, batch_size):
    directory = Path(tempfile.mkdtemp()) / "checkpoint"
    for name, data in checkpoint.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jax.device_get(data).tobytes())
    fresh = init_params(0)
    abstract = jax.eval_shape(
        lambda: {"params": fresh, "opt_state": init_opt_state(fresh), "step": jnp.zeros((), jnp.int32)}
    )
    # FAULT: the checkpoint is never read
    restored = {"params": fresh, "opt_state": init_opt_state(fresh), "step": jnp.zeros((), jnp.int32)}
    del abstract
    params = jax.tree.map(jnp.copy, restored["params"])
    opt_leaves = [jnp.copy(a) for a in restored["opt_state"]]
    n = x.shape[0]
    losses = []
    for i in range(steps):
        start = ((int(restored["step"]) + i) * batch_size) % n
        params, opt_leaves, loss = train_step(params, opt_leaves, x[start:start + batch_size], y[start:start + batch_size])
        losses.append(loss)
    return restored, jnp.stack(losses) if losses else jnp.zeros((0,), jnp.float32)

