"""`jaxlings.worker.program`: a jitted call exported by the student's side, analysed, refused or
run by the trusted side.

Each fact on a tiny function; the refusal of host callbacks (at export), of forged custom calls
and of garbage (at analysis, before anything is compiled); outputs equal to the function's. The
multi-device case runs in a subprocess with 8 CPU devices (marked slow).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from helpers.grading import ROOT
from jaxlings.worker import program
from jaxlings.worker.program import ProgramRefused


def roundtrip(fn, *args, static=()):
    """(facts, outputs, the function's own jitted outputs) of `fn(*args)`."""
    jitted = jax.jit(fn, static_argnums=static)
    facts, out = program.analyse(program.export(jitted, args), args)
    return facts, out, jitted(*args)


def same(a, b) -> bool:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)

    def data(x):
        return (
            np.asarray(jax.random.key_data(x)) if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else np.asarray(x)
        )

    return len(la) == len(lb) and all(np.array_equal(data(x), data(y)) for x, y in zip(la, lb))


X = jnp.arange(6.0, dtype=jnp.float32)
IDX = jnp.array([4, 1], jnp.int32)
VALS = jnp.array([10.0, -1.0], jnp.float32)


def test_scatters_are_counted_by_kind_and_outputs_are_the_functions():
    facts, out, mine = roundtrip(
        lambda x, i, v: (
            x.at[i].add(v),
            x.at[i].set(v),
            x.at[i].min(v),
            x.at[i].max(v),
            x.at[i].multiply(v),
            x.at[i].apply(jnp.sin),
        ),
        X,
        IDX,
        VALS,
    )
    ops = facts["ops"]
    assert ops["scatter"] == 6
    assert [
        ops[k] for k in ("scatter-add", "scatter-set", "scatter-min", "scatter-max", "scatter-mul", "scatter-apply")
    ] == [1] * 6
    assert same(out, mine)
    assert (
        facts["n_ops"]
        == facts["n_ops_written"]
        == sum(n for k, n in ops.items() if k not in program.BOOKKEEPING and not k.startswith("scatter-"))
    )
    assert facts["custom_calls"] == [] and facts["collectives"] == {} and facts["loops"] == 0


def test_a_histogram_with_a_static_size_is_one_scatter_add():
    x = jnp.array([1, 3, 1, 0], jnp.int32)
    facts, out, _ = roundtrip(lambda x, n: jnp.zeros(n, jnp.int32).at[x].add(1), x, 4, static=(1,))
    assert facts["ops"].get("scatter-add") == 1 and "scatter-set" not in facts["ops"]
    assert out.tolist() == [1, 2, 0, 1]


def test_scan_and_fori_loop_are_counted_while_loops_a_data_dependent_while_is_not():
    scan, out, mine = roundtrip(lambda xs: lax.scan(lambda c, x: (c + x, c), 0.0, xs), X)
    assert scan["ops"]["while"] == 1 and (scan["loops"], scan["counted_loops"]) == (1, 1) and same(out, mine)
    fori, out, _ = roundtrip(lambda x, n: lax.fori_loop(0, n, lambda i, c: 2.0 * c, x), X, 5, static=(1,))
    assert (fori["loops"], fori["counted_loops"]) == (1, 1) and np.allclose(out, 32 * X)
    data, out, _ = roundtrip(lambda x: lax.while_loop(lambda c: jnp.max(c) < 100.0, lambda c: 2.0 * c, x), X + 1)
    assert data["ops"]["while"] == 1 and (data["loops"], data["counted_loops"]) == (1, 0)
    assert np.allclose(out, 32 * (X + 1))


def test_cond_is_a_case_and_a_solve_is_an_allowed_lapack_custom_call():
    facts, out, mine = roundtrip(
        lambda p, a, b: lax.cond(p > 0, lambda: b, lambda: jnp.linalg.solve(a, b)), -1.0, 2 * jnp.eye(3), jnp.ones(3)
    )
    assert facts["ops"]["case"] == 1
    assert any(t.startswith("lapack_") for t in facts["custom_calls"])
    assert np.allclose(out, 0.5) and same(out, mine)
    assert (
        facts["flops"] > 0 and facts["bytes_accessed"] > 0 and facts["hlo_lines"] > 10 and facts["compile_seconds"] > 0
    )


