"""The `compiles` check's trusted count (`autograder.checks.compiles.counted`, `thresholds`):
which calls the grader's clock takes for compilations, on figures like those a grading reads
(reference: compiling calls ~35 ms of CPU, cached ones ~0.2 ms).

No process runs here: the count is a function of the times, so each case states the times a
kind of submission produces. The gradings that produce them are in the topic tests
(tests/test_topic_static_args.py, tests/test_topic_jit_basics.py) and tests/test_trust.py.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from autograder.checks.compiles import FALLBACK_THRESHOLD, counted, thresholds

MS = 1e-3
REFERENCE = {"seconds": [36 * MS, 0.2 * MS, 0.3 * MS, 35 * MS, 0.2 * MS, 0.1 * MS],
             "counts": [[1, 1], [0, 0], [0, 0], [1, 1], [0, 0], [0, 0]]}
DROP, STEADY = thresholds(REFERENCE)


def test_thresholds_come_from_the_reference_s_cheapest_compilation():
    assert DROP == 35 * MS / 4  # the geometric mean with the cached calls' 0.2 ms is under a quarter
    assert STEADY == 35 * MS / 2
    fast_compiles = {"seconds": [4 * MS, 1 * MS], "counts": [[1, 1], [0, 0]]}
    drop, steady = thresholds(fast_compiles)
    assert drop == (4 * MS * 1 * MS) ** 0.5 and steady == drop  # steady never under drop
    assert thresholds({"seconds": [0.2 * MS], "counts": [[0, 0]]}) == (FALLBACK_THRESHOLD, 2 * FALLBACK_THRESHOLD)


def test_compilations_of_new_shapes_count_and_their_cached_replays_do_not():
    first = [36 * MS, 0.2 * MS, 37 * MS, 0.3 * MS, 0.2 * MS]
    assert counted(first, {0: 0.3 * MS, 2: 0.2 * MS}, DROP, STEADY) == [0, 2]


def test_a_function_that_compiles_on_every_call_counts_every_call():
    first = [38 * MS] * 6
    assert counted(first, dict.fromkeys(range(6), 37 * MS), DROP, STEADY) == list(range(6))


def test_heavy_calls_that_compile_nothing_do_not_count():
    # Padding every call to one giant bucket: each call 10-16 ms on a loaded machine, over the
    # old single threshold (a quarter of a compilation), the same work in the replay.
    first = [16 * MS, 11 * MS, 14 * MS, 10 * MS, 12 * MS]
    replay = {0: 12 * MS, 1: 13 * MS, 2: 11 * MS, 3: 10 * MS, 4: 15 * MS}
    assert counted(first, replay, DROP, STEADY) == []


def test_heavy_calls_costing_half_a_compilation_count():
    # Work the clock cannot tell from a compilation (documented under `compiles`).
    assert counted([20 * MS, 19 * MS], {0: 19 * MS, 1: 18 * MS}, DROP, STEADY) == [0, 1]


def test_calls_under_drop_need_no_replay():
    assert counted([0.2 * MS, DROP, 0.4 * MS], {}, DROP, STEADY) == []


@given(first=st.floats(DROP + STEADY, 10.0), replay=st.floats(0.0, 10.0))
def test_no_replay_hides_a_first_run_of_three_quarters_of_a_compilation(first, replay):
    # A hostile replay may take any time (burning CPU to look "steady", or returning at once):
    # a first run of drop + steady or more counts either way.
    assert counted([first], {0: replay}, DROP, STEADY) == [0]


@given(work=st.floats(0.0, STEADY), noise=st.floats(-DROP, DROP))
def test_the_same_work_twice_is_never_a_compilation(work, noise):
    # A call that compiles nothing: its first run and its replay differ by noise under `drop`,
    # and the work itself costs under half a compilation.
    first = max(0.0, work + noise)
    assert counted([first], {0: work}, DROP, STEADY) == []
