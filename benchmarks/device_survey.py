"""What an accelerator does to the course, measured in one process that holds it (run ON the device).

Three surveys, each written to --out as JSON and summarised on stdout:

- `opens`: the wall time of a fresh process that imports JAX and runs one operation on the
  device (a chip taken by one process at a time: the grader's unit of cost), with and without
  the environment variables named by --open-env.
- `speed`: for every speed-checked exercise of a topic graded on the device, at each candidate
  size: the round's pieces as a device round runs them (`jaxlings.grading.workloads`: inputs made on the
  device from a key; `jaxlings.worker.commit`: the outputs' digest), each the best of --reps:
  the dispatch floor (a jitted `x * 2 + 1` on a small array), the generator alone, the call on
  inputs already there, the whole round (generate, call, commit), the same round of a version
  doing twice the work (benchmarks/device_check.py's `_slowed`), and for host-input exercises the
  call with its inputs sent from the host. Also whether each generator gives the same bits on
  the device and on the CPU (the digest of its inputs on both).
  Also what compiling costs there: the function's, the generator's and the digest's programs,
  each timed from `jit(...).lower(...)` to the compiled executable (`compile_s`,
  `gen_compile_s`, `digest_compile_s`; `first_s`: the first calls of a function timed as
  written), since on a TPU a speed check's first round is mostly compiling. `--sizes spec`:
  each exercise at its own size for the device (`Speed.size`) instead of the candidates.
- `tolerance`: every exercise of the device topics run by the reference on its public cases and
  two hidden draws, on the device (float32 matmuls at 'highest') and on the CPU (a subprocess),
  and the largest error, absolute, relative, and in units of the exercise's tolerance (and
  its `grad` check's).

    python benchmarks/device_survey.py --out DIR [--skip opens,tolerance] [--reps 10]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.device_check import SLOWDOWN  # noqa: E402

DEADLINE = 1e18
OPEN_PROBE = (
    "import time, jax, jax.numpy as jnp; t = time.time(); d = jax.devices(); "
    "jnp.ones(3).block_until_ready(); say(d[0].platform, d[0].device_kind, round(time.time() - t, 2))"
)
# Candidate sizes per exercise on an accelerator (the CPU's are the specs' own).
CANDIDATES: dict[str, list[int]] = {
    "at_updates.histogram": [1 << 20, 1 << 22, 1 << 24, 1 << 26],
    "jit_basics.bce_fast": [1 << 18, 1 << 20, 1 << 22, 1 << 24],
    "jit_basics.affine": [1024, 2048, 3072, 4096],
    "prng.dropout": [1 << 22, 1 << 24, 1 << 26, 1 << 27],
    "prng.monte_carlo_pi": [256, 512, 1024, 2048],
    "prng.noisy_walk": [2048, 8192, 32768],
    "static_args.cached_solve": [1024, 2048],  # timed on the host's CPU in grading (Speed.platform)
    "static_args.standardize": [100],
    "training.train_step": [1 << 21, 1 << 22],
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--skip", default="", help="comma-separated surveys to skip: opens, speed, tolerance")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--open-env", default="TPU_SKIP_MDS_QUERY=1", help="extra variables for the second open run")
    ap.add_argument("--exercises", default="", help="comma-separated TOPIC.EXERCISE for the speed survey")
    ap.add_argument(
        "--sizes", default="", help="comma-separated sizes instead of each exercise's candidates; `spec`: its own"
    )
    ap.add_argument("--deadline", type=float, default=1e9, help="seconds the tolerance survey's device pass may run")
    ap.add_argument("--cpu-pass", type=Path, help=argparse.SUPPRESS)  # the tolerance survey's CPU half
    args = ap.parse_args(argv)
    global DEADLINE
    DEADLINE = time.monotonic() + args.deadline
    if args.cpu_pass:
        return cpu_pass(args.cpu_pass)
    args.out.mkdir(parents=True, exist_ok=True)
    LOG.append(open(args.out / "survey.log", "a"))
    skip = set(filter(None, args.skip.split(",")))
    facts = machine_facts()
    write(args.out / "machine.json", facts)
    if "opens" not in skip:
        write(args.out / "opens.json", opens(args.open_env))
    os.environ.setdefault("JAX_DEFAULT_MATMUL_PRECISION", "highest")
    import jax

    say("device:", jax.devices()[0].device_kind, "jax", jax.__version__, flush=True)
    if "speed" not in skip:
        chosen = set(filter(None, args.exercises.split(",")))
        sizes: list[int] | str = args.sizes if args.sizes == "spec" else [int(n) for n in args.sizes.split(",") if n]
        write(args.out / "speed.json", speed(args.reps, chosen, sizes))
    if "tolerance" not in skip:
        write(args.out / "tolerance.json", tolerance(args.out))
    return 0


LOG: list = []


def say(*parts: Any, flush: bool = True) -> None:
    """A line on stdout and in --out's survey.log, at once: a command cut off at its limit keeps
    every line said before (a pipe through `grep` or `tail` buffers them)."""
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    if LOG:
        LOG[0].write(line + "\n")
        LOG[0].flush()


def write(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=1, default=str))
    say(f"wrote {path.name}", flush=True)


def machine_facts() -> dict[str, Any]:
    """What the grader's detection reads: device files, the TPU variables, libtpu's presence."""
    import glob
    import importlib.util

    return {
        "device_files": sorted(glob.glob("/dev/vfio/*") + glob.glob("/dev/accel*") + glob.glob("/dev/nvidia*")),
        "tpu_env": {k: v for k, v in os.environ.items() if k.startswith(("TPU_", "JAX_", "XLA_"))},
        "libtpu": importlib.util.find_spec("libtpu") is not None,
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def opens(extra: str) -> dict[str, Any]:
    """Wall seconds of fresh processes opening the device: two plain, two with `extra`."""
    runs: dict[str, list] = {"plain": [], extra or "extra": []}
    variants = [("plain", {}), (extra or "extra", dict(kv.split("=", 1) for kv in extra.split(",") if kv))]
    for name, env in variants:
        for _ in range(2):
            t0 = time.monotonic()
            done = subprocess.run(
                [sys.executable, "-c", OPEN_PROBE], env={**os.environ, **env}, capture_output=True, text=True
            )
            runs[name].append(
                {"wall": round(time.monotonic() - t0, 2), "out": done.stdout.strip(), "err": done.stderr[-300:]}
            )
            say("open", name, runs[name][-1]["wall"], runs[name][-1]["out"], flush=True)
    return runs


def best(fn: Any, reps: int) -> float:
    """The best wall seconds of `reps` runs of `fn()` after one warm-up."""
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def reference_module(topic: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"reference_{topic}", ROOT / "solutions" / f"{topic}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def slowed(module: Any, name: str) -> Any:
    """The exercise's function doing its work twice (device_check's `_slowed`)."""
    scope: dict[str, Any] = {}
    exec(SLOWDOWN, scope)
    return scope["_slowed"](getattr(module, name), 2)


def compiling(fn: Any, *args: Any) -> float:
    """Wall seconds from tracing a jitted `fn` on `args` to its compiled executable."""
    t0 = time.perf_counter()
    fn.lower(*args).compile()
    return time.perf_counter() - t0


def first_call(fn: Any, calls: list[Any]) -> tuple[float, list[Any]]:
    """Wall seconds of `fn`'s first calls on `calls` (a function timed as written compiles
    there), and their outputs' leaves."""
    import jax

    t0 = time.perf_counter()
    leaves = jax.block_until_ready(jax.tree.leaves([fn(*a) for a in calls]))
    return time.perf_counter() - t0, leaves


