"""Topic `static_args`: static vs traced arguments, branches, buckets, hashable statics.

Every check here counts rather than times where it can: compilations (JAX's compilation
events, in a stream of calls), the operations of the exported program. The two speed checks time work that the
right answer skips altogether (a solve behind a `cond`; padding far beyond the bucket that
fits), so the ratios they separate are large.
"""

from __future__ import annotations

import numpy as np

from jaxlings.grading.checks import Compiles, Correct, Jit, Speed
from jaxlings.grading.requirements import AvoidsOps, UsesOp
from jaxlings.grading.spec import Case, Edge, Exercise, Topic

MAX_LENGTH = 1000
# Both timed workloads are short calls (well under a millisecond of work each), where two
# runs of identical code differ by up to ~20% in CPU time; the faults the speed checks are
# for (a solve that runs anyway, padding to one huge bucket) cost 20-100x.
SPEED_FULL = 1.5
BUCKETS = (MAX_LENGTH - 1).bit_length() + 1  # powers of two 1, 2, ..., 1024: 11 programs


# -- create_filled ----------------------------------------------------------------------


def _shape(rng: np.random.Generator, size: int, rank: int) -> tuple[int, ...]:
    """A shape of `rank` dimensions whose first is `size` (the rest small, drawn)."""
    return (size,) + tuple(int(d) for d in rng.integers(1, 5, rank - 1))


def _create_filled(rng: np.random.Generator, size: int) -> Case:
    return Case((float(rng.normal(0.0, 10.0)), (size, 3)))


def _create_filled_stream(rng: np.random.Generator, calls: int) -> list[Case]:
    """Calls cycling through 3 shapes of different ranks (so distinct), a fresh value each."""
    shapes = [_shape(rng, int(rng.integers(1, 50)), rank) for rank in (1, 2, 3)]
    return [Case((float(rng.normal(0.0, 10.0)), shapes[i % 3])) for i in range(calls)]


# -- conditional_fn ---------------------------------------------------------------------


def _conditional_fn(rng: np.random.Generator, size: int) -> Case:
    x = rng.normal(size=(size, 4)).astype(np.float32)
    return Case((x, bool(rng.integers(0, 2))))


# -- cached_solve -----------------------------------------------------------------------


def _system(rng: np.random.Generator, n: int, hit: bool) -> Case:
    """A well-conditioned system (eigenvalues within 2 +- 0.6) and a cached solution that is
    exact to float32 round-off (residual ~1e-6, far below any tol) or wrong (residual of
    order 1). Drawn in float32: the GPU's workload (n = 4096) is drawn anew every round."""
    A = rng.standard_normal((n, n), dtype=np.float32) * np.float32(0.3 / np.sqrt(n))
    A[np.diag_indices(n)] += np.float32(2.0)
    x = rng.standard_normal(n, dtype=np.float32)
    b = (A.astype(np.float64) @ x).astype(np.float32)
    cached = x if hit else rng.standard_normal(n, dtype=np.float32)
    return Case((A, b, cached, float(10 ** rng.uniform(-3, -2))))


def _cached_solve(rng: np.random.Generator, size: int) -> Case:
    return _system(rng, size, bool(rng.integers(0, 2)))


def _cache_miss(rng: np.random.Generator, size: int) -> Case:
    """A system whose cached solution is far off, so that the solve runs."""
    return _system(rng, size, False)


def _cache_hits(rng: np.random.Generator, size: int) -> list[Case]:
    """The speed workload: one call whose cached solution is good (only the residual runs)."""
    return [_system(rng, size, True)]


CACHED_SOLVE_ON_CPU = (
    "a cache hit is one matrix-vector product, below a TPU's dispatch floor at every size whose solve compiles there"
)
"""Why `cached_solve` is timed on the host's CPU (`Speed.platform`). On a TPU v5e, 16 hits at
2048 took 0.55 ms a call against the chip's 0.40 ms floor for a synchronised call, and twice
the residual's work read x1.04; at 4096 the miss branch's `solve` asked for 25 GB of
temporaries (benchmarks/results/2026-12-07-tpu-v5e-grading-8.md, 2026-12-06-tpu-v5e-survey.md).
On a CPU the residual is the work: twice it reads below full marks."""


# -- standardize_padded and standardize -------------------------------------------------


def _data(rng: np.random.Generator, n: int) -> np.ndarray:
    return (rng.normal(size=n) * rng.uniform(0.5, 2.0) + rng.uniform(-2.0, 2.0)).astype(np.float32)


