# crafted: the reference, with the definitions below in place of its own
"""Each layer checkpointed, but in a `fori_loop` that indexes the stacked weights, not `lax.scan`
over them (issue 44's independent `remat_grad`): the values are right and every layer keeps only
its input, yet the loop carries the gradient of the whole stack through every step, 3.17 times
the reference's temporary memory at L = 16. `jit` fails on memory, and its message names the loop.
"""


def remat_grad(params, x):
    L = params["W1"].shape[0]

    def loss(params):
        step = jax.checkpoint(residual_block)
        h = jax.lax.fori_loop(0, L, lambda i, h: step(h, jax.tree.map(lambda a: a[i], params)), x)
        return 0.5 * jnp.mean(h**2)

    return jax.value_and_grad(loss)(params)
