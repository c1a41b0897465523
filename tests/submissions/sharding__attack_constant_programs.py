"""Attack (programs built for the inputs they are run on), against `sharding`: plain NumPy,
forged programs.

`shard_batch` returns its inputs as NumPy arrays: right values, laid out nowhere (one host
copy). At import the module finds the worker's `Harness` class in
sys.modules["jaxlings.worker.harness"] and replaces two of its handlers: `op_call` answers a
jitted call with NumPy, and `op_trace` answers with programs it builds itself from the values
it is handed: the outputs as constants, each constrained to the layout the task asks for (rows
split over every device). Where the request carries only shapes, it can only guess.
With ATTACK = False (the honest twin) nothing is replaced.
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

ATTACK = True
LOOP = False  # no requirement of shard_batch names an op


def shard_batch(images, labels):
    return np.asarray(images), np.asarray(labels)


# -- the forgery (the same in every *__attack_constant_programs module) -------------------------


def _place(out):
    """The forged program's outputs, rows split over every device (the task's layout)."""
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    return jax.device_put(out, NamedSharding(mesh, P("data")))


def _numpy_outputs(harness, req, args):
    """The module's NumPy function on `args` (under `vmap`: a Python loop over the batch)."""
    fn = harness.function(req["fn"])
    vmap = [p for name, p in req.get("transforms", ()) if name == "vmap"]
    args = [np.asarray(a) if hasattr(a, "shape") else a for a in args]
    if not vmap:
        return fn(*args)
    axes = vmap[0]["in_axes"]
    size = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = [fn(*[a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, axes)]) for b in range(size)]
    return jax.tree.map(lambda *leaves: np.stack(leaves), *outs)


def _zeros_like_specs(harness, specs):
    """Arguments of the specs' shapes, all zeros: the best guess without values."""
    def zero(x):
        if isinstance(x, jax.ShapeDtypeStruct):
            return np.zeros(x.shape, x.dtype)
        return x

    return tuple(jax.tree.map(zero, harness.described(specs)))


def _forge(harness, req, table):
    """One exported program that returns, for each argument set of `table`, the NumPy
    function's outputs on it (chosen by comparing its inputs with the set's), plus a loop."""
    program = sys.modules["jaxlings.worker.program"]
    static = tuple(req.get("static_argnums", ()))
    outs = [_numpy_outputs(harness, req, args) for args in table]
    keys = [[np.asarray(leaf) for i, a in enumerate(args) if i not in static for leaf in jax.tree.leaves(a)]
            for args in table]
    with_loop = LOOP and not any(name == "vmap" for name, _ in req.get("transforms", ()))

    def forged(*args):
        leaves = [leaf for i, a in enumerate(args) if i not in static for leaf in jax.tree.leaves(a)]
        result = jax.tree.map(jnp.asarray, outs[-1])
        for key, out in zip(keys[:-1], outs[:-1]):
            same = jnp.all(jnp.asarray([jnp.all(leaf == k) for leaf, k in zip(leaves, key)]))
            result = jax.tree.map(lambda o, r: jnp.where(same, jnp.asarray(o), r), out, result)
        if with_loop:
            zero = lax.fori_loop(0, 2, lambda i, v: v * 1.0, jnp.zeros((), jnp.float32))
            result = jax.tree.map(lambda r: r + zero.astype(r.dtype), result)
        return _place(result)

    example = table[0]
    return np.frombuffer(program.export(jax.jit(forged, static_argnums=static), example), np.uint8)


def _install():
    module = sys.modules.get("jaxlings.worker.harness")
    if module is None or not hasattr(module, "Harness"):
        return
    cls = module.Harness
    plain_call = cls.op_call

    def op_call(self, req):
        if req.get("jit") or req.get("transforms"):
            return {"out": self.export(_numpy_outputs(self, req, self.arguments(req["args"])))}
        return plain_call(self, req)

    def op_trace(self, req):
        if "args" in req:  # handed the values: programs for exactly those
            same_shape = [self.arguments(req[k]) for k in ("args", "args_again") if req.get(k) is not None]
            programs = {"first": _forge(self, req, same_shape)}
            if len(same_shape) > 1:
                programs["again"] = programs["first"]  # one program for both: no re-tracing
            if req.get("args_other") is not None:
                programs["other"] = _forge(self, req, [self.arguments(req["args_other"])])
        else:  # shapes only: guess
            programs = {name: _forge(self, req, [_zeros_like_specs(self, specs)]) for name, specs in req["specs"].items()}
        return {"programs": programs, "advisory": {}}

    cls.op_call, cls.op_trace = op_call, op_trace


if ATTACK:
    _install()
