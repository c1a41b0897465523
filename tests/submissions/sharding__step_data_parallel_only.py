# crafted: the reference, with the definitions below in place of its own
"""sharded_train_step data parallel only: the batch cut over all 8 devices, the parameters and
their state replicated. The right numbers, as much work per device as the reference's and no
more collectives, but every device holds every parameter and velocity: the outputs are not laid
out as the task declares them.

sharded_train_step fails `sharding` only.
"""


@jax.jit
def sharded_train_step(params, opt_state, x, y, lr):
    mesh = jax.make_mesh((4, 2), ("data", "model"))
    whole = NamedSharding(mesh, P())
    rows = NamedSharding(mesh, P(("data", "model"), None))  # FAULT: no tensor parallelism
    params, opt_state = jax.device_put((params, opt_state), whole)
    x, y = jax.device_put((x, y), rows)

    def loss_fn(p):
        hidden = jax.nn.relu(x @ p["w1"] + p["b1"])
        pred = hidden @ p["w2"] + p["b2"]
        return jnp.mean((pred - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    velocity = jax.tree.map(lambda v, g: MOMENTUM * v + g, opt_state, grads)
    new_params = jax.tree.map(lambda p, v: p - lr * v, params, velocity)
    return new_params, velocity, loss
