"""Topic `jit_basics`: tracing and purity, `jnp.where` vs Python `if`, dead code, when jit pays.

Most verdicts here count rather than time: `prints` compares, call by call, the lines a
once-jitted function prints with the reference's (a Python print runs only while tracing);
`regularized_loss` compares XLA's FLOP count with the reference's on the same inputs;
`bce_fast` counts the compilations of 12 calls as written (a jitted function compiles once
per new shape, an eager one once per operation and shape, a fresh jit per call once per
call). "jit pays off" is also a claim about time, so `bce_fast` and `affine` are timed as
written (the grader does not jit them): the first against a jitted reference (eager code
measures x2.7 in the grader, request overhead included, x5 for the bare calls; the band's
full marks end at x1.25), the second against an un-jitted one (jit gains nothing there, and
the check does not pretend otherwise: jitted or not, both pass). Both time a scalar or a
small output: a multi-MiB output makes a CPU timing bimodal (its fresh pages fault in on
some calls and not on others).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxlings.grading import workloads
from jaxlings.grading.checks import Compiles, Correct, Jit, Prints, Speed
from jaxlings.grading.requirements import FlopsAtMost
from jaxlings.grading.spec import Case, Edge, Exercise, Topic

# The size at and above which `regularized_loss` is sampled with l2 = 0: the `jit` check
# takes its structural facts (FLOPs included) at the largest size, where the penalty must
# be absent from the compiled program.
PENALTY_OFF_FROM = 64


def _f32(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * rng.normal(size=shape)).astype(np.float32)


def _clip_by_norm(rng: np.random.Generator, size: int) -> Case:
    g = _f32(rng, size, 3)
    norm = float(np.linalg.norm(g.astype(np.float64)))
    return Case((g, norm * float(rng.choice([0.25, 0.8, 1.25, 4.0]))))


def _logged_softmax(rng: np.random.Generator, size: int) -> Case:
    return Case((_f32(rng, size, 8, scale=3.0),))


def _softmax_stream(rng: np.random.Generator, calls: int) -> list[Case]:
    """Calls in three shapes, each shape repeated: the first call of each shape traces."""
    n = int(rng.integers(2, 9))
    shapes = [
        (int(rng.integers(2, 6)), n),
        (int(rng.integers(6, 12)), n),
        (2, int(rng.integers(2, 5)), int(rng.integers(3, 7))),
    ]
    pattern = [0, 0, 1, 0, 1, 2, 2, 0, 1, 2, 0, 1]
    return [Case((_f32(rng, *shapes[pattern[i % len(pattern)]], scale=3.0),)) for i in range(calls)]


def _ema_update(rng: np.random.Generator, size: int) -> Case:
    shape = (size,) if size < 10 else (size // 10, 10)
    count = np.array(rng.integers(0, 60), np.int32)
    return Case((count, _f32(rng, *shape), _f32(rng, *shape), float(rng.choice([0.5, 0.8, 0.9]))))


def _regularized_loss(rng: np.random.Generator, size: int) -> Case:
    d, n = size, max(1, size // 2)
    l2 = 0.0 if size >= PENALTY_OFF_FROM else float(rng.choice([0.01, 0.1, 1.0]))
    return Case((_f32(rng, d, d, scale=d**-0.5), _f32(rng, n, d), _f32(rng, n, d), l2))


def _batch(rng: np.random.Generator, size: int) -> Case:
    """Logits and 0/1 labels of shape (size, 16)."""
    return Case((_f32(rng, size, 16, scale=3.0), (rng.random((size, 16)) < 0.5).astype(np.float32)))


def _bce_stream(rng: np.random.Generator, calls: int) -> list[Case]:
    """Three batches in each of four shapes never used by the other checks (sizes 200..999)."""
    sizes = rng.choice(np.arange(200, 1000), size=4, replace=False)
    return [_batch(rng, int(sizes[i % 4])) for i in range(calls)]


def _affine(rng: np.random.Generator, size: int) -> Case:
    """x (n, 4n), W (4n, n) scaled so that the outputs are of order 1, b (n,)."""
    n, k = size, 4 * size
    return Case((_f32(rng, n, k), _f32(rng, k, n, scale=k**-0.5), _f32(rng, n)))


def _batch_on_device(key, size: int) -> tuple[Any, Any]:
    """`_batch`'s speed workload made on the device (`jaxlings.grading.workloads`): logits and labels."""
    import jax

    k1, k2 = jax.random.split(key)
    return (workloads.uniform(k1, (size, 16), -4.0, 4.0), workloads.integers(k2, (size, 16), 0, 2, np.float32))