def _standardize_padded(rng: np.random.Generator, size: int) -> Case:
    n = int(rng.integers(1, size + 1))
    garbage = rng.uniform(-1e3, 1e3, size - n).astype(np.float32)
    return Case((np.concatenate([_data(rng, n), garbage]), n))


def _standardize(rng: np.random.Generator, size: int) -> Case:
    return Case((_data(rng, size),))


def _random_lengths(rng: np.random.Generator, calls: int) -> list[Case]:
    """`calls` inputs with random lengths in 1..MAX_LENGTH (nearly all distinct)."""
    return [Case((_data(rng, int(n)),)) for n in rng.integers(1, MAX_LENGTH + 1, calls)]


def _recurring_lengths(rng: np.random.Generator, calls: int) -> list[Case]:
    """The speed workload: `calls` fresh inputs whose lengths, up to MAX_LENGTH, come from 32
    values (multiples of 31), so that after the warm-up round the stream costs what the calls
    cost, not what compiling costs (that is the `compiles` check's business)."""
    return [Case((_data(rng, int(n)),)) for n in 31 * rng.integers(1, 33, calls)]


# -- window_sums ------------------------------------------------------------------------


def _as_config(rng: np.random.Generator, widths: tuple[int, ...]) -> list[int] | np.ndarray:
    """Widths as a configuration file hands them over: a list, or an int32 array."""
    return list(widths) if rng.integers(0, 2) else np.array(widths, np.int32)


def _window_sums(rng: np.random.Generator, size: int) -> Case:
    x = rng.integers(-100, 101, size).astype(np.int32)
    widths = tuple(int(w) for w in rng.integers(1, size + 1, 3))
    return Case((x, _as_config(rng, widths)))


def _window_stream(rng: np.random.Generator, calls: int, n: int = 64) -> list[Case]:
    """Calls cycling through 3 distinct width configurations, each call a fresh list or
    array and a fresh `x`."""
    configs: list[tuple[int, ...]] = []
    while len(configs) < 3:
        widths = tuple(int(w) for w in rng.integers(1, n + 1, 3))
        if widths not in configs:
            configs.append(widths)
    return [Case((rng.integers(-100, 101, n).astype(np.int32), _as_config(rng, configs[i % 3]))) for i in range(calls)]


def _fixed_system(seed: int, n: int, hit: bool, label: str) -> Case:
    case = _system(np.random.default_rng(seed), n, hit)
    return Case(case.args, label)


# -- edge families: each edge case's instances in a graded run (`Edge`), never its public one


def _quarter(rng: np.random.Generator) -> float:
    return float(rng.integers(-40, 41)) / 4


def _dims(rng: np.random.Generator, rank: int, lo: int = 1) -> tuple[int, ...]:
    return tuple(int(d) for d in rng.integers(lo, 5, rank))


def _empty_shape(rng: np.random.Generator) -> tuple[int, ...]:
    """A shape of rank 1 to 3 with a zero dimension."""
    shape = list(_dims(rng, int(rng.integers(1, 4)), lo=0))
    shape[rng.integers(len(shape))] = 0
    return tuple(shape)


def _rows_of(rng: np.random.Generator, flag: bool, zero: bool = False) -> Case:
    shape = _dims(rng, 2)
    x = np.zeros(shape, np.float32) if zero else rng.integers(-5, 6, shape).astype(np.float32)
    return Case((x, flag))


def _padded(rng: np.random.Generator, n: int, m: int) -> Case:
    """m entries, the first n data (distinct small integers: a nonzero spread where n > 1), the
    rest padding far off."""
    data = rng.choice(np.arange(-9, 10), size=n, replace=False)
    padding = rng.integers(-1000, 1001, m - n)
    return Case((np.concatenate([data, padding]).astype(np.float32), n))


def _padded_some(rng: np.random.Generator) -> Case:
    m = int(rng.integers(3, 9))
    return _padded(rng, int(rng.integers(2, m)), m)


def _few(rng: np.random.Generator) -> Case:
    """The docstring's example's structure: a few distinct small numbers."""
    return Case((rng.choice(np.arange(-9, 10), size=int(rng.integers(2, 7)), replace=False).astype(np.float32),))


def _widths(rng: np.random.Generator, as_array: bool) -> Case:
    n = int(rng.integers(3, 9))
    widths = [int(w) for w in rng.integers(1, n + 1, 3)]
    return Case((rng.integers(-9, 10, n).astype(np.int32), np.array(widths, np.int32) if as_array else widths))