def test_a_python_loop_over_a_jitted_helper_counts_its_body_once_per_step():
    helper = jax.jit(lambda v: jnp.sin(v) * 2.0 + 1.0)

    def looped(x, n):
        for _ in range(n):
            x = helper(x)
        return x

    small, _, _ = roundtrip(looped, X, 1, static=(1,))
    large, _, _ = roundtrip(looped, X, 8, static=(1,))
    assert large["ops"]["call"] == 8 and large["n_ops_written"] - small["n_ops_written"] == 7  # one call per step
    assert large["n_ops"] >= 8 * (small["n_ops"] - 1)  # the whole body per step


def test_fingerprints_equal_for_new_values_and_differ_for_baked_in_constants():
    jitted = jax.jit(lambda x, scale: x * scale, static_argnums=(1,))
    a = program.fingerprint(program.export(jitted, (X, 2.0)))
    assert a == program.fingerprint(program.export(jitted, (X + 7.0, 2.0)))
    assert a != program.fingerprint(program.export(jitted, (X, 3.0)))
    facts, out = program.analyse(program.export(jitted, (X, 3.0)), (X + 1.0, 3.0))
    assert np.allclose(out, 3.0 * (X + 1.0)) and facts["fingerprint"] != a


def test_static_arguments_are_dropped_from_the_inputs_with_or_without_the_header():
    def f(x, a, n, b):
        return x * a + n + b

    args = (X, 2.0, 3, 4.0)
    blob = program.export(jax.jit(f, static_argnums=(2,)), args)
    assert program.analyse(blob, args)[1].tolist() == (X * 2 + 7).tolist()
    bare = blob[len(program.MAGIC) + 4 + int.from_bytes(blob[len(program.MAGIC) : len(program.MAGIC) + 4], "big") :]
    assert program.analyse(bare, args)[1].tolist() == (X * 2 + 7).tolist()  # matched by the inputs' types
    header = b'{"static": [0]}'  # a lie: position 0 is an array the program takes
    lying = program.MAGIC + len(header).to_bytes(4, "big") + header + bare
    assert program.analyse(lying, args)[1].tolist() == (X * 2 + 7).tolist()
    traced_float = program.export(jax.jit(f, static_argnums=(1,)), (X, 2.0, 3.0, 4.0))
    assert program.analyse(traced_float, (X, 2.0, 3.0, 4.0))[1].tolist() == (X * 2 + 7).tolist()


def test_typed_keys_in_and_out():
    key = jax.random.key(3)
    facts, out, mine = roundtrip(lambda k, n: (jax.random.split(k, n), jax.random.normal(k, (n,))), key, 4, static=(1,))
    assert jax.dtypes.issubdtype(out[0].dtype, jax.dtypes.prng_key) and same(out, mine)
    assert facts["loops"] >= 1  # threefry's rounds


