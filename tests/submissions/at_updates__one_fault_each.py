"""Each function fails exactly one check (or is right, as a control)."""

import jax
import jax.numpy as jnp
import numpy as np


def scatter_ops(x, idx, vals):
    # wrong values: `set` everywhere
    s = x.at[idx].set(vals)
    return s, s, s, s


def histogram(x, nbins):
    # right, jit-able, uses scatter-add, but a pass over all the values for each bin: slow
    def count(b, h):
        return h.at[b].add(jnp.sum(x == b, dtype=jnp.int32))

    return jax.lax.fori_loop(0, nbins, count, jnp.zeros(nbins, jnp.int32))


def mask_fill(x, threshold, fill):
    # right values, but NumPy through a host callback inside "jitted" code
    def on_host(x, threshold, fill):
        return np.where(x > threshold, np.float32(fill), x).astype(np.float32)

    return jax.pure_callback(on_host, jax.ShapeDtypeStruct(x.shape, x.dtype), x, threshold, fill)


def lookup_and_clamp(x, idx, vals, fill):
    # control: right
    return x.at[idx].get(mode="fill", fill_value=fill), x.at[idx].add(vals, mode="clip")
