"""What a device round's commitment costs (`jaxlings/worker/commit.py`): the outputs' digest
compiled and run on this machine's default device, beside an elementwise pass over the same
words (what the cheapest function of that output would cost).

For each output shape: an elementwise pass and the words' flat layout alone, the whole digest,
then its first level alone (every 8 words compressed into 4) in two layouts; on a TPU (or with
`--interpret`) the same with the first level as a Pallas kernel (`commit_kernel`); compile seconds (no
persistent cache) and the best of `--reps` runs in milliseconds. A "flat" shape is another's
words as one vector: what its layout costs to compile. A line of JSON per
measurement to `--out`, as it is made (a run cut at its limit keeps what it measured).

    python benchmarks/digest_cost.py --out digest.jsonl
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxlings.worker import commit, commit_kernel

SHAPES = {
    "dropout": (2**27,),
    "noisy_walk": (2048, 512, 3),
    "affine": (3072, 3072),
    "bce_fast": (2**22,),
    "noisy_walk flat": (2048 * 512 * 3,),
    "affine flat": (3072 * 3072,),
}


def timed(fn: Callable[..., Any], args: tuple[Any, ...], reps: int, fetch: bool = True) -> tuple[float, float]:
    """(compile seconds, best run in ms) of `jax.jit(fn)` on `args`; with `fetch`, each run's
    outputs copied to the host, else left on the device (waited for): what the work costs, not
    the copy of a large result."""
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - start
    jax.block_until_ready(compiled(*args))
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        out = compiled(*args)
        np.asarray(out) if fetch else jax.block_until_ready(out)
        best = min(best, time.perf_counter() - start)
    return compile_s, best * 1e3


def digest_with(kernel: Callable[..., Any], x: Any, salt: Any, folding: Callable[..., Any] | None = None) -> Any:
    """The whole digest of `x`, its first level by `kernel`, its folding stages by `folding`
    (XLA's scan without)."""
    return commit.digest([x], salt, jnp, kernel, folding)


def say(out: Any, device: Any, row: dict[str, Any]) -> None:
    """One measurement `row` on `device`, printed and appended to the open file `out` as it is
    made (a run cut at its limit keeps what it measured)."""
    row = {"device": device.device_kind, **row}
    print(json.dumps(row), flush=True)
    out.write(json.dumps(row) + "\n")
    out.flush()


def skipped(label: str, skip: str) -> bool:
    """Whether `--skip` (words, comma-separated) leaves out the variant `label`."""
    return any(word and word in label for word in skip.split(","))


def first_level(lanes: bool, kernel: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """The digest's first level alone: every 8 words compressed into 4 (then summed, so that
    the run returns a few words, as the whole digest does), by XLA's loop or by `kernel`."""

    def run(x: Any, salt: Any) -> Any:
        data = commit.words(x, jnp)
        data = jnp.concatenate([data, jnp.zeros((-data.shape[0] % 1024,), jnp.uint32)])
        blocks = data.reshape(8, -1, 128) if lanes else data.reshape(8, -1)
        index = jnp.arange(data.shape[0] // 8, dtype=jnp.uint32).reshape(blocks.shape[1:])
        if kernel is not None:
            states = kernel(blocks.reshape(8, -1), salt, 7)
        else:
            states = commit.compress(blocks, [salt, jnp.uint32(0), index, jnp.uint32(7)], jnp)
        return jnp.sum(states, axis=tuple(range(1, states.ndim)))

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--interpret", action="store_true", help="the kernel too, in Pallas's interpreter (slow)")
    parser.add_argument("--skip", default="", help="variants to leave out: words of their labels, comma-separated")
    parser.add_argument(
        "--geometries",
        default="",
        help="kernel geometries to sweep instead, as tile/rows_at_once/unroll, comma-separated (e.g. 256/8/1,512/16/2);"
        " with them, the threefry bits of the same words and XLA's first level unrolled as yardsticks",
    )
    args = parser.parse_args()
    if args.geometries:
        sweep(args)
        return
    jax.config.update("jax_compilation_cache_dir", None)
    device = jax.devices()[0]
    salt = np.uint32(12345)
    with open(args.out, "a") as out:
        for name in args.shapes.split(","):
            shape = SHAPES[name]
            x = jax.device_put(jax.random.normal(jax.random.key(0), shape, jnp.float32), device)
            variants: dict[str, Callable[..., Any]] = {
                "elementwise x*2+1": lambda x, salt: jnp.sum(x * 2 + 1),
                "words only": lambda x, salt: jnp.sum(commit.words(x, jnp).reshape(8, -1), axis=1),
                "digest": lambda x, salt: commit.digest([x], salt, jnp),
                "first level, (8, words / 8)": first_level(False),
                "first level, (8, rows, 128)": first_level(True),
            }
            if device.platform == "tpu" or args.interpret:  # the Pallas kernel (commit_kernel)
                kernel = functools.partial(commit_kernel.first_level, interpret=args.interpret)
                variants["digest, kernel"] = functools.partial(digest_with, kernel)
                folding = functools.partial(commit_kernel.fold, interpret=args.interpret)
                variants["digest, kernels (first level and folding)"] = functools.partial(
                    digest_with, kernel, folding=folding
                )
                variants["first level, kernel"] = first_level(False, kernel)
            digests: dict[str, list[int]] = {}
            for label, fn in variants.items():
                if skipped(label, args.skip):
                    continue
                compile_s, ms = timed(fn, (x, salt), args.reps)
                say(
                    out, device, {"shape": name, "variant": label, "compile_s": round(compile_s, 2), "ms": round(ms, 3)}
                )
                if label.startswith("digest"):
                    digests[label] = [int(v) for v in np.asarray(jax.jit(fn)(x, salt))]
            host = list(commit.digest([np.asarray(x)], int(salt), np)) if x.size <= 2**22 else None
            # every digest alike (the kernel's too), and NumPy's, the grader's definition, where it is quick
            say(
                out,
                device,
                {
                    "shape": name,
                    "digests agree": len({tuple(d) for d in digests.values()} | ({tuple(host)} if host else set()))
                    <= 1,
                },
            )


def sweep(args: argparse.Namespace) -> None:
    """The kernel's first level at each geometry of `args.geometries`, per shape, beside the
    threefry bits of as many words (the integer work of `prng.dropout`'s own mask, done by
    XLA's fused loop) and XLA's first level unrolled (one fusion, no loop): states compared with
    XLA's loop, milliseconds with the states left on the device."""
    jax.config.update("jax_compilation_cache_dir", None)
    device = jax.devices()[0]
    salt = np.uint32(12345)
    with open(args.out, "a") as out:
        for name in args.shapes.split(","):
            x = jax.device_put(jax.random.normal(jax.random.key(0), SHAPES[name], jnp.float32), device)
            blocks = jax.block_until_ready(jax.jit(lambda x: commit.words(x, jnp).reshape(8, -1))(x))
            n = int(x.size)
            variants: dict[str, Callable[..., Any]] = {
                "threefry bits": lambda b, s: jax.random.bits(jax.random.key(s), (b.size,), jnp.uint32),
                "first level, loop": functools.partial(_loop, n=n),
            }
            for geometry in args.geometries.split(","):
                tile, rows, unroll = (int(v) for v in geometry.split("/"))
                variants[f"first level, kernel {geometry}"] = functools.partial(
                    _kernel_at, tile=tile, rows_at_once=rows, unroll=unroll, n=n, interpret=args.interpret
                )
            variants["first level, XLA unrolled"] = functools.partial(_unrolled, n=n)
            expected = None
            for label, fn in variants.items():
                if skipped(label, args.skip):
                    continue
                try:
                    compile_s, ms = timed(fn, (blocks, salt), args.reps, fetch=False)
                except Exception as exc:  # noqa: BLE001  # a geometry the compiler refuses: said, and the sweep goes on
                    row: dict[str, Any] = {"shape": name, "variant": label, "error": str(exc).splitlines()[0][:300]}
                else:
                    row = {"shape": name, "variant": label, "compile_s": round(compile_s, 2), "ms": round(ms, 3)}
                    if label.startswith("first level"):
                        states = np.asarray(jax.jit(fn)(blocks, salt))
                        expected = states if expected is None else expected
                        row["agrees"] = bool(np.array_equal(states, expected))
                say(out, device, {"words": n, **row})


def _loop(blocks: Any, salt: Any, n: int) -> Any:
    return commit.first_level(blocks, salt, n, jnp)


def _kernel_at(blocks: Any, salt: Any, *, n: int, interpret: bool, **geometry: int) -> Any:
    return commit_kernel.first_level(blocks, salt, n, interpret, **geometry)


def _unrolled(blocks: Any, salt: Any, n: int) -> Any:
    """XLA's first level with the double rounds unrolled (`commit.permuted(loop=False)`)."""
    u32 = jnp.uint32
    columns = blocks.shape[1:]
    start = tuple(
        [jnp.full(columns, c, u32) for c in commit.SIGMA]
        + [blocks[i] for i in range(8)]
        + [
            jnp.full(columns, salt, u32),
            jnp.zeros(columns, u32),
            jnp.arange(columns[0], dtype=u32),
            jnp.full(columns, n, u32),
        ]
    )
    return jnp.stack(commit.permuted(start, jnp, loop=False))


if __name__ == "__main__":
    main()
