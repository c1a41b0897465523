# crafted: the reference, with the definitions below in place of its own
"""sharded_train_step with the batch left whole on every device: the right numbers, the parameters
and their state laid out as asked, but every device computes the whole batch's forward and
backward passes (4 times the reference's FLOPs per device).

sharded_train_step fails `jit` only (its FLOPs per device).
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
    params, opt_state = jax.device_put((params, opt_state), (layout, layout))
    x, y = jax.device_put((x, y), whole)  # FAULT: the batch replicated, not cut over "data"

    def loss_fn(p):
        hidden = jax.nn.relu(x @ p["w1"] + p["b1"])
        pred = jnp.matmul(hidden, p["w2"], out_sharding=whole) + p["b2"]
        return jnp.mean((pred - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    velocity = jax.tree.map(lambda v, g: MOMENTUM * v + g, opt_state, grads)
    new_params = jax.tree.map(lambda p, v: p - lr * v, params, velocity)
    return jax.reshard(new_params, layout), jax.reshard(velocity, layout), loss
