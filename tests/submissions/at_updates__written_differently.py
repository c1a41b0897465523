# crafted: the reference, with the definitions below in place of its own
"""Right answers written differently from the reference: all must pass, on the CPU and where
the speed rounds run on an accelerator (their outputs there are compared with the CPU's)."""


def histogram(x, nbins):
    return jnp.bincount(x, length=nbins).astype(jnp.int32)
