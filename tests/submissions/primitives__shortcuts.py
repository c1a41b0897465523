"""Shortcuts that fail exactly one check each of topic `primitives`, except `safe_norm`, whose
missing custom derivative only the advisory jaxpr facts see (`jit` keeps its points, with a note)."""

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir


def _impl(x, y, z):
    return x * y + z


def _abstract(x, y, z):
    return jax.core.ShapedArray(x.shape, x.dtype)


# A primitive with an implementation and an abstract evaluation, but no lowering.
_eager_only_p = Primitive("multiply_add")
_eager_only_p.def_impl(_impl)
_eager_only_p.def_abstract_eval(_abstract)

# A complete forward primitive for the other exercises; each adds the rule it is about.
_fma_p = Primitive("multiply_add")
_fma_p.def_impl(_impl)
_fma_p.def_abstract_eval(_abstract)
mlir.register_lowering(_fma_p, mlir.lower_fun(_impl, multiple_results=False))


def _fma(x, y, z):
    return _fma_p.bind(x, y, z)


def multiply_add(x, y, z):
    # eagerly right, but jax.jit cannot compile a primitive without a lowering
    return _eager_only_p.bind(x, y, z)


def poly_eval(coeffs, x):
    # a JVP rule written with the primitive, but no transpose rule: jax.grad cannot run it backwards
    def jvp(primals, tangents):
        a, b, c = primals
        ad_, bd, cd = (ad.instantiate_zeros(t) for t in tangents)
        return _fma(a, b, c), _fma(ad_, b, _fma(a, bd, cd))

    ad.primitive_jvps[_fma_p] = jvp
    p, _ = jax.lax.scan(lambda acc, c: (_fma(acc, x, c), None), jnp.zeros_like(x), coeffs)
    return p


def axpy(alpha, x, y):
    # a batching rule that loops over the batch in Python: right values, one bind per example
    def batch(args, dims):
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
        def example(a, d, i):
            return a if d is None else jnp.take(a, i, axis=d)
        return jnp.stack([_fma(*(example(a, d, i) for a, d in zip(args, dims))) for i in range(size)]), 0

    batching.primitive_batchers[_fma_p] = batch
    return _fma(jnp.broadcast_to(alpha, x.shape), x, y)


def safe_norm(x):
    # the "double where" trick: a finite gradient at 0, but no custom derivative (advice only)
    nonzero = jnp.any(x != 0)
    safe_x = jnp.where(nonzero, x, jnp.ones_like(x))
    return jnp.where(nonzero, jnp.sqrt(jnp.sum(safe_x * safe_x)), 0.0)