TOPIC = Topic(
    name="static_args",
    title="Static arguments, branches and recompilation",
    exercises=(
        Exercise(
            name="create_filled",
            sample=_create_filled,
            sizes=(1, 17),
            static_argnums=(1,),
            edge_cases=(
                Edge(Case((2.5, (2, 3)), "the docstring's example"), lambda rng: Case((_quarter(rng), _dims(rng, 2)))),
                Edge(Case((-1.0, ()), "a 0-d array"), lambda rng: Case((_quarter(rng), ()))),
                Edge(Case((7.0, (2, 0, 3)), "an empty array"), lambda rng: Case((_quarter(rng), _empty_shape(rng)))),
            ),
            checks=(
                Correct(1),
                Jit(1),
                Compiles(2, make=_create_filled_stream, max_compiles=3, calls=24, jit=True),
            ),
            hints=(
                "Which argument decides the output's shape? Under jit it must be known while tracing; the other is "
                "just data.",
                "`jnp.full` builds an array of a given shape filled with one value (pass the dtype too); "
                "`functools.partial(jax.jit, static_argnums=...)`, used as a decorator, marks arguments static by "
                "position.",
                "Make static exactly the argument that decides the shape (a tuple of ints is hashable), by its "
                "position. Keep `value` traced, or every new value costs a compilation, and ask for float32 "
                "explicitly rather than letting the value's type decide.",
            ),
        ),
        Exercise(
            name="conditional_fn",
            sample=_conditional_fn,
            sizes=(3, 20),
            static_argnums=(1,),
            edge_cases=(
                Edge(
                    Case((np.array([[3.0, 4.0]], np.float32), True), "the docstring's example"),
                    lambda rng: _rows_of(rng, True),
                ),
                Edge(
                    Case((np.array([[3.0, 4.0]], np.float32), False), "the flag off"), lambda rng: _rows_of(rng, False)
                ),
                Edge(
                    Case((np.zeros((2, 3), np.float32), True), "zero rows stay zero"),
                    lambda rng: _rows_of(rng, True, zero=True),
                ),
            ),
            rtol=1e-5,
            atol=1e-6,
            # measured: the reference has neither (9 operations with the flag on, 0 off); lax.cond
            # on the flag has a `case`, jnp.where a `select`
            checks=(
                Correct(1),
                Jit(
                    2,
                    requirements=(
                        AvoidsOps(
                            ("case", "select"),
                            "the flag is static, so decide with a plain Python `if` while tracing; "
                            "lax.cond / jnp.where put both branches into the compiled program",
                        ),
                    ),
                ),
            ),
            hints=(
                "The flag is a Python bool that is known before tracing: the choice can be made in Python, not in the "
                "program.",
                "With `normalize` static, a plain Python `if` on it runs while tracing, so only the branch it takes "
                "is traced; `jax.lax.rsqrt` gives 1/sqrt.",
                "Two exits from one Python `if`: with the flag on, the rows scaled as the docstring says (reduce over "
                "the last axis and keep it, so that the per-row factor broadcasts back); with it off, `x` handed back "
                "untouched. No `lax.cond` and no `jnp.where`: both would put the two branches in the program.",
            ),
        ),
        Exercise(
            name="cached_solve",
            sample=_cached_solve,
            sizes=(4, 16),
            edge_cases=(
                Edge(
                    _fixed_system(1, 16, True, "a cache hit"),
                    lambda rng: _system(rng, int(rng.choice([8, 16, 24])), True),
                ),
                Edge(
                    _fixed_system(2, 16, False, "a cache miss"),
                    lambda rng: _system(rng, int(rng.choice([8, 16, 24])), False),
                ),
            ),
            rtol=1e-4,
            atol=1e-4,
            checks=(
                Correct(1),
                Jit(
                    2,
                    requirements=(
                        UsesOp(
                            "case", "the choice depends on a computed value: decide it in the program with jax.lax.cond"
                        ),
                    ),
                ),
                Speed(
                    2,
                    size={"cpu": 2048},
                    stream=_cache_hits,
                    twin=_cache_miss,
                    full=SPEED_FULL,
                    max_reps=15,
                    platform="cpu",
                    platform_reason=CACHED_SOLVE_ON_CPU,
                ),
            ),
            hints=(
                "The predicate is computed from the arrays, so under jit it is a tracer: Python cannot branch on it, "
                "but the compiled program can.",
                "`jax.lax.cond(pred, true_fn, false_fn)` runs only the branch that `pred` picks; put the expensive "
                "`jnp.linalg.solve` inside a branch, not before the cond.",
                "Two pieces: a scalar predicate (how far the cached answer is from solving the system, measured and "
                "compared with `tol` exactly as the docstring says), then one `cond` whose branches take no "
                "arguments: one hands back the cached answer, the other solves. Both must return the same shape and "
                "dtype, and whatever you compute before the `cond` runs on every call.",
            ),
        ),
        Exercise(
            name="standardize_padded",
            sample=_standardize_padded,
            sizes=(1, 64, 1024),
            edge_cases=(
                Edge(Case((np.array([1.0, 2.0, 3.0, 100.0], np.float32), 3), "the docstring's example"), _padded_some),
                Edge(
                    Case((np.arange(8, dtype=np.float32), 8), "no padding"),
                    lambda rng: _padded(rng, *[int(rng.integers(2, 11))] * 2),
                ),
                Edge(
                    Case((np.array([5.0, -7.0, 9.0], np.float32), 1), "one data entry"),
                    lambda rng: _padded(rng, 1, int(rng.integers(2, 7))),
                ),
            ),
            rtol=1e-5,
            atol=1e-5,
            checks=(Correct(1), Jit(2)),
            hints=(
                "`n` is traced, so nothing may take its shape from it; keep the full length m and make the padding "
                "harmless.",
                "Comparing `jnp.arange(m)` with `n` gives a boolean mask of shape (m,); `jnp.where(mask, v, 0.0)` "
                "zeroes the padding before each sum. Divide by `n`, not by m.",
                "Order: the mask; the mean of the masked data (divided by n); the centred values, masked again so "
                "that the padding stays 0 and out of the variance; the variance from those, divided by n; then the "
                "docstring's formula with its epsilon. The padding then comes out 0 by itself.",
            ),
        ),
        Exercise(
            name="standardize",
            sample=_standardize,
            sizes=(1, 3, 17, 100, MAX_LENGTH),
            edge_cases=(Edge(Case((np.array([1.0, 2.0, 3.0], np.float32),), "the docstring's example"), _few),),
            rtol=1e-5,
            atol=1e-5,
            checks=(
                Correct(1),
                Compiles(2, make=_random_lengths, max_compiles=BUCKETS, calls=100, jit=False),
                Speed(
                    1, size={"cpu": 100, "gpu": 100}, stream=_recurring_lengths, jit=False, full=SPEED_FULL, max_reps=21
                ),
            ),
            hints=(
                "Count the distinct shapes your jitted kernel sees: one per length is one compilation per length. "
                "Make the lengths fall into a few sizes.",
                "`int.bit_length()` works on the host, in Python: the smallest power of two >= n follows from the bit "
                "length of n - 1. NumPy builds, fills and cuts arrays without compiling anything; "
                "`standardize_padded` takes a padded array and the true length.",
                "Everything on the host but one call: a float32 zero array of the bucket's size with `x` copied into "
                "its front, one call of `standardize_padded` with the true n, and its result back in NumPy, cut to n. "
                "`jnp.pad`, or slicing the JAX result, compiles once per length.",
            ),
        ),
        Exercise(
            name="window_sums",
            sample=_window_sums,
            sizes=(1, 40),
            edge_cases=(
                Edge(
                    Case((np.array([1, 2, 3, 4], np.int32), [1, 2, 4]), "the docstring's example"),
                    lambda rng: _widths(rng, False),
                ),
                Edge(
                    Case((np.array([1, 2, 3, 4], np.int32), np.array([4, 1, 2], np.int32)), "widths as an array"),
                    lambda rng: _widths(rng, True),
                ),
            ),
            checks=(Correct(1), Compiles(2, make=_window_stream, max_compiles=3, calls=12, jit=False)),
            hints=(
                "jit looks static arguments up in a dictionary, so they must be hashable, and equal configurations "
                "must compare equal.",
                "A tuple of Python ints hashes and compares by value; `.tolist()` on a NumPy array gives Python ints "
                "without running a JAX operation.",
                "Make both kinds of input the same hashable thing before they reach `_window_sums`: a tuple of plain "
                "Python ints, produced the same way for a list and for an array (through NumPy first, so that the two "
                "behave alike). A tuple of JAX scalars would still be unhashable.",
            ),
        ),
    ),
)
