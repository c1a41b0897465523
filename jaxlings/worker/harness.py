"""The worker: the process that imports ONE topic module and runs its functions on request.

The grader starts one worker for the submission (untrusted, possibly sandboxed) and one for
the reference solution (trusted); they never share a process. A worker answers requests on a
private pair of pipes, never on stdout. It returns plain data (arrays, counts, text, exported
programs); all judging happens in the grader.

Nothing a student's worker says is taken on trust (docs/grading.md, "What is trusted"): its
outputs are compared with the reference's in the grader, its times are the grader's clock over
a window that covers all the work (`op_timed`: inputs in, materialised outputs out; a
stream's `op_step` likewise, each call's arguments arriving with it, none before), and its
structure is an exported program (`program.export`) that a TRUSTED worker analyses and runs
(`op_analyse`: an empty module's worker, never this one), so that the facts describe a program
shown, by data, to compute the function. `op_trace` is handed argument specs only (shapes,
dtypes, static values: `wire.Spec`), never a value: the samples its programs are run and
verified on are drawn for that purpose and reach this process, if ever, only after its programs
are in, so a module that patches `op_trace` (this harness is in its own process) can only
export programs for inputs it does not know; one made of constants, or of the values of some
earlier call, fails on them. What the student's process reports about itself (jaxpr
primitives, compilation counts, key reuse) is advisory.

JAX is imported and the harness's references to `jax.jit`, `jax.make_jaxpr`, ... are taken
before the student's module runs, so a module that rebinds those names fools only itself; a
module that patches JAX's internals can change what its own process reports, which is why
none of that decides points.

Run as: python -m jaxlings.worker MODULE_PATH MODULE_NAME   (fds in JAXLINGS_WORKER_FDS)
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import linecache
import os
import re
import sys
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, get_args

from jaxlings.worker import commit, jaxpr, program, shm, wire
from jaxlings.worker.messages import (
    AnalyseRequest,
    CallRequest,
    FetchRequest,
    FunctionRequest,
    Generate,
    InputsRequest,
    ModuleRequest,
    Op,
    Request,
    RoundRequest,
    StepRequest,
    TraceRequest,
)
from jaxlings.worker.wire import Generated, Key, Spec

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"
OPS = frozenset(get_args(Op)) - {"load", "bye"}
"""The requests `serve` answers with a handler (`Harness.op_<op>`): `load` comes first, by itself,
and `bye` ends the process."""


class PersistentCache:
    """JAX's persistent compilation cache, on for the ops the grader allows and off for the
    others (see `jaxlings.grading.compile_cache`: timed ops always compile). The grader configures it
    through the environment (JAX's variables, and the allowed ops in JAXLINGS_CACHED_OPS);
    switching means JAX's config flag and a reset of its cache module, which would otherwise
    keep its first decision for the process's lifetime."""

    def __init__(self, jax: Any) -> None:
        from jax._src import compilation_cache

        self.update, self.reset = jax.config.update, compilation_cache.reset_cache
        self.configured = bool(os.environ.get("JAX_COMPILATION_CACHE_DIR"))
        self.ops = (
            frozenset(filter(None, os.environ.pop("JAXLINGS_CACHED_OPS", "").split(",")))
            if self.configured
            else frozenset()
        )
        self.on = self.configured
        # where the grader's own programs go, when not with the rest (`compile_cache.Policy.grader`)
        self.grader_dir = os.environ.pop("JAXLINGS_GRADER_CACHE_DIR", "") if self.configured else ""

    def for_op(self, op: str) -> None:
        """Switch the cache on or off for one request of `op`."""
        self._switch(op in self.ops)

    @contextlib.contextmanager
    def for_grader(self) -> Iterator[None]:
        """On (where the worker has a cache at all), whatever the op, while the grader's own
        programs compile: a round's generator and the outputs' digest, the same programs in
        every run, whose compilations are no fact of any verdict (on a TPU, 2-10 s each, most of
        a speed check's time: benchmarks/results/2026-12-06-tpu-v5e-grading-4.md); in the
        grader's directory for them where the worker has one (the reference's on a device, for
        the student's there to read: `compile_cache.grader_device`)."""
        was = self.on
        if not self.grader_dir:
            self._switch(self.configured)
            try:
                yield
            finally:
                self._switch(was)
            return
        mine = os.environ["JAX_COMPILATION_CACHE_DIR"]
        self.update("jax_compilation_cache_dir", self.grader_dir)
        self._switch(True, force=True)
        try:
            yield
        finally:
            self.update("jax_compilation_cache_dir", mine)
            self._switch(was, force=True)

    def _switch(self, wanted: bool, force: bool = False) -> None:
        """The cache on or off; `force`: its directory changed, so JAX must open it afresh."""
        if wanted != self.on or force:
            self.update("jax_enable_compilation_cache", wanted)
            self.reset()
            self.on = wanted


def first_level(backend: str) -> Callable[..., Any] | None:
    """The digest's first level on a worker of `backend`: the Pallas kernel on a TPU where the
    grader turned it on (`commit.KERNEL_ENV` 1 or 2), else None (XLA's loop, `commit.compress`)."""
    if backend != "tpu" or os.environ.get(commit.KERNEL_ENV) not in ("1", "2"):
        return None
    from jaxlings.worker import commit_kernel

    return commit_kernel.first_level


def folding(backend: str) -> Callable[..., Any] | None:
    """The digest's folding stages on a worker of `backend`: the Pallas kernel on a TPU where the
    grader asked for it (`commit.KERNEL_ENV` 2), else None (XLA's scan, `commit._fold`)."""
    if backend != "tpu" or os.environ.get(commit.KERNEL_ENV) != "2":
        return None
    from jaxlings.worker import commit_kernel

    return commit_kernel.fold


class OutputRefused(TypeError):
    """An output leaf that is not plain data (see `Harness.export`)."""


class Harness:
    """Trusted references, taken before any student code runs, and the request handlers."""

    def __init__(self, module_path: str, module_name: str) -> None:
        import jax
        import jax.numpy as jnp
        import numpy as np

        self.np, self.jnp = np, jnp
        self.jit, self.make_jaxpr = jax.jit, jax.make_jaxpr
        self.shape_dtype, self.typeof = jax.ShapeDtypeStruct, jax.typeof
        self.jit_type = type(jax.jit(lambda x: x))
        self.transforms: dict[str, Callable[..., Any]] = {
            "grad": jax.grad,
            "vmap": jax.vmap,
            "value_and_grad": jax.value_and_grad,
        }
        self.clear_caches, self.device_put = jax.clear_caches, jax.device_put
        self.block = jax.block_until_ready
        self.key, self.key_data, self.key_impl = jax.random.key, jax.random.key_data, jax.random.key_impl
        self.key_reuse = jax.debug_key_reuse
        self.flatten = jax.tree.flatten
        self.flatten_with_path, self.keystr = jax.tree_util.tree_flatten_with_path, jax.tree_util.keystr
        self.is_key = lambda x: jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)
        self.asarray = np.asarray
        # Output leaves are accepted by exact type: no subclass, no object that converts itself.
        self.array_types = (type(jnp.zeros(())), type(jax.random.key(0)), np.ndarray)
        self.scalar_types = frozenset({bool, int, float, complex} | {np.dtype(c).type for c in np.typecodes["All"]})
        self.counts: Counter[str] = Counter()
        self.compile_seconds = 0.0
        jax.monitoring.register_event_duration_secs_listener(self._on_event)
        jax.monitoring.register_event_listener(self._on_hit)
        self.cache = PersistentCache(jax)
        self.platform = {
            "backend": jax.default_backend(),
            "device_kind": jax.devices()[0].device_kind,
            "device_count": jax.device_count(),
            "jax_version": jax.__version__,
            "python": sys.version.split()[0],
        }
        self.module_path, self.module_name = module_path, module_name
        self.module: Any = None
        # `op_module`'s modules: (path, name) -> (the module, its import's reply)
        self.imported: dict[tuple[str, str], tuple[Any, dict[str, Any]]] = {}
        self.prepared: Callable[..., Any] | None = None
        self.stdout = sys.stdout
        self.wrap_key = lambda data: jax.random.wrap_key_data(data, impl="threefry2x32")
        self.deserialize = jax.export.deserialize
        self.array_type = jax.Array
        first, fold = first_level(self.platform["backend"]), folding(self.platform["backend"])
        self.committer = jax.jit(lambda leaves, salt: commit.digest(leaves, salt, jnp, first, fold))
        self.committers: dict[tuple[Any, ...], Callable[..., Any]] = {}  # the digest compiled, by its leaves' shapes
        self.programs: dict[bytes, Callable[..., Any]] = {}  # generated workloads' programs, by digest
        self.last: list[Any] = []  # the last committed round's outputs
        self.kept: list[Any] = []  # the round the grader said to keep (`keep`), until `fetch`

    def _on_event(self, event: str, duration_secs: float, **_: str | int) -> None:
        if event in (COMPILE_EVENT, TRACE_EVENT):
            self.counts[event] += 1
        if event == COMPILE_EVENT:
            self.compile_seconds += duration_secs

    def _on_hit(self, event: str, **_: Any) -> None:
        if event == CACHE_HIT_EVENT:
            self.counts[event] += 1

    # -- loading and argument handling ---------------------------------------------------

    def load(self) -> dict[str, Any]:
        """Import the topic module from its file; report the functions it defines."""
        spec = importlib.util.spec_from_file_location(self.module_name, self.module_path)
        if spec is None or spec.loader is None:  # not for a .py file's path
            raise ImportError(f"cannot import {self.module_path} as a module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[self.module_name] = module
        spec.loader.exec_module(module)
        self.module = module
        return {"functions": sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))}

    def op_module(self, req: ModuleRequest) -> dict[str, Any]:
        """Make another topic's module the one requests name functions of, importing it unless
        this process has already: on an accelerator one student process (and one trusted one)
        serves every topic graded there, since the device takes one process at a time and each
        opening costs seconds (`jaxlings.grading.device`), and the topics take it in turn, so a
        module comes back with its functions as they were compiled (`jaxlings.grading.device_grading`
        compiles them ahead). `path` is the module's file, `name` its module name."""
        self.last, self.kept = [], []
        self.module_path, self.module_name = req["path"], req["name"]
        done = self.imported.get((req["path"], req["name"]))
        if done is not None:
            self.module = done[0]
            return done[1]
        self.module = None  # a module that fails to import leaves none current
        reply = self.load()
        self.imported[(req["path"], req["name"])] = (self.module, reply)
        return reply

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
            return x

        return _mapped(args, conv)

    def transformed(self, req: FunctionRequest) -> Callable[..., Any]:
        """The function with the request's transforms applied, innermost first.

        `transforms` is a list of (name, params) (`messages.Transform`): ("grad", {"argnums": [0]}),
        ("vmap", {"in_axes": [0, None]}), ("value_and_grad", {...}).
        """
        fn = self.function(req["fn"])
        for name, params in req.get("transforms", ()):
            kwargs = {k: _tuples(v) for k, v in params.items()}
            fn = self.transforms[name](fn, **kwargs)
        return fn

    def jitted(self, fn: Callable[..., Any], static_argnums: tuple[int, ...]) -> Callable[..., Any]:
        """`fn` under the grader's `jax.jit`; a function the student jitted themselves is used as
        it is (their `static_argnums` choices are under test) only if it IS JAX's jit type."""
        return fn if type(fn) is self.jit_type else self.jit(fn, static_argnums=static_argnums)

    def callable_for(self, req: FunctionRequest) -> Callable[..., Any]:
        """The (transformed) function as written, or jitted with the declared static arguments."""
        fn = self.transformed(req)
        return self.jitted(fn, tuple(req.get("static_argnums", ()))) if req.get("jit") else fn

    def export(self, out: Any, operators: bool = False) -> dict[str, Any]:
        """An output pytree as data: its treedef string, its leaves as NumPy arrays, and each
        leaf's key path (`jax.tree_util.keystr`: `[0]`, `['w']`, `.b`), which messages name it by.

        Leaves are accepted by exact type only: jax Arrays, typed key arrays, NumPy arrays and
        NumPy or Python scalars; anything else (a subclass, an object with `__array__`, a lazy
        value) is refused with a message. With `operators`, a quantum operator (NetKet's: it
        has a `hilbert` and `to_sparse()`) is one leaf, sent as its matrix in its Hilbert
        space's basis, so that the grader compares what operators mean, not how they are built.
        """
        with_paths, treedef = self.flatten_with_path(out, is_leaf=_is_operator if operators else None)
        leaves = [leaf for _, leaf in with_paths]
        exported = []
        for leaf in leaves:
            if operators and _is_operator(leaf):
                leaf = leaf.to_sparse().toarray()
            kind = type(leaf)
            if kind not in self.array_types and kind not in self.scalar_types:
                raise OutputRefused(
                    f"an output leaf of type {kind.__name__} is not a numeric array: return jax or "
                    "NumPy arrays (or Python numbers)"
                )
            if kind is self.array_types[1] or (kind is self.array_types[0] and self.is_key(leaf)):
                exported.append(
                    {"kind": "key", "impl": str(self.key_impl(leaf)), "data": self.asarray(self.key_data(leaf))}
                )
                continue
            arr = self.asarray(leaf)
            if type(arr) is not self.np.ndarray or (
                arr.dtype.kind not in "biufc" and arr.dtype.type.__module__ != "ml_dtypes"
            ):
                raise OutputRefused(f"an output leaf of type {kind.__name__} is not a numeric array")
            exported.append({"kind": "array", "data": arr})
        return {"treedef": str(treedef), "leaves": exported, "paths": [self.keystr(path) for path, _ in with_paths]}

    # -- requests ------------------------------------------------------------------------

    def counted(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, list[int]]:
        """Call `fn(*args)` to completion; its output and [compilations, traces] it caused
        (as this process's own JAX reports them: advisory)."""
        before = dict(self.counts)
        out = self.block(fn(*args))
        return out, [self.counts[ev] - before.get(ev, 0) for ev in (COMPILE_EVENT, TRACE_EVENT)]

    def op_call(self, req: CallRequest) -> dict[str, Any]:
        """Call a function once (as written, or jitted) and return its output.

        With `key_reuse`, under `jax.debug_key_reuse(True)` (advisory: the module could turn
        the checker off). With `shardings`, also describe how each output leaf is laid out.
        """
        fn, args = self.callable_for(req), self.arguments(req["args"])
        if req.get("key_reuse"):
            with self.key_reuse(True):
                out = self.block(fn(*args))
        else:
            out = self.block(fn(*args))
        reply: dict[str, Any] = {"out": self.export(out, req.get("operators", False))}
        if req.get("shardings"):
            reply["shardings"] = [describe_sharding(leaf) for leaf in self.flatten(out)[0]]
        return reply

    def op_check_keys(self, req: CallRequest) -> dict[str, Any]:
        """Trace a function under the grader's `jax.jit` with `jax.debug_key_reuse(True)`, and
        compile nothing: JAX's checker runs on the traced program (a reused key raises
        `KeyReuseError` here), so compiling it, under a flag that is part of the compilation
        key, would only cost time. Advisory, as `op_call`'s `key_reuse`."""
        fn: Any = self.jitted(self.transformed(req), tuple(req.get("static_argnums", ())))  # jax.jit's: has .trace
        with self.key_reuse(True):
            fn.trace(*self.arguments(req["args"]))
        return {}

    def op_stats(self, req: Request) -> dict[str, Any]:
        """How many programs this process's JAX compiled so far, and their seconds (advisory: a
        figure for `benchmarks/bench.py`, never a verdict's)."""
        return {
            "compilations": self.counts[COMPILE_EVENT],
            "compile_seconds": self.compile_seconds,
            "cache_hits": self.counts[CACHE_HIT_EVENT],
        }

    def op_timed(self, req: RoundRequest) -> dict[str, Any]:
        """The timed workload, whole: put the inputs on the device, run every call to
        completion, and send the outputs as materialised arrays.

        The grader's clock runs from before it writes the inputs to holding the verified
        outputs, so every step (the inputs' transfer, the calls, the outputs' conversion) is
        inside it. With `shm` (where the outputs may go: [start, end)), the inputs are views of
        the shared region (`jaxlings.worker.shm`; on a CPU, `device_put` copies nothing) and
        each output array's bytes are written into the region, the reply saying where.

        With `commit` (a salt: a round on an accelerator, `jaxlings.grading.device`), the outputs stay
        here: the calls are dispatched one after another, and the reply carries only their
        digest (`jaxlings.worker.commit`), computed on the device from the outputs, which
        waits for them; `keep` and `fetch` send a round's outputs after its window. With
        `generate`, the inputs are made on the device from the round's key by the grader's
        program (`_generated`).
        """
        fn = self.callable_for(req)
        if (salt := req.get("commit")) is not None:
            outs = [fn(*args) for args in self._round_args(req)]
            self.last = outs
            return {"digest": self._digest(outs, int(salt))}
        outs = [self.block(fn(*args)) for args in self._round_args(req)]
        return {"outs": self._exported(outs, req)}

    def _round_args(self, req: RoundRequest) -> list[Any]:
        """A round's calls' arguments: made on the device (`generate`), or sent by the grader
        (in the shared region where the request says so, else inline), put on the device."""
        if (gen := req.get("generate")) is not None:
            return self._generated(gen)
        region = self._region() if req.get("shm") is not None else None
        cases = req["cases"] if region is None else region.view(req["cases"])
        return [self.arguments(args) for args in cases]

    def _exported(self, outs: list[Any], req: RoundRequest | FetchRequest) -> list[dict[str, Any]]:
        """Outputs as data (`export`); with `shm`, each array's bytes written into the shared
        region from `shm[0]` on, the leaf then saying where."""
        exported = [self.export(out, req.get("operators", False)) for out in outs]
        if req.get("shm") is not None:
            region = self._region()
            at, end = req["shm"]
            for leaf in (leaf for out in exported for leaf in out["leaves"] if leaf["kind"] == "array"):
                ref, at = region.put(leaf["data"], at, end)
                leaf["data"] = leaf["data"] if ref is None else ref
        return exported

    def _generated(self, gen: Generate) -> list[Any]:
        """The round's calls' arguments made on the device: the grader's program (a `jax.export`
        artifact, compiled once per process) run on the round's key, its outputs put where the
        calls' templates hold `wire.Generated`, as typed keys where they say so."""
        blob = bytes(self.asarray(gen["program"]))
        digest = hashlib.sha256(blob).digest()
        key = self.device_put(self.asarray(gen["key"], dtype="uint32"))
        program = self._graders(
            self.programs, digest, 8, lambda: self.jit(self.deserialize(bytearray(blob)).call).lower(key).compile()
        )
        outs = program(key)

        def fill(x: Any) -> Any:
            if not isinstance(x, Generated):
                return x
            if x.index >= len(outs):
                raise ValueError(f"the workload names its output {x.index}, but its program has {len(outs)}")
            return self.wrap_key(outs[x.index]) if x.key else outs[x.index]

        self.generated_inputs = list(outs)
        return [_mapped(call, fill) for call in gen["calls"]]

    def _digest(self, outs: list[Any], salt: int) -> list[int]:
        """The digest of every output leaf, in order (`commit.digest`): on the device, jitted,
        where every leaf is a device array (typed keys as their data); else here, with NumPy,
        over each leaf as `export` would send it."""
        leaves = [leaf for out in outs for leaf in self.flatten(out)[0]]
        if all(isinstance(leaf, self.array_type) for leaf in leaves):
            data = [self.key_data(leaf) if self.is_key(leaf) else leaf for leaf in leaves]
            return [int(v) for v in self.asarray(self._committer_for(data)(data, self.np.uint32(salt)))]
        host = [
            self.asarray(self.key_data(x)) if isinstance(x, self.array_type) and self.is_key(x) else self.asarray(x)
            for x in leaves
        ]
        return [int(v) for v in commit.digest(host, salt, self.np)]

    def _committer_for(self, data: list[Any]) -> Callable[..., Any]:
        """The digest compiled for leaves of `data`'s shapes, dtypes and places (the cache on
        for it: `PersistentCache.for_grader`), kept for the process's later rounds."""
        shapes = tuple((x.shape, str(x.dtype), str(x.sharding)) for x in data)
        return self._graders(
            self.committers, shapes, 16, lambda: self.committer.lower(data, self.np.uint32(0)).compile()
        )

    def _graders(
        self, kept: dict[Any, Callable[..., Any]], key: Any, most: int, build: Callable[[], Callable[..., Any]]
    ) -> Callable[..., Any]:
        """One of the grader's own programs from `kept`, else compiled (`build()`) with the persistent
        cache on (`PersistentCache.for_grader`) and kept, the oldest of `most` dropped first."""
        if key not in kept:
            if len(kept) >= most:
                kept.pop(next(iter(kept)))
            with self.cache.for_grader():
                kept[key] = build()
        return kept[key]

    def op_keep(self, req: Request) -> dict[str, Any]:
        """Keep the last committed round's outputs for `fetch` (the grader's best round so far),
        in place of those kept before."""
        self.kept = self.last
        return {}

    def op_fetch(self, req: FetchRequest) -> dict[str, Any]:
        """The outputs of the kept round (`keep`), sent after its window; the grader holds them to
        the digest that round's reply carried."""
        return {"outs": self._exported(self.kept, req)}

    def op_round(self, req: RoundRequest) -> dict[str, Any]:
        """A round computed untimed (the reference's, on the CPU: what a student's timed round is
        verified against): every call's outputs, and with `generate` the digest of the inputs
        made (under `salt`), which must equal the device's for the same key."""
        fn = self.callable_for(req)
        calls = self._round_args(req)
        reply: dict[str, Any] = {}
        if req.get("generate") is not None:  # before the calls: a function may donate its inputs
            reply["inputs"] = self._digest([self.generated_inputs], int(req.get("salt", 0)))
        outs = [self.block(fn(*args)) for args in calls]
        return {"outs": self._exported(outs, req), **reply}

    def op_inputs(self, req: InputsRequest) -> dict[str, Any]:
        """The digest of a round's generated inputs (its program run again on its key, under
        `salt`), untimed: the trusted device worker's, to compare with the CPU's."""
        self._generated(req["generate"])
        return {"inputs": self._digest([self.generated_inputs], int(req.get("salt", 0)))}

    def _region(self) -> Any:
        """The shared region the grader handed this worker, mapped on first use (`shm`)."""
        if "_shm" not in self.__dict__:
            self._shm = shm.Region.from_env()
        if self._shm is None:
            raise RuntimeError("the grader sent a workload in shared memory, but this worker has no region")
        return self._shm

    def op_trace(self, req: TraceRequest) -> dict[str, Any]:
        """Jit a function and export the jitted call from argument specs: shapes and dtypes,
        never values.

        `specs` maps each program's name ("first": the exercise's largest size, "other": its
        smallest) to the call's arguments as `wire.Spec`s (arrays, typed keys, Python scalars
        that are not static), static arguments given by value. Returns the exported programs
        (serialized `jax.export` artifacts, as uint8 arrays), which the grader runs on samples
        this process never sees, in a trusted worker of its own. Also advisory facts this
        process reports about itself (jaxpr primitives and equations, `pmap` use), from
        `jax.make_jaxpr` on the first program's specs.
        """
        fn = self.transformed(req)
        static = tuple(req.get("static_argnums", ()))
        jitted = self.jitted(fn, static)
        programs = {}
        for name, described in req["specs"].items():
            args = self.described(described)
            self.check_static(jitted, described)
            programs[name] = _as_bytes_array(program.export(jitted, args, req.get("platforms")))
        advisory: dict[str, Any] = {}
        try:
            closed = self.make_jaxpr(fn, static_argnums=static)(*self.described(req["specs"]["first"])).jaxpr
            prims, n_eqns = jaxpr.count_primitives(closed)
            advisory.update({"primitives": dict(prims), "n_eqns": n_eqns, "pmap_calls": jaxpr.count_pmap_calls(closed)})
        except Exception:  # noqa: BLE001 - advisory facts are optional
            pass
        return {"programs": programs, "advisory": advisory}

    def described(self, specs: tuple[Any, ...]) -> tuple[Any, ...]:
        """Arguments from their specs (`wire.Spec`): `jax.ShapeDtypeStruct`s, nested ones too;
        static arguments (plain values) as they are."""

        def conv(x: Any) -> Any:
            if isinstance(x, Spec):
                if x.kind == "key":
                    key_type = (self.key(0) if x.dtype is None else self.key(0, impl=x.dtype)).dtype
                    return self.shape_dtype(x.shape, key_type)
                if x.dtype is None:
                    raise ValueError(f"a {x.kind} spec names no dtype")
                if x.kind == "scalar":
                    aval = self.typeof({"bool": False, "int": 0, "float": 0.0, "complex": 0j}[x.dtype])
                    return self.shape_dtype((), aval.dtype, weak_type=aval.weak_type)
                return self.shape_dtype(x.shape, wire.dtype_named(x.dtype))
            return x

        return _mapped(specs, conv)

    def check_static(self, jitted: Any, specs: tuple[Any, ...]) -> None:
        """A clear message where the function's own jit holds static an argument that the
        exercise passes as data (its values change from call to call): such a jit re-traces
        and compiles for every new value."""
        positions = program._static_positions(jitted, len(specs)) or []
        for i in positions:
            if _has_spec(specs[i]):
                raise program.ProgramRefused(
                    f"your jax.jit marks argument {i} static, but its value changes from call to call (it is data, "
                    "not a setting): every new value re-traces and compiles the function; keep it traced "
                    "(remove it from static_argnums / static_argnames)"
                )

    def op_analyse(self, req: AnalyseRequest) -> dict[str, Any]:
        """Analyse an exported program and run it on `args` (sent to trusted workers only: the
        analysis worker for a student's program, the reference's for its own).

        The facts (StableHLO ops, the compiled program's loops, collectives, FLOPs, compile
        time) describe the program; its outputs let the grader check that the program computes
        the function. With `shingles`, the facts also hold the program's normalised fingerprint
        for the similarity report (`program.program_shingles`).
        """
        blob = bytes(self.asarray(req["program"]))
        facts, out = program.analyse(blob, self.arguments(req["args"]), shingles=bool(req.get("shingles")))
        out = self.block(out)
        reply: dict[str, Any] = {"facts": facts, "out": self.export(out)}
        if req.get("shardings"):
            reply["shardings"] = [describe_sharding(leaf) for leaf in self.flatten(out)[0]]
        return reply

    def op_prepare(self, req: FunctionRequest) -> dict[str, Any]:
        """Set up a stream of calls for `step`: the function jitted once and JAX's caches
        cleared (a function the student jitted included), so that the calls that trace are the
        first of each new input shape. No call's arguments come with it: each comes with its
        own `step`, inside the window the grader times, so nothing of the stream is known here."""
        self.prepared = self.callable_for(req)
        self.clear_caches()
        return {}

    def op_step(self, req: StepRequest) -> dict[str, Any]:
        """Run one call of the prepared stream on `args`, sent with this request: putting them
        on the device is part of the call, inside the grader's window (a replay sends them
        again: a call may donate its buffers). What it prints goes to this process's stdout,
        which the grader reads itself (`WorkerProcess.stdout_since`), flushed before the reply."""
        if self.prepared is None:
            raise RuntimeError("the grader sent a stream's call before preparing the stream")
        args = self.block(self.arguments(req["args"]))
        hits = self.counts[CACHE_HIT_EVENT]
        out, count = self.counted(self.prepared, args)
        self.stdout.flush()
        return {"out": self.export(out), "counts": count, "cache_hits": self.counts[CACHE_HIT_EVENT] - hits}


