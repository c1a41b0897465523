"""A timed round's commitment to its outputs: a keyed 128-bit digest, computed on the device
inside the window.

On an accelerator, copying a round's outputs to the host inside the timed window times the
transfer (for 256 MB of dropout output, tens of milliseconds against about two of work), not the
function. So in a device round the worker computes, on the device and inside the window, the
`digest` of everything the calls returned (a few passes over the outputs), replies with it and
keeps the outputs; the grader stops its clock when it holds the reply, then fetches the outputs
and computes the digest of what it received with the same code (JAX on the grader's CPU: the
digest is integer arithmetic, bit for bit the same on every platform). Outputs fetched after
the window that do not give the digest sent inside it are not the outputs the window timed.

Why a digest that strong. The fetched outputs are compared with the reference's within a
tolerance, so a process that replied early with some value, computed the outputs after the
window, and could then nudge their low bits (within the tolerance) until they matched that value
would take full marks for work done off the clock. A checksum that adds up per-word terms (a
weighted sum, even of mixed words) falls to exactly that: a few elements with a few choices each
hit any 32- or 64-bit target (a generalised-birthday search, cheap on an accelerator). Here the
words are compressed 8 at a time into 128-bit states, and the states are folded, a group at a
time, by chains of compressions, to one; each compression is a ChaCha permutation (4 double
rounds) with feed-forward, keyed by the round's salt and the place it compresses: no term
combines linearly with another, and matching a 128-bit result by search costs about 2**64
compressions however the outputs are nudged.

Words: every leaf's bits as 32-bit words (4-byte dtypes bit for bit; 1- and 2-byte dtypes
zero-extended; 8-byte ones as two words, low first; complex as its real, then its imaginary
part; typed keys as their key data), the leaves' words one after another.

This module belongs to the worker package: it imports nothing of the grader.
"""

from __future__ import annotations

from typing import Any

MASK = 0xFFFFFFFF
KERNEL_ENV = "JAXLINGS_DIGEST_KERNEL"
"""1 in a worker's environment on a TPU: its first level runs as a Pallas kernel
(`commit_kernel`; 5.3 ms for 2**27 words on a TPU v5e against XLA's loop's 43.5 ms:
benchmarks/digest_cost.py). The grader sets it on a TPU unless its own environment has it 0;
2 runs the folding stages as a kernel too (`commit_kernel.fold`: 2**27 words' whole digest 11.1 ms
against 11.8 ms without it, benchmarks/results/2026-12-07-tpu-v5e-grading-9.md)."""
SIGMA = (0x61707865, 0x3320646E, 0x79622D32, 0x6B206574)  # ChaCha's "expand 32-byte k"
DOUBLE_ROUNDS = 4
WORDS = 4  # of a digest


class Unsupported(TypeError):
    """An output leaf of a dtype the digest does not cover (wider than 8 bytes)."""


def words(x: Any, xp: Any) -> Any:
    """The leaf `x` (an array of `xp`, NumPy or jax.numpy) as a flat array of uint32 words."""
    u32 = xp.uint32
    dt = x.dtype
    if dt.kind == "c" and dt.itemsize == 8:
        return xp.concatenate([words(xp.real(x), xp), words(xp.imag(x), xp)])
    if dt.kind == "b":
        return xp.ravel(x).astype(u32)
    if dt.itemsize == 8:  # two words each, low word first (x64 only: never on a device topic)
        return xp.ravel(_bits(x, u32, xp))
    unsigned = {1: xp.uint8, 2: xp.uint16, 4: u32}.get(dt.itemsize)
    if unsigned is None:
        raise Unsupported(f"a {dt} output cannot be committed to")
    return xp.ravel(_bits(x, unsigned, xp)).astype(u32)


def _bits(x: Any, unsigned: Any, xp: Any) -> Any:
    """`x`'s bits as the unsigned type of its width (a view in NumPy, a bitcast in JAX)."""
    if x.dtype == unsigned:
        return x
    if type(x).__module__ == "numpy":
        return x.reshape(-1).view(unsigned)  # a flat copy where it must: a 0-d array cannot change its itemsize
    import jax

    return jax.lax.bitcast_convert_type(x, unsigned)


def _rotl(x: Any, r: int, xp: Any) -> Any:
    return (x << xp.uint32(r)) | (x >> xp.uint32(32 - r))


def _quarter(s: list[Any], a: int, b: int, c: int, d: int, xp: Any) -> None:
    s[a] = s[a] + s[b]
    s[d] = _rotl(s[d] ^ s[a], 16, xp)
    s[c] = s[c] + s[d]
    s[b] = _rotl(s[b] ^ s[c], 12, xp)
    s[a] = s[a] + s[b]
    s[d] = _rotl(s[d] ^ s[a], 8, xp)
    s[c] = s[c] + s[d]
    s[b] = _rotl(s[b] ^ s[c], 7, xp)


def _double_round(state: tuple[Any, ...], xp: Any) -> tuple[Any, ...]:
    s = list(state)
    for a, b, c, d in ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15)):
        _quarter(s, a, b, c, d, xp)
    for a, b, c, d in ((0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14)):
        _quarter(s, a, b, c, d, xp)
    return tuple(s)