def test_a_custom_primitive_is_the_operations_of_its_lowering():
    from jax.extend.core import Primitive
    from jax.interpreters import mlir

    p = Primitive("test_multiply_add")

    def fma(x, y, z):
        return x * y + z

    p.def_impl(fma)
    p.def_abstract_eval(lambda x, y, z: jax.core.ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(p, mlir.lower_fun(fma, multiple_results=False))
    facts, out, _ = roundtrip(lambda x, y, z: p.bind(x, y, z), X, X, X)
    assert {"multiply", "add"} <= set(facts["ops"]) and facts["custom_calls"] == []
    assert np.allclose(out, X * X + X)


def _sgd_step(state, x):
    """A train step's shape: a new state like the old one, and a loss."""
    return jax.tree.map(lambda a: a - 0.1 * jnp.mean(x), state), jnp.sum(x)


STATE = {"b": jnp.zeros((), jnp.float32), "w": jnp.ones(3, jnp.float32)}


def test_donation_is_read_from_the_program_and_judged_by_donates():
    from jaxlings.grading.requirements import Donates

    def facts_of(jitted):
        state = jax.tree.map(jnp.copy, STATE)  # a donating call deletes what it is given
        facts, out = program.analyse(program.export(jitted, (state, X)), (jax.tree.map(jnp.copy, STATE), X))
        assert same(out, _sgd_step(STATE, X))  # the program runs; donation changes no value
        return facts

    donating = facts_of(jax.jit(_sgd_step, donate_argnums=(0,)))
    plain = facts_of(jax.jit(_sgd_step))
    assert (donating["n_inputs"], donating["donated_inputs"]) == (3, 2)  # b, w donated; x not
    assert (plain["n_inputs"], plain["donated_inputs"]) == (3, 0)
    assert donating["fingerprint"] != plain["fingerprint"]  # the aliasing is part of the program

    assert Donates().judge(donating, donating) is None
    message = Donates().judge(plain, donating)
    assert "donates none of its 3 inputs" in message and "donate_argnums" in message
    assert "the reference's program donates 2" in message
    assert Donates(at_least=2).judge(donating, {}) is None
    assert "donates only 2 of its 3 inputs, at least 3 wanted;" in Donates(at_least=3).judge(donating, {})


def _deep_loss(W, x, remat):
    step = lambda h, w: (jnp.tanh(h @ w), None)  # noqa: E731 - one layer
    h, _ = lax.scan(jax.checkpoint(step) if remat else step, x, W)
    return jnp.sum(h**2)


def test_temp_bytes_is_read_from_the_compiled_program_and_judged_by_temp_bytes_at_most():
    from jaxlings.grading.requirements import TempBytesAtMost

    W = jnp.full((16, 32, 32), 0.05, jnp.float32)
    x = jnp.ones((64, 32), jnp.float32)

    def facts_of(remat):
        fn = jax.grad(lambda W, x: _deep_loss(W, x, remat))
        facts, out, own = roundtrip(fn, W, x)
        assert np.allclose(out, own, rtol=1e-5, atol=1e-6)
        return facts

    kept, recomputed = facts_of(False), facts_of(True)
    # the backward pass keeps 16 layers' (64, 32) activations, 8 KiB each, or recomputes them
    # from the 16 layer inputs a checkpointed scan saves: measured 422,084 against 159,940 on the CPU
    assert recomputed["temp_bytes"] > 0 and kept["temp_bytes"] > 1.5 * recomputed["temp_bytes"]
    assert jax.default_backend() != "cpu" or kept["temp_bytes"] > 16 * 64 * 32 * 4

    assert TempBytesAtMost(1.2, 0).judge(recomputed, recomputed) is None
    assert TempBytesAtMost(1.2, 0).judge(recomputed, kept) is None
    message = TempBytesAtMost(1.2, 0, "keep fewer intermediates").judge(kept, recomputed)
    assert f"needs {kept['temp_bytes']:,} bytes of temporary memory, the reference's {recomputed['temp_bytes']:,}" in (
        message
    )
    assert message.endswith(": keep fewer intermediates")
    assert TempBytesAtMost(1.2, float(kept["temp_bytes"])).judge(kept, recomputed) is None  # the slack
    assert TempBytesAtMost().judge({}, recomputed) is None  # a backend without the fact: no verdict
    assert TempBytesAtMost().judge(kept, {}) is None
    assert "temporary bytes" in TempBytesAtMost(2, 65536).describe()


def test_a_donation_no_output_can_use_is_not_in_the_program():
    # jit warns "Some donated buffers were not usable" and drops it: the program donates nothing
    with pytest.warns(UserWarning, match="donated buffers were not usable"):
        blob = program.export(jax.jit(lambda a: jnp.sum(a), donate_argnums=(0,)), (X,))
    facts, _ = program.analyse(blob, (X,))
    assert (facts["n_inputs"], facts["donated_inputs"]) == (1, 0)


def test_an_unregistered_output_pytree_is_exported_flattened():
    @jax.tree_util.register_dataclass
    @dataclasses.dataclass
    class Pair:
        a: jax.Array
        b: jax.Array

    facts, out, mine = roundtrip(lambda x: Pair(x + 1, 2 * x), X)
    assert isinstance(out, list) and same(out, jax.tree.leaves(mine))
    assert "Pair" in facts["out_tree"]


# -- refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda x: jax.pure_callback(lambda v: np.sin(v), jax.ShapeDtypeStruct(x.shape, x.dtype), x),
        lambda x: (jax.debug.print("x = {}", x), x + 1)[1],
    ],
)
def test_host_callbacks_cannot_be_exported(make):
    with pytest.raises(ProgramRefused, match="calls back to the host"):
        program.export(jax.jit(make), (X,))


