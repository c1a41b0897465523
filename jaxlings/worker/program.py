"""A jitted call as a program the grader can trust: exported by the student's side, analysed and
run by the trusted side.

Why. Facts read inside the student's process (jaxpr primitives, compile counts, the compiled
HLO) come from objects the student's module can patch. Here the student's worker only EXPORTS
its jitted call (`jax.export`: StableHLO bytes), from argument specs (`jax.ShapeDtypeStruct`s
and static values: it is never handed the values its program will run on). The trusted side (a
worker on an empty module, or the reference's for its own programs) deserializes that
artifact, refuses anything it would not run, counts its operations, compiles it and RUNS it on
fresh samples of those shapes; the grader compares those outputs with the reference's there.
Every fact therefore describes a program that the data shows to compute the function on
inputs its author never saw, whatever the student's process did.

    blob = export(jitted, specs)         # student side: bytes (untrusted from here on)
    facts, out = analyse(blob, args)     # trusted side: facts (JSON-able) and the outputs

Host callbacks (`pure_callback`, `io_callback`, `jax.debug.print`, ...) cannot be serialized
by `jax.export` at all, so a function using them fails to export (`ProgramRefused`, with a
message for the student). A forged artifact that names a callback target anyway
(`xla_python_cpu_callback` carries a raw pointer to a Python object) is refused before
anything is compiled: only the custom-call targets in `ALLOWED_CUSTOM_CALLS` (the ones JAX
itself emits for ordinary programs on CPU and GPU, with a stable, typed calling convention)
are ever compiled or run here.

Static arguments. `jax.export` bakes a jit's static arguments into the program and drops them
from its inputs: the exported `in_tree` is `((kept args...), {})`. `export` therefore prefixes
the StableHLO bytes with a small header naming the static positions as the student's jit
declared them (`jitted._jit_info.static_argnums`, private but present in jax 0.10 and 0.11).
The header is untrusted: `analyse` keeps it only if the remaining arguments match the
program's `in_tree` and `in_avals` exactly (shape and dtype, leaf by leaf); otherwise, or
without one, it matches the arguments itself, dropping only Python values (which are the only
arguments jit can hold static: arrays and keys are unhashable). Whatever it picks, the outputs
are compared with the reference's, so a lying header can only make the student's program fail.

This module imports nothing of `jaxlings` outside `jaxlings.worker` (it runs in workers).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import time
from collections import Counter, OrderedDict
from typing import Any, cast

# The similarity report's fingerprint of a program lives in `dataflow`; its names are this module's too.
from jaxlings.worker import dataflow
from jaxlings.worker.dataflow import SHINGLES_KEPT as SHINGLES_KEPT
from jaxlings.worker.dataflow import Shingler as Shingler
from jaxlings.worker.dataflow import program_shingles as program_shingles
from jaxlings.worker.dataflow import scatter_kind

MAGIC = b"JAXLINGS-PROGRAM-1\n"
HEADER_LIMIT = 8192  # bytes of JSON header accepted
# Operations (`n_ops`) past which a program is refused before it is compiled: compiling
# costs the trusted side. The references have at most 276 (prng.monte_carlo_pi); the course's slowest
# fault, a 999-step Python loop of scatter-adds (at_updates.histogram), has 7,993 and compiles
# in 18 s on one core here (the old design paid the same in the student's process).
MAX_OPS = 20000
COMPILED_KEPT = 4  # compiled programs kept, so that the same artifact at new values compiles once
_COMPILED: OrderedDict[tuple[Any, ...], tuple[Any, dict[str, Any]]] = OrderedDict()

CALLBACK_MESSAGE = (
    "the jitted function calls back to the host (pure_callback/io_callback/debug.callback/debug.print): "
    "the grader runs only programs that stay on the device; compute with jax.numpy / lax instead"
)

# Collective operations as they appear in compiled HLO text (` all-gather(`, `all-reduce-start(`, ...).
COLLECTIVES = r"\b(all-gather|all-reduce|reduce-scatter|all-to-all|collective-permute)(?:-start)?\("

TYPED_FFI = 4  # `api_version` of XLA's typed FFI: operand shapes come from the buffers themselves

# Custom-call targets the trusted side compiles and runs, each with the calling convention it must
# use (TYPED_FFI: `api_version = 4`, or as JAX writes it, the default version with a dictionary
# `mhlo.backend_config`; None: an annotation that XLA's partitioner consumes, never run as a call).
# The list is JAX's own "guaranteed stable" targets (jax/_src/export/_export.py) for CPU and GPU,
# less the ones that run arbitrary code (Triton, Mosaic/Pallas kernels, tf.call_tf_function), read
# uninitialised memory (AllocateBuffer), or exist for TPUs or symbolic shapes only. The LAPACK,
# cuSOLVER, cuSPARSE and threefry kernels are typed-FFI handlers (they take every dimension from
# the buffers they are given), and are accepted only with that calling convention: the legacy
# LAPACK convention read sizes from operands, which a forged program could set at will.
_LAPACK = (
    "potrf",
    "geqrf",
    "orgqr",
    "ungqr",
    "syevd",
    "heevd",
    "geev",
    "gesdd",
    "getrf",
    "sytrd",
    "hetrd",
    "gehrd",
    "gees",
    "trsm",
    "gtsv",
)
_LAPACK_TARGETS = {f"lapack_{p}{name}_ffi" for name in _LAPACK for p in "sdcz"}
_GPU_TARGETS = {
    "cu_lu_pivots_to_permutation",
    "cusolver_getrf_ffi",
    "cusolver_geqrf_ffi",
    "cusolver_orgqr_ffi",
    "cusolver_potrf_ffi",
    "cusolver_syevd_ffi",
    "cusolver_gesvd_ffi",
    "cusolver_gesvdj_ffi",
    "cusolver_sytrd_ffi",
    "cusparse_gtsv2_ffi",
    "cu_threefry2x32_ffi",
    "hip_lu_pivots_to_permutation",
    "hipsolver_getrf_ffi",
    "hipsolver_geqrf_ffi",
    "hipsolver_orgqr_ffi",
    "hipsolver_potrf_ffi",
    "hipsolver_syevd_ffi",
    "hipsolver_gesvd_ffi",
    "hipsolver_gesvdj_ffi",
    "hipsolver_gesdd_ffi",
    "hipsolver_sytrd_ffi",
    "hip_threefry2x32_ffi",
}
ALLOWED_CUSTOM_CALLS: dict[str, int | None] = {
    **dict.fromkeys(sorted(_LAPACK_TARGETS | _GPU_TARGETS), TYPED_FFI),
    # sharding annotations (jax.device_put / with_sharding_constraint / shard_map under GSPMD)
    "Sharding": None,
    "SPMDFullToShardShape": None,
    "SPMDShardToFullShape": None,
    # memory-kind placement annotation (device_put to a memory kind)
    "annotate_device_placement": None,
}

# Operations never run here, whatever their dialect: host transfers (how callbacks reach the
# host on some platforms) and infeed/outfeed.
REFUSED_OPS = frozenset({"stablehlo.send", "stablehlo.recv", "stablehlo.infeed", "stablehlo.outfeed"})
# Dialects of the operations JAX emits: anything else is refused.
ALLOWED_DIALECTS = frozenset({"builtin", "func", "stablehlo", "chlo", "sdy"})

# Operations that structure a module rather than compute: counted in `ops`, not in `n_ops` or
# `n_ops_written`. Constants are left out too: JAX's lowering shares equal constants, so that
# their number can change with the values (a trip count that happens to equal another constant).
BOOKKEEPING = frozenset({"module", "func", "return", "mesh", "constant"})


class ProgramRefused(Exception):
    """The artifact is not a program the grader will analyse or run (malformed, disallowed
    custom call, ...); str() is a message for the student."""


# -- the student's side ----------------------------------------------------------------------


def export(jitted: Any, args: tuple[Any, ...], platforms: list[str] | None = None) -> bytes:
    """The jitted call `jitted(*args)` as an exported program (header + `Exported.serialize()`).

    `jitted` is a `jax.jit` object; `args` may be values or `jax.ShapeDtypeStruct`s (the
    harness exports from specs); static arguments, declared by its `static_argnums`, are
    passed positionally in `args` like the others. `platforms` are those the program is for
    (default: this process's backend; on an accelerator the analysis runs on the host's CPU,
    so the student's program is exported for "cpu"). Errors raised while tracing the student's
    function (a shape error, a ConcretizationTypeError, ...) propagate unchanged, so that they
    point at the student's line; a host callback, or any other reason the traced program cannot
    be exported, raises `ProgramRefused`.

    An output pytree with nodes `jax.export` cannot serialize (a class the student registered
    as a pytree, a namedtuple) is exported flattened: the program returns the list of output
    leaves, and the header carries the original tree's description (`str` of its treedef).
    """
    import jax
    from jax import export as jax_export

    args = tuple(args)
    traced = jitted.trace(*args)  # tracing errors are the student's: let them through as they are
    static = _static_positions(jitted, len(args))
    header: dict[str, Any] = {"static": static}
    try:
        try:
            blob = jax_export.export(jitted, platforms=platforms)(*args).serialize()
        except ValueError as exc:
            if "Cannot serialize PyTreeDef" not in str(exc) or static is None:
                raise
            flat = jax.jit(lambda *a: jax.tree.leaves(jitted(*a)), static_argnums=tuple(static))
            blob = jax_export.export(flat, platforms=platforms)(*args).serialize()
            header["out_tree"] = str(traced.out_tree)
    except Exception as exc:  # noqa: BLE001 - any refusal of export becomes a message
        text = str(exc)
        if "host_callback" in text or "keepalive" in text or "callback" in text.lower():
            raise ProgramRefused(CALLBACK_MESSAGE) from None
        raise ProgramRefused(
            f"the jitted function could not be exported as a program: {type(exc).__name__}: {_first_lines(exc)}"
        ) from None
    encoded = json.dumps(header).encode()
    return MAGIC + len(encoded).to_bytes(4, "big") + encoded + bytes(blob)


def _static_positions(jitted: Any, n: int) -> list[int] | None:
    """The positions of `jitted`'s static arguments, or None where JAX does not tell."""
    info = getattr(jitted, "_jit_info", None)
    nums = getattr(info, "static_argnums", None)
    if nums is None:
        return None
    try:
        return sorted({int(i) % n for i in nums if -n <= int(i) < n}) if n else []
    except (TypeError, ValueError):
        return None


# -- the trusted side ------------------------------------------------------------------------


def analyse(
    blob: bytes, args: tuple[Any, ...], max_ops: int = MAX_OPS, shingles: bool = False
) -> tuple[dict[str, Any], Any]:
    """Facts about the exported program `blob`, and its outputs on `args` (run here).

    `args` are the call's arguments as the worker built them (a sample of the shapes the
    program was exported from). Raises `ProgramRefused` before compiling anything unsafe.

    Facts (JSON-able; exact counts but for the time):
      ops            {short op name: count} over every function and region of the module
                     (`stablehlo.add` -> `add`, `sdy.manual_computation` -> `manual_computation`,
                     `func.call` -> `call`), plus each scatter's kind (`scatter-add`, `-mul`,
                     `-min`, `-max`, `scatter-set`, `scatter-apply` for any other update)
      n_ops          the operations the program runs: the entry function's, with every `call`
                     replaced by its callee's operations, recursively (the size XLA compiles),
                     less BOOKKEEPING (module, func, return, mesh, constant; see `inspect_module`)
      n_ops_written  the same over every function as written, each counted once (the sum of
                     `ops` less BOOKKEEPING and the scatter kinds)
      custom_calls   the distinct custom-call targets, sorted
      scopes         {named scope path: {op: count}}, from each operation's location
                     (`jax.named_scope`; see `_count_scope`)
      n_inputs       the entry function's inputs (array leaves; static arguments are not inputs)
      donated_inputs those of them the program donates: `jit(..., donate_argnums=...)` writes
                     `tf.aliasing_output = k` on an input whose buffer output k reuses (or
                     `jax.buffer_donor` on one XLA may reuse); a donation no output can use is
                     dropped from the program (see `_donated`)
      fingerprint    sha256 of the module's text without locations
      hlo_lines      lines of the program compiled here
      collectives    {all-gather|all-reduce|reduce-scatter|all-to-all|collective-permute: count}
      flops, bytes_accessed   XLA's cost analysis (absent where the backend has none)
      platform       the backend it was compiled and run on, which the compiled facts are of
                     (the host's CPU, also where the grading machine has an accelerator)
      temp_bytes     the scratch memory XLA's buffer assignment gives the program (its memory
                     analysis' `temp_size_in_bytes`: intermediates, such as the residuals a
                     gradient keeps for its backward pass; not its arguments or outputs);
                     absent where the backend has none. Measured with jax 0.10.2: the CPU
                     reports it; a TPU v5e reports 0 for every program (there a requirement
                     on it judges nothing)
      compile_seconds         a cold compile of the artifact here (a new jit of the program)
      loops, counted_loops    while loops of the compiled program, and those with a trip count
                              XLA knows (`known_trip_count` in their backend_config)
      out_tree       only for a program exported with flattened outputs (see `export`): the
                     student's description of the output tree; `out` is then the list of leaves
      program_shingles  only with `shingles`: the module's normalised fingerprint for the
                     similarity report (`program_shingles`); no check reads it

    A program of more than `max_ops` operations is refused before compiling: compiling it here
    would cost the trusted side the time of a loop the student unrolled. The same program called
    again on inputs of the same types reuses the executable compiled the first time (its facts,
    `compile_seconds` included, are the first compile's); the program still runs on the new
    inputs, so its outputs must match again. "The same" is the same module without its locations
    (the fingerprint) and the same calling signature: two exports of one function differ only
    in their locations, which record where `export` was called from.

    Every artifact whose facts count must go through `analyse` (and its outputs be verified),
    not only the first: facts of an artifact that was not run describe nothing the grader saw.
    """
    import jax
    from jax import export as jax_export

    header, payload = _split(blob)
    try:
        exp = jax_export.deserialize(bytearray(payload))
        text = exp.mlir_module()
    except Exception:  # noqa: BLE001 - whatever the bytes are, they are not a program
        raise ProgramRefused("not a valid exported program") from None
    facts = inspect_module(text, shingles=shingles)
    if facts["n_ops"] > max_ops:
        raise ProgramRefused(
            f"the program has {facts['n_ops']} operations, more than the grader "
            f"compiles ({max_ops}); a Python loop unrolled while tracing repeats its body once per step"
        )
    if exp.ordered_effects or exp.unordered_effects:
        effects = ", ".join(sorted({type(e).__name__ for e in (*exp.ordered_effects, *exp.unordered_effects)}))
        raise ProgramRefused(f"the program has side effects ({effects}); the grader runs only pure programs")
    backend = jax.default_backend()
    if backend not in exp.platforms and not (backend == "gpu" and {"cuda", "rocm"} & set(exp.platforms)):
        raise ProgramRefused(f"the program was exported for {', '.join(exp.platforms)}, not for {backend}")
    facts["platform"] = backend  # what the compiled facts (HLO, FLOPs, temp bytes, compile time) were measured on
    if isinstance(header.get("out_tree"), str):
        facts["out_tree"] = header["out_tree"][:2000]
    kept = _inputs_for(exp, tuple(args), header.get("static"))

    key = (
        facts["fingerprint"],
        _calling_signature(exp),
        tuple(
            (
                tuple(getattr(x, "shape", ())),
                str(getattr(x, "dtype", type(x).__name__)),
                str(getattr(x, "sharding", "")),
            )
            for x in jax.tree.leaves(kept)
        ),
    )
    with _mesh_for(exp):
        if key in _COMPILED:  # the same module and signature at the same inputs' types: the same program
            compiled, measured = _COMPILED[key]
            _COMPILED.move_to_end(key)
        else:
            _warm_up()
            # No jax.clear_caches(): `jax.jit(exp.call)` is a new function, so its trace, lowering
            # and compilation are cold anyway, and clearing would make the reference (this
            # process's own module) compile everything again.
            t0 = time.perf_counter()
            try:
                compiled = jax.jit(exp.call).lower(*kept).compile()
            except Exception as exc:  # noqa: BLE001
                raise ProgramRefused(
                    f"the program does not compile here: {type(exc).__name__}: {_first_lines(exc)}"
                ) from None
            measured = {"compile_seconds": time.perf_counter() - t0, **compiled_facts(compiled)}
            _COMPILED[key] = (compiled, measured)
            while len(_COMPILED) > COMPILED_KEPT:
                _COMPILED.popitem(last=False)
        facts.update(measured)
        try:
            out = jax.block_until_ready(compiled(*kept))
        except Exception as exc:  # noqa: BLE001
            raise ProgramRefused(f"the program fails when run: {type(exc).__name__}: {_first_lines(exc)}") from None
    return facts, out


def fingerprint(blob: bytes) -> str:
    """The fingerprint of an exported program (see `analyse`), without compiling or running it.

    The module is still checked (an unsafe one raises ProgramRefused). Beware: a fingerprint
    alone says nothing about what the program computes; for a fact that counts (NoRetrace's
    "the same program for new values"), analyse the artifact on its inputs and verify its
    outputs, which costs one run when the bytes are the first artifact's (its executable is
    reused).
    """
    from jax import export as jax_export

    _, payload = _split(blob)
    try:
        text = jax_export.deserialize(bytearray(payload)).mlir_module()
    except Exception:  # noqa: BLE001
        raise ProgramRefused("not a valid exported program") from None
    return inspect_module(text)["fingerprint"]


_warmed = False


def _warm_up() -> None:
    """Once per process, compile and run a tiny exported program: the first compilation in a
    process also pays for initialising XLA's compiler (measured here: 0.7-2.7 s for a loop
    program that then compiles in 0.2-0.9 s), which is no fact about the program."""
    global _warmed
    if _warmed:
        return
    _warmed = True
    import jax
    import numpy as np
    from jax import export as jax_export

    try:
        x = np.zeros(3, np.float32)
        exp = jax_export.export(jax.jit(lambda v: jax.lax.fori_loop(0, 2, lambda i, c: c * 2.0 + 1.0, v)))(x)
        jax.block_until_ready(jax.jit(exp.call)(x))
    except Exception:  # noqa: BLE001 - a warm-up that fails changes nothing
        pass


def _calling_signature(exp: Any) -> str:
    """Everything of an `Exported` besides its module that the compiled call depends on."""
    fields = (
        "in_tree",
        "out_tree",
        "in_avals",
        "out_avals",
        "in_shardings_hlo",
        "out_shardings_hlo",
        "nr_devices",
        "platforms",
        "module_kept_var_idx",
        "uses_global_constants",
        "calling_convention_version",
        "_in_named_shardings",
        "_out_named_shardings",
    )
    return repr(tuple(str(getattr(exp, f, None)) for f in fields))


_SDY_MESH = re.compile(r"sdy\.mesh @[\w.$-]+ = <\[([^\]]*)\]")
_SDY_AXIS = re.compile(r'"([^"]+)"=(\d+)')


def _module_mesh(exp: Any, n: int) -> dict[str, int] | None:
    """The axes of the first mesh of `n` devices the program's module declares (Shardy's
    `sdy.mesh @name = <["data"=4, "model"=2]>`), by name and size; None where it declares none."""
    try:
        text = exp.mlir_module()
    except Exception:  # noqa: BLE001  # a module that cannot be printed: no mesh read from it
        return None
    for found in _SDY_MESH.finditer(text):
        axes = {name: int(size) for name, size in _SDY_AXIS.findall(found.group(1))}
        if axes and math.prod(axes.values()) == n:
            return axes
    return None


def _mesh_for(exp: Any) -> Any:
    """The context to call a multi-device program in: a mesh of this process's devices shaped
    like the one the program was exported with (JAX's calling convention for `Exported`s on
    Explicit meshes); nothing for a single-device program."""
    import contextlib

    import jax
    import numpy as np

    n = int(exp.nr_devices)
    if n <= 1:
        return contextlib.nullcontext()
    if n > jax.device_count():
        raise ProgramRefused(f"the program was exported for {n} devices; the grader has {jax.device_count()}")
    # the program's named shardings (private fields), else its avals' (Explicit axes put the
    # sharding in the type): the first mesh that has axes
    shardings = [
        *getattr(exp, "_in_named_shardings", ()),
        *getattr(exp, "_out_named_shardings", ()),
        *(getattr(a, "sharding", None) for a in (*exp.in_avals, *exp.out_avals)),
    ]
    named = [s for s in shardings if s is not None and not getattr(getattr(s, "mesh", None), "empty", True)]
    devices = jax.devices()[:n]
    try:
        if named:
            shape = named[0].mesh
            if int(np.prod(shape.axis_sizes)) != n:
                raise ProgramRefused(
                    f"the program's mesh {dict(zip(shape.axis_names, shape.axis_sizes))} does not have its {n} devices"
                )
            mesh = jax.make_mesh(
                tuple(shape.axis_sizes), tuple(shape.axis_names), axis_types=tuple(shape.axis_types), devices=devices
            )
        elif axes := _module_mesh(exp, n):
            # no argument's type names a mesh (a function that lays its arguments out inside,
            # then calls an inner jit with in/out shardings): the mesh the module itself declares
            mesh = jax.make_mesh(tuple(axes.values()), tuple(axes), devices=devices)
        else:
            mesh = jax.sharding.Mesh(np.array(devices), ("devices",))
    except ProgramRefused:
        raise
    except Exception as exc:  # noqa: BLE001
        raise ProgramRefused(f"the program's device mesh cannot be built here: {_first_lines(exc)}") from None
    return jax.set_mesh(mesh)


def _split(blob: bytes) -> tuple[dict[str, Any], bytes]:
    """The header (`static` positions or None, and `out_tree` for flattened outputs) and the
    exported bytes. The header is untrusted: it only says how to call the program."""
    blob = bytes(blob)
    if not blob.startswith(MAGIC):
        return {"static": None}, blob
    rest = blob[len(MAGIC) :]
    size = int.from_bytes(rest[:4], "big")
    if len(rest) < 4 + size or size > HEADER_LIMIT:
        raise ProgramRefused("not a valid exported program")
    try:
        header = json.loads(rest[4 : 4 + size])
        if not isinstance(header, dict):
            header = {}
    except ValueError:
        header = {}
    static = header.get("static")
    if not (isinstance(static, list) and all(type(i) is int for i in static)):
        header["static"] = None
    return header, rest[4 + size :]


def _first_lines(exc: BaseException) -> str:
    return "\n".join(str(exc).strip().splitlines()[:4])[:600]


# -- walking the module ----------------------------------------------------------------------


def inspect_module(text: str, shingles: bool = False) -> dict[str, Any]:
    """Count the operations of a StableHLO module (text) and refuse what will not be run.

    Walks every function and every region with JAX's MLIR bindings. Raises ProgramRefused for
    an operation outside ALLOWED_DIALECTS or in REFUSED_OPS, a custom call whose target is not
    in ALLOWED_CUSTOM_CALLS (or has the wrong calling convention), a function without a body,
    or recursive calls.

    `ops` and `n_ops_written` count each function once, as written; `n_ops` counts the
    operations of the entry function with every `call` replaced by its callee's operations,
    recursively: the size XLA compiles. JAX lowers repeated uses of one jitted helper (and of
    many jax.numpy and jax.random functions) as calls to one private function, so a Python loop
    over such a helper adds a `call` per step to `n_ops_written`, and the helper's whole body to
    `n_ops` (a Python loop of 64 `fold_in`s: 283 operations written, 4,819 run).

    With `shingles`, the facts also hold `program_shingles`: the entry function's normalised
    dataflow, calls inlined (`jaxlings.worker.dataflow.Shingler`), as a bounded sketch
    (`program_shingles`).
    """
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    ops: Counter[str] = Counter()
    targets: set[str] = set()
    scopes: dict[str, Counter[str]] = {}  # named scope -> {op: count}, from locations
    direct: Counter[str] = Counter()  # counted operations per function, calls included
    callees: dict[str, list[str]] = {}
    inputs: dict[str, tuple[int, int]] = {}  # function -> (inputs, donated inputs)
    public: list[str] = []
    defined: set[str] = set()
    functions: dict[str, Any] = {}  # name -> func.func, for the fingerprint (calls inlined)
    with mlir.make_ir_context():
        try:
            module = ir.Module.parse(text)
        except Exception:  # noqa: BLE001
            raise ProgramRefused("not a valid exported program") from None
        stack: list[tuple[Any, str]] = [(module.operation, "")]
        while stack:
            op, fn = stack.pop()
            name = op.name
            dialect = name.split(".", 1)[0]
            if dialect not in ALLOWED_DIALECTS or name in REFUSED_OPS:
                raise ProgramRefused(f"the program contains `{name}`, an operation the grader does not run")
            short = name.split(".", 1)[1] if "." in name else name
            ops[short] += 1
            if short not in BOOKKEEPING:
                direct[fn] += 1
                _count_scope(scopes, op, short)
            if name == "stablehlo.custom_call":
                targets.add(_check_custom_call(op))
            elif name == "stablehlo.scatter":
                ops[scatter_kind(op)] += 1
            elif name == "func.call":
                callees.setdefault(fn, []).append(_symbol(op, "callee"))
            elif name == "func.func":
                if not _has_body(op):
                    raise ProgramRefused(
                        "the program declares an external function; the grader runs only self-contained programs"
                    )
                fn = _symbol(op, "sym_name")
                defined.add(fn)
                functions[fn] = op
                inputs[fn] = _donated(op)
                if "sym_visibility" not in op.attributes or _symbol(op, "sym_visibility") == "public":
                    public.append(fn)
            for region in op.regions:
                for block in region:
                    stack.extend((o.operation, fn) for o in reversed(list(block)))
        stripped = cast(str, module.operation.get_asm(enable_debug_info=False))  # jaxlib's stub says `object`
        entry = "main" if "main" in public else (public[0] if public else None)
        if entry is None:
            raise ProgramRefused("the program has no public entry function")
        n_ops = _inlined(entry, direct, callees, defined)
        found = dataflow.sketch(functions, entry) if shingles else None
        extra = {"program_shingles": found} if found is not None else {}
    written = sum(n for k, n in ops.items() if k not in BOOKKEEPING and not k.startswith("scatter-"))
    return {
        "ops": dict(sorted(ops.items())),
        "n_ops": n_ops,
        "n_ops_written": written,
        "custom_calls": sorted(targets),
        "n_inputs": inputs.get(entry, (0, 0))[0],
        "donated_inputs": inputs.get(entry, (0, 0))[1],
        "fingerprint": hashlib.sha256(stripped.encode()).hexdigest(),
        "scopes": {k: dict(sorted(v.items())) for k, v in sorted(scopes.items())},
        **extra,
    }


MAX_SCOPES = 200  # distinct scope paths kept in the facts (the rest are not recorded)
_NAME_LOC = re.compile(r'loc\("((?:[^"\\]|\\.)*)"')
_WRAPPED = re.compile(r"[A-Za-z_][\w.]*\((.*)\)")


def _count_scope(scopes: dict[str, Counter[str]], op: Any, short: str) -> None:
    """Count `op` under its named scope: JAX names each operation's location
    `jit(f)/<scope>/.../<primitive>` (`jax.named_scope`; a transform wraps it, as in
    `transpose(jvp(dense1))`). The scope path is what lies between the leading `jit(...)` and
    the primitive, wrappers removed: `dense1`, `mlp/dense1` (a call to a jitted helper such as
    `jax.nn.relu` reads `dense1/jit(relu)`: a `call` in `dense1`). Operations without one are
    not counted."""
    match = _NAME_LOC.match(str(op.location))
    if match is None:
        return
    parts = [p for p in match.group(1).split("/") if p]
    if parts and parts[0].startswith(("jit(", "pjit(")):
        parts = parts[1:]
    if len(parts) < 2:
        return
    names = []
    for part in parts[:-1]:
        while (inner := _WRAPPED.fullmatch(part)) is not None:
            part = inner.group(1)
        names.append(part[:100])
    path = "/".join(names)[:300]
    if path in scopes or len(scopes) < MAX_SCOPES:
        scopes.setdefault(path, Counter())[short] += 1


DONATION_ATTRIBUTES = ("tf.aliasing_output", "jax.buffer_donor")
"""Argument attributes by which a lowered jit marks a donated input: aliased to output k, or
a buffer XLA may reuse for any output (jax 0.10 and 0.11)."""


def _donated(func: Any) -> tuple[int, int]:
    """(inputs, donated inputs) of a `func.func`, from its argument attributes. Donation lives
    in the program itself: `jax.jit(f, donate_argnums=...)` lowers it to these attributes, and
    `jax.export` keeps them, so the trusted side reads it from the artifact (a jit the grader
    wraps around an undonated function carries none)."""
    from jax._src.lib.mlir import ir

    try:
        n = len(ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value).inputs)
    except Exception:  # noqa: BLE001 - malformed: no inputs to speak of
        return 0, 0
    if "arg_attrs" not in func.attributes:
        return n, 0
    try:
        per_arg = [ir.DictAttr(a) for a in ir.ArrayAttr(func.attributes["arg_attrs"])]
    except Exception:  # noqa: BLE001
        return n, 0
    return n, sum(1 for attrs in per_arg[:n] if any(name in attrs for name in DONATION_ATTRIBUTES))


