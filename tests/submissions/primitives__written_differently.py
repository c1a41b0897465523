"""Right answers written differently from the reference: every check passes.

The library way: every rule registered once, at import. A Python loop for Horner's rule, a JVP
rule in plain jax.numpy (so that no transpose rule is needed), a batching rule with
`batching.bdim_at_front`, and `jax.custom_vjp` for the norm.
"""

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

multiply_add_p = Primitive("multiply_add")


def _impl(x, y, z):
    return x * y + z


def _jvp(primals, tangents):
    x, y, z = primals
    xd, yd, zd = (ad.instantiate_zeros(t) for t in tangents)
    return multiply_add_p.bind(x, y, z), xd * y + x * yd + zd


def _batch(args, dims):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    return multiply_add_p.bind(*(batching.bdim_at_front(a, d, size) for a, d in zip(args, dims))), 0


multiply_add_p.def_impl(_impl)
multiply_add_p.def_abstract_eval(lambda x, y, z: jax.core.ShapedArray(x.shape, x.dtype))
mlir.register_lowering(multiply_add_p, mlir.lower_fun(_impl, multiple_results=False))
ad.primitive_jvps[multiply_add_p] = _jvp
batching.primitive_batchers[multiply_add_p] = _batch


def multiply_add(x, y, z):
    return multiply_add_p.bind(x, y, z)


def poly_eval(coeffs, x):
    acc = coeffs[0]
    for i in range(1, coeffs.shape[0]):
        acc = multiply_add(acc, x, coeffs[i])
    return acc


def axpy(alpha, x, y):
    return multiply_add(jnp.full_like(x, alpha), x, y)


@jax.custom_vjp
def safe_norm(x):
    return jnp.linalg.norm(x)


def _norm_fwd(x):
    n = safe_norm(x)
    return n, (x, n)


def _norm_bwd(res, ct):
    x, n = res
    return (ct * x / jnp.where(n > 0, n, 1.0),)


safe_norm.defvjp(_norm_fwd, _norm_bwd)