def speed(reps: int, chosen: set[str], sizes_given: list[int] | str | None = None) -> list[dict[str, Any]]:
    """The speed survey (see the module docstring)."""
    import jax
    import jax.numpy as jnp

    from jaxlings.grading import topics, workloads
    from jaxlings.worker import commit
    from jaxlings.worker.harness import _mapped
    from jaxlings.worker.wire import Generated, Key

    x = jnp.ones(1024)
    floor_fn = jax.jit(lambda v: v * 2 + 1)
    floor = best(lambda: floor_fn(x).block_until_ready(), 50)
    pipelined = best(lambda: jax.block_until_ready([floor_fn(x) for _ in range(16)]), 20) / 16
    say(f"floor {floor * 1e3:.3f} ms, a pipelined call {pipelined * 1e3:.3f} ms", flush=True)
    committer = jax.jit(lambda leaves, salt: commit.digest(leaves, salt, jnp))
    rows: list[dict[str, Any]] = [{"floor_ms": round(floor * 1e3, 4), "pipelined_call_ms": round(pipelined * 1e3, 4)}]
    key_data = jnp.asarray([1, 2], jnp.uint32)
    for name, candidates in CANDIDATES.items():
        if chosen and name not in chosen:
            continue
        topic_name, ex_name = name.split(".")
        ex = topics.load(topic_name).exercise(ex_name)
        check = ex.check("speed")
        spec_sizes = sizes_given == "spec"
        sizes = [check.size_for(jax.default_backend())] if spec_sizes else (sizes_given or candidates)
        module = reference_module(topic_name)
        fn, twice = getattr(module, ex_name), slowed(module, ex_name)
        if check.jit:
            fn = jax.jit(fn, static_argnums=ex.static_argnums)
            twice = jax.jit(twice, static_argnums=ex.static_argnums)
        for size in sizes:
            row: dict[str, Any] = {"exercise": name, "size": size}
            try:
                if check.generate is not None:
                    work = workloads.export(check.generate, size, (jax.default_backend(), "cpu"))
                    program = jax.export.deserialize(bytearray(work.program.tobytes()))
                    generate = jax.jit(program.call)
                    row["gen_compile_s"] = compiling(generate, key_data)

                    def calls(outs: list, work: Any = work) -> list:
                        def fill(v: Any) -> Any:
                            if isinstance(v, Generated):
                                o = outs[v.index]
                                return jax.random.wrap_key_data(o, impl=workloads.KEY_IMPL) if v.key else o
                            return v

                        return [_mapped(args, fill) for args in work.calls]

                    outs = generate(key_data)
                    resident = calls(outs)
                    row["compile_s"] = compiling(fn, *resident[0]) if check.jit else None
                    row["first_s"], leaves = first_call(fn, calls(generate(key_data)))
                    row["digest_compile_s"] = compiling(committer, leaves, np.uint32(3))
                    row["gen_ms"] = best(lambda: jax.block_until_ready(generate(key_data)), reps) * 1e3
                    cpu = jax.devices("cpu")[0]
                    cpu_outs = jax.jit(program.call)(jax.device_put(key_data, cpu))
                    dev_sums = np.asarray(committer(list(outs), np.uint32(7)))
                    cpu_sums = np.asarray(committer(list(cpu_outs), np.uint32(7)))
                    row["inputs_same_on_cpu"] = bool((dev_sums == cpu_sums).all())

                    def round_of(f: Any, work: Any = work) -> None:
                        fresh = calls(generate(key_data))
                        results = [f(*args) for args in fresh]
                        np.asarray(committer(jax.tree.leaves(results), np.uint32(3)))

                    row["round_ms"] = best(lambda: round_of(fn), reps) * 1e3
                    row["round_x2_ms"] = best(lambda: round_of(twice), reps) * 1e3
                    try:  # a donating reference runs once on resident inputs: no figure then
                        row["call_ms"] = best(lambda: jax.block_until_ready([fn(*a) for a in resident]), reps) * 1e3
                    except Exception:  # noqa: BLE001
                        row["call_ms"] = None
                else:
                    rng = np.random.default_rng(0)
                    cases = check.stream(rng, size) if check.stream else [ex.sample(rng, size)]

                    def host_args(c: Any) -> Any:
                        return _mapped(
                            c.args,
                            lambda v: (
                                jax.random.key(v.seed)
                                if isinstance(v, Key)
                                else (jax.device_put(v) if isinstance(v, np.ndarray) else v)
                            ),
                        )

                    resident = [host_args(c) for c in cases]
                    row["compile_s"] = compiling(fn, *resident[0]) if check.jit else None
                    row["first_s"], leaves = first_call(fn, [host_args(c) for c in cases])
                    row["digest_compile_s"] = compiling(committer, leaves, np.uint32(3))
                    row["call_ms"] = best(lambda: jax.block_until_ready([fn(*a) for a in resident]), reps) * 1e3
                    row["host_round_ms"] = (
                        best(
                            lambda: np.asarray(committer(jax.tree.leaves([fn(*host_args(c)) for c in cases]), 3)),
                            reps,
                        )
                        * 1e3
                    )
                    row["host_round_x2_ms"] = (
                        best(
                            lambda: np.asarray(committer(jax.tree.leaves([twice(*host_args(c)) for c in cases]), 3)),
                            reps,
                        )
                        * 1e3
                    )
            except Exception as exc:  # noqa: BLE001 - a survey row records its failure and goes on
                row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
            for k, v in list(row.items()):
                if isinstance(v, float):
                    row[k] = round(v, 4)
            if "round_x2_ms" in row:
                row["x2_ratio"] = round(row["round_x2_ms"] / row["round_ms"], 3)
                row["floors"] = round(row["round_ms"] / (floor * 1e3), 1)
            if "host_round_x2_ms" in row:
                row["x2_ratio"] = round(row["host_round_x2_ms"] / row["host_round_ms"], 3)
                row["floors"] = round(row["host_round_ms"] / (floor * 1e3), 1)
            say(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def cases_of(topic: Any) -> dict[str, list]:
    """Per exercise, the cases the survey runs: the public ones and two hidden draws."""
    from jaxlings.grading import draws

    out = {}
    for ex in topic.exercises:
        public = ex.cases(draws.generator(0, topic.name, ex.name, "cases", 0), True)
        hidden = ex.cases(draws.generator(1, topic.name, ex.name, "cases", 0), False)
        out[ex.name] = [c for c in public if not c.label.startswith("random")] + [
            c for c in hidden if c.label.startswith("random")
        ]
    return out


def run_cases(out_path: Path) -> None:
    """Every device topic's reference on its survey cases; outputs (and gradients) to `out_path`."""
    import jax

    from jaxlings.grading import topics
    from jaxlings.grading.context import jit_first
    from jaxlings.worker.harness import _mapped
    from jaxlings.worker.wire import Key

    saved: dict[str, np.ndarray] = {}
    for name in topics.ORDER:
        topic = topics.load(name)
        if topic.platform != "accelerator" or time.monotonic() > DEADLINE:
            continue
        module = reference_module(name)
        for ex_name, cases in cases_of(topic).items():
            ex = topic.exercise(ex_name)
            fn = getattr(module, ex_name)
            jitted = jax.jit(fn, static_argnums=ex.static_argnums) if jit_first(ex) else fn
            grad = ex.check("grad")
            for i, case in enumerate(cases):
                args = _mapped(
                    case.args,
                    lambda v: (
                        jax.random.key(v.seed)
                        if isinstance(v, Key)
                        else (jax.device_put(v) if isinstance(v, np.ndarray) else v)
                    ),
                )
                for what, f in [("out", jitted)] + (
                    [("grad", jax.grad(fn, argnums=grad.argnums))] if grad is not None else []
                ):
                    try:
                        result = f(*args)
                        for j, leaf in enumerate(jax.tree.leaves(result)):
                            if hasattr(leaf, "dtype") and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
                                leaf = jax.random.key_data(leaf)
                            saved[f"{name}|{ex_name}|{i}|{what}|{j}"] = np.asarray(leaf)
                    except Exception as exc:  # noqa: BLE001 - recorded, compared as missing
                        saved[f"{name}|{ex_name}|{i}|{what}|error"] = np.frombuffer(
                            f"{type(exc).__name__}: {exc}"[:300].encode(), np.uint8
                        )
        say("ran", name, flush=True)
    np.savez(out_path, **saved)


def cpu_pass(out_path: Path) -> int:
    run_cases(out_path)
    return 0


def tolerance(out: Path) -> list[dict[str, Any]]:
    """The tolerance survey: the device's outputs against the CPU's (see the module docstring)."""
    import tempfile

    from jaxlings.grading import topics

    folder = Path(tempfile.mkdtemp(prefix="jaxlings-survey-"))
    device_file, cpu_file = folder / "tolerance_device.npz", folder / "tolerance_cpu.npz"
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    env.pop("JAX_DEFAULT_MATMUL_PRECISION", None)
    left = str(max(0.0, DEADLINE - time.monotonic()))  # the CPU's pass stops where the device's does
    command = [sys.executable, __file__, "--out", str(out), "--cpu-pass", str(cpu_file), "--deadline", left]
    cpu_run = subprocess.Popen(command, env=env)
    run_cases(device_file)
    cpu_run.wait()
    dev, cpu = np.load(device_file), np.load(cpu_file)
    rows: dict[str, dict[str, Any]] = {}
    for key in cpu.files:
        name, ex_name, _, what, leaf = key.split("|")
        ex = topics.load(name).exercise(ex_name)
        grad = ex.check("grad")
        rtol, atol = (grad.rtol, grad.atol) if what == "grad" and grad is not None else (ex.rtol, ex.atol)
        row = rows.setdefault(
            f"{name}.{ex_name}:{what}",
            {"rtol": rtol, "atol": atol, "worst_units": 0.0, "max_abs": 0.0, "max_rel": 0.0, "problems": []},
        )
        if key not in dev.files and not any(f.startswith(f"{name}|") for f in dev.files):
            continue  # a topic the device pass had no time for
        if leaf == "error" or key not in dev.files:
            row["problems"].append(key if key not in dev.files else bytes(cpu[key]).decode(errors="replace"))
            continue
        e, g = cpu[key], dev[key]
        if e.shape != g.shape or e.dtype != g.dtype:
            row["problems"].append(f"{key}: {g.dtype}{g.shape} on the device, {e.dtype}{e.shape} on the CPU")
            continue
        if e.dtype.kind in "biu":
            if (e != g).any():
                row["problems"].append(f"{key}: {int((e != g).sum())} integers differ")
            continue
        e64, g64 = e.astype(np.float64), g.astype(np.float64)
        finite = np.isfinite(e64) & np.isfinite(g64)
        if (np.isnan(e64) != np.isnan(g64)).any():
            row["problems"].append(f"{key}: NaN in one only")
        err = np.abs(g64 - e64)[finite]
        if err.size:
            scale = np.abs(e64)[finite]
            row["max_abs"] = max(row["max_abs"], float(err.max()))
            row["max_rel"] = max(row["max_rel"], float((err / np.maximum(scale, 1e-30)).max()))
            row["worst_units"] = max(row["worst_units"], float((err / (atol + rtol * scale)).max()))
    for name, row in rows.items():
        say(
            f"{name:<45} x{row['worst_units']:.3g} of tol  abs {row['max_abs']:.2e} rel {row['max_rel']:.2e} "
            f"{row['problems'][:2] if row['problems'] else ''}",
            flush=True,
        )
    return [{"check": k, **v} for k, v in rows.items()]


if __name__ == "__main__":
    raise SystemExit(main())