def _symbol(op: Any, attr: str) -> str:
    """A symbol-valued attribute (`sym_name`, `callee`, `sym_visibility`) as plain text."""
    text = str(op.attributes[attr])
    return text.lstrip("@").strip('"')


def _inlined(entry: str, direct: Counter[str], callees: dict[str, list[str]], defined: set[str]) -> int:
    """Operations of `entry` with every call replaced by its callee's, recursively."""
    size: dict[str, int] = {}
    active: set[str] = set()

    def visit(fn: str) -> int:
        if fn in size:
            return size[fn]
        if fn in active:
            raise ProgramRefused("the program's functions call themselves recursively")
        if fn not in defined:
            raise ProgramRefused(f"the program calls `{fn}`, a function it does not define")
        active.add(fn)
        size[fn] = direct[fn] + sum(visit(c) for c in callees.get(fn, ()))
        active.discard(fn)
        return size[fn]

    return visit(entry)


def _check_custom_call(op: Any) -> str:
    """The custom call's target, if it is allowed; ProgramRefused otherwise."""
    from jax._src.lib.mlir import ir

    try:
        target = ir.StringAttr(op.attributes["call_target_name"]).value
    except Exception:  # noqa: BLE001
        raise ProgramRefused("the program has a custom call without a target") from None
    if target not in ALLOWED_CUSTOM_CALLS:
        if "callback" in target.lower():
            raise ProgramRefused(CALLBACK_MESSAGE + f" (custom call `{target}`)")
        raise ProgramRefused(
            f"the program calls `{target}`, a custom call the grader does not run; compute with jax.numpy / lax"
        )
    if ALLOWED_CUSTOM_CALLS[target] == TYPED_FFI and not _is_typed_ffi(op):
        raise ProgramRefused(f"the program calls `{target}` with a calling convention other than XLA's typed FFI")
    return target


