"""The suite's own comparisons (conftest): what counts as a right submission's full marks."""

from __future__ import annotations

from helpers.grading import short_of_full_marks
from helpers.grading import synthetic_result as result_of


def test_a_timed_shortfall_within_the_clock_s_noise_is_full_marks():
    # CI: the reference against itself on jit_basics.bce_fast read x1.54 (full marks end at x1.5).
    result = result_of(
        ("jit_basics.bce_fast:correct", 1, 1, {}),
        ("jit_basics.bce_fast:speed", 1.95, 2, {"ratio": 1.54}),
        ("ising.vmc_ground_state:vmc", 5.8, 6, {"ratios": [1.2, 1.7]}),
    )
    assert short_of_full_marks(result) == set()


def test_real_shortfalls_are_not_excused():
    result = result_of(
        ("jit_basics.bce_fast:correct", 0, 1, {}),
        ("jit_basics.bce_fast:speed", 0.9, 2, {"ratio": 3.1}),
        ("jit_basics.affine:speed", 0, 2, {}),  # no ratio: the timed call failed
        ("ising.vmc_ground_state:vmc", 2.5, 6, {"ratios": [1.0]}),  # accuracy half missed
        ("ising.other:vmc", 4, 6, {"ratios": [1.1, 2.4]}),
    )
    assert short_of_full_marks(result) == {
        "jit_basics.bce_fast:correct",
        "jit_basics.bce_fast:speed",
        "jit_basics.affine:speed",
        "ising.vmc_ground_state:vmc",
        "ising.other:vmc",
    }
