"""Attack (work outside the timed window), on a jitted speed check: `histogram` poses as a
jitted function (it has `lower` and `trace`, so the harness uses it as it is) and, called on
concrete arrays, returns a lazy object that runs the jitted REPEAT-fold slow histogram only
when the worker converts it to an array, after the timed call. Traced, it is the slow jitted
function itself, so every structural fact is the honest twin's.
With ATTACK = False (the honest twin) `histogram` is that slow jitted function.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

ATTACK = True
REPEAT = 8


@functools.partial(jax.jit, static_argnums=1)
def _slow_histogram(x, nbins):
    """REPEAT full scatter-adds; the optimisation barrier keeps XLA from hoisting or merging them."""
    def body(i, carry):
        h, xs = carry
        xs, h = jax.lax.optimization_barrier((xs, h))
        return jnp.zeros(nbins, jnp.int32).at[xs].add(1), xs

    h, _ = jax.lax.fori_loop(0, REPEAT, body, (jnp.zeros(nbins, jnp.int32), x))
    return h


class Lazy:
    """Looks like an int32 array; computes itself on conversion."""

    def __init__(self, x, nbins):
        self._args, self._value = (x, nbins), None
        self.shape, self.dtype, self.ndim = (nbins,), np.dtype(np.int32), 1

    def _get(self):
        if self._value is None:
            self._value = np.asarray(_slow_histogram(*self._args))
        return self._value

    def __array__(self, dtype=None, copy=None):
        value = self._get()
        return value if dtype is None else value.astype(dtype)

    def __jax_array__(self):
        return jnp.asarray(self._get())


class PosingAsJit:
    """`lower` and `trace` of the real jitted function; a lazy object when called concretely."""

    def __call__(self, x, nbins):
        if isinstance(x, jax.core.Tracer):
            return _slow_histogram(x, nbins)
        return Lazy(x, nbins)

    def __getattr__(self, name):  # lower, trace, eval_shape, ...
        return getattr(_slow_histogram, name)


histogram = PosingAsJit() if ATTACK else _slow_histogram