def _mapped(x: Any, leaf: Callable[[Any], Any]) -> Any:
    """`x` with `leaf` applied to every leaf of its lists, tuples and dicts (an argument tuple as
    the wire carries it), the containers kept."""
    if isinstance(x, (list, tuple)):
        return type(x)(_mapped(v, leaf) for v in x)
    if isinstance(x, dict):
        return {k: _mapped(v, leaf) for k, v in x.items()}
    return leaf(x)


def _has_spec(x: Any) -> bool:
    """Whether an argument holds a `Spec` (data, described), nested ones included."""
    if isinstance(x, Spec):
        return True
    if isinstance(x, (list, tuple)):
        return any(_has_spec(v) for v in x)
    if isinstance(x, dict):
        return any(_has_spec(v) for v in x.values())
    return False


def _as_bytes_array(blob: bytes) -> Any:
    """Bytes as a uint8 array, the form the wire carries them in."""
    import numpy as np

    return np.frombuffer(blob, dtype=np.uint8)


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


def describe(exc: BaseException, module_path: str) -> dict[str, str]:
    """An exception as the student should read it: type, message, and their line.

    Their line is the last of the module's frames in the exception's traceback, else in the
    exceptions chained to it: an error JAX finds in a traced program (a reused key under jit)
    carries the line that built the faulty operation on its cause."""
    where, message = "", brief(exc, module_path)
    chain = _chain(exc)
    for link in chain:
        if line := _own_line(link, module_path):
            where = line
            break
    if type(exc).__name__ == "KeyReuseError" and len(chain) > 1 and str(chain[1]).startswith("PRNG key first used"):
        first = _own_line(chain[1], module_path)  # JAX chains where the key was first used
        if first and first != where:
            message += f" (the key was first used at {first})"
    return {"type": type(exc).__name__, "message": message, "where": where}


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and the exceptions chained to it (its cause, else its context), at most 5."""
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and len(chain) < 5 and link not in chain:
        chain.append(link)
        link = link.__cause__ or link.__context__
    return chain


def _own_line(exc: BaseException, module_path: str) -> str:
    """The student's line, "line N: code", of the last frame of the module in `exc`'s traceback, or ""."""
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename) == os.path.abspath(module_path):
            where = f"line {frame.lineno}: {(frame.line or '').strip()}"
    return where


URL = re.compile(r"https?://[^\s\"'<>()]*[^\s\"'<>().,;:]")
INTERNALS = re.compile(r"\s*\b\w*signature=|\s+eqn=|\s+jaxpr=|\{ lambda |\bPyTreeDef\(")
"""Where a message turns to JAX's internals (a jaxpr, an equation, a key-reuse signature, a
treedef): what follows is not for the student."""
TRACER = re.compile(r"Traced<~?([^>]*)>with<\w+>|\b\w*Tracer\(~?([\w\[\], ]*)\)")
"""A tracer as JAX prints it (`Traced<~int32[]>with<DynamicJaxprTrace>`, `JitTracer(~int32[])`),
said "a traced int32[]"."""
MAX_LINES, MAX_CHARS = 6, 800


def brief(exc: BaseException, module_path: str) -> str:
    """An exception's message for the student: a JAX error as its first line and the docs link
    it gives, whole; any other as its first lines, cut at a line (never inside a link), up to
    where it turns to JAX's internals. The module's own path (a private copy of the student's
    file, in a temp folder) is written as the file's name.

    A JAX error's first line says what went wrong; what follows is a jaxpr, the traced function's
    path in the grader's temp folder, or advice that the checks give in their own words."""
    text = str(exc).strip()
    for path in {module_path, os.path.abspath(module_path), os.path.realpath(module_path)}:
        text = text.replace(path, os.path.basename(module_path))
    text = TRACER.sub(lambda m: f"a traced {m[1] or m[2]}", text)
    lines = _unrepeated([line.rstrip() for line in text.splitlines() if line.strip()])
    if not lines:
        return ""
    if type(exc).__module__.split(".")[0] in ("jax", "jaxlib") or "docs.jax.dev" in text:
        first = _before_internals(lines[0]).rstrip(" :")
        links = [u for u in dict.fromkeys(URL.findall(text)) if u not in first]
        return (first if first.endswith((".", "!", "?")) or not first else first + ".") + "".join(
            f" See {u}" for u in links[:1]
        )
    kept: list[str] = []
    for line in lines[:MAX_LINES]:
        cut = _before_internals(line)
        if sum(len(k) + 1 for k in kept) + len(cut) > MAX_CHARS:
            if not kept:
                kept.append(_cut_outside_links(cut, MAX_CHARS))
            break
        kept.append(cut)
        if cut != line:
            break
    return "\n".join(k for k in kept if k)


