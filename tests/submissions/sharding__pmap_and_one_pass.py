"""The seed tutorial's habits: pmap, and the one-pass variance (one fault per function)."""

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


@jax.jit
def shard_batch(images, labels):
    # right values and layout, through pmap (keeps the points: pmap is jit of shard_map now, so only
    # the advisory jaxpr facts tell it apart, and `jit` adds a note against it)
    n = jax.device_count()

    def split(a):
        return a.reshape(n, -1, *a.shape[1:])

    imgs, labs = jax.pmap(lambda a, b: (a, b), axis_name="data")(split(images), split(labels))
    return imgs.reshape(images.shape), labs.reshape(labels.shape)


@jax.jit
def global_standardize(x):
    # one psum for both sums, variance as mean(x**2) - mean**2: right for features near zero,
    # digits lost for features near 100 (fails `correct` on that case)
    mesh, rows = jax.make_mesh((jax.device_count(),), ("data",)), P("data", None)
    n = x.shape[0]

    def local(xb):
        total, squares = jax.lax.psum((jnp.sum(xb, axis=0), jnp.sum(xb * xb, axis=0)), "data")
        mean = total / n
        return (xb - mean) / jnp.sqrt(squares / n - mean * mean + 1e-5)

    x = jax.device_put(x, NamedSharding(mesh, rows))
    return jax.shard_map(local, mesh=mesh, in_specs=rows, out_specs=rows)(x)
