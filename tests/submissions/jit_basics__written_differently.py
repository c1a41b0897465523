# crafted: the reference, with the definitions below in place of its own
"""Right answers written differently from the reference: all must pass, on the CPU and where
the speed rounds run on an accelerator (their outputs there are compared with the CPU's)."""


def bce_fast(z, y):
    return _bce_summed(z, y)


@jax.jit
def _bce_summed(z, y):
    # the same stable terms in another order, summed and divided rather than averaged
    return jnp.sum(jnp.log1p(jnp.exp(-jnp.abs(z))) + jnp.maximum(z, 0.0) - z * y) / z.size


def affine(x, W, b):
    return jnp.einsum("nk,km->nm", x, W) + b