def _is_typed_ffi(op: Any) -> bool:
    """Whether a custom call uses XLA's typed FFI: `api_version = 4`, or, as JAX writes it, the
    default version with its attributes in a dictionary `mhlo.backend_config` (XLA turns those
    into typed-FFI calls)."""
    from jax._src.lib.mlir import ir

    attrs = op.attributes
    try:
        api = ir.IntegerAttr(attrs["api_version"]).value if "api_version" in attrs else 1
    except Exception:  # noqa: BLE001
        return False
    if api == TYPED_FFI:
        return True
    if api != 1 or "mhlo.backend_config" not in attrs:
        return False
    try:
        ir.DictAttr(attrs["mhlo.backend_config"])
    except Exception:  # noqa: BLE001 - not a dictionary: the legacy, opaque-string convention
        return False
    return True


def _has_body(op: Any) -> bool:
    return any(len(list(block)) for region in op.regions for block in region)


# -- the compiled program --------------------------------------------------------------------


def compiled_facts(compiled: Any) -> dict[str, Any]:
    """Facts of a program compiled here: HLO lines, collectives, loops, XLA's cost and memory
    analyses."""
    hlo = compiled.as_text() or ""
    loops = [line for line in hlo.splitlines() if re.search(r"=\s.*\bwhile\(", line)]
    facts = {
        "hlo_lines": hlo.count("\n"),
        "collectives": dict(Counter(re.findall(COLLECTIVES, hlo))),
        "loops": len(loops),
        "counted_loops": sum(1 for line in loops if '"known_trip_count"' in line),
    }
    facts.update(_costs(compiled))
    facts.update(_memory(compiled))
    return facts


