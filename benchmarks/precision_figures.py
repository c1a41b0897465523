"""The precision lesson's figures, measured on whatever platform this runs on: one JSON object a line.

    python benchmarks/precision_figures.py [--n N] [--reps R]

Standalone (JAX and NumPy only, nothing of the course imported), so that it runs on the grading
TPU as it is. What it prints (`course/lessons/precision.md` quotes it; `benchmarks/lesson_figures.py
precision` prints the same figures as lesson lines):

- `machine`: backend, device kind, JAX version, x64 flag (off: as the course's workers run);
- `matmul_digits`: a float32 (n, n) @ (n, n) product at each `jax.default_matmul_precision`
  ('default', 'high', 'highest') and with bfloat16 operands accumulated in float32, against
  the float64 product of the same float32 inputs (NumPy, on the host): the normwise relative
  error max|C - C64| / max|C64| and its digits, -log10 of it. On a CPU every float32 precision
  is float32's own (about 7 digits); on a TPU 'default' multiplies in one bfloat16 pass;
- `matmul_time`: the same product jitted, inputs already on the device: median and min seconds
  per call over `reps` calls, each waited for, and TFLOP/s (2 n**3 / median); then `reps` calls
  dispatched back to back with one wait at the end (`pipelined_s`, per call: a TPU's ~0.5 ms
  per-call round trip overlaps the work), for float32 at each precision, bfloat16 operands with
  a float32 result, and bfloat16 throughout;
- `logsumexp` and `variance`: what the float32 forms that read like the formulas give on the
  lesson's inputs, against the stable forms and float64;
- `promotion`: the dtypes the lesson's promotion examples give here.

n defaults to 4096 on an accelerator and 1024 on a CPU (a 4096 float32 product takes seconds on a
laptop's cores, bfloat16 ones far longer); `--n` sets it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings


def emit(figure: str, **values: object) -> None:
    print(json.dumps({"figure": figure, **values}), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=0, help="matrix size (default: 4096 on an accelerator, 1024 on a CPU)")
    parser.add_argument("--reps", type=int, default=20, help="timed calls per product (default 20)")
    args = parser.parse_args(argv)

    import jax
    import jax.numpy as jnp
    import numpy as np

    backend = jax.default_backend()
    n = args.n or (1024 if backend == "cpu" else 4096)
    emit(
        "machine",
        backend=backend,
        device_kind=jax.devices()[0].device_kind,
        jax=jax.__version__,
        x64=bool(jax.config.jax_enable_x64),
    )

    # -- matrix products: digits against float64, and time ---------------------------------
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = float(np.max(np.abs(exact)))
    da, db = jax.device_put(a), jax.device_put(b)
    ha, hb = da.astype(jnp.bfloat16), db.astype(jnp.bfloat16)

    def f32(x, y):
        return x @ y

    def mixed(x, y):
        return jnp.dot(x, y, preferred_element_type=jnp.float32)

    runs = {}
    for precision in ("default", "high", "highest"):
        with jax.default_matmul_precision(precision):
            runs[f"float32, precision {precision}"] = (jax.jit(f32), (da, db))
    runs["bfloat16 operands, float32 result"] = (jax.jit(mixed), (ha, hb))
    runs["bfloat16 operands and result"] = (jax.jit(f32), (ha, hb))

    for name, (fn, operands) in runs.items():
        precision = name.rsplit(" ", 1)[1] if name.startswith("float32") else "default"
        with jax.default_matmul_precision(precision):
            out = np.asarray(jax.block_until_ready(fn(*operands))).astype(np.float64)
            err = float(np.max(np.abs(out - exact))) / scale
            emit("matmul_digits", n=n, product=name, rel_error=err, digits=round(-np.log10(max(err, 1e-17)), 2))
            times = []
            for _ in range(args.reps):
                t = time.perf_counter()
                jax.block_until_ready(fn(*operands))
                times.append(time.perf_counter() - t)
            t = time.perf_counter()  # the same calls dispatched back to back, one wait at the end
            jax.block_until_ready([fn(*operands) for _ in range(args.reps)])
            pipelined = (time.perf_counter() - t) / args.reps
        med = statistics.median(times)
        emit(
            "matmul_time",
            n=n,
            product=name,
            median_s=med,
            min_s=min(times),
            tflops=round(2 * n**3 / med / 1e12, 3),
            pipelined_s=pipelined,
            tflops_pipelined=round(2 * n**3 / pipelined / 1e12, 3),
            reps=args.reps,
        )

    # -- logsumexp: overflow and underflow ----------------------------------------------------
    def naive_lse(x):
        return jnp.log(jnp.sum(jnp.exp(x), axis=-1))

    def stable_lse(x):
        m = jnp.max(x, axis=-1, keepdims=True)
        return jnp.log(jnp.sum(jnp.exp(x - m), axis=-1)) + m[..., 0]

    x = np.array([[1000.0, 1000.0], [-1000.0, -1000.0], [1.0, 2.0]], np.float32)
    x64 = x.astype(np.float64)
    top = x64.max(axis=-1)
    exact_lse = top + np.log(np.sum(np.exp(x64 - top[:, None]), axis=-1))
    emit(
        "logsumexp",
        input=x.tolist(),
        naive=[float(v) for v in jax.jit(naive_lse)(x)],
        stable=[float(v) for v in jax.jit(stable_lse)(x)],
        float64=[float(v) for v in exact_lse],
    )

    # -- variance: cancellation ---------------------------------------------------------------
    def one_pass(x):
        return jnp.mean(x * x, axis=-1) - jnp.mean(x, axis=-1) ** 2

    def two_pass(x):
        c = x - jnp.mean(x, axis=-1, keepdims=True)
        return jnp.mean(c * c, axis=-1)

    cases = {
        "[10000, 10001, 10002]": np.array([[10000.0, 10001.0, 10002.0]], np.float32),
        "1000 values, mean 1e4, std 1": (1e4 + np.random.default_rng(1).standard_normal((1, 1000))).astype(np.float32),
        "1000 values, mean 0, std 1": np.random.default_rng(1).standard_normal((1, 1000)).astype(np.float32),
    }
    for label, data in cases.items():
        emit(
            "variance",
            data=label,
            one_pass_eager=float(one_pass(data)[0]),
            one_pass_jitted=float(jax.jit(one_pass)(data)[0]),
            two_pass=float(jax.jit(two_pass)(data)[0]),
            float64=float(np.var(data.astype(np.float64), axis=-1)[0]),
        )

    # -- promotion ------------------------------------------------------------------------------
    x16 = jnp.ones(3, jnp.bfloat16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        requested = str(jnp.array(1.0, dtype=jnp.float64).dtype)
    emit(
        "promotion",
        **{
            "bf16 * 2.5": str((x16 * 2.5).dtype),
            "bf16 * np.float64(2.5)": str((x16 * np.float64(2.5)).dtype),
            "bf16 * jnp.float32(2.5)": str((x16 * jnp.float32(2.5)).dtype),
            "bf16 * jnp.asarray(2.5)": str((x16 * jnp.asarray(2.5)).dtype),
            "int8(1) + 1": str((jnp.int8(1) + 1).dtype),
            "int8(1) + 1.0": str((jnp.int8(1) + 1.0).dtype),
            "float32 array + 1.0": str((jnp.ones(2) + 1.0).dtype),
            "jnp.array(1.0, float64)": requested,
        },
        float64_request_warned=any("truncated" in str(w.message) for w in caught),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
