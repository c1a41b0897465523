"""Speed workloads generated on the device, inside the window, from a key the round sends.

Why. On an accelerator a timed round whose inputs come from the host times their transfer:
`bce_fast`'s 134 MB of inputs took 20.2 ms to reach a TPU v5e against 1.06 ms of work, so a
function twice as slow read about x1.05. Staging the inputs on the device before the window
would show them to the student's process before its clock starts. So a `Speed` check may give
a generator (`Speed.generate`): a JAX function of a key and the workload's size that returns a
round's arguments. The grader exports it once per exercise and size (`export`: a `jax.export`
program for the device's platform and the CPU, made in the grader's own process, which never
opens a device) and sends, with each round's request, the program, a fresh key drawn from the
run's secret, and the arguments' template (`wire.Generated` where the program's outputs go,
plain values for static arguments). The worker runs the program on the device inside the
window, then the function: both sides generate the same inputs with the same program, so the
ratio compares the functions' device work, and no input exists anywhere before the request
that times it arrives.

Exactness. The student's timed output is verified after the rounds against the reference's
outputs computed on the CPU from the same key (`checks.speed`), so the program must give the
same bits on every platform. The helpers here use integer operations and float operations
that round the same everywhere: a float in [0, 1) from 23 random mantissa bits (exact),
scaled by a power of two (exact) and shifted (one rounding, the same with or without a fused
multiply-add). A generator that needs a product uses small integers times powers of two, whose
sums are exact in float32. The grader checks it at run time too: the reference's input
digest on the device (`worker.commit`) must equal the CPU's for the verified round.

The grader's process imports JAX here only (lazily), and pins it to the CPU before any device
is opened: one process holds an accelerator at a time, and it is a worker.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from jaxlings.worker import messages
from jaxlings.worker.wire import Generated

Generate = Callable[[Any, int], Any]
"""`generate(key, size)`: a round's arguments (a tuple; a stream round: a list of tuples) from
a typed threefry key (traced) and the workload's size (a Python int). Array leaves are traced
values; anything else (a static argument) is a Python value that may depend on `size` only."""

KEY_IMPL = "threefry2x32"


@dataclass(frozen=True)
class Workload:
    """A generator exported for one size: the program's bytes (uint8), and per call of the round
    its arguments' template (`wire.Generated` for each output of the program)."""

    program: np.ndarray
    calls: tuple[Any, ...]

    def request(self, key: np.ndarray) -> messages.Generate:
        """The `generate` field of a round's request for the round's `key` (two uint32 words)."""
        return {"program": self.program, "key": np.asarray(key, np.uint32), "calls": list(self.calls)}


def jax_on_cpu() -> Any:
    """JAX in the grader's process, on the CPU whatever the machine has: it exports programs
    and never runs on an accelerator (a TPU chip takes one process at a time)."""
    import jax
    from jax._src import xla_bridge

    if not xla_bridge.backends_are_initialized():
        jax.config.update("jax_platforms", "cpu")
    return jax


@lru_cache(maxsize=64)
def export(generate: Generate, size: int, platforms: tuple[str, ...]) -> Workload:
    """`generate` at `size` as a program for `platforms` (the device's and "cpu"), with its
    template. Raises TypeError where a static leaf is not a plain value."""
    jax = jax_on_cpu()
    jnp = jax.numpy
    template: list[Any] = []

    def program(key_data: Any) -> list[Any]:
        key = jax.random.wrap_key_data(key_data, impl=KEY_IMPL)
        made = generate(key, size)
        calls = made if isinstance(made, list) else [made]
        outs: list[Any] = []

        def leaf(x: Any) -> Any:
            if isinstance(x, jax.Array):
                is_key = jnp.issubdtype(x.dtype, jax.dtypes.prng_key)
                outs.append(jax.random.key_data(x) if is_key else x)
                return Generated(len(outs) - 1, bool(is_key))
            if x is None or isinstance(x, (bool, int, float, str)):
                return x
            raise TypeError(f"a generated workload's static argument must be a plain value, not {type(x).__name__}")

        template[:] = [_mapped(tuple(args), leaf) for args in calls]
        return outs

    spec = jax.ShapeDtypeStruct((2,), jnp.uint32)
    blob = jax.export.export(jax.jit(program), platforms=list(platforms))(spec).serialize()
    return Workload(np.frombuffer(bytes(blob), np.uint8).copy(), tuple(template))


def _mapped(x: Any, leaf: Callable[[Any], Any]) -> Any:
    """`x` with `leaf` applied to every leaf of its tuples, lists and dicts."""
    if isinstance(x, (list, tuple)):
        return type(x)(_mapped(v, leaf) for v in x)
    if isinstance(x, dict):
        return {k: _mapped(v, leaf) for k, v in x.items()}
    return leaf(x)


# -- exact samplers for generators (each takes a typed key; see "Exactness" above) ---------------


def unit(key: Any, shape: tuple[int, ...]) -> Any:
    """float32 in [0, 1), from 23 random bits each: exact on every platform."""
    import jax
    import jax.numpy as jnp

    bits = jax.random.bits(key, shape, jnp.uint32)
    return jax.lax.bitcast_convert_type((bits >> 9) | jnp.uint32(0x3F800000), jnp.float32) - jnp.float32(1.0)


def uniform(key: Any, shape: tuple[int, ...], low: float, high: float) -> Any:
    """float32 in [low, high); `high - low` must be a power of two (an exact scaling)."""
    import jax.numpy as jnp

    span = high - low
    if span <= 0 or 2.0 ** round(math.log2(span)) != span:
        raise ValueError(f"uniform: the span {span:g} must be a power of two, for the same bits on every platform")
    return unit(key, shape) * jnp.float32(span) + jnp.float32(low)


def integers(key: Any, shape: tuple[int, ...], low: int, high: int, dtype: Any = None) -> Any:
    """Integers in [low, high) (int32 unless `dtype`), from random bits by integer arithmetic."""
    import jax
    import jax.numpy as jnp

    bits = jax.random.bits(key, shape, jnp.uint32)
    values = (bits % jnp.uint32(high - low)).astype(jnp.int32) + jnp.int32(low)
    return values.astype(dtype or jnp.int32)


def power_of_two(x: float) -> float:
    """The power of two nearest `x` (a scale that multiplies exactly)."""
    return 2.0 ** round(math.log2(x))


_DIGESTS: dict[str, Any] = {}


def digest(leaves: list[np.ndarray], salt: int) -> list[int]:
    """The digest of output leaves received from a worker (`worker.commit.digest`), computed
    here with JAX on the CPU (jitted once per process: the same integer arithmetic, bit for bit,
    as the device's; NumPy's takes seconds for the largest outputs)."""
    from jaxlings.worker import commit

    jax = jax_on_cpu()
    if "jitted" not in _DIGESTS:
        _DIGESTS["jitted"] = jax.jit(lambda ls, s: commit.digest(ls, s, jax.numpy))
    return [int(v) for v in np.asarray(_DIGESTS["jitted"]([np.asarray(x) for x in leaves], np.uint32(salt)))]