def _unrepeated(lines: list[str]) -> list[str]:
    """`lines` without the first sentence of a line that an earlier line opened with (JAX says
    "The error occurred while tracing ..." once per argument): the rest of the line is kept."""
    seen: set[str] = set()
    kept = []
    for line in lines:
        head, sep, tail = line.partition(". ")
        if sep and head in seen:
            line = tail
        seen.add(head)
        kept.append(line)
    return kept


def _before_internals(line: str) -> str:
    """`line` up to where it turns to JAX's internals, without the colon that introduced them."""
    match = INTERNALS.search(line)
    return line if match is None else line[: match.start()].rstrip(" :")


def _cut_outside_links(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters at a space, never inside a link."""
    cut = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
    for match in URL.finditer(text):
        if match.start() < len(cut) < match.end():
            cut = text[: match.start()].rstrip()
    return cut + " ..."


def serve(rfd: int, wfd: int, harness: Harness) -> None:
    """Answer requests until told to stop or the grader goes away."""
    while True:
        try:
            req = wire.read_frame(rfd)
        except wire.Closed:
            return
        if req["op"] == "bye":
            _leave()
        try:
            if req["op"] not in OPS:
                raise ValueError(f"no such request: {req['op']!r}")
            harness.cache.for_op(req["op"])
            reply = {"ok": True, **getattr(harness, f"op_{req['op']}")(req)}
        except BaseException as exc:  # noqa: BLE001 - student code may raise anything, SystemExit too
            reply = {"ok": False, "error": describe(exc, harness.module_path)}
        wire.write_frame(wfd, reply)


DEVICE_LOCK_ENV = "JAXLINGS_DEVICE_LOCK_FD"  # `jaxlings.grading.device`'s exclusive mode


def _hold_device() -> None:
    """In the exclusive mode (`jaxlings.grading.device`: the CPU played as an accelerator), take the
    device's lock (a descriptor of its file, handed over at start: the sandbox shows no host
    path) before JAX starts, as libtpu does with a TPU chip, or stop: a second process on the
    device fails loudly, as it would there. The descriptor stays open for the process's
    lifetime."""
    fd = os.environ.pop(DEVICE_LOCK_ENV, "")
    if not fd:
        return
    import fcntl

    try:
        fcntl.flock(int(fd), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (OSError, ValueError):
        sys.stderr.write("the device is held by another process (exclusive mode: one process at a time)\n")
        os._exit(3)
    _HELD.append(int(fd))


_HELD: list[int] = []


def main() -> None:
    module_path, module_name = sys.argv[1], sys.argv[2]
    _hold_device()
    rfd, wfd = (int(x) for x in os.environ.pop("JAXLINGS_WORKER_FDS").split(","))
    preload = [name for name in os.environ.pop("JAXLINGS_PRELOAD", "").split(",") if name]
    on_request = os.environ.pop("JAXLINGS_LOAD_ON_REQUEST", "") == "1"
    harness = Harness(module_path, module_name)
    _own_warnings(module_path)
    _preload(preload)
    wire.write_frame(wfd, {"ok": True, "platform": harness.platform})
    if on_request and not _asked_to_load(rfd):
        _leave()
    try:
        loaded = {"ok": True, **harness.load()}
    except BaseException as exc:  # noqa: BLE001
        loaded = {"ok": False, "error": describe(exc, module_path)}
    wire.write_frame(wfd, loaded)
    if loaded["ok"]:
        serve(rfd, wfd, harness)
    _leave()


def _own_warnings(module_path: str) -> None:
    """Warnings the module causes name its file as the student knows it (`prng.py:19`), not the
    grader's private copy of it in a temp folder: a dying worker's last output reaches the
    student's message."""
    original, own = warnings.formatwarning, os.path.abspath(module_path)

    def formatted(message: Any, category: Any, filename: str, lineno: int, line: str | None = None) -> str:
        if os.path.abspath(filename) == own:
            line = linecache.getline(filename, lineno) if line is None else line
            filename = os.path.basename(filename)
        return original(message, category, filename, lineno, line)

    warnings.formatwarning = formatted


def _preload(names: list[str]) -> None:
    """Import installed libraries ahead of the module (a spare worker of `grade watch`,
    `jaxlings.grading.spares`): the module's own imports then find them loaded. A name that does not
    import is skipped; the module's import will report it."""
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - any library's failure is the module's to report
            pass


def _asked_to_load(rfd: int) -> bool:
    """Wait for the grader's `load` (a spare worker, started before the module's file was in
    place); False if the grader went away or asked for anything else."""
    try:
        request = wire.read_frame(rfd)
    except wire.Closed:
        return False
    return isinstance(request, dict) and request.get("op") == "load"


def _leave() -> None:
    """Exit now, without the interpreter's shutdown: tearing down JAX, XLA's threads and a
    topic's modules (NetKet's) takes 0.5 to 1 s of the grader's wall time per worker, and
    nothing is left to save (the compilation cache is written when a program compiles)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a module may have replaced or closed the streams
            pass
    os._exit(0)


if __name__ == "__main__":
    main()