def compress(message: Any, key: list[Any], xp: Any) -> Any:
    """Eight words per column of `message` (8, columns) into four (4, columns), under `key` (four
    uint32 arrays of one value per column, or scalars): the ChaCha permutation of (constants,
    message, key), fed forward, its first and last rows of four words folded together. Columns,
    not rows: on a TPU the last axis is the vector lanes' (128 wide), and an array of 8 per row
    would take 16 times its size."""
    u32 = xp.uint32
    columns = message.shape[1:]  # one axis in `digest`; any, for benchmarks/digest_cost.py's layouts
    start = tuple(
        [xp.full(columns, c, u32) for c in SIGMA]
        + [message[i] for i in range(8)]
        + [xp.broadcast_to(xp.asarray(k, u32), columns) for k in key]
    )
    return xp.stack(permuted(start, xp, loop=xp.__name__ != "numpy"))


def permuted(start: tuple[Any, ...], xp: Any, loop: bool) -> list[Any]:
    """The four words `compress` keeps of the state `start` (sixteen arrays of one shape): the
    double rounds applied, fed forward, folded. With `loop`, the double rounds are a JAX loop
    (one small compiled body, whatever the number of levels of the tree): unrolled, XLA on the
    CPU compiled them for over two minutes (benchmarks/digest_cost.py); a Pallas kernel unrolls
    them (`commit_kernel`), its compiler does not."""
    if loop:
        import jax

        state = jax.lax.fori_loop(0, DOUBLE_ROUNDS, lambda _, s: _double_round(s, xp), start)
    else:
        state = start
        for _ in range(DOUBLE_ROUNDS):
            state = _double_round(state, xp)
    return [(state[i] + start[i]) ^ (state[12 + i] + start[12 + i]) for i in range(4)]


FAN = 64
"""States a group folds into one at each stage of `digest` past the first (32 absorbing steps):
a few stages cover any output, each one small compiled loop."""


def digest(leaves: list[Any], salt: Any, xp: Any, first: Any = None, fold: Any = None) -> Any:
    """The digest of `leaves` (arrays of `xp`) under `salt` (a uint32: a Python int, or a traced
    scalar in a jitted function): four uint32 words. The words, padded to a multiple of 8, are
    laid out as 8 rows (word `i * columns + b` is word `i` of block `b`) and each block is
    compressed into a state, in parallel; then, stage by stage, each group of `FAN` states is
    folded into one by a chain of compressions (each absorbing two states into the chaining
    value, which starts from the salt, the stage, the group and the length), until one is left.
    Group `g` of a stage holds the states `g, g + groups, g + 2 * groups, ...`: every reshape
    keeps the states' index on the last axis (`compress`).

    `first` (JAX only): another implementation of the first level, called as
    `first(data, salt, n)` on the padded words, flat (their layout as blocks is its own to
    make: on a TPU, `commit_kernel.first_level` views them without moving a word), giving what
    `first_level` gives for `data.reshape(8, -1)`; `fold` (JAX only): another
    implementation of each stage's folding, called as `fold(groups, chain)`, giving what
    `_fold` gives (`commit_kernel.fold`)."""
    u32 = xp.uint32
    flat = [words(leaf, xp) for leaf in leaves]
    data = xp.concatenate(flat) if flat else xp.zeros((0,), u32)
    n = int(data.shape[0])
    salt = xp.asarray(salt & MASK if isinstance(salt, int) else salt, u32)
    data = xp.concatenate([data, xp.zeros((-n % 8 if n else 8,), u32)])
    states = first(data, salt, n) if first is not None else first_level(as_blocks(data, xp), salt, n, xp)
    stage = 1
    while states.shape[1] > 1:
        fan = min(FAN, states.shape[1] + states.shape[1] % 2)
        states = xp.concatenate([states, xp.zeros((4, -states.shape[1] % fan), u32)], axis=1)
        count = states.shape[1] // fan
        # (4, fan, count) -> (steps, 8, count): step j absorbs states 2j and 2j + 1 of each group
        groups = xp.transpose(states.reshape(4, fan // 2, 2, count), (1, 2, 0, 3)).reshape(fan // 2, 8, count)
        chain = xp.stack(
            [
                xp.broadcast_to(salt, (count,)),
                xp.full((count,), stage, u32),
                xp.arange(count, dtype=u32),
                xp.full((count,), n & MASK, u32),
            ]
        )
        states = fold(groups, chain) if fold is not None else _fold(groups, chain, xp)
        stage += 1
    return states[:, 0]


def as_blocks(data: Any, xp: Any) -> Any:
    """The padded words `data`, flat, laid out as blocks (8, columns): word `i * columns + b` is
    word `i` of block `b`. With JAX, behind an optimization barrier: XLA on a TPU otherwise fuses
    a leaf's relayout (a (2048, 512, 3) output's) into the compressions' loop and compiles for 28 s."""
    blocks = data.reshape(8, -1)
    if xp.__name__ == "numpy":
        return blocks
    import jax

    return jax.lax.optimization_barrier(blocks)


def first_level(blocks: Any, salt: Any, n: int, xp: Any) -> Any:
    """The digest's first level: each block of `blocks` (8, columns) compressed under its key
    (the salt, 0, the block's index, the outputs' length `n`), as (4, columns) states."""
    u32 = xp.uint32
    return compress(blocks, [salt, u32(0), xp.arange(blocks.shape[1], dtype=u32), u32(n & MASK)], xp)


def _fold(groups: Any, chain: Any, xp: Any) -> Any:
    """Each group's messages (steps, 8, groups) absorbed in order into its chaining value
    (4, groups): the value is the key of each step's compression."""
    if xp.__name__ == "numpy":
        for message in groups:
            chain = compress(message, list(chain), xp)
        return chain
    import jax

    def step(value: Any, message: Any) -> tuple[Any, None]:
        return compress(message, [value[i] for i in range(4)], xp), None

    return jax.lax.scan(step, chain, groups)[0]
