"""Topic `static_args`: the reference earns every point, and for every check a submission that
deserves to fail it fails it, and only it.

Three crafted submissions (tests/submissions/static_args__*.py) hold one fault per function;
each is graded once per module. No assertion here hinges on wall time: speed verdicts are
asserted only where the ratio is large (a solve that should not run: x6-10 in CPU time, the
timed window holding the 1024 x 1024 system's transfer; padding to 2**21).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from helpers.grading import (
    TEST_LIMITS,
    failing,
    grade_dir,
    grade_variant,
    reference_solutions,
    short_of_full_marks,
    verdicts,
    write_submission,
)
from jaxlings.specs import static_args as spec

# The naive kernel compiles once per length: ~100 compilations in one stream request.
SLOW_STREAM_LIMITS = dataclasses.replace(TEST_LIMITS, call_timeout=90.0)


def _graded(tmp_path_factory, variant: str, exercises: tuple[str, ...] = (), limits=TEST_LIMITS):
    return grade_variant(tmp_path_factory, "static_args", variant, [f"static_args.{e}" for e in exercises], limits)


@pytest.fixture(scope="module")
def reference(request):
    return reference_solutions(request, "static_args")


@pytest.fixture(scope="module")
def one_fault_each(tmp_path_factory):
    return _graded(tmp_path_factory, "one_fault_each")


@pytest.fixture(scope="module")
def naive(tmp_path_factory):
    return _graded(tmp_path_factory, "naive", limits=SLOW_STREAM_LIMITS)


@pytest.fixture(scope="module")
def more_faults(tmp_path_factory):
    return _graded(
        tmp_path_factory,
        "more_faults",
        ("conditional_fn", "cached_solve", "standardize_padded", "standardize", "window_sums"),
    )


def failed(result, exercise: str) -> set[str]:
    """The checks of `exercise` that did not get full marks."""
    return {n.split(":")[1] for n in failing(result) if n.startswith(f"static_args.{exercise}:")}


def figures(result, exercise: str, check: str) -> dict:
    return next(t.extra_data for t in result.tests if t.name == f"static_args.{exercise}:{check}")


def message(result, exercise: str, check: str) -> str:
    return verdicts(result)[f"static_args.{exercise}:{check}"][2]


# -- the spec's own promises (no grading) ----------------------------------------------


def test_streams_are_what_the_docstrings_promise():
    rng = np.random.default_rng(0)
    shapes = [c.args[1] for c in spec._create_filled_stream(rng, 24)]
    assert len(shapes) == 24 and len(set(shapes)) == 3
    lengths = [c.args[0].shape[0] for c in spec._random_lengths(rng, 100)]
    assert min(lengths) >= 1 and max(lengths) <= 1000 and len(set(lengths)) > 80
    assert spec.BUCKETS == 11 == len({1 << (n - 1).bit_length() for n in range(1, 1001)})
    configs = [tuple(np.asarray(c.args[1]).tolist()) for c in spec._window_stream(rng, 12)]
    assert len(set(configs)) == 3
    kinds = {type(c.args[1]) for c in spec._window_stream(rng, 12)}
    assert kinds == {list, np.ndarray}


def test_cached_solutions_hit_or_miss_by_a_wide_margin():
    rng = np.random.default_rng(1)
    for hit in (True, False):
        A, b, cached, tol = spec._system(rng, 64, hit).args
        residual = np.abs(A @ cached - b).max()
        assert (residual < tol / 50) if hit else (residual > 50 * tol)


# -- the reference ----------------------------------------------------------------------


def test_reference_earns_every_point(reference):
    assert short_of_full_marks(reference) == set(), [t.output for t in reference.tests if t.score < t.max_score]
    assert figures(reference, "create_filled", "compiles")["advisory"]["compiles"] <= 3
    assert figures(reference, "standardize", "compiles")["advisory"]["compiles"] <= spec.BUCKETS
    assert figures(reference, "window_sums", "compiles")["advisory"]["compiles"] <= 3
    assert not {"case", "select"} & set(figures(reference, "conditional_fn", "jit")["ops"])
    assert figures(reference, "cached_solve", "jit")["ops"]["case"] >= 1


# -- create_filled ------------------------------------------------------------------------


def test_a_static_value_recompiles_for_every_value(one_fault_each):
    assert failed(one_fault_each, "create_filled") == {"jit", "compiles"}
    assert figures(one_fault_each, "create_filled", "compiles")["compiles"] == 24


def test_forgetting_static_argnums_fails_with_jax_s_shape_error(naive):
    assert failed(naive, "create_filled") == {"correct", "jit", "compiles"}
    assert "Shapes must be 1D sequences of concrete values" in message(naive, "create_filled", "correct")


# -- conditional_fn -----------------------------------------------------------------------


def test_a_run_time_branch_on_a_static_flag_fails_jit_only(one_fault_each, more_faults):
    assert failed(one_fault_each, "conditional_fn") == {"jit"}
    assert "the compiled program has `case`" in message(one_fault_each, "conditional_fn", "jit")  # lax.cond
    assert failed(more_faults, "conditional_fn") == {"jit"}
    assert "the compiled program has `select`" in message(more_faults, "conditional_fn", "jit")  # jnp.where


def test_a_flag_left_traced_cannot_pick_a_python_branch(naive):
    assert failed(naive, "conditional_fn") == {"correct", "jit"}
    assert "TracerBoolConversionError" in message(naive, "conditional_fn", "correct")


# -- cached_solve -------------------------------------------------------------------------


def solve_runs_anyway(result) -> bool:
    """cached_solve's speed check saw a solve that should not run: a CPU-time ratio past x4
    (measured x6-10), so at most a small part of the points (none from x10)."""
    score, max_score, _ = verdicts(result)["static_args.cached_solve:speed"]
    return figures(result, "cached_solve", "speed")["ratio"] > 4 and score < 0.4 * max_score


def test_a_solve_before_the_cond_fails_speed_only(one_fault_each):
    assert failed(one_fault_each, "cached_solve") == {"speed"}
    assert solve_runs_anyway(one_fault_each)


def test_a_python_if_on_data_fails_jit(naive):
    assert failed(naive, "cached_solve") - {"speed"} == {"jit"}
    assert "TracerBoolConversionError" in message(naive, "cached_solve", "jit")


def test_where_instead_of_cond_fails_jit_and_speed(more_faults):
    assert failed(more_faults, "cached_solve") == {"jit", "speed"}
    assert "the compiled program has no `case`" in message(more_faults, "cached_solve", "jit")
    assert "case" not in figures(more_faults, "cached_solve", "jit")["ops"]
    assert solve_runs_anyway(more_faults)


# -- standardize_padded -------------------------------------------------------------------


def test_a_static_length_fails_jit_only(one_fault_each):
    assert failed(one_fault_each, "standardize_padded") == {"jit"}


def test_slicing_with_a_traced_length_fails_jit_only(naive):
    assert failed(naive, "standardize_padded") == {"jit"}
    assert "Slice entries must be static integers" in message(naive, "standardize_padded", "jit")


def test_counting_the_padding_fails_correct_only(more_faults):
    assert failed(more_faults, "standardize_padded") == {"correct", "jit"}


# -- standardize --------------------------------------------------------------------------


def test_no_bucketing_compiles_once_per_length(naive):
    assert failed(naive, "standardize") - {"speed"} == {"compiles"}
    assert figures(naive, "standardize", "compiles")["compiles"] > 50


def test_linear_buckets_compile_too_often(one_fault_each):
    assert failed(one_fault_each, "standardize") - {"speed"} == {"compiles"}
    assert figures(one_fault_each, "standardize", "compiles")["compiles"] > spec.BUCKETS


def test_padding_and_cutting_with_jax_compile_once_per_length(tmp_path):
    folder = write_submission(
        tmp_path,
        {
            "static_args": """
        import jax
        import jax.numpy as jnp

        @jax.jit
        def _kernel(x, n):
            mask = jnp.arange(x.shape[0]) < n
            mean = jnp.sum(jnp.where(mask, x, 0.0)) / n
            centred = jnp.where(mask, x - mean, 0.0)
            return centred / jnp.sqrt(jnp.sum(centred * centred) / n + 1e-5)

        def standardize(x):
            n = x.shape[0]
            padded = jnp.pad(x, (0, (1 << (n - 1).bit_length()) - n))  # an eager op on a new shape
            return _kernel(padded, n)[:n]  # and another: both compile once per length
    """
        },
    )
    result = grade_dir(folder, ["static_args.standardize"], limits=SLOW_STREAM_LIMITS)
    assert failed(result, "standardize") - {"speed"} == {"compiles"}
    assert figures(result, "standardize", "compiles")["compiles"] > 50


def test_one_giant_bucket_fails_speed(more_faults):
    # Not `compiles`, except by load: each call pads to 2**21 floats. The replay tells that work from
    # a compilation (tests/core/test_compile_count.py), but its first run on a loaded machine also pays
    # the page faults of fresh buffers (seen: first runs 32 ms, replays 8 ms; docs/grading.md).
    assert failed(more_faults, "standardize") - {"compiles"} == {"speed"}
    assert verdicts(more_faults)["static_args.standardize:speed"][0] == 0
    # What JAX's events report is a count, not a time, so it is exact: the one bucket compiles once
    assert figures(more_faults, "standardize", "compiles")["advisory"]["compiles"] <= 1


# -- window_sums --------------------------------------------------------------------------


def test_a_wrapper_hashed_by_identity_compiles_every_call(one_fault_each):
    assert failed(one_fault_each, "window_sums") == {"compiles"}
    assert figures(one_fault_each, "window_sums", "compiles")["compiles"] == 12


def test_unhashable_static_arguments_fail_with_jax_s_error(naive, more_faults):
    for result in (naive, more_faults):
        assert failed(result, "window_sums") == {"correct", "compiles"}
        assert "Non-hashable static arguments are not supported" in message(result, "window_sums", "correct")
        assert "not judged" in message(result, "window_sums", "compiles")
