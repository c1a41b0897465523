# crafted: the reference, with the definitions below in place of its own
"""A right answer written another way: `ocp.Checkpointer` with the standard handler and
`args.StandardRestore`, the target from `ocp.utils.to_shape_dtype_struct` on a fresh state.

Full marks on `resume_training`.
"""


def resume_training(checkpoint, x, y, steps, batch_size):
    directory = Path(tempfile.mkdtemp()) / "checkpoint"
    for name, data in checkpoint.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jax.device_get(data).tobytes())
    fresh = init_params(0)
    template = {"params": fresh, "opt_state": init_opt_state(fresh), "step": jnp.zeros((), jnp.int32)}
    abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, template)
    checkpointer = ocp.Checkpointer(ocp.StandardCheckpointHandler())
    restored = checkpointer.restore(directory, args=ocp.args.StandardRestore(abstract))
    params = jax.tree.map(jnp.copy, restored["params"])
    opt_leaves = [jnp.copy(a) for a in restored["opt_state"]]
    n = x.shape[0]
    losses = []
    for i in range(steps):
        start = ((int(restored["step"]) + i) * batch_size) % n
        params, opt_leaves, loss = train_step(params, opt_leaves, x[start:start + batch_size], y[start:start + batch_size])
        losses.append(loss)
    return restored, jnp.stack(losses) if losses else jnp.zeros((0,), jnp.float32)