def _costs(compiled: Any) -> dict[str, float]:
    """FLOPs and bytes accessed from XLA's cost analysis (absent where a backend has none)."""
    try:
        cost = compiled.cost_analysis()
    except Exception:  # noqa: BLE001 - not every backend implements it
        return {}
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else {}
    return {
        k: float(cost[src])
        for k, src in (("flops", "flops"), ("bytes_accessed", "bytes accessed"))
        if src in (cost or {})
    }


def _memory(compiled: Any) -> dict[str, int]:
    """The program's temp (scratch) bytes from XLA's memory analysis (absent where a backend
    has none)."""
    try:
        memory = compiled.memory_analysis()
    except Exception:  # noqa: BLE001 - not every backend implements it
        return {}
    temp = getattr(memory, "temp_size_in_bytes", None)
    return {"temp_bytes": int(temp)} if isinstance(temp, int) and temp >= 0 else {}


# -- matching the arguments to the program's inputs ------------------------------------------


def _inputs_for(exp: Any, args: tuple[Any, ...], static: list[int] | None) -> tuple[Any, ...]:
    """The arguments the exported program takes: `args` less the static ones, checked leaf by
    leaf against the program's `in_tree` and `in_avals`."""
    import jax

    try:
        pos_tree, kw_tree = exp.in_tree.children()
        n_kept = len(pos_tree.children())
    except Exception:  # noqa: BLE001
        raise ProgramRefused("not a valid exported program") from None
    if kw_tree.num_leaves or kw_tree.children():
        raise ProgramRefused("the program takes keyword arguments; the grader calls it positionally")
    n = len(args)
    if n_kept > n:
        raise ProgramRefused(f"the program takes {n_kept} arguments, the call has {n}")
    candidates: list[tuple[int, ...]] = []
    if static is not None and all(0 <= i < n for i in static):
        candidates.append(tuple(i for i in range(n) if i not in static))
    python = [i for i in range(n) if not _is_array(args[i])]
    for dropped in itertools.combinations(python, n - n_kept):
        candidates.append(tuple(i for i in range(n) if i not in dropped))
    for keep in candidates:
        kept = tuple(args[i] for i in keep)
        leaves, tree = jax.tree.flatten((kept, {}))
        if (
            tree == exp.in_tree
            and len(leaves) == len(exp.in_avals)
            and all(_matches(leaf, aval) for leaf, aval in zip(leaves, exp.in_avals))
        ):
            return kept
    want = ", ".join(str(a) for a in exp.in_avals)
    raise ProgramRefused(f"the program's inputs ({want}) do not match the call's arguments")


def _is_array(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _matches(leaf: Any, aval: Any) -> bool:
    """Whether `leaf` (an argument's leaf) has the program input's shape and dtype."""
    import jax
    import numpy as np

    if _is_array(leaf):
        return tuple(leaf.shape) == tuple(aval.shape) and str(leaf.dtype) == str(aval.dtype)
    if isinstance(leaf, (bool, int, float, complex)) and not isinstance(leaf, np.generic):
        kind = {bool: np.bool_, int: np.int64, float: np.float64, complex: np.complex128}[type(leaf)]
        return tuple(aval.shape) == () and str(jax.dtypes.canonicalize_dtype(kind)) == str(aval.dtype)
    return False
