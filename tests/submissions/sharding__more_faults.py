"""Other faults, one per function, and two right answers written another way (controls)."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


@jax.jit
def shard_batch(images, labels):
    # control: right, on an Auto mesh from `Mesh(...)` (so with_sharding_constraint, which
    # steers the compiler inside jit), with the specs written out in full
    mesh = Mesh(np.array(jax.devices()), ("data",))
    constrain = jax.lax.with_sharding_constraint
    return (constrain(images, NamedSharding(mesh, P("data", None, None, None))),
            constrain(labels, NamedSharding(mesh, P(("data",)))))


@jax.jit
def data_parallel_linear(x, w, b):
    # control: right, with shard_map and replicated parameters
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    x = jax.device_put(x, NamedSharding(mesh, P("data")))
    w, b = jax.device_put((w, b), NamedSharding(mesh, P()))
    return jax.shard_map(lambda xb, w, b: xb @ w + b, mesh=mesh,
                         in_specs=(P("data"), P(), P()), out_specs=P("data"))(x, w, b)


@jax.jit
def global_standardize(x):
    # wrong: each device standardizes its rows with its own rows' statistics (no psum)
    mesh, rows = jax.make_mesh((jax.device_count(),), ("data",)), P("data", None)

    def local(xb):
        return (xb - xb.mean(axis=0)) / jnp.sqrt(xb.var(axis=0) + 1e-5)

    x = jax.device_put(x, NamedSharding(mesh, rows))
    return jax.shard_map(local, mesh=mesh, in_specs=rows, out_specs=rows)(x)


@jax.jit
def mlp_2d(x, w1, b1, w2, b2):
    # data parallel only: the "model" axis is left unused, so every device computes all the
    # hidden units of its rows (fails `jit`: twice the reference's FLOPs per device)
    mesh = jax.make_mesh((4, 2), ("data", "model"))
    x = jax.device_put(x, NamedSharding(mesh, P("data", None)))
    return jax.nn.relu(x @ w1 + b1) @ w2 + b2
