"""The digest's first level (`commit.compress` of every 8 output words) as a Pallas kernel for a
TPU: the same states as XLA's loop gives, in one pass over the outputs.

Why a kernel. XLA runs the first level at about 0.32 ns a word on a TPU v5e (`benchmarks/
digest_cost.py`), far below what the chip's vector unit does for the threefry bits of as many
words (0.027 ns); the double rounds are a loop (unrolled, XLA on the CPU compiled them for over
two minutes, and on the TPU the unrolled fusion is no faster), so the state goes through memory
between its steps. At 2**27 words (`prng.dropout`'s output at its TPU size) that is 43.5 ms
against a 5 ms function: a speed round on the TPU times the digest, not the function. Here each
grid step loads a tile of the message and runs the four double rounds, unrolled, on a few rows
of 128 lanes at a time (each state word one or two vector registers), writing the four words
kept: 5.3 ms for those 2**27 words (benchmarks/results/2026-12-07-tpu-v5e-grading-8.md;
`bash benchmarks/on_tpu.sh digest`).

Layout: the words (8 * columns,) viewed as (8, columns / 128, 128), so that column `b` sits at
row `b // 128`, lane `b % 128` of each message row; its key word 2 (the column's index) is made in
the kernel from the grid step and the slice. Columns past the last are zeros, their states
dropped. Fewer columns than a grid step's go to XLA's loop. A worker on a TPU uses it unless the
grader turned it off (`commit.KERNEL_ENV`, `harness.first_level`); `tests/core/test_device.py`
holds it to NumPy's digest in Pallas's interpreter, which any machine runs.

This module belongs to the worker package: it imports nothing of the grader.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

from jaxlings.worker import commit

LANES = 128
SLICE = 8  # rows of one vector register
ROWS_AT_ONCE = 16  # rows a step of the kernel's loop takes: two registers a state word
TILE = 256  # rows of LANES columns a grid step takes: 1 MiB of message in, 512 KiB out
COLUMNS = TILE * LANES
"""The kernel's unit of work (32,768 columns: 1 MiB of output words); fewer go to XLA's loop."""


def first_level(
    data: Any,
    salt: Any,
    n: int,
    interpret: bool = False,
    *,
    tile: int = TILE,
    rows_at_once: int = ROWS_AT_ONCE,
    unroll: int = 1,
) -> Any:
    """`commit.first_level(data.reshape(8, -1), salt, n, jnp)` for `data` uint32, the words flat
    (8 * columns,) as `commit.digest` hands them over, or as blocks (8, columns), and `salt` a
    uint32 scalar: the (4, columns) states, computed by the kernel (by XLA's loop below a grid
    step's columns). `interpret`: run in Pallas's interpreter (any platform: the tests').
    `tile`, `rows_at_once`, `unroll`: the kernel's geometry (rows of 128 columns a grid step
    takes, rows a step of its loop takes, that loop's unrolling): the same states whatever they
    are; benchmarks/digest_cost.py measures them.

    Flat words whose columns fill whole grid steps are viewed as (8, rows, 128) where they lie:
    on a TPU that view is the flat array's own layout, where a detour through (8, columns) moves
    every word twice (2**27 words: 30.2 ms for the digest that way, 5.3 ms of it the kernel)."""
    columns = data.size // 8
    step = tile * LANES
    if columns < step:
        return commit.first_level(commit.as_blocks(data, jnp), salt, n, jnp)
    short = -columns % step
    if short:
        data = jnp.pad(data.reshape(8, columns), ((0, 0), (0, short)))
    rows = (columns + short) // LANES
    scalars = jnp.stack([jnp.asarray(salt, jnp.uint32), jnp.uint32(n & commit.MASK)])
    states = pl.pallas_call(
        functools.partial(_kernel, tile=tile, rows_at_once=rows_at_once, unroll=unroll),
        out_shape=jax.ShapeDtypeStruct((4, rows, LANES), jnp.uint32),
        grid=(rows // tile,),
        in_specs=[_scalars_spec(), pl.BlockSpec((8, tile, LANES), lambda i: (0, i, 0))],
        out_specs=pl.BlockSpec((4, tile, LANES), lambda i: (0, i, 0)),
        interpret=interpret,
    )(scalars, data.reshape(8, rows, LANES))
    return states.reshape(4, rows * LANES)[:, :columns]


def _scalars_spec() -> Any:
    """The salt and the length, in the core's scalar memory."""
    from jax.experimental.pallas import tpu as pltpu

    return pl.BlockSpec(memory_space=pltpu.SMEM)


def _kernel(scalars_ref: Any, message_ref: Any, out_ref: Any, *, tile: int, rows_at_once: int, unroll: int) -> None:
    """One grid step: `tile` rows of every message row, `rows_at_once` rows at a time."""
    u32 = jnp.uint32
    shape = (rows_at_once, LANES)
    salt = jnp.full(shape, scalars_ref[0], u32)
    length = jnp.full(shape, scalars_ref[1], u32)
    first_row = pl.program_id(0) * tile
    lanes = jax.lax.broadcasted_iota(u32, shape, 1)
    sublanes = jax.lax.broadcasted_iota(u32, shape, 0)

    def step(j: Any, carry: Any) -> Any:
        at = pl.multiple_of(j * rows_at_once, rows_at_once)
        rows = pl.ds(at, rows_at_once)
        index = (sublanes + (first_row + at).astype(u32)) * u32(LANES) + lanes
        start = tuple(
            [jnp.full(shape, c, u32) for c in commit.SIGMA]
            + [message_ref[i, rows, :] for i in range(8)]
            + [salt, jnp.zeros(shape, u32), index, length]
        )
        for i, word in enumerate(commit.permuted(start, jnp, loop=False)):
            out_ref[i, rows, :] = word
        return carry

    jax.lax.fori_loop(0, tile // rows_at_once, step, 0, unroll=unroll)


FOLD_TILE = 16  # rows of LANES columns a grid step of `fold` takes: 32 steps' messages, 2 MiB


def fold(groups: Any, chain: Any, interpret: bool = False, *, tile: int = FOLD_TILE) -> Any:
    """`commit._fold(groups, chain, jnp)` for `groups` (steps, 8, count) and `chain` (4, count)
    uint32: each column's chaining value absorbing its `steps` messages in order, the value in
    registers from the first to the last (XLA's scan writes it to memory at every step and
    every double round). Fewer columns than a grid step's go to XLA's scan. `interpret`: run in
    Pallas's interpreter."""
    steps, _, count = groups.shape
    if count < tile * LANES:
        return commit._fold(groups, chain, jnp)
    short = -count % (tile * LANES)
    if short:
        groups = jnp.pad(groups, ((0, 0), (0, 0), (0, short)))
        chain = jnp.pad(chain, ((0, 0), (0, short)))
    rows = (count + short) // LANES
    states = pl.pallas_call(
        functools.partial(_fold_kernel, tile=tile, steps=steps),
        out_shape=jax.ShapeDtypeStruct((4, rows, LANES), jnp.uint32),
        grid=(rows // tile,),
        in_specs=[
            pl.BlockSpec((steps, 8, tile, LANES), lambda i: (0, 0, i, 0)),
            pl.BlockSpec((4, tile, LANES), lambda i: (0, i, 0)),
        ],
        out_specs=pl.BlockSpec((4, tile, LANES), lambda i: (0, i, 0)),
        interpret=interpret,
    )(groups.reshape(steps, 8, rows, LANES), chain.reshape(4, rows, LANES))
    return states.reshape(4, rows * LANES)[:, :count]


def _fold_kernel(groups_ref: Any, chain_ref: Any, out_ref: Any, *, tile: int, steps: int) -> None:
    """One grid step of `fold`: `tile` rows of columns, a vector register's rows at a time, each
    chaining value carried through its `steps` compressions."""
    u32 = jnp.uint32
    shape = (SLICE, LANES)

    def rows_at(j: Any, carry: Any) -> Any:
        rows = pl.ds(pl.multiple_of(j * SLICE, SLICE), SLICE)

        def absorb(step: Any, value: tuple[Any, ...]) -> tuple[Any, ...]:
            start = tuple(
                [jnp.full(shape, c, u32) for c in commit.SIGMA]
                + [groups_ref[step, i, rows, :] for i in range(8)]
                + list(value)
            )
            return tuple(commit.permuted(start, jnp, loop=False))

        value = jax.lax.fori_loop(0, steps, absorb, tuple(chain_ref[i, rows, :] for i in range(4)))
        for i, word in enumerate(value):
            out_ref[i, rows, :] = word
        return carry

    jax.lax.fori_loop(0, tile // SLICE, rows_at, 0)
