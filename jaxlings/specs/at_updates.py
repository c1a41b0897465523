"""Topic `at_updates`: `.at[]` scatters and gathers, duplicates, masks, out-of-bounds modes."""

from __future__ import annotations

from typing import Any

import numpy as np

from jaxlings.grading import workloads
from jaxlings.grading.checks import Correct, Jit, Speed
from jaxlings.grading.requirements import MaxOps, UsesOp
from jaxlings.grading.spec import Case, Edge, Exercise, Topic

# Operations of the exported program at the largest size (300), measured: the references 31
# (scatter_ops) and 30 (lookup_and_clamp); a Python loop over the indices 5,850 and 4,820.
NO_INDEX_LOOP = MaxOps(200, "use one scatter per operation, not a Python loop over the indices")


def _scatter_ops(rng: np.random.Generator, size: int) -> Case:
    x = rng.normal(size=size).astype(np.float32)
    k = max(1, size // 2)
    idx = rng.permutation(size)[:k].astype(np.int32)
    return Case((x, idx, rng.normal(size=k).astype(np.float32)))


def _nbins(size: int) -> int:
    return 16 if size < 1000 else 256


def _histogram(rng: np.random.Generator, size: int) -> Case:
    nbins = _nbins(size)
    return Case((rng.integers(0, nbins, size=size).astype(np.int32), nbins))


def _histogram_on_device(key, size: int) -> tuple[Any, int]:
    """The speed workload made on the device (`jaxlings.grading.workloads`): `_histogram`'s shapes."""
    nbins = _nbins(size)
    return (workloads.integers(key, (size,), 0, nbins), nbins)


def _mask_fill(rng: np.random.Generator, size: int) -> Case:
    x = rng.normal(size=(size, 3)).astype(np.float32)
    return Case((x, float(rng.normal()), float(rng.uniform(-100, 100))))


def _lookup_and_clamp(rng: np.random.Generator, size: int) -> Case:
    x = rng.normal(size=size).astype(np.float32)
    k = 2 * size
    idx = rng.integers(0, size + 5, size=k).astype(np.int32)
    return Case((x, idx, rng.normal(size=k).astype(np.float32), float(rng.normal())))


# -- edge families: each edge case's instances in a graded run (`Edge`), never its public one


def _small(rng: np.random.Generator, *shape: int, lo: int = -9, hi: int = 10) -> np.ndarray:
    """Small integers as float32: exact, so that ties and equalities stay exact."""
    return rng.integers(lo, hi, shape).astype(np.float32)


def _scatter_example(rng: np.random.Generator) -> Case:
    """The docstring's example's structure: a short `x`, distinct indices, one value each (all
    within 4 of 0: an error is at most 8)."""
    n = int(rng.integers(2, 7))
    k = int(rng.integers(1, n + 1))
    return Case((_small(rng, n, lo=-4, hi=5), rng.permutation(n)[:k].astype(np.int32), _small(rng, k, lo=-4, hi=5)))


def _histogram_example(rng: np.random.Generator) -> Case:
    nbins = int(rng.integers(2, 9))
    return Case((rng.integers(0, nbins, int(rng.integers(2, 9))).astype(np.int32), nbins))


def _all_equal(rng: np.random.Generator) -> Case:
    nbins = int(rng.integers(1, 9))
    return Case((np.full(int(rng.integers(1, 65)), rng.integers(0, nbins), np.int32), nbins))


def _mask_example(rng: np.random.Generator) -> Case:
    """Entries on both sides of the threshold, none equal to it (halves against a quarter)."""
    x = _small(rng, int(rng.integers(1, 5)), int(rng.integers(1, 5))) / 2
    return Case((x, float(rng.integers(-4, 5)) / 2 + 0.25, float(rng.integers(-100, 101))))


def _ties(rng: np.random.Generator) -> Case:
    """Entries equal to the threshold (at least one, exactly), the others half a unit off it."""
    t = float(rng.integers(-8, 9)) / 4
    shape = (int(rng.integers(1, 5)), int(rng.integers(1, 5)))
    x = (t + rng.choice([-0.5, 0.0, 0.0, 0.5], size=shape)).astype(np.float32)
    x[tuple(rng.integers(0, d) for d in shape)] = t
    return Case((x, t, float(rng.integers(-100, 101))))


def _one_entry(rng: np.random.Generator) -> Case:
    """n = 1: indices 0 and past the end, each at least once."""
    k = int(rng.integers(2, 7))
    idx = rng.integers(0, 9, k).astype(np.int32)
    idx[0], idx[-1] = 0, rng.integers(1, 9)
    return Case((_small(rng, 1), idx, _small(rng, k), float(rng.integers(-5, 6))))


TOPIC = Topic(
    name="at_updates",
    title="Functional updates with .at[]",
    exercises=(
        Exercise(
            name="scatter_ops",
            sample=_scatter_ops,
            sizes=(1, 5, 100, 300),
            edge_cases=(
                Edge(
                    Case(
                        (np.array([1, 2, 3], np.float32), np.array([2, 0], np.int32), np.array([10, -1], np.float32)),
                        "the docstring's example",
                    ),
                    _scatter_example,
                ),
            ),
            checks=(Correct(2), Jit(1, requirements=(NO_INDEX_LOOP,))),
            outputs=("set", "add", "min", "max"),
            hints=(
                "`x[i] = v` cannot work on an immutable array; there is a method that returns the updated copy.",
                "`x.at[idx]` gives an updater with `.set`, `.add`, `.min`, `.max`, each taking `vals`.",
                "One updater, four method calls on it, one tuple in the docstring's order (set, add, min, max). Each "
                "call is already one scatter over all of `idx`, so no loop, and the four results are independent: "
                "none starts from another's output.",
            ),
        ),
        Exercise(
            name="histogram",
            sample=_histogram,
            sizes=(1, 10, 200, 999),
            static_argnums=(1,),
            edge_cases=(
                Edge(Case((np.array([1, 3, 1, 0], np.int32), 4), "the docstring's example"), _histogram_example),
                Edge(Case((np.zeros(50, np.int32), 3), "all values equal"), _all_equal),
            ),
            checks=(
                Correct(2),
                Jit(1, requirements=(UsesOp("scatter-add", "count with `.at[x].add(1)`"),)),  # jnp.bincount is one too
                Speed(2, size={"cpu": 1 << 20, "gpu": 1 << 24, "tpu": 1 << 20}, generate=_histogram_on_device),
            ),
            hints=(
                "Start from an array of nbins zeros and add 1 at every value of x, all at once.",
                "`a.at[idx].add(v)` applies every update, repeated indices included, where `.set` keeps only one "
                "write per index; `jnp.zeros(n, dtype)` gives the empty counts (the task wants int32).",
                "A single expression: empty int32 counts, indexed by the values of `x` themselves, incremented by a "
                "constant. If no count in your output exceeds 1, you used the method that overwrites instead of the "
                "one that accumulates.",
            ),
        ),
        Exercise(
            name="mask_fill",
            sample=_mask_fill,
            edge_cases=(
                Edge(
                    Case((np.array([[-1.0, 0.5], [2.0, 3.0]], np.float32), 1.0, -100.0), "the tutorial's mask example"),
                    _mask_example,
                ),
                Edge(Case((np.zeros((2, 2), np.float32), 0.0, 5.0), "ties are not greater"), _ties),
            ),
            checks=(Correct(1), Jit(2)),
            hints=(
                "Under jit the number of entries above the threshold is unknown when compiling, so you cannot index "
                "with the mask.",
                "Choose between two arrays elementwise instead of selecting a subset: `jnp.where(cond, a, b)`.",
                "One select over the whole array: its condition is the threshold test on `x` itself, one side the "
                "fill value, the other `x`. Give the fill value `x`'s dtype (`jnp.asarray(value, dtype)`), so that "
                "the output keeps it too.",
            ),
        ),
        Exercise(
            name="lookup_and_clamp",
            sample=_lookup_and_clamp,
            edge_cases=(
                Edge(
                    Case(
                        (np.array([5.0], np.float32), np.array([0, 1, 7, 0], np.int32), np.ones(4, np.float32), -1.0),
                        "n = 1",
                    ),
                    _one_entry,
                ),
            ),
            static_argnums=(3,),
            checks=(Correct(2), Jit(1, requirements=(NO_INDEX_LOOP,))),
            outputs=("looked_up", "clamped"),
            hints=(
                "Both halves are one-liners with `.at[idx]`; the defaults for out-of-bounds indices are the wrong "
                "ones.",
                "`.get` and `.add` both take a `mode=`: `'fill'` (with `fill_value=`, for reads) returns a given value "
                "past the end, and `'clip'` clamps every index into range.",
                "Two independent expressions on the original `x`, one read and one write, each with its own `mode`; "
                "neither feeds the other. Return them in the docstring's order (looked_up, clamped).",
            ),
        ),
    ),
)
