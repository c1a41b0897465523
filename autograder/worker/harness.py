"""The worker: the process that imports ONE topic module and runs its functions on request.

The grader starts one worker for the submission (untrusted, possibly sandboxed) and one for
the reference solution (trusted); they never share a process. A worker answers requests on a
private pair of pipes, never on stdout, so nothing a student prints can pose as an answer.
It returns plain data (arrays, counts, text); all judging happens in the grader.

JAX is imported and the harness's references to `jax.jit`, `jax.make_jaxpr`, ... are taken
before the student's module runs, so a module that rebinds those names at import fools only
itself.

Run as: python -m autograder.worker MODULE_PATH MODULE_NAME   (fds in JAXLINGS_WORKER_FDS)
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import sys
import time
import traceback
from collections import Counter
from typing import Any, Callable, Iterator

from autograder.worker import wire
from autograder.worker.wire import Key

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
# Collective operations as they appear in compiled HLO text (` all-gather(`, `all-reduce-start(`, ...).
COLLECTIVES = r"\b(all-gather|all-reduce|reduce-scatter|all-to-all|collective-permute)(?:-start)?\("
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
PRINTED_LIMIT = 4000  # characters of one call's stdout kept by `stream_printed`


class Harness:
    """Trusted references, taken before any student code runs, and the request handlers."""

    def __init__(self, module_path: str, module_name: str) -> None:
        import jax
        import jax.numpy as jnp
        import numpy as np

        self.np, self.jnp = np, jnp
        self.jit, self.make_jaxpr = jax.jit, jax.make_jaxpr
        self.transforms = {"grad": jax.grad, "vmap": jax.vmap, "value_and_grad": jax.value_and_grad}
        self.clear_caches, self.device_put = jax.clear_caches, jax.device_put
        self.block = jax.block_until_ready
        self.key, self.key_data, self.key_impl = jax.random.key, jax.random.key_data, jax.random.key_impl
        self.key_reuse = jax.debug_key_reuse
        self.flatten, self.is_key = jax.tree.flatten, lambda x: jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)
        self.asarray = np.asarray
        self.counts: Counter[str] = Counter()
        jax.monitoring.register_event_duration_secs_listener(self._on_event)
        self.platform = {
            "backend": jax.default_backend(),
            "device_kind": jax.devices()[0].device_kind,
            "device_count": jax.device_count(),
            "jax_version": jax.__version__,
            "python": sys.version.split()[0],
        }
        self.module_path, self.module_name = module_path, module_name
        self.module: Any = None
        self.staged: tuple[Callable[..., Any], list[tuple[Any, ...]]] | None = None
        self.last_out: Any = None

    def _on_event(self, event: str, duration: float, **_: Any) -> None:
        if event in (COMPILE_EVENT, TRACE_EVENT):
            self.counts[event] += 1

    # -- loading and argument handling ---------------------------------------------------

    def load(self) -> dict[str, Any]:
        """Import the topic module from its file; report the functions it defines."""
        spec = importlib.util.spec_from_file_location(self.module_name, self.module_path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[self.module_name] = module
        spec.loader.exec_module(module)
        self.module = module
        return {"functions": sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))}

    def function(self, name: str) -> Callable[..., Any]:
        fn = getattr(self.module, name, None)
        if fn is None or not callable(fn):
            raise LookupError(f"the module defines no function `{name}`")
        return fn

    def arguments(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """Case arguments as the student receives them: jax.Arrays (nested ones too), typed
        keys, Python scalars. `device_put` rather than `jnp.asarray`, which compiles a
        conversion for every new shape (jax 0.10)."""
        def conv(x: Any) -> Any:
            if isinstance(x, self.np.ndarray):
                return self.device_put(x)
            if isinstance(x, Key):
                return self.key(x.seed)
            if isinstance(x, (list, tuple)):
                return type(x)(conv(v) for v in x)
            if isinstance(x, dict):
                return {k: conv(v) for k, v in x.items()}
            return x

        return tuple(conv(a) for a in args)

    def transformed(self, req: dict[str, Any]) -> Callable[..., Any]:
        """The function with the request's transforms applied, innermost first.

        `transforms` is a list of [name, params]: ["grad", {"argnums": [0]}],
        ["vmap", {"in_axes": [0, null]}], ["value_and_grad", {...}].
        """
        fn = self.function(req["fn"])
        for name, params in req.get("transforms", ()):
            kwargs = {k: _tuples(v) for k, v in params.items()}
            fn = self.transforms[name](fn, **kwargs)
        return fn

    def callable_for(self, req: dict[str, Any]) -> Callable[..., Any]:
        """The (transformed) function as written, or jitted with the declared static arguments.

        A function the student jitted themselves is used as it is: their jit is the one under
        test (wrapping it again would hide their `static_argnums` choices).
        """
        fn = self.transformed(req)
        if not req.get("jit") or _is_jitted(fn):
            return fn
        return self.jit(fn, static_argnums=tuple(req.get("static_argnums", ())))

    def export(self, out: Any) -> dict[str, Any]:
        """An output pytree as data: its treedef string and its leaves as NumPy arrays.

        A quantum operator (a NetKet operator: it has a `hilbert` and `to_sparse()`) is one leaf,
        sent as its matrix in its Hilbert space's basis (`to_sparse().toarray()`), so that the
        grader compares what operators mean, not how they are stored.
        """
        leaves, treedef = self.flatten(out, is_leaf=_is_operator)
        exported = []
        for leaf in leaves:
            if _is_operator(leaf):
                leaf = leaf.to_sparse().toarray()
            if hasattr(leaf, "dtype") and self.is_key(leaf):
                exported.append({"kind": "key", "impl": str(self.key_impl(leaf)), "data": self.asarray(self.key_data(leaf))})
                continue
            arr = self.asarray(leaf)
            if arr.dtype.kind not in "biufc" and type(arr.dtype).__module__ != "ml_dtypes":
                raise TypeError(f"an output leaf of type {type(leaf).__name__} is not a numeric array")
            exported.append({"kind": "array", "data": arr})
        return {"treedef": str(treedef), "leaves": exported}

    # -- requests ------------------------------------------------------------------------

    def counted(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, list[int]]:
        """Call `fn(*args)` to completion; its output and [compilations, traces] it caused."""
        before = dict(self.counts)
        out = self.block(fn(*args))
        return out, [self.counts[ev] - before.get(ev, 0) for ev in (COMPILE_EVENT, TRACE_EVENT)]

    def op_call(self, req: dict[str, Any]) -> dict[str, Any]:
        """Call a function once (as written, or jitted) and return its output.

        With `shardings`, also describe how each output leaf is laid out over the devices.
        """
        fn, args = self.callable_for(req), self.arguments(req["args"])
        if req.get("key_reuse"):
            with self.key_reuse(True):
                out = self.block(fn(*args))
        else:
            out = self.block(fn(*args))
        reply = {"out": self.export(out)}
        if req.get("shardings"):
            reply["shardings"] = [describe_sharding(leaf) for leaf in self.flatten(out)[0]]
        return reply

    def op_trace(self, req: dict[str, Any]) -> dict[str, Any]:
        """Jit a function, call it on two same-shaped cases, and count what happened.

        Facts: jaxpr primitives and equation count (also at `args_other`, another size, when
        given), compile and trace counts of each call, custom-call targets and line count of
        the compiled HLO, XLA's cost analysis, and the time a cold trace+lower+compile takes.
        """
        fn = self.transformed(req)
        static = tuple(req.get("static_argnums", ()))
        jitted = fn if _is_jitted(fn) else self.jit(fn, static_argnums=static)
        first, again = self.arguments(req["args"]), self.arguments(req["args_again"])
        _, (compiles_first, traces_first) = self.counted(jitted, first)
        _, (compiles_again, traces_again) = self.counted(jitted, again)
        jaxpr = self.make_jaxpr(fn, static_argnums=static)(*first).jaxpr
        prims, n_eqns = count_primitives(jaxpr)
        self.clear_caches()  # so that the time below is a cold trace + lower + compile
        t0 = time.perf_counter()
        compiled = jitted.lower(*first).compile()
        compile_seconds = time.perf_counter() - t0
        hlo = compiled.as_text() or ""
        facts = {
            "primitives": dict(prims),
            "n_eqns": n_eqns,
            "pmap_calls": count_pmap_calls(jaxpr),
            "custom_calls": sorted(set(re.findall(r'custom_call_target="([^"]+)"', hlo))),
            "collectives": dict(Counter(re.findall(COLLECTIVES, hlo))),
            "hlo_lines": hlo.count("\n"),
            "compile_seconds": compile_seconds,
            **_costs(compiled),
            "compiles_first": compiles_first,
            "traces_first": traces_first,
            "compiles_again": compiles_again,
            "traces_again": traces_again,
        }
        if req.get("args_other") is not None:
            other = self.arguments(req["args_other"])
            facts["n_eqns_other"] = count_primitives(self.make_jaxpr(fn, static_argnums=static)(*other).jaxpr)[1]
        return {"facts": facts}

    def op_stream(self, req: dict[str, Any]) -> dict[str, Any]:
        """Call a function on a sequence of cases, counting compilations and traces per call.

        With `stage`, every call's arguments are put on the device before the first call, so
        that the counts are the function's alone.
        """
        fn = self.callable_for(req)
        staged = [self.block(self.arguments(args)) for args in req["cases"]] if req.get("stage") else None
        counts, outs = [], []
        for i, args in enumerate(req["cases"]):
            out, count = self.counted(fn, staged[i] if staged is not None else self.arguments(args))
            counts.append(count)
            outs.append(self.export(out))
        return {"counts": counts, "outs": outs}

    def op_stream_printed(self, req: dict[str, Any]) -> dict[str, Any]:
        """Like `stream` with staged arguments, from cold caches, keeping what each call prints.

        A Python `print` in a jitted function runs while JAX traces it. With JAX's caches cleared
        first (a function the student jitted included), the calls that print are the calls that
        trace. Each call's stdout is captured apart (the first PRINTED_LIMIT characters).
        """
        fn = self.callable_for(req)
        staged = [self.block(self.arguments(args)) for args in req["cases"]]
        self.clear_caches()
        counts, outs, printed = [], [], []
        for args in staged:
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                out, count = self.counted(fn, args)
            counts.append(count)
            printed.append(buffer.getvalue()[:PRINTED_LIMIT])
            outs.append(self.export(out))
        return {"counts": counts, "outs": outs, "printed": printed}

    def op_stage(self, req: dict[str, Any]) -> dict[str, Any]:
        """Put a timing workload (one or more calls' arguments) on the device, ready for `go`."""
        calls = [self.block(self.arguments(args)) for args in req["cases"]]
        self.staged = (self.callable_for(req), calls)
        return {}

    def op_go(self, req: dict[str, Any]) -> dict[str, Any]:
        """Run the staged calls to completion; the grader's clock times this round trip."""
        fn, calls = self.staged
        self.staged = None
        self.last_out = [self.block(fn(*args)) for args in calls]
        return {}

    def op_fetch(self, req: dict[str, Any]) -> dict[str, Any]:
        """The outputs of the last timed calls, for the grader to verify."""
        return {"outs": [self.export(out) for out in self.last_out]}


def describe_sharding(leaf: Any) -> dict[str, Any]:
    """How an output array is laid out: its mesh axes and PartitionSpec, or replication."""
    sharding = getattr(leaf, "sharding", None)
    if sharding is None:
        return {"kind": "host"}
    spec = getattr(sharding, "spec", None)
    mesh = getattr(sharding, "mesh", None)
    return {
        "kind": type(sharding).__name__,
        "spec": _spec_per_dimension(spec, getattr(leaf, "ndim", 0)) if spec is not None else None,
        "mesh": {str(k): int(v) for k, v in mesh.shape.items()} if mesh is not None else None,
        "replicated": bool(sharding.is_fully_replicated),
        "devices": len(sharding.device_set),
    }


def _spec_per_dimension(spec: Any, ndim: int) -> str:
    """A PartitionSpec with one entry per array dimension, so that equal layouts read equal:
    `P('data')` and `P('data', None)` for a matrix, or `P(('data',))` and `P('data')`."""
    entries = [e[0] if isinstance(e, tuple) and len(e) == 1 else e for e in tuple(spec)]
    return str(tuple(entries + [None] * (ndim - len(entries))))


def _is_operator(x: Any) -> bool:
    """Whether `x` is a quantum operator on a Hilbert space (NetKet's have both attributes)."""
    return hasattr(x, "hilbert") and callable(getattr(x, "to_sparse", None))


def _tuples(value: Any) -> Any:
    """JSON lists back to the tuples that JAX's transform parameters expect."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _costs(compiled: Any) -> dict[str, float]:
    """FLOPs and bytes accessed from XLA's cost analysis (absent where a backend has none)."""
    try:
        cost = compiled.cost_analysis()
    except Exception:  # noqa: BLE001 - not every backend implements it
        return {}
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else {}
    return {k: float(cost[src]) for k, src in (("flops", "flops"), ("bytes_accessed", "bytes accessed")) if src in (cost or {})}


def _is_jitted(fn: Any) -> bool:
    """Whether `fn` is already a `jax.jit`-wrapped function."""
    return callable(getattr(fn, "lower", None)) and hasattr(fn, "trace")


def count_primitives(jaxpr: Any) -> tuple[Counter[str], int]:
    """Count the primitives of a jaxpr and of every jaxpr nested in its equations' params."""
    counts = Counter(eqn.primitive.name for eqn in all_equations(jaxpr))
    return counts, sum(counts.values())


def all_equations(jaxpr: Any) -> Iterator[Any]:
    """Every equation of a jaxpr and of every jaxpr nested in its equations' params."""
    stack = [jaxpr]
    while stack:
        for eqn in stack.pop().eqns:
            yield eqn
            stack.extend(_sub_jaxprs(eqn.params.values()))


PMAP_MODULE = "jax/_src/pmap.py"
PMAP_PRIMITIVES = ("xla_pmap",)  # the primitive of JAX versions before pmap became jit + shard_map
PMAP_CARRIERS = ("jit", "pjit", "shard_map")


def count_pmap_calls(jaxpr: Any) -> int:
    """Equations that `jax.pmap` put in a jaxpr (nested jaxprs included).

    Older JAX binds a `xla_pmap` primitive. Since pmap was reimplemented as `jit` of
    `shard_map` (jax 0.10 has no pmap primitive left), the only trace it leaves is that the
    equation was bound from inside JAX's pmap module, which the equation's traceback records.
    """
    return sum(
        1 for eqn in all_equations(jaxpr)
        if eqn.primitive.name in PMAP_PRIMITIVES or (eqn.primitive.name in PMAP_CARRIERS and _bound_in(eqn, PMAP_MODULE))
    )


def _bound_in(eqn: Any, module_suffix: str) -> bool:
    """Whether the traceback recorded when `eqn` was bound passes through `module_suffix`."""
    traceback = getattr(eqn.source_info, "traceback", None)
    frames = getattr(traceback, "frames", None) or ()
    return any(f.file_name.replace(os.sep, "/").endswith(module_suffix) for f in frames)


def _sub_jaxprs(values: Any) -> list[Any]:
    found = []
    for v in values:
        if isinstance(v, (tuple, list)):
            found.extend(_sub_jaxprs(v))
        elif hasattr(v, "eqns") and hasattr(v, "invars"):
            found.append(v)
        elif hasattr(v, "jaxpr") and hasattr(getattr(v, "jaxpr"), "eqns"):
            found.append(v.jaxpr)
    return found


def describe(exc: BaseException, module_path: str) -> dict[str, str]:
    """An exception as the student should read it: type, message, and their line."""
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename) == os.path.abspath(module_path):
            where = f"line {frame.lineno}: {(frame.line or '').strip()}"
    message = str(exc).strip().splitlines()
    return {"type": type(exc).__name__, "message": "\n".join(message[:6])[:800], "where": where}


def serve(rfd: int, wfd: int, harness: Harness) -> None:
    """Answer requests until told to stop or the grader goes away."""
    while True:
        try:
            req = wire.read_frame(rfd)
        except wire.Closed:
            return
        if req["op"] == "bye":
            return
        handler = getattr(harness, f"op_{req['op']}")
        try:
            reply = {"ok": True, **handler(req)}
        except BaseException as exc:  # noqa: BLE001 - student code may raise anything, SystemExit too
            reply = {"ok": False, "error": describe(exc, harness.module_path)}
        wire.write_frame(wfd, reply)


def main() -> None:
    module_path, module_name = sys.argv[1], sys.argv[2]
    rfd, wfd = (int(x) for x in os.environ.pop("JAXLINGS_WORKER_FDS").split(","))
    harness = Harness(module_path, module_name)
    wire.write_frame(wfd, {"ok": True, "platform": harness.platform})
    try:
        loaded = {"ok": True, **harness.load()}
    except BaseException as exc:  # noqa: BLE001
        loaded = {"ok": False, "error": describe(exc, module_path)}
    wire.write_frame(wfd, loaded)
    if loaded["ok"]:
        serve(rfd, wfd, harness)


if __name__ == "__main__":
    main()