def _affine_on_device(key, size: int) -> tuple[Any, Any, Any]:
    """`_affine`'s speed workload made on the device: W scaled by the power of two nearest 1/sqrt(4n)."""
    import jax

    n, k = size, 4 * size
    kx, kw, kb = jax.random.split(key, 3)
    s = workloads.power_of_two(k**-0.5)
    return (
        workloads.uniform(kx, (n, k), -2.0, 2.0),
        workloads.uniform(kw, (k, n), -2.0 * s, 2.0 * s),
        workloads.uniform(kb, (n,), -2.0, 2.0),
    )


# -- edge families: each edge case's instances in a graded run (`Edge`), never its public one


def _ints(rng: np.random.Generator, *shape: int, lo: int = -4, hi: int = 5) -> np.ndarray:
    """Small integers as float32: exact, so that equalities stay exact."""
    return rng.integers(lo, hi, shape).astype(np.float32)


def _some_shape(rng: np.random.Generator) -> tuple[int, ...]:
    return tuple(int(d) for d in rng.integers(1, 5, int(rng.integers(1, 3))))


# Integer vectors whose norm is an integer: their norm is exact in float32.
EXACT_NORMS = (
    ((3, 4), 5),
    ((6, 8), 10),
    ((5, 12), 13),
    ((1, 2, 2), 3),
    ((2, 3, 6), 7),
    ((1, 4, 8), 9),
    ((2, 6, 9), 11),
    ((8, 15), 17),
)


