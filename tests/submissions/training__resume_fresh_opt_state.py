# crafted: the reference, with the definitions below in place of its own
"""Restores the checkpoint, then trains on with a freshly initialised optimizer state.

`restored` is right; the losses jump away from the uninterrupted run's (Adam's moments and the
schedule restart at 0): fails `correct`, and only it.
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
    with ocp.StandardCheckpointer() as checkpointer:
        restored = checkpointer.restore(directory, abstract)
    params = jax.tree.map(jnp.copy, restored["params"])
    opt_leaves = init_opt_state(params)  # FAULT: a fresh optimizer state, not the restored one
    n = x.shape[0]
    losses = []
    for i in range(steps):
        start = ((int(restored["step"]) + i) * batch_size) % n
        params, opt_leaves, loss = train_step(params, opt_leaves, x[start:start + batch_size], y[start:start + batch_size])
        losses.append(loss)
    return restored, jnp.stack(losses) if losses else jnp.zeros((0,), jnp.float32)

