# crafted: the reference, with the definitions below in place of its own
"""Restores the parameters alone (as if only they were saved): a fresh optimizer state and step 0.

`restored` holds the fresh state and step 0, and the losses differ: fails `correct`, and only it.
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
    # FAULT: only the parameters kept; the optimizer and the step start afresh
    restored = {"params": restored["params"], "opt_state": init_opt_state(restored["params"]),
                "step": jnp.zeros((), jnp.int32)}
    params = jax.tree.map(jnp.copy, restored["params"])
    opt_leaves = [jnp.copy(a) for a in restored["opt_state"]]
    n = x.shape[0]
    losses = []
    for i in range(steps):
        start = ((int(restored["step"]) + i) * batch_size) % n
        params, opt_leaves, loss = train_step(params, opt_leaves, x[start:start + batch_size], y[start:start + batch_size])
        losses.append(loss)
    return restored, jnp.stack(losses) if losses else jnp.zeros((0,), jnp.float32)

