"""The `compiles` check's trusted count (`jaxlings.grading.checks.compiles.counted`, `thresholds`):
which calls the grader's clock takes for compilations, on figures like those a grading reads
(reference: compiling calls ~35 ms of CPU, cached ones ~0.2 ms), and how much the counted calls
weigh in the reference's compilations (`weighed`, `budget`).

No process runs here: the count is a function of the times, so each case states the times a
kind of submission produces. The gradings that produce them are in the topic tests
(tests/topics/test_topic_static_args.py, tests/topics/test_topic_jit_basics.py) and tests/core/test_trust.py.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jaxlings.grading.checks.compiles import FALLBACK_THRESHOLD, budget, compile_seconds, counted, thresholds, weighed

MS = 1e-3
REFERENCE = {
    "seconds": [36 * MS, 0.2 * MS, 0.3 * MS, 35 * MS, 0.2 * MS, 0.1 * MS],
    "counts": [[1, 1], [0, 0], [0, 0], [1, 1], [0, 0], [0, 0]],
}
DROP, STEADY = thresholds(REFERENCE)


def test_thresholds_come_from_the_reference_s_cheapest_compilation():
    assert DROP == 35 * MS / 4  # the geometric mean with the cached calls' 0.2 ms is under a quarter
    assert STEADY == 35 * MS / 2
    fast_compiles = {"seconds": [4 * MS, 1 * MS], "counts": [[1, 1], [0, 0]]}
    drop, steady = thresholds(fast_compiles)
    assert drop == (4 * MS * 1 * MS) ** 0.5 and steady == drop  # steady never under drop
    assert thresholds({"seconds": [0.2 * MS], "counts": [[0, 0]]}) == (FALLBACK_THRESHOLD, 2 * FALLBACK_THRESHOLD)


def test_a_compilation_s_cost_is_per_program_the_reference_compiled():
    """A sharded step's first call compiles the step and five small slicing programs (~0.7 s);
    the step jitted anew on every call costs ~0.26 s a call, replay included, with JAX's events
    silenced (tests/submissions/sharding__attack_step_deaf.py): against the whole first call it
    would pass under `steady`, against its cost per program it counts on every call."""
    sharded = {"seconds": [0.7] + [5 * MS] * 19, "counts": [[6, 1]] + [[0, 0]] * 19}
    drop, steady = thresholds(sharded)
    assert steady == 0.7 / 6 / 2 and drop == 0.7 / 6 / 4
    first = [0.26] * 20
    assert counted(first, dict.fromkeys(range(20), 0.26), drop, steady) == list(range(20))
    whole_call = max((5 * MS * 0.7) ** 0.5, 0.7 / 4), 0.7 / 2  # what a per-call yardstick would give
    assert counted(first, dict.fromkeys(range(20), 0.26), *whole_call) == []


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


@given(work=st.floats(0.0, STEADY), noise=st.floats(-DROP, DROP * (1 - 1e-9)))
def test_the_same_work_twice_is_never_a_compilation(work, noise):
    # A call that compiles nothing: its first run and its replay differ by noise under `drop`,
    # and the work itself costs under half a compilation. (Noise of exactly `drop` is the
    # boundary: `work + drop - work` may round a hair over it, which hypothesis found in CI.)
    first = max(0.0, work + noise)
    assert counted([first], {0: work}, DROP, STEADY) == []


# -- the weight of the counted calls, in the reference's compilations -------------------------

REF_COMPILE = compile_seconds(REFERENCE)  # 35.8 and 34.8 ms at calls 0 and 3 (less the 0.2 ms baseline)


def weight(first: list[float], replay: dict[int, float]) -> float:
    return sum(weighed(first, replay, counted(first, replay, DROP, STEADY), STEADY, REFERENCE).values())


def test_the_reference_s_compilation_costs_exclude_its_cached_baseline():
    assert REF_COMPILE[0] == 36 * MS - 0.2 * MS and REF_COMPILE[3] == 35 * MS - 0.2 * MS
    assert REF_COMPILE[1] is None
    assert budget(4, 1) == 5.5 and budget(11, 2) == 14.75 and budget(1, 1) == 1.75


def test_calls_that_compile_as_the_reference_weigh_one_each():
    first = [38 * MS, 0.2 * MS, 0.3 * MS, 36 * MS, 0.2 * MS, 0.1 * MS]
    assert 1.9 < weight(first, {0: 0.3 * MS, 3: 0.2 * MS}) < 2.2
    # A compilation where the reference compiled nothing weighs against its median compilation.
    assert 0.9 < weight([0.2 * MS, 36 * MS], {1: 0.2 * MS}) < 1.1


def test_an_eager_function_weighs_its_programs_not_its_calls():
    # jit_basics.bce_fast run eagerly: nine operations compile on each new shape (~340 ms of CPU
    # against the jitted reference's ~36 ms); the clock counts the two calls, within an
    # allowance of 2, but they weigh ~19 of the reference's compilations.
    first = [340 * MS, 0.3 * MS, 0.2 * MS, 330 * MS, 0.2 * MS, 0.3 * MS]
    replay = {0: 1.4 * MS, 3: 1.3 * MS}
    assert counted(first, replay, DROP, STEADY) == [0, 3]
    assert weight(first, replay) > 2 * budget(2, 1)


def test_a_replay_slowed_to_match_hides_no_weight():
    # jit_basics__attack_eager_deaf with HIDE = "replay": the replay burns its first run's time.
    first = [340 * MS, 0.3 * MS, 0.2 * MS, 330 * MS]
    assert weight(first, {0: 337 * MS, 3: 327 * MS}) > 2 * budget(2, 1)  # over `steady`: the whole first run


@given(first=st.floats(DROP + STEADY, 10.0), replay=st.floats(0.0, 10.0))
def test_no_replay_takes_more_than_half_a_compilation_off_a_call_s_weight(first, replay):
    w = weighed([first], {0: replay}, counted([first], {0: replay}, DROP, STEADY), STEADY, REFERENCE)
    assert w[0] >= (first - STEADY) / REF_COMPILE[0] - 1e-9


def test_a_public_run_reports_the_weight_and_judges_only_the_counts():
    """The recording timed the reference on another machine: a public run weighs, says the
    weight is judged on submission, and still fails a count past its allowance."""
    from jaxlings.grading.checks.compiles import Compiles
    from jaxlings.grading.spec import Case

    check = Compiles(1, make=lambda rng, n: [], max_compiles=2)
    cases = [Case((i,)) for i in range(6)]
    eager = {
        "seconds": [340 * MS, 0.3 * MS, 0.2 * MS, 330 * MS, 0.2 * MS, 0.3 * MS],
        "replay": {0: 1.4 * MS, 3: 1.3 * MS},
    }
    got = {**eager, "counts": [[0, 0]] * 6, "replay_compiles": 0, "clock": "cpu"}
    hidden = check.verdict(cases, REFERENCE, got, DROP, STEADY)
    public = check.verdict(cases, REFERENCE, got, DROP, STEADY, weigh=False)
    assert hidden.fraction == 0 and "of the reference's compilations" in hidden.message
    assert public.fraction == 1 and "weighed against the reference's on submission" in public.message
    assert public.data["weight"] == hidden.data["weight"] > budget(2, 1)
    reported = {**got, "counts": [[1, 1]] * 3 + [[0, 0]] * 3}  # JAX's events: 3 compilations of 2 allowed
    assert check.verdict(cases, REFERENCE, reported, DROP, STEADY, weigh=False).fraction == 0
