"""Each function returns the right values but fails exactly one check."""

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def _mesh():
    return jax.make_mesh((jax.device_count(),), ("data",))


@jax.jit
def shard_batch(images, labels):
    # right values, but replicated: every device holds the whole batch (fails `sharding`)
    return jax.device_put((images, labels), NamedSharding(_mesh(), P()))


@jax.jit
def data_parallel_linear(x, w, b):
    # gathers the batch back onto every device before the matmul: each device then does the
    # whole batch's work (fails `jit`, per-device FLOPs), the output is sharded as asked
    mesh = _mesh()
    x = jax.device_put(x, NamedSharding(mesh, P("data", None)))
    whole = jax.device_put(x, NamedSharding(mesh, P()))
    return jax.device_put(whole @ w + b, NamedSharding(mesh, P("data", None)))


@jax.jit
def global_standardize(x):
    # all-gathers the batch inside shard_map to compute the statistics on every device
    # (fails `jit`: an all-gather where the reference has two all-reduces)
    mesh, rows = _mesh(), P("data", None)

    def local(xb):
        whole = jax.lax.all_gather(xb, "data", tiled=True)
        return (xb - whole.mean(axis=0)) / jnp.sqrt(whole.var(axis=0) + 1e-5)

    x = jax.device_put(x, NamedSharding(mesh, rows))
    return jax.shard_map(local, mesh=mesh, in_specs=rows, out_specs=rows)(x)


@jax.jit
def mlp_2d(x, w1, b1, w2, b2):
    # gathers the hidden activations over "model" before the second matmul
    # (fails `jit`: an all-gather where the reference has one all-reduce)
    mesh = jax.make_mesh((4, 2), ("data", "model"))

    def put(a, *spec):
        return jax.device_put(a, NamedSharding(mesh, P(*spec)))

    hidden = jax.nn.relu(put(x, "data", None) @ put(w1, None, "model") + put(b1, "model"))
    hidden = jax.reshard(hidden, NamedSharding(mesh, P("data", None)))
    return hidden @ put(w2) + put(b2)
