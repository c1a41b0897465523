"""What compiling costs on the device, and what it grows with (run ON the device).

For each named exercise of the reference solutions, at the given sizes, jitted as the speed
check jits it: the wall seconds from `jit(...).lower(...)` to the compiled executable, and of
one call after it. With `--partitionable both`, each program is compiled twice, with JAX's
`jax_threefry_partitionable` on and off (how random bits are laid out for XLA). One JSON line
per row on stdout and in --out.

    python benchmarks/compile_probe.py --out FILE [--rows prng.monte_carlo_pi:256x16384,...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ROWS = (
    "prng.monte_carlo_pi:256x16384,prng.monte_carlo_pi:2048x16384,prng.monte_carlo_pi:256x131072,"
    "prng.monte_carlo_pi:2048x131072,prng.noisy_walk:256x512,prng.noisy_walk:2048x512"
)


def args_for(name: str, dims: list[int]):
    """The call's arguments: monte_carlo_pi (key, trials, samples); noisy_walk (key, x0 (rows, 3), steps, sigma)."""
    import jax
    import jax.numpy as jnp

    key = jax.random.key(0)
    if name == "prng.monte_carlo_pi":
        return (key, dims[0], dims[1]), (1, 2)
    return (key, jnp.ones((dims[1], 3), jnp.float32), dims[0], 0.5), (2,)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--rows", default=ROWS, help="TOPIC.EXERCISE:AxB,... (see args_for)")
    ap.add_argument("--partitionable", default="default", choices=("default", "both"))
    args = ap.parse_args()
    os.environ.setdefault("JAX_DEFAULT_MATMUL_PRECISION", "highest")
    import jax

    from benchmarks.device_survey import reference_module

    out = open(args.out, "a")
    settings = [None] if args.partitionable == "default" else [True, False]
    for row in args.rows.split(","):
        name, dims_text = row.split(":")
        topic, ex = name.split(".")
        fn = getattr(reference_module(topic), ex)
        dims = [int(d) for d in dims_text.split("x")]
        for setting in settings:
            if setting is not None:
                jax.config.update("jax_threefry_partitionable", setting)
            call_args, static = args_for(name, dims)
            jitted = jax.jit(fn, static_argnums=static)
            t0 = time.perf_counter()
            lowered = jitted.lower(*call_args)
            t1 = time.perf_counter()
            compiled = lowered.compile()
            t2 = time.perf_counter()
            jax.block_until_ready(compiled(*[a for i, a in enumerate(call_args) if i not in static]))
            t3 = time.perf_counter()
            line = json.dumps(
                {
                    "row": row,
                    "partitionable": jax.config.jax_threefry_partitionable,
                    "lower_s": round(t1 - t0, 3),
                    "compile_s": round(t2 - t1, 3),
                    "first_call_s": round(t3 - t2, 4),
                    "device": jax.devices()[0].device_kind,
                }
            )
            print(line, flush=True)
            out.write(line + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
