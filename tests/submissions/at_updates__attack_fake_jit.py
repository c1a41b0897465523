"""Attack (forged structural facts): an object posing as a jitted function, running one program
and showing another.

`histogram` is an object with `lower` and `trace` attributes, so the harness takes it for the
student's own jit and uses it as it is. What it shows (its `lower`/`trace`, and what it
returns when traced) is a clean but slow jitted program: REPEAT scatter-adds. What runs when
it is called on concrete arrays (the `jit` check's calls, the timed calls) is a host callback
counting with NumPy, which the `jit` check forbids. With ATTACK = False (the honest twin) the
same two paths sit in a plain function: the grader jits it itself, and so runs and times
what it inspects, the clean program.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

ATTACK = True
REPEAT = 8


@functools.partial(jax.jit, static_argnums=1)
def _clean_but_slow(x, nbins):
    """REPEAT full scatter-adds; the optimisation barrier keeps XLA from hoisting or merging them."""
    def body(i, carry):
        h, xs = carry
        xs, h = jax.lax.optimization_barrier((xs, h))
        return jnp.zeros(nbins, jnp.int32).at[xs].add(1), xs

    h, _ = jax.lax.fori_loop(0, REPEAT, body, (jnp.zeros(nbins, jnp.int32), x))
    return h


def _host_bincount(x, nbins):
    return np.bincount(np.asarray(x), minlength=nbins).astype(np.int32)


@functools.partial(jax.jit, static_argnums=1)
def _with_callback(x, nbins):
    shape = jax.ShapeDtypeStruct((nbins,), jnp.int32)
    return jax.pure_callback(functools.partial(_host_bincount, nbins=nbins), shape, x)


def _two_faced(x, nbins):
    if isinstance(x, jax.core.Tracer):
        return _clean_but_slow(x, nbins)
    return _with_callback(x, nbins)


class PosingAsJit:
    def __call__(self, x, nbins):
        return _two_faced(x, nbins)

    def __getattr__(self, name):  # lower, trace, eval_shape, ...
        return getattr(_clean_but_slow, name)


histogram = PosingAsJit() if ATTACK else _two_faced
