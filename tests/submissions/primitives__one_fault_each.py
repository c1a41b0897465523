"""Each function fails exactly one check of topic `primitives`, except `multiply_add`, whose
fault only the advisory jaxpr facts see (`jit` keeps its points and adds a note).

`_fma` is a complete, correct primitive (all rules registered here at import), which the
graded functions use unless their fault is about a rule: then they register the faulty rule.
"""

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, mlir

_fma_p = Primitive("multiply_add")


def _impl(x, y, z):
    return x * y + z


_fma_p.def_impl(_impl)
_fma_p.def_abstract_eval(lambda x, y, z: jax.core.ShapedArray(x.shape, x.dtype))
mlir.register_lowering(_fma_p, mlir.lower_fun(_impl, multiple_results=False))


def _fma(x, y, z):
    return _fma_p.bind(x, y, z)


def _jvp(primals, tangents):
    x, y, z = primals
    xd, yd, zd = (ad.instantiate_zeros(t) for t in tangents)
    return _fma(x, y, z), _fma(xd, y, _fma(x, yd, zd))


ad.primitive_jvps[_fma_p] = _jvp


def multiply_add(x, y, z):
    # right values, eagerly and under jit, but plain jax.numpy: no `multiply_add` in the jaxpr (advice only:
    # the compiled program is the primitive's own)
    return x * y + z


def poly_eval(coeffs, x):
    # right values and the primitive, but a wrong transpose rule: the cotangent of x (or y)
    # forgets to multiply by the other, known factor
    def transpose(ct, a, b, c):
        ct = ad.instantiate_zeros(ct)
        return (ct if ad.is_undefined_primal(a) else None,
                ct if ad.is_undefined_primal(b) else None,
                ct if ad.is_undefined_primal(c) else None)

    ad.primitive_transposes[_fma_p] = transpose
    acc = jnp.zeros_like(x)
    for i in range(coeffs.shape[0]):
        acc = _fma(acc, x, coeffs[i])
    return acc


def axpy(alpha, x, y):
    # right values and the primitive, but no batching rule: jax.vmap cannot batch it
    return _fma(jnp.broadcast_to(alpha, x.shape), x, y)


@jax.custom_jvp
def _norm(x):
    return jnp.sqrt(jnp.sum(x * x))


@_norm.defjvp
def _norm_jvp(primals, tangents):
    # the chain rule's formula as the custom rule: 0 / 0 = NaN at x = 0
    (x,), (t,) = primals, tangents
    n = _norm(x)
    return n, jnp.vdot(x, t) / n


def safe_norm(x):
    return _norm(x)