def _exact_norm(rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """An integer gradient of integer norm: the entries signed, shuffled, padded with zeros,
    and shaped (k,) or (2, k/2)."""
    entries, norm = EXACT_NORMS[rng.integers(len(EXACT_NORMS))]
    g = np.zeros(2 * int(rng.integers(len(entries), len(entries) + 3)), np.float32)
    g[rng.permutation(g.size)[: len(entries)]] = np.array(entries) * rng.choice([-1, 1], len(entries))
    return (g if rng.integers(2) else g.reshape(2, -1)), float(norm)


def _norm_vs_max(rng: np.random.Generator, factor: tuple[float, ...]) -> Case:
    """max_norm the exact norm times one of `factor` (all quarters: exact)."""
    g, norm = _exact_norm(rng)
    return Case((g, norm * float(rng.choice(factor))))


def _all_zeros(rng: np.random.Generator) -> Case:
    return Case((np.zeros(_some_shape(rng), np.float32), float(rng.integers(1, 9)) / 4))


def _large_entries(rng: np.random.Generator) -> Case:
    """Entries in the hundreds or thousands (exp overflows float32 past 88), a few apart."""
    r, c = int(rng.integers(1, 4)), int(rng.integers(2, 7))
    return Case(((rng.integers(100, 5000) + rng.integers(0, 5, (r, c))).astype(np.float32),))


def _equal_3d(rng: np.random.Generator) -> Case:
    shape = tuple(int(d) for d in rng.integers(1, 5, 3))
    return Case((np.full(shape, rng.integers(-5, 6), np.float32),))


def _first_update(rng: np.random.Generator) -> Case:
    """count 0 and a zero average: the debiased value is x."""
    shape = _some_shape(rng)
    return Case(
        (
            np.array(0, np.int32),
            np.zeros(shape, np.float32),
            _ints(rng, *shape),
            float(rng.choice([0.5, 0.8, 0.9, 0.99])),
        )
    )


def _long_run(rng: np.random.Generator) -> Case:
    """A count in the hundreds or thousands, on 0-d arrays."""
    return Case(
        (
            np.array(rng.integers(200, 5000), np.int32),
            np.asarray(rng.integers(-4, 5), np.float32),
            np.asarray(rng.integers(-4, 5), np.float32),
            float(rng.choice([0.5, 0.8, 0.9])),
        )
    )


def _identity_weights(rng: np.random.Generator) -> Case:
    """The docstring's example's structure: W the identity, l2 > 0."""
    d, n = int(rng.integers(1, 5)), int(rng.integers(1, 4))
    return Case((np.eye(d, dtype=np.float32), _ints(rng, n, d), _ints(rng, n, d), float(rng.choice([0.25, 0.5, 1.0]))))


def _small_no_penalty(rng: np.random.Generator) -> Case:
    d, n = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    return Case((_ints(rng, d, d) / 2, _ints(rng, n, d), _ints(rng, n, d), 0.0))


def _large_logits(rng: np.random.Generator) -> Case:
    """Logits 0 and +-50 to +-200, at least one of size 100 or more; 0/1 labels."""
    r, c = int(rng.integers(1, 3)), int(rng.integers(2, 6))
    logits = (50 * rng.integers(-4, 5, (r, c))).astype(np.float32)
    logits[rng.integers(r), rng.integers(c)] = rng.choice([-1, 1]) * 50 * rng.integers(2, 5)
    return Case((logits, rng.integers(0, 2, (r, c)).astype(np.float32)))


TOPIC = Topic(
    name="jit_basics",
    title="jit basics: tracing, purity, control flow, dead code, when jit pays",
    exercises=(
        Exercise(
            name="clip_by_norm",
            sample=_clip_by_norm,
            edge_cases=(
                Edge(
                    Case((np.array([3.0, 4.0], np.float32), 1.0), "the docstring's example, clipped"),
                    lambda rng: _norm_vs_max(rng, (0.25, 0.5, 0.75)),
                ),
                Edge(
                    Case((np.array([3.0, 4.0], np.float32), 10.0), "the docstring's example, unchanged"),
                    lambda rng: _norm_vs_max(rng, (1.25, 2.0, 4.0)),
                ),
                Edge(
                    Case((np.array([3.0, 4.0], np.float32), 5.0), "norm equal to max_norm"),
                    lambda rng: _norm_vs_max(rng, (1.0,)),
                ),
                Edge(Case((np.zeros((2, 3), np.float32), 1.0), "all zeros"), _all_zeros),
            ),
            rtol=1e-5,
            atol=1e-6,
            checks=(Correct(1), Jit(2)),
            hints=(
                "Under jit, `norm > max_norm` is not True or False yet: it is a tracer. You cannot branch on it, but "
                "you can compute with it.",
                "`jnp.where(cond, a, b)` picks elementwise between two arrays that are both computed; `cond` may be a "
                "traced scalar.",
                "Two steps: one scalar norm over every entry, then one select whose condition is the traced "
                "comparison and whose two sides are the rescaled and the unchanged gradient. Work out an all-zero `g` "
                "by hand: the rescaled side is NaN there; which side does the select keep?",
            ),
        ),
        Exercise(
            name="logged_softmax",
            sample=_logged_softmax,
            edge_cases=(
                Edge(
                    Case((np.array([[1000.0, 1001.0, 1002.0]], np.float32),), "large entries (exp would overflow)"),
                    _large_entries,
                ),
                Edge(Case((np.zeros((2, 3, 4), np.float32),), "three dimensions, all equal"), _equal_3d),
            ),
            rtol=1e-5,
            atol=1e-6,
            checks=(Correct(1), Jit(1), Prints(2, make=_softmax_stream, calls=12)),
            hints=(
                "A Python print inside a jitted function runs while JAX traces it, not when the compiled program "
                "runs. That is exactly when you want this line.",
                "Use Python's `print` with the f-string of the docstring (x.dtype and x.shape are known while "
                "tracing); not `jax.debug.print`, which runs on every call.",
                "The print comes first, before any computing (once per trace; never print `x` itself, that shows a "
                "tracer). Then a softmax that cannot overflow: shift each row by its maximum before exponentiating, "
                "and keep the reduced axis in each reduction so that the row statistics broadcast back.",
            ),
        ),
        Exercise(
            name="ema_update",
            sample=_ema_update,
            edge_cases=(
                Edge(
                    Case(
                        (np.array(0, np.int32), np.zeros(4, np.float32), np.arange(4, dtype=np.float32), 0.9),
                        "the first update: debiased is x, to rounding",
                    ),
                    _first_update,
                ),
                Edge(
                    Case(
                        (np.array(1000, np.int32), np.ones((), np.float32), np.zeros((), np.float32), 0.5),
                        "a long run, a scalar",
                    ),
                    _long_run,
                ),
            ),
            rtol=1e-5,
            atol=1e-6,
            checks=(Correct(2), Jit(1)),
            outputs=("count", "new_avg", "debiased"),
            hints=(
                "Everything the step needs comes in as an argument and everything it changes goes out in the returned "
                "tuple; no globals.",
                "Plain arithmetic on the traced arguments is all the API there is: `count + 1` keeps the int32 dtype, "
                "and `**` accepts a traced integer exponent.",
                "Order matters: the bias correction uses the count *after* this step, so count first, then the new "
                "average (a blend of the old one and `x`), then the debiased value from both new quantities. Return "
                "the three in the docstring's order; `decay` is traced, so no Python `if` on it.",
            ),
        ),
        Exercise(
            name="regularized_loss",
            sample=_regularized_loss,
            sizes=(1, 4, 16, PENALTY_OFF_FROM),
            static_argnums=(3,),
            edge_cases=(
                Edge(
                    Case(
                        (
                            np.eye(3, dtype=np.float32),
                            np.arange(6, dtype=np.float32).reshape(2, 3),
                            np.ones((2, 3), np.float32),
                            0.5,
                        ),
                        "the docstring's example: W = I",
                    ),
                    _identity_weights,
                ),
                Edge(
                    Case(
                        (
                            np.full((2, 2), 0.5, np.float32),
                            np.ones((1, 2), np.float32),
                            np.zeros((1, 2), np.float32),
                            0.0,
                        ),
                        "l2 = 0, small",
                    ),
                    _small_no_penalty,
                ),
            ),
            rtol=1e-5,
            atol=1e-5,
            checks=(
                Correct(1),
                Jit(
                    2,
                    requirements=(
                        FlopsAtMost(
                            1.5,
                            100.0,
                            "with l2 = 0 the penalty must not be in the compiled program "
                            "(0 * penalty is not dead code: XLA cannot drop it)",
                        ),
                    ),
                ),
            ),
            hints=(
                "`l2` is a Python float that jit treats as static: a Python `if` on it runs at trace time and decides "
                "what the program contains.",
                "XLA deletes work whose result is unused, but keeps work multiplied by zero (0 * inf is NaN): `l2 * "
                "penalty` with `l2 = 0` still computes the penalty. `jnp.eye(d, dtype=...)` builds the identity that "
                "the penalty needs.",
                "Shape: the data term always, the penalty added only on the Python path where `l2` is nonzero, so "
                "that the program traced for `l2 = 0` does not contain it at all (the grader reads that program's "
                "FLOP count).",
            ),
        ),
        Exercise(
            name="bce_fast",
            sample=_batch,
            edge_cases=(
                Edge(
                    Case(
                        (np.array([[0.0, 100.0, -100.0]], np.float32), np.array([[1.0, 1.0, 0.0]], np.float32)),
                        "large logits (exp would overflow)",
                    ),
                    _large_logits,
                ),
            ),
            rtol=1e-5,
            atol=1e-6,
            checks=(
                Correct(1),
                Jit(1),
                Compiles(1, make=_bce_stream, max_compiles=4, calls=12, jit=False),
                Speed(
                    1,
                    size={"cpu": 1 << 16, "gpu": 1 << 20, "tpu": 1 << 22},
                    zero=5.0,
                    max_reps=31,
                    jit=False,
                    generate=_batch_on_device,
                ),
            ),
            hints=(
                "The grader calls `bce_fast` as you wrote it. Where can the compilation happen so that one call runs "
                "one fused program, compiled once per shape?",
                "`jax.jit(f)` compiles once per input shape and caches per function object: jit the given "
                "`bce_with_logits` itself. A lambda or a def inside `bce_fast` is a new function on every call, hence "
                "a new compilation on every call.",
                "Shape: one jitted function object that outlives the calls (made once, outside `bce_fast`: you may "
                "add code at module level), and a `bce_fast` that only forwards its two arguments to it. Re-wrapping "
                "the same function on every call finds the same cache, at some 60 us or more of Python per call (the "
                "lesson measures it).",
            ),
        ),
        Exercise(
            name="affine",
            sample=_affine,
            sizes=(1, 3, 17, 32),
            rtol=1e-5,
            atol=1e-5,
            checks=(
                Correct(1),
                Jit(1),
                Speed(
                    1, size={"cpu": 384, "gpu": 1024, "tpu": 3072}, max_reps=31, jit=False, generate=_affine_on_device
                ),
            ),
            hints=(
                "This is one matrix product and one broadcast add; nothing here needs a loop.",
                "`@` multiplies an (n, k) array by a (k, m) one; adding an (m,) vector to an (n, m) array broadcasts "
                "it over the rows.",
                "One expression, shape (n, m), float32. Whether you wrap it in `jax.jit` barely matters on a CPU (one "
                "matmul is one kernel either way): what would cost time here is anything besides that one product, "
                "such as a Python loop over the rows.",
            ),
        ),
    ),
)
