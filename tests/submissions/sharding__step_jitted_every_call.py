# crafted: the reference, with the definitions below in place of its own
"""sharded_train_step without its decorator, jitting a step defined inside it on every call: the
right numbers and layouts (one program under the grader's own `jax.jit`), but as written each
call makes a new function, which JAX traces and compiles again.

sharded_train_step fails `compiles` only.
"""


def sharded_train_step(params, opt_state, x, y, lr):
    def step(params, opt_state, x, y, lr):
        mesh = jax.make_mesh((4, 2), ("data", "model"))
        layout = {
            "w1": NamedSharding(mesh, P(None, "model")),
            "b1": NamedSharding(mesh, P("model")),
            "w2": NamedSharding(mesh, P("model", None)),
            "b2": NamedSharding(mesh, P()),
        }
        rows = NamedSharding(mesh, P("data", None))
        params, opt_state = jax.device_put((params, opt_state), (layout, layout))
        x, y = jax.device_put((x, y), rows)

        def loss_fn(p):
            hidden = jax.nn.relu(x @ p["w1"] + p["b1"])
            pred = jnp.matmul(hidden, p["w2"], out_sharding=rows) + p["b2"]
            return jnp.mean((pred - y) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        velocity = jax.tree.map(lambda v, g: MOMENTUM * v + g, opt_state, grads)
        new_params = jax.tree.map(lambda p, v: p - lr * v, params, velocity)
        return jax.reshard(new_params, layout), jax.reshard(velocity, layout), loss

    return jax.jit(step)(params, opt_state, x, y, lr)  # FAULT: a new function jitted on every call
