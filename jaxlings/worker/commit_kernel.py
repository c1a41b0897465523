"""The digest's first level (`commit.compress` of every 8 output words) as a Pallas kernel for a
TPU: the same states as XLA's loop gives, in one pass over the outputs.

Why a kernel. XLA runs the first level at about 0.45 ns a word on a TPU v5e, whatever the shape
(`benchmarks/digest_cost.py`), far below what the chip's vector unit is rated for; the double
rounds are a loop (unrolled, XLA on the CPU compiled them for over two minutes), so the state
likely goes through memory between its steps. At 2**27 words (`prng.dropout`'s output at its
TPU size) that is 61 ms against a 4 ms function: a speed round on the TPU times the digest, not
the function. Here each grid step loads a tile of the message and runs the four double rounds,
unrolled, on one (8, 128) slice at a time (each state word one vector register), writing the four
words kept. Not yet measured on the chip (`bash benchmarks/on_tpu.sh digest`).

Layout: `blocks` (8, columns) viewed as (8, columns / 128, 128), so that column `b` sits at row
`b // 128`, lane `b % 128` of each message row; its key word 2 (the column's index) is made in
the kernel from the grid step and the slice. Columns past the last are zeros, their states
dropped. Fewer columns than a grid step's go to XLA's loop. A worker on a TPU uses it where the
grader turned it on (`commit.KERNEL_ENV`, `harness.first_level`); `tests/core/test_device.py`
holds it to NumPy's digest in Pallas's interpreter, which any machine runs.

This module belongs to the worker package: it imports nothing of the grader.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from jaxlings.worker import commit

LANES = 128
SLICE = 8  # rows of one vector register
TILE = 256  # rows of LANES columns a grid step takes: 1 MiB of message in, 512 KiB out
COLUMNS = TILE * LANES
"""The kernel's unit of work (32,768 columns: 1 MiB of output words); fewer go to XLA's loop."""


def first_level(blocks: Any, salt: Any, n: int, interpret: bool = False) -> Any:
    """`commit.first_level(blocks, salt, n, jnp)` for `blocks` (8, columns) uint32 and `salt` a
    uint32 scalar: the (4, columns) states, computed by the kernel (by XLA's loop below a grid
    step's columns). `interpret`: run in Pallas's interpreter (any platform: the tests')."""
    columns = blocks.shape[1]
    if columns < COLUMNS:
        return commit.first_level(blocks, salt, n, jnp)
    short = -columns % COLUMNS
    if short:
        blocks = jnp.pad(blocks, ((0, 0), (0, short)))
    rows = (columns + short) // LANES
    scalars = jnp.stack([jnp.asarray(salt, jnp.uint32), jnp.uint32(n & commit.MASK)])
    states = pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((4, rows, LANES), jnp.uint32),
        grid=(rows // TILE,),
        in_specs=[_scalars_spec(), pl.BlockSpec((8, TILE, LANES), lambda i: (0, i, 0))],
        out_specs=pl.BlockSpec((4, TILE, LANES), lambda i: (0, i, 0)),
        interpret=interpret,
    )(scalars, blocks.reshape(8, rows, LANES))
    return states.reshape(4, rows * LANES)[:, :columns]


def _scalars_spec() -> Any:
    """The salt and the length, in the core's scalar memory."""
    from jax.experimental.pallas import tpu as pltpu

    return pl.BlockSpec(memory_space=pltpu.SMEM)


def _kernel(scalars_ref: Any, message_ref: Any, out_ref: Any) -> None:
    """One grid step: TILE rows of every message row, a vector register's slice at a time."""
    u32 = jnp.uint32
    shape = (SLICE, LANES)
    salt = jnp.full(shape, scalars_ref[0], u32)
    length = jnp.full(shape, scalars_ref[1], u32)
    first_row = pl.program_id(0) * TILE
    lanes = jax.lax.broadcasted_iota(u32, shape, 1)
    sublanes = jax.lax.broadcasted_iota(u32, shape, 0)

    def step(j: Any, carry: Any) -> Any:
        at = pl.multiple_of(j * SLICE, SLICE)
        rows = pl.ds(at, SLICE)
        index = (sublanes + (first_row + at).astype(u32)) * u32(LANES) + lanes
        start = tuple(
            [jnp.full(shape, c, u32) for c in commit.SIGMA]
            + [message_ref[i, rows, :] for i in range(8)]
            + [salt, jnp.zeros(shape, u32), index, length]
        )
        for i, word in enumerate(commit.permuted(start, jnp, loop=False)):
            out_ref[i, rows, :] = word
        return carry

    jax.lax.fori_loop(0, TILE // SLICE, step, 0)