def test_tracing_errors_are_the_students_and_pass_through():
    with pytest.raises(jax.errors.TracerBoolConversionError):
        program.export(jax.jit(lambda x: x if x[0] > 0 else -x), (X,))


@pytest.mark.parametrize(
    "blob", [b"", b"garbage" * 10, program.MAGIC + b"\x00\x00\x00\x02{}" + b"junk", program.MAGIC + b"\xff\xff\xff\xff"]
)
def test_garbage_is_not_a_program(blob):
    with pytest.raises(ProgramRefused, match="not a valid exported program"):
        program.analyse(blob, (X,))


def test_a_truncated_export_is_not_a_program():
    blob = program.export(jax.jit(lambda x: x + 1), (X,))
    with pytest.raises(ProgramRefused, match="not a valid exported program"):
        program.analyse(blob[: len(blob) // 2], (X,))


def forged(module_text: str) -> bytes:
    """A serialized export of `x -> x + 1` on f32[6] whose module is replaced by `module_text`."""
    from jax import export as jax_export
    from jax._src.export import _export
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    exp = jax_export.export(jax.jit(lambda x: x + 1))(X)
    with mlir.make_ir_context():
        module = ir.Module.parse(module_text)
        data = _export._module_to_bytecode(module)
    return bytes(dataclasses.replace(exp, mlir_module_serialized=data).serialize())


def with_op(op_line: str) -> str:
    return textwrap.dedent(f"""
        module @jit_forged attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}} {{
          func.func public @main(%arg0: tensor<6xf32>) -> (tensor<6xf32>) {{
            {op_line}
            return %0 : tensor<6xf32>
          }}
        }}""")


CALLBACK = (
    "%0 = stablehlo.custom_call @xla_python_cpu_callback(%arg0) {api_version = 2 : i32, "
    'backend_config = "140737488355328", has_side_effect = true} : (tensor<6xf32>) -> tensor<6xf32>'
)
LEGACY_LAPACK = (
    '%0 = stablehlo.custom_call @lapack_sgetrf_ffi(%arg0) {api_version = 2 : i32, backend_config = "6"} '
    ": (tensor<6xf32>) -> tensor<6xf32>"
)
TRITON = (
    "%0 = stablehlo.custom_call @__gpu$xla.gpu.triton(%arg0) {api_version = 4 : i32} : (tensor<6xf32>) -> tensor<6xf32>"
)


@pytest.mark.parametrize(
    "line, message",
    [
        (CALLBACK, "calls back to the host"),
        (LEGACY_LAPACK, "calling convention"),
        (TRITON, "custom call the grader does not run"),
    ],
)
def test_forged_custom_calls_are_refused_before_anything_compiles(line, message, monkeypatch):
    blob = forged(with_op(line))

    def no_compiling(*args, **kwargs):
        raise AssertionError("a refused program reached jax.jit")

    monkeypatch.setattr(jax, "jit", no_compiling)
    with pytest.raises(ProgramRefused, match=message):
        program.analyse(blob, (X,))
    with pytest.raises(ProgramRefused, match=message):
        program.fingerprint(blob)


def test_a_forged_program_of_allowed_ops_runs_and_its_outputs_are_its_own():
    blob = forged(with_op("%0 = stablehlo.multiply %arg0, %arg0 : tensor<6xf32>"))
    facts, out = program.analyse(blob, (X,))
    assert np.allclose(out, X * X) and facts["ops"]["multiply"] == 1  # not x + 1: the grader compares outputs


def test_outfeed_and_recursion_are_refused():
    outfeed = textwrap.dedent("""
        module @jit_forged {
          func.func public @main(%arg0: tensor<6xf32>) -> (tensor<6xf32>) {
            %t = stablehlo.create_token : !stablehlo.token
            %1 = "stablehlo.outfeed"(%arg0, %t) {outfeed_config = ""} : (tensor<6xf32>, !stablehlo.token) -> !stablehlo.token
            return %arg0 : tensor<6xf32>
          }
        }""")
    with pytest.raises(ProgramRefused, match=r"stablehlo\.outfeed"):
        program.inspect_module(outfeed)
    recursive = textwrap.dedent("""
        module @jit_forged {
          func.func public @main(%arg0: tensor<6xf32>) -> (tensor<6xf32>) {
            %0 = func.call @f(%arg0) : (tensor<6xf32>) -> tensor<6xf32>
            return %0 : tensor<6xf32>
          }
          func.func private @f(%arg0: tensor<6xf32>) -> (tensor<6xf32>) {
            %0 = func.call @f(%arg0) : (tensor<6xf32>) -> tensor<6xf32>
            return %0 : tensor<6xf32>
          }
        }""")
    with pytest.raises(ProgramRefused, match="recursively"):
        program.inspect_module(recursive)


def test_a_program_too_large_to_compile_is_refused():
    blob = program.export(jax.jit(lambda x: jnp.sin(x) + jnp.cos(x) * 2.0), (X,))
    with pytest.raises(ProgramRefused, match="more than the grader compiles"):
        program.analyse(blob, (X,), max_ops=2)


def test_inputs_that_do_not_fit_the_program_are_refused():
    blob = program.export(jax.jit(lambda x: x + 1), (X,))
    with pytest.raises(ProgramRefused, match="do not match"):
        program.analyse(blob, (jnp.ones(7),))


def test_the_same_bytes_compile_once_and_run_on_new_values():
    jitted = jax.jit(lambda x: jnp.cumsum(x) * 2.0)
    blob = program.export(jitted, (X,))
    first, out1 = program.analyse(blob, (X,))
    again, out2 = program.analyse(program.export(jitted, (X + 1,)), (X + 1,))
    assert again["compile_seconds"] == first["compile_seconds"]  # the cached executable
    assert np.allclose(out2, jnp.cumsum(X + 1) * 2.0) and not np.allclose(out1, out2)


# -- many devices ----------------------------------------------------------------------------

SHARDED = textwrap.dedent("""
    import json
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P
    from jaxlings.worker import program

    @jax.jit
    def standardize(x):
        mesh = jax.make_mesh((8,), ("data",))
        def local(xb):
            mean = jax.lax.psum(jnp.sum(xb, axis=0), "data") / x.shape[0]
            return xb - mean
        x = jax.device_put(x, NamedSharding(mesh, P("data", None)))
        return jax.shard_map(local, mesh=mesh, in_specs=P("data", None), out_specs=P("data", None))(x)

    @jax.jit
    def mlp(x, w1, w2):
        mesh = jax.make_mesh((4, 2), ("data", "model"))
        x = jax.device_put(x, NamedSharding(mesh, P("data", None)))
        w1 = jax.device_put(w1, NamedSharding(mesh, P(None, "model")))
        w2 = jax.device_put(w2, NamedSharding(mesh, P("model", None)))
        return jnp.matmul(jax.nn.relu(x @ w1), w2, out_sharding=NamedSharding(mesh, P("data", None)))

    rng = np.random.default_rng(0)
    report = {}
    for name, fn, args in [
        ("standardize", standardize, (jax.device_put(rng.normal(size=(32, 3)).astype(np.float32)),)),
        ("mlp", mlp, tuple(jax.device_put(rng.normal(size=s).astype(np.float32)) for s in ((16, 4), (4, 8), (8, 4)))),
    ]:
        facts, out = program.analyse(program.export(fn, args), args)
        report[name] = {"ops": facts["ops"], "collectives": facts["collectives"],
                        "same": bool(np.allclose(np.asarray(out), np.asarray(fn(*args)), atol=1e-5)),
                        "devices": len(out.sharding.device_set), "spec": str(out.sharding.spec)}
    print(json.dumps(report))
""")


@pytest.mark.slow
def test_shard_map_and_named_shardings_on_eight_devices():
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "JAX_NUM_CPU_DEVICES": "8",
        "XLA_FLAGS": "--xla_force_host_platform_device_count=8",
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(
        [sys.executable, "-c", SHARDED], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    import json

    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["standardize"]["ops"].get("manual_computation") == 1
    assert report["standardize"]["collectives"] == {"all-reduce": 1}
    assert report["mlp"]["collectives"] == {"all-reduce": 1} and report["mlp"]["ops"].get("sharding_constraint")
    for r in report.values():
        assert r["same"] and r["devices"] == 8 and "data" in r["spec"]


# -- the similarity report's fingerprint (`program_shingles`) ------------------------------------


def shingles_of(fn, *args, static=()):
    """The sketch the trusted side records for `fn(*args)`: analysed with `shingles`."""
    facts, _ = program.analyse(program.export(jax.jit(fn, static_argnums=static), args), args, shingles=True)
    return set(facts["program_shingles"])


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b)


def lookup(x, idx, vals, fill):
    n = x.shape[0]
    inside = idx < n
    safe = jnp.where(inside, idx, 0)
    looked_up = jnp.where(inside, x[safe], fill)
    clamped = x.at[jnp.minimum(idx, n - 1)].add(vals)
    return looked_up, clamped


def lookup_disguised(acc, where_, upd, default):
    # every name changed, two independent statements swapped, a dead line, other constants,
    # a commuted product, a named scope: the program's dataflow is the same
    size = acc.shape[0]
    ok = where_ < size
    scratch = acc * 2.0  # dead: jit drops it
    with jax.named_scope("mine"):
        out2 = acc.at[jnp.minimum(where_, size - 1)].add(upd)
        idx0 = jnp.where(ok, where_, 0)
    out1 = jnp.where(ok, acc[idx0], default)
    del scratch
    return out1, out2


def lookup_other_algorithm(x, idx, vals, fill):
    n = x.shape[0]
    onehot = (idx[:, None] == jnp.arange(n)[None, :]).astype(x.dtype)
    looked_up = jnp.where(idx < n, onehot @ x, fill)
    clamped = x + jnp.clip(idx, 0, n - 1)[:, None].__eq__(jnp.arange(n)).astype(x.dtype).T @ vals
    return looked_up, clamped


def test_the_fingerprint_survives_renaming_reordering_and_dead_code_and_sees_another_algorithm():
    args = (X, jnp.array([4, 9, 1], jnp.int32), jnp.array([10.0, -1.0, 2.0], jnp.float32), -1.0)
    mine = shingles_of(lookup, *args)
    assert 0 < len(mine) <= program.SHINGLES_KEPT
    assert shingles_of(lookup_disguised, *args) == mine
    assert jaccard(shingles_of(lookup_other_algorithm, *args), mine) < 0.3
    # operand order of a commutative operation, and constants' values, are not in it
    assert shingles_of(lambda x: 2.0 * x + 1.0, X) == shingles_of(lambda y: 3.0 + y * 5.0, X)
    assert shingles_of(lambda x: x * 2.0 - 1.0, X) != shingles_of(lambda x: 1.0 - x * 2.0, X)


M = jnp.arange(16.0, dtype=jnp.float32).reshape(4, 4)
COUNTED = jnp.array([3, 0, 5, 1, 1, 2], jnp.int32)

EQUIVALENT = {
    "where / select": (
        lambda x: jnp.where(x > 1.0, x * 3.0, 0.0) + jnp.sin(x),
        lambda x: lax.select(x > 1.0, x * 3.0, jnp.zeros_like(x)) + jnp.sin(x),
        (X,),
    ),
    "+ 0, * 1, a no-op astype": (
        lambda x: jnp.sin(x) * 2.0 + x,
        lambda x: ((jnp.sin(x) * 2.0 + 0.0) * 1.0).astype(jnp.float32) + x,
        (X,),
    ),
    "** 2 / lax.pow": (lambda x: jnp.sin(x) ** 2 + x, lambda x: lax.pow(jnp.sin(x), 2.0) + x, (X,)),
    "** 3 / three products (one sin)": (
        lambda x: jnp.sin(x) ** 3 + x,
        lambda x: jnp.sin(x) * jnp.sin(x) * jnp.sin(x) + x,
        (X,),
    ),
    "a.T @ b / einsum": (lambda a, b: a.T @ b, lambda a, b: jnp.einsum("ji,jk->ik", a, b), (M, M)),
    "fori_loop / scan": (
        lambda x: lax.fori_loop(0, 6, lambda i, c: c * 0.5 + x[i], jnp.zeros(())),
        lambda x: lax.scan(lambda c, xi: (c * 0.5 + xi, None), jnp.zeros(()), x)[0],
        (X,),
    ),
    "fori_loop / scan over arange": (
        lambda x: lax.fori_loop(0, x.size, lambda i, acc: acc.at[x[i]].add(1), jnp.zeros(8, jnp.int32)),
        lambda x: lax.scan(lambda c, i: (c.at[x[i]].add(1), None), jnp.zeros(8, jnp.int32), jnp.arange(0, x.size))[0],
        (COUNTED,),
    ),
    "/ 2 / * 0.5": (lambda x: jnp.sin(x) / 2.0, lambda x: jnp.sin(x) * 0.5, (X,)),
    "x - y / x + (-y)": (lambda x, y: x - jnp.sin(y), lambda x, y: x + (-jnp.sin(y)), (X, X)),
    "x > 1 / 1 < x": (lambda x: jnp.where(x > 1.0, x, -x), lambda x: jnp.where(1.0 < x, x, -x), (X,)),
}


@pytest.mark.parametrize("forms", list(EQUIVALENT), ids=list(EQUIVALENT))
def test_the_fingerprint_reads_equivalent_forms_as_one(forms):
    """What a rewrite swaps in computes alike and fingerprints alike: calls inlined (`jnp.where`
    is a call of a private function), identities and no-op conversions gone, powers as products,
    common subexpressions one, comparisons one way round, a loop's carried values by what they
    start from. Before, every pair but the comparison's differed: they shared 7-71% of their
    sketch (`where`/`select` 42%)."""
    one, other, args = EQUIVALENT[forms]
    assert same(jax.jit(one)(*args), jax.jit(other)(*args))
    assert shingles_of(one, *args) == shingles_of(other, *args)


def test_the_fingerprint_still_tells_other_computations_apart():
    """Normalising equivalent forms merges nothing that computes otherwise: another operation,
    operands the other way round in a subtraction or a comparison, a constant that is not an
    identity, a loop of another body (before, two loops whose bodies add and subtract shared 85%
    of their sketch: the loop's bookkeeping outweighed its body)."""
    apart = [
        (lambda x: jnp.sin(x) * 2.0 + x, lambda x: jnp.cos(x) * 2.0 + x),
        (lambda x: x - jnp.sin(x), lambda x: jnp.sin(x) - x),
        (lambda x: jnp.where(x > 1.0, x, -x), lambda x: jnp.where(x < 1.0, x, -x)),
        (lambda x: jnp.sin(x) + 1.0, lambda x: jnp.sin(x)),
        (lambda x: jnp.sin(x) ** 2, lambda x: jnp.sin(x) ** 5),
        (
            lambda x: lax.fori_loop(0, 6, lambda i, c: c * 0.5 + x[i], jnp.zeros(())),
            lambda x: lax.fori_loop(0, 6, lambda i, c: c * 0.5 - x[i], jnp.zeros(())),
        ),
    ]
    for one, other in apart:
        assert jaccard(shingles_of(one, X), shingles_of(other, X)) < 0.8


def test_a_module_the_fingerprint_cannot_walk_has_none_and_fails_nothing():
    """The fingerprint decides nothing: where its walk fails (here, an entry that is not a
    function), there is no sketch, and the analysis goes on; a real module has one."""
    from jaxlings.worker import dataflow

    assert dataflow.sketch({"main": object()}, "main") is None
    assert dataflow.sketch({}, "main") is None
    assert shingles_of(lambda x: jnp.sin(x) * 2.0, X)


def test_the_fingerprint_is_a_bounded_sketch_and_only_asked_for():
    def unrolled(x, n):
        for i in range(n):
            x = jnp.sin(x) * i + jnp.cos(x)
        return x

    sketch = shingles_of(unrolled, X, 60, static=(1,))
    assert len(sketch) == program.SHINGLES_KEPT and all(len(h) == 16 for h in sketch)
    hashes = sorted(int(h, 16) for h in sketch)
    longer = sorted(int(h, 16) for h in shingles_of(unrolled, X, 61, static=(1,)))
    # a bottom-k sketch: the smallest hashes of the program's elements; one more step shares most
    assert len(set(hashes) & set(longer)) > 0.8 * program.SHINGLES_KEPT
    facts, _ = program.analyse(program.export(jax.jit(jnp.sin), (X,)), (X,))
    assert "program_shingles" not in facts  # the reference's analyses (and the recordings) never carry it
