# crafted: the reference, with the definitions below in place of its own
"""sharded_train_step written the other way the lesson shows: an inner step jitted with
`in_shardings`/`out_shardings` on the function's own mesh, called from the outer function. Right
values, layouts, collectives and work: full marks (its exported program names its mesh only in
the module, not in its arguments' types).
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
    rows = NamedSharding(mesh, P("data", None))
    scalar = NamedSharding(mesh, P())

    def step(params, opt_state, x, y, lr):
        def loss_fn(p):
            hidden = jax.nn.relu(x @ p["w1"] + p["b1"])
            pred = jnp.matmul(hidden, p["w2"], out_sharding=rows) + p["b2"]
            return jnp.mean((pred - y) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        velocity = jax.tree.map(lambda v, g: MOMENTUM * v + g, opt_state, grads)
        return jax.tree.map(lambda p, v: p - lr * v, params, velocity), velocity, loss

    inner = jax.jit(
        step, in_shardings=(layout, layout, rows, rows, scalar), out_shardings=(layout, layout, scalar)
    )
    return inner(params, opt_state, x, y, lr)
