# crafted: the reference, with the definitions below in place of its own
"""sharded_train_step with the optimizer state replicated instead of laid out like its parameters:
the right numbers, but each new velocity is gathered onto every device (an all-gather the
reference does not have) and returned whole, a layout the task does not ask for.

sharded_train_step fails `jit` (an all-gather) and `sharding` (new_opt_state replicated).
"""


@jax.jit
def sharded_train_step(params, opt_state, x, y, lr):
    mesh = jax.make_mesh((4, 2), ("data", "model"))
    layout = {
        "w1": NamedSharding(mesh, P(None, "model")),
        "b1": NamedSharding(mesh, P("model")),
        "w2": NamedSharding(mesh, P("model", None)),
        "b2": NamedSharding(mesh, P()),
    }
    whole = NamedSharding(mesh, P())
    rows = NamedSharding(mesh, P("data", None))
    params = jax.device_put(params, layout)
    opt_state = jax.device_put(opt_state, whole)  # FAULT: the velocities on every device, whole
    x, y = jax.device_put((x, y), rows)

    def loss_fn(p):
        hidden = jax.nn.relu(x @ p["w1"] + p["b1"])
        pred = jnp.matmul(hidden, p["w2"], out_sharding=rows) + p["b2"]
        return jnp.mean((pred - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    velocity = jax.tree.map(lambda v, g: MOMENTUM * v + g, opt_state, grads)
    new_params = jax.tree.map(lambda p, v: p - lr * v, params, velocity)
    return jax.reshard(new_params, layout), jax.reshard(velocity, whole), loss
